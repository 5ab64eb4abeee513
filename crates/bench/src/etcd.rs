//! etcd 3.4 as a peer of the chain store: a cluster on loopback started
//! (and stopped) by the benchmark, and an efficient closed-loop client.
//!
//! **The cluster.** [`EtcdCluster::start`] runs `members` processes of
//! Debian's `etcd` (package `etcd-server`, installed by `scripts/setup.sh`)
//! on free loopback ports, each with its data folder under the parent the
//! caller picks (a disk-backed folder such as /var/tmp, or tmpfs such as
//! /dev/shm), with etcd's defaults as shipped otherwise. Dropping it kills
//! exactly the processes it spawned (by their pids) and removes its folder.
//!
//! **The client** speaks etcd's native API, gRPC over cleartext HTTP/2,
//! written here directly on TCP sockets: one blocking thread per
//! connection, each connection carrying many concurrent streams (one per
//! logical client, like etcd's own `benchmark --conns --clients`), request
//! headers pre-encoded with HPACK literals, every frame read answered in
//! one write. Puts are `KV/Put`; gets are `KV/Range` with the default
//! (linearizable) consistency. Connections go to the leader first, then
//! round robin over the other members. The client's own CPU time is
//! measured per thread, which gives its ceiling: operations per second of
//! client CPU.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use innet_core::rng::Rng;
use serde::Serialize;

use crate::loadgen::{Histogram, LoadReport};

/// The etcd binary: `$INNET_ETCD`, else `etcd` on the PATH.
pub fn etcd_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("INNET_ETCD") {
        return Some(PathBuf::from(p));
    }
    std::env::var_os("PATH")?.to_str()?.split(':').map(|d| Path::new(d).join("etcd")).find(|p| p.is_file())
}

/// What `etcd --version` says first ("etcd Version: 3.4.23"), if etcd runs.
pub fn version() -> Option<String> {
    let out = Command::new(etcd_binary()?).arg("--version").output().ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .map(|l| l.trim_start_matches("etcd Version:").trim().to_string())
}

fn free_port() -> io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// A running etcd cluster on loopback.
pub struct EtcdCluster {
    children: Vec<Child>,
    dir: PathBuf,
    /// Client addresses, member order.
    pub clients: Vec<SocketAddr>,
    /// Index of the leader in `clients`.
    pub leader: usize,
}

