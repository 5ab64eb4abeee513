//! A deterministic discrete-event simulator for innet's state machines.
//!
//! Nodes are end hosts ([`Host`]) or switches running a data-plane program
//! ([`DataPlane`]). Links are bidirectional with a one-way latency and named
//! fault knobs ([`LinkSpec`]): uniform jitter, loss, duplication and
//! reordering (a packet held back by up to twice the latency). Everything
//! random comes from one seeded generator, and events at the same instant run
//! in the order they were scheduled, so a seed replays a run exactly; the
//! [`Sim::trace_hash`] of every delivery lets tests check that (the idea of
//! madsim's `check_determinism`).
//!
//! Addressing, as a switch's tables would hold it:
//! * `Upstream` / `Downstream { flow }`: a switch forwards to its configured
//!   upstream neighbour and remembers which neighbour each flow came from, so
//!   replies retrace the path (Gotthard's Figure 4).
//! * ports ([`Sim::set_port`]) and multicast groups ([`Sim::set_group`]) per
//!   node, for [`Verdict::Port`] / [`Verdict::Multicast`] and for hosts'
//!   [`Dest::Port`] / [`Dest::Group`]. The control plane may change them at
//!   any time (a chain reconfiguration).
//! * every packet carries its *origin*, the end host that sent it (its IP
//!   source address); switches keep it when they forward, and
//!   [`Verdict::Origin`] sends to it.
//! * nodes without a direct link reach each other through the *fabric*
//!   ([`Sim::set_fabric`]), a default link standing for the rest of an IP
//!   network; without a fabric, sending between unlinked nodes is a bug and
//!   panics.
//!
//! Faults beyond links: [`Sim::crash`] stops a node (packets to it are lost,
//! its timers and queued work vanish); [`Sim::restart_host`] /
//! [`Sim::restart_switch`] bring it back with the state the caller gives
//! (fresh, or recovered from durable storage).
//!
//! Capacity: by default a node handles a packet in zero time. A
//! [`ServiceModel`] ([`Sim::set_service`]) makes it a single FIFO server that
//! spends `per_packet + per_byte * len` on each packet and drops arrivals
//! beyond `queue_packets`: a switch's pipeline throughput, a software
//! process's CPU, or the cost of parsing longer headers. Several nodes may
//! share one server ([`Sim::share_service`]): software switches on one CPU.

#![forbid(unsafe_code)]

pub mod script;

use std::any::Any;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::time::Duration;

use innet_core::deploy::{Deployment, Node as DeployNode, NodeIx};
use innet_core::rng::Rng;
use innet_core::{DataPlane, Dest, Host, Ingress, Member, Outbox, Peer, ReversePath, Sender, Time, Verdict};

pub type NodeId = usize;

/// A link's behaviour in one direction (links are configured symmetric).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct LinkSpec {
    pub latency: Duration,
    /// Extra one-way delay, uniform in `[0, jitter)`.
    pub jitter: Duration,
    pub loss_probability: f64,
    pub duplicate_probability: f64,
    /// Probability that a packet is held back by up to `2 * latency` more.
    pub reorder_probability: f64,
}

impl LinkSpec {
    pub fn latency(latency: Duration) -> LinkSpec {
        LinkSpec { latency, ..LinkSpec::default() }
    }
}

/// How long a node takes per packet (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ServiceModel {
    pub per_packet: Duration,
    /// Nanoseconds per byte of packet (parsing cost).
    pub per_byte_ns: f64,
    /// Packets waiting beyond this are dropped (a full queue).
    pub queue_packets: usize,
}

impl ServiceModel {
    pub fn cost(&self, len: usize) -> Duration {
        debug_assert!(self.per_byte_ns >= 0.0 && self.queue_packets > 0, "{self:?}");
        self.per_packet + Duration::from_nanos((self.per_byte_ns * len as f64).round() as u64)
    }
}

/// Something the simulator can run and give back for inspection.
pub trait SimHost: Host + Any {
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}
impl<T: Host + Any> SimHost for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

pub trait SimDataPlane: DataPlane + Any {
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}
impl<T: DataPlane + Any> SimDataPlane for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// What [`Sim::instantiate`] runs at a deployment's node.
pub enum SimNode {
    Host(Box<dyn SimHost>),
    Switch(Box<dyn SimDataPlane>),
}

impl SimNode {
    pub fn host(h: impl SimHost) -> SimNode {
        SimNode::Host(Box::new(h))
    }
    pub fn switch(p: impl SimDataPlane) -> SimNode {
        SimNode::Switch(Box::new(p))
    }
}

/// Capacity of a switch's reverse-path table in the simulator.
pub const REVERSE_PATH_SLOTS: usize = 1 << 16;

/// Deliveries a recorded trace keeps ([`Sim::record_trace`]): 32 bytes
/// each, 32 MiB at most. Past it only [`Sim::trace_hash`] covers the run.
pub const TRACE_EVENTS_MAX: usize = 1 << 20;

/// One delivery of a recorded trace ([`Sim::record_trace`]): what
/// [`Sim::trace_hash`] hashes, and the hash after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceEvent {
    pub at: Time,
    pub to: NodeId,
    pub from: NodeId,
    pub len: usize,
    /// FNV-1a of the packet's bytes.
    pub bytes_hash: u64,
    /// [`Sim::trace_hash`] after this delivery.
    pub trace: u64,
}

impl std::fmt::Display for TraceEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "at {} ns node {} got {} bytes (hash {:016x}) from node {}",
            self.at.as_nanos(),
            self.to,
            self.len,
            self.bytes_hash,
            self.from
        )
    }
}

/// Where two recorded traces of one seed part (a determinism check that
/// failed): the first delivery that differs, as both runs saw it. `None`
/// when the traces agree as far as both go.
pub fn first_difference(a: &[TraceEvent], b: &[TraceEvent]) -> Option<String> {
    let i = a.iter().zip(b).position(|(x, y)| x != y).or((a.len() != b.len()).then(|| a.len().min(b.len())))?;
    let show = |t: &[TraceEvent]| t.get(i).map_or("no delivery (the run ended)".to_string(), |e| e.to_string());
    debug_assert!(a[..i] == b[..i], "the traces agree before their first difference");
    Some(format!("delivery #{i} differs: first run {}; second run {}", show(a), show(b)))
}

