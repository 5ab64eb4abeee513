//! An XDP acceptor restarts with its promises and votes (CAANS section
//! 3.1, "Paxos usually requires that acceptor storage is persistent ... if
//! the acceptor fails, and then restarts, it should be able to recover its
//! durable state"; the paper assumes the device's memory is made
//! persistent). Here the BPF program fails and is loaded again
//! (`PaxosXdp::load_pinned`) over the maps the first load pinned on the
//! bpffs, which outlive the program as the device memory would.
//!
//! The scenario of the live acceptor's test (crates/cli/tests/
//! acceptor_restart.rs), through the real BPF acceptor by
//! `BPF_PROG_TEST_RUN`: the acceptor votes in round 1 for instance 5 and
//! promises learner 0's recovery round for instance 6; its program is
//! dropped; a new program over the pins refuses round 1's 2A for instance
//! 6 and reports the vote of instance 5 to a higher phase 1. The control:
//! the same 2A to a program loaded afresh (the state lost) is voted for.

use std::collections::HashMap;
use std::net::Ipv4Addr;

use innet_paxos::deploy::PaxosRole;
use innet_paxos::trust::{sender_of, Senders};
use innet_paxos::{round, AcceptorConfig, ISSUER_LEARNER_BASE, ROUND_INIT};
use innet_wire::paxos::{MsgType, PaxosMsg, Value, DATAPLANE_PORT};
use innet_xdp::frame::{self, Endpoint};
use innet_xdp::paxos::{Config, Member, PaxosXdp, Role, SenderKey, LOOPBACK_IFINDEX};
use innet_xdp::privileged::{proceed, say};

const SLOTS: usize = 64;
const COORDINATOR: Endpoint = Endpoint { mac: [2, 0, 0, 0, 0, 1], ip: Ipv4Addr::new(10, 98, 0, 1), port: 40_000 };
const LEARNER: Endpoint = Endpoint { mac: [2, 0, 0, 0, 0, 3], ip: Ipv4Addr::new(10, 98, 0, 3), port: 40_001 };
const ACCEPTOR: Endpoint = Endpoint { mac: [2, 0, 0, 0, 0, 2], ip: Ipv4Addr::new(10, 98, 0, 2), port: DATAPLANE_PORT };

/// Configures a loaded acceptor 0 of one learner: it admits 2As from the
/// coordinator and phase 1 from learner 0, and sends its votes to a member
/// on a device that does not exist (a copy fails cheaply; the test reads
/// the ring, not the copies).
fn configure(a: &PaxosXdp) {
    let nowhere = Member {
        ifindex: 999_999,
        src_mac: ACCEPTOR.mac,
        src_ip: ACCEPTOR.ip,
        dst_mac: LEARNER.mac,
        dst_ip: LEARNER.ip,
        dst_port: LEARNER.port,
    };
    let cfg = AcceptorConfig { slots: SLOTS, ..AcceptorConfig::new(0, 1) };
    a.configure(&Config::acceptor(&cfg), &[nowhere]).expect("configure");
    let key = |e: Endpoint| SenderKey { ifindex: LOOPBACK_IFINDEX, ip: e.ip, port: 0 };
    let by_addr = HashMap::from([
        (key(COORDINATOR), sender_of(PaxosRole::Coordinator)),
        (key(LEARNER), sender_of(PaxosRole::Learner { id: 0 })),
    ]);
    a.set_senders(&Senders { kind: Role::Acceptor.kind(), by_addr }).expect("senders");
}

/// Sends `t` for `inst` in round `rnd` from `from` through the acceptor's
/// XDP program; the Paxos message it answers with, if it rewrote the frame
/// into one.
fn send(a: &PaxosXdp, from: Endpoint, t: MsgType, inst: u32, rnd: u16, value: &[u8]) -> Option<PaxosMsg> {
    let mut m = PaxosMsg::new(t);
    m.inst = inst;
    m.rnd = rnd;
    m.value = Value::new(value).expect("short value");
    let (_, out) = a.test_run(&frame::udp_frame(from, ACCEPTOR, &m.encode(), 0)).expect("test run");
    let (_, _, payload, _) = frame::parse(&out)?;
    PaxosMsg::decode(payload).ok().filter(|o| o.msgtype != t)
}

