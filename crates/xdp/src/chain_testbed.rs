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
//! interface. Every port of a node is that interface: a Port / Origin
//! verdict rewrites the MACs and addresses to the neighbour and sends the
//! frame back out (`XDP_TX`); the bridge delivers it. NetCRAQ nodes also get
//! `tc_chain_multicast` on clsact ingress: at the tail it clones each ACK to
//! the writer and to every other node (`bpf_clone_redirect`). NetChain chain
//! addresses are the nodes' IPv4 addresses; keys
//! 0..[`NETCHAIN_KEYS_INSTALLED`] and [`REFERENCE_KEYS`] (as
//! `key_from_u32`) are installed. NetChain requests go to UDP port 8888,
//! and by default its tail replies to the client's port 8889, as NetChain's
//! P4 reference does ([`ReplyTo`]).
//!
//! A node is configured in two parts, as a P4 switch is:
//!
//! * **wiring**, written when its program is loaded ([`load_node`]): its
//!   address, port 2 = the clients, and one port per other node
//!   ([`node_port`]): the runtime's address book, which tables name nodes
//!   through;
//! * **the layout's tables** ([`apply_layout`]): role, writes paused,
//!   NetCRAQ's `PORT_NEXT` / `PORT_TAIL` and ACK group, NetChain's
//!   neighbours (member -> its port, removed -> skip), all computed by
//!   `innet_chain`'s `Layout::tables` and `deploy::node_tables`, the
//!   functions the simulator and the UDP runtime apply layouts with.
//!
//! `up` applies the initial layout (node i at position i);
//! [`crate::chain_control`] applies the control plane's.
//!
//! Everything is named `innet-*` and recorded in the state file first, so
//! `testbed::down` removes it like the `txn` topology's.

use std::net::Ipv4Addr;
use std::path::Path;

use anyhow::{bail, Context, Result};

use innet_chain::control::Layout;
use innet_chain::deploy;
use innet_chain::netchain::{Hop, KEYS_DEFAULT};
use innet_chain::netcraq::{OBJECTS_DEFAULT, VERSIONS_DEFAULT};
use innet_chain::ports::{GROUP_ACK, PORT_NEXT, PORT_TAIL};
use innet_chain::Protocol;
use innet_core::Member as DeployMember;
use innet_wire::netchain::key_from_u32;

use crate::chain::{ChainPort, CraqXdp, Member, NcXdp, NodeAddr, CRAQ_MULTICAST_PROGRAM, CRAQ_PROGRAM, PORTS_MAX};
use crate::object;
use crate::testbed::{self, ifindex, in_netns, ip, mac_str, DataPlaneAt, State, NS_CLIENT, PIN_DIR};

pub const NS_FABRIC: &str = "innet-fabric";
pub const BRIDGE: &str = "innet-br";
pub const CLIENT_DEV: &str = "innet-c0";
pub const CLIENT_IP: Ipv4Addr = Ipv4Addr::new(10, 78, 0, 100);
const CLIENT_MAC: [u8; 6] = [0x02, 0x78, 0, 0, 0, 100];
/// The port towards the clients on every node.
pub const PORT_CLIENTS: u16 = 2;
/// Ports 3.. are the other nodes ([`node_port`]).
const PORT_FIRST_NODE: u16 = 3;
/// Nodes a chain can have (one port per other node).
pub const NODES_MAX: usize = PORTS_MAX - PORT_FIRST_NODE as usize + 1;
/// NetChain keys installed on every node.
pub const NETCHAIN_KEYS_INSTALLED: u32 = 256;
/// The keys NetChain's P4 reference's client uses (netchain-p4
/// `controller/nc_config.py`: `ENTRY = 2018 + i for i in range(200)`),
/// installed too.
pub const REFERENCE_KEYS: std::ops::Range<u32> = 2018..2218;

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
/// Node i's port leading to node j (j != i): 3.. for the other nodes in
/// index order, so 14 nodes fit 16 ports.
pub fn node_port(i: usize, j: usize) -> u16 {
    assert_ne!(i, j, "a node has no port to itself");
    PORT_FIRST_NODE + (if j < i { j } else { j - 1 }) as u16
}
/// Where node i's maps are pinned.
pub fn node_pin_dir(i: usize) -> std::path::PathBuf {
    Path::new(PIN_DIR).join(format!("chain-n{i}"))
}

