//! The transaction service on the live runtime: store and switch nodes, load
//! clients, and single transactions.
//!
//! A store takes packets only from its downstream peers when it is given
//! them ([`StorePeers`]: the switches in front of it, or the clients that
//! send to it directly; a deployment says who): a request a switch aborted,
//! sent straight to the store from anywhere else, is refused
//! (`not_a_downstream_peer`) instead of committed (issue 21). [`LocalTxn`]
//! gives harnesses that must reach the store itself (loading a database,
//! reading it back, asking its CPU use) a socket of their own that the store
//! counts among its peers ([`LocalTxn::operator`]).
//!
//! `--auth-key` ([`crate::auth`]): the service's nodes (store, switches)
//! seal every datagram they send each other and refuse one from a node's
//! address that does not check; the keys cover the nodes' addresses only,
//! so the Gotthard reference clients, which cannot carry a MAC, still send
//! and receive unsealed datagrams and meet the admission rules as clients.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use innet_core::auth::AuthKeys;
use innet_core::deploy::DataPlaneAt;
use innet_core::rng::Rng;
use innet_core::{Counters, Host, Outbox, Time};
use innet_storage::RedbBackend;
use innet_txn::client::Completed;
use innet_txn::deploy::{SwitchSpec, TxnRole};
use innet_txn::store::{Backend, MemBackend, StoreCounters};
use innet_txn::switch::CACHE_SLOTS_DEFAULT;
use innet_txn::workload::{LoadClient, LoadStats, Workload};
use innet_txn::{ClientConfig, Mode, Txn, TxnClient, TxnStore, TxnSwitch};

use crate::auth::PeerAuth;
use crate::clock;
use crate::deploy::{reachable, Place, Slot};
use crate::host::{run_host, run_hosts, spawn_host_counted, Admission, HostOptions, HostStats, NodeHandle};
use crate::switch::{spawn_switch, SwitchNode, SwitchOptions};
use crate::Stop;

pub use crate::ports::bind;

/// What a stopped store reports.
#[derive(Clone, Debug)]
pub struct StoreReport {
    pub counters: StoreCounters,
    pub net: HostStats,
}

pub type StoreNode = NodeHandle<StoreReport>;

/// Where a store keeps its data.
#[derive(Clone, Debug, Default)]
pub enum StoreData {
    /// In memory: lost when the process ends.
    #[default]
    Memory,
    /// Durable, in a redb database in this directory ([`RedbBackend`]).
    Dir(PathBuf),
    /// As `Dir`, keeping every decision too
    /// ([`RedbBackend::with_decision_log`]; `innet chaos txn` checks them).
    Recorded(PathBuf),
}

/// Who may send to a store: the addresses of its downstream peers, or
/// `None` for anyone (a store the network lets only its switch reach, as on
/// the XDP testbed, where requests keep their clients' addresses; or one
/// the reference clients use directly).
pub type StorePeers = Option<Vec<SocketAddr>>;

/// Who may send to a store, and the keys of its links.
#[derive(Clone, Debug, Default)]
pub struct StoreAccess {
    pub peers: StorePeers,
    /// `--auth-key`: what the store sends to the addresses the keys cover
    /// is sealed, what comes from them must be.
    pub auth: Option<Arc<PeerAuth>>,
}

impl StoreAccess {
    /// Only `peers` may send (no keys).
    pub fn peers(peers: StorePeers) -> StoreAccess {
        StoreAccess { peers, auth: None }
    }
}

/// The admission rule of a store whose downstream peers are `peers`.
pub fn store_admission(peers: Vec<SocketAddr>) -> Admission {
    Admission::new(move |from, _| if peers.contains(&from) { Ok(()) } else { Err("not_a_downstream_peer") })
}

/// Starts a transaction store on `listen` in its own thread.
pub fn spawn_store(name: &str, listen: SocketAddr, data: &StoreData, stop: &Stop) -> io::Result<StoreNode> {
    spawn_store_delayed(name, listen, data, Duration::ZERO, false, StoreAccess::default(), stop)
}

/// As [`spawn_store`], emulating a one-way delay `link_delay` on the store's
/// access link in both directions (WAN experiments where the switch is a
/// kernel data plane and cannot delay packets itself).
pub fn spawn_store_delayed(
    name: &str,
    listen: SocketAddr,
    data: &StoreData,
    link_delay: Duration,
    allow_reset: bool,
    access: StoreAccess,
    stop: &Stop,
) -> io::Result<StoreNode> {
    spawn_store_on(name, bind(listen)?, data, link_delay, allow_reset, access, stop)
}

