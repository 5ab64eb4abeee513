//! Packet-in, packet-out fixtures of the CAANS coordinator and acceptor
//! (katran's `lib/testing` form): `crates/wire/golden/caans_coordinator_acceptor.json`
//! lists packets with the sender, the verdict, the counter and the output
//! bytes that CAANS (sections 2.1, 3 and 3.1) and docs/paxos.md's additions
//! call for, written by hand, not by either program. The Rust roles, behind
//! the deployment's trust table, must give exactly those; so must the BPF
//! programs (`crates/xdp/tests/paxos_differential.rs`), so a bug the two
//! share fails here where the differential test cannot see it.

#[path = "../../wire/tests/common/mod.rs"]
mod common;

use std::collections::HashMap;

use innet_core::{Counters, DataPlane, Verdict};
use innet_paxos::deploy::{self, PaxosParams, PaxosShape, Roles};
use innet_paxos::trust::{self, Senders, REJECT_NAMES};
use innet_paxos::{Acceptor, Coordinator};

/// The acceptor the cases run through (the fixture's "how").
const ACCEPTOR: &str = "acceptor2";

/// The verdict a case names.
fn expected(case: &common::FixtureCase) -> Verdict {
    match case.verdict.as_str() {
        "Multicast" => Verdict::Multicast { group: case.number("group").expect("a group") as u16 },
        "Reflect" => Verdict::Reflect,
        "Origin" => Verdict::Origin,
        "Drop" => Verdict::Drop,
        other => panic!("{}: unknown verdict {other}", case.name),
    }
}

/// One role of the default deployment behind its trust table, and what it
/// refused by reason.
struct Node<R> {
    role: R,
    senders: Senders<String>,
    rejected: HashMap<&'static str, u64>,
}

impl<R: DataPlane + Counters> Node<R> {
    fn new(d: &deploy::PaxosDeployment, name: &str, role: R) -> Node<R> {
        let names: Vec<String> = d.nodes.iter().map(|n| n.name.clone()).collect();
        let senders = trust::senders(d, &names, d.find(name).expect("in the deployment"));
        Node { role, senders, rejected: REJECT_NAMES.iter().map(|n| (*n, 0)).collect() }
    }

    /// Every counter of the role and every refusal reason.
    fn counts(&self) -> HashMap<&'static str, u64> {
        let mut c: HashMap<_, _> = self.role.counters().into_iter().collect();
        c.extend(self.rejected.iter().map(|(k, v)| (*k, *v)));
        c
    }

    /// The trust rule, then the role: the case's verdict, bytes and the one
    /// counter that grows.
    fn run(&mut self, case: &common::FixtureCase) {
        let what = format!("{}: {}", case.name, case.rule);
        let from = case.text("from");
        let mut packet = common::unhex(&case.input_hex);
        let before = self.counts();
        let verdict = match self.senders.check(&from.to_string(), &packet) {
            Err(reason) => {
                *self.rejected.get_mut(reason.name()).expect("a reason") += 1;
                Verdict::Drop
            }
            Ok(()) => self.role.process(&mut packet),
        };
        assert_eq!(verdict, expected(case), "{what}");
        assert_eq!(common::hex(&packet), case.output_hex, "{what}");
        let after = self.counts();
        let grown: Vec<(&str, u64)> =
            after.iter().filter(|(k, v)| before[*k] != **v).map(|(k, v)| (*k, v - before[*k])).collect();
        assert_eq!(grown, vec![(case.text("counter"), 1)], "the counters that grew: {what}");
    }
}

#[test]
fn the_roles_give_the_verdicts_bytes_and_counters_caans_calls_for() {
    let cases = common::fixtures("caans_coordinator_acceptor.json");
    let d = deploy::deployment(PaxosShape::default(), std::time::Duration::ZERO);
    let roles = Roles::of(&d, PaxosParams::default());
    let id = acceptor_id(&d);
    let mut coordinator = Node::new(&d, "coordinator", Coordinator::new(roles.coordinator()));
    let mut acceptor = Node::new(&d, ACCEPTOR, Acceptor::new(roles.acceptor(id)));
    let (mut ran_c, mut ran_a) = (0, 0);
    for case in &cases {
        match case.text("role") {
            "coordinator" => {
                coordinator.run(case);
                ran_c += 1;
            }
            "acceptor" => {
                acceptor.run(case);
                ran_a += 1;
            }
            other => panic!("{}: unknown role {other}", case.name),
        }
    }
    assert!(ran_c >= 8 && ran_a >= 12, "the fixtures are there: {ran_c} coordinator, {ran_a} acceptor cases");
}

/// The acceptor id of [`ACCEPTOR`].
fn acceptor_id(d: &deploy::PaxosDeployment) -> u16 {
    match d.nodes[d.find(ACCEPTOR).expect("in the deployment")].role {
        deploy::PaxosRole::Acceptor { id } => id,
        other => panic!("{ACCEPTOR} is a {other:?}"),
    }
}
