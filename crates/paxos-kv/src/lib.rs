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
//! Network clients ([`KvNetClient`], `innet kv`) reach replicas in other
//! processes on their client ports ([`service`]): put, get, delete,
//! compare-and-set on values up to 1 MiB (split across instances,
//! [`fragment`]), applied once per request however often it is resent
//! ([`clients`]), gets ordered through consensus like every command.
//!
//! Storage: Debian's `libleveldb-dev` through the `leveldb` crate (linked
//! against the system library, see `.cargo/config.toml`). Each delivered
//! batch is one LevelDB write batch holding the data changes, the
//! `(proposer, request)` pairs applied (the duplicate filter survives a
//! restart) and the next instance to apply, so a replica killed with
//! `kill -9` restarts at a consistent point and catches up from its peers
//! (CATCHUP) or the acceptors (`recover`), or, when a whole ring of
//! instances or more behind (new, or down for long), from a snapshot of
//! another replica's store ([`snapshot`]). When writes reach the disk is a
//! choice ([`replica::Fsync`], `innet kv-replica --fsync`, [`run_replica_synced`]):
//! never synced (a process crash loses nothing, the OS holds the data; a
//! power loss may), synced once per received batch before its answers
//! leave, or each applied write synced.

pub mod client;
pub mod clients;
pub mod command;
pub mod fragment;
/// The network client lives in `innet_live` (it needs no LevelDB, so the
/// Python package and the C library link it without it).
pub mod net_client {
    pub use innet_live::kv_client::*;
}
pub mod replica;
pub mod service;
pub mod snapshot;

pub use client::KvClient;
pub use command::Command;
pub use net_client::KvNetClient;
pub use replica::{Answer, Outcome, Replica};

use std::sync::{Arc, Mutex};

use innet_core::{Counters, Host, Outbox, Time};
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
/// LevelDB in `data_dir`, until `stop`, answering network clients on
/// `client_port` (UDP and TCP; [`service`]) unless `None`. `say` gets
/// `replicaI HOST:PORT` once, `client HOST:PORT` once with a client port,
/// then `applied N next I digest H keys K commands C malformed M snapshots
/// S` whenever that changed, at most every `every`, and `snapshot from
/// PEER instance I ...` when it installed a snapshot
/// ([`snapshot`]: a replica `live.params.slots` instances behind copies one from
/// another replica, served on its learner's port number by TCP). `started` gets the replica's live
/// counters (its learner's, `applied`, the network clients' commands and
/// malformed client messages, the runtime's) once it runs. Writes are not
/// synced (`--fsync none`); [`run_replica_synced`] chooses.
#[allow(clippy::too_many_arguments)]
pub fn run_replica(
    live: &innet_live::paxos::LiveConfig,
    id: usize,
    data_dir: &std::path::Path,
    client_port: Option<std::net::SocketAddr>,
    every: std::time::Duration,
    stop: &innet_live::Stop,
    say: impl FnMut(&str),
    started: impl FnOnce(&innet_live::LiveCounters),
) -> std::io::Result<()> {
    run_replica_synced(live, id, data_dir, client_port, every, replica::Fsync::None, stop, say, started)
}

/// [`run_replica`] with its writes synced as `fsync` says
/// ([`Replica::set_fsync`]): with `batch`, the answers to network clients
/// that a received batch of packets produced are held until the replica
/// synced, once, after the batch (`Host::before_send`); with `always`
/// every applied write batch is synced before its answers exist.
#[allow(clippy::too_many_arguments)]
pub fn run_replica_synced(
    live: &innet_live::paxos::LiveConfig,
    id: usize,
    data_dir: &std::path::Path,
    client_port: Option<std::net::SocketAddr>,
    every: std::time::Duration,
    fsync: replica::Fsync,
    stop: &innet_live::Stop,
    mut say: impl FnMut(&str),
    started: impl FnOnce(&innet_live::LiveCounters),
) -> std::io::Result<()> {
    let (addr, opts) = live.external_learner(id)?;
    let mut replica = open_replica(live, id, data_dir, fsync)?;
    let socket = innet_live::txn::bind(addr)?;
    let snapshots = Snapshots::start(live, id, addr, &replica)?;
    say(&format!("replica{id} {addr}"));
    let (service, front_node) = match client_port {
        None => (None, None),
        Some(client_addr) => {
            let (service, front_node) = start_front_end(live, id, client_addr, &mut replica, stop, &mut say)?;
            (Some(service), Some(front_node))
        }
    };
    let events = Arc::new(Mutex::new(Vec::<String>::new()));
    let status = Arc::new(Mutex::new(String::new()));
    let make = {
        let (shared, events) = (status.clone(), events.clone());
        let (catch_up, served) = (snapshots.catch_up, snapshots.served);
        move || {
            let r = ReplicaHost {
                replica,
                shared,
                every,
                next: Time::ZERO,
                service,
                catch_up,
                served,
                events,
                held: vec![],
                scanned: None,
            };
            r.front_above_earlier_life();
            r
        }
    };
    let node = innet_live::spawn_host_counted("replica", socket, opts, stop, make, ReplicaHost::counters, |_, _| ())?;
    started(node.live());
    relay_lines(every, stop, || node.is_finished(), &events, &status, &mut say);
    if let Some(f) = front_node {
        f.shutdown()?;
    }
    let done = node.shutdown();
    drop(snapshots.stop);
    let _ = snapshots.serving.join();
    done
}

