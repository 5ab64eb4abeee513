//! The in-kernel load generator (`bpf/gen.bpf.c`): the data plane's own
//! capacity, with no socket and no end host in the way (issue 20, item 4).
//!
//! `BPF_PROG_TEST_RUN` with `BPF_F_TEST_XDP_LIVE_FRAMES` runs `xdp_gen`
//! on `repeat` frames as if each had arrived on a testbed device: the
//! program writes the template (a request a client or proposer would send)
//! over the frame, stamps a running number into it if asked, and
//! tail-calls the role's own XDP program (pinned by the testbed, configured
//! as it runs there), whose `XDP_TX` and redirects really transmit. The
//! frames then go through the fabric as any other (devmap copies, the next
//! hops' programs) until a program at the far end counts and drops them
//! (a vote counter in sink mode, a drop program): nothing reaches a socket.
//!
//! The kernel runs the frames in batches of 64 on the calling CPU;
//! downstream hops run where their NAPI runs (threaded NAPI: a kernel
//! thread per device, on any CPU). A figure "per core" divides by the CPU
//! the whole machine was busy meanwhile (`crate`'s callers read
//! `/proc/stat`).

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::object::BpfObject;
use crate::testbed::{ifindex, in_netns};

static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/gen.bpf.o"));

/// Every generated frame's length: the template padded with zeros (the
/// roles read the UDP length; padding is no payload).
pub const FRAME_LEN: usize = 128;
const CONFIG_SIZE: usize = 12 + FRAME_LEN;
/// The device `xdp_gen` stays attached to ([`Generator::load`]).
pub const DISPATCHER_DEV: &str = "innet-gen0";
/// `BPF_F_TEST_XDP_LIVE_FRAMES` (linux/bpf.h).
const LIVE_FRAMES: u32 = 1 << 1;

/// A loaded generator aimed at one role's program.
pub struct Generator {
    obj: BpfObject,
    _target: OwnedFd,
}

/// What the generator writes over every frame: a whole Ethernet/IPv4/UDP
/// frame (at most [`FRAME_LEN`] bytes), and where to stamp the running
/// number (a big-endian u32, ANDed with `mask`), if anywhere.
#[derive(Clone, Debug)]
pub struct Template {
    pub frame: Vec<u8>,
    pub stamp_at: Option<usize>,
    pub mask: u32,
}

impl Template {
    /// `frame` with the running number at `stamp_at`, unmasked.
    pub fn stamped(frame: Vec<u8>, stamp_at: Option<usize>) -> Template {
        Template { frame, stamp_at, mask: u32::MAX }
    }

    fn config(&self) -> Result<Vec<u8>> {
        if self.frame.len() > FRAME_LEN {
            bail!("a template of {} bytes: at most {FRAME_LEN}", self.frame.len());
        }
        if self.stamp_at.is_some_and(|at| at == 0 || at + 4 > self.frame.len()) {
            bail!("stamp offset {:?} outside the {}-byte template", self.stamp_at, self.frame.len());
        }
        let mut cfg = Vec::with_capacity(CONFIG_SIZE);
        cfg.extend_from_slice(&(self.frame.len() as u32).to_ne_bytes());
        cfg.extend_from_slice(&(self.stamp_at.unwrap_or(0) as u32).to_ne_bytes());
        cfg.extend_from_slice(&self.mask.to_ne_bytes());
        cfg.extend_from_slice(&self.frame);
        cfg.resize(CONFIG_SIZE, 0);
        Ok(cfg)
    }
}

/// What one [`Generator::run`] did.
#[derive(Clone, Copy, Debug)]
pub struct GenRun {
    pub frames: u64,
    pub elapsed: Duration,
    /// CPU seconds of the generator's thread (user + system): its system
    /// calls run `xdp_gen` and the program it tail-calls, and whatever
    /// the verdicts start in its softirq.
    pub thread_cpu_s: f64,
}

impl Generator {
    /// Loads the generator with `template` (a whole Ethernet/IPv4/UDP
    /// frame, at most [`FRAME_LEN`] bytes), a running number at byte
    /// `stamp_at` if given, and the program pinned at `target` as what
    /// every frame goes to; it will run in namespace `ns`. The running
    /// number goes on across [`Generator::set_template`].
    ///
    /// A test run of more than one frame puts the program into the
    /// kernel's XDP dispatcher and takes it out again after, each change
    /// waiting for an RCU grace period (milliseconds, on a loaded machine
    /// tens): paced bursts would spend their time there. A program
    /// attached in driver mode stays in the dispatcher, so `load` attaches
    /// `xdp_gen` to a veth pair of its own in `ns` (`innet-gen0`, which
    /// receives nothing; it goes with the namespace).
    pub fn load(template: &[u8], stamp_at: Option<usize>, target: &Path, ns: &str) -> Result<Generator> {
        Generator::load_template(&Template::stamped(template.to_vec(), stamp_at), target, ns)
    }

