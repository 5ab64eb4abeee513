//! Loading, configuring, test-running and reading the chain node programs:
//! the NetCRAQ node (`bpf/netcraq.bpf.c`, [`CraqXdp`]) and the NetChain node
//! (`bpf/netchain.bpf.c`, [`NcXdp`]).
//!
//! The control plane's writes go to maps exactly as `innet_chain`'s
//! `CraqNode` / `NcNode` setters change their fields: role, writes paused,
//! ports, the ACK group, NetChain's neighbours and key table. Where a setter
//! also changes state (a NetCRAQ node promoted to tail commits its newest
//! versions; NetChain installs keys by probing) the loader does it on the
//! maps the same way, so the differential test can drive both with the same
//! calls. Capacities default to the reference's constants and are a
//! load-time choice (maps are resized before load).

use std::net::Ipv4Addr;
use std::os::fd::RawFd;
use std::path::Path;

use anyhow::{bail, Context, Result};
use libbpf_rs::{MapCore, MapFlags, MapHandle};

use innet_chain::netchain::{Hop, NcCounters, Slot, KEYS_DEFAULT, KEY_PROBES, NEIGHBOURS_MAX};
use innet_chain::netcraq::{CraqCounters, OBJECTS_DEFAULT, VERSIONS_DEFAULT, VERSIONS_MAX};
use innet_chain::ports::{GROUP_ACK, PORT_NEXT, PORT_TAIL};
use innet_chain::{Protocol, Role};
use innet_core::{Counters, Verdict};
use innet_wire::netchain::{self as ncw, Addr, ChainKey};
use innet_wire::netcraq::{self as craqw, DecodeError as CraqError, KvOp};
use innet_wire::txn::{Value, VALUE_LEN};

use crate::layout::consts as c;
use crate::layout::same;
use crate::object::{lookup, BpfObject};
pub use crate::paxos::Multicast;

pub use crate::object::{XDP_DROP, XDP_PASS, XDP_REDIRECT, XDP_TX};

static CRAQ_OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/netcraq.bpf.o"));
static NC_OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/netchain.bpf.o"));

same!(c::CHAIN_PORT_NEXT, PORT_NEXT);
same!(c::CHAIN_PORT_TAIL, PORT_TAIL);
same!(c::CHAIN_GROUP_ACK, GROUP_ACK);
same!(c::CRAQ_LEN, craqw::LEN);
same!(c::CRAQ_VALUE_LEN, VALUE_LEN);
same!(c::CRAQ_DEFAULT_PORT, craqw::DEFAULT_PORT);
same!(c::CRAQ_OFF_KV_OP, craqw::offset::KV_OP);
same!(c::CRAQ_OFF_KEY, craqw::offset::KEY);
same!(c::CRAQ_OFF_VALUE, craqw::offset::VALUE);
same!(c::CRAQ_OP_READ, KvOp::Read);
same!(c::CRAQ_OP_READ_REPLY, KvOp::ReadReply);
same!(c::CRAQ_OP_WRITE, KvOp::Write);
same!(c::CRAQ_OP_WRITE_REPLY, KvOp::WriteReply);
same!(c::CRAQ_OP_ACK, KvOp::Ack);
same!(c::CRAQ_OP_WRITE_REFUSED, KvOp::WriteRefused);
same!(c::CRAQ_ERR_TRUNCATED, CraqError::Truncated);
same!(c::CRAQ_ERR_UNKNOWN_OP, CraqError::UnknownOp);
same!(c::CRAQ_ERR_COUNT, CraqError::ALL.len());
same!(c::CRAQ_OBJECTS_DEFAULT, OBJECTS_DEFAULT);
same!(c::CRAQ_VERSIONS_DEFAULT, VERSIONS_DEFAULT);
same!(c::CRAQ_VERSIONS_MAX, VERSIONS_MAX);
same!(c::NC_MAX_CHAIN_NODES, ncw::MAX_CHAIN_NODES);
same!(c::NC_ADDR_LEN, ncw::ADDR_LEN);
same!(c::NC_KEY_LEN, ncw::KEY_LEN);
same!(c::NC_VALUE_LEN, VALUE_LEN);
same!(c::NC_FIXED_LEN, ncw::FIXED_LEN);
same!(c::NC_MAX_LEN, ncw::MAX_LEN);
same!(c::NC_DEFAULT_PORT, ncw::DEFAULT_PORT);
same!(c::NC_REPLY_PORT, ncw::REPLY_PORT);
same!(c::NC_OFF_OP, ncw::offset::OP);
same!(c::NC_OFF_SC, ncw::offset::SC);
same!(c::NC_OFF_SEQ, ncw::offset::SEQ);
same!(c::NC_OFF_KEY, ncw::offset::KEY);
same!(c::NC_OFF_VALUE, ncw::offset::VALUE);
same!(c::NC_OFF_VGROUP, ncw::offset::VGROUP);
same!(c::NC_OP_READ_REQ, ncw::NcOp::ReadReq);
same!(c::NC_OP_READ_REPLY, ncw::NcOp::ReadReply);
same!(c::NC_OP_WRITE_REQ, ncw::NcOp::WriteReq);
same!(c::NC_OP_WRITE_REPLY, ncw::NcOp::WriteReply);
same!(c::NC_ERR_TRUNCATED, ncw::DecodeError::Truncated);
same!(c::NC_ERR_CHAIN_TOO_LONG, ncw::DecodeError::ChainTooLong);
same!(c::NC_ERR_UNKNOWN_OP, ncw::DecodeError::UnknownOp);
same!(c::NC_ERR_CHAIN_COUNT_MISMATCH, ncw::DecodeError::ChainCountMismatch);
same!(c::NC_ERR_COUNT, ncw::DecodeError::ALL.len());
same!(c::NC_KEYS_DEFAULT, KEYS_DEFAULT);
same!(c::NC_KEY_PROBES, KEY_PROBES);
same!(c::NC_NEIGHBOURS_MAX, NEIGHBOURS_MAX);
same!(c::CHAIN_VERDICT_DROP, Verdict::Drop.code());
same!(c::CHAIN_VERDICT_REFLECT, Verdict::Reflect.code());
same!(c::CHAIN_VERDICT_PORT, Verdict::Port { port: 0 }.code());
same!(c::CHAIN_VERDICT_MULTICAST, Verdict::Multicast { group: 0 }.code());
same!(c::CHAIN_VERDICT_ORIGIN, Verdict::Origin.code());
const _: () = assert!(c::CRAQ_CTR_DROPPED_MALFORMED + c::CRAQ_ERR_COUNT == c::CRAQ_CTR_NODE_COUNT);
const _: () = assert!(c::NC_CTR_DROPPED_MALFORMED + c::NC_ERR_COUNT == c::NC_CTR_NODE_COUNT);

