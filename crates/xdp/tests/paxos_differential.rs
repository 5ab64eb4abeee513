//! Differential test: the Paxos (CAANS) data-plane roles in BPF
//! (`bpf/paxos.bpf.c`) against the Rust reference programs
//! (`innet_paxos::Coordinator` and `innet_paxos::Acceptor`, CAANS section 3
//! and Figure 1), packet by packet, through `BPF_PROG_TEST_RUN`.
//!
//! For each role, the golden vectors (`crates/wire/golden/paxos.json`) and
//! then >= 100,000 seeded random packets (requests, 1As and 2As over a
//! moving window of instances and a few rounds and values, trims, heartbeats,
//! other message types, malformed packets) go through both. Each packet must
//! get the same verdict (XDP action, addresses, multicast group in the XDP
//! metadata) and the same payload bytes; counters are compared every 64
//! packets, registers (next instance, trim floor, checkpoints) and every
//! slot of the acceptor's ring every 2,048 packets and at the end. One
//! acceptor run uses a 16-slot ring (wraps, trims and back-pressure all the
//! time), one the reference's default ring.
//!
//! The same runs go through the role's tc entry (`tc_paxos`, which runs the
//! role on the copies another hop's multicast made, since generic XDP skips
//! them): Reflect/Origin must be `TC_ACT_REDIRECT` back out of the ingress
//! device with swapped addresses, Multicast a copy addressed to the one
//! configured member (whose device does not exist, so the copy is counted as
//! an error and nothing is sent), Drop `TC_ACT_SHOT` without one.
//!
//! Needs root (BPF). Without it the test says so on stderr (`SKIPPED: ...`)
//! and fails when `CI=true`.

mod common;

use std::net::Ipv4Addr;

use common::{bpf_or_skip, counter, report_golden, report_seed, Differential, Draw, Pair};
use innet_core::rng::Rng;
use innet_core::{Counters, DataPlane, Verdict};
use innet_paxos::acceptor::ACCEPTOR_SLOTS_DEFAULT;
use innet_paxos::{Acceptor, AcceptorConfig, Coordinator, CoordinatorConfig};
use innet_wire::paxos::{MsgType, PaxosMsg, Value, DATAPLANE_PORT, PACKET_LEN, VALUE_LEN};
use innet_xdp::frame::{self, Endpoint};
use innet_xdp::object::{XDP_DROP, XDP_PASS, XDP_TX};
use innet_xdp::paxos::{self, Config, Member, PaxosXdp, Role, META_LEN, META_MAGIC};

const RANDOM_PACKETS_SMALL_RING: usize = 100_000;
const RANDOM_PACKETS_DEFAULT_RING: usize = 25_000;
const LEARNERS: usize = 3;
/// Registers and the ring are compared after every this many packets.
const REGISTERS_EVERY: usize = 2048;

/// `TC_ACT_SHOT`, `TC_ACT_REDIRECT`.
const TC_ACT_SHOT: u32 = 2;
const TC_ACT_REDIRECT: u32 = 7;
/// The multicast member of the tc runs: a device that does not exist.
const MEMBER: Endpoint = Endpoint { mac: [2, 0, 0, 0, 0, 0x33], ip: Ipv4Addr::new(10, 98, 3, 3), port: 30_303 };
const MEMBER_IFINDEX: u32 = 999_999;

const PROPOSER: Endpoint = Endpoint { mac: [2, 0, 0, 0, 0, 0x0c], ip: Ipv4Addr::new(10, 98, 0, 2), port: 40_000 };
const NODE: Endpoint = Endpoint { mac: [2, 0, 0, 0, 0, 0x51], ip: Ipv4Addr::new(10, 98, 0, 1), port: DATAPLANE_PORT };

/// The reference program of a role.
enum Reference {
    Coordinator(Coordinator),
    Acceptor(Acceptor),
}

impl Reference {
    fn process(&mut self, b: &mut [u8]) -> Verdict {
        match self {
            Reference::Coordinator(c) => c.process(b),
            Reference::Acceptor(a) => a.process(b),
        }
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        match self {
            Reference::Coordinator(c) => c.counters(),
            Reference::Acceptor(a) => a.counters(),
        }
    }
    /// Next instance (coordinator), trim floor, checkpoints.
    fn registers(&self) -> (u32, u32, Vec<u32>) {
        match self {
            Reference::Coordinator(c) => (c.next_instance(), c.trim().floor(), c.trim().checkpoints().to_vec()),
            Reference::Acceptor(a) => (0, a.trim().floor(), a.trim().checkpoints().to_vec()),
        }
    }
    fn slots(&self) -> Vec<paxos::Slot> {
        match self {
            Reference::Coordinator(_) => vec![],
            Reference::Acceptor(a) => (0..a.config().slots).map(|i| a.slot(i)).collect(),
        }
    }
    /// Where the random instances should cluster.
    fn frontier(&self) -> u32 {
        match self {
            Reference::Coordinator(c) => c.next_instance(),
            Reference::Acceptor(a) => a.trim().floor(),
        }
    }
}

