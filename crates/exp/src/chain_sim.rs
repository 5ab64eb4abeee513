//! The chain key-value store on the simulator: topology, control plane
//! driving, faults, and the randomized linearizability runs of
//! `innet check chain`.
//!
//! Topology: `nodes` chain switches, each pair joined by a direct link
//! (point-to-point and FIFO: fixed latency, no jitter or reordering, loss
//! allowed; CRAQ and chain replication assume FIFO channels between chain
//! nodes), and clients that reach the switches through the fabric (latency,
//! jitter, loss and reordering). The control plane ([`ChainControl`]) runs
//! between simulation steps of one heartbeat interval: the harness reports a
//! heartbeat for every node that is up (the management channel) and applies
//! the control plane's layouts and copies as table and register writes.

use std::time::Duration;

use innet_chain::check::{check, CheckSummary};
use innet_chain::client::{ChainClient, ClientConfig, Record};
use innet_chain::control::{Action, ChainControl, ControlConfig, Layout};
use innet_chain::deploy;
use innet_chain::netcraq::{OBJECTS_DEFAULT, VERSIONS_DEFAULT};
use innet_chain::node::ChainNode;
use innet_chain::ports::{PORT_NEXT, PORT_TAIL};
use innet_chain::workload::{LoadClient, LoadStats, Workload};
use innet_chain::Protocol;
use innet_core::rng::Rng;
use innet_core::{Member, Time};
use innet_sim::{LinkSpec, NetStats, NodeId, Sim};
use innet_wire::netchain::key_from_u32;
use serde::{Deserialize, Serialize};

/// One randomized (or hand-written) faulty run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ChainCheckConfig {
    pub protocol: String,
    pub seed: u64,
    pub nodes: usize,
    pub clients: u32,
    pub keys: u32,
    pub write_ratio: f64,
    pub duration_s: f64,
    pub node_latency_us: u64,
    pub client_latency_us: u64,
    pub jitter_us: u64,
    pub loss: f64,
    pub reorder: f64,
    /// NetCRAQ version cells per object.
    pub versions: usize,
    /// `(node, crash at s, restart at s)`.
    pub crashes: Vec<(usize, f64, f64)>,
}

impl ChainCheckConfig {
    pub fn protocol(&self) -> Result<Protocol, String> {
        self.protocol.parse()
    }

    /// A client timeout above the largest round trip the links allow
    /// (reordering holds a packet up to twice the latency more).
    pub fn client_timeout(&self) -> Duration {
        let leg = 3 * self.client_latency_us + self.jitter_us;
        let hop = 3 * self.node_latency_us + self.jitter_us;
        Duration::from_micros(4 * (2 * leg + self.nodes as u64 * hop) + 500)
    }

    pub fn control(&self) -> ControlConfig {
        ControlConfig {
            heartbeat_interval: Duration::from_millis(2),
            failure_timeout: Duration::from_millis(10),
            drain: Duration::from_micros(4 * self.nodes as u64 * (3 * self.node_latency_us + self.jitter_us) + 1000),
            full_heartbeats: 3,
        }
    }
}

/// A built chain in the simulator.
pub struct ChainSim {
    pub protocol: Protocol,
    pub sim: Sim,
    pub nodes: Vec<NodeId>,
    pub clients: Vec<NodeId>,
    pub control: ChainControl,
    pub objects: usize,
    pub versions: usize,
    pub keys: u32,
}

impl ChainSim {
    /// `nodes` chain switches and no clients yet; `node_link` joins every
    /// pair of switches, `fabric` everything else.
    pub fn new(protocol: Protocol, nodes: usize, seed: u64, node_link: LinkSpec, fabric: LinkSpec) -> ChainSim {
        Self::with_sizes(protocol, nodes, seed, node_link, fabric, OBJECTS_DEFAULT, VERSIONS_DEFAULT, 64)
    }

