//! The Paxos header of CAANS (Dang et al. 2016, section 3.1 "Paxos header",
//! Figure 5) in the layout of the public P4 reference, P4xos
//! (`usi-systems/p4xos-public`, `p4src/includes/paxos_headers.p4`). One UDP
//! payload, network byte order, no padding:
//!
//! ```text
//!  0        2                 6        8        10       12                16
//! +--------+-----------------+--------+--------+--------+-----------------+----------------------+
//! |msgtype |   inst (u32)    |  rnd   |  vrnd  | acptid | value_len (u32) | value (VALUE_LEN=32) |
//! +--------+-----------------+--------+--------+--------+-----------------+----------------------+
//! ```
//!
//! Every message has the same 48 bytes: a switch cannot grow or shrink the
//! packet it rewrites, so the header is the union of all Paxos messages
//! (section 3.1). Types 0-3 are P4xos's; types 4 and up are ours (the client
//! request the coordinator turns into a 2A, and control messages for log
//! trimming, failover and learner catch-up); see `docs/wire.md`.
//!
//! Values wider than [`VALUE_LEN`] are not carried in the header: an
//! application stores them elsewhere (e.g. in its own replicated blob store)
//! and submits a fixed-width reference (a digest); see `docs/paxos.md`.
//!
//! Two APIs, as for the transaction format: [`PaxosMsg`] is an owned,
//! decoded message for end hosts; [`PaxosPacket`] a validated in-place view
//! for data-plane programs.

use crate::bytes::{array, be16, be32, put};
use std::fmt;

/// Width of the value field in bytes (P4xos `VALUE_SIZE` 256 bits). Change
/// it here and only here.
pub const VALUE_LEN: usize = 32;
/// Bytes before the value.
pub const HEADER_LEN: usize = 16;
/// Every Paxos packet has exactly this many meaningful bytes; bytes after
/// them are ignored (a P4 parser stops there too).
pub const PACKET_LEN: usize = HEADER_LEN + VALUE_LEN;
/// UDP port of the data-plane roles (coordinator, acceptors); P4xos's
/// `ACCEPTOR_PORT` 0x8889.
pub const DATAPLANE_PORT: u16 = 0x8889;
/// UDP port of learners (P4xos's `LEARNER_PORT` 0x8890).
pub const LEARNER_PORT: u16 = 0x8890;

const _: () = assert!(PACKET_LEN == 48);

/// Byte offsets of the fields (mirrored by `bpf/include/innet_paxos.h`, checked in `crates/xdp`).
pub mod offset {
    pub const MSGTYPE: usize = 0;
    pub const INST: usize = 2;
    pub const RND: usize = 6;
    pub const VRND: usize = 8;
    pub const ACPTID: usize = 10;
    pub const VALUE_LEN: usize = 12;
    pub const VALUE: usize = 16;
}

/// Message types. 0-3 are P4xos's `PAXOS_1A`..`PAXOS_2B`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
#[repr(u16)]
pub enum MsgType {
    /// Prepare: `inst`, `rnd` (a recovering learner or backup coordinator).
    Phase1A = 0,
    /// Promise: the 1A's `rnd`, the acceptor's `vrnd` and value for `inst`.
    Phase1B = 1,
    /// Accept: `inst`, `rnd`, value.
    Phase2A = 2,
    /// Vote (accepted): `inst`, `vrnd` = `rnd` = the round voted in, value.
    Phase2B = 3,
    /// A proposer's value for the coordinator; `inst` and rounds are zero.
    Request = 4,
    /// A learner (`acptid` = learner id) has checkpointed every instance
    /// below `inst`: acceptors may reuse the slots below the trim floor.
    Trim = 5,
    /// Backup coordinator's liveness probe; the coordinator reflects it.
    Heartbeat = 6,
    /// The backup coordinator tells proposers it now coordinates (`rnd`).
    Takeover = 7,
    /// A learner asks its peers for the decided value of `inst`.
    Catchup = 8,
    /// A learner's answer to [`MsgType::Catchup`]: `inst` was decided with
    /// this value (Paxos's "Success" message).
    Decided = 9,
    /// The coordinator's answer to a learner's TRIM: `inst` is the next
    /// instance it will hand out (learners recover lost instances below it).
    Window = 10,
}

