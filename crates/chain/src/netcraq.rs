//! The NetCRAQ node: the data-plane program of every chain switch
//! (Sagkriotis and Pezaros 2022, section III-A, Algorithm 1).
//!
//! State is the paper's `objects_store`, `OBJECTS x VERSIONS` register cells
//! (line 1), and one index per object (lines 2-3; the paper keeps a read and
//! a write index, which in its algorithm always agree, so we keep one): the
//! number of *dirty* versions the object holds. Cell 0 of an object is its
//! clean version; cells `1..=dirty` are the versions written since, oldest
//! first. An object is clean iff its index is 0 (line 7).
//!
//! * READ (lines 4-14): a clean object is answered by any node, back to the
//!   asker (`Reflect`). A dirty one is forwarded to the tail (`PORT_TAIL`).
//!   The tail commits writes as it receives them, so it is never dirty and
//!   answers every read it gets, to the packet's origin (the reader may have
//!   asked another node).
//! * WRITE (lines 17-36): a non-tail node appends the value as a new dirty
//!   version and forwards the write to its successor (`PORT_NEXT`). The tail
//!   makes it the clean version and multicasts an ACK (`GROUP_ACK`: the other
//!   nodes and the writer, whose write reply it is).
//! * When an object has no free version cell (line 25) the paper drops the
//!   write; we rewrite it into `WRITE_REFUSED` and send it to the writer, and
//!   count it. The same happens while the control plane pauses writes.
//! * ACK (lines 39-40): the ACKed version becomes clean and every older one
//!   is dropped. Unlike the paper, which resets the object's index, versions
//!   written *after* the ACKed one stay dirty: a node that pipelines writes
//!   would otherwise call an object clean while a newer write is on its way
//!   to the tail, and answer reads with a value the tail has already
//!   replaced. The ACKed version is found by value (the format carries no
//!   version number; the oldest equal value is taken). An ACK matching no
//!   dirty version is stale (its version was superseded) and is ignored.
//!
//! **Who may send what** (the trust rules; `docs/chain.md`): a WRITE is
//! taken only from the node's predecessor in the chain, or, at the head,
//! from a sender that is not a chain node (a client); an ACK only from the
//! tail, which multicasts it to every other member. READs are taken from
//! anyone (they change nothing; a dirty read reaches the tail from any
//! node). The runtime says who sent a packet ([`Ingress::Peer`] with the
//! sender's chain index, from its deployment's address book); the control
//! plane writes the predecessor and the tail with the role. Anything else
//! is dropped and counted by reason.
//!
//! This relies on FIFO links between chain nodes, as CRAQ (over TCP) does:
//! writes reach every node in the head's order and ACKs arrive in the tail's
//! commit order. See `docs/chain.md`.

use innet_core::{Counters, DataPlane, Ingress, Verdict};
use innet_wire::netcraq::{CraqPacket, DecodeError, Key, KvOp, Value};

use crate::ports::{GROUP_ACK, PORT_NEXT, PORT_TAIL};
use crate::Role;

/// Objects a node stores by default (the paper's `k`).
pub const OBJECTS_DEFAULT: usize = 1024;
/// Most objects a node may be configured with (a topology's `objects`):
/// `objects * versions` values of 16 bytes each, 1 GiB at most.
pub const OBJECTS_MAX: usize = 1 << 20;
/// Register cells per object by default (the paper's `n`): the clean
/// version and up to `VERSIONS_DEFAULT - 1` dirty ones.
pub const VERSIONS_DEFAULT: usize = 8;
/// Most cells per object (the index is a u8).
pub const VERSIONS_MAX: usize = 64;

const _: () = assert!(VERSIONS_DEFAULT >= 2 && VERSIONS_DEFAULT <= VERSIONS_MAX);

/// Every decision is counted.
#[derive(Clone, Default, Debug, PartialEq, Eq)]
pub struct CraqCounters {
    pub reads_clean: u64,
    pub reads_to_tail: u64,
    pub reads_at_tail: u64,
    /// Writes stored as a new dirty version (paper Figure 5, right axis).
    pub writes_dirty: u64,
    pub writes_committed_at_tail: u64,
    pub writes_refused_full: u64,
    pub writes_refused_paused: u64,
    pub acks_applied: u64,
    pub acks_stale: u64,
    pub dropped_unconfigured: u64,
    pub dropped_unexpected: u64,
    pub dropped_key_out_of_range: u64,
    /// A WRITE from a sender other than the predecessor (or, at the head,
    /// from another chain node).
    pub dropped_write_not_from_prev: u64,
    /// An ACK from a sender other than the tail.
    pub dropped_ack_not_from_tail: u64,
    pub dropped_malformed: [u64; DecodeError::ALL.len()],
}

