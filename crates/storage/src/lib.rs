//! Durable storage for the transaction store: [`RedbBackend`], an
//! [`innet_txn::store::Backend`] on the embedded `redb` database.
//!
//! Every [`Backend::commit`] is one redb write transaction with immediate
//! durability: the writes and the client's exactly-once record are made
//! durable together, and only then does the store send its reply. So every
//! acknowledged commit survives `kill -9` (or a power cut), and a client that
//! resends after a crash gets the same answer it would have got before.
//!
//! Reads are served from an in-memory mirror loaded at open and updated after
//! each successful commit; redb is the source of truth.
//!
//! Layout: one file `innet-store.redb` in the data directory, with tables
//! `meta` (`"format"` -> [`FORMAT`], written when the store is created),
//! `data` (`u32` key -> 16-byte value, then its checksum u64 BE) and
//! `clients` (`u32` client id -> encoded [`ClientRecord`]: `req_id` i32 BE,
//! request digest u64 BE, fragment count u32 BE, then per fragment a u32 BE
//! length and the reply bytes; then, if the runtime named the request's
//! sender, its 18-byte address; then its checksum u64 BE). A checksum is
//! [`checksum`] over the table, the key and the stored bytes.
//!
//! Disk faults: an existing file is opened only if redb's page checksums
//! hold, the format marker is there and every record's checksum matches; so
//! an emptied, truncated or overwritten file is refused with one line that
//! says what to do, never replaced by an empty store or served wrong. An I/O
//! error on commit (a full disk) is not acknowledged; the next commits
//! reopen the file (at most every 100 ms), which repairs it and reloads what
//! is durable, so the store acknowledges again as soon as the disk works.

#![forbid(unsafe_code)]

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use innet_core::Peer;
use innet_txn::store::{Backend, BackendError, ClientRecord, Decision, MemBackend};
use innet_wire::txn::{Key, Value, VALUE_LEN};
use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition};

/// A stored value: the value, then its checksum (u64 BE, see [`checksum`]).
const DATA: TableDefinition<u32, [u8; VALUE_LEN + 8]> = TableDefinition::new("data");
/// An encoded client record, then its checksum (u64 BE).
const CLIENTS: TableDefinition<u32, &[u8]> = TableDefinition::new("clients");
/// The format marker, written when the store is created; a file without it
/// is not (or is no longer) an innet store.
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
/// With `--record-decisions` only: every decision in order
/// ([`Decision::encode`]), written in the transaction that commits it, for
/// `innet chaos txn`'s serializability check. It grows with every request:
/// a check's tool, not for production.
const DECISIONS: TableDefinition<u64, &[u8]> = TableDefinition::new("decisions");
const FORMAT_KEY: &str = "format";
/// The format this build writes and reads.
pub const FORMAT: &[u8] = b"innet-store 2";

/// The database file's name inside the data directory.
pub const DB_FILE: &str = "innet-store.redb";

/// How long after a failed reopen the next commit tries again.
const REOPEN_EVERY: Duration = Duration::from_millis(100);

/// A durable backend on redb.
pub struct RedbBackend {
    /// `None` after an I/O error, until a reopen succeeds.
    db: Option<Database>,
    path: PathBuf,
    /// What the database holds, for reads; updated only after a durable commit.
    mirror: MemBackend,
    /// When the last reopen after an I/O error failed.
    last_reopen: Option<Instant>,
    /// The next decision's number in [`DECISIONS`], when they are kept.
    next_decision: Option<u64>,
}

impl std::fmt::Debug for RedbBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedbBackend").field("path", &self.path).field("keys", &self.mirror.len()).finish()
    }
}

fn err(context: &str, e: impl std::fmt::Display) -> BackendError {
    BackendError(format!("{context}: {e}"))
}

