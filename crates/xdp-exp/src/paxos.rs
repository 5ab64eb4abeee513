//! `innet bench xdp-paxos`: CAANS end to end with the coordinator and the
//! acceptors as BPF programs (the `paxos` testbed), against the same
//! programs as user-space processes (`DataPlaneAt::Process`, libpaxos-style)
//! and as user-space software switches (`DataPlaneAt::Switch`), at equal
//! client load, side by side in one run; and the testbed's end hosts
//! (`innet bench xdp-paxos-hosts`), which the benchmark runs on threads in
//! the hosts namespace.
//!
//! **The generator's ceiling**, measured in every round: the batched load
//! generator ([`innet_bench::loadgen`]) at the same concurrency (proposers x
//! requests in flight), with packets of the P4xos length, against (1) the
//! XDP coordinator itself reflecting HEARTBEATs (`XDP_TX` on the same veth
//! the proposers' requests take: the cheapest answer on the XDP
//! deployment's path, so no end host on that path completes more round
//! trips) and (2) a bare user-space UDP echo on loopback
//! ([`loadgen::ceiling`]: the path of the software deployments). A figure
//! within 20% of its ceiling is generator-bound ([`loadgen::generator_bound`],
//! compared in values sent to the coordinator per second, which packing
//! makes fewer than client values).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, ValueEnum};
use serde::Serialize;

use innet_live::Stop;
use innet_paxos::acceptor::ACCEPTOR_SLOTS_DEFAULT;
use innet_xdp::fabric::{Fabric, XdpMode};
use innet_xdp::paxos::Multicast;
use innet_xdp::paxos_hosts::{self, BackupAt, HostsRun};
use innet_xdp::paxos_learner::RingOpts;
use innet_xdp::paxos_testbed::{self as tb, Decisions, PaxosUp};
use innet_xdp::testbed::in_netns;

use innet_wire::paxos::{MsgType, PaxosMsg, Value};

use innet_bench::cpu::CpuPerValue;
use innet_bench::loadgen::{self, LoadReport, Reply, Service, TAG_LEN};
use innet_exp::paxos::{DataPlaneAt, PaxosConfig, PaxosResult};
use innet_exp::paxos_bench::{ceiling_config, loopback_ceiling, AgainstCeiling};
use innet_exp::paxos_live::{live_config, run_point_live};
use innet_exp::paxos_sim::make_result;
use innet_exp::results;

/// The load of one deployment (also the flags of `bench xdp-paxos` and
/// `bench xdp-paxos-hosts`).
#[derive(Args, Debug, Clone)]
pub struct XdpPaxosLoad {
    #[arg(long, default_value_t = 3, value_parser = innet_exp::parse::acceptors)]
    pub acceptors: usize,
    #[arg(long, default_value_t = 2, value_parser = innet_exp::parse::learners)]
    pub learners: usize,
    #[arg(long, default_value_t = 2, value_parser = innet_exp::parse::proposers)]
    pub proposers: usize,
    /// Requests each proposer keeps in flight.
    #[arg(long, default_value_t = 32, value_parser = innet_exp::parse::outstanding)]
    pub outstanding: usize,
    /// Seconds of load per deployment.
    #[arg(long, default_value_t = 3.0, value_parser = innet_exp::parse::seconds)]
    pub duration_s: f64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The acceptors' ring (a power of two).
    #[arg(long, default_value_t = ACCEPTOR_SLOTS_DEFAULT, value_parser = innet_exp::parse::acceptor_slots)]
    pub slots: usize,
    /// Fail the coordinator this many seconds into the load (XDP: its
    /// links go down; software: its thread stops); the backup takes over.
    #[arg(long, value_parser = innet_exp::parse::at_seconds)]
    pub kill_coordinator_at_s: Option<f64>,
    /// Fail acceptor 0 this many seconds into the load (XDP: its links go
    /// down; software: it stops answering), as in CAANS Figure 8a.
    #[arg(long, value_parser = innet_exp::parse::at_seconds)]
    pub fail_acceptor_at_s: Option<f64>,
    /// XDP deployment: count the votes in the kernel in front of the
    /// learners and proposers (`on`), not (`off`), or run it both ways
    /// side by side (`both`, `bench xdp-paxos` only).
    #[arg(long, value_enum, default_value = "on")]
    pub vote_counters: VoteCounters,
    /// Most client values a proposer packs into one instance's value (1:
    /// off; every deployment of the run packs alike); the load then
    /// submits 2-byte values.
    #[arg(long, default_value_t = 1, value_parser = innet_exp::parse::pack)]
    pub pack: usize,
    #[command(flatten)]
    pub fabric: PaxosFabricArgs,
    /// Key file (lines `ID HEX`; docs/security.md): the XDP deployment's
    /// coordinator, acceptors and vote counter and its end hosts seal and
    /// check every message (`innet testbed up paxos --auth-key`). The
    /// software deployments of `bench xdp-paxos` run without keys (their
    /// cost: `innet up paxos --auth-key`).
    #[arg(long, value_name = "FILE", value_parser = innet_exp::parse::key_file)]
    pub auth_key: Option<innet_live::auth::KeyFile>,
}

