//! Golden packet vectors of the transaction format (`golden/txn.json`).
//!
//! The vectors were written by hand from the layout (header `!B I i B B B B`,
//! op `!B I 16s`, big-endian; see `docs/wire.md`), not produced by our
//! encoder, so they check it independently: every valid vector must decode to
//! exactly the listed fields and re-encode to exactly the same bytes, and every
//! malformed one must fail with exactly the named [`DecodeError`].

mod common;

use common::{load, unhex};
use innet_wire::txn::{DecodeError, Flags, OpType, Status, TxnMsg, TxnPacket, VALUE_LEN};
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
    flags: u8,
    cl_id: u32,
    req_id: i32,
    frag_seq: u8,
    frag_cnt: u8,
    status: String,
    ops: Vec<GoldenOp>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct GoldenOp {
    op_type: String,
    key: u32,
    value_hex: String,
}

fn vectors() -> Vec<Vector> {
    load("txn.json")
}

/// The wire codes, written out again here (not taken from the enums) so a
/// renumbering in the crate is caught.
fn op_code(name: &str) -> u8 {
    match name {
        "NOP" => 0,
        "READ" => 1,
        "WRITE" => 2,
        "VALUE" => 3,
        "UPDATED" => 4,
        "CPU_PCT" => 5,
        _ => panic!("unknown op name {name} in golden file"),
    }
}

fn status_code(name: &str) -> u8 {
    match name {
        "OK" => 0,
        "ABORT" => 1,
        "OPTIMISTIC_ABORT" => 2,
        "BADREQ" => 3,
        _ => panic!("unknown status name {name} in golden file"),
    }
}

fn error_by_name(name: &str) -> DecodeError {
    DecodeError::ALL
        .into_iter()
        .find(|e| e.name() == name)
        .unwrap_or_else(|| panic!("unknown DecodeError name {name} in golden file"))
}

fn check_valid(v: &Vector, d: &Decoded) {
    let bytes = unhex(&v.hex);
    let m = TxnMsg::decode(&bytes).unwrap_or_else(|e| panic!("{}: decode failed: {e}", v.name));
    let n = &v.name;
    assert_eq!(m.flags, Flags(d.flags), "{n}: flags");
    assert_eq!(m.cl_id, d.cl_id, "{n}: cl_id");
    assert_eq!(m.req_id, d.req_id, "{n}: req_id");
    assert_eq!(m.frag_seq, d.frag_seq, "{n}: frag_seq");
    assert_eq!(m.frag_cnt, d.frag_cnt, "{n}: frag_cnt");
    assert_eq!(m.status as u8, status_code(&d.status), "{n}: status");
    assert_eq!(m.status.name(), d.status, "{n}: status name");
    assert_eq!(m.ops.len(), d.ops.len(), "{n}: op count");
    for (i, (got, want)) in m.ops.iter().zip(&d.ops).enumerate() {
        assert_eq!(got.kind as u8, op_code(&want.op_type), "{n}: op {i} type");
        assert_eq!(got.kind.name(), want.op_type, "{n}: op {i} type name");
        assert_eq!(got.key, want.key, "{n}: op {i} key");
        let value = unhex(&want.value_hex);
        assert_eq!(value.len(), VALUE_LEN, "{n}: op {i} value_hex width");
        assert_eq!(&got.value.0[..], &value[..], "{n}: op {i} value");
    }
    assert_eq!(m.encode(), bytes, "{n}: re-encoding differs");

    // The in-place view reads the same fields.
    let mut buf = bytes.clone();
    let p = TxnPacket::parse(&mut buf).unwrap_or_else(|e| panic!("{n}: parse failed: {e}"));
    assert_eq!(
        (p.flags(), p.cl_id(), p.req_id(), p.frag_cnt(), p.op_cnt()),
        (m.flags, m.cl_id, m.req_id, m.frag_cnt, m.ops.len()),
        "{n}: TxnPacket view"
    );
    assert_eq!(p.status(), m.status, "{n}: TxnPacket status");
    for (i, op) in m.ops.iter().enumerate() {
        assert_eq!((p.op_type(i), p.key(i), p.value(i)), (op.kind, op.key, op.value), "{n}: TxnPacket op {i}");
    }
}

#[test]
fn valid_vectors_decode_to_the_listed_fields_and_reencode_byte_exact() {
    let vs = vectors();
    let mut checked = 0;
    for v in &vs {
        if let Some(d) = &v.decoded {
            assert!(v.error.is_none(), "{}: both decoded and error", v.name);
            check_valid(v, d);
            checked += 1;
        }
    }
    assert!(checked >= 15, "only {checked} valid vectors");
}

#[test]
fn malformed_vectors_fail_with_exactly_the_named_error() {
    let vs = vectors();
    let mut seen = std::collections::BTreeSet::new();
    for v in &vs {
        let Some(name) = &v.error else { continue };
        assert!(v.decoded.is_none(), "{}: both decoded and error", v.name);
        let want = error_by_name(name);
        let mut bytes = unhex(&v.hex);
        assert_eq!(TxnMsg::decode(&bytes), Err(want), "{}", v.name);
        assert_eq!(TxnPacket::parse(&mut bytes).err(), Some(want), "{}: TxnPacket::parse", v.name);
        seen.insert(want.name());
    }
    for e in DecodeError::ALL {
        assert!(seen.contains(e.name()), "no golden vector for {}", e.name());
    }
}

#[test]
fn vector_names_are_unique_and_cover_the_required_cases() {
    let vs = vectors();
    let names: std::collections::BTreeSet<&str> = vs.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names.len(), vs.len(), "duplicate vector names");
    for required in [
        "request_value_write",
        "store_ok_updated",
        "switch_optimistic_abort",
        "switch_read_cache_answer",
        "flag_msg_type",
        "flag_from_switch",
        "flag_reset",
        "flag_store_commit",
        "seven_ops_max",
        "fragment_2_of_3",
        "negative_req_id",
        "truncated_header",
        "op_cnt_8",
        "op_cnt_beyond_bytes",
        "unknown_op_type_6",
        "unknown_status_4",
        "bad_fragment_seq_0",
    ] {
        assert!(names.contains(required), "missing vector {required}");
    }
}

#[test]
fn switch_vectors_carry_the_switch_flags() {
    for v in vectors() {
        if v.name.starts_with("switch_") {
            let m = TxnMsg::decode(&unhex(&v.hex)).expect("valid");
            assert_eq!(m.flags.0 & 0xC0, 0xC0, "{}", v.name);
            assert!(m.flags.is_response() && m.flags.from_switch());
        }
    }
    let oa = vectors().into_iter().find(|v| v.name == "switch_optimistic_abort").expect("present");
    let m = TxnMsg::decode(&unhex(&oa.hex)).expect("valid");
    assert_eq!(m.status, Status::OptimisticAbort);
    assert_eq!(m.ops[0].kind, OpType::Value);
}
