//! The Python package `innet` (module `innet._innet`): thin PyO3 bindings
//! over innet's Rust crates. No protocol runs in Python: every packet is
//! built, sent, resent and decoded by the same library code the `innet`
//! binary uses.
//!
//! * [`Client`] / [`Transaction`]: the transaction client
//!   ([`innet_txn::TxnClient`] run by [`innet_live::txn::run_txn_with`]).
//! * [`Paxos`]: the CAANS application API ([`innet_live::paxos::app::PaxosApp`]).
//! * [`ChainClient`]: chain get / put ([`innet_live::chain::run_one`]).
//! * [`up_txn`], [`up_chain`], [`up_paxos`]: deployments on loopback in this
//!   process (threads, not child processes), from defaults or a topology
//!   file ([`innet_live::topology`] through [`innet_live::up`]).
//!
//! Network waits release the GIL, so Python threads run meanwhile.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyInt, PyString};

use innet_chain::Protocol;
use innet_core::deploy::DataPlaneAt;
use innet_live::chain::{LiveChain, LiveChainConfig};
use innet_live::paxos::app::PaxosApp;
use innet_live::paxos::{LiveConfig, PaxosShape};
use innet_live::topology::{resolve, RunningNode, Topology};
use innet_live::txn::{
    bind, bind_addr_for, fresh_client_id_base, run_txn_with, start_local, wall_clock_req_id, LocalConfig, LocalTxn,
};
use innet_live::up::{start_servers, Up, UpLoad};
use innet_live::Stop;
use innet_topology::Service;
use innet_txn::client::{Attempt, AttemptResult, Completed, GiveUp};
use innet_txn::switch::Mode;
use innet_txn::{ClientConfig, Txn, TxnClient};
use innet_wire::txn::{Key, Status, Value, VALUE_LEN};

// ---------------------------------------------------------------- errors

/// An exception of `innet.errors` (defined in Python so that
/// `innet.TimeoutError` can also be a builtin `TimeoutError` and
/// `innet.ConfigError` a `ValueError`).
fn error(kind: &str, msg: impl Into<String>) -> PyErr {
    let msg = msg.into();
    Python::attach(|py| {
        let made = py.import("innet.errors").and_then(|m| m.getattr(kind)).and_then(|cls| cls.call1((msg.clone(),)));
        match made {
            Ok(e) => PyErr::from_value(e),
            Err(e) => e,
        }
    })
}

fn innet_error(msg: impl Into<String>) -> PyErr {
    error("InnetError", msg)
}
fn config_error(msg: impl Into<String>) -> PyErr {
    error("ConfigError", msg)
}
fn timeout_error(msg: impl Into<String>) -> PyErr {
    error("TimeoutError", msg)
}

/// An I/O error as `ConfigError` (bad input) or `InnetError`.
fn io_error(e: std::io::Error) -> PyErr {
    match e.kind() {
        std::io::ErrorKind::InvalidInput => config_error(e.to_string()),
        _ => innet_error(e.to_string()),
    }
}

/// Runs the body of a function Python calls, so that no Rust panic
/// crosses into Python: PyO3 would raise `pyo3_runtime.PanicException`,
/// a `BaseException` that `except Exception` (and `except
/// innet.InnetError`) does not catch. A panic here is a bug in innet (bad
/// input is refused with `ConfigError` before it reaches one); it becomes
/// `innet.InnetError` saying so. Every `#[pymethods]` and `#[pyfunction]`
/// that does more than read a field runs its body through this.
fn guard<T>(body: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)) {
        Ok(r) => r,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            Err(innet_error(format!("internal error in innet (please report it): {what}")))
        }
    }
}

fn anyhow_error(e: anyhow::Error) -> PyErr {
    innet_error(format!("{e:#}"))
}

fn address(s: &str) -> PyResult<SocketAddr> {
    resolve(s).map_err(|e| config_error(format!("{e:#}")))
}

fn duration_ms(name: &str, ms: f64) -> PyResult<Duration> {
    if !(ms.is_finite() && ms >= 0.0) {
        return Err(config_error(format!("{name} must be a number of milliseconds >= 0, got {ms}")));
    }
    Ok(Duration::from_secs_f64(ms / 1e3))
}

// ---------------------------------------------------------------- values

/// A transaction or chain value from `bytes` (at most 16), `str` (UTF-8,
/// at most 16 bytes) or a non-negative `int` (a counter: ASCII decimal).
fn value_arg(v: &Bound<'_, PyAny>) -> PyResult<Value> {
    let bytes: Vec<u8> = if let Ok(b) = v.cast::<PyBytes>() {
        b.as_bytes().to_vec()
    } else if let Ok(s) = v.cast::<PyString>() {
        s.to_cow()?.as_bytes().to_vec()
    } else if v.is_instance_of::<PyInt>() {
        let n: u64 = v.extract().map_err(|_| config_error("a counter value must be an int >= 0"))?;
        if n >= 10_u64.pow(VALUE_LEN as u32) {
            return Err(config_error(format!("counter {n} does not fit {VALUE_LEN} decimal digits")));
        }
        return Ok(Value::from_counter(n));
    } else {
        return Err(config_error(format!("a value is bytes, str or int, not {}", v.get_type().name()?)));
    };
    if bytes.len() > VALUE_LEN {
        return Err(config_error(format!("value of {} bytes: at most {VALUE_LEN}", bytes.len())));
    }
    let mut out = [0u8; VALUE_LEN];
    out[..bytes.len()].copy_from_slice(&bytes);
    Ok(Value(out))
}

/// A value as Python `bytes`, trailing NUL padding removed.
fn value_bytes<'py>(py: Python<'py>, v: &Value) -> Bound<'py, PyBytes> {
    PyBytes::new(py, v.trimmed())
}

fn kv_dict<'py>(py: Python<'py>, kv: &[(Key, Value)]) -> PyResult<Py<PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in kv {
        d.set_item(k, value_bytes(py, v))?;
    }
    Ok(d.unbind())
}

