//! Scenario scripts of the transaction service (`crates/txn/testdata/*.txt`,
//! the format in `crates/txn/testdata/README.md`), run on the simulator
//! through the service's own deployments (`innet_txn::deploy`) and
//! `Sim::instantiate`: every store and switch is the real state machine;
//! clients are puppets the script drives.
//!
//! Commands:
//! * `deploy figure3 clients=N mode=M d_cs=MS d_ss=MS`: Gotthard's Figure 3.
//! * `deploy figure4 groups=N,N.. edge=M core=M d_client_edge=MS d_edge_core=MS d_core_store=MS`:
//!   Figure 4 (section 3.6).
//! * `send from=CLIENT id=N OP..`: the client sends a request, ops
//!   `VALUE(k,v)` (a compare), `READ(k)`, `WRITE(k,v)`.
//! * `run ms=N`: runs N ms and prints every packet, hop by hop.
//! * `cache node=SWITCH`: the switch's cache (Algorithm 2's `cache[key]`).
//! * `store`: the store's data.
//!
//! `INNET_REWRITE=1 cargo test -p innet-txn --test scenarios` rewrites the
//! expected outputs.

use std::path::Path;
use std::time::Duration;

use innet_core::deploy::{NodeIx, Shape};
use innet_core::Dest;
use innet_sim::script::{puppet_send, run_and_print, run_scenario, Command, Puppet};
use innet_sim::{LinkSpec, NodeId, Sim, SimNode};
use innet_txn::deploy::{self, SwitchSpec, TxnDeployment, TxnRole};
use innet_txn::{Mode, TxnStore, TxnSwitch};
use innet_wire::txn::{Op, OpType, TxnMsg, Value};

struct Scenario {
    sim: Sim,
    deployment: TxnDeployment,
    ids: Vec<NodeId>,
}

fn ms(cmd: &Command, key: &str, default: f64) -> Result<Duration, String> {
    Ok(Duration::from_secs_f64(cmd.parse_or(key, default)? / 1e3))
}

fn mode(cmd: &Command, key: &str) -> Result<SwitchSpec, String> {
    Ok(SwitchSpec::new(cmd.parse_or(key, Mode::OptimisticAbort)?))
}

fn deploy(cmd: &Command) -> Result<(Scenario, String), String> {
    let d = match cmd.words().first().copied() {
        Some("figure3") => {
            let clients = cmd.parse_or("clients", 2)?;
            deploy::single_switch(clients, mode(cmd, "mode")?, ms(cmd, "d_cs", 10.0)?, ms(cmd, "d_ss", 40.0)?)
        }
        Some("figure4") => {
            let groups: Vec<u32> = cmd
                .need("groups")?
                .split(',')
                .map(|g| g.parse().map_err(|_| format!("groups: '{g}' is not a number")))
                .collect::<Result<_, _>>()?;
            let (d_ce, d_ec, d_cs) =
                (ms(cmd, "d_client_edge", 1.0)?, ms(cmd, "d_edge_core", 5.0)?, ms(cmd, "d_core_store", 40.0)?);
            deploy::tree(&groups, mode(cmd, "edge")?, mode(cmd, "core")?, d_ce, d_ec, d_cs)
        }
        other => return Err(format!("deploy figure3|figure4, not {other:?}")),
    };
    let mut sim = Sim::new(cmd.parse_or("seed", 1)?);
    sim.record_packets();
    let ids = sim.instantiate(
        &d,
        |_, n| match &n.role {
            TxnRole::Store => SimNode::host(TxnStore::in_memory()),
            TxnRole::Switch(s) => SimNode::switch(TxnSwitch::new(s.mode, s.cache_slots, 64)),
            TxnRole::Client => SimNode::host(Puppet::default()),
        },
        LinkSpec::latency,
    );
    let cl_ids = deploy::client_ids(&d);
    let lines: Vec<String> = d
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let what = match &n.role {
                TxnRole::Switch(s) => format!("switch {}", s.mode),
                TxnRole::Client => format!("client cl_id={}", cl_ids[i]),
                TxnRole::Store => "store".to_string(),
            };
            let up = n.upstream.map(|u| format!(", upstream {} ({} ms)", d.nodes[u].name, delay_ms(&d, i, u)));
            format!("{}: {what}{}", n.name, up.unwrap_or_default())
        })
        .collect();
    debug_assert!(d.nodes.iter().all(|n| (n.shape == Shape::Program) == matches!(n.role, TxnRole::Switch(_))));
    Ok((Scenario { sim, deployment: d, ids }, lines.join("\n")))
}

fn delay_ms(d: &TxnDeployment, a: NodeIx, b: NodeIx) -> f64 {
    d.delay(a, b).map_or(f64::NAN, |x| x.as_secs_f64() * 1e3)
}

fn value(s: &str) -> Result<Value, String> {
    Value::from_str_padded(s).ok_or_else(|| format!("value '{s}' is longer than a value"))
}

