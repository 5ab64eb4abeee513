//! TPC-C on the live UDP runtime: loading a store over the wire, TPC-C
//! terminals against a live switch (or store), reading the database back
//! over the wire for the consistency conditions, and one point of `innet
//! bench tpcc --runtime live` (store + switch in this process on loopback).

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use innet_core::rng::Rng;
use innet_live::host::{run_hosts, HostOptions, HostStats};
use innet_live::txn::{bind, bind_addr_for, run_txn_on, start_local, wall_clock_req_id, LocalConfig};
use innet_live::{clock, Stop};
use innet_txn::client::Completed;
use innet_txn::{ClientConfig, Txn, TxnClient};
use innet_wire::txn::{Key, Value, MAX_OPS_PER_PACKET};

use crate::tpcc_sim::{record, TpccConfig, TpccMeasured, TpccResult};
use innet_tpcc::{self as tpcc, initial_db, key, District0, Kind, Order0, Scale, TpccClient, TpccStats, MAX_LINES};

/// How one live client sends: target, access-link delay, resends.
#[derive(Clone, Debug)]
pub struct LiveSending {
    /// The switch (or store) every request goes to.
    pub target: SocketAddr,
    /// One-way client <-> switch delay each terminal emulates.
    pub client_delay: Duration,
    pub timeout: Duration,
    pub max_resends: u32,
    /// The socket [`populate`] and [`read_db`] send from (a store that takes
    /// only its peers is reached from `LocalTxn::operator`); `None`: a fresh
    /// one per transaction.
    pub socket: Option<Arc<UdpSocket>>,
}

impl LiveSending {
    pub fn new(target: SocketAddr) -> LiveSending {
        let c = ClientConfig::new(1);
        LiveSending {
            target,
            client_delay: Duration::ZERO,
            timeout: c.timeout,
            max_resends: c.max_resends,
            socket: None,
        }
    }
    /// Sends from `socket`.
    pub fn from_socket(self, socket: UdpSocket) -> LiveSending {
        LiveSending { socket: Some(Arc::new(socket)), ..self }
    }
    /// The socket one client's transactions go out from (the same for all
    /// of them: a switch binds a client id to its first request's address).
    fn socket(&self) -> io::Result<UdpSocket> {
        match &self.socket {
            Some(s) => s.try_clone(),
            None => bind(bind_addr_for(self.target)),
        }
    }
    fn client(&self, cl_id: u32, retry_limit: u32) -> ClientConfig {
        let mut c = ClientConfig::new(cl_id);
        c.timeout = self.timeout;
        c.max_resends = self.max_resends;
        c.retry_limit = retry_limit;
        c.first_req_id = wall_clock_req_id();
        c
    }
}

/// Runs one transaction with client `cl_id` from `socket` (no access-link
/// delay: loading and reading back are not measured); an error unless it
/// committed.
fn one(s: &LiveSending, socket: &UdpSocket, cl_id: u32, txn: Txn, stop: &Stop) -> io::Result<Completed> {
    let done = run_txn_on(socket.try_clone()?, s.target, txn, s.client(cl_id, 1000), Duration::ZERO, stop)?;
    let done = done.ok_or_else(|| io::Error::new(io::ErrorKind::Interrupted, "stopped"))?;
    if !done.committed() {
        return Err(io::Error::other(format!(
            "transaction of client {cl_id} to {} did not commit ({:?}, {} attempts)",
            s.target, done.gave_up, done.attempts
        )));
    }
    Ok(done)
}

/// Writes TPC-C's initial database for `scale` and `seed` to the store
/// behind `s.target`, in write-only transactions of at most
/// [`MAX_OPS_PER_PACKET`] (7) writes each, one at a time, as client
/// `cl_id`. Returns the number of records written and of transactions.
pub fn populate(s: &LiveSending, scale: &Scale, seed: u64, cl_id: u32, stop: &Stop) -> io::Result<(usize, usize)> {
    scale.validate().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let db: Vec<(Key, Value)> = initial_db(scale, seed).into_iter().collect();
    let socket = s.socket()?;
    let mut txns = 0;
    for chunk in db.chunks(MAX_OPS_PER_PACKET) {
        let writes = chunk.to_vec();
        one(
            s,
            &socket,
            cl_id,
            Txn::body(move |t| {
                for &(k, v) in &writes {
                    t.write(k, v);
                }
            }),
            stop,
        )?;
        txns += 1;
    }
    Ok((db.len(), txns))
}

