//! The transaction switch: Gotthard's Algorithm 2 (section 3.3) and NOCC's
//! speculative verification offload, in the four modes of the reference
//! implementation.
//!
//! * `forward`: a plain switch; a baseline.
//! * `read-cache`: the paper's idealised on-path read cache (section 5.1).
//!   All-READ requests whose keys hit are answered from the cache; values are
//!   learned from store replies.
//! * `early-abort`: VALUE ops (the client's compares) are checked against
//!   values learned from store replies; a failed compare aborts the request
//!   at the switch with the corrections (`status = ABORT, from_switch = 1`).
//! * `optimistic-abort`: as early-abort, and every WRITE the switch forwards
//!   is remembered as a *pending* value that later compares are checked
//!   against first (`status = OPTIMISTIC_ABORT`, Algorithm 2 line 13).
//!
//! The register layout follows the reference P4 program: per key a `value`
//! register (learned from the store) and an `opti_value` register (pending
//! writes). Store replies set `value`; an ABORT reply also clears `opti_value`
//! for every key it names (the store names every key the aborted request
//! wrote, so a speculative value that will never commit is withdrawn).
//! A switch-built reply is the request rewritten in place, as the P4 does:
//! failed compares carry the correction, every other non-VALUE op becomes NOP.
//! In a tree of switches, an abort built by a switch upstream for a request
//! this switch forwarded (and still awaits) makes this switch forget every
//! key the abort names: that request never reaches the store, so no store
//! reply would withdraw its pending writes or this switch's stale value, and
//! the two switches would abort the client's retries in turn.
//!
//! Deviations from the reference, each a correctness fix, documented in
//! `docs/txn.md`:
//! 1. *Duplicates.* The switch remembers, per client, the last request id it
//!    decided and whether it forwarded it. A duplicate of a forwarded request
//!    is forwarded untouched (the store de-duplicates); a duplicate of a
//!    request the switch answered, or an older request id, is answered
//!    BADREQ by the switch (judging it again could contradict the first
//!    answer; forwarding it could commit what the switch aborted).
//!    Without this, a duplicated request can be committed by the store and
//!    aborted by the switch, and the client would re-run a committed
//!    transaction.
//! 2. *store_commit.* A request with the `store_commit` flag (our client sets
//!    it on resends after a timeout) is forwarded untouched.
//! 3. *Switch answers are consistent snapshots.* A read-only request is
//!    answered by the switch (read-cache hit, or VALUE-only request that
//!    validates) only when every value used was learned from the store, none
//!    is a pending write, and all come from one store reply (or there is one
//!    key). Values learned from different replies may never have coexisted.
//! 4. *An aborted write is never forgotten while its client has not moved
//!    on* (issue 21). The switch is the store's only way in (the store takes
//!    only its downstream peers), and it refuses any copy of a request it
//!    answered itself by its client slot. So that slot must outlive the
//!    client's next request: a slot whose last decision was the switch's
//!    abort of a request with writes is *pinned* and never replaced by
//!    another client until a later request of its client is forwarded (the
//!    store, which refuses ids older than a client's last, then guards the
//!    aborted one; a request the switch answers keeps the pin). A client
//!    that finds its set full of pinned slots is not tracked, and its
//!    requests are forwarded untouched (`passed_untracked`: the switch
//!    answers nothing it could not remember). Before, flooding a set with
//!    four other client ids evicted the slot, and a copy of the aborted
//!    request was then forwarded and committed.
//!
//! Everything is switch-shaped: two fixed-size set-associative tables, loops
//! bounded by [`MAX_OPS_PER_PACKET`], in-place rewrite, a verdict.

use innet_core::table::SetAssoc;
use innet_core::{Counters, DataPlane, Ingress, Verdict};
use innet_wire::txn::{DecodeError, OpType, Status, TxnPacket, Value, MAX_OPS_PER_PACKET};