/// `counter(value)`: the integer a counter value holds (`b""` is 0).
#[pyfunction]
fn counter(value: &Bound<'_, PyAny>) -> PyResult<u64> {
    guard(|| value_arg(value)?.as_counter().ok_or_else(|| config_error("not a counter value (ASCII decimal digits)")))
}

// ---------------------------------------------------------- transactions

/// The outcome of one commit (or of an increment, after its re-runs).
#[pyclass(module = "innet._innet", frozen, get_all)]
struct TxnResult {
    /// "committed", "aborted" or "optimistic_abort".
    status: String,
    committed: bool,
    /// Whether the switch answered (else the store, or this client).
    from_switch: bool,
    /// The VALUE ops of the reply: a read's values, or an abort's
    /// corrected values (the switch's pending writes for an optimistic
    /// abort).
    values: Py<PyDict>,
    /// What the transaction read (its compares) and wrote.
    reads: Py<PyDict>,
    writes: Py<PyDict>,
    /// Requests sent (an increment counts its re-runs).
    attempts: u32,
    latency_ms: f64,
    client_id: u32,
}

#[pymethods]
impl TxnResult {
    /// Whether this was an optimistic abort (aborted against a write still
    /// in flight, with that write's value as the correction).
    #[getter]
    fn optimistic(&self) -> bool {
        self.status == "optimistic_abort"
    }
    fn __bool__(&self) -> bool {
        self.committed
    }
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        guard(|| {
            Ok(format!(
                "TxnResult(status={:?}, from_switch={}, values={}, reads={}, writes={}, attempts={}, latency_ms={:.3})",
                self.status,
                if self.from_switch { "True" } else { "False" },
                self.values.bind(py).repr()?,
                self.reads.bind(py).repr()?,
                self.writes.bind(py).repr()?,
                self.attempts,
                self.latency_ms
            ))
        })
    }
}

/// A transaction client of one switch or store address. Transactions run
/// one at a time per client (a lock serializes threads); the values it
/// learns (from replies, corrections included) are what later
/// transactions read without a round trip.
#[pyclass(module = "innet._innet", frozen)]
struct Client {
    target: SocketAddr,
    cl_id: u32,
    timeout: Duration,
    max_resends: u32,
    delay: Duration,
    inner: Mutex<Option<TxnClient>>,
    /// Every transaction goes out from this socket: a switch binds the
    /// client id to the address of its first request.
    socket: std::net::UdpSocket,
}

impl Client {
    fn fresh(&self) -> TxnClient {
        let mut cfg = ClientConfig::new(self.cl_id);
        cfg.timeout = self.timeout;
        cfg.max_resends = self.max_resends;
        // One attempt per commit: an abort comes back to Python with its
        // corrections; re-running is the caller's choice (`run`, `increment`).
        cfg.retry_limit = 1;
        cfg.first_req_id = wall_clock_req_id();
        TxnClient::new(cfg).with_history()
    }

    /// Runs `txn` (one attempt) with the GIL released.
    fn exec(&self, py: Python<'_>, txn: Txn) -> PyResult<(Completed, Option<Attempt>)> {
        let (target, delay) = (self.target, self.delay);
        let r = py.detach(|| {
            let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            let client = guard.take().unwrap_or_else(|| self.fresh());
            match run_txn_with(self.socket.try_clone()?, target, client, txn, delay, &Stop::new()) {
                Ok((mut client, done)) => {
                    let last = client.history.as_mut().and_then(|h| std::mem::take(h).pop());
                    *guard = Some(client);
                    Ok((done, last))
                }
                Err(e) => Err(e),
            }
        });
        match r.map_err(io_error)? {
            (Some(c), last) => Ok((c, last)),
            (None, _) => Err(innet_error("the transaction was interrupted")),
        }
    }

    /// The value the client knows for `key` (waiting, without the GIL, for
    /// a transaction another thread runs on this client).
    fn known(&self, py: Python<'_>, key: Key) -> Option<Value> {
        py.detach(|| self.inner.lock().unwrap_or_else(|e| e.into_inner()).as_ref().and_then(|c| c.known(key)))
    }

    fn result(&self, py: Python<'_>, c: &Completed, last: Option<&Attempt>, attempts: u32) -> PyResult<TxnResult> {
        let empty: Vec<(Key, Value)> = vec![];
        let (status, values) = match (&c.gave_up, last.map(|a| &a.result)) {
            (None, Some(AttemptResult::Committed { values, .. })) => ("committed", values),
            (None, _) => ("committed", &empty),
            (Some(GiveUp::Timeout), _) => {
                return Err(timeout_error(format!(
                    "no answer from {} after {} resends ({} ms apart); the outcome is unknown",
                    self.target,
                    self.max_resends,
                    self.timeout.as_secs_f64() * 1e3
                )))
            }
            (Some(GiveUp::TooLarge), _) => {
                return Err(config_error(format!(
                    "a transaction carries at most {} ops (255 fragments of 7); this one was not sent",
                    innet_wire::txn::MAX_OPS_PER_TXN
                )))
            }
            (Some(GiveUp::BadRequest), _) => {
                return Err(innet_error(format!("{} answered BADREQ: it refused the request", self.target)))
            }
            (Some(GiveUp::RetryLimit), Some(AttemptResult::Aborted { status, values, .. })) => {
                (if *status == Status::OptimisticAbort { "optimistic_abort" } else { "aborted" }, values)
            }
            (Some(GiveUp::RetryLimit), _) => ("aborted", &empty),
        };
        Ok(TxnResult {
            status: status.to_string(),
            committed: c.committed(),
            from_switch: c.from_switch,
            values: kv_dict(py, values)?,
            reads: kv_dict(py, &c.reads)?,
            writes: kv_dict(py, &c.writes)?,
            attempts,
            latency_ms: c.latency().as_secs_f64() * 1e3,
            client_id: self.cl_id,
        })
    }

    fn read_keys(&self, py: Python<'_>, keys: Vec<Key>) -> PyResult<Vec<(Key, Value)>> {
        if keys.is_empty() {
            return Ok(vec![]);
        }
        let (c, last) = self.exec(py, Txn::Read(keys))?;
        let r = self.result(py, &c, last.as_ref(), c.attempts)?;
        if !r.committed {
            return Err(innet_error(format!("the read was answered {}", r.status)));
        }
        Ok(c.reads)
    }
}

