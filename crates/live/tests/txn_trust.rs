//! Hostile input to a live transaction switch and store over real UDP
//! sockets: forged and replayed store replies, replayed requests, reused
//! client ids. Each forged packet is rejected and counted, and the service
//! goes on answering correctly.

mod common;

use std::time::Duration;

use common::{eventually, v, Raw};
use innet_live::txn::{start_local, LocalConfig};
use innet_live::Stop;
use innet_txn::Mode;
use innet_wire::txn::{Flags, Op, OpType, Status, TxnMsg};

/// A "store reply" as a client socket can forge it: OK with `VALUE(key, value)`.
fn forged_reply(cl_id: u32, req_id: i32, key: u32, value: &str) -> Vec<u8> {
    let mut m = TxnMsg::request(cl_id, req_id, vec![Op::value(key, v(value))]);
    m.flags = Flags(0).with(Flags::RESPONSE, true);
    m.status = Status::Ok;
    m.encode()
}

/// Sends one request through `c` and returns its answer.
fn ask(c: &Raw, cl_id: u32, req_id: i32, ops: Vec<Op>) -> TxnMsg {
    c.send(cl_id, req_id, ops);
    loop {
        let (r, _) = c.recv();
        if r.cl_id == cl_id && r.req_id == req_id {
            return r;
        }
    }
}

#[test]
fn a_forged_store_reply_from_a_client_socket_is_not_learned() {
    for mode in [Mode::ReadCache, Mode::EarlyAbort, Mode::OptimisticAbort] {
        let net = start_local(&LocalConfig::new(mode), &Stop::new()).unwrap();
        let c = Raw::new(net.switch_addr());
        assert_eq!(ask(&c, 1, 1, vec![Op::write(7, v("real"))]).status, Status::Ok);
        // The forger sends replies for key 7 from its own socket, for a
        // client that is waiting (id 2) and for one that is not (id 3).
        let forger = Raw::new(net.switch_addr());
        c.send(2, 1, vec![Op::value(7, v("real"))]);
        for cl_id in [2, 3] {
            forger.send_bytes(&forged_reply(cl_id, 1, 7, "forged"));
        }
        eventually("both forgeries counted", || net.switch_counter("dropped_reply_from_downstream") == 2);
        let (r, _) = c.recv();
        assert_eq!((r.cl_id, r.status), (2, Status::Ok), "{mode}: the true answer");
        assert!(forger.recv_within(Duration::from_millis(100)).is_none(), "{mode}: nothing sent on");
        // Later reads and compares meet the true value.
        let r = ask(&c, 4, 1, vec![Op::read(7)]);
        assert_eq!((r.status, r.ops[0].value), (Status::Ok, v("real")), "{mode}: read after the forgery");
        let r = ask(&c, 5, 1, vec![Op::value(7, v("real")), Op::write(7, v("next"))]);
        assert_eq!(r.status, Status::Ok, "{mode}: a correct compare commits");
        assert_eq!(
            net.switch_counter("live_to_downstream") + net.switch_counter("live_reflected"),
            4,
            "{mode}: four answers, no forgery passed on"
        );
        net.shutdown().unwrap();
    }
}

#[test]
fn a_replayed_store_reply_does_not_re_teach_the_old_value() {
    for mode in [Mode::ReadCache, Mode::EarlyAbort, Mode::OptimisticAbort] {
        let net = start_local(&LocalConfig::new(mode), &Stop::new()).unwrap();
        let c = Raw::new(net.switch_addr());
        assert_eq!(ask(&c, 1, 1, vec![Op::write(7, v("old"))]).status, Status::Ok);
        assert_eq!(ask(&c, 2, 1, vec![Op::value(7, v("old")), Op::write(7, v("new"))]).status, Status::Ok);
        let learned = net.switch_counter("learned_replies");
        assert_eq!(learned, 2, "{mode}: the switch learned both replies");
        // The replayed old write passes the switch as a duplicate; the store
        // answers it from its record (or refuses it), and the switch, no
        // longer waiting for that reply, does not learn from it.
        let replayer = Raw::new(net.switch_addr());
        replayer.send(1, 1, vec![Op::write(7, v("old"))]);
        eventually("the replay passed", || net.switch_counter("passed_duplicate") == 1);
        eventually("its reply came back", || net.switch_counter("responses") == 3);
        assert_eq!(net.switch_counter("learned_replies"), learned, "{mode}: nothing learned from the replay");
        let r = ask(&c, 3, 1, vec![Op::read(7)]);
        assert_eq!((r.status, r.ops[0].kind, r.ops[0].value), (Status::Ok, OpType::Value, v("new")), "{mode}");
        let r = ask(&c, 4, 1, vec![Op::value(7, v("new")), Op::write(7, v("newer"))]);
        assert_eq!(r.status, Status::Ok, "{mode}: a compare with the current value commits");
        net.shutdown().unwrap();
    }
}

#[test]
fn a_restarted_client_reusing_old_request_ids_is_answered_not_left_hanging() {
    for mode in [Mode::ReadCache, Mode::EarlyAbort, Mode::OptimisticAbort] {
        let net = start_local(&LocalConfig::new(mode), &Stop::new()).unwrap();
        let c = Raw::new(net.switch_addr());
        assert_eq!(ask(&c, 9, 5, vec![Op::write(7, v("a"))]).status, Status::Ok);
        // Request 6 is answered by the switch (a cache hit or a confirmed compare).
        let only_switch = if mode == Mode::ReadCache { Op::read(7) } else { Op::value(7, v("a")) };
        let r = ask(&c, 9, 6, vec![only_switch]);
        assert!(r.flags.from_switch() && r.status == Status::Ok, "{mode}: {r:?}");
        // The same client id restarted at request id 1, and a copy of 6.
        let restarted = Raw::new(net.switch_addr());
        let r = ask(&restarted, 9, 1, vec![Op::write(7, v("b"))]);
        assert_eq!(r.status, Status::BadRequest, "{mode}: an old id is answered");
        let r = ask(&restarted, 9, 6, vec![only_switch]);
        assert_eq!(r.status, Status::BadRequest, "{mode}: a copy of a switch-answered request is answered");
        assert_eq!((net.switch_counter("refused_stale"), net.switch_counter("refused_duplicate")), (1, 1));
        // A fresh client id starts afresh; the refused write was not applied.
        let r = ask(&restarted, 10, 1, vec![Op::read(7)]);
        assert_eq!((r.status, r.ops[0].value), (Status::Ok, v("a")), "{mode}");
        net.shutdown().unwrap();
    }
}
