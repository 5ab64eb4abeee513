//! `innet bench xdp-chain`: requests through the XDP chain, a bare XDP
//! bounce and the user-space software switch chain, side by side in one run
//! (crates/xdp/src/chain_bench.rs, docs/xdp.md). Needs root.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use serde::Serialize;

use innet_chain::Protocol;
use innet_exp::results;
use innet_txn::switch::Mode;
use innet_xdp::bench::{summarize, DownOnDrop, Summary};
use innet_xdp::chain_bench::{probe, ChainBenchConfig, Workload, KEYS};
use innet_xdp::chain_testbed::{self as tb, CLIENT_IP};
use innet_xdp::testbed::{in_netns, DataPlane, NS_CLIENT};
use innet_xdp::txn::{Ports, Program, Tables, TxnXdp};

const _: () = assert!(KEYS <= tb::NETCHAIN_KEYS_INSTALLED);

#[derive(Args, Debug)]
pub struct BenchXdpChainArgs {
    /// netcraq or netchain.
    #[arg(long, default_value = "netcraq")]
    protocol: String,
    /// Chain length.
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    #[command(flatten)]
    rounds: crate::xdp_cmd::RoundsArgs,
    /// Output folder for xdp-chain.jsonl.
    #[arg(long, default_value = "results/xdp")]
    out: PathBuf,
}

#[derive(Serialize)]
struct Record<'a> {
    experiment: &'static str,
    config: &'a ChainBenchConfig,
    /// No randomness in this benchmark; recorded for the common schema.
    seed: u64,
    git_commit: String,
    planes: &'a [Summary],
    ratio_median_xdp_write_over_bounce: f64,
    ratio_median_software_write_over_xdp_write: f64,
    ratio_median_software_read_over_xdp_read: f64,
    ratio_rate_xdp_write_over_software_write: f64,
    ratio_rate_xdp_read_over_software_read: f64,
}

/// The XDP chain's and the software chain's workloads: (write, read).
fn workloads(
    protocol: Protocol,
    heads: [SocketAddr; 2],
    tails: [SocketAddr; 2],
    stacks: [Vec<u32>; 2],
) -> Vec<Workload> {
    let mut v = vec![];
    for k in 0..2 {
        let w = Workload { protocol, write: true, to: heads[k], stack: stacks[k].clone(), any_reply: false };
        let read = match protocol {
            Protocol::NetCraq => Workload { write: false, ..w.clone() },
            Protocol::NetChain => {
                Workload { write: false, to: tails[k], stack: vec![*stacks[k].last().expect("a node")], ..w.clone() }
            }
        };
        v.push(w);
        v.push(read);
    }
    v
}

