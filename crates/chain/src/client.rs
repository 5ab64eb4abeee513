//! The chain client library: get and put over NetCRAQ or NetChain.
//!
//! One operation at a time per client (applications wanting more run more
//! clients). The runtime maps the client's port `i` to chain node `i`; the
//! control plane tells the client the chain's current order
//! ([`ChainClient::set_chain`]), as NetChain's clients learn chains from its
//! controller.
//!
//! * **get**: NetCRAQ reads from the client's nearest node (`near`), which
//!   answers clean objects itself (paper section II-C). NetChain reads enter
//!   the chain at `near` and travel to the tail (the packet lists the chain
//!   from `near` on); with `near` = the tail that is NetChain's own read path.
//!   On a timeout the read is resent to the next node of the chain.
//! * **put**: sent to the head. The reply is the tail's ACK (NetCRAQ) or
//!   WRITE_REPLY (NetChain), matched by key and value (neither format has a
//!   request id). A timeout resends to the (possibly new) head;
//!   `WRITE_REFUSED` (NetCRAQ: versions full or writes paused) resends after
//!   `refused_backoff`.
//!
//! **Retried writes.** Without a request id, a resent write that the chain
//! already applied is applied again, possibly after another client's write.
//! With `stamp_attempts`, the library writes the attempt number into the
//! value's last 4 bytes, so every attempt is a distinct write, and the
//! history records each attempt as its own write (acknowledged or not). The
//! checker's workload uses this; applications that need exactly-once puts
//! must make values unique per attempt the same way.
//!
//! **Stale replies.** A reply is matched to the current operation by key
//! (and value for writes), so a reply delayed beyond the timeout could be
//! taken for a later read of the same key. The timeout must exceed the
//! network's largest round trip; the simulator's checks keep it so.

use std::time::Duration;

use innet_core::{Dest, Outbox, Time};
use innet_wire::netchain::{self, key_from_u32, Addr, NcMsg, NcOp};
use innet_wire::netcraq::{CraqMsg, KvOp, Value};

use crate::Protocol;

#[derive(Clone, Debug)]
pub struct ClientConfig {
    pub protocol: Protocol,
    pub id: u32,
    /// NetChain address of node `i` (the client's port `i`).
    pub addrs: Vec<Addr>,
    /// The node reads go to first.
    pub near: usize,
    pub timeout: Duration,
    pub refused_backoff: Duration,
    pub stamp_attempts: bool,
}

impl ClientConfig {
    pub fn new(protocol: Protocol, id: u32, nodes: usize) -> ClientConfig {
        ClientConfig {
            protocol,
            id,
            addrs: (0..nodes as u32).map(node_addr).collect(),
            near: 0,
            timeout: Duration::from_millis(50),
            refused_backoff: Duration::from_millis(2),
            stamp_attempts: false,
        }
    }
}

/// The NetChain address our runtimes give node `i`: 10.0.0.(i + 1).
pub fn node_addr(i: u32) -> Addr {
    let addr = 0x0a00_0001 + i;
    debug_assert_ne!(addr, 0, "address 0 ends a chain stack");
    addr
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum OpKind {
    Read,
    Write,
}

/// One entry of a client history: a read (one per operation, from its first
/// send to its reply) or one write attempt (from its send to its
/// acknowledgement, `None` if none came).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Record {
    pub client: u32,
    pub key: u32,
    pub kind: OpKind,
    /// Written, or returned.
    pub value: Value,
    pub invoke: Time,
    pub response: Option<Time>,
}

/// A finished operation.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Completion {
    pub kind: OpKind,
    pub key: u32,
    /// Read: the value returned. Write: the value acknowledged.
    pub value: Value,
    pub started: Time,
    pub finished: Time,
    pub attempts: u32,
}

