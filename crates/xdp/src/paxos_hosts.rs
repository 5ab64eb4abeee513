//! The end hosts of the `paxos` testbed ([`crate::paxos_testbed`]):
//! learners, load proposers and the backup coordinator, as threads of this
//! process on sockets bound in the hosts namespace, wired from the
//! testbed's deployment ([`innet_paxos::deploy`] through
//! [`crate::paxos_testbed::host_addrs`]); optionally the coordinator fails
//! mid-run ([`crate::paxos_testbed::fail_coordinator`]) and the backup takes over
//! (CAANS section 3.1).

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use innet_core::deploy::NodeIx;
use innet_core::{Host, Outbox, Time};
use innet_live::deploy::host_options;
use innet_live::{clock, spawn_host, HostOptions, HostStats, NodeHandle, Shared, SharedSocket, SharedStats, Stop};
use innet_paxos::deploy::{PaxosDeployment, PaxosRole, Roles};
use innet_paxos::learner::LearnerStats;
use innet_paxos::workload::LoadProposer;
use innet_paxos::{BackupCoordinator, Delivery, DeliveryKind, Learner, LearnerConfig, Proposer};

use crate::paxos_testbed::{self as tb, PaxosUp};
use crate::testbed::in_netns;

/// Where the backup coordinator runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackupAt {
    /// A thread of this process.
    Here,
    /// Another process (the one `innet testbed up paxos` starts).
    Elsewhere,
}

/// One run of the end hosts.
#[derive(Clone, Debug)]
pub struct HostsRun {
    /// The testbed's shape (as it was brought up).
    pub up: PaxosUp,
    /// Every role's configuration.
    pub roles: Roles,
    /// Requests each proposer keeps in flight.
    pub outstanding: usize,
    /// Proposers submit for this long.
    pub duration: Duration,
    /// Learners keep running this long after the proposers stop submitting
    /// (outstanding requests finish, learners fill their gaps).
    pub drain: Duration,
    pub backup: BackupAt,
    /// Fail the coordinator this long after the start.
    pub fail_coordinator_at: Option<Duration>,
    /// Fail acceptor 0 this long after the start (its links go down:
    /// CAANS Figure 8a).
    pub fail_acceptor_at: Option<Duration>,
    /// Proposers remember every submitted value (for checks).
    pub record: bool,
}

/// What a learner delivered, with the time of each delivery.
#[derive(Clone, Debug)]
pub struct LearnerRecord {
    pub stats: LearnerStats,
    /// `(ns on the live clock, delivery)`, in delivery order.
    pub deliveries: Vec<(u64, Delivery)>,
}

impl LearnerRecord {
    /// When each submitted value (not a no-op, not a duplicate) was
    /// delivered to the application.
    pub fn value_times(&self) -> Vec<u64> {
        self.deliveries.iter().filter(|(_, d)| d.kind == DeliveryKind::Value).map(|(t, _)| *t).collect()
    }
}

/// What a run did.
#[derive(Debug)]
pub struct HostsReport {
    /// The live clock at the start of the load (ns).
    pub start_ns: u64,
    /// When the proposers stopped submitting (ns).
    pub load_end_ns: u64,
    /// When the coordinator was failed (ns; just before its links were set
    /// down).
    pub failed_at_ns: Option<u64>,
    /// How long setting its links down took (ns).
    pub fail_took_ns: Option<u64>,
    /// When acceptor 0 was failed (ns; just before its links were set down).
    pub acceptor_failed_at_ns: Option<u64>,
    /// When the backup took over (ns), if it runs here and did.
    pub takeover_ns: Option<u64>,
    pub proposers: Vec<LoadProposer>,
    pub learners: Vec<LearnerRecord>,
    /// The backup, if it ran here.
    pub backup: Option<BackupCoordinator>,
    pub wall_s: f64,
    /// One vote per machine: what the machine's shared decision socket
    /// and ring delivered (`None`: every role on its own socket).
    pub machine: Option<SharedStats>,
    /// What the runtime did for each role's own socket (learners, then
    /// proposers, then the backup if here), with one vote per machine.
    pub net: Vec<HostStats>,
}

