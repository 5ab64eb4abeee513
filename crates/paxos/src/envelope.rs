//! The value envelope the proposer library writes into the 32-byte value:
//! `proposer u32 | request u32 | payload (<= 24 bytes)`. The data plane never
//! reads it; learners use `(proposer, request)` to filter duplicate
//! deliveries caused by resubmission (section 3.1, "Failure handling").
//! Proposer 0 marks the no-op that `recover` proposes.
//!
//! **Packed values** (off by default, [`crate::ProposerConfig::pack`]): a
//! proposer may put several small client values into one instance's value,
//! `proposer u32 | PACKED | first_request u32 | (len u8 | payload)+`, the
//! `k`th entry being request `first_request + k`. The flag is the request
//! field's top bit ([`PACKED`]), which the proposer library never writes
//! in an unpacked envelope (request ids stay below [`REQUEST_MAX`]), so an
//! unpacked value is never read as a packed one whatever its payload bytes
//! are. The data plane never looks; the learner unpacks ([`Contents::of`])
//! and delivers each entry as the unpacked envelope it stands for.
//!
//! **Proposer ids belong to senders** (issue 21). Learners filter
//! duplicates by `(proposer, request)`, which the sender writes, so a
//! sender that could write another proposer's id could make learners drop
//! that proposer's values as duplicates of its own. A proposer id is
//! therefore `block << PROPOSER_INCARNATION_BITS | incarnation`: the
//! deployment gives deployment proposer `index` block `index + 1`
//! ([`proposer_id`]) and every sender it does not name the shared block
//! [`OUTSIDE_BLOCK`]; the coordinators admit a REQUEST only if its
//! envelope's block is the sending address's (`crate::trust::check`). The
//! incarnation is the process's: drawn afresh per process where request
//! ids restart (the live runtime), so a restarted proposer's values are not
//! taken for an earlier process's.

use innet_wire::paxos::{Value, VALUE_LEN};

/// Bytes of the envelope before the payload.
pub const ENVELOPE_HEADER_LEN: usize = 8;
/// Widest application payload one value carries.
pub const PAYLOAD_MAX: usize = VALUE_LEN - ENVELOPE_HEADER_LEN;
/// The proposer id that marks a no-op.
pub const NOOP_PROPOSER: u32 = 0;
/// The request field's flag that marks a packed value.
pub const PACKED: u32 = 1 << 31;
/// Request ids a proposer writes are below this (the flag's bit is free).
pub const REQUEST_MAX: u32 = PACKED;
/// Bytes one packed entry costs besides its payload (its length).
pub const PACK_ENTRY_HEADER_LEN: usize = 1;
/// Most client values one packed value holds (empty payloads).
pub const PACK_MAX: usize = PAYLOAD_MAX / PACK_ENTRY_HEADER_LEN;
/// The low bits of a proposer id: its process's incarnation.
pub const PROPOSER_INCARNATION_BITS: u32 = 20;
/// Incarnations of one proposer block.
pub const INCARNATIONS: u32 = 1 << PROPOSER_INCARNATION_BITS;
/// Proposer blocks: [`OUTSIDE_BLOCK`], then one per deployment proposer.
pub const PROPOSER_BLOCKS: u32 = 1 << (32 - PROPOSER_INCARNATION_BITS);
/// Most proposers a deployment names (a block each).
pub const PROPOSERS_MAX: usize = PROPOSER_BLOCKS as usize - 1;
/// The block of every sender the deployment does not name.
pub const OUTSIDE_BLOCK: u16 = 0;

/// The block of proposer id `id`.
pub const fn proposer_block(id: u32) -> u16 {
    (id >> PROPOSER_INCARNATION_BITS) as u16
}

/// The id of deployment proposer `index` in its `incarnation`. Panics
/// beyond [`PROPOSERS_MAX`] proposers or [`INCARNATIONS`].
pub fn proposer_id(index: usize, incarnation: u32) -> u32 {
    assert!(index < PROPOSERS_MAX, "proposer {index}: a deployment has at most {PROPOSERS_MAX}");
    assert!(incarnation < INCARNATIONS, "incarnation {incarnation} beyond {INCARNATIONS}");
    let id = ((index as u32 + 1) << PROPOSER_INCARNATION_BITS) | incarnation;
    debug_assert!(proposer_block(id) as usize == index + 1 && proposer_block(id) != OUTSIDE_BLOCK);
    id
}

