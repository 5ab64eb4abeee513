//! `innet testbed ...` and `innet bench xdp`: the XDP data plane on network
//! namespaces (crates/xdp, docs/xdp.md). Everything here needs root.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};

use innet_chain::deploy::ChainRole;
use innet_core::auth::AuthKeys;
use innet_exp::xdp_fabric::FabricArgs;
use innet_exp::xdp_paxos::{McastArg, OnOff};
use innet_live::auth::KeyFile;
use innet_paxos::deploy::PaxosRole;
use innet_topology::Service;
use innet_txn::switch::Mode;
use innet_xdp::bench::{BenchConfig, Summary, TxnExperimentConfig};
use innet_xdp::paxos_testbed::PaxosUp;
use innet_xdp::testbed::{self, DataPlaneAt, UpOptions};

#[derive(Subcommand, Debug)]
pub enum TestbedCmd {
    /// Create namespaces and veth pairs for a topology, attach the data
    /// plane, start the store. Topology `txn`: innet-client (10.77.0.2) --
    /// innet-switch (10.77.0.1 | 10.77.1.1) -- innet-store (10.77.1.2).
    /// Clients then run in the client namespace, e.g.
    /// `ip netns exec innet-client innet client txn --to 10.77.0.1:9999 --increment 1`.
    /// Topology `chain` (`--protocol netcraq|netchain --nodes N`): N XDP
    /// chain nodes innet-n0.. (10.78.0.1..) and innet-client (10.78.0.100),
    /// a veth between every two of them; the NetCRAQ tail's ACKs go to
    /// their group by devmap broadcast (or tc clones: `--multicast tc`).
    /// Every XDP data plane runs in driver mode with threaded NAPI unless
    /// `--xdp-mode generic` / `--threaded-napi off` say otherwise.
    Up(TestbedUpArgs),
    /// Remove everything a testbed made: recorded processes, `innet-*`
    /// namespaces and links, pinned maps and programs (also after a crash).
    Down {
        /// Only this topology's testbed (`paxos`: its `innet-px-*`
        /// namespaces, pins and state file), leaving other testbeds running.
        #[arg(long)]
        only: Option<String>,
    },
    /// Fail a role of a running testbed: `paxos coordinator` sets every
    /// link of the coordinator's namespace down (a switch failure); the
    /// backup coordinator takes over.
    Fail {
        /// The topology (`paxos`).
        topology: String,
        /// The role (`coordinator`).
        role: String,
    },
    /// Show the running testbed and the XDP switch's counters.
    Status {
        /// Also dump the switch's registers and every valid table slot.
        #[arg(long)]
        tables: bool,
    },
}