/// What the XDP program did with a frame, as a reference verdict, and the
/// frame without metadata.
fn xdp_verdict(role: Role, action: u32, input_len: usize, out: &[u8]) -> Result<(Verdict, Vec<u8>), String> {
    let (meta, f) = if action == XDP_PASS && out.len() == input_len + META_LEN {
        (Some(&out[..META_LEN]), &out[META_LEN..])
    } else {
        (None, out)
    };
    let (src, dst, _, checksum_ok) = frame::parse(f).ok_or("output is not an IPv4/UDP frame")?;
    if !checksum_ok {
        return Err("IPv4 checksum wrong".into());
    }
    let v = match (action, meta) {
        (XDP_DROP, None) if (src, dst) == (PROPOSER, NODE) => Verdict::Drop,
        (XDP_TX, None) if (src, dst) == (NODE, PROPOSER) => match role {
            Role::Coordinator => Verdict::Reflect,
            Role::Acceptor => Verdict::Origin,
        },
        (XDP_PASS, Some(m)) if (src, dst) == (PROPOSER, NODE) => {
            let magic = u16::from_ne_bytes([m[0], m[1]]);
            if magic != META_MAGIC {
                return Err(format!("metadata magic {magic:#x}"));
            }
            Verdict::Multicast { group: u16::from_ne_bytes([m[2], m[3]]) }
        }
        _ => return Err(format!("action {action} meta {meta:?} to {dst:?} from {src:?}")),
    };
    Ok((v, f.to_vec()))
}

/// What `tc_paxos` did, as a reference verdict: `copies_failed` is how
/// many multicast copies it tried (and could not send) for this packet.
fn tc_verdict(role: Role, action: u32, out: &[u8], copies_failed: u64, group: u16) -> Result<Verdict, String> {
    let (src, dst, _, checksum_ok) = frame::parse(out).ok_or("output is not an IPv4/UDP frame")?;
    if !checksum_ok {
        return Err("IPv4 checksum wrong".into());
    }
    Ok(match (action, copies_failed) {
        (TC_ACT_SHOT, 0) if (src, dst) == (PROPOSER, NODE) => Verdict::Drop,
        (TC_ACT_SHOT, 1) if dst == MEMBER && src.ip == NODE.ip && src.mac == NODE.mac => Verdict::Multicast { group },
        (TC_ACT_REDIRECT, 0) if (src, dst) == (NODE, PROPOSER) => match role {
            Role::Coordinator => Verdict::Reflect,
            Role::Acceptor => Verdict::Origin,
        },
        _ => return Err(format!("action {action} copies {copies_failed} to {dst:?} from {src:?}")),
    })
}

fn member() -> Member {
    Member {
        ifindex: MEMBER_IFINDEX,
        src_mac: NODE.mac,
        src_ip: NODE.ip,
        dst_mac: MEMBER.mac,
        dst_ip: MEMBER.ip,
        dst_port: MEMBER.port,
    }
}

/// Which entry of the object the packets go through.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Entry {
    Xdp,
    Tc,
}

/// A role's BPF program through one entry, and the reference program.
struct Node {
    xdp: PaxosXdp,
    entry: Entry,
    group: u16,
    rust: Reference,
    role: Role,
}

impl Node {
    fn load(entry: Entry, cfg: Config, rust: Reference, role: Role, label: String) -> Differential<Node> {
        let xdp = PaxosXdp::load(role, cfg.slots).expect("load");
        let members = if entry == Entry::Tc { vec![member()] } else { vec![] };
        xdp.configure(&cfg, &members).expect("configure");
        let prefix = if entry == Entry::Tc { "tc " } else { "" };
        let node = Node { xdp, entry, group: cfg.group, rust, role };
        Differential::new(node, format!("{prefix}{label}"), REGISTERS_EVERY)
    }

    fn coordinator(entry: Entry, slots: usize, first_instance: u32) -> Differential<Node> {
        let cfg = CoordinatorConfig { slots, first_instance, ..CoordinatorConfig::new(LEARNERS) };
        let label = format!("paxos-coordinator slots={slots} learners={LEARNERS} first={first_instance}");
        let rust = Reference::Coordinator(Coordinator::new(cfg));
        Node::load(entry, Config::coordinator(&cfg), rust, Role::Coordinator, label)
    }

