//! The two-edge-switch Gotthard topology (Gotthard section 3.6, Figure 4;
//! `examples/topology-txn-tree.toml`) live over UDP on loopback: clients
//! behind both edge switches commit, and the edge switches abort
//! optimistically what they can decide from the writes they saw pass.

use std::path::Path;
use std::time::Duration;

use innet_live::topology::Topology;
use innet_live::up::{start_servers, UpLoad};
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

/// The same tree with every server in a process of its own (`innet up
/// --only NAME` per machine, as across machines or in Mininet hosts): the
/// core must take its edge switches for switches (they send the origin
/// shim) although they are no neighbour it sends requests to.
#[test]
fn the_tree_commits_with_every_node_started_on_its_own() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/topology-txn-tree.toml");
    let mut topo = Topology::load(&path).unwrap();
    // Fixed free ports (nodes started apart find each other by address).
    for p in topo.places.iter_mut().filter(|p| p.listen.is_some()) {
        let port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        p.listen = Some(format!("127.0.0.1:{port}"));
    }
    let stop = Stop::new();
    let servers: Vec<_> = ["store", "core", "edge0", "edge1"]
        .iter()
        .map(|m| start_servers(topo.clone(), Some(m), &stop).unwrap())
        .collect();
    let clients = start_servers(topo, Some("clients0"), &stop).unwrap();
    let load = UpLoad { duration: Some(Duration::from_secs(2)), ..UpLoad::default() };
    let report = clients.run(&load, &stop).unwrap();
    stop.stop();
    let mut counters = vec![];
    for s in servers {
        counters.extend(s.run(&UpLoad::default(), &stop).unwrap().counters);
    }
    let counter =
        |node: &str, name: &str| counters.iter().find(|(n, k, _)| n == node && k == name).map(|(_, _, v)| *v).unwrap();
    assert!(report.loads[0].committed > 10, "behind edge0 only {} committed", report.loads[0].committed);
    assert_eq!(counter("core", "live_dropped"), 0, "the core dropped the edge's shimmed requests");
    assert!(counter("store", "committed") >= report.loads[0].committed);
    assert!(counter("edge0", "optimistically_aborted") > 0, "no optimistic abort at edge0");
}
