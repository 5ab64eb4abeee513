//! The vocabulary every protocol state machine and every runtime shares.
//!
//! State machines are values: a packet (or the passage of time) goes in,
//! effects come out in an [`Outbox`] or as a [`Verdict`]. Nothing here
//! touches a socket, a clock or a random number generator; runtimes own
//! those (see `ARCHITECTURE.md`).
//!
//! Two shapes of role exist:
//! * **data-plane programs** ([`DataPlane`]) hold one packet, may rewrite it in
//!   place, and return a [`Verdict`]. Their state lives in fixed-size tables
//!   ([`table::SetAssoc`]) sized at start-up, like a switch's registers or a
//!   BPF map; their loops are bounded by wire-format constants.
//! * **end hosts** ([`Host`]) may allocate; they react to packets and ticks
//!   and queue packets to send.

#![forbid(unsafe_code)]

pub mod auth;
pub mod deploy;
pub mod limits;
pub mod rng;
pub mod table;

use std::time::Duration;

/// A point in time: nanoseconds since the runtime's epoch. The simulator's
/// epoch is the start of the run; the live runtime's is process start.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct Time(pub u64);

impl Time {
    pub const ZERO: Time = Time(0);
    pub fn from_secs_f64(s: f64) -> Time {
        debug_assert!(s.is_finite() && s >= 0.0, "a time of {s} s");
        Time((s * 1e9).round() as u64)
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    pub fn as_nanos(self) -> u64 {
        self.0
    }
    /// Time elapsed since `earlier` (zero if `earlier` is later).
    pub fn since(self, earlier: Time) -> Duration {
        let elapsed = Duration::from_nanos(self.0.saturating_sub(earlier.0));
        debug_assert!(earlier > self || earlier + elapsed == self);
        elapsed
    }
}

impl std::ops::Add<Duration> for Time {
    type Output = Time;
    fn add(self, d: Duration) -> Time {
        Time(self.0.saturating_add(d.as_nanos().min(u64::MAX as u128) as u64))
    }
}

/// Where an end host's packet goes. Protocols name roles, runtimes map them
/// to addresses.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Dest {
    /// Back to the sender of the packet being handled.
    Reply,
    /// To the host's configured service address (a client's switch or store).
    Upstream,
    /// To the neighbour the runtime configured as this host's port `n`
    /// (e.g. a proposer's coordinator, a learner's acceptors one by one).
    Port(u16),
    /// One copy to every member of the host's multicast group `n`.
    Group(u16),
}

/// Packets an end host wants sent, in order.
#[derive(Default, Debug)]
pub struct Outbox {
    pub sends: Vec<(Dest, Vec<u8>)>,
}

impl Outbox {
    pub fn new() -> Outbox {
        Outbox::default()
    }
    pub fn send(&mut self, dest: Dest, bytes: Vec<u8>) {
        debug_assert!(!bytes.is_empty(), "an empty packet queued for {dest:?}");
        self.sends.push((dest, bytes));
    }
    pub fn drain(&mut self) -> std::vec::Drain<'_, (Dest, Vec<u8>)> {
        debug_assert!(self.sends.iter().all(|(_, bytes)| !bytes.is_empty()));
        self.sends.drain(..)
    }
    pub fn is_empty(&self) -> bool {
        self.sends.is_empty()
    }
}

/// The address a packet came from, as its runtime knows it (live: the IP
/// address, as IPv6 or IPv4-mapped, and the UDP port; simulator: the sending
/// node). Protocols compare and store it, never interpret it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct Peer(pub [u8; 18]);

impl Peer {
    /// The simulator's address of node `id`.
    pub fn node(id: usize) -> Peer {
        let mut b = [0u8; 18];
        b[..8].copy_from_slice(&(id as u64).to_be_bytes());
        debug_assert_eq!(u64::from_be_bytes(b[..8].try_into().expect("8 bytes")), id as u64);
        Peer(b)
    }
}

/// Who sent the packet an end host is handling.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Sender {
    pub peer: Peer,
    /// Whether `peer` is the host's configured upstream (a client's switch
    /// or store): [`Dest::Upstream`] goes there.
    pub upstream: bool,
}

