//! The acceptor as a data-plane program (CAANS section 3; P4xos's acceptor).
//!
//! State is a ring of `slots` register entries (round, voted round, value,
//! and the instance the slot holds), allocated at start; instance `i` lives
//! in slot `i mod slots`. Every slot starts at round [`crate::ROUND_INIT`], as
//! if phase 1 had run for the coordinator's round (section 3). Per packet:
//! * 1A(i, r): if `r` is at least the slot's round, promise `r` and rewrite
//!   the packet into a 1B carrying the slot's vote, back to the packet's
//!   origin (the recovering learner or backup coordinator);
//! * 2A(i, r, v): if `r` is at least the slot's round, vote: rewrite into a
//!   2B and multicast it to the learners;
//! * messages from an older round are dropped (and counted).
//!
//! Log trimming (section 3.1, "Memory limitations"): learners report the
//! instance below which they have checkpointed (TRIM). The acceptor keeps
//! the latest report per learner in a fixed array and computes the trim
//! floor: the highest instance that `trim_quorum` learners have all
//! checkpointed. A slot is taken over for a newer instance `i` only if
//! `i < floor + slots`, i.e. the instance it held is below the floor; newer
//! instances are dropped until the learners catch up (back-pressure), so a
//! ring smaller than the log never overwrites an instance a learner needs.
//! Messages for instances older than the slot's are dropped (trimmed).
//!
//! Persistence (section 3.1: an acceptor that restarts must remember its
//! promises and votes, or it could vote against a promise it gave): the
//! acceptor does no I/O. After each packet, [`Acceptor::changed_slot`] names
//! the slot whose promise or vote that packet changed; a runtime that keeps
//! the ring on disk writes that slot (and syncs it, as configured) before
//! the packet's answer leaves, and [`Acceptor::restore_slot`] puts stored
//! slots back into a fresh acceptor on restart. The trim floor is not
//! kept: learners report their checkpoints again every trim interval, and
//! until they have, a restarted acceptor only refuses instances beyond its
//! ring (`ring_full`), which costs liveness, never safety.

use innet_core::{Counters, DataPlane, Verdict};
use innet_wire::paxos::{MsgType, PaxosPacket, Value};

/// Slots of the ring, the default (a power of two; the BPF map's
/// `max_entries`).
pub const ACCEPTOR_SLOTS_DEFAULT: usize = 1024;

/// What the control plane writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AcceptorConfig {
    pub id: u16,
    /// Ring size, a power of two.
    pub slots: usize,
    /// Where votes go.
    pub learner_group: u16,
    /// Learners that report checkpoints (ids `0..learners`).
    pub learners: usize,
    /// How many learners must have checkpointed an instance before its slot
    /// may be reused (the majority; f+1 in section 3.1).
    pub trim_quorum: usize,
}

impl AcceptorConfig {
    pub fn new(id: u16, learners: usize) -> AcceptorConfig {
        const _: () = assert!(ACCEPTOR_SLOTS_DEFAULT.is_power_of_two());
        let config = AcceptorConfig {
            id,
            slots: ACCEPTOR_SLOTS_DEFAULT,
            learner_group: crate::GROUP_LEARNERS,
            learners,
            trim_quorum: crate::majority(learners),
        };
        debug_assert!(config.trim_quorum <= learners.max(1), "a trim quorum of at most the learners");
        config
    }
}

/// The trim floor (section 3.1, "Memory limitations"): the latest
/// checkpoint each learner reported, in a fixed register array, and the
/// highest instance that `quorum` of them have all checkpointed. Acceptors
/// reuse slots below it; the coordinator hands out instances only within
/// `floor + slots`.
#[derive(Clone, Copy, Debug)]
pub struct TrimFloor {
    learners: usize,
    quorum: usize,
    checkpoints: [u32; crate::MAX_LEARNERS],
    floor: u32,
}

impl TrimFloor {
    pub fn new(learners: usize, quorum: usize) -> TrimFloor {
        assert!((1..=crate::MAX_LEARNERS).contains(&learners), "1..=MAX_LEARNERS learners");
        assert!((1..=learners).contains(&quorum), "trim quorum within learners");
        TrimFloor { learners, quorum, checkpoints: [0; crate::MAX_LEARNERS], floor: 0 }
    }

    pub fn floor(&self) -> u32 {
        debug_assert!(self.holds(), "trim floor {} not reached by {} learners", self.floor, self.quorum);
        self.floor
    }

