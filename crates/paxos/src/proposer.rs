//! The proposer library (CAANS section 3, "Proposer"; section 3.1, "Failure
//! handling"): `submit(value)` wraps the value in the envelope (proposer id,
//! request id), sends a REQUEST to the coordinator, and resubmits after a
//! timeout until the proposer, which also learns votes (it is a member of the
//! learners' group), sees a quorum of acceptors vote for it. Resubmission can
//! get one value chosen in two instances; learners drop the second delivery.
//!
//! Failover: when the backup coordinator announces itself (TAKEOVER), the
//! proposer sends to the backup's port from then on and resubmits what is
//! outstanding at once.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use innet_core::{Dest, Outbox, Time};
use innet_wire::paxos::{MsgType, PaxosMsg};

use crate::envelope::Envelope;
use crate::votes::Votes;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProposerConfig {
    /// Non-zero (0 marks the no-op); unique among proposers.
    pub id: u32,
    /// Acceptor votes that make a value chosen.
    pub quorum: usize,
    /// Resubmit after this long without a quorum of votes.
    pub timeout: Duration,
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

#[derive(Clone, Debug)]
struct Pending {
    envelope: Envelope,
    submitted_at: Time,
    deadline: Time,
    attempts: u32,
}

#[derive(Clone, Debug)]
pub struct Proposer {
    config: ProposerConfig,
    next_request: u32,
    outstanding: BTreeMap<u32, Pending>,
    votes: Votes,
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
            votes: Votes::new(config.quorum),
            to_backup: false,
            committed: VecDeque::new(),
            resubmissions: 0,
        }
    }

    pub fn id(&self) -> u32 {
        self.config.id
    }

    /// Starts request ids at `first` (a restarted process continues after
    /// the ids it used before, so learners do not take new values for
    /// duplicates).
    pub fn set_next_request(&mut self, first: u32) {
        assert!(first >= 1);
        self.next_request = first;
    }

    /// Submits `payload` (at most [`crate::envelope::PAYLOAD_MAX`] bytes);
    /// returns the request id, or `None` if the payload is too wide.
    pub fn submit(&mut self, now: Time, payload: &[u8], out: &mut Outbox) -> Option<u32> {
        let request = self.next_request;
        let envelope = Envelope::new(self.config.id, request, payload)?;
        self.next_request += 1;
        let p = Pending { envelope, submitted_at: now, deadline: now + self.config.timeout, attempts: 1 };
        self.send(&p, out);
        self.outstanding.insert(request, p);
        Some(request)
    }

    fn send(&self, p: &Pending, out: &mut Outbox) {
        let mut m = PaxosMsg::new(MsgType::Request);
        m.value = p.envelope.to_value();
        let port = if self.to_backup { crate::PORT_BACKUP } else { crate::PORT_COORDINATOR };
        out.send(Dest::Port(port), m.encode());
    }

    pub fn outstanding(&self) -> usize {
        self.outstanding.len()
    }

    /// Whether requests go to the backup coordinator.
    pub fn uses_backup(&self) -> bool {
        self.to_backup
    }

    /// Values chosen since the last call.
    pub fn take_committed(&mut self) -> Vec<Committed> {
        self.committed.drain(..).collect()
    }

    pub fn on_packet(&mut self, now: Time, packet: &[u8], out: &mut Outbox) {
        let Ok(m) = PaxosMsg::decode(packet) else { return };
        match m.msgtype {
            // A vote, or a decision (from a vote counter in front of this
            // proposer: crate::vote_counter; or a learner's answer).
            MsgType::Phase2B | MsgType::Decided => {
                let Some(e) = Envelope::from_value(&m.value) else { return };
                if e.proposer != self.config.id || !self.outstanding.contains_key(&e.request) {
                    return;
                }
                let decided = m.msgtype == MsgType::Decided;
                if decided || self.votes.record(m.inst, m.acptid, m.vrnd, m.value).is_some() {
                    let p = self.outstanding.remove(&e.request).expect("checked above");
                    let id = self.config.id;
                    self.votes.forget_where(|v| {
                        Envelope::from_value(v).is_some_and(|o| o.proposer == id && o.request == e.request)
                    });
                    self.committed.push_back(Committed {
                        request: e.request,
                        instance: m.inst,
                        submitted_at: p.submitted_at,
                        committed_at: now,
                        attempts: p.attempts,
                    });
                }
            }
            MsgType::Takeover if !self.to_backup => {
                self.to_backup = true;
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
    }

    pub fn next_tick(&self) -> Option<Time> {
        self.outstanding.values().map(|p| p.deadline).min()
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
        Proposer::new(ProposerConfig { id: 4, quorum: 2, timeout: Duration::from_millis(10) })
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
        p.on_packet(Time(1), &PaxosMsg::new(MsgType::Takeover).encode(), &mut out);
        assert!(p.uses_backup());
        assert_eq!(out.sends[1].0, Dest::Port(crate::PORT_BACKUP));
        assert!(p.submit(Time(2), &[0; 25], &mut out).is_none(), "payload too wide");
    }
}
