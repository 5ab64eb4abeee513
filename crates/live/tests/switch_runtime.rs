//! The software-switch runtime around an arbitrary data-plane program:
//! verdicts, reverse paths, drop counting and per-link FIFO delay.

use std::net::UdpSocket;
use std::time::{Duration, Instant};

use innet_core::{DataPlane, Verdict};
use innet_live::{spawn_switch, Stop, SwitchOptions};

/// byte 0 picks the verdict, byte 1 is the flow.
struct Toy;

impl DataPlane for Toy {
    fn process(&mut self, p: &mut [u8]) -> Verdict {
        match p.first() {
            Some(0) => Verdict::Upstream { flow: p[1] as u32 },
            Some(1) => Verdict::Downstream { flow: p[1] as u32 },
            Some(2) => Verdict::Reflect,
            _ => Verdict::Drop,
        }
    }
}

fn sock() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    s
}

fn recv(s: &UdpSocket) -> Vec<u8> {
    let mut b = [0u8; 64];
    let (n, _) = s.recv_from(&mut b).expect("a packet");
    b[..n].to_vec()
}

#[test]
fn verdicts_routes_drops_and_fifo_delay() {
    let upstream = sock();
    let (a, b) = (sock(), sock());
    let delay = Duration::from_millis(10);
    let opts = SwitchOptions::new(upstream.local_addr().unwrap()).with_delays(delay, Duration::ZERO);
    let sw = spawn_switch("toy", Toy, sock(), opts, &Stop::new()).unwrap();
    let to = sw.addr();

    // Reflect: straight back, no delay on the downstream link.
    a.send_to(&[2, 0, 42], to).unwrap();
    assert_eq!(recv(&a), vec![2, 0, 42]);

    // Upstream from a (flow 7) and b (flow 8), 100 packets each, in order.
    let t0 = Instant::now();
    for i in 0..100u8 {
        a.send_to(&[0, 7, i], to).unwrap();
        b.send_to(&[0, 8, i], to).unwrap();
    }
    let (mut next_a, mut next_b) = (0u8, 0u8);
    for _ in 0..200 {
        let p = recv(&upstream);
        assert!(t0.elapsed() >= delay);
        match p[1] {
            7 => {
                assert_eq!(p[2], next_a, "FIFO on the upstream link");
                next_a += 1;
            }
            8 => {
                assert_eq!(p[2], next_b);
                next_b += 1;
            }
            f => panic!("unexpected flow {f}"),
        }
    }

    // Replies from upstream go back to each flow's origin, after the link delay.
    let t1 = Instant::now();
    upstream.send_to(&[1, 8, 1], to).unwrap();
    upstream.send_to(&[1, 7, 2], to).unwrap();
    assert_eq!(recv(&b), vec![1, 8, 1]);
    assert_eq!(recv(&a), vec![1, 7, 2]);
    assert!(t1.elapsed() >= delay, "the reply crossed the delayed upstream link");

    // Unknown flow and Drop verdicts are counted.
    upstream.send_to(&[1, 99, 0], to).unwrap();
    a.send_to(&[3], to).unwrap();
    a.send_to(&[], to).unwrap();
    let t2 = Instant::now();
    while sw.stats().dropped < 2 || sw.stats().dropped_no_route < 1 {
        assert!(t2.elapsed() < Duration::from_secs(5), "{:?}", sw.stats());
        std::thread::sleep(Duration::from_millis(5));
    }
    let st = sw.stats();
    assert_eq!((st.to_upstream, st.to_downstream, st.reflected), (200, 2, 1));
    assert_eq!((st.from_upstream, st.from_downstream), (3, 203));
    sw.shutdown().unwrap();
}

#[test]
fn stop_ends_the_node_promptly() {
    let stop = Stop::new();
    let upstream = sock();
    let sw = spawn_switch("toy", Toy, sock(), SwitchOptions::new(upstream.local_addr().unwrap()), &stop).unwrap();
    stop.stop();
    let t0 = Instant::now();
    while !sw.is_finished() {
        assert!(t0.elapsed() < Duration::from_secs(2), "switch did not stop");
        std::thread::sleep(Duration::from_millis(5));
    }
    sw.shutdown().unwrap();
}
