//! The transaction experiment (Gotthard section 5.3, Figure 7; NOCC section 4).
//!
//! Topology (Gotthard Figure 3): `clients -- switch -- store`. The one-way
//! client-store distance is RTT/2, split by the delta ratio:
//! `d_cs = delta * RTT/2` (client to switch), `d_ss = (1 - delta) * RTT/2`.
//! Paper defaults (Table 2): RTT 100 ms, delta 0.2, 8 clients, write ratio
//! 0.2, one counter key, 3 minutes per point, no think time.

use std::time::Duration;

use innet_txn::deploy::{self, SwitchSpec, TxnDeployment, TxnRole};
use innet_txn::workload::{LoadStats, Workload};
use innet_txn::Mode;
use serde::{Deserialize, Serialize};

use crate::faults::Faults;

/// Everything that defines one experiment point; also the command-line
/// flags of `innet sim txn` and `innet bench txn` (each field's flag and
/// default below).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, clap::Args)]
pub struct TxnPointConfig {
    /// Switch mode: forward, read-cache, early-abort or optimistic-abort.
    #[arg(long, default_value = "optimistic-abort")]
    pub mode: String,
    /// Fraction of transactions that write (increment a counter).
    #[arg(long, default_value_t = 0.2, value_parser = crate::parse::ratio)]
    pub write_ratio: f64,
    /// Concurrent closed-loop clients.
    #[arg(long, default_value_t = 8, value_parser = crate::parse::clients)]
    pub clients: u32,
    /// Number of counters (keys 1..=N).
    #[arg(long, default_value_t = 1, value_parser = crate::parse::txn_keys)]
    pub keys: u32,
    /// Zipf exponent of key popularity (0 = uniform).
    #[arg(long, default_value_t = 0.0, value_parser = crate::parse::non_negative)]
    pub zipf: f64,
    /// Client-store round-trip time in ms.
    #[arg(long, default_value_t = 100.0, value_parser = crate::parse::delay_ms)]
    pub rtt_ms: f64,
    /// Switch position: d_cs / (d_cs + d_ss); 0 = next to the clients.
    #[arg(long, default_value_t = 0.2, value_parser = crate::parse::ratio)]
    pub delta: f64,
    /// Length of the run (simulated seconds in the simulator).
    #[arg(long, default_value_t = 180.0, value_parser = crate::parse::seconds)]
    pub duration_s: f64,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Client think time between transactions, ms.
    #[arg(long, default_value_t = 0.0, value_parser = crate::parse::delay_ms)]
    pub think_ms: f64,
    /// Switch cache slots (a power of two).
    #[arg(long, default_value_t = innet_txn::switch::CACHE_SLOTS_DEFAULT, value_parser = crate::parse::cache_slots)]
    pub cache_slots: usize,
    /// Simulator link faults (jitter in ms, loss, duplication, reordering).
    #[serde(flatten)]
    #[command(flatten)]
    pub faults: Faults,
    /// Client resend timeout in ms (0: 4 x RTT + 50 ms).
    #[arg(long, default_value_t = 0.0, value_parser = crate::parse::delay_ms)]
    pub timeout_ms: f64,
    /// Attempts per transaction before the client gives up.
    #[arg(long, default_value_t = 1000)]
    pub retry_limit: u32,
    /// Most keys one transaction touches (the paper's microbenchmark: 1).
    #[arg(long, default_value_t = 1, value_parser = crate::parse::span)]
    pub span: u32,
    /// Fraction of reads run as compare-only transactions instead of READ ops (paper: 0).
    #[serde(default)]
    #[arg(long, default_value_t = 0.0, value_parser = crate::parse::ratio)]
    pub validated_reads: f64,
    /// 0: one switch (Gotthard Figure 3). 2 or more: that many edge
    /// switches, each in front of its share of the clients, under a core
    /// switch collocated with the store (Figure 4; section 5.1's locality
    /// setup): client-edge d_cs, edge-core d_ss, core-store 0. Every
    /// switch runs the mode.
    #[serde(default)]
    #[arg(long, default_value_t = 0, value_parser = crate::parse::edge_switches)]
    pub edge_switches: u32,
    /// A topology file (docs/live.md) whose deployment (switches, modes,
    /// client groups, link delays) replaces the one --clients, --rtt-ms,
    /// --delta, --mode and --edge-switches describe; the workload stays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub topology: Option<String>,
    /// Simulator: the store's CPU per packet it handles, microseconds (its
    /// service model: one FIFO server; 0 = infinitely fast). The default is
    /// measured on the live store ([`STORE_US_PER_PACKET`]).
    #[serde(default = "store_us_default")]
    #[arg(long, default_value_t = STORE_US_PER_PACKET, value_parser = crate::parse::non_negative)]
    pub store_us_per_packet: f64,
}

