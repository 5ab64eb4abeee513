//! Topology files: one TOML format for the deployments of all three
//! services, so the same file and the same binary start a deployment in the
//! simulator, live on one machine or many (`--only NAME` on each), on the
//! XDP namespace testbed and in Mininet.
//!
//! A file names nodes, their roles and where they listen, links with
//! one-way delays, and the service's settings; the service's own `deploy`
//! module derives every table (ports, multicast groups) from the roles. The
//! format is documented in `docs/live.md`; a file of the first format (a
//! store and a switch, `examples/topology-txn.toml`) is a file of this one.
//!
//! ```toml
//! service = "txn"                  # optional: follows from the roles
//!
//! [[node]]
//! name = "store"
//! role = "store"
//! listen = "127.0.0.1:9001"
//!
//! [[node]]
//! name = "edge0"
//! role = "switch"
//! mode = "optimistic-abort"
//! upstream = "core"
//!
//! [[node]]
//! name = "clients0"
//! role = "clients"                 # a group of `count` clients on one machine
//! count = 4
//! upstream = "edge0"
//!
//! [[link]]
//! a = "edge0"
//! b = "core"
//! delay_ms = 5.0
//! ```
//!
//! Every mistake is reported with the line it is on and what to change.

#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use innet_chain::control::ControlConfig;
use innet_chain::deploy::{self as chain_deploy, ChainDeployment, ChainRole};
use innet_chain::netcraq::{OBJECTS_DEFAULT, OBJECTS_MAX, VERSIONS_DEFAULT, VERSIONS_MAX};
use innet_chain::Protocol;
use innet_core::auth::AuthKeys;
use innet_core::deploy::{DataPlaneAt, Deployment, NodeIx};
use innet_core::limits::{CLIENTS_MAX, PROPOSERS_MAX, TABLE_SLOTS_MAX};
use innet_paxos::deploy::{self as paxos_deploy, PaxosDeployment, PaxosParams, PaxosRole};
use innet_txn::deploy::{self as txn_deploy, SwitchSpec, TxnDeployment, TxnRole};
use innet_txn::switch::CACHE_SLOTS_DEFAULT;
use innet_txn::Mode;
use innet_wire::netchain::MAX_CHAIN_NODES;
use serde::{Deserialize, Serialize};
use toml::Spanned;

/// What is wrong with a topology file, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopologyError(pub String);

impl std::fmt::Display for TopologyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TopologyError {}

type Result<T> = std::result::Result<T, TopologyError>;

/// One `[[node]]` table as written.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub name: String,
    pub role: String,
    /// HOST:PORT to bind.
    pub listen: Option<String>,
    /// HOST:PORT other nodes use to reach this one (default: `listen`).
    pub address: Option<String>,
    /// Nodes with the same machine run in one process / namespace / host.
    pub machine: Option<String>,
    /// Store: directory of the durable database (in memory if absent).
    pub data_dir: Option<PathBuf>,
    /// Store: honour the `reset` flag (clear the store), as the reference
    /// store does; default false (such a request is answered BADREQ).
    pub allow_reset: Option<bool>,
    /// Switch: forward, read-cache, early-abort or optimistic-abort.
    pub mode: Option<String>,
    /// Switch, clients: the node (by name) requests go to.
    pub upstream: Option<String>,
    /// Switch: one-way switch <-> upstream delay, in ms (the link's delay).
    pub store_delay_ms: Option<f64>,
    /// Switch: one-way delay to emulate towards clients that are not in the
    /// file (started by hand), in ms.
    pub client_delay_ms: Option<f64>,
    /// Switch: cache slots (a power of two >= 4).
    pub cache_slots: Option<usize>,
    /// Clients: how many.
    pub count: Option<u32>,
    /// Clients: one-way client <-> upstream delay, in ms.
    pub delay_ms: Option<f64>,
    /// Acceptor, learner: its id (default: its order among its kind).
    pub id: Option<u16>,
}

/// One `[[link]]` table.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    pub a: String,
    pub b: String,
    #[serde(default)]
    pub delay_ms: f64,
}

/// `[paxos]`: the consensus service's settings.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PaxosSettings {
    /// Where the coordinator and acceptors run: switch or process. Read as
    /// text and parsed by [`Topology::load`] into
    /// [`PaxosTopology::data_plane`], so a bad name gets a one-line error
    /// naming `[paxos] data_plane` (serde's TOML error spans lines).
    pub data_plane: String,
    pub slots: usize,
    pub trim_quorum: usize,
    pub ordered: bool,
    pub proposer_timeout_ms: f64,
    pub gap_timeout_ms: f64,
    pub heartbeat_ms: f64,
}

impl Default for PaxosSettings {
    fn default() -> Self {
        let p = PaxosParams::default();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        PaxosSettings {
            data_plane: DataPlaneAt::Switch.name().into(),
            slots: p.slots,
            trim_quorum: p.trim_quorum,
            ordered: p.ordered,
            proposer_timeout_ms: ms(p.proposer_timeout),
            gap_timeout_ms: ms(p.gap_timeout),
            heartbeat_ms: ms(p.heartbeat),
        }
    }
}

