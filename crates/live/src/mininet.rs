//! `innet mininet --topology FILE`: a topology file as a Mininet network,
//! one Mininet host per innet machine, a workload, a report, and nothing
//! left behind.
//!
//! Mininet is Python, so the network is built by `tools/mininet/innet_mininet.py`
//! (compiled into this crate and written to a temporary directory of this
//! run's own), run with Debian's `/usr/bin/python3`, for which the `mininet`
//! package installs. It builds the hosts and Linux bridges, starts `innet up
//! SERVICE --topology FILE --only MACHINE --place ...` in every host (the
//! file as written; `--place` gives each machine its host's address), runs
//! the load nodes for the load time, stops every process it started, calls
//! `net.stop()` and reports JSON, which [`run`] reads. It never runs
//! Mininet's global cleanup (`mn -c`), which kills processes by name on the
//! whole machine. Link delays are innet's own user-space ones (Mininet's
//! TCLink delays need netem, which these machines lack).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::Stop;
use anyhow::{bail, Context};
use innet_topology::{Service, Topology};
use serde::{Deserialize, Serialize};

/// The Python side (the `Topo` subclass and the runner), as in the checkout.
pub const SCRIPT: &str = include_str!("../../../tools/mininet/innet_mininet.py");

/// The interpreter Debian's `mininet` package installs for.
pub const PYTHON: &str = "/usr/bin/python3";

const INSTALL: &str = "apt install mininet bridge-utils (or bash scripts/setup.sh)";

/// What to run.
#[derive(Clone, Debug)]
pub struct MininetRun {
    pub topology: PathBuf,
    /// The innet binary every host runs.
    pub innet: PathBuf,
    /// How long the load nodes run.
    pub duration: Duration,
    /// Transactions and chain: share of writes; keys (default: `innet up`'s).
    pub write_ratio: Option<f64>,
    pub keys: Option<u32>,
    /// Paxos: requests each proposer keeps in flight.
    pub outstanding: Option<usize>,
    pub seed: u64,
    /// Mininet's own progress on stderr.
    pub verbose: bool,
}

/// One Mininet host: an innet machine.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct MininetHost {
    pub machine: String,
    /// Its Mininet name (the machine's, or hK when that is no valid interface prefix).
    pub host: String,
    pub ip: String,
    pub nodes: Vec<String>,
    /// Nodes on other machines this machine's nodes send their requests to.
    #[serde(default)]
    pub upstream: Vec<String>,
    /// It runs load nodes.
    pub load: bool,
}

/// A Mininet run's report.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct MininetReport {
    pub service: String,
    pub hosts: Vec<MininetHost>,
    pub bridges: Vec<String>,
    pub links: Vec<(String, String)>,
    /// Every server node's counters, as it printed them on the way out.
    pub counters: BTreeMap<String, BTreeMap<String, u64>>,
    pub loads: Vec<crate::up::LoadReport>,
    /// Seconds to build and start the network, of load, and of the whole run.
    #[serde(default)]
    pub started_s: f64,
    #[serde(default)]
    pub load_s: f64,
    pub wall_s: f64,
    /// Processes of this run still running, and its bridges and links still
    /// present, after the teardown (empty when it cleaned up).
    pub left_running: Vec<String>,
    pub left_links: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Aborts one switch counted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SwitchAborts {
    pub switch: String,
    /// Optimistic aborts (Gotthard section 3.3): a compare refuted by a
    /// write the switch saw pass and the store has not confirmed yet.
    pub optimistic: u64,
    /// Aborts against values learned from the store's replies.
    pub aborted: u64,
}

impl MininetReport {
    /// The aborts each transaction switch counted, in name order.
    pub fn switch_aborts(&self) -> Vec<SwitchAborts> {
        self.counters
            .iter()
            .filter_map(|(n, c)| {
                Some(SwitchAborts {
                    switch: n.clone(),
                    optimistic: *c.get("optimistically_aborted")?,
                    aborted: c.get("aborted").copied().unwrap_or(0),
                })
            })
            .collect()
    }

    /// The Mininet host of a machine.
    pub fn host(&self, machine: &str) -> Option<&MininetHost> {
        self.hosts.iter().find(|h| h.machine == machine)
    }
}

/// Why Mininet cannot run here, if it cannot: not root, or Mininet (for
/// `/usr/bin/python3`) or the bridge tools missing.
pub fn unavailable() -> Option<String> {
    match effective_uid() {
        Some(0) => {}
        Some(uid) => return Some(format!("not root (uid {uid}): Mininet makes network namespaces and bridges")),
        None => return Some("cannot read the effective user id from /proc/self/status".into()),
    }
    if !Path::new(PYTHON).exists() {
        return Some(format!("{PYTHON} not found: {INSTALL}"));
    }
    let import = Command::new(PYTHON).args(["-c", "import mininet.net"]).output();
    if !import.is_ok_and(|o| o.status.success()) {
        return Some(format!("Mininet is not installed for {PYTHON}: {INSTALL}"));
    }
    for tool in ["brctl", "mnexec"] {
        if Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().map_or(true, |o| !o.status.success())
        {
            return Some(format!("{tool} not found: {INSTALL}"));
        }
    }
    None
}

