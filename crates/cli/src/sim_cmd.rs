//! Experiment commands: `innet demo`, `innet sim`, `innet bench`, `innet check`.

use innet_exp::parse::Seeds;
use std::path::PathBuf;
use std::time::Instant;

use clap::{Args, Subcommand};
use innet_exp::txn::{TxnPointConfig, TxnPointResult};
use innet_exp::txn_bench::{self, Runtime};
use innet_exp::txn_sim;
use innet_txn::Mode;

#[derive(Subcommand, Debug)]
pub enum SimService {
    /// One point of the transaction experiment (Gotthard section 5.3).
    Txn {
        #[command(flatten)]
        point: TxnPointConfig,
        /// Print one JSON object instead of a sentence.
        #[arg(long)]
        json: bool,
    },
    /// One point of the chain experiment (NetCRAQ or NetChain, open-loop load, switch service model).
    Chain(crate::chain_cmd::SimChainArgs),
    /// One run of the consensus service (CAANS).
    Paxos(crate::paxos_cmd::SimPaxosArgs),
}

#[derive(Args, Debug)]
pub struct BenchTxnArgs {
    /// Where to run: the simulator (default) or live over UDP on loopback.
    #[arg(long, value_enum, default_value = "sim")]
    runtime: Runtime,
    /// Comma-separated modes to compare.
    #[arg(long, default_value = "forward,read-cache,early-abort,optimistic-abort")]
    modes: String,
    /// Comma-separated write ratios.
    #[arg(long, default_value = "0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1")]
    write_ratios: String,
    /// Output folder for txn.jsonl and txn-figure7.png (with --figure: for
    /// that figure's records and plot).
    #[arg(long, value_parser = innet_exp::parse::out_dir)]
    out: Option<PathBuf>,
    /// Instead of Figure 7's sweep, one of Gotthard's other microbenchmark
    /// figures or NOCC's Figures 1, 3 and 4 at the papers' parameters
    /// (docs/txn.md): fig2, fig6, fig8, fig9, fig10, fig11, fig12, nocc1,
    /// nocc3 or nocc4. Of the point flags only --seed applies.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(TXN_FIGURES))]
    figure: Option<String>,
    /// With --figure: run size (1.0: the sizes docs/txn.md gives; smaller
    /// is quicker and noisier).
    #[arg(long, default_value_t = 1.0, value_parser = innet_exp::parse::run_scale)]
    scale: f64,
    #[command(flatten)]
    point: TxnPointConfig,
}

/// Every figure `innet bench txn --figure` regenerates.
const TXN_FIGURES: [&str; 10] = ["fig2", "fig6", "fig8", "fig9", "fig10", "fig11", "fig12", "nocc1", "nocc3", "nocc4"];

/// A figure of `txn_locality` that `innet bench txn --figure` regenerates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TxnFigure {
    /// Gotthard Figure 11: throughput vs locality on two edge switches under a core.
    Fig11,
    /// NOCC Figure 3: aborts the store sends, and latency vs load.
    Nocc3,
    /// NOCC Figure 4: throughput and latency vs write ratio, and vs Zipf skew.
    Nocc4,
}

impl TxnFigure {
    /// Its `innet reproduce` id.
    pub fn id(self) -> &'static str {
        match self {
            TxnFigure::Fig11 => "gotthard-fig11",
            TxnFigure::Nocc3 => "nocc-fig3",
            TxnFigure::Nocc4 => "nocc-fig4",
        }
    }
}

/// Runs one figure into `out/<id>/` and prints its records, plot and the
/// paper's numbers beside ours.
fn run_txn_figure(f: TxnFigure, seed: u64, scale: f64, out: Option<PathBuf>) -> anyhow::Result<i32> {
    let out = out.unwrap_or_else(|| PathBuf::from("results/txn-figures"));
    let ctx = innet_reproduce::Ctx {
        out: innet_reproduce::result_dir(&out, f.id()),
        seed,
        scale,
        runtime: innet_reproduce::Where::Sim,
    };
    let started = Instant::now();
    let o = innet_reproduce::txn_locality::run_by_id(f.id(), &ctx)?;
    println!("{} ({:.1} s wall): {}", f.id(), started.elapsed().as_secs_f64(), o.config);
    for c in &o.claims {
        let paper = c.paper.map_or("-".to_string(), |p| format!("{p}"));
        println!(
            "  {}: ours {:.3} {}, paper {} ({}); {} by rule: {}",
            c.what,
            c.ours,
            c.unit,
            paper,
            c.paper_text,
            if c.holds { "holds" } else { "DOES NOT HOLD" },
            c.rule
        );
    }
    if let Some(why) = &o.why {
        println!("  why: {why}");
    }
    for p in o.records.iter().chain(&o.plots) {
        println!("wrote {}", p.display());
    }
    Ok(0)
}

