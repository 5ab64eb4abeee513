//! The NetCRAQ format (Sagkriotis and Pezaros 2022, section III-A2): three
//! fields over UDP, network byte order. Roles, chain membership and the
//! tail's address live in the switches' tables, not in the packet.
//!
//! ```text
//!  0        1                 5                                   21
//! +--------+-----------------+-----------------------------------+
//! | kv_op  |  key (u32)      |  value (VALUE_LEN = 16 bytes)     |
//! +--------+-----------------+-----------------------------------+
//! ```
//!
//! The paper packs `kv_op` into 2 bits (20.25 bytes); we give it a byte so
//! that the fields stay byte-aligned for the BPF port, and use one more code
//! than the paper: `WRITE_REFUSED`, the explicit answer to a write a node
//! cannot store (its version slots are full, or the control plane paused
//! writes), where the paper drops the write silently. Bytes after the value
//! are ignored, as a P4 parser would.

use crate::bytes::{array, be32, byte, put, set};
pub use crate::txn::{Value, VALUE_LEN};

/// Bytes of a NetCRAQ packet.
pub const LEN: usize = 1 + 4 + VALUE_LEN;
/// UDP port our runtimes use for NetCRAQ.
pub const DEFAULT_PORT: u16 = 9201;

const _: () = assert!(LEN == 21);

/// Offsets of the fields (mirrored by `bpf/include/innet_netcraq.h`, checked in `crates/xdp`).
pub mod offset {
    pub const KV_OP: usize = 0;
    pub const KEY: usize = 1;
    pub const VALUE: usize = 5;
}

/// The object a request names: an index into every node's `objects_store`.
pub type Key = u32;

/// `kv_op` codes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
#[repr(u8)]
pub enum KvOp {
    /// Client request: "tell me the value of `key`" (value unused, zero).
    Read = 1,
    /// A node's answer to a READ: the value (clean, or the tail's latest).
    ReadReply = 2,
    /// Client request to the head: "set `key` to `value`"; nodes forward it
    /// towards the tail.
    Write = 3,
    /// Reserved for a write reply that is not an ACK; our tail answers the
    /// writer with the ACK itself (see `docs/chain.md`), clients accept both.
    WriteReply = 4,
    /// The tail's commit notice, multicast to the other nodes and to the
    /// writer: `value` is now the clean version of `key`.
    Ack = 5,
    /// A node did not store the write (version slots full, or writes paused
    /// by the control plane). Not in the paper, which drops it.
    WriteRefused = 6,
}

impl KvOp {
    pub const ALL: [KvOp; 6] =
        [KvOp::Read, KvOp::ReadReply, KvOp::Write, KvOp::WriteReply, KvOp::Ack, KvOp::WriteRefused];

    pub fn from_u8(b: u8) -> Option<KvOp> {
        let op = KvOp::ALL.into_iter().find(|op| *op as u8 == b);
        debug_assert!(op.is_none_or(|op| op as u8 == b));
        op
    }

    pub fn name(self) -> &'static str {
        debug_assert_eq!(KvOp::from_u8(self as u8), Some(self));
        match self {
            KvOp::Read => "READ",
            KvOp::ReadReply => "READ_REPLY",
            KvOp::Write => "WRITE",
            KvOp::WriteReply => "WRITE_REPLY",
            KvOp::Ack => "ACK",
            KvOp::WriteRefused => "WRITE_REFUSED",
        }
    }
}

/// Why bytes were rejected; each reason has a stable name for counters.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum DecodeError {
    /// Fewer than [`LEN`] bytes.
    Truncated,
    /// A `kv_op` outside 1..=6.
    UnknownOp,
}

impl DecodeError {
    pub const ALL: [DecodeError; 2] = [DecodeError::Truncated, DecodeError::UnknownOp];
    pub fn name(self) -> &'static str {
        debug_assert!(DecodeError::ALL.get(self.index()) == Some(&self), "ALL lists the reasons in order");
        match self {
            DecodeError::Truncated => "truncated",
            DecodeError::UnknownOp => "unknown_op",
        }
    }
}

decode_error_impls!(DecodeError);

