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
//! A recorded reply is sent again only to the address the recorded request
//! came from; a copy from anywhere else is answered BADREQ.
//!
//! A request with the `reset` flag clears the store only if it was started
//! with `--allow-reset` ([`TxnStore::with_allow_reset`]); else BADREQ.
//!
//! Storage is a [`Backend`]: [`MemBackend`] here, a durable one in
//! `innet-storage`.

use std::collections::{BTreeMap, HashMap, VecDeque};

use innet_core::{Counters, Dest, Host, Outbox, Peer, Sender, Time};
use innet_wire::txn::{DecodeError, Flags, Key, Op, OpType, Status, TxnMsg, Value, HEADER_LEN, VALUE_LEN};

/// Requests being reassembled at once; the oldest is abandoned beyond this.
pub const REASSEMBLY_SLOTS: usize = 1024;

/// Clients the store keeps an exactly-once record for; beyond this the least
/// recently decided client's record is forgotten (see `docs/txn.md`).
pub const CLIENT_RECORDS_DEFAULT: usize = 65_536;

/// A reply from a client's record is sent again only if it is at most this
/// many times the bytes of the request asking for it (so the store is no
/// amplifier); otherwise the request gets BADREQ.
pub const RESEND_FACTOR: usize = 2;

/// What the store remembers about a client for exactly-once replies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientRecord {
    pub req_id: i32,
    /// `request_digest` of the request's ops (of all its fragments, for a
    /// fragmented request; 0 in records of earlier versions, which matches
    /// any request with the same id).
    pub digest: u64,
    /// The encoded reply packets (fragments) sent for `req_id`.
    pub reply: Vec<Vec<u8>>,
    /// Who sent the request: the reply is sent again only to this address.
    /// `None` in records of earlier versions and from runtimes that name no
    /// sender, which any sender may have resent.
    pub from: Option<Peer>,
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
    /// [`Backend::commit`] of `decision`: a backend that keeps a decision
    /// log (`innet store --record-decisions`, for `innet chaos txn`'s
    /// checker) appends it in the same atomic step; others ignore it.
    fn commit_decision(
        &mut self,
        writes: &[(Key, Value)],
        cl_id: u32,
        record: &ClientRecord,
        decision: &Decision,
    ) -> Result<(), BackendError> {
        let _ = decision;
        self.commit(writes, cl_id, record)
    }
    fn client(&self, cl_id: u32) -> Option<ClientRecord>;
    /// Forgets every key and every client record, then sets `cl_id`'s
    /// record, atomically (a request with the `reset` flag).
    fn reset(&mut self, cl_id: u32, record: &ClientRecord) -> Result<(), BackendError>;
    /// Removes `cl_id`'s record (durably, for a durable backend).
    fn forget(&mut self, cl_id: u32) -> Result<(), BackendError>;
    /// Every client id with a record.
    fn client_ids(&self) -> Vec<u32>;
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
        debug_assert!(clients.values().all(|r| !r.reply.is_empty()), "a record holds the reply it sent");
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
        debug_assert!(writes.last().is_none_or(|(k, v)| self.get(*k) == *v), "the last write to a key wins");
        Ok(())
    }
    fn client(&self, cl_id: u32) -> Option<ClientRecord> {
        self.clients.get(&cl_id).cloned()
    }
    fn reset(&mut self, cl_id: u32, record: &ClientRecord) -> Result<(), BackendError> {
        self.data.clear();
        self.clients.clear();
        self.clients.insert(cl_id, record.clone());
        debug_assert!(self.data.is_empty() && self.clients.len() == 1);
        Ok(())
    }
    fn forget(&mut self, cl_id: u32) -> Result<(), BackendError> {
        self.clients.remove(&cl_id);
        Ok(())
    }
    fn client_ids(&self) -> Vec<u32> {
        self.clients.keys().copied().collect()
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

impl Decision {
    /// Bytes for a durable decision log (`innet store --record-decisions`):
    /// `cl_id u32 | req_id i32 | status u8`, then compares, reads and
    /// writes, each `count u16 | (key u32 | value 16 bytes)*`, big-endian.
    pub fn encode(&self) -> Vec<u8> {
        let pairs = self.compares.len() + self.reads.len() + self.writes.len();
        let mut b = Vec::with_capacity(9 + 6 + pairs * (4 + VALUE_LEN));
        b.extend_from_slice(&self.cl_id.to_be_bytes());
        b.extend_from_slice(&self.req_id.to_be_bytes());
        b.push(self.status as u8);
        for list in [&self.compares, &self.reads, &self.writes] {
            // A request has at most 255 fragments of 7 ops: within a u16.
            b.extend_from_slice(&(list.len().min(u16::MAX as usize) as u16).to_be_bytes());
            for (k, v) in list.iter().take(u16::MAX as usize) {
                b.extend_from_slice(&k.to_be_bytes());
                b.extend_from_slice(&v.0);
            }
        }
        debug_assert!(
            pairs > u16::MAX as usize || Decision::decode(&b).as_ref() == Some(self),
            "a decision reads back"
        );
        b
    }

    /// The decision [`Decision::encode`] wrote; `None` for other bytes.
    pub fn decode(bytes: &[u8]) -> Option<Decision> {
        fn take<'a>(b: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
            let (head, rest) = (b.get(..n)?, b.get(n..)?);
            *b = rest;
            Some(head)
        }
        let mut b = bytes;
        let cl_id = u32::from_be_bytes(take(&mut b, 4)?.try_into().ok()?);
        let req_id = i32::from_be_bytes(take(&mut b, 4)?.try_into().ok()?);
        let status = Status::from_u8(*take(&mut b, 1)?.first()?)?;
        let mut lists: [Vec<(Key, Value)>; 3] = Default::default();
        for list in &mut lists {
            let n = u16::from_be_bytes(take(&mut b, 2)?.try_into().ok()?);
            for _ in 0..n {
                let k = u32::from_be_bytes(take(&mut b, 4)?.try_into().ok()?);
                let v = Value(take(&mut b, VALUE_LEN)?.try_into().ok()?);
                list.push((k, v));
            }
        }
        let [compares, reads, writes] = lists;
        let decision = b.is_empty().then_some(Decision { cl_id, req_id, status, compares, reads, writes });
        debug_assert!(
            decision.as_ref().is_none_or(|d| {
                let pairs = d.compares.len() + d.reads.len() + d.writes.len();
                bytes.len() == 9 + 6 + pairs * (4 + VALUE_LEN)
            }),
            "a decision is its header, three counts and its pairs"
        );
        decision
    }
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
    /// A duplicate whose recorded reply is more than [`RESEND_FACTOR`] times
    /// its bytes: answered BADREQ instead.
    pub resend_refused_too_large: u64,
    /// Records forgotten to stay within the client limit.
    pub client_records_evicted: u64,
    /// A duplicate from another address than its original request's: the
    /// recorded reply goes only to that address, this one gets BADREQ.
    pub resend_refused_other_sender: u64,
    /// Requests with the `reset` flag honoured (`--allow-reset`).
    pub resets: u64,
    /// Requests with the `reset` flag refused (BADREQ): no `--allow-reset`.
    pub reset_refused: u64,
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
            ("resend_refused_too_large", self.resend_refused_too_large),
            ("client_records_evicted", self.client_records_evicted),
            ("resend_refused_other_sender", self.resend_refused_other_sender),
            ("resets", self.resets),
            ("reset_refused", self.reset_refused),
            ("backend_errors", self.backend_errors),
            ("malformed", self.malformed.iter().sum()),
        ]
    }
}

