//! Round-trip time of an optimistically aborted transaction through three
//! data planes, side by side in one run on the `txn` testbed:
//!
//! * `xdp-bounce`: `xdp_bounce` on the switch's client port (swap addresses,
//!   XDP_TX): the floor of any XDP program on this path;
//! * `xdp-switch`: `xdp_txn_switch` on both switch ports, optimistic-abort
//!   mode;
//! * `software-switch`: `innet switch txn --mode optimistic-abort`, the
//!   user-space software switch of `innet-live`, in the switch namespace;
//! * `udp-echo`: `innet switch echo`, a bare user-space UDP echo (blocking
//!   `recv_from` / `send_to`), on the switch's address in the switch
//!   namespace: the floor of any user-space program on this path.
//!
//! A probe in the client namespace (a thread of this process) first *primes* the switch with
//! one request that writes key 1 (forwarded towards the store, where nothing
//! listens in this benchmark, so the pending write is never confirmed), then
//! sends requests that compare key 1 against another value: each is
//! answered by the switch with OPTIMISTIC_ABORT (Gotthard Algorithm 2 line
//! 13) and the correction, which is the round trip measured. Rounds
//! interleave the four planes so drift hits all alike.

use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use innet_txn::switch::Mode;
use innet_wire::txn::{Op, Status, TxnMsg, Value};

use crate::fabric::Fabric;
use crate::testbed::{self, DataPlaneAt, UpOptions, NS_CLIENT, NS_SWITCH};
pub use crate::testbed_common::BENCH_PIN_SUBDIR as PIN_SUBDIR;
use crate::txn::{Program, Tables, TxnXdp};

/// The key the primed pending write holds.
const KEY: u32 = 1;

/// What the probe sends and how.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ProbeConfig {
    pub to: SocketAddr,
    pub client_id: u32,
    pub requests: usize,
    pub warmup: usize,
    /// Send the priming write first (switches; not the bounce).
    pub prime: bool,
    /// The status every reply must carry (`None`: any, e.g. the bounce).
    pub expect_status: Option<u8>,
    /// Then a rate phase: keep `window` requests in flight for `rate_ms`.
    pub window: usize,
    pub rate_ms: u64,
}

/// What the probe measured.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ProbeResult {
    pub rtts_ns: Vec<u64>,
    pub lost: usize,
    pub wrong_status: usize,
    /// Replies received in the rate phase, and its length.
    pub rate_replies: u64,
    pub rate_seconds: f64,
    /// Requests given up in the rate phase (no reply within 50 ms).
    pub rate_lost: u64,
}

fn request(client_id: u32, req_id: i32, ops: Vec<Op>) -> Vec<u8> {
    TxnMsg::request(client_id, req_id, ops).encode()
}

fn value(s: &str) -> Value {
    Value::from_str_padded(s).expect("short value")
}

