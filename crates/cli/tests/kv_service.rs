//! Issue 24 acceptance, with real processes: `innet up paxos` with three
//! learners in other processes, three `innet kv-replica` processes with
//! client ports, and clients in other processes (this test's, and `innet
//! kv`). A client counting with compare-and-set (each increment expects
//! the last value: a command applied twice would fail the next CAS) keeps
//! counting while its replica is killed with SIGKILL: one timeout, one
//! failover, no error, every increment there once. A 1 MiB value goes in
//! through `innet kv put --value-file` and comes out of `innet kv get`
//! byte for byte. CAANS section 5's key-value store, reached over the
//! network.

#![cfg(feature = "leveldb")]

use std::net::SocketAddr;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;

use common::{spawn, Proc};

fn innet(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_innet")).args(args).output().expect("innet runs")
}

/// `innet up paxos` flags of the tests' deployment: learners in other
/// processes (the replicas), no built-in proposers.
fn deployment(base: &str) -> Vec<&str> {
    vec!["up", "paxos", "--base-port", base, "--learners", "3", "--external-learners", "--proposers", "0"]
}

/// Three replica processes of the deployment at `base`, with client ports
/// from `base + 20`; their client ports once they run.
fn start_replicas(dir: &std::path::Path, base: u16) -> (Vec<Proc>, Vec<SocketAddr>) {
    let replicas: Vec<Proc> = (0..3).map(|i| start_replica(dir, base, i)).collect();
    let ports = replicas
        .iter()
        .map(|r| loop {
            let line = r.lines.recv_timeout(Duration::from_secs(20)).expect("the replica starts");
            if let Some(a) = line.strip_prefix("client ") {
                break a.parse().unwrap();
            }
        })
        .collect();
    (replicas, ports)
}

