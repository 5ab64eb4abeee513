//! The NetChain format (Jin et al., NSDI 2018, section 4) as its public P4
//! reference speaks it (GitHub netx-repo/netchain-p4: `nc_hdr_t` and
//! `overlay_t` in `p4src/includes/headers.p4`, the codes and ports in
//! `p4src/includes/defines.p4`, the packets `client/nc_socket.py` builds),
//! network byte order:
//!
//! ```text
//! +-----------+-----------+-----+-----------+-----------+
//! | S0 (u32)  | S1 (u32)  | ... | Sk (u32)  | 0 (u32)   |   the stack: node addresses,
//! +-----------+-----------+-----+-----------+-----------+   at most MAX_CHAIN_NODES, 0-terminated
//! +------+------+-----------+------------------+------------------+-------------+
//! | op   | sc   | seq (u16) | key (16 bytes)   | value (16 bytes) | vgroup (u16)|
//! +------+------+-----------+------------------+------------------+-------------+
//! ```
//!
//! `S0` is the node the packet is going to; each chain node pops its own
//! address and sends the packet on to the next one (the packet shrinks by 4
//! bytes per hop, as the reference's `pop_chain` does). `sc` counts the
//! stack's entries, the terminator included (the reference's client sends
//! `sc = 4` with three addresses). The tail pops itself and answers: a read
//! reply keeps what is left of the stack; a write reply has none, the tail
//! popping the terminator too (the reference's `pop_chain_again`), so it is
//! exactly the 38-byte fixed part with `sc = 0`. Requests go to UDP port
//! [`DEFAULT_PORT`] (8888), replies to the client's [`REPLY_PORT`] (8889).
//! A key is a 128-bit big-endian integer ([`key_from_u32`]). A 4-node
//! chain makes a 58-byte header, the size the NetCRAQ paper gives (section
//! II-B2). Bytes after `vgroup` are ignored, except that a packet of exactly
//! [`FIXED_LEN`] bytes is a stackless write reply.

use crate::bytes::{array, be16, be32, byte, put, set};
pub use crate::txn::{Value, VALUE_LEN};

/// Most chain addresses a packet carries (NetChain's chains are short; 10
/// bounds the parser's loop, in a switch and in BPF).
pub const MAX_CHAIN_NODES: usize = 10;
/// Bytes of one address.
pub const ADDR_LEN: usize = 4;
/// Bytes of the key.
pub const KEY_LEN: usize = 16;
/// Bytes after the stack's terminator.
pub const FIXED_LEN: usize = 1 + 1 + 2 + KEY_LEN + VALUE_LEN + 2;
/// Largest valid packet.
pub const MAX_LEN: usize = (MAX_CHAIN_NODES + 1) * ADDR_LEN + FIXED_LEN;
/// UDP port of requests (the reference's `NC_PORT`).
pub const DEFAULT_PORT: u16 = 8888;
/// UDP port replies go to on the client (the reference's `REPLY_PORT`).
pub const REPLY_PORT: u16 = 8889;

const _: () = assert!(FIXED_LEN == 38);
const _: () = assert!(4 * ADDR_LEN + ADDR_LEN + FIXED_LEN == 58);

/// Offsets inside the fixed part (add `(depth + 1) * ADDR_LEN`).
pub mod offset {
    pub const OP: usize = 0;
    pub const SC: usize = 1;
    pub const SEQ: usize = 2;
    pub const KEY: usize = 4;
    pub const VALUE: usize = 20;
    pub const VGROUP: usize = 36;
}

/// A chain node's address (an IPv4 address in NetChain; 0 ends the stack).
pub type Addr = u32;
/// NetChain's 16-byte key.
pub type ChainKey = [u8; KEY_LEN];

/// The key an application names by number: the number as a 128-bit
/// big-endian integer, as the reference's client packs its keys (2018..).
pub fn key_from_u32(k: u32) -> ChainKey {
    let key = u128::from(k).to_be_bytes();
    debug_assert_eq!(key_to_u32(&key), k, "a key reads back as its number");
    key
}

