//! The transaction client: begin, read, write (buffered), commit.
//!
//! A transaction body runs locally against the values the client last
//! learned (section 2.2 of the paper: "clients execute transactions locally
//! and then submit"). Reads return the known value ([`Value::ZERO`] for a key
//! never seen, which is what the store holds for it) and become compares
//! (VALUE ops); writes are buffered and sent as WRITE ops at commit. On ABORT
//! or OPTIMISTIC_ABORT the corrections in the reply replace the known values
//! and the body runs again at once, with no extra round trip to re-read
//! (NOCC section 2), up to a retry limit. Read transactions send READ ops
//! and learn the values that come back.
//!
//! Lost packets: if no reply comes within the timeout the same request (same
//! request id) is resent with the `store_commit` flag, so the switch passes
//! it to the store, which answers duplicates from its record. Once a request
//! has been resent only the store's answer counts; a late switch answer to
//! the first copy is ignored. Request ids increase by one per attempt from
//! [`ClientConfig::first_req_id`] and are never reused by a client.
//!
//! Replies are taken only from the client's upstream (its switch or store,
//! [`innet_core::Sender::upstream`]): a reply forged from any other address,
//! even one naming this client and its current request, is dropped.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use innet_core::{Dest, Host, Outbox, Sender, Time};
use innet_wire::txn::{Flags, Key, Op, OpType, Status, TxnMsg, Value};

#[derive(Clone, Debug)]
pub struct ClientConfig {
    pub cl_id: u32,
    /// How long to wait for a reply before resending.
    pub timeout: Duration,
    /// Resends of one request before its outcome is declared unknown.
    pub max_resends: u32,
    /// Attempts of one transaction (first try plus re-executions) before
    /// giving up.
    pub retry_limit: u32,
    /// Request id of the first attempt. Switch and store compare request ids
    /// of a client as serial numbers, so a process that reuses a client id
    /// must start above the ids used before it: live runtimes derive this
    /// from the wall clock; the simulator starts at 1.
    pub first_req_id: i32,
}

impl ClientConfig {
    pub fn new(cl_id: u32) -> ClientConfig {
        let cfg = ClientConfig {
            cl_id,
            timeout: Duration::from_secs(1),
            max_resends: 20,
            retry_limit: 1000,
            first_req_id: 1,
        };
        debug_assert!(cfg.retry_limit >= 1 && !cfg.timeout.is_zero());
        cfg
    }
}

/// Everything a body may do: read a key, buffer a write.
pub struct TxnCtx<'a> {
    known: &'a HashMap<Key, Value>,
    reads: Vec<(Key, Value)>,
    writes: Vec<(Key, Value)>,
}

impl TxnCtx<'_> {
    /// The value of `key` as this transaction sees it: its own buffered
    /// write, else the client's last known value.
    pub fn read(&mut self, key: Key) -> Value {
        if let Some((_, v)) = self.writes.iter().rev().find(|(k, _)| *k == key) {
            return *v;
        }
        if let Some((_, v)) = self.reads.iter().find(|(k, _)| *k == key) {
            return *v;
        }
        let v = self.known.get(&key).copied().unwrap_or(Value::ZERO);
        debug_assert!(self.reads.iter().all(|(k, _)| *k != key), "one compare per key read");
        self.reads.push((key, v));
        v
    }
    pub fn write(&mut self, key: Key, value: Value) {
        self.writes.push((key, value));
        debug_assert_eq!(self.read(key), value, "a transaction reads its own writes");
    }
}

