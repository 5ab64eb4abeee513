//! The proposer library (CAANS section 3, "Proposer"; section 3.1, "Failure
//! handling"): `submit(value)` wraps the value in the envelope (proposer id,
//! request id), sends a REQUEST to the coordinator, and resubmits after a
//! timeout until the proposer, which also learns votes (it is a member of the
//! learners' group), sees a quorum of acceptors vote for it. Resubmission can
//! get one value chosen in two instances; learners drop the second delivery.
//!
//! Packing (off by default, `pack` > 1): submitted values go into an open
//! packed value ([`crate::envelope::PackBuilder`]) that is sent when it
//! holds `pack` values or the next does not fit, or at [`Proposer::flush`]
//! (or the next tick, which is due at once while a pack is open). A
//! packed value is resubmitted whole, and all its client values complete
//! together when it is chosen; each is reported in [`Committed`].
//!
//! Failover and failback: when a coordinator announces a round (TAKEOVER)
//! above the highest it followed, the proposer sends to that coordinator's
//! port from then on (the backup's for the backup's issuer, the
//! coordinator's for the coordinator's: a restarted coordinator taking the
//! role back) and resubmits what is outstanding at once. A late TAKEOVER of
//! a lower round changes nothing.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use innet_core::{Dest, Outbox, Time};
use innet_wire::paxos::{MsgType, PaxosMsg, Value};

use crate::envelope::{Contents, Envelope, PackBuilder, REQUEST_MAX};
use crate::votes::Votes;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProposerConfig {
    /// Non-zero (0 marks the no-op); unique among proposers.
    pub id: u32,
    /// Acceptor votes that make a value chosen.
    pub quorum: usize,
    /// Resubmit after this long without a quorum of votes.
    pub timeout: Duration,
    /// Most client values packed into one instance's value (1: no packing).
    pub pack: usize,
}

impl ProposerConfig {
    pub fn new(id: u32, quorum: usize, timeout: Duration) -> ProposerConfig {
        debug_assert!(id != crate::envelope::NOOP_PROPOSER, "proposer id 0 marks the no-op");
        ProposerConfig { id, quorum, timeout, pack: 1 }
    }
}

/// A submitted value that a quorum of acceptors voted for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Committed {
    pub request: u32,
    pub instance: u32,
    pub submitted_at: Time,
    pub committed_at: Time,
    pub attempts: u32,
}

/// One value sent to the coordinator: a client value, or a packed value
/// holding requests `first ..first + submitted_at.len()`.
#[derive(Clone, Debug)]
struct Pending {
    value: Value,
    /// When each client value in it was submitted.
    submitted_at: Vec<Time>,
    deadline: Time,
    attempts: u32,
}

#[derive(Clone, Debug)]
pub struct Proposer {
    config: ProposerConfig,
    next_request: u32,
    /// Keyed by the first request id of each value sent.
    outstanding: BTreeMap<u32, Pending>,
    /// Client values in `outstanding` and `open`.
    outstanding_values: usize,
    /// The pack being filled, and when its values were submitted.
    open: Option<(PackBuilder, Vec<Time>)>,
    votes: Votes,
    /// The highest round a coordinator announced (the pre-initialised
    /// round 1 of the coordinator until one does).
    leader: u16,
    to_backup: bool,
    committed: VecDeque<Committed>,
    pub resubmissions: u64,
}

impl Proposer {
    pub fn new(config: ProposerConfig) -> Proposer {
        assert!(config.id != crate::envelope::NOOP_PROPOSER, "proposer id 0 marks the no-op");
        Proposer {
            config,
            next_request: 1,
            outstanding: BTreeMap::new(),
            outstanding_values: 0,
            open: None,
            votes: Votes::new(config.quorum),
            leader: crate::ROUND_INIT,
            to_backup: false,
            committed: VecDeque::new(),
            resubmissions: 0,
        }
    }

    /// The proposer's invariants: `outstanding_values` counts every client
    /// value sent and not chosen plus those in the open pack; every value
    /// in flight has a request id below the next one and was sent at least
    /// once.
    fn holds(&self) -> bool {
        let open = self.open.as_ref().map_or(0, |(_, at)| at.len());
        self.outstanding_values == self.outstanding.values().map(|p| p.submitted_at.len()).sum::<usize>() + open
            && self.outstanding.keys().next_back().is_none_or(|&r| r < self.next_request)
            && self.outstanding.values().all(|p| p.attempts >= 1 && !p.submitted_at.is_empty())
    }

    pub fn id(&self) -> u32 {
        debug_assert_ne!(self.config.id, crate::envelope::NOOP_PROPOSER);
        self.config.id
    }

