//! Hostile input to a live chain over real UDP sockets: writes sent straight
//! to a node below the head, NetChain writes carrying a made-up sequence
//! number, ACKs not from the tail. Each forged packet is rejected and
//! counted by reason, and the chain goes on serving: later puts are
//! acknowledged and read back at every node, and the nodes agree.

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use common::eventually;
use innet_chain::client::node_addr;
use innet_chain::Protocol;
use innet_core::Counters;
use innet_live::chain::{run_one, LiveChain, LiveChainConfig};
use innet_live::Stop;
use innet_wire::netchain::{key_from_u32, NcMsg, NcOp};
use innet_wire::netcraq::{CraqMsg, KvOp, Value};

const KEY: u32 = 3;

fn counter(chain: &LiveChain, node: usize, name: &str) -> u64 {
    let all = chain.with_node(node, |n| n.counters()).expect("node runs");
    all.into_iter().find(|(k, _)| *k == name).map_or_else(|| panic!("no counter {name}"), |(_, v)| v)
}

/// A put through the client library (to the head); the value acknowledged.
fn put(chain: &LiveChain, protocol: Protocol, value: Value) -> Value {
    let done =
        run_one(protocol, &chain.addrs(), 0, KEY, Some(value), Duration::from_millis(50), Duration::from_secs(2))
            .unwrap()
            .expect("the put is acknowledged");
    done.value
}

/// A get first sent to node `near`.
fn get(chain: &LiveChain, protocol: Protocol, near: usize) -> Value {
    let done = run_one(protocol, &chain.addrs(), near, KEY, None, Duration::from_millis(50), Duration::from_secs(2))
        .unwrap()
        .expect("the get is answered");
    done.value
}

/// Every node holds `value` for KEY (NetCRAQ: as its clean version).
fn nodes_agree(chain: &LiveChain, nodes: usize, value: Value) {
    for i in 0..nodes {
        eventually(&format!("node {i} holds the last put"), || {
            chain.with_node(i, |n| n.values(KEY + 1)[KEY as usize]) == Some(value)
        });
    }
}

fn start(protocol: Protocol) -> LiveChain {
    LiveChain::start(LiveChainConfig::new(protocol, 3), &Stop::new()).unwrap()
}

fn outside() -> UdpSocket {
    UdpSocket::bind("127.0.0.1:0").unwrap()
}

fn send(s: &UdpSocket, to: SocketAddr, bytes: &[u8]) {
    s.send_to(bytes, to).unwrap();
}

#[test]
fn a_netcraq_write_sent_to_the_tail_or_a_middle_node_is_rejected() {
    let p = Protocol::NetCraq;
    let chain = start(p);
    let addrs = chain.addrs();
    let first = Value::from_counter(1);
    assert_eq!(put(&chain, p, first), first);
    nodes_agree(&chain, 3, first);

    // Before: the tail committed the write, the nodes before it never saw
    // it, and clean reads at the head and the tail disagreed.
    let forged = Value::from_counter(666);
    let s = outside();
    send(&s, addrs[2], &CraqMsg::write(KEY, forged).encode());
    send(&s, addrs[1], &CraqMsg::write(KEY, forged).encode());
    // An ACK not from the tail (for a value nobody wrote, and for the last
    // one, replayed).
    send(&s, addrs[0], &CraqMsg { op: KvOp::Ack, key: KEY, value: forged }.encode());
    send(&s, addrs[1], &CraqMsg { op: KvOp::Ack, key: KEY, value: first }.encode());
    for node in [1, 2] {
        eventually(&format!("node {node} counts the forged write"), || {
            counter(&chain, node, "dropped_write_not_from_prev") == 1
        });
    }
    for node in [0, 1] {
        eventually(&format!("node {node} counts the forged ACK"), || {
            counter(&chain, node, "dropped_ack_not_from_tail") == 1
        });
    }
    assert_eq!(counter(&chain, 2, "writes_committed_at_tail"), 1, "only the real put reached the tail's registers");

    for i in 0..3 {
        assert_eq!(get(&chain, p, i), first, "node {i} answers the acknowledged value");
    }
    let second = Value::from_counter(2);
    assert_eq!(put(&chain, p, second), second);
    nodes_agree(&chain, 3, second);
    for i in 0..3 {
        assert_eq!(get(&chain, p, i), second, "node {i} after the next put");
        assert_eq!(chain.with_node(i, |n| n.as_craq().unwrap().dirty(KEY as usize)), Some(0), "node {i} clean");
    }
    chain.shutdown().unwrap();
}