/// How the XDP deployment's fabric runs (issue 20's levers; every record
/// carries them).
#[derive(Args, Debug, Clone, Serialize)]
pub struct PaxosFabricArgs {
    /// Driver-mode (`native`) or `generic` XDP on every device.
    #[arg(long, value_enum, default_value = "native")]
    pub xdp_mode: XdpMode,
    /// Threaded NAPI (driver mode): `entry` (the coordinator's device
    /// only: the end hosts on one CPU, the whole fabric in that thread on
    /// another, one wake-up per batch), `on` (every veth: a wake-up per
    /// hop) or `off` (every hop in the sender's own system call).
    #[arg(long, value_enum, default_value = "entry")]
    pub threaded_napi: innet_xdp::fabric::ThreadedNapi,
    /// How multicast copies leave the coordinator (and, with one vote per
    /// machine, the acceptors): `devmap` broadcast or `tc` clones.
    #[arg(long, value_enum, default_value = "devmap")]
    pub multicast: McastArg,
    /// How the acceptors' votes reach the end hosts and decisions go up:
    /// `ring` (one vote per machine, counted once, decisions through a BPF
    /// ring buffer), `socket` (the same, decisions as packets) or
    /// `per-port` (every role its own votes, as before).
    #[arg(long, value_enum, default_value = "ring")]
    pub decisions: Decisions,
    /// The decision ring's size in bytes (a power of two, 64 per decision).
    #[arg(long, default_value_t = innet_xdp::paxos_learner::RING_BYTES_DEFAULT)]
    pub ring_bytes: usize,
    /// Wake the ring's reader once this many decisions wait (it also
    /// looks every 200 us); 0: the kernel's adaptive rule, waking only a
    /// reader that has caught up.
    #[arg(long, default_value_t = innet_xdp::paxos_learner::RING_WAKEUP_DEFAULT)]
    pub ring_wakeup: u32,
}

impl Default for PaxosFabricArgs {
    fn default() -> Self {
        PaxosFabricArgs {
            xdp_mode: XdpMode::Native,
            threaded_napi: innet_xdp::fabric::ThreadedNapi::Entry,
            multicast: McastArg::Devmap,
            decisions: Decisions::Ring,
            ring_bytes: innet_xdp::paxos_learner::RING_BYTES_DEFAULT,
            ring_wakeup: innet_xdp::paxos_learner::RING_WAKEUP_DEFAULT,
        }
    }
}

/// On or off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnOff {
    On,
    Off,
}

/// `--multicast`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum McastArg {
    Devmap,
    Tc,
}

impl From<McastArg> for Multicast {
    fn from(m: McastArg) -> Multicast {
        match m {
            McastArg::Devmap => Multicast::Devmap,
            McastArg::Tc => Multicast::Tc,
        }
    }
}

/// Whether the XDP deployment counts votes in the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VoteCounters {
    On,
    Off,
    Both,
}

impl XdpPaxosLoad {
    /// The experiment configuration with the coordinator and acceptors at `data_plane`.
    pub fn config(&self, data_plane: DataPlaneAt) -> PaxosConfig {
        PaxosConfig {
            data_plane,
            acceptors: self.acceptors,
            learners: self.learners,
            proposers: self.proposers,
            outstanding: self.outstanding,
            duration_s: self.duration_s,
            seed: self.seed,
            slots: self.slots,
            coordinator_fail_at_s: self.kill_coordinator_at_s,
            acceptor_crash_at_s: self.fail_acceptor_at_s,
            latency_us: 0.0,
            pack: self.pack,
            ..PaxosConfig::default()
        }
    }

    /// The testbed's shape for this load.
    pub fn up(&self) -> PaxosUp {
        let cfg = self.config(DataPlaneAt::Xdp);
        PaxosUp {
            shape: cfg.shape(),
            params: cfg.params(),
            backup_exe: None,
            vote_counters: self.vote_counters != VoteCounters::Off,
            fabric: Fabric { mode: self.fabric.xdp_mode, threaded: self.fabric.threaded_napi },
            multicast: self.fabric.multicast.into(),
            decisions: self.fabric.decisions,
            ring: RingOpts { bytes: self.fabric.ring_bytes, wakeup: self.fabric.ring_wakeup },
            sink: false,
            auth: self.auth_key.clone(),
        }
    }
}

