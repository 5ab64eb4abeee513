//! Arbitrary bytes, split into packets, through NetCRAQ and NetChain chain
//! nodes in every role, with tiny tables. Must never panic; a packet a node
//! does not drop must still decode and may only shrink.
//!
//! Framing: one length byte `n`, then `n % (MAX_LEN + 1)` bytes; the first
//! byte of the input picks the node's place (head, replica, tail, removed)
//! and whether writes are paused.
#![no_main]

use innet_chain::node::ChainNode;
use innet_chain::control::Layout;
use innet_chain::Protocol;
use innet_core::{DataPlane, Verdict};
use innet_wire::netchain::{key_from_u32, NcMsg, MAX_LEN};
use innet_wire::netcraq::CraqMsg;
use libfuzzer_sys::fuzz_target;

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
    while let Some((&len, r)) = rest.split_first() {
        let n = (len as usize % (MAX_LEN + 1)).min(r.len());
        for node in nodes.iter_mut() {
            let mut b = r[..n].to_vec();
            let (v, out_len) = node.process_len(&mut b);
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
