//! A deployment description ([`innet_core::deploy`]) on UDP: every node's
//! address, and what its runtime needs to reach its neighbours.
//!
//! Given one socket address per node, [`host_options`] and [`switch_setup`]
//! turn a node's tables into the live runtime's: its upstream, ports and
//! groups as addresses, the other software switches it exchanges the origin
//! shim with, and which link delays it emulates.
//!
//! [`instantiate`] is the live twin of the simulator's `Sim::instantiate`
//! (stateright's `spawn` is the model): it binds every local node's socket
//! first ([`bind`]), so every address is known, then hands each node a
//! [`Slot`] (its socket, every address, its options from the deployment's
//! tables) and the caller's `make` starts its runtime, a software switch
//! ([`Slot::switch`]) or an end host ([`Slot::host`]), on a thread under the
//! given [`Stop`]. Every live start of a service's nodes goes through it.
//!
//! Delays: the live runtime emulates each link's one-way delay at exactly
//! one of its ends, the one whose upstream the link leads to (a client
//! emulates its access link; an edge switch its link to the core; the core
//! its link to the store), in both directions. Links without an upstream
//! relation, and a fabric with a delay, are not emulated live: [`check`]
//! refuses them, so a file never runs with delays silently missing.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::time::Duration;

use innet_core::deploy::{DataPlaneAt, Deployment, Node, NodeIx, Shape};
use innet_core::{DataPlane, Host, Member};

use crate::host::{spawn_host_counted, HostOptions, HostStats, NodeHandle, OwnCounters};
use crate::switch::{spawn_switch_with_tables, SwitchNode, SwitchOptions, SwitchTables};
use crate::Stop;

/// Where a node of a live deployment runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// In this process: its socket binds `listen`; peers reach it at
    /// `advertise` (`None`: the bound address, on loopback when it is
    /// bound to every address).
    Here { listen: SocketAddr, advertise: Option<SocketAddr> },
    /// In another process or on another machine, reached at this address.
    Elsewhere(SocketAddr),
    /// Without a socket: the caller runs it in this process, talking to the
    /// nodes in memory (the chain's in-process control plane). Its address
    /// is 0.0.0.0:0, which no node sends to.
    Unbound,
}

impl Place {
    /// Here, at `listen`, reached where it is bound.
    pub fn here(listen: SocketAddr) -> Place {
        Place::Here { listen, advertise: None }
    }
}

/// A deployment's local sockets, bound, and every node's address: what
/// [`bind`] gives and [`Bound::start`] starts.
#[derive(Debug)]
pub struct Bound {
    /// Every node's address, in node order.
    pub addrs: Vec<SocketAddr>,
    /// By node: its socket, if it runs here and has not been taken.
    sockets: Vec<Option<UdpSocket>>,
}

/// `addr` as its peers on this machine see it: bound to every address, it
/// is reached (and sends) over loopback.
pub fn reachable(mut addr: SocketAddr) -> SocketAddr {
    if addr.ip().is_unspecified() {
        addr.set_ip(match addr.ip() {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
        });
    }
    addr
}

/// Binds the socket of every node `places` puts here, in node order, and
/// works out every node's address. An error names the node.
pub fn bind<R>(d: &Deployment<R>, places: &[Place]) -> io::Result<Bound> {
    if places.len() != d.nodes.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} places for the {} nodes of the {} deployment", places.len(), d.nodes.len(), d.service),
        ));
    }
    let mut addrs = Vec::with_capacity(places.len());
    let mut sockets = Vec::with_capacity(places.len());
    for (n, place) in d.nodes.iter().zip(places) {
        match *place {
            Place::Here { listen, advertise } => {
                let s = crate::ports::bind(listen)
                    .map_err(|e| io::Error::new(e.kind(), format!("node '{}': {e}", n.name)))?;
                addrs.push(advertise.unwrap_or(reachable(s.local_addr()?)));
                sockets.push(Some(s));
            }
            Place::Elsewhere(a) => {
                addrs.push(a);
                sockets.push(None);
            }
            Place::Unbound => {
                addrs.push(SocketAddr::from(([0, 0, 0, 0], 0)));
                sockets.push(None);
            }
        }
    }
    debug_assert_eq!(addrs.len(), d.nodes.len(), "one address per node");
    Ok(Bound { addrs, sockets })
}

impl Bound {
    /// Takes node `i`'s socket (a node the caller runs itself, e.g. a load
    /// generator): [`Bound::start`] then leaves it out.
    pub fn take(&mut self, i: NodeIx) -> Option<UdpSocket> {
        self.sockets.get_mut(i).and_then(Option::take)
    }

