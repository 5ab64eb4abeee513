//! Starting a topology file's nodes on this machine: all of them in one
//! process, or (`--only NAME`) one node or one machine's nodes, the rest
//! running elsewhere at the addresses the file gives.
//!
//! The file format and its checks are `innet_topology`'s; which tables each
//! node gets is the service's description's ([`crate::deploy`] turns it into
//! addresses). This module places every node (here, or elsewhere at its
//! fixed address) and starts the local ones through
//! [`crate::deploy::instantiate`]'s two steps: the stores, switches, Paxos
//! roles, chain switches (each with its management agent) and the chain
//! control plane. Nodes that
//! generate load (transaction clients, Paxos proposers, chain clients) are
//! left to the caller, with their sockets bound: what load they run is an
//! experiment's choice ([`crate::up`]).

use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use innet_chain::control::ChainControl;
use innet_chain::deploy::ChainRole;
use innet_chain::node::ChainNode;
use innet_core::deploy::{DataPlaneAt, Deployment, NodeIx};
use innet_paxos::acceptor::Acceptor;
use innet_paxos::deploy::{PaxosRole, Roles};
use innet_paxos::learner::LearnerStats;
use innet_paxos::{BackupCoordinator, Coordinator};
use innet_topology::{ChainTopology, PaxosTopology, Service};
use innet_txn::deploy::TxnRole;
use innet_txn::TxnSwitch;

pub use innet_topology::{Placement, Topology, TopologyError};

use crate::auth::PeerAuth;
use crate::chain::manage::{self, Agent, AgentStats, RemoteNodes, ViewStats};
use crate::chain::{control_step, fresh_node, spawn_chain_switch, ChainView};
use crate::deploy::{Place, Slot};
use crate::host::{HostOptions, NodeHandle};
use crate::paxos::{spawn_program, ProgramNode};
use crate::switch::SwitchNode;
use crate::txn::{bind, start_server, ServerSetup, StoreData, StoreNode, TxnServer};
use crate::{clock, Stop};

/// How long a chain control plane keeps sending its first layout to nodes
/// that have not taken it before it starts judging them.
pub const STARTUP_APPLY: Duration = Duration::from_secs(2);

/// Resolves HOST:PORT (names allowed) to one socket address.
pub fn resolve(s: &str) -> anyhow::Result<SocketAddr> {
    if let Ok(a) = s.parse() {
        return Ok(a);
    }
    let mut it = s
        .to_socket_addrs()
        .map_err(|e| anyhow!("'{s}' is not a usable address ({e}); expected HOST:PORT, e.g. 127.0.0.1:9000"))?;
    it.next().ok_or_else(|| anyhow!("'{s}' resolves to no address; expected HOST:PORT, e.g. 127.0.0.1:9000"))
}

/// A node started here.
pub enum RunningNode {
    Store(StoreNode),
    TxnSwitch(SwitchNode<TxnSwitch>),
    Coordinator(ProgramNode<Coordinator>),
    Acceptor(ProgramNode<Acceptor>),
    Backup(NodeHandle<BackupCoordinator>),
    Learner(NodeHandle<LearnerStats>),
    ChainSwitch { switch: SwitchNode<ChainNode>, agent: JoinHandle<std::io::Result<AgentStats>> },
    ChainControl(JoinHandle<ControlReport>),
}

/// What a chain control plane leaves when it stops: its state (log,
/// stats) and what its VIEW service counted.
pub struct ControlReport {
    pub control: ChainControl,
    pub views: ViewStats,
}