    pub fn config(&self) -> &ProposerConfig {
        debug_assert!(self.holds());
        &self.config
    }

    /// The request id the next submitted value gets.
    pub fn next_request(&self) -> u32 {
        debug_assert!(self.holds());
        self.next_request
    }

    /// Starts request ids at `first` (a restarted process continues after
    /// the ids it used before, so learners do not take new values for
    /// duplicates).
    pub fn set_next_request(&mut self, first: u32) {
        assert!((1..REQUEST_MAX).contains(&first));
        self.next_request = first;
        debug_assert!(self.holds(), "request ids restart above the ones in flight");
    }

    /// Submits `payload` (at most [`crate::envelope::PAYLOAD_MAX`] bytes);
    /// returns the request id, or `None` if the payload is too wide (or the
    /// proposer used up its request ids).
    pub fn submit(&mut self, now: Time, payload: &[u8], out: &mut Outbox) -> Option<u32> {
        let request = self.next_request;
        let envelope = Envelope::new(self.config.id, request, payload)?;
        if request >= REQUEST_MAX {
            return None;
        }
        self.next_request += 1;
        self.outstanding_values += 1;
        if self.config.pack <= 1 {
            self.start(now, envelope.to_value(), vec![now], out);
            debug_assert!(self.holds());
            return Some(request);
        }
        if let Some((b, _)) = &self.open {
            // Requests of a pack are consecutive (set_next_request may jump).
            if !b.fits(payload.len()) || b.first_request() as u64 + b.count() as u64 != request as u64 {
                self.flush(now, out);
            }
        }
        let (b, at) = self.open.get_or_insert_with(|| (PackBuilder::new(self.config.id, request), vec![]));
        assert!(b.push(payload), "an empty pack holds any payload");
        at.push(now);
        if b.count() >= self.config.pack {
            self.flush(now, out);
        }
        debug_assert!(self.holds());
        Some(request)
    }

    /// Sends the open pack, if any (packing only).
    pub fn flush(&mut self, now: Time, out: &mut Outbox) {
        let Some((b, at)) = self.open.take() else { return };
        // A pack of one is sent as the plain value.
        let value = match Contents::of(&b.to_value()) {
            Contents::Packed(es) if es.len() == 1 => es[0].to_value(),
            _ => b.to_value(),
        };
        debug_assert_eq!(Contents::of(&value).requests().map(|r| r.1), Some(b.first_request()));
        self.start(now, value, at, out);
    }

    fn start(&mut self, now: Time, value: Value, submitted_at: Vec<Time>, out: &mut Outbox) {
        let first = Contents::of(&value).requests().expect("the proposer's own value").1;
        let p = Pending { value, submitted_at, deadline: now + self.config.timeout, attempts: 1 };
        self.send(&p, out);
        let fresh = self.outstanding.insert(first, p).is_none();
        debug_assert!(fresh, "request {first} sent as two values");
    }

    fn send(&self, p: &Pending, out: &mut Outbox) {
        let mut m = PaxosMsg::new(MsgType::Request);
        m.value = p.value;
        let port = if self.to_backup { crate::PORT_BACKUP } else { crate::PORT_COORDINATOR };
        out.send(Dest::Port(port), m.encode());
    }

    /// Client values submitted and not yet chosen.
    pub fn outstanding(&self) -> usize {
        debug_assert!(self.holds());
        self.outstanding_values
    }

    /// The highest round a coordinator announced (the one it follows).
    pub fn leader_round(&self) -> u16 {
        self.leader
    }

    /// Whether requests go to the backup coordinator.
    pub fn uses_backup(&self) -> bool {
        debug_assert!(self.holds());
        self.to_backup
    }

    /// Values chosen since the last call.
    pub fn take_committed(&mut self) -> Vec<Committed> {
        let committed: Vec<Committed> = self.committed.drain(..).collect();
        debug_assert!(committed.iter().all(|c| c.submitted_at <= c.committed_at && c.attempts >= 1));
        committed
    }