    /// Learners configured.
    pub fn learners(&self) -> usize {
        debug_assert!((1..=crate::MAX_LEARNERS).contains(&self.learners));
        self.learners
    }

    /// The floor's invariant: `quorum` learners have checkpointed it.
    fn holds(&self) -> bool {
        self.floor == 0 || self.checkpoints[..self.learners].iter().filter(|&&c| c >= self.floor).count() >= self.quorum
    }

    /// Learner `learner` checkpointed every instance below `inst`; false
    /// for an unknown learner. Reports never move the floor back.
    pub fn report(&mut self, learner: u16, inst: u32) -> bool {
        let n = self.learners;
        if learner as usize >= n {
            return false;
        }
        let floor_before = self.floor;
        let c = &mut self.checkpoints[learner as usize];
        *c = (*c).max(inst);
        // The quorum-th largest report: bounded by MAX_LEARNERS^2 steps.
        for a in 0..n {
            let x = self.checkpoints[a];
            let at_least = (0..n).filter(|&b| self.checkpoints[b] >= x).count();
            if at_least >= self.quorum && x > self.floor {
                self.floor = x;
            }
        }
        debug_assert!(self.floor >= floor_before, "the trim floor moved back");
        debug_assert!(self.holds());
        true
    }
}

#[derive(Clone, Copy, Default, Debug)]
struct Slot {
    valid: bool,
    inst: u32,
    rnd: u16,
    vrnd: u16,
    value: Value,
}

#[derive(Clone, Copy, Default, Debug)]
struct Stats {
    promises: u64,
    votes: u64,
    stale_round: u64,
    trimmed: u64,
    ring_full: u64,
    trims: u64,
    conflicting: u64,
    ignored: u64,
    decode_errors: u64,
}

#[derive(Clone, Debug)]
pub struct Acceptor {
    config: AcceptorConfig,
    slots: Vec<Slot>,
    trim: TrimFloor,
    stats: Stats,
    /// The slot whose promise or vote the last packet changed.
    changed: Option<usize>,
}

/// Why a stored slot cannot be put back ([`Acceptor::restore_slot`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RestoreError {
    /// The slot index is not below the ring's size.
    NoSuchSlot,
    /// The instance does not map to this slot (`inst mod slots`).
    WrongSlot,
    /// A vote from a round above the promise.
    VoteAbovePromise,
    /// A round below the pre-initialised one.
    RoundBelowInit,
}

impl std::fmt::Display for RestoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RestoreError::NoSuchSlot => "slot beyond the ring",
            RestoreError::WrongSlot => "instance stored in another instance's slot",
            RestoreError::VoteAbovePromise => "vote from a round above the promise",
            RestoreError::RoundBelowInit => "promise below the pre-initialised round",
        })
    }
}

impl Acceptor {
    pub fn new(config: AcceptorConfig) -> Acceptor {
        assert!(config.slots.is_power_of_two(), "slots must be a power of two");
        Acceptor {
            config,
            slots: vec![Slot::default(); config.slots],
            trim: TrimFloor::new(config.learners, config.trim_quorum),
            stats: Stats::default(),
            changed: None,
        }
    }

    /// The slot whose promise or vote the last packet changed (what a
    /// persistent acceptor must store before that packet's answer leaves).
    pub fn changed_slot(&self) -> Option<usize> {
        debug_assert!(self.changed.is_none_or(|i| self.slots[i].valid && self.slot_holds(i)));
        self.changed
    }

    /// Puts a stored slot back (a persistent acceptor's restart): slot `i`
    /// holds `inst` with promise `rnd` and vote `(vrnd, value)`. Refuses a
    /// slot no acceptor could have written.
    pub fn restore_slot(&mut self, i: usize, inst: u32, rnd: u16, vrnd: u16, value: Value) -> Result<(), RestoreError> {
        if i >= self.config.slots {
            return Err(RestoreError::NoSuchSlot);
        }
        if inst as usize & (self.config.slots - 1) != i {
            return Err(RestoreError::WrongSlot);
        }
        if vrnd > rnd {
            return Err(RestoreError::VoteAbovePromise);
        }
        if rnd < crate::ROUND_INIT {
            return Err(RestoreError::RoundBelowInit);
        }
        self.slots[i] = Slot { valid: true, inst, rnd, vrnd, value };
        debug_assert!(self.slot_holds(i));
        Ok(())
    }