impl MsgType {
    pub const ALL: [MsgType; 11] = [
        MsgType::Phase1A,
        MsgType::Phase1B,
        MsgType::Phase2A,
        MsgType::Phase2B,
        MsgType::Request,
        MsgType::Trim,
        MsgType::Heartbeat,
        MsgType::Takeover,
        MsgType::Catchup,
        MsgType::Decided,
        MsgType::Window,
    ];
    pub fn from_u16(v: u16) -> Option<MsgType> {
        let t = MsgType::ALL.get(v as usize).copied();
        debug_assert!(t.is_none_or(|t| t as u16 == v), "MsgType::ALL lists the types in code order");
        t
    }
    /// The name used in golden vectors, docs and counters.
    pub fn name(self) -> &'static str {
        debug_assert_eq!(MsgType::from_u16(self as u16), Some(self));
        match self {
            MsgType::Phase1A => "PHASE_1A",
            MsgType::Phase1B => "PHASE_1B",
            MsgType::Phase2A => "PHASE_2A",
            MsgType::Phase2B => "PHASE_2B",
            MsgType::Request => "REQUEST",
            MsgType::Trim => "TRIM",
            MsgType::Heartbeat => "HEARTBEAT",
            MsgType::Takeover => "TAKEOVER",
            MsgType::Catchup => "CATCHUP",
            MsgType::Decided => "DECIDED",
            MsgType::Window => "WINDOW",
        }
    }
}

/// A fixed-width value and how many of its bytes are meaningful.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Value {
    pub len: u32,
    pub bytes: [u8; VALUE_LEN],
}

impl Value {
    pub const EMPTY: Value = Value { len: 0, bytes: [0; VALUE_LEN] };

    /// `None` if `b` is wider than [`VALUE_LEN`].
    pub fn new(b: &[u8]) -> Option<Value> {
        if b.len() > VALUE_LEN {
            return None;
        }
        let mut bytes = [0u8; VALUE_LEN];
        for (d, s) in bytes.iter_mut().zip(b) {
            *d = *s;
        }
        let value = Value { len: b.len() as u32, bytes };
        debug_assert_eq!(value.as_slice(), b, "a value reads back as written");
        Some(value)
    }

    /// The meaningful bytes.
    pub fn as_slice(&self) -> &[u8] {
        // Decoders refuse a longer `len` (`value_too_long`); the `min`
        // keeps a hand-built value from reading past the field.
        debug_assert!(self.len as usize <= VALUE_LEN, "value_len {} above VALUE_LEN", self.len);
        self.bytes.get(..(self.len as usize).min(VALUE_LEN)).unwrap_or_default()
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x")?;
        for b in self.as_slice() {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// Why bytes were rejected. Each reason has a stable name for counters.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum DecodeError {
    /// Shorter than [`PACKET_LEN`] (48 bytes).
    Truncated,
    /// `msgtype` outside 0..=10.
    UnknownMsgType,
    /// `value_len` above [`VALUE_LEN`].
    ValueTooLong,
}

impl DecodeError {
    pub const ALL: [DecodeError; 3] = [DecodeError::Truncated, DecodeError::UnknownMsgType, DecodeError::ValueTooLong];
    pub fn name(self) -> &'static str {
        debug_assert!(DecodeError::ALL.get(self.index()) == Some(&self), "ALL lists the reasons in order");
        match self {
            DecodeError::Truncated => "truncated",
            DecodeError::UnknownMsgType => "unknown_msgtype",
            DecodeError::ValueTooLong => "value_too_long",
        }
    }
}

decode_error_impls!(DecodeError);

/// An owned, decoded Paxos message.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct PaxosMsg {
    pub msgtype: MsgType,
    pub inst: u32,
    pub rnd: u16,
    pub vrnd: u16,
    pub acptid: u16,
    pub value: Value,
}

