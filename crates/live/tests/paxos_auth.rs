//! `--auth-key` on a live Paxos deployment (software switches on loopback,
//! real UDP; issue 21 item 3): a raw socket that spoofs the proposer's
//! address and sends REQUESTs in its name gets them ordered and delivered
//! without keys (the address is all the admission rules can see), and
//! refused with them (no MAC trailer: `auth_no_trailer`), while the
//! proposer's own sealed values are still delivered.
//!
//! Needs root for the raw socket; without it the test says so on stderr
//! (`SKIPPED: ...`) and fails under `CI=true`.

mod common;

use std::os::fd::AsRawFd;
use std::time::Duration;

use common::{raw_socket_or_skip, spoof};

use innet_core::auth::{AuthKeys, Key};
use innet_live::auth::PeerAuth;
use innet_live::paxos::{LiveConfig, PaxosShape, Plan, ProgramNode};
use innet_live::{clock, spawn_host, Stop};
use innet_paxos::workload::LoadProposer;
use innet_paxos::{DeliveryKind, Envelope, Learner, Proposer};
use innet_wire::paxos::{MsgType, PaxosMsg};

/// Spoofed REQUESTs sent per run.
const SPOOFED: u32 = 500;
const SPOOFED_PAYLOAD: &[u8] = b"spoofed";

/// Runs a deployment (one proposer for 1 s, two learners) with `auth`,
/// spoofs [`SPOOFED`] REQUESTs from the proposer's address once values
/// flow; what the coordinator refused for its MAC trailer (`auth_*`), how many
/// spoofed values the learners delivered, and the proposer's own values
/// they delivered against its commits.
fn run(raw: &impl AsRawFd, auth: Option<AuthKeys>) -> (u64, usize, (usize, usize)) {
    let stop = Stop::new();
    let auth = auth.map(PeerAuth::all);
    let cfg = LiveConfig { shape: PaxosShape { learners: 2, ..PaxosShape::default() }, auth, ..LiveConfig::default() };
    let mut plan = Plan::bind(&cfg).unwrap();
    let core = plan.spawn_core(&stop).unwrap();
    let learners: Vec<_> = (0..2)
        .map(|i| {
            let lcfg = innet_paxos::LearnerConfig { keep_log: true, ..cfg.learner_config(i as u16) };
            let (s, o) = (plan.take_learner_socket(i), plan.learner_options(i));
            spawn_host(&format!("learner{i}"), s, o, &stop, move || Learner::new(lcfg), |l, _| l).unwrap()
        })
        .collect();
    let pcfg = cfg.fresh_proposer_config(0);
    let end = clock::now() + Duration::from_secs(1);
    let (s, o) = (plan.take_proposer_socket(0), plan.proposer_options());
    let proposer =
        spawn_host("proposer0", s, o, &stop, move || LoadProposer::new(Proposer::new(pcfg), 4, end, false), |p, _| p)
            .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    for k in 0..SPOOFED {
        let mut m = PaxosMsg::new(MsgType::Request);
        m.value = Envelope::new(pcfg.id, 1_000_000 + k, SPOOFED_PAYLOAD).unwrap().to_value();
        spoof(raw, plan.proposers[0], plan.coordinator, &m.encode());
    }
    while clock::now() < end + Duration::from_millis(300) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let commits = proposer.shutdown().unwrap().latencies_ns.len();
    let refused = match &core.coordinator {
        ProgramNode::Switch(s) => {
            s.stats().rejected.iter().filter(|(r, _)| r.starts_with("auth_")).map(|(_, n)| n).sum()
        }
        _ => unreachable!("switch deployment"),
    };
    let (mut spoofed, mut own) = (0, usize::MAX);
    for l in learners {
        let l = l.shutdown().unwrap();
        let values =
            l.log.iter().filter(|d| d.kind == DeliveryKind::Value).filter_map(|d| Envelope::from_value(&d.value));
        let (s, o): (Vec<Envelope>, Vec<Envelope>) = values.partition(|e| e.payload() == SPOOFED_PAYLOAD);
        spoofed = spoofed.max(s.len());
        own = own.min(o.iter().filter(|e| e.proposer == pcfg.id).count());
    }
    core.backup.shutdown().unwrap();
    (refused, spoofed, (own, commits))
}

#[test]
fn a_raw_socket_spoof_of_the_proposers_address_is_refused_with_auth_keys_and_ordered_without() {
    let Some(raw) = raw_socket_or_skip("paxos_auth") else { return };
    let (refused, unkeyed, (own, commits)) = run(&raw, None);
    assert_eq!(refused, 0);
    assert!(unkeyed > 0, "without keys the spoofed requests are ordered and delivered (the hole --auth-key closes)");
    assert!(own >= commits, "{own} of {commits}");
    let keys = AuthKeys::new(vec![Key { id: 1, bytes: *b"innet paxos key!" }]).unwrap();
    let (refused, spoofed, (own, commits)) = run(&raw, Some(keys));
    assert_eq!((refused, spoofed), (SPOOFED as u64, 0), "with keys every spoofed request is refused");
    assert!(commits > 100 && own >= commits, "the proposer's values are delivered: {own} of {commits}");
    eprintln!(
        "AUTH paxos live: {SPOOFED} spoofed REQUESTs from the proposer's address: without keys {unkeyed} delivered, \
         with keys {refused} refused (auth_*), 0 delivered; the proposer's {commits} commits delivered"
    );
}
