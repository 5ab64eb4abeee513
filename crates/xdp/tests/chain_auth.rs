//! `--auth-key` in the XDP chain nodes (`bpf/netcraq.bpf.c`,
//! `bpf/netchain.bpf.c`, `bpf/include/innet_chain_node.h` over
//! `innet_auth.h`) through `BPF_PROG_TEST_RUN` (issue 21 item 3). The
//! programs know a chain node by ingress interface and Ethernet source
//! (`chain_peers`); with keys, a frame from a chain node is taken only if
//! its UDP payload ends in a MAC trailer that checks under either key
//! (`innet_core::auth`, the Rust reference, seals the inputs and opens the
//! outputs), so a write or ACK that spoofs the predecessor's or the tail's
//! MAC without the key is dropped and counted (`auth_refused`); what goes
//! to the next node leaves sealed with the first key, what goes to a
//! client bare. Without keys the same unsealed spoofs are processed.
//! Prints `AUTH` lines with the median ns per packet with and without keys.
//!
//! Needs root (BPF). Without it the test says so on stderr (`SKIPPED: ...`)
//! and fails when `CI=true`.

mod common;

use common::bpf_or_skip;
use common::chain::{node_at, peer_mac, port, request_frame, CLIENT, ORIGIN_PORT, TEST_RUN_IFINDEX};
use innet_chain::client::node_addr;
use innet_chain::netchain::Hop;
use innet_chain::Role;
use innet_core::auth::{AuthKeys, Key, TRAILER_LEN};
use innet_wire::netchain::{self as ncw, key_from_u32, NcMsg, NcOp};
use innet_wire::netcraq::{self as craqw, CraqMsg, KvOp, Value};
use innet_xdp::chain::{self, CraqXdp, NcXdp, XDP_DROP, XDP_REDIRECT, XDP_TX};
use innet_xdp::frame;

/// The node under test is chain node 1 of 3: its predecessor 0, the tail 2.
const PREV: u16 = 0;
const TAIL: u16 = 2;
const KEY: u32 = 3;
/// Runs per timing, and rounds of the three timings interleaved.
const TIMED_RUNS: u32 = 401;
const TIMED_ROUNDS: usize = 7;

/// A frame from chain node or client `mac` to the node.
fn frame_from(mac: [u8; 6], udp_port: u16, payload: &[u8]) -> Vec<u8> {
    request_frame(payload, 0, udp_port, mac)
}

/// The keys of a rotation: the current one seals, the next is accepted;
/// and the same two the other way round (a node already on the next).
fn rotation() -> (AuthKeys, AuthKeys, Key) {
    let current = Key { id: 3, bytes: *b"innet chain key!" };
    let next = Key { id: 4, bytes: *b"the next one ..." };
    (AuthKeys::new(vec![current, next]).unwrap(), AuthKeys::new(vec![next, current]).unwrap(), current)
}

/// What every case needs of a loaded node.
trait Node {
    fn run(&self, frame: &[u8]) -> (u32, Vec<u8>);
    fn counter(&self, name: &str) -> u64;
    fn set_auth(&self, keys: Option<&AuthKeys>);
    fn median_ns(&self, frame: &[u8]) -> u64;
    fn udp_port(&self) -> u16;
}

/// [`Node`] for a loader with these inherent methods, listening on `port`.
macro_rules! node {
    ($loader:ty, $port:expr) => {
        impl Node for $loader {
            fn run(&self, frame: &[u8]) -> (u32, Vec<u8>) {
                let (action, out) = self.test_run(frame).expect("test run");
                (action, out[frame::PAYLOAD_OFFSET.min(out.len())..].to_vec())
            }
            fn counter(&self, name: &str) -> u64 {
                <$loader>::counter(self, name).expect("counter")
            }
            fn set_auth(&self, keys: Option<&AuthKeys>) {
                <$loader>::set_auth(self, keys).expect("auth")
            }
            fn median_ns(&self, frame: &[u8]) -> u64 {
                self.median_run_ns(frame, TIMED_RUNS).expect("timed")
            }
            fn udp_port(&self) -> u16 {
                $port
            }
        }
    };
}
node!(CraqXdp, craqw::DEFAULT_PORT);
node!(NcXdp, ncw::DEFAULT_PORT);

