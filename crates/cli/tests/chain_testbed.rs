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
//!   sent to the tail returns the value and its sequence. Requests go to
//!   port 8888 and replies to the client's port 8889, as in NetChain's P4
//!   reference (netx-repo/netchain-p4); packets built exactly as its
//!   client builds them (`client/nc_socket.py`: op 12 / 10, sc 4, keys
//!   2018.. as 128-bit integers, reads sent to the tail with the chain
//!   reversed) are served, and the replies reach a socket bound to 8889,
//!   as its `client/receiver.py` binds one.
//!
//! Needs root: without it the test says why on stderr (`SKIPPED: ...`) and
//! fails under `CI=true`.

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::time::{Duration, Instant};

use innet_wire::netchain::{key_from_u32, NcMsg, NcOp, REPLY_PORT};
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

/// Sends `request` to `to`:8888 from one socket and takes the reply on
/// another, bound to the client's port 8889: NetChain's P4 reference's
/// client sends from `client/nc_socket.py` and receives in
/// `client/receiver.py` (`rs.bind((ip, REPLY_PORT))`).
fn ask_reference(to: Ipv4Addr, request: Vec<u8>) -> (Vec<u8>, SocketAddrV4) {
    in_netns(NS_CLIENT, move || {
        let receiver = UdpSocket::bind(SocketAddrV4::new(CLIENT_IP, REPLY_PORT))?;
        receiver.set_read_timeout(Some(Duration::from_secs(2)))?;
        let sender = UdpSocket::bind(SocketAddrV4::new(CLIENT_IP, 0))?;
        sender.send_to(&request, SocketAddrV4::new(to, innet_wire::netchain::DEFAULT_PORT))?;
        let mut buf = [0u8; 256];
        let (n, from) = receiver.recv_from(&mut buf)?;
        let std::net::SocketAddr::V4(from) = from else { anyhow::bail!("IPv6 reply") };
        Ok((buf[..n].to_vec(), from))
    })
    .unwrap_or_else(|e| panic!("no reply on port {REPLY_PORT} from {to}: {e:#}"))
}

/// A request as netchain-p4's `client/nc_socket.py` builds it, field by
/// field in its `struct.pack` calls: the chain's addresses
/// (`"BBBB"` each) and the end field, op (`"B"`), sc = 4 (`"B"`), seq 0
/// (`"H"`, native order), the key and the value as two `">Q"` halves of a
/// 128-bit integer, vgroup (`">H"`).
fn reference_request(op: u8, chain: &[Ipv4Addr], key: u128, value: u128, vgroup: u16) -> Vec<u8> {
    let mut p: Vec<u8> = chain.iter().flat_map(|ip| ip.octets()).collect();
    p.extend([0, 0, 0, 0]);
    p.push(op);
    p.push(4);
    p.extend(0u16.to_ne_bytes());
    for x in [key, value] {
        p.extend(((x >> 64) as u64).to_be_bytes());
        p.extend((x as u64).to_be_bytes());
    }
    p.extend(vgroup.to_be_bytes());
    p
}

/// The reference client's writes (op 12 to the head, value 222 as in its
/// `write_req`) and reads (op 10 to the tail, the chain reversed, as in
/// its `read_req`) of keys 2018.., through the XDP chain; the replies reach
/// port 8889 with op 13 at byte 0 (what `receiver.py` unpacks) and op 11.
fn netchain_reference_client() {
    let chain: Vec<Ipv4Addr> = (0..NODES).map(node_ip).collect();
    let reversed: Vec<Ipv4Addr> = chain.iter().rev().copied().collect();
    for (i, key) in (2018u128..2021).enumerate() {
        // vgroup = (key - 2018) / (num_kv / size_vgroup), e.g. 200 keys in 100 groups.
        let vgroup = ((key - 2018) / 2) as u16;
        let (reply, from) = ask_reference(chain[0], reference_request(12, &chain, key, 222, vgroup));
        assert_eq!(*from.ip(), node_ip(NODES - 1), "the tail replies");
        assert_eq!(reply.len(), 38, "a write reply is the fixed part alone: {reply:02x?}");
        assert_eq!((reply[0], reply[1], u16::from_be_bytes([reply[2], reply[3]])), (13, 0, 1), "op 13, sc 0, seq 1");
        assert_eq!(reply[4..20], key.to_be_bytes(), "key {key}");
        assert_eq!(reply[20..36], 222u128.to_be_bytes());
        assert_eq!(reply[36..38], vgroup.to_be_bytes());
        let (reply, from) = ask_reference(chain[NODES - 1], reference_request(10, &reversed, key, 0, vgroup));
        assert_eq!(*from.ip(), node_ip(NODES - 1), "the tail answers reads");
        let m = NcMsg::decode(&reply).unwrap_or_else(|e| panic!("read reply {i}: {e}: {reply:02x?}"));
        assert_eq!((m.op, m.seq, m.key, m.value.0), (NcOp::ReadReply, 1, key.to_be_bytes(), 222u128.to_be_bytes()));
        let rest: Vec<u32> = reversed[1..].iter().map(|ip| u32::from(*ip)).collect();
        assert_eq!(m.chain, rest, "the tail popped itself only, as the reference's");
    }
}

