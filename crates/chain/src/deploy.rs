//! The chain service's deployment, as data ([`innet_core::deploy`]).
//!
//! Nodes `0..n` are the chain switches (deployment index = chain index, so
//! the control plane's [`Layout`] names them directly), then the control
//! plane, then clients. Chain switches are linked pairwise (point-to-point,
//! FIFO: chain replication assumes FIFO channels between chain nodes);
//! clients and the control plane reach them through the fabric. A client's
//! port `i` leads to node `i` (it sends writes to the head and reads to the
//! node it is near).
//!
//! What a switch's tables hold depends on the control plane's current
//! layout ([`node_tables`]): NetCRAQ's `PORT_NEXT` (the successor),
//! `PORT_TAIL` and, at the tail, `GROUP_ACK` (every other member and the
//! writer, the packet's origin); NetChain's port `j` to every other node
//! `j` (it routes by the address stack the client wrote). Every runtime applies a layout
//! through this one function.

use std::collections::BTreeMap;
use std::time::Duration;

use innet_core::deploy::{DeployError, Deployment, NodeIx, Shape};
use innet_core::Member;

use crate::control::Layout;
use crate::ports::{GROUP_ACK, PORT_NEXT, PORT_TAIL};
use crate::{Protocol, Role};

pub const SERVICE: &str = "chain";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChainRole {
    /// Chain switch `index`.
    Node {
        index: usize,
    },
    /// The control plane: failure detection, removal, resync, re-add.
    Control,
    Client,
}

impl ChainRole {
    pub fn shape(self) -> Shape {
        match self {
            ChainRole::Node { .. } => Shape::Program,
            ChainRole::Control | ChainRole::Client => Shape::Host,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            ChainRole::Node { .. } => "node",
            ChainRole::Control => "control",
            ChainRole::Client => "client",
        }
    }
}

pub type ChainDeployment = Deployment<ChainRole>;
/// A node's ports: port number -> node.
pub type Ports = BTreeMap<u16, NodeIx>;
/// A node's multicast groups: group number -> members.
pub type Groups = BTreeMap<u16, Vec<Member<NodeIx>>>;

/// `nodes` chain switches linked pairwise with one-way `node_link`, a
/// control plane and `clients` clients on a fabric with one-way `fabric`,
/// the switches' tables written for the initial layout (every node in
/// index order).
pub fn deployment(
    protocol: Protocol,
    nodes: usize,
    clients: usize,
    node_link: Duration,
    fabric: Duration,
) -> ChainDeployment {
    let mut d = Deployment::new(SERVICE);
    d.fabric = Some(fabric);
    for i in 0..nodes {
        d.add(format!("node{i}"), ChainRole::Node { index: i }, Shape::Program);
    }
    for a in 0..nodes {
        for b in a + 1..nodes {
            d.link(a, b, node_link);
        }
    }
    d.add("control", ChainRole::Control, Shape::Host);
    for c in 0..clients {
        add_client(&mut d, format!("client{c}"));
    }
    apply(&mut d, protocol, &initial_layout(nodes));
    debug_assert!(validate(&d).is_ok(), "the built chain deployment is valid");
    d
}

/// Adds a client whose port `i` leads to chain node `i`.
pub fn add_client(d: &mut ChainDeployment, name: String) -> NodeIx {
    let c = d.add(name, ChainRole::Client, Shape::Host);
    for i in chain_nodes(d) {
        d.set_port(c, i as u16, i);
    }
    debug_assert_eq!(d.nodes[c].ports.len(), chain_nodes(d).len(), "a client reaches every chain node");
    c
}

/// The chain switches (their deployment index is their chain index).
pub fn chain_nodes(d: &ChainDeployment) -> Vec<NodeIx> {
    let nodes = d.with_role(|r| matches!(r, ChainRole::Node { .. }));
    debug_assert!(nodes.iter().all(|&i| d.nodes[i].shape == Shape::Program), "chain nodes are data-plane programs");
    nodes
}

