//! The key-value service's client protocol (issue 24): what a client and a
//! consensus-replicated key-value replica (`crates/paxos-kv`) say to each
//! other over UDP, or over TCP on the same port number for messages larger
//! than one datagram. Network byte order.
//!
//! ```text
//!  0       2     3     4                12               20           24
//! +-------+-----+-----+----------------+----------------+------------+------
//! | magic | ver | kind| client (u64)   | seq (u64)      | body_len   | body
//! | 'KV'  |  1  |     |                |                | (u32)      |
//! +-------+-----+-----+----------------+----------------+------------+------
//! ```
//!
//! A REQUEST's body is an operation, `op u8 | key_len u16 | key | ...`:
//! PUT `| value` (the rest), DELETE and GET nothing more, CAS
//! `| expected_present u8 | expected_len u32 | expected | value` (the rest;
//! `expected_present` 0: the key must be absent, then `expected_len` is 0).
//! A REPLY's body is `status u8 | ...`: VALUE carries the value (the rest),
//! TOO_LARGE the value's length (u32: the answer does not fit a datagram,
//! ask again over TCP), every other status nothing.
//!
//! `(client, seq)` names a request: the replicas apply it once however
//! often it is resent, to whichever replica (`crates/paxos-kv`, the
//! replicas' client table). Every length is range-checked: `body_len` must
//! equal what follows the header in a datagram and stay below
//! [`BODY_MAX`], keys below [`KEY_MAX`], values below [`VALUE_MAX`];
//! anything else is a [`DecodeError`] naming the reason, never a panic.
//! The same operation encoding is what the replicas order through
//! consensus (`client | seq | operation`).

use crate::bytes::{be16, be32, byte};

/// "KV".
pub const MAGIC: u16 = 0x4b56;
pub const VERSION: u8 = 1;
pub const HEADER_LEN: usize = 24;
/// Widest key.
pub const KEY_MAX: usize = 1024;
/// Widest value (1 MiB).
pub const VALUE_MAX: usize = 1 << 20;
/// Widest body: a CAS with an expected and a new value of [`VALUE_MAX`].
pub const BODY_MAX: usize = 1 + 2 + KEY_MAX + 1 + 4 + 2 * VALUE_MAX;
/// Widest datagram a client or replica sends (header and body): below a
/// 1500-byte Ethernet MTU with IP and UDP headers, so never IP-fragmented.
/// Larger messages go over TCP.
pub const DATAGRAM_MAX: usize = 1400;

/// Offsets of the header fields.
pub mod offset {
    pub const MAGIC: usize = 0;
    pub const VERSION: usize = 2;
    pub const KIND: usize = 3;
    pub const CLIENT: usize = 4;
    pub const SEQ: usize = 12;
    pub const BODY_LEN: usize = 20;
    pub const BODY: usize = 24;
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[repr(u8)]
pub enum Kind {
    Request = 1,
    Reply = 2,
}

pub mod op {
    pub const PUT: u8 = 1;
    pub const DELETE: u8 = 2;
    pub const GET: u8 = 3;
    pub const CAS: u8 = 4;
}

pub mod status {
    /// A put or delete was applied, a CAS swapped.
    pub const OK: u8 = 0;
    /// A get found the key: the value follows.
    pub const VALUE: u8 = 1;
    /// A get found no such key.
    pub const NOT_FOUND: u8 = 2;
    /// A CAS found another value (or none, or one where none was expected).
    pub const CAS_FAILED: u8 = 3;
    /// The answer does not fit a datagram: its value's length follows; ask
    /// again over TCP.
    pub const TOO_LARGE: u8 = 4;
    /// The replicas no longer remember this client (its entry was evicted
    /// from their client table) and the request is not its first: not
    /// applied now; an earlier copy may have been.
    pub const EXPIRED: u8 = 5;
    /// The replica has no room for the request now: try another.
    pub const BUSY: u8 = 6;
    /// The operation was malformed once ordered (never from a replica that
    /// checked it on receipt).
    pub const INVALID: u8 = 7;
}

/// A client's operation.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Op {
    Put {
        key: Vec<u8>,
        value: Vec<u8>,
    },
    Delete {
        key: Vec<u8>,
    },
    Get {
        key: Vec<u8>,
    },
    /// Sets `value` if the key holds `expected` (`None`: the key is absent).
    Cas {
        key: Vec<u8>,
        expected: Option<Vec<u8>>,
        value: Vec<u8>,
    },
}

