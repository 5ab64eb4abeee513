//! Any transaction deployment (a topology file: one switch, or Gotthard's
//! Figure 4 tree of edge switches under a core) on network namespaces, with
//! `xdp_txn_switch` on every switch's devices.
//!
//! The namespaces and veths come from the generic [`Net`] (one namespace
//! per machine: the store, each switch, each client group). Each switch's
//! program is configured from the deployment's tables:
//!
//! * Upstream: the device towards its upstream neighbour, rewritten to the
//!   store's address (so a core switch sees an edge's forwarded request as
//!   any request to the store, and decides on it in turn);
//! * Downstream: one route per client group below it (`txn_routes`, by the
//!   group's subnet), so a store reply or a core's abort reaches the edge in
//!   front of its client, and the edge's program decides on it again
//!   before it reaches the client (Gotthard section 3.6);
//! * the service address: the switch's address towards its first
//!   downstream neighbour; clients send to their edge's.
//!
//! The store runs as an `innet store` process in its namespace, emulating
//! its link's delay; client groups run the closed-loop load in their
//! namespaces ([`run_load`]), emulating theirs. Delays between two switches
//! cannot be emulated (no netem; the packet never leaves the kernel):
//! [`TopologyState::unemulated`] lists them and the CLI says so.
//!
//! The programs run on a [`Fabric`] (driver mode and threaded NAPI by
//! default): the switches' programs in its mode, `xdp_pass` on every
//! device of the store's and the client groups' namespaces in driver mode
//! (they receive the switches' redirected and `XDP_TX` frames), threaded
//! NAPI on every device if asked.
//!
//! State file [`STATE_FILE`], namespaces `innet-t*`, pins under
//! `/sys/fs/bpf/innet/txn-topology`: [`down`] removes exactly these, and
//! `testbed::down` (everything `innet-*`) removes them too.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use innet_core::deploy::NodeIx;
use innet_live::txn::{fresh_client_id_base, run_load as live_load, LoadConfig};
use innet_live::Stop;
use innet_txn::deploy::{validate, TxnDeployment, TxnRole};
use innet_txn::workload::{LoadStats, Workload};

use crate::fabric::{Fabric, PassProgram};
use crate::netns::Net;
use crate::netns::{self, ifindex, in_netns};
pub use crate::testbed_common::TXN_TOPOLOGY_STATE_FILE as STATE_FILE;
use crate::testbed_common::{self, State, PIN_DIR};
use crate::txn::{Ports, Program, Route, Tables, TxnXdp};

/// Namespaces are this + the machine's name; veths this + link + a|b.
pub const PREFIX: &str = "innet-t";
/// Second octet of every address (`10.79.<link>.<side>`).
pub const OCTET: u8 = 79;
pub const PORT: u16 = innet_wire::txn::DEFAULT_PORT;

fn pin_root() -> PathBuf {
    Path::new(PIN_DIR).join("txn-topology")
}

/// A switch of the running testbed.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SwitchAt {
    pub name: String,
    pub namespace: String,
    pub mode: String,
    /// The address its downstream neighbours send to.
    pub service: SocketAddrV4,
    pub pin_dir: String,
}

/// A client group of the running testbed.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GroupAt {
    pub name: String,
    pub namespace: String,
    pub clients: u32,
    /// Its upstream switch's service address.
    pub target: SocketAddrV4,
    pub delay_ms: f64,
}

/// What [`up`] made, as recorded in [`STATE_FILE`].
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TopologyState {
    #[serde(flatten)]
    pub state: State,
    pub store: Option<SocketAddrV4>,
    pub switches: Vec<SwitchAt>,
    pub groups: Vec<GroupAt>,
    /// Switch-to-switch links with a delay no runtime here emulates.
    pub unemulated: Vec<(String, String, f64)>,
}

/// One client group's load result.
#[derive(Clone, Debug)]
pub struct GroupLoad {
    pub group: String,
    pub clients: u32,
    pub stats: LoadStats,
    pub run_s: f64,
}

impl GroupAt {
    /// The group's own address on the link to its switch.
    fn own_ip(&self, net: &Net, gm: usize) -> Ipv4Addr {
        let ends = net.links.iter().flat_map(|l| [(&l.a, &l.b), (&l.b, &l.a)]);
        ends.filter(|(own, _)| own.machine == gm)
            .find(|(_, sw)| sw.ip == *self.target.ip())
            .map(|(own, _)| own.ip)
            .expect("a group is linked to the switch it sends to")
    }
}