#[pymethods]
impl Client {
    /// `Client(target, *, timeout_ms=1000, max_resends=5, client_id=None,
    /// client_delay_ms=0)`: a client of the switch or store at `target`
    /// ("HOST:PORT").
    #[new]
    #[pyo3(signature = (target, *, timeout_ms=1000.0, max_resends=5, client_id=None, client_delay_ms=0.0))]
    fn new(
        target: &str,
        timeout_ms: f64,
        max_resends: u32,
        client_id: Option<u32>,
        client_delay_ms: f64,
    ) -> PyResult<Client> {
        guard(|| {
            let timeout = duration_ms("timeout_ms", timeout_ms)?;
            if timeout.is_zero() {
                return Err(config_error("timeout_ms must be > 0"));
            }
            let target = address(target)?;
            let c = Client {
                target,
                socket: bind(bind_addr_for(target)).map_err(io_error)?,
                cl_id: client_id.unwrap_or_else(|| fresh_client_id_base(1)),
                timeout,
                max_resends,
                delay: duration_ms("client_delay_ms", client_delay_ms)?,
                inner: Mutex::new(None),
            };
            *c.inner.lock().unwrap_or_else(|e| e.into_inner()) = Some(c.fresh());
            Ok(c)
        })
    }

    /// The switch or store this client sends to.
    #[getter]
    fn target(&self) -> String {
        self.target.to_string()
    }

    /// The client id its requests carry.
    #[getter]
    fn client_id(&self) -> u32 {
        self.cl_id
    }

    /// Starts a transaction: `read` and `write` buffer locally, `commit`
    /// sends it.
    fn begin(slf: Py<Client>) -> Transaction {
        Transaction { client: slf, reads: vec![], writes: vec![], done: false }
    }

    /// A read transaction (one round trip): `{key: value}` as the store
    /// (or a read cache) answers. Raises `TimeoutError` without an answer.
    fn read<'py>(&self, py: Python<'py>, keys: Vec<Key>) -> PyResult<Bound<'py, PyDict>> {
        guard(|| {
            let kv = self.read_keys(py, keys)?;
            Ok(kv_dict(py, &kv)?.into_bound(py))
        })
    }

    /// The value this client last learned for `key`, or None.
    fn known_value<'py>(&self, py: Python<'py>, key: Key) -> Option<Bound<'py, PyBytes>> {
        self.known(py, key).map(|v| value_bytes(py, &v))
    }

    /// Increments the counter at `key`, re-running on aborts (each abort's
    /// corrections feed the next attempt) up to `retry_limit` attempts.
    #[pyo3(signature = (key, *, retry_limit=1000))]
    fn increment(&self, py: Python<'_>, key: Key, retry_limit: u32) -> PyResult<TxnResult> {
        guard(|| {
            if retry_limit == 0 {
                return Err(config_error("retry_limit must be at least 1"));
            }
            let mut attempts = 0;
            loop {
                let (c, last) = self.exec(py, Txn::increment(key))?;
                attempts += c.attempts;
                let r = self.result(py, &c, last.as_ref(), attempts)?;
                if r.committed || attempts >= retry_limit {
                    return Ok(r);
                }
            }
        })
    }

    /// Runs `body(txn)` in a transaction and commits it, re-running it on
    /// aborts up to `retry_limit` attempts; returns the last result. The
    /// body must depend only on what it reads.
    #[pyo3(signature = (body, *, retry_limit=1000))]
    fn run(slf: Py<Client>, py: Python<'_>, body: Bound<'_, PyAny>, retry_limit: u32) -> PyResult<TxnResult> {
        guard(|| {
            if retry_limit == 0 {
                return Err(config_error("retry_limit must be at least 1"));
            }
            let mut attempts = 0;
            loop {
                let t = Bound::new(py, Client::begin(slf.clone_ref(py)))?;
                body.call1((t.clone(),))?;
                let mut r = t.borrow_mut().commit(py)?;
                attempts += r.attempts;
                r.attempts = attempts;
                if r.committed || attempts >= retry_limit {
                    return Ok(r);
                }
            }
        })
    }

    fn __repr__(&self) -> String {
        format!("Client(target={:?}, client_id={})", self.target.to_string(), self.cl_id)
    }
}

/// One transaction of a [`Client`]: reads come from the values the client
/// knows (a key it never saw costs one read round trip first), writes are
/// buffered; `commit` sends the compares and writes as one request.
#[pyclass(module = "innet._innet")]
struct Transaction {
    client: Py<Client>,
    reads: Vec<(Key, Value)>,
    writes: Vec<(Key, Value)>,
    done: bool,
}