/// An end host: any role that is not a data-plane program.
pub trait Host {
    fn on_packet(&mut self, now: Time, packet: &[u8], out: &mut Outbox);
    /// [`Host::on_packet`] for a packet from `from`. Runtimes call this one;
    /// a host that trusts or answers by sender (a store resending a recorded
    /// reply, a client taking replies only from its upstream) overrides it.
    fn on_packet_from(&mut self, now: Time, packet: &[u8], from: Sender, out: &mut Outbox) {
        let _ = from;
        self.on_packet(now, packet, out)
    }
    fn on_tick(&mut self, now: Time, out: &mut Outbox);
    /// When `on_tick` next has work to do, if ever.
    fn next_tick(&self) -> Option<Time>;
    /// Called by runtimes after a batch of packets and timers, before what
    /// the host queued in it is sent: a host that must make its state
    /// durable before its answers leave (a persistent acceptor run as a
    /// process) syncs here once per batch. The default does nothing.
    fn before_send(&mut self) {}
}

/// What a data-plane program decided for the packet it holds.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Verdict {
    /// Send on towards the service (the switch's upstream port). The runtime
    /// remembers that replies of `flow` go back out the ingress port, as an
    /// IP switch's routing would.
    Upstream { flow: u32 },
    /// Send back towards the origin of `flow`.
    Downstream { flow: u32 },
    /// Send the (rewritten) packet back out of the port it came in on.
    Reflect,
    /// Discard.
    Drop,
    /// Send to the neighbour the control plane configured as this switch's
    /// port `port` (a P4 egress port; a BPF devmap / next-hop entry).
    Port { port: u16 },
    /// One copy to every member of multicast group `group`, configured by the
    /// control plane (a P4 multicast group; tc `bpf_clone_redirect` in XDP).
    /// A group may name the packet's origin as a member.
    Multicast { group: u16 },
    /// To the end host that originated the packet: its IP source address,
    /// which forwarding through any number of switches keeps. This is how a
    /// chain's tail answers a client whose request entered at the head.
    Origin,
}

impl Verdict {
    /// A stable small number per verdict kind (BPF programs return the same
    /// codes to user space in differential tests).
    pub const fn code(self) -> u8 {
        match self {
            Verdict::Drop => 0,
            Verdict::Upstream { .. } => 1,
            Verdict::Downstream { .. } => 2,
            Verdict::Reflect => 3,
            Verdict::Port { .. } => 4,
            Verdict::Multicast { .. } => 5,
            Verdict::Origin => 6,
        }
    }
}

/// A member of a multicast group, as runtimes configure groups.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Member<A> {
    /// A fixed neighbour.
    Node(A),
    /// The origin of the packet being multicast (see [`Verdict::Origin`]).
    Origin,
}

/// A data-plane program ("switch-shaped": fixed tables, bounded loops,
/// in-place rewrite, a verdict).
pub trait DataPlane {
    fn process(&mut self, packet: &mut [u8]) -> Verdict;
    /// [`DataPlane::process`], and the length the packet has afterwards: a
    /// program may shrink the packet it holds (P4's `remove_header`, XDP's
    /// `bpf_xdp_adjust_head`), never grow it. Runtimes call this one and send
    /// the first `len` bytes.
    fn process_len(&mut self, packet: &mut [u8]) -> (Verdict, usize) {
        (self.process(packet), packet.len())
    }
    /// [`DataPlane::process_len`] for a packet that arrived on `ingress`.
    /// Runtimes call this one; a program that trusts some messages only from
    /// one side (a switch learning only from its upstream) overrides it.
    fn process_from(&mut self, packet: &mut [u8], ingress: Ingress) -> (Verdict, usize) {
        let _ = ingress;
        self.process_len(packet)
    }
    /// The flow of `packet` if it is a request whose replies the program
    /// sends back with [`Verdict::Downstream`] for that flow. A runtime
    /// that routes such replies ([`ReversePath`]) asks before the program
    /// sees a packet from downstream, and refuses a request of a flow bound
    /// to another neighbour. `None` (the default): not such a request.
    fn request_flow(&self, packet: &[u8]) -> Option<u32> {
        let _ = packet;
        None
    }
    /// Rewrites a request the runtime refuses (its flow belongs to another
    /// neighbour) into the program's answer to its sender, and returns its
    /// length; `None` (the default): the runtime drops it.
    fn refuse(&self, packet: &mut [u8]) -> Option<usize> {
        let _ = packet;
        None
    }
    /// Called by runtimes after a batch of packets, before the packets the
    /// program rewrote in it are sent (see [`Host::before_send`]). The
    /// default does nothing.
    fn before_send(&mut self) {}
}

/// Which side of a switch a packet arrived from: its configured upstream
/// (towards the store or server), one of the switch peers its deployment
/// numbers, or anywhere else (clients, switches below, unknown senders).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Ingress {
    Upstream,
    Downstream,
    /// From switch peer `n` of the deployment (a chain node: its chain
    /// index). Runtimes know peers by source address and port (UDP), by
    /// ingress interface and link-layer source (XDP), or by node (simulator).
    Peer(u16),
}

