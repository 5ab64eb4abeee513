//! The consensus experiment (CAANS section 6): configuration and result
//! records shared by the simulator and the live runtime.
//!
//! Deployment (Figure 3 / Figure 6): proposers -> coordinator -> acceptors
//! -> learners, plus a software backup coordinator. `data_plane` picks where
//! the coordinator and acceptors run: `switch` (data-plane programs in
//! switches) or `process` (the same programs as ordinary processes, the
//! libpaxos-style baseline of section 6.3).

use std::time::Duration;

use innet_paxos::deploy::{self, PaxosDeployment, PaxosParams, PaxosShape};
use serde::{Deserialize, Serialize};

pub use innet_core::deploy::DataPlaneAt;

use crate::faults::Faults;

/// Everything that defines one run; also the command-line flags of
/// `innet sim paxos` and `innet bench paxos` (defaults: 3 acceptors, 2
/// learners, one proposer with 8 requests in flight, 50 us links).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, clap::Args)]
pub struct PaxosConfig {
    /// Where the coordinator and acceptors run: switch (data-plane programs) or process.
    #[arg(long, default_value = "switch", value_parser = crate::parse::data_plane())]
    pub data_plane: DataPlaneAt,
    #[arg(long, default_value_t = 3, value_parser = crate::parse::acceptors)]
    pub acceptors: usize,
    #[arg(long, default_value_t = 2, value_parser = crate::parse::learners)]
    pub learners: usize,
    #[arg(long, default_value_t = 1, value_parser = crate::parse::proposers)]
    pub proposers: usize,
    /// Requests each proposer keeps in flight (the paper's client threads).
    #[arg(long, default_value_t = 8, value_parser = crate::parse::outstanding)]
    pub outstanding: usize,
    /// Submitting stops after this many simulated (or live) seconds.
    #[arg(long, default_value_t = 1.0, value_parser = crate::parse::seconds)]
    pub duration_s: f64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// One-way latency of every link, microseconds.
    #[arg(long, default_value_t = 50.0, value_parser = crate::parse::delay_us)]
    pub latency_us: f64,
    /// Simulator link faults (jitter in ms, loss, duplication, reordering),
    /// on every link until the faults heal.
    #[serde(flatten)]
    #[command(flatten)]
    pub faults: Faults,
    /// Acceptor ring size (a power of two).
    #[arg(long, default_value_t = innet_paxos::acceptor::ACCEPTOR_SLOTS_DEFAULT, value_parser = crate::parse::acceptor_slots)]
    pub slots: usize,
    /// Learners that must checkpoint an instance before its slot is reused
    /// (0: a majority of the learners).
    #[arg(long, default_value_t = 0, value_parser = crate::parse::trim_quorum)]
    pub trim_quorum: usize,
    /// Deliver in instance order (--unordered: as decided).
    #[arg(long = "unordered", action = clap::ArgAction::SetFalse)]
    pub ordered: bool,
    /// Proposer resubmission timeout, ms.
    #[arg(long, default_value_t = 20.0, value_parser = crate::parse::timeout_ms)]
    pub timeout_ms: f64,
    /// Learner gap timeout and recovery retry timeout, ms.
    #[arg(long, default_value_t = 10.0, value_parser = crate::parse::timeout_ms)]
    pub gap_timeout_ms: f64,
    /// Backup coordinator heartbeat interval, ms (it takes over after 3 misses).
    #[arg(long, default_value_t = 10.0, value_parser = crate::parse::timeout_ms)]
    pub heartbeat_ms: f64,
    /// Fail the coordinator at this time, s (the backup takes over).
    #[arg(long, value_parser = crate::parse::at_seconds)]
    pub coordinator_fail_at_s: Option<f64>,
    /// Crash acceptor 0 at this time, s ...
    #[arg(long, value_parser = crate::parse::at_seconds)]
    pub acceptor_crash_at_s: Option<f64>,
    /// ... and bring it back with its (persistent, section 3.1) state at this time, s.
    #[arg(long, value_parser = crate::parse::at_seconds)]
    pub acceptor_restart_at_s: Option<f64>,
    /// Simulator capacity model: per-packet cost of a switch pipeline, us (0 = free).
    #[arg(long, default_value_t = 0.0, value_parser = crate::parse::delay_us)]
    pub switch_cost_us: f64,
    /// Simulator capacity model: per-packet cost of a software coordinator/acceptor process, us.
    #[arg(long, default_value_t = 0.0, value_parser = crate::parse::delay_us)]
    pub software_cost_us: f64,
    /// Simulator capacity model: per-packet cost of a learner/proposer process, us.
    #[arg(long, default_value_t = 0.0, value_parser = crate::parse::delay_us)]
    pub host_cost_us: f64,
    /// Simulator capacity model: per-packet cost of the coordinator alone, us
    /// (unset: the data plane's cost, switch or software). Measured costs
    /// (`innet reproduce`) give the coordinator and the acceptors each their
    /// own; CAANS Figure 2's libpaxos coordinator is CPU-bound at its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long, value_parser = crate::parse::delay_us)]
    pub coordinator_cost_us: Option<f64>,
    /// The replicated key-value store (Figure 7d): learners are LevelDB
    /// replicas and proposers submit put/delete/get commands (live only).
    #[serde(default)]
    #[arg(skip)]
    pub kv: bool,
    /// Simulator: a vote counter (`innet_paxos::vote_counter`, the XDP
    /// counter's reference) in front of every learner, proposer and the
    /// backup, as on the XDP testbed.
    #[serde(default)]
    #[arg(long)]
    pub vote_counters: bool,
    /// Most client values a proposer packs into one instance's value (1:
    /// off); the load then submits 2-byte values, 8 of which fit.
    #[serde(default = "pack_off")]
    #[arg(long, default_value_t = 1, value_parser = crate::parse::pack)]
    pub pack: usize,
    /// Simulator, after `coordinator_fail_at_s`: restart the coordinator at
    /// the first time (it takes the role back from the backup: failback),
    /// fail it again at the second, restart it at the third, ... Not empty:
    /// the deployment has failback (`PaxosShape::failback`: the coordinator
    /// in the vote group).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[arg(skip)]
    pub coordinator_restart_at_s: Vec<f64>,
}

