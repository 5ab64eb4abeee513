//! Topology `paxos`: the CAANS deployment (Figure 1) on network namespaces,
//! with the coordinator and the acceptors as BPF programs and the backup
//! coordinator (section 3.1) as a process beside the end hosts.
//!
//! ```text
//!                       netns innet-px-coord                 netns innet-px-acc<i>
//!  netns innet-px-hosts   innet-ch 10.78.0.1   innet-ca<i> ---- innet-ac<i>       innet-ah<i> ----+
//!  innet-hc 10.78.0.2 ---- XDP coordinator     10.78.1<i>.1     10.78.1<i>.2      10.78.2<i>.1    |
//!  innet-ha<i> 10.78.2<i>.2 ---------------------------------------------------------------------+
//!  learners, proposers, backup (one process)     XDP acceptor on innet-ac<i>, innet-ah<i>
//!  vote counter (XDP) on innet-ha<i>
//! ```
//!
//! Who sends to whom is [`innet_paxos::deploy`]'s (the one description of
//! the wiring): [`PaxosUp::deployment`] builds it, [`host_addrs`] gives each node
//! its address as seen from the hosts namespace, and the BPF programs'
//! multicast members are that deployment's groups mapped onto the veths.
//!
//! **The fabric** ([`crate::fabric`], issue 20): driver-mode XDP on every
//! veth by default (`xdp_pass` on the ends that run no role), threaded
//! NAPI, so each device's receive path runs in a kernel thread the
//! scheduler can place on any CPU; generic mode stays available
//! ([`Fabric::generic`]). Proposers send REQUESTs to 10.78.0.1:34953.
//! `xdp_paxos_coordinator` on `innet-ch` turns each into a 2A and
//! broadcasts it through a devmap to every acceptor's link
//! ([`Multicast::Devmap`]: the kernel copies the frame, `xdp_paxos_egress`
//! rewrites each copy; no skb, no tc), where `xdp_paxos_acceptor` votes.
//!
//! **One vote per machine** ([`Decisions::Ring`], the default): every end
//! host of the testbed is on one machine (the hosts namespace), so each
//! acceptor sends one 2B there, to the machine's [`DECISION_PORT`], not one
//! per learner, proposer and backup. The vote counter on `innet-ha<i>`
//! (`bpf/paxos_learner.bpf.c`, [`crate::paxos_learner`]) counts it once
//! for every role of the machine and hands the decision up through a BPF
//! ring buffer, read by the one process that runs all of the machine's
//! roles ([`crate::paxos_hosts`]): one wake-up covers every decision that
//! waits. A full ring passes the DECIDED up as a packet to the decision
//! port instead (counted `ring_full`): nothing is lost.
//! [`Decisions::Socket`] sends every decision that way;
//! [`Decisions::PerPort`] is the path of old (each role's own votes by tc
//! clones, counted per port), which `innet testbed up paxos` uses since it
//! runs the backup as a process of its own.
//!
//! Learners send TRIMs to the coordinator, to the backup and to the
//! acceptors' host-side addresses 10.78.2<i>.1:34953 (the acceptor
//! programs run on both of an acceptor's devices).
//!
//! The backup coordinator ([`BACKUP_PORT`] in the hosts namespace) sends
//! HEARTBEATs to 10.78.0.1, which the coordinator reflects. When they go
//! unanswered it takes over: 1As and 2As in its own round go to the
//! acceptors' host-side addresses, where the XDP acceptor answers a 1A
//! with a 1B back to its sender (`XDP_TX`) and sends its 2B votes as
//! for the coordinator's 2As; TAKEOVER goes to the proposers, which resubmit
//! to the backup. The backup's round (epoch 1, issuer 2) is above the round
//! 1 the acceptors were pre-initialised to.
//!
//! Who may send what ([`innet_paxos::trust`]) holds in every BPF program:
//! each gets the deployment's nodes as the program sees them ([`arrivals`]:
//! ingress interface, source address, and the source port of an end host;
//! the coordinator's copies by address only, as they keep the proposer's
//! port), and refuses and counts the rest by reason (`paxos_rejected`,
//! `counter_rejected`, pinned with the other maps).
//!
//! [`fail_coordinator`] models the coordinator switch failing: every link
//! of its namespace goes down, so nothing reaches it and nothing leaves it
//! (packets in flight there are lost), and its peers see the carrier go.
//!
//! Cleanup: [`down`] ends the backup process `up` started, removes the
//! `innet-px-*` namespaces (and with them the veths and the XDP and tc
//! attachments), the pins and this topology's state file ([`STATE_FILE`]),
//! and nothing of another topology's testbed; `innet testbed down`
//! ([`crate::testbed::down`]) removes everything `innet-*`, this too.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use libbpf_rs::{TcHookBuilder, TC_INGRESS};

