//! The transaction experiment on the simulator, and the randomized
//! correctness runs of `innet check txn`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use innet_core::deploy::Node;
use innet_core::rng::Rng;
use innet_core::{Counters, Time};
use innet_sim::{LinkSpec, NetStats, NodeId, Sim, SimNode, TraceEvent};
use innet_txn::check::{check, CheckSummary};
use innet_txn::client::{ClientConfig, TxnClient};
use innet_txn::deploy::{self, TxnDeployment, TxnRole};
use innet_txn::switch::CLIENT_SLOTS_DEFAULT;
use innet_txn::workload::{LoadClient, LoadStats};
use innet_txn::{Mode, TxnStore, TxnSwitch};

use crate::txn::{summarize, TxnPointConfig, TxnPointResult};

/// A built deployment: the store, every switch and every client.
pub struct TxnTopology {
    pub sim: Sim,
    pub deployment: TxnDeployment,
    /// The simulator's id of each deployment node.
    pub nodes: Vec<NodeId>,
    pub store: NodeId,
    /// Every switch, in deployment order (the first is nearest the store).
    pub switches: Vec<NodeId>,
    pub clients: Vec<NodeId>,
}

impl TxnTopology {
    /// The simulator's id of deployment node `i`.
    pub fn sim_id(&self, i: usize) -> NodeId {
        self.nodes[i]
    }
    pub fn stats(&self) -> LoadStats {
        let mut s = LoadStats::default();
        for &c in &self.clients {
            s.merge(&self.sim.host::<LoadClient>(c).expect("load client").stats);
        }
        s
    }
    /// The switch nearest the store.
    pub fn switch(&self) -> &TxnSwitch {
        self.switch_at(0)
    }
    pub fn switch_at(&self, i: usize) -> &TxnSwitch {
        self.sim.program::<TxnSwitch>(self.switches[i]).expect("txn switch")
    }
    pub fn store(&self) -> &TxnStore {
        self.sim.host::<TxnStore>(self.store).expect("txn store")
    }
    /// Per switch (by node name) its counters, and per client group (the
    /// name before `.`) `committed` and `aborts_by_switch`; empty for a
    /// single switch in front of one client group.
    pub fn per_node(&self) -> BTreeMap<String, BTreeMap<String, u64>> {
        let mut out: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
        for (i, n) in self.deployment.nodes.iter().enumerate() {
            let id = self.nodes[i];
            match n.role {
                TxnRole::Switch(_) => {
                    let sw = self.sim.program::<TxnSwitch>(id).expect("txn switch");
                    out.insert(
                        n.name.clone(),
                        sw.counters.counters().iter().map(|(k, v)| (k.to_string(), *v)).collect(),
                    );
                }
                TxnRole::Client => {
                    let group = n.name.split('.').next().unwrap_or(&n.name).to_string();
                    let st = &self.sim.host::<LoadClient>(id).expect("load client").stats;
                    let e = out.entry(group).or_default();
                    *e.entry("committed".into()).or_default() += st.committed;
                    *e.entry("aborts_by_switch".into()).or_default() += st.aborts_by_switch;
                }
                TxnRole::Store => {}
            }
        }
        if self.switches.len() < 2 {
            out.clear();
        }
        out
    }
    /// Every switch's counters, summed by name.
    pub fn switch_counters(&self) -> Vec<(String, u64)> {
        let mut sum: Vec<(String, u64)> = vec![];
        for i in 0..self.switches.len() {
            for (k, v) in self.switch_at(i).counters.counters() {
                match sum.iter_mut().find(|(n, _)| n == k) {
                    Some((_, total)) => *total += v,
                    None => sum.push((k.to_string(), v)),
                }
            }
        }
        sum
    }
}

pub(crate) fn link(cfg: &TxnPointConfig, latency: Duration) -> LinkSpec {
    cfg.faults.link(latency)
}

