//! Catch-up beyond the ring (issue 24 item 4): a replica copies a
//! snapshot of another replica's store and follows the log from there.
//!
//! A replica catches up through the log while the log still holds what it
//! missed: its peers' CATCHUP answers ([`innet_paxos::learner::DECIDED_KEEP`]
//! recent decisions) and the acceptors' ring (`recover`). A replica that is
//! new, or was down while the deployment went on for more than the
//! acceptors' ring of instances, has a gap the acceptors no longer hold (the
//! trim floor passed it: section 3.1's checkpoint-and-trim), so it asks a
//! peer replica for a *snapshot*: a consistent checkpoint of the peer's
//! LevelDB (a LevelDB snapshot, read while the peer goes on applying),
//! holding every key a replica writes: the data, the instance it covers
//! (`m/next`), the network clients' table and the delivered
//! `(proposer, request)` pairs (the duplicate filter: exactly once across
//! the jump), and the pieces of commands in progress. The replica checks it
//! whole (below), installs it in one LevelDB write batch
//! ([`crate::Replica::install`]: a crash leaves the old store or the new
//! one, as LevelDB recovers a batch whole or not at all) and follows the
//! log from the snapshot's instance.
//!
//! **Transport: TCP**, on the port number of the serving replica's learner
//! address (its UDP port; TCP's port space is separate). A snapshot is
//! megabytes (about 100 bytes per small key): in datagrams it would need
//! the flow control and retransmission TCP has, as the key-value service's
//! large messages do (docs/paxos.md, "Client transport").
//!
//! **Trust.** A replica asks only the replicas its deployment names (the
//! learners' addresses), and takes the snapshot only from the connection it
//! opened to one; a replica serves only connections from the addresses of
//! the deployment's other learners (others are closed and counted
//! `refused_untrusted`). TCP's handshake makes a spoofed source address
//! unable to receive the answer. Not covered: `--auth-key` authenticates
//! datagrams, not this stream.
//!
//! **Format** (network byte order):
//!
//! ```text
//! request   "KVSQ" | version u8 | learner id u16
//! snapshot  "KVSN" | version u8 | instance u32
//!           (1 u8 | key_len u16 | value_len u32 | key | value)*   keys strictly increasing
//!           2 u8  | records u64 | digest [u8; 16]
//! ```
//!
//! `digest` is SipHash-2-4-128 (a fixed, public key) of every byte before
//! it: it finds a truncated, damaged or mis-assembled stream, not a hostile
//! peer (trust above keeps those out). Every field is range-checked as it
//! is read, before any allocation ([`RECORD_KEY_MAX`], [`RECORD_VALUE_MAX`],
//! [`SNAPSHOT_BYTES_MAX`], [`SNAPSHOT_RECORDS_MAX`]); nothing is installed
//! unless the whole snapshot read, its count and its digest agree, and
//! every record is one [`crate::Replica::open`] accepts.

use std::io::{self, BufReader, BufWriter, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant};

use innet_core::Time;
use innet_wire::paxos::{MsgType, PaxosMsg};
use siphasher::sip128::{Hasher128, SipHasher24};

pub const REQUEST_MAGIC: [u8; 4] = *b"KVSQ";
pub const SNAPSHOT_MAGIC: [u8; 4] = *b"KVSN";
pub const VERSION: u8 = 1;
pub const REQUEST_LEN: usize = 7;
const TAG_RECORD: u8 = 1;
const TAG_END: u8 = 2;
/// The widest key a replica writes: a data key (`d/` and a client's key).
pub const RECORD_KEY_MAX: usize = 2 + innet_wire::kv::KEY_MAX;
/// The widest value a replica writes: a client's value.
pub const RECORD_VALUE_MAX: usize = innet_wire::kv::VALUE_MAX;
/// Bytes of one snapshot, at most (held in memory before it is installed).
pub const SNAPSHOT_BYTES_MAX: u64 = 256 << 20;
/// Records of one snapshot, at most.
pub const SNAPSHOT_RECORDS_MAX: u64 = 1 << 22;
/// Snapshots a replica sends at the same time (beyond: closed, counted).
pub const SERVING_MAX: usize = 2;
/// A transfer that moves nothing for this long is given up.
pub const TRANSFER_IDLE: Duration = Duration::from_secs(5);
/// After a failed or stale fetch, the next is tried this much later.
pub const FETCH_RETRY: Duration = Duration::from_millis(500);

