//! `--auth-key` on a live chain (NetCRAQ and NetChain, software switches on
//! loopback, real UDP; issue 21 item 3). The chain knows a node by its
//! source address and port, so a raw socket that spoofs the head's address
//! can write straight to the second node, skipping the head (NetCRAQ,
//! Algorithm 1: a write is taken from the predecessor; NetChain section 4:
//! the stack names the rest of the chain): without keys the write is
//! applied below the head and the tail answers reads with a value no
//! client wrote (the chain checker finds the violation); with keys every
//! spoof is refused for want of a MAC trailer (`auth_no_trailer`), the
//! clients' history under load stays linearizable, and a packet sealed
//! with the second key of a two-key file is taken (rotation).
//!
//! Needs root for the raw socket; without it the test says so on stderr
//! (`SKIPPED: ...`) and fails under `CI=true`.

mod common;

use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::time::Duration;

use innet_chain::client::{node_addr, OpKind, Record};
use innet_chain::Protocol;
use innet_core::auth::{AuthKeys, Key};
use innet_live::chain::{run_one, spawn_drill_clients, DrillLoad, LiveChain, LiveChainConfig};
use innet_live::switch::add_origin_shim;
use innet_live::{clock, Stop};
use innet_wire::netchain::{key_from_u32, NcMsg, NcOp};
use innet_wire::netcraq::{CraqMsg, Value};

/// Spoofed writes per run.
const SPOOFED: u64 = 200;
/// Keys the load clients use (`0..CLIENT_KEYS`); the spoofs write the next
/// one, which the final read looks at.
const CLIENT_KEYS: u32 = 4;
const FORGED_KEY: u32 = CLIENT_KEYS;
/// The key a write sealed with the second key goes to.
const ROTATED_KEY: u32 = CLIENT_KEYS + 1;

fn forged(k: u64) -> Value {
    Value::from_counter(0xf0_0000 + k)
}

/// A write of `value` to `key` as node 0 (the head) would pass it to
/// node 1: the origin shim in front, and (NetChain) the rest of the chain
/// on its stack with a sequence number of the sender's choosing.
fn head_to_second(protocol: Protocol, origin: SocketAddr, key: u32, value: Value) -> Vec<u8> {
    let payload = match protocol {
        Protocol::NetCraq => CraqMsg::write(key, value).encode(),
        Protocol::NetChain => NcMsg {
            chain: vec![node_addr(1), node_addr(2)],
            op: NcOp::WriteReq,
            seq: 30_000,
            key: key_from_u32(key),
            value,
            vgroup: 0,
        }
        .encode(),
    };
    add_origin_shim(origin, &payload)
}

struct Outcome {
    /// `auth_*` refusals at node 1.
    refused: u64,
    /// The final read of FORGED_KEY at the tail.
    read_at_tail: Value,
    /// What each node holds for FORGED_KEY.
    held: Vec<Value>,
    /// The clients' history and the final read, checked.
    linearizable: Result<innet_chain::check::CheckSummary, Vec<String>>,
    completed: usize,
    /// Node 1 took a write sealed with `rotated` (`None`: not tried).
    rotated_taken: Option<bool>,
}

fn refusals(chain: &LiveChain, node: usize) -> u64 {
    let (_, stats) = chain.counters_reader()(node).expect("node runs");
    stats.rejected.iter().filter(|(r, _)| r.starts_with("auth_")).map(|(_, n)| n).sum()
}

