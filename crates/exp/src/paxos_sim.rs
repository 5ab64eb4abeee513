//! The consensus deployment on the simulator, the experiment runs and the
//! randomized safety runs of `innet check paxos`.
//!
//! Every node reaches every other over the fabric link (one switch hop in
//! the paper's testbed, Figure 6). The coordinator and acceptors are switch
//! programs (`--data-plane switch`) or the same programs as processes
//! (`--data-plane process`); proposers, learners and the backup coordinator
//! are hosts.

use std::time::{Duration, Instant};

use innet_core::deploy::{Node, Shape};
use innet_core::rng::Rng;
use innet_core::Time;
use innet_paxos::acceptor::Acceptor;
use innet_paxos::check::{check, History, LearnerHistory, Summary};
use innet_paxos::deploy::{PaxosRole, Roles};
use innet_paxos::software::SoftwareNode;
use innet_paxos::vote_counter::{BehindCounter, VoteCounter, VoteCounterConfig};
use innet_paxos::workload::LoadProposer;
use innet_paxos::{BackupCoordinator, Coordinator, Learner, LearnerConfig, Proposer};
use innet_sim::{LinkSpec, NetStats, NodeId, ServiceModel, Sim, SimNode, TraceEvent};

use crate::faults::Faults;
use crate::paxos::{latency_quantiles_us, latency_us, longest_gap_ms, timeline, DataPlaneAt, PaxosConfig, PaxosResult};

pub struct PaxosTopology {
    pub sim: Sim,
    pub config: PaxosConfig,
    pub coordinator: NodeId,
    pub backup: NodeId,
    pub acceptors: Vec<NodeId>,
    pub learners: Vec<NodeId>,
    pub proposers: Vec<NodeId>,
    /// Failure events already applied (each happens once).
    applied: Vec<u8>,
    /// The highest epoch the coordinator's incarnations used: what the
    /// live runtime keeps in `coordinator.epoch` (written before packets
    /// of a new epoch leave, so reading it at the crash is the same).
    coordinator_epoch_high: u8,
    /// Coordinator restarts applied.
    pub coordinator_restarts: u64,
}

fn us(v: f64) -> Duration {
    Duration::from_secs_f64(v / 1e6)
}

fn link(cfg: &PaxosConfig, latency: Duration, faults: bool) -> LinkSpec {
    if faults {
        cfg.faults.link(latency)
    } else {
        LinkSpec::latency(latency)
    }
}

fn service(cost_us: f64) -> Option<ServiceModel> {
    (cost_us > 0.0).then(|| ServiceModel { per_packet: us(cost_us), per_byte_ns: 0.0, queue_packets: 4096 })
}

/// Every role's configuration for `cfg` (the same definition every runtime uses).
pub fn roles(cfg: &PaxosConfig) -> Roles {
    Roles::new(cfg.params(), &cfg.shape())
}

/// Learner `id`'s configuration; with `keep_log` it records every delivery.
pub fn learner_config(cfg: &PaxosConfig, id: u16, keep_log: bool) -> LearnerConfig {
    LearnerConfig { keep_log, ..roles(cfg).learner(id) }
}