/// FNV-1a (64 bits) over a table tag, the key and the stored bytes: a value
/// changed on disk, or moved to another key, no longer matches.
pub fn checksum(table: u8, key: u32, bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in [table].iter().chain(key.to_be_bytes().iter()).chain(bytes.iter()) {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

const DATA_TAG: u8 = 1;
const CLIENT_TAG: u8 = 2;

fn seal_value(key: Key, v: &Value) -> [u8; VALUE_LEN + 8] {
    let mut out = [0u8; VALUE_LEN + 8];
    out[..VALUE_LEN].copy_from_slice(&v.0);
    out[VALUE_LEN..].copy_from_slice(&checksum(DATA_TAG, key, &v.0).to_be_bytes());
    out
}

fn seal_record(cl_id: u32, rec: &ClientRecord) -> Vec<u8> {
    let mut b = encode_record(rec);
    let sum = checksum(CLIENT_TAG, cl_id, &b);
    b.extend_from_slice(&sum.to_be_bytes());
    b
}

/// The stored bytes without their checksum, if it matches.
fn unseal(table: u8, key: u32, b: &[u8]) -> Option<&[u8]> {
    let (body, sum) = b.split_at(b.len().checked_sub(8)?);
    (checksum(table, key, body).to_be_bytes() == sum).then_some(body)
}

/// Why the store cannot start on this file, and what to do.
fn refuse(path: &Path, what: &str) -> BackendError {
    BackendError(format!(
        "{}: {what}; the store will not start on it (it would serve nothing or wrong values): restore the \
         file from a backup, or move it away to start an empty store",
        path.display()
    ))
}

impl RedbBackend {
    /// Opens the store in directory `dir`, creating the directory and an
    /// empty store if there is no database file yet. A file that exists is
    /// opened only if it is an innet store and every record's checksum
    /// matches: an emptied, truncated or damaged file is refused.
    pub fn open(dir: impl AsRef<Path>) -> Result<RedbBackend, BackendError> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir).map_err(|e| err(&format!("cannot create data directory {}", dir.display()), e))?;
        let path = dir.join(DB_FILE);
        let (db, mirror) = if path.exists() { load(&path)? } else { create(&path)? };
        Ok(RedbBackend { db: Some(db), path, mirror, last_reopen: None, next_decision: None })
    }

    /// Keeps every decision from now on, in the transaction that commits
    /// it (see [`DECISIONS`]); numbering goes on from what the file holds.
    pub fn with_decision_log(mut self) -> Result<RedbBackend, BackendError> {
        let db = self.db.as_ref().ok_or_else(|| BackendError(format!("{}: not open", self.path.display())))?;
        let w = db.begin_write().map_err(|e| err("begin write", e))?;
        let next = {
            let t = w.open_table(DECISIONS).map_err(|e| err("open table decisions", e))?;
            let last = t.last().map_err(|e| err("read decisions", e))?;
            last.map_or(0, |(k, _)| k.value().saturating_add(1))
        };
        w.commit().map_err(|e| err("commit", e))?;
        self.next_decision = Some(next);
        Ok(self)
    }

    /// Every decision the store in `dir` kept (`with_decision_log`), in
    /// order, and its data; read while no store has the file open.
    pub fn read_decisions(dir: impl AsRef<Path>) -> Result<(Vec<Decision>, BTreeMap<Key, Value>), BackendError> {
        let b = RedbBackend::open(dir)?;
        let db = b.db.as_ref().ok_or_else(|| BackendError(format!("{}: not open", b.path.display())))?;
        let r = db.begin_read().map_err(|e| err("begin read", e))?;
        let mut out = vec![];
        if let Ok(t) = r.open_table(DECISIONS) {
            for row in t.iter().map_err(|e| err("read decisions", e))? {
                let (k, v) = row.map_err(|e| err("read decisions", e))?;
                let d = Decision::decode(v.value())
                    .ok_or_else(|| BackendError(format!("decision {} does not decode", k.value())))?;
                out.push(d);
            }
        }
        Ok((out, b.snapshot()))
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the database is open (false after an I/O error until a reopen succeeds).
    pub fn is_healthy(&self) -> bool {
        self.db.is_some()
    }

    /// After an I/O error: reopens the file (redb repairs what the failed
    /// commit left) and reloads the mirror from what is durable, at most
    /// every [`REOPEN_EVERY`].
    fn reopen(&mut self) -> Result<(), BackendError> {
        if self.last_reopen.is_some_and(|t| t.elapsed() < REOPEN_EVERY) {
            return Err(BackendError(format!("{}: storage unavailable since an I/O error", self.path.display())));
        }
        match load(&self.path) {
            Ok((db, mirror)) => {
                self.db = Some(db);
                self.mirror = mirror;
                self.last_reopen = None;
                eprintln!("innet store: {} reopened after an I/O error; acknowledging again", self.path.display());
                Ok(())
            }
            Err(e) => {
                self.last_reopen = Some(Instant::now());
                Err(e)
            }
        }
    }

    fn try_commit(
        db: &Database,
        writes: &[(Key, Value)],
        cl_id: u32,
        record: &ClientRecord,
        decision: Option<(u64, &Decision)>,
    ) -> Result<(), BackendError> {
        let mut w = db.begin_write().map_err(|e| err("begin write", e))?;
        w.set_durability(Durability::Immediate).map_err(|e| err("set durability", e))?;
        {
            let mut t = w.open_table(DATA).map_err(|e| err("open table data", e))?;
            for (k, v) in writes {
                t.insert(*k, seal_value(*k, v)).map_err(|e| err("write data", e))?;
            }
            let mut c = w.open_table(CLIENTS).map_err(|e| err("open table clients", e))?;
            c.insert(cl_id, seal_record(cl_id, record).as_slice()).map_err(|e| err("write client record", e))?;
            if let Some((n, d)) = decision {
                let mut t = w.open_table(DECISIONS).map_err(|e| err("open table decisions", e))?;
                t.insert(n, d.encode().as_slice()).map_err(|e| err("write decision", e))?;
            }
        }
        w.commit().map_err(|e| err("commit", e))
    }
}

/// A new store at `path` (which does not exist): the tables and the format marker.
fn create(path: &Path) -> Result<(Database, MemBackend), BackendError> {
    let db = Database::create(path).map_err(|e| err(&format!("cannot create database {}", path.display()), e))?;
    let w = db.begin_write().map_err(|e| err("begin write", e))?;
    {
        w.open_table(DATA).map_err(|e| err("open table data", e))?;
        w.open_table(CLIENTS).map_err(|e| err("open table clients", e))?;
        let mut m = w.open_table(META).map_err(|e| err("open table meta", e))?;
        m.insert(FORMAT_KEY, FORMAT).map_err(|e| err("write format marker", e))?;
    }
    w.commit().map_err(|e| err("commit", e))?;
    Ok((db, MemBackend::default()))
}

/// Opens an existing store, checks redb's page checksums, the format marker
/// and every record's checksum, and loads the mirror. redb may panic on a
/// page damaged in a way its checks miss; that is reported as damage too.
fn load(path: &Path) -> Result<(Database, MemBackend), BackendError> {
    let len = std::fs::metadata(path).map_err(|e| err(&format!("cannot read {}", path.display()), e))?.len();
    if len == 0 {
        return Err(refuse(path, "the file is empty (0 bytes)"));
    }
    let p = path.to_path_buf();
    let loaded = std::panic::catch_unwind(move || load_checked(&p));
    match loaded {
        Ok(r) => r,
        Err(_) => Err(refuse(path, "the file is damaged (the database engine failed reading it)")),
    }
}

fn load_checked(path: &Path) -> Result<(Database, MemBackend), BackendError> {
    let damaged = |e: &dyn std::fmt::Display| refuse(path, &format!("the file is damaged ({e})"));
    let db = Database::builder().set_check_integrity_on_open(true).open(path).map_err(|e| match e {
        redb::DatabaseError::DatabaseAlreadyOpen => err(&format!("{}", path.display()), e),
        redb::DatabaseError::Storage(redb::StorageError::Io(io)) => err(&format!("cannot open {}", path.display()), io),
        e => damaged(&e),
    })?;
    let mut data = BTreeMap::new();
    let mut clients = HashMap::new();
    {
        let r = db.begin_read().map_err(|e| err("begin read", e))?;
        let m = r.open_table(META).map_err(|_| refuse(path, "it has no innet store format marker"))?;
        let format = m.get(FORMAT_KEY).map_err(|e| damaged(&e))?;
        match format {
            Some(f) if f.value() == FORMAT => {}
            Some(f) => {
                return Err(refuse(
                    path,
                    &format!(
                        "its format is {:?}, not {:?}",
                        String::from_utf8_lossy(f.value()),
                        String::from_utf8_lossy(FORMAT)
                    ),
                ))
            }
            None => return Err(refuse(path, "it has no innet store format marker")),
        }
        let t = r.open_table(DATA).map_err(|e| damaged(&e))?;
        for row in t.iter().map_err(|e| damaged(&e))? {
            let (k, v) = row.map_err(|e| damaged(&e))?;
            let (k, v) = (k.value(), v.value());
            let body = unseal(DATA_TAG, k, &v)
                .ok_or_else(|| refuse(path, &format!("the value of key {k} fails its checksum")))?;
            data.insert(k, Value(body.try_into().expect("VALUE_LEN bytes")));
        }
        let t = r.open_table(CLIENTS).map_err(|e| damaged(&e))?;
        for row in t.iter().map_err(|e| damaged(&e))? {
            let (k, v) = row.map_err(|e| damaged(&e))?;
            let k = k.value();
            let rec = unseal(CLIENT_TAG, k, v.value())
                .and_then(decode_record)
                .ok_or_else(|| refuse(path, &format!("the record of client {k} fails its checksum")))?;
            clients.insert(k, rec);
        }
    }
    Ok((db, MemBackend::with_contents(data, clients)))
}

/// Encodes a client record (see the crate docs for the layout).
pub fn encode_record(rec: &ClientRecord) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + rec.reply.iter().map(|r| 4 + r.len()).sum::<usize>());
    out.extend_from_slice(&rec.req_id.to_be_bytes());
    out.extend_from_slice(&rec.digest.to_be_bytes());
    out.extend_from_slice(&(rec.reply.len() as u32).to_be_bytes());
    for r in &rec.reply {
        out.extend_from_slice(&(r.len() as u32).to_be_bytes());
        out.extend_from_slice(r);
    }
    if let Some(p) = rec.from {
        out.extend_from_slice(&p.0);
    }
    out
}

