//! TPC-C over the transaction service in the simulator: one point per
//! switch mode (Gotthard Figure 13), and the randomized faulty runs of
//! `innet check tpcc` (serializability and TPC-C consistency).

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use innet_core::deploy::Node;
use innet_core::rng::Rng;
use innet_core::{Counters, Time};
use innet_sim::{NodeId, Sim, SimNode, TraceEvent};
use innet_txn::check::{check, CheckSummary};
use innet_txn::client::{ClientConfig, TxnClient};
use innet_txn::deploy::{self, TxnRole};
use innet_txn::store::{Decision, MemBackend};
use innet_txn::switch::CLIENT_SLOTS_DEFAULT;
use innet_txn::{Mode, TxnStore, TxnSwitch};
use innet_wire::txn::{Key, Status, Value};
use serde::{Deserialize, Serialize};

use crate::faults::Faults;
use crate::txn::{cpu_pct, percentile_ms, TxnPointConfig, STORE_US_PER_PACKET};
use innet_tpcc::{check_consistency, initial_db, Kind, KindStats, Scale, TpccClient, TpccStats};

/// One TPC-C point; also the flags of `innet bench tpcc`. Network defaults
/// are Gotthard Table 2's (RTT 100 ms, delta 0.2, 8 clients), the scale
/// Gotthard section 5.4's.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, clap::Args)]
pub struct TpccConfig {
    /// Switch mode: forward, read-cache, early-abort or optimistic-abort.
    #[arg(long, default_value = "optimistic-abort")]
    pub mode: String,
    /// Terminals (closed-loop clients), spread over the warehouses.
    #[arg(long, default_value_t = 8, value_parser = crate::parse::clients)]
    pub clients: u32,
    #[arg(long, default_value_t = 1)]
    pub warehouses: u32,
    /// Districts per warehouse.
    #[arg(long, default_value_t = 2)]
    pub districts: u32,
    /// Customers per district.
    #[arg(long, default_value_t = 10)]
    pub customers: u32,
    /// Items (NOCC section 4: 10).
    #[arg(long, default_value_t = 50)]
    pub items: u32,
    /// Client-store round-trip time in ms.
    #[arg(long, default_value_t = 100.0, value_parser = crate::parse::delay_ms)]
    pub rtt_ms: f64,
    /// Switch position: d_cs / (d_cs + d_ss); 0 = next to the clients.
    #[arg(long, default_value_t = 0.2, value_parser = crate::parse::ratio)]
    pub delta: f64,
    /// Simulated seconds.
    #[arg(long, default_value_t = 180.0, value_parser = crate::parse::seconds)]
    pub duration_s: f64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Switch cache slots (a power of two).
    #[arg(long, default_value_t = innet_txn::switch::CACHE_SLOTS_DEFAULT, value_parser = crate::parse::cache_slots)]
    pub cache_slots: usize,
    /// Simulator link faults (jitter in ms, loss, duplication, reordering).
    #[serde(flatten)]
    #[command(flatten)]
    pub faults: Faults,
    /// Commit attempts per transaction before the terminal gives up.
    #[arg(long, default_value_t = 1000)]
    pub retry_limit: u32,
    /// Edge switches under a core switch (0: one switch), as `--edge-switches` of `innet sim txn`.
    #[arg(long, default_value_t = 0, value_parser = crate::parse::edge_switches)]
    pub edge_switches: u32,
    /// Run only this transaction type (new-order, payment, order-status,
    /// delivery, stock-level) instead of the mix; Gotthard Figure 13's
    /// per-type bars and Figure 14 run one type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long, value_parser = innet_tpcc::Kind::parse)]
    pub only: Option<Kind>,
    /// Simulator: the store's CPU per packet, microseconds (its service
    /// model; `innet bench txn --help`).
    #[serde(default = "store_us_default")]
    #[arg(long, default_value_t = STORE_US_PER_PACKET, value_parser = crate::parse::non_negative)]
    pub store_us_per_packet: f64,
}