/// Default number of cache slots (keys the switch can hold). Power of two.
pub const CACHE_SLOTS_DEFAULT: usize = 4096;
/// Default number of client slots for duplicate detection. Power of two.
pub const CLIENT_SLOTS_DEFAULT: usize = 1024;
/// A forwarded request stays awaited while the client's later requests the
/// switch answered itself are fewer than this ([`ClientEntry::awaiting`] is
/// a byte).
pub const AWAITING_SPAN_MAX: i32 = 255;
const _: () = assert!(AWAITING_SPAN_MAX <= u8::MAX as i32, "ClientEntry::awaiting is a byte");

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Mode {
    Forward,
    ReadCache,
    EarlyAbort,
    OptimisticAbort,
}

impl Mode {
    pub const ALL: [Mode; 4] = [Mode::Forward, Mode::ReadCache, Mode::EarlyAbort, Mode::OptimisticAbort];
    pub fn name(self) -> &'static str {
        debug_assert_eq!(Mode::ALL[self.id() as usize], self, "Mode::ALL in id order");
        match self {
            Mode::Forward => "forward",
            Mode::ReadCache => "read-cache",
            Mode::EarlyAbort => "early-abort",
            Mode::OptimisticAbort => "optimistic-abort",
        }
    }
    /// The number a loader writes into the BPF config map.
    pub fn id(self) -> u8 {
        debug_assert!((self as usize) < Mode::ALL.len());
        self as u8
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        Mode::ALL.into_iter().find(|m| m.name() == s || m.name().replace('-', "_") == s).ok_or_else(|| {
            format!("unknown mode '{s}': expected one of forward, read-cache, early-abort, optimistic-abort")
        })
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One cache slot: the reference P4's `value`/`is_cached` and
/// `opti_value`/`is_opti_cached` registers, plus the reply that taught it.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct CacheEntry {
    /// Reset generation the entry belongs to; older entries count as empty.
    pub generation: u32,
    pub has_value: bool,
    pub value: Value,
    /// Which store reply taught `value` (a switch-local counter).
    pub learned_from: u32,
    pub has_pending: bool,
    pub pending: Value,
    /// A write to this key passed the switch and no store ABORT withdrew it
    /// since (the reference P4's `is_opti_cached`, which the store's OK
    /// does not clear): a compare that fails here is an OPTIMISTIC_ABORT,
    /// also once the store confirmed that write.
    pub opti: bool,
}

/// Last decision per client, for duplicate detection and for learning only
/// from replies the switch is waiting for.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct ClientEntry {
    /// Low 16 bits of the reset generation the entry belongs to; entries of
    /// another generation count as absent (a reset forgets every client).
    pub generation: u16,
    pub req_id: i32,
    pub forwarded: bool,
    /// 0, or the forwarded request whose store reply the switch waits for
    /// (not learned yet) is `req_id - (awaiting - 1)`: `req_id` itself
    /// (1), or one the client sent before later requests that the switch
    /// answered itself (the reference's switch learns every store reply,
    /// and its clients send the next request before the reply to one
    /// forwarded: test_read_cache.py, test_early_abort.py).
    pub awaiting: u8,
    /// The switch aborted `req_id` itself and it holds writes: the slot is
    /// not replaced by another client (deviation 4).
    pub pinned: bool,
}

/// Every decision the switch makes is counted.
#[derive(Clone, Default, Debug, PartialEq, Eq)]
pub struct SwitchCounters {
    pub requests: u64,
    pub responses: u64,
    pub forwarded: u64,
    pub aborted: u64,
    pub optimistically_aborted: u64,
    pub served_from_cache: u64,
    pub confirmed: u64,
    pub passed_fragmented: u64,
    pub passed_store_commit: u64,
    pub passed_duplicate: u64,
    /// A copy of a request the switch answered itself: answered BADREQ.
    pub refused_duplicate: u64,
    /// A request id older than the client's last: answered BADREQ.
    pub refused_stale: u64,
    pub learned_replies: u64,
    /// Store OKs to a request with the `reset` flag seen pass: the cache
    /// and the client table were cleared.
    pub resets: u64,
    /// A reply that arrived from the client side: dropped, never learned.
    pub dropped_reply_from_downstream: u64,
    /// A store reply, or an upstream switch's abort, the switch was not
    /// waiting for (a resend, a replay, a reply to a request it did not
    /// forward): passed on, not learned.
    pub unlearned_reply_not_awaited: u64,
    /// An awaited abort an upstream switch built passed: the keys it names
    /// were forgotten (`TxnSwitch::forget_keys_of`).
    pub forgot_on_upstream_switch_abort: u64,
    /// A request of a client with no slot, whose set holds only pinned
    /// slots: forwarded untouched, not judged (deviation 4).
    pub passed_untracked: u64,
    pub dropped_malformed: [u64; DecodeError::ALL.len()],
}