/// Decodes a client record; `None` if the bytes are not one.
pub fn decode_record(mut b: &[u8]) -> Option<ClientRecord> {
    fn take<'a>(b: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        if b.len() < n {
            return None;
        }
        let (head, tail) = b.split_at(n);
        *b = tail;
        Some(head)
    }
    let u32_of = |s: &[u8]| u32::from_be_bytes(s.try_into().expect("4 bytes"));
    let req_id = u32_of(take(&mut b, 4)?) as i32;
    let digest = u64::from_be_bytes(take(&mut b, 8)?.try_into().expect("8 bytes"));
    let n = u32_of(take(&mut b, 4)?) as usize;
    let mut reply = Vec::with_capacity(n.min(256));
    for _ in 0..n {
        let len = u32_of(take(&mut b, 4)?) as usize;
        reply.push(take(&mut b, len)?.to_vec());
    }
    let from = match b.len() {
        0 => None,
        18 => Some(Peer(b.try_into().expect("18 bytes"))),
        _ => return None,
    };
    Some(ClientRecord { req_id, digest, reply, from })
}

impl RedbBackend {
    /// [`Backend::commit`], with `decision` appended to [`DECISIONS`] when
    /// the log is on.
    fn commit_logged(
        &mut self,
        writes: &[(Key, Value)],
        cl_id: u32,
        record: &ClientRecord,
        decision: Option<&Decision>,
    ) -> Result<(), BackendError> {
        if self.db.is_none() {
            self.reopen()?;
        }
        let db = self.db.as_ref().expect("open");
        let logged = self.next_decision.zip(decision);
        if let Err(e) = RedbBackend::try_commit(db, writes, cl_id, record, logged) {
            // redb refuses everything after an I/O error until the file is
            // reopened; whether this commit reached the disk is decided then.
            self.db = None;
            self.last_reopen = Some(Instant::now());
            return Err(e);
        }
        if logged.is_some() {
            self.next_decision = self.next_decision.map(|n| n.saturating_add(1));
        }
        // Durable: now the mirror may show it.
        self.mirror.commit(writes, cl_id, record)
    }
}

