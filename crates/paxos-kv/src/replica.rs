//! A replica: a [`Learner`] whose deliveries are applied to LevelDB.
//!
//! Two kinds of command arrive: the case study's small commands
//! ([`Command`], one value each, from the load generator and [`crate::KvClient`])
//! and network clients' commands of any size, split into pieces
//! ([`crate::fragment`]), each carrying the client's `(client, seq)` for
//! the client table ([`crate::clients`]). Everything one delivered batch
//! changes (data, the duplicate filter, pieces in progress, the client
//! table, the next instance) is one LevelDB write batch; reads inside the
//! batch see its earlier writes through an overlay.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use innet_core::{Host, Outbox, Time};
use innet_paxos::envelope::Envelope;
use innet_paxos::learner::DeliveryKind;
use innet_paxos::{Learner, LearnerConfig};
use innet_wire::kv::{status, Op, Reply};
use innet_wire::paxos::Value;
use leveldb::batch::{Batch, Writebatch};
use leveldb::database::Database;
use leveldb::iterator::{Iterable, LevelDBIterator};
use leveldb::kv::KV;
use leveldb::options::{Options, ReadOptions, WriteOptions};
use leveldb::snapshots::Snapshots;

use crate::clients::{ClientTable, Entry, Verdict, READ};
use crate::command::Command;
use crate::fragment::{Added, Assemblies, Piece};
use crate::snapshot::Snapshot;

pub use innet_live::paxos::acceptor_store::Fsync;

/// A LevelDB key (raw bytes).
pub struct Key(pub Vec<u8>);

impl db_key::Key for Key {
    fn from_u8(k: &[u8]) -> Key {
        Key(k.to_vec())
    }
    fn as_slice<T, F: Fn(&[u8]) -> T>(&self, f: F) -> T {
        f(&self.0)
    }
}

const DATA: u8 = b'd';
const SEEN: u8 = b's';
/// `c/<client u64>` -> [`Entry`]: the client table.
const CLIENT: u8 = b'c';
/// `f/<proposer u32><request u32>` -> `instance u32 | payload`: pieces of
/// commands in progress.
const PIECE: u8 = b'f';
const META_NEXT: &[u8] = b"m/next";
/// Times the replica was opened (its proposer's incarnation, see
/// [`Replica::opened`]).
const META_OPENED: &[u8] = b"m/opened";

fn data_key(k: &[u8]) -> Key {
    let mut v = vec![DATA, b'/'];
    v.extend_from_slice(k);
    Key(v)
}

fn pair_key(prefix: u8, p: u32, r: u32) -> Key {
    let mut v = vec![prefix, b'/'];
    v.extend_from_slice(&p.to_be_bytes());
    v.extend_from_slice(&r.to_be_bytes());
    Key(v)
}

fn seen_key(p: u32, r: u32) -> Key {
    pair_key(SEEN, p, r)
}

fn client_key(c: u64) -> Key {
    let mut v = vec![CLIENT, b'/'];
    v.extend_from_slice(&c.to_be_bytes());
    Key(v)
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes(b.try_into().expect("sized"))
}

pub type Error = leveldb::error::Error;

/// Why [`Replica::open`] refused a directory.
#[derive(Debug)]
pub enum OpenError {
    Db(Error),
    /// The directory holds something a replica never writes (a damaged
    /// or foreign database): refused rather than half-read.
    Damaged {
        what: String,
    },
}

impl From<Error> for OpenError {
    fn from(e: Error) -> OpenError {
        OpenError::Db(e)
    }
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::Db(e) => write!(f, "LevelDB: {e:?}"),
            OpenError::Damaged { what } => write!(
                f,
                "the replica directory is damaged ({what}): restore it from a copy, or move it away and start \
                 the replica on a fresh directory"
            ),
        }
    }
}

impl std::error::Error for OpenError {}

/// Delivered `(proposer, request)` pairs a replica keeps on disk (the
/// newest, by instance), to resume its learner's duplicate filter after a
/// restart. Older ones are deleted in the batch that adds new ones: a value
/// resubmitted after this many later deliveries and across a restart of
/// the replica would be applied again (the network clients' commands are
/// still applied once: their client table decides, not this filter).
pub const SEEN_STORED_MAX: usize = 1 << 16;

/// What an applied command returns to its client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A put or delete was applied.
    Done,
    /// A get read this (`None`: no such key).
    Value(Option<Vec<u8>>),
    /// The payload was not a command (applied as nothing).
    Invalid,
    /// A piece of a network client's command ([`crate::fragment`]).
    Piece,
}

/// The answer to one applied command of a client's proposer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub instance: u32,
    pub proposer: u32,
    pub request: u32,
    pub outcome: Outcome,
}

/// The answer to a network client's request `(client, seq)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetAnswer {
    pub client: u64,
    pub seq: u64,
    pub reply: Reply,
}

/// Counters of the network clients' commands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetStats {
    /// Commands applied (first time).
    pub applied: u64,
    /// Repeats answered without applying.
    pub repeated: u64,
    /// Requests below a client's last: ignored.
    pub stale: u64,
    /// Requests of clients the table no longer held, not applied.
    pub expired: u64,
    /// Complete commands that were no command (answered INVALID if they
    /// named a client).
    pub invalid: u64,
}

