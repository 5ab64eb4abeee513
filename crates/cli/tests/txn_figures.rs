//! `innet bench txn --figure`: a microbenchmark figure from the command line
//! writes its records and plot and prints the paper's claims beside ours.

use std::process::Command;

#[test]
fn bench_txn_figure_writes_records_and_a_plot_and_prints_the_claims() {
    let out = std::env::temp_dir().join(format!("innet-txn-figure-{}", std::process::id()));
    let run = Command::new(env!("CARGO_BIN_EXE_innet"))
        .args(["bench", "txn", "--figure", "fig9", "--scale", "0.05", "--seed", "3", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    assert!(stdout.contains("Gotthard Figure 9 (gotthard-fig9)"), "{stdout}");
    assert!(stdout.contains("paper: \"The 'fat' tail"), "{stdout}");
    let records: Vec<serde_json::Value> = std::fs::read_to_string(out.join("gotthard-fig9.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 3, "one record per approach");
    assert!(records.iter().all(|r| r["seed"] == 3 && r["jitter_ms"] == 1.0 && r["git_commit"].is_string()));
    let png = std::fs::read(out.join("gotthard-fig9.png")).unwrap();
    assert_eq!(&png[..4], b"\x89PNG");
    std::fs::remove_dir_all(&out).ok();
}
