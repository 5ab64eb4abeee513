//! `auth_key` in topology files (issue 21 item 3), live over UDP on
//! loopback: the transaction tree (Gotthard section 3.6, Figure 4;
//! `examples/topology-txn-tree.toml`) commits with its store and switches
//! sealing what they send each other while the clients stay unsealed, and
//! the Paxos example (`examples/topology-paxos.toml`) orders its proposer's
//! values with every node sealing. A store whose key differs from its
//! switch's commits nothing: the keys are in use.

use std::path::{Path, PathBuf};
use std::time::Duration;

use innet_live::topology::Topology;
use innet_live::up::{start_servers, UpLoad, UpReport};
use innet_live::Stop;

fn key_file(name: &str, hex: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("innet-topology-auth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, format!("# {name}\n7 {hex}\n")).unwrap();
    path
}

/// An example on free ports (fixed ones, so that nodes started apart find
/// each other), with `auth_key`.
fn example(name: &str, auth_key: &Path) -> Topology {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(name);
    let mut topo = Topology::load(&path).unwrap();
    for p in topo.places.iter_mut().filter(|p| p.listen.is_some()) {
        let port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        p.listen = Some(format!("127.0.0.1:{port}"));
    }
    topo.auth_key = Some(auth_key.to_path_buf());
    topo
}

fn auth_refused(r: &UpReport) -> u64 {
    r.counters.iter().filter(|(_, k, _)| k.starts_with("auth_")).map(|(_, _, v)| v).sum()
}

fn counter(r: &UpReport, node: &str, name: &str) -> u64 {
    r.counters.iter().find(|(n, k, _)| n == node && k == name).map_or(0, |(_, _, v)| *v)
}

fn run(topo: Topology) -> UpReport {
    let stop = Stop::new();
    let up = start_servers(topo, None, &stop).unwrap();
    up.run(&UpLoad { duration: Some(Duration::from_secs(2)), ..UpLoad::default() }, &stop).unwrap()
}

#[test]
fn a_keyed_transaction_tree_commits_behind_both_edges_with_unsealed_clients() {
    let key = key_file("txn.key", "00112233445566778899aabbccddeeff");
    let r = run(example("topology-txn-tree.toml", &key));
    for l in &r.loads {
        assert!(l.committed > 10, "clients behind {} committed only {}", l.machine, l.committed);
    }
    assert_eq!(auth_refused(&r), 0, "nothing refused among keyed nodes and unsealed clients");
    assert!(counter(&r, "core", "requests") > 0 && counter(&r, "store", "committed") > 0);
}

#[test]
fn a_store_with_another_key_than_its_switches_commits_nothing() {
    let (key, other) = (
        key_file("tree.key", "0f0e0d0c0b0a09080706050403020100"),
        key_file("other.key", "ffeeddccbbaa99887766554433221100"),
    );
    let topo = example("topology-txn-tree.toml", &key);
    let stop = Stop::new();
    let mut store_topo = topo.clone();
    store_topo.auth_key = Some(other);
    let store = start_servers(store_topo, Some("store"), &stop).unwrap();
    let switches: Vec<_> =
        ["core", "edge0", "edge1"].iter().map(|m| start_servers(topo.clone(), Some(m), &stop).unwrap()).collect();
    let clients = start_servers(topo, Some("clients0"), &stop).unwrap();
    let report = clients.run(&UpLoad { duration: Some(Duration::from_secs(1)), ..UpLoad::default() }, &stop).unwrap();
    stop.stop();
    assert_eq!(report.loads[0].committed, 0);
    let store = store.run(&UpLoad::default(), &stop).unwrap();
    assert!(
        counter(&store, "store", "auth_bad_tag") > 0,
        "the store refused the core's requests (same key id, other key)"
    );
    assert_eq!(counter(&store, "store", "committed"), 0);
    for s in switches {
        s.run(&UpLoad::default(), &stop).unwrap();
    }
}

#[test]
fn a_keyed_paxos_topology_orders_its_proposers_values() {
    let key = key_file("paxos.key", "8899aabbccddeeff0011223344556677");
    let r = run(example("topology-paxos.toml", &key));
    let committed: u64 = r.loads.iter().map(|l| l.committed).sum();
    assert!(committed > 100, "{committed} committed");
    assert_eq!(auth_refused(&r), 0);
    assert!(counter(&r, "learner0", "delivered") >= committed, "{:?}", r.counters);
}
