//! What the differential tests (`*_differential.rs`) share: the privileged
//! skip, golden vectors, random-packet helpers, the packet-by-packet
//! comparison of a BPF program with its Rust reference, and the
//! `DIFFERENTIAL` lines `scripts/test.sh` echoes.
//!
//! A test describes one program and its reference as a [`Pair`] (how a
//! payload is framed, how the program's action reads as a reference
//! verdict, how their counters and state are read); [`Differential`] feeds
//! both the same packets and panics at the first one where they part, with
//! the packet in hex.

// Each test file uses a part of this module.
#![allow(dead_code)]

pub mod chain;

use innet_core::rng::Rng;
use innet_core::Verdict;
use innet_xdp::frame::{self, hex, PAYLOAD_OFFSET};
use innet_xdp::privileged::{self, say};

/// Runs `f` on a thread in a new network namespace holding a veth pair,
/// with the interface indexes of its two ends (frames run with
/// `BPF_PROG_TEST_RUN` can be received on them); the namespace goes with
/// the thread.
pub fn in_private_netns<T: Send>(f: impl FnOnce([u32; 2]) -> T + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: unshare(2) moves only this thread into a new namespace.
            let rc = unsafe { libc::unshare(libc::CLONE_NEWNET) };
            assert_eq!(rc, 0, "unshare(CLONE_NEWNET): {}", std::io::Error::last_os_error());
            let ok = std::process::Command::new("ip")
                .args(["link", "add", "innet-dc", "type", "veth", "peer", "name", "innet-ds"])
                .status()
                .expect("run ip");
            assert!(ok.success(), "ip link add veth");
            let index = |name: &str| {
                let c = std::ffi::CString::new(name).unwrap();
                // SAFETY: a NUL-terminated name.
                let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
                assert_ne!(i, 0, "no interface {name}");
                i
            };
            f([index("innet-dc"), index("innet-ds")])
        })
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e))
    })
}

/// Counters are compared after every this many packets.
pub const COUNTERS_EVERY: usize = 64;

/// `true` if the BPF programs can be loaded here (`unavailable` says why
/// not); otherwise prints `SKIPPED: <test>: <reason>` and returns `false`,
/// or fails when `CI=true`.
pub fn bpf_or_skip(test: &str, unavailable: fn() -> Option<String>) -> bool {
    privileged::proceed(test, unavailable())
}

/// The payloads of a golden file (`crates/wire/golden/*.json`), in order.
pub fn golden(json: &str) -> Vec<Vec<u8>> {
    frame::golden_vectors(json).into_iter().map(|(_, bytes)| bytes).collect()
}

/// Prints `DIFFERENTIAL golden <summary>`.
pub fn report_golden(summary: &str) {
    say(&format!("DIFFERENTIAL golden {summary}"));
}

/// Prints `DIFFERENTIAL seed <seed> <summary>`.
pub fn report_seed(seed: u64, summary: &str) {
    say(&format!("DIFFERENTIAL seed {seed:#x} {summary}"));
}

/// Draws the random packets are made of.
pub trait Draw {
    /// One of `weighted`'s items, each as likely as its weight.
    fn pick<T: Copy>(&mut self, weighted: &[(T, u64)]) -> T;
    /// `min + below(spread)` random bytes: garbage, or trailing bytes after
    /// a valid packet.
    fn bytes(&mut self, min: u64, spread: u64) -> Vec<u8>;
    /// Cuts `b` to a random length below `below`.
    fn truncate(&mut self, b: &mut Vec<u8>, below: u64);
}

impl Draw for Rng {
    fn pick<T: Copy>(&mut self, weighted: &[(T, u64)]) -> T {
        let total: u64 = weighted.iter().map(|w| w.1).sum();
        let mut x = self.below(total);
        for &(item, w) in weighted {
            if x < w {
                return item;
            }
            x -= w;
        }
        unreachable!("x < total")
    }

    fn bytes(&mut self, min: u64, spread: u64) -> Vec<u8> {
        let n = min + self.below(spread);
        (0..n).map(|_| self.next_u64() as u8).collect()
    }

    fn truncate(&mut self, b: &mut Vec<u8>, below: u64) {
        b.truncate(self.below(below) as usize);
    }
}

