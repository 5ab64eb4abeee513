//! Several switches on the path (Gotthard section 3.6, Figure 4), built from
//! the transaction service's deployment description: client groups, each
//! behind its own edge switch, the edges under a core switch in front of
//! the store; every switch runs optimistic-abort. Reference: "if clients
//! connected to different switches update data at the store, the
//! correctness of Gotthard is not violated", and an edge switch aborts what
//! it can decide locally.

use std::time::Duration;

use innet_core::deploy::Node;
use innet_core::{Dest, Host, Outbox, Time};
use innet_exp::txn::TxnPointConfig;
use innet_exp::txn_sim::{build, run_checked};
use innet_sim::{LinkSpec, Sim, SimNode};
use innet_txn::deploy::{self, SwitchSpec, TxnRole};
use innet_txn::workload::LoadClient;
use innet_txn::{Mode, TxnStore, TxnSwitch};
use innet_wire::txn::{Op, Status, TxnMsg, Value};

#[test]
fn clients_behind_both_edges_commit_and_the_history_is_serializable() {
    for seed in 1..=5u64 {
        let cfg = TxnPointConfig {
            edge_switches: 2,
            clients: 6,
            keys: 4,
            span: 2,
            write_ratio: 0.6,
            validated_reads: 0.3,
            rtt_ms: 20.0,
            faults: innet_exp::faults::Faults { jitter_ms: 2.0, loss: 0.02, duplicate: 0.02, reorder: 0.05 },
            duration_s: 5.0,
            seed,
            ..TxnPointConfig::default()
        };
        let run = run_checked(&cfg).unwrap();
        let summary = run.result.unwrap_or_else(|e| panic!("seed {seed}: {:?}", &e[..e.len().min(5)]));
        // Beside the faults, run_checked's replayers cost commits: a replayed
        // request turns a switch's reverse path for its client towards the
        // replayer until the client sends again (a timeout and a resend).
        assert!(summary.store_commits > 50, "seed {seed}: only {} store commits", summary.store_commits);

        let mut t = build(&cfg, false).unwrap();
        t.sim.run_until(Time::from_secs_f64(cfg.duration_s));
        for group in ["clients0", "clients1"] {
            let committed: u64 = t
                .deployment
                .machines()
                .into_iter()
                .filter(|(m, _)| m == group)
                .flat_map(|(_, nodes)| nodes)
                .map(|i| t.sim.host::<LoadClient>(t.sim_id(i)).unwrap().stats.committed)
                .sum();
            assert!(committed > 20, "seed {seed}: clients behind {group} committed only {committed}");
        }
        for edge in ["edge0", "edge1"] {
            let e = t.sim_id(t.deployment.find(edge).unwrap());
            let aborted = t.sim.program::<TxnSwitch>(e).unwrap().counters.optimistically_aborted;
            assert!(aborted > 0, "seed {seed}: {edge} never aborted");
        }
    }
}

/// Sends scripted packets at scripted times; records what comes back.
struct Script {
    sends: Vec<(Time, Vec<u8>)>,
    received: Vec<(Time, TxnMsg)>,
}

impl Host for Script {
    fn on_packet(&mut self, now: Time, packet: &[u8], _out: &mut Outbox) {
        self.received.push((now, TxnMsg::decode(packet).expect("replies decode")));
    }
    fn on_tick(&mut self, now: Time, out: &mut Outbox) {
        while self.sends.first().is_some_and(|(t, _)| *t <= now) {
            let (_, p) = self.sends.remove(0);
            out.send(Dest::Upstream, p);
        }
    }
    fn next_tick(&self) -> Option<Time> {
        self.sends.first().map(|(t, _)| *t)
    }
}

fn v(s: &str) -> Value {
    Value::from_str_padded(s).unwrap()
}

fn ms(x: f64) -> Time {
    Time::from_secs_f64(x / 1e3)
}

