//! Loading, configuring, test-running and reading the phase-2B vote
//! counter in front of Paxos learners and proposers
//! (`bpf/paxos_learner.bpf.c`; reference `innet_paxos::VoteCounter`).
//!
//! One object counts for up to [`MAX_PORTS`] UDP destination ports (the
//! learners' and proposers' sockets behind one interface), each with its
//! own ring of `slots` entries in the one `counter_slots` map (port `k`'s
//! ring is entries `k * slots ..`), sized at load. The object has an XDP
//! entry and a tc (clsact ingress) entry with the same logic: generic XDP
//! skips the copies a tc program redirected, which is how the XDP
//! acceptors multicast their votes, so on the `paxos` testbed the tc entry
//! is the one that sees the votes.
//!
//! Before a frame to a counted port is counted, the rules of the role
//! behind that port ([`innet_paxos::trust`], a row of [`trust::allowed`]
//! per port in the config) are applied to its sender, looked up in the
//! senders [`VoteCounterXdp::set_senders`] writes, as in
//! [`crate::paxos`]: a vote or DECIDED from anyone but an acceptor is
//! refused and counted by reason ([`VoteCounterXdp::rejected`]).
//!
//! The header's constants are asserted here, at compile time, to equal
//! `innet_paxos::vote_counter`'s.

use std::cell::RefCell;
use std::collections::HashMap;
use std::os::fd::{BorrowedFd, RawFd};
use std::path::Path;
use std::rc::Rc;

use anyhow::{bail, Context, Result};
use libbpf_rs::{MapCore, RingBuffer, RingBufferBuilder};

use innet_paxos::trust::{self, Kind, Sender};
use innet_paxos::vote_counter::{
    CountedVote, CounterSlot, VoteCounterConfig, COUNTER_ACPTID, COUNTER_MAX_ACCEPTORS, COUNTER_SLOTS_DEFAULT,
};
use innet_wire::paxos::{Value, VALUE_LEN};

use crate::layout::consts as c;
use crate::object::{lookup, BpfObject};
use crate::paxos::{allowed_row, pinned, read_rejected, write_senders, SenderKey};

static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/paxos_learner.bpf.o"));

const _: () = {
    assert!(c::PAXOS_COUNTER_MAX_ACCEPTORS == COUNTER_MAX_ACCEPTORS as i64);
    assert!(c::PAXOS_COUNTER_ACPTID == COUNTER_ACPTID as i64);
    assert!(c::PAXOS_COUNTER_SLOTS_DEFAULT == COUNTER_SLOTS_DEFAULT as i64);
    assert!(c::PAXOS_COUNTED_VOTE_SIZE == 8 + VALUE_LEN as i64);
    assert!(c::PAXOS_COUNTER_SLOT_SIZE == c::PAXOS_COUNTER_OFF_VOTES + 8 * c::PAXOS_COUNTED_VOTE_SIZE);
    // The `voted` bitmap is a u32.
    assert!(COUNTER_MAX_ACCEPTORS <= 32);
};

pub const MAP_CONFIG: &str = "counter_config";
pub const MAP_SLOTS: &str = "counter_slots";
pub const MAP_COUNTERS: &str = "counter_counters";
pub const MAP_SENDERS: &str = "counter_senders";
pub const MAP_REJECTED: &str = "counter_rejected";
/// Decisions up in batches ([`Config::ring`], [`DecisionRing`]).
pub const MAP_RING: &str = "counter_ring";
/// `--auth-key` ([`crate::auth`]): off unless written
/// ([`VoteCounterXdp::set_auth`]).
pub const MAP_AUTH: &str = "counter_auth";
pub const PINNED_MAPS: [&str; 6] = [MAP_CONFIG, MAP_SLOTS, MAP_COUNTERS, MAP_SENDERS, MAP_REJECTED, MAP_RING];
/// The ring's default size in bytes (4,096 decisions).
pub const RING_BYTES_DEFAULT: usize = c::PAXOS_COUNTER_RING_BYTES_DEFAULT as usize;
/// Bytes of one decision record (`struct innet_paxos_decision`).
pub const DECISION_SIZE: usize = c::PAXOS_DECISION_SIZE as usize;
pub const XDP_PROGRAM: &str = "xdp_paxos_counter";
pub const TC_PROGRAM: &str = "tc_paxos_counter";
/// Most UDP ports one program counts for.
pub const MAX_PORTS: usize = c::PAXOS_COUNTER_MAX_PORTS as usize;

