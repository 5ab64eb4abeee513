//! Experiments: a configuration goes in, a result record comes out, on any
//! runtime. Every record carries its configuration, seed and git commit
//! (`results.rs`), so any point of any plot can be reproduced.

pub mod chain_bench;
pub mod chain_sim;
pub mod paxos;
pub mod paxos_bench;
pub mod paxos_live;
pub mod paxos_sim;
pub mod plot;
pub mod results;
pub mod txn;
pub mod txn_live;
pub mod txn_sim;
pub mod up;
