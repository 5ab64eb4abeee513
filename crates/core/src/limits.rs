//! Bounds on what an operator may ask for: every count that a flag or a
//! topology file takes and that sizes an allocation or a loop is checked
//! against one of these (flags in `innet_exp::parse`, topology files in
//! `innet_topology`, experiment configurations in their `validate`), so a
//! careless value is refused with one line naming the bound, and a file
//! cannot pass what its flag refuses. `docs/security.md` lists every bound
//! with its value; the protocol crates own the bounds their formats
//! impose (`innet_paxos::MAX_ACCEPTORS`, `innet_wire::netchain::MAX_CHAIN_NODES`,
//! `innet_txn::workload::SPAN_MAX`, ...).

/// Transaction (and TPC-C) clients in one run or one load process
/// (`--clients`; a topology file's client groups together). Each is a
/// host with its own state and, live, its own socket.
pub const CLIENTS_MAX: u32 = 4_096;

/// Slots of a table a flag or a file sizes (a switch's cache, an
/// acceptor's ring): 2^24, about 1 GB at the switch's 56 bytes a slot.
pub const TABLE_SLOTS_MAX: usize = 1 << 24;

/// Keys a transaction workload draws from (`--keys`): the workload's
/// popularity table takes 8 bytes a key, in every client.
pub const TXN_KEYS_MAX: u32 = 1 << 20;

/// Paxos proposers in one run (`--proposers`, a topology's proposer nodes).
pub const PROPOSERS_MAX: usize = 256;

/// Requests one Paxos proposer keeps in flight (`--outstanding`).
pub const OUTSTANDING_MAX: usize = 4_096;

/// Seeds one `innet check` run takes (`--seeds`, `demo --check-seeds`).
/// The runs are checked a chunk at a time, so memory does not grow with
/// this; it keeps seeds times modes within a u64.
pub const CHECK_SEEDS_MAX: u64 = 1 << 32;

/// Requests a benchmark round measures or warms up with (`--requests`,
/// `--warmup`): a latency of 8 bytes is kept per request.
pub const BENCH_REQUESTS_MAX: usize = 10_000_000;

/// Rounds or repeated runs of one benchmark (`--rounds`, `--runs`).
pub const BENCH_ROUNDS_MAX: usize = 1_000;

/// Requests in flight in a benchmark's packet-rate phase (`--window`).
pub const BENCH_WINDOW_MAX: usize = 4_096;

/// Single `BPF_PROG_TEST_RUN` runs per program of CAANS Table 1 (`bench
/// xdp-paxos-table1 --runs`): a duration of 8 bytes is kept per run.
pub const TEST_RUNS_MAX: u32 = 10_000_000;
