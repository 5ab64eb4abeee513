//! Peer authentication (issue 21, item 3): a keyed MAC trailer on every
//! message between the nodes of a deployment, so that a packet that spoofs
//! a peer's address (from a raw socket) is refused unless its sender holds
//! the deployment's key.
//!
//! The trailer follows the protocol message, in the UDP payload:
//!
//! ```text
//! message (any length) | key id (1 byte) | tag (8 bytes, little-endian)
//! tag = SipHash-2-4(key[key id], message || key id)
//! ```
//!
//! SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast short-input PRF",
//! 2012) is a PRF over short inputs with a 128-bit key and a 64-bit tag:
//! fast in software and in BPF (add, rotate, xor on 64-bit words, a fixed
//! number of rounds), which is why the BPF programs can check it per packet
//! (`bpf/include/innet_auth.h`, the same function). The key id lets two keys
//! be accepted at once: a deployment rotates by adding the new key to every
//! node's file (still sealing with the old one), then making the new key
//! the sealing one, then removing the old key.
//!
//! What it does not do: it authenticates the sender's membership of the
//! deployment, not which member sent the message (every node holds the
//! key), and it does not stop a member's sealed packet being replayed (the
//! protocols' own sequence numbers, rounds and request ids judge replays).
//! A compromised node holds the key.
//!
//! Key files are text: one key per line, `ID HEX` with ID a decimal byte and
//! HEX 32 hex digits (16 bytes); `#` starts a comment. The first key seals;
//! at most [`MAX_KEYS`] keys, with distinct ids.

use siphasher::sip::SipHasher24;

/// Bytes the trailer adds to a message.
pub const TRAILER_LEN: usize = 1 + TAG_LEN;
/// Bytes of the tag.
pub const TAG_LEN: usize = 8;
/// Keys a node accepts at once (the current one and the next, for
/// rotation); the BPF programs hold as many.
pub const MAX_KEYS: usize = 2;
/// Bytes of a key.
pub const KEY_LEN: usize = 16;

/// One key and its id.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub id: u8,
    pub bytes: [u8; KEY_LEN],
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Key {{ id: {}, .. }}", self.id)
    }
}

impl Key {
    /// The SipHash-2-4 tag of `message` followed by this key's id.
    pub fn tag(&self, message: &[u8]) -> [u8; TAG_LEN] {
        let mut h = SipHasher24::new_with_key(&self.bytes);
        std::hash::Hasher::write(&mut h, message);
        std::hash::Hasher::write(&mut h, &[self.id]);
        std::hash::Hasher::finish(&h).to_le_bytes()
    }
}

/// Why a datagram was refused (counted under [`AuthError::name`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthError {
    /// Shorter than a trailer: it carries none.
    NoTrailer,
    /// Its key id is none of the node's keys.
    UnknownKey,
    /// The tag does not match.
    BadTag,
}

impl AuthError {
    pub fn name(self) -> &'static str {
        match self {
            AuthError::NoTrailer => "auth_no_trailer",
            AuthError::UnknownKey => "auth_unknown_key",
            AuthError::BadTag => "auth_bad_tag",
        }
    }
}

/// A node's keys: the first seals, every one is accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthKeys {
    keys: Vec<Key>,
}

impl AuthKeys {
    /// `keys[0]` seals. At least one key, at most [`MAX_KEYS`], distinct ids.
    pub fn new(keys: Vec<Key>) -> Result<AuthKeys, String> {
        if keys.is_empty() {
            return Err("no key: a key file needs a line `ID HEX` (HEX: 32 hex digits)".into());
        }
        if keys.len() > MAX_KEYS {
            return Err(format!("{} keys, at most {MAX_KEYS} (the current one and the next)", keys.len()));
        }
        if keys.len() == 2 && keys[0].id == keys[1].id {
            return Err(format!("two keys with id {}: ids must differ", keys[0].id));
        }
        const _: () = assert!(MAX_KEYS == 2, "the distinct-id check above compares two keys");
        Ok(AuthKeys { keys })
    }

