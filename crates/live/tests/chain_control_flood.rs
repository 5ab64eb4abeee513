//! A flood of management-looking traffic from an ordinary outside socket
//! must not make the chain's control plane take healthy nodes for failed
//! (NetCRAQ paper section III-C: a node is removed when it fails, and
//! only then), while a node that really stops is still removed.
//!
//! The deployment is a topology file run as separate "processes" (one
//! `topology::start` per node, each with its own stop), the way `innet up
//! chain --topology FILE --only NODE` runs on several machines: three
//! NetCRAQ switches with their management agents, and the control plane.
//! An outside socket floods the control plane's address with VIEW requests
//! and junk, and every agent (and the control plane's management port)
//! with forged requests and junk, for two seconds.

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use innet_live::chain::manage::{AgentStats, MAGIC, MANAGE_PORT_OFFSET, VIEW_ANSWERS_PER_S_TOTAL, VIEW_BURST_TOTAL};
use innet_live::chain::ChainView;
use innet_live::topology::{start, ControlReport, RunningNode, Started};
use innet_live::Stop;
use innet_topology::Topology;

fn topology(ports: &[u16]) -> Topology {
    let mut text = String::from("[chain]\nprotocol = \"netcraq\"\n\n");
    for (i, p) in ports.iter().take(3).enumerate() {
        text += &format!("[[node]]\nname = \"n{i}\"\nrole = \"node\"\nlisten = \"127.0.0.1:{p}\"\n\n");
    }
    text += &format!("[[node]]\nname = \"control\"\nrole = \"control\"\nlisten = \"127.0.0.1:{}\"\n", ports[3]);
    Topology::parse(&text).unwrap()
}

struct Process {
    started: Started,
    stop: Stop,
}

impl Process {
    fn start(topo: &Topology, name: &str) -> Process {
        let stop = Stop::new();
        let started = start(topo, Some(name), &stop).unwrap();
        Process { started, stop }
    }

    /// Stops it the way a killed process stops (every socket closes);
    /// returns what its agent or control plane counted.
    fn kill(self) -> (Option<AgentStats>, Option<ControlReport>) {
        self.stop.stop();
        let mut out = (None, None);
        for (_, n) in self.started.nodes {
            match n {
                RunningNode::ChainSwitch { switch, agent } => {
                    switch.shutdown().unwrap();
                    out.0 = Some(agent.join().unwrap().unwrap());
                }
                RunningNode::ChainControl(t) => out.1 = Some(t.join().unwrap()),
                _ => {}
            }
        }
        out
    }
}

fn chain_of(view: &ChainView) -> (u64, Vec<usize>) {
    view.lock().unwrap().clone()
}

/// Sends VIEW requests and junk to `view_to`, and forged management
/// requests and junk to every address of `manage_to`, from one outside
/// socket, until `done`; returns how many datagrams it sent.
fn flood(view_to: SocketAddr, manage_to: Vec<SocketAddr>, done: Arc<AtomicBool>, sent: Arc<AtomicU64>) {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    // Large datagrams fill a socket's receive buffer with a few packets.
    let junk = vec![0x55u8; 60_000];
    let mut seq = 0u32;
    let msg = |kind: u8, seq: u32, body: &[u8]| {
        let mut v = MAGIC.to_vec();
        v.push(kind);
        v.extend_from_slice(&seq.to_be_bytes());
        v.extend_from_slice(body);
        v
    };
    while !done.load(Ordering::Relaxed) {
        for _ in 0..64 {
            seq = seq.wrapping_add(1);
            // VIEW (8), REPORT (1), an APPLY (3) that would empty the chain, junk.
            let _ = s.send_to(&msg(8, seq, &[]), view_to);
            let _ = s.send_to(&junk, view_to);
            for &m in &manage_to {
                let _ = s.send_to(&msg(1, seq, &[]), m);
                let _ = s.send_to(&msg(3, seq, &[0, 0, 0, 0, 0, 0, 0, 99, 0, 0]), m);
                let _ = s.send_to(&junk, m);
            }
            sent.fetch_add(2 + 3 * manage_to.len() as u64, Ordering::Relaxed);
        }
    }
}

#[test]
fn a_management_flood_removes_no_healthy_node_and_a_real_failure_is_still_detected() {
    let ports = common::free_ports(4);
    let topo = topology(&ports);
    let mut nodes: Vec<Option<Process>> = (0..3).map(|i| Some(Process::start(&topo, &format!("n{i}")))).collect();
    let control = Process::start(&topo, "control");
    let view = control.started.view.clone().expect("the control plane publishes the chain");
    std::thread::sleep(Duration::from_millis(500));
    let (version_before, chain) = chain_of(&view);
    assert_eq!(chain, vec![0, 1, 2], "the chain is configured before the flood");

    let addr = |p: u16| SocketAddr::from(([127, 0, 0, 1], p));
    let mut manage_to: Vec<SocketAddr> = ports.iter().map(|&p| addr(p + MANAGE_PORT_OFFSET)).collect();
    manage_to.push(addr(ports[3]));
    let (done, sent) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
    let control_addr = addr(ports[3]);
    let flooders: Vec<_> = (0..4)
        .map(|_| {
            let (m, d, s) = (manage_to.clone(), done.clone(), sent.clone());
            std::thread::spawn(move || flood(control_addr, m, d, s))
        })
        .collect();
    let t0 = Instant::now();
    let mut changes = vec![];
    while t0.elapsed() < Duration::from_secs(2) {
        let (v, c) = chain_of(&view);
        if v != version_before && changes.last() != Some(&c) {
            changes.push(c);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    done.store(true, Ordering::Relaxed);
    flooders.into_iter().for_each(|f| f.join().unwrap());
    let sent = sent.load(Ordering::Relaxed);
    println!("CHAIN FLOOD {sent} datagrams in 2 s at the control plane and the agents: chain changes {changes:?}");
    assert!(sent > 10_000, "the flood was a flood: {sent} datagrams");
    assert_eq!(chain_of(&view), (version_before, vec![0, 1, 2]), "no healthy node was removed; changes {changes:?}");

    // A real failure: node 1 stops; it leaves the chain.
    nodes[1].take().unwrap().kill();
    let t1 = Instant::now();
    while chain_of(&view).1 != vec![0, 2] {
        assert!(t1.elapsed() < Duration::from_secs(5), "node 1 stopped but the chain is {:?}", chain_of(&view));
        std::thread::sleep(Duration::from_millis(5));
    }
    println!("CHAIN FLOOD a stopped node left the chain after {:?}", t1.elapsed());
    let report = control.kill().1.expect("the control plane's report");
    for n in nodes.into_iter().flatten() {
        let agent = n.kill().0.expect("an agent's counters");
        assert_eq!(agent.dropped_foreign, 0, "nothing from the outside socket reached an agent");
    }
    let views = report.views;
    println!("CHAIN FLOOD VIEW requests: {} answered, {} refused by the token buckets", views.answered, views.limited);
    assert!(views.limited > 0, "the VIEW flood met the token buckets");
    let most = VIEW_BURST_TOTAL + VIEW_ANSWERS_PER_S_TOTAL * t0.elapsed().as_secs_f64();
    assert!((views.answered as f64) <= most, "{} VIEW answers, at most {most}", views.answered);
}
