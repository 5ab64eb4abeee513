//! Counting phase-2B votes until a quorum of acceptors voted in the same
//! round (CAANS section 3, "Learner": "deliver a value if a majority of votes
//! are the same"). The quorum size is configuration, not a constant.
//!
//! Per instance, each acceptor's latest vote (highest voted round) is kept;
//! a value is chosen when `quorum` acceptors' latest votes carry the same
//! round. Within one round an instance has at most one value (one issuer per
//! round, and acceptors refuse a second value), so the round identifies it.

use std::collections::BTreeMap;

use innet_wire::paxos::Value;

/// Undecided instances tracked at most; the oldest are forgotten first
/// (their learners recover them if needed).
pub const VOTES_PENDING_MAX: usize = 1 << 16;

#[derive(Clone, Copy, Debug)]
struct Vote {
    acceptor: u16,
    vrnd: u16,
    value: Value,
}

#[derive(Clone, Debug)]
pub struct Votes {
    quorum: usize,
    pending: BTreeMap<u32, Vec<Vote>>,
}

impl Votes {
    pub fn new(quorum: usize) -> Votes {
        assert!((1..=crate::MAX_ACCEPTORS).contains(&quorum), "quorum within 1..=MAX_ACCEPTORS");
        Votes { quorum, pending: BTreeMap::new() }
    }

    /// Records a vote; returns the chosen value the first time `inst`
    /// reaches a quorum (and forgets the instance).
    pub fn record(&mut self, inst: u32, acceptor: u16, vrnd: u16, value: Value) -> Option<Value> {
        let votes = self.pending.entry(inst).or_default();
        match votes.iter_mut().find(|v| v.acceptor == acceptor) {
            Some(v) if v.vrnd >= vrnd => return None,
            Some(v) => *v = Vote { acceptor, vrnd, value },
            None => votes.push(Vote { acceptor, vrnd, value }),
        }
        // Same round and same value: a round carries one value, but counting
        // the value too keeps a learner safe even if that were ever broken.
        debug_assert!(
            votes.iter().filter(|v| v.acceptor == acceptor).count() == 1,
            "one latest vote per acceptor and instance"
        );
        let same = votes.iter().filter(|v| v.vrnd == vrnd && v.value == value).count();
        if same >= self.quorum {
            self.pending.remove(&inst);
            return Some(value);
        }
        if self.pending.len() > VOTES_PENDING_MAX {
            self.pending.pop_first();
        }
        debug_assert!(self.pending.len() <= VOTES_PENDING_MAX);
        None
    }

    pub fn forget(&mut self, inst: u32) {
        self.pending.remove(&inst);
        debug_assert!(!self.pending.contains_key(&inst));
    }

    /// Forgets every instance below `inst` (decided: a checkpoint passed it).
    pub fn forget_below(&mut self, inst: u32) {
        self.pending.retain(|&i, _| i >= inst);
        debug_assert!(self.pending.keys().all(|&i| i >= inst));
    }

    /// Forgets instances whose votes carry a value matching `pred`.
    pub fn forget_where(&mut self, pred: impl Fn(&Value) -> bool) {
        self.pending.retain(|_, vs| !vs.iter().any(|v| pred(&v.value)));
        debug_assert!(self.pending.values().flatten().all(|v| !pred(&v.value)));
    }

    pub fn pending(&self) -> usize {
        debug_assert!(self.pending.len() <= VOTES_PENDING_MAX);
        self.pending.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[u8]) -> Value {
        Value::new(s).unwrap()
    }

    #[test]
    fn quorum_of_the_same_round_decides_once() {
        let mut q = Votes::new(2);
        assert_eq!(q.record(1, 0, 1, v(b"a")), None);
        assert_eq!(q.record(1, 0, 1, v(b"a")), None, "a duplicate vote is not a second acceptor");
        assert_eq!(q.record(1, 1, 1, v(b"a")), Some(v(b"a")));
        assert_eq!(q.pending(), 0);
    }

    #[test]
    fn votes_of_different_rounds_do_not_add_up() {
        let mut q = Votes::new(2);
        assert_eq!(q.record(1, 0, 1, v(b"a")), None);
        assert_eq!(q.record(1, 1, 272, v(b"n")), None);
        // Acceptor 0 votes again in the higher round: now two in round 272.
        assert_eq!(q.record(1, 0, 272, v(b"n")), Some(v(b"n")));
        // An older vote never replaces a newer one.
        let mut q = Votes::new(2);
        q.record(2, 0, 272, v(b"n"));
        assert_eq!(q.record(2, 0, 1, v(b"a")), None);
        assert_eq!(q.record(2, 1, 1, v(b"a")), None);
    }

    #[test]
    fn different_values_in_one_round_never_make_a_quorum() {
        let mut q = Votes::new(2);
        assert_eq!(q.record(1, 0, 5, v(b"a")), None);
        assert_eq!(q.record(1, 1, 5, v(b"b")), None);
    }

    #[test]
    fn quorum_comes_from_configuration() {
        let mut q = Votes::new(3);
        q.record(1, 0, 1, v(b"a"));
        q.record(1, 1, 1, v(b"a"));
        assert_eq!(q.record(1, 2, 1, v(b"a")), Some(v(b"a")));
    }
}
