//! The chain key-value store on UDP: NetCRAQ or NetChain switches on
//! loopback sockets, their control plane in a thread, and load clients.
//!
//! Every chain switch is a software switch ([`crate::switch`]) running a
//! [`ChainNode`]; the switches know each other as switch peers, so the
//! origin (the client) travels with forwarded packets and the tail answers
//! the client directly. The control plane ([`ChainControl`]) runs in its own
//! thread: every heartbeat interval it polls each switch over the in-process
//! management channel (a switch that was killed does not answer; one that
//! was restarted answers unconfigured), ticks, and applies its decisions as
//! table writes ([`SwitchTables`]) and register copies, the way a P4
//! controller talks to its switches over Thrift. Clients learn the chain's
//! order from a shared view the control plane updates.
//!
//! With `--auth-key` ([`LiveChainConfig::auth`]) every datagram between
//! chain nodes (writes down the chain, reads forwarded to the tail,
//! NetCRAQ's ACKs) carries the keys' MAC trailer and one from a node's
//! address without it is refused ([`crate::auth`], [`chain_auth`]). The
//! keys cover the nodes' addresses only: clients carry no key, their
//! requests arrive unsealed and meet the admission rules as clients' (a
//! write only at the head, never an ACK), and replies to them go unsealed.

pub mod manage;

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use innet_chain::control::{Action, ChainControl, ControlConfig, Layout, NodeReport};
use innet_chain::deploy::{self, ChainRole};
use innet_chain::netcraq::{OBJECTS_DEFAULT, VERSIONS_DEFAULT};
use innet_chain::node::ChainNode;
use innet_chain::workload::LoadClient;
use innet_chain::Protocol;
use innet_core::auth::AuthKeys;
use innet_core::deploy::DataPlaneAt;
use innet_core::{Host, Member, Outbox, Time};
use innet_wire::netchain::key_from_u32;

use crate::auth::PeerAuth;
use crate::clock;
use crate::deploy::Place;
use crate::ports::bind;
use crate::switch::{spawn_switch_with_tables, SwitchNode, SwitchOptions, SwitchTables};
use crate::Stop;

#[derive(Clone, Debug)]
pub struct LiveChainConfig {
    pub protocol: Protocol,
    pub nodes: usize,
    /// Where node `i` listens: `base` with port `base.port() + i`, or any
    /// free port when `base` has port 0.
    pub base: SocketAddr,
    pub objects: usize,
    pub versions: usize,
    /// NetChain keys installed at start (`0..keys`).
    pub keys: u32,
    pub control: ControlConfig,
    /// `--auth-key`: seals and checks every datagram between the nodes
    /// ([`chain_auth`]).
    pub auth: Option<AuthKeys>,
}

impl LiveChainConfig {
    pub fn new(protocol: Protocol, nodes: usize) -> LiveChainConfig {
        LiveChainConfig {
            protocol,
            nodes,
            base: "127.0.0.1:0".parse().expect("literal"),
            objects: OBJECTS_DEFAULT,
            versions: VERSIONS_DEFAULT,
            keys: 64,
            control: ControlConfig {
                heartbeat_interval: Duration::from_millis(5),
                failure_timeout: Duration::from_millis(50),
                drain: Duration::from_millis(20),
                full_heartbeats: 3,
            },
            auth: None,
        }
    }
}

/// The chain's order as clients see it, with a version number.
pub type ChainView = Arc<Mutex<(u64, Vec<usize>)>>;

struct Shared {
    cfg: LiveChainConfig,
    addrs: Vec<SocketAddr>,
    switches: Vec<Option<SwitchNode<ChainNode>>>,
    layout: Layout,
    view: ChainView,
    /// The keys over the nodes' addresses (`cfg.auth`).
    auth: Option<Arc<PeerAuth>>,
    stop: Stop,
}

impl Shared {
    fn tables(&self, i: usize) -> SwitchTables {
        layout_tables(self.cfg.protocol, &self.layout, &self.addrs, i)
    }

    fn apply(&mut self, layout: Layout) {
        self.layout = layout;
        for i in head_last(&self.layout, self.addrs.len()) {
            let t = self.layout.tables(i);
            let tables = self.tables(i);
            if let Some(sw) = &self.switches[i] {
                sw.with_program(|p| p.configure(&t, self.addrs.len()));
                sw.with_tables(|x| *x = tables);
            }
        }
    }