/// Keys read back per read transaction (a fragmented request).
const READ_BATCH: usize = 105;
/// Ids probed past each counter (orders past D_NEXT_O_ID, history rows past
/// the count), so that a record written beyond one is seen.
const PROBE: u32 = 2;

/// Every key of the database `db` (what is known of it so far) implies:
/// the fixed records of `scale`, and from each district's counters its
/// orders, NEW-ORDER rows and history rows, from each order its lines, each
/// with [`PROBE`] ids (one line) beyond.
fn implied_keys(scale: &Scale, db: &BTreeMap<Key, Value>) -> BTreeSet<Key> {
    let mut keys = BTreeSet::new();
    for i in 1..=scale.items + 1 {
        keys.insert(key::item(i));
    }
    for w in 1..=scale.warehouses {
        keys.extend([key::warehouse(w, tpcc::HOT), key::warehouse(w, tpcc::STATIC)]);
        for i in 1..=scale.items + 1 {
            keys.insert(key::stock(w, i));
        }
        for d in 1..=scale.districts {
            keys.extend((0..=tpcc::DELIVERY).map(|ch| key::district(w, d, ch)));
            for c in 1..=scale.customers {
                keys.extend((0..=tpcc::LAST_ORDER).map(|ch| key::customer(w, d, c, ch)));
            }
            let Some(d0) = db.get(&key::district(w, d, tpcc::HOT)).and_then(|v| District0::decode(*v)) else {
                continue;
            };
            for o in 1..d0.next_o_id.saturating_add(PROBE).min(tpcc::MAX_ORDER + 1) {
                keys.extend([key::order(w, d, o), key::new_order(w, d, o)]);
                if let Some(order) = db.get(&key::order(w, d, o)).and_then(|v| Order0::decode(*v)) {
                    keys.extend((1..=(order.ol_cnt + 1).min(MAX_LINES)).map(|ol| key::order_line(w, d, o, ol)));
                }
            }
            for n in 1..=d0.history_cnt.saturating_add(PROBE).min(tpcc::MAX_HISTORY) {
                keys.insert(key::history(w, d, n));
            }
        }
    }
    keys
}

/// Reads the whole TPC-C database of `scale` back from `s.target` over the
/// wire (read transactions as client `cl_id`), following the keys the
/// values read imply ([`implied_keys`]) until no new key turns up. The store
/// should be quiescent: the reads are several transactions. Absent records
/// (the all-zero value) are left out, as in a store's snapshot.
pub fn read_db(s: &LiveSending, scale: &Scale, cl_id: u32, stop: &Stop) -> io::Result<BTreeMap<Key, Value>> {
    let mut db = BTreeMap::new();
    let mut asked: BTreeSet<Key> = BTreeSet::new();
    let socket = s.socket()?;
    loop {
        let new: Vec<Key> = implied_keys(scale, &db).difference(&asked).copied().collect();
        if new.is_empty() {
            return Ok(db);
        }
        for batch in new.chunks(READ_BATCH) {
            let done = one(s, &socket, cl_id, Txn::Read(batch.to_vec()), stop)?;
            for (k, v) in done.reads {
                if v != Value::ZERO {
                    db.insert(k, v);
                }
            }
        }
        asked.extend(new);
    }
}

/// A run of TPC-C terminals against a live switch or store.
#[derive(Clone, Debug)]
pub struct TerminalsConfig {
    pub sending: LiveSending,
    pub scale: Scale,
    pub clients: u32,
    /// Terminal i has client id `first_client_id + i` and warehouse
    /// `i mod warehouses + 1`.
    pub first_client_id: u32,
    pub seed: u64,
    pub duration: Duration,
    /// Commit attempts of one transaction before the terminal gives up.
    pub retry_limit: u32,
    /// One transaction type instead of the mix.
    pub only: Option<Kind>,
}

/// What a terminals run measured.
pub struct TerminalsResult {
    pub stats: TpccStats,
    /// The measured window.
    pub run: Duration,
    pub wall: Duration,
    pub net: HostStats,
}

