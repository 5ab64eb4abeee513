//! Loading, configuring, test-running and reading the Paxos (CAANS)
//! data-plane roles (`bpf/paxos.bpf.c`): the coordinator and the acceptor.
//!
//! One object is loaded per role instance (each gets its own maps); the
//! role, the acceptors' ring size, the learners, the round or acceptor id
//! and the multicast group are written into its config map, and the
//! members of the group (egress device and addresses of each copy) into
//! `paxos_members`. The ring (`paxos_slots`) is sized before load to the
//! configured slots, so a test can run a ring small enough to wrap.
//!
//! Who may send each role what ([`innet_paxos::trust`]) is enforced in the
//! programs: [`PaxosXdp::configure`] writes the role's row of
//! [`trust::allowed`] into its config (so the BPF table is the Rust one),
//! [`PaxosXdp::set_senders`] its senders, keyed by ingress interface, IPv4
//! source and UDP source port ([`SenderKey`], looked up as [`sender`]
//! does); refusals are counted by reason ([`PaxosXdp::rejected`]).
//!
//! The header's constants are asserted here, at compile time, to equal
//! `innet_wire::paxos`'s and `innet_paxos`'s.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::os::fd::RawFd;
use std::path::Path;

use anyhow::{bail, Context, Result};
use libbpf_rs::{MapCore, MapFlags, MapHandle};

use innet_core::deploy::NodeIx;
use innet_core::Verdict;
use innet_paxos::acceptor::ACCEPTOR_SLOTS_DEFAULT;
use innet_paxos::deploy::PaxosDeployment;
use innet_paxos::trust::{self, class, Kind, Reject, Sender, Senders, REJECT_NAMES};
use innet_wire::paxos::{self as wire, offset, MsgType, Value, VALUE_LEN};

use crate::layout::consts as c;
use crate::object::{lookup, BpfObject};

static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/paxos.bpf.o"));

const _: () = {
    assert!(c::PAXOS_VALUE_LEN == wire::VALUE_LEN as i64);
    assert!(c::PAXOS_HEADER_LEN == wire::HEADER_LEN as i64);
    assert!(c::PAXOS_PACKET_LEN == wire::PACKET_LEN as i64);
    assert!(c::PAXOS_DATAPLANE_PORT == wire::DATAPLANE_PORT as i64);
    assert!(c::PAXOS_LEARNER_PORT == wire::LEARNER_PORT as i64);
    assert!(c::PAXOS_OFF_MSGTYPE == offset::MSGTYPE as i64);
    assert!(c::PAXOS_OFF_INST == offset::INST as i64);
    assert!(c::PAXOS_OFF_RND == offset::RND as i64);
    assert!(c::PAXOS_OFF_VRND == offset::VRND as i64);
    assert!(c::PAXOS_OFF_ACPTID == offset::ACPTID as i64);
    assert!(c::PAXOS_OFF_VALUE_LEN == offset::VALUE_LEN as i64);
    assert!(c::PAXOS_OFF_VALUE == offset::VALUE as i64);
    assert!(c::PAXOS_MSG_1A == MsgType::Phase1A as i64);
    assert!(c::PAXOS_MSG_1B == MsgType::Phase1B as i64);
    assert!(c::PAXOS_MSG_2A == MsgType::Phase2A as i64);
    assert!(c::PAXOS_MSG_2B == MsgType::Phase2B as i64);
    assert!(c::PAXOS_MSG_REQUEST == MsgType::Request as i64);
    assert!(c::PAXOS_MSG_TRIM == MsgType::Trim as i64);
    assert!(c::PAXOS_MSG_HEARTBEAT == MsgType::Heartbeat as i64);
    assert!(c::PAXOS_MSG_TAKEOVER == MsgType::Takeover as i64);
    assert!(c::PAXOS_MSG_CATCHUP == MsgType::Catchup as i64);
    assert!(c::PAXOS_MSG_DECIDED == MsgType::Decided as i64);
    assert!(c::PAXOS_MSG_WINDOW == MsgType::Window as i64);
    assert!(c::PAXOS_MSG_COUNT == MsgType::ALL.len() as i64);
    assert!(c::PAXOS_ROUND_INIT == innet_paxos::ROUND_INIT as i64);
    assert!(c::PAXOS_MAX_LEARNERS == innet_paxos::MAX_LEARNERS as i64);
    assert!(c::PAXOS_ACCEPTOR_SLOTS_DEFAULT == ACCEPTOR_SLOTS_DEFAULT as i64);
    assert!(c::PAXOS_GROUP_ACCEPTORS == innet_paxos::GROUP_ACCEPTORS as i64);
    assert!(c::PAXOS_GROUP_LEARNERS == innet_paxos::GROUP_LEARNERS as i64);
    assert!(c::PAXOS_SLOT_SIZE == 16 + VALUE_LEN as i64);
    assert!(c::PAXOS_VERDICT_DROP == Verdict::Drop.code() as i64);
    assert!(c::PAXOS_VERDICT_REFLECT == Verdict::Reflect.code() as i64);
    assert!(c::PAXOS_VERDICT_MULTICAST == Verdict::Multicast { group: 0 }.code() as i64);
    assert!(c::PAXOS_VERDICT_ORIGIN == Verdict::Origin.code() as i64);
    assert!(c::PAXOS_CLASS_COORDINATOR == class::COORDINATOR as i64);
    assert!(c::PAXOS_CLASS_BACKUP == class::BACKUP as i64);
    assert!(c::PAXOS_CLASS_ACCEPTOR == class::ACCEPTOR as i64);
    assert!(c::PAXOS_CLASS_LEARNER == class::LEARNER as i64);
    assert!(c::PAXOS_CLASS_PROPOSER == class::PROPOSER as i64);
    assert!(c::PAXOS_CLASS_OUTSIDE == class::OUTSIDE as i64);
    assert!(c::PAXOS_CLASS_ANY == class::ANY as i64);
    assert!(c::PAXOS_KIND_COORDINATOR == Kind::Coordinator.code() as i64);
    assert!(c::PAXOS_KIND_ACCEPTOR == Kind::Acceptor.code() as i64);
    assert!(c::PAXOS_KIND_BACKUP == Kind::Backup.code() as i64);
    assert!(c::PAXOS_KIND_LEARNER == Kind::Learner.code() as i64);
    assert!(c::PAXOS_KIND_PROPOSER == Kind::Proposer.code() as i64);
    assert!(c::PAXOS_REJECT_FOREIGN_ROUND == Reject::ForeignRound.index() as i64);
    assert!(c::PAXOS_REJECT_FOREIGN_PROPOSER == Reject::ForeignProposer.index() as i64);
    assert!(c::PAXOS_REJECT_FOREIGN_LEARNER == Reject::ForeignLearner.index() as i64);
    assert!(c::PAXOS_ISSUER_LEARNER_BASE == innet_paxos::ISSUER_LEARNER_BASE as i64);
    assert!(c::PAXOS_ENVELOPE_HEADER_LEN == innet_paxos::envelope::ENVELOPE_HEADER_LEN as i64);
    assert!(c::PAXOS_PROPOSER_INCARNATION_BITS == innet_paxos::envelope::PROPOSER_INCARNATION_BITS as i64);
    assert!(c::PAXOS_REJECT_COUNT == REJECT_NAMES.len() as i64);
    assert!(c::PAXOS_ALLOWED_LEN >= MsgType::ALL.len() as i64);
};