/// Counter names, the reference's in its order (checked by a test), then
/// the BPF-only ones at their map indices.
pub const COUNTER_NAMES: [&str; c::PAXOS_COUNTER_CTR_REFERENCE_COUNT as usize] = [
    "decisions",
    "counted",
    "duplicates",
    "late",
    "evicted",
    "passed_stale",
    "bad_acceptor",
    "passed",
    "decode_errors",
];
pub const BPF_COUNTERS: [(&str, u32); 5] = [
    ("passed_other", c::PAXOS_COUNTER_CTR_PASSED_OTHER as u32),
    ("ring", c::PAXOS_COUNTER_CTR_RING as u32),
    ("ring_full", c::PAXOS_COUNTER_CTR_RING_FULL as u32),
    ("sunk", c::PAXOS_COUNTER_CTR_SUNK as u32),
    ("auth_refused", c::PAXOS_COUNTER_CTR_AUTH_REFUSED as u32),
];

/// How decisions go up through the ring ([`Config::ring`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingOpts {
    /// The ring's size in bytes: a power of two, at least a page. Each
    /// decision takes 64 (its record and the ring's header).
    pub bytes: usize,
    /// 0: the kernel's adaptive wake-up (only a reader that has caught up
    /// is woken: one wake-up per burst); n: wake the reader once n
    /// records wait, else not (it polls every [`RING_POLL`]).
    pub wakeup: u32,
}

impl Default for RingOpts {
    fn default() -> Self {
        RingOpts { bytes: RING_BYTES_DEFAULT, wakeup: RING_WAKEUP_DEFAULT }
    }
}

/// The default wake-up threshold: measured side by side on this 2-core
/// VM (docs/xdp.md, "The fabric"), 16 waiting decisions with the reader
/// looking every [`RING_POLL`] beat the kernel's adaptive rule at 64 in
/// flight (121k against 99k values/s, medians of 3) and at 1 in flight
/// (p50 43 us against 115 us with threaded NAPI at the entry).
pub const RING_WAKEUP_DEFAULT: u32 = 16;

/// How often a reader of a ring with a wake-up threshold looks without
/// being woken (records below the threshold wait at most this long).
pub const RING_POLL: std::time::Duration = std::time::Duration::from_micros(200);

/// `struct innet_paxos_counter_config`: the reference's configuration and
/// the UDP destination ports counted (one ring each), each with the kind
/// of role behind it (whose [`trust::allowed`] row applies to its frames).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub counter: VoteCounterConfig,
    pub ports: Vec<(u16, Kind)>,
    /// Decisions up through `counter_ring` (a [`DecisionRing`] reads
    /// them), the vote dropped; a full ring passes the DECIDED packet up
    /// instead (counted `ring_full`). `None`: every decision goes up as a
    /// packet.
    pub ring: Option<RingOpts>,
    /// Count decisions and drop them (`sunk`): the fabric-only benchmark,
    /// no host behind the counter. Overrides `ring`.
    pub sink: bool,
}

impl Config {
    /// Counting for `ports`, decisions up as packets.
    pub fn new(counter: VoteCounterConfig, ports: Vec<(u16, Kind)>) -> Config {
        Config { counter, ports, ring: None, sink: false }
    }

    fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(c::PAXOS_COUNTER_CONFIG_SIZE as usize);
        for v in [self.counter.acceptors, self.counter.quorum, self.counter.slots, self.ports.len()] {
            b.extend_from_slice(&(v as u32).to_ne_bytes());
        }
        for k in 0..MAX_PORTS {
            b.extend_from_slice(&self.ports.get(k).map_or(0, |p| p.0).to_ne_bytes());
        }
        for k in 0..MAX_PORTS {
            b.extend_from_slice(&self.ports.get(k).map_or([0; c::PAXOS_ALLOWED_LEN as usize], |p| allowed_row(p.1)));
        }
        let ring = match (self.sink, self.ring) {
            (true, _) => c::PAXOS_COUNTER_RING_SINK,
            (false, Some(_)) => c::PAXOS_COUNTER_RING_ON,
            (false, None) => c::PAXOS_COUNTER_RING_OFF,
        };
        b.extend_from_slice(&(ring as u32).to_ne_bytes());
        b.extend_from_slice(&self.ring.map_or(0, |r| r.wakeup).to_ne_bytes());
        assert_eq!(b.len(), c::PAXOS_COUNTER_CONFIG_SIZE as usize, "struct innet_paxos_counter_config layout");
        b
    }
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_ne_bytes(b[o..o + 4].try_into().expect("4 bytes"))
}
fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_ne_bytes(b[o..o + 2].try_into().expect("2 bytes"))
}

