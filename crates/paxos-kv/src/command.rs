//! Commands in the 24-byte payload of the value envelope:
//! `op u8 | key_len u8 | key | value`, op 1 put, 2 delete, 3 get; key and
//! value together at most 22 bytes (wider values go by reference).

use innet_paxos::envelope::PAYLOAD_MAX;

/// Key and value bytes one command carries at most.
pub const KEY_VALUE_MAX: usize = PAYLOAD_MAX - 2;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    Put { key: Vec<u8>, value: Vec<u8> },
    Delete { key: Vec<u8> },
    Get { key: Vec<u8> },
}

impl Command {
    /// `None` if key and value do not fit in one payload.
    pub fn encode(&self) -> Option<Vec<u8>> {
        let (op, key, value): (u8, &[u8], &[u8]) = match self {
            Command::Put { key, value } => (1, key, value),
            Command::Delete { key } => (2, key, &[]),
            Command::Get { key } => (3, key, &[]),
        };
        if key.len() + value.len() > KEY_VALUE_MAX {
            return None;
        }
        let mut b = vec![op, key.len() as u8];
        b.extend_from_slice(key);
        b.extend_from_slice(value);
        debug_assert!(b.len() <= PAYLOAD_MAX, "a command fits one envelope's payload");
        debug_assert_eq!(Command::decode(&b).as_ref(), Some(self), "a command reads back as written");
        Some(b)
    }

    /// `None` for bytes that are not a command (ignored by replicas).
    pub fn decode(b: &[u8]) -> Option<Command> {
        let (&op, rest) = b.split_first()?;
        let (&klen, rest) = rest.split_first()?;
        let key = rest.get(..klen as usize)?.to_vec();
        let value = rest[klen as usize..].to_vec();
        debug_assert_eq!(key.len() + value.len() + 2, b.len());
        match op {
            1 => Some(Command::Put { key, value }),
            2 if value.is_empty() => Some(Command::Delete { key }),
            3 if value.is_empty() => Some(Command::Get { key }),
            _ => None,
        }
    }

    /// The command the load generator submits as its `n`th request: puts
    /// over 64 keys, every seventh a delete, every eleventh a get.
    pub fn load(n: u64) -> Command {
        let key = format!("k{}", n % 64).into_bytes();
        let command = if n % 7 == 0 {
            Command::Delete { key }
        } else if n % 11 == 0 {
            Command::Get { key }
        } else {
            Command::Put { key, value: format!("v{n}").into_bytes() }
        };
        debug_assert!(command.encode().is_some(), "load commands fit one payload");
        command
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_limits() {
        for c in [
            Command::Put { key: b"k".to_vec(), value: b"v".to_vec() },
            Command::Delete { key: b"k".to_vec() },
            Command::Get { key: b"".to_vec() },
        ] {
            assert_eq!(Command::decode(&c.encode().unwrap()), Some(c));
        }
        assert!(Command::Put { key: vec![0; 11], value: vec![0; 12] }.encode().is_none());
        assert!(Command::Put { key: vec![0; 11], value: vec![0; 11] }.encode().is_some());
        assert_eq!(Command::decode(b"v12"), None);
        assert_eq!(Command::decode(&[2, 1, b'k', b'x']), None);
    }
}