fn fresh_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("innet-kv-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The tests run one at a time: each loads the 2 cores with a deployment,
/// and the first counts timeouts (a client's 400 ms), which the others'
/// load can add.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// A deployment (`innet up paxos`) with its three replica processes.
struct Service {
    dir: std::path::PathBuf,
    up: Proc,
    replicas: Vec<Proc>,
    ports: Vec<SocketAddr>,
    base: u16,
}

/// A [`Service`] on a fresh directory, on a block of 30 free ports.
fn service(name: &str) -> Service {
    let dir = fresh_dir(name);
    let base = innet_live::ports::free_block(30, &[]).unwrap();
    let up = spawn(&[&deployment(&base.to_string())[..], &["--duration-s", "120"]].concat());
    let (replicas, ports) = start_replicas(&dir, base);
    Service { dir, up, replicas, ports, base }
}

#[test]
fn a_client_in_another_process_survives_its_replica_killed() {
    let _serial = one_at_a_time();
    let Service { dir, up: _up, mut replicas, ports, .. } = service("service-procs");
    let list = ports.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(",");

    // The command line, in its own processes.
    let out = innet(&["kv", "put", "greeting", "hello", "--replicas", &list]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n", "{}", String::from_utf8_lossy(&out.stderr));
    let out = innet(&["kv", "get", "greeting", "--replicas", &list]);
    assert_eq!(out.stdout, b"hello");
    let out = innet(&["kv", "cas", "greeting", "bye", "--expect", "nope", "--replicas", &list]);
    assert_eq!(out.status.code(), Some(1), "a CAS that does not hold");
    let big: Vec<u8> = (0..1u32 << 20).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8).collect();
    let file = dir.join("big");
    std::fs::write(&file, &big).unwrap();
    let out = innet(&["kv", "put", "big", "--value-file", file.to_str().unwrap(), "--replicas", &list]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = innet(&["kv", "get", "big", "--replicas", &list]);
    assert!(out.stdout == big, "1 MiB came back as {} bytes", out.stdout.len());
    let out = innet(&["kv", "get", "nothing", "--replicas", &list]);
    assert_eq!((out.status.code(), out.stdout.len()), (Some(1), 0), "no such key");

    // A counter by CAS; the client's replica (the first) dies at 100.
    let mut c = innet_paxos_kv::KvNetClient::connect(&ports).unwrap();
    c.timeout = Duration::from_millis(400);
    let total = 300u32;
    assert!(c.cas(b"counter", None, b"0").unwrap());
    for n in 0..total {
        if n == 100 {
            replicas[0].child.kill().unwrap();
            replicas[0].child.wait().unwrap();
        }
        let (old, new) = (n.to_string(), (n + 1).to_string());
        assert!(c.cas(b"counter", Some(old.as_bytes()), new.as_bytes()).unwrap(), "increment {n} applied twice?");
    }
    assert_eq!(c.get(b"counter").unwrap(), Some(total.to_string().into_bytes()));
    assert_eq!(c.failovers, 1, "one timeout, then the next replica");
    println!("KV_SERVICE increments {total} failovers {} sends {}", c.failovers, c.sends);
    drop(replicas);
    let _ = std::fs::remove_dir_all(&dir);
}

/// CAANS section 3.1's failover under the key-value service: the
/// coordinator runs in a process of its own (`innet up paxos --node
/// coordinator`, the rest with `--elsewhere coordinator`) and is killed
/// with SIGKILL while two clients count on one key by compare-and-set.
/// The backup's TAKEOVER reaches the replicas' front ends through their
/// learners; they resubmit what was pending to the backup. Every
/// increment a client counts as done (its CAS answered OK) is in the
/// counter exactly once: a CAS applied twice would make the counter run
/// ahead of the acknowledged increments, a lost one would leave it behind.
#[test]
fn the_service_keeps_counting_when_the_coordinator_is_killed() {
    let _serial = one_at_a_time();
    let dir = fresh_dir("coordinator-killed");
    let base = innet_live::ports::free_block(30, &[]).unwrap();
    let b = base.to_string();
    let mut coordinator = spawn(&[&deployment(&b)[..], &["--node", "coordinator", "--duration-s", "120"]].concat());
    let line = coordinator.lines.recv_timeout(Duration::from_secs(20)).expect("the coordinator starts");
    assert!(line.starts_with("coordinator 127.0.0.1:"), "{line}");
    let _rest = spawn(&[&deployment(&b)[..], &["--elsewhere", "coordinator", "--duration-s", "120"]].concat());
    let (_replicas, ports) = start_replicas(&dir, base);
    let mut c = innet_paxos_kv::KvNetClient::connect(&ports).unwrap();
    assert!(c.cas(b"counter", None, b"0").unwrap());

    const PER_CLIENT: u64 = 150;
    let acked = Arc::new(AtomicU64::new(0));
    let clients: Vec<_> = (0..2)
        .map(|k| {
            let (acked, mut order) = (acked.clone(), ports.clone());
            order.rotate_left(k);
            std::thread::spawn(move || {
                let mut c = innet_paxos_kv::KvNetClient::connect(&order).unwrap();
                c.timeout = Duration::from_millis(400);
                let (mut done, mut failed_cas, mut acks) = (0, 0, vec![]);
                while done < PER_CLIENT {
                    let now: u64 = String::from_utf8(c.get(b"counter").unwrap().unwrap()).unwrap().parse().unwrap();
                    let (old, new) = (now.to_string(), (now + 1).to_string());
                    if c.cas(b"counter", Some(old.as_bytes()), new.as_bytes()).unwrap() {
                        done += 1;
                        acked.fetch_add(1, Ordering::SeqCst);
                        acks.push(Instant::now());
                    } else {
                        failed_cas += 1; // the other client got there first
                    }
                }
                (acks, failed_cas, c.failovers)
            })
        })
        .collect();
    while acked.load(Ordering::SeqCst) < 100 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let killed_at = Instant::now();
    coordinator.child.kill().unwrap(); // SIGKILL
    coordinator.child.wait().unwrap();
    let at_kill = acked.load(Ordering::SeqCst);
    let mut acks = vec![];
    let (mut failed_cas, mut failovers) = (0, 0);
    for t in clients {
        let (a, f, o) = t.join().expect("every increment completes, none errs");
        acks.extend(a);
        failed_cas += f;
        failovers += o;
    }
    acks.sort();
    let after_kill = acks.iter().filter(|&&t| t > killed_at).count();
    let gap = acks.windows(2).map(|w| w[1] - w[0]).max().unwrap();
    let counter = c.get(b"counter").unwrap().unwrap();
    assert_eq!(String::from_utf8(counter).unwrap(), (2 * PER_CLIENT).to_string(), "acknowledged increments, once each");
    assert_eq!(acks.len() as u64, 2 * PER_CLIENT);
    // Only the backup can order them now.
    assert!(after_kill >= 100, "increments went on after the kill: {after_kill}");
    println!(
        "KV_COORDINATOR_KILLED increments {} at_kill {at_kill} after_kill {after_kill} lost_races {failed_cas} \
         failovers {failovers} longest_gap_ms {:.1}",
        acks.len(),
        gap.as_secs_f64() * 1e3
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The `innet kv-replica` process of replica `id` at `base` on `dir`.
fn start_replica(dir: &std::path::Path, base: u16, id: usize) -> Proc {
    let d = dir.join(format!("r{id}"));
    let (b, client_port) = (base.to_string(), (base + 20 + id as u16).to_string());
    let args = ["kv-replica", "--id", &id.to_string(), "--data-dir", d.to_str().unwrap(), "--base-port", &b];
    spawn(&[&args[..], &["--learners", "3", "--client-port", &client_port, "--status-ms", "50"]].concat())
}

/// Waits for a line of `p` starting with `prefix`.
fn line_starting(p: &Proc, prefix: &str) -> String {
    loop {
        let line = p.lines.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|_| panic!("no `{prefix}` line"));
        if line.starts_with(prefix) {
            return line;
        }
    }
}

/// Waits until every replica's latest status line says the same `next`,
/// `digest` and `keys`, with `keys` keys; returns that.
fn agreed(replicas: &[Proc], keys: usize) -> String {
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
        if last[0].ends_with(&format!(" keys {keys}")) && last.iter().all(|l| *l == last[0]) {
            return last[0].clone();
        }
        assert!(t.elapsed() < Duration::from_secs(60), "the replicas do not agree: {last:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Issue 24 item 4 with processes: replica 2 is killed with SIGKILL while
/// a 300 KB value (about 15,000 instances, more than ten of the default
/// 1,024-slot rings) and small puts go in through the others; restarted
/// on its directory it installs a snapshot from a peer (its `snapshot
/// from` line), answers for the value byte for byte, and all three
/// replicas' status lines agree (the same next instance, digest of every
/// key and value, key count). Then replica 1 restarts on an empty
/// directory and does the same.
#[test]
fn a_replica_killed_for_ten_rings_catches_up_by_snapshot() {
    let _serial = one_at_a_time();
    let Service { dir, up: _up, mut replicas, ports, base } = service("snapshot-procs");
    let mut c = innet_paxos_kv::KvNetClient::connect(&ports[..2]).unwrap();
    c.put(b"first", b"1").unwrap();
    replicas[2].child.kill().unwrap(); // SIGKILL
    replicas[2].child.wait().unwrap();
    let big: Vec<u8> = (0..300_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8).collect();
    let file = dir.join("big");
    std::fs::write(&file, &big).unwrap();
    let two = format!("{},{}", ports[0], ports[1]);
    let out = innet(&["kv", "put", "big", "--value-file", file.to_str().unwrap(), "--replicas", &two]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for i in 0..20 {
        c.put(format!("k{i}").as_bytes(), b"v").unwrap();
    }
    replicas[2] = start_replica(&dir, base, 2);
    let restarted = line_starting(&replicas[2], "snapshot from");
    let out = innet(&["kv", "get", "big", "--replicas", &ports[2].to_string()]);
    assert!(out.stdout == big, "300 KB came back as {} bytes", out.stdout.len());
    let state = agreed(&replicas, 22); // first, big, k0..k19

    replicas[1].child.kill().unwrap();
    replicas[1].child.wait().unwrap();
    std::fs::remove_dir_all(dir.join("r1")).unwrap();
    replicas[1] = start_replica(&dir, base, 1);
    let fresh = line_starting(&replicas[1], "snapshot from");
    let mut via1 = innet_paxos_kv::KvNetClient::connect(&ports[1..2]).unwrap();
    via1.put(b"last", b"2").unwrap();
    assert_eq!(via1.get(b"first").unwrap(), Some(b"1".to_vec()));
    let end = agreed(&replicas, 23); // and last
    println!("KV_SNAPSHOT_PROCESSES restarted: {restarted}; {state}; empty directory: {fresh}; {end}");
    drop(replicas);
    let _ = std::fs::remove_dir_all(&dir);
}
