//! The batched generator against real UDP sockets: a bare echo, an echo
//! that drops, the ceiling. Its chain service against a live NetCRAQ chain
//! is `crates/exp/tests/chain_load.rs`.

use std::time::Duration;

use innet_bench::loadgen::{self, EchoServer, EchoService, LoadConfig};

#[test]
fn completes_requests_against_an_echo() {
    let echo = EchoServer::start(None).unwrap();
    let cfg =
        LoadConfig { threads: 2, sockets: 2, ..LoadConfig::new(16, vec![echo.addr()], Duration::from_millis(400)) };
    let (r, _) = loadgen::run(&cfg, vec![EchoService { len: 29, targets: 1 }; 2]).unwrap();
    assert!(r.completed > 100, "{r:?}");
    assert_eq!((r.timeouts, r.stale, r.ignored), (0, 0, 0), "{r:?}");
    assert_eq!((r.threads, r.sockets), (2, 4));
    assert!(r.p50_us > 0.0 && r.p50_us <= r.p99_us, "{r:?}");
    assert!(echo.echoed() >= r.completed);
}

#[test]
fn counts_timeouts_and_resends_when_the_echo_drops() {
    // Every 10th datagram is dropped: those requests time out and are
    // resent under their tag, and complete.
    let echo = EchoServer::start(Some(10)).unwrap();
    let cfg = LoadConfig {
        threads: 1,
        sockets: 1,
        timeout: Duration::from_millis(5),
        ..LoadConfig::new(4, vec![echo.addr()], Duration::from_millis(500))
    };
    let (r, _) = loadgen::run(&cfg, vec![EchoService { len: 16, targets: 1 }]).unwrap();
    assert!(r.timeouts > 0, "{r:?}");
    assert!(r.completed > r.timeouts, "resent requests complete: {r:?}");
    // A dropped request waits at least the timeout: the slowest 1% (at
    // least 1 in 10 here) shows it.
    assert!(r.p99_us >= 5_000.0, "{r:?}");
}

#[test]
fn one_echo_thread_answers_on_every_address_and_the_ceiling_measures() {
    let echo = EchoServer::start_on(3, 1, None).unwrap();
    assert_eq!(echo.addrs().len(), 3);
    let cfg = LoadConfig::new(12, echo.addrs().to_vec(), Duration::from_millis(300));
    let (r, _) = loadgen::run(&cfg, vec![EchoService { len: 29, targets: 3 }]).unwrap();
    assert!(r.completed > 100 && r.timeouts == 0, "{r:?}");
    // Every request went to one of its addresses and was echoed.
    assert!(echo.echoed() >= r.completed);
    let c = loadgen::ceiling(&cfg, 29).unwrap();
    assert!(c.completed > 100 && c.timeouts == 0, "{c:?}");
}

#[test]
fn a_fixed_source_address_is_the_one_the_target_sees() {
    // A peer that answers only datagrams from one address (as a trust rule
    // does): the generator bound to that address completes requests.
    let peer = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let from = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let target = peer.local_addr().unwrap();
    peer.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (stop2, mut others) = (stop.clone(), 0u64);
    let answering = std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
            if let Ok((n, src)) = peer.recv_from(&mut buf) {
                if src == from {
                    peer.send_to(&buf[..n], src).unwrap();
                } else {
                    others += 1;
                }
            }
        }
        others
    });
    let cfg = LoadConfig { bind: Some(from), ..LoadConfig::new(4, vec![target], Duration::from_millis(400)) };
    let (r, _) = loadgen::run(&cfg, vec![EchoService { len: 16, targets: 1 }]).unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(answering.join().unwrap(), 0, "every datagram came from the bound address");
    assert!(r.completed > 100, "{r:?}");
    // Several sockets cannot share one source address.
    let two = LoadConfig { sockets: 2, ..cfg };
    assert!(loadgen::run(&two, vec![EchoService { len: 16, targets: 1 }]).is_err());
    // No ceiling measured (0/s) is never "generator-bound".
    assert!(!loadgen::generator_bound(1000.0, 0.0));
}