/// One batch's writes, and the values they give keys so far.
struct Pending {
    batch: Writebatch<Key>,
    overlay: HashMap<Vec<u8>, Option<Vec<u8>>>,
}

impl Pending {
    fn new() -> Pending {
        Pending { batch: Writebatch::new(), overlay: HashMap::new() }
    }
    fn read(&self, db: &Database<Key>, key: &[u8]) -> Option<Vec<u8>> {
        match self.overlay.get(key) {
            Some(v) => v.clone(),
            None => db.get(ReadOptions::new(), data_key(key)).expect("leveldb read"),
        }
    }
    fn put(&mut self, key: &[u8], value: &[u8]) {
        self.batch.put(data_key(key), value);
        self.overlay.insert(key.to_vec(), Some(value.to_vec()));
    }
    fn delete(&mut self, key: &[u8]) {
        self.batch.delete(data_key(key));
        self.overlay.insert(key.to_vec(), None);
    }
}

/// The replicated state besides the data that a replica's keys hold.
struct Loaded {
    /// `m/next`: every instance below it is applied.
    next: u32,
    /// `(instance, proposer, request)` of the delivered pairs stored.
    seen: Vec<(u32, u32, u32)>,
    client_table: ClientTable,
    assemblies: Assemblies,
}

fn meta_u32(k: &[u8], b: &[u8]) -> Result<u32, OpenError> {
    b.try_into().map(u32::from_be_bytes).map_err(|_| OpenError::Damaged {
        what: format!("{} holds {} bytes, not 4", String::from_utf8_lossy(k), b.len()),
    })
}

/// Reads back a replica's keys (a directory, or a snapshot of one) and
/// refuses anything a replica never writes.
fn load<K: AsRef<[u8]>, V: AsRef<[u8]>>(records: impl Iterator<Item = (K, V)>) -> Result<Loaded, OpenError> {
    let damaged = |what: String| OpenError::Damaged { what };
    let mut l =
        Loaded { next: 0, seen: vec![], client_table: ClientTable::default(), assemblies: Assemblies::default() };
    for (k, v) in records {
        let (k, v) = (k.as_ref(), v.as_ref());
        let bad = |what: &str| damaged(format!("key {:02x?}: {what}", &k[..k.len().min(16)]));
        match (k.first(), k.get(1), k.len()) {
            (Some(&DATA), Some(b'/'), _) => {}
            // Earlier versions stored no instance: oldest.
            (Some(&SEEN), Some(b'/'), 10) if v.len() == 4 || v.is_empty() => {
                let instance = if v.is_empty() { 0 } else { be32(v) };
                l.seen.push((instance, be32(&k[2..6]), be32(&k[6..10])))
            }
            (Some(&SEEN), _, _) => {
                return Err(bad("a delivered pair that is not proposer u32, request u32 -> instance u32"))
            }
            (Some(&CLIENT), Some(b'/'), 10) => {
                let e = Entry::decode(v).ok_or_else(|| bad("a client table entry that does not decode"))?;
                l.client_table.record(u64::from_be_bytes(k[2..10].try_into().expect("sized")), e);
            }
            (Some(&CLIENT), _, _) => return Err(bad("a client table key that is not c/<client u64>")),
            (Some(&PIECE), Some(b'/'), 10) if v.len() >= 4 => {
                let (p, r, instance) = (be32(&k[2..6]), be32(&k[6..10]), be32(&v[..4]));
                let piece = Piece::parse(&v[4..]).ok_or_else(|| bad("a stored piece that does not parse"))?;
                if l.assemblies.add(instance, p, r, piece, &mut vec![]) != Added::Pending {
                    return Err(bad("a stored piece that completes, repeats or contradicts its command"));
                }
            }
            (Some(&PIECE), _, _) => {
                return Err(bad("a stored piece that is not f/<proposer><request> -> instance | piece"))
            }
            _ if k == META_NEXT => l.next = meta_u32(k, v)?,
            _ if k == META_OPENED => {
                meta_u32(k, v)?;
            }
            _ => return Err(bad("not a key a replica writes")),
        }
    }
    Ok(l)
}

pub struct Replica {
    pub learner: Learner,
    db: Arc<Database<Key>>,
    /// Values applied since start (commands and pieces, not no-ops or
    /// duplicates).
    pub applied: u64,
    /// Proposers whose commands are answered ([`Replica::answer_to`]).
    clients: BTreeSet<u32>,
    answers: VecDeque<Answer>,
    /// Pieces of network clients' commands in progress (replicated state).
    pub assemblies: Assemblies,
    /// The network clients' table (replicated state).
    pub client_table: ClientTable,
    pub net: NetStats,
    /// Keep [`NetAnswer`]s ([`Replica::serve_clients`]).
    serving: bool,
    net_answers: Vec<NetAnswer>,
    /// The proposer whose chosen values are reported ([`Replica::watch`]).
    watch: Option<u32>,
    decided: Vec<(u32, Value)>,
    /// How often this directory was opened, this time included.
    pub opened: u32,
    /// `(instance, proposer, request)` of the delivered pairs on disk,
    /// oldest first, at most [`SEEN_STORED_MAX`].
    stored_seen: VecDeque<(u32, u32, u32)>,
    /// When applied writes reach the disk ([`Replica::set_fsync`]).
    fsync: Fsync,
    /// Whether a write since the last sync is not synced yet (`batch`).
    unsynced: bool,
    /// LevelDB write batches of applied deliveries.
    pub store_writes: u64,
    /// Syncs of the LevelDB log (`always`: one per write; `batch`: one
    /// per [`Replica::sync`] that found unsynced writes).
    pub store_syncs: u64,
}

