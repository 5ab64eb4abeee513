//! The case study of CAANS (section 5 and 6.3, Figure 7d): a key-value
//! store (get / put / delete) replicated by consensus. Clients submit
//! commands through a proposer; every replica is a learner that applies the
//! delivered commands, in instance order, to its own LevelDB. Replicas that
//! apply the same sequence hold the same contents ([`Replica::digest`]).
//!
//! A client co-located with a replica ([`KvClient`]) reads each command's
//! result (the value a get read, the completion of a put or delete) from
//! its replica once the replica applied it, matched by the envelope's
//! `(proposer, request)` ([`Replica::answer_to`]).
//!
//! Storage: Debian's `libleveldb-dev` through the `leveldb` crate (linked
//! against the system library, see `.cargo/config.toml`). Each delivered
//! batch is one LevelDB write batch holding the data changes, the
//! `(proposer, request)` pairs applied (the duplicate filter survives a
//! restart) and the next instance to apply, so a replica killed with
//! `kill -9` restarts at a consistent point and catches up from its peers
//! (CATCHUP) or the acceptors (`recover`). Writes are not fsynced: a process
//! crash loses nothing (the OS holds the data), a power loss may.

pub mod client;
pub mod command;
pub mod replica;

pub use client::KvClient;
pub use command::Command;
pub use replica::{Answer, Outcome, Replica};

use innet_paxos::workload::LoadProposer;

/// `p` submitting the key-value load ([`Command::load`]) when `kv`, else
/// unchanged.
pub fn with_kv_load(p: LoadProposer, kv: bool) -> LoadProposer {
    if kv {
        p.with_payload(|n| Command::load(n).encode().expect("load commands fit"))
    } else {
        p
    }
}
