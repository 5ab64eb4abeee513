//! The NetChain node (Jin et al., NSDI 2018, sections 4-5), the baseline the
//! NetCRAQ paper compares against.
//!
//! The client writes the chain into the packet: a stack of node addresses.
//! Each node handles the packet addressed to it, pops its own address and
//! sends the packet to the next address (`neighbours`: address -> port, a
//! table the control plane writes). The last node, the tail, answers the
//! packet's origin as soon as it has popped itself, whatever addresses
//! follow (the reference's client sends reads to the tail with the rest
//! of the chain reversed behind it); a write reply carries no stack.
//!
//! * WRITE_REQ: the head assigns the key's next sequence number; every node
//!   applies a write only if its sequence is newer than the one it holds
//!   and passes it on; an older one (a reordered or duplicated copy) is
//!   dropped (NetChain section 4.2: the sequence number "mitigates
//!   out-of-order deliveries"), so the tail never acknowledges a write it
//!   did not apply. The tail answers WRITE_REPLY.
//! * READ_REQ: passed on untouched; the tail answers READ_REPLY with its
//!   value and sequence (only the tail answers reads, section 2).
//! * Sequence numbers are 16 bits (the NetCRAQ paper, section II-B2, notes
//!   that this allows only 65,536 writes per key). We compare them as serial
//!   numbers (RFC 1982): `a` is newer than `b` iff `a - b mod 2^16` is in
//!   `1..2^15`. So a key keeps working past 65,535 writes, provided no
//!   replica falls 32,768 writes behind another. The chain's order (and
//!   recovery by copying state) rules that out only if every write a node
//!   applies goes on through all the nodes after it: a node applies (the
//!   head: sequences) a write only if the rest of its stack, without the
//!   addresses of removed nodes, is exactly the chain's members after this
//!   node (`successors`, from the control plane), ending at the tail.
//!   Before, writes whose stack ended at the head or at a middle node, or
//!   skipped a member, advanced the head's sequence without reaching the
//!   tail; after 32,768 of them the tail took the next real write for an
//!   old one and acknowledged it unapplied (issue 21). Such a write is now
//!   dropped before any register changes and counted (`dropped_not_tail`,
//!   `dropped_no_route`, `dropped_write_off_chain`). Only loss between the
//!   nodes can still let the head run ahead, and a node drops, never passes
//!   on or acknowledges, a write it takes for an old one.
//! * Failure handling (section 5): the control plane maps a removed node's
//!   address to `Hop::Skip`: a node pops it too and sends the packet on to
//!   the address after it.
//! * A node answers as tail only if the control plane made it the tail; a
//!   packet whose stack ends at another node (a client's stale view of the
//!   chain) is dropped and the client retries.
//!
//! * Trust (`docs/chain.md`): a WRITE_REQ is taken only from the node's
//!   predecessor in the chain, or, at the head, from a sender that is not a
//!   chain node (a client), whose sequence number the head overwrites. So
//!   no sequence number from outside the chain is ever applied, and a
//!   write goes on only along the chain (above). READ_REQs are taken from
//!   anyone and may take any stack (they change nothing). Rejections are
//!   counted (`dropped_write_not_from_prev`, `dropped_write_off_chain`).
//!
//! NetChain's 16-byte keys map to register indices through an exact-match
//! table (`keys`), filled by the control plane; registers hold a value and a
//! sequence number per index.

use innet_core::{Counters, DataPlane, Ingress, Verdict};
use innet_wire::netchain::{Addr, ChainKey, DecodeError, NcOp, NcPacket, Value, MAX_CHAIN_NODES};

use crate::Role;

/// Keys (register slots) a node stores by default.
pub const KEYS_DEFAULT: usize = 1024;
/// Probes of the key table (a bounded loop).
pub const KEY_PROBES: usize = 8;
/// Entries of the neighbour table.
pub const NEIGHBOURS_MAX: usize = 2 * MAX_CHAIN_NODES;

/// What a node does with a packet whose next address is a given node.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Hop {
    /// Send it out of this port.
    Port(u16),
    /// The node was removed from the chain: pop its address too.
    Skip,
}

/// `a` is a newer sequence number than `b` (serial-number arithmetic).
pub fn seq_newer(a: u16, b: u16) -> bool {
    let d = a.wrapping_sub(b);
    let newer = d != 0 && d < 0x8000;
    debug_assert!(!(newer && b.wrapping_sub(a) != 0 && b.wrapping_sub(a) < 0x8000), "both newer than the other");
    newer
}

