//! A user-space software switch: a [`DataPlane`] program on one UDP socket.
//!
//! A packet whose source is [`SwitchOptions::upstream`] is "from upstream";
//! any other is from downstream. The program's [`Verdict`] is applied:
//! `Upstream { flow }` sends to the upstream address and remembers that
//! replies of `flow` go back to the packet's sender; `Downstream { flow }`
//! sends to the remembered sender of `flow` (dropped and counted if none is
//! known); `Reflect` sends back to this packet's sender; `Drop` is counted.
//!
//! The control plane's tables ([`SwitchTables`], shared and changeable while
//! the switch runs): `Port { port }` sends to `ports[port]`,
//! `Multicast { group }` to every member of `groups[group]`, and `Origin` to
//! the packet's origin. The origin is the packet's sender, unless the packet
//! came from another switch of the deployment ([`SwitchTables::switch_peers`]):
//! between switches the runtime carries the origin in a small shim in front of
//! the protocol packet ([`ORIGIN_SHIM_MAGIC`]), as IP carries the source
//! address across routers. End hosts never see the shim.
//!
//! Delay emulation: the switch<->upstream link's one-way delay
//! ([`SwitchOptions::upstream_delay`]) is applied to packets the switch sends
//! upstream and to packets it receives from upstream (before the program sees
//! them, as if they had travelled the link); likewise the downstream links'
//! delay for everything else. Each direction of each link class is a FIFO.

use std::collections::{HashMap, HashSet};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use innet_core::{Counters, DataPlane, Ingress, Member, ReversePath, Time, Verdict};

use crate::clock;
use crate::delay::DelayLine;
use crate::host::{NodeHandle, MAX_WAIT};
use crate::net::{Ports, RxBatch, TxBatch};
use crate::Stop;

/// Default size of the reverse-path table (flows remembered).
pub const REVERSE_PATH_DEFAULT: usize = 1 << 16;

#[derive(Clone, Debug)]
pub struct SwitchOptions {
    /// The service side: packets from here are from upstream, and
    /// `Upstream` verdicts send here.
    pub upstream: SocketAddr,
    /// One-way delay of the switch <-> upstream link (both directions).
    pub upstream_delay: Duration,
    /// One-way delay of the switch <-> downstream links (both directions);
    /// zero when the clients emulate their own link.
    pub downstream_delay: Duration,
    pub reverse_path_capacity: usize,
    /// Who may send what to the program (every packet passes without one).
    pub admit: Option<crate::host::Admission>,
    /// `--auth-key`: seals what the switch sends to covered addresses and
    /// refuses what comes from them unsealed ([`crate::auth`]).
    pub auth: Option<std::sync::Arc<crate::auth::PeerAuth>>,
}

impl SwitchOptions {
    pub fn new(upstream: SocketAddr) -> SwitchOptions {
        SwitchOptions {
            upstream,
            upstream_delay: Duration::ZERO,
            downstream_delay: Duration::ZERO,
            reverse_path_capacity: REVERSE_PATH_DEFAULT,
            admit: None,
            auth: None,
        }
    }
    pub fn with_delays(mut self, upstream: Duration, downstream: Duration) -> SwitchOptions {
        self.upstream_delay = upstream;
        self.downstream_delay = downstream;
        self
    }
}

/// The forwarding tables a control plane writes (see the module doc).
#[derive(Clone, Debug, Default)]
pub struct SwitchTables {
    pub ports: Vec<Option<SocketAddr>>,
    pub groups: HashMap<u16, Vec<Member<SocketAddr>>>,
    /// Other switches: packets to them carry the origin shim, packets from
    /// them are expected to.
    pub switch_peers: HashSet<SocketAddr>,
    /// Switch peers the deployment numbers (a chain node's: by chain index):
    /// the program sees packets from these addresses as
    /// [`Ingress::Peer`], by source address and port.
    pub peer_ids: HashMap<SocketAddr, u16>,
}

impl SwitchTables {
    pub fn set_port(&mut self, port: u16, to: Option<SocketAddr>) {
        if self.ports.len() <= port as usize {
            self.ports.resize(port as usize + 1, None);
        }
        self.ports[port as usize] = to;
    }
}

/// First bytes of the origin shim between switches: magic, then the origin
/// as family (4 or 6), address bytes, port (big-endian).
pub const ORIGIN_SHIM_MAGIC: [u8; 4] = *b"iNo\x01";