fn store_us_default() -> f64 {
    STORE_US_PER_PACKET
}

impl Default for TpccConfig {
    fn default() -> Self {
        TpccConfig {
            mode: Mode::OptimisticAbort.name().into(),
            clients: 8,
            warehouses: Scale::GOTTHARD.warehouses,
            districts: Scale::GOTTHARD.districts,
            customers: Scale::GOTTHARD.customers,
            items: Scale::GOTTHARD.items,
            rtt_ms: 100.0,
            delta: 0.2,
            duration_s: 180.0,
            seed: 1,
            cache_slots: innet_txn::switch::CACHE_SLOTS_DEFAULT,
            faults: Faults::NONE,
            retry_limit: 1000,
            edge_switches: 0,
            only: None,
            store_us_per_packet: STORE_US_PER_PACKET,
        }
    }
}

impl TpccConfig {
    pub fn scale(&self) -> Scale {
        Scale { warehouses: self.warehouses, districts: self.districts, customers: self.customers, items: self.items }
    }

    /// The network part as the transaction experiment's configuration
    /// (deployment, links, timeouts).
    pub fn network(&self) -> TxnPointConfig {
        TxnPointConfig {
            mode: self.mode.clone(),
            clients: self.clients,
            rtt_ms: self.rtt_ms,
            delta: self.delta,
            duration_s: self.duration_s,
            seed: self.seed,
            cache_slots: self.cache_slots,
            faults: self.faults,
            retry_limit: self.retry_limit,
            edge_switches: self.edge_switches,
            store_us_per_packet: self.store_us_per_packet,
            ..TxnPointConfig::default()
        }
    }

    pub fn validate(&self) -> Result<Mode, String> {
        self.scale().validate()?;
        if self.rtt_ms <= 0.0 {
            return Err("--rtt-ms must be > 0 (a closed-loop simulated client needs a distance)".into());
        }
        self.network().validate()
    }
}

/// Per transaction type figures of one point.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct KindResult {
    #[serde(flatten)]
    pub totals: KindStats,
    pub committed_per_s: f64,
    pub mean_latency_ms: f64,
    pub p50_latency_ms: f64,
    pub p99_latency_ms: f64,
}

/// One TPC-C point's record.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TpccResult {
    pub experiment: String,
    pub runtime: crate::Runtime,
    #[serde(flatten)]
    pub config: TpccConfig,
    pub git_commit: String,
    /// Every committed transaction per second, all types together.
    pub committed_per_s: f64,
    /// Gotthard Figure 13's left bars: per-type committed/s weighted by the
    /// mix (0.45 New-Order + 0.43 Payment + 0.04 each of the others).
    pub weighted_committed_per_s: f64,
    pub per_type: BTreeMap<String, KindResult>,
    /// TPC-C consistency violations found at the end of the run (empty: all hold).
    pub consistency_violations: Vec<String>,
    pub store_requests: u64,
    pub store_aborts: u64,
    /// Store CPU, percent of one core: simulator, the store's service model
    /// (busy time / run time); live, the store's CPU_PCT answer over the run.
    #[serde(default)]
    pub store_cpu_pct: Option<f64>,
    /// Packets (requests and fragments) the store handled.
    #[serde(default)]
    pub store_packets: u64,
    pub switch_counters: BTreeMap<String, u64>,
    pub run_seconds: f64,
    pub wall_seconds: f64,
}

/// A built TPC-C deployment.
pub struct TpccTopology {
    pub sim: Sim,
    pub store: NodeId,
    pub switches: Vec<NodeId>,
    pub clients: Vec<NodeId>,
    /// The terminals' client ids.
    pub cl_ids: Vec<u32>,
    pub initial: BTreeMap<Key, Value>,
}

