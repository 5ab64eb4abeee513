//! innet's XDP data plane.
//!
//! * `bpf/` holds the BPF C programs and one shared header per wire format
//!   (`bpf/include/innet_txn.h`) plus one per program's maps
//!   (`innet_txn_switch.h`). `build.rs` compiles them with clang and exports
//!   the headers' constants to [`layout`], which checks them against
//!   `innet-wire` and `innet-txn` at compile time.
//! * [`object`] is the program-independent loader (libbpf-rs): load with
//!   map sizes, `BPF_PROG_TEST_RUN`, netlink XDP attach, pins, map reads.
//! * [`txn`] is the transaction switch on top of it: configuration through
//!   its config map, its counters and tables decoded.
//! * [`testbed`] builds network namespaces and veths for a topology;
//!   [`bench`] measures data planes on it; [`privileged`] is how root-only
//!   tests report running or skipping.
//! * [`paxos`] is the Paxos coordinator and acceptor (`bpf/paxos.bpf.c`),
//!   multicast through a tc program's clones; [`paxos_testbed`] is the
//!   `paxos` topology, [`paxos_hosts`] its end hosts (learners, proposers,
//!   the backup coordinator); [`paxos_learner`] is the vote counter in
//!   front of the learners and proposers (`bpf/paxos_learner.bpf.c`,
//!   reference `innet_paxos::VoteCounter`).
//! * [`forward`] is CAANS Table 1's baseline (`bpf/forward.bpf.c`: plain
//!   XDP forwarding and a no-op) and the per-packet comparison of the
//!   Paxos roles against it.
//! * [`frame`] builds and reads the Ethernet/IPv4/UDP frames around payloads.
//! * [`chain`] loads and configures the NetCRAQ and NetChain nodes
//!   (`bpf/netcraq.bpf.c`, `bpf/netchain.bpf.c`); [`chain_testbed`] is the
//!   `chain` topology, [`chain_bench`] `innet bench xdp-chain`; their
//!   references are `innet_chain`'s `CraqNode` and `NcNode`
//!   (`tests/chain_differential.rs`). [`chain_control`] is the chain
//!   control plane (`innet_chain::ChainControl`) driving the testbed's
//!   nodes through their maps, and its failure drill.
//! * [`fabric`] is how a testbed's devices run their programs (driver or
//!   generic mode, `xdp_pass` where frames arrive, threaded NAPI), shared
//!   by the three services' testbeds; [`generator`] is the in-kernel load
//!   generator of the fabric-only benchmarks and [`sink`] the counting
//!   drop program at their far ends.
//! * [`upcall`] is `innet bench xdp-upcall`: decided instances handed from
//!   XDP to a user-space learner by socket, batch datagram, BPF ring buffer
//!   or AF_XDP (`bpf/upcall.bpf.c`), with an in-kernel generator.
//!
//! The Rust reference for every program is the state machine in the
//! protocol crate (`innet_txn::TxnSwitch`); `tests/txn_differential.rs`
//! holds the two to identical verdicts, bytes, counters and table contents.

pub mod auth;
pub mod bench;
pub mod bpf_stats;
pub mod chain;
pub mod chain_bench;
pub mod chain_control;
pub mod chain_testbed;
pub mod fabric;
pub mod forward;
pub mod frame;
pub mod generator;
pub mod layout;
pub mod netns;
pub mod object;
pub mod paxos;
pub mod paxos_hosts;
pub mod paxos_learner;
pub mod paxos_testbed;
pub mod privileged;
pub mod sink;
pub mod testbed;
pub mod testbed_common;
pub mod txn;
pub mod txn_topology;
pub mod upcall;
