//! The Gotthard / NOCC transaction format (Gotthard 2016, section 3.5 and
//! Figure 5; the public reference implementation's P4 `header.p4` and Python
//! `gotthard.py`). UDP payload, network byte order:
//!
//! ```text
//!  0        1                 5                 9        10       11       12       13
//! +--------+--------+--------+--------+--------+--------+--------+--------+
//! | flags  |  cl_id (u32)    | req_id (i32)    |frag_seq|frag_cnt| status | op_cnt |
//! +--------+-----------------+-----------------+--------+--------+--------+--------+
//! then op_cnt times (21 bytes each):
//! +---------+-----------+------------------------------+
//! | op_type | key (u32) | value (VALUE_LEN = 16 bytes) |
//! +---------+-----------+------------------------------+
//! flags: bit 7 msg_type (0 request, 1 response), bit 6 from_switch,
//!        bit 5 reset, bit 4 store_commit, bits 3..0 reserved (kept as sent).
//! ```
//!
//! A packet carries at most [`MAX_OPS_PER_PACKET`] ops; larger transactions are
//! split into fragments numbered `frag_seq = 1..=frag_cnt` (the reference P4
//! writes `frag_seq = frag_cnt = 1` into unfragmented replies). `frag_cnt` 0 is
//! accepted as "unfragmented" for clients that leave the fields zero.
//!
//! Two APIs: [`TxnMsg`] is an owned, decoded message for end hosts;
//! [`TxnPacket`] is a validated in-place view for data-plane programs that
//! rewrite the packet they hold (the switch never builds a new packet).

use std::fmt;

use crate::bytes::{array, be32, byte, put, set};

/// Bytes of the fixed header.
pub const HEADER_LEN: usize = 13;
/// Width of a value in bytes (the paper used 1,024 bits; we use 16 bytes as
/// the issue and the BPF port require). Change it here and only here.
pub const VALUE_LEN: usize = 16;
/// Bytes of one op: type, key, value.
pub const OP_LEN: usize = 1 + 4 + VALUE_LEN;
/// Most ops one packet carries. 7 keeps a packet at 160 bytes, well inside any
/// MTU and inside what a switch parser (or a BPF bounded loop) walks cheaply.
pub const MAX_OPS_PER_PACKET: usize = 7;
/// Largest valid packet.
pub const MAX_PACKET_LEN: usize = HEADER_LEN + MAX_OPS_PER_PACKET * OP_LEN;
/// Most fragments of one transaction (`frag_cnt` is a u8).
pub const MAX_FRAGMENTS: usize = u8::MAX as usize;
/// Most ops of one (fragmented) transaction.
pub const MAX_OPS_PER_TXN: usize = MAX_FRAGMENTS * MAX_OPS_PER_PACKET;
/// Counters ([`Value::from_counter`]) count modulo this: 16 decimal digits.
pub const COUNTER_MODULUS: u64 = 10_u64.pow(VALUE_LEN as u32);
/// UDP port of the reference implementation.
pub const DEFAULT_PORT: u16 = 9999;

const _: () = assert!(OP_LEN == 21);
const _: () = assert!(MAX_PACKET_LEN == 160);

/// Offsets inside the header (mirrored by `bpf/include/innet_txn.h`, checked in `crates/xdp`).
pub mod offset {
    pub const FLAGS: usize = 0;
    pub const CL_ID: usize = 1;
    pub const REQ_ID: usize = 5;
    pub const FRAG_SEQ: usize = 9;
    pub const FRAG_CNT: usize = 10;
    pub const STATUS: usize = 11;
    pub const OP_CNT: usize = 12;
    /// Offsets inside one op.
    pub const OP_TYPE: usize = 0;
    pub const OP_KEY: usize = 1;
    pub const OP_VALUE: usize = 5;
}

pub type Key = u32;

/// A fixed-width value. Applications that store numbers (the counter
/// microbenchmark) write them as NUL-padded ASCII decimal, which is what the
/// reference Python clients read with `value.rstrip('\0')`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Value(pub [u8; VALUE_LEN]);

impl Value {
    pub const ZERO: Value = Value([0; VALUE_LEN]);