/// `[chain]`: the chain service's settings.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ChainSettings {
    pub protocol: String,
    pub objects: usize,
    pub versions: usize,
    /// NetChain keys installed at start (`0..keys`).
    pub keys: u32,
    pub heartbeat_ms: f64,
    pub failure_timeout_ms: f64,
    pub drain_ms: f64,
    /// `--auth-key` for the whole deployment: a key file (relative to the
    /// topology file's folder), read and checked when the topology is.
    pub auth_key: Option<PathBuf>,
}

impl Default for ChainSettings {
    fn default() -> Self {
        ChainSettings {
            protocol: Protocol::NetCraq.name().into(),
            objects: OBJECTS_DEFAULT,
            versions: VERSIONS_DEFAULT,
            keys: 64,
            heartbeat_ms: 5.0,
            failure_timeout_ms: 50.0,
            drain_ms: 20.0,
            auth_key: None,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    service: Option<Spanned<String>>,
    #[serde(default)]
    fabric_delay_ms: Option<f64>,
    /// `--auth-key` for every node: a key file (relative paths from the
    /// topology file's directory).
    auth_key: Option<PathBuf>,
    paxos: Option<Spanned<PaxosSettings>>,
    chain: Option<Spanned<ChainSettings>>,
    #[serde(rename = "node", default)]
    nodes: Vec<Spanned<NodeSpec>>,
    #[serde(rename = "link", default)]
    links: Vec<Spanned<LinkSpec>>,
}

/// Where and how a deployment node runs on a real network.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Placement {
    /// HOST:PORT to bind (`None`: a free port on loopback).
    pub listen: Option<String>,
    /// HOST:PORT others reach it at (default: `listen`).
    pub address: Option<String>,
    pub data_dir: Option<PathBuf>,
    /// A store honours the `reset` flag.
    pub allow_reset: bool,
    /// A switch's emulated one-way delay towards peers not in the file.
    pub downstream_delay: Duration,
    /// The line of the node's table in the file (0: not from a file).
    pub line: usize,
}

/// The consensus service of a topology.
#[derive(Clone, Debug, PartialEq)]
pub struct PaxosTopology {
    pub deployment: PaxosDeployment,
    pub params: PaxosParams,
    pub data_plane: DataPlaneAt,
}

/// The chain service of a topology.
#[derive(Clone, Debug, PartialEq)]
pub struct ChainTopology {
    pub deployment: ChainDeployment,
    pub protocol: Protocol,
    pub objects: usize,
    pub versions: usize,
    pub keys: u32,
    pub control: ControlConfig,
    /// `auth_key`: every datagram between the chain's nodes and between
    /// the control plane and them is sealed and checked.
    pub auth: Option<AuthKeys>,
}

/// A topology's service and its deployment.
#[derive(Clone, Debug, PartialEq)]
pub enum Service {
    Txn(TxnDeployment),
    Paxos(PaxosTopology),
    Chain(ChainTopology),
}

impl Service {
    pub fn name(&self) -> &'static str {
        match self {
            Service::Txn(_) => txn_deploy::SERVICE,
            Service::Paxos(_) => paxos_deploy::SERVICE,
            Service::Chain(_) => chain_deploy::SERVICE,
        }
    }
}

/// Most slots of an acceptor's ring a file asks for (`[paxos] slots`).
pub const PAXOS_SLOTS_MAX: usize = 1 << 20;

/// The first port [`Topology::place`] gives nodes whose file gives them
/// none: node `i` gets this + `i`.
pub const PLACED_PORT_BASE: u16 = 20000;

/// A parsed, checked topology: the deployment and where each node runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Topology {
    pub service: Service,
    /// One per deployment node, in node order.
    pub places: Vec<Placement>,
    /// The nodes' key file (`auth_key`, as `--auth-key FILE`): every
    /// datagram between them carries its MAC trailer (transactions: between
    /// store and switches, clients unsealed; Paxos: between every node).
    pub auth_key: Option<PathBuf>,
}

/// Every role a file may name, per service.
const TXN_ROLES: [&str; 3] = ["store", "switch", "clients"];
const PAXOS_ROLES: [&str; 5] = ["coordinator", "acceptor", "backup", "learner", "proposer"];
const CHAIN_ROLES: [&str; 3] = ["node", "control", "clients"];

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1
}

fn ms(field: &str, v: f64) -> std::result::Result<Duration, String> {
    // Beyond a day a delay is a typo, and Duration::from_secs_f64 panics on
    // values it cannot hold.
    if !(v.is_finite() && (0.0..=86_400_000.0).contains(&v)) {
        return Err(format!("{field} = {v:?} must be a number of milliseconds from 0 to 86400000"));
    }
    Ok(Duration::from_secs_f64(v / 1e3))
}

/// Fields a role may carry, beyond name/role/listen/address/machine.
fn allowed_fields(service: &str, role: &str) -> &'static [&'static str] {
    match (service, role) {
        ("txn", "store") => &["data_dir", "allow_reset"],
        ("txn", "switch") => &["mode", "upstream", "store_delay_ms", "client_delay_ms", "cache_slots"],
        ("txn", "clients") | ("chain", "clients") => &["count", "upstream", "delay_ms"],
        ("paxos", "acceptor") | ("paxos", "learner") | ("chain", "node") => &["id"],
        _ => &[],
    }
}

