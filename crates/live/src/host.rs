//! Running end hosts ([`Host`]) on UDP sockets.
//!
//! The event loop calls `on_packet` for every packet received (after the
//! link's delay, if any), `on_tick` when `next_tick` has come, and sends what
//! the host put in its [`Outbox`]: [`Dest::Reply`] to the sender of the packet
//! being handled, [`Dest::Upstream`] to [`HostOptions::upstream`]. A host's
//! [`HostOptions::delay`] emulates its access link: every packet it sends is
//! held that long before it goes out, and every packet it receives that long
//! before the host sees it.

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::BorrowedFd;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use innet_core::{Counters, Dest, Host, Outbox, Peer, Sender, Time};

use crate::clock;
use crate::delay::DelayLine;
use crate::net::{Ports, RxBatch, TxBatch};
use crate::Stop;

/// Longest the event loop waits before looking at its stop flag again.
pub(crate) const MAX_WAIT: Duration = Duration::from_millis(20);

/// A node's admission rule: `Ok` lets a packet from the address reach the
/// node's role, `Err(reason)` drops it and counts it under `reason`
/// ([`HostStats::rejected`], [`crate::SwitchStats::rejected`]). A service
/// builds it from its deployment (who may send what, e.g.
/// `innet_paxos::trust`).
#[derive(Clone)]
pub struct Admission(pub Arc<AdmitFn>);

/// The rule itself: a packet from an address, `Err(reason)` to refuse it.
pub type AdmitFn = dyn Fn(SocketAddr, &[u8]) -> Result<(), &'static str> + Send + Sync;

impl Admission {
    pub fn new(f: impl Fn(SocketAddr, &[u8]) -> Result<(), &'static str> + Send + Sync + 'static) -> Admission {
        Admission(Arc::new(f))
    }
    /// Applies the rule, counting a refusal in `rejected`; true if the
    /// packet may pass.
    pub fn admit(this: &Option<Admission>, from: SocketAddr, bytes: &[u8], rejected: &mut Rejected) -> bool {
        match this.as_ref().map(|a| (a.0)(from, bytes)) {
            Some(Err(reason)) => {
                tracing::debug!(%from, reason, "packet rejected");
                *rejected.entry(reason).or_default() += 1;
                false
            }
            _ => true,
        }
    }
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Admission(..)")
    }
}

pub use crate::auth::Rejected;

#[derive(Clone, Debug, Default)]
pub struct HostOptions {
    /// Where [`Dest::Upstream`] packets go (a client's switch or store).
    pub upstream: Option<SocketAddr>,
    /// One-way delay of the host's access link, applied in both directions.
    pub delay: Duration,
    /// Where [`Dest::Port`] packets go, by port number.
    pub ports: Vec<SocketAddr>,
    /// Where [`Dest::Group`] packets go, by group number.
    pub groups: HashMap<u16, Vec<SocketAddr>>,
    /// Who may send what (every packet passes without one).
    pub admit: Option<Admission>,
    /// `--auth-key`: seals what the host sends to covered addresses and
    /// refuses what comes from them unsealed ([`crate::auth`]).
    pub auth: Option<Arc<crate::auth::PeerAuth>>,
}

impl HostOptions {
    pub fn upstream(addr: SocketAddr) -> HostOptions {
        HostOptions { upstream: Some(addr), ..HostOptions::default() }
    }
    pub fn with_delay(mut self, delay: Duration) -> HostOptions {
        self.delay = delay;
        self
    }
}

/// What the runtime did for one host.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostStats {
    pub received: u64,
    pub sent: u64,
    pub send_errors: u64,
    /// Packets the host asked to send with nowhere to go: a `Reply` from
    /// `on_tick`, `Upstream` without an upstream address, an unconfigured
    /// port or an empty group.
    pub no_destination: u64,
    /// Datagrams the kernel dropped at the host's full socket receive buffer
    /// because the event loop fell behind (`SO_RXQ_OVFL`).
    pub rx_overflow: u64,
    /// Packets the node's [`Admission`] rule refused, by reason.
    pub rejected: Rejected,
}