pub fn run(a: BenchXdpChainArgs) -> anyhow::Result<i32> {
    let protocol: Protocol = a.protocol.parse().map_err(anyhow::Error::msg)?;
    anyhow::ensure!(
        (1..=tb::NODES_MAX.min(innet_wire::netchain::MAX_CHAIN_NODES)).contains(&a.nodes),
        "--nodes must be 1..={}",
        tb::NODES_MAX.min(innet_wire::netchain::MAX_CHAIN_NODES)
    );
    let cfg = ChainBenchConfig { protocol: protocol.name().into(), nodes: a.nodes, rounds: a.rounds.config() };
    let port = tb::udp_port(protocol);

    // The software chain: innet-live's switches on loopback.
    let stop = innet_live::Stop::new();
    let mut live_cfg = innet_live::chain::LiveChainConfig::new(protocol, a.nodes);
    live_cfg.keys = KEYS;
    let live = innet_live::chain::LiveChain::start(live_cfg, &stop)?;
    let sw = live.addrs();

    // The XDP chain on the testbed, and the bounce for the head's port.
    tb::up(protocol, a.nodes, DataPlane::None)?;
    let _down = DownOnDrop;
    let nodes = tb::attach_nodes(protocol, a.nodes)?;
    let bounce = TxnXdp::load(Tables { cache_slots: 4, client_slots: 4 })?;
    let unused = Ipv4Addr::UNSPECIFIED;
    let ports = Ports {
        udp_port: port,
        client_ifindex: 0,
        store_ifindex: 0,
        service_ip: unused,
        store_ip: unused,
        client_port_mac: [0; 6],
        client_mac: [0; 6],
        store_port_mac: [0; 6],
        store_mac: [0; 6],
    };
    bounce.configure(Mode::Forward, &ports)?;

    let xdp_addr = |i: usize| SocketAddr::V4(SocketAddrV4::new(tb::node_ip(i), port));
    let last = a.nodes - 1;
    let w = workloads(
        protocol,
        [xdp_addr(0), sw[0]],
        [xdp_addr(last), sw[last]],
        [
            (0..a.nodes).map(|i| u32::from(tb::node_ip(i))).collect(),
            (0..a.nodes as u32).map(innet_chain::client::node_addr).collect(),
        ],
    );
    let (xdp_write, xdp_read, sw_write, sw_read) = (&w[0], &w[1], &w[2], &w[3]);
    let bounce_w = Workload { any_reply: true, ..xdp_write.clone() };
    let in_client = |w: &Workload| in_netns(NS_CLIENT, || probe(&cfg.rounds, w, CLIENT_IP));
    let mut parts: Vec<Vec<_>> = vec![vec![]; 5];
    for _ in 0..cfg.rounds.rounds {
        tb::attach_to_node(0, bounce.program_fd(Program::Bounce)?)?;
        parts[0].push(in_client(&bounce_w).context("bounce")?);
        tb::attach_to_node(0, nodes[0].xdp_fd()?)?;
        parts[1].push(in_client(xdp_write).context("xdp chain writes")?);
        parts[2].push(in_client(xdp_read).context("xdp chain reads")?);
        parts[3].push(probe(&cfg.rounds, sw_write, Ipv4Addr::LOCALHOST).context("software chain writes")?);
        parts[4].push(probe(&cfg.rounds, sw_read, Ipv4Addr::LOCALHOST).context("software chain reads")?);
    }
    live.shutdown()?;
    let names = ["xdp-bounce", "xdp-chain-write", "xdp-chain-read", "software-chain-write", "software-chain-read"];
    let planes: Vec<Summary> = names.iter().zip(&parts).map(|(n, p)| summarize(n, p)).collect();
    println!(
        "{protocol}, {} nodes ({} rounds, {} in flight in the rate phase)",
        a.nodes, cfg.rounds.rounds, cfg.rounds.window
    );
    crate::xdp_cmd::print_planes(&planes);
    let (b, xw, xr, sww, swr) = (&planes[0], &planes[1], &planes[2], &planes[3], &planes[4]);
    let rec = Record {
        experiment: "xdp-chain",
        config: &cfg,
        seed: 0,
        git_commit: results::git_commit(),
        planes: &planes,
        ratio_median_xdp_write_over_bounce: xw.median_us / b.median_us,
        ratio_median_software_write_over_xdp_write: sww.median_us / xw.median_us,
        ratio_median_software_read_over_xdp_read: swr.median_us / xr.median_us,
        ratio_rate_xdp_write_over_software_write: xw.replies_per_s / sww.replies_per_s,
        ratio_rate_xdp_read_over_software_read: xr.replies_per_s / swr.replies_per_s,
    };
    println!(
        "median: xdp write / bounce {:.2}x, software / xdp write {:.2}x, software / xdp read {:.2}x; \
         rate: xdp / software write {:.2}x, read {:.2}x",
        rec.ratio_median_xdp_write_over_bounce,
        rec.ratio_median_software_write_over_xdp_write,
        rec.ratio_median_software_read_over_xdp_read,
        rec.ratio_rate_xdp_write_over_software_write,
        rec.ratio_rate_xdp_read_over_software_read
    );
    let path = a.out.join("xdp-chain.jsonl");
    results::append_jsonl(&path, &[rec])?;
    println!("wrote {}", path.display());
    let bad = planes.iter().any(|s| s.wrong_status > 0 || s.samples == 0);
    Ok(if bad { 1 } else { 0 })
}

/// `innet testbed up chain --drill`: the chain control plane drives the XDP
/// chain while a middle node fails and recovers
/// (crates/xdp/src/chain_control.rs). Exit status 1 unless every node ends
/// with the same values, the history is linearizable and every map access
/// succeeded.
pub fn run_drill(protocol: Protocol, nodes: usize) -> anyhow::Result<i32> {
    use innet_xdp::chain_control::{run_drill, DrillConfig};
    let stop = crate::live_cmd::signals()?;
    let cfg = DrillConfig::new(protocol, nodes);
    let r = run_drill(&cfg, &stop)?;
    let ms = |d: Option<std::time::Duration>| d.map_or("-".into(), |d| format!("{:.1} ms", d.as_secs_f64() * 1e3));
    let list = |v: &[std::time::Duration]| {
        v.iter().map(|d| format!("{:.1}", d.as_secs_f64() * 1e3)).collect::<Vec<_>>().join(", ")
    };
    println!(
        "{protocol} chain of {nodes} XDP nodes; node{} failed (link down) after {:?}: removed in {}, chain {:?}; \
         restarted {:?} later (fresh program): re-added in {}, chain at the end {:?}",
        cfg.victim,
        cfg.fail_after,
        ms(r.removal),
        r.members_after_failure,
        cfg.restart_after,
        ms(r.rejoin),
        r.members_at_end
    );
    println!("writes paused (ms): {}; copies by map reads and writes (ms): {}", list(&r.pauses), list(&r.copies));
    println!(
        "interruption: {:.1} ms (longest gap between a client's completions); {} operations after the failure; \
         control plane {:?}",
        r.interruption.as_secs_f64() * 1e3,
        r.operations_after_failure,
        r.control.stats
    );
    let lin = match &r.check {
        Ok(s) => format!("yes ({} keys, {} reads, {} acknowledged writes checked)", s.keys, s.reads, s.writes_acked),
        Err(v) => format!("NO: {}", v.join("; ")),
    };
    println!("all nodes hold the same values: {}; history linearizable: {lin}", r.same_values());
    for e in &r.errors {
        println!("map access failed: {e}");
    }
    println!("testbed left up (innet testbed status / down)");
    Ok(if r.same_values() && r.check.is_ok() && r.errors.is_empty() { 0 } else { 1 })
}