impl Replica {
    /// Opens (or creates) the replica's database in `dir` and resumes after
    /// the last instance it applied, with its client table and the pieces
    /// of commands in progress.
    pub fn open(dir: &Path, config: LearnerConfig) -> Result<Replica, OpenError> {
        let mut o = Options::new();
        o.create_if_missing = true;
        let db: Database<Key> = Database::open(dir, o)?;
        let opened = match db.get(ReadOptions::new(), Key(META_OPENED.to_vec()))? {
            None => 0,
            Some(b) => meta_u32(META_OPENED, &b)?,
        }
        .wrapping_add(1);
        db.put(WriteOptions::new(), Key(META_OPENED.to_vec()), &opened.to_be_bytes())?;
        let loaded = load(db.iter(ReadOptions::new()).map(|(k, v)| (k.0, v)))?;
        let next = loaded.next;
        let mut r = Replica {
            learner: Learner::new(config),
            db: Arc::new(db),
            applied: 0,
            clients: BTreeSet::new(),
            answers: VecDeque::new(),
            assemblies: Assemblies::default(),
            client_table: ClientTable::default(),
            net: NetStats::default(),
            serving: false,
            net_answers: vec![],
            watch: None,
            decided: vec![],
            opened,
            stored_seen: VecDeque::new(),
            fsync: Fsync::None,
            unsynced: false,
            store_writes: 0,
            store_syncs: 0,
        };
        r.resume(loaded);
        debug_assert_eq!(r.learner.checkpoint(), next, "the replica resumes after the last instance it applied");
        Ok(r)
    }

    /// Takes up the replicated state `loaded` read back: the learner
    /// resumes after its instance with its duplicate filter.
    fn resume(&mut self, loaded: Loaded) {
        // Oldest first; a directory of an earlier version may hold more
        // than the bound: trimmed at the next write.
        let Loaded { next, mut seen, client_table, assemblies } = loaded;
        seen.sort_unstable();
        self.stored_seen = seen.into_iter().collect();
        let pairs = self.stored_seen.iter().map(|&(_, p, r)| (p, r)).collect::<Vec<_>>();
        self.learner = Learner::resume(self.learner.config().clone(), next, pairs);
        self.client_table = client_table;
        self.assemblies = assemblies;
        debug_assert_eq!(self.learner.checkpoint(), next);
    }

    /// Installs a peer's snapshot ([`crate::snapshot`]) in place of the
    /// store, in one LevelDB write batch (synced): a crash leaves the old
    /// store or the new one, never a mix, and [`Replica::open`] reads
    /// either. Every record is checked first as `open` checks a directory;
    /// a snapshot that fails is refused and changes nothing. The caller
    /// installs only a snapshot newer than the replica's checkpoint. The
    /// replica's own open count (`m/opened`) stays.
    pub fn install(&mut self, snapshot: &Snapshot) -> Result<(), OpenError> {
        let records = || snapshot.records.iter().filter(|(k, _)| k != META_OPENED);
        let loaded = load(records().map(|(k, v)| (k.as_slice(), v.as_slice())))?;
        if loaded.next != snapshot.instance {
            let what = format!("a snapshot of instance {} whose m/next is {}", snapshot.instance, loaded.next);
            return Err(OpenError::Damaged { what });
        }
        debug_assert!(snapshot.instance > self.learner.checkpoint(), "only a newer snapshot is installed");
        let mut batch = Writebatch::<Key>::new();
        for k in self.db.keys_iter(ReadOptions::new()) {
            if k.0 != META_OPENED {
                batch.delete(k);
            }
        }
        for (k, v) in records() {
            batch.put(Key(k.clone()), v);
        }
        let mut sync = WriteOptions::new();
        sync.sync = true;
        self.db.write(sync, &batch)?;
        self.resume(loaded);
        self.decided.clear();
        debug_assert_eq!(self.learner.checkpoint(), snapshot.instance);
        Ok(())
    }

    /// Writes a consistent snapshot of this replica's store (a LevelDB
    /// snapshot: the store as of one applied batch, while the replica goes
    /// on applying) to a stream: what [`crate::snapshot::serve`] sends.
    pub fn snapshot_source(&self) -> crate::snapshot::Source {
        let db = self.db.clone();
        Arc::new(move |w: &mut dyn Write| {
            let snap = db.snapshot();
            let next = snap.get(ReadOptions::new(), Key(META_NEXT.to_vec())).map_err(io::Error::other)?;
            let next = next.map_or(Ok(0), |b| meta_u32(META_NEXT, &b)).map_err(|e| io::Error::other(e.to_string()))?;
            let records = snap.iter(ReadOptions::new()).filter(|(k, _)| k.0 != META_OPENED).map(|(k, v)| (k.0, v));
            crate::snapshot::write(next, records, w)
        })
    }