impl Counters for CraqCounters {
    fn counters(&self) -> Vec<(&'static str, u64)> {
        let mut v = vec![
            ("reads_clean", self.reads_clean),
            ("reads_to_tail", self.reads_to_tail),
            ("reads_at_tail", self.reads_at_tail),
            ("writes_dirty", self.writes_dirty),
            ("writes_committed_at_tail", self.writes_committed_at_tail),
            ("writes_refused_full", self.writes_refused_full),
            ("writes_refused_paused", self.writes_refused_paused),
            ("acks_applied", self.acks_applied),
            ("acks_stale", self.acks_stale),
            ("dropped_unconfigured", self.dropped_unconfigured),
            ("dropped_unexpected", self.dropped_unexpected),
            ("dropped_key_out_of_range", self.dropped_key_out_of_range),
            ("dropped_write_not_from_prev", self.dropped_write_not_from_prev),
            ("dropped_ack_not_from_tail", self.dropped_ack_not_from_tail),
        ];
        for e in DecodeError::ALL {
            let name = match e {
                DecodeError::Truncated => "dropped_malformed_truncated",
                DecodeError::UnknownOp => "dropped_malformed_unknown_op",
            };
            v.push((name, self.dropped_malformed[e.index()]));
        }
        v
    }
}

/// A NetCRAQ chain node.
#[derive(Clone, Debug)]
pub struct CraqNode {
    versions: usize,
    /// `objects * versions` cells: object `k`'s cells are
    /// `k * versions .. (k + 1) * versions` (Algorithm 1 line 1).
    objects_store: Vec<Value>,
    /// Dirty versions per object (Algorithm 1 lines 2-3).
    index: Vec<u8>,
    /// Written by the control plane; `None` (a fresh or restarted switch)
    /// drops everything.
    role: Option<Role>,
    /// The predecessor's and the tail's chain indexes (control plane).
    prev: Option<u16>,
    tail: Option<u16>,
    writes_paused: bool,
    pub counters: CraqCounters,
}

impl CraqNode {
    pub fn new(objects: usize, versions: usize) -> CraqNode {
        assert!(objects > 0, "at least one object");
        assert!((2..=VERSIONS_MAX).contains(&versions), "versions in 2..={VERSIONS_MAX}");
        CraqNode {
            versions,
            objects_store: vec![Value::ZERO; objects * versions],
            index: vec![0; objects],
            role: None,
            prev: None,
            tail: None,
            writes_paused: false,
            counters: CraqCounters::default(),
        }
    }

    pub fn objects(&self) -> usize {
        debug_assert_eq!(self.objects_store.len(), self.index.len() * self.versions, "versions cells per object");
        self.index.len()
    }

    /// Object `key`'s invariants: its dirty versions fit its cells, and
    /// the tail holds none (it commits on receipt).
    fn object_holds(&self, key: usize) -> bool {
        let dirty = self.index[key] as usize;
        dirty < self.versions && (dirty == 0 || !self.role.is_some_and(Role::is_tail))
    }

    pub fn role(&self) -> Option<Role> {
        self.role
    }

    /// Control plane: the node's role. A node that becomes the tail makes
    /// each object's newest version its clean one (CRAQ: the new tail's
    /// latest writes are the committed ones).
    pub fn set_role(&mut self, role: Option<Role>) {
        let becomes_tail = role.is_some_and(Role::is_tail) && !self.role.is_some_and(Role::is_tail);
        if becomes_tail {
            for k in 0..self.objects() {
                let latest = self.latest(k);
                self.objects_store[k * self.versions] = latest;
                self.index[k] = 0;
            }
        }
        self.role = role;
        debug_assert!(!becomes_tail || self.index.iter().all(|&i| i == 0), "a new tail holds no dirty version");
    }