/// As [`spawn_store_delayed`], on a socket the caller bound. `allow_reset`:
/// a request with the `reset` flag clears the store
/// ([`TxnStore::with_allow_reset`]); `access`: who may send to it.
pub fn spawn_store_on(
    name: &str,
    socket: UdpSocket,
    data: &StoreData,
    link_delay: Duration,
    allow_reset: bool,
    access: StoreAccess,
    stop: &Stop,
) -> io::Result<StoreNode> {
    // Open the database here, so that errors are reported to the caller.
    let redb = match data {
        StoreData::Memory => None,
        StoreData::Dir(dir) => Some(RedbBackend::open(dir).map_err(io::Error::other)?),
        StoreData::Recorded(dir) => {
            Some(RedbBackend::open(dir).and_then(RedbBackend::with_decision_log).map_err(io::Error::other)?)
        }
    };
    spawn_host_counted(
        name,
        socket,
        HostOptions {
            admit: access.peers.map(store_admission),
            auth: access.auth,
            ..HostOptions::default().with_delay(link_delay)
        },
        stop,
        move || {
            let backend: Box<dyn Backend + Send> = match redb {
                Some(b) => Box::new(b),
                None => Box::new(MemBackend::default()),
            };
            TxnStore::new(backend).with_allow_reset(allow_reset)
        },
        |store| store.counters.counters(),
        |store, net| StoreReport { counters: store.counters.clone(), net },
    )
}

/// Configuration of a transaction switch node.
#[derive(Clone, Debug)]
pub struct SwitchConfig {
    pub mode: Mode,
    pub cache_slots: usize,
    /// One-way switch <-> store delay, emulated by the switch.
    pub store_delay: Duration,
    /// One-way switch <-> clients delay, emulated by the switch (leave zero
    /// when the clients emulate their own link).
    pub client_delay: Duration,
    /// `--auth-key`: the keys and the addresses they cover (the store or
    /// next switch up, other switches), never the clients'.
    pub auth: Option<Arc<PeerAuth>>,
}

impl SwitchConfig {
    pub fn new(mode: Mode) -> SwitchConfig {
        SwitchConfig {
            mode,
            cache_slots: CACHE_SLOTS_DEFAULT,
            store_delay: Duration::ZERO,
            client_delay: Duration::ZERO,
            auth: None,
        }
    }
    pub fn validate(&self) -> Result<(), String> {
        if self.cache_slots < innet_core::table::WAYS || !self.cache_slots.is_power_of_two() {
            return Err(format!(
                "cache slots {} must be a power of two >= {}",
                self.cache_slots,
                innet_core::table::WAYS
            ));
        }
        Ok(())
    }
}

/// Starts a transaction switch on `listen`, in front of the store at `upstream`.
pub fn spawn_txn_switch(
    name: &str,
    listen: SocketAddr,
    upstream: SocketAddr,
    cfg: &SwitchConfig,
    stop: &Stop,
) -> io::Result<SwitchNode<TxnSwitch>> {
    spawn_txn_switch_on(name, bind(listen)?, upstream, cfg, stop)
}

/// As [`spawn_txn_switch`], on a socket the caller bound.
pub fn spawn_txn_switch_on(
    name: &str,
    socket: UdpSocket,
    upstream: SocketAddr,
    cfg: &SwitchConfig,
    stop: &Stop,
) -> io::Result<SwitchNode<TxnSwitch>> {
    cfg.validate().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let program = TxnSwitch::new(cfg.mode, cfg.cache_slots, innet_txn::switch::CLIENT_SLOTS_DEFAULT);
    let opts = SwitchOptions {
        auth: cfg.auth.clone(),
        ..SwitchOptions::new(upstream).with_delays(cfg.store_delay, cfg.client_delay)
    };
    spawn_switch(name, program, socket, opts, stop)
}

/// A store and a switch started together in this process.
#[derive(Clone, Debug)]
pub struct LocalConfig {
    pub switch: SwitchConfig,
    pub data: StoreData,
    pub store_listen: SocketAddr,
    pub switch_listen: SocketAddr,
    /// The store honours the `reset` flag.
    pub allow_reset: bool,
    /// Clients may also send to the store directly: it takes requests from
    /// anyone, as a store with no switch in front does. Off by default:
    /// then only the switch and [`LocalTxn::operator`] reach it, so a
    /// request the switch aborted is never committed by sending it there.
    pub store_clients: bool,
    /// `--auth-key`: switch and store seal and check what they send each
    /// other (clients and the operator socket stay unsealed).
    pub auth: Option<AuthKeys>,
}