fn effective_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// The `innet up` flags of the load, for `service`; a flag the service's
/// load does not take is an error naming the ones it does.
fn up_args(cfg: &MininetRun, service: &Service) -> anyhow::Result<Vec<String>> {
    let mut v = vec![format!("--seed={}", cfg.seed)];
    let name = service.name();
    let takes = match service {
        Service::Txn(_) | Service::Chain(_) => "--write-ratio and --keys",
        Service::Paxos(_) => "--outstanding",
    };
    let refuse = |flag: &str| anyhow::anyhow!("{flag} does not apply to a {name} topology; its load takes {takes}");
    let paxos = matches!(service, Service::Paxos(_));
    if let Some(r) = cfg.write_ratio {
        if paxos {
            return Err(refuse("--write-ratio"));
        }
        anyhow::ensure!((0.0..=1.0).contains(&r), "--write-ratio {r} must be in 0..=1");
        v.push(format!("--write-ratio={r}"));
    }
    if let Some(k) = cfg.keys {
        if paxos {
            return Err(refuse("--keys"));
        }
        anyhow::ensure!(k >= 1, "--keys must be at least 1");
        v.push(format!("--keys={k}"));
    }
    if let Some(o) = cfg.outstanding {
        if !paxos {
            return Err(refuse("--outstanding"));
        }
        anyhow::ensure!(o >= 1, "--outstanding must be at least 1");
        v.push(format!("--outstanding={o}"));
    }
    Ok(v)
}

/// A directory of this run's own, removed on drop.
struct OwnDir(PathBuf);

impl OwnDir {
    fn new() -> anyhow::Result<OwnDir> {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let p = std::env::temp_dir().join(format!("innet-mininet-{}-{nanos}", std::process::id()));
        std::fs::create_dir(&p).with_context(|| format!("creating {}", p.display()))?;
        Ok(OwnDir(p))
    }
}

impl Drop for OwnDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Lines of the runner's stderr kept for an error message.
const STDERR_TAIL_LINES: usize = 20;

/// Passes `child`'s stderr on, in a thread, keeping its last
/// [`STDERR_TAIL_LINES`] lines for an error message.
fn pass_stderr_on(child: &mut std::process::Child) -> (std::thread::JoinHandle<()>, Arc<Mutex<Vec<String>>>) {
    let tail: Arc<Mutex<Vec<String>>> = Arc::default();
    let reader = {
        let (err, tail) = (child.stderr.take().expect("piped"), tail.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let _ = writeln!(std::io::stderr(), "{line}");
                let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
                t.push(line);
                let excess = t.len().saturating_sub(STDERR_TAIL_LINES);
                t.drain(..excess);
            }
        })
    };
    (reader, tail)
}

/// Waits for `child` to exit, sending it SIGTERM once when `stop` is set
/// (the runner stops its processes and the network on SIGTERM).
fn wait_passing_stop_on(child: &mut std::process::Child, stop: &Stop) -> std::io::Result<std::process::ExitStatus> {
    let mut forwarded = false;
    loop {
        if let Some(s) = child.try_wait()? {
            return Ok(s);
        }
        if stop.is_stopped() && !forwarded {
            let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
            forwarded = true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Builds the Mininet network of `cfg.topology`, runs its nodes and the
/// load, tears it down and reports (see the module doc). `stop` (Ctrl-C)
/// ends the run early; the teardown still runs.
pub fn run(cfg: &MininetRun, stop: &Stop) -> anyhow::Result<MininetReport> {
    let topo = Topology::load(&cfg.topology)?;
    let args = up_args(cfg, &topo.service)?;
    anyhow::ensure!(cfg.duration > Duration::ZERO, "the load time must be above 0 s");
    if let Some(why) = unavailable() {
        bail!("cannot run Mininet: {why}");
    }
    anyhow::ensure!(cfg.innet.exists(), "no innet binary at {}", cfg.innet.display());
    let dir = OwnDir::new()?;
    let script = dir.0.join("innet_mininet.py");
    std::fs::write(&script, SCRIPT)?;
    let result = dir.0.join("result.json");
    let topology = std::fs::canonicalize(&cfg.topology)?;
    let mut cmd = Command::new(PYTHON);
    cmd.arg(&script)
        .arg("run")
        .arg(&topology)
        .arg("--innet")
        .arg(&cfg.innet)
        .arg(format!("--duration-s={}", cfg.duration.as_secs_f64()))
        .arg("--result")
        .arg(&result)
        .args(args.iter().map(|a| format!("--up-arg={a}")))
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped());
    if cfg.verbose {
        cmd.arg("--verbose");
    }
    let mut child = cmd.spawn().with_context(|| format!("starting {PYTHON}"))?;
    let (reader, tail) = pass_stderr_on(&mut child);
    let status = wait_passing_stop_on(&mut child, stop)?;
    let _ = reader.join();
    let tail = tail.lock().unwrap_or_else(|e| e.into_inner()).join("\n");
    let text = match std::fs::read_to_string(&result) {
        Ok(t) => t,
        Err(_) => bail!("the Mininet runner ({}) exited with {status} without a report:\n{tail}", script.display()),
    };
    let report: MininetReport = serde_json::from_str(&text).context("reading the Mininet runner's report")?;
    let mut left = vec![];
    if !report.left_running.is_empty() {
        left.push(format!("innet up still running on {}", report.left_running.join(", ")));
    }
    if !report.left_links.is_empty() {
        left.push(format!("links and bridges still present: {}", report.left_links.join(", ")));
    }
    if let Some(e) = &report.error {
        bail!("the Mininet run failed: {e}{}", left.iter().map(|l| format!("\n{l}")).collect::<String>());
    }
    anyhow::ensure!(left.is_empty(), "the Mininet run left things behind: {}", left.join("; "));
    Ok(report)
}
