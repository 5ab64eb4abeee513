//! The case study of CAANS (section 5 and 6.3, Figure 7d): a key-value
//! store (get / put / delete) replicated by consensus. Clients submit
//! commands through a proposer; every replica is a learner that applies the
//! delivered commands, in instance order, to its own LevelDB. Replicas that
//! apply the same sequence hold the same contents ([`Replica::digest`]).
//!
//! A client co-located with a replica ([`KvClient`]) reads each command's
//! result (the value a get read, the completion of a put or delete) from
//! its replica once the replica applied it, matched by the envelope's
//! `(proposer, request)` ([`Replica::answer_to`]).
//!
//! Storage: Debian's `libleveldb-dev` through the `leveldb` crate (linked
//! against the system library, see `.cargo/config.toml`). Each delivered
//! batch is one LevelDB write batch holding the data changes, the
//! `(proposer, request)` pairs applied (the duplicate filter survives a
//! restart) and the next instance to apply, so a replica killed with
//! `kill -9` restarts at a consistent point and catches up from its peers
//! (CATCHUP) or the acceptors (`recover`). Writes are not fsynced: a process
//! crash loses nothing (the OS holds the data), a power loss may.

pub mod client;
pub mod command;
pub mod replica;

pub use client::KvClient;
pub use command::Command;
pub use replica::{Answer, Outcome, Replica};

use innet_paxos::workload::LoadProposer;

/// `p` submitting the key-value load ([`Command::load`]) when `kv`, else
/// unchanged.
pub fn with_kv_load(p: LoadProposer, kv: bool) -> LoadProposer {
    if kv {
        p.with_payload(|n| Command::load(n).encode().expect("load commands fit"))
    } else {
        p
    }
}

/// Runs key-value replica `id` of the deployment `live` (its learners in
/// processes of their own at the addresses `live.base_port` gives) on its
/// LevelDB in `data_dir`, until `stop`. `say` gets `replicaI HOST:PORT`
/// once, then `applied N next I digest H keys K` whenever that changed, at
/// most every `every`. `started` gets the replica's live counters (its
/// learner's, `applied`, the runtime's) once it runs.
pub fn run_replica(
    live: &innet_live::paxos::LiveConfig,
    id: usize,
    data_dir: &std::path::Path,
    every: std::time::Duration,
    stop: &innet_live::Stop,
    mut say: impl FnMut(&str),
    started: impl FnOnce(&innet_live::LiveCounters),
) -> std::io::Result<()> {
    use std::sync::{Arc, Mutex};

    use innet_core::{Counters, Host, Outbox, Time};

    // The replica runs in the node's thread; a status line is published
    // through `shared` after every tick (the host is not Send).
    struct Reporting {
        replica: Replica,
        shared: Arc<Mutex<String>>,
        every: std::time::Duration,
        next: Time,
    }
    impl Host for Reporting {
        fn on_packet(&mut self, now: Time, p: &[u8], out: &mut Outbox) {
            self.replica.on_packet(now, p, out);
        }
        fn on_tick(&mut self, now: Time, out: &mut Outbox) {
            self.replica.on_tick(now, out);
            if now >= self.next {
                let r = &self.replica;
                *self.shared.lock().unwrap_or_else(|e| e.into_inner()) = format!(
                    "applied {} next {} digest {:016x} keys {}",
                    r.applied,
                    r.learner.checkpoint(),
                    r.digest(),
                    r.contents().len()
                );
                self.next = now + self.every;
            }
        }
        fn next_tick(&self) -> Option<Time> {
            Some(self.replica.next_tick().map_or(self.next, |t| t.min(self.next)))
        }
    }

    let (addr, opts) = live.external_learner(id)?;
    let replica = Replica::open(data_dir, live.learner_config(id as u16))
        .map_err(|e| std::io::Error::other(format!("opening {}: {e:?}", data_dir.display())))?;
    let socket = innet_live::txn::bind(addr)?;
    say(&format!("replica{id} {addr}"));
    let status = Arc::new(Mutex::new(String::new()));
    let shared = status.clone();
    let node = innet_live::spawn_host_counted(
        "replica",
        socket,
        opts,
        stop,
        move || Reporting { replica, shared, every, next: Time::ZERO },
        |r| {
            let mut c = r.replica.learner.stats.counters();
            c.push(("applied", r.replica.applied));
            c
        },
        |_, _| (),
    )?;
    started(node.live());
    let mut last = String::new();
    while !stop.is_stopped() && !node.is_finished() {
        std::thread::sleep(every);
        let s = status.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if s != last && !s.is_empty() {
            say(&s);
            last = s;
        }
    }
    node.shutdown()
}
