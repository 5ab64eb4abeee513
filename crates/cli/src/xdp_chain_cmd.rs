//! `innet bench xdp-chain`: requests through the XDP chain, a bare XDP
//! bounce and the user-space software switch chain, side by side in one run
//! (crates/xdp/src/chain_bench.rs, docs/xdp.md). Needs root.

use std::path::PathBuf;

use clap::Args;

use innet_chain::Protocol;
use innet_exp::xdp_fabric::GenRecord;
use innet_exp::xdp_paxos::{McastArg, OnOff};
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
    rounds: crate::xdp_cmd::RoundsArgs,
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
        let (recs, path) = innet_exp::xdp_fabric::chain_fabric_only(
            a.nodes,
            fabric,
            a.multicast.into(),
            cfg.rounds,
            a.frames,
            a.bpf_stats == OnOff::On,
            &a.out,
        )?;
        print_fabric_only(&recs, "writes");
        println!("wrote {}", path.display());
        return Ok(0);
    }
    let (rec, path) = innet_exp::xdp::bench_chain(protocol, a.nodes, a.multicast.into(), &cfg, &a.out)?;
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
    crate::xdp_cmd::print_planes(&rec.planes);
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
    Ok(if innet_exp::xdp::planes_ok(&rec.planes) { 0 } else { 1 })
}

/// `innet testbed up chain --drill`: the chain control plane drives the XDP
/// chain while a middle node fails and recovers
/// (crates/xdp/src/chain_control.rs). Exit status 1 unless every node ends
/// with the same values, the history is linearizable and every map access
/// succeeded.
pub fn run_drill(o: &ChainUp) -> anyhow::Result<i32> {
    use innet_xdp::chain_control::{run_drill, DrillConfig};
    let (protocol, nodes) = (o.protocol, o.nodes);
    let stop = crate::live_cmd::signals()?;
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

/// The rounds of a fabric-only benchmark (`bench xdp-txn --fabric-only`,
/// `bench xdp-chain --fabric-only`), one line each, then the medians per
/// path and injection; `what` names the decisions (`decisions`, `writes`).
pub fn print_fabric_only(recs: &[GenRecord], what: &str) {
    for r in recs {
        println!(
            "run {} {} {} (commit {}; XDP {} mode, threaded NAPI {:?}; load average {:.2}): {} injected, {} arrived \
             ({} decided, {} other frames to the client) in {:.3} s: {:.0}/s, {:.2} CPUs busy; generator thread {:.3} s + NAPI threads {:.3} s of \
             CPU: {:.0} arrived per fabric CPU-second = {:.0} ns each (programs {:.0} ns, transport {:.0} ns), \
             {:.0} decided per generator CPU-second; stalled bursts {}",
            r.run,
            r.path,
            r.injection,
            r.git_commit,
            r.fabric.xdp_mode,
            r.fabric.threaded_napi,
            r.load_average[0],
            r.requests,
            r.arrived,
            r.decided,
            r.others,
            r.seconds,
            r.per_s,
            (r.cpu.machine_user_s + r.cpu.machine_system_s + r.cpu.machine_irq_s) / r.cpu.wall_s.max(1e-9),
            r.generator_thread_cpu_s,
            r.napi_threads_cpu_s,
            r.per_fabric_cpu_s,
            r.fabric_ns_per_decision,
            r.programs.iter().map(|c| c.ns_per_unit).sum::<f64>(),
            r.transport_ns_per_decision,
            r.decided_per_generator_cpu_s,
            r.stalls
        );
        for c in &r.programs {
            println!(
                "    {:<16} {:>6.2} runs x {:>5.0} ns = {:>5.0} ns per arrived",
                c.program, c.runs_per_unit, c.ns_per_run, c.ns_per_unit
            );
        }
    }
    let mut kinds: Vec<(&str, &str)> = recs.iter().map(|r| (r.path, r.injection)).collect();
    kinds.sort();
    kinds.dedup();
    for (p, i) in kinds {
        let of = |f: fn(&GenRecord) -> f64| {
            innet_exp::xdp_paxos::median(recs.iter().filter(|r| (r.path, r.injection) == (p, i)).map(f).collect())
        };
        println!(
            "{p} {i}: median {:.0} arrived/s, {:.0} arrived per fabric CPU-second, {:.0} {what} decided per \
             generator CPU-second, {:.0} ns of fabric CPU per arrived",
            of(|r| r.per_s),
            of(|r| r.per_fabric_cpu_s),
            of(|r| r.decided_per_generator_cpu_s),
            of(|r| r.fabric_ns_per_decision)
        );
    }
}
