//! Chain key-value store commands: `innet check chain`, `innet bench chain`,
//! `innet up chain`.

use std::time::Instant;

use crate::chain_sim;
use clap::Args;
use innet_chain::Protocol;

#[derive(Args, Debug)]
pub struct CheckChainArgs {
    #[command(flatten)]
    seeds: super::CheckSeeds,
    /// Comma-separated protocols.
    #[arg(long, value_delimiter = ',', default_value = "netcraq,netchain", value_parser = crate::parse::protocol())]
    protocols: Vec<Protocol>,
    /// Simulated seconds per run.
    #[arg(long, default_value_t = 1.0, value_parser = crate::parse::seconds)]
    duration_s: f64,
}

pub fn run_check(a: CheckChainArgs) -> anyhow::Result<i32> {
    let protocols = a.protocols.clone();
    let (seeds, verbose) = a.seeds.range(super::CHECK_SEEDS);
    let r = chain_sim::check_seeds(seeds, &protocols, a.duration_s, |run| {
        if verbose {
            println!("{}", serde_json::to_string(&run.config).unwrap_or_default());
            println!("network: {:?}", run.net);
            println!("operations {} removals {} resyncs {}", run.ops, run.removals, run.resyncs);
            println!(
                "outside sender: {:?}; rejected: {} writes not from the predecessor, {} ACKs not from the tail, {} \
                 writes off the chain",
                run.forger, run.rejected_writes, run.rejected_acks, run.rejected_off_chain
            );
        }
    })?;
    for (seed, p, errors, replay) in &r.violations {
        if errors.is_empty() {
            println!("NONDETERMINISM seed {seed} protocol {p}: trace hashes differ (no recorded difference)");
        } else {
            println!("VIOLATION seed {seed} protocol {p}:");
            for e in errors.iter().take(if verbose { usize::MAX } else { 5 }) {
                println!("  {e}");
            }
        }
        println!("  replay: {replay}");
    }
    let f = &r.forger;
    println!(
        "checked {} runs ({} seeds x {} protocols, {} s simulated each; loss, reordering, jitter, node crashes and \
         restarts, an outside sender) in {:.1} s: {} operations ({} reads checked), {} node removals, {} resyncs; \
         outside sender: {} writes at the head, {} NetChain writes at the head off the chain, {} forged writes \
         elsewhere, {} early ACKs, {} replays; rejected: {} writes not from the predecessor, {} ACKs not from the \
         tail, {} writes off the chain; {} violations",
        r.runs,
        r.seeds,
        r.protocols,
        r.duration_s,
        r.wall_seconds,
        r.ops,
        r.reads,
        r.removals,
        r.resyncs,
        f.writes_at_head,
        f.short_writes,
        f.forged_writes,
        f.forged_acks,
        f.replays,
        r.rejected_writes,
        r.rejected_acks,
        r.rejected_off_chain,
        r.violations.len()
    );
    Ok(if r.violations.is_empty() { 0 } else { 1 })
}

