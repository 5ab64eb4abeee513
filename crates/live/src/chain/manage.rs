//! The chain control plane's management channel over UDP, so the control
//! plane, the chain switches and the clients can run on different machines
//! (the way a P4 controller reaches its switches over the network).
//!
//! Every chain switch process runs an [`Agent`] beside the switch, on the
//! switch's management address ([`manage_addr`]): it answers the control
//! plane's requests by reading and writing the switch's registers and
//! tables. The control process runs the control loop over [`RemoteNodes`]
//! and, in a thread of its own, answers clients' requests for the chain's
//! current order (VIEW, [`serve_views`]); client processes follow it
//! ([`follow_view`]).
//!
//! **Management traffic is kept apart from everything else**, so that no
//! flood from an ordinary socket can fake a failure (the control plane
//! removes a node that misses its heartbeats):
//!
//! * The control plane talks to the agents from its management address
//!   (its own address, [`MANAGE_PORT_OFFSET`] ports up), through one UDP
//!   socket per agent, each *connected* to that agent
//!   ([`control_sockets`]; `SO_REUSEPORT` lets them share the address,
//!   which only processes of the same user can join). An agent's socket is
//!   connected to the control plane's management address. The kernel
//!   delivers to a connected UDP socket only what comes from its peer, so
//!   anything else sent to a management port never reaches a socket
//!   buffer (it is counted by the kernel, `UdpNoPorts`), and cannot crowd
//!   out an answer. Agents also check the source of what reaches them
//!   (`dropped_foreign`).
//! * Clients' VIEW requests go to the control plane's own address, served
//!   by their own thread with a token bucket per client address
//!   ([`VIEW_ANSWERS_PER_S`], [`VIEW_BURST`], at most [`VIEW_SOURCES_MAX`]
//!   addresses) and one for all ([`VIEW_ANSWERS_PER_S_TOTAL`]): a VIEW flood
//!   costs the control loop nothing and gets few answers.
//! * The control plane judges a node failed only after it missed
//!   heartbeats for `failure_timeout` *and* did not answer
//!   [`innet_chain::control::SILENT_POLLS_FOR_FAILURE`] polls in a row, and
//!   a poll reads an answer that arrived while the control loop was held
//!   up (a busy CPU delays a heartbeat, it does not fail the node).
//!
//! Messages (big-endian): `"iNm\x01"`, kind (u8), sequence number (u32),
//! then the body:
//!
//! | kind | body | answer |
//! |---|---|---|
//! | 1 REPORT | - | 2: configured (u8), full objects (u32), layout version (u64) |
//! | 3 APPLY | version (u64), paused (u8), n (u8), n chain indexes (u8) | 4 ACK |
//! | 5 SNAPSHOT_GET | offset (u32) | 6: total (u32), offset (u32), entries |
//! | 7 SNAPSHOT_PUT | total (u32), offset (u32), entries | 4 ACK (once loaded, at the last chunk) |
//! | 8 VIEW | - | 9: version (u64), n (u8), n chain indexes (u8) |
//!
//! With `--auth-key` (`auth_key` in the topology's `[chain]` table) every
//! message between the control plane and an agent carries the MAC trailer
//! of [`innet_core::auth`] after the body, and one without is dropped
//! (`dropped_unauthenticated`): the kernel's connected sockets keep other
//! addresses out, the keys keep out a raw socket that spoofs the control
//! plane's. VIEW requests and answers are a client's and go unsealed.
//!
//! Snapshot entries are NetCRAQ values (16 bytes each) or NetChain slots
//! (key 16, value 16, sequence 2 bytes), [`CHUNK_ENTRIES`] per datagram.

use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use innet_chain::control::{Layout, NodeReport};
use innet_chain::netchain::Slot;
use innet_chain::node::{ChainNode, Snapshot};
use innet_chain::Protocol;
use innet_core::auth::AuthKeys;
use innet_wire::netchain::{ChainKey, KEY_LEN};
use innet_wire::netcraq::{Value, VALUE_LEN};

use super::{ChainNodes, ChainView};
use crate::switch::SwitchState;
use crate::Stop;