    fn copy(&mut self, from: usize, to: &[usize]) -> bool {
        let Some(Some(src)) = self.switches.get(from) else { return false };
        let snap = src.with_program(|p| p.snapshot());
        let mut all = true;
        for t in to {
            match self.switches.get(*t) {
                Some(Some(sw)) => sw.with_program(|p| p.load(&snap)),
                _ => all = false,
            }
        }
        all
    }

    /// Starts chain switch `i`, fresh, on `socket`.
    fn spawn(&self, i: usize, socket: UdpSocket) -> io::Result<SwitchNode<ChainNode>> {
        let c = &self.cfg;
        let node = fresh_node(c.protocol, i, c.objects, c.versions, c.keys)?;
        let (name, tables) = (format!("chain-node{i}"), self.tables(i));
        spawn_chain_switch(&name, node, socket, tables, self.auth.clone(), &self.stop)
    }
}

/// A fresh, unconfigured chain switch `i`; NetChain's keys `0..keys`
/// installed.
pub fn fresh_node(protocol: Protocol, i: usize, objects: usize, versions: usize, keys: u32) -> io::Result<ChainNode> {
    let mut node = ChainNode::new(protocol, i, objects, versions);
    if let ChainNode::Chain(p) = &mut node {
        for k in 0..keys {
            p.install_key(key_from_u32(k)).ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidInput, format!("{keys} keys do not fit {objects} objects"))
            })?;
        }
    }
    Ok(node)
}

/// A chain switch's tables before the layout's ports and groups: every chain
/// node (`addrs`, by chain index) as a switch peer, known by its address
/// and port, so that the node takes writes only from its predecessor and
/// ACKs only from the tail (`innet_chain::netcraq`).
pub fn chain_peer_tables(addrs: &[SocketAddr]) -> SwitchTables {
    SwitchTables {
        switch_peers: addrs.iter().copied().collect(),
        peer_ids: addrs.iter().enumerate().map(|(i, a)| (*a, i as u16)).collect(),
        ..Default::default()
    }
}

/// Chain switch `i`'s tables under `layout`, the chain's switches at
/// `addrs` (by chain index): [`chain_peer_tables`] and the layout's ports
/// and groups ([`deploy::node_tables`]) resolved to addresses.
pub fn layout_tables(protocol: Protocol, layout: &Layout, addrs: &[SocketAddr], i: usize) -> SwitchTables {
    let (ports, groups) = deploy::node_tables(protocol, layout, addrs.len(), i);
    let mut tables = chain_peer_tables(addrs);
    for (p, to) in ports {
        tables.set_port(p, Some(addrs[to]));
    }
    for (g, members) in groups {
        let members = members
            .into_iter()
            .map(|m| match m {
                Member::Node(x) => Member::Node(addrs[x]),
                Member::Origin => Member::Origin,
            })
            .collect();
        tables.groups.insert(g, members);
    }
    tables
}

/// `--auth-key` for a chain whose nodes listen at `nodes`: the keys cover
/// those addresses only, so clients (unkeyed) are served as before while
/// a datagram from a node's address must carry the trailer.
pub fn chain_auth(keys: Option<&AuthKeys>, nodes: &[SocketAddr]) -> Option<Arc<PeerAuth>> {
    keys.map(|k| PeerAuth::peers(k.clone(), nodes.iter().copied()))
}

/// Runs `node` as a software switch on `socket` with `tables`; `auth`
/// seals and checks what it exchanges with the other nodes.
pub fn spawn_chain_switch(
    name: &str,
    node: ChainNode,
    socket: std::net::UdpSocket,
    tables: SwitchTables,
    auth: Option<Arc<PeerAuth>>,
    stop: &Stop,
) -> io::Result<SwitchNode<ChainNode>> {
    // Packets "from upstream" are not used by chain nodes: the switch's
    // own address never sends to it.
    let opts = SwitchOptions { auth, ..SwitchOptions::new(socket.local_addr()?) };
    spawn_switch_with_tables(name, node, socket, opts, tables, stop)
}

/// A running chain.
pub struct LiveChain {
    shared: Arc<Mutex<Shared>>,
    control: Option<std::thread::JoinHandle<ChainControl>>,
    stop: Stop,
}

