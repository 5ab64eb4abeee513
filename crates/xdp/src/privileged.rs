//! For tests that need root (BPF, network namespaces): say what ran, and
//! say loudly why something did not (libbpf-rs's `#[tag(root)]` habit).
//!
//! Lines go straight to file descriptor 2, past libtest's capture of
//! `eprintln!`, so they appear in the log of a passing run; `scripts/test.sh`
//! echoes `DIFFERENTIAL`, `TESTBED` and `SKIPPED:` lines and fails under
//! `CI=true` if any `SKIPPED:` line appears.

use std::io::Write;

/// One line on stderr, uncaptured.
pub fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// `true` if `reason` is `None` (go ahead); otherwise prints
/// `SKIPPED: <test>: <reason>` and returns `false`, or fails the test when
/// `CI=true` (CI must never pass without running it).
pub fn proceed(test: &str, reason: Option<String>) -> bool {
    let Some(why) = reason else { return true };
    say(&format!("SKIPPED: {test}: {why}"));
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{test} skipped under CI=true: {why}");
    false
}
