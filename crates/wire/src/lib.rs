//! Wire formats of the innet protocols, defined once and byte-exact.
//!
//! Every format here has golden packet vectors under `golden/` that the Rust
//! tests decode and re-encode and the BPF programs' differential tests
//! (`crates/xdp/tests`) run through the C side. Parsers never panic
//! on any input: malformed bytes produce a [`txn::DecodeError`] naming the
//! reason, which data-plane programs count and drop.
//!
//! This crate sits at the bottom of the dependency graph: it knows nothing of
//! sockets, clocks or runtimes.

#![forbid(unsafe_code)]
// Decoders take bytes from anyone: outside tests, no indexing, slicing,
// unwrap, expect, panic or overflowing arithmetic may panic on them. Reads
// go through [`bytes`], which answers `None` past the end.
#![cfg_attr(
    not(test),
    deny(
        clippy::indexing_slicing,
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::arithmetic_side_effects
    )
)]

/// `index()`, `Display` (the stable name) and `Error` for a format's
/// `DecodeError`, which must have `fn name(self) -> &'static str`.
macro_rules! decode_error_impls {
    ($t:ty) => {
        impl $t {
            /// Position in `ALL`, for per-reason counter arrays.
            pub fn index(self) -> usize {
                let i = self as usize;
                debug_assert!(Self::ALL.get(i) == Some(&self), "{self:?} is at its code's place in ALL");
                i
            }
        }

        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl std::error::Error for $t {}
    };
}

/// Bounds-checked reads and writes of a byte buffer: `None` (or `false`)
/// past its end, never a panic.
pub(crate) mod bytes {
    /// `N` bytes from `at`.
    pub fn array<const N: usize>(b: &[u8], at: usize) -> Option<[u8; N]> {
        let read = b.get(at..at.checked_add(N)?).and_then(|s| s.try_into().ok());
        debug_assert_eq!(read.is_some(), at.checked_add(N).is_some_and(|end| end <= b.len()), "read iff in bounds");
        read
    }
    pub fn byte(b: &[u8], at: usize) -> Option<u8> {
        let read = b.get(at).copied();
        debug_assert_eq!(read.is_some(), at < b.len(), "read iff in bounds");
        read
    }
    pub fn be16(b: &[u8], at: usize) -> Option<u16> {
        array(b, at).map(u16::from_be_bytes)
    }
    pub fn be32(b: &[u8], at: usize) -> Option<u32> {
        array(b, at).map(u32::from_be_bytes)
    }
    /// Writes `src` at `at`; `false` (and nothing written) if it does not fit.
    pub fn put(b: &mut [u8], at: usize, src: &[u8]) -> bool {
        let written = match at.checked_add(src.len()).and_then(|end| b.get_mut(at..end)) {
            Some(d) => {
                d.copy_from_slice(src);
                true
            }
            None => false,
        };
        debug_assert!(!written || b.get(at..).is_some_and(|d| d.starts_with(src)), "the bytes read back");
        written
    }
    /// `b[at] = v` if `at` is inside `b`.
    pub fn set(b: &mut [u8], at: usize, v: u8) {
        if let Some(x) = b.get_mut(at) {
            *x = v;
        }
        debug_assert!(byte(b, at).is_none_or(|x| x == v), "the byte reads back");
    }
}

pub mod kv;
pub mod netchain;
pub mod netcraq;
pub mod paxos;
pub mod txn;
