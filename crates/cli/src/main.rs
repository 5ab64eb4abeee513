//! `innet`: one program for every experiment, check and deployment.

mod chain_cmd;
mod live_cmd;
mod paxos_cmd;
mod sim_cmd;
mod xdp_chain_cmd;
mod xdp_cmd;
mod xdp_paxos_cmd;

use clap::{Parser, Subcommand};

const ABOUT: &str = "innet: in-network coordination without switch hardware.

Transactions with in-network optimistic abort (Gotthard / NOCC) and an
in-network chain-replicated key-value store (NetCRAQ / NetChain) run in a
deterministic simulator (the default for experiments) and live over UDP.

Start here:
  innet demo                      run the headline experiments, print a table, write results and plots
  innet sim txn --mode optimistic-abort --write-ratio 0.5 --json
                                  one simulated point, as JSON
  innet bench txn                 the paper's Figure 7 sweep (all modes x write ratios)
  innet check txn --seeds 1000    random faulty runs through the serializability checker
  innet up txn --mode optimistic-abort
                                  a live store and switch on loopback
  innet testbed up txn --data-plane xdp
                                  namespaces + veths, the XDP switch attached, a store started (root)
  innet bench xdp                 RTT: XDP switch vs bare XDP bounce vs software switch (root)

Chain replication in the network (NetCRAQ 2022, NetChain 2018 as baseline):
  innet check chain --seeds 1000  random faulty runs (loss, reordering, crashes) through the linearizability checker
  innet bench chain               the NetCRAQ paper's Figures 3-6 in the simulator
  innet up chain --protocol netcraq --nodes 4
                                  a live chain and its control plane on loopback (--drill: kill and recover a node)";

#[derive(Parser, Debug)]
#[command(name = "innet", version, about = ABOUT, long_about = ABOUT)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the headline experiments in the simulator: summary table, JSON lines and PNG plots.
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
}

fn main() {
    let cli = Cli::parse();
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
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("innet: error: {e:#}");
            std::process::exit(2);
        }
    }
}
