//! The chain control plane (`innet_chain::ChainControl`) driving the XDP
//! chain testbed: failure detection, removal, recovery by copy while writes
//! pause, and re-add (NetCRAQ paper section III-C), as BPF map writes on
//! the nodes' programs, for NetCRAQ and NetChain.
//!
//! [`XdpChain`] is the runtime side of `innet_live::chain::ChainNodes`, the
//! interface the UDP runtime's control loop drives ([`control_step`]); the
//! control plane and the layout -> tables mapping are `innet_chain`'s,
//! unchanged:
//!
//! * **Heartbeats through the data plane.** Every heartbeat the control
//!   plane sends each node a probe from the client namespace: a 1-byte UDP
//!   datagram on the protocol's port, which every node program, configured
//!   or not, counts as truncated (`dropped_malformed_truncated`) and drops;
//!   clients never send such packets. A node answers the heartbeat when
//!   that counter moved since the previous one: the probe crossed the
//!   node's link from the client and the node's XDP program ran. The report's other fields are
//!   map reads, as a P4 controller reads registers: configured = the
//!   config map's role is set; full objects = NetCRAQ's `craq_index`.
//! * **Apply** writes every node's role, pause, ports, ACK group and
//!   NetChain neighbours ([`crate::chain_testbed::apply_layout`]), the head
//!   last: when a layout resumes writes, the rest of the chain (a joined
//!   tail included) is in place before the first write enters.
//! * **Copy** reads the source's registers (NetCRAQ: every object's clean
//!   version; NetChain: installed keys, values, sequence numbers) and
//!   writes them into the others' maps.
//!
//! A failure is the node's links going down (`ip link set ... down`, every
//! device of its namespace at once): a switch that crashed or lost power forwards nothing and answers nothing,
//! which is what the control plane's timeout is for. (Detaching the XDP
//! program instead would leave the node's kernel on the wire, answering
//! ARP and sending ICMP port unreachable for chain packets: a live host
//! without its switch program, not a failed switch.) A restart is a fresh
//! program (no role, empty registers), attached and pinned in place of the
//! old one, then the link up: the control plane sees an unconfigured node
//! and adds it through the next resync.
//!
//! [`run_drill`] is the drill of `innet up chain --drill` on the testbed:
//! clients in the client namespace read and write while a middle node
//! fails, is removed, restarts, is recovered by copy and re-added.

use std::net::{SocketAddr, UdpSocket};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};

use innet_chain::check::{check, CheckSummary};
use innet_chain::client::Record;
use innet_chain::control::{Action, ChainControl, ControlConfig, Layout, NodeReport};
use innet_chain::deploy;
use innet_chain::workload::LoadClient;
use innet_chain::Protocol;
use innet_core::Time;
use innet_live::chain::{control_step, head_last, spawn_drill_clients, ChainNodes, ChainView, DrillLoad};
use innet_live::{clock, Stop};
use innet_wire::netchain::key_from_u32;
use innet_wire::txn::Value;

use crate::chain_testbed::{
    self as tb, apply_layout, load_node, node_ip, set_node_link, udp_port, ChainUp, Multicast, NodeProgram, NodeXdp,
    CLIENT_IP,
};
use crate::fabric::Fabric;
use crate::testbed::{in_netns, NS_CLIENT};

/// The counter a heartbeat probe moves on every node program.
pub const PROBE_COUNTER: &str = "dropped_malformed_truncated";

/// The XDP chain as the control plane reaches it: the nodes' loaded
/// programs (their maps) and a socket in the client namespace for probes.
pub struct XdpChain {
    protocol: Protocol,
    nodes: Vec<NodeXdp>,
    probe: UdpSocket,
    /// Each node's probe counter at the previous heartbeat.
    probes_seen: Vec<u64>,
    /// How long each copy took (register reads and writes), for reports.
    pub copies: Vec<Duration>,
    /// Map writes that failed while applying a layout or copying.
    pub errors: Vec<String>,
}

impl XdpChain {
    /// Loads, wires and attaches every node of a built chain topology
    /// (`chain_testbed::up` with no data plane) and applies the
    /// initial layout.
    pub fn start(o: &ChainUp) -> Result<XdpChain> {
        let (protocol, nodes) = (o.protocol, o.nodes);
        let xs = tb::attach_nodes(o)?;
        let probe = in_netns(NS_CLIENT, || Ok(UdpSocket::bind((CLIENT_IP, 0))?)).context("probe socket")?;
        let chain =
            XdpChain { protocol, nodes: xs, probe, probes_seen: vec![0; nodes], copies: vec![], errors: vec![] };
        for i in 0..nodes {
            chain.send_probe(i);
        }
        Ok(chain)
    }

