//! `innet switch echo` (the floor `innet bench xdp` measures the software
//! switch against) answers every datagram with itself, and stops on SIGTERM
//! reporting how many it echoed.

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn echoes_each_datagram_to_its_sender() {
    let mut echo = Command::new(env!("CARGO_BIN_EXE_innet"))
        .args(["switch", "echo", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(echo.stdout.take().unwrap()).lines();
    let line = lines.next().unwrap().unwrap();
    let addr = line.strip_prefix("echo ").expect("echo HOST:PORT");
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut buf = [0u8; 2048];
    for k in 0..5u8 {
        let msg = vec![k; 10 + 300 * k as usize];
        sock.send_to(&msg, addr).unwrap();
        let (n, from) = sock.recv_from(&mut buf).unwrap();
        assert_eq!((&buf[..n], from.to_string()), (&msg[..], addr.to_string()));
    }
    // Graceful stop of the process this test started.
    Command::new("kill").args(["-TERM", &echo.id().to_string()]).status().unwrap();
    assert!(echo.wait().unwrap().success());
    assert_eq!(lines.next().unwrap().unwrap(), "echo.echoed 5");
}
