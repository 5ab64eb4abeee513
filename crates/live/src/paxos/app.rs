//! The application API of CAANS (section 3.1, Figure 4) for Rust programs:
//! `submit(value)`, a `deliver(instance, value)` callback and
//! `recover(instance, noop)`, over the live runtime. The C library
//! (`crates/paxos-c`, `include/innet_paxos.h`) is a thin wrapper over
//! [`PaxosApp`].
//!
//! [`PaxosApp::start`] starts a deployment on loopback in the calling process
//! (coordinator and acceptors as software switches or processes, the backup
//! coordinator, the learners) plus the application's proposer; learner 0 is
//! the application's. Network work happens on the runtime's threads; the
//! deliver callback runs on the caller's thread, inside [`PaxosApp::poll`] /
//! [`PaxosApp::poll_timeout`].
//!
//! The building blocks are public for applications that bring their own
//! learner (e.g. a key-value replica): [`spawn_proposer`] starts a proposer
//! of a [`Plan`] fed through a [`Submitter`].

use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::time::Duration;

use innet_core::{Host, Outbox, Time};
use innet_paxos::deploy::PaxosShape;
use innet_paxos::envelope::{Envelope, PAYLOAD_MAX};
use innet_paxos::learner::DeliveryKind;
use innet_paxos::{Learner, Proposer};

use super::{Core, LiveConfig, Plan};
use crate::host::{spawn_host, NodeHandle};
use crate::Stop;

/// How often the application's hosts look for work from the application.
pub const POLL: Duration = Duration::from_millis(1);

/// A proposer that submits what arrives on a channel: `(request, payload)`,
/// request ids chosen by its [`Submitter`].
pub struct ChannelProposer {
    proposer: Proposer,
    submit: Receiver<(u32, Vec<u8>)>,
    next_poll: Time,
}

impl Host for ChannelProposer {
    fn on_packet(&mut self, now: Time, p: &[u8], out: &mut Outbox) {
        self.proposer.on_packet(now, p, out);
        self.proposer.take_committed();
    }
    fn on_tick(&mut self, now: Time, out: &mut Outbox) {
        while let Ok((request, v)) = self.submit.try_recv() {
            self.proposer.set_next_request(request);
            let r = self.proposer.submit(now, &v, out);
            debug_assert_eq!(r, Some(request), "the submitter checked the width");
        }
        self.proposer.on_tick(now, out);
        self.next_poll = now + POLL;
    }
    fn next_tick(&self) -> Option<Time> {
        Some(self.proposer.next_tick().map_or(self.next_poll, |t| t.min(self.next_poll)))
    }
}

/// The application's side of a [`ChannelProposer`]: numbers the requests,
/// so the caller knows each one's `(proposer, request)` (the envelope a
/// learner delivers it in) at once.
pub struct Submitter {
    proposer: u32,
    next_request: AtomicU32,
    tx: Sender<(u32, Vec<u8>)>,
}

impl Submitter {
    /// The proposer id every value submitted here carries.
    pub fn proposer(&self) -> u32 {
        self.proposer
    }

    /// Submits `value` (at most [`PAYLOAD_MAX`] bytes); the proposer
    /// resubmits until a quorum of acceptors voted for it. Returns the
    /// request id.
    pub fn submit(&self, value: &[u8]) -> io::Result<u32> {
        if value.len() > PAYLOAD_MAX {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("value wider than {PAYLOAD_MAX} bytes")));
        }
        let request = self.next_request.fetch_add(1, Ordering::Relaxed);
        self.tx.send((request, value.to_vec())).map_err(|_| io::Error::other("the proposer stopped"))?;
        Ok(request)
    }
}

/// Starts proposer `i` of `plan` (fresh id, [`LiveConfig::fresh_proposer_config`]).
pub fn spawn_proposer(plan: &mut Plan, i: usize, stop: &Stop) -> io::Result<(NodeHandle<()>, Submitter)> {
    let pcfg = plan.config.fresh_proposer_config(i);
    let socket = plan.take_proposer_socket(i);
    let (tx, rx) = channel();
    let node = spawn_host(
        &format!("proposer{i}"),
        socket,
        plan.proposer_options(),
        stop,
        move || ChannelProposer { proposer: Proposer::new(pcfg), submit: rx, next_poll: Time::ZERO },
        |_, _| (),
    )?;
    Ok((node, Submitter { proposer: pcfg.id, next_request: AtomicU32::new(1), tx }))
}

/// `(instance, payload)`; a no-op has the no-op's payload.
type Delivered = (u32, Vec<u8>);

/// The application's learner: delivers to a channel, recovers on request.
struct AppLearner {
    learner: Learner,
    deliveries: Sender<Delivered>,
    recover: Receiver<(u32, Vec<u8>)>,
    next_poll: Time,
}

impl AppLearner {
    fn flush(&mut self) {
        for d in self.learner.take_deliveries() {
            if d.kind == DeliveryKind::Duplicate {
                continue;
            }
            let payload = Envelope::from_value(&d.value).map(|e| e.payload().to_vec()).unwrap_or_default();
            let _ = self.deliveries.send((d.instance, payload));
        }
    }
}

impl Host for AppLearner {
    fn on_packet(&mut self, now: Time, p: &[u8], out: &mut Outbox) {
        self.learner.on_packet(now, p, out);
        self.flush();
    }
    fn on_tick(&mut self, now: Time, out: &mut Outbox) {
        while let Ok((i, noop)) = self.recover.try_recv() {
            self.learner.recover_with_noop(now, i, &noop, out);
        }
        self.learner.on_tick(now, out);
        self.flush();
        self.next_poll = now + POLL;
    }
    fn next_tick(&self) -> Option<Time> {
        Some(self.learner.next_tick().map_or(self.next_poll, |t| t.min(self.next_poll)))
    }
}

