//! The learner's side of the benchmark: one thread that sleeps in
//! `epoll_wait` on every source a decision can come up by (the UDP socket,
//! always: today's path and every fallback; the ring buffer; the AF_XDP
//! socket), reads everything ready when it wakes, and checks each decision
//! in: once (a bitmap by instance), in order (per source: an instance
//! below the last one from the same source is out of order).
//!
//! The generator and the consumer share a [`Progress`]: the generator
//! keeps at most `window` decisions ahead of what the consumer has read
//! (a proposer's window), blocking on a condition variable the consumer
//! signals once half the window is free.

use std::net::UdpSocket;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{ensure, Result};

use innet_wire::paxos::{self as wire, MsgType};

use super::ring::Ring;
use super::xsk::Xsk;
use crate::frame;

/// Most instances a run checks (the bitmap's bound: 16 MiB).
pub const DECISIONS_MAX: u64 = 1 << 27;
/// Datagrams one `recvmmsg` reads.
const RECV_BATCH: usize = 64;
/// Largest datagram read: a full batch of decisions fits.
const DATAGRAM_MAX: usize = 4096;
const _: () = assert!(crate::layout::consts::UPCALL_BATCH_MAX as usize * wire::PACKET_LEN <= DATAGRAM_MAX);
/// How long the consumer waits for stragglers once the generator is done
/// and nothing more arrives.
pub const DRAIN_IDLE: Duration = Duration::from_millis(300);
/// How long the generator waits for room in a window that does not drain
/// before it gives up the run as stalled (decisions held where nothing
/// carries them up, e.g. a batch longer than half the window).
pub const STALL: Duration = Duration::from_millis(500);

/// Where a decision came up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Socket = 0,
    Ring = 1,
    Xsk = 2,
}

const SOURCES: usize = 3;

/// The consumer's account of one run.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    seen: Vec<u64>,
    /// Decisions read once (distinct instances).
    pub distinct: u64,
    pub duplicates: u64,
    /// Decisions read per source (duplicates included).
    pub by_source: [u64; SOURCES],
    /// Per source, decisions whose instance is below the last one read
    /// from the same source.
    pub out_of_order: [u64; SOURCES],
    last: [Option<u32>; SOURCES],
    /// Not a DECIDED message, or a datagram that is not a whole number of them.
    pub malformed: u64,
    /// An instance at or above the run's bound (never generated).
    pub beyond: u64,
    /// Datagrams read from the socket.
    pub datagrams: u64,
    /// With [`Tally::record_latency`]: now - the generator's stamp, per decision.
    pub latencies_ns: Vec<u64>,
    record_latency: bool,
}

impl Tally {
    /// A tally for instances `0..bound`.
    pub fn new(bound: u64, record_latency: bool) -> Tally {
        assert!(bound <= DECISIONS_MAX, "{bound} instances above DECISIONS_MAX");
        Tally { seen: vec![0; bound.div_ceil(64) as usize], record_latency, ..Tally::default() }
    }

    fn bound(&self) -> u64 {
        self.seen.len() as u64 * 64
    }

    /// One decision payload (a DECIDED message) from `source`, read at
    /// `now_ns` (CLOCK_MONOTONIC).
    fn decision(&mut self, source: Source, payload: &[u8], now_ns: u64) {
        let Ok(MsgType::Decided) = wire::validate(payload) else {
            self.malformed += 1;
            return;
        };
        let inst = u32::from_be_bytes(payload[wire::offset::INST..][..4].try_into().expect("4 bytes"));
        let stamp = u64::from_le_bytes(payload[wire::offset::VALUE..][..8].try_into().expect("8 bytes"));
        let s = source as usize;
        self.by_source[s] += 1;
        if self.last[s].is_some_and(|l| inst < l) {
            self.out_of_order[s] += 1;
        }
        self.last[s] = Some(inst);
        if inst as u64 >= self.bound() {
            self.beyond += 1;
            return;
        }
        let (word, bit) = ((inst / 64) as usize, 1u64 << (inst % 64));
        if self.seen[word] & bit != 0 {
            self.duplicates += 1;
            return;
        }
        self.seen[word] |= bit;
        self.distinct += 1;
        if self.record_latency {
            self.latencies_ns.push(now_ns.saturating_sub(stamp));
        }
    }