impl HostsReport {
    /// The longest time between two consecutive deliveries of submitted
    /// values at learner `i` while the proposers submitted (ns).
    pub fn longest_gap_ns(&self, i: usize) -> u64 {
        let t: Vec<u64> = self.learners[i]
            .value_times()
            .into_iter()
            .filter(|&t| t >= self.start_ns && t <= self.load_end_ns)
            .collect();
        t.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0)
    }
    /// Values learner `i` delivered before and after the coordinator failed.
    pub fn delivered_around_failure(&self, i: usize) -> (usize, usize) {
        let at = self.failed_at_ns.unwrap_or(u64::MAX);
        let t = self.learners[i].value_times();
        let before = t.iter().filter(|&&x| x < at).count();
        (before, t.len() - before)
    }
}

/// A learner that stamps each delivery with the time it was made.
struct TimedLearner {
    learner: Learner,
    deliveries: Vec<(u64, Delivery)>,
}

impl TimedLearner {
    fn collect(&mut self, now: Time) {
        let t = now.as_nanos();
        self.deliveries.extend(self.learner.take_deliveries().into_iter().map(|d| (t, d)));
    }
}

impl Host for TimedLearner {
    fn on_packet(&mut self, now: Time, packet: &[u8], out: &mut Outbox) {
        self.learner.on_packet(now, packet, out);
        self.collect(now);
    }
    fn on_tick(&mut self, now: Time, out: &mut Outbox) {
        self.learner.on_tick(now, out);
        self.collect(now);
    }
    fn next_tick(&self) -> Option<Time> {
        self.learner.next_tick()
    }
}

/// Every role of the hosts machine, in one event loop (one vote per
/// machine: they learn from one count).
enum EndHost {
    Learner(TimedLearner),
    Proposer(LoadProposer),
    Backup(BackupCoordinator),
}

impl Host for EndHost {
    fn on_packet(&mut self, now: Time, packet: &[u8], out: &mut Outbox) {
        match self {
            EndHost::Learner(h) => h.on_packet(now, packet, out),
            EndHost::Proposer(h) => h.on_packet(now, packet, out),
            EndHost::Backup(h) => h.on_packet(now, packet, out),
        }
    }
    fn on_tick(&mut self, now: Time, out: &mut Outbox) {
        match self {
            EndHost::Learner(h) => h.on_tick(now, out),
            EndHost::Proposer(h) => h.on_tick(now, out),
            EndHost::Backup(h) => h.on_tick(now, out),
        }
    }
    fn next_tick(&self) -> Option<Time> {
        match self {
            EndHost::Learner(h) => h.next_tick(),
            EndHost::Proposer(h) => h.next_tick(),
            EndHost::Backup(h) => h.next_tick(),
        }
    }
}

/// The id of the testbed's proposer `i` (its block, incarnation 0: one
/// run per testbed).
pub fn proposer_id(i: usize) -> u32 {
    innet_paxos::envelope::proposer_id(i, 0)
}

/// A socket on `port` of every address of the hosts namespace.
fn bind_in_hosts(port: u16) -> Result<UdpSocket> {
    in_netns(tb::NS_HOSTS, || {
        let addr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port));
        Ok(innet_live::txn::bind(addr)?)
    })
}

/// Node `role`'s index, socket and options in the testbed `up`'s
/// deployment `d` (with the testbed's keys, if any).
fn node(
    up: &PaxosUp,
    d: &PaxosDeployment,
    addrs: &[SocketAddr],
    role: PaxosRole,
) -> Result<(NodeIx, UdpSocket, HostOptions)> {
    let n = *d.with_role(|r| *r == role).first().with_context(|| format!("no {} in the deployment", role.name()))?;
    let o = HostOptions {
        admit: Some(innet_live::paxos::admission_programs_by_ip(d, addrs, n)),
        auth: up.peer_auth(),
        ..host_options(d, addrs, n)
    };
    Ok((n, bind_in_hosts(addrs[n].port())?, o))
}

/// Starts the backup coordinator of the testbed `up` describes, on
/// [`tb::BACKUP_PORT`] in the hosts namespace.
pub fn spawn_backup(up: &PaxosUp, roles: &Roles, stop: &Stop) -> Result<NodeHandle<BackupCoordinator>> {
    let d = up.deployment();
    let addrs = tb::host_addrs(&d);
    let (_, socket, o) = node(up, &d, &addrs, PaxosRole::Backup).context(
        "the backup coordinator's socket (if `innet testbed up paxos` started the testbed, its backup process \
         holds the port: run the end hosts with `--backup testbed`)",
    )?;
    let cfg = roles.backup();
    Ok(spawn_host("backup", socket, o, stop, move || BackupCoordinator::new(cfg), |b, _| b)?)
}

