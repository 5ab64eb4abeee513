//! The costs the simulator takes from measurement, not from choice
//! (issue 23, items 3 and 4), kept in the checked-in file
//! [`COSTS_FILE`] with the machine, the date, the commit and the command
//! that regenerates each part:
//!
//! * **CAANS roles** ([`PaxosCosts`], `innet reproduce --calibrate`,
//!   [`measure_paxos`]): the user-space roles measured live on the batched
//!   I/O core (every role a process, at peak load; each thread's CPU time
//!   over the packets it received), the BPF coordinator and acceptor by
//!   `BPF_PROG_TEST_RUN` (XDP + tc entries, median ns per packet). CAANS
//!   Figures 7a, 7b, 8 and Table 4 in the simulator are then predictions
//!   from these costs, not consequences of chosen ones.
//! * **The papers' Python store** ([`StoreCost`],
//!   `tools/gotthard-reference/store_capacity.py`): the Gotthard/NOCC
//!   authors' own `store.py` (NOCC Section 3: "a client program and OCC
//!   transactional storage system in Python"; Section 4: the store ran alone
//!   on a Xeon E5-2603 at 1.6 GHz) at saturation on this machine, its CPU
//!   time per request. NOCC Figures 1, 3 and 4 run with it (the saturated
//!   store of the paper's setup) beside our own store's 2 us per packet.
//!
//! CAANS Figure 2's libpaxos coordinator is not measured here: its cost is
//! the paper's own saturation statement ([`LIBPAXOS_COORDINATOR_US`]).

use std::path::Path;
use std::sync::OnceLock;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use innet_exp::paxos::{DataPlaneAt, PaxosConfig};

/// The checked-in measured costs, relative to the repository root.
pub const COSTS_FILE: &str = "crates/reproduce/measured-costs.json";
static CHECKED_IN: &str = include_str!("../measured-costs.json");

/// The link latency of the CAANS simulator's deployments, us: chosen (a
/// 10G testbed's hop, as the capacity model had it), not measured; it sets
/// absolute latencies, not which role saturates.
pub const PAXOS_LINK_US: f64 = 10.0;

/// CAANS's libpaxos coordinator, us per value: "The client application
/// sends 64-byte messages to the proposer at a peak throughput rate of
/// 69,185 values/sec ... the coordinator is the bottleneck, as it becomes
/// CPU bound" ("Network Hardware-Accelerated Consensus", Section 2.2,
/// Figure 2a): one value per 1/69,185 s of the coordinator's CPU.
pub const LIBPAXOS_COORDINATOR_US: f64 = 1e6 / 69_185.0;

/// Every measured cost, with where and how it was measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeasuredCosts {
    /// The CPU model and cores of the machine.
    pub machine: String,
    pub paxos: PaxosCosts,
    pub store: StoreCost,
}

/// The CAANS roles' costs per packet received.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PaxosCosts {
    /// When (UTC date) and at which commit it was measured.
    pub date: String,
    pub git_commit: String,
    /// The command that regenerates this part.
    pub command: String,
    /// How each figure was obtained.
    pub method: String,
    /// User-space roles, us of thread CPU per packet received (live, every
    /// role a process on the batched I/O core).
    pub coordinator_us: f64,
    pub acceptor_us: f64,
    pub learner_us: f64,
    pub proposer_us: f64,
    /// The live run they come from: committed values/s, instances/s,
    /// each role's CPU (% of one core), packets received per instance per
    /// role (counted by the simulator running the same protocol), load.
    pub live_committed_per_s: f64,
    pub live_instances_per_s: f64,
    pub live_cpu_pct: Vec<(String, f64)>,
    pub received_per_instance: Vec<(String, f64)>,
    pub live_load_average: String,
    /// BPF roles, ns per packet: XDP entry + tc entry, each the median of
    /// `bpf_runs` single `BPF_PROG_TEST_RUN` runs.
    pub bpf_coordinator_ns: f64,
    pub bpf_acceptor_ns: f64,
    pub bpf_runs: u32,
}

