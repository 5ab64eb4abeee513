//! Topology `chain`: a chain of N XDP nodes and a client namespace on one
//! Ethernet segment (a bridge in its own namespace), like the NetCRAQ
//! paper's Mininet testbed where every switch and host hangs off one L2
//! fabric.
//!
//! ```text
//!  netns innet-client   innet-c0 10.78.0.100 --+
//!  netns innet-n0       innet-e0 10.78.0.1   --+-- innet-br (netns innet-fabric)
//!  ...                                          |
//!  netns innet-n{N-1}   innet-e{N-1} 10.78.0.N --+
//! ```
//!
//! Node i runs `xdp_netcraq` or `xdp_netchain` (generic mode) on its only
//! interface, role `Role::at(i, N)`. Every port of a node is that interface:
//! a Port / Origin verdict rewrites the MACs and addresses to the neighbour
//! and sends the frame back out (`XDP_TX`); the bridge delivers it. Ports:
//! 0 = the next node, 1 = the tail, 2 = the clients, 3 + j = node j (members
//! of the tail's ACK group). NetCRAQ nodes also get `tc_chain_multicast` on
//! clsact ingress: at the tail it clones each ACK to the writer and to every
//! other node (`bpf_clone_redirect`). NetChain chain addresses are the
//! nodes' IPv4 addresses; keys 0..[`NETCHAIN_KEYS_INSTALLED`] (as
//! `key_from_u32`) are installed.
//!
//! Everything is named `innet-*` and recorded in the state file first, so
//! `testbed::down` removes it like the `txn` topology's.

use std::net::Ipv4Addr;
use std::path::Path;

use anyhow::{bail, Context, Result};

use innet_chain::netchain::{Hop, KEYS_DEFAULT};
use innet_chain::netcraq::{OBJECTS_DEFAULT, VERSIONS_DEFAULT};
use innet_chain::ports::{PORT_NEXT, PORT_TAIL};
use innet_chain::{Protocol, Role};
use innet_wire::netchain::key_from_u32;

use crate::chain::{ChainPort, CraqXdp, Member, NcXdp, NodeAddr, CRAQ_MULTICAST_PROGRAM, CRAQ_PROGRAM, PORTS_MAX};
use crate::object;
use crate::testbed::{self, ifindex, in_netns, ip, mac_str, DataPlane, State, NS_CLIENT, PIN_DIR};

pub const NS_FABRIC: &str = "innet-fabric";
pub const BRIDGE: &str = "innet-br";
pub const CLIENT_DEV: &str = "innet-c0";
pub const CLIENT_IP: Ipv4Addr = Ipv4Addr::new(10, 78, 0, 100);
const CLIENT_MAC: [u8; 6] = [0x02, 0x78, 0, 0, 0, 100];
/// The port towards the clients on every node.
pub const PORT_CLIENTS: u16 = 2;
/// Ports 3.. are the other nodes, for the ACK group.
const PORT_FIRST_NODE: u16 = 3;
/// Nodes a chain can have (one port per other node at the tail).
pub const NODES_MAX: usize = PORTS_MAX - PORT_FIRST_NODE as usize + 1;
/// NetChain keys installed on every node.
pub const NETCHAIN_KEYS_INSTALLED: u32 = 256;

pub fn node_ns(i: usize) -> String {
    format!("innet-n{i}")
}
pub fn node_dev(i: usize) -> String {
    format!("innet-e{i}")
}
pub fn node_ip(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 78, 0, 1 + i as u8)
}
fn node_mac(i: usize) -> [u8; 6] {
    [0x02, 0x78, 0, 0, 0, 1 + i as u8]
}
/// Where node i's maps are pinned.
pub fn node_pin_dir(i: usize) -> std::path::PathBuf {
    Path::new(PIN_DIR).join(format!("chain-n{i}"))
}

/// The UDP port of a protocol's packets.
pub fn udp_port(protocol: Protocol) -> u16 {
    match protocol {
        Protocol::NetCraq => innet_wire::netcraq::DEFAULT_PORT,
        Protocol::NetChain => innet_wire::netchain::DEFAULT_PORT,
    }
}

/// Builds the chain topology with `nodes` nodes; with `DataPlane::Xdp` the
/// node programs are attached, with `DataPlane::None` nothing is.
pub fn up(protocol: Protocol, nodes: usize, data_plane: DataPlane) -> Result<State> {
    if !(1..=NODES_MAX).contains(&nodes) {
        bail!("a chain of 1..={NODES_MAX} nodes (got {nodes})");
    }
    if data_plane == DataPlane::Software {
        bail!("the software chain runs on loopback: `innet up chain --protocol {protocol} --nodes {nodes}`");
    }
    if !testbed::namespaces()?.is_empty() || testbed::load_state().is_some() {
        let removed = testbed::down()?;
        eprintln!("testbed: removed leftovers of an earlier testbed: {}", removed.join(", "));
    }
    let mut namespaces = vec![NS_CLIENT.to_string(), NS_FABRIC.to_string()];
    namespaces.extend((0..nodes).map(node_ns));
    let state = State {
        topology: format!("chain-{protocol}-{nodes}"),
        namespaces,
        pin_dir: (data_plane == DataPlane::Xdp).then(|| PIN_DIR.to_string()),
        processes: vec![],
    };
    testbed::save(&state)?;
    build_links(nodes).context("build namespaces, links and the bridge")?;
    if data_plane == DataPlane::Xdp {
        attach_nodes(protocol, nodes)?;
    }
    Ok(state)
}

/// A chain node's loaded object (the attachment outlives it; benchmarks
/// keep it to re-attach the node after measuring something else).
pub enum NodeXdp {
    Craq(CraqXdp),
    Nc(NcXdp),
}