    /// [`Generator::load`] with a [`Template`].
    pub fn load_template(template: &Template, target: &Path, ns: &str) -> Result<Generator> {
        Generator::load_for(template, pinned_program(target)?, ns)
    }

    /// [`Generator::load_template`] aimed at the program `target` (a
    /// descriptor of it the generator keeps) rather than a pinned one.
    pub fn load_for(template: &Template, target: OwnedFd, ns: &str) -> Result<Generator> {
        let cfg = template.config()?;
        let obj = BpfObject::load(OBJECT, &[])?;
        obj.write("gen_config", 0, &cfg)?;
        aim(&obj, &target)?;
        let _ = crate::netns::ip(&["-n", ns, "link", "del", DISPATCHER_DEV]);
        crate::netns::ip(&["-n", ns, "link", "add", DISPATCHER_DEV, "type", "veth", "peer", "name", "innet-gen1"])?;
        crate::netns::ip(&["-n", ns, "link", "set", DISPATCHER_DEV, "up"])?;
        crate::netns::ip(&["-n", ns, "link", "set", "innet-gen1", "up"])?;
        let fabric = crate::fabric::Fabric::native(crate::fabric::ThreadedNapi::Off);
        fabric.attach(obj.program_fd("xdp_gen")?, ns, &[DISPATCHER_DEV]).context("keep xdp_gen in the dispatcher")?;
        Ok(Generator { obj, _target: target })
    }

    /// Aims the next frames at `target` instead (the generator keeps it
    /// open): e.g. at `xdp_sink`, which counts and drops, for the
    /// generator's own ceiling.
    pub fn aim(&mut self, target: OwnedFd) -> Result<()> {
        aim(&self.obj, &target)?;
        self._target = target;
        Ok(())
    }

    /// What the next frames carry (the running number goes on).
    pub fn set_template(&self, template: &Template) -> Result<()> {
        self.obj.write("gen_config", 0, &template.config()?)
    }

    /// Runs `repeat` frames as if received on `dev` of namespace `ns`,
    /// as fast as the calling CPU runs them (open loop).
    pub fn run(&self, ns: &str, dev: &str, repeat: u32) -> Result<GenRun> {
        let index = ifindex(ns, dev)?;
        let fd = self.obj.program_fd("xdp_gen")?;
        let mut frame = vec![0u8; FRAME_LEN];
        let len = FRAME_LEN as u32;
        let t = Instant::now();
        let thread_cpu_s = in_netns(ns, || {
            let cpu0 = thread_cpu_s();
            live_frames(fd, &mut frame, len, index, repeat)?;
            Ok(thread_cpu_s() - cpu0)
        })?;
        Ok(GenRun { frames: repeat as u64, elapsed: t.elapsed(), thread_cpu_s })
    }

    /// Runs `total` frames in bursts of `burst`, keeping at most `window`
    /// of them unfinished: `done()` says how many the far end has finished
    /// (decided, answered), and a burst waits until `sent - done() <=
    /// window - burst`. A pipeline of devices has rings of a few hundred
    /// frames each; an open loop at the generator's rate (millions per
    /// second) overflows them and measures drops. A burst that waited
    /// `stall` without progress goes anyway (frames lost downstream never
    /// finish); those waits are counted.
    pub fn run_paced(&self, ns: &str, dev: &str, pace: Pace, done: impl Fn() -> u64 + Send + Sync) -> Result<PacedRun> {
        let index = ifindex(ns, dev)?;
        let fd = self.obj.program_fd("xdp_gen")?;
        let len = FRAME_LEN as u32;
        let t = Instant::now();
        let start = done();
        let (stalls, sent, thread_cpu_s) = in_netns(ns, || {
            let cpu0 = thread_cpu_s();
            let mut frame = vec![0u8; FRAME_LEN];
            let (mut sent, mut stalls) = (0u64, 0u64);
            while sent < pace.total {
                let waited = Instant::now();
                while sent.saturating_sub(done().saturating_sub(start)) + pace.burst as u64 > pace.window as u64 {
                    if waited.elapsed() > pace.stall {
                        stalls += 1;
                        break;
                    }
                    // Give the CPU to the NAPI threads that make the progress.
                    std::thread::yield_now();
                }
                let n = (pace.burst as u64).min(pace.total - sent) as u32;
                live_frames(fd, &mut frame, len, index, n)?;
                sent += n as u64;
            }
            Ok((stalls, sent, thread_cpu_s() - cpu0))
        })?;
        Ok(PacedRun { run: GenRun { frames: sent, elapsed: t.elapsed(), thread_cpu_s }, stalls, thread_cpu_s })
    }