    /// A datagram: one or more DECIDED messages back to back.
    fn datagram(&mut self, payload: &[u8], now_ns: u64) {
        self.datagrams += 1;
        if payload.is_empty() || payload.len() % wire::PACKET_LEN != 0 {
            self.malformed += 1;
            return;
        }
        for d in payload.chunks_exact(wire::PACKET_LEN) {
            self.decision(Source::Socket, d, now_ns);
        }
    }

    /// Instances below `n` never read.
    pub fn missing(&self, n: u64) -> u64 {
        n.min(self.bound()) - self.distinct.min(n)
    }
}

/// What generator and consumer share (see the module docs).
#[derive(Debug)]
pub struct Progress {
    pub generated: AtomicU64,
    pub delivered: AtomicU64,
    pub generator_done: AtomicBool,
    waiting: AtomicBool,
    lock: Mutex<()>,
    room: Condvar,
    window: u64,
}

impl Progress {
    pub fn new(window: u64) -> Progress {
        Progress {
            generated: AtomicU64::new(0),
            delivered: AtomicU64::new(0),
            generator_done: AtomicBool::new(false),
            waiting: AtomicBool::new(false),
            lock: Mutex::new(()),
            room: Condvar::new(),
            window,
        }
    }

    fn in_flight(&self) -> u64 {
        self.generated.load(Ordering::SeqCst).saturating_sub(self.delivered.load(Ordering::SeqCst))
    }

    /// Blocks the generator until `burst` more decisions fit in the window
    /// (once it is full, until half of it is free); `false` if the
    /// consumer read nothing for [`STALL`].
    pub fn wait_for_room(&self, burst: u64) -> bool {
        if self.in_flight() + burst <= self.window {
            return true;
        }
        let mut g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.waiting.store(true, Ordering::SeqCst);
        let (mut seen, mut since) = (self.delivered.load(Ordering::SeqCst), std::time::Instant::now());
        while self.in_flight() > self.window / 2 {
            g = self.room.wait_timeout(g, Duration::from_millis(20)).unwrap_or_else(|e| e.into_inner()).0;
            let now = self.delivered.load(Ordering::SeqCst);
            if now != seen {
                (seen, since) = (now, std::time::Instant::now());
            } else if since.elapsed() > STALL {
                break;
            }
        }
        self.waiting.store(false, Ordering::SeqCst);
        self.in_flight() <= self.window / 2
    }

    /// The consumer has read `distinct` decisions.
    fn delivered(&self, distinct: u64) {
        self.delivered.store(distinct, Ordering::SeqCst);
        if self.waiting.load(Ordering::SeqCst) && self.in_flight() <= self.window / 2 {
            let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.room.notify_one();
        }
    }

    fn finished(&self, distinct: u64) -> bool {
        self.generator_done.load(Ordering::SeqCst) && distinct >= self.generated.load(Ordering::SeqCst)
    }
}

/// Where the consumer reads.
pub struct Sources<'a> {
    pub socket: &'a UdpSocket,
    pub ring: Option<&'a mut Ring>,
    pub xsk: Option<&'a mut Xsk>,
}

/// How the consumer waits.
#[derive(Clone, Copy, Debug)]
pub struct ConsumeOptions {
    /// `epoll_wait`'s timeout: how long decisions below a ring's wake-up
    /// threshold wait at most.
    pub timeout_ms: i32,
    /// Read nothing until the generator is done (tests: the ring fills).
    pub hold_until_generated: bool,
}

/// The consumer's side of a run besides its [`Tally`].
#[derive(Clone, Debug, Default)]
pub struct Consumed {
    /// `epoll_wait` returns with something ready.
    pub wakeups: u64,
    /// `epoll_wait` returns after its timeout.
    pub timeouts: u64,
    /// When the last new decision was read.
    pub last_delivery: Option<Instant>,
    /// The consumer thread's CPU time (`getrusage(RUSAGE_THREAD)`).
    pub user_ns: u64,
    pub sys_ns: u64,
}