#[derive(Args, Debug)]
pub struct TestbedUpArgs {
    /// The service: `txn`, `paxos` or `chain`.
    #[arg(value_name = "SERVICE")]
    service: String,
    /// Build the deployment of this topology file (docs/live.md). `txn`:
    /// any transaction deployment, e.g. Gotthard's two edge switches under
    /// a core (examples/topology-txn-tree.toml), one namespace per machine,
    /// the XDP switch on every switch; `paxos` and `chain`: the testbed
    /// with the file's number of acceptors, learners and proposers, or
    /// chain nodes and protocol. Addresses are the testbed's own.
    #[arg(long, value_name = "FILE")]
    topology: Option<PathBuf>,
    /// With a txn --topology: run every client group's closed-loop load for
    /// this many seconds, print what each committed and each switch
    /// counted, and leave the testbed up.
    #[arg(long, value_name = "SECONDS", value_parser = innet_exp::parse::seconds)]
    load_s: Option<f64>,
    /// With --load-s: share of transactions that write (increment the counter).
    #[arg(long, default_value_t = 0.5, value_parser = innet_exp::parse::ratio)]
    write_ratio: f64,
    /// Chain topology: netcraq or netchain.
    #[arg(long, default_value = "netcraq")]
    protocol: innet_chain::Protocol,
    /// Chain topology: nodes in the chain.
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    /// Chain topology, NetChain: the tail replies to the request's source
    /// port instead of the client's port 8889 (NetChain's P4 reference's
    /// REPLY_PORT, the default), so that many clients can share the client
    /// namespace's address.
    #[arg(long)]
    reply_to_source_port: bool,
    /// Where the switch role runs: xdp (the BPF program on the switch's
    /// ports) or switch (an `innet switch txn` user-space software switch
    /// process in the switch namespace; `software` is accepted too). The
    /// chain and paxos testbeds run xdp.
    #[arg(long, default_value = "xdp", value_parser = testbed::parse_data_plane)]
    data_plane: DataPlaneAt,
    /// Switch mode: forward, read-cache, early-abort or optimistic-abort.
    #[arg(long, default_value = "optimistic-abort")]
    mode: Mode,
    /// Do not start the store.
    #[arg(long)]
    no_store: bool,
    /// One-way switch <-> store delay, emulated by the store (there is no
    /// netem; clients emulate theirs with `innet client --client-delay-ms`).
    #[arg(long, default_value_t = 0.0, value_parser = innet_exp::parse::delay_ms)]
    store_delay_ms: f64,
    /// Chain topology: run the chain control plane and a failure drill
    /// (clients read and write while a middle node fails, is removed,
    /// restarts, is recovered by copy and re-added), report and exit,
    /// leaving the testbed up.
    #[arg(long)]
    drill: bool,
    #[command(flatten)]
    fabric: FabricArgs,
    /// Chain topology, NetCRAQ: how the tail's ACK reaches its group,
    /// `devmap` broadcast (copies stay XDP frames) or `tc` clones (driver
    /// mode only). Paxos: how the coordinator's copies leave.
    #[arg(long, value_enum, default_value = "devmap")]
    multicast: McastArg,
    /// Key file (lines `ID HEX`; the first seals, at most 2; docs/security.md).
    /// Chain: the nodes take frames from each other only with a SipHash-2-4
    /// MAC trailer and seal what they send each other; clients carry none
    /// (with a chain --topology: its `auth_key`). txn without --topology (as
    /// `innet up txn --auth-key`): the switch (XDP or software) and the store
    /// seal and check what they send each other; the clients stay unsealed.
    /// Paxos (also with a --topology, else its `auth_key`): the coordinator,
    /// acceptors and vote counters in BPF and the backup process seal and
    /// check every message; run the end hosts with the same key
    /// (`innet bench xdp-paxos-hosts --auth-key FILE`).
    #[arg(long, value_name = "FILE", value_parser = innet_exp::parse::key_file)]
    auth_key: Option<KeyFile>,
}

/// What a topology file asks of a testbed: the file's deployment, read
/// once, for the service named on the command line.
fn load_topology(a: &TestbedUpArgs) -> anyhow::Result<Option<innet_live::topology::Topology>> {
    let Some(path) = &a.topology else {
        anyhow::ensure!(a.load_s.is_none(), "--load-s needs --topology FILE (a txn topology)");
        return Ok(None);
    };
    let t = innet_live::topology::Topology::load(path)?;
    anyhow::ensure!(
        t.service.name() == a.service,
        "{} is a {} topology: run `innet testbed up {} --topology {}`",
        path.display(),
        t.service.name(),
        t.service.name(),
        path.display()
    );
    Ok(Some(t))
}

