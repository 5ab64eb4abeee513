//! Live-runtime commands of the transaction service: `innet up txn`,
//! `innet store`, `innet switch txn|echo`, `innet client txn`, `innet
//! topology show`.
//! The runtime itself is `innet-live`; the format of topology files and
//! every flag are documented in `docs/live.md`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::txn_client;
use clap::{ArgGroup, Args, Subcommand};
use innet_core::Counters;
use innet_live::auth::PeerAuth;
use innet_live::metrics::Sources;
use innet_live::topology::Topology;
use innet_live::txn::{
    spawn_store_delayed, spawn_txn_switch, start_local, LocalConfig, StoreAccess, StoreData, StoreReport, SwitchConfig,
};
use innet_txn::switch::CACHE_SLOTS_DEFAULT;
use innet_txn::workload::Workload;
use innet_txn::{Mode, Txn};
use innet_wire::txn::{Key, Op, OpType, Value, VALUE_LEN};

use super::{parse_addr, parse_place, print_line, read_auth_key, run_topology, MetricsArgs, TopologyArgs};

// ---------------------------------------------------------------- parsers

fn parse_mode(s: &str) -> Result<Mode, String> {
    s.parse()
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

#[derive(Args, Debug)]
pub struct UpTxnArgs {
    /// Switch mode: forward, read-cache, early-abort or optimistic-abort.
    #[arg(long, default_value = "optimistic-abort", value_parser = parse_mode)]
    mode: Mode,
    /// One-way switch <-> clients delay the switch emulates, ms (0 if clients emulate it).
    #[arg(long, default_value_t = 0.0, value_parser = crate::parse::delay_ms)]
    client_delay_ms: f64,
    /// One-way switch <-> store delay the switch emulates, ms.
    #[arg(long, default_value_t = 0.0, value_parser = crate::parse::delay_ms)]
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
    #[arg(long, default_value_t = CACHE_SLOTS_DEFAULT, value_parser = crate::parse::cache_slots)]
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
    #[arg(long, default_value_t = 0.5, value_parser = crate::parse::ratio)]
    write_ratio: f64,
    /// With --topology: counters the client nodes' transactions touch (keys 1..=N).
    #[arg(long, default_value_t = 1, value_parser = crate::parse::txn_keys)]
    keys: u32,
    /// Stop after this many seconds (default: at Ctrl-C); client nodes run load until then.
    #[arg(long, value_parser = crate::parse::seconds)]
    duration_s: Option<f64>,
}

pub fn run_up(a: UpTxnArgs) -> anyhow::Result<i32> {
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
    let stop = innet_live::stop_on_signals()?;
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
    innet_live::wait_until_stopped(&stop, || {
        net.store.is_finished() || net.switch.is_finished() || until.is_some_and(|u| Instant::now() >= u)
    });
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
    #[arg(long, default_value_t = 0.0, value_parser = crate::parse::delay_ms)]
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
    let stop = innet_live::stop_on_signals()?;
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
    innet_live::wait_until_stopped(&stop, || node.is_finished());
    let crashed = !stop.is_stopped();
    let r = node.shutdown()?;
    print_store_report("store", &r);
    if crashed {
        anyhow::bail!("the store stopped unexpectedly");
    }
    Ok(0)
}

// ---------------------------------------------------------------- innet switch

#[derive(Args, Debug)]
pub struct SwitchEchoArgs {
    /// Address to listen on, HOST:PORT.
    #[arg(long, value_parser = parse_addr)]
    listen: SocketAddr,
}

#[derive(Args, Debug)]
pub struct SwitchTxnArgs {
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
    #[arg(long, default_value_t = CACHE_SLOTS_DEFAULT, value_parser = crate::parse::cache_slots)]
    cache_slots: usize,
    /// One-way switch <-> store delay to emulate, ms.
    #[arg(long, default_value_t = 0.0, value_parser = crate::parse::delay_ms)]
    store_delay_ms: f64,
    /// One-way switch <-> clients delay to emulate, ms (0 if clients emulate it).
    #[arg(long, default_value_t = 0.0, value_parser = crate::parse::delay_ms)]
    client_delay_ms: f64,
    /// Key file (as `innet up txn --auth-key`): what the switch sends to
    /// --upstream is sealed, and what comes from there must be; clients'
    /// datagrams stay unsealed.
    #[arg(long, value_name = "FILE")]
    auth_key: Option<PathBuf>,
    #[command(flatten)]
    metrics: MetricsArgs,
}

/// `innet switch echo`: answers every datagram with itself.
pub fn run_echo(a: SwitchEchoArgs) -> anyhow::Result<i32> {
    let echoed = innet_live::echo(a.listen, &innet_live::stop_on_signals()?, print_line)?;
    print_line(&format!("echo.echoed {echoed}"));
    Ok(0)
}

pub fn run_switch(a: SwitchTxnArgs) -> anyhow::Result<i32> {
    let stop = innet_live::stop_on_signals()?;
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
    innet_live::wait_until_stopped(&stop, || node.is_finished());
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

#[derive(Args, Debug)]
#[command(group(ArgGroup::new("what").required(true).args(["op", "increment", "read", "load"])))]
pub struct ClientTxnArgs {
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
    #[arg(long, value_parser = crate::parse::clients)]
    clients: Option<u32>,
    /// Load: fraction of transactions that increment a counter, 0..=1 [default: 0.2].
    #[arg(long, value_parser = crate::parse::ratio)]
    write_ratio: Option<f64>,
    /// Load: number of counters, keys 1..=N [default: 1].
    #[arg(long, value_parser = crate::parse::txn_keys)]
    keys: Option<u32>,
    /// Load: Zipf exponent of key popularity, 0 = uniform [default: 0].
    #[arg(long, value_parser = crate::parse::non_negative)]
    zipf: Option<f64>,
    /// Load: most keys one transaction touches [default: 1].
    #[arg(long, value_parser = crate::parse::span)]
    span: Option<u32>,
    /// Load: seconds to run [default: 10].
    #[arg(long, value_parser = crate::parse::seconds)]
    duration_s: Option<f64>,
    /// Load: think time between transactions, ms [default: 0].
    #[arg(long, value_parser = crate::parse::delay_ms)]
    think_ms: Option<f64>,
    /// Load: seed of the workload's random choices [default: 1].
    #[arg(long)]
    seed: Option<u64>,
    /// One-way client <-> switch delay this client emulates, ms.
    #[arg(long, default_value_t = 0.0, value_parser = crate::parse::delay_ms)]
    client_delay_ms: f64,
    /// Resend timeout, ms.
    #[arg(long, default_value_t = 1000.0, value_parser = crate::parse::timeout_ms)]
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

pub fn run_client(a: ClientTxnArgs) -> anyhow::Result<i32> {
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
        txn_client::load(&load, &innet_live::stop_on_signals()?)?
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
            txn_client::one(&sending, txn, &innet_live::stop_on_signals()?)?
                .ok_or_else(|| anyhow::anyhow!("interrupted"))?
        }
    };
    print_line(&outcome.json.to_string());
    Ok(if outcome.ok { 0 } else { 1 })
}