/// Builds the deployment; with `record`, learners keep every delivery and
/// proposers every submitted value (for the checker).
pub fn build(cfg: &PaxosConfig, record: bool) -> Result<PaxosTopology, String> {
    cfg.validate()?;
    if cfg.latency_us.is_nan() || cfg.latency_us <= 0.0 {
        // Zero-time links and free processing: proposers would commit
        // without end at one instant and simulated time would never move.
        return Err(format!("--latency-us {} must be above 0 in the simulator", cfg.latency_us));
    }
    if cfg.data_plane == DataPlaneAt::Xdp {
        return Err("the simulator runs the data plane in switches or processes; XDP runs on the testbed".into());
    }
    let d = cfg.deployment();
    let roles = roles(cfg);
    let mut rng = Rng::new(cfg.seed);
    let mut sim = Sim::new(rng.next_u64());
    let process = cfg.data_plane == DataPlaneAt::Process;
    let stop = Time::from_secs_f64(cfg.duration_s);
    let counter = VoteCounterConfig { quorum: roles.quorum(), ..VoteCounterConfig::new(cfg.acceptors) };
    let make = |_: usize, n: &Node<PaxosRole>| match n.role {
        PaxosRole::Coordinator => program(Coordinator::new(roles.coordinator()), process),
        PaxosRole::Acceptor { id } => program(Acceptor::new(roles.acceptor(id)), process),
        PaxosRole::Backup => behind(cfg, counter, BackupCoordinator::new(roles.backup())),
        PaxosRole::Learner { id } => behind(cfg, counter, Learner::new(learner_config(cfg, id, record))),
        PaxosRole::Proposer { index } => {
            let pc = roles.proposer(innet_paxos::envelope::proposer_id(index as usize, 0));
            behind(cfg, counter, LoadProposer::new(Proposer::new(pc), cfg.outstanding, stop, record))
        }
    };
    let ids = sim.instantiate(&d, make, |l| link(cfg, l, true));
    for (i, &id) in ids.iter().enumerate() {
        let senders = innet_paxos::trust::senders(&d, &ids, i);
        sim.set_admit(id, Box::new(move |from, b| senders.check(&from, b).map_err(|r| r.name())));
    }
    let (dp_cost, host_cost) = (if process { cfg.software_cost_us } else { cfg.switch_cost_us }, cfg.host_cost_us);
    for (i, n) in d.nodes.iter().enumerate() {
        let cost = match (n.shape == Shape::Program, cfg.coordinator_cost_us) {
            (true, Some(c)) if n.role == PaxosRole::Coordinator => c,
            (true, _) => dp_cost,
            (false, _) => host_cost,
        };
        if let Some(s) = service(cost) {
            sim.set_service(ids[i], s);
        }
    }
    let of = |f: fn(&PaxosRole) -> bool| d.with_role(f).into_iter().map(|i| ids[i]).collect::<Vec<_>>();
    Ok(PaxosTopology {
        coordinator: of(|r| *r == PaxosRole::Coordinator)[0],
        backup: of(|r| *r == PaxosRole::Backup)[0],
        acceptors: of(|r| matches!(r, PaxosRole::Acceptor { .. })),
        learners: of(|r| matches!(r, PaxosRole::Learner { .. })),
        proposers: of(|r| matches!(r, PaxosRole::Proposer { .. })),
        sim,
        config: cfg.clone(),
        applied: vec![],
        coordinator_epoch_high: 0,
        coordinator_restarts: 0,
    })
}

/// The end host `h`, with a vote counter in front of it if `cfg` says so.
fn behind<H: innet_core::Host + Clone + 'static>(cfg: &PaxosConfig, counter: VoteCounterConfig, h: H) -> SimNode {
    if cfg.vote_counters {
        SimNode::host(BehindCounter::new(VoteCounter::new(counter), h))
    } else {
        SimNode::host(h)
    }
}

/// End host `node` of type `H`, behind a vote counter or not.
fn host_of<H: 'static>(sim: &Sim, node: NodeId) -> Option<&H> {
    sim.host::<H>(node).or_else(|| sim.host::<BehindCounter<H>>(node).map(|b| &b.host))
}

/// A data-plane program in a switch, or (`process`) as an end host running
/// the very same program: the software deployment.
fn program<P: innet_core::DataPlane + Clone + 'static>(p: P, process: bool) -> SimNode {
    if process {
        SimNode::host(SoftwareNode::new(p))
    } else {
        SimNode::switch(p)
    }
}

impl PaxosTopology {
    fn crash_acceptor(&mut self) {
        self.sim.crash(self.acceptors[0]);
    }

    /// Restarts acceptor 0 with the state it had (persistent memory).
    fn restart_acceptor(&mut self) {
        let a = self.acceptors[0];
        match self.config.data_plane {
            DataPlaneAt::Switch => {
                let p = self.sim.program::<Acceptor>(a).expect("acceptor").clone();
                self.sim.restart_switch(a, p);
            }
            DataPlaneAt::Process | DataPlaneAt::Xdp => {
                let h = self.sim.host::<SoftwareNode<Acceptor>>(a).expect("acceptor").clone();
                self.sim.restart_host(a, h);
            }
        }
    }

