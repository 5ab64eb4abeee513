//! The consensus experiment on the live runtime (UDP on loopback): the same
//! configuration and result record as the simulator. Failures are real: the
//! coordinator's or acceptor 0's thread is stopped and its socket closed.

use std::time::{Duration, Instant};

use innet_core::Time;
use innet_live::paxos::{spawn_learner, Core, LiveConfig, Plan};
use innet_live::{clock, spawn_host, NodeHandle, Stop};
use innet_paxos::deploy::PaxosShape;
use innet_paxos::learner::LearnerStats;
use innet_paxos::workload::LoadProposer;
use innet_paxos::{Learner, Proposer};

use crate::paxos::{PaxosConfig, PaxosResult};
use crate::paxos_sim::make_result;
use innet_live::metrics::Sources;

/// `cfg`'s deployment on the live runtime. Restarts of the coordinator
/// are simulator-only: no failback live.
pub fn live_config(cfg: &PaxosConfig) -> LiveConfig {
    LiveConfig {
        data_plane: cfg.data_plane,
        shape: PaxosShape { failback: false, ..cfg.shape() },
        params: cfg.params(),
        ..LiveConfig::default()
    }
}

/// Runs one point live. Link faults and restarts of the configuration are
/// simulator-only and ignored here.
pub fn run_point_live(cfg: &PaxosConfig) -> anyhow::Result<PaxosResult> {
    run_point_live_stored(cfg, None)
}

/// [`run_point_live`] with persistent acceptors in `store` (each in a
/// fresh subdirectory, emptied first).
pub fn run_point_live_stored(
    cfg: &PaxosConfig,
    store: Option<innet_live::paxos::acceptor_store::AcceptorStore>,
) -> anyhow::Result<PaxosResult> {
    cfg.validate().map_err(anyhow::Error::msg)?;
    require_leveldb(cfg.kv)?;
    if let Some(s) = &store {
        let _ = std::fs::remove_dir_all(&s.dir);
    }
    let lc = LiveConfig { acceptor_store: store, ..live_config(cfg) };
    let stop = Stop::new();
    let mut plan = Plan::bind(&lc)?;
    let core = plan.spawn_core(&stop)?;
    let kv_dir = std::env::temp_dir().join(format!("innet-paxos-kv-bench-{}", std::process::id()));
    let learners = spawn_bench_learners(cfg, &lc, &mut plan, &kv_dir, &stop)?;
    let start = clock::now();
    let wall = Instant::now();
    let end = start + Duration::from_secs_f64(cfg.duration_s);
    let proposers = (0..lc.shape.proposers)
        .map(|i| spawn_load_proposer(&lc, &mut plan, i, (cfg.outstanding, end, cfg.kv), &stop))
        .collect::<anyhow::Result<Vec<_>>>()?;
    fail_on_schedule(cfg, &core, start);
    // Let the last requests finish.
    sleep_until(end + Duration::from_millis(100));
    let ps: Vec<LoadProposer> = proposers.into_iter().map(|p| p.shutdown()).collect::<Result<_, _>>()?;
    let stats: Vec<LearnerStats> = learners.into_iter().map(|l| l.shutdown()).collect::<Result<_, _>>()?;
    let backup = core.backup.shutdown()?;
    stop.stop();
    if cfg.kv {
        let _ = std::fs::remove_dir_all(&kv_dir);
    }
    let takeover = backup.active_since().map(|t| t.since(start).as_secs_f64());
    let refs: Vec<&LoadProposer> = ps.iter().collect();
    let wall_s = wall.elapsed().as_secs_f64();
    Ok(make_result(cfg, crate::Runtime::Live, &refs, start.as_nanos(), &stats[0], takeover, cfg.duration_s, wall_s))
}

/// The learners of a benchmark run: LevelDB replicas (`cfg.kv`, each in
/// its own directory under `kv_dir`) or plain learners.
fn spawn_bench_learners(
    cfg: &PaxosConfig,
    lc: &LiveConfig,
    plan: &mut Plan,
    kv_dir: &std::path::Path,
    stop: &Stop,
) -> anyhow::Result<Vec<NodeHandle<LearnerStats>>> {
    let mut learners = vec![];
    for i in 0..lc.shape.learners {
        let socket = plan.take_learner_socket(i);
        let lcfg = lc.learner_config(i as u16);
        let name = format!("learner{i}");
        learners.push(if cfg.kv {
            spawn_replica(&kv_dir.join(&name), socket, plan.learner_options(i), lcfg, stop)?
        } else {
            spawn_host(&name, socket, plan.learner_options(i), stop, move || Learner::new(lcfg), |l, _| l.stats)?
        });
    }
    Ok(learners)
}

