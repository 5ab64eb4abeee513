//! `--metrics ADDR`: every counter of the nodes this process runs, served
//! over HTTP (`GET /metrics`) in the Prometheus / OpenMetrics text format
//! (`prometheus-client` encodes; a small server of our own on one thread
//! serves, with bounded connections and timeouts: [`MetricsServer`]).
//!
//! Counters are read at scrape time from the running nodes: a switch's
//! program and runtime counters under its lock, a host's from the
//! [`LiveCounters`] its event loop publishes (at most 30 ms old).
//!
//! Names: a node's own counter `C` of component `K` (`switch`, `store`,
//! `paxos`, `chain`) is `innet_K_C_total`; the runtime's (`live_*`) are
//! `innet_live_*_total`; packets refused by a node's admission rule are
//! `innet_rejected_total{reason="..."}`. Every sample carries the labels
//! `role` (store, switch, coordinator, acceptor, backup, learner, replica,
//! chain_node) and `node` (the node's name).

use std::collections::BTreeMap;
use std::io::{self, Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::paxos::ProgramNode;
use crate::topology::RunningNode;
use crate::{LiveCounters, NodeHandle, Rejected, SwitchNode, SwitchStats};
use innet_core::Counters;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

/// One node's counters at one instant.
#[derive(Clone, Debug, Default)]
pub struct Sample {
    /// The node's own counters (its program's or host's).
    pub own: Vec<(&'static str, u64)>,
    /// The runtime's (`live_*`).
    pub runtime: Vec<(&'static str, u64)>,
    /// Packets its admission rule refused, by reason.
    pub rejected: Rejected,
}

impl Sample {
    pub fn of_switch(own: Vec<(&'static str, u64)>, stats: &SwitchStats) -> Sample {
        Sample { own, runtime: stats.runtime_counters(), rejected: stats.rejected.clone() }
    }
    pub fn of_host(live: &LiveCounters) -> Sample {
        let (own, net) = live.read();
        Sample { own, runtime: net.runtime_counters(), rejected: net.rejected }
    }
}

type Read = Box<dyn Fn() -> Option<Sample> + Send + Sync>;

/// A sample's labels, `(name, value)`.
type Labels = Vec<(String, String)>;

struct Source {
    component: &'static str,
    role: String,
    node: String,
    read: Read,
}

/// The nodes whose counters a [`MetricsServer`] serves; nodes may be added
/// while it runs.
#[derive(Clone, Default)]
pub struct Sources(Arc<Mutex<Vec<Source>>>);

impl std::fmt::Debug for Sources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Sources({} nodes)", self.lock().len())
    }
}

impl Sources {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Source>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A node read by `read` at every scrape (`None`: not running now).
    pub fn add(
        &self,
        component: &'static str,
        role: &str,
        node: &str,
        read: impl Fn() -> Option<Sample> + Send + Sync + 'static,
    ) {
        self.lock().push(Source { component, role: role.into(), node: node.into(), read: Box::new(read) });
    }

    /// A software switch: its program's and runtime's counters.
    pub fn switch<P: Counters + Send + 'static>(
        &self,
        component: &'static str,
        role: &str,
        node: &str,
        s: &SwitchNode<P>,
    ) {
        let state = s.state().clone();
        self.add(component, role, node, move || {
            let st = state.lock().unwrap_or_else(|e| e.into_inner());
            Some(Sample::of_switch(st.program.counters(), &st.stats))
        });
    }

    /// A host: what it publishes.
    pub fn host(&self, component: &'static str, role: &str, node: &str, live: &LiveCounters) {
        let live = live.clone();
        self.add(component, role, node, move || Some(Sample::of_host(&live)));
    }

    /// A host node.
    pub fn node<R>(&self, component: &'static str, role: &str, h: &NodeHandle<R>) {
        self.host(component, role, h.name(), h.live());
    }

    /// A Paxos coordinator or acceptor, as a switch or a process.
    pub fn program<P: Counters + Send + 'static>(&self, role: &str, n: &ProgramNode<P>) {
        match n {
            ProgramNode::Switch(s) => self.switch("paxos", role, s.name(), s),
            ProgramNode::Process(h) => self.node("paxos", role, h),
            ProgramNode::Elsewhere(_) => {}
        }
    }

    /// A node a topology file started ([`crate::topology::start`]).
    /// The chain control plane and the chain switches' management agents
    /// report at exit only.
    pub fn running(&self, name: &str, n: &RunningNode) {
        match n {
            RunningNode::Store(h) => self.host("store", "store", name, h.live()),
            RunningNode::TxnSwitch(s) => self.switch("switch", "switch", name, s),
            RunningNode::Coordinator(p) => self.program("coordinator", p),
            RunningNode::Acceptor(p) => self.program("acceptor", p),
            RunningNode::Backup(h) => self.host("paxos", "backup", name, h.live()),
            RunningNode::Learner(h) => self.host("paxos", "learner", name, h.live()),
            RunningNode::ChainSwitch { switch, .. } => self.switch("chain", "chain_node", name, switch),
            RunningNode::ChainControl(_) => {}
        }
    }

    /// The text a scrape gets (OpenMetrics, which Prometheus reads).
    pub fn render(&self) -> String {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Collect(self.clone())));
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &registry).expect("writing to a String");
        out
    }

    /// Every sample, grouped by metric family: name -> (labels, value).
    fn families(&self) -> BTreeMap<String, Vec<(Labels, u64)>> {
        let mut fam: BTreeMap<String, Vec<(Labels, u64)>> = BTreeMap::new();
        for s in self.lock().iter() {
            let Some(sample) = (s.read)() else { continue };
            let labels = || vec![("role".to_string(), s.role.clone()), ("node".to_string(), s.node.clone())];
            for (k, v) in sample.own {
                fam.entry(format!("innet_{}_{}", s.component, metric_word(k))).or_default().push((labels(), v));
            }
            for (k, v) in sample.runtime {
                fam.entry(format!("innet_{}", metric_word(k))).or_default().push((labels(), v));
            }
            for (reason, v) in sample.rejected {
                let mut l = labels();
                l.push(("reason".into(), reason.to_string()));
                fam.entry("innet_rejected".into()).or_default().push((l, v));
            }
        }
        fam
    }
}

