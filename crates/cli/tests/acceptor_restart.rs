//! Issue 24 item 3, persistent acceptors (CAANS section 3.1: an acceptor
//! that restarts must keep its promises): an acceptor run alone as a real
//! process (`innet up paxos --node acceptor0 --dir D`) votes in round 1,
//! promises a higher round, is killed with SIGKILL and restarted from `D`.
//! The restarted process refuses the 2A of round 1 it promised against
//! and reports its old vote to a new phase 1. The same run without `--dir`
//! (the acceptor in memory) votes for the refused 2A after its restart:
//! what the directory prevents.
//!
//! The test's sockets stand in for the deployment's other nodes at the
//! addresses `--base-port` gives them (coordinator at `base`, learner 0 at
//! `base + 5`), so the acceptor's trust table admits what they send.

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use innet_paxos::envelope::Envelope;
use innet_wire::paxos::{MsgType, PaxosMsg};

struct Acceptor(Child);

impl Drop for Acceptor {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `innet up paxos --node acceptor0` at `base`, once it prints its address.
fn start(base: u16, dir: Option<&std::path::Path>, data_plane: &str) -> Acceptor {
    let b = base.to_string();
    let mut args = vec!["up", "paxos", "--base-port", &b, "--node", "acceptor0", "--data-plane", data_plane];
    let d = dir.map(|d| d.to_str().unwrap().to_string());
    if let Some(d) = &d {
        args.extend(["--dir", d, "--fsync", "always"]);
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_innet"))
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("innet runs");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.starts_with("acceptor0 "), "the acceptor starts: {line:?}");
    Acceptor(child)
}

fn msg(t: MsgType, inst: u32, rnd: u16, v: &[u8]) -> Vec<u8> {
    let mut m = PaxosMsg::new(t);
    m.inst = inst;
    m.rnd = rnd;
    m.value = Envelope::new(1 << 20, inst, v).unwrap().to_value();
    m.encode()
}

/// What comes back to `at` for `bytes` sent to the acceptor: the answer of
/// `want` type for the same instance, if any within 300 ms. Between the
/// switch deployment's coordinator and acceptors packets carry the
/// runtime's origin shim.
fn ask(from: &UdpSocket, at: &UdpSocket, acceptor: u16, bytes: &[u8], want: MsgType) -> Option<PaxosMsg> {
    let sent = PaxosMsg::decode(bytes).unwrap();
    // The coordinator's socket is at `acceptor - 1`; the process data plane
    // takes the shim as garbage, so the test tells them apart by the port
    // parity it chose (switch runs on even bases).
    let switch_peer = acceptor % 2 == 1 && from.local_addr().unwrap().port() + 1 == acceptor;
    let bytes = match switch_peer {
        true => innet_live::switch::add_origin_shim(from.local_addr().unwrap(), bytes),
        false => bytes.to_vec(),
    };
    from.send_to(&bytes, ("127.0.0.1", acceptor)).unwrap();
    at.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    let mut buf = [0u8; 256];
    while let Ok(n) = at.recv(&mut buf) {
        match PaxosMsg::decode(&buf[..n]) {
            Ok(m) if m.msgtype == want && m.inst == sent.inst && m.rnd == sent.rnd => return Some(m),
            _ => continue,
        }
    }
    None
}

/// Runs the scenario; returns whether the restarted acceptor voted for the
/// 2A of round 1 after promising round (1, 16).
fn voted_against_its_promise_after_restart(base: u16, dir: Option<&std::path::Path>, data_plane: &str) -> bool {
    assert_eq!(base % 2 == 0, data_plane == "switch", "switch runs on even base ports");
    let coordinator = UdpSocket::bind(("127.0.0.1", base)).unwrap();
    let learner = UdpSocket::bind(("127.0.0.1", base + 5)).unwrap();
    let acceptor = base + 1;
    let promised = innet_paxos::round(1, innet_paxos::ISSUER_LEARNER_BASE);
    let mut a = start(base, dir, data_plane);

    // Round 1 (the coordinator's): a vote for instance 5.
    let vote = ask(&coordinator, &learner, acceptor, &msg(MsgType::Phase2A, 5, 1, b"a"), MsgType::Phase2B);
    assert!(vote.is_some(), "the acceptor votes in round 1");
    // Learner 0's phase 1 in round (1, 16): instance 5 reports the vote,
    // instance 6 is promised without one.
    let p5 = ask(&learner, &learner, acceptor, &msg(MsgType::Phase1A, 5, promised, b""), MsgType::Phase1B).unwrap();
    assert_eq!((p5.vrnd, Envelope::from_value(&p5.value).unwrap().payload()), (1, &b"a"[..]));
    let p6 = ask(&learner, &learner, acceptor, &msg(MsgType::Phase1A, 6, promised, b""), MsgType::Phase1B).unwrap();
    assert_eq!(p6.vrnd, 0);

    // kill -9, and the same node again (from the same directory).
    a.0.kill().unwrap();
    a.0.wait().unwrap();
    let _a = start(base, dir, data_plane);

    let against = ask(&coordinator, &learner, acceptor, &msg(MsgType::Phase2A, 6, 1, b"b"), MsgType::Phase2B);
    if dir.is_some() {
        // The vote is remembered too: a higher phase 1 reports it.
        let higher = innet_paxos::round(2, innet_paxos::ISSUER_LEARNER_BASE);
        let p = ask(&learner, &learner, acceptor, &msg(MsgType::Phase1A, 5, higher, b""), MsgType::Phase1B).unwrap();
        assert_eq!((p.vrnd, Envelope::from_value(&p.value).unwrap().payload()), (1, &b"a"[..]), "the vote survived");
        // And a 2A of the promised round is still voted.
        let ok = ask(&learner, &learner, acceptor, &msg(MsgType::Phase2A, 6, promised, b"c"), MsgType::Phase2B);
        assert!(ok.is_some(), "a 2A of the promised round is voted after the restart");
    }
    against.is_some()
}

/// A free block of ports below the ephemeral range (the killed acceptor's
/// port must still be free when it restarts): even for the switch runs,
/// odd for the process runs.
fn base_port(switch: bool) -> u16 {
    let b = innet_live::ports::free_block(11, &[]).unwrap();
    b + u16::from((b % 2 == 0) != switch)
}

#[test]
fn a_restarted_acceptor_never_votes_against_a_promise_it_gave() {
    for data_plane in ["switch", "process"] {
        let dir = std::env::temp_dir().join(format!("innet-acceptor-restart-{}-{data_plane}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let switch = data_plane == "switch";
        let with_dir = voted_against_its_promise_after_restart(base_port(switch), Some(&dir), data_plane);
        assert!(!with_dir, "{data_plane}: restarted from its directory, the acceptor voted against its promise");
        assert!(dir.join("acceptor0").join("acceptor.ring").exists());
        let _ = std::fs::remove_dir_all(&dir);
        // The control: in memory, the restarted acceptor has forgotten.
        let in_memory = voted_against_its_promise_after_restart(base_port(switch), None, data_plane);
        assert!(in_memory, "{data_plane}: without --dir the restarted acceptor should have forgotten its promise");
        println!("ACCEPTOR_RESTART {data_plane}: refused the 2A below its promise after kill -9 (in memory: voted)");
    }
}