impl SwitchCounters {
    pub fn dropped_malformed_total(&self) -> u64 {
        self.dropped_malformed.iter().sum()
    }

    /// Requests the switch answered itself (the packet reflected).
    pub fn answered(&self) -> u64 {
        self.aborted
            + self.optimistically_aborted
            + self.served_from_cache
            + self.confirmed
            + self.refused_duplicate
            + self.refused_stale
    }

    /// Every request (a decoded packet without the response flag) is
    /// decided exactly once: forwarded, or answered by the switch.
    pub fn decisions_add_up(&self) -> bool {
        self.requests == self.forwarded + self.answered()
    }
}

impl Counters for SwitchCounters {
    fn counters(&self) -> Vec<(&'static str, u64)> {
        let mut v = vec![
            ("requests", self.requests),
            ("responses", self.responses),
            ("forwarded", self.forwarded),
            ("aborted", self.aborted),
            ("optimistically_aborted", self.optimistically_aborted),
            ("served_from_cache", self.served_from_cache),
            ("confirmed", self.confirmed),
            ("passed_fragmented", self.passed_fragmented),
            ("passed_store_commit", self.passed_store_commit),
            ("passed_duplicate", self.passed_duplicate),
            ("refused_duplicate", self.refused_duplicate),
            ("refused_stale", self.refused_stale),
            ("learned_replies", self.learned_replies),
            ("resets", self.resets),
            ("dropped_reply_from_downstream", self.dropped_reply_from_downstream),
            ("unlearned_reply_not_awaited", self.unlearned_reply_not_awaited),
            ("forgot_on_upstream_switch_abort", self.forgot_on_upstream_switch_abort),
            ("passed_untracked", self.passed_untracked),
        ];
        for e in DecodeError::ALL {
            v.push((malformed_counter_name(e), self.dropped_malformed[e.index()]));
        }
        v
    }
}

fn malformed_counter_name(e: DecodeError) -> &'static str {
    match e {
        DecodeError::Truncated => "dropped_malformed_truncated",
        DecodeError::TooManyOps => "dropped_malformed_too_many_ops",
        DecodeError::OpsBeyondPacket => "dropped_malformed_ops_beyond_packet",
        DecodeError::UnknownOpType => "dropped_malformed_unknown_op_type",
        DecodeError::UnknownStatus => "dropped_malformed_unknown_status",
        DecodeError::BadFragment => "dropped_malformed_bad_fragment",
    }
}

/// Which client slots may be replaced: any but a pinned one of the
/// current generation (deviation 4).
fn unpinned(generation: u16) -> impl Fn(&ClientEntry) -> bool {
    move |e| !(e.pinned && e.generation == generation)
}

/// Serial-number comparison of request ids (they may wrap).
fn is_older(a: i32, b: i32) -> bool {
    a.wrapping_sub(b) < 0
}

pub struct TxnSwitch {
    mode: Mode,
    cache: SetAssoc<CacheEntry>,
    clients: SetAssoc<ClientEntry>,
    generation: u32,
    replies_learned: u32,
    pub counters: SwitchCounters,
}

/// Per-op findings of the compare pass.
#[derive(Clone, Copy, Default)]
struct OpCheck {
    bad: bool,
    bad_pending: bool,
    correction: Value,
}