    /// The restarted coordinator (failback), if the coordinator restarted.
    pub fn restarted_coordinator(&self) -> Option<&BackupCoordinator> {
        host_of::<BackupCoordinator>(&self.sim, self.coordinator)
    }

    fn crash_coordinator(&mut self) {
        if let Some(c) = self.restarted_coordinator() {
            self.coordinator_epoch_high = self.coordinator_epoch_high.max(c.epoch_high());
        }
        self.sim.crash(self.coordinator);
    }

    /// Brings the coordinator back as a restarted coordinator (failback):
    /// the backup's state machine under the coordinator's issuer, above
    /// every epoch its earlier incarnations used.
    fn restart_coordinator(&mut self) {
        let Some(first_epoch) = self.coordinator_epoch_high.checked_add(1) else { return };
        let cfg = &self.config;
        let roles = roles(cfg);
        let c = BackupCoordinator::new(roles.restarted_coordinator(first_epoch));
        if cfg.vote_counters {
            let counter = VoteCounterConfig { quorum: roles.quorum(), ..VoteCounterConfig::new(cfg.acceptors) };
            self.sim.restart_host(self.coordinator, BehindCounter::new(VoteCounter::new(counter), c));
        } else {
            self.sim.restart_host(self.coordinator, c);
        }
        self.coordinator_restarts += 1;
    }

    /// Runs to `end`, applying the configured failures on the way, with the
    /// network's faults healed from `heal_at` on (so runs can drain).
    pub fn run(&mut self, end: Time, heal_at: Option<Time>) {
        let mut events: Vec<(Time, u8)> = vec![];
        if let Some(t) = self.config.coordinator_fail_at_s {
            events.push((Time::from_secs_f64(t), 0));
            // Restart, fail, restart, ... (codes 10, 11, 12, ...).
            for (k, r) in self.config.coordinator_restart_at_s.iter().enumerate().take(100) {
                events.push((Time::from_secs_f64(r.max(t)), 10 + k as u8));
            }
        }
        if let Some(t) = self.config.acceptor_crash_at_s {
            events.push((Time::from_secs_f64(t), 1));
            if let Some(r) = self.config.acceptor_restart_at_s {
                events.push((Time::from_secs_f64(r.max(t)), 2));
            }
        }
        if let Some(h) = heal_at {
            events.push((h, 3));
        }
        events.sort();
        for (t, what) in events {
            if t > end {
                break;
            }
            if self.applied.contains(&what) {
                continue;
            }
            self.applied.push(what);
            self.sim.run_until(t);
            match what {
                0 => self.crash_coordinator(),
                1 => self.crash_acceptor(),
                2 => self.restart_acceptor(),
                10.. if (what - 10) % 2 == 0 => self.restart_coordinator(),
                10.. => self.crash_coordinator(),
                _ => self.sim.set_fabric(link(&self.config, us(self.config.latency_us), false)),
            }
        }
        self.sim.run_until(end);
    }

    /// Every proposer is done and every running learner delivered every
    /// value submitted.
    pub fn all_delivered(&self) -> bool {
        let submitted: usize = (0..self.proposers.len()).map(|p| self.proposer(p).submitted.len()).sum();
        (0..self.proposers.len()).all(|p| self.proposer(p).proposer.outstanding() == 0)
            && (0..self.learners.len())
                .all(|l| !self.sim.is_up(self.learners[l]) || self.learner(l).stats.delivered as usize == submitted)
    }

    pub fn learner(&self, i: usize) -> &Learner {
        host_of::<Learner>(&self.sim, self.learners[i]).expect("learner")
    }

    pub fn proposer(&self, i: usize) -> &LoadProposer {
        host_of::<LoadProposer>(&self.sim, self.proposers[i]).expect("proposer")
    }