#[derive(Args, Debug)]
pub struct BenchChainArgs {
    /// Switch capacity model: "shared" (all switches on one CPU, the paper's BMv2-on-Mininet testbed) or "per-switch".
    #[arg(long, default_value = "shared")]
    service: String,
    /// Simulated seconds per point.
    #[arg(long, default_value_t = 0.2, value_parser = crate::parse::seconds)]
    duration_s: f64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Comma-separated figures to run (3, 4, 5, 6: the NetCRAQ paper's experiments).
    #[arg(long, value_delimiter = ',', default_value = "3,4,5,6", value_parser = crate::parse::one_of::<u32>(["3", "4", "5", "6"]))]
    figures: Vec<u32>,
    /// Output folder (default results/chain-sim-<service>).
    #[arg(long, value_parser = crate::parse::out_dir)]
    out: Option<std::path::PathBuf>,
}

use crate::chain_bench;

pub fn run_bench(a: BenchChainArgs) -> anyhow::Result<i32> {
    let figures = a.figures;
    let configs: Vec<_> = chain_bench::figure_configs(&a.service, a.duration_s, a.seed)
        .into_iter()
        .filter(|(_, c, _)| figures.contains(&c.figure))
        .collect();
    let started = Instant::now();
    println!(
        "{:<4} {:<14} {:>5} {:>8} {:>7} {:>12} {:>12} {:>10} {:>10}",
        "fig", "series", "nodes", "targets", "writes", "offered/s", "replies/s", "mean us", "p99 us"
    );
    let rs = chain_bench::run_all(&configs, |r| {
        println!(
            "{:<4} {:<14} {:>5} {:>8} {:>7.2} {:>12.0} {:>12.0} {:>10.1} {:>10.1}",
            r.config.figure,
            chain_bench::label(r),
            r.config.nodes,
            format!("{:?}", r.config.read_targets).replace(' ', ""),
            r.config.write_ratio,
            r.offered_per_s,
            r.replies_per_s,
            r.mean_latency_us,
            r.p99_latency_us
        );
    })?;
    println!("{} points in {:.1} s", rs.len(), started.elapsed().as_secs_f64());
    for (fig, nodes, craq, chain, paper) in chain_bench::headline_ratios(&rs) {
        println!(
            "figure {fig}, {nodes} nodes, clean reads to the head: NetCRAQ {craq:.0}/s, NetChain {chain:.0}/s: {:.2}x (paper: {paper})",
            craq / chain.max(1e-9)
        );
    }
    let out: std::path::PathBuf = a.out.unwrap_or_else(|| format!("results/chain-sim-{}", a.service).into());
    crate::results::check_writable(&out).map_err(anyhow::Error::msg)?;
    let (jsonl, pngs) = chain_bench::write(&out, &rs)?;
    println!("wrote {} and {} plots in {}", jsonl.display(), pngs.len(), out.display());
    Ok(0)
}

/// `innet bench chain-etcd`.
#[derive(Args, Debug)]
pub struct BenchChainEtcdArgs {
    /// Comma-separated closed-loop client counts (each system gets the same).
    #[arg(long, value_delimiter = ',', default_value = "1,8,64")]
    clients: Vec<u32>,
    /// Interleaved repetitions (the summary is their median).
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Seconds per run (the first 0.1 s are not counted).
    #[arg(long, default_value_t = 2.0)]
    duration_s: f64,
    /// Keys 0..N for both stores.
    #[arg(long, default_value_t = 1000)]
    keys: u32,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Parent folder of the disk-backed etcd cluster's data.
    #[arg(long, default_value = "/var/tmp")]
    disk_dir: std::path::PathBuf,
    /// Parent folder of the tmpfs etcd cluster's data.
    #[arg(long, default_value = "/dev/shm")]
    tmpfs_dir: std::path::PathBuf,
    /// Skip the tmpfs variant.
    #[arg(long)]
    no_tmpfs: bool,
    /// etcd client connections (one thread each; clients share them as gRPC streams).
    #[arg(long, default_value_t = 4)]
    etcd_conns: usize,
    /// Output folder (JSON lines appended to runs.jsonl and summary.jsonl).
    #[arg(long, default_value = "results/chain-etcd", value_parser = crate::parse::out_dir)]
    out: std::path::PathBuf,
}

pub fn run_bench_etcd(a: BenchChainEtcdArgs) -> anyhow::Result<i32> {
    use crate::chain_etcd::{self, ChainEtcdConfig};
    let cfg = ChainEtcdConfig {
        clients: a.clients,
        reps: a.reps,
        duration_s: a.duration_s,
        keys: a.keys,
        seed: a.seed,
        disk_dir: a.disk_dir,
        tmpfs_dir: (!a.no_tmpfs).then_some(a.tmpfs_dir),
        etcd_conns: a.etcd_conns,
        ..ChainEtcdConfig::default()
    };
    cfg.check().map_err(anyhow::Error::msg)?;
    println!(
        "NetCRAQ live chain ({} nodes, in memory) vs etcd {} ({} members, loopback); {} s per run, {} reps, keys 0..{}, seed {}, commit {}, load average {}",
        cfg.nodes,
        innet_bench::etcd::version().unwrap_or_else(|| "(not found)".into()),
        cfg.members,
        cfg.duration_s,
        cfg.reps,
        cfg.keys,
        cfg.seed,
        crate::results::git_commit(),
        chain_etcd::loadavg()
    );
    println!(
        "{:<4} {:<11} {:<5} {:>7} {:>11} {:>9} {:>10} {:>14}",
        "rep", "system", "op", "clients", "ops/s", "p50 us", "p99 us", "load average"
    );
    let (runs, sums) = chain_etcd::run(&cfg, |r| {
        println!(
            "{:<4} {:<11} {:<5} {:>7} {:>11.0} {:>9.1} {:>10.1} {:>14}",
            r.rep, r.system, r.op, r.clients, r.ops_per_s, r.p50_us, r.p99_us, r.loadavg
        );
    })?;
    println!("\nmedian of {} runs:", cfg.reps);
    println!(
        "{:<11} {:<5} {:>7} {:>11} {:>9} {:>10} {:>14} {:>10} {:>10}",
        "system", "op", "clients", "ops/s", "p50 us", "p99 us", "client ceil/s", "vs disk", "vs tmpfs"
    );
    let x = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}x"));
    for s in &sums {
        println!(
            "{:<11} {:<5} {:>7} {:>11.0} {:>9.1} {:>10.1} {:>14} {:>10} {:>10}{}",
            s.system,
            s.op,
            s.clients,
            s.ops_per_s,
            s.p50_us,
            s.p99_us,
            s.client_ceiling.map_or("-".into(), |c| format!("{c:.0}")),
            x(s.ratio_vs_etcd_disk),
            x(s.ratio_vs_etcd_tmpfs),
            match (s.of_ceiling, s.generator_bound) {
                (Some(f), Some(b)) => format!(
                    "  ({:.0}% of the generator's ceiling{})",
                    f * 100.0,
                    if b { ": generator-bound" } else { "" }
                ),
                _ => String::new(),
            }
        );
    }
    let (r, s) = chain_etcd::write(&a.out, &runs, &sums)?;
    println!("appended {} runs to {} and {} summaries to {}", runs.len(), r.display(), sums.len(), s.display());
    Ok(0)
}

