//! Decisions up: how a decided Paxos instance gets from an XDP program to
//! a user-space learner, four ways, measured side by side (`innet bench
//! xdp-upcall`, docs/xdp.md "Decisions up"; issue 20, item 1).
//!
//! The in-network Paxos testbed hands every decision to each learner as
//! one UDP datagram: one skb, one socket enqueue and one wake-up per
//! decision per receiver, the largest cost in its profile. The ways out:
//!
//! * `socket`: today's path, `XDP_PASS` of each DECIDED datagram;
//! * `batch-B`: the program holds decisions and every B-th carries the
//!   held ones and itself up as one datagram (B concatenated DECIDED
//!   messages): one skb and at most one wake-up per B decisions, but a
//!   held decision waits for B-1 more: XDP cannot send a packet from a
//!   timer, so nothing flushes a partial batch but the next decisions;
//! * `ring` / `ring-tT`: a BPF ring buffer record per decision, read over
//!   its memory mapping ([`ring`]). `ring` submits with flags 0, the
//!   kernel's adaptive rule: wake the reader only when it had caught up.
//!   `ring-tT` submits with `BPF_RB_NO_WAKEUP` except the record that
//!   makes T unread, which gets `BPF_RB_FORCE_WAKEUP`; fewer than T wait
//!   for the reader's poll timeout. A full ring fails the reservation and
//!   the program passes the decision to the socket instead (counted as
//!   `ring_full`): the learner reads both, nothing is lost;
//! * `af-xdp`: an XSKMAP redirect to an AF_XDP socket (copy mode, the only
//!   one veth has; [`xsk`]), its frames read from the socket's RX ring.
//!   The redirect fails over to the socket only when no AF_XDP socket is
//!   bound; frames that find its rings full are dropped by the kernel
//!   after the program returned, and counted (`xsk_dropped`).
//! * `drop` (`XDP_DROP`, nothing up) measures the generator's ceiling.
//!
//! **Setup.** Two network namespaces of the benchmark's own, `innet-up-tx`
//! and `innet-up-rx`, one veth pair between them, `xdp_upcall`
//! (`bpf/upcall.bpf.c`) attached in driver mode to the receiving end. The
//! sender is either in the kernel, `xdp_upcall_gen` run by
//! `BPF_PROG_TEST_RUN` in live frame mode on the sending veth (it stamps
//! an instance number and `bpf_ktime_get_ns` into each frame and `XDP_TX`es
//! it to the peer), or a UDP socket sending batches with `sendmmsg`. The
//! generator is also attached in driver mode to the sending veth: a live
//! frame run adds its program to the kernel's XDP dispatcher and removes it
//! after, two updates that wait for RCU (about 24 ms per run here, which
//! capped the generator at 2.7k frames/s in bursts of 64) unless the
//! program is in the dispatcher already. One
//! consumer thread ([`consumer`]) reads every source with epoll and checks
//! every decision in: once, in order per source. With two CPUs the
//! generator runs on CPU 0 (and with it, in its softirq, the veth hop and
//! the receiving XDP program) and the consumer on CPU 1.
//!
//! **Measures.** Rate runs keep at most `window` decisions ahead of the
//! consumer (a proposer's window) and report decisions per second read by
//! the consumer, CPU per decision (this process's user and system time
//! from `getrusage`, the consumer thread's own, and the whole machine's
//! from /proc/stat, where other work shows up too), consumer wake-ups
//! (`epoll_wait` returns with something ready) per 1,000 decisions, and
//! every loss, duplicate and inversion. Latency runs send one decision
//! every `gap` and take the time from the generator's stamp to the
//! consumer's read of `CLOCK_MONOTONIC`.

mod consumer;
mod ring;
mod xsk;

use std::net::{Ipv4Addr, UdpSocket};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::path::Path as FsPath;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use libbpf_rs::{MapCore, MapFlags, Xdp, XdpFlags};
use serde::{Deserialize, Serialize};

use innet_wire::paxos::{self as wire, MsgType, PaxosMsg, Value};

use consumer::{ConsumeOptions, Consumed, Progress, Sources};
pub use consumer::{Tally, DECISIONS_MAX};
use ring::Ring;
use xsk::Xsk;

use crate::frame::{self, Endpoint};
use crate::layout::consts as c;
use crate::layout::same;
use crate::netns::{in_netns, ip, mac_str};
use crate::object::BpfObject;
use crate::testbed;

static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/upcall.bpf.o"));

/// The receiving side's program (driver mode on [`IF_RX`]).
pub const RECEIVE_PROGRAM: &str = "xdp_upcall";
/// The in-kernel generator (live frames on [`IF_TX`]).
pub const GENERATOR_PROGRAM: &str = "xdp_upcall_gen";

pub const NS_TX: &str = "innet-up-tx";
pub const NS_RX: &str = "innet-up-rx";
pub const IF_TX: &str = "innet-up-t";
pub const IF_RX: &str = "innet-up-r";
pub const TX_IP: Ipv4Addr = Ipv4Addr::new(10, 83, 0, 1);
pub const RX_IP: Ipv4Addr = Ipv4Addr::new(10, 83, 0, 2);
const MAC_TX: [u8; 6] = [0x02, 0x53, 0, 0, 0, 1];
const MAC_RX: [u8; 6] = [0x02, 0x53, 0, 0, 0, 2];
const SENDER_PORT: u16 = 40_000;
/// Held while the benchmark's namespaces exist: one run at a time.
pub const LOCK_FILE: &str = "/run/innet/upcall.lock";

/// Most decisions one batch datagram carries.
pub const BATCH_MAX: u32 = c::UPCALL_BATCH_MAX as u32;
/// The ring's size when none is given, bytes.
pub const RING_BYTES_DEFAULT: u32 = c::UPCALL_RING_BYTES_DEFAULT as u32;
/// Bytes of ring one decision takes (record + the kernel's header).
pub const RING_RECORD_STRIDE: u32 = c::UPCALL_RECORD_STRIDE as u32;
/// Largest ring accepted, bytes.
pub const RING_BYTES_MAX: u32 = 1 << 30;
/// Largest AF_XDP ring accepted, entries.
pub const XSK_RING_MAX: u32 = xsk::RING_MAX;
/// Most decisions one latency run sends.
pub const LATENCY_SAMPLES_MAX: u32 = 1_000_000;
/// Most frames one generator call sends.
pub const BURST_MAX: u32 = 4096;
/// Largest learner socket receive buffer accepted, bytes (kernel memory,
/// forced past `net.core.rmem_max`).
pub const SOCKET_RCVBUF_MAX: u32 = 1 << 30;
/// Bytes of one `struct upcall_batch` (per CPU).
const BATCH_VALUE_LEN: usize = 8 + BATCH_MAX as usize * wire::PACKET_LEN;

