//! Topology `paxos`: the CAANS deployment (Figure 1) on network namespaces,
//! with the coordinator and the acceptors as BPF programs.
//!
//! ```text
//!                       netns innet-px-coord                 netns innet-px-acc<i>
//!  netns innet-px-hosts   innet-ch 10.78.0.1   innet-ca<i> ---- innet-ac<i>       innet-ah<i> ----+
//!  innet-hc 10.78.0.2 ---- XDP coordinator     10.78.1<i>.1     10.78.1<i>.2      10.78.2<i>.1    |
//!  innet-ha<i> 10.78.2<i>.2 ---------------------------------------------------------------------+
//!  learners, proposers (processes)               XDP acceptor + tc multicast on innet-ac<i>, innet-ah<i>
//! ```
//!
//! Proposers send REQUESTs to 10.78.0.1:34953. `xdp_paxos_coordinator` on
//! `innet-ch` turns each into a 2A and passes it up with XDP metadata;
//! `tc_paxos` on the same device's ingress clones it to every acceptor (one
//! `innet-ca<i>` each). Those copies skip generic XDP at `innet-ac<i>` (the
//! kernel does not run generic XDP on packets a tc program redirected), so
//! the acceptor's `tc_paxos` votes on them, and clones the 2B to every
//! learner and proposer port in the hosts namespace over `innet-ah<i>`. Learners send TRIMs to the
//! coordinator and to the acceptors' host-side addresses 10.78.2<i>.1:34953
//! (the acceptor programs run on both of an acceptor's devices). The
//! end hosts are processes in `innet-px-hosts`: no delay, no user-space hop
//! between them and the data plane.
//!
//! Cleanup: [`down`] removes the `innet-px-*` namespaces (and with them the
//! veths and the XDP and tc attachments), the pins and this topology's
//! state file ([`STATE_FILE`]), and nothing of another topology's testbed;
//! `innet testbed down` ([`crate::testbed::down`]) removes everything
//! `innet-*`, this too.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::BorrowedFd;
use std::path::Path;

use anyhow::{Context, Result};
use libbpf_rs::{TcHookBuilder, TC_INGRESS};

use innet_paxos::acceptor::ACCEPTOR_SLOTS_DEFAULT;
use innet_paxos::{majority, AcceptorConfig, CoordinatorConfig};
use innet_wire::paxos::{DATAPLANE_PORT, LEARNER_PORT};

use crate::object;
use crate::paxos::{Config, Member, PaxosXdp, Role};
use crate::testbed::{self, ifindex, in_netns, ip, mac_str, State, PIN_DIR};

/// Where `up` records what it made (its own file, so that a `txn` or chain
/// testbed can be up at the same time).
pub const STATE_FILE: &str = "/run/innet/testbed-paxos.json";
/// Every namespace of this topology starts with this.
pub const NS_PREFIX: &str = "innet-px-";
pub const NS_HOSTS: &str = "innet-px-hosts";
pub const NS_COORDINATOR: &str = "innet-px-coord";
pub const COORDINATOR_IP: Ipv4Addr = Ipv4Addr::new(10, 78, 0, 1);
pub const HOSTS_IP: Ipv4Addr = Ipv4Addr::new(10, 78, 0, 2);
/// First UDP port of the proposers in the hosts namespace (learners start
/// at the learner port, 34960).
pub const PROPOSER_PORT: u16 = 35_000;
/// Most acceptors the topology builds (10.78.1<i>, 10.78.2<i>).
pub const MAX_ACCEPTORS: usize = 9;

pub fn acceptor_ns(i: usize) -> String {
    format!("innet-px-acc{i}")
}

/// The address learners reach acceptor `i` at.
pub fn acceptor_addr(i: usize) -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::new(10, 78, 20 + i as u8, 1), DATAPLANE_PORT)
}

pub fn coordinator_addr() -> SocketAddrV4 {
    SocketAddrV4::new(COORDINATOR_IP, DATAPLANE_PORT)
}

pub fn learner_port(i: usize) -> u16 {
    LEARNER_PORT + i as u16
}

pub fn proposer_port(i: usize) -> u16 {
    PROPOSER_PORT + i as u16
}