fn pack_off() -> usize {
    1
}

impl Default for PaxosConfig {
    fn default() -> Self {
        PaxosConfig {
            data_plane: DataPlaneAt::Switch,
            acceptors: 3,
            learners: 2,
            proposers: 1,
            outstanding: 8,
            duration_s: 1.0,
            seed: 1,
            latency_us: 50.0,
            faults: Faults::NONE,
            slots: innet_paxos::acceptor::ACCEPTOR_SLOTS_DEFAULT,
            trim_quorum: 0,
            ordered: true,
            timeout_ms: 20.0,
            gap_timeout_ms: 10.0,
            heartbeat_ms: 10.0,
            coordinator_fail_at_s: None,
            acceptor_crash_at_s: None,
            acceptor_restart_at_s: None,
            switch_cost_us: 0.0,
            software_cost_us: 0.0,
            host_cost_us: 0.0,
            coordinator_cost_us: None,
            kv: false,
            vote_counters: false,
            pack: 1,
            coordinator_restart_at_s: vec![],
        }
    }
}

impl PaxosConfig {
    /// The service-wide settings every role's configuration derives from.
    pub fn params(&self) -> PaxosParams {
        let ms = |v: f64| Duration::from_secs_f64(v / 1e3);
        PaxosParams {
            slots: self.slots,
            trim_quorum: self.trim_quorum,
            ordered: self.ordered,
            proposer_timeout: ms(self.timeout_ms),
            gap_timeout: ms(self.gap_timeout_ms),
            heartbeat: ms(self.heartbeat_ms),
            pack: self.pack,
        }
    }

    /// How many of each role, and failback if the coordinator restarts.
    pub fn shape(&self) -> PaxosShape {
        PaxosShape {
            acceptors: self.acceptors,
            learners: self.learners,
            proposers: self.proposers,
            origin_votes: false,
            failback: self.failback(),
        }
    }

