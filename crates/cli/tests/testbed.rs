//! `innet testbed up` / `down` on real network namespaces: a transaction
//! commits through the XDP switch (Gotthard section 3.3: the switch forwards
//! what it cannot decide and passes the store's reply back), and `down`
//! leaves no namespace, link, pin or program behind, also when the state file
//! was lost (a crash). Needs root: without it the test says why on stderr
//! (`SKIPPED: ...`) and fails under `CI=true`.

use std::process::Command;
use std::time::{Duration, Instant};

use innet_xdp::privileged::{self, say};

const INNET: &str = env!("CARGO_BIN_EXE_innet");

fn run(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd).args(args).output().unwrap_or_else(|e| panic!("run {cmd}: {e}"));
    assert!(out.status.success(), "{cmd} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn skip_reason() -> Option<String> {
    let uid = run("id", &["-u"]);
    if uid.trim() != "0" {
        return Some(format!("not root (uid {}): network namespaces and XDP need root", uid.trim()));
    }
    for tool in ["ip", "bpftool"] {
        if Command::new(tool).arg("-V").output().is_err() {
            return Some(format!("{tool} not installed (scripts/setup.sh installs it)"));
        }
    }
    None
}

fn leftovers() -> Vec<String> {
    let mut v: Vec<String> = run("ip", &["netns", "list"])
        .lines()
        .filter(|l| l.starts_with("innet-"))
        .map(|l| format!("netns {l}"))
        .collect();
    v.extend(run("ip", &["-o", "link", "show"]).lines().filter(|l| l.contains(" innet-")).map(|l| format!("link {l}")));
    v.extend(
        run("bpftool", &["prog", "show"])
            .lines()
            .filter(|l| l.contains("name xdp_txn_switch") || l.contains("name xdp_bounce"))
            .map(|l| format!("prog {l}")),
    );
    if std::path::Path::new("/sys/fs/bpf/innet").exists() {
        v.push("pins /sys/fs/bpf/innet".into());
    }
    if std::path::Path::new("/run/innet/testbed.json").exists() {
        v.push("state /run/innet/testbed.json".into());
    }
    v
}

/// Namespace teardown and program release are asynchronous in the kernel.
fn wait_clean() -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = leftovers();
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn testbed_up_commits_through_xdp_and_down_leaves_nothing_even_after_a_crash() {
    if !privileged::proceed("testbed_up_commits_through_xdp_and_down_leaves_nothing_even_after_a_crash", skip_reason())
    {
        return;
    }
    run(INNET, &["testbed", "down"]);
    assert_eq!(wait_clean(), Vec::<String>::new(), "leftovers before the test");
    let before = run("ip", &["netns", "list"]);

    // Up with the XDP data plane; one transaction through it.
    run(INNET, &["testbed", "up", "txn", "--data-plane", "xdp"]);
    let links = run("ip", &["-n", "innet-switch", "link", "show"]);
    assert_eq!(links.matches("prog/xdp").count(), 2, "switch ports carry the program: {links}");
    let mut committed = false;
    for _ in 0..20 {
        let out = run(
            "ip",
            &["netns", "exec", "innet-client", INNET, "client", "txn", "--to", "10.77.0.1:9999", "--increment", "7"],
        );
        if out.contains("\"committed\":true") {
            committed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100)); // the store may still be starting
    }
    assert!(committed, "a transaction commits through the XDP switch");
    let status = run(INNET, &["testbed", "status"]);
    let learned =
        status.lines().find_map(|l| l.trim().strip_prefix("learned_replies ")).and_then(|v| v.parse::<u64>().ok());
    assert!(learned >= Some(1), "the switch learned from the store's reply: {status}");
    run(INNET, &["testbed", "down"]);
    let left = wait_clean();
    assert_eq!(left, Vec::<String>::new(), "testbed down left things behind");

    // A crash: the state file is lost; down still finds everything by name.
    run(INNET, &["testbed", "up", "txn", "--data-plane", "software"]);
    std::fs::remove_file("/run/innet/testbed.json").expect("state file exists while up");
    run(INNET, &["testbed", "down"]);
    assert_eq!(wait_clean(), Vec::<String>::new(), "down after a lost state file left things behind");
    let after = run("ip", &["netns", "list"]);
    say(&format!(
        "TESTBED up/down: ip netns before [{}] after [{}]; no innet-* namespace, link, pin or XDP program left",
        before.trim(),
        after.trim()
    ));
}
