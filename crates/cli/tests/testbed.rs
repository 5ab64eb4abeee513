//! `innet testbed up` / `down` on real network namespaces: a transaction
//! commits through the XDP switch (Gotthard section 3.3: the switch forwards
//! what it cannot decide and passes the store's reply back), and `down`
//! leaves no namespace, link, pin or program behind, also when the state file
//! was lost (a crash). Needs root: without it the test says why on stderr
//! (`SKIPPED: ...`) and fails under `CI=true`.

use std::time::Duration;

use innet_xdp::privileged::{self, say};

mod common;
use common::{run, skip_reason, wait_clean, INNET};

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
    run(INNET, &["testbed", "up", "txn", "--data-plane", "switch"]);
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