/// Ports a node can have (`chain_ports` entries).
pub const PORTS_MAX: usize = c::CHAIN_PORTS_MAX as usize;
/// Members of the ACK group (`chain_group` entries).
pub const GROUP_MAX: usize = c::CHAIN_GROUP_MAX as usize;
/// Counters only the XDP programs have, after the reference's.
pub const CRAQ_XDP_COUNTERS: [&str; 4] = ["xdp_passed_other", "xdp_no_port", "multicast_copies", "auth_refused"];
pub const NC_XDP_COUNTERS: [&str; 3] = ["xdp_passed_other", "xdp_no_port", "auth_refused"];
const _: () = assert!(c::CRAQ_CTR_NODE_COUNT as usize + CRAQ_XDP_COUNTERS.len() == c::CRAQ_CTR_COUNT as usize);
const _: () = assert!(c::NC_CTR_NODE_COUNT as usize + NC_XDP_COUNTERS.len() == c::NC_CTR_COUNT as usize);

pub const CRAQ_PROGRAM: &str = "xdp_netcraq";
pub const CRAQ_MULTICAST_PROGRAM: &str = "tc_chain_multicast";
/// The egress program of every `craq_group_ports` entry (devmap multicast).
pub const CRAQ_EGRESS_PROGRAM: &str = "xdp_craq_egress";
pub const NC_PROGRAM: &str = "xdp_netchain";

/// `INNET_CHAIN_ROLE_*`.
fn role_code(role: Option<Role>) -> u32 {
    (match role {
        None => c::CHAIN_ROLE_NONE,
        Some(Role::Head) => c::CHAIN_ROLE_HEAD,
        Some(Role::Replica) => c::CHAIN_ROLE_REPLICA,
        Some(Role::Tail) => c::CHAIN_ROLE_TAIL,
        Some(Role::HeadTail) => c::CHAIN_ROLE_HEAD_TAIL,
    }) as u32
}

/// The neighbour behind one of a node's ports (`struct innet_chain_port`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainPort {
    pub ifindex: u32,
    /// The neighbour's address: a Port verdict sends the packet there.
    pub ip: Ipv4Addr,
    /// This node's MAC on the link.
    pub port_mac: [u8; 6],
    pub peer_mac: [u8; 6],
}

impl ChainPort {
    fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(c::CHAIN_PORT_SIZE as usize);
        b.extend_from_slice(&self.ifindex.to_ne_bytes());
        b.extend_from_slice(&self.ip.octets());
        b.extend_from_slice(&self.port_mac);
        b.extend_from_slice(&self.peer_mac);
        assert_eq!(b.len(), c::CHAIN_PORT_SIZE as usize, "struct innet_chain_port layout");
        b
    }
}

/// A member of the tail's ACK group (`struct innet_chain_member`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Member {
    Port(u16),
    /// The writer (the ACK is its write reply).
    Origin,
}

/// What every node is told about itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeAddr {
    pub udp_port: u16,
    /// Source address of the node's Origin replies.
    pub node_ip: Ipv4Addr,
    /// The port towards the clients.
    pub origin_port: u16,
    /// NetChain: replies go to the client's address at this UDP port (the
    /// reference's [`ncw::REPLY_PORT`]); 0: to the request's source port.
    pub reply_port: u16,
}

/// What both programs' loaders share.
struct Node {
    obj: BpfObject,
    addr: NodeAddr,
    role: Option<Role>,
    writes_paused: bool,
    /// The chain indexes of the predecessor and the tail.
    prev: Option<u16>,
    tail: Option<u16>,
}

/// `INNET_CHAIN_PEER_NONE` for `None`.
fn peer_code(peer: Option<u16>) -> u32 {
    peer.map_or(c::CHAIN_PEER_NONE as u32, u32::from)
}

