//! Wire formats of the innet protocols, defined once and byte-exact.
//!
//! Every format here has golden packet vectors under `golden/` that the Rust
//! tests (and later the BPF C side) decode and re-encode. Parsers never panic
//! on any input: malformed bytes produce a [`txn::DecodeError`] naming the
//! reason, which data-plane programs count and drop.
//!
//! This crate sits at the bottom of the dependency graph: it knows nothing of
//! sockets, clocks or runtimes.

#![forbid(unsafe_code)]

pub mod paxos;
pub mod txn;
