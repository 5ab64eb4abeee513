//! Arbitrary bytes, split into packets, through a `TxnSwitch` in each of the
//! four modes, with a `TxnStore` behind each switch whose replies come back
//! through it. Must never panic; every packet a switch does not drop must
//! still decode (a data-plane program may rewrite, never corrupt), and every
//! reply the store sends must decode.
//!
//! Framing: each packet is one length byte `n` followed by `n % 161` bytes
//! (a valid packet is at most 160), so the fuzzer can build several packets
//! (and so state: learned values, pending writes, duplicates) in one input.
//! The length byte's top bit says the packet arrives on the switch's store
//! side (a forged "reply" from upstream or a request sent the wrong way),
//! else on its client side; the store sees each packet from one of four
//! sender addresses (the length byte's low bits), so recorded replies meet
//! askers other than the original. Tables are tiny so that evictions happen.
#![no_main]

use innet_core::{DataPlane, Host, Ingress, Outbox, Peer, Sender, Time, Verdict};
use innet_txn::{Mode, TxnStore, TxnSwitch};
use innet_wire::txn::{TxnMsg, MAX_PACKET_LEN};
use libfuzzer_sys::fuzz_target;

const CACHE_SLOTS: usize = 16;
const CLIENT_SLOTS: usize = 8;

/// Packets with the byte that framed them (which carries ingress and sender).
fn packets(mut data: &[u8]) -> Vec<(u8, &[u8])> {
    let mut out = Vec::new();
    while let Some((&len, rest)) = data.split_first() {
        let n = (len as usize % (MAX_PACKET_LEN + 1)).min(rest.len());
        out.push((len, &rest[..n]));
        data = &rest[n..];
    }
    out
}

fn sender(frame: u8) -> Sender {
    Sender { peer: Peer::node((frame & 3) as usize), upstream: false }
}

fn must_decode(bytes: &[u8], what: &str, mode: Mode) {
    if let Err(e) = TxnMsg::decode(bytes) {
        panic!("{mode}: {what} does not decode ({e}): {bytes:02x?}");
    }
}

fuzz_target!(|data: &[u8]| {
    let pkts = packets(data);
    // A store seeing the raw bytes directly: BADREQ or ignore, never panic.
    let mut raw_store = TxnStore::in_memory();
    let mut out = Outbox::new();
    for &(frame, p) in &pkts {
        raw_store.on_packet_from(Time::ZERO, p, sender(frame), &mut out);
        for (_, r) in out.drain() {
            must_decode(&r, "raw store reply", Mode::Forward);
        }
    }
    for mode in Mode::ALL {
        let mut sw = TxnSwitch::new(mode, CACHE_SLOTS, CLIENT_SLOTS);
        let mut store = TxnStore::in_memory();
        for &(frame, p) in &pkts {
            let mut buf = p.to_vec();
            let ingress = if frame & 0x80 != 0 { Ingress::Upstream } else { Ingress::Downstream };
            match sw.process_from(&mut buf, ingress).0 {
                Verdict::Drop => {}
                Verdict::Reflect | Verdict::Downstream { .. } => must_decode(&buf, "switch output", mode),
                Verdict::Upstream { .. } => {
                    must_decode(&buf, "forwarded packet", mode);
                    assert_eq!(&buf[..], &p[..], "{mode}: a forwarded packet was rewritten");
                    store.on_packet_from(Time::ZERO, &buf, sender(frame), &mut out);
                    for (_, mut reply) in out.drain().collect::<Vec<_>>() {
                        must_decode(&reply, "store reply", mode);
                        let v = sw.process_from(&mut reply, Ingress::Upstream).0;
                        if v != Verdict::Drop {
                            must_decode(&reply, "switch output for a store reply", mode);
                        }
                    }
                }
                other => panic!("{mode}: the transaction switch never returns {other:?}"),
            }
        }
        let _ = sw.counters.dropped_malformed_total();
    }
});
