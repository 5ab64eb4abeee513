//! The backup coordinator in software (CAANS section 3.1, "Failure
//! handling": "A faulty switch coordinator can be replaced by ... a
//! coordinator in software running on a server that temporarily assumes the
//! role").
//!
//! While the switch coordinator answers its heartbeats, the backup only
//! watches: it is a member of the learners' group and remembers the highest
//! instance voted in. After `heartbeat_misses` unanswered heartbeats it takes
//! over: it tells the proposers and learners (TAKEOVER, repeated every
//! heartbeat interval so a lost announcement, or a proposer started later,
//! does no harm) and from then on orders their
//! requests itself, starting after the highest instance it saw. Its round
//! (epoch 1, issuer 2) is higher than the coordinator's pre-initialised one,
//! and because acceptors were only pre-initialised for round 1, it runs
//! phase 1 for every instance it uses ([`Prepare`]): where an acceptor in the
//! quorum had voted (an instance in flight under the old coordinator), that
//! value is proposed again and the request moves on to the next instance.
//! Instances the old coordinator handed out and the backup skipped are gaps
//! that learners fill with `recover`. Taking over while the coordinator is
//! still alive (a false suspicion) is safe: two coordinators in different
//! rounds are ordinary Paxos.
//!
//! Failback (issue 24 item 3): the same state machine runs a *restarted*
//! coordinator ([`Mode::Restarted`]): under the coordinator's issuer, in an
//! epoch above every epoch its earlier incarnations used (the runtime keeps
//! that on disk), it takes the role at once, announces TAKEOVER, and takes
//! it back again (in a yet higher epoch) whenever it hears a higher round
//! announced. It waits to hand out instances until it knows where the log
//! is (a learner's TRIM, or a vote). The backup steps down when it hears a
//! round above its own (it goes back to watching; if the coordinator fails
//! again it takes over in a round above every round it heard). Proposers
//! follow the highest round announced. Every takeover runs phase 1 for
//! every instance it uses, so rounds are never shared: two coordinators in
//! different rounds are ordinary Paxos, and an incarnation never revisits
//! an instance (its next instance never goes back).
//!
//! Requests (issue 21): a proposer sends to the backup only after its
//! TAKEOVER, which the backup sends once it is in charge; so a request that
//! arrives before is not a proposer's and is dropped and counted
//! (`requests_before_takeover`) instead of waiting to be ordered first.
//! After the takeover, requests wait for an instance in a queue of at most
//! [`QUEUE_MAX`] (beyond: dropped, counted `requests_dropped_full`; their
//! proposers resubmit). Who may send a request at all, and in whose name,
//! is the runtime's admission rule (`crate::trust`).

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use innet_core::{Dest, Host, Outbox, Time};
use innet_wire::paxos::{MsgType, PaxosMsg, Value};

use crate::prepare::{Phase2, Prepare};
use crate::votes::Votes;

/// Requests the backup holds waiting for an instance once it coordinates.
/// Beyond it a REQUEST is dropped and counted (`requests_dropped_full`);
/// its proposer resends it. 2^16 values of 40 bytes: about 2.6 MB.
pub const QUEUE_MAX: usize = 1 << 16;

