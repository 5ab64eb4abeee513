//! The XDP benchmarks on the namespace testbed (root; docs/xdp.md): `innet
//! bench xdp` (round trip of an optimistic abort through the XDP switch, a
//! bare XDP bounce and the software switch), `innet bench xdp-txn` (the
//! transaction experiment through the XDP and the software switch) and
//! `innet bench xdp-chain` (the XDP chain, a bounce and the software
//! chain). Each runs its data planes side by side, builds its record
//! (configuration, git commit, every plane, the ratios between them) and
//! appends it to a JSON lines file. `bench xdp-txn` also measures its
//! generator's ceiling in the same run ([`txn_ceiling`]).

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use serde::Serialize;

use innet_chain::Protocol;
use innet_core::deploy::DataPlaneAt;
use innet_txn::switch::Mode;
use innet_xdp::bench::{self, summarize, BenchConfig, DownOnDrop, Summary, TxnExperimentConfig};
use innet_xdp::chain_bench::{probe, ChainBenchConfig, Workload, KEYS};
use innet_xdp::chain_testbed::{self as tb, ChainUp, Multicast, CLIENT_IP};
use innet_xdp::testbed::{in_netns, NS_CLIENT};
use innet_xdp::txn::{Ports, Program, Tables, TxnXdp};

use crate::paxos::load_average;
use innet_bench::cpu::{CpuPerValue, CpuSnapshot, CpuUse};
use innet_bench::loadgen::{self, EchoService, LoadConfig, LoadReport};
use innet_exp::results;
use innet_exp::txn_client::{self, ClientLoad};

const _: () = assert!(KEYS <= tb::NETCHAIN_KEYS_INSTALLED);

/// The `innet bench xdp` record (`xdp-rtt.jsonl`).
#[derive(Debug, Serialize)]
pub struct RttRecord {
    pub experiment: &'static str,
    pub config: BenchConfig,
    /// No randomness in this benchmark; recorded for the common schema.
    pub seed: u64,
    pub git_commit: String,
    /// `xdp-bounce`, `xdp-switch`, `software-switch`, `udp-echo`.
    pub planes: Vec<Summary>,
    pub ratio_median_xdp_switch_over_bounce: f64,
    pub ratio_p99_xdp_switch_over_bounce: f64,
    pub ratio_median_software_over_xdp_switch: f64,
    pub ratio_p99_software_over_xdp_switch: f64,
    /// The software switch's abort round trip over a bare UDP echo's.
    pub ratio_median_software_over_udp_echo: f64,
    pub ratio_p99_software_over_udp_echo: f64,
    pub ratio_rate_xdp_switch_over_bounce: f64,
    pub ratio_rate_xdp_switch_over_software: f64,
}

/// Whether every plane measured something and no reply had the wrong status.
pub fn planes_ok(planes: &[Summary]) -> bool {
    !planes.iter().any(|s| s.wrong_status > 0 || s.samples == 0)
}

/// `innet bench xdp`: the three planes in interleaved rounds on a fresh
/// `txn` testbed (removed after), the record appended to `out/xdp-rtt.jsonl`;
/// the record and that path.
pub fn bench_rtt(cfg: &BenchConfig, innet_exe: &Path, out: &Path) -> anyhow::Result<(RttRecord, PathBuf)> {
    let planes = bench::run(cfg, innet_exe)?;
    let (bounce, xdp, sw, echo) = (&planes[0], &planes[1], &planes[2], &planes[3]);
    let rec = RttRecord {
        experiment: "xdp-rtt-optimistic-abort",
        config: cfg.clone(),
        seed: 0,
        git_commit: results::git_commit(),
        ratio_median_xdp_switch_over_bounce: xdp.median_us / bounce.median_us,
        ratio_p99_xdp_switch_over_bounce: xdp.p99_us / bounce.p99_us,
        ratio_median_software_over_xdp_switch: sw.median_us / xdp.median_us,
        ratio_p99_software_over_xdp_switch: sw.p99_us / xdp.p99_us,
        ratio_median_software_over_udp_echo: sw.median_us / echo.median_us,
        ratio_p99_software_over_udp_echo: sw.p99_us / echo.p99_us,
        ratio_rate_xdp_switch_over_bounce: xdp.replies_per_s / bounce.replies_per_s,
        ratio_rate_xdp_switch_over_software: xdp.replies_per_s / sw.replies_per_s,
        planes,
    };
    let path = out.join("xdp-rtt.jsonl");
    results::append_jsonl(&path, std::slice::from_ref(&rec))?;
    Ok((rec, path))
}