impl LiveChain {
    /// Starts `cfg.nodes` switches and the control plane: the chain's
    /// deployment ([`deploy::deployment`]) through
    /// [`crate::deploy::instantiate`]'s two steps, the control plane in a
    /// thread of this process reaching the switches in memory.
    pub fn start(cfg: LiveChainConfig, stop: &Stop) -> io::Result<LiveChain> {
        let stop = stop.child();
        let d = deploy::deployment(cfg.protocol, cfg.nodes, 0, Duration::ZERO, Duration::ZERO);
        let places: Vec<Place> = d
            .nodes
            .iter()
            .map(|n| match n.role {
                ChainRole::Node { index } => {
                    let mut a = cfg.base;
                    if a.port() != 0 {
                        a.set_port(a.port() + index as u16);
                    }
                    Place::here(a)
                }
                // The control plane is the thread below.
                ChainRole::Control | ChainRole::Client => Place::Unbound,
            })
            .collect();
        let bound = crate::deploy::bind(&d, &places)?;
        let addrs: Vec<SocketAddr> = deploy::chain_nodes(&d).into_iter().map(|i| bound.addrs[i]).collect();
        let (control, layout) = ChainControl::new(cfg.control.clone(), cfg.nodes, clock::now());
        let view = Arc::new(Mutex::new((0, layout.chain.clone())));
        let auth = chain_auth(cfg.auth.as_ref(), &addrs);
        let mut sh = Shared {
            cfg,
            addrs: addrs.clone(),
            switches: vec![],
            layout: layout.clone(),
            view,
            auth,
            stop: stop.clone(),
        };
        // A chain node's index is its chain index (`deploy::validate`).
        let started = bound.start(&d, DataPlaneAt::Switch, &stop, |slot| sh.spawn(slot.ix, slot.socket))?;
        sh.switches = started.into_iter().map(|(_, sw)| Some(sw)).collect();
        debug_assert_eq!(sh.switches.len(), addrs.len(), "every chain node started");
        sh.apply(layout);
        let shared = Arc::new(Mutex::new(sh));
        let (s2, st2) = (shared.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("innet-chain-control".into())
            .spawn(move || control_loop(control, &s2, &st2))?;
        Ok(LiveChain { shared, control: Some(thread), stop })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn addrs(&self) -> Vec<SocketAddr> {
        self.lock().addrs.clone()
    }

    pub fn view(&self) -> ChainView {
        self.lock().view.clone()
    }

    /// The chain's current order, head first.
    pub fn members(&self) -> Vec<usize> {
        self.lock().layout.chain.clone()
    }

    /// Stops node `i`'s switch (its socket closes).
    pub fn kill(&self, i: usize) -> io::Result<()> {
        let sw = self.lock().switches[i].take();
        match sw {
            Some(sw) => sw.shutdown(),
            None => Ok(()),
        }
    }

    /// Starts node `i` again on its address, fresh and unconfigured.
    pub fn restart(&self, i: usize) -> io::Result<()> {
        let mut sh = self.lock();
        if sh.switches[i].is_some() {
            return Ok(());
        }
        let addr = sh.addrs[i];
        let sw = sh.spawn(i, bind(addr)?)?;
        sh.switches[i] = Some(sw);
        Ok(())
    }

    /// A reader of node `i`'s program and runtime counters for as long as
    /// the chain runs (`None` while the node is down), e.g. for a metrics
    /// endpoint.
    pub fn counters_reader(
        &self,
    ) -> impl Fn(usize) -> Option<(crate::host::CounterList, crate::SwitchStats)> + Send + Sync + 'static {
        let shared = self.shared.clone();
        move |i| {
            let sh = shared.lock().unwrap_or_else(|e| e.into_inner());
            let sw = sh.switches.get(i)?.as_ref()?;
            let st = sw.state().lock().unwrap_or_else(|e| e.into_inner());
            Some((innet_core::Counters::counters(&st.program), st.stats.clone()))
        }
    }

    /// Runs `f` on node `i`'s program, if it runs.
    pub fn with_node<T>(&self, i: usize, f: impl FnOnce(&mut ChainNode) -> T) -> Option<T> {
        self.lock().switches[i].as_ref().map(|s| s.with_program(f))
    }

    /// Stops everything; returns the control plane (its log and stats).
    pub fn shutdown(mut self) -> io::Result<ChainControl> {
        self.stop.stop();
        let control = self.control.take().expect("joined once");
        let c = control.join().map_err(|_| io::Error::other("control plane panicked"))?;
        let switches: Vec<_> = self.lock().switches.drain(..).flatten().collect();
        for s in switches {
            s.shutdown()?;
        }
        Ok(c)
    }
}

/// The chain switches as a control plane reaches them: in this process
/// ([`LiveChain`]), over UDP ([`manage::RemoteNodes`]), or as XDP programs'
/// maps.
pub trait ChainNodes {
    fn count(&self) -> usize;
    /// Node `i`'s heartbeat answer, `None` if it does not answer (down).
    fn report(&mut self, i: usize) -> Option<NodeReport>;
    /// Writes every node's registers and tables for `layout`, the head's
    /// last (the node where writes enter acts on a layout only once the
    /// others hold it). False if a node of `layout.chain` did not take it.
    fn apply(&mut self, layout: &Layout) -> bool;
    /// Copies node `from`'s committed state into each of `to`. False if
    /// the state could not be read, or a node of `to` did not take it.
    fn copy(&mut self, from: usize, to: &[usize]) -> bool;
}

/// The order in which `apply` writes `nodes` nodes for `layout`: every
/// node but the head, then the head.
pub fn head_last(layout: &Layout, nodes: usize) -> impl Iterator<Item = usize> + '_ {
    let head = layout.chain.first().copied();
    (0..nodes).filter(move |i| Some(*i) != head).chain(head.filter(|h| *h < nodes))
}