impl TpccTopology {
    pub fn stats(&self) -> TpccStats {
        let mut s = TpccStats::default();
        for &c in &self.clients {
            s.merge(&self.sim.host::<TpccClient>(c).expect("tpcc client").stats);
        }
        s
    }
    pub fn store(&self) -> &TxnStore {
        self.sim.host::<TxnStore>(self.store).expect("txn store")
    }
    pub fn switch_counters(&self) -> BTreeMap<String, u64> {
        let mut sum = BTreeMap::new();
        for &s in &self.switches {
            for (k, v) in self.sim.program::<TxnSwitch>(s).expect("txn switch").counters.counters() {
                *sum.entry(k.to_string()).or_default() += v;
            }
        }
        sum
    }
}

/// Builds `cfg`: the store holding the initial database, the switches,
/// and `cfg.clients` terminals (terminal i on warehouse i mod W + 1).
pub fn build(cfg: &TpccConfig, record: bool) -> Result<TpccTopology, String> {
    cfg.validate()?;
    let net = cfg.network();
    let deployment = net.deployment()?;
    let scale = cfg.scale();
    let initial = initial_db(&scale, cfg.seed);
    let mut rng = Rng::new(cfg.seed);
    let mut sim = Sim::new(rng.next_u64());
    let stop = Time::from_secs_f64(cfg.duration_s);
    let ids = deploy::client_ids(&deployment);
    let make = |i: usize, n: &Node<TxnRole>| match &n.role {
        TxnRole::Store => {
            let store = TxnStore::new(Box::new(MemBackend::with_contents(initial.clone(), HashMap::new())));
            SimNode::host(if record { store.with_log() } else { store })
        }
        TxnRole::Switch(s) => SimNode::switch(TxnSwitch::new(s.mode, s.cache_slots, CLIENT_SLOTS_DEFAULT)),
        TxnRole::Client => {
            let mut ccfg = ClientConfig::new(ids[i]);
            ccfg.timeout = net.timeout();
            ccfg.retry_limit = 1;
            let client = TxnClient::new(ccfg);
            let client = if record { client.with_history() } else { client };
            let w = (ids[i] - 1) % scale.warehouses + 1;
            let mut t =
                TpccClient::new(client, scale, w, rng.fork(), cfg.retry_limit, Duration::ZERO, Time::ZERO, stop);
            t.only = cfg.only;
            SimNode::host(t)
        }
    };
    let nodes = sim.instantiate(&deployment, make, |d| crate::txn_sim::link(&net, d));
    let of = |f: fn(&TxnRole) -> bool| deployment.with_role(f).into_iter().map(|i| nodes[i]).collect::<Vec<_>>();
    let store = of(|r| *r == TxnRole::Store)[0];
    if let Some(model) = crate::txn::store_service(cfg.store_us_per_packet) {
        sim.set_service(store, model);
    }
    crate::txn_sim::admit_store_peers(&mut sim, &deployment, &nodes);
    let switches = of(|r| matches!(r, TxnRole::Switch(_)));
    let clients = of(TxnRole::is_client);
    let cl_ids = deployment.with_role(TxnRole::is_client).into_iter().map(|i| ids[i]).collect();
    Ok(TpccTopology { sim, store, switches, clients, cl_ids, initial })
}

/// What a finished run measured, from either runtime.
pub struct TpccMeasured<'a> {
    pub runtime: crate::Runtime,
    pub stats: &'a TpccStats,
    /// The store's contents at the end.
    pub snapshot: &'a BTreeMap<Key, Value>,
    pub store_requests: u64,
    pub store_aborts: u64,
    pub store_cpu_pct: Option<f64>,
    pub store_packets: u64,
    pub switch_counters: BTreeMap<String, u64>,
    pub run_seconds: f64,
    pub wall_seconds: f64,
}