#[pymethods]
impl Transaction {
    /// The value of `key` as this transaction sees it: its own write, else
    /// the client's known value (validated at commit).
    fn read<'py>(&mut self, py: Python<'py>, key: Key) -> PyResult<Bound<'py, PyBytes>> {
        guard(|| {
            if self.done {
                return Err(innet_error("the transaction was committed already"));
            }
            if let Some((_, v)) = self.writes.iter().rev().find(|(k, _)| *k == key) {
                return Ok(value_bytes(py, v));
            }
            if let Some((_, v)) = self.reads.iter().find(|(k, _)| *k == key) {
                return Ok(value_bytes(py, v));
            }
            let client = self.client.get();
            let v = match client.known(py, key) {
                Some(v) => v,
                None => {
                    client.read_keys(py, vec![key])?;
                    client.known(py, key).unwrap_or(Value::ZERO)
                }
            };
            self.reads.push((key, v));
            Ok(value_bytes(py, &v))
        })
    }

    /// Buffers a write of `value` (bytes or str of at most 16 bytes, or an
    /// int counter) to `key`.
    fn write(&mut self, key: Key, value: &Bound<'_, PyAny>) -> PyResult<()> {
        guard(|| {
            if self.done {
                return Err(innet_error("the transaction was committed already"));
            }
            self.writes.push((key, value_arg(value)?));
            Ok(())
        })
    }

    /// Sends the transaction (one attempt): a `TxnResult` that is
    /// committed, aborted, or optimistically aborted with the corrected
    /// values. Raises `TimeoutError` if nothing answered (the outcome is
    /// then unknown).
    fn commit(&mut self, py: Python<'_>) -> PyResult<TxnResult> {
        guard(|| {
            if self.done {
                return Err(innet_error("the transaction was committed already"));
            }
            self.done = true;
            let client = self.client.get();
            // The body replays what Python saw; the client compares its known
            // values, so a value that changed since (another transaction of
            // this client) aborts here, without a request.
            let stale: Vec<(Key, Value)> = self
                .reads
                .iter()
                .filter_map(|(k, v)| client.known(py, *k).filter(|now| now != v).map(|now| (*k, now)))
                .collect();
            if !stale.is_empty() {
                return Ok(TxnResult {
                    status: "aborted".into(),
                    committed: false,
                    from_switch: false,
                    values: kv_dict(py, &stale)?,
                    reads: kv_dict(py, &self.reads)?,
                    writes: kv_dict(py, &self.writes)?,
                    attempts: 0,
                    latency_ms: 0.0,
                    client_id: client.cl_id,
                });
            }
            let (reads, writes) = (self.reads.clone(), self.writes.clone());
            let txn = Txn::body(move |t| {
                for (k, _) in &reads {
                    t.read(*k);
                }
                for (k, v) in &writes {
                    t.write(*k, *v);
                }
            });
            let (c, last) = client.exec(py, txn)?;
            client.result(py, &c, last.as_ref(), c.attempts)
        })
    }

    fn __repr__(&self) -> String {
        format!("Transaction(reads={:?}, writes={:?}, done={})", self.reads, self.writes, self.done)
    }
}

// ----------------------------------------------------------------- CAANS

/// The CAANS application API (section 3.1): `submit`, deliveries (a
/// callback through `poll`, or an iterator), `recover`, over a deployment
/// this object starts on loopback (coordinator and acceptors in software
/// switches or as processes, the backup coordinator, the learners, and
/// this application's proposer; learner 0 delivers here).
#[pyclass(module = "innet._innet", frozen)]
struct Paxos {
    app: Mutex<Option<PaxosApp>>,
    pending: Mutex<VecDeque<(u32, Vec<u8>)>>,
    callback: Mutex<Option<Py<PyAny>>>,
    addresses: Vec<(String, SocketAddr)>,
}

impl Paxos {
    fn with_app<T: Send>(&self, py: Python<'_>, f: impl FnOnce(&PaxosApp) -> std::io::Result<T> + Send) -> PyResult<T> {
        py.detach(|| {
            let g = self.app.lock().unwrap_or_else(|e| e.into_inner());
            let app = g.as_ref().ok_or_else(|| std::io::Error::other("the deployment was stopped"))?;
            f(app)
        })
        .map_err(io_error)
    }

    /// Moves what arrived (waiting up to `timeout` if nothing is pending)
    /// into `pending`, with the GIL released.
    fn fill(&self, py: Python<'_>, timeout: Duration) -> PyResult<()> {
        if !self.pending.lock().unwrap_or_else(|e| e.into_inner()).is_empty() {
            return Ok(());
        }
        // Wait in short slices, letting go of the deployment in between, so
        // other threads can submit while this one waits for deliveries.
        let deadline = std::time::Instant::now() + timeout;
        py.detach(|| loop {
            let g = self.app.lock().unwrap_or_else(|e| e.into_inner());
            let app = g.as_ref().ok_or_else(|| std::io::Error::other("the deployment was stopped"))?;
            let slice = deadline.saturating_duration_since(std::time::Instant::now()).min(POLL_SLICE);
            let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            if app.poll_timeout(slice, |i, v| p.push_back((i, v.to_vec()))) > 0 || std::time::Instant::now() >= deadline
            {
                return Ok(());
            }
        })
        .map_err(io_error)
    }

    fn next(&self, py: Python<'_>, timeout: Duration) -> PyResult<Option<(u32, Vec<u8>)>> {
        self.fill(py, timeout)?;
        Ok(self.pending.lock().unwrap_or_else(|e| e.into_inner()).pop_front())
    }
}

// ------------------------------------------------- key-value service client

/// `KvClient(replicas, *, timeout_ms=500, deadline_ms=30000)`: a client of
/// the consensus-replicated key-value service (`innet kv-replica`
/// processes), given their client ports ("HOST:PORT" each). It is
/// `innet_live::kv_client::KvNetClient`: each request carries the client's
/// random id and the next sequence number; without an answer within the
/// timeout it is resent, same id and number, to the next replica (at once
/// on BUSY), and the replicas apply it once. Only after `deadline_ms`
/// without an answer does an operation raise `innet.TimeoutError`.
#[pyclass(module = "innet._innet", frozen)]
struct KvClient {
    inner: Mutex<innet_live::kv_client::KvNetClient>,
}

impl KvClient {
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut innet_live::kv_client::KvNetClient) -> std::io::Result<T> + Send,
    ) -> PyResult<T> {
        guard(|| {
            py.detach(|| f(&mut self.inner.lock().unwrap_or_else(|e| e.into_inner()))).map_err(|e| match e.kind() {
                std::io::ErrorKind::TimedOut => timeout_error(e.to_string()),
                _ => io_error(e),
            })
        })
    }
}

#[pymethods]
impl KvClient {
    #[new]
    #[pyo3(signature = (replicas, *, timeout_ms=500.0, deadline_ms=30000.0))]
    fn new(replicas: Vec<String>, timeout_ms: f64, deadline_ms: f64) -> PyResult<KvClient> {
        guard(|| {
            let addrs = replicas.iter().map(|r| address(r)).collect::<PyResult<Vec<_>>>()?;
            let timeout = duration_ms("timeout_ms", timeout_ms)?;
            let deadline = duration_ms("deadline_ms", deadline_ms)?;
            if timeout.is_zero() || deadline < timeout {
                return Err(config_error("timeout_ms must be > 0 and deadline_ms at least timeout_ms"));
            }
            let mut c = innet_live::kv_client::KvNetClient::connect(&addrs).map_err(io_error)?;
            (c.timeout, c.deadline) = (timeout, deadline);
            Ok(KvClient { inner: Mutex::new(c) })
        })
    }