/// A transaction body: runs again on every abort, so it must depend only on
/// what it reads.
pub type TxnBody = Arc<dyn Fn(&mut TxnCtx<'_>) + Send + Sync>;

#[derive(Clone)]
pub enum Txn {
    /// A read transaction: READ ops, answered by the store or a read cache.
    Read(Vec<Key>),
    /// An optimistic transaction body.
    Body(TxnBody),
}

impl Txn {
    pub fn body(f: impl Fn(&mut TxnCtx<'_>) + Send + Sync + 'static) -> Txn {
        let txn = Txn::Body(Arc::new(f));
        debug_assert!(!txn.is_read());
        txn
    }
    /// Increments the counter at `key` (the microbenchmark's write transaction).
    pub fn increment(key: Key) -> Txn {
        Txn::body(move |t| {
            let n = t.read(key).as_counter().unwrap_or(0);
            debug_assert!(n < innet_wire::txn::COUNTER_MODULUS, "a counter has 16 digits");
            t.write(key, Value::from_counter(n + 1));
        })
    }
    pub fn is_read(&self) -> bool {
        matches!(self, Txn::Read(_))
    }
}

/// How one request (one attempt) ended, as the client saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttemptResult {
    /// Committed; `values` are the VALUE ops of the reply.
    Committed {
        from_switch: bool,
        values: Vec<(Key, Value)>,
    },
    /// Aborted; `values` are the VALUE ops of the reply: the values the
    /// switch or store holds for the keys it compared (an optimistic
    /// abort's are the switch's pending writes).
    Aborted {
        from_switch: bool,
        status: Status,
        values: Vec<(Key, Value)>,
    },
    BadRequest,
    /// No answer after all resends: it may or may not have committed.
    Unknown,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    pub cl_id: u32,
    pub req_id: i32,
    pub ops: Vec<Op>,
    pub result: AttemptResult,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GiveUp {
    RetryLimit,
    Timeout,
    BadRequest,
    /// The transaction has more ops than one request can carry
    /// ([`innet_wire::txn::MAX_OPS_PER_TXN`], 255 fragments); nothing was sent.
    TooLarge,
}

/// A finished transaction.
#[derive(Clone, Debug)]
pub struct Completed {
    pub txn_no: u64,
    pub is_read: bool,
    /// `None` if committed.
    pub gave_up: Option<GiveUp>,
    pub started: Time,
    pub finished: Time,
    pub attempts: u32,
    pub aborts_by_switch: u32,
    pub aborts_by_store: u32,
    /// Whether the final answer came from a switch.
    pub from_switch: bool,
    /// What the committed transaction read: its compares, or the values a
    /// read transaction got back.
    pub reads: Vec<(Key, Value)>,
    pub writes: Vec<(Key, Value)>,
}

impl Completed {
    pub fn committed(&self) -> bool {
        debug_assert!(self.attempts >= 1, "every transaction runs at least once");
        self.gave_up.is_none()
    }
    pub fn latency(&self) -> Duration {
        debug_assert!(self.started <= self.finished, "a transaction finishes after it starts");
        self.finished.since(self.started)
    }
}

#[derive(Clone, Default, Debug)]
pub struct ClientCounters {
    pub sent: u64,
    pub resent: u64,
    pub replies: u64,
    pub stale_replies: u64,
    pub ignored_switch_replies: u64,
    pub malformed_replies: u64,
    /// Packets from anyone but the client's upstream (its switch or store):
    /// dropped unread, so a forged reply naming this client changes nothing.
    pub dropped_not_from_upstream: u64,
    /// Transactions given up unsent: more ops than 255 fragments hold.
    pub too_large: u64,
}

struct Active {
    no: u64,
    txn: Txn,
    started: Time,
    attempts: u32,
    aborts_by_switch: u32,
    aborts_by_store: u32,
    req_id: i32,
    ops: Vec<Op>,
    reads: Vec<(Key, Value)>,
    writes: Vec<(Key, Value)>,
    sent_at: Time,
    resends: u32,
    reply_frags: BTreeMap<u8, Vec<Op>>,
}

pub struct TxnClient {
    cfg: ClientConfig,
    known: HashMap<Key, Value>,
    last_req_id: i32,
    next_txn_no: u64,
    active: Option<Active>,
    completed: VecDeque<Completed>,
    /// Every attempt's outcome, when recording is on (for the checker).
    pub history: Option<Vec<Attempt>>,
    pub counters: ClientCounters,
}

impl TxnClient {
    pub fn new(cfg: ClientConfig) -> TxnClient {
        assert!(cfg.retry_limit >= 1, "retry_limit counts the first attempt");
        TxnClient {
            last_req_id: cfg.first_req_id.wrapping_sub(1),
            cfg,
            known: HashMap::new(),
            next_txn_no: 0,
            active: None,
            completed: VecDeque::new(),
            history: None,
            counters: Default::default(),
        }
    }

    pub fn with_history(mut self) -> TxnClient {
        debug_assert!(self.is_idle(), "recording starts before the first transaction");
        self.history = Some(Vec::new());
        self
    }

    pub fn config(&self) -> &ClientConfig {
        debug_assert!(self.cfg.retry_limit >= 1);
        &self.cfg
    }

    pub fn is_idle(&self) -> bool {
        debug_assert!(self.active.as_ref().is_none_or(|a| a.attempts <= self.cfg.retry_limit));
        self.active.is_none()
    }

    /// The last value learned for `key`.
    pub fn known(&self, key: Key) -> Option<Value> {
        self.known.get(&key).copied()
    }

    /// Starts `txn` (the client runs one transaction at a time).
    pub fn start(&mut self, now: Time, txn: Txn, out: &mut Outbox) -> u64 {
        assert!(self.active.is_none(), "a client runs one transaction at a time");
        let no = self.next_txn_no;
        self.next_txn_no += 1;
        self.active = Some(Active {
            no,
            txn,
            started: now,
            attempts: 0,
            aborts_by_switch: 0,
            aborts_by_store: 0,
            req_id: 0,
            ops: vec![],
            reads: vec![],
            writes: vec![],
            sent_at: now,
            resends: 0,
            reply_frags: BTreeMap::new(),
        });
        self.attempt(now, out);
        debug_assert!(self.next_txn_no == no + 1);
        no
    }

    /// The next finished transaction, if any.
    pub fn poll(&mut self) -> Option<Completed> {
        let done = self.completed.pop_front();
        debug_assert!(done.as_ref().is_none_or(|c| c.txn_no < self.next_txn_no));
        done
    }

    /// Runs the body (or lists the reads) and sends a new request.
    fn attempt(&mut self, now: Time, out: &mut Outbox) {
        let a = self.active.as_mut().expect("attempt needs an active transaction");
        a.attempts += 1;
        a.reply_frags.clear();
        let (reads, writes, ops) = match &a.txn {
            Txn::Read(keys) => (vec![], vec![], keys.iter().map(|k| Op::read(*k)).collect::<Vec<_>>()),
            Txn::Body(body) => {
                let mut ctx = TxnCtx { known: &self.known, reads: vec![], writes: vec![] };
                body(&mut ctx);
                let mut ops: Vec<Op> = ctx.reads.iter().map(|(k, v)| Op::value(*k, *v)).collect();
                ops.extend(ctx.writes.iter().map(|(k, v)| Op::write(*k, *v)));
                (ctx.reads, ctx.writes, ops)
            }
        };
        a.reads = reads;
        a.writes = writes;
        if ops.is_empty() {
            // Nothing to validate or apply: trivially committed, no packet.
            self.finish(now, None, false);
            return;
        }
        if ops.len() > innet_wire::txn::MAX_OPS_PER_TXN {
            self.counters.too_large += 1;
            self.finish(now, Some(GiveUp::TooLarge), false);
            return;
        }
        debug_assert!(a.attempts <= self.cfg.retry_limit, "attempt {} past the retry limit", a.attempts);
        self.last_req_id = self.last_req_id.wrapping_add(1);
        let a = self.active.as_mut().expect("still active");
        debug_assert!(
            a.attempts == 1 || self.last_req_id.wrapping_sub(a.req_id) > 0,
            "a request id is never reused: {} after {}",
            self.last_req_id,
            a.req_id
        );
        a.req_id = self.last_req_id;
        a.ops = ops;
        a.sent_at = now;
        a.resends = 0;
        self.transmit(false, out);
    }

    fn transmit(&mut self, resend: bool, out: &mut Outbox) {
        let a = self.active.as_ref().expect("transmit needs an active transaction");
        debug_assert!(!a.ops.is_empty() && a.ops.len() <= innet_wire::txn::MAX_OPS_PER_TXN);
        debug_assert!(a.resends <= self.cfg.max_resends && resend == (a.resends > 0));
        let mut template = TxnMsg::request(self.cfg.cl_id, a.req_id, vec![]);
        template.flags = Flags(0).with(Flags::STORE_COMMIT, resend);
        // `attempt` sends nothing larger than 255 fragments.
        for frag in TxnMsg::fragments(&template, &a.ops).unwrap_or_default() {
            out.send(Dest::Upstream, frag.encode());
        }
        if resend {
            self.counters.resent += 1;
        } else {
            self.counters.sent += 1;
        }
    }

    fn record(&mut self, result: AttemptResult) {
        let a = self.active.as_ref().expect("record needs an active transaction");
        debug_assert!(a.attempts >= 1 && !a.ops.is_empty(), "an outcome of a request sent");
        if let Some(h) = &mut self.history {
            h.push(Attempt { cl_id: self.cfg.cl_id, req_id: a.req_id, ops: a.ops.clone(), result });
        }
    }

    fn finish(&mut self, now: Time, gave_up: Option<GiveUp>, from_switch: bool) {
        let a = self.active.take().expect("finish needs an active transaction");
        debug_assert!(a.started <= now && a.attempts <= self.cfg.retry_limit);
        self.completed.push_back(Completed {
            txn_no: a.no,
            is_read: a.txn.is_read(),
            gave_up,
            started: a.started,
            finished: now,
            attempts: a.attempts,
            aborts_by_switch: a.aborts_by_switch,
            aborts_by_store: a.aborts_by_store,
            from_switch,
            reads: a.reads,
            writes: a.writes,
        });
    }

    fn handle_reply(&mut self, now: Time, packet: &[u8], out: &mut Outbox) {
        let Ok(m) = TxnMsg::decode(packet) else {
            self.counters.malformed_replies += 1;
            return;
        };
        let Some(ops) = self.reply_ops(&m) else {
            return;
        };
        self.counters.replies += 1;
        let values = self.learn(&ops);
        let from_switch = m.flags.from_switch();
        match m.status {
            Status::Ok => {
                self.record(AttemptResult::Committed { from_switch, values: values.clone() });
                let a = self.active.as_mut().expect("active");
                if a.txn.is_read() {
                    a.reads = values;
                }
                self.finish(now, None, from_switch);
            }
            Status::Abort | Status::OptimisticAbort => self.aborted(now, m.status, from_switch, values, out),
            Status::BadRequest => {
                self.record(AttemptResult::BadRequest);
                let a = self.active.as_ref().expect("active");
                if a.resends > 0 && from_switch && a.attempts < self.cfg.retry_limit {
                    // Not executed (see `reply_ops`): run it again, with a new id.
                    self.attempt(now, out);
                } else {
                    self.finish(now, Some(GiveUp::BadRequest), from_switch);
                }
            }
        }
    }

    /// The ops of `m` if it answers the active request and counts (whole:
    /// every fragment in); `None` if it is stale, ignored or incomplete.
    fn reply_ops(&mut self, m: &TxnMsg) -> Option<Vec<Op>> {
        if !m.flags.is_response() || m.cl_id != self.cfg.cl_id {
            self.counters.stale_replies += 1;
            return None;
        }
        let Some(a) = self.active.as_mut() else {
            self.counters.stale_replies += 1;
            return None;
        };
        if m.req_id != a.req_id {
            self.counters.stale_replies += 1;
            return None;
        }
        // After a resend only the store's answer counts, or a switch's BADREQ:
        // the switch answered the first copy itself (that answer was lost),
        // so the store never saw it and it was not executed.
        if a.resends > 0 && m.flags.from_switch() && m.status != Status::BadRequest {
            self.counters.ignored_switch_replies += 1;
            return None;
        }
        if !m.is_fragmented() {
            return Some(m.ops.clone());
        }
        a.reply_frags.insert(m.frag_seq, m.ops.clone());
        if a.reply_frags.len() < m.frag_cnt as usize {
            return None;
        }
        Some(std::mem::take(&mut a.reply_frags).into_values().flatten().collect())
    }

    /// Learns the values a reply carries; its VALUE ops.
    fn learn(&mut self, ops: &[Op]) -> Vec<(Key, Value)> {
        let mut values = vec![];
        for op in ops {
            if matches!(op.kind, OpType::Value | OpType::Updated) {
                self.known.insert(op.key, op.value);
            }
            if op.kind == OpType::Value {
                values.push((op.key, op.value));
            }
        }
        debug_assert!(values.iter().all(|(k, _)| self.known.contains_key(k)));
        values
    }

    /// An abort (with its corrections learned): the body runs again at
    /// once with a new request id, unless the retry limit is reached.
    fn aborted(&mut self, now: Time, status: Status, from_switch: bool, values: Vec<(Key, Value)>, out: &mut Outbox) {
        debug_assert!(status.is_abort());
        self.record(AttemptResult::Aborted { from_switch, status, values });
        let a = self.active.as_mut().expect("active");
        if from_switch {
            a.aborts_by_switch += 1;
        } else {
            a.aborts_by_store += 1;
        }
        debug_assert!(a.aborts_by_switch + a.aborts_by_store <= a.attempts, "one abort per attempt at most");
        if a.attempts >= self.cfg.retry_limit {
            self.finish(now, Some(GiveUp::RetryLimit), from_switch);
        } else {
            self.attempt(now, out);
        }
    }
}

impl Host for TxnClient {
    fn on_packet(&mut self, now: Time, packet: &[u8], out: &mut Outbox) {
        self.handle_reply(now, packet, out);
    }

    /// Replies count only from the client's upstream, where its requests go.
    fn on_packet_from(&mut self, now: Time, packet: &[u8], from: Sender, out: &mut Outbox) {
        if !from.upstream {
            self.counters.dropped_not_from_upstream += 1;
            return;
        }
        self.handle_reply(now, packet, out);
    }

    fn on_tick(&mut self, now: Time, out: &mut Outbox) {
        let Some(a) = self.active.as_mut() else {
            return;
        };
        if now < a.sent_at + self.cfg.timeout {
            return;
        }
        if a.resends < self.cfg.max_resends {
            a.resends += 1;
            a.sent_at = now;
            debug_assert!(a.resends <= self.cfg.max_resends);
            self.transmit(true, out);
        } else {
            self.record(AttemptResult::Unknown);
            self.finish(now, Some(GiveUp::Timeout), false);
        }
    }

    fn next_tick(&self) -> Option<Time> {
        self.active.as_ref().map(|a| a.sent_at + self.cfg.timeout)
    }
}
