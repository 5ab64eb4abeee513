//! Malformed packets sent to a live switch are dropped and counted; sent to
//! a live store they get BADREQ or are ignored. Both keep serving.

mod common;

use std::time::Duration;

use common::{eventually, v, Raw};
use innet_live::txn::{start_local, LocalConfig};
use innet_live::Stop;
use innet_txn::Mode;
use innet_wire::txn::{offset, Op, Status, TxnMsg, HEADER_LEN};

fn bad_packets() -> [Vec<u8>; 3] {
    let good = TxnMsg::request(9, 1, vec![Op::write(1, v("x"))]).encode();
    let truncated = good[..5].to_vec();
    let mut beyond = good.clone();
    beyond[offset::OP_CNT] = 3; // three ops announced, one present
    let mut unknown = good;
    unknown[HEADER_LEN] = 9; // op type 9
    [truncated, beyond, unknown]
}

#[test]
fn malformed_to_switch_are_dropped_and_counted() {
    let net = start_local(&LocalConfig::new(Mode::OptimisticAbort), &Stop::new()).unwrap();
    let c = Raw::new(net.switch_addr());
    for p in bad_packets() {
        c.send_bytes(&p);
    }
    eventually("three malformed drops counted", || net.switch_counter("live_dropped") == 3);
    assert_eq!(net.switch_counter("dropped_malformed_truncated"), 1);
    assert_eq!(net.switch_counter("dropped_malformed_ops_beyond_packet"), 1);
    assert_eq!(net.switch_counter("dropped_malformed_unknown_op_type"), 1);
    assert_eq!(net.switch_counter("live_to_upstream"), 0, "nothing malformed reached the store");
    assert!(c.recv_within(Duration::from_millis(200)).is_none(), "no answer to garbage");
    // Still serving.
    c.send(9, 1, vec![Op::write(1, v("x"))]);
    let (r, _) = c.recv();
    assert_eq!(r.status, Status::Ok);
    net.shutdown().unwrap();
}

#[test]
fn malformed_to_store_get_badreq_or_are_ignored() {
    let net = start_local(&LocalConfig::new(Mode::OptimisticAbort), &Stop::new()).unwrap();
    // From the harness's own socket: the store takes requests only from its
    // peers (the switch and this one).
    let c = Raw { sock: net.operator().unwrap(), to: net.store_addr() };
    c.sock.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    let [truncated, beyond, unknown] = bad_packets();
    c.send_bytes(&truncated);
    assert!(c.recv_within(Duration::from_millis(200)).is_none(), "a packet shorter than a header is ignored");
    for p in [beyond, unknown] {
        c.send_bytes(&p);
        let (r, from) = c.recv();
        assert_eq!(from, net.store_addr());
        assert_eq!((r.status, r.cl_id, r.req_id), (Status::BadRequest, 9, 1));
    }
    c.send(9, 1, vec![Op::write(1, v("x"))]);
    let (r, _) = c.recv();
    assert_eq!((r.status, r.ops.clone()), (Status::Ok, vec![Op::updated(1, v("x"))]));
    let report = net.shutdown().unwrap();
    let s = report.store.counters;
    assert_eq!((s.ignored_short, s.committed), (1, 1));
    assert_eq!(s.malformed.iter().sum::<u64>(), 3);
}
