//! Loading, configuring, test-running and reading the transaction switch
//! (`bpf/txn_switch.bpf.c`) with libbpf-rs.
//!
//! The object holds two XDP programs sharing the config map: the switch
//! ([`Program::TxnSwitch`]) and the bare bounce baseline
//! ([`Program::Bounce`]). Table capacities are set before load (the BPF
//! arrays are resized, the config carries the matching hash bits), so a test
//! can run the switch with tables small enough to evict.

use std::net::Ipv4Addr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use libbpf_rs::{MapCore, MapFlags, MapHandle, Object, ObjectBuilder, Xdp, XdpFlags};

use innet_txn::switch::{CacheEntry, ClientEntry, Mode, CACHE_SLOTS_DEFAULT, CLIENT_SLOTS_DEFAULT};

use crate::layout::{self, Config, Slot, State, CACHE_SLOT_SIZE, CLIENT_SLOT_SIZE, COUNTER_NAMES, WAYS};

static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/txn_switch.bpf.o"));

/// Map names (the C side's `SEC(".maps")` variables).
pub const MAP_CONFIG: &str = "txn_config";
pub const MAP_STATE: &str = "txn_state";
pub const MAP_CACHE: &str = "txn_cache";
pub const MAP_CLIENTS: &str = "txn_clients";
pub const MAP_COUNTERS: &str = "txn_counters";
/// Maps worth pinning for a running deployment (the scratch map is not).
pub const PINNED_MAPS: [&str; 5] = [MAP_CONFIG, MAP_STATE, MAP_CACHE, MAP_CLIENTS, MAP_COUNTERS];

/// XDP action codes (`enum xdp_action`).
pub const XDP_ABORTED: u32 = 0;
pub const XDP_DROP: u32 = 1;
pub const XDP_PASS: u32 = 2;
pub const XDP_TX: u32 = 3;
pub const XDP_REDIRECT: u32 = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Program {
    /// The transaction switch, all four modes.
    TxnSwitch,
    /// Swap addresses and XDP_TX: the floor any XDP program pays.
    Bounce,
}

impl Program {
    pub fn section_name(self) -> &'static str {
        match self {
            Program::TxnSwitch => "xdp_txn_switch",
            Program::Bounce => "xdp_bounce",
        }
    }
}

/// Table geometry: capacities in slots (powers of two, at least [`WAYS`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tables {
    pub cache_slots: usize,
    pub client_slots: usize,
}

impl Default for Tables {
    /// The Rust reference's constants.
    fn default() -> Tables {
        Tables { cache_slots: CACHE_SLOTS_DEFAULT, client_slots: CLIENT_SLOTS_DEFAULT }
    }
}

fn set_bits(slots: usize) -> Result<u32> {
    if slots < WAYS || !slots.is_power_of_two() {
        bail!("table capacity {slots} must be a power of two >= {WAYS}");
    }
    Ok((slots / WAYS).trailing_zeros())
}

/// Addresses the switch rewrites to. Tests use made-up ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ports {
    pub udp_port: u16,
    pub client_ifindex: u32,
    pub store_ifindex: u32,
    pub service_ip: Ipv4Addr,
    pub store_ip: Ipv4Addr,
    pub client_port_mac: [u8; 6],
    pub client_mac: [u8; 6],
    pub store_port_mac: [u8; 6],
    pub store_mac: [u8; 6],
}

/// A loaded transaction-switch object.
pub struct TxnXdp {
    obj: Object,
    tables: Tables,
}

