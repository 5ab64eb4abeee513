//! A closed-loop client for experiments (CAANS section 6.3: "Each client
//! thread submits a message ... To push the system towards higher message
//! throughputs, we increased the number of threads"): a [`Proposer`] kept
//! at `outstanding` requests in flight until `stop`.

use std::collections::BTreeMap;

use innet_core::{Host, Outbox, Time};

use crate::proposer::Proposer;

#[derive(Clone, Debug)]
pub struct LoadProposer {
    pub proposer: Proposer,
    outstanding: usize,
    stop: Time,
    started: bool,
    counter: u64,
    record: bool,
    payload: fn(u64) -> Vec<u8>,
    /// `(proposer, request)` -> payload of every submitted value (if recording).
    pub submitted: BTreeMap<(u32, u32), Vec<u8>>,
    /// Submit-to-quorum latency of every committed request.
    pub latencies_ns: Vec<u64>,
    /// When each request committed (for throughput over time).
    pub commit_times_ns: Vec<u64>,
    /// When each value sent to the coordinator committed: one per instance
    /// (with packing, several requests share one).
    pub instance_times_ns: Vec<u64>,
}

impl LoadProposer {
    /// With packing on (`pack` > 1) the default payload is the counter's
    /// low two bytes, so that up to 8 values fit in one instance's value
    /// (`"v<n>"` is up to 8 bytes: 3 would fit).
    pub fn new(proposer: Proposer, outstanding: usize, stop: Time, record: bool) -> LoadProposer {
        assert!(outstanding >= 1);
        let payload: fn(u64) -> Vec<u8> = if proposer.config().pack > 1 {
            |n| (n as u16).to_be_bytes().to_vec()
        } else {
            |n| format!("v{n}").into_bytes()
        };
        LoadProposer {
            proposer,
            outstanding,
            stop,
            started: false,
            counter: 0,
            record,
            payload,
            submitted: BTreeMap::new(),
            latencies_ns: vec![],
            commit_times_ns: vec![],
            instance_times_ns: vec![],
        }
    }

    /// Submits `payload(n)` as the `n`th value.
    pub fn with_payload(mut self, payload: fn(u64) -> Vec<u8>) -> LoadProposer {
        debug_assert!(!self.started && self.counter == 0, "the payload is chosen before the first submission");
        self.payload = payload;
        self
    }

    fn refill(&mut self, now: Time, out: &mut Outbox) {
        while now < self.stop && self.proposer.outstanding() < self.outstanding {
            self.counter += 1;
            let payload = (self.payload)(self.counter);
            let r = self.proposer.submit(now, &payload, out).expect("short payload");
            if self.record {
                let fresh = self.submitted.insert((self.proposer.id(), r), payload).is_none();
                debug_assert!(fresh, "request {r} submitted twice");
            }
        }
        self.proposer.flush(now, out);
        debug_assert!(now >= self.stop || self.proposer.outstanding() >= self.outstanding);
    }

    fn collect(&mut self) {
        let mut last = None;
        for c in self.proposer.take_committed() {
            self.latencies_ns.push(c.committed_at.as_nanos() - c.submitted_at.as_nanos());
            self.commit_times_ns.push(c.committed_at.as_nanos());
            // A packed value's requests are reported together, in a row.
            if last != Some(c.instance) {
                self.instance_times_ns.push(c.committed_at.as_nanos());
            }
            last = Some(c.instance);
        }
        debug_assert_eq!(self.latencies_ns.len(), self.commit_times_ns.len(), "one latency per commit");
        debug_assert!(self.instance_times_ns.len() <= self.commit_times_ns.len());
    }
}

impl Host for LoadProposer {
    fn on_packet(&mut self, now: Time, packet: &[u8], out: &mut Outbox) {
        self.proposer.on_packet(now, packet, out);
        self.collect();
        self.refill(now, out);
    }
    fn on_tick(&mut self, now: Time, out: &mut Outbox) {
        self.started = true;
        self.proposer.on_tick(now, out);
        self.refill(now, out);
    }
    fn next_tick(&self) -> Option<Time> {
        if !self.started {
            return Some(Time::ZERO);
        }
        self.proposer.next_tick()
    }
}
