//! Hostile input to a live transaction switch and store over real UDP
//! sockets: forged and replayed store replies, replayed requests, reused
//! client ids. Each forged packet is rejected and counted, and the service
//! goes on answering correctly.

mod common;

use std::time::Duration;

use common::{eventually, v, Raw};
use innet_live::host::{spawn_host, HostOptions};
use innet_live::txn::{start_local, LocalConfig, OneShot};
use innet_live::Stop;
use innet_txn::{ClientConfig, Mode, Txn, TxnClient};
use innet_wire::txn::{Flags, Op, OpType, Status, TxnMsg, Value};

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
        // The replayed old write, from another socket with client 1's id:
        // the switch's runtime refuses it (client 1 is bound to its own
        // address) with a BADREQ; nothing reaches the store, nothing is
        // learned. (Before issue 21 it passed as a duplicate, the store
        // answered from its record, and the switch did not learn.)
        let replayer = Raw::new(net.switch_addr());
        let r = ask(&replayer, 1, 1, vec![Op::write(7, v("old"))]);
        assert_eq!((r.status, r.flags.from_switch()), (Status::BadRequest, true), "{mode}");
        assert_eq!(net.switch_counter("live_refused_other_sender"), 1, "{mode}");
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
        // Refused before the switch judges them: client 9 is bound to the
        // first process's address (issue 21).
        assert_eq!(net.switch_counter("live_refused_other_sender"), 2, "{mode}");
        // A fresh client id starts afresh; the refused write was not applied.
        let r = ask(&restarted, 10, 1, vec![Op::read(7)]);
        assert_eq!((r.status, r.ops[0].value), (Status::Ok, v("a")), "{mode}");
        net.shutdown().unwrap();
    }
}

#[test]
fn a_replayed_write_from_another_socket_gets_no_recorded_reply_and_nothing_is_relearned() {
    for mode in [Mode::ReadCache, Mode::EarlyAbort, Mode::OptimisticAbort] {
        let net = start_local(&LocalConfig::new(mode), &Stop::new()).unwrap();
        let c = Raw::new(net.switch_addr());
        let old = vec![Op::write(7, v("old"))];
        let latest = vec![Op::value(7, v("old")), Op::write(7, v("new"))];
        assert_eq!(ask(&c, 1, 1, old.clone()).status, Status::Ok);
        assert_eq!(ask(&c, 2, 1, latest.clone()).status, Status::Ok);
        assert_eq!(ask(&c, 1, 2, vec![Op::value(9, Value::ZERO)]).status, Status::Ok, "{mode}: client 1 moves on");
        let learned = net.switch_counter("learned_replies");
        // Client 1's old write replayed through the switch, plain and as a
        // store_commit resend: refused by the switch (client 1 is bound to
        // its own address), never forwarded.
        let replayer = Raw::new(net.switch_addr());
        let r = ask(&replayer, 1, 1, old.clone());
        assert_eq!((r.status, r.flags.from_switch()), (Status::BadRequest, true), "{mode}");
        let mut resend = TxnMsg::request(1, 1, old.clone());
        resend.flags = Flags(Flags::STORE_COMMIT);
        replayer.send_bytes(&resend.encode());
        let (r, _) = replayer.recv();
        assert_eq!((r.status, r.flags.from_switch()), (Status::BadRequest, true), "{mode}: store_commit copy");
        // Straight to the store from another socket: the old write and
        // client 2's latest request are refused, unanswered (the store takes
        // requests only from its switch; before issue 21 both got BADREQ).
        let direct = Raw::new(net.store_addr());
        direct.send(1, 1, old.clone());
        direct.send(2, 1, latest.clone());
        assert!(direct.recv_within(Duration::from_millis(200)).is_none(), "{mode}: no answer, no recorded reply");
        assert!(replayer.recv_within(Duration::from_millis(100)).is_none(), "{mode}: nothing else came back");
        assert_eq!(net.switch_counter("learned_replies"), learned, "{mode}: nothing learned");
        let r = ask(&c, 3, 1, vec![Op::read(7)]);
        assert_eq!((r.status, r.ops[0].value), (Status::Ok, v("new")), "{mode}");
        let report = net.shutdown().unwrap();
        assert_eq!(report.store.net.rejected.get("not_a_downstream_peer"), Some(&2), "{mode}");
        assert_eq!(report.store.counters.duplicates_answered, 0, "{mode}: no recorded reply sent again");
    }
}

