//! TPC-C's mix in the simulator: all five types commit and the store stays
//! consistent, and the figures' sweeps show the papers' directions. The
//! transactions' effects on a store are `crates/tpcc/tests/tpcc.rs`.

use innet_exp::tpcc_sim::{run_point, TpccConfig};
use innet_tpcc::Kind;
use innet_txn::Mode;

#[test]
fn a_simulated_mix_commits_all_five_types_and_stays_consistent() {
    for mode in [Mode::ReadCache, Mode::OptimisticAbort] {
        let cfg = TpccConfig { mode: mode.name().into(), duration_s: 120.0, rtt_ms: 20.0, ..TpccConfig::default() };
        let r = run_point(&cfg).unwrap();
        for k in Kind::ALL {
            assert!(r.per_type[k.name()].totals.committed > 0, "{mode}: no {} committed", k.name());
        }
        assert!(r.consistency_violations.is_empty(), "{mode}: {:?}", r.consistency_violations);
    }
}

/// The figures' sweeps on short runs: NOCC Figure 5's store CPU and
/// throughput ordering under contention, Gotthard Figure 14's Payment gain
/// shrinking as the switch moves to the store, and each figure's plot.
#[test]
fn the_figure_sweeps_show_the_papers_directions_and_plot() {
    use innet_exp::tpcc_bench::{configs, default_modes, run, write, Figure};
    let base = TpccConfig { duration_s: 20.0, ..TpccConfig::default() };
    let dir = std::env::temp_dir().join(format!("innet-tpcc-figs-{}", std::process::id()));
    let stop = innet_live::Stop::new();

    let nocc: Vec<TpccConfig> =
        configs(Figure::Nocc5, &TpccConfig { duration_s: 2.0, ..base.clone() }, &default_modes(Figure::Nocc5))
            .into_iter()
            .filter(|c| [1, 16].contains(&c.clients))
            .collect();
    let rs = run(innet_exp::Runtime::Sim, &nocc, &stop, |_| {}).unwrap();
    let at = |m: Mode, c: u32| rs.iter().find(|r| r.config.mode == m.name() && r.config.clients == c).unwrap();
    let (occ, no) = (at(Mode::Forward, 16), at(Mode::OptimisticAbort, 16));
    let cpu = |r: &innet_exp::tpcc_sim::TpccResult| r.store_cpu_pct.unwrap();
    assert!(cpu(no) < cpu(occ), "store CPU: NOCC {}% OCC {}%", cpu(no), cpu(occ));
    assert!(no.per_type["payment"].committed_per_s > occ.per_type["payment"].committed_per_s);
    assert!(cpu(at(Mode::Forward, 1)) > 0.0 && cpu(occ) > cpu(at(Mode::Forward, 1)), "CPU grows with load");
    assert!(rs.iter().all(|r| r.consistency_violations.is_empty() && r.config.items == 10));
    write(Figure::Nocc5, &base, &rs, &dir).unwrap();

    let f14: Vec<TpccConfig> = configs(Figure::Fig14, &base, &[Mode::ReadCache, Mode::OptimisticAbort])
        .into_iter()
        .filter(|c| c.only == Some(Kind::Payment) && c.clients == 8 && [0.1, 0.9].contains(&c.delta))
        .collect();
    let rs = run(innet_exp::Runtime::Sim, &f14, &stop, |_| {}).unwrap();
    let pay = |m: Mode, d: f64| {
        rs.iter().find(|r| r.config.mode == m.name() && r.config.delta == d).unwrap().per_type["payment"]
            .committed_per_s
    };
    assert!(pay(Mode::OptimisticAbort, 0.1) > 2.0 * pay(Mode::OptimisticAbort, 0.9));
    assert!(pay(Mode::OptimisticAbort, 0.9) >= pay(Mode::ReadCache, 0.9));
    write(Figure::Fig14, &base, &rs, &dir).unwrap();
    for f in ["tpcc-nocc5", "tpcc-fig14"] {
        let png = std::fs::read(dir.join(format!("{f}.png"))).unwrap();
        assert_eq!(&png[..4], b"\x89PNG");
        let jsonl = std::fs::read_to_string(dir.join(format!("{f}.jsonl"))).unwrap();
        let first: serde_json::Value = serde_json::from_str(jsonl.lines().next().unwrap()).unwrap();
        assert!(first["git_commit"].is_string() && first["seed"] == 1 && first["store_us_per_packet"].is_number());
    }
    std::fs::remove_dir_all(&dir).ok();
}
