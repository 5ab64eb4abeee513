//! The consensus service's deployment, as data ([`innet_core::deploy`]):
//! CAANS Figure 1's roles and who sends to whom, and every role's
//! configuration, in one place for every runtime.
//!
//! * the coordinator multicasts 2As to [`GROUP_ACCEPTORS`];
//! * each acceptor multicasts its 2B votes to [`GROUP_LEARNERS`]: the
//!   learners, the proposers (a proposer learns its own values, section
//!   3.1) and the backup coordinator (which watches for gaps); with
//!   proposers outside the deployment (processes that join later) the
//!   group also names the packet's origin, the proposer whose request
//!   became the 2A;
//! * learners reach the coordinator on [`PORT_COORDINATOR`] and the backup
//!   on [`PORT_BACKUP`] (TRIM, answered with WINDOW), the acceptors through
//!   [`GROUP_ACCEPTORS`] (recovery, TRIM) and each other through
//!   [`GROUP_PEERS`] (CATCHUP / DECIDED);
//! * the backup watches the coordinator on [`PORT_COORDINATOR`] and, when it
//!   takes over, sends 1A/2A to [`GROUP_ACCEPTORS`] and TAKEOVER to
//!   [`GROUP_PROPOSERS`] and [`GROUP_LEARNERS`] (a learner's process may
//!   hold proposers the deployment does not name, such as a key-value
//!   replica's front end, which learn of the takeover through it);
//! * proposers send REQUESTs to [`PORT_COORDINATOR`], or to [`PORT_BACKUP`]
//!   once it took over.
//! * failback deployments only ([`PaxosShape::failback`], opt-in): the
//!   coordinator is also a member of the acceptors' vote group (a restarted
//!   coordinator counts votes like the backup), and reaches the proposers
//!   and learners ([`GROUP_PROPOSERS`], [`GROUP_LEARNERS`]) and the backup
//!   ([`PORT_BACKUP`]) with its TAKEOVER. Not in every deployment: the
//!   votes would triple what a data-plane coordinator receives (CAANS's
//!   cost model, Figures 2 and 7, counts 1 packet per instance).
//!
//! All of them meet in one switch (the CAANS testbed, Figure 6): the
//! deployment's fabric.

use std::time::Duration;

use innet_core::deploy::{DeployError, Deployment, NodeIx, Shape};
use innet_core::Member;

use crate::acceptor::{AcceptorConfig, ACCEPTOR_SLOTS_DEFAULT};
use crate::{
    majority, trim_quorum, BackupConfig, CoordinatorConfig, LearnerConfig, ProposerConfig, GROUP_ACCEPTORS,
    GROUP_LEARNERS, GROUP_PEERS, GROUP_PROPOSERS, MAX_ACCEPTORS, MAX_LEARNERS, PORT_BACKUP, PORT_COORDINATOR,
};

pub const SERVICE: &str = "paxos";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PaxosRole {
    Coordinator,
    Acceptor {
        id: u16,
    },
    Backup,
    Learner {
        id: u16,
    },
    /// Proposer number `index` of the deployment (its proposer id is the
    /// runtime's: ids must be fresh per process, see `ProposerConfig::id`).
    Proposer {
        index: u16,
    },
}

impl PaxosRole {
    /// The coordinator and acceptors are data-plane programs.
    pub fn shape(self) -> Shape {
        match self {
            PaxosRole::Coordinator | PaxosRole::Acceptor { .. } => Shape::Program,
            _ => Shape::Host,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            PaxosRole::Coordinator => "coordinator",
            PaxosRole::Acceptor { .. } => "acceptor",
            PaxosRole::Backup => "backup",
            PaxosRole::Learner { .. } => "learner",
            PaxosRole::Proposer { .. } => "proposer",
        }
    }
}

pub type PaxosDeployment = Deployment<PaxosRole>;

