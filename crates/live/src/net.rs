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
//!   [`BATCH`] preallocated buffers (one set per loop, shared by its
//!   sockets); the node sees each datagram as a slice of that buffer. With
//!   `UDP_GRO` on, a segmented send arrives as one buffer with its segment
//!   size, and is split here into its datagrams.
//! * Sending: what a batch produces is copied into one reusable arena
//!   ([`TxBatch`]), ordered by destination (each destination's datagrams in
//!   the order they were queued), and leaves with `sendmmsg`. Consecutive
//!   datagrams of one size to one loopback destination leave as one
//!   segmented send (`UDP_SEGMENT`, GSO): one trip through the kernel's
//!   stack and one wake-up of the receiver for up to [`GSO_SEGMENTS`]
//!   datagrams. A receiver without `UDP_GRO` (a plain UDP peer) gets them
//!   as separate datagrams, split by the kernel. Other destinations
//!   (veth, where XDP programs must see one datagram per frame) get plain
//!   datagrams, unless the loop is told every device segments first
//!   ([`Ports::segment_everywhere`]: veths whose peers run driver-mode
//!   programs).
//! * Overflow: the kernel counts what it dropped at a full socket receive
//!   buffer (`SO_RXQ_OVFL`, reported with the next datagram received); that
//!   count is the node's `rx_overflow` (a dropped segmented send counts
//!   once). Receive buffers are raised to [`RCVBUF`] so a burst waits in the
//!   kernel rather than being dropped.
//!
//! No thread, no channel, no allocation per packet (a few per batch). The
//! system calls come from `nix` (safe wrappers; the crate forbids unsafe
//! code).

use std::io::{self, IoSlice, IoSliceMut};
use std::net::{SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::{AsFd, AsRawFd};
use std::time::Duration;

use innet_core::Time;
use nix::errno::Errno;
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use nix::sys::socket::{
    recvmmsg, sendmmsg, setsockopt, sockopt, ControlMessage, ControlMessageOwned, MsgFlags, MultiHeaders,
    SockaddrStorage,
};
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};

use crate::clock;

/// Datagrams per `recvmmsg` / `sendmmsg` call.
pub const BATCH: usize = 64;
/// Largest UDP payload (each receive buffer holds one).
pub const MAX_DATAGRAM: usize = 65536;
/// Socket receive buffer asked for (bytes).
pub const RCVBUF: usize = 8 << 20;
/// epoll token of the timer.
const TIMER: u64 = u64::MAX;
/// epoll token of a watched descriptor ([`Ports::watch`]).
const WATCHED: u64 = u64::MAX - 1;
/// Most datagrams one segmented send (UDP GSO) carries: the kernel's
/// `UDP_MAX_SEGMENTS` on older kernels (newer ones allow 128).
const GSO_SEGMENTS: usize = 64;
/// Most payload bytes one segmented send carries (below the 65507 bytes an
/// IPv4 datagram can hold).
const GSO_BYTES: usize = 65000;

/// One batch of received datagrams, in buffers allocated once.
pub struct RxBatch {
    buf: Vec<u8>,
    /// Per datagram: its sender and where it lies in `buf`. A coalesced
    /// receive (GRO) holds several datagrams in one buffer.
    dgrams: Vec<(SocketAddr, usize, usize)>,
}

impl Default for RxBatch {
    fn default() -> RxBatch {
        RxBatch::new()
    }
}

impl RxBatch {
    pub fn new() -> RxBatch {
        // Zeroed pages are mapped lazily: only the bytes datagrams fill are touched.
        RxBatch { buf: vec![0; BATCH * MAX_DATAGRAM], dgrams: Vec::with_capacity(BATCH * GSO_SEGMENTS) }
    }

    pub fn len(&self) -> usize {
        self.dgrams.len()
    }

    pub fn is_empty(&self) -> bool {
        self.dgrams.is_empty()
    }

    /// Datagram `k` of the batch: its sender and its bytes.
    pub fn get_mut(&mut self, k: usize) -> (SocketAddr, &mut [u8]) {
        let (from, start, end) = self.dgrams[k];
        (from, &mut self.buf[start..end])
    }
}

struct TxItem {
    port: usize,
    to: SocketAddr,
    start: usize,
    end: usize,
}

/// One message of a flush: `n` datagrams (consecutive in the flush's
/// order) from `port` to `to`; `seg` is the segment size of a segmented
/// send (UDP GSO), 0 for a single datagram.
struct TxMsg {
    port: usize,
    to: SocketAddr,
    seg: usize,
    first: usize,
    n: usize,
}

/// Datagrams waiting to be sent, copied into one reusable arena.
#[derive(Default)]
pub struct TxBatch {
    data: Vec<u8>,
    items: Vec<TxItem>,
    /// Seals datagrams to the addresses it covers (`--auth-key`).
    seal: Option<std::sync::Arc<crate::auth::PeerAuth>>,
}