    /// When applied writes reach the disk relative to the answers: `none`
    /// leaves them to the kernel (a process crash loses nothing, a power
    /// loss may); `always` syncs each applied delivery's write batch
    /// before its answers exist; `batch` writes unsynced and syncs once in
    /// [`Replica::sync`], which the caller runs before the answers of a
    /// received batch of packets leave (`Host::before_send`). Default
    /// (as opened): `none`.
    pub fn set_fsync(&mut self, fsync: Fsync) {
        // Leaving `batch` with writes unsynced would lose them from the
        // next sync: sync them first.
        if self.fsync == Fsync::Batch && fsync != Fsync::Batch {
            self.sync();
        }
        self.fsync = fsync;
        debug_assert!(!self.unsynced || self.fsync == Fsync::Batch, "unsynced writes only under batch");
    }

    pub fn fsync(&self) -> Fsync {
        self.fsync
    }

    /// With `batch`: syncs the LevelDB log if anything was written since
    /// the last sync (an empty write batch, synced: LevelDB appends it to
    /// its log and syncs the log, which holds every earlier write).
    pub fn sync(&mut self) {
        if !self.unsynced {
            return;
        }
        debug_assert_eq!(self.fsync, Fsync::Batch, "only batch leaves writes to sync later");
        let mut o = WriteOptions::new();
        o.sync = true;
        self.db.write(o, &Writebatch::<Key>::new()).expect("leveldb sync");
        self.store_syncs += 1;
        self.unsynced = false;
    }

    /// Keeps an [`Answer`] for every command of `proposer` this replica
    /// applies (a client co-located with it), for [`Replica::take_answers`].
    pub fn answer_to(&mut self, proposer: u32) {
        debug_assert_ne!(proposer, innet_paxos::envelope::NOOP_PROPOSER, "the no-op has no client");
        self.clients.insert(proposer);
    }

    /// Answers since the last call, in the order applied.
    pub fn take_answers(&mut self) -> Vec<Answer> {
        let answers: Vec<Answer> = self.answers.drain(..).collect();
        debug_assert!(
            !self.learner.config().ordered || answers.windows(2).all(|w| w[0].instance <= w[1].instance),
            "commands are applied in instance order"
        );
        answers
    }

    /// Keeps a [`NetAnswer`] for every network client's command applied
    /// (for [`Replica::take_net_answers`]).
    pub fn serve_clients(&mut self) {
        debug_assert!(self.net_answers.is_empty(), "no network answer is kept before serving clients");
        self.serving = true;
    }

    pub fn take_net_answers(&mut self) -> Vec<NetAnswer> {
        debug_assert!(self.serving || self.net_answers.is_empty(), "answers kept only when serving clients");
        std::mem::take(&mut self.net_answers)
    }

    /// Reports every value of `proposer` chosen (first time or again) as
    /// `(instance, value)`, for [`Replica::take_decided`]: what a proposer
    /// co-located with this replica learns its values from.
    pub fn watch(&mut self, proposer: u32) {
        debug_assert!(self.watch.is_none_or(|w| w == proposer), "a replica's front end is one proposer");
        self.watch = Some(proposer);
    }

    /// The proposer [`Replica::watch`] named, if any.
    pub fn watched(&self) -> Option<u32> {
        debug_assert_ne!(self.watch, Some(innet_paxos::envelope::NOOP_PROPOSER), "the no-op is nobody's front end");
        self.watch
    }

    /// The highest request id of `proposer` among the deliveries this
    /// replica records (the newest [`SEEN_STORED_MAX`], which a snapshot
    /// carries too): where a front end whose proposer id an earlier life
    /// of this replica used must start, or the learners would take its
    /// new values for that life's duplicates.
    pub fn last_request_of(&self, proposer: u32) -> Option<u32> {
        let last = self.stored_seen.iter().filter(|&&(_, p, _)| p == proposer).map(|&(_, _, r)| r).max();
        debug_assert!(last.is_none_or(|r| r >= 1), "request ids start at 1");
        last
    }

    pub fn take_decided(&mut self) -> Vec<(u32, Value)> {
        debug_assert!(self.watch.is_some() || self.decided.is_empty(), "decisions kept only for a watched proposer");
        std::mem::take(&mut self.decided)
    }

