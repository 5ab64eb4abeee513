//! `innet bench xdp-paxos`: CAANS end to end with the coordinator and the
//! acceptors as BPF programs (the `paxos` testbed), against the same
//! programs as user-space processes (`DataPlaneAt::Process`, libpaxos-style)
//! and as user-space software switches (`DataPlaneAt::Switch`), at equal
//! client load, side by side in one run; and the testbed's end hosts
//! (`innet bench xdp-paxos-hosts`), which the benchmark runs on threads in
//! the hosts namespace.
//!
//! **The generator's ceiling**, measured in every round: the batched load
//! generator ([`crate::loadgen`]) at the same concurrency (proposers x
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
use innet_xdp::paxos_hosts::{self, BackupAt, HostsRun};
use innet_xdp::paxos_testbed::{self as tb, PaxosUp};
use innet_xdp::testbed::in_netns;

use innet_wire::paxos::{MsgType, PaxosMsg, Value};

use crate::loadgen::{self, LoadReport, Reply, Service, TAG_LEN};
use crate::paxos::{DataPlaneAt, PaxosConfig, PaxosResult};
use crate::paxos_bench::{ceiling_config, loopback_ceiling, AgainstCeiling};
use crate::paxos_live::{live_config, run_point_live};
use crate::paxos_sim::make_result;
use crate::results;

/// The load of one deployment (also the flags of `bench xdp-paxos` and
/// `bench xdp-paxos-hosts`).
#[derive(Args, Debug, Clone)]
pub struct XdpPaxosLoad {
    #[arg(long, default_value_t = 3, value_parser = crate::parse::acceptors)]
    pub acceptors: usize,
    #[arg(long, default_value_t = 2, value_parser = crate::parse::learners)]
    pub learners: usize,
    #[arg(long, default_value_t = 2, value_parser = crate::parse::proposers)]
    pub proposers: usize,
    /// Requests each proposer keeps in flight.
    #[arg(long, default_value_t = 32, value_parser = crate::parse::outstanding)]
    pub outstanding: usize,
    /// Seconds of load per deployment.
    #[arg(long, default_value_t = 3.0, value_parser = crate::parse::seconds)]
    pub duration_s: f64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The acceptors' ring (a power of two).
    #[arg(long, default_value_t = ACCEPTOR_SLOTS_DEFAULT, value_parser = crate::parse::acceptor_slots)]
    pub slots: usize,
    /// Fail the coordinator this many seconds into the load (XDP: its
    /// links go down; software: its thread stops); the backup takes over.
    #[arg(long, value_parser = crate::parse::at_seconds)]
    pub kill_coordinator_at_s: Option<f64>,
    /// XDP deployment: count the votes in the kernel in front of the
    /// learners and proposers (`on`), not (`off`), or run it both ways
    /// side by side (`both`, `bench xdp-paxos` only).
    #[arg(long, value_enum, default_value = "on")]
    pub vote_counters: VoteCounters,
    /// Most client values a proposer packs into one instance's value (1:
    /// off; every deployment of the run packs alike); the load then
    /// submits 2-byte values.
    #[arg(long, default_value_t = 1, value_parser = crate::parse::pack)]
    pub pack: usize,
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
            latency_us: 0.0,
            pack: self.pack,
            ..PaxosConfig::default()
        }
    }

    /// The testbed's shape for this load.
    pub fn up(&self) -> PaxosUp {
        PaxosUp {
            acceptors: self.acceptors,
            learners: self.learners,
            proposers: self.proposers,
            slots: self.slots,
            backup_exe: None,
            vote_counters: self.vote_counters != VoteCounters::Off,
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
    let cfg = load.config(DataPlaneAt::Switch);
    cfg.validate().map_err(anyhow::Error::msg)?;
    let run = HostsRun {
        up: load.up(),
        roles: live_config(&cfg).roles(),
        outstanding: cfg.outstanding,
        duration: Duration::from_secs_f64(cfg.duration_s),
        drain: Duration::from_millis(100),
        backup,
        fail_coordinator_at: cfg.coordinator_fail_at_s.map(Duration::from_secs_f64),
        record: false,
    };
    let r = paxos_hosts::run(&run)?;
    let coordinator_failed = match (r.failed_at_ns, r.fail_took_ns) {
        (Some(at), Some(took)) => Some((at.saturating_sub(r.start_ns) as f64 / 1e9, took as f64 / 1e6)),
        _ => None,
    };
    let refs: Vec<_> = r.proposers.iter().collect();
    let takeover = r.takeover_ns.map(|t| t.saturating_sub(r.start_ns) as f64 / 1e9);
    let result =
        make_result(&cfg, "xdp-testbed", &refs, r.start_ns, &r.learners[0].stats, takeover, cfg.duration_s, r.wall_s);
    let vote_counter = tb::vote_counter_counters()?.map(|c| c.into_iter().collect());
    Ok(HostsOutcome { result, coordinator_failed, vote_counter })
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
    /// With `--vote-counters both`: the XDP deployment without them, in the same round.
    pub xdp_without_counters: Option<PaxosResult>,
    pub software: PaxosResult,
    pub software_switch: PaxosResult,
    pub xdp_over_software: f64,
    pub xdp_over_software_switch: f64,
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

fn median(mut v: Vec<f64>) -> f64 {
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
        let without = match load.vote_counters {
            VoteCounters::Both => Some(run_xdp(load, false)?.result),
            _ => None,
        };
        let (xdp, ceiling_xdp) = run_xdp_with_ceiling(load, load.vote_counters != VoteCounters::Off, true)?;
        let ceiling_xdp = ceiling_xdp.expect("measured");
        let ceiling_loopback = loopback_ceiling(load.proposers * load.outstanding, load.duration_s)?;
        let failure = xdp.failure_line();
        let (xdp, xdp_vote_counter) = (xdp.result, xdp.vote_counter);
        let software = run_point_live(&load.config(DataPlaneAt::Process))?;
        let switch = run_point_live(&load.config(DataPlaneAt::Switch))?;
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
            xdp_without_counters: without,
            software,
            software_switch: switch,
            bpf_ns_per_packet: cost.clone(),
        };
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