impl Node {
    fn new(obj: BpfObject, addr: NodeAddr) -> Node {
        Node { obj, addr, role: None, writes_paused: false, prev: None, tail: None }
    }

    /// Both configs start with ten words: role, writes_paused, three of the
    /// program's own (`middle`), node_ip, origin_port, prev, tail, and one
    /// more of the program's own (`last`: NetCRAQ's multicast, NetChain's
    /// reply port); then the program's own `tail_words`.
    fn write_config(&self, map: &str, size: usize, middle: [u32; 3], last: u32, tail_words: &[u32]) -> Result<()> {
        let words = [role_code(self.role), self.writes_paused as u32, middle[0], middle[1], middle[2]];
        let mut b: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        b.extend_from_slice(&self.addr.node_ip.octets());
        b.extend_from_slice(&(self.addr.origin_port as u32).to_ne_bytes());
        b.extend_from_slice(&peer_code(self.prev).to_ne_bytes());
        b.extend_from_slice(&peer_code(self.tail).to_ne_bytes());
        b.extend_from_slice(&last.to_ne_bytes());
        b.extend(tail_words.iter().flat_map(|w| w.to_ne_bytes()));
        assert_eq!(b.len(), size, "{map}: config struct layout");
        self.obj.write(map, 0, &b)
    }

    /// Frames arriving on `ifindex` from Ethernet source `mac` are from
    /// chain node `index` (`chain_peers`); `None` forgets the pair.
    fn set_peer(&self, ifindex: u32, mac: [u8; 6], index: Option<u16>) -> Result<()> {
        let mut k = Vec::with_capacity(c::CHAIN_PEER_KEY_SIZE as usize);
        k.extend_from_slice(&ifindex.to_ne_bytes());
        k.extend_from_slice(&mac);
        k.extend_from_slice(&[0; 2]);
        let m = self.obj.map(MAP_PEERS)?;
        match index {
            Some(i) => m.update(&k, &u32::from(i).to_ne_bytes(), MapFlags::ANY).context("chain_peers update")?,
            None => {
                let _ = m.delete(&k);
            }
        }
        Ok(())
    }

    /// `--auth-key` ([`crate::auth`]): frames from chain nodes are taken
    /// only with a MAC trailer that checks under `keys`, and what goes to
    /// chain nodes is sealed (`None`: off).
    fn set_auth(&self, keys: Option<&innet_core::auth::AuthKeys>) -> Result<()> {
        self.obj.write(MAP_AUTH, 0, &crate::auth::encode(keys))
    }

    fn set_port(&self, port: u16, p: &ChainPort) -> Result<()> {
        if port as usize >= PORTS_MAX {
            bail!("port {port} beyond the {PORTS_MAX} chain_ports entries");
        }
        self.obj.write(MAP_PORTS, port as u32, &p.encode())
    }

    fn counters(&self, names: Vec<&'static str>) -> Result<Vec<(&'static str, u64)>> {
        read_counters(&self.obj.map(MAP_COUNTERS)?, names)
    }

    fn read_all(&self, map: &str) -> Result<Vec<Vec<u8>>> {
        let m = self.obj.map(map)?;
        (0..m.max_entries()).map(|i| lookup(&m, i)).collect()
    }

    /// Every element of array `map` in index order, with batched lookups
    /// (`BPF_MAP_LOOKUP_BATCH`: a few system calls instead of one per
    /// element, for the control plane's heartbeats and copies).
    fn read_batch(&self, map: &str) -> Result<Vec<Vec<u8>>> {
        let m = self.obj.map(map)?;
        let n = m.max_entries();
        let mut out = vec![vec![]; n as usize];
        let mut got = 0;
        for (k, v) in m.lookup_batch(n, MapFlags::ANY, MapFlags::ANY).with_context(|| format!("batch read {map}"))? {
            let i = u32::from_ne_bytes(k[..4].try_into().expect("array key")) as usize;
            if let Some(slot) = out.get_mut(i) {
                *slot = v;
                got += 1;
            }
        }
        if got != n as usize {
            bail!("batch read of {map}: {got} of {n} elements");
        }
        Ok(out)
    }

    /// The role word of the config map (what the program runs with).
    fn configured(&self, map: &str) -> Result<bool> {
        let b = lookup(&self.obj.map(map)?, 0)?;
        Ok(u32::from_ne_bytes(b[..4].try_into().expect("role word")) != role_code(None))
    }

    /// Counter `name` of `names` (the program's counter layout).
    fn counter(&self, names: &[&str], name: &str) -> Result<u64> {
        let i = names.iter().position(|n| *n == name).with_context(|| format!("no counter {name}"))?;
        let b = lookup(&self.obj.map(MAP_COUNTERS)?, i as u32)?;
        Ok(u64::from_ne_bytes(b[..8].try_into().expect("u64")))
    }
}

/// Counter `i` of `m` named `names[i]`.
fn read_counters(m: &impl MapCore, names: Vec<&'static str>) -> Result<Vec<(&'static str, u64)>> {
    names
        .into_iter()
        .enumerate()
        .map(|(i, n)| Ok((n, u64::from_ne_bytes(lookup(m, i as u32)?[..8].try_into().expect("u64")))))
        .collect()
}

