//! The C example builds with gcc against the shared
//! library, as the README says, and runs: ten values submitted, ten
//! delivered, for both deployments.

mod common;

use std::process::Command;

#[test]
fn c_example_builds_and_delivers() {
    let (exe, lib_dir) = (common::compile_example("gcc", "paxos_example"), common::library_dir());
    for dp in ["switch", "process"] {
        let out = Command::new(&exe).arg(dp).env("LD_LIBRARY_PATH", &lib_dir).output().expect("example runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        println!("{stdout}");
        assert!(out.status.success(), "{dp}: {stdout} {}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains("10 of 10 values delivered"), "{dp}: {stdout}");
        assert_eq!(stdout.matches("deliver instance").count(), 10);
    }
}
