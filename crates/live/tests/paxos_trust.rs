//! Forged Paxos packets from an outside socket against a live deployment
//! (software switches on loopback, real UDP): each is refused by the
//! receiving role's admission rule and counted by reason, and the service
//! goes on (values still delivered, both learners agree, nothing forged is
//! delivered).

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use innet_live::paxos::{LiveConfig, PaxosShape, Plan};
use innet_live::{clock, spawn_host, HostStats, NodeHandle, Stop};
use innet_paxos::trust::{forged, FORGED_PROPOSER};
use innet_paxos::workload::LoadProposer;
use innet_paxos::{DeliveryKind, Envelope, Learner, Proposer};
use innet_wire::paxos::{MsgType, PaxosMsg};

struct Run {
    plan: Plan,
    core: innet_live::paxos::Core,
    learners: Vec<NodeHandle<(Learner, HostStats)>>,
    proposer: NodeHandle<(LoadProposer, HostStats)>,
    /// The proposer's id (what a sniffed packet shows).
    proposer_id: u32,
    /// When the proposer stops submitting.
    end: innet_core::Time,
    outside: UdpSocket,
}

fn start(run_s: f64) -> Run {
    let stop = Stop::new();
    let cfg = LiveConfig { shape: PaxosShape { learners: 2, ..PaxosShape::default() }, ..LiveConfig::default() };
    let mut plan = Plan::bind(&cfg).unwrap();
    let core = plan.spawn_core(&stop).unwrap();
    let learners = (0..2)
        .map(|i| {
            let lcfg = innet_paxos::LearnerConfig { keep_log: true, ..cfg.learner_config(i as u16) };
            let (s, o) = (plan.take_learner_socket(i), plan.learner_options(i));
            spawn_host(&format!("learner{i}"), s, o, &stop, move || Learner::new(lcfg), |l, st| (l, st)).unwrap()
        })
        .collect();
    let pcfg = cfg.fresh_proposer_config(0);
    let end = clock::now() + Duration::from_secs_f64(run_s);
    let (s, o) = (plan.take_proposer_socket(0), plan.proposer_options());
    let make = move || LoadProposer::new(Proposer::new(pcfg), 4, end, false);
    let proposer = spawn_host("proposer0", s, o, &stop, make, |p, st| (p, st)).unwrap();
    let outside = UdpSocket::bind("127.0.0.1:0").unwrap();
    Run { plan, core, learners, proposer, proposer_id: pcfg.id, end, outside }
}

fn send(r: &Run, to: SocketAddr, bytes: &[u8]) {
    r.outside.send_to(bytes, to).unwrap();
}

fn commits(r: &Run) -> usize {
    // A cheap progress probe: the proposer's committed count is only
    // available at the end, so progress is read off the acceptors' votes.
    let a = &r.core.acceptors[0];
    match a {
        innet_live::paxos::ProgramNode::Switch(s) => s.with_program(|p| {
            use innet_core::Counters;
            p.counters().into_iter().find(|c| c.0 == "votes").map_or(0, |c| c.1 as usize)
        }),
        _ => 0,
    }
}