/// The plan's proposer `i` as a load generator keeping `outstanding`
/// requests in flight until `end`, submitting key-value commands if `kv`.
fn spawn_load_proposer(
    lc: &LiveConfig,
    plan: &mut Plan,
    i: usize,
    (outstanding, end, kv): (usize, Time, bool),
    stop: &Stop,
) -> anyhow::Result<NodeHandle<LoadProposer>> {
    let socket = plan.take_proposer_socket(i);
    let pcfg = lc.fresh_proposer_config(i);
    Ok(spawn_host(
        &format!("proposer{i}"),
        socket,
        plan.proposer_options(),
        stop,
        move || with_kv_load(LoadProposer::new(Proposer::new(pcfg), outstanding, end, false), kv),
        |p, _| p,
    )?)
}

/// Stops the coordinator and acceptor 0 at the configuration's failure
/// times (seconds after `start`), in time order; returns after the last.
fn fail_on_schedule(cfg: &PaxosConfig, core: &Core, start: Time) {
    let mut events: Vec<(f64, u8)> = vec![];
    if let Some(t) = cfg.coordinator_fail_at_s {
        events.push((t, 0));
    }
    if let Some(t) = cfg.acceptor_crash_at_s {
        events.push((t, 1));
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0));
    for (t, what) in events {
        sleep_until(start + Duration::from_secs_f64(t));
        match what {
            0 => core.coordinator.stop(),
            _ => core.acceptors[0].stop(),
        }
    }
}

fn sleep_until(t: Time) {
    let now = clock::now();
    if t > now {
        std::thread::sleep(t.since(now));
    }
}

/// `innet up paxos` without a topology file: a deployment on loopback,
/// optional built-in load proposers, and failures on a timer.
#[derive(Clone, Debug)]
pub struct UpPaxos {
    pub live: LiveConfig,
    /// Requests each built-in proposer keeps in flight.
    pub outstanding: usize,
    /// Built-in proposers stop submitting after this many seconds.
    pub load_s: Option<f64>,
    /// Built-in proposers submit key-value commands instead of opaque values.
    pub kv_load: bool,
    /// Stop after this many seconds (default: when `stop` is set).
    pub duration_s: Option<f64>,
    pub kill_acceptor_at_s: Option<f64>,
    pub kill_coordinator_at_s: Option<f64>,
}

/// What an [`up`] run did.
#[derive(Clone, Debug, Default)]
pub struct UpPaxosReport {
    pub committed: usize,
    pub learners: Vec<LearnerStats>,
    /// When the backup took over (s) and the longest gap between commits (ms).
    pub takeover: Option<(f64, f64)>,
}

/// Runs `cfg` until its duration or `stop`; `say` gets one line per node
/// (`NAME HOST:PORT`) and a line (starting `innet: `) per event. The
/// coordinator, acceptors, backup and learners are added to `metrics`.
pub fn up(cfg: &UpPaxos, stop: &Stop, metrics: &Sources, mut say: impl FnMut(&str)) -> anyhow::Result<UpPaxosReport> {
    let lc = &cfg.live;
    check_up(cfg)?;
    let mut plan = Plan::bind(lc)?;
    let core = plan.spawn_core(stop)?;
    metrics.program("coordinator", &core.coordinator);
    core.acceptors.iter().for_each(|a| metrics.program("acceptor", a));
    metrics.node("paxos", "backup", &core.backup);
    say(&format!("coordinator {}", plan.coordinator));
    for (i, addr) in plan.acceptors.iter().enumerate() {
        say(&format!("acceptor{i} {addr}"));
    }
    say(&format!("backup {}", plan.backup));
    let mut learners = vec![];
    for i in 0..lc.shape.learners {
        say(&format!("learner{i} {}", plan.learners[i]));
        if lc.external_learners {
            continue;
        }
        let socket = plan.take_learner_socket(i);
        let lcfg = lc.learner_config(i as u16);
        let learner = spawn_learner(&format!("learner{i}"), socket, plan.learner_options(i), lcfg, stop)?;
        metrics.node("paxos", "learner", &learner);
        learners.push(learner);
    }
    let far = clock::now() + Duration::from_secs_f64(cfg.load_s.unwrap_or(365.0 * 24.0 * 3600.0));
    let mut proposers = vec![];
    for i in 0..lc.shape.proposers {
        say(&format!("proposer{i} {}", plan.proposers[i]));
        proposers.push(spawn_load_proposer(lc, &mut plan, i, (cfg.outstanding.max(1), far, cfg.kv_load), stop)?);
    }
    say(&format!(
        "innet: CAANS with the coordinator and {} acceptors as {}; {} learners, {} load proposers. Ctrl-C to stop.",
        lc.shape.acceptors,
        if lc.data_plane == innet_core::deploy::DataPlaneAt::Process { "processes" } else { "software switches" },
        lc.shape.learners,
        lc.shape.proposers
    ));
    kill_on_timer(cfg, &core, stop, &mut say);
    let ps: Vec<LoadProposer> = proposers.into_iter().map(|p| p.shutdown()).collect::<Result<_, _>>()?;
    let learners = learners.into_iter().map(|l| l.shutdown()).collect::<Result<_, _>>()?;
    let backup = core.backup.shutdown()?;
    stop.stop();
    let takeover = backup.active_since().map(|t| (t.as_secs_f64(), longest_commit_gap_ms(&ps)));
    Ok(UpPaxosReport { committed: ps.iter().map(|p| p.commit_times_ns.len()).sum(), learners, takeover })
}