#[derive(Clone, Debug)]
struct Current {
    kind: OpKind,
    key: u32,
    value: Value,
    started: Time,
    attempts: u32,
    /// Node of the last attempt (reads rotate from `near`).
    target: usize,
    next_send: Time,
    /// Write attempts: the value sent and its history index.
    sent: Vec<(Value, Option<usize>)>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientStats {
    pub reads: u64,
    pub writes: u64,
    pub timeouts: u64,
    pub refused: u64,
    pub ignored_replies: u64,
}

pub struct ChainClient {
    pub config: ClientConfig,
    /// Current chain order (node indices), head first.
    chain: Vec<usize>,
    current: Option<Current>,
    attempt_stamp: u32,
    pub stats: ClientStats,
    pub history: Option<Vec<Record>>,
}

impl ChainClient {
    pub fn new(config: ClientConfig) -> ChainClient {
        let chain = (0..config.addrs.len()).collect();
        let client = ChainClient {
            config,
            chain,
            current: None,
            attempt_stamp: 0,
            stats: ClientStats::default(),
            history: None,
        };
        debug_assert!(client.holds());
        client
    }

    /// The client's invariant: a write in progress sent each attempt's
    /// value once (and recorded it, when recording).
    fn holds(&self) -> bool {
        self.current.as_ref().is_none_or(|c| c.kind == OpKind::Read || c.sent.len() == c.attempts as usize)
    }

    pub fn with_history(mut self) -> ChainClient {
        debug_assert!(self.is_idle(), "recording starts before the first operation");
        self.history = Some(vec![]);
        self
    }

    /// The control plane's view of the chain, head first.
    pub fn set_chain(&mut self, chain: Vec<usize>) {
        self.chain = chain;
        debug_assert!(self.holds());
    }

    pub fn chain(&self) -> &[usize] {
        debug_assert!(self.holds());
        &self.chain
    }

    pub fn is_idle(&self) -> bool {
        debug_assert!(self.holds());
        self.current.is_none()
    }

    /// Starts a read of `key`; panics if an operation is in progress.
    pub fn get(&mut self, now: Time, key: u32) {
        self.start(now, OpKind::Read, key, Value::ZERO);
    }

    /// Starts a write; panics if an operation is in progress.
    pub fn put(&mut self, now: Time, key: u32, value: Value) {
        self.start(now, OpKind::Write, key, value);
    }

    fn start(&mut self, now: Time, kind: OpKind, key: u32, value: Value) {
        assert!(self.current.is_none(), "one operation at a time");
        let target = self.first_read_target();
        self.current =
            Some(Current { kind, key, value, started: now, attempts: 0, target, next_send: now, sent: vec![] });
        debug_assert!(self.holds());
    }

    fn first_read_target(&self) -> usize {
        if self.chain.contains(&self.config.near) {
            self.config.near
        } else {
            *self.chain.last().unwrap_or(&self.config.near)
        }
    }