impl Backend for RedbBackend {
    fn get(&self, key: Key) -> Value {
        self.mirror.get(key)
    }

    fn commit(&mut self, writes: &[(Key, Value)], cl_id: u32, record: &ClientRecord) -> Result<(), BackendError> {
        self.commit_logged(writes, cl_id, record, None)
    }

    fn commit_decision(
        &mut self,
        writes: &[(Key, Value)],
        cl_id: u32,
        record: &ClientRecord,
        decision: &Decision,
    ) -> Result<(), BackendError> {
        self.commit_logged(writes, cl_id, record, Some(decision))
    }

    fn client(&self, cl_id: u32) -> Option<ClientRecord> {
        self.mirror.client(cl_id)
    }

    fn reset(&mut self, cl_id: u32, record: &ClientRecord) -> Result<(), BackendError> {
        if self.db.is_none() {
            self.reopen()?;
        }
        let db = self.db.as_ref().expect("open");
        let done = (|| {
            let mut w = db.begin_write().map_err(|e| err("begin write", e))?;
            w.set_durability(Durability::Immediate).map_err(|e| err("set durability", e))?;
            w.delete_table(DATA).map_err(|e| err("delete table data", e))?;
            w.delete_table(CLIENTS).map_err(|e| err("delete table clients", e))?;
            {
                w.open_table(DATA).map_err(|e| err("open table data", e))?;
                let mut c = w.open_table(CLIENTS).map_err(|e| err("open table clients", e))?;
                c.insert(cl_id, seal_record(cl_id, record).as_slice()).map_err(|e| err("write client record", e))?;
            }
            w.commit().map_err(|e| err("commit", e))
        })();
        if let Err(e) = done {
            self.db = None;
            self.last_reopen = Some(Instant::now());
            return Err(e);
        }
        self.mirror.reset(cl_id, record)
    }