/// The status line's store scan takes at most 1 part in this many of
/// the replica thread's time: the next scan waits `STATUS_COST_SHARE`
/// times as long as the last one took, when that is longer than the
/// status interval (a store of millions of keys).
const STATUS_COST_SHARE: u32 = 20;

/// Opens (making the directory if need be) replica `id`'s LevelDB in
/// `data_dir`, its writes synced as `fsync` says.
fn open_replica(
    live: &innet_live::paxos::LiveConfig,
    id: usize,
    data_dir: &std::path::Path,
    fsync: replica::Fsync,
) -> std::io::Result<Replica> {
    std::fs::create_dir_all(data_dir)
        .map_err(|e| std::io::Error::new(e.kind(), format!("creating {}: {e}", data_dir.display())))?;
    let mut replica = Replica::open(data_dir, live.learner_config(id as u16))
        .map_err(|e| std::io::Error::other(format!("opening {}: {e}", data_dir.display())))?;
    replica.set_fsync(fsync);
    Ok(replica)
}

/// Sets its stop when dropped: the replica's own stop for the snapshot
/// server, set when the replica ends, for whatever reason (the serving
/// thread holds the store open: stopped on every way out).
struct StopOnDrop(innet_live::Stop);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// Catch-up beyond the ring ([`snapshot`]): the server of this replica's
/// snapshots and the client fetching a peer's.
struct Snapshots {
    catch_up: snapshot::CatchUp,
    served: Arc<snapshot::ServeCounters>,
    stop: StopOnDrop,
    serving: std::thread::JoinHandle<()>,
}

impl Snapshots {
    /// Serves `replica`'s snapshots by TCP on its learner's address `addr`
    /// (the port number of its UDP socket), to the deployment's other
    /// replicas only, and fetches from them.
    fn start(
        live: &innet_live::paxos::LiveConfig,
        id: usize,
        addr: std::net::SocketAddr,
        replica: &Replica,
    ) -> std::io::Result<Snapshots> {
        let peers: Vec<std::net::SocketAddr> = (0..live.shape.learners)
            .filter(|&j| j != id)
            .map(|j| live.external_learner(j).map(|(a, _)| a))
            .collect::<std::io::Result<_>>()?;
        let listener = std::net::TcpListener::bind(addr)
            .map_err(|e| std::io::Error::new(e.kind(), format!("cannot bind TCP {addr} for snapshots: {e}")))?;
        let peer_ips = peers.iter().map(|a| a.ip()).collect();
        let stop = StopOnDrop(innet_live::Stop::new());
        let (served, serving) = snapshot::serve(
            listener,
            replica.snapshot_source(),
            peer_ips,
            id as u16,
            live.shape.learners as u16,
            &stop.0,
        )?;
        let catch_up = snapshot::CatchUp::new(id as u16, peers, live.params.slots as u32);
        Ok(Snapshots { catch_up, served, stop, serving })
    }
}

/// The network clients' service and the channel to its front end.
type ClientService = (Arc<service::Service>, service::FrontTx);

/// The network clients' service on `client_addr` ([`service`]) and the
/// node running its front end's proposer; `replica` answers its commands.
fn start_front_end(
    live: &innet_live::paxos::LiveConfig,
    id: usize,
    client_addr: std::net::SocketAddr,
    replica: &mut Replica,
    stop: &innet_live::Stop,
    say: &mut impl FnMut(&str),
) -> std::io::Result<(ClientService, innet_live::NodeHandle<()>)> {
    let pid = replica_proposer_id(id, replica.opened);
    let proposer = innet_paxos::Proposer::new(live.proposer_config(pid));
    replica.serve_clients();
    replica.watch(pid);
    let (service, front, decided) = service::start(client_addr, proposer, stop)?;
    say(&format!("client {}", service.addr()?));
    let psocket = innet_live::txn::bind(std::net::SocketAddr::new(live.ip, 0))?;
    let mut slot = Some(front);
    let front_node = innet_live::spawn_host(
        &format!("front{id}"),
        psocket,
        live.external_proposer()?,
        stop,
        move || slot.take().expect("built once"),
        |_, _| (),
    )?;
    Ok(((service, decided), front_node))
}

