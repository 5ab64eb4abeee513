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
use innet_live::paxos::{LiveConfig, PaxosShape};

pub type DeliverFn = Option<extern "C" fn(ctx: *mut c_void, instance: u32, value: *const u8, len: usize)>;

/// The handle C programs hold (opaque in the header): the Rust API's
/// [`PaxosApp`] and the registered callback.
pub struct InnetPaxos {
    app: PaxosApp,
    deliver: DeliverFn,
    ctx: *mut c_void,
}

/// Starts a deployment on loopback. `data_plane` is "switch" or "process"
/// (NULL: "switch"). Returns NULL on error.
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
    let cfg = LiveConfig {
        data_plane,
        shape: PaxosShape { acceptors: acceptors as usize, learners: learners as usize, ..PaxosShape::default() },
        ..LiveConfig::default()
    };
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

// ------------------------------------------------- key-value service client

/// A client of the key-value service (`include/innet_kv.h`): the Rust
/// client [`innet_live::kv_client::KvNetClient`] (client id and sequence
/// numbers, resends to the next replica after the timeout, one
/// application per request).
pub struct InnetKv {
    client: innet_live::kv_client::KvNetClient,
}

/// Connects to the replicas' client ports `replicas` ("HOST:PORT,HOST:PORT,...");
/// `timeout_ms` per replica before the next (0: the default, 500 ms).
/// Returns NULL on a bad list or socket error.
///
/// # Safety
/// `replicas` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn innet_kv_connect(replicas: *const c_char, timeout_ms: u32) -> *mut InnetKv {
    if replicas.is_null() {
        return std::ptr::null_mut();
    }
    let Ok(list) = CStr::from_ptr(replicas).to_str() else { return std::ptr::null_mut() };
    let Ok(addrs) = list.split(',').map(|a| a.trim().parse()).collect::<Result<Vec<std::net::SocketAddr>, _>>() else {
        return std::ptr::null_mut();
    };
    let Ok(mut client) = innet_live::kv_client::KvNetClient::connect(&addrs) else { return std::ptr::null_mut() };
    if timeout_ms > 0 {
        client.timeout = Duration::from_millis(timeout_ms as u64);
    }
    Box::into_raw(Box::new(InnetKv { client }))
}

/// `len` bytes at `p` (NULL allowed when `len` is 0).
unsafe fn bytes<'a>(p: *const u8, len: usize) -> Option<&'a [u8]> {
    match (p.is_null(), len) {
        (_, 0) => Some(&[]),
        (true, _) => None,
        (false, _) => Some(std::slice::from_raw_parts(p, len)),
    }
}

/// Sets a key; 0, or -1 on error (no replica answered, a too long key or value).
///
/// # Safety
/// `h` is live; the pointers point to their lengths' readable bytes.
#[no_mangle]
pub unsafe extern "C" fn innet_kv_put(
    h: *mut InnetKv,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
) -> c_int {
    let (Some(h), Some(k), Some(v)) = (h.as_mut(), bytes(key, key_len), bytes(value, value_len)) else { return -1 };
    if h.client.put(k, v).is_ok() {
        0
    } else {
        -1
    }
}

/// Deletes a key; 0, or -1 on error.
///
/// # Safety
/// `h` is live; `key` points to `key_len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn innet_kv_delete(h: *mut InnetKv, key: *const u8, key_len: usize) -> c_int {
    let (Some(h), Some(k)) = (h.as_mut(), bytes(key, key_len)) else { return -1 };
    if h.client.delete(k).is_ok() {
        0
    } else {
        -1
    }
}

/// Reads a key: 1 and the value's length in `*len` (its first `cap`
/// bytes copied to `buf`: call again with room for `*len` if it was
/// more), 0 if there is no such key, -1 on error.
///
/// # Safety
/// `h` is live; `key` points to `key_len` readable bytes, `buf` to `cap`
/// writable ones (NULL if `cap` is 0), `len` to a `size_t`.
#[no_mangle]
pub unsafe extern "C" fn innet_kv_get(
    h: *mut InnetKv,
    key: *const u8,
    key_len: usize,
    buf: *mut u8,
    cap: usize,
    len: *mut usize,
) -> c_int {
    let (Some(h), Some(k), Some(len)) = (h.as_mut(), bytes(key, key_len), len.as_mut()) else { return -1 };
    if buf.is_null() && cap > 0 {
        return -1;
    }
    match h.client.get(k) {
        Ok(Some(v)) => {
            *len = v.len();
            let n = v.len().min(cap);
            if n > 0 {
                std::ptr::copy_nonoverlapping(v.as_ptr(), buf, n);
            }
            1
        }
        Ok(None) => 0,
        Err(_) => -1,
    }
}

/// Sets a key to `value` if it holds `expected` (`expected` NULL: if it
/// is absent): 1 if it did, 0 if the key held something else, -1 on error.
///
/// # Safety
/// `h` is live; the pointers point to their lengths' readable bytes.
#[no_mangle]
pub unsafe extern "C" fn innet_kv_cas(
    h: *mut InnetKv,
    key: *const u8,
    key_len: usize,
    expected: *const u8,
    expected_len: usize,
    value: *const u8,
    value_len: usize,
) -> c_int {
    let (Some(h), Some(k), Some(v)) = (h.as_mut(), bytes(key, key_len), bytes(value, value_len)) else { return -1 };
    let e = if expected.is_null() { None } else { Some(std::slice::from_raw_parts(expected, expected_len)) };
    match h.client.cas(k, e, v) {
        Ok(true) => 1,
        Ok(false) => 0,
        Err(_) => -1,
    }
}

/// Times a request moved on to another replica (a timeout or BUSY).
///
/// # Safety
/// `h` is live.
#[no_mangle]
pub unsafe extern "C" fn innet_kv_failovers(h: *const InnetKv) -> u64 {
    h.as_ref().map_or(0, |h| h.client.failovers)
}

/// Frees the client.
///
/// # Safety
/// `h` comes from `innet_kv_connect`; it is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn innet_kv_close(h: *mut InnetKv) {
    if !h.is_null() {
        drop(Box::from_raw(h));
    }
}