/// `innet up chain`: a chain on loopback.
#[derive(Args, Debug)]
pub struct UpChainArgs {
    /// netcraq or netchain.
    #[arg(long, default_value = "netcraq")]
    protocol: String,
    /// Chain length.
    #[arg(long, default_value_t = 4)]
    nodes: usize,
    /// Address of node 0; node i listens on port + i (port 0: any free ports).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: std::net::SocketAddr,
    /// Instead of serving until Ctrl-C: run two clients, kill the middle
    /// node after 1 s, restart it 0.5 s later, report and exit.
    #[arg(long)]
    drill: bool,
    /// Key file (lines `ID HEX`, 32 hex digits; the first seals, at most 2):
    /// every datagram between the chain nodes carries a SipHash-2-4 MAC
    /// trailer, and one from a node's address without it is refused;
    /// clients carry none (docs/security.md). With --topology: `auth_key`
    /// in its [chain] table.
    #[arg(long, value_name = "FILE")]
    auth_key: Option<std::path::PathBuf>,
    #[command(flatten)]
    deployment: super::TopologyArgs,
    #[command(flatten)]
    metrics: super::MetricsArgs,
    /// With --topology: stop after this many seconds (default: at Ctrl-C); client nodes run load until then.
    #[arg(long, value_parser = crate::parse::seconds)]
    duration_s: Option<f64>,
    /// With --topology: share of the client nodes' operations that are puts.
    #[arg(long, default_value_t = 0.3, value_parser = crate::parse::ratio)]
    write_ratio: f64,
    /// With --topology: keys the client nodes use (0..N).
    #[arg(long, default_value_t = 8, value_parser = crate::parse::chain_keys)]
    keys: u32,
}