impl TxnXdp {
    /// Opens the embedded object, sizes the tables, loads it into the kernel.
    pub fn load(tables: Tables) -> Result<TxnXdp> {
        let (cache_bits, client_bits) = (set_bits(tables.cache_slots)?, set_bits(tables.client_slots)?);
        let mut open = ObjectBuilder::default().open_memory(OBJECT).context("open BPF object")?;
        for mut m in open.maps_mut() {
            let sets = match m.name().to_str() {
                Some(MAP_CACHE) => 1u32 << cache_bits,
                Some(MAP_CLIENTS) => 1u32 << client_bits,
                _ => continue,
            };
            m.set_max_entries(sets).context("resize table")?;
        }
        let obj = open.load().context("load BPF object (needs root or CAP_BPF + CAP_NET_ADMIN)")?;
        Ok(TxnXdp { obj, tables })
    }

    pub fn tables(&self) -> Tables {
        self.tables
    }

    fn map(&self, name: &str) -> Result<libbpf_rs::Map<'_>> {
        self.obj.maps().find(|m| m.name() == name).ok_or_else(|| anyhow!("no map {name} in the object"))
    }

    fn program(&self, p: Program) -> Result<libbpf_rs::ProgramMut<'_>> {
        let name = p.section_name();
        self.obj.progs_mut().find(|q| q.name() == name).ok_or_else(|| anyhow!("no program {name} in the object"))
    }

    /// Writes the mode, the table geometry and the addresses.
    pub fn configure(&self, mode: Mode, ports: &Ports) -> Result<()> {
        let cfg = Config {
            mode,
            cache_set_bits: set_bits(self.tables.cache_slots)?,
            client_set_bits: set_bits(self.tables.client_slots)?,
            udp_port: ports.udp_port,
            client_ifindex: ports.client_ifindex,
            store_ifindex: ports.store_ifindex,
            service_ip: ports.service_ip,
            store_ip: ports.store_ip,
            client_port_mac: ports.client_port_mac,
            client_mac: ports.client_mac,
            store_port_mac: ports.store_port_mac,
            store_mac: ports.store_mac,
        };
        self.map(MAP_CONFIG)?.update(&0u32.to_ne_bytes(), &cfg.encode(), MapFlags::ANY).context("write config")
    }

    /// Runs `frame` through `p` once with `BPF_PROG_TEST_RUN`: the XDP action
    /// and the frame as the program left it.
    pub fn test_run(&self, p: Program, frame: &[u8]) -> Result<(u32, Vec<u8>)> {
        let prog = self.program(p)?;
        let mut out = vec![0u8; frame.len() + 256];
        let input = libbpf_rs::ProgramInput { data_in: Some(frame), data_out: Some(&mut out), ..Default::default() };
        let o = prog.test_run(input).context("BPF_PROG_TEST_RUN")?;
        let (action, n) = (o.return_value, o.data.map_or(0, |d| d.len()));
        out.truncate(n);
        Ok((action, out))
    }

    /// The program's file descriptor (valid while `self` lives), for
    /// [`attach_fd`] on a thread in another network namespace.
    pub fn program_fd(&self, p: Program) -> Result<RawFd> {
        Ok(self.program(p)?.as_fd().as_raw_fd())
    }

    /// Pins the maps of [`PINNED_MAPS`] under `dir` (on a bpffs).
    pub fn pin_maps(&mut self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
        for mut m in self.obj.maps_mut() {
            let name = m.name().to_string_lossy().to_string();
            if PINNED_MAPS.contains(&name.as_str()) {
                m.pin(dir.join(&name)).with_context(|| format!("pin {name}"))?;
            }
        }
        Ok(())
    }

    /// Pins program `p` at `path` (on a bpffs), e.g. for `ip link set ... xdp pinned`.
    pub fn pin_program(&mut self, p: Program, path: &Path) -> Result<()> {
        self.program(p)?.pin(path).with_context(|| format!("pin {}", path.display()))
    }

    pub fn counters(&self) -> Result<Vec<(&'static str, u64)>> {
        read_counters(&self.map(MAP_COUNTERS)?)
    }
    pub fn state(&self) -> Result<State> {
        read_state(&self.map(MAP_STATE)?)
    }
    pub fn cache_slots(&self) -> Result<Vec<Slot<CacheEntry>>> {
        read_sets(&self.map(MAP_CACHE)?, CACHE_SLOT_SIZE, layout::decode_cache_slot)
    }
    pub fn client_slots(&self) -> Result<Vec<Slot<ClientEntry>>> {
        read_sets(&self.map(MAP_CLIENTS)?, CLIENT_SLOT_SIZE, layout::decode_client_slot)
    }
}

