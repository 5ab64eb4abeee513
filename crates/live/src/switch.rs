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

use innet_core::{Counters, DataPlane, Member, ReversePath, Time, Verdict};

use crate::clock;
use crate::delay::DelayLine;
use crate::host::{NodeHandle, MAX_WAIT};
use crate::net::BURST;
use crate::net::{Incoming, Ports};
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
}

impl SwitchOptions {
    pub fn new(upstream: SocketAddr) -> SwitchOptions {
        SwitchOptions {
            upstream,
            upstream_delay: Duration::ZERO,
            downstream_delay: Duration::ZERO,
            reverse_path_capacity: REVERSE_PATH_DEFAULT,
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
    let mut out = Vec::with_capacity(bytes.len() + 23);
    out.extend_from_slice(&ORIGIN_SHIM_MAGIC);
    match origin.ip() {
        IpAddr::V4(a) => {
            out.push(4);
            out.extend_from_slice(&a.octets());
        }
        IpAddr::V6(a) => {
            out.push(6);
            out.extend_from_slice(&a.octets());
        }
    }
    out.extend_from_slice(&origin.port().to_be_bytes());
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
}

impl Counters for SwitchStats {
    fn counters(&self) -> Vec<(&'static str, u64)> {
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
            ("live_send_errors", self.send_errors),
        ]
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

struct SwitchLoop<'a, P> {
    state: &'a Mutex<SwitchState<P>>,
    opts: &'a SwitchOptions,
    ports: Ports,
    routes: ReversePath<SocketAddr>,
    in_up: Held,
    in_down: Held,
    out_up: Held,
    out_down: Held,
}

impl<P: DataPlane> SwitchLoop<'_, P> {
    fn lock(&self) -> std::sync::MutexGuard<'_, SwitchState<P>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn transmit(&self, to: SocketAddr, origin: SocketAddr, bytes: &[u8]) {
        let shimmed;
        let bytes = if self.lock().tables.switch_peers.contains(&to) {
            shimmed = add_origin_shim(origin, bytes);
            &shimmed[..]
        } else {
            bytes
        };
        if self.ports.send(0, to, bytes).is_err() {
            self.lock().stats.send_errors += 1;
        }
    }

    fn send(&mut self, to: SocketAddr, origin: SocketAddr, bytes: Vec<u8>, now: Time) {
        let line = if to == self.opts.upstream { &mut self.out_up } else { &mut self.out_down };
        if line.is_passthrough() {
            self.transmit(to, origin, &bytes);
        } else {
            line.push(now, (to, origin, bytes));
        }
    }

    /// Where `verdict` sends the packet (several places for a multicast).
    fn targets(&mut self, verdict: Verdict, from: SocketAddr, origin: SocketAddr) -> Vec<SocketAddr> {
        let mut st = self.lock();
        let to: Vec<SocketAddr> = match verdict {
            Verdict::Upstream { flow } => {
                drop(st);
                self.routes.learn(flow, from);
                st = self.lock();
                st.stats.to_upstream += 1;
                return vec![self.opts.upstream];
            }
            Verdict::Downstream { flow } => match self.routes.lookup(flow) {
                Some(to) => {
                    st.stats.to_downstream += 1;
                    return vec![to];
                }
                None => vec![],
            },
            Verdict::Reflect => {
                st.stats.reflected += 1;
                return vec![from];
            }
            Verdict::Drop => {
                st.stats.dropped += 1;
                return vec![];
            }
            Verdict::Port { port } => st.tables.ports.get(port as usize).copied().flatten().into_iter().collect(),
            Verdict::Multicast { group } => {
                let members = st.tables.groups.get(&group).map(Vec::as_slice).unwrap_or(&[]);
                members
                    .iter()
                    .map(|m| match m {
                        Member::Node(a) => *a,
                        Member::Origin => origin,
                    })
                    .collect()
            }
            Verdict::Origin => vec![origin],
        };
        if to.is_empty() {
            st.stats.dropped_no_route += 1;
        }
        st.stats.to_ports += to.len() as u64;
        to
    }

    fn process(&mut self, from: SocketAddr, origin: SocketAddr, mut bytes: Vec<u8>) {
        let (verdict, len) = self.lock().program.process_len(&mut bytes);
        bytes.truncate(len);
        let now = clock::now();
        let targets = self.targets(verdict, from, origin);
        for to in targets {
            self.send(to, origin, bytes.clone(), now);
        }
    }

    fn incoming(&mut self, inc: Incoming) {
        let up = inc.from == self.opts.upstream;
        let (origin, bytes) = {
            let mut st = self.lock();
            if up {
                st.stats.from_upstream += 1;
            } else {
                st.stats.from_downstream += 1;
            }
            if st.tables.switch_peers.contains(&inc.from) {
                match split_origin_shim(&inc.bytes) {
                    Some((origin, at)) => (origin, inc.bytes[at..].to_vec()),
                    None => {
                        st.stats.dropped_bad_shim += 1;
                        return;
                    }
                }
            } else {
                (inc.from, inc.bytes)
            }
        };
        let line = if up { &mut self.in_up } else { &mut self.in_down };
        if line.is_passthrough() {
            self.process(inc.from, origin, bytes);
        } else {
            line.push(clock::now(), (inc.from, origin, bytes));
        }
    }

    /// Runs due timers in due order; returns the next deadline.
    fn timers(&mut self) -> Option<Time> {
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
            if let Some((from, origin, bytes)) = item {
                self.process(from, origin, bytes);
            }
        }
        let now = clock::now();
        while let Some((to, origin, bytes)) = self.out_up.pop_due(now) {
            self.transmit(to, origin, &bytes);
        }
        while let Some((to, origin, bytes)) = self.out_down.pop_due(now) {
            self.transmit(to, origin, &bytes);
        }
        [self.in_up.next_due(), self.in_down.next_due(), self.out_up.next_due(), self.out_down.next_due()]
            .into_iter()
            .flatten()
            .min()
    }
}

/// Runs `state.program` as a switch on `socket` in the calling thread until
/// `stop` is set.
pub fn run_switch<P: DataPlane>(
    state: &Mutex<SwitchState<P>>,
    socket: UdpSocket,
    opts: &SwitchOptions,
    stop: &Stop,
) -> io::Result<()> {
    if opts.reverse_path_capacity == 0 {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "reverse_path_capacity must be at least 1"));
    }
    let ports = Ports::new(vec![socket], stop)?;
    let mut lp = SwitchLoop {
        state,
        opts,
        ports,
        routes: ReversePath::new(opts.reverse_path_capacity),
        in_up: DelayLine::new(opts.upstream_delay),
        in_down: DelayLine::new(opts.downstream_delay),
        out_up: DelayLine::new(opts.upstream_delay),
        out_down: DelayLine::new(opts.downstream_delay),
    };
    let mut batch = Vec::with_capacity(BURST);
    while !stop.is_stopped() {
        let next = lp.timers();
        let now = clock::now();
        let deadline = next.map_or(now + MAX_WAIT, |t| t.min(now + MAX_WAIT));
        lp.ports.recv_burst(deadline.since(now), &mut batch);
        for inc in batch.drain(..) {
            lp.incoming(inc);
        }
        let overflow = lp.ports.overflow();
        if overflow != 0 {
            lp.lock().stats.rx_overflow = overflow;
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
    let thread =
        std::thread::Builder::new().name(format!("innet-{name}")).spawn(move || run_switch(&st, socket, &opts, &s))?;
    Ok(SwitchNode { handle: NodeHandle::new(name.to_string(), addr, stop, thread), state })
}
