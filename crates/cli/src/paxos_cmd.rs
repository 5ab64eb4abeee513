//! `innet sim|check|bench|up paxos`: the consensus service (CAANS).

use std::time::Instant;

use clap::Args;
use innet_exp::paxos::{DataPlaneAt, PaxosConfig};
use innet_exp::paxos_sim;

/// The knobs of one consensus run (defaults: 3 acceptors, 2 learners, one
/// proposer with 8 requests in flight, 50 us links).
#[derive(Args, Debug, Clone)]
pub struct PaxosArgs {
    /// Where the coordinator and acceptors run: switch (data-plane programs) or software (processes).
    #[arg(long, default_value = "switch")]
    data_plane: String,
    #[arg(long, default_value_t = 3)]
    acceptors: usize,
    #[arg(long, default_value_t = 2)]
    learners: usize,
    #[arg(long, default_value_t = 1)]
    proposers: usize,
    /// Requests each proposer keeps in flight.
    #[arg(long, default_value_t = 8)]
    outstanding: usize,
    /// Seconds of submitting (simulated in the simulator).
    #[arg(long, default_value_t = 1.0)]
    duration_s: f64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// One-way latency of every link, microseconds.
    #[arg(long, default_value_t = 50.0)]
    latency_us: f64,
    #[arg(long, default_value_t = 0.0)]
    jitter_us: f64,
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    #[arg(long, default_value_t = 0.0)]
    duplicate: f64,
    #[arg(long, default_value_t = 0.0)]
    reorder: f64,
    /// Acceptor ring slots (power of two).
    #[arg(long, default_value_t = innet_paxos::acceptor::ACCEPTOR_SLOTS_DEFAULT)]
    slots: usize,
    /// Learners that must checkpoint an instance before its slot is reused (0: a majority).
    #[arg(long, default_value_t = 0)]
    trim_quorum: usize,
    /// Deliver as decided instead of in instance order.
    #[arg(long)]
    unordered: bool,
    /// Proposer resubmission timeout, ms.
    #[arg(long, default_value_t = 20.0)]
    timeout_ms: f64,
    /// Learner gap timeout, ms.
    #[arg(long, default_value_t = 10.0)]
    gap_timeout_ms: f64,
    /// Backup coordinator heartbeat interval, ms (takes over after 3 misses).
    #[arg(long, default_value_t = 10.0)]
    heartbeat_ms: f64,
    /// Fail the coordinator at this time (s).
    #[arg(long)]
    coordinator_fail_at_s: Option<f64>,
    /// Crash acceptor 0 at this time (s).
    #[arg(long)]
    acceptor_crash_at_s: Option<f64>,
    /// Restart acceptor 0 (with its state) at this time (s).
    #[arg(long)]
    acceptor_restart_at_s: Option<f64>,
    /// Simulator: per-packet cost of a switch pipeline, us.
    #[arg(long, default_value_t = 0.0)]
    switch_cost_us: f64,
    /// Simulator: per-packet cost of a software coordinator/acceptor process, us.
    #[arg(long, default_value_t = 0.0)]
    software_cost_us: f64,
    /// Simulator: per-packet cost of a learner/proposer process, us.
    #[arg(long, default_value_t = 0.0)]
    host_cost_us: f64,
    /// Take the deployment (roles and their counts, data plane, [paxos]
    /// settings, fabric delay) from this topology file (docs/live.md).
    #[arg(long)]
    topology: Option<std::path::PathBuf>,
}

impl PaxosArgs {
    pub fn config(&self) -> anyhow::Result<PaxosConfig> {
        let c = PaxosConfig {
            data_plane: self.data_plane.parse().map_err(anyhow::Error::msg)?,
            acceptors: self.acceptors,
            learners: self.learners,
            proposers: self.proposers,
            outstanding: self.outstanding,
            duration_s: self.duration_s,
            seed: self.seed,
            latency_us: self.latency_us,
            jitter_us: self.jitter_us,
            loss: self.loss,
            duplicate: self.duplicate,
            reorder: self.reorder,
            slots: self.slots,
            trim_quorum: self.trim_quorum,
            ordered: !self.unordered,
            timeout_ms: self.timeout_ms,
            gap_timeout_ms: self.gap_timeout_ms,
            heartbeat_ms: self.heartbeat_ms,
            coordinator_fail_at_s: self.coordinator_fail_at_s,
            acceptor_crash_at_s: self.acceptor_crash_at_s,
            acceptor_restart_at_s: self.acceptor_restart_at_s,
            switch_cost_us: self.switch_cost_us,
            software_cost_us: self.software_cost_us,
            host_cost_us: self.host_cost_us,
            kv: false,
        };
        let c = match &self.topology {
            Some(path) => from_topology(c, path)?,
            None => c,
        };
        c.validate().map_err(anyhow::Error::msg)?;
        Ok(c)
    }
}