fn set_fields(n: &NodeSpec) -> Vec<&'static str> {
    let mut v = vec![];
    let mut f = |name: &'static str, set: bool| {
        if set {
            v.push(name);
        }
    };
    f("data_dir", n.data_dir.is_some());
    f("allow_reset", n.allow_reset.is_some());
    f("mode", n.mode.is_some());
    f("upstream", n.upstream.is_some());
    f("store_delay_ms", n.store_delay_ms.is_some());
    f("client_delay_ms", n.client_delay_ms.is_some());
    f("cache_slots", n.cache_slots.is_some());
    f("count", n.count.is_some());
    f("delay_ms", n.delay_ms.is_some());
    f("id", n.id.is_some());
    v
}

/// Resolves the service: given, or the one whose roles the nodes use.
fn service_of(file: &File, text: &str) -> Result<String> {
    if let Some(s) = &file.service {
        let name = s.get_ref().as_str();
        if !["txn", "paxos", "chain"].contains(&name) {
            return Err(TopologyError(format!(
                "line {}: service = \"{name}\" is not a service: use \"txn\", \"paxos\" or \"chain\"",
                line_of(text, s.span().start)
            )));
        }
        return Ok(name.to_string());
    }
    let roles: Vec<&str> = file.nodes.iter().map(|n| n.get_ref().role.as_str()).collect();
    let fits = |set: &[&str]| roles.iter().all(|r| set.contains(r));
    match (fits(&TXN_ROLES), fits(&PAXOS_ROLES), fits(&CHAIN_ROLES)) {
        (true, false, _) if roles.iter().any(|r| *r != "clients") => Ok("txn".into()),
        (false, true, false) => Ok("paxos".into()),
        (false, false, true) => Ok("chain".into()),
        _ => Err(TopologyError(
            "cannot tell the service from the roles: add `service = \"txn\"`, \"paxos\" or \"chain\" at the top".into(),
        )),
    }
}

/// A transaction node's upstream as its table names it: (line, node, its
/// table's name, the upstream's name, the link's delay).
type Upstream = (usize, usize, String, String, Duration);

struct Builder {
    service: String,
    specs: Vec<(usize, NodeSpec)>,
}

impl Builder {
    fn err<T>(&self, line: usize, what: impl std::fmt::Display) -> Result<T> {
        Err(TopologyError(format!("line {line}: {what}")))
    }

    /// A client group's `count`, checked alone and, added to `clients`
    /// (the groups before it), against [`CLIENTS_MAX`]: the flags' limit
    /// holds for the whole file.
    fn client_count(&self, line: usize, n: &NodeSpec, clients: &mut u32) -> Result<u32> {
        let count = n.count.unwrap_or(1);
        if count == 0 || count > CLIENTS_MAX {
            return self.err(
                line,
                format!(
                    "clients '{}': count = {count} must be from 1 to {CLIENTS_MAX} (the limit CLIENTS_MAX)",
                    n.name
                ),
            );
        }
        *clients = clients.saturating_add(count);
        if *clients > CLIENTS_MAX {
            return self.err(
                line,
                format!(
                    "clients '{}': the file's client groups hold {} clients so far; a deployment has at most \
                     {CLIENTS_MAX} (the limit CLIENTS_MAX, as --clients)",
                    n.name, *clients
                ),
            );
        }
        Ok(count)
    }

    /// Checks names, roles and which fields each role may carry.
    fn check_nodes(&self) -> Result<()> {
        if self.specs.is_empty() {
            return Err(TopologyError("no nodes: add at least one [[node]] table".into()));
        }
        let roles: &[&str] = match self.service.as_str() {
            "txn" => &TXN_ROLES,
            "paxos" => &PAXOS_ROLES,
            _ => &CHAIN_ROLES,
        };
        for (i, (line, n)) in self.specs.iter().enumerate() {
            if n.name.is_empty() || n.name.contains(char::is_whitespace) {
                return self.err(*line, format!("node name '{}' must be non-empty, without spaces", n.name));
            }
            if let Some((l, _)) = self.specs[..i].iter().find(|(_, m)| m.name == n.name) {
                return self.err(*line, format!("node name '{}' is used twice (also on line {l}): rename one", n.name));
            }
            if !roles.contains(&n.role.as_str()) {
                return self.err(
                    *line,
                    format!(
                        "node '{}': role '{}' is not a {} role; use one of: {}",
                        n.name,
                        n.role,
                        self.service,
                        roles.join(", ")
                    ),
                );
            }
            let allowed = allowed_fields(&self.service, &n.role);
            if let Some(f) = set_fields(n).into_iter().find(|f| !allowed.contains(f)) {
                let takers: Vec<String> =
                    roles.iter().filter(|r| allowed_fields(&self.service, r).contains(&f)).map(|r| plural(r)).collect();
                let who =
                    if takers.is_empty() { "no role".to_string() } else { format!("only {}", takers.join(" and ")) };
                return self.err(*line, format!("{} '{}' has `{f}`, which {who} take", n.role, n.name,));
            }
            for (field, addr) in [("listen", &n.listen), ("address", &n.address)] {
                if let Some(a) = addr {
                    check_addr(a)
                        .map_err(|e| TopologyError(format!("line {line}: node '{}': {field}: {e}", n.name)))?;
                }
            }
        }
        Ok(())
    }

    fn delay(&self, line: usize, node: &str, field: &str, v: Option<f64>) -> Result<Duration> {
        ms(field, v.unwrap_or(0.0)).map_err(|e| TopologyError(format!("line {line}: node '{node}': {e}")))
    }

