//! Differential test: the phase-2B vote counter in BPF
//! (`bpf/paxos_learner.bpf.c`) against its Rust reference
//! (`innet_paxos::VoteCounter`), packet by packet, through
//! `BPF_PROG_TEST_RUN`, through both its entries (XDP and tc).
//!
//! The BPF program counts for two UDP ports (a learner's and a proposer's),
//! each with its own ring; the test keeps one reference per port and sends
//! every packet to one of them at random, so the rings must stay apart.
//! The golden vectors (`crates/wire/golden/paxos.json`), hand-made vote
//! sequences (a quorum, a late vote, a higher round, an eviction, a stale
//! vote, malformed packets) and >= 100,000 seeded random packets per run
//! (votes of a few acceptors, including non-existent ones, over a moving
//! window of instances, a few rounds and values; other message types;
//! malformed packets) go through both. Each packet must get the same
//! verdict (pass up or drop) and payload bytes; counters are compared every
//! 64 packets, every slot of both rings every 2,048 packets and at the end.
//! One run uses a 16-slot ring (wraps and evicts all the time), one the
//! default ring. Frames to a port the program does not count pass up
//! unchanged and are counted as `passed_other`.
//!
//! Needs root (BPF). Without it the test says so on stderr (`SKIPPED: ...`)
//! and fails when `CI=true`.

mod common;

use std::net::Ipv4Addr;

use common::{bpf_or_skip, counter, report_golden, report_seed, Differential, Draw, Pair};
use innet_core::rng::Rng;
use innet_core::{Counters, DataPlane, Verdict};
use innet_paxos::vote_counter::{VoteCounterConfig, COUNTER_PORT_HOST, COUNTER_SLOTS_DEFAULT};
use innet_paxos::VoteCounter;
use innet_wire::paxos::{MsgType, PaxosMsg, Value, LEARNER_PORT, PACKET_LEN, VALUE_LEN};
use innet_xdp::frame::{self, Endpoint};
use innet_xdp::object::{XDP_DROP, XDP_PASS};
use innet_xdp::paxos_learner::{self, Config, VoteCounterXdp};

const RANDOM_PACKETS: usize = 100_000;
const ACCEPTORS: usize = 3;
/// Rings are compared after every this many packets.
const SLOTS_EVERY: usize = 2048;
const TC_ACT_OK: u32 = 0;
const TC_ACT_SHOT: u32 = 2;

/// The counted ports: a learner's and a proposer's.
const PORTS: [u16; 2] = [LEARNER_PORT, 35_000];
const ACCEPTOR: Endpoint = Endpoint { mac: [2, 0, 0, 0, 0, 0xac], ip: Ipv4Addr::new(10, 98, 20, 1), port: 40_000 };
const HOST_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0x1e];
const HOST_IP: Ipv4Addr = Ipv4Addr::new(10, 98, 20, 2);

#[derive(Clone, Copy, PartialEq, Eq)]
enum Entry {
    Xdp,
    Tc,
}

/// The BPF counter through one entry, and one reference per counted port.
struct Counter {
    xdp: VoteCounterXdp,
    entry: Entry,
    rust: Vec<VoteCounter>,
    /// Which port the next packet goes to (an index of `PORTS`, or
    /// `PORTS.len()`: a port nobody counts).
    port: usize,
}

impl Counter {
    fn load(entry: Entry, slots: usize) -> Differential<Counter> {
        let cfg = VoteCounterConfig { slots, ..VoteCounterConfig::new(ACCEPTORS) };
        let xdp = VoteCounterXdp::load(&Config { counter: cfg, ports: PORTS.to_vec() }).expect("load");
        let rust = PORTS.iter().map(|_| VoteCounter::new(cfg)).collect();
        let prefix = if entry == Entry::Tc { "tc " } else { "" };
        let label = format!("{prefix}paxos-vote-counter slots={slots} acceptors={ACCEPTORS} quorum={}", cfg.quorum);
        Differential::new(Counter { xdp, entry, rust, port: 0 }, label, SLOTS_EVERY)
    }

    fn dst(&self) -> Endpoint {
        let port = PORTS.get(self.port).copied().unwrap_or(LEARNER_PORT + 100);
        Endpoint { mac: HOST_MAC, ip: HOST_IP, port }
    }

    /// The rings' sum of the references' counters (the BPF program has one
    /// set for all its ports).
    fn reference_counters(&self) -> Vec<(&'static str, u64)> {
        let mut sum = self.rust[0].counters();
        for r in &self.rust[1..] {
            for (s, (_, v)) in sum.iter_mut().zip(r.counters()) {
                s.1 += v;
            }
        }
        sum
    }
}