same!(c::UPCALL_RECORD_LEN, wire::PACKET_LEN);
same!(c::UPCALL_RECORD_STRIDE, (wire::PACKET_LEN + 8).div_ceil(8) * 8);
same!(c::PAXOS_LEARNER_PORT, wire::LEARNER_PORT);
same!(c::UPCALL_PATH_SOCKET, Path::Socket as u32);
same!(c::UPCALL_PATH_BATCH, Path::Batch as u32);
same!(c::UPCALL_PATH_RING, Path::Ring as u32);
same!(c::UPCALL_PATH_XSK, Path::Xsk as u32);
same!(c::UPCALL_PATH_DROP, Path::Drop as u32);
same!(c::UPCALL_CTR_COUNT, COUNTERS.len());

/// `upcall_counters`, in the header's order (`INNET_UPCALL_CTR_*`).
pub const COUNTERS: [&str; 13] = [
    "decisions",
    "other",
    "passed",
    "ring_records",
    "ring_full",
    "ring_wakeups_forced",
    "batch_held",
    "batch_packets",
    "batch_grow_failed",
    "xsk_redirects",
    "xsk_fallback",
    "dropped",
    "batch_overflow",
];
same!(c::UPCALL_CTR_RING_FULL, 4);
same!(c::UPCALL_CTR_BATCH_PACKETS, 7);
same!(c::UPCALL_CTR_DROPPED, 11);
same!(c::UPCALL_CTR_BATCH_OVERFLOW, 12);

/// How a decision goes up (`INNET_UPCALL_PATH_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Path {
    Socket = 0,
    Batch = 1,
    Ring = 2,
    Xsk = 3,
    Drop = 4,
}

/// One configuration of a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Variant {
    pub path: Path,
    /// [`Path::Batch`]: decisions per datagram.
    pub batch: u32,
    /// [`Path::Ring`]: 0 = adaptive wake-ups, T = forced at T unread.
    pub wake_threshold: u32,
}

impl Variant {
    pub fn of(path: Path) -> Variant {
        Variant { path, batch: 1, wake_threshold: 0 }
    }

    /// `socket`, `batch-8`, `ring`, `ring-t32`, `af-xdp`, `drop`.
    pub fn name(&self) -> String {
        match self.path {
            Path::Socket => "socket".into(),
            Path::Batch => format!("batch-{}", self.batch),
            Path::Ring if self.wake_threshold == 0 => "ring".into(),
            Path::Ring => format!("ring-t{}", self.wake_threshold),
            Path::Xsk => "af-xdp".into(),
            Path::Drop => "drop".into(),
        }
    }
}

/// Who sends the decisions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sender {
    /// `xdp_upcall_gen` in live frame mode: never the bottleneck.
    Kernel,
    /// A UDP socket, `sendmmsg` of `burst` datagrams.
    Socket,
}

impl Sender {
    pub fn name(self) -> &'static str {
        match self {
            Sender::Kernel => "kernel",
            Sender::Socket => "socket",
        }
    }
}

impl std::str::FromStr for Sender {
    type Err = String;
    fn from_str(s: &str) -> Result<Sender, String> {
        match s {
            "kernel" => Ok(Sender::Kernel),
            "socket" => Ok(Sender::Socket),
            _ => Err(format!("sender '{s}': kernel (BPF_PROG_TEST_RUN live frames) or socket (sendmmsg)")),
        }
    }
}

/// Everything `innet bench xdp-upcall` varies (its flags and its record).
#[derive(Clone, Debug, Serialize)]
pub struct UpcallConfig {
    /// Most decisions per rate run.
    pub decisions: u64,
    /// Longest rate run, seconds (the generator stops at whichever comes first).
    pub seconds: f64,
    /// Most decisions ahead of the consumer.
    pub window: u64,
    /// Decisions per generator call (live frames per test run, datagrams per sendmmsg).
    pub burst: u32,
    pub rounds: usize,
    /// Batch sizes to measure (one `batch-B` path each).
    pub batches: Vec<u32>,
    pub ring_bytes: u32,
    /// Wake-up thresholds to measure (one ring path each; 0 = adaptive).
    pub ring_thresholds: Vec<u32>,
    /// The consumer's poll timeout, ms: how long fewer than T ring records wait.
    pub poll_timeout_ms: u32,
    /// AF_XDP RX and fill ring entries (twice as many UMEM frames).
    pub xsk_ring: u32,
    /// The learner socket's receive buffer, bytes (SO_RCVBUFFORCE).
    pub socket_rcvbuf: u32,
    pub latency_samples: u32,
    /// Time between decisions in latency runs, us.
    pub latency_gap_us: u64,
    pub senders: Vec<Sender>,
}

impl Default for UpcallConfig {
    fn default() -> Self {
        UpcallConfig {
            decisions: 2_000_000,
            seconds: 2.0,
            window: 4096,
            burst: 256,
            rounds: 3,
            batches: vec![8, 32],
            ring_bytes: RING_BYTES_DEFAULT,
            ring_thresholds: vec![0, 32],
            poll_timeout_ms: 1,
            xsk_ring: 4096,
            socket_rcvbuf: 32 << 20,
            latency_samples: 1000,
            latency_gap_us: 200,
            senders: vec![Sender::Kernel, Sender::Socket],
        }
    }
}

impl UpcallConfig {
    /// The paths measured, in the table's order.
    pub fn variants(&self) -> Vec<Variant> {
        let mut v = vec![Variant::of(Path::Socket)];
        v.extend(self.batches.iter().map(|&b| Variant { batch: b, ..Variant::of(Path::Batch) }));
        v.extend(self.ring_thresholds.iter().map(|&t| Variant { wake_threshold: t, ..Variant::of(Path::Ring) }));
        v.push(Variant::of(Path::Xsk));
        v.push(Variant::of(Path::Drop));
        v
    }

