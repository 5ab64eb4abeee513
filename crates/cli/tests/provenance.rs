//! A record names the commit the binary was built from, whatever folder the
//! binary runs in (issue 23, item 8): run from a folder outside any checkout
//! and from inside another git repository, `innet sim txn --json` records
//! the commit `innet --version` shows, which is this checkout's HEAD (with
//! `-dirty` exactly when its sources are modified).

use std::path::Path;
use std::process::Command;

const INNET: &str = env!("CARGO_BIN_EXE_innet");

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn recorded_commit(cwd: &Path) -> String {
    let out = Command::new(INNET)
        .args(["sim", "txn", "--mode", "optimistic-abort", "--json"])
        .current_dir(cwd)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let record: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    record["git_commit"].as_str().unwrap_or_else(|| panic!("no git_commit in {record}")).to_string()
}

#[test]
fn a_record_carries_the_commit_the_binary_was_built_from_in_any_folder() {
    let version = Command::new(INNET).arg("--version").output().unwrap();
    let version = String::from_utf8_lossy(&version.stdout).trim().to_string();
    let built = version
        .strip_prefix("innet 0.1.0 (commit ")
        .and_then(|v| v.strip_suffix(')'))
        .unwrap_or_else(|| panic!("--version shows no commit: {version:?}"))
        .to_string();

    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    match git(&workspace, &["rev-parse", "--short=12", "HEAD"]) {
        Some(head) => {
            assert_eq!(built.trim_end_matches("-dirty"), head, "--version: {version}");
            let sources_modified =
                git(&workspace, &["status", "--porcelain", "--untracked-files=no", "--", "crates", "bpf"])
                    .is_some_and(|s| !s.is_empty());
            let tree_clean =
                git(&workspace, &["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| s.is_empty());
            if sources_modified {
                assert!(built.ends_with("-dirty"), "modified sources, but --version says {built}");
            }
            if tree_clean {
                assert!(!built.ends_with("-dirty"), "clean tree, but --version says {built}");
            }
        }
        None => assert_eq!(built, "unknown", "built outside a checkout"),
    }

    let base = std::env::temp_dir().join(format!("innet-provenance-{}", std::process::id()));
    let (plain, repo) = (base.join("plain"), base.join("other-repo"));
    std::fs::create_dir_all(&plain).unwrap();
    std::fs::create_dir_all(&repo).unwrap();
    assert_eq!(recorded_commit(&plain), built, "run from a folder outside any checkout");

    let init = [
        &["init", "-q"][..],
        &["-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "--allow-empty", "-m", "other"],
    ];
    for args in init {
        assert!(git(&repo, args).is_some(), "git {args:?} in {}", repo.display());
    }
    let other = git(&repo, &["rev-parse", "--short=12", "HEAD"]).unwrap();
    let recorded = recorded_commit(&repo);
    assert_eq!(recorded, built, "run from inside another repository (its HEAD is {other})");
    assert!(!recorded.starts_with(&other));
    std::fs::remove_dir_all(&base).ok();
}