#[derive(Args, Debug)]
pub struct SimPaxosArgs {
    #[command(flatten)]
    point: PaxosArgs,
    /// Print one JSON object instead of a sentence.
    #[arg(long)]
    json: bool,
    /// Record every delivery, drain after submitting stops, and run the
    /// agreement / validity / exactly-once / order checker on the run.
    #[arg(long)]
    check: bool,
}

/// `c` with the deployment of the topology file at `path`.
fn from_topology(c: PaxosConfig, path: &std::path::Path) -> anyhow::Result<PaxosConfig> {
    use innet_paxos::deploy::PaxosRole;
    let t = innet_live::topology::Topology::load(path)?;
    let innet_topology::Service::Paxos(p) = t.service else {
        anyhow::bail!("{} is a {} topology, not a consensus one", path.display(), t.service.name());
    };
    let d = &p.deployment;
    let count = |f: fn(&PaxosRole) -> bool| d.with_role(f).len();
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    Ok(PaxosConfig {
        data_plane: p.data_plane,
        acceptors: count(|r| matches!(r, PaxosRole::Acceptor { .. })),
        learners: count(|r| matches!(r, PaxosRole::Learner { .. })),
        proposers: count(|r| matches!(r, PaxosRole::Proposer { .. })),
        // A file for the live runtime has no fabric delay; the simulator
        // keeps the configured one then.
        latency_us: d.fabric.filter(|f| !f.is_zero()).map_or(c.latency_us, |f| f.as_secs_f64() * 1e6),
        slots: p.params.slots,
        trim_quorum: p.params.trim_quorum,
        ordered: p.params.ordered,
        timeout_ms: ms(p.params.proposer_timeout),
        gap_timeout_ms: ms(p.params.gap_timeout),
        heartbeat_ms: ms(p.params.heartbeat),
        ..c
    })
}

pub fn run_sim(a: SimPaxosArgs) -> anyhow::Result<i32> {
    let cfg = a.point.config()?;
    if a.check {
        let started = Instant::now();
        let run = paxos_sim::run_checked(&cfg).map_err(anyhow::Error::msg)?;
        return Ok(match run.result {
            Ok(s) => {
                println!(
                    "checked: {} instances ({} values, {} no-ops, {} duplicates filtered) delivered identically and \
                     exactly once by all {} learners; acceptor ring {} slots; {:.1} s",
                    s.instances,
                    s.values,
                    s.noops,
                    s.duplicates,
                    cfg.learners,
                    cfg.slots,
                    started.elapsed().as_secs_f64()
                );
                0
            }
            Err(e) => {
                println!("VIOLATION: {e}");
                1
            }
        });
    }
    let r = paxos_sim::run_point_sim(&cfg)?;
    if a.json {
        println!("{}", serde_json::to_string(&r)?);
    } else {
        println!(
            "{} acceptors={} outstanding={}: {:.0} committed/s, latency mean {:.1} us std {:.1} us p99 {:.1} us, \
             learner0 delivered {} (no-ops {}, duplicates {}){} (seed {})",
            cfg.data_plane.name(),
            cfg.acceptors,
            cfg.outstanding,
            r.committed_per_s,
            r.mean_latency_us,
            r.std_latency_us,
            r.p99_latency_us,
            r.delivered,
            r.noops,
            r.duplicates,
            r.takeover_at_s.map(|t| format!(", backup took over at {t:.3} s")).unwrap_or_default(),
            cfg.seed
        );
    }
    Ok(0)
}