/// Map names (the C side's `SEC(".maps")` variables). Both programs have
/// `chain_ports` and `chain_counters` (`innet_chain_node.h`).
pub const MAP_PORTS: &str = "chain_ports";
pub const MAP_COUNTERS: &str = "chain_counters";
/// `chain_peers` (`innet_chain_node.h`): senders by interface and MAC.
pub const MAP_PEERS: &str = "chain_peers";
/// `--auth-key` ([`crate::auth`]): off unless written.
pub const MAP_AUTH: &str = "chain_auth";
/// The payload being opened or sealed (per CPU).
pub const MAP_AUTH_SCRATCH: &str = "chain_auth_scratch";
pub const MAP_GROUP: &str = "chain_group";
pub const CRAQ_MAP_CONFIG: &str = "craq_config";
pub const CRAQ_MAP_STORE: &str = "craq_store";
pub const CRAQ_MAP_INDEX: &str = "craq_index";
/// The ACK group's devices (devmap) and the member on each.
pub const CRAQ_MAP_GROUP_PORTS: &str = "craq_group_ports";
pub const CRAQ_MAP_MEMBER_AT: &str = "craq_member_at";
pub const NC_MAP_CONFIG: &str = "nc_config";
pub const NC_MAP_NEIGHBOURS: &str = "nc_neighbours";
pub const NC_MAP_KEYS: &str = "nc_keys";
pub const NC_MAP_REGISTERS: &str = "nc_registers";
/// Maps worth pinning for a running node (not the scratch map).
pub const CRAQ_PINNED_MAPS: [&str; 7] =
    [CRAQ_MAP_CONFIG, CRAQ_MAP_STORE, CRAQ_MAP_INDEX, MAP_PORTS, MAP_GROUP, MAP_COUNTERS, MAP_PEERS];
pub const NC_PINNED_MAPS: [&str; 7] =
    [NC_MAP_CONFIG, NC_MAP_NEIGHBOURS, NC_MAP_KEYS, NC_MAP_REGISTERS, MAP_PORTS, MAP_COUNTERS, MAP_PEERS];

fn craq_counter_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = CraqCounters::default().counters().into_iter().map(|(n, _)| n).collect();
    names.extend(CRAQ_XDP_COUNTERS);
    names
}

fn nc_counter_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = NcCounters::default().counters().into_iter().map(|(n, _)| n).collect();
    names.extend(NC_XDP_COUNTERS);
    names
}

/// Counters of a node of `protocol` whose maps were pinned under `dir`.
pub fn pinned_counters(dir: &Path, protocol: Protocol) -> Result<Vec<(&'static str, u64)>> {
    let path = dir.join(MAP_COUNTERS);
    let m = MapHandle::from_pinned_path(&path).with_context(|| format!("open {}", path.display()))?;
    read_counters(&m, if protocol == Protocol::NetCraq { craq_counter_names() } else { nc_counter_names() })
}

/// A loaded NetCRAQ node.
pub struct CraqXdp {
    node: Node,
    objects: usize,
    versions: usize,
    multicast: Multicast,
}

/// Writes the devmap side of a NetCRAQ tail's ACK group
/// ([`CraqXdp::group_writer`]): which device each member leaves by. A
/// devmap entry names its device by ifindex in the writer's network
/// namespace, so [`GroupWriter::write`] runs on a thread in the node's
/// namespace ([`crate::testbed::in_netns`]).
pub struct GroupWriter {
    egress: RawFd,
    ports: RawFd,
    member_at: RawFd,
}

impl GroupWriter {
    /// Makes `members` (each with the device it leaves by) the group's
    /// devices: their entries go in (or are replaced) first, then the
    /// devices no member uses any more come out, so a broadcast meanwhile
    /// reaches every member of the old group or of the new one.
    pub fn write(&self, members: &[(u32, Member)]) -> Result<()> {
        if members.len() > GROUP_MAX {
            bail!("{} members, at most {GROUP_MAX}", members.len());
        }
        let mut seen = std::collections::HashSet::new();
        for (ifindex, m) in members {
            if !seen.insert(*ifindex) {
                bail!(
                    "two members leave by device {ifindex} (ifindex): a devmap broadcast makes one copy per \
                     device; use the tc multicast for several members behind one device"
                );
            }
            // struct bpf_devmap_val: ifindex, then the egress program's fd.
            let mut v = ifindex.to_ne_bytes().to_vec();
            v.extend_from_slice(&self.egress.to_ne_bytes());
            let key = ifindex.to_ne_bytes();
            crate::object::update_raw(self.ports, &key, &v).context("write craq_group_ports")?;
            crate::object::update_raw(self.member_at, &key, &member_bytes(Some(m))).context("write craq_member_at")?;
        }
        for fd in [self.ports, self.member_at] {
            for k in crate::object::u32_keys(fd)? {
                if !seen.contains(&k) {
                    crate::object::delete_raw(fd, &k.to_ne_bytes())?;
                }
            }
        }
        Ok(())
    }
}