    #[allow(clippy::too_many_arguments)]
    pub fn with_sizes(
        protocol: Protocol,
        nodes: usize,
        seed: u64,
        node_link: LinkSpec,
        fabric: LinkSpec,
        objects: usize,
        versions: usize,
        keys: u32,
    ) -> ChainSim {
        assert!(nodes >= 1 && keys as usize <= objects);
        let mut sim = Sim::new(seed);
        sim.set_fabric(fabric);
        let mut ids = vec![];
        for i in 0..nodes {
            let mut node = ChainNode::new(protocol, i, objects, versions);
            if let ChainNode::Chain(p) = &mut node {
                for k in 0..keys {
                    p.install_key(key_from_u32(k)).expect("key table room");
                }
            }
            ids.push(sim.add_switch(&format!("node{i}"), node));
        }
        for a in 0..nodes {
            for b in a + 1..nodes {
                sim.link(ids[a], ids[b], node_link);
            }
        }
        let (control, layout) = ChainControl::new(ControlConfig::default(), nodes, Time::ZERO);
        let mut c = ChainSim { protocol, sim, nodes: ids, clients: vec![], control, objects, versions, keys };
        c.apply(&layout);
        c
    }

    pub fn add_client(&mut self, name: &str, host: LoadClient) -> NodeId {
        let id = self.sim.add_host(name, host);
        for (i, n) in self.nodes.clone().into_iter().enumerate() {
            self.sim.set_port(id, i as u16, Some(n));
        }
        let chain = self.control.members().to_vec();
        self.sim.host_mut::<LoadClient>(id).expect("load client").client.set_chain(chain);
        self.clients.push(id);
        id
    }

    pub fn node(&self, i: usize) -> &ChainNode {
        self.sim.program::<ChainNode>(self.nodes[i]).expect("chain node")
    }

    /// Writes every table to match `layout`.
    pub fn apply(&mut self, layout: &Layout) {
        let count = self.nodes.len();
        for (i, &node) in self.nodes.clone().iter().enumerate() {
            let t = layout.tables(i);
            self.sim.program_mut::<ChainNode>(node).expect("chain node").configure(&t, count);
            let (ports, groups) = deploy::node_tables(self.protocol, layout, count, i);
            for port in [PORT_NEXT, PORT_TAIL] {
                self.sim.set_port(node, port, None);
            }
            for (port, to) in ports {
                self.sim.set_port(node, port, Some(self.nodes[to]));
            }
            for (group, members) in groups {
                let members = members
                    .into_iter()
                    .map(|m| match m {
                        Member::Node(x) => Member::Node(self.nodes[x]),
                        Member::Origin => Member::Origin,
                    })
                    .collect();
                self.sim.set_group(node, group, members);
            }
        }
        for c in self.clients.clone() {
            if let Some(h) = self.sim.host_mut::<LoadClient>(c) {
                h.client.set_chain(layout.chain.clone());
            }
            self.sim.wake(c);
        }
    }

    fn copy(&mut self, from: usize, to: &[usize]) {
        let snap = self.node(from).snapshot();
        for t in to {
            self.sim.program_mut::<ChainNode>(self.nodes[*t]).expect("chain node").load(&snap);
        }
    }

    /// One control-plane step at the current time: heartbeats from every
    /// node that is up, then the control plane's tick, then its actions.
    pub fn control_step(&mut self) {
        let now = self.sim.now();
        let mut actions = vec![];
        for i in 0..self.nodes.len() {
            if self.sim.is_up(self.nodes[i]) {
                let r = self.node(i).report();
                self.control.on_heartbeat(now, i, r, &mut actions);
            }
        }
        self.control.on_tick(now, &mut actions);
        for a in actions {
            match a {
                Action::Apply(l) => self.apply(&l),
                Action::Copy { from, to } => self.copy(from, &to),
            }
        }
    }

    pub fn crash(&mut self, i: usize) {
        self.sim.crash(self.nodes[i]);
    }

    /// Restarts node `i` as a fresh, unconfigured switch.
    pub fn restart(&mut self, i: usize) {
        let fresh = ChainNode::new(self.protocol, i, self.objects, self.versions);
        // The simulator keeps a node's forwarding tables across a restart,
        // as a switch's control plane would rewrite them.
        self.sim.restart_switch(self.nodes[i], fresh);
    }

    /// Runs to `end` in control-plane steps, applying `faults` (sorted by
    /// time: `(time, node, crash?)`) as their time comes.
    pub fn run_until(&mut self, end: Time, faults: &mut Vec<(Time, usize, bool)>) {
        let step = self.control.config.heartbeat_interval;
        while self.sim.now() < end {
            let t = (self.sim.now() + step).min(end);
            self.sim.run_until(t);
            while faults.first().is_some_and(|f| f.0 <= t) {
                let (_, node, crash) = faults.remove(0);
                if crash && self.sim.is_up(self.nodes[node]) {
                    self.crash(node);
                } else if !crash && !self.sim.is_up(self.nodes[node]) {
                    self.restart(node);
                }
            }
            self.control_step();
        }
    }