impl Pair for Counter {
    fn frame(&self, payload: &[u8], pad: usize) -> Vec<u8> {
        frame::udp_frame(ACCEPTOR, self.dst(), payload, pad)
    }

    fn run_bpf(&mut self, _: &[u8], input: &[u8]) -> Result<(Verdict, Vec<u8>), String> {
        let (action, out) = match self.entry {
            Entry::Xdp => self.xdp.test_run(input).expect("test run"),
            Entry::Tc => self.xdp.test_run_tc(input).expect("test run"),
        };
        let (src, dst, _, checksum_ok) = frame::parse(&out).ok_or("output is not an IPv4/UDP frame")?;
        if !checksum_ok || (src, dst) != (ACCEPTOR, self.dst()) {
            return Err(format!("addresses or IPv4 checksum changed: {src:?} -> {dst:?}"));
        }
        let v = match (self.entry, action) {
            (Entry::Xdp, XDP_PASS) | (Entry::Tc, TC_ACT_OK) => Verdict::Port { port: COUNTER_PORT_HOST },
            (Entry::Xdp, XDP_DROP) | (Entry::Tc, TC_ACT_SHOT) => Verdict::Drop,
            _ => return Err(format!("action {action}")),
        };
        Ok((v, out))
    }

    fn run_reference(&mut self, packet: &mut [u8]) -> (Verdict, usize) {
        match self.rust.get_mut(self.port) {
            Some(r) => (r.process(packet), packet.len()),
            None => (Verdict::Port { port: COUNTER_PORT_HOST }, packet.len()),
        }
    }

    fn counters(&self) -> (common::Counters, common::Counters) {
        (self.xdp.counters().expect("counters"), self.reference_counters())
    }

    fn compare_state(&self, ctx: &str) {
        for (k, r) in self.rust.iter().enumerate() {
            let xdp = self.xdp.slots(k).expect("slots");
            assert_eq!(xdp.len(), r.config().slots, "ring size: {ctx}");
            for (i, x) in xdp.iter().enumerate() {
                assert_eq!(*x, r.slot(i), "port {} slot {i} differs: {ctx}", PORTS[k]);
            }
        }
    }

    fn details(&self) -> String {
        let c = self.xdp.counters().expect("counters");
        c.iter().filter(|(_, v)| *v > 0).map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
    }
}

fn vote(inst: u32, acptid: u16, vrnd: u16, v: &[u8]) -> Vec<u8> {
    let mut m = PaxosMsg::new(MsgType::Phase2B);
    (m.inst, m.rnd, m.vrnd, m.acptid) = (inst, vrnd, vrnd, acptid);
    m.value = Value::new(v).expect("short");
    m.encode()
}

/// The unit tests' scenarios, on the wire: a quorum (the second vote goes
/// up as the decision), a duplicate, a late third vote, a higher round
/// deciding again, a ring eviction and a stale vote passed up, a bad
/// acceptor, non-votes and garbage.
fn scenarios(slots: u32) -> Vec<Vec<u8>> {
    let mut garbage = vote(9, 0, 1, b"g");
    garbage[12..16].copy_from_slice(&(VALUE_LEN as u32 + 1).to_be_bytes());
    vec![
        vote(5, 0, 1, b"a"),
        vote(5, 0, 1, b"a"),
        vote(5, 2, 1, b"a"),
        vote(5, 1, 1, b"a"),
        vote(5, 1, 272, b"a"),
        vote(5, 0, 272, b"a"),
        vote(1, 0, 1, b"b"),
        vote(1 + slots, 0, 1, b"c"),
        vote(1, 1, 1, b"b"),
        vote(1 + slots, 1, 1, b"c"),
        vote(2, 3, 1, b"x"),
        vote(2, 0xffff, 1, b"x"),
        PaxosMsg::new(MsgType::Decided).encode(),
        PaxosMsg::new(MsgType::Phase1B).encode(),
        garbage,
        vec![3; 10],
    ]
}

fn golden() -> Vec<Vec<u8>> {
    common::golden(include_str!("../../wire/golden/paxos.json"))
}

/// Random packets around the references' newest instance.
struct Gen {
    rng: Rng,
    frontier: u32,
    /// Instances below the frontier votes go to (about the ring size,
    /// so that both stale votes and evictions happen).
    span: u64,
}

