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

/// `index()`, `Display` (the stable name) and `Error` for a format's
/// `DecodeError`, which must have `fn name(self) -> &'static str`.
macro_rules! decode_error_impls {
    ($t:ty) => {
        impl $t {
            /// Position in `ALL`, for per-reason counter arrays.
            pub fn index(self) -> usize {
                self as usize
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

pub mod netchain;
pub mod netcraq;
pub mod paxos;
pub mod txn;
