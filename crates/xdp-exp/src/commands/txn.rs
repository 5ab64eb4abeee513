//! `innet bench xdp` (round trip of an optimistic abort through the XDP
//! switch, a bare XDP bounce and the software switch) and `innet bench
//! xdp-txn` (the transaction experiment through the XDP and the software
//! switch; `--fabric-only`: the switch alone). Needs root.

use std::path::PathBuf;

use clap::Args;

use innet_txn::switch::Mode;
use innet_xdp::bench::TxnExperimentConfig;

use super::{fabric_line, innet_exe, print_planes, RoundsArgs};
use crate::fabric::FabricArgs;
use crate::paxos::OnOff;

#[derive(Args, Debug)]
pub struct BenchXdpArgs {
    #[command(flatten)]
    rounds: RoundsArgs,
    /// Output folder for xdp-rtt.jsonl.
    #[arg(long, default_value = "results/xdp", value_parser = innet_exp::parse::out_dir)]
    out: PathBuf,
}

pub fn run_bench_xdp(a: BenchXdpArgs) -> anyhow::Result<i32> {
    let cfg = a.rounds.config();
    let (rec, path) = crate::bench::bench_rtt(&cfg, &innet_exe()?, &a.out)?;
    print_planes(&rec.planes);
    println!(
        "xdp switch / bare bounce: median {:.2}x, p99 {:.2}x   software / xdp switch: median {:.2}x, p99 {:.2}x",
        rec.ratio_median_xdp_switch_over_bounce,
        rec.ratio_p99_xdp_switch_over_bounce,
        rec.ratio_median_software_over_xdp_switch,
        rec.ratio_p99_software_over_xdp_switch
    );
    println!(
        "software switch / bare udp echo: median {:.2}x, p99 {:.2}x",
        rec.ratio_median_software_over_udp_echo, rec.ratio_p99_software_over_udp_echo
    );
    println!(
        "packet rate ({} in flight): xdp switch / bare bounce {:.2}x, xdp switch / software {:.2}x",
        cfg.window, rec.ratio_rate_xdp_switch_over_bounce, rec.ratio_rate_xdp_switch_over_software
    );
    println!("wrote {}", path.display());
    Ok(if crate::bench::planes_ok(&rec.planes) { 0 } else { 1 })
}

#[derive(Args, Debug)]
pub struct BenchXdpTxnArgs {
    /// Switch mode: forward, read-cache, early-abort or optimistic-abort.
    #[arg(long, default_value = "optimistic-abort")]
    mode: Mode,
    /// Closed-loop clients.
    #[arg(long, default_value_t = 8, value_parser = innet_exp::parse::clients)]
    clients: u32,
    /// Fraction of transactions that write (the rest read).
    #[arg(long, default_value_t = 0.5, value_parser = innet_exp::parse::ratio)]
    write_ratio: f64,
    /// Keys (1: the paper's single counter).
    #[arg(long, default_value_t = 1, value_parser = innet_exp::parse::txn_keys)]
    keys: u32,
    /// Seconds of load per data plane.
    #[arg(long, default_value_t = 5.0, value_parser = innet_exp::parse::seconds)]
    duration_s: f64,
    /// One-way client <-> switch delay, emulated by the clients.
    #[arg(long, default_value_t = 0.0, value_parser = innet_exp::parse::delay_ms)]
    client_delay_ms: f64,
    /// One-way switch <-> store delay, emulated by the store.
    #[arg(long, default_value_t = 0.0, value_parser = innet_exp::parse::delay_ms)]
    store_delay_ms: f64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Rounds; the data planes take turns within each.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    runs: u32,
    #[command(flatten)]
    fabric: FabricArgs,
    /// The switch alone: an in-kernel generator injects requests at the
    /// XDP switch's client port, sinks on the store's and the client's
    /// devices count what arrives, no end host (decisions/s, and per
    /// CPU-second of the threads doing the work).
    #[arg(long)]
    fabric_only: bool,
    /// `--fabric-only`: requests per path per round.
    #[arg(long, default_value_t = 2_000_000, value_parser = clap::value_parser!(u32).range(1..=1_000_000_000))]
    frames: u32,
    /// `--fabric-only`: the kernel's BPF run-time statistics (ns per
    /// program) on, or off (no clock reads around every program run).
    #[arg(long, value_enum, default_value = "on")]
    bpf_stats: OnOff,
    /// Output folder for xdp-txn.jsonl.
    #[arg(long, default_value = "results/xdp", value_parser = innet_exp::parse::out_dir)]
    out: PathBuf,
}

