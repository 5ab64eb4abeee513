//! Loading, configuring, test-running and reading the transaction switch
//! (`bpf/txn_switch.bpf.c`) with libbpf-rs.
//!
//! The object holds two XDP programs sharing the config map: the switch
//! ([`Program::TxnSwitch`]) and the bare bounce baseline
//! ([`Program::Bounce`]). Table capacities are set before load (the BPF
//! arrays are resized, the config carries the matching hash bits), so a test
//! can run the switch with tables small enough to evict.

use std::net::Ipv4Addr;
use std::os::fd::RawFd;
use std::path::Path;

use anyhow::{bail, Context, Result};
use libbpf_rs::{MapCore, MapHandle};

use innet_txn::switch::{CacheEntry, ClientEntry, Mode, CACHE_SLOTS_DEFAULT, CLIENT_SLOTS_DEFAULT};

use crate::layout::{self, Config, Slot, State, CACHE_SLOT_SIZE, CLIENT_SLOT_SIZE, COUNTER_NAMES, WAYS};
use crate::object::{lookup, BpfObject};

static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/txn_switch.bpf.o"));

/// Map names (the C side's `SEC(".maps")` variables).
pub const MAP_CONFIG: &str = "txn_config";
pub const MAP_STATE: &str = "txn_state";
pub const MAP_CACHE: &str = "txn_cache";
pub const MAP_CLIENTS: &str = "txn_clients";
pub const MAP_COUNTERS: &str = "txn_counters";
pub const MAP_ROUTES: &str = "txn_routes";
/// `--auth-key` ([`crate::auth`]): off unless written.
pub const MAP_AUTH: &str = "txn_auth";
/// Maps worth pinning for a running deployment (the scratch map is not).
pub const PINNED_MAPS: [&str; 6] = [MAP_CONFIG, MAP_STATE, MAP_CACHE, MAP_CLIENTS, MAP_COUNTERS, MAP_ROUTES];

pub use crate::object::{XDP_ABORTED, XDP_DROP, XDP_PASS, XDP_REDIRECT, XDP_TX};

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

/// Where Downstream replies to a destination prefix go (`struct
/// innet_txn_route`): a core switch's route to the clients behind an edge
/// switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    pub prefix: Ipv4Addr,
    pub prefix_len: u8,
    pub ifindex: u32,
    /// The switch's MAC on the egress device.
    pub port_mac: [u8; 6],
    /// The next hop's MAC.
    pub next_mac: [u8; 6],
}

impl Route {
    fn key(&self) -> Vec<u8> {
        let mut k = u32::from(self.prefix_len).to_ne_bytes().to_vec();
        k.extend_from_slice(&self.prefix.octets());
        assert_eq!(k.len(), crate::layout::consts::TXN_ROUTE_KEY_SIZE as usize, "struct innet_txn_route_key layout");
        k
    }

    fn value(&self) -> Vec<u8> {
        let mut v = self.ifindex.to_ne_bytes().to_vec();
        v.extend_from_slice(&self.port_mac);
        v.extend_from_slice(&self.next_mac);
        assert_eq!(v.len(), crate::layout::consts::TXN_ROUTE_SIZE as usize, "struct innet_txn_route layout");
        v
    }
}

/// A loaded transaction-switch object.
pub struct TxnXdp {
    obj: BpfObject,
    tables: Tables,
}

impl TxnXdp {
    /// Opens the embedded object, sizes the tables, loads it into the kernel.
    pub fn load(tables: Tables) -> Result<TxnXdp> {
        let (cache_bits, client_bits) = (set_bits(tables.cache_slots)?, set_bits(tables.client_slots)?);
        let obj = BpfObject::load(OBJECT, &[(MAP_CACHE, 1u32 << cache_bits), (MAP_CLIENTS, 1u32 << client_bits)])?;
        Ok(TxnXdp { obj, tables })
    }

    pub fn tables(&self) -> Tables {
        self.tables
    }