/// Where `bench xdp-paxos-hosts` finds the backup coordinator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BackupMode {
    /// The process `innet testbed up paxos` started.
    Testbed,
    /// A thread of this process (the testbed runs none).
    Here,
    /// Run only the backup, until SIGTERM (what `testbed up paxos` starts).
    Only,
}

/// What one run of the end hosts measured.
#[derive(Debug)]
pub struct HostsOutcome {
    pub result: PaxosResult,
    /// `(s into the load, ms until its links were down)` if the coordinator was failed.
    pub coordinator_failed: Option<(f64, f64)>,
    /// The vote counter's counters at the end of the run, if it had one.
    pub vote_counter: Option<BTreeMap<&'static str, u64>>,
    /// CPU per committed value over the end hosts' run.
    pub cpu: CpuPerValue,
    /// With one vote per machine: what the machine's decision socket and
    /// ring delivered.
    pub machine: Option<innet_live::SharedStats>,
    /// What each BPF program cost per committed value (the kernel's
    /// run-time statistics over the run).
    pub programs: Vec<innet_xdp::bpf_stats::ProgCost>,
}

impl HostsOutcome {
    /// The line that says when the coordinator failed, if it did.
    pub fn failure_line(&self) -> Option<String> {
        self.coordinator_failed
            .map(|(at, took)| format!("coordinator failed at {at:.3} s (its links were down {took:.1} ms later)"))
    }
}

/// The end hosts of a running `paxos` testbed: learners and load proposers
/// (and, with `BackupAt::Here`, the backup coordinator) as threads of this
/// process; call it in the hosts namespace.
pub fn hosts(load: &XdpPaxosLoad, backup: BackupAt) -> anyhow::Result<HostsOutcome> {
    Ok(hosts_with(load, backup, false, |run| Ok((paxos_hosts::run(run)?, ())))?.0)
}

/// [`hosts`] with the end hosts `run_hosts` runs (learners of its own
/// making, [`paxos_hosts::run_with`]: the key-value replicas of CAANS
/// Figure 7d with `kv`, which the result's configuration records), and
/// what it kept of them.
pub fn hosts_with<K: Send>(
    load: &XdpPaxosLoad,
    backup: BackupAt,
    kv: bool,
    run_hosts: impl FnOnce(&HostsRun) -> anyhow::Result<(paxos_hosts::HostsReport, K)>,
) -> anyhow::Result<(HostsOutcome, K)> {
    let cfg = PaxosConfig { kv, ..load.config(DataPlaneAt::Switch) };
    cfg.validate().map_err(anyhow::Error::msg)?;
    let run = HostsRun {
        up: load.up(),
        roles: live_config(&cfg).roles(),
        outstanding: cfg.outstanding,
        duration: Duration::from_secs_f64(cfg.duration_s),
        drain: Duration::from_millis(100),
        backup,
        fail_coordinator_at: cfg.coordinator_fail_at_s.map(Duration::from_secs_f64),
        fail_acceptor_at: cfg.acceptor_crash_at_s.map(Duration::from_secs_f64),
        record: false,
    };
    let stats = innet_xdp::bpf_stats::enable().ok();
    let progs0 = innet_xdp::bpf_stats::snapshot(PAXOS_PROGRAMS);
    let ((r, kept), cpu) = innet_bench::cpu::measured(
        || run_hosts(&run),
        |(r, _)| r.proposers.iter().map(|p| p.latencies_ns.len() as u64).sum(),
    )?;
    let progs1 = innet_xdp::bpf_stats::snapshot(PAXOS_PROGRAMS);
    drop(stats);
    let coordinator_failed = match (r.failed_at_ns, r.fail_took_ns) {
        (Some(at), Some(took)) => Some((at.saturating_sub(r.start_ns) as f64 / 1e9, took as f64 / 1e6)),
        _ => None,
    };
    let refs: Vec<_> = r.proposers.iter().collect();
    let takeover = r.takeover_ns.map(|t| t.saturating_sub(r.start_ns) as f64 / 1e9);
    let result = make_result(
        &cfg,
        innet_exp::Runtime::Xdp,
        &refs,
        r.start_ns,
        &r.learners[0].stats,
        takeover,
        cfg.duration_s,
        r.wall_s,
    );
    let vote_counter = tb::vote_counter_counters()?.map(|c| c.into_iter().collect());
    let cpu = CpuPerValue { values: result.committed, ..cpu };
    let programs = innet_xdp::bpf_stats::costs(&progs0, &progs1, result.committed);
    Ok((HostsOutcome { result, coordinator_failed, vote_counter, cpu, machine: r.machine.clone(), programs }, kept))
}

