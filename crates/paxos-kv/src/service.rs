//! The key-value service's replica side (issue 24 item 1): a replica in a
//! process of its own answers network clients ([`crate::KvNetClient`],
//! `innet kv`) on its client port, UDP for messages that fit one datagram
//! and TCP on the same port number for larger ones
//! (`innet_wire::kv`).
//!
//! A request goes: client port -> [`Front`] (a proposer on a socket of its
//! own, outside the deployment's named proposers) which splits the command
//! into pieces ([`crate::fragment`]) and submits them back to back, at most
//! [`SUBMIT_WINDOW`] in flight -> consensus -> every replica applies the
//! command when its last piece is delivered, through the client table
//! ([`crate::clients`]) -> the replica that holds a waiter for
//! `(client, seq)` answers on the route the request came by. Any replica
//! that applies a command (or a repeat of it) answers a client waiting on
//! it, so a client that resent its request to a second replica gets its
//! answer as soon as either copy is applied.
//!
//! The front end learns that its values were chosen from its own replica's
//! deliveries ([`Replica::watch`]): acceptors send votes only to the
//! deployment's named proposers (and, in the switch deployment, to a
//! request's origin), so this works in every deployment. Likewise it
//! learns that the backup coordinator took over (CAANS section 3.1) from
//! the TAKEOVER the backup sends the learners too: the replica passes it
//! on ([`FrontEvent::Takeover`]) and the front end's proposer sends to the
//! backup from then on, resubmitting what is pending, as the library's
//! proposers do.
//!
//! Bounds: [`WAITERS_MAX`] requests waiting for their answer (older than
//! [`WAITER_TTL`] are dropped when room is needed; then BUSY),
//! [`QUEUE_PIECES_MAX`] pieces waiting to be submitted (beyond: BUSY),
//! [`TCP_CONNECTIONS_MAX`] TCP connections (beyond: closed at once).

use std::collections::{HashMap, VecDeque};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use innet_core::{Host, Outbox, Time};
use innet_paxos::envelope::{Envelope, REQUEST_MAX};
use innet_paxos::Proposer;
use innet_wire::kv::{self, Body, DecodeError, Header, Message, Reply};
use innet_wire::paxos::{MsgType, PaxosMsg, Value};

use crate::fragment::{self, PIECES_MAX};
use crate::replica::NetAnswer;

/// Pieces a replica's proposer has in flight: well below the learners'
/// duplicate window (`innet_paxos::learner::SEEN_AHEAD_MAX`).
pub const SUBMIT_WINDOW: usize = 256;
const _: () = assert!(SUBMIT_WINDOW < innet_paxos::learner::SEEN_AHEAD_MAX);
/// Pieces waiting to be submitted: four commands of the widest kind.
pub const QUEUE_PIECES_MAX: usize = 4 * PIECES_MAX;
/// Requests waiting for their answer.
pub const WAITERS_MAX: usize = 4096;
/// A waiter older than this makes room for a new one.
pub const WAITER_TTL: Duration = Duration::from_secs(60);
/// Open TCP client connections.
pub const TCP_CONNECTIONS_MAX: usize = 64;
/// A TCP connection idle (or a reply not come) this long is closed.
pub const TCP_IDLE: Duration = Duration::from_secs(60);
/// How often the front end looks for commands to submit.
pub const POLL: Duration = Duration::from_millis(1);

/// What the client port saw, by reason.
#[derive(Debug, Default)]
pub struct ServiceCounters {
    pub requests_udp: AtomicU64,
    pub requests_tcp: AtomicU64,
    /// Malformed messages dropped, by [`DecodeError`] (index order).
    pub malformed: [AtomicU64; DecodeError::ALL.len()],
    /// Replies where a request belongs (dropped).
    pub unexpected: AtomicU64,
    pub busy: AtomicU64,
    pub replies: AtomicU64,
    pub tcp_refused: AtomicU64,
}

impl ServiceCounters {
    pub fn malformed_total(&self) -> u64 {
        self.malformed.iter().map(|c| c.load(Ordering::Relaxed)).sum::<u64>() + self.unexpected.load(Ordering::Relaxed)
    }
    fn bump(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }
}

