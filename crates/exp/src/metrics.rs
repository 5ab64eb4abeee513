//! `--metrics ADDR`: every counter of the nodes this process runs, served
//! over HTTP (`GET /metrics`) in the Prometheus / OpenMetrics text format
//! (`prometheus-client` encodes, `tiny_http` serves).
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
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use innet_core::Counters;
use innet_live::paxos::ProgramNode;
use innet_live::topology::RunningNode;
use innet_live::{LiveCounters, NodeHandle, Rejected, SwitchNode, SwitchStats};
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
        }
    }

    /// A node a topology file started ([`innet_live::topology::start`]).
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

/// The HTTP endpoint: `GET /metrics` (or `/`) answers the counters; it
/// stops when dropped.
pub struct MetricsServer {
    addr: SocketAddr,
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
}

/// The OpenMetrics content type (Prometheus asks for it and reads it).
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

impl MetricsServer {
    /// Listens on `addr` (port 0: any free port) and serves `sources`.
    pub fn start(addr: SocketAddr, sources: Sources) -> anyhow::Result<MetricsServer> {
        let server = Arc::new(
            tiny_http::Server::http(addr).map_err(|e| anyhow::anyhow!("--metrics {addr}: cannot listen: {e}"))?,
        );
        let addr = server.server_addr().to_ip().unwrap_or(addr);
        let s = server.clone();
        let thread = std::thread::Builder::new().name("innet-metrics".into()).spawn(move || {
            for req in s.incoming_requests() {
                let path = req.url().split('?').next().unwrap_or("");
                let resp = if path == "/metrics" || path == "/" {
                    let header = tiny_http::Header::from_bytes("Content-Type", CONTENT_TYPE).expect("valid header");
                    tiny_http::Response::from_string(sources.render()).with_header(header)
                } else {
                    tiny_http::Response::from_string("not found: the counters are at /metrics\n").with_status_code(404)
                };
                if let Err(e) = req.respond(resp) {
                    tracing::debug!(error = %e, "metrics: answering a scrape failed");
                }
            }
        })?;
        tracing::info!(%addr, "metrics endpoint listening");
        Ok(MetricsServer { addr, server, thread: Some(thread) })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
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
}
