//! Gotthard Figure 11 and NOCC Figures 3 and 4 at a small scale: the
//! properties the papers' conclusions rest on, the records and the plots.

use innet_reproduce::txn_locality;
use innet_reproduce::{Ctx, Outcome, Runtime};

fn ctx(id: &str) -> Ctx {
    let out = std::env::temp_dir().join(format!("innet-txn-locality-{}-{id}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    Ctx { out, seed: 1, scale: 0.05, runtime: Runtime::Sim }
}

/// Each record of `o` as JSON, after checking that its files exist.
fn records(o: &Outcome) -> Vec<serde_json::Value> {
    for p in o.plots.iter().chain(&o.records) {
        assert!(std::fs::metadata(p).is_ok_and(|m| m.len() > 0), "{} missing or empty", p.display());
    }
    let text = std::fs::read_to_string(&o.records[0]).unwrap();
    let rs: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    for r in &rs {
        for field in ["seed", "git_commit", "mode", "switches", "rtt_ms", "write_ratio", "series", "x"] {
            assert!(r.get(field).is_some(), "record without {field}: {r}");
        }
    }
    rs
}

fn claim<'a>(o: &'a Outcome, what: &str) -> &'a innet_reproduce::Claim {
    o.claims.iter().find(|c| c.what.contains(what)).unwrap_or_else(|| panic!("no claim '{what}' in {:?}", o.claims))
}

#[test]
fn fig11_at_full_locality_gotthard_at_the_edges_beats_gotthard_at_the_core_only() {
    let c = ctx("fig11");
    let o = txn_locality::run_fig11(&c).unwrap();
    let rs = records(&o);
    assert_eq!(rs.len(), txn_locality::FIG11_SERIES.len() * txn_locality::FIG11_REMOTE.len());
    let thr = |series: &str, x: f64| {
        rs.iter()
            .find(|r| r["series"] == series && (r["x"].as_f64().unwrap() - x).abs() < 1e-9)
            .map(|r| r["committed_per_s"].as_f64().unwrap())
            .unwrap()
    };
    let (edges, core) = (thr("Gotthard", 1.0), thr("Gotthard at the core only", 1.0));
    assert!(edges > core, "locality 1: Gotthard at the edges {edges:.1}/s, at the core only {core:.1}/s");
    assert!(claim(&o, "at the edges over the core only").holds);
    // At full locality no client crosses to the other edge's keys: the
    // store aborts (nearly) nothing of the edges' Gotthard run, while at
    // locality 0.5 the remote clients' stale pending writes reach it.
    let store_aborts = |x: f64| {
        rs.iter()
            .find(|r| r["series"] == "Gotthard" && (r["x"].as_f64().unwrap() - x).abs() < 1e-9)
            .map(|r| r["store_aborts_sent"].as_u64().unwrap())
            .unwrap()
    };
    assert!(store_aborts(0.5) > 5 * store_aborts(1.0).max(1), "{} vs {}", store_aborts(0.5), store_aborts(1.0));
    // Every point ran on the tree described by its topology file.
    assert!(rs.iter().all(|r| r["topology"].as_str().is_some_and(|t| t.contains("name = \"edge1\""))));
    let _ = std::fs::remove_dir_all(&c.out);
}

#[test]
fn nocc_fig3_the_nocc_store_sends_fewer_aborts_than_the_occ_store() {
    let c = ctx("nocc3");
    let o = txn_locality::run_nocc3(&c).unwrap();
    let rs = records(&o);
    let [python, ours] = txn_locality::nocc_regimes(c.seed);
    // Every regime's seeds ran every point.
    assert_eq!(
        rs.len(),
        txn_locality::NOCC_SERIES.len() * txn_locality::NOCC3_CLIENTS.len() * (python.seeds.len() + ours.seeds.len())
    );
    let at = |mode: &str, clients: u64, store_us: f64| -> FigurePointView {
        let r = rs
            .iter()
            .find(|r| {
                r["mode"] == mode
                    && r["clients"].as_u64() == Some(clients)
                    && r["seed"].as_u64() == Some(c.seed)
                    && (r["store_us_per_packet"].as_f64().unwrap() - store_us).abs() < 1e-9
            })
            .unwrap();
        FigurePointView {
            aborts: r["store_aborts_sent"].as_u64().unwrap(),
            committed: r["committed"].as_u64().unwrap(),
            cpu: r["store_cpu_pct"].as_f64().unwrap(),
        }
    };
    for store_us in [python.store_us, ours.store_us] {
        for clients in [8, 40] {
            let (occ, nocc) = (at("forward", clients, store_us), at("optimistic-abort", clients, store_us));
            assert!(occ.committed > 0 && nocc.committed > 0);
            assert!(
                nocc.aborts * 2 < occ.aborts,
                "{clients} clients, store {store_us} us: the NOCC store sent {} aborts, the OCC store {}",
                nocc.aborts,
                occ.aborts
            );
            assert!(nocc.cpu < occ.cpu, "{clients} clients: store CPU NOCC {:.2}% OCC {:.2}%", nocc.cpu, occ.cpu);
        }
    }
    // The paper's regime: the OCC store saturated at 40 clients; ours idle.
    assert!(at("forward", 40, python.store_us).cpu > 90.0, "{}", at("forward", 40, python.store_us).cpu);
    assert!(at("forward", 40, ours.store_us).cpu < 20.0, "{}", at("forward", 40, ours.store_us).cpu);
    let counted = claim(&o, "NOCC / OCC, the highest over 2-40 clients (Python store");
    assert!(counted.holds && !counted.beside);
    assert_eq!(counted.spread.as_ref().map(|s| s.seeds), Some(python.seeds.len()));
    // The unsaturated run is shown beside, and counts neither way.
    let beside = claim(&o, "NOCC / OCC, the highest over 2-40 clients (our store");
    assert!(beside.beside && !beside.compared());
    assert_eq!(o.claim_counts().1, 3, "only the saturated regime's 3 claims count: {:?}", o.claims);
    let _ = std::fs::remove_dir_all(&c.out);
}

struct FigurePointView {
    aborts: u64,
    committed: u64,
    cpu: f64,
}

#[test]
fn nocc_fig4_nocc_gains_with_writes_and_costs_nothing_without() {
    let c = ctx("nocc4");
    let o = txn_locality::run_nocc4(&c).unwrap();
    let rs = records(&o);
    let [python, ours] = txn_locality::nocc_regimes(c.seed);
    assert_eq!(
        rs.len(),
        txn_locality::NOCC_SERIES.len()
            * (txn_locality::NOCC4_WRITE_RATIOS.len() + txn_locality::NOCC4_ZIPF.len())
            * (python.seeds.len() + ours.seeds.len())
    );
    for regime in ["Python store", "our store"] {
        let ratio = |w: &str| claim(&o, &format!("NOCC / OCC, {w} writes ({regime}")).ours;
        assert!(
            ratio("1.0") > ratio("0.2") && ratio("0.2") > 1.0,
            "{regime} 1.0: {} 0.2: {}",
            ratio("1.0"),
            ratio("0.2")
        );
        assert!((ratio("0") - 1.0).abs() < 0.05, "{regime} no writes: NOCC/OCC {}", ratio("0"));
    }
    // Every counted claim carries its spread over the seeds.
    assert!(o.claims.iter().filter(|c| c.compared()).all(|c| c.spread.as_ref().is_some_and(|s| s.seeds == 3)));
    let _ = std::fs::remove_dir_all(&c.out);
}
