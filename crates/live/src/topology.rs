//! Topology files: which nodes make up a live deployment, so the same binary
//! starts its share on each machine (`innet up txn --topology FILE --only NAME`).
//! The format is TOML, documented in `docs/live.md`:
//!
//! ```toml
//! [[node]]
//! name = "store"
//! role = "store"
//! listen = "0.0.0.0:9001"
//! address = "10.0.0.2:9001"     # how others reach it (default: listen)
//! data_dir = "/var/lib/innet"   # optional; in memory without it
//!
//! [[node]]
//! name = "switch"
//! role = "switch"
//! listen = "127.0.0.1:9000"
//! mode = "optimistic-abort"
//! upstream = "store"            # a node name or HOST:PORT
//! store_delay_ms = 40.0         # one-way switch <-> store, emulated here
//! client_delay_ms = 0.0         # one-way switch <-> clients, emulated here
//! cache_slots = 4096
//! ```

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use innet_txn::switch::CACHE_SLOTS_DEFAULT;
use innet_txn::{Mode, TxnSwitch};
use serde::Deserialize;

use crate::switch::SwitchNode;
use crate::txn::{spawn_store, spawn_txn_switch, StoreData, StoreNode, SwitchConfig};
use crate::Stop;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Store,
    Switch,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub name: String,
    pub role: Role,
    /// HOST:PORT to bind.
    pub listen: String,
    /// HOST:PORT other nodes use to reach this one (default: `listen`).
    pub address: Option<String>,
    /// Store: directory of the durable database (in memory if absent).
    pub data_dir: Option<PathBuf>,
    /// Switch: forward, read-cache, early-abort or optimistic-abort.
    pub mode: Option<String>,
    /// Switch: the node (by name) or HOST:PORT it forwards requests to.
    pub upstream: Option<String>,
    /// Switch: one-way switch <-> upstream delay to emulate, in ms.
    #[serde(default)]
    pub store_delay_ms: f64,
    /// Switch: one-way switch <-> clients delay to emulate, in ms.
    #[serde(default)]
    pub client_delay_ms: f64,
    /// Switch: cache slots (a power of two >= 4).
    pub cache_slots: Option<usize>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Topology {
    #[serde(rename = "node", default)]
    pub nodes: Vec<NodeSpec>,
}

/// Resolves HOST:PORT (names allowed) to one socket address.
pub fn resolve(s: &str) -> anyhow::Result<SocketAddr> {
    if let Ok(a) = s.parse() {
        return Ok(a);
    }
    let mut it = s
        .to_socket_addrs()
        .map_err(|e| anyhow!("'{s}' is not a usable address ({e}); expected HOST:PORT, e.g. 127.0.0.1:9000"))?;
    it.next().ok_or_else(|| anyhow!("'{s}' resolves to no address; expected HOST:PORT, e.g. 127.0.0.1:9000"))
}

fn delay_ms(field: &str, node: &str, ms: f64) -> anyhow::Result<Duration> {
    if !(ms >= 0.0 && ms.is_finite()) {
        bail!("node '{node}': {field} = {ms} must be a finite number of milliseconds >= 0");
    }
    Ok(Duration::from_secs_f64(ms / 1e3))
}

impl Topology {
    /// Parses and checks a topology.
    pub fn parse(text: &str) -> anyhow::Result<Topology> {
        let t: Topology = toml::from_str(text).map_err(|e| anyhow!("bad topology: {e}"))?;
        t.validate()?;
        Ok(t)
    }