/// A running deployment and the application's proposer and learner.
///
/// ```no_run
/// use innet_live::paxos::{app::PaxosApp, LiveConfig};
/// let app = PaxosApp::start(&LiveConfig::default())?;
/// app.submit(b"hello")?;
/// app.poll_timeout(std::time::Duration::from_millis(100), |instance, value| {
///     println!("{instance}: {value:?}"); // empty: a no-op
/// });
/// app.recover(7, b"")?; // what was decided in 7, else the no-op
/// app.stop();
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct PaxosApp {
    stop: Stop,
    _core: Core,
    _learners: Vec<NodeHandle<()>>,
    _proposer: NodeHandle<()>,
    submitter: Submitter,
    recover: Sender<(u32, Vec<u8>)>,
    deliveries: Receiver<Delivered>,
}

impl PaxosApp {
    /// Starts `config`'s deployment on loopback (its learners are bound
    /// here: `external_learners` is refused) with one proposer for the
    /// application (`config.shape.proposers` is ignored). Learner 0 delivers to
    /// the application.
    pub fn start(config: &LiveConfig) -> io::Result<PaxosApp> {
        let invalid = |m: &str| io::Error::new(io::ErrorKind::InvalidInput, m.to_string());
        if config.shape.acceptors == 0 || config.shape.acceptors > innet_paxos::MAX_ACCEPTORS {
            return Err(invalid("acceptors: 1 to MAX_ACCEPTORS"));
        }
        if config.shape.learners == 0 || config.shape.learners > innet_paxos::MAX_LEARNERS {
            return Err(invalid("learners: 1 to MAX_LEARNERS"));
        }
        if config.external_learners {
            return Err(invalid("the application's learner runs here"));
        }
        let cfg = LiveConfig { shape: PaxosShape { proposers: 1, ..config.shape }, ..config.clone() };
        let stop = Stop::new();
        let mut plan = Plan::bind(&cfg)?;
        let core = plan.spawn_core(&stop)?;
        let (dtx, drx) = channel();
        let (rtx, rrx) = channel();
        let mut rrx = Some(rrx);
        let mut learners = vec![];
        for i in 0..cfg.shape.learners {
            let socket = plan.take_learner_socket(i);
            let lcfg = cfg.learner_config(i as u16);
            let opts = plan.learner_options(i);
            let name = format!("learner{i}");
            learners.push(if i == 0 {
                let (d, r) = (dtx.clone(), rrx.take().expect("one application learner"));
                let make = move || AppLearner {
                    learner: Learner::new(lcfg),
                    deliveries: d,
                    recover: r,
                    next_poll: Time::ZERO,
                };
                spawn_host(&name, socket, opts, &stop, make, |_, _| ())?
            } else {
                spawn_host(&name, socket, opts, &stop, move || Learner::new(lcfg), |_, _| ())?
            });
        }
        let (proposer, submitter) = spawn_proposer(&mut plan, 0, &stop)?;
        Ok(PaxosApp {
            stop,
            _core: core,
            _learners: learners,
            _proposer: proposer,
            submitter,
            recover: rtx,
            deliveries: drx,
        })
    }

    /// Every node's name and address: the coordinator, the acceptors, the
    /// backup coordinator, the learners (learner 0 is the application's)
    /// and the application's proposer.
    pub fn addresses(&self) -> Vec<(String, std::net::SocketAddr)> {
        let mut out = vec![("coordinator".to_string(), self._core.coordinator.addr())];
        for (i, a) in self._core.acceptors.iter().enumerate() {
            out.push((format!("acceptor{i}"), a.addr()));
        }
        out.push(("backup".to_string(), self._core.backup.addr()));
        for (i, l) in self._learners.iter().enumerate() {
            out.push((format!("learner{i}"), l.addr()));
        }
        out.push(("proposer0".to_string(), self._proposer.addr()));
        out
    }

    /// `submit(value)`: at most [`PAYLOAD_MAX`] bytes; resubmitted until
    /// chosen, delivered once. Returns the request id.
    pub fn submit(&self, value: &[u8]) -> io::Result<u32> {
        self.submitter.submit(value)
    }

    /// `recover(instance, noop)`: learns what was decided in `instance`
    /// (phase 1 and 2 in the learner's round, proposing `noop` if no value
    /// was voted). The outcome is delivered through the callback unless the
    /// application's learner had delivered `instance` already.
    pub fn recover(&self, instance: u32, noop: &[u8]) -> io::Result<()> {
        if noop.len() > PAYLOAD_MAX {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("no-op wider than {PAYLOAD_MAX} bytes")));
        }
        self.recover.send((instance, noop.to_vec())).map_err(|_| io::Error::other("the learner stopped"))
    }

    /// Calls `deliver(instance, value)` for every delivery that arrived,
    /// without waiting. Returns how many.
    pub fn poll(&self, deliver: impl FnMut(u32, &[u8])) -> usize {
        self.poll_timeout(Duration::ZERO, deliver)
    }

    /// Like [`PaxosApp::poll`], waiting up to `timeout` for the first.
    pub fn poll_timeout(&self, timeout: Duration, mut deliver: impl FnMut(u32, &[u8])) -> usize {
        let mut n = 0;
        let mut next = self.deliveries.recv_timeout(timeout).ok();
        while let Some((instance, value)) = next {
            deliver(instance, &value);
            n += 1;
            next = self.deliveries.try_recv().ok();
        }
        n
    }

    /// Stops the deployment (also on drop).
    pub fn stop(self) {
        self.stop.stop();
    }
}

impl Drop for PaxosApp {
    fn drop(&mut self) {
        self.stop.stop();
    }
}