/// The client side; [`run`] calls it on a thread inside the client namespace.
pub fn probe(c: &ProbeConfig) -> Result<ProbeResult> {
    let sock = UdpSocket::bind("0.0.0.0:0").context("bind probe socket")?;
    sock.connect(c.to).with_context(|| format!("connect to {}", c.to))?;
    sock.set_read_timeout(Some(Duration::from_millis(200)))?;
    let mut req_id = 1i32;
    if c.prime {
        sock.send(&request(c.client_id, req_id, vec![Op::write(KEY, value("primed"))]))?;
        req_id += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut r = ProbeResult::default();
    let mut buf = [0u8; 2048];
    for i in 0..c.warmup + c.requests {
        let ops = vec![Op::value(KEY, value("stale")), Op::write(KEY, value("next"))];
        let bytes = request(c.client_id, req_id, ops);
        req_id += 1;
        let t0 = Instant::now();
        sock.send(&bytes)?;
        let n = match sock.recv(&mut buf) {
            Ok(n) => n,
            Err(_) => {
                r.lost += 1;
                continue;
            }
        };
        let rtt = t0.elapsed().as_nanos() as u64;
        let status_ok = match c.expect_status {
            None => true,
            Some(s) => TxnMsg::decode(&buf[..n]).is_ok_and(|m| m.status as u8 == s),
        };
        if !status_ok {
            r.wrong_status += 1;
        }
        if i >= c.warmup {
            r.rtts_ns.push(rtt);
        }
    }
    if c.rate_ms > 0 {
        rate_phase(c, &sock, &mut req_id, &mut r)?;
    }
    Ok(r)
}

/// Closed loop with `window` requests outstanding: replies per second. A
/// reply-less 50 ms counts the outstanding requests as lost and refills.
fn rate_phase(c: &ProbeConfig, sock: &UdpSocket, req_id: &mut i32, r: &mut ProbeResult) -> Result<()> {
    sock.set_read_timeout(Some(Duration::from_millis(50)))?;
    let mut buf = [0u8; 2048];
    let (start, length) = (Instant::now(), Duration::from_millis(c.rate_ms));
    let mut in_flight = 0usize;
    while start.elapsed() < length {
        while in_flight < c.window.max(1) {
            let ops = vec![Op::value(KEY, value("stale")), Op::write(KEY, value("next"))];
            sock.send(&request(c.client_id, *req_id, ops))?;
            *req_id += 1;
            in_flight += 1;
        }
        match sock.recv(&mut buf) {
            Ok(n) => {
                in_flight -= 1;
                r.rate_replies += 1;
                if c.expect_status.is_some_and(|s| !TxnMsg::decode(&buf[..n]).is_ok_and(|m| m.status as u8 == s)) {
                    r.wrong_status += 1;
                }
            }
            Err(_) => {
                r.rate_lost += in_flight as u64;
                in_flight = 0;
            }
        }
    }
    r.rate_seconds = start.elapsed().as_secs_f64();
    Ok(())
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BenchConfig {
    pub requests: usize,
    pub warmup: usize,
    pub rounds: usize,
    /// Requests in flight in the rate phase, and its length per round.
    pub window: usize,
    pub rate_ms: u64,
    /// The fabric the XDP planes run on (the software planes run on plain
    /// veths).
    pub fabric: Fabric,
}

/// Summary of one data plane's round trips.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Summary {
    pub name: String,
    pub samples: usize,
    pub lost: usize,
    pub wrong_status: usize,
    pub median_us: f64,
    pub p99_us: f64,
    pub mean_us: f64,
    /// Replies per second with `window` requests in flight (socket client:
    /// a lower bound on the data plane's capacity).
    pub replies_per_s: f64,
    pub rate_lost: u64,
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1e3
}

pub fn summarize(name: &str, parts: &[ProbeResult]) -> Summary {
    let mut all: Vec<u64> = parts.iter().flat_map(|p| p.rtts_ns.iter().copied()).collect();
    all.sort_unstable();
    let mean = all.iter().sum::<u64>() as f64 / all.len().max(1) as f64 / 1e3;
    Summary {
        name: name.into(),
        samples: all.len(),
        lost: parts.iter().map(|p| p.lost).sum(),
        wrong_status: parts.iter().map(|p| p.wrong_status).sum(),
        median_us: percentile(&all, 0.5),
        p99_us: percentile(&all, 0.99),
        mean_us: mean,
        replies_per_s: parts.iter().map(|p| p.rate_replies).sum::<u64>() as f64
            / parts.iter().map(|p| p.rate_seconds).sum::<f64>().max(1e-9),
        rate_lost: parts.iter().map(|p| p.rate_lost).sum(),
    }
}

/// Removes the testbed when dropped, so a failed run leaves nothing behind.
pub struct DownOnDrop;

impl Drop for DownOnDrop {
    fn drop(&mut self) {
        if let Err(e) = testbed::down() {
            eprintln!("bench: testbed down failed: {e:#}");
        }
    }
}

/// Runs the probe on a thread inside the client namespace.
fn run_probe(c: &ProbeConfig) -> Result<ProbeResult> {
    testbed::in_netns(NS_CLIENT, || probe(c)).context("probe in the client namespace")
}

/// One run: testbed up, the three planes in interleaved rounds, testbed down.
pub fn run(cfg: &BenchConfig, innet_exe: &Path) -> Result<Vec<Summary>> {
    let opts = UpOptions {
        topology: "txn".into(),
        data_plane: None,
        mode: Mode::OptimisticAbort,
        start_store: false,
        store_delay_ms: 0.0,
        innet_exe: innet_exe.to_path_buf(),
        fabric: cfg.fabric,
        auth_key: None,
    };
    testbed::up(&opts)?;
    let _down = DownOnDrop;
    let dir = PathBuf::from(testbed::PIN_DIR).join(PIN_SUBDIR);
    let switch = testbed::load_pinned(Mode::OptimisticAbort, &dir)?;
    let probe_cfg = |client_id: u32, prime: bool, expect: Option<u8>| ProbeConfig {
        to: SocketAddr::V4(testbed::service_addr()),
        client_id,
        requests: cfg.requests,
        warmup: cfg.warmup,
        prime,
        expect_status: expect,
        window: cfg.window,
        rate_ms: cfg.rate_ms,
    };
    let abort = Some(Status::OptimisticAbort as u8);
    let (mut bounce, mut xdp, mut software, mut echo) = (vec![], vec![], vec![], vec![]);
    for round in 0..cfg.rounds as u32 {
        let id = 1000 + 10 * round;
        testbed::attach_plane(&switch, Some(Program::Bounce), &cfg.fabric)?;
        bounce.push(run_probe(&probe_cfg(id, false, None))?);

        testbed::attach_plane(&switch, Some(Program::TxnSwitch), &cfg.fabric)?;
        xdp.push(run_probe(&probe_cfg(id + 1, true, abort))?);
        testbed::attach_plane(&switch, None, &cfg.fabric)?;

        let args = [
            "switch",
            "txn",
            "--mode",
            "optimistic-abort",
            "--listen",
            &testbed::service_addr().to_string(),
            "--upstream",
            &testbed::store_addr().to_string(),
        ];
        let pid = testbed::spawn_in(NS_SWITCH, innet_exe, &args, "bench-switch")?;
        let measured = testbed::wait_for_log_line("bench-switch", "switch ", Duration::from_secs(10))
            .and_then(|()| run_probe(&probe_cfg(id + 2, true, abort)));
        testbed::end_process(pid);
        software.push(measured?);

        let echo_args = ["switch", "echo", "--listen", &testbed::service_addr().to_string()];
        let pid = testbed::spawn_in(NS_SWITCH, innet_exe, &echo_args, "bench-echo")?;
        let measured = testbed::wait_for_log_line("bench-echo", "echo ", Duration::from_secs(10))
            .and_then(|()| run_probe(&probe_cfg(id + 3, false, None)));
        testbed::end_process(pid);
        echo.push(measured?);
    }
    Ok(vec![
        summarize("xdp-bounce", &bounce),
        summarize("xdp-switch", &xdp),
        summarize("software-switch", &software),
        summarize("udp-echo", &echo),
    ])
}

/// The transaction experiment (closed-loop clients, Gotthard section 5)
/// through the XDP switch and through the software switch, one after the
/// other on fresh testbeds with identical end hosts.
#[derive(Clone, Debug, Serialize)]
pub struct TxnExperimentConfig {
    #[serde(serialize_with = "mode_name")]
    pub mode: Mode,
    pub clients: u32,
    pub write_ratio: f64,
    pub keys: u32,
    pub duration_s: f64,
    /// One-way client <-> switch delay, emulated by the clients.
    pub client_delay_ms: f64,
    /// One-way switch <-> store delay, emulated by the store.
    pub store_delay_ms: f64,
    pub seed: u64,
    /// The fabric the XDP switch runs on (the software switch runs on
    /// plain veths).
    pub fabric: Fabric,
}

fn mode_name<S: serde::Serializer>(m: &Mode, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(m.name())
}

/// The name `bench xdp-txn`'s records give the switch on `plane`:
/// `xdp-switch` (the BPF program) or `software-switch` (`innet switch txn`
/// in the switch namespace).
pub fn txn_plane_name(plane: DataPlaneAt) -> &'static str {
    debug_assert!(plane != DataPlaneAt::Process, "the testbed's switch runs as xdp or switch");
    if plane == DataPlaneAt::Xdp {
        "xdp-switch"
    } else {
        "software-switch"
    }
}

