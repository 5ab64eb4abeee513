//! The fabric's flags (`--xdp-mode`, `--threaded-napi`) for the
//! transaction and chain benchmarks, and their fabric-only runs (issue 20,
//! item 4): `innet bench xdp-txn --fabric-only` and `innet bench
//! xdp-chain --fabric-only`.
//!
//! No socket and no end host: the in-kernel generator
//! ([`innet_xdp::generator`]) writes a request over each live frame as the
//! client would send it and tail-calls the first hop's program (the
//! transaction switch; the NetCRAQ head) as if the frame had arrived on
//! its device; from there the frames cross the fabric as any other, and a
//! sink ([`innet_xdp::sink`]) on the far ends (the store's and the client's
//! devices) counts and drops what arrives. The generator is paced on what
//! the sink has counted ([`innet_xdp::generator::Pace`]), so the figure is
//! what the fabric completes, not what its rings drop.
//!
//! Per round: decisions per second, and per CPU-second of the threads that
//! do the work (the generator's thread, whose system calls run the first
//! hop's program, and the devices' threaded-NAPI kernel threads, which run
//! the hops after it), as `bench xdp-paxos --fabric-only` counts it; and
//! per CPU-second the whole machine was busy (other work included).

use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{ensure, Context};
use clap::Args;
use serde::Serialize;

use innet_chain::Protocol;
use innet_txn::switch::Mode;
use innet_wire::netcraq::CraqMsg;
use innet_wire::txn::{Op, TxnMsg, Value};
use innet_xdp::bench::DownOnDrop;
use innet_xdp::chain_testbed::{self as chain_tb, ChainUp, Multicast};
use innet_xdp::fabric::{Fabric, ThreadedNapi, XdpMode};
use innet_xdp::generator::{Generator, Pace, Template};
use innet_xdp::sink::{Sink, SinkCount};
use innet_xdp::testbed::{self, DataPlaneAt, UpOptions};

use crate::paxos::load_average;
use innet_bench::cpu::{CpuSnapshot, CpuUse};
use innet_exp::results;

/// How a testbed's fabric runs (every record carries it).
#[derive(Args, Debug, Clone, Copy, Serialize)]
pub struct FabricArgs {
    /// Driver-mode (`native`) or `generic` XDP on every device.
    #[arg(long, value_enum, default_value = "native")]
    pub xdp_mode: XdpMode,
    /// Threaded NAPI on every veth (driver mode): the pipeline spreads
    /// over the CPUs instead of running in the sender's softirq (`entry`
    /// is `on` here: these testbeds name no single entry device yet).
    #[arg(long, value_enum, default_value = "on")]
    pub threaded_napi: ThreadedNapi,
}

impl Default for FabricArgs {
    fn default() -> Self {
        FabricArgs { xdp_mode: XdpMode::Native, threaded_napi: ThreadedNapi::On }
    }
}

impl FabricArgs {
    pub fn fabric(&self) -> Fabric {
        Fabric { mode: self.xdp_mode, threaded: self.threaded_napi }
    }
}

