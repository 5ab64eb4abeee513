//! The four switch modes, each test checking sentences of the papers
//! (Gotthard 2016 = `gotthard-optimistic-aborts-2016.txt`, NOCC 2018 =
//! `nocc-infinite-resources-occ-2018.txt`) or a documented deviation of
//! `switch.rs`. Packets are built with `TxnMsg::encode`, replies come from a
//! real `TxnStore` and pass back through the switch, as on the wire.

use innet_core::{DataPlane, Ingress, Outbox, Verdict};
use innet_txn::switch::CacheEntry;
use innet_txn::{Mode, TxnStore, TxnSwitch};
use innet_wire::txn::{Flags, Op, OpType, Status, TxnMsg, Value};

fn v(s: &str) -> Value {
    Value::from_str_padded(s).expect("fits")
}

/// `clients -- switch -- store`, with the store's replies passing back
/// through the switch.
struct Net {
    sw: TxnSwitch,
    store: TxnStore,
}

/// What became of a request.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// The switch answered it (the request rewritten in place).
    Switch(TxnMsg),
    /// The store answered it; the reply passed the switch downstream.
    Store(TxnMsg),
    Dropped,
}

impl Net {
    fn new(mode: Mode) -> Net {
        Net { sw: TxnSwitch::with_defaults(mode), store: TxnStore::in_memory() }
    }

    /// The request through the switch only. `Ok(bytes)`: forwarded upstream
    /// (now in flight to the store); `Err(outcome)`: answered or dropped.
    fn via_switch(&mut self, req: &TxnMsg) -> Result<Vec<u8>, Outcome> {
        let sent = req.encode();
        let mut b = sent.clone();
        match self.sw.process(&mut b) {
            Verdict::Upstream { flow } => {
                assert_eq!(flow, req.cl_id);
                assert_eq!(b, sent, "Gotthard 3.7 (b): forwarded requests are unchanged");
                Ok(b)
            }
            Verdict::Reflect => Err(Outcome::Switch(TxnMsg::decode(&b).expect("decodes"))),
            Verdict::Drop => Err(Outcome::Dropped),
            other => panic!("a request got {other:?}: the transaction switch only forwards, reflects or drops"),
        }
    }

    /// Delivers a forwarded request to the store; its reply passes the switch.
    fn deliver_to_store(&mut self, bytes: &[u8]) -> TxnMsg {
        let mut out = Outbox::new();
        self.store.handle(bytes, &mut out);
        let mut replies: Vec<Vec<u8>> = out.drain().map(|(_, b)| b).collect();
        assert_eq!(replies.len(), 1, "one reply packet");
        let mut r = replies.pop().expect("one");
        let sent = r.clone();
        assert!(matches!(self.sw.process(&mut r), Verdict::Downstream { .. }));
        assert_eq!(r, sent, "replies pass the switch unchanged");
        TxnMsg::decode(&r).expect("decodes")
    }

    /// A full round trip.
    fn send(&mut self, req: &TxnMsg) -> Outcome {
        match self.via_switch(req) {
            Ok(b) => Outcome::Store(self.deliver_to_store(&b)),
            Err(o) => o,
        }
    }

    fn cached(&self, key: u32) -> Option<CacheEntry> {
        self.sw.cached(key).copied()
    }
}

fn req(cl_id: u32, req_id: i32, ops: Vec<Op>) -> TxnMsg {
    TxnMsg::request(cl_id, req_id, ops)
}

fn store_reply(o: Outcome) -> TxnMsg {
    match o {
        Outcome::Store(m) => m,
        other => panic!("expected the store's reply, got {other:?}"),
    }
}

fn switch_reply(o: Outcome) -> TxnMsg {
    match o {
        Outcome::Switch(m) => m,
        other => panic!("expected a switch reply, got {other:?}"),
    }
}

/// Writes `key = value` through the switch so that it learns the value from
/// the store's UPDATED reply (client 100, a fresh request id each time).
fn learn(net: &mut Net, key: u32, value: &str, req_id: i32) {
    let r = store_reply(net.send(&req(100, req_id, vec![Op::write(key, v(value))])));
    assert_eq!(r.status, Status::Ok);
}

fn assert_switch_reply(m: &TxnMsg, status: Status, ops: Vec<Op>) {
    assert_eq!(m.flags.0 & 0xC0, Flags::RESPONSE | Flags::FROM_SWITCH, "msg_type and from_switch");
    assert_eq!(m.status, status);
    assert_eq!(m.ops, ops);
    assert_eq!((m.frag_seq, m.frag_cnt), (1, 1));
}

