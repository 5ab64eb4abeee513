//! `innet bench xdp-paxos`: CAANS end to end with the coordinator and the
//! acceptors as BPF programs (testbed topology `paxos`), against the same
//! programs as user-space processes (`--data-plane process`, libpaxos-style)
//! and as user-space software switches, at equal client load, side by side
//! in one run (`crate::paxos`). `bench xdp-paxos-hosts` runs the
//! end hosts in the testbed's hosts namespace by hand, or (`--backup only`)
//! the backup coordinator process `innet testbed up paxos` starts; `innet
//! testbed fail paxos coordinator` fails the coordinator.

use std::path::PathBuf;

use clap::Args;

use crate::paxos::{self as xdp_paxos, BackupMode, BenchEvent, XdpPaxosLoad, XdpPaxosRecord};
use innet_xdp::paxos_hosts::BackupAt;
use innet_xdp::paxos_testbed::{self as tb, PaxosUp};
use innet_xdp::testbed;

#[derive(Args, Debug)]
pub struct BenchXdpPaxosArgs {
    #[command(flatten)]
    load: XdpPaxosLoad,
    /// Rounds of (XDP, software processes, software switches).
    #[arg(long, default_value_t = 3, value_parser = innet_exp::parse::bench_rounds)]
    runs: usize,
    /// Output folder for xdp-paxos.jsonl.
    #[arg(long, default_value = "results/xdp", value_parser = innet_exp::parse::out_dir)]
    out: PathBuf,
    /// The fabric alone: an in-kernel generator injects REQUESTs at the
    /// BPF coordinator and the vote counter counts the decisions, no end
    /// host (instances/s, and per CPU-second the machine was busy).
    #[arg(long)]
    fabric_only: bool,
    /// `--fabric-only`: REQUESTs per round.
    #[arg(long, default_value_t = 2_000_000, value_parser = clap::value_parser!(u32).range(1..=1_000_000_000))]
    frames: u32,
}

#[derive(Args, Debug)]
pub struct XdpPaxosHostsArgs {
    #[command(flatten)]
    load: XdpPaxosLoad,
    #[arg(long, value_enum, default_value = "testbed")]
    backup: BackupMode,
}

/// The end hosts of the `paxos` testbed: learners and load proposers bound
/// in the hosts namespace (and the backup, see `--backup`); prints one JSON
/// result line.
pub fn run_hosts(a: XdpPaxosHostsArgs) -> anyhow::Result<i32> {
    let at = match a.backup {
        BackupMode::Only => {
            xdp_paxos::backup(&a.load, &innet_live::stop_on_signals()?, |l| println!("{l}"))?;
            return Ok(0);
        }
        BackupMode::Here => BackupAt::Here,
        BackupMode::Testbed => BackupAt::Elsewhere,
    };
    let r = xdp_paxos::hosts(&a.load, at)?;
    if let Some(line) = r.failure_line() {
        eprintln!("{line}");
    }
    if let Some(k) = &r.vote_counter {
        eprintln!("vote counter: {}", k.iter().map(|(n, v)| format!("{n} {v}")).collect::<Vec<_>>().join(", "));
    }
    println!("{}", serde_json::to_string(&r.result)?);
    Ok(0)
}

pub fn run_bench(a: BenchXdpPaxosArgs) -> anyhow::Result<i32> {
    if a.fabric_only {
        return run_fabric_only(a);
    }
    let report = xdp_paxos::bench(&a.load, a.runs, &a.out, |e| {
        match e {
        BenchEvent::Cost(cost) => println!(
            "BPF roles, ns per packet (BPF_PROG_TEST_RUN; coordinator and acceptor: median of 200k single runs, vote counter: mean of 1M repeats): {}",
            cost.iter().map(|(k, v)| format!("{k} {v:.0}")).collect::<Vec<_>>().join(", ")
        ),
        BenchEvent::Run(r, failure) => print_run(r, failure),
    }
    })?;
    println!(
        "median of {} runs: XDP/software {:.2}x, XDP/software switches {:.2}x",
        a.runs, report.median_over_software, report.median_over_software_switch
    );
    println!("wrote {}", report.path.display());
    Ok(0)
}

