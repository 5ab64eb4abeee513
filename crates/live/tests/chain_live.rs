//! The chain store live on loopback: clients keep reading and writing while
//! the middle node of a 4-node chain is killed, removed, restarted,
//! recovered by copy while writes pause, and re-added (NetCRAQ paper
//! section III-C); afterwards every node holds the same values and the
//! clients' histories are linearizable.

use std::time::Duration;

use innet_chain::check::check;
use innet_chain::client::{ChainClient, ClientConfig};
use innet_chain::workload::{LoadClient, Workload};
use innet_chain::Protocol;
use innet_core::rng::Rng;
use innet_live::chain::{LiveChain, LiveChainConfig, ViewedClient};
use innet_live::{clock, spawn_host, HostOptions, Stop};

fn run(protocol: Protocol) {
    let stop = Stop::new();
    let chain = LiveChain::start(LiveChainConfig::new(protocol, 4), &stop).unwrap();
    let addrs = chain.addrs();
    let t0 = clock::now();
    let at = |s: f64| t0 + Duration::from_secs_f64(s);
    let mut clients = vec![];
    let mut rng = Rng::new(5);
    for i in 0..2u32 {
        let mut cfg = ClientConfig::new(protocol, i, 4);
        cfg.near = 1 + i as usize; // node 1 (killed) and node 2
        cfg.timeout = Duration::from_millis(50);
        cfg.stamp_attempts = true;
        let w = Workload { write_ratio: 0.3, keys: 8, think: Duration::from_millis(1), start: t0, stop: at(3.0) };
        let mut load = LoadClient::new(ChainClient::new(cfg).with_history(), w, rng.fork());
        load.completions = Some(vec![]);
        let view = chain.view();
        let opts = HostOptions { ports: addrs.clone(), ..HostOptions::default() };
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let h = spawn_host(
            &format!("client{i}"),
            socket,
            opts,
            &stop,
            move || ViewedClient::new(load, view),
            |c, _| c.load,
        )
        .unwrap();
        clients.push(h);
    }
    std::thread::sleep(Duration::from_secs(1));
    chain.kill(1).unwrap();
    let killed = clock::now();
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(chain.members(), vec![0, 2, 3], "{protocol}: the failed node was removed");
    chain.restart(1).unwrap();
    std::thread::sleep(Duration::from_millis(2_000));
    let loads: Vec<LoadClient> = clients.into_iter().map(|c| c.shutdown().unwrap()).collect();
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(chain.members(), vec![0, 2, 3, 1], "{protocol}: recovered and re-added as the tail");
    let values: Vec<_> = (0..4).map(|i| chain.with_node(i, |n| n.values(8)).unwrap()).collect();
    for (i, v) in values.iter().enumerate() {
        assert_eq!(v, &values[3], "{protocol}: node {i} differs from node 3");
    }
    let mut history = vec![];
    let mut gap = Duration::ZERO;
    let mut after_kill = 0;
    for l in &loads {
        history.extend_from_slice(l.client.history.as_deref().unwrap());
        gap = gap.max(l.stats.max_gap);
        after_kill += l.completions.as_ref().unwrap().iter().filter(|c| c.finished > killed).count();
        assert!(l.stats.reads > 100 && l.stats.writes > 30, "{protocol}: {:?}", l.stats);
    }
    assert!(after_kill > 100, "{protocol}: clients kept working after the kill ({after_kill} operations)");
    let summary = check(&history).unwrap_or_else(|e| panic!("{protocol}: {e:?}"));
    let control = chain.shutdown().unwrap();
    println!(
        "{protocol}: longest gap between a client's completions {:.1} ms; {} reads checked; control plane {:?}",
        gap.as_secs_f64() * 1e3,
        summary.reads,
        control.stats
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
