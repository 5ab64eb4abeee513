//! Request round trips and rates through a chain, side by side in one run
//! (`innet bench xdp-chain`):
//!
//! * `xdp-bounce`: `xdp_bounce` on the head's interface of the `chain`
//!   testbed (swap addresses, `XDP_TX`): the floor of one XDP hop and back;
//! * `xdp-chain-write` / `xdp-chain-read`: the XDP chain nodes. A NetCRAQ
//!   write goes head -> ... -> tail, whose ACK (tc multicast) is the reply;
//!   a read of a clean object is answered by the head. A NetChain write
//!   passes every node; a read is sent to the tail;
//! * `software-chain-write` / `-read`: the same requests through
//!   `innet-live`'s chain of user-space software switches on loopback (the
//!   caller starts it).
//!
//! The probe keeps one request in flight for round trips, then `window`
//! for a rate phase; it runs in the client namespace for the XDP planes.
//! Requests use distinct keys in turn (1024 of them), so no NetCRAQ object
//! ever has more than a few writes in flight.

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use innet_chain::Protocol;
use innet_wire::netchain::{key_from_u32, Addr, NcMsg, NcOp};
use innet_wire::netcraq::{CraqMsg, KvOp};
use innet_wire::txn::Value;

use crate::bench::{BenchConfig, ProbeResult};

/// Keys requests cycle through (NetCRAQ objects; NetChain installed keys).
pub const KEYS: u32 = 256;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChainBenchConfig {
    pub protocol: String,
    pub nodes: usize,
    /// How the NetCRAQ tail's ACKs reach their group (`devmap`, `tc`).
    pub multicast: String,
    #[serde(flatten)]
    pub rounds: BenchConfig,
}

/// What a plane's client sends and what counts as the right reply.
#[derive(Clone, Debug)]
pub struct Workload {
    pub protocol: Protocol,
    pub write: bool,
    /// Where requests go (the head; a NetChain read: the tail).
    pub to: SocketAddr,
    /// NetChain: the stack a request carries.
    pub stack: Vec<Addr>,
    /// Any reply will do (the bounce returns the request itself).
    pub any_reply: bool,
}

impl Workload {
    fn request(&self, i: u64) -> Vec<u8> {
        let key = (i % KEYS as u64) as u32;
        let value = Value::from_counter(i % 1_000_000_000);
        match (self.protocol, self.write) {
            (Protocol::NetCraq, true) => CraqMsg::write(key, value).encode(),
            (Protocol::NetCraq, false) => CraqMsg::read(key).encode(),
            (Protocol::NetChain, write) => {
                let op = if write { NcOp::WriteReq } else { NcOp::ReadReq };
                NcMsg { chain: self.stack.clone(), op, seq: 0, key: key_from_u32(key), value, vgroup: 0 }.encode()
            }
        }
    }

    fn reply_ok(&self, b: &[u8]) -> bool {
        if self.any_reply {
            return true;
        }
        match (self.protocol, self.write) {
            (Protocol::NetCraq, true) => CraqMsg::decode(b).is_ok_and(|m| m.op == KvOp::Ack),
            (Protocol::NetCraq, false) => CraqMsg::decode(b).is_ok_and(|m| m.op == KvOp::ReadReply),
            (Protocol::NetChain, true) => NcMsg::decode(b).is_ok_and(|m| m.op == NcOp::WriteReply),
            (Protocol::NetChain, false) => NcMsg::decode(b).is_ok_and(|m| m.op == NcOp::ReadReply),
        }
    }
}

/// Round trips (one in flight), then the rate phase (`window` in flight).
/// Run it in the namespace the workload's address is reached from.
pub fn probe(c: &BenchConfig, w: &Workload, bind: Ipv4Addr) -> Result<ProbeResult> {
    let sock = UdpSocket::bind((bind, 0)).context("bind probe socket")?;
    sock.set_read_timeout(Some(Duration::from_millis(200)))?;
    let mut r = ProbeResult::default();
    let mut buf = [0u8; 2048];
    let mut i = 0u64;
    for n in 0..c.warmup + c.requests {
        let t0 = Instant::now();
        sock.send_to(&w.request(i), w.to)?;
        i += 1;
        let Ok((len, _)) = sock.recv_from(&mut buf) else {
            r.lost += 1;
            continue;
        };
        let rtt = t0.elapsed().as_nanos() as u64;
        if !w.reply_ok(&buf[..len]) {
            r.wrong_status += 1;
        }
        if n >= c.warmup {
            r.rtts_ns.push(rtt);
        }
    }
    if c.rate_ms == 0 {
        return Ok(r);
    }
    sock.set_read_timeout(Some(Duration::from_millis(50)))?;
    let (start, length) = (Instant::now(), Duration::from_millis(c.rate_ms));
    let mut in_flight = 0usize;
    while start.elapsed() < length {
        while in_flight < c.window.max(1) {
            sock.send_to(&w.request(i), w.to)?;
            i += 1;
            in_flight += 1;
        }
        match sock.recv_from(&mut buf) {
            Ok((len, _)) => {
                in_flight -= 1;
                r.rate_replies += 1;
                if !w.reply_ok(&buf[..len]) {
                    r.wrong_status += 1;
                }
            }
            Err(_) => {
                r.rate_lost += in_flight as u64;
                in_flight = 0;
            }
        }
    }
    r.rate_seconds = start.elapsed().as_secs_f64();
    Ok(r)
}