struct Partial {
    frag_cnt: u8,
    frags: BTreeMap<u8, Vec<Op>>,
    /// Bytes of the fragments held.
    bytes: usize,
}

/// The store's CPU use between two CPU_PCT requests, as the reference
/// store reports it: percent of one CPU, from `/proc/thread-self/stat`
/// (utime + stime in clock ticks of 1/100 s) of the thread that runs the
/// store, so that a store sharing its process with a switch and clients
/// (`innet bench txn --runtime live`) reports its own use; 0 where that is
/// unreadable.
struct CpuMeter {
    last: Option<(Time, u64)>,
}

impl CpuMeter {
    fn ticks() -> Option<u64> {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
        // Fields after the command name (which may hold spaces) in parentheses.
        let rest = &stat[stat.rfind(')')? + 1..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
    }

    /// Percent since the previous call at `now` (since the first call: 0).
    fn percent(&mut self, now: Time) -> f32 {
        let Some(ticks) = CpuMeter::ticks() else { return 0.0 };
        let pct = match self.last {
            Some((t, before)) => {
                let wall = now.as_secs_f64() - t.as_secs_f64();
                if wall > 0.0 {
                    (ticks.saturating_sub(before) as f64 / 100.0 / wall * 100.0) as f32
                } else {
                    0.0
                }
            }
            None => 0.0,
        };
        self.last = Some((now, ticks));
        pct
    }
}

/// A CPU_PCT reply value: the percentage as an IEEE-754 single in network
/// byte order in the first 4 bytes, the rest zero (the reference store's
/// `htonl(*(uint32_t *)&pct)`).
pub fn cpu_pct_value(pct: f32) -> Value {
    let mut v = [0u8; VALUE_LEN];
    v[..4].copy_from_slice(&pct.to_bits().to_be_bytes());
    debug_assert_eq!(f32::from_bits(u32::from_be_bytes(v[..4].try_into().expect("4 bytes"))).to_bits(), pct.to_bits());
    Value(v)
}

/// Which clients' records were used least recently.
#[derive(Default)]
struct Recency {
    clock: u64,
    stamp: HashMap<u32, u64>,
    order: BTreeMap<u64, u32>,
}

impl Recency {
    fn touch(&mut self, cl_id: u32) {
        self.clock += 1;
        if let Some(old) = self.stamp.insert(cl_id, self.clock) {
            self.order.remove(&old);
        }
        self.order.insert(self.clock, cl_id);
        debug_assert_eq!(self.stamp.len(), self.order.len(), "one recency stamp per client record");
    }
    fn oldest(&self) -> Option<u32> {
        self.order.values().next().copied()
    }
    fn remove(&mut self, cl_id: u32) {
        if let Some(old) = self.stamp.remove(&cl_id) {
            self.order.remove(&old);
        }
        debug_assert_eq!(self.stamp.len(), self.order.len(), "one recency stamp per client record");
    }
}

pub struct TxnStore {
    backend: Box<dyn Backend + Send>,
    reassembly: HashMap<(u32, i32), Partial>,
    reassembly_order: VecDeque<(u32, i32)>,
    client_limit: usize,
    recency: Recency,
    cpu: CpuMeter,
    /// The time of the packet being handled (from [`Host::on_packet`]).
    now: Time,
    /// Who sent the packet being handled, if the runtime says.
    from: Option<Peer>,
    /// Whether a request with the `reset` flag clears the store.
    allow_reset: bool,
    /// Every decision in order, when recording is on (the simulator's history).
    pub log: Option<Vec<Decision>>,
    pub counters: StoreCounters,
}

impl TxnStore {
    pub fn new(backend: Box<dyn Backend + Send>) -> TxnStore {
        let mut recency = Recency::default();
        let mut ids = backend.client_ids();
        ids.sort_unstable();
        for id in ids {
            recency.touch(id);
        }
        TxnStore {
            backend,
            reassembly: HashMap::new(),
            reassembly_order: VecDeque::new(),
            client_limit: CLIENT_RECORDS_DEFAULT,
            recency,
            cpu: CpuMeter { last: None },
            now: Time::ZERO,
            from: None,
            allow_reset: false,
            log: None,
            counters: Default::default(),
        }
        .checked()
    }