/// Map names (the C side's `SEC(".maps")` variables).
pub const MAP_CONFIG: &str = "paxos_config";
pub const MAP_STATE: &str = "paxos_state";
pub const MAP_SLOTS: &str = "paxos_slots";
pub const MAP_COUNTERS: &str = "paxos_counters";
pub const MAP_MEMBERS: &str = "paxos_members";
pub const MAP_SENDERS: &str = "paxos_senders";
pub const MAP_REJECTED: &str = "paxos_rejected";
/// [`Multicast::Devmap`]: the members' devices (a devmap) and the member on each.
pub const MAP_PORTS: &str = "paxos_ports";
pub const MAP_MEMBER_AT: &str = "paxos_member_at";
/// `--auth-key` ([`crate::auth`]): off unless written.
pub const MAP_AUTH: &str = "paxos_auth";
pub const PINNED_MAPS: [&str; 8] =
    [MAP_CONFIG, MAP_STATE, MAP_SLOTS, MAP_COUNTERS, MAP_MEMBERS, MAP_SENDERS, MAP_REJECTED, MAP_MEMBER_AT];
/// The tc program: the copies of a multicast verdict, and the role for frames generic XDP skipped.
pub const TC_PROGRAM: &str = "tc_paxos";
/// The egress program of every [`MAP_PORTS`] entry: rewrites a broadcast copy to its member.
pub const EGRESS_PROGRAM: &str = "xdp_paxos_egress";
/// Bytes of XDP metadata in front of a multicast frame: magic, group.
pub const META_LEN: usize = 4;
pub const META_MAGIC: u16 = c::PAXOS_META_MAGIC as u16;
/// Most copies one multicast verdict makes.
pub const MAX_MEMBERS: usize = c::PAXOS_MAX_MEMBERS as usize;

/// Counter names of the coordinator (the reference's, in its order: checked
/// by a test) and of the acceptor.
pub const COORDINATOR_COUNTERS: [&str; c::PAXOS_COORD_CTR_COUNT as usize] =
    ["requests", "window_full", "trims", "heartbeats", "ignored", "decode_errors"];
pub const ACCEPTOR_COUNTERS: [&str; c::PAXOS_ACC_CTR_COUNT as usize] =
    ["promises", "votes", "stale_round", "trimmed", "ring_full", "trims", "conflicting", "ignored", "decode_errors"];
/// Counters only the BPF side has, at their map indices.
pub const BPF_COUNTERS: [(&str, u32); 5] = [
    ("xdp_passed_other", c::PAXOS_CTR_XDP_PASSED_OTHER as u32),
    ("multicast_copies", c::PAXOS_CTR_MULTICAST_COPIES as u32),
    ("multicast_errors", c::PAXOS_CTR_MULTICAST_ERRORS as u32),
    ("egress_copies", c::PAXOS_CTR_EGRESS_COPIES as u32),
    ("auth_refused", c::PAXOS_CTR_AUTH_REFUSED as u32),
];

