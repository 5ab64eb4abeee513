//! The live runtime: protocol state machines over real UDP sockets.
//!
//! * [`host`]: runs any [`innet_core::Host`] (store, client, load driver) on a
//!   bound socket. Replies go to the sender of the packet being handled,
//!   [`innet_core::Dest::Upstream`] to a configured address.
//! * [`switch`]: runs any [`innet_core::DataPlane`] as a user-space software
//!   switch on one socket: packets from the configured upstream address are
//!   "from upstream", anything else is from downstream; verdicts are applied
//!   with an [`innet_core::ReversePath`] learned on `Upstream` verdicts.
//! * [`delay`]: per-link one-way delay emulation in user space (there is no
//!   netem here): a FIFO timer queue per link, on the runtime's side of the
//!   link, in both directions. A client runtime emulates its access link
//!   (client <-> switch); a switch emulates its links (switch <-> store and,
//!   optionally, switch <-> clients). Packets on the wire are plain protocol
//!   packets, so every node stays byte-compatible with plain UDP peers.
//! * [`txn`]: the transaction service: start a store and a switch
//!   in-process, run load clients, run one transaction.
//! * [`topology`]: a TOML file naming nodes, so one binary starts its share of
//!   a deployment on each machine (`docs/live.md`).
//! * [`up`]: `innet up`'s orchestration: a topology file's servers started
//!   here, the load its clients run, the chain's control plane, one report.
//! * [`metrics`]: the Prometheus endpoint over running nodes' counters
//!   (`--metrics ADDR`).
//! * [`mininet`]: `innet mininet`: a topology file's nodes as `innet`
//!   processes on Mininet hosts (`tools/mininet/innet_mininet.py`).
//!
//! Time: state machines get [`innet_core::Time`] = time elapsed since a
//! process-wide epoch ([`clock::now`]). Every node stops when its [`Stop`]
//! is set; [`Stop::on_signals`] sets it on SIGINT / SIGTERM.
//!
//! Each running node is one thread running one event loop that owns the
//! node's sockets (the I/O core, [`net`], also used by the load generator
//! of `innet-bench`): it waits on epoll for a readable
//! socket or its next timer (host tick or delayed packet; a timerfd gives
//! the sub-millisecond part, socket receive timeouts are not used), drains
//! each readable socket with `recvmmsg` into preallocated buffers, hands
//! every datagram to the node as a slice, and sends what the batch produced
//! with `sendmmsg`. No thread hop and no allocation per packet in the
//! runtime; a full socket receive buffer drops and is counted by the kernel
//! (`SO_RXQ_OVFL`), like a NIC ring.

#![forbid(unsafe_code)]

pub mod auth;
pub mod chain;
pub mod delay;
pub mod deploy;
pub mod host;
pub mod kv_client;
pub mod metrics;
pub mod mininet;
pub mod net;
pub mod paxos;
pub mod ports;
pub mod switch;
pub mod topology;
pub mod txn;
pub mod up;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub use delay::DelayLine;
pub use host::{
    run_host, run_hosts, run_machine, spawn_host, spawn_host_counted, Admission, Feed, HostOptions, HostStats,
    LiveCounters, MakeFeed, NodeHandle, Rejected, Shared, SharedSocket, SharedStats,
};
pub use switch::{
    run_switch, spawn_switch, spawn_switch_with_tables, SwitchNode, SwitchOptions, SwitchState, SwitchStats,
    SwitchTables,
};

/// The process-wide clock every live node uses.
pub mod clock {
    use std::sync::OnceLock;
    use std::time::{Duration, Instant};

    use innet_core::Time;

    static EPOCH: OnceLock<Instant> = OnceLock::new();

    /// The process-wide epoch: the first time anything asked for it.
    pub fn epoch() -> Instant {
        *EPOCH.get_or_init(Instant::now)
    }

    /// Time elapsed since [`epoch`].
    pub fn now() -> Time {
        let e = epoch();
        Time(Instant::now().saturating_duration_since(e).as_nanos().min(u64::MAX as u128) as u64)
    }