    fn place(&self, line: usize, n: &NodeSpec, downstream_delay: Duration) -> Placement {
        Placement {
            listen: n.listen.clone(),
            address: n.address.clone(),
            data_dir: n.data_dir.clone(),
            allow_reset: n.allow_reset.unwrap_or(false),
            downstream_delay,
            line,
        }
    }

    /// The node named `name`, or an error on `line` naming the choices.
    fn named<R>(&self, d: &Deployment<R>, line: usize, field: &str, name: &str) -> Result<NodeIx> {
        d.find(name).ok_or_else(|| {
            TopologyError(format!(
                "line {line}: {field} '{name}' is not a node of this file; nodes: {}",
                self.specs.iter().map(|(_, n)| n.name.as_str()).collect::<Vec<_>>().join(", ")
            ))
        })
    }

    fn txn(&self, links: &[(usize, LinkSpec)]) -> Result<(TxnDeployment, Vec<Placement>)> {
        let mut d: TxnDeployment = Deployment::new(txn_deploy::SERVICE);
        let mut places = vec![];
        let mut clients = 0u32;
        let mut ups: Vec<Upstream> = vec![];
        for (line, n) in &self.specs {
            let line = *line;
            match n.role.as_str() {
                "store" => {
                    txn_deploy::add(&mut d, n.name.clone(), TxnRole::Store);
                    places.push(self.place(line, n, Duration::ZERO));
                }
                "switch" => {
                    let i = txn_deploy::add(&mut d, n.name.clone(), TxnRole::Switch(self.switch_spec(line, n)?));
                    let down = self.delay(line, &n.name, "client_delay_ms", n.client_delay_ms)?;
                    places.push(self.place(line, n, down));
                    let up = n.upstream.clone().ok_or_else(|| {
                        TopologyError(format!(
                            "line {line}: switch '{}' needs `upstream` (a switch or the store)",
                            n.name
                        ))
                    })?;
                    let delay = self.delay(line, &n.name, "store_delay_ms", n.store_delay_ms)?;
                    ups.push((line, i, n.name.clone(), up, delay));
                }
                _ => {
                    let count = self.client_count(line, n, &mut clients)?;
                    let up = n.upstream.clone().ok_or_else(|| {
                        TopologyError(format!(
                            "line {line}: clients '{}' need `upstream` (a switch or the store)",
                            n.name
                        ))
                    })?;
                    let delay = self.delay(line, &n.name, "delay_ms", n.delay_ms)?;
                    for c in 0..count {
                        let i = txn_deploy::add(&mut d, format!("{}.{c}", n.name), TxnRole::Client);
                        d.nodes[i].machine = Some(n.name.clone());
                        places.push(Placement { line, ..Placement::default() });
                        ups.push((line, i, n.name.clone(), up.clone(), delay));
                    }
                }
            }
            if let Some(m) = &n.machine {
                let last = d.nodes.len() - 1;
                if n.role != "clients" {
                    d.nodes[last].machine = Some(m.clone());
                }
            }
        }
        self.upstreams(&mut d, ups)?;
        self.links(&mut d, links)?;
        txn_deploy::validate(&d).map_err(|e| TopologyError(e.0))?;
        Ok((d, places))
    }

    /// A transaction switch's `mode` (required) and `cache_slots` (a power
    /// of two within the table's limits).
    fn switch_spec(&self, line: usize, n: &NodeSpec) -> Result<SwitchSpec> {
        let mode: Mode = n
            .mode
            .as_deref()
            .ok_or_else(|| {
                TopologyError(format!(
                    "line {line}: switch '{}' needs `mode` (forward, read-cache, early-abort, optimistic-abort)",
                    n.name
                ))
            })?
            .parse()
            .map_err(|e: String| TopologyError(format!("line {line}: switch '{}': {e}", n.name)))?;
        let cache_slots = n.cache_slots.unwrap_or(CACHE_SLOTS_DEFAULT);
        if cache_slots < innet_core::table::WAYS || !cache_slots.is_power_of_two() || cache_slots > TABLE_SLOTS_MAX {
            return self.err(
                line,
                format!(
                    "switch '{}': cache_slots = {cache_slots} must be a power of two from {} to {} \
                             (the limit TABLE_SLOTS_MAX)",
                    n.name,
                    innet_core::table::WAYS,
                    TABLE_SLOTS_MAX
                ),
            );
        }
        Ok(SwitchSpec { mode, cache_slots })
    }

    /// Sets each transaction node's upstream (`ups`: line, node, its
    /// table's name, the upstream's name, the link's delay), linking the
    /// two; an upstream must be another node, and not a client.
    fn upstreams(&self, d: &mut TxnDeployment, ups: Vec<Upstream>) -> Result<()> {
        for (line, i, table, up, delay) in ups {
            if up == table {
                return self.err(line, format!("'{table}' is its own upstream: name the next switch or the store"));
            }
            let u = self.named(d, line, "upstream", &up)?;
            if d.nodes[u].role.is_client() {
                return self.err(
                    line,
                    format!("'{}': upstream '{up}' is a client; name a switch or the store", d.nodes[i].name),
                );
            }
            d.set_upstream(i, u);
            d.link(i, u, delay);
        }
        Ok(())
    }

