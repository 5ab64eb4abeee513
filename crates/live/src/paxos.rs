//! The consensus service (CAANS) on the live runtime: coordinator and
//! acceptors as user-space software switches (`software = false`, the
//! data-plane deployment) or as ordinary UDP processes running the same
//! programs ([`SoftwareNode`], the libpaxos-style baseline), the software
//! backup coordinator, and the wiring (groups, ports) of learners and
//! proposers, all on loopback.
//!
//! [`Plan::bind`] binds every socket first, so each role's tables can name
//! every address; [`Plan::spawn_core`] starts the coordinator, acceptors and
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

pub mod app;

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::time::Duration;

use innet_core::Member;
use innet_paxos::acceptor::{Acceptor, AcceptorConfig};
use innet_paxos::software::SoftwareNode;
use innet_paxos::{
    BackupConfig, BackupCoordinator, Coordinator, CoordinatorConfig, LearnerConfig, ProposerConfig, GROUP_ACCEPTORS,
    GROUP_LEARNERS, GROUP_PEERS, GROUP_PROPOSERS,
};

use crate::host::{spawn_host, HostOptions, NodeHandle};
use crate::switch::{spawn_switch_with_tables, SwitchNode, SwitchOptions, SwitchTables};
use crate::txn::bind;
use crate::Stop;

/// A live deployment's configuration.
#[derive(Clone, Debug)]
pub struct LiveConfig {
    /// Coordinator and acceptors as processes (true) or software switches.
    pub software: bool,
    pub acceptors: usize,
    pub learners: usize,
    /// Proposer sockets bound by the plan (members of the vote and
    /// takeover groups).
    pub proposers: usize,
    pub slots: usize,
    /// 0: a majority of the learners.
    pub trim_quorum: usize,
    pub ordered: bool,
    pub proposer_timeout: Duration,
    pub gap_timeout: Duration,
    pub heartbeat: Duration,
    pub ip: IpAddr,
    /// First UDP port (consecutive ports per role), or 0 for ephemeral ports.
    pub base_port: u16,
    /// Learners run in other processes (e.g. key-value replicas): their
    /// addresses follow from `base_port` ([`learner_addr`]) and the plan
    /// does not bind them.
    pub external_learners: bool,
}

/// The address of learner `i` in a deployment with consecutive ports from
/// `base_port`: coordinator, acceptors, backup, learners, proposers.
pub fn learner_addr(ip: IpAddr, base_port: u16, acceptors: usize, i: usize) -> SocketAddr {
    SocketAddr::new(ip, base_port + 2 + acceptors as u16 + i as u16)
}

impl Default for LiveConfig {
    fn default() -> Self {
        LiveConfig {
            software: false,
            acceptors: 3,
            learners: 2,
            proposers: 1,
            slots: innet_paxos::acceptor::ACCEPTOR_SLOTS_DEFAULT,
            trim_quorum: 0,
            ordered: true,
            proposer_timeout: Duration::from_millis(50),
            gap_timeout: Duration::from_millis(20),
            // 3 missed heartbeats: 75 ms, tolerant of a loaded 2-core machine.
            heartbeat: Duration::from_millis(25),
            ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
            base_port: 0,
            external_learners: false,
        }
    }
}

impl LiveConfig {
    pub fn quorum(&self) -> usize {
        innet_paxos::majority(self.acceptors)
    }
    pub fn trim_quorum(&self) -> usize {
        innet_paxos::trim_quorum(self.trim_quorum, self.learners)
    }
    pub fn coordinator_config(&self) -> CoordinatorConfig {
        CoordinatorConfig {
            slots: self.slots,
            trim_quorum: self.trim_quorum(),
            ..CoordinatorConfig::new(self.learners)
        }
    }
    pub fn acceptor_config(&self, id: u16) -> AcceptorConfig {
        AcceptorConfig { slots: self.slots, trim_quorum: self.trim_quorum(), ..AcceptorConfig::new(id, self.learners) }
    }
    pub fn backup_config(&self) -> BackupConfig {
        BackupConfig {
            heartbeat_interval: self.heartbeat,
            timeout: self.gap_timeout,
            ..BackupConfig::new(self.quorum())
        }
    }
    pub fn learner_config(&self, id: u16) -> LearnerConfig {
        LearnerConfig {
            ordered: self.ordered,
            gap_timeout: self.gap_timeout,
            recover_timeout: self.gap_timeout,
            trim_every: (self.slots as u32 / 8).clamp(1, 64),
            trim_interval: self.gap_timeout,
            ..LearnerConfig::new(id, self.quorum())
        }
    }
    pub fn proposer_config(&self, id: u32) -> ProposerConfig {
        ProposerConfig { id, quorum: self.quorum(), timeout: self.proposer_timeout }
    }
    /// The configuration of proposer `i` of this process, with an id drawn
    /// afresh per process: learners filter duplicates by (proposer, request)
    /// and key-value replicas remember that across restarts, so a new
    /// process must not reuse an earlier one's id (its requests would be
    /// dropped as duplicates).
    pub fn fresh_proposer_config(&self, i: usize) -> ProposerConfig {
        self.proposer_config(crate::txn::fresh_client_id_base(self.proposers as u32 + 1) + i as u32)
    }
}