/// The store's CPU per packet, microseconds: the marginal CPU cost of a
/// packet on the live store, measured on the development machine as the
/// least-squares slope of the store's CPU_PCT answer (its thread's utime +
/// stime) against the packets per second it handled, over nine live TPC-C
/// Payment points in forward mode (1-40 terminals, 10 s each, RTT 1 ms):
/// 1.96 us per packet. The fit's intercept, 2.9% of a core at zero load
/// (the event loop's own floor), is not modelled (docs/tpcc.md, "Store
/// load").
pub const STORE_US_PER_PACKET: f64 = 2.0;

fn store_us_default() -> f64 {
    STORE_US_PER_PACKET
}

/// The store's queue in the simulator's service model: deep enough that a
/// closed loop of clients never fills it (packets, not a measured figure).
pub const STORE_QUEUE_PACKETS: usize = 1 << 16;

/// The store's service model for `us_per_packet` (`None` for 0).
pub fn store_service(us_per_packet: f64) -> Option<innet_sim::ServiceModel> {
    (us_per_packet > 0.0).then(|| innet_sim::ServiceModel {
        per_packet: Duration::from_secs_f64(us_per_packet / 1e6),
        per_byte_ns: 0.0,
        queue_packets: STORE_QUEUE_PACKETS,
    })
}

/// Store CPU in percent of one core: busy time over `wall`.
pub fn cpu_pct(busy: Duration, wall_s: f64) -> f64 {
    if wall_s > 0.0 {
        busy.as_secs_f64() / wall_s * 100.0
    } else {
        0.0
    }
}

impl Default for TxnPointConfig {
    fn default() -> Self {
        TxnPointConfig {
            mode: Mode::OptimisticAbort.name().into(),
            write_ratio: 0.2,
            clients: 8,
            keys: 1,
            zipf: 0.0,
            rtt_ms: 100.0,
            delta: 0.2,
            duration_s: 180.0,
            seed: 1,
            think_ms: 0.0,
            cache_slots: innet_txn::switch::CACHE_SLOTS_DEFAULT,
            faults: Faults::NONE,
            timeout_ms: 0.0,
            retry_limit: 1000,
            span: 1,
            validated_reads: 0.0,
            edge_switches: 0,
            topology: None,
            store_us_per_packet: STORE_US_PER_PACKET,
        }
    }
}