/// `bytes` with the origin shim in front.
pub fn add_origin_shim(origin: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let mut shim = [0u8; 23];
    let n = write_origin_shim(origin, &mut shim);
    let mut out = Vec::with_capacity(bytes.len() + n);
    out.extend_from_slice(&shim[..n]);
    out.extend_from_slice(bytes);
    out
}

/// Splits an origin shim off `bytes`: `(origin, payload offset)`, or `None`
/// if the packet has no (well-formed) shim.
pub fn split_origin_shim(bytes: &[u8]) -> Option<(SocketAddr, usize)> {
    let rest = bytes.strip_prefix(&ORIGIN_SHIM_MAGIC[..])?;
    let (ip, n): (IpAddr, usize) = match rest.first()? {
        4 => (Ipv4Addr::from(<[u8; 4]>::try_from(rest.get(1..5)?).ok()?).into(), 5),
        6 => (Ipv6Addr::from(<[u8; 16]>::try_from(rest.get(1..17)?).ok()?).into(), 17),
        _ => return None,
    };
    let port = u16::from_be_bytes(rest.get(n..n + 2)?.try_into().ok()?);
    Some((SocketAddr::new(ip, port), ORIGIN_SHIM_MAGIC.len() + n + 2))
}

/// What the runtime around the program did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SwitchStats {
    pub from_upstream: u64,
    pub from_downstream: u64,
    pub to_upstream: u64,
    pub to_downstream: u64,
    pub reflected: u64,
    /// `Drop` verdicts (the program counts why).
    pub dropped: u64,
    /// Requests of a flow bound to another neighbour (another sender's
    /// client id): answered with the program's refusal, or dropped.
    pub refused_other_sender: u64,
    /// `Downstream` verdicts for a flow with no known origin, and `Port`
    /// verdicts for a port with nothing configured.
    pub dropped_no_route: u64,
    /// `Port`, `Multicast` and `Origin` sends (one per copy).
    pub to_ports: u64,
    /// Packets from a switch peer without a well-formed origin shim.
    pub dropped_bad_shim: u64,
    /// Packets dropped because the event loop fell behind.
    pub rx_overflow: u64,
    pub send_errors: u64,
    /// Packets the [`SwitchOptions::admit`] rule refused, by reason (the
    /// sender is the packet's previous hop).
    pub rejected: crate::host::Rejected,
}

impl SwitchStats {
    /// The runtime's counters without the rejections by reason.
    pub fn runtime_counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("live_from_upstream", self.from_upstream),
            ("live_from_downstream", self.from_downstream),
            ("live_to_upstream", self.to_upstream),
            ("live_to_downstream", self.to_downstream),
            ("live_reflected", self.reflected),
            ("live_dropped", self.dropped),
            ("live_dropped_no_route", self.dropped_no_route),
            ("live_to_ports", self.to_ports),
            ("live_dropped_bad_shim", self.dropped_bad_shim),
            ("live_rx_overflow", self.rx_overflow),
            ("live_refused_other_sender", self.refused_other_sender),
            ("live_send_errors", self.send_errors),
        ]
    }
}

impl Counters for SwitchStats {
    fn counters(&self) -> Vec<(&'static str, u64)> {
        let rejected = self.rejected.iter().map(|(&k, &v)| (k, v));
        self.runtime_counters().into_iter().chain(rejected).collect()
    }
}

/// The program and the runtime's counters, shared with whoever watches the
/// switch (one lock per packet).
#[derive(Debug)]
pub struct SwitchState<P> {
    pub program: P,
    pub stats: SwitchStats,
    pub tables: SwitchTables,
}

impl<P: Counters> SwitchState<P> {
    /// The program's counters followed by the runtime's (`live_*`).
    pub fn counters(&self) -> Vec<(String, u64)> {
        let both = self.program.counters().into_iter().chain(self.stats.counters());
        both.map(|(k, v)| (k.to_string(), v)).collect()
    }
}

/// A packet held on a link: (peer, origin, bytes).
type Held = DelayLine<(SocketAddr, SocketAddr, Vec<u8>)>;