/// Where an answer goes.
enum Route {
    Udp(SocketAddr),
    Tcp(Sender<Vec<u8>>),
}

/// Requests waiting for their answer, by `(client, seq)`.
#[derive(Default)]
struct Waiters {
    map: HashMap<(u64, u64), (Route, Instant)>,
}

/// The replica side of the service, shared by the client port's threads
/// and the replica's host.
pub struct Service {
    udp: UdpSocket,
    waiters: Mutex<Waiters>,
    commands: Mutex<Sender<Vec<u8>>>,
    /// Pieces queued at the front end and not yet submitted.
    queued: Arc<AtomicUsize>,
    pub counters: ServiceCounters,
}

impl Service {
    /// The client port's address.
    pub fn addr(&self) -> io::Result<SocketAddr> {
        let a = self.udp.local_addr()?;
        debug_assert!(a.port() != 0, "the client port is bound");
        Ok(a)
    }

    /// One received message; answers BUSY when there is no room.
    fn on_message(&self, bytes: &[u8], route: Route) {
        let m = match Message::decode(bytes) {
            Ok(m) => m,
            Err(e) => return ServiceCounters::bump(&self.counters.malformed[e.index()]),
        };
        if !matches!(m.body, Body::Request(_)) {
            return ServiceCounters::bump(&self.counters.unexpected);
        }
        let body = &bytes[kv::HEADER_LEN..];
        let mut command = Vec::with_capacity(16 + body.len());
        command.extend_from_slice(&m.client.to_be_bytes());
        command.extend_from_slice(&m.seq.to_be_bytes());
        command.extend_from_slice(body);
        let pieces = fragment::pieces(command.len());
        let room = self.queued.load(Ordering::Relaxed) + pieces <= QUEUE_PIECES_MAX;
        let route = match self.wait(m.client, m.seq, route) {
            Ok(()) if room => {
                self.queued.fetch_add(pieces, Ordering::Relaxed);
                let _ = self.commands.lock().unwrap_or_else(|e| e.into_inner()).send(command);
                return;
            }
            Ok(()) => {
                self.waiters.lock().unwrap_or_else(|e| e.into_inner()).map.remove(&(m.client, m.seq)).map(|w| w.0)
            }
            Err(route) => Some(route),
        };
        ServiceCounters::bump(&self.counters.busy);
        if let Some(r) = route {
            self.send(r, m.client, m.seq, Reply::Busy);
        }
    }

    /// Registers a waiter; gives the route back if there is no room.
    fn wait(&self, client: u64, seq: u64, route: Route) -> Result<(), Route> {
        let mut w = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
        if w.map.len() >= WAITERS_MAX && !w.map.contains_key(&(client, seq)) {
            let now = Instant::now();
            w.map.retain(|_, (_, at)| now.duration_since(*at) < WAITER_TTL);
            if w.map.len() >= WAITERS_MAX {
                return Err(route);
            }
        }
        w.map.insert((client, seq), (route, Instant::now()));
        Ok(())
    }

    /// Answers the waiter of each applied command, if this replica has one.
    pub fn answer(&self, answers: Vec<NetAnswer>) {
        for a in answers {
            let mut w = self.waiters.lock().unwrap_or_else(|e| e.into_inner());
            let route = w.map.remove(&(a.client, a.seq));
            debug_assert!(w.map.len() < WAITERS_MAX && !w.map.contains_key(&(a.client, a.seq)));
            drop(w);
            if let Some((r, _)) = route {
                self.send(r, a.client, a.seq, a.reply);
            }
        }
    }

    fn send(&self, route: Route, client: u64, seq: u64, reply: Reply) {
        let Some(bytes) = Message::reply(client, seq, reply.clone()).encode() else { return };
        ServiceCounters::bump(&self.counters.replies);
        match route {
            Route::Udp(to) if bytes.len() > kv::DATAGRAM_MAX => {
                let len = match reply {
                    Reply::Value(v) => v.len() as u32,
                    _ => bytes.len() as u32,
                };
                let b = Message::reply(client, seq, Reply::TooLarge { len }).encode().expect("small");
                let _ = self.udp.send_to(&b, to);
            }
            Route::Udp(to) => {
                let _ = self.udp.send_to(&bytes, to);
            }
            Route::Tcp(tx) => {
                let _ = tx.send(bytes);
            }
        }
    }
}

