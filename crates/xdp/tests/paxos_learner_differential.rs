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
//! With the decision ring on (`Config::ring`, the testbed's default), a
//! decision does not go up as a packet: the vote is dropped and the
//! DECIDED goes into the ring as a record; the test reads the ring after
//! every packet and takes a dropped frame plus exactly one record (with the
//! frame's port and the reference's bytes) as the reference's pass-up. A
//! full ring passes the DECIDED up as a packet instead (counted
//! `ring_full`): `a_full_ring_passes_decisions_up_as_packets_and_loses_none`.
//!
//! Who may send what ([`innet_paxos::trust`]): the two ports are a
//! learner's and a proposer's, each with its kind's rules; the test runs in
//! a private network namespace with a veth pair and every frame is
//! received on one of its ends from one sender (`common::paxos_sources`: a
//! node of a deployment, known by interface, address and, for end hosts,
//! port, or an outsider). The reference refuses what `trust::check`
//! refuses for the port's kind before the counter sees it (a 2B from
//! anyone but an acceptor, a DECIDED from anyone but an acceptor or, for a
//! learner, a learner); the program must refuse the same frames for the
//! same reason, packet by packet.
//!
//! Needs root (BPF). Without it the test says so on stderr (`SKIPPED: ...`)
//! and fails when `CI=true`.

mod common;

use std::net::Ipv4Addr;

use std::collections::HashMap;

use common::{
    bpf_or_skip, counter, in_private_netns, paxos_sources, rejected_reason, report_golden, report_seed, Differential,
    Draw, Pair, PaxosSource,
};
use innet_core::rng::Rng;
use innet_core::{Counters, DataPlane, Verdict};
use innet_paxos::trust::{self, Kind, Sender, REJECT_NAMES};
use innet_paxos::vote_counter::{VoteCounterConfig, COUNTER_PORT_HOST, COUNTER_SLOTS_DEFAULT};
use innet_paxos::VoteCounter;
use innet_wire::paxos::{MsgType, PaxosMsg, Value, LEARNER_PORT, PACKET_LEN, VALUE_LEN};
use innet_xdp::frame::{self, hex, Endpoint};
use innet_xdp::object::{XDP_DROP, XDP_PASS};
use innet_xdp::paxos::{self, all_senders, SenderKey};
use innet_xdp::paxos_learner::{self, Config, DecisionRing, RingOpts, VoteCounterXdp};

const RANDOM_PACKETS: usize = 100_000;
const ACCEPTORS: usize = 3;
/// Rings are compared after every this many packets.
const SLOTS_EVERY: usize = 2048;
const TC_ACT_OK: u32 = 0;
const TC_ACT_SHOT: u32 = 2;
/// The reference's counters (the program's first ones).
const COUNTER_NAMES_LEN: usize = paxos_learner::COUNTER_NAMES.len();

/// The counted ports: a learner's and a proposer's.
const PORTS: [(u16, Kind); 2] = [(LEARNER_PORT, Kind::Learner), (35_000, Kind::Proposer)];
const HOST_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0x1e];
const HOST_IP: Ipv4Addr = Ipv4Addr::new(10, 98, 20, 2);

#[derive(Clone, Copy, PartialEq, Eq)]
enum Entry {
    Xdp,
    Tc,
    /// The XDP entry with decisions up through the ring.
    XdpRing,
}

/// The BPF counter through one entry, and one reference per counted port
/// behind its port's admission rule.
struct Counter {
    xdp: VoteCounterXdp,
    entry: Entry,
    rust: Vec<VoteCounter>,
    /// Which port the next packet goes to (an index of `PORTS`, or
    /// `PORTS.len()`: a port nobody counts).
    port: usize,
    /// Who the frames come from, and which of them the next one does.
    sources: Vec<PaxosSource>,
    source: usize,
    /// The reference's senders and its refusals, by `Reject::index`.
    senders: HashMap<SenderKey, Sender>,
    rejected: [u64; REJECT_NAMES.len()],
    /// Why the program refused the last frame, if it did.
    bpf_reason: Option<&'static str>,
    /// [`Entry::XdpRing`]: the decision ring, read after every packet.
    ring: Option<DecisionRing>,
}

