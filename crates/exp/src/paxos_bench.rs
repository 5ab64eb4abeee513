//! `innet bench paxos`: CAANS section 6.3-6.4 with both deployments side by
//! side. Every point is a [`PaxosResult`] record (configuration, seed, git
//! commit); the tables and plots are made from those records.
//!
//! * Figure 7a: throughput against latency as the requests in flight grow;
//! * Figure 7b / Table 4: the latency CDF, mean and standard deviation at the
//!   sweep points nearest 25, 50 and 75% of each deployment's maximum;
//! * Figure 8: throughput over time when acceptor 0 dies, and when the
//!   coordinator dies and the software backup takes over.

use std::path::Path;

use anyhow::Result;

use crate::paxos::{DataPlaneAt, PaxosConfig, PaxosResult};
use crate::{paxos_live, paxos_sim, plot, results};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runtime {
    Sim,
    Live,
}

pub fn run(runtime: Runtime, cfg: &PaxosConfig) -> Result<PaxosResult> {
    match runtime {
        Runtime::Sim => paxos_sim::run_point_sim(cfg),
        Runtime::Live => paxos_live::run_point_live(cfg),
    }
}

pub const DEPLOYMENTS: [DataPlaneAt; 2] = [DataPlaneAt::Switch, DataPlaneAt::Process];

/// Figure 7a: one point per deployment and number of requests in flight.
pub fn sweep(runtime: Runtime, base: &PaxosConfig, outstanding: &[usize]) -> Result<Vec<PaxosResult>> {
    let mut rs = vec![];
    for &n in outstanding {
        for dp in DEPLOYMENTS {
            let cfg = PaxosConfig { data_plane: dp, outstanding: n, ..base.clone() };
            rs.push(run(runtime, &cfg)?);
        }
    }
    Ok(rs)
}

/// Figure 8: an acceptor dies, and (separately) the coordinator dies, half
/// way through, for each deployment.
pub fn failures(runtime: Runtime, base: &PaxosConfig) -> Result<Vec<PaxosResult>> {
    let mut rs = vec![];
    let half = base.duration_s / 2.0;
    for dp in DEPLOYMENTS {
        for (acc, coord) in [(Some(half), None), (None, Some(half))] {
            let cfg = PaxosConfig {
                data_plane: dp,
                acceptor_crash_at_s: acc,
                acceptor_restart_at_s: None,
                coordinator_fail_at_s: coord,
                ..base.clone()
            };
            rs.push(run(runtime, &cfg)?);
        }
    }
    Ok(rs)
}

fn plain(r: &PaxosResult) -> bool {
    r.config.coordinator_fail_at_s.is_none() && r.config.acceptor_crash_at_s.is_none() && !r.config.kv
}

/// Figure 7d: the replicated key-value store (LevelDB replicas as learners),
/// live only.
pub fn kv_sweep(base: &PaxosConfig, outstanding: &[usize]) -> Result<Vec<PaxosResult>> {
    let mut rs = vec![];
    for &n in outstanding {
        for dp in DEPLOYMENTS {
            let cfg = PaxosConfig { data_plane: dp, outstanding: n, kv: true, ..base.clone() };
            rs.push(paxos_live::run_point_live(&cfg)?);
        }
    }
    Ok(rs)
}

/// The highest throughput of each deployment in the sweep, and their ratio
/// (switch / software).
pub fn max_throughput(rs: &[PaxosResult]) -> (f64, f64, f64) {
    let max =
        |dp| rs.iter().filter(|r| plain(r) && r.config.data_plane == dp).map(|r| r.committed_per_s).fold(0.0, f64::max);
    let (s, w) = (max(DataPlaneAt::Switch), max(DataPlaneAt::Process));
    (s, w, if w > 0.0 { s / w } else { 0.0 })
}

/// Table 4: for each deployment and fraction of its maximum throughput, the
/// sweep point nearest to it.
pub fn table4(rs: &[PaxosResult]) -> Vec<(DataPlaneAt, f64, PaxosResult)> {
    let mut out = vec![];
    for dp in DEPLOYMENTS {
        let pts: Vec<&PaxosResult> = rs.iter().filter(|r| plain(r) && r.config.data_plane == dp).collect();
        let max = pts.iter().map(|r| r.committed_per_s).fold(0.0, f64::max);
        for frac in [0.25, 0.5, 0.75] {
            if let Some(r) = pts.iter().min_by(|a, b| {
                (a.committed_per_s - frac * max).abs().total_cmp(&(b.committed_per_s - frac * max).abs())
            }) {
                out.push((dp, frac, (*r).clone()));
            }
        }
    }
    out
}

