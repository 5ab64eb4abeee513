//! `innet`: one program for every experiment, check and deployment. It
//! parses the command line and calls the library function that runs the
//! command (each one's flags are declared beside it: `innet_exp::commands`,
//! `innet_xdp_exp::commands`, `innet_reproduce::commands`).

mod chaos_cmd;
mod kv_cmd;
mod mininet_cmd;
#[cfg(not(feature = "xdp"))]
mod no_xdp;

use innet_exp::commands::{chain, live, paxos, tpcc, txn};
#[cfg(feature = "xdp")]
use innet_xdp_exp::commands as xdp;
#[cfg(not(feature = "xdp"))]
use no_xdp as xdp;
// CAANS Table 1 on the XDP programs is a result of the reproduction.
#[cfg(feature = "xdp")]
use innet_reproduce::commands as paper_xdp;
#[cfg(not(feature = "xdp"))]
use no_xdp::paxos as paper_xdp;

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
    Demo(txn::DemoArgs),
    /// Run one experiment point in the simulator.
    #[command(subcommand)]
    Sim(SimService),
    /// Run an experiment sweep and write JSON lines and plots.
    #[command(subcommand)]
    Bench(BenchService),
    /// Run many random seeds with faults through the correctness checker.
    #[command(subcommand)]
    Check(CheckService),
    /// Start a live deployment on loopback and print its addresses.
    Up(UpCmd),
    /// Run a transaction store process.
    Store(live::StoreArgs),
    /// Run a user-space software switch process.
    Switch(SwitchCmd),
    /// Send transactions to a live deployment.
    Client(ClientCmd),
    /// Build or remove a network-namespace testbed with the XDP (or software) data plane (root).
    #[command(subcommand)]
    Testbed(xdp::testbed::TestbedCmd),
    /// Run a replica of the consensus-replicated key-value store (LevelDB).
    KvReplica(paxos::KvReplicaArgs),
    /// Talk to the key-value service's replicas: put, get, del, cas (fails over between --replicas).
    #[command(subcommand)]
    Kv(kv_cmd::KvCmd),
    /// Check a topology file and show what it resolves to (nodes, tables, links).
    #[command(subcommand)]
    Topology(live::TopologyCmd),
    /// Run a topology file as a Mininet network (root): every node in a Mininet host, load, teardown.
    Mininet(mininet_cmd::MininetArgs),
    /// Regenerate all 26 results of the four papers beside the papers' numbers (REPORT.md, REPORT.html).
    Reproduce(innet_reproduce::commands::ReproduceArgs),
    /// A live deployment under load and an adversary (forged, replayed, reordered, flooding traffic; kills), checked.
    Chaos(chaos_cmd::ChaosArgs),
}

#[derive(Subcommand, Debug)]
pub enum SimService {
    /// One point of the transaction experiment (Gotthard section 5.3).
    Txn {
        #[command(flatten)]
        point: innet_exp::txn::TxnPointConfig,
        /// Print one JSON object instead of a sentence.
        #[arg(long)]
        json: bool,
    },
    /// One point of the chain experiment (NetCRAQ or NetChain, open-loop load, switch service model).
    Chain(chain::SimChainArgs),
    /// One run of the consensus service (CAANS).
    Paxos(paxos::SimPaxosArgs),
}