    pub fn backup(&self) -> &BackupCoordinator {
        host_of::<BackupCoordinator>(&self.sim, self.backup).expect("backup")
    }

    pub fn history(&self) -> History {
        let mut h = History::default();
        for i in 0..self.proposers.len() {
            h.submitted.extend(self.proposer(i).submitted.iter().map(|(k, v)| (*k, v.clone())));
        }
        for (i, &n) in self.learners.iter().enumerate() {
            let l = self.learner(i);
            h.learners.push(LearnerHistory {
                name: format!("learner{i}"),
                complete: self.sim.is_up(n),
                ordered: l.config().ordered,
                first_instance: 0,
                deliveries: l.log.clone(),
            });
        }
        h
    }

    /// The result record of a run that lasted `run_seconds`.
    pub fn result(&self, runtime: crate::Runtime, run_seconds: f64, wall_seconds: f64) -> PaxosResult {
        let proposers: Vec<&LoadProposer> = (0..self.proposers.len()).map(|i| self.proposer(i)).collect();
        let takeover = self.backup().active_since().map(|t| t.as_secs_f64());
        make_result(&self.config, runtime, &proposers, 0, &self.learner(0).stats, takeover, run_seconds, wall_seconds)
    }
}

/// A result record from the proposers of a run that started at `start_ns`
/// (on their clock).
#[allow(clippy::too_many_arguments)]
pub fn make_result(
    cfg: &PaxosConfig,
    runtime: crate::Runtime,
    proposers: &[&LoadProposer],
    start_ns: u64,
    learner0: &innet_paxos::learner::LearnerStats,
    takeover_at_s: Option<f64>,
    run_seconds: f64,
    wall_seconds: f64,
) -> PaxosResult {
    let mut lat = vec![];
    let mut times = vec![];
    let mut instance_times = vec![];
    for p in proposers {
        instance_times.extend(p.instance_times_ns.iter().map(|t| t.saturating_sub(start_ns)));
        lat.extend_from_slice(&p.latencies_ns);
        times.extend(p.commit_times_ns.iter().map(|t| t.saturating_sub(start_ns)));
    }
    let (mean, std, p50, p99) = latency_us(&lat);
    let bin_ms = 10.0;
    let end_ns = (cfg.duration_s * 1e9) as u64;
    let fail = cfg.coordinator_fail_at_s.or(cfg.acceptor_crash_at_s);
    let in_window = times.iter().filter(|&&t| t <= end_ns).count() as u64;
    PaxosResult {
        experiment: "paxos".into(),
        runtime,
        config: cfg.clone(),
        git_commit: crate::results::git_commit(),
        committed: in_window,
        committed_per_s: in_window as f64 / cfg.duration_s,
        instances_per_s: instance_times.iter().filter(|&&t| t <= end_ns).count() as f64 / cfg.duration_s,
        mean_latency_us: mean,
        std_latency_us: std,
        p50_latency_us: p50,
        p99_latency_us: p99,
        latency_quantiles_us: latency_quantiles_us(&lat),
        timeline_bin_ms: bin_ms,
        timeline: timeline(&times, (bin_ms * 1e6) as u64, end_ns),
        delivered: learner0.delivered,
        noops: learner0.noops,
        duplicates: learner0.duplicates,
        takeover_at_s,
        failover_gap_ms: fail.map(|f| longest_gap_ms(&times, (f * 1e9) as u64)),
        run_seconds,
        wall_seconds,
    }
}

/// Runs one experiment point.
pub fn run_point_sim(cfg: &PaxosConfig) -> anyhow::Result<PaxosResult> {
    let mut t = build(cfg, false).map_err(anyhow::Error::msg)?;
    let wall = Instant::now();
    t.run(Time::from_secs_f64(cfg.duration_s), None);
    Ok(t.result(crate::Runtime::Sim, cfg.duration_s, wall.elapsed().as_secs_f64()))
}

/// The outcome of one checked run.
pub struct CheckedRun {
    pub config: PaxosConfig,
    pub result: Result<Summary, String>,
    pub trace_hash: u64,
    pub net: NetStats,
    pub took_over: bool,
    /// Coordinator restarts in the run (failback).
    pub coordinator_restarts: u64,
    /// Times the backup handed the role back to a restarted coordinator.
    pub handbacks: u64,
}

