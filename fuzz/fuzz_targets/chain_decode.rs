//! The NetCRAQ and NetChain decoders on arbitrary bytes: never panic;
//! whatever decodes re-encodes to a prefix of the input that decodes to the
//! same message; the in-place views agree with the decoders; popping a
//! NetChain address yields the message with its first address removed.
#![no_main]

use innet_wire::netchain::{NcMsg, NcPacket};
use innet_wire::netcraq::{CraqMsg, CraqPacket, LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut buf = data.to_vec();
    match CraqMsg::decode(data) {
        Ok(m) => {
            let b = m.encode();
            assert_eq!(b.len(), LEN);
            assert_eq!(&b[..], &data[..LEN], "encode(decode(x)) is not a prefix of x");
            let p = CraqPacket::parse(&mut buf).expect("view agrees");
            assert_eq!((p.op(), p.key(), p.value()), (m.op, m.key, m.value));
        }
        Err(e) => assert_eq!(CraqPacket::parse(&mut buf).err(), Some(e)),
    }
    let mut buf = data.to_vec();
    match NcMsg::decode(data) {
        Ok(m) => {
            let b = m.encode();
            assert_eq!(&b[..], &data[..b.len()], "encode(decode(x)) is not a prefix of x");
            assert_eq!(NcMsg::decode(&b).as_ref(), Ok(&m));
            let mut p = NcPacket::parse(&mut buf).expect("view agrees");
            assert_eq!((p.depth(), p.op(), p.seq(), p.key(), p.value()), (m.chain.len(), m.op, m.seq, m.key, m.value));
            if p.depth() > 0 {
                p.pop();
                let len = p.len();
                let popped = NcMsg::decode(&buf[..len]).expect("a popped packet decodes");
                assert_eq!(popped, NcMsg { chain: m.chain[1..].to_vec(), ..m });
            }
        }
        Err(e) => assert_eq!(NcPacket::parse(&mut buf).err(), Some(e)),
    }
});