#[test]
fn a_netchain_write_with_sequence_30000_sent_to_the_tail_is_rejected() {
    let p = Protocol::NetChain;
    let chain = start(p);
    let addrs = chain.addrs();
    let first = Value::from_counter(1);
    assert_eq!(put(&chain, p, first), first);

    // Before: the tail applied sequence 30000, every later write (sequence
    // 2, 3, ...) looked older there and was skipped, yet acknowledged.
    let forged = |stack: &[u32]| {
        let chain = stack.iter().map(|&i| node_addr(i)).collect();
        NcMsg {
            chain,
            op: NcOp::WriteReq,
            seq: 30_000,
            key: key_from_u32(KEY),
            value: Value::from_counter(666),
            vgroup: 0,
        }
        .encode()
    };
    let s = outside();
    send(&s, addrs[2], &forged(&[2]));
    send(&s, addrs[1], &forged(&[1, 2]));
    for node in [1, 2] {
        eventually(&format!("node {node} counts the forged write"), || {
            counter(&chain, node, "dropped_write_not_from_prev") == 1
        });
    }
    for i in 1..=3u64 {
        let v = Value::from_counter(100 + i);
        assert_eq!(put(&chain, p, v), v, "put {i} acknowledged");
        assert_eq!(get(&chain, p, 2), v, "put {i} read back at the tail");
        assert_eq!(get(&chain, p, 0), v, "put {i} read back through the chain");
    }
    let last = Value::from_counter(103);
    nodes_agree(&chain, 3, last);
    for i in 0..3 {
        let slot = chain.with_node(i, |n| n.as_netchain().unwrap().get(&key_from_u32(KEY)).unwrap()).unwrap();
        assert_eq!((slot.value, slot.seq), (last, 4), "node {i}: the head's sequence, not the forged one");
    }
    chain.shutdown().unwrap();
}

#[test]
fn netchain_writes_that_end_at_the_head_do_not_make_later_puts_vanish() {
    // Hostile round 2 (issue 21): writes whose address stack ends at the
    // head advanced the head's 16-bit sequence number without reaching the
    // other nodes. After 32,768 of them the replicas judged the next
    // legitimate put stale and skipped it, while the tail acknowledged it.
    let p = Protocol::NetChain;
    let chain = start(p);
    let addrs = chain.addrs();
    let first = Value::from_counter(1);
    assert_eq!(put(&chain, p, first), first);
    let short = NcMsg::write(vec![node_addr(0)], key_from_u32(KEY), Value::from_counter(666)).encode();
    let s = outside();
    // Sent in bursts the head's socket keeps up with, until 40,000 arrived.
    const SHORT_WRITES: u64 = 40_000;
    let mut sent = 0u64;
    while counter(&chain, 0, "dropped_not_tail") < SHORT_WRITES {
        for _ in 0..250 {
            send(&s, addrs[0], &short);
        }
        sent += 250;
        assert!(sent < 10 * SHORT_WRITES, "the head took too few of {sent} short writes");
        std::thread::sleep(Duration::from_millis(2));
    }
    let next = Value::from_counter(2);
    assert_eq!(put(&chain, p, next), next, "the put is acknowledged");
    assert_eq!(get(&chain, p, 2), next, "the acknowledged put is read back at the tail");
    nodes_agree(&chain, 3, next);
    for i in 0..3 {
        let slot = chain.with_node(i, |n| n.as_netchain().unwrap().get(&key_from_u32(KEY)).unwrap()).unwrap();
        assert_eq!(slot.seq, 2, "node {i}: only the two puts that traversed the chain were sequenced");
    }
    chain.shutdown().unwrap();
}
