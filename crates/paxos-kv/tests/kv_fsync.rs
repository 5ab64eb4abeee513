//! `innet kv-replica --fsync` (issue 24 item 5) reaches the store: three
//! replicas run by `run_replica_synced` (as `innet kv-replica` runs them)
//! in a switch deployment on loopback, a network client's puts, and each
//! replica's published counters: with `none` no sync, with `always` one
//! per applied write batch, with `batch` at least one and at most one per
//! write batch (one per received batch of packets that applied something).

use std::net::SocketAddr;
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

use innet_live::paxos::acceptor_store::Fsync;
use innet_live::paxos::{LiveConfig, PaxosShape, Plan};
use innet_live::{LiveCounters, Stop};
use innet_paxos_kv::KvNetClient;

fn counter(c: &LiveCounters, name: &str) -> u64 {
    c.read().0.iter().find(|(n, _)| *n == name).map_or(0, |(_, v)| *v)
}

#[test]
fn the_fsync_policy_reaches_the_store() {
    for fsync in Fsync::ALL {
        let base = innet_live::ports::free_block(10, &[]).unwrap();
        let live = LiveConfig {
            shape: PaxosShape { learners: 3, proposers: 0, ..PaxosShape::default() },
            base_port: base,
            external_learners: true,
            ..LiveConfig::default()
        };
        let stop = Stop::new();
        let mut plan = Plan::bind(&live).unwrap();
        let _core = plan.spawn_core(&stop).unwrap();
        let dir = std::env::temp_dir().join(format!("innet-kv-fsync-{}-{}", std::process::id(), fsync.name()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut ports = vec![];
        let mut counters = vec![];
        let mut threads = vec![];
        for i in 0..3 {
            let (live, d, st) = (live.clone(), dir.join(format!("r{i}")), stop.clone());
            let (tx, rx) = channel();
            let (ctx, crx) = channel();
            threads.push(std::thread::spawn(move || {
                let any = SocketAddr::from(([127, 0, 0, 1], 0));
                let say = |line: &str| {
                    if let Some(a) = line.strip_prefix("client ") {
                        let _ = tx.send(a.parse::<SocketAddr>().unwrap());
                    }
                };
                let started = |c: &LiveCounters| {
                    let _ = ctx.send(c.clone());
                };
                let every = Duration::from_millis(50);
                innet_paxos_kv::run_replica_synced(&live, i, &d, Some(any), every, fsync, &st, say, started)
            }));
            ports.push(rx.recv_timeout(Duration::from_secs(10)).expect("the replica starts"));
            counters.push(crx.recv_timeout(Duration::from_secs(10)).expect("the replica runs"));
        }
        let mut c = KvNetClient::connect(&ports).unwrap();
        for n in 0..20u32 {
            c.put(format!("k{n}").as_bytes(), b"v").unwrap();
        }
        // Every replica applied the last put once its counters say so.
        let until = Instant::now() + Duration::from_secs(10);
        let applied = |c: &LiveCounters| counter(c, "commands") >= 20;
        while !counters.iter().all(applied) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(50));
        for (i, cs) in counters.iter().enumerate() {
            let (writes, syncs) = (counter(cs, "store_writes"), counter(cs, "store_syncs"));
            println!("KV_FSYNC {} replica{i} writes {writes} syncs {syncs}", fsync.name());
            assert!(writes >= 20, "{}: replica{i} wrote {writes} batches", fsync.name());
            match fsync {
                Fsync::None => assert_eq!(syncs, 0, "replica{i}"),
                Fsync::Always => assert_eq!(syncs, writes, "replica{i}"),
                Fsync::Batch => assert!(syncs >= 1 && syncs <= writes, "replica{i}: {syncs} of {writes}"),
            }
        }
        stop.stop();
        for t in threads {
            t.join().unwrap().unwrap();
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