/// One line of `xdp-txn.jsonl`: a data plane's load result in one round.
#[derive(Debug, Serialize)]
pub struct TxnRecord {
    pub experiment: &'static str,
    /// The round (the planes take turns within each).
    pub run: usize,
    pub config: TxnExperimentConfig,
    pub seed: u64,
    pub git_commit: String,
    /// `xdp-switch` or `software-switch` ([`bench::txn_plane_name`]).
    #[serde(serialize_with = "txn_plane")]
    pub data_plane: DataPlaneAt,
    /// CPU per committed transaction over the load (the whole machine from
    /// /proc/stat: clients, switch, store, kernel; this process: the
    /// clients).
    pub cpu: CpuPerValue,
    /// The load average when the round ended (1, 5, 15 minutes).
    pub load_average: [f64; 3],
    /// The load client's summary (`innet client txn --load`'s JSON).
    pub result: serde_json::Value,
    /// The generator's ceiling measured in the same run
    /// ([`txn_ceiling`]), and this data plane's replies per second against it.
    pub ceiling: TxnCeiling,
}

fn txn_plane<S: serde::Serializer>(plane: &DataPlaneAt, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(bench::txn_plane_name(*plane))
}

/// A data plane's round trips beside the generator's ceiling.
#[derive(Clone, Debug, Serialize)]
pub struct TxnCeiling {
    /// The batched generator ([`innet_bench::loadgen`]) at the experiment's
    /// concurrency and request length, answered by `xdp_bounce` on the
    /// switch's client port.
    pub ceiling: LoadReport,
    /// Replies the clients received per second (every transaction takes at
    /// least one; aborts and resends take more).
    pub replies_per_s: f64,
    pub of_ceiling: f64,
    pub generator_bound: bool,
}

/// The generator's ceiling for `clients` closed-loop clients towards `to`
/// (an echo there answers): the batched generator with requests as long
/// as a one-operation transaction's.
pub fn txn_ceiling(clients: u32, to: SocketAddr, duration_s: f64) -> anyhow::Result<LoadReport> {
    let cfg = LoadConfig::new(clients.max(1), vec![to], Duration::from_secs_f64(duration_s.max(0.5)));
    Ok(loadgen::run(&cfg, vec![EchoService { len: txn_client::request_len(), targets: 1 }])?.0)
}

/// Per round of `recs` ([`bench_txn`]'s): the XDP switch over the
/// software switch in committed/s, p50 and p99 latency.
pub fn txn_ratios(recs: &[TxnRecord]) -> Vec<(f64, f64, f64)> {
    let runs = recs.iter().map(|r| r.run).max().map_or(0, |m| m + 1);
    (0..runs)
        .filter_map(|run| {
            let plane = |dp: DataPlaneAt| recs.iter().find(|r| r.run == run && r.data_plane == dp);
            let (x, s) = (plane(DataPlaneAt::Xdp)?, plane(DataPlaneAt::Switch)?);
            let over = |k: &str| x.num(k) / s.num(k);
            Some((over("committed_per_s"), over("p50_latency_ms"), over("p99_latency_ms")))
        })
        .collect()
}

impl TxnRecord {
    /// A number of the result (NaN if absent).
    pub fn num(&self, key: &str) -> f64 {
        self.result[key].as_f64().unwrap_or(f64::NAN)
    }
}

