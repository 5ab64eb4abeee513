//! `innet bench xdp-paxos`: CAANS end to end with the coordinator and the
//! acceptors as BPF programs (testbed topology `paxos`), against the same
//! programs as user-space processes (`--data-plane process`, libpaxos-style)
//! and as user-space software switches, at equal client load, side by side
//! in one run. `bench xdp-paxos-hosts` (hidden) is the end-host half that
//! runs inside the testbed's hosts namespace (also the backup coordinator
//! process `innet testbed up paxos` starts); `innet testbed fail paxos
//! coordinator` fails the coordinator.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, ValueEnum};
use serde::Serialize;

use innet_exp::paxos::{DataPlaneAt, PaxosConfig, PaxosResult};
use innet_exp::paxos_live::{live_config, run_point_live};
use innet_exp::paxos_sim::make_result;
use innet_exp::results;
use innet_live::Stop;
use innet_paxos::acceptor::ACCEPTOR_SLOTS_DEFAULT;
use innet_xdp::paxos_hosts::{self, BackupAt, HostsRun};
use innet_xdp::paxos_testbed::{self as tb, PaxosUp};
use innet_xdp::testbed;

#[derive(Args, Debug, Clone)]
pub struct XdpPaxosLoad {
    #[arg(long, default_value_t = 3)]
    acceptors: usize,
    #[arg(long, default_value_t = 2)]
    learners: usize,
    #[arg(long, default_value_t = 2)]
    proposers: usize,
    /// Requests each proposer keeps in flight.
    #[arg(long, default_value_t = 32)]
    outstanding: usize,
    /// Seconds of load per deployment.
    #[arg(long, default_value_t = 3.0)]
    duration_s: f64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The acceptors' ring (a power of two).
    #[arg(long, default_value_t = ACCEPTOR_SLOTS_DEFAULT)]
    slots: usize,
    /// Fail the coordinator this many seconds into the load (XDP: its
    /// links go down; software: its thread stops); the backup takes over.
    #[arg(long)]
    kill_coordinator_at_s: Option<f64>,
}

impl XdpPaxosLoad {
    fn config(&self, data_plane: DataPlaneAt) -> PaxosConfig {
        PaxosConfig {
            data_plane,
            acceptors: self.acceptors,
            learners: self.learners,
            proposers: self.proposers,
            outstanding: self.outstanding,
            duration_s: self.duration_s,
            seed: self.seed,
            slots: self.slots,
            coordinator_fail_at_s: self.kill_coordinator_at_s,
            latency_us: 0.0,
            ..PaxosConfig::default()
        }
    }
    fn up(&self) -> PaxosUp {
        PaxosUp {
            acceptors: self.acceptors,
            learners: self.learners,
            proposers: self.proposers,
            slots: self.slots,
            backup_exe: None,
        }
    }
    fn args(&self) -> Vec<String> {
        let mut v = vec![];
        for (k, x) in [
            ("--acceptors", self.acceptors.to_string()),
            ("--learners", self.learners.to_string()),
            ("--proposers", self.proposers.to_string()),
            ("--outstanding", self.outstanding.to_string()),
            ("--duration-s", self.duration_s.to_string()),
            ("--seed", self.seed.to_string()),
            ("--slots", self.slots.to_string()),
        ] {
            v.push(k.to_string());
            v.push(x);
        }
        if let Some(t) = self.kill_coordinator_at_s {
            v.extend(["--kill-coordinator-at-s".to_string(), t.to_string()]);
        }
        v
    }
}

#[derive(Args, Debug)]
pub struct BenchXdpPaxosArgs {
    #[command(flatten)]
    load: XdpPaxosLoad,
    /// Rounds of (XDP, software processes, software switches).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Output folder for xdp-paxos.jsonl.
    #[arg(long, default_value = "results/xdp")]
    out: PathBuf,
}

/// Where `bench xdp-paxos-hosts` finds the backup coordinator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BackupMode {
    /// The process `innet testbed up paxos` started.
    Testbed,
    /// A thread of this process (the testbed runs none).
    Here,
    /// Run only the backup, until SIGTERM (what `testbed up paxos` starts).
    Only,
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
    let cfg = a.load.config(DataPlaneAt::Switch);
    cfg.validate().map_err(anyhow::Error::msg)?;
    let roles = live_config(&cfg).roles();
    if a.backup == BackupMode::Only {
        let stop = Stop::new();
        stop.on_signals()?;
        paxos_hosts::run_backup(&a.load.up(), &roles, &stop, |l| println!("{l}"))?;
        return Ok(0);
    }
    let run = HostsRun {
        up: a.load.up(),
        roles,
        outstanding: cfg.outstanding,
        duration: Duration::from_secs_f64(cfg.duration_s),
        drain: Duration::from_millis(100),
        backup: if a.backup == BackupMode::Here { BackupAt::Here } else { BackupAt::Elsewhere },
        fail_coordinator_at: cfg.coordinator_fail_at_s.map(Duration::from_secs_f64),
        record: false,
    };
    let r = paxos_hosts::run(&run)?;
    if let (Some(at), Some(took)) = (r.failed_at_ns, r.fail_took_ns) {
        eprintln!(
            "coordinator failed at {:.3} s (its links were down {:.1} ms later)",
            at.saturating_sub(r.start_ns) as f64 / 1e9,
            took as f64 / 1e6
        );
    }
    let refs: Vec<_> = r.proposers.iter().collect();
    let takeover = r.takeover_ns.map(|t| t.saturating_sub(r.start_ns) as f64 / 1e9);
    let res =
        make_result(&cfg, "xdp-testbed", &refs, r.start_ns, &r.learners[0].stats, takeover, cfg.duration_s, r.wall_s);
    println!("{}", serde_json::to_string(&res)?);
    Ok(0)
}