/// Runs learners, proposers and (with [`BackupAt::Here`]) the backup on the
/// testbed, fails the coordinator if asked, and reports every delivery.
pub fn run(r: &HostsRun) -> Result<HostsReport> {
    anyhow::ensure!(r.outstanding >= 1, "at least one request in flight per proposer");
    if r.up.per_machine() {
        return run_machine(r);
    }
    let timed = |_: u16, cfg: LearnerConfig| Ok(TimedLearner { learner: Learner::new(cfg), deliveries: vec![] });
    let record = |l: TimedLearner| (LearnerRecord { stats: l.learner.stats, deliveries: l.deliveries }, ());
    Ok(run_with(r, |p| p, timed, record)?.0)
}

/// [`run`] with learners of the caller's making (every role on its own
/// port: not with one vote per machine): `make(id, config)` builds learner
/// `id` (a key-value replica, CAANS Figure 7d), `finish` turns it into its
/// record and what the caller keeps of it; every load proposer is
/// `load(p)` of the default one (`innet_paxos_kv::with_kv_load`: submitting
/// key-value commands). A learner's record carries no deliveries unless
/// `finish` puts them in.
pub fn run_with<L, K>(
    r: &HostsRun,
    load: fn(LoadProposer) -> LoadProposer,
    mut make: impl FnMut(u16, LearnerConfig) -> Result<L>,
    finish: fn(L) -> (LearnerRecord, K),
) -> Result<(HostsReport, Vec<K>)>
where
    L: Host + Send + 'static,
    K: Send + 'static,
{
    anyhow::ensure!(r.outstanding >= 1, "at least one request in flight per proposer");
    anyhow::ensure!(
        !r.up.per_machine(),
        "learners of the caller's making need every role on its own port (`--decisions per-port`), not one vote \
         per machine"
    );
    let d = r.up.deployment();
    let addrs = tb::host_addrs(&d);
    let stop = Stop::new();
    let backup = match r.backup {
        BackupAt::Here => Some(spawn_backup(&r.up, &r.roles, &stop)?),
        BackupAt::Elsewhere => None,
    };
    let mut learners = vec![];
    for i in 0..r.up.shape.learners {
        let (_, socket, o) = node(&r.up, &d, &addrs, PaxosRole::Learner { id: i as u16 })?;
        let mut learner = Some(make(i as u16, r.roles.learner(i as u16))?);
        learners.push(spawn_host(
            &format!("learner{i}"),
            socket,
            o,
            &stop,
            move || learner.take().expect("built once"),
            move |l, _| finish(l),
        )?);
    }
    let start = clock::now();
    let wall = Instant::now();
    let end = start + r.duration;
    let mut proposers = vec![];
    for i in 0..r.up.shape.proposers {
        let (_, socket, o) = node(&r.up, &d, &addrs, PaxosRole::Proposer { index: i as u16 })?;
        let (cfg, outstanding, record) = (r.roles.proposer(proposer_id(i)), r.outstanding, r.record);
        proposers.push(spawn_host(
            &format!("proposer{i}"),
            socket,
            o,
            &stop,
            move || load(LoadProposer::new(Proposer::new(cfg), outstanding, end, record)),
            |p, _| p,
        )?);
    }
    let (failed_at, fail_took, acceptor_failed) = fail_both(start, r)?;
    sleep_until(end + r.drain);
    let proposers: Vec<LoadProposer> = proposers.into_iter().map(|p| p.shutdown()).collect::<Result<_, _>>()?;
    let (learners, kept): (Vec<LearnerRecord>, Vec<K>) =
        learners.into_iter().map(|l| l.shutdown()).collect::<Result<Vec<_>, _>>()?.into_iter().unzip();
    let backup = backup.map(|b| b.shutdown()).transpose()?;
    stop.stop();
    let times = Times { start, end, failed: (failed_at, fail_took), acceptor_failed, wall };
    Ok((times.report(proposers, learners, backup, None, vec![]), kept))
}

