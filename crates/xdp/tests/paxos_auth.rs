//! `--auth-key` in the BPF Paxos coordinator (`bpf/paxos.bpf.c`,
//! `bpf/include/innet_auth.h`) and vote counter (`bpf/paxos_learner.bpf.c`)
//! through `BPF_PROG_TEST_RUN` (issue 21 item 3). Coordinator: with keys, a REQUEST is taken only with a MAC trailer that checks
//! under either key (`innet_core::auth`, the Rust reference, seals the
//! inputs and opens the outputs), so a frame that spoofs a proposer's
//! address without the key is dropped and counted (`auth_refused`); the 2A
//! the coordinator sends on is sealed with the first key. Without keys the
//! same unsealed REQUEST is ordered. Vote counter: with keys a 2B is
//! counted only if sealed (either key), so unsealed, altered or
//! foreign-key votes never form a quorum (without keys two unsealed ones
//! decide), and the decision goes up sealed with the first key (through
//! the decision ring: bare). Prints `AUTH` lines with the median ns per
//! packet with and without keys.
//!
//! Needs root (BPF). Without it the test says so on stderr (`SKIPPED: ...`)
//! and fails when `CI=true`.

mod common;

use std::collections::HashMap;
use std::net::Ipv4Addr;

use common::bpf_or_skip;
use innet_core::auth::{AuthKeys, Key};
use innet_paxos::deploy::PaxosRole;
use innet_paxos::trust::{self, Kind};
use innet_paxos::vote_counter::{VoteCounterConfig, COUNTER_ACPTID};
use innet_paxos::{CoordinatorConfig, Envelope};
use innet_wire::paxos::{MsgType, PaxosMsg, Value, DATAPLANE_PORT, LEARNER_PORT, PACKET_LEN};
use innet_xdp::frame::{self, Endpoint};
use innet_xdp::object::{XDP_DROP, XDP_PASS};
use innet_xdp::paxos::{self, Config, PaxosXdp, Role, SenderKey, META_LEN};
use innet_xdp::paxos_learner::{self, Config as CounterConfig, DecisionRing, RingOpts, VoteCounterXdp};

const PROPOSER: Endpoint = Endpoint { mac: [2, 0, 0, 0, 0, 1], ip: Ipv4Addr::new(10, 0, 0, 1), port: 40_000 };
const NODE: Endpoint = Endpoint { mac: [2, 0, 0, 0, 0, 2], ip: Ipv4Addr::new(10, 0, 0, 2), port: DATAPLANE_PORT };

fn request(k: u32) -> Vec<u8> {
    let mut m = PaxosMsg::new(MsgType::Request);
    // Proposer id 5: block 0, the outside senders' (no sender map here).
    m.value = Envelope::new(5, k, b"v").expect("fits").to_value();
    m.encode()
}

/// Runs per timing (below the coordinator's window of instances).
const TIMED_RUNS: u32 = 1001;

/// A freshly loaded coordinator (2 learners), with `keys` if any.
fn coordinator(keys: Option<&AuthKeys>) -> PaxosXdp {
    let cfg = CoordinatorConfig::new(2);
    let x = PaxosXdp::load(Role::Coordinator, cfg.slots).expect("load");
    x.configure(&Config::coordinator(&cfg), &[]).expect("configure");
    x.set_auth(keys).expect("auth");
    x
}

fn refused(x: &PaxosXdp) -> u64 {
    x.counters().expect("counters").into_iter().find(|c| c.0 == "auth_refused").map_or(0, |c| c.1)
}

/// The frame through the coordinator: its action and UDP payload.
fn run(x: &PaxosXdp, payload: &[u8]) -> (u32, Vec<u8>) {
    let input = frame::udp_frame(PROPOSER, NODE, payload, 0);
    let (action, out) = x.test_run(&input).expect("test run");
    // A multicast (tc) passes with XDP metadata in front of the frame.
    let meta = if action == XDP_PASS && out.len() == input.len() + META_LEN { META_LEN } else { 0 };
    let at = out.len().min(meta + frame::PAYLOAD_OFFSET);
    (action, out[at..].to_vec())
}