/// Builds `deployment` in a simulator seeded from `cfg.seed`, every client
/// running `cfg`'s workload until `cfg.duration_s`; with `record`, the store
/// logs its decisions and clients their attempts (for the checker).
pub fn build_deployment(cfg: &TxnPointConfig, deployment: TxnDeployment, record: bool) -> Result<TxnTopology, String> {
    cfg.validate()?;
    deploy::validate(&deployment).map_err(|e| e.0)?;
    if cfg.think_ms == 0.0 {
        for c in deployment.with_role(TxnRole::is_client) {
            let mut at = c;
            let mut distance = std::time::Duration::ZERO;
            for up in deploy::path_to_store(&deployment, c) {
                distance += deployment.delay(at, up).unwrap_or_default();
                at = up;
            }
            if distance.is_zero() {
                return Err(format!(
                    "client '{}' is 0 ms from the store: in the simulator a closed-loop client needs a distance \
                     (--rtt-ms > 0, or link delays) or --think-ms > 0, else it runs without end at one instant",
                    deployment.nodes[c].name
                ));
            }
        }
    }
    let mut rng = Rng::new(cfg.seed);
    let mut sim = Sim::new(rng.next_u64());
    let stop = Time::from_secs_f64(cfg.duration_s);
    let ids = deploy::client_ids(&deployment);
    let make = |i: usize, n: &Node<TxnRole>| match &n.role {
        TxnRole::Store => {
            let store = TxnStore::in_memory();
            SimNode::host(if record { store.with_log() } else { store })
        }
        TxnRole::Switch(s) => SimNode::switch(TxnSwitch::new(s.mode, s.cache_slots, CLIENT_SLOTS_DEFAULT)),
        TxnRole::Client => {
            let mut ccfg = ClientConfig::new(ids[i]);
            ccfg.timeout = cfg.timeout();
            ccfg.retry_limit = cfg.retry_limit;
            let client = TxnClient::new(ccfg);
            let client = if record { client.with_history() } else { client };
            SimNode::host(LoadClient::new(client, cfg.workload(), rng.fork(), Time::ZERO, stop))
        }
    };
    let nodes = sim.instantiate(&deployment, make, |d| link(cfg, d));
    let of = |f: fn(&TxnRole) -> bool| deployment.with_role(f).into_iter().map(|i| nodes[i]).collect::<Vec<_>>();
    let store = of(|r| *r == TxnRole::Store)[0];
    if let Some(model) = crate::txn::store_service(cfg.store_us_per_packet) {
        sim.set_service(store, model);
    }
    admit_store_peers(&mut sim, &deployment, &nodes);
    let switches = of(|r| matches!(r, TxnRole::Switch(_)));
    let clients = of(TxnRole::is_client);
    Ok(TxnTopology { sim, deployment, nodes, store, switches, clients })
}

/// The store takes packets only from its downstream peers, the nodes whose
/// upstream it is (issue 21: a request a switch aborted, sent straight to
/// the store, was committed): anything else is refused before the store
/// sees it (`not_a_downstream_peer` in its `NodeStats::rejected`).
pub fn admit_store_peers(sim: &mut Sim, deployment: &TxnDeployment, nodes: &[NodeId]) {
    for s in deployment.with_role(|r| *r == TxnRole::Store) {
        let peers: Vec<NodeId> = deployment.downstream_of(s).into_iter().map(|j| nodes[j]).collect();
        sim.set_admit(
            nodes[s],
            Box::new(move |from, _| if peers.contains(&from) { Ok(()) } else { Err("not_a_downstream_peer") }),
        );
    }
}

/// Builds `cfg`'s deployment (see [`TxnPointConfig::deployment`]).
pub fn build(cfg: &TxnPointConfig, record: bool) -> Result<TxnTopology, String> {
    build_deployment(cfg, cfg.deployment()?, record)
}

/// Runs one point; the result records simulated seconds per wall second.
pub fn run_point_sim(cfg: &TxnPointConfig) -> anyhow::Result<TxnPointResult> {
    Ok(run_point_sim_until(cfg, None)?.0)
}

