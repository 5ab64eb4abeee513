//! `innet`: one program for every experiment, check and deployment.

mod chain_cmd;
mod chaos_cmd;
mod kv_cmd;
mod live_cmd;
mod mininet_cmd;
#[cfg(not(feature = "xdp"))]
mod no_xdp;
mod paxos_cmd;
mod reproduce_cmd;
mod sim_cmd;
mod tpcc_cmd;
#[cfg(feature = "xdp")]
mod xdp_chain_cmd;
#[cfg(feature = "xdp")]
mod xdp_cmd;
#[cfg(feature = "xdp")]
mod xdp_paxos_cmd;
#[cfg(feature = "xdp")]
mod xdp_upcall_cmd;
#[cfg(not(feature = "xdp"))]
use no_xdp::{xdp_chain_cmd, xdp_cmd, xdp_paxos_cmd, xdp_upcall_cmd};

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

const ABOUT: &str = "innet: in-network coordination without switch hardware.

Three services, each in a deterministic simulator (the default for
experiments), live over UDP with user-space software switches, and with its
data-plane roles as XDP/eBPF programs in the kernel (root):
transactions with in-network optimistic abort (Gotthard / NOCC), consensus
as a network service (CAANS: Paxos coordinator and acceptors in the data
plane), and chain-replicated key-value storage (NetCRAQ, NetChain baseline).

Start here:
  innet demo                      the headline experiment of each service: tables, JSON lines, plots
  innet reproduce                 all 26 results of the four papers beside the papers' numbers
                                  (results/reproduce/REPORT.md and .html; --scale 0.1 for a quick look)

Transactions (Gotthard 2016, NOCC 2018):
  innet sim txn --mode optimistic-abort --write-ratio 0.5 --json
                                  one simulated point, as JSON
  innet bench txn                 the paper's Figure 7 sweep (all modes x write ratios)
  innet bench txn --figure fig8   Gotthard Figs. 2, 6, 8, 9, 10, 12 and NOCC Fig. 1 (fig2 ... nocc1)
  innet bench txn --figure fig11  Gotthard Fig. 11 (locality); nocc3, nocc4: NOCC Figs. 3, 4
  innet check txn --seeds 1000    random faulty runs through the serializability checker
  innet bench tpcc                TPC-C per transaction type and mode (Gotthard Figure 13)
  innet bench tpcc --figure all   Gotthard Figures 13, 14 and NOCC Figure 5 with plots
  innet up txn --mode optimistic-abort
                                  a live store and switch on loopback
  innet client tpcc --to SWITCH --load
                                  TPC-C terminals against a live switch (loads and checks the store)

Consensus as a network service (CAANS 2016):
  innet check paxos --seeds 1000  loss, duplication, reordering, acceptor crashes, coordinator failover
  innet bench paxos               Figures 7a/7b, Table 4, Figure 8: switch vs software deployment
  innet up paxos                  coordinator, acceptors, backup coordinator and learners on loopback

Chain replication in the network (NetCRAQ 2022, NetChain 2018 as baseline):
  innet check chain --seeds 1000  random faulty runs (loss, reordering, crashes) through the linearizability checker
  innet bench chain               the NetCRAQ paper's Figures 3-6 in the simulator
  innet up chain --protocol netcraq --nodes 4
                                  a live chain and its control plane on loopback (--drill: kill and recover a node)

XDP data plane (root; namespaces and veths on this machine):
  innet testbed up txn|paxos|chain ...
                                  build a testbed, attach the BPF programs, start the end hosts
  innet bench xdp | xdp-paxos | xdp-chain
                                  XDP vs bare XDP bounce vs user-space software, side by side
  innet bench xdp-paxos-table1    CAANS Table 1: the BPF coordinator and acceptor vs XDP forwarding, ns/packet
  innet bench xdp-upcall          decisions from XDP to a learner: socket vs batch datagram vs ring buffer vs AF_XDP
  innet testbed down              remove everything the testbed made

Hostile traffic:
  innet chaos txn|paxos|chain --duration-s 60 --seed 1
                                  a live deployment under load, an adversary (forged, replayed, reordered,
                                  flooding traffic, kill -9 and restarts), the service's checker on the histories";