/// `VALUE(1,a)`, `READ(1)`, `WRITE(1,b)`.
fn op(text: &str) -> Result<Op, String> {
    let bad = || format!("'{text}': an op is VALUE(key,value), READ(key) or WRITE(key,value)");
    let (kind, rest) = text.split_once('(').ok_or_else(bad)?;
    let inner = rest.strip_suffix(')').ok_or_else(bad)?;
    let mut parts = inner.split(',');
    let key: u32 = parts.next().and_then(|k| k.parse().ok()).ok_or_else(bad)?;
    let v = parts.next();
    match (kind, v) {
        ("READ", None) => Ok(Op::read(key)),
        ("VALUE", Some(v)) => Ok(Op::value(key, value(v)?)),
        ("WRITE", Some(v)) => Ok(Op::write(key, value(v)?)),
        _ => Err(bad()),
    }
}

fn show_value(v: &Value) -> String {
    String::from_utf8_lossy(v.trimmed()).into_owned()
}

/// A packet as a line: `REQ cl=1 req=2 [VALUE(1,a) WRITE(1,b)]`,
/// `RES ABORT from_switch cl=1 req=2 [VALUE(1,b)]`.
fn describe(bytes: &[u8]) -> String {
    let Ok(m) = TxnMsg::decode(bytes) else { return format!("{} bytes, not a Gotthard message", bytes.len()) };
    let ops: Vec<String> = m
        .ops
        .iter()
        .map(|o| match o.kind {
            OpType::Read | OpType::Nop => format!("{}({})", o.kind.name(), o.key),
            _ => format!("{}({},{})", o.kind.name(), o.key, show_value(&o.value)),
        })
        .collect();
    let head = if m.flags.is_response() {
        format!("RES {}{}", m.status.name(), if m.flags.from_switch() { " from_switch" } else { "" })
    } else {
        "REQ".to_string()
    };
    format!("{head} cl={} req={} [{}]", m.cl_id, m.req_id, ops.join(" "))
}

impl Scenario {
    fn node(&self, name: &str) -> Result<NodeId, String> {
        let names = || self.deployment.names().join(", ");
        self.deployment.find(name).map(|i| self.ids[i]).ok_or_else(|| format!("no node '{name}' (nodes: {})", names()))
    }

    fn send(&mut self, cmd: &Command) -> Result<String, String> {
        let from = self.node(cmd.need("from")?)?;
        let ix = self.ids.iter().position(|&i| i == from).expect("a deployment node");
        let cl_id = deploy::client_ids(&self.deployment)[ix];
        if cl_id == 0 {
            return Err(format!("'{}' is not a client", self.sim.name(from)));
        }
        let ops = cmd.words().into_iter().map(op).collect::<Result<Vec<Op>, String>>()?;
        let request = TxnMsg::request(cl_id, cmd.parse_or("id", 1)?, ops).encode();
        puppet_send(&mut self.sim, from, Dest::Upstream, request)?;
        Ok(String::new())
    }

    fn cache(&self, cmd: &Command) -> Result<String, String> {
        let node = self.node(cmd.need("node")?)?;
        let sw =
            self.sim.program::<TxnSwitch>(node).ok_or_else(|| format!("'{}' is no switch", self.sim.name(node)))?;
        let mut keys: Vec<u32> = sw.cache_slots().map(|(k, _)| k).filter(|&k| sw.cached(k).is_some()).collect();
        keys.sort();
        let lines: Vec<String> = keys
            .iter()
            .filter_map(|&k| sw.cached(k).map(|e| (k, e)))
            .map(|(k, e)| {
                let value = if e.has_value { show_value(&e.value) } else { "-".to_string() };
                let pending =
                    if e.has_pending { format!(" pending {}", show_value(&e.pending)) } else { String::new() };
                format!("key {k}: value {value}{pending}")
            })
            .collect();
        Ok(if lines.is_empty() { "empty".to_string() } else { lines.join("\n") })
    }

    fn store(&self) -> Result<String, String> {
        let store = self.deployment.with_role(|r| *r == TxnRole::Store)[0];
        let s = self.sim.host::<TxnStore>(self.ids[store]).expect("the store");
        let lines: Vec<String> = s.snapshot().iter().map(|(k, v)| format!("key {k}: {}", show_value(v))).collect();
        Ok(if lines.is_empty() { "empty".to_string() } else { lines.join("\n") })
    }
}

fn run_script(name: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata").join(name);
    run_scenario(&path, deploy, |s: &mut Scenario, cmd| match cmd.name.as_str() {
        "send" => s.send(cmd),
        "run" => Ok(run_and_print(&mut s.sim, cmd.parse_or("ms", 100.0)?, describe)),
        "cache" => s.cache(cmd),
        "store" => s.store(),
        other => Err(format!("unknown command '{other}'")),
    });
}

/// Gotthard section 3.1 (Figure 3: the forwarding case, steps 1-5, and the
/// abort case, steps 6-8), 3.3 (Algorithm 2) and 3.6 (Figure 4: a write
/// from another switch's client, learned from the store's abort).
#[test]
fn gotthard_section3() {
    run_script("gotthard_section3.txt");
}
