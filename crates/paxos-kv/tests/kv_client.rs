//! The replicated key-value store end to end, live on loopback: a client
//! submits through its proposer and reads each result from its co-located
//! LevelDB replica (the paper's setup, section 5). put k=v, get k is v,
//! delete k, get k is none; a second replica applies the same commands.

use std::path::PathBuf;

use innet_core::deploy::DataPlaneAt;
use innet_live::paxos::{LiveConfig, PaxosShape, Plan};
use innet_live::{spawn_host, Stop};
use innet_paxos_kv::{Command, KvClient, Outcome, Replica};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("innet-kv-client-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn run(data_plane: DataPlaneAt) {
    let tag = data_plane.name();
    let cfg = LiveConfig {
        data_plane,
        shape: PaxosShape { acceptors: 3, learners: 2, proposers: 1, ..PaxosShape::default() },
        ..LiveConfig::default()
    };
    let stop = Stop::new();
    let mut plan = Plan::bind(&cfg).unwrap();
    let _core = plan.spawn_core(&stop).unwrap();
    let (d0, d1) = (dir(&format!("{tag}-0")), dir(&format!("{tag}-1")));
    let other = Replica::open(&d1, cfg.learner_config(1)).unwrap();
    let mut slot = Some(other);
    let other = spawn_host(
        "replica1",
        plan.take_learner_socket(1),
        plan.learner_options(1),
        &stop,
        move || slot.take().expect("built once"),
        |r, _| r,
    )
    .unwrap();
    let mut client = KvClient::spawn(&mut plan, 0, 0, &d0, &stop).unwrap();

    assert_eq!(client.get(b"k").unwrap(), None, "empty store");
    client.put(b"k", b"v").unwrap();
    assert_eq!(client.get(b"k").unwrap(), Some(b"v".to_vec()));
    client.put(b"k", b"w").unwrap();
    assert_eq!(client.get(b"k").unwrap(), Some(b"w".to_vec()), "the later put");
    client.delete(b"k").unwrap();
    assert_eq!(client.get(b"k").unwrap(), None, "deleted");
    client.put(b"k2", b"x").unwrap();
    assert_eq!(client.execute(&Command::Get { key: b"k2".to_vec() }).unwrap(), Outcome::Value(Some(b"x".to_vec())));
    assert!(client.put(&[0; 12], &[0; 11]).is_err(), "wider than one command");

    let mine = client.shutdown().unwrap();
    assert_eq!(mine.contents(), vec![(b"k2".to_vec(), b"x".to_vec())]);
    assert_eq!(mine.applied, 9, "each command applied once");
    let other = other.shutdown().unwrap();
    // The other replica applied a prefix of the same sequence (it may not
    // have seen the last votes yet when stopped).
    assert!(other.applied <= mine.applied);
    if other.applied == mine.applied {
        assert_eq!(other.digest(), mine.digest());
    }
    stop.stop();
    drop((mine, other));
    let _ = std::fs::remove_dir_all(&d0);
    let _ = std::fs::remove_dir_all(&d1);
}

#[test]
fn put_get_delete_through_a_replica_switch() {
    run(DataPlaneAt::Switch);
}

#[test]
fn put_get_delete_through_a_replica_process() {
    run(DataPlaneAt::Process);
}
