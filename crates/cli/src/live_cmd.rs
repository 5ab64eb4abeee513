//! Live-runtime commands: `innet up`, `innet store`, `innet switch`, `innet client`.
//! The runtime itself is `innet-live`; the format of topology files and
//! every flag are documented in `docs/live.md`.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{ArgGroup, Args, Subcommand};
use innet_core::Counters;
use innet_exp::txn_client;
use innet_live::auth::PeerAuth;
use innet_live::metrics::Sources;
use innet_live::topology::{self, Topology};
use innet_live::txn::{
    spawn_store_delayed, spawn_txn_switch, start_local, LocalConfig, StoreAccess, StoreData, StoreReport, SwitchConfig,
};
use innet_live::Stop;
use innet_txn::switch::CACHE_SLOTS_DEFAULT;
use innet_txn::workload::Workload;
use innet_txn::{Mode, Txn};
use innet_wire::txn::{Key, Op, OpType, Value, VALUE_LEN};

// ---------------------------------------------------------------- parsers

fn parse_mode(s: &str) -> Result<Mode, String> {
    s.parse()
}

pub(crate) fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    topology::resolve(s).map_err(|e| format!("{e:#}"))
}

/// `TYPE:KEY[:VALUE]`, TYPE one of read, write, value (a compare), nop.
fn parse_op(s: &str) -> Result<Op, String> {
    const FORM: &str = "expected TYPE:KEY[:VALUE] with TYPE read, write or value, e.g. value:1:a, write:1:b, read:1";
    let mut parts = s.splitn(3, ':');
    let kind = parts.next().unwrap_or_default();
    let key: Key = parts
        .next()
        .ok_or_else(|| format!("'{s}': no key; {FORM}"))?
        .parse()
        .map_err(|_| format!("'{s}': the key must be a number 0..=4294967295; {FORM}"))?;
    let value = match parts.next() {
        None => Value::ZERO,
        Some(v) => {
            Value::from_str_padded(v).ok_or_else(|| format!("'{s}': value '{v}' is longer than {VALUE_LEN} bytes"))?
        }
    };
    let kind = match kind.to_ascii_lowercase().as_str() {
        "read" => OpType::Read,
        "write" => OpType::Write,
        "value" | "compare" => OpType::Value,
        "nop" => OpType::Nop,
        other => return Err(format!("'{s}': unknown op type '{other}'; {FORM}")),
    };
    Ok(Op::new(kind, key, value))
}

fn delay(ms: f64) -> Duration {
    Duration::from_secs_f64(ms / 1e3)
}

pub(crate) fn print_line(s: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{s}");
    let _ = out.flush();
}

/// `--auth-key FILE` read and checked: one line naming the file and the fault.
pub(crate) fn read_auth_key(file: Option<&std::path::Path>) -> anyhow::Result<Option<innet_core::auth::AuthKeys>> {
    file.map(|f| innet_live::auth::read_key_file(f).map_err(anyhow::Error::msg)).transpose()
}

pub(crate) fn signals() -> anyhow::Result<Stop> {
    let stop = Stop::new();
    stop.on_signals().context("cannot install SIGINT/SIGTERM handlers")?;
    Ok(stop)
}