fn save(st: &TopologyState) -> Result<()> {
    std::fs::create_dir_all(Path::new(STATE_FILE).parent().expect("has a parent"))?;
    std::fs::write(STATE_FILE, serde_json::to_vec_pretty(st)?).with_context(|| format!("write {STATE_FILE}"))
}

/// The running testbed, if any.
pub fn status() -> Option<TopologyState> {
    std::fs::read(STATE_FILE).ok().and_then(|b| serde_json::from_slice(&b).ok())
}

/// The machine of `n`'s upstream neighbour.
fn upstream_machine(d: &TxnDeployment, net: &Net, n: NodeIx) -> Option<usize> {
    d.nodes[n].upstream.map(|u| net.node_machine[u])
}

/// Builds `d` on namespaces with the XDP switch on every switch (on
/// `fabric`), starts the store (`innet_exe store`, unless `start_store` is
/// false).
pub fn up(d: &TxnDeployment, innet_exe: &Path, start_store: bool, fabric: Fabric) -> Result<TopologyState> {
    validate(d).map_err(|e| anyhow::anyhow!("{e}"))?;
    let net = Net::plan(d, PREFIX, OCTET)?;
    testbed_common::guarded(STATE_FILE, || build(d, &net, innet_exe, start_store, fabric), down_unlocked)
}

fn build(d: &TxnDeployment, net: &Net, innet_exe: &Path, start_store: bool, fabric: Fabric) -> Result<TopologyState> {
    let removed = down_unlocked()?;
    if !removed.is_empty() {
        eprintln!("testbed: removed leftovers of an earlier topology testbed: {}", removed.join(", "));
    }
    let mut st = TopologyState {
        state: State {
            topology: "txn-topology".into(),
            namespaces: net.namespaces.clone(),
            pin_dir: Some(pin_root().display().to_string()),
            processes: vec![],
            fabric: Some(fabric),
        },
        unemulated: net
            .unemulated_delays()
            .into_iter()
            .map(|(a, b, delay)| (a, b, delay.as_secs_f64() * 1e3))
            .collect(),
        ..TopologyState::default()
    };
    save(&st)?;
    net.build().context("build namespaces and links")?;

    let store = d.with_role(|r| *r == TxnRole::Store)[0];
    let store_m = net.node_machine[store];
    let store_ip = net.address(store_m);
    st.store = Some(SocketAddrV4::new(store_ip, PORT));

    st.groups = client_groups(d, net)?;

    for (n, node) in d.nodes.iter().enumerate() {
        let TxnRole::Switch(spec) = node.role else { continue };
        let switch = start_switch(d, net, n, spec, store_ip, &st.groups, fabric)?;
        st.switches.push(switch);
        save(&st)?;
    }

    finish_fabric(net, fabric)?;

    if start_store {
        start_store_process(net, store_m, store_ip, innet_exe, &mut st)?;
    }
    Ok(st)
}

/// The client groups of `d` on `net`: each machine of clients, with its
/// upstream switch (one for the whole group) and its link's delay.
fn client_groups(d: &TxnDeployment, net: &Net) -> Result<Vec<GroupAt>> {
    let mut groups = vec![];
    for (m, machine) in net.machines.iter().enumerate() {
        let nodes: Vec<NodeIx> = (0..d.nodes.len()).filter(|&n| net.node_machine[n] == m).collect();
        if !nodes.iter().all(|&n| d.nodes[n].role.is_client()) {
            continue;
        }
        let up_m = upstream_machine(d, net, nodes[0]).expect("clients have an upstream (validated)");
        if nodes.iter().any(|&n| upstream_machine(d, net, n) != Some(up_m)) {
            bail!("the clients of group '{machine}' have different upstream switches: give each its own group");
        }
        let (_, sw) = net.toward(m, up_m).expect("a client group is linked to its upstream");
        groups.push(GroupAt {
            name: machine.clone(),
            namespace: net.namespaces[m].clone(),
            clients: nodes.len() as u32,
            target: SocketAddrV4::new(sw.ip, PORT),
            delay_ms: net.links.iter().find(|l| [l.a.ip, l.b.ip].contains(&sw.ip)).map_or(0.0, |l| ms(l.delay)),
        });
    }
    Ok(groups)
}

