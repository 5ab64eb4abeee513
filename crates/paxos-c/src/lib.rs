//! The application API of CAANS (section 3.1, Figure 4) for C programs:
//! `submit(value)`, a `deliver(instance, value)` callback and
//! `recover(instance, noop)`, over the live runtime. See
//! `include/innet_paxos.h` for the contract and `examples/c/` for a program.
//!
//! [`innet_paxos_start`] starts a deployment on loopback in the calling
//! process (coordinator and acceptors as software switches or processes,
//! the backup coordinator, the learners) plus this handle's proposer; the
//! first learner is the application's. Network work happens on the
//! runtime's threads; callbacks run on the caller's thread, inside
//! [`innet_paxos_poll`].

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::time::Duration;

use innet_core::{Host, Outbox, Time};
use innet_live::host::NodeHandle;
use innet_live::paxos::{Core, LiveConfig, Plan};
use innet_live::{spawn_host, Stop};
use innet_paxos::envelope::Envelope;
use innet_paxos::learner::DeliveryKind;
use innet_paxos::{Learner, Proposer};

/// How often the library's hosts look for work from the application.
const POLL: Duration = Duration::from_millis(1);

/// `(instance, payload)`; a no-op has the no-op's payload.
type Delivered = (u32, Vec<u8>);

pub type DeliverFn = Option<extern "C" fn(ctx: *mut c_void, instance: u32, value: *const u8, len: usize)>;

/// The learner of the application: delivers to a channel, recovers on request.
struct AppLearner {
    learner: Learner,
    deliveries: Sender<Delivered>,
    recover: Receiver<u32>,
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
        while let Ok(i) = self.recover.try_recv() {
            self.learner.recover(now, i, out);
        }
        self.learner.on_tick(now, out);
        self.flush();
        self.next_poll = now + POLL;
    }
    fn next_tick(&self) -> Option<Time> {
        Some(self.learner.next_tick().map_or(self.next_poll, |t| t.min(self.next_poll)))
    }
}

/// The proposer of the application: submits what arrives on a channel.
struct AppProposer {
    proposer: Proposer,
    submit: Receiver<Vec<u8>>,
    next_poll: Time,
}

impl Host for AppProposer {
    fn on_packet(&mut self, now: Time, p: &[u8], out: &mut Outbox) {
        self.proposer.on_packet(now, p, out);
        self.proposer.take_committed();
    }
    fn on_tick(&mut self, now: Time, out: &mut Outbox) {
        while let Ok(v) = self.submit.try_recv() {
            self.proposer.submit(now, &v, out);
        }
        self.proposer.on_tick(now, out);
        self.next_poll = now + POLL;
    }
    fn next_tick(&self) -> Option<Time> {
        Some(self.proposer.next_tick().map_or(self.next_poll, |t| t.min(self.next_poll)))
    }
}

/// The handle C programs hold (opaque in the header).
pub struct InnetPaxos {
    stop: Stop,
    _core: Core,
    _learners: Vec<NodeHandle<()>>,
    _proposer: NodeHandle<()>,
    submit: Sender<Vec<u8>>,
    recover: Sender<u32>,
    deliveries: Receiver<Delivered>,
    deliver: DeliverFn,
    ctx: *mut c_void,
}

fn start(software: bool, acceptors: usize, learners: usize) -> std::io::Result<InnetPaxos> {
    let cfg = LiveConfig { software, acceptors, learners, proposers: 1, ..LiveConfig::default() };
    let stop = Stop::new();
    let mut plan = Plan::bind(&cfg)?;
    let core = plan.spawn_core(&stop)?;
    let (dtx, drx) = channel();
    let (rtx, rrx) = channel();
    let mut rrx = Some(rrx);
    let mut hosts = vec![];
    for i in 0..learners {
        let socket = plan.take_learner_socket(i);
        let lcfg = cfg.learner_config(i as u16);
        let opts = plan.learner_options(i);
        let h = if i == 0 {
            let (d, r) = (dtx.clone(), rrx.take().expect("one application learner"));
            spawn_host(
                "learner0",
                socket,
                opts,
                &stop,
                move || AppLearner { learner: Learner::new(lcfg), deliveries: d, recover: r, next_poll: Time::ZERO },
                |_, _| (),
            )?
        } else {
            spawn_host(&format!("learner{i}"), socket, opts, &stop, move || Learner::new(lcfg), |_, _| ())?
        };
        hosts.push(h);
    }
    let (stx, srx) = channel();
    let pcfg = cfg.fresh_proposer_config(0);
    let socket = plan.take_proposer_socket(0);
    let proposer = spawn_host(
        "proposer0",
        socket,
        plan.proposer_options(),
        &stop,
        move || AppProposer { proposer: Proposer::new(pcfg), submit: srx, next_poll: Time::ZERO },
        |_, _| (),
    )?;
    Ok(InnetPaxos {
        stop,
        _core: core,
        _learners: hosts,
        _proposer: proposer,
        submit: stx,
        recover: rtx,
        deliveries: drx,
        deliver: None,
        ctx: std::ptr::null_mut(),
    })
}

