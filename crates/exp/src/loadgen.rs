//! A batched closed-loop UDP load generator, and its ceiling.
//!
//! `clients` logical clients, each with one request outstanding at a time,
//! are multiplexed over a few non-blocking UDP sockets on one or two
//! threads. Each thread receives with `recvmmsg` and sends with `sendmmsg`
//! into buffers allocated once at the start; a reply is matched to its
//! client by a 64-bit tag the request carries (`client << 32 | sequence`),
//! which the [`Service`] writes into its request and finds again in the
//! reply. A request unanswered for `timeout` is counted as a timeout and
//! sent again under the same tag (so a late reply to any attempt completes
//! it).
//!
//! **The ceiling.** [`EchoServer`] is the cheapest user-space responder
//! there is: one thread bouncing every datagram back with
//! `recvmmsg`/`sendmmsg`. Running the same generator configuration against
//! it ([`ceiling`], one echo per target address) measures how many requests per second the generator
//! itself can complete at that concurrency on this machine; a system that
//! runs within 20% of it ([`generator_bound`]) is measured by the generator's
//! limit, not its own.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

/// Largest datagram the generator sends or receives.
pub const MAX_DATAGRAM: usize = 256;
/// Datagrams per `recvmmsg`/`sendmmsg` call.
pub const BATCH: usize = 64;

/// Bytes of a request tag.
pub const TAG_LEN: usize = 8;

/// What a reply means to the generator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    /// The request with this tag is done.
    Done(u64),
    /// The request with this tag was refused for now: send it again after
    /// the service's back-off.
    Refused(u64),
    /// Not a reply to any request (malformed, or another kind): counted and
    /// dropped.
    Ignored,
}

/// A service's request encoder and reply matcher.
pub trait Service: Send {
    /// Writes a new request of logical client `client` carrying `tag` into
    /// `buf` (at least [`MAX_DATAGRAM`] bytes); returns its length and the
    /// index of the target address it goes to.
    fn request(&mut self, client: u32, tag: u64, buf: &mut [u8]) -> (usize, usize);
    /// What `reply` answers.
    fn reply(&mut self, reply: &[u8]) -> Reply;
    /// How long a refused request waits before it is sent again.
    fn refused_backoff(&self) -> Duration {
        Duration::from_micros(200)
    }
}

/// A log-linear latency histogram in nanoseconds: 64 sub-buckets per power
/// of two (under 1.6% relative error), up to about 68 s.
#[derive(Clone, Debug)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    sum_ns: u128,
    max_ns: u64,
}

const SUB_BITS: u32 = 6;
const SUB: u64 = 1 << SUB_BITS;
const MAX_EXP: u32 = 36;

impl Default for Histogram {
    fn default() -> Histogram {
        Histogram { counts: vec![0; ((MAX_EXP + 1) as u64 * SUB) as usize], total: 0, sum_ns: 0, max_ns: 0 }
    }
}

impl Histogram {
    fn bucket(ns: u64) -> usize {
        if ns < SUB {
            return ns as usize;
        }
        let exp = 63 - ns.leading_zeros() - SUB_BITS + 1;
        let exp = exp.min(MAX_EXP);
        let sub = (ns >> (exp - 1)) & (SUB - 1);
        (exp as u64 * SUB + sub) as usize
    }

    /// The smallest latency bucket `i` holds.
    fn lower(i: usize) -> u64 {
        let (exp, sub) = (i as u64 / SUB, i as u64 % SUB);
        if exp == 0 {
            sub
        } else {
            (SUB | sub) << (exp - 1)
        }
    }

    pub fn record(&mut self, ns: u64) {
        self.counts[Self::bucket(ns)] += 1;
        self.total += 1;
        self.sum_ns += ns as u128;
        self.max_ns = self.max_ns.max(ns);
    }