/// The proposer id of a REQUEST's (or any message's) value, if it is an
/// envelope: at least [`ENVELOPE_HEADER_LEN`] bytes. Reads the wire bytes
/// of `packet` without decoding the rest; `None` for short packets.
pub fn proposer_of_packet(packet: &[u8]) -> Option<u32> {
    use innet_wire::paxos::offset;
    let word = |at: usize| Some(u32::from_be_bytes(packet.get(at..at + 4)?.try_into().ok()?));
    (word(offset::VALUE_LEN)? >= ENVELOPE_HEADER_LEN as u32).then_some(())?;
    let proposer = word(offset::VALUE);
    debug_assert!(proposer.is_none() || packet.len() >= offset::VALUE + 4);
    proposer
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct Envelope {
    pub proposer: u32,
    pub request: u32,
    pub payload_len: u8,
    pub payload: [u8; PAYLOAD_MAX],
}

impl Envelope {
    /// `None` if `payload` is wider than [`PAYLOAD_MAX`].
    pub fn new(proposer: u32, request: u32, payload: &[u8]) -> Option<Envelope> {
        if payload.len() > PAYLOAD_MAX {
            return None;
        }
        let mut p = [0u8; PAYLOAD_MAX];
        p[..payload.len()].copy_from_slice(payload);
        let e = Envelope { proposer, request, payload_len: payload.len() as u8, payload: p };
        debug_assert_eq!(e.payload(), payload);
        Some(e)
    }

    /// The no-op carrying the application's no-op bytes.
    pub fn noop(payload: &[u8]) -> Option<Envelope> {
        let e = Envelope::new(NOOP_PROPOSER, 0, payload);
        debug_assert!(e.is_none_or(|e| e.is_noop()));
        e
    }

    pub fn is_noop(&self) -> bool {
        debug_assert!(self.payload_len as usize <= PAYLOAD_MAX);
        self.proposer == NOOP_PROPOSER
    }

    pub fn payload(&self) -> &[u8] {
        debug_assert!(self.payload_len as usize <= PAYLOAD_MAX, "Envelope::new bounds the payload");
        &self.payload[..self.payload_len as usize]
    }

    pub fn to_value(&self) -> Value {
        let mut b = [0u8; ENVELOPE_HEADER_LEN + PAYLOAD_MAX];
        b[0..4].copy_from_slice(&self.proposer.to_be_bytes());
        b[4..8].copy_from_slice(&self.request.to_be_bytes());
        b[8..8 + self.payload_len as usize].copy_from_slice(self.payload());
        let v = Value::new(&b[..ENVELOPE_HEADER_LEN + self.payload_len as usize]).expect("fits by construction");
        debug_assert_eq!(Envelope::from_value(&v).as_ref(), Some(self), "an envelope reads back as written");
        v
    }

    /// `None` for values no proposer library wrote (shorter than the header).
    pub fn from_value(v: &Value) -> Option<Envelope> {
        let s = v.as_slice();
        if s.len() < ENVELOPE_HEADER_LEN {
            return None;
        }
        let proposer = u32::from_be_bytes(s[0..4].try_into().expect("sized"));
        let request = u32::from_be_bytes(s[4..8].try_into().expect("sized"));
        // A value holds at most VALUE_LEN bytes: its payload always fits.
        const _: () = assert!(ENVELOPE_HEADER_LEN + PAYLOAD_MAX == VALUE_LEN);
        Envelope::new(proposer, request, &s[ENVELOPE_HEADER_LEN..])
    }
}

/// Builds a packed value: entries are added while they fit.
#[derive(Clone, Debug)]
pub struct PackBuilder {
    proposer: u32,
    first_request: u32,
    count: usize,
    len: usize,
    bytes: [u8; VALUE_LEN],
}

impl PackBuilder {
    /// A pack of `proposer`'s requests from `first_request` on.
    pub fn new(proposer: u32, first_request: u32) -> PackBuilder {
        assert!(proposer != NOOP_PROPOSER && first_request < REQUEST_MAX);
        let mut bytes = [0u8; VALUE_LEN];
        bytes[0..4].copy_from_slice(&proposer.to_be_bytes());
        bytes[4..8].copy_from_slice(&(first_request | PACKED).to_be_bytes());
        PackBuilder { proposer, first_request, count: 0, len: ENVELOPE_HEADER_LEN, bytes }
    }

    /// Whether an entry of `payload_len` bytes still fits.
    pub fn fits(&self, payload_len: usize) -> bool {
        debug_assert!(self.len <= VALUE_LEN && self.count <= PACK_MAX);
        self.len + PACK_ENTRY_HEADER_LEN + payload_len <= VALUE_LEN
            && self.first_request as u64 + (self.count as u64) < REQUEST_MAX as u64
    }

    /// Adds request `first_request + count()`; false (nothing added) if it
    /// does not fit.
    pub fn push(&mut self, payload: &[u8]) -> bool {
        if !self.fits(payload.len()) {
            return false;
        }
        self.bytes[self.len] = payload.len() as u8;
        self.bytes[self.len + 1..self.len + 1 + payload.len()].copy_from_slice(payload);
        self.len += PACK_ENTRY_HEADER_LEN + payload.len();
        self.count += 1;
        debug_assert!(self.len <= VALUE_LEN && self.count <= PACK_MAX, "a pack past its value");
        true
    }

    pub fn count(&self) -> usize {
        debug_assert!(self.count <= PACK_MAX);
        self.count
    }

    pub fn proposer(&self) -> u32 {
        debug_assert_ne!(self.proposer, NOOP_PROPOSER);
        self.proposer
    }

    pub fn first_request(&self) -> u32 {
        debug_assert!(self.first_request < REQUEST_MAX);
        self.first_request
    }

    /// The value (at least one entry must have been pushed).
    pub fn to_value(&self) -> Value {
        assert!(self.count >= 1, "a packed value holds at least one entry");
        let v = Value::new(&self.bytes[..self.len]).expect("fits by construction");
        debug_assert!(
            matches!(Contents::of(&v), Contents::Packed(es) if es.len() == self.count),
            "a pack reads back with its entries"
        );
        v
    }
}

/// What a value holds, as the learner reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Contents {
    /// One client value (or the no-op).
    Single(Envelope),
    /// Several client values of one proposer, requests consecutive from the
    /// first entry's.
    Packed(Vec<Envelope>),
    /// Flagged as packed but not well formed (no entries, an entry past the
    /// end, the no-op's proposer, request ids past [`REQUEST_MAX`]):
    /// counted by the learner and delivered as nothing.
    Malformed,
    /// Not written by the proposer library (shorter than the header).
    Foreign,
}

