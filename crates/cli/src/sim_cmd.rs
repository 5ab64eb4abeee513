//! Experiment commands: `innet demo`, `innet sim`, `innet bench`, `innet check`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use innet_exp::txn::{TxnPointConfig, TxnPointResult};
use innet_exp::{plot, results, txn_live, txn_sim};
use innet_txn::Mode;

/// The knobs of one transaction experiment point (defaults: Gotthard Table 2).
#[derive(Args, Debug, Clone)]
pub struct TxnPointArgs {
    /// Switch mode: forward, read-cache, early-abort or optimistic-abort.
    #[arg(long, default_value = "optimistic-abort")]
    mode: String,
    /// Fraction of transactions that increment the counter (0..=1).
    #[arg(long, default_value_t = 0.2)]
    write_ratio: f64,
    /// Concurrent closed-loop clients.
    #[arg(long, default_value_t = 8)]
    clients: u32,
    /// Number of counters (keys 1..=N).
    #[arg(long, default_value_t = 1)]
    keys: u32,
    /// Zipf exponent of key popularity (0 = uniform).
    #[arg(long, default_value_t = 0.0)]
    zipf: f64,
    /// Most keys one transaction touches.
    #[arg(long, default_value_t = 1)]
    span: u32,
    /// Fraction of reads run as compare-only transactions instead of READ ops (paper: 0).
    #[arg(long, default_value_t = 0.0)]
    validated_reads: f64,
    /// Client-store round-trip time in ms.
    #[arg(long, default_value_t = 100.0)]
    rtt_ms: f64,
    /// Switch position: d_cs / (d_cs + d_ss); 0 = next to the clients.
    #[arg(long, default_value_t = 0.2)]
    delta: f64,
    /// Length of the run (simulated seconds in the simulator).
    #[arg(long, default_value_t = 180.0)]
    duration_s: f64,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Client think time between transactions, ms.
    #[arg(long, default_value_t = 0.0)]
    think_ms: f64,
    /// Switch cache slots (power of two).
    #[arg(long, default_value_t = innet_txn::switch::CACHE_SLOTS_DEFAULT)]
    cache_slots: usize,
    /// Simulator link jitter, ms (uniform extra one-way delay).
    #[arg(long, default_value_t = 0.0)]
    jitter_ms: f64,
    /// Simulator per-packet loss probability.
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// Simulator per-packet duplication probability.
    #[arg(long, default_value_t = 0.0)]
    duplicate: f64,
    /// Simulator per-packet reordering probability.
    #[arg(long, default_value_t = 0.0)]
    reorder: f64,
    /// Client resend timeout in ms (0: 4 x RTT + 50 ms).
    #[arg(long, default_value_t = 0.0)]
    timeout_ms: f64,
    /// Attempts per transaction before the client gives up.
    #[arg(long, default_value_t = 1000)]
    retry_limit: u32,
    /// 0: one switch (Gotthard Figure 3); N >= 2: N edge switches, each in front of its share of the clients, under a core switch at the store (Figure 4).
    #[arg(long, default_value_t = 0)]
    edge_switches: u32,
    /// Run on this topology file's deployment (docs/live.md) instead of --clients/--rtt-ms/--delta/--mode/--edge-switches.
    #[arg(long)]
    topology: Option<PathBuf>,
}

impl TxnPointArgs {
    fn config(&self) -> anyhow::Result<TxnPointConfig> {
        let c = TxnPointConfig {
            mode: self.mode.clone(),
            write_ratio: self.write_ratio,
            clients: self.clients,
            keys: self.keys,
            zipf: self.zipf,
            span: self.span,
            validated_reads: self.validated_reads,
            rtt_ms: self.rtt_ms,
            delta: self.delta,
            duration_s: self.duration_s,
            seed: self.seed,
            think_ms: self.think_ms,
            cache_slots: self.cache_slots,
            jitter_ms: self.jitter_ms,
            loss: self.loss,
            duplicate: self.duplicate,
            reorder: self.reorder,
            timeout_ms: self.timeout_ms,
            retry_limit: self.retry_limit,
            edge_switches: self.edge_switches,
            topology: self.topology.as_ref().map(|p| p.display().to_string()),
        };
        let d = c.deployment().map_err(anyhow::Error::msg)?;
        // The record says how many clients actually ran.
        let clients = d.with_role(|r| r.is_client()).len() as u32;
        Ok(TxnPointConfig { clients, ..c })
    }
}