/// How a role's multicast verdict (2A to the acceptors, 2B to the voters)
/// leaves the program (`config.mcast`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Multicast {
    /// XDP metadata and `XDP_PASS`; `tc_paxos` clones one skb per member.
    /// Any number of members per device; the copies skip generic XDP at
    /// the next hop, where `tc_paxos` runs the role instead.
    #[default]
    Tc,
    /// `bpf_redirect_map` with `BPF_F_BROADCAST` on the devmap
    /// [`MAP_PORTS`]: the kernel copies the frame to every member's
    /// device and [`EGRESS_PROGRAM`] rewrites each copy. One member per
    /// device; the copies stay XDP frames (driver mode), no tc.
    Devmap,
}

impl Multicast {
    fn code(self) -> u32 {
        match self {
            Multicast::Tc => c::PAXOS_MCAST_TC as u32,
            Multicast::Devmap => c::PAXOS_MCAST_DEVMAP as u32,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Coordinator,
    Acceptor,
}

impl Role {
    pub fn program(self) -> &'static str {
        match self {
            Role::Coordinator => "xdp_paxos_coordinator",
            Role::Acceptor => "xdp_paxos_acceptor",
        }
    }
    fn id(self) -> u32 {
        match self {
            Role::Coordinator => c::PAXOS_ROLE_COORDINATOR as u32,
            Role::Acceptor => c::PAXOS_ROLE_ACCEPTOR as u32,
        }
    }
    pub fn counter_names(self) -> &'static [&'static str] {
        match self {
            Role::Coordinator => &COORDINATOR_COUNTERS,
            Role::Acceptor => &ACCEPTOR_COUNTERS,
        }
    }
    /// The kind whose trust rules the role applies.
    pub fn kind(self) -> Kind {
        match self {
            Role::Coordinator => Kind::Coordinator,
            Role::Acceptor => Kind::Acceptor,
        }
    }
}

/// Who a frame is from, as the BPF programs see it (`struct
/// innet_paxos_sender_key`): the interface it came in on, its IPv4 source
/// and its UDP source port, 0 for any port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SenderKey {
    pub ifindex: u32,
    pub ip: Ipv4Addr,
    pub port: u16,
}

impl SenderKey {
    fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(c::PAXOS_SENDER_KEY_SIZE as usize);
        b.extend_from_slice(&self.ifindex.to_ne_bytes());
        b.extend_from_slice(&self.ip.octets());
        b.extend_from_slice(&self.port.to_ne_bytes());
        b.extend_from_slice(&[0, 0]);
        assert_eq!(b.len(), c::PAXOS_SENDER_KEY_SIZE as usize, "struct innet_paxos_sender_key layout");
        b
    }
}

/// What a sender map says of a frame from `port` at `ip` that came in on
/// `ifindex` (`paxos_sender` in `bpf/include/innet_paxos_trust.h`): that
/// key's sender, else the address's any-port one, else an outside sender.
pub fn sender(by_addr: &HashMap<SenderKey, Sender>, ifindex: u32, ip: Ipv4Addr, port: u16) -> Sender {
    let exact = SenderKey { ifindex, ip, port };
    let any = SenderKey { port: 0, ..exact };
    by_addr.get(&exact).or_else(|| by_addr.get(&any)).copied().unwrap_or(Sender::OUTSIDE)
}

/// [`trust::check`] for a frame the BPF programs see as from `ip`:`port`
/// on `ifindex`, at a role whose senders are `s`.
pub fn check_from(s: &Senders<SenderKey>, ifindex: u32, ip: Ipv4Addr, port: u16, packet: &[u8]) -> Result<(), Reject> {
    trust::check(s.kind, sender(&s.by_addr, ifindex, ip, port), packet)
}

/// Node `n`'s senders as its BPF program sees them: node `j` by `keys[j]`
/// (`None`: its packets never reach the program).
pub fn senders_at(d: &PaxosDeployment, keys: &[Option<SenderKey>], n: NodeIx) -> Senders<SenderKey> {
    let s = trust::senders(d, keys, n);
    Senders { kind: s.kind, by_addr: s.by_addr.into_iter().filter_map(|(k, v)| Some((k?, v))).collect() }
}

/// Every node of `d` by `keys[j]` (`None`: left out): the senders of a
/// program that is no node of the deployment (the vote counter in front
/// of the learners, proposers and backup).
pub fn all_senders(d: &PaxosDeployment, keys: &[Option<SenderKey>]) -> HashMap<SenderKey, Sender> {
    keys.iter().zip(&d.nodes).filter_map(|(key, node)| Some((*key.as_ref()?, trust::sender_of(node.role)))).collect()
}

/// A `kind` role's row of [`trust::allowed`], as the programs' configs hold it.
pub fn allowed_row(kind: Kind) -> [u8; c::PAXOS_ALLOWED_LEN as usize] {
    let mut row = [0u8; c::PAXOS_ALLOWED_LEN as usize];
    for t in MsgType::ALL {
        row[t as usize] = trust::allowed(kind, t);
    }
    row
}