#[derive(Subcommand, Debug)]
pub enum BenchService {
    /// The write-ratio sweep of Gotthard Figure 7 (committed/s and latency per mode).
    Txn(txn::BenchTxnArgs),
    /// Round trip of an optimistically aborted transaction through the XDP
    /// switch, a bare XDP bounce, the user-space software switch and a bare
    /// UDP echo, side by side on the testbed (needs root).
    Xdp(xdp::txn::BenchXdpArgs),
    /// The transaction experiment (closed-loop clients) through the XDP
    /// switch and through the software switch, side by side on the testbed
    /// (needs root).
    XdpTxn(xdp::txn::BenchXdpTxnArgs),
    /// The NetCRAQ paper's Figures 3-6 (NetCRAQ and NetChain side by side) in the simulator.
    Chain(chain::BenchChainArgs),
    /// The live NetCRAQ chain (3 nodes, in memory) beside etcd 3.4 (3
    /// members on loopback, data on disk and on tmpfs), both started by the
    /// benchmark: puts and linearizable gets at equal clients, with the load
    /// generator's ceiling.
    ChainEtcd(chain::BenchChainEtcdArgs),
    /// Request round trip and rate through the XDP chain, a bare XDP bounce
    /// and the user-space software switch chain, side by side (needs root).
    XdpChain(xdp::chain::BenchXdpChainArgs),
    /// CAANS end to end: coordinator and acceptors in XDP on the testbed vs
    /// user-space processes vs software switches, side by side (needs root).
    XdpPaxos(xdp::paxos::BenchXdpPaxosArgs),
    /// CAANS Table 1: ns per packet of the XDP coordinator and acceptor
    /// against plain XDP forwarding (BPF_PROG_TEST_RUN; needs root).
    XdpPaxosTable1(paper_xdp::BenchTable1Args),
    /// Decided Paxos instances from an XDP program to a user-space learner:
    /// one datagram each (today), batch datagrams, a BPF ring buffer, an
    /// AF_XDP socket; in-kernel and socket senders (needs root).
    XdpUpcall(xdp::upcall::BenchXdpUpcallArgs),
    /// The end hosts of a running `innet testbed up paxos` (learners, load
    /// proposers; run it in the hosts namespace: `ip netns exec innet-px-hosts
    /// innet bench xdp-paxos-hosts ...`), printing one JSON result line;
    /// `--backup only` runs just the backup coordinator until SIGTERM (the
    /// process `testbed up paxos` starts).
    XdpPaxosHosts(xdp::paxos::XdpPaxosHostsArgs),
    /// CAANS Figures 7a/7b, Table 4 and Figure 8, switch and software deployments side by side.
    Paxos(paxos::BenchPaxosArgs),
    /// TPC-C at the papers' reduced scale, per transaction type and mode (Gotthard Figure 13).
    Tpcc(tpcc::BenchTpccArgs),
}

#[derive(Subcommand, Debug)]
pub enum CheckService {
    /// Random runs with loss, duplication, jitter and reordering through the serializability checker.
    Txn(innet_exp::commands::CheckModesArgs),
    /// Random NetCRAQ and NetChain runs with loss, reordering, node crashes and recovery through the linearizability checker.
    Chain(chain::CheckChainArgs),
    /// Random runs with loss, duplication, reordering, acceptor crashes and coordinator failover
    /// through the agreement / validity / exactly-once checker.
    Paxos(paxos::CheckPaxosArgs),
    /// Random faulty TPC-C runs through the serializability checker and TPC-C's consistency conditions.
    Tpcc(innet_exp::commands::CheckModesArgs),
}

/// Start a store and a switch on loopback and print their UDP addresses.
#[derive(clap::Args, Debug)]
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
    Txn(live::UpTxnArgs),
    /// A NetCRAQ or NetChain chain and its control plane on loopback.
    ///
    /// Prints one line per node, `nodeI HOST:PORT` (node0 is the head),
    /// then serves until SIGINT or SIGTERM; `--drill` instead kills and
    /// recovers the middle node under client load and reports.
    Chain(chain::UpChainArgs),
    /// The consensus service (CAANS): coordinator, acceptors, backup coordinator, learners.
    ///
    /// Prints one line per node, `NAME HOST:PORT`, runs until SIGINT/SIGTERM
    /// (or --duration-s), then prints what was committed and delivered.
    Paxos(paxos::UpPaxosArgs),
}

/// Run a transaction switch (user-space software switch over UDP).
#[derive(clap::Args, Debug)]
pub struct SwitchCmd {
    #[command(subcommand)]
    service: SwitchService,
}

#[derive(Subcommand, Debug)]
enum SwitchService {
    /// The transaction switch. Prints `switch HOST:PORT` once listening,
    /// runs until SIGINT or SIGTERM, then prints its counters.
    Txn(live::SwitchTxnArgs),
    /// A bare UDP echo (blocking receive, send back to the sender): the
    /// floor a user-space switch's round trip is measured against. Prints
    /// `echo HOST:PORT` once listening, runs until SIGINT or SIGTERM.
    Echo(live::SwitchEchoArgs),
}

/// Send transactions to a switch or store.
#[derive(clap::Args, Debug)]
pub struct ClientCmd {
    #[command(subcommand)]
    service: ClientService,
}