impl TxnPointConfig {
    /// Checks every field and says how to fix what is wrong.
    pub fn validate(&self) -> Result<Mode, String> {
        let mode: Mode = self.mode.parse()?;
        self.workload().validate()?;
        self.faults.validate()?;
        if !(0.0..=1.0).contains(&self.delta) {
            return Err(format!(
                "--delta {} must be in 0..=1 (0: switch next to the clients, 1: next to the store)",
                self.delta
            ));
        }
        for (name, v) in [("rtt-ms", self.rtt_ms), ("think-ms", self.think_ms), ("timeout-ms", self.timeout_ms)] {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(format!("--{name} {v} must be a finite number >= 0"));
            }
        }
        if !(self.duration_s > 0.0 && self.duration_s.is_finite()) {
            return Err(format!("--duration-s {} must be > 0", self.duration_s));
        }
        crate::parse::within("--clients", self.clients, 1, innet_core::limits::CLIENTS_MAX, "CLIENTS_MAX")?;
        if self.cache_slots < innet_core::table::WAYS || !self.cache_slots.is_power_of_two() {
            return Err(format!(
                "--cache-slots {} must be a power of two >= {}",
                self.cache_slots,
                innet_core::table::WAYS
            ));
        }
        if self.retry_limit == 0 {
            return Err("--retry-limit must be at least 1".into());
        }
        if self.edge_switches == 1 || self.edge_switches > self.clients {
            return Err(format!(
                "--edge-switches {} must be 0 (one switch) or from 2 to the number of clients ({})",
                self.edge_switches, self.clients
            ));
        }
        Ok(mode)
    }

    pub fn workload(&self) -> Workload {
        Workload {
            write_ratio: self.write_ratio,
            keys: self.keys,
            zipf: self.zipf,
            think_time: Duration::from_secs_f64(self.think_ms / 1e3),
            span: self.span,
            validated_reads: self.validated_reads,
        }
    }

    /// One-way client-switch latency.
    pub fn client_switch_delay(&self) -> Duration {
        Duration::from_secs_f64(self.delta * self.rtt_ms / 2e3)
    }

    /// One-way switch-store latency.
    pub fn switch_store_delay(&self) -> Duration {
        Duration::from_secs_f64((1.0 - self.delta) * self.rtt_ms / 2e3)
    }

    /// The configuration checked, with `clients` as the deployment has them
    /// (a topology file's client groups), so records say what ran.
    pub fn resolved(self) -> Result<TxnPointConfig, String> {
        let d = self.deployment()?;
        let clients = d.with_role(|r| r.is_client()).len() as u32;
        Ok(TxnPointConfig { clients, ..self })
    }

    /// The deployment this point runs on.
    pub fn deployment(&self) -> Result<TxnDeployment, String> {
        let mode = self.validate()?;
        if let Some(path) = &self.topology {
            let t = innet_topology::Topology::load(std::path::Path::new(path)).map_err(|e| e.0)?;
            let innet_topology::Service::Txn(mut d) = t.service else {
                return Err(format!("{path} is a {} topology, not a transaction one", t.service.name()));
            };
            if d.with_role(|r| r.is_client()).is_empty() {
                // A file of servers only (clients started by hand): `clients`
                // clients behind the switches nothing else is behind, at the
                // distance those switches emulate towards clients.
                let leaves: Vec<usize> = d
                    .with_role(|r| matches!(r, TxnRole::Switch(_)))
                    .into_iter()
                    .filter(|&s| d.downstream_of(s).is_empty())
                    .collect();
                for (k, &leaf) in leaves.iter().enumerate() {
                    let n =
                        self.clients / leaves.len() as u32 + u32::from((k as u32) < self.clients % leaves.len() as u32);
                    let name = format!("{}-clients", d.nodes[leaf].name);
                    deploy::add_clients(&mut d, &name, n, leaf, t.places[leaf].downstream_delay);
                }
            }
            return Ok(d);
        }
        let spec = SwitchSpec { mode, cache_slots: self.cache_slots };
        let (d_cs, d_ss) = (self.client_switch_delay(), self.switch_store_delay());
        Ok(if self.edge_switches == 0 {
            deploy::single_switch(self.clients, spec, d_cs, d_ss)
        } else {
            let e = self.edge_switches;
            let groups: Vec<u32> = (0..e).map(|i| self.clients / e + u32::from(i < self.clients % e)).collect();
            deploy::tree(&groups, spec, spec, d_cs, d_ss, Duration::ZERO)
        })
    }

    pub fn timeout(&self) -> Duration {
        if self.timeout_ms > 0.0 {
            Duration::from_secs_f64(self.timeout_ms / 1e3)
        } else {
            Duration::from_secs_f64((4.0 * self.rtt_ms + 50.0) / 1e3)
        }
    }
}

