//! The learner library (CAANS section 3, "Learner"; section 3.1).
//!
//! A learner counts the acceptors' 2B votes and decides an instance once a
//! quorum (configuration) voted in the same round. It delivers decided
//! instances to the application through [`Learner::take_deliveries`] (the
//! `deliver(instance, value)` callback), either in instance order (the
//! default: state-machine replication needs it) or as they are decided.
//!
//! * Duplicates: a value resubmitted by its proposer can be chosen twice; the
//!   second delivery is marked [`DeliveryKind::Duplicate`] and not given to
//!   the application (section 3.1: "learners ... detect and discard
//!   duplicated delivered values"). The filter keeps, per proposer id, a
//!   low-water mark and the request ids delivered above it, within two
//!   bounds (issue 21: it used to grow per distinct pair forever): at most
//!   [`SEEN_AHEAD_MAX`] ids above the mark (beyond, the mark moves up to
//!   the lowest recorded id, and remembers the ids it passed that were
//!   never delivered, at most [`SEEN_MISSING_MAX`], so that a value
//!   resubmitted and decided late is still delivered once: a loaded machine
//!   decides thousands of a proposer's later requests before one whose
//!   first REQUEST was lost), and at most [`SEEN_PROPOSERS_MAX`]
//!   proposer ids (beyond, the least recently delivered record goes,
//!   outsiders' block first; that proposer's resubmitted values chosen
//!   twice after that would be delivered twice). docs/paxos.md says what
//!   this means for exactly-once delivery.
//! * Gaps: when an instance below the highest one seen stays undecided for
//!   `gap_timeout`, the learner runs `recover(instance, noop)` (phase 1 and 2
//!   with a no-op, [`crate::prepare::Prepare`]) and asks its peers
//!   (CATCHUP), who answer with the decided value (DECIDED) if they have it;
//!   a peer's answer also covers instances the acceptors already trimmed.
//! * Votes counted below (the issue's learner quorums in the kernel): with a
//!   [`crate::vote_counter::VoteCounter`] in front of it, the learner gets
//!   one DECIDED per instance instead of the votes, and handles it like a
//!   peer's DECIDED; votes the counter's ring could not hold still arrive as
//!   votes and are counted here. No configuration is needed for either.
//! * Trimming: the learner reports its checkpoint (every instance below
//!   `next` is delivered) to the acceptors and the coordinator with TRIM;
//!   the coordinator answers with its next instance (WINDOW), which also
//!   reveals instances lost before any acceptor voted.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::time::Duration;

use innet_core::{Counters, Dest, Host, Outbox, Time};
use innet_wire::paxos::{MsgType, PaxosMsg, Value};

use crate::envelope::{Contents, Envelope};
use crate::prepare::Prepare;
use crate::votes::Votes;

/// Most instances one learner recovers at the same time.
pub const RECOVER_WINDOW: u32 = 256;
/// Decided values kept after delivery, to answer peers' CATCHUP.
pub const DECIDED_KEEP: u32 = 1 << 16;
/// How far beyond its next undelivered instance a learner takes votes,
/// decisions and windows: far more than any acceptor ring or peer's
/// [`DECIDED_KEEP`] holds, so nothing a learner could still recover lies
/// beyond it. Instance `u32::MAX` is never handed out and always refused.
pub const MAX_AHEAD: u32 = 1 << 20;
/// Request ids the duplicate filter holds above one proposer's low-water
/// mark: far more than a proposer has in flight (outstanding values times
/// [`crate::envelope::PACK_MAX`]).
pub const SEEN_AHEAD_MAX: usize = 4096;
/// Ids below one proposer's low-water mark that the mark passed without
/// their delivery (requests still being resubmitted), remembered so they
/// are delivered when they come: far more than a proposer has in flight.
/// Beyond it the oldest is given up (`dedup_given_up`): should it come
/// after all, it would be taken for a duplicate.
pub const SEEN_MISSING_MAX: usize = 4096;
/// Proposer ids whose duplicate records a learner keeps: every deployment
/// proposer's block ([`crate::envelope::PROPOSERS_MAX`]) with room for
/// restarts (incarnations).
pub const SEEN_PROPOSERS_MAX: usize = 4096;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LearnerConfig {
    /// 0..MAX_LEARNERS; the TRIM report and the recovery round carry it.
    pub id: u16,
    /// Acceptor votes that decide an instance.
    pub quorum: usize,
    /// Deliver in instance order (with gap detection) or as decided.
    pub ordered: bool,
    /// An instance below the highest seen, undecided this long, is recovered.
    pub gap_timeout: Duration,
    /// A recovery not decided this long is retried in a higher round.
    pub recover_timeout: Duration,
    /// Report the checkpoint after this many deliveries ...
    pub trim_every: u32,
    /// ... and at least this often.
    pub trim_interval: Duration,
    /// The payload of the no-op `recover` proposes.
    pub noop: Vec<u8>,
    /// Keep every delivery in [`Learner::log`] (for checks).
    pub keep_log: bool,
}