/// Where a NetChain tail's replies go on the client's address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyTo {
    /// UDP port [`innet_wire::netchain::REPLY_PORT`] (8889), as NetChain's
    /// P4 reference does: its client sends from one socket and receives on
    /// another (`client/nc_socket.py`, `client/receiver.py`).
    ReferencePort,
    /// The request's source port: many clients on the one client address
    /// (the drill, the benchmarks, the hostile-input tests).
    SourcePort,
}

impl ReplyTo {
    /// The node's `reply_port` (0: the source port; NetCRAQ always 0).
    pub fn port(self, protocol: Protocol) -> u16 {
        match (protocol, self) {
            (Protocol::NetChain, ReplyTo::ReferencePort) => innet_wire::netchain::REPLY_PORT,
            _ => 0,
        }
    }
}

/// The UDP port of a protocol's packets.
pub fn udp_port(protocol: Protocol) -> u16 {
    match protocol {
        Protocol::NetCraq => innet_wire::netcraq::DEFAULT_PORT,
        Protocol::NetChain => innet_wire::netchain::DEFAULT_PORT,
    }
}

/// Builds the chain topology with `nodes` nodes; with `Some(DataPlaneAt::Xdp)`
/// the node programs are attached (NetChain's replies going as `reply`
/// says), with `None` nothing is.
pub fn up(protocol: Protocol, nodes: usize, data_plane: Option<DataPlaneAt>, reply: ReplyTo) -> Result<State> {
    if !(1..=NODES_MAX).contains(&nodes) {
        bail!("a chain of 1..={NODES_MAX} nodes (got {nodes})");
    }
    if let Some(dp @ (DataPlaneAt::Switch | DataPlaneAt::Process)) = data_plane {
        bail!(
            "--data-plane {dp}: the chain testbed runs XDP nodes; the software chain runs on loopback: \
             `innet up chain --protocol {protocol} --nodes {nodes}`"
        );
    }
    testbed::guarded(testbed::STATE_FILE, || build(protocol, nodes, data_plane, reply), testbed::down_unlocked)
}

fn build(protocol: Protocol, nodes: usize, data_plane: Option<DataPlaneAt>, reply: ReplyTo) -> Result<State> {
    testbed::remove_own_leftovers()?;
    let mut namespaces = vec![NS_CLIENT.to_string(), NS_FABRIC.to_string()];
    namespaces.extend((0..nodes).map(node_ns));
    let state = State {
        topology: format!("chain-{protocol}-{nodes}"),
        namespaces,
        pin_dir: None, // the nodes' pins: node_pin_dir(i), which down removes by name
        processes: vec![],
    };
    testbed::save(&state)?;
    build_links(nodes).context("build namespaces, links and the bridge")?;
    if data_plane == Some(DataPlaneAt::Xdp) {
        attach_nodes(protocol, nodes, reply)?;
    }
    Ok(state)
}

/// A chain node's loaded program (the attachment outlives it; benchmarks
/// keep it to re-attach the node after measuring something else, the
/// control plane to write its maps).
pub struct NodeXdp {
    pub program: NodeProgram,
    /// The node's interface (every port's).
    pub ifindex: u32,
}

pub enum NodeProgram {
    Craq(CraqXdp),
    Nc(NcXdp),
}

impl NodeXdp {
    /// The node's XDP program.
    pub fn xdp_fd(&self) -> Result<std::os::fd::RawFd> {
        match &self.program {
            NodeProgram::Craq(x) => x.program_fd(CRAQ_PROGRAM),
            NodeProgram::Nc(x) => x.program_fd(),
        }
    }
}