/// A counter name as a metric name's part: `[a-z0-9_]`, anything else `_`.
fn metric_word(k: &str) -> String {
    k.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect()
}

/// Reads every source at scrape time.
struct Collect(Sources);

impl std::fmt::Debug for Collect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Collect({:?})", self.0)
    }
}

impl prometheus_client::collector::Collector for Collect {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for (name, samples) in self.0.families() {
            let help = if name == "innet_rejected" {
                "packets a node's admission rule refused, by reason"
            } else if name.starts_with("innet_metrics_") {
                "this metrics endpoint's connections and requests (docs/live.md#metrics)"
            } else if name.starts_with("innet_live_") {
                "the live runtime's counter of this node (docs/live.md#metrics)"
            } else {
                "the node's own counter, as `innet up` prints it at exit (docs/live.md#metrics)"
            };
            let mut family = encoder.encode_descriptor(&name, help, None, MetricType::Counter)?;
            for (labels, v) in &samples {
                ConstCounter::new(*v).encode(family.encode_family(labels)?)?;
            }
        }
        Ok(())
    }
}

/// Most connections the endpoint holds open at once. A new connection
/// beyond it closes the connection that has waited longest without
/// sending a whole request (`connections_evicted`); if every one is being
/// answered, the new one is closed instead (`connections_refused`).
/// Prometheus opens one connection per scrape.
pub const METRICS_CONNECTIONS_MAX: usize = 64;
/// A connection that moves no byte (of its request, or of its answer)
/// for this long is closed (`connections_timed_out`).
pub const METRICS_IDLE_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest request head read, bytes; a longer one is answered 431 and
/// closed (`requests_refused`).
pub const METRICS_REQUEST_BYTES_MAX: usize = 8192;
/// How often the serving thread looks at the clock and the stop flag.
const POLL_INTERVAL_MS: u16 = 50;

/// What the endpoint counts about its own connections (served as
/// `innet_metrics_*_total{role="metrics",node="endpoint"}`).
#[derive(Debug, Default)]
struct EndpointStats {
    accepted: AtomicU64,
    evicted: AtomicU64,
    refused: AtomicU64,
    timed_out: AtomicU64,
    scrapes: AtomicU64,
    requests_refused: AtomicU64,
}

impl EndpointStats {
    fn sample(&self) -> Sample {
        let c = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Sample {
            own: vec![
                ("connections_accepted", c(&self.accepted)),
                ("connections_evicted", c(&self.evicted)),
                ("connections_refused", c(&self.refused)),
                ("connections_timed_out", c(&self.timed_out)),
                ("scrapes", c(&self.scrapes)),
                ("requests_refused", c(&self.requests_refused)),
            ],
            ..Sample::default()
        }
    }
}

fn bump(a: &AtomicU64) {
    a.fetch_add(1, Ordering::Relaxed);
}