const DIGEST_KEYS: (u64, u64) = (0x696e_6e65_742d_6b76, 0x736e_6170_7368_6f74);

/// Why a snapshot stream was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    Magic,
    Version,
    Tag,
    KeyLength,
    ValueLength,
    TooManyBytes,
    TooManyRecords,
    KeyOrder,
    Count,
    Digest,
}

/// A failed fetch: the connection, or a refused stream.
#[derive(Debug)]
pub enum FetchError {
    Io(io::Error),
    Refused(Refused),
}

impl From<io::Error> for FetchError {
    fn from(e: io::Error) -> FetchError {
        FetchError::Io(e)
    }
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FetchError::Io(e) => write!(f, "{e}"),
            FetchError::Refused(r) => write!(f, "refused: {r:?}"),
        }
    }
}

/// Key-value records, in key order.
pub type Records = Vec<(Vec<u8>, Vec<u8>)>;

/// A snapshot as read: every record, in key order, and the instance below
/// which it holds every command applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub instance: u32,
    pub records: Records,
    /// Bytes of the stream.
    pub bytes: u64,
}

/// Counts and digests what passes through.
struct Digesting<T> {
    inner: T,
    hasher: SipHasher24,
    bytes: u64,
}

impl<T> Digesting<T> {
    fn new(inner: T) -> Digesting<T> {
        Digesting { inner, hasher: SipHasher24::new_with_keys(DIGEST_KEYS.0, DIGEST_KEYS.1), bytes: 0 }
    }
    fn digest(&self) -> [u8; 16] {
        self.hasher.clone().finish128().as_bytes()
    }
}

impl<W: Write> Digesting<W> {
    fn put(&mut self, b: &[u8]) -> io::Result<()> {
        std::hash::Hasher::write(&mut self.hasher, b);
        self.bytes += b.len() as u64;
        self.inner.write_all(b)
    }
}

impl<R: Read> Digesting<R> {
    fn take<const N: usize>(&mut self) -> io::Result<[u8; N]> {
        let mut b = [0u8; N];
        self.take_into(&mut b)?;
        Ok(b)
    }
    fn take_into(&mut self, b: &mut [u8]) -> io::Result<()> {
        self.inner.read_exact(b)?;
        std::hash::Hasher::write(&mut self.hasher, b);
        self.bytes += b.len() as u64;
        Ok(())
    }
}

/// Writes a snapshot of `records` (in strictly increasing key order)
/// covering the instances below `instance`; returns the bytes written.
/// Fails, before writing past them, on records beyond the bounds.
pub fn write(instance: u32, records: impl Iterator<Item = (Vec<u8>, Vec<u8>)>, w: impl Write) -> io::Result<u64> {
    let too_large = |what: &str| io::Error::new(io::ErrorKind::InvalidData, format!("snapshot: {what}"));
    let mut w = Digesting::new(w);
    w.put(&SNAPSHOT_MAGIC)?;
    w.put(&[VERSION])?;
    w.put(&instance.to_be_bytes())?;
    let mut count = 0u64;
    for (k, v) in records {
        if k.len() > RECORD_KEY_MAX || v.len() > RECORD_VALUE_MAX {
            return Err(too_large("a record wider than RECORD_KEY_MAX or RECORD_VALUE_MAX"));
        }
        count += 1;
        if count > SNAPSHOT_RECORDS_MAX || w.bytes + 7 + (k.len() + v.len()) as u64 + 25 > SNAPSHOT_BYTES_MAX {
            return Err(too_large("the store exceeds SNAPSHOT_RECORDS_MAX or SNAPSHOT_BYTES_MAX"));
        }
        w.put(&[TAG_RECORD])?;
        w.put(&(k.len() as u16).to_be_bytes())?;
        w.put(&(v.len() as u32).to_be_bytes())?;
        w.put(&k)?;
        w.put(&v)?;
    }
    w.put(&[TAG_END])?;
    w.put(&count.to_be_bytes())?;
    let digest = w.digest();
    w.inner.write_all(&digest)?;
    w.inner.flush()?;
    debug_assert!(w.bytes + 16 <= SNAPSHOT_BYTES_MAX && count <= SNAPSHOT_RECORDS_MAX);
    Ok(w.bytes + 16)
}

