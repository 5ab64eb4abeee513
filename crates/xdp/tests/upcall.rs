//! Decisions up (`innet_xdp::upcall`, issue 20 item 1): on the benchmark's
//! own namespaces, every path hands each of N decisions to the learner
//! exactly once and in order, from the in-kernel generator and from a
//! socket sender; and when the ring is full, the program's fallback (pass
//! to the socket) takes over, is counted, and loses nothing. A Paxos
//! learner must see every decided instance (CAANS section 3: learners
//! deliver each instance's value once, in instance order); these are the
//! properties a faster way up may not trade away.

use innet_xdp::privileged::{proceed, say};
use innet_xdp::upcall::{self, Path, RateOptions, RateRun, Sender, Setup, Upcall, Variant};

/// Decisions per run: many windows' worth, a few hundred ms per run (a
/// multiple of the burst, 64).
const N: u64 = 20_480;
/// A ring of 64 KiB holds 1,170 records: more than the window, so only
/// the held-consumer run below fills it.
const RING_BYTES: u32 = 64 << 10;
const WINDOW: u64 = 512;

fn options(decisions: u64, window: u64, hold_consumer: bool) -> RateOptions {
    RateOptions { decisions, seconds: 60.0, window, burst: 64, poll_timeout_ms: 1, hold_consumer }
}

fn exact(r: &RateRun, n: u64) {
    assert_eq!(r.count.generated, n, "{r:?}");
    assert_eq!(
        (r.count.delivered, r.count.missing, r.count.duplicates, r.count.malformed),
        (n, 0, 0, 0),
        "each decision once: {r:?}"
    );
    assert_eq!(r.count.out_of_order, 0, "in order: {r:?}");
    assert_eq!(r.count.held_at_end, 0, "nothing left behind: {r:?}");
    assert!(!r.stalled, "{r:?}");
}

/// A socket sender's frames (veth copies each skb into a small page
/// fragment) mostly lack the tailroom to carry a batch: the program then
/// holds them too, so the order holds and nothing is lost, but what the
/// last frames could not carry up stays held when no more decisions come.
fn exact_but_held(r: &RateRun, n: u64) {
    assert_eq!(r.count.generated, n, "{r:?}");
    assert_eq!(
        (r.count.delivered + r.count.held_at_end, r.count.missing, r.count.duplicates, r.count.malformed),
        (n, 0, 0, 0),
        "{r:?}"
    );
    assert_eq!((r.count.out_of_order, r.batch_overflow), (0, 0), "in order: {r:?}");
    assert!(r.count.held_at_end < upcall::BATCH_MAX as u64, "{r:?}");
}

#[test]
fn every_path_delivers_each_decision_once_in_order_and_a_full_ring_falls_back_to_the_socket() {
    if !proceed("upcall", upcall::unavailable()) {
        return;
    }
    let mut up = Upcall::setup(&Setup { ring_bytes: RING_BYTES, xsk_ring: 4096, socket_rcvbuf: 32 << 20 })
        .expect("namespaces, program attached, sources bound");
    let variants = [
        Variant::of(Path::Socket),
        Variant { batch: 8, ..Variant::of(Path::Batch) },
        Variant::of(Path::Ring),
        Variant { wake_threshold: 16, ..Variant::of(Path::Ring) },
        Variant::of(Path::Xsk),
        Variant::of(Path::Drop),
    ];
    for sender in [Sender::Kernel, Sender::Socket] {
        for v in variants {
            let r = up.rate(v, sender, &options(N, WINDOW, false)).expect("a rate run");
            say(&format!(
                "TESTBED xdp-upcall {} {}: {} of {} delivered once, in order, {} still held ({} datagrams, {} ring, {} af-xdp, {} wake-ups)",
                sender.name(),
                r.variant,
                r.count.delivered,
                r.count.generated,
                r.count.held_at_end,
                r.datagrams,
                r.by_ring,
                r.by_xsk,
                r.wakeups
            ));
            if v.path == Path::Batch && sender == Sender::Socket {
                exact_but_held(&r, N);
            } else {
                exact(&r, N);
            }
            match v.path {
                Path::Socket => assert_eq!(r.datagrams, N, "one datagram per decision: {r:?}"),
                Path::Batch if sender == Sender::Kernel => {
                    assert_eq!((r.batch_packets, r.datagrams), (N / 8, N / 8), "8 decisions per datagram: {r:?}")
                }
                Path::Batch => assert!(r.datagrams <= N / 8, "at least 8 decisions per datagram: {r:?}"),
                Path::Ring => {
                    assert_eq!((r.by_ring, r.count.fallback, r.count.ring_full), (N, 0, 0), "all by the ring: {r:?}")
                }
                Path::Xsk => {
                    assert_eq!((r.by_xsk, r.count.fallback, r.count.xsk_dropped), (N, 0, 0), "all by AF_XDP: {r:?}")
                }
                Path::Drop => assert_eq!(r.datagrams + r.by_ring + r.by_xsk, 0, "nothing goes up: {r:?}"),
            }
            if v.path != Path::Drop && !(v.path == Path::Batch && sender == Sender::Socket) {
                let l = up.latency(v, sender, 16, std::time::Duration::from_micros(100), 1).expect("a latency run");
                assert_eq!((l.received, l.duplicates), (l.sent, 0), "paced decisions all arrive: {l:?}");
                assert!(l.p50_us > 0.0 && l.p50_us <= l.p99_us, "{l:?}");
            }
        }
    }

    // The consumer reads nothing until 3,008 decisions were sent: the ring
    // takes what it holds, the rest falls back to the socket.
    let n = 3_008;
    let r = up.rate(Variant::of(Path::Ring), Sender::Kernel, &options(n, n, true)).expect("a held run");
    say(&format!(
        "TESTBED xdp-upcall ring full: {} by the ring, {} by the fallback (ring_full {}), {} of {n} delivered once",
        r.by_ring, r.count.fallback, r.count.ring_full, r.count.delivered
    ));
    exact(&r, n);
    assert!(r.by_ring > 0 && r.by_ring < n, "the ring held some, not all: {r:?}");
    assert!(r.by_ring <= (RING_BYTES / upcall::RING_RECORD_STRIDE) as u64, "no more than fits: {r:?}");
    assert_eq!(r.count.fallback, r.count.ring_full, "every fallback is counted by the program: {r:?}");
    assert_eq!(r.by_ring + r.count.fallback, n, "{r:?}");
}