/// `innet testbed up txn --topology FILE [--load-s S]`.
fn run_txn_topology(d: &innet_txn::deploy::TxnDeployment, a: &TestbedUpArgs) -> anyhow::Result<i32> {
    use innet_xdp::txn_topology as tt;
    anyhow::ensure!(
        a.data_plane == DataPlaneAt::Xdp,
        "--topology builds the XDP data plane; the software switches of a topology run with \
         `innet up txn --topology FILE` (loopback) or `innet mininet --topology FILE`"
    );
    let st = tt::up(d, &innet_exe()?, !a.no_store, a.fabric.fabric())?;
    println!("testbed up: namespaces {}", st.state.namespaces.join(" "));
    if let Some(store) = st.store {
        println!("  store {store} (netns {})", st.state.namespaces.first().map_or("", |s| s.as_str()));
    }
    for s in &st.switches {
        println!(
            "  switch {} ({}): xdp_txn_switch in netns {}, service {}, maps {}",
            s.name, s.mode, s.namespace, s.service, s.pin_dir
        );
    }
    for g in &st.groups {
        println!(
            "  clients {} ({} clients, {} ms): netns {}, send to {}",
            g.name, g.clients, g.delay_ms, g.namespace, g.target
        );
    }
    for (x, y, ms) in &st.unemulated {
        println!("  note: the {ms} ms between {x} and {y} is not emulated: no netem here, and XDP keeps the packet in the kernel");
    }
    let Some(secs) = a.load_s else {
        if let Some(g) = st.groups.first() {
            println!(
                "  try: ip netns exec {} {} client txn --to {} --increment 1",
                g.namespace,
                innet_exe()?.display(),
                g.target
            );
        }
        return Ok(0);
    };
    // The paper's microbenchmark (Gotthard section 5.1): one counter, one key per transaction.
    let workload = innet_txn::workload::Workload {
        write_ratio: a.write_ratio,
        keys: 1,
        zipf: 0.0,
        think_time: std::time::Duration::ZERO,
        span: 1,
        validated_reads: 0.0,
    };
    let loads = tt::run_load(&st, &workload, std::time::Duration::from_secs_f64(secs), 1)?;
    println!(
        "{:<12} {:>8} {:>10} {:>12} {:>16} {:>15}",
        "group", "clients", "committed", "committed/s", "aborts_by_switch", "aborts_by_store"
    );
    for l in &loads {
        println!(
            "{:<12} {:>8} {:>10} {:>12.0} {:>16} {:>15}",
            l.group,
            l.clients,
            l.stats.committed,
            l.stats.committed as f64 / l.run_s.max(1e-9),
            l.stats.aborts_by_switch,
            l.stats.aborts_by_store
        );
    }
    for (name, counters) in tt::switch_counters(&st)? {
        let get = |k: &str| counters.iter().find(|(n, _)| *n == k).map_or(0, |(_, v)| *v);
        println!(
            "switch {name:<8} forwarded {} aborted {} optimistically_aborted {} learned_replies {}",
            get("forwarded"),
            get("aborted"),
            get("optimistically_aborted"),
            get("learned_replies")
        );
    }
    Ok(if loads.iter().all(|l| l.stats.committed > 0) { 0 } else { 1 })
}

/// `innet testbed up SERVICE` without a topology file (or a chain's counts
/// and keys from one: `chain_keys`, else --auth-key's).
fn run_up(a: TestbedUpArgs, chain_keys: Option<AuthKeys>) -> anyhow::Result<i32> {
    match a.service.as_str() {
        "chain" => {
            use innet_xdp::chain_testbed::{ChainUp, ReplyTo};
            let reply = if a.reply_to_source_port { ReplyTo::SourcePort } else { ReplyTo::ReferencePort };
            let o = ChainUp {
                fabric: a.fabric.fabric(),
                multicast: a.multicast.into(),
                reply,
                auth: chain_keys.or(a.auth_key.map(|k| k.keys)),
                ..ChainUp::new(a.protocol, a.nodes)
            };
            if a.drill {
                return crate::xdp_chain_cmd::run_drill(&o);
            }
            let st = innet_xdp::chain_testbed::up(&o, Some(a.data_plane))?;
            println!("testbed up: {}: namespaces {}", st.topology, st.namespaces.join(" "));
            println!("  {}", fabric_line(&o.fabric));
            for i in 0..a.nodes {
                let ip = innet_xdp::chain_testbed::node_ip(i);
                println!(
                    "  node {i} {ip}:{} in {}",
                    innet_xdp::chain_testbed::udp_port(a.protocol),
                    st.namespaces[1 + i]
                );
            }
            println!("  client namespace {} ({})", testbed::NS_CLIENT, innet_xdp::chain_testbed::CLIENT_IP);
            match reply.port(a.protocol) {
                0 => println!("  replies go to the request's source port"),
                p => println!("  replies go to the client's port {p} (NetChain's P4 reference)"),
            }
            Ok(0)
        }
        "paxos" => crate::xdp_paxos_cmd::run_up_with(
            PaxosUp {
                fabric: a.fabric.fabric(),
                multicast: a.multicast.into(),
                auth: a.auth_key,
                ..PaxosUp::default()
            },
            innet_exe()?,
        ),
        _ => {
            let opts = UpOptions {
                topology: a.service,
                data_plane: Some(a.data_plane),
                mode: a.mode,
                start_store: !a.no_store,
                store_delay_ms: a.store_delay_ms,
                innet_exe: innet_exe()?,
                fabric: a.fabric.fabric(),
                auth_key: a.auth_key,
            };
            let st = testbed::up(&opts)?;
            println!("testbed up: namespaces {}", st.namespaces.join(" "));
            if st.topology == "paxos" {
                crate::xdp_paxos_cmd::print_up(&st);
                return Ok(0);
            }
            for (name, pid) in &st.processes {
                println!("  {name} pid {pid} (log /run/innet/{name}.log)");
            }
            if let Some(dir) = &st.pin_dir {
                println!("  xdp_txn_switch ({}) on innet-sc and innet-ss, maps pinned in {dir}", opts.mode);
                println!("  {}", fabric_line(&opts.fabric));
            }
            println!("  service address {}", testbed::service_addr());
            println!(
                "  try: ip netns exec {} {} client txn --to {} --increment 1",
                testbed::NS_CLIENT,
                opts.innet_exe.display(),
                testbed::service_addr()
            );
            Ok(0)
        }
    }
}

