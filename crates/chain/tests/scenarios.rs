//! Scenario scripts of the chain store (`crates/chain/testdata/*.txt`, the
//! format in `crates/chain/testdata/README.md`), run on the simulator
//! through the service's own deployment (`innet_chain::deploy`) and
//! `Sim::instantiate`: the chain switches are the real NetCRAQ programs, the
//! control plane the real `ChainControl` (polled every heartbeat interval,
//! its layouts written through `deploy::node_tables`), clients real
//! `ChainClient`s doing what the script says.
//!
//! Commands:
//! * `deploy nodes=N clients=N node_link=MS fabric=MS near=I`
//! * `put client=NAME key=K value=V`, `get client=NAME key=K`
//! * `run ms=N`: runs N ms and prints every packet, hop by hop, and every
//!   control-plane action when it is taken.
//! * `crash node=NAME`
//! * `completed client=NAME`: the operations the client finished since
//!   the last time.
//! * `values key=K`: each node's committed value of K.
//!
//! `INNET_REWRITE=1 cargo test -p innet-chain --test scenarios` rewrites the
//! expected outputs.

use std::collections::VecDeque;
use std::path::Path;
use std::time::Duration;

use innet_chain::client::{ChainClient, ClientConfig, Completion, OpKind};
use innet_chain::control::{Action, ChainControl, ControlConfig, Layout};
use innet_chain::deploy::{self, ChainRole};
use innet_chain::netcraq::{OBJECTS_DEFAULT, VERSIONS_DEFAULT};
use innet_chain::node::ChainNode;
use innet_chain::Protocol;
use innet_core::{Host, Member, Outbox, Time};
use innet_sim::script::{packet_line, run_scenario, Command};
use innet_sim::{member_ids, LinkSpec, NodeId, Sim, SimNode};
use innet_wire::netcraq::{CraqMsg, Value};

/// A client doing the script's operations one at a time.
struct ScriptClient {
    client: ChainClient,
    /// `(key, Some(value))` a put, `(key, None)` a get.
    to_do: VecDeque<(u32, Option<Value>)>,
    done: Vec<Completion>,
}

impl Host for ScriptClient {
    fn on_packet(&mut self, now: Time, packet: &[u8], _out: &mut Outbox) {
        self.done.extend(self.client.on_packet(now, packet));
    }
    fn on_tick(&mut self, now: Time, out: &mut Outbox) {
        if self.client.is_idle() {
            match self.to_do.pop_front() {
                Some((key, Some(value))) => self.client.put(now, key, value),
                Some((key, None)) => self.client.get(now, key),
                None => {}
            }
        }
        self.client.on_tick(now, out);
    }
    fn next_tick(&self) -> Option<Time> {
        if self.client.is_idle() && !self.to_do.is_empty() {
            Some(Time::ZERO)
        } else {
            self.client.next_tick()
        }
    }
}

struct Scenario {
    sim: Sim,
    names: Vec<String>,
    ids: Vec<NodeId>,
    /// Simulator ids of the chain nodes, by chain index.
    nodes: Vec<NodeId>,
    clients: Vec<NodeId>,
    control: ChainControl,
}

fn ms(cmd: &Command, key: &str, default: f64) -> Result<Duration, String> {
    Ok(Duration::from_secs_f64(cmd.parse_or(key, default)? / 1e3))
}

fn deploy(cmd: &Command) -> Result<(Scenario, String), String> {
    let protocol = Protocol::NetCraq;
    let (n, clients): (usize, usize) = (cmd.parse_or("nodes", 3)?, cmd.parse_or("clients", 1)?);
    let d = deploy::deployment(protocol, n, clients, ms(cmd, "node_link", 1.0)?, ms(cmd, "fabric", 1.0)?);
    let near: usize = cmd.parse_or("near", 0)?;
    let mut sim = Sim::new(cmd.parse_or("seed", 1)?);
    sim.record_packets();
    let mut client_index = 0;
    let ids = sim.instantiate(
        &d,
        |_, node| match node.role {
            ChainRole::Node { index } => {
                SimNode::switch(ChainNode::new(protocol, index, OBJECTS_DEFAULT, VERSIONS_DEFAULT))
            }
            // The control plane reaches the switches over their management
            // channel (calls here), not over the data plane.
            ChainRole::Control => SimNode::host(innet_sim::script::Puppet::default()),
            ChainRole::Client => {
                let config = ClientConfig { near, ..ClientConfig::new(protocol, client_index, n) };
                client_index += 1;
                SimNode::host(ScriptClient { client: ChainClient::new(config), to_do: VecDeque::new(), done: vec![] })
            }
        },
        LinkSpec::latency,
    );
    let nodes: Vec<NodeId> = deploy::chain_nodes(&d).into_iter().map(|i| ids[i]).collect();
    // Chain nodes tell their neighbours apart by link (a switch port).
    for (a, &x) in nodes.iter().enumerate() {
        for (b, &y) in nodes.iter().enumerate().filter(|&(b, _)| b != a) {
            sim.set_peer(x, y, b as u16);
        }
    }
    let clients = d.with_role(|r| *r == ChainRole::Client).into_iter().map(|i| ids[i]).collect();
    let (control, layout) = ChainControl::new(ControlConfig::default(), n, Time::ZERO);
    let names = d.nodes.iter().map(|n| n.name.clone()).collect();
    let mut s = Scenario { sim, names, ids, nodes, clients, control };
    s.apply(&layout);
    let shown = format!("{}\n{}", s.layout_line(&layout), s.tables());
    Ok((s, shown))
}