    pub fn load_stats(&self) -> LoadStats {
        let mut s = LoadStats::default();
        for c in &self.clients {
            let h = &self.sim.host::<LoadClient>(*c).expect("load client").stats;
            s.reads += h.reads;
            s.writes += h.writes;
            s.latency_sum_s += h.latency_sum_s;
            s.max_gap = s.max_gap.max(h.max_gap);
        }
        s
    }

    pub fn history(&self) -> Vec<Record> {
        let mut h = vec![];
        for c in &self.clients {
            let lc = self.sim.host::<LoadClient>(*c).expect("load client");
            h.extend_from_slice(lc.client.history.as_deref().unwrap_or(&[]));
        }
        h
    }
}

/// The outcome of one checked run.
pub struct ChainCheckedRun {
    pub config: ChainCheckConfig,
    pub result: Result<CheckSummary, Vec<String>>,
    pub trace_hash: u64,
    pub net: NetStats,
    pub ops: u64,
    pub removals: u64,
    pub resyncs: u64,
}

/// Builds and runs `cfg` with histories on, and checks them.
pub fn run_checked(cfg: &ChainCheckConfig) -> Result<ChainCheckedRun, String> {
    let protocol = cfg.protocol()?;
    let mut rng = Rng::new(cfg.seed);
    // NetChain orders writes by sequence number (its section 4.2), so its
    // chain links may reorder too; NetCRAQ's format has no sequence and
    // relies on FIFO links between chain nodes.
    let node_link = LinkSpec {
        latency: Duration::from_micros(cfg.node_latency_us),
        loss_probability: cfg.loss,
        jitter: Duration::from_micros(if protocol == Protocol::NetChain { cfg.jitter_us } else { 0 }),
        reorder_probability: if protocol == Protocol::NetChain { cfg.reorder } else { 0.0 },
        duplicate_probability: 0.0,
    };
    let fabric = LinkSpec {
        latency: Duration::from_micros(cfg.client_latency_us),
        jitter: Duration::from_micros(cfg.jitter_us),
        loss_probability: cfg.loss,
        duplicate_probability: 0.0,
        reorder_probability: cfg.reorder,
    };
    let objects = (cfg.keys as usize).max(1);
    let mut c =
        ChainSim::with_sizes(protocol, cfg.nodes, rng.next_u64(), node_link, fabric, objects, cfg.versions, cfg.keys);
    c.control = ChainControl::new(cfg.control(), cfg.nodes, Time::ZERO).0;
    let stop = Time::from_secs_f64(cfg.duration_s);
    for i in 0..cfg.clients {
        let mut cc = ClientConfig::new(protocol, i, cfg.nodes);
        cc.near = rng.below(cfg.nodes as u64) as usize;
        cc.timeout = cfg.client_timeout();
        cc.stamp_attempts = true;
        let w =
            Workload { write_ratio: cfg.write_ratio, keys: cfg.keys, think: Duration::ZERO, start: Time::ZERO, stop };
        let load = LoadClient::new(ChainClient::new(cc).with_history(), w, rng.fork());
        c.add_client(&format!("client{i}"), load);
    }
    let mut faults = vec![];
    for &(node, at, back) in &cfg.crashes {
        faults.push((Time::from_secs_f64(at), node, true));
        faults.push((Time::from_secs_f64(back), node, false));
    }
    faults.sort_by_key(|f| f.0);
    // Let retries finish after the last operation starts.
    let end = stop + cfg.client_timeout() * 20 + Duration::from_millis(100);
    c.run_until(end, &mut faults);
    let history = c.history();
    let result = check(&history);
    let s = c.load_stats();
    Ok(ChainCheckedRun {
        config: cfg.clone(),
        result,
        trace_hash: c.sim.trace_hash(),
        net: c.sim.stats.clone(),
        ops: s.reads + s.writes,
        removals: c.control.stats.removals,
        resyncs: c.control.stats.resyncs,
    })
}

