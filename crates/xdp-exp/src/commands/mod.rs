//! The commands of the XDP testbed and its benchmarks (`innet testbed`,
//! `innet bench xdp*`): each one's flags and the function the `innet`
//! program calls, which runs it and prints its report. Everything here
//! needs root. What they share is here; each command is in its own module.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::fabric::{FabricArgs, GenRecord};
use innet_xdp::bench::{BenchConfig, Summary};

pub mod chain;
pub mod paxos;
pub mod testbed;
pub mod txn;
pub mod upcall;

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

/// How a testbed's XDP programs run, in one line.
pub(crate) fn fabric_line(f: &innet_xdp::fabric::Fabric) -> String {
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

/// The `innet` program, which the testbeds start their end hosts with.
pub(crate) fn innet_exe() -> anyhow::Result<PathBuf> {
    std::env::current_exe().context("path of the innet program")
}

/// The rounds of a fabric-only benchmark (`bench xdp-txn --fabric-only`,
/// `bench xdp-chain --fabric-only`), one line each, then the medians per
/// path and injection; `what` names the decisions (`decisions`, `writes`).
pub fn print_fabric_only(recs: &[GenRecord], what: &str) {
    for r in recs {
        println!(
            "run {} {} {} (commit {}; XDP {} mode, threaded NAPI {:?}; load average {:.2}): {} injected, {} arrived \
             ({} decided, {} other frames to the client) in {:.3} s: {:.0}/s, {:.2} CPUs busy; generator thread {:.3} s + NAPI threads {:.3} s of \
             CPU: {:.0} arrived per fabric CPU-second = {:.0} ns each (programs {:.0} ns, transport {:.0} ns), \
             {:.0} decided per generator CPU-second; stalled bursts {}",
            r.run,
            r.path,
            r.injection,
            r.git_commit,
            r.fabric.xdp_mode,
            r.fabric.threaded_napi,
            r.load_average[0],
            r.requests,
            r.arrived,
            r.decided,
            r.others,
            r.seconds,
            r.per_s,
            (r.cpu.machine_user_s + r.cpu.machine_system_s + r.cpu.machine_irq_s) / r.cpu.wall_s.max(1e-9),
            r.generator_thread_cpu_s,
            r.napi_threads_cpu_s,
            r.per_fabric_cpu_s,
            r.fabric_ns_per_decision,
            r.programs.iter().map(|c| c.ns_per_unit).sum::<f64>(),
            r.transport_ns_per_decision,
            r.decided_per_generator_cpu_s,
            r.stalls
        );
        for c in &r.programs {
            println!(
                "    {:<16} {:>6.2} runs x {:>5.0} ns = {:>5.0} ns per arrived",
                c.program, c.runs_per_unit, c.ns_per_run, c.ns_per_unit
            );
        }
    }
    let mut kinds: Vec<(&str, &str)> = recs.iter().map(|r| (r.path, r.injection)).collect();
    kinds.sort();
    kinds.dedup();
    for (p, i) in kinds {
        let of = |f: fn(&GenRecord) -> f64| {
            crate::paxos::median(recs.iter().filter(|r| (r.path, r.injection) == (p, i)).map(f).collect())
        };
        println!(
            "{p} {i}: median {:.0} arrived/s, {:.0} arrived per fabric CPU-second, {:.0} {what} decided per \
             generator CPU-second, {:.0} ns of fabric CPU per arrived",
            of(|r| r.per_s),
            of(|r| r.per_fabric_cpu_s),
            of(|r| r.decided_per_generator_cpu_s),
            of(|r| r.fabric_ns_per_decision)
        );
    }
}