    fn send_probe(&self, i: usize) {
        // A node whose link is down cannot be reached: the datagram is lost,
        // which is the point.
        let _ = self.probe.send_to(&[0xff], SocketAddr::from((node_ip(i), udp_port(self.protocol))));
    }

    fn probe_count(&self, i: usize) -> Result<u64> {
        match &self.nodes[i].program {
            NodeProgram::Craq(x) => x.counter(PROBE_COUNTER),
            NodeProgram::Nc(x) => x.counter(PROBE_COUNTER),
        }
    }

    fn node_report(&self, i: usize) -> Result<NodeReport> {
        Ok(match &self.nodes[i].program {
            NodeProgram::Craq(x) => NodeReport { configured: x.configured()?, full_objects: x.full_objects()? },
            NodeProgram::Nc(x) => NodeReport { configured: x.configured()?, full_objects: 0 },
        })
    }

    /// Node `i` restarted with program `x` (fresh: no role, empty registers).
    pub fn replace(&mut self, i: usize, x: NodeXdp) {
        self.nodes[i] = x;
        self.probes_seen[i] = 0;
    }

    /// The values node `i` holds for keys `0..keys` (NetCRAQ: clean
    /// versions; NetChain: registers, zero for a key not installed).
    pub fn values(&self, i: usize, keys: u32) -> Result<Vec<Value>> {
        match &self.nodes[i].program {
            NodeProgram::Craq(x) => Ok(x.snapshot()?.into_iter().take(keys as usize).collect()),
            NodeProgram::Nc(x) => {
                let snap = x.snapshot()?;
                Ok((0..keys)
                    .map(|k| snap.iter().find(|(key, _)| *key == key_from_u32(k)).map_or(Value::ZERO, |(_, s)| s.value))
                    .collect())
            }
        }
    }

    fn copy_one(&self, from: usize, to: &[usize]) -> Result<()> {
        match &self.nodes[from].program {
            NodeProgram::Craq(src) => {
                let values = src.snapshot()?;
                for &t in to {
                    match &self.nodes[t].program {
                        NodeProgram::Craq(x) => x.load_values(&values).with_context(|| format!("node {t}"))?,
                        NodeProgram::Nc(_) => bail!("node {t} runs the other protocol"),
                    }
                }
            }
            NodeProgram::Nc(src) => {
                let entries = src.snapshot()?;
                for &t in to {
                    match &self.nodes[t].program {
                        NodeProgram::Nc(x) => x.load_slots(&entries).with_context(|| format!("node {t}"))?,
                        NodeProgram::Craq(_) => bail!("node {t} runs the other protocol"),
                    }
                }
            }
        }
        Ok(())
    }
}

impl ChainNodes for XdpChain {
    fn count(&self) -> usize {
        self.nodes.len()
    }

    /// Answers iff the probe sent at the previous heartbeat reached the
    /// node's program; then sends the next one.
    fn report(&mut self, i: usize) -> Option<NodeReport> {
        let count = self.probe_count(i).ok();
        let alive = count.is_some_and(|c| c > self.probes_seen[i]);
        if let Some(c) = count {
            self.probes_seen[i] = c;
        }
        self.send_probe(i);
        if !alive {
            return None;
        }
        match self.node_report(i) {
            Ok(r) => Some(r),
            Err(e) => {
                self.errors.push(format!("node {i}: report: {e:#}"));
                None
            }
        }
    }

    fn apply(&mut self, layout: &Layout) -> bool {
        let n = self.nodes.len();
        let mut all = true;
        for i in head_last(layout, n).collect::<Vec<_>>() {
            if let Err(e) = apply_layout(&mut self.nodes[i], self.protocol, layout, n, i) {
                self.errors.push(format!("node {i}: apply {layout:?}: {e:#}"));
                all &= !layout.chain.contains(&i);
            }
        }
        all
    }

    fn copy(&mut self, from: usize, to: &[usize]) -> bool {
        let t = Instant::now();
        let r = self.copy_one(from, to);
        self.copies.push(t.elapsed());
        if let Err(e) = &r {
            self.errors.push(format!("copy {from} -> {to:?}: {e:#}"));
        }
        r.is_ok()
    }
}

/// A failure drill on the XDP chain testbed.
#[derive(Clone, Debug)]
pub struct DrillConfig {
    pub protocol: Protocol,
    pub nodes: usize,
    /// The node that fails (a middle node by default).
    pub victim: usize,
    pub clients: u32,
    pub write_ratio: f64,
    pub keys: u32,
    pub fail_after: Duration,
    pub restart_after: Duration,
    pub run_after_restart: Duration,
    pub client_timeout: Duration,
    pub control: ControlConfig,
    pub seed: u64,
    /// The testbed's fabric and the NetCRAQ tail's multicast.
    pub fabric: Fabric,
    pub multicast: Multicast,
}

