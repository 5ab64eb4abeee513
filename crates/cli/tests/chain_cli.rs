//! `innet up chain` prints its nodes' addresses; `innet client chain` writes
//! through the head and reads the value back from another node, for both
//! protocols.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

fn innet(args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_innet")).args(args).output().unwrap();
    assert!(out.status.success(), "innet {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A spawned `innet up chain`, killed when dropped: a failing assertion must
/// not leave it running (it would keep the test's inherited file
/// descriptors, e.g. the suite's testbed lock, open).
struct Up(std::process::Child);

impl Drop for Up {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn up_prints_addresses_and_a_client_puts_and_gets() {
    for protocol in ["netcraq", "netchain"] {
        let mut up = Up(Command::new(env!("CARGO_BIN_EXE_innet"))
            .args(["up", "chain", "--protocol", protocol, "--nodes", "3"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap());
        let mut lines = BufReader::new(up.0.stdout.take().unwrap()).lines();
        let mut addrs = vec![];
        for i in 0..3 {
            let line = lines.next().unwrap().unwrap();
            let (name, addr) = line.split_once(' ').unwrap();
            assert_eq!(name, format!("node{i}"));
            addrs.push(addr.to_string());
        }
        let nodes = addrs.join(",");
        let put = innet(&["client", "chain", "--protocol", protocol, "--nodes", &nodes, "--put", "7=seven"]);
        assert_eq!((put["op"].as_str(), put["value"].as_str()), (Some("put"), Some("seven")), "{protocol}");
        let get = innet(&["client", "chain", "--protocol", protocol, "--nodes", &nodes, "--get", "7", "--near", "1"]);
        assert_eq!(get["value"].as_str(), Some("seven"), "{protocol}");
        drop(up);
    }
}

fn up_netcraq() -> (Up, String) {
    let mut up = Command::new(env!("CARGO_BIN_EXE_innet"))
        .args(["up", "chain", "--protocol", "netcraq", "--nodes", "3"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(up.stdout.take().unwrap()).lines();
    let addrs: Vec<String> =
        (0..3).map(|_| lines.next().unwrap().unwrap().split_once(' ').unwrap().1.to_string()).collect();
    (Up(up), addrs.join(","))
}

#[test]
fn load_mode_writes_what_gets_read_back() {
    let (up, nodes) = up_netcraq();
    // One client, only puts: each key's last acknowledged value is the
    // chain's value when the load ends.
    let r = innet(&[
        "client",
        "chain",
        "--nodes",
        &nodes,
        "--load",
        "--clients",
        "1",
        "--write-ratio",
        "1",
        "--keys",
        "4",
        "--duration-s",
        "0.5",
        "--json",
    ]);
    let load = |k: &str| r["load"][k].as_u64().unwrap_or_else(|| panic!("no load.{k} in {r}"));
    let count = |k: &str| r[k].as_u64().unwrap_or_else(|| panic!("no {k} in {r}"));
    assert!(load("completed") > 20, "{r}");
    // Only puts: every request completed in the measured time was a write
    // ACKed (writes also counts the warm-up's ACKs, outside that time).
    assert_eq!(count("reads"), 0, "--write-ratio 1 reads nothing: {r}");
    assert!(count("writes") >= load("completed"), "fewer ACKs than completed puts: {r}");
    // The generator's ceiling (a bare UDP echo) at the load's concurrency:
    // its rate is its echoes over its measured time, its latencies a
    // distribution, and an echo is never refused or unrecognised.
    let ceiling = &r["ceiling"];
    let f = |k: &str| ceiling[k].as_f64().unwrap_or_else(|| panic!("no ceiling.{k} in {r}"));
    // At least one echo, or the rate below holds as 0 = 0 / t.
    assert!(f("completed") >= 1.0, "the ceiling measured no echo: {r}");
    assert_eq!((f("clients"), f("threads")), (load("clients") as f64, load("threads") as f64), "{r}");
    assert_eq!((f("refused"), f("ignored")), (0.0, 0.0), "an echo is never refused or unrecognised: {r}");
    assert!((f("ops_per_s") - f("completed") / f("measured_s")).abs() <= 1e-6 * f("ops_per_s"), "{r}");
    assert!(f("p50_us") <= f("p99_us"), "{r}");
    let acked = r["last_acked"].as_object().unwrap();
    assert_eq!(acked.len(), 4, "{r}");
    for (k, v) in acked {
        let get = innet(&["client", "chain", "--nodes", &nodes, "--get", k, "--near", "2"]);
        assert_eq!(get["value"], *v, "key {k}");
    }
    // Bad arguments say what to change.
    let out = Command::new(env!("CARGO_BIN_EXE_innet"))
        .args(["client", "chain", "--nodes", &nodes, "--load", "--write-ratio", "1.5"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--write-ratio 1.5 must be in 0..=1"));
    drop(up);
}

#[test]
fn chain_etcd_bench_runs_every_system_and_cleans_up() {
    if Command::new("etcd").arg("--version").output().is_err() {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: chain_etcd_bench: etcd not installed (scripts/setup.sh installs etcd-server)"
        );
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "skipped under CI=true: scripts/setup.sh installs etcd-server"
        );
        return;
    }
    let tag = format!("innet-chain-etcd-test-{}", std::process::id());
    let (disk, tmpfs, out) = (
        std::path::Path::new("/var/tmp").join(&tag),
        std::path::Path::new("/dev/shm").join(&tag),
        std::env::temp_dir().join(&tag),
    );
    for d in [&disk, &tmpfs] {
        std::fs::create_dir_all(d).unwrap();
    }
    let run = Command::new(env!("CARGO_BIN_EXE_innet"))
        .args(["bench", "chain-etcd", "--clients", "2", "--reps", "1", "--duration-s", "0.3", "--keys", "16"])
        .arg("--disk-dir")
        .arg(&disk)
        .arg("--tmpfs-dir")
        .arg(&tmpfs)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    let runs: Vec<serde_json::Value> = std::fs::read_to_string(out.join("runs.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for (system, op) in [
        ("ceiling", "echo"),
        ("netcraq", "put"),
        ("netcraq", "get"),
        ("etcd-disk", "put"),
        ("etcd-disk", "get"),
        ("etcd-tmpfs", "put"),
        ("etcd-tmpfs", "get"),
    ] {
        let r = runs.iter().find(|r| r["system"] == system && r["op"] == op).unwrap_or_else(|| panic!("{system} {op}"));
        let us = |k: &str| r[k].as_f64().unwrap_or_else(|| panic!("no {k} in {r}"));
        assert!(us("p50_us") <= us("p99_us") && r["clients"] == 2 && r["rep"] == 0, "{r}");
        assert!(r["git_commit"].as_str().is_some() && r["seed"] == 1, "{r}");
    }
    // With one repetition each median is that run: NetCRAQ's ratios to
    // etcd and to the generator's ceiling are the runs' rates divided.
    let ops = |system: &str, op: &str| -> f64 {
        let r = runs.iter().find(|r| r["system"] == system && r["op"] == op).expect("found above");
        r["ops_per_s"].as_f64().unwrap()
    };
    let sums: Vec<serde_json::Value> = std::fs::read_to_string(out.join("summary.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for op in ["put", "get"] {
        let s = sums.iter().find(|s| s["system"] == "netcraq" && s["op"] == op).unwrap_or_else(|| panic!("{sums:?}"));
        let close = |got: &serde_json::Value, want: f64| (got.as_f64().unwrap() - want).abs() <= 1e-6 * want.max(1e-9);
        assert!(close(&s["ratio_vs_etcd_disk"], ops("netcraq", op) / ops("etcd-disk", op)), "{s}");
        assert!(close(&s["ratio_vs_etcd_tmpfs"], ops("netcraq", op) / ops("etcd-tmpfs", op)), "{s}");
        assert!(close(&s["of_ceiling"], ops("netcraq", op) / ops("ceiling", "echo")), "{s}");
    }
    // The etcd members and their data are gone.
    for d in [&disk, &tmpfs] {
        assert_eq!(std::fs::read_dir(d).unwrap().count(), 0, "{} is empty", d.display());
        std::fs::remove_dir(d).unwrap();
    }
    let _ = std::fs::remove_dir_all(&out);
}