    /// NUL-padded bytes of `s`; `None` if `s` is longer than [`VALUE_LEN`].
    pub fn from_str_padded(s: &str) -> Option<Value> {
        let b = s.as_bytes();
        if b.len() > VALUE_LEN {
            return None;
        }
        let mut v = [0u8; VALUE_LEN];
        for (d, s) in v.iter_mut().zip(b) {
            *d = *s;
        }
        debug_assert!(v.starts_with(b), "the value holds the string's bytes first");
        Some(Value(v))
    }

    /// A counter as NUL-padded ASCII decimal. A counter has 16 digits (the
    /// value width) and wraps past [`COUNTER_MODULUS`] `- 1` to 0, like an
    /// odometer: an increment of `9999999999999999` (which anyone may
    /// write) gives 0, never a panic.
    pub fn from_counter(n: u64) -> Value {
        let mut v = [0u8; VALUE_LEN];
        let digits = (n % COUNTER_MODULUS).to_string();
        for (d, s) in v.iter_mut().zip(digits.bytes()) {
            *d = s;
        }
        debug_assert!(digits.len() <= VALUE_LEN, "a counter below COUNTER_MODULUS has at most 16 digits");
        debug_assert_eq!(Value(v).as_counter(), Some(n % COUNTER_MODULUS), "a counter reads back as written");
        Value(v)
    }

    /// Reads a counter written by [`Value::from_counter`]. The empty value
    /// (all zero bytes, what the store holds for a key never written) is 0.
    pub fn as_counter(&self) -> Option<u64> {
        let s = self.trimmed();
        if s.is_empty() {
            return Some(0);
        }
        let n: Option<u64> = std::str::from_utf8(s).ok()?.parse().ok();
        // At most VALUE_LEN digits: below COUNTER_MODULUS, whoever wrote them.
        debug_assert!(n.is_none_or(|n| n < COUNTER_MODULUS));
        n
    }

    /// The bytes without trailing NULs.
    pub fn trimmed(&self) -> &[u8] {
        let end = self.0.iter().rposition(|&b| b != 0).map_or(0, |i| i.saturating_add(1));
        debug_assert!(end <= VALUE_LEN);
        self.0.get(..end).unwrap_or_default()
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = self.trimmed();
        if t.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
            write!(f, "{:?}", String::from_utf8_lossy(t))
        } else {
            write!(f, "0x")?;
            for b in self.0 {
                write!(f, "{b:02x}")?;
            }
            Ok(())
        }
    }
}

/// Operation types (the reference P4's `GOTTHARD_OP_*`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
#[repr(u8)]
pub enum OpType {
    /// No operation; the switch turns ops it removes from a reply into NOPs.
    Nop = 0,
    /// Request: "tell me the value of this key".
    Read = 1,
    /// Request: "set this key to this value" (buffered by the client until commit).
    Write = 2,
    /// Request: "I read this value" (the compare). Response: "this is the value".
    Value = 3,
    /// Response: "this key was just updated to this value".
    Updated = 4,
    /// Store load report (NOCC); carried, never interpreted by the switch.
    CpuPct = 5,
}

impl OpType {
    pub fn from_u8(b: u8) -> Option<OpType> {
        Some(match b {
            0 => OpType::Nop,
            1 => OpType::Read,
            2 => OpType::Write,
            3 => OpType::Value,
            4 => OpType::Updated,
            5 => OpType::CpuPct,
            _ => return None,
        })
        .inspect(|t| debug_assert_eq!(*t as u8, b, "an op type reads back as its code"))
    }

    /// The name used in golden vectors, docs and the Wireshark dissector.
    pub fn name(self) -> &'static str {
        match self {
            OpType::Nop => "NOP",
            OpType::Read => "READ",
            OpType::Write => "WRITE",
            OpType::Value => "VALUE",
            OpType::Updated => "UPDATED",
            OpType::CpuPct => "CPU_PCT",
        }
    }
}