    /// Applies `[[link]]` tables: each sets the delay of a link the roles
    /// imply (a node and its upstream), or adds one.
    fn links<R>(&self, d: &mut Deployment<R>, links: &[(usize, LinkSpec)]) -> Result<()> {
        for (line, l) in links {
            let a = self.named(d, *line, "link end", &l.a)?;
            let b = self.named(d, *line, "link end", &l.b)?;
            if a == b {
                return self.err(*line, format!("link joins '{}' to itself", l.a));
            }
            let delay = ms("delay_ms", l.delay_ms).map_err(|e| TopologyError(format!("line {line}: link: {e}")))?;
            d.link(a, b, delay);
        }
        Ok(())
    }

    fn paxos(&self, links: &[(usize, LinkSpec)], fabric: Duration) -> Result<(PaxosDeployment, Vec<Placement>)> {
        let mut d: PaxosDeployment = Deployment::new(paxos_deploy::SERVICE);
        d.fabric = Some(fabric);
        let mut places = vec![];
        let (mut acceptors, mut learners, mut proposers) = (0u16, 0u16, 0u16);
        for (line, n) in &self.specs {
            let role = match n.role.as_str() {
                "coordinator" => PaxosRole::Coordinator,
                "backup" => PaxosRole::Backup,
                // Ids count from 0 in file order; a file too long for a u16 is
                // refused below (the deployment's limits are far lower).
                "acceptor" => {
                    acceptors = acceptors.saturating_add(1);
                    PaxosRole::Acceptor { id: n.id.unwrap_or(acceptors.saturating_sub(1)) }
                }
                "learner" => {
                    learners = learners.saturating_add(1);
                    PaxosRole::Learner { id: n.id.unwrap_or(learners.saturating_sub(1)) }
                }
                _ => {
                    proposers = proposers.saturating_add(1);
                    PaxosRole::Proposer { index: proposers.saturating_sub(1) }
                }
            };
            let i = paxos_deploy::add(&mut d, n.name.clone(), role);
            d.nodes[i].machine = n.machine.clone();
            places.push(self.place(*line, n, Duration::ZERO));
        }
        if usize::from(proposers) > PROPOSERS_MAX {
            return Err(TopologyError(format!(
                "{proposers} proposers: at most {PROPOSERS_MAX} (the limit PROPOSERS_MAX, as --proposers)"
            )));
        }
        paxos_deploy::wire(&mut d, proposers == 0);
        self.links(&mut d, links)?;
        paxos_deploy::validate(&d).map_err(|e| TopologyError(e.0))?;
        Ok((d, places))
    }

    /// A chain topology: its `[chain]` settings `s` (with the top level's
    /// `auth_key`, which may not also be in `[chain]`) and its deployment.
    fn chain_service(
        &self,
        mut s: ChainSettings,
        top_auth_key: Option<&Path>,
        links: &[(usize, LinkSpec)],
        fabric: Duration,
        folder: Option<&Path>,
    ) -> Result<(ChainTopology, Vec<Placement>)> {
        // A chain's key file: at the top level (as for the other
        // services) or in its [chain] table, not both.
        if let Some(k) = top_auth_key {
            if s.auth_key.is_some() {
                return Err(TopologyError("auth_key given twice (at the top level and in [chain]): keep one".into()));
            }
            s.auth_key = Some(k.to_path_buf());
        }
        let protocol: Protocol = s.protocol.parse().map_err(|e| TopologyError(format!("[chain] protocol: {e}")))?;
        let (d, p) = self.chain(protocol, links, fabric)?;
        Ok((chain_settings(&s, protocol, d, folder)?, p))
    }

    fn chain(
        &self,
        protocol: Protocol,
        links: &[(usize, LinkSpec)],
        fabric: Duration,
    ) -> Result<(ChainDeployment, Vec<Placement>)> {
        // Chain nodes first, in chain order (their index), then the control
        // plane and clients, as the chain's description has them.
        let mut nodes: Vec<(usize, &NodeSpec, usize)> = vec![];
        let mut next = 0usize;
        for (line, n) in self.specs.iter().filter(|(_, n)| n.role == "node") {
            let index = n.id.map_or(next, usize::from);
            next = index.saturating_add(1);
            nodes.push((*line, n, index));
        }
        if nodes.len() > MAX_CHAIN_NODES {
            return Err(TopologyError(format!(
                "{} chain nodes: a chain has at most {MAX_CHAIN_NODES} (the limit MAX_CHAIN_NODES, as --nodes: \
                 NetChain's address stack)",
                nodes.len()
            )));
        }
        nodes.sort_by_key(|(_, _, i)| *i);
        for (pos, (line, n, index)) in nodes.iter().enumerate() {
            if *index != pos {
                return self.err(
                    *line,
                    format!("chain node '{}': ids must be 0..{} without gaps or repeats", n.name, nodes.len()),
                );
            }
        }
        let mut d: ChainDeployment = Deployment::new(chain_deploy::SERVICE);
        d.fabric = Some(fabric);
        let mut places = vec![];
        let mut clients = 0u32;
        for (line, n, index) in &nodes {
            let i = d.add(n.name.clone(), ChainRole::Node { index: *index }, ChainRole::Node { index: 0 }.shape());
            d.nodes[i].machine = n.machine.clone();
            places.push(self.place(*line, n, Duration::ZERO));
        }
        for a in 0..nodes.len() {
            for b in a + 1..nodes.len() {
                d.link(a, b, Duration::ZERO);
            }
        }
        for (line, n) in self.specs.iter().filter(|(_, n)| n.role != "node") {
            if n.role == "control" {
                let i = d.add(n.name.clone(), ChainRole::Control, ChainRole::Control.shape());
                d.nodes[i].machine = n.machine.clone();
                places.push(self.place(*line, n, Duration::ZERO));
            } else {
                let count = self.client_count(*line, n, &mut clients)?;
                if n.upstream.is_some() || n.delay_ms.is_some() {
                    return self.err(
                        *line,
                        format!("chain clients '{}' reach every node: drop `upstream` and `delay_ms`", n.name),
                    );
                }
                for c in 0..count {
                    let i = chain_deploy::add_client(&mut d, format!("{}.{c}", n.name));
                    d.nodes[i].machine = Some(n.machine.clone().unwrap_or_else(|| n.name.clone()));
                    places.push(Placement { line: *line, ..Placement::default() });
                }
            }
        }
        chain_deploy::apply(&mut d, protocol, &chain_deploy::initial_layout(nodes.len()));
        self.links(&mut d, links)?;
        chain_deploy::validate(&d).map_err(|e| TopologyError(e.0))?;
        Ok((d, places))
    }
}