#[derive(Args, Debug)]
pub struct CheckPaxosArgs {
    /// Number of random seeds (each runs in both deployments).
    #[arg(long, default_value_t = 100)]
    seeds: u64,
    #[arg(long, default_value_t = 1)]
    start_seed: u64,
    /// Replay just this seed (prints the configuration and network totals).
    #[arg(long)]
    seed: Option<u64>,
    /// Comma-separated deployments to check.
    #[arg(long, default_value = "switch,software")]
    dataplanes: String,
    /// Simulated seconds of submitting per run (then the network heals and runs drain).
    #[arg(long, default_value_t = 0.2)]
    duration_s: f64,
}

pub fn run_check(a: CheckPaxosArgs) -> anyhow::Result<i32> {
    anyhow::ensure!(a.duration_s > 0.0, "--duration-s must be > 0");
    let dps: Vec<DataPlaneAt> = a
        .dataplanes
        .split(',')
        .map(|s| s.trim().parse::<DataPlaneAt>().map_err(anyhow::Error::msg))
        .collect::<Result<_, _>>()?;
    let (seeds, verbose) = match a.seed {
        Some(s) => (s..s + 1, true),
        None => (a.start_seed..a.start_seed + a.seeds, false),
    };
    let started = Instant::now();
    let (mut runs, mut bad, mut takeovers, mut crashes) = (0u64, 0u64, 0u64, 0u64);
    let (mut instances, mut values, mut noops, mut dups) = (0u64, 0u64, 0u64, 0u64);
    let jobs: Vec<(u64, DataPlaneAt)> = seeds.clone().flat_map(|s| dps.iter().map(move |&d| (s, d))).collect();
    // Runs are independent: spread them over the cores, report in order.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(jobs.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut outcomes: Vec<Option<paxos_sim::CheckedRun>> = Vec::new();
    outcomes.resize_with(jobs.len(), || None);
    let outcomes = std::sync::Mutex::new(outcomes);
    std::thread::scope(|sc| {
        for _ in 0..threads {
            sc.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&(seed, dp)) = jobs.get(i) else { break };
                let cfg = paxos_sim::random_check_config(seed, dp, a.duration_s);
                let run = paxos_sim::run_checked(&cfg).expect("random configurations are valid");
                outcomes.lock().expect("no panics while held")[i] = Some(run);
            });
        }
    });
    let outcomes = outcomes.into_inner().expect("threads joined");
    for (&(seed, dp), run) in jobs.iter().zip(outcomes) {
        let run = run.expect("every job ran");
        let cfg = &run.config;
        runs += 1;
        takeovers += run.took_over as u64;
        crashes += cfg.acceptor_crash_at_s.is_some() as u64;
        if verbose {
            println!("{}", serde_json::to_string(cfg)?);
            println!("network: {:?}", run.net);
        }
        let replay =
            format!("innet check paxos --seed {seed} --dataplanes {} --duration-s {}", dp.name(), a.duration_s);
        match &run.result {
            Ok(s) => {
                instances += s.instances as u64;
                values += s.values as u64;
                noops += s.noops as u64;
                dups += s.duplicates as u64;
                if verbose {
                    println!("ok: {s:?}, backup took over: {}", run.took_over);
                }
            }
            Err(e) => {
                bad += 1;
                println!("VIOLATION seed {seed} dataplane {}: {e}\n  replay: {replay}", dp.name());
            }
        }
        // Determinism: the first seed of every deployment runs twice.
        if seed == seeds.start {
            let again = paxos_sim::run_checked(cfg).map_err(anyhow::Error::msg)?;
            if again.trace_hash != run.trace_hash {
                bad += 1;
                println!("NONDETERMINISM seed {seed} dataplane {}: trace hashes differ\n  replay: {replay}", dp.name());
            }
        }
    }
    println!(
        "checked {runs} runs ({} seeds x {} deployments, {} s of submitting each with loss/dup/reorder/jitter, then healed) \
         in {:.1} s: {instances} instances, {values} values, {noops} no-ops, {dups} duplicates filtered; \
         backup took over in {takeovers} runs, acceptor crashed in {crashes}; {bad} violations",
        seeds.end - seeds.start,
        dps.len(),
        a.duration_s,
        started.elapsed().as_secs_f64(),
    );
    Ok(if bad == 0 { 0 } else { 1 })
}

