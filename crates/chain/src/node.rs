//! One chain switch of either protocol, and what a control plane's
//! [`Layout`] means for its tables: the glue every runtime uses to apply the
//! control plane's decisions (simulator, UDP, XDP maps).

use innet_core::{Counters, DataPlane, Ingress, Verdict};
use innet_wire::netchain::ChainKey;
use innet_wire::netcraq::Value;

use crate::client::node_addr;
use crate::control::{Layout, NodeReport};
use crate::netchain::{Hop, NcNode, Slot};
use crate::netcraq::CraqNode;
use crate::{Protocol, Role};

/// The tables of node `node` under a layout. Ports and groups name nodes by
/// index; the runtime maps them to its addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeTables {
    pub role: Option<Role>,
    pub writes_paused: bool,
    /// The predecessor: the only chain node whose writes this node takes.
    pub prev: Option<usize>,
    /// NetCRAQ `PORT_NEXT`: the successor.
    pub next: Option<usize>,
    /// NetCRAQ `PORT_TAIL`.
    pub tail: Option<usize>,
    /// NetCRAQ `GROUP_ACK` at the tail: these nodes and the origin (empty
    /// elsewhere).
    pub ack_group: Vec<usize>,
    /// The chain's members (NetChain skips the others).
    pub members: Vec<usize>,
    /// The members after this node, in chain order: the stack a NetChain
    /// write must carry on from here.
    pub successors: Vec<usize>,
}

impl Layout {
    pub fn tables(&self, node: usize) -> NodeTables {
        let n = self.chain.len();
        let pos = self.chain.iter().position(|m| *m == node);
        let role = pos.map(|p| Role::at(p, n));
        let is_tail = role.is_some_and(Role::is_tail);
        NodeTables {
            role,
            writes_paused: self.writes_paused && pos == Some(0),
            prev: pos.and_then(|p| p.checked_sub(1)).map(|q| self.chain[q]),
            next: pos.and_then(|p| self.chain.get(p + 1)).copied(),
            tail: self.chain.last().copied(),
            ack_group: if is_tail { self.chain[..n - 1].to_vec() } else { vec![] },
            members: self.chain.clone(),
            successors: pos.map_or(vec![], |p| self.chain[p + 1..].to_vec()),
        }
        .checked(node)
    }
}

impl NodeTables {
    /// Node `node`'s tables agree with themselves: a member has a role and
    /// is not its own neighbour; only the tail has an ACK group; only the
    /// head may have writes paused.
    fn checked(self, node: usize) -> NodeTables {
        debug_assert_eq!(self.role.is_some(), self.members.contains(&node));
        debug_assert!(self.prev != Some(node) && self.next != Some(node) && !self.successors.contains(&node));
        debug_assert!(self.ack_group.is_empty() || self.role.is_some_and(Role::is_tail));
        debug_assert!(!self.writes_paused || self.role.is_some_and(Role::is_head));
        self
    }
}

/// A node's replicated state, as the control plane copies it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Snapshot {
    Craq(Vec<Value>),
    Chain(Vec<(ChainKey, Slot)>),
}

/// A chain switch running either protocol.
#[derive(Clone, Debug)]
pub enum ChainNode {
    Craq(CraqNode),
    Chain(NcNode),
}

impl ChainNode {
    /// A fresh, unconfigured node `index` with room for `objects` objects
    /// (NetChain: its key table is four times larger, so installs always fit
    /// their probe window) of `versions` cells (NetCRAQ).
    pub fn new(protocol: Protocol, index: usize, objects: usize, versions: usize) -> ChainNode {
        let node = match protocol {
            Protocol::NetCraq => ChainNode::Craq(CraqNode::new(objects, versions)),
            Protocol::NetChain => ChainNode::Chain(NcNode::new(node_addr(index as u32), 4 * objects)),
        };
        debug_assert!(!node.report().configured, "a fresh node has no role");
        node
    }

    /// Writes the program's own tables (role, pause, the peers it trusts,
    /// NetChain's skips); ports and groups are the runtime's.
    pub fn configure(&mut self, t: &NodeTables, nodes: usize) {
        let prev = t.prev.map(|i| i as u16);
        match self {
            ChainNode::Craq(p) => {
                p.set_role(t.role);
                p.set_peers(prev, t.tail.map(|i| i as u16));
                p.set_writes_paused(t.writes_paused);
            }
            ChainNode::Chain(p) => {
                p.set_role(t.role);
                p.set_prev(prev);
                p.set_successors(&t.successors.iter().map(|&j| node_addr(j as u32)).collect::<Vec<_>>());
                p.set_writes_paused(t.writes_paused);
                for j in 0..nodes {
                    let hop = if t.members.contains(&j) { Hop::Port(j as u16) } else { Hop::Skip };
                    p.set_neighbour(node_addr(j as u32), hop);
                }
            }
        }
        debug_assert_eq!(self.report().configured, t.role.is_some());
    }

    pub fn report(&self) -> NodeReport {
        match self {
            ChainNode::Craq(p) => NodeReport { configured: p.role().is_some(), full_objects: p.full_objects() },
            ChainNode::Chain(p) => NodeReport { configured: p.role().is_some(), full_objects: 0 },
        }
    }

