//! Helpers shared by the live tests: raw UDP clients speaking the wire
//! format, and a raw IP socket that sends UDP from any address (spoofing).
#![allow(dead_code)]

use std::net::{SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use nix::sys::socket::{sendto, socket, AddressFamily, MsgFlags, SockFlag, SockProtocol, SockType, SockaddrIn};

use innet_wire::txn::{Op, TxnMsg, Value};

pub fn v(s: &str) -> Value {
    Value::from_str_padded(s).unwrap()
}

pub struct Raw {
    pub sock: UdpSocket,
    pub to: SocketAddr,
}

impl Raw {
    pub fn new(to: SocketAddr) -> Raw {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
        Raw { sock, to }
    }
    pub fn send_bytes(&self, b: &[u8]) {
        self.sock.send_to(b, self.to).unwrap();
    }
    pub fn send(&self, cl_id: u32, req_id: i32, ops: Vec<Op>) {
        self.send_bytes(&TxnMsg::request(cl_id, req_id, ops).encode());
    }
    /// The next packet within `wait`, with its source.
    pub fn recv_within(&self, wait: Duration) -> Option<(TxnMsg, SocketAddr)> {
        let t0 = Instant::now();
        let mut buf = [0u8; 2048];
        while t0.elapsed() < wait {
            if let Ok((n, from)) = self.sock.recv_from(&mut buf) {
                return Some((TxnMsg::decode(&buf[..n]).expect("a well-formed reply"), from));
            }
        }
        None
    }
    pub fn recv(&self) -> (TxnMsg, SocketAddr) {
        self.recv_within(Duration::from_secs(5)).expect("a reply within 5 s")
    }
}

/// Waits until `f` holds (or panics after 5 s).
pub fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < Duration::from_secs(5), "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A raw IPv4 socket (root), or `None` after saying on stderr why `test`
/// skips (it fails instead under `CI=true`).
pub fn raw_socket_or_skip(test: &str) -> Option<OwnedFd> {
    match socket(AddressFamily::Inet, SockType::Raw, SockFlag::empty(), SockProtocol::Raw) {
        Ok(s) => Some(s),
        Err(e) => {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "a raw socket: {e}");
            eprintln!("SKIPPED: {test}: no raw socket ({e}); run as root");
            None
        }
    }
}

/// An IPv4/UDP datagram from `from` to `to` (the kernel fills in the IPv4
/// checksum; a zero UDP checksum means none).
pub fn ipv4_udp(from: SocketAddrV4, to: SocketAddrV4, payload: &[u8]) -> Vec<u8> {
    let total = (20 + 8 + payload.len()) as u16;
    let mut b = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0];
    b[2..4].copy_from_slice(&total.to_be_bytes());
    b.extend_from_slice(&from.ip().octets());
    b.extend_from_slice(&to.ip().octets());
    b.extend_from_slice(&from.port().to_be_bytes());
    b.extend_from_slice(&to.port().to_be_bytes());
    b.extend_from_slice(&(total - 20).to_be_bytes());
    b.extend_from_slice(&[0, 0]);
    b.extend_from_slice(payload);
    b
}

pub fn v4(a: SocketAddr) -> SocketAddrV4 {
    match a {
        SocketAddr::V4(a) => a,
        SocketAddr::V6(_) => unreachable!("loopback IPv4"),
    }
}

/// Sends `payload` from `from` (any address: spoofed) to `to` through the
/// raw socket `raw`.
pub fn spoof(raw: &impl AsRawFd, from: SocketAddr, to: SocketAddr, payload: &[u8]) {
    let (from, to) = (v4(from), v4(to));
    sendto(raw.as_raw_fd(), &ipv4_udp(from, to, payload), &SockaddrIn::from(to), MsgFlags::empty()).expect("raw send");
}

/// `n` loopback ports `p` whose management ports `p + MANAGE_PORT_OFFSET`
/// are free too (probed, then released).
pub fn free_ports(n: usize) -> Vec<u16> {
    use innet_live::chain::manage::MANAGE_PORT_OFFSET;
    let mut ports = vec![];
    let mut held = vec![];
    while ports.len() < n {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        let p = s.local_addr().unwrap().port();
        let Some(m) = p.checked_add(MANAGE_PORT_OFFSET) else { continue };
        let Ok(ms) = UdpSocket::bind(("127.0.0.1", m)) else { continue };
        ports.push(p);
        held.push((s, ms));
    }
    ports
}