#[derive(Args, Debug)]
pub struct BenchPaxosArgs {
    /// sim (deterministic, with per-packet cost models) or live (UDP on loopback).
    #[arg(long, default_value = "sim")]
    runtime: String,
    /// Requests in flight per proposer, one sweep point each (Figure 7a).
    #[arg(long, default_value = "1,2,4,8,16,32,64")]
    sweep: String,
    /// Skip the failure runs (Figure 8).
    #[arg(long)]
    no_failures: bool,
    /// Output folder (default results/paxos-<runtime>).
    #[arg(long)]
    out: Option<std::path::PathBuf>,
    #[command(flatten)]
    point: PaxosArgs,
}

pub fn run_bench(a: BenchPaxosArgs) -> anyhow::Result<i32> {
    use innet_exp::paxos_bench::{self, Runtime};
    let runtime = match a.runtime.as_str() {
        "sim" => Runtime::Sim,
        "live" => Runtime::Live,
        other => anyhow::bail!("--runtime {other}: expected sim or live"),
    };
    let mut base = a.point.config()?;
    if runtime == Runtime::Sim && a.point.switch_cost_us == 0.0 && a.point.software_cost_us == 0.0 {
        // The capacity model (docs/paxos.md): a switch pipeline at ~10 M
        // packets/s, a software coordinator/acceptor process and a learner
        // or proposer process at the costs that make libpaxos's coordinator
        // and CAANS's learners the bottlenecks, as in the paper's section 2.
        base.switch_cost_us = 0.1;
        base.software_cost_us = 12.0;
        base.host_cost_us = 2.0;
        base.latency_us = 10.0;
        println!("sim capacity model: switch 0.1 us, software coordinator/acceptor 12 us, learner/proposer 2 us per packet; 10 us links");
    }
    if a.point.slots == innet_paxos::acceptor::ACCEPTOR_SLOTS_DEFAULT {
        // The paper's FPGA acceptors held 65,535 instances (Table 3). With a
        // saturated learner falling behind, a 1,024-slot ring throttles the
        // coordinator (dropped requests wait for a proposer timeout).
        base.slots = 65536;
    }
    let outstanding: Vec<usize> = a
        .sweep
        .split(',')
        .map(|s| s.trim().parse::<usize>().map_err(|_| anyhow::anyhow!("--sweep: '{s}' is not a number")))
        .collect::<Result<_, _>>()?;
    let started = Instant::now();
    let mut rs = paxos_bench::sweep(runtime, &base, &outstanding)?;
    println!("Figure 7a ({}): throughput and latency by requests in flight", a.runtime);
    println!(
        "{:>10} {:>11} {:>14} {:>12} {:>12} {:>12}",
        "dataplane", "outstanding", "committed/s", "mean us", "std us", "p99 us"
    );
    for r in &rs {
        println!(
            "{:>10} {:>11} {:>14.0} {:>12.1} {:>12.1} {:>12.1}",
            r.config.data_plane.name(),
            r.config.outstanding,
            r.committed_per_s,
            r.mean_latency_us,
            r.std_latency_us,
            r.p99_latency_us
        );
    }
    let (s, w, ratio) = paxos_bench::max_throughput(&rs);
    println!("max throughput: switch {s:.0}/s, software {w:.0}/s, ratio {ratio:.2}x (paper: 2.24x on its hardware)");
    println!("Table 4 ({}): latency at 25/50/75% of each deployment's max throughput (nearest sweep point)", a.runtime);
    for (dp, frac, r) in paxos_bench::table4(&rs) {
        println!(
            "{:>10} {:>4.0}%  point {:>8.0}/s ({:>3} in flight)  mean {:>9.1} us  std {:>9.1} us",
            dp.name(),
            frac * 100.0,
            r.committed_per_s,
            r.config.outstanding,
            r.mean_latency_us,
            r.std_latency_us
        );
    }
    if runtime == Runtime::Live {
        let ks = paxos_bench::kv_sweep(&base, &outstanding)?;
        println!("Figure 7d (live): replicated key-value store, LevelDB replicas as learners");
        for r in &ks {
            println!(
                "{:>10} {:>11} {:>14.0} {:>12.1} {:>12.1} {:>12.1}",
                r.config.data_plane.name(),
                r.config.outstanding,
                r.committed_per_s,
                r.mean_latency_us,
                r.std_latency_us,
                r.p99_latency_us
            );
        }
        rs.extend(ks);
    } else {
        println!("Figure 7d (replicated LevelDB) runs live only: innet bench paxos --runtime live");
    }
    if !a.no_failures {
        let fbase =
            innet_exp::paxos::PaxosConfig { outstanding: 8, duration_s: base.duration_s.max(2.0), ..base.clone() };
        let fs = paxos_bench::failures(runtime, &fbase)?;
        println!("Figure 8 ({}): failures half way through", a.runtime);
        for r in &fs {
            let what = if r.config.coordinator_fail_at_s.is_some() { "coordinator" } else { "acceptor 0" };
            println!(
                "{:>10} {what:>12} dies: {:.0} committed/s overall, longest gap after the failure {:.1} ms{}",
                r.config.data_plane.name(),
                r.committed_per_s,
                r.failover_gap_ms.unwrap_or(0.0),
                r.takeover_at_s.map(|t| format!(", backup took over at {t:.3} s")).unwrap_or_default()
            );
        }
        rs.extend(fs);
    }
    let out = a.out.unwrap_or_else(|| std::path::PathBuf::from(format!("results/paxos-{}", a.runtime)));
    paxos_bench::write(&out, &rs)?;
    println!("{} records and plots in {} ({:.1} s)", rs.len(), out.display(), started.elapsed().as_secs_f64());
    Ok(0)
}

