//! A replica: a [`Learner`] whose deliveries are applied to LevelDB.

use std::collections::{BTreeSet, VecDeque};
use std::path::Path;

use innet_core::{Host, Outbox, Time};
use innet_paxos::envelope::Envelope;
use innet_paxos::learner::DeliveryKind;
use innet_paxos::{Learner, LearnerConfig};
use leveldb::batch::{Batch, Writebatch};
use leveldb::database::Database;
use leveldb::iterator::Iterable;
use leveldb::kv::KV;
use leveldb::options::{Options, ReadOptions, WriteOptions};

use crate::command::Command;

/// A LevelDB key (raw bytes).
pub struct Key(pub Vec<u8>);

impl db_key::Key for Key {
    fn from_u8(k: &[u8]) -> Key {
        Key(k.to_vec())
    }
    fn as_slice<T, F: Fn(&[u8]) -> T>(&self, f: F) -> T {
        f(&self.0)
    }
}

const DATA: u8 = b'd';
const SEEN: u8 = b's';
const META_NEXT: &[u8] = b"m/next";

fn data_key(k: &[u8]) -> Key {
    let mut v = vec![DATA, b'/'];
    v.extend_from_slice(k);
    Key(v)
}

fn seen_key(p: u32, r: u32) -> Key {
    let mut v = vec![SEEN, b'/'];
    v.extend_from_slice(&p.to_be_bytes());
    v.extend_from_slice(&r.to_be_bytes());
    Key(v)
}

pub type Error = leveldb::error::Error;

/// What an applied command returns to its client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A put or delete was applied.
    Done,
    /// A get read this (`None`: no such key).
    Value(Option<Vec<u8>>),
    /// The payload was not a command (applied as nothing).
    Invalid,
}

/// The answer to one applied command of a client's proposer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub instance: u32,
    pub proposer: u32,
    pub request: u32,
    pub outcome: Outcome,
}

pub struct Replica {
    pub learner: Learner,
    db: Database<Key>,
    /// Commands applied since start (values, not no-ops or duplicates).
    pub applied: u64,
    /// Proposers whose commands are answered ([`Replica::answer_to`]).
    clients: BTreeSet<u32>,
    answers: VecDeque<Answer>,
}

impl Replica {
    /// Opens (or creates) the replica's database in `dir` and resumes after
    /// the last instance it applied.
    pub fn open(dir: &Path, config: LearnerConfig) -> Result<Replica, Error> {
        let mut o = Options::new();
        o.create_if_missing = true;
        let db: Database<Key> = Database::open(dir, o)?;
        let next = db
            .get(ReadOptions::new(), Key(META_NEXT.to_vec()))?
            .map_or(0, |b| u32::from_be_bytes(b.try_into().unwrap_or([0; 4])));
        let mut seen = vec![];
        for (k, _) in db.iter(ReadOptions::new()) {
            if k.0.len() == 10 && k.0[0] == SEEN {
                let p = u32::from_be_bytes(k.0[2..6].try_into().expect("sized"));
                let r = u32::from_be_bytes(k.0[6..10].try_into().expect("sized"));
                seen.push((p, r));
            }
        }
        let learner = Learner::resume(config, next, seen);
        debug_assert_eq!(learner.checkpoint(), next, "the replica resumes after the last instance it applied");
        Ok(Replica { learner, db, applied: 0, clients: BTreeSet::new(), answers: VecDeque::new() })
    }

    /// Keeps an [`Answer`] for every command of `proposer` this replica
    /// applies (a client co-located with it), for [`Replica::take_answers`].
    pub fn answer_to(&mut self, proposer: u32) {
        debug_assert_ne!(proposer, innet_paxos::envelope::NOOP_PROPOSER, "the no-op has no client");
        self.clients.insert(proposer);
    }

    /// Answers since the last call, in the order applied.
    pub fn take_answers(&mut self) -> Vec<Answer> {
        let answers: Vec<Answer> = self.answers.drain(..).collect();
        debug_assert!(
            !self.learner.config().ordered || answers.windows(2).all(|w| w[0].instance <= w[1].instance),
            "commands are applied in instance order"
        );
        answers
    }

