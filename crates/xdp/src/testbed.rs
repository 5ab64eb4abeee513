//! Network namespaces and veth pairs for a topology, with the data plane
//! attached and the end hosts started; and the undo of all of it.
//!
//! Topology `txn` (Gotthard's setup: clients, one switch, one store):
//!
//! ```text
//!  netns innet-client          netns innet-switch                 netns innet-store
//!  innet-c0 10.77.0.2 ---- innet-sc 10.77.0.1 | innet-ss 10.77.1.1 ---- innet-s0 10.77.1.2
//!  (clients send to 10.77.0.1:9999)   XDP on both ports                 innet store :9999
//! ```
//!
//! Clients send to the service address 10.77.0.1:9999. With the XDP data
//! plane, `xdp_txn_switch` on `innet-sc` rewrites forwarded requests to the
//! store and redirects them to `innet-ss`, reflects aborts out of `innet-sc`,
//! and `xdp_txn_switch` on `innet-ss` sends store replies back to the
//! client with the service address as source. With the software data plane
//! an `innet switch txn` process listens on 10.77.0.1:9999 instead, on
//! plain veths (no XDP anywhere). MACs are fixed at creation so the
//! switch's config needs no discovery.
//!
//! The XDP data plane runs on a [`Fabric`] ([`UpOptions::fabric`], recorded
//! in the state file): driver mode by default, the switch's programs in
//! the mode chosen, `xdp_pass` on the client's and the store's ends
//! (`innet-c0`, `innet-s0`: they receive the switch's `XDP_TX` and
//! redirected frames, which a driver-mode veth delivers only to a peer with
//! a program), and threaded NAPI on the four devices if asked.
//!
//! Everything made is named `innet-*` and recorded in a state file
//! ([`STATE_FILE`]) *before* it is made; [`down`] reads it, and also removes
//! the namespaces this testbed makes by their fixed names, the `innet-*`
//! links left in the root namespace and its own pin directories, so it
//! cleans up after a crash of `up` or of anything started; it never touches
//! another testbed's namespaces or pins. Processes are only ever ended by
//! pid: those recorded, and those `ip netns pids` lists inside our own
//! namespaces.
//!
//! One testbed at a time: every `up` takes [`LOCK_FILE`] while it builds and
//! refuses while another testbed's state file exists ([`guarded`]); a failed
//! `up` removes everything it made before it returns its error. Pinning
//! mounts the BPF filesystem at /sys/fs/bpf when it is not mounted (creating
//! the mount point if needed), as bpftool does.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use innet_txn::switch::Mode;

use crate::fabric::{Fabric, PassProgram, XdpMode};
pub use crate::netns::{ifindex, in_netns, namespaces, root_links, PREFIX};
use crate::netns::{ip, mac_str};
use crate::object;
pub use crate::testbed_common::down;
use crate::testbed_common::{down_unlocked, load_state, remove_own_leftovers, save};
pub use crate::testbed_common::{
    end_process, ensure_no_other_testbed, guarded, lock, lock_at, log_path, spawn_in, wait_for_log_line, Lock, State,
    LOCK_FILE, NS_CLIENT, NS_STORE, NS_SWITCH, PIN_DIR, STATE_FILE, STATE_FILES,
};
use crate::txn::{Ports, Program, Tables, TxnXdp};

pub const IF_CLIENT: &str = "innet-c0";
pub const IF_SWITCH_CLIENT_SIDE: &str = "innet-sc";
pub const IF_SWITCH_STORE_SIDE: &str = "innet-ss";
pub const IF_STORE: &str = "innet-s0";
pub const CLIENT_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);
pub const SERVICE_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
pub const SWITCH_STORE_SIDE_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 1, 1);
pub const STORE_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 1, 2);
pub const PORT: u16 = innet_wire::txn::DEFAULT_PORT;
const MAC_CLIENT: [u8; 6] = [0x02, 0x77, 0, 0, 0, 0x02];
const MAC_SWITCH_CLIENT_SIDE: [u8; 6] = [0x02, 0x77, 0, 0, 0, 0x01];
const MAC_SWITCH_STORE_SIDE: [u8; 6] = [0x02, 0x77, 0, 0, 1, 0x01];
const MAC_STORE: [u8; 6] = [0x02, 0x77, 0, 0, 1, 0x02];

/// The address clients send to.
pub fn service_addr() -> SocketAddrV4 {
    SocketAddrV4::new(SERVICE_IP, PORT)
}

