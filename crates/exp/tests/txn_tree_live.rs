//! The two-edge-switch Gotthard topology (Gotthard section 3.4, Figure 4;
//! `examples/topology-txn-tree.toml`) live over UDP on loopback: clients
//! behind both edge switches commit, and the edge switches abort
//! optimistically what they can decide from the writes they saw pass.

use std::path::Path;
use std::time::Duration;

use innet_exp::up::{start_servers, UpLoad};
use innet_live::topology::Topology;
use innet_live::Stop;

#[test]
fn the_tree_example_commits_behind_both_edges_and_aborts_at_the_edges() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/topology-txn-tree.toml");
    let mut topo = Topology::load(&path).unwrap();
    // Free ports: other tests may run at the same time.
    for p in &mut topo.places {
        p.listen = None;
    }
    let stop = Stop::new();
    let up = start_servers(topo, None, &stop).unwrap();
    let load = UpLoad { duration: Some(Duration::from_secs(2)), ..UpLoad::default() };
    let report = up.run(&load, &stop).unwrap();

    assert_eq!(report.loads.len(), 2, "one load group per client machine");
    for l in &report.loads {
        assert!(l.committed > 10, "clients behind {} committed only {}", l.machine, l.committed);
    }
    let counter = |node: &str, name: &str| {
        report.counters.iter().find(|(n, k, _)| n == node && k == name).map(|(_, _, v)| *v).unwrap()
    };
    let edge_aborts = counter("edge0", "optimistically_aborted") + counter("edge1", "optimistically_aborted");
    assert!(edge_aborts > 0, "no optimistic abort at an edge switch");
    assert!(counter("core", "requests") > 0 && counter("store", "committed") > 0);
}