/// The random configuration `innet check chain` uses for `seed`: 2-6 nodes,
/// 1-6 clients, 1-8 keys (few keys: many concurrent writes per key), loss up
/// to 3%, reordering up to 10% and jitter on the client paths, small
/// version budgets (refusals happen), and up to two node crashes with
/// restarts.
pub fn random_check_config(seed: u64, protocol: Protocol, duration_s: f64) -> ChainCheckConfig {
    let mut r = Rng::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xC4A1);
    let nodes = 2 + r.below(5) as usize;
    let mut crashes = vec![];
    for _ in 0..r.below(3) {
        let at = duration_s * (0.1 + 0.5 * r.f64());
        let back = at + duration_s * (0.05 + 0.25 * r.f64());
        crashes.push((r.below(nodes as u64) as usize, at, back));
    }
    ChainCheckConfig {
        protocol: protocol.name().into(),
        seed,
        nodes,
        clients: 1 + r.below(6) as u32,
        keys: 1 + r.below(8) as u32,
        write_ratio: [0.1, 0.3, 0.5, 0.9][r.below(4) as usize],
        duration_s,
        node_latency_us: 20 + r.below(80),
        client_latency_us: 50 + r.below(200),
        jitter_us: r.below(100),
        loss: r.f64() * 0.03,
        reorder: r.f64() * 0.1,
        versions: 2 + r.below(7) as usize,
        crashes,
    }
}

/// What a randomized check over many seeds found.
#[derive(Clone, Debug, Default)]
pub struct CheckReport {
    pub seeds: u64,
    pub protocols: usize,
    pub duration_s: f64,
    pub runs: u64,
    pub ops: u64,
    pub reads: usize,
    pub removals: u64,
    pub resyncs: u64,
    /// `(seed, protocol, errors (empty: nondeterminism), replay command)`.
    pub violations: Vec<(u64, Protocol, Vec<String>, String)>,
    pub wall_seconds: f64,
}

/// Runs the linearizability checker over `seeds` for every protocol
/// (random configurations, on every core); `each` sees every run in order.
/// The first seed of every protocol runs twice and its trace hashes must
/// match.
pub fn check_seeds(
    seeds: std::ops::Range<u64>,
    protocols: &[Protocol],
    duration_s: f64,
    mut each: impl FnMut(&ChainCheckedRun),
) -> anyhow::Result<CheckReport> {
    anyhow::ensure!(
        duration_s > 0.0 && duration_s.is_finite(),
        "--duration-s {duration_s} must be a number of seconds above 0"
    );
    let started = std::time::Instant::now();
    let jobs: Vec<(u64, Protocol)> = seeds.clone().flat_map(|s| protocols.iter().map(move |&p| (s, p))).collect();
    let runs = crate::run_parallel(&jobs, |&(seed, p)| run_checked(&random_check_config(seed, p, duration_s)));
    let mut r = CheckReport {
        seeds: seeds.end - seeds.start,
        protocols: protocols.len(),
        duration_s,
        ..CheckReport::default()
    };
    for (&(seed, p), run) in jobs.iter().zip(runs) {
        let run = run.map_err(anyhow::Error::msg)?;
        each(&run);
        r.runs += 1;
        r.ops += run.ops;
        r.removals += run.removals;
        r.resyncs += run.resyncs;
        let replay = format!("innet check chain --seed {seed} --protocols {p} --duration-s {duration_s}");
        match &run.result {
            Ok(s) => r.reads += s.reads,
            Err(errors) => r.violations.push((seed, p, errors.clone(), replay.clone())),
        }
        if seed == seeds.start && run_checked(&run.config).map_err(anyhow::Error::msg)?.trace_hash != run.trace_hash {
            r.violations.push((seed, p, vec![], replay));
        }
    }
    r.wall_seconds = started.elapsed().as_secs_f64();
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_faulty_runs_are_deterministic_and_linearizable() {
        for protocol in Protocol::ALL {
            for seed in 1..=3 {
                let cfg = random_check_config(seed, protocol, 0.3);
                let a = run_checked(&cfg).unwrap();
                let b = run_checked(&cfg).unwrap();
                assert_eq!(a.trace_hash, b.trace_hash, "{protocol} seed {seed}: same seed, same trace");
                assert!(a.ops > 100, "{protocol} seed {seed}: only {} operations", a.ops);
                if let Err(e) = &a.result {
                    panic!("{protocol} seed {seed}: {e:?}");
                }
            }
        }
    }
}