/// The store's address.
pub fn store_addr() -> SocketAddrV4 {
    SocketAddrV4::new(STORE_IP, PORT)
}

pub use innet_core::deploy::DataPlaneAt;

/// The data plane a testbed's switch role runs on, from a `--data-plane`
/// value: `xdp` (the BPF program on the switch's ports) or `switch` (an
/// `innet switch txn` user-space software switch process in the switch
/// namespace). `process` (the programs as end hosts) has no place on a
/// testbed; `software`, the testbed's earlier name for `switch` (and the
/// consensus records' earlier name for `process`), is refused with the two
/// choices.
pub fn parse_data_plane(s: &str) -> Result<DataPlaneAt, String> {
    match s {
        "xdp" => Ok(DataPlaneAt::Xdp),
        "switch" => Ok(DataPlaneAt::Switch),
        "software" => Err("'software' is no longer a data plane name: say switch (the user-space software switch) \
                           or xdp (the BPF program)"
            .into()),
        "process" => Err("--data-plane process: a testbed's switch runs as xdp or as a software switch (switch); \
                          the process deployment runs on loopback (`innet up paxos --data-plane process`)"
            .into()),
        _ => Err(format!("unknown data plane '{s}': expected xdp or switch (the user-space software switch)")),
    }
}

#[derive(Clone, Debug)]
pub struct UpOptions {
    /// Only `txn` exists so far.
    pub topology: String,
    /// `Xdp` or `Switch` (the software switch process); `None`: nothing
    /// carries the switch role (benchmarks attach what they measure).
    pub data_plane: Option<DataPlaneAt>,
    pub mode: Mode,
    pub start_store: bool,
    /// One-way store <-> switch delay, emulated by the store (no netem here).
    pub store_delay_ms: f64,
    /// The `innet` program to start end hosts with.
    pub innet_exe: PathBuf,
    /// How the XDP data plane's devices run their programs (driver mode
    /// and threaded NAPI by default); the software switch ignores it.
    pub fabric: Fabric,
    /// `--auth-key`: the key file switch and store seal and check what
    /// they send each other with (the clients stay unsealed); the XDP
    /// switch takes its keys, the processes its path.
    pub auth_key: Option<innet_live::auth::KeyFile>,
}

/// Builds the `txn` topology; see the module docs.
pub fn up(o: &UpOptions) -> Result<State> {
    if o.topology == "paxos" {
        return crate::paxos_testbed::up(&crate::paxos_testbed::PaxosUp::default());
    }
    if o.topology != "txn" {
        bail!("unknown topology '{}': 'txn' (clients, switch, store) or 'paxos'", o.topology);
    }
    guarded(STATE_FILE, || build_txn(o), down_unlocked)
}

fn build_txn(o: &UpOptions) -> Result<State> {
    remove_own_leftovers()?;
    let mut state = State {
        topology: o.topology.clone(),
        namespaces: vec![NS_CLIENT.into(), NS_SWITCH.into(), NS_STORE.into()],
        pin_dir: None,
        processes: vec![],
        fabric: None,
    };
    save(&state)?;
    build_links().context("build namespaces and links")?;
    match o.data_plane {
        Some(DataPlaneAt::Xdp) => {
            let dir = Path::new(PIN_DIR).join("txn_switch");
            state.pin_dir = Some(dir.display().to_string());
            state.fabric = Some(o.fabric);
            save(&state)?;
            let xdp = load_pinned(o.mode, &dir)?;
            xdp.set_auth(o.auth_key.as_ref().map(|k| &k.keys))?;
            attach_plane(&xdp, Some(Program::TxnSwitch), &o.fabric)?;
        }
        Some(DataPlaneAt::Switch) => {
            let args = [
                "switch",
                "txn",
                "--mode",
                o.mode.name(),
                "--listen",
                &service_addr().to_string(),
                "--upstream",
                &store_addr().to_string(),
            ];
            let args = [&args[..], &auth_args(o)].concat();
            let pid = spawn_in(NS_SWITCH, &o.innet_exe, &args, "switch")?;
            state.processes.push(("switch".into(), pid));
            save(&state)?;
        }
        Some(DataPlaneAt::Process) => bail!("{}", parse_data_plane("process").unwrap_err()),
        None => {}
    }
    if o.start_store {
        // Without --downstream its keys cover every sender: requests reach
        // it with their clients' addresses, sealed by the switch.
        let args = ["store", "--listen", &store_addr().to_string(), "--link-delay-ms", &o.store_delay_ms.to_string()];
        let args = [&args[..], &auth_args(o)].concat();
        let pid = spawn_in(NS_STORE, &o.innet_exe, &args, "store")?;
        state.processes.push(("store".into(), pid));
        save(&state)?;
    }
    Ok(state)
}