/// CLOCK_MONOTONIC in ns: the clock `bpf_ktime_get_ns` reads.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `(user, system)` CPU ns of `who` (`RUSAGE_SELF`, `RUSAGE_THREAD`).
pub fn rusage_ns(who: libc::c_int) -> (u64, u64) {
    // SAFETY: getrusage fills a plain struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(who, &mut ru) };
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    (ns(ru.ru_utime), ns(ru.ru_stime))
}

struct Epoll(RawFd);

impl Epoll {
    fn new(fds: &[(RawFd, Source)]) -> Result<Epoll> {
        // SAFETY: epoll_create1 has no memory preconditions.
        let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        ensure!(ep >= 0, "epoll_create1: {}", std::io::Error::last_os_error());
        let ep = Epoll(ep);
        for &(fd, source) in fds {
            let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: source as u64 };
            // SAFETY: valid fds and a valid event.
            let rc = unsafe { libc::epoll_ctl(ep.0, libc::EPOLL_CTL_ADD, fd, &mut ev) };
            ensure!(rc == 0, "epoll_ctl add {source:?}: {}", std::io::Error::last_os_error());
        }
        Ok(ep)
    }
}

impl Drop for Epoll {
    fn drop(&mut self) {
        // SAFETY: closing the epoll fd we created.
        unsafe { libc::close(self.0) };
    }
}