/// One experiment point's result: its configuration, provenance and figures.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TxnPointResult {
    pub experiment: String,
    pub runtime: crate::Runtime,
    #[serde(flatten)]
    pub config: TxnPointConfig,
    pub git_commit: String,
    pub committed: u64,
    pub committed_per_s: f64,
    pub committed_reads: u64,
    pub committed_writes: u64,
    pub mean_latency_ms: f64,
    pub p50_latency_ms: f64,
    pub p99_latency_ms: f64,
    pub aborts_by_switch: u64,
    pub aborts_by_store: u64,
    pub gave_up: u64,
    /// Simulated (or, live, measured) seconds the point covered.
    pub run_seconds: f64,
    pub wall_seconds: f64,
    /// Simulated seconds per wall-clock second (simulator only).
    pub speedup: Option<f64>,
    /// The switch's decision counters at the end of the run.
    pub switch_counters: std::collections::BTreeMap<String, u64>,
    /// Per node of a multi-switch deployment (simulator): each switch's
    /// decision counters, and each client group's (`{group}.{i}` clients
    /// summed under `group`) `committed` and `aborts_by_switch`.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub per_node: std::collections::BTreeMap<String, std::collections::BTreeMap<String, u64>>,
    /// Store CPU, percent of one core: simulator, the store's service model
    /// (busy time / run time); live, the store's CPU_PCT answer over the run.
    #[serde(default)]
    pub store_cpu_pct: Option<f64>,
    /// Packets (requests and fragments) the store handled.
    #[serde(default)]
    pub store_packets: Option<u64>,
}

/// Percentile (nearest rank) of sorted nanoseconds, in milliseconds.
pub fn percentile_ms(sorted_ns: &[u64], p: f64) -> f64 {
    if sorted_ns.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted_ns.len() as f64).ceil() as usize;
    sorted_ns[rank.clamp(1, sorted_ns.len()) - 1] as f64 / 1e6
}

/// Builds a result record from a run's totals.
pub fn summarize(
    config: &TxnPointConfig,
    runtime: crate::Runtime,
    stats: &LoadStats,
    run_seconds: f64,
    wall_seconds: f64,
    switch_counters: Vec<(String, u64)>,
) -> TxnPointResult {
    let mut lat = stats.latencies_ns.clone();
    lat.sort_unstable();
    let mean = if lat.is_empty() { 0.0 } else { lat.iter().map(|&x| x as f64).sum::<f64>() / lat.len() as f64 / 1e6 };
    TxnPointResult {
        experiment: "txn".into(),
        runtime,
        config: config.clone(),
        git_commit: crate::results::git_commit(),
        committed: stats.committed,
        committed_per_s: stats.committed as f64 / run_seconds,
        committed_reads: stats.committed_reads,
        committed_writes: stats.committed_writes,
        mean_latency_ms: mean,
        p50_latency_ms: percentile_ms(&lat, 50.0),
        p99_latency_ms: percentile_ms(&lat, 99.0),
        aborts_by_switch: stats.aborts_by_switch,
        aborts_by_store: stats.aborts_by_store,
        gave_up: stats.gave_up,
        run_seconds,
        wall_seconds,
        speedup: None,
        switch_counters: switch_counters.into_iter().collect(),
        per_node: Default::default(),
        store_cpu_pct: None,
        store_packets: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_defaults_are_the_papers_defaults() {
        #[derive(clap::Parser)]
        struct Wrap {
            #[command(flatten)]
            point: TxnPointConfig,
        }
        let parsed = <Wrap as clap::Parser>::try_parse_from(["innet"]).unwrap();
        assert_eq!(parsed.point, TxnPointConfig::default());
    }
}