    /// Whether node `i` has a socket here still to start.
    pub fn is_here(&self, i: NodeIx) -> bool {
        self.sockets.get(i).is_some_and(Option::is_some)
    }

    /// Calls `make` on every node with a socket here, in node order, and
    /// collects what it started. `at` is where the deployment's data-plane
    /// programs run (a program node's switch peers, [`switch_setup`]).
    pub fn start<R, T, E>(
        mut self,
        d: &Deployment<R>,
        at: DataPlaneAt,
        stop: &Stop,
        mut make: impl FnMut(Slot<'_, R>) -> Result<T, E>,
    ) -> Result<Vec<(NodeIx, T)>, E> {
        let mut started = vec![];
        for ix in 0..d.nodes.len() {
            let Some(socket) = self.take(ix) else { continue };
            let slot = Slot { deployment: d, at, addrs: &self.addrs, ix, socket, stop };
            started.push((ix, make(slot)?));
        }
        debug_assert!(self.sockets.iter().all(Option::is_none), "every local node offered to make");
        Ok(started)
    }
}

/// A running deployment: every node's address and what `make` started.
pub struct Instance<T> {
    /// Every node's address, in node order.
    pub addrs: Vec<SocketAddr>,
    /// `(node, what runs)`, in node order, for the nodes placed here.
    pub nodes: Vec<(NodeIx, T)>,
}

/// Starts `d` on UDP: binds every node `places` puts here, then calls
/// `make` on each in node order (see the module doc).
pub fn instantiate<R, T, E: From<io::Error>>(
    d: &Deployment<R>,
    at: DataPlaneAt,
    places: &[Place],
    stop: &Stop,
    make: impl FnMut(Slot<'_, R>) -> Result<T, E>,
) -> Result<Instance<T>, E> {
    let bound = bind(d, places)?;
    let addrs = bound.addrs.clone();
    let nodes = bound.start(d, at, stop, make)?;
    Ok(Instance { addrs, nodes })
}

/// One node handed to `make`: its bound socket, every node's address, and
/// its options from the deployment's tables.
pub struct Slot<'a, R> {
    pub deployment: &'a Deployment<R>,
    pub at: DataPlaneAt,
    /// Every node's address, in node order.
    pub addrs: &'a [SocketAddr],
    pub ix: NodeIx,
    pub socket: UdpSocket,
    pub stop: &'a Stop,
}

impl<R> Slot<'_, R> {
    pub fn node(&self) -> &Node<R> {
        &self.deployment.nodes[self.ix]
    }

    pub fn name(&self) -> &str {
        &self.node().name
    }

    /// Whether the node runs as a software switch ([`runs_as_switch`]).
    pub fn runs_as_switch(&self) -> bool {
        runs_as_switch(self.deployment, self.at, self.ix)
    }

    /// Its ports, groups and upstream as an end host ([`host_options`]).
    pub fn host_options(&self) -> HostOptions {
        host_options(self.deployment, self.addrs, self.ix)
    }

    /// Its options and tables as a software switch ([`switch_setup`]).
    pub fn switch_setup(&self, downstream_delay: Duration) -> (SwitchOptions, SwitchTables) {
        switch_setup(self.deployment, self.at, self.addrs, self.ix, downstream_delay)
    }

    /// Starts `program` as a software switch on the node's socket, in a
    /// thread that stops with the slot's stop.
    pub fn switch<P: DataPlane + Send + 'static>(
        self,
        program: P,
        opts: SwitchOptions,
        tables: SwitchTables,
    ) -> io::Result<SwitchNode<P>> {
        let name = self.name().to_string();
        spawn_switch_with_tables(&name, program, self.socket, opts, tables, self.stop)
    }

    /// Starts an end host (built by `make` in its thread) on the node's
    /// socket, publishing `own` counters; `finish` gives the handle's
    /// result ([`spawn_host_counted`]).
    pub fn host<H, T, M, F>(
        self,
        opts: HostOptions,
        make: M,
        own: OwnCounters<H>,
        finish: F,
    ) -> io::Result<NodeHandle<T>>
    where
        H: Host + 'static,
        T: Send + 'static,
        M: FnOnce() -> H + Send + 'static,
        F: FnOnce(H, HostStats) -> T + Send + 'static,
    {
        let name = self.name().to_string();
        spawn_host_counted(&name, self.socket, opts, self.stop, make, own, finish)
    }
}

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
