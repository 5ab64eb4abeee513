//! The `paxos` testbed end to end (CAANS Figure 1 on network namespaces): a
//! proposer's REQUEST through the BPF coordinator becomes a 2A that
//! `bpf_clone_redirect` copies to the three BPF acceptors, whose 2B votes
//! come back to the proposer's port, one per acceptor; then `down` leaves no
//! namespace, pin, state file or program of the topology behind.
//!
//! Needs root. Without it: `SKIPPED: ...` on stderr, a failure under `CI=true`.

use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::time::Duration;

use innet_paxos::envelope::Envelope;
use innet_wire::paxos::{MsgType, PaxosMsg};
use innet_xdp::paxos_testbed::{self as tb, PaxosUp};
use innet_xdp::privileged::{self, say};
use innet_xdp::{paxos, testbed};

fn paxos_programs() -> usize {
    let out = std::process::Command::new("bpftool").args(["prog", "show"]).output();
    out.map_or(0, |o| String::from_utf8_lossy(&o.stdout).matches("paxos").count())
}

#[test]
fn a_request_is_ordered_through_the_bpf_roles_and_down_leaves_nothing() {
    let name = "a_request_is_ordered_through_the_bpf_roles_and_down_leaves_nothing";
    if !privileged::proceed(name, paxos::unavailable()) {
        return;
    }
    let before = paxos_programs();
    tb::up(&PaxosUp::default()).expect("testbed up paxos");
    let votes = testbed::in_netns(tb::NS_HOSTS, || {
        let s = UdpSocket::bind(SocketAddr::from(([0, 0, 0, 0], tb::proposer_port(0))))?;
        s.set_read_timeout(Some(Duration::from_secs(2)))?;
        let mut m = PaxosMsg::new(MsgType::Request);
        m.value = Envelope::new(1, 7, b"put k v").expect("fits").to_value();
        s.send_to(&m.encode(), tb::coordinator_addr())?;
        let mut votes = vec![];
        let mut buf = [0u8; 128];
        while votes.len() < 3 {
            let Ok((n, _)) = s.recv_from(&mut buf) else { break };
            votes.push(PaxosMsg::decode(&buf[..n]).map_err(anyhow::Error::msg)?);
        }
        Ok(votes)
    });
    let removed = tb::down().expect("testbed down");
    let votes = votes.expect("proposer in the hosts namespace");
    // Section 3 / Figure 1: the coordinator's first instance, round 1, voted
    // by every acceptor, the value untouched.
    let mut acceptors: Vec<u16> = votes.iter().map(|v| v.acptid).collect();
    acceptors.sort();
    assert_eq!(acceptors, vec![0, 1, 2], "one vote per acceptor: {votes:?}");
    for v in &votes {
        assert_eq!((v.msgtype, v.inst, v.rnd, v.vrnd), (MsgType::Phase2B, 0, 1, 1));
        assert_eq!(Envelope::from_value(&v.value).expect("envelope").request, 7);
    }
    let left: Vec<String> =
        testbed::namespaces().unwrap().into_iter().filter(|n| n.starts_with(tb::NS_PREFIX)).collect();
    assert!(left.is_empty(), "namespaces left: {left:?}");
    assert!(!Path::new(testbed::PIN_DIR).join("paxos").exists(), "pins left");
    assert!(!Path::new(tb::STATE_FILE).exists(), "state file left");
    // The programs go with the namespaces (their devices); the kernel frees
    // them a moment later.
    std::thread::sleep(Duration::from_millis(500));
    assert!(paxos_programs() <= before, "paxos programs left after down");
    say(&format!(
        "TESTBED paxos: a request through xdp_paxos_coordinator -> 3 x xdp/tc acceptor -> 3 votes; down removed {}",
        removed.len()
    ));
}