/// A coordinator, acceptors, backup coordinator and learners on loopback.
#[derive(Args, Debug)]
pub struct UpPaxosArgs {
    /// switch (coordinator and acceptors in software switches) or software (as processes).
    #[arg(long, default_value = "switch")]
    data_plane: String,
    #[arg(long, default_value_t = 3)]
    acceptors: usize,
    #[arg(long, default_value_t = 2)]
    learners: usize,
    /// Built-in load proposers (0: none; proposers in other processes reach
    /// the switch deployment's coordinator and get their votes back).
    #[arg(long, default_value_t = 1)]
    proposers: usize,
    /// Requests each built-in proposer keeps in flight.
    #[arg(long, default_value_t = 8)]
    outstanding: usize,
    #[arg(long, default_value_t = innet_paxos::acceptor::ACCEPTOR_SLOTS_DEFAULT)]
    slots: usize,
    /// First UDP port (consecutive ports: coordinator, acceptors, backup, learners, proposers); 0: any free ports.
    #[arg(long, default_value_t = 0)]
    base_port: u16,
    /// Stop after this many seconds (default: at Ctrl-C).
    #[arg(long)]
    duration_s: Option<f64>,
    /// Stop acceptor 0 at this time (s), to watch deliveries go on.
    #[arg(long)]
    kill_acceptor_at_s: Option<f64>,
    /// Stop the coordinator at this time (s), to watch the backup take over.
    #[arg(long)]
    kill_coordinator_at_s: Option<f64>,
    /// Learners run as separate processes (`innet kv-replica`) at the
    /// addresses that follow from --base-port.
    #[arg(long, requires = "base_port")]
    external_learners: bool,
    /// Built-in proposers submit key-value commands (put/delete/get) instead of opaque values.
    #[arg(long)]
    kv_load: bool,
    /// Built-in proposers stop submitting after this many seconds.
    #[arg(long)]
    load_s: Option<f64>,
    #[command(flatten)]
    deployment: crate::live_cmd::TopologyArgs,
}