    /// One line saying what is wrong and how to fix it.
    pub fn validate(&self) -> Result<()> {
        ensure!((1..=DECISIONS_MAX).contains(&self.decisions), "--decisions must be 1..={DECISIONS_MAX}");
        ensure!(self.seconds > 0.0 && self.seconds <= 600.0, "--seconds must be above 0 and at most 600");
        ensure!((1..=BURST_MAX).contains(&self.burst), "--burst must be 1..={BURST_MAX}");
        ensure!(
            self.window >= 2 * self.burst as u64 && self.window <= DECISIONS_MAX,
            "--window must be at least twice --burst ({}) and at most {DECISIONS_MAX}",
            self.burst
        );
        ensure!(self.rounds >= 1, "--rounds must be at least 1");
        for &b in &self.batches {
            ensure!(
                (2..=BATCH_MAX).contains(&b) && self.burst % b == 0,
                "--batch {b}: each batch size must be 2..={BATCH_MAX} and divide --burst ({}) so that every run ends on a whole batch",
                self.burst
            );
        }
        ensure!(
            self.ring_bytes.is_power_of_two() && (4096..=RING_BYTES_MAX).contains(&self.ring_bytes),
            "--ring-bytes must be a power of two from 4096 to {RING_BYTES_MAX}"
        );
        for &t in &self.ring_thresholds {
            ensure!(
                t as u64 * 4 <= self.window,
                "--ring-threshold {t}: at most a quarter of --window ({}), or the generator waits on the poll timeout",
                self.window
            );
        }
        ensure!((1..=1000).contains(&self.poll_timeout_ms), "--poll-timeout-ms must be 1..=1000");
        ensure!(
            self.xsk_ring.is_power_of_two() && (64..=XSK_RING_MAX).contains(&self.xsk_ring),
            "--xsk-ring must be a power of two from 64 to {XSK_RING_MAX}"
        );
        ensure!(
            (4096..=SOCKET_RCVBUF_MAX).contains(&self.socket_rcvbuf),
            "--socket-rcvbuf must be 4096..={SOCKET_RCVBUF_MAX} bytes"
        );
        ensure!(
            (1..=LATENCY_SAMPLES_MAX).contains(&self.latency_samples),
            "--latency-samples must be 1..={LATENCY_SAMPLES_MAX}"
        );
        ensure!((1..=1_000_000).contains(&self.latency_gap_us), "--latency-gap-us must be 1..=1000000");
        ensure!(!self.senders.is_empty(), "--senders needs kernel, socket or both");
        Ok(())
    }
}

/// A DECIDED message for instance `inst` with `stamp_ns` in its value's
/// first 8 bytes (little endian), as the generator writes it.
pub fn decided(inst: u32, stamp_ns: u64) -> Vec<u8> {
    let mut bytes = [0u8; wire::VALUE_LEN];
    bytes[..8].copy_from_slice(&stamp_ns.to_le_bytes());
    let value = Value { len: wire::VALUE_LEN as u32, bytes };
    PaxosMsg { msgtype: MsgType::Decided, inst, rnd: 1, vrnd: 1, acptid: 0, value }.encode()
}

/// CPU time per decision over a run, ns.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CpuPerDecision {
    /// The generator thread (`getrusage(RUSAGE_THREAD)`): for the kernel
    /// sender its system time is the generator program, the veth hop and,
    /// in its softirq, the receiving XDP program and the upcall (skb,
    /// socket enqueue and wake-up; ring record; AF_XDP copy), the cost the
    /// testbed's one-CPU pipeline pays per decision per receiver.
    pub generator_user_ns: f64,
    pub generator_sys_ns: f64,
    /// The same as `BPF_PROG_TEST_RUN` timed it (kernel sender only).
    pub generator_kernel_timed_ns: f64,
    /// The consumer thread: reading decisions and waiting for them.
    pub consumer_user_ns: f64,
    pub consumer_sys_ns: f64,
    /// The whole machine (/proc/stat: user+nice, system+irq+softirq),
    /// other engineers' work included.
    pub machine_user_ns: f64,
    pub machine_kernel_ns: f64,
}

#[derive(Clone, Copy, Debug, Default)]
struct CpuSnapshot {
    machine_user: u64,
    machine_kernel: u64,
}

impl CpuSnapshot {
    fn now() -> CpuSnapshot {
        let (machine_user, machine_kernel) = machine_cpu_ns().unwrap_or((0, 0));
        CpuSnapshot { machine_user, machine_kernel }
    }

    fn per_decision(
        &self,
        end: &CpuSnapshot,
        generator: &GeneratorSpent,
        consumed: Option<&Consumed>,
        decisions: u64,
    ) -> CpuPerDecision {
        let per = |ns: u64| ns as f64 / decisions.max(1) as f64;
        CpuPerDecision {
            generator_user_ns: per(generator.user_ns),
            generator_sys_ns: per(generator.sys_ns),
            generator_kernel_timed_ns: per(generator.kernel_timed_ns),
            consumer_user_ns: consumed.map_or(0.0, |c| per(c.user_ns)),
            consumer_sys_ns: consumed.map_or(0.0, |c| per(c.sys_ns)),
            machine_user_ns: per(end.machine_user.saturating_sub(self.machine_user)),
            machine_kernel_ns: per(end.machine_kernel.saturating_sub(self.machine_kernel)),
        }
    }
}

/// `(user + nice, system + irq + softirq)` of all CPUs since boot, ns.
fn machine_cpu_ns() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let f: Vec<u64> = stat.lines().next()?.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    let ns = |ticks: u64| ticks * (1_000_000_000 / hz);
    Some((ns(f.first()? + f.get(1)?), ns(f.get(2)? + f.get(5)? + f.get(6)?)))
}

/// The load average (/proc/loadavg), for the record.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg").map(|s| s.trim().to_string()).unwrap_or_default()
}

/// Where every decision of a run (or of a path's runs) went.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Accounted {
    pub generated: u64,
    /// Distinct decisions the consumer read (for `drop`: dropped by XDP).
    pub delivered: u64,
    pub duplicates: u64,
    /// Per source, inversions summed.
    pub out_of_order: u64,
    /// Generated, neither read nor still held for a batch: lost.
    pub missing: u64,
    /// Still held for a batch when the run ended (no more decisions came
    /// to carry them up): not lost, late.
    pub held_at_end: u64,
    /// Not a DECIDED message, or an instance never generated.
    pub malformed: u64,
    /// Decisions that came by the socket although the path was the ring
    /// or AF_XDP: the fallback took over.
    pub fallback: u64,
    /// Counted by the program: the ring was full.
    pub ring_full: u64,
    /// Dropped at the AF_XDP socket (`XDP_STATISTICS`).
    pub xsk_dropped: u64,
}

