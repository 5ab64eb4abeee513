//! `--auth-key` in the XDP transaction switch (`bpf/txn_switch.bpf.c`,
//! `bpf/include/innet_auth.h`) through `BPF_PROG_TEST_RUN` (issue 21 item
//! 3). The switch takes a reply as the store's by the port it arrives on
//! (Gotthard, section 3.3: it learns values from the store's replies).
//! With keys, a frame on the store port is taken only if its payload ends
//! in a MAC trailer that checks under either key (`innet_core::auth`, the
//! Rust reference, seals the inputs and opens the outputs): a frame with
//! the store's address and no trailer is dropped and counted
//! (`auth_refused`), a sealed one is learned and passed to the client
//! without its trailer; what the switch sends to the store is sealed with
//! the first key. Without keys the same unsealed frame is learned. Prints
//! `AUTH` lines with the median ns per packet with and without keys.
//!
//! Needs root (BPF). Without it the test says so on stderr (`SKIPPED: ...`)
//! and fails when `CI=true`.

mod common;

use std::net::Ipv4Addr;

use common::{bpf_or_skip, counter, in_private_netns};
use innet_core::auth::{AuthKeys, Key};
use innet_txn::switch::Mode;
use innet_wire::txn::{Op, Status, TxnMsg, Value};
use innet_xdp::frame::{self, Endpoint};
use innet_xdp::txn::{self, Ports, Program, Tables, TxnXdp, XDP_DROP, XDP_REDIRECT};

const CLIENT: Endpoint = Endpoint { mac: [2, 0, 0, 0, 0, 0x0c], ip: Ipv4Addr::new(10, 99, 0, 2), port: 40_000 };
const SERVICE: Endpoint = Endpoint { mac: [2, 0, 0, 0, 0, 0x51], ip: Ipv4Addr::new(10, 99, 0, 1), port: 9999 };
const STORE: Endpoint = Endpoint { mac: [2, 0, 0, 0, 0, 0x5e], ip: Ipv4Addr::new(10, 99, 1, 2), port: 9999 };

const CURRENT: Key = Key { id: 1, bytes: *b"innet txn key #1" };
const NEXT: Key = Key { id: 2, bytes: *b"innet txn key #2" };

/// Runs per timing.
const TIMED_RUNS: u32 = 1001;

fn value(s: &str) -> Value {
    Value::from_str_padded(s).unwrap()
}

/// A switch whose client port is `client` and store port `store`.
fn switch(mode: Mode, client: u32, store: u32, keys: Option<&AuthKeys>) -> TxnXdp {
    let x = TxnXdp::load(Tables::default()).expect("load");
    let ports = Ports {
        udp_port: 9999,
        client_ifindex: client,
        store_ifindex: store,
        service_ip: SERVICE.ip,
        store_ip: STORE.ip,
        client_port_mac: SERVICE.mac,
        client_mac: CLIENT.mac,
        store_port_mac: [2, 0, 0, 0, 0, 0x52],
        store_mac: STORE.mac,
    };
    x.configure(mode, &ports).expect("configure");
    x.set_auth(keys).expect("auth");
    x
}

/// A read of `key` by client 7.
fn request_of(req_id: i32, key: u32) -> Vec<u8> {
    TxnMsg::request(7, req_id, vec![Op::read(key)]).encode()
}

fn request(req_id: i32) -> Vec<u8> {
    request_of(req_id, 9)
}

/// The store's answer to [`request_of`]: `key` holds `v`.
fn reply_of(req_id: i32, key: u32, v: &str) -> Vec<u8> {
    TxnMsg::decode(&request_of(req_id, key)).unwrap().reply(Status::Ok, false, vec![Op::value(key, value(v))]).encode()
}

fn reply(req_id: i32, v: &str) -> Vec<u8> {
    reply_of(req_id, 9, v)
}

/// The frame's action and UDP payload after the switch, received on `on`.
fn run(x: &TxnXdp, from: Endpoint, to: Endpoint, payload: &[u8], on: u32) -> (u32, Vec<u8>) {
    let (action, out) = x.test_run_on(Program::TxnSwitch, &frame::udp_frame(from, to, payload, 0), on).expect("run");
    let (_, _, p, checksum_ok) = frame::parse(&out).expect("an IPv4/UDP frame");
    assert!(action == XDP_DROP || checksum_ok, "IPv4 checksum after a length change");
    (action, p.to_vec())
}

fn refused(x: &TxnXdp) -> u64 {
    counter(&x.counters().unwrap(), "auth_refused")
}