impl NodeXdp {
    /// The node's XDP program.
    pub fn xdp_fd(&self) -> Result<std::os::fd::RawFd> {
        match self {
            NodeXdp::Craq(x) => x.program_fd(CRAQ_PROGRAM),
            NodeXdp::Nc(x) => x.program_fd(),
        }
    }
}

/// Loads, configures, pins and attaches every node's programs on a built
/// chain topology.
pub fn attach_nodes(protocol: Protocol, nodes: usize) -> Result<Vec<NodeXdp>> {
    (0..nodes).map(|i| attach_node(protocol, i, nodes).with_context(|| format!("node {i}"))).collect()
}

/// Attaches XDP program `fd` to node `i`'s interface, replacing what is there.
pub fn attach_to_node(i: usize, fd: std::os::fd::RawFd) -> Result<()> {
    let index = ifindex(&node_ns(i), &node_dev(i))?;
    in_netns(&node_ns(i), || object::attach_fd(fd, index))
}

fn build_links(nodes: usize) -> Result<()> {
    ip(&["netns", "add", NS_FABRIC])?;
    ip(&["-n", NS_FABRIC, "link", "add", BRIDGE, "type", "bridge"])?;
    ip(&["-n", NS_FABRIC, "link", "set", BRIDGE, "up"])?;
    let mut hosts =
        vec![(NS_CLIENT.to_string(), CLIENT_DEV.to_string(), CLIENT_MAC, CLIENT_IP, "innet-fc".to_string())];
    hosts.extend((0..nodes).map(|i| (node_ns(i), node_dev(i), node_mac(i), node_ip(i), format!("innet-f{i}"))));
    for (ns, dev, mac, addr, fabric_dev) in hosts {
        ip(&["netns", "add", &ns])?;
        ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        ip(&[
            "link",
            "add",
            &dev,
            "address",
            &mac_str(mac),
            "netns",
            &ns,
            "type",
            "veth",
            "peer",
            "name",
            &fabric_dev,
            "netns",
            NS_FABRIC,
        ])?;
        ip(&["-n", &ns, "addr", "add", &format!("{addr}/24"), "dev", &dev])?;
        ip(&["-n", &ns, "link", "set", &dev, "up"])?;
        ip(&["-n", NS_FABRIC, "link", "set", &fabric_dev, "master", BRIDGE])?;
        ip(&["-n", NS_FABRIC, "link", "set", &fabric_dev, "up"])?;
    }
    Ok(())
}

/// Loads node `i`'s program configured for its place, pins its maps and
/// attaches it (and, for NetCRAQ, the multicast tc program).
fn attach_node(protocol: Protocol, i: usize, nodes: usize) -> Result<NodeXdp> {
    let (ns, dev) = (node_ns(i), node_dev(i));
    let index = ifindex(&ns, &dev)?;
    let addr = NodeAddr { udp_port: udp_port(protocol), node_ip: node_ip(i), origin_port: PORT_CLIENTS };
    let to = |j: usize| ChainPort { ifindex: index, ip: node_ip(j), port_mac: node_mac(i), peer_mac: node_mac(j) };
    let clients = ChainPort { ifindex: index, ip: CLIENT_IP, port_mac: node_mac(i), peer_mac: CLIENT_MAC };
    let role = Some(Role::at(i, nodes));
    match protocol {
        Protocol::NetCraq => {
            let mut x = CraqXdp::load(OBJECTS_DEFAULT, VERSIONS_DEFAULT, addr)?;
            if i + 1 < nodes {
                x.set_port(PORT_NEXT, &to(i + 1))?;
            }
            x.set_port(PORT_TAIL, &to(nodes - 1))?;
            x.set_port(PORT_CLIENTS, &clients)?;
            let mut group = vec![Member::Origin];
            for j in 0..nodes - 1 {
                x.set_port(PORT_FIRST_NODE + j as u16, &to(j))?;
                group.push(Member::Port(PORT_FIRST_NODE + j as u16));
            }
            x.set_group(&group)?;
            x.set_role(role)?;
            x.pin_maps(&node_pin_dir(i))?;
            let (xdp_fd, tc_fd) = (x.program_fd(CRAQ_PROGRAM)?, x.program_fd(CRAQ_MULTICAST_PROGRAM)?);
            in_netns(&ns, || {
                object::attach_fd(xdp_fd, index)?;
                object::attach_tc_ingress(tc_fd, index)
            })?;
            Ok(NodeXdp::Craq(x))
        }
        Protocol::NetChain => {
            let mut x = NcXdp::load(u32::from(node_ip(i)), KEYS_DEFAULT, addr)?;
            if i + 1 < nodes {
                x.set_port(PORT_NEXT, &to(i + 1))?;
                x.set_neighbour(u32::from(node_ip(i + 1)), Hop::Port(PORT_NEXT))?;
            }
            x.set_port(PORT_CLIENTS, &clients)?;
            for k in 0..NETCHAIN_KEYS_INSTALLED {
                x.install_key(key_from_u32(k))?.with_context(|| format!("install key {k}"))?;
            }
            x.set_role(role)?;
            x.pin_maps(&node_pin_dir(i))?;
            let fd = x.program_fd()?;
            in_netns(&ns, || object::attach_fd(fd, index))?;
            Ok(NodeXdp::Nc(x))
        }
    }
}

/// The protocol and node count of a running chain testbed, from its topology name.
pub fn parse_topology(topology: &str) -> Option<(Protocol, usize)> {
    let mut parts = topology.strip_prefix("chain-")?.split('-');
    let protocol = parts.next()?.parse().ok()?;
    let nodes = parts.next()?.parse().ok()?;
    Some((protocol, nodes))
}
