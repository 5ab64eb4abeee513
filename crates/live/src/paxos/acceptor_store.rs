//! Persistent acceptors (CAANS section 3.1): an acceptor that restarts must
//! come back with every promise and vote it answered with, or it could
//! vote against a promise it gave (a 2A of a round it promised to refuse)
//! or report "never voted" to a new coordinator's phase 1 for an instance
//! it voted in. The acceptor state machine does no I/O
//! ([`Acceptor::changed_slot`]); [`LiveAcceptor`] wraps it for the live
//! runtime and, given a directory, writes the slot a packet changed to a
//! file before the packet's answer can leave (without one it is the
//! acceptor in memory, as before).
//!
//! The file (`acceptor.ring` in the acceptor's directory) mirrors the ring:
//! a 64-byte header (magic, version, acceptor id, slots) and one 64-byte
//! record per slot at `64 * (1 + slot)`, so a write is one `pwrite` of one
//! record, aligned so that it never straddles a 512-byte sector:
//!
//! ```text
//! record: valid u8 | 0 0 0 | inst u32 | rnd u16 | vrnd u16 | value_len u32 | value [32] | 0.. | fnv1a64 of bytes 0..56 (u64, at 56)
//! ```
//!
//! An all-zero record is a slot never written. When the record is synced
//! is the `--fsync` choice ([`Fsync`]): `none` leaves it to the kernel (a
//! process crash loses nothing, a power loss may), `always` syncs each
//! record before its answer is queued, and `batch` syncs once per received
//! batch, before the batch's answers are sent (the runtimes call
//! [`innet_core::DataPlane::before_send`] there). A record whose checksum
//! fails, or that no acceptor could have written, makes
//! [`LiveAcceptor::open`] refuse the directory, naming the slot: a
//! restart must not go on with a forgotten promise. A failed write stops
//! the acceptor answering (fail-stop, counted `store_errors`): an answer
//! must never leave for a state that is not on disk.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use innet_core::{Counters, DataPlane, Verdict};
use innet_paxos::acceptor::{Acceptor, AcceptorConfig};
use innet_wire::paxos::{Value, VALUE_LEN};

/// The file in an acceptor's directory that holds its ring.
pub const RING_FILE: &str = "acceptor.ring";
/// Bytes per record (and of the header).
pub const RECORD_LEN: usize = 64;
const MAGIC: &[u8; 8] = b"INNETACC";
const VERSION: u32 = 1;
const CHECKSUM_AT: usize = 56;
const _: () = assert!(16 + VALUE_LEN <= CHECKSUM_AT && CHECKSUM_AT + 8 == RECORD_LEN);
const _: () = assert!(512 % RECORD_LEN == 0, "a record never straddles a sector");

/// When an acceptor's (or a replica's) writes are synced to the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fsync {
    /// Never: the kernel writes back when it likes (a process crash loses
    /// nothing, a power loss may).
    None,
    /// Once per received batch, before the batch's answers are sent.
    Batch,
    /// After every write, before its answer is queued.
    Always,
}

impl Fsync {
    pub const ALL: [Fsync; 3] = [Fsync::None, Fsync::Batch, Fsync::Always];
    pub fn name(self) -> &'static str {
        match self {
            Fsync::None => "none",
            Fsync::Batch => "batch",
            Fsync::Always => "always",
        }
    }
}

impl std::str::FromStr for Fsync {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Fsync::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| format!("`{s}` is not an fsync policy: say none, batch or always"))
    }
}

/// Where an acceptor keeps its ring and when it syncs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AcceptorStore {
    pub dir: PathBuf,
    pub fsync: Fsync,
}

#[derive(Clone, Copy, Debug, Default)]
struct StoreStats {
    writes: u64,
    syncs: u64,
    errors: u64,
    refused_after_error: u64,
}

/// The live runtime's acceptor: in memory, or ([`LiveAcceptor::open`])
/// with its promises and votes written to its directory before its
/// answers leave.
pub struct LiveAcceptor {
    acceptor: Acceptor,
    ring: Option<RingFile>,
}