    /// `self`, after asserting the store's invariants (debug builds): one
    /// recency stamp per client record, the reassembly buffer within its
    /// bound and indexed once per partial request, every partial request
    /// holding at most its fragment count.
    fn checked(self) -> TxnStore {
        debug_assert!(self.invariants_hold());
        self
    }

    fn invariants_hold(&self) -> bool {
        self.recency.stamp.len() == self.recency.order.len()
            && self.reassembly.len() == self.reassembly_order.len()
            && self.reassembly.len() <= REASSEMBLY_SLOTS
            && self.reassembly.values().all(|p| p.frags.len() < usize::from(p.frag_cnt))
            && self.client_limit >= 1
    }

    pub fn in_memory() -> TxnStore {
        TxnStore::new(Box::new(MemBackend::default()))
    }

    /// Keeps exactly-once records for at most `limit` (>= 1) clients.
    pub fn with_client_limit(mut self, limit: usize) -> TxnStore {
        self.client_limit = limit.max(1);
        self.checked()
    }

    /// Honours the `reset` flag: such a request clears every key and every
    /// client record and is answered OK (the reference store's behaviour).
    /// Without this it is answered BADREQ.
    pub fn with_allow_reset(mut self, allow: bool) -> TxnStore {
        self.allow_reset = allow;
        self.checked()
    }