/// A 3-node chain with `keys` under two recording load clients for 1 s;
/// [`SPOOFED`] writes of FORGED_KEY spoofed from the head's address to
/// node 1 while they run; then a read of FORGED_KEY at the tail. With
/// `rotated`, a write of ROTATED_KEY sealed with that key (the keys'
/// second) is sent the same way.
fn run(raw: &impl AsRawFd, protocol: Protocol, keys: Option<AuthKeys>, rotated: Option<AuthKeys>) -> Outcome {
    let stop = Stop::new();
    let cfg = LiveChainConfig { auth: keys, ..LiveChainConfig::new(protocol, 3) };
    let chain = LiveChain::start(cfg, &stop).unwrap();
    let addrs = chain.addrs();
    let load = DrillLoad {
        protocol,
        victim: 0,
        clients: 2,
        write_ratio: 0.3,
        keys: CLIENT_KEYS,
        client_timeout: Duration::from_millis(50),
        seed: 5,
        addrs: addrs.clone(),
        chain_addrs: None,
    };
    let t0 = clock::now();
    let window = (t0, t0 + Duration::from_secs(1));
    let bind = || std::net::UdpSocket::bind("127.0.0.1:0");
    let clients = spawn_drill_clients(&load, "client", &chain.view(), window, &stop, bind).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let origin: SocketAddr = "127.0.0.1:9".parse().unwrap();
    for k in 0..SPOOFED {
        common::spoof(raw, addrs[0], addrs[1], &head_to_second(protocol, origin, FORGED_KEY, forged(k)));
    }
    let rotated_taken = rotated.map(|r| {
        let sealed = r.seal(&head_to_second(protocol, origin, ROTATED_KEY, forged(0)));
        common::spoof(raw, addrs[0], addrs[1], &sealed);
        common::eventually("the tail holds the write sealed with the second key", || {
            chain.with_node(2, |n| n.values(ROTATED_KEY + 1)[ROTATED_KEY as usize]) == Some(forged(0))
        });
        true
    });
    let mut history: Vec<Record> = vec![];
    let mut completed = 0;
    for c in clients {
        let l = c.shutdown().unwrap();
        completed += l.completions.as_ref().map_or(0, Vec::len);
        history.extend(l.client.history.unwrap_or_default());
    }
    let (timeout, deadline) = (Duration::from_millis(50), Duration::from_secs(2));
    let invoke = clock::now();
    let read = run_one(protocol, &addrs, 2, FORGED_KEY, None, timeout, deadline).unwrap().expect("the tail answers");
    let response = Some(clock::now());
    history.push(Record { client: 999, key: FORGED_KEY, kind: OpKind::Read, value: read.value, invoke, response });
    let held = (0..3).map(|i| chain.with_node(i, |n| n.values(FORGED_KEY + 1)[FORGED_KEY as usize]).unwrap()).collect();
    let refused = refusals(&chain, 1);
    chain.shutdown().unwrap();
    Outcome {
        refused,
        read_at_tail: read.value,
        held,
        linearizable: innet_chain::check::check(&history),
        completed,
        rotated_taken,
    }
}

fn key(id: u8, fill: u8) -> Key {
    Key { id, bytes: [fill; 16] }
}

#[test]
fn a_raw_socket_spoof_of_the_heads_address_is_refused_with_auth_keys_and_taken_without() {
    let Some(raw) = common::raw_socket_or_skip("chain_auth") else { return };
    for protocol in Protocol::ALL {
        let open = run(&raw, protocol, None, None);
        assert_eq!(open.refused, 0);
        assert_ne!(open.read_at_tail, Value::ZERO, "{protocol}: without keys the spoofed write reaches the tail");
        assert_eq!(open.held[0], Value::ZERO, "{protocol}: ... having skipped the head");
        let e = open.linearizable.expect_err("the tail answered a value no client wrote");
        assert!(e.iter().any(|v| v.contains("which no write wrote")), "{protocol}: {e:?}");

        // The nodes' file: the current key seals, the next one is accepted.
        let file = AuthKeys::new(vec![key(1, 0x11), key(2, 0x22)]).unwrap();
        let next = AuthKeys::new(vec![key(2, 0x22)]).unwrap();
        let keyed = run(&raw, protocol, Some(file), Some(next));
        assert_eq!(keyed.refused, SPOOFED, "{protocol}: every spoof refused");
        assert_eq!(keyed.read_at_tail, Value::ZERO, "{protocol}: no spoofed write was applied");
        assert_eq!(keyed.held, [Value::ZERO; 3], "{protocol}");
        let summary = keyed.linearizable.unwrap_or_else(|e| panic!("{protocol}: {e:?}"));
        assert!(keyed.completed > 100 && summary.writes_acked > 10, "{protocol}: {} operations", keyed.completed);
        assert_eq!(keyed.rotated_taken, Some(true));
        eprintln!(
            "AUTH chain live {protocol}: {SPOOFED} writes spoofed from the head's address to node 1: without keys \
             the tail answered {:?} (no client wrote it; checker: violation), with keys {} refused (auth_*), the \
             clients' {} operations linearizable ({} acknowledged writes), a write sealed with the second key taken",
            open.read_at_tail, keyed.refused, keyed.completed, summary.writes_acked
        );
    }
}