    pub fn merge(&mut self, o: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += b;
        }
        self.total += o.total;
        self.sum_ns += o.sum_ns;
        self.max_ns = self.max_ns.max(o.max_ns);
    }

    pub fn count(&self) -> u64 {
        self.total
    }

    pub fn mean_us(&self) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        self.sum_ns as f64 / self.total as f64 / 1e3
    }

    /// The latency at quantile `q` (0..=1), in microseconds (the lower edge
    /// of its bucket).
    pub fn quantile_us(&self, q: f64) -> f64 {
        if self.total == 0 {
            return 0.0;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Self::lower(i).min(self.max_ns) as f64 / 1e3;
            }
        }
        self.max_ns as f64 / 1e3
    }
}

#[derive(Clone, Debug)]
pub struct LoadConfig {
    /// Logical clients, one request outstanding each.
    pub clients: u32,
    /// Sockets per thread (at most `clients` in all).
    pub sockets: usize,
    /// Generator threads (1 or 2 on this machine).
    pub threads: usize,
    /// The service's target addresses ([`Service::request`] picks one).
    pub targets: Vec<SocketAddr>,
    /// Completions in the first `warmup` are not counted.
    pub warmup: Duration,
    pub duration: Duration,
    /// Resend a request unanswered for this long.
    pub timeout: Duration,
}

impl LoadConfig {
    pub fn new(clients: u32, targets: Vec<SocketAddr>, duration: Duration) -> LoadConfig {
        LoadConfig {
            clients,
            sockets: 2,
            threads: if clients >= 8 { 2 } else { 1 },
            targets,
            warmup: Duration::from_millis(100),
            duration,
            timeout: Duration::from_millis(200),
        }
    }

    pub fn check(&self) -> Result<(), String> {
        if self.clients == 0 {
            return Err("at least one client".into());
        }
        if self.targets.is_empty() {
            return Err("at least one target address".into());
        }
        if self.threads == 0 || self.sockets == 0 {
            return Err("at least one thread and one socket".into());
        }
        if self.duration <= self.warmup {
            return Err(format!("the duration must exceed the {:?} warm-up", self.warmup));
        }
        Ok(())
    }
}

/// What a run measured (completions after the warm-up).
#[derive(Clone, Debug, Default, Serialize)]
pub struct LoadReport {
    pub clients: u32,
    pub threads: usize,
    pub sockets: usize,
    pub completed: u64,
    pub ops_per_s: f64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    /// Requests resent after `timeout` without a reply.
    pub timeouts: u64,
    /// Requests refused by the service and resent after its back-off.
    pub refused: u64,
    /// Replies matching no outstanding request (late duplicates).
    pub stale: u64,
    /// Datagrams the service did not recognise.
    pub ignored: u64,
    pub measured_s: f64,
    #[serde(skip)]
    pub histogram: Histogram,
}

impl LoadReport {
    fn merge(&mut self, o: &LoadReport) {
        self.completed += o.completed;
        self.timeouts += o.timeouts;
        self.refused += o.refused;
        self.stale += o.stale;
        self.ignored += o.ignored;
        self.histogram.merge(&o.histogram);
    }

    fn finish(&mut self) {
        self.ops_per_s = self.completed as f64 / self.measured_s.max(1e-9);
        self.mean_us = self.histogram.mean_us();
        self.p50_us = self.histogram.quantile_us(0.5);
        self.p99_us = self.histogram.quantile_us(0.99);
    }
}

/// True when `ops_per_s` is within 20% of the generator's `ceiling`: the
/// figure then measures the generator, not the system.
pub fn generator_bound(ops_per_s: f64, ceiling: f64) -> bool {
    ops_per_s >= 0.8 * ceiling
}