pub const MAGIC: [u8; 4] = *b"iNm\x01";
/// A chain switch's agent listens this many ports above the switch.
pub const MANAGE_PORT_OFFSET: u16 = 1000;
/// Snapshot entries per datagram (at most 34 bytes each: under 1,400
/// bytes, one Ethernet frame).
pub const CHUNK_ENTRIES: usize = 40;
/// Longest a chain may be on the wire (n is a u8).
pub const MAX_CHAIN: usize = 255;
/// Times the control plane asks a chain member to take a layout or a
/// snapshot before it reports the step as not landed.
pub const MEMBER_ATTEMPTS: u32 = 3;
/// VIEW answers one client address gets per second at most (a client
/// asks every 5 ms: 200 a second).
pub const VIEW_ANSWERS_PER_S: f64 = 1_000.0;
/// VIEW answers one client address may get at once after a quiet spell.
pub const VIEW_BURST: f64 = 50.0;
/// VIEW answers per second to every address together (what a flood from
/// many ports gets out of the control plane).
pub const VIEW_ANSWERS_PER_S_TOTAL: f64 = 20_000.0;
/// VIEW answers every address together may get at once.
pub const VIEW_BURST_TOTAL: f64 = 1_000.0;
/// Client addresses with a token bucket of their own; beyond, a new
/// address is limited by the total alone until addresses quiet for a
/// second are forgotten.
pub const VIEW_SOURCES_MAX: usize = 4_096;

const REPORT: u8 = 1;
const REPORTED: u8 = 2;
const APPLY: u8 = 3;
const ACK: u8 = 4;
const SNAPSHOT_GET: u8 = 5;
const SNAPSHOT_CHUNK: u8 = 6;
const SNAPSHOT_PUT: u8 = 7;
const VIEW: u8 = 8;
const VIEWED: u8 = 9;
const HEADER: usize = 9;
const CHAIN_SLOT: usize = KEY_LEN + VALUE_LEN + 2;

/// The management address of a chain switch listening on `addr`: the same
/// host, [`MANAGE_PORT_OFFSET`] ports up. `None` if that passes 65535.
pub fn manage_addr(addr: SocketAddr) -> Option<SocketAddr> {
    let port = addr.port().checked_add(MANAGE_PORT_OFFSET)?;
    Some(SocketAddr::new(addr.ip(), port))
}

fn msg(kind: u8, seq: u32, body: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(HEADER + body.len());
    v.extend_from_slice(&MAGIC);
    v.push(kind);
    v.extend_from_slice(&seq.to_be_bytes());
    v.extend_from_slice(body);
    v
}

/// `m` with the keys' trailer, if any.
fn seal(auth: &Option<AuthKeys>, m: Vec<u8>) -> Vec<u8> {
    match auth {
        Some(k) => k.seal(&m),
        None => m,
    }
}

/// The message `b` seals (all of `b` without keys); `None` if its trailer
/// does not check.
fn open<'a>(auth: &Option<AuthKeys>, b: &'a [u8]) -> Option<&'a [u8]> {
    match auth {
        Some(k) => k.open(b).ok().and_then(|n| b.get(..n)),
        None => Some(b),
    }
}