impl LocalConfig {
    /// Loopback, ephemeral ports, in-memory store, no delays.
    pub fn new(mode: Mode) -> LocalConfig {
        let any = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0);
        LocalConfig {
            switch: SwitchConfig::new(mode),
            data: StoreData::Memory,
            store_listen: any,
            switch_listen: any,
            allow_reset: false,
            store_clients: false,
            auth: None,
        }
    }
}

/// A running store + switch pair.
pub struct LocalTxn {
    pub store: StoreNode,
    pub switch: SwitchNode<TxnSwitch>,
    /// A socket the store counts among its downstream peers, beside the
    /// switch ([`LocalTxn::operator`]).
    operator: UdpSocket,
}

/// What a stopped [`LocalTxn`] reports.
#[derive(Clone, Debug)]
pub struct LocalReport {
    pub switch_counters: Vec<(String, u64)>,
    pub store: StoreReport,
}

impl LocalTxn {
    pub fn store_addr(&self) -> SocketAddr {
        self.store.addr()
    }
    pub fn switch_addr(&self) -> SocketAddr {
        self.switch.addr()
    }
    /// The harness's own way to the store (loading or reading back its
    /// data, asking its CPU use): a socket the store takes requests from,
    /// as it does from its switch. Every other address is refused.
    pub fn operator(&self) -> io::Result<UdpSocket> {
        self.operator.try_clone()
    }
    /// The switch's counters (program, then runtime `live_*`).
    pub fn switch_counters(&self) -> Vec<(String, u64)> {
        self.switch.counters()
    }
    /// One switch counter by name (0 if unknown).
    pub fn switch_counter(&self, name: &str) -> u64 {
        self.switch_counters().into_iter().find(|(k, _)| k == name).map_or(0, |(_, v)| v)
    }
    pub fn stop(&self) {
        self.switch.stop();
        self.store.stop();
    }
    /// Stops both nodes and waits for them.
    pub fn shutdown(self) -> io::Result<LocalReport> {
        self.stop();
        let switch_counters = self.switch.counters();
        self.switch.shutdown()?;
        let store = self.store.shutdown()?;
        Ok(LocalReport { switch_counters, store })
    }
}

/// How a transaction deployment's store or switch starts, beyond its
/// tables (which come from the deployment).
#[derive(Clone, Debug, Default)]
pub struct ServerSetup {
    /// A store's data.
    pub data: StoreData,
    /// A store honours the `reset` flag.
    pub allow_reset: bool,
    /// A store takes requests from anyone, not only from its downstream
    /// peers (the nodes whose upstream it is).
    pub open_store: bool,
    /// `--auth-key`: the keys and the addresses they cover.
    pub auth: Option<Arc<PeerAuth>>,
    /// What a switch emulates towards peers outside the deployment
    /// (clients started by hand).
    pub downstream_delay: Duration,
}

/// A transaction deployment's store or switch, running.
pub enum TxnServer {
    Store(StoreNode),
    Switch(SwitchNode<TxnSwitch>),
}

/// Starts the store or switch of a transaction deployment in `slot`
/// (clients are the caller's: what load they run is an experiment's
/// choice): a store admitting its downstream peers, a switch with its
/// tables ([`crate::deploy::instantiate`]'s `make` for the service).
pub fn start_server(slot: Slot<'_, TxnRole>, setup: &ServerSetup) -> io::Result<TxnServer> {
    let role = slot.node().role.clone();
    match role {
        TxnRole::Store => {
            let d = slot.deployment;
            // Its downstream peers: the nodes whose upstream it is.
            let peers = d.downstream_of(slot.ix).into_iter().map(|j| slot.addrs[j]).collect();
            let access = StoreAccess { peers: (!setup.open_store).then_some(peers), auth: setup.auth.clone() };
            let name = slot.name().to_string();
            let (data, reset) = (&setup.data, setup.allow_reset);
            Ok(TxnServer::Store(spawn_store_on(&name, slot.socket, data, Duration::ZERO, reset, access, slot.stop)?))
        }
        TxnRole::Switch(spec) => {
            let (mut o, t) = slot.switch_setup(setup.downstream_delay);
            o.auth = setup.auth.clone();
            let program = TxnSwitch::new(spec.mode, spec.cache_slots, innet_txn::switch::CLIENT_SLOTS_DEFAULT);
            Ok(TxnServer::Switch(slot.switch(program, o, t)?))
        }
        TxnRole::Client => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("node '{}' is a client: the caller runs its load", slot.name()),
        )),
    }
}

