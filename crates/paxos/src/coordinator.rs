//! The coordinator as a data-plane program (CAANS section 3, Figure 1): it
//! keeps the next instance number in one register and turns each client
//! REQUEST, in place, into a phase-2A for that instance in its round, which
//! it multicasts to the acceptors. It never runs phase 1: acceptors are
//! pre-initialised to its round ([`crate::ROUND_INIT`]). It reflects the
//! backup coordinator's HEARTBEAT so the backup can tell it is alive.
//!
//! Flow control with log trimming: learners send their checkpoint (TRIM) to
//! the coordinator as well as to the acceptors. The coordinator keeps the
//! same trim floor as the acceptors and hands out instances only below
//! `floor + slots` (the acceptors' ring); a request beyond is dropped and its
//! proposer resubmits later. Otherwise the instance counter could run ahead
//! of every acceptor's ring and no instance would ever be voted again. It
//! answers each TRIM with WINDOW (its next instance), so learners also
//! recover instances whose 2As were all lost when no later instance shows
//! the gap.

use innet_core::{Counters, DataPlane, Verdict};
use innet_wire::paxos::{MsgType, PaxosPacket};

use crate::acceptor::TrimFloor;

/// What the control plane writes (the values an XDP map would hold).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoordinatorConfig {
    /// The round of every 2A ([`crate::ROUND_INIT`] for the switch coordinator).
    pub round: u16,
    /// The first instance number handed out.
    pub first_instance: u32,
    /// Multicast group of the acceptors.
    pub acceptor_group: u16,
    /// The acceptors' ring size: instances are handed out only below
    /// `trim floor + slots`.
    pub slots: usize,
    /// Learners that report checkpoints, and how many make the trim floor
    /// (as configured at the acceptors).
    pub learners: usize,
    pub trim_quorum: usize,
}

impl CoordinatorConfig {
    pub fn new(learners: usize) -> CoordinatorConfig {
        let config = CoordinatorConfig {
            round: crate::ROUND_INIT,
            first_instance: 0,
            acceptor_group: crate::GROUP_ACCEPTORS,
            slots: crate::acceptor::ACCEPTOR_SLOTS_DEFAULT,
            learners,
            trim_quorum: crate::majority(learners),
        };
        debug_assert!(config.trim_quorum <= learners.max(1), "a trim quorum of at most the learners");
        config
    }
}

#[derive(Clone, Debug)]
pub struct Coordinator {
    config: CoordinatorConfig,
    next: u32,
    trim: TrimFloor,
    requests: u64,
    window_full: u64,
    trims: u64,
    heartbeats: u64,
    ignored: u64,
    decode_errors: u64,
}

impl Coordinator {
    pub fn new(config: CoordinatorConfig) -> Coordinator {
        Coordinator {
            config,
            next: config.first_instance,
            trim: TrimFloor::new(config.learners, config.trim_quorum),
            requests: 0,
            window_full: 0,
            trims: 0,
            heartbeats: 0,
            ignored: 0,
            decode_errors: 0,
        }
    }
    /// The instance the next request gets.
    pub fn next_instance(&self) -> u32 {
        debug_assert!(self.handed_out_in_order());
        self.next
    }

    /// Instances are handed out one per request, in order, from
    /// `first_instance`: none twice (what makes round 1 safe without
    /// phase 1), the counter never back.
    fn handed_out_in_order(&self) -> bool {
        u64::from(self.next) == u64::from(self.config.first_instance) + self.requests
    }
}

impl DataPlane for Coordinator {
    fn process(&mut self, packet: &mut [u8]) -> Verdict {
        let Ok(mut p) = PaxosPacket::parse(packet) else {
            self.decode_errors += 1;
            return Verdict::Drop;
        };
        match p.msgtype() {
            MsgType::Request => {
                // Instance u32::MAX is never handed out (the last one a
                // learner could deliver is u32::MAX - 1).
                if self.next as u64 >= self.trim.floor() as u64 + self.config.slots as u64 || self.next == u32::MAX {
                    self.window_full += 1;
                    return Verdict::Drop;
                }
                // An instance number is never handed out twice in one round:
                // that is what makes round 1 safe without phase 1.
                p.set_msgtype(MsgType::Phase2A);
                p.set_inst(self.next);
                p.set_rnd(self.config.round);
                p.set_vrnd(0);
                p.set_acptid(0);
                self.next += 1;
                self.requests += 1;
                debug_assert!(self.handed_out_in_order());
                debug_assert!(
                    u64::from(self.next) <= u64::from(self.trim.floor()) + self.config.slots as u64,
                    "an instance handed out beyond the acceptors' ring"
                );
                Verdict::Multicast { group: self.config.acceptor_group }
            }
            MsgType::Heartbeat => {
                self.heartbeats += 1;
                Verdict::Reflect
            }
            MsgType::Trim => {
                if !self.trim.report(p.acptid(), p.inst()) {
                    self.ignored += 1;
                    return Verdict::Drop;
                }
                self.trims += 1;
                p.set_msgtype(MsgType::Window);
                p.set_inst(self.next);
                debug_assert!(self.handed_out_in_order());
                Verdict::Reflect
            }
            _ => {
                self.ignored += 1;
                Verdict::Drop
            }
        }
    }
}

