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
use innet_chain::deploy::{self, ChainRole};
use innet_chain::netcraq::{OBJECTS_DEFAULT, VERSIONS_DEFAULT};
use innet_chain::node::ChainNode;
use innet_chain::ports::{PORT_NEXT, PORT_TAIL};
use innet_chain::workload::{LoadClient, LoadStats, Workload};
use innet_chain::Protocol;
use innet_core::rng::Rng;
use innet_core::Time;
use innet_sim::{LinkSpec, NetStats, NodeId, Sim, SimNode, TraceEvent, Wire};
use innet_wire::netchain::key_from_u32;
use serde::{Deserialize, Serialize};

use crate::faults::Faults;

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
    /// Link faults (no duplication: neither protocol's format detects a
    /// duplicate); NetCRAQ's chain links keep only the loss.
    #[serde(flatten)]
    pub faults: Faults,
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
        let jitter_us = self.jitter_us();
        let leg = 3 * self.client_latency_us + jitter_us;
        let hop = 3 * self.node_latency_us + jitter_us;
        Duration::from_micros(4 * (2 * leg + self.nodes as u64 * hop) + 500)
    }

    fn jitter_us(&self) -> u64 {
        self.faults.jitter().as_micros() as u64
    }

    pub fn control(&self) -> ControlConfig {
        ControlConfig {
            heartbeat_interval: Duration::from_millis(2),
            failure_timeout: Duration::from_millis(10),
            drain: Duration::from_micros(4 * self.nodes as u64 * (3 * self.node_latency_us + self.jitter_us()) + 1000),
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
    /// An outside sender that follows the chain's order (the checked runs').
    pub forger: Option<NodeId>,
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
        let mut d = deploy::deployment(protocol, nodes, 0, node_link.latency, fabric.latency);
        // The control plane is this harness (`control_step`), not a
        // simulator node; without clients it is the deployment's last node.
        let control = d.nodes.pop().map(|n| n.role);
        debug_assert_eq!(control, Some(ChainRole::Control), "the chain deployment's control plane comes last");
        let make = |_, n: &innet_core::deploy::Node<ChainRole>| match n.role {
            ChainRole::Node { index } => {
                let mut node = ChainNode::new(protocol, index, objects, versions);
                if let ChainNode::Chain(p) = &mut node {
                    for k in 0..keys {
                        p.install_key(key_from_u32(k)).expect("key table room");
                    }
                }
                SimNode::switch(node)
            }
            r => unreachable!("a chain without clients has no {}", r.name()),
        };
        let ids = sim.instantiate_wired(&d, make, |w| match w {
            Wire::Fabric(_) => fabric,
            Wire::Link(_) => node_link,
        });
        for a in 0..nodes {
            for b in a + 1..nodes {
                sim.set_peer(ids[a], ids[b], b as u16);
                sim.set_peer(ids[b], ids[a], a as u16);
            }
        }
        let (control, layout) = ChainControl::new(ControlConfig::default(), nodes, Time::ZERO);
        let mut c =
            ChainSim { protocol, sim, nodes: ids, clients: vec![], control, objects, versions, keys, forger: None };
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
                self.sim.set_group(node, group, innet_sim::member_ids(&members, &self.nodes));
            }
        }
        for c in self.clients.clone() {
            if let Some(h) = self.sim.host_mut::<LoadClient>(c) {
                h.client.set_chain(layout.chain.clone());
            }
            self.sim.wake(c);
        }
        if let Some(f) = self.forger.and_then(|f| self.sim.host_mut::<Forger>(f)) {
            f.chain = layout.chain.clone();
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

/// Client id the checker's outside senders write as (beyond any real
/// client's).
pub const FORGER_CLIENT: u32 = 1_000_000;

/// What an outside sender of the checked runs sent, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ForgerStats {
    /// Writes to the head, as any client may send (recorded as write
    /// attempts that may take effect at any time, or never).
    pub writes_at_head: u64,
    /// NetChain writes to the head whose stack stops short of the tail or
    /// leaves a member out (issue 21: they used to advance the head's
    /// sequence number); recorded as write attempts too.
    pub short_writes: u64,
    /// Writes with fresh values sent to a node that is not the head
    /// (NetChain: with a made-up sequence number, half of them 30000).
    pub forged_writes: u64,
    /// NetCRAQ ACKs of its own write sent before the tail's (an early ACK).
    pub forged_acks: u64,
    /// Copies of ACKs and replies it received, sent to a chain node.
    pub replays: u64,
}

