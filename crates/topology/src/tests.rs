use std::path::Path;
use std::time::Duration;

use innet_core::Member;
use innet_paxos::{GROUP_ACCEPTORS, PORT_BACKUP};

use super::*;

fn err(text: &str) -> String {
    Topology::parse(text).unwrap_err().0
}

fn example(name: &str) -> Topology {
    Topology::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(name)).unwrap()
}

#[test]
fn every_shipped_example_parses() {
    for f in std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")).unwrap() {
        let p = f.unwrap().path();
        if p.extension().is_some_and(|e| e == "toml") {
            Topology::load(&p).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

#[test]
fn the_first_format_is_a_txn_topology() {
    let t = example("topology-txn.toml");
    let Service::Txn(d) = &t.service else { panic!("txn") };
    assert_eq!(t.names(), ["store", "switch"]);
    assert_eq!(d.delay(1, 0), Some(Duration::from_millis(40)), "store_delay_ms is the switch-store link");
    assert_eq!(t.places[1].downstream_delay, Duration::from_millis(10), "client_delay_ms is emulated by the switch");
}

#[test]
fn the_tree_has_edges_a_core_and_client_groups() {
    let t = example("topology-txn-tree.toml");
    let Service::Txn(d) = &t.service else { panic!("txn") };
    let core = d.find("core").unwrap();
    let edge1 = d.find("edge1").unwrap();
    let client = d.find("clients1.3").unwrap();
    assert_eq!(txn_deploy::path_to_store(d, client), vec![edge1, core, 0]);
    assert_eq!(d.delay(client, edge1), Some(Duration::from_millis(10)));
    assert_eq!(d.delay(edge1, core), Some(Duration::from_millis(40)));
    assert_eq!(t.select("clients0").unwrap().len(), 4, "--only a client group starts all of it");
    assert_eq!(t.select("edge0").unwrap(), vec![d.find("edge0").unwrap()]);
    assert!(t.select("edge9").unwrap_err().0.contains("choose one of: store, core"));
}

#[test]
fn paxos_groups_follow_from_roles() {
    let t = example("topology-paxos.toml");
    let Service::Paxos(p) = &t.service else { panic!("paxos") };
    let d = &p.deployment;
    assert_eq!(d.nodes[0].groups[&GROUP_ACCEPTORS], vec![Member::Node(1), Member::Node(2), Member::Node(3)]);
    assert_eq!(d.nodes[7].ports[&PORT_BACKUP], 4);
    assert_eq!(p.params.heartbeat, Duration::from_millis(25));
    let j = t.to_json();
    assert_eq!(j["nodes"][0]["groups"]["1"][2], "acceptor2");
    assert_eq!(j["nodes"][7]["listen"], "127.0.0.1:9207");
}

#[test]
fn chain_clients_reach_every_node() {
    let t = example("topology-chain.toml");
    let Service::Chain(c) = &t.service else { panic!("chain") };
    assert_eq!(c.protocol, Protocol::NetCraq);
    let client = c.deployment.find("clients.1").unwrap();
    assert_eq!(c.deployment.nodes[client].ports.len(), 3);
    assert_eq!(c.deployment.nodes[client].machine(), "clients");
}

#[test]
fn mistakes_name_the_line_and_the_fix() {
    assert!(err("").contains("no nodes"));
    let e = err("[[node]]\nname='s'\nrole='store'\n\n[[node]]\nname='w'\nrole='switch'\nmode='fast'\nupstream='s'\n");
    assert!(e.contains("line 5") && e.contains("unknown mode 'fast'") && e.contains("optimistic-abort"), "{e}");
    let e = err(
        "[[node]]\nname='s'\nrole='store'\n[[node]]\nname='w'\nrole='switch'\nmode='forward'\nupstream='nowhere'\n",
    );
    assert!(e.contains("line 4") && e.contains("'nowhere' is not a node") && e.contains("nodes: s, w"), "{e}");
    let e = err("[[node]]\nname='s'\nrole='router'\n");
    assert!(e.contains("cannot tell the service"), "{e}");
    let e = err("service='txn'\n[[node]]\nname='s'\nrole='router'\n");
    assert!(e.contains("line 2") && e.contains("store, switch, clients"), "{e}");
    let e = err("[[node]]\nname='s'\nrole='store'\nmode='forward'\n");
    assert!(e.contains("line 1") && e.contains("store 's' has `mode`, which only switches take"), "{e}");
    let e = err("[[node]]\nname='s'\nrole='store'\nlisten='127.0.0.1'\n");
    assert!(e.contains("HOST:PORT"), "{e}");
    let e = err("[[node]]\nname='s'\nrole='store'\ncolour='red'\n");
    assert!(e.contains("colour"), "{e}");
    let e = err("[[node]]\nname='s'\nrole='store'\n[[node]]\nname='s'\nrole='store'\n");
    assert!(e.contains("line 4") && e.contains("used twice (also on line 1)"), "{e}");
}

#[test]
fn an_upstream_cycle_is_refused() {
    let text = "[[node]]\nname='s'\nrole='store'\n\
        [[node]]\nname='a'\nrole='switch'\nmode='forward'\nupstream='b'\n\
        [[node]]\nname='b'\nrole='switch'\nmode='forward'\nupstream='a'\n";
    let e = err(text);
    assert!(e.contains("cycle") && e.contains("a -> b -> a"), "{e}");
    let e = err("[[node]]\nname='s'\nrole='store'\n[[node]]\nname='a'\nrole='switch'\nmode='forward'\nupstream='a'\n");
    assert!(e.contains("own upstream"), "{e}");
}

#[test]
fn careless_numbers_are_refused_not_panicked_on() {
    let sw = |extra: &str| {
        format!("[[node]]\nname='s'\nrole='store'\n[[node]]\nname='w'\nrole='switch'\nmode='forward'\nupstream='s'\n{extra}\n")
    };
    for (extra, says) in [
        ("store_delay_ms = 1e300", "store_delay_ms"),
        ("client_delay_ms = -1", "client_delay_ms"),
        ("cache_slots = 4294967296", "cache_slots"),
        ("cache_slots = 3", "power of two"),
    ] {
        let e = err(&sw(extra));
        assert!(e.contains(says), "{extra}: {e}");
    }
    let e = err("[paxos]\nslots = 4294967296\n[[node]]\nname='c'\nrole='coordinator'\n[[node]]\nname='a'\nrole='acceptor'\n[[node]]\nname='l'\nrole='learner'\n");
    assert!(e.contains("slots"), "{e}");
    let e = err("[[node]]\nname='s'\nrole='store'\n[[node]]\nname='c'\nrole='clients'\ncount=0\nupstream='s'\n");
    assert!(e.contains("count = 0"), "{e}");
}

#[test]
fn a_file_cannot_pass_a_limit_its_flag_enforces() {
    // --clients: at most CLIENTS_MAX clients, however many groups hold them.
    let mut txn = String::from("[[node]]\nname='s'\nrole='store'\n");
    for g in 0..3 {
        txn += &format!("[[node]]\nname='c{g}'\nrole='clients'\ncount=2000\nupstream='s'\n");
    }
    let e = err(&txn);
    assert!(e.contains("CLIENTS_MAX") && e.contains("line 14") && e.contains("6000"), "{e}");
    // --nodes: a chain of at most MAX_CHAIN_NODES.
    let mut chain = String::from("[chain]\nprotocol = 'netchain'\n");
    for i in 0..=innet_wire::netchain::MAX_CHAIN_NODES {
        chain += &format!("[[node]]\nname='n{i}'\nrole='node'\n");
    }
    chain += "[[node]]\nname='control'\nrole='control'\n";
    assert!(err(&chain).contains("MAX_CHAIN_NODES"), "{}", err(&chain));
    // --trim-quorum: at most the learners (it panicked in the acceptor).
    let paxos = |settings: &str| {
        format!(
            "[paxos]\n{settings}\n[[node]]\nname='c'\nrole='coordinator'\n[[node]]\nname='a'\nrole='acceptor'\n\
             [[node]]\nname='l'\nrole='learner'\n[[node]]\nname='p'\nrole='proposer'\n"
        )
    };
    assert!(err(&paxos("trim_quorum = 2")).contains("exceeds the 1 learners"), "{}", err(&paxos("trim_quorum = 2")));
    assert!(err(&paxos("trim_quorum = 4294967295")).contains("MAX_LEARNERS"));
    Topology::parse(&paxos("trim_quorum = 1")).unwrap();
    // NetCRAQ needs a clean and a dirty version (versions = 1 panicked in the node).
    let e = err("[chain]\nversions = 1\n[[node]]\nname='n0'\nrole='node'\n[[node]]\nname='control'\nrole='control'\n");
    assert!(e.contains("versions = 1 must be from 2"), "{e}");
}

#[test]
fn links_set_delays_and_tables_that_belong_to_another_service_are_refused() {
    let text = "[[node]]\nname='s'\nrole='store'\n[[node]]\nname='w'\nrole='switch'\nmode='forward'\nupstream='s'\n\
        [[link]]\na='w'\nb='s'\ndelay_ms=7\n";
    let t = Topology::parse(text).unwrap();
    let Service::Txn(d) = &t.service else { panic!() };
    assert_eq!(d.delay(0, 1), Some(Duration::from_millis(7)));
    let e = err(&format!("[chain]\nprotocol='netcraq'\n{text}"));
    assert!(e.contains("[chain] table in a txn topology"), "{e}");
    let e = err("[[node]]\nname='s'\nrole='store'\n[[link]]\na='s'\nb='x'\n");
    assert!(e.contains("'x' is not a node"), "{e}");
}

#[test]
fn placing_machines_on_addresses_keeps_the_files_ports() {
    let mut t = example("topology-txn-tree.toml");
    let ip = |s: &str| -> std::net::IpAddr { s.parse().unwrap() };
    t.place(&[("edge0".into(), ip("10.0.0.3")), ("clients0".into(), ip("10.0.0.5"))]).unwrap();
    let Service::Txn(d) = &t.service else { panic!("txn") };
    let listen = |n: &str| t.places[d.find(n).unwrap()].listen.clone();
    assert_eq!(listen("edge0").as_deref(), Some("10.0.0.3:9110"), "the file's port is kept");
    assert_eq!(listen("core").as_deref(), Some("127.0.0.1:9100"), "machines not named stay where the file says");
    let c = d.find("clients0.2").unwrap();
    assert_eq!(t.places[c].listen, Some(format!("10.0.0.5:{}", PLACED_PORT_BASE as usize + c)), "no port in the file");
    let e = t.place(&[("edge7".into(), ip("10.0.0.9"))]).unwrap_err().0;
    assert!(e.contains("no machine named 'edge7'") && e.contains("machines: store, core, edge0"), "{e}");
}

#[test]
fn auth_key_names_a_file_beside_the_topology_and_a_chain_takes_it_once() {
    let dir = std::env::temp_dir().join(format!("innet-topology-auth-path-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("t.toml");
    let body = "[[node]]\nname = \"store\"\nrole = \"store\"\n[[node]]\nname = \"s\"\nrole = \"switch\"\nmode = \"forward\"\nupstream = \"store\"\n";
    std::fs::write(&file, format!("auth_key = \"keys.txt\"\n{body}")).unwrap();
    assert_eq!(Topology::load(&file).unwrap().auth_key, Some(dir.join("keys.txt")), "relative to the file");
    std::fs::write(&file, format!("auth_key = \"/etc/innet/keys\"\n{body}")).unwrap();
    assert_eq!(Topology::load(&file).unwrap().auth_key, Some(PathBuf::from("/etc/innet/keys")));
    std::fs::write(&file, body).unwrap();
    assert_eq!(Topology::load(&file).unwrap().auth_key, None);
    std::fs::remove_dir_all(&dir).unwrap();
    // A chain's key file at the top level or in [chain], not both.
    let nodes = "[[node]]\nname = \"n0\"\nrole = \"node\"\n[[node]]\nname = \"control\"\nrole = \"control\"\n";
    let twice = format!("auth_key = \"k\"\n[chain]\nauth_key = \"k\"\n{nodes}");
    assert!(err(&twice).contains("auth_key given twice"), "{}", err(&twice));
    let missing = format!("auth_key = \"/nonexistent/innet.key\"\n{nodes}");
    assert!(err(&missing).contains("[chain] auth_key /nonexistent/innet.key"), "{}", err(&missing));
}

#[test]
fn a_chains_auth_key_is_read_beside_the_file_and_a_bad_one_is_refused_in_one_line() {
    let dir = std::env::temp_dir().join(format!("innet-topology-auth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let nodes = "[[node]]\nname='n0'\nrole='node'\n[[node]]\nname='control'\nrole='control'\n";
    let key = "00112233445566778899aabbccddeeff";
    std::fs::write(dir.join("two.key"), format!("# rotation\n3 {key}\n4 {}\n", "ab".repeat(16))).unwrap();
    std::fs::write(dir.join("bad.key"), "3 0011\n").unwrap();
    let topo = dir.join("chain.toml");
    std::fs::write(&topo, format!("[chain]\nauth_key = 'two.key'\n{nodes}")).unwrap();
    let t = Topology::load(&topo).unwrap();
    let Service::Chain(c) = &t.service else { panic!("chain") };
    let ids: Vec<u8> = c.auth.as_ref().expect("keys").keys().iter().map(|k| k.id).collect();
    assert_eq!(ids, [3, 4], "both keys of a rotation, the first seals");
    for (file, says) in [("bad.key", "line 1: key `0011` is not 32 hex digits"), ("missing.key", "missing.key: ")] {
        std::fs::write(&topo, format!("[chain]\nauth_key = '{file}'\n{nodes}")).unwrap();
        let e = Topology::load(&topo).unwrap_err().0;
        assert!(e.contains("[chain] auth_key") && e.contains(says) && !e.contains('\n'), "{e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    let e = err(&format!("[chain]\nauth_key = 7\n{nodes}"));
    assert!(e.contains("auth_key"), "{e}");
}