#[derive(Clone, Default, Debug, PartialEq, Eq)]
pub struct NcCounters {
    pub writes_sequenced: u64,
    pub writes_applied: u64,
    pub writes_stale: u64,
    pub writes_dropped_paused: u64,
    pub reads_answered: u64,
    pub forwarded: u64,
    pub dropped_unconfigured: u64,
    pub dropped_not_for_me: u64,
    pub dropped_unknown_key: u64,
    pub dropped_no_route: u64,
    pub dropped_not_tail: u64,
    pub dropped_unexpected: u64,
    /// A WRITE_REQ from a sender other than the predecessor (or, at the
    /// head, from another chain node).
    pub dropped_write_not_from_prev: u64,
    /// A WRITE_REQ whose stack after this node is not the chain after this
    /// node: it would not traverse the chain to the tail.
    pub dropped_write_off_chain: u64,
    pub dropped_malformed: [u64; DecodeError::ALL.len()],
}

impl Counters for NcCounters {
    fn counters(&self) -> Vec<(&'static str, u64)> {
        let mut v = vec![
            ("writes_sequenced", self.writes_sequenced),
            ("writes_applied", self.writes_applied),
            ("writes_stale", self.writes_stale),
            ("writes_dropped_paused", self.writes_dropped_paused),
            ("reads_answered", self.reads_answered),
            ("forwarded", self.forwarded),
            ("dropped_unconfigured", self.dropped_unconfigured),
            ("dropped_not_for_me", self.dropped_not_for_me),
            ("dropped_unknown_key", self.dropped_unknown_key),
            ("dropped_no_route", self.dropped_no_route),
            ("dropped_not_tail", self.dropped_not_tail),
            ("dropped_unexpected", self.dropped_unexpected),
            ("dropped_write_not_from_prev", self.dropped_write_not_from_prev),
            ("dropped_write_off_chain", self.dropped_write_off_chain),
        ];
        for e in DecodeError::ALL {
            let name = match e {
                DecodeError::Truncated => "dropped_malformed_truncated",
                DecodeError::ChainTooLong => "dropped_malformed_chain_too_long",
                DecodeError::UnknownOp => "dropped_malformed_unknown_op",
                DecodeError::ChainCountMismatch => "dropped_malformed_chain_count_mismatch",
            };
            v.push((name, self.dropped_malformed[e.index()]));
        }
        v
    }
}

/// One register slot: the value and its sequence number.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Slot {
    pub value: Value,
    pub seq: u16,
}

/// A NetChain chain node.
#[derive(Clone, Debug)]
pub struct NcNode {
    addr: Addr,
    role: Option<Role>,
    /// The predecessor's chain index (control plane).
    prev: Option<u16>,
    /// The addresses of the chain's members after this node, in chain
    /// order (control plane; fewer than [`MAX_CHAIN_NODES`]); none at the
    /// tail.
    successors: Vec<Addr>,
    writes_paused: bool,
    neighbours: [(Addr, Hop); NEIGHBOURS_MAX],
    /// Exact-match key table: slot `i` holds the key stored in register `i`.
    keys: Vec<Option<ChainKey>>,
    registers: Vec<Slot>,
    pub counters: NcCounters,
}

fn key_hash(key: &ChainKey) -> u32 {
    // FNV-1a, cheap in a switch's hash unit and in BPF.
    key.iter().fold(0x811c_9dc5_u32, |h, b| (h ^ *b as u32).wrapping_mul(0x0100_0193))
}

impl NcNode {
    /// A node at address `addr` (non-zero) with room for `keys` keys.
    pub fn new(addr: Addr, keys: usize) -> NcNode {
        assert!(addr != 0, "address 0 ends a chain stack");
        assert!(keys > 0);
        NcNode {
            addr,
            role: None,
            prev: None,
            successors: Vec::new(),
            writes_paused: false,
            neighbours: [(0, Hop::Skip); NEIGHBOURS_MAX],
            keys: vec![None; keys],
            registers: vec![Slot::default(); keys],
            counters: NcCounters::default(),
        }
    }

