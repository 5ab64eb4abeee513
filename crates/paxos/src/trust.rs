//! Who may send what: the consensus service's trust boundary.
//!
//! Every role accepts each message type only from the peers its deployment
//! ([`crate::deploy`]) says may send it (the table in [`allowed`]); a packet
//! from anyone else is rejected before the role sees it and counted by
//! reason ([`Reject::name`]). Runtimes identify the sender by what they
//! know of it (the simulator by node, the live runtime by source address
//! and port, XDP by ingress interface and source address) and look it up
//! in a [`Senders`] table built from the deployment ([`senders`]).
//!
//! Rounds are `epoch << 8 | issuer` and an issuer is one sender: a 1A or
//! 2A must carry its sender's own issuer ([`issuer_of`]), so a learner
//! cannot raise a round in another issuer's name, and the coordinator's
//! own round (issuer 1) comes only from the coordinator.
//!
//! REQUESTs are the service's entrance: the coordinator and the backup take
//! them from anyone, but only with a proposer id of the sender's own block
//! ([`crate::envelope`]): deployment proposer `i` owns block `i + 1`,
//! senders the deployment does not name share block 0, other nodes own
//! none. So no sender can submit in a deployment proposer's name and make
//! learners drop that proposer's values as duplicates (issue 21:
//! `foreign_proposer`). A value that is no envelope (shorter than its
//! header) names no proposer and passes: learners deliver it without
//! de-duplication, so it cannot poison it. A vote
//! counter in front of a learner turns acceptors' 2Bs into a DECIDED that
//! keeps the vote's source, so learners, proposers and the backup take
//! DECIDED from acceptors as well as from their peer learners.

use std::collections::HashMap;
use std::hash::Hash;

use innet_core::deploy::NodeIx;
use innet_wire::paxos::{offset, MsgType, PACKET_LEN};

use crate::deploy::{PaxosDeployment, PaxosRole};
use crate::envelope::{proposer_block, proposer_of_packet, OUTSIDE_BLOCK};

/// Sender classes, one bit each.
pub mod class {
    pub const COORDINATOR: u8 = 1;
    pub const BACKUP: u8 = 2;
    pub const ACCEPTOR: u8 = 4;
    pub const LEARNER: u8 = 8;
    pub const PROPOSER: u8 = 16;
    /// Senders the deployment does not name (a REQUEST's proposer).
    pub const OUTSIDE: u8 = 128;
    /// Anyone.
    pub const ANY: u8 = 0xff;
}

/// A role's kind, as the rules see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Coordinator,
    Acceptor,
    Backup,
    Learner,
    Proposer,
}

impl Kind {
    pub fn of(role: PaxosRole) -> Kind {
        match role {
            PaxosRole::Coordinator => Kind::Coordinator,
            PaxosRole::Acceptor { .. } => Kind::Acceptor,
            PaxosRole::Backup => Kind::Backup,
            PaxosRole::Learner { .. } => Kind::Learner,
            PaxosRole::Proposer { .. } => Kind::Proposer,
        }
    }
    /// The number the BPF programs use (`INNET_PAXOS_KIND_*`).
    pub const fn code(self) -> u8 {
        self as u8
    }
}

/// The class bit of a node with `role`.
pub fn class_of(role: PaxosRole) -> u8 {
    let class = match role {
        PaxosRole::Coordinator => class::COORDINATOR,
        PaxosRole::Acceptor { .. } => class::ACCEPTOR,
        PaxosRole::Backup => class::BACKUP,
        PaxosRole::Learner { .. } => class::LEARNER,
        PaxosRole::Proposer { .. } => class::PROPOSER,
    };
    debug_assert!(class.count_ones() == 1 && class != class::OUTSIDE, "one class bit, never the outsiders'");
    class
}

/// The proposer block of deployment nodes that propose nothing: no id is in it.
pub const NO_BLOCK: u16 = u16::MAX;

/// The proposer block a node with `role` owns ([`crate::envelope::proposer_id`]).
pub fn block_of(role: PaxosRole) -> u16 {
    let block = match role {
        PaxosRole::Proposer { index } => index + 1,
        _ => NO_BLOCK,
    };
    debug_assert_ne!(block, OUTSIDE_BLOCK, "the outsiders' block belongs to no node");
    block
}

