//! `innet bench tpcc` (Gotthard Figure 13 in the simulator) and `innet check
//! tpcc` (random faulty TPC-C runs through the serializability checker and
//! TPC-C's consistency conditions).

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use innet_exp::tpcc::Kind;
use innet_exp::tpcc_sim::{self, TpccConfig, TpccResult};
use innet_txn::Mode;

use crate::sim_cmd::parse_list;

#[derive(Args, Debug)]
pub struct BenchTpccArgs {
    /// Comma-separated modes to compare.
    #[arg(long, default_value = "forward,read-cache,early-abort,optimistic-abort")]
    modes: String,
    /// Output folder for tpcc.jsonl.
    #[arg(long, default_value = "results/tpcc-sim")]
    out: PathBuf,
    #[command(flatten)]
    point: TpccConfig,
}

#[derive(Args, Debug)]
pub struct CheckTpccArgs {
    /// How many random seeds to run (each in every mode).
    #[arg(long, default_value_t = 50)]
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

fn per_s(r: &TpccResult, k: &str) -> f64 {
    r.per_type.get(k).map_or(0.0, |t| t.committed_per_s)
}

pub fn run_bench(a: BenchTpccArgs) -> anyhow::Result<i32> {
    let modes: Vec<Mode> = parse_list(&a.modes)?;
    a.point.validate().map_err(anyhow::Error::msg)?;
    // Per mode: the mix, then each type alone (Figure 13's per-type bars).
    let mut cfgs = vec![];
    for m in &modes {
        for only in std::iter::once(None).chain(Kind::ALL.map(Some)) {
            cfgs.push(TpccConfig { mode: m.name().into(), only, ..a.point.clone() });
        }
    }
    let p = &a.point;
    println!(
        "TPC-C (Gotthard section 5.4, Figure 13): {} warehouse(s), {} districts, {} customers/district, {} items; \
         {} terminals, RTT {} ms, delta {}, {} simulated s, seed {}",
        p.warehouses, p.districts, p.customers, p.items, p.clients, p.rtt_ms, p.delta, p.duration_s, p.seed
    );
    let wall = Instant::now();
    let rs = innet_exp::run_parallel(&cfgs, tpcc_sim::run_point);
    let rs: Vec<TpccResult> = rs.into_iter().collect::<anyhow::Result<_>>()?;
    let solo = |m: Mode, k: Kind| {
        rs.iter().find(|r| r.config.mode == m.name() && r.config.only == Some(k)).map_or(0.0, |r| per_s(r, k.name()))
    };
    let weighted = |m: Mode| Kind::ALL.iter().map(|&k| solo(m, k) * k.weight() as f64 / 100.0).sum::<f64>();
    println!("committed/s of each type run alone (mean latency ms), their mix-weighted mean, and the mix itself:");
    print!("{:<18} {:>9}", "mode", "weighted");
    for k in Kind::ALL {
        print!(" {:>14}", k.name());
    }
    println!(" {:>10}", "mix total");
    for &m in &modes {
        print!("{:<18} {:>9.2}", m.name(), weighted(m));
        for k in Kind::ALL {
            let lat = rs
                .iter()
                .find(|r| r.config.mode == m.name() && r.config.only == Some(k))
                .map_or(0.0, |r| r.per_type[k.name()].mean_latency_ms);
            print!(" {:>7.2} ({:>4.0})", solo(m, k), lat);
        }
        let mix = rs.iter().find(|r| r.config.mode == m.name() && r.config.only.is_none());
        println!(" {:>10.2}", mix.map_or(0.0, |r| r.committed_per_s));
    }
    let mut bad = 0;
    for r in &rs {
        if !r.consistency_violations.is_empty() {
            bad += 1;
            println!(
                "CONSISTENCY VIOLATED in {} {:?}: {:?}",
                r.config.mode,
                r.config.only,
                &r.consistency_violations[..5.min(r.consistency_violations.len())]
            );
        }
    }
    if modes.contains(&Mode::OptimisticAbort) && modes.contains(&Mode::ReadCache) {
        let ratio = |k: Kind| solo(Mode::OptimisticAbort, k) / solo(Mode::ReadCache, k).max(1e-9);
        println!(
            "optimistic-abort / read-cache: payment {:.2}x (paper: about 2x), order-status {:.2}x (paper: 1.1x), \
             new-order {:.2}x, delivery {:.2}x, stock-level {:.2}x, weighted {:.2}x",
            ratio(Kind::Payment),
            ratio(Kind::OrderStatus),
            ratio(Kind::NewOrder),
            ratio(Kind::Delivery),
            ratio(Kind::StockLevel),
            weighted(Mode::OptimisticAbort) / weighted(Mode::ReadCache).max(1e-9)
        );
    }
    println!("TPC-C consistency conditions: {} of {} runs hold all", rs.len() - bad, rs.len());
    let path = a.out.join("tpcc.jsonl");
    innet_exp::results::append_jsonl(&path, &rs)?;
    println!("wrote {} ({:.1} s wall)", path.display(), wall.elapsed().as_secs_f64());
    Ok(if bad == 0 { 0 } else { 1 })
}

pub fn run_check(a: CheckTpccArgs) -> anyhow::Result<i32> {
    let modes: Vec<Mode> = parse_list(&a.modes)?;
    let (seeds, verbose) = match a.seed {
        Some(s) => (s..s + 1, true),
        None => (a.start_seed..a.start_seed.saturating_add(a.seeds), false),
    };
    let wall = Instant::now();
    let jobs: Vec<TpccConfig> = seeds
        .clone()
        .flat_map(|s| modes.iter().map(move |&m| tpcc_sim::random_check_config(s, m, a.duration_s)))
        .collect();
    let runs = innet_exp::run_parallel(&jobs, tpcc_sim::run_checked);
    let mut violations = 0;
    let (mut commits, mut switch_answers, mut store_commits) = (0u64, 0usize, 0usize);
    let mut per_kind = std::collections::BTreeMap::new();
    for (cfg, run) in jobs.iter().zip(&runs) {
        let run = run.as_ref().map_err(|e| anyhow::anyhow!("{e}"))?;
        if verbose {
            println!("{}", serde_json::to_string(cfg).unwrap_or_default());
        }
        commits += run.committed;
        for (k, n) in &run.per_kind {
            *per_kind.entry(k.name()).or_insert(0u64) += n;
        }
        if let Ok(s) = &run.serializable {
            switch_answers += s.switch_answers_checked;
            store_commits += s.store_commits;
        }
        if !run.ok() {
            violations += 1;
            println!("VIOLATION seed {} mode {}:", cfg.seed, cfg.mode);
            let errs = run.serializable.as_ref().err().cloned().unwrap_or_default();
            for e in errs.iter().chain(&run.consistency).take(if verbose { usize::MAX } else { 5 }) {
                println!("  {e}");
            }
            println!(
                "  replay: innet check tpcc --seed {} --modes {} --duration-s {}",
                cfg.seed, cfg.mode, a.duration_s
            );
        }
    }
    // Determinism: the first job again must give the same trace.
    if let (Some(cfg), Some(Ok(first))) = (jobs.first(), runs.first()) {
        let again = tpcc_sim::run_checked(cfg).map_err(anyhow::Error::msg)?;
        if again.trace_hash != first.trace_hash {
            violations += 1;
            println!("NONDETERMINISM seed {} mode {}: trace hashes differ", cfg.seed, cfg.mode);
        }
    }
    println!(
        "checked {} TPC-C runs ({} seeds x {} modes, {} s simulated each, loss/dup/reorder/jitter on) in {:.1} s: \
         {commits} transactions committed {per_kind:?}, {store_commits} store commits, {switch_answers} switch answers \
         verified serializable; consistency conditions checked after every run; {violations} violations",
        jobs.len(),
        seeds.end - seeds.start,
        modes.len(),
        a.duration_s,
        wall.elapsed().as_secs_f64(),
    );
    Ok(if violations == 0 { 0 } else { 1 })
}