/// `struct innet_paxos_counter_slot` as the reference's slot (`None` if
/// it holds no instance).
fn decode_slot(b: &[u8]) -> Option<CounterSlot> {
    assert_eq!(b.len(), c::PAXOS_COUNTER_SLOT_SIZE as usize, "struct innet_paxos_counter_slot layout");
    let mut votes = [CountedVote::default(); COUNTER_MAX_ACCEPTORS];
    for (a, v) in votes.iter_mut().enumerate() {
        let o = c::PAXOS_COUNTER_OFF_VOTES as usize + a * c::PAXOS_COUNTED_VOTE_SIZE as usize;
        let value = Value { len: u32_at(b, o + 4), bytes: b[o + 8..o + 8 + VALUE_LEN].try_into().expect("value") };
        *v = CountedVote { vrnd: u16_at(b, o), value };
    }
    let slot = CounterSlot {
        valid: u32_at(b, 4) != 0,
        inst: u32_at(b, 8),
        decided: u32_at(b, 12) != 0,
        decided_rnd: u16_at(b, 16),
        voted: u32_at(b, 20),
        votes,
    };
    slot.valid.then_some(slot)
}

/// A loaded vote counter.
pub struct VoteCounterXdp {
    obj: BpfObject,
    config: Config,
}

impl VoteCounterXdp {
    /// Loads the object with a ring of `config.counter.slots` per port and
    /// writes the configuration.
    pub fn load(config: &Config) -> Result<VoteCounterXdp> {
        let k = &config.counter;
        if !k.slots.is_power_of_two() {
            bail!("ring size {} must be a power of two", k.slots);
        }
        if !(1..=COUNTER_MAX_ACCEPTORS).contains(&k.acceptors) || !(1..=k.acceptors).contains(&k.quorum) {
            bail!("{} acceptors (1..={COUNTER_MAX_ACCEPTORS}), quorum {}", k.acceptors, k.quorum);
        }
        if !(1..=MAX_PORTS).contains(&config.ports.len()) {
            bail!("{} ports, 1..={MAX_PORTS}", config.ports.len());
        }
        let entries = k.slots.checked_mul(config.ports.len()).filter(|n| *n <= u32::MAX as usize);
        let entries = entries.context("ring too large")? as u32;
        let ring = config.ring.unwrap_or_default().bytes;
        if !ring.is_power_of_two() || !(4096..=1 << 30).contains(&ring) {
            bail!("decision ring of {ring} bytes: a power of two from 4096 (a page) to 2^30");
        }
        let obj = BpfObject::load(OBJECT, &[(MAP_SLOTS, entries), (MAP_RING, ring as u32)])?;
        obj.write(MAP_CONFIG, 0, &config.encode())?;
        Ok(VoteCounterXdp { obj, config: config.clone() })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Writes who sends the counted ports' roles what: `by_addr` into
    /// `counter_senders`. Without senders every frame is from outside.
    pub fn set_senders(&self, by_addr: &HashMap<SenderKey, Sender>) -> Result<()> {
        write_senders(&self.obj, MAP_SENDERS, by_addr)
    }

    /// `--auth-key`: takes a frame to a counted port only if its Paxos
    /// header carries a MAC trailer that checks under one of `keys`
    /// (else dropped, counted `auth_refused`), and seals a decision it
    /// passes up as a packet with the first key (a record of the decision
    /// ring carries none: only the program writes the ring). `None`: off.
    pub fn set_auth(&self, keys: Option<&innet_core::auth::AuthKeys>) -> Result<()> {
        self.obj.write(MAP_AUTH, 0, &crate::auth::encode(keys))
    }

    /// Frames refused before they were counted, by reason.
    pub fn rejected(&self) -> Result<Vec<(&'static str, u64)>> {
        read_rejected(&self.obj.map(MAP_REJECTED)?)
    }

    /// [`VoteCounterXdp::test_run`], the frame received on `ifindex` of
    /// the calling thread's network namespace.
    pub fn test_run_on(&self, frame: &[u8], ifindex: u32) -> Result<(u32, Vec<u8>)> {
        self.obj.test_run_on(XDP_PROGRAM, frame, Some(ifindex))
    }

    /// [`VoteCounterXdp::test_run_tc`], the frame received on `ifindex`.
    pub fn test_run_tc_on(&self, frame: &[u8], ifindex: u32) -> Result<(u32, Vec<u8>)> {
        self.obj.test_run_skb_on(TC_PROGRAM, frame, ifindex)
    }

    /// Runs `frame` through the XDP entry once (`BPF_PROG_TEST_RUN`).
    pub fn test_run(&self, frame: &[u8]) -> Result<(u32, Vec<u8>)> {
        self.obj.test_run(XDP_PROGRAM, frame)
    }

    /// Runs `frame` through the tc entry once (`BPF_PROG_TEST_RUN`).
    pub fn test_run_tc(&self, frame: &[u8]) -> Result<(u32, Vec<u8>)> {
        self.obj.test_run(TC_PROGRAM, frame)
    }

    /// One run of `frame` through the XDP entry (or with `tc`, the tc
    /// entry), timed by the kernel ([`BpfObject::test_run_once_ns`]).
    pub fn test_run_once_ns(&self, frame: &[u8], tc: bool) -> Result<u64> {
        self.obj.test_run_once_ns(if tc { TC_PROGRAM } else { XDP_PROGRAM }, frame)
    }

    /// The XDP entry's (or with `tc`, the tc entry's) descriptor.
    pub fn program_fd(&self, tc: bool) -> Result<RawFd> {
        self.obj.program_fd(if tc { TC_PROGRAM } else { XDP_PROGRAM })
    }

    pub fn pin_maps(&mut self, dir: &Path) -> Result<()> {
        self.obj.pin_maps(dir, &PINNED_MAPS)
    }

    pub fn counters(&self) -> Result<Vec<(&'static str, u64)>> {
        read_counters(&self.obj.map(MAP_COUNTERS)?)
    }

    /// Every slot of port `k`'s ring, in slot order.
    pub fn slots(&self, k: usize) -> Result<Vec<Option<CounterSlot>>> {
        let m = self.obj.map(MAP_SLOTS)?;
        let n = self.config.counter.slots;
        (k * n..(k + 1) * n).map(|i| Ok(decode_slot(&lookup(&m, i as u32)?))).collect()
    }
}

/// One record of the decision ring: the counted port's index and the
/// DECIDED packet.
pub type Decision = (u32, [u8; innet_wire::paxos::PACKET_LEN]);

/// The decisions a vote counter hands up through its ring
/// ([`Config::ring`]), read in the end hosts' event loop as an
/// [`innet_live::Feed`]: each record becomes the DECIDED packet it stands
/// for, keyed by the counted port's index. The ring is mapped into this
/// process (libbpf's `ring_buffer`): reading a record is a few loads, and
/// one wake-up (epoll on the ring) covers every record waiting.
pub struct DecisionRing {
    rb: RingBuffer<'static>,
    got: Rc<RefCell<Vec<Decision>>>,
    /// How often the reader looks without being woken (a ring with a
    /// wake-up threshold: [`RING_POLL`]); `None`: only when woken.
    pub poll_every: Option<std::time::Duration>,
    /// Records whose size was not a decision's (none, unless the program
    /// and this reader disagree).
    pub malformed: Rc<RefCell<u64>>,
}

impl DecisionRing {
    /// Reads the ring of the vote counter whose maps are pinned under `dir`.
    pub fn open_pinned(dir: &Path) -> Result<DecisionRing> {
        DecisionRing::over(&pinned(dir, MAP_RING)?)
    }