    pub fn on_packet(&mut self, now: Time, packet: &[u8], out: &mut Outbox) {
        let Ok(m) = PaxosMsg::decode(packet) else { return };
        match m.msgtype {
            // A vote, or a decision (from a vote counter in front of this
            // proposer: crate::vote_counter; or a learner's answer).
            MsgType::Phase2B | MsgType::Decided => {
                let Some((proposer, first, _)) = Contents::of(&m.value).requests() else { return };
                if proposer != self.config.id {
                    return;
                }
                match self.outstanding.get(&first) {
                    Some(p) if p.value == m.value => {}
                    _ => return,
                }
                let decided = m.msgtype == MsgType::Decided;
                if decided || self.votes.record(m.inst, m.acptid, m.vrnd, m.value).is_some() {
                    let p = self.outstanding.remove(&first).expect("checked above");
                    self.votes.forget_where(|v| *v == p.value);
                    self.outstanding_values -= p.submitted_at.len();
                    for (k, at) in p.submitted_at.iter().enumerate() {
                        self.committed.push_back(Committed {
                            request: first + k as u32,
                            instance: m.inst,
                            submitted_at: *at,
                            committed_at: now,
                            attempts: p.attempts,
                        });
                    }
                    debug_assert!(self.holds());
                }
            }
            MsgType::Takeover if m.rnd > self.leader => {
                self.leader = m.rnd;
                self.to_backup = (m.rnd & 0xff) as u8 != crate::ISSUER_COORDINATOR;
                for p in self.outstanding.values_mut() {
                    p.deadline = now + self.config.timeout;
                    p.attempts += 1;
                }
                self.resubmissions += self.outstanding.len() as u64;
                for p in self.outstanding.values() {
                    self.send(p, out);
                }
            }
            _ => {}
        }
    }

    pub fn on_tick(&mut self, now: Time, out: &mut Outbox) {
        self.flush(now, out);
        let timeout = self.config.timeout;
        let due: Vec<u32> = self.outstanding.iter().filter(|(_, p)| p.deadline <= now).map(|(r, _)| *r).collect();
        for r in due {
            let p = self.outstanding.get_mut(&r).expect("listed");
            p.deadline = now + timeout;
            p.attempts += 1;
            self.resubmissions += 1;
            let p = p.clone();
            self.send(&p, out);
        }
        debug_assert!(self.open.is_none() && self.holds(), "a tick sends the open pack");
    }