/// Outcome carried in a response.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[repr(u8)]
pub enum Status {
    Ok = 0,
    /// Aborted with corrections (by the store, or by an early-abort switch).
    Abort = 1,
    /// Aborted by a switch because of a write it saw pass but the store has
    /// not yet confirmed; the correction is that pending value.
    OptimisticAbort = 2,
    /// The request was empty or malformed.
    BadRequest = 3,
}

impl Status {
    pub fn from_u8(b: u8) -> Option<Status> {
        Some(match b {
            0 => Status::Ok,
            1 => Status::Abort,
            2 => Status::OptimisticAbort,
            3 => Status::BadRequest,
            _ => return None,
        })
        .inspect(|st| debug_assert_eq!(*st as u8, b, "a status reads back as its code"))
    }
    /// The name used in golden vectors, docs and the Wireshark dissector.
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::Abort => "ABORT",
            Status::OptimisticAbort => "OPTIMISTIC_ABORT",
            Status::BadRequest => "BADREQ",
        }
    }
    pub fn is_abort(self) -> bool {
        debug_assert!(Status::from_u8(self as u8) == Some(self));
        matches!(self, Status::Abort | Status::OptimisticAbort)
    }
}

/// The flags byte; unknown low bits are preserved so decode/encode is exact.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Flags(pub u8);

impl Flags {
    pub const RESPONSE: u8 = 0x80;
    pub const FROM_SWITCH: u8 = 0x40;
    pub const RESET: u8 = 0x20;
    pub const STORE_COMMIT: u8 = 0x10;

    pub fn is_response(self) -> bool {
        self.0 & Self::RESPONSE != 0
    }
    pub fn from_switch(self) -> bool {
        self.0 & Self::FROM_SWITCH != 0
    }
    pub fn reset(self) -> bool {
        self.0 & Self::RESET != 0
    }
    pub fn store_commit(self) -> bool {
        self.0 & Self::STORE_COMMIT != 0
    }
    pub fn with(self, bit: u8, on: bool) -> Flags {
        debug_assert_eq!(bit.count_ones(), 1, "one flag at a time, not {bit:#x}");
        Flags(if on { self.0 | bit } else { self.0 & !bit })
    }
}

impl fmt::Debug for Flags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = vec![if self.is_response() { "RES" } else { "REQ" }];
        if self.from_switch() {
            parts.push("from_switch");
        }
        if self.reset() {
            parts.push("reset");
        }
        if self.store_commit() {
            parts.push("store_commit");
        }
        write!(f, "{}", parts.join("|"))?;
        if self.0 & 0x0f != 0 {
            write!(f, "|reserved={:#x}", self.0 & 0x0f)?;
        }
        Ok(())
    }
}

/// Why bytes were rejected. Each reason has a stable name for counters.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum DecodeError {
    /// Shorter than the 13-byte header.
    Truncated,
    /// `op_cnt` above [`MAX_OPS_PER_PACKET`].
    TooManyOps,
    /// `op_cnt` ops do not fit in the bytes received.
    OpsBeyondPacket,
    /// An op type outside 0..=5.
    UnknownOpType,
    /// A status outside 0..=3.
    UnknownStatus,
    /// `frag_cnt > 1` with `frag_seq` outside `1..=frag_cnt`.
    BadFragment,
}

impl DecodeError {
    pub const ALL: [DecodeError; 6] = [
        DecodeError::Truncated,
        DecodeError::TooManyOps,
        DecodeError::OpsBeyondPacket,
        DecodeError::UnknownOpType,
        DecodeError::UnknownStatus,
        DecodeError::BadFragment,
    ];
    pub fn name(self) -> &'static str {
        debug_assert!(DecodeError::ALL.get(self.index()) == Some(&self), "ALL lists the reasons in order");
        match self {
            DecodeError::Truncated => "truncated",
            DecodeError::TooManyOps => "too_many_ops",
            DecodeError::OpsBeyondPacket => "ops_beyond_packet",
            DecodeError::UnknownOpType => "unknown_op_type",
            DecodeError::UnknownStatus => "unknown_status",
            DecodeError::BadFragment => "bad_fragment",
        }
    }
}

decode_error_impls!(DecodeError);

/// One operation.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Op {
    pub kind: OpType,
    pub key: Key,
    pub value: Value,
}