/// Only the backup coordinator of a running `paxos` testbed, until `stop`
/// (what `innet testbed up paxos` starts as a process); `say` gets its
/// address line.
pub fn backup(load: &XdpPaxosLoad, stop: &Stop, say: impl FnMut(&str)) -> anyhow::Result<()> {
    let cfg = load.config(DataPlaneAt::Switch);
    cfg.validate().map_err(anyhow::Error::msg)?;
    paxos_hosts::run_backup(&load.up(), &live_config(&cfg).roles(), stop, say)
}

/// One run of the XDP deployment: testbed up (with or without vote
/// counters), the end hosts (with the backup coordinator, as it runs
/// beside the software deployments) on threads in the hosts namespace,
/// testbed down.
pub fn run_xdp(load: &XdpPaxosLoad, vote_counters: bool) -> anyhow::Result<HostsOutcome> {
    Ok(run_xdp_with_ceiling(load, vote_counters, false)?.0)
}

/// [`run_xdp`] with the end hosts `run_hosts` runs ([`hosts_with`]; no
/// vote counters, every role on its own port): testbed up, the end hosts
/// in the hosts namespace, testbed down.
pub fn run_xdp_with<K: Send>(
    load: &XdpPaxosLoad,
    kv: bool,
    run_hosts: impl FnOnce(&HostsRun) -> anyhow::Result<(paxos_hosts::HostsReport, K)> + Send,
) -> anyhow::Result<(HostsOutcome, K)> {
    tb::up(&PaxosUp { vote_counters: false, ..load.up() })?;
    let out = in_netns(tb::NS_HOSTS, || hosts_with(load, BackupAt::Here, kv, run_hosts));
    let removed = tb::down();
    let out = out?;
    removed?;
    Ok(out)
}

/// [`run_xdp`], and first (with `ceiling`) the generator's ceiling on the
/// same testbed ([`xdp_ceiling`]).
pub fn run_xdp_with_ceiling(
    load: &XdpPaxosLoad,
    vote_counters: bool,
    ceiling: bool,
) -> anyhow::Result<(HostsOutcome, Option<LoadReport>)> {
    tb::up(&PaxosUp { vote_counters, ..load.up() })?;
    let out = in_netns(tb::NS_HOSTS, || {
        let c = if ceiling { Some(xdp_ceiling(load)?) } else { None };
        Ok((hosts(load, BackupAt::Here)?, c))
    });
    let removed = tb::down();
    let out = out?;
    removed?;
    Ok(out)
}

/// HEARTBEATs carrying the generator's tag as their value: the coordinator
/// (BPF or Rust) reflects them unchanged.
#[derive(Clone, Copy, Debug)]
pub struct HeartbeatService;

impl Service for HeartbeatService {
    fn request(&mut self, _client: u32, tag: u64, buf: &mut [u8]) -> (usize, usize) {
        let mut m = PaxosMsg::new(MsgType::Heartbeat);
        m.value = Value::new(&tag.to_be_bytes()).expect("8 bytes fit");
        let b = m.encode();
        buf[..b.len()].copy_from_slice(&b);
        (b.len(), 0)
    }
    fn reply(&mut self, reply: &[u8]) -> Reply {
        match PaxosMsg::decode(reply) {
            Ok(m) if m.msgtype == MsgType::Heartbeat && m.value.len as usize == TAG_LEN => {
                Reply::Done(u64::from_be_bytes(m.value.as_slice().try_into().expect("8 bytes")))
            }
            _ => Reply::Ignored,
        }
    }
}

/// The generator's ceiling on the XDP path: HEARTBEATs reflected by the
/// BPF coordinator of a running testbed, at `load`'s concurrency; call it
/// in the hosts namespace before the hosts start. The generator sends from
/// the backup coordinator's address and port: the coordinator takes
/// HEARTBEATs only from the backup (`innet_paxos::trust`), and the backup
/// is not running yet.
pub fn xdp_ceiling(load: &XdpPaxosLoad) -> anyhow::Result<LoadReport> {
    let target = std::net::SocketAddr::V4(tb::coordinator_addr());
    let mut cfg = ceiling_config(load.proposers * load.outstanding, target, load.duration_s);
    cfg.bind = Some(std::net::SocketAddr::V4(tb::backup_addr()));
    Ok(loadgen::run(&cfg, vec![HeartbeatService])?.0)
}