/// A chain from a topology file (`auth_key` in `[chain]` when `key_file`),
/// every node and the control plane started here, the way `innet up chain
/// --topology FILE` runs it.
fn topology_chain(ports: &[u16], key_file: Option<&std::path::Path>) -> innet_topology::Topology {
    let mut text = String::from("[chain]\nprotocol = \"netcraq\"\n");
    if let Some(f) = key_file {
        text += &format!("auth_key = {:?}\n", f.display().to_string());
    }
    for (i, p) in ports.iter().take(3).enumerate() {
        text += &format!("[[node]]\nname = \"n{i}\"\nrole = \"node\"\nlisten = \"127.0.0.1:{p}\"\n");
    }
    text += &format!("[[node]]\nname = \"control\"\nrole = \"control\"\nlisten = \"127.0.0.1:{}\"\n", ports[3]);
    innet_topology::Topology::parse(&text).unwrap()
}

/// Runs the topology chain; once configured, spoofs from the control
/// plane's management address an APPLY to the head's agent that pauses
/// writes under a version the control plane never reaches; then puts.
/// Whether a put was acknowledged, and what the head's agent counted.
fn run_managed(
    raw: &impl AsRawFd,
    key_file: Option<&std::path::Path>,
) -> (bool, innet_live::chain::manage::AgentStats) {
    use innet_live::chain::manage::{MAGIC, MANAGE_PORT_OFFSET};
    use innet_live::topology::{start, RunningNode};
    let ports = common::free_ports(4);
    let stop = Stop::new();
    let started = start(&topology_chain(&ports, key_file), None, &stop).unwrap();
    let view = started.view.clone().expect("the control plane runs here");
    common::eventually("the chain is configured", || view.lock().unwrap().1 == [0, 1, 2]);
    let addrs: Vec<SocketAddr> = (0..3).map(|i| started.addrs[i]).collect();
    let (timeout, deadline) = (Duration::from_millis(50), Duration::from_secs(1));
    common::eventually("a first put is acknowledged", || {
        run_one(Protocol::NetCraq, &addrs, 0, 0, Some(Value::from_counter(1)), timeout, deadline).unwrap().is_some()
    });
    // APPLY (3): version 2^62, paused, the chain 0, 1, 2.
    let mut apply = MAGIC.to_vec();
    apply.push(3);
    apply.extend_from_slice(&7u32.to_be_bytes());
    apply.extend_from_slice(&(1u64 << 62).to_be_bytes());
    apply.extend_from_slice(&[1, 3, 0, 1, 2]);
    let at = |p: u16| SocketAddr::from(([127, 0, 0, 1], p + MANAGE_PORT_OFFSET));
    for _ in 0..10 {
        common::spoof(raw, at(ports[3]), at(ports[0]), &apply);
    }
    std::thread::sleep(Duration::from_millis(100));
    let put = run_one(Protocol::NetCraq, &addrs, 0, 0, Some(Value::from_counter(2)), timeout, deadline).unwrap();
    stop.stop();
    let mut agent = None;
    for (i, n) in started.nodes {
        match n {
            RunningNode::ChainSwitch { switch, agent: a } => {
                switch.shutdown().unwrap();
                let stats = a.join().unwrap().unwrap();
                if i == 0 {
                    agent = Some(stats);
                }
            }
            RunningNode::ChainControl(t) => drop(t.join().unwrap()),
            _ => {}
        }
    }
    (put.is_some_and(|c| c.value == Value::from_counter(2)), agent.expect("the head's agent"))
}

#[test]
fn a_spoofed_management_message_pauses_the_chain_without_auth_keys_and_is_refused_with_them() {
    let Some(raw) = common::raw_socket_or_skip("chain_auth management") else { return };
    let (put, agent) = run_managed(&raw, None);
    assert!(!put, "without keys the spoofed APPLY paused writes at the head for good");
    assert_eq!(agent.dropped_unauthenticated, 0);
    let dir = std::env::temp_dir().join(format!("innet-chain-auth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("chain.key");
    std::fs::write(&file, format!("5 {}\n", "5a".repeat(16))).unwrap();
    let (put, agent) = run_managed(&raw, Some(&file));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(put, "with keys the spoofed APPLY is refused and the put acknowledged");
    assert_eq!(agent.dropped_unauthenticated, 10, "every spoofed APPLY refused: {agent:?}");
    assert!(agent.requests > 10, "the control plane's sealed requests were answered: {agent:?}");
    eprintln!(
        "AUTH chain management: 10 APPLYs spoofed from the control plane's address: without keys writes paused \
         for good, with keys 10 refused (dropped_unauthenticated) and the chain served puts ({} requests answered)",
        agent.requests
    );
}
