//! Phase 1 and 2 of Paxos for one instance in a round of our own: what
//! `recover(instance, noop)` runs (CAANS section 3.1, "Failure handling": "a
//! new execution of the Paxos protocol (phase 1+2) while proposing a no-op")
//! and what the backup coordinator runs for every instance it uses.
//!
//! Send 1A(inst, round) to the acceptors; once `quorum` of them promised,
//! propose the value of the highest voted round among their 1Bs, or our own
//! proposal if none voted; send 2A. If the instance is not decided by the
//! deadline, start over in the next epoch (a higher round of the same
//! issuer). The owner tells it when the instance was decided (it counts the
//! 2B votes it receives as a member of the learners' group).

use std::time::Duration;

use innet_core::{Dest, Outbox, Time};
use innet_wire::paxos::{MsgType, PaxosMsg, Value};

/// What the 1B quorum led to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase2 {
    /// Nobody had voted: our own proposal went out.
    Own,
    /// A value voted earlier went out instead of ours.
    Earlier(Value),
}

#[derive(Clone, Debug)]
pub struct Prepare {
    pub inst: u32,
    issuer: u8,
    epoch: u8,
    proposal: Value,
    promises: Vec<(u16, u16, Value)>,
    in_phase2: bool,
    deadline: Time,
    pub attempts: u32,
}

impl Prepare {
    /// Starts phase 1 in round `(epoch, issuer)`.
    pub fn start(
        inst: u32,
        issuer: u8,
        epoch: u8,
        proposal: Value,
        now: Time,
        timeout: Duration,
        out: &mut Outbox,
    ) -> Prepare {
        assert!(epoch >= 1, "epoch 0 belongs to the pre-initialised round");
        let mut p =
            Prepare { inst, issuer, epoch, proposal, promises: vec![], in_phase2: false, deadline: now, attempts: 0 };
        p.send_1a(now, timeout, out);
        debug_assert!(
            p.attempts == 1 && p.round() > crate::ROUND_INIT,
            "phase 1 in a round above the pre-initialised one"
        );
        p
    }

    pub fn round(&self) -> u16 {
        debug_assert!(self.epoch >= 1);
        crate::round(self.epoch, self.issuer)
    }

    /// The epoch of the round it runs now.
    pub fn epoch(&self) -> u8 {
        self.epoch
    }

    pub fn deadline(&self) -> Time {
        debug_assert!(self.attempts >= 1, "a deadline is set by the first 1A");
        self.deadline
    }

    fn send_1a(&mut self, now: Time, timeout: Duration, out: &mut Outbox) {
        self.promises.clear();
        self.in_phase2 = false;
        self.attempts += 1;
        self.deadline = now + timeout;
        let mut m = PaxosMsg::new(MsgType::Phase1A);
        m.inst = self.inst;
        m.rnd = self.round();
        out.send(Dest::Group(crate::GROUP_ACCEPTORS), m.encode());
    }

    /// Feeds a 1B; returns what phase 2 proposed when the quorum is reached.
    pub fn on_1b(&mut self, m: &PaxosMsg, quorum: usize, out: &mut Outbox) -> Option<Phase2> {
        if m.msgtype != MsgType::Phase1B || m.inst != self.inst || m.rnd != self.round() || self.in_phase2 {
            return None;
        }
        if self.promises.iter().any(|p| p.0 == m.acptid) {
            return None;
        }
        self.promises.push((m.acptid, m.vrnd, m.value));
        // Phase 2 starts at the quorum, after which no promise is taken.
        debug_assert!(self.promises.len() <= quorum.max(1), "{} promises, quorum {quorum}", self.promises.len());
        if self.promises.len() < quorum {
            return None;
        }
        // Paxos's rule: the value of the highest voted round, else ours.
        let best = self.promises.iter().filter(|p| p.1 > 0).max_by_key(|p| p.1).map(|p| p.2);
        let (value, outcome) = match best {
            Some(v) if v != self.proposal => (v, Phase2::Earlier(v)),
            _ => (self.proposal, Phase2::Own),
        };
        debug_assert!(best.is_none_or(|b| b == value), "phase 2 proposes the highest voted value");
        self.in_phase2 = true;
        let mut a = PaxosMsg::new(MsgType::Phase2A);
        a.inst = self.inst;
        a.rnd = self.round();
        a.value = value;
        out.send(Dest::Group(crate::GROUP_ACCEPTORS), a.encode());
        Some(outcome)
    }