/// A replica's answer.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Reply {
    Ok,
    Value(Vec<u8>),
    NotFound,
    CasFailed,
    TooLarge { len: u32 },
    Expired,
    Busy,
    Invalid,
}

#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Body {
    Request(Op),
    Reply(Reply),
}

/// One message: a request or a reply of `(client, seq)`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Message {
    pub client: u64,
    pub seq: u64,
    pub body: Body,
}

/// The header alone (what a TCP reader reads first).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Header {
    pub kind: Kind,
    pub client: u64,
    pub seq: u64,
    pub body_len: u32,
}

/// Why bytes were rejected; each reason has a stable name for counters.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum DecodeError {
    /// Shorter than its header or than its lengths say.
    Truncated,
    /// `magic` is not "KV".
    BadMagic,
    /// A version this build does not speak.
    BadVersion,
    UnknownKind,
    /// `body_len` above [`BODY_MAX`], or not what follows the header.
    BadBodyLen,
    UnknownOp,
    UnknownStatus,
    KeyTooLong,
    ValueTooLong,
    /// Bytes left over where the operation ends, or a field out of range.
    Malformed,
}

impl DecodeError {
    pub const ALL: [DecodeError; 10] = [
        DecodeError::Truncated,
        DecodeError::BadMagic,
        DecodeError::BadVersion,
        DecodeError::UnknownKind,
        DecodeError::BadBodyLen,
        DecodeError::UnknownOp,
        DecodeError::UnknownStatus,
        DecodeError::KeyTooLong,
        DecodeError::ValueTooLong,
        DecodeError::Malformed,
    ];
    pub fn name(self) -> &'static str {
        debug_assert!(DecodeError::ALL.contains(&self), "every reason is listed for the counters");
        match self {
            DecodeError::Truncated => "truncated",
            DecodeError::BadMagic => "bad_magic",
            DecodeError::BadVersion => "bad_version",
            DecodeError::UnknownKind => "unknown_kind",
            DecodeError::BadBodyLen => "bad_body_len",
            DecodeError::UnknownOp => "unknown_op",
            DecodeError::UnknownStatus => "unknown_status",
            DecodeError::KeyTooLong => "key_too_long",
            DecodeError::ValueTooLong => "value_too_long",
            DecodeError::Malformed => "malformed",
        }
    }
}

decode_error_impls!(DecodeError);

fn be64(b: &[u8], at: usize) -> Option<u64> {
    crate::bytes::array(b, at).map(u64::from_be_bytes)
}

impl Header {
    /// Reads and checks the header of `b` (the body is not looked at).
    pub fn decode(b: &[u8]) -> Result<Header, DecodeError> {
        let (Some(magic), Some(version), Some(kind), Some(client), Some(seq), Some(body_len)) = (
            be16(b, offset::MAGIC),
            byte(b, offset::VERSION),
            byte(b, offset::KIND),
            be64(b, offset::CLIENT),
            be64(b, offset::SEQ),
            be32(b, offset::BODY_LEN),
        ) else {
            return Err(DecodeError::Truncated);
        };
        if magic != MAGIC {
            return Err(DecodeError::BadMagic);
        }
        if version != VERSION {
            return Err(DecodeError::BadVersion);
        }
        let kind = match kind {
            1 => Kind::Request,
            2 => Kind::Reply,
            _ => return Err(DecodeError::UnknownKind),
        };
        if body_len as usize > BODY_MAX {
            return Err(DecodeError::BadBodyLen);
        }
        debug_assert!(b.len() >= HEADER_LEN, "every field was read");
        Ok(Header { kind, client, seq, body_len })
    }

    /// The header's bytes. A header never announces more than [`BODY_MAX`]
    /// bytes (no decoder would take it).
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        debug_assert!(self.body_len as usize <= BODY_MAX, "body of {} bytes announced", self.body_len);
        let mut h = [0u8; HEADER_LEN];
        let fields: [(usize, &[u8]); 6] = [
            (offset::MAGIC, &MAGIC.to_be_bytes()),
            (offset::VERSION, &[VERSION]),
            (offset::KIND, &[self.kind as u8]),
            (offset::CLIENT, &self.client.to_be_bytes()),
            (offset::SEQ, &self.seq.to_be_bytes()),
            (offset::BODY_LEN, &self.body_len.to_be_bytes()),
        ];
        for (at, f) in fields {
            crate::bytes::put(&mut h, at, f);
        }
        debug_assert_eq!(Header::decode(&h), Ok(*self), "a header reads back as written");
        h
    }
}