/// (kind, sequence, body) of a well-formed message.
fn parse(b: &[u8]) -> Option<(u8, u32, &[u8])> {
    let rest = b.strip_prefix(&MAGIC[..])?;
    let (&kind, rest) = rest.split_first()?;
    let seq = u32::from_be_bytes(rest.get(..4)?.try_into().ok()?);
    Some((kind, seq, &rest[4..]))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn be64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// n (u8) then n chain indexes, each below `nodes`.
fn parse_chain(b: &[u8], nodes: usize) -> Option<Vec<usize>> {
    let (&n, rest) = b.split_first()?;
    let chain: Vec<usize> = rest.get(..n as usize)?.iter().map(|&i| i as usize).collect();
    let mut seen = vec![false; nodes];
    for &i in &chain {
        if i >= nodes || std::mem::replace(&mut seen[i], true) {
            return None;
        }
    }
    Some(chain)
}

fn encode_chain(chain: &[usize], out: &mut Vec<u8>) {
    out.push(chain.len() as u8);
    out.extend(chain.iter().map(|&i| i as u8));
}

fn snapshot_len(s: &Snapshot) -> usize {
    match s {
        Snapshot::Craq(v) => v.len(),
        Snapshot::Chain(v) => v.len(),
    }
}

fn encode_entries(s: &Snapshot, from: usize, out: &mut Vec<u8>) {
    let to = (from + CHUNK_ENTRIES).min(snapshot_len(s));
    match s {
        Snapshot::Craq(v) => v[from..to].iter().for_each(|x| out.extend_from_slice(&x.0)),
        Snapshot::Chain(v) => v[from..to].iter().for_each(|(k, slot)| {
            out.extend_from_slice(k);
            out.extend_from_slice(&slot.value.0);
            out.extend_from_slice(&slot.seq.to_be_bytes());
        }),
    }
}

/// Appends the entries of `b` to `into` (of `protocol`'s kind); `None` if
/// `b` is not a whole number of entries.
fn decode_entries(protocol: Protocol, b: &[u8], into: &mut Snapshot) -> Option<()> {
    match (protocol, into) {
        (Protocol::NetCraq, Snapshot::Craq(v)) if b.chunks_exact(VALUE_LEN).remainder().is_empty() => {
            v.extend(b.chunks_exact(VALUE_LEN).map(|c| Value(c.try_into().expect("chunk"))));
        }
        (Protocol::NetChain, Snapshot::Chain(v)) if b.chunks_exact(CHAIN_SLOT).remainder().is_empty() => {
            v.extend(b.chunks_exact(CHAIN_SLOT).map(|c| {
                let key: ChainKey = c[..KEY_LEN].try_into().expect("key");
                let value = Value(c[KEY_LEN..KEY_LEN + VALUE_LEN].try_into().expect("value"));
                let seq = u16::from_be_bytes([c[CHAIN_SLOT - 2], c[CHAIN_SLOT - 1]]);
                (key, Slot { value, seq })
            }));
        }
        _ => return None,
    }
    Some(())
}

fn empty(protocol: Protocol) -> Snapshot {
    match protocol {
        Protocol::NetCraq => Snapshot::Craq(vec![]),
        Protocol::NetChain => Snapshot::Chain(vec![]),
    }
}

/// What an agent counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgentStats {
    pub requests: u64,
    /// Requests from anyone but the control plane.
    pub dropped_foreign: u64,
    /// `--auth-key`: from the control plane's address, without a trailer
    /// that checks.
    pub dropped_unauthenticated: u64,
    pub dropped_malformed: u64,
}

/// The management agent of chain switch `index`: answers the control
/// plane (and only it) by reading and writing the switch's state.
pub struct Agent {
    pub index: usize,
    protocol: Protocol,
    /// Every chain switch's data address (for the tables a layout implies).
    addrs: Vec<SocketAddr>,
    control: SocketAddr,
    switch: Arc<Mutex<SwitchState<ChainNode>>>,
    applied: u64,
    snapshot: Option<Snapshot>,
    incoming: Option<(u32, Snapshot)>,
    auth: Option<AuthKeys>,
    pub stats: AgentStats,
}

impl Agent {
    pub fn new(
        index: usize,
        protocol: Protocol,
        addrs: Vec<SocketAddr>,
        control: SocketAddr,
        switch: Arc<Mutex<SwitchState<ChainNode>>>,
    ) -> Agent {
        Agent {
            index,
            protocol,
            addrs,
            control,
            switch,
            applied: 0,
            snapshot: None,
            incoming: None,
            auth: None,
            stats: AgentStats::default(),
        }
    }

