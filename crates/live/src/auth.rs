//! `--auth-key FILE` in the live runtime: the keyed MAC trailer of
//! [`innet_core::auth`] on every datagram between a deployment's nodes.
//!
//! A node with a [`PeerAuth`] seals every datagram it sends to a covered
//! address (in [`crate::net::TxBatch`], so every send path of hosts and
//! software switches) and opens every datagram from a covered address
//! before anything else looks at it: one whose trailer does not check is
//! dropped and counted (`auth_no_trailer`, `auth_unknown_key`,
//! `auth_bad_tag` in the node's `rejected`). Covered: every address (a
//! service whose every party is a node, Paxos), or the deployment's node
//! addresses only (a service whose clients cannot carry a MAC, such as the
//! Gotthard reference clients: their datagrams pass unsealed, and the
//! service's admission rules treat them as clients). A raw socket that
//! spoofs a covered address without the key is refused either way.

use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use innet_core::auth::AuthKeys;

/// Packets refused (by an `Admission` rule of `host`, or for a missing or
/// wrong MAC here), by reason.
pub type Rejected = BTreeMap<&'static str, u64>;

/// A node's keys and whom they cover.
#[derive(Debug)]
pub struct PeerAuth {
    pub keys: AuthKeys,
    /// `None`: every address.
    pub peers: Option<HashSet<SocketAddr>>,
}

impl PeerAuth {
    /// Keys covering every address.
    pub fn all(keys: AuthKeys) -> Arc<PeerAuth> {
        Arc::new(PeerAuth { keys, peers: None })
    }

    /// Keys covering `peers` only.
    pub fn peers(keys: AuthKeys, peers: impl IntoIterator<Item = SocketAddr>) -> Arc<PeerAuth> {
        Arc::new(PeerAuth { keys, peers: Some(peers.into_iter().collect()) })
    }

    pub fn covers(&self, addr: SocketAddr) -> bool {
        self.peers.as_ref().is_none_or(|p| p.contains(&addr))
    }

    /// The length of the message in `bytes` from `from`: all of it if
    /// `this` does not cover `from`, the sealed message if its trailer
    /// checks, `None` (counted in `rejected`) if not.
    pub fn open(
        this: &Option<Arc<PeerAuth>>,
        from: SocketAddr,
        bytes: &[u8],
        rejected: &mut Rejected,
    ) -> Option<usize> {
        match this {
            Some(a) if a.covers(from) => match a.keys.open(bytes) {
                Ok(n) => Some(n),
                Err(e) => {
                    tracing::debug!(%from, reason = e.name(), "unauthenticated packet refused");
                    *rejected.entry(e.name()).or_default() += 1;
                    None
                }
            },
            _ => Some(bytes.len()),
        }
    }
}

/// Reads a key file (`innet_core::auth`'s format); the error names the
/// file and what is wrong.
pub fn read_key_file(path: &Path) -> Result<AuthKeys, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("--auth-key {}: {e}", path.display()))?;
    AuthKeys::parse(&text).map_err(|e| format!("--auth-key {}: {e}", path.display()))
}

/// A key file read once: its keys, and its absolute path for the processes
/// a testbed starts with `--auth-key` (they read it themselves).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyFile {
    pub path: PathBuf,
    pub keys: AuthKeys,
}

impl KeyFile {
    /// Reads and checks `path` ([`read_key_file`]).
    pub fn read(path: &Path) -> Result<KeyFile, String> {
        let keys = read_key_file(path)?;
        let path = std::path::absolute(path).map_err(|e| format!("--auth-key {}: {e}", path.display()))?;
        Ok(KeyFile { path, keys })
    }
}