    fn send(&mut self, now: Time, out: &mut Outbox) {
        let Some(cur) = self.current.as_mut() else { return };
        if self.chain.is_empty() {
            cur.next_send = now + self.config.timeout;
            return;
        }
        cur.attempts += 1;
        let (target, value) = match cur.kind {
            OpKind::Read => {
                if cur.attempts > 1 {
                    // Retry on another node: the next one along the chain.
                    let pos = self.chain.iter().position(|n| *n == cur.target).map_or(0, |p| p + 1);
                    cur.target = self.chain[pos % self.chain.len()];
                } else if !self.chain.contains(&cur.target) {
                    cur.target = *self.chain.last().expect("non-empty");
                }
                (cur.target, Value::ZERO)
            }
            OpKind::Write => {
                let mut v = cur.value;
                if self.config.stamp_attempts {
                    self.attempt_stamp = self.attempt_stamp.wrapping_add(1);
                    v.0[12..16].copy_from_slice(&self.attempt_stamp.to_be_bytes());
                }
                cur.target = self.chain[0];
                let idx = self.history.as_mut().map(|h| {
                    h.push(Record {
                        client: self.config.id,
                        key: cur.key,
                        kind: OpKind::Write,
                        value: v,
                        invoke: now,
                        response: None,
                    });
                    h.len() - 1
                });
                cur.sent.push((v, idx));
                (cur.target, v)
            }
        };
        cur.next_send = now + self.config.timeout;
        let bytes = match self.config.protocol {
            Protocol::NetCraq => match cur.kind {
                OpKind::Read => CraqMsg::read(cur.key),
                OpKind::Write => CraqMsg::write(cur.key, value),
            }
            .encode(),
            Protocol::NetChain => {
                let from = match cur.kind {
                    OpKind::Read => self.chain.iter().position(|n| *n == target).unwrap_or(0),
                    OpKind::Write => 0,
                };
                // A chain order names nodes by index (from the control
                // plane's view); one this client has no address for is left out.
                let stack = self.chain.iter().skip(from).filter_map(|n| self.config.addrs.get(*n).copied());
                let stack: Vec<Addr> = stack.filter(|a| *a != 0).take(netchain::MAX_CHAIN_NODES).collect();
                let op = if cur.kind == OpKind::Read { NcOp::ReadReq } else { NcOp::WriteReq };
                NcMsg { chain: stack, op, seq: 0, key: key_from_u32(cur.key), value, vgroup: 0 }.encode()
            }
        };
        out.send(Dest::Port(target as u16), bytes);
        debug_assert!(self.holds(), "a write attempt sent without its value recorded");
    }

    /// Handles a reply; returns the operation it finished, if any.
    pub fn on_packet(&mut self, now: Time, bytes: &[u8]) -> Option<Completion> {
        let (kind, key, value, refused) = match self.config.protocol {
            Protocol::NetCraq => {
                let m = CraqMsg::decode(bytes).ok()?;
                match m.op {
                    KvOp::ReadReply => (OpKind::Read, m.key, m.value, false),
                    KvOp::Ack | KvOp::WriteReply => (OpKind::Write, m.key, m.value, false),
                    KvOp::WriteRefused => (OpKind::Write, m.key, m.value, true),
                    KvOp::Read | KvOp::Write => return None,
                }
            }
            Protocol::NetChain => {
                let m = NcMsg::decode(bytes).ok()?;
                let key = netchain::key_to_u32(&m.key);
                match m.op {
                    NcOp::ReadReply => (OpKind::Read, key, m.value, false),
                    NcOp::WriteReply => (OpKind::Write, key, m.value, false),
                    NcOp::ReadReq | NcOp::WriteReq => return None,
                }
            }
        };
        let matches = self.current.as_ref().is_some_and(|c| {
            c.kind == kind && c.key == key && (kind == OpKind::Read || c.sent.iter().any(|(v, _)| *v == value))
        });
        if !matches {
            self.stats.ignored_replies += 1;
            return None;
        }
        if refused {
            self.stats.refused += 1;
            let cur = self.current.as_mut().expect("matched");
            cur.next_send = now + self.config.refused_backoff;
            return None;
        }
        let cur = self.current.take().expect("matched");
        match kind {
            OpKind::Read => {
                self.stats.reads += 1;
                if let Some(h) = self.history.as_mut() {
                    h.push(Record {
                        client: self.config.id,
                        key,
                        kind,
                        value,
                        invoke: cur.started,
                        response: Some(now),
                    });
                }
            }
            OpKind::Write => {
                self.stats.writes += 1;
                if let (Some(h), Some((_, Some(i)))) =
                    (self.history.as_mut(), cur.sent.iter().find(|(v, _)| *v == value))
                {
                    h[*i].response = Some(now);
                }
            }
        }
        debug_assert!(cur.attempts >= 1 && cur.started <= now, "an answer to an operation sent");
        Some(Completion { kind, key, value, started: cur.started, finished: now, attempts: cur.attempts })
    }