fn plural(role: &str) -> String {
    match role {
        "switch" => "switches".into(),
        r if r.ends_with('s') => r.into(),
        r => format!("{r}s"),
    }
}

/// Checks that `s` is HOST:PORT with a numeric port.
fn check_addr(s: &str) -> std::result::Result<(), String> {
    let (host, port) = s.rsplit_once(':').ok_or_else(|| format!("'{s}' is not HOST:PORT (e.g. 127.0.0.1:9000)"))?;
    if host.is_empty() {
        return Err(format!("'{s}' has no host: write HOST:PORT, e.g. 127.0.0.1:9000"));
    }
    port.parse::<u16>().map_err(|_| format!("'{s}': the port must be a number from 0 to 65535"))?;
    Ok(())
}

/// Refuses a `[paxos]` or `[chain]` table in another service's topology,
/// and `fabric_delay_ms` in a transaction topology (its delays are per
/// link).
fn check_service_tables(file: &File, text: &str, service: &str) -> Result<()> {
    for (name, table, line) in [
        ("paxos", file.paxos.is_some(), file.paxos.as_ref().map(|s| line_of(text, s.span().start))),
        ("chain", file.chain.is_some(), file.chain.as_ref().map(|s| line_of(text, s.span().start))),
    ] {
        if table && service != name {
            return Err(TopologyError(format!(
                "line {}: a [{name}] table in a {service} topology: remove it",
                line.unwrap_or(0)
            )));
        }
    }
    if service == "txn" && file.fabric_delay_ms.is_some() {
        return Err(TopologyError("fabric_delay_ms: a transaction topology gives its delays per link".into()));
    }
    Ok(())
}

impl Topology {
    /// Parses and checks a topology.
    pub fn parse(text: &str) -> Result<Topology> {
        Topology::parse_in(text, None)
    }

    /// Parses and checks a topology whose relative paths (`auth_key`) are
    /// relative to `folder` (`None`: to the working directory).
    pub fn parse_in(text: &str, folder: Option<&Path>) -> Result<Topology> {
        let file: File = toml::from_str(text).map_err(|e| TopologyError(format!("bad topology: {e}")))?;
        if file.nodes.is_empty() {
            return Err(TopologyError("no nodes: add at least one [[node]] table".into()));
        }
        let service = service_of(&file, text)?;
        let specs: Vec<(usize, NodeSpec)> =
            file.nodes.iter().map(|n| (line_of(text, n.span().start), n.get_ref().clone())).collect();
        let links: Vec<(usize, LinkSpec)> =
            file.links.iter().map(|l| (line_of(text, l.span().start), l.get_ref().clone())).collect();
        let b = Builder { service: service.clone(), specs };
        b.check_nodes()?;
        let fabric = ms("fabric_delay_ms", file.fabric_delay_ms.unwrap_or(0.0)).map_err(TopologyError)?;
        check_service_tables(&file, text, &service)?;
        let (service, places) = match service.as_str() {
            "txn" => {
                let (d, p) = b.txn(&links)?;
                (Service::Txn(d), p)
            }
            "paxos" => {
                let s = file.paxos.map(|s| s.into_inner()).unwrap_or_default();
                let data_plane: DataPlaneAt =
                    s.data_plane.parse().map_err(|e| TopologyError(format!("[paxos] data_plane: {e}")))?;
                if data_plane == DataPlaneAt::Xdp {
                    return Err(TopologyError(
                        "[paxos] data_plane = \"xdp\": choose switch or process here; the XDP testbed is `innet testbed up`".into(),
                    ));
                }
                let params = paxos_params(&s)?;
                let (d, p) = b.paxos(&links, fabric)?;
                let learners = d.with_role(|r| matches!(r, PaxosRole::Learner { .. })).len();
                if params.trim_quorum > learners {
                    return Err(TopologyError(format!(
                        "[paxos] trim_quorum = {} exceeds the {learners} learners (as --trim-quorum): at most {learners}",
                        params.trim_quorum
                    )));
                }
                (Service::Paxos(PaxosTopology { deployment: d, params, data_plane }), p)
            }
            _ => {
                let chain = file.chain.map(|s| s.into_inner()).unwrap_or_default();
                let (t, p) = b.chain_service(chain, file.auth_key.as_deref(), &links, fabric, folder)?;
                (Service::Chain(t), p)
            }
        };
        let auth_key = file.auth_key.map(|k| folder.map_or_else(|| k.clone(), |d| d.join(&k)));
        Ok(Topology { service, places, auth_key })
    }