/// How a testbed's XDP programs run, in one line.
fn fabric_line(f: &innet_xdp::fabric::Fabric) -> String {
    format!(
        "XDP in {} mode{}",
        f.mode,
        if f.mode == innet_xdp::fabric::XdpMode::Native && f.threaded != innet_xdp::fabric::ThreadedNapi::Off {
            ", threaded NAPI"
        } else {
            ""
        }
    )
}

fn innet_exe() -> anyhow::Result<PathBuf> {
    std::env::current_exe().context("path of the innet program")
}

pub fn run_testbed(c: TestbedCmd) -> anyhow::Result<i32> {
    match c {
        TestbedCmd::Up(mut a) => {
            anyhow::ensure!(
                a.auth_key.is_none() || !(a.service == "txn" && a.topology.is_some()),
                "--auth-key: `innet testbed up txn --topology` does not wire keys yet (its trees); \
                 run `innet testbed up txn --auth-key FILE` without --topology, or `innet up txn --topology FILE`"
            );
            let topology = load_topology(&a)?;
            let file_key = topology.as_ref().and_then(|t| t.auth_key.clone());
            match topology.map(|t| t.service) {
                Some(Service::Txn(d)) => return run_txn_topology(&d, &a),
                Some(Service::Paxos(p)) => {
                    // The file's keys, else --auth-key's.
                    let auth = match file_key {
                        Some(f) => Some(KeyFile::read(&f).map_err(anyhow::Error::msg)?),
                        None => a.auth_key.take(),
                    };
                    let count = |f: fn(&PaxosRole) -> bool| p.deployment.with_role(f).len();
                    let up = PaxosUp {
                        acceptors: count(|r| matches!(r, PaxosRole::Acceptor { .. })),
                        learners: count(|r| matches!(r, PaxosRole::Learner { .. })),
                        proposers: count(|r| matches!(r, PaxosRole::Proposer { .. })),
                        slots: p.params.slots,
                        auth,
                        ..PaxosUp::default()
                    };
                    return crate::xdp_paxos_cmd::run_up_with(up, innet_exe()?);
                }
                Some(Service::Chain(c)) => {
                    a.protocol = c.protocol;
                    a.nodes = c.deployment.with_role(|r| matches!(r, ChainRole::Node { .. })).len();
                    return run_up(a, c.auth);
                }
                None => {}
            }
            run_up(a, None)
        }
        TestbedCmd::Fail { topology, role } => crate::xdp_paxos_cmd::run_fail(&topology, &role),
        TestbedCmd::Down { only } => {
            let removed = match only.as_deref() {
                None => testbed::down_all()?,
                Some("txn") | Some("chain") => testbed::down()?,
                Some("paxos") => innet_xdp::paxos_testbed::down()?,
                Some("txn-topology") => innet_xdp::txn_topology::down()?,
                Some(t) => {
                    anyhow::bail!("--only {t}: the testbeds are 'txn' (also 'chain'), 'paxos' and 'txn-topology'")
                }
            };
            if removed.is_empty() {
                println!("testbed down: nothing to remove");
            }
            for r in removed {
                println!("removed {r}");
            }
            Ok(0)
        }
        TestbedCmd::Status { tables } => {
            if let Some(st) = innet_xdp::txn_topology::status() {
                println!("{}", serde_json::to_string_pretty(&st)?);
                for (name, counters) in innet_xdp::txn_topology::switch_counters(&st)? {
                    for (k, v) in counters {
                        println!("switch {name} {k:>40} {v}");
                    }
                }
            }
            if let Some(st) = innet_xdp::paxos_testbed::status() {
                crate::xdp_paxos_cmd::print_status(&st)?;
                if testbed::status().is_none() {
                    return Ok(0);
                }
            }
            let Some(st) = testbed::status() else {
                println!("no testbed ({} absent)", testbed::STATE_FILE);
                return Ok(1);
            };
            println!("{}", serde_json::to_string_pretty(&st)?);
            if let Some((protocol, nodes)) = innet_xdp::chain_testbed::parse_topology(&st.topology) {
                for i in 0..nodes {
                    let dir = innet_xdp::chain_testbed::node_pin_dir(i);
                    for (name, v) in innet_xdp::chain::pinned_counters(&dir, protocol)? {
                        println!("node {i} {name:>40} {v}");
                    }
                }
                return Ok(0);
            }
            if let Some(dir) = &st.pin_dir {
                let dir = std::path::Path::new(dir);
                for (name, v) in innet_xdp::txn::pinned_counters(dir)? {
                    println!("{name:>40} {v}");
                }
                if tables {
                    let (state, cache, clients) = innet_xdp::txn::pinned_tables(dir)?;
                    println!("{state:?}");
                    for (i, s) in cache.iter().enumerate().filter(|(_, s)| s.valid) {
                        println!("cache slot {i:>5} key {:>10} stamp {:>10} {:?}", s.key, s.stamp, s.value);
                    }
                    for (i, s) in clients.iter().enumerate().filter(|(_, s)| s.valid) {
                        println!("client slot {i:>4} cl_id {:>10} stamp {:>10} {:?}", s.key, s.stamp, s.value);
                    }
                }
            }
            Ok(0)
        }
    }
}