    pub fn next_tick(&self) -> Option<Time> {
        debug_assert!(self.holds());
        let open = self.open.as_ref().and_then(|(_, at)| at.first().copied());
        self.outstanding.values().map(|p| p.deadline).chain(open).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vote(inst: u32, acpt: u16, e: Envelope) -> Vec<u8> {
        let mut m = PaxosMsg::new(MsgType::Phase2B);
        m.inst = inst;
        m.rnd = 1;
        m.vrnd = 1;
        m.acptid = acpt;
        m.value = e.to_value();
        m.encode()
    }

    fn proposer() -> Proposer {
        Proposer::new(ProposerConfig::new(4, 2, Duration::from_millis(10)))
    }

    /// Section 3.1: a proposer that times out before its value is chosen
    /// resubmits it; a quorum of votes completes the request.
    #[test]
    fn resubmits_until_a_quorum_voted() {
        let mut p = proposer();
        let mut out = Outbox::new();
        let r = p.submit(Time::ZERO, b"x", &mut out).unwrap();
        assert_eq!(out.sends[0].0, Dest::Port(crate::PORT_COORDINATOR));
        p.on_tick(Time(5_000_000), &mut out);
        assert_eq!(out.sends.len(), 1);
        p.on_tick(Time(10_000_000), &mut out);
        assert_eq!(out.sends.len(), 2, "resubmitted");
        assert_eq!(out.sends[0].1, out.sends[1].1, "the same envelope");
        let e = Envelope::new(4, r, b"x").unwrap();
        p.on_packet(Time(11_000_000), &vote(9, 0, e), &mut out);
        assert_eq!(p.outstanding(), 1);
        p.on_packet(Time(12_000_000), &vote(9, 1, e), &mut out);
        assert_eq!(p.outstanding(), 0);
        let c = p.take_committed();
        assert_eq!((c[0].request, c[0].instance, c[0].attempts), (r, 9, 2));
        assert_eq!(p.next_tick(), None);
        // Other proposers' values are ignored.
        p.on_packet(Time(13_000_000), &vote(10, 0, Envelope::new(5, r, b"x").unwrap()), &mut out);
        assert!(p.take_committed().is_empty());
    }

    /// With a vote counter in front of the proposer, its one DECIDED
    /// completes the request (crate::vote_counter).
    #[test]
    fn a_decision_from_a_vote_counter_completes_a_request() {
        let mut p = proposer();
        let mut out = Outbox::new();
        let r = p.submit(Time::ZERO, b"x", &mut out).unwrap();
        let mut d = PaxosMsg::decode(&vote(3, 0, Envelope::new(4, r, b"x").unwrap())).unwrap();
        d.msgtype = MsgType::Decided;
        d.acptid = crate::vote_counter::COUNTER_ACPTID;
        p.on_packet(Time(1), &d.encode(), &mut out);
        assert_eq!(p.outstanding(), 0);
        assert_eq!(p.take_committed()[0].instance, 3);
    }

    #[test]
    fn takeover_redirects_and_resubmits() {
        let mut p = proposer();
        let mut out = Outbox::new();
        p.submit(Time::ZERO, b"x", &mut out);
        let takeover = |rnd| {
            let mut t = PaxosMsg::new(MsgType::Takeover);
            t.rnd = rnd;
            t.encode()
        };
        p.on_packet(Time(1), &takeover(crate::round(1, crate::ISSUER_BACKUP)), &mut out);
        assert!(p.uses_backup());
        assert_eq!(out.sends[1].0, Dest::Port(crate::PORT_BACKUP));
        assert!(p.submit(Time(2), &[0; 25], &mut out).is_none(), "payload too wide");
        // Failback: a restarted coordinator announces a higher round; the
        // proposer goes back to the coordinator's port and resubmits.
        p.on_packet(Time(3), &takeover(crate::round(2, crate::ISSUER_COORDINATOR)), &mut out);
        assert!(!p.uses_backup());
        assert_eq!(out.sends.last().unwrap().0, Dest::Port(crate::PORT_COORDINATOR));
        let sent = out.sends.len();
        // The backup's late announcement of its lower round changes nothing.
        p.on_packet(Time(4), &takeover(crate::round(1, crate::ISSUER_BACKUP)), &mut out);
        p.on_packet(Time(4), &takeover(crate::round(2, crate::ISSUER_COORDINATOR)), &mut out);
        assert_eq!((out.sends.len(), p.uses_backup()), (sent, false));
        // The backup taking over again needs a round above the coordinator's.
        p.on_packet(Time(5), &takeover(crate::round(2, crate::ISSUER_BACKUP)), &mut out);
        assert_eq!((out.sends.last().unwrap().0, p.leader_round()), (Dest::Port(crate::PORT_BACKUP), 0x202));
    }

    /// Packing: values go out `pack` at a time in one value (a partial pack
    /// at `flush` or the next tick); one decision completes each of them.
    #[test]
    fn packs_values_and_completes_each() {
        use crate::envelope::Contents;
        let mut p = Proposer::new(ProposerConfig { pack: 3, ..ProposerConfig::new(4, 2, Duration::from_millis(10)) });
        let mut out = Outbox::new();
        for n in 0..4u8 {
            p.submit(Time(n as u64), &[n], &mut out).unwrap();
        }
        assert_eq!((out.sends.len(), p.outstanding()), (1, 4), "one pack of 3 sent, one value open");
        assert_eq!(p.next_tick(), Some(Time(3)), "the open pack is due at once");
        p.on_tick(Time(3), &mut out);
        assert_eq!(out.sends.len(), 2);
        let values: Vec<_> = out.sends.iter().map(|s| PaxosMsg::decode(&s.1).unwrap().value).collect();
        assert!(matches!(Contents::of(&values[0]), Contents::Packed(ref e) if e.len() == 3));
        assert_eq!(
            Contents::of(&values[1]),
            Contents::Single(Envelope::new(4, 4, &[3]).unwrap()),
            "a pack of one is plain"
        );
        let mut d = PaxosMsg::new(MsgType::Decided);
        d.inst = 8;
        d.value = values[0];
        p.on_packet(Time(5), &d.encode(), &mut out);
        let c = p.take_committed();
        assert_eq!(
            c.iter().map(|c| (c.request, c.instance, c.submitted_at)).collect::<Vec<_>>(),
            vec![(1, 8, Time(0)), (2, 8, Time(1)), (3, 8, Time(2))]
        );
        assert_eq!(p.outstanding(), 1);
        // The resubmission after a timeout is the same packed value.
        out.sends.clear();
        p.on_tick(Time(3) + Duration::from_millis(10), &mut out);
        assert_eq!(PaxosMsg::decode(&out.sends[0].1).unwrap().value, values[1]);
        // A value that does not fit closes the open pack.
        let mut p = Proposer::new(ProposerConfig { pack: 8, ..ProposerConfig::new(4, 2, Duration::from_millis(10)) });
        let mut out = Outbox::new();
        p.submit(Time(0), &[1; 20], &mut out);
        p.submit(Time(0), &[2; 20], &mut out);
        assert_eq!(out.sends.len(), 1);
        assert_eq!(Contents::of(&PaxosMsg::decode(&out.sends[0].1).unwrap().value).requests(), Some((4, 1, 1)));
    }
}