/// Reads and checks a whole snapshot (every bound, the key order, the
/// count and the digest).
pub fn read(r: impl Read) -> Result<Snapshot, FetchError> {
    let refuse = |why| Err(FetchError::Refused(why));
    let mut r = Digesting::new(r);
    if r.take::<4>()? != SNAPSHOT_MAGIC {
        return refuse(Refused::Magic);
    }
    if r.take::<1>()? != [VERSION] {
        return refuse(Refused::Version);
    }
    let instance = u32::from_be_bytes(r.take()?);
    let mut records: Records = vec![];
    loop {
        match r.take::<1>()?[0] {
            TAG_RECORD => {}
            TAG_END => break,
            _ => return refuse(Refused::Tag),
        }
        let key_len = u16::from_be_bytes(r.take()?) as usize;
        let value_len = u32::from_be_bytes(r.take()?) as usize;
        if key_len == 0 || key_len > RECORD_KEY_MAX {
            return refuse(Refused::KeyLength);
        }
        if value_len > RECORD_VALUE_MAX {
            return refuse(Refused::ValueLength);
        }
        if r.bytes + (key_len + value_len) as u64 + 25 > SNAPSHOT_BYTES_MAX {
            return refuse(Refused::TooManyBytes);
        }
        if records.len() as u64 >= SNAPSHOT_RECORDS_MAX {
            return refuse(Refused::TooManyRecords);
        }
        let (mut k, mut v) = (vec![0u8; key_len], vec![0u8; value_len]);
        r.take_into(&mut k)?;
        r.take_into(&mut v)?;
        if records.last().is_some_and(|(last, _)| *last >= k) {
            return refuse(Refused::KeyOrder);
        }
        records.push((k, v));
    }
    if u64::from_be_bytes(r.take()?) != records.len() as u64 {
        return refuse(Refused::Count);
    }
    let digest = r.digest();
    let mut sent = [0u8; 16];
    r.inner.read_exact(&mut sent)?;
    if sent != digest {
        return refuse(Refused::Digest);
    }
    let snapshot = Snapshot { instance, records, bytes: r.bytes + 16 };
    debug_assert!(snapshot.bytes <= SNAPSHOT_BYTES_MAX && snapshot.records.len() as u64 <= SNAPSHOT_RECORDS_MAX);
    Ok(snapshot)
}

/// Asks the replica at `peer` (an address the deployment names) for a
/// snapshot, as learner `own`.
pub fn fetch(peer: SocketAddr, own: u16) -> Result<Snapshot, FetchError> {
    let mut s = TcpStream::connect_timeout(&peer, TRANSFER_IDLE)?;
    s.set_read_timeout(Some(TRANSFER_IDLE))?;
    s.set_write_timeout(Some(TRANSFER_IDLE))?;
    let mut request = REQUEST_MAGIC.to_vec();
    request.push(VERSION);
    request.extend_from_slice(&own.to_be_bytes());
    debug_assert_eq!(request.len(), REQUEST_LEN);
    s.write_all(&request)?;
    read(BufReader::with_capacity(1 << 16, s))
}

/// What a replica's snapshot server counted.
#[derive(Debug, Default)]
pub struct ServeCounters {
    pub served: AtomicU64,
    pub served_bytes: AtomicU64,
    /// Connections from addresses that are no other learner's.
    pub refused_untrusted: AtomicU64,
    /// Requests that were no snapshot request of another learner.
    pub refused_malformed: AtomicU64,
    /// Connections beyond [`SERVING_MAX`].
    pub refused_busy: AtomicU64,
    /// Transfers that failed (the store beyond the bounds, or the
    /// connection).
    pub failed: AtomicU64,
}

/// Writes a consistent snapshot of the store to the stream (the replica's
/// [`crate::Replica::snapshot_source`]).
pub type Source = Arc<dyn Fn(&mut dyn Write) -> io::Result<u64> + Send + Sync>;

