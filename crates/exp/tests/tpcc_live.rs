//! TPC-C on the live runtime, against a real store and switch on loopback
//! UDP: loading the store over the wire and reading it back, and closed-loop
//! terminals in every mode, with TPC-C's consistency conditions over the
//! database read back after the run.

use innet_exp::tpcc_live::{populate, read_db, run_point_live, LiveSending};
use innet_exp::tpcc_sim::TpccConfig;
use innet_live::txn::{start_local, LocalConfig};
use innet_live::Stop;
use innet_tpcc::{check_consistency, initial_db, Kind, Scale};
use innet_txn::Mode;

#[test]
fn the_store_loaded_over_the_wire_reads_back_as_the_initial_database() {
    let stop = Stop::new();
    let net = start_local(&LocalConfig::new(Mode::OptimisticAbort), &stop).unwrap();
    let scale = Scale { warehouses: 2, districts: 2, customers: 5, items: 12 };
    let via_switch = LiveSending::new(net.switch_addr());
    let (records, txns) = populate(&via_switch, &scale, 4, 1, &stop).unwrap();
    let want = initial_db(&scale, 4);
    assert_eq!(records, want.len());
    assert_eq!(txns, want.len().div_ceil(7), "write-only transactions of at most 7 ops");
    let direct = LiveSending::new(net.store_addr()).from_socket(net.operator().unwrap());
    let got = read_db(&direct, &scale, 2, &stop).unwrap();
    assert_eq!(got, want);
    assert!(check_consistency(&scale, &got).is_empty());
    let report = net.shutdown().unwrap();
    assert!(report.store.counters.committed as usize >= txns, "{:?}", report.store.counters);
}

#[test]
fn live_terminals_in_every_mode_commit_and_leave_a_consistent_database() {
    for mode in Mode::ALL {
        let cfg = TpccConfig {
            mode: mode.name().into(),
            clients: 4,
            rtt_ms: 4.0,
            duration_s: 1.5,
            seed: 3,
            ..TpccConfig::default()
        };
        let r = run_point_live(&cfg, &Stop::new()).unwrap();
        assert_eq!(r.runtime, innet_exp::Runtime::Live);
        assert!(r.consistency_violations.is_empty(), "{mode}: {:?}", r.consistency_violations);
        let committed: u64 = r.per_type.values().map(|t| t.totals.committed).sum();
        assert!(committed > 20, "{mode}: {committed} committed");
        for k in [Kind::NewOrder, Kind::Payment] {
            assert!(r.per_type[k.name()].totals.committed > 0, "{mode}: no {}", k.name());
        }
        let cpu = r.store_cpu_pct.expect("the store answers CPU_PCT");
        assert!((0.0..=100.0).contains(&cpu), "{mode}: store cpu {cpu}%");
        assert!(
            r.store_packets >= r.store_requests,
            "{mode}: packets {} requests {}",
            r.store_packets,
            r.store_requests
        );
    }
}

#[test]
fn a_live_payment_only_point_runs_and_the_switch_answers_in_optimistic_abort_mode() {
    let cfg =
        TpccConfig { only: Some(Kind::Payment), clients: 6, rtt_ms: 10.0, duration_s: 2.0, ..TpccConfig::default() };
    let r = run_point_live(&cfg, &Stop::new()).unwrap();
    assert!(r.consistency_violations.is_empty(), "{:?}", r.consistency_violations);
    let p = &r.per_type["payment"].totals;
    assert!(p.committed > 10 && p.aborts_by_switch > 0, "{p:?}");
    assert_eq!(r.per_type["new-order"].totals.started, 0);
}