/// How long a checked run goes on after submitting stopped, with the
/// network healed, so that every submitted value can be delivered.
pub const CHECK_DRAIN: Duration = Duration::from_secs(2);

/// Runs `cfg` with recording on, heals the network when submitting stops,
/// drains, and checks agreement, validity, exactly-once and order.
pub fn run_checked(cfg: &PaxosConfig) -> Result<CheckedRun, String> {
    checked(cfg, false).map(|(run, _)| run)
}

/// [`run_checked`] with every delivery recorded ([`Sim::record_trace`]):
/// where two runs of one seed part ([`crate::nondeterminism`]).
pub fn run_traced(cfg: &PaxosConfig) -> Result<Vec<TraceEvent>, String> {
    checked(cfg, true).map(|(_, trace)| trace)
}

fn checked(cfg: &PaxosConfig, trace: bool) -> Result<(CheckedRun, Vec<TraceEvent>), String> {
    let mut t = build(cfg, true)?;
    if trace {
        t.sim.record_trace();
    }
    let stop = Time::from_secs_f64(cfg.duration_s);
    add_forger(&mut t, stop);
    t.run(stop, Some(stop));
    // Drain until every value is delivered everywhere, or CHECK_DRAIN passed.
    let step = Duration::from_millis(10);
    let mut now = stop;
    while now < stop + CHECK_DRAIN && !t.all_delivered() {
        now = now + step;
        t.run(now, None);
    }
    let mut result = check(&t.history()).map_err(|v| v.0);
    if result.is_ok() {
        if let Some(p) = (0..t.proposers.len()).find(|&p| t.proposer(p).proposer.outstanding() > 0) {
            result = Err(format!("liveness: proposer{p} still has requests outstanding after the drain"));
        }
    }
    let run = CheckedRun {
        config: cfg.clone(),
        result,
        trace_hash: t.sim.trace_hash(),
        net: t.sim.stats.clone(),
        took_over: t.backup().takeovers > 0,
        coordinator_restarts: t.coordinator_restarts,
        handbacks: t.backup().step_downs,
    };
    Ok((run, t.sim.trace_events().to_vec()))
}

/// An outside sender on the fabric that forges every message type to
/// every node (rounds up to 65535, instances near the live ones and
/// `u32::MAX`, values with real proposer ids) and replays the votes it
/// overhears (it is a member of the acceptors' vote group, a sniffer on
/// the segment), changed into 2As, DECIDEDs or 1As, or sent as they are.
/// It also sends REQUESTs to the coordinator and the backup in the names
/// of the deployment's proposers (their ids, request numbers ahead of
/// theirs: issue 21's attack on the learners' duplicate filter). Every
/// node's admission rule must refuse all of it.
struct Forger {
    rng: Rng,
    targets: u16,
    /// The coordinator's and the backup's ports.
    request_targets: Vec<u16>,
    /// The proposer ids of the deployment's proposers.
    proposers: Vec<u32>,
    heard: Vec<Vec<u8>>,
    next: Time,
    stop: Time,
    sent: u64,
}