impl Op {
    pub fn new(kind: OpType, key: Key, value: Value) -> Op {
        Op { kind, key, value }
    }
    pub fn read(key: Key) -> Op {
        Op::new(OpType::Read, key, Value::ZERO)
    }
    pub fn write(key: Key, value: Value) -> Op {
        Op::new(OpType::Write, key, value)
    }
    /// The compare: "I read `value` at `key`".
    pub fn value(key: Key, value: Value) -> Op {
        Op::new(OpType::Value, key, value)
    }
    pub fn updated(key: Key, value: Value) -> Op {
        Op::new(OpType::Updated, key, value)
    }
}

/// An owned, decoded packet (one fragment).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct TxnMsg {
    pub flags: Flags,
    pub cl_id: u32,
    pub req_id: i32,
    pub frag_seq: u8,
    pub frag_cnt: u8,
    pub status: Status,
    pub ops: Vec<Op>,
}

impl TxnMsg {
    /// An unfragmented request.
    pub fn request(cl_id: u32, req_id: i32, ops: Vec<Op>) -> TxnMsg {
        assert!(ops.len() <= MAX_OPS_PER_PACKET, "use fragments for larger transactions");
        TxnMsg { flags: Flags(0), cl_id, req_id, frag_seq: 1, frag_cnt: 1, status: Status::Ok, ops }
    }

    /// A response to `self` with the given status and ops.
    pub fn reply(&self, status: Status, from_switch: bool, ops: Vec<Op>) -> TxnMsg {
        debug_assert!(ops.len() <= MAX_OPS_PER_PACKET, "a reply is one packet");
        TxnMsg {
            flags: Flags(Flags::RESPONSE).with(Flags::FROM_SWITCH, from_switch),
            cl_id: self.cl_id,
            req_id: self.req_id,
            frag_seq: 1,
            frag_cnt: 1,
            status,
            ops,
        }
    }

    pub fn is_fragmented(&self) -> bool {
        debug_assert!(self.frag_cnt <= 1 || (1..=self.frag_cnt).contains(&self.frag_seq));
        self.frag_cnt > 1
    }

    /// Decodes one packet. Bytes after the last op are ignored (the P4 parser
    /// stops there too).
    pub fn decode(bytes: &[u8]) -> Result<TxnMsg, DecodeError> {
        let h = validate(bytes)?;
        let ops = (0..h.op_cnt).map(|i| read_op(bytes, op_at(i))).collect::<Option<Vec<Op>>>();
        let header = |at| byte(bytes, at);
        let fields = (header(offset::FLAGS), be32(bytes, offset::CL_ID), be32(bytes, offset::REQ_ID));
        let (Some(ops), (Some(flags), Some(cl_id), Some(req_id))) = (ops, fields) else {
            // `validate` checked every byte read here.
            return Err(DecodeError::OpsBeyondPacket);
        };
        debug_assert!(ops.len() == h.op_cnt && ops.len() <= MAX_OPS_PER_PACKET);
        Ok(TxnMsg {
            flags: Flags(flags),
            cl_id,
            req_id: req_id as i32,
            frag_seq: header(offset::FRAG_SEQ).unwrap_or_default(),
            frag_cnt: header(offset::FRAG_CNT).unwrap_or_default(),
            status: h.status,
            ops,
        })
    }