    /// Sets `key` to `value` (bytes or str; up to 1 MiB).
    fn put(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let (key, value) = (payload(key)?, payload(value)?);
        self.with(py, |c| c.put(&key, &value))
    }

    /// The value of `key` (bytes), or None; read in its place in the
    /// consensus order (linearizable).
    fn get<'py>(&self, py: Python<'py>, key: &Bound<'_, PyAny>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let key = payload(key)?;
        let v = self.with(py, |c| c.get(&key))?;
        Ok(v.map(|v| PyBytes::new(py, &v)))
    }

    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let key = payload(key)?;
        self.with(py, |c| c.delete(&key))
    }

    /// Sets `key` to `value` if it holds `expected` (None: if it is
    /// absent); True if it did.
    #[pyo3(signature = (key, expected, value))]
    fn cas(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        expected: Option<&Bound<'_, PyAny>>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let (key, value) = (payload(key)?, payload(value)?);
        let expected = expected.map(payload).transpose()?;
        self.with(py, |c| c.cas(&key, expected.as_deref(), &value))
    }

    /// This client's id (random per client, never 0).
    #[getter]
    fn client_id(&self) -> u64 {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).client_id()
    }

    /// Times a request moved on to another replica (a timeout or BUSY).
    #[getter]
    fn failovers(&self) -> u64 {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).failovers
    }

    /// Requests sent, first sends and resends.
    #[getter]
    fn sends(&self) -> u64 {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).sends
    }

    /// The replica requests go to now ("HOST:PORT").
    #[getter]
    fn current(&self) -> String {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).current().to_string()
    }

    fn __repr__(&self) -> String {
        format!("KvClient(client_id={:#x}, current={})", self.client_id(), self.current())
    }
}

/// How long `fill` holds the deployment at a time while waiting.
const POLL_SLICE: Duration = Duration::from_millis(5);

fn payload(v: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(b) = v.cast::<PyBytes>() {
        Ok(b.as_bytes().to_vec())
    } else if let Ok(s) = v.cast::<PyString>() {
        Ok(s.to_cow()?.as_bytes().to_vec())
    } else {
        Err(config_error(format!("a value is bytes or str, not {}", v.get_type().name()?)))
    }
}

fn seconds(name: &str, s: f64) -> PyResult<Duration> {
    duration_ms(name, s * 1e3)
}

#[pymethods]
impl Paxos {
    /// `Paxos(acceptors=3, learners=2, data_plane="switch")`; data_plane
    /// "switch" (software switches) or "process" (the libpaxos-style
    /// software baseline).
    #[new]
    #[pyo3(signature = (*, acceptors=3, learners=2, data_plane="switch"))]
    fn new(py: Python<'_>, acceptors: usize, learners: usize, data_plane: &str) -> PyResult<Paxos> {
        guard(|| {
            let data_plane = match data_plane.parse::<DataPlaneAt>() {
                Ok(d @ (DataPlaneAt::Switch | DataPlaneAt::Process)) => d,
                _ => return Err(config_error(format!("data_plane {data_plane:?}: \"switch\" or \"process\""))),
            };
            use innet_exp::parse::within;
            within("acceptors =", acceptors, 1, innet_paxos::MAX_ACCEPTORS, "MAX_ACCEPTORS").map_err(config_error)?;
            within("learners =", learners, 1, innet_paxos::MAX_LEARNERS, "MAX_LEARNERS").map_err(config_error)?;
            let cfg = LiveConfig {
                data_plane,
                shape: PaxosShape { acceptors, learners, ..PaxosShape::default() },
                ..LiveConfig::default()
            };
            let app = py.detach(|| PaxosApp::start(&cfg)).map_err(io_error)?;
            let addresses = app.addresses();
            Ok(Paxos {
                app: Mutex::new(Some(app)),
                pending: Mutex::new(VecDeque::new()),
                callback: Mutex::new(None),
                addresses,
            })
        })
    }

    /// Every node's address, by name.
    #[getter]
    fn addresses<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        guard(|| {
            let d = PyDict::new(py);
            for (n, a) in &self.addresses {
                d.set_item(n, a.to_string())?;
            }
            Ok(d)
        })
    }

    /// Submits `value` (bytes or str, at most `PAXOS_VALUE_MAX` bytes); the
    /// proposer resubmits until it is chosen. Returns the request id.
    fn submit(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<u32> {
        guard(|| {
            let v = payload(value)?;
            self.with_app(py, |a| a.submit(&v))
        })
    }

    /// Learns what was decided in `instance` (phases 1 and 2 proposing
    /// `noop` if no value was voted); it is delivered unless learner 0 had
    /// delivered it already.
    #[pyo3(signature = (instance, noop=None))]
    fn recover(&self, py: Python<'_>, instance: u32, noop: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        guard(|| {
            let n = noop.map(payload).transpose()?.unwrap_or_default();
            self.with_app(py, |a| a.recover(instance, &n))
        })
    }

    /// Registers `callback(instance, value)`, called from `poll`.
    fn on_deliver(&self, callback: Py<PyAny>) {
        *self.callback.lock().unwrap_or_else(|e| e.into_inner()) = Some(callback);
    }

    /// Calls the deliver callback for every delivery that arrived, waiting
    /// up to `timeout` seconds for the first. Returns how many.
    #[pyo3(signature = (timeout=0.0))]
    fn poll(&self, py: Python<'_>, timeout: f64) -> PyResult<usize> {
        guard(|| {
            let cb = self.callback.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map(|c| c.clone_ref(py));
            let cb = cb.ok_or_else(|| config_error("no deliver callback: call on_deliver(callback) first"))?;
            self.fill(py, seconds("timeout", timeout)?)?;
            let got: Vec<_> = self.pending.lock().unwrap_or_else(|e| e.into_inner()).drain(..).collect();
            for (i, v) in &got {
                cb.call1(py, (*i, PyBytes::new(py, v)))?;
            }
            Ok(got.len())
        })
    }

    /// The next delivery `(instance, value)`, waiting up to `timeout`
    /// seconds; None if none came. A no-op delivers its no-op value.
    #[pyo3(signature = (timeout=1.0))]
    fn deliver<'py>(&self, py: Python<'py>, timeout: f64) -> PyResult<Option<(u32, Bound<'py, PyBytes>)>> {
        guard(|| Ok(self.next(py, seconds("timeout", timeout)?)?.map(|(i, v)| (i, PyBytes::new(py, &v)))))
    }

    /// An iterator over deliveries `(instance, value)`, in instance order;
    /// it ends when none arrives for `timeout` seconds.
    #[pyo3(signature = (timeout=1.0))]
    fn deliveries(slf: Py<Paxos>, timeout: f64) -> PyResult<Deliveries> {
        guard(|| Ok(Deliveries { paxos: slf, timeout: seconds("timeout", timeout)? }))
    }

    /// Stops the deployment (also on leaving a `with` block).
    fn stop(&self, py: Python<'_>) -> PyResult<()> {
        guard(|| {
            let app = self.app.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(a) = app {
                py.detach(|| a.stop());
            }
            Ok(())
        })
    }

    fn __enter__(slf: Py<Paxos>) -> Py<Paxos> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.stop(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!("Paxos(addresses={:?})", self.addresses.iter().map(|(n, a)| format!("{n}={a}")).collect::<Vec<_>>())
    }
}

