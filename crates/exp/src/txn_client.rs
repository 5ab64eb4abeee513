//! `innet client txn`: one transaction, one raw request, or a closed-loop
//! load against a live switch or store, each with its JSON result (the
//! fields docs/live.md lists). `innet bench xdp-txn` runs the same load in
//! the testbed's client namespace.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use serde_json::json;

use innet_live::txn::{bind, bind_addr_for, fresh_client_id_base, raw_request_on, run_load, run_txn, LoadConfig};
use innet_live::Stop;
use innet_txn::client::Completed;
use innet_txn::workload::Workload;
use innet_txn::{ClientConfig, Txn};
use innet_wire::txn::{Key, Op, OpType, Status, Value};

use crate::txn::percentile_ms;

/// A JSON result and whether it counts as success (exit status 0).
#[derive(Debug)]
pub struct Outcome {
    pub json: serde_json::Value,
    pub ok: bool,
}

/// How one client sends and resends.
#[derive(Clone, Debug)]
pub struct Sending {
    pub to: SocketAddr,
    /// One-way client <-> switch delay this client emulates, ms.
    pub client_delay_ms: f64,
    pub timeout_ms: f64,
    pub max_resends: u32,
    pub retry_limit: u32,
    /// The client id (the first one of a load); `None`: a fresh one.
    pub client_id: Option<u32>,
}

impl Sending {
    pub fn new(to: SocketAddr) -> Sending {
        Sending { to, client_delay_ms: 0.0, timeout_ms: 1000.0, max_resends: 5, retry_limit: 1000, client_id: None }
    }

    fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(self.timeout_ms > 0.0, "--timeout-ms must be > 0");
        anyhow::ensure!(self.retry_limit > 0, "--retry-limit must be at least 1");
        Ok(())
    }
}

fn delay(ms: f64) -> Duration {
    Duration::from_secs_f64(ms / 1e3)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn value_json(v: &Value) -> serde_json::Value {
    let t = v.trimmed();
    if t.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
        json!(String::from_utf8_lossy(t))
    } else {
        json!(format!("0x{}", v.0.iter().map(|b| format!("{b:02x}")).collect::<String>()))
    }
}

fn op_name(k: OpType) -> &'static str {
    match k {
        OpType::Nop => "nop",
        OpType::Read => "read",
        OpType::Write => "write",
        OpType::Value => "value",
        OpType::Updated => "updated",
        OpType::CpuPct => "cpu_pct",
    }
}

fn status_name(s: Status) -> &'static str {
    match s {
        Status::Ok => "OK",
        Status::Abort => "ABORT",
        Status::OptimisticAbort => "OPTIMISTIC_ABORT",
        Status::BadRequest => "BADREQ",
    }
}

fn kv_json(kv: &[(Key, Value)]) -> serde_json::Value {
    kv.iter().map(|(k, v)| json!({"key": k, "value": value_json(v)})).collect()
}

fn completed_json(c: &Completed, cl_id: u32) -> serde_json::Value {
    json!({
        "committed": c.committed(),
        "gave_up": c.gave_up.map(|g| format!("{g:?}")),
        "client_id": cl_id,
        "attempts": c.attempts,
        "aborts_by_switch": c.aborts_by_switch,
        "aborts_by_store": c.aborts_by_store,
        "from_switch": c.from_switch,
        "reads": kv_json(&c.reads),
        "writes": kv_json(&c.writes),
        "latency_ms": ms(c.latency()),
    })
}

/// One transaction (re-run on abort) until it commits or gives up; `None`
/// if `stop` ended it first.
pub fn one(s: &Sending, txn: Txn, stop: &Stop) -> anyhow::Result<Option<Outcome>> {
    s.validate()?;
    let cl_id = s.client_id.unwrap_or_else(|| fresh_client_id_base(1));
    let mut cfg = ClientConfig::new(cl_id);
    cfg.timeout = delay(s.timeout_ms);
    cfg.max_resends = s.max_resends;
    cfg.retry_limit = s.retry_limit;
    let Some(c) = run_txn(s.to, txn, cfg, delay(s.client_delay_ms), stop)? else {
        return Ok(None);
    };
    Ok(Some(Outcome { json: completed_json(&c, cl_id), ok: c.committed() }))
}

/// Sends `ops` as one request (resent with the same request id on
/// timeout) and reports the reply; `Outcome::ok` if its status is OK. No
/// answer at all is an outcome too (`"status": null`), with a note on
/// stderr.
pub fn raw(s: &Sending, ops: Vec<Op>) -> anyhow::Result<Outcome> {
    s.validate()?;
    anyhow::ensure!(
        ops.len() <= innet_wire::txn::MAX_OPS_PER_PACKET,
        "{} ops given; one --op request carries at most {} (use the library client for larger transactions)",
        ops.len(),
        innet_wire::txn::MAX_OPS_PER_PACKET
    );
    let cl_id = s.client_id.unwrap_or_else(|| fresh_client_id_base(1));
    let sock = bind(bind_addr_for(s.to)).with_context(|| format!("sending to {}", s.to))?;
    let reply = raw_request_on(&sock, s.to, cl_id, ops, delay(s.timeout_ms), s.max_resends, delay(s.client_delay_ms))
        .with_context(|| format!("sending to {}", s.to))?;
    let Some(r) = reply else {
        eprintln!(
            "innet: no answer from {} after {} resends (is a switch or store listening there?)",
            s.to, s.max_resends
        );
        return Ok(Outcome { json: json!({"status": null, "client_id": cl_id, "resends": s.max_resends}), ok: false });
    };
    let m = &r.msg;
    let ops: Vec<serde_json::Value> =
        m.ops.iter().map(|o| json!({"op": op_name(o.kind), "key": o.key, "value": value_json(&o.value)})).collect();
    let out = json!({
        "status": status_name(m.status),
        "from_switch": m.flags.from_switch(),
        "from": r.from.to_string(),
        "client_id": cl_id,
        "req_id": m.req_id,
        "ops": ops,
        "resends": r.resends,
        "latency_ms": ms(r.latency),
    });
    Ok(Outcome { json: out, ok: m.status == Status::Ok })
}