/// One run of the XDP deployment: testbed up, end hosts in the hosts
/// namespace, testbed down.
fn run_xdp(load: &XdpPaxosLoad) -> anyhow::Result<PaxosResult> {
    tb::up(&load.up())?;
    let exe = std::env::current_exe().context("path of innet")?;
    // The backup coordinator runs in the end hosts' process, as it runs
    // beside the software deployments.
    let out = Command::new("ip")
        .args(["netns", "exec", tb::NS_HOSTS])
        .arg(&exe)
        .args(["bench", "xdp-paxos-hosts", "--backup", "here"])
        .args(load.args())
        .output()
        .context("run the end hosts in the testbed");
    let removed = tb::down();
    let out = out?;
    removed?;
    anyhow::ensure!(out.status.success(), "end hosts failed: {}", String::from_utf8_lossy(&out.stderr));
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().context("no result line from the end hosts")?;
    Ok(serde_json::from_str(line)?)
}

#[derive(Serialize)]
struct Record<'a> {
    experiment: &'static str,
    run: usize,
    git_commit: String,
    seed: u64,
    config: &'a PaxosConfig,
    xdp: &'a PaxosResult,
    software: &'a PaxosResult,
    software_switch: &'a PaxosResult,
    xdp_over_software: f64,
    xdp_over_software_switch: f64,
    /// Mean ns per packet of the BPF roles' hot paths (`BPF_PROG_TEST_RUN`).
    bpf_ns_per_packet: &'a std::collections::BTreeMap<&'static str, f64>,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

pub fn run_bench(a: BenchXdpPaxosArgs) -> anyhow::Result<i32> {
    anyhow::ensure!(innet_xdp::object::euid() == 0, "bench xdp-paxos needs root (network namespaces, BPF)");
    let base = a.load.config(DataPlaneAt::Process);
    base.validate().map_err(anyhow::Error::msg)?;
    let cost: std::collections::BTreeMap<&'static str, f64> =
        innet_xdp::paxos::cost_ns(1_000_000)?.into_iter().collect();
    println!(
        "BPF roles, ns per packet (BPF_PROG_TEST_RUN, 1M runs): {}",
        cost.iter().map(|(k, v)| format!("{k} {v:.0}")).collect::<Vec<_>>().join(", ")
    );
    let mut records = vec![];
    let (mut r_sw, mut r_switch) = (vec![], vec![]);
    for run in 0..a.runs {
        let xdp = run_xdp(&a.load)?;
        let software = run_point_live(&a.load.config(DataPlaneAt::Process))?;
        let switch = run_point_live(&a.load.config(DataPlaneAt::Switch))?;
        let ratio = |b: &PaxosResult| xdp.committed_per_s / b.committed_per_s.max(1e-9);
        let rec = Record {
            experiment: "xdp-paxos",
            run,
            git_commit: results::git_commit(),
            seed: a.load.seed,
            config: &base,
            xdp_over_software: ratio(&software),
            xdp_over_software_switch: ratio(&switch),
            xdp: &xdp,
            software: &software,
            software_switch: &switch,
            bpf_ns_per_packet: &cost,
        };
        println!(
            "run {run}: committed/s XDP {:.0} (p50 {:.0} us), software processes {:.0} (p50 {:.0} us), software switches {:.0} (p50 {:.0} us); XDP/software {:.2}x, XDP/switches {:.2}x",
            xdp.committed_per_s,
            xdp.p50_latency_us,
            software.committed_per_s,
            software.p50_latency_us,
            switch.committed_per_s,
            switch.p50_latency_us,
            rec.xdp_over_software,
            rec.xdp_over_software_switch
        );
        r_sw.push(rec.xdp_over_software);
        r_switch.push(rec.xdp_over_software_switch);
        records.push(serde_json::to_value(&rec)?);
    }
    println!(
        "median of {} runs: XDP/software {:.2}x, XDP/software switches {:.2}x",
        a.runs,
        median(r_sw),
        median(r_switch)
    );
    std::fs::create_dir_all(&a.out)?;
    let path = a.out.join("xdp-paxos.jsonl");
    results::append_jsonl(&path, &records)?;
    println!("wrote {}", path.display());
    Ok(0)
}

/// `innet testbed up paxos`: the topology with the backup coordinator as a
/// process of this program.
pub fn run_up(exe: PathBuf) -> anyhow::Result<i32> {
    run_up_with(PaxosUp::default(), exe)
}

/// `innet testbed up paxos` with `up`'s numbers of roles (a topology file's).
pub fn run_up_with(up: PaxosUp, exe: PathBuf) -> anyhow::Result<i32> {
    let st = tb::up(&PaxosUp { backup_exe: Some(exe), ..up })?;
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
    println!(
        "  try: ip netns exec {} innet bench xdp-paxos-hosts --proposers 1 --duration-s 3 --kill-coordinator-at-s 1",
        tb::NS_HOSTS
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
    }
    Ok(())
}
