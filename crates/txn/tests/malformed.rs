//! Malformed input at the state-machine level (`docs/wire.md`, "Malformed
//! input"): the switch drops every malformed packet and counts it under its
//! [`DecodeError`] reason, in every mode; the store answers BADREQ when the
//! 13-byte header is readable and ignores shorter bytes; neither panics, and
//! both keep working for valid traffic afterwards.

use innet_core::{DataPlane, Outbox, Verdict};
use innet_txn::{Mode, TxnStore, TxnSwitch};
use innet_wire::txn::{offset, DecodeError, Op, Status, TxnMsg, Value, HEADER_LEN, MAX_OPS_PER_PACKET};

fn v(s: &str) -> Value {
    Value::from_str_padded(s).expect("fits")
}

/// A valid request: VALUE(1,'a') WRITE(1,'b') from client 7, request 3.
fn valid() -> Vec<u8> {
    TxnMsg::request(7, 3, vec![Op::value(1, v("a")), Op::write(1, v("b"))]).encode()
}

/// One malformed packet per decode error, built by corrupting [`valid`].
fn malformed(e: DecodeError) -> Vec<u8> {
    let mut b = valid();
    match e {
        DecodeError::Truncated => b.truncate(HEADER_LEN - 1),
        DecodeError::TooManyOps => b[offset::OP_CNT] = MAX_OPS_PER_PACKET as u8 + 1,
        DecodeError::OpsBeyondPacket => b[offset::OP_CNT] = 3,
        DecodeError::UnknownOpType => b[HEADER_LEN + offset::OP_TYPE] = 6,
        DecodeError::UnknownStatus => b[offset::STATUS] = 4,
        DecodeError::BadFragment => {
            b[offset::FRAG_SEQ] = 4;
            b[offset::FRAG_CNT] = 3;
        }
    }
    assert_eq!(TxnMsg::decode(&b), Err(e), "test packet for {e}");
    b
}

/// The three cases the issue names, plus the other reasons.
const NAMED: [DecodeError; 3] = [DecodeError::Truncated, DecodeError::OpsBeyondPacket, DecodeError::UnknownOpType];

#[test]
fn switch_drops_malformed_packets_and_counts_them_by_reason_in_every_mode() {
    for mode in Mode::ALL {
        for e in NAMED.into_iter().chain(DecodeError::ALL) {
            let mut sw = TxnSwitch::with_defaults(mode);
            let mut b = malformed(e);
            let before = b.clone();
            assert_eq!(sw.process(&mut b), Verdict::Drop, "{mode}: {e}");
            assert_eq!(b, before, "{mode}: {e}: a dropped packet was rewritten");
            let mut want = [0u64; DecodeError::ALL.len()];
            want[e.index()] = 1;
            assert_eq!(sw.counters.dropped_malformed, want, "{mode}: {e}");
            assert_eq!(sw.counters.dropped_malformed_total(), 1);
            assert_eq!((sw.counters.requests, sw.counters.responses), (0, 0), "{mode}: {e}");
            // Still a working switch: a valid request is forwarded.
            let mut ok = valid();
            assert!(matches!(sw.process(&mut ok), Verdict::Upstream { flow: 7 }), "{mode}: after {e}");
        }
    }
}

#[test]
fn switch_counts_a_stream_of_mixed_garbage_per_reason() {
    for mode in Mode::ALL {
        let mut sw = TxnSwitch::with_defaults(mode);
        for (n, e) in DecodeError::ALL.into_iter().enumerate() {
            for _ in 0..=n {
                assert_eq!(sw.process(&mut malformed(e)), Verdict::Drop);
            }
        }
        for e in DecodeError::ALL {
            assert_eq!(sw.counters.dropped_malformed[e.index()], e.index() as u64 + 1, "{mode}: {e}");
        }
    }
}

fn store_reply(store: &mut TxnStore, bytes: &[u8]) -> Vec<TxnMsg> {
    let mut out = Outbox::new();
    store.handle(bytes, &mut out);
    out.drain().map(|(_, b)| TxnMsg::decode(&b).expect("store replies decode")).collect()
}

#[test]
fn store_answers_badreq_when_the_header_is_readable_and_keeps_working() {
    for e in DecodeError::ALL {
        if e == DecodeError::Truncated {
            continue;
        }
        let mut s = TxnStore::in_memory();
        let r = store_reply(&mut s, &malformed(e));
        assert_eq!(r.len(), 1, "{e}: one BADREQ reply");
        let r = &r[0];
        assert_eq!(r.status, Status::BadRequest, "{e}");
        assert_eq!((r.cl_id, r.req_id), (7, 3), "{e}: the reply names the request");
        assert!(r.flags.is_response() && !r.flags.from_switch(), "{e}");
        assert!(r.ops.is_empty(), "{e}");
        assert_eq!(s.counters.malformed[e.index()], 1, "{e}");
        assert_eq!(s.counters.bad_requests, 1, "{e}");
        // The store wrote nothing and remembers nothing: the same request id,
        // now valid, is decided normally.
        assert_eq!(s.get(1), Value::ZERO);
        let r = store_reply(&mut s, &valid());
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].status, Status::Abort, "{e}: VALUE(1,'a') is stale against the empty key");
        let ok = TxnMsg::request(7, 4, vec![Op::write(1, v("b"))]).encode();
        let r = store_reply(&mut s, &ok);
        assert_eq!((r[0].status, r[0].ops.clone()), (Status::Ok, vec![Op::updated(1, v("b"))]));
        assert_eq!(s.get(1), v("b"), "{e}");
    }
}

