//! The chain node fixtures the chain tests share: a node under test, a
//! client, the chain nodes' MACs and the node's ports.

use std::net::Ipv4Addr;

use innet_xdp::chain::{ChainPort, NodeAddr};
use innet_xdp::frame::{self, Endpoint};

pub const CLIENT: Endpoint = Endpoint { mac: [2, 0, 0, 0, 0, 0x0c], ip: Ipv4Addr::new(10, 98, 0, 2), port: 40_000 };
pub const NODE_IP: Ipv4Addr = Ipv4Addr::new(10, 98, 0, 1);
pub const NODE_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0x01];
/// The port towards the clients (Origin replies).
pub const ORIGIN_PORT: u16 = 5;
/// `BPF_PROG_TEST_RUN` runs frames as received on lo.
pub const TEST_RUN_IFINDEX: u32 = 1;

/// Chain node `i`'s MAC as the node under test sees it.
pub fn peer_mac(i: u16) -> [u8; 6] {
    [2, 0, 0, 0, 3, i as u8]
}

/// The node's port `i`: ORIGIN_PORT to the client, any other to a
/// neighbour behind an interface of its own.
pub fn port(i: u16) -> ChainPort {
    if i == ORIGIN_PORT {
        return ChainPort { ifindex: 1100, ip: CLIENT.ip, port_mac: NODE_MAC, peer_mac: CLIENT.mac };
    }
    ChainPort {
        // Not the test-run ingress (lo, 1): every port is a redirect.
        ifindex: 1001 + i as u32,
        ip: Ipv4Addr::new(10, 98, 1 + i as u8, 2),
        port_mac: [2, 0, 0, 0, 1, i as u8],
        peer_mac: [2, 0, 0, 0, 2, i as u8],
    }
}

/// The node under test listening on `udp_port`.
pub fn node_at(udp_port: u16) -> NodeAddr {
    NodeAddr { udp_port, node_ip: NODE_IP, origin_port: ORIGIN_PORT, reply_port: 0 }
}

/// A frame from CLIENT's address through `mac` (the last hop's) to the
/// node carrying `payload`.
pub fn request_frame(payload: &[u8], pad: usize, udp_port: u16, mac: [u8; 6]) -> Vec<u8> {
    let from = Endpoint { mac, ..CLIENT };
    frame::udp_frame(from, Endpoint { mac: NODE_MAC, ip: NODE_IP, port: udp_port }, payload, pad)
}
