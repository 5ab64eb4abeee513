//! Experiments: a configuration goes in, a result record comes out, on any
//! runtime. Every record carries its configuration, seed and git commit
//! (`results.rs`), so any point of any plot can be reproduced.

pub mod chain_bench;
pub mod chain_etcd;
pub mod chain_load;
pub mod chain_sim;
pub mod commands;
pub mod faults;
pub mod parse;
pub mod paxos;
pub mod paxos_bench;
pub mod paxos_live;
pub mod paxos_sim;
pub mod plot;
pub mod progress;
pub mod results;
pub mod tpcc_bench;
pub mod tpcc_live;
pub mod tpcc_sim;
pub mod txn;
pub mod txn_bench;
pub mod txn_client;
pub mod txn_live;
pub mod txn_sim;

/// Where an experiment runs: one enum for every command (`--runtime`), the
/// reproduction (`innet reproduce`, `--live`, `--xdp`) and every record's
/// `runtime` field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Runtime {
    /// The deterministic simulator.
    Sim,
    /// Live over UDP on loopback.
    Live,
    /// The XDP namespace testbed (root): `innet reproduce --xdp` and the
    /// `innet bench xdp-*` commands; no `--runtime` flag offers it.
    #[value(skip)]
    Xdp,
}

impl Runtime {
    pub const ALL: [Runtime; 3] = [Runtime::Sim, Runtime::Live, Runtime::Xdp];

    /// The command-line and folder name (`results/txn-sim`).
    pub fn name(self) -> &'static str {
        match self {
            Runtime::Sim => "sim",
            Runtime::Live => "live",
            Runtime::Xdp => "xdp",
        }
    }

    /// The name result records carry in `runtime` (the testbed's is
    /// `xdp-testbed`).
    pub fn record_name(self) -> &'static str {
        match self {
            Runtime::Xdp => "xdp-testbed",
            other => other.name(),
        }
    }

    /// The error of an experiment that runs in the simulator or live only
    /// when asked for the testbed, naming what measures it there.
    pub fn no_xdp(there: &str) -> anyhow::Error {
        anyhow::anyhow!(
            "this experiment runs in the simulator or live (--runtime sim|live); on the XDP testbed: {there}"
        )
    }
}

impl serde::Serialize for Runtime {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.record_name())
    }
}

impl<'de> serde::Deserialize<'de> for Runtime {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Runtime, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Runtime::ALL.into_iter().find(|r| r.record_name() == s).ok_or_else(|| {
            serde::de::Error::custom(format!("unknown runtime '{s}': expected sim, live or xdp-testbed"))
        })
    }
}

/// A determinism check (madsim's `check_determinism`): `None` when two runs
/// of one seed gave the same trace hash; otherwise the run goes twice more
/// with every delivery recorded (`traced`) and the answer names the first
/// delivery where they part ([`innet_sim::first_difference`]), not only the
/// two hashes.
pub fn nondeterminism(
    first: u64,
    again: u64,
    traced: impl Fn() -> Result<Vec<innet_sim::TraceEvent>, String>,
) -> Result<Option<String>, String> {
    if first == again {
        return Ok(None);
    }
    let (a, b) = (traced()?, traced()?);
    let hashes = format!("nondeterminism: trace hashes {first:016x} and {again:016x} differ");
    Ok(Some(match innet_sim::first_difference(&a, &b) {
        Some(difference) => format!("{hashes}; {difference}"),
        None => format!("{hashes}; two recorded reruns agreed over {} deliveries", a.len()),
    }))
}

/// Runs `jobs` on every core (`run` must be thread-safe), returning the
/// results in job order: seeds of a randomized check are independent runs.
pub fn run_parallel<J: Sync, R: Send>(jobs: &[J], run: impl Fn(&J) -> R + Sync) -> Vec<R> {
    run_parallel_shown(jobs, &progress::Progress::hidden(), |_| String::new(), run)
}

/// Jobs of a randomized check run at once: their results are held until
/// reported, so memory stays bounded however many seeds a check takes.
pub const CHECK_CHUNK_JOBS: usize = 1_024;

/// Runs `jobs` on every core, [`CHECK_CHUNK_JOBS`] at a time, and hands
/// each job and its result to `each` in job order (a step of `progress`
/// per finished job); stops at `each`'s first error.
pub fn run_parallel_each<J: Sync, R: Send, E>(
    jobs: impl Iterator<Item = J>,
    progress: &progress::Progress,
    name: impl Fn(&J) -> String + Sync,
    run: impl Fn(&J) -> R + Sync,
    mut each: impl FnMut(&J, R) -> Result<(), E>,
) -> Result<(), E> {
    let mut jobs = jobs;
    loop {
        let chunk: Vec<J> = jobs.by_ref().take(CHECK_CHUNK_JOBS).collect();
        if chunk.is_empty() {
            return Ok(());
        }
        for (job, result) in chunk.iter().zip(run_parallel_shown(&chunk, progress, &name, &run)) {
            each(job, result)?;
        }
    }
}

/// [`run_parallel`], a step of `progress` per finished job (`name` says
/// which).
pub fn run_parallel_shown<J: Sync, R: Send>(
    jobs: &[J],
    progress: &progress::Progress,
    name: impl Fn(&J) -> String + Sync,
    run: impl Fn(&J) -> R + Sync,
) -> Vec<R> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(jobs.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let out: std::sync::Mutex<Vec<Option<R>>> = std::sync::Mutex::new((0..jobs.len()).map(|_| None).collect());
    std::thread::scope(|sc| {
        for _ in 0..threads {
            sc.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                let r = run(job);
                progress.step(name(job));
                out.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    out.into_inner().unwrap_or_else(|e| e.into_inner()).into_iter().map(|r| r.expect("every job ran")).collect()
}

#[cfg(test)]
mod tests {
    use innet_core::Time;
    use innet_sim::TraceEvent;

    /// A nondeterminism names the delivery where the recorded reruns part,
    /// not only the two hashes.
    #[test]
    fn a_nondeterminism_names_the_first_differing_delivery() {
        let event = |to, len| TraceEvent { at: Time::from_secs_f64(5e-6), to, from: 0, len, bytes_hash: 1, trace: 2 };
        assert_eq!(crate::nondeterminism(7, 7, || unreachable!("equal hashes need no rerun")), Ok(None));
        let runs = std::cell::Cell::new(0);
        let traced = || {
            runs.set(runs.get() + 1);
            Ok(vec![event(1, 10), event(2, 10 + runs.get())])
        };
        let d = crate::nondeterminism(7, 8, traced).unwrap().expect("the hashes differ");
        assert!(d.contains("0000000000000007 and 0000000000000008"), "{d}");
        assert!(d.contains("delivery #1 differs"), "the second delivery is the first to differ: {d}");
        assert!(d.contains("got 11 bytes") && d.contains("got 12 bytes"), "both runs' deliveries shown: {d}");
    }
}