pub fn run_bench_xdp_txn(a: BenchXdpTxnArgs) -> anyhow::Result<i32> {
    if a.fabric_only {
        return run_fabric_only(a);
    }
    let cfg = TxnExperimentConfig {
        mode: a.mode,
        clients: a.clients,
        write_ratio: a.write_ratio,
        keys: a.keys,
        duration_s: a.duration_s,
        client_delay_ms: a.client_delay_ms,
        store_delay_ms: a.store_delay_ms,
        seed: a.seed,
        fabric: a.fabric.fabric(),
    };
    let (recs, path) = crate::bench::bench_txn(&cfg, a.runs as usize, &innet_exe()?, &a.out)?;
    println!(
        "{} (commit {}, seed {}; {}, load average at the end {:.2})",
        cfg.mode,
        recs[0].git_commit,
        recs[0].seed,
        fabric_line(&cfg.fabric),
        recs.last().map_or(0.0, |r| r.load_average[0])
    );
    print_txn_rounds(&recs);
    let c = &recs[0].ceiling.ceiling;
    println!(
        "generator's ceiling (round 0): {:.0} round trips/s at {} clients ({} B requests answered by xdp_bounce on \
         the switch's client port: the same veth path, answered by the cheapest program there is), p50 {:.0} us",
        c.ops_per_s,
        c.clients,
        innet_exp::txn_client::request_len(),
        c.p50_us
    );
    let ratios = crate::bench::txn_ratios(&recs);
    let median = |f: fn(&(f64, f64, f64)) -> f64| crate::paxos::median(ratios.iter().map(f).collect());
    let (commit, p50, p99) = (median(|r| r.0), median(|r| r.1), median(|r| r.2));
    println!(
        "xdp / software, median of {} rounds: committed/s {commit:.2}x, p50 latency {p50:.2}x, p99 latency {p99:.2}x \
         (per round: {})",
        ratios.len(),
        ratios.iter().map(|r| format!("{:.2}x", r.0)).collect::<Vec<_>>().join(", ")
    );
    println!("wrote {}", path.display());
    Ok(0)
}

/// `innet bench xdp-txn --fabric-only`: the XDP switch alone, fed by the
/// in-kernel generator.
fn run_fabric_only(a: BenchXdpTxnArgs) -> anyhow::Result<i32> {
    let (recs, path) = crate::fabric::txn_fabric_only(
        a.fabric,
        &innet_exe()?,
        a.runs as usize,
        a.frames,
        a.bpf_stats == OnOff::On,
        &a.out,
    )?;
    super::print_fabric_only(&recs, "decisions");
    println!("wrote {}", path.display());
    Ok(0)
}

/// The table of `bench xdp-txn`: one line per round and data plane.
fn print_txn_rounds(recs: &[crate::bench::TxnRecord]) {
    println!(
        "{:>3} {:<16} {:>12} {:>8} {:>9} {:>9} {:>16} {:>15} {:>10} {:>9} {:>12}",
        "run",
        "data plane",
        "committed/s",
        "p50_ms",
        "p99_ms",
        "gave_up",
        "aborts_by_switch",
        "aborts_by_store",
        "cpu_us/txn",
        "busy_cpus",
        "of_ceiling"
    );
    for r in recs {
        println!(
            "{:>3} {:<16} {:>12.0} {:>8.3} {:>9.3} {:>9} {:>16} {:>15} {:>10.1} {:>9.2} {:>11.0}%{}",
            r.run,
            innet_xdp::bench::txn_plane_name(r.data_plane),
            r.num("committed_per_s"),
            r.num("p50_latency_ms"),
            r.num("p99_latency_ms"),
            r.num("gave_up"),
            r.num("aborts_by_switch"),
            r.num("aborts_by_store"),
            r.cpu.machine_us,
            r.cpu.busy_cpus,
            r.ceiling.of_ceiling * 1e2,
            if r.ceiling.generator_bound { " (generator-bound)" } else { "" }
        );
    }
}