impl RunningNode {
    /// Whether the node has stopped on its own (a failure).
    pub fn is_finished(&self) -> bool {
        match self {
            RunningNode::Store(n) => n.is_finished(),
            RunningNode::TxnSwitch(n) => n.is_finished(),
            RunningNode::Coordinator(ProgramNode::Switch(n)) => n.is_finished(),
            RunningNode::Acceptor(ProgramNode::Switch(n)) => n.is_finished(),
            RunningNode::Coordinator(ProgramNode::Process(n)) | RunningNode::Acceptor(ProgramNode::Process(n)) => {
                n.is_finished()
            }
            RunningNode::Coordinator(ProgramNode::Elsewhere(_)) | RunningNode::Acceptor(ProgramNode::Elsewhere(_)) => {
                false
            }
            RunningNode::Backup(n) => n.is_finished(),
            RunningNode::Learner(n) => n.is_finished(),
            RunningNode::ChainSwitch { switch, .. } => switch.is_finished(),
            RunningNode::ChainControl(t) => t.is_finished(),
        }
    }
}

/// The nodes this process runs, every node's address, and the sockets of
/// the local load nodes.
pub struct Started {
    /// `(node, what runs)`, in node order.
    pub nodes: Vec<(NodeIx, RunningNode)>,
    /// Every node's address (local ones as bound).
    pub addrs: Vec<SocketAddr>,
    /// Local load nodes (transaction clients, Paxos proposers, chain
    /// clients) and their bound sockets.
    pub load: Vec<(NodeIx, UdpSocket)>,
    /// The chain order clients follow (chain topologies whose control
    /// plane runs here).
    pub view: Option<ChainView>,
    /// The topology's `auth_key`, as the load nodes must use it (Paxos
    /// proposers seal; transaction clients are not covered).
    pub auth: Option<Arc<PeerAuth>>,
}

/// The keys of `topo`'s `auth_key` and whom they cover at its nodes (every
/// node's address is in `addrs`): transactions, the stores and switches
/// (the clients stay unsealed: the reference clients cannot carry a MAC);
/// Paxos, every address (every party is a node).
pub fn auth_of(topo: &Topology, addrs: &[SocketAddr]) -> anyhow::Result<Option<Arc<PeerAuth>>> {
    let Some(path) = &topo.auth_key else { return Ok(None) };
    let keys = crate::auth::read_key_file(path).map_err(|e| anyhow!("auth_key: {e}"))?;
    Ok(Some(match &topo.service {
        Service::Txn(_) => PeerAuth::peers(keys, (0..addrs.len()).filter(|&i| !is_load(topo, i)).map(|i| addrs[i])),
        Service::Paxos(_) => PeerAuth::all(keys),
        Service::Chain(_) => bail!("auth_key: the chain service does not carry the authenticator yet: remove it"),
    }))
}

/// Nodes that generate load rather than serve it.
pub fn is_load(topo: &Topology, i: NodeIx) -> bool {
    match &topo.service {
        Service::Txn(d) => d.nodes[i].role == TxnRole::Client,
        Service::Paxos(p) => matches!(p.deployment.nodes[i].role, PaxosRole::Proposer { .. }),
        Service::Chain(c) => c.deployment.nodes[i].role == ChainRole::Client,
    }
}

fn loopback_any() -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0)
}

/// Where node `i` binds: its `listen`, or a free port on loopback when
/// every address in the file is a loopback one (else on every interface).
fn listen_of(topo: &Topology, i: NodeIx) -> anyhow::Result<SocketAddr> {
    let name = &topo.names()[i];
    match &topo.places[i].listen {
        Some(l) => resolve(l).with_context(|| format!("node '{name}': listen")),
        None => {
            let mut fixed = (0..topo.places.len()).filter_map(|j| fixed_address(topo, j).ok().flatten());
            Ok(if fixed.all(|a| a.ip().is_loopback()) {
                loopback_any()
            } else {
                SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0)
            })
        }
    }
}

/// How others reach node `i`, if the file fixes it.
fn fixed_address(topo: &Topology, i: NodeIx) -> anyhow::Result<Option<SocketAddr>> {
    let p = &topo.places[i];
    let name = &topo.names()[i];
    let Some(s) = p.address.as_ref().or(p.listen.as_ref()) else { return Ok(None) };
    let a = resolve(s).with_context(|| format!("node '{name}'"))?;
    Ok((!a.ip().is_unspecified() && a.port() != 0).then_some(a))
}

