//! Any deployment description as network namespaces: the generic part of
//! the XDP testbed.
//!
//! Each machine of a [`Deployment`] (a node, or the nodes that share a
//! `machine`, e.g. a client group) becomes one network namespace; each pair
//! of machines that the deployment links becomes one veth pair on a /24 of
//! its own (`10.<octet>.<link>.0/24`, the pair's first machine `.1`, the
//! second `.2`, fixed MACs `02:<octet>:00:00:<link>:<side>`). Every
//! namespace gets a route to every link's subnet through the machine graph
//! and forwards IPv4, so end hosts reach each other across switch
//! namespaces the way they would across routers; what a switch's data
//! plane (an XDP program on its devices) does with its own traffic comes on
//! top. A service's testbed then reads addresses, devices and MACs from the
//! [`Net`] to configure its programs and start its end hosts.
//!
//! Link delays are not applied here: there is no netem on these machines.
//! End hosts emulate the delay of their own links in user space; a delay
//! between two switch namespaces cannot be emulated (the packet never
//! leaves the kernel) and [`Net::unemulated_delays`] names such links.

use std::collections::VecDeque;
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};

use innet_core::deploy::{Deployment, Shape};

/// Every namespace, link and pin a testbed makes starts with this.
pub const PREFIX: &str = "innet-";

/// Runs `ip [-n ns] -batch -` on `lines`.
pub(crate) fn ip_batch(ns: Option<&str>, lines: &str) -> Result<()> {
    let mut cmd = std::process::Command::new("ip");
    if let Some(ns) = ns {
        cmd.args(["-n", ns]);
    }
    let mut child = cmd
        .args(["-batch", "-"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .context("run `ip` (package iproute2)")?;
    std::io::Write::write_all(&mut child.stdin.take().expect("piped"), lines.as_bytes())?;
    let done = child.wait_with_output()?;
    anyhow::ensure!(
        done.status.success(),
        "ip {}-batch: {}",
        ns.map(|n| format!("-n {n} ")).unwrap_or_default(),
        String::from_utf8_lossy(&done.stderr).trim()
    );
    Ok(())
}

pub(crate) fn ip(args: &[&str]) -> Result<String> {
    let out = Command::new("ip").args(args).output().context("run `ip` (package iproute2)")?;
    if !out.status.success() {
        bail!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

pub(crate) fn mac_str(m: [u8; 6]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

/// `innet-*` namespaces that exist now.
pub fn namespaces() -> Result<Vec<String>> {
    Ok(ip(&["netns", "list"])?
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(PREFIX))
        .map(str::to_string)
        .collect())
}

/// `innet-*` links in the root namespace.
pub fn root_links() -> Result<Vec<String>> {
    let v: serde_json::Value = serde_json::from_str(&ip(&["-j", "link", "show"])?)?;
    Ok(v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|l| l["ifname"].as_str())
        .filter(|n| n.starts_with(PREFIX))
        .map(str::to_string)
        .collect())
}

/// The ifindex of `dev` inside namespace `ns`.
pub fn ifindex(ns: &str, dev: &str) -> Result<u32> {
    let v: serde_json::Value = serde_json::from_str(&ip(&["-n", ns, "-j", "link", "show", "dev", dev])?)?;
    v[0]["ifindex"].as_u64().map(|i| i as u32).with_context(|| format!("no ifindex for {dev} in {ns}"))
}

/// Runs `f` on a thread that has entered network namespace `ns` (XDP
/// attach and detach work on the ifindexes of the caller's namespace).
pub fn in_netns<T: Send>(ns: &str, f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    let path = Path::new("/run/netns").join(ns);
    let file = std::fs::File::open(&path).with_context(|| format!("open {}", path.display()))?;
    std::thread::scope(|s| {
        s.spawn(|| {
            use std::os::fd::AsRawFd;
            // SAFETY: setns(2) moves only this thread, with an open netns fd.
            if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                bail!("setns {ns}: {}", std::io::Error::last_os_error());
            }
            f()
        })
        .join()
        .unwrap_or_else(|_| bail!("thread in {ns} panicked"))
    })
}

/// One end of a veth pair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Iface {
    /// Index into [`Net::namespaces`].
    pub machine: usize,
    pub dev: String,
    pub mac: [u8; 6],
    pub ip: Ipv4Addr,
}

/// A veth pair between two machines, with the deployment's one-way delay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetLink {
    pub a: Iface,
    pub b: Iface,
    pub delay: Duration,
}

/// The namespaces and veths of one deployment (see the module docs).
#[derive(Clone, Debug)]
pub struct Net {
    /// One namespace per machine, in the deployment's machine order.
    pub namespaces: Vec<String>,
    /// The machine names, as the deployment gives them.
    pub machines: Vec<String>,
    /// Whether a machine holds only data-plane programs (a switch).
    pub switch_machine: Vec<bool>,
    /// Per deployment node, its machine.
    pub node_machine: Vec<usize>,
    pub links: Vec<NetLink>,
}