impl PaxosMsg {
    /// A message of `msgtype` with every other field zero.
    pub fn new(msgtype: MsgType) -> PaxosMsg {
        debug_assert!(MsgType::ALL.contains(&msgtype));
        PaxosMsg { msgtype, inst: 0, rnd: 0, vrnd: 0, acptid: 0, value: Value::EMPTY }
    }

    pub fn decode(bytes: &[u8]) -> Result<PaxosMsg, DecodeError> {
        let msgtype = validate(bytes)?;
        let (Some(inst), Some(rnd), Some(vrnd), Some(acptid), Some(len), Some(value)) = (
            be32(bytes, offset::INST),
            be16(bytes, offset::RND),
            be16(bytes, offset::VRND),
            be16(bytes, offset::ACPTID),
            be32(bytes, offset::VALUE_LEN),
            array(bytes, offset::VALUE),
        ) else {
            // `validate` checked the length.
            return Err(DecodeError::Truncated);
        };
        debug_assert!(len as usize <= VALUE_LEN, "validate refuses a longer value");
        Ok(PaxosMsg { msgtype, inst, rnd, vrnd, acptid, value: Value { len, bytes: value } })
    }

    pub fn encode(&self) -> Vec<u8> {
        assert!(self.value.len as usize <= VALUE_LEN, "value_len above VALUE_LEN");
        let mut out = Vec::with_capacity(PACKET_LEN);
        out.extend_from_slice(&(self.msgtype as u16).to_be_bytes());
        out.extend_from_slice(&self.inst.to_be_bytes());
        out.extend_from_slice(&self.rnd.to_be_bytes());
        out.extend_from_slice(&self.vrnd.to_be_bytes());
        out.extend_from_slice(&self.acptid.to_be_bytes());
        out.extend_from_slice(&self.value.len.to_be_bytes());
        out.extend_from_slice(&self.value.bytes);
        debug_assert_eq!(out.len(), PACKET_LEN);
        out
    }
}

/// Checks everything a parser must check, without allocating.
pub fn validate(bytes: &[u8]) -> Result<MsgType, DecodeError> {
    if bytes.len() < PACKET_LEN {
        return Err(DecodeError::Truncated);
    }
    let t = be16(bytes, offset::MSGTYPE).and_then(MsgType::from_u16).ok_or(DecodeError::UnknownMsgType)?;
    if be32(bytes, offset::VALUE_LEN).is_none_or(|len| len as usize > VALUE_LEN) {
        return Err(DecodeError::ValueTooLong);
    }
    debug_assert!(bytes.len() >= PACKET_LEN);
    Ok(t)
}

/// A validated view of a Paxos packet in a mutable buffer, for data-plane
/// programs: read fields, rewrite them in place, never resize.
pub struct PaxosPacket<'a> {
    buf: &'a mut [u8],
}