/// `struct innet_chain_member` for `m` (none: an empty slot).
fn member_bytes(m: Option<&Member>) -> Vec<u8> {
    let (kind, port) = match m {
        None => (c::CHAIN_MEMBER_NONE as u32, 0),
        Some(Member::Port(p)) => (c::CHAIN_MEMBER_PORT as u32, *p as u32),
        Some(Member::Origin) => (c::CHAIN_MEMBER_ORIGIN as u32, 0),
    };
    let b: Vec<u8> = [kind, port].iter().flat_map(|w| w.to_ne_bytes()).collect();
    assert_eq!(b.len(), c::CHAIN_MEMBER_SIZE as usize, "struct innet_chain_member layout");
    b
}

impl CraqXdp {
    /// Loads the object with room for `objects` objects of `versions` cells.
    pub fn load(objects: usize, versions: usize, addr: NodeAddr) -> Result<CraqXdp> {
        if objects == 0 || !(2..=VERSIONS_MAX).contains(&versions) {
            bail!("objects > 0 and versions in 2..={VERSIONS_MAX}");
        }
        let obj = BpfObject::load(
            CRAQ_OBJECT,
            &[(CRAQ_MAP_STORE, (objects * versions) as u32), (CRAQ_MAP_INDEX, objects as u32)],
        )?;
        let x = CraqXdp { node: Node::new(obj, addr), objects, versions, multicast: Multicast::Tc };
        x.write_config()?;
        Ok(x)
    }

    /// How the tail's ACK reaches its group: tc clones of `chain_group`
    /// (the default), or a devmap broadcast to the devices
    /// [`CraqXdp::group_writer`] wrote.
    pub fn set_multicast(&mut self, m: Multicast) -> Result<()> {
        self.multicast = m;
        self.write_config()
    }

    /// The writer of the group's devices (devmap multicast).
    pub fn group_writer(&self) -> Result<GroupWriter> {
        Ok(GroupWriter {
            egress: self.node.obj.program_fd(CRAQ_EGRESS_PROGRAM)?,
            ports: self.node.obj.map_fd(CRAQ_MAP_GROUP_PORTS)?,
            member_at: self.node.obj.map_fd(CRAQ_MAP_MEMBER_AT)?,
        })
    }

    fn write_config(&self) -> Result<()> {
        let middle = [self.objects as u32, self.versions as u32, self.node.addr.udp_port as u32];
        let mcast = match self.multicast {
            Multicast::Tc => c::CRAQ_MCAST_TC,
            Multicast::Devmap => c::CRAQ_MCAST_DEVMAP,
        };
        self.node.write_config(CRAQ_MAP_CONFIG, c::CRAQ_CONFIG_SIZE as usize, middle, mcast as u32, &[])
    }

    /// `CraqNode::set_role`: a node that becomes the tail makes each
    /// object's newest version its clean one.
    pub fn set_role(&mut self, role: Option<Role>) -> Result<()> {
        let becomes_tail = role.is_some_and(Role::is_tail) && !self.node.role.is_some_and(Role::is_tail);
        if becomes_tail {
            let index = self.index()?;
            for (k, dirty) in index.iter().enumerate().filter(|(_, d)| **d > 0) {
                let latest = lookup(&self.node.obj.map(CRAQ_MAP_STORE)?, (k * self.versions) as u32 + *dirty as u32)?;
                self.node.obj.write(CRAQ_MAP_STORE, (k * self.versions) as u32, &latest)?;
                self.node.obj.write(CRAQ_MAP_INDEX, k as u32, &[0])?;
            }
        }
        self.node.role = role;
        self.write_config()
    }

    pub fn set_writes_paused(&mut self, paused: bool) -> Result<()> {
        self.node.writes_paused = paused;
        self.write_config()
    }

    /// `CraqNode::set_peers`: the predecessor (whose writes the node takes)
    /// and the tail (whose ACKs it takes), by chain index.
    pub fn set_peers(&mut self, prev: Option<u16>, tail: Option<u16>) -> Result<()> {
        (self.node.prev, self.node.tail) = (prev, tail);
        self.write_config()
    }

    /// Frames on `ifindex` from `mac` are from chain node `index`.
    pub fn set_peer(&self, ifindex: u32, mac: [u8; 6], index: Option<u16>) -> Result<()> {
        self.node.set_peer(ifindex, mac, index)
    }

    pub fn set_port(&self, port: u16, p: &ChainPort) -> Result<()> {
        self.node.set_port(port, p)
    }

    /// The ACK group's members (the rest of `chain_group` is cleared).
    pub fn set_group(&self, members: &[Member]) -> Result<()> {
        if members.len() > GROUP_MAX {
            bail!("{} members, at most {GROUP_MAX}", members.len());
        }
        for i in 0..GROUP_MAX {
            self.node.obj.write(MAP_GROUP, i as u32, &member_bytes(members.get(i)))?;
        }
        Ok(())
    }

    /// `CraqNode::load`: `values` become the clean versions, nothing dirty.
    pub fn load_values(&self, values: &[Value]) -> Result<()> {
        if values.len() != self.objects {
            bail!("{} values for {} objects", values.len(), self.objects);
        }
        for (k, v) in values.iter().enumerate() {
            self.node.obj.write(CRAQ_MAP_STORE, (k * self.versions) as u32, &v.0)?;
            self.node.obj.write(CRAQ_MAP_INDEX, k as u32, &[0])?;
        }
        Ok(())
    }

