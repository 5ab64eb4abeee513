//! The chain store live on loopback: clients keep reading and writing while
//! the middle node of a 4-node chain is killed, removed, restarted,
//! recovered by copy while writes pause, and re-added (NetCRAQ paper
//! section III-C); afterwards every node holds the same values and the
//! clients' histories are linearizable.

use innet_chain::check::check;
use innet_chain::Protocol;
use innet_live::chain::{run_drill, DrillConfig};
use innet_live::Stop;

fn run(protocol: Protocol) {
    let cfg = DrillConfig::new(protocol, 4);
    assert_eq!(cfg.victim, 1, "a middle node");
    let r = run_drill(&cfg, &Stop::new()).unwrap();
    assert_eq!(r.members_after_kill, vec![0, 2, 3], "{protocol}: the failed node was removed");
    assert_eq!(r.members_at_end, vec![0, 2, 3, 1], "{protocol}: recovered and re-added as the tail");
    for (i, v) in r.values.iter().enumerate() {
        assert_eq!(v, &r.values[3], "{protocol}: node {i} differs from node 3");
    }
    assert!(r.operations_after_kill > 100, "{protocol}: only {} operations after the kill", r.operations_after_kill);
    let mut history = vec![];
    for l in &r.loads {
        assert!(l.stats.reads > 100 && l.stats.writes > 30, "{protocol}: {:?}", l.stats);
        history.extend_from_slice(l.client.history.as_deref().unwrap());
    }
    let summary = check(&history).unwrap_or_else(|e| panic!("{protocol}: {e:?}"));
    println!(
        "{protocol}: interruption (longest gap between a client's completions) {:.1} ms; {} reads checked; {:?}",
        r.interruption.as_secs_f64() * 1e3,
        summary.reads,
        r.control.stats
    );
}

#[test]
fn netcraq_keeps_serving_while_a_middle_node_is_killed_and_recovered() {
    run(Protocol::NetCraq);
}

#[test]
fn netchain_keeps_serving_while_a_middle_node_is_killed_and_recovered() {
    run(Protocol::NetChain);
}
