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
//! `data` (`u32` key -> 16-byte value) and `clients` (`u32` client id ->
//! encoded [`ClientRecord`]: `req_id` i32 BE, request digest u64 BE, fragment
//! count u32 BE, then per
//! fragment a u32 BE length and the reply bytes).

#![forbid(unsafe_code)]

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use innet_txn::store::{Backend, BackendError, ClientRecord, MemBackend};
use innet_wire::txn::{Key, Value, VALUE_LEN};
use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition};

const DATA: TableDefinition<u32, [u8; VALUE_LEN]> = TableDefinition::new("data");
const CLIENTS: TableDefinition<u32, &[u8]> = TableDefinition::new("clients");

/// The database file's name inside the data directory.
pub const DB_FILE: &str = "innet-store.redb";

/// A durable backend on redb.
pub struct RedbBackend {
    db: Database,
    path: PathBuf,
    /// What the database holds, for reads; updated only after a durable commit.
    mirror: MemBackend,
}

impl std::fmt::Debug for RedbBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedbBackend").field("path", &self.path).field("keys", &self.mirror.len()).finish()
    }
}

fn err(context: &str, e: impl std::fmt::Display) -> BackendError {
    BackendError(format!("{context}: {e}"))
}

impl RedbBackend {
    /// Opens (creating if needed) the store in directory `dir`, creating the
    /// directory too.
    pub fn open(dir: impl AsRef<Path>) -> Result<RedbBackend, BackendError> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir).map_err(|e| err(&format!("cannot create data directory {}", dir.display()), e))?;
        let path = dir.join(DB_FILE);
        let db = Database::create(&path).map_err(|e| err(&format!("cannot open database {}", path.display()), e))?;
        // Create the tables so that a fresh database can be read.
        let w = db.begin_write().map_err(|e| err("begin write", e))?;
        {
            w.open_table(DATA).map_err(|e| err("open table data", e))?;
            w.open_table(CLIENTS).map_err(|e| err("open table clients", e))?;
        }
        w.commit().map_err(|e| err("commit", e))?;
        let mut data = BTreeMap::new();
        let mut clients = HashMap::new();
        let r = db.begin_read().map_err(|e| err("begin read", e))?;
        {
            let t = r.open_table(DATA).map_err(|e| err("open table data", e))?;
            for row in t.iter().map_err(|e| err("scan data", e))? {
                let (k, v) = row.map_err(|e| err("scan data", e))?;
                data.insert(k.value(), Value(v.value()));
            }
            let t = r.open_table(CLIENTS).map_err(|e| err("open table clients", e))?;
            for row in t.iter().map_err(|e| err("scan clients", e))? {
                let (k, v) = row.map_err(|e| err("scan clients", e))?;
                let rec = decode_record(v.value())
                    .ok_or_else(|| BackendError(format!("corrupt client record for client {}", k.value())))?;
                clients.insert(k.value(), rec);
            }
        }
        Ok(RedbBackend { db, path, mirror: MemBackend::with_contents(data, clients) })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }
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
    if !b.is_empty() {
        return None;
    }
    Some(ClientRecord { req_id, digest, reply })
}

impl Backend for RedbBackend {
    fn get(&self, key: Key) -> Value {
        self.mirror.get(key)
    }

    fn commit(&mut self, writes: &[(Key, Value)], cl_id: u32, record: &ClientRecord) -> Result<(), BackendError> {
        let mut w = self.db.begin_write().map_err(|e| err("begin write", e))?;
        w.set_durability(Durability::Immediate).map_err(|e| err("set durability", e))?;
        {
            let mut t = w.open_table(DATA).map_err(|e| err("open table data", e))?;
            for (k, v) in writes {
                t.insert(*k, v.0).map_err(|e| err("write data", e))?;
            }
            let mut c = w.open_table(CLIENTS).map_err(|e| err("open table clients", e))?;
            c.insert(cl_id, encode_record(record).as_slice()).map_err(|e| err("write client record", e))?;
        }
        w.commit().map_err(|e| err("commit", e))?;
        // Durable: now the mirror may show it.
        self.mirror.commit(writes, cl_id, record)
    }

    fn client(&self, cl_id: u32) -> Option<ClientRecord> {
        self.mirror.client(cl_id)
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

    #[test]
    fn record_roundtrip_and_garbage() {
        let rec = ClientRecord { req_id: -7, digest: 42, reply: vec![vec![1, 2, 3], vec![], vec![9; 160]] };
        assert_eq!(decode_record(&encode_record(&rec)), Some(rec.clone()));
        let b = encode_record(&rec);
        for n in 0..b.len() {
            assert_eq!(decode_record(&b[..n]), None, "prefix {n}");
        }
        let mut longer = b.clone();
        longer.push(0);
        assert_eq!(decode_record(&longer), None);
    }

    #[test]
    fn reopen_after_drop_keeps_data_and_client_records() {
        let dir = temp_dir("reopen");
        let rec = ClientRecord { req_id: 3, digest: 1, reply: vec![vec![0x80, 1, 2]] };
        {
            let mut b = RedbBackend::open(&dir).unwrap();
            assert_eq!(b.get(1), Value::ZERO);
            b.commit(&[(1, v("a")), (2, v("b"))], 7, &rec).unwrap();
            b.commit(&[(1, v("c"))], 8, &ClientRecord { req_id: 1, digest: 1, reply: vec![] }).unwrap();
            // An abort: no writes, record only.
            b.commit(&[], 7, &ClientRecord { req_id: 4, digest: 1, reply: vec![vec![0x81]] }).unwrap();
        }
        let b = RedbBackend::open(&dir).unwrap();
        assert_eq!(b.get(1), v("c"));
        assert_eq!(b.get(2), v("b"));
        assert_eq!(b.get(3), Value::ZERO);
        assert_eq!(b.client(7), Some(ClientRecord { req_id: 4, digest: 1, reply: vec![vec![0x81]] }));
        assert_eq!(b.client(8), Some(ClientRecord { req_id: 1, digest: 1, reply: vec![] }));
        assert_eq!(b.client(9), None);
        assert_eq!(b.snapshot().into_iter().collect::<Vec<_>>(), vec![(1, v("c")), (2, v("b"))]);
        drop(b);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