/// `innet bench xdp-txn`: `runs` rounds of the closed-loop clients
/// through the XDP switch, then the software switch, each on a fresh `txn`
/// testbed, the load run on threads in the client namespace, then the
/// generator's ceiling; the records (per round, XDP first), appended to
/// `out/xdp-txn.jsonl`, and that path.
pub fn bench_txn(
    cfg: &TxnExperimentConfig,
    runs: usize,
    innet_exe: &Path,
    out: &Path,
) -> anyhow::Result<(Vec<TxnRecord>, PathBuf)> {
    anyhow::ensure!(runs >= 1, "--runs must be at least 1");
    let load = |to: SocketAddr| {
        let d = ClientLoad::new(to);
        let mut sending = d.sending.clone();
        sending.client_delay_ms = cfg.client_delay_ms;
        let l = ClientLoad {
            sending,
            clients: cfg.clients,
            write_ratio: cfg.write_ratio,
            keys: cfg.keys,
            duration_s: cfg.duration_s,
            seed: cfg.seed,
            ..d
        };
        let before = CpuSnapshot::now();
        let json = txn_client::load(&l, &innet_live::Stop::new())?.json;
        let cpu = before.used().per_value(json["committed"].as_u64().unwrap_or(0));
        Ok((json, cpu))
    };
    let mut recs = vec![];
    for run in 0..runs {
        recs.extend(txn_round(cfg, run, innet_exe, &load)?);
    }
    let path = out.join("xdp-txn.jsonl");
    results::append_jsonl(&path, &recs)?;
    Ok((recs, path))
}

type TxnLoad<'a> = dyn Fn(SocketAddr) -> anyhow::Result<(serde_json::Value, CpuPerValue)> + Sync + 'a;

/// One round of `bench xdp-txn`: both planes, then the ceiling.
fn txn_round(
    cfg: &TxnExperimentConfig,
    run: usize,
    innet_exe: &Path,
    load: &TxnLoad<'_>,
) -> anyhow::Result<Vec<TxnRecord>> {
    let planes = bench::run_txn_experiment(cfg, innet_exe, load)?;
    let ceiling = bench::run_txn_ceiling(cfg, innet_exe, |to| txn_ceiling(cfg.clients, to, cfg.duration_s))?;
    let commit = results::git_commit();
    let load_average = load_average();
    Ok(planes
        .into_iter()
        .map(|(plane, (r, cpu))| {
            let replies_per_s =
                r["packets_received"].as_f64().unwrap_or(0.0) / r["run_seconds"].as_f64().unwrap_or(f64::NAN).max(1e-9);
            TxnRecord {
                experiment: "xdp-txn",
                run,
                config: cfg.clone(),
                seed: cfg.seed,
                git_commit: commit.clone(),
                data_plane: plane,
                cpu,
                load_average,
                result: r,
                ceiling: TxnCeiling {
                    ceiling: ceiling.clone(),
                    replies_per_s,
                    of_ceiling: replies_per_s / ceiling.ops_per_s.max(1e-9),
                    generator_bound: loadgen::generator_bound(replies_per_s, ceiling.ops_per_s),
                },
            }
        })
        .collect())
}

/// The `innet bench xdp-chain` record (`xdp-chain.jsonl`).
#[derive(Debug, Serialize)]
pub struct ChainRecord {
    pub experiment: &'static str,
    pub config: ChainBenchConfig,
    /// No randomness in this benchmark; recorded for the common schema.
    pub seed: u64,
    pub git_commit: String,
    /// `xdp-bounce`, `xdp-chain-write`, `xdp-chain-read`,
    /// `software-chain-write`, `software-chain-read`.
    pub planes: Vec<Summary>,
    /// CPU per completed request of each plane over its rounds (the
    /// whole machine; this process: the probe, and the software chain's
    /// switches, which run as its threads).
    pub cpu: Vec<(String, CpuPerValue)>,
    pub load_average: [f64; 3],
    pub ratio_median_xdp_write_over_bounce: f64,
    pub ratio_median_software_write_over_xdp_write: f64,
    pub ratio_median_software_read_over_xdp_read: f64,
    pub ratio_rate_xdp_write_over_software_write: f64,
    pub ratio_rate_xdp_read_over_software_read: f64,
}

/// The XDP chain's and the software chain's workloads: (write, read).
fn chain_workloads(
    protocol: Protocol,
    heads: [SocketAddr; 2],
    tails: [SocketAddr; 2],
    stacks: [Vec<u32>; 2],
) -> Vec<Workload> {
    let mut v = vec![];
    for k in 0..2 {
        let w = Workload { protocol, write: true, to: heads[k], stack: stacks[k].clone(), any_reply: false };
        let read = match protocol {
            Protocol::NetCraq => Workload { write: false, ..w.clone() },
            Protocol::NetChain => {
                Workload { write: false, to: tails[k], stack: vec![*stacks[k].last().expect("a node")], ..w.clone() }
            }
        };
        v.push(w);
        v.push(read);
    }
    v
}

