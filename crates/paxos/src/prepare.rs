//! Phase 1 and 2 of Paxos for one instance in a round of our own: what
//! `recover(instance, noop)` runs (CAANS section 3.1, "Failure handling": "a
//! new execution of the Paxos protocol (phase 1+2) while proposing a no-op")
//! and what the backup coordinator runs for every instance it uses.
//!
//! Send 1A(inst, round) to the acceptors; once `quorum` of them promised,
//! propose the value of the highest voted round among their 1Bs, or our own
//! proposal if none voted; send 2A. If the instance is not decided by the
//! deadline, try again in the same round: the 1A again (the promises already
//! received still count), or, once phase 2 began, the same 2A again (one
//! round never proposes two values for an instance). Only after
//! [`Prepare::tries_per_round`] tries in one round does it start over in the
//! next epoch (a higher round of the same issuer), since an acceptor that
//! promised a higher round drops our messages without a word. The tries per
//! round double with each epoch up to 256, so an instance stuck for `n`
//! timeouts uses about `7 + n / 256` epochs, not `n`: rounds are 8 bits of
//! epoch (the P4xos header's 16-bit round), and every epoch a retry takes
//! is one fewer for failovers. The owner tells it when the instance was decided (it counts
//! the 2B votes it receives as a member of the learners' group).

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

/// Tries in the first round of a [`Prepare`] before it moves to the next
/// epoch (the first 1A included); each later round gets twice as many.
pub const TRIES_FIRST_ROUND: u32 = 4;

/// Doublings of [`TRIES_FIRST_ROUND`] at most: a round gets at most
/// `4 << 6` = 256 tries (about 5 s at the default 20 ms timeout).
pub const TRIES_DOUBLINGS_MAX: u32 = 6;

