//! The experiments on the XDP testbed (root; docs/xdp.md): the benchmarks
//! that run the BPF data plane beside a bare XDP bounce and the user-space
//! software planes ([`bench`]), the fabric's flags and its fabric-only runs
//! ([`fabric`]), CAANS end to end with the coordinator and acceptors in BPF
//! ([`paxos`]), and the commands of `innet testbed` and `innet bench xdp*`
//! ([`commands`]).

pub mod bench;
pub mod commands;
pub mod fabric;
pub mod paxos;