use innet_core::deploy::NodeIx;
use innet_core::Member as GroupMember;
use innet_live::auth::{KeyFile, PeerAuth};
use innet_paxos::deploy::{self as paxos_deploy, PaxosDeployment, PaxosParams, PaxosRole, PaxosShape, Roles};
use innet_paxos::{GROUP_ACCEPTORS, GROUP_LEARNERS};
use innet_wire::paxos::{DATAPLANE_PORT, LEARNER_PORT};

use crate::fabric::{Fabric, PassProgram, XdpMode};
use crate::netns::{self, ifindex, in_netns, ip, mac_str};
use crate::paxos::{senders_at, Config, Member, Multicast, PaxosXdp, Role, SenderKey};
use crate::paxos_learner::RingOpts;
pub use crate::testbed_common::PAXOS_STATE_FILE as STATE_FILE;
use crate::testbed_common::{self, State, PIN_DIR};

/// Every namespace of this topology starts with this.
pub const NS_PREFIX: &str = "innet-px-";
pub const NS_HOSTS: &str = "innet-px-hosts";
pub const NS_COORDINATOR: &str = "innet-px-coord";
pub const COORDINATOR_IP: Ipv4Addr = Ipv4Addr::new(10, 78, 0, 1);
pub const HOSTS_IP: Ipv4Addr = Ipv4Addr::new(10, 78, 0, 2);
/// First UDP port of the proposers in the hosts namespace (learners start
/// at the learner port, 34960).
pub const PROPOSER_PORT: u16 = 35_000;
/// The backup coordinator's UDP port in the hosts namespace.
pub const BACKUP_PORT: u16 = 34_954;
/// The name (and log, `/run/innet/paxos-backup.log`) of the backup
/// coordinator process `up` starts.
pub const BACKUP_PROCESS: &str = "paxos-backup";
/// Most acceptors the topology builds (10.78.1<i>, 10.78.2<i>).
pub const MAX_ACCEPTORS: usize = 9;
/// The hosts machine's decision port ([`Decisions::Ring`],
/// [`Decisions::Socket`]): the acceptors' one vote per machine goes here,
/// the vote counter counts it once for every role of the machine, and a
/// decision that goes up as a packet arrives here.
pub const DECISION_PORT: u16 = 34_959;

/// How the acceptors' votes reach the roles of the hosts machine (the
/// learners, the proposers, the backup), and how decisions go up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Decisions {
    /// One vote per acceptor per machine, to [`DECISION_PORT`]; the vote
    /// counter counts it once for every role of the machine and hands the
    /// decision up through its ring buffer (a DECIDED packet to the
    /// decision port when the ring is full, counted `ring_full`). Every role
    /// of the machine must run in the one process that reads the ring.
    #[default]
    Ring,
    /// As `ring`, every decision up as a DECIDED packet to the decision port.
    Socket,
    /// The path of old: every acceptor votes to every learner's,
    /// proposer's and the backup's own port (one tc clone each), counted
    /// per port, each decision up as a packet to each port.
    PerPort,
}

impl Decisions {
    pub fn name(self) -> &'static str {
        match self {
            Decisions::Ring => "ring",
            Decisions::Socket => "socket",
            Decisions::PerPort => "per-port",
        }
    }
}

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

/// Where proposers and learners reach the backup coordinator.
pub fn backup_addr() -> SocketAddrV4 {
    SocketAddrV4::new(HOSTS_IP, BACKUP_PORT)
}