impl LearnerConfig {
    pub fn new(id: u16, quorum: usize) -> LearnerConfig {
        let config = LearnerConfig {
            id,
            quorum,
            ordered: true,
            gap_timeout: Duration::from_millis(20),
            recover_timeout: Duration::from_millis(20),
            trim_every: 64,
            trim_interval: Duration::from_millis(20),
            noop: vec![],
            keep_log: false,
        };
        debug_assert!(config.trim_every >= 1 && !config.trim_interval.is_zero());
        config
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeliveryKind {
    /// A submitted value, delivered for the first time.
    Value,
    /// The no-op a recovery proposed (the application discards it).
    Noop,
    /// A value delivered before in another instance (resubmission).
    Duplicate,
}

/// One value given to the application (or filtered). A packed value
/// ([`crate::envelope`]) is delivered as one `Delivery` per client value,
/// `index` 0, 1, ... within the instance, each `value` the unpacked
/// envelope of that client value; an unpacked value has `index` 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub instance: u32,
    pub index: u8,
    pub value: Value,
    pub kind: DeliveryKind,
}

#[derive(Clone, Debug, Default)]
struct Seen {
    /// Every request below this was delivered (or given up, see
    /// [`SEEN_AHEAD_MAX`]).
    low: u32,
    above: BTreeSet<u32>,
    /// Ids below `low` never delivered (the mark passed them at the bound).
    missing: BTreeSet<u32>,
    /// When it last recorded a delivery (the learner's delivery count).
    used: u64,
}

impl Seen {
    /// Records `r`; false if it was already there. Also returns how often
    /// the low-water mark jumped past ids never delivered, and how many of
    /// those it gave up (beyond [`SEEN_MISSING_MAX`]).
    fn insert(&mut self, r: u32) -> (bool, u64, u64) {
        if r < self.low {
            return (self.missing.remove(&r), 0, 0);
        }
        if !self.above.insert(r) {
            return (false, 0, 0);
        }
        let (mut jumped, mut given_up) = (0, 0);
        loop {
            while self.above.remove(&self.low) {
                self.low = self.low.saturating_add(1);
            }
            if self.above.len() <= SEEN_AHEAD_MAX {
                return (true, jumped, given_up);
            }
            jumped += 1;
            let first = *self.above.first().expect("more than the bound");
            // The ids passed now were never delivered: the highest of them
            // are remembered (a gap wider than the bound is a sender's
            // choice, not requests in flight).
            let from = self.low.max(first.saturating_sub(SEEN_MISSING_MAX as u32));
            given_up += u64::from(from - self.low);
            self.missing.extend(from..first);
            while self.missing.len() > SEEN_MISSING_MAX {
                self.missing.pop_first();
                given_up += 1;
            }
            self.low = first;
        }
    }

    /// Ids above the mark are all above it, the ones it passed below it;
    /// both sets within their bounds.
    fn holds(&self) -> bool {
        self.above.first().is_none_or(|&a| a > self.low)
            && self.missing.last().is_none_or(|&m| m < self.low)
            && self.above.len() <= SEEN_AHEAD_MAX
            && self.missing.len() <= SEEN_MISSING_MAX
    }
}

/// The duplicate filter: a [`Seen`] record per proposer id, at most
/// [`SEEN_PROPOSERS_MAX`] of them, evicted least recently used first, those
/// of the outsiders' block ([`crate::envelope::OUTSIDE_BLOCK`]) before
/// those of the deployment's proposers.
#[derive(Clone, Debug, Default)]
struct SeenTable {
    records: HashMap<u32, Seen>,
    /// `(a deployment proposer's, last use, proposer)` of every record.
    by_use: BTreeSet<(bool, u64, u32)>,
    uses: u64,
}

impl SeenTable {
    fn key(proposer: u32, s: &Seen) -> (bool, u64, u32) {
        (crate::envelope::proposer_block(proposer) != crate::envelope::OUTSIDE_BLOCK, s.used, proposer)
    }

