//! The consensus service (CAANS) on the live runtime: coordinator and
//! acceptors as user-space software switches (`software = false`, the
//! data-plane deployment) or as ordinary UDP processes running the same
//! programs ([`SoftwareNode`], the libpaxos-style baseline), the software
//! backup coordinator, and the wiring (groups, ports) of learners and
//! proposers, all on loopback.
//!
//! [`Plan::bind`] binds every socket first, so each role's tables can name
//! every address, and [`Plan::spawn_core`] starts (the two steps of
//! [`crate::deploy::instantiate`]) the coordinator, acceptors and
//! backup; learners and proposers are started by the caller (they are
//! application processes: a load generator, a key-value replica, the C
//! library) with [`Plan::learner_options`] / [`Plan::proposer_options`].
//!
//! Acceptors send votes to the learners, the backup and the proposers bound
//! through the plan. In the switch deployment without such proposers, votes
//! go to the packet's origin instead (the proposer whose request the
//! coordinator turned into the 2A; the origin travels between the switches
//! in the runtime's shim), so proposers in other processes learn their votes
//! too, as long as the switch coordinator runs (a 2A of the backup has the
//! backup as its origin, and the backup's TAKEOVER reaches only proposers of
//! the plan). Software processes have no origin: there, proposers must be
//! bound through the plan.
//!
//! [`app`]: the application API (`submit`, `deliver` callback, `recover`)
//! over a deployment, for Rust programs (and for the C library).

pub mod acceptor_store;
pub mod app;
pub mod coordinator_epoch;

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use acceptor_store::{AcceptorStore, LiveAcceptor};
use innet_core::deploy::DataPlaneAt;
use innet_core::Counters;
use innet_paxos::deploy::{self as paxos_deploy, PaxosDeployment, PaxosRole, Roles};
/// [`LiveConfig`]'s two halves, declared once in the protocol crate.
pub use innet_paxos::deploy::{PaxosParams, PaxosShape};
use innet_paxos::learner::LearnerStats;
use innet_paxos::software::SoftwareNode;
use innet_paxos::{BackupConfig, BackupCoordinator, Coordinator, Learner, LearnerConfig, ProposerConfig};

use crate::auth::PeerAuth;
use crate::deploy::{host_options, switch_setup, Bound, Place};
use crate::host::{spawn_host_counted, Admission, HostOptions, NodeHandle};
use crate::switch::{spawn_switch_with_tables, SwitchNode};
use crate::Stop;

/// A live deployment's configuration: the service's shape and settings
/// ([`innet_paxos::deploy`], declared once there) and where this runtime
/// runs them.
#[derive(Clone, Debug)]
pub struct LiveConfig {
    /// Coordinator and acceptors in software switches, or as processes
    /// (the software baseline). `Xdp` is the namespace testbed's, not this
    /// runtime's.
    pub data_plane: DataPlaneAt,
    /// How many of each role. `proposers`: proposer sockets bound by the
    /// plan (members of the vote and takeover groups); without any, votes
    /// also go to each request's origin ([`LiveConfig::deployment`]).
    /// `failback` (`innet up paxos --data-plane process --dir D`): votes
    /// also go to the coordinator, and a coordinator run alone (`--node
    /// coordinator`) that restarts takes the role back from the backup
    /// ([`coordinator_epoch`]); every process of the deployment must agree.
    pub shape: PaxosShape,
    /// The settings every role's configuration derives from.
    pub params: PaxosParams,
    pub ip: IpAddr,
    /// First UDP port (consecutive ports per role), or 0 for ephemeral ports.
    pub base_port: u16,
    /// Learners run in other processes (e.g. key-value replicas): their
    /// addresses follow from `base_port` ([`LiveConfig::external_learner`])
    /// and the plan does not bind them.
    pub external_learners: bool,
    /// `--auth-key`: every datagram between the nodes carries the keys' MAC
    /// trailer and one without is refused ([`crate::auth`]); every party of
    /// a Paxos deployment is a node, so it covers every address.
    pub auth: Option<Arc<PeerAuth>>,
    /// The coordinator and acceptors that run in other processes (at the
    /// addresses `base_port` gives; [`spawn_alone`] runs one): the plan
    /// neither binds nor starts them, so each can be killed and restarted
    /// on its own.
    pub elsewhere: Vec<PaxosRole>,
    /// Persistent acceptors (`--dir`, `--fsync`): acceptor `i` keeps its
    /// promises and votes in `dir/acceptor<i>` and restarts from them
    /// ([`acceptor_store`]); `None`: in memory.
    pub acceptor_store: Option<AcceptorStore>,
}