// Reference: Gotthard section 5.1, "Forwarding ... the switch simply forwards
// transaction messages to the intended destination, without executing any
// logic. This approach represents a baseline deployment."
#[test]
fn forward_passes_everything() {
    let mut net = Net::new(Mode::Forward);
    learn(&mut net, 1, "a", 1);
    assert!(net.cached(1).is_none(), "forward learns nothing");
    // A stale compare, an all-READ request, a reset, a duplicate: all reach the store.
    let stale = req(1, 1, vec![Op::value(1, v("x")), Op::write(1, v("y"))]);
    let r = store_reply(net.send(&stale));
    assert_eq!((r.status, r.flags.from_switch()), (Status::Abort, false));
    assert_eq!(store_reply(net.send(&req(1, 2, vec![Op::read(1)]))).ops, vec![Op::value(1, v("a"))]);
    let mut reset = req(1, 3, vec![Op::read(1)]);
    reset.flags = Flags(Flags::RESET);
    assert_eq!(store_reply(net.send(&reset)).status, Status::BadRequest, "no --allow-reset");
    assert_eq!(store_reply(net.send(&reset)).status, Status::BadRequest, "the copy too");
    assert_eq!(net.store.counters.reset_refused, 2);
    let c = &net.sw.counters;
    assert_eq!((c.forwarded, c.aborted, c.served_from_cache, c.resets), (5, 0, 0, 0));
}

// Reference: Gotthard section 5.1, "Read Cache ... an idealized on-path
// look-through read cache deployment in which the switch itself caches
// values, and services read requests if the data is in the cache."
#[test]
fn read_cache_answers_all_read_requests_it_can_and_forwards_the_rest() {
    let mut net = Net::new(Mode::ReadCache);
    // Miss: forwarded; the store's reply (VALUE for the READ) teaches key 2.
    let r = store_reply(net.send(&req(1, 1, vec![Op::read(2)])));
    assert_eq!(r.ops, vec![Op::value(2, Value::ZERO)]);
    assert_eq!(net.cached(2).map(|e| e.has_value), Some(true));
    learn(&mut net, 1, "a", 1);
    assert_eq!(net.cached(1).map(|e| (e.has_value, e.value)), Some((true, v("a"))));
    // Hit: answered by the switch, READ became VALUE with the cached value.
    let m = switch_reply(net.send(&req(1, 2, vec![Op::read(1)])));
    assert_eq!((m.cl_id, m.req_id), (1, 2));
    assert_switch_reply(&m, Status::Ok, vec![Op::value(1, v("a"))]);
    assert_eq!(net.sw.counters.served_from_cache, 1);
    // Miss on another key: forwarded.
    assert!(matches!(net.send(&req(1, 3, vec![Op::read(3)])), Outcome::Store(_)));
    // Not all-READ: forwarded, even with a stale compare (a read cache does not abort).
    let r = store_reply(net.send(&req(1, 4, vec![Op::value(1, v("x")), Op::write(1, v("y"))])));
    assert_eq!((r.status, r.flags.from_switch()), (Status::Abort, false));
    assert_eq!(net.sw.counters.aborted, 0);
}

// Reference: Gotthard section 3.3, Algorithm 2 lines 3-10: a compare against a
// cached key whose value differs adds the cached value to the corrections and
// the switch responds Abort(corrections). In the packet: the failed compare
// carries the correction, the other ops become NOP (section 3.5: "The switch
// simply needs to overwrite the compare fields with the correct values").
#[test]
fn early_abort_aborts_a_stale_compare_with_the_correction() {
    let mut net = Net::new(Mode::EarlyAbort);
    learn(&mut net, 1, "a", 1);
    let m = switch_reply(net.send(&req(1, 1, vec![Op::value(1, v("x")), Op::write(1, v("y")), Op::read(1)])));
    assert_switch_reply(
        &m,
        Status::Abort,
        vec![Op::value(1, v("a")), Op::new(OpType::Nop, 1, v("y")), Op::new(OpType::Nop, 1, Value::ZERO)],
    );
    assert_eq!(net.sw.counters.aborted, 1);
    assert_eq!(net.store.counters.requests, 1, "only the learning write reached the store");
}

// Reference: Gotthard section 3.3, Algorithm 2 lines 4-5: "If any compare
// operation references a key that is not in the cache ... it forwards the
// request to the store".
#[test]
fn early_abort_forwards_on_a_miss_even_with_another_stale_compare() {
    let mut net = Net::new(Mode::EarlyAbort);
    let r = store_reply(net.send(&req(1, 1, vec![Op::value(5, v("x")), Op::write(5, v("y"))])));
    assert_eq!((r.status, r.flags.from_switch()), (Status::Abort, false), "aborted by the store");
    learn(&mut net, 1, "a", 1);
    // Key 1 is stale but key 9 is unknown: forwarded.
    let r = store_reply(net.send(&req(1, 2, vec![Op::value(1, v("x")), Op::value(9, v("q"))])));
    assert_eq!(r.status, Status::Abort);
    assert_eq!(net.sw.counters.aborted, 0);
}