/// Writes `by_addr` into the sender map `map` of `obj`.
pub(crate) fn write_senders(obj: &BpfObject, map: &str, by_addr: &HashMap<SenderKey, Sender>) -> Result<()> {
    if by_addr.len() > c::PAXOS_MAX_SENDERS as usize {
        bail!("{} senders, at most {}", by_addr.len(), c::PAXOS_MAX_SENDERS);
    }
    let m = obj.map(map)?;
    for (k, s) in by_addr {
        if s.class == 0 {
            bail!("sender {k:?} has no class");
        }
        // An any-port entry whose address has no per-port entry: the
        // program's lookup stops at it (`paxos_sender`).
        let address_only =
            k.port == 0 && !by_addr.keys().any(|o| o.port != 0 && (o.ifindex, o.ip) == (k.ifindex, k.ip));
        let flags = if address_only { c::PAXOS_SENDER_ADDRESS_ONLY as u8 } else { 0 };
        let mut v = vec![s.class, s.issuer, flags, 0];
        v.extend_from_slice(&s.proposer.to_ne_bytes());
        v.extend_from_slice(&[0; 2]);
        assert_eq!(v.len(), c::PAXOS_SENDER_SIZE as usize, "struct innet_paxos_sender layout");
        m.update(&k.encode(), &v, MapFlags::ANY).with_context(|| format!("write {map} {k:?}"))?;
    }
    Ok(())
}

/// The frames a rejection map counted, by [`Reject::name`], in
/// [`Reject::index`] order.
pub(crate) fn read_rejected(m: &impl MapCore) -> Result<Vec<(&'static str, u64)>> {
    let at = |i: u32| -> Result<u64> { Ok(u64::from_ne_bytes(lookup(m, i)?[..8].try_into().expect("u64"))) };
    REJECT_NAMES.iter().enumerate().map(|(i, name)| Ok((*name, at(i as u32)?))).collect()
}

/// `struct innet_paxos_config`: what the control plane writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    pub udp_port: u16,
    /// The acceptors' ring (a power of two).
    pub slots: usize,
    pub first_instance: u32,
    pub learners: usize,
    pub trim_quorum: usize,
    /// Coordinator: the round of its 2As.
    pub round: u16,
    /// Acceptor: its id.
    pub acceptor_id: u16,
    /// The group of the role's multicast verdict.
    pub group: u16,
    /// How the multicast verdict's copies leave.
    pub mcast: Multicast,
}

impl Config {
    /// The XDP coordinator configured as the reference `cfg`.
    pub fn coordinator(cfg: &innet_paxos::CoordinatorConfig) -> Config {
        Config {
            udp_port: wire::DATAPLANE_PORT,
            slots: cfg.slots,
            first_instance: cfg.first_instance,
            learners: cfg.learners,
            trim_quorum: cfg.trim_quorum,
            round: cfg.round,
            acceptor_id: 0,
            group: cfg.acceptor_group,
            mcast: Multicast::Tc,
        }
    }
    /// The XDP acceptor configured as the reference `cfg`.
    pub fn acceptor(cfg: &innet_paxos::AcceptorConfig) -> Config {
        Config {
            udp_port: wire::DATAPLANE_PORT,
            slots: cfg.slots,
            first_instance: 0,
            learners: cfg.learners,
            trim_quorum: cfg.trim_quorum,
            round: 0,
            acceptor_id: cfg.id,
            group: cfg.learner_group,
            mcast: Multicast::Tc,
        }
    }
}

/// One copy of a multicast: egress device and the addresses it gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    pub ifindex: u32,
    pub src_mac: [u8; 6],
    pub src_ip: Ipv4Addr,
    pub dst_mac: [u8; 6],
    pub dst_ip: Ipv4Addr,
    pub dst_port: u16,
}

impl Member {
    fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(c::PAXOS_MEMBER_SIZE as usize);
        b.extend_from_slice(&self.ifindex.to_ne_bytes());
        b.extend_from_slice(&self.src_ip.octets());
        b.extend_from_slice(&self.dst_ip.octets());
        b.extend_from_slice(&self.dst_port.to_ne_bytes());
        b.extend_from_slice(&self.src_mac);
        b.extend_from_slice(&self.dst_mac);
        b.extend_from_slice(&[0, 0]);
        assert_eq!(b.len(), c::PAXOS_MEMBER_SIZE as usize, "struct innet_paxos_member layout");
        b
    }
}

/// The descriptors [`Multicast::Devmap`]'s maps are written with
/// ([`PaxosXdp::ports_writer`]): plain numbers, so a thread that entered
/// the devices' network namespace can use them while the role is loaded.
#[derive(Clone, Copy, Debug)]
pub struct PortsWriter {
    egress: RawFd,
    ports: RawFd,
    member_at: RawFd,
}

