//! Result records: provenance and JSON-lines output.

use std::io::Write;
use std::path::Path;

/// The commit the binary was built from (12 hex digits, `-dirty` when its
/// sources differed from it), or "unknown" when built without a checkout
/// (a source tarball): embedded by `build.rs` at build time, so it does
/// not depend on the folder the binary runs in.
pub const GIT_COMMIT: &str = env!("INNET_GIT_COMMIT");

/// `innet --version`: the package version and [`GIT_COMMIT`].
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("INNET_GIT_COMMIT"), ")");

/// [`GIT_COMMIT`] as every result record carries it.
pub fn git_commit() -> String {
    GIT_COMMIT.to_string()
}

/// Checks, before a run, that its results can be written to the folder
/// `dir`: in `dir` if it exists, else in the nearest existing folder above
/// it (where `dir` will be created), by creating and removing a probe
/// file. So a run never ends, after minutes, in "permission denied".
pub fn check_writable(dir: &Path) -> Result<(), String> {
    let mut at = dir.to_path_buf();
    loop {
        match std::fs::metadata(&at) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => return Err(format!("{} is a file, not a folder", at.display())),
            Err(_) => match at.parent() {
                Some(p) if !p.as_os_str().is_empty() => at = p.to_path_buf(),
                _ => {
                    at = std::path::PathBuf::from(".");
                    break;
                }
            },
        }
    }
    let probe = at.join(format!(".innet-write-probe-{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .map_err(|e| format!("cannot write in {}: {e}", at.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Appends one JSON object per line to `path`, creating parent folders.
pub fn append_jsonl<T: serde::Serialize>(path: &Path, records: &[T]) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    for r in records {
        writeln!(f, "{}", serde_json::to_string(r)?)?;
    }
    Ok(())
}
