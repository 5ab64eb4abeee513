//! `--auth-key` for the BPF programs: [`innet_core::auth::AuthKeys`] as the
//! `struct innet_auth` of `bpf/include/innet_auth.h`, which a program's
//! `<prog>_auth` map holds (the same trailer, checked and sealed in BPF).

use innet_core::auth::{AuthKeys, KEY_LEN, MAX_KEYS, TRAILER_LEN};

use crate::layout::consts as c;

const _: () = assert!(c::AUTH_TRAILER_LEN as usize == TRAILER_LEN);
const _: () = assert!(c::AUTH_MAX_KEYS as usize == MAX_KEYS);
const _: () = assert!(c::AUTH_SIZE as usize == 8 + MAX_KEYS * 24);

/// The map value: on, then each key as two little-endian words, its id and
/// whether it is set (`keys[0]` seals); `None`: off.
pub fn encode(keys: Option<&AuthKeys>) -> Vec<u8> {
    let mut b = Vec::with_capacity(c::AUTH_SIZE as usize);
    b.extend_from_slice(&u32::from(keys.is_some()).to_ne_bytes());
    b.extend_from_slice(&[0; 4]);
    for i in 0..MAX_KEYS {
        match keys.and_then(|k| k.keys().get(i)) {
            Some(k) => {
                let (lo, hi) = k.bytes.split_at(KEY_LEN / 2);
                b.extend_from_slice(&u64::from_le_bytes(lo.try_into().expect("8 bytes")).to_ne_bytes());
                b.extend_from_slice(&u64::from_le_bytes(hi.try_into().expect("8 bytes")).to_ne_bytes());
                b.extend_from_slice(&u32::from(k.id).to_ne_bytes());
                b.extend_from_slice(&1u32.to_ne_bytes());
            }
            None => b.extend_from_slice(&[0; 24]),
        }
    }
    assert_eq!(b.len(), c::AUTH_SIZE as usize, "struct innet_auth layout");
    b
}