    /// Frames written, and frames no target took (both summed over CPUs).
    pub fn counters(&self) -> Result<(u64, u64)> {
        let m = self.obj.map("gen_counters")?;
        let sum = |i: u32| -> Result<u64> {
            use libbpf_rs::{MapCore, MapFlags};
            let per_cpu = m.lookup_percpu(&i.to_ne_bytes(), MapFlags::ANY)?.unwrap_or_default();
            Ok(per_cpu.iter().map(|v| u64::from_ne_bytes(v[..8].try_into().expect("u64"))).sum())
        };
        Ok((sum(0)?, sum(1)?))
    }
}

/// How [`Generator::run_paced`] injects.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Pace {
    pub total: u64,
    pub burst: u32,
    pub window: u32,
    #[serde(skip)]
    pub stall: Duration,
}

impl Pace {
    pub fn new(total: u64) -> Pace {
        Pace { total, burst: 32, window: 256, stall: Duration::from_millis(2) }
    }
}

/// What [`Generator::run_paced`] did.
#[derive(Clone, Copy, Debug)]
pub struct PacedRun {
    pub run: GenRun,
    /// Bursts sent after waiting `stall` for progress that did not come.
    pub stalls: u64,
    /// CPU seconds of the generator's thread: its system calls run the
    /// first hop's program (and, unless NAPI is threaded, the NAPI polls
    /// of the hops after it, in softirq), and its pacing loop polls.
    pub thread_cpu_s: f64,
}

/// The calling thread's CPU seconds (user + system).
fn thread_cpu_s() -> f64 {
    // SAFETY: getrusage fills a plain struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Makes `target` the program the generator `obj` tail-calls.
fn aim(obj: &BpfObject, target: &OwnedFd) -> Result<()> {
    crate::object::update_raw(obj.map_fd("gen_target")?, &0u32.to_ne_bytes(), &target.as_raw_fd().to_ne_bytes())
        .context("aim the generator at the role's program")
}

/// The program pinned at `path`.
pub fn pinned_program(path: &Path) -> Result<OwnedFd> {
    let c = CString::new(path.as_os_str().as_encoded_bytes()).context("a path without NUL")?;
    // SAFETY: `c` is a valid NUL-terminated path.
    let fd = unsafe { libbpf_rs::libbpf_sys::bpf_obj_get(c.as_ptr()) };
    if fd < 0 {
        bail!("open the program pinned at {}: {}", path.display(), std::io::Error::last_os_error());
    }
    // SAFETY: bpf_obj_get returned a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `BPF_PROG_TEST_RUN` of XDP program `fd` in live-frame mode: `repeat`
/// copies of `frame`, received on `ifindex` of the calling thread's
/// namespace, their verdicts carried out.
fn live_frames(fd: RawFd, frame: &mut [u8], len: u32, ifindex: u32, repeat: u32) -> Result<()> {
    // struct xdp_md: data, data_end, data_meta, ingress_ifindex,
    // rx_queue_index, egress_ifindex.
    let mut ctx = [0u32; 6];
    ctx[1] = len;
    ctx[3] = ifindex;
    // SAFETY: zeroed is a valid bpf_test_run_opts; every pointer set below
    // outlives the call and its size is given.
    let mut opts: libbpf_rs::libbpf_sys::bpf_test_run_opts = unsafe { std::mem::zeroed() };
    opts.sz = std::mem::size_of_val(&opts) as _;
    opts.data_in = frame.as_ptr().cast();
    opts.data_size_in = len;
    opts.ctx_in = ctx.as_ptr().cast();
    opts.ctx_size_in = std::mem::size_of_val(&ctx) as u32;
    opts.repeat = repeat as _;
    opts.flags = LIVE_FRAMES;
    // SAFETY: as above.
    let rc = unsafe { libbpf_rs::libbpf_sys::bpf_prog_test_run_opts(fd, &mut opts) };
    if rc != 0 {
        bail!("BPF_PROG_TEST_RUN in live-frame mode: {}", std::io::Error::last_os_error());
    }
    Ok(())
}