    /// Applies what the learner delivered, in one write batch.
    fn apply(&mut self) {
        let ds = self.learner.take_deliveries();
        if ds.is_empty() {
            return;
        }
        let applied_before = self.applied;
        let mut w = Pending::new();
        for d in &ds {
            let envelope = Envelope::from_value(&d.value);
            if let (Some(watch), Some(e)) = (self.watch, envelope) {
                if e.proposer == watch && d.kind != DeliveryKind::Noop {
                    self.decided.push((d.instance, d.value));
                }
            }
            if d.kind != DeliveryKind::Value {
                continue;
            }
            let Some(e) = envelope else { continue };
            w.batch.put(seen_key(e.proposer, e.request), &d.instance.to_be_bytes());
            self.stored_seen.push_back((d.instance, e.proposer, e.request));
            self.applied += 1;
            let outcome = match Piece::parse(e.payload()) {
                Some(piece) => {
                    self.apply_piece(d.instance, &e, piece, &mut w);
                    Outcome::Piece
                }
                None => self.apply_command(&e, &mut w),
            };
            if self.clients.contains(&e.proposer) {
                let (proposer, request) = (e.proposer, e.request);
                self.answers.push_back(Answer { instance: d.instance, proposer, request, outcome });
            }
        }
        while self.stored_seen.len() > SEEN_STORED_MAX {
            let (_, p, r) = self.stored_seen.pop_front().expect("non-empty");
            w.batch.delete(seen_key(p, r));
        }
        w.batch.put(Key(META_NEXT.to_vec()), &self.learner.checkpoint().to_be_bytes());
        let mut o = WriteOptions::new();
        o.sync = self.fsync == Fsync::Always;
        self.db.write(o, &w.batch).expect("leveldb write");
        self.store_writes += 1;
        if o.sync {
            self.store_syncs += 1;
        } else {
            self.unsynced = self.fsync == Fsync::Batch;
        }
        debug_assert!(self.applied - applied_before <= ds.len() as u64, "one command per delivery at most");
    }

    /// A case-study command ([`Command`]).
    fn apply_command(&mut self, e: &Envelope, w: &mut Pending) -> Outcome {
        match Command::decode(e.payload()) {
            Some(Command::Put { key, value }) => {
                w.put(&key, &value);
                Outcome::Done
            }
            Some(Command::Delete { key }) => {
                w.delete(&key);
                Outcome::Done
            }
            Some(Command::Get { key }) => Outcome::Value(w.read(&self.db, &key)),
            None => Outcome::Invalid,
        }
    }

    /// A piece of a network client's command: kept (in the batch too)
    /// until its command is complete, then the command is applied.
    fn apply_piece(&mut self, instance: u32, e: &Envelope, piece: Piece, w: &mut Pending) {
        let mut forget = vec![];
        let added = self.assemblies.add(instance, e.proposer, e.request, piece, &mut forget);
        if added == Added::Pending {
            let mut stored = instance.to_be_bytes().to_vec();
            stored.extend_from_slice(e.payload());
            w.batch.put(pair_key(PIECE, e.proposer, e.request), &stored);
        }
        for (p, r) in forget {
            w.batch.delete(pair_key(PIECE, p, r));
        }
        if let Added::Complete(command) = added {
            self.apply_net(instance, &command, w);
        }
    }

    /// A network client's whole command: `client u64 | seq u64 | op`,
    /// through the client table.
    fn apply_net(&mut self, instance: u32, command: &[u8], w: &mut Pending) {
        let (Some(client), Some(seq)) = (command.get(..8), command.get(8..16)) else {
            self.net.invalid += 1;
            return;
        };
        let (client, seq) =
            (u64::from_be_bytes(client.try_into().expect("8")), u64::from_be_bytes(seq.try_into().expect("8")));
        let Ok(op) = Op::decode(&command[16..]) else {
            self.net.invalid += 1;
            return self.answer(client, seq, Reply::Invalid);
        };
        let reply = match self.client_table.verdict(client, seq) {
            Verdict::Apply => {
                self.net.applied += 1;
                let reply = self.execute(&op, w);
                let status = if op.mutates() { reply.encode()[0] } else { READ };
                self.record(client, Entry { seq, status, used: instance }, w);
                reply
            }
            Verdict::Repeat(status) => {
                self.net.repeated += 1;
                self.record(client, Entry { seq, status, used: instance }, w);
                match status {
                    READ => self.execute(&op, w),
                    status::CAS_FAILED => Reply::CasFailed,
                    _ => Reply::Ok,
                }
            }
            Verdict::Stale => {
                self.net.stale += 1;
                return;
            }
            Verdict::Expired => {
                self.net.expired += 1;
                Reply::Expired
            }
        };
        self.answer(client, seq, reply);
    }

    fn record(&mut self, client: u64, entry: Entry, w: &mut Pending) {
        if let Some(gone) = self.client_table.record(client, entry) {
            w.batch.delete(client_key(gone));
        }
        w.batch.put(client_key(client), &entry.encode());
    }

    fn execute(&mut self, op: &Op, w: &mut Pending) -> Reply {
        match op {
            Op::Put { key, value } => {
                w.put(key, value);
                Reply::Ok
            }
            Op::Delete { key } => {
                w.delete(key);
                Reply::Ok
            }
            Op::Get { key } => w.read(&self.db, key).map_or(Reply::NotFound, Reply::Value),
            Op::Cas { key, expected, value } => {
                if w.read(&self.db, key) == *expected {
                    w.put(key, value);
                    Reply::Ok
                } else {
                    Reply::CasFailed
                }
            }
        }
    }

    fn answer(&mut self, client: u64, seq: u64, reply: Reply) {
        if self.serving {
            self.net_answers.push(NetAnswer { client, seq, reply });
        }
    }