impl Default for LiveConfig {
    fn default() -> Self {
        LiveConfig {
            data_plane: DataPlaneAt::Switch,
            shape: PaxosShape::default(),
            params: PaxosParams::default(),
            ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
            base_port: 0,
            external_learners: false,
            auth: None,
            elsewhere: vec![],
            acceptor_store: None,
        }
    }
}

impl LiveConfig {
    /// Every role's configuration (one definition for every runtime).
    pub fn roles(&self) -> Roles {
        Roles::new(self.params.clone(), &self.shape)
    }
    /// The deployment this configuration describes. Without proposers of
    /// its own, votes also go to each request's origin (the switch
    /// deployment; see the module doc).
    pub fn deployment(&self) -> PaxosDeployment {
        let origin_votes = self.shape.origin_votes || self.shape.proposers == 0;
        paxos_deploy::deployment(PaxosShape { origin_votes, ..self.shape }, Duration::ZERO)
    }
    /// Every node's address with consecutive ports from `base_port`, in
    /// the deployment's node order (coordinator, acceptors, backup,
    /// learners, proposers).
    pub fn fixed_addrs(&self) -> io::Result<Vec<SocketAddr>> {
        let n = self.deployment().nodes.len();
        let last = self.base_port as usize + n - 1;
        if self.base_port == 0 || last > u16::MAX as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "base port {} cannot hold the deployment's {n} consecutive ports (1..={} fits)",
                    self.base_port,
                    u16::MAX as usize + 1 - n
                ),
            ));
        }
        Ok((0..n).map(|i| SocketAddr::new(self.ip, self.base_port + i as u16)).collect())
    }

    /// Learner `i`'s address and options in a deployment with consecutive
    /// ports from `base_port`: a learner in a process of its own (a
    /// key-value replica).
    pub fn external_learner(&self, i: usize) -> io::Result<(SocketAddr, HostOptions)> {
        let d = self.deployment();
        let addrs = self.fixed_addrs()?;
        let n = d.with_role(|r| *r == PaxosRole::Learner { id: i as u16 });
        let &n = n.first().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("learner {i}: the deployment has {} learners", self.shape.learners),
            )
        })?;
        Ok((addrs[n], options(&d, &addrs, n)))
    }

    /// The ports (coordinator, backup) and admission rule of a proposer in
    /// a process of its own (a key-value replica's front end) in a
    /// deployment with consecutive ports from `base_port`. Its sender is
    /// not named by the deployment: its proposer ids must be of
    /// `innet_paxos::envelope::OUTSIDE_BLOCK`.
    pub fn external_proposer(&self) -> io::Result<HostOptions> {
        let mut d = self.deployment();
        let mut addrs = self.fixed_addrs()?;
        let p =
            paxos_deploy::add(&mut d, "proposer-outside", PaxosRole::Proposer { index: self.shape.proposers as u16 });
        paxos_deploy::wire_with(&mut d, true, self.shape.failback);
        addrs.push(SocketAddr::new(self.ip, 0));
        Ok(HostOptions { auth: self.auth.clone(), ..options(&d, &addrs, p) })
    }

    pub fn quorum(&self) -> usize {
        self.roles().quorum()
    }
    pub fn trim_quorum(&self) -> usize {
        self.roles().trim_quorum()
    }
    pub fn learner_config(&self, id: u16) -> LearnerConfig {
        self.roles().learner(id)
    }
    pub fn proposer_config(&self, id: u32) -> ProposerConfig {
        self.roles().proposer(id)
    }
    /// The configuration of the deployment's proposer `i`: an id of its
    /// block (the coordinators take no other from its address, see
    /// `innet_paxos::envelope`) with an incarnation drawn afresh per
    /// process: learners filter duplicates by (proposer, request) and
    /// key-value replicas remember that across restarts, so a new process
    /// must not reuse an earlier one's id (its requests would be dropped as
    /// duplicates).
    pub fn fresh_proposer_config(&self, i: usize) -> ProposerConfig {
        self.proposer_config(innet_paxos::envelope::proposer_id(i, fresh_incarnation()))
    }

    /// Acceptor `id`'s program: restored from its directory when the
    /// acceptors are persistent, else fresh in memory.
    pub fn acceptor(&self, id: u16) -> io::Result<LiveAcceptor> {
        let store = self
            .acceptor_store
            .as_ref()
            .map(|s| AcceptorStore { dir: s.dir.join(format!("acceptor{id}")), fsync: s.fsync });
        LiveAcceptor::new(self.roles().acceptor(id), store.as_ref())
    }
}

