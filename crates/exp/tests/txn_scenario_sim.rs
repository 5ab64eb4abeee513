//! The reference implementation's optimistic-abort scenario, on the
//! simulator runtime (the same scenario runs over UDP in
//! crates/live/tests/scenario.rs).
//!
//! Reference: Gotthard section 3.3 (Algorithm 2, lines 6-13) and the
//! reference repository's two-client test: two clients send
//! `VALUE(1,'a') WRITE(1,'b')` concurrently; the first commits at the store,
//! the second is aborted optimistically by the switch with the pending `b`;
//! the retry `VALUE(1,'b') WRITE(1,'c')` is handled the same way.

use std::time::Duration;

use innet_core::{Dest, Host, Outbox, Time};
use innet_sim::{LinkSpec, Sim};
use innet_txn::{Mode, TxnStore, TxnSwitch};
use innet_wire::txn::{Op, OpType, Status, TxnMsg, Value};

/// Sends scripted packets at scripted times; records what comes back.
struct Script {
    sends: Vec<(Time, Vec<u8>)>,
    received: Vec<(Time, TxnMsg)>,
}

impl Host for Script {
    fn on_packet(&mut self, now: Time, packet: &[u8], _out: &mut Outbox) {
        self.received.push((now, TxnMsg::decode(packet).expect("replies decode")));
    }
    fn on_tick(&mut self, now: Time, out: &mut Outbox) {
        while self.sends.first().is_some_and(|(t, _)| *t <= now) {
            let (_, p) = self.sends.remove(0);
            out.send(Dest::Upstream, p);
        }
    }
    fn next_tick(&self) -> Option<Time> {
        self.sends.first().map(|(t, _)| *t)
    }
}

fn v(s: &str) -> Value {
    Value::from_str_padded(s).unwrap()
}

fn ms(x: f64) -> Time {
    Time::from_secs_f64(x / 1e3)
}

fn req(cl: u32, id: i32, ops: Vec<Op>) -> Vec<u8> {
    TxnMsg::request(cl, id, ops).encode()
}

#[test]
fn two_clients_optimistic_abort_then_retry() {
    let mut sim = Sim::new(1);
    let store = sim.add_host("store", TxnStore::in_memory());
    let switch = sim.add_switch("switch", TxnSwitch::with_defaults(Mode::OptimisticAbort));
    sim.link(switch, store, LinkSpec::latency(Duration::from_millis(40)));
    sim.set_upstream(switch, store);
    let rw = |from: &str, to: &str| vec![Op::value(1, v(from)), Op::write(1, v(to))];
    let c1 = sim.add_host(
        "client1",
        Script {
            sends: vec![
                (ms(0.0), req(1, 1, vec![Op::write(1, v("a"))])),
                (ms(200.0), req(1, 2, rw("a", "b"))),
                (ms(400.0), req(1, 3, rw("b", "c"))),
            ],
            received: vec![],
        },
    );
    let c2 = sim.add_host(
        "client2",
        Script {
            sends: vec![(ms(200.1), req(2, 1, rw("a", "b"))), (ms(400.1), req(2, 2, rw("b", "c")))],
            received: vec![],
        },
    );
    for c in [c1, c2] {
        sim.link(c, switch, LinkSpec::latency(Duration::from_millis(10)));
        sim.set_upstream(c, switch);
    }
    sim.run_until(ms(1000.0));

    let r1 = &sim.host::<Script>(c1).unwrap().received;
    let r2 = &sim.host::<Script>(c2).unwrap().received;
    assert_eq!(r1.len(), 3);
    assert_eq!(r2.len(), 2);
    // The populate write and both of client 1's transactions commit at the store.
    for (_, m) in r1 {
        assert_eq!((m.status, m.flags.from_switch()), (Status::Ok, false), "{m:?}");
    }
    // Client 2 is aborted by the switch, 20 ms after sending (it never reached the store),
    // with the pending value of client 1's write.
    for ((at, m), (sent_ms, pending)) in r2.iter().zip([(200.1, "b"), (400.1, "c")]) {
        assert_eq!((m.status, m.flags.from_switch()), (Status::OptimisticAbort, true), "{m:?}");
        assert_eq!(m.ops[0], Op::value(1, v(pending)));
        assert_eq!(m.ops[1].kind, OpType::Nop, "the write is removed from the abort");
        assert_eq!(*at, ms(sent_ms + 20.0));
    }
    // Client 1's commit replies arrive one full round trip after sending.
    assert_eq!(r1[1].0, ms(300.0));
    assert_eq!(sim.host::<TxnStore>(store).unwrap().get(1), v("c"));
    let sw = sim.program::<TxnSwitch>(switch).unwrap();
    assert_eq!(sw.counters.optimistically_aborted, 2);
}