/// `--auth-key FILE` for the end hosts, if the testbed has keys.
fn auth_args(o: &UpOptions) -> Vec<&str> {
    o.auth_key.iter().flat_map(|f| ["--auth-key", f.path.to_str().unwrap_or_default()]).collect()
}

fn build_links() -> Result<()> {
    for ns in [NS_CLIENT, NS_SWITCH, NS_STORE] {
        ip(&["netns", "add", ns])?;
        ip(&["-n", ns, "link", "set", "lo", "up"])?;
    }
    let pairs = [
        (
            NS_CLIENT,
            IF_CLIENT,
            MAC_CLIENT,
            CLIENT_IP,
            NS_SWITCH,
            IF_SWITCH_CLIENT_SIDE,
            MAC_SWITCH_CLIENT_SIDE,
            SERVICE_IP,
        ),
        (
            NS_STORE,
            IF_STORE,
            MAC_STORE,
            STORE_IP,
            NS_SWITCH,
            IF_SWITCH_STORE_SIDE,
            MAC_SWITCH_STORE_SIDE,
            SWITCH_STORE_SIDE_IP,
        ),
    ];
    for (ns_a, if_a, mac_a, ip_a, ns_b, if_b, mac_b, ip_b) in pairs {
        let (mac_a, mac_b) = (mac_str(mac_a), mac_str(mac_b));
        ip(&[
            "link", "add", if_a, "address", &mac_a, "netns", ns_a, "type", "veth", "peer", "name", if_b, "address",
            &mac_b, "netns", ns_b,
        ])?;
        for (ns, dev, addr) in [(ns_a, if_a, ip_a), (ns_b, if_b, ip_b)] {
            ip(&["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", dev])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
        }
    }
    ip(&["-n", NS_CLIENT, "route", "add", "10.77.1.0/24", "via", &SERVICE_IP.to_string()])?;
    ip(&["-n", NS_STORE, "route", "add", "10.77.0.0/24", "via", &SWITCH_STORE_SIDE_IP.to_string()])?;
    Ok(())
}

/// The switch's view of the topology, for its config map.
pub fn txn_ports() -> Result<Ports> {
    Ok(Ports {
        udp_port: PORT,
        client_ifindex: ifindex(NS_SWITCH, IF_SWITCH_CLIENT_SIDE)?,
        store_ifindex: ifindex(NS_SWITCH, IF_SWITCH_STORE_SIDE)?,
        service_ip: SERVICE_IP,
        store_ip: STORE_IP,
        client_port_mac: MAC_SWITCH_CLIENT_SIDE,
        client_mac: MAC_CLIENT,
        store_port_mac: MAC_SWITCH_STORE_SIDE,
        store_mac: MAC_STORE,
    })
}

/// `payload` (a transaction request) as the client sends it to the
/// service address, arriving at the switch on `innet-sc`: the in-kernel
/// generator's template. The client's UDP port is 40000.
pub fn request_frame(payload: &[u8]) -> Vec<u8> {
    use crate::frame::{udp_frame, Endpoint};
    let from = Endpoint { mac: MAC_CLIENT, ip: CLIENT_IP, port: 40_000 };
    let to = Endpoint { mac: MAC_SWITCH_CLIENT_SIDE, ip: SERVICE_IP, port: PORT };
    udp_frame(from, to, payload, 0)
}

/// Where [`up`] pins the XDP switch's program (the in-kernel generator's
/// target).
pub fn switch_program_pin() -> PathBuf {
    Path::new(PIN_DIR).join("txn_switch").join(Program::TxnSwitch.section_name())
}

/// Loads the switch object configured for this topology, pins its maps and
/// both programs under `dir` (so they outlive this process and can be read
/// and attached by path).
pub fn load_pinned(mode: Mode, dir: &Path) -> Result<TxnXdp> {
    let mut xdp = TxnXdp::load(Tables::default())?;
    xdp.configure(mode, &txn_ports()?)?;
    xdp.pin_maps(dir)?;
    for p in [Program::TxnSwitch, Program::Bounce] {
        xdp.pin_program(p, &dir.join(p.section_name()))?;
    }
    Ok(xdp)
}