    /// Control plane: the chain indexes of the predecessor (whose WRITEs
    /// this node takes) and of the tail (whose ACKs it takes).
    pub fn set_peers(&mut self, prev: Option<u16>, tail: Option<u16>) {
        debug_assert!(prev.is_none() || prev != tail, "the tail is after every predecessor, never one");
        self.prev = prev;
        self.tail = tail;
    }

    pub fn peers(&self) -> (Option<u16>, Option<u16>) {
        (self.prev, self.tail)
    }

    /// Control plane: refuse writes (while the chain is being recovered).
    pub fn set_writes_paused(&mut self, paused: bool) {
        self.writes_paused = paused;
        debug_assert_eq!(self.writes_paused(), paused);
    }

    pub fn writes_paused(&self) -> bool {
        self.writes_paused
    }

    /// Control plane register read: every object's clean version.
    pub fn snapshot(&self) -> Vec<Value> {
        debug_assert!((0..self.objects()).all(|k| self.object_holds(k)), "registers consistent when copied");
        (0..self.objects()).map(|k| self.objects_store[k * self.versions]).collect()
    }

    /// Control plane register write: `values` become the clean versions and
    /// every dirty version is dropped (recovery, section III-C).
    pub fn load(&mut self, values: &[Value]) {
        assert_eq!(values.len(), self.objects(), "a snapshot of the same size");
        for (k, v) in values.iter().enumerate() {
            self.objects_store[k * self.versions] = *v;
            self.index[k] = 0;
        }
        debug_assert_eq!(self.snapshot(), values, "a loaded snapshot reads back");
    }

    /// The newest version of `key` (clean or dirty), for tests and tools.
    pub fn latest(&self, key: usize) -> Value {
        debug_assert!(self.object_holds(key));
        self.objects_store[key * self.versions + self.index[key] as usize]
    }

    /// Dirty versions `key` holds now.
    pub fn dirty(&self, key: usize) -> usize {
        debug_assert!(self.object_holds(key));
        self.index[key] as usize
    }

    /// Every register cell of `key` (clean, dirty, and stale ones past the
    /// index), for comparing with another implementation's registers.
    pub fn cells(&self, key: usize) -> &[Value] {
        debug_assert!(key < self.objects());
        &self.objects_store[key * self.versions..(key + 1) * self.versions]
    }

    /// Objects whose version cells are all in use.
    pub fn full_objects(&self) -> usize {
        debug_assert!(self.index.iter().all(|&i| (i as usize) < self.versions), "dirty versions fit the cells");
        self.index.iter().filter(|i| **i as usize + 1 >= self.versions).count()
    }

    fn cell(&self, key: usize, i: usize) -> usize {
        debug_assert!(i < self.versions, "cell {i} of an object of {} cells", self.versions);
        key * self.versions + i
    }

    fn read(&mut self, p: &mut CraqPacket, role: Role, key: usize) -> Verdict {
        if role.is_tail() {
            // The tail commits on receipt: its cell 0 is the latest write.
            debug_assert_eq!(self.index[key], 0, "the tail is never dirty");
            self.counters.reads_at_tail += 1;
            p.set_value(self.latest(key));
            p.set_op(KvOp::ReadReply);
            return Verdict::Origin;
        }
        if self.index[key] == 0 {
            self.counters.reads_clean += 1;
            p.set_value(self.objects_store[self.cell(key, 0)]);
            p.set_op(KvOp::ReadReply);
            Verdict::Reflect
        } else {
            self.counters.reads_to_tail += 1;
            Verdict::Port { port: PORT_TAIL }
        }
    }

    fn refuse(p: &mut CraqPacket) -> Verdict {
        p.set_op(KvOp::WriteRefused);
        Verdict::Origin
    }

    fn write(&mut self, p: &mut CraqPacket, role: Role, key: usize) -> Verdict {
        if self.writes_paused {
            self.counters.writes_refused_paused += 1;
            return Self::refuse(p);
        }
        if role.is_tail() {
            let c = self.cell(key, 0);
            self.objects_store[c] = p.value();
            self.index[key] = 0;
            self.counters.writes_committed_at_tail += 1;
            p.set_op(KvOp::Ack);
            return Verdict::Multicast { group: GROUP_ACK };
        }
        let next = self.index[key] as usize + 1;
        if next >= self.versions {
            self.counters.writes_refused_full += 1;
            return Self::refuse(p);
        }
        let c = self.cell(key, next);
        self.objects_store[c] = p.value();
        self.index[key] = next as u8;
        self.counters.writes_dirty += 1;
        debug_assert!(self.object_holds(key) && self.latest(key) == p.value(), "the write is the newest version");
        Verdict::Port { port: PORT_NEXT }
    }