pub fn run_up(a: UpChainArgs) -> anyhow::Result<i32> {
    let auth = a.auth_key.as_deref().map(innet_live::auth::read_key_file).transpose().map_err(anyhow::Error::msg)?;
    if a.deployment.topology.is_some() {
        anyhow::ensure!(
            auth.is_none(),
            "--auth-key with --topology: write `auth_key = \"FILE\"` in the topology's [chain] table instead"
        );
        return run_up_topology(&a);
    }
    use innet_live::chain::LiveChainConfig;
    let protocol: Protocol = a.protocol.parse().map_err(anyhow::Error::msg)?;
    anyhow::ensure!((1..=innet_wire::netchain::MAX_CHAIN_NODES).contains(&a.nodes), "--nodes must be 1..=10");
    anyhow::ensure!(a.listen.ip().is_loopback(), "--listen must be a loopback address");
    if a.listen.port() != 0 {
        crate::parse::port_span("--listen port", a.listen.port(), a.nodes).map_err(anyhow::Error::msg)?;
    }
    let stop = innet_live::stop_on_signals()?;
    let mut cfg = LiveChainConfig::new(protocol, a.nodes);
    cfg.base = a.listen;
    cfg.auth = auth;
    if a.drill {
        anyhow::ensure!(a.nodes >= 3, "--drill needs at least 3 nodes");
        return run_up_drill(cfg, &stop);
    }
    run_up_chain(cfg, &a, &stop)
}

/// `innet up chain --topology FILE`: the file's deployment, with its
/// clients' load if --duration-s asks for one.
fn run_up_topology(a: &UpChainArgs) -> anyhow::Result<i32> {
    anyhow::ensure!((0.0..=1.0).contains(&a.write_ratio), "--write-ratio {} must be in 0..=1", a.write_ratio);
    anyhow::ensure!(a.keys >= 1, "--keys must be at least 1");
    let load = innet_live::up::UpLoad {
        duration: a.duration_s.map(std::time::Duration::from_secs_f64),
        chain_write_ratio: a.write_ratio,
        chain_keys: a.keys,
        ..innet_live::up::UpLoad::default()
    };
    super::run_topology(&a.deployment, &a.metrics, "chain", None, load)
}

/// `innet up chain --drill`: clients read and write while a middle node
/// is killed, removed, restarted and re-added; exit status 0 if every
/// node ends with the same values and the history is linearizable.
fn run_up_drill(chain: innet_live::chain::LiveChainConfig, stop: &innet_live::Stop) -> anyhow::Result<i32> {
    use innet_live::chain::{run_drill, DrillConfig};
    let (protocol, nodes) = (chain.protocol, chain.nodes);
    let drill = DrillConfig { chain, ..DrillConfig::new(protocol, nodes) };
    let r = run_drill(&drill, stop)?;
    for (i, addr) in r.addrs.iter().enumerate() {
        super::print_line(&format!("node{i} {addr}"));
    }
    let same = r.values.iter().all(|v| *v == r.values[0]);
    let history: Vec<_> = r.loads.iter().flat_map(|l| l.client.history.clone().unwrap_or_default()).collect();
    let lin = innet_chain::check::check(&history);
    println!(
        "killed node{} after {:?}; chain then {:?}; restarted it {:?} later; chain at the end {:?}",
        drill.victim, drill.kill_after, r.members_after_kill, drill.restart_after, r.members_at_end
    );
    println!(
        "interruption: {:.1} ms (longest gap between a client's completions); {} operations after the kill",
        r.interruption.as_secs_f64() * 1e3,
        r.operations_after_kill
    );
    println!("all nodes hold the same values: {same}; history linearizable: {}", lin.is_ok());
    Ok(if same && lin.is_ok() { 0 } else { 1 })
}