impl Gen {
    fn message(&mut self) -> PaxosMsg {
        let t = self.rng.pick(&[
            (MsgType::Phase2B, 85),
            (MsgType::Decided, 4),
            (MsgType::Phase1B, 3),
            (MsgType::Window, 3),
            (MsgType::Catchup, 2),
            (MsgType::Phase2A, 3),
        ]);
        let mut m = PaxosMsg::new(t);
        // Now and then a far-off instance: it holds its slot until a newer
        // one comes, and older votes to that slot pass up as stale.
        if self.rng.chance(0.0005) {
            m.inst = self.rng.next_u64() as u32;
        } else {
            m.inst = (self.frontier as u64 + 2 + self.rng.below(self.span)).saturating_sub(self.span) as u32;
            if self.rng.chance(0.02) {
                self.frontier = self.frontier.wrapping_add(1 + self.rng.below(4) as u32);
            }
        }
        m.vrnd = self.rng.pick(&[(1, 70), (0, 3), (2, 5), (272, 12), (513, 5), (300, 5)]);
        m.rnd = m.vrnd;
        m.acptid = self.rng.pick(&[(0, 30), (1, 30), (2, 30), (3, 3), (7, 2), (0xffff, 2)]);
        // Mostly one value per (instance, round), as Paxos guarantees; now
        // and then another, which the counter must treat as the reference does.
        let mut v = Value::new(&[b'a' + ((m.inst as u16).wrapping_add(m.vrnd) % 3) as u8]).expect("short");
        if self.rng.chance(0.05) {
            v = Value::new(&[b'a' + self.rng.below(3) as u8]).expect("short");
        }
        if self.rng.chance(0.03) {
            v.bytes[VALUE_LEN - 1] = self.rng.next_u64() as u8; // beyond len: still compared
        }
        if self.rng.chance(0.03) {
            v.len = self.rng.below(VALUE_LEN as u64 + 1) as u32;
        }
        m.value = v;
        m
    }

    fn next(&mut self) -> (Vec<u8>, usize) {
        let mut b = self.message().encode();
        if self.rng.chance(0.08) {
            match self.rng.below(5) {
                0 => self.rng.truncate(&mut b, PACKET_LEN as u64),
                1 => b[1] = 11 + self.rng.below(240) as u8,
                2 => b[12..16].copy_from_slice(&(VALUE_LEN as u32 + 1 + self.rng.below(1000) as u32).to_be_bytes()),
                3 => b = self.rng.bytes(0, 100),
                _ => b.extend(self.rng.bytes(1, 30)), // trailing: valid
            }
        }
        let pad = if self.rng.chance(0.3) { 60 + PACKET_LEN } else { 0 };
        (b, pad)
    }
}

fn run(mut d: Differential<Counter>, seed: u64) {
    let slots = d.pair.rust[0].config().slots as u32;
    for p in 0..PORTS.len() {
        d.pair.port = p;
        d.golden(&scenarios(slots), 1);
    }
    let mut g = Gen { rng: Rng::new(seed), frontier: 100, span: (slots as u64).min(30) };
    for _ in 0..RANDOM_PACKETS {
        d.pair.port = g.rng.pick(&[(0, 48), (1, 48), (2, 4)]);
        let (p, pad) = g.next();
        d.step(&p, pad);
    }
    let summary = d.finish();
    let c = d.pair.xdp.counters().expect("counters");
    for name in ["decisions", "counted", "late", "duplicates", "evicted", "passed_stale", "passed_other"] {
        assert!(counter(&c, name) > 0, "{summary}: the run never exercised {name}");
    }
    report_seed(seed, &summary);
}

#[test]
fn golden_vectors_and_scenarios_give_the_reference_verdicts_and_bytes() {
    if !bpf_or_skip("golden_vectors_and_scenarios_give_the_reference_verdicts_and_bytes", paxos_learner::unavailable) {
        return;
    }
    for entry in [Entry::Xdp, Entry::Tc] {
        let mut d = Counter::load(entry, 16);
        for p in 0..=PORTS.len() {
            d.pair.port = p;
            d.golden(&golden(), 2);
            d.golden(&scenarios(16), 1);
        }
        let summary = d.finish();
        let c = d.pair.xdp.counters().expect("counters");
        // Each counted port: the scenarios' two decisions of instance 5 and
        // the one of instance 1 + slots.
        assert_eq!(counter(&c, "decisions"), 2 * 3, "{summary}");
        report_golden(&summary);
    }
}

#[test]
fn random_packets_match_the_reference_counter() {
    if !bpf_or_skip("random_packets_match_the_reference_counter", paxos_learner::unavailable) {
        return;
    }
    run(Counter::load(Entry::Xdp, 16), 0x1EA5);
    run(Counter::load(Entry::Xdp, COUNTER_SLOTS_DEFAULT), 0x1EA6);
    run(Counter::load(Entry::Tc, 16), 0x1EA7);
}