/// A proposer incarnation drawn from the clock and the process id
/// (below `innet_paxos::envelope::INCARNATIONS`).
pub fn fresh_incarnation() -> u32 {
    crate::txn::fresh_client_id_base(1) % innet_paxos::envelope::INCARNATIONS
}

/// A coordinator or acceptor: a software switch, a process, or a node
/// running in another process ([`LiveConfig::elsewhere`]).
pub enum ProgramNode<P> {
    Switch(SwitchNode<P>),
    Process(NodeHandle<()>),
    Elsewhere(SocketAddr),
}

impl<P> ProgramNode<P> {
    pub fn addr(&self) -> SocketAddr {
        match self {
            ProgramNode::Switch(s) => s.addr(),
            ProgramNode::Process(h) => h.addr(),
            ProgramNode::Elsewhere(a) => *a,
        }
    }
    /// Stops the node (its thread ends and its socket closes: a crash, as
    /// far as its peers can tell); one running elsewhere is not ours to stop.
    pub fn stop(&self) {
        match self {
            ProgramNode::Switch(s) => s.stop(),
            ProgramNode::Process(h) => h.stop(),
            ProgramNode::Elsewhere(_) => {}
        }
    }
}

/// Failback: a coordinator that keeps its epochs (`--dir`) reads them
/// before it binds. `None`: no failback, or its first start (the ordinary
/// data-plane coordinator, round 1); else a restart: the epoch file and
/// the first epoch of the restarted coordinator, which takes the role with
/// phase 1 past the log's position (so a whole deployment started again
/// on its directories, replicas included, goes on numbering instances
/// where the log is, never from 0 again).
fn coordinator_restart(config: &LiveConfig) -> io::Result<Option<(coordinator_epoch::EpochFile, u8)>> {
    if !config.shape.failback {
        return Ok(None);
    }
    let Some(store) = &config.acceptor_store else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "failback needs --dir (the coordinator's epochs)"));
    };
    let file = coordinator_epoch::EpochFile::start(&store.dir)?;
    match (file.is_restart(), file.first_epoch()) {
        (false, _) => Ok(None),
        (true, Some(first_epoch)) => Ok(Some((file, first_epoch))),
        (true, None) => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the coordinator's rounds are used up (epoch 255 stored): it cannot take the role back; \
             leave it down (the backup coordinates) or start a new deployment",
        )),
    }
}

