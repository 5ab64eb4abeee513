//! Chain key-value store commands: `innet check chain`, `innet bench chain`,
//! `innet up chain`.

use std::time::Instant;

use clap::Args;
use innet_chain::Protocol;
use innet_exp::chain_sim;

fn parse_protocols(s: &str) -> anyhow::Result<Vec<Protocol>> {
    s.split(',')
        .filter(|x| !x.trim().is_empty())
        .map(|p| p.trim().parse::<Protocol>().map_err(anyhow::Error::msg))
        .collect()
}

#[derive(Args, Debug)]
pub struct CheckChainArgs {
    /// How many random seeds to run (each for every protocol).
    #[arg(long, default_value_t = 100)]
    seeds: u64,
    /// First seed.
    #[arg(long, default_value_t = 1)]
    start_seed: u64,
    /// Replay just this seed (prints the configuration and every violation).
    #[arg(long)]
    seed: Option<u64>,
    /// Comma-separated protocols.
    #[arg(long, default_value = "netcraq,netchain")]
    protocols: String,
    /// Simulated seconds per run.
    #[arg(long, default_value_t = 1.0)]
    duration_s: f64,
}

pub fn run_check(a: CheckChainArgs) -> anyhow::Result<i32> {
    let protocols = parse_protocols(&a.protocols)?;
    anyhow::ensure!(a.duration_s > 0.0, "--duration-s must be > 0");
    let (seeds, verbose) = match a.seed {
        Some(s) => (s..s + 1, true),
        None => (a.start_seed..a.start_seed + a.seeds, false),
    };
    let started = Instant::now();
    let (mut bad, mut runs, mut ops, mut reads, mut removals, mut resyncs) = (0u64, 0u64, 0u64, 0usize, 0u64, 0u64);
    for seed in seeds.clone() {
        for &p in &protocols {
            let cfg = chain_sim::random_check_config(seed, p, a.duration_s);
            let run = chain_sim::run_checked(&cfg).map_err(anyhow::Error::msg)?;
            runs += 1;
            ops += run.ops;
            removals += run.removals;
            resyncs += run.resyncs;
            if verbose {
                println!("{}", serde_json::to_string(&run.config)?);
                println!("network: {:?}", run.net);
                println!("operations {} removals {} resyncs {}", run.ops, run.removals, run.resyncs);
            }
            match &run.result {
                Ok(s) => reads += s.reads,
                Err(errors) => {
                    bad += 1;
                    println!("VIOLATION seed {seed} protocol {p}:");
                    for e in errors.iter().take(if verbose { usize::MAX } else { 5 }) {
                        println!("  {e}");
                    }
                    println!("  replay: innet check chain --seed {seed} --protocols {p} --duration-s {}", a.duration_s);
                }
            }
            if seed == seeds.start {
                let again = chain_sim::run_checked(&cfg).map_err(anyhow::Error::msg)?;
                if again.trace_hash != run.trace_hash {
                    bad += 1;
                    println!("NONDETERMINISM seed {seed} protocol {p}: trace hashes differ");
                }
            }
        }
    }
    println!(
        "checked {runs} runs ({} seeds x {} protocols, {} s simulated each; loss, reordering, jitter, node crashes and \
         restarts) in {:.1} s: {ops} operations ({reads} reads checked), {removals} node removals, {resyncs} resyncs; \
         {bad} violations",
        seeds.end - seeds.start,
        protocols.len(),
        a.duration_s,
        started.elapsed().as_secs_f64()
    );
    Ok(if bad == 0 { 0 } else { 1 })
}