/// A closed-loop load run (`innet client txn --load`).
#[derive(Clone, Debug)]
pub struct ClientLoad {
    pub sending: Sending,
    pub clients: u32,
    pub write_ratio: f64,
    pub keys: u32,
    pub zipf: f64,
    pub span: u32,
    pub duration_s: f64,
    pub think_ms: f64,
    pub seed: u64,
}

impl ClientLoad {
    /// The defaults of `innet client txn --load`.
    pub fn new(to: SocketAddr) -> ClientLoad {
        ClientLoad {
            sending: Sending::new(to),
            clients: 8,
            write_ratio: 0.2,
            keys: 1,
            zipf: 0.0,
            span: 1,
            duration_s: 10.0,
            think_ms: 0.0,
            seed: 1,
        }
    }
}

/// Runs the load and summarizes it as one JSON object (the `txn` live
/// record: configuration, committed/s, aborts, latency percentiles,
/// packets); `Outcome::ok` if something committed and nothing gave up.
pub fn load(a: &ClientLoad, stop: &Stop) -> anyhow::Result<Outcome> {
    let s = &a.sending;
    s.validate()?;
    if !(a.duration_s > 0.0 && a.duration_s.is_finite()) {
        anyhow::bail!("--duration-s {} must be a number of seconds > 0", a.duration_s);
    }
    anyhow::ensure!(a.clients > 0, "--clients must be at least 1");
    let workload = Workload {
        write_ratio: a.write_ratio,
        keys: a.keys,
        zipf: a.zipf,
        think_time: delay(a.think_ms),
        span: a.span,
        validated_reads: 0.0,
    };
    workload.validate().map_err(|e| anyhow::anyhow!("{e} (see --write-ratio, --keys, --zipf, --span)"))?;
    let mut cfg = LoadConfig::new(s.to, workload);
    cfg.clients = a.clients;
    cfg.first_client_id = s.client_id.unwrap_or_else(|| fresh_client_id_base(a.clients));
    cfg.seed = a.seed;
    cfg.duration = Duration::from_secs_f64(a.duration_s);
    cfg.client_delay = delay(s.client_delay_ms);
    cfg.timeout = delay(s.timeout_ms);
    cfg.max_resends = s.max_resends;
    cfg.retry_limit = s.retry_limit;
    let r = run_load(&cfg, stop)?;
    let mut lat = r.stats.latencies_ns.clone();
    lat.sort_unstable();
    let st = &r.stats;
    let run_s = r.run.as_secs_f64().max(1e-9);
    let mean = if lat.is_empty() { 0.0 } else { lat.iter().map(|&x| x as f64).sum::<f64>() / lat.len() as f64 / 1e6 };
    let out = json!({
        "experiment": "txn",
        "runtime": "live",
        "target": s.to.to_string(),
        "clients": a.clients,
        "first_client_id": cfg.first_client_id,
        "write_ratio": a.write_ratio,
        "keys": a.keys,
        "zipf": a.zipf,
        "span": a.span,
        "seed": a.seed,
        "think_ms": a.think_ms,
        "client_delay_ms": s.client_delay_ms,
        "timeout_ms": s.timeout_ms,
        "duration_s": a.duration_s,
        "committed": st.committed,
        "committed_per_s": st.committed as f64 / run_s,
        "committed_reads": st.committed_reads,
        "committed_writes": st.committed_writes,
        "aborts_by_switch": st.aborts_by_switch,
        "aborts_by_store": st.aborts_by_store,
        "gave_up": st.gave_up,
        "mean_latency_ms": mean,
        "p50_latency_ms": percentile_ms(&lat, 50.0),
        "p99_latency_ms": percentile_ms(&lat, 99.0),
        "run_seconds": run_s,
        "wall_seconds": r.wall.as_secs_f64(),
        "interrupted": stop.is_stopped(),
        "packets_sent": r.net.sent,
        "packets_received": r.net.received,
    });
    Ok(Outcome { json: out, ok: st.committed > 0 && st.gave_up == 0 })
}

/// Bytes of a one-operation transaction request (what the load clients
/// send; a generator ceiling's request length).
pub fn request_len() -> usize {
    innet_wire::txn::TxnMsg::request(1, 1, vec![innet_wire::txn::Op::read(1)]).encode().len()
}