/// Starts a store and a switch in front of it (threads of this process):
/// Gotthard's Figure 3 without clients, plus the harness's operator socket
/// as a peer of the store, through [`crate::deploy::instantiate`]'s two
/// steps.
pub fn start_local(cfg: &LocalConfig, stop: &Stop) -> io::Result<LocalTxn> {
    cfg.switch.validate().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let spec = SwitchSpec { mode: cfg.switch.mode, cache_slots: cfg.switch.cache_slots };
    let mut d = innet_txn::deploy::single_switch(0, spec, Duration::ZERO, cfg.switch.store_delay);
    let (store, switch) = (0, 1);
    debug_assert!(d.nodes[store].role == TxnRole::Store && d.nodes[switch].role == TxnRole::Switch(spec));
    // The harness's own way to the store, beside the switch.
    let operator = innet_txn::deploy::add(&mut d, "operator", TxnRole::Client);
    d.link(operator, store, Duration::ZERO);
    d.set_upstream(operator, store);
    let places = [
        Place::here(cfg.store_listen),
        Place::here(cfg.switch_listen),
        Place::here(bind_addr_for(reachable(cfg.store_listen))),
    ];
    let mut bound = crate::deploy::bind(&d, &places)?;
    let operator = bound.take(operator).expect("the operator binds here");
    let addrs = bound.addrs.clone();
    let mut started = bound.start(&d, DataPlaneAt::Switch, stop, |slot| {
        let setup = if slot.ix == store {
            ServerSetup {
                data: cfg.data.clone(),
                allow_reset: cfg.allow_reset,
                open_store: cfg.store_clients,
                auth: cfg.auth.clone().map(|k| PeerAuth::peers(k, [addrs[switch]])),
                downstream_delay: Duration::ZERO,
            }
        } else {
            ServerSetup {
                auth: cfg.auth.clone().map(|k| PeerAuth::peers(k, [addrs[store]])).or(cfg.switch.auth.clone()),
                downstream_delay: cfg.switch.client_delay,
                ..ServerSetup::default()
            }
        };
        start_server(slot, &setup)
    })?;
    match (started.pop(), started.pop()) {
        (Some((_, TxnServer::Switch(switch))), Some((_, TxnServer::Store(store)))) => {
            Ok(LocalTxn { store, switch, operator })
        }
        _ => unreachable!("a store and a switch, in node order"),
    }
}

/// The local address a client socket should bind to for reaching `target`.
pub fn bind_addr_for(target: SocketAddr) -> SocketAddr {
    let ip = match target.ip() {
        ip if ip.is_loopback() => ip,
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    SocketAddr::new(ip, 0)
}

/// A client id base unlikely to collide with earlier runs against the same
/// long-running store (whose exactly-once records remember client ids).
pub fn fresh_client_id_base(clients: u32) -> u32 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    let mut rng = Rng::new((nanos as u64) ^ ((std::process::id() as u64) << 32));
    let span = (u32::MAX / 2).saturating_sub(clients).max(1);
    (1 << 16) + (rng.below(span as u64) as u32)
}

/// A load run: `clients` [`LoadClient`]s against `target` (a switch or a store).
#[derive(Clone, Debug)]
pub struct LoadConfig {
    pub target: SocketAddr,
    pub clients: u32,
    /// Client ids are `first_client_id ..first_client_id + clients`.
    pub first_client_id: u32,
    pub workload: Workload,
    pub seed: u64,
    pub duration: Duration,
    /// One-way client <-> switch delay, emulated by each client.
    pub client_delay: Duration,
    /// Resend timeout.
    pub timeout: Duration,
    pub max_resends: u32,
    pub retry_limit: u32,
}

impl LoadConfig {
    pub fn new(target: SocketAddr, workload: Workload) -> LoadConfig {
        let c = ClientConfig::new(1);
        LoadConfig {
            target,
            clients: 1,
            first_client_id: 1,
            workload,
            seed: 1,
            duration: Duration::from_secs(1),
            client_delay: Duration::ZERO,
            timeout: c.timeout,
            max_resends: c.max_resends,
            retry_limit: c.retry_limit,
        }
    }
}

