//! Counting phase-2B votes in the data plane in front of a learner (the
//! issue's "learner quorums in the kernel"; CAANS section 6 / Figure 7c
//! names the learners as the next bottleneck once coordinator and acceptors
//! run in the network). The learner's host runs this program on every
//! packet to the learner: votes are counted here, and only the vote that
//! completes a quorum goes up, rewritten into a DECIDED; every other vote is
//! dropped. Everything that is not a vote goes up unchanged (peers' DECIDED,
//! WINDOW, 1Bs of a recovery).
//!
//! Switch-shaped like the acceptor (`bpf/paxos_learner.bpf.c` is its line by
//! line port): a ring of `slots` register entries allocated at start,
//! instance `i` in slot `i mod slots`, each holding the instance, per
//! acceptor the latest vote (voted round and value, a bit in `voted`) and
//! the round that decided it. The counting rule is [`crate::votes::Votes`]'s:
//! an acceptor's vote replaces its earlier one only if its round is higher;
//! an instance is decided when `quorum` acceptors' latest votes carry the
//! same round and value. Then the votes are forgotten (as `Votes` forgets a
//! decided instance) and the slot remembers the deciding round: later votes
//! in that round or below are dropped (`late`: the third acceptor's vote
//! after a quorum of two), votes in a higher round count afresh. That keeps
//! a learner live if the DECIDED was lost on its way up: the learner
//! recovers the instance in a higher round (section 3.1), and its quorum
//! decides again (a learner ignores a second decision of an instance).
//!
//! The decision is a [`MsgType::Decided`] with `acptid` =
//! [`COUNTER_ACPTID`], round and value of the quorum: the message a peer
//! answers a CATCHUP with, so an unmodified [`crate::Learner`] (and a
//! [`crate::Proposer`]) consumes it; its recovery, duplicate filter, TRIM
//! and WINDOW logic stay as they are.
//!
//! Instances the ring cannot hold: a vote for an instance newer than the
//! slot's takes the slot over (the older instance's partial votes are
//! forgotten, `evicted`; its learner fills the gap by recovery or from a
//! peer); a vote for an instance older than the slot's goes up unchanged
//! (`passed_stale`), and the learner counts it itself with `Votes`.

use innet_core::{Counters, DataPlane, Host, Outbox, Time, Verdict};
use innet_wire::paxos::{MsgType, PaxosPacket, Value};

/// Slots of the ring, the default (a power of two; the BPF map's
/// `max_entries` per counted port).
pub const COUNTER_SLOTS_DEFAULT: usize = 1024;
/// Most acceptors a counter tracks (per-slot register array; the `voted`
/// bitmap is a `u32`).
pub const COUNTER_MAX_ACCEPTORS: usize = 8;
/// The `acptid` of a DECIDED the counter made (peers' DECIDED carry their
/// learner id, below [`crate::MAX_LEARNERS`]).
pub const COUNTER_ACPTID: u16 = 0xffff;
/// The port of [`Verdict::Port`] that means "up to the host the counter sits
/// in front of" (XDP_PASS / TC_ACT_OK in BPF).
pub const COUNTER_PORT_HOST: u16 = 0;

/// What the control plane writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VoteCounterConfig {
    /// Acceptor ids `0..acceptors` vote; others are dropped.
    pub acceptors: usize,
    /// Votes in one round that decide (the learners' quorum).
    pub quorum: usize,
    /// Ring size, a power of two.
    pub slots: usize,
}

impl VoteCounterConfig {
    pub fn new(acceptors: usize) -> VoteCounterConfig {
        VoteCounterConfig { acceptors, quorum: crate::majority(acceptors), slots: COUNTER_SLOTS_DEFAULT }
    }
}

#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct CountedVote {
    pub vrnd: u16,
    pub value: Value,
}