/// A cursor over a body: every read range-checked.
struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let (head, rest) = self.b.split_at_checked(n).ok_or(DecodeError::Truncated)?;
        self.b = rest;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, DecodeError> {
        self.take(1).map(|s| s.first().copied().unwrap_or(0))
    }
    fn u16(&mut self) -> Result<u16, DecodeError> {
        be16(self.take(2)?, 0).ok_or(DecodeError::Truncated)
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        be32(self.take(4)?, 0).ok_or(DecodeError::Truncated)
    }
    fn key(&mut self) -> Result<Vec<u8>, DecodeError> {
        let n = self.u16()? as usize;
        if n > KEY_MAX {
            return Err(DecodeError::KeyTooLong);
        }
        Ok(self.take(n)?.to_vec())
    }
    fn value(&mut self, n: usize) -> Result<Vec<u8>, DecodeError> {
        if n > VALUE_MAX {
            return Err(DecodeError::ValueTooLong);
        }
        Ok(self.take(n)?.to_vec())
    }
    fn rest_value(&mut self) -> Result<Vec<u8>, DecodeError> {
        self.value(self.b.len())
    }
    fn end(&self) -> Result<(), DecodeError> {
        if self.b.is_empty() {
            Ok(())
        } else {
            Err(DecodeError::Malformed)
        }
    }
}

impl Op {
    pub fn key(&self) -> &[u8] {
        match self {
            Op::Put { key, .. } | Op::Delete { key } | Op::Get { key } | Op::Cas { key, .. } => key,
        }
    }

    /// Whether the operation changes the store (gets do not).
    pub fn mutates(&self) -> bool {
        !matches!(self, Op::Get { .. })
    }

    /// What a decoded operation holds: a key and values within bounds.
    fn within_bounds(&self) -> bool {
        let values: [&[u8]; 2] = match self {
            Op::Put { value, .. } => [value, &[]],
            Op::Cas { expected, value, .. } => [value, expected.as_deref().unwrap_or(&[])],
            Op::Delete { .. } | Op::Get { .. } => [&[], &[]],
        };
        self.key().len() <= KEY_MAX && values.iter().all(|v| v.len() <= VALUE_MAX)
    }

    /// The operation's bytes; `None` if a key or value is too long.
    pub fn encode(&self) -> Option<Vec<u8>> {
        let key = self.key();
        if key.len() > KEY_MAX {
            return None;
        }
        let code = match self {
            Op::Put { .. } => op::PUT,
            Op::Delete { .. } => op::DELETE,
            Op::Get { .. } => op::GET,
            Op::Cas { .. } => op::CAS,
        };
        let mut b = vec![code];
        b.extend_from_slice(&(key.len() as u16).to_be_bytes());
        b.extend_from_slice(key);
        match self {
            Op::Put { value, .. } => {
                if value.len() > VALUE_MAX {
                    return None;
                }
                b.extend_from_slice(value);
            }
            Op::Cas { expected, value, .. } => {
                let e = expected.as_deref().unwrap_or(&[]);
                if value.len() > VALUE_MAX || e.len() > VALUE_MAX {
                    return None;
                }
                b.push(u8::from(expected.is_some()));
                b.extend_from_slice(&(e.len() as u32).to_be_bytes());
                b.extend_from_slice(e);
                b.extend_from_slice(value);
            }
            Op::Delete { .. } | Op::Get { .. } => {}
        }
        debug_assert!(b.len() <= BODY_MAX);
        debug_assert_eq!(Op::decode(&b).as_ref(), Ok(self), "an operation reads back as written");
        Some(b)
    }

    pub fn decode(b: &[u8]) -> Result<Op, DecodeError> {
        let mut r = Reader { b };
        let code = r.u8()?;
        let key = r.key()?;
        let o = match code {
            op::PUT => Op::Put { key, value: r.rest_value()? },
            op::DELETE => Op::Delete { key },
            op::GET => Op::Get { key },
            op::CAS => {
                let present = r.u8()?;
                let len = r.u32()? as usize;
                let expected = match present {
                    0 if len == 0 => None,
                    1 => Some(r.value(len)?),
                    _ => return Err(DecodeError::Malformed),
                };
                Op::Cas { key, expected, value: r.rest_value()? }
            }
            _ => return Err(DecodeError::UnknownOp),
        };
        r.end()?;
        debug_assert!(o.within_bounds());
        Ok(o)
    }
}

