//! The replicated key-value store survives `kill -9` of one replica (issue
//! 3 acceptance; CAANS section 6.3's replicated LevelDB): a deployment with
//! three replicas in their own processes runs a put/delete/get load; one
//! replica is killed with SIGKILL and restarted on the same LevelDB
//! directory; after it caught up (from its peers and the acceptors) all
//! three replicas have applied the same instances and hold identical
//! contents.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Proc {
    child: Child,
    last: Arc<Mutex<String>>,
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
    let last = Arc::new(Mutex::new(String::new()));
    let l = last.clone();
    std::thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            *l.lock().unwrap() = line;
        }
    });
    Proc { child, last }
}

fn replica(id: usize, dir: &Path, base: u16) -> Proc {
    let d = dir.join(format!("r{id}"));
    spawn(&["kv-replica", "--id", &id.to_string(), "--data-dir", d.to_str().unwrap(), "--base-port", &base.to_string()])
}

/// `next N digest H`: what a replica's status line says it applied.
fn state(p: &Proc) -> String {
    let s = p.last.lock().unwrap().clone();
    let w: Vec<&str> = s.split_whitespace().collect();
    if w.len() >= 8 && w[0] == "applied" {
        format!("next {} digest {} keys {}", w[3], w[5], w[7])
    } else {
        String::new()
    }
}

#[test]
fn replicas_agree_after_kill_9_and_restart() {
    let dir = std::env::temp_dir().join(format!("innet-paxos-kv-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // 9 consecutive free ports, below the ephemeral range (a killed
    // replica's port must still be free when it restarts).
    let base = innet_live::ports::free_block(9, &[]).unwrap();
    let b = base.to_string();
    let _up = spawn(&[
        "up",
        "paxos",
        "--base-port",
        &b,
        "--learners",
        "3",
        "--external-learners",
        "--kv-load",
        "--load-s",
        "3",
        "--duration-s",
        "60",
    ]);
    let mut replicas: Vec<Proc> = (0..3).map(|i| replica(i, &dir, base)).collect();
    std::thread::sleep(Duration::from_millis(1200));
    // SIGKILL: no chance to flush or say goodbye.
    replicas[1].child.kill().unwrap();
    replicas[1].child.wait().unwrap();
    let killed_at = state(&replicas[1]);
    std::thread::sleep(Duration::from_millis(800));
    replicas[1] = replica(1, &dir, base);
    // The load stops at 3 s; wait until the three agree (or give up).
    let started = Instant::now();
    let states = loop {
        std::thread::sleep(Duration::from_millis(300));
        let s: Vec<String> = replicas.iter().map(state).collect();
        let done = started.elapsed() > Duration::from_secs(3) && !s[0].is_empty() && s.iter().all(|x| *x == s[0]);
        if done || started.elapsed() > Duration::from_secs(40) {
            break s;
        }
    };
    println!("replica 1 at the kill: {killed_at}; final: {states:?}");
    assert!(!states[0].is_empty(), "no status from replica 0");
    assert!(states.iter().all(|s| *s == states[0]), "replicas differ: {states:?}");
    let next: u64 = states[0].split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(next > 1000, "only {next} instances applied");
    drop(replicas);
    let _ = std::fs::remove_dir_all(&dir);
}