/// Attaches the XDP program `fd` in generic (skb) mode to `ifindex` of the
/// calling thread's network namespace, replacing what is there. The
/// attachment (netlink, not a bpf_link) outlives this process.
pub fn attach_fd(fd: RawFd, ifindex: u32) -> Result<()> {
    // SAFETY: the caller keeps the program open (it borrows the TxnXdp that
    // returned `fd` for the duration of the call).
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    Xdp::new(fd)
        .attach(ifindex as i32, XdpFlags::SKB_MODE | XdpFlags::REPLACE)
        .or_else(|_| {
            let _ = Xdp::new(fd).detach(ifindex as i32, XdpFlags::SKB_MODE);
            Xdp::new(fd).attach(ifindex as i32, XdpFlags::SKB_MODE)
        })
        .with_context(|| format!("attach XDP to ifindex {ifindex}"))
}

/// Detaches the generic-mode XDP program of `ifindex` (calling thread's
/// namespace); `fd` is any open program (netlink needs one to build the request).
pub fn detach_fd(fd: RawFd, ifindex: u32) -> Result<()> {
    // SAFETY: as in attach_fd.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    Xdp::new(fd)
        .detach(ifindex as i32, XdpFlags::SKB_MODE)
        .with_context(|| format!("detach XDP from ifindex {ifindex}"))
}

fn lookup(m: &impl MapCore, index: u32) -> Result<Vec<u8>> {
    m.lookup(&index.to_ne_bytes(), MapFlags::ANY)?.ok_or_else(|| anyhow!("{:?}[{index}] missing", m.name()))
}

/// Counters by name, in `INNET_TXN_CTR_*` order.
pub fn read_counters(m: &impl MapCore) -> Result<Vec<(&'static str, u64)>> {
    let mut v = Vec::with_capacity(COUNTER_NAMES.len());
    for (i, name) in COUNTER_NAMES.iter().enumerate() {
        let b = lookup(m, i as u32)?;
        v.push((*name, u64::from_ne_bytes(b[..8].try_into().expect("u64 counter"))));
    }
    Ok(v)
}

pub fn read_state(m: &impl MapCore) -> Result<State> {
    Ok(State::decode(&lookup(m, 0)?))
}

/// Every slot of a set-array map, in slot order (set by set, way by way).
pub fn read_sets<V>(m: &impl MapCore, slot_size: usize, decode: fn(&[u8]) -> Slot<V>) -> Result<Vec<Slot<V>>> {
    let mut slots = Vec::with_capacity(m.max_entries() as usize * WAYS);
    for set in 0..m.max_entries() {
        let b = lookup(m, set)?;
        slots.extend(b.chunks_exact(slot_size).take(WAYS).map(decode));
    }
    Ok(slots)
}

/// Counters of a deployment whose maps were pinned under `dir`.
pub fn pinned_counters(dir: &Path) -> Result<Vec<(&'static str, u64)>> {
    let m = MapHandle::from_pinned_path(dir.join(MAP_COUNTERS)).with_context(|| format!("open {}", dir.display()))?;
    read_counters(&m)
}

/// Why BPF cannot be used here, if it cannot: not root, or the kernel
/// refuses to load the program.
pub fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if euid != 0 {
        return Some(format!("not root (euid {euid}): loading BPF programs needs CAP_BPF and CAP_NET_ADMIN"));
    }
    match TxnXdp::load(Tables { cache_slots: WAYS, client_slots: WAYS }) {
        Ok(_) => None,
        Err(e) => Some(format!("the kernel refused the BPF program: {e:#}")),
    }
}