impl TxBatch {
    pub fn new() -> TxBatch {
        TxBatch::sealed(None)
    }

    /// A batch whose datagrams to the addresses `seal` covers carry its
    /// MAC trailer ([`crate::auth`]).
    pub fn sealed(seal: Option<std::sync::Arc<crate::auth::PeerAuth>>) -> TxBatch {
        TxBatch { data: Vec::with_capacity(BATCH * 2048), items: Vec::with_capacity(BATCH), seal }
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
        if let Some(a) = self.seal.as_ref().filter(|a| a.covers(to)) {
            a.keys.seal_in_place(&mut self.data, start);
        }
        self.items.push(TxItem { port, to, start, end: self.data.len() });
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

/// A set of UDP sockets with one epoll set, a timer, and batched receive
/// and send (see the module documentation). Not `Send` (its message
/// headers hold raw pointers): build it on the thread that uses it.
pub struct Ports {
    sockets: Vec<UdpSocket>,
    epoll: Epoll,
    timer: TimerFd,
    /// The deadline the timer is armed for.
    armed: Option<Time>,
    events: Vec<EpollEvent>,
    /// Sockets reported readable and not yet found empty.
    ready: Vec<usize>,
    pending: Vec<bool>,
    // nix's recvmmsg leaves each header's address and control lengths as
    // the previous call's datagram set them (a datagram without control
    // messages shrinks the control buffer to nothing), so every call gets
    // headers afresh (a few allocations per batch).
    rx_hdr: MultiHeaders<SockaddrStorage>,
    /// Headers of plain sends and of segmented sends (these carry a
    /// `UDP_SEGMENT` control message each).
    tx_hdr: MultiHeaders<SockaddrStorage>,
    tx_gso_hdr: MultiHeaders<SockaddrStorage>,
    tx_addrs: Vec<Option<SockaddrStorage>>,
    /// A flush's datagrams, ordered by (socket, destination), and its messages.
    tx_order: Vec<usize>,
    tx_msgs: Vec<TxMsg>,
    /// Segmented sends to loopback destinations (off after the kernel refused one).
    gso: bool,
    /// Segmented sends to every destination, not only loopback ones
    /// ([`Ports::segment_everywhere`]).
    gso_any: bool,
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
        for (i, s) in sockets.iter().enumerate() {
            // A node may have been handed a socket with a read timeout; the
            // loop never blocks in a receive (MSG_DONTWAIT), sends may block
            // on a full send buffer (back-pressure, as before).
            s.set_read_timeout(None)?;
            raise_rcvbuf(s);
            // Best effort: without it overflow is not counted.
            let _ = setsockopt(s, sockopt::RxqOvfl, &1);
            // Best effort: segmented sends arrive whole (one buffer, split
            // here) rather than split by the kernel.
            let _ = setsockopt(s, sockopt::UdpGroSegment, &true);
            epoll.add(s.as_fd(), EpollEvent::new(EpollFlags::EPOLLIN, i as u64)).map_err(to_io)?;
        }
        let n = sockets.len();
        Ok(Ports {
            epoll,
            timer,
            armed: None,
            events: vec![EpollEvent::empty(); (n + 1).min(256)],
            ready: Vec::with_capacity(n),
            pending: vec![false; n],
            rx_hdr: rx_headers(),
            tx_hdr: MultiHeaders::preallocate(BATCH, None),
            tx_gso_hdr: MultiHeaders::preallocate(BATCH, Some(nix::cmsg_space!(u16))),
            tx_addrs: Vec::with_capacity(BATCH),
            tx_order: Vec::new(),
            tx_msgs: Vec::new(),
            gso: true,
            gso_any: false,
            drops: vec![0; n],
            sockets,
        })
    }

    /// Segmented sends to every destination, not only loopback ones: for
    /// a machine whose every device segments before its receiver's XDP
    /// program (a veth whose peer runs a driver-mode program has no
    /// software GSO, so the kernel cuts a segmented send into single
    /// frames before transmitting; a generic-mode program would see the
    /// whole send as one frame).
    pub fn segment_everywhere(&mut self) {
        self.gso_any = true;
    }

    /// Adds `fd` to what [`Ports::wait`] waits for (a feed of records:
    /// the wait returns when it polls readable; the caller reads it).
    pub fn watch(&mut self, fd: std::os::fd::BorrowedFd<'_>) -> io::Result<()> {
        self.epoll.add(fd, EpollEvent::new(EpollFlags::EPOLLIN, WATCHED)).map_err(to_io)
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
            } else if token == WATCHED {
                // The caller drains it after every wait.
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

    /// Receives up to [`BATCH`] messages from socket `port` into `rx`
    /// without blocking (a coalesced message holds several datagrams).
    /// Returns how many datagrams.
    pub fn recv(&mut self, port: usize, rx: &mut RxBatch) -> usize {
        rx.dgrams.clear();
        self.rx_hdr = rx_headers();
        let hdr = &mut self.rx_hdr;
        let fd = self.sockets[port].as_raw_fd();
        let mut messages = 0;
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
                for (i, m) in msgs.enumerate() {
                    messages += 1;
                    let mut seg = m.bytes;
                    if let Ok(cmsgs) = m.cmsgs() {
                        for c in cmsgs {
                            match c {
                                ControlMessageOwned::RxqOvfl(d) => drops = Some(d),
                                ControlMessageOwned::UdpGroSegments(s) if s > 0 => seg = s as usize,
                                _ => {}
                            }
                        }
                    }
                    match m.address.as_ref().and_then(std_addr) {
                        Some(from) if !m.flags.contains(MsgFlags::MSG_TRUNC) => {
                            let base = i * MAX_DATAGRAM;
                            let mut at = 0;
                            loop {
                                let end = (at + seg.max(1)).min(m.bytes);
                                rx.dgrams.push((from, base + at, base + end));
                                at = end;
                                if at >= m.bytes {
                                    break;
                                }
                            }
                        }
                        // Cannot happen for UDP (a buffer holds the largest
                        // datagram; every datagram has a sender): skipped.
                        _ => {}
                    }
                }
            }
        }
        if let Some(d) = drops {
            self.drops[port] = d;
        }
        if messages == BATCH && !self.pending[port] {
            // Possibly more waiting: offer it again without waiting.
            self.pending[port] = true;
            self.ready.push(port);
        }
        rx.dgrams.len()
    }

