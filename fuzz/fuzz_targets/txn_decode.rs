//! `TxnMsg::decode` on arbitrary bytes: never panics; whatever decodes
//! re-encodes to bytes that decode to the same message, and those bytes are
//! the input's prefix (decode ignores only bytes after the last op). The
//! in-place view (`TxnPacket::parse`) must agree with `decode` on every input.
#![no_main]

use innet_wire::txn::{TxnMsg, TxnPacket, HEADER_LEN, OP_LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let decoded = TxnMsg::decode(data);
    let mut buf = data.to_vec();
    let parsed = TxnPacket::parse(&mut buf).map(|p| p.op_cnt());
    match decoded {
        Ok(m) => {
            assert_eq!(parsed, Ok(m.ops.len()), "TxnPacket::parse disagrees with decode");
            let bytes = m.encode();
            assert_eq!(bytes.len(), HEADER_LEN + m.ops.len() * OP_LEN);
            assert_eq!(&bytes[..], &data[..bytes.len()], "encode(decode(x)) is not a prefix of x");
            let again = TxnMsg::decode(&bytes).expect("re-encoded message decodes");
            assert_eq!(again, m, "decode(encode(m)) != m");
        }
        Err(e) => assert_eq!(parsed.err(), Some(e), "TxnPacket::parse disagrees with decode"),
    }
});