/// What a load run measured.
#[derive(Clone, Debug)]
pub struct LoadResult {
    /// Merged over all clients.
    pub stats: LoadStats,
    /// The measured window (the configured duration unless stopped early).
    pub run: Duration,
    /// Wall time of the whole call, setup included.
    pub wall: Duration,
    pub net: HostStats,
}

/// Runs `cfg.clients` load clients (each on its own socket, all in one
/// event loop in the calling thread) for `cfg.duration`, or until `stop`.
pub fn run_load(cfg: &LoadConfig, stop: &Stop) -> io::Result<LoadResult> {
    let wall0 = Instant::now();
    let invalid = |m: String| io::Error::new(io::ErrorKind::InvalidInput, m);
    cfg.workload.validate().map_err(invalid)?;
    if cfg.clients == 0 {
        return Err(invalid("clients must be at least 1".into()));
    }
    if cfg.first_client_id.checked_add(cfg.clients).is_none() {
        return Err(invalid("client ids overflow u32: lower first_client_id".into()));
    }
    if cfg.retry_limit == 0 {
        return Err(invalid("retry limit must be at least 1".into()));
    }
    let mut endpoints = vec![];
    for _ in 0..cfg.clients {
        let opts = HostOptions::upstream(cfg.target).with_delay(cfg.client_delay);
        endpoints.push((bind(bind_addr_for(cfg.target))?, opts));
    }
    // Same derivation as the simulator's (one draw for the network, then a
    // fork per client), so a seed gives each client the same workload.
    let mut root = Rng::new(cfg.seed);
    let _ = root.next_u64();
    let start = clock::now();
    let stop_at = start + cfg.duration;
    let mut hosts: Vec<LoadClient> = (0..cfg.clients)
        .map(|i| {
            let mut cc = ClientConfig::new(cfg.first_client_id + i);
            cc.timeout = cfg.timeout;
            cc.max_resends = cfg.max_resends;
            cc.retry_limit = cfg.retry_limit;
            cc.first_req_id = wall_clock_req_id();
            LoadClient::new(TxnClient::new(cc), cfg.workload.clone(), root.fork(), start, stop_at)
        })
        .collect();
    let per_host = run_hosts(&mut hosts, endpoints, stop, Some(stop_at))?;
    let end = clock::now().min(stop_at);
    let mut stats = LoadStats::default();
    for h in &hosts {
        stats.merge(&h.stats);
    }
    let mut net = HostStats::default();
    for s in &per_host {
        net.merge(s);
    }
    Ok(LoadResult { stats, run: end.since(start), wall: wall0.elapsed(), net })
}

/// A host that runs one transaction and then stops its node.
pub struct OneShot {
    client: TxnClient,
    txn: Option<Txn>,
    done: Option<Completed>,
    stop: Stop,
}

impl OneShot {
    pub fn new(client: TxnClient, txn: Txn, stop: Stop) -> OneShot {
        OneShot { client, txn: Some(txn), done: None, stop }
    }
    pub fn client(&self) -> &TxnClient {
        &self.client
    }
    pub fn take(&mut self) -> Option<Completed> {
        self.done.take()
    }
    fn settle(&mut self) {
        if let Some(c) = self.client.poll() {
            self.done = Some(c);
            self.stop.stop();
        }
    }
}

impl Host for OneShot {
    fn on_packet(&mut self, now: Time, packet: &[u8], out: &mut Outbox) {
        self.client.on_packet(now, packet, out);
        self.settle();
    }
    fn on_packet_from(&mut self, now: Time, packet: &[u8], from: innet_core::Sender, out: &mut Outbox) {
        self.client.on_packet_from(now, packet, from, out);
        self.settle();
    }
    fn on_tick(&mut self, now: Time, out: &mut Outbox) {
        match self.txn.take() {
            Some(t) => {
                self.client.start(now, t, out);
            }
            None => self.client.on_tick(now, out),
        }
        self.settle();
    }
    fn next_tick(&self) -> Option<Time> {
        if self.txn.is_some() {
            Some(Time::ZERO)
        } else if self.done.is_some() {
            None
        } else {
            self.client.next_tick()
        }
    }
}

