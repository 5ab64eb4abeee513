//! What each BPF program of a running testbed costs where it runs: the
//! kernel's run-time statistics (`BPF_ENABLE_STATS` with
//! `BPF_STATS_RUN_TIME`: every program's run count and the nanoseconds
//! spent in it, measured around each run), read before and after a
//! benchmark round. With the fabric's total CPU per instance, the part no
//! program accounts for is the frames' transport (veth transmit, NAPI
//! polls, copies, socket delivery): the hop-by-hop cost table of
//! `docs/xdp.md`.
//!
//! Statistics stay on while a [`StatsOn`] lives (the kernel counts them
//! only while someone asks), and cost a clock read per run meanwhile.

use std::collections::BTreeMap;
use std::os::fd::{FromRawFd, OwnedFd};

use anyhow::{bail, Result};
use serde::Serialize;

/// Keeps the kernel's BPF run-time statistics on until dropped.
pub struct StatsOn(#[allow(dead_code)] OwnedFd);

/// Turns the statistics on (root).
pub fn enable() -> Result<StatsOn> {
    // SAFETY: a plain system call; the returned descriptor is ours.
    let fd = unsafe { libbpf_rs::libbpf_sys::bpf_enable_stats(libbpf_rs::libbpf_sys::BPF_STATS_RUN_TIME) };
    if fd < 0 {
        bail!("BPF_ENABLE_STATS: {}", std::io::Error::from_raw_os_error(-fd));
    }
    // SAFETY: a fresh descriptor returned by the kernel.
    Ok(StatsOn(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// Every loaded program whose name starts with one of `prefixes` (the
/// kernel keeps 15 characters of a name): runs and nanoseconds, summed
/// over the programs of one name (three acceptors are one line).
pub fn snapshot(prefixes: &[&str]) -> BTreeMap<String, (u64, u64)> {
    let mut out: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for p in libbpf_rs::query::ProgInfoIter::default() {
        let name = p.name.to_string_lossy().to_string();
        if prefixes.iter().any(|x| name.starts_with(x)) {
            let e = out.entry(name).or_default();
            e.0 += p.run_cnt;
            e.1 += p.run_time_ns;
        }
    }
    out
}

/// One program's share of a round.
#[derive(Clone, Debug, Serialize)]
pub struct ProgCost {
    pub program: String,
    pub runs: u64,
    pub ns_per_run: f64,
    /// Its runs per unit of work (an instance, a transaction).
    pub runs_per_unit: f64,
    /// Nanoseconds of it per unit of work.
    pub ns_per_unit: f64,
}

/// What each program did between `before` and `after`, per `units`.
pub fn costs(before: &BTreeMap<String, (u64, u64)>, after: &BTreeMap<String, (u64, u64)>, units: u64) -> Vec<ProgCost> {
    after
        .iter()
        .filter_map(|(name, &(cnt, ns))| {
            let (c0, n0) = before.get(name).copied().unwrap_or((0, 0));
            let (runs, ns) = (cnt.saturating_sub(c0), ns.saturating_sub(n0));
            (runs > 0).then(|| ProgCost {
                program: name.clone(),
                runs,
                ns_per_run: ns as f64 / runs as f64,
                runs_per_unit: runs as f64 / units.max(1) as f64,
                ns_per_unit: ns as f64 / units.max(1) as f64,
            })
        })
        .collect()
}
