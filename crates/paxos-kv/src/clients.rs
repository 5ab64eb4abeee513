//! The replicas' client table: exactly-once for network clients (issue 24).
//!
//! A client numbers its requests 1, 2, ... and sends one at a time; it
//! resends a request (same `(client, seq)`) to the next replica when the
//! answer does not come. So one request may be ordered several times, by
//! several replicas' proposers. Every replica keeps, per client, the last
//! sequence number it applied and that request's answer, updated in log
//! order as part of the command's LevelDB batch (replicated state, like the
//! data). Applying request `seq` of `client`:
//!
//! * `seq` above the last: applied, recorded, answered;
//! * `seq` equal to the last: not applied again; a put, delete or CAS is
//!   answered with the recorded status, a get is read again here (still
//!   inside the client's wait, so still linearizable);
//! * `seq` below the last: the client has its answer already; ignored;
//! * an unknown client whose `seq` is not 1: its entry was evicted, so an
//!   earlier copy may have been applied: not applied, answered EXPIRED
//!   (the Raft dissertation's expired sessions, section 6.3).
//!
//! Bound: [`CLIENTS_MAX`] entries; when a new client comes with the table
//! full, the entry used least recently in the log (earliest instance, then
//! lowest id) is evicted: a rule every replica applies alike.

use std::collections::{BTreeSet, HashMap};

/// Clients the table remembers.
pub const CLIENTS_MAX: usize = 1 << 16;

/// The recorded answer of a get: read again on a repeat.
pub const READ: u8 = 0xff;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub seq: u64,
    /// The reply status of a put, delete or CAS (`innet_wire::kv::status`),
    /// or [`READ`].
    pub status: u8,
    /// The instance it was last used in.
    pub used: u32,
}

impl Entry {
    pub const LEN: usize = 13;

    pub fn encode(&self) -> [u8; Entry::LEN] {
        let mut b = [0u8; Entry::LEN];
        b[..8].copy_from_slice(&self.seq.to_be_bytes());
        b[8] = self.status;
        b[9..].copy_from_slice(&self.used.to_be_bytes());
        debug_assert!(b[8] == self.status && b[..8] == self.seq.to_be_bytes(), "an entry encodes as itself");
        b
    }

    pub fn decode(b: &[u8]) -> Option<Entry> {
        let b: &[u8; Entry::LEN] = b.try_into().ok()?;
        let seq = u64::from_be_bytes(b[..8].try_into().ok()?);
        let used = u32::from_be_bytes(b[9..].try_into().ok()?);
        let e = Entry { seq, status: b[8], used };
        debug_assert_eq!(&e.encode(), b, "a decoded entry re-encodes to its bytes");
        Some(e)
    }
}

/// What to do with request `seq` of a client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Apply,
    /// Applied before: answer with this status (or read again: [`READ`]).
    Repeat(u8),
    Stale,
    Expired,
}

#[derive(Clone, Debug, Default)]
pub struct ClientTable {
    entries: HashMap<u64, Entry>,
    by_use: BTreeSet<(u32, u64)>,
    pub evicted: u64,
}

impl ClientTable {
    pub fn len(&self) -> usize {
        debug_assert!(self.holds());
        self.entries.len()
    }

    /// The table's invariants: within [`CLIENTS_MAX`], and the use index
    /// names every entry once, at the instance the entry records.
    fn holds(&self) -> bool {
        self.entries.len() <= CLIENTS_MAX && self.entries.len() == self.by_use.len()
    }

    pub fn is_empty(&self) -> bool {
        debug_assert_eq!(self.entries.is_empty(), self.by_use.is_empty());
        self.entries.is_empty()
    }

    pub fn get(&self, client: u64) -> Option<&Entry> {
        let e = self.entries.get(&client);
        debug_assert!(e.is_none_or(|e| self.by_use.contains(&(e.used, client))), "an entry is indexed by its use");
        e
    }

    pub fn verdict(&self, client: u64, seq: u64) -> Verdict {
        let v = match self.entries.get(&client) {
            None if seq == 1 => Verdict::Apply,
            None => Verdict::Expired,
            Some(e) if seq > e.seq => Verdict::Apply,
            Some(e) if seq == e.seq => Verdict::Repeat(e.status),
            Some(_) => Verdict::Stale,
        };
        // A request is applied at most once: never again once recorded.
        debug_assert!(v != Verdict::Apply || self.entries.get(&client).is_none_or(|e| seq > e.seq));
        v
    }

    /// Records `entry` for `client`; returns the client evicted to make
    /// room, if any.
    pub fn record(&mut self, client: u64, entry: Entry) -> Option<u64> {
        let mut evicted = None;
        if let Some(old) = self.entries.get(&client) {
            self.by_use.remove(&(old.used, client));
        } else if self.entries.len() >= CLIENTS_MAX {
            if let Some((_, c)) = self.by_use.pop_first() {
                self.entries.remove(&c);
                self.evicted += 1;
                evicted = Some(c);
            }
        }
        self.entries.insert(client, entry);
        self.by_use.insert((entry.used, client));
        debug_assert!(self.holds());
        debug_assert!(evicted != Some(client), "a client is never evicted for itself");
        evicted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_and_eviction_order() {
        let mut t = ClientTable::default();
        assert_eq!(t.verdict(7, 1), Verdict::Apply);
        assert_eq!(t.verdict(7, 2), Verdict::Expired, "unknown and not its first request");
        t.record(7, Entry { seq: 3, status: 0, used: 10 });
        assert_eq!(t.verdict(7, 4), Verdict::Apply);
        assert_eq!(t.verdict(7, 3), Verdict::Repeat(0));
        assert_eq!(t.verdict(7, 2), Verdict::Stale);
        let e = Entry { seq: u64::MAX, status: READ, used: u32::MAX };
        assert_eq!(Entry::decode(&e.encode()), Some(e));
        for c in 0..CLIENTS_MAX as u64 - 1 {
            t.record(100 + c, Entry { seq: 1, status: 0, used: 20 + c as u32 });
        }
        t.record(7, Entry { seq: 4, status: 0, used: 1 << 30 });
        assert_eq!(t.len(), CLIENTS_MAX);
        // Full: the least recently used (client 100, instance 20) goes.
        assert_eq!(t.record(5, Entry { seq: 1, status: 0, used: (1 << 30) + 1 }), Some(100));
        assert_eq!(t.verdict(100, 2), Verdict::Expired);
        assert_eq!(t.verdict(7, 4), Verdict::Repeat(0));
    }
}