/// One control-plane step at `now`: a heartbeat from every node that
/// answers, the control plane's tick, its actions applied; the chain order
/// clients follow is published to `view`.
pub fn control_step(control: &mut ChainControl, nodes: &mut dyn ChainNodes, view: &ChainView, now: Time) {
    let mut actions = vec![];
    for i in 0..nodes.count() {
        if let Some(report) = nodes.report(i) {
            control.on_heartbeat(now, i, report, &mut actions);
        }
    }
    control.on_tick(now, &mut actions);
    // After a critical action that did not land, the rest of the step is
    // not applied: the control plane hears of every action it skipped.
    let mut stopped = false;
    for a in actions {
        let landed = !stopped
            && match &a {
                Action::Apply(l) => nodes.apply(l),
                Action::Copy { from, to } => nodes.copy(*from, to),
            };
        if landed {
            if let Action::Apply(l) = &a {
                let mut v = view.lock().unwrap_or_else(|e| e.into_inner());
                v.0 += 1;
                v.1 = l.chain.clone();
            }
        } else {
            stopped |= a.is_critical();
            control.on_failed(now, &a);
        }
    }
}

impl ChainNodes for Shared {
    fn count(&self) -> usize {
        self.switches.len()
    }
    fn report(&mut self, i: usize) -> Option<NodeReport> {
        match &self.switches[i] {
            Some(sw) if !sw.is_finished() => Some(sw.with_program(|p| p.report())),
            _ => None,
        }
    }
    fn apply(&mut self, layout: &Layout) -> bool {
        Shared::apply(self, layout.clone());
        layout.chain.iter().all(|i| self.switches.get(*i).is_some_and(|s| s.is_some()))
    }
    fn copy(&mut self, from: usize, to: &[usize]) -> bool {
        Shared::copy(self, from, to)
    }
}

fn control_loop(mut control: ChainControl, shared: &Mutex<Shared>, stop: &Stop) -> ChainControl {
    while !stop.is_stopped() {
        std::thread::sleep(control.config.heartbeat_interval);
        let mut sh = shared.lock().unwrap_or_else(|e| e.into_inner());
        let view = sh.view.clone();
        control_step(&mut control, &mut *sh, &view, clock::now());
    }
    control
}

/// A [`LoadClient`] that follows a [`ChainView`] (the control plane's
/// chain order) before every step.
pub struct ViewedClient {
    pub load: LoadClient,
    view: ChainView,
    seen: u64,
}

impl ViewedClient {
    pub fn new(load: LoadClient, view: ChainView) -> ViewedClient {
        ViewedClient { load, view, seen: u64::MAX }
    }

    fn follow(&mut self) {
        let v = self.view.lock().unwrap_or_else(|e| e.into_inner());
        if v.0 != self.seen {
            self.seen = v.0;
            self.load.client.set_chain(v.1.clone());
        }
    }
}

impl Host for ViewedClient {
    fn on_packet(&mut self, now: Time, packet: &[u8], out: &mut Outbox) {
        self.follow();
        self.load.on_packet(now, packet, out);
    }
    fn on_tick(&mut self, now: Time, out: &mut Outbox) {
        self.follow();
        self.load.on_tick(now, out);
    }
    fn next_tick(&self) -> Option<Time> {
        // Look at the view at least every few milliseconds.
        let soon = clock::now() + Duration::from_millis(5);
        Some(self.load.next_tick().map_or(soon, |t| t.min(soon)))
    }
}

