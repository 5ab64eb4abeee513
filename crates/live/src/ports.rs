//! Binding a node's socket ([`bind`]), and free loopback port blocks for
//! deployments that must know their ports before they start (tests, the
//! crash campaigns, examples).
//!
//! A block is chosen below the kernel's ephemeral range
//! (`/proc/sys/net/ipv4/ip_local_port_range`): a port inside that range may
//! be handed to any process's outgoing connection or unbound UDP socket
//! while the deployment's owner of that port is down (killed and about to
//! restart), and the restarted process then cannot bind it (seen in the
//! Paxos KV crash campaign: a restarted replica found its port taken 4 times
//! in 160 restarts). Each port of the block is probed for UDP and TCP (a KV
//! replica binds both on its client port), then released.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io;
use std::net::{SocketAddr, TcpListener, UdpSocket};

/// The lowest port of the range blocks are drawn from.
pub const BLOCK_LOW: u16 = 20_000;
/// Blocks tried before giving up.
pub const BLOCK_ATTEMPTS: usize = 200;
/// Linux's default lowest ephemeral port, used when /proc cannot be read.
const EPHEMERAL_LOW_DEFAULT: u16 = 32_768;

/// Binds a UDP socket, saying which address failed.
pub fn bind(addr: SocketAddr) -> io::Result<UdpSocket> {
    UdpSocket::bind(addr).map_err(|e| io::Error::new(e.kind(), format!("cannot bind UDP {addr}: {e}")))
}

/// The lowest port the kernel hands out as an ephemeral (local) port.
pub fn ephemeral_low() -> u16 {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").unwrap_or_default();
    range.split_whitespace().next().and_then(|p| p.parse().ok()).unwrap_or(EPHEMERAL_LOW_DEFAULT)
}

/// The first port `b` of a block of `n` consecutive loopback ports
/// `b..b+n`, each free for UDP and TCP, and free at `b + i + o` for every
/// `o` in `also` (management ports at a fixed offset), all below the
/// ephemeral range where the range leaves room for the block above
/// [`BLOCK_LOW`]. The ports are released again before this returns: another
/// process may still take one in between, so callers that bind later
/// should be ready to pick another block.
pub fn free_block(n: u16, also: &[u16]) -> io::Result<u16> {
    let top = also.iter().max().copied().unwrap_or(0).saturating_add(n);
    let low = ephemeral_low();
    let span = if low > BLOCK_LOW.saturating_add(top).saturating_add(1_000) {
        low - BLOCK_LOW - top
    } else {
        // An ephemeral range that starts at or near BLOCK_LOW leaves no
        // room below it: any block above BLOCK_LOW that probes free.
        u16::MAX - BLOCK_LOW - top
    };
    let mut seed = RandomState::new().build_hasher();
    seed.write_u32(std::process::id());
    let mut x = seed.finish() | 1;
    for _ in 0..BLOCK_ATTEMPTS {
        // xorshift64: a different draw each attempt, and in each process.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let base = BLOCK_LOW + (x % u64::from(span)) as u16;
        let ports = (0..n).flat_map(|i| std::iter::once(0).chain(also.iter().copied()).map(move |o| base + i + o));
        if ports.clone().all(|p| probe(p).is_some()) {
            debug_assert!(u32::from(base) + u32::from(top) <= u32::from(u16::MAX));
            return Ok(base);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AddrInUse,
        format!("no block of {n} free loopback ports found in {BLOCK_ATTEMPTS} tries"),
    ))
}

/// Whether `port` can be bound for UDP and TCP on loopback right now.
fn probe(port: u16) -> Option<()> {
    let _udp = UdpSocket::bind(("127.0.0.1", port)).ok()?;
    let _tcp = TcpListener::bind(("127.0.0.1", port)).ok()?;
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_is_free_and_below_the_ephemeral_range() {
        let base = free_block(16, &[]).unwrap();
        assert!(base >= BLOCK_LOW);
        if ephemeral_low() > BLOCK_LOW + 2_000 {
            assert!(base + 16 <= ephemeral_low(), "block {base}+16 reaches the ephemeral range");
        }
        for p in base..base + 16 {
            assert!(probe(p).is_some(), "port {p} of the block is taken");
        }
    }

    #[test]
    fn a_taken_port_is_never_in_a_block() {
        let base = free_block(4, &[]).unwrap();
        let _held = UdpSocket::bind(("127.0.0.1", base + 2)).unwrap();
        for _ in 0..20 {
            let b = free_block(4, &[]).unwrap();
            assert!(!(b..b + 4).contains(&(base + 2)), "block {b} holds the taken port {}", base + 2);
        }
    }
}
