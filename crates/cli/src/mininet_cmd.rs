//! `innet mininet --topology FILE`: arguments and printing; the run is
//! `innet_live::mininet` (docs/mininet.md).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use innet_live::mininet::{self, MininetReport, MininetRun};

use innet_exp::commands::print_line;
use innet_live::stop_on_signals as signals;

/// Run a topology file as a Mininet network (root): one Mininet host per
/// innet machine, Linux bridges shaped like its links, every node in its
/// host, load for --duration-s; then everything this run made is removed.
#[derive(Args, Debug)]
pub struct MininetArgs {
    /// The topology file (docs/live.md), as written for one machine: each
    /// host's address replaces its loopback addresses.
    #[arg(long)]
    topology: PathBuf,
    /// Seconds of load.
    #[arg(long, default_value_t = 5.0, value_parser = innet_exp::parse::seconds)]
    duration_s: f64,
    /// Transactions, chain: share of writes (default: `innet up`'s, 0.5 and 0.3).
    #[arg(long, value_parser = innet_exp::parse::ratio)]
    write_ratio: Option<f64>,
    /// Transactions, chain: keys the clients use (default: `innet up`'s, 1 and 8).
    #[arg(long, value_parser = innet_exp::parse::txn_keys)]
    keys: Option<u32>,
    /// Paxos: requests each proposer keeps in flight (default: `innet up`'s, 8).
    #[arg(long, value_parser = innet_exp::parse::outstanding)]
    outstanding: Option<usize>,
    /// Seed of the load nodes' workloads.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print the whole report as one JSON object instead of a summary.
    #[arg(long)]
    json: bool,
    /// Mininet's own progress on stderr.
    #[arg(long)]
    verbose: bool,
}

pub fn run_mininet(a: MininetArgs) -> anyhow::Result<i32> {
    let stop = signals()?;
    let cfg = MininetRun {
        topology: a.topology.clone(),
        innet: std::env::current_exe()?,
        duration: Duration::from_secs_f64(a.duration_s),
        write_ratio: a.write_ratio,
        keys: a.keys,
        outstanding: a.outstanding,
        seed: a.seed,
        verbose: a.verbose,
    };
    let r = mininet::run(&cfg, &stop)?;
    if a.json {
        print_line(&serde_json::to_string(&r)?);
    } else {
        print_summary(&r);
    }
    Ok(0)
}

fn print_summary(r: &MininetReport) {
    let hosts: Vec<String> = r.hosts.iter().map(|h| format!("{} {}", h.host, h.ip)).collect();
    print_line(&format!(
        "mininet: {} topology, {} hosts ({}), {} bridges, {} links; network up in {:.1} s",
        r.service,
        r.hosts.len(),
        hosts.join(", "),
        r.bridges.len(),
        r.links.len(),
        r.started_s
    ));
    for l in &r.loads {
        let behind = r.host(&l.machine).map(|h| h.upstream.join(",")).unwrap_or_default();
        let behind = if behind.is_empty() { String::new() } else { format!(" behind {behind}") };
        let rate = |n: u64| n as f64 / l.seconds.max(1e-9);
        let what = match r.service.as_str() {
            "txn" => format!(
                "{} committed ({:.1}/s), {} aborts by a switch, {} by the store",
                l.committed,
                rate(l.committed),
                l.aborts_by_switch,
                l.aborts_by_store
            ),
            "paxos" => format!("{} values committed ({:.0}/s)", l.committed, rate(l.committed)),
            _ => format!("{} reads, {} writes ({:.0} ops/s)", l.reads, l.writes, rate(l.reads + l.writes)),
        };
        print_line(&format!("  {} ({} nodes{behind}): {what} in {:.1} s", l.machine, l.nodes, l.seconds));
    }
    for s in r.switch_aborts() {
        print_line(&format!("  switch {}: {} optimistic aborts, {} aborts", s.switch, s.optimistic, s.aborted));
    }
    for (node, c) in &r.counters {
        for k in ["delivered", "took_over", "removals", "resyncs"] {
            if let Some(v) = c.get(k) {
                print_line(&format!("  {node}.{k} {v}"));
            }
        }
    }
    print_line(&format!(
        "  load {:.1} s, wall {:.1} s; torn down: no process of this run running, none of its bridges or links left",
        r.load_s, r.wall_s
    ));
}