/// The papers' Python store at saturation on this machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoreCost {
    pub date: String,
    pub command: String,
    /// What ran: "usi-systems/gotthard pygotthard/store.py (Python 2.7.18)".
    pub store: String,
    /// The store process's CPU per request, us: a compare-and-write that
    /// commits, one that aborts (the store answers with the correction), a read.
    pub commit_us: f64,
    pub abort_us: f64,
    pub read_us: f64,
    /// Requests/s the store answered in each workload (one client socket,
    /// `window` in flight) and its CPU share meanwhile.
    pub requests_per_s: Vec<(String, f64)>,
    pub store_cpu_pct: Vec<(String, f64)>,
    pub window: u32,
    pub load_average: String,
}

impl StoreCost {
    /// The simulator's one store cost per packet, us: the median of the
    /// three workloads' CPU per request (its store model has one cost for
    /// every request).
    pub fn us_per_packet(&self) -> f64 {
        let mut v = [self.commit_us, self.abort_us, self.read_us];
        v.sort_by(f64::total_cmp);
        v[1]
    }

    /// The calibration's sentence for a record.
    pub fn sentence(&self) -> String {
        format!(
            "the papers' own Python store (usi-systems/gotthard store.py; \"Infinite Resources for Optimistic \
             Concurrency Control\", Section 3: store in Python; Section 4: alone on a Xeon E5-2603 at 1.6 GHz) \
             saturated on this machine: {:.0} us of CPU per request (commit {:.0}, abort {:.0}, read {:.0} us; {}, \
             `{}`, {}); a lower bound for the paper's slower CPU",
            self.us_per_packet(),
            self.commit_us,
            self.abort_us,
            self.read_us,
            self.store,
            self.command,
            self.date
        )
    }
}

impl PaxosCosts {
    /// The costliest user-space end host (learner or proposer), us per
    /// packet: the simulator has one cost for every end host.
    pub fn host_us(&self) -> f64 {
        self.learner_us.max(self.proposer_us)
    }

    /// Sets `cfg`'s per-packet costs for its deployment: as processes the
    /// coordinator and the acceptors cost their user-space figures, in the
    /// data plane their BPF figures; learners, proposers and the backup
    /// the costliest end host's.
    pub fn apply(&self, cfg: &mut PaxosConfig) {
        cfg.latency_us = PAXOS_LINK_US;
        cfg.host_cost_us = self.host_us();
        cfg.software_cost_us = self.acceptor_us;
        cfg.switch_cost_us = self.bpf_acceptor_ns / 1e3;
        cfg.coordinator_cost_us = Some(match cfg.data_plane {
            DataPlaneAt::Process => self.coordinator_us,
            _ => self.bpf_coordinator_ns / 1e3,
        });
    }

    /// The measurement, named for a record.
    pub fn sentence(&self) -> String {
        format!(
            "per packet received, user-space roles live on the batched I/O core (coordinator {:.2}, acceptor {:.2}, \
             learner {:.2}, proposer {:.2} us) and BPF roles by BPF_PROG_TEST_RUN (coordinator {:.0}, acceptor {:.0} \
             ns, XDP + tc), measured {} at commit {} by `{}` ({COSTS_FILE}); links {PAXOS_LINK_US} us (chosen)",
            self.coordinator_us,
            self.acceptor_us,
            self.learner_us,
            self.proposer_us,
            self.bpf_coordinator_ns,
            self.bpf_acceptor_ns,
            self.date,
            short(&self.git_commit),
            self.command
        )
    }
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

impl MeasuredCosts {
    /// The checked-in file's costs.
    pub fn checked_in() -> MeasuredCosts {
        serde_json::from_str(CHECKED_IN).expect("crates/reproduce/measured-costs.json parses (a test checks it)")
    }

    /// Costs from a file written by `innet reproduce --calibrate`.
    pub fn load(path: &Path) -> Result<MeasuredCosts> {
        let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("{} is not a measured-costs file", path.display()))
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        std::fs::write(path, serde_json::to_string_pretty(self)? + "\n")
            .with_context(|| format!("write {}", path.display()))
    }
}