impl EtcdCluster {
    /// Starts `members` members with data under a fresh folder in
    /// `parent`; waits until every member answers and a leader is known.
    pub fn start(members: usize, parent: &Path) -> anyhow::Result<EtcdCluster> {
        let bin = etcd_binary().ok_or_else(|| {
            anyhow::anyhow!(
                "etcd not found on the PATH: run scripts/setup.sh (installs Debian's etcd-server) or set INNET_ETCD"
            )
        })?;
        let dir = parent.join(format!("innet-etcd-{}-{}", std::process::id(), free_port()?));
        std::fs::create_dir_all(&dir)?;
        let mut cluster = EtcdCluster { children: vec![], dir: dir.clone(), clients: vec![], leader: 0 };
        let mut peers = vec![];
        for _ in 0..members {
            let c: SocketAddr = format!("127.0.0.1:{}", free_port()?).parse()?;
            let p: SocketAddr = format!("127.0.0.1:{}", free_port()?).parse()?;
            cluster.clients.push(c);
            peers.push(p);
        }
        let initial: Vec<String> = peers.iter().enumerate().map(|(i, p)| format!("m{i}=http://{p}")).collect();
        let token = dir.file_name().and_then(|n| n.to_str()).unwrap_or("innet-etcd").to_string();
        for (i, peer) in peers.iter().enumerate() {
            let log = std::fs::File::create(dir.join(format!("m{i}.log")))?;
            let child = Command::new(&bin)
                .arg("--name")
                .arg(format!("m{i}"))
                .arg("--data-dir")
                .arg(dir.join(format!("m{i}")))
                .arg("--listen-client-urls")
                .arg(format!("http://{}", cluster.clients[i]))
                .arg("--advertise-client-urls")
                .arg(format!("http://{}", cluster.clients[i]))
                .arg("--listen-peer-urls")
                .arg(format!("http://{peer}"))
                .arg("--initial-advertise-peer-urls")
                .arg(format!("http://{peer}"))
                .arg("--initial-cluster")
                .arg(initial.join(","))
                .arg("--initial-cluster-token")
                .arg(&token)
                .arg("--initial-cluster-state")
                .arg("new")
                .stdin(Stdio::null())
                .stdout(log.try_clone()?)
                .stderr(log)
                .spawn()?;
            cluster.children.push(child);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match cluster.find_leader() {
                Ok(l) => {
                    cluster.leader = l;
                    return Ok(cluster);
                }
                Err(e) if Instant::now() > deadline => {
                    let log = std::fs::read_to_string(dir.join("m0.log")).unwrap_or_default();
                    let tail: String = log.lines().rev().take(5).collect::<Vec<_>>().join("\n");
                    anyhow::bail!(
                        "etcd cluster in {} did not come up in 30 s: {e}; m0.log ends:\n{tail}",
                        dir.display()
                    );
                }
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }

    /// The leader's index: every member answers Maintenance/Status and names
    /// the same leader.
    fn find_leader(&mut self) -> anyhow::Result<usize> {
        for c in &mut self.children {
            if let Some(st) = c.try_wait()? {
                anyhow::bail!("an etcd member exited ({st})");
            }
        }
        let mut ids = vec![];
        let mut leaders = vec![];
        for a in &self.clients {
            let mut conn = H2Conn::connect(*a)?;
            let resp = conn.unary("/etcdserverpb.Maintenance/Status", &[])?;
            let header = proto_field(&resp, 1).ok_or_else(|| anyhow::anyhow!("status without a header"))?;
            ids.push(proto_varint(header, 2).unwrap_or(0));
            leaders.push(proto_varint(&resp, 4).unwrap_or(0));
        }
        let leader = leaders[0];
        anyhow::ensure!(leader != 0 && leaders.iter().all(|l| *l == leader), "no agreed leader yet");
        ids.iter().position(|i| *i == leader).ok_or_else(|| anyhow::anyhow!("the leader is not a member"))
    }

    /// Client addresses, the leader first.
    pub fn endpoints(&self) -> Vec<SocketAddr> {
        let mut v = vec![self.clients[self.leader]];
        v.extend(self.clients.iter().enumerate().filter(|(i, _)| *i != self.leader).map(|(_, a)| *a));
        v
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for c in &mut self.children {
            // SIGTERM by pid (ours), then SIGKILL if it lingers.
            // SAFETY: kill(2) on the pid of a child we spawned and have not reaped.
            unsafe { libc::kill(c.id() as libc::pid_t, libc::SIGTERM) };
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        for c in &mut self.children {
            while matches!(c.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if matches!(c.try_wait(), Ok(None)) {
                let _ = c.kill();
            }
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

// ---- protobuf, just what the KV and Status messages need ----

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let x = *b.get(*at)?;
        *at += 1;
        v |= ((x & 0x7f) as u64) << shift;
        if x < 0x80 {
            return Some(v);
        }
    }
    None
}

/// Walks a message's fields: (number, wire type, varint value or bytes).
fn proto_fields(b: &[u8]) -> impl Iterator<Item = (u64, Result<u64, &[u8]>)> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let key = get_varint(b, &mut at)?;
        match key & 7 {
            0 => get_varint(b, &mut at).map(|v| (key >> 3, Ok(v))),
            2 => {
                let n = get_varint(b, &mut at)? as usize;
                let s = b.get(at..at.checked_add(n)?)?;
                at += n;
                Some((key >> 3, Err(s)))
            }
            1 => {
                at += 8;
                (at <= b.len()).then_some((key >> 3, Ok(0)))
            }
            5 => {
                at += 4;
                (at <= b.len()).then_some((key >> 3, Ok(0)))
            }
            _ => None,
        }
    })
}

fn proto_field(b: &[u8], n: u64) -> Option<&[u8]> {
    proto_fields(b).find_map(|(f, v)| if f == n { v.err() } else { None })
}

fn proto_varint(b: &[u8], n: u64) -> Option<u64> {
    proto_fields(b).find_map(|(f, v)| if f == n { v.ok() } else { None })
}

/// A gRPC message (5-byte prefix) holding `fields` (number, bytes).
fn grpc_message(fields: &[(u64, &[u8])]) -> Vec<u8> {
    let mut p = vec![];
    for (n, v) in fields {
        put_varint(&mut p, n << 3 | 2);
        put_varint(&mut p, v.len() as u64);
        p.extend_from_slice(v);
    }
    let mut m = vec![0];
    m.extend_from_slice(&(p.len() as u32).to_be_bytes());
    m.extend_from_slice(&p);
    m
}

// ---- HTTP/2 (cleartext, prior knowledge), just what unary gRPC needs ----

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const DATA: u8 = 0;
const HEADERS: u8 = 1;
const RST_STREAM: u8 = 3;
const SETTINGS: u8 = 4;
const PING: u8 = 6;
const GOAWAY: u8 = 7;
const WINDOW_UPDATE: u8 = 8;
const END_STREAM: u8 = 1;
const END_HEADERS: u8 = 4;
const ACK: u8 = 1;
/// Our receive window: large, topped up when half is used.
const WINDOW: u32 = 1 << 30;

fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    let n = payload.len() as u32;
    out.extend_from_slice(&n.to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
}

/// The request header block for `path` (HPACK: static-table names, literal
/// values, never indexed into the dynamic table, no Huffman).
fn header_block(path: &str, authority: &str) -> Vec<u8> {
    let mut h = vec![0x83, 0x86]; // :method POST, :scheme http
    let lit = |h: &mut Vec<u8>, prefix: &[u8], v: &str| {
        h.extend_from_slice(prefix);
        assert!(v.len() < 127, "short header values");
        h.push(v.len() as u8);
        h.extend_from_slice(v.as_bytes());
    };
    lit(&mut h, &[0x04], path); // :path
    lit(&mut h, &[0x01], authority); // :authority
    lit(&mut h, &[0x0f, 0x10], "application/grpc"); // content-type (static 31)
    lit(&mut h, &[0x00, 0x02, b't', b'e'], "trailers");
    h
}

struct H2Conn {
    sock: TcpStream,
    authority: String,
    next_stream: u32,
    buf: Vec<u8>,
    /// Bytes of `buf` not yet parsed start here.
    at: usize,
    consumed: u32,
    out: Vec<u8>,
}

/// One frame read: (type, flags, stream, payload range in `buf`).
type Frame = (u8, u8, u32, std::ops::Range<usize>);

impl H2Conn {
    fn connect(addr: SocketAddr) -> io::Result<H2Conn> {
        let sock = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
        sock.set_nodelay(true)?;
        let mut c = H2Conn {
            sock,
            authority: addr.to_string(),
            next_stream: 1,
            buf: Vec::with_capacity(1 << 16),
            at: 0,
            consumed: 0,
            out: vec![],
        };
        c.out.extend_from_slice(PREFACE);
        let mut settings = vec![];
        for (id, v) in [(2u16, 0u32), (4, WINDOW)] {
            settings.extend_from_slice(&id.to_be_bytes());
            settings.extend_from_slice(&v.to_be_bytes());
        }
        frame(&mut c.out, SETTINGS, 0, 0, &settings);
        frame(&mut c.out, WINDOW_UPDATE, 0, 0, &(WINDOW - 65_535).to_be_bytes());
        c.flush()?;
        Ok(c)
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.out.is_empty() {
            self.sock.write_all(&self.out)?;
            self.out.clear();
        }
        Ok(())
    }

    /// Queues a request on a new stream; returns the stream id.
    fn send(&mut self, headers: &[u8], message: &[u8]) -> u32 {
        let s = self.next_stream;
        self.next_stream += 2;
        frame(&mut self.out, HEADERS, END_HEADERS, s, headers);
        frame(&mut self.out, DATA, END_STREAM, s, message);
        s
    }

    /// The next complete frame, reading from the socket when needed
    /// (`Ok(None)` on a read timeout). Answers SETTINGS and PING, tops up
    /// the receive window.
    fn next_frame(&mut self) -> io::Result<Option<Frame>> {
        loop {
            let have = self.buf.len() - self.at;
            if have >= 9 {
                let h = &self.buf[self.at..self.at + 9];
                let len = u32::from_be_bytes([0, h[0], h[1], h[2]]) as usize;
                if have >= 9 + len {
                    let (kind, flags) = (h[3], h[4]);
                    let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
                    let body = self.at + 9..self.at + 9 + len;
                    self.at += 9 + len;
                    match kind {
                        SETTINGS if flags & ACK == 0 => frame(&mut self.out, SETTINGS, ACK, 0, &[]),
                        PING if flags & ACK == 0 => {
                            let p = self.buf[body.clone()].to_vec();
                            frame(&mut self.out, PING, ACK, 0, &p);
                        }
                        GOAWAY => return Err(io::Error::other("etcd sent GOAWAY")),
                        DATA => {
                            self.consumed += len as u32;
                            if self.consumed > WINDOW / 2 {
                                frame(&mut self.out, WINDOW_UPDATE, 0, 0, &self.consumed.to_be_bytes());
                                self.consumed = 0;
                            }
                        }
                        _ => {}
                    }
                    return Ok(Some((kind, flags, stream, body)));
                }
            }
            // Compact, then read more; flush what the frames so far asked for.
            self.flush()?;
            if self.at > 0 {
                self.buf.drain(..self.at);
                self.at = 0;
            }
            let old = self.buf.len();
            self.buf.resize(old + (1 << 16), 0);
            match self.sock.read(&mut self.buf[old..]) {
                Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "etcd closed the connection")),
                Ok(n) => self.buf.truncate(old + n),
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                    self.buf.truncate(old);
                    return Ok(None);
                }
                Err(e) => {
                    self.buf.truncate(old);
                    return Err(e);
                }
            }
        }
    }

    /// One call of `path` with `fields`; the response message's bytes.
    fn unary(&mut self, path: &str, fields: &[(u64, &[u8])]) -> anyhow::Result<Vec<u8>> {
        self.sock.set_read_timeout(Some(Duration::from_secs(2)))?;
        let h = header_block(path, &self.authority.clone());
        let s = self.send(&h, &grpc_message(fields));
        self.flush()?;
        let mut msg = None;
        loop {
            let Some((kind, flags, stream, body)) = self.next_frame()? else {
                anyhow::bail!("no answer to {path} within 2 s");
            };
            if stream != s {
                continue;
            }
            match kind {
                DATA => msg = Some(self.buf[body].get(5..).unwrap_or_default().to_vec()),
                RST_STREAM => anyhow::bail!("{path}: stream reset"),
                _ => {}
            }
            if flags & END_STREAM != 0 && matches!(kind, DATA | HEADERS) {
                return msg.ok_or_else(|| anyhow::anyhow!("{path}: error status (no message)"));
            }
        }
    }
}

