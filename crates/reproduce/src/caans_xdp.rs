//! CAANS Figures 7a, 7b, 8 and Table 4 measured on the XDP data plane
//! (`innet reproduce --xdp`): the coordinator and the acceptors are BPF
//! programs on the `paxos` network-namespace testbed
//! ([`innet_xdp::paxos_testbed`]), the proposer, the learners and the
//! backup coordinator the user-space library on threads in the hosts
//! namespace; one run is what `innet bench xdp-paxos` runs for its XDP
//! deployment ([`innet_xdp_exp::paxos::run_xdp`]) on the bench's default
//! fabric except that the learners count the acceptors' votes, as CAANS's
//! did ([`fabric`]: no vote counters). libpaxos is the same
//! protocol with every role a software process, live on loopback
//! (`paxos_live::run_point_live`, the bench's software deployment), at the
//! same load.
//!
//! Every figure is measured, never predicted. The results' records carry
//! the configuration, seed and commit; CAANS's say data plane `xdp` and
//! runtime `xdp-testbed` ([`as_recorded`]). Inside this crate CAANS's
//! results carry the `Switch` data plane, so that the claims of the
//! simulator's and the live runs (`paxos_bench::max_throughput`,
//! `paxos_bench::table4`) apply unchanged.
//!
//! Needs root and the `xdp` feature; without them the entries fail with
//! the reason. Anything that runs here attaches XDP: run it under
//! `flock /tmp/innet-xdp.lock`.

use std::sync::Mutex;

use anyhow::Result;

use crate::entry::Ctx;
use innet_exp::paxos::{DataPlaneAt, PaxosConfig, PaxosResult};
use innet_exp::paxos_bench::PAPER_SLOTS;
use innet_exp::paxos_live;

/// Requests in flight of the XDP sweep: Figure 7a's, as in the simulator.
pub const SWEEP: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];

/// Seconds of load per point at scale 1 (the live sweep's), never below
/// [`POINT_SECONDS_MIN`].
pub const POINT_SECONDS: f64 = 1.0;
pub const POINT_SECONDS_MIN: f64 = 0.3;

/// Repetitions of every XDP run at scale 1, each with its own seed (the
/// run's seed, then the next): a direction holds only by more than their
/// spread. At scales below 0.25 one run (no spread measured, said so in
/// the row).
pub const XDP_SEEDS: usize = 2;

/// The seeds the XDP variants run.
pub fn seeds(ctx: &Ctx) -> Vec<u64> {
    (0..ctx.count(XDP_SEEDS, 1) as u64).map(|i| ctx.seed + i).collect()
}

/// The base configuration of a point: the paper's shape (3 acceptors, 2
/// learners, 1 proposer), its acceptor ring (65,536 instances, CAANS Table
/// 3), no added link latency (the testbed's veths and loopback are what
/// they are).
pub fn base(ctx: &Ctx, seed: u64) -> PaxosConfig {
    PaxosConfig {
        seed,
        slots: PAPER_SLOTS,
        duration_s: ctx.seconds(POINT_SECONDS, POINT_SECONDS_MIN),
        latency_us: 0.0,
        ..PaxosConfig::default()
    }
}

/// `r` as its record says it ran: CAANS's results on the testbed with the
/// `Xdp` data plane (inside this crate they carry `Switch`).
pub fn as_recorded(r: &PaxosResult) -> PaxosResult {
    let mut r = r.clone();
    if r.runtime == XDP_RUNTIME {
        r.config.data_plane = DataPlaneAt::Xdp;
    }
    r
}

/// The runtime name of a result measured on the testbed.
pub const XDP_RUNTIME: &str = "xdp-testbed";

/// One run of `cfg` with the coordinator and acceptors as BPF programs
/// (the testbed up, the end hosts, the testbed down), its result labelled
/// `Switch` (CAANS) for this crate's claims.
#[cfg(feature = "xdp")]
pub fn xdp_point(cfg: &PaxosConfig) -> Result<PaxosResult> {
    if let Some(why) = innet_xdp::paxos::unavailable() {
        anyhow::bail!("CAANS on the XDP testbed: {why}");
    }
    let load = crate::caans_roles::xdp_load(cfg, cfg.slots, fabric());
    let mut r = innet_xdp_exp::paxos::run_xdp(&load, false)?.result;
    anyhow::ensure!(r.runtime == XDP_RUNTIME, "the testbed's result says runtime {}", r.runtime);
    r.config.data_plane = DataPlaneAt::Switch;
    Ok(r)
}