/// One round of the in-kernel generator on one path.
#[derive(Debug, Serialize)]
pub struct GenRecord {
    pub experiment: &'static str,
    pub run: usize,
    pub git_commit: String,
    pub fabric: FabricArgs,
    /// What the frames were and where their decision sent them;
    /// [`CEILING_PATH`]: the generator aimed at `xdp_sink` (counts,
    /// drops), its own ceiling.
    pub path: &'static str,
    /// `paced` (at most a window of frames unfinished: what the fabric
    /// completes) or `open-loop` (as fast as the generator's thread runs
    /// them: what the first hop decides per core; frames the hops after
    /// it drop for full rings are not arrived).
    pub injection: &'static str,
    /// Frames the generator injected.
    pub requests: u64,
    /// Frames the far end's sink counted (the decisions that arrived).
    pub arrived: u64,
    /// Other frames that reached the end hosts (the chain's refusals for
    /// full version cells).
    pub others: u64,
    /// Decisions the first hop's program counted for this path (the
    /// switch's `forwarded` or `optimistically_aborted`; the NetCRAQ
    /// tail's `writes_committed_at_tail`).
    pub decided: u64,
    pub seconds: f64,
    /// Arrived per second.
    pub per_s: f64,
    /// The machine's CPU over the round (every CPU, other work included).
    pub cpu: CpuUse,
    /// Arrived per CPU-second the machine was busy.
    pub per_cpu_s: f64,
    /// CPU seconds of the generator's thread (its system calls run the
    /// first hop's program) and of the devices' NAPI threads (the hops
    /// after it, with threaded NAPI).
    pub generator_thread_cpu_s: f64,
    pub napi_threads_cpu_s: f64,
    /// Arrived per CPU-second of those threads: the fabric's capacity per
    /// core, whatever else runs on the machine.
    pub per_fabric_cpu_s: f64,
    /// Decided per CPU-second of the generator's thread alone: the first
    /// hop's program (the switch, the head) and its transmit, per core.
    pub decided_per_generator_cpu_s: f64,
    /// Those threads' CPU per arrived decision (ns), what the BPF programs
    /// spent of it (the kernel's run-time statistics, per program:
    /// `xdp_gen`'s runs include the first hop's program it tail-calls),
    /// and the rest: the frames' transport (veth transmit, NAPI polls,
    /// devmap copies, thread wake-ups).
    pub fabric_ns_per_decision: f64,
    pub transport_ns_per_decision: f64,
    /// Empty with `--bpf-stats off`.
    pub programs: Vec<innet_xdp::bpf_stats::ProgCost>,
    /// Bursts the generator sent after waiting in vain for arrivals
    /// (frames lost on the way).
    pub stalls: u64,
    /// How a paced round injected (none: open loop).
    pub pace: Option<Pace>,
    pub load_average: [f64; 3],
}

/// The path of the generator's ceiling records.
pub const CEILING_PATH: &str = "generator-ceiling";

/// The programs whose run time a round reports (name prefixes: the
/// kernel keeps 15 characters): the generator (with the program it
/// tail-calls), the transaction switch, the NetCRAQ node and its devmap
/// egress, `xdp_pass` and the sinks.
pub const FABRIC_PROGRAMS: &[&str] = &["xdp_gen", "xdp_txn", "xdp_netcraq", "xdp_craq", "xdp_pass", "xdp_sink"];

/// What one path of a round is.
struct PathRun<'a> {
    path: &'static str,
    template: Template,
    /// The far end's count, and what else reached the end hosts (the
    /// chain's refusals), if counted apart.
    arrived: &'a SinkCount,
    others: Option<&'a SinkCount>,
    /// The program's count of this path's decisions.
    decided: &'a dyn Fn() -> anyhow::Result<u64>,
}

/// Where and how much a benchmark's generator injects.
struct At<'a> {
    experiment: &'static str,
    fabric: FabricArgs,
    /// The first hop's device (the frames arrive there) and its namespace.
    ns: &'a str,
    dev: &'a str,
    frames: u32,
    /// The kernel's BPF run-time statistics on (the cost table; a clock
    /// read around every program run) or off (the programs at full speed).
    bpf_stats: bool,
}