impl PortsWriter {
    /// Writes every member's device (with the egress program) and the
    /// member by device; call it in the devices' namespace.
    pub fn write(&self, members: &[Member]) -> Result<()> {
        let mut seen = std::collections::HashSet::new();
        for m in members {
            if !seen.insert(m.ifindex) {
                bail!(
                    "two members leave by device {} (ifindex): a devmap broadcast makes one copy per device; \
                     use the tc multicast for several members behind one device",
                    m.ifindex
                );
            }
            // struct bpf_devmap_val: ifindex, then the egress program's fd.
            let mut v = m.ifindex.to_ne_bytes().to_vec();
            v.extend_from_slice(&self.egress.to_ne_bytes());
            let key = m.ifindex.to_ne_bytes();
            crate::object::update_raw(self.ports, &key, &v).context("write paxos_ports")?;
            crate::object::update_raw(self.member_at, &key, &m.encode()).context("write paxos_member_at")?;
        }
        Ok(())
    }
}

/// `struct innet_paxos_state`: the scalar registers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct State {
    pub next: u32,
    pub floor: u32,
    pub checkpoints: Vec<u32>,
}

/// One acceptor slot: `(inst, rnd, vrnd, value)` as `Acceptor::slot` returns it.
pub type Slot = Option<(u32, u16, u16, Value)>;

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_ne_bytes(b[o..o + 4].try_into().expect("4 bytes"))
}
fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_ne_bytes(b[o..o + 2].try_into().expect("2 bytes"))
}

fn decode_state(b: &[u8]) -> State {
    assert_eq!(b.len(), c::PAXOS_STATE_SIZE as usize, "struct innet_paxos_state layout");
    State {
        next: u32_at(b, 0),
        floor: u32_at(b, 4),
        checkpoints: (0..c::PAXOS_MAX_LEARNERS as usize).map(|i| u32_at(b, 8 + 4 * i)).collect(),
    }
}

fn decode_slot(b: &[u8]) -> Slot {
    assert_eq!(b.len(), c::PAXOS_SLOT_SIZE as usize, "struct innet_paxos_slot layout");
    let value = Value { len: u32_at(b, 12), bytes: b[16..16 + VALUE_LEN].try_into().expect("value") };
    (u32_at(b, 0) != 0).then_some((u32_at(b, 4), u16_at(b, 8), u16_at(b, 10), value))
}

/// A loaded Paxos role.
pub struct PaxosXdp {
    obj: BpfObject,
    role: Role,
}

impl PaxosXdp {
    /// Opens the embedded object with a ring of `slots` (a power of two;
    /// the coordinator keeps one unused slot) and loads it.
    pub fn load(role: Role, slots: usize) -> Result<PaxosXdp> {
        if !slots.is_power_of_two() {
            bail!("ring size {slots} must be a power of two");
        }
        let ring = if role == Role::Acceptor { slots as u32 } else { 1 };
        Ok(PaxosXdp { obj: BpfObject::load(OBJECT, &[(MAP_SLOTS, ring)])?, role })
    }

    /// Loads `role` again over the maps an earlier load pinned under
    /// `dir` ([`PaxosXdp::pin_maps`]): the restarted program holds every
    /// promise and vote of the ring, the trim floor, the configuration,
    /// the senders it admits and its counters, as they were. This is the
    /// acceptor restart CAANS section 3.1 asks for ("if the acceptor fails,
    /// and then restarts, it should be able to recover its durable state";
    /// the paper assumes the device's memory is made persistent, e.g. by
    /// battery-backed memory): here the program is what fails and
    /// restarts, and the pinned maps are the device memory that outlives
    /// it. They do not outlive a reboot of the machine. `slots` must be
    /// the ring size of the pinned maps (libbpf refuses another).
    pub fn load_pinned(role: Role, slots: usize, dir: &Path) -> Result<PaxosXdp> {
        if !slots.is_power_of_two() {
            bail!("ring size {slots} must be a power of two");
        }
        let ring = if role == Role::Acceptor { slots as u32 } else { 1 };
        // libbpf takes a reused map as it is pinned, whatever the object
        // asks: a ring of another size is refused here, by name.
        let pinned_ring = pinned(dir, MAP_SLOTS)?.max_entries();
        if pinned_ring != ring {
            bail!(
                "the {role:?} pinned at {} has a ring of {pinned_ring} slots, not {ring}: restart it with its own ring size",
                dir.display()
            );
        }
        let obj = BpfObject::load_reusing(OBJECT, &[(MAP_SLOTS, ring)], Some((dir, &PINNED_MAPS)))?;
        let x = PaxosXdp { obj, role };
        debug_assert!(
            x.obj.map(MAP_SLOTS).is_ok_and(|m| m.max_entries() == ring),
            "the pinned ring is the ring asked for"
        );
        Ok(x)
    }

    pub fn role(&self) -> Role {
        self.role
    }

