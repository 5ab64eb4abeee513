//! The transactional store: Gotthard's Algorithm 1 (section 3.2), optimistic
//! concurrency control by value comparison.
//!
//! A request's ops split into compares (VALUE), reads (READ) and writes
//! (WRITE). If any compare differs from the stored value the request aborts;
//! the reply carries a VALUE correction for every failed compare and, as the
//! reference store does, the current value of every key the request wanted
//! to write, so that a switch withdraws the pending values it recorded.
//! Otherwise the writes are applied atomically and the reply carries UPDATED
//! for every write and VALUE for every read (reads see the request's own
//! writes). A request with nothing to do, or that cannot be decoded but has a
//! readable header, is answered BADREQ; shorter garbage is counted and
//! ignored. The serialization order is the order requests are decided here
//! (section 3.7).
//!
//! Exactly-once: the store keeps, per client, the last request id it decided,
//! a digest of its ops and the reply it sent, committed atomically with the
//! writes. A resent or duplicated request gets the same reply again; an older
//! request id, or the same id with other ops (a client id reused by another
//! process), is answered BADREQ and changes nothing. Fragmented requests (more than 7 ops) are reassembled first.
//!
//! Storage is a [`Backend`]: [`MemBackend`] here, a durable one in
//! `innet-storage`.

use std::collections::{BTreeMap, HashMap, VecDeque};

use innet_core::{Counters, Dest, Host, Outbox, Time};
use innet_wire::txn::{DecodeError, Flags, Key, Op, OpType, Status, TxnMsg, Value, HEADER_LEN};

/// Requests being reassembled at once; the oldest is abandoned beyond this.
pub const REASSEMBLY_SLOTS: usize = 1024;

/// What the store remembers about a client for exactly-once replies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientRecord {
    pub req_id: i32,
    /// `request_digest` of the request's ops (0 for fragmented requests,
    /// whose duplicates are recognised by request id alone).
    pub digest: u64,
    /// The encoded reply packets (fragments) sent for `req_id`.
    pub reply: Vec<Vec<u8>>,
}

/// A digest of an unfragmented request's ops (FNV-1a over their encoding),
/// so that a request id reused for different ops is not taken for a
/// duplicate. Never 0.
fn request_digest(ops: &[Op]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for op in ops {
        for b in [op.kind as u8].iter().chain(op.key.to_be_bytes().iter()).chain(op.value.0.iter()) {
            h ^= *b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h.max(1)
}

/// Why a backend could not do what was asked.
#[derive(Debug)]
pub struct BackendError(pub String);

impl std::fmt::Display for BackendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BackendError {}

/// Where the store keeps keys and client records.
pub trait Backend {
    /// The value of `key`; [`Value::ZERO`] if never written.
    fn get(&self, key: Key) -> Value;
    /// Applies `writes` (in order) and sets `cl_id`'s record, atomically.
    /// When this returns `Ok`, a durable backend has made both durable.
    fn commit(&mut self, writes: &[(Key, Value)], cl_id: u32, record: &ClientRecord) -> Result<(), BackendError>;
    fn client(&self, cl_id: u32) -> Option<ClientRecord>;
    /// Every key with its value, in key order.
    fn snapshot(&self) -> BTreeMap<Key, Value>;
}

/// The default, in-memory backend.
#[derive(Default, Debug)]
pub struct MemBackend {
    data: BTreeMap<Key, Value>,
    clients: HashMap<u32, ClientRecord>,
}

impl MemBackend {
    /// A backend holding `data` and `clients` (a durable backend's mirror).
    pub fn with_contents(data: BTreeMap<Key, Value>, clients: HashMap<u32, ClientRecord>) -> MemBackend {
        MemBackend { data, clients }
    }
    pub fn len(&self) -> usize {
        self.data.len()
    }
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

impl Backend for MemBackend {
    fn get(&self, key: Key) -> Value {
        self.data.get(&key).copied().unwrap_or(Value::ZERO)
    }
    fn commit(&mut self, writes: &[(Key, Value)], cl_id: u32, record: &ClientRecord) -> Result<(), BackendError> {
        for (k, v) in writes {
            self.data.insert(*k, *v);
        }
        self.clients.insert(cl_id, record.clone());
        Ok(())
    }
    fn client(&self, cl_id: u32) -> Option<ClientRecord> {
        self.clients.get(&cl_id).cloned()
    }
    fn snapshot(&self) -> BTreeMap<Key, Value> {
        self.data.clone()
    }
}

/// One decision, as the history checker sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub cl_id: u32,
    pub req_id: i32,
    pub status: Status,
    pub compares: Vec<(Key, Value)>,
    /// Values returned for READ ops.
    pub reads: Vec<(Key, Value)>,
    pub writes: Vec<(Key, Value)>,
}

#[derive(Clone, Default, Debug)]
pub struct StoreCounters {
    pub requests: u64,
    pub committed: u64,
    pub aborted: u64,
    pub bad_requests: u64,
    pub duplicates_answered: u64,
    /// Requests with an id older than the client's last decided one, or the
    /// same id with other ops (a client id reused by another process).
    pub stale_rejected: u64,
    pub ignored_short: u64,
    pub ignored_responses: u64,
    pub fragments: u64,
    pub backend_errors: u64,
    pub malformed: [u64; DecodeError::ALL.len()],
}

impl Counters for StoreCounters {
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("requests", self.requests),
            ("committed", self.committed),
            ("aborted", self.aborted),
            ("bad_requests", self.bad_requests),
            ("duplicates_answered", self.duplicates_answered),
            ("stale_rejected", self.stale_rejected),
            ("ignored_short", self.ignored_short),
            ("ignored_responses", self.ignored_responses),
            ("fragments", self.fragments),
            ("backend_errors", self.backend_errors),
            ("malformed", self.malformed.iter().sum()),
        ]
    }
}

