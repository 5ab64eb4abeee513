//! Running end hosts ([`Host`]) on UDP sockets.
//!
//! The event loop calls `on_packet` for every packet received (after the
//! link's delay, if any), `on_tick` when `next_tick` has come, and sends what
//! the host put in its [`Outbox`]: [`Dest::Reply`] to the sender of the packet
//! being handled, [`Dest::Upstream`] to [`HostOptions::upstream`]. A host's
//! [`HostOptions::delay`] emulates its access link: every packet it sends is
//! held that long before it goes out, and every packet it receives that long
//! before the host sees it.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::net::{SocketAddr, UdpSocket};
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

/// Packets refused by an [`Admission`] rule, by reason.
pub type Rejected = BTreeMap<&'static str, u64>;

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
        if !Admission::admit(&slot.opts.admit, from, bytes, &mut slot.stats.rejected) {
            return;
        }
        let sender = Sender { peer: peer_of(from), upstream: slot.opts.upstream == Some(from) };
        self.hosts[i].on_packet_from(now, bytes, sender, &mut self.out);
        self.collect(i, Some(from), now);
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

    /// Sends what is queued and counts it per host.
    fn flush(&mut self, ports: &mut Ports) {
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
    run_loop(hosts, endpoints, stop, until, None)
}

/// [`run_hosts`], publishing host 0's counters to `publish` as it runs.
fn run_loop<H: Host>(
    hosts: &mut [H],
    endpoints: Vec<(UdpSocket, HostOptions)>,
    stop: &Stop,
    until: Option<Time>,
    publish: Option<(&LiveCounters, OwnCounters<H>)>,
) -> io::Result<Vec<HostStats>> {
    assert_eq!(hosts.len(), endpoints.len(), "one endpoint per host");
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
    let mut ports = Ports::new(sockets)?;
    let mut lp = HostLoop { hosts, slots, out: Outbox::new(), tx: TxBatch::new() };
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
        ports.wait(next, MAX_WAIT);
        ports.take_ready(&mut ready);
        for &i in &ready {
            if ports.recv(i, &mut rx) > 0 {
                lp.incoming(i, &mut rx);
                lp.flush(&mut ports);
            }
        }
    }
    publish_now(&lp, &ports);
    Ok(lp.slots.into_iter().enumerate().map(|(i, s)| HostStats { rx_overflow: ports.overflow(i), ..s.stats }).collect())
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
    let mut stats = run_loop(std::slice::from_mut(host), vec![(socket, opts.clone())], stop, None, publish)?;
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