/// Runs the deployment's coordinator or acceptor `role` alone, at the
/// address `config.base_port` gives it, for a deployment whose other nodes
/// run in another process (there listed in [`LiveConfig::elsewhere`]).
pub fn spawn_alone(config: &LiveConfig, role: PaxosRole, stop: &Stop) -> io::Result<AloneNode> {
    let d = config.deployment();
    let addrs = config.fixed_addrs()?;
    let roles = config.roles();
    let &n = d.with_role(|r| *r == role).first().ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, format!("the deployment has no {}", role_label(role)))
    })?;
    if !matches!(role, PaxosRole::Coordinator | PaxosRole::Acceptor { .. }) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("only the coordinator and acceptors run alone, not the {}", role_label(role)),
        ));
    }
    // Failback: a coordinator with a directory reads its epochs before it
    // binds; every start after the first is a restarted coordinator.
    let mut restarted = match role {
        PaxosRole::Coordinator => coordinator_restart(config)?,
        _ => None,
    };
    let places: Vec<Place> =
        addrs.iter().enumerate().map(|(i, &a)| if i == n { Place::here(a) } else { Place::Elsewhere(a) }).collect();
    let auth = config.auth.clone();
    let mut started = crate::deploy::instantiate(&d, config.data_plane, &places, stop, |slot| {
        let (d, at, addrs, socket, stop) = (slot.deployment, slot.at, slot.addrs, slot.socket, slot.stop);
        Ok::<_, io::Error>(match (role, restarted.take()) {
            (PaxosRole::Coordinator, Some((file, first_epoch))) => {
                let machine = BackupCoordinator::new(roles.restarted_coordinator(first_epoch));
                let o = HostOptions { auth: auth.clone(), ..options(d, addrs, n) };
                AloneNode::Restarted(spawn_restarted_coordinator("coordinator", socket, o, machine, file, stop, |c| {
                    c.epochs()
                })?)
            }
            (PaxosRole::Coordinator, None) => AloneNode::Coordinator(spawn_program(
                d,
                at,
                addrs,
                n,
                socket,
                Coordinator::new(roles.coordinator()),
                auth.clone(),
                stop,
            )?),
            (PaxosRole::Acceptor { id }, _) => {
                AloneNode::Acceptor(spawn_program(d, at, addrs, n, socket, config.acceptor(id)?, auth.clone(), stop)?)
            }
            _ => unreachable!("refused above"),
        })
    })?;
    Ok(started.nodes.pop().expect("the one node placed here").1)
}

/// A node [`spawn_alone`] started.
pub enum AloneNode {
    Coordinator(ProgramNode<Coordinator>),
    /// A coordinator that restarted (failback): the backup's state machine
    /// under the coordinator's issuer.
    Restarted(NodeHandle<coordinator_epoch::Epochs>),
    Acceptor(ProgramNode<LiveAcceptor>),
}

impl AloneNode {
    pub fn addr(&self) -> SocketAddr {
        match self {
            AloneNode::Coordinator(n) => n.addr(),
            AloneNode::Restarted(n) => n.addr(),
            AloneNode::Acceptor(n) => n.addr(),
        }
    }
}

/// `coordinator`, `acceptor2`, ...: how the command line names a node.
pub fn role_label(role: PaxosRole) -> String {
    match role {
        PaxosRole::Acceptor { id } => format!("acceptor{id}"),
        PaxosRole::Learner { id } => format!("learner{id}"),
        PaxosRole::Proposer { index } => format!("proposer{index}"),
        r => r.name().to_string(),
    }
}

/// The coordinator or an acceptor by its [`role_label`].
pub fn parse_program_role(s: &str) -> Result<PaxosRole, String> {
    let bad = || format!("`{s}` is not a data-plane node: say coordinator or acceptorN (acceptor0, acceptor1, ...)");
    match s {
        "coordinator" => Ok(PaxosRole::Coordinator),
        _ => s
            .strip_prefix("acceptor")
            .and_then(|i| i.parse::<u16>().ok())
            .map(|id| PaxosRole::Acceptor { id })
            .ok_or_else(bad),
    }
}

/// Every socket of a deployment, bound, and every address.
pub struct Plan {
    pub config: LiveConfig,
    pub deployment: PaxosDeployment,
    /// Every node's address, in deployment order.
    pub addrs: Vec<SocketAddr>,
    /// The coordinator's, acceptors' and backup's sockets, bound (the
    /// learners' and proposers' are taken out), until [`Plan::spawn_core`].
    core: Option<Bound>,
    pub learner_sockets: Vec<Option<UdpSocket>>,
    pub proposer_sockets: Vec<Option<UdpSocket>>,
    pub coordinator: SocketAddr,
    pub acceptors: Vec<SocketAddr>,
    pub backup: SocketAddr,
    pub learners: Vec<SocketAddr>,
    pub proposers: Vec<SocketAddr>,
}

