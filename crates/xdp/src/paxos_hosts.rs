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
use innet_live::{clock, spawn_host, HostOptions, NodeHandle, Stop};
use innet_paxos::deploy::{PaxosDeployment, PaxosRole, Roles};
use innet_paxos::learner::LearnerStats;
use innet_paxos::workload::LoadProposer;
use innet_paxos::{BackupCoordinator, Delivery, DeliveryKind, Learner, Proposer};

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
    /// When the backup took over (ns), if it runs here and did.
    pub takeover_ns: Option<u64>,
    pub proposers: Vec<LoadProposer>,
    pub learners: Vec<LearnerRecord>,
    /// The backup, if it ran here.
    pub backup: Option<BackupCoordinator>,
    pub wall_s: f64,
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

/// A socket on `port` of every address of the hosts namespace.
/// The id of the testbed's proposer `i` (its block, incarnation 0: one
/// run per testbed).
pub fn proposer_id(i: usize) -> u32 {
    innet_paxos::envelope::proposer_id(i, 0)
}

fn bind_in_hosts(port: u16) -> Result<UdpSocket> {
    in_netns(tb::NS_HOSTS, || {
        let addr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port));
        Ok(innet_live::txn::bind(addr)?)
    })
}

/// Node `role`'s index, socket and options in the testbed's deployment.
fn node(d: &PaxosDeployment, addrs: &[SocketAddr], role: PaxosRole) -> Result<(NodeIx, UdpSocket, HostOptions)> {
    let n = *d.with_role(|r| *r == role).first().with_context(|| format!("no {} in the deployment", role.name()))?;
    let o = HostOptions {
        admit: Some(innet_live::paxos::admission_programs_by_ip(d, addrs, n)),
        ..host_options(d, addrs, n)
    };
    Ok((n, bind_in_hosts(addrs[n].port())?, o))
}

/// Starts the backup coordinator of the testbed `up` describes, on
/// [`tb::BACKUP_PORT`] in the hosts namespace.
pub fn spawn_backup(up: &PaxosUp, roles: &Roles, stop: &Stop) -> Result<NodeHandle<BackupCoordinator>> {
    let d = up.deployment();
    let addrs = tb::host_addrs(&d);
    let (_, socket, o) = node(&d, &addrs, PaxosRole::Backup).context(
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
    let d = r.up.deployment();
    let addrs = tb::host_addrs(&d);
    let stop = Stop::new();
    let backup = match r.backup {
        BackupAt::Here => Some(spawn_backup(&r.up, &r.roles, &stop)?),
        BackupAt::Elsewhere => None,
    };
    let mut learners = vec![];
    for i in 0..r.up.learners {
        let (_, socket, o) = node(&d, &addrs, PaxosRole::Learner { id: i as u16 })?;
        let cfg = r.roles.learner(i as u16);
        learners.push(spawn_host(
            &format!("learner{i}"),
            socket,
            o,
            &stop,
            move || TimedLearner { learner: Learner::new(cfg), deliveries: vec![] },
            |l, _| LearnerRecord { stats: l.learner.stats, deliveries: l.deliveries },
        )?);
    }
    let start = clock::now();
    let wall = Instant::now();
    let end = start + r.duration;
    let mut proposers = vec![];
    for i in 0..r.up.proposers {
        let (_, socket, o) = node(&d, &addrs, PaxosRole::Proposer { index: i as u16 })?;
        let (cfg, outstanding, record) = (r.roles.proposer(proposer_id(i)), r.outstanding, r.record);
        proposers.push(spawn_host(
            &format!("proposer{i}"),
            socket,
            o,
            &stop,
            move || LoadProposer::new(Proposer::new(cfg), outstanding, end, record),
            |p, _| p,
        )?);
    }
    let (mut failed_at, mut fail_took) = (None, None);
    if let Some(at) = r.fail_coordinator_at {
        sleep_until(start + at);
        let t = clock::now();
        tb::fail_coordinator().context("fail the coordinator")?;
        (failed_at, fail_took) = (Some(t), Some(clock::now().since(t).as_nanos() as u64));
    }
    sleep_until(end + r.drain);
    let proposers: Vec<LoadProposer> = proposers.into_iter().map(|p| p.shutdown()).collect::<Result<_, _>>()?;
    let learners: Vec<LearnerRecord> = learners.into_iter().map(|l| l.shutdown()).collect::<Result<_, _>>()?;
    let backup = backup.map(|b| b.shutdown()).transpose()?;
    stop.stop();
    Ok(HostsReport {
        start_ns: start.as_nanos(),
        load_end_ns: end.as_nanos(),
        failed_at_ns: failed_at.map(|t| t.as_nanos()),
        fail_took_ns: fail_took,
        takeover_ns: backup.as_ref().and_then(|b| b.active_since()).map(|t| t.as_nanos()),
        proposers,
        learners,
        backup,
        wall_s: wall.elapsed().as_secs_f64(),
    })
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

fn sleep_until(t: Time) {
    let now = clock::now();
    if t > now {
        std::thread::sleep(t.since(now));
    }
}