/// Runs one point, and with `stop_after` stops as soon as that many
/// transactions committed (checked every simulated 100 ms; the result then
/// covers the simulated time run); returns the result and the clients'
/// merged totals (every committed transaction's latency and finish time).
pub fn run_point_sim_until(
    cfg: &TxnPointConfig,
    stop_after: Option<u64>,
) -> anyhow::Result<(TxnPointResult, LoadStats)> {
    let mut t = build(cfg, false).map_err(anyhow::Error::msg)?;
    let wall = Instant::now();
    let end = Time::from_secs_f64(cfg.duration_s);
    let mut ran = end;
    match stop_after {
        None => t.sim.run_until(end),
        Some(n) => {
            let mut now = Time::ZERO;
            while now < end {
                now = (now + Duration::from_millis(100)).min(end);
                t.sim.run_until(now);
                let committed: u64 =
                    t.clients.iter().map(|&c| t.sim.host::<LoadClient>(c).expect("load client").stats.committed).sum();
                if committed >= n {
                    break;
                }
            }
            ran = now;
        }
    }
    let run_s = ran.as_nanos() as f64 / 1e9;
    let wall_s = wall.elapsed().as_secs_f64();
    let stats = t.stats();
    let mut r = summarize(cfg, crate::Runtime::Sim, &stats, run_s, wall_s, t.switch_counters());
    r.speedup = Some(run_s / wall_s.max(1e-9));
    r.per_node = t.per_node();
    let st = t.sim.node_stats(t.store);
    r.store_cpu_pct = Some(crate::txn::cpu_pct(st.busy, run_s));
    r.store_packets = Some(st.processed);
    Ok((r, stats))
}

/// The outcome of one checked run.
pub struct CheckedRun {
    pub config: TxnPointConfig,
    pub result: Result<CheckSummary, Vec<String>>,
    pub trace_hash: u64,
    pub net: NetStats,
    pub committed: u64,
}

/// An outside sender on a switch's client side that forges store replies:
/// OK or ABORT with VALUE/UPDATED ops carrying made-up values for the
/// clients' keys, naming real client ids and request ids near theirs. The
/// switch must neither learn from them nor pass them on.
pub(crate) struct Forger {
    rng: Rng,
    cl_ids: Vec<u32>,
    /// The keys the forged ops name (the workload's).
    keys: Vec<innet_wire::txn::Key>,
    next: Time,
    stop: Time,
}

impl Forger {
    /// A forger of replies to `cl_ids` about `keys` until `stop`.
    pub(crate) fn new(rng: Rng, cl_ids: &[u32], keys: &[innet_wire::txn::Key], stop: Time) -> Forger {
        Forger { rng, cl_ids: cl_ids.to_vec(), keys: keys.to_vec(), next: Time::ZERO, stop }
    }

    /// Adds `self` as `forger{i}` beside switch `sw`, on its own 0.5 ms
    /// link (with `cfg`'s faults), sending to the switch.
    fn add_beside(self, sim: &mut Sim, i: usize, sw: NodeId, cfg: &TxnPointConfig) {
        let f = sim.add_host(&format!("forger{i}"), self);
        sim.link(f, sw, link(cfg, Duration::from_micros(500)));
        sim.set_upstream(f, sw);
    }

    /// Adds one forger beside every switch of `switches`, forging replies to
    /// `cl_ids` about `keys` until `stop`; their randomness comes from
    /// `cfg.seed`.
    pub(crate) fn beside_switches(
        sim: &mut Sim,
        switches: &[NodeId],
        cl_ids: &[u32],
        keys: &[innet_wire::txn::Key],
        cfg: &TxnPointConfig,
        stop: Time,
    ) {
        let mut rng = Rng::new(cfg.seed ^ 0x00F0_F6E4);
        for (i, &sw) in switches.iter().enumerate() {
            Forger::new(rng.fork(), cl_ids, keys, stop).add_beside(sim, i, sw, cfg);
        }
    }
}