/// One line of `xdp-paxos.jsonl`.
#[derive(Debug, Serialize)]
pub struct XdpPaxosRecord {
    pub experiment: &'static str,
    pub run: usize,
    pub git_commit: String,
    pub seed: u64,
    pub config: PaxosConfig,
    /// The XDP deployment (with vote counters unless `--vote-counters off`).
    pub xdp: PaxosResult,
    /// Its vote counter's counters (decisions passed up, votes absorbed ...).
    pub xdp_vote_counter: Option<BTreeMap<&'static str, u64>>,
    /// With one vote per machine: what the hosts machine's decision socket
    /// and ring delivered.
    pub xdp_machine: Option<innet_live::SharedStats>,
    /// The fabric the XDP deployment ran on.
    pub fabric: PaxosFabricArgs,
    /// CPU per committed value of each deployment (whole machine from
    /// /proc/stat, this process from getrusage; `docs/xdp.md`).
    pub cpu_xdp: CpuPerValue,
    pub cpu_software: CpuPerValue,
    pub cpu_software_switch: CpuPerValue,
    /// What each BPF program of the XDP deployment cost per committed value.
    pub xdp_programs: Vec<innet_xdp::bpf_stats::ProgCost>,
    /// The load average when the round ended (1, 5, 15 minutes).
    pub load_average: [f64; 3],
    /// With `--vote-counters both`: the XDP deployment without them, in the same round.
    pub xdp_without_counters: Option<PaxosResult>,
    pub software: PaxosResult,
    pub software_switch: PaxosResult,
    pub xdp_over_software: f64,
    pub xdp_over_software_switch: f64,
    /// Whether the XDP deployment ran with `--auth-key`.
    pub xdp_auth: bool,
    /// Mean ns per packet of the BPF roles' hot paths (`BPF_PROG_TEST_RUN`).
    pub bpf_ns_per_packet: BTreeMap<&'static str, f64>,
    /// The generator's ceiling on the XDP path (HEARTBEATs reflected by
    /// the BPF coordinator) and on loopback (a bare UDP echo).
    pub ceiling_xdp: LoadReport,
    pub ceiling_loopback: LoadReport,
    /// Each deployment against its path's ceiling.
    pub xdp_vs_ceiling: AgainstCeiling,
    pub software_vs_ceiling: AgainstCeiling,
    pub software_switch_vs_ceiling: AgainstCeiling,
}

/// What `bench` reports while it runs.
pub enum BenchEvent<'a> {
    /// The BPF roles' ns per packet (`BPF_PROG_TEST_RUN`: `paxos::cost_ns`, `paxos_learner::cost_ns`), before the first run.
    Cost(&'a BTreeMap<&'static str, f64>),
    /// A round finished; the XDP run's coordinator failure line, if any.
    Run(&'a XdpPaxosRecord, Option<String>),
}

/// What `bench` did.
#[derive(Debug)]
pub struct BenchReport {
    pub records: Vec<XdpPaxosRecord>,
    /// Medians over the runs of XDP/software processes and XDP/software switches.
    pub median_over_software: f64,
    pub median_over_software_switch: f64,
    /// Where the records were appended.
    pub path: PathBuf,
}

/// `/proc/loadavg`'s three figures (zeros if unreadable).
pub fn load_average() -> [f64; 3] {
    let s = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut v = s.split_whitespace().map(|x| x.parse().unwrap_or(0.0));
    [v.next().unwrap_or(0.0), v.next().unwrap_or(0.0), v.next().unwrap_or(0.0)]
}