    pub fn load(path: &Path) -> Result<Topology> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| TopologyError(format!("cannot read topology file {}: {e}", path.display())))?;
        Topology::parse_in(&text, path.parent()).map_err(|e| TopologyError(format!("{}: {e}", path.display())))
    }

    fn nodes(&self) -> &dyn NodeList {
        match &self.service {
            Service::Txn(d) => d,
            Service::Paxos(p) => &p.deployment,
            Service::Chain(c) => &c.deployment,
        }
    }

    /// Every node's name, in node order.
    pub fn names(&self) -> Vec<String> {
        self.nodes().names()
    }

    /// Every node's machine, in node order.
    pub fn machines(&self) -> Vec<String> {
        self.nodes().machines()
    }

    /// The nodes `--only NAME` starts: the node named so, or every node of
    /// the machine named so (a client group).
    pub fn select(&self, only: &str) -> Result<Vec<NodeIx>> {
        let names = self.names();
        let machines = self.machines();
        let picked: Vec<NodeIx> = match names.iter().position(|n| n == only) {
            Some(i) => vec![i],
            None => (0..names.len()).filter(|&i| machines[i] == only).collect(),
        };
        if picked.is_empty() {
            let mut choices: Vec<&str> = names.iter().map(String::as_str).collect();
            for m in &machines {
                if !choices.contains(&m.as_str()) {
                    choices.push(m);
                }
            }
            return Err(TopologyError(format!(
                "no node or machine named '{only}'; choose one of: {}",
                choices.join(", ")
            )));
        }
        Ok(picked)
    }

    /// Places every node of each named machine on that machine's IP
    /// address: it binds there and others reach it there, on the port the
    /// file gives it (`listen`, else `address`), or on
    /// [`PLACED_PORT_BASE`] + its node index when the file gives none (so
    /// nodes on other machines can find it). What a file written for one
    /// machine's loopback needs to run on hosts of their own (`--place`;
    /// `innet mininet` gives each Mininet host's address this way); the
    /// file itself stays as it is.
    pub fn place(&mut self, at: &[(String, std::net::IpAddr)]) -> Result<()> {
        let (names, machines) = (self.names(), self.machines());
        for (machine, _) in at {
            if !machines.contains(machine) {
                let mut choices: Vec<&str> = vec![];
                for m in &machines {
                    if !choices.contains(&m.as_str()) {
                        choices.push(m);
                    }
                }
                return Err(TopologyError(format!(
                    "--place {machine}=...: no machine named '{machine}'; machines: {}",
                    choices.join(", ")
                )));
            }
        }
        for (i, p) in self.places.iter_mut().enumerate() {
            let Some((_, ip)) = at.iter().find(|(m, _)| *m == machines[i]) else { continue };
            let port = [&p.listen, &p.address]
                .into_iter()
                .flatten()
                .filter_map(|a| a.rsplit_once(':').and_then(|(_, port)| port.parse::<u16>().ok()))
                .find(|&port| port != 0);
            let port = match port {
                Some(port) => port,
                None => u16::try_from(i).ok().and_then(|i| PLACED_PORT_BASE.checked_add(i)).ok_or_else(|| {
                    TopologyError(format!(
                        "node '{}' has no port and is node {i}, past the ports from {PLACED_PORT_BASE} \
                         given to such nodes: give it `listen` HOST:PORT",
                        names[i]
                    ))
                })?,
            };
            p.listen = Some(std::net::SocketAddr::new(*ip, port).to_string());
            p.address = None;
        }
        Ok(())
    }

    /// The resolved deployment as JSON (for Mininet and other tools):
    /// service, nodes (name, role, shape, machine, listen, address,
    /// upstream, ports, groups) and links with delays.
    pub fn to_json(&self) -> serde_json::Value {
        let (service, nodes, links, fabric) = match &self.service {
            Service::Txn(d) => ("txn", json_nodes(d, |r| r.name().to_string()), d.links.clone(), d.fabric),
            Service::Paxos(p) => (
                "paxos",
                json_nodes(&p.deployment, |r| r.name().to_string()),
                p.deployment.links.clone(),
                p.deployment.fabric,
            ),
            Service::Chain(c) => (
                "chain",
                json_nodes(&c.deployment, |r| r.name().to_string()),
                c.deployment.links.clone(),
                c.deployment.fabric,
            ),
        };
        let nodes: Vec<serde_json::Value> = nodes
            .into_iter()
            .zip(&self.places)
            .map(|(mut n, p)| {
                n["listen"] = serde_json::json!(p.listen);
                n["address"] = serde_json::json!(p.address);
                n
            })
            .collect();
        let names = self.names();
        let links: Vec<serde_json::Value> = links
            .iter()
            .map(|l| serde_json::json!({"a": names[l.a], "b": names[l.b], "delay_ms": l.delay.as_secs_f64() * 1e3}))
            .collect();
        let mut v = serde_json::json!({"service": service, "nodes": nodes, "links": links});
        if let Some(f) = fabric {
            v["fabric_delay_ms"] = serde_json::json!(f.as_secs_f64() * 1e3);
        }
        if let Service::Paxos(p) = &self.service {
            v["data_plane"] = serde_json::json!(p.data_plane);
        }
        if let Service::Chain(c) = &self.service {
            v["protocol"] = serde_json::json!(c.protocol.name());
        }
        v
    }
}