/// One put of `key` = `value` through the client's gRPC path.
pub fn put(addr: SocketAddr, key: &[u8], value: &[u8]) -> anyhow::Result<()> {
    H2Conn::connect(addr)?.unary("/etcdserverpb.KV/Put", &[(1, key), (2, value)])?;
    Ok(())
}

/// One linearizable get of `key`: its value, `None` if absent.
pub fn get(addr: SocketAddr, key: &[u8]) -> anyhow::Result<Option<Vec<u8>>> {
    let resp = H2Conn::connect(addr)?.unary("/etcdserverpb.KV/Range", &[(1, key)])?;
    // RangeResponse.kvs (2) -> KeyValue.value (5).
    Ok(proto_field(&resp, 2).map(|kv| proto_field(kv, 5).unwrap_or_default().to_vec()))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EtcdOp {
    Put,
    /// A linearizable range read of one key.
    Get,
}

#[derive(Clone, Debug, Serialize)]
pub struct EtcdLoadConfig {
    pub op: EtcdOp,
    pub clients: u32,
    /// TCP connections (one client thread each), at most `clients`.
    pub conns: usize,
    pub keys: u32,
    pub value_len: usize,
    pub warmup_s: f64,
    pub duration_s: f64,
    pub seed: u64,
}

/// What the etcd client measured.
#[derive(Clone, Debug, Serialize)]
pub struct EtcdLoadReport {
    pub load: LoadReport,
    /// Calls that ended without a response message (error status, reset).
    pub errors: u64,
    /// CPU seconds the client threads used.
    pub client_cpu_s: f64,
    /// The client's ceiling: operations per second of its own CPU.
    pub client_ceiling_per_cpu_s: f64,
}

/// The key etcd stores for chain key `k`.
pub fn key_name(k: u32) -> Vec<u8> {
    format!("k{k:07}").into_bytes()
}

fn thread_cpu_s() -> f64 {
    // SAFETY: getrusage fills a plain struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

struct ConnResult {
    hist: Histogram,
    completed: u64,
    errors: u64,
    cpu_s: f64,
}

/// Closed-loop load: `clients` clients over `conns` connections to
/// `endpoints` (round robin, the first endpoint first).
pub fn run_load(endpoints: &[SocketAddr], cfg: &EtcdLoadConfig) -> anyhow::Result<EtcdLoadReport> {
    anyhow::ensure!(cfg.clients > 0 && cfg.conns > 0 && cfg.keys > 0, "clients, connections and keys at least 1");
    anyhow::ensure!(!endpoints.is_empty(), "at least one etcd endpoint");
    let conns = cfg.conns.min(cfg.clients as usize);
    let start = Instant::now();
    let measure_from = start + Duration::from_secs_f64(cfg.warmup_s);
    let end = start + Duration::from_secs_f64(cfg.duration_s);
    let mut rng = Rng::new(cfg.seed);
    let results: Vec<anyhow::Result<ConnResult>> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..conns)
            .map(|i| {
                let clients = (i as u32..cfg.clients).step_by(conns).count();
                let addr = endpoints[i % endpoints.len()];
                let rng = rng.fork();
                sc.spawn(move || conn_loop(addr, clients, cfg, rng, measure_from, end))
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("client thread panicked")))).collect()
    });
    let mut load = LoadReport { clients: cfg.clients, threads: conns, sockets: conns, ..Default::default() };
    let (mut errors, mut cpu) = (0, 0.0);
    for r in results {
        let r = r?;
        load.completed += r.completed;
        load.histogram.merge(&r.hist);
        errors += r.errors;
        cpu += r.cpu_s;
    }
    load.measured_s = end.saturating_duration_since(measure_from).as_secs_f64();
    load.ops_per_s = load.completed as f64 / load.measured_s.max(1e-9);
    load.mean_us = load.histogram.mean_us();
    load.p50_us = load.histogram.quantile_us(0.5);
    load.p99_us = load.histogram.quantile_us(0.99);
    let per_cpu = load.completed as f64 / cpu.max(1e-9) * (cfg.duration_s / load.measured_s.max(1e-9));
    Ok(EtcdLoadReport { load, errors, client_cpu_s: cpu, client_ceiling_per_cpu_s: per_cpu })
}