    /// The contents: every key and value, in key order.
    pub fn contents(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        // Only the data keys: pieces, client entries and the duplicate
        // filter's keys sort before and after them.
        let from = Key(vec![DATA]);
        let contents: Vec<(Vec<u8>, Vec<u8>)> = self
            .db
            .iter(ReadOptions::new())
            .from(&from)
            .take_while(|(k, _)| k.0.first() == Some(&DATA))
            .map(|(k, v)| (k.0[2..].to_vec(), v))
            .collect();
        debug_assert!(contents.windows(2).all(|w| w[0].0 < w[1].0), "keys in order, each once");
        contents
    }

    /// A digest of the contents (FNV-1a over keys and values).
    pub fn digest(&self) -> u64 {
        self.summary().0
    }

    /// The contents' digest ([`Replica::digest`]) and key count, from one
    /// scan of the store.
    pub fn summary(&self) -> (u64, usize) {
        let contents = self.contents();
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for (k, v) in &contents {
            debug_assert!(k.len() <= u32::MAX as usize && v.len() <= u32::MAX as usize, "lengths fit the digest's u32");
            for b in (k.len() as u32).to_be_bytes().iter().chain(k).chain(&(v.len() as u32).to_be_bytes()).chain(v) {
                h ^= *b as u64;
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        }
        (h, contents.len())
    }
}

impl Host for Replica {
    fn on_packet(&mut self, now: Time, packet: &[u8], out: &mut Outbox) {
        self.learner.on_packet(now, packet, out);
        self.apply();
    }
    fn on_tick(&mut self, now: Time, out: &mut Outbox) {
        self.learner.on_tick(now, out);
        self.apply();
    }
    fn next_tick(&self) -> Option<Time> {
        self.learner.next_tick()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use innet_paxos::envelope::Envelope;
    use innet_wire::kv::Op;
    use innet_wire::paxos::{MsgType, PaxosMsg};

    fn vote(inst: u32, acpt: u16, r: u32, c: &Command) -> Vec<u8> {
        let mut m = PaxosMsg::new(MsgType::Phase2B);
        m.inst = inst;
        m.rnd = 1;
        m.vrnd = 1;
        m.acptid = acpt;
        m.value = Envelope::new(1, r, &c.encode().unwrap()).unwrap().to_value();
        m.encode()
    }

    fn feed(r: &mut Replica, inst: u32, req: u32, c: &Command) {
        let mut out = Outbox::new();
        for a in 0..2 {
            r.on_packet(Time(1), &vote(inst, a, req, c), &mut out);
        }
    }

    /// Section 6.3's replicated LevelDB: delivered commands are applied in
    /// order; a reopened replica resumes where it was, with its duplicate
    /// filter intact.
    #[test]
    fn applies_in_order_and_resumes_after_reopen() {
        let dir = std::env::temp_dir().join(format!("innet-kv-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cfg = LearnerConfig::new(0, 2);
        {
            let mut r = Replica::open(&dir, cfg.clone()).unwrap();
            r.answer_to(1);
            feed(&mut r, 0, 1, &Command::Put { key: b"a".to_vec(), value: b"1".to_vec() });
            feed(&mut r, 1, 2, &Command::Put { key: b"b".to_vec(), value: b"2".to_vec() });
            feed(&mut r, 2, 3, &Command::Delete { key: b"a".to_vec() });
            feed(&mut r, 3, 4, &Command::Get { key: b"b".to_vec() });
            assert_eq!(r.contents(), vec![(b"b".to_vec(), b"2".to_vec())]);
            let answers: Vec<(u32, Outcome)> = r.take_answers().into_iter().map(|a| (a.request, a.outcome)).collect();
            assert_eq!(
                answers,
                vec![
                    (1, Outcome::Done),
                    (2, Outcome::Done),
                    (3, Outcome::Done),
                    (4, Outcome::Value(Some(b"2".to_vec())))
                ]
            );
        }
        let mut r = Replica::open(&dir, cfg).unwrap();
        assert_eq!(r.learner.checkpoint(), 4);
        // Request 2 chosen again (a resubmission) is not applied twice.
        feed(&mut r, 4, 2, &Command::Put { key: b"b".to_vec(), value: b"2".to_vec() });
        feed(&mut r, 5, 5, &Command::Put { key: b"c".to_vec(), value: b"3".to_vec() });
        assert_eq!(r.applied, 1);
        assert_eq!(r.contents().len(), 2);
        drop(r);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `--fsync`: `always` syncs every applied write batch, `batch` only
    /// in [`Replica::sync`] and only after a write, `none` never.
    #[test]
    fn the_fsync_policy_decides_the_syncs() {
        let cfg = LearnerConfig::new(0, 2);
        for fsync in Fsync::ALL {
            let dir = std::env::temp_dir().join(format!("innet-kv-fsync-{}-{}", std::process::id(), fsync.name()));
            let _ = std::fs::remove_dir_all(&dir);
            let mut r = Replica::open(&dir, cfg.clone()).unwrap();
            r.set_fsync(fsync);
            for i in 0..3u32 {
                feed(&mut r, i, i + 1, &Command::Put { key: vec![b'k', i as u8], value: b"v".to_vec() });
            }
            assert_eq!(r.store_writes, 3);
            let after_writes = r.store_syncs;
            r.sync();
            let after_sync = r.store_syncs;
            r.sync();
            let expected = match fsync {
                Fsync::None => (0, 0),
                Fsync::Batch => (0, 1),
                Fsync::Always => (3, 3),
            };
            assert_eq!((after_writes, after_sync), expected, "{}", fsync.name());
            assert_eq!(r.store_syncs, after_sync, "{}: nothing new to sync", fsync.name());
            drop(r);
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }

    /// A directory holding what a replica never writes is refused with
    /// the reason, not half-read (before: a debug assertion, or nothing).
    #[test]
    fn refuses_a_damaged_directory() {
        let cfg = LearnerConfig::new(0, 2);
        let cases: [(&[u8], &[u8], &str); 5] = [
            (b"m/next", b"abc", "m/next holds 3 bytes, not 4"),
            (b"s/short", b"", "a delivered pair"),
            (b"c/\0\0\0\0\0\0\0\x07", b"?", "a client table entry that does not decode"),
            (b"f/\0\0\0\x01\0\0\0\x02", b"\0\0\0\0\x12", "a stored piece that does not parse"),
            (b"zebra", b"", "not a key a replica writes"),
        ];
        for (i, (key, value, reason)) in cases.into_iter().enumerate() {
            let dir = std::env::temp_dir().join(format!("innet-kv-damaged-{}-{i}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            {
                let mut r = Replica::open(&dir, cfg.clone()).unwrap();
                feed(&mut r, 0, 1, &Command::Put { key: b"a".to_vec(), value: b"1".to_vec() });
                r.db.put(WriteOptions::new(), Key(key.to_vec()), value).unwrap();
            }
            let e = Replica::open(&dir, cfg.clone()).err().expect("refused").to_string();
            assert!(e.contains("damaged") && e.contains(reason), "{reason}: {e}");
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }

    /// The delivered pairs on disk stay within `SEEN_STORED_MAX`, the
    /// newest kept: a reopened replica still filters a recent duplicate.
    #[test]
    fn the_stored_duplicate_filter_is_bounded() {
        let dir = std::env::temp_dir().join(format!("innet-kv-seen-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cfg = LearnerConfig::new(0, 2);
        let n = SEEN_STORED_MAX as u32 + 100;
        let get = Command::Get { key: b"k".to_vec() };
        let stored = |r: &Replica| r.db.iter(ReadOptions::new()).filter(|(k, _)| k.0[0] == SEEN).count();
        {
            let mut r = Replica::open(&dir, cfg.clone()).unwrap();
            for i in 0..n {
                feed(&mut r, i, i + 1, &get);
            }
            assert_eq!(r.applied, n as u64);
            assert_eq!(stored(&r), SEEN_STORED_MAX);
        }
        let mut r = Replica::open(&dir, cfg).unwrap();
        assert_eq!(r.stored_seen.len(), SEEN_STORED_MAX);
        feed(&mut r, n, n, &get); // the newest request, chosen again
        assert_eq!(r.applied, 0, "a recent duplicate is still filtered after the reopen");
        assert_eq!(stored(&r), SEEN_STORED_MAX);
        drop(r);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn feed_payload(r: &mut Replica, inst: u32, proposer: u32, req: u32, payload: &[u8]) {
        let mut out = Outbox::new();
        for a in 0..2 {
            let mut m = PaxosMsg::new(MsgType::Phase2B);
            (m.inst, m.rnd, m.vrnd, m.acptid) = (inst, 1, 1, a);
            m.value = Envelope::new(proposer, req, payload).unwrap().to_value();
            r.on_packet(Time(1), &m.encode(), &mut out);
        }
    }

    fn net_command(client: u64, seq: u64, op: &Op) -> Vec<u8> {
        [&client.to_be_bytes()[..], &seq.to_be_bytes(), &op.encode().unwrap()].concat()
    }

    /// Issue 24: the pieces of a command in progress and the client table
    /// are replicated state persisted with each batch. A replica reopened
    /// half-way through a command's pieces completes it with the rest, once;
    /// after another reopen, a repeat of the request (same client and seq,
    /// another proposer) is answered from the table, not applied again.
    #[test]
    fn pieces_and_the_client_table_survive_a_reopen() {
        let dir = std::env::temp_dir().join(format!("innet-kv-test-net-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cfg = LearnerConfig::new(0, 2);
        let value = vec![7u8; 500];
        let put = Op::Put { key: b"k".to_vec(), value: value.clone() };
        let pieces = crate::fragment::split(&net_command(9, 1, &put));
        let half = pieces.len() / 2;
        {
            let mut r = Replica::open(&dir, cfg.clone()).unwrap();
            for (i, p) in pieces[..half].iter().enumerate() {
                feed_payload(&mut r, i as u32, 1, 100 + i as u32, p);
            }
            assert_eq!(r.assemblies.len(), 1);
            assert!(r.contents().is_empty());
        }
        {
            let mut r = Replica::open(&dir, cfg.clone()).unwrap();
            r.serve_clients();
            assert_eq!((r.assemblies.len(), r.opened), (1, 2), "the pieces so far came back");
            for (i, p) in pieces.iter().enumerate().skip(half) {
                feed_payload(&mut r, i as u32, 1, 100 + i as u32, p);
            }
            assert_eq!(r.contents(), vec![(b"k".to_vec(), value.clone())]);
            assert!(r.assemblies.is_empty());
            assert_eq!(r.take_net_answers(), vec![NetAnswer { client: 9, seq: 1, reply: Reply::Ok }]);
        }
        let mut r = Replica::open(&dir, cfg).unwrap();
        r.serve_clients();
        assert_eq!(r.client_table.get(9).map(|e| e.seq), Some(1));
        // The same request through another proposer, after a put of seq 2
        // by the same client: stale, so the value stays the later one.
        let base = pieces.len() as u32;
        let later = Op::Put { key: b"k".to_vec(), value: b"later".to_vec() };
        for (i, p) in crate::fragment::split(&net_command(9, 2, &later)).iter().enumerate() {
            feed_payload(&mut r, base + i as u32, 2, 1 + i as u32, p);
        }
        let base = base + crate::fragment::split(&net_command(9, 2, &later)).len() as u32;
        for (i, p) in pieces.iter().enumerate() {
            feed_payload(&mut r, base + i as u32, 3, 1 + i as u32, p);
        }
        assert_eq!(r.contents(), vec![(b"k".to_vec(), b"later".to_vec())]);
        assert_eq!((r.net.applied, r.net.stale), (1, 1));
        drop(r);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Issue 24 item 4: a snapshot of one replica installed in another
    /// (empty, or behind) gives it the same data, client table, pieces in
    /// progress, duplicate filter and instance; `open` reads the result
    /// back; a snapshot whose records a replica would refuse changes
    /// nothing.
    #[test]
    fn a_snapshot_installs_whole_and_reopens() {
        let base = std::env::temp_dir().join(format!("innet-kv-snap-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        let cfg = LearnerConfig::new(0, 2);
        let mut a = Replica::open(&base.join("a"), cfg.clone()).unwrap();
        feed(&mut a, 0, 1, &Command::Put { key: b"x".to_vec(), value: b"1".to_vec() });
        let put = Op::Put { key: b"k".to_vec(), value: vec![3u8; 200] };
        let pieces = crate::fragment::split(&net_command(9, 1, &put));
        for (i, p) in pieces.iter().enumerate() {
            feed_payload(&mut a, 1 + i as u32, 2, 1 + i as u32, p);
        }
        let half = crate::fragment::split(&net_command(9, 2, &put));
        let at = 1 + pieces.len() as u32;
        feed_payload(&mut a, at, 2, 100, &half[0]);
        let mut bytes = vec![];
        (a.snapshot_source())(&mut bytes).unwrap();
        let snap = crate::snapshot::read(&bytes[..]).unwrap();
        assert_eq!(snap.instance, a.learner.checkpoint());

        let mut b = Replica::open(&base.join("b"), cfg.clone()).unwrap();
        feed(&mut b, 0, 1, &Command::Put { key: b"stale".to_vec(), value: b"0".to_vec() });
        let mut bad = snap.clone();
        bad.instance += 1;
        assert!(b.install(&bad).unwrap_err().to_string().contains("m/next"));
        let mut bad = snap.clone();
        bad.records.push((b"zebra".to_vec(), vec![]));
        assert!(b.install(&bad).is_err());
        assert_eq!(b.contents(), vec![(b"stale".to_vec(), b"0".to_vec())], "a refused snapshot changes nothing");
        b.install(&snap).unwrap();
        let same = |a: &Replica, b: &Replica| {
            assert_eq!(a.contents(), b.contents());
            assert_eq!(a.learner.checkpoint(), b.learner.checkpoint());
            assert_eq!(a.client_table.get(9), b.client_table.get(9));
            assert_eq!(a.assemblies.len(), b.assemblies.len());
            assert_eq!(a.stored_seen, b.stored_seen);
        };
        same(&a, &b);
        assert_eq!(b.opened, 1, "the replica keeps its own open count");
        drop(b);
        let mut b = Replica::open(&base.join("b"), cfg).unwrap();
        same(&a, &b);
        assert_eq!(b.opened, 2);
        // The duplicate filter came along: request 1 chosen again is not
        // applied; the command in progress (seq 2) completes with its
        // other pieces.
        feed(&mut b, at + 1, 1, &Command::Put { key: b"x".to_vec(), value: b"2".to_vec() });
        for (i, p) in half.iter().enumerate().skip(1) {
            feed_payload(&mut b, at + 1 + i as u32, 2, 100 + i as u32, p);
        }
        assert_eq!(b.contents()[1], (b"x".to_vec(), b"1".to_vec()));
        assert_eq!((b.net.applied, b.applied), (1, half.len() as u64 - 1), "seq 2 applied, request 1 not again");
        // And the client table came along: seq 1 again is stale.
        let at = at + half.len() as u32 + 1;
        for (i, p) in pieces.iter().enumerate() {
            feed_payload(&mut b, at + i as u32, 3, 1 + i as u32, p);
        }
        assert_eq!((b.net.applied, b.net.stale), (1, 1));
        drop((a, b));
        std::fs::remove_dir_all(&base).unwrap();
    }
}