/// Loads, wires, pins and attaches every node's programs on a built chain
/// topology, and applies the initial layout (node i at position i).
pub fn attach_nodes(protocol: Protocol, nodes: usize, reply: ReplyTo) -> Result<Vec<NodeXdp>> {
    let layout = deploy::initial_layout(nodes);
    let mut xs = vec![];
    for i in 0..nodes {
        let mut x = load_node(protocol, i, nodes, reply).with_context(|| format!("node {i}"))?;
        apply_layout(&mut x, protocol, &layout, nodes, i).with_context(|| format!("node {i}: initial layout"))?;
        xs.push(x);
    }
    Ok(xs)
}

/// Attaches XDP program `fd` to node `i`'s interface, replacing what is there.
pub fn attach_to_node(i: usize, fd: std::os::fd::RawFd) -> Result<()> {
    let index = ifindex(&node_ns(i), &node_dev(i))?;
    in_netns(&node_ns(i), || object::attach_fd(fd, index))
}

/// Sets node `i`'s interface up or down (`ip link set`).
pub fn set_node_link(i: usize, up: bool) -> Result<()> {
    ip(&["-n", &node_ns(i), "link", "set", &node_dev(i), if up { "up" } else { "down" }])?;
    Ok(())
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
        // Wiring, not a learning switch: every host's MAC is fixed to its
        // port and unknown unicast is not flooded, so a frame reaches only
        // the host it is addressed to. (Flooded, a frame for a node whose
        // link is down would reach every node program, which processes
        // whatever arrives, as a switch does, and answers in the dead
        // node's name.)
        ip(&["-n", NS_FABRIC, "link", "set", &fabric_dev, "type", "bridge_slave", "learning", "off", "flood", "off"])?;
        bridge(&["-n", NS_FABRIC, "fdb", "replace", &mac_str(mac), "dev", &fabric_dev, "master", "static"])?;
        ip(&["-n", NS_FABRIC, "link", "set", &fabric_dev, "up"])?;
    }
    Ok(())
}