impl Reply {
    pub fn encode(&self) -> Vec<u8> {
        let b = match self {
            Reply::Ok => vec![status::OK],
            Reply::Value(v) => {
                let mut b = Vec::with_capacity(v.len().saturating_add(1));
                b.push(status::VALUE);
                b.extend_from_slice(v);
                b
            }
            Reply::NotFound => vec![status::NOT_FOUND],
            Reply::CasFailed => vec![status::CAS_FAILED],
            Reply::TooLarge { len } => {
                let mut b = vec![status::TOO_LARGE];
                b.extend_from_slice(&len.to_be_bytes());
                b
            }
            Reply::Expired => vec![status::EXPIRED],
            Reply::Busy => vec![status::BUSY],
            Reply::Invalid => vec![status::INVALID],
        };
        debug_assert_eq!(Reply::decode(&b).as_ref(), Ok(self), "a reply reads back as written");
        b
    }

    pub fn decode(b: &[u8]) -> Result<Reply, DecodeError> {
        let mut r = Reader { b };
        let reply = match r.u8()? {
            status::OK => Reply::Ok,
            status::VALUE => Reply::Value(r.rest_value()?),
            status::NOT_FOUND => Reply::NotFound,
            status::CAS_FAILED => Reply::CasFailed,
            status::TOO_LARGE => Reply::TooLarge { len: r.u32()? },
            status::EXPIRED => Reply::Expired,
            status::BUSY => Reply::Busy,
            status::INVALID => Reply::Invalid,
            _ => return Err(DecodeError::UnknownStatus),
        };
        r.end()?;
        debug_assert!(!matches!(&reply, Reply::Value(v) if v.len() > VALUE_MAX));
        Ok(reply)
    }
}

impl Message {
    pub fn request(client: u64, seq: u64, op: Op) -> Message {
        Message { client, seq, body: Body::Request(op) }
    }

    pub fn reply(client: u64, seq: u64, reply: Reply) -> Message {
        Message { client, seq, body: Body::Reply(reply) }
    }

    /// Header and body; `None` if a key or value is too long.
    pub fn encode(&self) -> Option<Vec<u8>> {
        let (kind, body) = match &self.body {
            Body::Request(o) => (Kind::Request, o.encode()?),
            Body::Reply(r) => (Kind::Reply, r.encode()),
        };
        let body_len = u32::try_from(body.len()).ok().filter(|&n| n as usize <= BODY_MAX)?;
        let h = Header { kind, client: self.client, seq: self.seq, body_len };
        let mut b = h.encode().to_vec();
        b.extend_from_slice(&body);
        debug_assert_eq!(b.len().checked_sub(HEADER_LEN), Some(body_len as usize));
        Some(b)
    }

    /// A whole message (a datagram, or a TCP frame read whole): the body
    /// must be exactly `body_len` bytes.
    pub fn decode(b: &[u8]) -> Result<Message, DecodeError> {
        let h = Header::decode(b)?;
        let body = b.get(HEADER_LEN..).ok_or(DecodeError::Truncated)?;
        if body.len() != h.body_len as usize {
            return Err(if body.len() < h.body_len as usize {
                DecodeError::Truncated
            } else {
                DecodeError::BadBodyLen
            });
        }
        let m = Message::with_body(h, body)?;
        debug_assert_eq!((m.client, m.seq), (h.client, h.seq));
        Ok(m)
    }