    fn ack(&mut self, value: Value, key: usize) -> Verdict {
        let dirty = self.index[key] as usize;
        // Bounded by VERSIONS_MAX, like a switch's unrolled compare.
        let found = (1..=dirty).find(|&i| self.objects_store[self.cell(key, i)] == value);
        match found {
            Some(i) => {
                let base = self.cell(key, 0);
                self.objects_store.copy_within(base + i..base + dirty + 1, base);
                self.index[key] = (dirty - i) as u8;
                self.counters.acks_applied += 1;
                debug_assert_eq!(self.objects_store[base], value, "the ACKed version becomes the clean one");
            }
            None => self.counters.acks_stale += 1,
        }
        debug_assert!(self.index[key] as usize <= dirty && self.object_holds(key), "an ACK never adds versions");
        Verdict::Drop
    }
}

/// A WRITE arriving on `ingress` may be taken by a node of `role` whose
/// predecessor is `prev`: from the predecessor, or at the head from a
/// sender that is not a chain node. Shared with NetChain.
pub(crate) fn write_trusted(role: Role, prev: Option<u16>, ingress: Ingress) -> bool {
    debug_assert!(!role.is_head() || prev.is_none(), "a head has no predecessor: it takes writes from clients only");
    match ingress {
        Ingress::Peer(n) => prev == Some(n),
        Ingress::Upstream | Ingress::Downstream => role.is_head(),
    }
}

impl DataPlane for CraqNode {
    /// A packet from a sender that is not a chain node (see
    /// [`DataPlane::process_from`]).
    fn process(&mut self, packet: &mut [u8]) -> Verdict {
        self.process_from(packet, Ingress::Downstream).0
    }

    fn process_from(&mut self, packet: &mut [u8], ingress: Ingress) -> (Verdict, usize) {
        let len = packet.len();
        (self.process_at(packet, ingress), len)
    }
}

