//! A deployment description ([`innet_core::deploy`]) on UDP: every node's
//! address, and what its runtime needs to reach its neighbours.
//!
//! Given one socket address per node, [`host_options`] and [`switch_setup`]
//! turn a node's tables into the live runtime's: its upstream, ports and
//! groups as addresses, the other software switches it exchanges the origin
//! shim with, and which link delays it emulates.
//!
//! Delays: the live runtime emulates each link's one-way delay at exactly
//! one of its ends, the one whose upstream the link leads to (a client
//! emulates its access link; an edge switch its link to the core; the core
//! its link to the store), in both directions. Links without an upstream
//! relation, and a fabric with a delay, are not emulated live: [`check`]
//! refuses them, so a file never runs with delays silently missing.

use std::net::SocketAddr;
use std::time::Duration;

use innet_core::deploy::{DataPlaneAt, Deployment, NodeIx, Shape};
use innet_core::Member;

use crate::host::HostOptions;
use crate::switch::{SwitchOptions, SwitchTables};

/// Whether node `i` runs as a software switch (a program in a switch
/// process) rather than as an end host.
pub fn runs_as_switch<R>(d: &Deployment<R>, at: DataPlaneAt, i: NodeIx) -> bool {
    d.nodes[i].shape == Shape::Program && at == DataPlaneAt::Switch
}

/// Refuses what the live runtime cannot emulate (see the module doc).
pub fn check<R>(d: &Deployment<R>) -> Result<(), String> {
    if let Some(f) = d.fabric.filter(|f| !f.is_zero()) {
        return Err(format!(
            "the live runtime does not emulate the fabric's delay ({} ms): set it to 0, or give the \
             delays as links between a node and its upstream",
            f.as_secs_f64() * 1e3
        ));
    }
    for l in &d.links {
        let up = |x: NodeIx, y: NodeIx| d.nodes[x].upstream == Some(y);
        if !l.delay.is_zero() && !up(l.a, l.b) && !up(l.b, l.a) {
            return Err(format!(
                "link {} - {} has a delay but neither end is the other's upstream: the live runtime \
                 emulates delays on links towards an upstream only",
                d.nodes[l.a].name, d.nodes[l.b].name
            ));
        }
    }
    Ok(())
}

/// The one-way delay node `i` emulates on its link to its upstream.
fn upstream_delay<R>(d: &Deployment<R>, i: NodeIx) -> Duration {
    d.nodes[i].upstream.and_then(|u| d.link_between(i, u)).map_or(Duration::ZERO, |l| l.delay)
}

/// Node `i`'s ports and groups as addresses, for an end host.
pub fn host_options<R>(d: &Deployment<R>, addrs: &[SocketAddr], i: NodeIx) -> HostOptions {
    let n = &d.nodes[i];
    let mut o =
        HostOptions { upstream: n.upstream.map(|u| addrs[u]), delay: upstream_delay(d, i), ..HostOptions::default() };
    if let Some(&last) = n.ports.keys().last() {
        // Ports are dense in every service; a gap would be a port nothing
        // answers on.
        let unset = SocketAddr::from(([0, 0, 0, 0], 0));
        o.ports = (0..=last).map(|p| n.ports.get(&p).map_or(unset, |&to| addrs[to])).collect();
    }
    for (&g, members) in &n.groups {
        let to = members
            .iter()
            .filter_map(|m| match m {
                Member::Node(x) => Some(addrs[*x]),
                // An end host has no origin to send to: only switches do.
                Member::Origin => None,
            })
            .collect();
        o.groups.insert(g, to);
    }
    o
}

/// Node `i`'s options and forwarding tables, for a software switch.
/// `downstream_delay` is what it emulates towards peers that are not in the
/// deployment (clients started by hand).
pub fn switch_setup<R>(
    d: &Deployment<R>,
    at: DataPlaneAt,
    addrs: &[SocketAddr],
    i: NodeIx,
    downstream_delay: Duration,
) -> (SwitchOptions, SwitchTables) {
    let n = &d.nodes[i];
    // A switch without an upstream never sends there; the address only
    // classifies senders, so it is one nobody sends from.
    let upstream = n.upstream.map_or(SocketAddr::from(([0, 0, 0, 0], 0)), |u| addrs[u]);
    let opts = SwitchOptions::new(upstream).with_delays(upstream_delay(d, i), downstream_delay);
    let mut t = SwitchTables::default();
    for (&p, &to) in &n.ports {
        t.set_port(p, Some(addrs[to]));
    }
    for (&g, members) in &n.groups {
        let to = members
            .iter()
            .map(|m| match m {
                Member::Node(x) => Member::Node(addrs[*x]),
                Member::Origin => Member::Origin,
            })
            .collect();
        t.groups.insert(g, to);
    }
    t.switch_peers = (0..d.nodes.len()).filter(|&j| j != i && runs_as_switch(d, at, j)).map(|j| addrs[j]).collect();
    (opts, t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(p: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], p))
    }

    #[test]
    fn a_tree_becomes_addresses_and_upstream_delays() {
        let mut d: Deployment<()> = Deployment::new("t");
        let store = d.add("store", (), Shape::Host);
        let core = d.add("core", (), Shape::Program);
        let edge = d.add("edge", (), Shape::Program);
        let client = d.add("client", (), Shape::Host);
        d.link(core, store, Duration::from_millis(40));
        d.link(edge, core, Duration::from_millis(5));
        d.link(client, edge, Duration::from_millis(1));
        d.set_upstream(core, store);
        d.set_upstream(edge, core);
        d.set_upstream(client, edge);
        check(&d).unwrap();
        let addrs: Vec<SocketAddr> = (0..4).map(|p| addr(9000 + p)).collect();
        let (o, t) = switch_setup(&d, DataPlaneAt::Switch, &addrs, edge, Duration::ZERO);
        assert_eq!((o.upstream, o.upstream_delay), (addrs[core], Duration::from_millis(5)));
        assert_eq!(t.switch_peers, [addrs[core]].into_iter().collect());
        let h = host_options(&d, &addrs, client);
        assert_eq!((h.upstream, h.delay), (Some(addrs[edge]), Duration::from_millis(1)));
        d.link(store, client, Duration::from_millis(3));
        assert!(check(&d).unwrap_err().contains("upstream only"));
    }
}