/// A NetCRAQ packet as a line: `WRITE key=1 value=a`.
fn describe(bytes: &[u8]) -> String {
    match CraqMsg::decode(bytes) {
        Ok(m) => format!("{} key={} value={}", m.op.name(), m.key, String::from_utf8_lossy(m.value.trimmed())),
        Err(e) => format!("{} bytes, not a NetCRAQ message ({})", bytes.len(), e.name()),
    }
}

impl Scenario {
    fn node(&self, name: &str) -> Result<NodeId, String> {
        let ix = self.names.iter().position(|n| n == name);
        ix.map(|i| self.ids[i]).ok_or_else(|| format!("no node '{name}' (nodes: {})", self.names.join(", ")))
    }

    fn chain_node(&self, i: usize) -> &ChainNode {
        self.sim.program::<ChainNode>(self.nodes[i]).expect("a chain node")
    }

    /// Writes every switch's registers and tables, and every client's view
    /// of the chain, for `layout` (what `ChainSim::apply` does in crates/exp).
    fn apply(&mut self, layout: &Layout) {
        let count = self.nodes.len();
        for (i, &node) in self.nodes.clone().iter().enumerate() {
            self.sim.program_mut::<ChainNode>(node).expect("a chain node").configure(&layout.tables(i), count);
            let (ports, groups) = deploy::node_tables(Protocol::NetCraq, layout, count, i);
            for port in [innet_chain::ports::PORT_NEXT, innet_chain::ports::PORT_TAIL] {
                self.sim.set_port(node, port, ports.get(&port).map(|&to| self.nodes[to]));
            }
            for (group, members) in groups {
                self.sim.set_group(node, group, member_ids(&members, &self.nodes));
            }
        }
        for &c in &self.clients {
            self.sim.host_mut::<ScriptClient>(c).expect("a client").client.set_chain(layout.chain.clone());
            self.sim.wake(c);
        }
    }

    fn layout_line(&self, l: &Layout) -> String {
        let chain: Vec<&str> = l.chain.iter().map(|&i| self.names[i].as_str()).collect();
        format!("chain {}{}", chain.join(" -> "), if l.writes_paused { " (writes paused)" } else { "" })
    }

    /// Each chain switch's role and where its ports lead.
    fn tables(&self) -> String {
        let layout = Layout { chain: self.control.members().to_vec(), writes_paused: self.control.is_paused() };
        let lines: Vec<String> = (0..self.nodes.len())
            .map(|i| {
                let (ports, groups) = deploy::node_tables(Protocol::NetCraq, &layout, self.nodes.len(), i);
                let role = layout.tables(i).role.map_or("not in the chain".to_string(), |r| format!("{r:?}"));
                let port_name = |p: u16| if p == innet_chain::ports::PORT_NEXT { "next" } else { "tail" };
                let ports: Vec<String> =
                    ports.iter().map(|(&p, &to)| format!(", {} {}", port_name(p), self.names[to])).collect();
                let acks: Vec<String> = groups
                    .values()
                    .flatten()
                    .map(|m| match m {
                        Member::Node(x) => self.names[*x].clone(),
                        Member::Origin => "origin".to_string(),
                    })
                    .collect();
                let acks = if acks.is_empty() { "-".to_string() } else { acks.join(" ") };
                format!("{}: {role}{}, ACK group {acks}", self.names[i], ports.concat())
            })
            .collect();
        lines.join("\n")
    }