/// A coordinator or acceptor: a software switch or a process.
pub enum ProgramNode<P> {
    Switch(SwitchNode<P>),
    Process(NodeHandle<()>),
}

impl<P> ProgramNode<P> {
    pub fn addr(&self) -> SocketAddr {
        match self {
            ProgramNode::Switch(s) => s.addr(),
            ProgramNode::Process(h) => h.addr(),
        }
    }
    /// Stops the node (its thread ends and its socket closes: a crash, as
    /// far as its peers can tell).
    pub fn stop(&self) {
        match self {
            ProgramNode::Switch(s) => s.stop(),
            ProgramNode::Process(h) => h.stop(),
        }
    }
}

/// Every socket of a deployment, bound, and every address.
pub struct Plan {
    pub config: LiveConfig,
    sockets: Option<(UdpSocket, Vec<UdpSocket>, UdpSocket)>,
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
    pub acceptors: Vec<ProgramNode<Acceptor>>,
    pub backup: NodeHandle<BackupCoordinator>,
}

impl Plan {
    pub fn bind(config: &LiveConfig) -> io::Result<Plan> {
        let mut port = config.base_port;
        let mut next = || {
            let p = port;
            if port != 0 {
                port += 1;
            }
            bind(SocketAddr::new(config.ip, p))
        };
        let coordinator = next()?;
        let acceptors: Vec<UdpSocket> = (0..config.acceptors).map(|_| next()).collect::<io::Result<_>>()?;
        let backup = next()?;
        let (learners, learner_addrs) = if config.external_learners {
            if config.base_port == 0 {
                return Err(io::Error::new(io::ErrorKind::InvalidInput, "external learners need a base port"));
            }
            let addrs = (0..config.learners).map(|i| learner_addr(config.ip, config.base_port, config.acceptors, i));
            port += config.learners as u16;
            (vec![], addrs.collect())
        } else {
            let v: Vec<UdpSocket> = (0..config.learners).map(|_| next()).collect::<io::Result<_>>()?;
            let a = v.iter().map(|s| s.local_addr()).collect::<io::Result<Vec<_>>>()?;
            (v, a)
        };
        let mut next = || {
            let p = port;
            if port != 0 {
                port += 1;
            }
            bind(SocketAddr::new(config.ip, p))
        };
        let proposers: Vec<UdpSocket> = (0..config.proposers).map(|_| next()).collect::<io::Result<_>>()?;
        let addrs = |v: &[UdpSocket]| v.iter().map(|s| s.local_addr()).collect::<io::Result<Vec<_>>>();
        Ok(Plan {
            config: config.clone(),
            coordinator: coordinator.local_addr()?,
            acceptors: addrs(&acceptors)?,
            backup: backup.local_addr()?,
            learners: learner_addrs,
            proposers: addrs(&proposers)?,
            sockets: Some((coordinator, acceptors, backup)),
            learner_sockets: learners.into_iter().map(Some).collect(),
            proposer_sockets: proposers.into_iter().map(Some).collect(),
        })
    }

