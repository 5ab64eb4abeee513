//! `innet bench xdp-chain`: requests through the XDP chain, a bare XDP
//! bounce and the user-space software switch chain, side by side in one run
//! (crates/xdp/src/chain_bench.rs, docs/xdp.md). Needs root.

use std::path::PathBuf;

use clap::Args;

use innet_chain::Protocol;

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
    #[arg(long, default_value = "results/xdp", value_parser = innet_exp::parse::out_dir)]
    out: PathBuf,
}

pub fn run(a: BenchXdpChainArgs) -> anyhow::Result<i32> {
    let protocol: Protocol = a.protocol.parse().map_err(anyhow::Error::msg)?;
    let (rec, path) = innet_exp::xdp::bench_chain(protocol, a.nodes, &a.rounds.config(), &a.out)?;
    println!(
        "{protocol}, {} nodes ({} rounds, {} in flight in the rate phase)",
        a.nodes, rec.config.rounds.rounds, rec.config.rounds.window
    );
    crate::xdp_cmd::print_planes(&rec.planes);
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
    Ok(if innet_exp::xdp::planes_ok(&rec.planes) { 0 } else { 1 })
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