pub fn run_up(a: UpPaxosArgs) -> anyhow::Result<i32> {
    if a.deployment.topology.is_some() {
        let load = innet_exp::up::UpLoad {
            duration: a.duration_s.map(std::time::Duration::from_secs_f64),
            outstanding: a.outstanding.max(1),
            ..innet_exp::up::UpLoad::default()
        };
        return crate::live_cmd::run_topology(&a.deployment, "paxos", load);
    }
    use innet_live::paxos::{LiveConfig, Plan};
    use innet_live::{clock, spawn_host, Stop};
    use innet_paxos::workload::LoadProposer;
    use innet_paxos::{Learner, Proposer};
    let lc = LiveConfig {
        data_plane: a.data_plane.parse::<DataPlaneAt>().map_err(anyhow::Error::msg)?,
        acceptors: a.acceptors,
        learners: a.learners,
        proposers: a.proposers,
        slots: a.slots,
        base_port: a.base_port,
        external_learners: a.external_learners,
        ..LiveConfig::default()
    };
    let probe = PaxosConfig {
        acceptors: a.acceptors,
        learners: a.learners,
        proposers: a.proposers.max(1),
        outstanding: a.outstanding.max(1),
        slots: a.slots,
        ..PaxosConfig::default()
    };
    probe.validate().map_err(anyhow::Error::msg)?;
    let stop = Stop::new();
    stop.on_signals()?;
    let mut plan = Plan::bind(&lc)?;
    let core = plan.spawn_core(&stop)?;
    println!("coordinator {}", plan.coordinator);
    for (i, addr) in plan.acceptors.iter().enumerate() {
        println!("acceptor{i} {addr}");
    }
    println!("backup {}", plan.backup);
    let mut learners = vec![];
    for i in 0..lc.learners {
        println!("learner{i} {}", plan.learners[i]);
        if a.external_learners {
            continue;
        }
        let socket = plan.take_learner_socket(i);
        let cfg = lc.learner_config(i as u16);
        learners.push(spawn_host(
            &format!("learner{i}"),
            socket,
            plan.learner_options(i),
            &stop,
            move || Learner::new(cfg),
            |l, _| l,
        )?);
    }
    let far = clock::now() + std::time::Duration::from_secs_f64(a.load_s.unwrap_or(365.0 * 24.0 * 3600.0));
    let kv_load = a.kv_load;
    let mut proposers = vec![];
    for i in 0..lc.proposers {
        println!("proposer{i} {}", plan.proposers[i]);
        let socket = plan.take_proposer_socket(i);
        let cfg = lc.fresh_proposer_config(i);
        let n = a.outstanding.max(1);
        proposers.push(spawn_host(
            &format!("proposer{i}"),
            socket,
            plan.proposer_options(),
            &stop,
            move || innet_paxos_kv::with_kv_load(LoadProposer::new(Proposer::new(cfg), n, far, false), kv_load),
            |p, _| p,
        )?);
    }
    eprintln!(
        "innet: CAANS with the coordinator and {} acceptors as {}; {} learners, {} load proposers. Ctrl-C to stop.",
        a.acceptors,
        if lc.data_plane == DataPlaneAt::Process { "processes" } else { "software switches" },
        a.learners,
        a.proposers
    );
    let started = Instant::now();
    let (mut killed_acc, mut killed_coord) = (false, false);
    while !stop.is_stopped() {
        std::thread::sleep(std::time::Duration::from_millis(10));
        let t = started.elapsed().as_secs_f64();
        if !killed_acc && a.kill_acceptor_at_s.is_some_and(|k| t >= k) {
            core.acceptors[0].stop();
            killed_acc = true;
            eprintln!("innet: stopped acceptor0 at {t:.3} s");
        }
        if !killed_coord && a.kill_coordinator_at_s.is_some_and(|k| t >= k) {
            core.coordinator.stop();
            killed_coord = true;
            eprintln!("innet: stopped the coordinator at {t:.3} s");
        }
        if a.duration_s.is_some_and(|d| t >= d) {
            break;
        }
    }
    let ps: Vec<LoadProposer> = proposers.into_iter().map(|p| p.shutdown()).collect::<Result<_, _>>()?;
    let ls: Vec<Learner> = learners.into_iter().map(|l| l.shutdown()).collect::<Result<_, _>>()?;
    let backup = core.backup.shutdown()?;
    stop.stop();
    let commits: usize = ps.iter().map(|p| p.commit_times_ns.len()).sum();
    println!("proposers.committed {commits}");
    for (i, l) in ls.iter().enumerate() {
        println!("learner{i}.delivered {}", l.stats.delivered);
        println!("learner{i}.noops {}", l.stats.noops);
        println!("learner{i}.duplicates {}", l.stats.duplicates);
    }
    if let Some(t) = backup.active_since() {
        let mut times: Vec<u64> = ps.iter().flat_map(|p| p.commit_times_ns.iter().copied()).collect();
        times.sort_unstable();
        let gap = times.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
        println!("backup.took_over_at_ms {:.1}", t.as_secs_f64() * 1e3);
        println!("proposers.longest_gap_ms {:.1}", gap as f64 / 1e6);
    }
    Ok(0)
}