#[test]
fn a_forged_ok_naming_a_waiting_client_is_dropped_by_the_client() {
    // The switch holds the true answer back 300 ms each way; meanwhile a
    // forger sends the waiting client OKs naming its id and request id.
    let mut cfg = LocalConfig::new(Mode::OptimisticAbort);
    cfg.switch.store_delay = Duration::from_millis(300);
    let stop = Stop::new();
    let net = start_local(&cfg, &stop).unwrap();
    assert_eq!(ask(&Raw::new(net.switch_addr()), 1, 1, vec![Op::write(7, v("real"))]).status, Status::Ok);
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let client_addr = socket.local_addr().unwrap();
    let client_cfg = ClientConfig { timeout: Duration::from_secs(3), ..ClientConfig::new(42) };
    let own = stop.child();
    let own2 = own.clone();
    let node = spawn_host(
        "client",
        socket,
        HostOptions::upstream(net.switch_addr()),
        &own,
        move || OneShot::new(TxnClient::new(client_cfg), Txn::Read(vec![7]), own2),
        |mut h, _| (h.take(), h.client().counters.clone()),
    )
    .unwrap();
    let forger = Raw::new(client_addr);
    std::thread::sleep(Duration::from_millis(50));
    for _ in 0..5 {
        forger.send_bytes(&forged_reply(42, 1, 7, "forged"));
        std::thread::sleep(Duration::from_millis(20));
    }
    eventually("the client finished", || node.is_finished());
    let (done, counters) = node.shutdown().unwrap();
    let done = done.expect("completed");
    assert_eq!(done.gave_up, None);
    assert_eq!(done.reads, vec![(7, v("real"))], "the true value, not the forged one");
    assert_eq!(counters.dropped_not_from_upstream, 5);
    net.shutdown().unwrap();
}

#[test]
fn reset_clears_store_switch_and_client_records_only_with_allow_reset() {
    for allow in [false, true] {
        let mut cfg = LocalConfig::new(Mode::OptimisticAbort);
        cfg.allow_reset = allow;
        let net = start_local(&cfg, &Stop::new()).unwrap();
        let c = Raw::new(net.switch_addr());
        assert_eq!(ask(&c, 5, 10, vec![Op::write(7, v("a"))]).status, Status::Ok);
        // A reference client resets, then starts its ids at 1 again.
        let mut reset = TxnMsg::request(5, 1, vec![]);
        reset.flags = Flags(Flags::RESET);
        c.send_bytes(&reset.encode());
        let (r, _) = c.recv();
        if !allow {
            assert_eq!(r.status, Status::BadRequest, "refused without --allow-reset");
            let r = ask(&c, 6, 1, vec![Op::read(7)]);
            assert_eq!(r.ops[0].value, v("a"), "nothing cleared");
            let report = net.shutdown().unwrap();
            assert_eq!((report.store.counters.reset_refused, report.store.counters.resets), (1, 0));
            continue;
        }
        assert_eq!((r.status, r.flags.reset()), (Status::Ok, true));
        eventually("the switch saw the reset's OK", || net.switch_counter("resets") == 1);
        let r = ask(&c, 5, 2, vec![Op::value(7, Value::ZERO), Op::write(7, v("b"))]);
        assert_eq!((r.status, r.flags.from_switch()), (Status::Ok, false), "the cleared value, a fresh id");
        let r = ask(&c, 6, 1, vec![Op::read(7)]);
        assert_eq!((r.status, r.ops[0].value), (Status::Ok, v("b")));
        let report = net.shutdown().unwrap();
        assert_eq!(report.store.counters.resets, 1);
    }
}