    /// How many clients have a record.
    pub fn client_records(&self) -> usize {
        debug_assert!(self.invariants_hold());
        self.recency.stamp.len()
    }

    pub fn with_log(mut self) -> TxnStore {
        self.log = Some(Vec::new());
        self.checked()
    }

    pub fn snapshot(&self) -> BTreeMap<Key, Value> {
        debug_assert!(self.invariants_hold());
        self.backend.snapshot()
    }

    pub fn get(&self, key: Key) -> Value {
        debug_assert!(self.invariants_hold());
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
        // A fragmented request is judged whole: a lone fragment is never
        // answered from a record (it could pull every recorded fragment)
        // and a reused request id is told apart by the digest of all ops.
        let (ops, request_bytes) = if msg.is_fragmented() {
            self.counters.fragments += 1;
            match self.reassemble(&msg, bytes.len()) {
                Some(whole) => whole,
                None => return,
            }
        } else {
            (msg.ops.clone(), bytes.len())
        };
        let digest = request_digest(&ops);
        if self.answered_from_record(&msg, digest, request_bytes, out) {
            return;
        }
        // A reset is honoured whatever the client's last request id (a
        // reference client resets and then starts its ids at 1 again).
        if msg.flags.reset() {
            return self.reset(&msg, digest, out);
        }
        if !self.recency.stamp.contains_key(&msg.cl_id) {
            if let Err(e) = self.make_room() {
                self.counters.backend_errors += 1;
                eprintln!("innet store: backend error, request {}:{} not answered: {e}", msg.cl_id, msg.req_id);
                return;
            }
        }
        self.decide(&msg, &ops, digest, out);
        debug_assert!(self.invariants_hold());
    }

    /// Exactly-once: a request the client's record already decided (the
    /// same id and ops) gets the recorded reply again, to the address that
    /// sent it and if it is no amplifier; an older id, or the same id with
    /// other ops, is answered BADREQ. `false`: the request is new (or a
    /// reset, judged by [`TxnStore::reset`]).
    fn answered_from_record(&mut self, msg: &TxnMsg, digest: u64, request_bytes: usize, out: &mut Outbox) -> bool {
        let Some(rec) = self.backend.client(msg.cl_id) else {
            return false;
        };
        if msg.req_id == rec.req_id && (rec.digest == 0 || digest == rec.digest) {
            let recorded: usize = rec.reply.iter().map(Vec::len).sum();
            if rec.from.is_some() && self.from.is_some() && rec.from != self.from {
                // A replay from elsewhere: the reply would go to whoever
                // sent it, and a switch on the way would see it pass.
                self.counters.resend_refused_other_sender += 1;
                out.send(Dest::Reply, msg.reply(Status::BadRequest, false, vec![]).encode());
                return true;
            }
            if recorded > RESEND_FACTOR * request_bytes {
                self.counters.resend_refused_too_large += 1;
                out.send(Dest::Reply, msg.reply(Status::BadRequest, false, vec![]).encode());
                return true;
            }
            self.counters.duplicates_answered += 1;
            debug_assert!(!rec.reply.is_empty(), "a record holds the reply it sent");
            for r in rec.reply {
                out.send(Dest::Reply, r);
            }
            return true;
        }
        if msg.req_id.wrapping_sub(rec.req_id) <= 0 && !msg.flags.reset() {
            // Already decided: a late copy (its client has moved on and
            // ignores this answer) or a reused client id (this tells it).
            self.counters.stale_rejected += 1;
            out.send(Dest::Reply, msg.reply(Status::BadRequest, false, vec![]).encode());
            return true;
        }
        false
    }