impl Contents {
    /// Reads `v`; every length and id is range-checked, nothing panics.
    pub fn of(v: &Value) -> Contents {
        let Some(e) = Envelope::from_value(v) else { return Contents::Foreign };
        if e.request & PACKED == 0 {
            return Contents::Single(e);
        }
        let first = e.request & !PACKED;
        if e.proposer == NOOP_PROPOSER {
            return Contents::Malformed;
        }
        let mut rest = e.payload();
        let mut entries = vec![];
        while let Some((&len, tail)) = rest.split_first() {
            let len = len as usize;
            if len > tail.len() {
                return Contents::Malformed;
            }
            let request = first as u64 + entries.len() as u64;
            if request >= REQUEST_MAX as u64 {
                return Contents::Malformed;
            }
            let Some(entry) = Envelope::new(e.proposer, request as u32, &tail[..len]) else {
                return Contents::Malformed;
            };
            entries.push(entry);
            rest = &tail[len..];
        }
        if entries.is_empty() {
            return Contents::Malformed;
        }
        debug_assert!(entries.len() <= PACK_MAX && entries.iter().all(|x| x.proposer == e.proposer));
        Contents::Packed(entries)
    }

    /// `(proposer, first request, how many)` of a client-value carrying
    /// value: what a proposer matches its outstanding requests against.
    pub fn requests(&self) -> Option<(u32, u32, usize)> {
        debug_assert!(!matches!(self, Contents::Packed(es) if es.is_empty()), "Contents::of refuses an empty pack");
        match self {
            Contents::Single(e) if !e.is_noop() => Some((e.proposer, e.request, 1)),
            Contents::Packed(es) => Some((es[0].proposer, es[0].request, es.len())),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proposer_ids_carry_their_block() {
        assert_eq!(proposer_id(0, 0), 1 << PROPOSER_INCARNATION_BITS);
        assert_eq!(proposer_block(proposer_id(4094, INCARNATIONS - 1)), 4095);
        assert_eq!(proposer_block(proposer_id(2, 77)), 3);
        assert_eq!(proposer_block(INCARNATIONS - 1), OUTSIDE_BLOCK);
        let mut m = innet_wire::paxos::PaxosMsg::new(innet_wire::paxos::MsgType::Request);
        m.value = Envelope::new(proposer_id(1, 9), 4, b"x").unwrap().to_value();
        assert_eq!(proposer_of_packet(&m.encode()), Some(proposer_id(1, 9)));
        m.value = Value::new(b"short").unwrap();
        assert_eq!(proposer_of_packet(&m.encode()), None, "not an envelope");
        assert_eq!(proposer_of_packet(&[0; 10]), None);
    }

    #[test]
    fn roundtrip_and_noop() {
        let e = Envelope::new(3, 9, b"abc").unwrap();
        let v = e.to_value();
        assert_eq!(v.len, 11);
        assert_eq!(Envelope::from_value(&v), Some(e));
        assert!(Envelope::noop(b"").unwrap().is_noop());
        assert!(Envelope::new(1, 1, &[0; PAYLOAD_MAX + 1]).is_none());
        assert_eq!(Envelope::from_value(&Value::new(b"short").unwrap()), None);
    }

    #[test]
    fn packed_values_round_trip() {
        let mut b = PackBuilder::new(7, 100);
        let payloads: Vec<Vec<u8>> = vec![b"ab".to_vec(), vec![], b"xyz".to_vec()];
        for p in &payloads {
            assert!(b.push(p));
        }
        let v = b.to_value();
        let want: Vec<Envelope> =
            payloads.iter().enumerate().map(|(k, p)| Envelope::new(7, 100 + k as u32, p).unwrap()).collect();
        assert_eq!(Contents::of(&v), Contents::Packed(want));
        assert_eq!(Contents::of(&v).requests(), Some((7, 100, 3)));
        // Fill to the byte: 2-byte payloads, 3 bytes each, 8 in 24 bytes.
        let mut b = PackBuilder::new(7, 1);
        while b.push(b"zz") {}
        assert_eq!((b.count(), b.to_value().len as usize), (8, VALUE_LEN));
        assert!(!b.fits(0));
        // Empty payloads: PACK_MAX of them.
        let mut b = PackBuilder::new(7, 1);
        while b.push(b"") {}
        assert_eq!(b.count(), PACK_MAX);
    }

    /// An unpacked value whose payload looks like a packed value's bytes
    /// is still itself: the flag lives in the header the library writes.
    #[test]
    fn an_unpacked_value_that_looks_packed_is_itself() {
        let mut b = PackBuilder::new(7, 1);
        b.push(b"a");
        let packed = b.to_value();
        // The packed value's whole byte string as an ordinary payload.
        let looks = Envelope::new(7, 5, packed.as_slice()).unwrap();
        assert_eq!(Contents::of(&looks.to_value()), Contents::Single(looks));
        let looks = Envelope::new(7, 5, &packed.as_slice()[ENVELOPE_HEADER_LEN..]).unwrap();
        assert_eq!(Contents::of(&looks.to_value()), Contents::Single(looks));
    }

    #[test]
    fn malformed_packed_values_are_refused() {
        let raw = |proposer: u32, request: u32, rest: &[u8]| {
            let mut b = proposer.to_be_bytes().to_vec();
            b.extend_from_slice(&request.to_be_bytes());
            b.extend_from_slice(rest);
            Value::new(&b).unwrap()
        };
        assert_eq!(Contents::of(&raw(7, PACKED | 1, &[])), Contents::Malformed, "no entries");
        assert_eq!(Contents::of(&raw(7, PACKED | 1, &[3, b'a'])), Contents::Malformed, "past the end");
        assert_eq!(Contents::of(&raw(7, PACKED | 1, &[1, b'a', 2])), Contents::Malformed, "second past the end");
        assert_eq!(Contents::of(&raw(0, PACKED | 1, &[1, b'a'])), Contents::Malformed, "the no-op's proposer");
        assert_eq!(Contents::of(&raw(7, u32::MAX, &[0, 0])), Contents::Malformed, "requests past REQUEST_MAX");
        assert!(matches!(Contents::of(&raw(7, u32::MAX, &[0])), Contents::Packed(e) if e.len() == 1));
        assert_eq!(Contents::of(&Value::new(b"short").unwrap()), Contents::Foreign);
    }
}