    pub fn load(path: &Path) -> anyhow::Result<Topology> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("cannot read topology file {}", path.display()))?;
        Topology::parse(&text).with_context(|| format!("in topology file {}", path.display()))
    }

    pub fn node(&self, name: &str) -> Option<&NodeSpec> {
        self.nodes.iter().find(|n| n.name == name)
    }

    pub fn names(&self) -> Vec<&str> {
        self.nodes.iter().map(|n| n.name.as_str()).collect()
    }

    /// The address other nodes use to reach `n`.
    pub fn address_of(&self, n: &NodeSpec) -> anyhow::Result<SocketAddr> {
        let a = resolve(n.address.as_deref().unwrap_or(&n.listen)).with_context(|| format!("node '{}'", n.name))?;
        if a.ip().is_unspecified() || a.port() == 0 {
            bail!(
                "node '{}' listens on {} which others cannot reach: give it `address = \"HOST:PORT\"`",
                n.name,
                n.listen
            );
        }
        Ok(a)
    }

    /// Where switch `n` sends requests.
    pub fn upstream_of(&self, n: &NodeSpec) -> anyhow::Result<SocketAddr> {
        let up = n.upstream.as_deref().ok_or_else(|| anyhow!("switch '{}' needs `upstream`", n.name))?;
        match self.node(up) {
            Some(u) => self.address_of(u),
            None => resolve(up).with_context(|| {
                format!(
                    "switch '{}': upstream '{up}' is neither a node name ({}) nor HOST:PORT",
                    n.name,
                    self.names().join(", ")
                )
            }),
        }
    }

    /// The switch configuration of node `n`.
    pub fn switch_config(&self, n: &NodeSpec) -> anyhow::Result<SwitchConfig> {
        let mode: Mode = n
            .mode
            .as_deref()
            .ok_or_else(|| {
                anyhow!("switch '{}' needs `mode` (forward, read-cache, early-abort, optimistic-abort)", n.name)
            })?
            .parse()
            .map_err(|e: String| anyhow!("switch '{}': {e}", n.name))?;
        let cfg = SwitchConfig {
            mode,
            cache_slots: n.cache_slots.unwrap_or(CACHE_SLOTS_DEFAULT),
            store_delay: delay_ms("store_delay_ms", &n.name, n.store_delay_ms)?,
            client_delay: delay_ms("client_delay_ms", &n.name, n.client_delay_ms)?,
        };
        cfg.validate().map_err(|e| anyhow!("switch '{}': {e}", n.name))?;
        Ok(cfg)
    }

    /// Checks names, roles and fields.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.nodes.is_empty() {
            bail!("no nodes: add at least one [[node]] table");
        }
        for (i, n) in self.nodes.iter().enumerate() {
            if n.name.is_empty() {
                bail!("node #{} has an empty name", i + 1);
            }
            if self.nodes[..i].iter().any(|m| m.name == n.name) {
                bail!("node name '{}' is used twice", n.name);
            }
            resolve(&n.listen).with_context(|| format!("node '{}': listen", n.name))?;
            match n.role {
                Role::Store => {
                    for (field, set) in [
                        ("mode", n.mode.is_some()),
                        ("upstream", n.upstream.is_some()),
                        ("cache_slots", n.cache_slots.is_some()),
                        ("store_delay_ms", n.store_delay_ms != 0.0),
                        ("client_delay_ms", n.client_delay_ms != 0.0),
                    ] {
                        if set {
                            bail!("store '{}' has `{field}`, which only switches take", n.name);
                        }
                    }
                }
                Role::Switch => {
                    if n.data_dir.is_some() {
                        bail!("switch '{}' has `data_dir`, which only stores take", n.name);
                    }
                    self.switch_config(n)?;
                    if n.upstream.as_deref() == Some(n.name.as_str()) {
                        bail!("switch '{}' is its own upstream", n.name);
                    }
                    self.upstream_of(n)?;
                }
            }
        }
        Ok(())
    }
}

/// A node started from a topology.
pub enum RunningNode {
    Store(StoreNode),
    Switch(SwitchNode<TxnSwitch>),
}

impl RunningNode {
    pub fn name(&self) -> &str {
        match self {
            RunningNode::Store(n) => n.name(),
            RunningNode::Switch(n) => n.name(),
        }
    }
    pub fn addr(&self) -> SocketAddr {
        match self {
            RunningNode::Store(n) => n.addr(),
            RunningNode::Switch(n) => n.addr(),
        }
    }
    pub fn role(&self) -> Role {
        match self {
            RunningNode::Store(_) => Role::Store,
            RunningNode::Switch(_) => Role::Switch,
        }
    }
}