/// Which coordinator this state machine is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The backup coordinator (issuer [`crate::ISSUER_BACKUP`]): watches the
    /// coordinator with heartbeats, takes over when they go unanswered,
    /// steps down when it hears a higher round.
    Backup,
    /// A restarted coordinator (issuer [`crate::ISSUER_COORDINATOR`]):
    /// takes the role at once in an epoch of at least `first_epoch` (above
    /// every epoch an earlier incarnation used), answers the backup's
    /// heartbeats, and takes the role back whenever it hears a higher round.
    Restarted { first_epoch: u8 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackupConfig {
    pub mode: Mode,
    /// Failback deployments (`PaxosShape::failback`): TAKEOVER also goes to
    /// the other coordinator (the backup's to the coordinator's port, the
    /// restarted coordinator's to the backup's), so each hears the other's
    /// round. Off: the backup sends exactly what it always did.
    pub failback: bool,
    pub quorum: usize,
    pub heartbeat_interval: Duration,
    /// Unanswered heartbeats in a row that make the backup take over.
    pub heartbeat_misses: u32,
    /// Retry phase 1 of an instance not decided after this long.
    pub timeout: Duration,
    /// Instances in phase 1 or 2 at the same time.
    pub window: usize,
}

impl BackupConfig {
    pub fn new(quorum: usize) -> BackupConfig {
        let config = BackupConfig {
            mode: Mode::Backup,
            failback: false,
            quorum,
            heartbeat_interval: Duration::from_millis(10),
            heartbeat_misses: 3,
            timeout: Duration::from_millis(20),
            window: 64,
        };
        debug_assert!(config.window >= 1 && config.heartbeat_misses >= 1 && !config.heartbeat_interval.is_zero());
        config
    }

    /// The round issuer of this coordinator.
    pub fn issuer(&self) -> u8 {
        match self.mode {
            Mode::Backup => crate::ISSUER_BACKUP,
            Mode::Restarted { .. } => crate::ISSUER_COORDINATOR,
        }
    }

    /// The lowest epoch it takes over in.
    pub fn first_epoch(&self) -> u8 {
        match self.mode {
            Mode::Backup => 1,
            Mode::Restarted { first_epoch } => first_epoch,
        }
    }
}

#[derive(Clone, Debug)]
struct Slot {
    prepare: Prepare,
    /// The request this instance carries, until phase 1 shows it must carry
    /// an earlier value instead.
    request: Option<Value>,
}

#[derive(Clone, Debug)]
pub struct BackupCoordinator {
    config: BackupConfig,
    active_since: Option<Time>,
    last_reply: Time,
    next_heartbeat: Time,
    heartbeat_seq: u32,
    max_seen: Option<u32>,
    next_inst: u32,
    queue: VecDeque<Value>,
    slots: BTreeMap<u32, Slot>,
    votes: Votes,
    /// The epoch of the round it announces (0: it has not taken over yet).
    epoch: u8,
    /// The highest epoch any of its rounds used (phase 1 retries go
    /// higher than the announced one): a restarted coordinator's runtime
    /// keeps it on disk, so the next incarnation starts above it.
    epoch_high: u8,
    /// The highest round another coordinator announced (TAKEOVER).
    heard: u16,
    /// A restarted coordinator knows where the log is (a TRIM or a vote).
    knows_log: bool,
    pub instances_started: u64,
    /// Times it took the role (its first takeover included).
    pub takeovers: u64,
    /// Times it handed the role on to a higher round (stepped down).
    pub step_downs: u64,
    /// Takeovers refused because no epoch was left above the rounds heard.
    pub epochs_exhausted: u64,
    pub values_repeated: u64,
    /// Instances in flight given up because a learner's checkpoint passed
    /// them (they were decided, by us or by another coordinator).
    pub slots_below_checkpoints: u64,
    /// REQUESTs that arrived before the takeover (proposers only send here
    /// after TAKEOVER): dropped, so no one can fill the first instances
    /// of a failover with values queued in advance.
    pub requests_before_takeover: u64,
    /// REQUESTs dropped because [`QUEUE_MAX`] were waiting.
    pub requests_dropped_full: u64,
}

impl BackupCoordinator {
    pub fn new(config: BackupConfig) -> BackupCoordinator {
        assert!(config.window >= 1 && config.heartbeat_misses >= 1);
        BackupCoordinator {
            config,
            active_since: None,
            last_reply: Time::ZERO,
            next_heartbeat: Time::ZERO,
            heartbeat_seq: 0,
            max_seen: None,
            next_inst: 0,
            queue: VecDeque::new(),
            slots: BTreeMap::new(),
            votes: Votes::new(config.quorum),
            epoch: 0,
            epoch_high: 0,
            heard: 0,
            knows_log: false,
            instances_started: 0,
            takeovers: 0,
            step_downs: 0,
            epochs_exhausted: 0,
            values_repeated: 0,
            slots_below_checkpoints: 0,
            requests_before_takeover: 0,
            requests_dropped_full: 0,
        }
    }

    /// When the backup took over, if it has.
    pub fn active_since(&self) -> Option<Time> {
        debug_assert!(self.holds());
        self.active_since
    }

    /// The backup's invariants: instances in flight within the window and
    /// below the next one to hand out; requests waiting within the queue's
    /// bound (plus the few that phase 1 displaced, at most one per
    /// instance in flight); nothing in flight or waiting before the takeover.
    fn holds(&self) -> bool {
        self.slots.len() <= self.config.window
            && self.slots.keys().next_back().is_none_or(|&i| i < self.next_inst)
            && self.queue.len() <= QUEUE_MAX + self.config.window
            && (self.active_since.is_some() || (self.slots.is_empty() && self.queue.is_empty()))
    }

    /// Takes over now (also what a control plane calls to force failover).
    pub fn take_over(&mut self, now: Time, out: &mut Outbox) {
        if self.active_since.is_some() {
            return;
        }
        let Some(epoch) = self.next_epoch() else {
            self.epochs_exhausted += 1;
            return;
        };
        self.set_epoch(epoch);
        self.active_since = Some(now);
        self.takeovers += 1;
        self.announce(now, out);
        self.fill(now, out);
        debug_assert!(self.holds());
    }

    /// The smallest epoch at least the configured first one, above the
    /// epoch it announced last, whose round is above every round heard;
    /// `None` once epochs run out (rounds are 8-bit epochs).
    fn next_epoch(&self) -> Option<u8> {
        let issuer = self.config.issuer();
        let above_own = if self.epoch == 0 { 0 } else { self.epoch.checked_add(1)? };
        let (heard_epoch, heard_issuer) = ((self.heard >> 8) as u8, self.heard as u8);
        let above_heard = if issuer > heard_issuer { heard_epoch } else { heard_epoch.checked_add(1)? };
        let e = self.config.first_epoch().max(above_own).max(above_heard).max(1);
        debug_assert!(crate::round(e, issuer) > self.heard && crate::round(e, issuer) > crate::ROUND_INIT);
        Some(e)
    }

    fn set_epoch(&mut self, epoch: u8) {
        debug_assert!(epoch > self.epoch, "an announced round never goes back");
        self.epoch = epoch;
        self.epoch_high = self.epoch_high.max(epoch);
    }

    /// The round it announces (or announced last).
    pub fn round(&self) -> u16 {
        crate::round(self.epoch, self.config.issuer())
    }

    /// The highest epoch any of its rounds used.
    pub fn epoch_high(&self) -> u8 {
        debug_assert!(self.epoch_high >= self.epoch);
        self.epoch_high
    }

    /// The highest round another coordinator announced.
    pub fn heard(&self) -> u16 {
        self.heard
    }

    fn announce(&mut self, now: Time, out: &mut Outbox) {
        let mut t = PaxosMsg::new(MsgType::Takeover);
        t.rnd = self.round();
        out.send(Dest::Group(crate::GROUP_PROPOSERS), t.encode());
        // Learners pass it to proposers in their process that the
        // deployment does not name (a key-value replica's front end).
        out.send(Dest::Group(crate::GROUP_LEARNERS), t.encode());
        if self.config.failback {
            let other = match self.config.mode {
                Mode::Backup => crate::PORT_COORDINATOR,
                Mode::Restarted { .. } => crate::PORT_BACKUP,
            };
            out.send(Dest::Port(other), t.encode());
        }
        self.next_heartbeat = now + self.config.heartbeat_interval;
    }

    /// Another coordinator announced round `rnd`: a backup in charge below
    /// it steps down (its instances in flight and requests waiting are
    /// dropped: their proposers resubmit to the new coordinator); a
    /// restarted coordinator takes the role back above it.
    fn heard_takeover(&mut self, now: Time, rnd: u16, out: &mut Outbox) {
        if rnd <= self.heard {
            return;
        }
        self.heard = rnd;
        if self.active_since.is_none() || rnd <= self.round() {
            return;
        }
        match self.config.mode {
            Mode::Backup => {
                self.active_since = None;
                self.step_downs += 1;
                self.slots.clear();
                self.queue.clear();
                self.votes = Votes::new(self.config.quorum);
                // Watch the coordinator again from now on.
                self.last_reply = now;
                self.next_heartbeat = now;
            }
            // It keeps its instances in flight (its own, in its earlier
            // round: safe) and its queue; new instances use the new round.
            Mode::Restarted { .. } => match self.next_epoch() {
                Some(e) => {
                    self.set_epoch(e);
                    self.takeovers += 1;
                    self.announce(now, out);
                }
                None => self.epochs_exhausted += 1,
            },
        }
        debug_assert!(self.holds());
    }

    /// Starts phase 1 for queued requests while the window has room.
    fn fill(&mut self, now: Time, out: &mut Outbox) {
        debug_assert!(self.active_since.is_some(), "only a backup in charge hands out instances");
        let next_before = self.next_inst;
        if matches!(self.config.mode, Mode::Restarted { .. }) && !self.knows_log {
            // Instances below the learners' checkpoints may be trimmed at
            // the acceptors: phase 1 for them would never be answered.
            return;
        }
        while self.slots.len() < self.config.window {
            // Past every instance seen decided: at the takeover (the old
            // coordinator's), and after it (a coordinator suspected wrongly,
            // on a loaded machine, goes on deciding; learners may have
            // trimmed those instances at the acceptors, which then drop our
            // 1A for good). A vote for the last instance leaves nothing to
            // hand out: `fill` refuses to go past it.
            if let Some(m) = self.max_seen {
                self.next_inst = self.next_inst.max(m.saturating_add(1));
            }
            if self.next_inst == u32::MAX {
                break;
            }
            let Some(v) = self.queue.pop_front() else { break };
            let inst = self.next_inst;
            self.next_inst += 1;
            let prepare = Prepare::start(inst, self.config.issuer(), self.epoch, v, now, self.config.timeout, out);
            let fresh = self.slots.insert(inst, Slot { prepare, request: Some(v) }).is_none();
            debug_assert!(fresh, "instance {inst} handed out twice");
            self.instances_started += 1;
        }
        debug_assert!(self.next_inst >= next_before, "the next instance went back");
        debug_assert!(self.holds());
    }

    /// A client value. Proposers only send here after TAKEOVER (and resend
    /// what is not committed after it): anything earlier is not theirs.
    fn on_request(&mut self, now: Time, value: Value, out: &mut Outbox) {
        if self.active_since.is_none() {
            self.requests_before_takeover += 1;
            return;
        }
        if self.queue.len() >= QUEUE_MAX {
            self.requests_dropped_full += 1;
            return;
        }
        self.queue.push_back(value);
        self.fill(now, out);
    }

    /// A 2B vote or a vote counter's decision: the log reaches its instance,
    /// and one of our slots may be decided.
    fn on_vote(&mut self, now: Time, m: &PaxosMsg, out: &mut Outbox) {
        // A vote in the other coordinator's round tells its round too (a
        // lost TAKEOVER, or a deployment whose backup does not send it to
        // the coordinator). Votes of round 1 never reach above the backup's
        // rounds.
        let other = match self.config.mode {
            Mode::Backup => crate::ISSUER_COORDINATOR,
            Mode::Restarted { .. } => crate::ISSUER_BACKUP,
        };
        if m.msgtype == MsgType::Phase2B && (m.vrnd & 0xff) as u8 == other && m.vrnd > crate::ROUND_INIT {
            self.heard_takeover(now, m.vrnd, out);
        }
        self.max_seen = Some(self.max_seen.map_or(m.inst, |x| x.max(m.inst)));
        if !self.knows_log {
            self.knows_log = true;
            if self.active_since.is_some() && matches!(self.config.mode, Mode::Restarted { .. }) {
                self.fill(now, out);
            }
        }
        let decided = m.msgtype == MsgType::Decided
            || (self.slots.contains_key(&m.inst) && self.votes.record(m.inst, m.acptid, m.vrnd, m.value).is_some());
        if decided && self.slots.contains_key(&m.inst) {
            self.votes.forget(m.inst);
            self.slots.remove(&m.inst);
            self.fill(now, out);
        }
    }

    /// A learner delivered every instance below its checkpoint (section
    /// 3.1's TRIM): those are decided. New instances start past it (a
    /// restarted coordinator learns there where the log is), and an instance
    /// of ours below it is given up, not retried: its phase 1 may never be
    /// answered (the acceptors trim it) and every retry would climb the
    /// epochs. Its request, if it carried one, is resubmitted by its
    /// proposer. Once in charge, it tells learners how far it has handed
    /// out instances, as the coordinator does: a learner that missed every
    /// vote of the last instances learns of the gap and recovers them.
    fn on_trim(&mut self, now: Time, m: &PaxosMsg, out: &mut Outbox) {
        if let Some(last) = m.inst.checked_sub(1) {
            self.max_seen = Some(self.max_seen.map_or(last, |x| x.max(last)));
        }
        let before = self.slots.len();
        self.slots.retain(|&i, _| i >= m.inst);
        self.slots_below_checkpoints += (before - self.slots.len()) as u64;
        self.votes.forget_below(m.inst);
        debug_assert!(self.slots.keys().all(|&i| i >= m.inst), "no slot left below the checkpoint");
        let first = matches!(self.config.mode, Mode::Restarted { .. }) && !self.knows_log;
        self.knows_log = true;
        if self.active_since.is_some() {
            self.fill(now, out);
            if !first {
                let mut w = PaxosMsg::new(MsgType::Window);
                w.inst = self.next_inst;
                w.acptid = m.acptid;
                out.send(Dest::Reply, w.encode());
            }
        }
    }

    /// A promise for one of our slots' phase 1.
    fn on_1b(&mut self, now: Time, m: &PaxosMsg, out: &mut Outbox) {
        let q = self.config.quorum;
        let Some(s) = self.slots.get_mut(&m.inst) else { return };
        if let Some(Phase2::Earlier(_)) = s.prepare.on_1b(m, q, out) {
            // An earlier vote occupies this instance: finish it, and give
            // our request the next free instance.
            self.values_repeated += 1;
            if let Some(r) = s.request.take() {
                self.queue.push_front(r);
            }
            self.fill(now, out);
        }
    }
}

impl Host for BackupCoordinator {
    fn on_packet(&mut self, now: Time, packet: &[u8], out: &mut Outbox) {
        let Ok(m) = PaxosMsg::decode(packet) else { return };
        match m.msgtype {
            // A restarted coordinator answers the backup's heartbeats.
            MsgType::Heartbeat if matches!(self.config.mode, Mode::Restarted { .. }) => {
                out.send(Dest::Reply, packet.to_vec())
            }
            MsgType::Heartbeat if m.inst == self.heartbeat_seq => self.last_reply = now,
            MsgType::Takeover => self.heard_takeover(now, m.rnd, out),
            MsgType::Request => self.on_request(now, m.value, out),
            // A vote, or a decision from a vote counter in front of the
            // backup (crate::vote_counter).
            MsgType::Phase2B | MsgType::Decided => self.on_vote(now, &m, out),
            MsgType::Trim => self.on_trim(now, &m, out),
            MsgType::Phase1B => self.on_1b(now, &m, out),
            _ => {}
        }
    }

    fn on_tick(&mut self, now: Time, out: &mut Outbox) {
        if now >= self.next_heartbeat {
            if matches!(self.config.mode, Mode::Restarted { .. }) && self.active_since.is_none() {
                // The restarted coordinator takes the role at its first tick.
                self.take_over(now, out);
                self.next_heartbeat = now + self.config.heartbeat_interval;
            } else if self.active_since.is_some() {
                self.announce(now, out);
            } else {
                let silent = now.since(self.last_reply);
                let limit = self.config.heartbeat_interval * self.config.heartbeat_misses;
                if self.heartbeat_seq > 0 && silent > limit {
                    self.take_over(now, out);
                } else {
                    self.heartbeat_seq += 1;
                    if self.heartbeat_seq == 1 {
                        self.last_reply = now;
                    }
                    let mut h = PaxosMsg::new(MsgType::Heartbeat);
                    h.inst = self.heartbeat_seq;
                    out.send(Dest::Port(crate::PORT_COORDINATOR), h.encode());
                    self.next_heartbeat = now + self.config.heartbeat_interval;
                }
            }
        }
        let timeout = self.config.timeout;
        for s in self.slots.values_mut() {
            if s.prepare.on_tick(now, timeout, out) && s.request.is_none() {
                // Retrying an instance whose request moved on: propose the
                // earlier value again if it is still there, else a no-op.
                s.prepare.set_proposal(crate::envelope::Envelope::noop(&[]).expect("fits").to_value());
            }
            self.epoch_high = self.epoch_high.max(s.prepare.epoch());
        }
    }

    fn next_tick(&self) -> Option<Time> {
        Some(self.slots.values().map(|s| s.prepare.deadline()).fold(self.next_heartbeat, Time::min))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backup() -> BackupCoordinator {
        BackupCoordinator::new(BackupConfig { window: 2, ..BackupConfig::new(2) })
    }

    fn ms(n: u64) -> Time {
        Time(n * 1_000_000)
    }

    /// Section 3.1: the software coordinator takes over when the switch
    /// coordinator stops answering, and announces it to the proposers.
    #[test]
    fn takes_over_after_missed_heartbeats_only() {
        let mut b = backup();
        let mut out = Outbox::new();
        b.on_tick(ms(0), &mut out);
        let hb = out.sends.pop().unwrap();
        assert_eq!(hb.0, Dest::Port(crate::PORT_COORDINATOR));
        b.on_packet(ms(1), &hb.1, &mut out); // the coordinator reflected it
        for t in [10, 20, 30] {
            b.on_tick(ms(t), &mut out);
        }
        assert!(b.active_since().is_none(), "within heartbeat_misses intervals");
        b.on_tick(ms(40), &mut out);
        assert_eq!(b.active_since(), Some(ms(40)));
        let takeovers: Vec<Dest> = out
            .sends
            .iter()
            .filter(|(_, b)| PaxosMsg::decode(b).unwrap().msgtype == MsgType::Takeover)
            .map(|(d, _)| *d)
            .collect();
        // The learners pass it on to proposers the deployment does not name.
        assert_eq!(takeovers, [Dest::Group(crate::GROUP_PROPOSERS), Dest::Group(crate::GROUP_LEARNERS)]);
    }

    /// Section 3.1: after the takeover, learners that ask (TRIM) learn how
    /// far instances were handed out, so a gap at the tail of the log is
    /// found and recovered even when no later vote reaches them.
    #[test]
    fn answers_trims_with_its_window_once_in_charge() {
        let mut b = backup();
        let mut out = Outbox::new();
        let mut trim = PaxosMsg::new(MsgType::Trim);
        trim.inst = 3;
        b.on_packet(ms(0), &trim.encode(), &mut out);
        assert!(out.sends.is_empty(), "not in charge yet");
        let mut vote = PaxosMsg::new(MsgType::Phase2B);
        vote.inst = 9;
        b.on_packet(ms(1), &vote.encode(), &mut out);
        b.take_over(ms(2), &mut out);
        out.sends.clear();
        b.on_packet(ms(3), &trim.encode(), &mut out);
        let (dest, bytes) = &out.sends[0];
        let w = PaxosMsg::decode(bytes).unwrap();
        assert_eq!((*dest, w.msgtype, w.inst), (Dest::Reply, MsgType::Window, 10));
    }

    /// A learner's checkpoint passing an instance in flight means it was
    /// decided (by us or another coordinator): its slot is given up, not
    /// retried (the acceptors may have trimmed it, so phase 1 would never
    /// be answered and each retry would climb the epochs), and new
    /// instances start past the checkpoint.
    #[test]
    fn a_learner_checkpoint_gives_up_the_instances_below_it() {
        let mut b = backup();
        let mut out = Outbox::new();
        b.take_over(ms(0), &mut out);
        for v in [b"a", b"b"] {
            let mut req = PaxosMsg::new(MsgType::Request);
            req.value = Value::new(v).unwrap();
            b.on_packet(ms(1), &req.encode(), &mut out);
        }
        assert_eq!(b.slots.keys().copied().collect::<Vec<_>>(), [0, 1]);
        let mut trim = PaxosMsg::new(MsgType::Trim);
        trim.inst = 1;
        b.on_packet(ms(2), &trim.encode(), &mut out);
        assert_eq!(b.slots.keys().copied().collect::<Vec<_>>(), [1], "instance 0 given up");
        assert_eq!(b.slots_below_checkpoints, 1);
        trim.inst = 40;
        b.on_packet(ms(3), &trim.encode(), &mut out);
        assert!(b.slots.is_empty());
        out.sends.clear();
        let mut req = PaxosMsg::new(MsgType::Request);
        req.value = Value::new(b"c").unwrap();
        b.on_packet(ms(4), &req.encode(), &mut out);
        let a = PaxosMsg::decode(&out.sends[0].1).unwrap();
        assert_eq!((a.msgtype, a.inst), (MsgType::Phase1A, 40), "past the checkpoint");
        // Ticks long after: only instance 40 is retried.
        out.sends.clear();
        b.on_tick(ms(1_000), &mut out);
        let retried: Vec<u32> = out
            .sends
            .iter()
            .map(|(_, p)| PaxosMsg::decode(p).unwrap())
            .filter(|m| m.msgtype == MsgType::Phase1A)
            .map(|m| m.inst)
            .collect();
        assert_eq!(retried, [40]);
    }

    /// With a vote counter in front of the backup (crate::vote_counter),
    /// its DECIDED moves the window on, as a quorum of votes does, and
    /// counts for the instances handed out.
    #[test]
    fn a_decision_from_a_vote_counter_frees_its_slot() {
        let mut b = backup();
        let mut out = Outbox::new();
        let mut d = PaxosMsg::new(MsgType::Decided);
        d.inst = 4;
        d.acptid = crate::vote_counter::COUNTER_ACPTID;
        b.on_packet(ms(0), &d.encode(), &mut out);
        b.take_over(ms(1), &mut out);
        for v in [b"a", b"b", b"c"] {
            let mut req = PaxosMsg::new(MsgType::Request);
            req.value = Value::new(v).unwrap();
            b.on_packet(ms(2), &req.encode(), &mut out);
        }
        assert_eq!((b.instances_started, b.slots.len()), (2, 2), "a window of 2, from instance 5");
        d.inst = 5;
        b.on_packet(ms(3), &d.encode(), &mut out);
        assert_eq!(b.instances_started, 3, "the decision of instance 5 made room for the third request");
    }

    /// A live coordinator suspected wrongly goes on deciding instances after
    /// the takeover: the backup starts its requests past every instance it
    /// has seen decided (the acceptors may have trimmed those, and would
    /// drop its 1A for them for good).
    #[test]
    fn starts_past_what_a_wrongly_suspected_coordinator_went_on_deciding() {
        let mut b = backup();
        let mut out = Outbox::new();
        let mut d = PaxosMsg::new(MsgType::Decided);
        d.inst = 4;
        d.acptid = crate::vote_counter::COUNTER_ACPTID;
        b.on_packet(ms(0), &d.encode(), &mut out);
        b.take_over(ms(1), &mut out);
        // The old coordinator decides instances 5..=40 meanwhile.
        d.inst = 40;
        b.on_packet(ms(2), &d.encode(), &mut out);
        out.sends.clear();
        let mut req = PaxosMsg::new(MsgType::Request);
        req.value = Value::new(b"late").unwrap();
        b.on_packet(ms(3), &req.encode(), &mut out);
        let started: Vec<u32> = b.slots.keys().copied().collect();
        assert_eq!(started, vec![41], "the request goes past the last decided instance");
        let p1a: Vec<u32> = out.sends.iter().map(|(_, m)| PaxosMsg::decode(m).unwrap()).map(|m| m.inst).collect();
        assert!(!p1a.is_empty() && p1a.iter().all(|i| *i == 41), "phase 1 for instance 41 only: {p1a:?}");
    }

    /// Paxos phase 1 at takeover: a value voted under the old coordinator
    /// in the instance the backup uses is proposed again, and the request
    /// moves to the next instance.
    #[test]
    fn repeats_an_earlier_vote_and_moves_the_request_on() {
        let mut b = backup();
        let mut out = Outbox::new();
        let mut vote = PaxosMsg::new(MsgType::Phase2B);
        vote.inst = 6;
        vote.rnd = 1;
        vote.vrnd = 1;
        b.on_packet(ms(0), &vote.encode(), &mut out);
        b.take_over(ms(1), &mut out);
        let mut req = PaxosMsg::new(MsgType::Request);
        req.value = Value::new(b"new").unwrap();
        out.sends.clear();
        b.on_packet(ms(2), &req.encode(), &mut out);
        let a = PaxosMsg::decode(&out.sends[0].1).unwrap();
        assert_eq!((a.msgtype, a.inst, a.rnd), (MsgType::Phase1A, 7, crate::round(1, crate::ISSUER_BACKUP)));
        for acpt in 0..2 {
            let mut p = a;
            p.msgtype = MsgType::Phase1B;
            p.acptid = acpt;
            p.vrnd = 1;
            p.value = Value::new(b"old").unwrap();
            b.on_packet(ms(3), &p.encode(), &mut out);
        }
        let sent: Vec<PaxosMsg> = out.sends.iter().map(|s| PaxosMsg::decode(&s.1).unwrap()).collect();
        let two_a = sent.iter().find(|m| m.msgtype == MsgType::Phase2A).unwrap();
        assert_eq!((two_a.inst, two_a.value.as_slice()), (7, &b"old"[..]));
        let next_1a = sent.iter().rfind(|m| m.msgtype == MsgType::Phase1A).unwrap();
        assert_eq!(next_1a.inst, 8, "the request moved on");
        assert_eq!(b.values_repeated, 1);
    }

    /// A vote for the last instance (only a trusted acceptor could send
    /// one; `crate::trust` refuses it from anyone else) leaves nothing to
    /// hand out: the takeover must not overflow.
    #[test]
    fn a_vote_for_the_last_instance_does_not_overflow_the_takeover() {
        let mut b = BackupCoordinator::new(BackupConfig::new(2));
        let mut out = Outbox::new();
        let mut vote = PaxosMsg::new(MsgType::Phase2B);
        vote.inst = u32::MAX;
        b.on_packet(Time(1), &vote.encode(), &mut out);
        b.take_over(Time(2), &mut out);
        let mut req = PaxosMsg::new(MsgType::Request);
        req.value = crate::envelope::Envelope::new(1, 1, b"v").unwrap().to_value();
        b.on_packet(Time(3), &req.encode(), &mut out);
        assert!(out.sends.iter().all(|s| PaxosMsg::decode(&s.1).unwrap().msgtype != MsgType::Phase1A));
    }

    /// Issue 21: REQUESTs sent before a takeover (proposers send none then)
    /// are not queued, so a flood from any socket neither grows the backup
    /// nor becomes the first values ordered after a failover; once in
    /// charge, at most QUEUE_MAX wait.
    #[test]
    fn requests_before_the_takeover_are_dropped_and_the_queue_is_bounded() {
        let mut b = backup();
        let mut out = Outbox::new();
        let mut junk = PaxosMsg::new(MsgType::Request);
        junk.value = Value::new(b"junk").unwrap();
        for _ in 0..1000 {
            b.on_packet(ms(0), &junk.encode(), &mut out);
        }
        assert_eq!((b.queue.len(), b.requests_before_takeover), (0, 1000));
        b.take_over(ms(1), &mut out);
        let mut req = PaxosMsg::new(MsgType::Request);
        req.value = Value::new(b"real").unwrap();
        out.sends.clear();
        b.on_packet(ms(2), &req.encode(), &mut out);
        let first = PaxosMsg::decode(&out.sends[0].1).unwrap();
        assert_eq!(first.msgtype, MsgType::Phase1A);
        assert_eq!(b.slots[&first.inst].request, Some(req.value), "the first value ordered is the proposer's");
        for _ in 0..QUEUE_MAX + 100 {
            b.on_packet(ms(3), &junk.encode(), &mut out);
        }
        // The window's second slot took one; the queue holds the bound.
        assert_eq!((b.queue.len(), b.requests_dropped_full), (QUEUE_MAX, 99));
    }

    fn takeovers_sent(out: &Outbox) -> Vec<(Dest, u16)> {
        let t = out.sends.iter().map(|(d, b)| (*d, PaxosMsg::decode(b).unwrap()));
        t.filter(|(_, m)| m.msgtype == MsgType::Takeover).map(|(d, m)| (d, m.rnd)).collect()
    }

    fn takeover(rnd: u16) -> Vec<u8> {
        let mut t = PaxosMsg::new(MsgType::Takeover);
        t.rnd = rnd;
        t.encode()
    }

    /// Failback (issue 24 item 3): a restarted coordinator takes the role
    /// at once, and back above the backup's round once it hears it; the
    /// backup steps down, watches again (the coordinator answers its
    /// heartbeats) and, when the coordinator goes silent, takes over in a
    /// round above the coordinator's. Rounds rise every time.
    #[test]
    fn a_restarted_coordinator_takes_the_role_back_and_the_backup_steps_down() {
        let failback = |mode| BackupConfig { mode, failback: true, window: 2, ..BackupConfig::new(2) };
        let mut b = BackupCoordinator::new(failback(Mode::Backup));
        let mut c = BackupCoordinator::new(failback(Mode::Restarted { first_epoch: 1 }));
        let mut out = Outbox::new();
        b.take_over(ms(0), &mut out);
        assert_eq!(b.round(), crate::round(1, crate::ISSUER_BACKUP));
        assert!(takeovers_sent(&out).contains(&(Dest::Port(crate::PORT_COORDINATOR), 0x102)), "failback: told too");
        out.sends.clear();
        c.on_tick(ms(1), &mut out);
        assert_eq!((c.round(), c.takeovers), (crate::round(1, crate::ISSUER_COORDINATOR), 1));
        assert_eq!(
            takeovers_sent(&out),
            [
                (Dest::Group(crate::GROUP_PROPOSERS), 0x101),
                (Dest::Group(crate::GROUP_LEARNERS), 0x101),
                (Dest::Port(crate::PORT_BACKUP), 0x101)
            ]
        );
        // The backup's round is higher: the restarted coordinator's is
        // below it and changes nothing there.
        b.on_packet(ms(2), &takeover(0x101), &mut out);
        assert!(b.active_since().is_some());
        out.sends.clear();
        c.on_packet(ms(2), &takeover(0x102), &mut out);
        assert_eq!(c.round(), crate::round(2, crate::ISSUER_COORDINATOR), "takes it back above the backup's");
        assert_eq!(takeovers_sent(&out).last(), Some(&(Dest::Port(crate::PORT_BACKUP), 0x201)));
        b.on_packet(ms(3), &takeover(0x201), &mut out);
        assert_eq!((b.active_since(), b.step_downs, b.heard()), (None, 1, 0x201), "the backup steps down");
        // Watching again: the restarted coordinator answers its heartbeats.
        out.sends.clear();
        b.on_tick(ms(3), &mut out);
        let (dest, hb) = out.sends.pop().unwrap();
        assert_eq!(dest, Dest::Port(crate::PORT_COORDINATOR));
        c.on_packet(ms(4), &hb, &mut out);
        let (dest, echo) = out.sends.pop().unwrap();
        assert_eq!((dest, &echo), (Dest::Reply, &hb));
        b.on_packet(ms(5), &echo, &mut out);
        for t in [13, 23, 33] {
            b.on_tick(ms(t), &mut out);
        }
        assert!(b.active_since().is_none(), "answered heartbeats keep it watching");
        // The coordinator dies again: the backup takes over above it.
        for t in [43, 53, 63, 73] {
            b.on_tick(ms(t), &mut out);
        }
        assert!(b.active_since().is_some());
        assert_eq!((b.round(), b.takeovers), (crate::round(2, crate::ISSUER_BACKUP), 2));
    }

    /// A restarted coordinator does not know where the log is: it hands out
    /// no instance until a learner's TRIM (or a vote) tells it, then starts
    /// past the checkpoint, in its own issuer's round.
    #[test]
    fn a_restarted_coordinator_waits_for_the_log_position() {
        let cfg = BackupConfig { mode: Mode::Restarted { first_epoch: 4 }, failback: true, ..BackupConfig::new(2) };
        let mut c = BackupCoordinator::new(cfg);
        let mut out = Outbox::new();
        c.on_tick(ms(0), &mut out);
        let mut req = PaxosMsg::new(MsgType::Request);
        req.value = Value::new(b"v").unwrap();
        out.sends.clear();
        c.on_packet(ms(1), &req.encode(), &mut out);
        assert!(out.sends.is_empty(), "no phase 1 before the log position is known");
        let mut trim = PaxosMsg::new(MsgType::Trim);
        trim.inst = 50;
        c.on_packet(ms(2), &trim.encode(), &mut out);
        let a = PaxosMsg::decode(&out.sends[0].1).unwrap();
        assert_eq!((a.msgtype, a.inst, a.rnd), (MsgType::Phase1A, 50, crate::round(4, crate::ISSUER_COORDINATOR)));
        // Phase 1 is retried in its round first; a retry in the next epoch
        // raises the highest epoch used (what the runtime stores before
        // the 1A leaves).
        assert_eq!(c.epoch_high(), 4);
        for k in 1..crate::prepare::TRIES_FIRST_ROUND as u64 {
            c.on_tick(ms(100 * k), &mut out);
        }
        assert_eq!(c.epoch_high(), 4, "the same round's retries");
        c.on_tick(ms(100 * crate::prepare::TRIES_FIRST_ROUND as u64), &mut out);
        assert_eq!(c.epoch_high(), 5);
    }

    /// Epochs are 8 bits: with the backup's round at epoch 255 heard, a
    /// restarted coordinator has no round above it and takes nothing.
    #[test]
    fn no_takeover_without_an_epoch_left() {
        let cfg = BackupConfig { mode: Mode::Restarted { first_epoch: 9 }, failback: true, ..BackupConfig::new(2) };
        let mut c = BackupCoordinator::new(cfg);
        let mut out = Outbox::new();
        c.on_packet(ms(0), &takeover(crate::round(255, crate::ISSUER_BACKUP)), &mut out);
        c.on_tick(ms(1), &mut out);
        assert_eq!((c.takeovers, c.epochs_exhausted), (0, 1));
        assert!(out.sends.is_empty());
    }
}
