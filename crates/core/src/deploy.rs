//! Deployments as data: which nodes a service has, what each runs, how they
//! are linked and what each node's forwarding tables hold.
//!
//! A [`Deployment`] is runtime-neutral. Each service builds its own (the
//! `deploy` module next to its protocol: `innet_txn::deploy`,
//! `innet_paxos::deploy`, `innet_chain::deploy`), from a few numbers or
//! from a topology file, and every runtime instantiates any description
//! with one generic function: the simulator (`innet_sim::Sim::instantiate`),
//! the live UDP runtime, the XDP namespace testbed and Mininet. So a
//! service's wiring (roles, ports, multicast groups, upstream relations)
//! is written once, here in data, and never again per runtime.
//!
//! Nodes refer to each other by index ([`NodeIx`]); runtimes map indexes to
//! their own addresses (simulator node ids, UDP socket addresses, veth
//! interfaces). What a node's tables hold is what a P4 control plane would
//! write into a switch: the upstream neighbour ([`Dest::Upstream`],
//! [`Verdict::Upstream`]), ports ([`Dest::Port`], [`Verdict::Port`]) and
//! multicast groups ([`Dest::Group`], [`Verdict::Multicast`]).
//!
//! [`Dest::Upstream`]: crate::Dest::Upstream
//! [`Dest::Port`]: crate::Dest::Port
//! [`Dest::Group`]: crate::Dest::Group
//! [`Verdict::Upstream`]: crate::Verdict::Upstream
//! [`Verdict::Port`]: crate::Verdict::Port
//! [`Verdict::Multicast`]: crate::Verdict::Multicast

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use crate::Member;

/// A node's index in its deployment.
pub type NodeIx = usize;

/// The two shapes of role (see `ARCHITECTURE.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    /// A data-plane program ([`crate::DataPlane`]): a switch, an XDP program,
    /// or (the software baseline) the same program in a process.
    Program,
    /// An end host ([`crate::Host`]).
    Host,
}

/// Where a service's data-plane programs run. One name for one idea in
/// every command, document, result record and plot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum DataPlaneAt {
    /// In a switch: the simulator's switch nodes, the live runtime's
    /// user-space software switches (with the origin carried between them).
    #[default]
    Switch,
    /// In ordinary processes, as end hosts (the software baseline: the
    /// papers' "libpaxos-style" deployment).
    Process,
    /// As XDP/eBPF programs in the Linux kernel (the namespace testbed).
    Xdp,
}

impl DataPlaneAt {
    pub const ALL: [DataPlaneAt; 3] = [DataPlaneAt::Switch, DataPlaneAt::Process, DataPlaneAt::Xdp];

    pub fn name(self) -> &'static str {
        let name = match self {
            DataPlaneAt::Switch => "switch",
            DataPlaneAt::Process => "process",
            DataPlaneAt::Xdp => "xdp",
        };
        debug_assert!(DataPlaneAt::ALL.contains(&self), "{name} missing from DataPlaneAt::ALL");
        name
    }
}

impl fmt::Display for DataPlaneAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why "software" is not a data plane name: it meant [`DataPlaneAt::Process`]
/// in earlier consensus records and [`DataPlaneAt::Switch`] on the XDP
/// testbed.
pub const SOFTWARE_REFUSED: &str = "'software' is no longer a data plane name: say process (every role an ordinary \
                                    process, the software baseline) or switch (user-space software switches)";

