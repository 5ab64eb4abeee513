//! The key-value service's C client (`include/innet_kv.h`,
//! `examples/c/kv_example.c`) builds with cc against the shared library
//! and talks to three replicas (run as `innet kv-replica` runs them, real
//! UDP and LevelDB): put, get, CAS, delete, then a CAS counter to 200
//! while its first replica is stopped at 60, which costs it one timeout
//! and no error; each increment expects the previous value, so one applied
//! twice would fail the next.

mod common;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::mpsc::channel;
use std::time::Duration;

use innet_live::paxos::{LiveConfig, PaxosShape, Plan};
use innet_live::Stop;

#[test]
fn the_c_client_counts_across_a_replica_stopped() {
    let (exe, lib_dir) = (common::compile_example("cc", "kv_example"), common::library_dir());

    let base = innet_live::ports::free_block(20, &[]).unwrap();
    let live = LiveConfig {
        shape: PaxosShape { learners: 3, proposers: 0, ..PaxosShape::default() },
        base_port: base,
        external_learners: true,
        ..LiveConfig::default()
    };
    let stop = Stop::new();
    let mut plan = Plan::bind(&live).unwrap();
    let _core = plan.spawn_core(&stop).unwrap();
    let dir = std::env::temp_dir().join(format!("innet-c-kv-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut replicas = vec![];
    let mut ports = vec![];
    for i in 0..3 {
        let (live, d, st) = (live.clone(), dir.join(format!("r{i}")), Stop::new());
        let (tx, rx) = channel();
        let s = st.clone();
        let thread = std::thread::spawn(move || {
            let say = |line: &str| {
                if let Some(a) = line.strip_prefix("client ") {
                    let _ = tx.send(a.parse::<SocketAddr>().unwrap());
                }
            };
            let any = SocketAddr::from(([127, 0, 0, 1], 0));
            innet_paxos_kv::run_replica(&live, i, &d, Some(any), Duration::from_millis(50), &s, say, |_| ())
        });
        ports.push(rx.recv_timeout(Duration::from_secs(10)).expect("the replica starts").to_string());
        replicas.push((st, thread));
    }

    let mut child = Command::new(&exe)
        .arg(ports.join(","))
        .arg("200")
        .env("LD_LIBRARY_PATH", &lib_dir)
        .stdout(Stdio::piped())
        .spawn()
        .expect("the example runs");
    let mut last = String::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        last = line.unwrap();
        if last == "count 60" {
            let (st, thread) = replicas.remove(0);
            st.stop();
            thread.join().unwrap().unwrap();
        }
    }
    assert!(child.wait().unwrap().success(), "the C client failed after: {last}");
    assert_eq!(last, "counter 200 failovers 1", "every increment once; one timeout for the stopped replica");
    println!("C_KV_CLIENT {last}");
    for (st, thread) in replicas {
        st.stop();
        thread.join().unwrap().unwrap();
    }
    stop.stop();
    let _ = std::fs::remove_dir_all(&dir);
}