/// Checks `cfg` before anything binds, saying what is wrong.
fn check_up(cfg: &UpPaxos) -> anyhow::Result<()> {
    let lc = &cfg.live;
    let probe = PaxosConfig {
        acceptors: lc.shape.acceptors,
        learners: lc.shape.learners,
        proposers: lc.shape.proposers.max(1),
        outstanding: cfg.outstanding.max(1),
        slots: lc.params.slots,
        ..PaxosConfig::default()
    };
    probe.validate().map_err(anyhow::Error::msg)?;
    require_leveldb(cfg.kv_load)?;
    for (flag, v) in [("--load-s", cfg.load_s), ("--duration-s", cfg.duration_s)] {
        if let Some(v) = v {
            anyhow::ensure!(v > 0.0 && v <= 1e7, "{flag} {v} must be a number of seconds above 0");
        }
    }
    Ok(())
}

/// Runs until `stop` (or `cfg.duration_s`), stopping acceptor 0 and the
/// coordinator at their `kill_*_at_s` times (seconds from now).
fn kill_on_timer(cfg: &UpPaxos, core: &Core, stop: &Stop, say: &mut impl FnMut(&str)) {
    let started = Instant::now();
    let (mut killed_acc, mut killed_coord) = (false, false);
    while !stop.is_stopped() {
        std::thread::sleep(Duration::from_millis(10));
        let t = started.elapsed().as_secs_f64();
        if !killed_acc && cfg.kill_acceptor_at_s.is_some_and(|k| t >= k) {
            core.acceptors[0].stop();
            killed_acc = true;
            say(&format!("innet: stopped acceptor0 at {t:.3} s"));
        }
        if !killed_coord && cfg.kill_coordinator_at_s.is_some_and(|k| t >= k) {
            core.coordinator.stop();
            killed_coord = true;
            say(&format!("innet: stopped the coordinator at {t:.3} s"));
        }
        if cfg.duration_s.is_some_and(|d| t >= d) {
            break;
        }
    }
}

/// The longest gap between two commits of any of the proposers, ms.
fn longest_commit_gap_ms(ps: &[LoadProposer]) -> f64 {
    let mut times: Vec<u64> = ps.iter().flat_map(|p| p.commit_times_ns.iter().copied()).collect();
    times.sort_unstable();
    let gap = times.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
    gap as f64 / 1e6
}

/// Refuses key-value runs in an innet built without LevelDB.
fn require_leveldb(kv: bool) -> anyhow::Result<()> {
    anyhow::ensure!(
        !kv || cfg!(feature = "leveldb"),
        "the replicated key-value store needs LevelDB: build innet with the `leveldb` feature (on by default; \
         needs libleveldb-dev)"
    );
    Ok(())
}

/// Proposers submit key-value commands (`kv`) or opaque values.
fn with_kv_load(p: LoadProposer, kv: bool) -> LoadProposer {
    #[cfg(feature = "leveldb")]
    return innet_paxos_kv::with_kv_load(p, kv);
    #[cfg(not(feature = "leveldb"))]
    {
        assert!(!kv, "refused by require_leveldb");
        p
    }
}

/// A learner that is a key-value replica on a fresh LevelDB in `dir`
/// (Figure 7d).
#[cfg(feature = "leveldb")]
fn spawn_replica(
    dir: &std::path::Path,
    socket: std::net::UdpSocket,
    opts: innet_live::HostOptions,
    lcfg: innet_paxos::LearnerConfig,
    stop: &Stop,
) -> anyhow::Result<innet_live::NodeHandle<LearnerStats>> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir.parent().unwrap_or(dir))?;
    let replica = innet_paxos_kv::Replica::open(dir, lcfg).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
    let mut slot = Some(replica);
    let name = dir.file_name().map_or("replica".into(), |n| n.to_string_lossy().into_owned());
    Ok(spawn_host(&name, socket, opts, stop, move || slot.take().expect("built once"), |r, _| r.learner.stats)?)
}

#[cfg(not(feature = "leveldb"))]
fn spawn_replica(
    _: &std::path::Path,
    _: std::net::UdpSocket,
    _: innet_live::HostOptions,
    _: innet_paxos::LearnerConfig,
    _: &Stop,
) -> anyhow::Result<innet_live::NodeHandle<LearnerStats>> {
    unreachable!("refused by require_leveldb")
}