/// The vote counter's ring of decisions (pinned by the testbed `up`) as
/// the event loop's feed.
fn decision_ring(up: &PaxosUp) -> innet_live::MakeFeed {
    let dir = std::path::Path::new(crate::testbed::PIN_DIR).join("paxos").join(tb::COUNTER_PINS);
    let poll = (up.ring.wakeup > 0).then_some(crate::paxos_learner::RING_POLL);
    Box::new(move || {
        let mut ring = crate::paxos_learner::DecisionRing::open_pinned(&dir).map_err(std::io::Error::other)?;
        ring.poll_every = poll;
        Ok(Box::new(ring) as Box<dyn innet_live::Feed>)
    })
}

/// [`run`] with one vote per machine ([`PaxosUp::per_machine`]): every
/// role of the hosts machine in one event loop, each on its own socket
/// for its own traffic, all learning every decision from the machine's
/// decision socket and (with [`tb::Decisions::Ring`]) the vote counter's
/// ring, read as a feed.
fn run_machine(r: &HostsRun) -> Result<HostsReport> {
    anyhow::ensure!(
        r.backup == BackupAt::Here,
        "one vote per machine: the backup coordinator must run in the process that reads the machine's decisions \
         (`--backup here`); a testbed with a backup process of its own counts votes per port"
    );
    let d = r.up.deployment();
    let addrs = tb::host_addrs(&d);
    let mut hosts = vec![];
    let mut endpoints = vec![];
    for i in 0..r.up.shape.learners {
        let (_, socket, o) = node(&r.up, &d, &addrs, PaxosRole::Learner { id: i as u16 })?;
        let learner = Learner::new(r.roles.learner(i as u16));
        hosts.push(EndHost::Learner(TimedLearner { learner, deliveries: vec![] }));
        endpoints.push((socket, o));
    }
    let start = clock::now();
    let wall = Instant::now();
    let end = start + r.duration;
    for i in 0..r.up.shape.proposers {
        let (_, socket, o) = node(&r.up, &d, &addrs, PaxosRole::Proposer { index: i as u16 })?;
        let p = LoadProposer::new(Proposer::new(r.roles.proposer(proposer_id(i))), r.outstanding, end, r.record);
        hosts.push(EndHost::Proposer(p));
        endpoints.push((socket, o));
    }
    let (_, socket, o) = node(&r.up, &d, &addrs, PaxosRole::Backup)?;
    hosts.push(EndHost::Backup(BackupCoordinator::new(r.roles.backup())));
    endpoints.push((socket, o));
    // Decisions that go up as packets (all of them, or the ring's
    // overflow), under the learners' rules (a DECIDED from an acceptor).
    let learner0 = *d.with_role(|r| *r == PaxosRole::Learner { id: 0 }).first().context("no learner")?;
    let admit = Some(innet_live::paxos::admission_programs_by_ip(&d, &addrs, learner0));
    let all: Vec<usize> = (0..hosts.len()).collect();
    // With keys, a decision up as a packet is sealed by the vote counter
    // and checked here like any datagram; one through the ring carries no
    // trailer: only the counter's program writes the ring.
    let auth = r.up.peer_auth();
    let shared_socket = SharedSocket { socket: bind_in_hosts(tb::DECISION_PORT)?, to: all.clone(), admit, auth };
    let feed = (r.up.decisions == tb::Decisions::Ring).then(|| (decision_ring(&r.up), vec![all]));
    // In driver mode every veth's peer runs a driver-mode program, so a
    // segmented send is cut into single frames before any program sees
    // it: the proposers' requests leave in one trip per batch.
    let segment_everywhere = r.up.fabric.mode == crate::fabric::XdpMode::Native;
    let shared = Shared { sockets: vec![shared_socket], feed, segment_everywhere };
    let stop = Stop::new();
    let until = end + r.drain;
    let s = stop.clone();
    let machine = std::thread::Builder::new().name("innet-hosts".into()).spawn(move || {
        let mut hosts = hosts;
        let (net, shared) = innet_live::run_machine(&mut hosts, endpoints, shared, &s, Some(until))?;
        Ok::<_, std::io::Error>((hosts, net, shared))
    })?;
    let (failed_at, fail_took, acceptor_failed) = fail_both(start, r)?;
    let joined = machine.join().map_err(|_| anyhow::anyhow!("the hosts' event loop panicked"))?;
    stop.stop();
    let (hosts, net, shared) = joined?;
    let (mut learners, mut proposers, mut backup) = (vec![], vec![], None);
    for h in hosts {
        match h {
            EndHost::Learner(l) => {
                learners.push(LearnerRecord { stats: l.learner.stats, deliveries: l.deliveries });
            }
            EndHost::Proposer(p) => proposers.push(p),
            EndHost::Backup(b) => backup = Some(b),
        }
    }
    let times = Times { start, end, failed: (failed_at, fail_took), acceptor_failed, wall };
    Ok(times.report(proposers, learners, backup, Some(shared), net))
}