impl TxnSwitch {
    pub fn new(mode: Mode, cache_slots: usize, client_slots: usize) -> TxnSwitch {
        let switch = TxnSwitch {
            mode,
            cache: SetAssoc::new(cache_slots),
            clients: SetAssoc::new(client_slots),
            generation: 0,
            replies_learned: 0,
            counters: SwitchCounters::default(),
        };
        debug_assert!(switch.cache.is_empty() && switch.clients.is_empty());
        switch
    }

    pub fn with_defaults(mode: Mode) -> TxnSwitch {
        const _: () = assert!(CACHE_SLOTS_DEFAULT.is_power_of_two() && CLIENT_SLOTS_DEFAULT.is_power_of_two());
        TxnSwitch::new(mode, CACHE_SLOTS_DEFAULT, CLIENT_SLOTS_DEFAULT)
    }

    pub fn mode(&self) -> Mode {
        debug_assert!(self.counters.decisions_add_up(), "a request decided twice or never: {:?}", self.counters);
        self.mode
    }

    /// The cache entry for `key` if it belongs to the current generation.
    pub fn cached(&self, key: u32) -> Option<&CacheEntry> {
        let e = self.cache.peek(key).filter(|e| e.generation == self.generation);
        debug_assert!(
            e.is_none_or(|e| !e.opti || self.mode == Mode::OptimisticAbort),
            "a pending write outside optimistic-abort"
        );
        e
    }

    /// Every valid cache slot in slot order, of any generation (for
    /// comparing with the BPF program's map, `crates/xdp`).
    pub fn cache_slots(&self) -> impl Iterator<Item = (u32, &CacheEntry)> {
        debug_assert!(
            self.cache
                .iter()
                .all(|(_, e)| self.mode != Mode::Forward && (!e.opti || self.mode == Mode::OptimisticAbort)),
            "a forwarding switch caches nothing; only optimistic-abort logs pending writes"
        );
        self.cache.iter()
    }

    /// Every valid client slot in slot order (as [`TxnSwitch::cache_slots`]).
    pub fn client_slots(&self) -> impl Iterator<Item = (u32, &ClientEntry)> {
        debug_assert!(
            self.clients.iter().all(|(_, e)| !(e.forwarded && e.pinned) && (e.awaiting != 1 || e.forwarded)),
            "a forwarded request unpins its client; awaiting 1 is the client's last request, forwarded"
        );
        self.clients.iter()
    }

    fn entry_mut(&mut self, key: u32) -> &mut CacheEntry {
        debug_assert_ne!(self.mode, Mode::Forward, "a forwarding switch caches nothing");
        let g = self.generation;
        let e = self.cache.entry(key);
        if e.generation != g {
            *e = CacheEntry { generation: g, ..CacheEntry::default() };
        }
        debug_assert_eq!(e.generation, g);
        e
    }

    fn handle_response(&mut self, p: &TxnPacket<'_>, ingress: Ingress) -> Verdict {
        self.counters.responses += 1;
        let flow = p.cl_id();
        if ingress != Ingress::Upstream {
            // Replies come from the store side; one from a client is forged.
            self.counters.dropped_reply_from_downstream += 1;
            return Verdict::Drop;
        }
        // An abort an upstream switch built is acted on too (below); its
        // OK (a confirmed compare-only request) teaches nothing.
        let learnable = self.mode != Mode::Forward
            && !p.is_fragmented()
            && matches!(p.status(), Status::Ok | Status::Abort | Status::OptimisticAbort)
            && (!p.flags().from_switch() || p.status().is_abort());
        if learnable && !self.awaited(p.cl_id(), p.req_id()) {
            self.counters.unlearned_reply_not_awaited += 1;
        } else if learnable && p.flags().from_switch() {
            self.forget_keys_of(p);
        } else if learnable {
            self.counters.learned_replies += 1;
            self.replies_learned = self.replies_learned.wrapping_add(1);
            let reply = self.replies_learned;
            let aborted = p.status().is_abort();
            for i in 0..p.op_cnt().min(MAX_OPS_PER_PACKET) {
                let kind = p.op_type(i);
                if !matches!(kind, OpType::Value | OpType::Updated) {
                    continue;
                }
                let (key, value) = (p.key(i), p.value(i));
                let e = self.entry_mut(key);
                e.has_value = true;
                e.value = value;
                e.learned_from = reply;
                let confirmed = kind == OpType::Updated && e.has_pending && e.pending == value;
                if aborted || confirmed {
                    e.has_pending = false;
                }
                if aborted {
                    e.opti = false;
                }
                debug_assert!(e.has_value && e.value == value && e.learned_from == reply);
                debug_assert!(!aborted || (!e.has_pending && !e.opti), "an abort withdraws the key's pending write");
            }
            if p.flags().reset() && p.status() == Status::Ok {
                // The store cleared itself: so does the switch (cache,
                // pending writes and client table, by generation).
                self.generation = self.generation.wrapping_add(1);
                self.counters.resets += 1;
            }
        }
        Verdict::Downstream { flow }
    }