/// Names and machines of a deployment of any role type.
trait NodeList {
    fn names(&self) -> Vec<String>;
    fn machines(&self) -> Vec<String>;
}

impl<R> NodeList for Deployment<R> {
    fn names(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.name.clone()).collect()
    }
    fn machines(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.machine().to_string()).collect()
    }
}

fn json_nodes<R>(d: &Deployment<R>, role: impl Fn(&R) -> String) -> Vec<serde_json::Value> {
    use innet_core::Member;
    d.nodes
        .iter()
        .map(|n| {
            let member = |m: &Member<NodeIx>| match m {
                Member::Node(x) => d.nodes[*x].name.clone(),
                Member::Origin => "origin".to_string(),
            };
            let ports: BTreeMap<String, String> =
                n.ports.iter().map(|(p, to)| (p.to_string(), d.nodes[*to].name.clone())).collect();
            let groups: BTreeMap<String, Vec<String>> =
                n.groups.iter().map(|(g, m)| (g.to_string(), m.iter().map(member).collect())).collect();
            serde_json::json!({
                "name": n.name,
                "role": role(&n.role),
                "shape": match n.shape { innet_core::deploy::Shape::Program => "program", innet_core::deploy::Shape::Host => "host" },
                "machine": n.machine(),
                "upstream": n.upstream.map(|u| d.nodes[u].name.clone()),
                "ports": ports,
                "groups": groups,
            })
        })
        .collect()
}

fn paxos_params(s: &PaxosSettings) -> Result<PaxosParams> {
    let e = |m: String| TopologyError(format!("[paxos] {m}"));
    if !s.slots.is_power_of_two() || !(4..=PAXOS_SLOTS_MAX).contains(&s.slots) {
        return Err(e(format!(
            "slots = {} must be a power of two from 4 to {PAXOS_SLOTS_MAX} (the limit PAXOS_SLOTS_MAX)",
            s.slots
        )));
    }
    if s.trim_quorum > innet_paxos::MAX_LEARNERS {
        return Err(e(format!(
            "trim_quorum = {} must be at most the learners (at most {}, the limit MAX_LEARNERS)",
            s.trim_quorum,
            innet_paxos::MAX_LEARNERS
        )));
    }
    let positive = |field: &str, v: f64| {
        let d = ms(field, v).map_err(e)?;
        if d.is_zero() {
            return Err(TopologyError(format!("[paxos] {field} must be above 0")));
        }
        Ok(d)
    };
    Ok(PaxosParams {
        slots: s.slots,
        trim_quorum: s.trim_quorum,
        ordered: s.ordered,
        proposer_timeout: positive("proposer_timeout_ms", s.proposer_timeout_ms)?,
        gap_timeout: positive("gap_timeout_ms", s.gap_timeout_ms)?,
        heartbeat: positive("heartbeat_ms", s.heartbeat_ms)?,
        ..PaxosParams::default()
    })
}

fn chain_settings(
    s: &ChainSettings,
    protocol: Protocol,
    deployment: ChainDeployment,
    folder: Option<&Path>,
) -> Result<ChainTopology> {
    let e = |m: String| TopologyError(format!("[chain] {m}"));
    if !(1..=OBJECTS_MAX).contains(&s.objects) {
        return Err(e(format!("objects = {} must be from 1 to {OBJECTS_MAX} (the limit OBJECTS_MAX)", s.objects)));
    }
    // A clean version and at least one dirty one (NetCRAQ Algorithm 1).
    if !(2..=VERSIONS_MAX).contains(&s.versions) {
        return Err(e(format!("versions = {} must be from 2 to {VERSIONS_MAX} (the limit VERSIONS_MAX)", s.versions)));
    }
    if s.keys as usize > s.objects {
        return Err(e(format!("keys = {} must be at most objects = {}", s.keys, s.objects)));
    }
    let positive = |field: &str, v: f64| {
        let d = ms(field, v).map_err(e)?;
        if d.is_zero() {
            return Err(TopologyError(format!("[chain] {field} must be above 0")));
        }
        Ok(d)
    };
    let control = ControlConfig {
        heartbeat_interval: positive("heartbeat_ms", s.heartbeat_ms)?,
        failure_timeout: positive("failure_timeout_ms", s.failure_timeout_ms)?,
        drain: positive("drain_ms", s.drain_ms)?,
        full_heartbeats: 3,
    };
    let auth = s.auth_key.as_deref().map(|f| read_auth_key(f, folder)).transpose()?;
    Ok(ChainTopology { deployment, protocol, objects: s.objects, versions: s.versions, keys: s.keys, control, auth })
}

/// `auth_key = "FILE"`: the key file read and checked
/// ([`innet_core::auth`]'s format); the error names the file and the fault.
fn read_auth_key(file: &Path, folder: Option<&Path>) -> Result<AuthKeys> {
    let path = folder.map_or_else(|| file.to_path_buf(), |d| d.join(file));
    let e = |m: String| TopologyError(format!("[chain] auth_key {}: {m}", path.display()));
    let text = std::fs::read_to_string(&path).map_err(|x| e(x.to_string()))?;
    AuthKeys::parse(&text).map_err(e)
}

#[cfg(test)]
mod tests;
