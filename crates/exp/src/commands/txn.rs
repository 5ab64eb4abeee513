//! The transaction experiment's commands: `innet sim txn`, `innet bench
//! txn` (Figure 7's sweep), `innet check txn`, and `innet demo`.

use crate::parse::Seeds;
use std::path::PathBuf;
use std::time::Instant;

use crate::txn::{TxnPointConfig, TxnPointResult};
use crate::txn_bench::{self, Runtime};
use crate::txn_sim;
use clap::Args;
use innet_txn::Mode;

#[derive(Args, Debug)]
pub struct BenchTxnArgs {
    /// Where to run: the simulator (default) or live over UDP on loopback.
    #[arg(long, value_enum, default_value = "sim")]
    pub runtime: Runtime,
    /// Comma-separated modes to compare.
    #[arg(long, value_delimiter = ',', default_value = "forward,read-cache,early-abort,optimistic-abort", value_parser = crate::parse::mode())]
    pub modes: Vec<Mode>,
    /// Comma-separated write ratios.
    #[arg(long, value_delimiter = ',', default_value = "0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1", value_parser = crate::parse::ratio)]
    pub write_ratios: Vec<f64>,
    /// Output folder for txn.jsonl and txn-figure7.png (with --figure: for
    /// that figure's records and plot).
    #[arg(long, value_parser = crate::parse::out_dir)]
    pub out: Option<PathBuf>,
    /// Instead of Figure 7's sweep, one of Gotthard's other microbenchmark
    /// figures or NOCC's Figures 1, 3 and 4 at the papers' parameters
    /// (docs/txn.md): fig2, fig6, fig8, fig9, fig10, fig11, fig12, nocc1,
    /// nocc3 or nocc4. Of the point flags only --seed applies.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(TXN_FIGURES))]
    pub figure: Option<String>,
    /// With --figure: run size (1.0: the sizes docs/txn.md gives; smaller
    /// is quicker and noisier).
    #[arg(long, default_value_t = 1.0, value_parser = crate::parse::run_scale)]
    pub scale: f64,
    #[command(flatten)]
    pub point: TxnPointConfig,
}

/// Every figure `innet bench txn --figure` regenerates.
pub const TXN_FIGURES: [&str; 10] =
    ["fig2", "fig6", "fig8", "fig9", "fig10", "fig11", "fig12", "nocc1", "nocc3", "nocc4"];

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Output folder.
    #[arg(long, default_value = "results/demo", value_parser = crate::parse::out_dir)]
    out: PathBuf,
    /// Simulated seconds per point (the paper ran 180).
    #[arg(long, default_value_t = 180.0, value_parser = crate::parse::seconds)]
    duration_s: f64,
    /// Seeds for the correctness check part of the demo.
    #[arg(long, default_value_t = 100, value_parser = crate::parse::check_seeds)]
    check_seeds: u64,
}

/// Gotthard Figure 7's write ratios (`innet demo`; `--write-ratios`' default).
const FIG7_RATIOS: [f64; 11] = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];

pub fn run_sim(point: TxnPointConfig, json: bool) -> anyhow::Result<i32> {
    let cfg = point.resolved().map_err(anyhow::Error::msg)?;
    let r = txn_sim::run_point_sim(&cfg)?;
    if json {
        println!("{}", serde_json::to_string(&r)?);
    } else {
        println!(
            "{} write_ratio={} clients={}: {:.1} committed/s, latency mean {:.1} ms p99 {:.1} ms, aborts switch {} store {}, \
             {:.0}x real time (seed {})",
            cfg.mode,
            cfg.write_ratio,
            cfg.clients,
            r.committed_per_s,
            r.mean_latency_ms,
            r.p99_latency_ms,
            r.aborts_by_switch,
            r.aborts_by_store,
            r.speedup.unwrap_or(0.0),
            cfg.seed
        );
        for (name, c) in &r.per_node {
            let line: Vec<String> = c.iter().filter(|(_, v)| **v > 0).map(|(k, v)| format!("{k} {v}")).collect();
            println!("  {name}: {}", line.join(", "));
        }
    }
    Ok(0)
}