    /// Reads the ring of a loaded counter.
    pub fn of(k: &VoteCounterXdp) -> Result<DecisionRing> {
        DecisionRing::over(&k.obj.map(MAP_RING)?)
    }

    fn over(map: &dyn MapCore) -> Result<DecisionRing> {
        let got = Rc::new(RefCell::new(Vec::with_capacity(4096)));
        let malformed = Rc::new(RefCell::new(0u64));
        let (g, bad) = (got.clone(), malformed.clone());
        let mut b = RingBufferBuilder::new();
        b.add(map, move |rec: &[u8]| {
            match (rec.get(..4), rec.get(c::PAXOS_DECISION_OFF_HDR as usize..DECISION_SIZE)) {
                (Some(k), Some(h)) if rec.len() == DECISION_SIZE => {
                    let key = u32::from_ne_bytes(k.try_into().expect("4 bytes"));
                    g.borrow_mut().push((key, h.try_into().expect("a header")));
                }
                _ => *bad.borrow_mut() += 1,
            }
            0
        })
        .context("read the decision ring")?;
        Ok(DecisionRing { rb: b.build().context("map the decision ring")?, got, malformed, poll_every: None })
    }

    /// Reads every waiting decision.
    pub fn take(&mut self) -> Vec<Decision> {
        self.rb.consume_raw();
        std::mem::take(&mut *self.got.borrow_mut())
    }
}

impl innet_live::Feed for DecisionRing {
    fn fd(&self) -> BorrowedFd<'_> {
        // SAFETY: the epoll descriptor lives as long as the ring buffer,
        // which `self` owns for the borrow's lifetime.
        unsafe { BorrowedFd::borrow_raw(self.rb.epoll_fd()) }
    }
    fn poll_every(&self) -> Option<std::time::Duration> {
        self.poll_every
    }
    fn drain(&mut self, each: &mut dyn FnMut(u32, &[u8])) -> usize {
        self.rb.consume_raw();
        let mut got = self.got.borrow_mut();
        for (k, h) in got.iter() {
            each(*k, h);
        }
        let n = got.len();
        got.clear();
        n
    }
}