impl innet_core::Host for Forger {
    fn on_packet(&mut self, _now: Time, packet: &[u8], _out: &mut innet_core::Outbox) {
        if self.heard.len() < 256 {
            self.heard.push(packet.to_vec());
        } else {
            let k = self.rng.below(256) as usize;
            self.heard[k] = packet.to_vec();
        }
    }
    fn on_tick(&mut self, now: Time, out: &mut innet_core::Outbox) {
        use innet_wire::paxos::{MsgType, PaxosMsg, PACKET_LEN};
        let r = &mut self.rng;
        let mut port = None;
        let bytes = if r.chance(0.15) && !self.proposers.is_empty() {
            let id = self.proposers[r.below(self.proposers.len() as u64) as usize];
            let mut m = PaxosMsg::new(MsgType::Request);
            m.value = innet_paxos::Envelope::new(id, 1 + r.below(4096) as u32, b"forged").expect("fits").to_value();
            port = Some(self.request_targets[r.below(self.request_targets.len() as u64) as usize]);
            m.encode()
        } else if !self.heard.is_empty() && r.chance(0.5) {
            let mut b = self.heard[r.below(self.heard.len() as u64) as usize].clone();
            if b.len() >= PACKET_LEN && r.chance(0.6) {
                let t = [MsgType::Phase2A, MsgType::Decided, MsgType::Phase1A][r.below(3) as usize];
                b[..2].copy_from_slice(&(t as u16).to_be_bytes());
            }
            b
        } else {
            // Every type but REQUEST (above).
            let types: Vec<MsgType> = MsgType::ALL.into_iter().filter(|&t| t != MsgType::Request).collect();
            let mut m = PaxosMsg::new(types[r.below(types.len() as u64) as usize]);
            m.inst = match r.below(4) {
                0 => u32::MAX,
                _ => r.below(4096) as u32,
            };
            m.rnd = [1, innet_paxos::round(r.below(256) as u8, 2), innet_paxos::round(r.below(256) as u8, 16), 0xffff]
                [r.below(4) as usize];
            m.vrnd = m.rnd;
            m.acptid = r.below(6) as u16;
            let e = innet_paxos::Envelope::new(1 + r.below(3) as u32, r.below(64) as u32, b"forged").expect("fits");
            m.value = e.to_value();
            m.encode()
        };
        let port = port.unwrap_or_else(|| self.rng.below(self.targets as u64) as u16);
        out.send(innet_core::Dest::Port(port), bytes);
        self.sent += 1;
        self.next = now + Duration::from_micros(100 + self.rng.below(900));
    }
    fn next_tick(&self) -> Option<Time> {
        (self.next < self.stop).then_some(self.next)
    }
}

/// Puts a [`Forger`] beside the deployment until `stop`: port `k` of it is
/// node `k`, and it overhears acceptor votes.
fn add_forger(t: &mut PaxosTopology, stop: Time) {
    let d = t.config.deployment();
    let ids: Vec<NodeId> = (0..d.nodes.len()).collect();
    let rng = Rng::new(t.config.seed ^ 0xF0_46E5);
    let request_targets = ["coordinator", "backup"].iter().filter_map(|n| d.find(n)).map(|n| n as u16).collect();
    let proposers = (0..t.proposers.len()).map(|i| t.proposer(i).proposer.id()).collect();
    let forger = Forger {
        rng,
        targets: ids.len() as u16,
        request_targets,
        proposers,
        heard: vec![],
        next: Time::ZERO,
        stop,
        sent: 0,
    };
    let f = t.sim.add_host("forger", forger);
    for &n in &ids {
        t.sim.set_port(f, n as u16, Some(n));
    }
    for a in innet_paxos::deploy::acceptors(&d) {
        let mut members: Vec<innet_core::Member<NodeId>> = d.nodes[a].groups[&innet_paxos::GROUP_LEARNERS].clone();
        members.push(innet_core::Member::Node(f));
        t.sim.set_group(a, innet_paxos::GROUP_LEARNERS, members);
    }
}