    pub fn addr(&self) -> Addr {
        debug_assert_ne!(self.addr, 0, "address 0 ends a chain stack");
        self.addr
    }
    pub fn role(&self) -> Option<Role> {
        debug_assert!(self.successors.len() < MAX_CHAIN_NODES);
        self.role
    }
    pub fn set_role(&mut self, role: Option<Role>) {
        self.role = role;
        debug_assert_eq!(self.role(), role);
    }
    /// Control plane: the chain index of the predecessor, whose WRITE_REQs
    /// this node takes.
    pub fn set_prev(&mut self, prev: Option<u16>) {
        self.prev = prev;
        debug_assert_eq!(self.prev(), prev);
    }

    pub fn prev(&self) -> Option<u16> {
        debug_assert!(self.prev.is_none_or(|p| (p as usize) < NEIGHBOURS_MAX), "a predecessor is a chain node");
        self.prev
    }

    /// The key table's invariant for register `i`: it holds a key that
    /// the probe from the key's hash finds there.
    fn slot_holds(&self, i: usize) -> bool {
        self.keys[i].is_none_or(|k| self.find_key(&k) == Ok(i))
    }

    /// Control plane: the addresses of the members after this node, in
    /// chain order (empty at the tail): the only stack a write may carry on
    /// from here. Panics beyond a chain's length or on address 0.
    pub fn set_successors(&mut self, successors: &[Addr]) {
        assert!(successors.len() < MAX_CHAIN_NODES, "{} successors in a chain", successors.len());
        assert!(!successors.contains(&0), "address 0 ends a chain stack");
        self.successors = successors.to_vec();
        debug_assert!(!self.successors.contains(&self.addr), "a node is not its own successor");
    }

    pub fn successors(&self) -> &[Addr] {
        debug_assert!(self.successors.len() < MAX_CHAIN_NODES);
        &self.successors
    }

    /// The stack left after this node, without removed nodes' addresses,
    /// is the chain after this node (a bounded loop, as in BPF).
    fn stack_follows_chain(&self, p: &NcPacket) -> bool {
        let mut k = 0;
        for i in 0..MAX_CHAIN_NODES {
            if i >= p.depth() {
                break;
            }
            match self.neighbour(p.addr(i)) {
                Some(Hop::Skip) => {}
                Some(Hop::Port(_)) if self.successors.get(k) == Some(&p.addr(i)) => k += 1,
                _ => return false,
            }
        }
        debug_assert!(k <= self.successors.len());
        k == self.successors.len()
    }

    /// Control plane: the head drops writes while set (recovery).
    pub fn set_writes_paused(&mut self, paused: bool) {
        self.writes_paused = paused;
        debug_assert_eq!(self.writes_paused, paused);
    }

    /// Control plane: packets for `addr` go out `hop`. Panics when full.
    pub fn set_neighbour(&mut self, addr: Addr, hop: Hop) {
        assert!(addr != 0);
        let i = self
            .neighbours
            .iter()
            .position(|(a, _)| *a == addr)
            .or_else(|| self.neighbours.iter().position(|(a, _)| *a == 0))
            .expect("neighbour table full");
        self.neighbours[i] = (addr, hop);
        debug_assert_eq!(self.neighbours.iter().filter(|(a, _)| *a == addr).count(), 1, "one entry per address");
    }

    fn neighbour(&self, addr: Addr) -> Option<Hop> {
        self.neighbours.iter().find(|(a, _)| *a == addr).map(|(_, h)| *h)
    }

    fn find_key(&self, key: &ChainKey) -> Result<usize, Option<usize>> {
        let n = self.keys.len();
        let start = key_hash(key) as usize % n;
        let mut free = None;
        for probe in 0..KEY_PROBES.min(n) {
            let i = (start + probe) % n;
            match &self.keys[i] {
                Some(k) if k == key => return Ok(i),
                Some(_) => {}
                None => {
                    free = Some(i);
                    break;
                }
            }
        }
        debug_assert!(free.is_none_or(|i| self.keys[i].is_none()));
        Err(free)
    }

    /// Control plane: installs `key` in the key table; its register index,
    /// or `None` when its probe window is full.
    pub fn install_key(&mut self, key: ChainKey) -> Option<usize> {
        match self.find_key(&key) {
            Ok(i) => Some(i),
            Err(Some(i)) => {
                self.keys[i] = Some(key);
                debug_assert!(self.slot_holds(i), "an installed key is found in its slot");
                Some(i)
            }
            Err(None) => None,
        }
    }