/// Runs `at.frames` frames of `p` through `g`, paced if `paced`: round
/// `run`'s record.
fn gen_round(g: &Generator, at: &At<'_>, p: &PathRun<'_>, run: usize, paced: bool) -> anyhow::Result<GenRecord> {
    let (ns, dev, frames) = (at.ns, at.dev, at.frames);
    g.set_template(&p.template)?;
    let others = || p.others.map_or(0, SinkCount::get);
    let (a0, d0, o0) = (p.arrived.get(), (p.decided)()?, others());
    let before = CpuSnapshot::now();
    let napi0 = innet_xdp::fabric::napi_threads_cpu_s();
    let progs0 = innet_xdp::bpf_stats::snapshot(FABRIC_PROGRAMS);
    let pace = paced.then(|| Pace::new(frames as u64));
    let (r, stalls) = match pace {
        Some(pace) => {
            // A refusal finishes a request too.
            let (arrived, others) = (p.arrived, p.others);
            let r = g.run_paced(ns, dev, pace, || arrived.get() + others.map_or(0, SinkCount::get))?;
            (r.run, r.stalls)
        }
        None => (g.run(ns, dev, frames)?, 0),
    };
    // The last frames are still on their way.
    std::thread::sleep(Duration::from_millis(20));
    let cpu = before.used();
    let napi = innet_xdp::fabric::napi_threads_cpu_s() - napi0;
    let arrived = p.arrived.get() - a0;
    let programs = innet_xdp::bpf_stats::costs(&progs0, &innet_xdp::bpf_stats::snapshot(FABRIC_PROGRAMS), arrived);
    let in_programs: f64 = programs.iter().map(|c| c.ns_per_unit).sum();
    let fabric_ns = (r.thread_cpu_s + napi) * 1e9 / arrived.max(1) as f64;
    let busy = cpu.machine_user_s + cpu.machine_system_s + cpu.machine_irq_s;
    let decided = (p.decided)()? - d0;
    Ok(GenRecord {
        experiment: at.experiment,
        run,
        git_commit: results::git_commit(),
        fabric: at.fabric,
        path: p.path,
        injection: if paced { "paced" } else { "open-loop" },
        requests: r.frames,
        arrived,
        others: others() - o0,
        decided,
        seconds: cpu.wall_s,
        per_s: arrived as f64 / cpu.wall_s.max(1e-9),
        per_cpu_s: arrived as f64 / busy.max(1e-9),
        generator_thread_cpu_s: r.thread_cpu_s,
        napi_threads_cpu_s: napi,
        per_fabric_cpu_s: arrived as f64 / (r.thread_cpu_s + napi).max(1e-9),
        decided_per_generator_cpu_s: decided as f64 / r.thread_cpu_s.max(1e-9),
        fabric_ns_per_decision: fabric_ns,
        transport_ns_per_decision: fabric_ns - in_programs,
        programs,
        cpu,
        stalls,
        pace,
        load_average: load_average(),
    })
}