    /// `--auth-key`: takes only sealed requests and seals its answers.
    pub fn with_auth(self, auth: Option<AuthKeys>) -> Agent {
        Agent { auth, ..self }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, SwitchState<ChainNode>> {
        self.switch.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn apply(&mut self, layout: &Layout) {
        let n = self.addrs.len();
        let t = layout.tables(self.index);
        let tables = super::layout_tables(self.protocol, layout, &self.addrs, self.index);
        let mut st = self.state();
        st.program.configure(&t, n);
        st.tables = tables;
    }

    /// Answers one request; `None` for anything not to be answered.
    fn handle(&mut self, from: SocketAddr, b: &[u8]) -> Option<Vec<u8>> {
        if from != self.control {
            self.stats.dropped_foreign += 1;
            return None;
        }
        let Some(b) = open(&self.auth, b) else {
            self.stats.dropped_unauthenticated += 1;
            return None;
        };
        let Some((kind, seq, body)) = parse(b) else {
            self.stats.dropped_malformed += 1;
            return None;
        };
        self.stats.requests += 1;
        let n = self.addrs.len();
        let reply = match kind {
            REPORT => {
                let r = self.state().program.report();
                let mut body = vec![u8::from(r.configured)];
                body.extend_from_slice(&(r.full_objects.min(u32::MAX as usize) as u32).to_be_bytes());
                body.extend_from_slice(&self.applied.to_be_bytes());
                msg(REPORTED, seq, &body)
            }
            APPLY => {
                let version = be64(body, 0)?;
                let paused = *body.get(8)? != 0;
                let chain = parse_chain(&body[9..], n)?;
                if version > self.applied {
                    self.apply(&Layout { chain, writes_paused: paused });
                    self.applied = version;
                }
                msg(ACK, seq, &[])
            }
            SNAPSHOT_GET => self.snapshot_get(seq, body)?,
            SNAPSHOT_PUT => self.snapshot_put(seq, body)?,
            _ => {
                self.stats.dropped_malformed += 1;
                return None;
            }
        };
        Some(seal(&self.auth, reply))
    }

    /// SNAPSHOT_GET: the chunk of this switch's snapshot from the entry
    /// offset in `body` (a fresh snapshot at offset 0).
    fn snapshot_get(&mut self, seq: u32, body: &[u8]) -> Option<Vec<u8>> {
        let offset = be32(body, 0)? as usize;
        if offset == 0 || self.snapshot.is_none() {
            let snap = self.state().program.snapshot();
            self.snapshot = Some(snap);
        }
        let s = self.snapshot.as_ref().expect("taken above");
        let total = snapshot_len(s);
        if offset > total {
            self.stats.dropped_malformed += 1;
            return None;
        }
        let mut body = (total as u32).to_be_bytes().to_vec();
        body.extend_from_slice(&(offset as u32).to_be_bytes());
        encode_entries(s, offset, &mut body);
        Some(msg(SNAPSHOT_CHUNK, seq, &body))
    }

    /// SNAPSHOT_PUT: one chunk of a snapshot to install, in order from
    /// offset 0; the switch loads it once it is whole.
    fn snapshot_put(&mut self, seq: u32, body: &[u8]) -> Option<Vec<u8>> {
        let (total, offset) = (be32(body, 0)?, be32(body, 4)? as usize);
        if offset == 0 {
            // A snapshot of exactly this switch's size, or nothing.
            let size = snapshot_len(&self.state().program.snapshot());
            if total as usize != size {
                self.stats.dropped_malformed += 1;
                return None;
            }
            self.incoming = Some((total, empty(self.protocol)));
        }
        let (want, snap) = self.incoming.as_mut()?;
        if *want != total || snapshot_len(snap) != offset {
            // Out of order: the control plane starts again from 0.
            self.stats.dropped_malformed += 1;
            return None;
        }
        decode_entries(self.protocol, &body[8..], snap)?;
        if snapshot_len(snap) > total as usize {
            self.incoming = None;
            self.stats.dropped_malformed += 1;
            return None;
        }
        if snapshot_len(snap) == total as usize {
            let (_, snap) = self.incoming.take().expect("present");
            self.state().program.load(&snap);
        }
        Some(msg(ACK, seq, &[]))
    }
}

/// Runs `agent` on `socket` until `stop`: a request/answer loop at the
/// control plane's pace (a few requests per heartbeat), apart from the
/// switch's packet path.
pub fn run_agent(mut agent: Agent, socket: UdpSocket, stop: &Stop) -> io::Result<AgentStats> {
    socket.set_read_timeout(Some(Duration::from_millis(50)))?;
    let mut buf = vec![0u8; 2048];
    while !stop.is_stopped() {
        let Ok((n, from)) = socket.recv_from(&mut buf) else { continue };
        if let Some(r) = agent.handle(from, &buf[..n]) {
            let _ = socket.send_to(&r, from);
        }
    }
    Ok(agent.stats)
}

/// The control plane's sockets to the agents at `agents`: one per agent,
/// each bound to the control plane's management address `manage` (with
/// `SO_REUSEPORT`, so that they can share it) and connected to its agent,
/// so that the kernel hands each only its agent's answers.
pub fn control_sockets(manage: SocketAddr, agents: &[SocketAddr]) -> io::Result<Vec<UdpSocket>> {
    use nix::sys::socket::{self as ns, sockopt, AddressFamily, SockFlag, SockType, SockaddrStorage};
    let family = if manage.is_ipv4() { AddressFamily::Inet } else { AddressFamily::Inet6 };
    agents
        .iter()
        .map(|&agent| {
            let fd = ns::socket(family, SockType::Datagram, SockFlag::SOCK_CLOEXEC, None)?;
            ns::setsockopt(&fd, sockopt::ReusePort, &true)?;
            ns::bind(fd.as_raw_fd(), &SockaddrStorage::from(manage)).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::AddrInUse,
                    format!("the control plane's management address {manage}: {e}"),
                )
            })?;
            let socket = UdpSocket::from(fd);
            socket.connect(agent)?;
            Ok(socket)
        })
        .collect()
}

