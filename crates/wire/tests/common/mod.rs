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

/// One case of a hand-written packet-in, packet-out fixture file
/// (`crates/wire/golden/<program>.json`, `{"program", "how", "cases"}`):
/// the input, the verdict and output the paper's rules call for, and the
/// program's own fields (where the packet comes from, a flow or port).
#[derive(serde::Deserialize)]
pub struct FixtureCase {
    pub name: String,
    /// The rule the case follows (paper section, algorithm line).
    pub rule: String,
    pub input_hex: String,
    pub verdict: String,
    pub output_hex: String,
    #[serde(flatten)]
    pub fields: serde_json::Map<String, serde_json::Value>,
}

impl FixtureCase {
    /// The program's own field `key` as text (panics if absent: test input).
    pub fn text(&self, key: &str) -> &str {
        self.fields.get(key).and_then(|v| v.as_str()).unwrap_or_else(|| panic!("{}: no {key}", self.name))
    }

    /// The program's own number `key`, if present.
    pub fn number(&self, key: &str) -> Option<u64> {
        self.fields.get(key).and_then(|v| v.as_u64())
    }
}

/// The cases of fixture file `crates/wire/golden/<file>`, in order.
pub fn fixtures(file: &str) -> Vec<FixtureCase> {
    #[derive(serde::Deserialize)]
    struct Fixtures {
        cases: Vec<FixtureCase>,
    }
    let path = format!("{}/../wire/golden/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    let f: Fixtures = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path} does not parse: {e}"));
    f.cases
}

/// Lowercase hex of `b`.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