struct Partial {
    frag_cnt: u8,
    frags: BTreeMap<u8, Vec<Op>>,
}

pub struct TxnStore {
    backend: Box<dyn Backend + Send>,
    reassembly: HashMap<(u32, i32), Partial>,
    reassembly_order: VecDeque<(u32, i32)>,
    /// Every decision in order, when recording is on (the simulator's history).
    pub log: Option<Vec<Decision>>,
    pub counters: StoreCounters,
}

impl TxnStore {
    pub fn new(backend: Box<dyn Backend + Send>) -> TxnStore {
        TxnStore {
            backend,
            reassembly: HashMap::new(),
            reassembly_order: VecDeque::new(),
            log: None,
            counters: Default::default(),
        }
    }

    pub fn in_memory() -> TxnStore {
        TxnStore::new(Box::new(MemBackend::default()))
    }

    pub fn with_log(mut self) -> TxnStore {
        self.log = Some(Vec::new());
        self
    }

    pub fn snapshot(&self) -> BTreeMap<Key, Value> {
        self.backend.snapshot()
    }

    pub fn get(&self, key: Key) -> Value {
        self.backend.get(key)
    }

    /// Handles one packet; replies are queued to [`Dest::Reply`].
    pub fn handle(&mut self, bytes: &[u8], out: &mut Outbox) {
        let msg = match TxnMsg::decode(bytes) {
            Ok(m) => m,
            Err(e) => return self.malformed(bytes, e, out),
        };
        if msg.flags.is_response() {
            self.counters.ignored_responses += 1;
            return;
        }
        self.counters.requests += 1;
        if let Some(rec) = self.backend.client(msg.cl_id) {
            let digest = if msg.is_fragmented() { 0 } else { request_digest(&msg.ops) };
            let same = msg.req_id == rec.req_id && (digest == 0 || rec.digest == 0 || digest == rec.digest);
            if same {
                self.counters.duplicates_answered += 1;
                for r in rec.reply {
                    out.send(Dest::Reply, r);
                }
                return;
            }
            if msg.req_id.wrapping_sub(rec.req_id) <= 0 {
                // Already decided: a late copy (its client has moved on and
                // ignores this answer) or a reused client id (this tells it).
                self.counters.stale_rejected += 1;
                out.send(Dest::Reply, msg.reply(Status::BadRequest, false, vec![]).encode());
                return;
            }
        }
        let ops = if msg.is_fragmented() {
            self.counters.fragments += 1;
            match self.reassemble(&msg) {
                Some(ops) => ops,
                None => return,
            }
        } else {
            msg.ops.clone()
        };
        let (decision, reply_ops) = self.apply(&msg, &ops);
        let template = msg.reply(decision.status, false, vec![]);
        let reply: Vec<Vec<u8>> = TxnMsg::fragments(&template, &reply_ops).iter().map(TxnMsg::encode).collect();
        let digest = if msg.is_fragmented() { 0 } else { request_digest(&ops) };
        let record = ClientRecord { req_id: msg.req_id, digest, reply: reply.clone() };
        let writes = if decision.status == Status::Ok { &decision.writes[..] } else { &[] };
        if let Err(e) = self.backend.commit(writes, msg.cl_id, &record) {
            // Nothing was acknowledged: the client will resend and we decide again.
            self.counters.backend_errors += 1;
            eprintln!("innet store: backend error, request {}:{} not answered: {e}", msg.cl_id, msg.req_id);
            return;
        }
        match decision.status {
            Status::Ok => self.counters.committed += 1,
            Status::BadRequest => self.counters.bad_requests += 1,
            _ => self.counters.aborted += 1,
        }
        if let Some(log) = &mut self.log {
            log.push(decision);
        }
        for r in reply {
            out.send(Dest::Reply, r);
        }
    }