#[test]
fn the_bpf_coordinator_takes_only_sealed_requests_with_keys_and_seals_its_2as() {
    if !bpf_or_skip("the_bpf_coordinator_takes_only_sealed_requests_with_keys_and_seals_its_2as", paxos::unavailable) {
        return;
    }
    let x = coordinator(None);
    let current = Key { id: 3, bytes: *b"innet paxos key!" };
    let next = Key { id: 4, bytes: *b"the next one ..." };
    let keys = AuthKeys::new(vec![current, next]).unwrap();
    let next_first = AuthKeys::new(vec![next, current]).unwrap();

    // Without keys: an unsealed REQUEST (a spoof of the proposer's address
    // from anyone) becomes a 2A.
    let (action, out) = run(&x, &request(1));
    assert_eq!(action, XDP_PASS, "multicast (tc)");
    assert_eq!(PaxosMsg::decode(&out[..PACKET_LEN]).unwrap().msgtype, MsgType::Phase2A);

    x.set_auth(Some(&keys)).expect("auth on");
    for (i, bad) in [
        request(3),
        {
            let mut b = keys.seal(&request(4));
            b[5] ^= 1;
            b
        },
        {
            let mut b = keys.seal(&request(5));
            b[PACKET_LEN + 3] ^= 1;
            b
        },
        AuthKeys::new(vec![Key { id: 3, bytes: [7; 16] }]).unwrap().seal(&request(6)),
    ]
    .iter()
    .enumerate()
    {
        assert_eq!(run(&x, bad).0, XDP_DROP, "case {i}: unsealed, altered, bad tag, wrong key");
        assert_eq!(refused(&x), i as u64 + 1);
    }
    for (signer, k) in [(&keys, 7), (&next_first, 8)] {
        let (action, out) = run(&x, &signer.seal(&request(k)));
        assert_eq!(action, XDP_PASS, "sealed with key {}", signer.sealing().id);
        assert_eq!(keys.open(&out), Ok(PACKET_LEN), "the 2A is sealed");
        assert_eq!(out[PACKET_LEN], current.id, "with the first key");
        let m = PaxosMsg::decode(&out[..PACKET_LEN]).unwrap();
        assert_eq!((m.msgtype, Envelope::from_value(&m.value).map(|e| e.request)), (MsgType::Phase2A, Some(k)));
    }
    // Cost per packet, each on a fresh coordinator (every run takes an
    // instance: fewer runs than its window).
    let timed = |keys: Option<&AuthKeys>, payload: Vec<u8>| {
        let frame = frame::udp_frame(PROPOSER, NODE, &payload, 0);
        coordinator(keys).median_run_ns(&frame, TIMED_RUNS).expect("timed")
    };
    let off_ns = timed(None, request(9));
    let on_ns = timed(Some(&keys), keys.seal(&request(9)));
    let refuse_ns = timed(Some(&keys), request(9));
    eprintln!(
        "AUTH paxos BPF coordinator: REQUEST -> 2A {off_ns} ns without keys, {on_ns} ns with keys (open + seal); \
         an unsealed spoof refused in {refuse_ns} ns (median of {TIMED_RUNS} BPF_PROG_TEST_RUN runs)"
    );
}

/// The acceptors of the vote counter's tests, at 10.0.1.<a> (senders known
/// by address on the interface `BPF_PROG_TEST_RUN` receives on).
fn acceptor_at(a: u16) -> Endpoint {
    Endpoint { mac: [2, 0, 0, 0, 1, a as u8], ip: Ipv4Addr::new(10, 0, 1, a as u8), port: DATAPLANE_PORT }
}

const LEARNER: Endpoint = Endpoint { mac: [2, 0, 0, 0, 0, 3], ip: Ipv4Addr::new(10, 0, 0, 3), port: LEARNER_PORT };

/// Acceptor `a`'s 2B for `inst`, round 1, value `value`.
fn vote(a: u16, inst: u32, value: &[u8]) -> Vec<u8> {
    let mut m = PaxosMsg::new(MsgType::Phase2B);
    (m.inst, m.rnd, m.vrnd, m.acptid) = (inst, 1, 1, a);
    m.value = Value::new(value).expect("short");
    m.encode()
}