fn validate(bytes: &[u8]) -> Result<KvOp, DecodeError> {
    if bytes.len() < LEN {
        return Err(DecodeError::Truncated);
    }
    byte(bytes, offset::KV_OP).and_then(KvOp::from_u8).ok_or(DecodeError::UnknownOp)
}

/// An owned, decoded message (end hosts).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct CraqMsg {
    pub op: KvOp,
    pub key: Key,
    pub value: Value,
}

impl CraqMsg {
    pub fn read(key: Key) -> CraqMsg {
        let msg = CraqMsg { op: KvOp::Read, key, value: Value::ZERO };
        debug_assert_eq!(CraqMsg::decode(&msg.encode()), Ok(msg));
        msg
    }
    pub fn write(key: Key, value: Value) -> CraqMsg {
        let msg = CraqMsg { op: KvOp::Write, key, value };
        debug_assert_eq!(CraqMsg::decode(&msg.encode()), Ok(msg));
        msg
    }

    pub fn decode(bytes: &[u8]) -> Result<CraqMsg, DecodeError> {
        let op = validate(bytes)?;
        debug_assert!(bytes.len() >= LEN, "validate refuses a shorter packet");
        match (be32(bytes, offset::KEY), array(bytes, offset::VALUE)) {
            (Some(key), Some(value)) => Ok(CraqMsg { op, key, value: Value(value) }),
            _ => Err(DecodeError::Truncated),
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(LEN);
        out.push(self.op as u8);
        out.extend_from_slice(&self.key.to_be_bytes());
        out.extend_from_slice(&self.value.0);
        debug_assert_eq!(out.len(), LEN);
        out
    }
}

/// A validated in-place view for data-plane programs.
pub struct CraqPacket<'a> {
    buf: &'a mut [u8],
}

impl<'a> CraqPacket<'a> {
    pub fn parse(buf: &'a mut [u8]) -> Result<CraqPacket<'a>, DecodeError> {
        validate(buf)?;
        let packet = CraqPacket { buf };
        debug_assert!(packet.valid());
        Ok(packet)
    }
    /// The view's invariant: the buffer still validates (rewrites in
    /// place never break it).
    fn valid(&self) -> bool {
        validate(self.buf).is_ok()
    }
    // `parse` validated the buffer: the defaults below are never taken.
    pub fn op(&self) -> KvOp {
        debug_assert!(self.valid());
        byte(self.buf, offset::KV_OP).and_then(KvOp::from_u8).unwrap_or(KvOp::Read)
    }
    pub fn set_op(&mut self, op: KvOp) {
        set(self.buf, offset::KV_OP, op as u8);
        debug_assert_eq!(self.op(), op);
    }
    pub fn key(&self) -> Key {
        debug_assert!(self.valid());
        be32(self.buf, offset::KEY).unwrap_or_default()
    }
    pub fn value(&self) -> Value {
        debug_assert!(self.valid());
        array(self.buf, offset::VALUE).map_or(Value::ZERO, Value)
    }
    pub fn set_value(&mut self, v: Value) {
        put(self.buf, offset::VALUE, &v.0);
        debug_assert_eq!(self.value(), v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_in_place_view_agree() {
        let m = CraqMsg { op: KvOp::Ack, key: 0xdead_beef, value: Value::from_counter(42) };
        let mut b = m.encode();
        assert_eq!(b.len(), LEN);
        assert_eq!(CraqMsg::decode(&b), Ok(m));
        let mut p = CraqPacket::parse(&mut b).unwrap();
        assert_eq!((p.op(), p.key(), p.value()), (m.op, m.key, m.value));
        p.set_op(KvOp::ReadReply);
        p.set_value(Value::ZERO);
        assert_eq!(CraqMsg::decode(&b).unwrap().op, KvOp::ReadReply);
    }

    #[test]
    fn malformed_bytes_are_named() {
        assert_eq!(CraqMsg::decode(&[1; 20]), Err(DecodeError::Truncated));
        let mut b = CraqMsg::read(1).encode();
        b[0] = 0;
        assert_eq!(CraqMsg::decode(&b), Err(DecodeError::UnknownOp));
        b[0] = 7;
        assert_eq!(CraqPacket::parse(&mut b).err(), Some(DecodeError::UnknownOp));
    }
}