#[derive(Clone, Debug)]
pub struct Prepare {
    pub inst: u32,
    issuer: u8,
    epoch: u8,
    proposal: Value,
    promises: Vec<(u16, u16, Value)>,
    /// The value of this round's 2A, once phase 2 began in it.
    sent: Option<Value>,
    deadline: Time,
    /// 1As and 2As sent, over all rounds.
    pub attempts: u32,
    /// Tries in the current round.
    tries: u32,
    /// Rounds started (the first included).
    rounds: u32,
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
        let mut p = Prepare {
            inst,
            issuer,
            epoch,
            proposal,
            promises: vec![],
            sent: None,
            deadline: now,
            attempts: 0,
            tries: 0,
            rounds: 1,
        };
        p.send_1a(now, timeout, out);
        debug_assert!(
            p.attempts == 1 && p.tries == 1 && p.round() > crate::ROUND_INIT,
            "phase 1 in a round above the pre-initialised one"
        );
        p
    }

    /// Tries in the current round before the next epoch: 4, 8, 16, ...,
    /// 256 for the first, second, third... round of this instance.
    pub fn tries_per_round(&self) -> u32 {
        debug_assert!(self.rounds >= 1);
        TRIES_FIRST_ROUND << (self.rounds - 1).min(TRIES_DOUBLINGS_MAX)
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

    /// Sends this round's 1A (again: the promises received stay).
    fn send_1a(&mut self, now: Time, timeout: Duration, out: &mut Outbox) {
        debug_assert!(self.sent.is_none(), "no 1A after this round's 2A");
        self.attempts += 1;
        self.tries += 1;
        self.deadline = now + timeout;
        let mut m = PaxosMsg::new(MsgType::Phase1A);
        m.inst = self.inst;
        m.rnd = self.round();
        out.send(Dest::Group(crate::GROUP_ACCEPTORS), m.encode());
    }

    /// Sends this round's 2A of `value` (again only with the same value).
    fn send_2a(&mut self, value: Value, out: &mut Outbox) {
        debug_assert!(self.sent.is_none_or(|v| v == value), "one round proposes one value");
        self.sent = Some(value);
        let mut a = PaxosMsg::new(MsgType::Phase2A);
        a.inst = self.inst;
        a.rnd = self.round();
        a.value = value;
        out.send(Dest::Group(crate::GROUP_ACCEPTORS), a.encode());
    }

    /// Feeds a 1B; returns what phase 2 proposed when the quorum is reached.
    pub fn on_1b(&mut self, m: &PaxosMsg, quorum: usize, out: &mut Outbox) -> Option<Phase2> {
        if m.msgtype != MsgType::Phase1B || m.inst != self.inst || m.rnd != self.round() || self.sent.is_some() {
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
        self.send_2a(value, out);
        Some(outcome)
    }

    /// Tries again once the deadline passed: in the same round while it
    /// has tries left ([`Prepare::tries_per_round`]), else in the next
    /// epoch. Returns whether the deadline had passed. After the last
    /// epoch, 255, the same round goes on being tried (its 1A, or its one
    /// 2A value): never a round above, never a second value in one.
    pub fn on_tick(&mut self, now: Time, timeout: Duration, out: &mut Outbox) -> bool {
        if now < self.deadline {
            return false;
        }
        let round_before = self.round();
        if self.tries >= self.tries_per_round() && self.epoch < u8::MAX {
            // Acceptors drop a lower round silently: after this many tries
            // a higher round may hold their promises. Phase 1 again.
            self.epoch += 1;
            self.rounds += 1;
            self.tries = 0;
            self.promises.clear();
            self.sent = None;
            self.send_1a(now, timeout, out);
            debug_assert!(self.round() > round_before, "no round is used twice");
            return true;
        }
        match self.sent {
            Some(v) => {
                self.attempts += 1;
                self.tries += 1;
                self.deadline = now + timeout;
                self.send_2a(v, out);
            }
            None => self.send_1a(now, timeout, out),
        }
        debug_assert!(self.round() == round_before, "a retry in the same round");
        true
    }

    /// Replaces the proposal for rounds to come (the backup re-queues a
    /// displaced request); a 2A already sent in this round keeps its value.
    pub fn set_proposal(&mut self, v: Value) {
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

    fn sent(out: &Outbox, from: usize) -> Vec<(MsgType, u16, Value)> {
        out.sends[from..]
            .iter()
            .map(|(_, b)| {
                let m = PaxosMsg::decode(b).unwrap();
                (m.msgtype, m.rnd, m.value)
            })
            .collect()
    }

    /// A retry stays in its round: the 1A again while phase 1 runs (the
    /// promises already in still count), the same 2A once phase 2 began,
    /// even after the proposal changed.
    #[test]
    fn retries_in_the_same_round_first() {
        let ms = Duration::from_millis(1);
        let mut out = Outbox::new();
        let mut p = Prepare::start(1, 16, 1, Value::new(b"mine").unwrap(), Time::ZERO, ms, &mut out);
        let r1 = p.round();
        assert!(!p.on_tick(Time(500_000), ms, &mut out), "before the deadline");
        assert_eq!(p.on_1b(&one_b(1, r1, 0, 0, b""), 2, &mut out), None);
        assert!(p.on_tick(Time(1_000_000), ms, &mut out));
        assert_eq!(sent(&out, 1), vec![(MsgType::Phase1A, r1, Value::EMPTY)], "the 1A again, same round");
        assert_eq!(p.on_1b(&one_b(1, r1, 1, 0, b""), 2, &mut out), Some(Phase2::Own), "the first promise counts");
        let n = out.sends.len();
        p.set_proposal(Value::new(b"noop").unwrap());
        assert!(p.on_tick(Time(2_000_000), ms, &mut out));
        assert_eq!(sent(&out, n), vec![(MsgType::Phase2A, r1, Value::new(b"mine").unwrap())], "the same 2A");
        assert_eq!((p.round(), p.attempts), (r1, 3));
    }

    /// After its tries in a round it goes one epoch up (acceptors drop a
    /// lower round silently), with twice the tries each round; epochs end
    /// at 255, after which the last round goes on and none is used twice.
    #[test]
    fn moves_up_an_epoch_after_its_tries_and_doubles_them() {
        let ms = Duration::from_millis(1);
        let mut out = Outbox::new();
        let mut p = Prepare::start(1, 16, 1, Value::EMPTY, Time::ZERO, ms, &mut out);
        let r1 = p.round();
        let mut t = Time(1_000_000);
        let mut tick = |p: &mut Prepare, out: &mut Outbox| {
            assert!(p.on_tick(t, ms, out));
            t = t + ms;
        };
        for _ in 1..TRIES_FIRST_ROUND {
            tick(&mut p, &mut out);
        }
        assert_eq!(p.round(), r1, "{TRIES_FIRST_ROUND} tries in the first round");
        tick(&mut p, &mut out);
        assert_eq!((p.epoch(), p.round() & 0xff), (2, 16), "then the next epoch, same issuer");
        assert_eq!(p.on_1b(&one_b(1, r1, 0, 0, b""), 1, &mut out), None, "a 1B of the old round no longer counts");
        assert_eq!(p.tries_per_round(), 2 * TRIES_FIRST_ROUND);
        for _ in 0..2 * TRIES_FIRST_ROUND {
            tick(&mut p, &mut out);
        }
        assert_eq!(p.epoch(), 3);
        // A minute of 20 ms timeouts (3,000 tries) takes 17 epochs: the
        // first 7 rounds take 508 tries, then one epoch per 256 tries (5 s).
        let mut tries = 1 + TRIES_FIRST_ROUND + 2 * TRIES_FIRST_ROUND;
        while tries < 3_000 {
            tick(&mut p, &mut out);
            tries += 1;
        }
        assert_eq!(p.epoch(), 17, "epochs after 3,000 tries");
        while p.epoch() < u8::MAX {
            tick(&mut p, &mut out);
        }
        let last = p.round();
        let n = out.sends.len();
        for _ in 0..1_000 {
            tick(&mut p, &mut out);
        }
        assert!(sent(&out, n).iter().all(|&(k, r, _)| k == MsgType::Phase1A && r == last), "no round above 255's");
    }
}