/// The front end: a proposer fed with commands, learning its values
/// through the replica (see the module doc).
pub struct Front {
    proposer: Proposer,
    commands: Receiver<Vec<u8>>,
    events: Receiver<FrontEvent>,
    queue: VecDeque<Vec<u8>>,
    queued: Arc<AtomicUsize>,
    next_poll: Time,
}

impl Front {
    fn pump(&mut self, now: Time, out: &mut Outbox) {
        while let Ok(event) = self.events.try_recv() {
            match event {
                FrontEvent::Decided(instance, value) => {
                    // A value of this proposer id it never submitted: an
                    // earlier life of the replica's (a directory made
                    // anew reuses the id), decided late.
                    if let Some(e) = Envelope::from_value(&value) {
                        if e.request >= self.proposer.next_request() {
                            self.start_above(e.request);
                        }
                    }
                    let mut m = PaxosMsg::new(MsgType::Decided);
                    m.inst = instance;
                    m.value = value;
                    self.proposer.on_packet(now, &m.encode(), out);
                }
                FrontEvent::Takeover(rnd) => {
                    let mut t = PaxosMsg::new(MsgType::Takeover);
                    t.rnd = rnd;
                    self.proposer.on_packet(now, &t.encode(), out);
                }
                FrontEvent::UsedUpTo(request) => self.start_above(request),
            }
        }
        self.proposer.take_committed();
        while let Ok(c) = self.commands.try_recv() {
            // One command's pieces back to back: consecutive request ids.
            self.queue.extend(fragment::split(&c));
        }
        while self.proposer.outstanding() < SUBMIT_WINDOW {
            let Some(p) = self.queue.pop_front() else { break };
            self.queued.fetch_sub(1, Ordering::Relaxed);
            if self.proposer.submit(now, &p, out).is_none() {
                // Request ids used up: the replica must restart (a new
                // incarnation numbers from 1 again).
                break;
            }
        }
    }
}

impl Front {
    /// Numbers the next values above `request` and the
    /// [`SUBMIT_WINDOW`] an earlier life of this proposer id may still
    /// have had in flight, so that no learner takes them for its
    /// duplicates. Values already submitted below stay as they are: if
    /// one is taken for a duplicate its client's resend gets a new id.
    fn start_above(&mut self, request: u32) {
        let first = request.saturating_add(1 + SUBMIT_WINDOW as u32);
        if first > self.proposer.next_request() && first < REQUEST_MAX {
            self.proposer.set_next_request(first);
        }
        debug_assert!(self.proposer.next_request() > request || first >= REQUEST_MAX);
    }
}

impl Host for Front {
    fn on_packet(&mut self, now: Time, p: &[u8], out: &mut Outbox) {
        self.proposer.on_packet(now, p, out);
        self.pump(now, out);
    }
    fn on_tick(&mut self, now: Time, out: &mut Outbox) {
        self.pump(now, out);
        self.proposer.on_tick(now, out);
        self.next_poll = now + POLL;
    }
    fn next_tick(&self) -> Option<Time> {
        Some(self.proposer.next_tick().map_or(self.next_poll, |t| t.min(self.next_poll)))
    }
}

/// What the replica tells its front end.
pub enum FrontEvent {
    /// One of the front end's values was chosen in this instance.
    Decided(u32, Value),
    /// A coordinator announced this round (its TAKEOVER reached the
    /// replica): the backup taking over, or a restarted coordinator taking
    /// the role back. The proposer follows the highest.
    Takeover(u16),
    /// The replica's store (a snapshot it installed) records values of
    /// the front end's proposer id up to this request id: an earlier life
    /// of the replica used the id.
    UsedUpTo(u32),
}

/// Where the replica reports to its front end.
pub type FrontTx = Sender<FrontEvent>;