/// The number of a key made by [`key_from_u32`] (its low 32 bits).
pub fn key_to_u32(key: &ChainKey) -> u32 {
    const _: () = assert!(KEY_LEN == 16, "a key is a u128");
    u128::from_be_bytes(*key) as u32
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
#[repr(u8)]
pub enum NcOp {
    ReadReq = 10,
    ReadReply = 11,
    WriteReq = 12,
    WriteReply = 13,
}

impl NcOp {
    pub const ALL: [NcOp; 4] = [NcOp::ReadReq, NcOp::ReadReply, NcOp::WriteReq, NcOp::WriteReply];
    pub fn from_u8(b: u8) -> Option<NcOp> {
        let op = NcOp::ALL.into_iter().find(|op| *op as u8 == b);
        debug_assert!(op.is_none_or(|op| op as u8 == b));
        op
    }
    pub fn name(self) -> &'static str {
        debug_assert_eq!(NcOp::from_u8(self as u8), Some(self));
        match self {
            NcOp::ReadReq => "READ_REQ",
            NcOp::ReadReply => "READ_REPLY",
            NcOp::WriteReq => "WRITE_REQ",
            NcOp::WriteReply => "WRITE_REPLY",
        }
    }
}

/// Why bytes were rejected; each reason has a stable name for counters.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum DecodeError {
    /// The bytes end inside the stack or the fixed part.
    Truncated,
    /// More than [`MAX_CHAIN_NODES`] addresses before a terminator.
    ChainTooLong,
    /// An `op` outside 10..=13.
    UnknownOp,
    /// `sc` differs from the stack's entries (addresses and terminator),
    /// or the stack does not fit the op: a write reply has none (exactly
    /// [`FIXED_LEN`] bytes, `sc` 0), every other message a terminator.
    ChainCountMismatch,
}

impl DecodeError {
    pub const ALL: [DecodeError; 4] =
        [DecodeError::Truncated, DecodeError::ChainTooLong, DecodeError::UnknownOp, DecodeError::ChainCountMismatch];
    pub fn name(self) -> &'static str {
        debug_assert!(DecodeError::ALL.get(self.index()) == Some(&self), "ALL lists the reasons in order");
        match self {
            DecodeError::Truncated => "truncated",
            DecodeError::ChainTooLong => "chain_too_long",
            DecodeError::UnknownOp => "unknown_op",
            DecodeError::ChainCountMismatch => "chain_count_mismatch",
        }
    }
}

decode_error_impls!(DecodeError);

/// Where the `i`-th address starts (`i` is at most [`MAX_CHAIN_NODES`] + 1).
fn addr_offset(i: usize) -> usize {
    debug_assert!(i <= MAX_CHAIN_NODES.saturating_add(1), "stack entry {i} past the bound");
    i.saturating_mul(ADDR_LEN)
}

fn addr_at(bytes: &[u8], i: usize) -> Option<Addr> {
    be32(bytes, addr_offset(i))
}

/// Checks `bytes` and returns the stack's entries (addresses and the
/// terminator; 0 for a stackless write reply).
fn validate(bytes: &[u8]) -> Result<usize, DecodeError> {
    if bytes.len() == FIXED_LEN {
        let op = byte(bytes, offset::OP).and_then(NcOp::from_u8).ok_or(DecodeError::UnknownOp)?;
        if op != NcOp::WriteReply || byte(bytes, offset::SC) != Some(0) {
            return Err(DecodeError::ChainCountMismatch);
        }
        return Ok(0);
    }
    let mut depth = None;
    for i in 0..=MAX_CHAIN_NODES {
        if addr_at(bytes, i).ok_or(DecodeError::Truncated)? == 0 {
            depth = Some(i);
            break;
        }
    }
    let entries = depth.ok_or(DecodeError::ChainTooLong)?.saturating_add(1);
    let fixed = addr_offset(entries);
    if bytes.len() < fixed.saturating_add(FIXED_LEN) {
        return Err(DecodeError::Truncated);
    }
    let field = |at: usize| byte(bytes, fixed.saturating_add(at)).ok_or(DecodeError::Truncated);
    let op = NcOp::from_u8(field(offset::OP)?).ok_or(DecodeError::UnknownOp)?;
    if op == NcOp::WriteReply || usize::from(field(offset::SC)?) != entries {
        return Err(DecodeError::ChainCountMismatch);
    }
    debug_assert!((1..=MAX_CHAIN_NODES.saturating_add(1)).contains(&entries));
    Ok(entries)
}