/// The record of a finished run: per-type figures and TPC-C's consistency
/// conditions over the final store.
pub fn record(cfg: &TpccConfig, m: TpccMeasured<'_>) -> TpccResult {
    let mut per_type = BTreeMap::new();
    let mut weighted = 0.0;
    for k in Kind::ALL {
        let s = m.stats.per_kind.get(&k).cloned().unwrap_or_default();
        let mut lat = s.latencies_ns.clone();
        lat.sort_unstable();
        let mean =
            if lat.is_empty() { 0.0 } else { lat.iter().map(|&x| x as f64).sum::<f64>() / lat.len() as f64 / 1e6 };
        let per_s = s.committed as f64 / m.run_seconds;
        weighted += per_s * k.weight() as f64 / 100.0;
        per_type.insert(
            k.name().to_string(),
            KindResult {
                committed_per_s: per_s,
                mean_latency_ms: mean,
                p50_latency_ms: percentile_ms(&lat, 50.0),
                p99_latency_ms: percentile_ms(&lat, 99.0),
                totals: s,
            },
        );
    }
    TpccResult {
        experiment: "tpcc".into(),
        runtime: m.runtime,
        config: cfg.clone(),
        git_commit: crate::results::git_commit(),
        committed_per_s: m.stats.committed() as f64 / m.run_seconds,
        weighted_committed_per_s: weighted,
        per_type,
        consistency_violations: check_consistency(&cfg.scale(), m.snapshot),
        store_requests: m.store_requests,
        store_aborts: m.store_aborts,
        store_cpu_pct: m.store_cpu_pct,
        store_packets: m.store_packets,
        switch_counters: m.switch_counters,
        run_seconds: m.run_seconds,
        wall_seconds: m.wall_seconds,
    }
}

/// The record of a finished simulator run.
pub fn summarize(cfg: &TpccConfig, t: &TpccTopology, run_seconds: f64, wall_seconds: f64) -> TpccResult {
    let store = t.store();
    let node = t.sim.node_stats(t.store);
    record(
        cfg,
        TpccMeasured {
            runtime: crate::Runtime::Sim,
            stats: &t.stats(),
            snapshot: &store.snapshot(),
            store_requests: store.counters.requests,
            store_aborts: store.counters.aborted,
            store_cpu_pct: Some(cpu_pct(node.busy, run_seconds)),
            store_packets: node.processed,
            switch_counters: t.switch_counters(),
            run_seconds,
            wall_seconds,
        },
    )
}

/// Runs one point and checks TPC-C's consistency conditions at its end.
pub fn run_point(cfg: &TpccConfig) -> anyhow::Result<TpccResult> {
    let mut t = build(cfg, false).map_err(anyhow::Error::msg)?;
    let wall = Instant::now();
    t.sim.run_until(Time::from_secs_f64(cfg.duration_s));
    Ok(summarize(cfg, &t, cfg.duration_s, wall.elapsed().as_secs_f64()))
}

/// The load as the checker's first decision: the store starts with the
/// initial database, which the checker's replay (from the empty store)
/// must see committed first.
pub fn load_decision(initial: &BTreeMap<Key, Value>) -> Decision {
    Decision {
        cl_id: 0,
        req_id: 0,
        status: Status::Ok,
        compares: vec![],
        reads: vec![],
        writes: initial.iter().map(|(k, v)| (*k, *v)).collect(),
    }
}

/// One checked TPC-C run (with forged replies from outside senders beside
/// every switch, as `innet check txn`).
pub struct TpccCheckedRun {
    pub config: TpccConfig,
    /// The serializability checker's verdict.
    pub serializable: Result<CheckSummary, Vec<String>>,
    /// TPC-C consistency violations of the final store.
    pub consistency: Vec<String>,
    pub committed: u64,
    pub per_kind: BTreeMap<Kind, u64>,
    pub trace_hash: u64,
}

impl TpccCheckedRun {
    pub fn ok(&self) -> bool {
        self.serializable.is_ok() && self.consistency.is_empty()
    }
}

/// Runs `cfg` with recording on, lets in-flight transactions drain, and
/// checks the history (the load first) and the final database.
pub fn run_checked(cfg: &TpccConfig) -> Result<TpccCheckedRun, String> {
    checked(cfg, false).map(|(run, _)| run)
}

