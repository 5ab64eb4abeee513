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

/// Forwards everything to port 0.
struct ToPort0;

impl DataPlane for ToPort0 {
    fn process(&mut self, _p: &mut [u8]) -> Verdict {
        Verdict::Port { port: 0 }
    }
}

/// byte 0 picks the verdict: 4 = multicast group 1 (marking the packet by
/// setting byte 0 to 9), 5 = origin.
struct Steer;

impl DataPlane for Steer {
    fn process(&mut self, p: &mut [u8]) -> Verdict {
        match p.first() {
            Some(4) => {
                p[0] = 9;
                Verdict::Multicast { group: 1 }
            }
            Some(5) => Verdict::Origin,
            _ => Verdict::Drop,
        }
    }
}

#[test]
fn ports_multicast_and_origin_across_two_switches() {
    use innet_core::Member;
    use innet_live::switch::{add_origin_shim, spawn_switch_with_tables, split_origin_shim, SwitchTables};

    let (client, sink, nowhere) = (sock(), sock(), sock());
    let stop = Stop::new();
    let (sa, sb) = (sock(), sock());
    let (a_addr, b_addr) = (sa.local_addr().unwrap(), sb.local_addr().unwrap());
    let opts = SwitchOptions::new(nowhere.local_addr().unwrap());
    let mut ta = SwitchTables::default();
    ta.set_port(0, Some(b_addr));
    ta.switch_peers.insert(b_addr);
    let mut tb = SwitchTables::default();
    tb.groups.insert(1, vec![Member::Node(sink.local_addr().unwrap()), Member::Origin]);
    tb.switch_peers.insert(a_addr);
    let a = spawn_switch_with_tables("a", ToPort0, sa, opts.clone(), ta, &stop).unwrap();
    let b = spawn_switch_with_tables("b", Steer, sb, opts, tb, &stop).unwrap();

    // client -> a -> b (origin carried in the shim) -> multicast to the sink
    // and to the origin, which is the client, not a.
    client.send_to(&[4, 1], a_addr).unwrap();
    assert_eq!(recv(&sink), vec![9, 1], "hosts never see the shim");
    let mut buf = [0u8; 64];
    let (n, from) = client.recv_from(&mut buf).unwrap();
    assert_eq!((&buf[..n], from), (&[9u8, 1][..], b_addr));
    // client -> a -> b -> straight back to the client.
    client.send_to(&[5, 2], a_addr).unwrap();
    let (n, from) = client.recv_from(&mut buf).unwrap();
    assert_eq!((&buf[..n], from), (&[5u8, 2][..], b_addr));
    assert_eq!(b.stats().to_ports, 3);
    assert_eq!(a.stats().to_ports, 2);

    // A packet from a peer switch without a shim is dropped and counted.
    let impostor = sock();
    b.with_tables(|t| t.switch_peers.insert(impostor.local_addr().unwrap()));
    impostor.send_to(&[5, 3], b_addr).unwrap();
    let t0 = Instant::now();
    while b.stats().dropped_bad_shim == 0 {
        assert!(t0.elapsed() < Duration::from_secs(3), "bad shim not counted");
        std::thread::sleep(Duration::from_millis(5));
    }
    let shimmed = add_origin_shim(client.local_addr().unwrap(), &[1, 2, 3]);
    assert_eq!(split_origin_shim(&shimmed), Some((client.local_addr().unwrap(), shimmed.len() - 3)));
    assert_eq!(split_origin_shim(&shimmed[..7]), None);
}
