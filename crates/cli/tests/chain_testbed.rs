//! `innet testbed up chain` on real network namespaces: writes and reads
//! through a chain of XDP nodes, for both protocols, then `down` leaves
//! nothing behind (no namespace, link, pin, XDP or tc program).
//!
//! * NetCRAQ (Algorithm 1): a write to the head is ACKed by the tail; the
//!   ACK reaches the writer and, multicast by tc (`bpf_clone_redirect`),
//!   every other node, whose objects become clean: afterwards a read at any
//!   node is answered by that node with the written value (lines 7-9).
//! * NetChain (section 4): a write carries the chain's addresses, each node
//!   pops its own, the head assigns sequence 1, the tail replies; a read
//!   sent to the tail returns the value and its sequence.
//!
//! Needs root: without it the test says why on stderr (`SKIPPED: ...`) and
//! fails under `CI=true`.

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::time::{Duration, Instant};

use innet_wire::netchain::{key_from_u32, NcMsg, NcOp};
use innet_wire::netcraq::{CraqMsg, KvOp};
use innet_wire::txn::Value;
use innet_xdp::chain_testbed::{node_ip, CLIENT_IP};
use innet_xdp::privileged::{self, say};
use innet_xdp::testbed::{in_netns, NS_CLIENT};

mod common;
use common::{run, skip_reason, wait_clean, INNET};

const NODES: usize = 3;

/// Sends `request` to `to` from the client namespace; the first reply and its source.
fn ask(to: Ipv4Addr, port: u16, request: Vec<u8>) -> (Vec<u8>, SocketAddrV4) {
    in_netns(NS_CLIENT, move || {
        let s = UdpSocket::bind(SocketAddrV4::new(CLIENT_IP, 0))?;
        s.set_read_timeout(Some(Duration::from_secs(2)))?;
        s.send_to(&request, SocketAddrV4::new(to, port))?;
        let mut buf = [0u8; 256];
        let (n, from) = s.recv_from(&mut buf)?;
        let std::net::SocketAddr::V4(from) = from else { anyhow::bail!("IPv6 reply") };
        Ok((buf[..n].to_vec(), from))
    })
    .unwrap_or_else(|e| panic!("no reply from {to}:{port}: {e:#}"))
}

fn counter(status: &str, node: usize, name: &str) -> u64 {
    let prefix = format!("node {node} ");
    status
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .find_map(|l| l.trim().strip_prefix(name).map(|v| v.trim().parse().expect("counter")))
        .unwrap_or_else(|| panic!("no counter {name} of node {node} in {status}"))
}

fn netcraq_reads_and_writes() {
    let port = innet_wire::netcraq::DEFAULT_PORT;
    for (i, text) in ["a", "bb"].into_iter().enumerate() {
        let value = Value::from_str_padded(text).unwrap();
        let (reply, from) = ask(node_ip(0), port, CraqMsg::write(7, value).encode());
        let m = CraqMsg::decode(&reply).expect("a NetCRAQ reply");
        assert_eq!((m.op, m.key, m.value), (KvOp::Ack, 7, value), "the tail's ACK is the write reply");
        assert_eq!(*from.ip(), node_ip(NODES - 1), "sent by the tail");
        // The multicast copies reach the other nodes about when ours reached us.
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            let status = run(INNET, &["testbed", "status"]);
            if (0..NODES - 1).all(|n| counter(&status, n, "acks_applied") == i as u64 + 1) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        for n in 0..NODES {
            let (reply, from) = ask(node_ip(n), port, CraqMsg::read(7).encode());
            let m = CraqMsg::decode(&reply).expect("a NetCRAQ reply");
            assert_eq!((m.op, m.value), (KvOp::ReadReply, value), "read at node {n}");
            assert_eq!(*from.ip(), node_ip(n), "clean after the ACK: node {n} answers itself");
        }
    }
    let status = run(INNET, &["testbed", "status"]);
    assert_eq!(counter(&status, NODES - 1, "multicast_copies"), 2 * NODES as u64, "writer + other nodes, twice");
    assert_eq!(counter(&status, 0, "reads_clean"), 2);
}

fn netchain_reads_and_writes() {
    let port = innet_wire::netchain::DEFAULT_PORT;
    let chain: Vec<u32> = (0..NODES).map(|i| u32::from(node_ip(i))).collect();
    for (i, text) in ["a", "bb"].into_iter().enumerate() {
        let value = Value::from_str_padded(text).unwrap();
        let write = NcMsg { chain: chain.clone(), op: NcOp::WriteReq, seq: 0, key: key_from_u32(7), value, vgroup: 0 };
        let (reply, from) = ask(node_ip(0), port, write.encode());
        let m = NcMsg::decode(&reply).expect("a NetChain reply");
        assert_eq!((m.op, m.seq, m.value, m.chain.len()), (NcOp::WriteReply, i as u16 + 1, value, 0), "write reply");
        assert_eq!(*from.ip(), node_ip(NODES - 1), "sent by the tail");
        let read = NcMsg { chain: vec![chain[NODES - 1]], op: NcOp::ReadReq, value: Value::ZERO, ..write };
        let (reply, _) = ask(node_ip(NODES - 1), port, read.encode());
        let m = NcMsg::decode(&reply).expect("a NetChain reply");
        assert_eq!((m.op, m.seq, m.value), (NcOp::ReadReply, i as u16 + 1, value), "read at the tail");
    }
}

#[test]
fn reads_and_writes_go_through_an_xdp_chain_and_down_leaves_nothing() {
    if !privileged::proceed("reads_and_writes_go_through_an_xdp_chain_and_down_leaves_nothing", skip_reason()) {
        return;
    }
    run(INNET, &["testbed", "down"]);
    assert_eq!(wait_clean(), Vec::<String>::new(), "leftovers before the test");
    for (protocol, check) in [("netcraq", netcraq_reads_and_writes as fn()), ("netchain", netchain_reads_and_writes)] {
        run(INNET, &["testbed", "up", "chain", "--protocol", protocol, "--nodes", &NODES.to_string()]);
        check();
        run(INNET, &["testbed", "down"]);
        assert_eq!(wait_clean(), Vec::<String>::new(), "testbed down left things behind ({protocol})");
        let how = if protocol == "netcraq" { "the tail's ACKs multicast by tc" } else { "stack popped per node" };
        say(&format!(
            "TESTBED chain {protocol} {NODES} nodes: writes and reads through XDP ({how}); down left no namespace, \
             link, pin or program"
        ));
    }
}