/// The median of `v` (the upper one of an even count; NaN if empty).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// `innet bench xdp-paxos`: `runs` rounds of (XDP, software processes,
/// software switches) at `load`, records appended to `out/xdp-paxos.jsonl`.
pub fn bench(
    load: &XdpPaxosLoad,
    runs: usize,
    out: &Path,
    mut on: impl FnMut(BenchEvent<'_>),
) -> anyhow::Result<BenchReport> {
    anyhow::ensure!(innet_xdp::object::euid() == 0, "bench xdp-paxos needs root (network namespaces, BPF)");
    anyhow::ensure!(runs >= 1, "--runs must be at least 1");
    let base = load.config(DataPlaneAt::Process);
    base.validate().map_err(anyhow::Error::msg)?;
    let mut cost: BTreeMap<&'static str, f64> = innet_xdp::paxos::cost_ns(1_000_000)?.into_iter().collect();
    cost.extend(innet_xdp::paxos_learner::cost_ns(1_000_000)?);
    on(BenchEvent::Cost(&cost));
    let mut records = vec![];
    for run in 0..runs {
        let (rec, failure) = bench_round(load, run, &base, &cost)?;
        on(BenchEvent::Run(&rec, failure));
        records.push(rec);
    }
    let path = out.join("xdp-paxos.jsonl");
    results::append_jsonl(&path, &records)?;
    Ok(BenchReport {
        median_over_software: median(records.iter().map(|r| r.xdp_over_software).collect()),
        median_over_software_switch: median(records.iter().map(|r| r.xdp_over_software_switch).collect()),
        records,
        path,
    })
}

/// Round `run` of [`bench`]: the XDP deployment (and, with
/// [`VoteCounters::Both`], without its vote counters), its ceiling, then
/// the software processes and switches; the record and the XDP run's
/// coordinator failure line, if any.
fn bench_round(
    load: &XdpPaxosLoad,
    run: usize,
    base: &PaxosConfig,
    cost: &BTreeMap<&'static str, f64>,
) -> anyhow::Result<(XdpPaxosRecord, Option<String>)> {
    let without = match load.vote_counters {
        VoteCounters::Both => Some(run_xdp(load, false)?.result),
        _ => None,
    };
    let (xdp, ceiling_xdp) = run_xdp_with_ceiling(load, load.vote_counters != VoteCounters::Off, true)?;
    let ceiling_xdp = ceiling_xdp.expect("measured");
    let ceiling_loopback = loopback_ceiling(load.proposers * load.outstanding, load.duration_s)?;
    let failure = xdp.failure_line();
    let (cpu_xdp, xdp_machine, xdp_programs) = (xdp.cpu, xdp.machine, xdp.programs);
    let (xdp, xdp_vote_counter) = (xdp.result, xdp.vote_counter);
    let committed = |r: &PaxosResult| r.committed;
    let (software, cpu_software) =
        innet_bench::cpu::measured(|| run_point_live(&load.config(DataPlaneAt::Process)), committed)?;
    let (switch, cpu_software_switch) =
        innet_bench::cpu::measured(|| run_point_live(&load.config(DataPlaneAt::Switch)), committed)?;
    let ratio = |b: &PaxosResult| xdp.committed_per_s / b.committed_per_s.max(1e-9);
    let rec = XdpPaxosRecord {
        experiment: "xdp-paxos",
        run,
        git_commit: results::git_commit(),
        seed: load.seed,
        config: base.clone(),
        xdp_over_software: ratio(&software),
        xdp_over_software_switch: ratio(&switch),
        xdp_vs_ceiling: AgainstCeiling::new(&xdp, &ceiling_xdp),
        software_vs_ceiling: AgainstCeiling::new(&software, &ceiling_loopback),
        software_switch_vs_ceiling: AgainstCeiling::new(&switch, &ceiling_loopback),
        ceiling_xdp,
        ceiling_loopback,
        xdp,
        xdp_vote_counter,
        xdp_machine,
        fabric: load.fabric.clone(),
        cpu_xdp,
        cpu_software,
        cpu_software_switch,
        xdp_programs,
        load_average: load_average(),
        xdp_without_counters: without,
        xdp_auth: load.auth_key.is_some(),
        software,
        software_switch: switch,
        bpf_ns_per_packet: cost.clone(),
    };
    Ok((rec, failure))
}

/// The programs of the Paxos fabric (kernel names keep 15 characters).
const PAXOS_PROGRAMS: &[&str] = &["xdp_paxos", "tc_paxos", "xdp_gen", "xdp_pass"];

/// One round of `bench xdp-paxos --fabric-only`: the in-kernel generator
/// injects REQUESTs at the BPF coordinator (as if from proposer 0, on the
/// coordinator's device) and the vote counter in the hosts namespace
/// counts the decisions and drops them: the fabric alone, no socket, no
/// end host (learner TRIMs keep the rings open: one packet per
/// millisecond from a thread of this process).
#[derive(Debug, Serialize)]
pub struct FabricOnlyRecord {
    pub experiment: &'static str,
    pub run: usize,
    pub git_commit: String,
    pub fabric: PaxosFabricArgs,
    pub acceptors: usize,
    pub slots: usize,
    /// REQUESTs the generator injected.
    pub requests: u64,
    /// Instances the vote counter decided (and dropped).
    pub decisions: u64,
    pub seconds: f64,
    pub instances_per_s: f64,
    /// The machine's CPU over the round (every CPU: the generator's, the
    /// NAPI threads', anything else running).
    pub cpu: innet_bench::cpu::CpuUse,
    /// Instances per CPU-second the machine was busy (other work on the
    /// machine included: on a quiet machine, the fabric's capacity per core).
    pub instances_per_cpu_s: f64,
    /// CPU seconds of the generator's thread (its system calls run the
    /// coordinator, and without threaded NAPI the hops after it) and of
    /// the devices' NAPI threads (with threaded NAPI, the hops after it).
    pub generator_thread_cpu_s: f64,
    pub napi_threads_cpu_s: f64,
    /// Instances per CPU-second of those threads: the fabric's capacity
    /// per core, whatever else runs on the machine (with threaded NAPI;
    /// without it, softirq work on other tasks' time is missed).
    pub instances_per_fabric_cpu_s: f64,
    /// Those threads' CPU per instance (ns), what the BPF programs spent of
    /// it (the kernel's run-time statistics, per program: `xdp_gen`'s runs
    /// include the coordinator it tail-calls), and the rest: the frames'
    /// transport (veth transmit, NAPI, devmap copies, thread wake-ups).
    pub fabric_ns_per_instance: f64,
    pub transport_ns_per_instance: f64,
    pub programs: Vec<innet_xdp::bpf_stats::ProgCost>,
    /// Requests the coordinator refused for a full window, votes the
    /// acceptors could not place (trimmed, ring full): capacity lost to
    /// back-pressure, not to speed.
    pub window_full: u64,
    pub acceptor_ring_full: u64,
    /// Bursts the generator sent after waiting in vain for decisions
    /// (instances lost on the way).
    pub stalls: u64,
    /// How the generator injected.
    pub pace: innet_xdp::generator::Pace,
    pub load_average: [f64; 3],
}

/// `bench xdp-paxos --fabric-only`: `runs` rounds of `frames` REQUESTs each.
pub fn fabric_only(load: &XdpPaxosLoad, runs: usize, frames: u32) -> anyhow::Result<Vec<FabricOnlyRecord>> {
    anyhow::ensure!(
        innet_xdp::object::euid() == 0,
        "bench xdp-paxos --fabric-only needs root (network namespaces, BPF)"
    );
    anyhow::ensure!(runs >= 1 && frames >= 1, "--runs and the frames per round at least 1");
    anyhow::ensure!(
        load.auth_key.is_none(),
        "--fabric-only runs without --auth-key: the in-kernel generator stamps a request number into each REQUEST \
         after it was built, which a seal would not cover; measure keys end to end"
    );
    let up = PaxosUp { sink: true, vote_counters: true, decisions: Decisions::Socket, backup_exe: None, ..load.up() };
    anyhow::ensure!(up.per_machine(), "--fabric-only counts one vote per machine: not with --decisions per-port");
    // The generator's live frames are xdp_frames: a device without a
    // driver-mode program drops them on redirect (veth_xdp_xmit), so a
    // generic fabric would decide nothing.
    anyhow::ensure!(
        up.fabric.mode == innet_xdp::fabric::XdpMode::Native,
        "--fabric-only needs --xdp-mode native (the in-kernel generator's frames reach only devices with a driver-mode program); measure generic mode end to end instead"
    );
    tb::up(&up)?;
    let out = fabric_rounds(load, &up, runs, frames);
    let removed = tb::down();
    let out = out?;
    removed?;
    Ok(out)
}

fn fabric_rounds(load: &XdpPaxosLoad, up: &PaxosUp, runs: usize, frames: u32) -> anyhow::Result<Vec<FabricOnlyRecord>> {
    use innet_xdp::generator::Generator;
    let (template, stamp_at) = tb::request_template(0);
    let generator = Generator::load(&template, Some(stamp_at), &tb::coordinator_program_pin(), tb::NS_COORDINATOR)?;
    let counters =
        FabricCounters { pins: Path::new(innet_xdp::testbed::PIN_DIR).join("paxos"), acceptors: up.shape.acceptors };
    use std::sync::atomic::Ordering::Relaxed;
    let stop = std::sync::atomic::AtomicBool::new(false);
    let sunk = innet_xdp::paxos_learner::PinnedCounter::open(&counters.pins.join(tb::COUNTER_PINS), "sunk")?;
    let _stats = innet_xdp::bpf_stats::enable()?;
    std::thread::scope(|s| {
        let trimmer = s.spawn(|| trim_while(up, &stop, || sunk.get()));
        let records = (0..runs)
            .map(|run| fabric_round(load, up, (run, frames), &generator, &counters, &sunk))
            .collect::<anyhow::Result<Vec<_>>>();
        stop.store(true, Relaxed);
        trimmer.join().map_err(|_| anyhow::anyhow!("the trimming thread panicked"))??;
        records
    })
}

/// The fabric's counters, read from the programs' pinned maps.
struct FabricCounters {
    pins: PathBuf,
    acceptors: usize,
}

impl FabricCounters {
    /// The vote counter's counter `name`.
    fn vote_counter(&self, name: &str) -> anyhow::Result<u64> {
        let c = tb::vote_counter_counters()?.unwrap_or_default();
        Ok(c.into_iter().find(|(n, _)| *n == name).map_or(0, |(_, v)| v))
    }
    /// Counter `name` of the `role` program pinned in `dir`.
    fn role(&self, role: innet_xdp::paxos::Role, dir: &str, name: &str) -> anyhow::Result<u64> {
        let c = innet_xdp::paxos::pinned_counters(role, &self.pins.join(dir))?;
        Ok(c.into_iter().find(|(n, _)| *n == name).map_or(0, |(_, v)| v))
    }
    /// Requests the coordinator refused with its window full.
    fn window_full(&self) -> anyhow::Result<u64> {
        self.role(innet_xdp::paxos::Role::Coordinator, "coordinator", "window_full")
    }
    /// Messages the acceptors dropped: ring full or already trimmed.
    fn acceptor_drops(&self) -> anyhow::Result<u64> {
        let mut n = 0;
        for i in 0..self.acceptors {
            for name in ["ring_full", "trimmed"] {
                n += self.role(innet_xdp::paxos::Role::Acceptor, &format!("acceptor{i}"), name)?;
            }
        }
        Ok(n)
    }
}

/// Round `run` of [`fabric_rounds`]: `frames` requests from the in-kernel
/// generator, paced by the decisions the vote counter sank.
fn fabric_round(
    load: &XdpPaxosLoad,
    up: &PaxosUp,
    (run, frames): (usize, u32),
    generator: &innet_xdp::generator::Generator,
    counters: &FabricCounters,
    sunk: &innet_xdp::paxos_learner::PinnedCounter,
) -> anyhow::Result<FabricOnlyRecord> {
    let (d0, w0, a0) = (counters.vote_counter("sunk")?, counters.window_full()?, counters.acceptor_drops()?);
    let progs0 = innet_xdp::bpf_stats::snapshot(PAXOS_PROGRAMS);
    let before = innet_bench::cpu::CpuSnapshot::now();
    let napi0 = innet_xdp::fabric::napi_threads_cpu_s();
    let pace = innet_xdp::generator::Pace::new(frames as u64);
    let p = generator.run_paced(tb::NS_COORDINATOR, "innet-ch", pace, || sunk.get())?;
    let g = p.run;
    // The last frames' copies are still in flight.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let cpu = before.used();
    let napi_cpu_s = innet_xdp::fabric::napi_threads_cpu_s() - napi0;
    let decisions = counters.vote_counter("sunk")? - d0;
    let busy = cpu.machine_user_s + cpu.machine_system_s + cpu.machine_irq_s;
    let fabric_cpu_s = p.thread_cpu_s + napi_cpu_s;
    let programs = innet_xdp::bpf_stats::costs(&progs0, &innet_xdp::bpf_stats::snapshot(PAXOS_PROGRAMS), decisions);
    let in_programs: f64 = programs.iter().map(|c| c.ns_per_unit).sum();
    Ok(FabricOnlyRecord {
        experiment: "xdp-paxos-fabric-only",
        run,
        git_commit: results::git_commit(),
        fabric: load.fabric.clone(),
        acceptors: up.shape.acceptors,
        slots: up.params.slots,
        requests: g.frames,
        decisions,
        seconds: cpu.wall_s,
        instances_per_s: decisions as f64 / cpu.wall_s.max(1e-9),
        instances_per_cpu_s: decisions as f64 / busy.max(1e-9),
        generator_thread_cpu_s: p.thread_cpu_s,
        napi_threads_cpu_s: napi_cpu_s,
        instances_per_fabric_cpu_s: decisions as f64 / fabric_cpu_s.max(1e-9),
        fabric_ns_per_instance: fabric_cpu_s * 1e9 / decisions.max(1) as f64,
        transport_ns_per_instance: fabric_cpu_s * 1e9 / decisions.max(1) as f64 - in_programs,
        programs,
        cpu,
        window_full: counters.window_full()? - w0,
        stalls: p.stalls,
        pace,
        acceptor_ring_full: counters.acceptor_drops()? - a0,
        load_average: load_average(),
    })
}

/// Until `stop`: every millisecond, both learners report to the
/// coordinator and every acceptor that they checkpointed everything below
/// `decided() - slots / 4` (TRIM, from their own ports in the hosts
/// namespace), so the rings keep room while the generator runs.
fn trim_while(up: &PaxosUp, stop: &std::sync::atomic::AtomicBool, decided: impl Fn() -> u64) -> anyhow::Result<()> {
    let sockets: Vec<std::net::UdpSocket> = (0..up.shape.learners)
        .map(|i| {
            in_netns(tb::NS_HOSTS, || {
                let a = std::net::SocketAddr::from(([0, 0, 0, 0], tb::learner_port(i)));
                Ok(std::net::UdpSocket::bind(a)?)
            })
        })
        .collect::<anyhow::Result<_>>()?;
    let mut to = vec![std::net::SocketAddr::V4(tb::coordinator_addr())];
    to.extend((0..up.shape.acceptors).map(|i| std::net::SocketAddr::V4(tb::acceptor_addr(i))));
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let floor = decided().saturating_sub(up.params.slots as u64 / 4).min(u32::MAX as u64) as u32;
        for (i, s) in sockets.iter().enumerate() {
            let mut m = PaxosMsg::new(MsgType::Trim);
            (m.inst, m.acptid) = (floor, i as u16);
            for t in &to {
                let _ = s.send_to(&m.encode(), t);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    Ok(())
}