/// A node message from chain node `mac`: `message(k)` (fresh for each `k`,
/// to pass the node's own rules) unsealed is processed without keys (the
/// `processed` counter counts it); with keys, `spoof` unsealed, an altered
/// sealed message and one sealed with an unknown key are refused
/// (`auth_refused`) before the node's logic sees them, while a message
/// sealed with either key of a rotation is processed, and what it sends on
/// to the next node is sealed with the first key.
fn refuses_spoofs(
    x: &dyn Node,
    what: &str,
    spoof: &[u8],
    mac: [u8; 6],
    message: impl Fn(u64) -> Vec<u8>,
    processed: &str,
) {
    let (keys, next_first, current) = rotation();
    let run = |payload: &[u8]| x.run(&frame_from(mac, x.udp_port(), payload));
    run(&message(0));
    assert_eq!(x.counter(processed), 1, "{what}: without keys an unsealed node message is processed");
    x.set_auth(Some(&keys));
    let unknown = AuthKeys::new(vec![Key { id: 3, bytes: [7; 16] }]).unwrap();
    let mut altered = keys.seal(&message(1));
    altered[4] ^= 1;
    for (i, bad) in [spoof.to_vec(), altered, unknown.seal(&message(2))].iter().enumerate() {
        assert_eq!(run(bad).0, XDP_DROP, "{what}: case {i}: unsealed, altered, unknown key");
        assert_eq!(x.counter("auth_refused"), i as u64 + 1, "{what}");
    }
    assert_eq!(x.counter(processed), 1, "{what}: the refused never reached the node's logic");
    for (k, signer) in [(3, &keys), (4, &next_first)] {
        let (action, out) = run(&signer.seal(&message(k)));
        assert_eq!(x.counter(processed), k - 1, "{what}: sealed with key {}", signer.sealing().id);
        if action == XDP_REDIRECT {
            let len = keys.open(&out).unwrap_or_else(|e| panic!("{what}: the output is not sealed: {e:?}"));
            assert_eq!(out[len], current.id, "{what}: sealed with the first key");
        }
    }
}