#[test]
fn store_ignores_bytes_shorter_than_the_header() {
    let mut s = TxnStore::in_memory();
    let b = valid();
    for n in 0..HEADER_LEN {
        assert!(store_reply(&mut s, &b[..n]).is_empty(), "{n} bytes answered");
    }
    assert_eq!(s.counters.ignored_short, HEADER_LEN as u64);
    assert_eq!(s.counters.malformed[DecodeError::Truncated.index()], HEADER_LEN as u64);
    assert_eq!(s.counters.bad_requests, 0);
    let r = store_reply(&mut s, &TxnMsg::request(7, 1, vec![Op::write(2, v("x"))]).encode());
    assert_eq!(r[0].status, Status::Ok);
}

#[test]
fn store_ignores_malformed_responses() {
    let mut s = TxnStore::in_memory();
    let mut b = malformed(DecodeError::UnknownOpType);
    b[offset::FLAGS] = 0x80;
    assert!(store_reply(&mut s, &b).is_empty(), "a malformed response gets no reply");
    assert_eq!(s.counters.bad_requests, 0);
}

/// Every prefix, and every single byte set to each of a few interesting
/// values, of a valid request: the switch (each mode) and the store never
/// panic, whatever the switch does not drop still decodes, and the store's
/// replies decode.
#[test]
fn no_single_byte_corruption_or_truncation_panics() {
    let base = TxnMsg::request(9, -1, vec![Op::value(1, v("a")), Op::write(1, v("b")), Op::read(2)]).encode();
    let mut inputs: Vec<Vec<u8>> = (0..=base.len()).map(|n| base[..n].to_vec()).collect();
    for i in 0..base.len() {
        for x in [0x00, 0x01, 0x03, 0x06, 0x08, 0x10, 0x20, 0x80, 0xc0, 0xff] {
            let mut b = base.clone();
            b[i] = x;
            inputs.push(b);
        }
    }
    for mode in Mode::ALL {
        let mut sw = TxnSwitch::new(mode, 16, 8);
        let mut store = TxnStore::in_memory();
        for input in &inputs {
            let mut b = input.clone();
            let verdict = sw.process(&mut b);
            if verdict != Verdict::Drop {
                assert!(TxnMsg::decode(&b).is_ok(), "{mode}: {verdict:?} for {input:02x?}");
            }
            for r in store_reply(&mut store, input) {
                assert!(r.flags.is_response());
            }
        }
        assert!(sw.counters.dropped_malformed_total() > 0);
    }
}

#[test]
fn a_transaction_beyond_255_fragments_gives_up_unsent_and_a_top_counter_wraps() {
    use innet_core::{Host, Time};
    use innet_txn::client::GiveUp;
    use innet_txn::{ClientConfig, Txn, TxnClient};
    use innet_wire::txn::MAX_OPS_PER_TXN;
    // Before: `TxnMsg::fragments` asserted, so a body with 1,786 writes
    // (from the library or the Python package) panicked the client.
    let mut c = TxnClient::new(ClientConfig::new(9));
    let mut out = Outbox::new();
    c.start(
        Time::ZERO,
        Txn::body(|t| {
            for k in 0..=MAX_OPS_PER_TXN as u32 {
                t.write(k, Value::from_counter(1));
            }
        }),
        &mut out,
    );
    let done = c.poll().expect("finished at once");
    assert_eq!(done.gave_up, Some(GiveUp::TooLarge));
    assert!(out.drain().next().is_none(), "nothing was sent");
    assert_eq!(c.counters.too_large, 1);
    // A counter anyone may write, 16 nines, increments to 0 (it asserted).
    let mut c = TxnClient::new(ClientConfig::new(10));
    c.start(Time::ZERO, Txn::increment(1), &mut out);
    let (_, first) = out.drain().next().expect("the first attempt");
    let top = Value::from_str_padded("9999999999999999").unwrap();
    let reply = TxnMsg::decode(&first).unwrap().reply(Status::Abort, false, vec![Op::value(1, top)]);
    c.on_packet(Time(1), &reply.encode(), &mut out);
    let sent: Vec<_> = out.drain().map(|(_, b)| TxnMsg::decode(&b).unwrap()).collect();
    let retry = sent.last().expect("the increment is re-run with the correction");
    assert!(retry.ops.contains(&Op::write(1, Value::from_counter(0))), "{retry:?}");
}