/// The running coordinator, acceptors and backup.
pub struct Core {
    pub coordinator: ProgramNode<Coordinator>,
    pub acceptors: Vec<ProgramNode<LiveAcceptor>>,
    pub backup: NodeHandle<BackupCoordinator>,
}

impl Plan {
    /// Binds every socket of `config`'s deployment (learners' only if they
    /// run here), in node order from `base_port` (or on ephemeral ports).
    pub fn bind(config: &LiveConfig) -> io::Result<Plan> {
        let deployment = config.deployment();
        if config.external_learners && config.base_port == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "external learners need a base port"));
        }
        if !config.elsewhere.is_empty() && config.base_port == 0 {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "nodes in other processes need a base port"));
        }
        for r in &config.elsewhere {
            if !matches!(r, PaxosRole::Coordinator | PaxosRole::Acceptor { .. })
                || deployment.with_role(|x| x == r).is_empty()
            {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "{} cannot run elsewhere: only the deployment's coordinator and acceptors can",
                        role_label(*r)
                    ),
                ));
            }
        }
        let wanted = match config.base_port {
            0 => vec![SocketAddr::new(config.ip, 0); deployment.nodes.len()],
            _ => config.fixed_addrs()?,
        };
        let places: Vec<Place> = deployment
            .nodes
            .iter()
            .zip(wanted)
            .map(|(n, want)| {
                let external = config.external_learners && matches!(n.role, PaxosRole::Learner { .. });
                if external || config.elsewhere.contains(&n.role) {
                    Place::Elsewhere(want)
                } else {
                    Place::here(want)
                }
            })
            .collect();
        let mut bound = crate::deploy::bind(&deployment, &places)?;
        let addrs = bound.addrs.clone();
        let of = |f: fn(&PaxosRole) -> bool| deployment.with_role(f);
        let pick = |v: Vec<usize>| v.into_iter().map(|i| addrs[i]).collect::<Vec<_>>();
        let learner_ix = of(|r| matches!(r, PaxosRole::Learner { .. }));
        let proposer_ix = of(|r| matches!(r, PaxosRole::Proposer { .. }));
        let mut take = |v: &[usize]| v.iter().map(|&i| bound.take(i)).collect::<Vec<_>>();
        let learner_sockets = take(&learner_ix);
        let proposer_sockets = take(&proposer_ix);
        Ok(Plan {
            config: config.clone(),
            coordinator: pick(of(|r| *r == PaxosRole::Coordinator))[0],
            acceptors: pick(of(|r| matches!(r, PaxosRole::Acceptor { .. }))),
            backup: pick(of(|r| *r == PaxosRole::Backup))[0],
            learners: pick(learner_ix),
            proposers: pick(proposer_ix),
            learner_sockets,
            proposer_sockets,
            core: Some(bound),
            addrs,
            deployment,
        })
    }

    fn node(&self, f: impl Fn(&PaxosRole) -> bool) -> usize {
        self.deployment.with_role(f)[0]
    }

    /// Learner `i`'s ports and groups.
    pub fn learner_options(&self, i: usize) -> HostOptions {
        let n = self.node(|r| *r == PaxosRole::Learner { id: i as u16 });
        HostOptions { auth: self.config.auth.clone(), ..options(&self.deployment, &self.addrs, n) }
    }

    /// A proposer's ports: the coordinator and the backup.
    pub fn proposer_options(&self) -> HostOptions {
        let mut d = self.deployment.clone();
        let mut addrs = self.addrs.clone();
        if self.proposers.is_empty() {
            // A proposer of another process: the same ports as one of ours.
            paxos_deploy::add(&mut d, "proposer", PaxosRole::Proposer { index: 0 });
            paxos_deploy::wire_with(&mut d, true, self.config.shape.failback);
            addrs.push(SocketAddr::new(self.config.ip, 0));
        }
        let p = d.with_role(|r| matches!(r, PaxosRole::Proposer { .. }))[0];
        HostOptions { auth: self.config.auth.clone(), ..options(&d, &addrs, p) }
    }

    /// Takes learner `i`'s socket (once).
    pub fn take_learner_socket(&mut self, i: usize) -> UdpSocket {
        self.learner_sockets[i].take().expect("learner socket taken once")
    }

    /// Takes proposer `i`'s socket (once).
    pub fn take_proposer_socket(&mut self, i: usize) -> UdpSocket {
        self.proposer_sockets[i].take().expect("proposer socket taken once")
    }

    /// Starts the coordinator, the acceptors and the backup coordinator
    /// (the second step of [`crate::deploy::instantiate`]).
    pub fn spawn_core(&mut self, stop: &Stop) -> io::Result<Core> {
        let bound = self.core.take().expect("core spawned once");
        if self.config.data_plane == DataPlaneAt::Xdp {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the XDP data plane runs on the namespace testbed (innet testbed up paxos), not on loopback",
            ));
        }
        let (config, roles) = (&self.config, self.config.roles());
        // Failback: the coordinator run here, started again on its
        // directory, takes the role back where the log is.
        let mut restarted = match config.elsewhere.contains(&PaxosRole::Coordinator) {
            true => None,
            false => coordinator_restart(config)?,
        };
        let started = bound
            .start(&self.deployment, config.data_plane, stop, |slot| {
                start_core_node(config, &roles, slot, restarted.take())
            })?
            .into_iter()
            .collect::<std::collections::BTreeMap<_, _>>();
        Ok(self.core_of(started))
    }

    /// The core from the nodes [`Plan::spawn_core`] started; nodes
    /// elsewhere were not started here: they keep their address.
    fn core_of(&self, mut started: std::collections::BTreeMap<innet_core::deploy::NodeIx, CoreNode>) -> Core {
        let d = &self.deployment;
        let mut coordinator = None;
        let mut acceptors = vec![];
        let mut backup = None;
        for n in d.with_role(|r| matches!(r, PaxosRole::Coordinator | PaxosRole::Acceptor { .. } | PaxosRole::Backup)) {
            match (d.nodes[n].role, started.remove(&n)) {
                (_, Some(CoreNode::Coordinator(c))) => coordinator = Some(c),
                (_, Some(CoreNode::Acceptor(a))) => acceptors.push(a),
                (_, Some(CoreNode::Backup(b))) => backup = Some(b),
                (PaxosRole::Coordinator, None) => coordinator = Some(ProgramNode::Elsewhere(self.addrs[n])),
                (PaxosRole::Acceptor { .. }, None) => acceptors.push(ProgramNode::Elsewhere(self.addrs[n])),
                (r, None) => unreachable!("the plan binds the {}", r.name()),
            }
        }
        debug_assert!(started.is_empty(), "every started node placed in the core");
        Core { coordinator: coordinator.expect("one coordinator"), acceptors, backup: backup.expect("one backup") }
    }
}