    /// The coordinator restarts (failback) in this run.
    pub fn failback(&self) -> bool {
        self.coordinator_fail_at_s.is_some() && !self.coordinator_restart_at_s.is_empty()
    }

    /// The deployment (CAANS Figure 1 on a one-switch fabric with the
    /// configured one-way latency).
    pub fn deployment(&self) -> PaxosDeployment {
        deploy::deployment(self.shape(), Duration::from_secs_f64(self.latency_us / 1e6))
    }

    /// This configuration with the deployment of the topology file at
    /// `path`: its roles' counts, data plane, `[paxos]` settings and fabric
    /// delay (a file without a fabric delay keeps `latency_us`).
    pub fn with_topology(self, path: &std::path::Path) -> Result<PaxosConfig, String> {
        let t = innet_topology::Topology::load(path).map_err(|e| e.0)?;
        let innet_topology::Service::Paxos(p) = t.service else {
            return Err(format!("{} is a {} topology, not a consensus one", path.display(), t.service.name()));
        };
        let d = &p.deployment;
        let shape = PaxosShape::of(d);
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        Ok(PaxosConfig {
            data_plane: p.data_plane,
            acceptors: shape.acceptors,
            learners: shape.learners,
            proposers: shape.proposers,
            latency_us: d.fabric.filter(|f| !f.is_zero()).map_or(self.latency_us, |f| f.as_secs_f64() * 1e6),
            slots: p.params.slots,
            trim_quorum: p.params.trim_quorum,
            ordered: p.params.ordered,
            timeout_ms: ms(p.params.proposer_timeout),
            gap_timeout_ms: ms(p.params.gap_timeout),
            heartbeat_ms: ms(p.params.heartbeat),
            ..self
        })
    }

    /// Checks every field and says how to fix what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        use crate::parse::within;
        use innet_core::limits::{OUTSTANDING_MAX, PROPOSERS_MAX};
        within("--acceptors", self.acceptors, 1, innet_paxos::MAX_ACCEPTORS, "MAX_ACCEPTORS")?;
        within("--learners", self.learners, 1, innet_paxos::MAX_LEARNERS, "MAX_LEARNERS")?;
        within("--proposers", self.proposers, 1, PROPOSERS_MAX, "PROPOSERS_MAX")?;
        within("--outstanding", self.outstanding, 1, OUTSTANDING_MAX, "OUTSTANDING_MAX")?;
        if !(1..=innet_paxos::envelope::PACK_MAX).contains(&self.pack) {
            return Err(format!("--pack {} must be from 1 (off) to {}", self.pack, innet_paxos::envelope::PACK_MAX));
        }
        if self.trim_quorum > self.learners {
            return Err(format!("--trim-quorum {} exceeds --learners {}", self.trim_quorum, self.learners));
        }
        if !self.slots.is_power_of_two() {
            return Err(format!("--slots {} must be a power of two", self.slots));
        }
        self.faults.validate()?;
        for (name, v) in [
            ("duration-s", self.duration_s),
            ("timeout-ms", self.timeout_ms),
            ("gap-timeout-ms", self.gap_timeout_ms),
            ("heartbeat-ms", self.heartbeat_ms),
        ] {
            if !(v > 0.0 && v.is_finite()) {
                return Err(format!("--{name} {v} must be > 0"));
            }
        }
        Ok(())
    }

    pub fn quorum(&self) -> usize {
        innet_paxos::majority(self.acceptors)
    }

    pub fn trim_quorum(&self) -> usize {
        innet_paxos::trim_quorum(self.trim_quorum, self.learners)
    }
}