/// Starts the node named `only` (or every node, stores first) on this machine.
pub fn start(topo: &Topology, only: Option<&str>, stop: &Stop) -> anyhow::Result<Vec<RunningNode>> {
    let chosen: Vec<&NodeSpec> = match only {
        Some(name) => vec![topo
            .node(name)
            .ok_or_else(|| anyhow!("no node named '{name}' in the topology; nodes: {}", topo.names().join(", ")))?],
        None => {
            let mut v: Vec<&NodeSpec> = topo.nodes.iter().filter(|n| n.role == Role::Store).collect();
            v.extend(topo.nodes.iter().filter(|n| n.role == Role::Switch));
            v
        }
    };
    let mut running = vec![];
    for n in chosen {
        let listen = resolve(&n.listen).with_context(|| format!("node '{}': listen", n.name))?;
        let node = match n.role {
            Role::Store => {
                let data = n.data_dir.clone().map_or(StoreData::Memory, StoreData::Dir);
                RunningNode::Store(
                    spawn_store(&n.name, listen, &data, stop)
                        .with_context(|| format!("starting store '{}'", n.name))?,
                )
            }
            Role::Switch => {
                let cfg = topo.switch_config(n)?;
                let up = topo.upstream_of(n)?;
                RunningNode::Switch(
                    spawn_txn_switch(&n.name, listen, up, &cfg, stop)
                        .with_context(|| format!("starting switch '{}'", n.name))?,
                )
            }
        };
        running.push(node);
    }
    Ok(running)
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = r#"
[[node]]
name = "store"
role = "store"
listen = "127.0.0.1:0"
address = "127.0.0.1:9001"

[[node]]
name = "switch"
role = "switch"
listen = "127.0.0.1:0"
mode = "optimistic-abort"
upstream = "store"
store_delay_ms = 40
client_delay_ms = 10.5
"#;

    #[test]
    fn parses_the_example() {
        let t = Topology::parse(EXAMPLE).unwrap();
        assert_eq!(t.names(), vec!["store", "switch"]);
        let sw = t.node("switch").unwrap();
        assert_eq!(t.upstream_of(sw).unwrap(), "127.0.0.1:9001".parse().unwrap());
        let c = t.switch_config(sw).unwrap();
        assert_eq!(
            (c.mode, c.store_delay, c.client_delay),
            (Mode::OptimisticAbort, Duration::from_millis(40), Duration::from_micros(10_500))
        );
    }

    #[test]
    fn the_shipped_example_file_parses() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/topology-txn.toml");
        Topology::load(&path).unwrap();
    }

    fn err(text: &str) -> String {
        format!("{:#}", Topology::parse(text).unwrap_err())
    }

    #[test]
    fn mistakes_are_explained() {
        assert!(err("").contains("no nodes"));
        let e = err("[[node]]\nname='s'\nrole='switch'\nlisten='127.0.0.1:1'\nmode='fast'\nupstream='127.0.0.1:2'\n");
        assert!(e.contains("unknown mode 'fast'") && e.contains("optimistic-abort"), "{e}");
        let e = err("[[node]]\nname='s'\nrole='switch'\nlisten='127.0.0.1:1'\nmode='forward'\nupstream='nowhere'\n");
        assert!(e.contains("neither a node name"), "{e}");
        let e = err("[[node]]\nname='s'\nrole='router'\nlisten='127.0.0.1:1'\n");
        assert!(e.contains("router"), "{e}");
        let e = err("[[node]]\nname='s'\nrole='store'\nlisten='127.0.0.1:1'\nmode='forward'\n");
        assert!(e.contains("only switches"), "{e}");
        let e = err("[[node]]\nname='s'\nrole='store'\nlisten='127.0.0.1'\n");
        assert!(e.contains("HOST:PORT"), "{e}");
        let e = err("[[node]]\nname='a'\nrole='store'\nlisten='0.0.0.0:9'\n[[node]]\nname='b'\nrole='switch'\nlisten='127.0.0.1:1'\nmode='forward'\nupstream='a'\n");
        assert!(e.contains("address"), "{e}");
        let e = err("[[node]]\nname='s'\nrole='store'\nlisten='127.0.0.1:1'\ncolour='red'\n");
        assert!(e.contains("colour"), "{e}");
    }
}