    /// The wall-clock instant of a [`Time`].
    pub fn instant(t: Time) -> Instant {
        epoch() + Duration::from_nanos(t.as_nanos())
    }
}

/// A graceful-stop switch shared by nodes, tests and signal handlers.
///
/// A [`Stop::child`] is stopped when it or any of its ancestors is, so one
/// node can be stopped alone while a process-wide stop still stops all.
#[derive(Clone, Debug)]
pub struct Stop {
    flags: Vec<Arc<AtomicBool>>,
}

impl Default for Stop {
    fn default() -> Stop {
        Stop::new()
    }
}

impl Stop {
    pub fn new() -> Stop {
        Stop { flags: vec![Arc::new(AtomicBool::new(false))] }
    }

    /// A stop that also fires when `self` does.
    pub fn child(&self) -> Stop {
        let mut flags = vec![Arc::new(AtomicBool::new(false))];
        flags.extend(self.flags.iter().cloned());
        Stop { flags }
    }

    /// Asks every node watching this stop (and its children) to stop.
    pub fn stop(&self) {
        self.flags[0].store(true, Ordering::SeqCst);
    }

    pub fn is_stopped(&self) -> bool {
        self.flags.iter().any(|f| f.load(Ordering::Relaxed))
    }

    /// Sets this stop on SIGINT and SIGTERM. A second signal after the first
    /// terminates the process at once (exit status 130).
    pub fn on_signals(&self) -> std::io::Result<()> {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let own = self.flags[0].clone();
        for sig in [SIGINT, SIGTERM] {
            // The shutdown must be registered first: it is armed by the flag.
            signal_hook::flag::register_conditional_shutdown(sig, 130, own.clone())?;
            signal_hook::flag::register(sig, own.clone())?;
        }
        Ok(())
    }
}

/// A stop set on SIGINT and SIGTERM: what a command that runs until
/// Ctrl-C watches.
pub fn stop_on_signals() -> anyhow::Result<Stop> {
    use anyhow::Context;
    let stop = Stop::new();
    stop.on_signals().context("cannot install SIGINT/SIGTERM handlers")?;
    Ok(stop)
}

/// Waits until `stop` is set or `finished()` says a node has ended,
/// looking every 50 ms.
pub fn wait_until_stopped(stop: &Stop, mut finished: impl FnMut() -> bool) {
    while !stop.is_stopped() && !finished() {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A bare UDP echo on `listen` (blocking receive, send back to the
/// sender) until `stop`: the floor a user-space switch's round trip is
/// measured against (`innet switch echo`). `say` gets `echo HOST:PORT` once
/// it is listening; returns how many datagrams it echoed.
pub fn echo(listen: std::net::SocketAddr, stop: &Stop, say: impl Fn(&str)) -> anyhow::Result<u64> {
    use anyhow::Context;
    let sock = std::net::UdpSocket::bind(listen).with_context(|| format!("bind {listen}"))?;
    // Woken at least this often to look at the stop flag.
    sock.set_read_timeout(Some(std::time::Duration::from_millis(20)))?;
    say(&format!("echo {}", sock.local_addr()?));
    let mut buf = [0u8; 65536];
    let mut echoed = 0u64;
    while !stop.is_stopped() {
        if let Ok((n, from)) = sock.recv_from(&mut buf) {
            echoed += u64::from(sock.send_to(&buf[..n], from).is_ok());
        }
    }
    Ok(echoed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_stops_with_parent_but_not_the_other_way() {
        let parent = Stop::new();
        let a = parent.child();
        let b = parent.child();
        a.stop();
        assert!(a.is_stopped() && !b.is_stopped() && !parent.is_stopped());
        parent.stop();
        assert!(b.is_stopped());
    }

    #[test]
    fn clock_is_monotonic() {
        let a = clock::now();
        let b = clock::now();
        assert!(b >= a);
        assert!(clock::instant(b) >= clock::instant(a));
    }
}