impl Accounted {
    fn add(mut self, o: &Accounted) -> Accounted {
        self.generated += o.generated;
        self.delivered += o.delivered;
        self.duplicates += o.duplicates;
        self.out_of_order += o.out_of_order;
        self.missing += o.missing;
        self.held_at_end += o.held_at_end;
        self.malformed += o.malformed;
        self.fallback += o.fallback;
        self.ring_full += o.ring_full;
        self.xsk_dropped += o.xsk_dropped;
        self
    }
}

/// One rate run: `window` decisions at most ahead of the consumer.
#[derive(Clone, Debug, Serialize)]
pub struct RateRun {
    pub variant: String,
    pub sender: String,
    pub round: usize,
    #[serde(flatten)]
    pub count: Accounted,
    pub by_socket: u64,
    pub by_ring: u64,
    pub by_xsk: u64,
    /// Datagrams the socket read (batch datagrams carry several decisions).
    pub datagrams: u64,
    pub ring_wakeups_forced: u64,
    pub batch_packets: u64,
    pub batch_grow_failed: u64,
    /// No tailroom with BATCH_MAX held: a decision went up alone.
    pub batch_overflow: u64,
    /// The window stopped draining (decisions held that nothing carries
    /// up) and the generator gave up: the run ended early.
    pub stalled: bool,
    pub seconds: f64,
    pub decisions_per_s: f64,
    /// Share of the run the generator spent sending (the rest it waited
    /// for the consumer): well below 1, the sender was not the bottleneck.
    pub generator_busy: f64,
    pub wakeups: u64,
    pub timeouts: u64,
    pub wakeups_per_1000: f64,
    pub cpu: CpuPerDecision,
}

/// One latency run: a decision every `gap`.
#[derive(Clone, Debug, Serialize)]
pub struct LatencyRun {
    pub variant: String,
    pub sender: String,
    pub round: usize,
    pub sent: u64,
    pub received: u64,
    /// Still held for a batch at the end (not lost, late: see [`RateRun::held_at_end`]).
    pub held_at_end: u64,
    pub duplicates: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub wakeups_per_1000: f64,
    #[serde(skip)]
    pub latencies_ns: Vec<u64>,
}

/// How a run generates.
#[derive(Clone, Copy, Debug)]
enum Pace {
    /// Up to `n` decisions in bursts, within the window, until `until`.
    Window { n: u64, until: Instant },
    /// `n` decisions, one every `gap`.
    Gap { n: u64, gap: Duration },
}

/// One run: what goes up which way, how it is sent, how it is read.
#[derive(Clone, Copy, Debug)]
struct Plan {
    variant: Variant,
    sender: Sender,
    pace: Pace,
    burst: u32,
    consume: ConsumeOptions,
}

/// What a rate run is asked (the test drives these directly).
#[derive(Clone, Copy, Debug)]
pub struct RateOptions {
    pub decisions: u64,
    pub seconds: f64,
    pub window: u64,
    pub burst: u32,
    pub poll_timeout_ms: u32,
    /// The consumer reads nothing until the generator is done (so that a
    /// small ring fills and the fallback takes over).
    pub hold_consumer: bool,
}

impl RateOptions {
    pub fn from_config(c: &UpcallConfig) -> RateOptions {
        RateOptions {
            decisions: c.decisions,
            seconds: c.seconds,
            window: c.window,
            burst: c.burst,
            poll_timeout_ms: c.poll_timeout_ms,
            hold_consumer: false,
        }
    }
}

/// Sizes fixed for the benchmark's lifetime.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    pub ring_bytes: u32,
    pub xsk_ring: u32,
    pub socket_rcvbuf: u32,
}

/// The benchmark's namespaces; dropping it removes them.
struct Namespaces;

impl Namespaces {
    fn build() -> Result<Namespaces> {
        let made = Namespaces;
        for ns in [NS_TX, NS_RX] {
            ip(&["netns", "add", ns])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        let (mtx, mrx) = (mac_str(MAC_TX), mac_str(MAC_RX));
        let one = ["numtxqueues", "1", "numrxqueues", "1"];
        let mut args = vec!["link", "add", IF_TX, "address", &mtx, "netns", NS_TX];
        args.extend(one);
        args.extend(["type", "veth", "peer", "name", IF_RX, "address", &mrx, "netns", NS_RX]);
        args.extend(one);
        ip(&args)?;
        for (ns, dev, addr) in [(NS_TX, IF_TX, TX_IP), (NS_RX, IF_RX, RX_IP)] {
            ip(&["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", dev])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
        }
        // The socket sender's first datagrams need no ARP round.
        ip(&["-n", NS_TX, "neigh", "replace", &RX_IP.to_string(), "lladdr", &mrx, "dev", IF_TX, "nud", "permanent"])?;
        Ok(made)
    }
}

/// Removes the benchmark's namespaces (and a veth end a crash left in the
/// root namespace); what it removed.
pub fn remove_namespaces() -> Result<Vec<String>> {
    let mut removed = vec![];
    for ns in [NS_TX, NS_RX] {
        if FsPath::new("/run/netns").join(ns).exists() {
            ip(&["netns", "del", ns])?;
            removed.push(format!("netns {ns}"));
        }
    }
    for dev in [IF_TX, IF_RX] {
        if FsPath::new("/sys/class/net").join(dev).exists() {
            ip(&["link", "del", dev])?;
            removed.push(format!("link {dev}"));
        }
    }
    Ok(removed)
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        if let Err(e) = remove_namespaces() {
            eprintln!("xdp-upcall: removing {NS_TX} and {NS_RX} failed: {e:#}");
        }
    }
}

/// Attaches program `fd` in driver (native) mode to `ifindex` of the
/// calling thread's namespace.
fn attach_native(fd: RawFd, ifindex: u32) -> Result<()> {
    // SAFETY: the caller keeps the program open for the call.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    Xdp::new(fd)
        .attach(ifindex as i32, XdpFlags::DRV_MODE)
        .with_context(|| format!("attach XDP (driver mode) to ifindex {ifindex}"))
}