impl CraqNode {
    fn process_at(&mut self, packet: &mut [u8], ingress: Ingress) -> Verdict {
        let mut p = match CraqPacket::parse(packet) {
            Ok(p) => p,
            Err(e) => {
                self.counters.dropped_malformed[e.index()] += 1;
                return Verdict::Drop;
            }
        };
        let Some(role) = self.role else {
            self.counters.dropped_unconfigured += 1;
            return Verdict::Drop;
        };
        let key: Key = p.key();
        if key as usize >= self.objects() {
            self.counters.dropped_key_out_of_range += 1;
            return Verdict::Drop;
        }
        let key = key as usize;
        debug_assert!(self.object_holds(key));
        match p.op() {
            KvOp::Read => self.read(&mut p, role, key),
            KvOp::Write if !write_trusted(role, self.prev, ingress) => {
                self.counters.dropped_write_not_from_prev += 1;
                Verdict::Drop
            }
            KvOp::Write => self.write(&mut p, role, key),
            KvOp::Ack if !role.is_tail() && !matches!(ingress, Ingress::Peer(n) if self.tail == Some(n)) => {
                self.counters.dropped_ack_not_from_tail += 1;
                Verdict::Drop
            }
            KvOp::Ack if !role.is_tail() => self.ack(p.value(), key),
            KvOp::Ack | KvOp::ReadReply | KvOp::WriteReply | KvOp::WriteRefused => {
                self.counters.dropped_unexpected += 1;
                Verdict::Drop
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use innet_wire::netcraq::CraqMsg;

    /// The chain indexes of the predecessor and the tail in these tests.
    const PREV: u16 = 0;
    const TAIL: u16 = 9;

    fn node(role: Role) -> CraqNode {
        let mut n = CraqNode::new(16, 4);
        n.set_role(Some(role));
        n.set_peers((!role.is_head()).then_some(PREV), Some(TAIL));
        n
    }

    /// Runs `m` as the chain delivers it: writes from the predecessor (a
    /// client's at the head), ACKs from the tail, reads from a client.
    fn run(n: &mut CraqNode, m: CraqMsg) -> (Verdict, CraqMsg) {
        let ingress = match m.op {
            KvOp::Write if !n.role().is_some_and(Role::is_head) => Ingress::Peer(PREV),
            KvOp::Ack => Ingress::Peer(TAIL),
            _ => Ingress::Downstream,
        };
        let mut b = m.encode();
        let (v, _) = n.process_from(&mut b, ingress);
        (v, CraqMsg::decode(&b).unwrap())
    }

    fn val(i: u64) -> Value {
        Value::from_counter(i)
    }

    #[test]
    fn clean_read_is_answered_by_any_node() {
        // Algorithm 1 lines 7-9: read index 0 means clean; reply here.
        for role in [Role::Head, Role::Replica] {
            let mut n = node(role);
            n.load(&[val(5); 16]);
            let (v, m) = run(&mut n, CraqMsg::read(3));
            assert_eq!(v, Verdict::Reflect);
            assert_eq!((m.op, m.key, m.value), (KvOp::ReadReply, 3, val(5)));
        }
    }

    #[test]
    fn dirty_read_goes_to_the_tail_and_the_tail_answers_the_origin() {
        // Lines 10-14: only the tail answers a dirty object.
        let mut head = node(Role::Head);
        let (v, _) = run(&mut head, CraqMsg::write(2, val(1)));
        assert_eq!(v, Verdict::Port { port: PORT_NEXT }, "line 30: forward_to_tail");
        let (v, m) = run(&mut head, CraqMsg::read(2));
        assert_eq!((v, m.op), (Verdict::Port { port: PORT_TAIL }, KvOp::Read));
        let mut tail = node(Role::Tail);
        let (v, _) = run(&mut tail, CraqMsg::write(2, val(1)));
        assert_eq!(v, Verdict::Multicast { group: GROUP_ACK });
        let (v, m) = run(&mut tail, CraqMsg::read(2));
        assert_eq!((v, m.op, m.value), (Verdict::Origin, KvOp::ReadReply, val(1)));
    }

    #[test]
    fn the_tail_commits_and_multicasts_an_ack_that_cleans_the_others() {
        // Lines 33-36 at the tail, 39-40 elsewhere.
        let mut tail = node(Role::Tail);
        let (v, m) = run(&mut tail, CraqMsg::write(1, val(7)));
        assert_eq!((v, m.op, m.value), (Verdict::Multicast { group: GROUP_ACK }, KvOp::Ack, val(7)));
        assert_eq!((tail.dirty(1), tail.latest(1)), (0, val(7)));
        let mut mid = node(Role::Replica);
        run(&mut mid, CraqMsg::write(1, val(7)));
        assert_eq!(mid.dirty(1), 1);
        let (v, _) = run(&mut mid, CraqMsg { op: KvOp::Ack, key: 1, value: val(7) });
        assert_eq!(v, Verdict::Drop);
        assert_eq!((mid.dirty(1), mid.snapshot()[1]), (0, val(7)));
        let (v, m) = run(&mut mid, CraqMsg::read(1));
        assert_eq!((v, m.value), (Verdict::Reflect, val(7)));
    }

    #[test]
    fn an_ack_keeps_versions_written_after_it() {
        // Deviation from line 40: pipelined writes stay dirty until their
        // own ACK, so no node calls an object clean while a newer write is
        // on its way to the tail.
        let mut head = node(Role::Head);
        for i in 1..=3 {
            run(&mut head, CraqMsg::write(0, val(i)));
        }
        assert_eq!(head.dirty(0), 3);
        run(&mut head, CraqMsg { op: KvOp::Ack, key: 0, value: val(2) });
        assert_eq!((head.snapshot()[0], head.dirty(0), head.latest(0)), (val(2), 1, val(3)));
        let (v, _) = run(&mut head, CraqMsg::read(0));
        assert_eq!(v, Verdict::Port { port: PORT_TAIL }, "3 is still dirty");
        // A stale ACK (1 was superseded by 2) changes nothing.
        run(&mut head, CraqMsg { op: KvOp::Ack, key: 0, value: val(1) });
        assert_eq!((head.snapshot()[0], head.dirty(0), head.counters.acks_stale), (val(2), 1, 1));
        run(&mut head, CraqMsg { op: KvOp::Ack, key: 0, value: val(3) });
        assert_eq!((head.snapshot()[0], head.dirty(0)), (val(3), 0));
    }

    #[test]
    fn a_full_object_refuses_the_write_explicitly() {
        // Line 25-26 drops it; we answer WRITE_REFUSED to the writer.
        let mut head = node(Role::Head);
        for i in 1..=3 {
            assert_eq!(run(&mut head, CraqMsg::write(4, val(i))).0, Verdict::Port { port: PORT_NEXT });
        }
        let (v, m) = run(&mut head, CraqMsg::write(4, val(9)));
        assert_eq!((v, m.op, m.value), (Verdict::Origin, KvOp::WriteRefused, val(9)));
        assert_eq!((head.counters.writes_refused_full, head.dirty(4), head.latest(4)), (1, 3, val(3)));
    }

    #[test]
    fn paused_writes_are_refused_and_unconfigured_nodes_drop() {
        let mut head = node(Role::Head);
        head.set_writes_paused(true);
        let (v, m) = run(&mut head, CraqMsg::write(0, val(1)));
        assert_eq!((v, m.op), (Verdict::Origin, KvOp::WriteRefused));
        assert_eq!(head.dirty(0), 0);
        let mut fresh = CraqNode::new(4, 2);
        assert_eq!(run(&mut fresh, CraqMsg::read(0)).0, Verdict::Drop);
        assert_eq!(fresh.counters.dropped_unconfigured, 1);
        assert_eq!(run(&mut head, CraqMsg::read(99)).0, Verdict::Drop, "key beyond objects_store");
        let mut junk = [9u8; 21];
        assert_eq!(head.process(&mut junk), Verdict::Drop);
        assert_eq!(head.counters.dropped_malformed[DecodeError::UnknownOp.index()], 1);
    }

    #[test]
    fn writes_come_only_from_the_predecessor_and_acks_only_from_the_tail() {
        // The attack: a write sent straight to the tail (or a middle node)
        // is committed there but not at the nodes before it: they disagree.
        let forged = CraqMsg::write(3, val(666));
        for role in [Role::Replica, Role::Tail] {
            let mut n = node(role);
            for ingress in [Ingress::Downstream, Ingress::Upstream, Ingress::Peer(TAIL), Ingress::Peer(5)] {
                let mut b = forged.encode();
                assert_eq!(n.process_from(&mut b, ingress).0, Verdict::Drop, "{role:?} from {ingress:?}");
            }
            assert_eq!((n.counters.dropped_write_not_from_prev, n.latest(3), n.dirty(3)), (4, Value::ZERO, 0));
            let (v, _) = run(&mut n, forged);
            assert_ne!(v, Verdict::Drop, "{role:?} takes its predecessor's write");
        }
        let mut head = node(Role::Head);
        let mut b = forged.encode();
        assert_eq!(head.process_from(&mut b, Ingress::Peer(PREV)).0, Verdict::Drop, "no chain node writes to the head");
        assert_eq!(run(&mut head, forged).0, Verdict::Port { port: PORT_NEXT }, "a client's write");
        // A forged ACK would make the head call a version clean before the
        // tail committed it.
        for ingress in [Ingress::Downstream, Ingress::Peer(PREV)] {
            let mut b = CraqMsg { op: KvOp::Ack, key: 3, value: val(666) }.encode();
            assert_eq!(head.process_from(&mut b, ingress).0, Verdict::Drop);
        }
        assert_eq!((head.counters.dropped_ack_not_from_tail, head.dirty(3)), (2, 1));
        run(&mut head, CraqMsg { op: KvOp::Ack, key: 3, value: val(666) });
        assert_eq!((head.dirty(3), head.snapshot()[3]), (0, val(666)));
    }

    #[test]
    fn a_node_promoted_to_tail_commits_its_latest_versions() {
        // Section III-C: the tail's predecessor replaces a failed tail; the
        // writes it has seen are the committed ones.
        let mut mid = node(Role::Replica);
        run(&mut mid, CraqMsg::write(1, val(1)));
        run(&mut mid, CraqMsg::write(1, val(2)));
        mid.set_role(Some(Role::Tail));
        assert_eq!((mid.dirty(1), mid.snapshot()[1]), (0, val(2)));
        let (v, m) = run(&mut mid, CraqMsg::read(1));
        assert_eq!((v, m.value), (Verdict::Origin, val(2)));
    }
}