/// Reads every datagram waiting on `socket` into `tally`; how many.
fn drain_socket(socket: RawFd, bufs: &mut [[u8; DATAGRAM_MAX]], tally: &mut Tally, now_ns: u64) -> u64 {
    let mut total = 0;
    loop {
        // SAFETY: zeroed iovec and mmsghdr arrays are valid; each iovec
        // points into its own buffer of `bufs`, which outlives the call.
        let mut iov: [libc::iovec; RECV_BATCH] = unsafe { std::mem::zeroed() };
        let mut msgs: [libc::mmsghdr; RECV_BATCH] = unsafe { std::mem::zeroed() };
        for i in 0..RECV_BATCH {
            iov[i] = libc::iovec { iov_base: bufs[i].as_mut_ptr().cast(), iov_len: DATAGRAM_MAX };
            msgs[i].msg_hdr.msg_iov = &mut iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        // SAFETY: as above.
        let n = unsafe {
            libc::recvmmsg(socket, msgs.as_mut_ptr(), RECV_BATCH as u32, libc::MSG_DONTWAIT, std::ptr::null_mut())
        };
        if n <= 0 {
            return total;
        }
        for i in 0..n as usize {
            tally.datagram(&bufs[i][..msgs[i].msg_len as usize], now_ns);
        }
        total += n as u64;
        if (n as usize) < RECV_BATCH {
            return total;
        }
    }
}

/// Reads every frame waiting on the AF_XDP socket into `tally`.
fn drain_xsk(xsk: &mut Xsk, tally: &mut Tally, now_ns: u64) -> u64 {
    xsk.drain(|f| match frame::parse(f) {
        Some((_, _, payload, _)) if payload.len() == wire::PACKET_LEN => tally.decision(Source::Xsk, payload, now_ns),
        _ => tally.malformed += 1,
    })
}

/// Reads decisions until the generator is done and every decision it
/// made was read, or nothing more came for [`DRAIN_IDLE`].
pub fn consume(src: &mut Sources, progress: &Progress, tally: &mut Tally, opts: ConsumeOptions) -> Result<Consumed> {
    let mut fds = vec![(src.socket.as_raw_fd(), Source::Socket)];
    fds.extend(src.ring.as_ref().map(|r| (r.fd, Source::Ring)));
    fds.extend(src.xsk.as_ref().map(|x| (x.fd(), Source::Xsk)));
    let ep = Epoll::new(&fds)?;
    let mut bufs = vec![[0u8; DATAGRAM_MAX]; RECV_BATCH];
    let mut events = [libc::epoll_event { events: 0, u64: 0 }; 4];
    let mut out = Consumed::default();
    let (user0, sys0) = rusage_ns(libc::RUSAGE_THREAD);
    if opts.hold_until_generated {
        while !progress.generator_done.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let mut idle_since = Instant::now();
    loop {
        // SAFETY: `events` has room for its length.
        let n = unsafe { libc::epoll_wait(ep.0, events.as_mut_ptr(), events.len() as i32, opts.timeout_ms) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            ensure!(e.kind() == std::io::ErrorKind::Interrupted, "epoll_wait: {e}");
            continue;
        }
        let ready: Vec<u64> = if n == 0 {
            out.timeouts += 1;
            fds.iter().map(|(_, s)| *s as u64).collect()
        } else {
            out.wakeups += 1;
            events[..n as usize].iter().map(|e| e.u64).collect()
        };
        let before = tally.distinct;
        let now_ns = if tally.record_latency { monotonic_ns() } else { 0 };
        for s in ready {
            if s == Source::Socket as u64 {
                drain_socket(src.socket.as_raw_fd(), &mut bufs, tally, now_ns);
            } else if s == Source::Ring as u64 {
                if let Some(r) = src.ring.as_mut() {
                    r.drain(|rec| tally.decision(Source::Ring, rec, now_ns));
                }
            } else if let Some(x) = src.xsk.as_mut() {
                drain_xsk(x, tally, now_ns);
            }
        }
        if tally.distinct > before {
            out.last_delivery = Some(Instant::now());
            idle_since = Instant::now();
            progress.delivered(tally.distinct);
        }
        if progress.finished(tally.distinct) {
            break;
        }
        if progress.generator_done.load(Ordering::SeqCst) && idle_since.elapsed() > DRAIN_IDLE {
            break;
        }
        if !progress.generator_done.load(Ordering::SeqCst) {
            idle_since = Instant::now();
        }
    }
    let (user1, sys1) = rusage_ns(libc::RUSAGE_THREAD);
    (out.user_ns, out.sys_ns) = (user1 - user0, sys1 - sys0);
    Ok(out)
}

/// Throws away whatever waits on the sources (between runs).
pub fn discard(src: &mut Sources) {
    let mut t = Tally::new(0, false);
    let mut bufs = vec![[0u8; DATAGRAM_MAX]; RECV_BATCH];
    drain_socket(src.socket.as_raw_fd(), &mut bufs, &mut t, 0);
    if let Some(r) = src.ring.as_mut() {
        r.drain(|_| ());
    }
    if let Some(x) = src.xsk.as_mut() {
        x.drain(|_| ());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decided(inst: u32) -> Vec<u8> {
        let mut m = wire::PaxosMsg::new(MsgType::Decided);
        m.inst = inst;
        m.value = wire::Value::new(&[0; 32]).expect("32 bytes fit");
        m.encode()
    }

    #[test]
    fn the_tally_counts_each_instance_once_and_inversions_per_source() {
        let mut t = Tally::new(128, false);
        for i in [0, 1, 2] {
            t.decision(Source::Ring, &decided(i), 0);
        }
        t.decision(Source::Socket, &decided(5), 0);
        t.decision(Source::Ring, &decided(4), 0);
        t.decision(Source::Ring, &decided(3), 0);
        t.decision(Source::Ring, &decided(3), 0);
        assert_eq!((t.distinct, t.duplicates), (6, 1));
        assert_eq!(t.out_of_order, [0, 1, 0], "4 -> 3 on the ring; the socket's 5 before the ring's 4 is no inversion");
        assert_eq!(t.missing(8), 2, "6 and 7");
        t.decision(Source::Socket, &decided(1000), 0);
        assert_eq!(t.beyond, 1);
    }

    #[test]
    fn a_datagram_carries_whole_decisions_or_counts_as_malformed() {
        let mut t = Tally::new(64, false);
        let mut batch = decided(0);
        batch.extend(decided(1));
        t.datagram(&batch, 0);
        t.datagram(&batch[..50], 0);
        let mut other = decided(2);
        other[1] = MsgType::Request as u8;
        t.datagram(&other, 0);
        assert_eq!((t.distinct, t.malformed, t.datagrams), (2, 2, 3));
    }
}
