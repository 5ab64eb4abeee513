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
//! A switch forwards [`Verdict::Upstream`] to its configured upstream
//! neighbour and remembers which neighbour each flow came from, so that
//! [`Verdict::Downstream`] replies retrace the path (several switches may be
//! chained, as in Gotthard's Figure 4).

#![forbid(unsafe_code)]

use std::any::Any;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::time::Duration;

use innet_core::rng::Rng;
use innet_core::{DataPlane, Dest, Host, Outbox, ReversePath, Time, Verdict};

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

/// Something the simulator can run and give back for inspection.
pub trait SimHost: Host + Any {
    fn as_any(&self) -> &dyn Any;
}
impl<T: Host + Any> SimHost for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

pub trait SimDataPlane: DataPlane + Any {
    fn as_any(&self) -> &dyn Any;
}
impl<T: DataPlane + Any> SimDataPlane for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Capacity of a switch's reverse-path table in the simulator.
pub const REVERSE_PATH_SLOTS: usize = 1 << 16;

enum Role {
    Host { host: Box<dyn SimHost>, upstream: Option<NodeId>, next_tick: Option<Time> },
    Switch { program: Box<dyn SimDataPlane>, upstream: Option<NodeId>, paths: ReversePath<NodeId> },
}

struct Node {
    name: String,
    role: Role,
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum EventKind {
    Deliver { to: NodeId, from: NodeId, bytes: Vec<u8> },
    Tick { node: NodeId },
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
    /// Packets a switch dropped (program verdict or no reverse path).
    pub switch_drops: u64,
    pub events: u64,
}

pub struct Sim {
    nodes: Vec<Node>,
    links: HashMap<(NodeId, NodeId), LinkSpec>,
    queue: BinaryHeap<Reverse<Event>>,
    seq: u64,
    now: Time,
    rng: Rng,
    trace: u64,
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
            queue: BinaryHeap::new(),
            seq: 0,
            now: Time::ZERO,
            rng: Rng::new(seed),
            trace: FNV_OFFSET,
            stats: NetStats::default(),
            outbox: Outbox::new(),
        }
    }

    pub fn now(&self) -> Time {
        self.now
    }

    /// A hash of every delivery so far (time, endpoints, bytes).
    pub fn trace_hash(&self) -> u64 {
        self.trace
    }

    pub fn add_host(&mut self, name: &str, host: impl SimHost) -> NodeId {
        let next_tick = host.next_tick();
        let id = self.nodes.len();
        self.nodes.push(Node {
            name: name.into(),
            role: Role::Host { host: Box::new(host), upstream: None, next_tick: None },
        });
        if let Some(t) = next_tick {
            self.schedule_tick(id, t);
        }
        id
    }

    pub fn add_switch(&mut self, name: &str, program: impl SimDataPlane) -> NodeId {
        let id = self.nodes.len();
        let paths = ReversePath::new(REVERSE_PATH_SLOTS);
        self.nodes
            .push(Node { name: name.into(), role: Role::Switch { program: Box::new(program), upstream: None, paths } });
        id
    }

    /// Connects `a` and `b` both ways.
    pub fn link(&mut self, a: NodeId, b: NodeId, spec: LinkSpec) {
        self.links.insert((a, b), spec);
        self.links.insert((b, a), spec);
    }

    /// Where `node` sends [`Dest::Upstream`] packets or [`Verdict::Upstream`] ones.
    pub fn set_upstream(&mut self, node: NodeId, upstream: NodeId) {
        assert!(
            self.links.contains_key(&(node, upstream)),
            "link {} to {} first",
            self.name(node),
            self.name(upstream)
        );
        match &mut self.nodes[node].role {
            Role::Host { upstream: u, .. } | Role::Switch { upstream: u, .. } => *u = Some(upstream),
        }
    }

    pub fn name(&self, node: NodeId) -> &str {
        &self.nodes[node].name
    }

    /// The host at `node`, if it is a `T`.
    pub fn host<T: 'static>(&self, node: NodeId) -> Option<&T> {
        match &self.nodes[node].role {
            Role::Host { host, .. } => host.as_ref().as_any().downcast_ref(),
            Role::Switch { .. } => None,
        }
    }

    /// The switch program at `node`, if it is a `T`.
    pub fn program<T: 'static>(&self, node: NodeId) -> Option<&T> {
        match &self.nodes[node].role {
            Role::Switch { program, .. } => program.as_ref().as_any().downcast_ref(),
            Role::Host { .. } => None,
        }
    }

    fn push(&mut self, at: Time, kind: EventKind) {
        self.seq += 1;
        self.queue.push(Reverse(Event { at, seq: self.seq, kind }));
    }

    fn schedule_tick(&mut self, node: NodeId, at: Time) {
        let at = at.max(self.now);
        if let Role::Host { next_tick, .. } = &mut self.nodes[node].role {
            if *next_tick == Some(at) {
                return;
            }
            *next_tick = Some(at);
        }
        self.push(at, EventKind::Tick { node });
    }

    fn transmit(&mut self, from: NodeId, to: NodeId, bytes: Vec<u8>) {
        let spec = *self
            .links
            .get(&(from, to))
            .unwrap_or_else(|| panic!("no link from {} to {}", self.nodes[from].name, self.nodes[to].name));
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
            self.push(self.now + delay, EventKind::Deliver { to, from, bytes: bytes.clone() });
        }
    }

    fn after_host(&mut self, node: NodeId, from: Option<NodeId>) {
        let mut out = std::mem::take(&mut self.outbox);
        let (upstream, tick) = match &self.nodes[node].role {
            Role::Host { host, upstream, .. } => (*upstream, host.next_tick()),
            Role::Switch { .. } => unreachable!("hosts only"),
        };
        for (dest, bytes) in out.drain() {
            let to = match dest {
                Dest::Reply => from.expect("a reply needs a packet being handled"),
                Dest::Upstream => upstream.unwrap_or_else(|| panic!("{} has no upstream", self.nodes[node].name)),
            };
            self.transmit(node, to, bytes);
        }
        self.outbox = out;
        if let Some(t) = tick {
            self.schedule_tick(node, t);
        }
    }

    fn deliver(&mut self, to: NodeId, from: NodeId, mut bytes: Vec<u8>) {
        self.stats.delivered += 1;
        self.trace = fnv(self.trace, &self.now.as_nanos().to_le_bytes());
        self.trace = fnv(self.trace, &[to as u8, from as u8]);
        self.trace = fnv(self.trace, &bytes);
        let now = self.now;
        match &mut self.nodes[to].role {
            Role::Host { host, .. } => {
                host.on_packet(now, &bytes, &mut self.outbox);
                self.after_host(to, Some(from));
            }
            Role::Switch { program, upstream, paths } => {
                let next = match program.process(&mut bytes) {
                    Verdict::Upstream { flow } => {
                        paths.learn(flow, from);
                        *upstream
                    }
                    Verdict::Downstream { flow } => paths.lookup(flow),
                    Verdict::Reflect => Some(from),
                    Verdict::Drop => None,
                };
                match next {
                    Some(n) => self.transmit(to, n, bytes),
                    None => self.stats.switch_drops += 1,
                }
            }
        }
    }

    /// Runs every event up to and including `end`; time then stands at `end`.
    pub fn run_until(&mut self, end: Time) {
        while let Some(Reverse(ev)) = self.queue.peek() {
            if ev.at > end {
                break;
            }
            let Reverse(ev) = self.queue.pop().expect("peeked");
            self.now = ev.at;
            self.stats.events += 1;
            match ev.kind {
                EventKind::Deliver { to, from, bytes } => self.deliver(to, from, bytes),
                EventKind::Tick { node } => {
                    let now = self.now;
                    let Role::Host { host, next_tick, .. } = &mut self.nodes[node].role else { continue };
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
}