    fn malformed(&mut self, bytes: &[u8], e: DecodeError, out: &mut Outbox) {
        self.counters.malformed[e.index()] += 1;
        if bytes.len() < HEADER_LEN || bytes[0] & Flags::RESPONSE != 0 {
            self.counters.ignored_short += 1;
            return;
        }
        self.counters.bad_requests += 1;
        let cl_id = u32::from_be_bytes(bytes[1..5].try_into().expect("4 bytes"));
        let req_id = i32::from_be_bytes(bytes[5..9].try_into().expect("4 bytes"));
        let reply = TxnMsg::request(cl_id, req_id, vec![]).reply(Status::BadRequest, false, vec![]);
        out.send(Dest::Reply, reply.encode());
    }

    fn reassemble(&mut self, msg: &TxnMsg) -> Option<Vec<Op>> {
        let id = (msg.cl_id, msg.req_id);
        if !self.reassembly.contains_key(&id) {
            if self.reassembly_order.len() >= REASSEMBLY_SLOTS {
                if let Some(old) = self.reassembly_order.pop_front() {
                    self.reassembly.remove(&old);
                }
            }
            self.reassembly_order.push_back(id);
            self.reassembly.insert(id, Partial { frag_cnt: msg.frag_cnt, frags: BTreeMap::new() });
        }
        let p = self.reassembly.get_mut(&id).expect("inserted above");
        if p.frag_cnt != msg.frag_cnt {
            return None; // inconsistent fragment; the resend will sort it out
        }
        p.frags.insert(msg.frag_seq, msg.ops.clone());
        if p.frags.len() < p.frag_cnt as usize {
            return None;
        }
        let p = self.reassembly.remove(&id).expect("present");
        self.reassembly_order.retain(|x| *x != id);
        Some(p.frags.into_values().flatten().collect())
    }

    /// Algorithm 1. Returns the decision and the reply ops.
    fn apply(&self, msg: &TxnMsg, ops: &[Op]) -> (Decision, Vec<Op>) {
        let mut d = Decision {
            cl_id: msg.cl_id,
            req_id: msg.req_id,
            status: Status::Ok,
            compares: vec![],
            reads: vec![],
            writes: vec![],
        };
        let mut read_keys = vec![];
        for op in ops {
            match op.kind {
                OpType::Value => d.compares.push((op.key, op.value)),
                OpType::Read => read_keys.push(op.key),
                OpType::Write => d.writes.push((op.key, op.value)),
                OpType::Nop | OpType::Updated | OpType::CpuPct => {}
            }
        }
        if d.compares.is_empty() && read_keys.is_empty() && d.writes.is_empty() {
            d.status = Status::BadRequest;
            return (d, vec![]);
        }
        let mut corrections: Vec<Op> = vec![];
        for (k, v) in &d.compares {
            let current = self.backend.get(*k);
            if current != *v && !corrections.iter().any(|c| c.key == *k) {
                corrections.push(Op::value(*k, current));
            }
        }
        if !corrections.is_empty() {
            for (k, _) in &d.writes {
                if !corrections.iter().any(|c| c.key == *k) {
                    corrections.push(Op::value(*k, self.backend.get(*k)));
                }
            }
            d.status = Status::Abort;
            return (d, corrections);
        }
        let mut reply: Vec<Op> = d.writes.iter().map(|(k, v)| Op::updated(*k, *v)).collect();
        for k in read_keys {
            // Reads see this request's own writes (the last write to a key wins).
            let v = d.writes.iter().rev().find(|(wk, _)| *wk == k).map_or_else(|| self.backend.get(k), |(_, v)| *v);
            d.reads.push((k, v));
            reply.push(Op::value(k, v));
        }
        (d, reply)
    }
}