/// The service-wide settings every role's configuration derives from.
#[derive(Clone, Debug, PartialEq)]
pub struct PaxosParams {
    /// Instance slots of the coordinator's and acceptors' rings.
    pub slots: usize,
    /// Learner checkpoints an acceptor waits for before reusing a slot; 0:
    /// a majority of the learners.
    pub trim_quorum: usize,
    /// Learners deliver in instance order (otherwise as decided).
    pub ordered: bool,
    pub proposer_timeout: Duration,
    /// Learners' gap timeout before recovering an instance; also the
    /// backup's patience with an unanswered heartbeat.
    pub gap_timeout: Duration,
    /// The backup coordinator's heartbeat interval.
    pub heartbeat: Duration,
    /// Most client values a proposer packs into one instance's value (1:
    /// no packing; see [`crate::envelope`]).
    pub pack: usize,
}

impl Default for PaxosParams {
    fn default() -> Self {
        PaxosParams {
            slots: ACCEPTOR_SLOTS_DEFAULT,
            trim_quorum: 0,
            ordered: true,
            proposer_timeout: Duration::from_millis(50),
            gap_timeout: Duration::from_millis(20),
            // 3 missed heartbeats: 75 ms, tolerant of a loaded 2-core machine.
            heartbeat: Duration::from_millis(25),
            pack: 1,
        }
    }
}

/// How many of each role.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PaxosShape {
    pub acceptors: usize,
    pub learners: usize,
    /// Proposers inside the deployment.
    pub proposers: usize,
    /// Votes also go to the origin of each 2A (proposers outside the
    /// deployment learn their values; see the module doc).
    pub origin_votes: bool,
    /// Failback: votes also go to the coordinator, which reaches the
    /// proposers, learners and the backup with TAKEOVER (see the module
    /// doc), and the backup tells the coordinator its round, so a restarted
    /// coordinator takes the role back above it ([`Roles::backup`]). Off by
    /// default: only deployments whose coordinator restarts.
    ///
    /// One setting for both: it lives here, in the shape, because it is
    /// first a question of who receives what (the wiring); the roles read
    /// it from the shape ([`Roles::new`]) or from a wired deployment
    /// ([`PaxosShape::of`]).
    pub failback: bool,
}

impl Default for PaxosShape {
    fn default() -> Self {
        PaxosShape { acceptors: 3, learners: 2, proposers: 1, origin_votes: false, failback: false }
    }
}

impl PaxosShape {
    /// The shape of a wired deployment `d` (a topology file's, say): its
    /// roles' counts, and whether [`wire_with`] gave it origin votes and
    /// failback (read from the acceptors' vote group).
    pub fn of(d: &PaxosDeployment) -> PaxosShape {
        let count = |f: fn(&PaxosRole) -> bool| d.with_role(f).len();
        let coordinator = d.with_role(|r| *r == PaxosRole::Coordinator).first().copied();
        let votes = acceptors(d).first().and_then(|&a| d.nodes[a].groups.get(&GROUP_LEARNERS));
        let voter = |m: Member<NodeIx>| votes.is_some_and(|v| v.contains(&m));
        let shape = PaxosShape {
            acceptors: count(|r| matches!(r, PaxosRole::Acceptor { .. })),
            learners: count(|r| matches!(r, PaxosRole::Learner { .. })),
            proposers: count(|r| matches!(r, PaxosRole::Proposer { .. })),
            origin_votes: voter(Member::Origin),
            failback: coordinator.is_some_and(|c| voter(Member::Node(c))),
        };
        debug_assert_eq!(shape.acceptors, acceptors(d).len());
        shape
    }
}