impl HostStats {
    pub fn merge(&mut self, o: &HostStats) {
        self.received += o.received;
        self.sent += o.sent;
        self.send_errors += o.send_errors;
        self.no_destination += o.no_destination;
        self.rx_overflow += o.rx_overflow;
        for (k, v) in &o.rejected {
            *self.rejected.entry(k).or_default() += v;
        }
    }
}

impl HostStats {
    /// The runtime's counters without the rejections by reason.
    pub fn runtime_counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("live_received", self.received),
            ("live_sent", self.sent),
            ("live_send_errors", self.send_errors),
            ("live_no_destination", self.no_destination),
            ("live_rx_overflow", self.rx_overflow),
        ]
    }
}

impl Counters for HostStats {
    fn counters(&self) -> Vec<(&'static str, u64)> {
        let rejected = self.rejected.iter().map(|(&k, &v)| (k, v));
        self.runtime_counters().into_iter().chain(rejected).collect()
    }
}

/// A running node's counters, shared with readers in other threads (a
/// metrics endpoint): the node's event loop publishes them at most every
/// [`PUBLISH_EVERY`] and at least every [`MAX_WAIT`] plus that (the loop
/// wakes that often), and once more when it stops.
#[derive(Clone, Debug, Default)]
pub struct LiveCounters(Arc<Mutex<(CounterList, HostStats)>>);

