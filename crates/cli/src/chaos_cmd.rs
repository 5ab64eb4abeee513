//! `innet chaos txn|paxos|chain`: a live deployment under load and an
//! adversary, checked (innet_chaos; docs/security.md "Chaos").

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use innet_chaos::{ChaosConfig, ChaosService};

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Service {
    Txn,
    Paxos,
    Chain,
}

/// Runs a live deployment of SERVICE on loopback (its roles as `innet`
/// processes) under client load for --duration-s, while an adversary
/// outside it (ordinary UDP sockets on this machine) sends forged,
/// malformed, replayed, reordered and flooding traffic of every message
/// type to every role and SIGKILLs and restarts the processes the service
/// can restart; then checks the clients' histories with the service's
/// checker (serializability, agreement and exactly-once, linearizability).
/// Prints the checker's verdict, the peak RSS of every process, the
/// packets per attack and message type, the kills, and the command that
/// replays the schedule. Exit code 1 on any violation, panic or process
/// that ended on its own.
#[derive(Args, Debug)]
pub struct ChaosArgs {
    /// txn, paxos or chain.
    service: Service,
    /// Seconds of load and attacks (2 ..= 3600); the deployment drains 3 s more.
    #[arg(long, default_value_t = 20.0, value_parser = innet_exp::parse::seconds)]
    duration_s: f64,
    /// Seed of the schedule: attacks, their order, kill and restart times.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Paxos: the key-value service's crash campaign instead of the
    /// adversary's: coordinator, persistent acceptors, backup and three
    /// `innet kv-replica` processes; clients put, get, delete and CAS on a
    /// few keys while acceptors and replicas are SIGKILLed and restarted
    /// and the coordinator is killed; the history is checked for
    /// linearizability, lost acknowledged writes and identical replicas.
    #[arg(long)]
    kv: bool,
    /// With --kv: restart the killed coordinator too, again and again (a
    /// restarted coordinator takes the role back from the backup: needs
    /// failback).
    #[arg(long)]
    coordinator_restarts: bool,
    /// Folder for the topology files, the store's data and every process's log.
    #[arg(long, default_value = "results/chaos", value_parser = innet_exp::parse::out_dir)]
    out: PathBuf,
}

pub fn run(a: ChaosArgs) -> anyhow::Result<i32> {
    let service = match a.service {
        Service::Txn => ChaosService::Txn,
        Service::Paxos => ChaosService::Paxos,
        Service::Chain => ChaosService::Chain,
    };
    let cfg = ChaosConfig {
        service,
        duration_s: a.duration_s,
        seed: a.seed,
        exe: std::env::current_exe()?,
        dir: a.out.join(if a.kv { "paxos-kv" } else { service.name() }),
        kv: a.kv,
        coordinator_restarts: a.coordinator_restarts,
    };
    cfg.validate().map_err(anyhow::Error::msg)?;
    let r = innet_chaos::run(&cfg)?;
    println!("chaos {}: seed {}, {} s", r.service, r.seed, r.duration_s);
    println!("check: {}", if r.checked.is_empty() { "not reached" } else { &r.checked });
    for (t, what) in &r.events {
        println!("event {t:.2} s: {what}");
    }
    if !r.counts.is_empty() {
        let counts: Vec<String> = r.counts.iter().map(|(n, c)| format!("{n} {c}")).collect();
        println!("counts: {}", counts.join(" "));
    }
    for (name, kib) in &r.rss_max_kib {
        println!("rss_max {name} {kib} KiB");
    }
    for (attack, n) in r.per_attack() {
        println!("attack {attack} {n} packets");
    }
    for ((attack, kind), n) in &r.packets {
        println!("packets {attack} {kind} {n}");
    }
    for v in &r.violations {
        println!("VIOLATION {v}");
    }
    for f in &r.failures {
        println!("FAILURE {f}");
    }
    println!("replay: {}", r.replay_command());
    println!("{}", if r.ok() { "chaos: OK" } else { "chaos: FAILED" });
    Ok(if r.ok() { 0 } else { 1 })
}