impl Counter {
    fn load(entry: Entry, ifaces: [u32; 2], slots: usize) -> Differential<Counter> {
        let cfg = VoteCounterConfig { slots, ..VoteCounterConfig::new(ACCEPTORS) };
        let ring = (entry == Entry::XdpRing).then(RingOpts::default);
        let xdp =
            VoteCounterXdp::load(&Config { counter: cfg, ports: PORTS.to_vec(), ring, sink: false }).expect("load");
        let (d, keys, sources) = paxos_sources(ifaces);
        let senders = all_senders(&d, &keys);
        xdp.set_senders(&senders).expect("senders");
        let rust = PORTS.iter().map(|_| VoteCounter::new(cfg)).collect();
        let prefix = match entry {
            Entry::Tc => "tc ",
            Entry::XdpRing => "ring ",
            Entry::Xdp => "",
        };
        let ring = ring.map(|_| DecisionRing::of(&xdp).expect("map the ring"));
        let label = format!(
            "{prefix}paxos-vote-counter slots={slots} acceptors={ACCEPTORS} quorum={} senders={}",
            cfg.quorum,
            senders.len()
        );
        let rejected = [0; REJECT_NAMES.len()];
        let c = Counter { xdp, entry, rust, port: 0, sources, source: 0, senders, rejected, bpf_reason: None, ring };
        Differential::new(c, label, SLOTS_EVERY)
    }

    fn dst(&self) -> Endpoint {
        let port = PORTS.get(self.port).map_or(LEARNER_PORT + 100, |p| p.0);
        Endpoint { mac: HOST_MAC, ip: HOST_IP, port }
    }

    fn from(&self) -> &PaxosSource {
        &self.sources[self.source]
    }

    fn bpf_rejected(&self) -> common::Counters {
        self.xdp.rejected().expect("rejected")
    }

    /// Sends the next frames from source `name`.
    fn send_from(&mut self, name: &str) {
        self.source = self.sources.iter().position(|s| s.name == name).expect("a source of that name");
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
        frame::udp_frame(self.from().from, self.dst(), payload, pad)
    }

    fn run_bpf(&mut self, _: &[u8], input: &[u8]) -> Result<(Verdict, Vec<u8>), String> {
        let (from, ifindex) = (self.from().from, self.from().ifindex);
        let before = self.bpf_rejected();
        let (action, out) = match self.entry {
            Entry::Xdp | Entry::XdpRing => self.xdp.test_run_on(input, ifindex).expect("test run"),
            Entry::Tc => self.xdp.test_run_tc_on(input, ifindex).expect("test run"),
        };
        let records = self.ring.as_mut().map(DecisionRing::take).unwrap_or_default();
        self.bpf_reason = rejected_reason(&before, &self.bpf_rejected());
        let (src, dst, _, checksum_ok) = frame::parse(&out).ok_or("output is not an IPv4/UDP frame")?;
        if !checksum_ok || (src, dst) != (from, self.dst()) {
            return Err(format!("addresses or IPv4 checksum changed: {src:?} -> {dst:?}"));
        }
        let v = match (self.entry, action) {
            (_, XDP_PASS) if self.entry != Entry::Tc => Verdict::Port { port: COUNTER_PORT_HOST },
            (Entry::Tc, TC_ACT_OK) => Verdict::Port { port: COUNTER_PORT_HOST },
            (_, XDP_DROP) if self.entry != Entry::Tc => Verdict::Drop,
            (Entry::Tc, TC_ACT_SHOT) => Verdict::Drop,
            _ => return Err(format!("action {action}")),
        };
        // A decision in the ring is the reference's pass-up: the frame
        // dropped, one record of this port with the DECIDED's bytes.
        match (records.as_slice(), v) {
            ([], _) => Ok((v, out)),
            ([(k, hdr)], Verdict::Drop) => {
                let (_, _, payload, _) = frame::parse(&out).ok_or("output is not an IPv4/UDP frame")?;
                let payload = payload.get(..PACKET_LEN).ok_or("a decision shorter than a header")?;
                if *k as usize != self.port || hdr[..] != *payload {
                    return Err(format!("ring record for port index {k}: {} (frame: {})", hex(hdr), hex(payload)));
                }
                Ok((Verdict::Port { port: COUNTER_PORT_HOST }, out))
            }
            (r, v) => Err(format!("{} ring records with verdict {v:?}", r.len())),
        }
    }