/// How many requests and rounds an XDP benchmark runs (`bench xdp`, `bench xdp-chain`).
#[derive(Args, Debug)]
pub struct RoundsArgs {
    /// Measured requests per data plane per round.
    #[arg(long, default_value_t = 2000, value_parser = innet_exp::parse::bench_requests)]
    requests: usize,
    /// Unmeasured requests first, per data plane per round.
    #[arg(long, default_value_t = 200, value_parser = innet_exp::parse::bench_warmup)]
    warmup: usize,
    /// Rounds; the data planes take turns within each.
    #[arg(long, default_value_t = 3, value_parser = innet_exp::parse::bench_rounds)]
    rounds: usize,
    /// Requests in flight in the packet-rate phase.
    #[arg(long, default_value_t = 32, value_parser = innet_exp::parse::bench_window)]
    window: usize,
    /// Length of the packet-rate phase per data plane per round, ms (0: none).
    #[arg(long, default_value_t = 1000, value_parser = innet_exp::parse::whole_ms)]
    rate_ms: u64,
    #[command(flatten)]
    fabric: FabricArgs,
}

impl RoundsArgs {
    pub fn fabric_args(&self) -> FabricArgs {
        self.fabric
    }

    pub fn config(&self) -> BenchConfig {
        BenchConfig {
            requests: self.requests,
            warmup: self.warmup,
            rounds: self.rounds,
            window: self.window,
            rate_ms: self.rate_ms,
            fabric: self.fabric.fabric(),
        }
    }
}

