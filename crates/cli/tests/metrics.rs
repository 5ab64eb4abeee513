//! `--metrics ADDR`: a running deployment's counters over real HTTP on a
//! real TCP socket, scraped twice during a load run; the counters the load
//! drives must have risen between the scrapes, and every sample must be a
//! Prometheus counter with the `role` and `node` labels.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const INNET: &str = env!("CARGO_BIN_EXE_innet");

/// A running `innet` whose stderr has said where its metrics are.
struct Running {
    child: Child,
    addr: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(args: &[&str]) -> Running {
    let child = Command::new(INNET)
        .args(args)
        .args(["--metrics", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("innet runs");
    let mut r = Running { child, addr: String::new() };
    let mut err = BufReader::new(r.child.stderr.take().expect("piped"));
    let mut line = String::new();
    let t0 = Instant::now();
    loop {
        line.clear();
        assert!(err.read_line(&mut line).unwrap() > 0, "innet {args:?} ended without a metrics line");
        if let Some(rest) = line.trim().strip_prefix("innet: metrics on http://") {
            r.addr = rest.strip_suffix("/metrics").expect("URL ends in /metrics").to_string();
            // Keep draining stderr so the process never blocks on it.
            std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
            return r;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "no metrics line");
    }
}

/// One HTTP GET over TCP: (status line, body).
fn get(addr: &str, path: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).expect("connect to the metrics endpoint");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP response");
    (head.lines().next().unwrap_or("").to_string(), body.to_string())
}

/// `(name with labels, value)` of every sample in a scrape.
type Scrape = Vec<(String, u64)>;

/// The samples of a scrape's body.
fn samples(body: &str) -> Scrape {
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').expect("NAME VALUE");
            (k.to_string(), v.parse().unwrap_or_else(|_| panic!("{l}: not a whole number")))
        })
        .collect()
}

/// The sum of the samples whose name (with labels) starts with `prefix`
/// and contains `has`.
fn sum(s: &[(String, u64)], prefix: &str, has: &str) -> u64 {
    s.iter().filter(|(k, _)| k.starts_with(prefix) && k.contains(has)).map(|(_, v)| v).sum()
}

fn scrape(r: &Running) -> Scrape {
    let (status, body) = get(&r.addr, "/metrics");
    assert!(status.contains(" 200"), "{status}");
    assert!(body.trim_end().ends_with("# EOF"), "an OpenMetrics exposition ends with # EOF:\n{body}");
    for line in body.lines().filter(|l| l.starts_with("# TYPE")) {
        assert!(line.ends_with(" counter"), "every metric is a counter: {line}");
    }
    let s = samples(&body);
    for (k, _) in &s {
        assert!(k.starts_with("innet_") && k.contains("_total{"), "Prometheus counter naming: {k}");
        assert!(k.contains("role=\"") && k.contains("node=\""), "role and node labels: {k}");
    }
    s
}