    /// Records `(proposer, request)`: false if it was delivered before.
    fn insert(&mut self, proposer: u32, request: u32, stats: &mut LearnerStats) -> bool {
        self.uses += 1;
        if !self.records.contains_key(&proposer) && self.records.len() >= SEEN_PROPOSERS_MAX {
            if let Some((_, _, old)) = self.by_use.pop_first() {
                self.records.remove(&old);
                stats.dedup_evicted += 1;
            }
        }
        let s = self.records.entry(proposer).or_default();
        self.by_use.remove(&Self::key(proposer, s));
        s.used = self.uses;
        let (fresh, jumped, given_up) = s.insert(request);
        debug_assert!(s.holds(), "proposer {proposer}'s duplicate record broke its bounds");
        self.by_use.insert(Self::key(proposer, s));
        stats.dedup_jumped += jumped;
        stats.dedup_given_up += given_up;
        debug_assert!(self.records.len() <= SEEN_PROPOSERS_MAX, "{} proposer records", self.records.len());
        debug_assert_eq!(self.records.len(), self.by_use.len(), "one use stamp per proposer record");
        fresh
    }
}

/// Counters of what the learner did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LearnerStats {
    pub delivered: u64,
    pub noops: u64,
    pub duplicates: u64,
    pub recoveries: u64,
    pub catchups_answered: u64,
    pub decided_by_peer: u64,
    /// Decisions from a vote counter in front of this learner
    /// ([`crate::vote_counter`]: a DECIDED with `acptid` = `COUNTER_ACPTID`).
    pub decided_by_counter: u64,
    /// Votes, decisions and windows refused for an instance more than
    /// [`MAX_AHEAD`] beyond the next undelivered one (or `u32::MAX`).
    pub too_far_ahead: u64,
    /// Decided values flagged as packed that do not unpack
    /// ([`crate::envelope::Contents::Malformed`]): delivered as nothing.
    pub malformed: u64,
    /// Duplicate records dropped at [`SEEN_PROPOSERS_MAX`].
    pub dedup_evicted: u64,
    /// Low-water marks moved past undelivered ids at [`SEEN_AHEAD_MAX`]
    /// (those ids are remembered, up to [`SEEN_MISSING_MAX`]).
    pub dedup_jumped: u64,
    /// Undelivered ids the duplicate filter stopped remembering at
    /// [`SEEN_MISSING_MAX`]: one that comes after all is dropped as a
    /// duplicate.
    pub dedup_given_up: u64,
}

impl Counters for LearnerStats {
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("delivered", self.delivered),
            ("noops", self.noops),
            ("duplicates", self.duplicates),
            ("recoveries", self.recoveries),
            ("catchups_answered", self.catchups_answered),
            ("decided_by_peer", self.decided_by_peer),
            ("decided_by_counter", self.decided_by_counter),
            ("too_far_ahead", self.too_far_ahead),
            ("malformed", self.malformed),
            ("dedup_evicted", self.dedup_evicted),
            ("dedup_jumped", self.dedup_jumped),
            ("dedup_given_up", self.dedup_given_up),
        ]
    }
}

#[derive(Clone, Debug)]
pub struct Learner {
    config: LearnerConfig,
    votes: Votes,
    decided: BTreeMap<u32, Value>,
    /// First instance not yet delivered in order (the checkpoint).
    next: u32,
    /// Unordered mode: delivered instances at or above `next`.
    delivered_ahead: BTreeSet<u32>,
    max_seen: Option<u32>,
    seen: SeenTable,
    recoveries: BTreeMap<u32, Prepare>,
    /// Missing instances already asked of the peers (CATCHUP) once.
    asked: BTreeSet<u32>,
    gap_since: Option<Time>,
    deliveries: VecDeque<Delivery>,
    pub log: Vec<Delivery>,
    trim_sent: u32,
    next_trim: Time,
    pub stats: LearnerStats,
}

impl Learner {
    pub fn new(config: LearnerConfig) -> Learner {
        assert!((config.id as usize) < crate::MAX_LEARNERS, "learner id below MAX_LEARNERS");
        Learner {
            votes: Votes::new(config.quorum),
            config,
            decided: BTreeMap::new(),
            next: 0,
            delivered_ahead: BTreeSet::new(),
            max_seen: None,
            seen: SeenTable::default(),
            recoveries: BTreeMap::new(),
            asked: BTreeSet::new(),
            gap_since: None,
            deliveries: VecDeque::new(),
            log: vec![],
            trim_sent: 0,
            next_trim: Time::ZERO,
            stats: LearnerStats::default(),
        }
    }

    /// A learner restarted from a checkpoint: instances below `next` were
    /// applied, and `applied` lists the `(proposer, request)` pairs already
    /// delivered (so resubmissions are still filtered).
    pub fn resume(config: LearnerConfig, next: u32, applied: impl IntoIterator<Item = (u32, u32)>) -> Learner {
        let mut l = Learner::new(config);
        l.next = next;
        l.trim_sent = next;
        for (p, r) in applied {
            l.seen.insert(p, r, &mut l.stats);
        }
        debug_assert!(l.holds() && l.checkpoint() == next);
        l
    }