/// Serves snapshots on `listener` (the replica's learner address) to the
/// learners of `peers` (other than `own`, below `learners`), until `stop`.
/// The thread returned ends once `stop` is set and every transfer under
/// way ended (each holds the store open).
pub fn serve(
    listener: TcpListener,
    source: Source,
    peers: Vec<IpAddr>,
    own: u16,
    learners: u16,
    stop: &innet_live::Stop,
) -> io::Result<(Arc<ServeCounters>, std::thread::JoinHandle<()>)> {
    let counters = Arc::new(ServeCounters::default());
    let (c, st) = (counters.clone(), stop.clone());
    listener.set_nonblocking(true)?;
    let thread = std::thread::Builder::new().name("kv-snapshot".into()).spawn(move || {
        let open = Arc::new(AtomicUsize::new(0));
        while !st.is_stopped() {
            let (stream, from) = match listener.accept() {
                Ok(a) => a,
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
            };
            if !peers.contains(&from.ip()) {
                c.refused_untrusted.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            if open.load(Ordering::Relaxed) >= SERVING_MAX {
                c.refused_busy.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            open.fetch_add(1, Ordering::Relaxed);
            let (conn, source, left) = (c.clone(), source.clone(), open.clone());
            let spawned = std::thread::Builder::new().name("kv-snapshot-send".into()).spawn(move || {
                send_one(stream, &source, own, learners, &conn);
                left.fetch_sub(1, Ordering::Relaxed);
            });
            if spawned.is_err() {
                open.fetch_sub(1, Ordering::Relaxed);
                counters_failed(&c);
            }
        }
        drop(source);
        while open.load(Ordering::Relaxed) > 0 {
            std::thread::sleep(Duration::from_millis(10));
        }
    })?;
    Ok((counters, thread))
}

fn counters_failed(c: &ServeCounters) {
    c.failed.fetch_add(1, Ordering::Relaxed);
}

fn send_one(mut stream: TcpStream, source: &Source, own: u16, learners: u16, c: &ServeCounters) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(TRANSFER_IDLE));
    let _ = stream.set_write_timeout(Some(TRANSFER_IDLE));
    let mut request = [0u8; REQUEST_LEN];
    if stream.read_exact(&mut request).is_err() {
        return counters_failed(c);
    }
    let id = u16::from_be_bytes([request[5], request[6]]);
    if request[..4] != REQUEST_MAGIC || request[4] != VERSION || id >= learners || id == own {
        c.refused_malformed.fetch_add(1, Ordering::Relaxed);
        return;
    }
    match source(&mut BufWriter::with_capacity(1 << 16, stream)) {
        Ok(bytes) => {
            c.served.fetch_add(1, Ordering::Relaxed);
            c.served_bytes.fetch_add(bytes, Ordering::Relaxed);
        }
        Err(_) => counters_failed(c),
    }
}

/// What catching up by snapshot counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CatchUpStats {
    pub fetches: u64,
    pub installed: u64,
    pub failed: u64,
    /// Snapshots no newer than the replica when they came: dropped.
    pub stale: u64,
    /// The last installed snapshot: its bytes, records and instance, the
    /// time its transfer took and the time its install took.
    pub last_bytes: u64,
    pub last_records: u64,
    pub last_instance: u32,
    pub last_fetch_us: u64,
    pub last_install_us: u64,
}

type Fetched = (SocketAddr, Result<Snapshot, FetchError>, Duration);

/// When to fetch a snapshot, and from whom: when the highest instance the
/// replica heard of (votes, decisions, the coordinator's window) is
/// `after` or more ahead of its checkpoint (the acceptors' ring length:
/// the trim floor has passed part of the gap), from the deployment's other
/// replicas in turn, one fetch at a time.
pub struct CatchUp {
    peers: Vec<SocketAddr>,
    own: u16,
    after: u32,
    highest: Option<u32>,
    next_peer: usize,
    in_flight: Option<Receiver<Fetched>>,
    retry_at: Time,
    pub stats: CatchUpStats,
}

impl CatchUp {
    /// Learner `own`, whose peers (the deployment's other replicas) are at
    /// `peers`, fetches a snapshot when `after` or more instances behind.
    pub fn new(own: u16, peers: Vec<SocketAddr>, after: u32) -> CatchUp {
        assert!(after > 0, "a gap of 0 instances is no gap");
        CatchUp {
            peers,
            own,
            after,
            highest: None,
            next_peer: 0,
            in_flight: None,
            retry_at: Time::ZERO,
            stats: <_>::default(),
        }
    }

    /// Notes the instance a message (admitted by the deployment's trust
    /// rules) shows exists.
    pub fn seen(&mut self, m: &PaxosMsg) {
        let inst = match m.msgtype {
            MsgType::Phase2B | MsgType::Decided => m.inst,
            MsgType::Window if m.inst > 0 => m.inst - 1,
            _ => return,
        };
        if inst != u32::MAX {
            self.highest = Some(self.highest.map_or(inst, |h| h.max(inst)));
        }
        debug_assert!(self.highest.is_none_or(|h| h != u32::MAX), "instance u32::MAX is never handed out");
    }

