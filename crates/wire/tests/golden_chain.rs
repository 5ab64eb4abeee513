//! Golden vectors of the chain formats (`golden/netcraq.json`,
//! `golden/netchain.json`), written from the layouts in `docs/wire.md`
//! (NetCRAQ `!B I 16s`; NetChain `!I`* `0` then `!B B H 16s 16s H`, the
//! `reference_*` ones as netchain-p4's `client/nc_socket.py` packs them) with
//! Python's `struct`, not with our encoder. Valid vectors decode to the listed
//! fields and re-encode byte-exact (minus ignored trailing bytes); malformed
//! ones fail with exactly the named error, in the owned and in-place parsers.

mod common;

use common::{load, unhex};
use innet_wire::netchain::{self, NcMsg, NcPacket};
use innet_wire::netcraq::{self, CraqMsg, CraqPacket};
use serde::Deserialize;

/// A malformed vector: the owned and in-place parsers both fail, with the
/// named error; returns that name.
fn malformed<E: Copy + PartialEq + std::fmt::Debug>(
    n: &str,
    want: &str,
    decoded: Option<E>,
    viewed: Option<E>,
    name: fn(E) -> &'static str,
) -> &'static str {
    let got = decoded.unwrap_or_else(|| panic!("{n}: decoded although malformed"));
    assert_eq!(name(got), want, "{n}");
    assert_eq!(viewed, Some(got), "{n}: view");
    name(got)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CraqVector {
    name: String,
    #[allow(dead_code)]
    description: String,
    hex: String,
    decoded: Option<CraqDecoded>,
    error: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CraqDecoded {
    kv_op: String,
    key: u32,
    value_hex: String,
}

/// The codes written out again here, so a renumbering in the crate is caught.
fn craq_code(name: &str) -> u8 {
    match name {
        "READ" => 1,
        "READ_REPLY" => 2,
        "WRITE" => 3,
        "WRITE_REPLY" => 4,
        "ACK" => 5,
        "WRITE_REFUSED" => 6,
        _ => panic!("unknown kv_op {name}"),
    }
}

fn nc_code(name: &str) -> u8 {
    match name {
        "READ_REQ" => 10,
        "READ_REPLY" => 11,
        "WRITE_REQ" => 12,
        "WRITE_REPLY" => 13,
        _ => panic!("unknown op {name}"),
    }
}

#[test]
fn netcraq_vectors() {
    let vs: Vec<CraqVector> = load("netcraq.json");
    let (mut valid, mut errors) = (0, std::collections::BTreeSet::new());
    for v in &vs {
        let mut bytes = unhex(&v.hex);
        let n = &v.name;
        match (&v.decoded, &v.error) {
            (Some(d), None) => {
                let m = CraqMsg::decode(&bytes).unwrap_or_else(|e| panic!("{n}: {e}"));
                assert_eq!(m.op as u8, craq_code(&d.kv_op), "{n}: kv_op");
                assert_eq!(m.op.name(), d.kv_op, "{n}: name");
                assert_eq!(m.key, d.key, "{n}: key");
                assert_eq!(m.value.0.to_vec(), unhex(&d.value_hex), "{n}: value");
                assert_eq!(m.encode(), bytes[..netcraq::LEN], "{n}: re-encoding");
                let p = CraqPacket::parse(&mut bytes).unwrap();
                assert_eq!((p.op(), p.key(), p.value()), (m.op, m.key, m.value), "{n}: view");
                valid += 1;
            }
            (None, Some(e)) => {
                let (d, v) = (CraqMsg::decode(&bytes).err(), CraqPacket::parse(&mut bytes).err());
                errors.insert(malformed(n, e, d, v, netcraq::DecodeError::name));
            }
            _ => panic!("{n}: exactly one of decoded and error"),
        }
    }
    assert!(valid >= 8, "{valid} valid vectors");
    for e in netcraq::DecodeError::ALL {
        assert!(errors.contains(e.name()), "no vector for {}", e.name());
    }
    for op in netcraq::KvOp::ALL {
        let seen = vs.iter().any(|v| v.decoded.as_ref().is_some_and(|d| d.kv_op == op.name()));
        assert!(seen, "no vector for {}", op.name());
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NcVector {
    name: String,
    #[allow(dead_code)]
    description: String,
    hex: String,
    decoded: Option<NcDecoded>,
    error: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NcDecoded {
    chain: Vec<u32>,
    op: String,
    seq: u16,
    key_hex: String,
    value_hex: String,
    vgroup: u16,
}

#[test]
fn netchain_vectors() {
    let vs: Vec<NcVector> = load("netchain.json");
    let (mut valid, mut errors) = (0, std::collections::BTreeSet::new());
    for v in &vs {
        let mut bytes = unhex(&v.hex);
        let n = &v.name;
        match (&v.decoded, &v.error) {
            (Some(d), None) => {
                let m = NcMsg::decode(&bytes).unwrap_or_else(|e| panic!("{n}: {e}"));
                assert_eq!(m.chain, d.chain, "{n}: chain");
                assert_eq!(m.op as u8, nc_code(&d.op), "{n}: op");
                assert_eq!((m.seq, m.vgroup), (d.seq, d.vgroup), "{n}: seq, vgroup");
                assert_eq!(m.key.to_vec(), unhex(&d.key_hex), "{n}: key");
                assert_eq!(m.value.0.to_vec(), unhex(&d.value_hex), "{n}: value");
                let enc = m.encode();
                assert_eq!(enc, bytes[..enc.len()], "{n}: re-encoding");
                let p = NcPacket::parse(&mut bytes).unwrap();
                assert_eq!(
                    (p.depth(), p.op(), p.seq(), p.key(), p.value()),
                    (m.chain.len(), m.op, m.seq, m.key, m.value)
                );
                assert_eq!(p.len(), enc.len(), "{n}: view length");
                valid += 1;
            }
            (None, Some(e)) => {
                let (d, v) = (NcMsg::decode(&bytes).err(), NcPacket::parse(&mut bytes).err());
                errors.insert(malformed(n, e, d, v, netchain::DecodeError::name));
            }
            _ => panic!("{n}: exactly one of decoded and error"),
        }
    }
    assert!(valid >= 7, "{valid} valid vectors");
    for e in netchain::DecodeError::ALL {
        assert!(errors.contains(e.name()), "no vector for {}", e.name());
    }
}

/// The head's pop (NetChain section 4) turns the client's 4-node write into
/// the next vector byte for byte, once the head has written its sequence.
/// The bytes of the NetChain vector `name`.
fn nc_vector(name: &str) -> Vec<u8> {
    let vs: Vec<NcVector> = load("netchain.json");
    unhex(&vs.iter().find(|v| v.name == name).expect(name).hex)
}

#[test]
fn netchain_pop_turns_one_vector_into_the_next() {
    let hex = nc_vector;
    let mut b = hex("write_req_4_chain");
    let mut p = NcPacket::parse(&mut b).unwrap();
    p.pop();
    p.set_seq(1);
    let len = p.len();
    b.truncate(len);
    assert_eq!(b, hex("write_req_after_head"));
}

/// The reference's tail (netchain-p4 `p4src/netchain.p4`: `pop_chain`,
/// `pop_chain_again`, `gen_reply`) turns the write that reached it into the
/// 38-byte write reply, and the reversed-stack read into the read reply
/// that keeps the rest of its stack.
#[test]
fn netchain_the_tails_pops_make_the_reference_replies() {
    let hex = nc_vector;
    let mut w = hex("reference_write_request");
    let mut p = NcPacket::parse(&mut w).unwrap();
    p.set_seq(1);
    for _ in 0..3 {
        p.pop();
    }
    p.set_op(netchain::NcOp::WriteReply);
    p.pop();
    let len = p.len();
    w.truncate(len);
    assert_eq!(w, hex("reference_write_reply"));
    let mut r = hex("reference_read_request");
    let mut p = NcPacket::parse(&mut r).unwrap();
    p.pop();
    p.set_op(netchain::NcOp::ReadReply);
    p.set_seq(1);
    p.set_value(NcMsg::decode(&hex("reference_write_reply")).unwrap().value);
    let len = p.len();
    r.truncate(len);
    assert_eq!(r, hex("reference_read_reply"));
}