#[derive(Args, Debug)]
pub struct BenchXdpArgs {
    #[command(flatten)]
    rounds: RoundsArgs,
    /// Output folder for xdp-rtt.jsonl.
    #[arg(long, default_value = "results/xdp", value_parser = innet_exp::parse::out_dir)]
    out: PathBuf,
}

/// One line per data plane: samples, losses, round trips, rate.
pub fn print_planes(planes: &[Summary]) {
    let w = planes.iter().map(|s| s.name.len()).max().unwrap_or(0).max(16);
    println!(
        "{:<w$} {:>8} {:>6} {:>6} {:>10} {:>8} {:>8} {:>10} {:>9}",
        "data plane", "samples", "lost", "wrong", "median_us", "p99_us", "mean_us", "replies/s", "rate_lost"
    );
    for s in planes {
        println!(
            "{:<w$} {:>8} {:>6} {:>6} {:>10.1} {:>8.1} {:>8.1} {:>10.0} {:>9}",
            s.name, s.samples, s.lost, s.wrong_status, s.median_us, s.p99_us, s.mean_us, s.replies_per_s, s.rate_lost
        );
    }
}

pub fn run_bench_xdp(a: BenchXdpArgs) -> anyhow::Result<i32> {
    let cfg = a.rounds.config();
    let (rec, path) = innet_exp::xdp::bench_rtt(&cfg, &innet_exe()?, &a.out)?;
    print_planes(&rec.planes);
    println!(
        "xdp switch / bare bounce: median {:.2}x, p99 {:.2}x   software / xdp switch: median {:.2}x, p99 {:.2}x",
        rec.ratio_median_xdp_switch_over_bounce,
        rec.ratio_p99_xdp_switch_over_bounce,
        rec.ratio_median_software_over_xdp_switch,
        rec.ratio_p99_software_over_xdp_switch
    );
    println!(
        "software switch / bare udp echo: median {:.2}x, p99 {:.2}x",
        rec.ratio_median_software_over_udp_echo, rec.ratio_p99_software_over_udp_echo
    );
    println!(
        "packet rate ({} in flight): xdp switch / bare bounce {:.2}x, xdp switch / software {:.2}x",
        cfg.window, rec.ratio_rate_xdp_switch_over_bounce, rec.ratio_rate_xdp_switch_over_software
    );
    println!("wrote {}", path.display());
    Ok(if innet_exp::xdp::planes_ok(&rec.planes) { 0 } else { 1 })
}

#[derive(Args, Debug)]
pub struct BenchXdpTxnArgs {
    /// Switch mode: forward, read-cache, early-abort or optimistic-abort.
    #[arg(long, default_value = "optimistic-abort")]
    mode: Mode,
    /// Closed-loop clients.
    #[arg(long, default_value_t = 8, value_parser = innet_exp::parse::clients)]
    clients: u32,
    /// Fraction of transactions that write (the rest read).
    #[arg(long, default_value_t = 0.5, value_parser = innet_exp::parse::ratio)]
    write_ratio: f64,
    /// Keys (1: the paper's single counter).
    #[arg(long, default_value_t = 1, value_parser = innet_exp::parse::txn_keys)]
    keys: u32,
    /// Seconds of load per data plane.
    #[arg(long, default_value_t = 5.0, value_parser = innet_exp::parse::seconds)]
    duration_s: f64,
    /// One-way client <-> switch delay, emulated by the clients.
    #[arg(long, default_value_t = 0.0, value_parser = innet_exp::parse::delay_ms)]
    client_delay_ms: f64,
    /// One-way switch <-> store delay, emulated by the store.
    #[arg(long, default_value_t = 0.0, value_parser = innet_exp::parse::delay_ms)]
    store_delay_ms: f64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Rounds; the data planes take turns within each.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    runs: u32,
    #[command(flatten)]
    fabric: FabricArgs,
    /// The switch alone: an in-kernel generator injects requests at the
    /// XDP switch's client port, sinks on the store's and the client's
    /// devices count what arrives, no end host (decisions/s, and per
    /// CPU-second of the threads doing the work).
    #[arg(long)]
    fabric_only: bool,
    /// `--fabric-only`: requests per path per round.
    #[arg(long, default_value_t = 2_000_000, value_parser = clap::value_parser!(u32).range(1..=1_000_000_000))]
    frames: u32,
    /// `--fabric-only`: the kernel's BPF run-time statistics (ns per
    /// program) on, or off (no clock reads around every program run).
    #[arg(long, value_enum, default_value = "on")]
    bpf_stats: OnOff,
    /// Output folder for xdp-txn.jsonl.
    #[arg(long, default_value = "results/xdp", value_parser = innet_exp::parse::out_dir)]
    out: PathBuf,
}