/// What the rules know of a node with `role`.
pub fn sender_of(role: PaxosRole) -> Sender {
    debug_assert!(issuer_of(role) == 0 || class_of(role) & (class::COORDINATOR | class::BACKUP | class::LEARNER) != 0);
    Sender { class: class_of(role), issuer: issuer_of(role), proposer: block_of(role) }
}

/// The round issuer a node with `role` uses (0: it issues no rounds).
pub fn issuer_of(role: PaxosRole) -> u8 {
    let issuer = match role {
        PaxosRole::Coordinator => crate::ISSUER_COORDINATOR,
        PaxosRole::Backup => crate::ISSUER_BACKUP,
        PaxosRole::Learner { id } => crate::ISSUER_LEARNER_BASE + id as u8,
        _ => 0,
    };
    debug_assert!(
        issuer == 0 || matches!(role, PaxosRole::Coordinator | PaxosRole::Backup | PaxosRole::Learner { .. }),
        "only coordinators and learners issue rounds"
    );
    issuer
}

/// The classes a `kind` role takes `t` from (0: nobody).
pub fn allowed(kind: Kind, t: MsgType) -> u8 {
    use class::*;
    use MsgType as M;
    match (kind, t) {
        (Kind::Coordinator, M::Request) => ANY,
        (Kind::Coordinator, M::Heartbeat) => BACKUP,
        (Kind::Coordinator, M::Trim) => LEARNER,
        // A restarted coordinator (failback) runs phase 1 and counts votes
        // (it is in the acceptors' vote group only in failback
        // deployments), and hears the backup's round.
        (Kind::Coordinator, M::Phase1B | M::Phase2B | M::Decided) => ACCEPTOR,
        (Kind::Coordinator, M::Takeover) => BACKUP,
        (Kind::Acceptor, M::Phase1A | M::Phase2A) => COORDINATOR | BACKUP | LEARNER,
        (Kind::Acceptor, M::Trim) => LEARNER,
        (Kind::Backup, M::Request) => ANY,
        (Kind::Backup, M::Heartbeat) => COORDINATOR,
        (Kind::Backup, M::Phase1B | M::Phase2B) => ACCEPTOR,
        (Kind::Backup, M::Decided) => ACCEPTOR,
        (Kind::Backup, M::Trim) => LEARNER,
        // A restarted coordinator taking the role back (failback).
        (Kind::Backup, M::Takeover) => COORDINATOR,
        (Kind::Learner, M::Phase1B | M::Phase2B) => ACCEPTOR,
        (Kind::Learner, M::Decided) => ACCEPTOR | LEARNER,
        (Kind::Learner, M::Catchup) => LEARNER,
        (Kind::Learner, M::Window) => COORDINATOR | BACKUP,
        // For the proposers in a learner's process that the deployment
        // does not name (a key-value replica's front end).
        (Kind::Learner, M::Takeover) => BACKUP | COORDINATOR,
        (Kind::Proposer, M::Phase2B | M::Decided) => ACCEPTOR,
        (Kind::Proposer, M::Takeover) => BACKUP | COORDINATOR,
        _ => 0,
    }
}

/// Why a packet was refused before its role saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reject {
    /// A message type this sender may not send to this role (an unknown
    /// sender, or a peer of the wrong kind).
    Untrusted(MsgType),
    /// A 1A or 2A whose round is not its sender's issuer's.
    ForeignRound,
    /// A REQUEST whose envelope names a proposer outside its sender's block.
    ForeignProposer,
    /// A TRIM in another learner's name: its `acptid` (the learner whose
    /// checkpoint it reports) is not its sender's learner id, so one
    /// learner cannot move the acceptors' trim floor for the others.
    ForeignLearner,
}