#[test]
fn the_bpf_switch_takes_only_sealed_store_replies_with_keys_and_seals_what_it_sends_the_store() {
    if !bpf_or_skip("the_bpf_switch_takes_only_sealed_store_replies_with_keys", txn::unavailable) {
        return;
    }
    let keys = AuthKeys::new(vec![CURRENT, NEXT]).unwrap();
    let next_first = AuthKeys::new(vec![NEXT, CURRENT]).unwrap();
    let (off_ns, on_ns) = in_private_netns(|[client, store]| {
        // Without keys: a reply forged with the store's address on the
        // store port is learned and passed to the client.
        let x = switch(Mode::ReadCache, client, store, None);
        assert_eq!(run(&x, CLIENT, SERVICE, &request(1), client).0, XDP_REDIRECT);
        let (action, out) = run(&x, STORE, CLIENT, &reply(1, "forged"), store);
        assert_eq!((action, out), (XDP_REDIRECT, reply(1, "forged")), "without keys the forgery passes");
        assert_eq!(counter(&x.counters().unwrap(), "learned_replies"), 1);

        let x = switch(Mode::ReadCache, client, store, Some(&keys));
        // A client's request (unsealed: the clients carry no MAC) goes to
        // the store sealed with the first key.
        let (action, out) = run(&x, CLIENT, SERVICE, &request(1), client);
        assert_eq!(action, XDP_REDIRECT);
        assert_eq!(keys.open(&out), Ok(request(1).len()), "sealed towards the store");
        assert_eq!((&out[..request(1).len()], out[request(1).len()]), (&request(1)[..], CURRENT.id));
        // Unsealed, altered, signed with an unknown key: refused.
        for (i, bad) in [
            reply(1, "forged"),
            {
                let mut b = keys.seal(&reply(1, "forged"));
                b[20] ^= 1;
                b
            },
            AuthKeys::new(vec![Key { id: 1, bytes: [7; 16] }]).unwrap().seal(&reply(1, "forged")),
            vec![0; 5],
        ]
        .iter()
        .enumerate()
        {
            assert_eq!(run(&x, STORE, CLIENT, bad, store).0, XDP_DROP, "case {i}");
            assert_eq!(refused(&x), i as u64 + 1);
        }
        assert_eq!(counter(&x.counters().unwrap(), "learned_replies"), 0, "nothing learned from a forgery");
        // The store's sealed reply, with either key (rotation), is learned
        // and reaches the client without its trailer.
        let (action, out) = run(&x, STORE, CLIENT, &next_first.seal(&reply(1, "real")), store);
        assert_eq!((action, out), (XDP_REDIRECT, reply(1, "real")));
        assert_eq!(counter(&x.counters().unwrap(), "learned_replies"), 1);
        assert_eq!(run(&x, CLIENT, SERVICE, &request_of(2, 10), client).0, XDP_REDIRECT);
        let (action, out) = run(&x, STORE, CLIENT, &keys.seal(&reply_of(2, 10, "real")), store);
        assert_eq!((action, out), (XDP_REDIRECT, reply_of(2, 10, "real")));
        assert_eq!(counter(&x.counters().unwrap(), "learned_replies"), 2);
        // Packets that do not reach the store port are not sealed: a
        // request read from the cache is answered unsealed.
        let (_, out) = run(&x, CLIENT, SERVICE, &request(3), client);
        assert_eq!(TxnMsg::decode(&out).unwrap().ops[0].value, value("real"), "served from the cache, bare");
        assert_eq!(refused(&x), 4);

        // Cost per packet (BPF_PROG_TEST_RUN on the loopback device: the
        // store port is loopback for the replies, another port for the
        // requests): a request sealed on its way to the store, a reply
        // opened and stripped on its way to the client. The cases take
        // turns, one run each, so load on the machine falls on all alike.
        const LO: u32 = 1;
        let cases = [
            (store, None, CLIENT, SERVICE, request(1)),
            (LO, None, STORE, CLIENT, reply(1, "real")),
            (store, Some(&keys), CLIENT, SERVICE, request(1)),
            (LO, Some(&keys), STORE, CLIENT, keys.seal(&reply(1, "real"))),
            (LO, Some(&keys), STORE, CLIENT, reply(1, "forged")),
        ]
        .map(|(store_port, k, from, to, payload)| {
            (switch(Mode::ReadCache, client, store_port, k), frame::udp_frame(from, to, &payload, 0))
        });
        let mut ns = [(); 5].map(|_| Vec::with_capacity(TIMED_RUNS as usize));
        for _ in 0..TIMED_RUNS {
            for ((x, frame), ns) in cases.iter().zip(ns.iter_mut()) {
                ns.push(x.median_run_ns(Program::TxnSwitch, frame, 1).expect("timed"));
            }
        }
        let median = |mut v: Vec<u64>| {
            v.sort_unstable();
            v[v.len() / 2]
        };
        let [req_off, reply_off, req_on, reply_on, spoof] = ns.map(median);
        let (off, on) = ([req_off, reply_off], [req_on, reply_on, spoof]);
        (off, on)
    });
    eprintln!(
        "AUTH txn BPF switch: request -> store {} ns without keys, {} ns with keys (sealed); store reply -> client \
         {} ns without keys, {} ns with keys (opened, trailer off); an unsealed spoof of the store refused in {} ns \
         (median of {TIMED_RUNS} BPF_PROG_TEST_RUN runs each, interleaved, {}-byte request, {}-byte reply)",
        off_ns[0],
        on_ns[0],
        off_ns[1],
        on_ns[1],
        on_ns[2],
        request(1).len(),
        reply(1, "real").len()
    );
}
