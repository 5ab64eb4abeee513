//! Golden packet vectors of the Paxos format (`golden/paxos.json`).
//!
//! The vectors were built from the layout (Python `struct` format
//! `!H I H H H I 32s`, P4xos's `paxos_t`; see `docs/wire.md`), not by our
//! encoder: every valid vector must decode to exactly the listed fields and
//! re-encode to the same 48 bytes, every malformed one must fail with exactly
//! the named [`DecodeError`], and the in-place view must agree.

mod common;

use common::{load, unhex};
use innet_wire::paxos::{DecodeError, MsgType, PaxosMsg, PaxosPacket, PACKET_LEN, VALUE_LEN};
use serde::Deserialize;

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Vector {
    name: String,
    #[allow(dead_code)]
    description: String,
    hex: String,
    decoded: Option<Decoded>,
    error: Option<String>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Decoded {
    msgtype: String,
    inst: u32,
    rnd: u16,
    vrnd: u16,
    acptid: u16,
    value_len: u32,
    value_hex: String,
}

fn vectors() -> Vec<Vector> {
    load("paxos.json")
}

/// The wire codes written out again (not taken from the enum), so a
/// renumbering in the crate is caught. 0-3 are P4xos's.
fn type_code(name: &str) -> u16 {
    match name {
        "PHASE_1A" => 0,
        "PHASE_1B" => 1,
        "PHASE_2A" => 2,
        "PHASE_2B" => 3,
        "REQUEST" => 4,
        "TRIM" => 5,
        "HEARTBEAT" => 6,
        "TAKEOVER" => 7,
        "CATCHUP" => 8,
        "DECIDED" => 9,
        "WINDOW" => 10,
        _ => panic!("unknown msgtype {name} in golden file"),
    }
}

#[test]
fn valid_vectors_decode_to_the_listed_fields_and_reencode_byte_exact() {
    let mut checked = 0;
    let mut types = std::collections::BTreeSet::new();
    for v in vectors() {
        let Some(d) = &v.decoded else { continue };
        assert!(v.error.is_none(), "{}: both decoded and error", v.name);
        let n = &v.name;
        let bytes = unhex(&v.hex);
        let m = PaxosMsg::decode(&bytes).unwrap_or_else(|e| panic!("{n}: {e}"));
        assert_eq!(m.msgtype as u16, type_code(&d.msgtype), "{n}: msgtype");
        assert_eq!(m.msgtype.name(), d.msgtype, "{n}: msgtype name");
        assert_eq!((m.inst, m.rnd, m.vrnd, m.acptid), (d.inst, d.rnd, d.vrnd, d.acptid), "{n}: fields");
        assert_eq!(m.value.len, d.value_len, "{n}: value_len");
        let value = unhex(&d.value_hex);
        assert_eq!(value.len(), VALUE_LEN, "{n}: value_hex width");
        assert_eq!(&m.value.bytes[..], &value[..], "{n}: value");
        assert_eq!(m.encode(), bytes[..PACKET_LEN], "{n}: re-encoding differs");
        let mut buf = bytes.clone();
        let p = PaxosPacket::parse(&mut buf).unwrap_or_else(|e| panic!("{n}: parse: {e}"));
        assert_eq!(
            (p.msgtype(), p.inst(), p.rnd(), p.vrnd(), p.acptid(), p.value()),
            (m.msgtype, m.inst, m.rnd, m.vrnd, m.acptid, m.value),
            "{n}: view"
        );
        types.insert(m.msgtype as u16);
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} valid vectors");
    for t in MsgType::ALL {
        assert!(types.contains(&(t as u16)), "no golden vector for {}", t.name());
    }
}

#[test]
fn malformed_vectors_fail_with_exactly_the_named_error() {
    let mut seen = std::collections::BTreeSet::new();
    for v in vectors() {
        let Some(name) = &v.error else { continue };
        assert!(v.decoded.is_none(), "{}: both decoded and error", v.name);
        let want = DecodeError::ALL.into_iter().find(|e| e.name() == name).expect("known error name");
        let mut bytes = unhex(&v.hex);
        assert_eq!(PaxosMsg::decode(&bytes), Err(want), "{}", v.name);
        assert_eq!(PaxosPacket::parse(&mut bytes).err(), Some(want), "{}: parse", v.name);
        seen.insert(want.name());
    }
    for e in DecodeError::ALL {
        assert!(seen.contains(e.name()), "no golden vector for {}", e.name());
    }
}

#[test]
fn names_are_unique() {
    let vs = vectors();
    let names: std::collections::BTreeSet<&str> = vs.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names.len(), vs.len());
}