    /// Writes the configuration and the multicast group's members.
    pub fn configure(&self, cfg: &Config, members: &[Member]) -> Result<()> {
        if members.len() > MAX_MEMBERS {
            bail!("{} members, at most {MAX_MEMBERS}", members.len());
        }
        for (i, m) in members.iter().enumerate() {
            self.obj.write(MAP_MEMBERS, i as u32, &m.encode())?;
        }

        let mut b = Vec::with_capacity(c::PAXOS_CONFIG_SIZE as usize);
        for v in [
            self.role.id(),
            cfg.udp_port as u32,
            cfg.slots as u32,
            cfg.first_instance,
            cfg.learners as u32,
            cfg.trim_quorum as u32,
        ] {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        for v in [cfg.round, cfg.acceptor_id, cfg.group, members.len() as u16] {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        b.extend_from_slice(&allowed_row(self.role.kind()));
        b.extend_from_slice(&cfg.mcast.code().to_ne_bytes());
        assert_eq!(b.len(), c::PAXOS_CONFIG_SIZE as usize, "struct innet_paxos_config layout");
        self.obj.write(MAP_CONFIG, 0, &b)?;
        // The instance counter starts at first_instance (Coordinator::new).
        let mut st = vec![0u8; c::PAXOS_STATE_SIZE as usize];
        st[..4].copy_from_slice(&cfg.first_instance.to_ne_bytes());
        self.obj.write(MAP_STATE, 0, &st)
    }

    /// [`Multicast::Devmap`]'s maps: every member's device in the devmap
    /// with [`EGRESS_PROGRAM`] as its egress program, and the member by
    /// its device. One member per device (the egress program knows a copy
    /// only by the device it leaves on). The devmap names devices by
    /// ifindex in the writer's network namespace: call it from a thread in
    /// the members' devices' namespace (`testbed::in_netns`).
    pub fn set_ports(&self, members: &[Member]) -> Result<()> {
        self.ports_writer()?.write(members)
    }

    /// What [`PaxosXdp::set_ports`] writes with, as descriptors a thread
    /// in another namespace can use.
    pub fn ports_writer(&self) -> Result<PortsWriter> {
        Ok(PortsWriter {
            egress: self.obj.program_fd(EGRESS_PROGRAM)?,
            ports: self.obj.map_fd(MAP_PORTS)?,
            member_at: self.obj.map_fd(MAP_MEMBER_AT)?,
        })
    }

    /// Writes who may send the role what: `s` (of the role's kind) into
    /// `paxos_senders`. Without senders every frame is from outside.
    pub fn set_senders(&self, s: &Senders<SenderKey>) -> Result<()> {
        if s.kind != self.role.kind() {
            bail!("senders of a {:?} for a {:?}", s.kind, self.role.kind());
        }
        write_senders(&self.obj, MAP_SENDERS, &s.by_addr)
    }

    /// `--auth-key`: takes only frames whose Paxos header carries a MAC
    /// trailer that checks under `keys`, and seals what it sends on
    /// (`None`: off).
    pub fn set_auth(&self, keys: Option<&innet_core::auth::AuthKeys>) -> Result<()> {
        self.obj.write(MAP_AUTH, 0, &crate::auth::encode(keys))
    }

    /// Runs `frame` through the role's XDP program once (`BPF_PROG_TEST_RUN`).
    pub fn test_run(&self, frame: &[u8]) -> Result<(u32, Vec<u8>)> {
        self.obj.test_run(self.role.program(), frame)
    }

    /// [`PaxosXdp::test_run`], the frame received on `ifindex` of the
    /// calling thread's network namespace.
    pub fn test_run_on(&self, frame: &[u8], ifindex: u32) -> Result<(u32, Vec<u8>)> {
        self.obj.test_run_on(self.role.program(), frame, Some(ifindex))
    }

    /// Runs `frame` through `tc_paxos` once (`BPF_PROG_TEST_RUN`): the tc
    /// action and the frame as the program left it.
    pub fn test_run_tc(&self, frame: &[u8]) -> Result<(u32, Vec<u8>)> {
        self.obj.test_run(TC_PROGRAM, frame)
    }

    /// [`PaxosXdp::test_run_tc`], the frame received on `ifindex` of the
    /// calling thread's network namespace.
    pub fn test_run_tc_on(&self, frame: &[u8], ifindex: u32) -> Result<(u32, Vec<u8>)> {
        self.obj.test_run_skb_on(TC_PROGRAM, frame, ifindex)
    }

    /// The XDP program's (or with `tc`, the tc program's) descriptor.
    pub fn program_fd(&self, tc: bool) -> Result<RawFd> {
        self.obj.program_fd(if tc { TC_PROGRAM } else { self.role.program() })
    }

    /// [`BpfObject::median_run_ns`] of the role's XDP program on `frame`.
    pub fn median_run_ns(&self, frame: &[u8], runs: u32) -> Result<u64> {
        self.obj.median_run_ns(self.role.program(), frame, runs)
    }

    pub fn pin_maps(&mut self, dir: &Path) -> Result<()> {
        self.obj.pin_maps(dir, &PINNED_MAPS)
    }

    /// Pins the role's XDP program at `path`.
    pub fn pin_program(&mut self, path: &Path) -> Result<()> {
        self.obj.pin_program(self.role.program(), path)
    }

    pub fn counters(&self) -> Result<Vec<(&'static str, u64)>> {
        read_counters(self.role, &self.obj.map(MAP_COUNTERS)?)
    }
    /// Frames refused before the role saw them, by reason.
    pub fn rejected(&self) -> Result<Vec<(&'static str, u64)>> {
        read_rejected(&self.obj.map(MAP_REJECTED)?)
    }
    pub fn state(&self) -> Result<State> {
        Ok(decode_state(&lookup(&self.obj.map(MAP_STATE)?, 0)?))
    }
    /// Every slot of the ring, in slot order.
    pub fn slots(&self) -> Result<Vec<Slot>> {
        read_slots(&self.obj.map(MAP_SLOTS)?)
    }
}

/// Nanoseconds per packet of each role's hot path in the kernel
/// (`BPF_PROG_TEST_RUN`): the median of `repeat` single runs (at most
/// 200,000), each on a fresh copy of the frame, as the kernel timed it
/// (one clock read included). Not one run repeated `repeat` times: the
/// programs rewrite the frame in place, and a repeated run would go on
/// with the rewritten one (a 2A the coordinator does not take, a 2B the
/// acceptor does not). The paths: the coordinator turning a REQUEST into a
/// 2A, the acceptor voting on a 2A from the coordinator (same instance
/// again: the vote path every time), each through its XDP entry and its tc
/// entry (the tc multicast has one member on a device that does not
/// exist, so the clone fails cheaply: a lower bound of a real copy). Keys:
/// `coordinator_xdp`, `coordinator_tc`, `acceptor_xdp`, `acceptor_tc`.
pub fn cost_ns(repeat: u32) -> Result<Vec<(&'static str, f64)>> {
    let mut out = vec![];
    for role in [Role::Coordinator, Role::Acceptor] {
        for (entry, tc) in [("xdp", false), ("tc", true)] {
            let (x, frame) = cost_setup(role)?;
            let name = if tc { TC_PROGRAM } else { role.program() };
            let median = x.obj.median_run_ns(name, &frame, repeat.clamp(1, 200_000))?;
            let key = match (role, entry) {
                (Role::Coordinator, "xdp") => "coordinator_xdp",
                (Role::Coordinator, _) => "coordinator_tc",
                (Role::Acceptor, "xdp") => "acceptor_xdp",
                (Role::Acceptor, _) => "acceptor_tc",
            };
            // The path measured is the role's, not a refusal.
            ensure_admitted(&x.rejected()?).with_context(|| key)?;
            out.push((key, median as f64));
        }
    }
    Ok(out)
}

/// A freshly loaded `role` and the frame whose hot path [`cost_ns`]
/// measures: for the coordinator a REQUEST (turned into a 2A for the next
/// instance of a ring that never fills), for the acceptor a round-1 2A
/// from the coordinator (a vote, every time: same instance again). The
/// role multicasts to one member on a device that does not exist, so a tc
/// clone fails cheaply.
pub fn cost_setup(role: Role) -> Result<(PaxosXdp, Vec<u8>)> {
    use crate::frame::{udp_frame, Endpoint};
    let from = Endpoint { mac: [2, 0, 0, 0, 0, 1], ip: Ipv4Addr::new(10, 97, 0, 2), port: 40_000 };
    let to = Endpoint { mac: [2, 0, 0, 0, 0, 2], ip: Ipv4Addr::new(10, 97, 0, 1), port: wire::DATAPLANE_PORT };
    let nowhere = Member {
        ifindex: 999_999,
        src_mac: to.mac,
        src_ip: to.ip,
        dst_mac: from.mac,
        dst_ip: from.ip,
        dst_port: from.port,
    };
    let (cfg, t) = match role {
        // A ring as large as u32 instances allow: the window never fills.
        Role::Coordinator => {
            let c = innet_paxos::CoordinatorConfig { slots: 1 << 31, ..innet_paxos::CoordinatorConfig::new(1) };
            (Config::coordinator(&c), MsgType::Request)
        }
        Role::Acceptor => (Config::acceptor(&innet_paxos::AcceptorConfig::new(0, 1)), MsgType::Phase2A),
    };
    let mut m = wire::PaxosMsg::new(t);
    m.rnd = innet_paxos::ROUND_INIT;
    m.value = Value::new(b"value").expect("short");
    let frame = udp_frame(from, to, &m.encode(), 0);
    let x = PaxosXdp::load(role, if role == Role::Acceptor { cfg.slots } else { 1 })?;
    x.configure(&cfg, &[nowhere])?;
    // The 2A from the coordinator (BPF_PROG_TEST_RUN receives on lo).
    let coordinator = trust::sender_of(innet_paxos::deploy::PaxosRole::Coordinator);
    let key = SenderKey { ifindex: LOOPBACK_IFINDEX, ip: from.ip, port: 0 };
    x.set_senders(&Senders { kind: role.kind(), by_addr: HashMap::from([(key, coordinator)]) })?;
    Ok((x, frame))
}

/// Fails if a cost measurement's frames were refused (it measured the
/// refusal, not the role).
pub fn ensure_admitted(rejected: &[(&'static str, u64)]) -> Result<()> {
    match rejected.iter().find(|(_, v)| *v > 0) {
        Some((reason, v)) => bail!("the measured frame was refused ({reason} {v})"),
        None => Ok(()),
    }
}

/// The interface `BPF_PROG_TEST_RUN` receives on unless told otherwise.
pub const LOOPBACK_IFINDEX: u32 = 1;

/// The role's counters in the reference's order, then the BPF-only ones.
pub fn read_counters(role: Role, m: &impl MapCore) -> Result<Vec<(&'static str, u64)>> {
    let at = |i: u32| -> Result<u64> { Ok(u64::from_ne_bytes(lookup(m, i)?[..8].try_into().expect("u64"))) };
    let mut v = Vec::new();
    for (i, name) in role.counter_names().iter().enumerate() {
        v.push((*name, at(i as u32)?));
    }
    for (name, i) in BPF_COUNTERS {
        v.push((name, at(i)?));
    }
    Ok(v)
}

fn read_slots(m: &impl MapCore) -> Result<Vec<Slot>> {
    (0..m.max_entries()).map(|i| Ok(decode_slot(&lookup(m, i)?))).collect()
}

/// Counters of a role whose maps were pinned under `dir`.
pub fn pinned_counters(role: Role, dir: &Path) -> Result<Vec<(&'static str, u64)>> {
    read_counters(role, &pinned(dir, MAP_COUNTERS)?)
}

/// Rejections of a role whose maps were pinned under `dir`, by reason.
pub fn pinned_rejected(dir: &Path) -> Result<Vec<(&'static str, u64)>> {
    read_rejected(&pinned(dir, MAP_REJECTED)?)
}

pub(crate) fn pinned(dir: &Path, map: &str) -> Result<MapHandle> {
    let path = dir.join(map);
    MapHandle::from_pinned_path(&path).with_context(|| format!("open {}", path.display()))
}

/// Why the Paxos programs cannot be loaded here, if they cannot.
pub fn unavailable() -> Option<String> {
    let euid = crate::object::euid();
    if euid != 0 {
        return Some(format!("not root (euid {euid}): loading BPF programs needs CAP_BPF and CAP_NET_ADMIN"));
    }
    match PaxosXdp::load(Role::Acceptor, 4) {
        Ok(_) => None,
        Err(e) => Some(format!("the kernel refused the BPF program: {e:#}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use innet_core::Counters;

    #[test]
    fn counter_names_match_the_reference_programs_in_order() {
        let names = |v: Vec<(&'static str, u64)>| v.into_iter().map(|(n, _)| n).collect::<Vec<_>>();
        let coord = innet_paxos::Coordinator::new(innet_paxos::CoordinatorConfig::new(1));
        assert_eq!(&COORDINATOR_COUNTERS[..], &names(coord.counters())[..]);
        let acc = innet_paxos::Acceptor::new(innet_paxos::AcceptorConfig::new(0, 1));
        assert_eq!(&ACCEPTOR_COUNTERS[..], &names(acc.counters())[..]);
    }

    #[test]
    fn counter_constants_name_their_counters() {
        use crate::layout::assert_counter_indexes;
        let coord = assert_counter_indexes("PAXOS_COORD_CTR_", None, &COORDINATOR_COUNTERS);
        assert_eq!(coord, COORDINATOR_COUNTERS.len());
        let acc = assert_counter_indexes("PAXOS_ACC_CTR_", None, &ACCEPTOR_COUNTERS);
        assert_eq!(acc, ACCEPTOR_COUNTERS.len());
        let mut bpf = [""; c::PAXOS_CTR_COUNT as usize];
        for (name, i) in BPF_COUNTERS {
            bpf[i as usize] = name;
        }
        assert_eq!(assert_counter_indexes("PAXOS_CTR_", None, &bpf), BPF_COUNTERS.len());
    }

    #[test]
    fn the_object_has_the_maps_named_here_sized_by_the_header() {
        let n = |x: i64| Some(x as u32);
        crate::object::assert_maps(
            OBJECT,
            &[
                (MAP_CONFIG, Some(1), n(c::PAXOS_CONFIG_SIZE)),
                (MAP_STATE, Some(1), n(c::PAXOS_STATE_SIZE)),
                (MAP_SLOTS, n(c::PAXOS_ACCEPTOR_SLOTS_DEFAULT), n(c::PAXOS_SLOT_SIZE)),
                (MAP_COUNTERS, n(c::PAXOS_CTR_COUNT), Some(8)),
                (MAP_MEMBERS, n(c::PAXOS_MAX_MEMBERS), n(c::PAXOS_MEMBER_SIZE)),
                (MAP_SENDERS, n(c::PAXOS_MAX_SENDERS), n(c::PAXOS_SENDER_SIZE)),
                (MAP_REJECTED, n(c::PAXOS_REJECT_COUNT), Some(8)),
                (MAP_PORTS, n(c::PAXOS_MAX_MEMBERS), Some(8)),
                (MAP_MEMBER_AT, n(c::PAXOS_MAX_MEMBERS), n(c::PAXOS_MEMBER_SIZE)),
                (MAP_AUTH, Some(1), n(c::AUTH_SIZE)),
            ],
        );
    }
}