/// A live failure drill: clients read and write while node `victim` is
/// killed, then restarted.
#[derive(Clone, Debug)]
pub struct DrillConfig {
    pub chain: LiveChainConfig,
    pub victim: usize,
    pub clients: u32,
    pub write_ratio: f64,
    pub keys: u32,
    pub kill_after: Duration,
    pub restart_after: Duration,
    pub run_after_restart: Duration,
    pub client_timeout: Duration,
    pub seed: u64,
}

impl DrillConfig {
    /// The middle node of `nodes` (node 1 of 4) fails after 1 s.
    pub fn new(protocol: Protocol, nodes: usize) -> DrillConfig {
        assert!(nodes >= 3, "a middle node needs three nodes");
        DrillConfig {
            chain: LiveChainConfig::new(protocol, nodes),
            victim: (nodes - 1) / 2,
            clients: 2,
            write_ratio: 0.3,
            keys: 8,
            kill_after: Duration::from_secs(1),
            restart_after: Duration::from_millis(500),
            run_after_restart: Duration::from_secs(1),
            client_timeout: Duration::from_millis(50),
            seed: 5,
        }
    }
}

/// What a drill saw.
pub struct DrillReport {
    pub addrs: Vec<SocketAddr>,
    /// The chain right after the failure was handled, and at the end.
    pub members_after_kill: Vec<usize>,
    pub members_at_end: Vec<usize>,
    /// Every node's values of keys `0..keys` at the end.
    pub values: Vec<Vec<innet_wire::netcraq::Value>>,
    /// Longest time between two completions of one client.
    pub interruption: Duration,
    pub operations_after_kill: usize,
    pub loads: Vec<LoadClient>,
    pub control: ChainControl,
}

/// A drill's load clients: every runtime's drill runs the same ones.
#[derive(Clone, Debug)]
pub struct DrillLoad {
    pub protocol: Protocol,
    /// Client `i` reads first from node `(victim + i) % nodes`.
    pub victim: usize,
    pub clients: u32,
    pub write_ratio: f64,
    pub keys: u32,
    pub client_timeout: Duration,
    pub seed: u64,
    /// Chain node `i`'s UDP address (the clients' port `i`).
    pub addrs: Vec<SocketAddr>,
    /// NetChain addresses of the nodes, if not `node_addr(i)`.
    pub chain_addrs: Option<Vec<innet_wire::netchain::Addr>>,
}

/// Starts `load.clients` recording load clients (1 ms think time, attempt
/// stamps, histories and completions kept) that follow `view` and run
/// from `window.0` to `window.1`, each on a socket from `bind`, in threads
/// named `{name}{i}`.
pub fn spawn_drill_clients(
    load: &DrillLoad,
    name: &str,
    view: &ChainView,
    window: (Time, Time),
    stop: &Stop,
    bind: impl Fn() -> io::Result<std::net::UdpSocket>,
) -> io::Result<Vec<crate::NodeHandle<LoadClient>>> {
    use innet_chain::client::{ChainClient, ClientConfig};
    use innet_chain::workload::Workload;
    use innet_core::rng::Rng;

    let nodes = load.addrs.len();
    let mut rng = Rng::new(load.seed);
    let mut clients = vec![];
    for i in 0..load.clients {
        let mut cc = ClientConfig::new(load.protocol, i, nodes);
        if let Some(a) = &load.chain_addrs {
            cc.addrs = a.clone();
        }
        cc.near = (load.victim + i as usize) % nodes;
        cc.timeout = load.client_timeout;
        cc.stamp_attempts = true;
        let w = Workload {
            write_ratio: load.write_ratio,
            keys: load.keys,
            think: Duration::from_millis(1),
            start: window.0,
            stop: window.1,
        };
        let mut client = LoadClient::new(ChainClient::new(cc).with_history(), w, rng.fork());
        client.completions = Some(vec![]);
        let view = view.clone();
        let opts = crate::HostOptions { ports: load.addrs.clone(), ..Default::default() };
        let h = crate::spawn_host(
            &format!("{name}{i}"),
            bind()?,
            opts,
            stop,
            move || ViewedClient::new(client, view),
            |c, _| c.load,
        )?;
        clients.push(h);
    }
    Ok(clients)
}

