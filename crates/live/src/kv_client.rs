//! A network client of the key-value service (issue 24 item 1): talks to
//! any of the replicas' client ports (`innet_wire::kv`; the replicas are
//! `innet_paxos_kv`'s), one request at a time, and fails over by itself.
//! The Python package (`innet.KvClient`) and the C library
//! (`innet_kv_*`) are this client.
//!
//! Each request carries the client's id (random per client) and the next
//! sequence number. The client sends it to its current replica and waits
//! [`KvNetClient::timeout`] (plus time for the request's size); without an
//! answer it moves to the next replica and resends the same `(client,
//! seq)`, which the replicas apply once ([`crate::clients`]). A BUSY answer
//! moves on at once. Only after [`KvNetClient::deadline`] without an answer
//! does a request fail (TimedOut).
//!
//! Messages up to [`innet_wire::kv::DATAGRAM_MAX`] bytes go by UDP; larger
//! requests go by TCP to the same port number, and a get whose answer does
//! not fit a datagram (TOO_LARGE) is asked again, same `(client, seq)`,
//! by TCP (a repeated get is read again, not applied twice).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use innet_wire::kv::{self, Body, Message, Op, Reply};

/// How long a request waits for one replica by default.
pub const TIMEOUT_DEFAULT: Duration = Duration::from_millis(500);
/// How long a request may take over all replicas by default.
pub const DEADLINE_DEFAULT: Duration = Duration::from_secs(30);
/// Extra wait per KiB of request or expected answer: a 1 MiB value is
/// about 52,000 consensus instances.
pub const WAIT_PER_KIB: Duration = Duration::from_millis(10);

/// What went wrong with an operation the replicas did answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KvError {
    /// The replicas no longer remembered this client: not applied now (an
    /// earlier copy may have been).
    Expired,
    /// The command was not well formed once ordered.
    Invalid,
    /// An answer that does not fit the operation.
    Unexpected(Reply),
}

pub struct KvNetClient {
    replicas: Vec<SocketAddr>,
    current: usize,
    socket: UdpSocket,
    client: u64,
    seq: u64,
    /// Wait for one replica before trying the next.
    pub timeout: Duration,
    /// Give up on a request after this long.
    pub deadline: Duration,
    /// Times a request moved to another replica.
    pub failovers: u64,
    /// Requests sent (first sends and resends).
    pub sends: u64,
}

fn other(e: KvError) -> io::Error {
    io::Error::other(format!("{e:?}"))
}

/// A random client id (never 0): std's randomly keyed hasher over the
/// clock and the process id.
fn fresh_client_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos());
    h.write_u32(std::process::id());
    h.finish().max(1)
}