    /// Learner `i`'s ports and groups.
    pub fn learner_options(&self, i: usize) -> HostOptions {
        let mut o = HostOptions { ports: vec![self.coordinator], ..HostOptions::default() };
        o.groups.insert(GROUP_ACCEPTORS, self.acceptors.clone());
        let peers = self.learners.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, a)| *a).collect();
        o.groups.insert(GROUP_PEERS, peers);
        o
    }

    /// A proposer's ports: the coordinator and the backup.
    pub fn proposer_options(&self) -> HostOptions {
        HostOptions { ports: vec![self.coordinator, self.backup], ..HostOptions::default() }
    }

    /// Takes learner `i`'s socket (once).
    pub fn take_learner_socket(&mut self, i: usize) -> UdpSocket {
        self.learner_sockets[i].take().expect("learner socket taken once")
    }

    /// Takes proposer `i`'s socket (once).
    pub fn take_proposer_socket(&mut self, i: usize) -> UdpSocket {
        self.proposer_sockets[i].take().expect("proposer socket taken once")
    }

    /// Starts the coordinator, the acceptors and the backup coordinator.
    pub fn spawn_core(&mut self, stop: &Stop) -> io::Result<Core> {
        let (coord_socket, acceptor_sockets, backup_socket) = self.sockets.take().expect("core spawned once");
        let cfg = &self.config;
        let coord_cfg = CoordinatorConfig {
            slots: cfg.slots,
            trim_quorum: cfg.trim_quorum(),
            ..CoordinatorConfig::new(cfg.learners)
        };
        let mut voters: Vec<SocketAddr> = self.learners.clone();
        voters.push(self.backup);
        // Nothing is ever sent upstream; the address only classifies senders.
        let no_upstream = SocketAddr::new(cfg.ip, 0);
        let coordinator = if cfg.software {
            let mut o = HostOptions::default();
            o.groups.insert(GROUP_ACCEPTORS, self.acceptors.clone());
            let c = Coordinator::new(coord_cfg);
            ProgramNode::Process(spawn_host(
                "coordinator",
                coord_socket,
                o,
                stop,
                move || SoftwareNode::new(c),
                |_, _| (),
            )?)
        } else {
            let mut t = SwitchTables::default();
            t.groups.insert(GROUP_ACCEPTORS, self.acceptors.iter().map(|a| Member::Node(*a)).collect());
            t.switch_peers = self.acceptors.iter().copied().collect();
            let c = Coordinator::new(coord_cfg);
            ProgramNode::Switch(spawn_switch_with_tables(
                "coordinator",
                c,
                coord_socket,
                SwitchOptions::new(no_upstream),
                t,
                stop,
            )?)
        };
        let mut acceptors = vec![];
        for (i, socket) in acceptor_sockets.into_iter().enumerate() {
            let a = Acceptor::new(cfg.acceptor_config(i as u16));
            let name = format!("acceptor{i}");
            acceptors.push(if cfg.software {
                let mut o = HostOptions::default();
                let mut members = voters.clone();
                members.extend_from_slice(&self.proposers);
                o.groups.insert(GROUP_LEARNERS, members);
                ProgramNode::Process(spawn_host(&name, socket, o, stop, move || SoftwareNode::new(a), |_, _| ())?)
            } else {
                let mut t = SwitchTables::default();
                let mut members: Vec<Member<SocketAddr>> =
                    voters.iter().chain(&self.proposers).map(|a| Member::Node(*a)).collect();
                if self.proposers.is_empty() {
                    // Proposers in other processes: votes go back to the origin.
                    members.push(Member::Origin);
                }
                t.groups.insert(GROUP_LEARNERS, members);
                t.switch_peers.insert(self.coordinator);
                ProgramNode::Switch(spawn_switch_with_tables(
                    &name,
                    a,
                    socket,
                    SwitchOptions::new(no_upstream),
                    t,
                    stop,
                )?)
            });
        }
        let mut o = HostOptions { ports: vec![self.coordinator], ..HostOptions::default() };
        o.groups.insert(GROUP_ACCEPTORS, self.acceptors.clone());
        o.groups.insert(GROUP_PROPOSERS, self.proposers.clone());
        let bcfg = BackupConfig {
            heartbeat_interval: cfg.heartbeat,
            timeout: cfg.gap_timeout,
            ..BackupConfig::new(cfg.quorum())
        };
        let backup = spawn_host("backup", backup_socket, o, stop, move || BackupCoordinator::new(bcfg), |b, _| b)?;
        Ok(Core { coordinator, acceptors, backup })
    }
}