/// A key-value replica (a learner applying commands to LevelDB) of a
/// deployment started with `innet up paxos --base-port P --external-learners`.
#[derive(Args, Debug)]
pub struct KvReplicaArgs {
    /// Learner id (0..learners); the replica listens at the address that follows from --base-port.
    #[arg(long)]
    id: usize,
    /// LevelDB directory (created if missing; reopened after a restart).
    #[arg(long)]
    data_dir: std::path::PathBuf,
    /// The deployment's --base-port.
    #[arg(long)]
    base_port: u16,
    #[arg(long, default_value_t = 3)]
    acceptors: usize,
    #[arg(long, default_value_t = 3)]
    learners: usize,
    /// Print `applied N next I digest H keys K` this often (ms).
    #[arg(long, default_value_t = 200)]
    status_ms: u64,
}

pub fn run_kv_replica(a: KvReplicaArgs) -> anyhow::Result<i32> {
    use innet_live::paxos::LiveConfig;
    use innet_live::{spawn_host, Stop};
    use std::sync::{Arc, Mutex};
    anyhow::ensure!(a.id < a.learners, "--id {} must be below --learners {}", a.id, a.learners);
    let lc =
        LiveConfig { acceptors: a.acceptors, learners: a.learners, base_port: a.base_port, ..LiveConfig::default() };
    let (addr, opts) = lc.external_learner(a.id)?;
    let replica = innet_paxos_kv::Replica::open(&a.data_dir, lc.learner_config(a.id as u16))
        .map_err(|e| anyhow::anyhow!("opening {}: {e:?}", a.data_dir.display()))?;
    let status = Arc::new(Mutex::new(String::new()));
    let stop = Stop::new();
    stop.on_signals()?;
    let socket = innet_live::txn::bind(addr)?;
    println!("replica{} {addr}", a.id);
    let shared = status.clone();
    // The replica runs in the node's thread; a status line is published
    // through `shared` after every tick (the host is not Send).
    struct Reporting {
        replica: innet_paxos_kv::Replica,
        shared: Arc<Mutex<String>>,
        every: std::time::Duration,
        next: innet_core::Time,
    }
    impl innet_core::Host for Reporting {
        fn on_packet(&mut self, now: innet_core::Time, p: &[u8], out: &mut innet_core::Outbox) {
            self.replica.on_packet(now, p, out);
        }
        fn on_tick(&mut self, now: innet_core::Time, out: &mut innet_core::Outbox) {
            self.replica.on_tick(now, out);
            if now >= self.next {
                let r = &self.replica;
                *self.shared.lock().unwrap_or_else(|e| e.into_inner()) = format!(
                    "applied {} next {} digest {:016x} keys {}",
                    r.applied,
                    r.learner.checkpoint(),
                    r.digest(),
                    r.contents().len()
                );
                self.next = now + self.every;
            }
        }
        fn next_tick(&self) -> Option<innet_core::Time> {
            Some(self.replica.next_tick().map_or(self.next, |t| t.min(self.next)))
        }
    }
    let every = std::time::Duration::from_millis(a.status_ms.max(10));
    let node = spawn_host(
        "replica",
        socket,
        opts,
        &stop,
        move || Reporting { replica, shared, every, next: innet_core::Time::ZERO },
        |_, _| (),
    )?;
    let mut last = String::new();
    while !stop.is_stopped() && !node.is_finished() {
        std::thread::sleep(every);
        let s = status.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if s != last && !s.is_empty() {
            println!("{s}");
            last = s;
        }
    }
    node.shutdown()?;
    Ok(0)
}