/// Gotthard section 3.6: two clients behind the same edge switch write the
/// same key; the second one's stale compare is aborted by the edge switch
/// from the first one's pending write, after one client-edge round trip,
/// and neither the core switch nor the store ever sees it.
#[test]
fn a_conflict_behind_one_edge_is_aborted_at_that_edge() {
    let oa = SwitchSpec::new(Mode::OptimisticAbort);
    let d =
        deploy::tree(&[2, 1], oa, oa, Duration::from_millis(5), Duration::from_millis(20), Duration::from_millis(1));
    let rw = |cl: u32, id: i32, from: &str, to: &str| {
        TxnMsg::request(cl, id, vec![Op::value(1, v(from)), Op::write(1, v(to))]).encode()
    };
    let ids = deploy::client_ids(&d);
    let mut sim = Sim::new(1);
    let make = |i: usize, n: &Node<TxnRole>| match &n.role {
        TxnRole::Store => SimNode::host(TxnStore::in_memory()),
        TxnRole::Switch(s) => SimNode::switch(TxnSwitch::new(s.mode, s.cache_slots, 64)),
        TxnRole::Client => {
            let sends = match n.name.as_str() {
                // Both clients of edge 0 believe key 1 holds "" and write it.
                "clients0.0" => vec![(ms(0.0), rw(ids[i], 1, "", "a"))],
                "clients0.1" => vec![(ms(1.0), rw(ids[i], 1, "", "b"))],
                _ => vec![(ms(200.0), rw(ids[i], 1, "a", "c"))],
            };
            SimNode::host(Script { sends, received: vec![] })
        }
    };
    let nodes = sim.instantiate(&d, make, LinkSpec::latency);
    sim.run_until(ms(1000.0));

    let got = |name: &str| &sim.host::<Script>(nodes[d.find(name).unwrap()]).unwrap().received;
    let first = got("clients0.0");
    assert_eq!((first.len(), first[0].1.status, first[0].1.flags.from_switch()), (1, Status::Ok, false));
    let second = got("clients0.1");
    assert_eq!(second.len(), 1);
    let (at, m) = &second[0];
    assert_eq!((m.status, m.flags.from_switch()), (Status::OptimisticAbort, true), "{m:?}");
    assert_eq!(m.ops[0], Op::value(1, v("a")), "the abort carries the pending write");
    assert_eq!(*at, ms(1.0 + 10.0), "answered one client-edge round trip after sending");
    // The client behind the other edge commits on the value the first wrote.
    let other = got("clients1.0");
    assert_eq!((other.len(), other[0].1.status), (1, Status::Ok), "{other:?}");

    let counter = |name: &str| {
        let sw = sim.program::<TxnSwitch>(nodes[d.find(name).unwrap()]).unwrap();
        (sw.counters.optimistically_aborted, sw.counters.requests)
    };
    assert_eq!(counter("edge0"), (1, 2), "edge0 saw both requests and aborted one");
    assert_eq!(counter("core"), (0, 2), "only the two transactions that commit reach the core");
    assert_eq!(sim.host::<TxnStore>(nodes[0]).unwrap().get(1), v("c"));
}

/// The shipped two-edge tree file, run as `innet sim txn --topology` runs
/// it: the result's per-node breakdown shows commits behind both edges and
/// optimistic aborts counted at each edge switch.
#[test]
fn the_tree_file_reports_commits_and_aborts_per_edge() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/topology-txn-tree.toml");
    let cfg =
        TxnPointConfig { topology: Some(path.into()), write_ratio: 0.5, duration_s: 20.0, ..TxnPointConfig::default() };
    let cfg = cfg.resolved().expect("the example file resolves");
    let r = innet_exp::txn_sim::run_point_sim(&cfg).unwrap();
    for group in ["clients0", "clients1"] {
        assert!(r.per_node[group]["committed"] > 0, "{group}: {:?}", r.per_node[group]);
    }
    for edge in ["edge0", "edge1"] {
        assert!(r.per_node[edge]["optimistically_aborted"] > 0, "{edge}: {:?}", r.per_node[edge]);
    }
    let behind: u64 = ["clients0", "clients1"].iter().map(|g| r.per_node[*g]["committed"]).sum();
    assert_eq!(behind, r.committed, "the groups' commits add up to the run's");
}

/// Every switch of the two-edge tree runs optimistic-abort and the clients
/// behind both edges contend for the same few keys (20% writes, Zipf 3 over
/// 10 keys, reads as compare-only transactions, as Gotthard Figure 11's
/// contended points). A request the core
/// switch aborts never reaches the store, so no store reply corrects the
/// edge that forwarded it: before an edge acted on the core's abort, the
/// edge's pending write and stale value made the edge and the core abort
/// each retry in turn, and transactions gave up after 1,000 attempts.
#[test]
fn a_tree_of_optimistic_abort_switches_does_not_livelock() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/topology-txn-tree.toml");
    let cfg = TxnPointConfig {
        topology: Some(path.into()),
        write_ratio: 0.2,
        keys: 10,
        zipf: 3.0,
        validated_reads: 1.0,
        duration_s: 180.0,
        ..TxnPointConfig::default()
    };
    let cfg = cfg.resolved().expect("the example file resolves");
    let r = innet_exp::txn_sim::run_point_sim(&cfg).unwrap();
    // Before: 8 gave up, and the clients behind edge1 committed 320.
    assert_eq!(r.gave_up, 0, "transactions gave up after {} attempts: {:?}", cfg.retry_limit, r.per_node);
    for group in ["clients0", "clients1"] {
        assert!(r.per_node[group]["committed"] > 2000, "{group}: {:?}", r.per_node[group]);
    }
    for edge in ["edge0", "edge1"] {
        assert!(r.per_node[edge]["forgot_on_upstream_switch_abort"] > 0, "{edge}: {:?}", r.per_node[edge]);
    }
}
