//! Catch-up beyond the ring (issue 24 item 4), live on loopback with real
//! UDP and TCP sockets and real LevelDB: a switch deployment with the
//! default ring (1,024 slots) whose three learners are key-value replicas run by
//! `run_replica` (as `innet kv-replica` runs them). One replica is stopped
//! while a client goes on writing for more than ten rings of instances,
//! then restarted on its directory: the acceptors trimmed what it missed,
//! so it copies a snapshot from a peer (counted), and afterwards holds
//! every key the others hold. Then a replica starts on an empty directory
//! and does the same. CAANS section 3.1: learners checkpoint and the
//! acceptors trim below the checkpoint; what a trimmed log cannot give
//! back, a checkpoint copied from another replica gives.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use innet_live::paxos::{LiveConfig, PaxosParams, PaxosShape, Plan};
use innet_live::Stop;
use innet_paxos_kv::{KvNetClient, Replica};

/// The default ring: a ring of 64 slots also works, but admits so few
/// instances at a time that a 512 KiB value outlasts the client's timeout.
const SLOTS: usize = innet_paxos::acceptor::ACCEPTOR_SLOTS_DEFAULT;

struct Running {
    stop: Stop,
    client: SocketAddr,
    /// Every line the replica said, in order.
    said: Arc<Mutex<Vec<String>>>,
    thread: Option<JoinHandle<std::io::Result<()>>>,
}

impl Running {
    fn start(live: &LiveConfig, id: usize, dir: &Path) -> Running {
        let (live, dir, stop) = (live.clone(), dir.to_path_buf(), Stop::new());
        let (tx, rx) = channel();
        let said = Arc::new(Mutex::new(Vec::<String>::new()));
        let (st, l) = (stop.clone(), said.clone());
        let thread = std::thread::spawn(move || {
            let any = SocketAddr::from(([127, 0, 0, 1], 0));
            let say = |line: &str| {
                if let Some(a) = line.strip_prefix("client ") {
                    let _ = tx.send(a.parse::<SocketAddr>().unwrap());
                }
                l.lock().unwrap().push(line.to_string());
            };
            innet_paxos_kv::run_replica(&live, id, &dir, Some(any), Duration::from_millis(20), &st, say, |_| ())
        });
        let Ok(client) = rx.recv_timeout(Duration::from_secs(10)) else {
            panic!("replica {id} did not start: {:?}", thread.join());
        };
        Running { stop, client, said, thread: Some(thread) }
    }
    fn kill(&mut self) {
        self.stop.stop();
        if let Some(t) = self.thread.take() {
            t.join().unwrap().unwrap();
        }
    }
    /// A field of the last status line (`applied N next I digest H ...`).
    fn field(&self, name: &str) -> Option<String> {
        let said = self.said.lock().unwrap();
        let s = said.iter().rev().find(|l| l.starts_with("applied "))?;
        let w: Vec<&str> = s.split_whitespace().collect();
        w.iter().position(|x| *x == name).and_then(|i| Some(w.get(i + 1)?.to_string()))
    }
    fn number(&self, name: &str) -> u64 {
        self.field(name).and_then(|v| v.parse().ok()).unwrap_or(0)
    }
    fn snapshot_lines(&self) -> Vec<String> {
        self.said.lock().unwrap().iter().filter(|l| l.starts_with("snapshot ")).cloned().collect()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.stop();
    }
}

fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let t = Instant::now();
    while !ok() {
        assert!(t.elapsed() < Duration::from_secs(120), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every key and value of the replica directory (opened after its
/// replica stopped).
fn contents(live: &LiveConfig, dir: &Path) -> Vec<(Vec<u8>, Vec<u8>)> {
    Replica::open(dir, live.learner_config(0)).unwrap().contents()
}

/// Writes (20 commands at least) until replica `r` reports `next` at
/// least `until`; returns the number of commands.
fn write_until(kv: &mut KvNetClient, r: &Running, until: u64, round: u32) -> u32 {
    let mut n = 0u32;
    while n == 0 || r.number("next") < until {
        for _ in 0..20 {
            let key = format!("key{:04}", n % 150);
            match n % 10 {
                7 => kv.delete(key.as_bytes()).unwrap(),
                8 => {
                    let _ = kv.cas(key.as_bytes(), None, format!("cas{round}-{n}").as_bytes()).unwrap();
                }
                _ => kv
                    .put(key.as_bytes(), format!("value{round}-{n}-{}", "x".repeat((n % 40) as usize)).as_bytes())
                    .unwrap(),
            }
            n += 1;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    n
}

/// Waits until all running replicas report the same next instance and
/// digest, with no write in between.
fn wait_same(rs: &[&Running]) {
    wait_for("the replicas to agree", || {
        let first = (rs[0].field("next"), rs[0].field("digest"));
        first.0.is_some() && rs.iter().all(|r| (r.field("next"), r.field("digest")) == first)
    });
}

#[test]
fn a_replica_down_for_ten_rings_catches_up_by_snapshot() {
    let base = innet_live::ports::free_block(10, &[]).unwrap();
    let live = LiveConfig {
        shape: PaxosShape { learners: 3, proposers: 0, ..PaxosShape::default() },
        params: PaxosParams { slots: SLOTS, ..PaxosParams::default() },
        base_port: base,
        external_learners: true,
        ..LiveConfig::default()
    };
    let stop = Stop::new();
    let mut plan = Plan::bind(&live).unwrap();
    let _core = plan.spawn_core(&stop).unwrap();
    let dir = std::env::temp_dir().join(format!("innet-kv-snapshot-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let dirs: Vec<PathBuf> = (0..3).map(|i| dir.join(format!("r{i}"))).collect();
    let mut rs: Vec<Running> = (0..3).map(|i| Running::start(&live, i, &dirs[i])).collect();
    let mut kv = KvNetClient::connect(&[rs[0].client, rs[1].client]).unwrap();
    for i in 0..20 {
        kv.put(format!("early{i}").as_bytes(), b"before").unwrap();
    }
    wait_same(&[&rs[0], &rs[1], &rs[2]]);

    // Replica 2 down while the others go on for more than ten rings.
    let down_at = rs[2].number("next");
    rs[2].kill();
    let ring = SLOTS as u64;
    let commands = write_until(&mut kv, &rs[0], down_at + 10 * ring + ring, 1);
    let gap = rs[0].number("next") - down_at;
    assert!(gap > 10 * ring, "the gap is {gap} instances");
    rs[2] = Running::start(&live, 2, &dirs[2]);
    wait_for("replica 2's snapshot", || rs[2].number("snapshots") >= 1);
    // It follows the log afterwards: commands through its own client port.
    let mut via2 = KvNetClient::connect(&[rs[2].client]).unwrap();
    for i in 0..30 {
        via2.put(format!("after{i}").as_bytes(), b"restart").unwrap();
    }
    assert_eq!(via2.get(b"early3").unwrap(), Some(b"before".to_vec()));
    wait_same(&[&rs[0], &rs[1], &rs[2]]);
    let lines = rs[2].snapshot_lines();
    eprintln!("KV_SNAPSHOT restarted: down at {down_at}, gap {gap} instances ({commands} commands); {lines:?}");
    assert!(lines.iter().any(|l| l.contains(" instance ")), "{lines:?}");

    // A brand-new replica: replica 1 on an empty directory, after its
    // first life served commands of its own (its front end's proposer id
    // and request numbers are in every replica's duplicate filter).
    let mut old1 = KvNetClient::connect(&[rs[1].client]).unwrap();
    for i in 0..5 {
        old1.put(format!("first-life{i}").as_bytes(), b"replica 1").unwrap();
    }
    wait_same(&[&rs[0], &rs[1], &rs[2]]);
    rs[1].kill();
    std::fs::remove_dir_all(&dirs[1]).unwrap();
    rs[1] = Running::start(&live, 1, &dirs[1]);
    let mut kv = KvNetClient::connect(&[rs[0].client, rs[2].client]).unwrap();
    let more = write_until(&mut kv, &rs[0], rs[0].number("next") + ring, 2);
    wait_for("replica 1's snapshot", || rs[1].number("snapshots") >= 1);
    // Its front end's proposer id is its first life's (a new directory
    // counts its opens from 1 again): it numbers its values above the ones
    // the snapshot records, so the first put is not taken for a duplicate
    // of the first life's (which cost one client timeout per value that
    // life sent: 5 here).
    let mut via1 = KvNetClient::connect(&[rs[1].client]).unwrap();
    via1.timeout = Duration::from_secs(5);
    via1.put(b"new", b"replica").unwrap();
    assert_eq!(via1.sends, 1, "the first put through the brand-new replica was answered at once");
    // Every replica has applied it (status lines lag: ask each through
    // its own port; a read is ordered after the put).
    for r in &rs {
        let mut c = KvNetClient::connect(&[r.client]).unwrap();
        assert_eq!(c.get(b"new").unwrap(), Some(b"replica".to_vec()));
    }
    wait_same(&[&rs[0], &rs[1], &rs[2]]);
    let lines = rs[1].snapshot_lines();
    eprintln!("KV_SNAPSHOT new: {more} commands while it started; {lines:?}");

    for r in &mut rs {
        r.kill();
    }
    let stores: Vec<_> = dirs.iter().map(|d| contents(&live, d)).collect();
    assert!(stores[0].len() > 100, "{} keys", stores[0].len());
    for (i, s) in stores.iter().enumerate().skip(1) {
        assert_eq!(s.len(), stores[0].len(), "replica {i}'s keys");
        for (a, b) in s.iter().zip(&stores[0]) {
            assert_eq!(a, b, "replica {i} differs from replica 0");
        }
    }
    eprintln!("KV_SNAPSHOT equal: {} keys on each of 3 replicas", stores[0].len());
    stop.stop();
    drop(_core);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Keys of the snapshots the crash test installs, each `KEYS` records.
const KEYS: usize = 20_000;

/// Generation `g`'s snapshot: every key holds `g`, `m/next` is `g`.
fn generation(g: u32) -> innet_paxos_kv::snapshot::Snapshot {
    let mut records: Vec<(Vec<u8>, Vec<u8>)> =
        (0..KEYS).map(|k| (format!("d/key{k:06}").into_bytes(), format!("{g:0100}").into_bytes())).collect();
    records.push((b"m/next".to_vec(), g.to_be_bytes().to_vec()));
    innet_paxos_kv::snapshot::Snapshot { instance: g, records, bytes: 0 }
}

/// The child of `an_install_killed_midway_leaves_one_whole_store`: installs
/// generation after generation into the directory it is given, until it is
/// killed. Does nothing without `INNET_SNAPSHOT_CRASH_DIR`.
#[test]
fn install_until_killed() {
    let Some(dir) = std::env::var_os("INNET_SNAPSHOT_CRASH_DIR") else { return };
    let mut r = Replica::open(Path::new(&dir), innet_paxos::LearnerConfig::new(0, 2)).unwrap();
    let mut g = r.learner.checkpoint();
    println!("INSTALLING from {g}");
    loop {
        g += 1;
        let s = generation(g);
        r.install(&s).unwrap();
    }
}

/// Issue 24 item 4: installing a snapshot is atomic. A process installing
/// snapshots of 20,000 keys (about 2.2 MB each) one after the other is
/// killed with SIGKILL at 12 moments spread over the installs; each time
/// the directory opens (`Replica::open`) and holds one whole generation:
/// every key, each with the value of the generation `m/next` names, or
/// nothing at all before the first install.
#[test]
fn an_install_killed_midway_leaves_one_whole_store() {
    let dir = std::env::temp_dir().join(format!("innet-kv-snapshot-crash-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut generations = vec![];
    for round in 0..12u64 {
        let mut child = std::process::Command::new(&exe)
            .args(["--exact", "install_until_killed", "--nocapture", "--test-threads", "1"])
            .env("INNET_SNAPSHOT_CRASH_DIR", &dir)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Wait until it opened the directory, then kill it at a moment
        // that moves through the installs (each takes tens of ms).
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        while !line.contains("INSTALLING") {
            line.clear();
            assert!(std::io::BufRead::read_line(&mut out, &mut line).unwrap() > 0, "the child ended");
        }
        std::thread::sleep(Duration::from_millis(40 + round * 23));
        child.kill().unwrap();
        child.wait().unwrap();
        let r = Replica::open(&dir, innet_paxos::LearnerConfig::new(0, 2)).unwrap();
        let g = r.learner.checkpoint();
        let contents = r.contents();
        if g == 0 {
            assert!(contents.is_empty(), "round {round}: keys without a generation");
        } else {
            assert_eq!(contents.len(), KEYS, "round {round}: generation {g} is not whole");
            let want = format!("{g:0100}").into_bytes();
            assert!(contents.iter().all(|(_, v)| *v == want), "round {round}: a mix of generations");
        }
        generations.push(g);
    }
    eprintln!("KV_SNAPSHOT_CRASH generations after each kill: {generations:?}");
    assert!(generations.windows(2).all(|w| w[0] <= w[1]), "{generations:?}");
    assert!(generations.last() > Some(&0), "no install finished: {generations:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