    /// The register of `key`, if installed.
    pub fn get(&self, key: &ChainKey) -> Option<Slot> {
        let i = self.find_key(key).ok()?;
        debug_assert_eq!(self.keys[i].as_ref(), Some(key), "a register's key matches its slot");
        Some(self.registers[i])
    }

    /// Control plane register read: every installed key and its slot.
    pub fn snapshot(&self) -> Vec<(ChainKey, Slot)> {
        debug_assert_eq!(self.keys.len(), self.registers.len(), "one register per key slot");
        self.keys.iter().zip(&self.registers).filter_map(|(k, s)| k.map(|k| (k, *s))).collect()
    }

    /// Control plane register write (recovery): installs and sets each key.
    pub fn load(&mut self, entries: &[(ChainKey, Slot)]) {
        for (k, s) in entries {
            let i = self.install_key(*k).expect("key table has room for the snapshot");
            self.registers[i] = *s;
        }
        debug_assert!(entries.iter().all(|(k, s)| self.get(k) == Some(*s)), "a loaded snapshot reads back");
    }

    /// Applies (the head: sequences) a write that will go on along the
    /// chain; `false` if it is dropped.
    fn write(&mut self, p: &mut NcPacket, role: Role, i: usize) -> bool {
        debug_assert!(self.keys[i] == Some(p.key()) && self.slot_holds(i), "the register's key matches the packet's");
        let seq_before = self.registers[i].seq;
        let slot = &mut self.registers[i];
        if role.is_head() {
            if self.writes_paused {
                self.counters.writes_dropped_paused += 1;
                return false;
            }
            slot.seq = slot.seq.wrapping_add(1);
            slot.value = p.value();
            p.set_seq(slot.seq);
            self.counters.writes_sequenced += 1;
        } else if seq_newer(p.seq(), slot.seq) {
            slot.seq = p.seq();
            slot.value = p.value();
            self.counters.writes_applied += 1;
        } else {
            self.counters.writes_stale += 1;
            return false;
        }
        debug_assert!(seq_newer(self.registers[i].seq, seq_before), "a key's sequence number never goes back");
        debug_assert_eq!(p.seq(), self.registers[i].seq, "the write goes on with the sequence it was applied at");
        true
    }

    /// Pops this node's address and those of removed nodes: where the
    /// packet goes next. Changes nothing but the packet.
    fn next_hop(&self, p: &mut NcPacket) -> NextHop {
        p.pop();
        for _ in 0..MAX_CHAIN_NODES {
            if p.depth() == 0 {
                break;
            }
            match self.neighbour(p.addr(0)) {
                Some(Hop::Port(port)) => return NextHop::Port { port },
                Some(Hop::Skip) => p.pop(),
                None => return NextHop::NoRoute,
            }
        }
        debug_assert_eq!(p.depth(), 0, "at most MAX_CHAIN_NODES addresses to pop");
        NextHop::End
    }

    /// Decides a request addressed to this node whose key is register `i`.
    /// The tail answers as soon as it has popped itself, whatever follows
    /// (a write only if nothing but removed nodes follows, below); any
    /// other node passes the packet to the next address.
    fn decide(&mut self, mut p: NcPacket, role: Role, i: usize) -> (Verdict, usize) {
        debug_assert!(p.addr(0) == self.addr && self.keys[i] == Some(p.key()));
        let hop = if role.is_tail() {
            p.pop();
            NextHop::End
        } else {
            self.next_hop(&mut p)
        };
        match hop {
            NextHop::NoRoute => {
                self.counters.dropped_no_route += 1;
                return (Verdict::Drop, p.len());
            }
            NextHop::End if !role.is_tail() => {
                self.counters.dropped_not_tail += 1;
                return (Verdict::Drop, p.len());
            }
            _ => {}
        }
        if p.op() == NcOp::WriteReq {
            if !self.stack_follows_chain(&p) {
                self.counters.dropped_write_off_chain += 1;
                return (Verdict::Drop, p.len());
            }
            if !self.write(&mut p, role, i) {
                return (Verdict::Drop, p.len());
            }
        }
        if let NextHop::Port { port } = hop {
            self.counters.forwarded += 1;
            return (Verdict::Port { port }, p.len());
        }
        self.answer(p, i)
    }