/// Loads, configures and attaches the XDP switch of node `n` (a switch
/// of `spec`) on `fabric`, with a route for each of the client `groups`
/// behind it, its maps pinned; where it runs.
fn start_switch(
    d: &TxnDeployment,
    net: &Net,
    n: NodeIx,
    spec: innet_txn::deploy::SwitchSpec,
    store_ip: Ipv4Addr,
    groups: &[GroupAt],
    fabric: Fabric,
) -> Result<SwitchAt> {
    let node = &d.nodes[n];
    let m = net.node_machine[n];
    let ns = net.namespaces[m].clone();
    let up_m = upstream_machine(d, net, n).expect("a switch has an upstream (validated)");
    let (up_port, up_peer) = net.toward(m, up_m).expect("linked to its upstream");
    let below: Vec<usize> = d.downstream_of(n).into_iter().map(|c| net.node_machine[c]).collect();
    let first_below = *below.first().with_context(|| format!("switch '{}' has nothing below it", node.name))?;
    let (down_port, down_peer) = net.toward(m, first_below).expect("linked to what is below");
    let ports = Ports {
        udp_port: PORT,
        client_ifindex: ifindex(&ns, &down_port.dev)?,
        store_ifindex: ifindex(&ns, &up_port.dev)?,
        service_ip: down_port.ip,
        store_ip,
        client_port_mac: down_port.mac,
        client_mac: down_peer.mac,
        store_port_mac: up_port.mac,
        store_mac: up_peer.mac,
    };
    let mut xdp = TxnXdp::load(Tables { cache_slots: spec.cache_slots, ..Tables::default() })?;
    xdp.configure(spec.mode, &ports)?;
    add_group_routes(&mut xdp, d, net, n, groups)?;
    let dir = pin_root().join(&node.name);
    xdp.pin_maps(&dir)?;
    let devs: Vec<&str> = net.ifaces(m).iter().map(|i| i.dev.as_str()).collect();
    fabric.attach(xdp.program_fd(Program::TxnSwitch)?, &ns, &devs)?;
    Ok(SwitchAt {
        name: node.name.clone(),
        namespace: ns,
        mode: spec.mode.name().into(),
        service: SocketAddrV4::new(down_port.ip, PORT),
        pin_dir: dir.display().to_string(),
    })
}

/// A route on switch `n`'s program for every client group whose path to
/// the store passes it, through the neighbour the path came from.
fn add_group_routes(xdp: &mut TxnXdp, d: &TxnDeployment, net: &Net, n: NodeIx, groups: &[GroupAt]) -> Result<()> {
    let m = net.node_machine[n];
    let ns = &net.namespaces[m];
    for g in groups {
        let gm = net.namespaces.iter().position(|x| *x == g.namespace).expect("a group's namespace");
        let client = (0..d.nodes.len()).find(|&c| net.node_machine[c] == gm).expect("a group has clients");
        let group_ip = g.own_ip(net, gm);
        let o = group_ip.octets();
        let mut prev = gm;
        for hop in innet_txn::deploy::path_to_store(d, client) {
            if hop == n {
                let (port, peer) = net.toward(m, prev).expect("path hops are linked");
                xdp.add_route(&Route {
                    prefix: Ipv4Addr::new(o[0], o[1], o[2], 0),
                    prefix_len: 24,
                    ifindex: ifindex(ns, &port.dev)?,
                    port_mac: port.mac,
                    next_mac: peer.mac,
                })?;
            }
            prev = net.node_machine[hop];
        }
    }
    Ok(())
}

/// Starts the store (`innet_exe store`) in its namespace (machine
/// `store_m`), listening on `store_ip`, and waits until it runs.
fn start_store_process(
    net: &Net,
    store_m: usize,
    store_ip: Ipv4Addr,
    innet_exe: &Path,
    st: &mut TopologyState,
) -> Result<()> {
    // The store emulates its link's delay (a store has one link: to the
    // switch in front of it).
    let store_link_delay =
        net.links.iter().find(|l| l.a.machine == store_m || l.b.machine == store_m).map_or(0.0, |l| ms(l.delay));
    let listen = SocketAddrV4::new(store_ip, PORT).to_string();
    let delay = store_link_delay.to_string();
    let args = ["store", "--listen", &listen, "--link-delay-ms", &delay];
    let name = "txn-topology-store";
    let pid = testbed_common::spawn_in(&net.namespaces[store_m], innet_exe, &args, name)?;
    st.state.processes.push((name.into(), pid));
    save(st)?;
    testbed_common::wait_for_log_line(name, "store ", Duration::from_secs(10))?;
    Ok(())
}

