//! `kill -9` durability: every commit the store acknowledged is there after a
//! restart on the same data directory, and so is every client's exactly-once
//! record (a resend gets the same reply).

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use innet_wire::txn::{Op, Status, TxnMsg, Value};

struct Store {
    child: Child,
    addr: SocketAddr,
    _stdout: BufReader<ChildStdout>,
}

impl Drop for Store {
    fn drop(&mut self) {
        // Never leave a store behind, even when an assertion fails.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_store(dir: &Path) -> Store {
    let mut child = Command::new(env!("CARGO_BIN_EXE_innet"))
        .args(["store", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("innet runs");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("store ")
        .unwrap_or_else(|| panic!("expected 'store ADDR' first, got {line:?}"))
        .parse()
        .unwrap();
    Store { child, addr, _stdout: stdout }
}

fn socket() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    s
}

/// Sends `msg` until the matching reply comes (5 s at most); returns its bytes.
fn call(s: &UdpSocket, to: SocketAddr, msg: &TxnMsg) -> Vec<u8> {
    let t0 = Instant::now();
    let mut buf = [0u8; 2048];
    loop {
        assert!(t0.elapsed() < Duration::from_secs(5), "no reply to {msg:?}");
        s.send_to(&msg.encode(), to).unwrap();
        let sent = Instant::now();
        while sent.elapsed() < Duration::from_millis(500) {
            if let Ok((n, _)) = s.recv_from(&mut buf) {
                let r = TxnMsg::decode(&buf[..n]).unwrap();
                if r.cl_id == msg.cl_id && r.req_id == msg.req_id {
                    return buf[..n].to_vec();
                }
            }
        }
    }
}

/// A counter as the store holds it: never written is the empty value.
fn counter(n: u64) -> Value {
    if n == 0 {
        Value::ZERO
    } else {
        Value::from_counter(n)
    }
}

#[test]
fn acknowledged_commits_survive_kill_9() {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let dir = std::env::temp_dir().join(format!("innet-durability-{}-{nanos}", std::process::id()));
    const KEYS: u64 = 4;
    const N: u64 = 200;

    let mut store = start_store(&dir);
    let s = socket();
    let mut acked = [0u64; KEYS as usize + 1];
    let mut last_reply = vec![];
    for i in 0..N {
        let key = (i % KEYS + 1) as u32;
        let n = acked[key as usize];
        let req = TxnMsg::request(7, i as i32 + 1, vec![Op::value(key, counter(n)), Op::write(key, counter(n + 1))]);
        let reply = call(&s, store.addr, &req);
        let r = TxnMsg::decode(&reply).unwrap();
        assert_eq!(r.status, Status::Ok, "increment {i}: {r:?}");
        acked[key as usize] += 1;
        last_reply = reply;
    }
    // One more increment in flight (another client) when the store dies.
    let in_flight = TxnMsg::request(9, 1, vec![Op::value(1, counter(acked[1])), Op::write(1, counter(acked[1] + 1))]);
    s.send_to(&in_flight.encode(), store.addr).unwrap();
    store.child.kill().unwrap(); // SIGKILL
    store.child.wait().unwrap();

    let mut store = start_store(&dir);
    let reader = socket();
    let read = TxnMsg::request(8, 1, (1..=KEYS as u32).map(Op::read).collect());
    let r = TxnMsg::decode(&call(&reader, store.addr, &read)).unwrap();
    assert_eq!(r.status, Status::Ok);
    for op in &r.ops {
        let got = op.value.as_counter().unwrap();
        let want = acked[op.key as usize];
        if op.key == 1 {
            assert!(got == want || got == want + 1, "key 1: {got}, acknowledged {want} (+1 in flight)");
        } else {
            assert_eq!(got, want, "key {}", op.key);
        }
    }
    // The exactly-once record survived too: a resend of the last
    // acknowledged request gets the very same reply, and changes nothing.
    let last = TxnMsg::decode(&last_reply).unwrap();
    let resend =
        TxnMsg::request(7, last.req_id, vec![Op::value(4, counter(acked[4] - 1)), Op::write(4, counter(acked[4]))]);
    assert_eq!(call(&s, store.addr, &resend), last_reply);
    let again = TxnMsg::request(8, 2, vec![Op::read(4)]);
    let r = TxnMsg::decode(&call(&reader, store.addr, &again)).unwrap();
    assert_eq!(r.ops[0].value.as_counter(), Some(acked[4]));

    // A graceful stop (SIGTERM) exits 0.
    let pid = store.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let status = store.child.wait().unwrap();
    assert!(status.success(), "store exited with {status:?} on SIGTERM");
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------- disk faults

fn temp_dir(tag: &str) -> std::path::PathBuf {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    std::env::temp_dir().join(format!("innet-disk-{tag}-{}-{nanos}", std::process::id()))
}

/// The value the fault tests write at key `k`: unique bytes, findable in the file.
fn marker(k: u32) -> Value {
    Value::from_str_padded(&format!("innet-mark-{k:05}")).unwrap()
}

/// A store in `dir` holding `marker(k)` at keys 1..=keys, stopped gracefully.
fn fill(dir: &Path, keys: u32) {
    let mut store = start_store(dir);
    let s = socket();
    for k in 1..=keys {
        let r = TxnMsg::decode(&call(&s, store.addr, &TxnMsg::request(3, k as i32, vec![Op::write(k, marker(k))])))
            .unwrap();
        assert_eq!(r.status, Status::Ok);
    }
    let pid = store.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    assert!(store.child.wait().unwrap().success());
}

/// Runs `innet store` on `dir` and expects it to refuse to start: exit
/// status 2 within 10 s, one line on stderr; returns that line.
fn refused(dir: &Path) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_innet"))
        .args(["store", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("the store started on a damaged file: {}", String::from_utf8_lossy(&out.stdout));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line on stderr: {err}");
    assert!(String::from_utf8_lossy(&out.stdout).is_empty(), "the store printed its address");
    lines[0].to_string()
}

/// Offsets of every copy of `needle` in `hay`.
fn find_all(hay: &[u8], needle: &[u8]) -> Vec<usize> {
    (0..hay.len().saturating_sub(needle.len())).filter(|&i| &hay[i..i + needle.len()] == needle).collect()
}

fn db_file(dir: &Path) -> std::path::PathBuf {
    dir.join("innet-store.redb")
}

#[test]
fn a_data_file_truncated_to_0_bytes_is_refused_not_replaced_by_an_empty_store() {
    let dir = temp_dir("truncated");
    fill(&dir, 4);
    std::fs::OpenOptions::new().write(true).open(db_file(&dir)).unwrap().set_len(0).unwrap();
    let line = refused(&dir);
    assert!(line.contains("empty") && line.contains("move it away"), "{line}");
    assert_eq!(std::fs::metadata(db_file(&dir)).unwrap().len(), 0, "the store wrote to the file it refused");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn random_bytes_over_a_page_are_refused_not_a_panic() {
    let dir = temp_dir("page");
    fill(&dir, 8);
    let mut bytes = std::fs::read(db_file(&dir)).unwrap();
    let hits = find_all(&bytes, &marker(5).0);
    assert!(!hits.is_empty(), "the value is in the file");
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for &at in &hits {
        let page = at / 4096 * 4096;
        let end = (page + 4096).min(bytes.len());
        for b in &mut bytes[page..end] {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
    }
    std::fs::write(db_file(&dir), &bytes).unwrap();
    let line = refused(&dir);
    assert!(line.contains("damaged") || line.contains("checksum"), "{line}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_value_overwritten_on_disk_is_detected_not_served() {
    let dir = temp_dir("value");
    fill(&dir, 8);
    let mut bytes = std::fs::read(db_file(&dir)).unwrap();
    let hits = find_all(&bytes, &marker(5).0);
    assert!(!hits.is_empty(), "the value is in the file");
    for &at in &hits {
        bytes[at..at + 16].copy_from_slice(&marker(6).0);
    }
    std::fs::write(db_file(&dir), &bytes).unwrap();
    let line = refused(&dir);
    assert!(line.contains("damaged") || line.contains("checksum"), "{line}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A small tmpfs mounted for one test and unmounted when it ends.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    /// `None` (and the reason) when this process may not mount: not root.
    fn mount(size: &str) -> Result<Tmpfs, String> {
        let dir = temp_dir("tmpfs");
        std::fs::create_dir_all(&dir).unwrap();
        let out =
            Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"]).arg(&dir).output();
        match out {
            Ok(o) if o.status.success() => Ok(Tmpfs(dir)),
            Ok(o) => Err(String::from_utf8_lossy(&o.stderr).trim().to_string()),
            Err(e) => Err(e.to_string()),
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// Fills the file system of `dir` with `dir/filler` until writing fails.
fn fill_disk(dir: &Path) {
    use std::io::Write;
    let mut f = std::fs::File::create(dir.join("filler")).unwrap();
    let chunk = vec![0xa5u8; 64 * 1024];
    while f.write_all(&chunk).is_ok() {}
    let small = [0u8; 512];
    while f.write_all(&small).is_ok() {}
    let _ = f.sync_all();
}

#[test]
fn a_full_disk_stops_acknowledging_and_the_store_recovers_by_itself_once_freed() {
    let fs = match Tmpfs::mount("8m") {
        Ok(fs) => fs,
        Err(why) => {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true: cannot mount a tmpfs: {why}");
            eprintln!("SKIPPED: cannot mount a tmpfs (needs root): {why}");
            return;
        }
    };
    let dir = fs.0.join("data");
    let mut store = start_store(&dir);
    let s = socket();
    let mut acked = 0u64;
    let increment =
        |n: u64, req: i32| TxnMsg::request(11, req, vec![Op::value(1, counter(n)), Op::write(1, counter(n + 1))]);
    for _ in 0..20 {
        let r = TxnMsg::decode(&call(&s, store.addr, &increment(acked, acked as i32 + 1))).unwrap();
        assert_eq!(r.status, Status::Ok);
        acked += 1;
    }
    fill_disk(&fs.0);
    // Writes of new keys need new pages: once the disk is full they fail
    // and are not acknowledged (and the store goes on).
    let big = |i: u32| {
        let ops: Vec<Op> = (0..40).map(|k| Op::write(1000 + i * 40 + k, marker(k))).collect();
        TxnMsg::fragments(&TxnMsg::request(12, i as i32 + 1, vec![]), &ops).unwrap()
    };
    let answered = |i: u32, wait: Duration| -> bool {
        let mut buf = [0u8; 2048];
        for m in big(i) {
            s.send_to(&m.encode(), store.addr).unwrap();
        }
        let t0 = Instant::now();
        while t0.elapsed() < wait {
            if let Ok((n, _)) = s.recv_from(&mut buf) {
                let r = TxnMsg::decode(&buf[..n]).unwrap();
                if r.cl_id == 12 && r.req_id == i as i32 + 1 {
                    assert_eq!(r.status, Status::Ok);
                    return true;
                }
            }
        }
        false
    };
    let mut unanswered = None;
    for i in 0..400u32 {
        if !answered(i, Duration::from_millis(300)) {
            unanswered = Some(i);
            break;
        }
    }
    let i = unanswered.expect("the disk never filled up");
    assert!(!answered(i, Duration::from_millis(300)), "acknowledged a write that failed, on a still full disk");
    // Free the space: the same request, resent, is acknowledged, and so are new ones.
    std::fs::remove_file(fs.0.join("filler")).unwrap();
    let t0 = Instant::now();
    while !answered(i, Duration::from_millis(300)) {
        assert!(t0.elapsed() < Duration::from_secs(5), "the store did not recover once the disk was freed");
    }
    let req = acked as i32 + 1;
    let r = TxnMsg::decode(&call(&s, store.addr, &increment(acked, req))).unwrap();
    assert_eq!(r.status, Status::Ok, "{r:?}");
    acked += 1;
    // Nothing acknowledged is lost, across kill -9 too.
    store.child.kill().unwrap();
    store.child.wait().unwrap();
    let store = start_store(&dir);
    let r =
        TxnMsg::decode(&call(&s, store.addr, &TxnMsg::request(13, 1, vec![Op::read(1), Op::read(1000 + i * 40 + 39)])))
            .unwrap();
    assert_eq!(r.ops[0].value.as_counter(), Some(acked));
    assert_eq!(r.ops[1].value, marker(39), "the write acknowledged after recovery");
    drop(store);
}
