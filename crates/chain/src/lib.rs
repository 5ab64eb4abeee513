//! An in-network chain-replicated key-value store: NetCRAQ (Sagkriotis and
//! Pezaros, 2022) and, as its baseline, NetChain (Jin et al., NSDI 2018), as
//! pure state machines. No sockets, no clocks, no threads: runtimes
//! (`innet-sim`, `innet-live`, `innet-xdp`) move bytes and time through them.
//!
//! * [`netcraq::CraqNode`]: the NetCRAQ node program (Algorithm 1).
//! * [`netchain::NcNode`]: the NetChain node program (head sequences writes,
//!   replicas apply newer sequences, the tail answers).
//! * [`control::ChainControl`]: roles, failure detection, removal, recovery
//!   by copying state while writes are paused, re-add.
//! * [`client::ChainClient`]: get / put, retrying on another node.
//! * [`check::check`]: a linearizability checker over per-key histories.

#![forbid(unsafe_code)]

pub mod check;
pub mod client;
pub mod control;
pub mod deploy;
pub mod netchain;
pub mod netcraq;
pub mod node;
pub mod workload;

/// The switch ports and groups the control plane configures on chain nodes.
pub mod ports {
    /// The node's successor in the chain (writes go on here).
    pub const PORT_NEXT: u16 = 0;
    /// The chain's tail (NetCRAQ forwards reads of dirty objects here).
    pub const PORT_TAIL: u16 = 1;
    /// At the tail: every other node, and the packet's origin (the writer).
    pub const GROUP_ACK: u16 = 0;
}

/// A node's place in its chain, written by the control plane.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Role {
    Head,
    Replica,
    Tail,
    /// A chain of one node: head and tail.
    HeadTail,
}

impl Role {
    pub fn is_head(self) -> bool {
        matches!(self, Role::Head | Role::HeadTail)
    }
    pub fn is_tail(self) -> bool {
        matches!(self, Role::Tail | Role::HeadTail)
    }
    /// The role of position `i` in a chain of `n` nodes.
    pub fn at(i: usize, n: usize) -> Role {
        assert!(i < n, "position {i} outside a chain of {n}");
        match (i == 0, i + 1 == n) {
            (true, true) => Role::HeadTail,
            (true, false) => Role::Head,
            (false, true) => Role::Tail,
            (false, false) => Role::Replica,
        }
    }
}

/// Which protocol a chain runs.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Protocol {
    NetCraq,
    NetChain,
}

impl Protocol {
    pub const ALL: [Protocol; 2] = [Protocol::NetCraq, Protocol::NetChain];
    pub fn name(self) -> &'static str {
        match self {
            Protocol::NetCraq => "netcraq",
            Protocol::NetChain => "netchain",
        }
    }
}

impl std::str::FromStr for Protocol {
    type Err = String;
    fn from_str(s: &str) -> Result<Protocol, String> {
        Protocol::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| format!("unknown protocol '{s}': expected netcraq or netchain"))
    }
}

impl std::fmt::Display for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