/// One run's result: configuration, provenance, figures.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PaxosResult {
    pub experiment: String,
    pub runtime: crate::Runtime,
    #[serde(flatten)]
    pub config: PaxosConfig,
    pub git_commit: String,
    /// Requests whose value a quorum of acceptors voted for.
    pub committed: u64,
    pub committed_per_s: f64,
    /// Values sent to the coordinator that committed, per second (equal to
    /// `committed_per_s` without packing; each carried several requests
    /// with it).
    #[serde(default)]
    pub instances_per_s: f64,
    pub mean_latency_us: f64,
    pub std_latency_us: f64,
    pub p50_latency_us: f64,
    pub p99_latency_us: f64,
    /// The latency distribution: the 0, 5, 10, ..., 100th percentiles (us).
    #[serde(default)]
    pub latency_quantiles_us: Vec<f64>,
    /// Committed requests per `bin_ms` window, from the start.
    pub timeline_bin_ms: f64,
    pub timeline: Vec<u64>,
    /// Deliveries at the first learner (values, no-ops, duplicates).
    pub delivered: u64,
    pub noops: u64,
    pub duplicates: u64,
    /// When the backup coordinator took over, if it did.
    pub takeover_at_s: Option<f64>,
    /// Longest time without a commit after the failure (ms), if one happened.
    pub failover_gap_ms: Option<f64>,
    pub run_seconds: f64,
    pub wall_seconds: f64,
}

/// Latency figures over nanosecond samples: mean, std, p50, p99 (us).
pub fn latency_us(samples_ns: &[u64]) -> (f64, f64, f64, f64) {
    if samples_ns.is_empty() {
        return (0.0, 0.0, 0.0, 0.0);
    }
    let mut s = samples_ns.to_vec();
    s.sort_unstable();
    let n = s.len() as f64;
    let mean = s.iter().map(|&x| x as f64).sum::<f64>() / n;
    let var = s.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
    let pct = |p: f64| s[(((p / 100.0) * n).ceil() as usize).clamp(1, s.len()) - 1] as f64 / 1e3;
    (mean / 1e3, var.sqrt() / 1e3, pct(50.0), pct(99.0))
}

/// The 0, 5, ..., 100th percentiles (nearest rank) of nanosecond samples, in us.
pub fn latency_quantiles_us(samples_ns: &[u64]) -> Vec<f64> {
    if samples_ns.is_empty() {
        return vec![];
    }
    let mut s = samples_ns.to_vec();
    s.sort_unstable();
    (0..=20)
        .map(|q| {
            let rank = ((q as f64 / 20.0) * s.len() as f64).ceil() as usize;
            s[rank.clamp(1, s.len()) - 1] as f64 / 1e3
        })
        .collect()
}

/// Commits per bin of `bin_ns`, over `[0, end_ns)`.
pub fn timeline(commit_times_ns: &[u64], bin_ns: u64, end_ns: u64) -> Vec<u64> {
    let bins = end_ns.div_ceil(bin_ns).max(1) as usize;
    let mut t = vec![0u64; bins];
    for &c in commit_times_ns {
        let b = (c / bin_ns) as usize;
        if b < bins {
            t[b] += 1;
        }
    }
    t
}

/// The longest stretch without a commit that starts at or after `from_ns`
/// (the outage a failure caused), in ms.
pub fn longest_gap_ms(commit_times_ns: &[u64], from_ns: u64) -> f64 {
    let mut s: Vec<u64> = commit_times_ns.to_vec();
    s.sort_unstable();
    let mut prev = from_ns;
    let mut gap = 0;
    for &c in s.iter().filter(|&&c| c >= from_ns) {
        gap = gap.max(c - prev);
        prev = c;
    }
    gap as f64 / 1e6
}

#[cfg(test)]
mod flag_tests {
    use super::*;

    #[test]
    fn the_flags_defaults_are_the_configs_defaults() {
        #[derive(clap::Parser)]
        struct Wrap {
            #[command(flatten)]
            point: PaxosConfig,
        }
        let parsed = <Wrap as clap::Parser>::try_parse_from(["innet"]).unwrap();
        assert_eq!(parsed.point, PaxosConfig::default());
        let unordered = <Wrap as clap::Parser>::try_parse_from(["innet", "--unordered"]).unwrap();
        assert!(!unordered.point.ordered);
    }
}