// Reference: Gotthard section 3.3, Algorithm 2 line 15: a request of compares
// only that all validate is answered OK by the switch ("the switch returns a
// successful response immediately to the client").
#[test]
fn early_abort_confirms_a_value_only_request_that_validates() {
    let mut net = Net::new(Mode::EarlyAbort);
    learn(&mut net, 1, "a", 1);
    let m = switch_reply(net.send(&req(1, 1, vec![Op::value(1, v("a"))])));
    assert_switch_reply(&m, Status::Ok, vec![Op::value(1, v("a"))]);
    assert_eq!(net.sw.counters.confirmed, 1);
    // A compare that validates plus a write: forwarded (Algorithm 2 lines 11-14).
    let r = store_reply(net.send(&req(1, 2, vec![Op::value(1, v("a")), Op::write(1, v("b"))])));
    assert_eq!(r.status, Status::Ok);
}

// Reference: Gotthard section 3.3, Algorithm 2 lines 11-14 ("it updates its
// cache with the new values (line 13). Then, it forwards the transaction"),
// and lines 3-10 for the later request; NOCC section 2: clients "optimistically
// retry ... before the previous conflicting transaction commits".
#[test]
fn optimistic_abort_aborts_a_conflicting_request_with_the_pending_value() {
    let mut net = Net::new(Mode::OptimisticAbort);
    learn(&mut net, 1, "a", 1);
    // Client 1's write is forwarded and still in flight.
    let a = net.via_switch(&req(1, 1, vec![Op::value(1, v("a")), Op::write(1, v("b"))])).expect("forwarded");
    let e = net.cached(1).expect("cached");
    assert_eq!((e.has_pending, e.pending, e.value), (true, v("b"), v("a")));
    // Client 2 read 'a' too: aborted with the pending value 'b'.
    let m = switch_reply(net.via_switch(&req(2, 1, vec![Op::value(1, v("a")), Op::write(1, v("c"))])).unwrap_err());
    assert_switch_reply(&m, Status::OptimisticAbort, vec![Op::value(1, v("b")), Op::new(OpType::Nop, 1, v("c"))]);
    assert_eq!(net.sw.counters.optimistically_aborted, 1);
    // Client 2 retries at once with the correction: passes, before `a` commits.
    let b = net.via_switch(&req(2, 2, vec![Op::value(1, v("b")), Op::write(1, v("c"))])).expect("forwarded");
    assert_eq!(net.cached(1).map(|e| e.pending), Some(v("c")));
    // Both commit at the store, in order.
    assert_eq!(net.deliver_to_store(&a).status, Status::Ok);
    assert!(net.cached(1).expect("cached").has_pending, "'c' is still pending");
    let r = net.deliver_to_store(&b);
    assert_eq!((r.status, r.ops.clone()), (Status::Ok, vec![Op::updated(1, v("c"))]));
    let e = net.cached(1).expect("cached");
    assert_eq!((e.has_pending, e.value), (false, v("c")), "confirmed by UPDATED");
    assert_eq!(net.store.get(1), v("c"));
}

// Reference: early-abort is Algorithm 2 without line 13 (the switch learns
// only from the store): a conflicting request behind an in-flight write is
// forwarded and aborted by the store.
#[test]
fn early_abort_does_not_record_pending_writes() {
    let mut net = Net::new(Mode::EarlyAbort);
    learn(&mut net, 1, "a", 1);
    let a = net.via_switch(&req(1, 1, vec![Op::value(1, v("a")), Op::write(1, v("b"))])).expect("fwd");
    assert!(!net.cached(1).expect("cached").has_pending);
    let b = net.via_switch(&req(2, 1, vec![Op::value(1, v("a")), Op::write(1, v("c"))])).expect("fwd");
    assert_eq!(net.deliver_to_store(&a).status, Status::Ok);
    assert_eq!(net.deliver_to_store(&b).status, Status::Abort);
}

// Reference: Gotthard section 3.3, Algorithm 2 lines 16-19 (an Abort from the
// store updates the cache with its corrections) and section 3.6 (a write from
// behind another switch is learned from the store's abort). The store's ABORT
// names every key the aborted request wrote, so the pending value recorded
// for it is withdrawn (`switch.rs` module doc).
#[test]
fn a_store_abort_clears_the_pending_values_of_the_keys_it_names() {
    let mut net = Net::new(Mode::OptimisticAbort);
    learn(&mut net, 1, "a", 1);
    learn(&mut net, 2, "p", 2);
    // Another switch's client changes key 1 at the store, behind our switch.
    let mut out = Outbox::new();
    net.store.handle(&req(50, 1, vec![Op::write(1, v("z"))]).encode(), &mut out);
    // Client 1 compares the now stale key 1 and writes key 2: forwarded, key 2 pending.
    let a = net.via_switch(&req(1, 1, vec![Op::value(1, v("a")), Op::write(2, v("w"))])).expect("fwd");
    assert_eq!(net.cached(2).map(|e| (e.has_pending, e.pending)), Some((true, v("w"))));
    let r = net.deliver_to_store(&a);
    assert_eq!(r.status, Status::Abort);
    assert_eq!(r.ops, vec![Op::value(1, v("z")), Op::value(2, v("p"))]);
    let (e1, e2) = (net.cached(1).unwrap(), net.cached(2).unwrap());
    assert_eq!((e1.value, e1.has_pending), (v("z"), false), "correction learned");
    assert_eq!((e2.value, e2.has_pending), (v("p"), false), "pending 'w' withdrawn");
    // A request that read key 2 = 'p' is therefore not aborted against 'w'.
    let r = store_reply(net.send(&req(2, 1, vec![Op::value(2, v("p")), Op::write(2, v("q"))])));
    assert_eq!(r.status, Status::Ok);
}

