//! Arbitrary bytes, split into packets, through NetCRAQ and NetChain chain
//! nodes in every role, with tiny tables. Must never panic; a packet a node
//! does not drop must still decode and may only shrink.
//!
//! Framing: one sender byte `s`, one length byte `n`, then `n % (MAX_LEN + 1)`
//! bytes; the first byte of the input picks the node's place (head,
//! replica, tail, removed) and whether writes are paused. The sender byte
//! says who sent the packet: `s % 8` below 5 is chain node `s % 8` (nodes
//! 0..4 exist; 4 is not in the layout), 5 a client, 6 the upstream side,
//! 7 a peer index no deployment has (`s` itself). A write from anyone but
//! the node's predecessor (or a client at the head), an ACK from anyone but
//! the tail, must leave the node's registers as they were.
#![no_main]

use innet_chain::control::Layout;
use innet_chain::node::ChainNode;
use innet_chain::Protocol;
use innet_core::{DataPlane, Ingress, Verdict};
use innet_wire::netchain::{key_from_u32, NcMsg, NcOp, MAX_LEN};
use innet_wire::netcraq::{CraqMsg, KvOp};
use libfuzzer_sys::fuzz_target;

/// Everything a write or an ACK can change: the registers (NetCRAQ: every
/// cell and index, dirty versions included).
fn state(node: &ChainNode) -> (innet_chain::node::Snapshot, Vec<(usize, Vec<innet_wire::netcraq::Value>)>) {
    let cells = match node.as_craq() {
        Some(p) => (0..p.objects()).map(|k| (p.dirty(k), p.cells(k).to_vec())).collect(),
        None => vec![],
    };
    (node.snapshot(), cells)
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, mut rest)) = data.split_first() else { return };
    let layout = Layout { chain: vec![0, 1, 2], writes_paused: pick & 4 != 0 };
    let me = (pick % 4) as usize; // 3: not a member
    let mut nodes: Vec<ChainNode> = Protocol::ALL
        .into_iter()
        .map(|p| {
            let mut n = ChainNode::new(p, me, 8, 3);
            if let ChainNode::Chain(c) = &mut n {
                for k in 0..4 {
                    c.install_key(key_from_u32(k));
                }
            }
            n.configure(&layout.tables(me), 4);
            n
        })
        .collect();
    let tables = layout.tables(me);
    while let [s, len, r @ ..] = rest {
        let ingress = match s % 8 {
            p @ 0..=4 => Ingress::Peer(p as u16),
            5 => Ingress::Downstream,
            6 => Ingress::Upstream,
            _ => Ingress::Peer(100 + *s as u16),
        };
        let n = (*len as usize % (MAX_LEN + 1)).min(r.len());
        for node in nodes.iter_mut() {
            let mut b = r[..n].to_vec();
            let before = state(node);
            let (v, out_len) = node.process_from(&mut b, ingress);
            let from_prev = match ingress {
                Ingress::Peer(p) => tables.prev == Some(p as usize),
                _ => tables.role.is_some_and(|r| r.is_head()),
            };
            let from_tail = matches!(ingress, Ingress::Peer(p) if tables.tail == Some(p as usize));
            let op = match node {
                ChainNode::Craq(_) => CraqMsg::decode(&r[..n]).ok().map(|m| (m.op == KvOp::Write, m.op == KvOp::Ack)),
                ChainNode::Chain(_) => NcMsg::decode(&r[..n]).ok().map(|m| (m.op == NcOp::WriteReq, false)),
            };
            if let Some((write, ack)) = op {
                if (write && !from_prev) || (ack && !from_tail) {
                    assert_eq!(v, Verdict::Drop, "an untrusted write or ACK is dropped");
                    assert!(state(node) == before, "an untrusted write or ACK changes nothing");
                }
            }
            assert!(out_len <= n, "a program never grows a packet");
            if v != Verdict::Drop {
                let ok = match node {
                    ChainNode::Craq(_) => CraqMsg::decode(&b[..out_len]).is_ok(),
                    ChainNode::Chain(_) => NcMsg::decode(&b[..out_len]).is_ok(),
                };
                assert!(ok, "a forwarded packet decodes");
            }
        }
        rest = &r[n..];
    }
});
