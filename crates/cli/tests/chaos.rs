//! `innet chaos SERVICE`: a short live run per service, its roles as real
//! `innet` processes on loopback, an adversary with ordinary UDP sockets,
//! kill -9 and restarts, and the service's checker on the clients'
//! histories (issue 21 item 4; docs/security.md "Chaos").
//!
//! Each run must pass the checker, see no process panic or end on its
//! own, send every attack and every message type of the service, kill
//! (and, where the service can, restart) its processes, and report a peak
//! RSS for every process.

use std::collections::BTreeSet;
use std::process::Command;

use innet_chaos::ChaosService;

const INNET: &str = env!("CARGO_BIN_EXE_innet");

/// The run's output; panics with it if the run failed.
fn chaos(service: ChaosService, seed: u64) -> String {
    let service = service.name();
    let out_dir = std::env::temp_dir().join(format!("innet-chaos-test-{}-{service}", std::process::id()));
    let out = Command::new(INNET)
        .args(["chaos", service, "--duration-s", "15", "--seed", &seed.to_string()])
        .arg("--out")
        .arg(&out_dir)
        .output()
        .expect("innet runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    eprintln!("CHAOS {service}:\n{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "innet chaos {service} failed: {stdout}");
    assert!(stdout.contains("chaos: OK"), "{stdout}");
    let _ = std::fs::remove_dir_all(&out_dir);
    stdout
}

fn check_report(stdout: &str, service: ChaosService, processes: &[&str], restarts: bool) {
    let lines: Vec<Vec<&str>> = stdout.lines().map(|l| l.split_whitespace().collect()).collect();
    for attack in ["forged", "malformed", "replayed", "reordered", "flood"] {
        let n: u64 = lines
            .iter()
            .find(|w| w.len() == 4 && w[0] == "attack" && w[1] == attack)
            .and_then(|w| w[2].parse().ok())
            .unwrap_or(0);
        assert!(n > 0, "no {attack} packets sent");
    }
    let sent: BTreeSet<&str> = lines.iter().filter(|w| w.len() == 4 && w[0] == "packets").map(|w| w[2]).collect();
    for k in service.kinds() {
        assert!(sent.contains(k), "no {k} message sent: {sent:?}");
    }
    for p in processes {
        let rss: u64 = lines
            .iter()
            .find(|w| w.len() == 4 && w[0] == "rss_max" && w[1] == *p)
            .and_then(|w| w[2].parse().ok())
            .unwrap_or(0);
        assert!(rss > 0, "no peak RSS for {p}");
    }
    assert!(stdout.contains(": SIGKILL "), "nothing was killed");
    assert_eq!(stdout.contains(": restart "), restarts, "restarts");
    assert!(stdout.lines().any(|l| l.starts_with("check: ") && !l.contains("not reached")), "{stdout}");
}

/// Chain replication (NetCRAQ for an even seed, NetChain for an odd one):
/// linearizable under forged writes, ACKs and management traffic, with
/// chain nodes killed and re-added by the control plane.
#[test]
fn chain_stays_linearizable_under_attack_and_kills() {
    for seed in [2, 3] {
        let out = chaos(ChaosService::Chain, seed);
        check_report(&out, ChaosService::Chain, &["node0", "node1", "node2", "control"], true);
    }
}

/// Transactions: serializable (Gotthard section 3.7) with the store and
/// the switch killed and restarted, and forged replies, resets and
/// fragments thrown at both. Fails while a request under a real client's
/// id from another address is taken, and while a request a switch aborted,
/// replayed, commits (issue 21 item 1, branch `hostile`).
#[test]
fn transactions_stay_serializable_under_attack_and_kills() {
    let out = chaos(ChaosService::Txn, 1);
    check_report(&out, ChaosService::Txn, &["store", "switch"], true);
}

/// Paxos (CAANS section 3): agreement, validity, exactly-once and order
/// with the coordinator (the backup takes over) and an acceptor killed,
/// and every message type forged. Fails while a REQUEST forged under a
/// real proposer's id is delivered (issue 21 item 1, branch `hostile`).
#[test]
fn paxos_keeps_agreement_and_exactly_once_under_attack_and_kills() {
    let out = chaos(ChaosService::Paxos, 1);
    check_report(&out, ChaosService::Paxos, &["coordinator", "acceptor0", "acceptor1", "acceptor2", "backup"], false);
}

/// The key-value service's crash campaign (issue 24 item 6): coordinator,
/// persistent acceptors, backup and three `innet kv-replica` processes;
/// four clients put, get, delete and CAS on four keys while acceptors and
/// replicas are SIGKILLed and restarted and the coordinator is killed
/// (the backup takes over). The history must be linearizable, no
/// acknowledged write lost, the replicas' stores identical; each kind of
/// process killed, and the backup's takeover seen in its own metrics.
#[test]
fn the_kv_service_stays_linearizable_while_every_role_is_killed() {
    let out_dir = std::env::temp_dir().join(format!("innet-chaos-test-{}-kv", std::process::id()));
    let out = Command::new(INNET)
        .args(["chaos", "paxos", "--kv", "--duration-s", "25", "--seed", "3"])
        .arg("--out")
        .arg(&out_dir)
        .output()
        .expect("innet runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    eprintln!("CHAOS paxos --kv:\n{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && stdout.contains("chaos: OK"), "{stdout}");
    let counts = counts_line(&stdout);
    let count = |name: &str| count_of(&counts, name);
    for role in ["coordinator", "acceptor", "replica"] {
        assert!(count(&format!("kills_{role}")) >= 1, "no {role} killed: {counts:?}");
    }
    assert!(count("restarts_acceptor") >= 1 && count("restarts_replica") >= 1, "{counts:?}");
    assert!(count("failovers") >= 1, "the backup never reported a takeover: {counts:?}");
    assert!(count("operations") > 100, "{counts:?}");
    assert_eq!((count("lost_acked_writes"), count("replica_mismatches")), (0, 0));
    assert!(stdout.lines().any(|l| l.starts_with("check: linearizable")), "{stdout}");
    assert!(stdout.contains("replay: innet chaos paxos --duration-s 25 --seed 3 --kv"), "{stdout}");
    let _ = std::fs::remove_dir_all(&out_dir);
}

/// The same campaign with `--coordinator-restarts` (the shorter run of
/// issue 24's 600 s acceptance): every role is killed and restarted, the
/// coordinator and the backup's process included, each coordinator
/// restart takes the role back from the backup, and the history stays
/// linearizable with nothing acknowledged lost.
#[test]
fn every_role_restarts_and_the_coordinator_takes_the_role_back() {
    let out_dir = std::env::temp_dir().join(format!("innet-chaos-test-{}-kv-restarts", std::process::id()));
    let out = Command::new(INNET)
        .args(["chaos", "paxos", "--kv", "--coordinator-restarts", "--duration-s", "25", "--seed", "5"])
        .arg("--out")
        .arg(&out_dir)
        .output()
        .expect("innet runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    eprintln!("CHAOS paxos --kv --coordinator-restarts:\n{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && stdout.contains("chaos: OK"), "{stdout}");
    let counts = counts_line(&stdout);
    let count = |name: &str| count_of(&counts, name);
    for role in ["coordinator", "acceptor", "replica", "backup"] {
        let (k, r) = (count(&format!("kills_{role}")), count(&format!("restarts_{role}")));
        assert!(k >= 1 && r == k, "{role}: {k} kills, {r} restarts: {counts:?}");
    }
    assert!(count("failbacks") >= 1, "no coordinator restart took the role back: {counts:?}");
    assert_eq!((count("lost_acked_writes"), count("replica_mismatches")), (0, 0));
    assert!(stdout.lines().any(|l| l.starts_with("check: linearizable")), "{stdout}");
    let _ = std::fs::remove_dir_all(&out_dir);
}

/// The words of a campaign's `counts:` line.
fn counts_line(stdout: &str) -> Vec<&str> {
    stdout.lines().find_map(|l| l.strip_prefix("counts: ")).expect("a counts line").split_whitespace().collect()
}

/// The figure after `name` in `counts_line`'s words.
fn count_of(counts: &[&str], name: &str) -> u64 {
    let i = counts.iter().position(|w| *w == name).unwrap_or_else(|| panic!("no {name} in {counts:?}"));
    counts[i + 1].parse().unwrap()
}
