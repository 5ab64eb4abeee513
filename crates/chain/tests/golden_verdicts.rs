//! Packet-in, packet-out fixtures of a NetCRAQ node (katran's `lib/testing`
//! form): `crates/wire/golden/netcraq_replica.json` lists packets with the
//! verdict and output bytes Algorithm 1 (NetCRAQ section III-A) and the
//! trust rules of docs/chain.md call for, written by hand, not by the node.
//! The Rust node must give exactly those; so must the BPF port
//! (`crates/xdp/tests/chain_differential.rs`), so a bug the two share fails
//! here where the differential test cannot see it.

#[path = "../../wire/tests/common/mod.rs"]
mod common;

use innet_chain::netcraq::{CraqNode, OBJECTS_DEFAULT, VERSIONS_DEFAULT};
use innet_chain::Role;
use innet_core::{DataPlane, Ingress, Verdict};

#[test]
fn a_replica_gives_the_verdicts_and_bytes_algorithm_1_calls_for() {
    let cases = common::fixtures("netcraq_replica.json");
    assert!(cases.len() >= 10, "the fixtures are there");
    let mut node = CraqNode::new(OBJECTS_DEFAULT, VERSIONS_DEFAULT);
    node.set_peers(Some(0), Some(3));
    node.set_role(Some(Role::Replica));
    for case in &cases {
        let ingress = match case.text("sender") {
            "client" => Ingress::Downstream,
            "predecessor" => Ingress::Peer(0),
            "another_node" => Ingress::Peer(2),
            "tail" => Ingress::Peer(3),
            other => panic!("{}: unknown sender {other}", case.name),
        };
        let want = match (case.verdict.as_str(), case.number("port")) {
            ("Reflect", None) => Verdict::Reflect,
            ("Drop", None) => Verdict::Drop,
            ("Port", Some(port)) => Verdict::Port { port: port as u16 },
            (other, port) => panic!("{}: unknown verdict {other} {port:?}", case.name),
        };
        let mut packet = common::unhex(&case.input_hex);
        let (verdict, len) = node.process_from(&mut packet, ingress);
        assert_eq!(verdict, want, "{}: {}", case.name, case.rule);
        if want != Verdict::Drop {
            assert_eq!(common::hex(&packet[..len]), case.output_hex, "{}: {}", case.name, case.rule);
        }
    }
}
