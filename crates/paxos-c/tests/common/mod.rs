//! Building the C examples against the shared library this test run built.

use std::path::PathBuf;

/// Where the shared library this test run built is: beside the test
/// executable, in target/release/deps (`cargo build` also copies it to
/// target/release, but that copy may be older than this run).
pub fn library_dir() -> PathBuf {
    // .../target/release/deps/<test>-HASH
    std::env::current_exe().unwrap().parent().unwrap().to_path_buf()
}

/// Compiles `examples/c/<name>.c` with `compiler` (warnings are errors)
/// against the library; returns the executable (run it with
/// `LD_LIBRARY_PATH` = [`library_dir`]).
pub fn compile_example(compiler: &str, name: &str) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let lib_dir = library_dir();
    assert!(lib_dir.join("libinnet_paxos_c.so").exists(), "no libinnet_paxos_c.so in {}", lib_dir.display());
    let exe = lib_dir.join(name);
    let st = std::process::Command::new(compiler)
        .args(["-Wall", "-Wextra", "-Werror", "-I"])
        .arg(root.join("include"))
        .arg(root.join(format!("examples/c/{name}.c")))
        .arg("-L")
        .arg(&lib_dir)
        .args(["-linnet_paxos_c", "-o"])
        .arg(&exe)
        .status()
        .unwrap_or_else(|e| panic!("{compiler} runs: {e}"));
    assert!(st.success(), "{compiler} failed on {name}.c");
    exe
}