impl innet_core::Host for Forger {
    fn on_packet(&mut self, _now: Time, _packet: &[u8], _out: &mut innet_core::Outbox) {}
    fn on_tick(&mut self, now: Time, out: &mut innet_core::Outbox) {
        use innet_wire::txn::{Flags, Op, Status, TxnMsg, Value};
        let cl_id = self.cl_ids[self.rng.below(self.cl_ids.len() as u64) as usize];
        let n = 1 + self.rng.below(4) as usize;
        let ops = (0..n)
            .map(|_| {
                let key = self.keys[self.rng.below(self.keys.len() as u64) as usize];
                let v = Value::from_counter(1_000_000 + self.rng.below(1000));
                if self.rng.chance(0.5) {
                    Op::value(key, v)
                } else {
                    Op::updated(key, v)
                }
            })
            .collect();
        let mut m = TxnMsg::request(cl_id, self.rng.below(64) as i32, ops);
        m.flags = Flags(0).with(Flags::RESPONSE, true);
        m.status = if self.rng.chance(0.8) { Status::Ok } else { Status::Abort };
        out.send(innet_core::Dest::Upstream, m.encode());
        self.next = now + Duration::from_micros(200 + self.rng.below(2000));
    }
    fn next_tick(&self) -> Option<Time> {
        (self.next < self.stop).then_some(self.next)
    }
}

/// An outside sender that replays the clients' real past requests (their
/// exact bytes, captured from the clients' histories as the run goes on),
/// now and then as a `store_commit` resend, to a switch or straight to the
/// store, including requests a switch answered itself (aborted). Neither
/// may apply a request twice, commit one a switch aborted, answer it with a
/// recorded reply to anyone but the request's sender, or teach a switch an
/// old value.
struct Replayer {
    rng: Rng,
    /// Each request's fragments, and whether the store decided it.
    captured: Vec<(Vec<innet_wire::txn::TxnMsg>, bool)>,
    next: Time,
    stop: Time,
    sent: u64,
}

impl innet_core::Host for Replayer {
    fn on_packet(&mut self, _now: Time, _packet: &[u8], _out: &mut innet_core::Outbox) {}
    fn on_tick(&mut self, now: Time, out: &mut innet_core::Outbox) {
        use innet_wire::txn::Flags;
        self.next = now + Duration::from_micros(200 + self.rng.below(2000));
        if self.captured.is_empty() {
            return;
        }
        let n = self.captured.len() as u64;
        // Half of the replays are of the last few requests (a client's
        // latest, which the store holds a record of), half of any.
        let i = if self.rng.chance(0.5) { n - 1 - self.rng.below(n.min(8)) } else { self.rng.below(n) };
        let resend = self.rng.chance(0.3);
        // Straight to the store any request, also one the switch answered
        // itself (issue 21: the store used to commit it).
        let (frags, _decided) = &self.captured[i as usize];
        let dest = if self.rng.chance(0.3) { innet_core::Dest::Port(0) } else { innet_core::Dest::Upstream };
        for frag in frags {
            let mut m = frag.clone();
            m.flags = m.flags.with(Flags::STORE_COMMIT, resend);
            out.send(dest, m.encode());
        }
        self.sent += 1;
    }
    fn next_tick(&self) -> Option<Time> {
        (self.next < self.stop).then_some(self.next)
    }
}

/// Runs `cfg` with recording on, lets in-flight requests drain, and checks
/// the history. Beside every switch, an outside sender forges store replies
/// ([`Forger`]) and another replays the clients' past requests
/// ([`Replayer`]), throughout.
pub fn run_checked(cfg: &TxnPointConfig) -> Result<CheckedRun, String> {
    checked(cfg, false).map(|(run, _)| run)
}