pub fn run_bench_xdp_txn(a: BenchXdpTxnArgs) -> anyhow::Result<i32> {
    if a.fabric_only {
        let (recs, path) = innet_exp::xdp_fabric::txn_fabric_only(
            a.fabric,
            &innet_exe()?,
            a.runs as usize,
            a.frames,
            a.bpf_stats == OnOff::On,
            &a.out,
        )?;
        crate::xdp_chain_cmd::print_fabric_only(&recs, "decisions");
        println!("wrote {}", path.display());
        return Ok(0);
    }
    let cfg = TxnExperimentConfig {
        mode: a.mode,
        clients: a.clients,
        write_ratio: a.write_ratio,
        keys: a.keys,
        duration_s: a.duration_s,
        client_delay_ms: a.client_delay_ms,
        store_delay_ms: a.store_delay_ms,
        seed: a.seed,
        fabric: a.fabric.fabric(),
    };
    let (recs, path) = innet_exp::xdp::bench_txn(&cfg, a.runs as usize, &innet_exe()?, &a.out)?;
    println!(
        "{} (commit {}, seed {}; {}, load average at the end {:.2})",
        cfg.mode,
        recs[0].git_commit,
        recs[0].seed,
        fabric_line(&cfg.fabric),
        recs.last().map_or(0.0, |r| r.load_average[0])
    );
    println!(
        "{:>3} {:<16} {:>12} {:>8} {:>9} {:>9} {:>16} {:>15} {:>10} {:>9} {:>12}",
        "run",
        "data plane",
        "committed/s",
        "p50_ms",
        "p99_ms",
        "gave_up",
        "aborts_by_switch",
        "aborts_by_store",
        "cpu_us/txn",
        "busy_cpus",
        "of_ceiling"
    );
    for r in &recs {
        println!(
            "{:>3} {:<16} {:>12.0} {:>8.3} {:>9.3} {:>9} {:>16} {:>15} {:>10.1} {:>9.2} {:>11.0}%{}",
            r.run,
            r.data_plane,
            r.num("committed_per_s"),
            r.num("p50_latency_ms"),
            r.num("p99_latency_ms"),
            r.num("gave_up"),
            r.num("aborts_by_switch"),
            r.num("aborts_by_store"),
            r.cpu.machine_us,
            r.cpu.busy_cpus,
            r.ceiling.of_ceiling * 1e2,
            if r.ceiling.generator_bound { " (generator-bound)" } else { "" }
        );
    }
    let c = &recs[0].ceiling.ceiling;
    println!(
        "generator's ceiling (round 0): {:.0} round trips/s at {} clients ({} B requests answered by xdp_bounce on \
         the switch's client port: the same veth path, answered by the cheapest program there is), p50 {:.0} us",
        c.ops_per_s,
        c.clients,
        innet_exp::txn_client::request_len(),
        c.p50_us
    );
    let ratios = innet_exp::xdp::txn_ratios(&recs);
    let median = |f: fn(&(f64, f64, f64)) -> f64| innet_exp::xdp_paxos::median(ratios.iter().map(f).collect());
    let (commit, p50, p99) = (median(|r| r.0), median(|r| r.1), median(|r| r.2));
    println!(
        "xdp / software, median of {} rounds: committed/s {commit:.2}x, p50 latency {p50:.2}x, p99 latency {p99:.2}x \
         (per round: {})",
        ratios.len(),
        ratios.iter().map(|r| format!("{:.2}x", r.0)).collect::<Vec<_>>().join(", ")
    );
    println!("wrote {}", path.display());
    Ok(0)
}