    /// Starts over in the next epoch once the deadline passed. Returns
    /// whether the deadline had passed (after the last epoch, 255, it only
    /// moves the deadline on: no round is ever used twice).
    pub fn on_tick(&mut self, now: Time, timeout: Duration, out: &mut Outbox) -> bool {
        if now < self.deadline {
            return false;
        }
        if self.epoch == u8::MAX {
            // Out of rounds: retrying in the same round could propose a
            // second value in it. Stop using the acceptors (liveness, never
            // safety); the caller may still ask elsewhere (peers).
            self.deadline = now + timeout;
            return true;
        }
        let round_before = self.round();
        self.epoch += 1;
        self.send_1a(now, timeout, out);
        debug_assert!(self.round() > round_before, "no round is used twice");
        true
    }

    /// Replaces the proposal (the backup re-queues a displaced request).
    pub fn set_proposal(&mut self, v: Value) {
        debug_assert!(!self.in_phase2, "a proposal changes only before phase 2 of a round");
        self.proposal = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_b(inst: u32, rnd: u16, acpt: u16, vrnd: u16, v: &[u8]) -> PaxosMsg {
        let mut m = PaxosMsg::new(MsgType::Phase1B);
        m.inst = inst;
        m.rnd = rnd;
        m.acptid = acpt;
        m.vrnd = vrnd;
        m.value = Value::new(v).unwrap();
        m
    }

    /// Paxos phase 2's value rule: with an earlier vote in the quorum, that
    /// value (of the highest round) is proposed, not ours.
    #[test]
    fn proposes_the_highest_voted_value_else_its_own() {
        let mut out = Outbox::new();
        let noop = Value::new(b"noop").unwrap();
        let mut p = Prepare::start(5, 16, 1, noop, Time::ZERO, Duration::from_millis(1), &mut out);
        assert_eq!(out.sends.len(), 1);
        let r = p.round();
        assert_eq!(p.on_1b(&one_b(5, r, 0, 1, b"old"), 2, &mut out), None);
        assert_eq!(p.on_1b(&one_b(5, r, 0, 1, b"old"), 2, &mut out), None, "duplicate promise");
        let got = p.on_1b(&one_b(5, r, 1, 0, b""), 2, &mut out);
        assert_eq!(got, Some(Phase2::Earlier(Value::new(b"old").unwrap())));
        let a = PaxosMsg::decode(&out.sends[1].1).unwrap();
        assert_eq!((a.msgtype, a.inst, a.rnd, a.value.as_slice()), (MsgType::Phase2A, 5, r, &b"old"[..]));

        let mut q = Prepare::start(6, 16, 1, noop, Time::ZERO, Duration::from_millis(1), &mut out);
        q.on_1b(&one_b(6, r, 0, 0, b""), 2, &mut out);
        assert_eq!(q.on_1b(&one_b(6, r, 2, 0, b""), 2, &mut out), Some(Phase2::Own));
    }

    #[test]
    fn retries_in_a_higher_round_after_the_deadline() {
        let mut out = Outbox::new();
        let mut p = Prepare::start(1, 16, 1, Value::EMPTY, Time::ZERO, Duration::from_millis(1), &mut out);
        let r1 = p.round();
        assert!(!p.on_tick(Time(500_000), Duration::from_millis(1), &mut out));
        assert!(p.on_tick(Time(1_000_000), Duration::from_millis(1), &mut out));
        assert!(p.round() > r1);
        assert_eq!(p.round() & 0xff, 16, "same issuer");
        // A 1B for the old round no longer counts.
        assert_eq!(p.on_1b(&one_b(1, r1, 0, 0, b""), 1, &mut out), None);
        // Rounds run out at epoch 255; no round is sent twice.
        let mut t = Time(2_000_000);
        while p.round() >> 8 < 255 {
            p.on_tick(t, Duration::from_millis(1), &mut out);
            t = t + Duration::from_millis(1);
        }
        let sent = out.sends.len();
        assert!(p.on_tick(t, Duration::from_millis(1), &mut out));
        assert_eq!(out.sends.len(), sent, "no 1A in a used round");
    }
}
