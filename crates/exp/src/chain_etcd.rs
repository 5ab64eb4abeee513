//! `innet bench chain-etcd`: the live NetCRAQ chain store beside etcd 3.4,
//! both started by the benchmark in the same run.
//!
//! * NetCRAQ: a 3-node chain in this process ([`innet_live::chain::LiveChain`],
//!   registers in memory), loaded by the batched generator
//!   ([`crate::chain_load`]); the generator's ceiling (a bare UDP echo at
//!   the same concurrency) is measured in every repetition.
//! * etcd: 3 members on loopback ([`innet_bench::etcd::EtcdCluster`]), data on
//!   disk (a folder under /var/tmp) and, as a variant, on tmpfs
//!   (/dev/shm), etcd's defaults as shipped, loaded through its native gRPC
//!   API by [`innet_bench::etcd::run_load`] (whose own ceiling is reported as
//!   operations per second of client CPU).
//!
//! Equal closed-loop clients (1, 8, 64 by default), puts and linearizable
//! gets over the same key range; every repetition runs every system in turn
//! (interleaved), and the summary takes the median of the repetitions.
//! Every run is a JSON line with its configuration, seed, git commit and
//! load average.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::chain_load::{self, ChainLoadConfig};
use crate::results::{append_jsonl, git_commit};
use innet_bench::etcd::{self, EtcdCluster, EtcdLoadConfig, EtcdOp};
use innet_bench::loadgen::{self, LoadConfig};

#[derive(Clone, Debug, Serialize)]
pub struct ChainEtcdConfig {
    pub clients: Vec<u32>,
    pub reps: usize,
    pub duration_s: f64,
    pub keys: u32,
    pub seed: u64,
    /// Where the disk-backed etcd cluster keeps its data.
    pub disk_dir: PathBuf,
    /// Where the tmpfs etcd cluster keeps its data (`None`: not run).
    pub tmpfs_dir: Option<PathBuf>,
    /// etcd client connections (each on its own thread), at most the
    /// clients.
    pub etcd_conns: usize,
    pub nodes: usize,
    pub members: usize,
    /// `etcd --version`.
    pub etcd_version: String,
}

impl Default for ChainEtcdConfig {
    fn default() -> ChainEtcdConfig {
        ChainEtcdConfig {
            clients: vec![1, 8, 64],
            reps: 3,
            duration_s: 2.0,
            keys: 1000,
            seed: 1,
            disk_dir: "/var/tmp".into(),
            tmpfs_dir: Some("/dev/shm".into()),
            etcd_conns: 4,
            nodes: 3,
            members: 3,
            etcd_version: etcd::version().unwrap_or_default(),
        }
    }
}

impl ChainEtcdConfig {
    pub fn check(&self) -> Result<(), String> {
        if self.clients.is_empty() || self.clients.iter().any(|c| !(1..=4096).contains(c)) {
            return Err("--clients: a comma-separated list of counts in 1..=4096".into());
        }
        if self.reps == 0 {
            return Err("--reps must be at least 1".into());
        }
        if !(1..=1024).contains(&self.keys) {
            return Err("--keys must be in 1..=1024 (a NetCRAQ chain holds 1024 objects)".into());
        }
        if self.etcd_conns == 0 {
            return Err("--etcd-conns must be at least 1".into());
        }
        ChainLoadConfig::new(1, 0.0, self.keys, self.duration_s).check()
    }
}

/// One measured run.
#[derive(Clone, Debug, Serialize)]
pub struct RunRecord {
    pub bench: &'static str,
    /// "netcraq", "etcd-disk", "etcd-tmpfs", or "ceiling" (the bare UDP echo).
    pub system: String,
    /// "put", "get" ("echo" for the ceiling).
    pub op: &'static str,
    pub clients: u32,
    pub rep: usize,
    pub ops_per_s: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub mean_us: f64,
    pub timeouts: u64,
    pub errors: u64,
    /// etcd: the client's operations per second of its own CPU.
    pub client_ceiling: Option<f64>,
    pub loadavg: String,
    pub seed: u64,
    pub git_commit: String,
    pub config: ChainEtcdConfig,
}

/// Medians of one (system, op, clients) over the repetitions.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub bench: &'static str,
    pub system: String,
    pub op: &'static str,
    pub clients: u32,
    pub ops_per_s: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub client_ceiling: Option<f64>,
    /// NetCRAQ: its median over the generator ceiling's median.
    pub of_ceiling: Option<f64>,
    pub generator_bound: Option<bool>,
    /// NetCRAQ: its ops/s over each etcd variant's.
    pub ratio_vs_etcd_disk: Option<f64>,
    pub ratio_vs_etcd_tmpfs: Option<f64>,
    pub loadavg: String,
    pub seed: u64,
    pub git_commit: String,
}

pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The record of repetition `rep` of `system` running `op` with `clients`
/// clients: its load report `l`, errors and client ceiling.
fn run_record(
    cfg: &ChainEtcdConfig,
    commit: &str,
    (system, op, clients, rep): (&str, &'static str, u32, usize),
    l: &loadgen::LoadReport,
    errors: u64,
    client_ceiling: Option<f64>,
) -> RunRecord {
    RunRecord {
        bench: "chain-etcd",
        system: system.into(),
        op,
        clients,
        rep,
        ops_per_s: l.ops_per_s,
        p50_us: l.p50_us,
        p99_us: l.p99_us,
        mean_us: l.mean_us,
        timeouts: l.timeouts,
        errors,
        client_ceiling,
        loadavg: loadavg(),
        seed: cfg.seed,
        git_commit: commit.to_string(),
        config: cfg.clone(),
    }
}

/// Runs the whole comparison; `each` sees every run as it finishes.
pub fn run(cfg: &ChainEtcdConfig, mut each: impl FnMut(&RunRecord)) -> anyhow::Result<(Vec<RunRecord>, Vec<Summary>)> {
    use innet_chain::Protocol;
    use innet_live::chain::{LiveChain, LiveChainConfig};
    cfg.check().map_err(anyhow::Error::msg)?;
    let stop = innet_live::Stop::new();
    let chain = LiveChain::start(LiveChainConfig::new(Protocol::NetCraq, cfg.nodes), &stop)?;
    let nodes = chain.addrs();
    let mut clusters: Vec<(String, EtcdCluster)> =
        vec![("etcd-disk".into(), EtcdCluster::start(cfg.members, &cfg.disk_dir)?)];
    if let Some(t) = &cfg.tmpfs_dir {
        clusters.push(("etcd-tmpfs".into(), EtcdCluster::start(cfg.members, t)?));
    }
    let commit = git_commit();
    let mut records = vec![];
    let mut record = |system: &str, op, clients, rep, l: &loadgen::LoadReport, errors, client_ceiling| {
        let r = run_record(cfg, &commit, (system, op, clients, rep), l, errors, client_ceiling);
        each(&r);
        records.push(r);
    };
    for rep in 0..cfg.reps {
        for &clients in &cfg.clients {
            let seed = cfg.seed + rep as u64;
            let ccfg = |write_ratio| ChainLoadConfig {
                seed,
                ..ChainLoadConfig::new(clients, write_ratio, cfg.keys, cfg.duration_s)
            };
            // The generator's ceiling at this concurrency.
            let c = ccfg(1.0);
            let lc = LoadConfig {
                threads: c.threads,
                sockets: c.sockets,
                ..LoadConfig::new(clients, nodes.clone(), std::time::Duration::from_secs_f64(cfg.duration_s))
            };
            let ceiling = loadgen::ceiling(&lc, chain_load::REQUEST_LEN)?;
            record("ceiling", "echo", clients, rep, &ceiling, 0, None);
            for (op, ratio, eop) in [("put", 1.0, EtcdOp::Put), ("get", 0.0, EtcdOp::Get)] {
                let r = chain_load::run_without_ceiling(&nodes, &ccfg(ratio))?;
                record("netcraq", op, clients, rep, &r, 0, None);
                for (name, cl) in &clusters {
                    let ecfg = EtcdLoadConfig {
                        op: eop,
                        clients,
                        conns: cfg.etcd_conns,
                        keys: cfg.keys,
                        value_len: innet_wire::netcraq::VALUE_LEN,
                        warmup_s: 0.1,
                        duration_s: cfg.duration_s,
                        seed,
                    };
                    let e = etcd::run_load(&cl.endpoints(), &ecfg)?;
                    record(name, op, clients, rep, &e.load, e.errors, Some(e.client_ceiling_per_cpu_s));
                }
            }
        }
    }
    drop(clusters);
    chain.shutdown()?;
    let summaries = summarize(&records, cfg, &commit);
    Ok((records, summaries))
}

fn summarize(records: &[RunRecord], cfg: &ChainEtcdConfig, commit: &str) -> Vec<Summary> {
    let med = |system: &str, op: &str, clients: u32, f: &dyn Fn(&RunRecord) -> f64| {
        let v: Vec<f64> =
            records.iter().filter(|r| r.system == system && r.op == op && r.clients == clients).map(f).collect();
        (!v.is_empty()).then(|| median(v))
    };
    let mut out = vec![];
    let systems: Vec<String> = {
        let mut s: Vec<String> = vec![];
        for r in records {
            if !s.contains(&r.system) {
                s.push(r.system.clone());
            }
        }
        s
    };
    for &clients in &cfg.clients {
        let ceiling = med("ceiling", "echo", clients, &|r| r.ops_per_s);
        for op in ["echo", "put", "get"] {
            for system in &systems {
                let Some(ops) = med(system, op, clients, &|r| r.ops_per_s) else { continue };
                let is_chain = system == "netcraq";
                let vs = |other: &str| {
                    if is_chain {
                        med(other, op, clients, &|r| r.ops_per_s).map(|e| ops / e.max(1e-9))
                    } else {
                        None
                    }
                };
                out.push(Summary {
                    bench: "chain-etcd",
                    system: system.clone(),
                    op,
                    clients,
                    ops_per_s: ops,
                    p50_us: med(system, op, clients, &|r| r.p50_us).unwrap_or(0.0),
                    p99_us: med(system, op, clients, &|r| r.p99_us).unwrap_or(0.0),
                    client_ceiling: med(system, op, clients, &|r| r.client_ceiling.unwrap_or(f64::NAN))
                        .filter(|x| x.is_finite()),
                    of_ceiling: ceiling.filter(|_| is_chain).map(|c| ops / c.max(1e-9)),
                    generator_bound: ceiling.filter(|_| is_chain).map(|c| loadgen::generator_bound(ops, c)),
                    ratio_vs_etcd_disk: vs("etcd-disk"),
                    ratio_vs_etcd_tmpfs: vs("etcd-tmpfs"),
                    loadavg: loadavg(),
                    seed: cfg.seed,
                    git_commit: commit.to_string(),
                });
            }
        }
    }
    out
}

/// Appends the runs and summaries to `out`/runs.jsonl and
/// `out`/summary.jsonl.
pub fn write(out: &Path, runs: &[RunRecord], summaries: &[Summary]) -> anyhow::Result<(PathBuf, PathBuf)> {
    let (r, s) = (out.join("runs.jsonl"), out.join("summary.jsonl"));
    append_jsonl(&r, runs)?;
    append_jsonl(&s, summaries)?;
    Ok((r, s))
}