/// One slot of the ring (read by the differential test).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct CounterSlot {
    pub valid: bool,
    pub inst: u32,
    /// Whether a quorum decided `inst`, and in which round.
    pub decided: bool,
    pub decided_rnd: u16,
    /// Bit `a`: `votes[a]` holds acceptor `a`'s latest vote.
    pub voted: u32,
    pub votes: [CountedVote; COUNTER_MAX_ACCEPTORS],
}

#[derive(Clone, Copy, Default, Debug)]
struct Stats {
    decisions: u64,
    counted: u64,
    duplicates: u64,
    late: u64,
    evicted: u64,
    passed_stale: u64,
    bad_acceptor: u64,
    passed: u64,
    decode_errors: u64,
}

#[derive(Clone, Debug)]
pub struct VoteCounter {
    config: VoteCounterConfig,
    slots: Vec<CounterSlot>,
    stats: Stats,
}

impl VoteCounter {
    pub fn new(config: VoteCounterConfig) -> VoteCounter {
        assert!(config.slots.is_power_of_two(), "slots must be a power of two");
        assert!((1..=COUNTER_MAX_ACCEPTORS).contains(&config.acceptors), "1..=COUNTER_MAX_ACCEPTORS acceptors");
        assert!((1..=config.acceptors).contains(&config.quorum), "quorum within the acceptors");
        VoteCounter { config, slots: vec![CounterSlot::default(); config.slots], stats: Stats::default() }
    }

    pub fn config(&self) -> &VoteCounterConfig {
        &self.config
    }

    /// Slot `i` of the ring, if it holds an instance.
    pub fn slot(&self, i: usize) -> Option<CounterSlot> {
        let s = self.slots[i];
        s.valid.then_some(s)
    }

    fn on_vote(&mut self, p: &mut PaxosPacket<'_>) -> Verdict {
        let a = p.acptid() as usize;
        if a >= self.config.acceptors {
            self.stats.bad_acceptor += 1;
            return Verdict::Drop;
        }
        let (inst, vrnd, value) = (p.inst(), p.vrnd(), p.value());
        let i = inst as usize & (self.config.slots - 1);
        let s = &mut self.slots[i];
        if s.valid && s.inst > inst {
            self.stats.passed_stale += 1;
            return Verdict::Port { port: COUNTER_PORT_HOST };
        }
        if !s.valid || s.inst < inst {
            if s.valid && !s.decided && s.voted != 0 {
                self.stats.evicted += 1;
            }
            *s = CounterSlot { valid: true, inst, ..CounterSlot::default() };
        }
        if s.decided && vrnd <= s.decided_rnd {
            self.stats.late += 1;
            return Verdict::Drop;
        }
        let bit = 1u32 << a;
        if s.voted & bit != 0 && s.votes[a].vrnd >= vrnd {
            self.stats.duplicates += 1;
            return Verdict::Drop;
        }
        s.votes[a] = CountedVote { vrnd, value };
        s.voted |= bit;
        let mut same = 0;
        for b in 0..self.config.acceptors {
            if s.voted & (1 << b) != 0 && s.votes[b].vrnd == vrnd && s.votes[b].value == value {
                same += 1;
            }
        }
        if same < self.config.quorum {
            self.stats.counted += 1;
            return Verdict::Drop;
        }
        s.decided = true;
        s.decided_rnd = vrnd;
        s.voted = 0;
        s.votes = [CountedVote::default(); COUNTER_MAX_ACCEPTORS];
        p.set_msgtype(MsgType::Decided);
        p.set_acptid(COUNTER_ACPTID);
        self.stats.decisions += 1;
        Verdict::Port { port: COUNTER_PORT_HOST }
    }
}

impl DataPlane for VoteCounter {
    fn process(&mut self, packet: &mut [u8]) -> Verdict {
        let Ok(mut p) = PaxosPacket::parse(packet) else {
            self.stats.decode_errors += 1;
            return Verdict::Drop;
        };
        if p.msgtype() != MsgType::Phase2B {
            self.stats.passed += 1;
            return Verdict::Port { port: COUNTER_PORT_HOST };
        }
        self.on_vote(&mut p)
    }
}