/// Counters by name, as [`Counters::counters`] gives them.
pub type CounterList = Vec<(&'static str, u64)>;

/// Shortest time between two publications of a host's [`LiveCounters`].
pub const PUBLISH_EVERY: Duration = Duration::from_millis(10);

impl LiveCounters {
    /// The host's own counters and the runtime's, as last published (empty
    /// and zero before the first time).
    pub fn read(&self) -> (CounterList, HostStats) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
    fn publish(&self, own: Vec<(&'static str, u64)>, net: HostStats) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = (own, net);
    }
}

/// What a host publishes of its own: its counters (the runtime's follow).
pub type OwnCounters<H> = fn(&H) -> Vec<(&'static str, u64)>;

/// A socket address as a [`Peer`]: the IPv6 (or IPv4-mapped) address and the port.
pub fn peer_of(addr: SocketAddr) -> Peer {
    let ip = match addr.ip() {
        std::net::IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        std::net::IpAddr::V6(v6) => v6,
    };
    let mut b = [0u8; 18];
    b[..16].copy_from_slice(&ip.octets());
    b[16..].copy_from_slice(&addr.port().to_be_bytes());
    Peer(b)
}

/// Records for the hosts of one event loop from a source other than a
/// socket: e.g. the decisions a BPF vote counter hands up through a ring
/// buffer (`innet_xdp::paxos_learner::DecisionRing`), read from memory the
/// kernel shares, with no system call and no wake-up per record. The loop
/// waits on [`Feed::fd`] with its sockets and drains the feed every turn.
pub trait Feed {
    /// A descriptor that polls readable while records wait (an epoll fd
    /// is fine).
    fn fd(&self) -> BorrowedFd<'_>;
    /// Hands every waiting record to `each` as `(key, packet)`; how many.
    /// The key says which hosts get it ([`Shared::feed`]).
    fn drain(&mut self, each: &mut dyn FnMut(u32, &[u8])) -> usize;
    /// Longest the loop may sleep while records could wait unsignalled
    /// (a feed that wakes its reader only every so many records).
    fn poll_every(&self) -> Option<Duration> {
        None
    }
}

/// Builds a [`Feed`] in the event loop's own thread (a ring buffer's
/// mapping belongs to the thread that reads it).
pub type MakeFeed = Box<dyn FnOnce() -> io::Result<Box<dyn Feed>> + Send>;

/// A socket of an event loop that is no single host's: what arrives there
/// goes to every host in `to` (a machine's decision port, where a vote
/// counter passes up decisions for every role on the machine).
pub struct SharedSocket {
    pub socket: UdpSocket,
    /// Indexes of the loop's hosts that get each datagram.
    pub to: Vec<usize>,
    /// Who may send what (every datagram passes without one).
    pub admit: Option<Admission>,
    /// `--auth-key`: datagrams from the addresses it covers must carry a
    /// trailer that checks, opened before admission ([`crate::auth`]).
    pub auth: Option<Arc<crate::auth::PeerAuth>>,
}

/// What an event loop runs besides its hosts' own sockets: shared sockets
/// and a feed, each delivering to several hosts (every role of one machine
/// learning from one count).
#[derive(Default)]
pub struct Shared {
    pub sockets: Vec<SharedSocket>,
    /// The feed, and for each record key the hosts that get it (a key
    /// beyond the list: counted as `unrouted`, dropped).
    pub feed: Option<(MakeFeed, Vec<Vec<usize>>)>,
    /// Segmented sends to every destination ([`Ports::segment_everywhere`]).
    pub segment_everywhere: bool,
}

impl Shared {
    /// Refuses a shared socket or feed route to a host beyond the loop's `n`.
    fn check_hosts(&self, n: usize) -> io::Result<()> {
        for t in self.sockets.iter().flat_map(|s| &s.to).chain(self.feed.iter().flat_map(|f| f.1.iter().flatten())) {
            if *t >= n {
                return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("shared delivery to host {t} of {n}")));
            }
        }
        Ok(())
    }
}

/// The loop's feed, if any, watched by `ports`; its routes; and the
/// longest the loop may sleep with it.
#[allow(clippy::type_complexity)]
fn open_feed(
    feed: Option<(MakeFeed, Vec<Vec<usize>>)>,
    ports: &mut Ports,
) -> io::Result<(Option<Box<dyn Feed>>, Vec<Vec<usize>>, Duration)> {
    let (feed, routes) = match feed {
        Some((make, routes)) => {
            let f = make()?;
            ports.watch(f.fd())?;
            (Some(f), routes)
        }
        None => (None, vec![]),
    };
    let max_wait = feed.as_ref().and_then(|f| f.poll_every()).map_or(MAX_WAIT, |p| p.min(MAX_WAIT));
    Ok((feed, routes, max_wait))
}

/// A shared socket's hosts, admission rule and keys ([`SharedSocket`]).
type SharedRoute = (Vec<usize>, Option<Admission>, Option<Arc<crate::auth::PeerAuth>>);

/// The loop's ports: the hosts' sockets of `endpoints` (port `i` host
/// `i`'s), then the `shared` sockets; a slot per host and a route per
/// shared socket.
fn open_ports(
    endpoints: Vec<(UdpSocket, HostOptions)>,
    shared: Vec<SharedSocket>,
    segment_everywhere: bool,
) -> io::Result<(Ports, Vec<Slot>, Vec<SharedRoute>)> {
    let mut sockets = vec![];
    let mut slots = vec![];
    for (s, opts) in endpoints {
        sockets.push(s);
        slots.push(Slot {
            ingress: DelayLine::new(opts.delay),
            egress: DelayLine::new(opts.delay),
            opts,
            stats: HostStats::default(),
        });
    }
    let mut routes = vec![];
    for s in shared {
        sockets.push(s.socket);
        routes.push((s.to, s.admit, s.auth));
    }
    let mut ports = Ports::new(sockets)?;
    if segment_everywhere {
        ports.segment_everywhere();
    }
    Ok((ports, slots, routes))
}

/// What the runtime did for the shared sockets and the feed of a loop.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SharedStats {
    /// Datagrams received on the shared sockets.
    pub received: u64,
    /// Datagrams the kernel dropped at a shared socket's full buffer.
    pub rx_overflow: u64,
    /// Records read from the feed.
    pub fed: u64,
    /// Loop turns on which the feed had records (each covers a batch).
    pub feed_batches: u64,
    /// Feed records with a key no host listens to.
    pub unrouted: u64,
    /// Shared-socket datagrams refused by their admission rule, by reason.
    pub rejected: Rejected,
}