    /// Algorithm 1 on a new request, its decision and reply committed with
    /// the client's record in one step, then the reply sent.
    fn decide(&mut self, msg: &TxnMsg, ops: &[Op], digest: u64, out: &mut Outbox) {
        let previous = self.backend.client(msg.cl_id).map(|r| r.req_id);
        debug_assert!(
            previous.is_none_or(|last| msg.req_id.wrapping_sub(last) > 0),
            "client {}: request {} decided after {previous:?}: a request id never goes backwards",
            msg.cl_id,
            msg.req_id
        );
        let cpu = if ops.iter().any(|o| o.kind == OpType::CpuPct) { self.cpu.percent(self.now) } else { 0.0 };
        let (decision, reply_ops) = self.apply(msg, ops, cpu);
        let template = msg.reply(decision.status, false, vec![]);
        // A reply has at most one op per request op, so it fits the
        // fragments the request came in; were it not so, BADREQ, not a panic.
        let reply: Vec<Vec<u8>> = TxnMsg::fragments(&template, &reply_ops)
            .unwrap_or_else(|| vec![msg.reply(Status::BadRequest, false, vec![])])
            .iter()
            .map(TxnMsg::encode)
            .collect();
        let record = ClientRecord { req_id: msg.req_id, digest, reply: reply.clone(), from: self.from };
        let writes = if decision.status == Status::Ok { &decision.writes[..] } else { &[] };
        if let Err(e) = self.backend.commit_decision(writes, msg.cl_id, &record, &decision) {
            // Nothing was acknowledged: the client will resend and we decide again.
            self.counters.backend_errors += 1;
            eprintln!("innet store: backend error, request {}:{} not answered: {e}", msg.cl_id, msg.req_id);
            return;
        }
        debug_assert_eq!(self.backend.client(msg.cl_id).map(|r| r.req_id), Some(msg.req_id), "the record committed");
        self.recency.touch(msg.cl_id);
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

    /// A request with the `reset` flag: with `allow_reset`, every key and
    /// every client record is forgotten (this client's record is this
    /// request, so a copy of it gets the same OK and clears nothing again)
    /// and it is answered OK with the `reset` flag set, which tells the
    /// switches on the way to clear their caches and client tables. Its ops
    /// are not executed. Without `allow_reset`: BADREQ, nothing changes.
    fn reset(&mut self, msg: &TxnMsg, digest: u64, out: &mut Outbox) {
        if !self.allow_reset {
            self.counters.reset_refused += 1;
            self.counters.bad_requests += 1;
            out.send(Dest::Reply, msg.reply(Status::BadRequest, false, vec![]).encode());
            return;
        }
        let mut reply = msg.reply(Status::Ok, false, vec![]);
        reply.flags = reply.flags.with(Flags::RESET, true);
        let reply = reply.encode();
        let record = ClientRecord { req_id: msg.req_id, digest, reply: vec![reply.clone()], from: self.from };
        if let Err(e) = self.backend.reset(msg.cl_id, &record) {
            self.counters.backend_errors += 1;
            eprintln!("innet store: backend error, reset {}:{} not answered: {e}", msg.cl_id, msg.req_id);
            return;
        }
        self.reassembly.clear();
        self.reassembly_order.clear();
        self.recency = Recency::default();
        self.recency.touch(msg.cl_id);
        self.counters.resets += 1;
        debug_assert!(self.recency.stamp.len() == 1 && self.reassembly.is_empty(), "a reset forgets every client");
        out.send(Dest::Reply, reply);
    }

    /// Forgets the least recently decided clients' records until a new
    /// client fits within the limit.
    fn make_room(&mut self) -> Result<(), BackendError> {
        while self.recency.stamp.len() >= self.client_limit {
            let Some(old) = self.recency.oldest() else { break };
            self.backend.forget(old)?;
            self.recency.remove(old);
            self.counters.client_records_evicted += 1;
        }
        debug_assert!(self.recency.stamp.len() < self.client_limit, "no room made for a new client record");
        Ok(())
    }

    fn malformed(&mut self, bytes: &[u8], e: DecodeError, out: &mut Outbox) {
        self.counters.malformed[e.index()] += 1;
        if bytes.len() < HEADER_LEN || bytes[0] & Flags::RESPONSE != 0 {
            self.counters.ignored_short += 1;
            return;
        }
        debug_assert!(bytes.len() >= HEADER_LEN && TxnMsg::decode(bytes).is_err());
        self.counters.bad_requests += 1;
        let cl_id = u32::from_be_bytes(bytes[1..5].try_into().expect("4 bytes"));
        let req_id = i32::from_be_bytes(bytes[5..9].try_into().expect("4 bytes"));
        let reply = TxnMsg::request(cl_id, req_id, vec![]).reply(Status::BadRequest, false, vec![]);
        out.send(Dest::Reply, reply.encode());
    }

    /// Adds a fragment (`len` bytes) to its request; the whole request's
    /// ops and bytes once every fragment is in. A fragment that does not fit
    /// what is held (another fragment count, or other ops at its position:
    /// a client id reused by another process) starts the request afresh.
    fn reassemble(&mut self, msg: &TxnMsg, len: usize) -> Option<(Vec<Op>, usize)> {
        let id = (msg.cl_id, msg.req_id);
        let fits = self.reassembly.get(&id).is_some_and(|p| {
            p.frag_cnt == msg.frag_cnt && p.frags.get(&msg.frag_seq).is_none_or(|ops| *ops == msg.ops)
        });
        if !fits {
            if !self.reassembly.contains_key(&id) {
                if self.reassembly_order.len() >= REASSEMBLY_SLOTS {
                    if let Some(old) = self.reassembly_order.pop_front() {
                        self.reassembly.remove(&old);
                    }
                }
                self.reassembly_order.push_back(id);
            }
            self.reassembly.insert(id, Partial { frag_cnt: msg.frag_cnt, frags: BTreeMap::new(), bytes: 0 });
        }
        let p = self.reassembly.get_mut(&id).expect("inserted above");
        debug_assert!(
            msg.is_fragmented() && (1..=p.frag_cnt).contains(&msg.frag_seq),
            "decode checks fragment numbers"
        );
        if p.frags.insert(msg.frag_seq, msg.ops.clone()).is_none() {
            p.bytes += len;
        }
        debug_assert!(p.frags.len() <= p.frag_cnt as usize, "more fragments than the count");
        if p.frags.len() < p.frag_cnt as usize {
            return None;
        }
        let p = self.reassembly.remove(&id).expect("present");
        self.reassembly_order.retain(|x| *x != id);
        debug_assert_eq!(self.reassembly.len(), self.reassembly_order.len());
        Some((p.frags.into_values().flatten().collect(), p.bytes))
    }

    /// Algorithm 1. Returns the decision and the reply ops.
    /// `cpu`: the CPU use a CPU_PCT op is answered with.
    fn apply(&self, msg: &TxnMsg, ops: &[Op], cpu: f32) -> (Decision, Vec<Op>) {
        let mut d = Decision {
            cl_id: msg.cl_id,
            req_id: msg.req_id,
            status: Status::Ok,
            compares: vec![],
            reads: vec![],
            writes: vec![],
        };
        let (mut read_keys, mut cpu_keys) = (vec![], vec![]);
        for op in ops {
            match op.kind {
                OpType::Value => d.compares.push((op.key, op.value)),
                OpType::Read => read_keys.push(op.key),
                OpType::Write => d.writes.push((op.key, op.value)),
                OpType::CpuPct => cpu_keys.push(op.key),
                OpType::Nop | OpType::Updated => {}
            }
        }
        if d.compares.is_empty() && read_keys.is_empty() && d.writes.is_empty() && cpu_keys.is_empty() {
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
            debug_assert!(corrections.len() <= ops.len(), "one correction per compared or written key at most");
            return (d, corrections);
        }
        let mut reply: Vec<Op> = d.writes.iter().map(|(k, v)| Op::updated(*k, *v)).collect();
        for k in read_keys {
            // Reads see this request's own writes (the last write to a key wins).
            let v = d.writes.iter().rev().find(|(wk, _)| *wk == k).map_or_else(|| self.backend.get(k), |(_, v)| *v);
            d.reads.push((k, v));
            reply.push(Op::value(k, v));
        }
        reply.extend(cpu_keys.into_iter().map(|k| Op::new(OpType::CpuPct, k, cpu_pct_value(cpu))));
        debug_assert!(reply.len() <= ops.len(), "a reply has at most one op per request op");
        debug_assert!(d.compares.iter().all(|(k, v)| self.backend.get(*k) == *v), "a commit's compares all held");
        (d, reply)
    }
}

impl Host for TxnStore {
    fn on_packet(&mut self, now: Time, packet: &[u8], out: &mut Outbox) {
        self.now = now;
        self.from = None;
        self.handle(packet, out);
    }
    fn on_packet_from(&mut self, now: Time, packet: &[u8], from: Sender, out: &mut Outbox) {
        self.now = now;
        self.from = Some(from.peer);
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

    /// The decision log's encoding gives back every field, and refuses
    /// bytes cut short or with bytes left over.
    #[test]
    fn a_decision_encodes_and_decodes() {
        let d = Decision {
            cl_id: 9,
            req_id: -3,
            status: Status::OptimisticAbort,
            compares: vec![(1, Value::from_counter(4)), (2, Value::ZERO)],
            reads: vec![],
            writes: vec![(7, Value::from_counter(5))],
        };
        let b = d.encode();
        assert_eq!(Decision::decode(&b), Some(d));
        assert_eq!(Decision::decode(&b[..b.len() - 1]), None);
        assert_eq!(Decision::decode(&[b.as_slice(), &[0]].concat()), None);
    }

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
        let frags = TxnMsg::fragments(&TxnMsg::request(3, 1, vec![]), &ops).unwrap();
        let mut out = Outbox::new();
        s.handle(&frags[1].encode(), &mut out);
        assert!(out.is_empty());
        assert_eq!(s.get(0), Value::ZERO);
        s.handle(&frags[0].encode(), &mut out);
        assert_eq!(out.sends.len(), 2, "10 UPDATED ops come back in two fragments");
        assert_eq!(s.get(9), Value::from_counter(9));
    }
    fn all(store: &mut TxnStore, packets: &[TxnMsg]) -> Vec<TxnMsg> {
        let mut out = Outbox::new();
        for p in packets {
            store.handle(&p.encode(), &mut out);
        }
        out.sends.iter().map(|(_, b)| TxnMsg::decode(b).unwrap()).collect()
    }

