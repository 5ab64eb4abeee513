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
//! runtime `xdp-testbed` ([`Runtime::Xdp`], [`as_recorded`]). Inside this crate CAANS's
//! results carry the `Switch` data plane, so that the claims of the
//! simulator's and the live runs (`paxos_bench::max_throughput`,
//! `paxos_bench::table4`) apply unchanged.
//!
//! Needs root and the `xdp` feature; without them the entries fail with
//! the reason. Anything that runs here attaches XDP: run it under
//! `flock /tmp/innet-xdp.lock`.

use std::sync::Mutex;

use anyhow::Result;

use crate::entry::{Ctx, Runtime};
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
    if r.runtime == Runtime::Xdp {
        r.config.data_plane = DataPlaneAt::Xdp;
    }
    r
}

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
    anyhow::ensure!(r.runtime == Runtime::Xdp, "the testbed's result says runtime {}", r.runtime.record_name());
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

// ---------------------------------------------------------------- Figure 7d

/// Requests in flight of Figure 7d's sweep: the live variant's
/// (`existing::caans_fig7d`).
pub const KV_SWEEP: [usize; 4] = [1, 4, 16, 64];

/// Commands a replica's check logs at most (each applied command's
/// instance, proposer and request: 12 bytes); beyond it the run's replicas
/// are not checked and the record says so (`log_full`). At scale 1 a point
/// applies about 10,000.
pub const APPLIED_LOG_MAX: usize = 1 << 22;

/// How long the replicas of a Figure 7d run on the testbed go on after
/// the proposer stops submitting (the testbed's other runs: 100 ms): a
/// replica behind on a loaded machine applies its backlog (seen: 81
/// commands behind after 100 ms at 64 in flight), so that every replica
/// can be checked to have applied every committed command. The proposer
/// submits nothing new meanwhile (its requests in flight, at most 64, may
/// still commit, as in every run).
pub const KV_DRAIN: std::time::Duration = std::time::Duration::from_secs(1);

/// What one key-value replica (a learner applying the delivered commands
/// to its LevelDB, `innet_paxos_kv::Replica`) held at the end of a run,
/// checked against what the proposers submitted.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ReplicaCheck {
    pub id: u16,
    /// Commands applied (not no-ops, not duplicates).
    pub applied: u64,
    /// The store's contents' digest (`Replica::digest`) and key count.
    pub digest: u64,
    pub keys: usize,
    /// LevelDB write batches (one per delivered batch).
    pub store_writes: u64,
    /// Requests `(proposer, request)` applied more than once.
    pub applied_twice: u64,
    /// Applied commands no proposer submitted.
    pub not_submitted: u64,
    /// Its contents are what applying its applied commands, in their
    /// order, to an empty map gives (each put, delete as submitted).
    pub matches_replay: bool,
    /// The log reached [`APPLIED_LOG_MAX`]: nothing above was checked.
    pub log_full: bool,
}

/// One Figure 7d run on the XDP testbed: the deployment's result (learner
/// 0's figures) and every replica's check.
#[derive(Clone, Debug, serde::Serialize)]
pub struct KvRun {
    #[serde(flatten)]
    pub result: PaxosResult,
    pub replicas: Vec<ReplicaCheck>,
    /// Every replica applied the same requests in the same instances and
    /// holds the same contents (equal digests).
    pub identical: bool,
    /// On every replica no request was applied twice, none that was not
    /// submitted, each replica's contents match its replay, and at least as
    /// many were applied as the proposers saw committed.
    pub applied_once: bool,
}

/// Figure 7d's runs of one seed on XDP: for each of [`KV_SWEEP`], CAANS
/// with LevelDB replicas on the testbed, libpaxos-style processes with
/// LevelDB replicas live, and CAANS on the testbed without LevelDB.
#[derive(Clone, Debug)]
pub struct KvSweep {
    pub xdp_kv: Vec<KvRun>,
    pub software_kv: Vec<PaxosResult>,
    pub xdp_plain: Vec<PaxosResult>,
}

