//! The transaction experiment on the simulator, and the randomized
//! correctness runs of `innet check txn`.

use std::time::{Duration, Instant};

use innet_core::rng::Rng;
use innet_core::{Counters, Time};
use innet_sim::{LinkSpec, NetStats, NodeId, Sim};
use innet_txn::check::{check, CheckSummary};
use innet_txn::client::{ClientConfig, TxnClient};
use innet_txn::switch::CLIENT_SLOTS_DEFAULT;
use innet_txn::workload::{LoadClient, LoadStats};
use innet_txn::{Mode, TxnStore, TxnSwitch};

use crate::txn::{summarize, TxnPointConfig, TxnPointResult};

/// A built topology: `clients -- switch -- store`.
pub struct TxnTopology {
    pub sim: Sim,
    pub store: NodeId,
    pub switch: NodeId,
    pub clients: Vec<NodeId>,
}

impl TxnTopology {
    pub fn stats(&self) -> LoadStats {
        let mut s = LoadStats::default();
        for &c in &self.clients {
            s.merge(&self.sim.host::<LoadClient>(c).expect("load client").stats);
        }
        s
    }
    pub fn switch(&self) -> &TxnSwitch {
        self.sim.program::<TxnSwitch>(self.switch).expect("txn switch")
    }
    pub fn store(&self) -> &TxnStore {
        self.sim.host::<TxnStore>(self.store).expect("txn store")
    }
}

fn link(cfg: &TxnPointConfig, latency: Duration) -> LinkSpec {
    LinkSpec {
        latency,
        jitter: Duration::from_secs_f64(cfg.jitter_ms / 1e3),
        loss_probability: cfg.loss,
        duplicate_probability: cfg.duplicate,
        reorder_probability: cfg.reorder,
    }
}

/// Builds the Figure 3 topology for `cfg`; with `record`, the store logs its
/// decisions and clients their attempts (for the checker).
pub fn build(cfg: &TxnPointConfig, record: bool) -> Result<TxnTopology, String> {
    let mode = cfg.validate()?;
    let mut rng = Rng::new(cfg.seed);
    let mut sim = Sim::new(rng.next_u64());
    let store = TxnStore::in_memory();
    let store = sim.add_host("store", if record { store.with_log() } else { store });
    let switch = sim.add_switch("switch", TxnSwitch::new(mode, cfg.cache_slots, CLIENT_SLOTS_DEFAULT));
    sim.link(switch, store, link(cfg, cfg.switch_store_delay()));
    sim.set_upstream(switch, store);
    let stop = Time::from_secs_f64(cfg.duration_s);
    let mut clients = vec![];
    for i in 1..=cfg.clients {
        let mut ccfg = ClientConfig::new(i);
        ccfg.timeout = cfg.timeout();
        ccfg.retry_limit = cfg.retry_limit;
        let client = TxnClient::new(ccfg);
        let client = if record { client.with_history() } else { client };
        let load = LoadClient::new(client, cfg.workload(), rng.fork(), Time::ZERO, stop);
        let id = sim.add_host(&format!("client{i}"), load);
        sim.link(id, switch, link(cfg, cfg.client_switch_delay()));
        sim.set_upstream(id, switch);
        clients.push(id);
    }
    Ok(TxnTopology { sim, store, switch, clients })
}

/// Runs one point; the result records simulated seconds per wall second.
pub fn run_point_sim(cfg: &TxnPointConfig) -> anyhow::Result<TxnPointResult> {
    let mut t = build(cfg, false).map_err(anyhow::Error::msg)?;
    let wall = Instant::now();
    t.sim.run_until(Time::from_secs_f64(cfg.duration_s));
    let wall_s = wall.elapsed().as_secs_f64();
    let counters = t.switch().counters.counters().into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    let mut r = summarize(cfg, "sim", &t.stats(), cfg.duration_s, wall_s, counters);
    r.speedup = Some(cfg.duration_s / wall_s.max(1e-9));
    Ok(r)
}

/// The outcome of one checked run.
pub struct CheckedRun {
    pub config: TxnPointConfig,
    pub result: Result<CheckSummary, Vec<String>>,
    pub trace_hash: u64,
    pub net: NetStats,
    pub committed: u64,
}

/// Runs `cfg` with recording on, lets in-flight requests drain, and checks
/// the history.
pub fn run_checked(cfg: &TxnPointConfig) -> Result<CheckedRun, String> {
    let mut t = build(cfg, true)?;
    // Clients stop starting transactions at duration_s; give retries and
    // resends time to finish so that most attempts have an outcome.
    let drain = cfg.timeout() * 30;
    t.sim.run_until(Time::from_secs_f64(cfg.duration_s) + drain);
    let store = t.store();
    let decisions = store.log.as_deref().expect("recording on");
    let mut attempts = vec![];
    for &c in &t.clients {
        let lc = t.sim.host::<LoadClient>(c).expect("load client");
        attempts.extend_from_slice(lc.client.history.as_deref().expect("recording on"));
    }
    let result = check(decisions, &attempts, &store.snapshot());
    Ok(CheckedRun {
        config: cfg.clone(),
        result,
        trace_hash: t.sim.trace_hash(),
        net: t.sim.stats.clone(),
        committed: t.stats().committed,
    })
}

/// The random configuration `innet check txn` uses for `seed` and `mode`:
/// a few clients and keys, multi-key transactions (some large enough to be
/// fragmented), short links with loss, duplication, jitter and reordering.
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
        jitter_ms: r.f64() * 3.0,
        loss: r.f64() * 0.05,
        duplicate: r.f64() * 0.05,
        reorder: r.f64() * 0.1,
        timeout_ms: 0.0,
        retry_limit: 1000,
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
            assert_eq!(a.trace_hash, b.trace_hash, "same seed, same trace ({mode})");
            assert!(a.committed > 0, "{mode}: nothing committed");
            if let Err(e) = &a.result {
                panic!("{mode}: {e:?}");
            }
        }
    }
}