/// `innet up chain`: the chain and its control plane, each node's
/// counters on the metrics endpoint, until a signal stops it.
fn run_up_chain(
    cfg: innet_live::chain::LiveChainConfig,
    a: &UpChainArgs,
    stop: &innet_live::Stop,
) -> anyhow::Result<i32> {
    let protocol = cfg.protocol;
    let chain = innet_live::chain::LiveChain::start(cfg, stop)?;
    let sources = innet_live::metrics::Sources::default();
    for i in 0..a.nodes {
        let read = chain.counters_reader();
        sources.add("chain", "chain_node", &format!("node{i}"), move || {
            read(i).map(|(own, stats)| innet_live::metrics::Sample::of_switch(own, &stats))
        });
    }
    let _metrics = innet_live::metrics::serve(a.metrics.metrics, &sources)?;
    for (i, addr) in chain.addrs().iter().enumerate() {
        super::print_line(&format!("node{i} {addr}"));
    }
    tracing::info!(
        "{protocol} chain of {} nodes, head node0, tail node{}; control plane running. Ctrl-C to stop.",
        a.nodes,
        a.nodes - 1
    );
    while !stop.is_stopped() {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let control = chain.shutdown()?;
    tracing::info!("stopped; control plane {:?}", control.stats);
    Ok(0)
}

/// `innet sim chain`: one point of the chain experiment.
#[derive(Args, Debug, Clone)]
pub struct SimChainArgs {
    /// netcraq or netchain.
    #[arg(long, default_value = "netcraq")]
    protocol: String,
    #[arg(long, default_value_t = 4)]
    nodes: usize,
    /// "shared" (one CPU for all switches, the paper's testbed) or "per-switch".
    #[arg(long, default_value = "shared")]
    service: String,
    /// Offered requests per second (open loop).
    #[arg(long, default_value_t = 10_000.0, value_parser = crate::parse::rate)]
    rate: f64,
    /// Fraction of requests that are writes (to the head).
    #[arg(long, default_value_t = 0.0, value_parser = crate::parse::ratio)]
    write_ratio: f64,
    /// Comma-separated chain positions reads go to, round robin (0 = head).
    #[arg(long, value_delimiter = ',', default_value = "0", value_parser = crate::parse::chain_position)]
    targets: Vec<usize>,
    /// NetCRAQ: start every object dirty on the non-tail nodes.
    #[arg(long)]
    dirty: bool,
    #[arg(long, default_value_t = 0.2, value_parser = crate::parse::seconds)]
    duration_s: f64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print one JSON object instead of a sentence.
    #[arg(long)]
    json: bool,
    /// Take the protocol and the chain's length from this topology file (docs/live.md).
    #[arg(long)]
    topology: Option<std::path::PathBuf>,
}

pub fn run_sim(mut a: SimChainArgs) -> anyhow::Result<i32> {
    if let Some(path) = &a.topology {
        let t = innet_live::topology::Topology::load(path)?;
        let innet_topology::Service::Chain(c) = t.service else {
            anyhow::bail!("{} is a {} topology, not a chain one", path.display(), t.service.name());
        };
        a.protocol = c.protocol.name().to_string();
        a.nodes = innet_chain::deploy::chain_nodes(&c.deployment).len();
    }
    let protocol: Protocol = a.protocol.parse().map_err(anyhow::Error::msg)?;
    anyhow::ensure!((1..=innet_wire::netchain::MAX_CHAIN_NODES).contains(&a.nodes), "--nodes must be 1..=10");
    anyhow::ensure!((0.0..=1.0).contains(&a.write_ratio), "--write-ratio must be in 0..=1");
    anyhow::ensure!(a.duration_s > 0.05, "--duration-s must exceed the 0.02 s warm-up");
    let targets = a.targets.clone();
    anyhow::ensure!(
        !targets.is_empty() && targets.iter().all(|t| *t < a.nodes),
        "--targets must name positions < --nodes"
    );
    let cfg = chain_bench::ChainBenchConfig {
        service: a.service.clone(),
        read_targets: targets,
        write_ratio: a.write_ratio,
        dirty: a.dirty,
        offered_rates: vec![a.rate],
        duration_s: a.duration_s,
        seed: a.seed,
        ..chain_bench::ChainBenchConfig::new(protocol, 0, a.nodes)
    };
    let r = chain_bench::run_point(&cfg, a.rate)?;
    if a.json {
        println!("{}", serde_json::to_string(&r)?);
    } else {
        println!(
            "{protocol} {} nodes ({} service), {:.0} requests/s offered ({:.0}% writes): {:.0} replies/s, latency mean {:.1} us p99 {:.1} us, {} queue drops (seed {})",
            a.nodes,
            a.service,
            a.rate,
            a.write_ratio * 100.0,
            r.replies_per_s,
            r.mean_latency_us,
            r.p99_latency_us,
            r.queue_drops,
            a.seed
        );
    }
    Ok(0)
}

/// `innet client chain`: one get or put against a live chain.
#[derive(Args, Debug)]
pub struct ClientChainArgs {
    /// The chain's node addresses, head first, as `innet up chain` prints them: HOST:PORT,HOST:PORT,...
    #[arg(long, value_delimiter = ',', required = true)]
    nodes: Vec<std::net::SocketAddr>,
    /// netcraq or netchain.
    #[arg(long, default_value = "netcraq")]
    protocol: String,
    /// Read KEY.
    #[arg(long, value_name = "KEY", conflicts_with = "put")]
    get: Option<u32>,
    /// Write KEY=VALUE (VALUE at most 16 bytes).
    #[arg(long, value_name = "KEY=VALUE")]
    put: Option<String>,
    /// Which node reads go to first (NetCRAQ: any node answers clean objects).
    #[arg(long, default_value_t = 0)]
    near: usize,
    /// Resend after this long without an answer (to the next node, for reads).
    #[arg(long, default_value_t = 200, value_parser = crate::parse::timeout_ms_u64)]
    timeout_ms: u64,
    /// Give up after this long.
    #[arg(long, default_value_t = 5000, value_parser = crate::parse::timeout_ms_u64)]
    deadline_ms: u64,
    /// Instead of one operation: closed-loop load (NetCRAQ) from --clients
    /// clients for --duration-s, through the batched generator; prints
    /// ops/s, latency percentiles, timeouts and the generator's ceiling (a
    /// bare UDP echo at the same concurrency, measured right after).
    #[arg(long, conflicts_with_all = ["get", "put"])]
    load: bool,
    /// --load: logical clients, one operation outstanding each.
    #[arg(long, default_value_t = 8)]
    clients: u32,
    /// --load: share of operations that are puts (0: only gets, 1: only puts).
    #[arg(long, default_value_t = 0.5)]
    write_ratio: f64,
    /// --load: keys 0..N (a NetCRAQ chain holds 1024 objects).
    #[arg(long, default_value_t = 1000, value_parser = crate::parse::chain_keys)]
    keys: u32,
    /// --load: seconds of load (the first 0.1 s are not counted).
    #[arg(long, default_value_t = 5.0)]
    duration_s: f64,
    /// --load: generator threads (default: 1, the fastest on 2 cores).
    #[arg(long)]
    threads: Option<usize>,
    /// --load: UDP sockets per generator thread.
    #[arg(long, default_value_t = 1)]
    sockets: usize,
    /// --load: random seed (keys, operation mix).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// --load: print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

/// The `--load` flags as a checked configuration (checked with or without
/// `--load`, so a bad number is refused either way).
fn load_config(a: &ClientChainArgs) -> anyhow::Result<crate::chain_load::ChainLoadConfig> {
    let mut cfg = crate::chain_load::ChainLoadConfig::new(a.clients, a.write_ratio, a.keys, a.duration_s);
    cfg.seed = a.seed;
    cfg.timeout_ms = a.timeout_ms as f64;
    cfg.sockets = a.sockets;
    if let Some(t) = a.threads {
        cfg.threads = t;
    }
    cfg.check().map_err(anyhow::Error::msg)?;
    Ok(cfg)
}

fn run_load(a: &ClientChainArgs, protocol: Protocol) -> anyhow::Result<i32> {
    use crate::chain_load;
    anyhow::ensure!(
        protocol == Protocol::NetCraq,
        "--load drives NetCRAQ chains (its replies carry the generator's tag); start the chain with --protocol netcraq"
    );
    let cfg = load_config(a)?;
    let r = chain_load::run(&a.nodes, &cfg)?;
    if a.json {
        println!("{}", serde_json::to_string(&r)?);
    } else {
        let (l, c) = (&r.load, &r.ceiling);
        println!(
            "netcraq chain of {} nodes, {} clients ({} threads x {} sockets), {:.0}% puts, keys 0..{}, {:.1} s, seed {}, commit {}",
            a.nodes.len(),
            cfg.clients,
            l.threads,
            cfg.sockets,
            cfg.write_ratio * 100.0,
            cfg.keys,
            l.measured_s,
            cfg.seed,
            crate::results::git_commit()
        );
        println!(
            "{:<10} {:>12} {:>10} {:>10} {:>10} {:>9} {:>8}",
            "", "ops/s", "p50 us", "p99 us", "mean us", "timeouts", "refused"
        );
        for (name, x) in [("chain", l), ("ceiling", c)] {
            println!(
                "{:<10} {:>12.0} {:>10.1} {:>10.1} {:>10.1} {:>9} {:>8}",
                name, x.ops_per_s, x.p50_us, x.p99_us, x.mean_us, x.timeouts, x.refused
            );
        }
        println!(
            "replies (with warm-up and drain): gets {} puts {}; chain at {:.0}% of the generator's ceiling (a bare UDP echo){}",
            r.reads,
            r.writes,
            100.0 * l.ops_per_s / c.ops_per_s.max(1e-9),
            if r.generator_bound { ": generator-bound" } else { "" }
        );
    }
    Ok(if r.load.completed > 0 { 0 } else { 1 })
}

pub fn run_client(a: ClientChainArgs) -> anyhow::Result<i32> {
    use innet_chain::client::OpKind;
    use innet_wire::netcraq::Value;
    let protocol: Protocol = a.protocol.parse().map_err(anyhow::Error::msg)?;
    if a.load {
        return run_load(&a, protocol);
    }
    load_config(&a)?;
    anyhow::ensure!(a.near < a.nodes.len(), "--near must name one of the --nodes");
    let start = match (&a.get, &a.put) {
        (Some(k), None) => (false, *k, Value::ZERO),
        (None, Some(kv)) => {
            let (k, v) = kv.split_once('=').ok_or_else(|| anyhow::anyhow!("--put wants KEY=VALUE"))?;
            let k: u32 = k.trim().parse().map_err(|_| anyhow::anyhow!("key '{k}' is not a number"))?;
            let v = Value::from_str_padded(v).ok_or_else(|| anyhow::anyhow!("value longer than 16 bytes"))?;
            (true, k, v)
        }
        _ => anyhow::bail!("give --get KEY, --put KEY=VALUE or --load"),
    };
    let (put, key, value) = start;
    // A NetCRAQ node holds objects 0..OBJECTS_DEFAULT and drops any other key
    // (NetChain hashes every key into its table).
    let objects = innet_chain::netcraq::OBJECTS_DEFAULT;
    if protocol == Protocol::NetCraq && key as usize >= objects {
        anyhow::bail!("key {key} is beyond NetCRAQ's {objects} objects: use a key from 0 to {}", objects - 1);
    }
    let done = innet_live::chain::run_one(
        protocol,
        &a.nodes,
        a.near,
        key,
        put.then_some(value),
        std::time::Duration::from_millis(a.timeout_ms),
        std::time::Duration::from_millis(a.deadline_ms),
    )?;
    match done {
        Some(c) => {
            let op = if c.kind == OpKind::Read { "get" } else { "put" };
            println!(
                "{}",
                serde_json::json!({
                    "op": op,
                    "key": c.key,
                    "value": String::from_utf8_lossy(c.value.trimmed()),
                    "latency_us": c.finished.since(c.started).as_secs_f64() * 1e6,
                    "attempts": c.attempts,
                })
            );
            Ok(0)
        }
        None => {
            println!("{}", serde_json::json!({"error": "no answer before the deadline"}));
            Ok(1)
        }
    }
}
