//! Several switches on the path (Gotthard section 3.6, Figure 4): two groups
//! of clients, each behind its own optimistic-abort switch, both switches
//! behind a third one next to the store. Clients of both groups write the
//! same keys, so each edge switch holds stale speculation about the other
//! group's writes. Reference: "if clients connected to different switches
//! update data at the store, the correctness of Gotthard is not violated".

use std::time::Duration;

use innet_core::rng::Rng;
use innet_core::Time;
use innet_sim::{LinkSpec, Sim};
use innet_txn::check::check;
use innet_txn::client::{ClientConfig, TxnClient};
use innet_txn::workload::{LoadClient, Workload};
use innet_txn::{Mode, TxnStore, TxnSwitch};

#[test]
fn two_edge_switches_and_a_core_switch_stay_serializable() {
    for seed in 1..=5u64 {
        let mut rng = Rng::new(seed);
        let mut sim = Sim::new(rng.next_u64());
        let faulty = |ms: u64| LinkSpec {
            latency: Duration::from_millis(ms),
            jitter: Duration::from_millis(2),
            loss_probability: 0.02,
            duplicate_probability: 0.02,
            reorder_probability: 0.05,
        };
        let store = sim.add_host("store", TxnStore::in_memory().with_log());
        let core = sim.add_switch("core", TxnSwitch::with_defaults(Mode::OptimisticAbort));
        sim.link(core, store, faulty(1));
        sim.set_upstream(core, store);
        let workload = Workload {
            write_ratio: 0.6,
            keys: 4,
            zipf: 1.0,
            think_time: Duration::ZERO,
            span: 2,
            validated_reads: 0.3,
        };
        let stop = Time::from_secs_f64(5.0);
        let mut clients = vec![];
        let mut edges = vec![];
        for edge_no in 0..2u32 {
            let edge = sim.add_switch(&format!("edge{edge_no}"), TxnSwitch::with_defaults(Mode::OptimisticAbort));
            sim.link(edge, core, faulty(8));
            sim.set_upstream(edge, core);
            edges.push(edge);
            for i in 0..3u32 {
                let mut cfg = ClientConfig::new(1 + edge_no * 10 + i);
                cfg.timeout = Duration::from_millis(100);
                let lc =
                    LoadClient::new(TxnClient::new(cfg).with_history(), workload.clone(), rng.fork(), Time::ZERO, stop);
                let c = sim.add_host(&format!("client{edge_no}.{i}"), lc);
                sim.link(c, edge, faulty(2));
                sim.set_upstream(c, edge);
                clients.push(c);
            }
        }
        sim.run_until(stop + Duration::from_secs(5));

        let mut attempts = vec![];
        let mut committed = 0;
        for &c in &clients {
            let lc = sim.host::<LoadClient>(c).unwrap();
            attempts.extend_from_slice(lc.client.history.as_deref().unwrap());
            committed += lc.stats.committed;
        }
        let st = sim.host::<TxnStore>(store).unwrap();
        let summary = check(st.log.as_deref().unwrap(), &attempts, &st.snapshot())
            .unwrap_or_else(|e| panic!("seed {seed}: {:?}", &e[..e.len().min(5)]));
        assert!(committed > 100, "seed {seed}: only {committed} commits");
        assert!(summary.store_aborts > 0, "seed {seed}: the groups' writes should conflict at the store");
        for &e in &edges {
            let sw = sim.program::<TxnSwitch>(e).unwrap();
            assert!(sw.counters.optimistically_aborted > 0, "seed {seed}: edge switch never aborted");
        }
    }
}