/// Deliveries of a [`Paxos`] as an iterator.
#[pyclass(module = "innet._innet")]
struct Deliveries {
    paxos: Py<Paxos>,
    timeout: Duration,
}

#[pymethods]
impl Deliveries {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }
    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<(u32, Bound<'py, PyBytes>)>> {
        guard(|| Ok(self.paxos.get().next(py, self.timeout)?.map(|(i, v)| (i, PyBytes::new(py, &v)))))
    }
}

/// `up_paxos(acceptors=3, learners=2, data_plane="switch")`: a CAANS
/// deployment on loopback with this process's proposer and learner, as a
/// context manager.
#[pyfunction]
#[pyo3(signature = (*, acceptors=3, learners=2, data_plane="switch"))]
fn up_paxos(py: Python<'_>, acceptors: usize, learners: usize, data_plane: &str) -> PyResult<Paxos> {
    guard(|| Paxos::new(py, acceptors, learners, data_plane))
}

// ----------------------------------------------------------------- chain

fn protocol(s: &str) -> PyResult<Protocol> {
    s.parse().map_err(|_| config_error(format!("protocol {s:?}: \"netcraq\" or \"netchain\"")))
}

/// A chain client: get and put against the chain whose nodes (head first)
/// are `nodes`. Reads go to node `near` first.
#[pyclass(module = "innet._innet", frozen)]
struct ChainClient {
    protocol: Protocol,
    nodes: Vec<SocketAddr>,
    near: usize,
    timeout: Duration,
    deadline: Duration,
}

impl ChainClient {
    fn one(&self, py: Python<'_>, key: u32, put: Option<Value>) -> PyResult<innet_chain::client::Completion> {
        let done = py
            .detach(|| {
                innet_live::chain::run_one(self.protocol, &self.nodes, self.near, key, put, self.timeout, self.deadline)
            })
            .map_err(io_error)?;
        done.ok_or_else(|| {
            timeout_error(format!("no answer from the chain within {} ms", self.deadline.as_secs_f64() * 1e3))
        })
    }
}

#[pymethods]
impl ChainClient {
    /// `ChainClient(nodes, *, protocol="netcraq", near=0, timeout_ms=100,
    /// deadline_ms=5000)`: `nodes` are "HOST:PORT", head first.
    #[new]
    #[pyo3(signature = (nodes, *, protocol="netcraq", near=0, timeout_ms=100.0, deadline_ms=5000.0))]
    fn new(
        nodes: Vec<String>,
        protocol: &str,
        near: usize,
        timeout_ms: f64,
        deadline_ms: f64,
    ) -> PyResult<ChainClient> {
        guard(|| {
            let nodes = nodes.iter().map(|n| address(n)).collect::<PyResult<Vec<_>>>()?;
            if nodes.is_empty() || nodes.len() > innet_wire::netchain::MAX_CHAIN_NODES {
                return Err(config_error(format!(
                    "a chain has 1 to {} nodes, got {}",
                    innet_wire::netchain::MAX_CHAIN_NODES,
                    nodes.len()
                )));
            }
            if near >= nodes.len() {
                return Err(config_error(format!("near {near}: the chain has {} nodes", nodes.len())));
            }
            let timeout = duration_ms("timeout_ms", timeout_ms)?;
            if timeout.is_zero() {
                return Err(config_error("timeout_ms must be > 0"));
            }
            Ok(ChainClient {
                protocol: self::protocol(protocol)?,
                nodes,
                near,
                timeout,
                deadline: duration_ms("deadline_ms", deadline_ms)?,
            })
        })
    }

    /// The value at `key` (bytes, NUL padding removed).
    fn get<'py>(&self, py: Python<'py>, key: u32) -> PyResult<Bound<'py, PyBytes>> {
        guard(|| {
            let c = self.one(py, key, None)?;
            Ok(value_bytes(py, &c.value))
        })
    }

    /// Writes `value` (bytes or str of at most 16 bytes, or an int) to
    /// `key`; returns once the tail acknowledged it.
    fn put(&self, py: Python<'_>, key: u32, value: &Bound<'_, PyAny>) -> PyResult<()> {
        guard(|| {
            let v = value_arg(value)?;
            self.one(py, key, Some(v))?;
            Ok(())
        })
    }

    #[getter]
    fn nodes(&self) -> Vec<String> {
        self.nodes.iter().map(|a| a.to_string()).collect()
    }

    #[getter]
    fn protocol(&self) -> &'static str {
        self.protocol.name()
    }
}

// ----------------------------------------------------------- deployments

/// A topology file's servers started in this process.
struct TopoUp {
    up: Up,
    stop: Stop,
}

