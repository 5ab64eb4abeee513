//! A batched closed-loop UDP load generator, and its ceiling.
//!
//! `clients` logical clients, each with one request outstanding at a time,
//! are multiplexed over a few non-blocking UDP sockets (one by default) on
//! one or more threads (one by default). Each thread does its I/O through
//! the live runtime's I/O core ([`innet_live::net`], what every live node
//! uses): `recvmmsg` with `UDP_GRO` (a segmented send from a live node
//! arrives as one buffer and is split there), and `sendmmsg` in which each
//! run of equal-size requests to one loopback address leaves as one
//! segmented send (UDP GSO: one trip through the kernel for up to 64
//! requests); buffers are allocated once. A reply is matched to its client
//! by a 64-bit tag the request carries (`client << 32 | sequence`), which
//! the [`Service`] writes into its request and finds again in the reply. A
//! request unanswered for `timeout` is counted as a timeout and sent again
//! under the same tag (so a late reply to any attempt completes it).
//!
//! **The ceiling.** [`EchoServer`] is the cheapest user-space responder
//! there is: bouncing every datagram back through the same I/O core.
//! Running the same generator configuration against it ([`ceiling`])
//! measures how many requests per second the generator itself can
//! complete at that concurrency on this machine; a system that runs within
//! 20% of it ([`generator_bound`]) is measured by the generator's limit,
//! not its own.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use innet_live::net::{self, Ports, RxBatch, TxBatch};
use serde::Serialize;

/// Largest datagram the generator sends or receives.
pub const MAX_DATAGRAM: usize = 256;

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
    /// Sockets per thread (at most `clients` in all). One by default: every
    /// receive then takes the most replies.
    pub sockets: usize,
    /// Generator threads. One by default: on 2 cores shared with the
    /// system under test, one generator thread at 64 clients completed
    /// about twice the requests of two (each thread's batches are half as
    /// big, and both take CPU time from the responders).
    pub threads: usize,
    /// The service's target addresses ([`Service::request`] picks one).
    pub targets: Vec<SocketAddr>,
    /// Completions in the first `warmup` are not counted.
    pub warmup: Duration,
    pub duration: Duration,
    /// Resend a request unanswered for this long.
    pub timeout: Duration,
    /// The generator's source address (one socket in all); `None`: an
    /// ephemeral port on whichever address routes to the targets.
    pub bind: Option<SocketAddr>,
}