impl Reject {
    /// The counter name (`untrusted_<type>`, `foreign_round`).
    pub fn name(self) -> &'static str {
        debug_assert!(self.index() < REJECT_NAMES.len());
        match self {
            Reject::ForeignRound => "foreign_round",
            Reject::ForeignProposer => "foreign_proposer",
            Reject::ForeignLearner => "foreign_learner",
            Reject::Untrusted(t) => UNTRUSTED_NAMES[t as usize],
        }
    }
    /// The index of this reason in [`REJECT_NAMES`] (the BPF counters'
    /// order too).
    pub const fn index(self) -> usize {
        match self {
            Reject::Untrusted(t) => t as usize,
            Reject::ForeignRound => MsgType::ALL.len(),
            Reject::ForeignProposer => MsgType::ALL.len() + 1,
            Reject::ForeignLearner => MsgType::ALL.len() + 2,
        }
    }
}

const UNTRUSTED_NAMES: [&str; 11] = [
    "untrusted_phase_1a",
    "untrusted_phase_1b",
    "untrusted_phase_2a",
    "untrusted_phase_2b",
    "untrusted_request",
    "untrusted_trim",
    "untrusted_heartbeat",
    "untrusted_takeover",
    "untrusted_catchup",
    "untrusted_decided",
    "untrusted_window",
];

/// Every reason, in [`Reject::index`] order.
pub const REJECT_NAMES: [&str; 14] = [
    UNTRUSTED_NAMES[0],
    UNTRUSTED_NAMES[1],
    UNTRUSTED_NAMES[2],
    UNTRUSTED_NAMES[3],
    UNTRUSTED_NAMES[4],
    UNTRUSTED_NAMES[5],
    UNTRUSTED_NAMES[6],
    UNTRUSTED_NAMES[7],
    UNTRUSTED_NAMES[8],
    UNTRUSTED_NAMES[9],
    UNTRUSTED_NAMES[10],
    "foreign_round",
    "foreign_proposer",
    "foreign_learner",
];

/// What the rules know of one sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Sender {
    /// Its class bit ([`class`]); [`class::OUTSIDE`] for unknown senders.
    pub class: u8,
    /// The round issuer it uses (0: none).
    pub issuer: u8,
    /// The block of the proposer ids it may submit ([`block_of`]).
    pub proposer: u16,
}

impl Sender {
    pub const OUTSIDE: Sender = Sender { class: class::OUTSIDE, issuer: 0, proposer: OUTSIDE_BLOCK };
}

/// The admission rule for a packet from `from` at a `kind` role. Packets
/// too short to carry a message type, or with an unknown one, pass: the
/// role's decoder counts them.
pub fn check(kind: Kind, from: Sender, packet: &[u8]) -> Result<(), Reject> {
    if packet.len() < PACKET_LEN {
        return Ok(());
    }
    let Some(t) = MsgType::from_u16(u16::from_be_bytes([packet[0], packet[1]])) else { return Ok(()) };
    if allowed(kind, t) & from.class == 0 {
        return Err(Reject::Untrusted(t));
    }
    if kind == Kind::Acceptor && matches!(t, MsgType::Phase1A | MsgType::Phase2A) && packet[7] != from.issuer {
        return Err(Reject::ForeignRound);
    }
    if t == MsgType::Request && proposer_of_packet(packet).is_some_and(|p| proposer_block(p) != from.proposer) {
        return Err(Reject::ForeignProposer);
    }
    if t == MsgType::Trim && !trim_in_own_name(from, packet) {
        return Err(Reject::ForeignLearner);
    }
    debug_assert!(allowed(kind, t) & from.class != 0);
    Ok(())
}

/// A TRIM reports its sender's own checkpoint: its `acptid` is the learner
/// id of the sender's issuer (`ISSUER_LEARNER_BASE + id`). Only learners
/// may send a TRIM ([`allowed`]), so any other sender has failed before.
fn trim_in_own_name(from: Sender, packet: &[u8]) -> bool {
    debug_assert!(packet.len() >= PACKET_LEN);
    let acptid = u16::from_be_bytes([packet[offset::ACPTID], packet[offset::ACPTID + 1]]);
    from.issuer.checked_sub(crate::ISSUER_LEARNER_BASE).is_some_and(|id| u16::from(id) == acptid)
}