impl KvSweep {
    /// The results of the XDP runs with replicas.
    pub fn xdp_kv_results(&self) -> Vec<PaxosResult> {
        self.xdp_kv.iter().map(|r| r.result.clone()).collect()
    }
}

/// Figure 7d's sweep on the testbed, one per seed ([`seeds`]); the
/// replicas' LevelDB directories under `dir` (removed after).
pub fn kv_sweep(ctx: &Ctx, dir: &std::path::Path) -> Result<Vec<KvSweep>> {
    let runs = kv_runs(ctx, dir);
    let _ = std::fs::remove_dir_all(dir);
    runs
}

fn kv_runs(ctx: &Ctx, dir: &std::path::Path) -> Result<Vec<KvSweep>> {
    let mut runs = vec![];
    for seed in seeds(ctx) {
        let base = base(ctx, seed);
        let mut s = KvSweep { xdp_kv: vec![], software_kv: vec![], xdp_plain: vec![] };
        for n in KV_SWEEP {
            let cfg = PaxosConfig { outstanding: n, ..base.clone() };
            s.xdp_kv.push(kv_xdp_point(&cfg, dir)?);
            s.software_kv.push(software_point(&PaxosConfig { kv: true, ..cfg.clone() })?);
            s.xdp_plain.push(xdp_point(&cfg)?);
        }
        runs.push(s);
    }
    Ok(runs)
}

/// One Figure 7d run of `cfg` on the testbed: the coordinator and acceptors
/// BPF programs, the learners key-value replicas on fresh LevelDBs under
/// `dir` (`innet_paxos_kv::Replica`, as `innet kv-replica` and the live
/// Figure 7d run them), the proposers submitting the live Figure 7d's
/// commands (`innet_paxos_kv::with_kv_load`); the result labelled `Switch`
/// (CAANS) for this crate's claims, with the replicas checked.
#[cfg(all(feature = "xdp", feature = "leveldb"))]
pub fn kv_xdp_point(cfg: &PaxosConfig, dir: &std::path::Path) -> Result<KvRun> {
    use innet_xdp::paxos_hosts::{self, HostsRun};
    if let Some(why) = innet_xdp::paxos::unavailable() {
        anyhow::bail!("CAANS Figure 7d on the XDP testbed: {why}");
    }
    let load = crate::caans_roles::xdp_load(cfg, cfg.slots, fabric());
    let dir = dir.join(format!("seed{}-inflight{}", cfg.seed, cfg.outstanding));
    let (out, checks) = innet_xdp_exp::paxos::run_xdp_with(&load, true, |run| {
        let run = HostsRun { record: true, drain: KV_DRAIN, ..run.clone() };
        let proposers = run.up.shape.proposers;
        let open = |id: u16, lcfg| kv_check::open(&dir.join(format!("replica{id}")), id, lcfg, proposers);
        let (report, replicas) =
            paxos_hosts::run_with(&run, |p| innet_paxos_kv::with_kv_load(p, true), open, kv_check::finish)?;
        let checks = kv_check::check(&report.proposers, replicas);
        Ok((report, checks))
    })?;
    let _ = std::fs::remove_dir_all(&dir);
    let mut result = out.result;
    anyhow::ensure!(
        result.runtime == Runtime::Xdp,
        "the testbed's result says runtime {}",
        result.runtime.record_name()
    );
    result.config.data_plane = DataPlaneAt::Switch;
    let (replicas, identical, applied_once) = checks;
    let committed = result.committed;
    let applied_once = applied_once && replicas.iter().all(|r| r.applied >= committed);
    Ok(KvRun { result, replicas, identical, applied_once })
}

#[cfg(not(all(feature = "xdp", feature = "leveldb")))]
pub fn kv_xdp_point(_: &PaxosConfig, _: &std::path::Path) -> Result<KvRun> {
    anyhow::bail!("CAANS Figure 7d on the XDP testbed: innet was built without the `xdp` and `leveldb` features")
}

/// The replicas of a Figure 7d run on the testbed, and their check.
#[cfg(all(feature = "xdp", feature = "leveldb"))]
mod kv_check {
    use std::collections::{BTreeMap, BTreeSet};