/// An owned, decoded message (end hosts).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct NcMsg {
    /// The addresses still to visit, next first (`sc` is their number plus
    /// one, the terminator; a write reply has none and no terminator).
    pub chain: Vec<Addr>,
    pub op: NcOp,
    pub seq: u16,
    pub key: ChainKey,
    pub value: Value,
    pub vgroup: u16,
}

impl NcMsg {
    /// A client's WRITE_REQ of `value` to `key` along `chain` (the head
    /// assigns the sequence number).
    pub fn write(chain: Vec<Addr>, key: ChainKey, value: Value) -> NcMsg {
        debug_assert!(chain.len() <= MAX_CHAIN_NODES && !chain.contains(&0), "a chain of addresses, 0 ends it");
        NcMsg { chain, op: NcOp::WriteReq, seq: 0, key, value, vgroup: 0 }
    }

    pub fn decode(bytes: &[u8]) -> Result<NcMsg, DecodeError> {
        let entries = validate(bytes)?;
        let f = addr_offset(entries);
        let at = |field: usize| f.saturating_add(field);
        let chain = (0..entries.saturating_sub(1)).map(|i| addr_at(bytes, i)).collect::<Option<Vec<Addr>>>();
        let op = byte(bytes, at(offset::OP)).and_then(NcOp::from_u8);
        let (Some(chain), Some(op), Some(seq), Some(key), Some(value), Some(vgroup)) = (
            chain,
            op,
            be16(bytes, at(offset::SEQ)),
            array(bytes, at(offset::KEY)),
            array(bytes, at(offset::VALUE)),
            be16(bytes, at(offset::VGROUP)),
        ) else {
            // `validate` checked every field read here.
            return Err(DecodeError::Truncated);
        };
        debug_assert!(chain.len() <= MAX_CHAIN_NODES && !chain.contains(&0), "validate stops at the terminator");
        Ok(NcMsg { chain, op, seq, key, value: Value(value), vgroup })
    }

    /// A write reply without its stack; anything else with its stack and
    /// terminator. Panics if the chain is longer than [`MAX_CHAIN_NODES`]
    /// or holds a 0, or if a write reply has a chain.
    pub fn encode(&self) -> Vec<u8> {
        assert!(self.chain.len() <= MAX_CHAIN_NODES, "chain too long");
        assert!(self.chain.iter().all(|a| *a != 0), "address 0 ends the stack");
        let stackless = self.op == NcOp::WriteReply;
        assert!(!stackless || self.chain.is_empty(), "a write reply carries no stack");
        let mut out = Vec::with_capacity(MAX_LEN);
        for a in &self.chain {
            out.extend_from_slice(&a.to_be_bytes());
        }
        if !stackless {
            out.extend_from_slice(&[0; ADDR_LEN]);
        }
        out.push(self.op as u8);
        out.push(if stackless { 0 } else { (self.chain.len() as u8).saturating_add(1) });
        out.extend_from_slice(&self.seq.to_be_bytes());
        out.extend_from_slice(&self.key);
        out.extend_from_slice(&self.value.0);
        out.extend_from_slice(&self.vgroup.to_be_bytes());
        debug_assert!(out.len() <= MAX_LEN);
        debug_assert_eq!(validate(&out), Ok(if stackless { 0 } else { self.chain.len().saturating_add(1) }));
        out
    }
}

/// A validated in-place view for data-plane programs.
pub struct NcPacket<'a> {
    buf: &'a mut [u8],
    /// Stack entries: addresses and the terminator (0: stackless).
    entries: usize,
}

