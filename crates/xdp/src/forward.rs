//! CAANS Table 1's analogue: the per-packet latency of the XDP coordinator
//! and acceptor against plain XDP forwarding (`bpf/forward.bpf.c`), all
//! timed by the kernel with `BPF_PROG_TEST_RUN`.
//!
//! Each program runs the same frame (the coordinator's REQUEST, or the
//! acceptor's 2A: [`paxos::cost_setup`]) as single runs on a fresh copy,
//! and the figure is the median over the runs ([`BpfObject::median_run_ns`]).
//! The programs take turns in chunks of [`CHUNK`] runs, so that a busy
//! moment of the machine falls on all of them alike. `xdp_pass` (returns
//! at once) is the floor: the cost of a run that does nothing, clock read
//! included; the paper's pipeline timestamps have no such floor.

use anyhow::{ensure, Result};
use serde::Serialize;

use crate::object::{BpfObject, XDP_PASS, XDP_TX};
use crate::paxos::{self, Role};

static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/forward.bpf.o"));

/// The forwarding program: parse to the Paxos port, swap addresses, `XDP_TX`.
pub const FORWARD_PROGRAM: &str = "xdp_forward";
/// The empty program: `XDP_PASS` at once.
pub const PASS_PROGRAM: &str = "xdp_pass";

/// Runs per turn of each program.
pub const CHUNK: u32 = 1_000;

/// Median ns per packet of each program (`BPF_PROG_TEST_RUN`, single runs).
#[derive(Clone, Debug, Serialize)]
pub struct Table1Ns {
    /// Single runs per program.
    pub runs: u32,
    /// `xdp_forward` on the coordinator's REQUEST frame.
    pub forward: f64,
    /// `xdp_forward` on the acceptor's 2A frame.
    pub forward_2a: f64,
    /// `xdp_pass`: the measurement's floor.
    pub pass: f64,
    /// `xdp_paxos_coordinator`: REQUEST -> 2A.
    pub coordinator: f64,
    /// `xdp_paxos_acceptor`: 2A -> vote.
    pub acceptor: f64,
    /// `xdp_forward` and `xdp_pass` as one run repeated [`CHUNK`] times in
    /// the kernel (the mean, in ns, median over the turns): below the
    /// single runs' floor, since the clock is read once per turn. Valid for
    /// these two only: forwarding takes the same path on the frame it
    /// rewrote, the Paxos roles do not.
    pub forward_repeated: f64,
    pub pass_repeated: f64,
}

/// Measures [`Table1Ns`] with `runs` single runs per program (at least
/// one chunk). Needs root (loading BPF programs).
pub fn table1_ns(runs: u32) -> Result<Table1Ns> {
    let fwd = BpfObject::load(OBJECT, &[])?;
    let (coord, request) = paxos::cost_setup(Role::Coordinator)?;
    let (acc, phase_2a) = paxos::cost_setup(Role::Acceptor)?;
    // The paths measured are the ones named: forwarding sends the frame
    // back, the roles act on it (not a refusal, not other traffic).
    for frame in [&request, &phase_2a] {
        ensure!(fwd.test_run(FORWARD_PROGRAM, frame)?.0 == XDP_TX, "xdp_forward did not forward the frame");
    }
    ensure!(fwd.test_run(PASS_PROGRAM, &request)?.0 == XDP_PASS, "xdp_pass did not pass");
    let chunks = runs.div_ceil(CHUNK).max(1);
    let mut all: [Vec<u64>; 5] = Default::default();
    let (mut fr, mut pr) = (vec![], vec![]);
    for _ in 0..chunks {
        all[0].push(fwd.median_run_ns(FORWARD_PROGRAM, &request, CHUNK)?);
        all[1].push(fwd.median_run_ns(FORWARD_PROGRAM, &phase_2a, CHUNK)?);
        all[2].push(fwd.median_run_ns(PASS_PROGRAM, &request, CHUNK)?);
        all[3].push(coord.median_run_ns(&request, CHUNK)?);
        all[4].push(acc.median_run_ns(&phase_2a, CHUNK)?);
        fr.push(fwd.test_run_repeat(FORWARD_PROGRAM, &request, CHUNK)?.as_secs_f64() * 1e9);
        pr.push(fwd.test_run_repeat(PASS_PROGRAM, &request, CHUNK)?.as_secs_f64() * 1e9);
    }
    for (x, what) in [(&coord, "coordinator"), (&acc, "acceptor")] {
        ensure!(x.counters()?.iter().any(|(_, v)| *v > 0), "the {what} counted nothing");
        paxos::ensure_admitted(&x.rejected()?).map_err(|e| e.context(what))?;
    }
    // The median of the chunks' medians.
    let med = |v: &mut Vec<u64>| {
        v.sort_unstable();
        v[v.len() / 2] as f64
    };
    let fmed = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let [mut f, mut f2, mut p, mut c, mut a] = all;
    Ok(Table1Ns {
        runs: chunks * CHUNK,
        forward: med(&mut f),
        forward_2a: med(&mut f2),
        pass: med(&mut p),
        coordinator: med(&mut c),
        acceptor: med(&mut a),
        forward_repeated: fmed(&mut fr),
        pass_repeated: fmed(&mut pr),
    })
}