    /// Appends the encoding to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        assert!(self.ops.len() <= MAX_OPS_PER_PACKET, "a packet carries at most 7 ops");
        let start = out.len();
        out.push(self.flags.0);
        out.extend_from_slice(&self.cl_id.to_be_bytes());
        out.extend_from_slice(&self.req_id.to_be_bytes());
        out.push(self.frag_seq);
        out.push(self.frag_cnt);
        out.push(self.status as u8);
        out.push(self.ops.len() as u8);
        for op in &self.ops {
            out.push(op.kind as u8);
            out.extend_from_slice(&op.key.to_be_bytes());
            out.extend_from_slice(&op.value.0);
        }
        debug_assert_eq!(out.len().saturating_sub(start), op_at(self.ops.len()), "13 bytes and 21 per op");
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(op_at(self.ops.len()));
        self.encode_into(&mut v);
        debug_assert!(v.len() <= MAX_PACKET_LEN);
        v
    }

    /// Splits a transaction's ops into packets of at most 7 ops, numbered
    /// `1..=n`. A transaction with no ops still yields one (empty) packet.
    /// `None` if it needs more than 255 fragments ([`MAX_OPS_PER_TXN`] ops):
    /// the format cannot carry it.
    pub fn fragments(template: &TxnMsg, ops: &[Op]) -> Option<Vec<TxnMsg>> {
        let chunks: Vec<&[Op]> = if ops.is_empty() { vec![&[][..]] } else { ops.chunks(MAX_OPS_PER_PACKET).collect() };
        let n = u8::try_from(chunks.len()).ok()?;
        let numbered = (1..=n).zip(chunks);
        let fragments: Vec<TxnMsg> = numbered
            .map(|(seq, c)| TxnMsg { frag_seq: seq, frag_cnt: n, ops: c.to_vec(), ..template.clone() })
            .collect();
        debug_assert_eq!(fragments.iter().map(|f| f.ops.len()).sum::<usize>(), ops.len(), "every op in one fragment");
        debug_assert!(fragments.iter().all(|f| f.ops.len() <= MAX_OPS_PER_PACKET && f.frag_seq >= 1));
        Some(fragments)
    }
}

/// What [`validate`] learned about a packet.
#[derive(Clone, Copy, Debug)]
pub struct Validated {
    pub op_cnt: usize,
    pub status: Status,
}

/// Checks everything a parser must check, without allocating.
pub fn validate(bytes: &[u8]) -> Result<Validated, DecodeError> {
    let header = |at| byte(bytes, at).ok_or(DecodeError::Truncated);
    if bytes.len() < HEADER_LEN {
        return Err(DecodeError::Truncated);
    }
    let op_cnt = usize::from(header(offset::OP_CNT)?);
    if op_cnt > MAX_OPS_PER_PACKET {
        return Err(DecodeError::TooManyOps);
    }
    if bytes.len() < op_at(op_cnt) {
        return Err(DecodeError::OpsBeyondPacket);
    }
    let status = Status::from_u8(header(offset::STATUS)?).ok_or(DecodeError::UnknownStatus)?;
    let (seq, cnt) = (header(offset::FRAG_SEQ)?, header(offset::FRAG_CNT)?);
    if cnt > 1 && (seq == 0 || seq > cnt) {
        return Err(DecodeError::BadFragment);
    }
    for i in 0..op_cnt {
        if byte(bytes, op_at(i)).and_then(OpType::from_u8).is_none() {
            return Err(DecodeError::UnknownOpType);
        }
    }
    debug_assert!(op_cnt <= MAX_OPS_PER_PACKET && op_at(op_cnt) <= bytes.len());
    Ok(Validated { op_cnt, status })
}

/// Where op `i` starts (`i` is at most [`MAX_OPS_PER_PACKET`]).
fn op_at(i: usize) -> usize {
    debug_assert!(i <= MAX_OPS_PER_PACKET, "op {i} past the 7 a packet carries");
    HEADER_LEN.saturating_add(i.saturating_mul(OP_LEN))
}

/// The op at byte `o`, `None` if it does not fit or its type is unknown.
fn read_op(bytes: &[u8], o: usize) -> Option<Op> {
    Some(Op {
        kind: OpType::from_u8(byte(bytes, o)?)?,
        key: be32(bytes, o.checked_add(offset::OP_KEY)?)?,
        value: Value(array(bytes, o.checked_add(offset::OP_VALUE)?)?),
    })
}

/// A validated view of a packet held in a mutable buffer, for data-plane
/// programs: read fields, rewrite them in place, never resize.
pub struct TxnPacket<'a> {
    buf: &'a mut [u8],
    op_cnt: usize,
}

