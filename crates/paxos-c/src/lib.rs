//! The application API of CAANS (section 3.1, Figure 4) for C programs:
//! `submit(value)`, a `deliver(instance, value)` callback and
//! `recover(instance, noop)`, over the live runtime. See
//! `include/innet_paxos.h` for the contract and `examples/c/` for a program.
//! A thin wrapper over the Rust API, [`innet_live::paxos::app::PaxosApp`].
//!
//! [`innet_paxos_start`] starts a deployment on loopback in the calling
//! process (coordinator and acceptors as software switches or processes,
//! the backup coordinator, the learners) plus this handle's proposer; the
//! first learner is the application's. Network work happens on the
//! runtime's threads; callbacks run on the caller's thread, inside
//! [`innet_paxos_poll`].

use std::ffi::{c_char, c_int, c_void, CStr};
use std::time::Duration;

use innet_core::deploy::DataPlaneAt;
use innet_live::paxos::app::PaxosApp;
use innet_live::paxos::LiveConfig;

pub type DeliverFn = Option<extern "C" fn(ctx: *mut c_void, instance: u32, value: *const u8, len: usize)>;

/// The handle C programs hold (opaque in the header): the Rust API's
/// [`PaxosApp`] and the registered callback.
pub struct InnetPaxos {
    app: PaxosApp,
    deliver: DeliverFn,
    ctx: *mut c_void,
}

/// Starts a deployment on loopback. `data_plane` is "switch" or "process"
/// ("software" is accepted for "process"; NULL: "switch"). Returns NULL on
/// error.
///
/// # Safety
/// `data_plane` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn innet_paxos_start(
    data_plane: *const c_char,
    acceptors: u32,
    learners: u32,
) -> *mut InnetPaxos {
    let data_plane = if data_plane.is_null() {
        DataPlaneAt::Switch
    } else {
        match CStr::from_ptr(data_plane).to_str().ok().and_then(|s| s.parse().ok()) {
            Some(d @ (DataPlaneAt::Switch | DataPlaneAt::Process)) => d,
            _ => return std::ptr::null_mut(),
        }
    };
    let cfg =
        LiveConfig { data_plane, acceptors: acceptors as usize, learners: learners as usize, ..LiveConfig::default() };
    match PaxosApp::start(&cfg) {
        Ok(app) => Box::into_raw(Box::new(InnetPaxos { app, deliver: None, ctx: std::ptr::null_mut() })),
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
    if value.is_null() && len > 0 {
        return -1;
    }
    let v: &[u8] = if len == 0 { &[] } else { std::slice::from_raw_parts(value, len) };
    match h.app.submit(v) {
        Ok(_) => 0,
        Err(_) => -1,
    }
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
    match h.app.recover(instance, &[]) {
        Ok(()) => 0,
        Err(_) => -1,
    }
}

/// Calls the deliver callback for every delivery that arrived, waiting up
/// to `timeout_ms` for the first. Returns how many were delivered.
///
/// # Safety
/// `h` is live.
#[no_mangle]
pub unsafe extern "C" fn innet_paxos_poll(h: *mut InnetPaxos, timeout_ms: u32) -> c_int {
    let Some(h) = h.as_mut() else { return -1 };
    let (deliver, ctx) = (h.deliver, h.ctx);
    let n = h.app.poll_timeout(Duration::from_millis(timeout_ms as u64), |instance, value| {
        if let Some(f) = deliver {
            f(ctx, instance, value.as_ptr(), value.len());
        }
    });
    n.min(c_int::MAX as usize) as c_int
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
    Box::from_raw(h).app.stop();
}