    /// The learner's invariants: nothing is held as decided, delivered
    /// ahead, recovered or asked for below the checkpoint except the
    /// decisions kept for peers; the checkpoint reported never passes the
    /// checkpoint; decided values kept within [`DECIDED_KEEP`].
    fn holds(&self) -> bool {
        self.delivered_ahead.first().is_none_or(|&i| i > self.next)
            && self.asked.first().is_none_or(|&i| i >= self.next)
            && self.recoveries.keys().all(|&i| !self.is_decided(i))
            && self.trim_sent <= self.next
            && self.decided.first_key_value().is_none_or(|(&k, _)| k >= self.next.saturating_sub(DECIDED_KEEP))
    }

    /// First instance not yet delivered (every one below it is).
    pub fn checkpoint(&self) -> u32 {
        debug_assert!(self.config.ordered || !self.delivered_ahead.contains(&self.next));
        self.next
    }

    pub fn config(&self) -> &LearnerConfig {
        debug_assert!((self.config.id as usize) < crate::MAX_LEARNERS);
        &self.config
    }

    /// Deliveries since the last call, in delivery order.
    pub fn take_deliveries(&mut self) -> Vec<Delivery> {
        let taken: Vec<Delivery> = self.deliveries.drain(..).collect();
        debug_assert!(
            !self.config.ordered || taken.windows(2).all(|w| w[0].instance <= w[1].instance),
            "ordered delivery goes in instance order"
        );
        taken
    }

    /// `recover(instance, noop)` (section 3.1): learn what was decided in
    /// `instance` by running phase 1 and 2 with the no-op; the outcome is
    /// delivered like any other decision.
    pub fn recover(&mut self, now: Time, instance: u32, out: &mut Outbox) {
        debug_assert!(self.config.noop.len() <= crate::envelope::PAYLOAD_MAX);
        let noop = Envelope::noop(&self.config.noop).expect("no-op payload fits").to_value();
        self.recover_value(now, instance, noop, out);
    }

    /// [`Learner::recover`] with the application's `noop` for this call
    /// (the API's `recover(instance, noop)`). Panics if `noop` is wider than
    /// [`crate::envelope::PAYLOAD_MAX`].
    pub fn recover_with_noop(&mut self, now: Time, instance: u32, noop: &[u8], out: &mut Outbox) {
        debug_assert!(noop.len() <= crate::envelope::PAYLOAD_MAX, "a no-op of {} bytes", noop.len());
        let noop = Envelope::noop(noop).expect("no-op payload fits").to_value();
        self.recover_value(now, instance, noop, out);
    }

    fn recover_value(&mut self, now: Time, instance: u32, noop: Value, out: &mut Outbox) {
        if self.is_decided(instance) || self.recoveries.contains_key(&instance) {
            return;
        }
        let issuer = crate::ISSUER_LEARNER_BASE + self.config.id as u8;
        let p = Prepare::start(instance, issuer, 1, noop, now, self.config.recover_timeout, out);
        self.recoveries.insert(instance, p);
        self.stats.recoveries += 1;
        debug_assert!(self.recoveries.len() as u64 <= self.stats.recoveries);
        // Peers may know it already (and may hold it after acceptors trimmed it).
        self.send_catchup(instance, out);
    }

    fn send_catchup(&self, instance: u32, out: &mut Outbox) {
        let mut c = PaxosMsg::new(MsgType::Catchup);
        c.inst = instance;
        c.acptid = self.config.id;
        out.send(Dest::Group(crate::GROUP_PEERS), c.encode());
    }

    fn is_decided(&self, inst: u32) -> bool {
        inst < self.next || self.decided.contains_key(&inst) || self.delivered_ahead.contains(&inst)
    }

    fn note_seen(&mut self, inst: u32) {
        self.max_seen = Some(self.max_seen.map_or(inst, |m| m.max(inst)));
    }

    fn decide(&mut self, inst: u32, value: Value) {
        if self.is_decided(inst) {
            return;
        }
        self.note_seen(inst);
        self.votes.forget(inst);
        self.recoveries.remove(&inst);
        self.asked.remove(&inst);
        let next_before = self.next;
        let first_decision = self.decided.insert(inst, value).is_none();
        debug_assert!(first_decision, "instance {inst} decided with two values");
        if self.config.ordered {
            while let Some(v) = self.decided.get(&self.next).copied() {
                self.deliver(self.next, v);
                self.next += 1;
            }
        } else {
            self.deliver(inst, value);
            self.delivered_ahead.insert(inst);
            while self.delivered_ahead.remove(&self.next) {
                self.next += 1;
            }
        }
        while self.asked.first().is_some_and(|i| *i < self.next) {
            self.asked.pop_first();
        }
        // Keep recent decisions for peers; the rest is checkpointed.
        let keep_from = self.next.saturating_sub(DECIDED_KEEP);
        while self.decided.first_key_value().is_some_and(|(k, _)| *k < keep_from) {
            self.decided.pop_first();
        }
        debug_assert!(self.next >= next_before, "the checkpoint went back");
        debug_assert!(self.is_decided(inst));
        debug_assert!(self.holds());
    }