    /// Whether a replica at `checkpoint` should fetch a snapshot.
    pub fn behind(&self, checkpoint: u32) -> bool {
        debug_assert!(self.after > 0, "a gap of 0 instances is no gap");
        self.highest.is_some_and(|h| h >= checkpoint.saturating_add(self.after))
    }

    /// Starts a fetch when the replica at `checkpoint` is behind; returns a
    /// fetched snapshot newer than `checkpoint` to install.
    pub fn poll(&mut self, now: Time, checkpoint: u32) -> Option<(SocketAddr, Snapshot, Duration)> {
        if let Some(rx) = &self.in_flight {
            let (peer, got, took) = rx.try_recv().ok()?;
            self.in_flight = None;
            match got {
                Ok(s) if s.instance > checkpoint => return Some((peer, s, took)),
                Ok(_) => self.stats.stale += 1,
                Err(_) => self.stats.failed += 1,
            }
            self.retry_at = now + FETCH_RETRY;
            return None;
        }
        if self.peers.is_empty() || now < self.retry_at || !self.behind(checkpoint) {
            return None;
        }
        let peer = self.peers[self.next_peer % self.peers.len()];
        self.next_peer += 1;
        let (tx, rx) = channel();
        let own = self.own;
        let spawned = std::thread::Builder::new().name("kv-snapshot-fetch".into()).spawn(move || {
            let t = Instant::now();
            let got = fetch(peer, own);
            let _ = tx.send((peer, got, t.elapsed()));
        });
        match spawned {
            Ok(_) => {
                self.in_flight = Some(rx);
                self.stats.fetches += 1;
            }
            Err(_) => {
                self.stats.failed += 1;
                self.retry_at = now + FETCH_RETRY;
            }
        }
        debug_assert!(self.in_flight.is_none() || self.stats.fetches > 0, "a fetch in flight was counted");
        None
    }

    /// Counts a fetched snapshot the replica refused to install; the next
    /// fetch goes to another peer, a retry interval later.
    pub fn refused(&mut self, now: Time) {
        debug_assert!(self.in_flight.is_none(), "a refused snapshot is one already received");
        self.stats.failed += 1;
        self.retry_at = now + FETCH_RETRY;
    }