    /// An awaited abort built by an upstream switch passes: the request this
    /// switch forwarded (and recorded pending writes for) will never reach
    /// the store, so no store reply will withdraw them, and the upstream
    /// switch judged a compare this switch let through. Every key the reply
    /// names (VALUE: compares and corrections; NOP: the request's writes
    /// and reads, rewritten) is dropped from the cache, so the next request
    /// on it is judged upstream. The corrections are not learned: they were
    /// not learned from the store (they may be the upstream switch's pending
    /// writes). Forgetting is learning less, which is always safe.
    fn forget_keys_of(&mut self, p: &TxnPacket<'_>) {
        debug_assert!(p.flags().from_switch() && p.status().is_abort());
        self.counters.forgot_on_upstream_switch_abort += 1;
        for i in 0..p.op_cnt().min(MAX_OPS_PER_PACKET) {
            if matches!(p.op_type(i), OpType::Value | OpType::Nop) {
                self.cache.remove(p.key(i));
                debug_assert!(self.cached(p.key(i)).is_none());
            }
        }
    }

    /// Whether the switch forwarded `req_id` of `cl_id` and waits for its
    /// reply; if so it stops waiting (a second copy of the reply is not news).
    fn awaited(&mut self, cl_id: u32, req_id: i32) -> bool {
        let g = self.generation as u16;
        match self.clients.get_mut(cl_id) {
            Some(e)
                if e.generation == g && e.awaiting > 0 && e.req_id.wrapping_sub(e.awaiting as i32 - 1) == req_id =>
            {
                debug_assert!(
                    e.forwarded || e.awaiting > 1,
                    "awaiting the client's last request, which was not forwarded"
                );
                e.awaiting = 0;
                true
            }
            _ => false,
        }
    }

    /// Duplicate detection; `Some(verdict)` if the request was seen before.
    /// A request the switch will not judge again is answered BADREQ (never
    /// dropped in silence: a client that restarted its ids learns so).
    fn check_duplicate(&mut self, p: &mut TxnPacket<'_>) -> Option<Verdict> {
        let (cl_id, req_id) = (p.cl_id(), p.req_id());
        let g = self.generation as u16;
        let last = *self.clients.get_mut(cl_id).filter(|e| e.generation == g)?;
        if req_id == last.req_id {
            if last.forwarded {
                self.counters.passed_duplicate += 1;
                self.counters.forwarded += 1;
                return Some(Verdict::Upstream { flow: cl_id });
            }
            self.counters.refused_duplicate += 1;
        } else if is_older(req_id, last.req_id) {
            self.counters.refused_stale += 1;
        } else {
            return None;
        }
        debug_assert!(req_id == last.req_id || is_older(req_id, last.req_id));
        p.make_switch_reply(Status::BadRequest);
        Some(Verdict::Reflect)
    }