/// Most links a [`Net`] can have (one /24 each, the third octet).
pub const LINKS_MAX: usize = 250;

impl Net {
    /// Names and addresses for `d` (nothing is made yet). Namespaces are
    /// `{prefix}{machine}`; veths `{prefix}{link}a` / `{prefix}{link}b`, so
    /// `prefix` must be short (device names hold 15 bytes).
    pub fn plan<R>(d: &Deployment<R>, prefix: &str, octet: u8) -> Result<Net> {
        d.validate().map_err(|e| anyhow::anyhow!("{e}"))?;
        let machines = d.machines();
        ensure!(prefix.len() + 4 <= 15, "device prefix '{prefix}' too long for 15-byte device names");
        let mut node_machine = vec![0; d.nodes.len()];
        for (m, (_, nodes)) in machines.iter().enumerate() {
            for &n in nodes {
                node_machine[n] = m;
            }
        }
        let switch_machine =
            machines.iter().map(|(_, nodes)| nodes.iter().all(|&n| d.nodes[n].shape == Shape::Program)).collect();
        let mut links: Vec<NetLink> = vec![];
        let mut pairs: Vec<(usize, usize)> = vec![];
        for l in &d.links {
            let (ma, mb) = (node_machine[l.a], node_machine[l.b]);
            if ma == mb {
                continue;
            }
            let key = (ma.min(mb), ma.max(mb));
            if pairs.contains(&key) {
                continue;
            }
            let k = links.len();
            ensure!(k < LINKS_MAX, "more than {LINKS_MAX} links between machines");
            pairs.push(key);
            let end = |machine: usize, side: u8| Iface {
                machine,
                dev: format!("{prefix}{k}{}", if side == 1 { 'a' } else { 'b' }),
                mac: [0x02, octet, 0, 0, k as u8, side],
                ip: Ipv4Addr::new(10, octet, k as u8, side),
            };
            links.push(NetLink { a: end(key.0, 1), b: end(key.1, 2), delay: l.delay });
        }
        for (m, (name, _)) in machines.iter().enumerate() {
            ensure!(
                links.iter().any(|l| l.a.machine == m || l.b.machine == m),
                "machine '{name}' has no link to another machine: link it to its switch"
            );
        }
        Ok(Net {
            namespaces: machines.iter().map(|(m, _)| format!("{prefix}{m}")).collect(),
            machines: machines.iter().map(|(m, _)| m.clone()).collect(),
            switch_machine,
            node_machine,
            links,
        })
    }

    /// The interface of `machine` on its link to `other`, and the other end.
    pub fn toward(&self, machine: usize, other: usize) -> Option<(&Iface, &Iface)> {
        self.links.iter().find_map(|l| {
            if l.a.machine == machine && l.b.machine == other {
                Some((&l.a, &l.b))
            } else if l.b.machine == machine && l.a.machine == other {
                Some((&l.b, &l.a))
            } else {
                None
            }
        })
    }

    /// The interfaces of `machine`.
    pub fn ifaces(&self, machine: usize) -> Vec<&Iface> {
        self.links.iter().flat_map(|l| [&l.a, &l.b]).filter(|i| i.machine == machine).collect()
    }

    /// The address `machine` is reached at: its first interface's.
    pub fn address(&self, machine: usize) -> Ipv4Addr {
        self.ifaces(machine).first().map(|i| i.ip).expect("every machine has a link (checked by plan)")
    }

    /// Links between two switch machines whose delay is not zero: no
    /// runtime here can emulate them (see the module docs).
    pub fn unemulated_delays(&self) -> Vec<(String, String, Duration)> {
        self.links
            .iter()
            .filter(|l| !l.delay.is_zero() && self.switch_machine[l.a.machine] && self.switch_machine[l.b.machine])
            .map(|l| (self.machines[l.a.machine].clone(), self.machines[l.b.machine].clone(), l.delay))
            .collect()
    }

    /// The first hop from `from` towards `to` over the machine graph.
    fn next_hop(&self, from: usize, to: usize) -> Option<usize> {
        let n = self.namespaces.len();
        let mut prev = vec![usize::MAX; n];
        prev[from] = from;
        let mut q = VecDeque::from([from]);
        while let Some(m) = q.pop_front() {
            if m == to {
                break;
            }
            for l in &self.links {
                let other = if l.a.machine == m {
                    l.b.machine
                } else if l.b.machine == m {
                    l.a.machine
                } else {
                    continue;
                };
                if prev[other] == usize::MAX {
                    prev[other] = m;
                    q.push_back(other);
                }
            }
        }
        if prev[to] == usize::MAX || to == from {
            return None;
        }
        let mut at = to;
        while prev[at] != from {
            at = prev[at];
        }
        Some(at)
    }