#[derive(Subcommand, Debug)]
pub enum BenchService {
    /// The write-ratio sweep of Gotthard Figure 7 (committed/s and latency per mode).
    Txn(BenchTxnArgs),
    /// Round trip of an optimistically aborted transaction through the XDP
    /// switch, a bare XDP bounce, the user-space software switch and a bare
    /// UDP echo, side by side on the testbed (needs root).
    Xdp(crate::xdp_cmd::BenchXdpArgs),
    /// The transaction experiment (closed-loop clients) through the XDP
    /// switch and through the software switch, side by side on the testbed
    /// (needs root).
    XdpTxn(crate::xdp_cmd::BenchXdpTxnArgs),
    /// The NetCRAQ paper's Figures 3-6 (NetCRAQ and NetChain side by side) in the simulator.
    Chain(crate::chain_cmd::BenchChainArgs),
    /// The live NetCRAQ chain (3 nodes, in memory) beside etcd 3.4 (3
    /// members on loopback, data on disk and on tmpfs), both started by the
    /// benchmark: puts and linearizable gets at equal clients, with the load
    /// generator's ceiling.
    ChainEtcd(crate::chain_cmd::BenchChainEtcdArgs),
    /// Request round trip and rate through the XDP chain, a bare XDP bounce
    /// and the user-space software switch chain, side by side (needs root).
    XdpChain(crate::xdp_chain_cmd::BenchXdpChainArgs),
    /// CAANS end to end: coordinator and acceptors in XDP on the testbed vs
    /// user-space processes vs software switches, side by side (needs root).
    XdpPaxos(crate::xdp_paxos_cmd::BenchXdpPaxosArgs),
    /// CAANS Table 1: ns per packet of the XDP coordinator and acceptor
    /// against plain XDP forwarding (BPF_PROG_TEST_RUN; needs root).
    XdpPaxosTable1(crate::xdp_paxos_cmd::BenchTable1Args),
    /// Decided Paxos instances from an XDP program to a user-space learner:
    /// one datagram each (today), batch datagrams, a BPF ring buffer, an
    /// AF_XDP socket; in-kernel and socket senders (needs root).
    XdpUpcall(crate::xdp_upcall_cmd::BenchXdpUpcallArgs),
    /// The end hosts of a running `innet testbed up paxos` (learners, load
    /// proposers; run it in the hosts namespace: `ip netns exec innet-px-hosts
    /// innet bench xdp-paxos-hosts ...`), printing one JSON result line;
    /// `--backup only` runs just the backup coordinator until SIGTERM (the
    /// process `testbed up paxos` starts).
    XdpPaxosHosts(crate::xdp_paxos_cmd::XdpPaxosHostsArgs),
    /// CAANS Figures 7a/7b, Table 4 and Figure 8, switch and software deployments side by side.
    Paxos(crate::paxos_cmd::BenchPaxosArgs),
    /// TPC-C at the papers' reduced scale, per transaction type and mode (Gotthard Figure 13).
    Tpcc(crate::tpcc_cmd::BenchTpccArgs),
}

#[derive(Args, Debug)]
pub struct CheckTxnArgs {
    /// How many random seeds to run (each in every mode).
    #[arg(long, default_value_t = 100, value_parser = innet_exp::parse::check_seeds)]
    seeds: u64,
    /// First seed.
    #[arg(long, default_value_t = 1)]
    start_seed: u64,
    /// Replay just this seed (prints the configuration and every violation).
    #[arg(long)]
    seed: Option<u64>,
    /// Comma-separated modes.
    #[arg(long, default_value = "forward,read-cache,early-abort,optimistic-abort")]
    modes: String,
    /// Simulated seconds per run.
    #[arg(long, default_value_t = 5.0, value_parser = innet_exp::parse::seconds)]
    duration_s: f64,
}