/// A token bucket: `rate` tokens a second, at most `burst`.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn full(burst: f64, now: Instant) -> Bucket {
        Bucket { tokens: burst, at: now }
    }

    fn take(&mut self, rate: f64, burst: f64, now: Instant) -> bool {
        let refill = rate * now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + refill).min(burst);
        self.at = now;
        let ok = self.tokens >= 1.0;
        if ok {
            self.tokens -= 1.0;
        }
        ok
    }
}

/// Who gets a VIEW answer: a bucket per client address and one for all.
struct ViewLimiter {
    sources: HashMap<SocketAddr, Bucket>,
    total: Bucket,
    swept: Instant,
}

impl ViewLimiter {
    fn new(now: Instant) -> ViewLimiter {
        ViewLimiter { sources: HashMap::new(), total: Bucket::full(VIEW_BURST_TOTAL, now), swept: now }
    }

    fn allow(&mut self, from: SocketAddr, now: Instant) -> bool {
        let second = Duration::from_secs(1);
        if now.saturating_duration_since(self.swept) > second {
            self.sources.retain(|_, b| now.saturating_duration_since(b.at) < second);
            self.swept = now;
        }
        let room = self.sources.len() < VIEW_SOURCES_MAX;
        let own = match self.sources.get_mut(&from) {
            Some(b) => b.take(VIEW_ANSWERS_PER_S, VIEW_BURST, now),
            None if room => {
                let mut b = Bucket::full(VIEW_BURST, now);
                let ok = b.take(VIEW_ANSWERS_PER_S, VIEW_BURST, now);
                self.sources.insert(from, b);
                ok
            }
            None => true,
        };
        own && self.total.take(VIEW_ANSWERS_PER_S_TOTAL, VIEW_BURST_TOTAL, now)
    }
}

/// What the control plane's VIEW service counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ViewStats {
    pub answered: u64,
    /// VIEW requests beyond a bucket, not answered.
    pub limited: u64,
    /// Datagrams that are not a VIEW request.
    pub dropped_malformed: u64,
}

/// Answers clients' VIEW requests on `socket` (the control plane's own
/// address) with the chain order in `view`, within the token buckets,
/// until `stop`.
pub fn serve_views(socket: UdpSocket, view: ChainView, stop: &Stop) -> io::Result<ViewStats> {
    socket.set_read_timeout(Some(Duration::from_millis(50)))?;
    let mut stats = ViewStats::default();
    let mut limiter = ViewLimiter::new(Instant::now());
    let mut buf = vec![0u8; 512];
    while !stop.is_stopped() {
        let Ok((n, from)) = socket.recv_from(&mut buf) else { continue };
        match parse(buf.get(..n).unwrap_or_default()) {
            Some((VIEW, seq, _)) if limiter.allow(from, Instant::now()) => {
                let (version, chain) = view.lock().unwrap_or_else(|e| e.into_inner()).clone();
                let mut body = version.to_be_bytes().to_vec();
                encode_chain(&chain, &mut body);
                let _ = socket.send_to(&msg(VIEWED, seq, &body), from);
                stats.answered += 1;
            }
            Some((VIEW, _, _)) => stats.limited += 1,
            _ => stats.dropped_malformed += 1,
        }
    }
    Ok(stats)
}

/// The chain switches as the control plane reaches them over UDP.
pub struct RemoteNodes {
    protocol: Protocol,
    /// One socket per agent, connected to it ([`control_sockets`]).
    sockets: Vec<UdpSocket>,
    /// Each switch's agent.
    agents: Vec<SocketAddr>,
    seq: u32,
    /// The layout every node should hold, and its version.
    layout: Option<(u64, Layout)>,
    applied: Vec<u64>,
    /// How long to wait for an answer.
    timeout: Duration,
    /// `--auth-key`: requests sealed, answers checked.
    auth: Option<AuthKeys>,
}

