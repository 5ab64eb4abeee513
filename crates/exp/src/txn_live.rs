//! Running a transaction experiment point on the live UDP runtime.
//!
//! A store and a switch start in this process on loopback; the switch
//! emulates the switch <-> store link (`d_ss`), each load client its own
//! client <-> switch link (`d_cs`). The point runs in real time for
//! `duration_s`. Link faults (jitter, loss, duplication, reordering) are
//! simulator-only and rejected here.

use std::time::Duration;

use std::net::{SocketAddr, UdpSocket};

use innet_live::txn::{fresh_client_id_base, raw_request_on, run_load, start_local, LoadConfig, LocalConfig, LocalTxn};
use innet_live::Stop;
use innet_wire::txn::{Op, OpType, Status, Value};

use crate::txn::{summarize, TxnPointConfig, TxnPointResult};

/// Checks that `cfg` asks for nothing the live runtime cannot do.
pub fn check_live(cfg: &TxnPointConfig) -> anyhow::Result<innet_txn::Mode> {
    let mode = cfg.validate().map_err(anyhow::Error::msg)?;
    cfg.faults.refuse_live().map_err(anyhow::Error::msg)?;
    Ok(mode)
}

/// Runs one point live: store + switch (mode `cfg.mode`, switch -> store
/// delay `cfg.switch_store_delay()`), `cfg.clients` load clients with
/// client -> switch delay `cfg.client_switch_delay()`, for `cfg.duration_s`.
pub fn run_point_live(cfg: &TxnPointConfig) -> anyhow::Result<TxnPointResult> {
    run_point_live_until(cfg, &Stop::new())
}

/// [`run_point_live`] that ends early when `stop` is set (the result then
/// covers the shorter run).
pub fn run_point_live_until(cfg: &TxnPointConfig, stop: &Stop) -> anyhow::Result<TxnPointResult> {
    let mode = check_live(cfg)?;
    let mut local = LocalConfig::new(mode);
    local.switch.cache_slots = cfg.cache_slots;
    local.switch.store_delay = cfg.switch_store_delay();
    let net = start_local(&local, stop)?;
    store_cpu_pct(&net)?;
    let mut load = LoadConfig::new(net.switch_addr(), cfg.workload());
    load.clients = cfg.clients;
    load.first_client_id = 1;
    load.seed = cfg.seed;
    load.duration = Duration::from_secs_f64(cfg.duration_s);
    load.client_delay = cfg.client_switch_delay();
    load.timeout = cfg.timeout();
    load.retry_limit = cfg.retry_limit;
    let r = run_load(&load, stop);
    let cpu = store_cpu_pct(&net);
    let report = net.shutdown()?;
    let r = r?;
    let run_s = r.run.as_secs_f64().max(1e-9);
    let mut out = summarize(cfg, crate::Runtime::Live, &r.stats, run_s, r.wall.as_secs_f64(), report.switch_counters);
    out.store_cpu_pct = cpu?;
    out.store_packets = Some(report.store.net.received);
    Ok(out)
}

/// Asks the store of `net` for its CPU use since the previous query
/// (CPU_PCT, op 5: percent of one core as a big-endian IEEE-754 single in
/// the value's first four bytes), with a fresh client id, from the
/// harness's own socket (`LocalTxn::operator`: the store takes requests
/// only from its peers); `None` if it did not answer or answered out of
/// range.
pub fn store_cpu_pct(net: &LocalTxn) -> std::io::Result<Option<f64>> {
    store_cpu_pct_from(&net.operator()?, net.store_addr())
}

/// [`store_cpu_pct`] of the store at `store`, asked from `sock` (one the
/// store takes requests from).
pub fn store_cpu_pct_from(sock: &UdpSocket, store: SocketAddr) -> std::io::Result<Option<f64>> {
    let ops = vec![Op::new(OpType::CpuPct, 0, Value::ZERO)];
    let wait = Duration::from_millis(500);
    let reply = raw_request_on(sock, store, fresh_client_id_base(1), ops, wait, 4, Duration::ZERO)?;
    Ok(reply.and_then(|r| {
        let op = r.msg.ops.iter().find(|o| o.kind == OpType::CpuPct)?;
        let pct = f32::from_bits(u32::from_be_bytes(op.value.0[..4].try_into().ok()?)) as f64;
        // Range check: a share of one core, at most all of this machine's.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        (r.msg.status == Status::Ok && pct.is_finite() && (0.0..=100.0 * cores + 1.0).contains(&pct)).then_some(pct)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_live_point() {
        let cfg = TxnPointConfig { duration_s: 0.5, rtt_ms: 20.0, clients: 4, write_ratio: 0.5, ..Default::default() };
        let r = run_point_live(&cfg).unwrap();
        assert_eq!(r.runtime, crate::Runtime::Live);
        assert!(r.committed > 0);
        assert!(r.p50_latency_ms >= 2.0 * 0.2 * 10.0, "p50 {} ms", r.p50_latency_ms);
        assert!(r.switch_counters["requests"] > 0);
    }

    #[test]
    fn faults_are_rejected_with_a_reason() {
        let cfg = TxnPointConfig {
            faults: crate::faults::Faults { loss: 0.1, ..crate::faults::Faults::NONE },
            duration_s: 0.1,
            ..Default::default()
        };
        let e = run_point_live(&cfg).unwrap_err().to_string();
        assert!(e.contains("simulator-only"), "{e}");
    }
}