type Held = DelayLine<(SocketAddr, Vec<u8>)>;

struct Slot {
    opts: HostOptions,
    ingress: Held,
    egress: Held,
    stats: HostStats,
}

impl Slot {
    /// Queues (or holds, on a delayed link) one datagram to `to`.
    fn emit(&mut self, tx: &mut TxBatch, port: usize, to: SocketAddr, bytes: &[u8], now: Time) {
        if self.egress.is_passthrough() {
            tx.push(port, to, bytes);
        } else {
            self.egress.push(now, (to, bytes.to_vec()));
        }
    }
}

struct HostLoop<'a, H> {
    hosts: &'a mut [H],
    slots: Vec<Slot>,
    out: Outbox,
    tx: TxBatch,
}

impl<H: Host> HostLoop<'_, H> {
    /// Sends (or holds) what host `i` queued; `reply_to` is the sender of the
    /// packet it handled.
    fn collect(&mut self, i: usize, reply_to: Option<SocketAddr>, now: Time) {
        let slot = &mut self.slots[i];
        let tx = &mut self.tx;
        for (dest, bytes) in self.out.sends.drain(..) {
            let one = match dest {
                Dest::Reply => Some(reply_to),
                Dest::Upstream => Some(slot.opts.upstream),
                Dest::Port(p) => Some(slot.opts.ports.get(p as usize).copied()),
                Dest::Group(_) => None,
            };
            match (one, dest) {
                (Some(Some(to)), _) => slot.emit(tx, i, to, &bytes, now),
                (Some(None), _) => slot.stats.no_destination += 1,
                (None, Dest::Group(g)) => {
                    let n = slot.opts.groups.get(&g).map_or(0, Vec::len);
                    if n == 0 {
                        slot.stats.no_destination += 1;
                    }
                    for k in 0..n {
                        let to = slot.opts.groups[&g][k];
                        slot.emit(tx, i, to, &bytes, now);
                    }
                }
                (None, _) => unreachable!("only groups have several destinations"),
            }
        }
    }

    fn deliver(&mut self, i: usize, from: SocketAddr, bytes: &[u8], now: Time) {
        let slot = &mut self.slots[i];
        let Some(len) = crate::auth::PeerAuth::open(&slot.opts.auth, from, bytes, &mut slot.stats.rejected) else {
            return;
        };
        let bytes = &bytes[..len];
        if !Admission::admit(&slot.opts.admit, from, bytes, &mut slot.stats.rejected) {
            return;
        }
        let sender = Sender { peer: peer_of(from), upstream: slot.opts.upstream == Some(from) };
        self.hosts[i].on_packet_from(now, bytes, sender, &mut self.out);
        self.collect(i, Some(from), now);
    }

    /// Hands a packet that arrived for several hosts (a shared socket's, or
    /// a feed record: `from` is `None`) to each of `to`, in order, without
    /// their links' delay or admission (the shared socket has its own).
    fn deliver_to(&mut self, to: &[usize], from: Option<SocketAddr>, bytes: &[u8], now: Time) {
        let peer = from.map_or(Peer([0; 18]), peer_of);
        for &i in to {
            let upstream = from.is_some() && self.slots[i].opts.upstream == from;
            self.hosts[i].on_packet_from(now, bytes, Sender { peer, upstream }, &mut self.out);
            self.collect(i, from, now);
        }
    }

    /// Hands a received batch of host `i` to the host (or to its delayed link).
    fn incoming(&mut self, i: usize, rx: &mut RxBatch) {
        let now = clock::now();
        self.slots[i].stats.received += rx.len() as u64;
        for k in 0..rx.len() {
            let (from, bytes) = rx.get_mut(k);
            if self.slots[i].ingress.is_passthrough() {
                self.deliver(i, from, bytes, now);
            } else {
                self.slots[i].ingress.push(now, (from, bytes.to_vec()));
            }
        }
    }

    /// What arrived on a shared socket (`route` its hosts and admission),
    /// opened, admitted and delivered to each of its hosts.
    #[inline]
    fn shared_incoming(&mut self, route: &SharedRoute, rx: &mut RxBatch, sstats: &mut SharedStats) {
        let (to, admit, auth) = route;
        let now = clock::now();
        sstats.received += rx.len() as u64;
        for k in 0..rx.len() {
            let (from, bytes) = rx.get_mut(k);
            let Some(len) = crate::auth::PeerAuth::open(auth, from, bytes, &mut sstats.rejected) else {
                continue;
            };
            let bytes = &bytes[..len];
            if Admission::admit(admit, from, bytes, &mut sstats.rejected) {
                self.deliver_to(to, Some(from), bytes, now);
            }
        }
    }

    /// Delivers the records waiting in `feed`, each to the hosts `routes`
    /// lists for its key; how many there were.
    #[inline]
    fn drain_feed(&mut self, feed: &mut dyn Feed, routes: &[Vec<usize>], sstats: &mut SharedStats) -> usize {
        let now = clock::now();
        let got = feed.drain(&mut |key, bytes| match routes.get(key as usize) {
            Some(to) => self.deliver_to(to, None, bytes, now),
            None => sstats.unrouted += 1,
        });
        if got > 0 {
            sstats.fed += got as u64;
            sstats.feed_batches += 1;
        }
        got
    }

    /// Runs every timer that is due; returns the next deadline.
    fn timers(&mut self) -> Option<Time> {
        let mut next: Option<Time> = None;
        for i in 0..self.hosts.len() {
            let now = clock::now();
            while let Some((from, bytes)) = self.slots[i].ingress.pop_due(now) {
                self.deliver(i, from, &bytes, now);
            }
            if self.hosts[i].next_tick().is_some_and(|t| t <= now) {
                self.hosts[i].on_tick(now, &mut self.out);
                self.collect(i, None, now);
            }
            while let Some((to, bytes)) = self.slots[i].egress.pop_due(now) {
                self.tx.push(i, to, &bytes);
            }
            let s = &self.slots[i];
            for t in [s.ingress.next_due(), self.hosts[i].next_tick(), s.egress.next_due()].into_iter().flatten() {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        }
        next
    }

    /// Sends what is queued and counts it per host, after each host made
    /// durable what it must ([`Host::before_send`]).
    fn flush(&mut self, ports: &mut Ports) {
        for h in self.hosts.iter_mut() {
            h.before_send();
        }
        if self.tx.is_empty() {
            return;
        }
        let slots = &mut self.slots;
        ports.flush(&mut self.tx, |port, ok| {
            if ok {
                slots[port].stats.sent += 1;
            } else {
                slots[port].stats.send_errors += 1;
            }
        });
    }
}

