//! `innet bench xdp-chain`: requests through the XDP chain, a bare XDP
//! bounce and the user-space software switch chain, side by side in one run
//! (crates/xdp/src/chain_bench.rs, docs/xdp.md). Needs root.

use std::path::PathBuf;

use clap::Args;

use crate::paxos::{McastArg, OnOff};
use innet_chain::Protocol;
use innet_xdp::chain_testbed::ChainUp;

#[derive(Args, Debug)]
pub struct BenchXdpChainArgs {
    /// netcraq or netchain.
    #[arg(long, default_value = "netcraq")]
    protocol: String,
    /// Chain length.
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    #[command(flatten)]
    rounds: super::RoundsArgs,
    /// NetCRAQ: how the tail's ACK reaches its group, `devmap` broadcast
    /// or `tc` clones (driver mode only).
    #[arg(long, value_enum, default_value = "devmap")]
    multicast: McastArg,
    /// The chain alone (NetCRAQ): an in-kernel generator injects writes at
    /// the head's client port, a sink on the client's devices counts the
    /// tail's ACKs, no end host (writes/s, and per CPU-second of the
    /// threads doing the work).
    #[arg(long)]
    fabric_only: bool,
    /// `--fabric-only`: writes per round.
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u32).range(1..=1_000_000_000))]
    frames: u32,
    /// `--fabric-only`: the kernel's BPF run-time statistics (ns per
    /// program) on, or off (no clock reads around every program run).
    #[arg(long, value_enum, default_value = "on")]
    bpf_stats: OnOff,
    /// Output folder for xdp-chain.jsonl.
    #[arg(long, default_value = "results/xdp", value_parser = innet_exp::parse::out_dir)]
    out: PathBuf,
}

pub fn run(a: BenchXdpChainArgs) -> anyhow::Result<i32> {
    let protocol: Protocol = a.protocol.parse().map_err(anyhow::Error::msg)?;
    let cfg = a.rounds.config();
    if a.fabric_only {
        anyhow::ensure!(
            protocol == Protocol::NetCraq,
            "--fabric-only runs a NetCRAQ chain (the generator writes; the tail's ACKs are counted): --protocol netcraq"
        );
        let fabric = a.rounds.fabric_args();
        let (recs, path) = crate::fabric::chain_fabric_only(
            a.nodes,
            fabric,
            a.multicast.into(),
            cfg.rounds,
            a.frames,
            a.bpf_stats == OnOff::On,
            &a.out,
        )?;
        super::print_fabric_only(&recs, "writes");
        println!("wrote {}", path.display());
        return Ok(0);
    }
    let (rec, path) = crate::bench::bench_chain(protocol, a.nodes, a.multicast.into(), &cfg, &a.out)?;
    println!(
        "{protocol}, {} nodes ({} rounds, {} in flight in the rate phase; XDP in {} mode, threaded NAPI {}, ACKs by {}; \
         load average {:.2})",
        a.nodes,
        rec.config.rounds.rounds,
        rec.config.rounds.window,
        cfg.fabric.mode,
        format!("{:?}", cfg.fabric.threaded).to_lowercase(),
        rec.config.multicast,
        rec.load_average[0]
    );
    super::print_planes(&rec.planes);
    for (name, c) in &rec.cpu {
        println!(
            "  {name}: {:.1} us of machine CPU per request ({:.1} user, {:.1} kernel; {:.2} CPUs busy)",
            c.machine_us, c.user_us, c.kernel_us, c.busy_cpus
        );
    }
    println!(
        "median: xdp write / bounce {:.2}x, software / xdp write {:.2}x, software / xdp read {:.2}x; \
         rate: xdp / software write {:.2}x, read {:.2}x",
        rec.ratio_median_xdp_write_over_bounce,
        rec.ratio_median_software_write_over_xdp_write,
        rec.ratio_median_software_read_over_xdp_read,
        rec.ratio_rate_xdp_write_over_software_write,
        rec.ratio_rate_xdp_read_over_software_read
    );
    println!("wrote {}", path.display());
    Ok(if crate::bench::planes_ok(&rec.planes) { 0 } else { 1 })
}

/// `innet testbed up chain --drill`: the chain control plane drives the XDP
/// chain while a middle node fails and recovers
/// (crates/xdp/src/chain_control.rs). Exit status 1 unless every node ends
/// with the same values, the history is linearizable and every map access
/// succeeded.
pub fn run_drill(o: &ChainUp) -> anyhow::Result<i32> {
    use innet_xdp::chain_control::{run_drill, DrillConfig};
    let (protocol, nodes) = (o.protocol, o.nodes);
    let stop = innet_live::stop_on_signals()?;
    let cfg = DrillConfig { fabric: o.fabric, multicast: o.multicast, ..DrillConfig::new(protocol, nodes) };
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