/// Waits until `stop` is set or `finished()` says a node has ended.
fn wait(stop: &Stop, mut finished: impl FnMut() -> bool) {
    while !stop.is_stopped() && !finished() {
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn print_counters(prefix: &str, counters: &[(String, u64)]) {
    for (k, v) in counters {
        print_line(&format!("{prefix}.{k} {v}"));
    }
}

fn print_store_report(prefix: &str, r: &StoreReport) {
    let mut c: Vec<(String, u64)> = r.counters.counters().into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    c.extend(r.net.counters().into_iter().map(|(k, v)| (k.to_string(), v)));
    print_counters(prefix, &c);
}

// ---------------------------------------------------------------- innet up

/// Start a store and a switch on loopback and print their UDP addresses.
#[derive(Args, Debug)]
pub struct UpCmd {
    #[command(subcommand)]
    service: UpService,
}

#[derive(Subcommand, Debug)]
enum UpService {
    /// A transaction store and switch (or the nodes of a topology file).
    ///
    /// Prints one line per node, `NAME HOST:PORT`, then runs until SIGINT or
    /// SIGTERM, and prints the counters (`NAME.COUNTER VALUE`) on the way out.
    Txn(UpTxnArgs),
    /// A NetCRAQ or NetChain chain and its control plane on loopback.
    ///
    /// Prints one line per node, `nodeI HOST:PORT` (node0 is the head),
    /// then serves until SIGINT or SIGTERM; `--drill` instead kills and
    /// recovers the middle node under client load and reports.
    Chain(crate::chain_cmd::UpChainArgs),
    /// The consensus service (CAANS): coordinator, acceptors, backup coordinator, learners.
    ///
    /// Prints one line per node, `NAME HOST:PORT`, runs until SIGINT/SIGTERM
    /// (or --duration-s), then prints what was committed and delivered.
    Paxos(crate::paxos_cmd::UpPaxosArgs),
}

#[derive(Args, Debug)]
struct UpTxnArgs {
    /// Switch mode: forward, read-cache, early-abort or optimistic-abort.
    #[arg(long, default_value = "optimistic-abort", value_parser = parse_mode)]
    mode: Mode,
    /// One-way switch <-> clients delay the switch emulates, ms (0 if clients emulate it).
    #[arg(long, default_value_t = 0.0, value_parser = innet_exp::parse::delay_ms)]
    client_delay_ms: f64,
    /// One-way switch <-> store delay the switch emulates, ms.
    #[arg(long, default_value_t = 0.0, value_parser = innet_exp::parse::delay_ms)]
    store_delay_ms: f64,
    /// Keep the store's data durably in this directory (default: in memory).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Honour the `reset` flag, as the reference store does: such a request
    /// clears the store, the switch's cache and every client's exactly-once
    /// record. Off by default (BADREQ): any sender could wipe the data.
    #[arg(long)]
    allow_reset: bool,
    /// Store address, HOST:PORT (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:0", value_parser = parse_addr)]
    store_listen: SocketAddr,
    /// Switch address, HOST:PORT (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:0", value_parser = parse_addr)]
    switch_listen: SocketAddr,
    /// Switch cache slots (a power of two >= 4).
    #[arg(long, default_value_t = CACHE_SLOTS_DEFAULT, value_parser = innet_exp::parse::cache_slots)]
    cache_slots: usize,
    /// Key file (lines `ID HEX`, 32 hex digits; the first seals, at most 2):
    /// every datagram between store and switch(es) carries a SipHash-2-4 MAC
    /// trailer, and one from a node's address without it is refused;
    /// clients stay unsealed (docs/security.md). With --topology it
    /// replaces the file's `auth_key`.
    #[arg(long, value_name = "FILE")]
    auth_key: Option<PathBuf>,
    #[command(flatten)]
    deployment: TopologyArgs,
    #[command(flatten)]
    metrics: MetricsArgs,
    /// With --topology: share of writes in the client nodes' transactions.
    #[arg(long, default_value_t = 0.5, value_parser = innet_exp::parse::ratio)]
    write_ratio: f64,
    /// With --topology: counters the client nodes' transactions touch (keys 1..=N).
    #[arg(long, default_value_t = 1, value_parser = innet_exp::parse::txn_keys)]
    keys: u32,
    /// Stop after this many seconds (default: at Ctrl-C); client nodes run load until then.
    #[arg(long, value_parser = innet_exp::parse::seconds)]
    duration_s: Option<f64>,
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

/// `--metrics ADDR`, for every long-running process.
#[derive(Args, Debug, Clone, Default)]
pub struct MetricsArgs {
    /// Serve every counter of the nodes this process runs over HTTP at
    /// ADDR (HOST:PORT, port 0: any free port), `GET /metrics`, in the
    /// Prometheus text format, read live at each scrape (docs/live.md).
    #[arg(long, value_name = "ADDR", value_parser = innet_exp::parse::listen_addr)]
    pub metrics: Option<SocketAddr>,
}

/// `MACHINE=IP`.
pub(crate) fn parse_place(s: &str) -> Result<(String, std::net::IpAddr), String> {
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
    let stop = signals()?;
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

pub fn run_up(a: UpCmd) -> anyhow::Result<i32> {
    let a = match a.service {
        UpService::Txn(a) => a,
        UpService::Chain(a) => return crate::chain_cmd::run_up(a),
        UpService::Paxos(a) => return crate::paxos_cmd::run_up(a),
    };
    if a.deployment.topology.is_some() {
        let workload = Workload {
            write_ratio: a.write_ratio,
            keys: a.keys,
            zipf: 0.0,
            think_time: Duration::ZERO,
            span: 1,
            validated_reads: 0.0,
        };
        workload.validate().map_err(anyhow::Error::msg)?;
        let load = innet_live::up::UpLoad {
            duration: a.duration_s.map(Duration::from_secs_f64),
            workload,
            ..innet_live::up::UpLoad::default()
        };
        return run_topology(&a.deployment, &a.metrics, "txn", a.auth_key.as_deref(), load);
    }
    let stop = signals()?;
    let mut cfg = LocalConfig::new(a.mode);
    cfg.switch.cache_slots = a.cache_slots;
    cfg.switch.client_delay = delay(a.client_delay_ms);
    cfg.switch.store_delay = delay(a.store_delay_ms);
    cfg.data = a.data_dir.clone().map_or(StoreData::Memory, StoreData::Dir);
    cfg.allow_reset = a.allow_reset;
    cfg.store_listen = a.store_listen;
    cfg.switch_listen = a.switch_listen;
    cfg.auth = read_auth_key(a.auth_key.as_deref())?;
    let net = start_local(&cfg, &stop)?;
    let sources = Sources::default();
    sources.host("store", "store", "store", net.store.live());
    sources.switch("switch", "switch", "switch", &net.switch);
    let _metrics = innet_live::metrics::serve(a.metrics.metrics, &sources)?;
    print_line(&format!("store {}", net.store_addr()));
    print_line(&format!("switch {}", net.switch_addr()));
    tracing::info!(
        "{} switch in front of {} store; emulated one-way delays: clients<->switch {} ms, switch<->store {} ms. Ctrl-C to stop.",
        a.mode,
        if a.data_dir.is_some() { "a durable" } else { "an in-memory" },
        a.client_delay_ms,
        a.store_delay_ms
    );
    let until = a.duration_s.map(|d| Instant::now() + Duration::from_secs_f64(d));
    wait(&stop, || net.store.is_finished() || net.switch.is_finished() || until.is_some_and(|u| Instant::now() >= u));
    let crashed = !stop.is_stopped() && until.is_none_or(|u| Instant::now() < u);
    let report = net.shutdown()?;
    print_counters("switch", &report.switch_counters);
    print_store_report("store", &report.store);
    if crashed {
        anyhow::bail!("a node stopped unexpectedly");
    }
    Ok(0)
}

// ---------------------------------------------------------------- innet topology

#[derive(Subcommand, Debug)]
pub enum TopologyCmd {
    /// Check FILE and print every node (role, machine, address, upstream,
    /// ports, groups) and link; exit status 2 and the line of the mistake if
    /// the file is wrong.
    Show {
        file: PathBuf,
        /// One JSON object (what `innet mininet` reads).
        #[arg(long)]
        json: bool,
        /// MACHINE=IP: show the nodes of MACHINE placed on IP, as `innet up --place` places them.
        #[arg(long, value_name = "MACHINE=IP", value_parser = parse_place)]
        place: Vec<(String, std::net::IpAddr)>,
    },
}

pub fn run_topology_cmd(c: TopologyCmd) -> anyhow::Result<i32> {
    let TopologyCmd::Show { file, json, place } = c;
    let mut t = Topology::load(&file)?;
    t.place(&place)?;
    let j = t.to_json();
    if json {
        print_line(&serde_json::to_string(&j)?);
        return Ok(0);
    }
    print_line(&format!("{} topology, {} nodes", j["service"].as_str().unwrap_or("?"), t.names().len()));
    for n in j["nodes"].as_array().into_iter().flatten() {
        let mut line = format!(
            "  {:<14} {:<12} machine {:<10} {}",
            n["name"].as_str().unwrap_or(""),
            n["role"].as_str().unwrap_or(""),
            n["machine"].as_str().unwrap_or(""),
            n["address"].as_str().or(n["listen"].as_str()).unwrap_or("(free port)")
        );
        if let Some(u) = n["upstream"].as_str() {
            line += &format!(" upstream {u}");
        }
        for (p, to) in n["ports"].as_object().into_iter().flatten() {
            line += &format!(" port{p}={}", to.as_str().unwrap_or(""));
        }
        for (g, m) in n["groups"].as_object().into_iter().flatten() {
            let members: Vec<&str> = m.as_array().into_iter().flatten().filter_map(|x| x.as_str()).collect();
            line += &format!(" group{g}=[{}]", members.join(","));
        }
        print_line(&line);
    }
    for l in j["links"].as_array().into_iter().flatten() {
        print_line(&format!(
            "  link {} - {}: {} ms",
            l["a"].as_str().unwrap_or(""),
            l["b"].as_str().unwrap_or(""),
            l["delay_ms"].as_f64().unwrap_or(0.0)
        ));
    }
    Ok(0)
}

// ---------------------------------------------------------------- innet store

/// Run a transaction store.
///
/// Prints `store HOST:PORT` once it is listening, runs until SIGINT or
/// SIGTERM, then prints its counters.
#[derive(Args, Debug)]
pub struct StoreArgs {
    /// Address to listen on, HOST:PORT (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:9999", value_parser = parse_addr)]
    listen: SocketAddr,
    /// Keep data and exactly-once records durably (redb) in this directory;
    /// every acknowledged commit survives a crash. Default: in memory.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// One-way delay of the store's access link, emulated by the store in
    /// both directions (WAN experiments with an XDP switch, which cannot delay).
    #[arg(long, default_value_t = 0.0, value_parser = innet_exp::parse::delay_ms)]
    link_delay_ms: f64,
    /// Honour the `reset` flag, as the reference store does: such a request
    /// clears the store and every client's exactly-once record, and its OK
    /// clears the caches of the switches it passes. Off by default (BADREQ):
    /// any sender could wipe the data.
    #[arg(long)]
    allow_reset: bool,
    /// With --data-dir: keep every decision in the database too, in the
    /// transaction that commits it (`innet chaos txn` checks them for
    /// serializability). The log grows with every request: for checks only.
    #[arg(long, requires = "data_dir")]
    record_decisions: bool,
    /// Take packets only from these addresses, HOST:PORT (repeat the flag
    /// or separate with commas): the switches in front of the store, or
    /// clients that use it directly. Without it every sender is taken, and
    /// a request a switch aborted, sent straight to the store, is decided
    /// here: leave it out only where nothing but the switch can reach the
    /// store (the XDP testbed).
    #[arg(long, value_delimiter = ',', value_parser = parse_addr)]
    downstream: Vec<SocketAddr>,
    /// Key file (as `innet up txn --auth-key`): what the store sends to the
    /// --downstream addresses is sealed, and what comes from them must be;
    /// without --downstream, every sender's (a store only its switch
    /// reaches, which seals, as an XDP switch with keys does).
    #[arg(long, value_name = "FILE")]
    auth_key: Option<PathBuf>,
    #[command(flatten)]
    metrics: MetricsArgs,
}

pub fn run_store(a: StoreArgs) -> anyhow::Result<i32> {
    let stop = signals()?;
    let data = match &a.data_dir {
        None => StoreData::Memory,
        Some(d) if a.record_decisions => StoreData::Recorded(d.clone()),
        Some(d) => StoreData::Dir(d.clone()),
    };
    let delay = Duration::from_secs_f64(a.link_delay_ms / 1e3);
    let peers = (!a.downstream.is_empty()).then_some(a.downstream.clone());
    let auth = read_auth_key(a.auth_key.as_deref())?.map(|k| match &peers {
        Some(p) => PeerAuth::peers(k, p.iter().copied()),
        None => PeerAuth::all(k),
    });
    let access = StoreAccess { peers, auth };
    let node = spawn_store_delayed("store", a.listen, &data, delay, a.allow_reset, access, &stop)?;
    let sources = Sources::default();
    sources.node("store", "store", &node);
    let _metrics = innet_live::metrics::serve(a.metrics.metrics, &sources)?;
    print_line(&format!("store {}", node.addr()));
    wait(&stop, || node.is_finished());
    let crashed = !stop.is_stopped();
    let r = node.shutdown()?;
    print_store_report("store", &r);
    if crashed {
        anyhow::bail!("the store stopped unexpectedly");
    }
    Ok(0)
}

// ---------------------------------------------------------------- innet switch

/// Run a transaction switch (user-space software switch over UDP).
#[derive(Args, Debug)]
pub struct SwitchCmd {
    #[command(subcommand)]
    service: SwitchService,
}

#[derive(Subcommand, Debug)]
enum SwitchService {
    /// The transaction switch. Prints `switch HOST:PORT` once listening,
    /// runs until SIGINT or SIGTERM, then prints its counters.
    Txn(SwitchTxnArgs),
    /// A bare UDP echo (blocking receive, send back to the sender): the
    /// floor a user-space switch's round trip is measured against. Prints
    /// `echo HOST:PORT` once listening, runs until SIGINT or SIGTERM.
    Echo(SwitchEchoArgs),
}

#[derive(Args, Debug)]
struct SwitchEchoArgs {
    /// Address to listen on, HOST:PORT.
    #[arg(long, value_parser = parse_addr)]
    listen: SocketAddr,
}

/// `innet switch echo`: answers every datagram with itself.
fn run_echo(a: SwitchEchoArgs) -> anyhow::Result<i32> {
    let stop = signals()?;
    let sock = std::net::UdpSocket::bind(a.listen).with_context(|| format!("bind {}", a.listen))?;
    // Woken at least this often to look at the stop flag.
    sock.set_read_timeout(Some(Duration::from_millis(20)))?;
    print_line(&format!("echo {}", sock.local_addr()?));
    let mut buf = [0u8; 65536];
    let mut echoed = 0u64;
    while !stop.is_stopped() {
        if let Ok((n, from)) = sock.recv_from(&mut buf) {
            echoed += u64::from(sock.send_to(&buf[..n], from).is_ok());
        }
    }
    print_line(&format!("echo.echoed {echoed}"));
    Ok(0)
}

#[derive(Args, Debug)]
struct SwitchTxnArgs {
    /// forward, read-cache, early-abort or optimistic-abort.
    #[arg(long, value_parser = parse_mode)]
    mode: Mode,
    /// Address to listen on, HOST:PORT.
    #[arg(long, value_parser = parse_addr)]
    listen: SocketAddr,
    /// The store (or next switch), HOST:PORT. Packets from this address are
    /// treated as coming from upstream.
    #[arg(long, value_parser = parse_addr)]
    upstream: SocketAddr,
    /// Cache slots (a power of two >= 4).
    #[arg(long, default_value_t = CACHE_SLOTS_DEFAULT, value_parser = innet_exp::parse::cache_slots)]
    cache_slots: usize,
    /// One-way switch <-> store delay to emulate, ms.
    #[arg(long, default_value_t = 0.0, value_parser = innet_exp::parse::delay_ms)]
    store_delay_ms: f64,
    /// One-way switch <-> clients delay to emulate, ms (0 if clients emulate it).
    #[arg(long, default_value_t = 0.0, value_parser = innet_exp::parse::delay_ms)]
    client_delay_ms: f64,
    /// Key file (as `innet up txn --auth-key`): what the switch sends to
    /// --upstream is sealed, and what comes from there must be; clients'
    /// datagrams stay unsealed.
    #[arg(long, value_name = "FILE")]
    auth_key: Option<PathBuf>,
    #[command(flatten)]
    metrics: MetricsArgs,
}

pub fn run_switch(a: SwitchCmd) -> anyhow::Result<i32> {
    let a = match a.service {
        SwitchService::Txn(a) => a,
        SwitchService::Echo(e) => return run_echo(e),
    };
    let stop = signals()?;
    let cfg = SwitchConfig {
        mode: a.mode,
        cache_slots: a.cache_slots,
        store_delay: delay(a.store_delay_ms),
        client_delay: delay(a.client_delay_ms),
        auth: read_auth_key(a.auth_key.as_deref())?.map(|k| PeerAuth::peers(k, [a.upstream])),
    };
    let node = spawn_txn_switch("switch", a.listen, a.upstream, &cfg, &stop)?;
    let sources = Sources::default();
    sources.switch("switch", "switch", "switch", &node);
    let _metrics = innet_live::metrics::serve(a.metrics.metrics, &sources)?;
    print_line(&format!("switch {}", node.addr()));
    wait(&stop, || node.is_finished());
    let crashed = !stop.is_stopped();
    let c = node.counters();
    node.shutdown()?;
    print_counters("switch", &c);
    if crashed {
        anyhow::bail!("the switch stopped unexpectedly");
    }
    Ok(0)
}

// ---------------------------------------------------------------- innet client

/// Send transactions to a switch or store.
#[derive(Args, Debug)]
pub struct ClientCmd {
    #[command(subcommand)]
    service: ClientService,
}

#[derive(Subcommand, Debug)]
enum ClientService {
    /// One transaction (--op ..., --increment KEY or --read KEY), or a load
    /// run (--load). Prints the outcome as JSON. Exit status 0 if committed,
    /// 1 if not.
    Txn(ClientTxnArgs),
    /// One get or put against a live chain (NetCRAQ or NetChain). Prints the
    /// outcome as JSON; exit status 0 if answered, 1 if not.
    Chain(crate::chain_cmd::ClientChainArgs),
    /// TPC-C terminals against a live switch (--load): loads the store over
    /// the wire, runs the mix (or --only one type), reads the database back
    /// and checks TPC-C's consistency conditions. Prints the record as JSON;
    /// exit status 0 if transactions committed and every condition holds.
    Tpcc(crate::tpcc_cmd::ClientTpccArgs),
}

#[derive(Args, Debug)]
#[command(group(ArgGroup::new("what").required(true).args(["op", "increment", "read", "load"])))]
struct ClientTxnArgs {
    /// The switch (or store) to send to, HOST:PORT.
    #[arg(long, value_parser = parse_addr)]
    to: SocketAddr,
    /// Send exactly these ops as one request and print the reply: TYPE:KEY[:VALUE],
    /// TYPE read, write or value (a compare). Repeat: --op value:1:a --op write:1:b
    #[arg(long, value_parser = parse_op, conflicts_with_all = ["increment", "read", "load"])]
    op: Vec<Op>,
    /// Increment the counter at KEY (a read-compare-write transaction, re-run on abort).
    #[arg(long, value_name = "KEY", conflicts_with_all = ["read", "load"])]
    increment: Option<Key>,
    /// Read KEY (repeat for several keys in one transaction).
    #[arg(long, value_name = "KEY", conflicts_with = "load")]
    read: Vec<Key>,
    /// Run the closed-loop workload and print a JSON summary.
    #[arg(long)]
    load: bool,
    /// Load: concurrent clients [default: 8].
    #[arg(long, value_parser = innet_exp::parse::clients)]
    clients: Option<u32>,
    /// Load: fraction of transactions that increment a counter, 0..=1 [default: 0.2].
    #[arg(long, value_parser = innet_exp::parse::ratio)]
    write_ratio: Option<f64>,
    /// Load: number of counters, keys 1..=N [default: 1].
    #[arg(long, value_parser = innet_exp::parse::txn_keys)]
    keys: Option<u32>,
    /// Load: Zipf exponent of key popularity, 0 = uniform [default: 0].
    #[arg(long, value_parser = innet_exp::parse::non_negative)]
    zipf: Option<f64>,
    /// Load: most keys one transaction touches [default: 1].
    #[arg(long, value_parser = innet_exp::parse::span)]
    span: Option<u32>,
    /// Load: seconds to run [default: 10].
    #[arg(long, value_parser = innet_exp::parse::seconds)]
    duration_s: Option<f64>,
    /// Load: think time between transactions, ms [default: 0].
    #[arg(long, value_parser = innet_exp::parse::delay_ms)]
    think_ms: Option<f64>,
    /// Load: seed of the workload's random choices [default: 1].
    #[arg(long)]
    seed: Option<u64>,
    /// One-way client <-> switch delay this client emulates, ms.
    #[arg(long, default_value_t = 0.0, value_parser = innet_exp::parse::delay_ms)]
    client_delay_ms: f64,
    /// Resend timeout, ms.
    #[arg(long, default_value_t = 1000.0, value_parser = innet_exp::parse::timeout_ms)]
    timeout_ms: f64,
    /// Resends of one request before giving up.
    #[arg(long, default_value_t = 5)]
    max_resends: u32,
    /// Attempts of one transaction before giving up.
    #[arg(long, default_value_t = 1000)]
    retry_limit: u32,
    /// Client id (the first one with --load). Default: a fresh one, since a
    /// store remembers client ids and their last request across runs.
    #[arg(long)]
    client_id: Option<u32>,
}

pub fn run_client(a: ClientCmd) -> anyhow::Result<i32> {
    let a = match a.service {
        ClientService::Txn(a) => a,
        ClientService::Chain(a) => return crate::chain_cmd::run_client(a),
        ClientService::Tpcc(a) => return crate::tpcc_cmd::run_client(a),
    };
    let sending = txn_client::Sending {
        to: a.to,
        client_delay_ms: a.client_delay_ms,
        timeout_ms: a.timeout_ms,
        max_resends: a.max_resends,
        retry_limit: a.retry_limit,
        client_id: a.client_id,
    };
    let outcome = if a.load {
        let d = txn_client::ClientLoad::new(a.to);
        let load = txn_client::ClientLoad {
            sending,
            clients: a.clients.unwrap_or(d.clients),
            write_ratio: a.write_ratio.unwrap_or(d.write_ratio),
            keys: a.keys.unwrap_or(d.keys),
            zipf: a.zipf.unwrap_or(d.zipf),
            span: a.span.unwrap_or(d.span),
            duration_s: a.duration_s.unwrap_or(d.duration_s),
            think_ms: a.think_ms.unwrap_or(d.think_ms),
            seed: a.seed.unwrap_or(d.seed),
        };
        txn_client::load(&load, &signals()?)?
    } else {
        let load_only = [
            ("--clients", a.clients.is_some()),
            ("--write-ratio", a.write_ratio.is_some()),
            ("--keys", a.keys.is_some()),
            ("--zipf", a.zipf.is_some()),
            ("--span", a.span.is_some()),
            ("--duration-s", a.duration_s.is_some()),
            ("--think-ms", a.think_ms.is_some()),
            ("--seed", a.seed.is_some()),
        ];
        if let Some((flag, _)) = load_only.iter().find(|(_, given)| *given) {
            anyhow::bail!("{flag} only applies to a load run: add --load, or drop {flag}");
        }
        if !a.op.is_empty() {
            txn_client::raw(&sending, a.op)?
        } else {
            let txn = match a.increment {
                Some(k) => Txn::increment(k),
                None => Txn::Read(a.read),
            };
            txn_client::one(&sending, txn, &signals()?)?.ok_or_else(|| anyhow::anyhow!("interrupted"))?
        }
    };
    print_line(&outcome.json.to_string());
    Ok(if outcome.ok { 0 } else { 1 })
}