/// The random configuration `innet check paxos` uses for `seed`: 3 or 5
/// acceptors, 1-4 learners, 1-3 proposers, ordered or not, rings from 8
/// slots (trimming under pressure) to 1,024, loss <= 5%, duplication <= 5%,
/// reordering <= 10%, jitter; in most seeds the coordinator fails (the
/// backup takes over) and/or acceptor 0 crashes (and may come back); in
/// half the seeds a vote counter sits in front of the learners, and in
/// 30% proposers pack 2-8 values into each instance's value.
pub fn random_check_config(seed: u64, data_plane: DataPlaneAt, duration_s: f64) -> PaxosConfig {
    let mut r = Rng::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x9AC05);
    let latency_us = 20.0 + r.below(480) as f64;
    let at = |r: &mut Rng| Some(duration_s * (0.1 + 0.8 * r.f64()));
    let coordinator_fail_at_s = if r.chance(0.6) { at(&mut r) } else { None };
    let acceptor_crash_at_s = if r.chance(0.6) { at(&mut r) } else { None };
    let acceptor_restart_at_s = match acceptor_crash_at_s {
        Some(c) if r.chance(0.5) => Some(c + (duration_s - c) * r.f64()),
        _ => None,
    };
    let rtt_ms = 4.0 * latency_us / 1e3;
    let mut c = PaxosConfig {
        data_plane,
        acceptors: [3, 3, 5][r.below(3) as usize],
        learners: 1 + r.below(4) as usize,
        proposers: 1 + r.below(3) as usize,
        outstanding: 1 + r.below(8) as usize,
        duration_s,
        seed,
        latency_us,
        // One draw each, in this order (a seed's run stays what it was).
        faults: Faults {
            jitter_ms: r.f64() * latency_us / 1e3,
            loss: r.f64() * 0.05,
            duplicate: r.f64() * 0.05,
            reorder: r.f64() * 0.1,
        },
        slots: [8, 32, 1024][r.below(3) as usize],
        trim_quorum: 0,
        ordered: r.chance(0.7),
        timeout_ms: rtt_ms * (3.0 + 5.0 * r.f64()),
        gap_timeout_ms: rtt_ms * (2.0 + 4.0 * r.f64()),
        heartbeat_ms: rtt_ms * (1.0 + 3.0 * r.f64()),
        coordinator_fail_at_s,
        acceptor_crash_at_s,
        acceptor_restart_at_s,
        switch_cost_us: 0.0,
        software_cost_us: 0.0,
        host_cost_us: 0.0,
        coordinator_cost_us: None,
        kv: false,
        vote_counters: false,
        pack: 1,
        coordinator_restart_at_s: vec![],
    };
    // Drawn last: the draws above stay what they were for every seed.
    c.vote_counters = r.chance(0.5);
    if r.chance(0.3) {
        c.pack = 2 + r.below(7) as usize;
    }
    // Failback, drawn after everything above: in half the seeds whose
    // coordinator fails it comes back (a restarted coordinator takes the
    // role back), and may fail and come back again, up to 3 times.
    if let Some(f) = c.coordinator_fail_at_s {
        if r.chance(0.5) {
            let cycles = 1 + 2 * r.below(3) as usize;
            let mut t = f;
            for _ in 0..cycles {
                t += (duration_s - t) * (0.1 + 0.5 * r.f64());
                c.coordinator_restart_at_s.push(t);
            }
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The randomized safety check on a handful of seeds (the CLI runs 1000): both
    /// deployments stay safe and deliver everything under faults, and a seed
    /// replays exactly.
    #[test]
    fn checked_faulty_runs_are_clean_and_deterministic() {
        for dp in [DataPlaneAt::Switch, DataPlaneAt::Process] {
            for seed in 1..=5 {
                let cfg = random_check_config(seed, dp, 0.2);
                let a = run_checked(&cfg).unwrap();
                if let Err(e) = &a.result {
                    panic!("seed {seed} {dp:?}: {e}");
                }
                if seed == 1 {
                    let again = run_checked(&cfg).unwrap().trace_hash;
                    if let Some(d) = crate::nondeterminism(a.trace_hash, again, || run_traced(&cfg)).unwrap() {
                        panic!("seed {seed} {dp:?}: {d}");
                    }
                }
            }
        }
    }

    /// The vote counter in front of every learner, proposer and the backup
    /// (the XDP testbed's placement): the same faulty runs stay safe and
    /// deliver everything, and the learners decide from the counter's
    /// DECIDEDs.
    #[test]
    fn checked_faulty_runs_behind_vote_counters_are_clean() {
        for dp in [DataPlaneAt::Switch, DataPlaneAt::Process] {
            for seed in 1..=5 {
                let cfg = PaxosConfig { vote_counters: true, ..random_check_config(seed, dp, 0.2) };
                let a = run_checked(&cfg).unwrap();
                if let Err(e) = &a.result {
                    panic!("seed {seed} {dp:?} with vote counters: {e}");
                }
            }
        }
        let mut t =
            build(&PaxosConfig { vote_counters: true, duration_s: 0.2, ..PaxosConfig::default() }, true).unwrap();
        t.run(Time::from_secs_f64(0.3), None);
        let s = t.learner(0).stats;
        assert!(s.delivered > 100 && s.decided_by_counter >= s.delivered, "{s:?}");
    }

    /// Packing on: the same faulty runs stay safe and deliver every client
    /// value exactly once, in order; instances carry several values.
    #[test]
    fn checked_faulty_runs_with_packing_are_clean() {
        for dp in [DataPlaneAt::Switch, DataPlaneAt::Process] {
            for seed in 1..=5 {
                let cfg = PaxosConfig { pack: 8, outstanding: 8, ..random_check_config(seed, dp, 0.2) };
                let a = run_checked(&cfg).unwrap();
                match &a.result {
                    Err(e) => panic!("seed {seed} {dp:?} packing: {e}"),
                    Ok(s) => assert!(s.values > s.instances, "seed {seed} {dp:?}: {s:?}"),
                }
            }
        }
    }

    /// Section 6.4 / Figure 8b: after the coordinator fails, the backup takes
    /// over and commits continue.
    #[test]
    fn backup_takes_over_and_commits_continue() {
        let cfg = PaxosConfig { coordinator_fail_at_s: Some(0.2), duration_s: 0.5, ..PaxosConfig::default() };
        let mut t = build(&cfg, true).unwrap();
        t.run(Time::from_secs_f64(0.5), None);
        let took = t.backup().active_since().expect("took over");
        assert!(took > Time::from_secs_f64(0.2));
        let after = t.proposer(0).commit_times_ns.iter().filter(|&&c| c > took.as_nanos()).count();
        assert!(after > 100, "only {after} commits after takeover");
    }

    /// CAANS section 3.1 (log trimming): a ring much smaller than the number of instances
    /// never loses one (trimming by learner checkpoints).
    /// `innet check paxos --seed 903` as it was drawn: an 8-slot ring, 3
    /// proposers x 5 in flight, an acceptor crash and a takeover. The
    /// backup ran 64 instances at once, the acceptors refused all but the
    /// ring's 8, the learners (told by WINDOW how far the backup had gone)
    /// recovered the rest as no-ops, and every request the backup started
    /// was moved on to a later instance again: 37,275 no-ops, 14 values
    /// never decided.
    #[test]
    fn a_backup_over_a_small_ring_commits_every_value() {
        for data_plane in [DataPlaneAt::Switch, DataPlaneAt::Process] {
            let cfg = PaxosConfig {
                data_plane,
                acceptors: 5,
                learners: 2,
                proposers: 3,
                outstanding: 5,
                duration_s: 0.2,
                seed: 903,
                latency_us: 39.0,
                faults: crate::faults::Faults { jitter_ms: 0.0176, loss: 0.0075, duplicate: 0.028, reorder: 0.015 },
                slots: 8,
                timeout_ms: 0.595,
                gap_timeout_ms: 0.873,
                heartbeat_ms: 0.278,
                coordinator_fail_at_s: Some(0.152),
                acceptor_crash_at_s: Some(0.119),
                acceptor_restart_at_s: Some(0.134),
                vote_counters: true,
                ..PaxosConfig::default()
            };
            let r = run_checked(&cfg).unwrap();
            let s = r.result.unwrap_or_else(|v| panic!("{data_plane:?}: {v}"));
            assert!(r.took_over);
            assert!(s.noops < s.values / 10, "{data_plane:?}: {} no-ops for {} values", s.noops, s.values);
        }
    }

    #[test]
    fn small_ring_many_instances_loses_nothing() {
        let cfg = PaxosConfig { slots: 64, duration_s: 0.5, outstanding: 16, learners: 3, ..PaxosConfig::default() };
        let r = run_checked(&cfg).unwrap();
        let s = r.result.unwrap();
        assert!(s.instances > 64 * 20, "only {} instances", s.instances);
    }
}