#[derive(Subcommand, Debug)]
enum ClientService {
    /// One transaction (--op ..., --increment KEY or --read KEY), or a load
    /// run (--load). Prints the outcome as JSON. Exit status 0 if committed,
    /// 1 if not.
    Txn(live::ClientTxnArgs),
    /// One get or put against a live chain (NetCRAQ or NetChain). Prints the
    /// outcome as JSON; exit status 0 if answered, 1 if not.
    Chain(chain::ClientChainArgs),
    /// TPC-C terminals against a live switch (--load): loads the store over
    /// the wire, runs the mix (or --only one type), reads the database back
    /// and checks TPC-C's consistency conditions. Prints the record as JSON;
    /// exit status 0 if transactions committed and every condition holds.
    Tpcc(tpcc::ClientTpccArgs),
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
    let result = run(cli.command);
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("innet: error: {e:#}");
            std::process::exit(2);
        }
    }
}

/// Calls the library function that runs `command`.
fn run(command: Command) -> anyhow::Result<i32> {
    match command {
        Command::Demo(a) => txn::run_demo(a),
        Command::Sim(SimService::Txn { point, json }) => txn::run_sim(point, json),
        Command::Sim(SimService::Chain(a)) => chain::run_sim(a),
        Command::Sim(SimService::Paxos(a)) => paxos::run_sim(a),
        Command::Bench(s) => run_bench(s),
        Command::Check(CheckService::Txn(a)) => txn::run_check(a),
        Command::Check(CheckService::Chain(a)) => chain::run_check(a),
        Command::Check(CheckService::Paxos(a)) => paxos::run_check(a),
        Command::Check(CheckService::Tpcc(a)) => tpcc::run_check(a),
        Command::Up(UpCmd { service: UpService::Txn(a) }) => live::run_up(a),
        Command::Up(UpCmd { service: UpService::Chain(a) }) => chain::run_up(a),
        Command::Up(UpCmd { service: UpService::Paxos(a) }) => paxos::run_up(a),
        Command::Store(a) => live::run_store(a),
        Command::Switch(SwitchCmd { service: SwitchService::Txn(a) }) => live::run_switch(a),
        Command::Switch(SwitchCmd { service: SwitchService::Echo(a) }) => live::run_echo(a),
        Command::Client(ClientCmd { service: ClientService::Txn(a) }) => live::run_client(a),
        Command::Client(ClientCmd { service: ClientService::Chain(a) }) => chain::run_client(a),
        Command::Client(ClientCmd { service: ClientService::Tpcc(a) }) => tpcc::run_client(a),
        Command::Testbed(c) => xdp::testbed::run_testbed(c),
        Command::KvReplica(a) => paxos::run_kv_replica(a),
        Command::Kv(c) => kv_cmd::run(c),
        Command::Topology(c) => live::run_topology_cmd(c),
        Command::Mininet(a) => mininet_cmd::run_mininet(a),
        Command::Reproduce(a) => innet_reproduce::commands::run(a),
        Command::Chaos(a) => chaos_cmd::run(a),
    }
}

fn run_bench(s: BenchService) -> anyhow::Result<i32> {
    use innet_reproduce::commands as paper;
    match s {
        BenchService::Txn(a) => match a.figure.clone() {
            Some(name) => paper::run_txn_figure_named(&name, &a),
            None => txn::run_bench(a),
        },
        BenchService::Xdp(a) => xdp::txn::run_bench_xdp(a),
        BenchService::XdpTxn(a) => xdp::txn::run_bench_xdp_txn(a),
        BenchService::Chain(a) => chain::run_bench(a),
        BenchService::ChainEtcd(a) => chain::run_bench_etcd(a),
        BenchService::XdpChain(a) => xdp::chain::run(a),
        BenchService::XdpPaxos(a) => xdp::paxos::run_bench(a),
        BenchService::XdpPaxosTable1(a) => paper_xdp::run_table1(a),
        BenchService::XdpUpcall(a) => xdp::upcall::run(a),
        BenchService::XdpPaxosHosts(a) => xdp::paxos::run_hosts(a),
        BenchService::Paxos(a) => match a.figure {
            Some(f) => paper::run_paxos_figure(f, &a),
            None => paxos::run_bench(a),
        },
        BenchService::Tpcc(a) => tpcc::run_bench(a),
    }
}