// Reference: Gotthard section 4, "When the Gotthard switch receives a
// fragmented message, it does [not] execute any of Algorithm 2, but just
// forwards the message."
#[test]
fn fragmented_requests_pass_untouched() {
    for mode in [Mode::ReadCache, Mode::EarlyAbort, Mode::OptimisticAbort] {
        let mut net = Net::new(mode);
        learn(&mut net, 1, "a", 1);
        // 15 ops: a stale compare, then writes; 3 fragments.
        let mut ops = vec![Op::value(1, v("x"))];
        ops.extend((2..16).map(|k| Op::write(k, v("w"))));
        let frags = TxnMsg::fragments(&req(1, 1, vec![]), &ops).unwrap();
        assert_eq!(frags.len(), 3);
        let mut forwarded = vec![];
        for f in &frags {
            forwarded.push(net.via_switch(f).unwrap_or_else(|o| panic!("{mode}: {o:?}")));
        }
        assert_eq!(net.sw.counters.passed_fragmented, 3, "{mode}");
        assert!((2..16).all(|k| net.cached(k).is_none()), "{mode}: no pending values from fragments");
        // An all-READ fragmented request is not served from the cache either.
        let reads: Vec<Op> = (0..8).map(|_| Op::read(1)).collect();
        for f in TxnMsg::fragments(&req(1, 2, vec![]), &reads).unwrap() {
            assert!(net.via_switch(&f).is_ok(), "{mode}");
        }
        // The store reassembles the first transaction and aborts it.
        let mut out = Outbox::new();
        for b in &forwarded {
            net.store.handle(b, &mut out);
        }
        let r = TxnMsg::decode(&out.sends[0].1).expect("decodes");
        assert_eq!(r.status, Status::Abort, "{mode}");
    }
}

// Reference: deviation 2 of `switch.rs` (documented in docs/txn.md): a
// request with the store_commit flag (our client's resends) is forwarded
// untouched, so only the store decides it.
#[test]
fn store_commit_requests_pass_untouched() {
    for mode in [Mode::ReadCache, Mode::EarlyAbort, Mode::OptimisticAbort] {
        let mut net = Net::new(mode);
        learn(&mut net, 1, "a", 1);
        let mut stale = req(1, 1, vec![Op::value(1, v("x")), Op::write(1, v("y"))]);
        stale.flags = Flags(Flags::STORE_COMMIT);
        let r = store_reply(net.send(&stale));
        assert_eq!((r.status, r.flags.from_switch()), (Status::Abort, false), "{mode}");
        let mut read = req(1, 2, vec![Op::read(1)]);
        read.flags = Flags(Flags::STORE_COMMIT);
        assert!(matches!(net.send(&read), Outcome::Store(_)), "{mode}: not served from the cache");
        assert_eq!(net.sw.counters.passed_store_commit, 2, "{mode}");
        assert!(!net.cached(1).unwrap().has_pending, "{mode}: store_commit writes are not recorded");
    }
}