/// An outside sender on the fabric: it writes at the head as a client may,
/// and forges writes to the other nodes, early ACKs, and replays of the
/// ACKs and replies it gets, to random chain nodes. Its writes carry fresh
/// values and are recorded as write attempts without a response, so the
/// checker accepts any of them taking effect once at any time after it was
/// sent (what the head's writes may do), and nothing else.
pub struct Forger {
    protocol: Protocol,
    rng: Rng,
    keys: u32,
    chain: Vec<usize>,
    next: Time,
    stop: Time,
    writes: u64,
    last_write: Option<(u32, innet_wire::netcraq::Value)>,
    captured: Vec<Vec<u8>>,
    pub history: Vec<Record>,
    pub stats: ForgerStats,
}

impl Forger {
    pub fn new(protocol: Protocol, rng: Rng, keys: u32, chain: Vec<usize>, stop: Time) -> Forger {
        Forger {
            protocol,
            rng,
            keys,
            chain,
            next: Time::ZERO,
            stop,
            writes: 0,
            last_write: None,
            captured: vec![],
            history: vec![],
            stats: ForgerStats::default(),
        }
    }

    fn fresh(&mut self, now: Time, key: u32) -> innet_wire::netcraq::Value {
        self.writes += 1;
        let mut v = [0u8; 16];
        v[..4].copy_from_slice(&(FORGER_CLIENT + 1).to_be_bytes());
        v[4..12].copy_from_slice(&self.writes.to_be_bytes());
        let value = innet_wire::netcraq::Value(v);
        let kind = innet_chain::client::OpKind::Write;
        self.history.push(Record { client: FORGER_CLIENT, key, kind, value, invoke: now, response: None });
        value
    }

    /// A write of `value` to chain position `pos` (NetChain: the stack from
    /// there to the tail, with sequence `seq`).
    fn write(&self, pos: usize, key: u32, value: innet_wire::netcraq::Value, seq: u16) -> Vec<u8> {
        use innet_wire::netcraq::CraqMsg;
        match self.protocol {
            Protocol::NetCraq => CraqMsg::write(key, value).encode(),
            Protocol::NetChain => Self::netchain_write(&self.chain[pos..], key, value, seq),
        }
    }

    fn netchain_write(stack: &[usize], key: u32, value: innet_wire::netcraq::Value, seq: u16) -> Vec<u8> {
        use innet_wire::netchain::{NcMsg, NcOp};
        let chain = stack.iter().map(|&i| innet_chain::client::node_addr(i as u32)).collect();
        NcMsg { chain, op: NcOp::WriteReq, seq, key: key_from_u32(key), value, vgroup: 0 }.encode()
    }

    /// A NetChain write for the head whose stack stops short of the tail or
    /// leaves out a member after the head.
    fn short_write(&mut self, key: u32, value: innet_wire::netcraq::Value) -> Vec<u8> {
        let n = self.chain.len();
        let mut stack = self.chain.clone();
        if self.rng.chance(0.5) {
            stack.truncate(1 + self.rng.below(n as u64 - 1) as usize);
        } else {
            stack.remove(1 + self.rng.below(n as u64 - 1) as usize);
        }
        Self::netchain_write(&stack, key, value, 0)
    }
}

impl innet_core::Host for Forger {
    fn on_packet(&mut self, _now: Time, packet: &[u8], _out: &mut innet_core::Outbox) {
        if self.captured.len() < 32 {
            self.captured.push(packet.to_vec());
        } else {
            let i = self.rng.below(32) as usize;
            self.captured[i] = packet.to_vec();
        }
    }

