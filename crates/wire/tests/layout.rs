//! The layout constants of the transaction format, checked against the
//! hand-built golden vectors (`golden/txn.json`) byte by byte, so the numbers
//! a BPF header or another client copies are the numbers on the wire.

mod common;

use common::unhex;
use innet_wire::txn::{offset, HEADER_LEN, MAX_OPS_PER_PACKET, MAX_PACKET_LEN, OP_LEN, VALUE_LEN};

fn vectors() -> Vec<serde_json::Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/golden/txn.json");
    let text = std::fs::read_to_string(path).expect("read golden/txn.json");
    serde_json::from_str(&text).expect("golden/txn.json parses")
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes(b[..4].try_into().expect("4 bytes"))
}

#[test]
fn constants_have_the_reference_values() {
    assert_eq!(HEADER_LEN, 13, "!B I i B B B B");
    assert_eq!(VALUE_LEN, 16);
    assert_eq!(OP_LEN, 21, "!B I 16s");
    assert_eq!(MAX_OPS_PER_PACKET, 7);
    assert_eq!(MAX_PACKET_LEN, 160);
    assert_eq!(
        [
            offset::FLAGS,
            offset::CL_ID,
            offset::REQ_ID,
            offset::FRAG_SEQ,
            offset::FRAG_CNT,
            offset::STATUS,
            offset::OP_CNT,
        ],
        [0, 1, 5, 9, 10, 11, 12]
    );
    assert_eq!([offset::OP_TYPE, offset::OP_KEY, offset::OP_VALUE], [0, 1, 5]);
    assert_eq!(offset::OP_CNT + 1, HEADER_LEN, "op_cnt is the last header byte");
    assert_eq!(offset::OP_VALUE + VALUE_LEN, OP_LEN, "value is the last op field");
}

#[test]
fn every_valid_vector_has_its_fields_at_the_offsets() {
    let mut checked = 0;
    for v in vectors() {
        let Some(d) = v.get("decoded") else { continue };
        let name = v["name"].as_str().expect("name");
        let b = unhex(v["hex"].as_str().expect("hex"));
        let ops = d["ops"].as_array().expect("ops");
        assert_eq!(b.len(), HEADER_LEN + ops.len() * OP_LEN, "{name}: length");
        assert_eq!(b[offset::FLAGS] as u64, d["flags"].as_u64().unwrap(), "{name}");
        assert_eq!(be32(&b[offset::CL_ID..]) as u64, d["cl_id"].as_u64().unwrap(), "{name}");
        assert_eq!(be32(&b[offset::REQ_ID..]) as i32 as i64, d["req_id"].as_i64().unwrap(), "{name}");
        assert_eq!(b[offset::FRAG_SEQ] as u64, d["frag_seq"].as_u64().unwrap(), "{name}");
        assert_eq!(b[offset::FRAG_CNT] as u64, d["frag_cnt"].as_u64().unwrap(), "{name}");
        assert_eq!(b[offset::OP_CNT] as usize, ops.len(), "{name}: op_cnt");
        for (i, op) in ops.iter().enumerate() {
            let o = HEADER_LEN + i * OP_LEN;
            assert_eq!(be32(&b[o + offset::OP_KEY..]) as u64, op["key"].as_u64().unwrap(), "{name} op {i}");
            let value = unhex(op["value_hex"].as_str().unwrap());
            assert_eq!(&b[o + offset::OP_VALUE..o + OP_LEN], &value[..], "{name} op {i}");
        }
        checked += 1;
    }
    assert!(checked > 0);
}

#[test]
fn the_seven_op_vector_is_the_largest_packet() {
    let v = vectors().into_iter().find(|v| v["name"] == "seven_ops_max").expect("seven_ops_max present");
    let b = unhex(v["hex"].as_str().unwrap());
    assert_eq!(b.len(), MAX_PACKET_LEN);
    assert_eq!(b[offset::OP_CNT] as usize, MAX_OPS_PER_PACKET);
}

#[test]
fn the_negative_req_id_vector_is_twos_complement_big_endian() {
    let v = vectors().into_iter().find(|v| v["name"] == "negative_req_id").expect("negative_req_id present");
    let b = unhex(v["hex"].as_str().unwrap());
    assert_eq!(&b[offset::REQ_ID..offset::REQ_ID + 4], &[0xff, 0xff, 0xff, 0xfe]);
}
