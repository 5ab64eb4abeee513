//! The value envelope the proposer library writes into the 32-byte value:
//! `proposer u32 | request u32 | payload (<= 24 bytes)`. The data plane never
//! reads it; learners use `(proposer, request)` to filter duplicate
//! deliveries caused by resubmission (section 3.1, "Failure handling").
//! Proposer 0 marks the no-op that `recover` proposes.

use innet_wire::paxos::{Value, VALUE_LEN};

/// Bytes of the envelope before the payload.
pub const ENVELOPE_HEADER_LEN: usize = 8;
/// Widest application payload one value carries.
pub const PAYLOAD_MAX: usize = VALUE_LEN - ENVELOPE_HEADER_LEN;
/// The proposer id that marks a no-op.
pub const NOOP_PROPOSER: u32 = 0;

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
        Some(Envelope { proposer, request, payload_len: payload.len() as u8, payload: p })
    }

    /// The no-op carrying the application's no-op bytes.
    pub fn noop(payload: &[u8]) -> Option<Envelope> {
        Envelope::new(NOOP_PROPOSER, 0, payload)
    }

    pub fn is_noop(&self) -> bool {
        self.proposer == NOOP_PROPOSER
    }

    pub fn payload(&self) -> &[u8] {
        &self.payload[..self.payload_len as usize]
    }

    pub fn to_value(&self) -> Value {
        let mut b = [0u8; ENVELOPE_HEADER_LEN + PAYLOAD_MAX];
        b[0..4].copy_from_slice(&self.proposer.to_be_bytes());
        b[4..8].copy_from_slice(&self.request.to_be_bytes());
        b[8..8 + self.payload_len as usize].copy_from_slice(self.payload());
        Value::new(&b[..ENVELOPE_HEADER_LEN + self.payload_len as usize]).expect("fits by construction")
    }

    /// `None` for values no proposer library wrote (shorter than the header).
    pub fn from_value(v: &Value) -> Option<Envelope> {
        let s = v.as_slice();
        if s.len() < ENVELOPE_HEADER_LEN {
            return None;
        }
        let proposer = u32::from_be_bytes(s[0..4].try_into().expect("sized"));
        let request = u32::from_be_bytes(s[4..8].try_into().expect("sized"));
        Envelope::new(proposer, request, &s[ENVELOPE_HEADER_LEN..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
