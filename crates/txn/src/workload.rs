//! The microbenchmark workload of Gotthard section 5.3 and NOCC section 4:
//! each client runs transactions back to back (closed loop); a fraction
//! `write_ratio` of them atomically increment a counter, the rest read it.
//! Keys are drawn from a Zipf distribution over `keys` counters (the headline
//! experiment uses a single counter). The driver owns its random generator,
//! seeded by the runtime, so a seed replays a run.

use std::time::Duration;

use innet_core::rng::{Rng, Zipf};
use innet_core::{Host, Outbox, Time};
use innet_wire::txn::{Key, Value};

use crate::client::{Completed, Txn, TxnClient};

/// Most keys one transaction touches (`--span`): a write of `k` keys is
/// `2 k` ops (a VALUE and a WRITE each), and a transaction carries at most
/// [`innet_wire::txn::MAX_OPS_PER_TXN`] ops (255 fragments of 7).
pub const SPAN_MAX: u32 = (innet_wire::txn::MAX_OPS_PER_TXN / 2) as u32;

#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    /// Fraction of transactions that are writes (increments), 0..=1.
    pub write_ratio: f64,
    /// Number of counters; keys are 1..=keys.
    pub keys: u32,
    /// Zipf exponent of key popularity; 0 is uniform.
    pub zipf: f64,
    /// Pause between a transaction's end and the next one's start.
    pub think_time: Duration,
    /// Most keys one transaction touches (drawn uniformly in 1..=span). The
    /// paper's microbenchmark uses 1; the checker uses more, up to sizes that
    /// need fragmentation.
    pub span: u32,
    /// Fraction of read transactions run as a body that reads the client's
    /// known values and validates them (VALUE ops only, which a switch may
    /// confirm) instead of fetching with READ ops. The paper uses 0.
    pub validated_reads: f64,
}

impl Workload {
    pub fn validate(&self) -> Result<(), String> {
        if !(0.0..=1.0).contains(&self.write_ratio) {
            return Err(format!("write ratio {} is outside 0..=1", self.write_ratio));
        }
        if self.keys == 0 || self.keys > innet_core::limits::TXN_KEYS_MAX {
            return Err(format!(
                "keys {} must be from 1 to {} (the limit TXN_KEYS_MAX)",
                self.keys,
                innet_core::limits::TXN_KEYS_MAX
            ));
        }
        if !(0.0..=1.0).contains(&self.validated_reads) {
            return Err(format!("validated-reads fraction {} is outside 0..=1", self.validated_reads));
        }
        if self.span == 0 || self.span > self.keys || self.span > SPAN_MAX {
            return Err(format!(
                "span {} must be in 1..=keys ({}) and at most {SPAN_MAX} (the limit SPAN_MAX: 255 fragments of 7 ops)",
                self.span, self.keys
            ));
        }
        if !(self.zipf >= 0.0 && self.zipf.is_finite()) {
            return Err(format!("zipf exponent {} must be a finite number >= 0", self.zipf));
        }
        debug_assert!(
            2 * self.span as usize <= innet_wire::txn::MAX_OPS_PER_TXN,
            "a write of span keys fits a request"
        );
        Ok(())
    }
}

/// Running totals of a load client.
#[derive(Clone, Default, Debug)]
pub struct LoadStats {
    pub committed: u64,
    pub committed_reads: u64,
    pub committed_writes: u64,
    pub gave_up: u64,
    pub aborts_by_switch: u64,
    pub aborts_by_store: u64,
    /// Latency of every committed transaction, first send to final answer.
    pub latencies_ns: Vec<u64>,
    /// When each committed transaction finished (time since the run's
    /// start), in the order of `latencies_ns`.
    pub finished_ns: Vec<u64>,
}

impl LoadStats {
    /// Every committed transaction is a read or a write and has one
    /// latency and one finish time.
    fn adds_up(&self) -> bool {
        self.committed == self.committed_reads + self.committed_writes
            && self.latencies_ns.len() == self.finished_ns.len()
            && self.latencies_ns.len() as u64 == self.committed
    }

    pub fn add(&mut self, c: &Completed) {
        debug_assert!(self.adds_up(), "{self:?}");
        self.aborts_by_switch += c.aborts_by_switch as u64;
        self.aborts_by_store += c.aborts_by_store as u64;
        if !c.committed() {
            self.gave_up += 1;
            return;
        }
        self.committed += 1;
        if c.is_read {
            self.committed_reads += 1;
        } else {
            self.committed_writes += 1;
        }
        self.latencies_ns.push(c.latency().as_nanos() as u64);
        self.finished_ns.push(c.finished.as_nanos());
        debug_assert!(self.adds_up());
    }