/// Runs `hosts` in one event loop, host `i` on `endpoints[i]`, until `stop`
/// is set or `until` has come. Returns what the runtime did for each host.
pub fn run_hosts<H: Host>(
    hosts: &mut [H],
    endpoints: Vec<(UdpSocket, HostOptions)>,
    stop: &Stop,
    until: Option<Time>,
) -> io::Result<Vec<HostStats>> {
    Ok(run_loop(hosts, endpoints, Shared::default(), stop, until, None)?.0)
}

/// [`run_hosts`] with `shared` sockets and a feed besides the hosts' own
/// sockets: the roles of one machine in one loop, learning from one count.
pub fn run_machine<H: Host>(
    hosts: &mut [H],
    endpoints: Vec<(UdpSocket, HostOptions)>,
    shared: Shared,
    stop: &Stop,
    until: Option<Time>,
) -> io::Result<(Vec<HostStats>, SharedStats)> {
    run_loop(hosts, endpoints, shared, stop, until, None)
}

/// [`run_machine`], publishing host 0's counters to `publish` as it runs.
fn run_loop<H: Host>(
    hosts: &mut [H],
    endpoints: Vec<(UdpSocket, HostOptions)>,
    shared: Shared,
    stop: &Stop,
    until: Option<Time>,
    publish: Option<(&LiveCounters, OwnCounters<H>)>,
) -> io::Result<(Vec<HostStats>, SharedStats)> {
    assert_eq!(hosts.len(), endpoints.len(), "one endpoint per host");
    let n = hosts.len();
    shared.check_hosts(n)?;
    let (mut ports, slots, shared_to) = open_ports(endpoints, shared.sockets, shared.segment_everywhere)?;
    let (mut feed, routes, max_wait) = open_feed(shared.feed, &mut ports)?;
    let mut sstats = SharedStats::default();
    // One batch for every host of the loop: the first host's keys seal (a
    // process runs the nodes of one deployment).
    let seal = slots.iter().find_map(|s| s.opts.auth.clone());
    let mut lp = HostLoop { hosts, slots, out: Outbox::new(), tx: TxBatch::sealed(seal) };
    let mut rx = RxBatch::new();
    let mut ready = Vec::new();
    let mut next_publish = clock::now();
    let publish_now = |lp: &HostLoop<'_, H>, ports: &Ports| {
        if let Some((live, own)) = publish {
            live.publish(own(&lp.hosts[0]), HostStats { rx_overflow: ports.overflow(0), ..lp.slots[0].stats.clone() });
        }
    };
    loop {
        if publish.is_some() && clock::now() >= next_publish {
            publish_now(&lp, &ports);
            next_publish = clock::now() + PUBLISH_EVERY;
        }
        if stop.is_stopped() || until.is_some_and(|u| clock::now() >= u) {
            break;
        }
        let mut next = lp.timers();
        lp.flush(&mut ports);
        if let Some(u) = until {
            next = Some(next.map_or(u, |n| n.min(u)));
        }
        ports.wait(next, max_wait);
        if let Some(f) = feed.as_mut() {
            if lp.drain_feed(f.as_mut(), &routes, &mut sstats) > 0 {
                lp.flush(&mut ports);
            }
        }
        ports.take_ready(&mut ready);
        for &i in &ready {
            if ports.recv(i, &mut rx) == 0 {
                continue;
            }
            if i < n {
                lp.incoming(i, &mut rx);
            } else {
                lp.shared_incoming(&shared_to[i - n], &mut rx, &mut sstats);
            }
            lp.flush(&mut ports);
        }
    }
    publish_now(&lp, &ports);
    sstats.rx_overflow = (n..n + shared_to.len()).map(|i| ports.overflow(i)).sum();
    let stats = lp.slots.into_iter().enumerate().map(|(i, s)| HostStats { rx_overflow: ports.overflow(i), ..s.stats });
    Ok((stats.collect(), sstats))
}

