//! The I/O core every live node's event loop owns: its UDP sockets, an epoll
//! set over them, a timer, and batched receive and send.
//!
//! * Waiting: `epoll_wait` on every socket of the node and a `timerfd`
//!   armed for the node's next timer (host tick or delayed packet). epoll's
//!   own timeout counts whole milliseconds, so it is only used for the whole
//!   milliseconds of a wait; the last sub-millisecond part is the timerfd's
//!   (nanosecond deadline). On these VMs a 1 ms epoll timeout wakes ~0.1 ms
//!   late, the timerfd within tens of microseconds.
//! * Receiving: a readable socket is drained with `recvmmsg` into
//!   [`BATCH`] preallocated buffers (one set per loop, shared by its sockets);
//!   the node sees each datagram as a slice of that buffer.
//! * Sending: what a batch produces is copied into one reusable arena
//!   ([`TxBatch`]) and leaves with `sendmmsg`, [`BATCH`] datagrams per call.
//! * Overflow: the kernel counts what it dropped at a full socket receive
//!   buffer (`SO_RXQ_OVFL`, reported with the next datagram received); that
//!   count is the node's `rx_overflow`. Receive buffers are raised to
//!   [`RCVBUF`] so a burst waits in the kernel rather than being dropped.
//!
//! No thread, no channel, no allocation per packet. The system calls come
//! from `nix` (safe wrappers); see docs/live.md for why not `quinn-udp`.

use std::io::{self, IoSlice, IoSliceMut};
use std::net::{SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::{AsFd, AsRawFd};
use std::time::Duration;

use innet_core::Time;
use nix::errno::Errno;
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use nix::sys::socket::{
    recvmmsg, sendmmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags, MultiHeaders, SockaddrStorage,
};
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};

use crate::clock;

/// Datagrams per `recvmmsg` / `sendmmsg` call.
pub(crate) const BATCH: usize = 64;
/// Largest UDP payload (each receive buffer holds one).
pub(crate) const MAX_DATAGRAM: usize = 65536;
/// Socket receive buffer asked for (bytes).
pub(crate) const RCVBUF: usize = 8 << 20;
/// epoll token of the timer.
const TIMER: u64 = u64::MAX;

/// One batch of received datagrams, in buffers allocated once.
pub(crate) struct RxBatch {
    buf: Vec<u8>,
    len: [usize; BATCH],
    from: [SocketAddr; BATCH],
    n: usize,
}

impl RxBatch {
    pub fn new() -> RxBatch {
        let unspecified = SocketAddr::from(([0, 0, 0, 0], 0));
        // Zeroed pages are mapped lazily: only the bytes datagrams fill are touched.
        RxBatch { buf: vec![0; BATCH * MAX_DATAGRAM], len: [0; BATCH], from: [unspecified; BATCH], n: 0 }
    }

    pub fn len(&self) -> usize {
        self.n
    }

    /// Datagram `k` of the batch: its sender and its bytes.
    pub fn get_mut(&mut self, k: usize) -> (SocketAddr, &mut [u8]) {
        let at = k * MAX_DATAGRAM;
        (self.from[k], &mut self.buf[at..at + self.len[k]])
    }
}

struct TxItem {
    port: usize,
    to: SocketAddr,
    start: usize,
    end: usize,
}

/// Datagrams waiting to be sent, copied into one reusable arena.
#[derive(Default)]
pub(crate) struct TxBatch {
    data: Vec<u8>,
    items: Vec<TxItem>,
}

impl TxBatch {
    pub fn new() -> TxBatch {
        TxBatch { data: Vec::with_capacity(BATCH * 2048), items: Vec::with_capacity(BATCH) }
    }

    /// Queues `bytes` to `to` from socket `port`.
    pub fn push(&mut self, port: usize, to: SocketAddr, bytes: &[u8]) {
        self.push_parts(port, to, &[], bytes);
    }