/// `innet bench xdp-chain`: the software chain (innet-live's switches on
/// loopback) and the XDP chain on the chain testbed (removed after; the
/// NetCRAQ tail's ACKs by `multicast`), with a bare bounce on the head's
/// port, in interleaved rounds; the record, appended to
/// `out/xdp-chain.jsonl`, and that path.
pub fn bench_chain(
    protocol: Protocol,
    nodes: usize,
    multicast: Multicast,
    rounds: &BenchConfig,
    out: &Path,
) -> anyhow::Result<(ChainRecord, PathBuf)> {
    let max = tb::NODES_MAX.min(innet_wire::netchain::MAX_CHAIN_NODES);
    anyhow::ensure!((1..=max).contains(&nodes), "--nodes must be 1..={max}");
    let multicast_name = match multicast {
        Multicast::Devmap => "devmap",
        Multicast::Tc => "tc",
    };
    let cfg = ChainBenchConfig {
        protocol: protocol.name().into(),
        nodes,
        multicast: multicast_name.into(),
        rounds: rounds.clone(),
    };
    let port = tb::udp_port(protocol);

    // The software chain: innet-live's switches on loopback.
    let stop = innet_live::Stop::new();
    let mut live_cfg = innet_live::chain::LiveChainConfig::new(protocol, nodes);
    live_cfg.keys = KEYS;
    let live = innet_live::chain::LiveChain::start(live_cfg, &stop)?;
    let sw = live.addrs();

    // The XDP chain on the testbed, and the bounce for the head's port.
    let o = ChainUp { fabric: rounds.fabric, multicast, ..ChainUp::new(protocol, nodes) };
    tb::up(&o, None)?;
    let _down = DownOnDrop;
    let xdp_nodes = tb::attach_nodes(&o)?;
    let bounce = port_bounce(port)?;

    let xdp_addr = |i: usize| SocketAddr::V4(SocketAddrV4::new(tb::node_ip(i), port));
    let last = nodes - 1;
    let w = chain_workloads(
        protocol,
        [xdp_addr(0), sw[0]],
        [xdp_addr(last), sw[last]],
        [
            (0..nodes).map(|i| u32::from(tb::node_ip(i))).collect(),
            (0..nodes as u32).map(innet_chain::client::node_addr).collect(),
        ],
    );
    let (xdp_write, xdp_read, sw_write, sw_read) = (&w[0], &w[1], &w[2], &w[3]);
    let bounce_w = Workload { any_reply: true, ..xdp_write.clone() };
    let in_client = |w: &Workload| in_netns(NS_CLIENT, || probe(&cfg.rounds, w, CLIENT_IP));
    let rc = &cfg.rounds;
    let mut t = ChainTally::default();
    for _ in 0..cfg.rounds.rounds {
        tb::attach_to_node(&o.fabric, 0, bounce.program_fd(Program::Bounce)?)?;
        t.measure(0, rc, &|| in_client(&bounce_w).context("bounce"))?;
        tb::attach_to_node(&o.fabric, 0, xdp_nodes[0].xdp_fd()?)?;
        t.measure(1, rc, &|| in_client(xdp_write).context("xdp chain writes"))?;
        t.measure(2, rc, &|| in_client(xdp_read).context("xdp chain reads"))?;
        t.measure(3, rc, &|| probe(rc, sw_write, Ipv4Addr::LOCALHOST).context("software chain writes"))?;
        t.measure(4, rc, &|| probe(rc, sw_read, Ipv4Addr::LOCALHOST).context("software chain reads"))?;
    }
    live.shutdown()?;
    let rec = t.record(cfg);
    let path = out.join("xdp-chain.jsonl");
    results::append_jsonl(&path, std::slice::from_ref(&rec))?;
    Ok((rec, path))
}

/// A bare XDP bounce for UDP `port` (the transaction program's
/// `xdp_bounce`, its forwarding ports unused): the floor the chain's head
/// is measured against.
fn port_bounce(port: u16) -> anyhow::Result<TxnXdp> {
    let bounce = TxnXdp::load(Tables { cache_slots: 4, client_slots: 4 })?;
    let unused = Ipv4Addr::UNSPECIFIED;
    let ports = Ports {
        udp_port: port,
        client_ifindex: 0,
        store_ifindex: 0,
        service_ip: unused,
        store_ip: unused,
        client_port_mac: [0; 6],
        client_mac: [0; 6],
        store_port_mac: [0; 6],
        store_mac: [0; 6],
    };
    bounce.configure(Mode::Forward, &ports)?;
    Ok(bounce)
}