static ACTIVE: OnceLock<MeasuredCosts> = OnceLock::new();

/// Makes `costs` the ones every entry of this process uses (`innet
/// reproduce --costs FILE`); false if costs were already in use.
pub fn set_active(costs: MeasuredCosts) -> bool {
    ACTIVE.set(costs).is_ok()
}

/// The costs in use: those given by [`set_active`], else the checked-in ones.
pub fn active() -> &'static MeasuredCosts {
    ACTIVE.get_or_init(MeasuredCosts::checked_in)
}

/// The machine: CPU model and the cores this process may use.
pub fn machine() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{model}, {cores} cores")
}

/// Today's date (UTC), from the system clock.
pub fn today() -> String {
    let days =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() / 86_400) as i64;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Packets each role receives per instance of `cfg`'s protocol, counted by
/// the simulator running it (free processing, 0.2 simulated s): the
/// divisor that turns a role's CPU per instance into CPU per packet.
pub fn received_per_instance(cfg: &PaxosConfig) -> Result<Vec<(String, f64)>> {
    let cfg = PaxosConfig {
        duration_s: 0.2,
        latency_us: PAXOS_LINK_US,
        switch_cost_us: 0.0,
        software_cost_us: 0.0,
        host_cost_us: 0.0,
        coordinator_cost_us: None,
        ..cfg.clone()
    };
    let mut t = innet_exp::paxos_sim::build(&cfg, false).map_err(anyhow::Error::msg)?;
    t.run(innet_core::Time::from_secs_f64(cfg.duration_s), None);
    let r = t.result(innet_exp::Runtime::Sim, cfg.duration_s, 0.0);
    let instances = (r.instances_per_s * cfg.duration_s).max(1.0);
    let stat = |id| t.sim.node_stats(id).processed as f64;
    let mean = |v: Vec<f64>| v.iter().sum::<f64>() / v.len().max(1) as f64 / instances;
    Ok(vec![
        ("coordinator".into(), mean(vec![stat(t.coordinator)])),
        ("acceptor".into(), mean(t.acceptors.iter().map(|&id| stat(id)).collect())),
        ("learner".into(), mean(t.learners.iter().map(|&id| stat(id)).collect())),
        ("proposer".into(), mean(t.proposers.iter().map(|&id| stat(id)).collect())),
    ])
}