    /// Parses a key file's text (see the module documentation).
    pub fn parse(text: &str) -> Result<AuthKeys, String> {
        let mut keys = vec![];
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let at = |what: String| format!("line {}: {what}", i + 1);
            let mut words = line.split_whitespace();
            let (Some(id), Some(hex), None) = (words.next(), words.next(), words.next()) else {
                return Err(at("expected `ID HEX` (a key id 0-255 and 32 hex digits)".into()));
            };
            let id: u8 = id.parse().map_err(|_| at(format!("key id `{id}` is not a number 0-255")))?;
            let bytes = parse_hex_key(hex).ok_or_else(|| at(format!("key `{hex}` is not 32 hex digits")))?;
            keys.push(Key { id, bytes });
        }
        let parsed = AuthKeys::new(keys);
        debug_assert!(parsed.as_ref().is_err() || parsed.as_ref().is_ok_and(|k| k.keys.len() <= MAX_KEYS));
        parsed
    }

    pub fn keys(&self) -> &[Key] {
        debug_assert!((1..=MAX_KEYS).contains(&self.keys.len()));
        &self.keys
    }

    /// The key that seals.
    pub fn sealing(&self) -> Key {
        debug_assert!((1..=MAX_KEYS).contains(&self.keys.len()), "AuthKeys::new refuses an empty key list");
        self.keys[0]
    }

    /// Appends the trailer of `out[start..]` (the message) to `out`.
    pub fn seal_in_place(&self, out: &mut Vec<u8>, start: usize) {
        debug_assert!(start <= out.len(), "message start {start} past its end {}", out.len());
        let sealed_len = out.len() + TRAILER_LEN;
        let key = self.sealing();
        let tag = key.tag(&out[start..]);
        out.push(key.id);
        out.extend_from_slice(&tag);
        debug_assert_eq!(out.len(), sealed_len);
    }

    /// `message` with its trailer.
    pub fn seal(&self, message: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(message.len() + TRAILER_LEN);
        out.extend_from_slice(message);
        self.seal_in_place(&mut out, 0);
        debug_assert_eq!(self.open(&out), Ok(message.len()), "a sealed message must open");
        out
    }

    /// Checks `datagram`'s trailer; the length of the message it seals.
    pub fn open(&self, datagram: &[u8]) -> Result<usize, AuthError> {
        let Some(len) = datagram.len().checked_sub(TRAILER_LEN) else {
            return Err(AuthError::NoTrailer);
        };
        let (message, trailer) = datagram.split_at(len);
        let id = trailer[0];
        let key = self.keys.iter().find(|k| k.id == id).ok_or(AuthError::UnknownKey)?;
        // Not constant-time: a tag is checked once per packet, and a
        // network attacker cannot time one comparison of 8 bytes.
        debug_assert_eq!(trailer.len(), TRAILER_LEN);
        if key.tag(message)[..] == trailer[1..] {
            Ok(len)
        } else {
            Err(AuthError::BadTag)
        }
    }
}

fn parse_hex_key(hex: &str) -> Option<[u8; KEY_LEN]> {
    if hex.len() != 2 * KEY_LEN || !hex.is_ascii() {
        return None;
    }
    let mut out = [0u8; KEY_LEN];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    debug_assert_eq!(hex.len(), 2 * out.len());
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY_HEX: &str = "000102030405060708090a0b0c0d0e0f";

    #[test]
    fn the_tag_is_siphash_2_4_of_the_message_and_the_key_id() {
        // SipHash paper, Appendix A: key 00..0f, message 00..0e (15 bytes)
        // gives a129ca6149be45e5. Here the key id is the message's last
        // byte, 0x0e.
        let key = Key { id: 0x0e, bytes: parse_hex_key(KEY_HEX).unwrap() };
        let message: Vec<u8> = (0..14).collect();
        assert_eq!(u64::from_le_bytes(key.tag(&message)), 0xa129_ca61_49be_45e5);
    }

    #[test]
    fn sealed_messages_open_with_either_key_and_any_change_is_refused() {
        let k = AuthKeys::parse(&format!("# rotation\n7 {KEY_HEX}\n8 {}\n", "ff".repeat(16))).unwrap();
        let sealed = k.seal(b"paxos");
        assert_eq!(sealed.len(), 5 + TRAILER_LEN);
        assert_eq!(k.open(&sealed), Ok(5));
        let next = AuthKeys::parse(&format!("8 {}\n7 {KEY_HEX}", "ff".repeat(16))).unwrap();
        assert_eq!(next.open(&sealed), Ok(5), "the next key's nodes still accept the current one");
        assert_eq!(k.open(&next.seal(b"paxos")), Ok(5));
        for i in 0..sealed.len() {
            let mut bad = sealed.clone();
            bad[i] ^= 1;
            assert!(k.open(&bad).is_err(), "byte {i} flipped");
        }
        assert_eq!(k.open(b"short"), Err(AuthError::NoTrailer));
        let only7 = AuthKeys::parse(&format!("7 {KEY_HEX}")).unwrap();
        assert_eq!(only7.open(&next.seal(b"x")), Err(AuthError::UnknownKey));
        let mut unsealed = b"paxos".to_vec();
        unsealed.extend_from_slice(&[7; TRAILER_LEN]);
        assert_eq!(k.open(&unsealed), Err(AuthError::BadTag));
    }

    #[test]
    fn bad_key_files_say_what_is_wrong() {
        for (text, says) in [
            ("", "no key"),
            ("7", "line 1: expected"),
            ("x 00", "not a number"),
            ("300 00", "not a number"),
            ("7 0011", "not 32 hex digits"),
            (&format!("7 {KEY_HEX}\n7 {KEY_HEX}"), "ids must differ"),
            (&format!("1 {KEY_HEX}\n2 {KEY_HEX}\n3 {KEY_HEX}"), "at most 2"),
        ] {
            let e = AuthKeys::parse(text).unwrap_err();
            assert!(e.contains(says), "{text:?}: {e}");
        }
    }
}