    fn deliver(&mut self, instance: u32, value: Value) {
        debug_assert!(!self.config.ordered || instance == self.next, "ordered delivery skipped an instance");
        match Contents::of(&value) {
            Contents::Packed(entries) => {
                for (k, e) in entries.iter().enumerate() {
                    self.deliver_one(instance, k as u8, e.to_value(), Some(e));
                }
            }
            Contents::Malformed => self.stats.malformed += 1,
            Contents::Single(e) => self.deliver_one(instance, 0, value, Some(&e)),
            Contents::Foreign => self.deliver_one(instance, 0, value, None),
        }
    }

    fn deliver_one(&mut self, instance: u32, index: u8, value: Value, e: Option<&Envelope>) {
        let kind = match e {
            Some(e) if e.is_noop() => DeliveryKind::Noop,
            Some(e) if !self.seen.insert(e.proposer, e.request, &mut self.stats) => DeliveryKind::Duplicate,
            _ => DeliveryKind::Value,
        };
        match kind {
            DeliveryKind::Value => self.stats.delivered += 1,
            DeliveryKind::Noop => self.stats.noops += 1,
            DeliveryKind::Duplicate => self.stats.duplicates += 1,
        }
        let d = Delivery { instance, index, value, kind };
        if self.config.keep_log {
            self.log.push(d);
        }
        self.deliveries.push_back(d);
    }

    /// Undecided instances in `[next, max_seen]`, at most `limit`.
    fn missing(&self, limit: u32) -> Vec<u32> {
        let Some(max) = self.max_seen else { return vec![] };
        let missing: Vec<u32> = (self.next..=max).filter(|i| !self.is_decided(*i)).take(limit as usize).collect();
        debug_assert!(missing.len() <= limit as usize && missing.first().is_none_or(|&i| i >= self.next));
        missing
    }

    fn send_trim(&mut self, now: Time, out: &mut Outbox) {
        let mut t = PaxosMsg::new(MsgType::Trim);
        t.inst = self.next;
        t.acptid = self.config.id;
        let bytes = t.encode();
        out.send(Dest::Group(crate::GROUP_ACCEPTORS), bytes.clone());
        out.send(Dest::Port(crate::PORT_COORDINATOR), bytes.clone());
        // The backup answers with its window once it took over.
        out.send(Dest::Port(crate::PORT_BACKUP), bytes);
        debug_assert!(self.trim_sent <= self.next, "a checkpoint reported went back");
        self.trim_sent = self.next;
        self.next_trim = now + self.config.trim_interval;
    }
}

impl Host for Learner {
    fn on_packet(&mut self, now: Time, packet: &[u8], out: &mut Outbox) {
        let Ok(m) = PaxosMsg::decode(packet) else { return };
        let far = m.inst == u32::MAX || m.inst > self.next.saturating_add(MAX_AHEAD);
        if far && matches!(m.msgtype, MsgType::Phase2B | MsgType::Decided | MsgType::Window) {
            self.stats.too_far_ahead += 1;
            return;
        }
        match m.msgtype {
            MsgType::Phase2B => {
                if self.is_decided(m.inst) {
                    return;
                }
                self.note_seen(m.inst);
                if let Some(v) = self.votes.record(m.inst, m.acptid, m.vrnd, m.value) {
                    self.decide(m.inst, v);
                }
            }
            MsgType::Phase1B => {
                let q = self.config.quorum;
                if let Some(p) = self.recoveries.get_mut(&m.inst) {
                    p.on_1b(&m, q, out);
                }
            }
            MsgType::Catchup => {
                if let Some(v) = self.decided.get(&m.inst) {
                    let mut d = PaxosMsg::new(MsgType::Decided);
                    d.inst = m.inst;
                    d.acptid = self.config.id;
                    d.value = *v;
                    out.send(Dest::Reply, d.encode());
                    self.stats.catchups_answered += 1;
                }
            }
            MsgType::Window if m.inst > 0 => self.note_seen(m.inst - 1),
            MsgType::Decided if !self.is_decided(m.inst) => {
                if m.acptid == crate::vote_counter::COUNTER_ACPTID {
                    self.stats.decided_by_counter += 1;
                } else {
                    self.stats.decided_by_peer += 1;
                }
                self.decide(m.inst, m.value);
            }
            _ => {}
        }
        // Every instance at or below max_seen that is not delivered is a gap
        // (`next` itself is never delivered ahead).
        if self.max_seen.is_some_and(|m| m >= self.next) {
            self.gap_since.get_or_insert(now);
        } else {
            self.gap_since = None;
        }
        if self.next >= self.trim_sent.saturating_add(self.config.trim_every) {
            self.send_trim(now, out);
        }
    }