/// Starts a deployment on loopback. `dataplane` is "switch" or "software"
/// (NULL: "switch"). Returns NULL on error.
///
/// # Safety
/// `dataplane` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn innet_paxos_start(dataplane: *const c_char, acceptors: u32, learners: u32) -> *mut InnetPaxos {
    let software = if dataplane.is_null() {
        false
    } else {
        match CStr::from_ptr(dataplane).to_str() {
            Ok("switch") => false,
            Ok("software") => true,
            _ => return std::ptr::null_mut(),
        }
    };
    if acceptors == 0
        || acceptors as usize > innet_paxos::MAX_ACCEPTORS
        || learners == 0
        || learners as usize > innet_paxos::MAX_LEARNERS
    {
        return std::ptr::null_mut();
    }
    match start(software, acceptors as usize, learners as usize) {
        Ok(h) => Box::into_raw(Box::new(h)),
        Err(_) => std::ptr::null_mut(),
    }
}

/// Registers the deliver callback (called from `innet_paxos_poll`).
///
/// # Safety
/// `h` comes from `innet_paxos_start` and was not stopped.
#[no_mangle]
pub unsafe extern "C" fn innet_paxos_set_deliver(h: *mut InnetPaxos, deliver: DeliverFn, ctx: *mut c_void) -> c_int {
    let Some(h) = h.as_mut() else { return -1 };
    h.deliver = deliver;
    h.ctx = ctx;
    0
}

/// Submits `len` bytes (at most `INNET_PAXOS_VALUE_MAX`); 0 on success.
///
/// # Safety
/// `h` is live; `value` points to `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn innet_paxos_submit(h: *mut InnetPaxos, value: *const u8, len: usize) -> c_int {
    let Some(h) = h.as_mut() else { return -1 };
    if len > innet_paxos::envelope::PAYLOAD_MAX || (value.is_null() && len > 0) {
        return -1;
    }
    let v = if len == 0 { vec![] } else { std::slice::from_raw_parts(value, len).to_vec() };
    if h.submit.send(v).is_err() {
        return -1;
    }
    0
}

/// Learns what was decided in `instance` (phase 1 and 2 with a no-op); the
/// outcome arrives through the deliver callback if the application's
/// learner had not delivered it yet. 0 on success.
///
/// # Safety
/// `h` is live.
#[no_mangle]
pub unsafe extern "C" fn innet_paxos_recover(h: *mut InnetPaxos, instance: u32) -> c_int {
    let Some(h) = h.as_mut() else { return -1 };
    if h.recover.send(instance).is_err() {
        return -1;
    }
    0
}

/// Calls the deliver callback for every delivery that arrived, waiting up
/// to `timeout_ms` for the first. Returns how many were delivered.
///
/// # Safety
/// `h` is live.
#[no_mangle]
pub unsafe extern "C" fn innet_paxos_poll(h: *mut InnetPaxos, timeout_ms: u32) -> c_int {
    let Some(h) = h.as_mut() else { return -1 };
    let mut n = 0;
    let first = h.deliveries.recv_timeout(Duration::from_millis(timeout_ms as u64));
    let mut next = first.ok();
    while let Some((inst, payload)) = next {
        if let Some(f) = h.deliver {
            f(h.ctx, inst, payload.as_ptr(), payload.len());
        }
        n += 1;
        next = h.deliveries.try_recv().ok();
    }
    n
}

/// Stops the deployment and frees the handle.
///
/// # Safety
/// `h` comes from `innet_paxos_start`; it is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn innet_paxos_stop(h: *mut InnetPaxos) {
    if h.is_null() {
        return;
    }
    let h = Box::from_raw(h);
    h.stop.stop();
    drop(h);
}