    /// Sends everything in `tx` and empties it; `done(port, ok)` is told
    /// the fate of every datagram. Datagrams to one destination keep their
    /// order; consecutive ones of equal size to a loopback destination
    /// leave as one segmented send (UDP GSO: one trip through the stack,
    /// split at the receiver).
    pub fn flush(&mut self, tx: &mut TxBatch, mut done: impl FnMut(usize, bool)) {
        let items = &tx.items;
        self.tx_order.clear();
        self.tx_order.extend(0..items.len());
        self.tx_order.sort_unstable_by_key(|&i| (items[i].port, items[i].to, i));
        self.plan_messages(items);
        let slices: Vec<IoSlice<'_>> =
            self.tx_order.iter().map(|&i| IoSlice::new(&tx.data[items[i].start..items[i].end])).collect();
        let mut m = 0;
        while m < self.tx_msgs.len() {
            let (port, seg) = (self.tx_msgs[m].port, self.tx_msgs[m].seg);
            let mut e = m;
            while e < self.tx_msgs.len() && e - m < BATCH && self.tx_msgs[e].port == port && self.tx_msgs[e].seg == seg
            {
                e += 1;
            }
            let run = &self.tx_msgs[m..e];
            let iovs: [&[IoSlice<'_>]; BATCH] =
                std::array::from_fn(|k| run.get(k).map_or(&[][..], |g| &slices[g.first..g.first + g.n]));
            self.tx_addrs.clear();
            self.tx_addrs.extend(run.iter().map(|g| Some(SockaddrStorage::from(g.to))));
            let fd = self.sockets[port].as_raw_fd();
            let seg16 = seg as u16;
            let r = if seg == 0 {
                sendmmsg(fd, &mut self.tx_hdr, &iovs[..run.len()], &self.tx_addrs, [], MsgFlags::empty())
                    .map(|res| res.count())
            } else {
                let cmsg = [ControlMessage::UdpGsoSegments(&seg16)];
                sendmmsg(fd, &mut self.tx_gso_hdr, &iovs[..run.len()], &self.tx_addrs, cmsg, MsgFlags::empty())
                    .map(|res| res.count())
            };
            match r {
                Ok(n) if n > 0 => {
                    for g in &run[..n] {
                        for _ in 0..g.n {
                            done(port, true);
                        }
                    }
                    m += n;
                }
                // The first message failed (or nothing was sent). A refused
                // segmented send goes again as single datagrams, and no
                // more are tried.
                _ if seg != 0 => {
                    self.gso = false;
                    let g = &run[0];
                    for s in &slices[g.first..g.first + g.n] {
                        done(port, self.sockets[port].send_to(s, g.to).is_ok());
                    }
                    m += 1;
                }
                _ => {
                    done(port, false);
                    m += 1;
                }
            }
        }
        drop(slices);
        tx.items.clear();
        tx.data.clear();
    }

    /// Cuts the flush's ordered datagrams into messages: a segmented send
    /// takes equal-sized datagrams to one loopback destination (the last
    /// may be shorter), at most [`GSO_SEGMENTS`] and [`GSO_BYTES`].
    fn plan_messages(&mut self, items: &[TxItem]) {
        self.tx_msgs.clear();
        let order = &self.tx_order;
        let mut k = 0;
        while k < order.len() {
            let it = &items[order[k]];
            let size = it.end - it.start;
            let (mut n, mut bytes) = (1, size);
            if self.gso && size > 0 && (self.gso_any || it.to.ip().is_loopback()) {
                while k + n < order.len() && n < GSO_SEGMENTS {
                    let next = &items[order[k + n]];
                    let s = next.end - next.start;
                    if next.port != it.port || next.to != it.to || s == 0 || s > size || bytes + s > GSO_BYTES {
                        break;
                    }
                    n += 1;
                    bytes += s;
                    if s < size {
                        break;
                    }
                }
            }
            self.tx_msgs.push(TxMsg { port: it.port, to: it.to, seg: if n > 1 { size } else { 0 }, first: k, n });
            k += n;
        }
    }

    /// Datagrams the kernel dropped at socket `port`'s full receive buffer
    /// (as of the last datagram received there).
    pub fn overflow(&self, port: usize) -> u64 {
        self.drops[port] as u64
    }
}

/// Receive headers with room for `SO_RXQ_OVFL` and `UDP_GRO` control messages.
fn rx_headers() -> MultiHeaders<SockaddrStorage> {
    MultiHeaders::preallocate(BATCH, Some(nix::cmsg_space!(u32, i32)))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ports() -> (Ports, SocketAddr) {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        let a = s.local_addr().unwrap();
        (Ports::new(vec![s]).unwrap(), a)
    }

    /// Receives until `want` datagrams arrived (or a second passed).
    fn receive(p: &mut Ports, want: usize) -> Vec<(SocketAddr, Vec<u8>)> {
        let mut rx = RxBatch::new();
        let mut got = vec![];
        let mut ready = vec![];
        let until = clock::now() + Duration::from_secs(1);
        while got.len() < want && clock::now() < until {
            p.wait(Some(until), Duration::from_millis(20));
            p.take_ready(&mut ready);
            for &i in &ready {
                p.recv(i, &mut rx);
                for k in 0..rx.len() {
                    let (from, b) = rx.get_mut(k);
                    got.push((from, b.to_vec()));
                }
            }
        }
        got
    }

    #[test]
    fn datagrams_to_one_destination_arrive_whole_and_in_order() {
        let (mut a, addr_a) = ports();
        let (mut b, addr_b) = ports();
        let (mut c, addr_c) = ports();
        let mut tx = TxBatch::new();
        let mut want_b = vec![];
        let mut want_c = vec![];
        // Equal sizes (coalesced), a shorter one (ends a segmented send),
        // different sizes, an empty datagram, interleaved destinations.
        for k in 0..200u32 {
            let len = match k % 50 {
                7 => 3,
                13 => 0,
                21 => 1400,
                _ => 40,
            };
            let mut d = vec![(k % 251) as u8; len];
            if len >= 4 {
                d[..4].copy_from_slice(&k.to_be_bytes());
            }
            if k % 3 == 0 {
                tx.push(0, addr_c, &d);
                want_c.push(d);
            } else {
                tx.push(0, addr_b, &d);
                want_b.push(d);
            }
        }
        let (mut ok, mut failed) = (0, 0);
        a.flush(&mut tx, |_, sent| if sent { ok += 1 } else { failed += 1 });
        assert_eq!((ok, failed), (200, 0));
        assert!(tx.is_empty());
        assert!(a.gso && a.tx_msgs.iter().any(|m| m.seg == 40 && m.n > 10), "segmented sends were used");
        let got_b = receive(&mut b, want_b.len());
        let got_c = receive(&mut c, want_c.len());
        assert!(got_b.iter().chain(&got_c).all(|(from, _)| *from == addr_a));
        assert_eq!(got_b.into_iter().map(|g| g.1).collect::<Vec<_>>(), want_b);
        assert_eq!(got_c.into_iter().map(|g| g.1).collect::<Vec<_>>(), want_c);
    }

    #[test]
    fn a_plain_udp_peer_gets_segmented_sends_as_separate_datagrams() {
        let (mut a, _) = ports();
        let plain = UdpSocket::bind("127.0.0.1:0").unwrap();
        plain.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
        let mut tx = TxBatch::new();
        for k in 0..30u8 {
            tx.push(0, plain.local_addr().unwrap(), &[k; 24]);
        }
        a.flush(&mut tx, |_, ok| assert!(ok));
        assert!(a.tx_msgs.iter().any(|m| m.n == 30));
        let mut buf = [0u8; 100];
        for k in 0..30u8 {
            let (n, _) = plain.recv_from(&mut buf).unwrap();
            assert_eq!(&buf[..n], &[k; 24]);
        }
    }
}