/// Runs one host on `socket` in the calling thread until `stop` is set.
pub fn run_host<H: Host>(host: &mut H, socket: UdpSocket, opts: &HostOptions, stop: &Stop) -> io::Result<HostStats> {
    run_host_published(host, socket, opts, stop, None)
}

fn run_host_published<H: Host>(
    host: &mut H,
    socket: UdpSocket,
    opts: &HostOptions,
    stop: &Stop,
    publish: Option<(&LiveCounters, OwnCounters<H>)>,
) -> io::Result<HostStats> {
    let (mut stats, _) =
        run_loop(std::slice::from_mut(host), vec![(socket, opts.clone())], Shared::default(), stop, None, publish)?;
    Ok(stats.pop().expect("one host"))
}

/// A node running in its own thread.
pub struct NodeHandle<R> {
    name: String,
    addr: SocketAddr,
    stop: Stop,
    thread: Option<JoinHandle<io::Result<R>>>,
    live: LiveCounters,
}

impl<R> NodeHandle<R> {
    pub(crate) fn new(name: String, addr: SocketAddr, stop: Stop, thread: JoinHandle<io::Result<R>>) -> Self {
        NodeHandle { name, addr, stop, thread: Some(thread), live: LiveCounters::default() }
    }
    /// The node's counters while it runs (hosts started by [`spawn_host`]
    /// publish the runtime's, [`spawn_host_counted`] their own too).
    pub fn live(&self) -> &LiveCounters {
        &self.live
    }
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The address the node's socket is bound to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
    /// Asks the node to stop (it stops within a few tens of milliseconds).
    pub fn stop(&self) {
        self.stop.stop();
    }
    pub fn is_finished(&self) -> bool {
        match &self.thread {
            Some(t) => t.is_finished(),
            None => true,
        }
    }
    /// Stops the node and waits for it; returns what its thread returned.
    pub fn shutdown(mut self) -> io::Result<R> {
        self.stop.stop();
        let t = self.thread.take().expect("joined once");
        t.join().map_err(|_| io::Error::other(format!("node {} panicked", self.name)))?
    }
}