    fn writes(n: u32, s: &str) -> Vec<Op> {
        (0..n).map(|k| Op::write(k, v(s))).collect()
    }

    #[test]
    fn a_lone_fragment_naming_a_recorded_reply_pulls_nothing_back() {
        let mut s = TxnStore::in_memory();
        let frags = TxnMsg::fragments(&TxnMsg::request(3, 1, vec![]), &writes(70, "a")).unwrap();
        assert_eq!(frags.len(), 10);
        let reply = all(&mut s, &frags);
        assert_eq!(reply.len(), 10, "70 UPDATED ops in ten fragments");
        // 13 bytes naming the recorded request, as one fragment of 255 or of 10.
        for cnt in [255u8, 10] {
            let mut lone = TxnMsg::request(3, 1, vec![]);
            (lone.frag_seq, lone.frag_cnt) = (1, cnt);
            let mut out = Outbox::new();
            s.handle(&lone.encode(), &mut out);
            assert!(out.is_empty(), "a lone fragment is not answered from the record");
        }
        // The client's own resend of every fragment gets the recorded reply.
        let (sent, got) = (frags.iter().map(|f| f.encode().len()).sum::<usize>(), all(&mut s, &frags));
        assert_eq!(got, reply);
        assert!(got.iter().map(|r| r.encode().len()).sum::<usize>() <= RESEND_FACTOR * sent);
        assert_eq!((s.counters.committed, s.counters.duplicates_answered), (1, 1));
    }

