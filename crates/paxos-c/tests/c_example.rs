//! The C example builds with gcc against the shared
//! library, as the README says, and runs: ten values submitted, ten
//! delivered, for both deployments.

use std::path::PathBuf;
use std::process::Command;

/// Where the shared library this test run built is: beside the test
/// executable, in target/release/deps (`cargo build` also copies it to
/// target/release, but that copy may be older than this run).
fn library_dir() -> PathBuf {
    // .../target/release/deps/c_example-HASH
    std::env::current_exe().unwrap().parent().unwrap().to_path_buf()
}

#[test]
fn c_example_builds_and_delivers() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let lib_dir = library_dir();
    assert!(lib_dir.join("libinnet_paxos_c.so").exists(), "no libinnet_paxos_c.so in {}", lib_dir.display());
    let exe = lib_dir.join("paxos_example");
    let st = Command::new("gcc")
        .args(["-Wall", "-Wextra", "-Werror", "-I"])
        .arg(root.join("include"))
        .arg(root.join("examples/c/paxos_example.c"))
        .arg("-L")
        .arg(&lib_dir)
        .args(["-linnet_paxos_c", "-o"])
        .arg(&exe)
        .status()
        .expect("gcc runs");
    assert!(st.success(), "gcc failed");
    for dp in ["switch", "process"] {
        let out = Command::new(&exe).arg(dp).env("LD_LIBRARY_PATH", &lib_dir).output().expect("example runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        println!("{stdout}");
        assert!(out.status.success(), "{dp}: {stdout} {}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains("10 of 10 values delivered"), "{dp}: {stdout}");
        assert_eq!(stdout.matches("deliver instance").count(), 10);
    }
}