    use anyhow::Result;
    use innet_core::{Host, Outbox, Time};
    use innet_paxos::workload::LoadProposer;
    use innet_paxos::LearnerConfig;
    use innet_paxos_kv::{Command, Replica};
    use innet_xdp::paxos_hosts::LearnerRecord;

    use super::{ReplicaCheck, APPLIED_LOG_MAX};

    /// A replica that logs every command it applies (instance, proposer,
    /// request), up to [`APPLIED_LOG_MAX`].
    pub struct Logged {
        id: u16,
        replica: Replica,
        log: Vec<(u32, u32, u32)>,
        log_full: bool,
    }

    impl Logged {
        fn drain(&mut self) {
            for a in self.replica.take_answers() {
                if self.log.len() < APPLIED_LOG_MAX {
                    self.log.push((a.instance, a.proposer, a.request));
                } else {
                    self.log_full = true;
                }
            }
        }
    }

    impl Host for Logged {
        fn on_packet(&mut self, now: Time, packet: &[u8], out: &mut Outbox) {
            self.replica.on_packet(now, packet, out);
            self.drain();
        }
        fn on_tick(&mut self, now: Time, out: &mut Outbox) {
            self.replica.on_tick(now, out);
            self.drain();
        }
        fn next_tick(&self) -> Option<Time> {
            self.replica.next_tick()
        }
    }

    /// Replica `id` on a fresh LevelDB in `dir`, answering (logging) each
    /// of the testbed's `proposers`.
    pub fn open(dir: &std::path::Path, id: u16, lcfg: LearnerConfig, proposers: usize) -> Result<Logged> {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir.parent().unwrap_or(dir))?;
        let mut replica = Replica::open(dir, lcfg).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
        for i in 0..proposers {
            replica.answer_to(innet_xdp::paxos_hosts::proposer_id(i));
        }
        Ok(Logged { id, replica, log: vec![], log_full: false })
    }

    pub fn finish(l: Logged) -> (LearnerRecord, Logged) {
        (LearnerRecord { stats: l.replica.learner.stats, deliveries: vec![] }, l)
    }

    /// Each replica's check, whether they are identical, and whether each
    /// applied every command once.
    pub fn check(proposers: &[LoadProposer], replicas: Vec<Logged>) -> (Vec<ReplicaCheck>, bool, bool) {
        let submitted: BTreeMap<(u32, u32), &Vec<u8>> =
            proposers.iter().flat_map(|p| p.submitted.iter().map(|(k, v)| (*k, v))).collect();
        let mut checks = vec![];
        for r in &replicas {
            let mut seen = BTreeSet::new();
            let (mut twice, mut unknown) = (0, 0);
            let mut replay: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
            for &(_, p, q) in &r.log {
                if !seen.insert((p, q)) {
                    twice += 1;
                }
                match submitted.get(&(p, q)).and_then(|b| Command::decode(b)) {
                    Some(Command::Put { key, value }) => {
                        replay.insert(key, value);
                    }
                    Some(Command::Delete { key }) => {
                        replay.remove(&key);
                    }
                    Some(Command::Get { .. }) => {}
                    None => unknown += 1,
                }
            }
            let contents = r.replica.contents();
            let matches_replay = contents.len() == replay.len() && contents.into_iter().eq(replay);
            checks.push(ReplicaCheck {
                id: r.id,
                applied: r.replica.applied,
                digest: r.replica.digest(),
                keys: r.replica.contents().len(),
                store_writes: r.replica.store_writes,
                applied_twice: twice,
                not_submitted: unknown,
                matches_replay,
                log_full: r.log_full,
            });
        }
        let first = replicas.first();
        let identical = replicas.iter().all(|r| Some(&r.log) == first.map(|f| &f.log))
            && checks.iter().all(|c| Some(c.digest) == checks.first().map(|f| f.digest));
        let once = checks.iter().all(|c| {
            !c.log_full
                && c.applied_twice == 0
                && c.not_submitted == 0
                && c.matches_replay
                && c.applied as usize == replicas.iter().find(|r| r.id == c.id).map_or(0, |r| r.log.len())
        });
        (checks, identical, once)
    }
}