#[test]
fn a_socket_that_knows_a_client_id_does_not_receive_that_clients_reply() {
    // Hostile round 2 (issue 21): the switch routed a store reply by client
    // id to the address that last sent with that id, so any socket that
    // sent a request with a waiting client's id received its commit (and
    // the client, told nothing, retried: an increment applied twice).
    let mut cfg = LocalConfig::new(Mode::OptimisticAbort);
    cfg.switch.store_delay = Duration::from_millis(30);
    let net = start_local(&cfg, &Stop::new()).unwrap();
    let victim = Raw::new(net.switch_addr());
    let thief = Raw::new(net.switch_addr());
    victim.send(5, 1, vec![Op::write(1, v("mine"))]);
    std::thread::sleep(Duration::from_millis(10));
    thief.send(5, 2, vec![Op::read(2)]);
    let mine = victim.recv_within(Duration::from_secs(1));
    let mut stolen = vec![];
    while let Some((r, _)) = thief.recv_within(Duration::from_millis(150)) {
        stolen.push((r.req_id, r.status));
    }
    let mine = mine.map(|(r, _)| (r.cl_id, r.req_id, r.status));
    assert_eq!(mine, Some((5, 1, Status::Ok)), "the victim's commit; the thief got {stolen:?}");
    assert_eq!(stolen, vec![(2, Status::BadRequest)], "the thief's own request is refused, nothing else");
    assert_eq!(net.switch_counter("live_refused_other_sender"), 1);
    net.shutdown().unwrap();
}

#[test]
fn a_request_the_switch_aborted_replayed_straight_to_the_store_is_not_committed() {
    // Hostile round 2 (issue 21; docs/security.md listed it as open): a
    // request the switch aborted (optimistically: a pending write that the
    // store then refused), sent again straight to the store from another
    // socket, was committed; its client, told "optimistic abort", ran it
    // again, and the write was applied twice.
    let mut cfg = LocalConfig::new(Mode::OptimisticAbort);
    cfg.switch.store_delay = Duration::from_millis(30);
    let net = start_local(&cfg, &Stop::new()).unwrap();
    let c = Raw::new(net.switch_addr());
    assert_eq!(ask(&c, 1, 1, vec![Op::write(1, v("a"))]).status, Status::Ok);
    // A write of "b" passes the switch (pending) but the store will refuse
    // it (its compare on key 2 fails there).
    let doomed = Raw::new(net.switch_addr());
    doomed.send(3, 1, vec![Op::value(2, v("zzz")), Op::value(1, v("a")), Op::write(1, v("b"))]);
    std::thread::sleep(Duration::from_millis(10));
    let increment = vec![Op::value(1, v("a")), Op::write(1, v("a+1"))];
    let r = ask(&c, 2, 1, increment.clone());
    assert_eq!((r.status, r.flags.from_switch()), (Status::OptimisticAbort, true), "the switch aborts it");
    let (r, _) = doomed.recv();
    assert_eq!(r.status, Status::Abort, "the pending write failed at the store");
    // The aborted increment, byte for byte, straight to the store.
    let replayer = Raw::new(net.store_addr());
    replayer.send(2, 1, increment.clone());
    // ... and through the switch from the replayer's socket.
    let via_switch = Raw::new(net.switch_addr());
    let r = ask(&via_switch, 2, 1, increment);
    assert_eq!((r.status, r.flags.from_switch()), (Status::BadRequest, true), "refused at the switch");
    std::thread::sleep(Duration::from_millis(100));
    let r = ask(&c, 4, 1, vec![Op::read(1)]);
    assert_eq!((r.status, r.ops[0].value), (Status::Ok, v("a")), "the aborted increment was not applied");
    assert!(replayer.recv_within(Duration::from_millis(50)).is_none(), "the store answered a stranger");
    let report = net.shutdown().unwrap();
    assert_eq!(report.store.net.rejected.get("not_a_downstream_peer"), Some(&1));
    assert_eq!(report.store.counters.committed, 2, "the write of a and the read");
}