fn table_header() {
    println!(
        "{:<17} {:>6} {:>12} {:>10} {:>10} {:>12} {:>11}",
        "mode", "writes", "committed/s", "mean ms", "p99 ms", "aborts@sw", "aborts@store"
    );
}

fn table_row(r: &TxnPointResult) {
    println!(
        "{:<17} {:>6.2} {:>12.1} {:>10.1} {:>10.1} {:>12} {:>11}",
        r.config.mode,
        r.config.write_ratio,
        r.committed_per_s,
        r.mean_latency_ms,
        r.p99_latency_ms,
        r.aborts_by_switch,
        r.aborts_by_store
    );
}

fn sweep(
    runtime: Runtime,
    base: &TxnPointConfig,
    modes: &[Mode],
    ratios: &[f64],
) -> anyhow::Result<Vec<TxnPointResult>> {
    table_header();
    txn_bench::sweep(runtime, base, modes, ratios, table_row)
}

fn finish_sweep(rs: &[TxnPointResult], out: &std::path::Path) -> anyhow::Result<()> {
    for (w, x, paper) in txn_bench::headline_ratios(rs) {
        println!("optimistic-abort / read-cache committed/s at write ratio {w}: {x:.2}x (paper: {paper}x)");
    }
    let (jsonl, png) = txn_bench::write_results(out, rs)?;
    println!("wrote {} and {}", jsonl.display(), png.display());
    Ok(())
}

pub fn run_bench(a: BenchTxnArgs) -> anyhow::Result<i32> {
    let mut base = a.point.clone().resolved().map_err(anyhow::Error::msg)?;
    let defaults = TxnPointConfig::default();
    if a.runtime == Runtime::Live && a.point.duration_s == defaults.duration_s && a.point.rtt_ms == defaults.rtt_ms {
        // Live runs take real time: default to a short, nearer deployment.
        base.rtt_ms = 20.0;
        base.duration_s = 10.0;
        println!("live runtime: using RTT 20 ms and 10 s per point (set --rtt-ms/--duration-s to change)");
    }
    let modes = a.modes.clone();
    let ratios = a.write_ratios;
    let rs = sweep(a.runtime, &base, &modes, &ratios)?;
    let out = a.out.unwrap_or_else(|| PathBuf::from(format!("results/txn-{}", a.runtime.name())));
    crate::results::check_writable(&out).map_err(anyhow::Error::msg)?;
    finish_sweep(&rs, &out)?;
    if a.runtime == Runtime::Live {
        // The generator's ceiling: the batched generator at the same
        // concurrency against a bare UDP echo on loopback, in this run.
        let cfg = innet_bench::loadgen::LoadConfig::new(
            base.clients,
            vec![std::net::SocketAddr::from(([127, 0, 0, 1], 9))],
            std::time::Duration::from_secs_f64(base.duration_s.clamp(0.5, 3.0)),
        );
        let c = innet_bench::loadgen::ceiling(&cfg, crate::txn_client::request_len())?;
        let best = rs.iter().map(|r| r.committed_per_s).fold(0.0, f64::max);
        println!(
            "generator's ceiling: {:.0} round trips/s at {} clients (a bare UDP echo on loopback); the highest \
             point, {:.0} committed/s, is {:.1}% of it{}",
            c.ops_per_s,
            base.clients,
            best,
            best / c.ops_per_s.max(1e-9) * 1e2,
            if innet_bench::loadgen::generator_bound(best, c.ops_per_s) { " (generator-bound)" } else { "" }
        );
    }
    Ok(0)
}