impl Host for TxnStore {
    fn on_packet(&mut self, _now: Time, packet: &[u8], out: &mut Outbox) {
        self.handle(packet, out);
    }
    fn on_tick(&mut self, _now: Time, _out: &mut Outbox) {}
    fn next_tick(&self) -> Option<Time> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Value {
        Value::from_str_padded(s).unwrap()
    }

    fn send(store: &mut TxnStore, msg: &TxnMsg) -> TxnMsg {
        let mut out = Outbox::new();
        store.handle(&msg.encode(), &mut out);
        assert_eq!(out.sends.len(), 1);
        TxnMsg::decode(&out.sends[0].1).unwrap()
    }

    // Reference: Gotthard section 3.2, Algorithm 1 lines 3-7 and 9-12.
    #[test]
    fn algorithm_1_abort_with_corrections_then_commit() {
        let mut s = TxnStore::in_memory();
        let r = send(&mut s, &TxnMsg::request(1, 1, vec![Op::write(1, v("a"))]));
        assert_eq!((r.status, r.ops.clone()), (Status::Ok, vec![Op::updated(1, v("a"))]));
        let r = send(&mut s, &TxnMsg::request(1, 2, vec![Op::value(1, v("x")), Op::write(2, v("y"))]));
        assert_eq!(r.status, Status::Abort);
        assert_eq!(r.ops, vec![Op::value(1, v("a")), Op::value(2, Value::ZERO)]);
        assert!(!r.flags.from_switch());
        let r = send(&mut s, &TxnMsg::request(1, 3, vec![Op::value(1, v("a")), Op::write(1, v("b")), Op::read(1)]));
        assert_eq!(r.status, Status::Ok);
        assert_eq!(r.ops, vec![Op::updated(1, v("b")), Op::value(1, v("b"))]);
    }

    #[test]
    fn empty_request_is_badreq_and_duplicates_get_the_same_reply() {
        let mut s = TxnStore::in_memory();
        let r = send(&mut s, &TxnMsg::request(5, 1, vec![]));
        assert_eq!(r.status, Status::BadRequest);
        let w = TxnMsg::request(5, 2, vec![Op::write(9, v("z"))]);
        let a = send(&mut s, &w);
        let b = send(&mut s, &w);
        assert_eq!(a, b);
        assert_eq!(s.counters.committed, 1);
        assert_eq!(s.counters.duplicates_answered, 1);
    }

    #[test]
    fn a_reused_request_id_or_an_older_one_is_rejected_not_answered_from_the_record() {
        let mut s = TxnStore::in_memory();
        let first = TxnMsg::request(4, 1, vec![Op::write(1, v("a"))]);
        assert_eq!(send(&mut s, &first).status, Status::Ok);
        assert_eq!(send(&mut s, &TxnMsg::request(4, 2, vec![Op::write(1, v("b"))])).status, Status::Ok);
        // Another process reusing client id 4 starts again at request id 1 and 2.
        let reused = send(&mut s, &TxnMsg::request(4, 2, vec![Op::write(1, v("z"))]));
        assert_eq!(reused.status, Status::BadRequest);
        assert_eq!(send(&mut s, &first).status, Status::BadRequest, "older id");
        assert_eq!(s.get(1), v("b"));
        assert_eq!(s.counters.stale_rejected, 2);
    }

    #[test]
    fn fragmented_transactions_apply_atomically() {
        let mut s = TxnStore::in_memory();
        let ops: Vec<Op> = (0..10).map(|k| Op::write(k, Value::from_counter(k as u64))).collect();
        let frags = TxnMsg::fragments(&TxnMsg::request(3, 1, vec![]), &ops);
        let mut out = Outbox::new();
        s.handle(&frags[1].encode(), &mut out);
        assert!(out.is_empty());
        assert_eq!(s.get(0), Value::ZERO);
        s.handle(&frags[0].encode(), &mut out);
        assert_eq!(out.sends.len(), 2, "10 UPDATED ops come back in two fragments");
        assert_eq!(s.get(9), Value::from_counter(9));
    }
}