    pub fn config(&self) -> &AcceptorConfig {
        debug_assert_eq!(self.slots.len(), self.config.slots);
        &self.config
    }

    /// Every instance below this was checkpointed by a trim quorum.
    pub fn trim_floor(&self) -> u32 {
        self.trim.floor()
    }

    /// Slot `i`'s invariants: it holds an instance that maps to it, and
    /// its vote is never from a round above its promise.
    fn slot_holds(&self, i: usize) -> bool {
        let s = &self.slots[i];
        !s.valid || (s.inst as usize & (self.config.slots - 1) == i && s.vrnd <= s.rnd)
    }

    /// The slot for `inst`, taken over if that is allowed; `None` if the
    /// instance was trimmed or lies beyond the ring.
    fn slot_for(&mut self, inst: u32) -> Option<usize> {
        let i = inst as usize & (self.config.slots - 1);
        debug_assert!(self.slot_holds(i));
        let s = self.slots[i];
        if s.valid && s.inst == inst {
            return Some(i);
        }
        if s.valid && s.inst > inst {
            self.stats.trimmed += 1;
            return None;
        }
        let floor = self.trim.floor();
        if inst as u64 >= floor as u64 + self.config.slots as u64 {
            self.stats.ring_full += 1;
            return None;
        }
        // The instance this slot held is at most inst - slots, below the floor.
        assert!(!s.valid || s.inst < floor, "reusing a slot above the trim floor");
        self.slots[i] = Slot { valid: true, inst, rnd: crate::ROUND_INIT, vrnd: 0, value: Value::EMPTY };
        Some(i)
    }

    fn on_trim(&mut self, learner: u16, inst: u32) {
        if self.trim.report(learner, inst) {
            self.stats.trims += 1;
        } else {
            self.stats.ignored += 1;
        }
    }
}

impl DataPlane for Acceptor {
    fn process(&mut self, packet: &mut [u8]) -> Verdict {
        self.changed = None;
        let Ok(mut p) = PaxosPacket::parse(packet) else {
            self.stats.decode_errors += 1;
            return Verdict::Drop;
        };
        let (inst, rnd) = (p.inst(), p.rnd());
        match p.msgtype() {
            MsgType::Phase1A => {
                let Some(i) = self.slot_for(inst) else { return Verdict::Drop };
                let s = &mut self.slots[i];
                if rnd < s.rnd {
                    self.stats.stale_round += 1;
                    return Verdict::Drop;
                }
                if rnd > s.rnd {
                    self.changed = Some(i);
                }
                s.rnd = rnd;
                let (vrnd, value) = (s.vrnd, s.value);
                debug_assert!(self.slot_holds(i), "a promise never goes below the slot's vote");
                p.set_msgtype(MsgType::Phase1B);
                p.set_vrnd(vrnd);
                p.set_acptid(self.config.id);
                p.set_value(&value);
                self.stats.promises += 1;
                Verdict::Origin
            }
            MsgType::Phase2A => {
                let Some(i) = self.slot_for(inst) else { return Verdict::Drop };
                let s = &mut self.slots[i];
                if rnd < s.rnd {
                    self.stats.stale_round += 1;
                    return Verdict::Drop;
                }
                let value = p.value();
                if s.vrnd == rnd && s.value != value {
                    // One round never proposes two values for one instance;
                    // a coordinator that restarted without a new round would.
                    self.stats.conflicting += 1;
                    return Verdict::Drop;
                }
                let voted_before = (s.vrnd, s.value);
                if (s.rnd, s.vrnd, s.value) != (rnd, rnd, value) {
                    self.changed = Some(i);
                }
                s.rnd = rnd;
                s.vrnd = rnd;
                s.value = value;
                debug_assert!(voted_before.0 < rnd || voted_before.1 == value, "two values voted in one round");
                debug_assert!(self.slot_holds(i));
                p.set_msgtype(MsgType::Phase2B);
                p.set_vrnd(rnd);
                p.set_acptid(self.config.id);
                self.stats.votes += 1;
                Verdict::Multicast { group: self.config.learner_group }
            }
            MsgType::Trim => {
                self.on_trim(p.acptid(), inst);
                Verdict::Drop
            }
            _ => {
                self.stats.ignored += 1;
                Verdict::Drop
            }
        }
    }
}

