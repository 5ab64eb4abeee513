//! The chain control plane drives the XDP chain testbed (NetCRAQ paper
//! section III-C): two clients in the client namespace read and write
//! through a 4-node chain of XDP programs while the middle node 1 fails
//! (its link goes down), is removed (its predecessor forwards to its
//! successor, the tail's ACK group shrinks: map writes), restarts as a fresh
//! program, is recovered by copying the tail's registers while writes pause,
//! and is re-added as the tail. Afterwards every node's maps hold the same
//! values and the clients' histories are linearizable
//! (`innet_chain::check`). NetCRAQ and NetChain, one after the other (one
//! testbed per machine).
//!
//! Needs root. Without it: `SKIPPED: ...` on stderr, a failure under `CI=true`.

use innet_chain::check::check;
use innet_chain::control::ControlStats;
use innet_chain::Protocol;
use innet_live::Stop;
use innet_wire::txn::Value;
use innet_xdp::chain_control::{run_drill, DrillConfig};
use innet_xdp::privileged::{self, say};
use innet_xdp::{chain, testbed};

fn drill(protocol: Protocol) -> String {
    let cfg = DrillConfig::new(protocol, 4);
    assert_eq!(cfg.victim, 1, "a middle node");
    let r = run_drill(&cfg, &Stop::new()).unwrap_or_else(|e| panic!("{protocol}: drill: {e:#}"));
    assert_eq!(r.errors, Vec::<String>::new(), "{protocol}: map accesses failed");
    assert_eq!(r.members_after_failure, vec![0, 2, 3], "{protocol}: the failed node was removed");
    assert_eq!(r.members_at_end, vec![0, 2, 3, 1], "{protocol}: recovered and re-added as the tail");
    assert_eq!(r.control.stats.removals, 1, "{protocol}: {:?}", r.control.stats);
    assert_eq!(r.control.stats.joins, 1, "{protocol}: {:?}", r.control.stats);
    let removal = r.removal.unwrap_or_else(|| panic!("{protocol}: no layout without the failed node"));
    let rejoin = r.rejoin.unwrap_or_else(|| panic!("{protocol}: the restarted node never rejoined"));
    for (i, v) in r.values.iter().enumerate() {
        assert_eq!(v, &r.values[3], "{protocol}: node {i}'s registers differ from node 3's");
    }
    assert!(r.values[1].iter().any(|v| *v != Value::ZERO), "{protocol}: the restarted node holds no written value");
    assert!(
        r.operations_after_failure > 100,
        "{protocol}: {} operations after the failure",
        r.operations_after_failure
    );
    for l in &r.loads {
        assert!(l.stats.reads > 100 && l.stats.writes > 30, "{protocol}: {:?}", l.stats);
    }
    let history: Vec<_> = r.loads.iter().flat_map(|l| l.client.history.clone().expect("recorded")).collect();
    let summary = check(&history).unwrap_or_else(|e| panic!("{protocol}: not linearizable: {e:?}"));
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let ControlStats { removals, resyncs, joins, retried } = r.control.stats;
    assert_eq!(retried, 0, "{protocol}: every step lands on maps written in this process");
    format!(
        "TESTBED chain drill {protocol} 4 XDP nodes: node 1 link down -> removed in {:.1} ms, restarted -> re-added in \
         {:.1} ms (copies {:?} ms, writes paused {:?} ms); interruption {:.1} ms; {} operations after the failure; \
         linearizable ({} reads, {} acknowledged writes checked); removals {removals} resyncs {resyncs} joins {joins}; \
         every node holds the same values",
        ms(removal),
        ms(rejoin),
        r.copies.iter().map(|d| (ms(*d) * 10.0).round() / 10.0).collect::<Vec<_>>(),
        r.pauses.iter().map(|d| (ms(*d) * 10.0).round() / 10.0).collect::<Vec<_>>(),
        ms(r.interruption),
        r.operations_after_failure,
        summary.reads,
        summary.writes_acked,
    )
}

#[test]
fn the_control_plane_removes_recovers_and_readds_a_failed_xdp_node() {
    let name = "the_control_plane_removes_recovers_and_readds_a_failed_xdp_node";
    if !privileged::proceed(name, chain::unavailable()) {
        return;
    }
    for protocol in Protocol::ALL {
        let line = std::panic::catch_unwind(|| drill(protocol));
        testbed::down().expect("testbed down");
        match line {
            Ok(line) => say(&line),
            Err(e) => std::panic::resume_unwind(e),
        }
    }
    let left: Vec<String> =
        testbed::namespaces().unwrap().into_iter().filter(|n| n.starts_with(testbed::PREFIX)).collect();
    assert!(left.is_empty(), "namespaces left: {left:?}");
}