impl RemoteNodes {
    /// `sockets` are the control plane's, one per agent of `agents`
    /// ([`control_sockets`]).
    pub fn new(
        protocol: Protocol,
        sockets: Vec<UdpSocket>,
        agents: Vec<SocketAddr>,
        timeout: Duration,
    ) -> io::Result<RemoteNodes> {
        if sockets.len() != agents.len() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "one management socket per agent"));
        }
        for s in &sockets {
            s.set_read_timeout(Some(timeout.max(Duration::from_millis(1))))?;
        }
        let n = agents.len();
        Ok(RemoteNodes { protocol, sockets, agents, seq: 0, layout: None, applied: vec![0; n], timeout, auth: None })
    }

    /// `--auth-key`: seals requests and takes only sealed answers.
    pub fn with_auth(self, auth: Option<AuthKeys>) -> RemoteNodes {
        RemoteNodes { auth, ..self }
    }

    /// Sends `req` to agent `i` and waits for the answer of the same
    /// sequence number. An answer that arrived while this thread was held
    /// up past the deadline is still read.
    fn ask(&mut self, i: usize, kind: u8, body: &[u8]) -> Option<(u8, Vec<u8>)> {
        self.seq = self.seq.wrapping_add(1);
        let seq = self.seq;
        let (socket, agent) = (self.sockets.get(i)?, *self.agents.get(i)?);
        socket.send(&seal(&self.auth, msg(kind, seq, body))).ok()?;
        let deadline = Instant::now() + self.timeout;
        let mut buf = vec![0u8; 2048];
        loop {
            // A refused send (the agent's port is closed) shows up here as
            // an error: that agent does not answer this time.
            if let Ok((n, from)) = socket.recv_from(&mut buf) {
                match open(&self.auth, buf.get(..n).unwrap_or_default()).and_then(parse) {
                    Some((k, s, b)) if from == agent && s == seq => return Some((k, b.to_vec())),
                    _ => continue,
                }
            }
            if Instant::now() >= deadline {
                return None;
            }
        }
    }

    /// Sends the current layout to agent `i`, up to `attempts` times until
    /// it acknowledges; whether it did.
    fn send_apply(&mut self, i: usize, attempts: u32) -> bool {
        let Some((version, layout)) = self.layout.clone() else { return false };
        let mut body = version.to_be_bytes().to_vec();
        body.push(u8::from(layout.writes_paused));
        encode_chain(&layout.chain, &mut body);
        for _ in 0..attempts {
            if let Some((ACK, _)) = self.ask(i, APPLY, &body) {
                self.applied[i] = version;
                return true;
            }
        }
        false
    }

    fn fetch(&mut self, from: usize) -> Option<Snapshot> {
        let mut snap = empty(self.protocol);
        loop {
            let offset = snapshot_len(&snap) as u32;
            let (k, b) = self.ask(from, SNAPSHOT_GET, &offset.to_be_bytes())?;
            if k != SNAPSHOT_CHUNK || be32(&b, 4)? != offset {
                return None;
            }
            let total = be32(&b, 0)? as usize;
            decode_entries(self.protocol, &b[8..], &mut snap)?;
            if snapshot_len(&snap) >= total {
                return (snapshot_len(&snap) == total).then_some(snap);
            }
            if b.len() == 8 {
                return None;
            }
        }
    }

    fn push(&mut self, to: usize, snap: &Snapshot) -> Option<()> {
        let total = snapshot_len(snap);
        let mut offset = 0;
        loop {
            let mut body = (total as u32).to_be_bytes().to_vec();
            body.extend_from_slice(&(offset as u32).to_be_bytes());
            encode_entries(snap, offset, &mut body);
            let (k, _) = self.ask(to, SNAPSHOT_PUT, &body)?;
            if k != ACK {
                return None;
            }
            offset = (offset + CHUNK_ENTRIES).min(total);
            if offset >= total {
                return Some(());
            }
        }
    }
}

impl ChainNodes for RemoteNodes {
    fn count(&self) -> usize {
        self.agents.len()
    }