impl Counters for Acceptor {
    fn counters(&self) -> Vec<(&'static str, u64)> {
        let s = &self.stats;
        vec![
            ("promises", s.promises),
            ("votes", s.votes),
            ("stale_round", s.stale_round),
            ("trimmed", s.trimmed),
            ("ring_full", s.ring_full),
            ("trims", s.trims),
            ("conflicting", s.conflicting),
            ("ignored", s.ignored),
            ("decode_errors", s.decode_errors),
        ]
    }
}

/// Read-only views of the registers, for the XDP differential test
/// (`crates/xdp/tests/paxos_differential.rs` compares them with the BPF maps).
impl TrimFloor {
    /// The latest checkpoint of each of the configured learners.
    pub fn checkpoints(&self) -> &[u32] {
        debug_assert!(self.holds());
        &self.checkpoints[..self.learners]
    }
}

impl Acceptor {
    /// The trim registers.
    pub fn trim(&self) -> &TrimFloor {
        debug_assert!(self.trim.holds());
        &self.trim
    }
    /// Slot `i` of the ring: `(inst, rnd, vrnd, value)` if it holds an instance.
    pub fn slot(&self, i: usize) -> Option<(u32, u16, u16, Value)> {
        debug_assert!(self.slot_holds(i));
        let s = self.slots[i];
        s.valid.then_some((s.inst, s.rnd, s.vrnd, s.value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::Envelope;
    use innet_wire::paxos::PaxosMsg;

    fn msg(t: MsgType, inst: u32, rnd: u16, v: &[u8]) -> Vec<u8> {
        let mut m = PaxosMsg::new(t);
        m.inst = inst;
        m.rnd = rnd;
        m.value = Envelope::new(1, 1, v).unwrap().to_value();
        m.encode()
    }

    fn acceptor(slots: usize) -> Acceptor {
        Acceptor::new(AcceptorConfig { slots, ..AcceptorConfig::new(7, 3) })
    }

    /// Section 3: rounds are pre-initialised, so a 2A of round 1 is voted
    /// without any phase 1, and the vote goes to the learners' group.
    #[test]
    fn votes_for_round_1_without_phase_1() {
        let mut a = acceptor(16);
        let mut b = msg(MsgType::Phase2A, 3, crate::ROUND_INIT, b"v");
        assert_eq!(a.process(&mut b), Verdict::Multicast { group: crate::GROUP_LEARNERS });
        let m = PaxosMsg::decode(&b).unwrap();
        assert_eq!((m.msgtype, m.inst, m.rnd, m.vrnd, m.acptid), (MsgType::Phase2B, 3, 1, 1, 7));
    }

    /// Paxos phase 1: a promise reports the earlier vote, and afterwards
    /// messages of older rounds are dropped.
    #[test]
    fn promise_reports_vote_and_blocks_older_rounds() {
        let mut a = acceptor(16);
        a.process(&mut msg(MsgType::Phase2A, 3, 1, b"v"));
        let mut p = msg(MsgType::Phase1A, 3, crate::round(1, 16), b"");
        assert_eq!(a.process(&mut p), Verdict::Origin);
        let m = PaxosMsg::decode(&p).unwrap();
        assert_eq!((m.msgtype, m.rnd, m.vrnd, m.acptid), (MsgType::Phase1B, crate::round(1, 16), 1, 7));
        assert_eq!(Envelope::from_value(&m.value).unwrap().payload(), b"v");
        assert_eq!(a.process(&mut msg(MsgType::Phase2A, 3, 1, b"w")), Verdict::Drop);
        assert_eq!(a.process(&mut msg(MsgType::Phase1A, 3, crate::round(0, 20), b"")), Verdict::Drop);
        assert_eq!(a.counters()[2], ("stale_round", 2));
        // A fresh instance's 1B says "never voted".
        let mut q = msg(MsgType::Phase1A, 4, crate::round(1, 2), b"");
        a.process(&mut q);
        let m = PaxosMsg::decode(&q).unwrap();
        assert_eq!((m.vrnd, m.value.len), (0, 0));
    }

    #[test]
    fn a_round_never_carries_two_values() {
        let mut a = acceptor(16);
        a.process(&mut msg(MsgType::Phase2A, 1, 1, b"v"));
        assert_eq!(a.process(&mut msg(MsgType::Phase2A, 1, 1, b"w")), Verdict::Drop);
        // The same value again (a duplicate) is voted again.
        assert!(matches!(a.process(&mut msg(MsgType::Phase2A, 1, 1, b"v")), Verdict::Multicast { .. }));
    }

    /// Section 3.1 (persistent acceptors): the slot a packet changed is
    /// named, so a runtime can store it before the answer leaves; a fresh
    /// acceptor given the stored slots refuses what the old one promised
    /// against, and nothing else changes.
    #[test]
    fn names_the_slot_it_changed_and_restores_from_it() {
        let mut a = acceptor(16);
        a.process(&mut msg(MsgType::Phase2A, 3, 1, b"v"));
        assert_eq!(a.changed_slot(), Some(3));
        a.process(&mut msg(MsgType::Phase2A, 3, 1, b"v"));
        assert_eq!(a.changed_slot(), None, "a repeated vote changes nothing");
        let high = crate::round(2, 16);
        a.process(&mut msg(MsgType::Phase1A, 19, high, b""));
        assert_eq!(a.changed_slot(), None, "instance 19 is beyond the ring: refused");
        a.process(&mut msg(MsgType::Phase1A, 3, high, b""));
        assert_eq!(a.changed_slot(), Some(3));
        a.process(&mut msg(MsgType::Phase1A, 3, crate::round(1, 16), b""));
        assert_eq!(a.changed_slot(), None, "a stale 1A is refused");
        let (inst, rnd, vrnd, value) = a.slot(3).unwrap();
        let mut b = acceptor(16);
        b.restore_slot(3, inst, rnd, vrnd, value).unwrap();
        assert_eq!(b.process(&mut msg(MsgType::Phase2A, 3, 1, b"w")), Verdict::Drop, "below the promise");
        let mut q = msg(MsgType::Phase1A, 3, crate::round(3, 16), b"");
        assert_eq!(b.process(&mut q), Verdict::Origin);
        let m = PaxosMsg::decode(&q).unwrap();
        assert_eq!((m.vrnd, Envelope::from_value(&m.value).unwrap().payload()), (1, &b"v"[..]));
        // Slots no acceptor writes are refused.
        assert_eq!(b.restore_slot(16, 16, 1, 0, Value::EMPTY), Err(RestoreError::NoSuchSlot));
        assert_eq!(b.restore_slot(2, 3, 1, 0, Value::EMPTY), Err(RestoreError::WrongSlot));
        assert_eq!(b.restore_slot(3, 3, 1, 2, Value::EMPTY), Err(RestoreError::VoteAbovePromise));
        assert_eq!(b.restore_slot(3, 3, 0, 0, Value::EMPTY), Err(RestoreError::RoundBelowInit));
    }

    fn trim(learner: u16, inst: u32) -> Vec<u8> {
        let mut m = PaxosMsg::new(MsgType::Trim);
        m.acptid = learner;
        m.inst = inst;
        m.encode()
    }

    /// Section 3.1 "Memory limitations": slots are reused only below what a
    /// quorum of learners checkpointed; beyond the ring, instances wait.
    #[test]
    fn ring_reuses_slots_only_below_the_trim_floor() {
        let mut a = acceptor(4);
        for i in 0..4 {
            assert!(matches!(a.process(&mut msg(MsgType::Phase2A, i, 1, b"v")), Verdict::Multicast { .. }));
        }
        // Instance 4 would overwrite instance 0, which no learner checkpointed.
        assert_eq!(a.process(&mut msg(MsgType::Phase2A, 4, 1, b"v")), Verdict::Drop);
        // One learner of three is not a majority.
        a.process(&mut trim(0, 2));
        assert_eq!(a.trim_floor(), 0);
        a.process(&mut trim(2, 1));
        assert_eq!(a.trim_floor(), 1);
        assert!(matches!(a.process(&mut msg(MsgType::Phase2A, 4, 1, b"v")), Verdict::Multicast { .. }));
        assert_eq!(a.process(&mut msg(MsgType::Phase2A, 5, 1, b"v")), Verdict::Drop);
        // Instance 0 is gone: a late message for it is dropped as trimmed.
        assert_eq!(a.process(&mut msg(MsgType::Phase1A, 0, 300, b"")), Verdict::Drop);
        let c: std::collections::HashMap<_, _> = a.counters().into_iter().collect();
        assert_eq!((c["ring_full"], c["trimmed"]), (2, 1));
        // Reports never move the floor back; unknown learners are ignored.
        a.process(&mut trim(2, 0));
        a.process(&mut trim(9, 100));
        assert_eq!(a.trim_floor(), 1);
    }
}