    /// Makes the namespaces, veths, addresses and routes. The caller has
    /// recorded [`Net::namespaces`] first, so a failure half-way is undone
    /// by its `down`.
    pub fn build(&self) -> Result<()> {
        for ns in &self.namespaces {
            if std::path::Path::new("/run/netns").join(ns).exists() {
                bail!("network namespace {ns} exists already: take the earlier testbed down first");
            }
        }
        for ns in &self.namespaces {
            ip(&["netns", "add", ns])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
            sysctl(ns, "net.ipv4.ip_forward", "1")?;
        }
        for l in &self.links {
            let (na, nb) = (&self.namespaces[l.a.machine], &self.namespaces[l.b.machine]);
            ip(&[
                "link",
                "add",
                &l.a.dev,
                "address",
                &mac_str(l.a.mac),
                "netns",
                na,
                "type",
                "veth",
                "peer",
                "name",
                &l.b.dev,
                "address",
                &mac_str(l.b.mac),
                "netns",
                nb,
            ])?;
            for (ns, e) in [(na, &l.a), (nb, &l.b)] {
                ip(&["-n", ns, "addr", "add", &format!("{}/24", e.ip), "dev", &e.dev])?;
                ip(&["-n", ns, "link", "set", &e.dev, "up"])?;
            }
        }
        for m in 0..self.namespaces.len() {
            for l in &self.links {
                if l.a.machine == m || l.b.machine == m {
                    continue;
                }
                // Both ends of the link lie the same way from here (the
                // machine graph of a deployment is a tree or a star).
                let Some(hop) = self.next_hop(m, l.a.machine) else { continue };
                let (_, via) = self.toward(m, hop).expect("a next hop is a neighbour");
                let subnet = Ipv4Addr::new(10, l.a.ip.octets()[1], l.a.ip.octets()[2], 0);
                ip(&["-n", &self.namespaces[m], "route", "add", &format!("{subnet}/24"), "via", &via.ip.to_string()])
                    .with_context(|| format!("route in {}", self.namespaces[m]))?;
            }
        }
        Ok(())
    }
}

/// Sets a sysctl inside namespace `ns`.
fn sysctl(ns: &str, key: &str, value: &str) -> Result<()> {
    let path = format!("/proc/sys/{}", key.replace('.', "/"));
    in_netns(ns, || std::fs::write(&path, value).with_context(|| format!("{key}={value} in {ns}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use innet_core::deploy::Shape;

    fn tree() -> Deployment<&'static str> {
        let ms = Duration::from_millis;
        let mut d = Deployment::new("txn");
        let store = d.add("store", "store", Shape::Host);
        let core = d.add("core", "switch", Shape::Program);
        let e0 = d.add("edge0", "switch", Shape::Program);
        let e1 = d.add("edge1", "switch", Shape::Program);
        d.link(core, store, ms(0));
        d.link(e0, core, ms(40));
        d.link(e1, core, ms(40));
        d.set_upstream(core, store);
        d.set_upstream(e0, core);
        d.set_upstream(e1, core);
        for (g, e) in [("c0", e0), ("c1", e1)] {
            for i in 0..2 {
                let c = d.add(format!("{g}.{i}"), "client", Shape::Host);
                d.nodes[c].machine = Some(g.into());
                d.link(c, e, ms(10));
                d.set_upstream(c, e);
            }
        }
        d
    }

    #[test]
    fn machines_become_namespaces_and_node_links_one_veth_per_machine_pair() {
        let net = Net::plan(&tree(), "innet-t", 79).unwrap();
        assert_eq!(net.machines, ["store", "core", "edge0", "edge1", "c0", "c1"]);
        assert_eq!(net.namespaces[4], "innet-tc0");
        assert_eq!(net.links.len(), 5, "two clients of a group share their group's veth");
        assert_eq!(net.switch_machine, [false, true, true, true, false, false]);
        let (c0, e0) = net.toward(4, 2).unwrap();
        assert_eq!((c0.ip, e0.ip), (Ipv4Addr::new(10, 79, 3, 2), Ipv4Addr::new(10, 79, 3, 1)));
        assert!(net.links.iter().all(|l| l.a.dev.len() <= 15));
    }

    #[test]
    fn next_hops_follow_the_tree_and_switch_to_switch_delays_are_named() {
        let net = Net::plan(&tree(), "innet-t", 79).unwrap();
        assert_eq!(net.next_hop(4, 0), Some(2), "client group 0 reaches the store through edge0");
        assert_eq!(net.next_hop(2, 5), Some(1), "edge0 reaches group 1 through the core");
        assert_eq!(net.next_hop(0, 0), None);
        let u = net.unemulated_delays();
        assert_eq!(u.len(), 2);
        assert!(u.iter().all(|(a, b, d)| a == "core" && b.starts_with("edge") && *d == Duration::from_millis(40)));
    }

    #[test]
    fn a_machine_without_links_is_refused() {
        let mut d = tree();
        d.add("lonely", "store", Shape::Host);
        let e = Net::plan(&d, "innet-t", 79).unwrap_err().to_string();
        assert!(e.contains("'lonely' has no link"), "{e}");
    }
}
