//! Benchmarking tools, shared by the experiments that measure throughput
//! live or on the XDP data plane:
//!
//! * [`loadgen`]: a batched closed-loop UDP load generator over the live
//!   runtime's I/O core, and its ceiling (the same generator against the
//!   cheapest echo there is), which says when a result is the generator's
//!   limit rather than the system's.
//! * [`cpu`]: the CPU a run used, the machine's and this process's, for
//!   "CPU per committed value".
//! * [`etcd`]: etcd as a peer of the chain store: a cluster on loopback and
//!   a native gRPC client with its own ceiling.
//!
//! A later peer system (a runner that starts it and a client that loads it)
//! belongs here beside etcd.

pub mod cpu;
pub mod etcd;
pub mod loadgen;
