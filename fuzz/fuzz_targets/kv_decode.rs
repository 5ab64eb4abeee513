//! The KV service's message decoder (`innet kv`, crates/wire/src/kv.rs) on
//! arbitrary bytes: never panics; whatever decodes re-encodes to exactly
//! the input (a message is a whole datagram or TCP frame, its body exactly
//! `body_len` bytes); a message decodes only if its header does, with the
//! same client and sequence number.
#![no_main]

use innet_wire::kv::{Body, Header, Message, HEADER_LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let header = Header::decode(data);
    match Message::decode(data) {
        Ok(m) => {
            let h = header.expect("a message's header decodes");
            assert_eq!((h.client, h.seq), (m.client, m.seq));
            assert_eq!(h.body_len as usize, data.len() - HEADER_LEN);
            assert_eq!(m.encode().as_deref(), Some(data), "encode(decode(x)) is not x");
            if let Body::Request(op) = &m.body {
                assert!(op.key().len() <= innet_wire::kv::KEY_MAX);
            }
        }
        Err(e) => {
            if let Err(he) = header {
                assert_eq!(e, he, "a bad header is the message's reason");
            }
        }
    }
});