/// The reverse-path table a runtime keeps for [`Verdict::Upstream`] /
/// [`Verdict::Downstream`]: which neighbour a flow's requests come from. In
/// an IP network this is routing (a reply goes to its request's source);
/// runtimes without IP routing (UDP overlay, simulator) keep it beside the
/// program.
///
/// A flow is bound to the first neighbour that sends it and keeps it: a
/// request of a bound flow from another neighbour is refused
/// ([`ReversePath::admits`]). (It used to follow the last sender, so any
/// socket that sent one request with a client's id received that client's
/// replies: issue 21.) Bounded: at most `capacity` flows, the least recently
/// used one forgotten first (a flow in use stays bound).
#[derive(Debug)]
pub struct ReversePath<A> {
    capacity: usize,
    /// Flow -> (neighbour, last use).
    map: std::collections::HashMap<u32, (A, u64)>,
    /// Last use -> flow.
    by_use: std::collections::BTreeMap<u64, u32>,
    clock: u64,
}

impl<A: Copy + PartialEq> ReversePath<A> {
    pub fn new(capacity: usize) -> Self {
        assert!(capacity > 0);
        ReversePath { capacity, map: Default::default(), by_use: Default::default(), clock: 0 }
    }
    /// Whether a request of `flow` from `from` may pass: the flow is not
    /// bound, or bound to `from`.
    pub fn admits(&self, flow: u32, from: A) -> bool {
        debug_assert_eq!(self.map.len(), self.by_use.len(), "a flow without its last use, or the reverse");
        self.map.get(&flow).is_none_or(|(a, _)| *a == from)
    }
    /// A request of `flow` from `from` went upstream: binds the flow to
    /// `from` if it is not bound (the first request fixes it; a bound flow
    /// keeps its neighbour) and marks it used.
    pub fn learn(&mut self, flow: u32, from: A) {
        self.clock += 1;
        let clock = self.clock;
        match self.map.get_mut(&flow) {
            Some((_, used)) => {
                self.by_use.remove(used);
                *used = clock;
            }
            None => {
                if self.map.len() >= self.capacity {
                    if let Some((_, old)) = self.by_use.pop_first() {
                        self.map.remove(&old);
                    }
                }
                self.map.insert(flow, (from, clock));
            }
        }
        self.by_use.insert(clock, flow);
        debug_assert!(self.map.len() <= self.capacity, "{} flows bound, bound {}", self.map.len(), self.capacity);
        debug_assert_eq!(self.map.len(), self.by_use.len(), "a flow without its last use, or the reverse");
        debug_assert!(self.map.contains_key(&flow), "flow {flow} not bound after learn");
    }
    pub fn lookup(&self, flow: u32) -> Option<A> {
        debug_assert_eq!(self.map.len(), self.by_use.len(), "a flow without its last use, or the reverse");
        self.map.get(&flow).map(|(a, _)| *a)
    }
    /// Flows bound now.
    pub fn len(&self) -> usize {
        debug_assert!(self.map.len() <= self.capacity);
        self.map.len()
    }
    pub fn is_empty(&self) -> bool {
        debug_assert_eq!(self.map.is_empty(), self.by_use.is_empty(), "a flow without its last use, or the reverse");
        self.map.is_empty()
    }
}

/// Counters with stable names, for data-plane decisions and drops.
pub trait Counters {
    /// `(name, value)` pairs in a fixed order.
    fn counters(&self) -> Vec<(&'static str, u64)>;
}

#[cfg(test)]
mod tests {
    use super::ReversePath;

    /// Issue 21: a flow keeps the neighbour its first request came from; a
    /// request from elsewhere is not admitted and moves nothing; the table
    /// forgets the least recently used flow, never one in use.
    #[test]
    fn a_flow_is_bound_to_its_first_sender_within_a_bounded_table() {
        let mut p: ReversePath<u8> = ReversePath::new(2);
        p.learn(7, 1);
        assert!(p.admits(7, 1) && !p.admits(7, 2) && p.admits(8, 2));
        p.learn(7, 2);
        assert_eq!(p.lookup(7), Some(1), "a bound flow keeps its neighbour");
        p.learn(8, 2);
        p.learn(7, 1); // 7 used again: 8 is now the least recently used
        p.learn(9, 3);
        assert_eq!((p.lookup(7), p.lookup(8), p.lookup(9), p.len()), (Some(1), None, Some(3), 2));
    }
}
