//! A fresh machine: the BPF filesystem is not mounted at /sys/fs/bpf (and
//! here the mount point itself is missing: a tmpfs hides /sys/fs). In a
//! private mount namespace, `innet testbed up txn` mounts bpffs itself (as
//! bpftool does), a transaction commits through the XDP switch, and `down`
//! removes everything. Then, with /sys/fs read-only so that bpffs cannot be
//! mounted, `up` fails after it has made its namespaces and links, and
//! removes all of them before it exits. While one testbed is up another is
//! refused, and another testbed's `down` leaves it alone. Needs root: without it the test
//! says why (`SKIPPED: ...`) and fails under `CI=true`.

use std::process::Command;

use innet_xdp::privileged::{self, say};

mod common;
use common::{leftovers, run, skip_reason, wait_clean, INNET};

/// Runs `script` with `sh` in a private mount namespace; (status, stdout, stderr).
fn in_private_mounts(script: &str) -> (i32, String, String) {
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", script])
        .env("INNET", INNET)
        .output()
        .expect("unshare runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn testbed_comes_up_and_goes_down_without_bpffs_and_a_failed_up_leaves_nothing() {
    let name = "testbed_comes_up_and_goes_down_without_bpffs_and_a_failed_up_leaves_nothing";
    if !privileged::proceed(name, skip_reason()) {
        return;
    }
    run(INNET, &["testbed", "down", "--only", "txn"]);
    assert_eq!(wait_clean(), Vec::<String>::new(), "leftovers before the test");

    // Without bpffs (and without its mount point): up mounts it, a
    // transaction commits through XDP, down removes everything.
    let (code, out, err) = in_private_mounts(
        r#"set -u
        mount -t tmpfs tmpfs /sys/fs || exit 10
        test ! -e /sys/fs/bpf || exit 11
        trap '"$INNET" testbed down --only txn >/dev/null' EXIT
        "$INNET" testbed up txn --data-plane xdp || exit 12
        grep -q ' /sys/fs/bpf bpf ' /proc/self/mounts || exit 13
        ip -n innet-switch link show | grep -c prog/xdp
        # One testbed at a time; another testbed's down leaves this one alone.
        "$INNET" testbed up paxos 2>&1 && exit 15
        "$INNET" testbed down --only paxos >/dev/null || exit 16
        ip netns list | grep -q innet-switch || exit 17
        for i in $(seq 1 30); do
            if ip netns exec innet-client "$INNET" client txn --to 10.77.0.1:9999 --increment 7 --timeout-ms 200 \
                | grep -q '"committed":true'; then echo committed; exit 0; fi
            sleep 0.1
        done
        exit 14"#,
    );
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    assert!(out.contains("committed"), "{out}");
    assert!(
        out.contains("one testbed at a time") && out.contains("--only txn"),
        "paxos refused while txn is up: {out}"
    );
    assert!(out.lines().any(|l| l.trim() == "2"), "both switch ports carry XDP: {out}");
    assert_eq!(wait_clean(), Vec::<String>::new(), "down left things behind");

    // bpffs cannot be mounted (/sys/fs read-only): up fails once its
    // namespaces and links exist, and removes them before it exits.
    let (code, out, err) = in_private_mounts(
        r#"set -u
        mount -t tmpfs -o ro tmpfs /sys/fs || exit 10
        "$INNET" testbed up txn --data-plane xdp && exit 11
        ip netns list | grep innet- && exit 12
        exit 0"#,
    );
    assert_eq!(code, 0, "stdout: {out}\nstderr: {err}");
    assert!(err.contains("removed what it made") && err.contains("netns innet-switch"), "{err}");
    assert!(err.contains("/sys/fs/bpf"), "the error names the BPF filesystem: {err}");
    assert_eq!(leftovers(), Vec::<String>::new(), "a failed up left things behind");
    say("TESTBED fresh machine: up without bpffs mounted (mount point missing) commits through XDP; a failed up removed its namespaces");
}