/// Mean nanoseconds per vote of the counter in the kernel
/// (`BPF_PROG_TEST_RUN`, `repeat` runs of one vote through each entry:
/// after the first, every run is the path most votes take, a slot looked
/// up and locked, the vote compared and dropped). Keys: `vote_counter_xdp`,
/// `vote_counter_tc`.
pub fn cost_ns(repeat: u32) -> Result<Vec<(&'static str, f64)>> {
    use crate::frame::{udp_frame, Endpoint};
    use innet_wire::paxos::{MsgType, PaxosMsg, LEARNER_PORT};
    use std::net::Ipv4Addr;
    let from = Endpoint { mac: [2, 0, 0, 0, 0, 1], ip: Ipv4Addr::new(10, 97, 0, 2), port: 40_000 };
    let to = Endpoint { mac: [2, 0, 0, 0, 0, 2], ip: Ipv4Addr::new(10, 97, 0, 1), port: LEARNER_PORT };
    let mut m = PaxosMsg::new(MsgType::Phase2B);
    (m.inst, m.rnd, m.vrnd, m.acptid) = (7, 1, 1, 0);
    m.value = Value::new(b"value").expect("short");
    let frame = udp_frame(from, to, &m.encode(), 0);
    let cfg = Config::new(VoteCounterConfig::new(3), vec![(LEARNER_PORT, Kind::Learner)]);
    // The vote from acceptor 0 (BPF_PROG_TEST_RUN receives on lo).
    let acceptor = trust::sender_of(innet_paxos::deploy::PaxosRole::Acceptor { id: 0 });
    let senders =
        HashMap::from([(SenderKey { ifindex: crate::paxos::LOOPBACK_IFINDEX, ip: from.ip, port: 0 }, acceptor)]);
    let mut out = vec![];
    for (key, program) in [("vote_counter_xdp", XDP_PROGRAM), ("vote_counter_tc", TC_PROGRAM)] {
        let k = VoteCounterXdp::load(&cfg)?;
        k.set_senders(&senders)?;
        out.push((key, k.obj.test_run_repeat(program, &frame, repeat)?.as_nanos() as f64));
        // The path measured is the counter's, not a refusal.
        crate::paxos::ensure_admitted(&k.rejected()?)?;
    }
    Ok(out)
}

/// The counters in the reference's order, then the BPF-only ones.
pub fn read_counters(m: &impl MapCore) -> Result<Vec<(&'static str, u64)>> {
    let at = |i: u32| -> Result<u64> { Ok(u64::from_ne_bytes(lookup(m, i)?[..8].try_into().expect("u64"))) };
    let mut v = Vec::new();
    for (i, name) in COUNTER_NAMES.iter().enumerate() {
        v.push((*name, at(i as u32)?));
    }
    for (name, i) in BPF_COUNTERS {
        v.push((name, at(i)?));
    }
    Ok(v)
}