/// Until `stop` or `finished`, every `every`: says the `events` queued and
/// the `status` line when it changed.
fn relay_lines(
    every: std::time::Duration,
    stop: &innet_live::Stop,
    finished: impl Fn() -> bool,
    events: &Mutex<Vec<String>>,
    status: &Mutex<String>,
    say: &mut impl FnMut(&str),
) {
    let mut last = String::new();
    while !stop.is_stopped() && !finished() {
        std::thread::sleep(every);
        for line in std::mem::take(&mut *events.lock().unwrap_or_else(|e| e.into_inner())) {
            say(&line);
        }
        let s = status.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if s != last && !s.is_empty() {
            say(&s);
            last = s;
        }
    }
}

/// The replica as the live runtime's host. It runs in the node's thread; a
/// status line is published through `shared` after every tick (the host is
/// not Send).
struct ReplicaHost {
    replica: Replica,
    shared: Arc<Mutex<String>>,
    every: std::time::Duration,
    next: Time,
    service: Option<ClientService>,
    catch_up: snapshot::CatchUp,
    served: Arc<snapshot::ServeCounters>,
    /// Lines to say (snapshots installed or refused).
    events: Arc<Mutex<Vec<String>>>,
    /// Answers held until the replica synced (`--fsync batch`); at
    /// most what one received batch of packets applied.
    held: Vec<replica::NetAnswer>,
    /// The store's digest and key count, and (`applied`, checkpoint)
    /// when they were read: the store changes only with them (a
    /// delivery, or a snapshot installed), so an idle replica's store
    /// is not scanned again.
    scanned: Option<((u64, u32), u64, usize)>,
}

impl ReplicaHost {
    /// Installs a snapshot fetched from a peer, if one came.
    fn catch_up(&mut self, now: Time) {
        let checkpoint = self.replica.learner.checkpoint();
        let Some((peer, s, fetch)) = self.catch_up.poll(now, checkpoint) else { return };
        let t = std::time::Instant::now();
        let line = match self.replica.install(&s) {
            Ok(()) => {
                self.catch_up.installed(&s, fetch, t.elapsed());
                self.front_above_earlier_life();
                format!(
                    "snapshot from {peer} instance {} (was {checkpoint}) bytes {} records {} fetch_ms {:.1} \
                     install_ms {:.1}",
                    s.instance,
                    s.bytes,
                    s.records.len(),
                    fetch.as_secs_f64() * 1e3,
                    t.elapsed().as_secs_f64() * 1e3
                )
            }
            Err(e) => {
                self.catch_up.refused(now);
                format!("snapshot from {peer} refused: {e}")
            }
        };
        self.events.lock().unwrap_or_else(|e| e.into_inner()).push(line);
    }
    /// Tells the front end where an earlier life of this replica's
    /// proposer id stopped, if the store records one (a directory
    /// made anew numbers its opens from 1 again).
    fn front_above_earlier_life(&self) {
        if let (Some((_, front)), Some(pid)) = (&self.service, self.replica.watched()) {
            if let Some(r) = self.replica.last_request_of(pid) {
                let _ = front.send(service::FrontEvent::UsedUpTo(r));
            }
        }
    }
    fn serve(&mut self) {
        if let Some((s, decided)) = &self.service {
            for (instance, value) in self.replica.take_decided() {
                let _ = decided.send(service::FrontEvent::Decided(instance, value));
            }
            let answers = self.replica.take_net_answers();
            if self.replica.fsync() == replica::Fsync::Batch {
                self.held.extend(answers);
            } else {
                s.answer(answers);
            }
        }
    }
    fn malformed(&self) -> u64 {
        self.service.as_ref().map_or(0, |(s, _)| s.counters.malformed_total())
    }
    /// Publishes the status line through `shared`. The digest and key
    /// count read the whole store, on the node's thread: their cost is
    /// held to at most 1/STATUS_COST_SHARE of it, however large the store.
    fn publish_status(&mut self, now: Time) {
        let t = std::time::Instant::now();
        let r = &self.replica;
        let at = (r.applied, r.learner.checkpoint());
        let (digest, keys) = match self.scanned {
            Some((when, digest, keys)) if when == at => (digest, keys),
            _ => r.summary(),
        };
        self.scanned = Some((at, digest, keys));
        *self.shared.lock().unwrap_or_else(|e| e.into_inner()) = format!(
            "applied {} next {} digest {digest:016x} keys {keys} commands {} malformed {} snapshots {}",
            at.0,
            at.1,
            r.net.applied,
            self.malformed(),
            self.catch_up.stats.installed,
        );
        self.next = now + self.every.max(t.elapsed() * STATUS_COST_SHARE);
    }
    /// What the node publishes of its own: the learner's counters, the
    /// store's, the network clients' and the snapshots'.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        let mut c = self.replica.learner.stats.counters();
        c.push(("applied", self.replica.applied));
        c.push(("store_writes", self.replica.store_writes));
        c.push(("store_syncs", self.replica.store_syncs));
        c.push(("commands", self.replica.net.applied));
        c.push(("commands_repeated", self.replica.net.repeated));
        c.push(("pieces_malformed", self.replica.assemblies.malformed));
        c.push(("commands_forged", self.replica.assemblies.forged));
        c.push(("client_malformed", self.malformed()));
        let (s, load) =
            (self.catch_up.stats, |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed));
        c.push(("snapshot_fetches", s.fetches));
        c.push(("snapshots_installed", s.installed));
        c.push(("snapshot_fetches_failed", s.failed));
        c.push(("snapshots_stale", s.stale));
        c.push(("snapshot_bytes_last", s.last_bytes));
        c.push(("snapshot_fetch_us_last", s.last_fetch_us));
        c.push(("snapshot_install_us_last", s.last_install_us));
        c.push(("snapshots_served", load(&self.served.served)));
        c.push(("snapshot_bytes_served", load(&self.served.served_bytes)));
        c.push(("snapshot_refused_untrusted", load(&self.served.refused_untrusted)));
        c.push(("snapshot_refused_malformed", load(&self.served.refused_malformed)));
        c.push(("snapshot_refused_busy", load(&self.served.refused_busy)));
        c.push(("snapshot_sends_failed", load(&self.served.failed)));
        c
    }
}

