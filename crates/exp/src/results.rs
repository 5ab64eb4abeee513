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

/// Appends one JSON object per line to `path`, creating parent folders.
pub fn append_jsonl<T: serde::Serialize>(path: &Path, records: &[T]) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    for r in records {
        writeln!(f, "{}", serde_json::to_string(r)?)?;
    }
    Ok(())
}