    /// A resend with `store_commit`: forwarded untouched, unless its id is
    /// older than the client's last, or it is the request the switch
    /// answered itself (BADREQ, never executed). A resend of the request the
    /// switch forwarded last does not make the switch wait again: if its
    /// reply was learned, the store's answer from its record is not news
    /// (and would re-teach an old value if a replayed copy asked for it).
    fn store_commit(&mut self, p: &mut TxnPacket<'_>) -> Verdict {
        let (cl_id, req_id) = (p.cl_id(), p.req_id());
        let g = self.generation as u16;
        match self.clients.get_mut(cl_id).filter(|e| e.generation == g).copied() {
            Some(last) if is_older(req_id, last.req_id) => {
                self.counters.refused_stale += 1;
                p.make_switch_reply(Status::BadRequest);
                Verdict::Reflect
            }
            Some(last) if req_id == last.req_id && last.forwarded => {
                self.counters.passed_store_commit += 1;
                self.counters.forwarded += 1;
                Verdict::Upstream { flow: cl_id }
            }
            Some(last) if req_id == last.req_id => {
                // The switch answered it: the store must never decide it
                // (a replayed copy would commit what the switch aborted).
                // BADREQ says "not executed"; the client runs it again.
                self.counters.refused_duplicate += 1;
                p.make_switch_reply(Status::BadRequest);
                Verdict::Reflect
            }
            last => {
                debug_assert!(
                    last.is_none_or(|last| is_older(last.req_id, req_id)),
                    "only a newer resend is forwarded"
                );
                self.counters.passed_store_commit += 1;
                self.forward(cl_id, req_id)
            }
        }
    }

    /// Records the client's latest request in its slot, unless its set
    /// holds only pinned slots of other clients (then the request was
    /// forwarded: nothing needs remembering). Forwarded, it is the one
    /// awaited; answered here, the wait for an earlier forwarded request
    /// goes on (moving with `req_id`). `aborted_write` pins the slot; a pin
    /// holds until a later request of the client is forwarded, for from
    /// then on the store refuses the aborted one as stale (a request the
    /// switch answers itself teaches the store nothing).
    fn decided(&mut self, cl_id: u32, req_id: i32, forwarded: bool, aborted_write: bool) {
        let generation = self.generation as u16;
        let Some(e) = self.clients.entry_if(cl_id, unpinned(generation)) else {
            // `decide` checked `has_room` before judging the request.
            debug_assert!(forwarded, "request {req_id} of client {cl_id} answered but not remembered");
            return;
        };
        let current = e.generation == generation;
        let awaiting = match forwarded {
            true => 1,
            false if current && e.awaiting > 0 => {
                let later = req_id.wrapping_sub(e.req_id);
                let span = later.saturating_add(e.awaiting as i32);
                if later > 0 && span <= AWAITING_SPAN_MAX {
                    span as u8
                } else {
                    0
                }
            }
            false => 0,
        };
        let pinned = aborted_write || (!forwarded && current && e.pinned);
        debug_assert!(!(forwarded && pinned), "a forwarded request unpins its client");
        debug_assert!(awaiting as i32 <= AWAITING_SPAN_MAX);
        *e = ClientEntry { generation, req_id, forwarded, awaiting, pinned };
    }

    fn forward(&mut self, cl_id: u32, req_id: i32) -> Verdict {
        self.decided(cl_id, req_id, true, false);
        self.counters.forwarded += 1;
        debug_assert!(self.clients.peek(cl_id).is_none_or(|e| e.req_id == req_id && e.forwarded && e.awaiting == 1));
        Verdict::Upstream { flow: cl_id }
    }

    /// Answers the request itself; `pinned`: an abort of a request with
    /// writes (deviation 4).
    fn reflect(&mut self, p: &mut TxnPacket<'_>, status: Status, pinned: bool) -> Verdict {
        let (cl_id, req_id, g) = (p.cl_id(), p.req_id(), self.generation as u16);
        debug_assert!(
            self.clients.peek(cl_id).filter(|e| e.generation == g).is_none_or(|e| is_older(e.req_id, req_id)),
            "the switch judges only a client's newer requests (check_duplicate refuses the rest)"
        );
        p.make_switch_reply(status);
        self.decided(cl_id, req_id, false, pinned);
        debug_assert!(self.clients.peek(cl_id).is_some_and(|e| e.req_id == req_id && !e.forwarded));
        Verdict::Reflect
    }