/// Builds the deployment: coordinator, acceptors, backup, learners,
/// proposers (in that order), all on a fabric with one-way delay `fabric`.
pub fn deployment(shape: PaxosShape, fabric: Duration) -> PaxosDeployment {
    let mut d = Deployment::new(SERVICE);
    d.fabric = Some(fabric);
    add(&mut d, "coordinator", PaxosRole::Coordinator);
    for i in 0..shape.acceptors {
        add(&mut d, format!("acceptor{i}"), PaxosRole::Acceptor { id: i as u16 });
    }
    add(&mut d, "backup", PaxosRole::Backup);
    for i in 0..shape.learners {
        add(&mut d, format!("learner{i}"), PaxosRole::Learner { id: i as u16 });
    }
    for i in 0..shape.proposers {
        add(&mut d, format!("proposer{i}"), PaxosRole::Proposer { index: i as u16 });
    }
    wire_with(&mut d, shape.origin_votes, shape.failback);
    debug_assert_eq!(d.nodes.len(), 2 + shape.acceptors + shape.learners + shape.proposers);
    d
}

/// Adds a node of `role` with empty tables; [`wire`] fills them.
pub fn add(d: &mut PaxosDeployment, name: impl Into<String>, role: PaxosRole) -> NodeIx {
    let ix = d.add(name, role, role.shape());
    debug_assert_eq!(d.nodes[ix].shape, role.shape(), "a node's shape follows from its role");
    ix
}

/// Writes every node's ports and groups from the roles present (see the
/// module doc), without failback. Replaces whatever the tables held.
pub fn wire(d: &mut PaxosDeployment, origin_votes: bool) {
    wire_with(d, origin_votes, false)
}

/// [`wire`], with the coordinator in the vote group and reaching the
/// proposers, learners and backup if `failback`.
pub fn wire_with(d: &mut PaxosDeployment, origin_votes: bool, failback: bool) {
    let of = |d: &PaxosDeployment, f: fn(&PaxosRole) -> bool| d.with_role(f);
    let coordinator = of(d, |r| *r == PaxosRole::Coordinator).first().copied();
    let backup = of(d, |r| *r == PaxosRole::Backup).first().copied();
    let acceptors = of(d, |r| matches!(r, PaxosRole::Acceptor { .. }));
    let learners = of(d, |r| matches!(r, PaxosRole::Learner { .. }));
    let proposers = of(d, |r| matches!(r, PaxosRole::Proposer { .. }));
    let nodes = |v: &[NodeIx]| v.iter().map(|&n| Member::Node(n)).collect::<Vec<_>>();
    let mut voters = nodes(&learners);
    voters.extend(nodes(&proposers));
    voters.extend(backup.map(Member::Node));
    if failback {
        voters.extend(coordinator.map(Member::Node));
    }
    if origin_votes {
        voters.push(Member::Origin);
    }
    for n in &mut d.nodes {
        n.ports.clear();
        n.groups.clear();
    }
    for i in 0..d.nodes.len() {
        match d.nodes[i].role {
            PaxosRole::Coordinator => {
                d.set_group(i, GROUP_ACCEPTORS, nodes(&acceptors));
                if failback {
                    d.set_group(i, GROUP_PROPOSERS, nodes(&proposers));
                    d.set_group(i, GROUP_LEARNERS, nodes(&learners));
                    backup.inspect(|&b| d.set_port(i, PORT_BACKUP, b));
                }
            }
            PaxosRole::Acceptor { .. } => d.set_group(i, GROUP_LEARNERS, voters.clone()),
            PaxosRole::Learner { .. } => {
                d.set_group(i, GROUP_ACCEPTORS, nodes(&acceptors));
                let peers: Vec<NodeIx> = learners.iter().copied().filter(|&o| o != i).collect();
                d.set_group(i, GROUP_PEERS, nodes(&peers));
                coordinator.inspect(|&c| d.set_port(i, PORT_COORDINATOR, c));
                backup.inspect(|&b| d.set_port(i, PORT_BACKUP, b));
            }
            PaxosRole::Backup => {
                d.set_group(i, GROUP_ACCEPTORS, nodes(&acceptors));
                d.set_group(i, GROUP_PROPOSERS, nodes(&proposers));
                d.set_group(i, GROUP_LEARNERS, nodes(&learners));
                coordinator.inspect(|&c| d.set_port(i, PORT_COORDINATOR, c));
            }
            PaxosRole::Proposer { .. } => {
                coordinator.inspect(|&c| d.set_port(i, PORT_COORDINATOR, c));
                backup.inspect(|&b| d.set_port(i, PORT_BACKUP, b));
            }
        }
    }
    debug_assert!(
        acceptors.iter().all(|&a| d.nodes[a].groups.get(&GROUP_LEARNERS).is_some_and(|g| g.len() == voters.len())),
        "every acceptor's votes reach every voter"
    );
}