#[derive(Subcommand, Debug)]
pub enum SimService {
    /// One point of the transaction experiment (Gotthard section 5.3).
    Txn {
        #[command(flatten)]
        point: TxnPointArgs,
        /// Print one JSON object instead of a sentence.
        #[arg(long)]
        json: bool,
    },
    /// One point of the chain experiment (NetCRAQ or NetChain, open-loop load, switch service model).
    Chain(crate::chain_cmd::SimChainArgs),
    /// One run of the consensus service (CAANS).
    Paxos(crate::paxos_cmd::SimPaxosArgs),
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum Runtime {
    Sim,
    Live,
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
    /// Output folder for txn.jsonl and txn-figure7.png.
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    point: TxnPointArgs,
}

#[derive(Subcommand, Debug)]
pub enum BenchService {
    /// The write-ratio sweep of Gotthard Figure 7 (committed/s and latency per mode).
    Txn(BenchTxnArgs),
    /// Round trip of an optimistically aborted transaction through the XDP
    /// switch, a bare XDP bounce and the user-space software switch, side by
    /// side on the testbed (needs root).
    Xdp(crate::xdp_cmd::BenchXdpArgs),
    /// The transaction experiment (closed-loop clients) through the XDP
    /// switch and through the software switch, side by side on the testbed
    /// (needs root).
    XdpTxn(crate::xdp_cmd::BenchXdpTxnArgs),
    /// The client half of `bench xdp`, run inside the client namespace.
    #[command(hide = true)]
    XdpProbe(crate::xdp_cmd::ProbeArgs),
    /// The NetCRAQ paper's Figures 3-6 (NetCRAQ and NetChain side by side) in the simulator.
    Chain(crate::chain_cmd::BenchChainArgs),
    /// Request round trip and rate through the XDP chain, a bare XDP bounce
    /// and the user-space software switch chain, side by side (needs root).
    XdpChain(crate::xdp_chain_cmd::BenchXdpChainArgs),
    /// CAANS end to end: coordinator and acceptors in XDP on the testbed vs
    /// user-space processes vs software switches, side by side (needs root).
    XdpPaxos(crate::xdp_paxos_cmd::BenchXdpPaxosArgs),
    /// The end-host half of `bench xdp-paxos`, run inside the hosts namespace.
    #[command(hide = true)]
    XdpPaxosHosts(crate::xdp_paxos_cmd::XdpPaxosHostsArgs),
    /// CAANS Figures 7a/7b, Table 4 and Figure 8, switch and software deployments side by side.
    Paxos(crate::paxos_cmd::BenchPaxosArgs),
}

#[derive(Args, Debug)]
pub struct CheckTxnArgs {
    /// How many random seeds to run (each in every mode).
    #[arg(long, default_value_t = 100)]
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
    #[arg(long, default_value_t = 5.0)]
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
}

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Output folder.
    #[arg(long, default_value = "results/demo")]
    out: PathBuf,
    /// Simulated seconds per point (the paper ran 180).
    #[arg(long, default_value_t = 180.0)]
    duration_s: f64,
    /// Seeds for the correctness check part of the demo.
    #[arg(long, default_value_t = 100)]
    check_seeds: u64,
}

/// A comma-separated list of names (modes, protocols); blanks are skipped.
pub(crate) fn parse_list<T: std::str::FromStr<Err = String>>(s: &str) -> anyhow::Result<Vec<T>> {
    s.split(',').filter(|x| !x.trim().is_empty()).map(|m| m.trim().parse::<T>().map_err(anyhow::Error::msg)).collect()
}

fn parse_modes(s: &str) -> anyhow::Result<Vec<Mode>> {
    parse_list(s)
}

fn parse_ratios(s: &str) -> anyhow::Result<Vec<f64>> {
    s.split(',')
        .map(|x| {
            let r: f64 = x.trim().parse().with_context(|| format!("write ratio '{x}' is not a number"))?;
            anyhow::ensure!((0.0..=1.0).contains(&r), "write ratio {r} must be in 0..=1");
            Ok(r)
        })
        .collect()
}