/// Runs `cfg.clients` TPC-C terminals (each on its own socket, one event
/// loop in the calling thread) for `cfg.duration` or until `stop`.
pub fn run_terminals(cfg: &TerminalsConfig, stop: &Stop) -> io::Result<TerminalsResult> {
    let wall0 = Instant::now();
    let invalid = |m: String| io::Error::new(io::ErrorKind::InvalidInput, m);
    cfg.scale.validate().map_err(invalid)?;
    if cfg.clients == 0 || cfg.retry_limit == 0 {
        return Err(invalid("clients and retry limit must be at least 1".into()));
    }
    if cfg.first_client_id == 0 || cfg.first_client_id.checked_add(cfg.clients).is_none() {
        return Err(invalid("client ids must be in 1..u32::MAX: change the first client id".into()));
    }
    let s = &cfg.sending;
    let mut endpoints = vec![];
    for _ in 0..cfg.clients {
        endpoints.push((bind(bind_addr_for(s.target))?, HostOptions::upstream(s.target).with_delay(s.client_delay)));
    }
    // The simulator's derivation: one draw for the network, a fork per terminal.
    let mut root = Rng::new(cfg.seed);
    let _ = root.next_u64();
    let start = clock::now();
    let stop_at = start + cfg.duration;
    let mut hosts: Vec<TpccClient> = (0..cfg.clients)
        .map(|i| {
            let client = TxnClient::new(s.client(cfg.first_client_id + i, 1));
            let w = i % cfg.scale.warehouses + 1;
            let mut t =
                TpccClient::new(client, cfg.scale, w, root.fork(), cfg.retry_limit, Duration::ZERO, start, stop_at);
            t.only = cfg.only;
            t
        })
        .collect();
    let per_host = run_hosts(&mut hosts, endpoints, stop, Some(stop_at))?;
    let end = clock::now().min(stop_at);
    let mut stats = TpccStats::default();
    for h in &hosts {
        stats.merge(&h.stats);
    }
    let mut net = HostStats::default();
    for p in &per_host {
        net.merge(p);
    }
    Ok(TerminalsResult { stats, run: end.since(start), wall: wall0.elapsed(), net })
}

/// Checks that `cfg` asks for nothing the live runtime cannot do (link
/// faults and edge switches are simulator-only).
pub fn check_live(cfg: &TpccConfig) -> anyhow::Result<innet_txn::Mode> {
    cfg.validate().map_err(anyhow::Error::msg)?;
    anyhow::ensure!(cfg.edge_switches == 0, "--edge-switches: the live TPC-C point runs one switch");
    crate::txn_live::check_live(&cfg.network())
}

/// One point live: a store and a switch (mode `cfg.mode`, switch -> store
/// delay from RTT and delta) in this process on loopback, the store loaded
/// over the wire, `cfg.clients` terminals for `cfg.duration_s`, then the
/// store's CPU use over the run (CPU_PCT) and the database read back over
/// the wire through the consistency conditions.
pub fn run_point_live(cfg: &TpccConfig, stop: &Stop) -> anyhow::Result<TpccResult> {
    let mode = check_live(cfg)?;
    let net_cfg = cfg.network();
    let mut local = LocalConfig::new(mode);
    local.switch.cache_slots = cfg.cache_slots;
    local.switch.store_delay = net_cfg.switch_store_delay();
    let net = start_local(&local, stop)?;
    let mut sending = LiveSending::new(net.switch_addr());
    sending.timeout = net_cfg.timeout();
    // Client ids: terminals 1..=clients, the loader and reader above them.
    let loader = cfg.clients + 1;
    // Loading and reading back go straight to the store, from the socket
    // it takes requests from beside its switch.
    let direct = LiveSending { target: net.store_addr(), ..sending.clone() }.from_socket(net.operator()?);
    populate(&direct, &cfg.scale(), cfg.seed, loader, stop)?;
    crate::txn_live::store_cpu_pct(&net)?;
    let terminals = TerminalsConfig {
        sending: LiveSending { client_delay: net_cfg.client_switch_delay(), ..sending.clone() },
        scale: cfg.scale(),
        clients: cfg.clients,
        first_client_id: 1,
        seed: cfg.seed,
        duration: Duration::from_secs_f64(cfg.duration_s),
        retry_limit: cfg.retry_limit,
        only: cfg.only,
    };
    let r = run_terminals(&terminals, stop);
    let cpu = crate::txn_live::store_cpu_pct(&net);
    // Let requests still in flight land before reading the database back.
    std::thread::sleep(Duration::from_secs_f64(cfg.rtt_ms / 1e3 * 2.0 + 0.05));
    let snapshot = read_db(&direct, &cfg.scale(), loader, stop);
    let report = net.shutdown()?;
    let (r, cpu, snapshot) = (r?, cpu?, snapshot?);
    let store = &report.store.counters;
    Ok(record(
        cfg,
        TpccMeasured {
            runtime: crate::Runtime::Live,
            stats: &r.stats,
            snapshot: &snapshot,
            store_requests: store.requests,
            store_aborts: store.aborted,
            store_cpu_pct: cpu,
            store_packets: report.store.net.received,
            switch_counters: report.switch_counters.into_iter().collect(),
            run_seconds: r.run.as_secs_f64().max(1e-9),
            wall_seconds: r.wall.as_secs_f64(),
        },
    ))
}