impl DrillConfig {
    /// The parameters of `innet up chain --drill` (`innet_live::chain::DrillConfig`):
    /// two clients, 30% writes, 8 keys, 50 ms client timeout; the middle
    /// node fails after 1 s and restarts 0.5 s later; 1 s more. Control
    /// plane: heartbeats every 5 ms, failure after 50 ms of silence, 20 ms
    /// drain.
    pub fn new(protocol: Protocol, nodes: usize) -> DrillConfig {
        DrillConfig {
            protocol,
            nodes,
            victim: nodes.saturating_sub(1) / 2,
            clients: 2,
            write_ratio: 0.3,
            keys: 8,
            fail_after: Duration::from_secs(1),
            restart_after: Duration::from_millis(500),
            run_after_restart: Duration::from_secs(1),
            client_timeout: Duration::from_millis(50),
            control: ControlConfig {
                heartbeat_interval: Duration::from_millis(5),
                failure_timeout: Duration::from_millis(50),
                drain: Duration::from_millis(20),
                full_heartbeats: 3,
            },
            seed: 5,
            fabric: Fabric::default(),
            multicast: Multicast::Devmap,
        }
    }
}

/// What a drill saw.
pub struct DrillReport {
    /// The chain when the victim restarted, and at the end.
    pub members_after_failure: Vec<usize>,
    pub members_at_end: Vec<usize>,
    /// Every node's values of keys `0..keys` at the end.
    pub values: Vec<Vec<Value>>,
    /// Longest time between two completions of one client.
    pub interruption: Duration,
    pub operations_after_failure: usize,
    /// From the link going down to the layout without the node.
    pub removal: Option<Duration>,
    /// From the restarted node's link coming up to the layout with it again.
    pub rejoin: Option<Duration>,
    /// How long writes were paused, per resync.
    pub pauses: Vec<Duration>,
    /// How long each copy's map reads and writes took.
    pub copies: Vec<Duration>,
    /// Map accesses that failed (none, when all went well).
    pub errors: Vec<String>,
    /// Every client's history and the linearizability check of all of them.
    pub history: Vec<Record>,
    pub check: std::result::Result<CheckSummary, Vec<String>>,
    pub loads: Vec<LoadClient>,
    pub control: ChainControl,
}

impl DrillReport {
    pub fn same_values(&self) -> bool {
        self.values.iter().all(|v| *v == self.values[0])
    }
}

/// Stops the drill's threads however it ends.
struct StopOnDrop(Stop);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.stop();
    }
}

impl DrillConfig {
    /// Refuses a drill the testbed cannot run.
    fn check(&self) -> Result<()> {
        let protocol = self.protocol;
        ensure!(self.nodes >= 3, "a drill fails a middle node: at least 3 nodes (got {})", self.nodes);
        ensure!(self.victim < self.nodes, "node {} is not in a chain of {}", self.victim, self.nodes);
        let most = match protocol {
            Protocol::NetCraq => tb::NODES_MAX,
            Protocol::NetChain => tb::NODES_MAX.min(innet_wire::netchain::MAX_CHAIN_NODES),
        };
        ensure!(self.nodes <= most, "{protocol} chains on the testbed have at most {most} nodes");
        ensure!(
            self.keys >= 1 && self.keys <= tb::NETCHAIN_KEYS_INSTALLED,
            "keys in 1..={}",
            tb::NETCHAIN_KEYS_INSTALLED
        );
        Ok(())
    }

    /// The drill's clients, sending to the testbed's nodes.
    fn load(&self) -> DrillLoad {
        let port = udp_port(self.protocol);
        let addrs: Vec<SocketAddr> = (0..self.nodes).map(|i| SocketAddr::from((node_ip(i), port))).collect();
        DrillLoad {
            protocol: self.protocol,
            victim: self.victim,
            clients: self.clients,
            write_ratio: self.write_ratio,
            keys: self.keys,
            client_timeout: self.client_timeout,
            seed: self.seed,
            addrs,
            chain_addrs: Some((0..self.nodes).map(|j| u32::from(node_ip(j))).collect()),
        }
    }
}

/// Runs `control` on `chain` in a thread of its own, a step every
/// heartbeat, publishing its view to `view`, until `stop`; returns it.
fn spawn_control(
    control: ChainControl,
    chain: Arc<Mutex<XdpChain>>,
    view: ChainView,
    stop: Stop,
) -> std::io::Result<std::thread::JoinHandle<ChainControl>> {
    std::thread::Builder::new().name("innet-xdp-chain-control".into()).spawn(move || {
        let mut control = control;
        while !stop.is_stopped() {
            std::thread::sleep(control.config.heartbeat_interval);
            let mut c = chain.lock().unwrap_or_else(|e| e.into_inner());
            control_step(&mut control, &mut *c, &view, clock::now());
        }
        control
    })
}