/// The acceptors, in id order.
pub fn acceptors(d: &PaxosDeployment) -> Vec<NodeIx> {
    d.with_role(|r| matches!(r, PaxosRole::Acceptor { .. }))
}

/// The learners, in id order.
pub fn learners(d: &PaxosDeployment) -> Vec<NodeIx> {
    let found = d.with_role(|r| matches!(r, PaxosRole::Learner { .. }));
    debug_assert!(found.iter().all(|&n| matches!(d.nodes[n].role, PaxosRole::Learner { .. })));
    found
}

/// Every role's configuration for a deployment with `acceptors` acceptors
/// and `learners` learners (and failback, [`PaxosShape::failback`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Roles {
    pub params: PaxosParams,
    pub acceptors: usize,
    pub learners: usize,
    pub failback: bool,
}

impl Roles {
    pub fn new(params: PaxosParams, shape: &PaxosShape) -> Roles {
        debug_assert!(params.pack >= 1, "pack counts client values per instance, at least 1");
        Roles { params, acceptors: shape.acceptors, learners: shape.learners, failback: shape.failback }
    }
    pub fn of(d: &PaxosDeployment, params: PaxosParams) -> Roles {
        let r = Roles::new(params, &PaxosShape::of(d));
        debug_assert_eq!(r.learners, learners(d).len());
        r
    }
    /// Votes a value needs: a majority of the acceptors.
    pub fn quorum(&self) -> usize {
        let q = majority(self.acceptors);
        debug_assert!(q <= self.acceptors.max(1), "a quorum of at most the acceptors");
        q
    }
    pub fn trim_quorum(&self) -> usize {
        trim_quorum(self.params.trim_quorum, self.learners)
    }
    pub fn coordinator(&self) -> CoordinatorConfig {
        let c = CoordinatorConfig {
            slots: self.params.slots,
            trim_quorum: self.trim_quorum(),
            ..CoordinatorConfig::new(self.learners)
        };
        debug_assert_eq!(c.slots, self.acceptor(0).slots, "the coordinator hands out instances within the rings");
        c
    }
    pub fn acceptor(&self, id: u16) -> AcceptorConfig {
        let a = AcceptorConfig {
            slots: self.params.slots,
            trim_quorum: self.trim_quorum(),
            ..AcceptorConfig::new(id, self.learners)
        };
        debug_assert_eq!(a.learners, self.learners);
        a
    }
    pub fn backup(&self) -> BackupConfig {
        let b = BackupConfig {
            failback: self.failback,
            heartbeat_interval: self.params.heartbeat,
            timeout: self.params.gap_timeout,
            ..BackupConfig::new(self.quorum())
        };
        // Never more instances in flight than the acceptors' ring holds:
        // beyond it they refuse every message (`ring_full`), and the
        // instances the backup announced (WINDOW) but could not run would
        // be recovered by the learners as no-ops, moving its requests on
        // and on (seed 903 of `innet check paxos`: 8 slots, window 64).
        let b = BackupConfig { window: b.window.min(self.params.slots.max(1)), ..b };
        debug_assert_eq!(b.quorum, self.quorum());
        b
    }
    /// A restarted coordinator (failback): the backup's state machine under
    /// the coordinator's issuer, from `first_epoch` (above every epoch its
    /// earlier incarnations used).
    pub fn restarted_coordinator(&self, first_epoch: u8) -> BackupConfig {
        assert!(first_epoch >= 1, "epoch 0 is the pre-initialised round's");
        let c = BackupConfig { mode: crate::backup::Mode::Restarted { first_epoch }, failback: true, ..self.backup() };
        debug_assert_eq!(c.issuer(), crate::ISSUER_COORDINATOR);
        c
    }
    pub fn learner(&self, id: u16) -> LearnerConfig {
        let p = &self.params;
        LearnerConfig {
            ordered: p.ordered,
            gap_timeout: p.gap_timeout,
            recover_timeout: p.gap_timeout,
            trim_every: (p.slots as u32 / 8).clamp(1, 64),
            trim_interval: p.gap_timeout,
            ..LearnerConfig::new(id, self.quorum())
        }
    }
    pub fn proposer(&self, id: u32) -> ProposerConfig {
        let p = ProposerConfig {
            pack: self.params.pack,
            ..ProposerConfig::new(id, self.quorum(), self.params.proposer_timeout)
        };
        debug_assert_eq!(p.quorum, self.learner(0).quorum, "proposers and learners count the same quorum");
        p
    }
}