#[derive(Clone, Debug)]
pub struct PaxosUp {
    /// How many of each role: `proposers` are the ones the acceptors send
    /// votes to (ports from [`PROPOSER_PORT`]) and the backup announces
    /// itself to. The BPF programs carry no packet origin and no failback:
    /// [`PaxosUp::deployment`] wires neither, whatever the shape says.
    pub shape: PaxosShape,
    /// The settings of every role; the BPF programs take the ring
    /// (`slots`) and the trim quorum.
    pub params: PaxosParams,
    /// Start the backup coordinator as a process of this `innet` program
    /// (`innet bench xdp-paxos-hosts --backup only`) in the hosts
    /// namespace. Without it the backup's port is wired all the same and
    /// whoever runs the end hosts runs the backup ([`crate::paxos_hosts`]).
    pub backup_exe: Option<PathBuf>,
    /// Count the votes in the kernel in front of the learners and the
    /// proposers ([`crate::paxos_learner`] on every `innet-ha<i>`): each
    /// gets one DECIDED per instance instead of the acceptors' votes.
    pub vote_counters: bool,
    /// Driver or generic XDP, threaded NAPI.
    pub fabric: Fabric,
    /// How the coordinator's 2As reach the acceptors (and, unless
    /// [`Decisions::PerPort`], the acceptors' votes the hosts machine).
    pub multicast: Multicast,
    /// How votes reach the hosts machine and decisions go up (with vote
    /// counters; without, every role gets every vote on its own port).
    pub decisions: Decisions,
    /// The decision ring ([`Decisions::Ring`]).
    pub ring: RingOpts,
    /// No end hosts: the vote counter counts decisions and drops them
    /// (the fabric-only benchmark, [`crate::generator`]).
    pub sink: bool,
    /// `--auth-key`: the coordinator, the acceptors and the vote counter
    /// take frames only with a MAC trailer that checks and seal what they
    /// send on; the end hosts ([`crate::paxos_hosts`], the backup process)
    /// seal and check every datagram (every party of Paxos is a node).
    pub auth: Option<KeyFile>,
}

impl Default for PaxosUp {
    fn default() -> Self {
        PaxosUp {
            shape: PaxosShape::default(),
            params: PaxosParams::default(),
            backup_exe: None,
            vote_counters: true,
            fabric: Fabric::default(),
            multicast: Multicast::Devmap,
            decisions: Decisions::Ring,
            ring: RingOpts::default(),
            sink: false,
            auth: None,
        }
    }
}

impl PaxosUp {
    /// The testbed's deployment ([`innet_paxos::deploy`]): coordinator,
    /// acceptors, backup, learners, proposers, wired as everywhere else.
    pub fn deployment(&self) -> PaxosDeployment {
        paxos_deploy::deployment(self.deployment_shape(), Duration::ZERO)
    }
    /// Every role's configuration.
    pub fn roles(&self) -> Roles {
        Roles::new(self.params.clone(), &self.deployment_shape())
    }
    /// The shape [`PaxosUp::deployment`] wires.
    fn deployment_shape(&self) -> PaxosShape {
        PaxosShape { origin_votes: false, failback: false, ..self.shape }
    }
    /// Whether the acceptors send one vote per machine (to
    /// [`DECISION_PORT`]), counted once there for every role of it.
    pub fn per_machine(&self) -> bool {
        self.vote_counters && self.decisions != Decisions::PerPort
    }
    /// The keys as the end hosts hold them: covering every address.
    pub fn peer_auth(&self) -> Option<std::sync::Arc<PeerAuth>> {
        self.auth.as_ref().map(|k| PeerAuth::all(k.keys.clone()))
    }
    fn keys(&self) -> Option<&innet_core::auth::AuthKeys> {
        self.auth.as_ref().map(|k| &k.keys)
    }
    /// How the acceptors' votes leave: a devmap broadcast needs one member
    /// per device, which only one vote per machine gives.
    fn vote_multicast(&self) -> Multicast {
        if self.per_machine() {
            self.multicast
        } else {
            Multicast::Tc
        }
    }
}