/// The nodes whose addresses the nodes in `local` need: their tables'
/// neighbours, and for a chain the control plane (agents answer it, clients
/// ask it) or, at the control plane, the chain switches.
fn needed(topo: &Topology, local: &[NodeIx]) -> Vec<NodeIx> {
    let mut v: Vec<NodeIx> = match &topo.service {
        Service::Txn(d) => local.iter().flat_map(|&i| d.nodes[i].neighbours()).collect(),
        Service::Paxos(p) => local.iter().flat_map(|&i| p.deployment.nodes[i].neighbours()).collect(),
        Service::Chain(c) => {
            let d = &c.deployment;
            let mut v: Vec<NodeIx> = local.iter().flat_map(|&i| d.nodes[i].neighbours()).collect();
            v.extend(d.with_role(|r| *r == ChainRole::Control));
            if local.iter().any(|&i| d.nodes[i].role == ChainRole::Control) {
                v.extend(innet_chain::deploy::chain_nodes(d));
            }
            v
        }
    };
    v.sort_unstable();
    v.dedup();
    v
}

/// Where every node runs: the nodes in `local` here (at their `listen`,
/// reached at their fixed address if the file gives one), the others at
/// their fixed addresses.
fn places(topo: &Topology, local: &[NodeIx]) -> anyhow::Result<Vec<Place>> {
    let needed = needed(topo, local);
    let names = topo.names();
    (0..names.len())
        .map(|i| {
            Ok(if local.contains(&i) {
                Place::Here { listen: listen_of(topo, i)?, advertise: fixed_address(topo, i)? }
            } else if needed.contains(&i) {
                Place::Elsewhere(fixed_address(topo, i)?.ok_or_else(|| {
                    anyhow!(
                        "node '{}' runs elsewhere but has no fixed address: give it `listen` (or `address`) HOST:PORT",
                        names[i]
                    )
                })?)
            } else {
                // Not a neighbour, but a software switch's table of switch
                // peers (who sends the origin shim) names every switch of
                // the deployment: a core must know its edge switches'
                // addresses.
                Place::Elsewhere(fixed_address(topo, i)?.unwrap_or_else(loopback_any))
            })
        })
        .collect()
}

/// Starts the nodes `only` names (a node, or every node of a machine), or
/// every node; returns what runs here.
pub fn start(topo: &Topology, only: Option<&str>, stop: &Stop) -> anyhow::Result<Started> {
    let local: Vec<NodeIx> = match only {
        Some(name) => topo.select(name).map_err(|e| anyhow!("{e}"))?,
        None => (0..topo.names().len()).collect(),
    };
    match &topo.service {
        Service::Txn(d) => {
            crate::deploy::check(d).map_err(anyhow::Error::msg)?;
            start_here(topo, d, DataPlaneAt::Switch, &local, stop, |slot, auth| {
                let place = &topo.places[slot.ix];
                let setup = ServerSetup {
                    data: place.data_dir.clone().map_or(StoreData::Memory, StoreData::Dir),
                    allow_reset: place.allow_reset,
                    open_store: false,
                    auth: auth.clone(),
                    downstream_delay: place.downstream_delay,
                };
                let what = format!("starting {} '{}'", slot.node().role.name(), slot.name());
                Ok(match start_server(slot, &setup).context(what)? {
                    TxnServer::Store(s) => RunningNode::Store(s),
                    TxnServer::Switch(s) => RunningNode::TxnSwitch(s),
                })
            })
        }
        Service::Paxos(p) => {
            start_here(topo, &p.deployment, p.data_plane, &local, stop, |slot, auth| start_paxos(p, slot, auth.clone()))
        }
        Service::Chain(c) => {
            // Chain switches come first (`innet_chain::deploy::validate`), so
            // the control plane, which configures them, starts after them.
            let mut view = None;
            let mut started = start_here(topo, &c.deployment, DataPlaneAt::Switch, &local, stop, |slot, _| {
                let (n, v) = start_chain(c, slot)?;
                view = view.take().or(v);
                Ok(n)
            })?;
            started.view = view;
            Ok(started)
        }
    }
}

