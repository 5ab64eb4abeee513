//! `innet up ... --topology FILE [--only NAME]`: a topology's nodes on this
//! machine, and load from its load nodes (transaction clients, Paxos
//! proposers, chain clients) for a while.
//!
//! The servers start through [`crate::topology::start`]; the load
//! nodes of this machine run closed-loop workloads until the load time is
//! over; then everything stops and reports. Load nodes reach their
//! neighbours through the same deployment tables as in the simulator.

use std::net::{SocketAddr, UdpSocket};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::chain::{manage, ChainView, ViewedClient};
use crate::deploy::host_options;
use crate::topology::{start, RunningNode, Started, Topology};
use crate::txn::{fresh_client_id_base, wall_clock_req_id};
use crate::{clock, run_hosts, HostOptions, HostStats, Stop};
use anyhow::Context;
use innet_chain::client::{ChainClient, ClientConfig as ChainClientConfig};
use innet_chain::deploy::ChainRole;
use innet_chain::workload::{LoadClient as ChainLoad, Workload as ChainWorkload};
use innet_core::deploy::NodeIx;
use innet_core::rng::Rng;
use innet_core::Counters;
use innet_paxos::deploy::Roles;
use innet_paxos::workload::LoadProposer;
use innet_paxos::Proposer;
use innet_topology::Service;
use innet_txn::deploy::client_ids;
use innet_txn::workload::{LoadClient, LoadStats, Workload};
use innet_txn::{ClientConfig, TxnClient};

/// How long servers keep running after the load stopped, before they stop
/// and report.
pub const LOAD_DRAIN: Duration = Duration::from_millis(300);

/// The load the load nodes run.
#[derive(Clone, Debug)]
pub struct UpLoad {
    /// How long load nodes generate load; `None`: until stopped.
    pub duration: Option<Duration>,
    pub seed: u64,
    /// Transactions.
    pub workload: Workload,
    /// Paxos: requests each proposer keeps in flight ...
    pub outstanding: usize,
    /// ... and the most it packs into one instance's value (1: off).
    pub pack: usize,
    /// Chain: share of writes and keys `0..keys`.
    pub chain_write_ratio: f64,
    pub chain_keys: u32,
}

impl Default for UpLoad {
    /// Until stopped; transactions on one counter, half writes; 8 requests
    /// in flight per proposer; chain: 30% writes over 8 keys.
    fn default() -> UpLoad {
        UpLoad {
            duration: None,
            seed: 1,
            workload: Workload {
                write_ratio: 0.5,
                keys: 1,
                zipf: 0.0,
                think_time: Duration::ZERO,
                span: 1,
                validated_reads: 0.0,
            },
            outstanding: 8,
            pack: 1,
            chain_write_ratio: 0.3,
            chain_keys: 8,
        }
    }
}

/// What one group of load nodes (one machine) did; its JSON form (without
/// `net`) is the line `innet up --topology` prints, which `innet mininet`
/// reads back from each host.
#[derive(Clone, Debug, Default, serde::Deserialize, serde::Serialize)]
pub struct LoadReport {
    pub machine: String,
    pub nodes: usize,
    pub seconds: f64,
    /// Transactions: committed, and aborts by the switch and the store.
    pub committed: u64,
    pub aborts_by_switch: u64,
    pub aborts_by_store: u64,
    /// Chain: reads and writes completed.
    pub reads: u64,
    pub writes: u64,
    #[serde(skip)]
    pub net: HostStats,
}

impl LoadReport {
    /// The line `innet up --topology` prints for this group.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).expect("plain fields");
        v["committed_per_s"] = (self.committed as f64 / self.seconds.max(1e-9)).into();
        v
    }
}

/// Everything `up` reports at the end.
pub struct UpReport {
    /// `(node name, counter, value)` of every node that ran here.
    pub counters: Vec<(String, String, u64)>,
    pub loads: Vec<LoadReport>,
}

/// The running share of a topology.
pub struct Up {
    pub topology: Topology,
    pub started: Started,
}