impl Counters for VoteCounter {
    fn counters(&self) -> Vec<(&'static str, u64)> {
        let s = &self.stats;
        vec![
            ("decisions", s.decisions),
            ("counted", s.counted),
            ("duplicates", s.duplicates),
            ("late", s.late),
            ("evicted", s.evicted),
            ("passed_stale", s.passed_stale),
            ("bad_acceptor", s.bad_acceptor),
            ("passed", s.passed),
            ("decode_errors", s.decode_errors),
        ]
    }
}

/// A host with a vote counter in front of it: every packet goes through
/// the counter first, and only what it passes up reaches the host. This is
/// the XDP placement (the counter on the host's interface) for runtimes
/// that have no kernel: the simulator's `vote_counters` runs.
#[derive(Clone, Debug)]
pub struct BehindCounter<H> {
    pub counter: VoteCounter,
    pub host: H,
    buf: Vec<u8>,
}

impl<H> BehindCounter<H> {
    pub fn new(counter: VoteCounter, host: H) -> BehindCounter<H> {
        BehindCounter { counter, host, buf: Vec::new() }
    }
}

impl<H: Host> Host for BehindCounter<H> {
    fn on_packet(&mut self, now: Time, packet: &[u8], out: &mut Outbox) {
        self.buf.clear();
        self.buf.extend_from_slice(packet);
        if self.counter.process(&mut self.buf) != Verdict::Drop {
            self.host.on_packet(now, &self.buf, out);
        }
    }
    fn on_tick(&mut self, now: Time, out: &mut Outbox) {
        self.host.on_tick(now, out);
    }
    fn next_tick(&self) -> Option<Time> {
        self.host.next_tick()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::votes::Votes;
    use innet_core::rng::Rng;
    use innet_wire::paxos::PaxosMsg;
    use std::collections::BTreeMap;

    fn vote(inst: u32, acpt: u16, vrnd: u16, v: &[u8]) -> Vec<u8> {
        let mut m = PaxosMsg::new(MsgType::Phase2B);
        m.inst = inst;
        m.rnd = vrnd;
        m.vrnd = vrnd;
        m.acptid = acpt;
        m.value = Value::new(v).unwrap();
        m.encode()
    }

    const UP: Verdict = Verdict::Port { port: COUNTER_PORT_HOST };

    /// Section 3 "Learner": a quorum of votes in one round decides; the
    /// deciding vote goes up as a DECIDED, the others are dropped.
    #[test]
    fn the_quorum_th_vote_goes_up_as_the_decision() {
        let mut c = VoteCounter::new(VoteCounterConfig::new(3));
        assert_eq!(c.process(&mut vote(5, 0, 1, b"a")), Verdict::Drop);
        assert_eq!(c.process(&mut vote(5, 0, 1, b"a")), Verdict::Drop, "a duplicate is not a second acceptor");
        let mut b = vote(5, 2, 1, b"a");
        assert_eq!(c.process(&mut b), UP);
        let m = PaxosMsg::decode(&b).unwrap();
        assert_eq!((m.msgtype, m.inst, m.vrnd, m.acptid), (MsgType::Decided, 5, 1, COUNTER_ACPTID));
        assert_eq!(m.value, Value::new(b"a").unwrap());
        assert_eq!(c.process(&mut vote(5, 1, 1, b"a")), Verdict::Drop, "the third vote is late");
        // A recovery in a higher round decides again (the learner ignores it).
        assert_eq!(c.process(&mut vote(5, 1, 272, b"a")), Verdict::Drop);
        assert_eq!(c.process(&mut vote(5, 0, 272, b"a")), UP);
        let n: BTreeMap<_, _> = c.counters().into_iter().collect();
        assert_eq!((n["decisions"], n["counted"], n["duplicates"], n["late"]), (2, 2, 1, 1));
    }

    #[test]
    fn everything_but_votes_goes_up_unchanged_and_garbage_is_dropped() {
        let mut c = VoteCounter::new(VoteCounterConfig::new(3));
        for t in MsgType::ALL.into_iter().filter(|t| *t != MsgType::Phase2B) {
            let mut m = PaxosMsg::new(t);
            m.inst = 9;
            let mut b = m.encode();
            let before = b.clone();
            assert_eq!(c.process(&mut b), UP);
            assert_eq!(b, before);
        }
        assert_eq!(c.process(&mut [3u8; 10]), Verdict::Drop);
        assert_eq!(c.process(&mut vote(1, 3, 1, b"a")), Verdict::Drop, "acceptor 3 of 3 does not exist");
        assert_eq!(c.process(&mut vote(1, 0xffff, 1, b"a")), Verdict::Drop);
        let n: BTreeMap<_, _> = c.counters().into_iter().collect();
        assert_eq!((n["passed"], n["decode_errors"], n["bad_acceptor"]), (10, 1, 2));
    }

    #[test]
    fn the_ring_takes_newer_instances_and_passes_older_votes_up() {
        let mut c = VoteCounter::new(VoteCounterConfig { slots: 4, ..VoteCounterConfig::new(3) });
        c.process(&mut vote(1, 0, 1, b"a"));
        c.process(&mut vote(5, 0, 1, b"b")); // slot 1 taken over: instance 1's vote forgotten
        let mut old = vote(1, 1, 1, b"a");
        let before = old.clone();
        assert_eq!(c.process(&mut old), UP, "the learner counts what the ring cannot hold");
        assert_eq!(old, before);
        assert_eq!(c.process(&mut vote(5, 1, 1, b"b")), UP);
        let n: BTreeMap<_, _> = c.counters().into_iter().collect();
        assert_eq!((n["evicted"], n["passed_stale"], n["decisions"]), (1, 1, 1));
    }

    /// The counter decides exactly what `Votes` decides (the learner's
    /// software count, which it replaces), first decision per instance, on
    /// random vote streams that keep Paxos's one value per round and
    /// instance: acceptors voting in rising and falling rounds, duplicates,
    /// any order, quorums 1..=n of n = 1..=5 acceptors.
    #[test]
    fn decides_what_votes_decides_on_random_streams() {
        let mut rng = Rng::new(0x7075);
        for run in 0..400 {
            let n = 1 + rng.below(5) as usize;
            let quorum = 1 + rng.below(n as u64) as usize;
            let mut c = VoteCounter::new(VoteCounterConfig { acceptors: n, quorum, slots: 64 });
            let mut votes = Votes::new(quorum);
            let (mut from_votes, mut from_counter) = (BTreeMap::new(), BTreeMap::new());
            for _ in 0..300 {
                let inst = rng.below(40) as u32;
                let rnd = [1u16, 2, 258, 272, 300][rng.below(5) as usize];
                // One value per (instance, round), as Paxos guarantees.
                let v = [b'a' + ((inst as u16 + rnd) % 3) as u8];
                let a = rng.below(n as u64) as u16;
                if let std::collections::btree_map::Entry::Vacant(e) = from_votes.entry(inst) {
                    if let Some(x) = votes.record(inst, a, rnd, Value::new(&v).unwrap()) {
                        e.insert(x);
                    }
                }
                let mut b = vote(inst, a, rnd, &v);
                if c.process(&mut b) == UP {
                    let m = PaxosMsg::decode(&b).unwrap();
                    assert_eq!(m.msgtype, MsgType::Decided, "run {run}: only decisions go up");
                    from_counter.entry(inst).or_insert(m.value);
                }
            }
            assert_eq!(from_counter, from_votes, "run {run}: n {n} quorum {quorum}");
        }
    }
}
