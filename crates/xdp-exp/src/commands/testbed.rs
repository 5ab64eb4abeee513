//! `innet testbed up|down|fail|status`: the network-namespace testbeds
//! (crates/xdp, docs/xdp.md).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use innet_chain::deploy::ChainRole;
use innet_core::auth::AuthKeys;
use innet_live::auth::KeyFile;
use innet_paxos::deploy::{PaxosParams, PaxosShape};
use innet_topology::Service;
use innet_txn::switch::Mode;
use innet_xdp::paxos_testbed::PaxosUp;
use innet_xdp::testbed::{self, DataPlaneAt, UpOptions};

use super::{fabric_line, innet_exe};
use crate::fabric::FabricArgs;
use crate::paxos::McastArg;

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
    /// process in the switch namespace; `software` is refused, naming
    /// these two). The chain and paxos testbeds run xdp.
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
    print_txn_topology(&st);
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
    print_topology_loads(&st, &loads)?;
    Ok(if loads.iter().all(|l| l.stats.committed > 0) { 0 } else { 1 })
}

/// What `testbed up txn --topology` built: the store, every switch and
/// client group, and the delays XDP cannot emulate.
fn print_txn_topology(st: &innet_xdp::txn_topology::TopologyState) {
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
}

/// `--load-s`'s report: what each client group committed, then what each
/// switch counted.
fn print_topology_loads(
    st: &innet_xdp::txn_topology::TopologyState,
    loads: &[innet_xdp::txn_topology::GroupLoad],
) -> anyhow::Result<()> {
    println!(
        "{:<12} {:>8} {:>10} {:>12} {:>16} {:>15}",
        "group", "clients", "committed", "committed/s", "aborts_by_switch", "aborts_by_store"
    );
    for l in loads {
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
    for (name, counters) in innet_xdp::txn_topology::switch_counters(st)? {
        let get = |k: &str| counters.iter().find(|(n, _)| *n == k).map_or(0, |(_, v)| *v);
        println!(
            "switch {name:<8} forwarded {} aborted {} optimistically_aborted {} learned_replies {}",
            get("forwarded"),
            get("aborted"),
            get("optimistically_aborted"),
            get("learned_replies")
        );
    }
    Ok(())
}

/// `innet testbed up SERVICE` without a topology file (or a chain's counts
/// and keys from one: `chain_keys`, else --auth-key's).
fn run_up(a: TestbedUpArgs, chain_keys: Option<AuthKeys>) -> anyhow::Result<i32> {
    match a.service.as_str() {
        "chain" => run_chain_up(a, chain_keys),
        "paxos" => super::paxos::run_up_with(
            PaxosUp {
                fabric: a.fabric.fabric(),
                multicast: a.multicast.into(),
                auth: a.auth_key,
                ..PaxosUp::default()
            },
            innet_exe()?,
        ),
        _ => run_txn_up(a),
    }
}

/// `innet testbed up chain` (its counts from the flags or a topology file).
fn run_chain_up(a: TestbedUpArgs, chain_keys: Option<AuthKeys>) -> anyhow::Result<i32> {
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
        return super::chain::run_drill(&o);
    }
    let st = innet_xdp::chain_testbed::up(&o, Some(a.data_plane))?;
    println!("testbed up: {}: namespaces {}", st.topology, st.namespaces.join(" "));
    println!("  {}", fabric_line(&o.fabric));
    for i in 0..a.nodes {
        let ip = innet_xdp::chain_testbed::node_ip(i);
        println!("  node {i} {ip}:{} in {}", innet_xdp::chain_testbed::udp_port(a.protocol), st.namespaces[1 + i]);
    }
    println!("  client namespace {} ({})", testbed::NS_CLIENT, innet_xdp::chain_testbed::CLIENT_IP);
    match reply.port(a.protocol) {
        0 => println!("  replies go to the request's source port"),
        p => println!("  replies go to the client's port {p} (NetChain's P4 reference)"),
    }
    Ok(0)
}

/// `innet testbed up txn` without a topology file: client, switch (XDP
/// or a software switch process) and store namespaces.
fn run_txn_up(a: TestbedUpArgs) -> anyhow::Result<i32> {
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
        super::paxos::print_up(&st);
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

pub fn run_testbed(c: TestbedCmd) -> anyhow::Result<i32> {
    match c {
        TestbedCmd::Up(a) => run_testbed_up(a),
        TestbedCmd::Fail { topology, role } => super::paxos::run_fail(&topology, &role),
        TestbedCmd::Down { only } => run_down(only.as_deref()),
        TestbedCmd::Status { tables } => run_status(tables),
    }
}

/// `innet testbed up SERVICE [--topology FILE]`.
fn run_testbed_up(mut a: TestbedUpArgs) -> anyhow::Result<i32> {
    anyhow::ensure!(
        a.auth_key.is_none() || !(a.service == "txn" && a.topology.is_some()),
        "--auth-key: `innet testbed up txn --topology` does not wire keys yet (its trees); \
         run `innet testbed up txn --auth-key FILE` without --topology, or `innet up txn --topology FILE`"
    );
    let topology = load_topology(&a)?;
    let file_key = topology.as_ref().and_then(|t| t.auth_key.clone());
    match topology.map(|t| t.service) {
        Some(Service::Txn(d)) => run_txn_topology(&d, &a),
        Some(Service::Paxos(p)) => {
            // The file's keys, else --auth-key's.
            let auth = match file_key {
                Some(f) => Some(KeyFile::read(&f).map_err(anyhow::Error::msg)?),
                None => a.auth_key.take(),
            };
            let up = PaxosUp {
                shape: PaxosShape::of(&p.deployment),
                // The file's ring; the programs' other settings
                // stay the defaults, as before.
                params: PaxosParams { slots: p.params.slots, ..PaxosParams::default() },
                auth,
                ..PaxosUp::default()
            };
            super::paxos::run_up_with(up, innet_exe()?)
        }
        Some(Service::Chain(c)) => {
            a.protocol = c.protocol;
            a.nodes = c.deployment.with_role(|r| matches!(r, ChainRole::Node { .. })).len();
            run_up(a, c.auth)
        }
        None => run_up(a, None),
    }
}

/// `innet testbed down [--only TOPOLOGY]`.
fn run_down(only: Option<&str>) -> anyhow::Result<i32> {
    let removed = match only {
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

/// `innet testbed status [--tables]`: every running testbed's state and
/// its data plane's counters; exit status 1 if none runs.
fn run_status(tables: bool) -> anyhow::Result<i32> {
    if let Some(st) = innet_xdp::txn_topology::status() {
        println!("{}", serde_json::to_string_pretty(&st)?);
        for (name, counters) in innet_xdp::txn_topology::switch_counters(&st)? {
            for (k, v) in counters {
                println!("switch {name} {k:>40} {v}");
            }
        }
    }
    if let Some(st) = innet_xdp::paxos_testbed::status() {
        super::paxos::print_status(&st)?;
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
        print_txn_switch(std::path::Path::new(dir), tables)?;
    }
    Ok(0)
}

/// The XDP transaction switch's counters pinned in `dir`, and with
/// `tables` its registers and every valid cache and client slot.
fn print_txn_switch(dir: &std::path::Path, tables: bool) -> anyhow::Result<()> {
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
    Ok(())
}