    /// Applies what the learner delivered, in one write batch.
    fn apply(&mut self) {
        let ds = self.learner.take_deliveries();
        if ds.is_empty() {
            return;
        }
        let applied_before = self.applied;
        let batch = Writebatch::new();
        let mut b = batch;
        for d in &ds {
            if d.kind != DeliveryKind::Value {
                continue;
            }
            let Some(e) = Envelope::from_value(&d.value) else { continue };
            b.put(seen_key(e.proposer, e.request), &[]);
            let outcome = match Command::decode(e.payload()) {
                Some(Command::Put { key, value }) => {
                    b.put(data_key(&key), &value);
                    Outcome::Done
                }
                Some(Command::Delete { key }) => {
                    b.delete(data_key(&key));
                    Outcome::Done
                }
                Some(Command::Get { key }) => {
                    // Reads see the writes before them in this batch only
                    // through the database: write what is pending first.
                    let pending = std::mem::replace(&mut b, Writebatch::new());
                    self.db.write(WriteOptions::new(), &pending).expect("leveldb write");
                    Outcome::Value(self.db.get(ReadOptions::new(), data_key(&key)).expect("leveldb read"))
                }
                None => Outcome::Invalid,
            };
            if self.clients.contains(&e.proposer) {
                let (proposer, request) = (e.proposer, e.request);
                self.answers.push_back(Answer { instance: d.instance, proposer, request, outcome });
            }
            self.applied += 1;
        }
        b.put(Key(META_NEXT.to_vec()), &self.learner.checkpoint().to_be_bytes());
        self.db.write(WriteOptions::new(), &b).expect("leveldb write");
        debug_assert!(self.applied - applied_before <= ds.len() as u64, "one command per delivery at most");
    }

    /// The contents: every key and value, in key order.
    pub fn contents(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let contents: Vec<(Vec<u8>, Vec<u8>)> = self
            .db
            .iter(ReadOptions::new())
            .filter(|(k, _)| k.0.first() == Some(&DATA))
            .map(|(k, v)| (k.0[2..].to_vec(), v))
            .collect();
        debug_assert!(contents.windows(2).all(|w| w[0].0 < w[1].0), "keys in order, each once");
        contents
    }

    /// A digest of the contents (FNV-1a over keys and values).
    pub fn digest(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for (k, v) in self.contents() {
            for b in (k.len() as u32).to_be_bytes().iter().chain(&k).chain(&(v.len() as u32).to_be_bytes()).chain(&v) {
                h ^= *b as u64;
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        }
        h
    }
}

impl Host for Replica {
    fn on_packet(&mut self, now: Time, packet: &[u8], out: &mut Outbox) {
        self.learner.on_packet(now, packet, out);
        self.apply();
    }
    fn on_tick(&mut self, now: Time, out: &mut Outbox) {
        self.learner.on_tick(now, out);
        self.apply();
    }
    fn next_tick(&self) -> Option<Time> {
        self.learner.next_tick()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use innet_paxos::envelope::Envelope;
    use innet_wire::paxos::{MsgType, PaxosMsg};

    fn vote(inst: u32, acpt: u16, r: u32, c: &Command) -> Vec<u8> {
        let mut m = PaxosMsg::new(MsgType::Phase2B);
        m.inst = inst;
        m.rnd = 1;
        m.vrnd = 1;
        m.acptid = acpt;
        m.value = Envelope::new(1, r, &c.encode().unwrap()).unwrap().to_value();
        m.encode()
    }

    fn feed(r: &mut Replica, inst: u32, req: u32, c: &Command) {
        let mut out = Outbox::new();
        for a in 0..2 {
            r.on_packet(Time(1), &vote(inst, a, req, c), &mut out);
        }
    }

    /// Section 6.3's replicated LevelDB: delivered commands are applied in
    /// order; a reopened replica resumes where it was, with its duplicate
    /// filter intact.
    #[test]
    fn applies_in_order_and_resumes_after_reopen() {
        let dir = std::env::temp_dir().join(format!("innet-kv-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cfg = LearnerConfig::new(0, 2);
        {
            let mut r = Replica::open(&dir, cfg.clone()).unwrap();
            r.answer_to(1);
            feed(&mut r, 0, 1, &Command::Put { key: b"a".to_vec(), value: b"1".to_vec() });
            feed(&mut r, 1, 2, &Command::Put { key: b"b".to_vec(), value: b"2".to_vec() });
            feed(&mut r, 2, 3, &Command::Delete { key: b"a".to_vec() });
            feed(&mut r, 3, 4, &Command::Get { key: b"b".to_vec() });
            assert_eq!(r.contents(), vec![(b"b".to_vec(), b"2".to_vec())]);
            let answers: Vec<(u32, Outcome)> = r.take_answers().into_iter().map(|a| (a.request, a.outcome)).collect();
            assert_eq!(
                answers,
                vec![
                    (1, Outcome::Done),
                    (2, Outcome::Done),
                    (3, Outcome::Done),
                    (4, Outcome::Value(Some(b"2".to_vec())))
                ]
            );
        }
        let mut r = Replica::open(&dir, cfg).unwrap();
        assert_eq!(r.learner.checkpoint(), 4);
        // Request 2 chosen again (a resubmission) is not applied twice.
        feed(&mut r, 4, 2, &Command::Put { key: b"b".to_vec(), value: b"2".to_vec() });
        feed(&mut r, 5, 5, &Command::Put { key: b"c".to_vec(), value: b"3".to_vec() });
        assert_eq!(r.applied, 1);
        assert_eq!(r.contents().len(), 2);
        drop(r);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