    #[test]
    fn a_reused_client_id_with_a_fragmented_request_is_refused_then_starts_afresh() {
        let mut s = TxnStore::in_memory();
        let old = TxnMsg::fragments(&TxnMsg::request(6, 1, vec![]), &writes(10, "a")).unwrap();
        assert!(all(&mut s, &old).iter().all(|r| r.status == Status::Ok));
        // Another process with client id 6 starts at request id 1 again.
        let reused = TxnMsg::fragments(&TxnMsg::request(6, 1, vec![]), &writes(10, "b")).unwrap();
        let r = all(&mut s, &reused);
        assert_eq!(r.iter().map(|r| r.status).collect::<Vec<_>>(), vec![Status::BadRequest], "not the old OK");
        assert_eq!(s.get(9), v("a"), "its writes were not applied, and it was not told they were");
        // Its next request id is new to the store: decided afresh.
        let fresh = TxnMsg::fragments(&TxnMsg::request(6, 2, vec![]), &writes(10, "b")).unwrap();
        assert!(all(&mut s, &fresh).iter().all(|r| r.status == Status::Ok));
        assert_eq!((s.get(0), s.get(9)), (v("b"), v("b")));
        // A fragment left over from an abandoned request with the same id
        // does not mix into a new one.
        let mut stray = TxnMsg::fragments(&TxnMsg::request(6, 3, vec![]), &writes(10, "x")).unwrap();
        stray.truncate(1);
        all(&mut s, &stray);
        let next = TxnMsg::fragments(&TxnMsg::request(6, 3, vec![]), &writes(10, "c")).unwrap();
        assert!(all(&mut s, &next).iter().all(|r| r.status == Status::Ok));
        assert_eq!((s.get(0), s.get(9)), (v("c"), v("c")));
    }

