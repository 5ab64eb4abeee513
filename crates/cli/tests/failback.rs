//! Failback on the live process deployment (issue 24 item 3; CAANS section
//! 3.1, "Failure handling"): the coordinator runs alone (`innet up paxos
//! --node coordinator --data-plane process --dir D`) and is killed with
//! SIGKILL and restarted three times while two clients in this process
//! count with compare-and-set through three `innet kv-replica` processes.
//! Each time the backup takes over, and each restart takes the role back
//! in a higher round (its epochs in `D/coordinator/coordinator.epoch`):
//! the backup reports a handback per restart and the round it heard rises
//! each time. Every acknowledged increment is in the counter exactly once
//! and the replicas end identical.

#![cfg(feature = "leveldb")]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;

use common::{spawn, Proc};

fn args(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// The value of metric `name` (summed over its samples) at `addr`.
fn metric(addr: SocketAddr, name: &str) -> Option<u64> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: test\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let line = text.lines().find(|l| l.starts_with(&format!("{name}_total{{")))?;
    line.split_whitespace().last()?.parse::<f64>().ok().map(|v| v as u64)
}

/// Waits (at most 20 s) until metric `name` at `addr` is at least `want`;
/// returns it.
fn wait_metric(addr: SocketAddr, name: &str, want: u64) -> u64 {
    let t = Instant::now();
    loop {
        if let Some(v) = metric(addr, name).filter(|&v| v >= want) {
            return v;
        }
        assert!(t.elapsed() < Duration::from_secs(20), "{name} stayed below {want}: {:?}", metric(addr, name));
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Three `innet kv-replica` processes of the deployment at `base`, on
/// `dir/r0..r2`, their client ports at `base + 20 + i`.
fn spawn_replicas(dir: &std::path::Path, base: u16) -> Vec<Proc> {
    let b = base.to_string();
    (0..3)
        .map(|i| {
            let r = dir.join(format!("r{i}"));
            let client = (base + 20 + i as u16).to_string();
            let a = ["kv-replica", "--id", &i.to_string(), "--data-dir", r.to_str().unwrap(), "--base-port", &b];
            spawn(&[&a[..], &["--learners", "3", "--client-port", &client, "--status-ms", "50"]].concat())
        })
        .collect()
}

/// Waits until every replica's latest status line says the same `next`,
/// `digest` and `keys`; returns that.
fn agreed(replicas: &[Proc]) -> String {
    let mut last = vec![String::new(); replicas.len()];
    let t = Instant::now();
    loop {
        for (r, l) in replicas.iter().zip(&mut last) {
            while let Ok(line) = r.lines.try_recv() {
                let w: Vec<&str> = line.split_whitespace().collect();
                if w.len() >= 8 && w[0] == "applied" {
                    *l = format!("next {} digest {} keys {}", w[3], w[5], w[7]);
                }
            }
        }
        if !last[0].is_empty() && last.iter().all(|l| *l == last[0]) {
            return last[0].clone();
        }
        assert!(t.elapsed() < Duration::from_secs(60), "the replicas do not agree: {last:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_coordinator_takes_the_role_back_after_each_restart() {
    let dir = std::env::temp_dir().join(format!("innet-failback-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // Below the ephemeral range (32768): 30 ports per process id.
    let base = 21_000 + (std::process::id() % 300) as u16 * 30;
    let (b, data) = (base.to_string(), dir.join("deployment"));
    let metrics = SocketAddr::from(([127, 0, 0, 1], base + 25));
    let (m, d) = (metrics.to_string(), data.to_str().unwrap().to_string());
    let deployment = |extra: &[&str]| -> Vec<String> {
        let mut a = vec!["up", "paxos", "--base-port", &b, "--learners", "3", "--external-learners", "--proposers"];
        a.extend(["0", "--data-plane", "process", "--dir", &d, "--duration-s", "180"]);
        a.extend(extra);
        a.into_iter().map(String::from).collect()
    };
    let coordinator_args = deployment(&["--node", "coordinator"]);
    let start_coordinator = || {
        let c = spawn(&args(&coordinator_args));
        let line = c.lines.recv_timeout(Duration::from_secs(20)).expect("the coordinator starts");
        assert!(line.starts_with("coordinator 127.0.0.1:"), "{line}");
        c
    };
    let mut coordinator = start_coordinator();
    let _rest = spawn(&args(&deployment(&["--elsewhere", "coordinator", "--metrics", &m])));
    let replicas = spawn_replicas(&dir, base);
    let ports: Vec<SocketAddr> = (0..3).map(|i| SocketAddr::from(([127, 0, 0, 1], base + 20 + i))).collect();
    wait_metric(metrics, "innet_paxos_round", 0);
    let mut c = loop {
        // The replicas bind their client ports as they start.
        if let Ok(mut c) = innet_paxos_kv::KvNetClient::connect(&ports) {
            if c.cas(b"counter", None, b"0").is_ok() {
                break c;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    };

    let (acked, stop) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(false)));
    let clients: Vec<_> = (0..2)
        .map(|k| {
            let (acked, stop, mut order) = (acked.clone(), stop.clone(), ports.clone());
            order.rotate_left(k);
            std::thread::spawn(move || {
                let mut c = innet_paxos_kv::KvNetClient::connect(&order).unwrap();
                c.timeout = Duration::from_millis(400);
                let mut done = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    let now: u64 = String::from_utf8(c.get(b"counter").unwrap().unwrap()).unwrap().parse().unwrap();
                    let (old, new) = (now.to_string(), (now + 1).to_string());
                    if c.cas(b"counter", Some(old.as_bytes()), new.as_bytes()).unwrap() {
                        done += 1;
                        acked.fetch_add(1, Ordering::SeqCst);
                    }
                }
                done
            })
        })
        .collect();
    let wait_acked = |n: u64| {
        let t = Instant::now();
        while acked.load(Ordering::SeqCst) < n {
            assert!(t.elapsed() < Duration::from_secs(60), "increments stalled at {}", acked.load(Ordering::SeqCst));
            std::thread::sleep(Duration::from_millis(1));
        }
    };
    let mut rounds = vec![];
    for k in 1..=3u64 {
        wait_acked(60 * k);
        coordinator.child.kill().unwrap(); // SIGKILL
        coordinator.child.wait().unwrap();
        wait_metric(metrics, "innet_paxos_takeovers", k);
        wait_acked(60 * k + 20); // the backup orders them meanwhile
        coordinator = start_coordinator();
        wait_metric(metrics, "innet_paxos_step_downs", k);
        rounds.push(wait_metric(metrics, "innet_paxos_heard_round", 0));
    }
    wait_acked(60 * 4);
    stop.store(true, Ordering::SeqCst);
    let done: u64 = clients.into_iter().map(|t| t.join().expect("every increment completes, none errs")).sum();
    let counter = c.get(b"counter").unwrap().unwrap();
    assert_eq!(String::from_utf8(counter).unwrap(), done.to_string(), "acknowledged increments, once each");
    // The round the backup heard from the coordinator rises with each
    // restart, always the coordinator's issuer (1).
    assert!(rounds.windows(2).all(|w| w[1] > w[0]), "rounds {rounds:x?}");
    assert!(rounds.iter().all(|r| r & 0xff == 1 && r >> 8 >= 1), "rounds {rounds:x?}");
    let state = agreed(&replicas);
    println!(
        "FAILBACK increments {done} restarts 3 handbacks {} takeovers {} rounds {rounds:x?} replicas {state}",
        metric(metrics, "innet_paxos_step_downs").unwrap_or(0),
        metric(metrics, "innet_paxos_takeovers").unwrap_or(0)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `next` of [`agreed`]'s answer (every instance below it applied).
fn next_in(state: &str) -> u64 {
    state.split_whitespace().nth(1).and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{state}"))
}

/// Issue 24 item 3, "a restarted `innet up paxos` reuses its replicas'
/// directories": the whole deployment (`innet up paxos --data-plane process
/// --dir D`: coordinator, persistent acceptors, backup) and the three
/// `innet kv-replica` processes are killed with SIGKILL and started again
/// on the same directories. The deployment's start count and epochs live
/// in `D/coordinator` (the deployment epoch): the second start runs the
/// coordinator restarted, which learns from the replicas' TRIMs where the
/// log is and numbers instances past it, with phase 1 in a round above
/// every earlier one. So the keys written before are read back, writes go
/// on, the replicas' `next` keeps rising (a deployment numbering from 0
/// again would have its first instances dropped as already applied, and
/// the writes below would time out) and the replicas end identical.
#[test]
fn a_whole_deployment_started_again_reuses_its_directories() {
    let dir = std::env::temp_dir().join(format!("innet-redeploy-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let base = innet_live::ports::free_block(30, &[]).unwrap();
    let (b, d) = (base.to_string(), dir.join("deployment").to_str().unwrap().to_string());
    let deployment: Vec<String> = [
        "up",
        "paxos",
        "--base-port",
        &b,
        "--learners",
        "3",
        "--external-learners",
        "--proposers",
        "0",
        "--data-plane",
        "process",
        "--dir",
        &d,
        "--duration-s",
        "120",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    let ports: Vec<SocketAddr> = (0..3).map(|i| SocketAddr::from(([127, 0, 0, 1], base + 20 + i))).collect();
    let start = || {
        let up = spawn(&args(&deployment));
        let replicas = spawn_replicas(&dir, base);
        let t = Instant::now();
        let c = loop {
            // The replicas bind their client ports as they start; the first
            // write after a restart waits for the coordinator's phase 1.
            if let Ok(mut c) = innet_paxos_kv::KvNetClient::connect(&ports) {
                if c.put(b"alive", b"yes").is_ok() {
                    break c;
                }
            }
            assert!(t.elapsed() < Duration::from_secs(60), "the deployment does not take writes");
            std::thread::sleep(Duration::from_millis(100));
        };
        (up, replicas, c)
    };
    let key = |k: u32| format!("k{k}").into_bytes();
    let value = |k: u32| format!("v{k}").into_bytes();

    let (mut up, mut replicas, mut c) = start();
    for k in 0..50 {
        c.put(&key(k), &value(k)).unwrap();
    }
    let next_before = next_in(&agreed(&replicas));
    for p in replicas.iter_mut().chain(std::iter::once(&mut up)) {
        p.child.kill().unwrap(); // SIGKILL
        p.child.wait().unwrap();
    }

    let (_up, replicas, mut c) = start();
    for k in 0..50 {
        assert_eq!(c.get(&key(k)).unwrap(), Some(value(k)), "key {k} written before the restart");
    }
    for k in 50..100 {
        c.put(&key(k), &value(k)).unwrap();
    }
    for k in 0..100 {
        assert_eq!(c.get(&key(k)).unwrap(), Some(value(k)), "key {k}");
    }
    let state = agreed(&replicas);
    let next_after = next_in(&state);
    assert!(next_after > next_before + 50, "instances numbered on past the log: next {next_before} -> {next_after}");
    assert!(state.ends_with("keys 101"), "100 keys and `alive`: {state}");
    println!("REDEPLOY next {next_before} -> {next_after}, replicas {state}");
    let _ = std::fs::remove_dir_all(&dir);
}
