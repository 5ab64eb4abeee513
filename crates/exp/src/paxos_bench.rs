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
use serde::Serialize;

use crate::paxos::{DataPlaneAt, PaxosConfig, PaxosResult};
use crate::{paxos_live, paxos_sim, plot, results};

pub use crate::Runtime;

/// The simulator's capacity model of the two deployments (docs/paxos.md):
/// a switch pipeline at about 10 M packets/s (0.1 us a packet), a software
/// coordinator or acceptor process at 12 us a packet (of the order of
/// libpaxos's measured 69,185 values/s, CAANS section 2.2), a learner or
/// proposer process at 2 us, links of 10 us. They make libpaxos's
/// coordinator and CAANS's learners the bottlenecks, as the paper's
/// section 2 finds.
pub const CAPACITY_MODEL: CapacityModel =
    CapacityModel { switch_cost_us: 0.1, software_cost_us: 12.0, host_cost_us: 2.0, latency_us: 10.0 };

/// Per-packet costs and link latency of a capacity model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CapacityModel {
    pub switch_cost_us: f64,
    pub software_cost_us: f64,
    pub host_cost_us: f64,
    pub latency_us: f64,
}

impl CapacityModel {
    pub fn apply(&self, cfg: &mut PaxosConfig) {
        cfg.switch_cost_us = self.switch_cost_us;
        cfg.software_cost_us = self.software_cost_us;
        cfg.host_cost_us = self.host_cost_us;
        cfg.coordinator_cost_us = None;
        cfg.latency_us = self.latency_us;
    }
}

/// The acceptor ring of the paper's FPGA acceptors: 65,536 instances
/// (CAANS Table 3). With a saturated learner falling behind, a smaller ring
/// throttles the coordinator (dropped requests wait for a proposer timeout).
pub const PAPER_SLOTS: usize = 65536;

/// What a randomized check over many seeds found.
#[derive(Clone, Debug, Default)]
pub struct CheckReport {
    pub seeds: u64,
    pub deployments: usize,
    pub duration_s: f64,
    pub runs: u64,
    pub takeovers: u64,
    pub crashes: u64,
    /// Runs whose proposers packed several values per instance.
    pub packed: u64,
    /// Runs whose coordinator restarted (failback), its restarts, and the
    /// backup's handbacks to it.
    pub failback_runs: u64,
    pub coordinator_restarts: u64,
    pub handbacks: u64,
    pub instances: u64,
    pub values: u64,
    pub noops: u64,
    pub duplicates: u64,
    /// `(seed, deployment, what, replay command)`.
    pub violations: Vec<(u64, DataPlaneAt, String, String)>,
    pub wall_seconds: f64,
}

/// Runs the agreement / validity / exactly-once checker over `seeds` for
/// every deployment of `data_planes` (random configurations, on every
/// core); `each` sees every run in order. The first seed of every
/// deployment runs twice and its trace hashes must match.
pub fn check_seeds(
    seeds: crate::parse::Seeds,
    data_planes: &[DataPlaneAt],
    duration_s: f64,
    mut each: impl FnMut(&paxos_sim::CheckedRun),
) -> Result<CheckReport> {
    anyhow::ensure!(
        duration_s > 0.0 && duration_s.is_finite(),
        "--duration-s {duration_s} must be a number of seconds above 0"
    );
    let started = std::time::Instant::now();
    let jobs = seeds.iter().flat_map(|s| data_planes.iter().map(move |&d| (s, d)));
    let progress = crate::progress::Progress::new(seeds.count.saturating_mul(data_planes.len() as u64), "check paxos");
    let mut r =
        CheckReport { seeds: seeds.count, deployments: data_planes.len(), duration_s, ..CheckReport::default() };
    crate::run_parallel_each(
        jobs,
        &progress,
        |(seed, dp)| format!("seed {seed} {dp}"),
        |&(seed, dp)| paxos_sim::run_checked(&paxos_sim::random_check_config(seed, dp, duration_s)),
        |&(seed, dp), run| -> Result<()> {
            let run = run.map_err(anyhow::Error::msg)?;
            each(&run);
            r.runs += 1;
            r.takeovers += u64::from(run.took_over);
            r.crashes += u64::from(run.config.acceptor_crash_at_s.is_some());
            r.packed += u64::from(run.config.pack > 1);
            r.failback_runs += u64::from(run.coordinator_restarts > 0);
            r.coordinator_restarts += run.coordinator_restarts;
            r.handbacks += run.handbacks;
            let replay = format!("innet check paxos --seed {seed} --data-planes {dp} --duration-s {duration_s}");
            match &run.result {
                Ok(s) => {
                    r.instances += s.instances as u64;
                    r.values += s.values as u64;
                    r.noops += s.noops as u64;
                    r.duplicates += s.duplicates as u64;
                }
                Err(e) => r.violations.push((seed, dp, e.clone(), replay.clone())),
            }
            if seed == seeds.first {
                let again = paxos_sim::run_checked(&run.config).map_err(anyhow::Error::msg)?.trace_hash;
                let traced = || paxos_sim::run_traced(&run.config);
                if let Some(d) = crate::nondeterminism(run.trace_hash, again, traced).map_err(anyhow::Error::msg)? {
                    r.violations.push((seed, dp, d, replay));
                }
            }
            Ok(())
        },
    )?;
    progress.finish();
    r.wall_seconds = started.elapsed().as_secs_f64();
    Ok(r)
}