    pub fn snapshot(&self) -> Snapshot {
        match self {
            ChainNode::Craq(p) => Snapshot::Craq(p.snapshot()),
            ChainNode::Chain(p) => Snapshot::Chain(p.snapshot()),
        }
    }

    /// Loads a snapshot of the same protocol (panics otherwise).
    pub fn load(&mut self, s: &Snapshot) {
        match (self, s) {
            (ChainNode::Craq(p), Snapshot::Craq(v)) => p.load(v),
            (ChainNode::Chain(p), Snapshot::Chain(v)) => p.load(v),
            _ => panic!("snapshot of the other protocol"),
        }
    }

    /// The values of keys `0..keys`, for comparing replicas.
    pub fn values(&self, keys: u32) -> Vec<Value> {
        let values: Vec<Value> = match self {
            ChainNode::Craq(p) => p.snapshot()[..keys as usize].to_vec(),
            ChainNode::Chain(p) => (0..keys)
                .map(|k| p.get(&innet_wire::netchain::key_from_u32(k)).map_or(Value::ZERO, |s| s.value))
                .collect(),
        };
        debug_assert_eq!(values.len(), keys as usize);
        values
    }

    pub fn as_craq(&self) -> Option<&CraqNode> {
        match self {
            ChainNode::Craq(p) => Some(p),
            ChainNode::Chain(_) => None,
        }
    }

    pub fn as_netchain(&self) -> Option<&NcNode> {
        match self {
            ChainNode::Chain(p) => Some(p),
            ChainNode::Craq(_) => None,
        }
    }
}

impl DataPlane for ChainNode {
    fn process(&mut self, packet: &mut [u8]) -> Verdict {
        self.process_len(packet).0
    }
    fn process_len(&mut self, packet: &mut [u8]) -> (Verdict, usize) {
        self.process_from(packet, Ingress::Downstream)
    }
    fn process_from(&mut self, packet: &mut [u8], ingress: Ingress) -> (Verdict, usize) {
        match self {
            ChainNode::Craq(p) => p.process_from(packet, ingress),
            ChainNode::Chain(p) => p.process_from(packet, ingress),
        }
    }
}

impl Counters for ChainNode {
    fn counters(&self) -> Vec<(&'static str, u64)> {
        match self {
            ChainNode::Craq(p) => p.counters.counters(),
            ChainNode::Chain(p) => p.counters.counters(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_layout_gives_each_node_its_role_ports_and_group() {
        let l = Layout { chain: vec![0, 2, 3], writes_paused: true };
        let head = l.tables(0);
        assert_eq!((head.role, head.writes_paused, head.next, head.tail), (Some(Role::Head), true, Some(2), Some(3)));
        let tail = l.tables(3);
        assert_eq!(
            (tail.role, tail.writes_paused, tail.next, tail.ack_group),
            (Some(Role::Tail), false, None, vec![0, 2])
        );
        assert_eq!(l.tables(1).role, None, "a removed node has no role");
    }

    /// The property the `chain_node` fuzz target checks, on seeded random
    /// and mutated packets: no panic, no growth, forwarded packets decode.
    #[test]
    fn random_and_mutated_packets_are_handled_safely() {
        use innet_core::rng::Rng;
        use innet_wire::netchain::{key_from_u32, NcMsg, NcOp};
        use innet_wire::netcraq::{CraqMsg, KvOp};
        let mut rng = Rng::new(11);
        let layout = Layout { chain: vec![0, 1, 2], writes_paused: false };
        for me in 0..4 {
            for p in Protocol::ALL {
                let mut node = ChainNode::new(p, me, 8, 3);
                if let ChainNode::Chain(c) = &mut node {
                    c.install_key(key_from_u32(1));
                }
                node.configure(&layout.tables(me), 4);
                for i in 0..20_000u32 {
                    let mut b = match p {
                        Protocol::NetCraq => {
                            let op = KvOp::ALL[rng.below(6) as usize];
                            CraqMsg { op, key: rng.below(10) as u32, value: Value::from_counter(i as u64) }.encode()
                        }
                        Protocol::NetChain => {
                            let mut chain: Vec<_> = (0..rng.below(5)).map(|_| node_addr(rng.below(4) as u32)).collect();
                            let op = NcOp::ALL[rng.below(4) as usize];
                            if op == NcOp::WriteReply {
                                chain.clear(); // a write reply carries no stack
                            }
                            let key = key_from_u32(rng.below(3) as u32);
                            NcMsg { chain, op, seq: rng.below(65_536) as u16, key, value: Value::ZERO, vgroup: 0 }
                                .encode()
                        }
                    };
                    for _ in 0..rng.below(3) {
                        let at = rng.below(b.len() as u64) as usize;
                        b[at] = rng.below(256) as u8;
                    }
                    if rng.chance(0.1) {
                        b.truncate(rng.below(b.len() as u64 + 1) as usize);
                    }
                    let n = b.len();
                    let (v, len) = node.process_len(&mut b);
                    assert!(len <= n);
                    if v != Verdict::Drop {
                        let ok = match p {
                            Protocol::NetCraq => CraqMsg::decode(&b[..len]).is_ok(),
                            Protocol::NetChain => NcMsg::decode(&b[..len]).is_ok(),
                        };
                        assert!(ok, "{p} node {me}: forwarded packet does not decode");
                    }
                }
            }
        }
    }
}