    /// The rules of the port's kind, then the port's counter; the reason
    /// must be the program's.
    fn run_reference(&mut self, packet: &mut [u8]) -> (Verdict, usize) {
        let Some(&(_, kind)) = PORTS.get(self.port) else {
            assert_eq!(self.bpf_reason, None, "a frame to a port nobody counts was refused");
            return (Verdict::Port { port: COUNTER_PORT_HOST }, packet.len());
        };
        let s = self.from();
        let admitted = trust::check(kind, paxos::sender(&self.senders, s.ifindex, s.from.ip, s.from.port), packet);
        let reason = admitted.err().map(|r| r.name());
        assert_eq!(self.bpf_reason, reason, "refusal differs: {kind:?} port, from {}: {}", s.name, hex(packet));
        if let Err(r) = admitted {
            self.rejected[r.index()] += 1;
            return (Verdict::Drop, packet.len());
        }
        (self.rust[self.port].process(packet), packet.len())
    }

    /// The counters, then the refusals by reason.
    fn counters(&self) -> (common::Counters, common::Counters) {
        let mut bpf = self.xdp.counters().expect("counters");
        let n = COUNTER_NAMES_LEN;
        bpf.splice(n..n, self.bpf_rejected());
        let mut reference = self.reference_counters();
        reference.extend(REJECT_NAMES.iter().zip(self.rejected).map(|(n, v)| (*n, v)));
        (bpf, reference)
    }

    fn compare_state(&self, ctx: &str) {
        for (k, r) in self.rust.iter().enumerate() {
            let xdp = self.xdp.slots(k).expect("slots");
            assert_eq!(xdp.len(), r.config().slots, "ring size: {ctx}");
            for (i, x) in xdp.iter().enumerate() {
                assert_eq!(*x, r.slot(i), "port {} slot {i} differs: {ctx}", PORTS[k].0);
            }
        }
    }

