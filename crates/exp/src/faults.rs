//! Link faults of the simulator, declared once: jitter, loss, duplication
//! and reordering, with one unit for time (milliseconds). Every experiment
//! configuration that takes faults embeds [`Faults`] (its flags through
//! `#[command(flatten)]`, its record fields through `#[serde(flatten)]`:
//! `jitter_ms`, `loss`, `duplicate`, `reorder` at the record's top level).
//!
//! The consensus configuration used to take its jitter in microseconds
//! (`--jitter-us`, record field `jitter_us`); the flag is gone (clap names
//! `--jitter-ms` for it) and an old record's `jitter_us` still reads, as
//! milliseconds.

use std::time::Duration;

use innet_sim::LinkSpec;
use serde::{Deserialize, Serialize};

/// Link faults of the simulator (the live runtimes refuse them:
/// [`Faults::refuse_live`]).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, clap::Args)]
#[serde(from = "FaultsRecord")]
pub struct Faults {
    /// Simulator link jitter, ms: uniform extra one-way delay in [0, jitter).
    #[arg(long, default_value_t = 0.0, value_parser = crate::parse::delay_ms)]
    pub jitter_ms: f64,
    /// Simulator per-packet loss probability.
    #[arg(long, default_value_t = 0.0, value_parser = crate::parse::ratio)]
    pub loss: f64,
    /// Simulator per-packet duplication probability.
    #[arg(long, default_value_t = 0.0, value_parser = crate::parse::ratio)]
    pub duplicate: f64,
    /// Simulator probability that a packet is held back by up to 2x the link latency.
    #[arg(long, default_value_t = 0.0, value_parser = crate::parse::ratio)]
    pub reorder: f64,
}

/// A record's fault fields as written, old spellings included.
#[derive(Deserialize)]
struct FaultsRecord {
    #[serde(default)]
    jitter_ms: Option<f64>,
    /// The consensus records' old field (microseconds).
    #[serde(default)]
    jitter_us: Option<f64>,
    #[serde(default)]
    loss: f64,
    #[serde(default)]
    duplicate: f64,
    #[serde(default)]
    reorder: f64,
}

impl From<FaultsRecord> for Faults {
    fn from(r: FaultsRecord) -> Faults {
        let jitter_ms = r.jitter_ms.or(r.jitter_us.map(|us| us / 1e3)).unwrap_or(0.0);
        Faults { jitter_ms, loss: r.loss, duplicate: r.duplicate, reorder: r.reorder }
    }
}

impl Faults {
    /// No faults at all.
    pub const NONE: Faults = Faults { jitter_ms: 0.0, loss: 0.0, duplicate: 0.0, reorder: 0.0 };

    /// The jitter as a duration.
    pub fn jitter(&self) -> Duration {
        Duration::from_secs_f64(self.jitter_ms / 1e3)
    }

    /// A link of one-way `latency` with these faults.
    pub fn link(&self, latency: Duration) -> LinkSpec {
        LinkSpec {
            latency,
            jitter: self.jitter(),
            loss_probability: self.loss,
            duplicate_probability: self.duplicate,
            reorder_probability: self.reorder,
        }
    }

    /// Checks every field; the error names the flag and says how to fix it.
    pub fn validate(&self) -> Result<(), String> {
        for (name, p) in [("loss", self.loss), ("duplicate", self.duplicate), ("reorder", self.reorder)] {
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("--{name} {p} must be a probability in 0..=1"));
            }
        }
        if !(self.jitter_ms >= 0.0 && self.jitter_ms.is_finite()) {
            return Err(format!("--jitter-ms {} must be a finite number >= 0", self.jitter_ms));
        }
        Ok(())
    }

    /// Refuses any fault: the live runtimes emulate delay only.
    pub fn refuse_live(&self) -> Result<(), String> {
        for (name, v) in [
            ("jitter-ms", self.jitter_ms),
            ("loss", self.loss),
            ("duplicate", self.duplicate),
            ("reorder", self.reorder),
        ] {
            if v != 0.0 {
                return Err(format!(
                    "--{name} {v}: link faults are simulator-only; the live runtime emulates delay only (set it to 0, \
                     or run the point in the simulator)"
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct Record {
        seed: u64,
        #[serde(flatten)]
        faults: Faults,
    }

    #[test]
    fn a_record_keeps_the_flat_fields_and_reads_back() {
        let r = Record { seed: 3, faults: Faults { jitter_ms: 1.5, loss: 0.01, duplicate: 0.02, reorder: 0.03 } };
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["jitter_ms"], 1.5);
        assert_eq!(v["loss"], 0.01);
        assert_eq!(v["reorder"], 0.03);
        assert_eq!(serde_json::from_value::<Record>(v).unwrap(), r);
    }

    #[test]
    fn an_old_consensus_record_reads_its_jitter_in_microseconds() {
        let r: Record = serde_json::from_str(r#"{"seed":1,"jitter_us":250,"loss":0.1}"#).unwrap();
        assert_eq!(r.faults, Faults { jitter_ms: 0.25, loss: 0.1, ..Faults::NONE });
        let r: Record = serde_json::from_str(r#"{"seed":1}"#).unwrap();
        assert_eq!(r.faults, Faults::NONE);
    }

    #[test]
    fn the_live_runtime_refuses_each_fault_by_its_flag() {
        assert!(Faults::NONE.refuse_live().is_ok());
        let e = Faults { duplicate: 0.5, ..Faults::NONE }.refuse_live().unwrap_err();
        assert!(e.starts_with("--duplicate 0.5"), "{e}");
        let e = Faults { jitter_ms: 2.0, ..Faults::NONE }.validate().map(|_| Faults { loss: 2.0, ..Faults::NONE });
        assert!(e.unwrap().validate().unwrap_err().starts_with("--loss 2"));
    }
}