/// Runs the backup coordinator alone until `stop` (the process `innet
/// testbed up paxos` starts); `say` gets `backup ADDR` once it listens.
pub fn run_backup(up: &PaxosUp, roles: &Roles, stop: &Stop, mut say: impl FnMut(&str)) -> Result<()> {
    let b = spawn_backup(up, roles, stop)?;
    say(&format!("backup {}", tb::backup_addr()));
    while !stop.is_stopped() && !b.is_finished() {
        std::thread::sleep(Duration::from_millis(50));
    }
    let b = b.shutdown()?;
    if let Some(t) = b.active_since() {
        say(&format!("backup took over at {:.3} s on the live clock", t.as_nanos() as f64 / 1e9));
    }
    Ok(())
}

/// When a run started, stopped submitting and failed the coordinator.
struct Times {
    start: Time,
    end: Time,
    /// When the coordinator failed and how long setting its links down took (ns).
    failed: (Option<Time>, Option<u64>),
    /// When acceptor 0 failed.
    acceptor_failed: Option<Time>,
    wall: Instant,
}

impl Times {
    fn report(
        self,
        proposers: Vec<LoadProposer>,
        learners: Vec<LearnerRecord>,
        backup: Option<BackupCoordinator>,
        machine: Option<SharedStats>,
        net: Vec<HostStats>,
    ) -> HostsReport {
        HostsReport {
            start_ns: self.start.as_nanos(),
            load_end_ns: self.end.as_nanos(),
            failed_at_ns: self.failed.0.map(|t| t.as_nanos()),
            fail_took_ns: self.failed.1,
            acceptor_failed_at_ns: self.acceptor_failed.map(|t| t.as_nanos()),
            takeover_ns: backup.as_ref().and_then(|b| b.active_since()).map(|t| t.as_nanos()),
            proposers,
            learners,
            backup,
            wall_s: self.wall.elapsed().as_secs_f64(),
            machine,
            net,
        }
    }
}

/// Fails the coordinator `at` after `start`, if asked: when (on the live
/// clock) and how long setting its links down took (ns).
fn fail_at(start: Time, at: Option<Duration>) -> Result<(Option<Time>, Option<u64>)> {
    let Some(at) = at else { return Ok((None, None)) };
    sleep_until(start + at);
    let t = clock::now();
    tb::fail_coordinator().context("fail the coordinator")?;
    Ok((Some(t), Some(clock::now().since(t).as_nanos() as u64)))
}

/// Fails the coordinator and acceptor 0 when `r` asks (the acceptor from a
/// thread of its own, so either may come first): the coordinator's
/// [`fail_at`] figures and when the acceptor failed.
fn fail_both(start: Time, r: &HostsRun) -> Result<(Option<Time>, Option<u64>, Option<Time>)> {
    let acceptor = r.fail_acceptor_at.map(|at| {
        std::thread::spawn(move || -> Result<Time> {
            sleep_until(start + at);
            let t = clock::now();
            tb::fail_acceptor(0).context("fail acceptor 0")?;
            Ok(t)
        })
    });
    let (failed_at, fail_took) = fail_at(start, r.fail_coordinator_at)?;
    let acceptor_failed = match acceptor {
        Some(h) => Some(h.join().map_err(|_| anyhow::anyhow!("the acceptor's failure thread panicked"))??),
        None => None,
    };
    Ok((failed_at, fail_took, acceptor_failed))
}

fn sleep_until(t: Time) {
    let now = clock::now();
    if t > now {
        std::thread::sleep(t.since(now));
    }
}