/// The learner's UDP socket on [`RX_IP`] (call in [`NS_RX`]).
fn learner_socket(rcvbuf: u32) -> Result<UdpSocket> {
    let s = UdpSocket::bind((RX_IP, wire::LEARNER_PORT)).context("bind the learner socket")?;
    s.set_nonblocking(true)?;
    let v = rcvbuf as libc::c_int;
    // SAFETY: a valid int option value on an open socket.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    ensure!(rc == 0, "SO_RCVBUFFORCE {rcvbuf}: {}", std::io::Error::last_os_error());
    Ok(s)
}

/// Pins the calling thread to `cpu` if the machine has more than one.
fn pin_to(cpu: usize) {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return;
    }
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET writes within it;
    // sched_setaffinity(0) applies to this thread only. A refusal (a
    // cpuset without that CPU) leaves the thread unpinned, which is fine.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// The benchmark's world: namespaces, the program attached, the learner's
/// three sources, the socket sender. Fields drop in order: mappings and
/// sockets, then the BPF object, then the namespaces, then the lock.
pub struct Upcall {
    ring: Ring,
    xsk: Xsk,
    learner: UdpSocket,
    sender: UdpSocket,
    obj: BpfObject,
    tx_ifindex: u32,
    template: Vec<u8>,
    _net: Namespaces,
    _lock: testbed::Lock,
}

impl Upcall {
    /// Builds it all (root); see the module docs.
    pub fn setup(s: &Setup) -> Result<Upcall> {
        let lock = testbed::lock_at(FsPath::new(LOCK_FILE), "another `innet bench xdp-upcall` (or its test)")?;
        let left = remove_namespaces()?;
        if !left.is_empty() {
            eprintln!("xdp-upcall: removed leftovers of an earlier run: {}", left.join(", "));
        }
        let net = Namespaces::build()?;
        let obj = BpfObject::load(OBJECT, &[("upcall_ring", s.ring_bytes)])?;
        let (rx_ifindex, tx_ifindex) = (testbed::ifindex(NS_RX, IF_RX)?, testbed::ifindex(NS_TX, IF_TX)?);
        let prog = obj.program_fd(RECEIVE_PROGRAM)?;
        in_netns(NS_RX, || attach_native(prog, rx_ifindex))?;
        let gen = obj.program_fd(GENERATOR_PROGRAM)?;
        in_netns(NS_TX, || attach_native(gen, tx_ifindex))?;
        let learner = in_netns(NS_RX, || learner_socket(s.socket_rcvbuf))?;
        let xsk = in_netns(NS_RX, || Xsk::bind(rx_ifindex, 0, s.xsk_ring))?;
        obj.map("upcall_xsks")?
            .update(&0u32.to_ne_bytes(), &(xsk.fd() as u32).to_ne_bytes(), MapFlags::ANY)
            .context("put the AF_XDP socket in upcall_xsks")?;
        let ring = Ring::map(obj.map("upcall_ring")?.as_fd().as_raw_fd(), s.ring_bytes as usize)?;
        let sender = in_netns(NS_TX, || {
            let u = UdpSocket::bind((TX_IP, SENDER_PORT)).context("bind the sender socket")?;
            u.connect((RX_IP, wire::LEARNER_PORT))?;
            Ok(u)
        })?;
        let src = Endpoint { mac: MAC_TX, ip: TX_IP, port: SENDER_PORT };
        let dst = Endpoint { mac: MAC_RX, ip: RX_IP, port: wire::LEARNER_PORT };
        let template = frame::udp_frame(src, dst, &decided(0, 0), 0);
        Ok(Upcall { ring, xsk, learner, sender, obj, tx_ifindex, template, _net: net, _lock: lock })
    }

    /// Sets the path, restarts the generator's instances at 0, empties
    /// the batch held on every CPU and throws away anything left unread.
    fn configure(&mut self, v: Variant) -> Result<()> {
        let mut cfg = [0u8; 16];
        cfg[0..4].copy_from_slice(&(v.path as u32).to_ne_bytes());
        cfg[4..8].copy_from_slice(&v.batch.to_ne_bytes());
        cfg[8..12].copy_from_slice(&v.wake_threshold.to_ne_bytes());
        self.obj.write("upcall_config", 0, &cfg)?;
        self.obj.write("upcall_gen", 0, &0u64.to_ne_bytes())?;
        let cpus = libbpf_rs::num_possible_cpus()?;
        let empty = vec![vec![0u8; BATCH_VALUE_LEN]; cpus];
        self.obj.map("upcall_batch")?.update_percpu(&0u32.to_ne_bytes(), &empty, MapFlags::ANY)?;
        let mut src = Sources { socket: &self.learner, ring: Some(&mut self.ring), xsk: Some(&mut self.xsk) };
        consumer::discard(&mut src);
        Ok(())
    }

    /// `upcall_counters`, summed over CPUs, by index.
    pub fn counters(&self) -> Result<[u64; COUNTERS.len()]> {
        let m = self.obj.map("upcall_counters")?;
        let mut out = [0u64; COUNTERS.len()];
        for (i, o) in out.iter_mut().enumerate() {
            let per_cpu = m.lookup_percpu(&(i as u32).to_ne_bytes(), MapFlags::ANY)?.unwrap_or_default();
            *o = per_cpu.iter().map(|v| u64::from_ne_bytes(v[..8].try_into().expect("8-byte counter"))).sum();
        }
        Ok(out)
    }