impl TopoUp {
    fn start(path: &str, want: &str) -> PyResult<TopoUp> {
        let topo = Topology::load(std::path::Path::new(path)).map_err(|e| config_error(format!("{path}: {e}")))?;
        let service = topo.service.name();
        if service != want {
            return Err(config_error(format!("{path} is a {service} topology, not a {want} one")));
        }
        let stop = Stop::new();
        let up = start_servers(topo, None, &stop).map_err(anyhow_error)?;
        Ok(TopoUp { up, stop })
    }

    fn addresses(&self) -> Vec<(String, SocketAddr)> {
        self.up.addresses()
    }

    fn shutdown(mut self) -> PyResult<()> {
        self.up.started.load.clear();
        self.stop.stop();
        self.up.run(&UpLoad::default(), &self.stop).map_err(anyhow_error)?;
        Ok(())
    }
}

fn addresses_dict<'py>(py: Python<'py>, a: &[(String, SocketAddr)]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (n, a) in a {
        d.set_item(n, a.to_string())?;
    }
    Ok(d)
}

/// What a deployment object runs.
enum Nodes {
    Txn(Box<LocalTxn>),
    Chain(LiveChain),
    Topo(Box<TopoUp>),
}

/// Stops and joins every node of `run` (once) with the GIL released.
fn stop_nodes(py: Python<'_>, run: &Mutex<Option<Nodes>>) -> PyResult<()> {
    let Some(nodes) = run.lock().unwrap_or_else(|e| e.into_inner()).take() else { return Ok(()) };
    py.detach(|| match nodes {
        Nodes::Txn(l) => l.shutdown().map(|_| ()).map_err(io_error),
        Nodes::Chain(c) => c.shutdown().map(|_| ()).map_err(io_error),
        Nodes::Topo(t) => t.shutdown(),
    })
}

/// What every deployment object has: its nodes, their addresses, `stop`
/// and the context-manager protocol (stopping on exit).
#[pyclass(module = "innet._innet", frozen, subclass)]
struct Deployment {
    run: Mutex<Option<Nodes>>,
    addresses: Vec<(String, SocketAddr)>,
}

impl Deployment {
    fn new(nodes: Nodes, addresses: Vec<(String, SocketAddr)>) -> Deployment {
        Deployment { run: Mutex::new(Some(nodes)), addresses }
    }
}

#[pymethods]
impl Deployment {
    /// Every node's address, by name.
    #[getter]
    fn addresses<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        guard(|| addresses_dict(py, &self.addresses))
    }
    /// Stops and joins every node (also on leaving a `with` block).
    fn stop(&self, py: Python<'_>) -> PyResult<()> {
        guard(|| stop_nodes(py, &self.run))
    }
    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }
    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        guard(|| {
            self.stop(py)?;
            Ok(false)
        })
    }
}

/// A running transaction deployment (a store and a switch, or a topology
/// file's nodes): `switch` and `store` are the addresses clients use.
#[pyclass(module = "innet._innet", frozen, extends = Deployment)]
struct TxnDeployment {
    switch: SocketAddr,
    store: SocketAddr,
}

#[pymethods]
impl TxnDeployment {
    /// The (first) switch's address.
    #[getter]
    fn switch(&self) -> String {
        self.switch.to_string()
    }
    /// The (first) store's address.
    #[getter]
    fn store(&self) -> String {
        self.store.to_string()
    }
    /// The (first) switch's counters, e.g. `optimistically_aborted`.
    fn counters(slf: &Bound<'_, Self>) -> PyResult<Vec<(String, u64)>> {
        guard(|| {
            let base = slf.as_super().get();
            let g = base.run.lock().unwrap_or_else(|e| e.into_inner());
            match g.as_ref() {
                None => Err(innet_error("the deployment was stopped")),
                Some(Nodes::Txn(l)) => Ok(l.switch_counters()),
                Some(Nodes::Chain(_)) => Ok(vec![]),
                Some(Nodes::Topo(t)) => Ok(t
                    .up
                    .started
                    .nodes
                    .iter()
                    .find_map(|(_, n)| match n {
                        RunningNode::TxnSwitch(s) => Some(s.counters()),
                        _ => None,
                    })
                    .unwrap_or_default()),
            }
        })
    }
    fn __repr__(&self) -> String {
        format!("TxnDeployment(switch={:?}, store={:?})", self.switch.to_string(), self.store.to_string())
    }
}

/// `up_txn(topology=None, *, mode="optimistic-abort", store_delay_ms=0,
/// client_delay_ms=0, cache_slots=4096, store_clients=False)`: a store and
/// a switch on loopback (ephemeral ports, store in memory), or every node
/// of a transaction topology file; a context manager. The store takes
/// requests only from its switch unless `store_clients` (then clients may
/// also use it directly, and a request the switch aborted could be
/// committed by sending it there).
#[pyfunction]
#[pyo3(signature = (topology=None, *, mode="optimistic-abort", store_delay_ms=0.0, client_delay_ms=0.0, cache_slots=4096, store_clients=false))]
fn up_txn(
    py: Python<'_>,
    topology: Option<std::path::PathBuf>,
    mode: &str,
    store_delay_ms: f64,
    client_delay_ms: f64,
    cache_slots: usize,
    store_clients: bool,
) -> PyResult<Py<TxnDeployment>> {
    guard(|| {
        if let Some(path) = topology {
            let path = path.to_string_lossy().into_owned();
            let t = py.detach(|| TopoUp::start(&path, "txn"))?;
            let find = |f: fn(&RunningNode) -> bool| {
                t.up.started.nodes.iter().find(|(_, n)| f(n)).map(|(i, _)| t.up.started.addrs[*i])
            };
            let switch = find(|n| matches!(n, RunningNode::TxnSwitch(_)));
            let store = find(|n| matches!(n, RunningNode::Store(_)));
            let (Some(switch), Some(store)) = (switch, store) else {
                let _ = t.shutdown();
                return Err(config_error(format!("{path}: a transaction topology with a switch and a store")));
            };
            let addresses = t.addresses();
            let base = Deployment::new(Nodes::Topo(Box::new(t)), addresses);
            return Py::new(py, PyClassInitializer::from(base).add_subclass(TxnDeployment { switch, store }));
        }
        let mode: Mode = mode.parse().map_err(config_error)?;
        let mut cfg = LocalConfig::new(mode);
        cfg.switch.store_delay = duration_ms("store_delay_ms", store_delay_ms)?;
        cfg.switch.client_delay = duration_ms("client_delay_ms", client_delay_ms)?;
        let (ways, max) = (innet_core::table::WAYS, innet_core::limits::TABLE_SLOTS_MAX);
        if cache_slots < ways || cache_slots > max || !cache_slots.is_power_of_two() {
            return Err(config_error(format!(
                "cache_slots = {cache_slots}: a power of two from {ways} to {max} (the limit TABLE_SLOTS_MAX)"
            )));
        }
        cfg.switch.cache_slots = cache_slots;
        cfg.store_clients = store_clients;
        let l = py.detach(|| start_local(&cfg, &Stop::new())).map_err(io_error)?;
        let (switch, store) = (l.switch_addr(), l.store_addr());
        let addresses = vec![("store".to_string(), store), ("switch".to_string(), switch)];
        let base = Deployment::new(Nodes::Txn(Box::new(l)), addresses);
        Py::new(py, PyClassInitializer::from(base).add_subclass(TxnDeployment { switch, store }))
    })
}