/// The ring slot of `inst`: `(rnd, vrnd)` if the slot holds that instance.
fn slot(a: &PaxosXdp, inst: u32) -> Option<(u16, u16)> {
    let slots = a.slots().expect("slots");
    slots[inst as usize % SLOTS].filter(|s| s.0 == inst).map(|(_, rnd, vrnd, _)| (rnd, vrnd))
}

fn counter(a: &PaxosXdp, name: &str) -> u64 {
    a.counters().expect("counters").into_iter().find(|(n, _)| *n == name).map_or(0, |(_, v)| v)
}

#[test]
fn a_restarted_xdp_acceptor_keeps_its_promises_from_the_pinned_maps() {
    if !proceed("paxos_restart", innet_xdp::paxos::unavailable()) {
        return;
    }
    let pins = std::path::PathBuf::from(format!("/sys/fs/bpf/innet-test-paxos-restart-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&pins);
    let promised = round(1, ISSUER_LEARNER_BASE);
    assert!(promised > ROUND_INIT);

    // First life: a vote in round 1 for instance 5, a promise for 6.
    let mut first = PaxosXdp::load(Role::Acceptor, SLOTS).expect("load");
    configure(&first);
    first.pin_maps(&pins).expect("pin");
    send(&first, COORDINATOR, MsgType::Phase2A, 5, ROUND_INIT, b"five");
    assert_eq!(slot(&first, 5), Some((ROUND_INIT, ROUND_INIT)), "voted in round 1 for instance 5");
    send(&first, LEARNER, MsgType::Phase1A, 6, promised, b"");
    assert_eq!(slot(&first, 6).map(|s| s.0), Some(promised), "promised the learner's round for instance 6");
    drop(first);

    // Second life, over the pins.
    let second = PaxosXdp::load_pinned(Role::Acceptor, SLOTS, &pins).expect("load over the pins");
    assert_eq!(slot(&second, 5), Some((ROUND_INIT, ROUND_INIT)), "the vote survived the restart");
    assert_eq!(slot(&second, 6).map(|s| s.0), Some(promised), "the promise survived the restart");
    let stale = counter(&second, "stale_round");
    let votes = counter(&second, "votes");
    send(&second, COORDINATOR, MsgType::Phase2A, 6, ROUND_INIT, b"six");
    assert_eq!(slot(&second, 6).map(|s| s.1), Some(0), "restarted, it voted against its promise");
    assert_eq!(counter(&second, "votes"), votes, "no vote for the refused 2A");
    assert_eq!(counter(&second, "stale_round"), stale + 1, "the 2A counted as below the promise");
    // A higher phase 1 for instance 5 hears of the round-1 vote and its value.
    let higher = round(2, ISSUER_LEARNER_BASE);
    let p1b = send(&second, LEARNER, MsgType::Phase1A, 5, higher, b"").expect("a 1B");
    assert_eq!((p1b.msgtype, p1b.inst, p1b.rnd, p1b.vrnd), (MsgType::Phase1B, 5, higher, ROUND_INIT), "{p1b:?}");
    assert_eq!(p1b.value.as_slice(), b"five");
    // The promised round's 2A is still voted.
    send(&second, LEARNER, MsgType::Phase2A, 6, promised, b"recovered");
    assert_eq!(slot(&second, 6), Some((promised, promised)), "the promised round's 2A is voted");
    drop(second);
    std::fs::remove_dir_all(&pins).expect("remove the pins");

    // The control: loaded afresh, the acceptor has forgotten and votes.
    let fresh = PaxosXdp::load(Role::Acceptor, SLOTS).expect("load");
    configure(&fresh);
    send(&fresh, COORDINATOR, MsgType::Phase2A, 6, ROUND_INIT, b"six");
    assert_eq!(slot(&fresh, 6), Some((ROUND_INIT, ROUND_INIT)), "a fresh acceptor votes in round 1");

    // A ring of another size is refused over the pins, naming them.
    let mut other = PaxosXdp::load(Role::Acceptor, SLOTS).expect("load");
    configure(&other);
    other.pin_maps(&pins).expect("pin");
    let e = PaxosXdp::load_pinned(Role::Acceptor, SLOTS * 2, &pins).err().expect("another ring size is refused");
    assert!(format!("{e:#}").contains("innet-test-paxos-restart"), "{e:#}");
    drop(other);
    let _ = std::fs::remove_dir_all(&pins);
    say("PAXOS_RESTART xdp acceptor: refused the 2A below its promise after reloading over its pinned maps (afresh: voted)");
}