impl Counters for Coordinator {
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("requests", self.requests),
            ("window_full", self.window_full),
            ("trims", self.trims),
            ("heartbeats", self.heartbeats),
            ("ignored", self.ignored),
            ("decode_errors", self.decode_errors),
        ]
    }
}

/// Read-only view of the trim registers, for the XDP differential test.
impl Coordinator {
    pub fn trim(&self) -> &TrimFloor {
        debug_assert!(self.trim.learners() == self.config.learners);
        &self.trim
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::Envelope;
    use innet_wire::paxos::PaxosMsg;

    fn request(n: u32) -> Vec<u8> {
        let mut m = PaxosMsg::new(MsgType::Request);
        m.value = Envelope::new(1, n, b"x").unwrap().to_value();
        m.encode()
    }

    /// Section 3 / Figure 1: each request becomes a 2A for the next instance
    /// in the coordinator's round, multicast to the acceptors; the value is
    /// untouched.
    #[test]
    fn requests_become_2a_for_consecutive_instances() {
        let mut c = Coordinator::new(CoordinatorConfig { first_instance: 10, ..CoordinatorConfig::new(1) });
        for n in 0..3 {
            let mut b = request(n);
            assert_eq!(c.process(&mut b), Verdict::Multicast { group: crate::GROUP_ACCEPTORS });
            let m = PaxosMsg::decode(&b).unwrap();
            assert_eq!((m.msgtype, m.inst, m.rnd), (MsgType::Phase2A, 10 + n, crate::ROUND_INIT));
            assert_eq!(Envelope::from_value(&m.value).unwrap().request, n);
        }
        assert_eq!(c.next_instance(), 13);
    }

    #[test]
    fn heartbeats_are_reflected_and_garbage_dropped() {
        let mut c = Coordinator::new(CoordinatorConfig::new(1));
        let mut hb = PaxosMsg::new(MsgType::Heartbeat).encode();
        assert_eq!(c.process(&mut hb), Verdict::Reflect);
        assert_eq!(c.process(&mut [1, 2, 3]), Verdict::Drop);
        let mut vote = PaxosMsg::new(MsgType::Phase2B).encode();
        assert_eq!(c.process(&mut vote), Verdict::Drop);
        assert_eq!(c.next_instance(), 0);
        let c: std::collections::HashMap<_, _> = c.counters().into_iter().collect();
        assert_eq!((c["requests"], c["heartbeats"], c["ignored"], c["decode_errors"]), (0, 1, 1, 1));
    }

    /// Instances are handed out only within the acceptors' ring above the
    /// trim floor; a TRIM is answered with the next instance.
    #[test]
    fn hands_out_instances_only_within_the_ring() {
        let mut c = Coordinator::new(CoordinatorConfig { slots: 2, ..CoordinatorConfig::new(1) });
        assert!(matches!(c.process(&mut request(1)), Verdict::Multicast { .. }));
        assert!(matches!(c.process(&mut request(2)), Verdict::Multicast { .. }));
        assert_eq!(c.process(&mut request(3)), Verdict::Drop);
        let mut t = PaxosMsg::new(MsgType::Trim);
        t.inst = 1;
        let mut b = t.encode();
        assert_eq!(c.process(&mut b), Verdict::Reflect);
        let w = PaxosMsg::decode(&b).unwrap();
        assert_eq!((w.msgtype, w.inst), (MsgType::Window, 2));
        assert!(matches!(c.process(&mut request(3)), Verdict::Multicast { .. }));
        assert_eq!(c.next_instance(), 3);
    }
}