    /// Every cell of `craq_store`, object by object.
    pub fn store(&self) -> Result<Vec<Value>> {
        Ok(self
            .node
            .read_all(CRAQ_MAP_STORE)?
            .iter()
            .map(|b| Value(b[..VALUE_LEN].try_into().expect("cell")))
            .collect())
    }

    /// Dirty versions per object (`craq_index`).
    pub fn index(&self) -> Result<Vec<u8>> {
        Ok(self.node.read_batch(CRAQ_MAP_INDEX)?.iter().map(|b| b[0]).collect())
    }

    /// `CraqNode::snapshot`: every object's clean version (cell 0).
    pub fn snapshot(&self) -> Result<Vec<Value>> {
        let cells = self.node.read_batch(CRAQ_MAP_STORE)?;
        Ok(cells.iter().step_by(self.versions).map(|b| Value(b[..VALUE_LEN].try_into().expect("cell"))).collect())
    }

    /// `CraqNode::full_objects`: objects whose version cells are all in use.
    pub fn full_objects(&self) -> Result<usize> {
        Ok(self.index()?.iter().filter(|i| **i as usize + 1 >= self.versions).count())
    }

    /// Whether the program holds a role (a fresh or restarted node does not).
    pub fn configured(&self) -> Result<bool> {
        self.node.configured(CRAQ_MAP_CONFIG)
    }

    /// One counter by name (`CraqCounters`' names, then [`CRAQ_XDP_COUNTERS`]).
    pub fn counter(&self, name: &str) -> Result<u64> {
        self.node.counter(&craq_counter_names(), name)
    }

    /// Counters by name: `CraqCounters`' then [`CRAQ_XDP_COUNTERS`].
    pub fn counters(&self) -> Result<Vec<(&'static str, u64)>> {
        self.node.counters(craq_counter_names())
    }

    /// Pins [`CRAQ_PINNED_MAPS`] under `dir` (on a bpffs).
    pub fn pin_maps(&mut self, dir: &Path) -> Result<()> {
        self.node.obj.pin_maps(dir, &CRAQ_PINNED_MAPS)
    }

    pub fn test_run(&self, frame: &[u8]) -> Result<(u32, Vec<u8>)> {
        self.node.obj.test_run(CRAQ_PROGRAM, frame)
    }

    /// [`BpfObject::median_run_ns`] of the node's XDP program on `frame`.
    pub fn median_run_ns(&self, frame: &[u8], runs: u32) -> Result<u64> {
        self.node.obj.median_run_ns(CRAQ_PROGRAM, frame, runs)
    }

    /// `--auth-key`: see [`Node::set_auth`].
    pub fn set_auth(&self, keys: Option<&innet_core::auth::AuthKeys>) -> Result<()> {
        self.node.set_auth(keys)
    }

    pub fn program_fd(&self, program: &str) -> Result<RawFd> {
        self.node.obj.program_fd(program)
    }
}

/// FNV-1a: `innet_chain::netchain`'s key hash (the BPF program's too).
pub fn key_hash(key: &ChainKey) -> u32 {
    key.iter().fold(0x811c_9dc5_u32, |h, b| (h ^ *b as u32).wrapping_mul(0x0100_0193))
}

/// A loaded NetChain node.
pub struct NcXdp {
    node: Node,
    chain_addr: Addr,
    keys: usize,
    /// `NcNode.successors`, zero-padded.
    successors: [Addr; ncw::MAX_CHAIN_NODES],
}

impl NcXdp {
    /// Loads the object for the node at chain address `chain_addr` with room
    /// for `keys` keys.
    pub fn load(chain_addr: Addr, keys: usize, addr: NodeAddr) -> Result<NcXdp> {
        if chain_addr == 0 || keys == 0 {
            bail!("a non-zero address and key capacity");
        }
        let obj = BpfObject::load(NC_OBJECT, &[(NC_MAP_KEYS, keys as u32), (NC_MAP_REGISTERS, keys as u32)])?;
        let x = NcXdp { node: Node::new(obj, addr), chain_addr, keys, successors: [0; ncw::MAX_CHAIN_NODES] };
        x.write_config()?;
        Ok(x)
    }

    fn write_config(&self) -> Result<()> {
        let middle = [self.keys as u32, self.node.addr.udp_port as u32, self.chain_addr];
        self.node.write_config(
            NC_MAP_CONFIG,
            c::NC_CONFIG_SIZE as usize,
            middle,
            self.node.addr.reply_port as u32,
            &self.successors,
        )
    }

    pub fn set_role(&mut self, role: Option<Role>) -> Result<()> {
        self.node.role = role;
        self.write_config()
    }

    pub fn set_writes_paused(&mut self, paused: bool) -> Result<()> {
        self.node.writes_paused = paused;
        self.write_config()
    }

    /// `NcNode::set_successors`: the members after this node, in chain
    /// order, the only stack a write may carry on from here.
    pub fn set_successors(&mut self, successors: &[Addr]) -> Result<()> {
        if successors.len() >= ncw::MAX_CHAIN_NODES || successors.contains(&0) {
            bail!("{successors:?}: at most {} non-zero successor addresses", ncw::MAX_CHAIN_NODES - 1);
        }
        self.successors = [0; ncw::MAX_CHAIN_NODES];
        self.successors[..successors.len()].copy_from_slice(successors);
        self.write_config()
    }

