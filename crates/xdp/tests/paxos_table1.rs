//! CAANS Table 1's analogue (`innet_xdp::forward::table1_ns`): the XDP
//! coordinator and acceptor, and plain XDP forwarding, timed by
//! `BPF_PROG_TEST_RUN` on the same frames. Not a speed test: it asserts
//! what must hold on any machine. Each Paxos role does the forwarding
//! program's parse and rewrite plus its own logic (a map lookup for its
//! configuration, the trust check, its state), so it cannot be cheaper than
//! forwarding; the do-nothing program is the floor under all of them.

use innet_xdp::privileged::{proceed, say};

#[test]
fn the_paxos_roles_cost_more_than_forwarding_and_forwarding_more_than_nothing() {
    if !proceed("paxos_table1", innet_xdp::paxos::unavailable()) {
        return;
    }
    const RUNS: u32 = 20_000;
    let t = innet_xdp::forward::table1_ns(RUNS).expect("table 1 measured");
    say(&format!(
        "TABLE1 ns/packet (medians of {} single runs): pass {}, forward {} / {} (REQUEST / 2A), coordinator {}, acceptor {}",
        t.runs, t.pass, t.forward, t.forward_2a, t.coordinator, t.acceptor
    ));
    // Medians of the runs asked for, in whole turns of `CHUNK` runs (the
    // empty program's median as the floor: the last assertion).
    assert_eq!(t.runs, RUNS.div_ceil(innet_xdp::forward::CHUNK) * innet_xdp::forward::CHUNK, "{t:?}");
    assert!(t.forward < t.acceptor, "forwarding a 2A is not cheaper than voting on it: {t:?}");
    assert!(t.forward < t.coordinator, "forwarding a REQUEST is not cheaper than sequencing it: {t:?}");
    assert!(t.pass <= t.forward && t.pass <= t.forward_2a, "the empty program is not the floor: {t:?}");
}
