//! The packed-value decoder (`innet_paxos::envelope::Contents::of`) on
//! arbitrary values: never panics; a packed value re-packs to the same
//! bytes (entries of one proposer, consecutive requests below
//! `REQUEST_MAX`); an unpacked one re-encodes to itself; and a learner
//! deciding the value delivers exactly its client values, in order (index
//! 0, 1, ...), or, for a malformed one, nothing and counts it.
#![no_main]

use innet_core::{Host, Outbox, Time};
use innet_paxos::envelope::{Contents, PackBuilder, PACKED, REQUEST_MAX};
use innet_paxos::{Learner, LearnerConfig};
use innet_wire::paxos::{MsgType, PaxosMsg, Value, VALUE_LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let v = Value::new(&data[..data.len().min(VALUE_LEN)]).expect("at most VALUE_LEN");
    let contents = Contents::of(&v);
    let expect = match &contents {
        Contents::Packed(es) => {
            assert!(!es.is_empty());
            let mut b = PackBuilder::new(es[0].proposer, es[0].request);
            for (k, e) in es.iter().enumerate() {
                assert_eq!((e.proposer, e.request), (es[0].proposer, es[0].request + k as u32));
                assert!(e.request < REQUEST_MAX);
                assert!(b.push(e.payload()), "an entry that decoded fits again");
            }
            assert_eq!(b.to_value(), v, "re-packing gives the same bytes");
            es.iter().map(|e| e.to_value()).collect()
        }
        Contents::Single(e) => {
            assert_eq!(e.request & PACKED, 0);
            assert_eq!(e.to_value(), v);
            vec![v]
        }
        Contents::Malformed => vec![],
        Contents::Foreign => {
            assert!((v.len as usize) < innet_paxos::envelope::ENVELOPE_HEADER_LEN);
            vec![v]
        }
    };
    let mut l = Learner::new(LearnerConfig::new(0, 1));
    let mut d = PaxosMsg::new(MsgType::Decided);
    d.value = v;
    l.on_packet(Time(1), &d.encode(), &mut Outbox::new());
    let got = l.take_deliveries();
    assert_eq!(got.iter().map(|d| d.value).collect::<Vec<_>>(), expect);
    assert!(got.iter().enumerate().all(|(k, d)| d.instance == 0 && d.index as usize == k));
    assert_eq!(l.stats.malformed, u64::from(contents == Contents::Malformed));
    assert_eq!(l.checkpoint(), 1, "the instance is decided whatever it holds");
});