impl std::str::FromStr for DataPlaneAt {
    type Err = String;
    fn from_str(s: &str) -> Result<DataPlaneAt, String> {
        match s {
            // Earlier consensus records said "software" for `process`, the
            // XDP testbed for `switch`: one word for two data planes, so
            // it is refused with both choices.
            "software" => Err(SOFTWARE_REFUSED.into()),
            _ => DataPlaneAt::ALL
                .into_iter()
                .find(|d| d.name() == s)
                .ok_or_else(|| format!("unknown data plane '{s}': expected switch, process or xdp")),
        }
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for DataPlaneAt {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for DataPlaneAt {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<DataPlaneAt, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// One node: its name, its role (with the role's configuration, a type of
/// the service's own) and its tables.
#[derive(Clone, Debug, PartialEq)]
pub struct Node<R> {
    pub name: String,
    pub role: R,
    pub shape: Shape,
    /// The service side: where `Upstream` packets and verdicts go.
    pub upstream: Option<NodeIx>,
    /// Port number -> neighbour.
    pub ports: BTreeMap<u16, NodeIx>,
    /// Group number -> members (a member may be the packet's origin).
    pub groups: BTreeMap<u16, Vec<Member<NodeIx>>>,
    /// Nodes with the same machine run together: one process (live), one
    /// network namespace (XDP testbed), one Mininet host. `None`: a machine
    /// of its own.
    pub machine: Option<String>,
}

impl<R> Node<R> {
    /// The machine this node runs on: its `machine`, or its own name.
    pub fn machine(&self) -> &str {
        debug_assert!(self.machine.as_deref() != Some(""), "node '{}' on a machine with no name", self.name);
        self.machine.as_deref().unwrap_or(&self.name)
    }

    /// Every node this node's tables name (upstream, ports, group members).
    pub fn neighbours(&self) -> Vec<NodeIx> {
        let mut v: Vec<NodeIx> = self.upstream.into_iter().collect();
        v.extend(self.ports.values().copied());
        for members in self.groups.values() {
            v.extend(members.iter().filter_map(|m| match m {
                Member::Node(n) => Some(*n),
                Member::Origin => None,
            }));
        }
        v.sort_unstable();
        v.dedup();
        debug_assert!(v.windows(2).all(|w| w[0] < w[1]), "neighbours sorted and distinct");
        v
    }
}

/// A bidirectional link with a one-way delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    pub a: NodeIx,
    pub b: NodeIx,
    pub delay: Duration,
}

impl Link {
    /// The other end, if `n` is one end.
    pub fn other(&self, n: NodeIx) -> Option<NodeIx> {
        let other = if self.a == n {
            Some(self.b)
        } else if self.b == n {
            Some(self.a)
        } else {
            None
        };
        debug_assert!(other != Some(n) || self.a == self.b, "only a link to itself leads back to its end");
        other
    }
}

/// A service's deployment. See the module doc.
#[derive(Clone, Debug, PartialEq)]
pub struct Deployment<R> {
    /// The service's name ("txn", "paxos", "chain").
    pub service: &'static str,
    pub nodes: Vec<Node<R>>,
    pub links: Vec<Link>,
    /// Nodes without a link between them reach each other through the rest
    /// of the network with this one-way delay (a one-switch fabric, as in
    /// the CAANS testbed); `None`: only linked nodes talk.
    pub fabric: Option<Duration>,
}

/// What is wrong with a deployment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeployError(pub String);

impl fmt::Display for DeployError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DeployError {}

impl<R> Deployment<R> {
    pub fn new(service: &'static str) -> Deployment<R> {
        debug_assert!(!service.is_empty(), "a deployment names its service (messages and records use it)");
        Deployment { service, nodes: vec![], links: vec![], fabric: None }
    }

    /// Adds a node with empty tables; its index.
    pub fn add(&mut self, name: impl Into<String>, role: R, shape: Shape) -> NodeIx {
        self.nodes.push(Node {
            name: name.into(),
            role,
            shape,
            upstream: None,
            ports: BTreeMap::new(),
            groups: BTreeMap::new(),
            machine: None,
        });
        let ix = self.nodes.len() - 1;
        debug_assert!(self.nodes[ix].upstream.is_none() && self.nodes[ix].ports.is_empty());
        ix
    }

    /// Links `a` and `b` with a one-way `delay` (replacing an earlier link
    /// between them).
    pub fn link(&mut self, a: NodeIx, b: NodeIx, delay: Duration) {
        self.links.retain(|l| l.other(a) != Some(b));
        self.links.push(Link { a, b, delay });
        debug_assert_eq!(self.links.iter().filter(|l| l.other(a) == Some(b)).count(), 1, "one link per pair");
    }

    pub fn set_upstream(&mut self, node: NodeIx, upstream: NodeIx) {
        self.nodes[node].upstream = Some(upstream);
        debug_assert!(self.nodes[node].neighbours().contains(&upstream));
    }

    pub fn set_port(&mut self, node: NodeIx, port: u16, to: NodeIx) {
        self.nodes[node].ports.insert(port, to);
        debug_assert_eq!(self.nodes[node].ports.get(&port), Some(&to));
    }

    pub fn set_group(&mut self, node: NodeIx, group: u16, members: Vec<Member<NodeIx>>) {
        self.nodes[node].groups.insert(group, members);
        debug_assert!(self.nodes[node].groups.contains_key(&group));
    }

    /// The node named `name`.
    pub fn find(&self, name: &str) -> Option<NodeIx> {
        let found = self.nodes.iter().position(|n| n.name == name);
        debug_assert!(found.is_none_or(|i| self.nodes[i].name == name));
        found
    }

    pub fn names(&self) -> Vec<&str> {
        let names: Vec<&str> = self.nodes.iter().map(|n| n.name.as_str()).collect();
        debug_assert_eq!(names.len(), self.nodes.len());
        names
    }

    /// Indexes of the nodes whose role passes `f`.
    pub fn with_role(&self, f: impl Fn(&R) -> bool) -> Vec<NodeIx> {
        let found: Vec<NodeIx> = (0..self.nodes.len()).filter(|&i| f(&self.nodes[i].role)).collect();
        debug_assert!(found.windows(2).all(|w| w[0] < w[1]), "indexes in node order");
        found
    }

    /// The link between `a` and `b`, if any.
    pub fn link_between(&self, a: NodeIx, b: NodeIx) -> Option<&Link> {
        let link = self.links.iter().find(|l| l.other(a) == Some(b));
        debug_assert!(link.is_none_or(|l| (l.a, l.b) == (a, b) || (l.a, l.b) == (b, a)));
        link
    }

    /// The one-way delay from `a` to `b`: their link's, else the fabric's.
    pub fn delay(&self, a: NodeIx, b: NodeIx) -> Option<Duration> {
        let delay = self.link_between(a, b).map(|l| l.delay).or(self.fabric);
        debug_assert!(delay.is_some() || self.fabric.is_none(), "a fabric reaches every pair");
        delay
    }

    /// Nodes whose upstream is `n` (a switch's downstream neighbours).
    pub fn downstream_of(&self, n: NodeIx) -> Vec<NodeIx> {
        let below: Vec<NodeIx> = (0..self.nodes.len()).filter(|&i| self.nodes[i].upstream == Some(n)).collect();
        debug_assert!(!below.contains(&n) || self.nodes[n].upstream == Some(n));
        below
    }

    /// The machines, in order of first appearance, with their nodes.
    pub fn machines(&self) -> Vec<(String, Vec<NodeIx>)> {
        let mut out: Vec<(String, Vec<NodeIx>)> = vec![];
        for (i, n) in self.nodes.iter().enumerate() {
            match out.iter_mut().find(|(m, _)| m == n.machine()) {
                Some((_, v)) => v.push(i),
                None => out.push((n.machine().to_string(), vec![i])),
            }
        }
        debug_assert_eq!(
            out.iter().map(|(_, v)| v.len()).sum::<usize>(),
            self.nodes.len(),
            "every node on one machine"
        );
        out
    }

    /// Checks what every runtime relies on: unique non-empty names, indexes
    /// in range, every neighbour reachable (a link, or the fabric), at most
    /// one link per pair, and no upstream cycle (a packet sent upstream
    /// would loop for ever).
    pub fn validate(&self) -> Result<(), DeployError> {
        let err = |s: String| Err(DeployError(s));
        let n = self.nodes.len();
        if n == 0 {
            return err("the deployment has no nodes".into());
        }
        for (i, node) in self.nodes.iter().enumerate() {
            if node.name.is_empty() {
                return err(format!("node #{} has an empty name", i + 1));
            }
            if self.nodes[..i].iter().any(|m| m.name == node.name) {
                return err(format!("node name '{}' is used twice", node.name));
            }
        }
        for (i, l) in self.links.iter().enumerate() {
            if l.a >= n || l.b >= n {
                return err(format!("link #{} names a node that does not exist", i + 1));
            }
            if l.a == l.b {
                return err(format!("link #{} joins '{}' to itself", i + 1, self.nodes[l.a].name));
            }
            if self.links[..i].iter().any(|m| m.other(l.a) == Some(l.b)) {
                return err(format!(
                    "'{}' and '{}' are linked twice: keep one link",
                    self.nodes[l.a].name, self.nodes[l.b].name
                ));
            }
        }
        for (i, node) in self.nodes.iter().enumerate() {
            for m in node.neighbours() {
                if m >= n {
                    return err(format!("node '{}' names node #{m}, which does not exist", node.name));
                }
                if m == i {
                    return err(format!("node '{}' names itself as a neighbour", node.name));
                }
                if self.fabric.is_none() && self.link_between(i, m).is_none() {
                    return err(format!(
                        "node '{}' sends to '{}' but no link joins them: add a link",
                        node.name, self.nodes[m].name
                    ));
                }
            }
        }
        debug_assert!(self.links.iter().all(|l| l.a < n && l.b < n && l.a != l.b));
        self.check_upstream_acyclic()
    }

    fn check_upstream_acyclic(&self) -> Result<(), DeployError> {
        for start in 0..self.nodes.len() {
            let mut seen = vec![start];
            let mut at = start;
            while let Some(up) = self.nodes[at].upstream {
                if seen.contains(&up) {
                    let path: Vec<&str> = seen.iter().map(|&i| self.nodes[i].name.as_str()).collect();
                    return Err(DeployError(format!(
                        "upstream relations form a cycle ({} -> {}): a request would loop for ever; \
                         point the last switch at the store",
                        path.join(" -> "),
                        self.nodes[up].name
                    )));
                }
                seen.push(up);
                debug_assert!(seen.len() <= self.nodes.len(), "a path longer than the deployment without a cycle");
                at = up;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn tree() -> Deployment<&'static str> {
        let mut d = Deployment::new("txn");
        let store = d.add("store", "store", Shape::Host);
        let core = d.add("core", "switch", Shape::Program);
        let edge = d.add("edge", "switch", Shape::Program);
        d.link(core, store, ms(40));
        d.link(edge, core, ms(5));
        d.set_upstream(core, store);
        d.set_upstream(edge, core);
        d
    }

    #[test]
    fn a_tree_is_valid_and_knows_its_neighbours() {
        let d = tree();
        d.validate().unwrap();
        assert_eq!(d.downstream_of(1), vec![2]);
        assert_eq!(d.delay(2, 1), Some(ms(5)));
        assert_eq!(d.delay(2, 0), None, "no link, no fabric");
        assert_eq!(d.nodes[2].neighbours(), vec![1]);
    }

    #[test]
    fn an_upstream_cycle_is_refused_with_its_path() {
        let mut d = tree();
        d.set_upstream(1, 2);
        let e = d.validate().unwrap_err().0;
        assert!(e.contains("cycle") && e.contains("core -> edge -> core"), "{e}");
    }

    #[test]
    fn an_unlinked_neighbour_is_refused_without_a_fabric() {
        let mut d = tree();
        d.set_port(2, 0, 0);
        assert!(d.validate().unwrap_err().0.contains("no link joins them"));
        d.fabric = Some(ms(1));
        d.validate().unwrap();
    }

    #[test]
    fn names_and_links_are_checked() {
        let mut d = tree();
        d.nodes[2].name = "core".into();
        assert!(d.validate().unwrap_err().0.contains("used twice"));
        let mut d = tree();
        d.links.push(Link { a: 0, b: 1, delay: ms(1) });
        assert!(d.validate().unwrap_err().0.contains("linked twice"));
        let mut d = tree();
        d.link(0, 0, ms(1));
        assert!(d.validate().unwrap_err().0.contains("to itself"));
    }

    #[test]
    fn machines_group_nodes() {
        let mut d = tree();
        d.nodes[1].machine = Some("m".into());
        d.nodes[2].machine = Some("m".into());
        assert_eq!(d.machines(), vec![("store".to_string(), vec![0]), ("m".to_string(), vec![1, 2])]);
    }

    #[test]
    fn data_plane_names_round_trip() {
        for d in DataPlaneAt::ALL {
            assert_eq!(d.name().parse::<DataPlaneAt>().unwrap(), d);
        }
        let software = "software".parse::<DataPlaneAt>().unwrap_err();
        assert!(software.contains("say process") && software.contains("or switch"), "{software}");
        assert!("kernel".parse::<DataPlaneAt>().unwrap_err().contains("switch, process or xdp"));
    }
}