    fn forget(&mut self, cl_id: u32) -> Result<(), BackendError> {
        if self.db.is_none() {
            self.reopen()?;
        }
        let db = self.db.as_ref().expect("open");
        let done = (|| {
            let mut w = db.begin_write().map_err(|e| err("begin write", e))?;
            w.set_durability(Durability::Immediate).map_err(|e| err("set durability", e))?;
            {
                let mut c = w.open_table(CLIENTS).map_err(|e| err("open table clients", e))?;
                c.remove(cl_id).map_err(|e| err("remove client record", e))?;
            }
            w.commit().map_err(|e| err("commit", e))
        })();
        if let Err(e) = done {
            self.db = None;
            self.last_reopen = Some(Instant::now());
            return Err(e);
        }
        self.mirror.forget(cl_id)
    }

    fn client_ids(&self) -> Vec<u32> {
        self.mirror.client_ids()
    }

    fn snapshot(&self) -> BTreeMap<Key, Value> {
        self.mirror.snapshot()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn temp_dir(tag: &str) -> PathBuf {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        std::env::temp_dir().join(format!("innet-storage-{tag}-{}-{nanos}", std::process::id()))
    }

    fn v(s: &str) -> Value {
        Value::from_str_padded(s).unwrap()
    }

    /// `innet store --record-decisions`: every decision is kept in the
    /// transaction that commits it, numbered on across a restart, and read
    /// back in order with the data (`innet chaos txn`'s checker input);
    /// without the flag nothing is kept.
    #[test]
    fn the_decision_log_keeps_every_decision_in_order_across_a_restart() {
        use innet_wire::txn::Status;
        let dir = temp_dir("decisions");
        let rec = |req_id| ClientRecord { req_id, digest: 1, reply: vec![], from: None };
        let d = |req_id, status, writes: Vec<(Key, Value)>| Decision {
            cl_id: 7,
            req_id,
            status,
            compares: vec![(1, Value::ZERO)],
            reads: vec![(2, v("r"))],
            writes,
        };
        let first = [d(1, Status::Ok, vec![(1, v("a"))]), d(2, Status::Abort, vec![])];
        {
            let mut b = RedbBackend::open(&dir).unwrap();
            b.commit_decision(&[(1, v("x"))], 7, &rec(0), &d(0, Status::Ok, vec![])).unwrap();
            let mut b = b.with_decision_log().unwrap();
            for x in &first {
                let writes = if x.status == Status::Ok { &x.writes[..] } else { &[] };
                b.commit_decision(writes, 7, &rec(x.req_id), x).unwrap();
            }
        }
        let last = d(3, Status::Ok, vec![(1, v("b"))]);
        {
            let mut b = RedbBackend::open(&dir).unwrap().with_decision_log().unwrap();
            b.commit_decision(&last.writes, 7, &rec(3), &last).unwrap();
        }
        let (log, data) = RedbBackend::read_decisions(&dir).unwrap();
        assert_eq!(log, vec![first[0].clone(), first[1].clone(), last], "the one before the log was on is not kept");
        assert_eq!(data.into_iter().collect::<Vec<_>>(), vec![(1, v("b"))]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn record_roundtrip_and_garbage() {
        let rec = ClientRecord { req_id: -7, digest: 42, reply: vec![vec![1, 2, 3], vec![], vec![9; 160]], from: None };
        assert_eq!(decode_record(&encode_record(&rec)), Some(rec.clone()));
        let b = encode_record(&rec);
        for n in 0..b.len() {
            assert_eq!(decode_record(&b[..n]), None, "prefix {n}");
        }
        let mut longer = b.clone();
        longer.push(0);
        assert_eq!(decode_record(&longer), None);
    }

    /// A value changed in a way redb's page checksums accept (written
    /// through redb) is still caught by the record's own checksum; so is a
    /// file without the format marker.
    #[test]
    fn a_record_failing_its_checksum_or_a_missing_marker_is_refused() {
        let dir = temp_dir("checksum");
        RedbBackend::open(&dir)
            .unwrap()
            .commit(&[(5, v("a"))], 1, &ClientRecord { req_id: 1, digest: 1, reply: vec![], from: None })
            .unwrap();
        let db = Database::create(dir.join(DB_FILE)).unwrap();
        let w = db.begin_write().unwrap();
        w.open_table(DATA).unwrap().insert(5, seal_value(5, &v("b"))).unwrap();
        w.open_table(DATA).unwrap().insert(6, seal_value(5, &v("b"))).unwrap(); // another key's checksum
        w.commit().unwrap();
        let w = db.begin_write().unwrap();
        w.open_table(DATA).unwrap().remove(5).unwrap();
        w.commit().unwrap();
        drop(db);
        let e = RedbBackend::open(&dir).unwrap_err().0;
        assert!(e.contains("key 6 fails its checksum") && e.contains("move it away"), "{e}");
        let db = Database::create(dir.join(DB_FILE)).unwrap();
        let w = db.begin_write().unwrap();
        w.open_table(DATA).unwrap().remove(6).unwrap();
        w.delete_table(META).unwrap();
        w.commit().unwrap();
        drop(db);
        let e = RedbBackend::open(&dir).unwrap_err().0;
        assert!(e.contains("no innet store format marker"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn reopen_after_drop_keeps_data_and_client_records() {
        let dir = temp_dir("reopen");
        let rec = ClientRecord { req_id: 3, digest: 1, reply: vec![vec![0x80, 1, 2]], from: None };
        {
            let mut b = RedbBackend::open(&dir).unwrap();
            assert_eq!(b.get(1), Value::ZERO);
            b.commit(&[(1, v("a")), (2, v("b"))], 7, &rec).unwrap();
            b.commit(&[(1, v("c"))], 8, &ClientRecord { req_id: 1, digest: 1, reply: vec![], from: None }).unwrap();
            // An abort: no writes, record only.
            b.commit(&[], 7, &ClientRecord { req_id: 4, digest: 1, reply: vec![vec![0x81]], from: None }).unwrap();
        }
        let b = RedbBackend::open(&dir).unwrap();
        assert_eq!(b.get(1), v("c"));
        assert_eq!(b.get(2), v("b"));
        assert_eq!(b.get(3), Value::ZERO);
        assert_eq!(b.client(7), Some(ClientRecord { req_id: 4, digest: 1, reply: vec![vec![0x81]], from: None }));
        assert_eq!(b.client(8), Some(ClientRecord { req_id: 1, digest: 1, reply: vec![], from: None }));
        assert_eq!(b.client(9), None);
        assert_eq!(b.snapshot().into_iter().collect::<Vec<_>>(), vec![(1, v("c")), (2, v("b"))]);
        drop(b);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_forgotten_client_record_stays_forgotten_after_reopen() {
        let dir = temp_dir("forget");
        {
            let mut b = RedbBackend::open(&dir).unwrap();
            for cl in [7, 8] {
                b.commit(&[(cl, v("a"))], cl, &ClientRecord { req_id: 1, digest: 1, reply: vec![], from: None })
                    .unwrap();
            }
            b.forget(7).unwrap();
            assert_eq!(b.client_ids(), vec![8]);
        }
        let b = RedbBackend::open(&dir).unwrap();
        assert_eq!((b.client(7), b.client_ids()), (None, vec![8]));
        assert_eq!(b.get(7), v("a"), "the data stays");
        drop(b);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