/// [`run_checked`] with every delivery recorded ([`Sim::record_trace`]):
/// where two runs of one seed part ([`crate::nondeterminism`]).
pub fn run_traced(cfg: &TxnPointConfig) -> Result<Vec<TraceEvent>, String> {
    checked(cfg, true).map(|(_, trace)| trace)
}

fn checked(cfg: &TxnPointConfig, trace: bool) -> Result<(CheckedRun, Vec<TraceEvent>), String> {
    let mut t = build(cfg, true)?;
    if trace {
        t.sim.record_trace();
    }
    let replayers = add_outside_senders(&mut t, cfg);
    // Clients stop starting transactions at duration_s; give retries and
    // resends time to finish so that most attempts have an outcome. The run
    // goes in steps: after each, the replayers get the requests the clients
    // finished meanwhile.
    let end = Time::from_secs_f64(cfg.duration_s) + cfg.timeout() * 30;
    let mut seen = vec![0usize; t.clients.len()];
    let mut now = Time::ZERO;
    while now < end {
        now = (now + Duration::from_millis(20)).min(end);
        t.sim.run_until(now);
        feed_replayers(&mut t, &replayers, &mut seen);
    }
    let store = t.store();
    let decisions = store.log.as_deref().expect("recording on");
    let mut attempts = vec![];
    for &c in &t.clients {
        let lc = t.sim.host::<LoadClient>(c).expect("load client");
        attempts.extend_from_slice(lc.client.history.as_deref().expect("recording on"));
    }
    let result = check(decisions, &attempts, &store.snapshot());
    let run = CheckedRun {
        config: cfg.clone(),
        result,
        trace_hash: t.sim.trace_hash(),
        net: t.sim.stats.clone(),
        committed: t.stats().committed,
    };
    Ok((run, t.sim.trace_events().to_vec()))
}

/// Beside every switch a [`Forger`], and beside every switch that clients
/// send to a [`Replayer`] (linked to that switch and to the store); each
/// replayer's id and its switch's.
fn add_outside_senders(t: &mut TxnTopology, cfg: &TxnPointConfig) -> Vec<(NodeId, NodeId)> {
    let cl_ids: Vec<u32> = deploy::client_ids(&t.deployment).into_iter().filter(|&id| id != 0).collect();
    let mut rng = Rng::new(cfg.seed ^ 0x00F0_F6E4);
    let keys: Vec<innet_wire::txn::Key> = (0..cfg.keys).collect();
    let stop = Time::from_secs_f64(cfg.duration_s);
    let mut replayers = vec![];
    for (i, &sw) in t.switches.clone().iter().enumerate() {
        Forger::new(rng.fork(), &cl_ids, &keys, stop).add_beside(&mut t.sim, i, sw, cfg);
        let replayer = Replayer { rng: rng.fork(), captured: vec![], next: Time::ZERO, stop, sent: 0 };
        // Replays enter where the replayed client's requests do: at its own
        // switch (a request a switch answered, replayed through a switch it
        // never passed, is beyond this check: see docs/security.md).
        let clients_here =
            t.deployment.nodes.iter().any(|n| n.role.is_client() && n.upstream.is_some_and(|u| t.nodes[u] == sw));
        if !clients_here {
            continue;
        }
        let r = t.sim.add_host(&format!("replayer{i}"), replayer);
        t.sim.link(r, sw, link(cfg, Duration::from_micros(500)));
        t.sim.set_upstream(r, sw);
        t.sim.link(r, t.store, link(cfg, Duration::from_micros(500)));
        t.sim.set_port(r, 0, Some(t.store));
        replayers.push((r, sw));
    }
    replayers
}