fn bridge(args: &[&str]) -> Result<()> {
    let out = std::process::Command::new("bridge").args(args).output().context("run `bridge` (package iproute2)")?;
    if !out.status.success() {
        bail!("bridge {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(())
}

/// A port entry: out of node `i`'s interface (`ifindex`) to `peer`.
fn port_to(i: usize, ifindex: u32, peer: (Ipv4Addr, [u8; 6])) -> ChainPort {
    ChainPort { ifindex, ip: peer.0, port_mac: node_mac(i), peer_mac: peer.1 }
}

/// A port that leads nowhere (the program drops and counts `xdp_no_port`).
const NO_PORT: ChainPort = ChainPort { ifindex: 0, ip: Ipv4Addr::UNSPECIFIED, port_mac: [0; 6], peer_mac: [0; 6] };

/// Loads a fresh node `i` (no role, empty registers) with its wiring, pins
/// its maps (replacing pins of an earlier program of the node) and attaches
/// it (NetCRAQ: and the multicast tc program), replacing what runs there.
pub fn load_node(protocol: Protocol, i: usize, nodes: usize, reply: ReplyTo) -> Result<NodeXdp> {
    let (ns, dev) = (node_ns(i), node_dev(i));
    let index = ifindex(&ns, &dev)?;
    let reply_port = reply.port(protocol);
    let addr = NodeAddr { udp_port: udp_port(protocol), node_ip: node_ip(i), origin_port: PORT_CLIENTS, reply_port };
    let clients = port_to(i, index, (CLIENT_IP, CLIENT_MAC));
    // Every other node's port, and its frames known by this interface and
    // its MAC (the program takes writes and ACKs only from chain nodes the
    // layout names; everything else is from outside).
    type SetPort<'a> = &'a dyn Fn(u16, &ChainPort) -> Result<()>;
    type SetPeer<'a> = &'a dyn Fn(u32, [u8; 6], Option<u16>) -> Result<()>;
    let wire = |set: SetPort, peer: SetPeer| -> Result<()> {
        set(PORT_CLIENTS, &clients)?;
        for j in (0..nodes).filter(|&j| j != i) {
            set(node_port(i, j), &port_to(i, index, (node_ip(j), node_mac(j))))?;
            peer(index, node_mac(j), Some(j as u16))?;
        }
        Ok(())
    };
    let pins = node_pin_dir(i);
    if pins.exists() {
        std::fs::remove_dir_all(&pins).with_context(|| format!("remove {}", pins.display()))?;
    }
    match protocol {
        Protocol::NetCraq => {
            let mut x = CraqXdp::load(OBJECTS_DEFAULT, VERSIONS_DEFAULT, addr)?;
            wire(&|p, c| x.set_port(p, c), &|f, m, j| x.set_peer(f, m, j))?;
            x.pin_maps(&pins)?;
            let (xdp_fd, tc_fd) = (x.program_fd(CRAQ_PROGRAM)?, x.program_fd(CRAQ_MULTICAST_PROGRAM)?);
            in_netns(&ns, || {
                object::attach_fd(xdp_fd, index)?;
                object::attach_tc_ingress(tc_fd, index)
            })?;
            Ok(NodeXdp { program: NodeProgram::Craq(x), ifindex: index })
        }
        Protocol::NetChain => {
            let mut x = NcXdp::load(u32::from(node_ip(i)), KEYS_DEFAULT, addr)?;
            wire(&|p, c| x.set_port(p, c), &|f, m, j| x.set_peer(f, m, j))?;
            for k in (0..NETCHAIN_KEYS_INSTALLED).chain(REFERENCE_KEYS) {
                x.install_key(key_from_u32(k))?.with_context(|| format!("install key {k}"))?;
            }
            x.pin_maps(&pins)?;
            let fd = x.program_fd()?;
            in_netns(&ns, || object::attach_fd(fd, index))?;
            Ok(NodeXdp { program: NodeProgram::Nc(x), ifindex: index })
        }
    }
}

/// Writes node `i`'s tables for `layout` into its maps: what
/// `Layout::tables` and `deploy::node_tables` give, with node j resolved to
/// [`node_port`]`(i, j)`. Ports and the group go first, the role last, so a
/// node promoted to tail already knows its ACK group when it commits.
pub fn apply_layout(x: &mut NodeXdp, protocol: Protocol, layout: &Layout, nodes: usize, i: usize) -> Result<()> {
    let t = layout.tables(i);
    let (ports, groups) = deploy::node_tables(protocol, layout, nodes, i);
    let index = x.ifindex;
    let to = |j: usize| port_to(i, index, (node_ip(j), node_mac(j)));
    match &mut x.program {
        NodeProgram::Craq(x) => {
            for p in [PORT_NEXT, PORT_TAIL] {
                x.set_port(p, &ports.get(&p).map_or(NO_PORT, |&j| to(j)))?;
            }
            let group: Vec<Member> = groups
                .get(&GROUP_ACK)
                .into_iter()
                .flatten()
                .map(|m| match m {
                    DeployMember::Node(j) => Member::Port(node_port(i, *j)),
                    DeployMember::Origin => Member::Origin,
                })
                .collect();
            x.set_group(&group)?;
            x.set_peers(t.prev.map(|j| j as u16), t.tail.map(|j| j as u16))?;
            x.set_writes_paused(t.writes_paused)?;
            x.set_role(t.role)
        }
        NodeProgram::Nc(x) => {
            // Port j leads to node j (the wiring); members are reached
            // through it, removed nodes' addresses are popped (skipped).
            for (&p, &j) in &ports {
                if p as usize != j {
                    bail!("NetChain port {p} leads to node {j}: the deployment changed its port numbering");
                }
            }
            for j in (0..nodes).filter(|&j| j != i) {
                let hop = if t.members.contains(&j) { Hop::Port(node_port(i, j)) } else { Hop::Skip };
                x.set_neighbour(u32::from(node_ip(j)), hop)?;
            }
            x.set_prev(t.prev.map(|j| j as u16))?;
            x.set_successors(&t.successors.iter().map(|&j| u32::from(node_ip(j))).collect::<Vec<_>>())?;
            x.set_writes_paused(t.writes_paused)?;
            x.set_role(t.role)
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