    /// `NcNode::set_prev`: the predecessor, whose writes the node takes.
    pub fn set_prev(&mut self, prev: Option<u16>) -> Result<()> {
        self.node.prev = prev;
        self.write_config()
    }

    /// Frames on `ifindex` from `mac` are from chain node `index`.
    pub fn set_peer(&self, ifindex: u32, mac: [u8; 6], index: Option<u16>) -> Result<()> {
        self.node.set_peer(ifindex, mac, index)
    }

    pub fn set_port(&self, port: u16, p: &ChainPort) -> Result<()> {
        self.node.set_port(port, p)
    }

    /// `NcNode::set_neighbour`: packets whose next address is `addr` go `hop`.
    pub fn set_neighbour(&self, addr: Addr, hop: Hop) -> Result<()> {
        let (kind, port) = match hop {
            Hop::Skip => (c::NC_HOP_SKIP as u16, 0),
            Hop::Port(p) if (p as usize) < PORTS_MAX => (c::NC_HOP_PORT as u16, p),
            Hop::Port(p) => bail!("port {p} beyond the {PORTS_MAX} chain_ports entries"),
        };
        let mut v = kind.to_ne_bytes().to_vec();
        v.extend_from_slice(&port.to_ne_bytes());
        assert_eq!(v.len(), c::NC_HOP_SIZE as usize, "struct innet_nc_hop layout");
        self.node
            .obj
            .map(NC_MAP_NEIGHBOURS)?
            .update(&addr.to_ne_bytes(), &v, MapFlags::ANY)
            .with_context(|| format!("neighbour {addr} (at most {NEIGHBOURS_MAX})"))
    }

    fn key_slot(&self, i: usize) -> Result<Option<ChainKey>> {
        let b = lookup(&self.node.obj.map(NC_MAP_KEYS)?, i as u32)?;
        let valid = u32::from_ne_bytes(b[..4].try_into().expect("u32")) != 0;
        Ok(valid.then(|| b[4..4 + ncw::KEY_LEN].try_into().expect("key")))
    }

    /// `NcNode::install_key`: the register index of `key`, or `None` when
    /// its probe window is full.
    pub fn install_key(&self, key: ChainKey) -> Result<Option<usize>> {
        let start = key_hash(&key) as usize % self.keys;
        for probe in 0..KEY_PROBES.min(self.keys) {
            let i = (start + probe) % self.keys;
            match self.key_slot(i)? {
                Some(k) if k == key => return Ok(Some(i)),
                Some(_) => {}
                None => {
                    let mut b = 1u32.to_ne_bytes().to_vec();
                    b.extend_from_slice(&key);
                    assert_eq!(b.len(), c::NC_KEY_SLOT_SIZE as usize, "struct innet_nc_key_slot layout");
                    self.node.obj.write(NC_MAP_KEYS, i as u32, &b)?;
                    return Ok(Some(i));
                }
            }
        }
        Ok(None)
    }

    /// `NcNode::load` (recovery): installs each key and sets its register.
    pub fn load_slots(&self, entries: &[(ChainKey, Slot)]) -> Result<()> {
        for (key, slot) in entries {
            let i = self.install_key(*key)?.context("the key table has no room for the snapshot")?;
            let mut b = slot.value.0.to_vec();
            b.extend_from_slice(&slot.seq.to_ne_bytes());
            b.extend_from_slice(&[0; 2]);
            assert_eq!(b.len(), c::NC_REGISTER_SIZE as usize, "struct innet_nc_register layout");
            self.node.obj.write(NC_MAP_REGISTERS, i as u32, &b)?;
        }
        Ok(())
    }

    /// Whether the program holds a role (a fresh or restarted node does not).
    pub fn configured(&self) -> Result<bool> {
        self.node.configured(NC_MAP_CONFIG)
    }

    /// One counter by name (`NcCounters`' names, then [`NC_XDP_COUNTERS`]).
    pub fn counter(&self, name: &str) -> Result<u64> {
        self.node.counter(&nc_counter_names(), name)
    }

    /// `--auth-key`: see [`Node::set_auth`].
    pub fn set_auth(&self, keys: Option<&innet_core::auth::AuthKeys>) -> Result<()> {
        self.node.set_auth(keys)
    }

    /// Every installed key and its register, in slot order
    /// (`NcNode::snapshot`).
    pub fn snapshot(&self) -> Result<Vec<(ChainKey, Slot)>> {
        let keys = self.node.read_batch(NC_MAP_KEYS)?;
        let regs = self.node.read_batch(NC_MAP_REGISTERS)?;
        Ok(keys
            .iter()
            .zip(&regs)
            .filter(|(k, _)| u32::from_ne_bytes(k[..4].try_into().expect("u32")) != 0)
            .map(|(k, r)| {
                let key: ChainKey = k[4..4 + ncw::KEY_LEN].try_into().expect("key");
                let value = Value(r[..VALUE_LEN].try_into().expect("value"));
                let seq = u16::from_ne_bytes(r[VALUE_LEN..VALUE_LEN + 2].try_into().expect("seq"));
                (key, Slot { value, seq })
            })
            .collect())
    }