    fn report(&mut self, i: usize) -> Option<NodeReport> {
        let (k, b) = self.ask(i, REPORT, &[])?;
        if k != REPORTED {
            return None;
        }
        let report = NodeReport { configured: *b.first()? != 0, full_objects: be32(&b, 1)? as usize };
        self.applied[i] = be64(&b, 5)?;
        // A node behind the current layout (it missed an APPLY, or it
        // restarted) gets it again.
        if self.layout.as_ref().is_some_and(|(v, _)| self.applied[i] < *v) && report.configured {
            self.send_apply(i, 1);
        }
        Some(report)
    }

    /// Every agent gets the layout, the head's last; a member that does
    /// not answer is asked [`MEMBER_ATTEMPTS`] times, any other node once
    /// (a node outside the chain may be down for good).
    fn apply(&mut self, layout: &Layout) -> bool {
        let version = self.layout.as_ref().map_or(1, |(v, _)| v + 1);
        self.layout = Some((version, layout.clone()));
        let mut all = true;
        for i in super::head_last(layout, self.agents.len()).collect::<Vec<_>>() {
            let member = layout.chain.contains(&i);
            let took = self.send_apply(i, if member { MEMBER_ATTEMPTS } else { 1 });
            all &= took || !member;
        }
        all
    }

    /// The source's snapshot, then each target's copy: each tried
    /// [`MEMBER_ATTEMPTS`] times from its start.
    fn copy(&mut self, from: usize, to: &[usize]) -> bool {
        let Some(snap) = (0..MEMBER_ATTEMPTS).find_map(|_| self.fetch(from)) else { return false };
        to.iter().all(|&t| (0..MEMBER_ATTEMPTS).any(|_| self.push(t, &snap).is_some()))
    }
}

/// Keeps `view` equal to the control plane's chain order, asking `control`
/// every `every` from `socket`, until `stop`.
pub fn follow_view(
    socket: UdpSocket,
    control: SocketAddr,
    view: ChainView,
    every: Duration,
    stop: &Stop,
) -> io::Result<()> {
    socket.set_read_timeout(Some(every))?;
    let mut seq = 0u32;
    let mut buf = vec![0u8; 512];
    let nodes = MAX_CHAIN;
    while !stop.is_stopped() {
        seq = seq.wrapping_add(1);
        let _ = socket.send_to(&msg(VIEW, seq, &[]), control);
        let started = Instant::now();
        while started.elapsed() < every {
            let Ok((n, from)) = socket.recv_from(&mut buf) else { break };
            let Some((VIEWED, s, b)) = parse(&buf[..n]) else { continue };
            if from != control || s != seq {
                continue;
            }
            let (Some(version), Some(chain)) = (be64(b, 0), b.get(8..).and_then(|c| parse_chain(c, nodes))) else {
                continue;
            };
            let mut v = view.lock().unwrap_or_else(|e| e.into_inner());
            if version > v.0 {
                *v = (version, chain);
            }
        }
        std::thread::sleep(every.saturating_sub(started.elapsed()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_cross_in_chunks() {
        for protocol in Protocol::ALL {
            let mut node = ChainNode::new(protocol, 0, 100, 3);
            if let ChainNode::Chain(p) = &mut node {
                for k in 0..70 {
                    p.install_key(innet_wire::netchain::key_from_u32(k)).unwrap();
                }
            }
            let snap = node.snapshot();
            let mut got = empty(protocol);
            let mut at = 0;
            while at < snapshot_len(&snap) {
                let mut b = vec![];
                encode_entries(&snap, at, &mut b);
                decode_entries(protocol, &b, &mut got).unwrap();
                at += CHUNK_ENTRIES;
            }
            assert_eq!(got, snap, "{protocol}");
        }
    }

    #[test]
    fn malformed_requests_are_refused() {
        assert_eq!(parse(b"iNm"), None);
        assert_eq!(parse(&msg(REPORT, 7, &[1, 2])), Some((REPORT, 7, &[1u8, 2][..])));
        assert_eq!(parse_chain(&[2, 0, 0], 3), None, "a node twice");
        assert_eq!(parse_chain(&[1, 5], 3), None, "a node that does not exist");
        assert_eq!(parse_chain(&[3, 0, 1], 3), None, "truncated");
        assert_eq!(parse_chain(&[2, 2, 0], 3), Some(vec![2, 0]));
        assert_eq!(manage_addr("127.0.0.1:65000".parse().unwrap()), None);
    }
}