/// Checks what the consensus service needs beyond
/// [`Deployment::validate`]: one coordinator, 1..=MAX_ACCEPTORS acceptors
/// with ids 0..n, 1..=MAX_LEARNERS learners with ids 0..n, at most one
/// backup, and the tables [`wire`] writes.
pub fn validate(d: &PaxosDeployment) -> Result<(), DeployError> {
    d.validate()?;
    let err = |s: String| Err(DeployError(s));
    let count = |f: fn(&PaxosRole) -> bool| d.with_role(f).len();
    if count(|r| *r == PaxosRole::Coordinator) != 1 {
        return err("a consensus deployment has exactly one coordinator".into());
    }
    if count(|r| *r == PaxosRole::Backup) > 1 {
        return err("a consensus deployment has at most one backup coordinator".into());
    }
    // Each proposer owns a block of proposer ids (crate::envelope).
    let max = crate::envelope::PROPOSERS_MAX;
    for n in &d.nodes {
        if let PaxosRole::Proposer { index } = n.role {
            if index as usize >= max {
                return err(format!("proposer {} has index {index}: a deployment has at most {max} proposers", n.name));
            }
        }
    }
    let ids = |f: fn(&PaxosRole) -> Option<u16>| d.nodes.iter().filter_map(|n| f(&n.role)).collect::<Vec<u16>>();
    for (what, ids, max) in [
        (
            "acceptor",
            ids(|r| match r {
                PaxosRole::Acceptor { id } => Some(*id),
                _ => None,
            }),
            MAX_ACCEPTORS,
        ),
        (
            "learner",
            ids(|r| match r {
                PaxosRole::Learner { id } => Some(*id),
                _ => None,
            }),
            MAX_LEARNERS,
        ),
    ] {
        if ids.is_empty() || ids.len() > max {
            return err(format!("a consensus deployment has 1 to {max} {what}s; this one has {}", ids.len()));
        }
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        if sorted != (0..ids.len() as u16).collect::<Vec<_>>() {
            return err(format!("{what} ids must be 0..{} without gaps or repeats; got {ids:?}", ids.len()));
        }
    }
    debug_assert_eq!(d.with_role(|r| *r == PaxosRole::Coordinator).len(), 1);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_deployment_wires_figure_1() {
        let d = deployment(PaxosShape::default(), Duration::ZERO);
        validate(&d).unwrap();
        assert_eq!(
            d.names(),
            ["coordinator", "acceptor0", "acceptor1", "acceptor2", "backup", "learner0", "learner1", "proposer0"]
        );
        let acc: Vec<Member<NodeIx>> = (1..=3).map(Member::Node).collect();
        assert_eq!(d.nodes[0].groups[&GROUP_ACCEPTORS], acc);
        let votes = &d.nodes[1].groups[&GROUP_LEARNERS];
        assert_eq!(votes, &vec![Member::Node(5), Member::Node(6), Member::Node(7), Member::Node(4)]);
        assert_eq!(d.nodes[5].groups[&GROUP_PEERS], vec![Member::Node(6)]);
        assert_eq!(d.nodes[7].ports[&PORT_BACKUP], 4);
        let with_origin =
            deployment(PaxosShape { proposers: 0, origin_votes: true, ..PaxosShape::default() }, Duration::ZERO);
        assert_eq!(with_origin.nodes[1].groups[&GROUP_LEARNERS].last(), Some(&Member::Origin));
        // The coordinator gets no votes unless the deployment has failback.
        assert!(!votes.contains(&Member::Node(0)));
        assert_eq!(d.nodes[0].groups.len(), 1);
    }

    /// Failback (opt-in): votes reach the coordinator too, and it reaches
    /// the proposers, learners and the backup with TAKEOVER.
    #[test]
    fn failback_adds_the_coordinator_to_the_votes() {
        let d = deployment(PaxosShape { failback: true, ..PaxosShape::default() }, Duration::ZERO);
        validate(&d).unwrap();
        let votes = &d.nodes[1].groups[&GROUP_LEARNERS];
        assert_eq!(votes.last(), Some(&Member::Node(0)));
        assert_eq!(votes.len(), 5);
        assert_eq!(d.nodes[0].groups[&GROUP_PROPOSERS], vec![Member::Node(7)]);
        assert_eq!(d.nodes[0].groups[&GROUP_LEARNERS], vec![Member::Node(5), Member::Node(6)]);
        assert_eq!(d.nodes[0].ports[&PORT_BACKUP], 4);
    }

    fn shape(acceptors: usize, learners: usize) -> PaxosShape {
        PaxosShape { acceptors, learners, ..PaxosShape::default() }
    }

    /// A wired deployment gives back the shape it was built from, failback
    /// and origin votes included, and the roles read failback from it.
    #[test]
    fn a_deployment_gives_back_its_shape() {
        for (origin_votes, failback) in [(false, false), (true, false), (false, true), (true, true)] {
            let s = PaxosShape { acceptors: 5, learners: 3, proposers: 2, origin_votes, failback };
            let d = deployment(s, Duration::ZERO);
            assert_eq!(PaxosShape::of(&d), s);
            let r = Roles::of(&d, PaxosParams::default());
            assert_eq!((r.acceptors, r.learners, r.failback), (5, 3, failback));
            assert_eq!(r.backup().failback, failback, "the backup tells the coordinator its round only with failback");
        }
    }

    #[test]
    fn role_configurations_follow_the_params() {
        let r = Roles::new(PaxosParams { slots: 64, ..PaxosParams::default() }, &shape(5, 3));
        assert_eq!((r.quorum(), r.trim_quorum()), (3, 2));
        assert_eq!(r.acceptor(4).slots, 64);
        assert_eq!(r.learner(1).trim_every, 8);
        assert_eq!(r.backup().window, 64, "the backup's own window where the ring is larger");
        // A backup never runs more instances than the acceptors' ring holds
        // (`innet check paxos --seed 903`: 8 slots, a window of 64, the
        // learners recovered the instances it could not run as no-ops and
        // its requests never committed).
        let small = Roles::new(PaxosParams { slots: 8, ..PaxosParams::default() }, &shape(5, 2));
        assert_eq!(small.backup().window, 8);
    }

    #[test]
    fn ids_must_be_dense() {
        let mut d = deployment(PaxosShape::default(), Duration::ZERO);
        d.nodes[2].role = PaxosRole::Acceptor { id: 7 };
        assert!(validate(&d).unwrap_err().0.contains("acceptor ids"));
    }
}