/// Hands each replayer (`replayers`: its id and its switch's) the requests
/// its switch's clients attempted since `seen` (per client, the history
/// entries already handed over), each with whether the store decided it.
fn feed_replayers(t: &mut TxnTopology, replayers: &[(NodeId, NodeId)], seen: &mut [usize]) {
    let mut fresh: Vec<(NodeId, (Vec<innet_wire::txn::TxnMsg>, bool))> = vec![];
    let decided: std::collections::HashSet<(u32, i32)> =
        t.store().log.as_deref().expect("recording on").iter().map(|d| (d.cl_id, d.req_id)).collect();
    for (k, &c) in t.clients.iter().enumerate() {
        let ix = t.nodes.iter().position(|&n| n == c).expect("a deployment node");
        let Some(up) = t.deployment.nodes[ix].upstream.map(|u| t.nodes[u]) else { continue };
        let lc = t.sim.host::<LoadClient>(c).expect("load client");
        let h = lc.client.history.as_deref().expect("recording on");
        for a in &h[seen[k]..] {
            let template = innet_wire::txn::TxnMsg::request(a.cl_id, a.req_id, vec![]);
            // Attempts in a history were sent, so they fit.
            let Some(frags) = innet_wire::txn::TxnMsg::fragments(&template, &a.ops) else { continue };
            fresh.push((up, (frags, decided.contains(&(a.cl_id, a.req_id)))));
        }
        seen[k] = h.len();
    }
    for &(r, sw) in replayers {
        let mine = fresh.iter().filter(|(up, _)| *up == sw).map(|(_, f)| f.clone());
        t.sim.host_mut::<Replayer>(r).expect("replayer").captured.extend(mine);
    }
}

/// The random configuration `innet check txn` uses for `seed` and `mode`:
/// a few clients and keys, multi-key transactions (some large enough to be
/// fragmented), short links with loss, duplication, jitter and reordering,
/// and in a quarter of the seeds a tree of two or three edge switches under
/// a core switch (Gotthard Figure 4), every switch in `mode`.
pub fn random_check_config(seed: u64, mode: Mode, duration_s: f64) -> TxnPointConfig {
    let mut r = Rng::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xC0FFEE);
    let keys = 1 + r.below(12) as u32;
    TxnPointConfig {
        mode: mode.name().into(),
        write_ratio: [0.1, 0.3, 0.5, 0.8, 1.0][r.below(5) as usize],
        clients: 2 + r.below(7) as u32,
        keys,
        zipf: [0.0, 1.0, 2.0][r.below(3) as usize],
        span: 1 + r.below(keys as u64) as u32,
        validated_reads: r.f64(),
        rtt_ms: 2.0 + r.below(19) as f64,
        delta: 0.1 + 0.8 * r.f64(),
        duration_s,
        seed,
        think_ms: 0.0,
        cache_slots: [4, 16, 4096][r.below(3) as usize],
        // One draw each, in this order (a seed's run stays what it was).
        faults: crate::faults::Faults {
            jitter_ms: r.f64() * 3.0,
            loss: r.f64() * 0.05,
            duplicate: r.f64() * 0.05,
            reorder: r.f64() * 0.1,
        },
        timeout_ms: 0.0,
        retry_limit: 1000,
        edge_switches: 0,
        topology: None,
        store_us_per_packet: crate::txn::STORE_US_PER_PACKET,
    }
    .with_random_tree(&mut r)
}

impl TxnPointConfig {
    fn with_random_tree(mut self, r: &mut Rng) -> TxnPointConfig {
        if r.chance(0.25) {
            self.edge_switches = (2 + r.below(2) as u32).min(self.clients);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checked_faulty_run_is_deterministic_and_clean() {
        for mode in Mode::ALL {
            let cfg = random_check_config(7, mode, 3.0);
            let a = run_checked(&cfg).unwrap();
            let b = run_checked(&cfg).unwrap();
            if let Some(d) = crate::nondeterminism(a.trace_hash, b.trace_hash, || run_traced(&cfg)).unwrap() {
                panic!("{mode}: {d}");
            }
            assert!(a.committed > 0, "{mode}: nothing committed");
            if let Err(e) = &a.result {
                panic!("{mode}: {e:?}");
            }
        }
    }
}