#[derive(Clone, Debug)]
pub struct PaxosUp {
    pub acceptors: usize,
    pub learners: usize,
    pub proposers: usize,
    pub slots: usize,
}

impl Default for PaxosUp {
    fn default() -> Self {
        PaxosUp { acceptors: 3, learners: 2, proposers: 1, slots: ACCEPTOR_SLOTS_DEFAULT }
    }
}

/// One end of a veth: namespace, device, MAC, address.
#[derive(Clone)]
struct End {
    ns: String,
    dev: String,
    mac: [u8; 6],
    ip: Ipv4Addr,
}

fn end(ns: &str, dev: &str, link: u8, side: u8, ip: Ipv4Addr) -> End {
    End { ns: ns.into(), dev: dev.into(), mac: [0x02, 0x78, 0, 0, link, side], ip }
}

/// The veth pairs: hosts-coordinator, coordinator-acceptor i, acceptor i-hosts.
fn links(acceptors: usize) -> Vec<(End, End)> {
    let mut v =
        vec![(end(NS_HOSTS, "innet-hc", 0, 2, HOSTS_IP), end(NS_COORDINATOR, "innet-ch", 0, 1, COORDINATOR_IP))];
    for i in 0..acceptors {
        let (n, a) = (i as u8, acceptor_ns(i));
        v.push((
            end(NS_COORDINATOR, &format!("innet-ca{i}"), 10 + n, 1, Ipv4Addr::new(10, 78, 10 + n, 1)),
            end(&a, &format!("innet-ac{i}"), 10 + n, 2, Ipv4Addr::new(10, 78, 10 + n, 2)),
        ));
        v.push((
            end(&a, &format!("innet-ah{i}"), 20 + n, 1, *acceptor_addr(i).ip()),
            end(NS_HOSTS, &format!("innet-ha{i}"), 20 + n, 2, Ipv4Addr::new(10, 78, 20 + n, 2)),
        ));
    }
    v
}

fn build(o: &PaxosUp, nss: &[String]) -> Result<Vec<(End, End)>> {
    for ns in nss {
        ip(&["netns", "add", ns])?;
        ip(&["-n", ns, "link", "set", "lo", "up"])?;
    }
    let ls = links(o.acceptors);
    for (a, b) in &ls {
        ip(&[
            "link",
            "add",
            &a.dev,
            "address",
            &mac_str(a.mac),
            "netns",
            &a.ns,
            "type",
            "veth",
            "peer",
            "name",
            &b.dev,
            "address",
            &mac_str(b.mac),
            "netns",
            &b.ns,
        ])?;
        for e in [a, b] {
            ip(&["-n", &e.ns, "addr", "add", &format!("{}/24", e.ip), "dev", &e.dev])?;
            ip(&["-n", &e.ns, "link", "set", &e.dev, "up"])?;
        }
    }
    Ok(ls)
}

/// A copy from `from` to the far end `to` of its veth, UDP port `port`.
fn member(from: &End, to: &End, port: u16) -> Result<Member> {
    Ok(Member {
        ifindex: ifindex(&from.ns, &from.dev)?,
        src_mac: from.mac,
        src_ip: from.ip,
        dst_mac: to.mac,
        dst_ip: to.ip,
        dst_port: port,
    })
}

/// Attaches the role's XDP program (generic mode) and its tc multicast
/// program (clsact ingress) to `devs` of `ns`.
fn attach(xdp: &PaxosXdp, ns: &str, devs: &[&str]) -> Result<()> {
    let (prog, tc) = (xdp.program_fd(false)?, xdp.program_fd(true)?);
    let indexes: Vec<u32> = devs.iter().map(|d| ifindex(ns, d)).collect::<Result<_>>()?;
    in_netns(ns, || {
        for &index in &indexes {
            object::attach_fd(prog, index)?;
            // SAFETY: `xdp` keeps the program open for the duration of the call.
            let fd = unsafe { BorrowedFd::borrow_raw(tc) };
            let mut hook =
                TcHookBuilder::new(fd).ifindex(index as i32).replace(true).handle(1).priority(1).hook(TC_INGRESS);
            let _ = hook.create(); // the clsact qdisc; EEXIST is fine
            hook.attach().with_context(|| format!("attach tc program to ifindex {index} in {ns}"))?;
        }
        Ok(())
    })
}