    /// Decisions held for a batch, on every CPU.
    pub fn batch_held(&self) -> Result<u64> {
        let per_cpu =
            self.obj.map("upcall_batch")?.lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)?.unwrap_or_default();
        Ok(per_cpu.iter().map(|v| u32::from_ne_bytes(v[..4].try_into().expect("4-byte count")) as u64).sum())
    }

    /// Runs the generator (this thread, pinned to CPU 0, in [`NS_TX`]) and,
    /// unless the path is `drop`, the consumer (a thread pinned to CPU 1)
    /// until the consumer has read everything or gave up waiting.
    fn drive(
        &mut self,
        plan: Plan,
        progress: &Progress,
        tally: &mut Tally,
    ) -> Result<(Option<Consumed>, GeneratorSpent)> {
        let Plan { variant: v, sender, pace, burst, consume: opts } = plan;
        let Upcall { ring, xsk, learner, sender: sock, obj, tx_ifindex, template, .. } = self;
        let gen = Generator { obj, tx_ifindex: *tx_ifindex, template, socket: sock, sender, burst };
        in_netns(NS_TX, || {
            std::thread::scope(|s| {
                let consumer = (v.path != Path::Drop).then(|| {
                    s.spawn(move || {
                        pin_to(1);
                        let mut src = Sources {
                            socket: learner,
                            ring: (v.path == Path::Ring).then_some(ring),
                            xsk: (v.path == Path::Xsk).then_some(xsk),
                        };
                        consumer::consume(&mut src, progress, tally, opts)
                    })
                });
                pin_to(0);
                let generated = gen.run(pace, progress);
                progress.generator_done.store(true, Ordering::SeqCst);
                let consumed = match consumer {
                    Some(h) => Some(h.join().unwrap_or_else(|_| bail!("the consumer thread panicked"))?),
                    None => None,
                };
                Ok((consumed, generated?))
            })
        })
    }

    /// One rate run of `v` sent by `sender`.
    pub fn rate(&mut self, v: Variant, sender: Sender, o: &RateOptions) -> Result<RateRun> {
        let n = o.decisions.div_ceil(o.burst as u64) * o.burst as u64;
        ensure!(n <= DECISIONS_MAX, "{n} decisions: at most {DECISIONS_MAX}");
        self.configure(v)?;
        let (ctr0, xsk0) = (self.counters()?, self.xsk.dropped()?);
        let window = if v.path == Path::Drop { u64::MAX } else { o.window };
        let progress = Progress::new(if o.hold_consumer { n } else { window });
        let mut tally = Tally::new(n, false);
        let opts = ConsumeOptions { timeout_ms: o.poll_timeout_ms as i32, hold_until_generated: o.hold_consumer };
        let (cpu0, start) = (CpuSnapshot::now(), Instant::now());
        let pace = Pace::Window { n, until: start + Duration::from_secs_f64(o.seconds) };
        let plan = Plan { variant: v, sender, pace, burst: o.burst, consume: opts };
        let (consumed, spent) = self.drive(plan, &progress, &mut tally)?;
        let (cpu1, generator_end) = (CpuSnapshot::now(), Instant::now());
        let (ctr1, xsk1) = (self.counters()?, self.xsk.dropped()?);
        let d = |name: &str| {
            let i = COUNTERS.iter().position(|c| *c == name).expect("a counter name");
            ctr1[i] - ctr0[i]
        };
        let generated = progress.generated.load(Ordering::SeqCst);
        let delivered = if v.path == Path::Drop { d("dropped") } else { tally.distinct };
        let held_at_end = self.batch_held()?;
        let end = consumed.as_ref().and_then(|c| c.last_delivery).unwrap_or(generator_end);
        let seconds = end.duration_since(start).as_secs_f64();
        let wakeups = consumed.as_ref().map_or(0, |c| c.wakeups);
        let [socket, ring, xsk] = tally.by_source;
        Ok(RateRun {
            variant: v.name(),
            sender: sender.name().into(),
            round: 0,
            count: Accounted {
                generated,
                delivered,
                duplicates: tally.duplicates,
                out_of_order: tally.out_of_order.iter().sum(),
                missing: generated.saturating_sub(delivered + held_at_end),
                held_at_end,
                malformed: tally.malformed + tally.beyond,
                fallback: if matches!(v.path, Path::Ring | Path::Xsk) { socket } else { 0 },
                ring_full: d("ring_full"),
                xsk_dropped: xsk1 - xsk0,
            },
            by_socket: socket,
            by_ring: ring,
            by_xsk: xsk,
            datagrams: tally.datagrams,
            ring_wakeups_forced: d("ring_wakeups_forced"),
            batch_packets: d("batch_packets"),
            batch_grow_failed: d("batch_grow_failed"),
            batch_overflow: d("batch_overflow"),
            stalled: spent.stalled,
            seconds,
            decisions_per_s: delivered as f64 / seconds.max(1e-9),
            generator_busy: spent.sending.as_secs_f64() / seconds.max(1e-9),
            wakeups,
            timeouts: consumed.as_ref().map_or(0, |c| c.timeouts),
            wakeups_per_1000: wakeups as f64 * 1e3 / delivered.max(1) as f64,
            cpu: cpu0.per_decision(&cpu1, &spent, consumed.as_ref(), delivered),
        })
    }

    /// One latency run of `v`: `samples` decisions (rounded up to whole
    /// batches), one every `gap`.
    pub fn latency(
        &mut self,
        v: Variant,
        sender: Sender,
        samples: u32,
        gap: Duration,
        poll_timeout_ms: u32,
    ) -> Result<LatencyRun> {
        ensure!(v.path != Path::Drop, "nothing reaches a consumer on the drop path");
        let n = (samples as u64).div_ceil(v.batch.max(1) as u64) * v.batch.max(1) as u64;
        self.configure(v)?;
        let progress = Progress::new(n);
        let mut tally = Tally::new(n, true);
        let opts = ConsumeOptions { timeout_ms: poll_timeout_ms as i32, hold_until_generated: false };
        let plan = Plan { variant: v, sender, pace: Pace::Gap { n, gap }, burst: 1, consume: opts };
        let (consumed, _) = self.drive(plan, &progress, &mut tally)?;
        let mut l = tally.latencies_ns.clone();
        l.sort_unstable();
        let wakeups = consumed.map_or(0, |c| c.wakeups);
        Ok(LatencyRun {
            variant: v.name(),
            sender: sender.name().into(),
            round: 0,
            sent: progress.generated.load(Ordering::SeqCst),
            received: tally.distinct,
            held_at_end: self.batch_held()?,
            duplicates: tally.duplicates,
            p50_us: percentile_us(&l, 0.5),
            p99_us: percentile_us(&l, 0.99),
            wakeups_per_1000: wakeups as f64 * 1e3 / tally.distinct.max(1) as f64,
            latencies_ns: l,
        })
    }
}

/// The `p` quantile of sorted ns, in us (NaN if empty).
fn percentile_us(sorted_ns: &[u64], p: f64) -> f64 {
    if sorted_ns.is_empty() {
        return f64::NAN;
    }
    sorted_ns[((sorted_ns.len() - 1) as f64 * p).round() as usize] as f64 / 1e3
}

/// Who sends, with what (borrowed from [`Upcall`] for one run).
struct Generator<'a> {
    obj: &'a BpfObject,
    tx_ifindex: u32,
    template: &'a [u8],
    socket: &'a UdpSocket,
    sender: Sender,
    burst: u32,
}

