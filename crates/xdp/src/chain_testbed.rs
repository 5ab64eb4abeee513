//! Topology `chain`: a chain of N XDP nodes and a client namespace, every
//! pair of them joined by a veth of its own, as the ports of switches in
//! a fabric are: each node has one device towards the clients and one
//! towards every other node.
//!
//! ```text
//!  netns innet-client                         netns innet-n<i>
//!  innet-c<i> 10.78.0.100 ------------------- innet-e<i> 10.78.0.<i+1>    (one per node)
//!  netns innet-n<i>                           netns innet-n<j>
//!  innet-e<i>n<j> --------------------------- innet-e<j>n<i>              (one per pair i < j)
//! ```
//!
//! The client reaches node i at 10.78.0.<i+1> over `innet-c<i>` (a /32
//! route, fixed MACs and neighbour entries: no ARP); node-to-node devices
//! carry no address, only the programs' frames.
//!
//! Node i runs `xdp_netcraq` or `xdp_netchain` on every device of its
//! namespace, on a [`Fabric`] (driver mode and threaded NAPI by default,
//! `xdp_pass` on the client's devices in driver mode: they receive the
//! nodes' redirected frames). A Port / Origin verdict rewrites the MACs
//! and addresses to the neighbour and redirects the frame to the device
//! towards it. The NetCRAQ tail's ACK to its group (the writer and every
//! other node: one member per device here) leaves by a devmap broadcast
//! ([`Multicast::Devmap`], the default: `xdp_craq_egress` rewrites each
//! copy) or by tc clones (`tc_chain_multicast` on clsact ingress,
//! [`Multicast::Tc`]: driver mode only here, since a clone another
//! program redirected skips generic XDP at the next node). NetChain chain
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

use anyhow::{bail, ensure, Context, Result};

use innet_chain::control::Layout;
use innet_chain::deploy;
use innet_chain::netchain::{Hop, KEYS_DEFAULT};
use innet_chain::netcraq::{OBJECTS_DEFAULT, VERSIONS_DEFAULT};
use innet_chain::ports::{GROUP_ACK, PORT_NEXT, PORT_TAIL};
use innet_chain::Protocol;
use innet_core::Member as DeployMember;
use innet_wire::netchain::key_from_u32;

pub use crate::chain::Multicast;
use crate::chain::{ChainPort, CraqXdp, Member, NcXdp, NodeAddr, CRAQ_MULTICAST_PROGRAM, CRAQ_PROGRAM};
use crate::fabric::{Fabric, PassProgram, XdpMode};
use crate::object;
pub use innet_core::deploy::DataPlaneAt;

use crate::netns::{self, ifindex, in_netns, ip, mac_str};
use crate::testbed_common::PORT_FIRST_NODE;
use crate::testbed_common::{self, State, NS_CLIENT};
pub use crate::testbed_common::{node_ns, node_pin_dir, NODES_MAX, NS_FABRIC};

pub const CLIENT_IP: Ipv4Addr = Ipv4Addr::new(10, 78, 0, 100);
/// The port towards the clients on every node.
pub const PORT_CLIENTS: u16 = 2;
/// NetChain keys installed on every node.
pub const NETCHAIN_KEYS_INSTALLED: u32 = 256;
/// The keys NetChain's P4 reference's client uses (netchain-p4
/// `controller/nc_config.py`: `ENTRY = 2018 + i for i in range(200)`),
/// installed too.
pub const REFERENCE_KEYS: std::ops::Range<u32> = 2018..2218;

/// How the chain testbed is built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainUp {
    pub protocol: Protocol,
    pub nodes: usize,
    /// Driver or generic XDP, threaded NAPI.
    pub fabric: Fabric,
    /// How the NetCRAQ tail's ACK reaches its group.
    pub multicast: Multicast,
    /// Where NetChain's replies go.
    pub reply: ReplyTo,
    /// `--auth-key`: every node takes frames from the other nodes only
    /// sealed and seals what it sends them (clients stay unkeyed).
    pub auth: Option<innet_core::auth::AuthKeys>,
}

