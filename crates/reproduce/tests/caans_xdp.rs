//! The XDP variants of CAANS Figures 7a, 7b, 7d, 8 and Table 4
//! (`innet reproduce --xdp`, `innet_reproduce::caans_xdp`) at a small
//! scale, each run once through the report's runner as the command runs
//! it: every result ran on the XDP testbed and says so, its records name
//! the XDP data plane with seed and commit, learner 0 delivered every
//! value the proposer saw committed, after a failure the deployment went
//! on committing (the backup took over from the failed coordinator), in
//! Figure 7d every LevelDB replica applied every committed command once
//! and the replicas are identical, and the summary shows the simulator's
//! figure (Figure 7d: the live one) beside the XDP one.
//!
//! Needs root and the `xdp` feature (`cargo test --release -p
//! innet-reproduce --features xdp --test caans_xdp`); it brings the
//! `paxos` testbed up and down: run it under `flock /tmp/innet-xdp.lock`.
//! Without root: `SKIPPED: ...` on stderr, a failure under `CI=true`.
#![cfg(feature = "xdp")]

use innet_reproduce::caans_xdp::KV_SWEEP;
use innet_reproduce::entry::LIVE_FIGURE_BESIDE;
use innet_reproduce::report::{self, Options};
use innet_reproduce::{entries, Obtained, Runtime};

const IDS: [&str; 5] = ["caans-fig7a", "caans-fig7b", "caans-table4", "caans-fig8", "caans-fig7d"];

/// A record's configuration: a `config` object, or flattened into the record.
fn config(v: &serde_json::Value) -> &serde_json::Value {
    if v["config"].is_object() {
        &v["config"]
    } else {
        v
    }
}

fn records(path: &std::path::Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines().map(|l| serde_json::from_str(l).expect("a JSON record")).collect()
}