/// `(data plane, load's result)` for XDP, then the software switch. `load`
/// runs the clients against the service address on a thread inside the
/// client namespace (its threads inherit the namespace).
pub fn run_txn_experiment<R: Send>(
    cfg: &TxnExperimentConfig,
    innet_exe: &Path,
    load: impl Fn(SocketAddr) -> Result<R> + Sync,
) -> Result<Vec<(DataPlaneAt, R)>> {
    let mut out = vec![];
    for plane in [DataPlaneAt::Xdp, DataPlaneAt::Switch] {
        let opts = UpOptions {
            topology: "txn".into(),
            data_plane: Some(plane),
            mode: cfg.mode,
            start_store: true,
            store_delay_ms: cfg.store_delay_ms,
            innet_exe: innet_exe.to_path_buf(),
            fabric: cfg.fabric,
            auth_key: None,
        };
        testbed::up(&opts)?;
        let _down = DownOnDrop;
        testbed::wait_for_log_line("store", "store ", Duration::from_secs(10))?;
        if plane == DataPlaneAt::Switch {
            testbed::wait_for_log_line("switch", "switch ", Duration::from_secs(10))?;
        }
        let r = testbed::in_netns(NS_CLIENT, || load(SocketAddr::V4(testbed::service_addr())))
            .context("load clients in the client namespace")?;
        out.push((plane, r));
    }
    Ok(out)
}

/// The transaction experiment's generator ceiling: `ceiling` runs in the
/// client namespace against the service address while `xdp_bounce`
/// answers every request on the switch's client port (swap addresses,
/// `XDP_TX`): the same veth path the experiment's requests take, answered
/// at its first hop by the cheapest program there is, so neither switch
/// can complete more round trips for the same generator.
pub fn run_txn_ceiling<R: Send>(
    cfg: &TxnExperimentConfig,
    innet_exe: &Path,
    ceiling: impl FnOnce(SocketAddr) -> Result<R> + Send,
) -> Result<R> {
    let opts = UpOptions {
        topology: "txn".into(),
        data_plane: None,
        mode: cfg.mode,
        start_store: false,
        store_delay_ms: 0.0,
        innet_exe: innet_exe.to_path_buf(),
        fabric: cfg.fabric,
        auth_key: None,
    };
    testbed::up(&opts)?;
    let _down = DownOnDrop;
    // Not pinned: the bounce lives as long as this object.
    let switch = TxnXdp::load(Tables::default())?;
    switch.configure(cfg.mode, &testbed::txn_ports()?)?;
    testbed::attach_plane(&switch, Some(Program::Bounce), &cfg.fabric)?;
    let r = testbed::in_netns(NS_CLIENT, || ceiling(SocketAddr::V4(testbed::service_addr())))
        .context("the generator's ceiling in the client namespace");
    testbed::attach_plane(&switch, None, &cfg.fabric)?;
    r
}