/// Runs the drill (real time: about `kill_after + restart_after +
/// run_after_restart`).
pub fn run_drill(cfg: &DrillConfig, stop: &Stop) -> io::Result<DrillReport> {
    let protocol = cfg.chain.protocol;
    let chain = LiveChain::start(cfg.chain.clone(), stop)?;
    let addrs = chain.addrs();
    let t0 = clock::now();
    let end = t0 + cfg.kill_after + cfg.restart_after + cfg.run_after_restart;
    let load = DrillLoad {
        protocol,
        victim: cfg.victim,
        clients: cfg.clients,
        write_ratio: cfg.write_ratio,
        keys: cfg.keys,
        client_timeout: cfg.client_timeout,
        seed: cfg.seed,
        addrs: addrs.clone(),
        chain_addrs: None,
    };
    let bind_client = || bind("127.0.0.1:0".parse().expect("literal"));
    let clients = spawn_drill_clients(&load, "chain-client", &chain.view(), (t0, end), stop, bind_client)?;
    std::thread::sleep(cfg.kill_after);
    chain.kill(cfg.victim)?;
    let killed = clock::now();
    std::thread::sleep(cfg.restart_after);
    let members_after_kill = chain.members();
    chain.restart(cfg.victim)?;
    std::thread::sleep(end.since(clock::now()));
    let mut loads = vec![];
    for c in clients {
        loads.push(c.shutdown()?);
    }
    // Let the last writes and ACKs land before reading the registers.
    std::thread::sleep(Duration::from_millis(100));
    let members_at_end = chain.members();
    let values = (0..cfg.chain.nodes).map(|i| chain.with_node(i, |n| n.values(cfg.keys)).unwrap_or_default()).collect();
    let interruption = loads.iter().map(|l| l.stats.max_gap).max().unwrap_or_default();
    let operations_after_kill = loads
        .iter()
        .map(|l| l.completions.as_ref().map_or(0, |c| c.iter().filter(|c| c.finished > killed).count()))
        .sum();
    let control = chain.shutdown()?;
    Ok(DrillReport {
        addrs,
        members_after_kill,
        members_at_end,
        values,
        interruption,
        operations_after_kill,
        loads,
        control,
    })
}

/// Runs one operation of a [`innet_chain::client::ChainClient`] to
/// completion, then stops its loop.
struct OneOp {
    client: innet_chain::client::ChainClient,
    start: Option<(bool, u32, innet_wire::netcraq::Value)>,
    done: Option<innet_chain::client::Completion>,
    stop: Stop,
}

impl Host for OneOp {
    fn on_packet(&mut self, now: Time, p: &[u8], _out: &mut Outbox) {
        if self.done.is_none() {
            self.done = self.client.on_packet(now, p);
            if self.done.is_some() {
                self.stop.stop();
            }
        }
    }
    fn on_tick(&mut self, now: Time, out: &mut Outbox) {
        match self.start.take() {
            Some((true, k, v)) => self.client.put(now, k, v),
            Some((false, k, _)) => self.client.get(now, k),
            None => {}
        }
        self.client.on_tick(now, out);
    }
    fn next_tick(&self) -> Option<Time> {
        if self.done.is_some() {
            return None;
        }
        match self.start {
            Some(_) => Some(Time::ZERO),
            None => self.client.next_tick(),
        }
    }
}

/// One get (`put` `None`) or put of `key` against the chain whose nodes
/// (head first) are `nodes`, reads going first to node `near`, resending
/// after `timeout`; `None` if nothing answered within `deadline`.
pub fn run_one(
    protocol: Protocol,
    nodes: &[SocketAddr],
    near: usize,
    key: u32,
    put: Option<innet_wire::netcraq::Value>,
    timeout: Duration,
    deadline: Duration,
) -> io::Result<Option<innet_chain::client::Completion>> {
    use innet_chain::client::{ChainClient, ClientConfig};
    let mut cfg = ClientConfig::new(protocol, std::process::id(), nodes.len());
    cfg.near = near;
    cfg.timeout = timeout;
    let stop = Stop::new();
    let start = Some((put.is_some(), key, put.unwrap_or(innet_wire::netcraq::Value::ZERO)));
    let host = OneOp { client: ChainClient::new(cfg), start, done: None, stop: stop.clone() };
    let socket = bind(crate::txn::bind_addr_for(nodes[0]))?;
    let opts = crate::HostOptions { ports: nodes.to_vec(), ..Default::default() };
    let mut hosts = [host];
    crate::run_hosts(&mut hosts, vec![(socket, opts)], &stop, Some(clock::now() + deadline))?;
    let [host] = hosts;
    Ok(host.done)
}