impl KvNetClient {
    /// A client of the replicas at `replicas` (their client ports), with a
    /// fresh random client id; starts with the first replica.
    pub fn connect(replicas: &[SocketAddr]) -> io::Result<KvNetClient> {
        if replicas.is_empty() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "no replica address given"));
        }
        let socket = UdpSocket::bind(crate::txn::bind_addr_for(replicas[0]))?;
        let client = fresh_client_id();
        Ok(KvNetClient {
            replicas: replicas.to_vec(),
            current: 0,
            socket,
            client,
            seq: 0,
            timeout: TIMEOUT_DEFAULT,
            deadline: DEADLINE_DEFAULT,
            failovers: 0,
            sends: 0,
        })
    }

    /// The replica requests go to now.
    pub fn current(&self) -> SocketAddr {
        self.replicas[self.current]
    }

    pub fn client_id(&self) -> u64 {
        self.client
    }

    /// Sends `op` until a replica answers (failing over), and returns the
    /// answer.
    pub fn execute(&mut self, op: Op) -> io::Result<Reply> {
        self.seq += 1;
        let request = Message::request(self.client, self.seq, op)
            .encode()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "key or value too long"))?;
        let wait = self.timeout + WAIT_PER_KIB * (request.len() / 1024) as u32;
        let mut tcp = request.len() > kv::DATAGRAM_MAX;
        let started = Instant::now();
        loop {
            if started.elapsed() > self.deadline {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "no replica answered"));
            }
            self.sends += 1;
            let to = self.current();
            let reply = if tcp { self.over_tcp(to, &request, wait) } else { self.over_udp(to, &request, wait) };
            match reply {
                Some(Reply::TooLarge { len }) => {
                    // Ask the same replica again, by TCP, with time for the answer.
                    tcp = true;
                    let wait = wait + WAIT_PER_KIB * (len / 1024);
                    if let Some(r) = self.over_tcp(to, &request, wait).filter(|r| *r != Reply::Busy) {
                        return Ok(r);
                    }
                }
                Some(Reply::Busy) | None => {}
                Some(r) => return Ok(r),
            }
            self.current = (self.current + 1) % self.replicas.len();
            self.failovers += 1;
        }
    }

    fn over_udp(&mut self, to: SocketAddr, request: &[u8], wait: Duration) -> Option<Reply> {
        self.socket.send_to(request, to).ok()?;
        let until = Instant::now() + wait;
        let mut buf = vec![0u8; 65536];
        loop {
            let left = until.checked_duration_since(Instant::now()).filter(|d| !d.is_zero())?;
            self.socket.set_read_timeout(Some(left)).ok()?;
            let Ok((n, _)) = self.socket.recv_from(&mut buf) else { continue };
            if let Some(r) = self.mine(&buf[..n]) {
                return Some(r);
            }
        }
    }

    fn over_tcp(&mut self, to: SocketAddr, request: &[u8], wait: Duration) -> Option<Reply> {
        let until = Instant::now() + wait;
        let mut s = TcpStream::connect_timeout(&to, wait).ok()?;
        s.set_nodelay(true).ok()?;
        s.write_all(request).ok()?;
        loop {
            let left = until.checked_duration_since(Instant::now()).filter(|d| !d.is_zero())?;
            s.set_read_timeout(Some(left)).ok()?;
            let mut head = [0u8; kv::HEADER_LEN];
            s.read_exact(&mut head).ok()?;
            let h = kv::Header::decode(&head).ok()?;
            let mut frame = head.to_vec();
            frame.resize(kv::HEADER_LEN + h.body_len as usize, 0);
            s.read_exact(&mut frame[kv::HEADER_LEN..]).ok()?;
            if let Some(r) = self.mine(&frame) {
                return Some(r);
            }
        }
    }

    /// The reply to the current request, if `bytes` is one.
    fn mine(&self, bytes: &[u8]) -> Option<Reply> {
        match Message::decode(bytes).ok()? {
            Message { client, seq, body: Body::Reply(r) } if client == self.client && seq == self.seq => Some(r),
            _ => None,
        }
    }

    fn done(&mut self, op: Op) -> io::Result<()> {
        match self.execute(op)? {
            Reply::Ok => Ok(()),
            r => Err(other(Self::error(r))),
        }
    }

    fn error(r: Reply) -> KvError {
        match r {
            Reply::Expired => KvError::Expired,
            Reply::Invalid => KvError::Invalid,
            r => KvError::Unexpected(r),
        }
    }

    pub fn put(&mut self, key: &[u8], value: &[u8]) -> io::Result<()> {
        self.done(Op::Put { key: key.to_vec(), value: value.to_vec() })
    }

    pub fn delete(&mut self, key: &[u8]) -> io::Result<()> {
        self.done(Op::Delete { key: key.to_vec() })
    }

    /// The value of `key`, read in its place in the command order
    /// (linearizable: gets are ordered by consensus).
    pub fn get(&mut self, key: &[u8]) -> io::Result<Option<Vec<u8>>> {
        match self.execute(Op::Get { key: key.to_vec() })? {
            Reply::Value(v) => Ok(Some(v)),
            Reply::NotFound => Ok(None),
            r => Err(other(Self::error(r))),
        }
    }

    /// Sets `key` to `value` if it holds `expected` (`None`: if absent);
    /// true if it did.
    pub fn cas(&mut self, key: &[u8], expected: Option<&[u8]>, value: &[u8]) -> io::Result<bool> {
        let op = Op::Cas { key: key.to_vec(), expected: expected.map(<[u8]>::to_vec), value: value.to_vec() };
        match self.execute(op)? {
            Reply::Ok => Ok(true),
            Reply::CasFailed => Ok(false),
            r => Err(other(Self::error(r))),
        }
    }
}