/// The first request id of a live client: the wall clock in microseconds,
/// modulo 2^31. A later process that reuses a client id then starts above
/// the ids the earlier one used (one id per attempt, at most one attempt per
/// microsecond) unless the 31-bit clock wrapped in between (every 2^31 us,
/// about 36 minutes): switch and store compare request ids as serial
/// numbers and would take its requests for stale ones.
pub fn wall_clock_req_id() -> i32 {
    let us = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_micros());
    (us & 0x7fff_ffff) as i32
}

/// Runs one transaction against `target` with client `cfg` and a one-way
/// access-link delay `delay`. `None` if `stop` was set before it finished.
pub fn run_txn(
    target: SocketAddr,
    txn: Txn,
    cfg: ClientConfig,
    delay: Duration,
    stop: &Stop,
) -> io::Result<Option<Completed>> {
    run_txn_on(bind(bind_addr_for(target))?, target, txn, cfg, delay, stop)
}

/// As [`run_txn`], from `socket` (e.g. [`LocalTxn::operator`], the one way
/// to a store that takes only its peers).
pub fn run_txn_on(
    socket: UdpSocket,
    target: SocketAddr,
    txn: Txn,
    cfg: ClientConfig,
    delay: Duration,
    stop: &Stop,
) -> io::Result<Option<Completed>> {
    let cfg = ClientConfig { first_req_id: wall_clock_req_id(), ..cfg };
    let own = stop.child();
    let mut host = OneShot::new(TxnClient::new(cfg), txn, own.clone());
    run_host(&mut host, socket, &HostOptions::upstream(target).with_delay(delay), &own)?;
    Ok(host.take())
}

/// As [`run_txn`], on a client and a socket the caller keeps between
/// transactions (its request ids and the values it learned carry over, and
/// its address stays the one its client id is bound to at the switch):
/// returns the client with the outcome. Its `first_req_id` should come
/// from [`wall_clock_req_id`].
pub fn run_txn_with(
    socket: UdpSocket,
    target: SocketAddr,
    client: TxnClient,
    txn: Txn,
    delay: Duration,
    stop: &Stop,
) -> io::Result<(TxnClient, Option<Completed>)> {
    let own = stop.child();
    let mut host = OneShot::new(client, txn, own.clone());
    run_host(&mut host, socket, &HostOptions::upstream(target).with_delay(delay), &own)?;
    let done = host.take();
    Ok((host.client, done))
}

/// The answer to one raw request ([`raw_request_on`]).
#[derive(Clone, Debug)]
pub struct RawReply {
    pub msg: innet_wire::txn::TxnMsg,
    /// Who answered.
    pub from: SocketAddr,
    /// Resends it took.
    pub resends: u32,
    pub latency: Duration,
}

/// Sends `ops` from `sock` as one request of client `cl_id` (request id 1)
/// to `to`, and waits for its answer, resending up to `max_resends` times
/// after `timeout` (resends carry `store_commit`, and after a resend only
/// the store's answer counts, as the library client does); `delay`
/// emulates the client's access link one way. `Ok(None)`: no answer.
pub fn raw_request_on(
    sock: &UdpSocket,
    to: SocketAddr,
    cl_id: u32,
    ops: Vec<innet_wire::txn::Op>,
    timeout: Duration,
    max_resends: u32,
    delay: Duration,
) -> io::Result<Option<RawReply>> {
    use innet_wire::txn::{Flags, TxnMsg};
    let mut req = TxnMsg::request(cl_id, 1, ops);
    let t0 = Instant::now();
    let mut buf = [0u8; 65536];
    for attempt in 0..=max_resends {
        if attempt > 0 {
            req.flags = Flags(0).with(Flags::STORE_COMMIT, true);
        }
        std::thread::sleep(delay);
        sock.send_to(&req.encode(), to)?;
        let sent = Instant::now();
        while sent.elapsed() < timeout {
            sock.set_read_timeout(Some((timeout - sent.elapsed()).max(Duration::from_millis(1))))?;
            let Ok((n, from)) = sock.recv_from(&mut buf) else { continue };
            if from != to {
                continue; // only the service we asked answers
            }
            let Ok(m) = TxnMsg::decode(&buf[..n]) else { continue };
            if !m.flags.is_response() || m.cl_id != cl_id || m.req_id != req.req_id {
                continue;
            }
            if attempt > 0 && m.flags.from_switch() {
                continue;
            }
            std::thread::sleep(delay);
            return Ok(Some(RawReply { msg: m, from, resends: attempt, latency: t0.elapsed() }));
        }
    }
    Ok(None)
}