/// Each node's address as the end hosts in the hosts namespace reach it,
/// in `d`'s node order: the coordinator at 10.78.0.1, acceptor `i` at its
/// host-side address, and the backup, learners and proposers on their
/// ports at 10.78.0.2.
pub fn host_addrs(d: &PaxosDeployment) -> Vec<SocketAddr> {
    d.nodes
        .iter()
        .map(|n| {
            SocketAddr::V4(match n.role {
                PaxosRole::Coordinator => coordinator_addr(),
                PaxosRole::Acceptor { id } => acceptor_addr(id as usize),
                PaxosRole::Backup => backup_addr(),
                PaxosRole::Learner { id } => SocketAddrV4::new(HOSTS_IP, learner_port(id as usize)),
                PaxosRole::Proposer { index } => SocketAddrV4::new(HOSTS_IP, proposer_port(index as usize)),
            })
        })
        .collect()
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
    let ls = links(o.shape.acceptors);
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

/// Attaches the role's XDP program in the fabric's mode to `devs` of `ns`,
/// and its tc program (clsact ingress) where it needs one: for a tc
/// multicast, and in generic mode (copies a tc program redirected skip
/// generic XDP at the next hop, where `tc_paxos` runs the role instead).
fn attach(xdp: &PaxosXdp, fabric: &Fabric, mcast: Multicast, ns: &str, devs: &[&str]) -> Result<()> {
    fabric.attach(xdp.program_fd(false)?, ns, devs)?;
    if mcast == Multicast::Tc || fabric.mode == XdpMode::Generic {
        attach_tc(xdp.program_fd(true)?, ns, devs)?;
    }
    Ok(())
}

/// Attaches the tc program `tc` (clsact ingress) to `devs` of `ns`.
fn attach_tc(tc: std::os::fd::RawFd, ns: &str, devs: &[&str]) -> Result<()> {
    let indexes: Vec<u32> = devs.iter().map(|d| ifindex(ns, d)).collect::<Result<_>>()?;
    in_netns(ns, || {
        for &index in &indexes {
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

/// The members of node `n`'s `group` in `d`, each reached over the veth
/// `via(member)` names, on the member's port in `addrs`.
fn group_members(
    d: &PaxosDeployment,
    n: NodeIx,
    group: u16,
    addrs: &[SocketAddr],
    via: impl Fn(NodeIx) -> Result<(End, End)>,
) -> Result<Vec<Member>> {
    let nodes = d.nodes[n].groups.get(&group).map(Vec::as_slice).unwrap_or_default();
    nodes
        .iter()
        .map(|m| match m {
            GroupMember::Node(x) => {
                let (from, to) = via(*x)?;
                member(&from, &to, addrs[*x].port())
            }
            GroupMember::Origin => anyhow::bail!("the paxos testbed has no votes to the origin"),
        })
        .collect()
}

/// Where node `j`'s packets reach the BPF program of node `n` (or, for
/// `n` = `None`, the vote counter in the hosts namespace), in `d`'s node
/// order: the device they come in on, their source address as routing
/// picks it, and the source port of an end host (bound to its port on
/// every address); `None` where they never do.
pub fn arrivals(d: &PaxosDeployment, n: Option<NodeIx>) -> Result<Vec<Option<SenderKey>>> {
    let addrs = host_addrs(d);
    let ls = links(MAX_ACCEPTORS);
    let key = |ns: &str, dev: &str, ip: Ipv4Addr, port: u16| -> Result<Option<SenderKey>> {
        Ok(Some(SenderKey { ifindex: ifindex(ns, dev)?, ip, port }))
    };
    let at = n.map(|n| d.nodes[n].role);
    d.nodes
        .iter()
        .enumerate()
        .map(|(j, node)| {
            let host = matches!(node.role, PaxosRole::Backup | PaxosRole::Learner { .. } | PaxosRole::Proposer { .. });
            match (at, node.role) {
                (Some(PaxosRole::Coordinator), _) if host => key(NS_COORDINATOR, "innet-ch", HOSTS_IP, addrs[j].port()),
                (Some(PaxosRole::Acceptor { id }), PaxosRole::Coordinator) => {
                    let i = id as usize;
                    key(&acceptor_ns(i), &format!("innet-ac{i}"), ls[1 + 2 * i].0.ip, 0)
                }
                (Some(PaxosRole::Acceptor { id }), _) if host => {
                    let i = id as usize;
                    key(&acceptor_ns(i), &format!("innet-ah{i}"), ls[2 + 2 * i].1.ip, addrs[j].port())
                }
                (None, PaxosRole::Acceptor { id }) => {
                    let i = id as usize;
                    key(NS_HOSTS, &format!("innet-ha{i}"), *acceptor_addr(i).ip(), 0)
                }
                _ => Ok(None),
            }
        })
        .collect()
}

/// Builds the `paxos` topology with the BPF coordinator and acceptors, and
/// (with [`PaxosUp::backup_exe`]) starts the backup coordinator.
pub fn up(o: &PaxosUp) -> Result<State> {
    anyhow::ensure!((1..=MAX_ACCEPTORS).contains(&o.shape.acceptors), "1..={MAX_ACCEPTORS} acceptors");
    // Votes go to every learner, every proposer and the backup.
    anyhow::ensure!(
        o.shape.learners + o.shape.proposers < crate::paxos::MAX_MEMBERS,
        "learners + proposers + the backup <= {}",
        crate::paxos::MAX_MEMBERS
    );
    let d = o.deployment();
    paxos_deploy::validate(&d).map_err(|e| anyhow::anyhow!("{}", e.0))?;
    testbed_common::guarded(STATE_FILE, || build_testbed(o, &d), down_unlocked)
}

fn build_testbed(o: &PaxosUp, d: &PaxosDeployment) -> Result<State> {
    // Only our own leftovers: another topology's testbed may be running
    // (other users of the machine), and its namespaces are not ours to end.
    let removed = down_unlocked()?;
    if !removed.is_empty() {
        eprintln!("testbed: removed leftovers of an earlier paxos testbed: {}", removed.join(", "));
    }
    let mut nss = vec![NS_HOSTS.to_string(), NS_COORDINATOR.to_string()];
    nss.extend((0..o.shape.acceptors).map(acceptor_ns));
    let dir = Path::new(PIN_DIR).join("paxos");
    let mut state = State {
        topology: "paxos".into(),
        namespaces: nss.clone(),
        pin_dir: Some(dir.display().to_string()),
        processes: vec![],
        fabric: Some(o.fabric),
    };
    testbed_common::save_to(Path::new(STATE_FILE), &state)?;
    let ls = build(o, &nss).context("build namespaces and links")?;
    let roles = o.roles();
    for (n, node) in d.nodes.iter().enumerate() {
        match node.role {
            PaxosRole::Coordinator => start_coordinator(o, d, n, &roles, &ls, &dir)?,
            PaxosRole::Acceptor { id } => start_acceptor(o, d, n, id, &ls, &dir, false)?,
            _ => {}
        }
    }
    if o.vote_counters {
        attach_vote_counter(o, d, &roles, &dir)?;
    }
    finish_fabric(o)?;
    if let Some(exe) = &o.backup_exe {
        let args = backup_args(o);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let pid = testbed_common::spawn_in(NS_HOSTS, exe, &args, BACKUP_PROCESS)?;
        state.processes.push((BACKUP_PROCESS.into(), pid));
        testbed_common::save_to(Path::new(STATE_FILE), &state)?;
        testbed_common::wait_for_log_line(BACKUP_PROCESS, "backup ", Duration::from_secs(10))?;
    }
    Ok(state)
}

/// The arguments of the backup coordinator's process (`innet bench
/// xdp-paxos-hosts --backup only`) for the testbed `o`.
fn backup_args(o: &PaxosUp) -> Vec<String> {
    let mut args: Vec<String> = [
        "bench",
        "xdp-paxos-hosts",
        "--backup",
        "only",
        "--acceptors",
        &o.shape.acceptors.to_string(),
        "--learners",
        &o.shape.learners.to_string(),
        "--proposers",
        &o.shape.proposers.to_string(),
        "--slots",
        &o.params.slots.to_string(),
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    if let Some(k) = &o.auth {
        args.extend(["--auth-key".to_string(), k.path.display().to_string()]);
    }
    args
}

/// Loads, configures and attaches the coordinator (node `n`) in its
/// namespace, each acceptor over its own link `ls` from it, its maps and
/// program pinned under `dir`.
fn start_coordinator(
    o: &PaxosUp,
    d: &PaxosDeployment,
    n: NodeIx,
    roles: &Roles,
    ls: &[(End, End)],
    dir: &Path,
) -> Result<()> {
    let addrs = host_addrs(d);
    let acceptor_id = |x: NodeIx| match d.nodes[x].role {
        PaxosRole::Acceptor { id } => Ok(id as usize),
        r => anyhow::bail!("{} in the acceptors' group", r.name()),
    };
    let to_acceptors = group_members(d, n, GROUP_ACCEPTORS, &addrs, |x| {
        let i = acceptor_id(x)?;
        Ok((ls[1 + 2 * i].0.clone(), ls[1 + 2 * i].1.clone()))
    })?;
    let mut coord = PaxosXdp::load(Role::Coordinator, o.params.slots)?;
    let cfg = Config { mcast: o.multicast, ..Config::coordinator(&roles.coordinator()) };
    coord.configure(&cfg, &to_acceptors)?;
    if cfg.mcast == Multicast::Devmap {
        let w = coord.ports_writer()?;
        in_netns(NS_COORDINATOR, || w.write(&to_acceptors))?;
    }
    coord.set_senders(&senders_at(d, &arrivals(d, Some(n))?, n))?;
    coord.set_auth(o.keys())?;
    coord.pin_maps(&dir.join("coordinator"))?;
    // For the in-kernel generator (`bench xdp-paxos --fabric-only`).
    coord.pin_program(&coordinator_program_pin())?;
    attach(&coord, &o.fabric, o.multicast, NS_COORDINATOR, &["innet-ch"])
}

/// Driver mode: `xdp_pass` on the devices that receive frames but run no
/// role (the hosts' end of the coordinator's link gets its reflected
/// HEARTBEATs and WINDOWs by `XDP_TX`; without vote counters, the hosts'
/// ends of the acceptors' links get their votes), then threaded NAPI on
/// every device or on the coordinator's `innet-ch` only (the fabric's
/// entry), as the fabric says.
fn finish_fabric(o: &PaxosUp) -> Result<()> {
    fn strs(v: &[String]) -> Vec<&str> {
        v.iter().map(String::as_str).collect()
    }
    let pass = PassProgram::load()?;
    let has = |dev: &'static str| (0..o.shape.acceptors).map(move |i| format!("{dev}{i}"));
    let mut hosts_pass = vec!["innet-hc".to_string()];
    if !o.vote_counters {
        hosts_pass.extend(has("innet-ha"));
    }
    let hosts_all: Vec<String> = std::iter::once("innet-hc".to_string()).chain(has("innet-ha")).collect();
    let coord_pass: Vec<String> = has("innet-ca").collect();
    let coord_all: Vec<String> = std::iter::once("innet-ch".to_string()).chain(has("innet-ca")).collect();
    // The proposers' requests enter the fabric at the coordinator.
    let entry = ["innet-ch"];
    o.fabric.finish(&pass, NS_HOSTS, &strs(&hosts_pass), &strs(&hosts_all), &entry)?;
    o.fabric.finish(&pass, NS_COORDINATOR, &strs(&coord_pass), &strs(&coord_all), &entry)?;
    for i in 0..o.shape.acceptors {
        let devs = [format!("innet-ac{i}"), format!("innet-ah{i}")];
        o.fabric.finish(&pass, &acceptor_ns(i), &[], &strs(&devs), &entry)?;
    }
    Ok(())
}

/// A REQUEST from proposer `index` (its id, incarnation 0, request 0,
/// a one-byte payload) as it arrives at the coordinator on `innet-ch`
/// (the in-kernel generator's template), and the offset of its request
/// number (the generator stamps a running number there).
pub fn request_template(index: usize) -> (Vec<u8>, usize) {
    use crate::frame::{udp_frame, Endpoint, PAYLOAD_OFFSET};
    let ls = links(1);
    let (hc, ch) = (&ls[0].0, &ls[0].1);
    let from = Endpoint { mac: hc.mac, ip: hc.ip, port: proposer_port(index) };
    let to = Endpoint { mac: ch.mac, ip: ch.ip, port: DATAPLANE_PORT };
    let mut m = innet_wire::paxos::PaxosMsg::new(innet_wire::paxos::MsgType::Request);
    m.value = innet_paxos::envelope::Envelope::new(innet_paxos::envelope::proposer_id(index, 0), 0, b"v")
        .expect("fits")
        .to_value();
    // The envelope's request number: after the proposer id, in the value.
    let request_at = PAYLOAD_OFFSET + innet_wire::paxos::offset::VALUE + 4;
    (udp_frame(from, to, &m.encode(), 0), request_at)
}

/// Where `up` pins the coordinator's XDP program (the in-kernel
/// generator's target).
pub fn coordinator_program_pin() -> PathBuf {
    Path::new(PIN_DIR).join("paxos").join("coordinator").join(Role::Coordinator.program())
}

/// Where the vote counter's maps are pinned, under the testbed's pin directory.
pub const COUNTER_PINS: &str = "counter";

/// One vote counter for the hosts namespace, counting for every learner's
/// and every proposer's port and the backup's, on
/// every device the acceptors' votes arrive on (`innet-ha<i>`). Its tc
/// entry is the one that sees the votes (generic XDP skips the acceptors'
/// tc copies); the XDP entry is attached as well, for votes sent any other
/// way.
fn attach_vote_counter(o: &PaxosUp, d: &PaxosDeployment, roles: &Roles, dir: &Path) -> Result<()> {
    use crate::paxos_learner::{Config as CounterConfig, VoteCounterXdp};
    use innet_paxos::trust::Kind;
    use innet_paxos::vote_counter::{VoteCounterConfig, COUNTER_SLOTS_DEFAULT};
    let ports: Vec<(u16, Kind)> = if o.per_machine() {
        // The machine's one count: the learners' rules (a 2B from an
        // acceptor), which the proposers' and the backup's equal for votes.
        vec![(DECISION_PORT, Kind::Learner)]
    } else {
        let mut p: Vec<(u16, Kind)> = (0..o.shape.learners).map(|i| (learner_port(i), Kind::Learner)).collect();
        p.extend((0..o.shape.proposers).map(|i| (proposer_port(i), Kind::Proposer)));
        p.push((BACKUP_PORT, Kind::Backup));
        p
    };
    let counter = VoteCounterConfig {
        acceptors: o.shape.acceptors,
        quorum: roles.quorum(),
        slots: COUNTER_SLOTS_DEFAULT.max(o.params.slots),
    };
    let ring = (o.per_machine() && o.decisions == Decisions::Ring).then_some(o.ring);
    let mut k = VoteCounterXdp::load(&CounterConfig { counter, ports, ring, sink: o.sink })?;
    k.set_senders(&crate::paxos::all_senders(d, &arrivals(d, None)?))?;
    k.set_auth(o.keys())?;
    k.pin_maps(&dir.join(COUNTER_PINS))?;
    let devs: Vec<String> = (0..o.shape.acceptors).map(|i| format!("innet-ha{i}")).collect();
    let devs: Vec<&str> = devs.iter().map(String::as_str).collect();
    o.fabric.attach(k.program_fd(false)?, NS_HOSTS, &devs)?;
    // Generic mode: the votes are tc copies, which skip generic XDP; and
    // a tc multicast of votes (per port) in either mode.
    if o.fabric.mode == XdpMode::Generic || o.vote_multicast() == Multicast::Tc {
        attach_tc(k.program_fd(true)?, NS_HOSTS, &devs)?;
    }
    Ok(())
}

/// The vote counter's counters, if the running testbed has one.
pub fn vote_counter_counters() -> Result<Option<Vec<(&'static str, u64)>>> {
    let dir = Path::new(PIN_DIR).join("paxos").join(COUNTER_PINS);
    if !dir.exists() {
        return Ok(None);
    }
    crate::paxos_learner::pinned_counters(&dir).map(Some)
}

/// Frames the running testbed's BPF programs refused, by reason:
/// `program` is `coordinator`, `acceptor<i>` or [`COUNTER_PINS`].
pub fn rejected(program: &str) -> Result<Vec<(&'static str, u64)>> {
    let dir = Path::new(PIN_DIR).join("paxos").join(program);
    if program == COUNTER_PINS {
        crate::paxos_learner::pinned_rejected(&dir)
    } else {
        crate::paxos::pinned_rejected(&dir)
    }
}

/// Loads acceptor `id` (node `n` of `d`) and attaches it to its devices:
/// afresh (configured, then its maps pinned under `dir/acceptor<id>`), or
/// with `restart` over the maps pinned there ([`PaxosXdp::load_pinned`]:
/// its promises, votes, configuration and senders as they were; the
/// devmap of its vote copies and its keys, which are not pinned, written
/// again).
fn start_acceptor(
    o: &PaxosUp,
    d: &PaxosDeployment,
    n: NodeIx,
    id: u16,
    ls: &[(End, End)],
    dir: &Path,
    restart: bool,
) -> Result<()> {
    let i = id as usize;
    let pins = dir.join(format!("acceptor{i}"));
    // Every voter sits in the hosts namespace, behind innet-ah<i>: one copy
    // to its decision port, or one to each voter's port.
    let (ah, ha) = (ls[2 + 2 * i].0.clone(), ls[2 + 2 * i].1.clone());
    let to_voters = if o.per_machine() {
        vec![member(&ah, &ha, DECISION_PORT)?]
    } else {
        group_members(d, n, GROUP_LEARNERS, &host_addrs(d), |_| Ok((ah.clone(), ha.clone())))?
    };
    let cfg = Config { mcast: o.vote_multicast(), ..Config::acceptor(&o.roles().acceptor(id)) };
    let mut acc = match restart {
        true => PaxosXdp::load_pinned(Role::Acceptor, o.params.slots, &pins)?,
        false => {
            let acc = PaxosXdp::load(Role::Acceptor, o.params.slots)?;
            acc.configure(&cfg, &to_voters)?;
            acc.set_senders(&senders_at(d, &arrivals(d, Some(n))?, n))?;
            acc
        }
    };
    if cfg.mcast == Multicast::Devmap {
        let w = acc.ports_writer()?;
        in_netns(&acceptor_ns(i), || w.write(&to_voters))?;
    }
    acc.set_auth(o.keys())?;
    if !restart {
        acc.pin_maps(&pins)?;
    }
    let devs = [format!("innet-ac{i}"), format!("innet-ah{i}")];
    attach(&acc, &o.fabric, o.vote_multicast(), &acceptor_ns(i), &[&devs[0], &devs[1]])
}

/// Stops acceptor `i` of the running testbed the way a crash of its
/// program stops it: its XDP and tc programs come off its devices (its
/// links stay up; frames for it reach a namespace with no socket for them
/// and are dropped). Its maps stay pinned: [`restart_acceptor`] brings it
/// back with them.
pub fn stop_acceptor(i: usize) -> Result<()> {
    anyhow::ensure!(status().is_some(), "no paxos testbed is up ({STATE_FILE} absent)");
    let pass = PassProgram::load()?;
    let fd = pass.fd()?;
    let ns = acceptor_ns(i);
    for dev in [format!("innet-ac{i}"), format!("innet-ah{i}")] {
        let index = ifindex(&ns, &dev)?;
        in_netns(&ns, || {
            crate::object::detach_any(fd, index)?;
            // SAFETY: `pass` keeps the program open for the duration of the call.
            let prog = unsafe { BorrowedFd::borrow_raw(fd) };
            let mut hook = TcHookBuilder::new(prog).ifindex(index as i32).handle(1).priority(1).hook(TC_INGRESS);
            // No tc program there (driver mode, devmap multicast) is no error.
            let _ = hook.detach();
            Ok(())
        })
        .with_context(|| format!("detach acceptor {i}'s programs from {dev}"))?;
    }
    Ok(())
}

/// Starts acceptor `i` of the testbed that `o` built again, over its
/// pinned maps (after [`stop_acceptor`], or in place of a running
/// program): CAANS section 3.1's acceptor that "restarts ... and recovers
/// its durable state", with the pinned maps as the device memory that
/// outlives the program.
pub fn restart_acceptor(o: &PaxosUp, i: usize) -> Result<()> {
    anyhow::ensure!(status().is_some(), "no paxos testbed is up ({STATE_FILE} absent)");
    anyhow::ensure!(i < o.shape.acceptors, "acceptor {i}: the testbed has {} acceptors", o.shape.acceptors);
    let d = o.deployment();
    let n = d.find(&format!("acceptor{i}")).context("the acceptor in the deployment")?;
    start_acceptor(o, &d, n, i as u16, &links(o.shape.acceptors), &Path::new(PIN_DIR).join("paxos"), true)
}

/// Fails the coordinator the way a switch fails: every link of its
/// namespace goes down (its ports go dark; nothing reaches it, nothing
/// leaves it, and its peers see no carrier). Its maps stay pinned, so
/// `innet testbed status` still shows its counters. Returns the links it
/// set down.
pub fn fail_coordinator() -> Result<Vec<String>> {
    fail_namespace(NS_COORDINATOR)
}

/// Fails acceptor `i` as [`fail_coordinator`] fails the coordinator (every
/// link of its namespace down: CAANS Figure 8a's lost acceptor). Returns
/// the links it set down.
pub fn fail_acceptor(i: usize) -> Result<Vec<String>> {
    fail_namespace(&acceptor_ns(i))
}

/// Sets every link of namespace `ns` of the running testbed down, in one
/// `ip` batch; the links it set down.
fn fail_namespace(ns: &str) -> Result<Vec<String>> {
    anyhow::ensure!(status().is_some(), "no paxos testbed is up ({STATE_FILE} absent)");
    let out = ip(&["-n", ns, "-o", "link", "show"])?;
    // "<index>: <name>@<peer>: <flags> ..."
    let down: Vec<String> = out
        .lines()
        .filter_map(|l| l.split(": ").nth(1))
        .map(|n| n.split('@').next().unwrap_or(n).to_string())
        .filter(|n| n != "lo")
        .collect();
    // One `ip` for every link: the ports go dark together.
    let batch: String = down.iter().map(|n| format!("link set {n} down\n")).collect();
    netns::ip_batch(Some(ns), &batch).with_context(|| format!("set the links of {ns} down"))?;
    anyhow::ensure!(!down.is_empty(), "no links in {ns}");
    Ok(down)
}

/// The state of a running paxos testbed, if any.
pub fn status() -> Option<State> {
    std::fs::read(STATE_FILE).ok().and_then(|b| serde_json::from_slice(&b).ok())
}

/// Removes the paxos testbed (namespaces, pins, state file); what it removed.
pub fn down() -> Result<Vec<String>> {
    let _lock = testbed_common::lock()?;
    down_unlocked()
}

pub(crate) fn down_unlocked() -> Result<Vec<String>> {
    let mut removed = vec![];
    // The processes `up` started (by the pid it recorded), before their
    // namespace goes.
    for (name, pid) in status().map(|s| s.processes).unwrap_or_default() {
        // Only if the pid is still that process (pids are reused).
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains("xdp-paxos-hosts") {
            testbed_common::end_process(pid);
            removed.push(format!("process {name} ({pid})"));
        }
    }
    let log = testbed_common::log_path(BACKUP_PROCESS);
    if log.exists() {
        std::fs::remove_file(&log).with_context(|| format!("remove {}", log.display()))?;
        removed.push(format!("log {}", log.display()));
    }
    for ns in netns::namespaces()?.into_iter().filter(|n| n.starts_with(NS_PREFIX)) {
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