fn wait_for_votes(r: &Run, more_than: usize) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while commits(r) <= more_than {
        assert!(std::time::Instant::now() < deadline, "no progress: {} votes", commits(r));
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn rejected(st: &HostStats, reason: &str) -> u64 {
    st.rejected.get(reason).copied().unwrap_or(0)
}

fn coordinator_rejected(r: &Run, reason: &str) -> u64 {
    match &r.core.coordinator {
        innet_live::paxos::ProgramNode::Switch(s) => s.stats().rejected.get(reason).copied().unwrap_or(0),
        _ => unreachable!("switch deployment"),
    }
}

fn acceptor_rejected(r: &Run, i: usize, reason: &str) -> u64 {
    match &r.core.acceptors[i] {
        innet_live::paxos::ProgramNode::Switch(s) => s.stats().rejected.get(reason).copied().unwrap_or(0),
        _ => unreachable!("switch deployment"),
    }
}

/// The payload of forged REQUESTs.
const FORGED_PAYLOAD: &[u8] = b"forged";

/// Once the proposer stopped submitting and the learners caught up, stops
/// everything; checks both learners delivered the same sequence, nothing
/// forged ([`FORGED_PROPOSER`], [`FORGED_PAYLOAD`]) among it, at least
/// `min` values, and every value the proposer committed.
fn finish(r: Run, min: usize) -> (Vec<HostStats>, HostStats) {
    let drained = r.end + Duration::from_millis(300);
    while clock::now() < drained {
        std::thread::sleep(Duration::from_millis(10));
    }
    let Run { learners, proposer, core, plan: _plan, proposer_id, .. } = r;
    let (p, pst) = proposer.shutdown().unwrap();
    assert!(p.latencies_ns.len() >= min, "{} commits", p.latencies_ns.len());
    let mut logs = vec![];
    let mut stats = vec![];
    for (i, l) in learners.into_iter().enumerate() {
        let (l, st) = l.shutdown().unwrap();
        let own = l.log.iter().filter(|d| d.kind == DeliveryKind::Value);
        let own = own
            .filter_map(|d| Envelope::from_value(&d.value))
            .filter(|e| e.proposer == proposer_id && e.payload() != FORGED_PAYLOAD)
            .count();
        assert!(
            own >= p.latencies_ns.len(),
            "learner {i} delivered {own} of the proposer's {} commits",
            p.latencies_ns.len()
        );
        logs.push(l.log.iter().map(|d| (d.instance, d.value)).collect::<Vec<_>>());
        stats.push(st);
    }
    let n = logs[0].len().min(logs[1].len());
    assert!(n >= min, "{n} deliveries");
    assert_eq!(logs[0][..n], logs[1][..n], "the learners agree");
    for (_, v) in &logs[0] {
        let e = Envelope::from_value(v);
        assert_ne!(e.map(|e| e.proposer), Some(FORGED_PROPOSER), "a forged value was delivered");
        assert_ne!(e.as_ref().map(Envelope::payload), Some(FORGED_PAYLOAD), "a forged request was delivered");
    }
    core.backup.shutdown().expect("the backup ends without a panic");
    (stats, pst)
}

#[test]
fn a_decided_from_an_outside_socket_is_not_delivered() {
    let r = start(1.0);
    wait_for_votes(&r, 50);
    for (i, &l) in r.plan.learners.iter().enumerate() {
        for inst in 0..2000 {
            send(&r, l, &forged(MsgType::Decided, inst, 1, if i == 0 { b"one" } else { b"two" }));
        }
    }
    let (stats, _) = finish(r, 100);
    for st in &stats {
        assert_eq!(rejected(st, "untrusted_decided"), 2000, "{st:?}");
    }
}

#[test]
fn a_phase_2a_of_round_65535_to_two_acceptors_is_refused() {
    let r = start(1.0);
    wait_for_votes(&r, 50);
    let before = commits(&r) as u32;
    for a in 0..2 {
        for inst in before..before + 200 {
            send(&r, r.plan.acceptors[a], &forged(MsgType::Phase2A, inst, 0xffff, b"forged"));
        }
    }
    std::thread::sleep(Duration::from_millis(100));
    let counted = [acceptor_rejected(&r, 0, "untrusted_phase_2a"), acceptor_rejected(&r, 1, "untrusted_phase_2a")];
    assert_eq!(counted, [200, 200]);
    finish(r, 100);
}

#[test]
fn a_phase_1a_of_round_65535_for_upcoming_instances_does_not_stop_delivery() {
    let r = start(1.2);
    wait_for_votes(&r, 50);
    let next = commits(&r) as u32;
    for a in 0..3 {
        for inst in next..next + 500 {
            send(&r, r.plan.acceptors[a], &forged(MsgType::Phase1A, inst, 0xffff, b""));
        }
    }
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(acceptor_rejected(&r, 2, "untrusted_phase_1a"), 500);
    wait_for_votes(&r, next as usize + 600);
    finish(r, 300);
}

#[test]
fn a_window_to_a_learner_and_a_takeover_to_a_proposer_do_not_stop_commits() {
    let r = start(1.2);
    wait_for_votes(&r, 50);
    send(&r, r.plan.learners[0], &forged(MsgType::Window, u32::MAX, 0, b""));
    let mut t = PaxosMsg::new(MsgType::Takeover);
    t.rnd = innet_paxos::round(1, innet_paxos::ISSUER_BACKUP);
    send(&r, r.plan.proposers[0], &t.encode());
    let after = commits(&r);
    wait_for_votes(&r, after + 300);
    let (stats, pst) = finish(r, 300);
    assert_eq!(rejected(&stats[0], "untrusted_window"), 1);
    assert_eq!(rejected(&pst, "untrusted_takeover"), 1);
}

#[test]
fn a_vote_for_the_last_instance_sent_to_the_backup_does_not_crash_its_takeover() {
    let r = start(1.5);
    wait_for_votes(&r, 50);
    send(&r, r.plan.backup, &forged(MsgType::Phase2B, u32::MAX, 1, b"forged"));
    std::thread::sleep(Duration::from_millis(50));
    r.core.coordinator.stop();
    let t0 = clock::now();
    // The backup takes over and values commit through it.
    let after = commits(&r);
    wait_for_votes(&r, after + 100);
    assert!(clock::now().since(t0) < Duration::from_secs(5));
    assert!(!r.core.backup.is_finished(), "the backup is still running");
    finish(r, 100);
}

#[test]
fn requests_in_a_proposers_name_from_an_outside_socket_do_not_make_learners_drop_its_values() {
    // Hostile round 2 (issue 21): learners filter duplicates by the
    // envelope's (proposer, request), which the sender writes. REQUESTs
    // from any socket with the real proposer's id (one sniffed packet
    // shows it) and request numbers ahead of its own were ordered and
    // delivered, and both learners then dropped the proposer's own values
    // with those numbers as duplicates.
    const FORGED_REQUESTS: u32 = 3000;
    let r = start(1.5);
    wait_for_votes(&r, 50);
    for k in 0..FORGED_REQUESTS {
        let mut m = PaxosMsg::new(MsgType::Request);
        m.value = Envelope::new(r.proposer_id, 1 + k, FORGED_PAYLOAD).unwrap().to_value();
        send(&r, r.plan.coordinator, &m.encode());
        if k % 100 == 99 {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    std::thread::sleep(Duration::from_millis(100));
    let refused = coordinator_rejected(&r, "foreign_proposer");
    let (stats, _) = finish(r, 300);
    assert_eq!(refused, FORGED_REQUESTS as u64, "the coordinator refuses every forged request");
    for st in &stats {
        assert_eq!(rejected(st, "foreign_proposer"), 0, "learners never see them");
    }
}

#[test]
fn requests_sent_to_the_backup_before_it_takes_over_are_not_ordered_after_failover() {
    // Hostile round 2 (issue 21): the backup queued every REQUEST it got
    // before a takeover, from anyone and without limit, and ordered them
    // first once the coordinator failed. Proposers send to the backup only
    // after its TAKEOVER, so these are not a proposer's: they are dropped
    // and counted. (Sent with ids of the outsiders' block, which any
    // sender may use.)
    const EARLY: u64 = 500;
    let r = start(1.5);
    wait_for_votes(&r, 50);
    for k in 0..EARLY as u32 {
        let mut m = PaxosMsg::new(MsgType::Request);
        m.value = Envelope::new(7, 1 + k, FORGED_PAYLOAD).unwrap().to_value();
        send(&r, r.plan.backup, &m.encode());
    }
    let backup = |name: &str| {
        let (own, _) = r.core.backup.live().read();
        own.into_iter().find(|(k, _)| *k == name).map_or(0, |(_, v)| v)
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while backup("requests_before_takeover") < EARLY && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    r.core.coordinator.stop();
    let after = commits(&r);
    wait_for_votes(&r, after + 100);
    let (took_over, early) = (backup("took_over"), backup("requests_before_takeover"));
    finish(r, 100);
    assert_eq!(took_over, 1);
    assert_eq!(early, EARLY, "every early request dropped and counted");
}