/// A running chain (its switches and control plane).
#[pyclass(module = "innet._innet", frozen, extends = Deployment)]
struct ChainDeployment {
    protocol: Protocol,
    nodes: Vec<SocketAddr>,
}

#[pymethods]
impl ChainDeployment {
    /// The chain nodes' addresses, head first.
    #[getter]
    fn nodes(&self) -> Vec<String> {
        self.nodes.iter().map(|a| a.to_string()).collect()
    }
    #[getter]
    fn protocol(&self) -> &'static str {
        self.protocol.name()
    }
    /// A [`ChainClient`] of this chain.
    #[pyo3(signature = (*, near=0, timeout_ms=100.0, deadline_ms=5000.0))]
    fn client(&self, near: usize, timeout_ms: f64, deadline_ms: f64) -> PyResult<ChainClient> {
        guard(|| ChainClient::new(self.nodes(), self.protocol.name(), near, timeout_ms, deadline_ms))
    }
    fn __repr__(&self) -> String {
        format!("ChainDeployment(protocol={:?}, nodes={:?})", self.protocol.name(), self.nodes())
    }
}

/// `up_chain(topology=None, *, protocol="netcraq", nodes=3, keys=64)`: a
/// chain of software switches and its control plane on loopback, or every
/// node of a chain topology file; a context manager.
#[pyfunction]
#[pyo3(signature = (topology=None, *, protocol="netcraq", nodes=3, keys=64))]
fn up_chain(
    py: Python<'_>,
    topology: Option<std::path::PathBuf>,
    protocol: &str,
    nodes: usize,
    keys: u32,
) -> PyResult<Py<ChainDeployment>> {
    guard(|| {
        if let Some(path) = topology {
            let path = path.to_string_lossy().into_owned();
            let t = py.detach(|| TopoUp::start(&path, "chain"))?;
            let Service::Chain(c) = &t.up.topology.service else { unreachable!("checked by TopoUp::start") };
            let protocol = c.protocol;
            let nodes =
                innet_chain::deploy::chain_nodes(&c.deployment).iter().map(|&i| t.up.started.addrs[i]).collect();
            let addresses = t.addresses();
            let base = Deployment::new(Nodes::Topo(Box::new(t)), addresses);
            return Py::new(py, PyClassInitializer::from(base).add_subclass(ChainDeployment { protocol, nodes }));
        }
        let protocol = self::protocol(protocol)?;
        if !(1..=innet_wire::netchain::MAX_CHAIN_NODES).contains(&nodes) {
            return Err(config_error(format!("nodes must be 1..={}", innet_wire::netchain::MAX_CHAIN_NODES)));
        }
        let cfg = LiveChainConfig { keys, ..LiveChainConfig::new(protocol, nodes) };
        if keys as usize > cfg.objects {
            return Err(config_error(format!("keys = {keys}: at most the chain's {} objects", cfg.objects)));
        }
        let chain = py.detach(|| LiveChain::start(cfg, &Stop::new())).map_err(io_error)?;
        let addrs = chain.addrs();
        let addresses = addrs.iter().enumerate().map(|(i, a)| (format!("node{i}"), *a)).collect();
        let base = Deployment::new(Nodes::Chain(chain), addresses);
        Py::new(py, PyClassInitializer::from(base).add_subclass(ChainDeployment { protocol, nodes: addrs }))
    })
}

// ---------------------------------------------------------------- module

/// `_panic_for_tests()`: panics behind [`guard`], so a test can see that a
/// Rust panic reaches Python as `innet.InnetError` (python/tests/test_errors.py).
#[pyfunction]
fn _panic_for_tests() -> PyResult<()> {
    guard(|| panic!("a deliberate panic for the test of the boundary"))
}

#[pymodule]
fn _innet(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("VALUE_LEN", VALUE_LEN)?;
    m.add("PAXOS_VALUE_MAX", innet_paxos::envelope::PAYLOAD_MAX)?;
    m.add_class::<Client>()?;
    m.add_class::<Transaction>()?;
    m.add_class::<TxnResult>()?;
    m.add_class::<Paxos>()?;
    m.add_class::<Deliveries>()?;
    m.add_class::<KvClient>()?;
    m.add_class::<ChainClient>()?;
    m.add_class::<Deployment>()?;
    m.add_class::<TxnDeployment>()?;
    m.add_class::<ChainDeployment>()?;
    m.add_function(wrap_pyfunction!(counter, m)?)?;
    m.add_function(wrap_pyfunction!(up_txn, m)?)?;
    m.add_function(wrap_pyfunction!(up_chain, m)?)?;
    m.add_function(wrap_pyfunction!(up_paxos, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_tests, m)?)?;
    Ok(())
}
