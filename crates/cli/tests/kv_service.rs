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

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

struct Proc {
    child: Child,
    lines: Receiver<String>,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(args: &[&str]) -> Proc {
    let mut child = Command::new(env!("CARGO_BIN_EXE_innet"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("innet runs");
    let out = BufReader::new(child.stdout.take().unwrap());
    let (tx, lines) = channel();
    std::thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    Proc { child, lines }
}

fn innet(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_innet")).args(args).output().expect("innet runs")
}

#[test]
fn a_client_in_another_process_survives_its_replica_killed() {
    let dir = std::env::temp_dir().join(format!("innet-kv-service-procs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let base = 45_000 + (std::process::id() % 500) as u16 * 30;
    let b = base.to_string();
    let _up = spawn(&[
        "up",
        "paxos",
        "--base-port",
        &b,
        "--learners",
        "3",
        "--external-learners",
        "--proposers",
        "0",
        "--duration-s",
        "120",
    ]);
    let mut replicas: Vec<Proc> = (0..3)
        .map(|i| {
            let d = dir.join(format!("r{i}"));
            let client_port = (base + 20 + i as u16).to_string();
            let args = ["kv-replica", "--id", &i.to_string(), "--data-dir", d.to_str().unwrap()];
            spawn(&[&args[..], &["--base-port", &b, "--learners", "3", "--client-port", &client_port]].concat())
        })
        .collect();
    let ports: Vec<SocketAddr> = replicas
        .iter()
        .map(|r| loop {
            let line = r.lines.recv_timeout(Duration::from_secs(20)).expect("the replica starts");
            if let Some(a) = line.strip_prefix("client ") {
                break a.parse().unwrap();
            }
        })
        .collect();
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