/// A vote counter of 3 acceptors (quorum 2) for one learner port, the
/// acceptors its senders, decisions up as packets (or with `ring`,
/// through its ring), with `keys` if any.
fn vote_counter(keys: Option<&AuthKeys>, ring: bool) -> VoteCounterXdp {
    let mut cfg = CounterConfig::new(VoteCounterConfig::new(3), vec![(LEARNER_PORT, Kind::Learner)]);
    cfg.ring = ring.then(RingOpts::default);
    let k = VoteCounterXdp::load(&cfg).expect("load");
    let senders: HashMap<SenderKey, _> = (0..3u16)
        .map(|a| {
            let key = SenderKey { ifindex: paxos::LOOPBACK_IFINDEX, ip: acceptor_at(a).ip, port: 0 };
            (key, trust::sender_of(PaxosRole::Acceptor { id: a }))
        })
        .collect();
    k.set_senders(&senders).expect("senders");
    k.set_auth(keys).expect("auth");
    k
}

fn counter_of(k: &VoteCounterXdp, name: &str) -> u64 {
    k.counters().expect("counters").into_iter().find(|c| c.0 == name).map_or(0, |c| c.1)
}

/// `payload` from acceptor `a` through the counter's XDP entry (or its tc
/// entry): whether it went up, and its UDP payload.
fn up(k: &VoteCounterXdp, a: u16, payload: &[u8], tc: bool) -> (bool, Vec<u8>) {
    let input = frame::udp_frame(acceptor_at(a), LEARNER, payload, 0);
    let (action, out) = if tc { k.test_run_tc(&input) } else { k.test_run(&input) }.expect("test run");
    let passed = if tc { action == TC_ACT_OK } else { action == XDP_PASS };
    (passed, out[out.len().min(frame::PAYLOAD_OFFSET)..].to_vec())
}

const TC_ACT_OK: u32 = 0;