/// Binds the nodes in `local` and every address ([`crate::deploy::bind`]),
/// keeps the load nodes' sockets for the caller and starts the others
/// with `make` (given the topology's keys).
fn start_here<R>(
    topo: &Topology,
    d: &Deployment<R>,
    at: DataPlaneAt,
    local: &[NodeIx],
    stop: &Stop,
    mut make: impl FnMut(Slot<'_, R>, &Option<Arc<PeerAuth>>) -> anyhow::Result<RunningNode>,
) -> anyhow::Result<Started> {
    let mut bound = crate::deploy::bind(d, &places(topo, local)?)?;
    let auth = auth_of(topo, &bound.addrs)?;
    let mut load: Vec<(NodeIx, UdpSocket)> = vec![];
    for &i in local.iter().filter(|&&i| is_load(topo, i)) {
        load.push((i, bound.take(i).expect("bound above")));
    }
    load.sort_by_key(|(i, _)| *i);
    let addrs = bound.addrs.clone();
    let nodes = bound.start(d, at, stop, |slot| make(slot, &auth))?;
    Ok(Started { nodes, addrs, load, view: None, auth })
}

fn start_paxos(
    p: &PaxosTopology,
    slot: Slot<'_, PaxosRole>,
    auth: Option<Arc<PeerAuth>>,
) -> anyhow::Result<RunningNode> {
    let (d, at, addrs, i, stop) = (slot.deployment, slot.at, slot.addrs, slot.ix, slot.stop);
    let roles = Roles::of(d, p.params.clone());
    let name = slot.name().to_string();
    let socket = slot.socket;
    Ok(match d.nodes[i].role {
        PaxosRole::Coordinator => RunningNode::Coordinator(spawn_program(
            d,
            at,
            addrs,
            i,
            socket,
            Coordinator::new(roles.coordinator()),
            auth,
            stop,
        )?),
        PaxosRole::Acceptor { id } => RunningNode::Acceptor(spawn_program(
            d,
            at,
            addrs,
            i,
            socket,
            Acceptor::new(roles.acceptor(id)),
            auth,
            stop,
        )?),
        PaxosRole::Backup => {
            let o = HostOptions { auth, ..crate::paxos::options(d, addrs, i) };
            RunningNode::Backup(crate::paxos::spawn_backup(&name, socket, o, roles.backup(), stop)?)
        }
        PaxosRole::Learner { id } => {
            let o = HostOptions { auth, ..crate::paxos::options(d, addrs, i) };
            RunningNode::Learner(crate::paxos::spawn_learner(&name, socket, o, roles.learner(id), stop)?)
        }
        PaxosRole::Proposer { .. } => unreachable!("load nodes are the caller's"),
    })
}

/// The chain control plane's management address, for its address `a`.
fn control_manage_addr(a: SocketAddr) -> anyhow::Result<SocketAddr> {
    manage::manage_addr(a).ok_or_else(|| {
        anyhow!(
            "the chain control plane at {a}: its management port ({} above) passes 65535: choose a lower port",
            manage::MANAGE_PORT_OFFSET
        )
    })
}

/// The chain switches' data addresses and their agents' addresses.
fn chain_addrs(c: &ChainTopology, addrs: &[SocketAddr]) -> anyhow::Result<(Vec<SocketAddr>, Vec<SocketAddr>)> {
    let switches: Vec<SocketAddr> =
        innet_chain::deploy::chain_nodes(&c.deployment).into_iter().map(|i| addrs[i]).collect();
    let agents = switches
        .iter()
        .map(|&a| manage::manage_addr(a).ok_or_else(|| anyhow!("chain node at {a}: no room for its management port")))
        .collect::<anyhow::Result<_>>()?;
    Ok((switches, agents))
}

/// A chain switch's management socket, beside its data socket `s`.
fn bind_manage(name: &str, s: &UdpSocket) -> anyhow::Result<UdpSocket> {
    let port = s.local_addr()?;
    let m = manage::manage_addr(port).ok_or_else(|| {
        anyhow!(
            "chain node '{name}': its management port ({} above {}) passes 65535: choose a lower port",
            manage::MANAGE_PORT_OFFSET,
            port.port()
        )
    })?;
    bind(m).with_context(|| format!("chain node '{name}': management socket"))
}

fn start_chain(c: &ChainTopology, slot: Slot<'_, ChainRole>) -> anyhow::Result<(RunningNode, Option<ChainView>)> {
    let d = &c.deployment;
    let (name, addrs, stop) = (slot.name().to_string(), slot.addrs, slot.stop);
    let control = d.with_role(|r| *r == ChainRole::Control).first().map(|&k| addrs[k]);
    let (switches, agents) = chain_addrs(c, addrs)?;
    let socket = slot.socket;
    match d.nodes[slot.ix].role {
        ChainRole::Node { index } => {
            let manage_socket = bind_manage(&name, &socket)?;
            let control =
                control.ok_or_else(|| anyhow!("a chain needs a node with role \"control\" to configure it"))?;
            let control = control_manage_addr(control)?;
            let node = fresh_node(c.protocol, index, c.objects, c.versions, c.keys)?;
            let tables = crate::chain::chain_peer_tables(&switches);
            let auth = crate::chain::chain_auth(c.auth.as_ref(), &switches);
            let switch = spawn_chain_switch(&name, node, socket, tables, auth, stop)?;
            let agent =
                Agent::new(index, c.protocol, switches, control, switch.state().clone()).with_auth(c.auth.clone());
            let (ms, st) = (manage_socket, stop.clone());
            // Connected: the kernel hands the agent only the control plane's datagrams.
            ms.connect(control).with_context(|| format!("chain node '{name}': management socket"))?;
            let agent = std::thread::Builder::new()
                .name(format!("innet-{name}-agent"))
                .spawn(move || manage::run_agent(agent, ms, &st))?;
            Ok((RunningNode::ChainSwitch { switch, agent }, None))
        }
        ChainRole::Control => {
            let (mut control, layout) = ChainControl::new(c.control.clone(), switches.len(), clock::now());
            let view: ChainView = Arc::new(Mutex::new((1, layout.chain.clone())));
            let timeout = c.control.heartbeat_interval.max(Duration::from_millis(2));
            let manage = control_manage_addr(socket.local_addr()?)?;
            let sockets = manage::control_sockets(manage, &agents)
                .with_context(|| format!("chain control plane '{name}': management sockets"))?;
            let mut remote = RemoteNodes::new(c.protocol, sockets, agents, timeout)?.with_auth(c.auth.clone());
            {
                use crate::chain::ChainNodes;
                // The nodes may still be starting, or slow to answer on a
                // busy machine: the first layout goes out until every node
                // took it, for up to STARTUP_APPLY. A node that answers
                // unconfigured after that is taken for restarted and joins
                // through a resync.
                let until = std::time::Instant::now() + STARTUP_APPLY;
                while !remote.apply(&layout) && std::time::Instant::now() < until {
                    std::thread::sleep(c.control.heartbeat_interval);
                }
            }
            let (v, st) = (view.clone(), stop.clone());
            let views = std::thread::Builder::new()
                .name(format!("innet-{name}-views"))
                .spawn(move || manage::serve_views(socket, v, &st))?;
            let (v, st) = (view.clone(), stop.clone());
            let every = c.control.heartbeat_interval;
            let t = std::thread::Builder::new().name(format!("innet-{name}")).spawn(move || {
                while !st.is_stopped() {
                    std::thread::sleep(every);
                    control_step(&mut control, &mut remote, &v, clock::now());
                }
                let views = views.join().unwrap_or_else(|_| Ok(ViewStats::default())).unwrap_or_default();
                ControlReport { control, views }
            })?;
            Ok((RunningNode::ChainControl(t), Some(view)))
        }
        ChainRole::Client => bail!("load nodes are the caller's"),
    }
}