/// Starts the core node in `slot`: the coordinator (a restarted one if
/// `restarted`, failback), an acceptor or the backup.
fn start_core_node(
    config: &LiveConfig,
    roles: &Roles,
    slot: crate::deploy::Slot<'_, PaxosRole>,
    restarted: Option<(coordinator_epoch::EpochFile, u8)>,
) -> io::Result<CoreNode> {
    let (d, at, addrs, n) = (slot.deployment, slot.at, slot.addrs, slot.ix);
    let auth = config.auth.clone();
    Ok(match (d.nodes[n].role, restarted) {
        (PaxosRole::Coordinator, Some((file, first_epoch))) => {
            let machine = BackupCoordinator::new(roles.restarted_coordinator(first_epoch));
            let o = HostOptions { auth, ..options(d, addrs, n) };
            let name = d.nodes[n].name.clone();
            let h = spawn_restarted_coordinator(&name, slot.socket, o, machine, file, slot.stop, |_| ())?;
            CoreNode::Coordinator(ProgramNode::Process(h))
        }
        (PaxosRole::Coordinator, None) => CoreNode::Coordinator(spawn_program(
            d,
            at,
            addrs,
            n,
            slot.socket,
            Coordinator::new(roles.coordinator()),
            auth,
            slot.stop,
        )?),
        (PaxosRole::Acceptor { id }, _) => {
            CoreNode::Acceptor(spawn_program(d, at, addrs, n, slot.socket, config.acceptor(id)?, auth, slot.stop)?)
        }
        (PaxosRole::Backup, _) => {
            let o = HostOptions { auth, ..options(d, addrs, n) };
            let name = d.nodes[n].name.clone();
            CoreNode::Backup(spawn_backup(&name, slot.socket, o, roles.backup(), slot.stop)?)
        }
        (r, _) => unreachable!("the plan hands out the {}'s socket", r.name()),
    })
}

