//! `innet sim|check|bench|up paxos`: the consensus service (CAANS).

use std::time::Instant;

use crate::paxos::{DataPlaneAt, PaxosConfig};
use crate::paxos_sim;
use clap::Args;
use innet_paxos::deploy::{PaxosParams, PaxosShape};

/// The knobs of one consensus run, and optionally a topology file.
#[derive(Args, Debug, Clone)]
pub struct PaxosArgs {
    #[command(flatten)]
    pub point: PaxosConfig,
    /// Take the deployment (roles and their counts, data plane, [paxos]
    /// settings, fabric delay) from this topology file (docs/live.md).
    #[arg(long)]
    pub topology: Option<std::path::PathBuf>,
}

impl PaxosArgs {
    pub fn config(&self) -> anyhow::Result<PaxosConfig> {
        let c = match &self.topology {
            Some(path) => self.point.clone().with_topology(path).map_err(anyhow::Error::msg)?,
            None => self.point.clone(),
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
    #[command(flatten)]
    seeds: super::CheckSeeds,
    /// Comma-separated deployments to check: where the coordinator and acceptors run.
    #[arg(long, value_delimiter = ',', default_value = "switch,process", value_parser = crate::parse::sim_data_plane())]
    data_planes: Vec<DataPlaneAt>,
    /// Simulated seconds of submitting per run (then the network heals and runs drain).
    #[arg(long, default_value_t = 0.2, value_parser = crate::parse::seconds)]
    duration_s: f64,
}

pub fn run_check(a: CheckPaxosArgs) -> anyhow::Result<i32> {
    let dps = a.data_planes.clone();
    let (seeds, verbose) = a.seeds.range(super::CHECK_SEEDS);
    let r = crate::paxos_bench::check_seeds(seeds, &dps, a.duration_s, |run| {
        if verbose {
            println!("{}", serde_json::to_string(&run.config).unwrap_or_default());
            println!("network: {:?}", run.net);
            if let Ok(s) = &run.result {
                println!(
                    "ok: {s:?}, backup took over: {}, coordinator restarts: {}, handbacks: {}",
                    run.took_over, run.coordinator_restarts, run.handbacks
                );
            }
        }
    })?;
    for (seed, dp, what, replay) in &r.violations {
        println!("VIOLATION seed {seed} data plane {dp}: {what}\n  replay: {replay}");
    }
    println!(
        "checked {} runs ({} seeds x {} deployments, {} s of submitting each with loss/dup/reorder/jitter, then healed) \
         in {:.1} s: {} instances, {} values, {} no-ops, {} duplicates filtered; \
         backup took over in {} runs, acceptor crashed in {}, values packed in {}; coordinator restarted {} times \
         in {} runs (failback), the backup handed the role back {} times; {} violations",
        r.runs,
        r.seeds,
        r.deployments,
        r.duration_s,
        r.wall_seconds,
        r.instances,
        r.values,
        r.noops,
        r.duplicates,
        r.takeovers,
        r.crashes,
        r.packed,
        r.coordinator_restarts,
        r.failback_runs,
        r.handbacks,
        r.violations.len()
    );
    Ok(if r.violations.is_empty() { 0 } else { 1 })
}

#[derive(Args, Debug)]
pub struct BenchPaxosArgs {
    /// sim (deterministic, with per-packet cost models) or live (UDP on loopback).
    #[arg(long, value_enum, default_value = "sim")]
    pub runtime: crate::Runtime,
    /// Requests in flight per proposer, one sweep point each (Figure 7a).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16,32,64", value_parser = crate::parse::outstanding)]
    pub sweep: Vec<usize>,
    /// Skip the failure runs (Figure 8).
    #[arg(long)]
    pub no_failures: bool,
    /// Output folder (default results/paxos-<runtime>, or results/paxos-<figure>).
    #[arg(long, value_parser = crate::parse::out_dir)]
    pub out: Option<std::path::PathBuf>,
    /// Instead of the sweep: CPU per role at peak load, measured live (per
    /// thread) beside the simulator's service model: CAANS Figure 2 (every
    /// role a process) or Figure 7c (coordinator and acceptors in the data
    /// plane). Default load 4 s per deployment, 32 in flight.
    #[arg(long, value_enum)]
    pub figure: Option<RolesFigure>,
    /// With --figure fig7c: also the XDP testbed, coordinator and acceptors
    /// as BPF programs (needs root).
    #[arg(long, requires = "figure")]
    pub xdp: bool,
    /// Instead of the sweep: the cost of persistent acceptors, live, at the
    /// first --sweep point: acceptors in memory and with --fsync none,
    /// batch, always side by side, interleaved over this many rounds
    /// (their directories under --out).
    #[arg(long, value_name = "ROUNDS", conflicts_with = "figure", value_parser = crate::parse::bench_rounds)]
    pub acceptor_fsync: Option<usize>,
    /// Instead of the sweep: the cost of `innet kv-replica --fsync`, live:
    /// committed key-value puts/s from as many clients as the first
    /// --sweep point (each one request at a time) against three replicas
    /// with --fsync none, batch, always side by side, interleaved over
    /// this many rounds (their directories under --out).
    #[arg(long, value_name = "ROUNDS", conflicts_with_all = ["figure", "acceptor_fsync"], value_parser = crate::parse::bench_rounds)]
    pub replica_fsync: Option<usize>,
    #[command(flatten)]
    pub point: PaxosArgs,
}

/// The CPU-per-role figures of `bench paxos --figure`.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum RolesFigure {
    Fig2,
    Fig7c,
}

pub fn run_bench(a: BenchPaxosArgs) -> anyhow::Result<i32> {
    use crate::paxos_bench::{self, Runtime};
    let runtime = a.runtime;
    let base = bench_base(&a)?;
    let outstanding = a.sweep;
    let started = Instant::now();
    if let Some(rounds) = a.acceptor_fsync {
        return run_acceptor_fsync(&base, outstanding[0], rounds.max(1), a.out);
    }
    if let Some(rounds) = a.replica_fsync {
        return run_replica_fsync(outstanding[0], base.duration_s, rounds.max(1), a.out);
    }
    let mut rs = paxos_bench::sweep(runtime, &base, &outstanding)?;
    println!("Figure 7a ({}): throughput and latency by requests in flight", a.runtime.name());
    println!(
        "{:>10} {:>11} {:>14} {:>12} {:>12} {:>12}",
        "data plane", "outstanding", "committed/s", "mean us", "std us", "p99 us"
    );
    rs.iter().for_each(print_sweep_row);
    if runtime == Runtime::Live {
        print_against_ceiling(&rs, base.duration_s)?;
    }
    print_table4(runtime, &rs);
    if runtime == Runtime::Live {
        let ks = paxos_bench::kv_sweep(&base, &outstanding)?;
        println!("Figure 7d (live): replicated key-value store, LevelDB replicas as learners");
        ks.iter().for_each(print_sweep_row);
        rs.extend(ks);
    } else {
        println!("Figure 7d (replicated LevelDB) runs live only: innet bench paxos --runtime live");
    }
    if !a.no_failures {
        rs.extend(run_failures(runtime, &base)?);
    }
    let out = a.out.unwrap_or_else(|| std::path::PathBuf::from(format!("results/paxos-{}", a.runtime.name())));
    crate::results::check_writable(&out).map_err(anyhow::Error::msg)?;
    paxos_bench::write(&out, &rs)?;
    println!("{} records and plots in {} ({:.1} s)", rs.len(), out.display(), started.elapsed().as_secs_f64());
    Ok(0)
}

/// The benchmark's point: the flags, with the simulator's capacity model
/// unless costs were given, and the paper's ring unless `--slots` was.
fn bench_base(a: &BenchPaxosArgs) -> anyhow::Result<PaxosConfig> {
    use crate::paxos_bench::{self, Runtime};
    let mut base = a.point.config()?;
    if a.runtime == Runtime::Sim && a.point.point.switch_cost_us == 0.0 && a.point.point.software_cost_us == 0.0 {
        let m = paxos_bench::CAPACITY_MODEL;
        m.apply(&mut base);
        println!(
            "sim capacity model: switch {} us, software coordinator/acceptor {} us, learner/proposer {} us per packet; {} us links",
            m.switch_cost_us, m.software_cost_us, m.host_cost_us, m.latency_us
        );
    }
    if a.point.point.slots == innet_paxos::acceptor::ACCEPTOR_SLOTS_DEFAULT {
        base.slots = paxos_bench::PAPER_SLOTS;
    }
    Ok(base)
}

/// One line of Figure 7a's (or 7d's) table.
fn print_sweep_row(r: &crate::paxos::PaxosResult) {
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

/// Live: the generator's ceiling at each point's concurrency, in this run.
fn print_against_ceiling(rs: &[crate::paxos::PaxosResult], duration_s: f64) -> anyhow::Result<()> {
    use crate::paxos_bench;
    println!("generator's ceiling (a bare UDP echo on loopback at the same requests in flight; values sent to the coordinator and committed per second against it):");
    for r in rs {
        let c = paxos_bench::loopback_ceiling(r.config.proposers * r.config.outstanding, duration_s.min(1.0))?;
        let x = paxos_bench::AgainstCeiling::new(r, &c);
        println!(
            "{:>10} {:>11} {:>14.0} of {:.0} = {:.1}%{}",
            r.config.data_plane.name(),
            r.config.outstanding,
            x.instances_per_s,
            x.ceiling_per_s,
            x.of_ceiling * 1e2,
            if x.generator_bound { " (generator-bound)" } else { "" }
        );
    }
    Ok(())
}

/// The maximum throughputs' ratio and Table 4: latency at 25/50/75% of
/// each deployment's maximum.
fn print_table4(runtime: crate::paxos_bench::Runtime, rs: &[crate::paxos::PaxosResult]) {
    use crate::paxos_bench;
    let (s, w, ratio) = paxos_bench::max_throughput(rs);
    println!("max throughput: switch {s:.0}/s, software {w:.0}/s, ratio {ratio:.2}x (paper: 2.24x on its hardware)");
    println!(
        "Table 4 ({}): latency at 25/50/75% of each deployment's max throughput (nearest sweep point)",
        runtime.name()
    );
    for (dp, frac, r) in paxos_bench::table4(rs) {
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
}

/// Figure 8: the coordinator, then acceptor 0, failing half way through.
fn run_failures(
    runtime: crate::paxos_bench::Runtime,
    base: &PaxosConfig,
) -> anyhow::Result<Vec<crate::paxos::PaxosResult>> {
    let fbase = PaxosConfig { outstanding: 8, duration_s: base.duration_s.max(2.0), ..base.clone() };
    let fs = crate::paxos_bench::failures(runtime, &fbase)?;
    println!("Figure 8 ({}): failures half way through", runtime.name());
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
    Ok(fs)
}

/// Clients (threads) of `bench paxos --replica-fsync`.
pub const REPLICA_FSYNC_CLIENTS_MAX: usize = 64;

/// `innet bench paxos --replica-fsync ROUNDS`: committed key-value puts/s
/// with the replicas' writes synced under each policy, live.
fn run_replica_fsync(
    clients: usize,
    duration_s: f64,
    rounds: usize,
    out: Option<std::path::PathBuf>,
) -> anyhow::Result<i32> {
    anyhow::ensure!(
        (1..=REPLICA_FSYNC_CLIENTS_MAX).contains(&clients),
        "--replica-fsync takes its clients from the first --sweep point: {clients} is not in 1 ..= \
         {REPLICA_FSYNC_CLIENTS_MAX} (REPLICA_FSYNC_CLIENTS_MAX)"
    );
    let out = out.unwrap_or_else(|| std::path::PathBuf::from("results/paxos-replica-fsync"));
    crate::results::check_writable(&out).map_err(anyhow::Error::msg)?;
    #[cfg(feature = "leveldb")]
    {
        let rs = crate::paxos_bench::replica_fsync(clients, duration_s, &out.join("replicas"), rounds)?;
        println!(
            "key-value replicas (innet kv-replica --fsync), live, switch deployment, {clients} client(s) x 1 in \
             flight, {duration_s} s x {rounds} rounds: committed puts/s"
        );
        let rows: Vec<(&str, Vec<f64>)> = rs.into_iter().map(|(p, xs)| (p.name(), xs)).collect();
        print_policies(&rows);
        Ok(0)
    }
    #[cfg(not(feature = "leveldb"))]
    {
        let _ = (clients, duration_s, rounds);
        anyhow::bail!(
            "this innet was built without LevelDB (cargo feature `leveldb`): no key-value replicas to measure"
        )
    }
}

/// `innet bench paxos --acceptor-fsync ROUNDS`: committed values/s with the
/// acceptors in memory and on disk under each fsync policy, live.
fn run_acceptor_fsync(
    base: &crate::paxos::PaxosConfig,
    outstanding: usize,
    rounds: usize,
    out: Option<std::path::PathBuf>,
) -> anyhow::Result<i32> {
    let out = out.unwrap_or_else(|| std::path::PathBuf::from("results/paxos-acceptor-fsync"));
    crate::results::check_writable(&out).map_err(anyhow::Error::msg)?;
    let cfg = crate::paxos::PaxosConfig { outstanding, ..base.clone() };
    let rs = crate::paxos_bench::acceptor_fsync(&cfg, &out.join("acceptors"), rounds)?;
    println!(
        "persistent acceptors, live, {} deployment, {} proposer(s) x {outstanding} in flight, {} s x {rounds} rounds: committed/s",
        cfg.data_plane.name(),
        cfg.proposers,
        cfg.duration_s
    );
    let rows: Vec<(&str, Vec<f64>)> = rs.into_iter().map(|(p, xs)| (p.map_or("memory", |p| p.name()), xs)).collect();
    print_policies(&rows);
    Ok(0)
}

/// One line per policy: the median of its rounds, as a share of the first
/// policy's median, and every round.
fn print_policies(rows: &[(&str, Vec<f64>)]) {
    let median = |xs: &[f64]| {
        let mut v = xs.to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let Some((first, firsts)) = rows.first() else { return };
    let base = median(firsts);
    for (policy, xs) in rows {
        let m = median(xs);
        let each: Vec<String> = xs.iter().map(|x| format!("{x:.0}")).collect();
        println!("{policy:>8} median {m:>9.0} ({:>5.1}% of {first})  rounds {}", m / base * 1e2, each.join(" "));
    }
}

/// A coordinator, acceptors, backup coordinator and learners on loopback.
#[derive(Args, Debug)]
pub struct UpPaxosArgs {
    /// Where the coordinator and acceptors run: switch (user-space software switches) or process.
    #[arg(long, default_value = "switch", value_parser = crate::parse::data_plane())]
    data_plane: DataPlaneAt,
    /// Key file (lines `ID HEX`, 32 hex digits; the first seals, at most 2):
    /// every datagram between the nodes carries a SipHash-2-4 MAC trailer,
    /// and one without is refused (docs/security.md). With --topology it
    /// replaces the file's `auth_key`.
    #[arg(long, value_name = "FILE")]
    auth_key: Option<std::path::PathBuf>,
    #[arg(long, default_value_t = 3, value_parser = crate::parse::acceptors)]
    acceptors: usize,
    #[arg(long, default_value_t = 2, value_parser = crate::parse::learners)]
    learners: usize,
    /// Built-in load proposers (0: none; proposers in other processes reach
    /// the switch deployment's coordinator and get their votes back).
    #[arg(long, default_value_t = 1, value_parser = crate::parse::load_proposers)]
    proposers: usize,
    /// Requests each built-in proposer keeps in flight.
    #[arg(long, default_value_t = 8, value_parser = crate::parse::outstanding)]
    outstanding: usize,
    #[arg(long, default_value_t = innet_paxos::acceptor::ACCEPTOR_SLOTS_DEFAULT, value_parser = crate::parse::acceptor_slots)]
    slots: usize,
    /// First UDP port (consecutive ports: coordinator, acceptors, backup, learners, proposers); 0: any free ports.
    #[arg(long, default_value_t = 0)]
    base_port: u16,
    /// Stop after this many seconds (default: at Ctrl-C).
    #[arg(long, value_parser = crate::parse::seconds)]
    duration_s: Option<f64>,
    /// Stop acceptor 0 at this time (s), to watch deliveries go on.
    #[arg(long, value_parser = crate::parse::at_seconds)]
    kill_acceptor_at_s: Option<f64>,
    /// Stop the coordinator at this time (s), to watch the backup take over.
    #[arg(long, value_parser = crate::parse::at_seconds)]
    kill_coordinator_at_s: Option<f64>,
    /// Learners run as separate processes (`innet kv-replica`) at the
    /// addresses that follow from --base-port.
    #[arg(long, requires = "base_port")]
    external_learners: bool,
    /// Run only this node of the deployment (coordinator, acceptor0, acceptor1, ...)
    /// at the address --base-port gives it; the rest runs in another process
    /// started with --elsewhere NODE (so the node can be killed and restarted alone).
    #[arg(long, requires = "base_port", value_parser = innet_live::paxos::parse_program_role)]
    node: Option<innet_paxos::deploy::PaxosRole>,
    /// Nodes (coordinator, acceptorN; comma-separated) that run in other
    /// processes (`innet up paxos ... --node NODE`): not started here.
    #[arg(long, requires = "base_port", value_delimiter = ',', value_parser = innet_live::paxos::parse_program_role)]
    elsewhere: Vec<innet_paxos::deploy::PaxosRole>,
    /// Persistent acceptors: acceptor N keeps its promises and votes in
    /// DATA_DIR/acceptorN (created if missing) and restarts from them (CAANS
    /// section 3.1); without it acceptors are in memory and must not restart.
    #[arg(long, value_name = "DATA_DIR")]
    dir: Option<std::path::PathBuf>,
    /// With --dir: when the acceptors sync what they write: none (a process
    /// crash loses nothing, a power loss may), batch (once per received
    /// batch, before its answers leave) or always (every write).
    #[arg(long, default_value = "batch", requires = "dir", value_parser = |s: &str| s.parse::<innet_live::paxos::acceptor_store::Fsync>())]
    fsync: innet_live::paxos::acceptor_store::Fsync,
    /// Built-in proposers submit key-value commands (put/delete/get) instead of opaque values.
    #[arg(long)]
    kv_load: bool,
    /// Built-in proposers stop submitting after this many seconds.
    #[arg(long, value_parser = crate::parse::seconds)]
    load_s: Option<f64>,
    /// Most client values a built-in proposer packs into one instance's
    /// value (1: off); the load then submits 2-byte values.
    #[arg(long, default_value_t = 1, value_parser = crate::parse::pack)]
    pack: usize,
    #[command(flatten)]
    deployment: super::TopologyArgs,
    #[command(flatten)]
    metrics: super::MetricsArgs,
}

impl UpPaxosArgs {
    /// The deployment's shape from the flags. Failback (the coordinator in
    /// the vote group, a restarted coordinator taking the role back) where
    /// it can run: processes with a directory for the coordinator's epochs.
    fn shape(&self) -> PaxosShape {
        PaxosShape {
            acceptors: self.acceptors,
            learners: self.learners,
            proposers: self.proposers,
            failback: self.data_plane == DataPlaneAt::Process && self.dir.is_some(),
            ..PaxosShape::default()
        }
    }
    /// The flags' settings; the rest as every deployment's default.
    fn params(&self) -> PaxosParams {
        PaxosParams { slots: self.slots, pack: self.pack, ..PaxosParams::default() }
    }
}

/// `--auth-key FILE` covering every address (every party is a node).
fn auth_keys(file: &Option<std::path::PathBuf>) -> anyhow::Result<Option<std::sync::Arc<innet_live::auth::PeerAuth>>> {
    Ok(super::read_auth_key(file.as_deref())?.map(innet_live::auth::PeerAuth::all))
}

pub fn run_up(a: UpPaxosArgs) -> anyhow::Result<i32> {
    let auth = auth_keys(&a.auth_key)?;
    if a.deployment.topology.is_some() {
        let load = innet_live::up::UpLoad {
            duration: a.duration_s.map(std::time::Duration::from_secs_f64),
            outstanding: a.outstanding.max(1),
            pack: a.pack,
            ..innet_live::up::UpLoad::default()
        };
        return super::run_topology(&a.deployment, &a.metrics, "paxos", a.auth_key.as_deref(), load);
    }
    let cfg = crate::paxos_live::UpPaxos {
        live: innet_live::paxos::LiveConfig {
            data_plane: a.data_plane,
            shape: a.shape(),
            params: a.params(),
            base_port: a.base_port,
            external_learners: a.external_learners,
            auth,
            elsewhere: a.elsewhere,
            acceptor_store: a.dir.map(|dir| innet_live::paxos::acceptor_store::AcceptorStore { dir, fsync: a.fsync }),
            ..innet_live::paxos::LiveConfig::default()
        },
        outstanding: a.outstanding,
        load_s: a.load_s,
        kv_load: a.kv_load,
        duration_s: a.duration_s,
        kill_acceptor_at_s: a.kill_acceptor_at_s,
        kill_coordinator_at_s: a.kill_coordinator_at_s,
    };
    let stop = innet_live::stop_on_signals()?;
    if let Some(role) = a.node {
        return run_node(&cfg.live, role, a.duration_s, &stop);
    }
    let sources = innet_live::metrics::Sources::default();
    let _metrics = innet_live::metrics::serve(a.metrics.metrics, &sources)?;
    let r = crate::paxos_live::up(&cfg, &stop, &sources, |line| {
        if let Some(event) = line.strip_prefix("innet: ") {
            tracing::info!("{event}");
        } else {
            super::print_line(line);
        }
    })?;
    println!("proposers.committed {}", r.committed);
    for (i, l) in r.learners.iter().enumerate() {
        println!("learner{i}.delivered {}", l.delivered);
        println!("learner{i}.noops {}", l.noops);
        println!("learner{i}.duplicates {}", l.duplicates);
    }
    if let Some((t, gap)) = r.takeover {
        println!("backup.took_over_at_ms {:.1}", t * 1e3);
        println!("proposers.longest_gap_ms {gap:.1}");
    }
    Ok(0)
}

/// `innet up paxos --node NODE`: one coordinator or acceptor, alone, until
/// `stop` or `duration_s`.
fn run_node(
    live: &innet_live::paxos::LiveConfig,
    role: innet_paxos::deploy::PaxosRole,
    duration_s: Option<f64>,
    stop: &innet_live::Stop,
) -> anyhow::Result<i32> {
    anyhow::ensure!(
        !live.elsewhere.contains(&role),
        "--node {0} runs {0} here: do not also list it in --elsewhere",
        innet_live::paxos::role_label(role)
    );
    let node = innet_live::paxos::spawn_alone(live, role, stop)?;
    super::print_line(&format!("{} {}", innet_live::paxos::role_label(role), node.addr()));
    let started = std::time::Instant::now();
    while !stop.is_stopped() && duration_s.is_none_or(|d| started.elapsed().as_secs_f64() < d) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    stop.stop();
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
    #[arg(long, default_value_t = 3, value_parser = crate::parse::acceptors)]
    acceptors: usize,
    #[arg(long, default_value_t = 3, value_parser = crate::parse::learners)]
    learners: usize,
    /// The deployment's --slots (the acceptors' ring): a replica this many
    /// instances behind copies a snapshot from another replica (by TCP on
    /// the learners' port numbers) and follows the log from there.
    #[arg(long, default_value_t = innet_paxos::acceptor::ACCEPTOR_SLOTS_DEFAULT, value_parser = crate::parse::acceptor_slots)]
    slots: usize,
    /// UDP and TCP port network clients (`innet kv`) reach this replica on;
    /// 0: any free port (printed as `client HOST:PORT`).
    #[arg(long, default_value_t = 0)]
    client_port: u16,
    /// Print `applied N next I digest H keys K commands C malformed M snapshots S` this often (ms).
    #[arg(long, default_value_t = 200)]
    status_ms: u64,
    /// When the replica's LevelDB writes reach the disk relative to its
    /// answers: none (left to the kernel: a process crash loses nothing, a
    /// power loss may), batch (one sync per received batch of packets,
    /// before that batch's answers leave) or always (each applied write
    /// synced before its answer).
    #[arg(long, default_value = "batch", value_parser = |s: &str| s.parse::<innet_live::paxos::acceptor_store::Fsync>())]
    fsync: innet_live::paxos::acceptor_store::Fsync,
    /// The deployment's --auth-key file.
    #[arg(long, value_name = "FILE")]
    auth_key: Option<std::path::PathBuf>,
    #[command(flatten)]
    metrics: super::MetricsArgs,
}

pub fn run_kv_replica(a: KvReplicaArgs) -> anyhow::Result<i32> {
    anyhow::ensure!(a.id < a.learners, "--id {} must be below --learners {}", a.id, a.learners);
    let lc = innet_live::paxos::LiveConfig {
        shape: PaxosShape { acceptors: a.acceptors, learners: a.learners, ..PaxosShape::default() },
        params: PaxosParams { slots: a.slots, ..PaxosParams::default() },
        base_port: a.base_port,
        auth: auth_keys(&a.auth_key)?,
        ..innet_live::paxos::LiveConfig::default()
    };
    #[cfg(feature = "leveldb")]
    {
        let stop = innet_live::stop_on_signals()?;
        let every = std::time::Duration::from_millis(a.status_ms.max(10));
        let sources = innet_live::metrics::Sources::default();
        let _metrics = innet_live::metrics::serve(a.metrics.metrics, &sources)?;
        let started =
            |live: &innet_live::LiveCounters| sources.host("paxos", "replica", &format!("replica{}", a.id), live);
        let client = std::net::SocketAddr::new(lc.ip, a.client_port);
        let say = super::print_line;
        innet_paxos_kv::run_replica_synced(&lc, a.id, &a.data_dir, Some(client), every, a.fsync, &stop, say, started)?;
        Ok(0)
    }
    #[cfg(not(feature = "leveldb"))]
    {
        let _ = (lc, &a.data_dir, a.status_ms, a.metrics, a.client_port, a.fsync);
        anyhow::bail!(
            "this innet was built without LevelDB (cargo feature `leveldb`): install libleveldb-dev and build \
             with the default features"
        )
    }
}