/// A link of a deployment, as [`Sim::instantiate_wired`] asks for its
/// [`LinkSpec`].
#[derive(Clone, Copy, Debug)]
pub enum Wire<'a> {
    /// The default link of nodes without a link (its one-way delay).
    Fabric(Duration),
    Link(&'a innet_core::deploy::Link),
}

/// A group's members named by deployment index, named by the simulator's
/// `ids` of those nodes.
pub fn member_ids(members: &[Member<NodeIx>], ids: &[NodeId]) -> Vec<Member<NodeId>> {
    let mapped: Vec<Member<NodeId>> = members
        .iter()
        .map(|m| match m {
            Member::Node(x) => Member::Node(ids[*x]),
            Member::Origin => Member::Origin,
        })
        .collect();
    debug_assert_eq!(mapped.len(), members.len());
    mapped
}

/// Packets a packet log keeps ([`Sim::record_packets`]) between two
/// [`Sim::take_packets`]: a scenario script's step, not a whole run.
pub const PACKET_LOG_MAX: usize = 1 << 16;

/// What became of a logged packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// It reached `to`, which was up.
    Delivered,
    /// It reached `to` while `to` was down, and was lost.
    NodeDown,
    /// Switch `to` took it and sent nothing on (its program's `Drop`, or
    /// no route for its verdict); `bytes` are the packet as the program
    /// left it.
    Dropped,
}

/// One entry of a packet log ([`Sim::record_packets`]): the whole packet,
/// for scenario scripts that print what the network carried.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedPacket {
    pub at: Time,
    pub from: NodeId,
    pub to: NodeId,
    pub fate: Fate,
    pub bytes: Vec<u8>,
}

enum Role {
    Host { host: Box<dyn SimHost>, next_tick: Option<Time> },
    Switch { program: Box<dyn SimDataPlane>, paths: ReversePath<NodeId> },
}

/// What happened at one node.
#[derive(Clone, Default, Debug, PartialEq, Eq)]
pub struct NodeStats {
    /// Packets that arrived while the node was up.
    pub received: u64,
    /// Packets the node's role handled.
    pub processed: u64,
    /// Arrivals dropped because the node's queue was full.
    pub queue_drops: u64,
    /// Time its [`ServiceModel`] spent on the packets it took (its server's
    /// busy time on its behalf; zero without a service model).
    pub busy: Duration,
    /// Arrivals lost because the node was down.
    pub lost_while_down: u64,
    /// Arrivals the node's admission rule refused ([`Sim::set_admit`]), by
    /// reason.
    pub rejected: std::collections::BTreeMap<&'static str, u64>,
}

/// A node's admission rule: `Err(reason)` drops a packet from the given
/// previous hop before the node's role sees it.
pub type Admit = Box<dyn Fn(NodeId, &[u8]) -> Result<(), &'static str>>;

struct Node {
    name: String,
    role: Role,
    upstream: Option<NodeId>,
    /// Switch peers by node: packets from them arrive as `Ingress::Peer`.
    peers: HashMap<NodeId, u16>,
    ports: Vec<Option<NodeId>>,
    groups: HashMap<u16, Vec<Member<NodeId>>>,
    up: bool,
    /// Bumped at every crash, so that work queued before it is discarded.
    incarnation: u32,
    service: Option<ServiceModel>,
    /// Another node whose server (service model, queue) this one uses.
    shares_server_of: Option<NodeId>,
    busy_until: Time,
    queued: usize,
    stats: NodeStats,
    admit: Option<Admit>,
}

