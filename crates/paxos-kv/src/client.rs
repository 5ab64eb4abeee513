//! A key-value client as in the paper's setup (section 5): it submits
//! commands through a proposer and reads each command's result from a
//! replica it is co-located with (a learner applying to LevelDB), once that
//! replica applied the command. The result is matched by the envelope's
//! `(proposer, request)`; a command chosen twice (resubmission) is applied
//! and answered once.

use std::io;
use std::path::Path;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::time::{Duration, Instant};

use innet_core::{Host, Outbox, Time};
use innet_live::host::NodeHandle;
use innet_live::paxos::app::{spawn_proposer, Submitter};
use innet_live::paxos::Plan;
use innet_live::{spawn_host, Stop};

use crate::command::Command;
use crate::replica::{Answer, Outcome, Replica};

/// How long a command waits for its replica by default.
pub const TIMEOUT_DEFAULT: Duration = Duration::from_secs(10);

/// The client's replica: hands the answers for the client's proposer over.
struct Serving {
    replica: Replica,
    answers: Sender<Answer>,
}

impl Serving {
    fn forward(&mut self) {
        for a in self.replica.take_answers() {
            let _ = self.answers.send(a);
        }
    }
}

impl Host for Serving {
    fn on_packet(&mut self, now: Time, p: &[u8], out: &mut Outbox) {
        self.replica.on_packet(now, p, out);
        self.forward();
    }
    fn on_tick(&mut self, now: Time, out: &mut Outbox) {
        self.replica.on_tick(now, out);
        self.forward();
    }
    fn next_tick(&self) -> Option<Time> {
        self.replica.next_tick()
    }
}

/// A client with its own replica and proposer in a live deployment.
pub struct KvClient {
    submitter: Submitter,
    answers: Receiver<Answer>,
    replica: NodeHandle<Replica>,
    _proposer: NodeHandle<()>,
    /// How long a command waits for its replica before it fails (TimedOut).
    pub timeout: Duration,
}

impl KvClient {
    /// Starts learner `learner` of `plan` as this client's replica (its
    /// LevelDB in `dir`) and proposer `proposer` of `plan` as its proposer.
    pub fn spawn(plan: &mut Plan, learner: usize, proposer: usize, dir: &Path, stop: &Stop) -> io::Result<KvClient> {
        let lcfg = plan.config.learner_config(learner as u16);
        let mut replica = Replica::open(dir, lcfg).map_err(|e| io::Error::other(format!("{}: {e}", dir.display())))?;
        let (node, submitter) = spawn_proposer(plan, proposer, stop)?;
        replica.answer_to(submitter.proposer());
        let (tx, rx) = channel();
        let socket = plan.take_learner_socket(learner);
        let mut slot = Some(Serving { replica, answers: tx });
        let replica = spawn_host(
            &format!("replica{learner}"),
            socket,
            plan.learner_options(learner),
            stop,
            move || slot.take().expect("built once"),
            |s, _| s.replica,
        )?;
        Ok(KvClient { submitter, answers: rx, replica, _proposer: node, timeout: TIMEOUT_DEFAULT })
    }

    /// Submits `command` and waits until the client's replica applied it.
    pub fn execute(&mut self, command: &Command) -> io::Result<Outcome> {
        let bytes = command
            .encode()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "key and value wider than one command"))?;
        debug_assert!(bytes.len() <= innet_paxos::envelope::PAYLOAD_MAX, "one command fits one value");
        let request = self.submitter.submit(&bytes)?;
        let deadline = Instant::now() + self.timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.answers.recv_timeout(left) {
                // Answers to earlier commands that timed out are dropped.
                Ok(a) if a.request == request => return Ok(a.outcome),
                Ok(_) => {}
                Err(_) => return Err(io::Error::new(io::ErrorKind::TimedOut, "the replica did not apply the command")),
            }
        }
    }

    pub fn put(&mut self, key: &[u8], value: &[u8]) -> io::Result<()> {
        let o = self.execute(&Command::Put { key: key.to_vec(), value: value.to_vec() })?;
        debug_assert_eq!(o, Outcome::Done, "a replica applies a put it decoded");
        Ok(())
    }

    pub fn delete(&mut self, key: &[u8]) -> io::Result<()> {
        let o = self.execute(&Command::Delete { key: key.to_vec() })?;
        debug_assert_eq!(o, Outcome::Done, "a replica applies a delete it decoded");
        Ok(())
    }

    /// The value of `key` in the replicated store, read in its place in the
    /// command order (linearizable: the get is ordered by consensus).
    pub fn get(&mut self, key: &[u8]) -> io::Result<Option<Vec<u8>>> {
        match self.execute(&Command::Get { key: key.to_vec() })? {
            Outcome::Value(v) => Ok(v),
            o => Err(io::Error::other(format!("a get answered {o:?}"))),
        }
    }

    /// Stops the client's replica and proposer; returns the replica.
    pub fn shutdown(self) -> io::Result<Replica> {
        self.replica.shutdown()
    }
}