/// Builds the `paxos` topology with the BPF coordinator and acceptors.
pub fn up(o: &PaxosUp) -> Result<State> {
    anyhow::ensure!((1..=MAX_ACCEPTORS).contains(&o.acceptors), "1..={MAX_ACCEPTORS} acceptors");
    anyhow::ensure!(
        o.learners + o.proposers <= crate::paxos::MAX_MEMBERS,
        "learners + proposers <= {}",
        crate::paxos::MAX_MEMBERS
    );
    // Only our own leftovers: another topology's testbed may be running
    // (other users of the machine), and its namespaces are not ours to end.
    let removed = down()?;
    if !removed.is_empty() {
        eprintln!("testbed: removed leftovers of an earlier paxos testbed: {}", removed.join(", "));
    }
    let mut nss = vec![NS_HOSTS.to_string(), NS_COORDINATOR.to_string()];
    nss.extend((0..o.acceptors).map(acceptor_ns));
    let dir = Path::new(PIN_DIR).join("paxos");
    let state = State {
        topology: "paxos".into(),
        namespaces: nss.clone(),
        pin_dir: Some(dir.display().to_string()),
        processes: vec![],
    };
    testbed::save_to(Path::new(STATE_FILE), &state)?;
    let ls = build(o, &nss).context("build namespaces and links")?;

    let ccfg = CoordinatorConfig { slots: o.slots, ..CoordinatorConfig::new(o.learners) };
    let mut coord = PaxosXdp::load(Role::Coordinator, o.slots)?;
    let to_acceptors: Vec<Member> =
        (0..o.acceptors).map(|i| member(&ls[1 + 2 * i].0, &ls[1 + 2 * i].1, DATAPLANE_PORT)).collect::<Result<_>>()?;
    coord.configure(&Config::coordinator(&ccfg), &to_acceptors)?;
    coord.pin_maps(&dir.join("coordinator"))?;
    attach(&coord, NS_COORDINATOR, &["innet-ch"])?;

    let ports: Vec<u16> = (0..o.learners).map(learner_port).chain((0..o.proposers).map(proposer_port)).collect();
    for i in 0..o.acceptors {
        let acfg = AcceptorConfig {
            slots: o.slots,
            trim_quorum: majority(o.learners),
            ..AcceptorConfig::new(i as u16, o.learners)
        };
        let mut acc = PaxosXdp::load(Role::Acceptor, o.slots)?;
        let (ah, ha) = (&ls[2 + 2 * i].0, &ls[2 + 2 * i].1);
        let to_learners: Vec<Member> = ports.iter().map(|&p| member(ah, ha, p)).collect::<Result<_>>()?;
        acc.configure(&Config::acceptor(&acfg), &to_learners)?;
        acc.pin_maps(&dir.join(format!("acceptor{i}")))?;
        attach(&acc, &acceptor_ns(i), &[&format!("innet-ac{i}"), &format!("innet-ah{i}")])?;
    }
    Ok(state)
}

/// The state of a running paxos testbed, if any.
pub fn status() -> Option<State> {
    std::fs::read(STATE_FILE).ok().and_then(|b| serde_json::from_slice(&b).ok())
}

/// Removes the paxos testbed (namespaces, pins, state file); what it removed.
pub fn down() -> Result<Vec<String>> {
    let mut removed = vec![];
    for ns in testbed::namespaces()?.into_iter().filter(|n| n.starts_with(NS_PREFIX)) {
        ip(&["netns", "del", &ns])?;
        removed.push(format!("netns {ns}"));
    }
    let pins = Path::new(PIN_DIR).join("paxos");
    if pins.exists() {
        std::fs::remove_dir_all(&pins).with_context(|| format!("remove {}", pins.display()))?;
        removed.push(format!("pins {}", pins.display()));
    }
    if Path::new(STATE_FILE).exists() {
        std::fs::remove_file(STATE_FILE)?;
        removed.push(format!("state {STATE_FILE}"));
    }
    Ok(removed)
}