/// Every node in index order, writes flowing.
pub fn initial_layout(nodes: usize) -> Layout {
    Layout { chain: (0..nodes).collect(), writes_paused: false }
}

/// What chain switch `i`'s forwarding tables hold under `layout` (chain
/// indexes, which are deployment indexes). The program's own registers
/// (role, pause, NetChain's skips) are written by
/// [`crate::node::ChainNode::configure`].
pub fn node_tables(protocol: Protocol, layout: &Layout, nodes: usize, i: usize) -> (Ports, Groups) {
    let mut ports = BTreeMap::new();
    let mut groups = BTreeMap::new();
    match protocol {
        Protocol::NetCraq => {
            let t = layout.tables(i);
            ports.extend(t.next.map(|m| (PORT_NEXT, m)));
            // The tail itself never forwards to the tail.
            ports.extend(t.tail.filter(|&m| m != i).map(|m| (PORT_TAIL, m)));
            let mut ack: Vec<Member<NodeIx>> = t.ack_group.iter().map(|&m| Member::Node(m)).collect();
            if t.role.is_some_and(Role::is_tail) {
                ack.push(Member::Origin);
            }
            groups.insert(GROUP_ACK, ack);
        }
        Protocol::NetChain => ports.extend((0..nodes).filter(|&j| j != i).map(|j| (j as u16, j))),
    }
    debug_assert!(ports.values().all(|&m| m != i), "a node's port never leads to itself");
    (ports, groups)
}

/// Writes every chain switch's tables for `layout`.
pub fn apply(d: &mut ChainDeployment, protocol: Protocol, layout: &Layout) {
    let nodes = chain_nodes(d).len();
    for i in 0..nodes {
        let (ports, groups) = node_tables(protocol, layout, nodes, i);
        d.nodes[i].ports = ports;
        d.nodes[i].groups = groups;
    }
    debug_assert!(layout.chain.iter().all(|&m| m < nodes), "a layout names chain nodes only");
}

/// Checks what the chain service needs beyond [`Deployment::validate`]:
/// chain switches first, numbered `0..n` in order, at most one control
/// plane.
pub fn validate(d: &ChainDeployment) -> Result<(), DeployError> {
    d.validate()?;
    let nodes = chain_nodes(d);
    if nodes.is_empty() {
        return Err(DeployError("a chain needs at least one node".into()));
    }
    for (pos, &i) in nodes.iter().enumerate() {
        if i != pos || d.nodes[i].role != (ChainRole::Node { index: pos }) {
            return Err(DeployError(format!(
                "chain nodes come first and in chain order: '{}' is node {pos}'s place",
                d.nodes[i].name
            )));
        }
    }
    if d.with_role(|r| *r == ChainRole::Control).len() > 1 {
        return Err(DeployError("a chain has at most one control plane".into()));
    }
    debug_assert!(nodes.iter().enumerate().all(|(pos, &i)| pos == i));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn netcraq_tables_follow_the_layout() {
        let d = deployment(Protocol::NetCraq, 4, 2, Duration::ZERO, Duration::ZERO);
        validate(&d).unwrap();
        assert_eq!(d.nodes[0].ports, BTreeMap::from([(PORT_NEXT, 1), (PORT_TAIL, 3)]));
        let tail_ack = &d.nodes[3].groups[&GROUP_ACK];
        assert_eq!(tail_ack, &vec![Member::Node(0), Member::Node(1), Member::Node(2), Member::Origin]);
        assert_eq!(d.nodes[5].ports.len(), 4, "a client reaches every node");
        let (ports, _) = node_tables(Protocol::NetCraq, &Layout { chain: vec![0, 2, 3], writes_paused: false }, 4, 0);
        assert_eq!(ports, BTreeMap::from([(PORT_NEXT, 2), (PORT_TAIL, 3)]), "the removed node is skipped");
    }

    #[test]
    fn netchain_routes_to_every_node() {
        let d = deployment(Protocol::NetChain, 3, 0, Duration::ZERO, Duration::ZERO);
        assert_eq!(d.nodes[1].ports, BTreeMap::from([(0, 0), (2, 2)]));
    }
}