/// The origin shim for `origin` (at most 23 bytes) in `buf`; its length.
fn write_origin_shim(origin: SocketAddr, buf: &mut [u8; 23]) -> usize {
    buf[..4].copy_from_slice(&ORIGIN_SHIM_MAGIC);
    let n = match origin.ip() {
        IpAddr::V4(a) => {
            buf[4] = 4;
            buf[5..9].copy_from_slice(&a.octets());
            9
        }
        IpAddr::V6(a) => {
            buf[4] = 6;
            buf[5..21].copy_from_slice(&a.octets());
            21
        }
    };
    buf[n..n + 2].copy_from_slice(&origin.port().to_be_bytes());
    n + 2
}

struct SwitchLoop<'a> {
    opts: &'a SwitchOptions,
    routes: ReversePath<SocketAddr>,
    in_up: Held,
    in_down: Held,
    out_up: Held,
    out_down: Held,
    tx: TxBatch,
    /// Scratch: where the packet being handled goes.
    targets: Vec<SocketAddr>,
}

impl SwitchLoop<'_> {
    /// Queues `bytes` for `to` now, with the origin shim if `to` is a switch.
    fn transmit<P>(tx: &mut TxBatch, st: &SwitchState<P>, to: SocketAddr, origin: SocketAddr, bytes: &[u8]) {
        if st.tables.switch_peers.contains(&to) {
            let mut shim = [0u8; 23];
            let n = write_origin_shim(origin, &mut shim);
            tx.push_parts(0, to, &shim[..n], bytes);
        } else {
            tx.push(0, to, bytes);
        }
    }

    fn send<P>(&mut self, st: &SwitchState<P>, to: SocketAddr, origin: SocketAddr, bytes: &[u8], now: Time) {
        let line = if to == self.opts.upstream { &mut self.out_up } else { &mut self.out_down };
        if line.is_passthrough() {
            Self::transmit(&mut self.tx, st, to, origin, bytes);
        } else {
            line.push(now, (to, origin, bytes.to_vec()));
        }
    }

    /// Where `verdict` sends the packet (several places for a multicast),
    /// into `self.targets`.
    fn targets<P>(&mut self, st: &mut SwitchState<P>, verdict: Verdict, from: SocketAddr, origin: SocketAddr) {
        self.targets.clear();
        match verdict {
            Verdict::Upstream { flow } => {
                self.routes.learn(flow, from);
                st.stats.to_upstream += 1;
                self.targets.push(self.opts.upstream);
                return;
            }
            Verdict::Downstream { flow } => {
                if let Some(to) = self.routes.lookup(flow) {
                    st.stats.to_downstream += 1;
                    self.targets.push(to);
                    return;
                }
            }
            Verdict::Reflect => {
                st.stats.reflected += 1;
                self.targets.push(from);
                return;
            }
            Verdict::Drop => {
                st.stats.dropped += 1;
                return;
            }
            Verdict::Port { port } => self.targets.extend(st.tables.ports.get(port as usize).copied().flatten()),
            Verdict::Multicast { group } => {
                let members = st.tables.groups.get(&group).map(Vec::as_slice).unwrap_or(&[]);
                self.targets.extend(members.iter().map(|m| match m {
                    Member::Node(a) => *a,
                    Member::Origin => origin,
                }));
            }
            Verdict::Origin => self.targets.push(origin),
        }
        if self.targets.is_empty() {
            st.stats.dropped_no_route += 1;
        }
        st.stats.to_ports += self.targets.len() as u64;
    }

    fn process<P: DataPlane>(
        &mut self,
        st: &mut SwitchState<P>,
        from: SocketAddr,
        origin: SocketAddr,
        bytes: &mut [u8],
        now: Time,
    ) {
        if !crate::host::Admission::admit(&self.opts.admit, from, bytes, &mut st.stats.rejected) {
            return;
        }
        let ingress = match st.tables.peer_ids.get(&from) {
            _ if from == self.opts.upstream => Ingress::Upstream,
            Some(&p) => Ingress::Peer(p),
            None => Ingress::Downstream,
        };
        if ingress != Ingress::Upstream {
            if let Some(flow) = st.program.request_flow(bytes).filter(|&f| !self.routes.admits(f, from)) {
                tracing::debug!(%from, flow, "request of a flow bound to another sender refused");
                st.stats.refused_other_sender += 1;
                if let Some(len) = st.program.refuse(bytes) {
                    let bytes = &bytes[..len.min(bytes.len())];
                    self.send(st, from, origin, bytes, now);
                }
                return;
            }
        }
        let (verdict, len) = st.program.process_from(bytes, ingress);
        let bytes = &bytes[..len.min(bytes.len())];
        self.targets(st, verdict, from, origin);
        for k in 0..self.targets.len() {
            let to = self.targets[k];
            self.send(st, to, origin, bytes, now);
        }
    }

    /// One received datagram (after the shim, if any, is taken off).
    fn incoming<P: DataPlane>(&mut self, st: &mut SwitchState<P>, from: SocketAddr, bytes: &mut [u8], now: Time) {
        let Some(len) = crate::auth::PeerAuth::open(&self.opts.auth, from, bytes, &mut st.stats.rejected) else {
            return;
        };
        let bytes = &mut bytes[..len];
        let up = from == self.opts.upstream;
        if up {
            st.stats.from_upstream += 1;
        } else {
            st.stats.from_downstream += 1;
        }
        let (origin, bytes) = if st.tables.switch_peers.contains(&from) {
            match split_origin_shim(bytes) {
                Some((origin, at)) => (origin, &mut bytes[at..]),
                None => {
                    tracing::debug!(%from, "packet from a switch peer without an origin shim dropped");
                    st.stats.dropped_bad_shim += 1;
                    return;
                }
            }
        } else {
            (from, bytes)
        };
        let line = if up { &mut self.in_up } else { &mut self.in_down };
        if line.is_passthrough() {
            self.process(st, from, origin, bytes, now);
        } else {
            line.push(now, (from, origin, bytes.to_vec()));
        }
    }

    /// Runs due timers in due order; returns the next deadline.
    fn timers<P: DataPlane>(&mut self, st: &mut SwitchState<P>) -> Option<Time> {
        loop {
            let now = clock::now();
            // Of the two ingress lines, the one whose head is due first goes first.
            let up = self.in_up.next_due().filter(|t| *t <= now);
            let down = self.in_down.next_due().filter(|t| *t <= now);
            let item = match (up, down) {
                (Some(a), Some(b)) if b < a => self.in_down.pop_due(now),
                (Some(_), _) => self.in_up.pop_due(now),
                (None, Some(_)) => self.in_down.pop_due(now),
                (None, None) => break,
            };
            if let Some((from, origin, mut bytes)) = item {
                self.process(st, from, origin, &mut bytes, now);
            }
        }
        // Whatever the delayed packets changed is made durable before
        // anything of this round leaves (DataPlane::before_send).
        st.program.before_send();
        let now = clock::now();
        while let Some((to, origin, bytes)) = self.out_up.pop_due(now) {
            Self::transmit(&mut self.tx, st, to, origin, &bytes);
        }
        while let Some((to, origin, bytes)) = self.out_down.pop_due(now) {
            Self::transmit(&mut self.tx, st, to, origin, &bytes);
        }
        [self.in_up.next_due(), self.in_down.next_due(), self.out_up.next_due(), self.out_down.next_due()]
            .into_iter()
            .flatten()
            .min()
    }

    /// Sends what is queued (without holding the switch's lock).
    fn flush<P>(&mut self, ports: &mut Ports, state: &Mutex<SwitchState<P>>) {
        if self.tx.is_empty() {
            return;
        }
        let mut errors = 0;
        ports.flush(&mut self.tx, |_, ok| errors += u64::from(!ok));
        if errors != 0 {
            tracing::debug!(errors, "send errors");
            lock(state).stats.send_errors += errors;
        }
    }
}