/// One counter of a vote counter whose maps were pinned under `dir`, read
/// with one map lookup (the fabric-only benchmark polls `sunk`).
pub struct PinnedCounter {
    map: libbpf_rs::MapHandle,
    index: u32,
}

impl PinnedCounter {
    pub fn open(dir: &Path, name: &str) -> Result<PinnedCounter> {
        let index = COUNTER_NAMES
            .iter()
            .position(|n| *n == name)
            .map(|i| i as u32)
            .or_else(|| BPF_COUNTERS.iter().find(|(n, _)| *n == name).map(|(_, i)| *i))
            .with_context(|| format!("no vote counter counter named {name}"))?;
        Ok(PinnedCounter { map: pinned(dir, MAP_COUNTERS)?, index })
    }
    pub fn get(&self) -> u64 {
        lookup(&self.map, self.index).map_or(0, |b| u64::from_ne_bytes(b[..8].try_into().expect("u64")))
    }
}

/// Counters of a vote counter whose maps were pinned under `dir`.
pub fn pinned_counters(dir: &Path) -> Result<Vec<(&'static str, u64)>> {
    read_counters(&pinned(dir, MAP_COUNTERS)?)
}

/// Rejections of a vote counter whose maps were pinned under `dir`, by reason.
pub fn pinned_rejected(dir: &Path) -> Result<Vec<(&'static str, u64)>> {
    read_rejected(&pinned(dir, MAP_REJECTED)?)
}

/// Why the vote counter cannot be loaded here, if it cannot.
pub fn unavailable() -> Option<String> {
    let euid = crate::object::euid();
    if euid != 0 {
        return Some(format!("not root (euid {euid}): loading BPF programs needs CAP_BPF and CAP_NET_ADMIN"));
    }
    let cfg = Config::new(VoteCounterConfig { slots: 4, ..VoteCounterConfig::new(3) }, vec![(1, Kind::Learner)]);
    match VoteCounterXdp::load(&cfg) {
        Ok(_) => None,
        Err(e) => Some(format!("the kernel refused the BPF program: {e:#}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use innet_core::Counters;

    #[test]
    fn counter_names_match_the_reference_in_order() {
        let k = innet_paxos::VoteCounter::new(VoteCounterConfig::new(3));
        let names: Vec<&str> = k.counters().into_iter().map(|(n, _)| n).collect();
        assert_eq!(&COUNTER_NAMES[..], &names[..]);
    }

    #[test]
    fn counter_constants_name_their_counters() {
        use crate::layout::assert_counter_indexes;
        let mut all = [""; c::PAXOS_COUNTER_CTR_COUNT as usize];
        all[..COUNTER_NAMES.len()].copy_from_slice(&COUNTER_NAMES);
        for (name, i) in BPF_COUNTERS {
            all[i as usize] = name;
        }
        let checked = assert_counter_indexes("PAXOS_COUNTER_CTR_", None, &all);
        assert_eq!(checked, COUNTER_NAMES.len() + BPF_COUNTERS.len());
    }

    #[test]
    fn the_object_has_the_maps_named_here_sized_by_the_header() {
        let n = |x: i64| Some(x as u32);
        crate::object::assert_maps(
            OBJECT,
            &[
                (MAP_CONFIG, Some(1), n(c::PAXOS_COUNTER_CONFIG_SIZE)),
                (MAP_SLOTS, n(c::PAXOS_COUNTER_SLOTS_DEFAULT), n(c::PAXOS_COUNTER_SLOT_SIZE)),
                (MAP_COUNTERS, n(c::PAXOS_COUNTER_CTR_COUNT), Some(8)),
                (MAP_SENDERS, n(c::PAXOS_MAX_SENDERS), n(c::PAXOS_SENDER_SIZE)),
                (MAP_REJECTED, n(c::PAXOS_REJECT_COUNT), Some(8)),
                (MAP_RING, n(c::PAXOS_COUNTER_RING_BYTES_DEFAULT), Some(0)),
                (MAP_AUTH, Some(1), n(c::AUTH_SIZE)),
            ],
        );
    }
}