impl<'a> TxnPacket<'a> {
    pub fn parse(buf: &'a mut [u8]) -> Result<TxnPacket<'a>, DecodeError> {
        let v = validate(buf)?;
        let packet = TxnPacket { buf, op_cnt: v.op_cnt };
        debug_assert!(packet.valid());
        Ok(packet)
    }
    /// The view's invariant: the buffer still validates, with the op
    /// count it was parsed with (rewrites in place never break it).
    fn valid(&self) -> bool {
        validate(self.buf).is_ok_and(|v| v.op_cnt == self.op_cnt)
    }
    // The buffer was validated by `parse`, so every read below is inside
    // it; the defaults after `unwrap_or` are never taken, and an op index
    // outside `0..op_cnt` reads as a NOP and writes nothing.
    fn header(&self, at: usize) -> u8 {
        byte(self.buf, at).unwrap_or_default()
    }
    pub fn flags(&self) -> Flags {
        debug_assert!(self.valid());
        Flags(self.header(offset::FLAGS))
    }
    pub fn set_flags(&mut self, f: Flags) {
        set(self.buf, offset::FLAGS, f.0);
        debug_assert_eq!(self.flags(), f);
    }
    pub fn cl_id(&self) -> u32 {
        debug_assert!(self.valid());
        be32(self.buf, offset::CL_ID).unwrap_or_default()
    }
    pub fn req_id(&self) -> i32 {
        debug_assert!(self.valid());
        be32(self.buf, offset::REQ_ID).unwrap_or_default() as i32
    }
    pub fn frag_cnt(&self) -> u8 {
        debug_assert!(self.valid());
        self.header(offset::FRAG_CNT)
    }
    pub fn is_fragmented(&self) -> bool {
        debug_assert!(self.valid());
        self.frag_cnt() > 1
    }
    pub fn set_frag(&mut self, seq: u8, cnt: u8) {
        debug_assert!(cnt <= 1 || (1..=cnt).contains(&seq), "fragment {seq} of {cnt}");
        set(self.buf, offset::FRAG_SEQ, seq);
        set(self.buf, offset::FRAG_CNT, cnt);
        debug_assert!(self.valid());
    }
    pub fn status(&self) -> Status {
        debug_assert!(self.valid());
        Status::from_u8(self.header(offset::STATUS)).unwrap_or(Status::BadRequest)
    }
    pub fn set_status(&mut self, s: Status) {
        set(self.buf, offset::STATUS, s as u8);
        debug_assert_eq!(self.status(), s);
    }
    pub fn op_cnt(&self) -> usize {
        debug_assert!(self.valid());
        self.op_cnt
    }
    /// Where op `i` (and its field at `field`) starts, if `i < op_cnt`.
    fn op_field(&self, i: usize, field: usize) -> Option<usize> {
        debug_assert!(field < OP_LEN);
        (i < self.op_cnt).then(|| op_at(i).saturating_add(field))
    }
    pub fn op_type(&self, i: usize) -> OpType {
        debug_assert!(self.valid());
        self.op_field(i, offset::OP_TYPE)
            .and_then(|o| byte(self.buf, o))
            .and_then(OpType::from_u8)
            .unwrap_or(OpType::Nop)
    }
    pub fn set_op_type(&mut self, i: usize, t: OpType) {
        if let Some(o) = self.op_field(i, offset::OP_TYPE) {
            set(self.buf, o, t as u8);
        }
        debug_assert!(i >= self.op_cnt || self.op_type(i) == t);
    }
    pub fn key(&self, i: usize) -> Key {
        debug_assert!(self.valid());
        self.op_field(i, offset::OP_KEY).and_then(|o| be32(self.buf, o)).unwrap_or_default()
    }
    pub fn value(&self, i: usize) -> Value {
        debug_assert!(self.valid());
        self.op_field(i, offset::OP_VALUE).and_then(|o| array(self.buf, o)).map_or(Value::ZERO, Value)
    }
    pub fn set_value(&mut self, i: usize, v: &Value) {
        if let Some(o) = self.op_field(i, offset::OP_VALUE) {
            put(self.buf, o, &v.0);
        }
        debug_assert!(i >= self.op_cnt || self.value(i) == *v);
    }
    /// Turns the request into a response from the switch, as the reference
    /// P4's `do_direction_swap` does (addresses are the runtime's business).
    pub fn make_switch_reply(&mut self, status: Status) {
        let f = self.flags().with(Flags::RESPONSE, true).with(Flags::FROM_SWITCH, true);
        self.set_flags(f);
        self.set_status(status);
        self.set_frag(1, 1);
        debug_assert!(self.flags().is_response() && self.flags().from_switch() && !self.is_fragmented());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> TxnMsg {
        TxnMsg::request(
            7,
            -3,
            vec![
                Op::value(1, Value::from_str_padded("a").unwrap()),
                Op::write(1, Value::from_str_padded("b").unwrap()),
            ],
        )
    }

    #[test]
    fn roundtrip_and_sizes() {
        let m = sample();
        let b = m.encode();
        assert_eq!(b.len(), HEADER_LEN + 2 * OP_LEN);
        assert_eq!(TxnMsg::decode(&b).unwrap(), m);
    }

    #[test]
    fn every_prefix_of_a_valid_packet_is_rejected_not_panicking() {
        let b = sample().encode();
        for n in 0..b.len() {
            let e = TxnMsg::decode(&b[..n]).unwrap_err();
            assert!(matches!(e, DecodeError::Truncated | DecodeError::OpsBeyondPacket), "{n}: {e:?}");
        }
    }

    #[test]
    fn malformed_reasons() {
        let mut b = sample().encode();
        b[offset::OP_CNT] = 8;
        assert_eq!(TxnMsg::decode(&b), Err(DecodeError::TooManyOps));
        b[offset::OP_CNT] = 3;
        assert_eq!(TxnMsg::decode(&b), Err(DecodeError::OpsBeyondPacket));
        b[offset::OP_CNT] = 2;
        b[HEADER_LEN] = 9;
        assert_eq!(TxnMsg::decode(&b), Err(DecodeError::UnknownOpType));
        b[HEADER_LEN] = 3;
        b[offset::STATUS] = 4;
        assert_eq!(TxnMsg::decode(&b), Err(DecodeError::UnknownStatus));
        b[offset::STATUS] = 0;
        b[offset::FRAG_CNT] = 2;
        b[offset::FRAG_SEQ] = 3;
        assert_eq!(TxnMsg::decode(&b), Err(DecodeError::BadFragment));
    }

    #[test]
    fn fragments_number_from_one() {
        let ops: Vec<Op> = (0..15).map(Op::read).collect();
        let f = TxnMsg::fragments(&TxnMsg::request(1, 1, vec![]), &ops).unwrap();
        assert_eq!(f.len(), 3);
        assert_eq!((f[0].frag_seq, f[2].frag_seq, f[2].frag_cnt), (1, 3, 3));
        assert_eq!(f[2].ops.len(), 1);
    }

    #[test]
    fn a_transaction_beyond_255_fragments_is_refused_not_panicked_on() {
        let ops = |n: usize| (0..n as u32).map(Op::read).collect::<Vec<Op>>();
        let last = TxnMsg::fragments(&TxnMsg::request(1, 1, vec![]), &ops(MAX_OPS_PER_TXN)).unwrap();
        assert_eq!((last.len(), last[254].frag_seq, last[254].frag_cnt), (255, 255, 255));
        assert_eq!(TxnMsg::fragments(&TxnMsg::request(1, 1, vec![]), &ops(MAX_OPS_PER_TXN + 1)), None);
    }

    #[test]
    fn counters_are_ascii() {
        let v = Value::from_counter(42);
        assert_eq!(v.trimmed(), b"42");
        assert_eq!(v.as_counter(), Some(42));
        assert_eq!(Value::ZERO.as_counter(), Some(0));
        // Anyone may write the largest counter; incrementing it wraps.
        let top = Value::from_str_padded("9999999999999999").unwrap();
        assert_eq!(top.as_counter(), Some(COUNTER_MODULUS - 1));
        assert_eq!(Value::from_counter(COUNTER_MODULUS - 1), top);
        assert_eq!(Value::from_counter(COUNTER_MODULUS), Value::from_counter(0));
        assert_eq!(Value::from_counter(u64::MAX).as_counter(), Some(u64::MAX % COUNTER_MODULUS));
    }
}