/// Runs the closed loop; one service per thread (`services.len()` must be
/// `cfg.threads`). Returns the report and the services.
pub fn run<S: Service>(cfg: &LoadConfig, services: Vec<S>) -> io::Result<(LoadReport, Vec<S>)> {
    cfg.check().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    assert_eq!(services.len(), cfg.threads, "one service per thread");
    let threads = cfg.threads.min(cfg.clients as usize);
    let mut services = services;
    let mut spare = services.split_off(threads);
    let mut workers = vec![];
    for (t, service) in services.into_iter().enumerate() {
        // Clients t, t + threads, ... run on thread t.
        let clients: Vec<u32> = (t as u32..cfg.clients).step_by(threads).collect();
        let sockets = cfg.sockets.min(clients.len());
        let mut socks = vec![];
        for _ in 0..sockets {
            let bind: SocketAddr =
                if cfg.targets[0].is_ipv6() { "[::1]:0".parse() } else { "127.0.0.1:0".parse() }.expect("literal");
            let s = UdpSocket::bind(bind)?;
            s.set_nonblocking(true)?;
            socks.push(s);
        }
        workers.push(Worker::new(service, clients, socks, cfg.targets.clone(), cfg.timeout));
    }
    let start = Instant::now();
    let measure_from = start + cfg.warmup;
    let end = start + cfg.duration;
    let done: Vec<std::thread::Result<Worker<S>>> = std::thread::scope(|sc| {
        let handles: Vec<_> = workers
            .into_iter()
            .map(|mut w| {
                sc.spawn(move || {
                    w.run(measure_from, end);
                    w
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join()).collect()
    });
    let mut report = LoadReport { clients: cfg.clients, threads, sockets: 0, ..Default::default() };
    let mut out = vec![];
    for w in done {
        let w = w.map_err(|_| io::Error::other("load generator thread panicked"))?;
        report.sockets += w.report.sockets;
        report.merge(&w.report);
        out.push(w.service);
    }
    out.append(&mut spare);
    report.measured_s = end.saturating_duration_since(measure_from).as_secs_f64();
    report.finish();
    Ok((report, out))
}

#[derive(Clone, Copy)]
struct Outstanding {
    seq: u32,
    sent: Instant,
    first_sent: Instant,
    /// Resend at this time (a timeout, or a refusal's back-off).
    resend_at: Instant,
    len: u16,
    target: u16,
    refused: bool,
    /// Done, and not sending again (after the end).
    idle: bool,
}

struct Worker<S: Service> {
    service: S,
    /// Global client ids of this thread; local index = position.
    clients: Vec<u32>,
    local_of: std::collections::HashMap<u32, usize>,
    out: Vec<Outstanding>,
    /// Each client's last request, kept for resends.
    req: Vec<[u8; MAX_DATAGRAM]>,
    socks: Vec<UdpSocket>,
    targets: Vec<SocketAddr>,
    timeout: Duration,
    report: LoadReport,
    /// Per socket: requests waiting for the next `sendmmsg` (local client ids).
    pending: Vec<Vec<usize>>,
    recv: Vec<[u8; MAX_DATAGRAM]>,
    raw_targets: Vec<(libc::sockaddr_storage, libc::socklen_t)>,
    /// When clients stop issuing requests.
    end: Instant,
    /// Clients that have stopped.
    idle: usize,
}

impl<S: Service> Worker<S> {
    fn new(service: S, clients: Vec<u32>, socks: Vec<UdpSocket>, targets: Vec<SocketAddr>, timeout: Duration) -> Self {
        let now = Instant::now();
        let n = clients.len();
        let local_of = clients.iter().enumerate().map(|(i, c)| (*c, i)).collect();
        let raw_targets = targets.iter().map(|a| sockaddr(*a)).collect();
        let sockets = socks.len();
        Worker {
            service,
            clients,
            local_of,
            out: vec![
                Outstanding {
                    seq: 0,
                    sent: now,
                    first_sent: now,
                    resend_at: now,
                    len: 0,
                    target: 0,
                    refused: false,
                    idle: false,
                };
                n
            ],
            req: vec![[0; MAX_DATAGRAM]; n],
            pending: vec![Vec::with_capacity(n); sockets],
            socks,
            targets,
            timeout,
            report: LoadReport { sockets, ..Default::default() },
            recv: vec![[0; MAX_DATAGRAM]; BATCH],
            raw_targets,
            end: now,
            idle: 0,
        }
    }

    fn socket_of(&self, local: usize) -> usize {
        local % self.socks.len()
    }

    fn issue(&mut self, local: usize, now: Instant) {
        let client = self.clients[local];
        let o = &mut self.out[local];
        o.seq = o.seq.wrapping_add(1);
        let tag = (client as u64) << 32 | o.seq as u64;
        let (len, target) = self.service.request(client, tag, &mut self.req[local]);
        assert!(len <= MAX_DATAGRAM && target < self.targets.len(), "the service's request fits and has a target");
        o.len = len as u16;
        o.target = target as u16;
        o.sent = now;
        o.first_sent = now;
        o.resend_at = now + self.timeout;
        o.refused = false;
        let s = self.socket_of(local);
        self.pending[s].push(local);
    }

    fn resend(&mut self, local: usize, now: Instant) {
        let o = &mut self.out[local];
        o.sent = now;
        o.resend_at = now + self.timeout;
        o.refused = false;
        let s = self.socket_of(local);
        self.pending[s].push(local);
    }

    fn flush(&mut self) {
        for s in 0..self.socks.len() {
            let mut done = 0;
            while done < self.pending[s].len() {
                let n = (self.pending[s].len() - done).min(BATCH);
                let mut iov: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
                let mut hdrs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
                for k in 0..n {
                    let local = self.pending[s][done + k];
                    let o = &self.out[local];
                    iov[k] = libc::iovec { iov_base: self.req[local].as_ptr() as *mut _, iov_len: o.len as usize };
                    let (addr, alen) = &self.raw_targets[o.target as usize];
                    hdrs[k].msg_hdr.msg_name = addr as *const _ as *mut _;
                    hdrs[k].msg_hdr.msg_namelen = *alen;
                    hdrs[k].msg_hdr.msg_iov = &mut iov[k];
                    hdrs[k].msg_hdr.msg_iovlen = 1;
                }
                // SAFETY: `hdrs[..n]` point at live buffers and addresses for the call.
                let r = unsafe { libc::sendmmsg(self.socks[s].as_raw_fd(), hdrs.as_mut_ptr(), n as u32, 0) };
                if r <= 0 {
                    // Socket buffer full (or a transient error): the
                    // requests' timeouts resend them.
                    break;
                }
                done += r as usize;
            }
            self.pending[s].clear();
        }
    }

    /// Receives every datagram waiting on socket `s`; returns how many.
    fn receive(&mut self, s: usize, now: Instant, measure_from: Instant) -> usize {
        let mut got = 0;
        loop {
            let mut iov: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
            let mut hdrs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
            for k in 0..BATCH {
                iov[k] = libc::iovec { iov_base: self.recv[k].as_mut_ptr() as *mut _, iov_len: MAX_DATAGRAM };
                hdrs[k].msg_hdr.msg_iov = &mut iov[k];
                hdrs[k].msg_hdr.msg_iovlen = 1;
            }
            // SAFETY: `hdrs` point at `self.recv`'s buffers, alive for the call.
            let r = unsafe {
                libc::recvmmsg(
                    self.socks[s].as_raw_fd(),
                    hdrs.as_mut_ptr(),
                    BATCH as u32,
                    libc::MSG_DONTWAIT,
                    std::ptr::null_mut(),
                )
            };
            if r <= 0 {
                return got;
            }
            for (k, h) in hdrs.iter().enumerate().take(r as usize) {
                let len = h.msg_len as usize;
                let reply = self.service.reply(&self.recv[k][..len]);
                self.on_reply(reply, now, measure_from);
            }
            got += r as usize;
            if (r as usize) < BATCH {
                return got;
            }
        }
    }

    fn on_reply(&mut self, reply: Reply, now: Instant, measure_from: Instant) {
        let (tag, refused) = match reply {
            Reply::Done(t) => (t, false),
            Reply::Refused(t) => (t, true),
            Reply::Ignored => {
                self.report.ignored += 1;
                return;
            }
        };
        let (client, seq) = ((tag >> 32) as u32, tag as u32);
        let Some(&local) = self.local_of.get(&client) else {
            self.report.stale += 1;
            return;
        };
        let o = &mut self.out[local];
        if o.seq != seq || o.refused || o.idle {
            self.report.stale += 1;
            return;
        }
        if refused {
            if now >= measure_from {
                self.report.refused += 1;
            }
            o.refused = true;
            o.resend_at = now + self.service.refused_backoff();
            return;
        }
        if now >= self.end {
            // Draining: the client stops.
            o.idle = true;
            self.idle += 1;
            return;
        }
        if now >= measure_from {
            self.report.completed += 1;
            self.report.histogram.record(now.duration_since(o.first_sent).as_nanos() as u64);
        }
        self.issue(local, now);
    }

    /// Runs until `end`, then waits up to one timeout for the outstanding
    /// requests' replies (not counted), so that nothing the generator sent
    /// is still in flight when it returns.
    fn run(&mut self, measure_from: Instant, end: Instant) {
        self.end = end;
        let drained = end + self.timeout;
        let now = Instant::now();
        for local in 0..self.clients.len() {
            self.issue(local, now);
        }
        self.flush();
        let mut fds: Vec<libc::pollfd> =
            self.socks.iter().map(|s| libc::pollfd { fd: s.as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
        let mut next_scan = now + Duration::from_millis(1);
        loop {
            let now = Instant::now();
            if now >= drained || (now >= end && self.idle == self.out.len()) {
                break;
            }
            let mut got = 0;
            for s in 0..self.socks.len() {
                got += self.receive(s, now, measure_from);
            }
            if now >= next_scan {
                next_scan = now + Duration::from_millis(1);
                for local in 0..self.out.len() {
                    if self.out[local].resend_at <= now && !self.out[local].idle {
                        if !self.out[local].refused && now >= measure_from && now < end {
                            self.report.timeouts += 1;
                        }
                        self.resend(local, now);
                    }
                }
            }
            self.flush();
            if got == 0 {
                // SAFETY: `fds` is a valid array of pollfd.
                unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 1) };
            }
        }
    }
}

fn sockaddr(a: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data; zero is a valid start.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match a {
        SocketAddr::V4(v4) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(v4.ip().octets()) },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_in fits in sockaddr_storage.
            unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in, sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(v6) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: v6.port().to_be(),
                sin6_flowinfo: v6.flowinfo(),
                sin6_addr: libc::in6_addr { s6_addr: v6.ip().octets() },
                sin6_scope_id: v6.scope_id(),
            };
            // SAFETY: sockaddr_in6 fits in sockaddr_storage.
            unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in6, sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

/// A bare UDP echo on its own thread: every datagram goes straight back to
/// its sender, received and sent in batches. Optionally drops every
/// `drop_every`-th datagram (to exercise timeouts).
pub struct EchoServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    echoed: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl EchoServer {
    pub fn start(drop_every: Option<u64>) -> io::Result<EchoServer> {
        let sock = UdpSocket::bind("127.0.0.1:0")?;
        sock.set_read_timeout(Some(Duration::from_millis(20)))?;
        let addr = sock.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let echoed = Arc::new(AtomicU64::new(0));
        let (st, ec) = (stop.clone(), echoed.clone());
        let thread = std::thread::Builder::new().name("innet-echo".into()).spawn(move || {
            echo_loop(&sock, &st, &ec, drop_every);
        })?;
        Ok(EchoServer { addr, stop, echoed, thread: Some(thread) })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Datagrams echoed so far.
    pub fn echoed(&self) -> u64 {
        self.echoed.load(Ordering::Relaxed)
    }
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn echo_loop(sock: &UdpSocket, stop: &AtomicBool, echoed: &AtomicU64, drop_every: Option<u64>) {
    let mut bufs = vec![[0u8; MAX_DATAGRAM]; BATCH];
    // SAFETY (all below): plain-data arrays, pointing at `bufs` and `names`,
    // alive for each call.
    let mut names: [libc::sockaddr_storage; BATCH] = unsafe { std::mem::zeroed() };
    let mut seen = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let mut iov: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
        let mut hdrs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        for k in 0..BATCH {
            iov[k] = libc::iovec { iov_base: bufs[k].as_mut_ptr() as *mut _, iov_len: MAX_DATAGRAM };
            hdrs[k].msg_hdr.msg_iov = &mut iov[k];
            hdrs[k].msg_hdr.msg_iovlen = 1;
            hdrs[k].msg_hdr.msg_name = &mut names[k] as *mut _ as *mut _;
            hdrs[k].msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        }
        // Blocks for the first datagram (up to the read timeout), then takes
        // whatever else is queued.
        let r = unsafe {
            libc::recvmmsg(
                sock.as_raw_fd(),
                hdrs.as_mut_ptr(),
                BATCH as u32,
                libc::MSG_WAITFORONE,
                std::ptr::null_mut(),
            )
        };
        if r <= 0 {
            continue;
        }
        let mut out: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        let mut oiov: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
        let mut n = 0;
        for k in 0..r as usize {
            seen += 1;
            if drop_every.is_some_and(|d| seen % d == 0) {
                continue;
            }
            oiov[n] = libc::iovec { iov_base: bufs[k].as_mut_ptr() as *mut _, iov_len: hdrs[k].msg_len as usize };
            out[n].msg_hdr.msg_iov = &mut oiov[n];
            out[n].msg_hdr.msg_iovlen = 1;
            out[n].msg_hdr.msg_name = hdrs[k].msg_hdr.msg_name;
            out[n].msg_hdr.msg_namelen = hdrs[k].msg_hdr.msg_namelen;
            n += 1;
        }
        let mut sent = 0;
        while sent < n {
            let s = unsafe { libc::sendmmsg(sock.as_raw_fd(), out[sent..].as_mut_ptr(), (n - sent) as u32, 0) };
            if s <= 0 {
                break;
            }
            sent += s as usize;
        }
        echoed.fetch_add(sent as u64, Ordering::Relaxed);
    }
}

/// The echo's service: `len`-byte requests carrying the tag in their first
/// bytes, answered by the same bytes; client `c` sends to target
/// `c % targets`.
#[derive(Clone, Debug)]
pub struct EchoService {
    pub len: usize,
    pub targets: usize,
}

impl Service for EchoService {
    fn request(&mut self, client: u32, tag: u64, buf: &mut [u8]) -> (usize, usize) {
        let len = self.len.max(TAG_LEN);
        buf[..TAG_LEN].copy_from_slice(&tag.to_be_bytes());
        buf[TAG_LEN..len].fill(0);
        (len, client as usize % self.targets.max(1))
    }
    fn reply(&mut self, reply: &[u8]) -> Reply {
        match reply.get(..TAG_LEN) {
            Some(t) => Reply::Done(u64::from_be_bytes(t.try_into().expect("8 bytes"))),
            None => Reply::Ignored,
        }
    }
}

/// The generator's ceiling at `cfg`'s concurrency: the same clients,
/// threads and sockets against one fresh [`EchoServer`] per target of
/// `cfg` (so the responders are never fewer than the system's), with
/// `len`-byte requests spread over them.
pub fn ceiling(cfg: &LoadConfig, len: usize) -> io::Result<LoadReport> {
    let echoes = (0..cfg.targets.len().max(1)).map(|_| EchoServer::start(None)).collect::<io::Result<Vec<_>>>()?;
    let cfg = LoadConfig { targets: echoes.iter().map(|e| e.addr()).collect(), ..cfg.clone() };
    let services = vec![EchoService { len, targets: echoes.len() }; cfg.threads];
    Ok(run(&cfg, services)?.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_quantiles_are_within_a_bucket() {
        let mut h = Histogram::default();
        for us in 1..=1000u64 {
            h.record(us * 1000);
        }
        assert_eq!(h.count(), 1000);
        let p50 = h.quantile_us(0.5);
        assert!((p50 - 500.0).abs() / 500.0 < 0.02, "p50 {p50}");
        let p99 = h.quantile_us(0.99);
        assert!((p99 - 990.0).abs() / 990.0 < 0.02, "p99 {p99}");
        assert!((h.mean_us() - 500.5).abs() < 0.01);
        for ns in [0u64, 1, 63, 64, 65, 1 << 20, u64::MAX / 2] {
            let b = Histogram::bucket(ns);
            assert!(Histogram::lower(b) <= ns, "{ns}");
        }
    }
}