/// One round of `bench xdp-paxos`: the three deployments' throughput and
/// latency, then [`print_against_ceiling`], [`print_cpu`] and
/// [`print_xdp_details`].
fn print_run(r: &XdpPaxosRecord, failure: Option<String>) {
    if let Some(line) = failure {
        eprintln!("{line}");
    }
    println!(
        "run {} (commit {}, seed {}, {} proposers x {} in flight, pack {}; XDP {} mode, threaded NAPI {:?}, {:?} multicast, decisions {}; load average {:.1}): committed/s XDP {:.0} (p50 {:.0} us), software processes {:.0} (p50 {:.0} us), software switches {:.0} (p50 {:.0} us); XDP/software {:.2}x, XDP/switches {:.2}x",
        r.run,
        r.git_commit,
        r.seed,
        r.config.proposers,
        r.config.outstanding,
        r.config.pack,
        r.fabric.xdp_mode,
        r.fabric.threaded_napi,
        r.fabric.multicast,
        r.fabric.decisions.name(),
        r.load_average[0],
        r.xdp.committed_per_s,
        r.xdp.p50_latency_us,
        r.software.committed_per_s,
        r.software.p50_latency_us,
        r.software_switch.committed_per_s,
        r.software_switch.p50_latency_us,
        r.xdp_over_software,
        r.xdp_over_software_switch
    );
    print_against_ceiling(r);
    print_cpu(r);
    print_xdp_details(r);
}

/// Values committed against the generator's ceiling, per deployment.
fn print_against_ceiling(r: &XdpPaxosRecord) {
    let c = |name: &str, a: &innet_exp::paxos_bench::AgainstCeiling| {
        format!(
            "{name} {:.0}/s = {}{}",
            a.instances_per_s,
            if a.ceiling_per_s > 0.0 {
                format!("{:.0}% of {:.0}", a.of_ceiling * 1e2, a.ceiling_per_s)
            } else {
                "? (the ceiling run got no replies: not measured)".to_string()
            },
            if a.generator_bound { " (generator-bound)" } else { "" }
        )
    };
    println!(
        "  values sent to the coordinator and committed, against the generator's ceiling at {} in flight \
         (XDP: HEARTBEATs reflected by the BPF coordinator on the same veth; software: a bare UDP echo on \
         loopback): {}; {}; {}",
        r.ceiling_xdp.clients,
        c("XDP", &r.xdp_vs_ceiling),
        c("software processes", &r.software_vs_ceiling),
        c("software switches", &r.software_switch_vs_ceiling)
    );
}

/// CPU per committed value, per deployment.
fn print_cpu(r: &XdpPaxosRecord) {
    let cpu = |name: &str, c: &innet_bench::cpu::CpuPerValue| {
        format!(
            "{name} {:.1} (user {:.1}, kernel {:.1}; this process {:.1} + {:.1}; {:.2} CPUs busy)",
            c.machine_us, c.user_us, c.kernel_us, c.process_user_us, c.process_system_us, c.busy_cpus
        )
    };
    println!(
        "  CPU us per committed value (machine, /proc/stat): {}; {}; {}",
        cpu("XDP", &r.cpu_xdp),
        cpu("software processes", &r.cpu_software),
        cpu("software switches", &r.cpu_software_switch)
    );
}

