//! innet-chaos: `innet chaos txn|paxos|chain`, a live deployment under
//! client load and an adversary, checked by the service's own checker.
//!
//! The service's roles run as separate `innet` processes on loopback, the
//! way `innet up SERVICE --topology FILE --only NAME` (and `innet store`,
//! `innet switch txn`) start them on a machine. This process runs the
//! clients (and, for Paxos, the learners, whose deliveries are what the
//! checker reads), records their histories, and runs the adversary: a
//! thread with ordinary UDP sockets of its own, outside the deployment,
//! that sends to every server role
//!
//! * **forged** messages of every type the service speaks (requests,
//!   replies, votes, decisions, management and VIEW messages, origin
//!   shims), with real client, proposer and node identities learned from
//!   the clients' traffic, as one sniffed packet would give them;
//! * **malformed** ones (forged, then truncated or with bytes flipped);
//! * **replayed** copies of the clients' real packets (requests and the
//!   replies they received), later and from another address;
//! * **reordered** bursts (a few real or forged packets, shuffled);
//! * **floods** (a burst of [`harness::FLOOD_PACKETS`] of one type at one role);
//!
//! and it kills (SIGKILL) and restarts the processes the service can
//! restart: the transaction store (durable) and switch (soft state), a
//! chain node (the control plane removes it, resynchronises and re-adds
//! it); for Paxos the coordinator (the backup takes over for good) and one
//! acceptor (its votes are not durable, so it stays down: a quorum
//! remains). Clients are the measured party and are not attacked.
//!
//! After the load stops and the deployment drains, the histories go
//! through `innet check`'s checkers: serializability over the store's
//! decisions (kept by `innet store --record-decisions`) and the clients'
//! attempts; agreement, validity, exactly-once and order over the
//! proposers' submissions and the learners' deliveries; linearizability of
//! the chain clients' reads and writes. The adversary's own writes are
//! part of the history where they are legitimate operations of an
//! unauthenticated client: its transactions are in the store's decisions,
//! its chain writes are recorded as writes without a response, its Paxos
//! values (under proposer ids no real proposer has) are delivered as
//! no-ops to the checked application. A REQUEST forged under a *real*
//! proposer's id is not excused.
//!
//! The schedule (attacks and their order, kill and restart times) derives
//! from the seed; the report prints the command that replays it. Timing on
//! a live machine is not replayed exactly.
//!
//! `innet chaos paxos --kv` ([`kv`]) is the key-value service's crash
//! campaign (issue 24 item 6) instead: the coordinator, persistent
//! acceptors, the backup and three `innet kv-replica` processes, network
//! clients issuing put, get, delete and compare-and-set on a few keys,
//! acceptors and replicas SIGKILLed and restarted one at a time and the
//! coordinator killed (restarted too with `--coordinator-restarts`, once
//! failback exists); the clients' history goes through a linearizability
//! checker for key-value histories ([`kv_check`]), and the replicas'
//! stores, read from their directories at the end, must be identical and
//! hold every acknowledged write the history says survives. Failovers
//! and failbacks are counted from the backup's own metrics.

pub mod harness;
pub mod kv;
pub mod kv_check;
pub mod services;

pub use harness::{ChaosConfig, ChaosReport, ChaosService, DURATION_S_MAX};
pub use services::run;