fn lock<P>(state: &Mutex<SwitchState<P>>) -> std::sync::MutexGuard<'_, SwitchState<P>> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `state.program` as a switch on `socket` in the calling thread until
/// `stop` is set. The switch's lock is taken once per received batch (and
/// once per round of timers), not per packet.
pub fn run_switch<P: DataPlane>(
    state: &Mutex<SwitchState<P>>,
    socket: UdpSocket,
    opts: &SwitchOptions,
    stop: &Stop,
) -> io::Result<()> {
    if opts.reverse_path_capacity == 0 {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "reverse_path_capacity must be at least 1"));
    }
    let mut ports = Ports::new(vec![socket])?;
    let mut lp = SwitchLoop {
        opts,
        routes: ReversePath::new(opts.reverse_path_capacity),
        in_up: DelayLine::new(opts.upstream_delay),
        in_down: DelayLine::new(opts.downstream_delay),
        out_up: DelayLine::new(opts.upstream_delay),
        out_down: DelayLine::new(opts.downstream_delay),
        tx: TxBatch::sealed(opts.auth.clone()),
        targets: Vec::new(),
    };
    let mut rx = RxBatch::new();
    let mut ready = Vec::new();
    let mut overflow = 0;
    while !stop.is_stopped() {
        let next = lp.timers(&mut lock(state));
        lp.flush(&mut ports, state);
        ports.wait(next, MAX_WAIT);
        ports.take_ready(&mut ready);
        for &port in &ready {
            if ports.recv(port, &mut rx) == 0 {
                continue;
            }
            let now = clock::now();
            {
                let mut st = lock(state);
                for k in 0..rx.len() {
                    let (from, bytes) = rx.get_mut(k);
                    lp.incoming(&mut st, from, bytes, now);
                }
                st.program.before_send();
                if ports.overflow(port) != overflow {
                    overflow = ports.overflow(port);
                    st.stats.rx_overflow = overflow;
                }
            }
            lp.flush(&mut ports, state);
        }
    }
    Ok(())
}

