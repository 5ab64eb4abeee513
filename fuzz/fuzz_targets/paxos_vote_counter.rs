//! Arbitrary bytes, split into packets, through a `VoteCounter` (tiny ring,
//! so evictions and stale instances happen) and, for what it passes up, an
//! ordered `Learner` behind it, as on a learner's host. Must never panic; a
//! vote the counter turns into a decision must still decode as a DECIDED of
//! the same instance, round and value; the counter's counters add up to the
//! packets it saw.
//!
//! Framing: one length byte `n`, then `n % (PACKET_LEN + 9)` bytes (a little
//! beyond the packet length, to reach the too-long and short cases); the
//! first byte picks the number of acceptors (1..=8) and the ring size.
#![no_main]

use innet_core::{Counters, DataPlane, Host, Outbox, Time, Verdict};
use innet_paxos::vote_counter::{VoteCounter, VoteCounterConfig, COUNTER_ACPTID};
use innet_paxos::{Learner, LearnerConfig};
use innet_wire::paxos::{MsgType, PaxosMsg, PACKET_LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, mut rest)) = data.split_first() else { return };
    let acceptors = 1 + (pick % 8) as usize;
    let mut config = VoteCounterConfig::new(acceptors);
    config.slots = [2, 4, 16][(pick as usize >> 3) % 3];
    let mut counter = VoteCounter::new(config);
    let mut learner = Learner::new(LearnerConfig::new(0, config.quorum));
    let mut out = Outbox::new();
    let mut seen = 0u64;
    let mut now = Time::ZERO;
    while let Some((&len, tail)) = rest.split_first() {
        let n = (len as usize % (PACKET_LEN + 9)).min(tail.len());
        let mut pkt = tail[..n].to_vec();
        rest = &tail[n..];
        seen += 1;
        let before = PaxosMsg::decode(&pkt).ok();
        let verdict = counter.process(&mut pkt);
        if let (Some(b), Verdict::Port { .. }) = (before, verdict) {
            if b.msgtype == MsgType::Phase2B {
                let after = PaxosMsg::decode(&pkt).expect("a vote passed up still decodes");
                if after.msgtype == MsgType::Decided {
                    assert_eq!(after.acptid, COUNTER_ACPTID);
                    assert_eq!((after.inst, after.vrnd, after.value), (b.inst, b.vrnd, b.value));
                }
            }
        }
        if verdict != Verdict::Drop {
            now = Time(now.0 + 1_000);
            learner.on_packet(now, &pkt, &mut out);
            out.sends.clear();
            learner.on_tick(now, &mut out);
            out.sends.clear();
        }
    }
    let total: u64 = counter
        .counters()
        .iter()
        .filter(|(k, _)| {
            ["decisions", "counted", "duplicates", "late", "passed_stale", "bad_acceptor", "passed", "decode_errors"]
                .contains(k)
        })
        .map(|(_, v)| v)
        .sum();
    assert_eq!(total, seen, "every packet counted once: {:?}", counter.counters());
});