pub fn run_sim(s: SimService) -> anyhow::Result<i32> {
    let (point, json) = match s {
        SimService::Txn { point, json } => (point, json),
        SimService::Chain(a) => return crate::chain_cmd::run_sim(a),
        SimService::Paxos(a) => return crate::paxos_cmd::run_sim(a),
    };
    let cfg = point.config()?;
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

/// Runs every (mode, ratio) point, two at a time on the simulator.
fn sweep(
    runtime: Runtime,
    base: &TxnPointConfig,
    modes: &[Mode],
    ratios: &[f64],
) -> anyhow::Result<Vec<TxnPointResult>> {
    let mut configs = vec![];
    for &m in modes {
        for &w in ratios {
            configs.push(TxnPointConfig { mode: m.name().into(), write_ratio: w, ..base.clone() });
        }
    }
    table_header();
    let mut out = Vec::with_capacity(configs.len());
    match runtime {
        Runtime::Live => {
            for c in &configs {
                let r = txn_live::run_point_live(c)?;
                table_row(&r);
                out.push(r);
            }
        }
        Runtime::Sim => {
            let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(4);
            for chunk in configs.chunks(workers) {
                let rs: Vec<anyhow::Result<TxnPointResult>> = std::thread::scope(|s| {
                    let hs: Vec<_> = chunk.iter().map(|c| s.spawn(move || txn_sim::run_point_sim(c))).collect();
                    hs.into_iter().map(|h| h.join().expect("point thread panicked")).collect()
                });
                for r in rs {
                    let r = r?;
                    table_row(&r);
                    out.push(r);
                }
            }
        }
    }
    Ok(out)
}

fn ratio_at(rs: &[TxnPointResult], w: f64, a: Mode, b: Mode) -> Option<f64> {
    let get = |m: Mode| {
        rs.iter()
            .find(|r| r.config.mode == m.name() && (r.config.write_ratio - w).abs() < 1e-9)
            .map(|r| r.committed_per_s)
    };
    Some(get(a)? / get(b)?.max(1e-9))
}

fn write_results(out: &Path, rs: &[TxnPointResult]) -> anyhow::Result<()> {
    std::fs::create_dir_all(out)?;
    let jsonl = out.join("txn.jsonl");
    let _ = std::fs::remove_file(&jsonl);
    results::append_jsonl(&jsonl, rs)?;
    let png = out.join("txn-figure7.png");
    plot::txn_figure7(rs, &png)?;
    println!("wrote {} and {}", jsonl.display(), png.display());
    Ok(())
}

fn print_ratios(rs: &[TxnPointResult]) {
    for w in [0.2, 0.5] {
        if let Some(x) = ratio_at(rs, w, Mode::OptimisticAbort, Mode::ReadCache) {
            let paper = if w == 0.2 { 1.5 } else { 3.3 };
            println!("optimistic-abort / read-cache committed/s at write ratio {w}: {x:.2}x (paper: {paper}x)");
        }
    }
}

pub fn run_bench(s: BenchService) -> anyhow::Result<i32> {
    let a = match s {
        BenchService::Txn(a) => a,
        BenchService::Xdp(a) => return crate::xdp_cmd::run_bench_xdp(a),
        BenchService::XdpTxn(a) => return crate::xdp_cmd::run_bench_xdp_txn(a),
        BenchService::XdpProbe(a) => return crate::xdp_cmd::run_probe(a),
        BenchService::Chain(a) => return crate::chain_cmd::run_bench(a),
        BenchService::XdpChain(a) => return crate::xdp_chain_cmd::run(a),
        BenchService::XdpPaxos(a) => return crate::xdp_paxos_cmd::run_bench(a),
        BenchService::XdpPaxosHosts(a) => return crate::xdp_paxos_cmd::run_hosts(a),
        BenchService::Paxos(a) => return crate::paxos_cmd::run_bench(a),
    };
    let mut base = a.point.config()?;
    if a.runtime == Runtime::Live && a.point.duration_s == 180.0 && a.point.rtt_ms == 100.0 {
        // Live runs take real time: default to a short, nearer deployment.
        base.rtt_ms = 20.0;
        base.duration_s = 10.0;
        println!("live runtime: using RTT 20 ms and 10 s per point (set --rtt-ms/--duration-s to change)");
    }
    let modes = parse_modes(&a.modes)?;
    let ratios = parse_ratios(&a.write_ratios)?;
    let rs = sweep(a.runtime, &base, &modes, &ratios)?;
    print_ratios(&rs);
    let runtime = if a.runtime == Runtime::Sim { "sim" } else { "live" };
    let out = a.out.unwrap_or_else(|| PathBuf::from(format!("results/txn-{runtime}")));
    write_results(&out, &rs)?;
    Ok(0)
}

/// Runs the checker over seeds; returns the number of violating runs.
fn check_seeds(seeds: std::ops::Range<u64>, modes: &[Mode], duration_s: f64, verbose: bool) -> anyhow::Result<u64> {
    let started = Instant::now();
    let mut bad = 0u64;
    let (mut runs, mut commits, mut trees) = (0u64, 0u64, 0u64);
    let mut sums = innet_txn::check::CheckSummary::default();
    for seed in seeds.clone() {
        for &mode in modes {
            let cfg = txn_sim::random_check_config(seed, mode, duration_s);
            let run = txn_sim::run_checked(&cfg).map_err(anyhow::Error::msg)?;
            runs += 1;
            commits += run.committed;
            trees += u64::from(run.config.edge_switches > 0);
            if verbose {
                println!("{}", serde_json::to_string(&run.config)?);
                println!("network: {:?}", run.net);
            }
            match run.result {
                Ok(s) => {
                    sums.store_commits += s.store_commits;
                    sums.switch_answers_checked += s.switch_answers_checked;
                    sums.client_aborts_checked += s.client_aborts_checked;
                }
                Err(errors) => {
                    bad += 1;
                    println!("VIOLATION seed {seed} mode {mode}:");
                    for e in errors.iter().take(if verbose { usize::MAX } else { 5 }) {
                        println!("  {e}");
                    }
                    println!("  replay: innet check txn --seed {seed} --modes {mode} --duration-s {duration_s}");
                }
            }
            // Determinism: the first seed of every mode runs twice.
            if seed == seeds.start {
                let again = txn_sim::run_checked(&cfg).map_err(anyhow::Error::msg)?;
                if again.trace_hash != run.trace_hash {
                    bad += 1;
                    println!("NONDETERMINISM seed {seed} mode {mode}: trace hashes differ");
                    println!("  replay: innet check txn --seed {seed} --modes {mode} --duration-s {duration_s}");
                }
            }
        }
    }
    println!(
        "checked {runs} runs ({} seeds x {} modes, {duration_s} s simulated each, loss/dup/reorder/jitter on, \
         {trees} on multi-switch trees) in {:.1} s: {commits} client commits, {} store commits, {} switch answers, {} client-seen aborts verified; {bad} violations",
        seeds.end - seeds.start,
        modes.len(),
        started.elapsed().as_secs_f64(),
        sums.store_commits,
        sums.switch_answers_checked,
        sums.client_aborts_checked,
    );
    Ok(bad)
}

pub fn run_check(s: CheckService) -> anyhow::Result<i32> {
    let a = match s {
        CheckService::Txn(a) => a,
        CheckService::Chain(a) => return crate::chain_cmd::run_check(a),
        CheckService::Paxos(a) => return crate::paxos_cmd::run_check(a),
    };
    let modes = parse_modes(&a.modes)?;
    anyhow::ensure!(a.duration_s > 0.0, "--duration-s must be > 0");
    let (range, verbose) = match a.seed {
        Some(s) => (s..s + 1, true),
        None => (a.start_seed..a.start_seed + a.seeds, false),
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
    print_ratios(&rs);
    write_results(&a.out, &rs)?;
    println!();
    let bad = check_seeds(1..1 + a.check_seeds, &Mode::ALL, 5.0, false)?;

    let out = a.out.display();
    println!("\n2. Chain replication: NetCRAQ vs NetChain, Figures 3 and 6 (shared-CPU switch model)\n");
    let chain = demo_args::<crate::chain_cmd::BenchChainArgs>(&["--figures", "3,6", "--out", &format!("{out}/chain")])?;
    let chain_code = crate::chain_cmd::run_bench(chain)?;

    println!("\n3. Consensus (CAANS): Figures 7a/7b, Table 4 and Figure 8, switch vs software deployment\n");
    let paxos = demo_args::<crate::paxos_cmd::BenchPaxosArgs>(&["--out", &format!("{out}/paxos")])?;
    let paxos_code = crate::paxos_cmd::run_bench(paxos)?;
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