    /// The message of header `h` and its `body`.
    pub fn with_body(h: Header, body: &[u8]) -> Result<Message, DecodeError> {
        let len = body.len();
        let body = match h.kind {
            Kind::Request => Body::Request(Op::decode(body)?),
            Kind::Reply => Body::Reply(Reply::decode(body)?),
        };
        debug_assert_eq!(
            match &body {
                Body::Request(op) => op.encode().map(|b| b.len()),
                Body::Reply(r) => Some(r.encode().len()),
            },
            Some(len),
            "a decoded body re-encodes to its own length"
        );
        Ok(Message { client: h.client, seq: h.seq, body })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops() -> Vec<Op> {
        vec![
            Op::Put { key: b"k".to_vec(), value: b"v".to_vec() },
            Op::Put { key: vec![], value: vec![] },
            Op::Delete { key: b"key".to_vec() },
            Op::Get { key: vec![7; KEY_MAX] },
            Op::Cas { key: b"c".to_vec(), expected: None, value: b"1".to_vec() },
            Op::Cas { key: b"c".to_vec(), expected: Some(b"1".to_vec()), value: b"2".to_vec() },
            Op::Cas { key: b"c".to_vec(), expected: Some(vec![]), value: vec![] },
        ]
    }

    #[test]
    fn messages_round_trip() {
        for (i, o) in ops().into_iter().enumerate() {
            let m = Message::request(0x0102_0304_0506_0708, i as u64, o);
            assert_eq!(Message::decode(&m.encode().unwrap()), Ok(m));
        }
        for r in [
            Reply::Ok,
            Reply::Value(b"abc".to_vec()),
            Reply::Value(vec![]),
            Reply::NotFound,
            Reply::CasFailed,
            Reply::TooLarge { len: 1 << 20 },
            Reply::Expired,
            Reply::Busy,
            Reply::Invalid,
        ] {
            let m = Message::reply(9, u64::MAX, r);
            assert_eq!(Message::decode(&m.encode().unwrap()), Ok(m));
        }
    }

    /// The layout, byte by byte (written by hand from the module doc).
    #[test]
    fn the_layout_is_the_documented_one() {
        let m = Message::request(1, 2, Op::Put { key: b"k".to_vec(), value: b"v".to_vec() });
        let want: Vec<u8> = [
            &[0x4b, 0x56, 1, 1][..],
            &[0, 0, 0, 0, 0, 0, 0, 1],
            &[0, 0, 0, 0, 0, 0, 0, 2],
            &[0, 0, 0, 5],
            &[1, 0, 1, b'k', b'v'],
        ]
        .concat();
        assert_eq!(m.encode().unwrap(), want);
        let cas = Op::Cas { key: b"k".to_vec(), expected: Some(b"a".to_vec()), value: b"b".to_vec() };
        assert_eq!(cas.encode().unwrap(), vec![4, 0, 1, b'k', 1, 0, 0, 0, 1, b'a', b'b']);
        let r = Message::reply(1, 2, Reply::TooLarge { len: 300 }).encode().unwrap();
        assert_eq!(&r[3..], &[2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 5, 4, 0, 0, 1, 44]);
    }

    #[test]
    fn malformed_input_is_refused_by_reason() {
        let good = Message::request(1, 2, Op::Get { key: b"k".to_vec() }).encode().unwrap();
        let with = |at: usize, v: u8| {
            let mut b = good.clone();
            b[at] = v;
            b
        };
        assert_eq!(Message::decode(&good[..10]), Err(DecodeError::Truncated));
        assert_eq!(Message::decode(&good[..good.len() - 1]), Err(DecodeError::Truncated));
        assert_eq!(Message::decode(&[good.clone(), vec![0]].concat()), Err(DecodeError::BadBodyLen));
        assert_eq!(Message::decode(&with(0, 0)), Err(DecodeError::BadMagic));
        assert_eq!(Message::decode(&with(2, 2)), Err(DecodeError::BadVersion));
        assert_eq!(Message::decode(&with(3, 9)), Err(DecodeError::UnknownKind));
        assert_eq!(Message::decode(&with(24, 9)), Err(DecodeError::UnknownOp));
        assert_eq!(Message::decode(&with(20, 0xff)), Err(DecodeError::BadBodyLen));
        assert_eq!(Message::decode(&with(3, 2)), Err(DecodeError::Malformed), "a CAS_FAILED with bytes after");
        let reply = Message::reply(1, 2, Reply::Ok).encode().unwrap();
        assert_eq!(Message::decode(&[&reply[..24], &[9]].concat()), Err(DecodeError::UnknownStatus));
        assert_eq!(Op::decode(&[3, 0x04, 0x01]), Err(DecodeError::KeyTooLong));
        assert_eq!(Op::decode(&[3, 0, 1]), Err(DecodeError::Truncated));
        assert_eq!(Op::decode(&[3, 0, 1, b'k', b'x']), Err(DecodeError::Malformed), "a get with a value");
        assert_eq!(Op::decode(&[4, 0, 0, 2, 0, 0, 0, 0]), Err(DecodeError::Malformed), "expected_present 2");
        assert_eq!(Op::decode(&[4, 0, 0, 0, 0, 0, 0, 1, 9]), Err(DecodeError::Malformed), "absent with a length");
        assert_eq!(Op::decode(&[4, 0, 0, 1, 0xff, 0, 0, 0]), Err(DecodeError::ValueTooLong));
        assert!(Op::Put { key: vec![0; KEY_MAX + 1], value: vec![] }.encode().is_none());
        assert!(Op::Put { key: vec![], value: vec![0; VALUE_MAX + 1] }.encode().is_none());
        // Every prefix and every single-byte change of a good message
        // decodes or is refused: nothing panics.
        for n in 0..good.len() {
            let _ = Message::decode(&good[..n]);
            for v in [0u8, 1, 0x7f, 0xff] {
                let _ = Message::decode(&with(n, v));
            }
        }
    }
}