    /// Whether the cached values for the ops of kind `kind` form a consistent
    /// snapshot: all learned from the store, none pending, all from one reply.
    fn snapshot_ok(&self, p: &TxnPacket<'_>, kind: OpType) -> bool {
        let mut first: Option<u32> = None;
        for i in 0..p.op_cnt().min(MAX_OPS_PER_PACKET) {
            if p.op_type(i) != kind {
                continue;
            }
            let Some(e) = self.cached(p.key(i)) else {
                return false;
            };
            if !e.has_value || e.has_pending || first.is_some_and(|r| r != e.learned_from) {
                return false;
            }
            first = Some(e.learned_from);
        }
        debug_assert!(first.is_none() || (0..p.op_cnt()).any(|i| p.op_type(i) == kind));
        first.is_some()
    }

    fn read_cache(&mut self, p: &mut TxnPacket<'_>) -> Verdict {
        let n = p.op_cnt();
        let all_reads = n > 0 && (0..n.min(MAX_OPS_PER_PACKET)).all(|i| p.op_type(i) == OpType::Read);
        if !all_reads || !self.snapshot_ok(p, OpType::Read) {
            return self.forward(p.cl_id(), p.req_id());
        }
        for i in 0..n.min(MAX_OPS_PER_PACKET) {
            let v = self.cached(p.key(i)).expect("checked by snapshot_ok").value;
            p.set_op_type(i, OpType::Value);
            p.set_value(i, &v);
        }
        debug_assert!((0..n).all(|i| p.op_type(i) == OpType::Value), "a cache hit answers every read");
        self.counters.served_from_cache += 1;
        self.reflect(p, Status::Ok, false)
    }

    fn validate(&mut self, p: &mut TxnPacket<'_>) -> Verdict {
        let n = p.op_cnt().min(MAX_OPS_PER_PACKET);
        let optimistic = self.mode == Mode::OptimisticAbort;
        // Pass 1: check every compare, rewrite nothing (NOCC section 3).
        let mut checks = [OpCheck::default(); MAX_OPS_PER_PACKET];
        let (mut miss, mut bad, mut bad_pending, mut only_values) = (false, false, false, n > 0);
        let mut writes = false;
        for (i, check) in checks.iter_mut().enumerate().take(n) {
            let kind = p.op_type(i);
            writes |= kind == OpType::Write;
            if kind != OpType::Value {
                only_values &= matches!(kind, OpType::Nop | OpType::CpuPct);
                continue;
            }
            let (key, value) = (p.key(i), p.value(i));
            match self.cached(key) {
                Some(e) if optimistic && e.has_pending => {
                    if value != e.pending {
                        *check = OpCheck { bad: true, bad_pending: true, correction: e.pending };
                    }
                }
                Some(e) if e.has_value => {
                    if value != e.value {
                        // Optimistic once a write passed here, as the reference.
                        *check = OpCheck { bad: true, bad_pending: optimistic && e.opti, correction: e.value };
                    }
                }
                _ => miss = true,
            }
            bad |= check.bad;
            bad_pending |= check.bad_pending;
        }
        debug_assert!(!bad_pending || (bad && optimistic), "an optimistic abort only in optimistic-abort mode");
        // Pass 2: abort with corrections, confirm, or record writes and forward.
        if bad && !miss {
            for (i, check) in checks.iter().enumerate().take(n) {
                if check.bad {
                    p.set_value(i, &check.correction);
                } else if p.op_type(i) != OpType::Value {
                    p.set_op_type(i, OpType::Nop);
                }
            }
            return if bad_pending {
                self.counters.optimistically_aborted += 1;
                self.reflect(p, Status::OptimisticAbort, writes)
            } else {
                self.counters.aborted += 1;
                self.reflect(p, Status::Abort, writes)
            };
        }
        if only_values && !miss && self.snapshot_ok(p, OpType::Value) {
            self.counters.confirmed += 1;
            return self.reflect(p, Status::Ok, false);
        }
        if optimistic {
            for i in 0..n {
                if p.op_type(i) == OpType::Write {
                    let (key, value) = (p.key(i), p.value(i));
                    let e = self.entry_mut(key);
                    e.has_pending = true;
                    e.pending = value;
                    e.opti = true;
                    debug_assert!(self.cached(key).is_some_and(|e| e.has_pending && e.pending == value));
                }
            }
        }
        self.forward(p.cl_id(), p.req_id())
    }
}

