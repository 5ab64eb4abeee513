//! Closed-loop load on a live NetCRAQ chain through the batched generator
//! ([`innet_bench::loadgen`]): `innet client chain --load` and the chain side of
//! `innet bench chain-etcd`.
//!
//! Requests are NetCRAQ packets (`crates/wire/src/netcraq.rs`) followed by
//! the generator's 8-byte tag. The format ignores bytes after the value and
//! every node processes packets in place, so the tag comes back in the
//! READ_REPLY, ACK or WRITE_REFUSED, which is how the generator matches
//! replies (NetCRAQ has no request id). Puts go to the head (the first
//! address) and write a value unique to the request (client and sequence
//! number); gets go to node `client % nodes` (NetCRAQ: any node answers
//! clean objects). A WRITE_REFUSED (versions full, writes paused) is resent
//! after a back-off.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use innet_core::rng::Rng;
use innet_wire::netcraq::{self, CraqMsg, KvOp, Value};
use serde::Serialize;

use innet_bench::loadgen::{self, LoadConfig, LoadReport, Reply, Service, TAG_LEN};

/// Bytes of a request: the NetCRAQ packet and the tag.
pub const REQUEST_LEN: usize = netcraq::LEN + TAG_LEN;

/// Logical clients of `innet client chain --load` (one operation
/// outstanding each; the generator keeps a slot per client).
pub const LOAD_CLIENTS_MAX: u32 = 65_536;
/// Generator threads of `innet client chain --load`.
pub const LOAD_THREADS_MAX: usize = 64;
/// UDP sockets per generator thread of `innet client chain --load`.
pub const LOAD_SOCKETS_MAX: usize = 1_024;

#[derive(Clone, Debug, Serialize)]
pub struct ChainLoadConfig {
    pub clients: u32,
    /// Share of operations that are puts.
    pub write_ratio: f64,
    /// Keys `0..keys`.
    pub keys: u32,
    pub duration_s: f64,
    pub seed: u64,
    /// Resend after this long without a reply.
    pub timeout_ms: f64,
    pub threads: usize,
    pub sockets: usize,
}

impl ChainLoadConfig {
    pub fn new(clients: u32, write_ratio: f64, keys: u32, duration_s: f64) -> ChainLoadConfig {
        let l = LoadConfig::new(clients, vec![], Duration::ZERO);
        ChainLoadConfig {
            clients,
            write_ratio,
            keys,
            duration_s,
            seed: 1,
            timeout_ms: 200.0,
            threads: l.threads,
            sockets: l.sockets,
        }
    }

    /// Says what to change when a field is out of range.
    pub fn check(&self) -> Result<(), String> {
        crate::parse::within("--clients", self.clients, 1, LOAD_CLIENTS_MAX, "LOAD_CLIENTS_MAX")?;
        if !(0.0..=1.0).contains(&self.write_ratio) {
            return Err(format!("--write-ratio {} must be in 0..=1 (0: only gets, 1: only puts)", self.write_ratio));
        }
        let objects = innet_chain::netcraq::OBJECTS_DEFAULT;
        if self.keys == 0 || self.keys as usize > objects {
            return Err(format!(
                "--keys {} must be in 1..={objects} (a live chain holds {objects} objects)",
                self.keys
            ));
        }
        if !(self.duration_s > 0.2 && self.duration_s <= 86_400.0) {
            return Err(format!(
                "--duration-s {} must exceed the 0.1 s warm-up plus 0.1 s, and be at most a day (86400)",
                self.duration_s
            ));
        }
        if !(self.timeout_ms > 0.0 && self.timeout_ms.is_finite()) {
            return Err(format!("--timeout-ms {} must be positive", self.timeout_ms));
        }
        crate::parse::within("--threads", self.threads, 1, LOAD_THREADS_MAX, "LOAD_THREADS_MAX")?;
        crate::parse::within("--sockets", self.sockets, 1, LOAD_SOCKETS_MAX, "LOAD_SOCKETS_MAX")?;
        Ok(())
    }

    fn load(&self, targets: Vec<SocketAddr>) -> LoadConfig {
        LoadConfig {
            threads: self.threads,
            sockets: self.sockets,
            timeout: Duration::from_secs_f64(self.timeout_ms / 1e3),
            ..LoadConfig::new(self.clients, targets, Duration::from_secs_f64(self.duration_s))
        }
    }
}

/// The NetCRAQ request encoder and reply matcher of one generator thread.
pub struct ChainService {
    nodes: usize,
    write_ratio: f64,
    keys: u32,
    rng: Rng,
    /// Per key: the value of the last ACK this thread received.
    pub last_acked: BTreeMap<u32, Value>,
    pub reads: u64,
    pub writes: u64,
}