/// A switch running in its own thread; its program and counters can be
/// looked at while it runs.
pub struct SwitchNode<P> {
    handle: NodeHandle<()>,
    state: Arc<Mutex<SwitchState<P>>>,
}

impl<P> SwitchNode<P> {
    pub fn name(&self) -> &str {
        self.handle.name()
    }
    pub fn addr(&self) -> SocketAddr {
        self.handle.addr()
    }
    pub fn stop(&self) {
        self.handle.stop()
    }
    pub fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }
    /// The shared program and runtime counters.
    pub fn state(&self) -> &Arc<Mutex<SwitchState<P>>> {
        &self.state
    }
    /// Runs `f` on the program (holding the switch's lock).
    pub fn with_program<T>(&self, f: impl FnOnce(&mut P) -> T) -> T {
        f(&mut self.state.lock().unwrap_or_else(|e| e.into_inner()).program)
    }
    pub fn stats(&self) -> SwitchStats {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).stats.clone()
    }
    /// Runs `f` on the forwarding tables (a control plane's write).
    pub fn with_tables<T>(&self, f: impl FnOnce(&mut SwitchTables) -> T) -> T {
        f(&mut self.state.lock().unwrap_or_else(|e| e.into_inner()).tables)
    }
    /// Stops the switch and waits for its thread.
    pub fn shutdown(self) -> io::Result<()> {
        self.handle.shutdown()
    }
}

impl<P: Counters> SwitchNode<P> {
    /// The program's counters followed by the runtime's (`live_*`).
    pub fn counters(&self) -> Vec<(String, u64)> {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).counters()
    }
}

/// Starts `program` as a switch on `socket` in its own thread. It stops
/// when `stop` (or the node's own stop) is set.
pub fn spawn_switch<P: DataPlane + Send + 'static>(
    name: &str,
    program: P,
    socket: UdpSocket,
    opts: SwitchOptions,
    stop: &Stop,
) -> io::Result<SwitchNode<P>> {
    spawn_switch_with_tables(name, program, socket, opts, SwitchTables::default(), stop)
}

/// [`spawn_switch`] with forwarding tables configured from the start.
pub fn spawn_switch_with_tables<P: DataPlane + Send + 'static>(
    name: &str,
    program: P,
    socket: UdpSocket,
    opts: SwitchOptions,
    tables: SwitchTables,
    stop: &Stop,
) -> io::Result<SwitchNode<P>> {
    let addr = socket.local_addr()?;
    let state = Arc::new(Mutex::new(SwitchState { program, stats: SwitchStats::default(), tables }));
    let stop = stop.child();
    let (st, s) = (state.clone(), stop.clone());
    let node = name.to_string();
    let thread = std::thread::Builder::new().name(format!("innet-{name}")).spawn(move || {
        let _span = tracing::info_span!("node", name = %node).entered();
        tracing::info!(%addr, "switch started");
        let r = run_switch(&st, socket, &opts, &s);
        match &r {
            Ok(()) => tracing::info!("switch stopped"),
            Err(e) => tracing::error!(error = %e, "switch failed"),
        }
        r
    })?;
    Ok(SwitchNode { handle: NodeHandle::new(name.to_string(), addr, stop, thread), state })
}