    fn on_tick(&mut self, now: Time, out: &mut innet_core::Outbox) {
        use innet_core::Dest;
        use innet_wire::netcraq::{CraqMsg, KvOp};
        self.next = now + Duration::from_micros(200 + self.rng.below(1800));
        if self.chain.is_empty() {
            return;
        }
        let key = self.rng.below(self.keys as u64) as u32;
        let pick = self.rng.below(4);
        let n = self.chain.len();
        if (pick == 0 || n == 1) && self.protocol == Protocol::NetChain && n > 1 && self.rng.chance(0.5) {
            let value = self.fresh(now, key);
            let p = self.short_write(key, value);
            out.send(Dest::Port(self.chain[0] as u16), p);
            self.stats.short_writes += 1;
        } else if pick == 0 || n == 1 {
            let value = self.fresh(now, key);
            out.send(Dest::Port(self.chain[0] as u16), self.write(0, key, value, 0));
            self.last_write = Some((key, value));
            self.stats.writes_at_head += 1;
        } else if pick == 1 {
            let pos = 1 + self.rng.below(n as u64 - 1) as usize;
            let value = self.fresh(now, key);
            let seq = if self.rng.chance(0.5) { 30_000 } else { self.rng.below(65_536) as u16 };
            out.send(Dest::Port(self.chain[pos] as u16), self.write(pos, key, value, seq));
            self.stats.forged_writes += 1;
        } else if let (2, Protocol::NetCraq, Some((key, value))) = (pick, self.protocol, self.last_write) {
            let to = self.chain[self.rng.below(n as u64 - 1) as usize];
            out.send(Dest::Port(to as u16), CraqMsg { op: KvOp::Ack, key, value }.encode());
            self.stats.forged_acks += 1;
        } else if !self.captured.is_empty() {
            let p = self.captured[self.rng.below(self.captured.len() as u64) as usize].clone();
            out.send(Dest::Port(self.chain[self.rng.below(n as u64) as usize] as u16), p);
            self.stats.replays += 1;
        }
    }