    #[test]
    fn client_records_are_bounded_least_recently_decided_out() {
        let mut s = TxnStore::in_memory().with_client_limit(4);
        for cl in 1..=10 {
            assert_eq!(send(&mut s, &TxnMsg::request(cl, 1, vec![Op::write(cl, v("a"))])).status, Status::Ok);
        }
        assert_eq!((s.client_records(), s.counters.client_records_evicted), (4, 6));
        // Client 7 was kept: its resend gets the recorded reply.
        let again = send(&mut s, &TxnMsg::request(7, 1, vec![Op::write(7, v("a"))]));
        assert_eq!((again.status, s.counters.duplicates_answered), (Status::Ok, 1));
        // Client 1 was forgotten: a resend of its request is decided again
        // (the exactly-once limit documented in docs/txn.md).
        send(&mut s, &TxnMsg::request(1, 1, vec![Op::write(1, v("a"))]));
        assert_eq!((s.counters.committed, s.client_records()), (11, 4));
    }

    #[test]
    fn a_recorded_reply_goes_only_to_the_address_that_sent_the_request() {
        let mut s = TxnStore::in_memory();
        let from = |n: usize| Sender { peer: Peer::node(n), upstream: false };
        let ask = |s: &mut TxnStore, sender: Sender, m: &TxnMsg| {
            let mut out = Outbox::new();
            s.on_packet_from(Time::ZERO, &m.encode(), sender, &mut out);
            TxnMsg::decode(&out.sends[0].1).unwrap()
        };
        let w = TxnMsg::request(3, 1, vec![Op::write(1, v("a"))]);
        assert_eq!(ask(&mut s, from(1), &w).status, Status::Ok);
        // A replay from another address is refused, not answered from the record.
        let r = ask(&mut s, from(2), &w);
        assert_eq!((r.status, r.ops.len()), (Status::BadRequest, 0));
        assert_eq!(s.counters.resend_refused_other_sender, 1);
        // The original sender's resend gets the recorded reply.
        assert_eq!(ask(&mut s, from(1), &w).status, Status::Ok);
        assert_eq!((s.counters.duplicates_answered, s.counters.committed), (1, 1));
    }

    #[test]
    fn cpu_pct_is_answered_with_the_store_s_cpu_use() {
        let mut s = TxnStore::in_memory();
        let ask = |s: &mut TxnStore, req_id: i32, at: Time| {
            let mut out = Outbox::new();
            let req = TxnMsg::request(8, req_id, vec![Op::new(OpType::CpuPct, 0, Value::ZERO)]);
            s.on_packet(at, &req.encode(), &mut out);
            TxnMsg::decode(&out.sends[0].1).unwrap()
        };
        let first = ask(&mut s, 1, Time::ZERO);
        assert_eq!((first.status, first.ops[0].kind, first.ops[0].key), (Status::Ok, OpType::CpuPct, 0));
        // Burn 0.3 s of CPU in this process, then ask again one second later.
        let before = CpuMeter::ticks().expect("/proc/self/stat");
        let mut x = 0u64;
        while CpuMeter::ticks().unwrap() < before + 30 {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
        let r = ask(&mut s, 2, Time::from_secs_f64(1.0));
        let pct = f32::from_bits(u32::from_be_bytes(r.ops[0].value.0[..4].try_into().unwrap()));
        assert!((30.0..1000.0).contains(&pct), "{pct}% of a CPU");
        assert!(r.ops[0].value.0[4..].iter().all(|b| *b == 0));
    }
}
