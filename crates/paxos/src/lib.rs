//! Consensus as a network service: CAANS (Dang et al., "Network
//! Hardware-Accelerated Consensus", 2016).
//!
//! Paxos's coordinator and acceptors run as data-plane programs
//! ([`Coordinator`], [`Acceptor`]: fixed register arrays, bounded work, one
//! packet rewritten in place, a verdict), so that a switch (or an XDP
//! program) orders values at line rate; proposers and learners are library
//! code on end hosts (section 3). The message pattern is Paxos phase 2
//! (Figure 1): proposer -> coordinator (REQUEST, turned into a 2A for the
//! next instance) -> acceptors (multicast) -> learners (multicast 2B votes);
//! a learner delivers an instance once a quorum of acceptors voted in the same
//! round. Acceptors start every instance as if phase 1 had run for the
//! coordinator's round 1 (section 3: "acceptors initialize the round numbers
//! in their history to the same initial value used by the coordinator").
//!
//! Everything else is the failure handling of section 3.1:
//! * proposers resubmit after a timeout; learners drop the duplicate
//!   deliveries this causes (the value envelope names proposer and request);
//! * learners that see a gap `recover` the instance: phase 1 and 2 in a
//!   higher round proposing a no-op ([`prepare::Prepare`]), and ask their
//!   peers (CATCHUP / DECIDED);
//! * a software [`BackupCoordinator`] takes over when heartbeats to the
//!   coordinator go unanswered: it runs phase 1 in its own higher round for
//!   every instance it uses (so values voted under the old coordinator are
//!   re-proposed, never overwritten) and announces itself to proposers;
//! * learners report the instance they have checkpointed (TRIM), and an
//!   acceptor reuses a slot of its ring only for instances below the floor a
//!   trim quorum of learners has checkpointed plus the ring size, so a ring
//!   smaller than the log never overwrites an instance a learner still needs.
//!
//! The software baseline ("libpaxos-style", section 6.3) runs the very same
//! programs as ordinary processes ([`software::SoftwareNode`]).
//!
//! No I/O, no clock, no threads here (`clippy.toml`): time is an argument.

#![forbid(unsafe_code)]

pub mod acceptor;
pub mod backup;
pub mod check;
pub mod coordinator;
pub mod deploy;
pub mod envelope;
pub mod learner;
pub mod prepare;
pub mod proposer;
pub mod software;
pub mod trust;
pub mod vote_counter;
pub mod votes;
pub mod workload;

pub use acceptor::{Acceptor, AcceptorConfig};
pub use backup::{BackupConfig, BackupCoordinator};
pub use coordinator::{Coordinator, CoordinatorConfig};
pub use envelope::Envelope;
pub use learner::{Delivery, DeliveryKind, Learner, LearnerConfig};
pub use proposer::{Proposer, ProposerConfig};
pub use vote_counter::{VoteCounter, VoteCounterConfig};

/// Multicast group of the acceptors (coordinator's 2A, recoverers' 1A/2A,
/// learners' TRIM).
pub const GROUP_ACCEPTORS: u16 = 1;
/// Multicast group of everyone who learns votes: learners, proposers (a
/// proposer is also a learner of its own values, section 3.1) and the backup.
pub const GROUP_LEARNERS: u16 = 2;
/// Multicast group of the proposers (the backup's TAKEOVER).
pub const GROUP_PROPOSERS: u16 = 3;
/// Multicast group of a learner's peer learners (CATCHUP).
pub const GROUP_PEERS: u16 = 4;
/// A proposer's port to the coordinator; the backup's port to the coordinator
/// it watches.
pub const PORT_COORDINATOR: u16 = 0;
/// A proposer's and a learner's port to the backup coordinator.
pub const PORT_BACKUP: u16 = 1;

/// Rounds are `epoch << 8 | issuer`, so two issuers never share a round.
pub const fn round(epoch: u8, issuer: u8) -> u16 {
    (epoch as u16) << 8 | issuer as u16
}
/// The round acceptors are pre-initialised to: the switch coordinator's
/// (epoch 0, issuer 1).
pub const ROUND_INIT: u16 = 1;
/// Issuer number of the switch coordinator.
pub const ISSUER_COORDINATOR: u8 = 1;
/// Issuer number of the backup coordinator.
pub const ISSUER_BACKUP: u8 = 2;
/// Learner `k` recovers as issuer `ISSUER_LEARNER_BASE + k`.
pub const ISSUER_LEARNER_BASE: u8 = 16;
/// Most learners an acceptor tracks checkpoints for (its TRIM register array).
pub const MAX_LEARNERS: usize = 32;
/// Most acceptors (learners' vote bitmaps are u64).
pub const MAX_ACCEPTORS: usize = 64;

const _: () = assert!(ISSUER_LEARNER_BASE as usize + MAX_LEARNERS <= 256);
const _: () = assert!(round(0, ISSUER_COORDINATOR) == ROUND_INIT);

/// The majority of `n`.
pub fn majority(n: usize) -> usize {
    let m = n / 2 + 1;
    debug_assert!(2 * m > n, "two majorities of {n} intersect");
    m
}

/// The trim quorum a deployment uses: `configured`, or (0) a majority of
/// the learners.
pub fn trim_quorum(configured: usize, learners: usize) -> usize {
    let quorum = if configured == 0 { majority(learners) } else { configured };
    debug_assert!(quorum >= 1);
    quorum
}