/// Writes `results.jsonl` and the plots into `out`.
pub fn write(out: &Path, rs: &[PaxosResult]) -> Result<()> {
    results::append_jsonl(&out.join("results.jsonl"), rs)?;
    let sweep: Vec<&PaxosResult> = rs.iter().filter(|r| plain(r)).collect();
    let series = |f: &dyn Fn(&PaxosResult) -> (f64, f64)| -> Vec<(String, Vec<(f64, f64)>)> {
        DEPLOYMENTS
            .iter()
            .map(|dp| {
                (dp.name().to_string(), sweep.iter().filter(|r| r.config.data_plane == *dp).map(|r| f(r)).collect())
            })
            .filter(|(_, v): &(String, Vec<(f64, f64)>)| !v.is_empty())
            .collect()
    };
    let runtime = rs.first().map_or("", |r| r.runtime.as_str());
    if !sweep.is_empty() {
        plot::lines_png(
            &out.join("paxos-fig7a-throughput-latency.png"),
            &format!("Consensus throughput vs latency ({runtime}; CAANS Fig. 7a)"),
            "values committed per second",
            "mean latency (us)",
            &series(&|r| (r.committed_per_s, r.mean_latency_us)),
        )?;
        // Figure 7b: the latency CDF at the Table 4 points.
        let cdf: Vec<(String, Vec<(f64, f64)>)> = table4(rs)
            .iter()
            .filter(|(_, _, r)| !r.latency_quantiles_us.is_empty())
            .map(|(dp, f, r)| {
                let n = r.latency_quantiles_us.len() as f64 - 1.0;
                let pts = r.latency_quantiles_us.iter().enumerate().map(|(i, l)| (*l, i as f64 / n)).collect();
                (format!("{} at {:.0}% of max", dp.name(), f * 100.0), pts)
            })
            .collect();
        if !cdf.is_empty() {
            plot::lines_png(
                &out.join("paxos-fig7b-latency-cdf.png"),
                &format!("Latency CDF at 25/50/75% of max throughput ({runtime}; CAANS Fig. 7b)"),
                "latency (us)",
                "fraction of requests",
                &cdf,
            )?;
        }
    }
    let kv: Vec<&PaxosResult> = rs.iter().filter(|r| r.config.kv).collect();
    if !kv.is_empty() {
        let series: Vec<(String, Vec<(f64, f64)>)> = DEPLOYMENTS
            .iter()
            .map(|dp| {
                let pts =
                    kv.iter().filter(|r| r.config.data_plane == *dp).map(|r| (r.committed_per_s, r.mean_latency_us));
                (format!("{} + LevelDB", dp.name()), pts.collect())
            })
            .collect();
        plot::lines_png(
            &out.join("paxos-fig7d-kv-throughput-latency.png"),
            &format!("Replicated LevelDB: throughput vs latency ({runtime}; CAANS Fig. 7d)"),
            "commands committed per second",
            "mean latency (us)",
            &series,
        )?;
    }
    let failed: Vec<&PaxosResult> = rs.iter().filter(|r| !plain(r) && !r.config.kv).collect();
    if !failed.is_empty() {
        let series: Vec<(String, Vec<(f64, f64)>)> = failed
            .iter()
            .map(|r| {
                let what =
                    if r.config.coordinator_fail_at_s.is_some() { "coordinator fails" } else { "acceptor fails" };
                let bin_s = r.timeline_bin_ms / 1e3;
                // 50 ms windows, in values per second.
                let per = (50.0 / r.timeline_bin_ms).round().max(1.0) as usize;
                let pts = r
                    .timeline
                    .chunks(per)
                    .enumerate()
                    .map(|(i, c)| ((i * per) as f64 * bin_s, c.iter().sum::<u64>() as f64 / (c.len() as f64 * bin_s)))
                    .collect();
                (format!("{}: {what}", r.config.data_plane.name()), pts)
            })
            .collect();
        plot::lines_png(
            &out.join("paxos-fig8-failures.png"),
            &format!("Throughput over time under failure ({runtime}; CAANS Fig. 8)"),
            "time (s)",
            "values committed per second",
            &series,
        )?;
    }
    Ok(())
}
