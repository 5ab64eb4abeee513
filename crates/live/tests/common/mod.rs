//! Helpers shared by the live tests: raw UDP clients speaking the wire format.
#![allow(dead_code)]

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

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
