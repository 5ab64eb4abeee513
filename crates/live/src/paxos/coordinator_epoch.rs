//! Failback for the live *process* coordinator (issue 24 item 3; CAANS
//! section 3.1, "Failure handling"): `innet up paxos --node coordinator
//! --data-plane process --dir D` counts its starts and the highest epoch
//! its rounds used in `D/coordinator/coordinator.epoch`.
//!
//! * The first start runs the ordinary data-plane coordinator (round 1,
//!   acceptors pre-initialised to it, no phase 1).
//! * Every later start runs the backup's state machine
//!   ([`innet_paxos::backup::Mode::Restarted`]) under the coordinator's
//!   issuer, from the epoch above the highest stored: it runs phase 1 for
//!   every instance it uses, announces TAKEOVER and so takes the role back
//!   from the backup. A round of the coordinator's issuer is never used
//!   twice: [`RestartedCoordinator`] writes a new highest epoch to the file
//!   before any packet of that epoch leaves (the state machine does no
//!   I/O; its `epoch_high()` names the highest epoch it used).
//!
//! The file is 32 bytes, written beside and renamed into place, then
//! synced (with its directory): it changes only at a start and when a
//! round rises, never per packet.
//!
//! ```text
//! "INNETCEP" | version u32 | starts u32 | epoch_high u32 | 0 u32 | fnv1a64 of bytes 0..24 (u64, at 24)
//! ```
//!
//! A file of another size, magic or version, or whose checksum fails, is
//! refused with a message naming it: a coordinator that forgot the epochs
//! it used could reuse a round with another value. Rule for an operator:
//! if the acceptors' directories are new too (a new deployment), remove
//! the coordinator's directory; otherwise do not start the coordinator
//! (the backup goes on coordinating). A failed write stops the restarted
//! coordinator sending (fail-stop, counted `epoch_store_errors`).

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use innet_core::{Host, Outbox, Time};
use innet_paxos::BackupCoordinator;

/// The file in `DIR/coordinator` that holds the starts and epochs.
pub const EPOCH_FILE: &str = "coordinator.epoch";
/// The file's length.
pub const EPOCH_FILE_LEN: usize = 32;
const MAGIC: &[u8; 8] = b"INNETCEP";
const VERSION: u32 = 1;
const CHECKSUM_AT: usize = 24;
const _: () = assert!(CHECKSUM_AT + 8 == EPOCH_FILE_LEN);

fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// What `coordinator.epoch` holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Epochs {
    /// Starts of the coordinator, this one included.
    pub starts: u32,
    /// The highest epoch any round of its incarnations used (0: only the
    /// pre-initialised round 1).
    pub epoch_high: u8,
}

impl Epochs {
    fn encode(self) -> [u8; EPOCH_FILE_LEN] {
        let mut b = [0u8; EPOCH_FILE_LEN];
        b[..8].copy_from_slice(MAGIC);
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&self.starts.to_le_bytes());
        b[16..20].copy_from_slice(&u32::from(self.epoch_high).to_le_bytes());
        let sum = fnv1a64(&b[..CHECKSUM_AT]);
        b[CHECKSUM_AT..].copy_from_slice(&sum.to_le_bytes());
        b
    }

    fn decode(b: &[u8], path: &Path) -> io::Result<Epochs> {
        let bad = |what: String| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{}: {what}. It holds the epochs the coordinator's rounds used; without them a restart could \
                     reuse a round. If the acceptors' directories are new too, remove {}; otherwise leave the \
                     coordinator down (the backup coordinates)",
                    path.display(),
                    path.parent().unwrap_or(path).display()
                ),
            )
        };
        if b.len() != EPOCH_FILE_LEN {
            return Err(bad(format!("{} bytes, not {EPOCH_FILE_LEN} (torn or not ours)", b.len())));
        }
        if &b[..8] != MAGIC {
            return Err(bad("not a coordinator epoch file (wrong magic)".into()));
        }
        let word = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
        if word(8) != VERSION {
            return Err(bad(format!("version {}, this innet reads {VERSION}", word(8))));
        }
        let sum = u64::from_le_bytes(b[CHECKSUM_AT..].try_into().expect("8 bytes"));
        if sum != fnv1a64(&b[..CHECKSUM_AT]) {
            return Err(bad("checksum mismatch (torn or corrupt)".into()));
        }
        let high = word(16);
        if high > u32::from(u8::MAX) || word(20) != 0 {
            return Err(bad(format!("epoch {high} is beyond the 8-bit epochs of a round")));
        }
        Ok(Epochs { starts: word(12), epoch_high: high as u8 })
    }
}

/// `coordinator.epoch`, open for updates.
#[derive(Debug)]
pub struct EpochFile {
    path: PathBuf,
    pub epochs: Epochs,
}