/// An acceptor's ring on disk.
struct RingFile {
    file: File,
    fsync: Fsync,
    /// Written since the last sync (`batch`).
    unsynced: bool,
    /// A write or sync failed: the acceptor answers nothing more.
    failed: bool,
    stats: StoreStats,
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

fn header(config: &AcceptorConfig) -> [u8; RECORD_LEN] {
    let mut h = [0u8; RECORD_LEN];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_be_bytes());
    h[12..14].copy_from_slice(&config.id.to_be_bytes());
    h[16..20].copy_from_slice(&(config.slots as u32).to_be_bytes());
    let sum = fnv1a64(&h[..CHECKSUM_AT]);
    h[CHECKSUM_AT..].copy_from_slice(&sum.to_be_bytes());
    h
}

/// Slot `(inst, rnd, vrnd, value)` as a record.
fn record(inst: u32, rnd: u16, vrnd: u16, value: &Value) -> [u8; RECORD_LEN] {
    let mut r = [0u8; RECORD_LEN];
    r[0] = 1;
    r[4..8].copy_from_slice(&inst.to_be_bytes());
    r[8..10].copy_from_slice(&rnd.to_be_bytes());
    r[10..12].copy_from_slice(&vrnd.to_be_bytes());
    r[12..16].copy_from_slice(&value.len.to_be_bytes());
    r[16..16 + VALUE_LEN].copy_from_slice(&value.bytes);
    let sum = fnv1a64(&r[..CHECKSUM_AT]);
    r[CHECKSUM_AT..].copy_from_slice(&sum.to_be_bytes());
    r
}

/// A record back as a slot; `Ok(None)` for a slot never written.
fn parse_record(r: &[u8]) -> Result<Option<(u32, u16, u16, Value)>, &'static str> {
    debug_assert_eq!(r.len(), RECORD_LEN);
    if r.iter().all(|&b| b == 0) {
        return Ok(None);
    }
    let sum = u64::from_be_bytes(r[CHECKSUM_AT..].try_into().expect("8 bytes"));
    if sum != fnv1a64(&r[..CHECKSUM_AT]) {
        return Err("checksum does not match (a torn or damaged record)");
    }
    if r[0] != 1 || r[1..4] != [0, 0, 0] {
        return Err("not a slot record");
    }
    let be16 = |i: usize| u16::from_be_bytes([r[i], r[i + 1]]);
    let be32 = |i: usize| u32::from_be_bytes(r[i..i + 4].try_into().expect("4 bytes"));
    let len = be32(12);
    if len as usize > VALUE_LEN {
        return Err("value longer than a Paxos value");
    }
    let mut bytes = [0u8; VALUE_LEN];
    bytes.copy_from_slice(&r[16..16 + VALUE_LEN]);
    Ok(Some((be32(4), be16(8), be16(10), Value { len, bytes })))
}

fn damaged(path: &Path, what: String) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{}: {what}; the acceptor refuses to start from it (it could forget a promise)", path.display()),
    )
}

impl LiveAcceptor {
    /// An acceptor that keeps its state in memory only (it must not be
    /// restarted: section 3.1).
    pub fn in_memory(config: AcceptorConfig) -> LiveAcceptor {
        LiveAcceptor { acceptor: Acceptor::new(config), ring: None }
    }

    /// [`LiveAcceptor::open`] with `store`, or in memory without.
    pub fn new(config: AcceptorConfig, store: Option<&AcceptorStore>) -> io::Result<LiveAcceptor> {
        match store {
            Some(s) => LiveAcceptor::open(config, s),
            None => Ok(LiveAcceptor::in_memory(config)),
        }
    }

