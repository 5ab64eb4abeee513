//! Sweeps and checks of the transaction experiment: Gotthard Figure 7's
//! write-ratio sweep per mode (simulator or live), and the randomized
//! serializability check of `innet check txn`.

use crate::parse::Seeds;
use std::path::{Path, PathBuf};
use std::time::Instant;

use innet_txn::check::CheckSummary;
use innet_txn::Mode;

use crate::txn::{TxnPointConfig, TxnPointResult};
use crate::txn_sim::{random_check_config, run_checked, run_traced, CheckedRun};
pub use crate::Runtime;
use crate::{plot, results, txn_live, txn_sim};

/// Runs every (mode, write ratio) point of `base` (the simulator runs up
/// to four at a time), calling `each` with every result as it comes.
pub fn sweep(
    runtime: Runtime,
    base: &TxnPointConfig,
    modes: &[Mode],
    ratios: &[f64],
    mut each: impl FnMut(&TxnPointResult),
) -> anyhow::Result<Vec<TxnPointResult>> {
    let mut configs = vec![];
    for &m in modes {
        for &w in ratios {
            configs.push(TxnPointConfig { mode: m.name().into(), write_ratio: w, ..base.clone() });
        }
    }
    let mut out = Vec::with_capacity(configs.len());
    let progress = crate::progress::Progress::new(configs.len() as u64, "bench txn");
    let step = |r: &TxnPointResult| format!("{} write ratio {}", r.config.mode, r.config.write_ratio);
    match runtime {
        Runtime::Xdp => return Err(Runtime::no_xdp("innet bench xdp-txn")),
        Runtime::Live => {
            for c in &configs {
                let r = txn_live::run_point_live(c)?;
                progress.suspend(|| each(&r));
                progress.step(step(&r));
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
                    progress.suspend(|| each(&r));
                    progress.step(step(&r));
                    out.push(r);
                }
            }
        }
    }
    progress.finish();
    Ok(out)
}

/// Committed/s of mode `a` over mode `b` at write ratio `w`.
pub fn ratio_at(rs: &[TxnPointResult], w: f64, a: Mode, b: Mode) -> Option<f64> {
    let get = |m: Mode| {
        rs.iter()
            .find(|r| r.config.mode == m.name() && (r.config.write_ratio - w).abs() < 1e-9)
            .map(|r| r.committed_per_s)
    };
    Some(get(a)? / get(b)?.max(1e-9))
}

/// Gotthard's headline figures: optimistic-abort over read-cache at 0.2
/// and 0.5 writes, with the paper's (section 5.3: 1.5x and 3.3x).
pub fn headline_ratios(rs: &[TxnPointResult]) -> Vec<(f64, f64, f64)> {
    [(0.2, 1.5), (0.5, 3.3)]
        .into_iter()
        .filter_map(|(w, paper)| Some((w, ratio_at(rs, w, Mode::OptimisticAbort, Mode::ReadCache)?, paper)))
        .collect()
}

/// Writes `txn.jsonl` and `txn-figure7.png` into `out`; their paths.
pub fn write_results(out: &Path, rs: &[TxnPointResult]) -> anyhow::Result<(PathBuf, PathBuf)> {
    std::fs::create_dir_all(out)?;
    let jsonl = out.join("txn.jsonl");
    let _ = std::fs::remove_file(&jsonl);
    results::append_jsonl(&jsonl, rs)?;
    let png = out.join("txn-figure7.png");
    plot::txn_figure7(rs, &png)?;
    Ok((jsonl, png))
}

/// A run the checker rejected, or a seed whose two runs differed.
#[derive(Clone, Debug)]
pub struct Violation {
    pub seed: u64,
    pub mode: Mode,
    /// For a nondeterminism, the first delivery where the two runs part.
    pub errors: Vec<String>,
    pub nondeterminism: bool,
    /// The command that replays the run verbosely.
    pub replay: String,
}

/// What a check over many seeds found.
#[derive(Clone, Debug, Default)]
pub struct CheckReport {
    pub seeds: u64,
    pub modes: usize,
    pub duration_s: f64,
    pub runs: u64,
    /// Runs on multi-switch trees.
    pub trees: u64,
    pub commits: u64,
    pub sums: CheckSummary,
    pub violations: Vec<Violation>,
    pub wall_seconds: f64,
}

/// Runs the serializability checker over `seeds` in every mode of `modes`
/// (random configurations, [`random_check_config`], on every core); `each`
/// sees every run, in order. The first seed of every mode runs twice and its trace hashes must
/// match (determinism).
pub fn check_seeds(
    seeds: Seeds,
    modes: &[Mode],
    duration_s: f64,
    mut each: impl FnMut(&CheckedRun),
) -> anyhow::Result<CheckReport> {
    anyhow::ensure!(
        duration_s > 0.0 && duration_s.is_finite(),
        "--duration-s {duration_s} must be a number of seconds above 0"
    );
    let started = Instant::now();
    let mut r = CheckReport { seeds: seeds.count, modes: modes.len(), duration_s, ..CheckReport::default() };
    let jobs = seeds.iter().flat_map(|s| modes.iter().map(move |&m| (s, m)));
    let progress = crate::progress::Progress::new(seeds.count.saturating_mul(modes.len() as u64), "check txn");
    crate::run_parallel_each(
        jobs,
        &progress,
        |(seed, mode)| format!("seed {seed} {mode}"),
        |&(seed, mode)| run_checked(&random_check_config(seed, mode, duration_s)),
        |&(seed, mode), run| -> anyhow::Result<()> {
            let run = run.map_err(anyhow::Error::msg)?;
            each(&run);
            r.runs += 1;
            r.commits += run.committed;
            r.trees += u64::from(run.config.edge_switches > 0);
            let replay = format!("innet check txn --seed {seed} --modes {mode} --duration-s {duration_s}");
            match &run.result {
                Ok(s) => {
                    r.sums.store_commits += s.store_commits;
                    r.sums.switch_answers_checked += s.switch_answers_checked;
                    r.sums.client_aborts_checked += s.client_aborts_checked;
                }
                Err(errors) => r.violations.push(Violation {
                    seed,
                    mode,
                    errors: errors.clone(),
                    nondeterminism: false,
                    replay: replay.clone(),
                }),
            }
            if seed == seeds.first {
                let again = run_checked(&run.config).map_err(anyhow::Error::msg)?.trace_hash;
                let traced = || run_traced(&run.config);
                if let Some(d) = crate::nondeterminism(run.trace_hash, again, traced).map_err(anyhow::Error::msg)? {
                    r.violations.push(Violation { seed, mode, errors: vec![d], nondeterminism: true, replay });
                }
            }
            Ok(())
        },
    )?;
    progress.finish();
    r.wall_seconds = started.elapsed().as_secs_f64();
    Ok(r)
}