/// Counter `name` of `c` (0 if absent).
pub fn counter(c: &[(&'static str, u64)], name: &str) -> u64 {
    c.iter().find(|(k, _)| *k == name).map_or(0, |(_, v)| *v)
}

/// `name value, name value, ...` for `names` in that order.
pub fn counters_line(c: &[(&'static str, u64)], names: &[&str]) -> String {
    names.iter().map(|n| format!("{n} {}", counter(c, n))).collect::<Vec<_>>().join(", ")
}

/// One BPF program and its Rust reference.
/// Named counters, in a fixed order.
pub type Counters = Vec<(&'static str, u64)>;

pub trait Pair {
    /// The frame that carries `payload` to the program, padded to at least
    /// `pad` bytes.
    fn frame(&self, payload: &[u8], pad: usize) -> Vec<u8>;
    /// Runs `input` (the frame of `payload`) through the BPF program: its
    /// action read as a reference verdict and the frame it left, or why the
    /// action is no verdict at all.
    fn run_bpf(&mut self, payload: &[u8], input: &[u8]) -> Result<(Verdict, Vec<u8>), String>;
    /// Runs `packet` through the reference, which rewrites it in place: its
    /// verdict and how many leading bytes are the packet now.
    fn run_reference(&mut self, packet: &mut [u8]) -> (Verdict, usize);
    /// Both sides' counters: the BPF program's (the reference's first, in
    /// the same order, then its own) and the reference's.
    fn counters(&self) -> (Counters, Counters);
    /// Panics if tables or registers differ; `ctx` names the run and packet.
    fn compare_state(&self, ctx: &str);
    /// What the run did, for the summary line.
    fn details(&self) -> String;
    /// Whether a dropped frame's bytes must equal the reference's packet
    /// (`false` where the reference may scribble on a packet it drops).
    fn compares_dropped_bytes(&self) -> bool {
        true
    }
}

/// Feeds a [`Pair`] packets and holds the two sides to identical verdicts,
/// bytes and length, counters every [`COUNTERS_EVERY`] packets and state
/// every `state_every`.
pub struct Differential<P> {
    pub pair: P,
    pub label: String,
    pub packets: usize,
    state_every: usize,
}

impl<P: Pair> Differential<P> {
    pub fn new(pair: P, label: String, state_every: usize) -> Differential<P> {
        Differential { pair, label, packets: 0, state_every }
    }

    /// One packet through both; panics with the packet on any difference.
    pub fn step(&mut self, payload: &[u8], pad: usize) {
        let input = self.pair.frame(payload, pad);
        let got = self.pair.run_bpf(payload, &input);
        let mut expected = payload.to_vec();
        let (want, len) = self.pair.run_reference(&mut expected);
        let ctx = || format!("{} packet #{} {}", self.label, self.packets, hex(payload));
        let out = match got {
            Ok((verdict, out)) => {
                assert_eq!(verdict, want, "verdict differs: {}", ctx());
                out
            }
            Err(e) => panic!("verdict differs: {e} (reference: {want:?}): {}", ctx()),
        };
        if want != Verdict::Drop || self.pair.compares_dropped_bytes() {
            let (_, _, got, _) = frame::parse(&out).unwrap_or_else(|| panic!("output frame unreadable: {}", ctx()));
            assert_eq!(hex(got), hex(&expected[..len]), "payload differs: {}", ctx());
            let end = PAYLOAD_OFFSET + len;
            if len == payload.len() {
                assert_eq!(&out[end..], &input[end..], "padding: {}", ctx());
            } else {
                assert_eq!(out.len(), end, "frame not cut to the reference's length: {}", ctx());
            }
        }
        self.packets += 1;
        if self.packets % COUNTERS_EVERY == 0 {
            self.compare_counters();
        }
        if self.packets % self.state_every == 0 {
            self.compare_state();
        }
    }

    /// Every vector, `passes` times (later passes meet the state the
    /// earlier ones left).
    pub fn golden(&mut self, vectors: &[Vec<u8>], passes: usize) {
        for _ in 0..passes {
            for v in vectors {
                self.step(v, 0);
            }
        }
    }

    pub fn compare_counters(&self) {
        let (bpf, reference) = self.pair.counters();
        assert_eq!(
            bpf.get(..reference.len()),
            Some(&reference[..]),
            "counters differ: {} after {}",
            self.label,
            self.packets
        );
    }

    pub fn compare_state(&self) {
        self.pair.compare_state(&format!("{} after {}", self.label, self.packets));
    }

    /// Compares counters and state a last time: the summary of the run.
    pub fn finish(&self) -> String {
        self.compare_counters();
        self.compare_state();
        format!("{}: {} packets identical ({})", self.label, self.packets, self.pair.details())
    }
}

/// One sender of the Paxos differential tests' frames.
#[derive(Clone, Debug)]
pub struct PaxosSource {
    pub name: String,
    /// The interface the frame comes in on.
    pub ifindex: u32,
    pub from: innet_xdp::frame::Endpoint,
    /// The round issuer of a deployment node (0: none, or an outsider).
    pub issuer: u8,
}

/// The Paxos differential tests' senders, for a program whose two
/// interfaces are `ifaces`: a deployment (3 acceptors, 2 learners, 1
/// proposer) and each node's key as the XDP testbed gives it
/// (`paxos_testbed::arrivals`): the coordinator and the acceptors by
/// address on the data-plane side `ifaces[0]` (their frames keep whatever
/// source port they had), the backup, learners and proposer by address
/// and port on the hosts' side `ifaces[1]`; and the frames' sources: every
/// node, then outsiders (an unknown port of the hosts' address, the
/// backup's address and port on the wrong interface, the coordinator's
/// address on the wrong interface, an unknown address).
pub fn paxos_sources(
    ifaces: [u32; 2],
) -> (innet_paxos::deploy::PaxosDeployment, Vec<Option<innet_xdp::paxos::SenderKey>>, Vec<PaxosSource>) {
    use innet_paxos::deploy::{deployment, PaxosRole, PaxosShape};
    use innet_xdp::frame::Endpoint;
    use innet_xdp::paxos::SenderKey;
    use std::net::Ipv4Addr;
    let shape = PaxosShape { acceptors: 3, learners: 2, proposers: 1, origin_votes: false, failback: false };
    let d = deployment(shape, std::time::Duration::ZERO);
    let ports = innet_xdp::paxos_testbed::host_addrs(&d);
    let hosts = Ipv4Addr::new(10, 98, 0, 2);
    let mut keys = vec![];
    let mut sources = vec![];
    for (j, node) in d.nodes.iter().enumerate() {
        let (ifindex, ip, port, any_port) = match node.role {
            PaxosRole::Coordinator => (ifaces[0], Ipv4Addr::new(10, 98, 10, 1), 40_100, true),
            PaxosRole::Acceptor { id } => (ifaces[0], Ipv4Addr::new(10, 98, 20, 1 + id as u8), 34_953, true),
            _ => (ifaces[1], hosts, ports[j].port(), false),
        };
        keys.push(Some(SenderKey { ifindex, ip, port: if any_port { 0 } else { port } }));
        let from = Endpoint { mac: [2, 0, 0, 0, 1, j as u8], ip, port };
        let issuer = innet_paxos::trust::issuer_of(node.role);
        sources.push(PaxosSource { name: node.name.clone(), ifindex, from, issuer });
    }
    let backup = ports[d.find("backup").expect("a backup")].port();
    for (name, ifindex, ip, port) in [
        ("outsider on the hosts' address", ifaces[1], hosts, 40_000),
        ("the backup's address on the wrong interface", ifaces[0], hosts, backup),
        ("the coordinator's address on the wrong interface", ifaces[1], Ipv4Addr::new(10, 98, 10, 1), 40_001),
        ("an unknown address", ifaces[0], Ipv4Addr::new(10, 98, 99, 9), 40_002),
    ] {
        let from = Endpoint { mac: [2, 0, 0, 0, 2, port as u8], ip, port };
        sources.push(PaxosSource { name: name.into(), ifindex, from, issuer: 0 });
    }
    (d, keys, sources)
}

/// The reason whose count grew from `before` to `after` (a program's
/// rejection counters around one frame): why that frame was refused, if
/// it was.
pub fn rejected_reason(before: &Counters, after: &Counters) -> Option<&'static str> {
    let grown: Vec<&'static str> = before.iter().zip(after).filter(|(b, a)| a.1 != b.1).map(|(_, a)| a.0).collect();
    assert!(grown.len() <= 1, "one frame, several reasons: {grown:?}");
    grown.first().copied()
}