/// The planes of `bench xdp-chain`, in [`ChainTally`]'s order.
const CHAIN_PLANES: [&str; 5] =
    ["xdp-bounce", "xdp-chain-write", "xdp-chain-read", "software-chain-write", "software-chain-read"];

/// What `bench xdp-chain`'s rounds measured, per plane of [`CHAIN_PLANES`].
#[derive(Default)]
struct ChainTally {
    /// Each round's probe result.
    parts: [Vec<innet_xdp::bench::ProbeResult>; 5],
    /// The CPU used while probing it.
    cpu: [CpuUse; 5],
    /// Requests it completed (answered, plus the rate phase's replies).
    ops: [u64; 5],
}

impl ChainTally {
    /// Runs one probe of plane `k` (with `rc`'s request counts), adding
    /// its result, CPU and completed requests.
    fn measure(
        &mut self,
        k: usize,
        rc: &BenchConfig,
        f: &dyn Fn() -> anyhow::Result<innet_xdp::bench::ProbeResult>,
    ) -> anyhow::Result<()> {
        let before = CpuSnapshot::now();
        let r = f()?;
        self.cpu[k] += before.used();
        self.ops[k] += (rc.warmup + rc.requests).saturating_sub(r.lost) as u64 + r.rate_replies;
        self.parts[k].push(r);
        Ok(())
    }

    /// The record: every plane's summary and CPU per request, and the
    /// ratios between them.
    fn record(self, config: ChainBenchConfig) -> ChainRecord {
        let planes: Vec<Summary> = CHAIN_PLANES.iter().zip(&self.parts).map(|(n, p)| summarize(n, p)).collect();
        let cpu: Vec<(String, CpuPerValue)> = CHAIN_PLANES
            .iter()
            .zip(self.cpu.iter().zip(self.ops))
            .map(|(n, (u, k))| (n.to_string(), u.per_value(k)))
            .collect();
        let (b, xw, xr, sww, swr) = (&planes[0], &planes[1], &planes[2], &planes[3], &planes[4]);
        ChainRecord {
            experiment: "xdp-chain",
            seed: 0,
            git_commit: results::git_commit(),
            ratio_median_xdp_write_over_bounce: xw.median_us / b.median_us,
            ratio_median_software_write_over_xdp_write: sww.median_us / xw.median_us,
            ratio_median_software_read_over_xdp_read: swr.median_us / xr.median_us,
            ratio_rate_xdp_write_over_software_write: xw.replies_per_s / sww.replies_per_s,
            ratio_rate_xdp_read_over_software_read: xr.replies_per_s / swr.replies_per_s,
            config,
            planes,
            cpu,
            load_average: load_average(),
        }
    }
}

/// The `innet bench xdp-upcall` record (`xdp-upcall.jsonl`): how decided
/// instances get from XDP to a user-space learner (`innet_xdp::upcall`).
#[derive(Debug, Serialize)]
pub struct UpcallRecord {
    pub experiment: &'static str,
    /// No randomness in this benchmark; recorded for the common schema.
    pub seed: u64,
    pub git_commit: String,
    #[serde(flatten)]
    pub report: innet_xdp::upcall::UpcallReport,
}

/// Runs `innet bench xdp-upcall` (root) and appends its record to
/// `out/xdp-upcall.jsonl`; `say` hears one line per run.
pub fn bench_upcall(
    cfg: &innet_xdp::upcall::UpcallConfig,
    out: &Path,
    say: impl FnMut(&str),
) -> anyhow::Result<(UpcallRecord, PathBuf)> {
    let report = innet_xdp::upcall::run(cfg, say)?;
    let rec = UpcallRecord { experiment: "xdp-upcall", seed: 0, git_commit: results::git_commit(), report };
    let path = out.join("xdp-upcall.jsonl");
    results::append_jsonl(&path, std::slice::from_ref(&rec))?;
    Ok((rec, path))
}