#[derive(Subcommand, Debug)]
pub enum CheckService {
    /// Random runs with loss, duplication, jitter and reordering through the serializability checker.
    Txn(CheckTxnArgs),
    /// Random NetCRAQ and NetChain runs with loss, reordering, node crashes and recovery through the linearizability checker.
    Chain(crate::chain_cmd::CheckChainArgs),
    /// Random runs with loss, duplication, reordering, acceptor crashes and coordinator failover
    /// through the agreement / validity / exactly-once checker.
    Paxos(crate::paxos_cmd::CheckPaxosArgs),
    /// Random faulty TPC-C runs through the serializability checker and TPC-C's consistency conditions.
    Tpcc(crate::tpcc_cmd::CheckTpccArgs),
}

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Output folder.
    #[arg(long, default_value = "results/demo", value_parser = innet_exp::parse::out_dir)]
    out: PathBuf,
    /// Simulated seconds per point (the paper ran 180).
    #[arg(long, default_value_t = 180.0, value_parser = innet_exp::parse::seconds)]
    duration_s: f64,
    /// Seeds for the correctness check part of the demo.
    #[arg(long, default_value_t = 100, value_parser = innet_exp::parse::check_seeds)]
    check_seeds: u64,
}

/// A comma-separated list of names (modes, protocols); blanks are skipped.
pub(crate) fn parse_list<T: std::str::FromStr<Err = String>>(s: &str) -> anyhow::Result<Vec<T>> {
    s.split(',').filter(|x| !x.trim().is_empty()).map(|m| m.trim().parse::<T>().map_err(anyhow::Error::msg)).collect()
}

fn parse_ratios(s: &str) -> anyhow::Result<Vec<f64>> {
    s.split(',').map(|x| innet_exp::parse::ratio(x).map_err(|e| anyhow::anyhow!("--write-ratios: {e}"))).collect()
}