// Reference: deviation 1 of `switch.rs` (docs/txn.md): a duplicate of a
// forwarded request is forwarded (the store answers duplicates from its
// client record); a duplicate of a request the switch answered, or an older
// request id, is answered BADREQ by the switch (never dropped in silence).
#[test]
fn duplicates_of_forwarded_requests_are_forwarded_of_reflected_ones_and_stale_ones_answered_badreq() {
    for mode in [Mode::ReadCache, Mode::EarlyAbort, Mode::OptimisticAbort] {
        let mut net = Net::new(mode);
        learn(&mut net, 1, "a", 1);
        let w = req(1, 1, vec![Op::value(1, v("a")), Op::write(1, v("b"))]);
        let first = store_reply(net.send(&w));
        let again = store_reply(net.send(&w));
        assert_eq!(first, again, "{mode}: the store's remembered reply");
        assert_eq!(net.store.counters.duplicates_answered, 1, "{mode}");
        assert_eq!(net.sw.counters.passed_duplicate, 1, "{mode}");
        // Reflected: a read-cache hit, or an abort of a stale compare.
        let reflected = if mode == Mode::ReadCache {
            req(1, 2, vec![Op::read(1)])
        } else {
            req(1, 2, vec![Op::value(1, v("a")), Op::write(1, v("c"))])
        };
        assert!(matches!(net.send(&reflected), Outcome::Switch(_)), "{mode}");
        let Outcome::Switch(dup) = net.send(&reflected) else { panic!("{mode}: the duplicate is answered") };
        assert_eq!(dup.status, Status::BadRequest, "{mode}");
        assert_eq!(net.sw.counters.refused_duplicate, 1, "{mode}");
        let Outcome::Switch(stale) = net.send(&w) else { panic!("{mode}: request 1 is older than 2: answered") };
        assert_eq!((stale.status, stale.req_id), (Status::BadRequest, 1), "{mode}");
        assert_eq!(net.sw.counters.refused_stale, 1, "{mode}");
    }
}

// Reference compatibility: the reference store answers a request with the
// `reset` flag by clearing its data (docs/txn.md). Ours does so only when
// started with --allow-reset; the switch clears its cache, pending writes and
// client table when the store's OK to the reset passes it, not before.
#[test]
fn reset_is_honoured_only_with_allow_reset_and_its_ok_clears_the_switch() {
    for mode in [Mode::ReadCache, Mode::EarlyAbort, Mode::OptimisticAbort] {
        for allow in [false, true] {
            let mut net = Net::new(mode);
            net.store = TxnStore::in_memory().with_allow_reset(allow);
            learn(&mut net, 1, "a", 1);
            // Client 7 has a decided request 5, so id 1 would be stale.
            assert_eq!(store_reply(net.send(&req(7, 5, vec![Op::write(2, v("b"))]))).status, Status::Ok);
            let mut reset = req(7, 1, vec![]);
            reset.flags = Flags(Flags::RESET);
            let r = store_reply(net.send(&reset));
            if !allow {
                assert_eq!(r.status, Status::BadRequest, "{mode}");
                assert_eq!((net.store.counters.reset_refused, net.sw.counters.resets), (1, 0), "{mode}");
                assert_eq!(net.cached(1).map(|e| e.value), Some(v("a")), "{mode}: cache kept");
                assert_eq!(net.store.get(2), v("b"), "{mode}: data kept");
                continue;
            }
            assert_eq!((r.status, r.flags.reset(), r.ops.len()), (Status::Ok, true, 0), "{mode}");
            assert_eq!((net.store.counters.resets, net.sw.counters.resets), (1, 1), "{mode}");
            assert!(net.cached(1).is_none() && net.cached(2).is_none(), "{mode}: cache cleared");
            assert_eq!((net.store.get(1), net.store.get(2)), (Value::ZERO, Value::ZERO), "{mode}: store cleared");
            // A copy of the reset gets its recorded OK; the store clears nothing again.
            let again = store_reply(net.send(&reset));
            assert_eq!((again.status, net.store.counters.resets), (Status::Ok, 1), "{mode}");
            // Client 7 goes on from id 1: neither switch nor store refuses it,
            // nor client 100 at id 1 (its record was forgotten too).
            let r = store_reply(net.send(&req(7, 2, vec![Op::write(2, v("c"))])));
            assert_eq!(r.status, Status::Ok, "{mode}");
            let r = store_reply(net.send(&req(100, 1, vec![Op::write(1, v("d"))])));
            assert_eq!(r.status, Status::Ok, "{mode}: client 100's records were forgotten too");
            assert_eq!((net.store.get(1), net.store.get(2)), (v("d"), v("c")), "{mode}");
        }
    }
}

// Reference: its P4 `is_opti_cached` register is set by a forwarded write and
// cleared only by a store ABORT naming the key (not by the OK that confirms
// the write), so a compare against a key a write passed is answered
// OPTIMISTIC_ABORT also after the store confirmed it (the reference's
// optimistic-abort test). Early-abort answers ABORT.
#[test]
fn a_conflict_with_a_confirmed_write_that_passed_is_still_an_optimistic_abort() {
    for mode in [Mode::EarlyAbort, Mode::OptimisticAbort] {
        let mut net = Net::new(mode);
        learn(&mut net, 1, "a", 1);
        let r = store_reply(net.send(&req(1, 1, vec![Op::value(1, v("a")), Op::write(1, v("b"))])));
        assert_eq!(r.status, Status::Ok, "{mode}: committed and confirmed");
        let Outcome::Switch(m) = net.send(&req(2, 1, vec![Op::value(1, v("a")), Op::write(1, v("c"))])) else {
            panic!("{mode}: aborted at the switch")
        };
        let status = if mode == Mode::OptimisticAbort { Status::OptimisticAbort } else { Status::Abort };
        assert_switch_reply(&m, status, vec![Op::value(1, v("b")), Op::new(OpType::Nop, 1, v("c"))]);
        if mode == Mode::EarlyAbort {
            continue;
        }
        // A store ABORT naming key 1 withdraws it: later conflicts are ABORT.
        let mut stale = req(3, 1, vec![Op::write(1, v("x")), Op::value(2, v("zz"))]);
        stale.flags = Flags(Flags::STORE_COMMIT);
        assert_eq!(store_reply(net.send(&stale)).status, Status::Abort);
        assert!(!net.cached(1).expect("cached").opti);
        let Outcome::Switch(m) = net.send(&req(2, 2, vec![Op::value(1, v("a"))])) else { panic!("switch") };
        assert_eq!(m.status, Status::Abort);
    }
}