    /// Runs `ms` in control-plane steps: the network to the step's end,
    /// then a heartbeat from every node that is up and the control plane's
    /// tick, whose actions are applied at once.
    fn run(&mut self, cmd: &Command) -> Result<String, String> {
        let end = Time::from_secs_f64(self.sim.now().as_secs_f64() + cmd.parse_or("ms", 100.0)? / 1e3);
        let mut lines = vec![];
        while self.sim.now() < end {
            self.sim.run_until((self.sim.now() + self.control.config.heartbeat_interval).min(end));
            lines.extend(self.sim.take_packets().iter().map(|p| packet_line(&self.sim, p, describe)));
            let (now, mut actions) = (self.sim.now(), vec![]);
            for i in 0..self.nodes.len() {
                if self.sim.is_up(self.nodes[i]) {
                    self.control.on_heartbeat(now, i, self.chain_node(i).report(), &mut actions);
                }
            }
            self.control.on_tick(now, &mut actions);
            for a in actions {
                let at = format!("{:8.3} ms  control", now.as_secs_f64() * 1e3);
                match a {
                    Action::Apply(l) => {
                        lines.push(format!("{at}: {}", self.layout_line(&l)));
                        self.apply(&l);
                    }
                    Action::Copy { from, to } => {
                        let to_names: Vec<&str> = to.iter().map(|&t| self.names[t].as_str()).collect();
                        lines.push(format!("{at}: copy {} to {}", self.names[from], to_names.join(" ")));
                        let snapshot = self.chain_node(from).snapshot();
                        for t in to {
                            self.sim.program_mut::<ChainNode>(self.nodes[t]).expect("a chain node").load(&snapshot);
                        }
                    }
                }
            }
        }
        Ok(lines.join("\n"))
    }

    fn queue(&mut self, cmd: &Command, put: bool) -> Result<String, String> {
        let node = self.node(cmd.need("client")?)?;
        let key: u32 = cmd.parse_or("key", 1)?;
        let value = if put {
            Some(Value::from_str_padded(cmd.need("value")?).ok_or("value longer than a value")?)
        } else {
            None
        };
        self.sim.host_mut::<ScriptClient>(node).ok_or("not a client")?.to_do.push_back((key, value));
        self.sim.wake(node);
        Ok(String::new())
    }

    fn completed(&mut self, cmd: &Command) -> Result<String, String> {
        let node = self.node(cmd.need("client")?)?;
        let c = self.sim.host_mut::<ScriptClient>(node).ok_or("not a client")?;
        let lines: Vec<String> = c
            .done
            .drain(..)
            .map(|d| {
                let kind = if d.kind == OpKind::Write { "put" } else { "get" };
                let value = String::from_utf8_lossy(d.value.trimmed()).into_owned();
                let (from, to) = (d.started.as_secs_f64() * 1e3, d.finished.as_secs_f64() * 1e3);
                format!("{kind} key={} value={value}: {from:.3} -> {to:.3} ms, {} attempt(s)", d.key, d.attempts)
            })
            .collect();
        Ok(if lines.is_empty() { "nothing".to_string() } else { lines.join("\n") })
    }

    fn values(&self, cmd: &Command) -> Result<String, String> {
        let key: u32 = cmd.parse_or("key", 1)?;
        let lines: Vec<String> = (0..self.nodes.len())
            .map(|i| {
                let v = self.chain_node(i).values(key + 1)[key as usize];
                let up = if self.sim.is_up(self.nodes[i]) { "" } else { " (down)" };
                format!("{}: {}{up}", self.names[i], String::from_utf8_lossy(v.trimmed()))
            })
            .collect();
        Ok(lines.join("\n"))
    }
}

fn run_script(name: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata").join(name);
    run_scenario(&path, deploy, |s: &mut Scenario, cmd| match cmd.name.as_str() {
        "put" => s.queue(cmd, true),
        "get" => s.queue(cmd, false),
        "run" => s.run(cmd),
        "crash" => {
            let node = s.node(cmd.need("node")?)?;
            s.sim.crash(node);
            Ok(String::new())
        }
        "completed" => s.completed(cmd),
        "values" => s.values(cmd),
        "tables" => Ok(s.tables()),
        other => Err(format!("unknown command '{other}'")),
    });
}

/// NetCRAQ section III (Algorithm 1: writes down the chain, the tail's ACK
/// up it, reads at any node) and III-C (a failed node is removed so traffic
/// continues, then the chain is resynchronised while writes pause).
#[test]
fn netcraq_node_removal() {
    run_script("netcraq_node_removal.txt");
}
