//! `innet up chain` prints its nodes' addresses; `innet client chain` writes
//! through the head and reads the value back from another node, for both
//! protocols.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn innet(args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_innet")).args(args).output().unwrap();
    assert!(out.status.success(), "innet {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn up_prints_addresses_and_a_client_puts_and_gets() {
    for protocol in ["netcraq", "netchain"] {
        let mut up = Command::new(env!("CARGO_BIN_EXE_innet"))
            .args(["up", "chain", "--protocol", protocol, "--nodes", "3"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(up.stdout.take().unwrap()).lines();
        let mut addrs = vec![];
        for i in 0..3 {
            let line = lines.next().unwrap().unwrap();
            let (name, addr) = line.split_once(' ').unwrap();
            assert_eq!(name, format!("node{i}"));
            addrs.push(addr.to_string());
        }
        let nodes = addrs.join(",");
        let put = innet(&["client", "chain", "--protocol", protocol, "--nodes", &nodes, "--put", "7=seven"]);
        assert_eq!((put["op"].as_str(), put["value"].as_str()), (Some("put"), Some("seven")), "{protocol}");
        let get = innet(&["client", "chain", "--protocol", protocol, "--nodes", &nodes, "--get", "7", "--near", "1"]);
        assert_eq!(get["value"].as_str(), Some("seven"), "{protocol}");
        up.kill().unwrap();
        up.wait().unwrap();
    }
}