/// Rounds `runs`, each: the generator's ceiling (aimed at a sink that
/// counts and drops, with the first path's template), then every path
/// paced and open loop (aimed at `target`). Paced first: an open loop
/// overflows rings, and a chain whose ACKs were lost keeps those versions
/// dirty.
fn gen_rounds(
    g: &mut Generator,
    at: &At<'_>,
    target: &dyn Fn() -> anyhow::Result<OwnedFd>,
    paths: &[PathRun<'_>],
    runs: std::ops::Range<usize>,
) -> anyhow::Result<Vec<GenRecord>> {
    let drop = Sink::load()?;
    let dropped = drop.count()?;
    let count = || Ok(dropped.get());
    let ceiling = PathRun {
        path: CEILING_PATH,
        template: paths[0].template.clone(),
        arrived: &dropped,
        others: None,
        decided: &count,
    };
    let _stats = if at.bpf_stats { Some(innet_xdp::bpf_stats::enable()?) } else { None };
    let mut records = vec![];
    for run in runs {
        // SAFETY: `drop` outlives the borrow; the generator keeps its own copy.
        g.aim(unsafe { BorrowedFd::borrow_raw(drop.program_fd()?) }.try_clone_to_owned()?)?;
        records.push(gen_round(g, at, &ceiling, run, false)?);
        g.aim(target()?)?;
        for p in paths {
            for paced in [true, false] {
                records.push(gen_round(g, at, p, run, paced)?);
            }
        }
    }
    Ok(records)
}

fn check_fabric(fabric: FabricArgs, what: &str) -> anyhow::Result<()> {
    ensure!(innet_xdp::object::euid() == 0, "{what} needs root (network namespaces, BPF)");
    ensure!(
        fabric.xdp_mode == XdpMode::Native,
        "{what} --xdp-mode generic: the in-kernel generator's frames are XDP frames from end to end, which \
         only a driver-mode fabric carries; measure generic mode end to end (without --fabric-only)"
    );
    Ok(())
}

/// The client id of the transaction generator's requests.
pub const GEN_CLIENT_ID: u32 = 7;
/// The key they name.
const GEN_KEY: u32 = 1;

/// The transaction switch's two paths: a write-only request, which the
/// switch records as a pending write and forwards to the store (Gotthard
/// Algorithm 2: nothing to check), and a request comparing the same key
/// against a stale value, which it answers itself with an optimistic abort
/// (the pending write the first path left is what it compares against,
/// line 13). The running number is the request id, so the client's
/// requests are new ones, never duplicates or stale.
pub fn txn_templates() -> [(&'static str, Template); 2] {
    let value = |s: &str| Value::from_str_padded(s).expect("short value");
    let request_id_at = innet_xdp::frame::PAYLOAD_OFFSET + innet_wire::txn::offset::REQ_ID;
    let t = |ops: Vec<Op>| {
        Template::stamped(testbed::request_frame(&TxnMsg::request(GEN_CLIENT_ID, 1, ops).encode()), Some(request_id_at))
    };
    [
        ("forward-to-store", t(vec![Op::write(GEN_KEY, value("w"))])),
        ("optimistic-abort", t(vec![Op::value(GEN_KEY, value("stale")), Op::write(GEN_KEY, value("next"))])),
    ]
}

/// `innet bench xdp-txn --fabric-only`: the `txn` testbed with the XDP
/// switch (optimistic-abort mode) and no end host; per round, `frames`
/// requests of each of [`txn_templates`] injected at the switch's client
/// port, counted by a sink on the store's device (forwarded) and on the
/// client's (answered by the switch). Records appended to
/// `out/xdp-txn-fabric-only.jsonl`.
pub fn txn_fabric_only(
    fabric: FabricArgs,
    innet_exe: &Path,
    runs: usize,
    frames: u32,
    bpf_stats: bool,
    out: &Path,
) -> anyhow::Result<(Vec<GenRecord>, PathBuf)> {
    check_fabric(fabric, "bench xdp-txn --fabric-only")?;
    ensure!(runs >= 1 && frames >= 1, "--runs and --frames at least 1");
    let opts = UpOptions {
        topology: "txn".into(),
        data_plane: Some(DataPlaneAt::Xdp),
        mode: Mode::OptimisticAbort,
        start_store: false,
        store_delay_ms: 0.0,
        innet_exe: innet_exe.to_path_buf(),
        fabric: fabric.fabric(),
        auth_key: None,
    };
    testbed::up(&opts)?;
    let _down = DownOnDrop;
    let (store_sink, client_sink) = (Sink::load()?, Sink::load()?);
    store_sink.attach(&opts.fabric, testbed::NS_STORE, &[testbed::IF_STORE])?;
    client_sink.attach(&opts.fabric, testbed::NS_CLIENT, &[testbed::IF_CLIENT])?;
    let (to_store, to_client) = (store_sink.count()?, client_sink.count()?);
    let pins = Path::new(testbed::PIN_DIR).join("txn_switch");
    let pins = &pins;
    let counter = |name: &'static str| {
        move || -> anyhow::Result<u64> {
            let c = innet_xdp::txn::pinned_counters(pins)?;
            Ok(c.into_iter().find(|(n, _)| *n == name).map_or(0, |(_, v)| v))
        }
    };
    let (forwarded, aborted) = (counter("forwarded"), counter("optimistically_aborted"));
    let [forward, abort] = txn_templates();
    let paths = [
        PathRun { path: forward.0, template: forward.1, arrived: &to_store, others: None, decided: &forwarded },
        PathRun { path: abort.0, template: abort.1, arrived: &to_client, others: None, decided: &aborted },
    ];
    let switch = || innet_xdp::generator::pinned_program(&testbed::switch_program_pin());
    let mut g = Generator::load_for(&paths[0].template, switch()?, testbed::NS_SWITCH)?;
    let at = At {
        experiment: "xdp-txn-fabric-only",
        fabric,
        ns: testbed::NS_SWITCH,
        dev: testbed::IF_SWITCH_CLIENT_SIDE,
        frames,
        bpf_stats,
    };
    let records = gen_rounds(&mut g, &at, &switch, &paths, 0..runs)?;
    let path = out.join("xdp-txn-fabric-only.jsonl");
    results::append_jsonl(&path, &records)?;
    Ok((records, path))
}

/// One round of [`chain_fabric_only`] on a built chain testbed.
fn chain_round(
    o: &ChainUp,
    fabric: FabricArgs,
    run: usize,
    frames: u32,
    bpf_stats: bool,
) -> anyhow::Result<Vec<GenRecord>> {
    let nodes = o.nodes;
    let xs = chain_tb::attach_nodes(o)?;
    // The tail's ACKs to the writer leave by its device towards the
    // client; what the other nodes send the client (refusals) is counted
    // apart.
    let (acks, others) = (Sink::load()?, Sink::load()?);
    let client_devs: Vec<String> = (0..nodes).map(chain_tb::client_dev).collect();
    let (tail_dev, rest) = client_devs.split_last().expect("nodes >= 2");
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    acks.attach(&o.fabric, testbed::NS_CLIENT, &[tail_dev.as_str()])?;
    others.attach(&o.fabric, testbed::NS_CLIENT, &rest)?;
    let (acked, other) = (acks.count()?, others.count()?);
    let tail = &xs[nodes - 1];
    let committed = || -> anyhow::Result<u64> {
        match &tail.program {
            chain_tb::NodeProgram::Craq(x) => x.counter("writes_committed_at_tail"),
            chain_tb::NodeProgram::Nc(_) => anyhow::bail!("a NetChain node in a NetCRAQ chain"),
        }
    };
    let write = CraqMsg::write(0, Value::from_counter(1)).encode();
    let key_at = innet_xdp::frame::PAYLOAD_OFFSET + innet_wire::netcraq::offset::KEY;
    let template = Template {
        frame: chain_tb::client_frame(Protocol::NetCraq, 0, &write),
        stamp_at: Some(key_at),
        mask: CHAIN_GEN_KEYS - 1,
    };
    let p = PathRun { path: "write-to-tail-ack", template, arrived: &acked, others: Some(&other), decided: &committed };
    // SAFETY: the head's program stays loaded (`xs`) while the descriptor is borrowed.
    let head =
        || -> anyhow::Result<OwnedFd> { Ok(unsafe { BorrowedFd::borrow_raw(xs[0].xdp_fd()?) }.try_clone_to_owned()?) };
    let mut g =
        Generator::load_for(&p.template, head()?, &chain_tb::node_ns(0)).context("the generator at the head")?;
    let (ns, dev) = (chain_tb::node_ns(0), chain_tb::node_dev(0));
    let at = At { experiment: "xdp-chain-fabric-only", fabric, ns: &ns, dev: &dev, frames, bpf_stats };
    gen_rounds(&mut g, &at, &head, std::slice::from_ref(&p), run..run + 1)
}

/// NetCRAQ keys the chain generator's writes cycle through (the running
/// number masked): each has at most a few writes in flight at the pace's
/// window, far below a node's version cells.
pub const CHAIN_GEN_KEYS: u32 = 256;
const _: () = assert!(CHAIN_GEN_KEYS.is_power_of_two());
const _: () = assert!(CHAIN_GEN_KEYS as usize <= innet_chain::netcraq::OBJECTS_DEFAULT);

/// `innet bench xdp-chain --fabric-only`: a NetCRAQ chain of `nodes` on the
/// chain testbed and no end host; per round `frames` writes injected at
/// the head's device towards the clients, the tail's ACKs to the writer
/// counted by a sink on the client's devices (the copies to the other
/// nodes clean their versions, as in the chain). Records appended to
/// `out/xdp-chain-fabric-only.jsonl`.
pub fn chain_fabric_only(
    nodes: usize,
    fabric: FabricArgs,
    multicast: Multicast,
    runs: usize,
    frames: u32,
    bpf_stats: bool,
    out: &Path,
) -> anyhow::Result<(Vec<GenRecord>, PathBuf)> {
    check_fabric(fabric, "bench xdp-chain --fabric-only")?;
    ensure!(runs >= 1 && frames >= 1, "--runs and --frames at least 1");
    ensure!(nodes >= 2, "--fabric-only needs a chain of at least 2 nodes (the head's refusals and the tail's ACKs leave by different devices)");
    let o = ChainUp { fabric: fabric.fabric(), multicast, ..ChainUp::new(Protocol::NetCraq, nodes) };
    let mut records = vec![];
    for run in 0..runs {
        // A fresh chain each round: versions an earlier round's lost ACKs
        // left dirty would refuse this round's writes.
        chain_tb::up(&o, None)?;
        let _down = DownOnDrop;
        records.extend(chain_round(&o, fabric, run, frames, bpf_stats)?);
    }
    let path = out.join("xdp-chain-fabric-only.jsonl");
    results::append_jsonl(&path, &records)?;
    Ok((records, path))
}