/// The XDP deployment's BPF programs, hosts machine and vote counter.
fn print_xdp_details(r: &XdpPaxosRecord) {
    if !r.xdp_programs.is_empty() {
        println!(
            "  BPF programs per committed value (run-time statistics): {}",
            r.xdp_programs
                .iter()
                .map(|c| format!(
                    "{} {:.2} runs x {:.0} ns = {:.0} ns",
                    c.program, c.runs_per_unit, c.ns_per_run, c.ns_per_unit
                ))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if let Some(m) = &r.xdp_machine {
        println!(
            "  hosts machine: {} decisions from the ring in {} batches ({:.1} per wake-up), {} as packets on the decision socket (overflow {})",
            m.fed,
            m.feed_batches,
            m.fed as f64 / m.feed_batches.max(1) as f64,
            m.received,
            m.rx_overflow
        );
    }
    if let Some(w) = &r.xdp_without_counters {
        println!(
            "  XDP without vote counters {:.0}/s (p50 {:.0} us); with/without {:.2}x",
            w.committed_per_s,
            w.p50_latency_us,
            r.xdp.committed_per_s / w.committed_per_s.max(1e-9)
        );
    }
    if let Some(k) = &r.xdp_vote_counter {
        let n = |name: &str| k.get(name).copied().unwrap_or(0);
        println!(
            "  vote counter: decisions passed up {} (into the ring {}, ring full {}), votes absorbed {} (counted {}, duplicates {}, late {}), passed stale {}, evicted {}, other traffic passed {}",
            n("decisions"),
            n("ring"),
            n("ring_full"),
            n("counted") + n("duplicates") + n("late"),
            n("counted"),
            n("duplicates"),
            n("late"),
            n("passed_stale"),
            n("evicted"),
            n("passed") + n("passed_other")
        );
    }
}

/// `innet bench xdp-paxos --fabric-only`.
fn run_fabric_only(a: BenchXdpPaxosArgs) -> anyhow::Result<i32> {
    let records = xdp_paxos::fabric_only(&a.load, a.runs, a.frames)?;
    for r in &records {
        println!(
            "run {} (commit {}; XDP {} mode, threaded NAPI {:?}, {:?} multicast; {} acceptors; load average {:.1}): {} requests injected, {} instances decided in {:.3} s: {:.0} instances/s, {:.2} CPUs busy, {:.0} instances per CPU-second; generator thread {:.3} s + NAPI threads {:.3} s of CPU: {:.0} instances per fabric CPU-second (window full {}, acceptor ring full or trimmed {}, stalled bursts {})",
            r.run,
            r.git_commit,
            r.fabric.xdp_mode,
            r.fabric.threaded_napi,
            r.fabric.multicast,
            r.acceptors,
            r.load_average[0],
            r.requests,
            r.decisions,
            r.seconds,
            r.instances_per_s,
            (r.cpu.machine_user_s + r.cpu.machine_system_s + r.cpu.machine_irq_s) / r.cpu.wall_s.max(1e-9),
            r.instances_per_cpu_s,
            r.generator_thread_cpu_s,
            r.napi_threads_cpu_s,
            r.instances_per_fabric_cpu_s,
            r.window_full,
            r.acceptor_ring_full,
            r.stalls
        );
    }
    if let Some(r) = records.last() {
        println!(
            "  last round, per instance: {:.0} ns of fabric CPU = {} + transport {:.0} ns",
            r.fabric_ns_per_instance,
            r.programs
                .iter()
                .map(|c| format!("{} {:.2} runs x {:.0} ns", c.program, c.runs_per_unit, c.ns_per_run))
                .collect::<Vec<_>>()
                .join(" + "),
            r.transport_ns_per_instance
        );
    }
    let mut per_core: Vec<f64> = records.iter().map(|r| r.instances_per_fabric_cpu_s).collect();
    per_core.sort_by(f64::total_cmp);
    let mut per_s: Vec<f64> = records.iter().map(|r| r.instances_per_s).collect();
    per_s.sort_by(f64::total_cmp);
    println!(
        "median of {} rounds: {:.0} instances/s, {:.0} instances per fabric CPU-second",
        records.len(),
        per_s[per_s.len() / 2],
        per_core[per_core.len() / 2]
    );
    let path = a.out.join("xdp-paxos-fabric-only.jsonl");
    innet_exp::results::append_jsonl(&path, &records)?;
    println!("wrote {}", path.display());
    Ok(0)
}

/// `innet testbed up paxos` with `up`'s numbers of roles (a topology file's).
/// The backup runs as a process of its own, so the acceptors vote to
/// every role's own port (one vote per machine needs every role of the
/// machine in the one process that reads its decisions).
pub fn run_up_with(up: PaxosUp, exe: PathBuf) -> anyhow::Result<i32> {
    let st = tb::up(&PaxosUp { backup_exe: Some(exe), decisions: tb::Decisions::PerPort, ..up })?;
    println!("testbed up: namespaces {}", st.namespaces.join(" "));
    print_up(&st);
    Ok(0)
}

/// `innet testbed fail <topology> <role>`.
pub fn run_fail(topology: &str, role: &str) -> anyhow::Result<i32> {
    anyhow::ensure!(
        (topology, role) == ("paxos", "coordinator"),
        "innet testbed fail {topology} {role}: only `paxos coordinator` can be failed"
    );
    let links = tb::fail_coordinator()?;
    println!(
        "coordinator failed: links {} of {} down; the backup coordinator takes over once its heartbeats go unanswered",
        links.join(" "),
        tb::NS_COORDINATOR
    );
    Ok(0)
}

/// What `innet testbed up paxos` made.
pub fn print_up(st: &testbed::State) {
    if let Some(dir) = &st.pin_dir {
        println!("  xdp_paxos_coordinator + tc_paxos on innet-ch, xdp_paxos_acceptor + tc_paxos on innet-ac<i>, innet-ah<i>; maps pinned in {dir}");
        if std::path::Path::new(dir).join(tb::COUNTER_PINS).exists() {
            println!("  xdp_paxos_counter + tc_paxos_counter (votes counted for the learners and proposers) on innet-ha<i> in {}", tb::NS_HOSTS);
        }
    }
    println!(
        "  coordinator {} (from netns {}), acceptors {}",
        tb::coordinator_addr(),
        tb::NS_HOSTS,
        (0..st.namespaces.len() - 2).map(|i| tb::acceptor_addr(i).to_string()).collect::<Vec<_>>().join(" ")
    );
    println!(
        "  learners on ports {}.., proposers on {}.. in {}",
        tb::learner_port(0),
        tb::proposer_port(0),
        tb::NS_HOSTS
    );
    for (name, pid) in &st.processes {
        println!("  {name} {} pid {pid} (log {})", tb::backup_addr(), testbed::log_path(name).display());
    }
    // The testbed counts votes per port (its backup is a process of its own).
    println!(
        "  try: ip netns exec {} innet bench xdp-paxos-hosts --decisions per-port --proposers 1 --duration-s 3 --kill-coordinator-at-s 1",
        tb::NS_HOSTS
    );
    println!(
        "       (with the testbed's --auth-key FILE if it has keys: without them the end hosts' messages are refused)"
    );
    println!("       (or fail it by hand: innet testbed fail paxos coordinator)");
}

/// `innet testbed status` for a paxos testbed: each role's counters from its pinned maps.
pub fn print_status(st: &testbed::State) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(st)?);
    let Some(dir) = &st.pin_dir else { return Ok(()) };
    let dir = std::path::Path::new(dir);
    let mut roles = vec![("coordinator".to_string(), innet_xdp::paxos::Role::Coordinator)];
    roles.extend((0..st.namespaces.len() - 2).map(|i| (format!("acceptor{i}"), innet_xdp::paxos::Role::Acceptor)));
    for (name, role) in roles {
        let counters = innet_xdp::paxos::pinned_counters(role, &dir.join(&name))?;
        let line: Vec<String> = counters.iter().map(|(k, v)| format!("{k} {v}")).collect();
        println!("{name:>12}: {}", line.join(", "));
        print_refused(&tb::rejected(&name)?);
    }
    if let Some(counters) = tb::vote_counter_counters()? {
        let line: Vec<String> = counters.iter().map(|(k, v)| format!("{k} {v}")).collect();
        println!("{:>12}: {}", "votes", line.join(", "));
        print_refused(&tb::rejected(tb::COUNTER_PINS)?);
    }
    Ok(())
}

/// The frames a program refused by sender, by reason (those it refused any of).
fn print_refused(rejected: &[(&'static str, u64)]) {
    let line: Vec<String> = rejected.iter().filter(|(_, v)| *v > 0).map(|(k, v)| format!("{k} {v}")).collect();
    println!("{:>12}  refused: {}", "", if line.is_empty() { "none".to_string() } else { line.join(", ") });
}