pub fn run(runtime: Runtime, cfg: &PaxosConfig) -> Result<PaxosResult> {
    match runtime {
        Runtime::Sim => paxos_sim::run_point_sim(cfg),
        Runtime::Live => paxos_live::run_point_live(cfg),
        Runtime::Xdp => Err(Runtime::no_xdp("innet bench xdp-paxos")),
    }
}

pub const DEPLOYMENTS: [DataPlaneAt; 2] = [DataPlaneAt::Switch, DataPlaneAt::Process];

/// Figure 7a: one point per deployment and number of requests in flight.
pub fn sweep(runtime: Runtime, base: &PaxosConfig, outstanding: &[usize]) -> Result<Vec<PaxosResult>> {
    let progress = crate::progress::Progress::new((outstanding.len() * DEPLOYMENTS.len()) as u64, "bench paxos");
    let mut rs = vec![];
    for &n in outstanding {
        for dp in DEPLOYMENTS {
            let cfg = PaxosConfig { data_plane: dp, outstanding: n, ..base.clone() };
            rs.push(run(runtime, &cfg)?);
            progress.step(format_args!("{dp}, {n} in flight"));
        }
    }
    progress.finish();
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

/// The cost of persistent acceptors (issue 24 item 5): the same live point
/// with acceptors in memory and on disk under each `--fsync` policy, the
/// four interleaved in each of `rounds` rounds (so load on the shared
/// machine hits them alike). Acceptor directories go under `dir`. Returns
/// each policy's committed values/s per round (`None`: in memory).
pub fn acceptor_fsync(
    base: &PaxosConfig,
    dir: &Path,
    rounds: usize,
) -> Result<Vec<(Option<innet_live::paxos::acceptor_store::Fsync>, Vec<f64>)>> {
    use innet_live::paxos::acceptor_store::{AcceptorStore, Fsync};
    let policies: Vec<Option<Fsync>> = std::iter::once(None).chain(Fsync::ALL.map(Some)).collect();
    let mut out: Vec<(Option<Fsync>, Vec<f64>)> = policies.iter().map(|p| (*p, vec![])).collect();
    let progress = crate::progress::Progress::new((rounds * policies.len()) as u64, "bench paxos acceptor fsync");
    for round in 0..rounds {
        for (k, p) in policies.iter().enumerate() {
            let store = p.map(|fsync| AcceptorStore { dir: dir.join(fsync.name()), fsync });
            let r = paxos_live::run_point_live_stored(base, store)?;
            out[k].1.push(r.committed_per_s);
            progress.step(format_args!("round {round}, {}", p.map_or("memory", Fsync::name)));
        }
    }
    progress.finish();
    let _ = std::fs::remove_dir_all(dir);
    Ok(out)
}

fn plain(r: &PaxosResult) -> bool {
    r.config.coordinator_fail_at_s.is_none() && r.config.acceptor_crash_at_s.is_none() && !r.config.kv
}

/// Figure 7d: the replicated key-value store (LevelDB replicas as learners),
/// live only.
pub fn kv_sweep(base: &PaxosConfig, outstanding: &[usize]) -> Result<Vec<PaxosResult>> {
    let progress = crate::progress::Progress::new((outstanding.len() * DEPLOYMENTS.len()) as u64, "bench paxos kv");
    let mut rs = vec![];
    for &n in outstanding {
        for dp in DEPLOYMENTS {
            let cfg = PaxosConfig { data_plane: dp, outstanding: n, kv: true, ..base.clone() };
            rs.push(paxos_live::run_point_live(&cfg)?);
            progress.step(format_args!("{dp}, {n} in flight"));
        }
    }
    progress.finish();
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
    let runtime = rs.first().map_or("", |r| r.runtime.record_name());
    plot_sweep(out, rs, runtime)?;
    plot_kv(out, rs, runtime)?;
    plot_failures(out, rs, runtime)
}

/// Named lines of (x, y) points, as [`plot::lines_png`] draws them.
type Series = Vec<(String, Vec<(f64, f64)>)>;

/// One line per deployment (named by `name`): the runs' (committed per
/// second, mean latency) points.
fn throughput_latency(runs: &[&PaxosResult], name: impl Fn(DataPlaneAt) -> String) -> Series {
    DEPLOYMENTS
        .iter()
        .map(|&dp| {
            let pts = runs.iter().filter(|r| r.config.data_plane == dp).map(|r| (r.committed_per_s, r.mean_latency_us));
            (name(dp), pts.collect())
        })
        .collect()
}

/// Figure 7a (throughput against latency, per deployment) and 7b (the
/// latency CDF at the Table 4 points) of the plain sweep runs.
fn plot_sweep(out: &Path, rs: &[PaxosResult], runtime: &str) -> Result<()> {
    let sweep: Vec<&PaxosResult> = rs.iter().filter(|r| plain(r)).collect();
    if sweep.is_empty() {
        return Ok(());
    }
    let mut series = throughput_latency(&sweep, |dp| dp.name().to_string());
    series.retain(|(_, v)| !v.is_empty());
    plot::lines_png(
        &out.join("paxos-fig7a-throughput-latency.png"),
        &format!("Consensus throughput vs latency ({runtime}; CAANS Fig. 7a)"),
        "values committed per second",
        "mean latency (us)",
        &series,
    )?;
    let cdf: Series = table4(rs)
        .iter()
        .filter(|(_, _, r)| !r.latency_quantiles_us.is_empty())
        .map(|(dp, f, r)| {
            let n = r.latency_quantiles_us.len() as f64 - 1.0;
            let pts = r.latency_quantiles_us.iter().enumerate().map(|(i, l)| (*l, i as f64 / n)).collect();
            (format!("{} at {:.0}% of max", dp.name(), f * 100.0), pts)
        })
        .collect();
    if cdf.is_empty() {
        return Ok(());
    }
    plot::lines_png(
        &out.join("paxos-fig7b-latency-cdf.png"),
        &format!("Latency CDF at 25/50/75% of max throughput ({runtime}; CAANS Fig. 7b)"),
        "latency (us)",
        "fraction of requests",
        &cdf,
    )
}

/// Figure 7d: the replicated key-value store's throughput against latency.
fn plot_kv(out: &Path, rs: &[PaxosResult], runtime: &str) -> Result<()> {
    let kv: Vec<&PaxosResult> = rs.iter().filter(|r| r.config.kv).collect();
    if kv.is_empty() {
        return Ok(());
    }
    let series = throughput_latency(&kv, |dp| format!("{} + LevelDB", dp.name()));
    plot::lines_png(
        &out.join("paxos-fig7d-kv-throughput-latency.png"),
        &format!("Replicated LevelDB: throughput vs latency ({runtime}; CAANS Fig. 7d)"),
        "commands committed per second",
        "mean latency (us)",
        &series,
    )
}

/// Figure 8: throughput over time (50 ms windows) of the failure runs.
fn plot_failures(out: &Path, rs: &[PaxosResult], runtime: &str) -> Result<()> {
    let failed: Vec<&PaxosResult> = rs.iter().filter(|r| !plain(r) && !r.config.kv).collect();
    if failed.is_empty() {
        return Ok(());
    }
    let series: Series = failed
        .iter()
        .map(|r| {
            let what = if r.config.coordinator_fail_at_s.is_some() { "coordinator fails" } else { "acceptor fails" };
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
    )
}

/// The batched generator ([`innet_bench::loadgen`]) with `in_flight` clients
/// towards `target`, for `duration_s` (at least 0.5 s).
pub fn ceiling_config(
    in_flight: usize,
    target: std::net::SocketAddr,
    duration_s: f64,
) -> innet_bench::loadgen::LoadConfig {
    let d = std::time::Duration::from_secs_f64(duration_s.max(0.5));
    innet_bench::loadgen::LoadConfig::new(in_flight.max(1) as u32, vec![target], d)
}

/// The generator's ceiling on loopback at `in_flight` requests: a bare UDP
/// echo answering P4xos-sized packets ([`innet_bench::loadgen::ceiling`]).
pub fn loopback_ceiling(in_flight: usize, duration_s: f64) -> std::io::Result<innet_bench::loadgen::LoadReport> {
    let cfg = ceiling_config(in_flight, std::net::SocketAddr::from(([127, 0, 0, 1], 9)), duration_s);
    innet_bench::loadgen::ceiling(&cfg, innet_wire::paxos::PACKET_LEN)
}

/// A deployment's figure beside its generator's ceiling, compared in
/// values sent to the coordinator per second (packing makes these fewer
/// than client values).
#[derive(Clone, Debug, Serialize)]
pub struct AgainstCeiling {
    /// Values sent to the coordinator that committed, per second.
    pub instances_per_s: f64,
    pub ceiling_per_s: f64,
    pub of_ceiling: f64,
    pub generator_bound: bool,
}

impl AgainstCeiling {
    pub fn new(r: &PaxosResult, ceiling: &innet_bench::loadgen::LoadReport) -> AgainstCeiling {
        AgainstCeiling {
            instances_per_s: r.instances_per_s,
            ceiling_per_s: ceiling.ops_per_s,
            of_ceiling: r.instances_per_s / ceiling.ops_per_s.max(1e-9),
            generator_bound: innet_bench::loadgen::generator_bound(r.instances_per_s, ceiling.ops_per_s),
        }
    }
}

/// `innet bench paxos --replica-fsync ROUNDS`: committed key-value
/// operations/s (puts of 16-byte values, each client one request at a
/// time) against three replicas (`run_replica_synced`, as `innet
/// kv-replica` runs them, on LevelDB in `dir`) of a switch deployment on
/// loopback, with the replicas' writes synced as each policy says; the
/// policies interleaved over `rounds`. Returns each policy's rates.
#[cfg(feature = "leveldb")]
pub fn replica_fsync(
    clients: usize,
    duration_s: f64,
    dir: &Path,
    rounds: usize,
) -> Result<Vec<(innet_live::paxos::acceptor_store::Fsync, Vec<f64>)>> {
    use innet_live::paxos::acceptor_store::Fsync;
    let mut out: Vec<(Fsync, Vec<f64>)> = Fsync::ALL.iter().map(|p| (*p, vec![])).collect();
    let progress = crate::progress::Progress::new((rounds * out.len()) as u64, "bench paxos replica fsync");
    for round in 0..rounds {
        for (k, p) in Fsync::ALL.iter().enumerate() {
            let r = replica_fsync_point(clients, duration_s, &dir.join(p.name()), *p)?;
            out[k].1.push(r);
            progress.step(format_args!("round {round}, {}", p.name()));
        }
    }
    progress.finish();
    let _ = std::fs::remove_dir_all(dir);
    Ok(out)
}

/// A base port with `n` free consecutive loopback ports above it, below
/// the ephemeral range ([`innet_live::ports::free_block`]).
#[cfg(feature = "leveldb")]
fn free_base(n: u16) -> Result<u16> {
    Ok(innet_live::ports::free_block(n, &[])?)
}

#[cfg(feature = "leveldb")]
fn replica_fsync_point(
    clients: usize,
    duration_s: f64,
    dir: &Path,
    fsync: innet_live::paxos::acceptor_store::Fsync,
) -> Result<f64> {
    use std::net::SocketAddr;
    use std::time::{Duration, Instant};
    let _ = std::fs::remove_dir_all(dir);
    let live = innet_live::paxos::LiveConfig {
        shape: innet_paxos::deploy::PaxosShape { learners: 3, proposers: 0, ..Default::default() },
        base_port: free_base(8)?,
        external_learners: true,
        ..innet_live::paxos::LiveConfig::default()
    };
    let stop = innet_live::Stop::new();
    let mut plan = innet_live::paxos::Plan::bind(&live)?;
    let core = plan.spawn_core(&stop)?;
    let mut replicas = vec![];
    let mut ports = vec![];
    for i in 0..3 {
        let (live, d, stop) = (live.clone(), dir.join(format!("r{i}")), stop.clone());
        let (tx, rx) = std::sync::mpsc::channel();
        replicas.push(std::thread::spawn(move || {
            let say = |line: &str| {
                if let Some(a) = line.strip_prefix("client ") {
                    let _ = tx.send(a.parse::<SocketAddr>().ok());
                }
            };
            let any = SocketAddr::from(([127, 0, 0, 1], 0));
            let every = Duration::from_millis(200);
            innet_paxos_kv::run_replica_synced(&live, i, &d, Some(any), every, fsync, &stop, say, |_| ())
        }));
        let port = rx.recv_timeout(Duration::from_secs(10)).ok().flatten();
        ports.push(port.ok_or_else(|| anyhow::anyhow!("replica {i} did not start"))?);
    }
    let end = Instant::now() + Duration::from_secs_f64(duration_s);
    let threads: Vec<_> = (0..clients)
        .map(|k| {
            let mut order = ports.clone();
            order.rotate_left(k % 3);
            std::thread::spawn(move || -> std::io::Result<u64> {
                let mut kv = innet_paxos_kv::KvNetClient::connect(&order)?;
                let mut n = 0u64;
                while Instant::now() < end {
                    kv.put(format!("c{k}-{}", n % 64).as_bytes(), &[b'v'; 16])?;
                    n += 1;
                }
                Ok(n)
            })
        })
        .collect();
    let mut done = 0;
    for t in threads {
        done += t.join().map_err(|_| anyhow::anyhow!("a client panicked"))??;
    }
    stop.stop();
    for r in replicas {
        r.join().map_err(|_| anyhow::anyhow!("a replica panicked"))??;
    }
    drop(core);
    let _ = std::fs::remove_dir_all(dir);
    Ok(done as f64 / duration_s)
}