/// A packet in flight: who sent it on this hop, and the end host it came from.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Packet {
    from: NodeId,
    origin: NodeId,
    bytes: Vec<u8>,
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum EventKind {
    Deliver {
        to: NodeId,
        packet: Packet,
    },
    /// A queued packet's service has finished (nodes with a [`ServiceModel`]).
    Process {
        node: NodeId,
        incarnation: u32,
        packet: Packet,
    },
    Tick {
        node: NodeId,
        incarnation: u32,
    },
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Event {
    at: Time,
    seq: u64,
    kind: EventKind,
}

/// Totals of what the network did.
#[derive(Clone, Default, Debug, PartialEq, Eq)]
pub struct NetStats {
    pub sent: u64,
    pub delivered: u64,
    pub lost: u64,
    pub duplicated: u64,
    pub reordered: u64,
    /// Packets a switch dropped (program verdict, or no route for it).
    pub switch_drops: u64,
    /// Packets that reached a crashed node.
    pub lost_at_down_node: u64,
    /// Packets dropped at a full node queue.
    pub queue_drops: u64,
    pub events: u64,
}

pub struct Sim {
    nodes: Vec<Node>,
    links: HashMap<(NodeId, NodeId), LinkSpec>,
    fabric: Option<LinkSpec>,
    queue: BinaryHeap<Reverse<Event>>,
    seq: u64,
    now: Time,
    rng: Rng,
    trace: u64,
    /// Deliveries, when recording ([`Sim::record_trace`]).
    trace_events: Option<Vec<TraceEvent>>,
    /// Every packet in full, when logging ([`Sim::record_packets`]).
    packet_log: Option<Vec<LoggedPacket>>,
    pub stats: NetStats,
    outbox: Outbox,
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0100_0000_01b3;

fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

impl Sim {
    pub fn new(seed: u64) -> Sim {
        Sim {
            nodes: vec![],
            links: HashMap::new(),
            fabric: None,
            queue: BinaryHeap::new(),
            seq: 0,
            now: Time::ZERO,
            rng: Rng::new(seed),
            trace: FNV_OFFSET,
            trace_events: None,
            packet_log: None,
            stats: NetStats::default(),
            outbox: Outbox::new(),
        }
    }

    /// Keeps every delivery from now on (at most [`TRACE_EVENTS_MAX`]), so
    /// that a determinism check that fails can say where two runs part
    /// ([`first_difference`]), not only that their hashes differ.
    pub fn record_trace(&mut self) {
        debug_assert!(self.stats.delivered == 0, "record from the start, or the traces do not line up");
        self.trace_events = Some(Vec::new());
    }

    /// Logs every packet from now on, whole, with what became of it
    /// ([`LoggedPacket`]), up to [`PACKET_LOG_MAX`] between two
    /// [`Sim::take_packets`].
    pub fn record_packets(&mut self) {
        self.packet_log = Some(Vec::new());
        debug_assert!(self.packet_log.as_ref().is_some_and(Vec::is_empty));
    }

    /// The packets logged since the last call, in the order things happened
    /// (empty unless [`Sim::record_packets`]).
    pub fn take_packets(&mut self) -> Vec<LoggedPacket> {
        let taken = self.packet_log.as_mut().map(std::mem::take).unwrap_or_default();
        debug_assert!(taken.len() <= PACKET_LOG_MAX);
        taken
    }

    fn log_packet(&mut self, from: NodeId, to: NodeId, fate: Fate, bytes: &[u8]) {
        if let Some(log) = self.packet_log.as_mut().filter(|l| l.len() < PACKET_LOG_MAX) {
            log.push(LoggedPacket { at: self.now, from, to, fate, bytes: bytes.to_vec() });
        }
    }

    /// The recorded deliveries (empty unless [`Sim::record_trace`]).
    pub fn trace_events(&self) -> &[TraceEvent] {
        let events = self.trace_events.as_deref().unwrap_or(&[]);
        debug_assert!(events.last().is_none_or(|e| e.trace == self.trace || events.len() == TRACE_EVENTS_MAX));
        events
    }

    pub fn now(&self) -> Time {
        debug_assert!(self.queue.peek().is_none_or(|Reverse(e)| e.at >= self.now), "an event in the past");
        self.now
    }

    /// A hash of every delivery so far (time, endpoints, bytes).
    pub fn trace_hash(&self) -> u64 {
        debug_assert!(self.stats.delivered > 0 || self.trace == FNV_OFFSET, "a trace without deliveries");
        self.trace
    }

    /// Every server's queue within its bound, every node id in range.
    fn holds(&self) -> bool {
        let n = self.nodes.len();
        self.nodes.iter().all(|node| {
            node.service.is_none_or(|m| node.queued <= m.queue_packets)
                && node.upstream.is_none_or(|u| u < n)
                && node.shares_server_of.is_none_or(|s| s < n)
        })
    }

    fn add_node(&mut self, name: &str, role: Role) -> NodeId {
        self.nodes.push(Node {
            name: name.into(),
            role,
            upstream: None,
            peers: HashMap::new(),
            ports: vec![],
            groups: HashMap::new(),
            up: true,
            incarnation: 0,
            service: None,
            shares_server_of: None,
            busy_until: Time::ZERO,
            queued: 0,
            stats: NodeStats::default(),
            admit: None,
        });
        self.nodes.len() - 1
    }

    pub fn add_host(&mut self, name: &str, host: impl SimHost) -> NodeId {
        let id = self.add_boxed_host(name, Box::new(host));
        debug_assert!(self.is_up(id) && id + 1 == self.nodes.len());
        id
    }

    fn add_boxed_host(&mut self, name: &str, host: Box<dyn SimHost>) -> NodeId {
        let next_tick = host.next_tick();
        let id = self.add_node(name, Role::Host { host, next_tick: None });
        if let Some(t) = next_tick {
            self.schedule_tick(id, t);
        }
        id
    }

    pub fn add_switch(&mut self, name: &str, program: impl SimDataPlane) -> NodeId {
        let id = self.add_boxed_switch(name, Box::new(program));
        debug_assert!(matches!(self.nodes[id].role, Role::Switch { .. }));
        id
    }

    fn add_boxed_switch(&mut self, name: &str, program: Box<dyn SimDataPlane>) -> NodeId {
        let paths = ReversePath::new(REVERSE_PATH_SLOTS);
        self.add_node(name, Role::Switch { program, paths })
    }

    /// Builds every node of `deployment` (what each runs comes from `make`),
    /// its links (`link` turns a one-way delay into a [`LinkSpec`], adding
    /// the experiment's faults), its fabric and every node's tables. Returns
    /// the simulator's id of each deployment node, in order.
    pub fn instantiate<R>(
        &mut self,
        deployment: &Deployment<R>,
        make: impl FnMut(NodeIx, &DeployNode<R>) -> SimNode,
        link: impl Fn(Duration) -> LinkSpec,
    ) -> Vec<NodeId> {
        let ids = self.instantiate_wired(deployment, make, |w| {
            link(match w {
                Wire::Fabric(delay) => delay,
                Wire::Link(l) => l.delay,
            })
        });
        debug_assert_eq!(ids.len(), deployment.nodes.len(), "one simulator node per deployment node");
        ids
    }

    /// [`Sim::instantiate`], `link` told which link it makes: the fabric or
    /// one of the deployment's links (a harness whose links and fabric
    /// carry different faults at the same delay tells them apart).
    pub fn instantiate_wired<R>(
        &mut self,
        deployment: &Deployment<R>,
        mut make: impl FnMut(NodeIx, &DeployNode<R>) -> SimNode,
        link: impl Fn(Wire<'_>) -> LinkSpec,
    ) -> Vec<NodeId> {
        let ids: Vec<NodeId> = deployment
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| match make(i, n) {
                SimNode::Host(h) => self.add_boxed_host(&n.name, h),
                SimNode::Switch(p) => self.add_boxed_switch(&n.name, p),
            })
            .collect();
        if let Some(f) = deployment.fabric {
            self.set_fabric(link(Wire::Fabric(f)));
        }
        for l in &deployment.links {
            self.link(ids[l.a], ids[l.b], link(Wire::Link(l)));
        }
        for (i, n) in deployment.nodes.iter().enumerate() {
            if let Some(u) = n.upstream {
                self.set_upstream(ids[i], ids[u]);
            }
            for (&port, &to) in &n.ports {
                self.set_port(ids[i], port, Some(ids[to]));
            }
            for (&group, members) in &n.groups {
                self.set_group(ids[i], group, member_ids(members, &ids));
            }
        }
        debug_assert_eq!(ids.len(), deployment.nodes.len(), "one simulator node per deployment node");
        ids
    }

    /// Connects `a` and `b` both ways.
    pub fn link(&mut self, a: NodeId, b: NodeId, spec: LinkSpec) {
        debug_assert!(a < self.nodes.len() && b < self.nodes.len(), "a link from node {a} to node {b}");
        self.links.insert((a, b), spec);
        self.links.insert((b, a), spec);
    }

    /// The link every pair of nodes without a direct link uses.
    pub fn set_fabric(&mut self, spec: LinkSpec) {
        debug_assert!(
            [spec.loss_probability, spec.duplicate_probability, spec.reorder_probability]
                .iter()
                .all(|p| (0.0..=1.0).contains(p)),
            "fault probabilities in 0..=1: {spec:?}"
        );
        self.fabric = Some(spec);
    }

    fn reachable(&self, a: NodeId, b: NodeId) -> bool {
        self.fabric.is_some() || self.links.contains_key(&(a, b))
    }

    /// Where `node` sends [`Dest::Upstream`] packets or [`Verdict::Upstream`] ones.
    pub fn set_upstream(&mut self, node: NodeId, upstream: NodeId) {
        assert!(self.reachable(node, upstream), "link {} to {} first", self.name(node), self.name(upstream));
        self.nodes[node].upstream = Some(upstream);
    }

    /// Packets `node` receives from `from` arrive as [`Ingress::Peer`]`(peer)`
    /// (a deployment's numbering of its switches).
    pub fn set_peer(&mut self, node: NodeId, from: NodeId, peer: u16) {
        debug_assert!(from < self.nodes.len() && from != node, "node {node}'s peer {from}");
        self.nodes[node].peers.insert(from, peer);
    }

    /// Port `port` of `node` leads to `to` (`None`: the port is down).
    pub fn set_port(&mut self, node: NodeId, port: u16, to: Option<NodeId>) {
        if let Some(t) = to {
            assert!(self.reachable(node, t), "link {} to {} first", self.name(node), self.name(t));
        }
        let ports = &mut self.nodes[node].ports;
        if ports.len() <= port as usize {
            ports.resize(port as usize + 1, None);
        }
        ports[port as usize] = to;
        debug_assert_eq!(self.port(node, port), to);
    }

    /// Multicast group `group` of `node` (replaces any earlier membership).
    pub fn set_group(&mut self, node: NodeId, group: u16, members: Vec<Member<NodeId>>) {
        for m in &members {
            if let Member::Node(t) = m {
                assert!(self.reachable(node, *t), "link {} to {} first", self.name(node), self.name(*t));
            }
        }
        self.nodes[node].groups.insert(group, members);
        debug_assert!(self.nodes[node].groups.contains_key(&group));
    }

    /// Gives `node` an admission rule (who may send it what).
    pub fn set_admit(&mut self, node: NodeId, admit: Admit) {
        debug_assert!(node < self.nodes.len());
        self.nodes[node].admit = Some(admit);
    }

    /// Makes `node` a single FIFO server with this cost model.
    pub fn set_service(&mut self, node: NodeId, model: ServiceModel) {
        assert!(model.queue_packets > 0, "a queue holds at least one packet");
        self.nodes[node].service = Some(model);
        debug_assert!(self.holds(), "a service model set under a longer queue");
    }

    /// Makes `node` use `owner`'s server: one FIFO queue and one cost model
    /// for both, e.g. software switches sharing one machine's CPU (Mininet
    /// with BMv2). `owner` needs a [`ServiceModel`].
    pub fn share_service(&mut self, node: NodeId, owner: NodeId) {
        assert!(self.nodes[owner].service.is_some(), "set_service on {} first", self.name(owner));
        assert!(self.nodes[owner].shares_server_of.is_none(), "{} shares a server itself", self.name(owner));
        self.nodes[node].shares_server_of = (node != owner).then_some(owner);
        debug_assert!(self.holds());
    }

    pub fn name(&self, node: NodeId) -> &str {
        debug_assert!(node < self.nodes.len(), "node {node} of {}", self.nodes.len());
        &self.nodes[node].name
    }

    pub fn node_stats(&self, node: NodeId) -> &NodeStats {
        let s = &self.nodes[node].stats;
        debug_assert!(s.processed <= s.received, "{} processed more than it received", self.nodes[node].name);
        s
    }

    pub fn is_up(&self, node: NodeId) -> bool {
        debug_assert!(node < self.nodes.len(), "node {node} of {}", self.nodes.len());
        self.nodes[node].up
    }

    /// Stops `node` now: packets to it are lost, its timers and queued work
    /// vanish, switches forget their reverse paths. Its state stays readable
    /// (e.g. [`Sim::host`]) until it is restarted.
    pub fn crash(&mut self, node: NodeId) {
        let n = &mut self.nodes[node];
        n.up = false;
        n.incarnation += 1;
        n.queued = 0;
        n.busy_until = self.now;
        if let Role::Host { next_tick, .. } = &mut n.role {
            *next_tick = None;
        }
        debug_assert!(!self.is_up(node) && self.nodes[node].queued == 0);
    }

    /// Brings a crashed host back as `host`.
    pub fn restart_host(&mut self, node: NodeId, host: impl SimHost) {
        assert!(!self.nodes[node].up, "{} is up; crash it first", self.name(node));
        let next = host.next_tick();
        self.nodes[node].role = Role::Host { host: Box::new(host), next_tick: None };
        self.nodes[node].up = true;
        if let Some(t) = next {
            self.schedule_tick(node, t);
        }
        debug_assert!(self.is_up(node));
    }

    /// Brings a crashed switch back running `program`.
    pub fn restart_switch(&mut self, node: NodeId, program: impl SimDataPlane) {
        assert!(!self.nodes[node].up, "{} is up; crash it first", self.name(node));
        let paths = ReversePath::new(REVERSE_PATH_SLOTS);
        self.nodes[node].role = Role::Switch { program: Box::new(program), paths };
        self.nodes[node].up = true;
        debug_assert!(self.is_up(node) && matches!(self.nodes[node].role, Role::Switch { .. }));
    }

    /// The host at `node`, if it is a `T`.
    pub fn host<T: 'static>(&self, node: NodeId) -> Option<&T> {
        debug_assert!(node < self.nodes.len(), "node {node} of {}", self.nodes.len());
        match &self.nodes[node].role {
            Role::Host { host, .. } => host.as_ref().as_any().downcast_ref(),
            Role::Switch { .. } => None,
        }
    }

    /// The host at `node`, mutably (an application calling into its library;
    /// call [`Sim::wake`] after changing what its `next_tick` returns).
    pub fn host_mut<T: 'static>(&mut self, node: NodeId) -> Option<&mut T> {
        debug_assert!(node < self.nodes.len(), "node {node} of {}", self.nodes.len());
        match &mut self.nodes[node].role {
            Role::Host { host, .. } => host.as_mut().as_any_mut().downcast_mut(),
            Role::Switch { .. } => None,
        }
    }

    /// Re-reads `node`'s `next_tick` (after the caller changed the host).
    pub fn wake(&mut self, node: NodeId) {
        let tick = match &self.nodes[node].role {
            Role::Host { host, .. } if self.nodes[node].up => host.next_tick(),
            _ => None,
        };
        if let Some(t) = tick {
            self.schedule_tick(node, t);
        }
        debug_assert!(tick.is_none() || matches!(self.nodes[node].role, Role::Host { next_tick: Some(_), .. }));
    }

    /// The switch program at `node`, if it is a `T`.
    pub fn program<T: 'static>(&self, node: NodeId) -> Option<&T> {
        debug_assert!(node < self.nodes.len(), "node {node} of {}", self.nodes.len());
        match &self.nodes[node].role {
            Role::Switch { program, .. } => program.as_ref().as_any().downcast_ref(),
            Role::Host { .. } => None,
        }
    }

    /// The switch program at `node`, mutably (a control plane writing its tables).
    pub fn program_mut<T: 'static>(&mut self, node: NodeId) -> Option<&mut T> {
        debug_assert!(node < self.nodes.len(), "node {node} of {}", self.nodes.len());
        match &mut self.nodes[node].role {
            Role::Switch { program, .. } => program.as_mut().as_any_mut().downcast_mut(),
            Role::Host { .. } => None,
        }
    }

    fn push(&mut self, at: Time, kind: EventKind) {
        debug_assert!(at >= self.now, "an event scheduled in the past");
        self.seq += 1;
        self.queue.push(Reverse(Event { at, seq: self.seq, kind }));
    }

    fn schedule_tick(&mut self, node: NodeId, at: Time) {
        let at = at.max(self.now);
        let incarnation = self.nodes[node].incarnation;
        if let Role::Host { next_tick, .. } = &mut self.nodes[node].role {
            if *next_tick == Some(at) {
                return;
            }
            *next_tick = Some(at);
        }
        self.push(at, EventKind::Tick { node, incarnation });
    }

    fn transmit(&mut self, from: NodeId, to: NodeId, origin: NodeId, bytes: Vec<u8>) {
        let spec = match self.links.get(&(from, to)).copied().or(self.fabric) {
            Some(s) => s,
            None => panic!("no link from {} to {}", self.nodes[from].name, self.nodes[to].name),
        };
        self.stats.sent += 1;
        let copies = if self.rng.chance(spec.duplicate_probability) {
            self.stats.duplicated += 1;
            2
        } else {
            1
        };
        for _ in 0..copies {
            if self.rng.chance(spec.loss_probability) {
                self.stats.lost += 1;
                continue;
            }
            let mut delay = spec.latency;
            if !spec.jitter.is_zero() {
                delay += spec.jitter.mul_f64(self.rng.f64());
            }
            if self.rng.chance(spec.reorder_probability) {
                self.stats.reordered += 1;
                delay += spec.latency.mul_f64(2.0 * self.rng.f64());
            }
            let packet = Packet { from, origin, bytes: bytes.clone() };
            self.push(self.now + delay, EventKind::Deliver { to, packet });
        }
    }

    /// The members of `node`'s group `group`, resolved against `origin`.
    fn group_members(&self, node: NodeId, group: u16, origin: Option<NodeId>) -> Vec<NodeId> {
        let members = self.nodes[node].groups.get(&group).map(Vec::as_slice).unwrap_or(&[]);
        members
            .iter()
            .filter_map(|m| match m {
                Member::Node(n) => Some(*n),
                Member::Origin => origin,
            })
            .collect()
    }

    fn port(&self, node: NodeId, port: u16) -> Option<NodeId> {
        self.nodes[node].ports.get(port as usize).copied().flatten()
    }

    fn after_host(&mut self, node: NodeId, from: Option<NodeId>) {
        let mut out = std::mem::take(&mut self.outbox);
        let tick = match &self.nodes[node].role {
            Role::Host { host, .. } => host.next_tick(),
            Role::Switch { .. } => unreachable!("hosts only"),
        };
        for (dest, bytes) in out.drain() {
            let targets = match dest {
                Dest::Reply => vec![from.expect("a reply needs a packet being handled")],
                Dest::Upstream => {
                    vec![self.nodes[node]
                        .upstream
                        .unwrap_or_else(|| panic!("{} has no upstream", self.nodes[node].name))]
                }
                Dest::Port(p) => self.port(node, p).into_iter().collect(),
                Dest::Group(g) => self.group_members(node, g, from),
            };
            for to in targets {
                self.transmit(node, to, node, bytes.clone());
            }
        }
        self.outbox = out;
        if let Some(t) = tick {
            self.schedule_tick(node, t);
        }
    }

    fn deliver(&mut self, to: NodeId, packet: Packet) {
        self.stats.delivered += 1;
        self.trace = fnv(self.trace, &self.now.as_nanos().to_le_bytes());
        self.trace = fnv(self.trace, &[to as u8, packet.from as u8]);
        self.trace = fnv(self.trace, &packet.bytes);
        if let Some(events) = self.trace_events.as_mut().filter(|e| e.len() < TRACE_EVENTS_MAX) {
            let (len, bytes_hash) = (packet.bytes.len(), fnv(FNV_OFFSET, &packet.bytes));
            events.push(TraceEvent { at: self.now, to, from: packet.from, len, bytes_hash, trace: self.trace });
        }
        let fate = if self.nodes[to].up { Fate::Delivered } else { Fate::NodeDown };
        self.log_packet(packet.from, to, fate, &packet.bytes);
        let now = self.now;
        let node = &mut self.nodes[to];
        if !node.up {
            node.stats.lost_while_down += 1;
            self.stats.lost_at_down_node += 1;
            return;
        }
        node.stats.received += 1;
        let incarnation = node.incarnation;
        let server = node.shares_server_of.unwrap_or(to);
        let s = &mut self.nodes[server];
        match s.service {
            None => self.process(to, packet),
            Some(model) => {
                if s.queued >= model.queue_packets {
                    self.nodes[to].stats.queue_drops += 1;
                    self.stats.queue_drops += 1;
                    return;
                }
                s.queued += 1;
                debug_assert!(s.queued <= model.queue_packets);
                let cost = model.cost(packet.bytes.len());
                let done = s.busy_until.max(now) + cost;
                s.busy_until = done;
                self.nodes[to].stats.busy += cost;
                self.push(done, EventKind::Process { node: to, incarnation, packet });
            }
        }
    }

    fn process(&mut self, to: NodeId, packet: Packet) {
        let Packet { from, origin, mut bytes } = packet;
        let now = self.now;
        self.nodes[to].stats.processed += 1;
        if let Some(Err(reason)) = self.nodes[to].admit.as_ref().map(|a| a(from, &bytes)) {
            *self.nodes[to].stats.rejected.entry(reason).or_default() += 1;
            return;
        }
        let upstream = self.nodes[to].upstream;
        let peer = self.nodes[to].peers.get(&from).copied();
        let targets = match &mut self.nodes[to].role {
            Role::Host { host, .. } => {
                // The sender's address is the packet's origin (its IP source
                // address, which switches on the way keep).
                let sender = Sender { peer: Peer::node(origin), upstream: upstream == Some(from) };
                host.on_packet_from(now, &bytes, sender, &mut self.outbox);
                self.after_host(to, Some(from));
                return;
            }
            Role::Switch { program, paths } => {
                let ingress = match peer {
                    _ if upstream == Some(from) => Ingress::Upstream,
                    Some(p) => Ingress::Peer(p),
                    None => Ingress::Downstream,
                };
                if ingress != Ingress::Upstream && program.request_flow(&bytes).is_some_and(|f| !paths.admits(f, from))
                {
                    // A request of a flow bound to another neighbour
                    // (ReversePath): the program's refusal goes back.
                    let answer = program.refuse(&mut bytes);
                    *self.nodes[to].stats.rejected.entry("refused_other_sender").or_default() += 1;
                    if let Some(len) = answer {
                        bytes.truncate(len);
                        self.transmit(to, from, origin, bytes);
                    }
                    return;
                }
                let (verdict, len) = program.process_from(&mut bytes, ingress);
                debug_assert!(len <= bytes.len(), "a program shrinks its packet, never grows it");
                bytes.truncate(len);
                match verdict {
                    Verdict::Upstream { flow } => {
                        paths.learn(flow, from);
                        upstream.into_iter().collect()
                    }
                    Verdict::Downstream { flow } => paths.lookup(flow).into_iter().collect(),
                    Verdict::Reflect => vec![from],
                    Verdict::Drop => vec![],
                    Verdict::Port { port } => self.port(to, port).into_iter().collect(),
                    Verdict::Multicast { group } => self.group_members(to, group, Some(origin)),
                    Verdict::Origin => vec![origin],
                }
            }
        };
        if targets.is_empty() {
            self.stats.switch_drops += 1;
            self.log_packet(from, to, Fate::Dropped, &bytes);
        }
        for n in targets {
            self.transmit(to, n, origin, bytes.clone());
        }
    }

    /// Runs every event up to and including `end`; time then stands at `end`.
    pub fn run_until(&mut self, end: Time) {
        while let Some(Reverse(ev)) = self.queue.peek() {
            if ev.at > end {
                break;
            }
            let Reverse(ev) = self.queue.pop().expect("peeked");
            debug_assert!(ev.at >= self.now, "time went back from {:?} to {:?}", self.now, ev.at);
            self.now = ev.at;
            self.stats.events += 1;
            match ev.kind {
                EventKind::Deliver { to, packet } => self.deliver(to, packet),
                EventKind::Process { node, incarnation, packet } => {
                    let server = self.nodes[node].shares_server_of.unwrap_or(node);
                    let current = self.nodes[node].incarnation == incarnation && self.nodes[node].up;
                    if current || server != node {
                        self.nodes[server].queued = self.nodes[server].queued.saturating_sub(1);
                    }
                    if current {
                        self.process(node, packet);
                    }
                }
                EventKind::Tick { node, incarnation } => {
                    let now = self.now;
                    let n = &mut self.nodes[node];
                    if n.incarnation != incarnation || !n.up {
                        continue;
                    }
                    let Role::Host { host, next_tick } = &mut n.role else { continue };
                    if *next_tick != Some(ev.at) {
                        continue; // superseded
                    }
                    *next_tick = None;
                    host.on_tick(now, &mut self.outbox);
                    self.after_host(node, None);
                }
            }
        }
        self.now = self.now.max(end);
        debug_assert!(self.holds());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sends a numbered packet upstream every 10 ms, counts what comes back.
    struct Pinger {
        next: Time,
        sent: u32,
        received: Vec<u32>,
    }
    impl Host for Pinger {
        fn on_packet(&mut self, _now: Time, p: &[u8], _out: &mut Outbox) {
            self.received.push(u32::from_be_bytes(p[..4].try_into().unwrap()));
        }
        fn on_tick(&mut self, now: Time, out: &mut Outbox) {
            if now >= self.next {
                out.send(Dest::Upstream, self.sent.to_be_bytes().to_vec());
                self.sent += 1;
                self.next = now + Duration::from_millis(10);
            }
        }
        fn next_tick(&self) -> Option<Time> {
            (self.sent < 100).then_some(self.next)
        }
    }
    struct Echo;
    impl Host for Echo {
        fn on_packet(&mut self, _now: Time, p: &[u8], out: &mut Outbox) {
            out.send(Dest::Reply, p.to_vec());
        }
        fn on_tick(&mut self, _now: Time, _out: &mut Outbox) {}
        fn next_tick(&self) -> Option<Time> {
            None
        }
    }
    /// A switch that passes requests up and replies down (flow 0).
    struct Wire {
        up: bool,
    }
    impl DataPlane for Wire {
        fn process(&mut self, _p: &mut [u8]) -> Verdict {
            self.up = !self.up;
            if self.up {
                Verdict::Upstream { flow: 0 }
            } else {
                Verdict::Downstream { flow: 0 }
            }
        }
    }

    fn run(seed: u64, spec: LinkSpec) -> (Vec<u32>, u64, NetStats) {
        let mut sim = Sim::new(seed);
        let c = sim.add_host("client", Pinger { next: Time::ZERO, sent: 0, received: vec![] });
        let s = sim.add_host("echo", Echo);
        sim.link(c, s, spec);
        sim.set_upstream(c, s);
        sim.run_until(Time::from_secs_f64(10.0));
        (sim.host::<Pinger>(c).unwrap().received.clone(), sim.trace_hash(), sim.stats.clone())
    }

    /// A determinism failure names the first delivery where two runs part.
    #[test]
    fn two_traces_of_different_runs_part_at_their_first_different_delivery() {
        let traced = |seed: u64, spec: LinkSpec| {
            let mut sim = Sim::new(seed);
            sim.record_trace();
            let c = sim.add_host("client", Pinger { next: Time::ZERO, sent: 0, received: vec![] });
            let s = sim.add_host("echo", Echo);
            sim.link(c, s, spec);
            sim.set_upstream(c, s);
            sim.run_until(Time::from_secs_f64(2.0));
            assert_eq!(sim.trace_events().last().map(|e| e.trace), Some(sim.trace_hash()));
            sim.trace_events().to_vec()
        };
        let spec = LinkSpec { jitter: Duration::from_millis(3), ..LinkSpec::latency(Duration::from_millis(1)) };
        let (a, b) = (traced(7, spec), traced(7, spec));
        assert_eq!(a.len(), 200, "100 pings and 100 echoes");
        assert_eq!(first_difference(&a, &b), None, "one seed, one trace");
        // Another seed draws other jitter: the first delivery already lands at another time.
        let c = traced(8, spec);
        let d = first_difference(&a, &c).expect("the runs part");
        assert!(d.starts_with("delivery #0 differs: first run at "), "{d}");
        assert!(d.contains(&a[0].to_string()) && d.contains(&c[0].to_string()), "{d}");
        // A run cut short parts where it ended.
        let d = first_difference(&a, &a[..150]).expect("the runs part");
        assert!(d.starts_with("delivery #150 differs") && d.ends_with("second run no delivery (the run ended)"), "{d}");
    }

    /// A packet log holds every packet whole, with its fate, between two takes.
    #[test]
    fn the_packet_log_holds_each_packet_and_its_fate() {
        let mut sim = Sim::new(1);
        let c = sim.add_host("client", Pinger { next: Time::ZERO, sent: 0, received: vec![] });
        let s = sim.add_host("echo", Echo);
        sim.link(c, s, LinkSpec::latency(Duration::from_millis(1)));
        sim.set_upstream(c, s);
        sim.record_packets();
        sim.run_until(Time::from_secs_f64(0.0015));
        let log = sim.take_packets();
        let first = LoggedPacket {
            at: Time::from_secs_f64(0.001),
            from: c,
            to: s,
            fate: Fate::Delivered,
            bytes: log[0].bytes.clone(),
        };
        assert_eq!(log.first(), Some(&first), "the first ping reaches the echo after 1 ms");
        assert!(log.iter().all(|p| p.fate == Fate::Delivered && p.at <= sim.now()));
        assert!(sim.take_packets().is_empty(), "taken once");
        sim.crash(s);
        sim.run_until(Time::from_secs_f64(0.1));
        let log = sim.take_packets();
        let (echo, lost) = log.split_first().expect("packets after the crash");
        assert_eq!((echo.from, echo.to, echo.fate), (s, c, Fate::Delivered), "the echo in flight still arrives");
        assert!(lost.iter().all(|p| p.to == s && p.fate == Fate::NodeDown), "{log:?}");
        assert_eq!(lost.len() as u64, sim.node_stats(s).lost_while_down);
    }

    #[test]
    fn latency_is_applied_and_order_kept_without_faults() {
        let mut sim = Sim::new(1);
        let c = sim.add_host("client", Pinger { next: Time::ZERO, sent: 0, received: vec![] });
        let s = sim.add_host("echo", Echo);
        sim.link(c, s, LinkSpec::latency(Duration::from_millis(25)));
        sim.set_upstream(c, s);
        sim.run_until(Time::from_secs_f64(0.0499));
        assert!(sim.host::<Pinger>(c).unwrap().received.is_empty(), "a round trip takes 50 ms");
        sim.run_until(Time::from_secs_f64(0.05));
        assert_eq!(sim.host::<Pinger>(c).unwrap().received, vec![0]);
        sim.run_until(Time::from_secs_f64(5.0));
        assert_eq!(sim.host::<Pinger>(c).unwrap().received, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn same_seed_same_trace_and_faults_happen() {
        let spec = LinkSpec {
            latency: Duration::from_millis(5),
            jitter: Duration::from_millis(3),
            loss_probability: 0.1,
            duplicate_probability: 0.1,
            reorder_probability: 0.2,
        };
        let (a, ha, sa) = run(42, spec);
        let (b, hb, _) = run(42, spec);
        assert_eq!((a.clone(), ha), (b, hb));
        let (_, hc, _) = run(43, spec);
        assert_ne!(ha, hc);
        assert!(sa.lost > 0 && sa.duplicated > 0 && sa.reordered > 0);
        let mut sorted = a.clone();
        sorted.sort();
        assert_ne!(a, sorted, "jitter and reordering reorder deliveries");
    }

    #[test]
    fn switches_route_replies_back_along_the_path() {
        let mut sim = Sim::new(1);
        let c = sim.add_host("client", Pinger { next: Time::ZERO, sent: 0, received: vec![] });
        let sw1 = sim.add_switch("sw1", Wire { up: false });
        let sw2 = sim.add_switch("sw2", Wire { up: false });
        let s = sim.add_host("echo", Echo);
        let l = LinkSpec::latency(Duration::from_millis(1));
        sim.link(c, sw1, l);
        sim.link(sw1, sw2, l);
        sim.link(sw2, s, l);
        sim.set_upstream(c, sw1);
        sim.set_upstream(sw1, sw2);
        sim.set_upstream(sw2, s);
        sim.run_until(Time::from_secs_f64(2.0));
        assert_eq!(sim.host::<Pinger>(c).unwrap().received.len(), 100);
    }

    /// A switch that forwards every packet to port 0 when it starts with 0,
    /// multicasts to group 1 when it starts with 1, and sends to the origin
    /// when it starts with 2.
    struct Steer;
    impl DataPlane for Steer {
        fn process(&mut self, p: &mut [u8]) -> Verdict {
            match p.first() {
                Some(0) => Verdict::Port { port: 0 },
                Some(1) => Verdict::Multicast { group: 1 },
                Some(2) => Verdict::Origin,
                _ => Verdict::Drop,
            }
        }
    }
    /// Records what it receives; sends one packet upstream at time 0.
    struct Once {
        payload: Vec<u8>,
        sent: bool,
        received: Vec<Vec<u8>>,
    }
    impl Host for Once {
        fn on_packet(&mut self, _now: Time, p: &[u8], _out: &mut Outbox) {
            self.received.push(p.to_vec());
        }
        fn on_tick(&mut self, _now: Time, out: &mut Outbox) {
            self.sent = true;
            out.send(Dest::Upstream, self.payload.clone());
        }
        fn next_tick(&self) -> Option<Time> {
            (!self.sent).then_some(Time::ZERO)
        }
    }
    fn once(payload: &[u8]) -> Once {
        Once { payload: payload.to_vec(), sent: false, received: vec![] }
    }
    fn sink() -> Once {
        Once { payload: vec![], sent: true, received: vec![] }
    }

    #[test]
    fn ports_groups_and_origin_route_through_chained_switches() {
        let mut sim = Sim::new(3);
        sim.set_fabric(LinkSpec::latency(Duration::from_millis(1)));
        let client = sim.add_host("client", once(&[0, 7]));
        let a = sim.add_switch("a", Steer);
        let b = sim.add_switch("b", Steer);
        let sink = sim.add_host("sink", sink());
        sim.set_upstream(client, a);
        sim.set_port(a, 0, Some(b));
        // b turns the packet into a multicast to the sink and the origin.
        struct Rewrite;
        impl DataPlane for Rewrite {
            fn process(&mut self, p: &mut [u8]) -> Verdict {
                p[0] = 1;
                Verdict::Multicast { group: 1 }
            }
        }
        sim.crash(b);
        sim.restart_switch(b, Rewrite);
        sim.set_group(b, 1, vec![Member::Node(sink), Member::Origin]);
        sim.run_until(Time::from_secs_f64(1.0));
        assert_eq!(sim.host::<Once>(client).unwrap().received, vec![vec![1, 7]], "origin is the client, not a");
        assert_eq!(sim.host::<Once>(sink).unwrap().received, vec![vec![1, 7]]);
        assert_eq!(sim.node_stats(b).processed, 1);
    }

    #[test]
    fn a_crashed_node_loses_packets_and_timers_until_restarted() {
        let mut sim = Sim::new(1);
        let c = sim.add_host("client", Pinger { next: Time::ZERO, sent: 0, received: vec![] });
        let s = sim.add_host("echo", Echo);
        sim.link(c, s, LinkSpec::latency(Duration::from_millis(1)));
        sim.set_upstream(c, s);
        sim.run_until(Time::from_secs_f64(0.1049));
        sim.crash(s);
        sim.run_until(Time::from_secs_f64(0.5));
        let got = sim.host::<Pinger>(c).unwrap().received.len();
        assert_eq!(got, 11, "pings 0..=10 answered before the crash");
        assert!(sim.node_stats(s).lost_while_down >= 39);
        sim.restart_host(s, Echo);
        sim.run_until(Time::from_secs_f64(2.0));
        let received = &sim.host::<Pinger>(c).unwrap().received;
        assert_eq!(received.len(), 11 + 50, "answers resume after the restart");
        sim.crash(c);
        let sent = sim.host::<Pinger>(c).unwrap().sent;
        sim.run_until(Time::from_secs_f64(3.0));
        assert_eq!(sim.host::<Pinger>(c).unwrap().sent, sent, "a crashed host's timers do not fire");
    }

    #[test]
    fn nodes_sharing_a_server_queue_behind_each_other() {
        let mut sim = Sim::new(1);
        let a = sim.add_switch("a", Steer);
        let b = sim.add_switch("b", Steer);
        let sink = sim.add_host("sink", sink());
        sim.set_fabric(LinkSpec::latency(Duration::from_millis(1)));
        for (i, sw) in [a, b].into_iter().enumerate() {
            let c = sim.add_host(&format!("c{i}"), once(&[0, i as u8]));
            sim.set_upstream(c, sw);
            sim.set_port(sw, 0, Some(sink));
        }
        let model = ServiceModel { per_packet: Duration::from_micros(100), per_byte_ns: 0.0, queue_packets: 8 };
        sim.set_service(a, model);
        sim.share_service(b, a);
        // Both packets arrive at 1 ms; one server takes 100 us for each.
        sim.run_until(Time::from_secs_f64(0.002150));
        assert_eq!(sim.host::<Once>(sink).unwrap().received.len(), 1, "the second waits for the first");
        sim.run_until(Time::from_secs_f64(0.002201));
        assert_eq!(sim.host::<Once>(sink).unwrap().received.len(), 2);
    }

    #[test]
    fn a_service_model_serialises_packets_and_drops_beyond_its_queue() {
        let mut sim = Sim::new(1);
        let sw = sim.add_switch("sw", Steer);
        let sink = sim.add_host("sink", sink());
        let mut clients = vec![];
        for i in 0..5 {
            let c = sim.add_host(&format!("c{i}"), once(&[0, i]));
            sim.link(c, sw, LinkSpec::latency(Duration::from_millis(1)));
            sim.set_upstream(c, sw);
            clients.push(c);
        }
        sim.link(sw, sink, LinkSpec::latency(Duration::from_millis(1)));
        sim.set_port(sw, 0, Some(sink));
        // 10 us per packet + 1 us per byte; room for 3 packets.
        sim.set_service(
            sw,
            ServiceModel { per_packet: Duration::from_micros(10), per_byte_ns: 1000.0, queue_packets: 3 },
        );
        sim.run_until(Time::from_secs_f64(0.001011));
        assert!(sim.host::<Once>(sink).unwrap().received.is_empty(), "service takes 12 us");
        sim.run_until(Time::from_secs_f64(1.0));
        assert_eq!(sim.host::<Once>(sink).unwrap().received.len(), 3);
        assert_eq!(sim.node_stats(sw).queue_drops, 2);
        assert_eq!(sim.stats.queue_drops, 2);
        // Busy time: the three packets served, 12 us each; dropped ones cost nothing.
        assert_eq!(sim.node_stats(sw).busy, Duration::from_micros(36));
        assert_eq!(sim.node_stats(sink).busy, Duration::ZERO);
    }
}