    pub fn merge(&mut self, o: &LoadStats) {
        self.committed += o.committed;
        self.committed_reads += o.committed_reads;
        self.committed_writes += o.committed_writes;
        self.gave_up += o.gave_up;
        self.aborts_by_switch += o.aborts_by_switch;
        self.aborts_by_store += o.aborts_by_store;
        self.latencies_ns.extend_from_slice(&o.latencies_ns);
        self.finished_ns.extend_from_slice(&o.finished_ns);
        debug_assert!(self.adds_up() || !o.adds_up(), "merging two consistent totals gives one");
    }
}

/// A client that runs the workload until `stop_at`.
pub struct LoadClient {
    pub client: TxnClient,
    workload: Workload,
    zipf: Zipf,
    rng: Rng,
    wake_at: Option<Time>,
    stop_at: Time,
    /// Added to every key drawn: the client works on keys
    /// `key_offset + 1 ..= key_offset + keys` (0 by default).
    key_offset: Key,
    pub stats: LoadStats,
}

impl LoadClient {
    pub fn new(client: TxnClient, workload: Workload, rng: Rng, start_at: Time, stop_at: Time) -> LoadClient {
        workload.validate().expect("workload validated by the caller");
        let zipf = Zipf::new(workload.keys as usize, workload.zipf);
        LoadClient {
            client,
            workload,
            zipf,
            rng,
            wake_at: Some(start_at),
            stop_at,
            key_offset: 0,
            stats: LoadStats::default(),
        }
    }

    /// Moves this client's keys to `offset + 1 ..= offset + keys` (a client
    /// group with its own set of keys: Gotthard section 5.3's locality).
    pub fn set_key_offset(&mut self, offset: Key) {
        debug_assert!(offset.checked_add(self.workload.keys).is_some(), "keys {offset}+1..={offset}+keys overflow");
        self.key_offset = offset;
    }

    fn next_txn(&mut self) -> Txn {
        let span = 1 + self.rng.below(self.workload.span as u64) as usize;
        let mut keys: Vec<Key> = Vec::with_capacity(span);
        // Distinct keys by popularity; bounded tries keep skewed draws finite.
        for _ in 0..span * 8 {
            let key = self.key_offset + self.zipf.sample(&mut self.rng) as Key + 1;
            if !keys.contains(&key) {
                keys.push(key);
            }
            if keys.len() == span {
                break;
            }
        }
        debug_assert!(!keys.is_empty() && keys.len() <= span, "1..=span distinct keys");
        if !self.rng.chance(self.workload.write_ratio) {
            if self.rng.chance(self.workload.validated_reads) {
                return Txn::body(move |t| {
                    for &k in &keys {
                        t.read(k);
                    }
                });
            }
            return Txn::Read(keys);
        }
        if let [key] = keys[..] {
            return Txn::increment(key);
        }
        Txn::body(move |t| {
            for &k in &keys {
                let n = t.read(k).as_counter().unwrap_or(0);
                t.write(k, Value::from_counter(n + 1));
            }
        })
    }

    /// Collects finished transactions and schedules the next one.
    fn settle(&mut self, now: Time, out: &mut Outbox) {
        let mut finished = false;
        while let Some(c) = self.client.poll() {
            // A transaction counts if it finished within the measured run.
            if c.finished <= self.stop_at {
                self.stats.add(&c);
            }
            finished = true;
        }
        if finished && self.client.is_idle() {
            self.wake_at = Some(now + self.workload.think_time);
        }
        debug_assert!(self.wake_at.is_none() || self.client.is_idle(), "a busy client has no wake-up set");
        if let Some(t) = self.wake_at {
            if t <= now && self.client.is_idle() && now < self.stop_at {
                self.wake_at = None;
                let txn = self.next_txn();
                self.client.start(now, txn, out);
                // A transaction with nothing to send completes at once.
                self.settle(now, out);
            }
        }
    }
}

impl Host for LoadClient {
    fn on_packet(&mut self, now: Time, packet: &[u8], out: &mut Outbox) {
        self.client.on_packet(now, packet, out);
        self.settle(now, out);
    }

    fn on_packet_from(&mut self, now: Time, packet: &[u8], from: innet_core::Sender, out: &mut Outbox) {
        self.client.on_packet_from(now, packet, from, out);
        self.settle(now, out);
    }

    fn on_tick(&mut self, now: Time, out: &mut Outbox) {
        self.client.on_tick(now, out);
        self.settle(now, out);
    }

    fn next_tick(&self) -> Option<Time> {
        let wake = self.wake_at.filter(|t| *t < self.stop_at);
        match (wake, self.client.next_tick()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}