/// How long after `after` the control plane's `log` first applied a
/// layout with (`member`) or without node `victim` in the chain.
fn first_layout(log: &[(Time, Action)], after: Time, victim: usize, member: bool) -> Option<Duration> {
    log.iter().find_map(|(t, a)| match a {
        Action::Apply(l) if *t >= after && l.chain.contains(&victim) == member => Some(t.since(after)),
        _ => None,
    })
}

/// How long each write pause of the control plane's `log` lasted (from
/// the layout that paused writes to the one that resumed them).
fn write_pauses(log: &[(Time, Action)]) -> Vec<Duration> {
    let mut pauses = vec![];
    let mut paused_at = None;
    for (t, a) in log {
        if let Action::Apply(l) = a {
            match (l.writes_paused, paused_at) {
                (true, None) => paused_at = Some(*t),
                (false, Some(p)) => {
                    pauses.push(t.since(p));
                    paused_at = None;
                }
                _ => {}
            }
        }
    }
    pauses
}

/// Builds the chain testbed (replacing any testbed on the machine, as
/// `innet testbed up` does), runs the drill in real time (about
/// `fail_after + restart_after + run_after_restart`) and leaves the testbed
/// up, with the chain in its final order; `testbed::down` removes it.
pub fn run_drill(cfg: &DrillConfig, stop: &Stop) -> Result<DrillReport> {
    let protocol = cfg.protocol;
    cfg.check()?;
    let chain_up = ChainUp { fabric: cfg.fabric, multicast: cfg.multicast, ..ChainUp::new(protocol, cfg.nodes) };
    tb::up(&chain_up, None)?;
    let (control, layout) = ChainControl::new(cfg.control.clone(), cfg.nodes, clock::now());
    ensure!(layout == deploy::initial_layout(cfg.nodes), "the control plane starts from the testbed's layout");
    let chain = Arc::new(Mutex::new(XdpChain::start(&chain_up)?));
    let view: ChainView = Arc::new(Mutex::new((0, layout.chain.clone())));
    let stop = stop.child();
    let _guard = StopOnDrop(stop.clone());

    let control_thread = spawn_control(control, chain.clone(), view.clone(), stop.clone())?;

    let t0 = clock::now();
    let end = t0 + cfg.fail_after + cfg.restart_after + cfg.run_after_restart;
    let load = cfg.load();
    let bind_client = || in_netns(NS_CLIENT, || Ok(UdpSocket::bind((CLIENT_IP, 0))?)).map_err(std::io::Error::other);
    let clients = spawn_drill_clients(&load, "xdp-chain-client", &view, (t0, end), &stop, bind_client)
        .context("client sockets")?;

    sleep_until(t0 + cfg.fail_after);
    set_node_link(cfg.victim, cfg.nodes, false).context("fail the node")?;
    let failed = clock::now();
    sleep_until(failed + cfg.restart_after);
    let members_after_failure = view.lock().unwrap_or_else(|e| e.into_inner()).1.clone();
    let fresh = load_node(&chain_up, cfg.victim).context("restart the node")?;
    set_node_link(cfg.victim, cfg.nodes, true).context("restart the node")?;
    let restarted = clock::now();
    chain.lock().unwrap_or_else(|e| e.into_inner()).replace(cfg.victim, fresh);
    sleep_until(end);

    let mut loads = vec![];
    for c in clients {
        loads.push(c.shutdown()?);
    }
    // Let the last writes and ACKs land before reading the registers.
    std::thread::sleep(Duration::from_millis(100));
    stop.stop();
    let control = control_thread.join().map_err(|_| anyhow::anyhow!("the control plane panicked"))?;
    let members_at_end = view.lock().unwrap_or_else(|e| e.into_inner()).1.clone();
    let chain = chain.lock().unwrap_or_else(|e| e.into_inner());
    let values = (0..cfg.nodes).map(|i| chain.values(i, cfg.keys)).collect::<Result<Vec<_>>>()?;

    let interruption = loads.iter().map(|l| l.stats.max_gap).max().unwrap_or_default();
    let operations_after_failure = loads
        .iter()
        .map(|l| l.completions.as_ref().map_or(0, |c| c.iter().filter(|c| c.finished > failed).count()))
        .sum();
    let applied = |after, member| first_layout(&control.log, after, cfg.victim, member);
    let pauses = write_pauses(&control.log);
    let history: Vec<Record> = loads.iter().flat_map(|l| l.client.history.clone().unwrap_or_default()).collect();
    Ok(DrillReport {
        members_after_failure,
        members_at_end,
        values,
        interruption,
        operations_after_failure,
        removal: applied(failed, false),
        rejoin: applied(restarted, true),
        pauses,
        copies: chain.copies.clone(),
        errors: chain.errors.clone(),
        check: check(&history),
        history,
        loads,
        control,
    })
}

fn sleep_until(t: Time) {
    std::thread::sleep(t.since(clock::now()));
}