/// [`run_checked`] with every delivery recorded ([`Sim::record_trace`]):
/// where two runs of one seed part ([`crate::nondeterminism`]).
pub fn run_traced(cfg: &TpccConfig) -> Result<Vec<TraceEvent>, String> {
    checked(cfg, true).map(|(_, trace)| trace)
}

fn checked(cfg: &TpccConfig, trace: bool) -> Result<(TpccCheckedRun, Vec<TraceEvent>), String> {
    let mut t = build(cfg, true)?;
    if trace {
        t.sim.record_trace();
    }
    // Outside senders beside every switch forge store replies throughout.
    let keys: Vec<Key> = t.initial.keys().copied().collect();
    let stop = Time::from_secs_f64(cfg.duration_s);
    crate::txn_sim::Forger::beside_switches(&mut t.sim, &t.switches, &t.cl_ids, &keys, &cfg.network(), stop);
    let drain = cfg.network().timeout() * 30;
    t.sim.run_until(Time::from_secs_f64(cfg.duration_s) + drain);
    let store = t.store();
    let mut decisions = vec![load_decision(&t.initial)];
    decisions.extend_from_slice(store.log.as_deref().expect("recording on"));
    let mut attempts = vec![];
    for &c in &t.clients {
        let tc = t.sim.host::<TpccClient>(c).expect("tpcc client");
        attempts.extend_from_slice(tc.client.history.as_deref().expect("recording on"));
    }
    let snapshot = store.snapshot();
    let stats = t.stats();
    let run = TpccCheckedRun {
        config: cfg.clone(),
        serializable: check(&decisions, &attempts, &snapshot),
        consistency: check_consistency(&cfg.scale(), &snapshot),
        committed: stats.committed(),
        per_kind: stats.per_kind.iter().map(|(k, s)| (*k, s.committed)).collect(),
        trace_hash: t.sim.trace_hash(),
    };
    Ok((run, t.sim.trace_events().to_vec()))
}

/// The random faulty configuration `innet check tpcc` uses for `seed` and
/// `mode`: a small scale (1-2 warehouses, 1-3 districts, 2-10 customers,
/// 5-50 items), 2-8 terminals, short links with loss, duplication, jitter
/// and reordering, in a quarter of the seeds a tree of edge switches.
pub fn random_check_config(seed: u64, mode: Mode, duration_s: f64) -> TpccConfig {
    let mut r = Rng::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x7C7C);
    let clients = 2 + r.below(7) as u32;
    TpccConfig {
        mode: mode.name().into(),
        clients,
        warehouses: 1 + r.below(2) as u32,
        districts: 1 + r.below(3) as u32,
        customers: 2 + r.below(9) as u32,
        items: 5 + r.below(46) as u32,
        rtt_ms: 2.0 + r.below(19) as f64,
        delta: 0.1 + 0.8 * r.f64(),
        duration_s,
        seed,
        cache_slots: [16, 64, 4096][r.below(3) as usize],
        // One draw each, in this order (a seed's run stays what it was).
        faults: Faults {
            jitter_ms: r.f64() * 3.0,
            loss: r.f64() * 0.05,
            duplicate: r.f64() * 0.05,
            reorder: r.f64() * 0.1,
        },
        retry_limit: 1000,
        edge_switches: if r.chance(0.25) { (2 + r.below(2) as u32).min(clients) } else { 0 },
        only: None,
        store_us_per_packet: STORE_US_PER_PACKET,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checked_faulty_tpcc_run_is_deterministic_and_clean() {
        for mode in Mode::ALL {
            let cfg = random_check_config(3, mode, 4.0);
            let a = run_checked(&cfg).unwrap();
            let b = run_checked(&cfg).unwrap();
            if let Some(d) = crate::nondeterminism(a.trace_hash, b.trace_hash, || run_traced(&cfg)).unwrap() {
                panic!("{mode}: {d}");
            }
            assert!(a.committed > 0, "{mode}: nothing committed");
            assert!(a.ok(), "{mode}: {:?} {:?}", a.serializable, a.consistency);
        }
    }
}