/// A node [`Plan::spawn_core`] started.
enum CoreNode {
    Coordinator(ProgramNode<Coordinator>),
    Acceptor(ProgramNode<LiveAcceptor>),
    Backup(NodeHandle<BackupCoordinator>),
}

/// Starts the coordinator or acceptor at node `n` of `d` (every node's
/// address in `addrs`): in a software switch, or (`Process`) as a process
/// running the same program; `auth` seals and checks its datagrams.
#[allow(clippy::too_many_arguments)]
pub fn spawn_program<P>(
    d: &PaxosDeployment,
    at: DataPlaneAt,
    addrs: &[SocketAddr],
    n: usize,
    socket: UdpSocket,
    program: P,
    auth: Option<Arc<PeerAuth>>,
    stop: &Stop,
) -> io::Result<ProgramNode<P>>
where
    P: innet_core::DataPlane + innet_core::Counters + Send + 'static,
{
    let name = d.nodes[n].name.clone();
    Ok(match at {
        DataPlaneAt::Process => {
            let o = HostOptions { auth, ..options(d, addrs, n) };
            let (make, own) = (move || SoftwareNode::new(program), |n: &SoftwareNode<P>| n.program.counters());
            ProgramNode::Process(spawn_host_counted(&name, socket, o, stop, make, own, |_, _| ())?)
        }
        DataPlaneAt::Switch | DataPlaneAt::Xdp => {
            let (mut o, t) = switch_setup(d, DataPlaneAt::Switch, addrs, n, Duration::ZERO);
            o.admit = Some(admission(d, addrs, n));
            o.auth = auth;
            ProgramNode::Switch(spawn_switch_with_tables(&name, program, socket, o, t, stop)?)
        }
    })
}

/// Starts the backup coordinator; it publishes `instances_started`,
/// `values_repeated`, `took_over` (1 once it has taken over) and the
/// REQUESTs it dropped (before the takeover, or with its queue full).
pub fn spawn_backup(
    name: &str,
    socket: UdpSocket,
    opts: HostOptions,
    config: BackupConfig,
    stop: &Stop,
) -> io::Result<NodeHandle<BackupCoordinator>> {
    let own = |b: &BackupCoordinator| {
        vec![
            ("instances_started", b.instances_started),
            ("values_repeated", b.values_repeated),
            ("requests_before_takeover", b.requests_before_takeover),
            ("requests_dropped_full", b.requests_dropped_full),
            ("took_over", u64::from(b.active_since().is_some())),
            ("slots_below_checkpoints", b.slots_below_checkpoints),
            ("epochs_exhausted", b.epochs_exhausted),
            ("takeovers", b.takeovers),
            ("step_downs", b.step_downs),
            ("round", u64::from(b.round())),
            ("heard_round", u64::from(b.heard())),
        ]
    };
    spawn_host_counted(name, socket, opts, stop, move || BackupCoordinator::new(config), own, |b, _| b)
}