/// `clients -- edge -- core -- store`, both switches optimistic-abort: a
/// request through both switches, the reply back through both; `Err` holds
/// a switch-built reply after it passed back through whatever lies below.
fn through_tree(
    edge: &mut TxnSwitch,
    core: &mut TxnSwitch,
    store: &mut TxnStore,
    m: &TxnMsg,
) -> Result<TxnMsg, TxnMsg> {
    let mut b = m.encode();
    match edge.process_from(&mut b, Ingress::Downstream).0 {
        Verdict::Upstream { .. } => {}
        Verdict::Reflect => return Err(TxnMsg::decode(&b).unwrap()),
        other => panic!("edge: {other:?}"),
    }
    let from_core = match core.process_from(&mut b, Ingress::Downstream).0 {
        Verdict::Upstream { .. } => {
            let mut out = Outbox::new();
            store.handle(&b, &mut out);
            let mut r = out.drain().map(|(_, b)| b).next().expect("a store reply");
            assert!(matches!(core.process_from(&mut r, Ingress::Upstream).0, Verdict::Downstream { .. }));
            r
        }
        Verdict::Reflect => b,
        other => panic!("core: {other:?}"),
    };
    let mut r = from_core;
    assert!(matches!(edge.process_from(&mut r, Ingress::Upstream).0, Verdict::Downstream { .. }));
    let m = TxnMsg::decode(&r).unwrap();
    if m.flags.from_switch() {
        Err(m)
    } else {
        Ok(m)
    }
}

// Gotthard section 3.6 puts switches in a tree. An abort the core builds for
// a request the edge forwarded never reaches the store, so no store reply
// would withdraw the edge's pending write or its stale value: the edge
// forgets the keys such an awaited abort names (`switch.rs`,
// `forget_keys_of`), and the retry with the core's correction passes it.
// Only an awaited reply from upstream does this.
#[test]
fn an_abort_built_by_the_upstream_switch_makes_the_edge_forget_the_keys_it_names() {
    let (mut edge, mut core) =
        (TxnSwitch::with_defaults(Mode::OptimisticAbort), TxnSwitch::with_defaults(Mode::OptimisticAbort));
    let mut store = TxnStore::in_memory();
    let r = through_tree(&mut edge, &mut core, &mut store, &req(1, 1, vec![Op::write(1, v("a"))])).unwrap();
    assert_eq!(r.status, Status::Ok);
    assert_eq!(edge.cached(1).map(|e| e.value), Some(v("a")));
    // A client behind another edge writes key 1 = 'z' through the core.
    let mut b = req(2, 1, vec![Op::value(1, v("a")), Op::write(1, v("z"))]).encode();
    assert!(matches!(core.process_from(&mut b, Ingress::Downstream).0, Verdict::Upstream { .. }));
    let mut out = Outbox::new();
    store.handle(&b, &mut out);
    let mut r = out.drain().map(|(_, b)| b).next().unwrap();
    assert!(matches!(core.process_from(&mut r, Ingress::Downstream).0, Verdict::Drop), "a reply from below is dropped");
    assert!(matches!(core.process_from(&mut r, Ingress::Upstream).0, Verdict::Downstream { .. }));

    // Client 1 still believes 'a': the edge passes it (and records 'b'
    // pending), the core aborts it with 'z'.
    let stale = req(1, 2, vec![Op::value(1, v("a")), Op::write(1, v("b"))]);
    let mut fwd = stale.encode();
    assert!(matches!(edge.process_from(&mut fwd, Ingress::Downstream).0, Verdict::Upstream { .. }));
    assert_eq!(edge.cached(1).map(|e| (e.has_pending, e.pending)), Some((true, v("b"))));
    assert!(matches!(core.process_from(&mut fwd, Ingress::Downstream).0, Verdict::Reflect));
    let abort = fwd;
    let m = TxnMsg::decode(&abort).unwrap();
    assert_switch_reply(&m, Status::OptimisticAbort, vec![Op::value(1, v("z")), Op::new(OpType::Nop, 1, v("b"))]);

    // The same abort forged from the client side: dropped, nothing changes.
    let before = edge.cached(1).copied();
    let mut forged = abort.clone();
    assert!(matches!(edge.process_from(&mut forged, Ingress::Downstream).0, Verdict::Drop));
    assert_eq!(edge.cached(1).copied(), before);
    assert_eq!(edge.counters.forgot_on_upstream_switch_abort, 0);

    // From upstream, awaited: key 1 is forgotten (pending 'b' and value 'a').
    let mut r = abort.clone();
    assert!(matches!(edge.process_from(&mut r, Ingress::Upstream).0, Verdict::Downstream { .. }));
    assert_eq!(r, abort, "passed on unchanged");
    assert_eq!(edge.cached(1), None);
    assert_eq!(edge.counters.forgot_on_upstream_switch_abort, 1);
    assert_eq!(edge.counters.learned_replies, 1, "nothing learned from it");

    // A second copy is not awaited: not acted on.
    let r = through_tree(&mut edge, &mut core, &mut store, &req(3, 1, vec![Op::write(1, v("y"))]));
    assert_eq!(r.map(|m| m.status), Ok(Status::Ok));
    let mut again = abort.clone();
    assert!(matches!(edge.process_from(&mut again, Ingress::Upstream).0, Verdict::Downstream { .. }));
    assert_eq!(edge.counters.unlearned_reply_not_awaited, 1);
    assert_eq!(edge.cached(1).map(|e| e.value), Some(v("y")), "what the edge learned since stays");

    // The client retries with the store's value: it passes both switches.
    let r =
        through_tree(&mut edge, &mut core, &mut store, &req(1, 3, vec![Op::value(1, v("y")), Op::write(1, v("b"))]));
    assert_eq!(r.map(|m| m.status), Ok(Status::Ok));
    assert_eq!(store.get(1), v("b"));
}