impl ChainService {
    pub fn new(nodes: usize, write_ratio: f64, keys: u32, rng: Rng) -> ChainService {
        ChainService { nodes, write_ratio, keys, rng, last_acked: BTreeMap::new(), reads: 0, writes: 0 }
    }
}

impl Service for ChainService {
    fn request(&mut self, client: u32, tag: u64, buf: &mut [u8]) -> (usize, usize) {
        let key = self.rng.below(self.keys as u64) as u32;
        let (msg, target) = if self.rng.chance(self.write_ratio) {
            (CraqMsg::write(key, tag_value(tag)), 0)
        } else {
            (CraqMsg::read(key), client as usize % self.nodes)
        };
        buf[netcraq::offset::KV_OP] = msg.op as u8;
        buf[netcraq::offset::KEY..netcraq::offset::VALUE].copy_from_slice(&msg.key.to_be_bytes());
        buf[netcraq::offset::VALUE..netcraq::LEN].copy_from_slice(&msg.value.0);
        buf[netcraq::LEN..REQUEST_LEN].copy_from_slice(&tag.to_be_bytes());
        (REQUEST_LEN, target)
    }

    fn reply(&mut self, reply: &[u8]) -> Reply {
        let (Ok(m), Some(t)) = (CraqMsg::decode(reply), reply.get(netcraq::LEN..REQUEST_LEN)) else {
            return Reply::Ignored;
        };
        let tag = u64::from_be_bytes(t.try_into().expect("8 bytes"));
        match m.op {
            KvOp::ReadReply => {
                self.reads += 1;
                Reply::Done(tag)
            }
            KvOp::Ack | KvOp::WriteReply => {
                self.writes += 1;
                self.last_acked.insert(m.key, m.value);
                Reply::Done(tag)
            }
            KvOp::WriteRefused => Reply::Refused(tag),
            KvOp::Read | KvOp::Write => Reply::Ignored,
        }
    }
}

/// The value a put with `tag` writes: the tag's client and sequence number
/// as a counter (unique per request, so ACKs match their version).
pub fn tag_value(tag: u64) -> Value {
    Value::from_counter(tag)
}

/// What `--load` measured, with the generator's ceiling beside it.
#[derive(Clone, Debug, Serialize)]
pub struct ChainLoadReport {
    pub config: ChainLoadConfig,
    pub nodes: Vec<SocketAddr>,
    pub load: LoadReport,
    pub reads: u64,
    pub writes: u64,
    /// The same generator against a bare UDP echo.
    pub ceiling: LoadReport,
    pub generator_bound: bool,
    /// Per key, the value of the last ACK received (one client: the
    /// chain's value at the end).
    #[serde(serialize_with = "values_as_text")]
    pub last_acked: BTreeMap<u32, Value>,
}

fn run_services(nodes: &[SocketAddr], cfg: &ChainLoadConfig) -> io::Result<(LoadReport, Vec<ChainService>)> {
    cfg.check().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let mut rng = Rng::new(cfg.seed);
    let services =
        (0..cfg.threads).map(|_| ChainService::new(nodes.len(), cfg.write_ratio, cfg.keys, rng.fork())).collect();
    loadgen::run(&cfg.load(nodes.to_vec()), services)
}

/// Runs the load against the chain at `nodes` (head first), without the
/// ceiling (for benchmarks that measure it separately).
pub fn run_without_ceiling(nodes: &[SocketAddr], cfg: &ChainLoadConfig) -> io::Result<LoadReport> {
    Ok(run_services(nodes, cfg)?.0)
}

/// Runs the load against the chain at `nodes` (head first), then the
/// ceiling.
pub fn run(nodes: &[SocketAddr], cfg: &ChainLoadConfig) -> io::Result<ChainLoadReport> {
    let (load, services) = run_services(nodes, cfg)?;
    let ceiling = loadgen::ceiling(&cfg.load(nodes.to_vec()), REQUEST_LEN)?;
    let mut last_acked = BTreeMap::new();
    let (mut reads, mut writes) = (0, 0);
    for s in services {
        last_acked.extend(s.last_acked);
        reads += s.reads;
        writes += s.writes;
    }
    Ok(ChainLoadReport {
        config: cfg.clone(),
        nodes: nodes.to_vec(),
        generator_bound: loadgen::generator_bound(load.ops_per_s, ceiling.ops_per_s),
        load,
        reads,
        writes,
        ceiling,
        last_acked,
    })
}

fn values_as_text<S: serde::Serializer>(m: &BTreeMap<u32, Value>, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = s.serialize_map(Some(m.len()))?;
    for (k, v) in m {
        map.serialize_entry(&k.to_string(), &*String::from_utf8_lossy(v.trimmed()))?;
    }
    map.end()
}