    /// Counters by name: `NcCounters`' then [`NC_XDP_COUNTERS`].
    pub fn counters(&self) -> Result<Vec<(&'static str, u64)>> {
        self.node.counters(nc_counter_names())
    }

    /// Pins [`NC_PINNED_MAPS`] under `dir` (on a bpffs).
    pub fn pin_maps(&mut self, dir: &Path) -> Result<()> {
        self.node.obj.pin_maps(dir, &NC_PINNED_MAPS)
    }

    pub fn test_run(&self, frame: &[u8]) -> Result<(u32, Vec<u8>)> {
        self.node.obj.test_run(NC_PROGRAM, frame)
    }

    /// [`BpfObject::median_run_ns`] of the node's XDP program on `frame`.
    pub fn median_run_ns(&self, frame: &[u8], runs: u32) -> Result<u64> {
        self.node.obj.median_run_ns(NC_PROGRAM, frame, runs)
    }

    pub fn program_fd(&self) -> Result<RawFd> {
        self.node.obj.program_fd(NC_PROGRAM)
    }
}

/// Why the chain programs cannot be used here, if they cannot.
pub fn unavailable() -> Option<String> {
    let euid = crate::object::euid();
    if euid != 0 {
        return Some(format!("not root (euid {euid}): loading BPF programs needs CAP_BPF and CAP_NET_ADMIN"));
    }
    let addr = NodeAddr { udp_port: craqw::DEFAULT_PORT, node_ip: Ipv4Addr::LOCALHOST, origin_port: 0, reply_port: 0 };
    CraqXdp::load(2, 2, addr)
        .and_then(|_| NcXdp::load(1, 2, addr))
        .err()
        .map(|e| format!("the kernel refused a chain BPF program: {e:#}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_constants_name_their_counters() {
        use crate::layout::assert_counter_indexes;
        let craq = craq_counter_names();
        assert_eq!(assert_counter_indexes("CRAQ_CTR_", Some("CRAQ_ERR_"), &craq), craq.len());
        let nodes = CraqCounters::default().counters().len();
        assert_eq!(c::CRAQ_CTR_NODE_COUNT as usize, nodes);
        let nc = nc_counter_names();
        assert_eq!(assert_counter_indexes("NC_CTR_", Some("NC_ERR_"), &nc), nc.len());
        assert_eq!(c::NC_CTR_NODE_COUNT as usize, NcCounters::default().counters().len());
    }

    #[test]
    fn the_objects_have_the_maps_named_here_sized_by_the_header() {
        let n = |x: i64| Some(x as u32);
        let ports = (MAP_PORTS, n(c::CHAIN_PORTS_MAX), n(c::CHAIN_PORT_SIZE));
        let peers = (MAP_PEERS, n(c::CHAIN_PEERS_MAX), Some(4));
        let auth = (MAP_AUTH, Some(1), n(c::AUTH_SIZE));
        // Room after the longest message for its key id and a whole word.
        let scratch = (MAP_AUTH_SCRATCH, Some(1), n(c::AUTH_MSG_MAX + 16));
        crate::object::assert_maps(
            CRAQ_OBJECT,
            &[
                (CRAQ_MAP_CONFIG, Some(1), n(c::CRAQ_CONFIG_SIZE)),
                (CRAQ_MAP_STORE, n(c::CRAQ_OBJECTS_DEFAULT * c::CRAQ_VERSIONS_DEFAULT), n(c::CRAQ_VALUE_LEN)),
                (CRAQ_MAP_INDEX, n(c::CRAQ_OBJECTS_DEFAULT), Some(1)),
                (MAP_GROUP, n(c::CHAIN_GROUP_MAX), n(c::CHAIN_MEMBER_SIZE)),
                (CRAQ_MAP_GROUP_PORTS, n(c::CHAIN_GROUP_MAX), Some(8)),
                (CRAQ_MAP_MEMBER_AT, n(c::CHAIN_GROUP_MAX), n(c::CHAIN_MEMBER_SIZE)),
                ports,
                peers,
                auth,
                scratch,
                (MAP_COUNTERS, n(c::CRAQ_CTR_COUNT), Some(8)),
            ],
        );
        crate::object::assert_maps(
            NC_OBJECT,
            &[
                (NC_MAP_CONFIG, Some(1), n(c::NC_CONFIG_SIZE)),
                (NC_MAP_NEIGHBOURS, n(c::NC_NEIGHBOURS_MAX), n(c::NC_HOP_SIZE)),
                (NC_MAP_KEYS, n(c::NC_KEYS_DEFAULT), n(c::NC_KEY_SLOT_SIZE)),
                (NC_MAP_REGISTERS, n(c::NC_KEYS_DEFAULT), n(c::NC_REGISTER_SIZE)),
                ports,
                peers,
                auth,
                scratch,
                (MAP_COUNTERS, n(c::NC_CTR_COUNT), Some(8)),
                ("nc_scratch", Some(1), None),
            ],
        );
    }

    #[test]
    fn key_hash_is_the_references() {
        // NcNode::install_key on an empty table puts a key at hash % slots.
        for k in 0..200u32 {
            let key = ncw::key_from_u32(k);
            let mut fresh = innet_chain::netchain::NcNode::new(1, 64);
            assert_eq!(fresh.install_key(key), Some(key_hash(&key) as usize % 64));
        }
    }
}