impl Counters for TxnSwitch {
    fn counters(&self) -> Vec<(&'static str, u64)> {
        self.counters.counters()
    }
}

impl DataPlane for TxnSwitch {
    /// A packet whose ingress is not known: a reply is taken to come from
    /// the upstream, a request from downstream (the way each normally
    /// travels). Runtimes call [`DataPlane::process_from`].
    fn process(&mut self, packet: &mut [u8]) -> Verdict {
        let ingress = if packet.first().is_some_and(|f| f & innet_wire::txn::Flags::RESPONSE != 0) {
            Ingress::Upstream
        } else {
            Ingress::Downstream
        };
        self.process_from(packet, ingress).0
    }

    fn process_from(&mut self, packet: &mut [u8], ingress: Ingress) -> (Verdict, usize) {
        let len = packet.len();
        let verdict = self.decide(packet, ingress);
        debug_assert!(self.counters.decisions_add_up(), "a request decided twice or never: {:?}", self.counters);
        (verdict, len)
    }

    /// A request's client id: its replies go back as `Downstream { flow:
    /// cl_id }`, so runtimes bind the client id to the neighbour its first
    /// request came from and refuse it from any other (issue 21).
    fn request_flow(&self, packet: &[u8]) -> Option<u32> {
        use innet_wire::txn::{Flags, HEADER_LEN};
        let header = packet.get(..HEADER_LEN)?;
        (header[0] & Flags::RESPONSE == 0).then(|| u32::from_be_bytes([header[1], header[2], header[3], header[4]]))
    }

    /// A request with another neighbour's client id is answered BADREQ
    /// ("not executed"), as a request the switch will not judge is.
    fn refuse(&self, packet: &mut [u8]) -> Option<usize> {
        let len = packet.len();
        let mut p = TxnPacket::parse(packet).ok()?;
        debug_assert!(!p.flags().is_response(), "only a request is refused");
        p.make_switch_reply(Status::BadRequest);
        Some(len)
    }
}

impl TxnSwitch {
    fn decide(&mut self, packet: &mut [u8], ingress: Ingress) -> Verdict {
        let mut p = match TxnPacket::parse(packet) {
            Ok(p) => p,
            Err(e) => {
                self.counters.dropped_malformed[e.index()] += 1;
                return Verdict::Drop;
            }
        };
        if p.flags().is_response() {
            return self.handle_response(&p, ingress);
        }
        self.counters.requests += 1;
        let (cl_id, req_id) = (p.cl_id(), p.req_id());
        if self.mode == Mode::Forward {
            self.counters.forwarded += 1;
            return Verdict::Upstream { flow: cl_id };
        }
        if p.is_fragmented() {
            // Section 4: a fragment cannot be judged without the whole transaction.
            self.counters.passed_fragmented += 1;
            self.counters.forwarded += 1;
            return Verdict::Upstream { flow: cl_id };
        }
        if p.flags().reset() {
            // Judged by the store (which may refuse it); the switch clears
            // itself when the store's OK passes (`handle_response`).
            return self.forward(cl_id, req_id);
        }
        if p.flags().store_commit() {
            return self.store_commit(&mut p);
        }
        if let Some(v) = self.check_duplicate(&mut p) {
            return v;
        }
        if !self.clients.has_room(cl_id, unpinned(self.generation as u16)) {
            // Pinned slots (deviation 4): a client the switch could not remember is not judged.
            self.counters.passed_untracked += 1;
            self.counters.forwarded += 1;
            return Verdict::Upstream { flow: cl_id };
        }
        match self.mode {
            Mode::Forward => unreachable!("handled above"),
            Mode::ReadCache => self.read_cache(&mut p),
            Mode::EarlyAbort | Mode::OptimisticAbort => self.validate(&mut p),
        }
    }
}