impl EpochFile {
    /// Opens (creating it and `dir/coordinator` if missing) the file of a
    /// deployment directory `dir` and counts this start in it (written
    /// and synced before this returns).
    pub fn start(dir: &Path) -> io::Result<EpochFile> {
        let cdir = dir.join("coordinator");
        fs::create_dir_all(&cdir).map_err(|e| annotate(e, &cdir, "create"))?;
        let path = cdir.join(EPOCH_FILE);
        let mut epochs = match fs::read(&path) {
            Ok(b) => Epochs::decode(&b, &path)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Epochs::default(),
            Err(e) => return Err(annotate(e, &path, "read")),
        };
        epochs.starts = epochs.starts.checked_add(1).ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidData, format!("{}: the start count is exhausted", path.display()))
        })?;
        let mut f = EpochFile { path, epochs };
        f.write()?;
        Ok(f)
    }

    /// Whether this start is a restart (runs failback).
    pub fn is_restart(&self) -> bool {
        self.epochs.starts > 1
    }

    /// The first epoch this incarnation may use (above every stored one);
    /// `None` when epochs are used up.
    pub fn first_epoch(&self) -> Option<u8> {
        self.epochs.epoch_high.checked_add(1)
    }

    /// Records that a round of epoch `high` is about to be used.
    pub fn record(&mut self, high: u8) -> io::Result<()> {
        if high <= self.epochs.epoch_high {
            return Ok(());
        }
        let before = self.epochs;
        self.epochs.epoch_high = high;
        self.write().inspect_err(|_| self.epochs = before)
    }

    fn write(&mut self) -> io::Result<()> {
        let tmp = self.path.with_extension("epoch.new");
        let mut f = File::create(&tmp).map_err(|e| annotate(e, &tmp, "create"))?;
        f.write_all(&self.epochs.encode()).map_err(|e| annotate(e, &tmp, "write"))?;
        f.sync_all().map_err(|e| annotate(e, &tmp, "sync"))?;
        fs::rename(&tmp, &self.path).map_err(|e| annotate(e, &self.path, "rename into"))?;
        if let Some(d) = self.path.parent() {
            File::open(d).and_then(|d| d.sync_all()).map_err(|e| annotate(e, d, "sync"))?;
        }
        Ok(())
    }
}

fn annotate(e: io::Error, path: &Path, what: &str) -> io::Error {
    io::Error::new(e.kind(), format!("cannot {what} {}: {e}", path.display()))
}

/// A restarted coordinator for the live runtime: the state machine, and
/// its epoch file written before a packet of a new epoch leaves.
pub struct RestartedCoordinator {
    pub machine: BackupCoordinator,
    file: EpochFile,
    /// A write failed: nothing more is sent.
    failed: bool,
    pub epoch_store_errors: u64,
}

impl RestartedCoordinator {
    pub fn new(machine: BackupCoordinator, file: EpochFile) -> RestartedCoordinator {
        RestartedCoordinator { machine, file, failed: false, epoch_store_errors: 0 }
    }

    /// Runs `f` on the machine into a local outbox; passes its packets on
    /// only once the epochs they use are on disk.
    fn step(&mut self, out: &mut Outbox, f: impl FnOnce(&mut BackupCoordinator, &mut Outbox)) {
        let mut mine = Outbox::new();
        f(&mut self.machine, &mut mine);
        if self.failed {
            return;
        }
        if let Err(e) = self.file.record(self.machine.epoch_high()) {
            tracing::error!("{e}: the restarted coordinator stops sending");
            self.failed = true;
            self.epoch_store_errors += 1;
            return;
        }
        debug_assert!(self.file.epochs.epoch_high >= self.machine.epoch_high());
        out.sends.append(&mut mine.sends);
    }

    /// The epochs on disk.
    pub fn epochs(&self) -> Epochs {
        self.file.epochs
    }
}

impl Host for RestartedCoordinator {
    fn on_packet(&mut self, now: Time, packet: &[u8], out: &mut Outbox) {
        self.step(out, |m, o| m.on_packet(now, packet, o));
    }
    fn on_tick(&mut self, now: Time, out: &mut Outbox) {
        self.step(out, |m, o| m.on_tick(now, o));
    }
    fn next_tick(&self) -> Option<Time> {
        self.machine.next_tick()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("innet-coord-epoch-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn counts_starts_and_keeps_the_highest_epoch() {
        let d = dir("count");
        let f = EpochFile::start(&d).unwrap();
        assert_eq!((f.epochs.starts, f.is_restart(), f.first_epoch()), (1, false, Some(1)));
        let mut f = EpochFile::start(&d).unwrap();
        assert!(f.is_restart());
        f.record(7).unwrap();
        f.record(3).unwrap();
        let f = EpochFile::start(&d).unwrap();
        assert_eq!((f.epochs.starts, f.epochs.epoch_high, f.first_epoch()), (3, 7, Some(8)));
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_torn_or_corrupt_file_is_refused_naming_it() {
        let d = dir("corrupt");
        EpochFile::start(&d).unwrap();
        let path = d.join("coordinator").join(EPOCH_FILE);
        let mut b = fs::read(&path).unwrap();
        b[16] ^= 1;
        fs::write(&path, &b).unwrap();
        let e = EpochFile::start(&d).unwrap_err().to_string();
        assert!(e.contains("checksum") && e.contains(EPOCH_FILE), "{e}");
        fs::write(&path, &b[..20]).unwrap();
        let e = EpochFile::start(&d).unwrap_err().to_string();
        assert!(e.contains("20 bytes") && e.contains("remove"), "{e}");
        let _ = fs::remove_dir_all(&d);
    }
}