/// The store part from `tools/gotthard-reference/store_capacity.py`'s
/// output (its JSON object), with the command that produced it.
pub fn store_from_script(json: &str, command: &str) -> Result<StoreCost> {
    let v: serde_json::Value = serde_json::from_str(json).context("store_capacity.py's output is JSON")?;
    let results = v["results"].as_array().context("no results in store_capacity.py's output")?;
    let get = |kind: &str, field: &str| -> Result<f64> {
        results
            .iter()
            .find(|r| r["workload"] == kind)
            .and_then(|r| r[field].as_f64())
            .with_context(|| format!("no {field} for the {kind} workload"))
    };
    // CPU per request: the store's CPU share over the requests it answered.
    let cpu_us = |kind: &str| -> Result<f64> {
        Ok(get(kind, "store_cpu_pct")? / 1e2 / get(kind, "requests_per_s")?.max(1e-9) * 1e6)
    };
    let kinds = ["commit", "abort", "read"];
    Ok(StoreCost {
        date: today(),
        command: command.into(),
        store: v["store"].as_str().unwrap_or("store.py").into(),
        commit_us: cpu_us("commit")?,
        abort_us: cpu_us("abort")?,
        read_us: cpu_us("read")?,
        requests_per_s: kinds.iter().map(|k| Ok((k.to_string(), get(k, "requests_per_s")?))).collect::<Result<_>>()?,
        store_cpu_pct: kinds.iter().map(|k| Ok((k.to_string(), get(k, "store_cpu_pct")?))).collect::<Result<_>>()?,
        window: v["window"].as_u64().unwrap_or(0) as u32,
        load_average: v["load_average"].as_str().unwrap_or("").into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checked_in_costs_parse_and_are_measured_figures() {
        let c = MeasuredCosts::checked_in();
        for (what, v) in [
            ("coordinator", c.paxos.coordinator_us),
            ("acceptor", c.paxos.acceptor_us),
            ("learner", c.paxos.learner_us),
            ("proposer", c.paxos.proposer_us),
            ("store", c.store.us_per_packet()),
        ] {
            assert!(v.is_finite() && v > 0.0, "{what}: {v}");
        }
        assert!(c.paxos.bpf_coordinator_ns > 0.0 && c.paxos.bpf_acceptor_ns > 0.0);
        assert!(c.paxos.command.starts_with("innet reproduce --calibrate"), "{}", c.paxos.command);
        assert!(c.store.command.contains("store_capacity.py"), "{}", c.store.command);
        assert!(!c.machine.is_empty() && c.paxos.date.len() == 10);
    }

    #[test]
    fn costs_apply_per_deployment() {
        let c = MeasuredCosts::checked_in().paxos;
        let mut p = PaxosConfig { data_plane: DataPlaneAt::Process, ..PaxosConfig::default() };
        c.apply(&mut p);
        assert_eq!(p.coordinator_cost_us, Some(c.coordinator_us));
        assert_eq!(p.software_cost_us, c.acceptor_us);
        let mut s = PaxosConfig { data_plane: DataPlaneAt::Switch, ..PaxosConfig::default() };
        c.apply(&mut s);
        assert_eq!(s.coordinator_cost_us, Some(c.bpf_coordinator_ns / 1e3));
        assert_eq!(s.switch_cost_us, c.bpf_acceptor_ns / 1e3);
        assert_eq!(s.host_cost_us, c.learner_us.max(c.proposer_us));
    }

    #[test]
    fn libpaxos_coordinator_cost_is_the_papers_saturation_point() {
        // 69,185 values/s of one CPU-bound coordinator.
        assert!((1e6 / LIBPAXOS_COORDINATOR_US - 69_185.0).abs() < 1e-6);
    }

    #[test]
    fn received_per_instance_counts_the_protocol() {
        let cfg = PaxosConfig {
            data_plane: DataPlaneAt::Process,
            acceptors: 3,
            learners: 2,
            proposers: 1,
            outstanding: 8,
            duration_s: 0.2,
            seed: 1,
            ..PaxosConfig::default()
        };
        let rx: std::collections::BTreeMap<String, f64> = received_per_instance(&cfg).unwrap().into_iter().collect();
        // Per instance: the coordinator one REQUEST, each acceptor one 2A,
        // each learner a vote from each of the 3 acceptors.
        assert!((rx["coordinator"] - 1.0).abs() < 0.05, "{rx:?}");
        assert!((rx["acceptor"] - 1.0).abs() < 0.05, "{rx:?}");
        assert!((rx["learner"] - 3.0).abs() < 0.15, "{rx:?}");
    }

    #[test]
    fn store_cost_comes_from_the_scripts_output() {
        let json = r#"{"store": "s", "window": 32, "load_average": "1 1 1", "results": [
            {"workload": "commit", "requests_per_s": 5000.0, "store_cpu_pct": 50.0},
            {"workload": "abort", "requests_per_s": 4000.0, "store_cpu_pct": 40.0},
            {"workload": "read", "requests_per_s": 10000.0, "store_cpu_pct": 60.0}]}"#;
        let s = store_from_script(json, "python2 store_capacity.py").unwrap();
        assert!((s.commit_us - 100.0).abs() < 1e-9 && (s.abort_us - 100.0).abs() < 1e-9);
        assert!((s.read_us - 60.0).abs() < 1e-9);
        assert!((s.us_per_packet() - 100.0).abs() < 1e-9);
        assert!(store_from_script("{}", "x").is_err());
    }
}
