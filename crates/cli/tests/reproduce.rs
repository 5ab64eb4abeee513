//! `innet reproduce --scale 0.05`, the real binary end to end: the report
//! lists all 26 results of the four papers, every registered result wrote
//! its plots and records (with seed and commit), and the HTML page embeds
//! the plots.

use std::path::Path;
use std::process::Command;

use innet_reproduce::{entries, ALL_RESULTS};

/// Whether every one of the 26 results must be registered (they are); with
/// `false`, an unregistered id must appear in the report as "not
/// registered" instead.
const ALL_REGISTERED: bool = true;

fn summary_row<'a>(md: &'a str, id: &str) -> Option<&'a str> {
    md.lines().find(|l| l.starts_with(&format!("| {id} |")) || l.starts_with(&format!("| [{id}](#{id}) |")))
}

#[test]
fn reproduce_at_a_small_scale_reports_all_26_results() {
    let out = std::env::temp_dir().join(format!("innet-reproduce-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let o = Command::new(env!("CARGO_BIN_EXE_innet"))
        .args(["reproduce", "--scale", "0.05", "--seed", "3", "--out"])
        .arg(&out)
        .output()
        .expect("innet runs");
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "innet reproduce failed:\n{stdout}\n{stderr}");

    let md = std::fs::read_to_string(out.join("REPORT.md")).expect("REPORT.md written");
    let registered: Vec<&str> = entries().iter().map(|e| e.id).collect();
    for id in ALL_RESULTS {
        let row = summary_row(&md, id).unwrap_or_else(|| panic!("REPORT.md has no summary row for {id}:\n{md}"));
        if ALL_REGISTERED || registered.contains(&id) {
            assert!(registered.contains(&id), "{id} is not registered");
            assert!(!row.contains("not registered") && !row.contains("failed"), "{id}: {row}");
            let verdicts = ["| yes (", "| partly (", "| no (", "| calibration |", "| model only ("];
            assert!(verdicts.iter().any(|v| row.contains(v)), "{id} has no holds verdict: {row}");
            assert!(md.contains(&format!("## {id}:")), "no section for {id}");
        } else {
            assert!(row.contains("not registered"), "{id}: {row}");
        }
    }
    assert_eq!(md.lines().filter(|l| ALL_RESULTS.iter().any(|id| summary_row(l, id).is_some())).count(), 26);

    // Every registered result: a PNG, JSON lines records carrying seed and
    // commit, and an outcome.json.
    for id in &registered {
        let dir = out.join(id);
        let files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|f| f.expect("dir entry").path())
            .collect();
        let pngs: Vec<_> = files.iter().filter(|p| p.extension().is_some_and(|e| e == "png")).collect();
        assert!(!pngs.is_empty(), "{id}: no plot in {}", dir.display());
        for p in &pngs {
            let bytes = std::fs::read(p).expect("png");
            assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{}", p.display());
        }
        let jsonl: Vec<_> = files.iter().filter(|p| p.extension().is_some_and(|e| e == "jsonl")).collect();
        assert!(!jsonl.is_empty(), "{id}: no records");
        for j in &jsonl {
            let text = std::fs::read_to_string(j).expect("jsonl");
            let first = text.lines().next().unwrap_or_else(|| panic!("{} is empty", j.display()));
            let v: serde_json::Value = serde_json::from_str(first).expect("a JSON record");
            // The configuration is a `config` object, or flattened into the record.
            let seed = if v["config"].is_object() { &v["config"]["seed"] } else { &v["seed"] };
            assert_eq!(*seed, 3, "{}: seed {seed}", j.display());
            let commit = v["git_commit"].as_str().unwrap_or("");
            assert!(!commit.is_empty(), "{}: no commit", j.display());
        }
        assert!(Path::new(&dir.join("outcome.json")).exists(), "{id}: no outcome.json");
    }

    let html = std::fs::read_to_string(out.join("REPORT.html")).expect("REPORT.html written");
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    for id in ALL_RESULTS {
        assert!(
            html.contains(&format!("<td>{id}</td>")) || html.contains(&format!("<a href=\"#{id}\">{id}</a>")),
            "{id}"
        );
    }
    let embedded = html.matches("src=\"data:image/png;base64,").count();
    assert!(embedded >= registered.len(), "{embedded} plots embedded for {} results", registered.len());
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn an_unknown_result_id_is_refused_with_the_list() {
    let o = Command::new(env!("CARGO_BIN_EXE_innet"))
        .args(["reproduce", "--only", "gotthard-fig99", "--out", "/nonexistent/never"])
        .output()
        .expect("innet runs");
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("gotthard-fig99") && err.contains("caans-table4"), "{err}");
}