fn temp_topology(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("innet-metrics-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Scrapes twice, 1.5 s apart, after the load has started.
fn two_scrapes(r: &Running) -> (Scrape, Scrape) {
    std::thread::sleep(Duration::from_millis(800));
    let a = scrape(r);
    std::thread::sleep(Duration::from_millis(1500));
    let b = scrape(r);
    (a, b)
}

#[test]
fn txn_topology_counters_rise_during_load() {
    // Ports left out: every node on a free loopback port.
    let topo = temp_topology(
        "txn.toml",
        "[[node]]\nname = \"store\"\nrole = \"store\"\n\n[[node]]\nname = \"tor\"\nrole = \"switch\"\n\
         mode = \"optimistic-abort\"\nupstream = \"store\"\nstore_delay_ms = 2.0\n\n[[node]]\nname = \"clients\"\n\
         role = \"clients\"\ncount = 4\nupstream = \"tor\"\n",
    );
    let r = start(&["up", "txn", "--topology", topo.to_str().unwrap(), "--duration-s", "6", "--keys", "1"]);
    let (a, b) = two_scrapes(&r);
    for (what, prefix, has) in [
        ("store commits", "innet_store_committed_total", "node=\"store\""),
        ("switch requests", "innet_switch_requests_total", "node=\"tor\""),
        ("switch packets from clients", "innet_live_from_downstream_total", "node=\"tor\""),
        ("store packets received", "innet_live_received_total", "node=\"store\""),
    ] {
        let (x, y) = (sum(&a, prefix, has), sum(&b, prefix, has));
        println!("METRICS txn {what}: {prefix}{{{has}}} {x} -> {y}");
        assert!(y > x, "{what} did not rise between scrapes: {x} -> {y}");
    }
    assert!(
        a.iter().any(|(k, _)| k.starts_with("innet_switch_optimistically_aborted_total{role=\"switch\",node=\"tor\"}")),
        "the switch's optimistic aborts are exported"
    );
    let (status, _) = get(&r.addr, "/nothing");
    assert!(status.contains(" 404"), "{status}");
}

#[test]
fn paxos_counters_rise_during_load() {
    let r = start(&["up", "paxos", "--duration-s", "6"]);
    let (a, b) = two_scrapes(&r);
    for (what, prefix, has) in [
        ("learner deliveries", "innet_paxos_delivered_total", "role=\"learner\""),
        ("acceptor votes", "innet_paxos_votes_total", "role=\"acceptor\""),
        ("coordinator requests", "innet_paxos_requests_total", "role=\"coordinator\""),
    ] {
        let (x, y) = (sum(&a, prefix, has), sum(&b, prefix, has));
        println!("METRICS paxos {what}: {prefix}{{{has}}} {x} -> {y}");
        assert!(y > x, "{what} did not rise between scrapes: {x} -> {y}");
    }
}

#[test]
fn chain_topology_counters_rise_during_load() {
    let topo = temp_topology(
        "chain.toml",
        "[chain]\nprotocol = \"netcraq\"\nkeys = 64\n\n[[node]]\nname = \"n0\"\nrole = \"node\"\n\n[[node]]\nname = \"n1\"\nrole = \"node\"\n\n\
         [[node]]\nname = \"n2\"\nrole = \"node\"\n\n[[node]]\nname = \"control\"\nrole = \"control\"\n\n\
         [[node]]\nname = \"clients\"\nrole = \"clients\"\ncount = 2\n",
    );
    let r = start(&["up", "chain", "--topology", topo.to_str().unwrap(), "--duration-s", "6"]);
    let (a, b) = two_scrapes(&r);
    let prefix = "innet_live_from_downstream_total";
    let (x, y) = (sum(&a, prefix, "role=\"chain_node\""), sum(&b, prefix, "role=\"chain_node\""));
    println!("METRICS chain packets into the chain nodes: {prefix} {x} -> {y}");
    assert!(y > x, "chain nodes' traffic did not rise between scrapes: {x} -> {y}");
    assert!(a.iter().any(|(k, _)| k.starts_with("innet_chain_")), "the chain nodes' own counters are exported");
}

#[test]
fn store_process_serves_its_counters() {
    let r = start(&["store", "--listen", "127.0.0.1:0"]);
    let s = scrape(&r);
    assert!(
        s.iter().any(|(k, _)| k == "innet_store_committed_total{role=\"store\",node=\"store\"}"),
        "the store's counters: {s:?}"
    );
}

/// The threads of process `pid` (Linux: `/proc/PID/status`).
fn threads(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/PID/status");
    let line = status.lines().find(|l| l.starts_with("Threads:")).expect("a Threads line");
    line["Threads:".len()..].trim().parse().expect("a number of threads")
}

#[test]
fn idle_connections_neither_block_a_scrape_nor_grow_the_process() {
    // Before: one thread per connection and no timeout, so every idle
    // connection held a thread for good (200 connections, ~200 threads).
    const IDLE: usize = 200;
    let r = start(&["store", "--listen", "127.0.0.1:0"]);
    let before = scrape(&r);
    let threads_before = threads(r.child.id());
    let idle: Vec<TcpStream> = (0..IDLE).map(|_| TcpStream::connect(&r.addr).expect("connect")).collect();
    std::thread::sleep(Duration::from_millis(300));
    let threads_during = threads(r.child.id());
    let during = scrape(&r);
    println!("METRICS {IDLE} idle connections: {threads_before} threads before, {threads_during} with them open");
    assert!(
        threads_during <= threads_before + 2,
        "{IDLE} idle connections grew the process from {threads_before} to {threads_during} threads"
    );
    let evicted = sum(&during, "innet_metrics_connections_evicted_total", "node=\"endpoint\"");
    assert!(
        evicted >= (IDLE - innet_live::metrics::METRICS_CONNECTIONS_MAX) as u64,
        "idle connections beyond the bound are closed and counted: {evicted} of {IDLE}"
    );
    assert!(during.len() >= before.len(), "the scrape still has every counter");

    // A connection that never sends a request is closed after the idle timeout.
    let mut lone = TcpStream::connect(&r.addr).expect("connect");
    lone.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let t0 = Instant::now();
    let mut buf = [0u8; 64];
    let n = lone.read(&mut buf).unwrap_or(0);
    assert_eq!(n, 0, "the server closes an idle connection without answering");
    assert!(t0.elapsed() < Duration::from_secs(10), "closed after {:?}", t0.elapsed());
    drop(idle);
}