impl ChainUp {
    /// `nodes` nodes of `protocol` on the default fabric (driver mode,
    /// threaded NAPI), ACKs by devmap broadcast, NetChain's replies to the
    /// request's source port.
    pub fn new(protocol: Protocol, nodes: usize) -> ChainUp {
        let (fabric, multicast, reply) = (Fabric::default(), Multicast::Devmap, ReplyTo::SourcePort);
        ChainUp { protocol, nodes, fabric, multicast, reply, auth: None }
    }

    fn validate(&self) -> Result<()> {
        ensure!((1..=NODES_MAX).contains(&self.nodes), "a chain of 1..={NODES_MAX} nodes (got {})", self.nodes);
        ensure!(
            !(self.protocol == Protocol::NetCraq
                && self.multicast == Multicast::Tc
                && self.fabric.mode == XdpMode::Generic),
            "--multicast tc with --xdp-mode generic: the tail's tc clones would skip generic XDP at the next \
             node; use --multicast devmap (or driver mode)"
        );
        Ok(())
    }
}

/// Node i's device towards the clients.
pub fn node_dev(i: usize) -> String {
    format!("innet-e{i}")
}
/// Node i's device towards node j.
pub fn link_dev(i: usize, j: usize) -> String {
    format!("innet-e{i}n{j}")
}
/// The client's device towards node i.
pub fn client_dev(i: usize) -> String {
    format!("innet-c{i}")
}
pub fn node_ip(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 78, 0, 1 + i as u8)
}
fn node_mac(i: usize) -> [u8; 6] {
    [0x02, 0x78, 0, 0, 0, 1 + i as u8]
}
fn client_mac(i: usize) -> [u8; 6] {
    [0x02, 0x78, 0, 0, 100, 1 + i as u8]
}
/// The MAC of node i's device towards node j.
pub fn link_mac(i: usize, j: usize) -> [u8; 6] {
    [0x02, 0x78, 1, 0, 1 + i as u8, 1 + j as u8]
}
/// Node i's port leading to node j (j != i): 3.. for the other nodes in
/// index order, so 14 nodes fit 16 ports.
pub fn node_port(i: usize, j: usize) -> u16 {
    assert_ne!(i, j, "a node has no port to itself");
    PORT_FIRST_NODE + (if j < i { j } else { j - 1 }) as u16
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

/// Builds the chain topology of `o`; with `Some(DataPlaneAt::Xdp)` the
/// node programs are attached, with `None` nothing is (the caller attaches
/// them: [`attach_nodes`]).
pub fn up(o: &ChainUp, data_plane: Option<DataPlaneAt>) -> Result<State> {
    o.validate()?;
    if let Some(dp @ (DataPlaneAt::Switch | DataPlaneAt::Process)) = data_plane {
        bail!(
            "--data-plane {dp}: the chain testbed runs XDP nodes; the software chain runs on loopback: \
             `innet up chain --protocol {} --nodes {}`",
            o.protocol,
            o.nodes
        );
    }
    testbed_common::guarded(testbed_common::STATE_FILE, || build(o, data_plane), testbed_common::down_unlocked)
}

fn build(o: &ChainUp, data_plane: Option<DataPlaneAt>) -> Result<State> {
    testbed_common::remove_own_leftovers()?;
    let mut namespaces = vec![NS_CLIENT.to_string()];
    namespaces.extend((0..o.nodes).map(node_ns));
    let state = State {
        topology: format!("chain-{}-{}", o.protocol, o.nodes),
        namespaces,
        pin_dir: None, // the nodes' pins: node_pin_dir(i), which down removes by name
        processes: vec![],
        fabric: Some(o.fabric),
    };
    testbed_common::save(&state)?;
    build_links(o.nodes).context("build namespaces and links")?;
    if data_plane == Some(DataPlaneAt::Xdp) {
        attach_nodes(o)?;
    }
    Ok(state)
}

/// A chain node's loaded program (the attachment outlives it; benchmarks
/// keep it to re-attach the node after measuring something else, the
/// control plane to write its maps).
pub struct NodeXdp {
    pub program: NodeProgram,
    /// The node's devices: towards the clients, and towards node j
    /// (`peers[j]`; 0 for the node itself).
    pub client_ifindex: u32,
    pub peers: Vec<u32>,
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
/// topology, applies the initial layout (node i at position i), and puts
/// the fabric's finishing touches on (`xdp_pass` on the client's devices
/// in driver mode, threaded NAPI).
pub fn attach_nodes(o: &ChainUp) -> Result<Vec<NodeXdp>> {
    let layout = deploy::initial_layout(o.nodes);
    let mut xs = vec![];
    for i in 0..o.nodes {
        let mut x = load_node(o, i).with_context(|| format!("node {i}"))?;
        apply_layout(&mut x, o.protocol, &layout, o.nodes, i).with_context(|| format!("node {i}: initial layout"))?;
        xs.push(x);
    }
    let pass = PassProgram::load()?;
    let client_devs: Vec<String> = (0..o.nodes).map(client_dev).collect();
    let client_devs: Vec<&str> = client_devs.iter().map(String::as_str).collect();
    // Every device counts as an entry here (`entry` is `on`).
    o.fabric.finish(&pass, NS_CLIENT, &client_devs, &client_devs, &client_devs)?;
    Ok(xs)
}

/// Node i's devices: towards the clients first, then towards every other node.
pub fn node_devs(i: usize, nodes: usize) -> Vec<String> {
    std::iter::once(node_dev(i)).chain((0..nodes).filter(|&j| j != i).map(|j| link_dev(i, j))).collect()
}

/// Attaches XDP program `fd` to node `i`'s device towards the clients
/// (in `fabric`'s mode), replacing what is there.
pub fn attach_to_node(fabric: &Fabric, i: usize, fd: std::os::fd::RawFd) -> Result<()> {
    fabric.attach(fd, &node_ns(i), &[&node_dev(i)])
}

/// Sets every device of node `i` up or down at once (one `ip -batch`):
/// the node's ports go dark together, as a failed switch's do.
pub fn set_node_link(i: usize, nodes: usize, up: bool) -> Result<()> {
    let batch: String =
        node_devs(i, nodes).iter().map(|d| format!("link set {d} {}\n", if up { "up" } else { "down" })).collect();
    netns::ip_batch(Some(&node_ns(i)), &batch)
}

fn build_links(nodes: usize) -> Result<()> {
    let mut nss = vec![NS_CLIENT.to_string()];
    nss.extend((0..nodes).map(node_ns));
    for ns in &nss {
        ip(&["netns", "add", ns])?;
    }
    let veth = |a: &str, mac_a: [u8; 6], ns_a: &str, b: &str, mac_b: [u8; 6], ns_b: &str| {
        format!(
            "link add {a} address {} netns {ns_a} type veth peer name {b} address {} netns {ns_b}\n",
            mac_str(mac_a),
            mac_str(mac_b)
        )
    };
    let mut links = String::new();
    for i in 0..nodes {
        links += &veth(&client_dev(i), client_mac(i), NS_CLIENT, &node_dev(i), node_mac(i), &node_ns(i));
        for j in i + 1..nodes {
            links += &veth(&link_dev(i, j), link_mac(i, j), &node_ns(i), &link_dev(j, i), link_mac(j, i), &node_ns(j));
        }
    }
    netns::ip_batch(None, &links)?;
    // The client: one /32 route per node over its own device, the nodes'
    // MACs fixed (no ARP across a device a program owns).
    let mut client = String::from("link set lo up\n");
    for i in 0..nodes {
        let (dev, node) = (client_dev(i), node_ip(i));
        client += &format!("addr add {CLIENT_IP}/32 dev {dev}\nlink set {dev} up\n");
        client += &format!("route add {node}/32 dev {dev} src {CLIENT_IP}\n");
        client += &format!("neigh replace {node} lladdr {} dev {dev} nud permanent\n", mac_str(node_mac(i)));
    }
    netns::ip_batch(Some(NS_CLIENT), &client)?;
    for i in 0..nodes {
        let dev = node_dev(i);
        let mut node = format!("link set lo up\naddr add {}/32 dev {dev}\n", node_ip(i));
        for d in node_devs(i, nodes) {
            node += &format!("link set {d} up\n");
        }
        node += &format!("route add {CLIENT_IP}/32 dev {dev}\n");
        node += &format!("neigh replace {CLIENT_IP} lladdr {} dev {dev} nud permanent\n", mac_str(client_mac(i)));
        netns::ip_batch(Some(&node_ns(i)), &node)?;
    }
    Ok(())
}

/// A port entry: out of `ifindex` from node `i`'s MAC there to `peer`
/// (its address and MAC).
fn port_to(ifindex: u32, port_mac: [u8; 6], peer: (Ipv4Addr, [u8; 6])) -> ChainPort {
    ChainPort { ifindex, ip: peer.0, port_mac, peer_mac: peer.1 }
}

/// Node `i`'s port towards node `j`, through its device there (`peers[j]`).
fn toward(peers: &[u32], i: usize, j: usize) -> ChainPort {
    port_to(peers[j], link_mac(i, j), (node_ip(j), link_mac(j, i)))
}

/// A port that leads nowhere (the program drops and counts `xdp_no_port`).
const NO_PORT: ChainPort = ChainPort { ifindex: 0, ip: Ipv4Addr::UNSPECIFIED, port_mac: [0; 6], peer_mac: [0; 6] };

/// Loads a fresh node `i` (no role, empty registers) with its wiring, pins
/// its maps (replacing pins of an earlier program of the node) and attaches
/// it to every device of the node in the fabric's mode (NetCRAQ with tc
/// multicast: and the multicast tc program), replacing what runs there.
pub fn load_node(o: &ChainUp, i: usize) -> Result<NodeXdp> {
    let (protocol, nodes) = (o.protocol, o.nodes);
    let ns = node_ns(i);
    let client_ifindex = ifindex(&ns, &node_dev(i))?;
    let peers: Vec<u32> =
        (0..nodes).map(|j| if j == i { Ok(0) } else { ifindex(&ns, &link_dev(i, j)) }).collect::<Result<_>>()?;
    let reply_port = o.reply.port(protocol);
    let addr = NodeAddr { udp_port: udp_port(protocol), node_ip: node_ip(i), origin_port: PORT_CLIENTS, reply_port };
    let clients = port_to(client_ifindex, node_mac(i), (CLIENT_IP, client_mac(i)));
    // Every other node's port, and its frames known by the device towards
    // it and its MAC there (the program takes writes and ACKs only from
    // chain nodes the layout names; everything else is from outside).
    type SetPort<'a> = &'a dyn Fn(u16, &ChainPort) -> Result<()>;
    type SetPeer<'a> = &'a dyn Fn(u32, [u8; 6], Option<u16>) -> Result<()>;
    let wire = |set: SetPort, peer: SetPeer| -> Result<()> {
        set(PORT_CLIENTS, &clients)?;
        for j in (0..nodes).filter(|&j| j != i) {
            set(node_port(i, j), &toward(&peers, i, j))?;
            peer(peers[j], link_mac(j, i), Some(j as u16))?;
        }
        Ok(())
    };
    let pins = node_pin_dir(i);
    if pins.exists() {
        std::fs::remove_dir_all(&pins).with_context(|| format!("remove {}", pins.display()))?;
    }
    let devs = node_devs(i, nodes);
    let devs: Vec<&str> = devs.iter().map(String::as_str).collect();
    let program = match protocol {
        Protocol::NetCraq => {
            let mut x = CraqXdp::load(OBJECTS_DEFAULT, VERSIONS_DEFAULT, addr)?;
            wire(&|p, c| x.set_port(p, c), &|f, m, j| x.set_peer(f, m, j))?;
            x.set_auth(o.auth.as_ref())?;
            x.set_multicast(o.multicast)?;
            x.pin_maps(&pins)?;
            o.fabric.attach(x.program_fd(CRAQ_PROGRAM)?, &ns, &devs)?;
            if o.multicast == Multicast::Tc {
                let tc_fd = x.program_fd(CRAQ_MULTICAST_PROGRAM)?;
                let indexes: Vec<u32> = std::iter::once(client_ifindex).chain(peers.iter().copied()).collect();
                in_netns(&ns, || {
                    indexes.iter().filter(|&&k| k != 0).try_for_each(|&k| object::attach_tc_ingress(tc_fd, k))
                })?;
            }
            NodeProgram::Craq(x)
        }
        Protocol::NetChain => {
            let mut x = NcXdp::load(u32::from(node_ip(i)), KEYS_DEFAULT, addr)?;
            wire(&|p, c| x.set_port(p, c), &|f, m, j| x.set_peer(f, m, j))?;
            x.set_auth(o.auth.as_ref())?;
            for k in (0..NETCHAIN_KEYS_INSTALLED).chain(REFERENCE_KEYS) {
                x.install_key(key_from_u32(k))?.with_context(|| format!("install key {k}"))?;
            }
            x.pin_maps(&pins)?;
            o.fabric.attach(x.program_fd()?, &ns, &devs)?;
            NodeProgram::Nc(x)
        }
    };
    o.fabric.finish(&PassProgram::load()?, &ns, &[], &devs, &devs)?;
    Ok(NodeXdp { program, client_ifindex, peers })
}

/// Writes node `i`'s tables for `layout` into its maps: what
/// `Layout::tables` and `deploy::node_tables` give, with node j resolved to
/// [`node_port`]`(i, j)`. Ports and the group go first, the role last, so a
/// node promoted to tail already knows its ACK group when it commits.
pub fn apply_layout(x: &mut NodeXdp, protocol: Protocol, layout: &Layout, nodes: usize, i: usize) -> Result<()> {
    let t = layout.tables(i);
    let (ports, groups) = deploy::node_tables(protocol, layout, nodes, i);
    let to = |j: usize| toward(&x.peers, i, j);
    let next = [PORT_NEXT, PORT_TAIL].map(|p| ports.get(&p).map_or(NO_PORT, |&j| to(j)));
    // Each member of the ACK group and the device it leaves by.
    let members: Vec<(u32, Member)> = groups
        .get(&GROUP_ACK)
        .into_iter()
        .flatten()
        .map(|m| match m {
            DeployMember::Node(j) => (x.peers[*j], Member::Port(node_port(i, *j))),
            DeployMember::Origin => (x.client_ifindex, Member::Origin),
        })
        .collect();
    match &mut x.program {
        NodeProgram::Craq(x) => {
            for (p, port) in [PORT_NEXT, PORT_TAIL].into_iter().zip(&next) {
                x.set_port(p, port)?;
            }
            let group: Vec<Member> = members.iter().map(|(_, m)| *m).collect();
            x.set_group(&group)?;
            let w = x.group_writer()?;
            in_netns(&node_ns(i), || w.write(&members))?;
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

/// `payload` as the client sends it from UDP port 40000 to node `i`,
/// arriving on the node's device towards the clients: the in-kernel
/// generator's template.
pub fn client_frame(protocol: Protocol, i: usize, payload: &[u8]) -> Vec<u8> {
    use crate::frame::{udp_frame, Endpoint};
    let from = Endpoint { mac: client_mac(i), ip: CLIENT_IP, port: 40_000 };
    let to = Endpoint { mac: node_mac(i), ip: node_ip(i), port: udp_port(protocol) };
    udp_frame(from, to, payload, 0)
}

/// The protocol and node count of a running chain testbed, from its topology name.
pub fn parse_topology(topology: &str) -> Option<(Protocol, usize)> {
    let mut parts = topology.strip_prefix("chain-")?.split('-');
    let protocol = parts.next()?.parse().ok()?;
    let nodes = parts.next()?.parse().ok()?;
    Some((protocol, nodes))
}