    fn next_tick(&self) -> Option<Time> {
        (self.next < self.stop).then_some(self.next)
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
    pub forger: ForgerStats,
    /// Chain nodes' rejections of the forger's packets: writes not from the
    /// predecessor, ACKs not from the tail, NetChain writes whose stack is
    /// not the chain (their counters, summed).
    pub rejected_writes: u64,
    pub rejected_acks: u64,
    pub rejected_off_chain: u64,
}

/// Builds and runs `cfg` with histories on, and checks them.
pub fn run_checked(cfg: &ChainCheckConfig) -> Result<ChainCheckedRun, String> {
    checked(cfg, false).map(|(run, _)| run)
}

/// [`run_checked`] with every delivery recorded ([`Sim::record_trace`]):
/// where two runs of one seed part ([`crate::nondeterminism`]).
pub fn run_traced(cfg: &ChainCheckConfig) -> Result<Vec<TraceEvent>, String> {
    checked(cfg, true).map(|(_, trace)| trace)
}

fn checked(cfg: &ChainCheckConfig, trace: bool) -> Result<(ChainCheckedRun, Vec<TraceEvent>), String> {
    let protocol = cfg.protocol()?;
    let mut rng = Rng::new(cfg.seed);
    // NetChain orders writes by sequence number (its section 4.2), so its
    // chain links may reorder too; NetCRAQ's format has no sequence and
    // relies on FIFO links between chain nodes.
    let chain_faults = match protocol {
        Protocol::NetChain => cfg.faults,
        Protocol::NetCraq => Faults { loss: cfg.faults.loss, ..Faults::NONE },
    };
    let node_link = chain_faults.link(Duration::from_micros(cfg.node_latency_us));
    let fabric = cfg.faults.link(Duration::from_micros(cfg.client_latency_us));
    let objects = (cfg.keys as usize).max(1);
    let mut c =
        ChainSim::with_sizes(protocol, cfg.nodes, rng.next_u64(), node_link, fabric, objects, cfg.versions, cfg.keys);
    c.control = ChainControl::new(cfg.control(), cfg.nodes, Time::ZERO).0;
    if trace {
        c.sim.record_trace();
    }
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
    let chain = c.control.members().to_vec();
    let forger = Forger::new(protocol, rng.fork(), cfg.keys, chain, stop);
    let forger = c.sim.add_host("forger", forger);
    for (i, n) in c.nodes.clone().into_iter().enumerate() {
        c.sim.set_port(forger, i as u16, Some(n));
    }
    c.forger = Some(forger);
    let mut faults = vec![];
    for &(node, at, back) in &cfg.crashes {
        faults.push((Time::from_secs_f64(at), node, true));
        faults.push((Time::from_secs_f64(back), node, false));
    }
    faults.sort_by_key(|f| f.0);
    // Let retries finish after the last operation starts.
    let end = stop + cfg.client_timeout() * 20 + Duration::from_millis(100);
    c.run_until(end, &mut faults);
    let mut history = c.history();
    let f = c.sim.host::<Forger>(forger).expect("forger");
    history.extend_from_slice(&f.history);
    let result = check(&history);
    let s = c.load_stats();
    let counter = |name: &str| -> u64 {
        let nodes = 0..c.nodes.len();
        nodes.filter_map(|i| c.sim.program::<ChainNode>(c.nodes[i])).map(|n| counter_of(n, name)).sum()
    };
    let run = ChainCheckedRun {
        config: cfg.clone(),
        result,
        trace_hash: c.sim.trace_hash(),
        net: c.sim.stats.clone(),
        ops: s.reads + s.writes,
        removals: c.control.stats.removals,
        resyncs: c.control.stats.resyncs,
        forger: f.stats,
        rejected_writes: counter("dropped_write_not_from_prev"),
        rejected_acks: counter("dropped_ack_not_from_tail"),
        rejected_off_chain: counter("dropped_write_off_chain"),
    };
    Ok((run, c.sim.trace_events().to_vec()))
}

fn counter_of(n: &ChainNode, name: &str) -> u64 {
    use innet_core::Counters;
    n.counters().into_iter().find(|(k, _)| *k == name).map_or(0, |(_, v)| v)
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
        // One draw each, in this order (a seed's run stays what it was).
        faults: Faults {
            jitter_ms: r.below(100) as f64 / 1e3,
            loss: r.f64() * 0.03,
            duplicate: 0.0,
            reorder: r.f64() * 0.1,
        },
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
    /// What the outside senders sent, and how many writes and ACKs the chain
    /// nodes rejected.
    pub forger: ForgerStats,
    pub rejected_writes: u64,
    pub rejected_acks: u64,
    pub rejected_off_chain: u64,
    /// `(seed, protocol, errors (empty: nondeterminism), replay command)`.
    pub violations: Vec<(u64, Protocol, Vec<String>, String)>,
    pub wall_seconds: f64,
}

/// Runs the linearizability checker over `seeds` for every protocol
/// (random configurations, on every core); `each` sees every run in order.
/// The first seed of every protocol runs twice and its trace hashes must
/// match.
pub fn check_seeds(
    seeds: crate::parse::Seeds,
    protocols: &[Protocol],
    duration_s: f64,
    mut each: impl FnMut(&ChainCheckedRun),
) -> anyhow::Result<CheckReport> {
    anyhow::ensure!(
        duration_s > 0.0 && duration_s.is_finite(),
        "--duration-s {duration_s} must be a number of seconds above 0"
    );
    let started = std::time::Instant::now();
    let jobs = seeds.iter().flat_map(|s| protocols.iter().map(move |&p| (s, p)));
    let progress = crate::progress::Progress::new(seeds.count.saturating_mul(protocols.len() as u64), "check chain");
    let mut r = CheckReport { seeds: seeds.count, protocols: protocols.len(), duration_s, ..CheckReport::default() };
    crate::run_parallel_each(
        jobs,
        &progress,
        |(seed, p)| format!("seed {seed} {p}"),
        |&(seed, p)| run_checked(&random_check_config(seed, p, duration_s)),
        |&(seed, p), run| -> anyhow::Result<()> {
            let run = run.map_err(anyhow::Error::msg)?;
            each(&run);
            r.runs += 1;
            r.ops += run.ops;
            r.removals += run.removals;
            r.resyncs += run.resyncs;
            r.forger.writes_at_head += run.forger.writes_at_head;
            r.forger.short_writes += run.forger.short_writes;
            r.forger.forged_writes += run.forger.forged_writes;
            r.forger.forged_acks += run.forger.forged_acks;
            r.forger.replays += run.forger.replays;
            r.rejected_writes += run.rejected_writes;
            r.rejected_acks += run.rejected_acks;
            r.rejected_off_chain += run.rejected_off_chain;
            let replay = format!("innet check chain --seed {seed} --protocols {p} --duration-s {duration_s}");
            match &run.result {
                Ok(s) => r.reads += s.reads,
                Err(errors) => r.violations.push((seed, p, errors.clone(), replay.clone())),
            }
            if seed == seeds.first {
                let again = run_checked(&run.config).map_err(anyhow::Error::msg)?.trace_hash;
                let traced = || run_traced(&run.config);
                if let Some(d) = crate::nondeterminism(run.trace_hash, again, traced).map_err(anyhow::Error::msg)? {
                    r.violations.push((seed, p, vec![d], replay));
                }
            }
            Ok(())
        },
    )?;
    progress.finish();
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
                if let Some(d) = crate::nondeterminism(a.trace_hash, b.trace_hash, || run_traced(&cfg)).unwrap() {
                    panic!("{protocol} seed {seed}: {d}");
                }
                assert!(a.ops > 100, "{protocol} seed {seed}: only {} operations", a.ops);
                if let Err(e) = &a.result {
                    panic!("{protocol} seed {seed}: {e:?}");
                }
            }
        }
    }
}
