//! The commands of the experiments and of the live transaction service
//! (`innet sim|bench|check|client|up|store|switch|topology|demo`, all but
//! the XDP ones): each one's flags (`clap::Args`) and the function the
//! `innet` program calls, which runs it and prints its report. What they
//! share is here; each service's commands are in its own module.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use innet_live::metrics::Sources;
use innet_live::topology::{self, Topology};

pub mod chain;
pub mod live;
pub mod paxos;
pub mod tpcc;
pub mod txn;

pub fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    topology::resolve(s).map_err(|e| format!("{e:#}"))
}

pub fn print_line(s: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{s}");
    let _ = out.flush();
}

/// `--auth-key FILE` read and checked: one line naming the file and the fault.
pub fn read_auth_key(file: Option<&std::path::Path>) -> anyhow::Result<Option<innet_core::auth::AuthKeys>> {
    file.map(|f| innet_live::auth::read_key_file(f).map_err(anyhow::Error::msg)).transpose()
}

/// A deployment from a topology file, for every `innet up` service.
#[derive(Args, Debug, Clone)]
pub struct TopologyArgs {
    /// Start the nodes of this topology file (docs/live.md); its load nodes
    /// (clients, proposers) run load. The service's other flags are ignored.
    #[arg(long)]
    pub topology: Option<PathBuf>,
    /// With --topology: start only this node, or every node of this machine.
    #[arg(long, requires = "topology")]
    pub only: Option<String>,
    /// With --topology: seed of the load nodes' workloads.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// With --topology: MACHINE=IP: every node of MACHINE binds on IP and is
    /// reached there, on the file's port (repeat per machine; the file's
    /// addresses are for one machine's loopback, each host here has its own).
    #[arg(long, value_name = "MACHINE=IP", requires = "topology", value_parser = parse_place)]
    pub place: Vec<(String, std::net::IpAddr)>,
}

/// The seeds of a check (`innet check txn|tpcc|paxos|chain`, declared once):
/// `--seeds N` from `--start-seed`, or `--seed S` alone, replayed with
/// everything printed.
#[derive(Args, Debug, Clone, Copy)]
pub struct CheckSeeds {
    /// How many random seeds to run, each in every mode, protocol or
    /// deployment [default: 100; `check tpcc`: 50].
    #[arg(long, value_parser = crate::parse::check_seeds)]
    pub seeds: Option<u64>,
    /// First seed.
    #[arg(long, default_value_t = 1)]
    pub start_seed: u64,
    /// Replay just this seed (prints the configuration and every violation).
    #[arg(long)]
    pub seed: Option<u64>,
}

/// The flags of the transaction checks (`innet check txn` and `innet
/// check tpcc`, declared once): their seeds, the switch modes each seed
/// runs in, and a run's simulated length.
#[derive(Args, Debug)]
pub struct CheckModesArgs {
    #[command(flatten)]
    pub seeds: CheckSeeds,
    /// Comma-separated modes.
    #[arg(long, value_delimiter = ',', default_value = "forward,read-cache,early-abort,optimistic-abort", value_parser = crate::parse::mode())]
    pub modes: Vec<innet_txn::Mode>,
    /// Simulated seconds per run.
    #[arg(long, default_value_t = 5.0, value_parser = crate::parse::seconds)]
    pub duration_s: f64,
}

/// A check's seeds when `--seeds` is not given.
pub const CHECK_SEEDS: u64 = 100;
/// `check tpcc`'s seeds when `--seeds` is not given (a TPC-C run is longer).
pub const CHECK_TPCC_SEEDS: u64 = 50;

impl CheckSeeds {
    /// The seeds to run (`count` of them unless `--seeds` says), and
    /// whether to print everything (a replay).
    pub fn range(&self, count: u64) -> (crate::parse::Seeds, bool) {
        match self.seed {
            Some(s) => (crate::parse::Seeds::one(s), true),
            None => (crate::parse::Seeds { first: self.start_seed, count: self.seeds.unwrap_or(count) }, false),
        }
    }
}

/// `--metrics ADDR`, for every long-running process.
#[derive(Args, Debug, Clone, Default)]
pub struct MetricsArgs {
    /// Serve every counter of the nodes this process runs over HTTP at
    /// ADDR (HOST:PORT, port 0: any free port), `GET /metrics`, in the
    /// Prometheus text format, read live at each scrape (docs/live.md).
    #[arg(long, value_name = "ADDR", value_parser = crate::parse::listen_addr)]
    pub metrics: Option<SocketAddr>,
}

/// `MACHINE=IP`.
pub fn parse_place(s: &str) -> Result<(String, std::net::IpAddr), String> {
    let form = "expected MACHINE=IP, e.g. edge0=10.0.0.3";
    let (m, ip) = s.split_once('=').ok_or_else(|| format!("'{s}': {form}"))?;
    if m.is_empty() {
        return Err(format!("'{s}': no machine name; {form}"));
    }
    let ip = ip.parse().map_err(|_| format!("'{s}': '{ip}' is not an IP address; {form}"))?;
    Ok((m.to_string(), ip))
}

/// A number of seconds > 0.
/// `innet up SERVICE --topology FILE [--only NAME]`: starts this machine's
/// nodes, prints `NAME HOST:PORT` for each, runs load nodes for
/// `load.duration` (or until Ctrl-C), then prints every counter and each
/// load group's result.
/// `auth_key` (`--auth-key`) replaces the file's `auth_key`.
pub fn run_topology(
    t: &TopologyArgs,
    metrics: &MetricsArgs,
    service: &str,
    auth_key: Option<&std::path::Path>,
    mut load: innet_live::up::UpLoad,
) -> anyhow::Result<i32> {
    let path = t.topology.as_ref().expect("called with --topology");
    let mut topo = Topology::load(path)?;
    topo.place(&t.place)?;
    if let Some(k) = auth_key {
        topo.auth_key = Some(k.to_path_buf());
    }
    anyhow::ensure!(
        topo.service.name() == service,
        "{} is a {} topology: run `innet up {}`",
        path.display(),
        topo.service.name(),
        topo.service.name()
    );
    load.seed = t.seed;
    let stop = innet_live::stop_on_signals()?;
    let up = innet_live::up::start_servers(topo, t.only.as_deref(), &stop)?;
    let sources = Sources::default();
    let names = up.topology.names();
    up.started.nodes.iter().for_each(|(i, n)| sources.running(&names[*i], n));
    let _metrics = innet_live::metrics::serve(metrics.metrics, &sources)?;
    for (name, addr) in up.addresses() {
        print_line(&format!("{name} {addr}"));
    }
    tracing::info!("started {} node(s) of {}. Ctrl-C to stop.", up.addresses().len(), path.display());
    let report = up.run(&load, &stop)?;
    for (node, k, v) in &report.counters {
        print_line(&format!("{node}.{k} {v}"));
    }
    for l in &report.loads {
        print_line(&l.to_json().to_string());
    }
    Ok(0)
}