    /// Counts an installed snapshot.
    pub fn installed(&mut self, s: &Snapshot, fetch: Duration, install: Duration) {
        self.stats.installed += 1;
        self.stats.last_bytes = s.bytes;
        self.stats.last_records = s.records.len() as u64;
        self.stats.last_instance = s.instance;
        self.stats.last_fetch_us = fetch.as_micros() as u64;
        self.stats.last_install_us = install.as_micros() as u64;
        debug_assert!(self.stats.installed <= self.stats.fetches);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (u32, Records) {
        let records = (0..100u32).map(|i| (format!("d/key{i:03}").into_bytes(), vec![i as u8; i as usize])).collect();
        (1234, records)
    }

    fn encoded() -> Vec<u8> {
        let (instance, records) = sample();
        let mut out = vec![];
        let n = write(instance, records.into_iter(), &mut out).unwrap();
        assert_eq!(n, out.len() as u64);
        out
    }

    /// What is written reads back whole.
    #[test]
    fn a_snapshot_reads_back() {
        let s = read(&encoded()[..]).unwrap();
        let (instance, records) = sample();
        assert_eq!((s.instance, s.records, s.bytes), (instance, records, encoded().len() as u64));
    }

    /// Every prefix of a snapshot is refused (truncated), and every single
    /// flipped bit too: by a bound, the order, the count or the digest.
    #[test]
    fn a_truncated_or_damaged_snapshot_is_refused() {
        let bytes = encoded();
        for n in 0..bytes.len() {
            assert!(read(&bytes[..n]).is_err(), "a prefix of {n} bytes was taken");
        }
        for i in 0..bytes.len() {
            for bit in [0x01, 0x80] {
                let mut b = bytes.clone();
                b[i] ^= bit;
                assert!(read(&b[..]).is_err(), "byte {i} flipped by {bit:#x} was taken");
            }
        }
    }

    /// Lengths beyond the bounds are refused before anything is allocated
    /// for them; keys out of order are refused.
    #[test]
    fn bounds_and_order_are_checked_as_read() {
        let head = [&SNAPSHOT_MAGIC[..], &[VERSION], &7u32.to_be_bytes()].concat();
        let record = |k: u16, v: u32| [&[TAG_RECORD][..], &k.to_be_bytes(), &v.to_be_bytes()].concat();
        let refused = |b: Vec<u8>| match read(&b[..]) {
            Err(FetchError::Refused(r)) => r,
            other => panic!("{other:?}"),
        };
        assert_eq!(refused([&head[..], &record(RECORD_KEY_MAX as u16 + 1, 0)].concat()), Refused::KeyLength);
        assert_eq!(refused([&head[..], &record(0, 0)].concat()), Refused::KeyLength);
        assert_eq!(refused([&head[..], &record(2, u32::MAX)].concat()), Refused::ValueLength);
        assert_eq!(refused([&head[..], &[9]].concat()), Refused::Tag);
        assert_eq!(refused([&b"KVSX"[..], &head[4..]].concat()), Refused::Magic);
        assert_eq!(refused([&head[..4], &[2], &head[5..]].concat()), Refused::Version);
        let mut out = vec![];
        let unordered = vec![(b"d/b".to_vec(), vec![]), (b"d/a".to_vec(), vec![])];
        write(1, unordered.into_iter(), &mut out).unwrap();
        assert_eq!(refused(out), Refused::KeyOrder);
        let mut out = vec![];
        assert!(write(1, std::iter::once((vec![1; RECORD_KEY_MAX + 1], vec![])), &mut out).is_err());
    }

    /// Catch-up is triggered by a gap of `after` instances, not less.
    #[test]
    fn fetches_only_when_a_ring_behind() {
        let mut c = CatchUp::new(0, vec![], 64);
        let mut m = PaxosMsg::new(MsgType::Phase2B);
        m.inst = 100;
        c.seen(&m);
        assert!(c.behind(36) && !c.behind(37));
        m.msgtype = MsgType::Window;
        m.inst = 200;
        c.seen(&m);
        assert!(c.behind(135) && !c.behind(136));
        m.msgtype = MsgType::Catchup;
        m.inst = 10_000;
        c.seen(&m);
        assert!(!c.behind(136), "a CATCHUP names an instance someone misses, not one that exists");
    }

    /// Trust (docs/paxos.md, Trust boundaries): a replica sends its
    /// snapshot only to the deployment's other learners, over real TCP on
    /// loopback: a connection from an address that is no peer's, a request
    /// in the server's own name or of no learner, and a malformed request
    /// are closed and counted; a peer's request gets the snapshot.
    #[test]
    fn serves_only_the_deployment_s_other_learners() {
        let source: Source = Arc::new(|w: &mut dyn Write| {
            let (instance, records) = sample();
            write(instance, records.into_iter(), w)
        });
        let ask = |addr: SocketAddr, request: &[u8]| -> Vec<u8> {
            let mut s = TcpStream::connect(addr).unwrap();
            s.set_read_timeout(Some(TRANSFER_IDLE)).unwrap();
            let _ = s.write_all(request);
            let mut got = vec![];
            let _ = s.read_to_end(&mut got);
            got
        };
        let stop = innet_live::Stop::new();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stranger: IpAddr = [127, 0, 0, 2].into();
        let (c, thread) = serve(listener, source.clone(), vec![stranger], 0, 3, &stop).unwrap();
        assert!(ask(addr, b"KVSQ\x01\x00\x01").is_empty(), "127.0.0.1 is no peer here");
        assert_eq!(c.refused_untrusted.load(Ordering::Relaxed), 1);
        stop.stop();
        thread.join().unwrap();

        let stop = innet_live::Stop::new();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (c, thread) = serve(listener, source, vec![[127, 0, 0, 1].into()], 0, 3, &stop).unwrap();
        for bad in [&b"KVSQ\x01\x00\x00"[..], b"KVSQ\x01\x00\x03", b"KVSX\x01\x00\x01", b"KVSQ\x02\x00\x01"] {
            assert!(ask(addr, bad).is_empty(), "{bad:?} was answered");
        }
        let s = fetch(addr, 2).unwrap();
        assert_eq!((s.instance, s.records), sample());
        stop.stop();
        thread.join().unwrap();
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        assert_eq!((load(&c.refused_malformed), load(&c.served), load(&c.refused_untrusted)), (4, 1, 0));
        assert_eq!(load(&c.served_bytes), encoded().len() as u64);
    }
}