#[test]
fn the_bpf_vote_counter_counts_only_sealed_votes_with_keys_and_seals_its_decisions() {
    let name = "the_bpf_vote_counter_counts_only_sealed_votes_with_keys_and_seals_its_decisions";
    if !bpf_or_skip(name, paxos_learner::unavailable) {
        return;
    }
    let current = Key { id: 3, bytes: *b"innet paxos key!" };
    let next = Key { id: 4, bytes: *b"the next one ..." };
    let keys = AuthKeys::new(vec![current, next]).unwrap();
    let next_first = AuthKeys::new(vec![next, current]).unwrap();
    let forger = AuthKeys::new(vec![Key { id: 3, bytes: [7; 16] }]).unwrap();
    for tc in [false, true] {
        let entry = if tc { "tc" } else { "xdp" };
        // Without keys: two unsealed votes (from anyone who can put a
        // frame with two acceptors' addresses on the link) decide.
        let k = vote_counter(None, false);
        assert!(!up(&k, 0, &vote(0, 1, b"forged"), tc).0, "{entry}: the first vote is counted");
        let (passed, out) = up(&k, 1, &vote(1, 1, b"forged"), tc);
        assert!(passed, "{entry}: without keys the forged quorum decides");
        assert_eq!(PaxosMsg::decode(&out[..PACKET_LEN]).unwrap().msgtype, MsgType::Decided);

        let k = vote_counter(Some(&keys), false);
        // With keys: unsealed, altered, a bad tag, another key's, a cut
        // trailer: refused
        // before a slot is touched (so no quorum of them ever forms).
        let altered = |at: usize| {
            let mut b = keys.seal(&vote(0, 2, b"value"));
            b[at] ^= 1;
            b
        };
        for (i, (a, bad)) in [
            (0, vote(0, 2, b"forged")),
            (1, vote(1, 2, b"forged")),
            (0, altered(20)),
            (1, altered(PACKET_LEN + 3)),
            (0, forger.seal(&vote(0, 2, b"forged"))),
            (1, keys.seal(&vote(1, 2, b"value"))[..PACKET_LEN + 8].to_vec()),
        ]
        .into_iter()
        .enumerate()
        {
            assert!(!up(&k, a, &bad, tc).0, "{entry} case {i}: refused");
            assert_eq!(counter_of(&k, "auth_refused"), i as u64 + 1, "{entry} case {i}");
        }
        assert_eq!(counter_of(&k, "counted"), 0, "{entry}: no refused vote was counted");
        assert!(k.slots(0).unwrap().iter().all(Option::is_none), "{entry}: no slot holds a refused vote");
        // Sealed votes under either key of a rotation are counted; the
        // decision goes up sealed with the first key.
        assert!(!up(&k, 0, &keys.seal(&vote(0, 2, b"value")), tc).0, "{entry}: counted");
        let (passed, out) = up(&k, 1, &next_first.seal(&vote(1, 2, b"value")), tc);
        assert!(passed, "{entry}: the quorum of sealed votes decides");
        assert_eq!(keys.open(&out), Ok(PACKET_LEN), "{entry}: the decision is sealed");
        assert_eq!(out[PACKET_LEN], current.id, "{entry}: with the first key");
        let d = PaxosMsg::decode(&out[..PACKET_LEN]).unwrap();
        assert_eq!((d.msgtype, d.inst, d.acptid), (MsgType::Decided, 2, COUNTER_ACPTID));
        assert_eq!(d.value.as_slice(), b"value");
        // What is not a vote goes up as it came, its trailer still checking.
        let window = keys.seal(&{
            let mut m = PaxosMsg::new(MsgType::Decided);
            (m.inst, m.acptid) = (9, 2);
            m.encode()
        });
        let (passed, out) = up(&k, 2, &window, tc);
        assert!(passed && out == window, "{entry}: a sealed DECIDED passes up unchanged");
        assert_eq!(counter_of(&k, "auth_refused"), 6, "{entry}: every sealed frame checked");
    }
    // Through the ring: the record is the DECIDED without a trailer.
    let k = vote_counter(Some(&keys), true);
    let mut ring = DecisionRing::of(&k).expect("ring");
    assert!(!up(&k, 0, &vote(0, 5, b"v"), false).0);
    assert!(!up(&k, 0, &keys.seal(&vote(0, 5, b"v")), false).0);
    assert!(!up(&k, 2, &keys.seal(&vote(2, 5, b"v")), false).0, "the decision goes into the ring");
    let got = ring.take();
    assert_eq!(got.len(), 1, "one record");
    let d = PaxosMsg::decode(&got[0].1).unwrap();
    assert_eq!((d.msgtype, d.inst, d.value.as_slice()), (MsgType::Decided, 5, &b"v"[..]));
    assert_eq!(counter_of(&k, "auth_refused"), 1);

    // Cost per vote, the cases taking turns run by run, each counter on
    // instances 0.. (fewer than its ring's slots): acceptor 0's vote
    // (counted), acceptor 1's (decides: rewritten, sealed with keys, up);
    // and an unsealed spoof refused.
    let (off, on) = (vote_counter(None, false), vote_counter(Some(&keys), false));
    let mut ns: [Vec<u64>; 5] = Default::default();
    let time = |k: &VoteCounterXdp, a: u16, payload: &[u8]| {
        k.test_run_once_ns(&frame::udp_frame(acceptor_at(a), LEARNER, payload, 0), false).expect("timed")
    };
    for i in 0..TIMED_RUNS {
        ns[0].push(time(&off, 0, &vote(0, i, b"value")));
        ns[1].push(time(&on, 0, &keys.seal(&vote(0, i, b"value"))));
        ns[2].push(time(&off, 1, &vote(1, i, b"value")));
        ns[3].push(time(&on, 1, &keys.seal(&vote(1, i, b"value"))));
        ns[4].push(time(&on, 2, &vote(2, i, b"spoof")));
    }
    assert_eq!(counter_of(&off, "decisions"), TIMED_RUNS as u64, "every timed instance decided");
    assert_eq!(counter_of(&on, "decisions"), TIMED_RUNS as u64, "every timed instance decided with keys");
    let [counted_off, counted_on, decided_off, decided_on, refused] = ns.map(|mut v| {
        v.sort_unstable();
        v[v.len() / 2]
    });
    eprintln!(
        "AUTH paxos BPF vote counter (XDP entry): a vote counted {counted_off} ns without keys, {counted_on} ns with \
         keys (open); the vote that decides {decided_off} ns / {decided_on} ns (open + seal the DECIDED); an \
         unsealed spoof refused in {refused} ns (medians of {TIMED_RUNS} BPF_PROG_TEST_RUN runs, cases interleaved)"
    );
}