#[derive(Parser, Debug)]
#[command(name = "innet", version = innet_exp::results::VERSION, about = ABOUT, long_about = ABOUT)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the headline experiment of each service in the simulator: tables, JSON lines and PNG plots.
    Demo(sim_cmd::DemoArgs),
    /// Run one experiment point in the simulator.
    #[command(subcommand)]
    Sim(sim_cmd::SimService),
    /// Run an experiment sweep and write JSON lines and plots.
    #[command(subcommand)]
    Bench(sim_cmd::BenchService),
    /// Run many random seeds with faults through the correctness checker.
    #[command(subcommand)]
    Check(sim_cmd::CheckService),
    /// Start a live deployment on loopback and print its addresses.
    Up(live_cmd::UpCmd),
    /// Run a transaction store process.
    Store(live_cmd::StoreArgs),
    /// Run a user-space software switch process.
    Switch(live_cmd::SwitchCmd),
    /// Send transactions to a live deployment.
    Client(live_cmd::ClientCmd),
    /// Build or remove a network-namespace testbed with the XDP (or software) data plane (root).
    #[command(subcommand)]
    Testbed(xdp_cmd::TestbedCmd),
    /// Run a replica of the consensus-replicated key-value store (LevelDB).
    KvReplica(paxos_cmd::KvReplicaArgs),
    /// Talk to the key-value service's replicas: put, get, del, cas (fails over between --replicas).
    #[command(subcommand)]
    Kv(kv_cmd::KvCmd),
    /// Check a topology file and show what it resolves to (nodes, tables, links).
    #[command(subcommand)]
    Topology(live_cmd::TopologyCmd),
    /// Run a topology file as a Mininet network (root): every node in a Mininet host, load, teardown.
    Mininet(mininet_cmd::MininetArgs),
    /// Regenerate all 26 results of the four papers beside the papers' numbers (REPORT.md, REPORT.html).
    Reproduce(reproduce_cmd::ReproduceArgs),
    /// A live deployment under load and an adversary (forged, replayed, reordered, flooding traffic; kills), checked.
    Chaos(chaos_cmd::ChaosArgs),
}

/// Lets every numeric flag see a negative value (and refuse it with its own
/// message) rather than clap taking `-1` for a flag.
fn negative_numbers_are_values(c: clap::Command) -> clap::Command {
    c.allow_negative_numbers(true).mut_subcommands(negative_numbers_are_values)
}

/// Clap's error as one line: its message without the usage block, whitespace
/// collapsed.
fn one_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let head = text.split("\nUsage:").next().unwrap_or(&text);
    let head = head.split("\nFor more information").next().unwrap_or(head);
    let words: Vec<&str> = head.split_whitespace().collect();
    format!("innet: {} (see --help)", words.join(" "))
}

fn parse_args() -> Cli {
    let matches = negative_numbers_are_values(Cli::command()).try_get_matches();
    match matches.and_then(|m| Cli::from_arg_matches(&m)) {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            match e.kind() {
                ErrorKind::DisplayHelp
                | ErrorKind::DisplayVersion
                | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => e.exit(),
                _ => {
                    eprintln!("{}", one_line(&e));
                    std::process::exit(2);
                }
            }
        }
    }
}

/// Diagnostics go through `tracing` to stderr, filtered by `RUST_LOG`
/// (e.g. `RUST_LOG=info`, `RUST_LOG=innet_live=debug`); warnings and errors
/// only by default. Results stay on stdout.
fn init_logs() {
    use std::io::IsTerminal;
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let ansi = std::io::stderr().is_terminal();
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(ansi).with_writer(std::io::stderr).try_init();
}

fn main() {
    init_logs();
    let cli = parse_args();
    let result = match cli.command {
        Command::Demo(a) => sim_cmd::run_demo(a),
        Command::Sim(s) => sim_cmd::run_sim(s),
        Command::Bench(s) => sim_cmd::run_bench(s),
        Command::Check(s) => sim_cmd::run_check(s),
        Command::Up(a) => live_cmd::run_up(a),
        Command::Store(a) => live_cmd::run_store(a),
        Command::Switch(a) => live_cmd::run_switch(a),
        Command::Client(a) => live_cmd::run_client(a),
        Command::Testbed(c) => xdp_cmd::run_testbed(c),
        Command::KvReplica(a) => paxos_cmd::run_kv_replica(a),
        Command::Kv(c) => kv_cmd::run(c),
        Command::Topology(c) => live_cmd::run_topology_cmd(c),
        Command::Mininet(a) => mininet_cmd::run_mininet(a),
        Command::Reproduce(a) => reproduce_cmd::run(a),
        Command::Chaos(a) => chaos_cmd::run(a),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("innet: error: {e:#}");
            std::process::exit(2);
        }
    }
}