impl<'a> NcPacket<'a> {
    pub fn parse(buf: &'a mut [u8]) -> Result<NcPacket<'a>, DecodeError> {
        let entries = validate(buf)?;
        let packet = NcPacket { buf, entries };
        debug_assert!(packet.valid());
        Ok(packet)
    }
    /// The view's invariant: the packet (its first [`NcPacket::len`]
    /// bytes) lies in the buffer, its stack holds at most
    /// [`MAX_CHAIN_NODES`] addresses and a terminator, and `sc` counts
    /// them (pops keep it so).
    fn valid(&self) -> bool {
        self.entries <= MAX_CHAIN_NODES.saturating_add(1)
            && self.len() <= self.buf.len()
            && byte(self.buf, self.field(offset::SC)) == Some(self.entries as u8)
    }
    // `parse` validated the buffer: reads below are inside it and their
    // defaults are never taken.
    fn fixed(&self) -> usize {
        addr_offset(self.entries)
    }
    fn field(&self, at: usize) -> usize {
        self.fixed().saturating_add(at)
    }
    /// Addresses still in the stack.
    pub fn depth(&self) -> usize {
        debug_assert!(self.valid());
        self.entries.saturating_sub(1)
    }
    /// The `i`-th address still in the stack; 0 (the terminator) for `i >= depth`.
    pub fn addr(&self, i: usize) -> Addr {
        if i >= self.depth() {
            return 0;
        }
        let addr = addr_at(self.buf, i).unwrap_or_default();
        debug_assert_ne!(addr, 0, "the terminator comes after the stack's addresses");
        addr
    }
    /// Bytes the packet occupies now (after any pops).
    pub fn len(&self) -> usize {
        debug_assert!(self.entries <= MAX_CHAIN_NODES.saturating_add(1));
        self.fixed().saturating_add(FIXED_LEN)
    }
    /// Never: a packet holds at least its fixed part.
    pub fn is_empty(&self) -> bool {
        debug_assert!(self.buf.len() >= self.len(), "the packet, at least its fixed part, is in the buffer");
        false
    }
    pub fn op(&self) -> NcOp {
        debug_assert!(self.valid());
        byte(self.buf, self.field(offset::OP)).and_then(NcOp::from_u8).unwrap_or(NcOp::ReadReq)
    }
    pub fn set_op(&mut self, op: NcOp) {
        set(self.buf, self.field(offset::OP), op as u8);
        debug_assert_eq!(self.op(), op);
    }
    pub fn seq(&self) -> u16 {
        debug_assert!(self.valid());
        be16(self.buf, self.field(offset::SEQ)).unwrap_or_default()
    }
    pub fn set_seq(&mut self, seq: u16) {
        put(self.buf, self.field(offset::SEQ), &seq.to_be_bytes());
        debug_assert_eq!(self.seq(), seq);
    }
    pub fn key(&self) -> ChainKey {
        debug_assert!(self.valid());
        array(self.buf, self.field(offset::KEY)).unwrap_or_default()
    }
    pub fn value(&self) -> Value {
        debug_assert!(self.valid());
        array(self.buf, self.field(offset::VALUE)).map_or(Value::ZERO, Value)
    }
    pub fn set_value(&mut self, v: Value) {
        put(self.buf, self.field(offset::VALUE), &v.0);
        debug_assert_eq!(self.value(), v);
    }
    /// Removes the first entry of the stack, an address or the terminator
    /// (the reference's `pop_chain`): the rest of the packet moves 4 bytes
    /// forward and `sc` drops by one. The caller truncates the packet to
    /// [`NcPacket::len`]. Does nothing on a stackless packet.
    pub fn pop(&mut self) {
        let Some(entries) = self.entries.checked_sub(1) else { return };
        let end = self.len();
        if end > self.buf.len() {
            return;
        }
        self.buf.copy_within(ADDR_LEN..end, 0);
        self.entries = entries;
        set(self.buf, self.field(offset::SC), entries as u8);
        debug_assert!(self.valid(), "a pop keeps sc equal to the stack's entries");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(chain: Vec<Addr>) -> NcMsg {
        NcMsg { chain, op: NcOp::WriteReq, seq: 7, key: key_from_u32(3), value: Value::from_counter(9), vgroup: 1 }
    }

    #[test]
    fn roundtrip_pop_and_lengths() {
        let m = msg(vec![1, 2, 3, 4]);
        let mut b = m.encode();
        assert_eq!(b.len(), 58, "a 4-node chain makes a 58-byte header (NetCRAQ paper, II-B2)");
        assert_eq!(NcMsg::decode(&b), Ok(m.clone()));
        let mut p = NcPacket::parse(&mut b).unwrap();
        assert_eq!((p.depth(), p.addr(0), p.addr(3), p.seq()), (4, 1, 2_u32.pow(2), 7));
        p.pop();
        let len = p.len();
        assert_eq!(len, 54);
        b.truncate(len);
        let popped = NcMsg::decode(&b).unwrap();
        assert_eq!(popped, NcMsg { chain: vec![2, 3, 4], ..m });
    }

    #[test]
    fn the_reference_clients_sc_and_keys() {
        // netchain-p4 client/nc_socket.py: sc = 4 with three addresses and
        // the terminator; key 2018 packed as two big-endian u64 halves.
        let m = msg(vec![1, 2, 3]);
        let b = m.encode();
        assert_eq!(b[16 + offset::SC], 4);
        assert_eq!(key_from_u32(2018), [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x07, 0xe2]);
        assert_eq!(key_to_u32(&key_from_u32(2018)), 2018);
    }

    #[test]
    fn the_tail_pops_a_write_down_to_its_fixed_part() {
        // The reference's tail: pop_chain (itself), pop_chain_again (the terminator).
        let mut b = msg(vec![4]).encode();
        let mut p = NcPacket::parse(&mut b).unwrap();
        p.pop();
        assert_eq!((p.depth(), p.len()), (0, ADDR_LEN + FIXED_LEN));
        p.set_op(NcOp::WriteReply);
        p.pop();
        let len = p.len();
        b.truncate(len);
        assert_eq!((b.len(), b[offset::OP], b[offset::SC]), (FIXED_LEN, 13, 0));
        let reply = NcMsg::decode(&b).unwrap();
        assert_eq!(reply, NcMsg { chain: vec![], op: NcOp::WriteReply, ..msg(vec![]) });
        assert_eq!(reply.encode(), b);
    }

    #[test]
    fn malformed_bytes_are_named() {
        let b = msg(vec![1, 2]).encode();
        assert_eq!(NcMsg::decode(&b[..b.len() - 1]), Err(DecodeError::Truncated));
        assert_eq!(NcMsg::decode(&b[..6]), Err(DecodeError::Truncated));
        let mut bad = b.clone();
        bad[12] = 9;
        assert_eq!(NcMsg::decode(&bad), Err(DecodeError::UnknownOp));
        let mut bad = b.clone();
        bad[13] = 2;
        assert_eq!(NcMsg::decode(&bad), Err(DecodeError::ChainCountMismatch), "sc counts the terminator too");
        let mut bad = b.clone();
        bad[12] = NcOp::WriteReply as u8;
        assert_eq!(NcMsg::decode(&bad), Err(DecodeError::ChainCountMismatch), "a write reply with a stack");
        let mut bad = b[12..].to_vec();
        assert_eq!(bad.len(), FIXED_LEN);
        assert_eq!(NcMsg::decode(&bad), Err(DecodeError::ChainCountMismatch), "a stackless write request");
        bad[0] = NcOp::WriteReply as u8;
        assert_eq!(NcMsg::decode(&bad), Err(DecodeError::ChainCountMismatch), "a stackless reply with sc 3");
        let deep = vec![1u8; (MAX_CHAIN_NODES + 1) * ADDR_LEN + FIXED_LEN];
        assert_eq!(NcMsg::decode(&deep), Err(DecodeError::ChainTooLong));
    }
}