pub fn run_sim(s: SimService) -> anyhow::Result<i32> {
    let (point, json) = match s {
        SimService::Txn { point, json } => (point, json),
        SimService::Chain(a) => return crate::chain_cmd::run_sim(a),
        SimService::Paxos(a) => return crate::paxos_cmd::run_sim(a),
    };
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

pub fn run_bench(s: BenchService) -> anyhow::Result<i32> {
    let a = match s {
        BenchService::Txn(a) => a,
        BenchService::Xdp(a) => return crate::xdp_cmd::run_bench_xdp(a),
        BenchService::XdpTxn(a) => return crate::xdp_cmd::run_bench_xdp_txn(a),
        BenchService::Chain(a) => return crate::chain_cmd::run_bench(a),
        BenchService::ChainEtcd(a) => return crate::chain_cmd::run_bench_etcd(a),
        BenchService::XdpChain(a) => return crate::xdp_chain_cmd::run(a),
        BenchService::XdpPaxos(a) => return crate::xdp_paxos_cmd::run_bench(a),
        BenchService::XdpPaxosTable1(a) => return crate::xdp_paxos_cmd::run_table1(a),
        BenchService::XdpUpcall(a) => return crate::xdp_upcall_cmd::run(a),
        BenchService::XdpPaxosHosts(a) => return crate::xdp_paxos_cmd::run_hosts(a),
        BenchService::Paxos(a) => return crate::paxos_cmd::run_bench(a),
        BenchService::Tpcc(a) => return crate::tpcc_cmd::run_bench(a),
    };
    if let Some(name) = &a.figure {
        return run_figure(name, &a);
    }
    let mut base = a.point.clone().resolved().map_err(anyhow::Error::msg)?;
    let defaults = TxnPointConfig::default();
    if a.runtime == Runtime::Live && a.point.duration_s == defaults.duration_s && a.point.rtt_ms == defaults.rtt_ms {
        // Live runs take real time: default to a short, nearer deployment.
        base.rtt_ms = 20.0;
        base.duration_s = 10.0;
        println!("live runtime: using RTT 20 ms and 10 s per point (set --rtt-ms/--duration-s to change)");
    }
    let modes: Vec<Mode> = parse_list(&a.modes)?;
    let ratios = parse_ratios(&a.write_ratios)?;
    let rs = sweep(a.runtime, &base, &modes, &ratios)?;
    let out = a.out.unwrap_or_else(|| PathBuf::from(format!("results/txn-{}", a.runtime.name())));
    innet_exp::results::check_writable(&out).map_err(anyhow::Error::msg)?;
    finish_sweep(&rs, &out)?;
    if a.runtime == Runtime::Live {
        // The generator's ceiling: the batched generator at the same
        // concurrency against a bare UDP echo on loopback, in this run.
        let cfg = innet_bench::loadgen::LoadConfig::new(
            base.clients,
            vec![std::net::SocketAddr::from(([127, 0, 0, 1], 9))],
            std::time::Duration::from_secs_f64(base.duration_s.clamp(0.5, 3.0)),
        );
        let c = innet_bench::loadgen::ceiling(&cfg, innet_exp::txn_client::request_len())?;
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

/// `innet bench txn --figure NAME`: one microbenchmark figure in the
/// simulator, its claims beside the paper's.
fn run_figure(name: &str, a: &BenchTxnArgs) -> anyhow::Result<i32> {
    use innet_reproduce::gotthard_micro;
    use innet_reproduce::{Ctx, Where};
    anyhow::ensure!(a.runtime == Runtime::Sim, "--figure runs in the simulator only (drop --runtime live)");
    if let Ok(f) = <TxnFigure as clap::ValueEnum>::from_str(name, true) {
        return run_txn_figure(f, a.point.seed, a.scale, a.out.clone());
    }
    let entry = gotthard_micro::by_figure_name(name)
        .ok_or_else(|| anyhow::anyhow!("--figure {name}: not one of {}", TXN_FIGURES.join(", ")))?;
    let out = a.out.clone().unwrap_or_else(|| PathBuf::from(format!("results/txn-sim/{}", entry.id)));
    innet_exp::results::check_writable(&out).map_err(anyhow::Error::msg)?;
    let ctx = Ctx { out: out.clone(), seed: a.point.seed, scale: a.scale, runtime: Where::Sim };
    let started = Instant::now();
    let o = (entry.run)(&ctx)?;
    gotthard_micro::print_outcome(&entry, &o, &out);
    println!("  {:.1} s wall", started.elapsed().as_secs_f64());
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
            println!("NONDETERMINISM seed {} mode {}: trace hashes differ", v.seed, v.mode);
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

pub fn run_check(s: CheckService) -> anyhow::Result<i32> {
    let a = match s {
        CheckService::Txn(a) => a,
        CheckService::Chain(a) => return crate::chain_cmd::run_check(a),
        CheckService::Paxos(a) => return crate::paxos_cmd::run_check(a),
        CheckService::Tpcc(a) => return crate::tpcc_cmd::run_check(a),
    };
    let modes: Vec<Mode> = parse_list(&a.modes)?;
    let (range, verbose) = match a.seed {
        Some(s) => (Seeds::one(s), true),
        None => (Seeds { first: a.start_seed, count: a.seeds }, false),
    };
    let bad = check_seeds(range, &modes, a.duration_s, verbose)?;
    Ok(if bad == 0 { 0 } else { 1 })
}

pub fn run_demo(a: DemoArgs) -> anyhow::Result<i32> {
    println!("innet demo: the headline experiment of each service in the simulator.\n");
    println!("1. Transactions: Gotthard Figure 7 (RTT 100 ms, delta 0.2, 8 clients, one counter key,");
    println!("{} simulated seconds per point), then a serializability check under faults.\n", a.duration_s);
    let base = TxnPointConfig { duration_s: a.duration_s, ..TxnPointConfig::default() };
    let ratios = parse_ratios("0,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1")?;
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
    let chain = demo_args::<crate::chain_cmd::BenchChainArgs>(&["--figures", "3,6", "--out", &format!("{out}/chain")])?;
    let chain_code = crate::chain_cmd::run_bench(chain)?;

    println!("\n3. Consensus (CAANS): Figures 7a/7b, Table 4 and Figure 8, switch vs software deployment\n");
    let paxos = demo_args::<crate::paxos_cmd::BenchPaxosArgs>(&["--out", &format!("{out}/paxos")])?;
    let paxos_code = crate::paxos_cmd::run_bench(paxos)?;
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