#[test]
fn the_caans_results_run_on_the_xdp_testbed_beside_the_simulator() {
    if let Some(why) = innet_xdp::paxos::unavailable() {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI must run the XDP variants: {why}");
        eprintln!("SKIPPED: {why}");
        return;
    }
    let out = std::env::temp_dir().join(format!("innet-reproduce-xdp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let opts = Options {
        out: out.clone(),
        only: Some(IDS.iter().map(|s| s.to_string()).collect()),
        scale: 0.05,
        seed: 5,
        runtime: Runtime::Xdp,
    };
    let all = entries();
    let selected = report::select(&all, &opts).expect("ids");
    let ran = report::run(&selected, &opts, |_| {});
    report::write_report(&opts, &all, &ran, 0.0).expect("report");
    assert_eq!(ran.len(), IDS.len());
    for r in &ran {
        let o = r.outcome.as_ref().unwrap_or_else(|e| panic!("{} failed: {e}", r.id));
        assert_eq!(o.ran_on, Runtime::Xdp, "{}", r.id);
        assert_eq!(o.obtained, Obtained::Xdp, "{}", r.id);
        assert!(o.claim_counts().1 > 0, "{}: no claim compared", r.id);
        // The simulator's figure for the same claim, beside ours, not counted.
        let sim = o.sim_headline.as_ref().unwrap_or_else(|| panic!("{}: no simulator figure", r.id));
        assert!(sim.beside && sim.what.ends_with(&o.claims[0].what), "{}: {sim:?}", r.id);
        // Figure 7d: the simulator does not model LevelDB; the live figure.
        let beside = if r.id == "caans-fig7d" { LIVE_FIGURE_BESIDE } else { "simulator" };
        assert!(sim.what.starts_with(beside), "{}: {sim:?}", r.id);
        assert!(o.claims.iter().any(|c| c.beside && c.what.starts_with(beside)), "{}", r.id);
        assert!(o.why.as_deref().is_some_and(|w| w.contains("no hardware switch")), "{}: {:?}", r.id, o.why);
        for c in o.claims.iter().filter(|c| c.compared()) {
            assert!(c.ours.is_finite() && c.ours > 0.0, "{}: {c:?}", r.id);
        }
        for p in o.plots.iter().chain(&o.records) {
            assert!(std::fs::metadata(p).map(|m| m.len() > 0).unwrap_or(false), "{}: {} missing", r.id, p.display());
        }
        // Every XDP record: the XDP data plane, the run's seed, a commit;
        // learner 0 delivered every value the proposer saw committed.
        let recs: Vec<serde_json::Value> = o.records.iter().flat_map(|p| records(p)).collect();
        let xdp: Vec<&serde_json::Value> = recs.iter().filter(|v| v["runtime"] == "xdp-testbed").collect();
        assert!(!xdp.is_empty(), "{}: no XDP record", r.id);
        for v in &xdp {
            assert_eq!(config(v)["data_plane"], "xdp", "{}: {v}", r.id);
            assert_eq!(config(v)["seed"], 5, "{}", r.id);
            assert!(!v["git_commit"].as_str().unwrap_or("").is_empty(), "{}", r.id);
            let (committed, delivered) = (v["committed"].as_u64().unwrap(), v["delivered"].as_u64().unwrap());
            assert!(committed > 0 && delivered >= committed, "{}: committed {committed}, delivered {delivered}", r.id);
        }
        // Both deployments at every point of the sweep; the failures; the
        // replicas.
        if r.id == "caans-fig7d" {
            check_replicas(&xdp, &recs);
        } else if r.id == "caans-fig8" {
            assert_eq!(xdp.len(), 2, "{}: acceptor and coordinator failure", r.id);
            let coord = xdp.iter().find(|v| config(v)["coordinator_fail_at_s"].is_number()).expect("coordinator run");
            assert!(coord["takeover_at_s"].is_number(), "the backup took over: {coord}");
            assert!(o.claims[1].ours > 0.0, "committing after the coordinator failed: {:?}", o.claims[1]);
            assert!(o.claims[0].ours > 0.0, "committing after acceptor 0 failed: {:?}", o.claims[0]);
        } else {
            assert_eq!(xdp.len(), innet_reproduce::caans_xdp::SWEEP.len(), "{}", r.id);
            assert_eq!(recs.iter().filter(|v| config(v)["data_plane"] == "process").count(), xdp.len());
        }
    }
    // The summary: the XDP figure and the simulator's side by side.
    let md = std::fs::read_to_string(out.join("REPORT.md")).expect("REPORT.md");
    for id in IDS {
        let row = md.lines().find(|l| l.starts_with(&format!("| [{id}](#{id}) |"))).expect("a summary row");
        let cells: Vec<&str> = row.split(" | ").collect();
        assert!(row.contains("measured on XDP"), "{row}");
        // ... | paper | ours | simulator | ratio | ...
        assert!(cells[7] != "-" && cells[6] != "-", "{id}: no side by side: {row}");
        assert_eq!(cells[7].ends_with("(live)"), id == "caans-fig7d", "{row}");
    }
    assert!(md.contains("**Side by side:**"));
    let _ = std::fs::remove_dir_all(&out);
}

/// Figure 7d's XDP records: at every point of the sweep CAANS with LevelDB
/// replicas and without, libpaxos-style with replicas beside; on each XDP
/// run with replicas, every replica applied every committed command once
/// (no request twice, none unsubmitted, its store what replaying its
/// commands gives) and the replicas are identical.
fn check_replicas(xdp: &[&serde_json::Value], recs: &[serde_json::Value]) {
    let kv: Vec<&&serde_json::Value> = xdp.iter().filter(|v| config(v)["kv"] == true).collect();
    assert_eq!(kv.len(), KV_SWEEP.len(), "an XDP run with replicas at every point");
    assert_eq!(xdp.len() - kv.len(), KV_SWEEP.len(), "an XDP run without replicas at every point");
    let software = recs.iter().filter(|v| config(v)["data_plane"] == "process" && config(v)["kv"] == true);
    assert!(software.count() >= KV_SWEEP.len(), "libpaxos-style with replicas at every point");
    for v in kv {
        assert_eq!(v["identical"], true, "{v}");
        assert_eq!(v["applied_once"], true, "{v}");
        let committed = v["committed"].as_u64().unwrap();
        let replicas = v["replicas"].as_array().expect("replicas");
        assert_eq!(replicas.len(), config(v)["learners"].as_u64().unwrap() as usize, "{v}");
        for r in replicas {
            assert!(r["applied"].as_u64().unwrap() >= committed && committed > 0, "{r}");
            assert_eq!(r["applied_twice"], 0, "{r}");
            assert_eq!(r["not_submitted"], 0, "{r}");
            assert_eq!(r["matches_replay"], true, "{r}");
            assert_eq!(r["log_full"], false, "{r}");
            assert!(r["keys"].as_u64().unwrap() > 0, "{r}");
            assert_eq!(r["digest"], replicas[0]["digest"], "{v}");
            assert_eq!(r["applied"], replicas[0]["applied"], "{v}");
        }
    }
}