/// A one-set client table (4 ways) in optimistic-abort mode, where client 2's
/// increment of key 1 (`a` -> `a+1`) was aborted by the switch (a pending
/// write of another client, which the store then refused), so the store
/// still holds `a`. Returns the increment, to replay.
fn optimistically_aborted_increment() -> (Net, TxnMsg) {
    let sw = TxnSwitch::new(Mode::OptimisticAbort, innet_txn::switch::CACHE_SLOTS_DEFAULT, 4);
    let mut net = Net { sw, store: TxnStore::in_memory() };
    learn(&mut net, 1, "a", 1);
    // A write of "b" passes (pending); the store will refuse it (key 2's compare).
    let doomed = req(3, 1, vec![Op::value(2, v("zzz")), Op::value(1, v("a")), Op::write(1, v("b"))]);
    let doomed = net.via_switch(&doomed).expect("forwarded: key 2 is not cached");
    let increment = req(2, 1, vec![Op::value(1, v("a")), Op::write(1, v("a+1"))]);
    assert_eq!(switch_reply(net.send(&increment)).status, Status::OptimisticAbort);
    assert_eq!(net.deliver_to_store(&doomed).status, Status::Abort, "so the store still holds a");
    (net, increment)
}

// Deviation 4 (issue 21): the switch, the store's only way in, refuses a copy
// of a request it aborted by the client's slot, so the slot must stay. Four
// other clients passing a one-set table used to evict it; the copy (a
// network duplicate from the client's own address) was then judged afresh,
// forwarded and committed, though the client had been told "abort".
#[test]
fn a_switch_aborted_write_stays_refused_after_other_clients_fill_its_set() {
    let (mut net, increment) = optimistically_aborted_increment();
    for c in 10..14 {
        assert_eq!(store_reply(net.send(&req(c, 1, vec![Op::read(5)]))).status, Status::Ok);
    }
    let copy = net.send(&increment);
    assert!(matches!(&copy, Outcome::Switch(m) if m.status == Status::BadRequest), "{copy:?}");
    assert_eq!(net.store.get(1), v("a"), "the aborted increment was not applied");
}

// Deviation 4: a client that finds its set full of pinned slots is not
// tracked, so the switch answers nothing for it: forwarded, judged by the store.
#[test]
fn a_client_whose_set_holds_only_pinned_slots_is_forwarded_unjudged() {
    let sw = TxnSwitch::new(Mode::OptimisticAbort, innet_txn::switch::CACHE_SLOTS_DEFAULT, 4);
    let mut net = Net { sw, store: TxnStore::in_memory() };
    learn(&mut net, 1, "a", 1);
    for c in 20..24 {
        let o = req(c, 1, vec![Op::value(1, v("stale")), Op::write(1, v("x"))]);
        assert!(switch_reply(net.send(&o)).status.is_abort(), "client {c}");
    }
    let untracked = net.send(&req(30, 1, vec![Op::value(1, v("stale")), Op::write(1, v("y"))]));
    assert_eq!(store_reply(untracked).status, Status::Abort, "judged by the store");
    assert_eq!(net.sw.counters.passed_untracked, 1);
}