impl Host for ReplicaHost {
    fn on_packet(&mut self, now: Time, p: &[u8], out: &mut Outbox) {
        use innet_wire::paxos::{MsgType, PaxosMsg};
        if let Ok(m) = PaxosMsg::decode(p) {
            self.catch_up.seen(&m);
            // A coordinator's TAKEOVER (admitted from the backup and
            // the coordinator only) is for the front end's proposer,
            // which the deployment does not name; it follows the
            // highest round announced.
            if let (Some((_, front)), MsgType::Takeover) = (&self.service, m.msgtype) {
                let _ = front.send(service::FrontEvent::Takeover(m.rnd));
                return;
            }
        }
        self.replica.on_packet(now, p, out);
        self.serve();
    }
    fn on_tick(&mut self, now: Time, out: &mut Outbox) {
        self.catch_up(now);
        self.replica.on_tick(now, out);
        self.serve();
        if now >= self.next {
            self.publish_status(now);
        }
    }
    fn next_tick(&self) -> Option<Time> {
        Some(self.replica.next_tick().map_or(self.next, |t| t.min(self.next)))
    }
    /// `--fsync batch`: one sync for what the batch applied, then its
    /// answers.
    fn before_send(&mut self) {
        self.replica.sync();
        if let Some((s, _)) = &self.service {
            if !self.held.is_empty() {
                s.answer(std::mem::take(&mut self.held));
            }
        }
    }
}

/// The proposer id of replica `id`'s front end, opened for the `opened`th
/// time: of the block of senders the deployment does not name
/// (`innet_paxos::envelope::OUTSIDE_BLOCK`), its incarnation the replica id
/// in the low 8 bits and the open count above, so two replicas never share
/// an id and a restarted replica (whose request ids start at 1 again) does
/// not reuse its last one (for 4,095 restarts).
pub fn replica_proposer_id(id: usize, opened: u32) -> u32 {
    use innet_paxos::envelope::{INCARNATIONS, OUTSIDE_BLOCK, PROPOSER_INCARNATION_BITS};
    let incarnation = ((opened % ((INCARNATIONS >> 8) - 1)) + 1) << 8 | (id as u32 & 0xff);
    debug_assert!(incarnation < INCARNATIONS && incarnation != 0);
    (OUTSIDE_BLOCK as u32) << PROPOSER_INCARNATION_BITS | incarnation
}
