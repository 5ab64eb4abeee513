//! `innet bench xdp-upcall`: decided Paxos instances handed from an XDP
//! program to a user-space learner by socket, batch datagram, BPF ring
//! buffer or AF_XDP, side by side (crates/xdp/src/upcall.rs, docs/xdp.md
//! "Decisions up"). Needs root; builds and removes its own namespaces
//! (`innet-up-tx`, `innet-up-rx`).

use std::path::PathBuf;

use clap::Args;

use innet_xdp::upcall::{PathSummary, Sender, UpcallConfig};

fn d() -> UpcallConfig {
    UpcallConfig::default()
}

#[derive(Args, Debug)]
pub struct BenchXdpUpcallArgs {
    /// Most decisions per rate run (rounded up to whole bursts).
    #[arg(long, default_value_t = d().decisions)]
    decisions: u64,
    /// Longest rate run, seconds.
    #[arg(long, default_value_t = d().seconds, value_parser = innet_exp::parse::seconds)]
    seconds: f64,
    /// Most decisions the generator keeps ahead of the consumer.
    #[arg(long, default_value_t = d().window)]
    window: u64,
    /// Decisions per generator call (live frames per test run, datagrams per sendmmsg).
    #[arg(long, default_value_t = d().burst)]
    burst: u32,
    /// Rounds; in each, every sender and path takes its turn.
    #[arg(long, default_value_t = d().rounds, value_parser = innet_exp::parse::bench_rounds)]
    rounds: usize,
    /// Batch sizes measured, comma-separated (2..=64, each dividing --burst).
    #[arg(long = "batch", value_delimiter = ',', default_values_t = d().batches)]
    batches: Vec<u32>,
    /// Ring buffer size, bytes (a power of two; a decision takes 56).
    #[arg(long, default_value_t = d().ring_bytes)]
    ring_bytes: u32,
    /// Ring wake-up thresholds measured, comma-separated (0: the kernel's
    /// adaptive wake-up; T: wake at T unread records, the poll timeout
    /// collects fewer).
    #[arg(long = "ring-threshold", value_delimiter = ',', default_values_t = d().ring_thresholds)]
    ring_thresholds: Vec<u32>,
    /// The consumer's poll timeout, ms.
    #[arg(long, default_value_t = d().poll_timeout_ms)]
    poll_timeout_ms: u32,
    /// AF_XDP RX and fill ring entries (a power of two).
    #[arg(long, default_value_t = d().xsk_ring)]
    xsk_ring: u32,
    /// The learner socket's receive buffer, bytes.
    #[arg(long, default_value_t = d().socket_rcvbuf)]
    socket_rcvbuf: u32,
    /// Decisions per latency run.
    #[arg(long, default_value_t = d().latency_samples)]
    latency_samples: u32,
    /// Time between decisions in latency runs, us.
    #[arg(long, default_value_t = d().latency_gap_us)]
    latency_gap_us: u64,
    /// Senders, comma-separated: kernel (BPF_PROG_TEST_RUN live frames), socket (sendmmsg).
    #[arg(long, value_delimiter = ',', default_values = ["kernel", "socket"])]
    senders: Vec<Sender>,
    /// Output folder for xdp-upcall.jsonl.
    #[arg(long, default_value = "results/xdp", value_parser = innet_exp::parse::out_dir)]
    out: PathBuf,
}

impl BenchXdpUpcallArgs {
    fn config(&self) -> UpcallConfig {
        UpcallConfig {
            decisions: self.decisions,
            seconds: self.seconds,
            window: self.window,
            burst: self.burst,
            rounds: self.rounds,
            batches: self.batches.clone(),
            ring_bytes: self.ring_bytes,
            ring_thresholds: self.ring_thresholds.clone(),
            poll_timeout_ms: self.poll_timeout_ms,
            xsk_ring: self.xsk_ring,
            socket_rcvbuf: self.socket_rcvbuf,
            latency_samples: self.latency_samples,
            latency_gap_us: self.latency_gap_us,
            senders: self.senders.clone(),
        }
    }
}

fn print_paths(paths: &[PathSummary]) {
    println!(
        "{:<7} {:<9} {:>11} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>5} {:>5} {:>8} {:>5}",
        "sender",
        "path",
        "decisions/s",
        "wake/1k",
        "gen_sys",
        "gen_bpf",
        "con_usr",
        "con_sys",
        "mach_usr",
        "mach_krn",
        "p50_us",
        "p99_us",
        "lat_wk",
        "lost",
        "dup",
        "fallback",
        "ooo"
    );
    for p in paths {
        println!(
            "{:<7} {:<9} {:>11.0} {:>9.1} {:>8.0} {:>8.0} {:>8.0} {:>8.0} {:>8.0} {:>8.0} {:>8.1} {:>8.1} {:>8.0} {:>5} {:>5} {:>8} {:>5}",
            p.sender,
            p.variant,
            p.decisions_per_s,
            p.wakeups_per_1000,
            p.cpu.generator_sys_ns,
            p.cpu.generator_kernel_timed_ns,
            p.cpu.consumer_user_ns,
            p.cpu.consumer_sys_ns,
            p.cpu.machine_user_ns,
            p.cpu.machine_kernel_ns,
            p.latency_p50_us,
            p.latency_p99_us,
            p.latency_wakeups_per_1000,
            p.count.missing + p.latency_missing + p.count.xsk_dropped,
            p.count.duplicates,
            p.count.fallback,
            p.count.out_of_order
        );
    }
}

pub fn run(a: BenchXdpUpcallArgs) -> anyhow::Result<i32> {
    let cfg = a.config();
    cfg.validate()?;
    let (rec, path) = crate::bench::bench_upcall(&cfg, &a.out, |line| eprintln!("{line}"))?;
    let r = &rec.report;
    println!(
        "decisions up, {} rounds (medians; CPU in ns per decision; latency: one decision every {} us, pooled), \
         load average {} -> {}, {} CPUs",
        cfg.rounds, cfg.latency_gap_us, r.load_average_start, r.load_average_end, r.cpus
    );
    print_paths(&r.paths);
    println!(
        "gen_sys: the generator thread's system time (the kernel sender: generator program, veth hop, receiving XDP \
         and the upcall, in its softirq); gen_bpf: the same as BPF_PROG_TEST_RUN timed it; con_*: the consumer \
         thread; mach_*: the whole machine (/proc/stat), others' work included; \
         lat_wk: wake-ups per 1000 in the latency runs; lost: missing + AF_XDP drops; fallback: by the socket on the ring or AF_XDP path; ooo: inversions per source"
    );
    for p in r.paths.iter().filter(|p| p.stalled_runs > 0) {
        println!(
            "{} {}: {} of {} rate runs stalled: the window stopped draining (decisions held that no later frame could \
             carry up) and the generator gave up",
            p.sender, p.variant, p.stalled_runs, p.rounds
        );
    }
    let held: u64 = r.paths.iter().map(|p| p.count.held_at_end).sum();
    if held > 0 {
        println!(
            "{held} decisions were still held for a batch when their runs ended (no later decision carried them up)"
        );
    }
    println!("wrote {}", path.display());
    Ok(if r.paths.iter().all(PathSummary::exact) { 0 } else { 1 })
}
