//! Sockets with receiving threads: each socket gets a thread that blocks in
//! `recv_from` and hands packets to the node's event loop through one bounded
//! queue, so the event loop can wait for "a packet or the next timer" with a
//! precise timeout.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::Stop;

/// Packets waiting for the event loop, per node; beyond this the receiving
/// thread drops (and counts) like a full NIC ring.
pub(crate) const RX_QUEUE: usize = 8192;
/// Largest UDP payload.
const MAX_DATAGRAM: usize = 65536;
/// How often a blocked receiving thread looks at its stop flags.
const RX_POLL: Duration = Duration::from_millis(50);

pub(crate) struct Incoming {
    pub port: usize,
    pub from: SocketAddr,
    pub bytes: Vec<u8>,
}

/// Packets handled in a row before timers are looked at again.
pub(crate) const BURST: usize = 64;

pub(crate) struct Ports {
    sockets: Vec<Arc<UdpSocket>>,
    rx: Receiver<Incoming>,
    done: Arc<AtomicBool>,
    overflow: Arc<AtomicU64>,
    threads: Vec<JoinHandle<()>>,
}

impl Ports {
    pub fn new(sockets: Vec<UdpSocket>, stop: &Stop) -> io::Result<Ports> {
        let (tx, rx) = sync_channel(RX_QUEUE);
        let done = Arc::new(AtomicBool::new(false));
        let overflow = Arc::new(AtomicU64::new(0));
        let mut shared = vec![];
        let mut threads = vec![];
        for (port, s) in sockets.into_iter().enumerate() {
            s.set_read_timeout(Some(RX_POLL))?;
            let s = Arc::new(s);
            shared.push(s.clone());
            let (tx, done, overflow, stop) = (tx.clone(), done.clone(), overflow.clone(), stop.clone());
            let name = format!("innet-rx-{}", s.local_addr().map(|a| a.to_string()).unwrap_or_default());
            let t = std::thread::Builder::new().name(name).spawn(move || {
                let mut buf = vec![0u8; MAX_DATAGRAM];
                while !done.load(Ordering::Relaxed) && !stop.is_stopped() {
                    match s.recv_from(&mut buf) {
                        Ok((n, from)) => {
                            let inc = Incoming { port, from, bytes: buf[..n].to_vec() };
                            match tx.try_send(inc) {
                                Ok(()) => {}
                                Err(std::sync::mpsc::TrySendError::Full(_)) => {
                                    overflow.fetch_add(1, Ordering::Relaxed);
                                }
                                Err(std::sync::mpsc::TrySendError::Disconnected(_)) => break,
                            }
                        }
                        // Timeouts, and errors a UDP socket may report for an
                        // earlier send (ICMP unreachable): keep receiving.
                        Err(_) => continue,
                    }
                }
            })?;
            threads.push(t);
        }
        Ok(Ports { sockets: shared, rx, done, overflow, threads })
    }

    /// The next packet, waiting at most `wait`.
    pub fn recv(&self, wait: Duration) -> Option<Incoming> {
        if wait.is_zero() {
            return self.try_recv();
        }
        match self.rx.recv_timeout(wait) {
            Ok(i) => Some(i),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => {
                // Every receiving thread has stopped (the node is stopping).
                std::thread::sleep(wait.min(RX_POLL));
                None
            }
        }
    }

    pub fn try_recv(&self) -> Option<Incoming> {
        self.rx.try_recv().ok()
    }

    /// Waits at most `wait` for a packet, then takes whatever else is already
    /// queued, up to [`BURST`] packets in all, into `batch`.
    pub fn recv_burst(&self, wait: Duration, batch: &mut Vec<Incoming>) {
        if let Some(first) = self.recv(wait) {
            batch.push(first);
            while batch.len() < BURST {
                match self.try_recv() {
                    Some(inc) => batch.push(inc),
                    None => break,
                }
            }
        }
    }

    pub fn send(&self, port: usize, to: SocketAddr, bytes: &[u8]) -> io::Result<()> {
        self.sockets[port].send_to(bytes, to).map(|_| ())
    }

    /// Packets dropped because the event loop fell behind.
    pub fn overflow(&self) -> u64 {
        self.overflow.load(Ordering::Relaxed)
    }
}

impl Drop for Ports {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