    /// Queues `head` followed by `bytes` as one datagram.
    pub fn push_parts(&mut self, port: usize, to: SocketAddr, head: &[u8], bytes: &[u8]) {
        let start = self.data.len();
        self.data.extend_from_slice(head);
        self.data.extend_from_slice(bytes);
        self.items.push(TxItem { port, to, start, end: self.data.len() });
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

pub(crate) struct Ports {
    sockets: Vec<UdpSocket>,
    epoll: Epoll,
    timer: TimerFd,
    /// The deadline the timer is armed for.
    armed: Option<Time>,
    events: Vec<EpollEvent>,
    /// Sockets reported readable and not yet found empty.
    ready: Vec<usize>,
    pending: Vec<bool>,
    // recvmmsg keeps each header's address length from the previous call,
    // so IPv4 and IPv6 sockets get headers of their own.
    rx_v4: MultiHeaders<SockaddrStorage>,
    rx_v6: MultiHeaders<SockaddrStorage>,
    v6: Vec<bool>,
    tx_hdr: MultiHeaders<SockaddrStorage>,
    /// Per socket: the kernel's drop count last reported (`SO_RXQ_OVFL`).
    drops: Vec<u32>,
}

fn to_io(e: Errno) -> io::Error {
    io::Error::from_raw_os_error(e as i32)
}

fn std_addr(a: &SockaddrStorage) -> Option<SocketAddr> {
    if let Some(v4) = a.as_sockaddr_in() {
        return Some(SocketAddr::V4(SocketAddrV4::from(*v4)));
    }
    a.as_sockaddr_in6().map(|v6| SocketAddr::V6(SocketAddrV6::from(*v6)))
}

impl Ports {
    pub fn new(sockets: Vec<UdpSocket>) -> io::Result<Ports> {
        let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC).map_err(to_io)?;
        let timer = TimerFd::new(ClockId::CLOCK_MONOTONIC, TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC)
            .map_err(to_io)?;
        epoll.add(timer.as_fd(), EpollEvent::new(EpollFlags::EPOLLIN, TIMER)).map_err(to_io)?;
        let mut v6 = vec![];
        for (i, s) in sockets.iter().enumerate() {
            // A node may have been handed a socket with a read timeout; the
            // loop never blocks in a receive (MSG_DONTWAIT), sends may block
            // on a full send buffer (back-pressure, as before).
            s.set_read_timeout(None)?;
            raise_rcvbuf(s);
            // Best effort: without it overflow is not counted.
            let _ = setsockopt(s, sockopt::RxqOvfl, &1);
            v6.push(s.local_addr()?.is_ipv6());
            epoll.add(s.as_fd(), EpollEvent::new(EpollFlags::EPOLLIN, i as u64)).map_err(to_io)?;
        }
        let n = sockets.len();
        let cmsg = || Some(nix::cmsg_space!(u32));
        Ok(Ports {
            epoll,
            timer,
            armed: None,
            events: vec![EpollEvent::empty(); (n + 1).min(256)],
            ready: Vec::with_capacity(n),
            pending: vec![false; n],
            rx_v4: MultiHeaders::preallocate(BATCH, cmsg()),
            rx_v6: MultiHeaders::preallocate(BATCH, cmsg()),
            v6,
            tx_hdr: MultiHeaders::preallocate(BATCH, None),
            drops: vec![0; n],
            sockets,
        })
    }

    /// Waits until a socket is readable, `deadline` has come or `max_wait`
    /// has passed, whichever is first. Returns at once if a socket is still
    /// known to hold datagrams.
    pub fn wait(&mut self, deadline: Option<Time>, max_wait: Duration) {
        if !self.ready.is_empty() {
            return;
        }
        let now = clock::now();
        let mut wait = max_wait;
        if let Some(d) = deadline {
            wait = wait.min(d.since(now));
            if wait.is_zero() {
                return;
            }
        }
        // Whole milliseconds by epoll's timeout, the last fraction by the timer.
        let timeout = match deadline {
            Some(d) if d.since(now) < Duration::from_millis(1) => {
                if self.armed != Some(d) {
                    let at = TimeSpec::from_duration(d.since(now));
                    if self.timer.set(Expiration::OneShot(at), TimerSetTimeFlags::empty()).is_ok() {
                        self.armed = Some(d);
                    }
                }
                EpollTimeout::try_from(max_wait).unwrap_or(EpollTimeout::NONE)
            }
            _ => EpollTimeout::try_from(wait.as_millis() as u64).unwrap_or(EpollTimeout::NONE),
        };
        // An error is EINTR: nothing is ready.
        let n = self.epoll.wait(&mut self.events, timeout).unwrap_or_default();
        for e in &self.events[..n] {
            let token = e.data();
            if token == TIMER {
                let _ = self.timer.wait(); // clears it (non-blocking)
                self.armed = None;
            } else if let Some(p) = self.pending.get_mut(token as usize) {
                if !*p {
                    *p = true;
                    self.ready.push(token as usize);
                }
            }
        }
    }

    /// The sockets to receive from now (each once); those that still hold
    /// datagrams after [`Ports::recv`] are offered again by the next wait.
    pub fn take_ready(&mut self, into: &mut Vec<usize>) {
        into.clear();
        into.append(&mut self.ready);
        for &p in into.iter() {
            self.pending[p] = false;
        }
    }

    /// Receives up to [`BATCH`] datagrams from socket `port` into `rx`
    /// without blocking. Returns how many.
    pub fn recv(&mut self, port: usize, rx: &mut RxBatch) -> usize {
        rx.n = 0;
        let hdr = if self.v6[port] { &mut self.rx_v6 } else { &mut self.rx_v4 };
        let fd = self.sockets[port].as_raw_fd();
        let mut got = 0;
        let mut truncated = 0;
        let mut drops = None;
        {
            // The headers, the slices and the buffers stay borrowed together
            // until the end of this block.
            let mut chunks = rx.buf.chunks_exact_mut(MAX_DATAGRAM);
            let mut iovs: [[IoSliceMut<'_>; 1]; BATCH] =
                std::array::from_fn(|_| [IoSliceMut::new(chunks.next().expect("BATCH buffers"))]);
            // Any error (EAGAIN: drained; an ICMP error an earlier send left
            // on the socket) ends this socket's turn; epoll reports it again
            // if it is still readable.
            if let Ok(msgs) = recvmmsg(fd, hdr, iovs.iter_mut(), MsgFlags::MSG_DONTWAIT, None) {
                for m in msgs {
                    if let Ok(cmsgs) = m.cmsgs() {
                        for c in cmsgs {
                            if let ControlMessageOwned::RxqOvfl(d) = c {
                                drops = Some(d);
                            }
                        }
                    }
                    match m.address.as_ref().and_then(std_addr) {
                        Some(from) if !m.flags.contains(MsgFlags::MSG_TRUNC) => {
                            rx.len[got] = m.bytes;
                            rx.from[got] = from;
                            got += 1;
                        }
                        // Cannot happen for UDP (a buffer holds the largest
                        // datagram; every datagram has a sender): skipped.
                        _ => truncated += 1,
                    }
                }
            }
        }
        rx.n = got;
        if let Some(d) = drops {
            self.drops[port] = d;
        }
        if got + truncated as usize == BATCH && !self.pending[port] {
            // Possibly more waiting: offer it again without waiting.
            self.pending[port] = true;
            self.ready.push(port);
        }
        got
    }

    /// Sends everything in `tx` (in order per socket) and empties it;
    /// `done(port, ok)` is told the fate of every datagram.
    pub fn flush(&mut self, tx: &mut TxBatch, mut done: impl FnMut(usize, bool)) {
        let mut i = 0;
        let items = &tx.items;
        while i < items.len() {
            let port = items[i].port;
            let mut j = i;
            while j < items.len() && j - i < BATCH && items[j].port == port {
                j += 1;
            }
            let run = &items[i..j];
            let slices: [[IoSlice<'_>; 1]; BATCH] = std::array::from_fn(|k| {
                let b = run.get(k).map_or(&[][..], |it| &tx.data[it.start..it.end]);
                [IoSlice::new(b)]
            });
            let addrs: [Option<SockaddrStorage>; BATCH] =
                std::array::from_fn(|k| run.get(k).map(|it| SockaddrStorage::from(it.to)));
            let fd = self.sockets[port].as_raw_fd();
            let r = sendmmsg(fd, &mut self.tx_hdr, &slices[..run.len()], &addrs[..run.len()], [], MsgFlags::empty())
                .map(|res| res.count());
            match r {
                Ok(n) if n > 0 => {
                    for _ in 0..n {
                        done(port, true);
                    }
                    i += n;
                }
                // The first datagram failed (or nothing was sent): count it, go on.
                _ => {
                    done(port, false);
                    i += 1;
                }
            }
        }
        tx.items.clear();
        tx.data.clear();
    }

    /// Datagrams the kernel dropped at socket `port`'s full receive buffer
    /// (as of the last datagram received there).
    pub fn overflow(&self, port: usize) -> u64 {
        self.drops[port] as u64
    }
}

/// Asks for [`RCVBUF`] bytes of receive buffer (beyond `rmem_max` if allowed).
fn raise_rcvbuf(s: &UdpSocket) {
    let have = nix::sys::socket::getsockopt(s, sockopt::RcvBuf).unwrap_or(0);
    if have >= RCVBUF {
        return;
    }
    let _ = setsockopt(s, sockopt::RcvBuf, &RCVBUF);
    if nix::sys::socket::getsockopt(s, sockopt::RcvBuf).unwrap_or(0) < RCVBUF {
        let _ = setsockopt(s, sockopt::RcvBufForce, &RCVBUF);
    }
}
