//! The reference behaviour of optimistic abort, over real UDP on loopback
//! (NOCC section 3; the reference implementation's two-client scenario).

mod common;

use std::time::{Duration, Instant};

use common::{v, Raw};
use innet_live::txn::{start_local, LocalConfig};
use innet_live::Stop;
use innet_txn::Mode;
use innet_wire::txn::{Op, OpType, Status};

#[test]
fn optimistic_abort_two_clients_over_udp() {
    let stop = Stop::new();
    let mut cfg = LocalConfig::new(Mode::OptimisticAbort);
    cfg.switch.store_delay = Duration::from_millis(20);
    let net = start_local(&cfg, &stop).unwrap();
    let sw = net.switch_addr();

    // Populate key 1 with 'a' (a WRITE-only transaction).
    let c0 = Raw::new(sw);
    c0.send(100, 1, vec![Op::write(1, v("a"))]);
    let (r, from) = c0.recv();
    assert_eq!(from, sw, "replies come from the switch the client sent to");
    assert_eq!((r.status, r.flags.from_switch()), (Status::Ok, false));
    assert_eq!(r.ops, vec![Op::updated(1, v("a"))]);

    let (c1, c2) = (Raw::new(sw), Raw::new(sw));
    let txn = |cmp: &str, new: &str| vec![Op::value(1, v(cmp)), Op::write(1, v(new))];

    // Round 1: both read 'a' and write 'b'; the second arrives while the first is pending.
    let t0 = Instant::now();
    c1.send(1, 1, txn("a", "b"));
    std::thread::sleep(Duration::from_millis(2));
    c2.send(2, 1, txn("a", "b"));
    let (r2, from2) = c2.recv();
    let (r1, from1) = c1.recv();
    assert_eq!((from1, from2), (sw, sw), "each reply arrives on the socket its client sent from");
    assert_eq!((r2.status, r2.flags.from_switch()), (Status::OptimisticAbort, true));
    assert_eq!(r2.ops[0], Op::value(1, v("b")), "the correction is the pending value, as a VALUE op");
    assert_eq!(r2.ops[1].kind, OpType::Nop);
    assert_eq!((r1.status, r1.flags.from_switch()), (Status::Ok, false));
    assert_eq!(r1.ops, vec![Op::updated(1, v("b"))]);
    assert!(t0.elapsed() >= Duration::from_millis(40), "the store's answer travelled the 20 ms link twice");

    // Round 2: client 1 writes 'c' over 'b'; client 2 right after, same transaction.
    c1.send(1, 2, txn("b", "c"));
    std::thread::sleep(Duration::from_millis(2));
    c2.send(2, 2, txn("b", "c"));
    let (r2, _) = c2.recv();
    let (r1, _) = c1.recv();
    assert_eq!((r2.status, r2.flags.from_switch()), (Status::OptimisticAbort, true));
    assert_eq!(r2.ops[0], Op::value(1, v("c")));
    assert_eq!((r1.status, r1.flags.from_switch()), (Status::Ok, false));
    assert_eq!(r1.ops, vec![Op::updated(1, v("c"))]);

    assert_eq!(net.switch_counter("optimistically_aborted"), 2);
    assert_eq!(net.switch_counter("forwarded"), 3);
    assert_eq!(net.switch_counter("live_reflected"), 2);
    let report = net.shutdown().unwrap();
    assert_eq!(report.store.counters.committed, 3);
    assert_eq!(report.store.counters.aborted, 0);
}
