//! `innet bench xdp-paxos`: CAANS end to end with the coordinator and the
//! acceptors as BPF programs (testbed topology `paxos`), against the same
//! programs as user-space processes (`--data-plane process`, libpaxos-style)
//! and as user-space software switches, at equal client load, side by side
//! in one run. `bench xdp-paxos-hosts` (hidden) is the end-host half that
//! runs inside the testbed's hosts namespace.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use serde::Serialize;

use innet_exp::paxos::{DataPlaneAt, PaxosConfig, PaxosResult};
use innet_exp::paxos_live::{live_config, run_point_live};
use innet_exp::paxos_sim::make_result;
use innet_exp::results;
use innet_live::txn::bind as bind_udp;
use innet_live::{clock, spawn_host, HostOptions, Stop};
use innet_paxos::learner::LearnerStats;
use innet_paxos::workload::LoadProposer;
use innet_paxos::{Learner, Proposer, GROUP_ACCEPTORS, GROUP_PEERS};
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
            latency_us: 0.0,
            ..PaxosConfig::default()
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
        ] {
            v.push(k.to_string());
            v.push(x);
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

#[derive(Args, Debug)]
pub struct XdpPaxosHostsArgs {
    #[command(flatten)]
    load: XdpPaxosLoad,
}

/// The end hosts of the `paxos` testbed: learners and load proposers bound
/// in the hosts namespace; prints one JSON result line.
pub fn run_hosts(a: XdpPaxosHostsArgs) -> anyhow::Result<i32> {
    let cfg = a.load.config(DataPlaneAt::Switch);
    let lc = live_config(&cfg);
    let coordinator = SocketAddr::V4(tb::coordinator_addr());
    let acceptors: Vec<SocketAddr> = (0..cfg.acceptors).map(|i| SocketAddr::V4(tb::acceptor_addr(i))).collect();
    let local = |port: u16| SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port));
    let peer = |port: u16| SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port));
    let stop = Stop::new();
    let mut learners = vec![];
    for i in 0..cfg.learners {
        let mut o = HostOptions { ports: vec![coordinator], ..HostOptions::default() };
        o.groups.insert(GROUP_ACCEPTORS, acceptors.clone());
        o.groups
            .insert(GROUP_PEERS, (0..cfg.learners).filter(|&j| j != i).map(|j| peer(tb::learner_port(j))).collect());
        let lcfg = lc.learner_config(i as u16);
        let socket = bind_udp(local(tb::learner_port(i)))?;
        learners.push(spawn_host(
            &format!("learner{i}"),
            socket,
            o,
            &stop,
            move || Learner::new(lcfg),
            |l, _| l.stats,
        )?);
    }
    let start = clock::now();
    let wall = Instant::now();
    let end = start + Duration::from_secs_f64(cfg.duration_s);
    let mut proposers = vec![];
    for i in 0..cfg.proposers {
        // No backup coordinator in this topology: both ports name the coordinator.
        let o = HostOptions { ports: vec![coordinator, coordinator], ..HostOptions::default() };
        let (pcfg, outstanding) = (lc.proposer_config(i as u32 + 1), cfg.outstanding);
        let socket = bind_udp(local(tb::proposer_port(i)))?;
        proposers.push(spawn_host(
            &format!("proposer{i}"),
            socket,
            o,
            &stop,
            move || LoadProposer::new(Proposer::new(pcfg), outstanding, end, false),
            |p, _| p,
        )?);
    }
    std::thread::sleep(Duration::from_secs_f64(cfg.duration_s) + Duration::from_millis(100));
    let ps: Vec<LoadProposer> = proposers.into_iter().map(|p| p.shutdown()).collect::<Result<_, _>>()?;
    let stats: Vec<LearnerStats> = learners.into_iter().map(|l| l.shutdown()).collect::<Result<_, _>>()?;
    stop.stop();
    let refs: Vec<&LoadProposer> = ps.iter().collect();
    let wall_s = wall.elapsed().as_secs_f64();
    let r = make_result(&cfg, "xdp-testbed", &refs, start.as_nanos(), &stats[0], None, cfg.duration_s, wall_s);
    println!("{}", serde_json::to_string(&r)?);
    Ok(0)
}

/// One run of the XDP deployment: testbed up, end hosts in the hosts
/// namespace, testbed down.
fn run_xdp(load: &XdpPaxosLoad) -> anyhow::Result<PaxosResult> {
    let up =
        PaxosUp { acceptors: load.acceptors, learners: load.learners, proposers: load.proposers, ..PaxosUp::default() };
    tb::up(&up)?;
    let exe = std::env::current_exe().context("path of innet")?;
    let out = Command::new("ip")
        .args(["netns", "exec", tb::NS_HOSTS])
        .arg(&exe)
        .args(["bench", "xdp-paxos-hosts"])
        .args(load.args())
        .output()
        .context("run the end hosts in the testbed");
    let removed = tb::down();
    let out = out?;
    removed?;
    anyhow::ensure!(out.status.success(), "end hosts failed: {}", String::from_utf8_lossy(&out.stderr));
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
    println!("  try: ip netns exec {} innet bench xdp-paxos-hosts --proposers 1 --duration-s 2", tb::NS_HOSTS);
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
