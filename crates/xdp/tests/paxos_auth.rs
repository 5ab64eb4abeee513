//! `--auth-key` in the BPF Paxos coordinator (`bpf/paxos.bpf.c`,
//! `bpf/include/innet_auth.h`) through `BPF_PROG_TEST_RUN` (issue 21 item
//! 3): with keys, a REQUEST is taken only with a MAC trailer that checks
//! under either key (`innet_core::auth`, the Rust reference, seals the
//! inputs and opens the outputs), so a frame that spoofs a proposer's
//! address without the key is dropped and counted (`auth_refused`); the 2A
//! the coordinator sends on is sealed with the first key. Without keys the
//! same unsealed REQUEST is ordered. Prints `AUTH` lines with the median
//! ns per packet with and without keys.
//!
//! Needs root (BPF). Without it the test says so on stderr (`SKIPPED: ...`)
//! and fails when `CI=true`.

mod common;

use std::net::Ipv4Addr;

use common::bpf_or_skip;
use innet_core::auth::{AuthKeys, Key};
use innet_paxos::{CoordinatorConfig, Envelope};
use innet_wire::paxos::{MsgType, PaxosMsg, DATAPLANE_PORT, PACKET_LEN};
use innet_xdp::frame::{self, Endpoint};
use innet_xdp::object::{XDP_DROP, XDP_PASS};
use innet_xdp::paxos::{self, Config, PaxosXdp, Role, META_LEN};

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