impl<R> Drop for NodeHandle<R> {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            self.stop.stop();
            let _ = t.join();
        }
    }
}

/// Starts a host in its own thread on `socket`. The host is built in that
/// thread by `make` (so it need not be `Send`), and `finish` turns it into
/// the handle's result when the node stops. The node stops when `stop` (or
/// the handle's own stop) is set. The runtime's counters are published to
/// [`NodeHandle::live`] as it runs.
pub fn spawn_host<H, R, M, F>(
    name: &str,
    socket: UdpSocket,
    opts: HostOptions,
    stop: &Stop,
    make: M,
    finish: F,
) -> io::Result<NodeHandle<R>>
where
    H: Host + 'static,
    R: Send + 'static,
    M: FnOnce() -> H + Send + 'static,
    F: FnOnce(H, HostStats) -> R + Send + 'static,
{
    spawn_host_counted(name, socket, opts, stop, make, |_| vec![], finish)
}

/// [`spawn_host`], publishing the host's own counters (`own`) before the
/// runtime's.
pub fn spawn_host_counted<H, R, M, F>(
    name: &str,
    socket: UdpSocket,
    opts: HostOptions,
    stop: &Stop,
    make: M,
    own: OwnCounters<H>,
    finish: F,
) -> io::Result<NodeHandle<R>>
where
    H: Host + 'static,
    R: Send + 'static,
    M: FnOnce() -> H + Send + 'static,
    F: FnOnce(H, HostStats) -> R + Send + 'static,
{
    let addr = socket.local_addr()?;
    let stop = stop.child();
    let s = stop.clone();
    let live = LiveCounters::default();
    let l = live.clone();
    let node = name.to_string();
    // Returns once the host is made and its counters are published, so a
    // scrape right after the spawn sees every counter (at zero).
    let (made, wait_made) = std::sync::mpsc::sync_channel::<()>(1);
    let thread = std::thread::Builder::new().name(format!("innet-{name}")).spawn(move || {
        let _span = tracing::info_span!("node", name = %node).entered();
        tracing::info!(%addr, "host started");
        let mut host = make();
        l.publish(own(&host), HostStats::default());
        let _ = made.send(());
        let stats = run_host_published(&mut host, socket, &opts, &s, Some((&l, own)));
        match &stats {
            Ok(st) => tracing::info!(received = st.received, sent = st.sent, "host stopped"),
            Err(e) => tracing::error!(error = %e, "host failed"),
        }
        Ok(finish(host, stats?))
    })?;
    // An error (the thread ended before publishing) shows when it is joined.
    let _ = wait_made.recv();
    let mut h = NodeHandle::new(name.to_string(), addr, stop, thread);
    h.live = live;
    Ok(h)
}
