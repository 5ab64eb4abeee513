//! The live runtime's delay emulation, as behaviour (not a benchmark): a
//! round trip through client delay d_cs and store delay d_ss takes at least
//! 2 * (d_cs + d_ss), and not wildly more.

use std::time::{Duration, Instant};

use innet_live::txn::{run_load, run_txn, start_local, LoadConfig, LocalConfig};
use innet_live::Stop;
use innet_txn::workload::Workload;
use innet_txn::{ClientConfig, Mode, Txn};

const D_CS: Duration = Duration::from_millis(15);
const D_SS: Duration = Duration::from_millis(30);

#[test]
fn round_trip_through_both_delays() {
    let stop = Stop::new();
    let mut cfg = LocalConfig::new(Mode::Forward);
    cfg.switch.store_delay = D_SS;
    let net = start_local(&cfg, &stop).unwrap();
    let floor = 2 * (D_CS + D_SS);
    for key in 1..=3 {
        let t0 = Instant::now();
        let c = run_txn(net.switch_addr(), Txn::Read(vec![key]), ClientConfig::new(key), D_CS, &stop)
            .unwrap()
            .expect("finished");
        let wall = t0.elapsed();
        assert!(c.committed());
        assert_eq!(c.attempts, 1);
        assert!(c.latency() >= floor, "latency {:?} below {floor:?}", c.latency());
        assert!(c.latency() < floor + Duration::from_millis(150), "latency {:?} far above {floor:?}", c.latency());
        assert!(wall >= floor);
    }
    net.shutdown().unwrap();
}

#[test]
fn load_clients_see_the_delays_and_commit() {
    let stop = Stop::new();
    let mut cfg = LocalConfig::new(Mode::OptimisticAbort);
    cfg.switch.store_delay = Duration::from_millis(5);
    let net = start_local(&cfg, &stop).unwrap();
    let workload =
        Workload { write_ratio: 0.5, keys: 4, zipf: 0.0, think_time: Duration::ZERO, span: 1, validated_reads: 0.0 };
    let mut load = LoadConfig::new(net.switch_addr(), workload);
    load.clients = 4;
    load.duration = Duration::from_millis(800);
    load.client_delay = Duration::from_millis(5);
    load.timeout = Duration::from_millis(500);
    let r = run_load(&load, &stop).unwrap();
    assert!(r.stats.committed > 10, "committed {}", r.stats.committed);
    assert_eq!(r.stats.committed, r.stats.committed_reads + r.stats.committed_writes);
    assert_eq!(r.stats.gave_up, 0);
    assert!(r.run <= Duration::from_millis(800) && r.wall >= r.run);
    // A transaction answered by the switch crosses only the client link
    // (2 * 5 ms); one answered by the store crosses both (2 * 10 ms).
    let min = *r.stats.latencies_ns.iter().min().unwrap();
    assert!(min >= 10_000_000, "fastest transaction {min} ns beat the client link");
    // One consistent snapshot of the switch's counters (taken under its lock).
    let counters: std::collections::HashMap<String, u64> = net.switch_counters().into_iter().collect();
    let c = |name: &str| counters.get(name).copied().unwrap_or_else(|| panic!("no switch counter {name}"));
    let answered = ["aborted", "optimistically_aborted", "served_from_cache", "confirmed"];
    let refused = ["refused_duplicate", "refused_stale"];
    let by_switch: u64 = answered.iter().chain(&refused).map(|n| c(n)).sum();
    // Gotthard section 3.3: the switch forwards a request or answers it itself, never both.
    assert_eq!(c("requests"), c("forwarded") + by_switch, "every request decided exactly once: {counters:?}");
    // Every attempt of a transaction that finished was one request through the switch.
    let attempts = r.stats.committed + r.stats.aborts_by_switch + r.stats.aborts_by_store;
    assert!(c("requests") >= attempts, "{} requests for {attempts} attempts: {counters:?}", c("requests"));
    // Aborts the clients counted as the switch's are aborts the switch made.
    let switch_aborts = c("aborted") + c("optimistically_aborted");
    assert!(switch_aborts >= r.stats.aborts_by_switch, "{switch_aborts} < {}", r.stats.aborts_by_switch);
    // Nobody else sends to this switch: no duplicate or stale request.
    assert_eq!(refused.iter().map(|n| c(n)).sum::<u64>(), 0, "{counters:?}");
    assert_eq!(c("live_dropped_no_route"), 0);
    net.shutdown().unwrap();
}