#[test]
fn the_bpf_chain_nodes_take_only_sealed_node_messages_with_keys_and_seal_what_they_pass_on() {
    if !bpf_or_skip("the_bpf_chain_nodes_take_only_sealed_node_messages_with_keys", chain::unavailable) {
        return;
    }
    let (keys, _, _) = rotation();
    let craq_port = craqw::DEFAULT_PORT;
    let craq = |role: Role| {
        let mut x = CraqXdp::load(64, 8, node_at(craq_port)).expect("load");
        for p in [0, 1, ORIGIN_PORT] {
            x.set_port(p, &port(p)).expect("port");
        }
        for i in 0..3 {
            x.set_peer(TEST_RUN_IFINDEX, peer_mac(i), Some(i)).expect("peer");
        }
        x.set_peers((!role.is_head()).then_some(PREV), Some(TAIL)).expect("peers");
        x.set_role(Some(role)).expect("role");
        x
    };
    let write = |k: u64| CraqMsg::write(KEY, Value::from_counter(k + 1)).encode();

    // A middle node: writes only from the predecessor, ACKs only from the
    // tail (ACKs of values it never held: they reach the logic as stale).
    let x = craq(Role::Replica);
    let (_, out) = x.run(&frame_from(peer_mac(PREV), craq_port, &write(100)));
    assert_eq!(out.len(), craqw::LEN, "without keys nothing is sealed");
    let x = craq(Role::Replica);
    refuses_spoofs(&x, "netcraq write", &write(9), peer_mac(PREV), write, "writes_dirty");
    let ack = |k: u64| CraqMsg { op: KvOp::Ack, key: KEY, value: Value::from_counter(1000 + k) }.encode();
    refuses_spoofs(&craq(Role::Replica), "netcraq ack", &ack(9), peer_mac(TAIL), ack, "acks_stale");
    // A client's read of a clean object is answered bare; a client's write
    // at the head goes on sealed.
    let (action, out) = x.run(&frame_from(CLIENT.mac, craq_port, &CraqMsg::read(KEY + 1).encode()));
    assert_eq!((action, out.len()), (XDP_TX, craqw::LEN), "a reply to a client carries no trailer");
    let head = craq(Role::Head);
    head.set_auth(Some(&keys)).expect("auth");
    let (action, out) = head.run(&frame_from(CLIENT.mac, craq_port, &write(5)));
    assert_eq!((action, keys.open(&out)), (XDP_REDIRECT, Ok(craqw::LEN)), "the head seals a client's write");

    // NetChain: node 1 of 0, 1, 2.
    let nc_port = ncw::DEFAULT_PORT;
    let nc = |role: Role| {
        let mut x = NcXdp::load(node_addr(1), 64, node_at(nc_port)).expect("load");
        for p in [0, ORIGIN_PORT] {
            x.set_port(p, &port(p)).expect("port");
        }
        x.set_neighbour(node_addr(2), Hop::Port(0)).expect("neighbour");
        x.install_key(key_from_u32(KEY)).expect("install").expect("room");
        for i in 0..3 {
            x.set_peer(TEST_RUN_IFINDEX, peer_mac(i), Some(i)).expect("peer");
        }
        x.set_prev(Some(PREV)).expect("prev");
        let successors = if role.is_tail() { vec![] } else { vec![node_addr(2)] };
        x.set_successors(&successors).expect("successors");
        x.set_role(Some(role)).expect("role");
        x
    };
    let nc_msg = |op: NcOp, stack: Vec<u32>, seq: u16| {
        NcMsg { chain: stack, op, seq, key: key_from_u32(KEY), value: Value::from_counter(seq as u64), vgroup: 0 }
            .encode()
    };
    let nc_write = |k: u64| nc_msg(NcOp::WriteReq, vec![node_addr(1), node_addr(2)], 100 + k as u16);
    let x = nc(Role::Replica);
    refuses_spoofs(&x, "netchain write", &nc_write(30_000), peer_mac(PREV), nc_write, "writes_applied");
    // The tail answers a read forwarded to it bare.
    let tail = nc(Role::Tail);
    tail.set_auth(Some(&keys)).expect("auth");
    let read = nc_msg(NcOp::ReadReq, vec![node_addr(1)], 0);
    let (action, out) = tail.run(&frame_from(peer_mac(PREV), nc_port, &keys.seal(&read)));
    assert_eq!(action, XDP_REDIRECT);
    assert_eq!(NcMsg::decode(&out).map(|m| (m.op, out.len())), Ok((NcOp::ReadReply, read.len() - 4)), "no trailer");

    // Cost per packet, side by side: the NetCRAQ tail turning a write from
    // its predecessor into the ACK (open and seal), the NetChain middle
    // node passing a read on (open and seal), and an unsealed spoof refused.
    let craq_tail = craq(Role::Tail);
    let nc_mid = nc(Role::Replica);
    let nc_read = nc_msg(NcOp::ReadReq, vec![node_addr(1), node_addr(2)], 0);
    let mut lines = vec![];
    for (name, node, payload, udp_port) in [
        ("netcraq tail: write -> ACK", &craq_tail as &dyn Node, write(7), craq_port),
        ("netchain middle: read -> next", &nc_mid as &dyn Node, nc_read, nc_port),
    ] {
        let (bare, sealed) = (frame_from(peer_mac(PREV), udp_port, &payload), keys.seal(&payload));
        let sealed = frame_from(peer_mac(PREV), udp_port, &sealed);
        let mut ns = [vec![], vec![], vec![]];
        for _ in 0..TIMED_ROUNDS {
            node.set_auth(None);
            ns[0].push(node.median_ns(&bare));
            node.set_auth(Some(&keys));
            ns[1].push(node.median_ns(&sealed));
            ns[2].push(node.median_ns(&bare));
        }
        let [off, on, refuse] = ns.map(|mut v| {
            v.sort_unstable();
            v[v.len() / 2]
        });
        lines.push(format!("{name} {off} ns without keys, {on} ns with keys, a spoof refused in {refuse} ns"));
    }
    eprintln!(
        "AUTH chain BPF (median of {TIMED_ROUNDS} interleaved rounds, each the median of {TIMED_RUNS} \
         BPF_PROG_TEST_RUN runs; {TRAILER_LEN}-byte trailer): {}",
        lines.join("; ")
    );
}