/// What the generator thread spent.
#[derive(Clone, Copy, Debug, Default)]
struct GeneratorSpent {
    /// Wall time inside send calls (the rest it waited for the window).
    sending: Duration,
    /// The kernel's own timing of the live frame runs, summed over frames.
    kernel_timed_ns: u64,
    /// The thread's CPU (`getrusage(RUSAGE_THREAD)`).
    user_ns: u64,
    sys_ns: u64,
    /// The window stopped draining: the run ended early.
    stalled: bool,
}

impl Generator<'_> {
    /// Sends decisions `first..first + k`; the kernel's timing, if it ran them.
    fn send(&self, first: u64, k: u32) -> Result<u64> {
        match self.sender {
            Sender::Kernel => {
                let per_frame = self.obj.test_run_live(GENERATOR_PROGRAM, self.template, self.tx_ifindex, k)?;
                Ok(per_frame.as_nanos() as u64 * k as u64)
            }
            Sender::Socket => send_datagrams(self.socket, first, k).map(|()| 0),
        }
    }

    /// Generates as `pace` says; `progress.generated` follows.
    fn run(&self, pace: Pace, progress: &Progress) -> Result<GeneratorSpent> {
        let mut spent = GeneratorSpent::default();
        let (user0, sys0) = consumer::rusage_ns(libc::RUSAGE_THREAD);
        match pace {
            Pace::Window { n, until } => {
                let mut next = 0u64;
                while next < n && Instant::now() < until {
                    let k = (self.burst as u64).min(n - next);
                    if !progress.wait_for_room(k) {
                        spent.stalled = true;
                        break;
                    }
                    let t = Instant::now();
                    spent.kernel_timed_ns += self.send(next, k as u32)?;
                    spent.sending += t.elapsed();
                    next += k;
                    progress.generated.store(next, Ordering::SeqCst);
                }
            }
            Pace::Gap { n, gap } => {
                for i in 0..n {
                    spent.kernel_timed_ns += self.send(i, 1)?;
                    progress.generated.store(i + 1, Ordering::SeqCst);
                    std::thread::sleep(gap);
                }
            }
        }
        let (user1, sys1) = consumer::rusage_ns(libc::RUSAGE_THREAD);
        (spent.user_ns, spent.sys_ns) = (user1 - user0, sys1 - sys0);
        Ok(spent)
    }
}

/// `sendmmsg` of DECIDED datagrams `first..first + k`, stamped now.
fn send_datagrams(socket: &UdpSocket, first: u64, k: u32) -> Result<()> {
    let stamp = consumer::monotonic_ns();
    let mut bufs: Vec<Vec<u8>> = (0..k as u64).map(|i| decided((first + i) as u32, stamp)).collect();
    // SAFETY: zeroed iovec and mmsghdr are valid; each iovec points into
    // its own buffer of `bufs`, which outlives the calls.
    let mut iov: Vec<libc::iovec> =
        bufs.iter_mut().map(|b| libc::iovec { iov_base: b.as_mut_ptr().cast(), iov_len: b.len() }).collect();
    let mut msgs: Vec<libc::mmsghdr> = iov
        .iter_mut()
        .map(|v| {
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_iov = v;
            m.msg_hdr.msg_iovlen = 1;
            m
        })
        .collect();
    let mut sent = 0usize;
    while sent < msgs.len() {
        // SAFETY: as above; the socket is connected.
        let n = unsafe { libc::sendmmsg(socket.as_raw_fd(), msgs[sent..].as_mut_ptr(), (msgs.len() - sent) as u32, 0) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            ensure!(e.kind() == std::io::ErrorKind::Interrupted, "sendmmsg: {e}");
            continue;
        }
        sent += n as usize;
    }
    Ok(())
}