    fn acceptor(entry: Entry, slots: usize) -> Differential<Node> {
        let cfg = AcceptorConfig { slots, ..AcceptorConfig::new(2, LEARNERS) };
        let label = format!("paxos-acceptor slots={slots} learners={LEARNERS}");
        Node::load(entry, Config::acceptor(&cfg), Reference::Acceptor(Acceptor::new(cfg)), Role::Acceptor, label)
    }

    fn copies_failed(&self) -> u64 {
        counter(&self.xdp.counters().expect("counters"), "multicast_errors")
    }
}

impl Pair for Node {
    fn frame(&self, payload: &[u8], pad: usize) -> Vec<u8> {
        frame::udp_frame(PROPOSER, NODE, payload, pad)
    }

    /// The entry's action and verdict for `input`, and the frame it left.
    fn run_bpf(&mut self, _: &[u8], input: &[u8]) -> Result<(Verdict, Vec<u8>), String> {
        match self.entry {
            Entry::Xdp => {
                let (action, out) = self.xdp.test_run(input).expect("test run");
                xdp_verdict(self.role, action, input.len(), &out)
            }
            Entry::Tc => {
                let failed = self.copies_failed();
                let (action, out) = self.xdp.test_run_tc(input).expect("test run");
                let v = tc_verdict(self.role, action, &out, self.copies_failed() - failed, self.group)?;
                Ok((v, out))
            }
        }
    }

    fn run_reference(&mut self, packet: &mut [u8]) -> (Verdict, usize) {
        (self.rust.process(packet), packet.len())
    }

    fn counters(&self) -> (common::Counters, common::Counters) {
        (self.xdp.counters().expect("counters"), self.rust.counters())
    }

    /// Registers (next instance, trim floor, checkpoints) and every slot of
    /// the acceptor's ring.
    fn compare_state(&self, ctx: &str) {
        let st = self.xdp.state().expect("state");
        let (next, floor, checkpoints) = self.rust.registers();
        if self.role == Role::Coordinator {
            assert_eq!(st.next, next, "next instance differs: {ctx}");
        }
        assert_eq!(st.floor, floor, "trim floor differs: {ctx}");
        assert_eq!(&st.checkpoints[..LEARNERS], &checkpoints[..], "checkpoints differ: {ctx}");
        assert!(st.checkpoints[LEARNERS..].iter().all(|&c| c == 0), "checkpoints beyond the learners: {ctx}");
        if self.role == Role::Acceptor {
            let xdp = self.xdp.slots().expect("slots");
            let rust = self.rust.slots();
            assert_eq!(xdp.len(), rust.len(), "ring size: {ctx}");
            for (i, (x, r)) in xdp.iter().zip(&rust).enumerate() {
                assert_eq!(x, r, "slot {i} differs: {ctx}");
            }
        }
    }

    fn details(&self) -> String {
        let c = self.xdp.counters().expect("counters");
        let list: Vec<String> = c
            .iter()
            .take(self.role.counter_names().len())
            .filter(|(_, v)| *v > 0)
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let st = self.xdp.state().expect("state");
        format!("{}; next instance {}, trim floor {}", list.join(", "), st.next, st.floor)
    }
}

fn golden() -> Vec<Vec<u8>> {
    common::golden(include_str!("../../wire/golden/paxos.json"))
}

/// Random packets around the reference's frontier (next instance or trim
/// floor), over a few rounds and values, so votes conflict, rounds go
/// stale, the ring wraps and trims move the floor.
struct Gen {
    rng: Rng,
}

impl Gen {
    fn value(&mut self) -> Value {
        let mut v = Value::new(&[b'a' + self.rng.below(3) as u8]).expect("short value");
        if self.rng.chance(0.05) {
            v.bytes[VALUE_LEN - 1] = self.rng.next_u64() as u8; // beyond len: still compared
        }
        if self.rng.chance(0.05) {
            v.len = self.rng.below(VALUE_LEN as u64 + 1) as u32;
        }
        v
    }

    fn inst(&mut self, frontier: u32, span: u64) -> u32 {
        if self.rng.chance(0.02) {
            return self.rng.next_u64() as u32;
        }
        (frontier as u64 + self.rng.below(span)).saturating_sub(6).min(u32::MAX as u64 - 1) as u32
    }

