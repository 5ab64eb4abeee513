//! What every golden-vector test shares: reading a golden file, hex.
#![allow(dead_code)]

use serde::Deserialize;

/// The vectors of `crates/wire/golden/<file>` (JSON, a list). Tests of other
/// crates include this module by path; every crate sits in `crates/<name>`,
/// so the path from the including crate's manifest dir reaches the files.
pub fn load<T: for<'de> Deserialize<'de>>(file: &str) -> Vec<T> {
    let path = format!("{}/../wire/golden/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path} does not parse: {e}"))
}

pub fn unhex(s: &str) -> Vec<u8> {
    assert_eq!(s.len() % 2, 0, "odd hex length");
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit")).collect()
}