    /// Opens (or creates) the ring in `store.dir` for an acceptor of
    /// `config`, and the acceptor with every stored promise and vote. A
    /// directory of another acceptor or ring size, or a damaged record, is
    /// refused with what is wrong.
    pub fn open(config: AcceptorConfig, store: &AcceptorStore) -> io::Result<LiveAcceptor> {
        std::fs::create_dir_all(&store.dir)?;
        let path = store.dir.join(RING_FILE);
        if !path.exists() {
            create(&path, &config)?;
        }
        let mut file = OpenOptions::new().read(true).write(true).open(&path)?;
        let mut bytes = vec![];
        file.read_to_end(&mut bytes)?;
        let want = header(&config);
        if bytes.len() < RECORD_LEN || bytes[..8] != *MAGIC {
            return Err(damaged(&path, "not an acceptor ring (no header)".into()));
        }
        if bytes[..RECORD_LEN] != want {
            let id = u16::from_be_bytes([bytes[12], bytes[13]]);
            let slots = u32::from_be_bytes(bytes[16..20].try_into().expect("4 bytes"));
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} holds the ring of acceptor {id} with {slots} slots (or a damaged header); this is acceptor {} \
                     with {} slots: give it its own directory",
                    path.display(),
                    config.id,
                    config.slots
                ),
            ));
        }
        if bytes.len() != RECORD_LEN * (1 + config.slots) {
            return Err(damaged(&path, format!("{} bytes, not {}", bytes.len(), RECORD_LEN * (1 + config.slots))));
        }
        let mut acceptor = Acceptor::new(config);
        for (i, r) in bytes[RECORD_LEN..].chunks_exact(RECORD_LEN).enumerate() {
            let slot = parse_record(r).map_err(|e| damaged(&path, format!("slot {i}: {e}")))?;
            if let Some((inst, rnd, vrnd, value)) = slot {
                acceptor
                    .restore_slot(i, inst, rnd, vrnd, value)
                    .map_err(|e| damaged(&path, format!("slot {i}: {e}")))?;
            }
        }
        let ring = RingFile { file, fsync: store.fsync, unsynced: false, failed: false, stats: StoreStats::default() };
        Ok(LiveAcceptor { acceptor, ring: Some(ring) })
    }

    /// The acceptor (its ring as restored and as it changes).
    pub fn acceptor(&self) -> &Acceptor {
        &self.acceptor
    }
}

impl RingFile {
    fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()?;
        self.stats.syncs += 1;
        self.unsynced = false;
        Ok(())
    }

    /// Writes slot `i` of `acceptor` (and syncs it under `always`).
    fn store(&mut self, acceptor: &Acceptor, i: usize) -> io::Result<()> {
        let (inst, rnd, vrnd, value) = acceptor.slot(i).expect("a changed slot holds an instance");
        self.file.write_all_at(&record(inst, rnd, vrnd, &value), (RECORD_LEN * (1 + i)) as u64)?;
        self.stats.writes += 1;
        self.unsynced = true;
        if self.fsync == Fsync::Always {
            self.sync()?;
        }
        Ok(())
    }

    fn fail(&mut self, e: io::Error) {
        tracing::error!(error = %e, "acceptor store failed: answering nothing more");
        self.stats.errors += 1;
        self.failed = true;
    }
}

/// A new ring file: written beside and renamed into place, so a crash while
/// creating leaves no half-written ring.
fn create(path: &Path, config: &AcceptorConfig) -> io::Result<()> {
    let tmp = path.with_extension("new");
    let mut f = File::create(&tmp)?;
    f.write_all(&header(config))?;
    f.write_all(&vec![0u8; RECORD_LEN * config.slots])?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

impl DataPlane for LiveAcceptor {
    fn process(&mut self, packet: &mut [u8]) -> Verdict {
        let Some(ring) = self.ring.as_mut() else { return self.acceptor.process(packet) };
        if ring.failed {
            ring.stats.refused_after_error += 1;
            return Verdict::Drop;
        }
        let verdict = self.acceptor.process(packet);
        if let Some(i) = self.acceptor.changed_slot() {
            if let Err(e) = ring.store(&self.acceptor, i) {
                ring.fail(e);
                return Verdict::Drop;
            }
        }
        verdict
    }

    fn before_send(&mut self) {
        let Some(ring) = self.ring.as_mut() else { return };
        if ring.fsync == Fsync::Batch && ring.unsynced && !ring.failed {
            if let Err(e) = ring.sync() {
                // The batch's answers are queued already and go out (only a
                // power loss could then lose what they say); nothing after.
                ring.fail(e);
            }
        }
    }
}

impl Counters for LiveAcceptor {
    fn counters(&self) -> Vec<(&'static str, u64)> {
        let mut c = self.acceptor.counters();
        let Some(ring) = self.ring.as_ref() else { return c };
        let s = &ring.stats;
        c.extend([
            ("store_writes", s.writes),
            ("store_syncs", s.syncs),
            ("store_errors", s.errors),
            ("store_refused_after_error", s.refused_after_error),
        ]);
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_damage_is_found() {
        let v = Value::new(b"a value").unwrap();
        let r = record(1030, 0x0210, 0x0102, &v);
        assert_eq!(parse_record(&r), Ok(Some((1030, 0x0210, 0x0102, v))));
        assert_eq!(parse_record(&[0; RECORD_LEN]), Ok(None));
        for i in 0..RECORD_LEN {
            let mut bad = r;
            bad[i] ^= 0x40;
            assert!(parse_record(&bad).is_err(), "a flipped bit in byte {i} is found");
        }
    }
}