/// One node's senders, by whatever address its runtime sees.
#[derive(Clone, Debug)]
pub struct Senders<A> {
    pub kind: Kind,
    pub by_addr: HashMap<A, Sender>,
}

impl<A: Eq + Hash> Senders<A> {
    /// [`check`] for a packet from `from`.
    pub fn check(&self, from: &A, packet: &[u8]) -> Result<(), Reject> {
        debug_assert!(self.by_addr.values().all(|s| s.class != class::OUTSIDE), "named senders are not outsiders");
        check(self.kind, self.by_addr.get(from).copied().unwrap_or(Sender::OUTSIDE), packet)
    }
}

/// Node `n`'s senders: every other node of `d` by its address in `addrs`.
pub fn senders<A: Eq + Hash + Clone>(d: &PaxosDeployment, addrs: &[A], n: NodeIx) -> Senders<A> {
    let by_addr = d
        .nodes
        .iter()
        .enumerate()
        .filter(|&(j, _)| j != n)
        .map(|(j, node)| (addrs[j].clone(), sender_of(node.role)))
        .collect::<HashMap<A, Sender>>();
    Senders { kind: Kind::of(d.nodes[n].role), by_addr }
}

/// The proposer id of [`forged`] values: no proposer of a deployment has it.
pub const FORGED_PROPOSER: u32 = 7_777;