/// Driver mode: `xdp_pass` on every device of the end hosts' namespaces
/// (the store's, the client groups': the switches' frames reach them only
/// with a program there), then threaded NAPI on every device, if asked.
fn finish_fabric(net: &Net, fabric: Fabric) -> Result<()> {
    let pass = PassProgram::load()?;
    for (m, ns) in net.namespaces.iter().enumerate() {
        let devs: Vec<&str> = net.ifaces(m).iter().map(|i| i.dev.as_str()).collect();
        let pass_on: &[&str] = if net.switch_machine[m] { &[] } else { &devs };
        fabric.finish(&pass, ns, pass_on, &devs, &devs)?;
    }
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Runs the closed-loop workload in every client group at once (each in its
/// namespace, its clients emulating their link's delay) for `duration`.
pub fn run_load(st: &TopologyState, workload: &Workload, duration: Duration, seed: u64) -> Result<Vec<GroupLoad>> {
    workload.validate().map_err(|e| anyhow::anyhow!("{e}"))?;
    let stop = Stop::new();
    std::thread::scope(|s| {
        let runs: Vec<_> = st
            .groups
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let stop = stop.clone();
                s.spawn(move || -> Result<GroupLoad> {
                    let mut cfg = LoadConfig::new(SocketAddr::V4(g.target), workload.clone());
                    cfg.clients = g.clients;
                    cfg.first_client_id = fresh_client_id_base(g.clients);
                    cfg.seed = seed.wrapping_add(i as u64);
                    cfg.duration = duration;
                    cfg.client_delay = Duration::from_secs_f64(g.delay_ms / 1e3);
                    let r = in_netns(&g.namespace, || Ok(live_load(&cfg, &stop)?))
                        .with_context(|| format!("load of client group '{}'", g.name))?;
                    Ok(GroupLoad {
                        group: g.name.clone(),
                        clients: g.clients,
                        stats: r.stats,
                        run_s: r.run.as_secs_f64(),
                    })
                })
            })
            .collect();
        runs.into_iter().map(|h| h.join().unwrap_or_else(|_| bail!("a load thread panicked"))).collect()
    })
}

/// A switch's name and its counters by name.
pub type SwitchCounters = (String, Vec<(&'static str, u64)>);

/// Every switch's counters, read from its pinned maps.
pub fn switch_counters(st: &TopologyState) -> Result<Vec<SwitchCounters>> {
    st.switches.iter().map(|s| Ok((s.name.clone(), crate::txn::pinned_counters(Path::new(&s.pin_dir))?))).collect()
}

/// Removes what [`up`] made (recorded or found by prefix); what it removed.
pub fn down() -> Result<Vec<String>> {
    let _lock = testbed_common::lock()?;
    down_unlocked()
}

pub(crate) fn down_unlocked() -> Result<Vec<String>> {
    let mut removed = vec![];
    let st = status().unwrap_or_default();
    for (name, pid) in &st.state.processes {
        if Path::new(&format!("/proc/{pid}")).exists() {
            testbed_common::end_process(*pid);
            removed.push(format!("process {name} ({pid})"));
        }
    }
    let mut nss: Vec<String> = netns::namespaces()?.into_iter().filter(|n| n.starts_with(PREFIX)).collect();
    for ns in &st.state.namespaces {
        if !nss.contains(ns) && Path::new("/run/netns").join(ns).exists() {
            nss.push(ns.clone());
        }
    }
    for ns in &nss {
        let pids = netns::ip(&["netns", "pids", ns]).unwrap_or_default();
        for pid in pids.lines().filter_map(|l| l.trim().parse::<u32>().ok()) {
            testbed_common::end_process(pid);
            removed.push(format!("process {pid} in {ns}"));
        }
        netns::ip(&["netns", "del", ns])?;
        removed.push(format!("netns {ns}"));
    }
    if pin_root().exists() {
        std::fs::remove_dir_all(pin_root()).with_context(|| format!("remove {}", pin_root().display()))?;
        removed.push(format!("pins {}", pin_root().display()));
        // The pin root too, unless another testbed's pins are in it.
        let _ = std::fs::remove_dir(PIN_DIR);
    }
    if Path::new(STATE_FILE).exists() {
        std::fs::remove_file(STATE_FILE)?;
        removed.push(format!("state {STATE_FILE}"));
    }
    Ok(removed)
}