    /// Sends the current operation's first attempt or a retry when due.
    pub fn on_tick(&mut self, now: Time, out: &mut Outbox) {
        let due = self.current.as_ref().is_some_and(|c| c.next_send <= now);
        if due {
            if self.current.as_ref().is_some_and(|c| c.attempts > 0) {
                self.stats.timeouts += 1;
            }
            self.send(now, out);
        }
        debug_assert!(
            self.current.as_ref().is_none_or(|c| c.next_send > now || self.config.timeout.is_zero()),
            "after a tick no attempt is overdue"
        );
    }

    pub fn next_tick(&self) -> Option<Time> {
        debug_assert!(self.holds());
        self.current.as_ref().map(|c| c.next_send)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> Time {
        Time(ms * 1_000_000)
    }

    #[test]
    fn a_netcraq_read_goes_to_the_near_node_and_retries_on_the_next() {
        let mut cfg = ClientConfig::new(Protocol::NetCraq, 1, 4);
        cfg.near = 2;
        let mut c = ChainClient::new(cfg);
        let mut out = Outbox::new();
        c.get(t(0), 7);
        c.on_tick(t(0), &mut out);
        let (d, b) = out.drain().next().unwrap();
        assert_eq!((d, CraqMsg::decode(&b).unwrap()), (Dest::Port(2), CraqMsg::read(7)));
        c.on_tick(t(50), &mut out);
        assert_eq!(out.drain().next().unwrap().0, Dest::Port(3), "retry on another node");
        let reply = CraqMsg { op: KvOp::ReadReply, key: 7, value: Value::from_counter(3) };
        let done = c.on_packet(t(51), &reply.encode()).unwrap();
        assert_eq!((done.value, done.attempts), (Value::from_counter(3), 2));
        assert!(c.is_idle());
    }

    #[test]
    fn writes_go_to_the_head_and_refusals_back_off() {
        let mut cfg = ClientConfig::new(Protocol::NetCraq, 1, 3);
        cfg.stamp_attempts = true;
        let mut c = ChainClient::new(cfg).with_history();
        c.set_chain(vec![1, 2]);
        let mut out = Outbox::new();
        c.put(t(0), 4, Value::from_counter(9));
        c.on_tick(t(0), &mut out);
        let (d, b) = out.drain().next().unwrap();
        assert_eq!(d, Dest::Port(1), "the head in the control plane's view");
        let sent = CraqMsg::decode(&b).unwrap();
        assert_eq!(&sent.value.0[12..], &1u32.to_be_bytes(), "attempt stamp");
        let refused = CraqMsg { op: KvOp::WriteRefused, ..sent };
        assert!(c.on_packet(t(1), &refused.encode()).is_none());
        assert_eq!(c.next_tick(), Some(t(3)));
        c.on_tick(t(3), &mut out);
        let second = CraqMsg::decode(&out.drain().next().unwrap().1).unwrap();
        assert_ne!(second.value, sent.value, "each attempt is a distinct write");
        let ack = CraqMsg { op: KvOp::Ack, ..second };
        assert!(c.on_packet(t(4), &ack.encode()).is_some());
        let h = c.history.as_ref().unwrap();
        assert_eq!(h.len(), 2);
        assert_eq!((h[0].response, h[1].response), (None, Some(t(4))));
    }

    #[test]
    fn a_netchain_read_lists_the_chain_from_the_entry_node() {
        let mut cfg = ClientConfig::new(Protocol::NetChain, 1, 4);
        cfg.near = 1;
        let mut c = ChainClient::new(cfg);
        let mut out = Outbox::new();
        c.get(t(0), 2);
        c.on_tick(t(0), &mut out);
        let (d, b) = out.drain().next().unwrap();
        let m = NcMsg::decode(&b).unwrap();
        assert_eq!((d, m.op, m.chain), (Dest::Port(1), NcOp::ReadReq, vec![node_addr(1), node_addr(2), node_addr(3)]));
        let reply = NcMsg { chain: vec![], op: NcOp::ReadReply, value: Value::from_counter(1), ..m };
        assert!(c.on_packet(t(1), &reply.encode()).is_some());
    }
}