/// Sends `frame` out of device `dev` of namespace `ns` with an AF_PACKET
/// socket, as whoever holds that end of the link could: the frame arrives
/// at the device's peer with the MACs it carries.
pub fn send_on_link(ns: &str, dev: &str, frame: &[u8]) -> Result<()> {
    let ifindex = ifindex(ns, dev)?;
    in_netns(ns, || {
        // SAFETY: a socket call with constant arguments; the descriptor is closed below.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0) };
        if fd < 0 {
            bail!("AF_PACKET socket: {}", std::io::Error::last_os_error());
        }
        // SAFETY: sockaddr_ll is plain data; zero is a valid value of every field.
        let mut to: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        to.sll_family = libc::AF_PACKET as u16;
        to.sll_ifindex = ifindex as i32;
        to.sll_halen = 6;
        to.sll_addr[..6].copy_from_slice(&frame[..6]);
        let len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        // SAFETY: `frame` and `to` outlive the call, whose lengths are theirs.
        let sent = unsafe { libc::sendto(fd, frame.as_ptr().cast(), frame.len(), 0, (&raw const to).cast(), len) };
        let error = std::io::Error::last_os_error();
        // SAFETY: `fd` is ours and closed once.
        unsafe { libc::close(fd) };
        if sent != frame.len() as isize {
            bail!("AF_PACKET send on {dev}: {error}");
        }
        Ok(())
    })
}

/// Attaches `prog` in `mode` to `dev` in the switch namespace, replacing
/// what is there.
pub fn attach(xdp: &TxnXdp, prog: Program, dev: &str, mode: XdpMode) -> Result<()> {
    let (index, fd) = (ifindex(NS_SWITCH, dev)?, xdp.program_fd(prog)?);
    in_netns(NS_SWITCH, || object::attach_fd_in(fd, index, mode))
}

/// Removes any XDP program (either mode) from `dev` of `ns`; `fd` is any
/// open program (netlink needs one to build the request).
pub fn detach_in(fd: std::os::fd::RawFd, ns: &str, dev: &str) -> Result<()> {
    let index = ifindex(ns, dev)?;
    in_netns(ns, || object::detach_any(fd, index))
}

/// Puts what carries the switch role of the `txn` topology on its
/// devices, in `fabric`'s mode: the bare bounce on the switch's client
/// port, the switch on both its ports, or (`None`) nothing (the software
/// planes run on plain veths). In driver mode the end devices that receive
/// the programs' frames get `xdp_pass` (the client's for the bounce, the
/// client's and the store's for the switch), and threaded NAPI goes on
/// every device with a program, if asked.
pub fn attach_plane(xdp: &TxnXdp, plane: Option<Program>, fabric: &Fabric) -> Result<()> {
    let fd = xdp.program_fd(Program::Bounce)?;
    let (switch_devs, ends): (&[&str], &[(&str, &str)]) = match plane {
        Some(Program::Bounce) => (&[IF_SWITCH_CLIENT_SIDE], &[(NS_CLIENT, IF_CLIENT)]),
        Some(Program::TxnSwitch) => {
            (&[IF_SWITCH_CLIENT_SIDE, IF_SWITCH_STORE_SIDE], &[(NS_CLIENT, IF_CLIENT), (NS_STORE, IF_STORE)])
        }
        None => (&[], &[]),
    };
    for (ns, dev) in [
        (NS_CLIENT, IF_CLIENT),
        (NS_SWITCH, IF_SWITCH_CLIENT_SIDE),
        (NS_SWITCH, IF_SWITCH_STORE_SIDE),
        (NS_STORE, IF_STORE),
    ] {
        if !switch_devs.contains(&dev) && !ends.contains(&(ns, dev)) {
            detach_in(fd, ns, dev)?;
        }
    }
    if let Some(p) = plane {
        fabric.attach(xdp.program_fd(p)?, NS_SWITCH, switch_devs)?;
        let pass = PassProgram::load()?;
        for (ns, dev) in ends {
            fabric.finish(&pass, ns, &[dev], &[dev], &[dev])?;
        }
        fabric.finish(&pass, NS_SWITCH, &[], switch_devs, switch_devs)?;
    }
    Ok(())
}

/// Every testbed that is up, each removing only what it made.
pub fn down_all() -> Result<Vec<String>> {
    let _lock = lock()?;
    let mut removed = down_unlocked()?;
    removed.extend(crate::paxos_testbed::down_unlocked()?);
    removed.extend(crate::txn_topology::down_unlocked()?);
    Ok(removed)
}

/// The running testbed's state, if any.
pub fn status() -> Option<State> {
    load_state()
}
