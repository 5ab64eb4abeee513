//! The transaction service's deployments, as data ([`innet_core::deploy`]).
//!
//! Roles: one [`TxnRole::Store`], any number of [`TxnRole::Switch`]es, each
//! with its own mode, and [`TxnRole::Client`]s. Every switch and client has
//! an upstream: the next switch towards the store, or the store. Requests
//! travel upstream, replies retrace the path (the runtime's reverse path, as
//! IP routing would), and every switch on the way logs and decides what it
//! can: Gotthard's Figure 3 is one switch, Figure 4 (section 3.6) a tree
//! whose edge switches abort what they can decide locally.
//!
//! Clients are numbered in node order from 1: [`client_ids`]. Clients of one
//! group share a machine (one process, namespace or Mininet host).

use std::time::Duration;

use innet_core::deploy::{DeployError, Deployment, NodeIx, Shape};

use crate::switch::{Mode, CACHE_SLOTS_DEFAULT};

pub const SERVICE: &str = "txn";

/// A switch's configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwitchSpec {
    pub mode: Mode,
    /// Slots of the value cache (a power of two >= 4).
    pub cache_slots: usize,
}

impl SwitchSpec {
    pub fn new(mode: Mode) -> SwitchSpec {
        let spec = SwitchSpec { mode, cache_slots: CACHE_SLOTS_DEFAULT };
        debug_assert!(spec.cache_slots.is_power_of_two() && spec.cache_slots >= innet_core::table::WAYS);
        spec
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum TxnRole {
    Store,
    Switch(SwitchSpec),
    Client,
}

impl TxnRole {
    pub fn shape(&self) -> Shape {
        match self {
            TxnRole::Switch(_) => Shape::Program,
            TxnRole::Store | TxnRole::Client => Shape::Host,
        }
    }
    pub fn name(&self) -> &'static str {
        match self {
            TxnRole::Store => "store",
            TxnRole::Switch(_) => "switch",
            TxnRole::Client => "client",
        }
    }
    pub fn is_client(&self) -> bool {
        let client = matches!(self, TxnRole::Client);
        debug_assert!(!client || self.shape() == Shape::Host, "a client is an end host");
        client
    }
}

pub type TxnDeployment = Deployment<TxnRole>;

/// Adds a node of `role` (its shape follows from the role).
pub fn add(d: &mut TxnDeployment, name: impl Into<String>, role: TxnRole) -> NodeIx {
    let shape = role.shape();
    let ix = d.add(name, role, shape);
    debug_assert_eq!(d.nodes[ix].shape, d.nodes[ix].role.shape(), "a node's shape follows from its role");
    ix
}

/// Adds `count` clients named `{group}.{i}` on machine `group`, each linked
/// to `upstream` with one-way `delay`.
pub fn add_clients(d: &mut TxnDeployment, group: &str, count: u32, upstream: NodeIx, delay: Duration) -> Vec<NodeIx> {
    (0..count)
        .map(|i| {
            let c = add(d, format!("{group}.{i}"), TxnRole::Client);
            d.nodes[c].machine = Some(group.to_string());
            d.link(c, upstream, delay);
            d.set_upstream(c, upstream);
            debug_assert!(d.link_between(c, upstream).is_some());
            c
        })
        .collect()
}

/// Gotthard's Figure 3: `clients -- switch -- store`, with one-way delays
/// client-switch `d_cs` and switch-store `d_ss`.
pub fn single_switch(clients: u32, switch: SwitchSpec, d_cs: Duration, d_ss: Duration) -> TxnDeployment {
    let mut d = Deployment::new(SERVICE);
    let store = add(&mut d, "store", TxnRole::Store);
    let sw = add(&mut d, "switch", TxnRole::Switch(switch));
    d.link(sw, store, d_ss);
    d.set_upstream(sw, store);
    add_clients(&mut d, "clients", clients, sw, d_cs);
    debug_assert!(validate(&d).is_ok(), "Figure 3 is a valid deployment");
    d
}

/// Gotthard's Figure 4: client groups, each behind its own edge switch,
/// the edges under one core switch in front of the store. `groups[i]` is the
/// number of clients behind edge `i`; one-way delays client-edge
/// `d_client_edge`, edge-core `d_edge_core`, core-store `d_core_store`.
pub fn tree(
    groups: &[u32],
    edge: SwitchSpec,
    core: SwitchSpec,
    d_client_edge: Duration,
    d_edge_core: Duration,
    d_core_store: Duration,
) -> TxnDeployment {
    let mut d = Deployment::new(SERVICE);
    let store = add(&mut d, "store", TxnRole::Store);
    let c = add(&mut d, "core", TxnRole::Switch(core));
    d.link(c, store, d_core_store);
    d.set_upstream(c, store);
    for (i, &n) in groups.iter().enumerate() {
        let e = add(&mut d, format!("edge{i}"), TxnRole::Switch(edge));
        d.link(e, c, d_edge_core);
        d.set_upstream(e, c);
        add_clients(&mut d, &format!("clients{i}"), n, e, d_client_edge);
    }
    debug_assert!(validate(&d).is_ok(), "Figure 4 is a valid deployment");
    d
}

/// The client id of every node (0 for non-clients): clients in node order
/// from 1.
pub fn client_ids(d: &TxnDeployment) -> Vec<u32> {
    let mut next = 0;
    d.nodes
        .iter()
        .map(|n| {
            if n.role.is_client() {
                next += 1;
                next
            } else {
                0
            }
        })
        .collect::<Vec<u32>>()
        .into_iter()
        .inspect(|_| debug_assert!(d.nodes.len() < u32::MAX as usize))
        .collect()
}

/// The store, and the path of switches from `node` to it.
pub fn path_to_store(d: &TxnDeployment, node: NodeIx) -> Vec<NodeIx> {
    let mut path = vec![];
    let mut at = node;
    while let Some(up) = d.nodes[at].upstream {
        path.push(up);
        // `validate` refuses upstream cycles; a path visits each node once.
        debug_assert!(path.len() <= d.nodes.len(), "an upstream cycle through '{}'", d.nodes[up].name);
        at = up;
    }
    path
}

/// Checks what the transaction service needs beyond
/// [`Deployment::validate`]: exactly one store; switches and clients have an
/// upstream that is a switch or the store; nothing is upstream of a client;
/// every client reaches the store.
pub fn validate(d: &TxnDeployment) -> Result<(), DeployError> {
    d.validate()?;
    let err = |s: String| Err(DeployError(s));
    let stores = d.with_role(|r| *r == TxnRole::Store);
    if stores.len() != 1 {
        return err(format!("a transaction deployment has one store; this one has {}", stores.len()));
    }
    let store = stores[0];
    for n in &d.nodes {
        match (&n.role, n.upstream) {
            (TxnRole::Store, Some(_)) => {
                return err(format!("store '{}' has an upstream; only switches and clients do", n.name))
            }
            (TxnRole::Switch(_) | TxnRole::Client, None) => {
                return err(format!("{} '{}' needs an upstream (a switch or the store)", n.role.name(), n.name))
            }
            (_, Some(u)) if d.nodes[u].role.is_client() => {
                return err(format!("'{}' has client '{}' as its upstream", n.name, d.nodes[u].name))
            }
            _ => {}
        }
        if !n.ports.is_empty() || !n.groups.is_empty() {
            return err(format!("'{}': transaction nodes use no ports or groups", n.name));
        }
    }
    for (i, n) in d.nodes.iter().enumerate() {
        if n.role != TxnRole::Store && path_to_store(d, i).last() != Some(&store) {
            return err(format!("'{}' does not reach the store through its upstreams", n.name));
        }
    }
    debug_assert!(d.nodes[store].upstream.is_none());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn figure3_and_figure4_are_valid() {
        let d = single_switch(8, SwitchSpec::new(Mode::OptimisticAbort), ms(10), ms(40));
        validate(&d).unwrap();
        assert_eq!(d.nodes.len(), 10);
        assert_eq!(client_ids(&d)[2..], (1..=8).collect::<Vec<u32>>());
        let oa = SwitchSpec::new(Mode::OptimisticAbort);
        let t = tree(&[2, 3], oa, oa, ms(1), ms(5), ms(40));
        validate(&t).unwrap();
        let edge1 = t.find("edge1").unwrap();
        let client = t.find("clients1.2").unwrap();
        assert_eq!(path_to_store(&t, client), vec![edge1, 1, 0]);
        assert_eq!(t.nodes[client].machine(), "clients1");
        assert_eq!(t.machines().len(), 6, "store, core, and per edge the switch and its client group");
    }

    #[test]
    fn a_deployment_without_a_store_path_is_refused() {
        let mut d = single_switch(1, SwitchSpec::new(Mode::Forward), ms(1), ms(1));
        d.nodes[1].upstream = None;
        assert!(validate(&d).unwrap_err().0.contains("needs an upstream"));
        let mut d = single_switch(1, SwitchSpec::new(Mode::Forward), ms(1), ms(1));
        let extra = add(&mut d, "store2", TxnRole::Store);
        d.link(extra, 1, ms(1));
        assert!(validate(&d).unwrap_err().0.contains("one store"));
    }
}