fn counter(status: &str, node: usize, name: &str) -> u64 {
    let prefix = format!("node {node} ");
    status
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .find_map(|l| l.trim().strip_prefix(name).map(|v| v.trim().parse().expect("counter")))
        .unwrap_or_else(|| panic!("no counter {name} of node {node} in {status}"))
}

/// Every device of every node runs its program in driver mode (the
/// default fabric), so the NetCRAQ tail's ACK copies are devmap broadcast
/// copies: XDP frames from end to end.
fn nodes_in_driver_mode() {
    use innet_xdp::chain_testbed::{node_devs, node_ns};
    use innet_xdp::fabric::{attached_mode, XdpMode};
    for i in 0..NODES {
        for dev in node_devs(i, NODES) {
            let mode = attached_mode(&node_ns(i), &dev).expect("ip link show");
            assert_eq!(mode, Some(XdpMode::Native), "node {i} {dev}");
        }
    }
}

fn netcraq_reads_and_writes() {
    nodes_in_driver_mode();
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
    let chain: Vec<u32> = (0..NODES).map(|i| u32::from(node_ip(i))).collect();
    for (i, text) in ["a", "bb"].into_iter().enumerate() {
        let value = Value::from_str_padded(text).unwrap();
        let write = NcMsg { chain: chain.clone(), op: NcOp::WriteReq, seq: 0, key: key_from_u32(7), value, vgroup: 0 };
        let (reply, from) = ask_reference(node_ip(0), write.encode());
        let m = NcMsg::decode(&reply).expect("a NetChain reply");
        assert_eq!((m.op, m.seq, m.value, m.chain.len()), (NcOp::WriteReply, i as u16 + 1, value, 0), "write reply");
        assert_eq!(*from.ip(), node_ip(NODES - 1), "sent by the tail");
        let read = NcMsg { chain: vec![chain[NODES - 1]], op: NcOp::ReadReq, value: Value::ZERO, ..write };
        let (reply, _) = ask_reference(node_ip(NODES - 1), read.encode());
        let m = NcMsg::decode(&reply).expect("a NetChain reply");
        assert_eq!((m.op, m.seq, m.value), (NcOp::ReadReply, i as u16 + 1, value), "read at the tail");
    }
    netchain_reference_client();
}

#[test]
fn reads_and_writes_go_through_an_xdp_chain_and_down_leaves_nothing() {
    if !privileged::proceed("reads_and_writes_go_through_an_xdp_chain_and_down_leaves_nothing", skip_reason()) {
        return;
    }
    run(INNET, &["testbed", "down"]);
    assert_eq!(wait_clean(), Vec::<String>::new(), "leftovers before the test");
    // With --auth-key the nodes seal what they send each other; the client
    // (unkeyed) sees the same chain (docs/security.md).
    let key = std::env::temp_dir().join(format!("innet-chain-testbed-{}.key", std::process::id()));
    std::fs::write(&key, format!("1 {}\n", "c3".repeat(16))).unwrap();
    let keyed = ["--auth-key", key.to_str().unwrap()];
    for (protocol, check, auth) in [
        ("netcraq", netcraq_reads_and_writes as fn(), &[][..]),
        ("netchain", netchain_reads_and_writes, &[]),
        ("netcraq", netcraq_reads_and_writes, &keyed[..]),
        ("netchain", netchain_reads_and_writes, &keyed[..]),
    ] {
        let nodes = NODES.to_string();
        let args = [&["testbed", "up", "chain", "--protocol", protocol, "--nodes", &nodes][..], auth].concat();
        run(INNET, &args);
        check();
        if !auth.is_empty() {
            let status = run(INNET, &["testbed", "status"]);
            assert!((0..NODES).all(|n| counter(&status, n, "auth_refused") == 0), "every sealed frame checked");
        }
        run(INNET, &["testbed", "down"]);
        assert_eq!(wait_clean(), Vec::<String>::new(), "testbed down left things behind ({protocol})");
        let how = if protocol == "netcraq" {
            "driver mode, the tail's ACKs by devmap broadcast to the writer and every other node"
        } else {
            "stack popped per node; the reference client's requests to 8888 answered on 8889"
        };
        let keys = if auth.is_empty() { "" } else { ", with --auth-key" };
        say(&format!(
            "TESTBED chain {protocol} {NODES} nodes{keys}: writes and reads through XDP ({how}); down left no \
             namespace, link, pin or program"
        ));
    }
    let _ = std::fs::remove_file(&key);
}