    fn details(&self) -> String {
        let mut c = self.xdp.counters().expect("counters");
        c.extend(self.bpf_rejected());
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

/// Who sends the next packet: mostly an acceptor (so votes are counted),
/// otherwise anyone.
fn pick_source(rng: &mut Rng, c: &Counter) -> usize {
    let acceptors: Vec<usize> = (0..c.sources.len()).filter(|&i| c.sources[i].name.starts_with("acceptor")).collect();
    if rng.chance(0.8) {
        acceptors[rng.below(acceptors.len() as u64) as usize]
    } else {
        rng.below(c.sources.len() as u64) as usize
    }
}

fn run(mut d: Differential<Counter>, seed: u64) {
    let slots = d.pair.rust[0].config().slots as u32;
    d.pair.send_from("acceptor0");
    for p in 0..PORTS.len() {
        d.pair.port = p;
        d.golden(&scenarios(slots), 1);
    }
    let mut g = Gen { rng: Rng::new(seed), frontier: 100, span: (slots as u64).min(30) };
    for _ in 0..RANDOM_PACKETS {
        d.pair.port = g.rng.pick(&[(0, 48), (1, 48), (2, 4)]);
        d.pair.source = pick_source(&mut g.rng, &d.pair);
        let (p, pad) = g.next();
        d.step(&p, pad);
    }
    let summary = d.finish();
    let c = d.pair.xdp.counters().expect("counters");
    for name in ["decisions", "counted", "late", "duplicates", "evicted", "passed_stale", "passed_other"] {
        assert!(counter(&c, name) > 0, "{summary}: the run never exercised {name}");
    }
    let refused = d.pair.bpf_rejected();
    for name in ["untrusted_phase_2b", "untrusted_decided", "untrusted_window", "untrusted_phase_2a"] {
        assert!(counter(&refused, name) > 0, "{summary}: the run never refused a frame as {name}");
    }
    report_seed(seed, &summary);
}

#[test]
fn golden_vectors_and_scenarios_give_the_reference_verdicts_and_bytes() {
    if !bpf_or_skip("golden_vectors_and_scenarios_give_the_reference_verdicts_and_bytes", paxos_learner::unavailable) {
        return;
    }
    in_private_netns(|ifaces| {
        for entry in [Entry::Xdp, Entry::Tc, Entry::XdpRing] {
            let mut d = Counter::load(entry, ifaces, 16);
            for p in 0..=PORTS.len() {
                d.pair.port = p;
                d.pair.send_from("acceptor0");
                d.golden(&golden(), 2);
                d.golden(&scenarios(16), 1);
                // The same from every other sender: refused or, from
                // another acceptor, counted (late or duplicate by now).
                for source in 0..d.pair.sources.len() {
                    d.pair.source = source;
                    d.golden(&scenarios(16), 1);
                }
            }
            let summary = d.finish();
            let c = d.pair.xdp.counters().expect("counters");
            // Each counted port: the scenarios' two decisions of instance 5 and
            // the one of instance 1 + slots, from acceptor0's frames.
            assert_eq!(counter(&c, "decisions"), 2 * 3, "{summary}");
            // A forged vote or DECIDED from outside is refused at both ports.
            let refused = d.pair.bpf_rejected();
            assert!(counter(&refused, "untrusted_phase_2b") > 0 && counter(&refused, "untrusted_decided") > 0);
            report_golden(&summary);
        }
    });
}

#[test]
fn random_packets_match_the_reference_counter() {
    if !bpf_or_skip("random_packets_match_the_reference_counter", paxos_learner::unavailable) {
        return;
    }
    in_private_netns(|ifaces| {
        run(Counter::load(Entry::Xdp, ifaces, 16), 0x1EA5);
        run(Counter::load(Entry::Xdp, ifaces, COUNTER_SLOTS_DEFAULT), 0x1EA6);
        run(Counter::load(Entry::Tc, ifaces, 16), 0x1EA7);
        run(Counter::load(Entry::XdpRing, ifaces, 16), 0x1EA8);
    });
}

/// The ring has room for 64 records (4,096 bytes); nobody reads it while
/// 200 instances are decided (two votes each). The first decisions go into
/// the ring until it is full (their votes dropped), the others go up as
/// DECIDED packets (`ring_full`); reading the ring then gives the first in order:
/// every instance delivered once, by one path or the other, none lost.
#[test]
fn a_full_ring_passes_decisions_up_as_packets_and_loses_none() {
    if !bpf_or_skip("a_full_ring_passes_decisions_up_as_packets_and_loses_none", paxos_learner::unavailable) {
        return;
    }
    in_private_netns(|ifaces| {
        let cfg = VoteCounterConfig::new(ACCEPTORS);
        let ring = Some(RingOpts { bytes: 4096, wakeup: 0 });
        let xdp =
            VoteCounterXdp::load(&Config { counter: cfg, ports: PORTS.to_vec(), ring, sink: false }).expect("load");
        let (d, keys, sources) = paxos_sources(ifaces);
        xdp.set_senders(&all_senders(&d, &keys)).expect("senders");
        let mut reader = DecisionRing::of(&xdp).expect("map the ring");
        let dst = Endpoint { mac: HOST_MAC, ip: HOST_IP, port: PORTS[0].0 };
        let mut passed = vec![];
        for inst in 0..200u32 {
            for a in 0..2u16 {
                let s = sources.iter().find(|s| s.name == format!("acceptor{a}")).expect("acceptor source");
                let input = frame::udp_frame(s.from, dst, &vote(inst, a, 1, b"v"), 0);
                let (action, out) = xdp.test_run_on(&input, s.ifindex).expect("test run");
                if action == XDP_PASS {
                    let (_, _, payload, _) = frame::parse(&out).expect("an IPv4/UDP frame");
                    let m = PaxosMsg::decode(payload).expect("a DECIDED");
                    assert_eq!((m.msgtype, m.inst, a), (MsgType::Decided, inst, 1), "only a deciding vote passes");
                    passed.push(inst);
                } else {
                    assert_eq!(action, XDP_DROP);
                }
            }
        }
        let c = xdp.counters().expect("counters");
        let ringed: Vec<u32> = reader
            .take()
            .into_iter()
            .map(|(k, h)| {
                assert_eq!(k, 0, "the learner's port");
                PaxosMsg::decode(&h).expect("a DECIDED").inst
            })
            .collect();
        // 4,096 bytes of 64-byte records: 63 or 64 fit (the kernel may keep
        // room for its own bookkeeping).
        let r = counter(&c, "ring") as u32;
        assert!((60..=64).contains(&r), "{r} decisions in a ring of 64 records");
        assert_eq!(ringed, (0..r).collect::<Vec<u32>>(), "the ring holds the first {r}, in order");
        assert_eq!(passed, (r..200).collect::<Vec<u32>>(), "the rest went up as packets, in order");
        assert_eq!((counter(&c, "ring_full"), counter(&c, "decisions")), (200 - r as u64, 200));
        eprintln!(
            "DIFFERENTIAL paxos-vote-counter ring of 64 records unread: {r} decisions in the ring, {} passed up as packets (ring_full), 0 lost",
            200 - r
        );
    });
}