/// The fabric: `innet bench xdp-paxos`'s default (driver-mode XDP,
/// threaded NAPI on the coordinator's device, devmap multicast), with
/// every learner and the proposer counting their own votes
/// (`Decisions::PerPort`, no vote counters), as CAANS's learners did.
#[cfg(feature = "xdp")]
pub fn fabric() -> innet_xdp_exp::paxos::PaxosFabricArgs {
    innet_xdp_exp::paxos::PaxosFabricArgs {
        decisions: innet_xdp::paxos_testbed::Decisions::PerPort,
        ..Default::default()
    }
}

#[cfg(not(feature = "xdp"))]
pub fn xdp_point(_: &PaxosConfig) -> Result<PaxosResult> {
    anyhow::bail!("CAANS on the XDP testbed: innet was built without the `xdp` feature")
}

/// libpaxos-style: every role a software process, live on loopback.
fn software_point(cfg: &PaxosConfig) -> Result<PaxosResult> {
    paxos_live::run_point_live(&PaxosConfig { data_plane: DataPlaneAt::Process, ..cfg.clone() })
}

/// A sweep's key: the run's scale (its bits) and seed.
type SweepKey = (u64, u64);

/// The Figure 7a sweep of one run (scale, seed), shared by Figures 7a, 7b
/// and Table 4.
static SWEEP_CACHE: Mutex<Option<(SweepKey, Vec<Vec<PaxosResult>>)>> = Mutex::new(None);

/// The Figure 7a sweep on the testbed, one per seed ([`seeds`]): for each
/// number of requests in flight, CAANS on XDP and then libpaxos-style
/// processes, at the same load.
pub fn sweep(ctx: &Ctx) -> Result<Vec<Vec<PaxosResult>>> {
    let key = (ctx.scale.to_bits(), ctx.seed);
    let mut cache = SWEEP_CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((k, rs)) = cache.as_ref() {
        if *k == key {
            return Ok(rs.clone());
        }
    }
    let mut runs = vec![];
    for seed in seeds(ctx) {
        let base = base(ctx, seed);
        let mut rs = vec![];
        for n in SWEEP {
            let cfg = PaxosConfig { outstanding: n, ..base.clone() };
            rs.push(xdp_point(&cfg)?);
            rs.push(software_point(&cfg)?);
        }
        runs.push(rs);
    }
    *cache = Some((key, runs.clone()));
    Ok(runs)
}

/// Figure 8's four runs of `fbase` on the testbed: acceptor 0 fails at the
/// midpoint, then (another run) the coordinator; CAANS on XDP, then
/// libpaxos-style processes live.
pub fn failures(fbase: &PaxosConfig) -> Result<Vec<PaxosResult>> {
    let half = fbase.duration_s / 2.0;
    let mut rs = vec![];
    for xdp in [true, false] {
        for (acc, coord) in [(Some(half), None), (None, Some(half))] {
            let cfg = PaxosConfig {
                acceptor_crash_at_s: acc,
                acceptor_restart_at_s: None,
                coordinator_fail_at_s: coord,
                latency_us: 0.0,
                slots: PAPER_SLOTS,
                ..fbase.clone()
            };
            rs.push(if xdp { xdp_point(&cfg)? } else { software_point(&cfg)? });
        }
    }
    Ok(rs)
}

/// The caveat of an XDP variant of `figure`: what the testbed is and is
/// not, with `detail`.
pub fn caveat(figure: &str, detail: &str) -> String {
    format!(
        "measured on the XDP data plane, not the paper's hardware: the coordinator and the acceptors are BPF \
         programs (driver-mode XDP, devmap multicast; no vote counters: every acceptor's vote is copied to each \
         learner, the proposer and the backup coordinator, which count them, as CAANS's learners did) on veth \
         pairs between network namespaces of one 2-core VM, not FPGA switches on 10G links (no hardware switch \
         here); the proposer, the learners and the backup coordinator are user-space threads on the same cores \
         as the data plane's softirqs, and libpaxos is our protocol with every role a software process, live on \
         loopback, not libpaxos itself. On a loaded machine the backup coordinator can miss the coordinator's \
         heartbeats and take over with no failure (a record's takeover_at_s says when). {figure}: {detail}. The \
         machine is shared: the load average is in docs/reproduce.md#the-xdp-variants-innet-reproduce---xdp \
         with the figures measured"
    )
}