/// Binds the client port at `addr` (UDP, and TCP on the same port) and
/// starts its threads; returns the service and the front end to run as a
/// host (fed its proposer's chosen values and the backup's takeover).
pub fn start(
    addr: SocketAddr,
    proposer: Proposer,
    stop: &innet_live::Stop,
) -> io::Result<(Arc<Service>, Front, FrontTx)> {
    let (udp, tcp) = bind_pair(addr)?;
    let (ctx, crx) = channel();
    let (dtx, drx) = channel();
    let queued = Arc::new(AtomicUsize::new(0));
    let service = Arc::new(Service {
        udp: udp.try_clone()?,
        waiters: Mutex::new(Waiters::default()),
        commands: Mutex::new(ctx),
        queued: queued.clone(),
        counters: ServiceCounters::default(),
    });
    udp.set_read_timeout(Some(Duration::from_millis(100)))?;
    let (s, st) = (service.clone(), stop.clone());
    std::thread::Builder::new().name("kv-udp".into()).spawn(move || {
        let mut buf = vec![0u8; 65536];
        while !st.is_stopped() {
            if let Ok((n, from)) = udp.recv_from(&mut buf) {
                ServiceCounters::bump(&s.counters.requests_udp);
                s.on_message(&buf[..n], Route::Udp(from));
            }
        }
    })?;
    tcp.set_nonblocking(true)?;
    let (s, st) = (service.clone(), stop.clone());
    std::thread::Builder::new().name("kv-tcp".into()).spawn(move || {
        let open = Arc::new(AtomicUsize::new(0));
        while !st.is_stopped() {
            match tcp.accept() {
                Ok((stream, _)) if open.load(Ordering::Relaxed) < TCP_CONNECTIONS_MAX => {
                    open.fetch_add(1, Ordering::Relaxed);
                    let (conn, left) = (s.clone(), open.clone());
                    let spawned = std::thread::Builder::new().name("kv-conn".into()).spawn(move || {
                        serve_connection(&conn, stream);
                        left.fetch_sub(1, Ordering::Relaxed);
                    });
                    if spawned.is_err() {
                        open.fetch_sub(1, Ordering::Relaxed);
                        ServiceCounters::bump(&s.counters.tcp_refused);
                    }
                }
                Ok(_) => ServiceCounters::bump(&s.counters.tcp_refused),
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    })?;
    let front = Front { proposer, commands: crx, events: drx, queue: VecDeque::new(), queued, next_poll: Time::ZERO };
    Ok((service, front, dtx))
}

/// Tries for a UDP and a TCP port of one number when `addr` asks for any
/// port: a free UDP port's number may be in use for TCP.
const BIND_PAIR_ATTEMPTS: usize = 16;

/// The client port: UDP at `addr`, TCP on the same port number.
fn bind_pair(addr: SocketAddr) -> io::Result<(UdpSocket, TcpListener)> {
    let mut attempt = 1;
    loop {
        let udp =
            UdpSocket::bind(addr).map_err(|e| io::Error::new(e.kind(), format!("cannot bind UDP {addr}: {e}")))?;
        let at = udp.local_addr()?;
        match TcpListener::bind(at) {
            Ok(tcp) => return Ok((udp, tcp)),
            Err(e) if addr.port() == 0 && e.kind() == io::ErrorKind::AddrInUse && attempt < BIND_PAIR_ATTEMPTS => {
                attempt += 1;
            }
            Err(e) => return Err(io::Error::new(e.kind(), format!("cannot bind TCP {at}: {e}"))),
        }
    }
}

/// One TCP connection: request frames in, one answer out per request.
fn serve_connection(s: &Service, mut stream: TcpStream) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(TCP_IDLE));
    let _ = stream.set_nodelay(true);
    loop {
        let mut head = [0u8; kv::HEADER_LEN];
        if stream.read_exact(&mut head).is_err() {
            return;
        }
        let h = match Header::decode(&head) {
            Ok(h) => h,
            Err(e) => return ServiceCounters::bump(&s.counters.malformed[e.index()]),
        };
        let mut frame = head.to_vec();
        frame.resize(kv::HEADER_LEN + h.body_len as usize, 0);
        if stream.read_exact(&mut frame[kv::HEADER_LEN..]).is_err() {
            return;
        }
        ServiceCounters::bump(&s.counters.requests_tcp);
        let (tx, rx) = channel();
        s.on_message(&frame, Route::Tcp(tx));
        match rx.recv_timeout(TCP_IDLE) {
            Ok(reply) if stream.write_all(&reply).is_ok() => {}
            _ => return,
        }
    }
}