/// Starts the servers of `topo` that run here (see the module doc).
pub fn start_servers(topo: Topology, only: Option<&str>, stop: &Stop) -> anyhow::Result<Up> {
    let started = start(&topo, only, stop)?;
    Ok(Up { topology: topo, started })
}

impl Up {
    /// `NAME HOST:PORT` of every node that runs here.
    pub fn addresses(&self) -> Vec<(String, SocketAddr)> {
        let names = self.topology.names();
        let mut local: Vec<NodeIx> = self.started.nodes.iter().map(|(i, _)| *i).collect();
        local.extend(self.started.load.iter().map(|(i, _)| *i));
        local.sort_unstable();
        local.into_iter().map(|i| (names[i].clone(), self.started.addrs[i])).collect()
    }

    /// Runs this machine's load nodes (each machine's in one thread) until
    /// `load.duration` has passed or `stop` is set, then stops every node
    /// and reports.
    pub fn run(mut self, load: &UpLoad, stop: &Stop) -> anyhow::Result<UpReport> {
        let machines = self.topology.machines();
        let mut groups: Vec<(String, Vec<(NodeIx, UdpSocket)>)> = vec![];
        for (i, s) in std::mem::take(&mut self.started.load) {
            match groups.iter_mut().find(|(m, _)| *m == machines[i]) {
                Some((_, v)) => v.push((i, s)),
                None => groups.push((machines[i].clone(), vec![(i, s)])),
            }
        }
        let until = load.duration.map(|d| clock::now() + d);
        let mut threads = vec![];
        for (g, (machine, nodes)) in groups.into_iter().enumerate() {
            let (topo, addrs, view) = (self.topology.clone(), self.started.addrs.clone(), self.started.view.clone());
            let (load, stop, auth) = (load.clone(), stop.child(), self.started.auth.clone());
            let name = format!("innet-load-{machine}");
            threads.push(
                std::thread::Builder::new().name(name).spawn(move || {
                    run_group(&topo, &addrs, view, auth, machine, nodes, &load, g as u64, until, &stop)
                })?,
            );
        }
        let mut loads = vec![];
        for t in threads {
            loads.push(t.join().map_err(|_| anyhow::anyhow!("a load thread panicked"))??);
        }
        if !loads.is_empty() {
            // Let what the load left in flight land before the counters are
            // read (a learner a few values behind its peer is still busy).
            let drain = clock::now() + LOAD_DRAIN;
            while !stop.is_stopped() && clock::now() < drain {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        if until.is_none() || loads.is_empty() {
            // Servers only (or load until Ctrl-C): run until stopped.
            while !stop.is_stopped() && !self.started.nodes.iter().any(|(_, n)| n.is_finished()) {
                if until.is_some_and(|u| clock::now() >= u) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        stop.stop();
        Ok(UpReport { counters: self.stop_nodes()?, loads })
    }

    fn stop_nodes(self) -> anyhow::Result<Vec<(String, String, u64)>> {
        let names = self.topology.names();
        let mut out = vec![];
        for (i, node) in self.started.nodes {
            out.extend(stop_counted(node)?.into_iter().map(|(k, v)| (names[i].clone(), k, v)));
        }
        Ok(out)
    }
}

/// Stops `node`; the counters it ends with (none for the coordinator and
/// the acceptors, which publish theirs while they run).
fn stop_counted(node: RunningNode) -> anyhow::Result<Vec<(String, u64)>> {
    let mut out = vec![];
    let mut push = |c: Vec<(String, u64)>| out.extend(c);
    let own = |c: &dyn Counters| c.counters().into_iter().map(|(k, v)| (k.to_string(), v)).collect::<Vec<_>>();
    match node {
        RunningNode::Store(s) => {
            let r = s.shutdown()?;
            let mut c = own(&r.counters);
            c.extend(own(&r.net));
            push(c);
        }
        RunningNode::TxnSwitch(s) => {
            push(s.counters());
            s.shutdown()?;
        }
        RunningNode::ChainSwitch { switch, agent } => {
            push(switch.counters());
            switch.shutdown()?;
            let a = agent.join().map_err(|_| anyhow::anyhow!("agent panicked"))??;
            push(vec![("agent_requests".into(), a.requests), ("agent_dropped_foreign".into(), a.dropped_foreign)]);
        }
        RunningNode::ChainControl(t) => {
            let r = t.join().map_err(|_| anyhow::anyhow!("control plane panicked"))?;
            push(vec![
                ("removals".into(), r.control.stats.removals),
                ("resyncs".into(), r.control.stats.resyncs),
                ("joins".into(), r.control.stats.joins),
                ("views_answered".into(), r.views.answered),
                ("views_limited".into(), r.views.limited),
                ("views_dropped_malformed".into(), r.views.dropped_malformed),
            ]);
        }
        RunningNode::Learner(h) => {
            let s = h.shutdown()?;
            push(vec![
                ("delivered".into(), s.delivered),
                ("duplicates".into(), s.duplicates),
                ("noops".into(), s.noops),
            ]);
        }
        RunningNode::Backup(h) => {
            let b = h.shutdown()?;
            push(vec![
                ("took_over".into(), u64::from(b.active_since().is_some())),
                ("instances_started".into(), b.instances_started),
                ("requests_before_takeover".into(), b.requests_before_takeover),
                ("requests_dropped_full".into(), b.requests_dropped_full),
            ]);
        }
        RunningNode::Coordinator(n) => n.stop(),
        RunningNode::Acceptor(n) => n.stop(),
    }
    Ok(out)
}

/// The transaction deployment `d`'s load clients on `nodes`, issuing
/// `load`'s workload from `start` until `stop_at`.
fn txn_clients(
    d: &innet_txn::deploy::TxnDeployment,
    nodes: &[(NodeIx, UdpSocket)],
    load: &UpLoad,
    rng: &mut Rng,
    (start, stop_at): (innet_core::Time, innet_core::Time),
) -> Vec<LoadClient> {
    let ids = client_ids(d);
    let base = fresh_client_id_base(ids.iter().copied().max().unwrap_or(0) + 1);
    nodes
        .iter()
        .map(|(i, _)| {
            let mut cc = ClientConfig::new(base + ids[*i]);
            cc.first_req_id = wall_clock_req_id();
            LoadClient::new(TxnClient::new(cc), load.workload.clone(), rng.fork(), start, stop_at)
        })
        .collect()
}

/// The Paxos deployment `p`'s proposers on `nodes` (each must be one),
/// submitting `load` until `stop_at`. Each proposer submits with an id of
/// its own block (the coordinators take no other from its address).
fn paxos_proposers(
    p: &innet_topology::PaxosTopology,
    nodes: &[(NodeIx, UdpSocket)],
    load: &UpLoad,
    stop_at: innet_core::Time,
) -> anyhow::Result<Vec<LoadProposer>> {
    let d = &p.deployment;
    let roles = Roles::of(d, innet_paxos::deploy::PaxosParams { pack: load.pack, ..p.params.clone() });
    let incarnation = crate::paxos::fresh_incarnation();
    let index = |i: NodeIx| match d.nodes[i].role {
        innet_paxos::deploy::PaxosRole::Proposer { index } => Ok(index as usize),
        r => Err(anyhow::anyhow!("load node {} is a {}, not a proposer", d.nodes[i].name, r.name())),
    };
    nodes
        .iter()
        .map(|(i, _)| {
            let id = innet_paxos::envelope::proposer_id(index(*i)?, incarnation);
            Ok(LoadProposer::new(Proposer::new(roles.proposer(id)), load.outstanding, stop_at, false))
        })
        .collect()
}

/// `n` load clients of the chain `c` (client ids from `1000 * group`),
/// following `view`, issuing `load`'s reads and writes from `start` until
/// `stop_at`.
fn chain_clients(
    c: &innet_topology::ChainTopology,
    n: usize,
    view: ChainView,
    load: &UpLoad,
    group: u64,
    rng: &mut Rng,
    (start, stop_at): (innet_core::Time, innet_core::Time),
) -> Vec<ViewedClient> {
    let chain_nodes = innet_chain::deploy::chain_nodes(&c.deployment).len();
    (0..n)
        .map(|k| {
            let mut cc = ChainClientConfig::new(c.protocol, k as u32 + 1000 * group as u32, chain_nodes);
            cc.near = k % chain_nodes;
            let w = ChainWorkload {
                write_ratio: load.chain_write_ratio,
                keys: load.chain_keys.min(c.keys.max(1)),
                think: Duration::ZERO,
                start,
                stop: stop_at,
            };
            ViewedClient::new(ChainLoad::new(ChainClient::new(cc), w, rng.fork()), view.clone())
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn run_group(
    topo: &Topology,
    addrs: &[SocketAddr],
    view: Option<ChainView>,
    auth: Option<std::sync::Arc<crate::auth::PeerAuth>>,
    machine: String,
    nodes: Vec<(NodeIx, UdpSocket)>,
    load: &UpLoad,
    group: u64,
    until: Option<innet_core::Time>,
    stop: &Stop,
) -> anyhow::Result<LoadReport> {
    let start = clock::now();
    let stop_at = until.unwrap_or(innet_core::Time(u64::MAX));
    let mut rng = Rng::new(load.seed ^ group.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut report = LoadReport { machine, nodes: nodes.len(), ..LoadReport::default() };
    let endpoints = |d: &dyn Fn(NodeIx) -> HostOptions| -> Vec<(UdpSocket, HostOptions)> {
        nodes.iter().map(|(i, s)| (s.try_clone().expect("clone socket"), d(*i))).collect()
    };
    let net: Vec<HostStats> = match &topo.service {
        Service::Txn(d) => {
            let mut hosts = txn_clients(d, &nodes, load, &mut rng, (start, stop_at));
            let net = run_hosts(&mut hosts, endpoints(&|i| host_options(d, addrs, i)), stop, until)?;
            let mut s = LoadStats::default();
            hosts.iter().for_each(|h| s.merge(&h.stats));
            (report.committed, report.aborts_by_switch, report.aborts_by_store) =
                (s.committed, s.aborts_by_switch, s.aborts_by_store);
            net
        }
        Service::Paxos(p) => {
            let d = &p.deployment;
            let mut hosts = paxos_proposers(p, &nodes, load, stop_at)?;
            let options = |i| HostOptions { auth: auth.clone(), ..crate::paxos::options(d, addrs, i) };
            let net = run_hosts(&mut hosts, endpoints(&options), stop, until)?;
            report.committed = hosts.iter().map(|h| h.latencies_ns.len() as u64).sum();
            net
        }
        Service::Chain(c) => {
            let d = &c.deployment;
            let view = match view {
                Some(v) => v,
                None => follow_remote_view(topo, addrs, stop)?,
            };
            let mut hosts = chain_clients(c, nodes.len(), view, load, group, &mut rng, (start, stop_at));
            let net = run_hosts(&mut hosts, endpoints(&|i| host_options(d, addrs, i)), stop, until)?;
            report.reads = hosts.iter().map(|h| h.load.stats.reads).sum();
            report.writes = hosts.iter().map(|h| h.load.stats.writes).sum();
            net
        }
    };
    report.seconds = clock::now().since(start).as_secs_f64();
    net.iter().for_each(|n| report.net.merge(n));
    Ok(report)
}

/// A chain view kept up to date from the control plane in another process.
pub fn follow_remote_view(topo: &Topology, addrs: &[SocketAddr], stop: &Stop) -> anyhow::Result<ChainView> {
    let Service::Chain(c) = &topo.service else { unreachable!("chain only") };
    let control = c
        .deployment
        .with_role(|r| *r == ChainRole::Control)
        .first()
        .map(|&i| addrs[i])
        .context("a chain needs a node with role \"control\"")?;
    let nodes = innet_chain::deploy::chain_nodes(&c.deployment).len();
    let view: ChainView = Arc::new(Mutex::new((0, (0..nodes).collect())));
    let socket = crate::ports::bind(crate::txn::bind_addr_for(control))?;
    let (v, st) = (view.clone(), stop.clone());
    std::thread::Builder::new()
        .name("innet-chain-view".into())
        .spawn(move || manage::follow_view(socket, control, v, Duration::from_millis(5), &st))?;
    Ok(view)
}