/// `innet client tpcc --load`: TPC-C terminals against a running switch
/// (or store), after loading the store over the wire.
#[derive(Clone, Debug)]
pub struct ClientRun {
    pub sending: LiveSending,
    /// The store itself, if known: CPU_PCT queries and the read-back go
    /// there instead of through the switch.
    pub store: Option<SocketAddr>,
    /// Scale, terminals, seed, duration, `only` and retry limit; the
    /// network fields are not used (the deployment is the target's).
    pub point: TpccConfig,
    /// Terminal ids `first_client_id..first_client_id + clients`; the
    /// loader and reader use `first_client_id + clients`.
    pub first_client_id: u32,
    /// Write the initial database first (off: the store already holds a
    /// TPC-C database of this scale).
    pub populate: bool,
}

/// Runs `c`: populate, query the store's CPU (to start its window), run
/// the terminals, query the CPU again, read the database back and check
/// TPC-C's consistency conditions. The record's `mode` is "target" (the
/// switch's own) and its `rtt_ms` twice the emulated client delay.
pub fn client_run(c: &ClientRun, stop: &Stop) -> anyhow::Result<TpccResult> {
    let p = &c.point;
    p.scale().validate().map_err(anyhow::Error::msg)?;
    anyhow::ensure!(p.clients > 0, "--clients must be at least 1");
    let helper = c.first_client_id.checked_add(p.clients).filter(|&id| id != 0);
    let helper = helper.ok_or_else(|| anyhow::anyhow!("client ids overflow: lower --client-id"))?;
    let direct =
        LiveSending { target: c.store.unwrap_or(c.sending.target), client_delay: Duration::ZERO, ..c.sending.clone() };
    // The helper loads and reads back from one socket: a switch binds a
    // client id to the address of its first request, and refuses the id
    // from any other (a new socket for the read-back got BADREQ).
    let direct = match &direct.socket {
        Some(_) => direct,
        None => {
            let socket = bind(bind_addr_for(direct.target))?;
            direct.from_socket(socket)
        }
    };
    if c.populate {
        populate(&direct, &p.scale(), p.seed, helper, stop)?;
    }
    // A store started with --downstream must list this machine's socket.
    let probe = bind(bind_addr_for(direct.target))?;
    crate::txn_live::store_cpu_pct_from(&probe, direct.target)?;
    let terminals = TerminalsConfig {
        sending: c.sending.clone(),
        scale: p.scale(),
        clients: p.clients,
        first_client_id: c.first_client_id,
        seed: p.seed,
        duration: Duration::from_secs_f64(p.duration_s),
        retry_limit: p.retry_limit,
        only: p.only,
    };
    let r = run_terminals(&terminals, stop)?;
    let cpu = crate::txn_live::store_cpu_pct_from(&probe, direct.target)?;
    std::thread::sleep(c.sending.client_delay * 2 + c.sending.timeout.min(Duration::from_millis(200)));
    let snapshot = read_db(&direct, &p.scale(), helper, stop)?;
    let cfg = TpccConfig { mode: "target".into(), rtt_ms: c.sending.client_delay.as_secs_f64() * 2e3, ..p.clone() };
    Ok(record(
        &cfg,
        TpccMeasured {
            runtime: crate::Runtime::Live,
            stats: &r.stats,
            snapshot: &snapshot,
            store_requests: 0,
            store_aborts: 0,
            store_cpu_pct: cpu,
            store_packets: 0,
            switch_counters: Default::default(),
            run_seconds: r.run.as_secs_f64().max(1e-9),
            wall_seconds: r.wall.as_secs_f64(),
        },
    ))
}