    fn map(&self, name: &str) -> Result<libbpf_rs::Map<'_>> {
        self.obj.map(name)
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
        self.obj.write(MAP_CONFIG, 0, &cfg.encode())
    }

    /// `--auth-key`: takes from the store port only frames whose payload
    /// ends in a MAC trailer that checks (and takes it off), seals what it
    /// sends to the store port, leaves what goes to the clients bare
    /// (`innet_core::auth`; `None`: off).
    pub fn set_auth(&self, keys: Option<&innet_core::auth::AuthKeys>) -> Result<()> {
        self.obj.write(MAP_AUTH, 0, &crate::auth::encode(keys))
    }

    /// Adds (or replaces) a Downstream route.
    pub fn add_route(&self, r: &Route) -> Result<()> {
        anyhow::ensure!(r.prefix_len <= 32, "route prefix length {} > 32", r.prefix_len);
        self.map(MAP_ROUTES)?
            .update(&r.key(), &r.value(), libbpf_rs::MapFlags::ANY)
            .with_context(|| format!("add route {}/{}", r.prefix, r.prefix_len))
    }

    /// Runs `frame` through `p` once with `BPF_PROG_TEST_RUN`: the XDP action
    /// and the frame as the program left it.
    pub fn test_run(&self, p: Program, frame: &[u8]) -> Result<(u32, Vec<u8>)> {
        self.obj.test_run(p.section_name(), frame)
    }

    /// [`TxnXdp::test_run`] with the frame received on `ingress_ifindex`.
    pub fn test_run_on(&self, p: Program, frame: &[u8], ingress_ifindex: u32) -> Result<(u32, Vec<u8>)> {
        self.obj.test_run_on(p.section_name(), frame, Some(ingress_ifindex))
    }

    /// [`crate::object::BpfObject::median_run_ns`] of `p` on `frame`
    /// (received on the loopback device).
    pub fn median_run_ns(&self, p: Program, frame: &[u8], runs: u32) -> Result<u64> {
        self.obj.median_run_ns(p.section_name(), frame, runs)
    }

    /// The program's file descriptor (valid while `self` lives).
    pub fn program_fd(&self, p: Program) -> Result<RawFd> {
        self.obj.program_fd(p.section_name())
    }

    /// Pins the maps of [`PINNED_MAPS`] under `dir` (on a bpffs).
    pub fn pin_maps(&mut self, dir: &Path) -> Result<()> {
        self.obj.pin_maps(dir, &PINNED_MAPS)
    }

    /// Pins program `p` at `path` (on a bpffs).
    pub fn pin_program(&mut self, p: Program, path: &Path) -> Result<()> {
        self.obj.pin_program(p.section_name(), path)
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

/// Counters by name, in `INNET_TXN_CTR_*` order.
pub fn read_counters(m: &impl MapCore) -> Result<Vec<(&'static str, u64)>> {
    let mut v = Vec::with_capacity(COUNTER_NAMES.len());
    for (i, name) in COUNTER_NAMES.iter().enumerate() {
        let b = lookup(m, i as u32)?;
        v.push((*name, u64::from_ne_bytes(b[..8].try_into().expect("u64 counter"))));
    }
    Ok(v)
}

fn read_state(m: &impl MapCore) -> Result<State> {
    Ok(State::decode(&lookup(m, 0)?))
}

/// Every slot of a set-array map, in slot order (set by set, way by way).
fn read_sets<V>(m: &impl MapCore, slot_size: usize, decode: fn(&[u8]) -> Slot<V>) -> Result<Vec<Slot<V>>> {
    let mut slots = Vec::with_capacity(m.max_entries() as usize * WAYS);
    for set in 0..m.max_entries() {
        let b = lookup(m, set)?;
        slots.extend(b.chunks_exact(slot_size).take(WAYS).map(decode));
    }
    Ok(slots)
}

fn pinned(dir: &Path, map: &str) -> Result<MapHandle> {
    let path = dir.join(map);
    MapHandle::from_pinned_path(&path).with_context(|| format!("open {}", path.display()))
}

/// Counters of a deployment whose maps were pinned under `dir`.
pub fn pinned_counters(dir: &Path) -> Result<Vec<(&'static str, u64)>> {
    read_counters(&pinned(dir, MAP_COUNTERS)?)
}

/// A switch's registers and both tables, every slot in slot order.
pub type TablesDump = (State, Vec<Slot<CacheEntry>>, Vec<Slot<ClientEntry>>);

/// Scalar registers and both tables of a deployment pinned under `dir`.
pub fn pinned_tables(dir: &Path) -> Result<TablesDump> {
    Ok((
        read_state(&pinned(dir, MAP_STATE)?)?,
        read_sets(&pinned(dir, MAP_CACHE)?, CACHE_SLOT_SIZE, layout::decode_cache_slot)?,
        read_sets(&pinned(dir, MAP_CLIENTS)?, CLIENT_SLOT_SIZE, layout::decode_client_slot)?,
    ))
}

/// Why BPF cannot be used here, if it cannot: not root, or the kernel
/// refuses to load the program.
pub fn unavailable() -> Option<String> {
    let euid = crate::object::euid();
    if euid != 0 {
        return Some(format!("not root (euid {euid}): loading BPF programs needs CAP_BPF and CAP_NET_ADMIN"));
    }
    match TxnXdp::load(Tables { cache_slots: WAYS, client_slots: WAYS }) {
        Ok(_) => None,
        Err(e) => Some(format!("the kernel refused the BPF program: {e:#}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::consts as c;

    #[test]
    fn the_object_has_the_maps_named_here_sized_by_the_header() {
        let n = |x: i64| Some(x as u32);
        crate::object::assert_maps(
            OBJECT,
            &[
                (MAP_CONFIG, Some(1), n(c::TXN_CONFIG_SIZE)),
                (MAP_STATE, Some(1), n(c::TXN_STATE_SIZE)),
                (MAP_CACHE, n(c::CACHE_SLOTS_DEFAULT / c::WAYS), n(c::WAYS * c::CACHE_SLOT_SIZE)),
                (MAP_CLIENTS, n(c::CLIENT_SLOTS_DEFAULT / c::WAYS), n(c::WAYS * c::CLIENT_SLOT_SIZE)),
                (MAP_COUNTERS, n(c::TXN_CTR_COUNT), Some(8)),
                (MAP_ROUTES, n(c::TXN_ROUTES_MAX), n(c::TXN_ROUTE_SIZE)),
                (MAP_AUTH, Some(1), n(c::AUTH_SIZE)),
                ("txn_scratch", Some(1), None),
            ],
        );
    }
}
