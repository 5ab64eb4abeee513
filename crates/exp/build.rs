//! Embeds the git commit this crate is built from (`INNET_GIT_COMMIT`), so a
//! result record names the source of the binary that wrote it, whatever
//! folder the binary runs in (issue 23, item 8).
//!
//! The value is the 12-digit commit, with `-dirty` when a tracked file of
//! the binary's sources differs from it, or `unknown` where no checkout of
//! this workspace is found (a source tarball, no `git` installed). A
//! checkout of some *other* repository around the sources (a tarball
//! unpacked inside one) is not taken for ours: git's top level must be
//! this workspace.
//!
//! Rebuild triggers, chosen so the value is never stale and an unchanged
//! tree does not rebuild: the worktree's HEAD and its reflog (every commit,
//! checkout or reset moves them), the branch's ref (loose or packed), and
//! the source folders below, whose edits are what makes a tree dirty. Not
//! the index: `git status` rewrites it, which would rebuild this crate
//! after every status.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What goes into the `innet` binary and the Python package (the mininet
/// script is `include_str!`ed); the dirty flag looks at these only.
const SOURCES: [&str; 8] =
    ["Cargo.toml", "Cargo.lock", ".cargo", "crates", "bpf", "python/src", "python/Cargo.toml", "tools/mininet"];

fn git(root: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git").arg("-C").arg(root).args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest.join("../..").canonicalize().unwrap_or(manifest.join("../.."));
    println!("cargo:rustc-env=INNET_GIT_COMMIT={}", commit(&root));
}

fn commit(root: &Path) -> String {
    let ours = git(root, &["rev-parse", "--show-toplevel"])
        .and_then(|t| Path::new(&t).canonicalize().ok())
        .is_some_and(|t| t == root);
    let head = git(root, &["rev-parse", "--short=12", "HEAD"]).filter(|h| !h.is_empty());
    let Some(head) = head.filter(|_| ours) else {
        // Nothing to watch but the sources: a tarball rebuilds as any crate does.
        println!("cargo:rerun-if-changed=build.rs");
        return "unknown".into();
    };
    watch_git(root);
    for s in SOURCES {
        if root.join(s).exists() {
            println!("cargo:rerun-if-changed={}", root.join(s).display());
        }
    }
    let mut status = vec!["status", "--porcelain", "--untracked-files=no", "--"];
    status.extend(SOURCES);
    match git(root, &status) {
        Some(s) if s.is_empty() => head,
        _ => format!("{head}-dirty"),
    }
}

/// HEAD and its reflog live in the worktree's git dir, the branch's ref in
/// the common one; `--git-path` finds each (worktrees included). A missing
/// path would make cargo rerun every build, so only existing ones are named.
fn watch_git(root: &Path) {
    let mut paths = vec!["HEAD".to_string(), "logs/HEAD".into(), "packed-refs".into()];
    if let Some(branch) = git(root, &["symbolic-ref", "-q", "HEAD"]) {
        paths.push(branch);
    }
    for p in paths {
        let Some(path) = git(root, &["rev-parse", "--git-path", &p]) else { continue };
        let path = root.join(path);
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
}
