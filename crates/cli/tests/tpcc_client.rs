//! `innet client tpcc --load` against a separately started `innet store`
//! and `innet switch txn` (real processes, loopback UDP): the store is
//! loaded over the wire, the terminals commit, the database read back holds
//! TPC-C's consistency conditions, and a second run on the same store
//! (without loading) keeps them.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

const INNET: &str = env!("CARGO_BIN_EXE_innet");

/// A spawned node, killed when dropped.
struct Node(Child);

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `innet args...` and returns it with the address it prints first
/// (`name HOST:PORT`).
fn start(args: &[&str]) -> (Node, String) {
    let mut child = Command::new(INNET).args(args).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let line = BufReader::new(child.stdout.take().unwrap()).lines().next().unwrap().unwrap();
    let addr = line.split_once(' ').map(|(_, a)| a.to_string()).unwrap_or_else(|| panic!("no address in '{line}'"));
    (Node(child), addr)
}

/// The per-type counts of a run add up: every transaction finished
/// (committed, rolled back and out-of-stock ones included, or given up) was
/// started, and at most one per terminal is still running when the run
/// ends. Returns the committed count per type.
fn counts_add_up(r: &serde_json::Value, terminals: u64) -> std::collections::BTreeMap<String, u64> {
    let mut running = 0;
    let mut committed = std::collections::BTreeMap::new();
    for (kind, t) in r["per_type"].as_object().unwrap() {
        let n = |f: &str| t[f].as_u64().unwrap_or_else(|| panic!("no {kind}.{f} in {r}"));
        assert!(n("rolled_back") + n("exhausted") <= n("committed"), "{kind}: rollbacks are commits: {r}");
        let finished = n("committed") + n("gave_up");
        assert!(finished <= n("started"), "{kind}: {finished} finished of {} started", n("started"));
        running += n("started") - finished;
        committed.insert(kind.clone(), n("committed"));
    }
    assert!(running <= terminals, "{running} transactions running at the end with {terminals} terminals: {r}");
    committed
}

fn client(args: &[&str]) -> serde_json::Value {
    let out = Command::new(INNET).args(["client", "tpcc", "--load"]).args(args).output().unwrap();
    assert!(out.status.success(), "innet client tpcc {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn client_tpcc_loads_a_live_store_runs_terminals_and_the_database_stays_consistent() {
    let (_store, store) = start(&["store", "--listen", "127.0.0.1:0"]);
    let (_switch, switch) = start(&[
        "switch",
        "txn",
        "--mode",
        "optimistic-abort",
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        &store,
        "--store-delay-ms",
        "2",
    ]);
    let first = client(&["--to", &switch, "--clients", "4", "--duration-s", "2", "--client-delay-ms", "1"]);
    assert_eq!(first["consistency_violations"], serde_json::json!([]), "{first}");
    assert_eq!(first["populated"], true);
    let committed = counts_add_up(&first, 4);
    let (new_orders, payments) = (committed["new-order"], committed["payment"]);
    assert!(new_orders >= 1 && payments >= 1, "both writing transactions commit: {committed:?}");
    let cpu = first["store_cpu_pct"].as_f64().expect("the store answered CPU_PCT");
    assert!((0.0..=100.0).contains(&cpu), "{cpu}");
    assert_eq!(first["git_commit"].as_str().map(str::is_empty), Some(false));
    assert_eq!(first["seed"], 1);

    // Again on the loaded store, Payment only, reading back from the store.
    let second =
        client(&["--to", &switch, "--store", &store, "--no-populate", "--only", "payment", "--duration-s", "1"]);
    assert_eq!(second["consistency_violations"], serde_json::json!([]), "{second}");
    assert_eq!(second["populated"], false);
    let committed = counts_add_up(&second, 8);
    assert!(committed["payment"] >= 1, "{second}");
    assert_eq!(committed.iter().filter(|(k, _)| *k != "payment").map(|(_, n)| n).sum::<u64>(), 0, "{second}");
}
