//! Packet-in, packet-out fixtures of the transaction switch (katran's
//! `lib/testing` form): `crates/wire/golden/txn_switch_optimistic_abort.json`
//! lists packets with the verdict and the output bytes Gotthard's Algorithm 2
//! (section 3.3) and the deviations in docs/txn.md call for, written by hand,
//! not by the switch. The Rust switch must give exactly those; so must the
//! BPF port (`crates/xdp/tests/txn_differential.rs`), so a bug the two
//! share fails here where the differential test cannot see it.

#[path = "../../wire/tests/common/mod.rs"]
mod common;

use innet_core::{DataPlane, Ingress, Verdict};
use innet_txn::{Mode, TxnSwitch};

/// The verdict a case names.
fn expected(case: &common::FixtureCase) -> Verdict {
    let flow = || case.number("flow").expect("a flow") as u32;
    match case.verdict.as_str() {
        "Upstream" => Verdict::Upstream { flow: flow() },
        "Downstream" => Verdict::Downstream { flow: flow() },
        "Reflect" => Verdict::Reflect,
        "Drop" => Verdict::Drop,
        other => panic!("{}: unknown verdict {other}", case.name),
    }
}

#[test]
fn the_switch_gives_the_verdicts_and_bytes_algorithm_2_calls_for() {
    let cases = common::fixtures("txn_switch_optimistic_abort.json");
    assert!(cases.len() >= 10, "the fixtures are there");
    let mut switch = TxnSwitch::with_defaults(Mode::OptimisticAbort);
    for case in &cases {
        let ingress = match case.text("ingress") {
            "client" => Ingress::Downstream,
            "store" => Ingress::Upstream,
            other => panic!("{}: unknown ingress {other}", case.name),
        };
        let mut packet = common::unhex(&case.input_hex);
        let (verdict, len) = switch.process_from(&mut packet, ingress);
        assert_eq!(verdict, expected(case), "{}: {}", case.name, case.rule);
        assert_eq!(common::hex(&packet[..len]), case.output_hex, "{}: {}", case.name, case.rule);
    }
}