impl<'a> PaxosPacket<'a> {
    pub fn parse(buf: &'a mut [u8]) -> Result<PaxosPacket<'a>, DecodeError> {
        validate(buf)?;
        let packet = PaxosPacket { buf };
        debug_assert!(packet.valid());
        Ok(packet)
    }
    /// The view's invariant: the buffer still validates (rewrites in
    /// place never break it).
    fn valid(&self) -> bool {
        validate(self.buf).is_ok()
    }
    // `parse` validated the buffer: the defaults below are never taken.
    pub fn msgtype(&self) -> MsgType {
        debug_assert!(self.valid());
        be16(self.buf, offset::MSGTYPE).and_then(MsgType::from_u16).unwrap_or(MsgType::Phase1A)
    }
    pub fn set_msgtype(&mut self, t: MsgType) {
        put(self.buf, offset::MSGTYPE, &(t as u16).to_be_bytes());
        debug_assert_eq!(self.msgtype(), t);
    }
    pub fn inst(&self) -> u32 {
        debug_assert!(self.valid());
        be32(self.buf, offset::INST).unwrap_or_default()
    }
    pub fn set_inst(&mut self, v: u32) {
        put(self.buf, offset::INST, &v.to_be_bytes());
        debug_assert_eq!(self.inst(), v);
    }
    pub fn rnd(&self) -> u16 {
        debug_assert!(self.valid());
        be16(self.buf, offset::RND).unwrap_or_default()
    }
    pub fn set_rnd(&mut self, v: u16) {
        put(self.buf, offset::RND, &v.to_be_bytes());
        debug_assert_eq!(self.rnd(), v);
    }
    pub fn vrnd(&self) -> u16 {
        debug_assert!(self.valid());
        be16(self.buf, offset::VRND).unwrap_or_default()
    }
    pub fn set_vrnd(&mut self, v: u16) {
        put(self.buf, offset::VRND, &v.to_be_bytes());
        debug_assert_eq!(self.vrnd(), v);
    }
    pub fn acptid(&self) -> u16 {
        debug_assert!(self.valid());
        be16(self.buf, offset::ACPTID).unwrap_or_default()
    }
    pub fn set_acptid(&mut self, v: u16) {
        put(self.buf, offset::ACPTID, &v.to_be_bytes());
        debug_assert_eq!(self.acptid(), v);
    }
    pub fn value(&self) -> Value {
        debug_assert!(self.valid());
        Value {
            len: be32(self.buf, offset::VALUE_LEN).unwrap_or_default(),
            bytes: array(self.buf, offset::VALUE).unwrap_or_default(),
        }
    }
    pub fn set_value(&mut self, v: &Value) {
        assert!(v.len as usize <= VALUE_LEN, "value_len above VALUE_LEN");
        put(self.buf, offset::VALUE_LEN, &v.len.to_be_bytes());
        put(self.buf, offset::VALUE, &v.bytes);
        debug_assert_eq!(self.value(), *v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> PaxosMsg {
        PaxosMsg {
            msgtype: MsgType::Phase2B,
            inst: 7,
            rnd: 1,
            vrnd: 1,
            acptid: 2,
            value: Value::new(b"hello").unwrap(),
        }
    }

    #[test]
    fn roundtrip_and_size() {
        let b = sample().encode();
        assert_eq!(b.len(), PACKET_LEN);
        assert_eq!(PaxosMsg::decode(&b), Ok(sample()));
    }

    #[test]
    fn every_prefix_is_truncated_and_trailing_bytes_are_ignored() {
        let mut b = sample().encode();
        for n in 0..b.len() {
            assert_eq!(PaxosMsg::decode(&b[..n]), Err(DecodeError::Truncated));
        }
        b.extend_from_slice(&[0xff; 5]);
        assert_eq!(PaxosMsg::decode(&b), Ok(sample()));
    }

    #[test]
    fn malformed_reasons() {
        let mut b = sample().encode();
        b[offset::MSGTYPE + 1] = 11;
        assert_eq!(PaxosMsg::decode(&b), Err(DecodeError::UnknownMsgType));
        b[offset::MSGTYPE + 1] = 3;
        b[offset::VALUE_LEN + 3] = 33;
        assert_eq!(PaxosMsg::decode(&b), Err(DecodeError::ValueTooLong));
    }

    #[test]
    fn in_place_rewrite() {
        let mut b = sample().encode();
        let mut p = PaxosPacket::parse(&mut b).unwrap();
        p.set_msgtype(MsgType::Phase1B);
        p.set_inst(9);
        p.set_rnd(258);
        p.set_vrnd(1);
        p.set_acptid(3);
        p.set_value(&Value::new(b"x").unwrap());
        let m = PaxosMsg::decode(&b).unwrap();
        assert_eq!((m.msgtype, m.inst, m.rnd, m.vrnd, m.acptid), (MsgType::Phase1B, 9, 258, 1, 3));
        assert_eq!(m.value.as_slice(), b"x");
    }
}