/// A path's figures over the rounds: medians of the rates and costs,
/// sums of every loss, latency quantiles of all samples pooled.
#[derive(Clone, Debug, Serialize)]
pub struct PathSummary {
    pub variant: String,
    pub sender: String,
    pub rounds: usize,
    /// Rate runs that stalled ([`RateRun::stalled`]).
    pub stalled_runs: usize,
    pub decisions_per_s: f64,
    pub wakeups_per_1000: f64,
    pub cpu: CpuPerDecision,
    /// Every rate run's decisions summed, with the latency runs' held ones.
    #[serde(flatten)]
    pub count: Accounted,
    pub latency_samples: u64,
    pub latency_missing: u64,
    pub latency_p50_us: f64,
    pub latency_p99_us: f64,
    pub latency_wakeups_per_1000: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Summarizes `runs` and `latency` of one (variant, sender).
pub fn summarize(variant: &str, sender: &str, runs: &[&RateRun], latency: &[&LatencyRun]) -> PathSummary {
    let med = |f: fn(&RateRun) -> f64| median(runs.iter().map(|r| f(r)).collect());
    let mut pooled: Vec<u64> = latency.iter().flat_map(|l| l.latencies_ns.iter().copied()).collect();
    pooled.sort_unstable();
    PathSummary {
        variant: variant.into(),
        sender: sender.into(),
        rounds: runs.len(),
        stalled_runs: runs.iter().filter(|r| r.stalled).count(),
        decisions_per_s: med(|r| r.decisions_per_s),
        wakeups_per_1000: med(|r| r.wakeups_per_1000),
        cpu: CpuPerDecision {
            generator_user_ns: med(|r| r.cpu.generator_user_ns),
            generator_sys_ns: med(|r| r.cpu.generator_sys_ns),
            generator_kernel_timed_ns: med(|r| r.cpu.generator_kernel_timed_ns),
            consumer_user_ns: med(|r| r.cpu.consumer_user_ns),
            consumer_sys_ns: med(|r| r.cpu.consumer_sys_ns),
            machine_user_ns: med(|r| r.cpu.machine_user_ns),
            machine_kernel_ns: med(|r| r.cpu.machine_kernel_ns),
        },
        count: Accounted { held_at_end: latency.iter().map(|l| l.held_at_end).sum(), ..Accounted::default() }
            .add(&runs.iter().fold(Accounted::default(), |a, r| a.add(&r.count))),
        latency_samples: pooled.len() as u64,
        latency_missing: latency.iter().map(|l| l.sent.saturating_sub(l.received + l.held_at_end)).sum(),
        latency_p50_us: percentile_us(&pooled, 0.5),
        latency_p99_us: percentile_us(&pooled, 0.99),
        latency_wakeups_per_1000: median(latency.iter().map(|l| l.wakeups_per_1000).collect()),
    }
}

impl PathSummary {
    /// Every decision read once (or still held for a batch), none lost,
    /// none malformed, no run stalled (the `drop` path: every decision
    /// dropped by XDP).
    pub fn exact(&self) -> bool {
        let c = &self.count;
        c.duplicates == 0
            && c.missing == 0
            && c.malformed == 0
            && c.xsk_dropped == 0
            && self.latency_missing == 0
            && self.stalled_runs == 0
    }
}

/// Everything one `innet bench xdp-upcall` measured.
#[derive(Clone, Debug, Serialize)]
pub struct UpcallReport {
    pub config: UpcallConfig,
    pub load_average_start: String,
    pub load_average_end: String,
    /// Whether the generator and consumer ran on CPUs of their own.
    pub cpus: usize,
    pub paths: Vec<PathSummary>,
    pub runs: Vec<RateRun>,
    pub latency: Vec<LatencyRun>,
}

/// The whole benchmark: `rounds` rounds, in each every sender and every
/// path in turn (a rate run, then a latency run), so that the machine's
/// drift hits all paths alike. `say` hears one line per run.
pub fn run(cfg: &UpcallConfig, mut say: impl FnMut(&str)) -> Result<UpcallReport> {
    cfg.validate()?;
    let load_average_start = load_average();
    let mut up =
        Upcall::setup(&Setup { ring_bytes: cfg.ring_bytes, xsk_ring: cfg.xsk_ring, socket_rcvbuf: cfg.socket_rcvbuf })?;
    let opts = RateOptions::from_config(cfg);
    let gap = Duration::from_micros(cfg.latency_gap_us);
    let (mut runs, mut latency) = (vec![], vec![]);
    for round in 0..cfg.rounds {
        for &sender in &cfg.senders {
            for v in cfg.variants() {
                let mut r = up.rate(v, sender, &opts)?;
                r.round = round;
                say(&format!(
                    "round {round} {:<6} {:<9} {:>10.0} decisions/s  {:>6.1} wake-ups/1000  missing {} duplicates {} fallback {}{}",
                    r.sender,
                    r.variant,
                    r.decisions_per_s,
                    r.wakeups_per_1000,
                    r.count.missing,
                    r.count.duplicates,
                    r.count.fallback,
                    if r.stalled { "  STALLED" } else { "" }
                ));
                runs.push(r);
                if v.path == Path::Drop {
                    continue;
                }
                let mut l = up.latency(v, sender, cfg.latency_samples, gap, cfg.poll_timeout_ms)?;
                l.round = round;
                latency.push(l);
            }
        }
    }
    drop(up);
    let mut paths = vec![];
    for &sender in &cfg.senders {
        for v in cfg.variants() {
            let (name, s) = (v.name(), sender.name());
            let rs: Vec<&RateRun> = runs.iter().filter(|r| r.variant == name && r.sender == s).collect();
            let ls: Vec<&LatencyRun> = latency.iter().filter(|l| l.variant == name && l.sender == s).collect();
            paths.push(summarize(&name, s, &rs, &ls));
        }
    }
    Ok(UpcallReport {
        config: cfg.clone(),
        load_average_start,
        load_average_end: load_average(),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        paths,
        runs,
        latency,
    })
}

/// `Some(reason)` if the benchmark cannot run here (not root, or the
/// kernel refuses the program).
pub fn unavailable() -> Option<String> {
    let euid = crate::object::euid();
    if euid != 0 {
        return Some(format!(
            "not root (euid {euid}): BPF programs and network namespaces need CAP_BPF and CAP_NET_ADMIN"
        ));
    }
    match BpfObject::load(OBJECT, &[]) {
        Ok(_) => None,
        Err(e) => Some(format!("the kernel refused the BPF program: {e:#}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_object_holds_the_maps_the_header_describes() {
        crate::object::assert_maps(
            OBJECT,
            &[
                ("upcall_config", Some(1), Some(16)),
                ("upcall_counters", Some(COUNTERS.len() as u32), Some(8)),
                ("upcall_batch", Some(1), Some(BATCH_VALUE_LEN as u32)),
                ("upcall_gen", Some(1), Some(8)),
                ("upcall_xsks", Some(c::UPCALL_XSK_QUEUES as u32), Some(4)),
                ("upcall_ring", Some(RING_BYTES_DEFAULT), None),
            ],
        );
    }

    #[test]
    fn a_decision_carries_its_instance_and_stamp_where_the_generator_writes_them() {
        let d = decided(0x0102_0304, 0x1122_3344_5566_7788);
        assert_eq!(d.len(), wire::PACKET_LEN);
        assert_eq!(&d[c::PAXOS_OFF_INST as usize..][..4], &[1, 2, 3, 4]);
        assert_eq!(&d[c::PAXOS_OFF_VALUE as usize..][..8], &0x1122_3344_5566_7788u64.to_le_bytes());
        assert_eq!(PaxosMsg::decode(&d).map(|m| m.msgtype), Ok(MsgType::Decided));
    }

    #[test]
    fn the_paths_are_named_once_each_and_bad_flags_say_which() {
        let cfg = UpcallConfig::default();
        let names: Vec<String> = cfg.variants().iter().map(Variant::name).collect();
        assert_eq!(names, ["socket", "batch-8", "batch-32", "ring", "ring-t32", "af-xdp", "drop"]);
        cfg.validate().expect("the defaults are valid");
        let bad = |f: fn(&mut UpcallConfig)| {
            let mut c = UpcallConfig::default();
            f(&mut c);
            c.validate().unwrap_err().to_string()
        };
        assert!(bad(|c| c.batches = vec![24]).contains("divide --burst"), "24 does not divide 256");
        assert!(bad(|c| c.batches = vec![65]).contains("--batch 65"));
        assert!(bad(|c| c.ring_bytes = 5000).contains("--ring-bytes"));
        assert!(bad(|c| c.ring_thresholds = vec![2048]).contains("quarter of --window"));
        assert!(bad(|c| c.window = 100).contains("--window"));
        assert!(bad(|c| c.xsk_ring = 100).contains("--xsk-ring"));
        assert!(bad(|c| c.senders.clear()).contains("--senders"));
        assert!(bad(|c| c.latency_samples = u32::MAX).contains("--latency-samples"));
    }
}