impl LoadConfig {
    pub fn new(clients: u32, targets: Vec<SocketAddr>, duration: Duration) -> LoadConfig {
        LoadConfig {
            clients,
            sockets: 1,
            threads: 1,
            targets,
            warmup: Duration::from_millis(100),
            duration,
            timeout: Duration::from_millis(200),
            bind: None,
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
        if self.bind.is_some() && self.threads * self.sockets != 1 {
            return Err("a fixed source address (bind) needs one thread with one socket".into());
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
    ceiling > 0.0 && ops_per_s >= 0.8 * ceiling
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
            // Loopback targets from a loopback address; others (a testbed's
            // veths) from whichever address routes to them.
            let bind: SocketAddr = match (cfg.targets[0].is_ipv6(), cfg.targets[0].ip().is_loopback()) {
                _ if cfg.bind.is_some() => cfg.bind.expect("checked"),
                (true, true) => "[::1]:0".parse().expect("literal"),
                (true, false) => "[::]:0".parse().expect("literal"),
                (false, true) => "127.0.0.1:0".parse().expect("literal"),
                (false, false) => "0.0.0.0:0".parse().expect("literal"),
            };
            let s = UdpSocket::bind(bind)?;
            s.set_nonblocking(true)?;
            socks.push(s);
        }
        workers.push((service, clients, socks));
    }
    let start = Instant::now();
    let measure_from = start + cfg.warmup;
    let end = start + cfg.duration;
    // Each thread builds its worker (the I/O core stays on its thread).
    type Done<S> = std::thread::Result<io::Result<(LoadReport, S)>>;
    let done: Vec<Done<S>> = std::thread::scope(|sc| {
        let handles: Vec<_> = workers
            .into_iter()
            .map(|(service, clients, socks)| {
                sc.spawn(move || {
                    let mut w = Worker::new(service, clients, socks, cfg.targets.clone(), cfg.timeout)?;
                    w.run(measure_from, end);
                    Ok((w.report, w.service))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join()).collect()
    });
    let mut report = LoadReport { clients: cfg.clients, threads, sockets: 0, ..Default::default() };
    let mut out = vec![];
    for w in done {
        let (r, service) = w.map_err(|_| io::Error::other("load generator thread panicked"))??;
        report.sockets += r.sockets;
        report.merge(&r);
        out.push(service);
    }
    out.append(&mut spare);
    report.measured_s = end.saturating_duration_since(measure_from).as_secs_f64();
    report.finish();
    Ok((report, out))
}

#[derive(Clone, Copy)]
struct Outstanding {
    seq: u32,
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
    ports: Ports,
    sockets: usize,
    targets: Vec<SocketAddr>,
    timeout: Duration,
    report: LoadReport,
    /// Requests waiting for the next flush.
    tx: TxBatch,
    rx: RxBatch,
    /// One receive's replies, as the service read them.
    replies: Vec<Reply>,
    ready: Vec<usize>,
    /// When clients stop issuing requests.
    end: Instant,
    /// Clients that have stopped.
    idle: usize,
}

impl<S: Service> Worker<S> {
    fn new(
        service: S,
        clients: Vec<u32>,
        socks: Vec<UdpSocket>,
        targets: Vec<SocketAddr>,
        timeout: Duration,
    ) -> io::Result<Self> {
        let now = Instant::now();
        let n = clients.len();
        let local_of = clients.iter().enumerate().map(|(i, c)| (*c, i)).collect();
        let sockets = socks.len();
        Ok(Worker {
            service,
            clients,
            local_of,
            out: vec![
                Outstanding {
                    seq: 0,
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
            ports: Ports::new(socks)?,
            sockets,
            targets,
            timeout,
            report: LoadReport { sockets, ..Default::default() },
            tx: TxBatch::new(),
            rx: RxBatch::new(),
            replies: Vec::with_capacity(net::BATCH),
            ready: Vec::with_capacity(sockets),
            end: now,
            idle: 0,
        })
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
        o.first_sent = now;
        self.resend(local, now);
    }

    /// Queues client `local`'s request (again) on its socket.
    fn resend(&mut self, local: usize, now: Instant) {
        let o = &mut self.out[local];
        o.resend_at = now + self.timeout;
        o.refused = false;
        let to = self.targets[o.target as usize];
        self.tx.push(local % self.sockets, to, &self.req[local][..o.len as usize]);
    }

    /// Sends what is queued. A datagram the kernel refused (socket buffer
    /// full) is resent by its request's timeout.
    fn flush(&mut self) {
        if !self.tx.is_empty() {
            self.ports.flush(&mut self.tx, |_, _| {});
        }
    }

    /// Receives what is waiting on socket `s` (one batch); returns how
    /// many datagrams.
    fn receive(&mut self, s: usize, now: Instant, measure_from: Instant) -> usize {
        let got = self.ports.recv(s, &mut self.rx);
        self.replies.clear();
        for k in 0..got {
            let (_, bytes) = self.rx.get_mut(k);
            self.replies.push(self.service.reply(bytes));
        }
        for k in 0..got {
            self.on_reply(self.replies[k], now, measure_from);
        }
        got
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
        let mut next_scan = now + Duration::from_millis(1);
        loop {
            let now = Instant::now();
            if now >= drained || (now >= end && self.idle == self.out.len()) {
                break;
            }
            // Every socket is tried without asking epoll first: after a
            // flush, replies are usually already there.
            let mut got = 0;
            for s in 0..self.sockets {
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
                // Nothing arrived: sleep until a socket is readable (or the
                // next timeout scan). Spinning instead (up to 50 or 300 us)
                // was no faster and took CPU time from the system under
                // test on 2 cores.
                self.ports.wait(None, Duration::from_millis(1));
                self.ports.take_ready(&mut self.ready);
            }
        }
    }
}

/// A bare UDP echo: every datagram goes straight back to its sender,
/// received and sent in batches through the live runtime's I/O core
/// ([`innet_live::net`]: `recvmmsg` with `UDP_GRO`, `sendmmsg` with
/// segmented sends), like a live node's. One or more sockets (addresses),
/// served by one or more threads (each waits on all the sockets).
/// Optionally drops every `drop_every`-th datagram a thread receives (to
/// exercise timeouts).
pub struct EchoServer {
    addrs: Vec<SocketAddr>,
    stop: Arc<AtomicBool>,
    echoed: Arc<AtomicU64>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl EchoServer {
    /// One address, one thread.
    pub fn start(drop_every: Option<u64>) -> io::Result<EchoServer> {
        EchoServer::start_on(1, 1, drop_every)
    }

    /// `sockets` addresses served by `threads` threads.
    pub fn start_on(sockets: usize, threads: usize, drop_every: Option<u64>) -> io::Result<EchoServer> {
        let socks = (0..sockets.max(1))
            .map(|_| {
                let s = UdpSocket::bind("127.0.0.1:0")?;
                s.set_nonblocking(true)?;
                Ok(s)
            })
            .collect::<io::Result<Vec<_>>>()?;
        let addrs = socks.iter().map(|s| s.local_addr()).collect::<io::Result<Vec<_>>>()?;
        let stop = Arc::new(AtomicBool::new(false));
        let echoed = Arc::new(AtomicU64::new(0));
        let mut handles = vec![];
        for _ in 0..threads.max(1) {
            let mine = socks.iter().map(|s| s.try_clone()).collect::<io::Result<Vec<_>>>()?;
            let (st, ec) = (stop.clone(), echoed.clone());
            handles.push(std::thread::Builder::new().name("innet-echo".into()).spawn(move || {
                // The sockets are already bound: a failure here is epoll's
                // or timerfd's (out of descriptors), and the echo then
                // answers nothing, which the generator shows.
                if let Ok(ports) = Ports::new(mine) {
                    echo_loop(ports, &st, &ec, drop_every);
                }
            })?);
        }
        Ok(EchoServer { addrs, stop, echoed, threads: handles })
    }

    /// The first address.
    pub fn addr(&self) -> SocketAddr {
        self.addrs[0]
    }

    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// Datagrams echoed so far.
    pub fn echoed(&self) -> u64 {
        self.echoed.load(Ordering::Relaxed)
    }
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn echo_loop(mut ports: Ports, stop: &AtomicBool, echoed: &AtomicU64, drop_every: Option<u64>) {
    let mut rx = RxBatch::new();
    let mut tx = TxBatch::new();
    let mut ready = vec![];
    let mut seen = 0u64;
    while !stop.load(Ordering::Relaxed) {
        ports.wait(None, Duration::from_millis(20));
        ports.take_ready(&mut ready);
        for &p in &ready {
            for k in 0..ports.recv(p, &mut rx) {
                seen += 1;
                if drop_every.is_some_and(|d| seen % d == 0) {
                    continue;
                }
                let (from, bytes) = rx.get_mut(k);
                tx.push(p, from, bytes);
            }
        }
        let mut sent = 0;
        ports.flush(&mut tx, |_, ok| sent += ok as u64);
        echoed.fetch_add(sent, Ordering::Relaxed);
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
/// threads and sockets, and `len`-byte requests spread over as many
/// addresses as `cfg` has targets, answered by bare [`EchoServer`]s; the
/// faster of two layouts (each run for `cfg`'s duration): one echo thread
/// serving every address, and one echo thread per address. Which is faster
/// depends on who has the CPU: on 2 cores, one echo thread leaves a core to
/// a one-thread generator, while with many requests per second a single
/// echo thread is the bottleneck and one per address (like one thread per
/// live node) goes further.
pub fn ceiling(cfg: &LoadConfig, len: usize) -> io::Result<LoadReport> {
    let n = cfg.targets.len().max(1);
    let mut best: Option<LoadReport> = None;
    for one_thread in [true, false] {
        let echoes = if one_thread {
            vec![EchoServer::start_on(n, 1, None)?]
        } else {
            (0..n).map(|_| EchoServer::start(None)).collect::<io::Result<Vec<_>>>()?
        };
        let targets: Vec<SocketAddr> = echoes.iter().flat_map(|e| e.addrs().iter().copied()).collect();
        let cfg = LoadConfig { targets, ..cfg.clone() };
        let services = vec![EchoService { len, targets: n }; cfg.threads];
        let r = run(&cfg, services)?.0;
        if best.as_ref().is_none_or(|b| r.ops_per_s > b.ops_per_s) {
            best = Some(r);
        }
    }
    Ok(best.expect("two layouts ran"))
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