/// Starts a restarted coordinator (failback); it publishes its round,
/// epochs, takeovers and the instances it started, and hands back `result`
/// of the machine when it stops.
pub fn spawn_restarted_coordinator<R: Send + 'static>(
    name: &str,
    socket: UdpSocket,
    opts: HostOptions,
    machine: BackupCoordinator,
    file: coordinator_epoch::EpochFile,
    stop: &Stop,
    result: fn(&coordinator_epoch::RestartedCoordinator) -> R,
) -> io::Result<NodeHandle<R>> {
    use coordinator_epoch::RestartedCoordinator;
    let own = |c: &RestartedCoordinator| {
        let m = &c.machine;
        vec![
            ("round", u64::from(m.round())),
            ("epoch_high", u64::from(c.epochs().epoch_high)),
            ("starts", u64::from(c.epochs().starts)),
            ("takeovers", m.takeovers),
            ("instances_started", m.instances_started),
            ("values_repeated", m.values_repeated),
            ("slots_below_checkpoints", m.slots_below_checkpoints),
            ("epochs_exhausted", m.epochs_exhausted),
            ("epoch_store_errors", c.epoch_store_errors),
        ]
    };
    let make = move || RestartedCoordinator::new(machine, file);
    spawn_host_counted(name, socket, opts, stop, make, own, move |c, _| result(&c))
}

/// Starts a learner; it publishes its [`LearnerStats`] as it runs and
/// returns them when it stops.
pub fn spawn_learner(
    name: &str,
    socket: UdpSocket,
    opts: HostOptions,
    config: LearnerConfig,
    stop: &Stop,
) -> io::Result<NodeHandle<LearnerStats>> {
    spawn_host_counted(name, socket, opts, stop, move || Learner::new(config), |l| l.stats.counters(), |l, _| l.stats)
}

/// Node `n`'s admission rule: each message type only from the peers the
/// deployment says may send it, by source address and port
/// ([`innet_paxos::trust`]).
pub fn admission(d: &PaxosDeployment, addrs: &[SocketAddr], n: usize) -> Admission {
    let senders = innet_paxos::trust::senders(d, addrs, n);
    Admission::new(move |from, bytes| senders.check(&from, bytes).map_err(|r| r.name()))
}

/// Node `n`'s ports, groups and admission rule, for an end host (a
/// learner, proposer or the backup, or a coordinator or acceptor running
/// as a process).
pub fn options(d: &PaxosDeployment, addrs: &[SocketAddr], n: usize) -> HostOptions {
    HostOptions { admit: Some(admission(d, addrs, n)), ..host_options(d, addrs, n) }
}

/// [`admission`] for a node whose data-plane peers (coordinator,
/// acceptors) are known by IP address only: on the XDP testbed the BPF
/// programs rewrite source addresses but keep the source port of the
/// packet they rewrote, so their packets are recognised by address; end
/// hosts still by address and port.
pub fn admission_programs_by_ip(d: &PaxosDeployment, addrs: &[SocketAddr], n: usize) -> Admission {
    use innet_core::deploy::Shape;
    let exact = innet_paxos::trust::senders(d, addrs, n);
    let ips: Vec<IpAddr> = addrs.iter().map(|a| a.ip()).collect();
    let mut by_ip = innet_paxos::trust::senders(d, &ips, n);
    by_ip.by_addr.retain(|ip, _| {
        d.nodes.iter().zip(&ips).any(|(node, a)| a == ip && node.shape == Shape::Program)
            && !d.nodes.iter().zip(&ips).any(|(node, a)| a == ip && node.shape == Shape::Host)
    });
    Admission::new(move |from, bytes| {
        let r =
            if exact.by_addr.contains_key(&from) { exact.check(&from, bytes) } else { by_ip.check(&from.ip(), bytes) };
        r.map_err(|r| r.name())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The configuration's shape is the deployment's, with origin votes
    /// where no proposer is bound here, and the roles read failback from
    /// it (one setting: `PaxosShape::failback`).
    #[test]
    fn the_deployment_and_roles_follow_the_shape() {
        let plain = LiveConfig::default();
        assert_eq!(PaxosShape::of(&plain.deployment()), plain.shape);
        assert!(!plain.roles().backup().failback);
        let shape = PaxosShape { proposers: 0, failback: true, ..PaxosShape::default() };
        let c = LiveConfig { shape, ..LiveConfig::default() };
        assert_eq!(PaxosShape::of(&c.deployment()), PaxosShape { origin_votes: true, ..shape });
        assert!(c.roles().backup().failback, "a failback deployment's backup tells the coordinator its round");
    }
}
