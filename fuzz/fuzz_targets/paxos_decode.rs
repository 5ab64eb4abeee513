//! `PaxosMsg::decode` on arbitrary bytes: never panics; whatever decodes
//! re-encodes to the input's first 48 bytes, and the in-place view
//! (`PaxosPacket::parse`) agrees with `decode` on every input.
#![no_main]

use innet_wire::paxos::{PaxosMsg, PaxosPacket, PACKET_LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let decoded = PaxosMsg::decode(data);
    let mut buf = data.to_vec();
    let parsed = PaxosPacket::parse(&mut buf).map(|p| (p.msgtype(), p.inst(), p.value()));
    match decoded {
        Ok(m) => {
            assert_eq!(parsed, Ok((m.msgtype, m.inst, m.value)), "PaxosPacket::parse disagrees with decode");
            let bytes = m.encode();
            assert_eq!(&bytes[..], &data[..PACKET_LEN], "encode(decode(x)) is not x's first 48 bytes");
            assert_eq!(PaxosMsg::decode(&bytes), Ok(m));
        }
        Err(e) => assert_eq!(parsed.err(), Some(e), "PaxosPacket::parse disagrees with decode"),
    }
});
