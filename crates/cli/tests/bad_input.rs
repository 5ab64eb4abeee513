//! No panic on any input: every subcommand, over a table of bad values for
//! every numeric flag, and the careless inputs that used to panic or hang,
//! exits with status 2 and one line on stderr that names what is wrong.
//!
//! The numeric flags are read from each subcommand's `--help`, so a new flag
//! is covered (or, if its value name is new, this test says to classify it).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const INNET: &str = env!("CARGO_BIN_EXE_innet");

/// Every leaf subcommand with arguments that make it otherwise valid (so the
/// flag under test is the only thing wrong). If a bad value were accepted,
/// these would run: the test then fails on the exit status or the time limit.
fn subcommands(tmp: &Path) -> Vec<(&'static str, Vec<String>)> {
    let d = tmp.join("kv").display().to_string();
    let topo = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/topology-txn.toml").to_string();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    vec![
        ("demo", vec![]),
        ("sim txn", vec![]),
        ("sim paxos", vec![]),
        ("sim chain", vec![]),
        ("bench txn", vec![]),
        ("bench paxos", vec![]),
        ("bench chain", vec![]),
        ("bench xdp", vec![]),
        ("bench xdp-txn", vec![]),
        ("bench xdp-paxos", vec![]),
        ("bench xdp-paxos-hosts", vec![]),
        ("bench xdp-paxos-table1", vec![]),
        ("bench xdp-chain", vec![]),
        ("check txn", vec![]),
        ("check paxos", vec![]),
        ("check chain", vec![]),
        ("up txn", vec![]),
        ("up paxos", vec![]),
        ("up chain", vec![]),
        ("store", s(&["--listen", "127.0.0.1:0"])),
        ("switch txn", s(&["--mode", "forward", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9"])),
        ("client txn", s(&["--to", "127.0.0.1:9", "--load"])),
        ("client chain", s(&["--nodes", "127.0.0.1:9", "--get", "1"])),
        ("client tpcc", s(&["--to", "127.0.0.1:9", "--load"])),
        ("testbed up", s(&["txn"])),
        ("testbed down", vec![]),
        ("kv-replica", vec!["--id".into(), "0".into(), "--data-dir".into(), d, "--base-port".into(), "20000".into()]),
        ("kv put", s(&["k", "v", "--replicas", "127.0.0.1:9"])),
        ("kv get", s(&["k", "--replicas", "127.0.0.1:9"])),
        ("kv del", s(&["k", "--replicas", "127.0.0.1:9"])),
        ("kv cas", s(&["k", "v", "--expect-absent", "--replicas", "127.0.0.1:9"])),
        ("topology show", vec![topo.clone()]),
        ("mininet", vec!["--topology".into(), topo]),
        ("reproduce", vec!["--out".into(), tmp.join("reproduce").display().to_string()]),
    ]
}

/// Value names of flags that do not take a number.
const NOT_NUMERIC: &[&str] = &[
    "ADDR",
    "BACKUP",
    "DATA_DIR",
    "DATA_PLANE",
    "DATA_PLANES",
    "EXPECT",
    "FIGURE",
    "FILE",
    "KEY=VALUE",
    "LISTEN",
    "MACHINE=IP",
    "MODE",
    "MODES",
    "ONLY",
    "OP",
    "OUT",
    "PROTOCOL",
    "PROTOCOLS",
    "REPLICAS",
    "RUNTIME",
    "SERVICE",
    "STORE_LISTEN",
    "SWEEP",
    "SWITCH_LISTEN",
    "TO",
    "TOPOLOGY",
    "UPSTREAM",
    "VALUE_FILE",
];

/// Values no numeric flag accepts: negative, not a number, infinite, beyond
/// any duration or count, beyond u64.
const BAD_NUMBERS: &[&str] = &["-1", "-0.5", "nan", "inf", "1e300", "18446744073709551616"];

struct Outcome {
    code: Option<i32>,
    stderr: String,
    stdout: String,
}

fn innet(dir: &Path, args: &[String]) -> Outcome {
    let mut child = Command::new(INNET)
        .args(args)
        .current_dir(dir)
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("innet runs");
    let t0 = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if t0.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait_with_output().unwrap();
    Outcome {
        code: out.status.code(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
    }
}

/// `(flag, value name)` of every option in `innet SUB --help`.
fn flags(dir: &Path, sub: &str) -> Vec<(String, String)> {
    let mut args: Vec<String> = sub.split(' ').map(String::from).collect();
    args.push("--help".into());
    let o = innet(dir, &args);
    assert_eq!(o.code, Some(0), "innet {sub} --help: {}", o.stderr);
    o.stdout
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = l.strip_prefix("-h, ").unwrap_or(l);
            let rest = l.strip_prefix("--")?;
            let (flag, rest) = rest.split_once(" <")?;
            let (value, _) = rest.split_once('>')?;
            Some((format!("--{flag}"), value.to_string()))
        })
        .collect()
}

fn temp_dir() -> PathBuf {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let d = std::env::temp_dir().join(format!("innet-bad-input-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs one bad invocation and returns what is wrong with its outcome, if anything.
fn judge(dir: &Path, args: &[String], must_name: &str) -> Option<String> {
    let o = innet(dir, args);
    let lines: Vec<&str> = o.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut wrong = vec![];
    if o.stderr.contains("panicked") || o.stdout.contains("panicked") {
        wrong.push("panicked".to_string());
    }
    if o.code != Some(2) {
        wrong.push(format!("exit status {:?}, not 2", o.code));
    }
    if lines.len() != 1 {
        wrong.push(format!("{} lines on stderr, not 1", lines.len()));
    }
    if !o.stderr.contains(must_name) {
        wrong.push(format!("stderr does not name {must_name}"));
    }
    (!wrong.is_empty())
        .then(|| format!("innet {}: {}\n    stderr: {}", args.join(" "), wrong.join("; "), o.stderr.trim()))
}

#[test]
fn every_numeric_flag_of_every_subcommand_refuses_bad_numbers_in_one_line() {
    let dir = temp_dir();
    let mut failures = vec![];
    let mut runs = 0;
    for (sub, base) in subcommands(&dir) {
        for (flag, value_name) in flags(&dir, sub) {
            if NOT_NUMERIC.contains(&value_name.as_str()) || (sub == "client chain" && flag == "--nodes") {
                continue;
            }
            for bad in BAD_NUMBERS {
                let mut args: Vec<String> = sub.split(' ').map(String::from).collect();
                // The base arguments, without the flag under test.
                let mut i = 0;
                while i < base.len() {
                    if base[i] == flag {
                        i += 2;
                        continue;
                    }
                    args.push(base[i].clone());
                    i += 1;
                }
                args.push(format!("{flag}={bad}"));
                runs += 1;
                failures.extend(judge(&dir, &args, &flag));
            }
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    assert!(runs > 500, "only {runs} invocations: did --help change its layout?");
    assert!(failures.is_empty(), "{} of {runs} bad invocations misbehaved:\n{}", failures.len(), failures.join("\n"));
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn careless_flags_and_topologies_are_refused_in_one_line() {
    let dir = temp_dir();
    let switches = |a_up: &str, extra: &str| {
        format!(
            "[[node]]\nname = \"store\"\nrole = \"store\"\n\n[[node]]\nname = \"a\"\nrole = \"switch\"\nmode = \"forward\"\n\
             upstream = \"{a_up}\"\n{extra}\n[[node]]\nname = \"b\"\nrole = \"switch\"\nmode = \"forward\"\nupstream = \"a\"\n\n\
             [[node]]\nname = \"c\"\nrole = \"clients\"\ncount = 1\nupstream = \"b\"\n"
        )
    };
    let cycle = write(&dir, "cycle.toml", &switches("b", ""));
    let huge_delay = write(&dir, "delay.toml", &switches("store", "store_delay_ms = 1e300\n"));
    let huge_slots = write(&dir, "slots.toml", &switches("store", "cache_slots = 4294967296\n"));
    let negative = write(&dir, "negative.toml", &switches("store", "client_delay_ms = -5.0\n"));
    // A file may not pass what its flag refuses (docs/security.md, "Bounds").
    let mut groups = String::from("[[node]]\nname = \"store\"\nrole = \"store\"\n\n");
    for g in 0..3 {
        groups += &format!("[[node]]\nname = \"c{g}\"\nrole = \"clients\"\ncount = 2000\nupstream = \"store\"\n\n");
    }
    let many_clients = write(&dir, "clients.toml", &groups);
    let mut chain = String::from("[chain]\nprotocol = \"netchain\"\n\n");
    for i in 0..11 {
        chain += &format!("[[node]]\nname = \"n{i}\"\nrole = \"node\"\n\n");
    }
    chain += "[[node]]\nname = \"control\"\nrole = \"control\"\n";
    let long_chain = write(&dir, "chain.toml", &chain);
    let trim = write(
        &dir,
        "trim.toml",
        "[paxos]\ntrim_quorum = 2\n\n[[node]]\nname = \"c\"\nrole = \"coordinator\"\n\n[[node]]\nname = \"a\"\n\
         role = \"acceptor\"\n\n[[node]]\nname = \"l\"\nrole = \"learner\"\n\n[[node]]\nname = \"p\"\nrole = \"proposer\"\n",
    );
    let software = write(
        &dir,
        "software.toml",
        "[paxos]\ndata_plane = \"software\"\n\n[[node]]\nname = \"c\"\nrole = \"coordinator\"\n\n[[node]]\nname = \"a\"\n\
         role = \"acceptor\"\n\n[[node]]\nname = \"l\"\nrole = \"learner\"\n\n[[node]]\nname = \"p\"\nrole = \"proposer\"\n",
    );
    let bad_key = write(&dir, "bad.key", "1 0011\n");
    let good_key = write(&dir, "good.key", &format!("1 {}\n", "ab".repeat(16)));
    let chain_bad_key = write(
        &dir,
        "chain-bad-key.toml",
        &format!("[chain]\nauth_key = {bad_key:?}\n\n[[node]]\nname = \"n0\"\nrole = \"node\"\n\n[[node]]\nname = \"control\"\nrole = \"control\"\n"),
    );
    let a_file = write(&dir, "a-file", "");
    let in_a_file = format!("{a_file}/results");
    let u32_max = "4294967295";
    let cases: Vec<(Vec<&str>, &str)> = vec![
        // Counts that size allocations: each refused with its named limit.
        (vec!["sim", "txn", "--clients", u32_max], "CLIENTS_MAX"),
        (vec!["bench", "txn", "--clients", u32_max], "CLIENTS_MAX"),
        (vec!["sim", "txn", "--keys", u32_max], "TXN_KEYS_MAX"),
        (vec!["sim", "txn", "--keys", "2000", "--span", "1000"], "SPAN_MAX"),
        (vec!["sim", "txn", "--edge-switches", u32_max], "CLIENTS_MAX"),
        (vec!["sim", "paxos", "--proposers", u32_max], "PROPOSERS_MAX"),
        (vec!["sim", "paxos", "--outstanding", u32_max], "OUTSTANDING_MAX"),
        (vec!["bench", "paxos", "--proposers", "4294967296"], "PROPOSERS_MAX"),
        (vec!["up", "paxos", "--proposers", u32_max], "PROPOSERS_MAX"),
        (vec!["up", "paxos", "--outstanding", u32_max], "OUTSTANDING_MAX"),
        (vec!["up", "paxos", "--acceptors", "65"], "MAX_ACCEPTORS"),
        (
            vec!["kv-replica", "--id", "0", "--data-dir", "kv", "--base-port", "20000", "--acceptors", u32_max],
            "MAX_ACCEPTORS",
        ),
        (
            vec!["kv-replica", "--id", "0", "--data-dir", "kv", "--base-port", "20000", "--learners", u32_max],
            "MAX_LEARNERS",
        ),
        (vec!["mininet", "--topology", "x.toml", "--outstanding", u32_max], "OUTSTANDING_MAX"),
        (vec!["check", "txn", "--seeds", "4294967297"], "CHECK_SEEDS_MAX"),
        (vec!["check", "paxos", "--seeds", "4294967297"], "CHECK_SEEDS_MAX"),
        (vec!["check", "chain", "--seeds", "4294967297"], "CHECK_SEEDS_MAX"),
        (vec!["check", "tpcc", "--seeds", "4294967297"], "CHECK_SEEDS_MAX"),
        (vec!["demo", "--check-seeds", "4294967297"], "CHECK_SEEDS_MAX"),
        (vec!["bench", "tpcc", "--clients", u32_max], "CLIENTS_MAX"),
        (vec!["client", "tpcc", "--to", "127.0.0.1:9", "--load", "--clients", u32_max], "CLIENTS_MAX"),
        (vec!["client", "txn", "--to", "127.0.0.1:9", "--load", "--keys", u32_max], "TXN_KEYS_MAX"),
        (vec!["client", "txn", "--to", "127.0.0.1:9", "--load", "--clients", u32_max], "CLIENTS_MAX"),
        (vec!["client", "chain", "--nodes", "127.0.0.1:9", "--load", "--keys", u32_max], "OBJECTS_MAX"),
        (vec!["up", "chain", "--keys", u32_max], "OBJECTS_MAX"),
        (vec!["up", "txn", "--keys", u32_max], "TXN_KEYS_MAX"),
        (vec!["bench", "xdp", "--requests", "18446744073709551615"], "BENCH_REQUESTS_MAX"),
        (vec!["bench", "xdp", "--window", u32_max], "BENCH_WINDOW_MAX"),
        (vec!["bench", "xdp-chain", "--rounds", u32_max], "BENCH_ROUNDS_MAX"),
        (vec!["bench", "xdp-paxos", "--runs", u32_max], "BENCH_ROUNDS_MAX"),
        (vec!["bench", "xdp-paxos-table1", "--runs", u32_max], "TEST_RUNS_MAX"),
        (vec!["bench", "xdp-txn", "--clients", u32_max], "CLIENTS_MAX"),
        (vec!["up", "txn", "--topology", &many_clients], "CLIENTS_MAX"),
        (vec!["sim", "txn", "--topology", &many_clients], "CLIENTS_MAX"),
        (vec!["up", "chain", "--topology", &long_chain], "MAX_CHAIN_NODES"),
        (vec!["up", "paxos", "--topology", &trim], "trim_quorum"),
        // Removed spellings: one unit for link faults' time (milliseconds).
        (vec!["sim", "paxos", "--jitter-us", "5"], "--jitter-ms"),
        (vec!["bench", "paxos", "--jitter-us", "5"], "--jitter-ms"),
        // Removed aliases, and list flags' items: clap names the choices.
        (vec!["check", "paxos", "--dataplanes", "switch"], "--data-planes"),
        (vec!["check", "paxos", "--data-planes", "switch,software"], "[possible values: switch, process]"),
        (
            vec!["check", "txn", "--modes", "forward,fast"],
            "[possible values: forward, read-cache, early-abort, optimistic-abort]",
        ),
        (vec!["check", "tpcc", "--modes", "optimistic_abort"], "[possible values: forward,"),
        (vec!["bench", "tpcc", "--modes", "none"], "[possible values: forward,"),
        (vec!["check", "chain", "--protocols", "netcraq,craq"], "[possible values: netcraq, netchain]"),
        (vec!["sim", "paxos", "--data-plane", "software"], "[possible values: switch, process, xdp]"),
        (vec!["up", "paxos", "--data-plane", "software"], "[possible values: switch, process, xdp]"),
        (
            vec!["testbed", "up", "txn", "--data-plane", "software"],
            "say switch (the user-space software switch) or xdp",
        ),
        (vec!["client", "chain", "--nodes", "127.0.0.1:9", "--load", "--puts-ratio", "0.5"], "--puts-ratio"),
        // "software" meant process in older records and switch on the testbed.
        (vec!["up", "paxos", "--topology", &software], "say process (every role an ordinary process"),
        // Comma lists' items, checked by clap.
        (vec!["bench", "paxos", "--sweep", "1,x"], "'x' is not a whole number of requests in flight"),
        (vec!["bench", "chain", "--figures", "3,7"], "[possible values: 3, 4, 5, 6]"),
        (vec!["bench", "txn", "--write-ratios", "0.5,2"], "2 is out of range: expected a ratio from 0 to 1"),
        (vec!["sim", "chain", "--targets", "0,a"], "'a' is not a chain position"),
        // Link faults are simulator-only.
        (vec!["bench", "txn", "--runtime", "live", "--duplicate", "0.5"], "--duplicate 0.5"),
        // Key files (docs/security.md, "The packet authenticator").
        (vec!["up", "chain", "--auth-key", &bad_key], "not 32 hex digits"),
        (vec!["up", "chain", "--auth-key", "/nonexistent/chain.key"], "/nonexistent/chain.key"),
        (vec!["up", "chain", "--topology", &chain_bad_key], "[chain] auth_key"),
        (vec!["up", "chain", "--topology", &long_chain, "--auth-key", &good_key], "auth_key = "),
        (vec!["testbed", "up", "paxos", "--auth-key", &bad_key], "not 32 hex digits"),
        (vec!["testbed", "up", "txn", "--auth-key", "/nonexistent/txn.key"], "/nonexistent/txn.key"),
        (vec!["bench", "xdp-paxos", "--auth-key", &bad_key], "not 32 hex digits"),
        (vec!["sim", "paxos", "--topology", &trim], "trim_quorum"),
        // Output folders are checked before the run, not after it.
        (vec!["bench", "txn", "--out", "/proc/innet-results"], "/proc"),
        (vec!["bench", "chain", "--out", &in_a_file], "is a file"),
        (vec!["reproduce", "--out", &in_a_file], "is a file"),
        (vec!["bench", "xdp", "--out", "/proc/innet-results"], "/proc"),
        (vec!["up", "txn", "--client-delay-ms", "1e300"], "--client-delay-ms"),
        (
            vec![
                "switch",
                "txn",
                "--mode",
                "forward",
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                "127.0.0.1:9",
                "--client-delay-ms",
                "1e300",
            ],
            "--client-delay-ms",
        ),
        (vec!["up", "txn", "--cache-slots", "4294967296"], "GB"),
        (vec!["up", "paxos", "--slots", "4294967296"], "GB"),
        (vec!["sim", "paxos", "--slots", "4294967296"], "GB"),
        (vec!["up", "paxos", "--base-port", "65530"], "65530"),
        (vec!["up", "chain", "--listen", "127.0.0.1:65534"], "65534"),
        (vec!["up", "chain", "--nodes", "10", "--listen", "127.0.0.1:65530"], "65530"),
        (vec!["kv-replica", "--id", "0", "--data-dir", "kv", "--base-port", "65535"], "65535"),
        (vec!["kv-replica", "--id", "9", "--data-dir", "kv", "--base-port", "20000"], "--id"),
        (vec!["client", "chain", "--nodes", "127.0.0.1:9", "--get", "1", "--timeout-ms", "0"], "--timeout-ms"),
        (vec!["client", "chain", "--nodes", "127.0.0.1:9", "--get", "1", "--deadline-ms", "0"], "--deadline-ms"),
        (vec!["client", "chain", "--nodes", "127.0.0.1:9", "--get", "1024"], "1024"),
        (vec!["client", "chain", "--nodes", "127.0.0.1:9", "--put", "5000=x"], "5000"),
        (vec!["client", "txn", "--to", "127.0.0.1:9", "--read", "1", "--timeout-ms", "0"], "--timeout-ms"),
        (vec!["client", "txn", "--to", "127.0.0.1:9", "--read", "1", "--timeout-ms", "-5"], "--timeout-ms"),
        (vec!["sim", "txn", "--duration-s", "-1"], "--duration-s"),
        (vec!["up", "txn", "--duration-s", "-1"], "--duration-s"),
        (vec!["sim", "paxos", "--timeout-ms", "0"], "--timeout-ms"),
        (vec!["sim", "paxos", "--pack", "0"], "--pack"),
        (vec!["up", "paxos", "--pack", "25"], "--pack"),
        (vec!["up", "txn", "--topology", &cycle], "cycle"),
        (vec!["sim", "txn", "--topology", &cycle], "cycle"),
        (vec!["topology", "show", &cycle], "cycle"),
        (vec!["up", "txn", "--topology", &huge_delay], "store_delay_ms"),
        (vec!["sim", "txn", "--topology", &huge_delay], "store_delay_ms"),
        (vec!["up", "txn", "--topology", &huge_slots], "cache_slots"),
        (vec!["up", "txn", "--topology", &negative], "client_delay_ms"),
        (vec!["up", "txn", "--metrics", "nonsense"], "--metrics"),
        (vec!["up", "txn", "--metrics", "127.0.0.1:65536"], "65536"),
        (vec!["up", "paxos", "--metrics", ":9100"], "--metrics"),
        (vec!["up", "chain", "--metrics", "-1"], "--metrics"),
        (vec!["store", "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1"], "--metrics"),
        (
            vec![
                "switch",
                "txn",
                "--mode",
                "forward",
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                "127.0.0.1:9",
                "--metrics",
                "1e300",
            ],
            "--metrics",
        ),
        (
            vec![
                "kv-replica",
                "--id",
                "0",
                "--data-dir",
                "kv",
                "--base-port",
                "20000",
                "--metrics",
                "no.such.host.invalid:80",
            ],
            "--metrics",
        ),
    ];
    let mut failures = vec![];
    for (args, must_name) in &cases {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        failures.extend(judge(&dir, &args, must_name));
    }
    std::fs::remove_dir_all(&dir).ok();
    assert!(failures.is_empty(), "{} of {} cases misbehaved:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

#[test]
fn extreme_seeds_run_and_name_themselves() {
    // Seeds are names: a range that passes u64::MAX wraps to 0 (it used to
    // check nothing), and replaying u64::MAX runs it (`s + 1` overflowed).
    let dir = temp_dir();
    let max = u64::MAX.to_string();
    for (args, says) in [
        (vec!["check", "chain", "--start-seed", &max, "--seeds", "2", "--duration-s", "0.1"], "checked 4 runs"),
        (vec!["check", "txn", "--seed", &max, "--duration-s", "0.1"], "checked 4 runs"),
        (vec!["check", "tpcc", "--seed", &max, "--duration-s", "0.1"], "checked 4 TPC-C runs"),
    ] {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let o = innet(&dir, &args);
        assert_eq!(o.code, Some(0), "innet {}: {}", args.join(" "), o.stderr);
        assert!(!o.stderr.contains("panicked"), "{}", o.stderr);
        assert!(o.stdout.contains(says), "innet {}: {}", args.join(" "), o.stdout);
    }
    std::fs::remove_dir_all(&dir).ok();
}