fn conn_loop(
    addr: SocketAddr,
    clients: usize,
    cfg: &EtcdLoadConfig,
    mut rng: Rng,
    measure_from: Instant,
    end: Instant,
) -> anyhow::Result<ConnResult> {
    let cpu0 = thread_cpu_s();
    let mut c = H2Conn::connect(addr)?;
    c.sock.set_read_timeout(Some(Duration::from_millis(100)))?;
    let path = match cfg.op {
        EtcdOp::Put => "/etcdserverpb.KV/Put",
        EtcdOp::Get => "/etcdserverpb.KV/Range",
    };
    let headers = header_block(path, &addr.to_string());
    let value = vec![b'v'; cfg.value_len];
    let next = |c: &mut H2Conn, rng: &mut Rng| {
        let key = key_name(rng.below(cfg.keys as u64) as u32);
        let msg = match cfg.op {
            EtcdOp::Put => grpc_message(&[(1, &key), (2, &value)]),
            EtcdOp::Get => grpc_message(&[(1, &key)]),
        };
        c.send(&headers, &msg)
    };
    // stream -> (sent, got a message)
    let mut open: HashMap<u32, (Instant, bool)> = HashMap::with_capacity(clients * 2);
    let now = Instant::now();
    for _ in 0..clients {
        let s = next(&mut c, &mut rng);
        open.insert(s, (now, false));
    }
    c.flush()?;
    let mut r = ConnResult { hist: Histogram::default(), completed: 0, errors: 0, cpu_s: 0.0 };
    while !open.is_empty() {
        let Some((kind, flags, stream, body)) = c.next_frame()? else {
            anyhow::ensure!(Instant::now() < end + Duration::from_secs(5), "etcd stopped answering");
            continue;
        };
        let Some(st) = open.get_mut(&stream) else { continue };
        if kind == DATA && body.len() >= 5 {
            st.1 = true;
        }
        let done = (matches!(kind, DATA | HEADERS) && flags & END_STREAM != 0) || kind == RST_STREAM;
        if !done {
            continue;
        }
        let (sent, ok) = open.remove(&stream).expect("open");
        let now = Instant::now();
        if !ok || kind == RST_STREAM {
            r.errors += 1;
        } else if now >= measure_from && now < end {
            r.completed += 1;
            r.hist.record(now.duration_since(sent).as_nanos() as u64);
        }
        if now < end {
            let s = next(&mut c, &mut rng);
            open.insert(s, (now, false));
        }
    }
    c.flush()?;
    r.cpu_s = thread_cpu_s() - cpu0;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protobuf_fields_roundtrip_and_garbage_never_panics() {
        let m = grpc_message(&[(1, b"k0000007"), (2, &[7; 300])]);
        assert_eq!(u32::from_be_bytes(m[1..5].try_into().unwrap()) as usize, m.len() - 5);
        let p = &m[5..];
        assert_eq!(proto_field(p, 1), Some(&b"k0000007"[..]));
        assert_eq!(proto_field(p, 2).map(|v| v.len()), Some(300), "a two-byte length");
        assert_eq!(proto_field(p, 3), None);
        let mut status = vec![];
        put_varint(&mut status, 4 << 3);
        put_varint(&mut status, u64::MAX);
        assert_eq!(proto_varint(&status, 4), Some(u64::MAX));
        // Truncations, bit flips and random bytes: fields or None, no panic.
        let mut rng = Rng::new(9);
        for i in 0..20_000 {
            let mut b = p.to_vec();
            match i % 3 {
                0 => b.truncate(rng.below(b.len() as u64) as usize),
                1 => {
                    let at = rng.below(b.len() as u64) as usize;
                    b[at] ^= 1 << rng.below(8);
                }
                _ => b = (0..rng.below(64)).map(|_| rng.below(256) as u8).collect(),
            }
            let n = proto_fields(&b).take(1000).count();
            assert!(n <= b.len());
            let _ = (proto_field(&b, 1), proto_varint(&b, 4));
        }
    }

    #[test]
    fn request_headers_are_hpack_literals() {
        let h = header_block("/etcdserverpb.KV/Put", "127.0.0.1:2379");
        assert_eq!(&h[..3], &[0x83, 0x86, 0x04]);
        assert_eq!(h[3] as usize, "/etcdserverpb.KV/Put".len());
        assert!(h.windows(16).any(|w| w == b"application/grpc"));
        assert!(h.ends_with(b"\x02te\x08trailers"));
    }
}