    fn on_tick(&mut self, now: Time, out: &mut Outbox) {
        let missing = self.missing(RECOVER_WINDOW);
        if missing.is_empty() {
            self.gap_since = None;
        } else {
            let since = *self.gap_since.get_or_insert(now);
            if now >= since + self.config.gap_timeout {
                // First ask the peers (cheap, and they may hold instances the
                // acceptors trimmed); what is still missing a gap timeout
                // later is recovered through the acceptors.
                for i in missing {
                    if self.asked.insert(i) {
                        self.send_catchup(i, out);
                    } else {
                        self.recover(now, i, out);
                    }
                }
                self.gap_since = Some(now);
            }
        }
        let timeout = self.config.recover_timeout;
        for p in self.recoveries.values_mut() {
            if p.on_tick(now, timeout, out) {
                // Retrying: ask the peers again too.
                let mut c = PaxosMsg::new(MsgType::Catchup);
                c.inst = p.inst;
                c.acptid = self.config.id;
                out.send(Dest::Group(crate::GROUP_PEERS), c.encode());
            }
        }
        if now >= self.next_trim {
            self.send_trim(now, out);
        }
    }

    fn next_tick(&self) -> Option<Time> {
        let mut t = self.next_trim;
        if let Some(g) = self.gap_since {
            t = t.min(g + self.config.gap_timeout);
        }
        Some(self.recoveries.values().map(|p| p.deadline()).fold(t, Time::min))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vote(inst: u32, acpt: u16, vrnd: u16, p: u32, r: u32) -> Vec<u8> {
        let mut m = PaxosMsg::new(MsgType::Phase2B);
        m.inst = inst;
        m.rnd = vrnd;
        m.vrnd = vrnd;
        m.acptid = acpt;
        m.value = Envelope::new(p, r, b"v").unwrap().to_value();
        m.encode()
    }

    fn learner(ordered: bool) -> Learner {
        Learner::new(LearnerConfig { ordered, ..LearnerConfig::new(1, 2) })
    }

    fn kinds(l: &mut Learner) -> Vec<(u32, DeliveryKind)> {
        l.take_deliveries().into_iter().map(|d| (d.instance, d.kind)).collect()
    }

    /// Section 3: deliver once a quorum (from configuration) voted; section
    /// 3.1: a value chosen twice through resubmission is delivered once.
    #[test]
    fn delivers_in_order_once_per_value() {
        let mut l = learner(true);
        let mut out = Outbox::new();
        l.on_packet(Time(1), &vote(1, 0, 1, 7, 1), &mut out);
        l.on_packet(Time(1), &vote(1, 1, 1, 7, 1), &mut out);
        assert!(kinds(&mut l).is_empty(), "instance 0 comes first");
        l.on_packet(Time(2), &vote(0, 2, 1, 7, 2), &mut out);
        l.on_packet(Time(2), &vote(0, 0, 1, 7, 2), &mut out);
        assert_eq!(kinds(&mut l), vec![(0, DeliveryKind::Value), (1, DeliveryKind::Value)]);
        l.on_packet(Time(3), &vote(2, 0, 1, 7, 1), &mut out);
        l.on_packet(Time(3), &vote(2, 1, 1, 7, 1), &mut out);
        assert_eq!(kinds(&mut l), vec![(2, DeliveryKind::Duplicate)]);
        assert_eq!(l.checkpoint(), 3);
    }

    /// Decides instance `inst` with `(p, r)` through a peer's DECIDED.
    fn decide_pair(l: &mut Learner, inst: u32, p: u32, r: u32) -> DeliveryKind {
        let mut out = Outbox::new();
        l.on_packet(Time(1), &decided(inst, Envelope::new(p, r, b"v").unwrap().to_value()), &mut out);
        l.take_deliveries().last().expect("delivered").kind
    }

    /// Issue 21: the duplicate filter is bounded per proposer
    /// ([`SEEN_AHEAD_MAX`] ids above its mark) and in proposers
    /// ([`SEEN_PROPOSERS_MAX`], outsiders' block evicted first), and goes
    /// on filtering the deployment's proposers' duplicates.
    #[test]
    fn the_duplicate_filter_is_bounded() {
        use crate::envelope::proposer_id;
        let mut l = learner(true);
        let own = proposer_id(0, 5);
        let mut inst = 0;
        let mut next = |l: &mut Learner, p, r| {
            inst += 1;
            decide_pair(l, inst - 1, p, r)
        };
        assert_eq!(next(&mut l, own, 1), DeliveryKind::Value);
        // Requests from 1 (0 is never used): the mark stays at 0 until the
        // record reaches its bound, then moves up; duplicates still found.
        for r in 2..=SEEN_AHEAD_MAX as u32 + 10 {
            assert_eq!(next(&mut l, own, r), DeliveryKind::Value);
        }
        let rec = &l.seen.records[&own];
        assert!(rec.above.len() <= SEEN_AHEAD_MAX, "{} ids above the mark", rec.above.len());
        assert_eq!((rec.low, l.stats.dedup_jumped), (SEEN_AHEAD_MAX as u32 + 11, 1));
        assert_eq!(next(&mut l, own, 3), DeliveryKind::Duplicate);
        // A request decided late, after more than the bound of its
        // proposer's later ones (its first REQUEST lost, resubmitted): the
        // mark moved past it, and it is still delivered, once.
        let late = SEEN_AHEAD_MAX as u32 + 11;
        for r in late + 1..=late + SEEN_AHEAD_MAX as u32 + 5 {
            assert_eq!(next(&mut l, own, r), DeliveryKind::Value);
        }
        assert!(l.seen.records[&own].low > late && l.stats.dedup_jumped >= 2);
        assert_eq!(next(&mut l, own, late), DeliveryKind::Value, "a late value is not lost");
        assert_eq!(next(&mut l, own, late), DeliveryKind::Duplicate, "and delivered once");
        assert_eq!(l.stats.dedup_given_up, 0);
        // A gap a sender chose (ids far ahead) is remembered only up to
        // its bound; the rest is given up and counted.
        let far = late + 10 * SEEN_AHEAD_MAX as u32;
        for r in far..=far + SEEN_AHEAD_MAX as u32 {
            next(&mut l, own, r);
        }
        assert!(l.seen.records[&own].missing.len() <= SEEN_MISSING_MAX);
        assert!(l.stats.dedup_given_up > 0);
        // An outsider cycling through fresh ids evicts only outsiders.
        for p in 1..=SEEN_PROPOSERS_MAX as u32 + 100 {
            assert_eq!(next(&mut l, p, 1), DeliveryKind::Value);
        }
        assert_eq!(l.seen.records.len(), SEEN_PROPOSERS_MAX);
        assert_eq!(l.seen.by_use.len(), SEEN_PROPOSERS_MAX);
        assert_eq!(l.stats.dedup_evicted, 101);
        assert_eq!(next(&mut l, own, 7), DeliveryKind::Duplicate, "the deployment proposer's record stays");
        assert_eq!(next(&mut l, 1, 1), DeliveryKind::Value, "the oldest outsider's record went");
    }

    /// Learner quorums below the learner (crate::vote_counter): the votes go
    /// through a counter first; the learner delivers from its decisions
    /// alone, once per value, in order, and counts them as the counter's.
    #[test]
    fn delivers_from_a_vote_counter_in_front() {
        use crate::vote_counter::{VoteCounter, VoteCounterConfig};
        use innet_core::DataPlane;
        let mut c = VoteCounter::new(VoteCounterConfig::new(3));
        let mut l = learner(true);
        let mut out = Outbox::new();
        for (inst, acpt, r) in [(1, 0, 1), (1, 2, 1), (0, 1, 2), (1, 1, 1), (0, 2, 2), (2, 0, 1), (2, 1, 1)] {
            let mut b = vote(inst, acpt, 1, 7, r);
            if c.process(&mut b) != innet_core::Verdict::Drop {
                l.on_packet(Time(1), &b, &mut out);
            }
        }
        assert_eq!(
            kinds(&mut l),
            vec![(0, DeliveryKind::Value), (1, DeliveryKind::Value), (2, DeliveryKind::Duplicate)]
        );
        assert_eq!((l.stats.decided_by_counter, l.stats.decided_by_peer), (3, 0));
    }

    fn decided(inst: u32, value: Value) -> Vec<u8> {
        let mut d = PaxosMsg::new(MsgType::Decided);
        d.inst = inst;
        d.value = value;
        d.encode()
    }

    /// A packed value is delivered as its client values, in order, each
    /// once (a resubmitted pack chosen again is all duplicates); a value
    /// flagged packed that does not unpack is counted and delivers nothing.
    #[test]
    fn unpacks_packed_values_once_each_in_order() {
        use crate::envelope::{PackBuilder, PACKED};
        let mut l = learner(true);
        let mut out = Outbox::new();
        let mut b = PackBuilder::new(7, 10);
        for p in [&b"a"[..], b"bc", b""] {
            assert!(b.push(p));
        }
        let packed = b.to_value();
        l.on_packet(Time(1), &decided(0, packed), &mut out);
        l.on_packet(Time(1), &decided(1, Envelope::new(7, 13, b"d").unwrap().to_value()), &mut out);
        l.on_packet(Time(1), &decided(2, packed), &mut out);
        let bad = Envelope::new(7, PACKED | 14, &[5, b'x']).unwrap().to_value();
        l.on_packet(Time(1), &decided(3, bad), &mut out);
        l.on_packet(Time(1), &decided(4, Envelope::new(7, 14, b"e").unwrap().to_value()), &mut out);
        let got: Vec<(u32, u8, DeliveryKind, u32, Vec<u8>)> = l
            .take_deliveries()
            .into_iter()
            .map(|d| {
                let e = Envelope::from_value(&d.value).unwrap();
                (d.instance, d.index, d.kind, e.request, e.payload().to_vec())
            })
            .collect();
        use DeliveryKind::*;
        assert_eq!(
            got,
            vec![
                (0, 0, Value, 10, b"a".to_vec()),
                (0, 1, Value, 11, b"bc".to_vec()),
                (0, 2, Value, 12, vec![]),
                (1, 0, Value, 13, b"d".to_vec()),
                (2, 0, Duplicate, 10, b"a".to_vec()),
                (2, 1, Duplicate, 11, b"bc".to_vec()),
                (2, 2, Duplicate, 12, vec![]),
                (4, 0, Value, 14, b"e".to_vec()),
            ]
        );
        assert_eq!((l.stats.delivered, l.stats.duplicates, l.stats.malformed), (5, 3, 1));
        assert_eq!(l.checkpoint(), 5);
    }

    #[test]
    fn unordered_delivers_as_decided() {
        let mut l = learner(false);
        let mut out = Outbox::new();
        l.on_packet(Time(1), &vote(1, 0, 1, 7, 1), &mut out);
        l.on_packet(Time(1), &vote(1, 1, 1, 7, 1), &mut out);
        assert_eq!(kinds(&mut l), vec![(1, DeliveryKind::Value)]);
        assert_eq!(l.checkpoint(), 0);
    }

    /// Section 3.1: a gap that persists is recovered with phase 1 + no-op,
    /// and peers are asked; a peer's DECIDED fills it.
    #[test]
    fn recovers_gaps_after_the_timeout() {
        let mut l = learner(true);
        let mut out = Outbox::new();
        l.on_packet(Time(1), &vote(2, 0, 1, 7, 1), &mut out);
        l.on_packet(Time(1), &vote(2, 1, 1, 7, 1), &mut out);
        out.sends.clear();
        let t = l.next_tick().unwrap();
        assert!(t <= Time(1) + l.config().gap_timeout);
        let g = l.config().gap_timeout;
        l.on_tick(Time(1) + g, &mut out);
        let sent: Vec<PaxosMsg> =
            out.sends.iter().map(|s| PaxosMsg::decode(&s.1).unwrap()).filter(|m| m.msgtype != MsgType::Trim).collect();
        assert!(sent.iter().all(|m| m.msgtype == MsgType::Catchup), "peers are asked first");
        assert_eq!(sent.len(), 2);
        out.sends.clear();
        l.on_tick(Time(1) + g + g, &mut out);
        let sent: Vec<PaxosMsg> = out.sends.iter().map(|s| PaxosMsg::decode(&s.1).unwrap()).collect();
        let recovered: Vec<u32> = sent.iter().filter(|m| m.msgtype == MsgType::Phase1A).map(|m| m.inst).collect();
        assert_eq!(recovered, vec![0, 1]);
        assert!(sent.iter().any(|m| m.msgtype == MsgType::Catchup && m.inst == 0));
        let mut d = PaxosMsg::new(MsgType::Decided);
        d.value = Envelope::noop(b"").unwrap().to_value();
        l.on_packet(Time(2), &d.encode(), &mut out);
        d.inst = 1;
        l.on_packet(Time(2), &d.encode(), &mut out);
        assert_eq!(kinds(&mut l), vec![(0, DeliveryKind::Noop), (1, DeliveryKind::Noop), (2, DeliveryKind::Value)]);
        // It answers its peers' CATCHUP for what it decided.
        out.sends.clear();
        let mut c = PaxosMsg::new(MsgType::Catchup);
        c.inst = 2;
        l.on_packet(Time(3), &c.encode(), &mut out);
        assert_eq!(out.sends[0].0, Dest::Reply);
        assert_eq!(PaxosMsg::decode(&out.sends[0].1).unwrap().msgtype, MsgType::Decided);
    }

    #[test]
    fn reports_its_checkpoint_to_the_acceptors() {
        let mut l = Learner::new(LearnerConfig { trim_every: 2, ..LearnerConfig::new(3, 1) });
        let mut out = Outbox::new();
        l.on_packet(Time(1), &vote(0, 0, 1, 7, 1), &mut out);
        assert!(out.sends.is_empty());
        l.on_packet(Time(1), &vote(1, 0, 1, 7, 2), &mut out);
        let t = PaxosMsg::decode(&out.sends[0].1).unwrap();
        assert_eq!(
            (out.sends[0].0, t.msgtype, t.inst, t.acptid),
            (Dest::Group(crate::GROUP_ACCEPTORS), MsgType::Trim, 2, 3)
        );
    }
}