// Deviation 4: the pin holds while the switch answers the client's later
// requests itself, for the store has not seen a newer request of the client
// (it would refuse the aborted one as stale). Released when the compare-only
// read after the abort was confirmed by the switch, four other clients
// evicted the slot and a copy of the aborted increment committed.
#[test]
fn a_pin_holds_while_the_switch_answers_the_clients_later_requests() {
    let (mut net, increment) = optimistically_aborted_increment();
    let confirmed = net.send(&req(2, 2, vec![Op::value(1, v("a"))]));
    assert_eq!(switch_reply(confirmed).status, Status::Ok, "confirmed by the switch");
    for c in 10..14 {
        assert_eq!(store_reply(net.send(&req(c, 1, vec![Op::read(5)]))).status, Status::Ok);
    }
    let copy = net.send(&increment);
    assert!(matches!(&copy, Outcome::Switch(m) if m.status == Status::BadRequest), "{copy:?}");
    assert_eq!(net.store.get(1), v("a"), "the aborted increment was not applied");
    // A forwarded request of the client releases the pin: the store now
    // refuses the aborted id as older than the client's last.
    assert_eq!(store_reply(net.send(&req(2, 3, vec![Op::read(7)]))).status, Status::Ok);
    for c in 20..24 {
        assert_eq!(store_reply(net.send(&req(c, 1, vec![Op::read(5)]))).status, Status::Ok);
    }
    assert!(net.sw.client_slots().all(|(c, _)| c != 2), "client 2 evicted");
    let copy = net.send(&increment);
    assert_eq!(store_reply(copy).status, Status::BadRequest, "stale at the store");
    assert_eq!(net.store.get(1), v("a"));
}

// Gotthard section 3.1 (Figure 3, step 4): "The switch logs the result of
// the execution". The reference's clients send their next request before
// the reply to a forwarded one (pygotthard test_read_cache.py: W(2,'newer')
// and R(2) at once, then R(2) expects 'newer' from the cache;
// test_early_abort.py: T1 then T2 at once, then an abort must correct with
// T1's value). A reply to the forwarded request is still awaited, and
// learned, after the switch answered the later request itself.
#[test]
fn a_forwarded_requests_reply_is_learned_after_the_switch_answered_a_later_request() {
    let mut net = Net::new(Mode::ReadCache);
    learn(&mut net, 2, "bb", 1);
    let write = net.via_switch(&req(7, 2, vec![Op::write(2, v("newer"))])).expect("a write is forwarded");
    let read = switch_reply(net.send(&req(7, 3, vec![Op::read(2)])));
    assert_eq!(read.ops, vec![Op::value(2, v("bb"))], "the write is in flight: the old value");
    assert_eq!(net.deliver_to_store(&write).status, Status::Ok);
    let read = switch_reply(net.send(&req(7, 4, vec![Op::read(2)])));
    assert_eq!(read.ops, vec![Op::value(2, v("newer"))], "the write's reply was learned");
    assert_eq!(net.sw.counters.unlearned_reply_not_awaited, 0);

    // Early abort: 254 answers later the wait still holds; a second copy of
    // the reply is not learned again.
    let mut net = Net::new(Mode::EarlyAbort);
    learn(&mut net, 1, "a", 1);
    let t1 = net.via_switch(&req(7, 10, vec![Op::value(1, v("a")), Op::write(1, v("b"))])).expect("forwarded");
    for id in 11..11 + 254 {
        let m = switch_reply(net.send(&req(7, id, vec![Op::value(1, v("b")), Op::write(1, v("c"))])));
        assert_eq!(m.status, Status::Abort);
    }
    let reply = net.deliver_to_store(&t1);
    assert_eq!(reply.status, Status::Ok);
    assert_eq!(net.cached(1).map(|e| e.value), Some(v("b")), "T1's UPDATED learned");
    let mut copy = reply.encode();
    net.sw.process_from(&mut copy, Ingress::Upstream);
    assert_eq!(net.sw.counters.unlearned_reply_not_awaited, 1, "a second copy is not news");

    // Beyond AWAITING_SPAN_MAX the wait is dropped: learning less is safe.
    let t = net.via_switch(&req(7, 300, vec![Op::value(1, v("b")), Op::write(1, v("d"))])).expect("forwarded");
    for id in 301..301 + 255 {
        switch_reply(net.send(&req(7, id, vec![Op::value(1, v("x")), Op::write(1, v("e"))])));
    }
    net.deliver_to_store(&t);
    assert_eq!(net.cached(1).map(|e| e.value), Some(v("b")), "not learned");
    assert_eq!(net.sw.counters.unlearned_reply_not_awaited, 2);
}