/// The HTTP endpoint: `GET /metrics` (or `/`) answers the counters; it
/// stops when dropped.
///
/// One thread serves every connection (non-blocking sockets, `poll`), so
/// connections cost no threads; at most [`METRICS_CONNECTIONS_MAX`] are
/// open, each closed after [`METRICS_IDLE_TIMEOUT`] without progress, and
/// every answer closes its connection (HTTP/1.1 `Connection: close`).
pub struct MetricsServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// The OpenMetrics content type (Prometheus asks for it and reads it).
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// One open connection: the request read so far, then the answer being written.
struct Conn {
    stream: TcpStream,
    request: Vec<u8>,
    /// The answer and how much of it is written.
    answer: Option<(Vec<u8>, usize)>,
    last_progress: Instant,
}

/// What became of a connection after it was served.
#[derive(PartialEq)]
enum After {
    Open,
    Close,
}

impl MetricsServer {
    /// Listens on `addr` (port 0: any free port) and serves `sources` (and
    /// the endpoint's own counters, added to `sources`).
    pub fn start(addr: SocketAddr, sources: Sources) -> anyhow::Result<MetricsServer> {
        let listener = TcpListener::bind(addr).map_err(|e| anyhow::anyhow!("--metrics {addr}: cannot listen: {e}"))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let stats = Arc::new(EndpointStats::default());
        let st = stats.clone();
        sources.add("metrics", "metrics", "endpoint", move || Some(st.sample()));
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::Builder::new()
            .name("innet-metrics".into())
            .spawn(move || serve_connections(&listener, &sources, &stats, &s))?;
        tracing::info!(%addr, "metrics endpoint listening");
        Ok(MetricsServer { addr, stop, thread: Some(thread) })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The serving loop: accepts, reads requests, writes answers, closes idle
/// connections, until `stop`.
fn serve_connections(listener: &TcpListener, sources: &Sources, stats: &EndpointStats, stop: &AtomicBool) {
    let mut conns: Vec<Conn> = Vec::with_capacity(METRICS_CONNECTIONS_MAX);
    while !stop.load(Ordering::Relaxed) {
        let ready = {
            let mut fds = Vec::with_capacity(conns.len() + 1);
            fds.push(PollFd::new(listener.as_fd(), PollFlags::POLLIN));
            for c in &conns {
                let want = if c.answer.is_some() { PollFlags::POLLOUT } else { PollFlags::POLLIN };
                fds.push(PollFd::new(c.stream.as_fd(), want));
            }
            if poll(&mut fds, PollTimeout::from(POLL_INTERVAL_MS)).is_err() {
                continue; // EINTR: look again
            }
            fds.iter().map(|f| f.revents().is_some_and(|r| !r.is_empty())).collect::<Vec<bool>>()
        };
        let now = Instant::now();
        let mut keep = Vec::with_capacity(conns.len());
        for (c, ready) in conns.into_iter().zip(ready.iter().skip(1)) {
            let mut c = c;
            if *ready && serve_one(&mut c, sources, stats, now) == After::Close {
                continue;
            }
            if now.duration_since(c.last_progress) > METRICS_IDLE_TIMEOUT {
                bump(&stats.timed_out);
                continue;
            }
            keep.push(c);
        }
        conns = keep;
        if ready.first().copied().unwrap_or(false) {
            accept_all(listener, &mut conns, stats, now);
        }
    }
}

/// Takes every pending connection, within [`METRICS_CONNECTIONS_MAX`].
fn accept_all(listener: &TcpListener, conns: &mut Vec<Conn>, stats: &EndpointStats, now: Instant) {
    loop {
        let stream = match listener.accept() {
            Ok((s, _)) => s,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            Err(e) => {
                // Out of file descriptors, or the peer gave up: try at the next poll.
                tracing::debug!(error = %e, "metrics: accept failed");
                return;
            }
        };
        bump(&stats.accepted);
        if stream.set_nonblocking(true).is_err() {
            continue;
        }
        if conns.len() >= METRICS_CONNECTIONS_MAX {
            // Room comes from the connection idle longest without a request.
            let victim = conns
                .iter()
                .enumerate()
                .filter(|(_, c)| c.answer.is_none())
                .min_by_key(|(_, c)| c.last_progress)
                .map(|(i, _)| i);
            match victim {
                Some(i) => {
                    conns.swap_remove(i);
                    bump(&stats.evicted);
                }
                None => {
                    bump(&stats.refused);
                    continue;
                }
            }
        }
        conns.push(Conn { stream, request: Vec::new(), answer: None, last_progress: now });
    }
}

/// Reads or writes what `c`'s socket is ready for.
fn serve_one(c: &mut Conn, sources: &Sources, stats: &EndpointStats, now: Instant) -> After {
    if let Some((bytes, written)) = &mut c.answer {
        loop {
            match c.stream.write(bytes.get(*written..).unwrap_or_default()) {
                Ok(0) => return After::Close,
                Ok(n) => {
                    *written = written.saturating_add(n);
                    c.last_progress = now;
                    if *written >= bytes.len() {
                        let _ = c.stream.shutdown(std::net::Shutdown::Both);
                        return After::Close;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return After::Open,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return After::Close,
            }
        }
    }
    let mut buf = [0u8; 2048];
    loop {
        match c.stream.read(&mut buf) {
            Ok(0) => return After::Close,
            Ok(n) => {
                c.request.extend_from_slice(buf.get(..n).unwrap_or_default());
                c.last_progress = now;
                if let Some(answer) = answer(&c.request, sources, stats) {
                    c.answer = Some((answer, 0));
                    return serve_one(c, sources, stats, now);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return After::Open,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return After::Close,
        }
    }
}

/// The answer to `request` once its head is complete (`None`: read on).
fn answer(request: &[u8], sources: &Sources, stats: &EndpointStats) -> Option<Vec<u8>> {
    let end =
        request.windows(4).position(|w| w == b"\r\n\r\n").or_else(|| request.windows(2).position(|w| w == b"\n\n"));
    if end.is_none() {
        if request.len() > METRICS_REQUEST_BYTES_MAX {
            bump(&stats.requests_refused);
            return Some(response(
                "431 Request Header Fields Too Large",
                "text/plain",
                "request head too long\n",
                true,
            ));
        }
        return None;
    }
    let line = request.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let with_body = method != "HEAD";
    Some(match (method, path) {
        ("GET" | "HEAD", "/metrics" | "/") => {
            bump(&stats.scrapes);
            response("200 OK", CONTENT_TYPE, &sources.render(), with_body)
        }
        ("GET" | "HEAD", _) => {
            response("404 Not Found", "text/plain", "not found: the counters are at /metrics\n", with_body)
        }
        _ => {
            bump(&stats.requests_refused);
            response("405 Method Not Allowed", "text/plain", "only GET /metrics\n", true)
        }
    })
}

fn response(status: &str, content_type: &str, body: &str, with_body: bool) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if with_body {
        out.extend_from_slice(body.as_bytes());
    }
    out
}

/// Starts the endpoint if `addr` is given, saying where on stderr (one
/// line, `innet: metrics on http://ADDR/metrics`).
pub fn serve(addr: Option<SocketAddr>, sources: &Sources) -> anyhow::Result<Option<MetricsServer>> {
    let Some(addr) = addr else { return Ok(None) };
    let m = MetricsServer::start(addr, sources.clone())?;
    eprintln!("innet: metrics on http://{}/metrics", m.addr());
    Ok(Some(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_follow_prometheus_conventions() {
        let sources = Sources::default();
        let mut rejected = Rejected::new();
        rejected.insert("not_a_peer", 3);
        let s = Sample { own: vec![("optimistically_aborted", 7)], runtime: vec![("live_received", 9)], rejected };
        sources.add("switch", "switch", "s0", move || Some(s.clone()));
        sources.add("store", "store", "gone", || None);
        let text = sources.render();
        for line in [
            "# TYPE innet_switch_optimistically_aborted counter",
            "innet_switch_optimistically_aborted_total{role=\"switch\",node=\"s0\"} 7",
            "innet_live_received_total{role=\"switch\",node=\"s0\"} 9",
            "innet_rejected_total{role=\"switch\",node=\"s0\",reason=\"not_a_peer\"} 3",
            "# EOF",
        ] {
            assert!(text.lines().any(|l| l == line), "no line {line:?} in:\n{text}");
        }
        assert!(!text.contains("gone"), "a node that does not run has no samples:\n{text}");
    }

    #[test]
    fn an_endless_request_head_is_refused_and_counted() {
        use std::io::{Read, Write};
        let sources = Sources::default();
        let server = MetricsServer::start("127.0.0.1:0".parse().unwrap(), sources.clone()).unwrap();
        let mut s = TcpStream::connect(server.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let head = vec![b'a'; METRICS_REQUEST_BYTES_MAX + 1];
        // The server may close before it has read everything.
        let _ = s.write_all(&head);
        let mut text = String::new();
        let _ = s.read_to_string(&mut text);
        assert!(text.starts_with("HTTP/1.1 431 "), "{text}");
        assert!(sources
            .render()
            .contains("innet_metrics_requests_refused_total{role=\"metrics\",node=\"endpoint\"} 1"));
    }
}