/// Runs the checker over `seeds` and prints what it found; the number of
/// violations.
fn check_seeds(seeds: Seeds, modes: &[Mode], duration_s: f64, verbose: bool) -> anyhow::Result<usize> {
    let r = txn_bench::check_seeds(seeds, modes, duration_s, |run| {
        if verbose {
            println!("{}", serde_json::to_string(&run.config).unwrap_or_default());
            println!("network: {:?}", run.net);
        }
    })?;
    for v in &r.violations {
        if v.nondeterminism {
            println!("NONDETERMINISM seed {} mode {}:", v.seed, v.mode);
            for e in &v.errors {
                println!("  {e}");
            }
        } else {
            println!("VIOLATION seed {} mode {}:", v.seed, v.mode);
            for e in v.errors.iter().take(if verbose { usize::MAX } else { 5 }) {
                println!("  {e}");
            }
        }
        println!("  replay: {}", v.replay);
    }
    println!(
        "checked {} runs ({} seeds x {} modes, {} s simulated each, loss/dup/reorder/jitter on, \
         {} on multi-switch trees) in {:.1} s: {} client commits, {} store commits, {} switch answers, {} client-seen aborts verified; {} violations",
        r.runs,
        r.seeds,
        r.modes,
        r.duration_s,
        r.trees,
        r.wall_seconds,
        r.commits,
        r.sums.store_commits,
        r.sums.switch_answers_checked,
        r.sums.client_aborts_checked,
        r.violations.len(),
    );
    Ok(r.violations.len())
}

pub fn run_check(a: super::CheckModesArgs) -> anyhow::Result<i32> {
    let modes = a.modes;
    let (range, verbose) = a.seeds.range(super::CHECK_SEEDS);
    let bad = check_seeds(range, &modes, a.duration_s, verbose)?;
    Ok(if bad == 0 { 0 } else { 1 })
}

pub fn run_demo(a: DemoArgs) -> anyhow::Result<i32> {
    println!("innet demo: the headline experiment of each service in the simulator.\n");
    println!("1. Transactions: Gotthard Figure 7 (RTT 100 ms, delta 0.2, 8 clients, one counter key,");
    println!("{} simulated seconds per point), then a serializability check under faults.\n", a.duration_s);
    let base = TxnPointConfig { duration_s: a.duration_s, ..TxnPointConfig::default() };
    let ratios = FIG7_RATIOS;
    let started = Instant::now();
    let rs = sweep(Runtime::Sim, &base, &Mode::ALL, &ratios)?;
    let simulated: f64 = rs.iter().map(|r| r.run_seconds).sum();
    println!(
        "\n{} points, {simulated:.0} simulated seconds in {:.1} wall seconds",
        rs.len(),
        started.elapsed().as_secs_f64()
    );
    finish_sweep(&rs, &a.out)?;
    println!();
    let bad = check_seeds(Seeds { first: 1, count: a.check_seeds }, &Mode::ALL, 5.0, false)?;

    let out = a.out.display();
    println!("\n2. Chain replication: NetCRAQ vs NetChain, Figures 3 and 6 (shared-CPU switch model)\n");
    let chain = demo_args::<super::chain::BenchChainArgs>(&["--figures", "3,6", "--out", &format!("{out}/chain")])?;
    let chain_code = super::chain::run_bench(chain)?;

    println!("\n3. Consensus (CAANS): Figures 7a/7b, Table 4 and Figure 8, switch vs software deployment\n");
    let paxos = demo_args::<super::paxos::BenchPaxosArgs>(&["--out", &format!("{out}/paxos")])?;
    let paxos_code = super::paxos::run_bench(paxos)?;
    println!("\nAll 26 results of the four papers, each beside the paper's numbers: innet reproduce");
    Ok(if bad == 0 && chain_code == 0 && paxos_code == 0 { 0 } else { 1 })
}

/// A subcommand's arguments parsed from `argv`, as if typed after it.
fn demo_args<A: Args>(argv: &[&str]) -> anyhow::Result<A> {
    #[derive(clap::Parser)]
    struct Wrap<A: Args> {
        #[command(flatten)]
        args: A,
    }
    let parsed = <Wrap<A> as clap::Parser>::try_parse_from(std::iter::once("innet").chain(argv.iter().copied()))?;
    Ok(parsed.args)
}