    fn message(&mut self, role: Role, frontier: u32) -> PaxosMsg {
        let t = match role {
            Role::Coordinator => self.rng.pick(&[
                (MsgType::Request, 55),
                (MsgType::Trim, 15),
                (MsgType::Heartbeat, 10),
                (MsgType::Phase2A, 3),
                (MsgType::Phase2B, 3),
                (MsgType::Window, 2),
                (MsgType::Catchup, 2),
            ]),
            Role::Acceptor => self.rng.pick(&[
                (MsgType::Phase2A, 50),
                (MsgType::Phase1A, 15),
                (MsgType::Trim, 15),
                (MsgType::Phase2B, 3),
                (MsgType::Request, 3),
                (MsgType::Heartbeat, 2),
                (MsgType::Decided, 2),
            ]),
        };
        let mut m = PaxosMsg::new(t);
        m.value = self.value();
        m.inst = self.inst(frontier, 40);
        m.rnd = self.rng.pick(&[(1, 60), (0, 5), (2, 5), (272, 15), (513, 10), (300, 5)]);
        m.vrnd = self.rng.below(3) as u16;
        m.acptid = self.rng.below(LEARNERS as u64 + 2) as u16;
        if t == MsgType::Trim {
            // Checkpoints mostly move forward, past the frontier.
            m.inst = (frontier as u64 + self.rng.below(12)).saturating_sub(2) as u32;
        }
        if t == MsgType::Request && self.rng.chance(0.7) {
            (m.inst, m.rnd, m.vrnd, m.acptid) = (0, 0, 0, 0);
        }
        m
    }

    fn malformed(&mut self, role: Role, frontier: u32) -> Vec<u8> {
        let mut b = self.message(role, frontier).encode();
        match self.rng.below(5) {
            0 => self.rng.truncate(&mut b, PACKET_LEN as u64),
            1 => b[1] = 11 + self.rng.below(240) as u8,
            2 => b[12..16].copy_from_slice(&(VALUE_LEN as u32 + 1 + self.rng.below(1000) as u32).to_be_bytes()),
            3 => b = self.rng.bytes(0, 100),
            _ => b.extend(self.rng.bytes(1, 30)), // trailing: valid
        }
        b
    }

    fn next(&mut self, role: Role, frontier: u32) -> (Vec<u8>, usize) {
        let p =
            if self.rng.chance(0.12) { self.malformed(role, frontier) } else { self.message(role, frontier).encode() };
        let pad = if self.rng.chance(0.3) { 60 + PACKET_LEN } else { 0 };
        (p, pad)
    }
}

fn run(mut d: Differential<Node>, packets: usize, seed: u64) {
    d.golden(&golden(), 1);
    let mut g = Gen { rng: Rng::new(seed) };
    for _ in 0..packets {
        let (p, pad) = g.next(d.pair.role, d.pair.rust.frontier());
        d.step(&p, pad);
    }
    report_seed(seed, &d.finish());
}

#[test]
fn golden_vectors_give_the_reference_verdicts_and_bytes_for_both_roles() {
    if !bpf_or_skip("golden_vectors_give_the_reference_verdicts_and_bytes_for_both_roles", paxos::unavailable) {
        return;
    }
    for entry in [Entry::Xdp, Entry::Tc] {
        for mut d in
            [Node::coordinator(entry, ACCEPTOR_SLOTS_DEFAULT, 5), Node::acceptor(entry, ACCEPTOR_SLOTS_DEFAULT)]
        {
            // Twice: the second pass meets the registers the first pass wrote.
            d.golden(&golden(), 2);
            report_golden(&d.finish());
        }
    }
}

#[test]
fn random_packets_match_the_reference_coordinator() {
    if !bpf_or_skip("random_packets_match_the_reference_coordinator", paxos::unavailable) {
        return;
    }
    run(Node::coordinator(Entry::Xdp, 16, 0), RANDOM_PACKETS_SMALL_RING, 0xC0_0D);
    run(Node::coordinator(Entry::Xdp, ACCEPTOR_SLOTS_DEFAULT, 1 << 20), RANDOM_PACKETS_DEFAULT_RING, 0xC0_0E);
    run(Node::coordinator(Entry::Tc, 16, 0), RANDOM_PACKETS_SMALL_RING, 0xC0_0F);
}

#[test]
fn random_packets_match_the_reference_acceptor() {
    if !bpf_or_skip("random_packets_match_the_reference_acceptor", paxos::unavailable) {
        return;
    }
    run(Node::acceptor(Entry::Xdp, 16), RANDOM_PACKETS_SMALL_RING, 0xACC0);
    run(Node::acceptor(Entry::Xdp, ACCEPTOR_SLOTS_DEFAULT), RANDOM_PACKETS_DEFAULT_RING, 0xACC1);
    run(Node::acceptor(Entry::Tc, 16), RANDOM_PACKETS_SMALL_RING, 0xACC2);
}