    /// The tail's reply, whatever addresses follow its own (the reference
    /// client sends reads to the tail with the chain reversed behind it):
    /// a write reply drops the rest of the stack and its terminator, a read
    /// reply keeps them (netchain-p4's `pop_chain_again`, `gen_reply`).
    fn answer(&mut self, mut p: NcPacket, i: usize) -> (Verdict, usize) {
        match p.op() {
            NcOp::WriteReq => {
                p.set_op(NcOp::WriteReply);
                for _ in 0..=p.depth() {
                    p.pop();
                }
                debug_assert_eq!(p.len(), innet_wire::netchain::FIXED_LEN, "a write reply carries no stack");
            }
            _ => {
                let slot = self.registers[i];
                p.set_value(slot.value);
                p.set_seq(slot.seq);
                p.set_op(NcOp::ReadReply);
                self.counters.reads_answered += 1;
            }
        }
        (Verdict::Origin, p.len())
    }
}

/// Where a packet goes after this node ([`NcNode::next_hop`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum NextHop {
    /// Out of `port`, to the stack's next address.
    Port { port: u16 },
    /// The stack ends here: the tail answers.
    End,
    /// The next address is not in the neighbour table.
    NoRoute,
}

impl DataPlane for NcNode {
    /// A packet from a sender that is not a chain node (see
    /// [`DataPlane::process_from`]).
    fn process(&mut self, packet: &mut [u8]) -> Verdict {
        self.process_len(packet).0
    }

    fn process_len(&mut self, packet: &mut [u8]) -> (Verdict, usize) {
        self.process_from(packet, Ingress::Downstream)
    }