/// A forged message as an outside sender would make it (the attacks of the
/// live and XDP trust tests): type `t`, instance `inst`, round and vote
/// round `rnd`, a value from [`FORGED_PROPOSER`] carrying `payload`
/// (at most the envelope's payload).
pub fn forged(t: MsgType, inst: u32, rnd: u16, payload: &[u8]) -> Vec<u8> {
    let mut m = innet_wire::paxos::PaxosMsg::new(t);
    m.inst = inst;
    m.rnd = rnd;
    m.vrnd = rnd;
    m.value = crate::Envelope::new(FORGED_PROPOSER, 1, payload).expect("a short payload").to_value();
    debug_assert_eq!(proposer_block(FORGED_PROPOSER), OUTSIDE_BLOCK, "a forged value names no deployment proposer");
    m.encode()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deploy::{deployment, PaxosShape};
    use innet_wire::paxos::PaxosMsg;
    use std::time::Duration;

    fn msg(t: MsgType, rnd: u16) -> Vec<u8> {
        let mut m = PaxosMsg::new(t);
        m.rnd = rnd;
        m.encode()
    }

    #[test]
    fn each_role_takes_each_type_only_from_its_senders() {
        let d = deployment(PaxosShape::default(), Duration::ZERO);
        let addrs: Vec<usize> = (0..d.nodes.len()).collect();
        let find = |name| d.find(name).unwrap();
        let at = |n: &'static str| senders(&d, &addrs, find(n));
        let (acceptor, learner, proposer) = (at("acceptor0"), at("learner0"), at("proposer0"));
        let outsider = 1000;
        let two_a = msg(MsgType::Phase2A, crate::ROUND_INIT);
        assert_eq!(acceptor.check(&find("coordinator"), &two_a), Ok(()));
        assert_eq!(acceptor.check(&outsider, &two_a), Err(Reject::Untrusted(MsgType::Phase2A)));
        assert_eq!(acceptor.check(&find("proposer0"), &two_a), Err(Reject::Untrusted(MsgType::Phase2A)));
        // A learner may run phase 1 and 2 only in its own rounds.
        let own = msg(MsgType::Phase1A, crate::round(3, crate::ISSUER_LEARNER_BASE));
        assert_eq!(acceptor.check(&find("learner0"), &own), Ok(()));
        assert_eq!(acceptor.check(&find("learner1"), &own), Err(Reject::ForeignRound));
        assert_eq!(acceptor.check(&find("learner0"), &msg(MsgType::Phase1A, 0xffff)), Err(Reject::ForeignRound));
        let decided = msg(MsgType::Decided, 0);
        assert_eq!(learner.check(&find("learner1"), &decided), Ok(()));
        assert_eq!(learner.check(&outsider, &decided), Err(Reject::Untrusted(MsgType::Decided)));
        assert_eq!(learner.check(&outsider, &msg(MsgType::Window, 0)), Err(Reject::Untrusted(MsgType::Window)));
        assert_eq!(proposer.check(&find("backup"), &msg(MsgType::Takeover, 0)), Ok(()));
        // Failback: a restarted coordinator announces its round too.
        assert_eq!(proposer.check(&find("coordinator"), &msg(MsgType::Takeover, 0)), Ok(()));
        assert_eq!(at("backup").check(&find("coordinator"), &msg(MsgType::Takeover, 0)), Ok(()));
        assert_eq!(
            at("backup").check(&find("acceptor0"), &msg(MsgType::Takeover, 0)),
            Err(Reject::Untrusted(MsgType::Takeover))
        );
        assert_eq!(at("coordinator").check(&find("acceptor1"), &msg(MsgType::Phase2B, 0)), Ok(()));
        assert_eq!(
            at("coordinator").check(&find("learner0"), &msg(MsgType::Phase2B, 0)),
            Err(Reject::Untrusted(MsgType::Phase2B))
        );
        assert_eq!(
            proposer.check(&find("learner0"), &msg(MsgType::Takeover, 0)).unwrap_err().name(),
            "untrusted_takeover"
        );
        // Requests are the service's entrance; short packets are the decoder's.
        assert_eq!(at("coordinator").check(&outsider, &msg(MsgType::Request, 0)), Ok(()));
        // ... but only with proposer ids of the sender's own block.
        let request = |proposer| {
            let mut m = PaxosMsg::new(MsgType::Request);
            m.value = crate::Envelope::new(proposer, 5, b"v").unwrap().to_value();
            m.encode()
        };
        let own = crate::envelope::proposer_id(0, 3);
        for kind in ["coordinator", "backup"] {
            let c = at(kind);
            assert_eq!(c.check(&find("proposer0"), &request(own)), Ok(()));
            assert_eq!(c.check(&outsider, &request(own)), Err(Reject::ForeignProposer), "{kind}");
            assert_eq!(c.check(&find("learner0"), &request(own)), Err(Reject::ForeignProposer));
            assert_eq!(c.check(&find("proposer0"), &request(7)), Err(Reject::ForeignProposer), "block 0 is outsiders'");
            assert_eq!(c.check(&outsider, &request(7)), Ok(()), "outsiders share block 0");
        }
        assert_eq!(Reject::ForeignProposer.name(), REJECT_NAMES[Reject::ForeignProposer.index()]);
        assert_eq!(learner.check(&outsider, &[9, 9]), Ok(()));
    }

    #[test]
    fn a_learner_trims_only_in_its_own_name() {
        let d = deployment(PaxosShape::default(), Duration::ZERO);
        let addrs: Vec<usize> = (0..d.nodes.len()).collect();
        let find = |name| d.find(name).unwrap();
        let trim = |learner: u16| {
            let mut m = PaxosMsg::new(MsgType::Trim);
            m.inst = 500;
            m.acptid = learner;
            m.encode()
        };
        for kind in ["coordinator", "acceptor0", "backup"] {
            let s = senders(&d, &addrs, find(kind));
            assert_eq!(s.check(&find("learner0"), &trim(0)), Ok(()), "{kind}");
            assert_eq!(s.check(&find("learner1"), &trim(1)), Ok(()), "{kind}");
            // One learner cannot report the other's checkpoint, and so
            // cannot move the trim floor alone.
            assert_eq!(s.check(&find("learner1"), &trim(0)), Err(Reject::ForeignLearner), "{kind}");
            assert_eq!(s.check(&find("learner0"), &trim(1)), Err(Reject::ForeignLearner), "{kind}");
            assert_eq!(s.check(&find("learner0"), &trim(u16::MAX)), Err(Reject::ForeignLearner), "{kind}");
            assert_eq!(s.check(&find("proposer0"), &trim(0)), Err(Reject::Untrusted(MsgType::Trim)), "{kind}");
        }
        assert_eq!(Reject::ForeignLearner.name(), REJECT_NAMES[Reject::ForeignLearner.index()]);
    }
}