    fn process_from(&mut self, packet: &mut [u8], ingress: Ingress) -> (Verdict, usize) {
        let len = packet.len();
        let p = match NcPacket::parse(packet) {
            Ok(p) => p,
            Err(e) => {
                self.counters.dropped_malformed[e.index()] += 1;
                return (Verdict::Drop, len);
            }
        };
        let Some(role) = self.role else {
            self.counters.dropped_unconfigured += 1;
            return (Verdict::Drop, len);
        };
        if !matches!(p.op(), NcOp::ReadReq | NcOp::WriteReq) || p.depth() == 0 {
            self.counters.dropped_unexpected += 1;
            return (Verdict::Drop, len);
        }
        if p.addr(0) != self.addr {
            self.counters.dropped_not_for_me += 1;
            return (Verdict::Drop, len);
        }
        let Ok(i) = self.find_key(&p.key()) else {
            self.counters.dropped_unknown_key += 1;
            return (Verdict::Drop, len);
        };
        if p.op() == NcOp::WriteReq && !crate::netcraq::write_trusted(role, self.prev, ingress) {
            self.counters.dropped_write_not_from_prev += 1;
            return (Verdict::Drop, len);
        }
        let (verdict, out_len) = self.decide(p, role, i);
        debug_assert!(out_len <= len, "a program shrinks its packet, never grows it");
        (verdict, out_len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use innet_wire::netchain::{key_from_u32, NcMsg};

    const A: [Addr; 3] = [11, 12, 13];

    fn chain() -> Vec<NcNode> {
        (0..3)
            .map(|i| {
                let mut n = NcNode::new(A[i], 16);
                n.set_role(Some(Role::at(i, 3)));
                n.set_prev(i.checked_sub(1).map(|p| p as u16));
                n.set_successors(&A[i + 1..]);
                for (j, a) in A.iter().enumerate() {
                    n.set_neighbour(*a, Hop::Port(j as u16));
                }
                n.install_key(key_from_u32(1)).unwrap();
                n
            })
            .collect()
    }

    fn msg(op: NcOp, chain: &[Addr], v: u64) -> Vec<u8> {
        NcMsg { chain: chain.to_vec(), op, seq: 0, key: key_from_u32(1), value: Value::from_counter(v), vgroup: 0 }
            .encode()
    }

    /// Runs `bytes` through the chain from node `first` (sent by a client);
    /// the verdict of the last node and the packet it emits.
    fn through(nodes: &mut [NcNode], first: usize, mut bytes: Vec<u8>) -> (Verdict, NcMsg) {
        let (mut at, mut ingress) = (first, Ingress::Downstream);
        loop {
            let (v, len) = nodes[at].process_from(&mut bytes, ingress);
            bytes.truncate(len);
            match v {
                Verdict::Port { port } => (at, ingress) = (port as usize, Ingress::Peer(at as u16)),
                v => return (v, NcMsg::decode(&bytes).unwrap()),
            }
        }
    }

    #[test]
    fn the_head_sequences_writes_and_the_tail_replies() {
        // NetChain section 4.2: head assigns seq, replicas apply, tail replies.
        let mut c = chain();
        let (v, m) = through(&mut c, 0, msg(NcOp::WriteReq, &A, 5));
        assert_eq!((v, m.op, m.seq, m.chain.len()), (Verdict::Origin, NcOp::WriteReply, 1, 0));
        for n in &c {
            assert_eq!(n.get(&key_from_u32(1)).unwrap(), Slot { value: Value::from_counter(5), seq: 1 });
        }
        let (v, m) = through(&mut c, 0, msg(NcOp::ReadReq, &A, 0));
        assert_eq!((v, m.op, m.value, m.seq), (Verdict::Origin, NcOp::ReadReply, Value::from_counter(5), 1));
        assert_eq!(c[2].counters.reads_answered, 1, "only the tail answers reads");
    }

    #[test]
    fn replicas_drop_older_sequences_and_the_tail_never_acknowledges_them() {
        // NetChain section 4.2: the sequence number mitigates out-of-order
        // delivery; an older write is dropped, so the tail acknowledges only
        // writes it applied (issue 21: a skipped write used to be answered).
        let mut c = chain();
        through(&mut c, 0, msg(NcOp::WriteReq, &A, 5));
        // A reordered copy of an older write (seq 0 < 1) reaching a replica
        // and the tail.
        for node in [1, 2] {
            let mut b = msg(NcOp::WriteReq, &A[node..], 4);
            let (v, _) = c[node].process_from(&mut b, Ingress::Peer(node as u16 - 1));
            assert_eq!(v, Verdict::Drop, "node {node}: dropped, not passed on or answered");
            assert_eq!(c[node].get(&key_from_u32(1)).unwrap().value, Value::from_counter(5));
            assert_eq!(c[node].counters.writes_stale, 1);
        }
    }

    #[test]
    fn sequence_numbers_wrap_and_writes_keep_applying() {
        // NetCRAQ paper II-B2: 16-bit seq allows 65,536 writes; we wrap.
        assert!(seq_newer(0, 65535) && seq_newer(5, 65530) && !seq_newer(65535, 0) && !seq_newer(3, 3));
        let mut c = chain();
        for i in 1..=70_000u64 {
            through(&mut c, 0, msg(NcOp::WriteReq, &A, i));
        }
        let (_, m) = through(&mut c, 0, msg(NcOp::ReadReq, &A, 0));
        assert_eq!(m.value, Value::from_counter(70_000));
        assert_eq!(m.seq, (70_000 % 65_536) as u16);
        assert_eq!(c[2].counters.writes_stale, 0);
    }

    #[test]
    fn a_removed_node_is_skipped() {
        // NetChain section 5: neighbours of a failed node route around it.
        let mut c = chain();
        c[0].set_neighbour(A[1], Hop::Skip);
        c[0].set_successors(&A[2..]);
        c[2].set_prev(Some(0));
        let (v, m) = through(&mut c, 0, msg(NcOp::WriteReq, &A, 9));
        assert_eq!((v, m.op), (Verdict::Origin, NcOp::WriteReply));
        assert_eq!(c[1].counters.writes_applied, 0);
        assert_eq!(c[2].get(&key_from_u32(1)).unwrap().value, Value::from_counter(9));
    }

    #[test]
    fn writes_below_the_head_are_taken_only_from_the_predecessor() {
        // The attack: a write with sequence 30000 sent straight to the tail
        // would make every later write look stale there (their sequences
        // are older), so acknowledged puts would vanish.
        let mut c = chain();
        through(&mut c, 0, msg(NcOp::WriteReq, &A, 5));
        let forged = |chain: &[Addr]| {
            NcMsg {
                chain: chain.to_vec(),
                op: NcOp::WriteReq,
                seq: 30_000,
                key: key_from_u32(1),
                value: Value::from_counter(666),
                vgroup: 0,
            }
            .encode()
        };
        for (node, ingress) in [(2, Ingress::Downstream), (1, Ingress::Downstream), (2, Ingress::Peer(0))] {
            let mut b = forged(&A[node..]);
            assert_eq!(c[node].process_from(&mut b, ingress).0, Verdict::Drop, "node {node} from {ingress:?}");
        }
        assert_eq!((c[1].counters.dropped_write_not_from_prev, c[2].counters.dropped_write_not_from_prev), (1, 2));
        // At the head an outside write is a client's: its sequence is the head's.
        let mut b = forged(&A);
        assert_eq!(c[0].process_from(&mut b, Ingress::Peer(2)).0, Verdict::Drop, "the head takes no peer's write");
        let (v, m) = through(&mut c, 0, forged(&A));
        assert_eq!((v, m.seq), (Verdict::Origin, 2));
        let (_, m) = through(&mut c, 0, msg(NcOp::WriteReq, &A, 7));
        assert_eq!((m.op, m.seq), (NcOp::WriteReply, 3));
        for n in &c {
            assert_eq!(n.get(&key_from_u32(1)).unwrap(), Slot { value: Value::from_counter(7), seq: 3 });
        }
    }

    #[test]
    fn writes_that_do_not_traverse_the_chain_advance_no_sequence_number() {
        // Hostile round 2 (issue 21): any client could send the head writes
        // whose stack ends at the head, or goes on to a node that is not
        // the head's successor. The head sequenced them (and a middle node
        // applied some) though they never reached the tail; once the head
        // ran 32,768 or more ahead of the tail, the next legitimate write
        // looked older there (serial arithmetic), was skipped, and was
        // still acknowledged: put succeeded, get returned the old value.
        let mut c = chain();
        through(&mut c, 0, msg(NcOp::WriteReq, &A, 1));
        let stacks: [&[Addr]; 3] = [&A[..1], &A[..2], &[A[0], A[2]]];
        for i in 0..40_000 {
            let (v, _) = through(&mut c, 0, msg(NcOp::WriteReq, stacks[i % 3], 666));
            assert_eq!(v, Verdict::Drop, "stack {:?} is not the chain", stacks[i % 3]);
        }
        let (v, m) = through(&mut c, 0, msg(NcOp::WriteReq, &A, 7));
        assert_eq!((v, m.op), (Verdict::Origin, NcOp::WriteReply), "the put is acknowledged");
        let (_, m) = through(&mut c, 0, msg(NcOp::ReadReq, &A, 0));
        assert_eq!(m.value, Value::from_counter(7), "an acknowledged put is read back");
        for n in &c {
            assert_eq!(n.get(&key_from_u32(1)).unwrap(), Slot { value: Value::from_counter(7), seq: 2 });
        }
        assert_eq!(c[2].counters.writes_stale, 0);
    }

    #[test]
    fn stale_views_unknown_keys_and_pauses_drop() {
        let mut c = chain();
        // The stack ends at a replica: it is not the tail, so no answer.
        let (v, _) = through(&mut c, 0, msg(NcOp::ReadReq, &A[..2], 0));
        assert_eq!(v, Verdict::Drop);
        assert_eq!(c[1].counters.dropped_not_tail, 1);
        let mut b = NcMsg { key: key_from_u32(2), ..NcMsg::decode(&msg(NcOp::ReadReq, &A, 0)).unwrap() }.encode();
        assert_eq!(c[0].process(&mut b), Verdict::Drop);
        assert_eq!(c[0].counters.dropped_unknown_key, 1);
        c[0].set_writes_paused(true);
        let mut b = msg(NcOp::WriteReq, &A, 1);
        assert_eq!(c[0].process(&mut b), Verdict::Drop);
        let mut b = msg(NcOp::ReadReq, &A[1..], 0);
        assert_eq!(c[0].process(&mut b), Verdict::Drop, "addressed to another node");
    }

    #[test]
    fn the_tail_answers_the_reference_clients_reversed_read() {
        // netchain-p4 client/nc_socket.py sends reads to the tail with the
        // chain reversed behind it; its tail pops itself and replies.
        let mut c = chain();
        let (_, w) = through(&mut c, 0, msg(NcOp::WriteReq, &A, 5));
        assert_eq!((w.op, w.chain.len()), (NcOp::WriteReply, 0));
        let reversed: Vec<Addr> = A.iter().rev().copied().collect();
        let mut b = msg(NcOp::ReadReq, &reversed, 0);
        let (v, len) = c[2].process_from(&mut b, Ingress::Downstream);
        b.truncate(len);
        let m = NcMsg::decode(&b).unwrap();
        assert_eq!((v, m.op, m.value, m.seq), (Verdict::Origin, NcOp::ReadReply, Value::from_counter(5), 1));
        assert_eq!(m.chain, vec![A[1], A[0]], "the rest of the stack stays, as the reference's");
    }
}
