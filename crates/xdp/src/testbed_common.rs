//! What every testbed shares (the `txn` and `chain` testbeds of
//! [`crate::testbed`] and [`crate::chain_testbed`], Paxos's
//! [`crate::paxos_testbed`], the topologies of [`crate::txn_topology`]):
//! the fixed names (namespaces, pin directories, state files), the state
//! file, the lock that lets one testbed up at a time, the end hosts'
//! processes and logs, and the removal of the `txn` and `chain` testbeds.
//! The testbeds import this module, never each other's, so the
//! dependencies point one way.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::chain::PORTS_MAX;
use crate::fabric::Fabric;
pub use crate::netns::PREFIX;
use crate::netns::{ip, namespaces, root_links};

/// Where `up` records what it made.
pub const STATE_FILE: &str = "/run/innet/testbed.json";

/// Where programs and maps are pinned (bpffs).
pub const PIN_DIR: &str = "/sys/fs/bpf/innet";

pub const NS_CLIENT: &str = "innet-client";

pub const NS_SWITCH: &str = "innet-switch";

pub const NS_STORE: &str = "innet-store";

/// Where `up` records what it made (its own file, so that a `txn` or chain
/// testbed can be up at the same time).
pub const PAXOS_STATE_FILE: &str = "/run/innet/testbed-paxos.json";

pub const TXN_TOPOLOGY_STATE_FILE: &str = "/run/innet/testbed-txn-topology.json";

/// Where under the testbed's pin root a run pins its switch (`testbed::down`
/// removes it).
pub const BENCH_PIN_SUBDIR: &str = "bench";

/// The namespace of the bridge an earlier layout of this topology hung
/// every host off; `testbed::down` still removes it by name.
pub const NS_FABRIC: &str = "innet-fabric";

/// Ports 3.. are the other nodes ([`node_port`]).
pub(crate) const PORT_FIRST_NODE: u16 = 3;

/// Nodes a chain can have (one port per other node).
pub const NODES_MAX: usize = PORTS_MAX - PORT_FIRST_NODE as usize + 1;

pub fn node_ns(i: usize) -> String {
    format!("innet-n{i}")
}

/// Where node i's maps are pinned.
pub fn node_pin_dir(i: usize) -> std::path::PathBuf {
    Path::new(PIN_DIR).join(format!("chain-n{i}"))
}

/// What `up` made, as recorded in [`STATE_FILE`].
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct State {
    pub topology: String,
    pub namespaces: Vec<String>,
    pub pin_dir: Option<String>,
    /// `(name, pid)` of processes started.
    pub processes: Vec<(String, u32)>,
    /// The fabric the XDP programs run on (none: no XDP data plane).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fabric: Option<Fabric>,
}

pub(crate) fn save(state: &State) -> Result<()> {
    save_to(Path::new(STATE_FILE), state)
}

/// Writes `state` to `path` (a topology's state file).
pub(crate) fn save_to(path: &Path, state: &State) -> Result<()> {
    std::fs::create_dir_all(path.parent().expect("has a parent"))?;
    std::fs::write(path, serde_json::to_vec_pretty(state)?).with_context(|| format!("write {}", path.display()))
}

pub(crate) fn load_state() -> Option<State> {
    std::fs::read(STATE_FILE).ok().and_then(|b| serde_json::from_slice(&b).ok())
}

/// The log of a process started by [`spawn_in`] under `name`.
pub fn log_path(name: &str) -> PathBuf {
    Path::new(STATE_FILE).with_file_name(format!("{name}.log"))
}

/// Waits until the log of `name` has a line starting with `prefix` (the
/// end hosts print `store ADDR` / `switch ADDR` once listening).
pub fn wait_for_log_line(name: &str, prefix: &str, timeout: Duration) -> Result<()> {
    let (path, deadline) = (log_path(name), Instant::now() + timeout);
    while Instant::now() < deadline {
        if std::fs::read_to_string(&path).is_ok_and(|s| s.lines().any(|l| l.starts_with(prefix))) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    bail!("no '{prefix}' line in {} within {timeout:?}", path.display())
}

/// Starts `exe args` inside `ns`, output to `/run/innet/<name>.log`; its pid.
pub fn spawn_in(ns: &str, exe: &Path, args: &[&str], name: &str) -> Result<u32> {
    let log_path = log_path(name);
    let log = std::fs::File::create(&log_path).with_context(|| format!("create {}", log_path.display()))?;
    let child = Command::new("ip")
        .args(["netns", "exec", ns])
        .arg(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .with_context(|| format!("start {name} in {ns}"))?;
    // `ip netns exec` execs the program: this pid is the end host itself.
    Ok(child.id())
}

/// Ends one process by pid: SIGTERM, then SIGKILL if it lingers.
pub fn end_process(pid: u32) {
    let pid = pid as libc::pid_t;
    // SAFETY: kill(2) with a pid we started (or found in our own namespace).
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline && Path::new(&format!("/proc/{pid}")).exists() {
        // Reap it if it is our child; harmless otherwise.
        // SAFETY: waitpid with WNOHANG on a specific pid.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
        std::thread::sleep(Duration::from_millis(20));
    }
    if Path::new(&format!("/proc/{pid}")).exists() {
        // SAFETY: as above.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// Every testbed's state file and the `innet testbed down --only` name that
/// removes that testbed. The `txn` and `chain` testbeds share one.
pub const STATE_FILES: [(&str, &str); 3] =
    [("txn", STATE_FILE), ("paxos", PAXOS_STATE_FILE), ("txn-topology", TXN_TOPOLOGY_STATE_FILE)];

/// Held (`flock`) while a testbed is built or removed, so that two
/// `innet testbed` commands never interleave.
pub const LOCK_FILE: &str = "/run/innet/testbed.lock";

/// The testbed lock, released when dropped (or when the process ends).
#[derive(Debug)]
pub struct Lock(#[allow(dead_code)] std::fs::File);

/// Takes the testbed lock, waiting up to 60 s for another `innet testbed`
/// command to finish.
pub fn lock() -> Result<Lock> {
    lock_at(Path::new(LOCK_FILE), "another `innet testbed` command")
}

/// Takes the `flock` on `path` (made if missing), waiting up to 60 s for
/// `holder` (named in the error) to let it go.
pub fn lock_at(path: &Path, holder: &str) -> Result<Lock> {
    use std::os::fd::AsRawFd;
    let dir = path.parent().expect("has a parent");
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .with_context(|| format!("open {}", path.display()))?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        // SAFETY: `f` is an open file for the duration of the call.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(Lock(f));
        }
        if Instant::now() > deadline {
            bail!("{holder} holds {} (for over 60 s): wait for it to finish", path.display());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One testbed at a time: refuses if a testbed other than the one recorded
/// in `mine` is up.
pub fn ensure_no_other_testbed(mine: &str) -> Result<()> {
    for (only, file) in STATE_FILES {
        if file != mine && Path::new(file).exists() {
            let what: Option<State> = std::fs::read(file).ok().and_then(|b| serde_json::from_slice(&b).ok());
            let what = what.map_or_else(|| only.to_string(), |s| s.topology);
            bail!(
                "a testbed is up already ({what}, recorded in {file}); one testbed at a time: \
                 `innet testbed down --only {only}` removes it"
            );
        }
    }
    Ok(())
}

/// Builds a testbed under the lock, refused while another testbed is up; if
/// `build` fails, `undo` removes everything it made before the error is
/// returned.
pub fn guarded<T>(state_file: &str, build: impl FnOnce() -> Result<T>, undo: fn() -> Result<Vec<String>>) -> Result<T> {
    let _lock = lock()?;
    ensure_no_other_testbed(state_file)?;
    build().inspect_err(|_| match undo() {
        Ok(removed) => eprintln!("testbed: up failed; removed what it made: {}", removed.join(", ")),
        Err(u) => eprintln!("testbed: up failed, and removing what it made failed too: {u:#}"),
    })
}

/// Removes what an earlier `txn` or `chain` testbed left (the two share a
/// state file: building one replaces the other).
pub(crate) fn remove_own_leftovers() -> Result<()> {
    let removed = down_unlocked()?;
    if !removed.is_empty() {
        eprintln!("testbed: removed leftovers of an earlier testbed: {}", removed.join(", "));
    }
    Ok(())
}

/// Namespaces the `txn` and `chain` testbeds make, by their fixed names.
fn own_namespaces() -> Vec<String> {
    let mut v: Vec<String> = [NS_CLIENT, NS_SWITCH, NS_STORE, NS_FABRIC].iter().map(|s| s.to_string()).collect();
    v.extend((0..NODES_MAX).map(node_ns));
    v
}

/// Removes the `txn` or `chain` testbed: what its state file records, and
/// what those testbeds make by their fixed names (so a lost state file
/// loses nothing), never another testbed's namespaces or pins. Returns what
/// it removed.
pub fn down() -> Result<Vec<String>> {
    let _lock = lock()?;
    down_unlocked()
}

pub(crate) fn down_unlocked() -> Result<Vec<String>> {
    let mut removed = vec![];
    let state = load_state().unwrap_or_default();
    let existing = namespaces()?;
    let mut nss: Vec<String> = own_namespaces().into_iter().filter(|n| existing.contains(n)).collect();
    for ns in &state.namespaces {
        if !nss.contains(ns) && Path::new("/run/netns").join(ns).exists() {
            nss.push(ns.clone());
        }
    }
    for (name, pid) in &state.processes {
        if Path::new(&format!("/proc/{pid}")).exists() {
            end_process(*pid);
            removed.push(format!("process {name} ({pid})"));
        }
    }
    for ns in &nss {
        let pids = ip(&["netns", "pids", ns]).unwrap_or_default();
        for pid in pids.lines().filter_map(|l| l.trim().parse::<u32>().ok()) {
            end_process(pid);
            removed.push(format!("process {pid} in {ns}"));
        }
        ip(&["netns", "del", ns])?;
        removed.push(format!("netns {ns}"));
    }
    // Links are made in the root namespace and then moved: a crash between
    // leaves them there.
    for link in root_links()? {
        ip(&["link", "del", &link])?;
        removed.push(format!("link {link}"));
    }
    // `innet bench xdp` pins its switch under "bench" on this testbed (its
    // programs too: left behind, every later testbed test saw leftovers).
    let mut pins: Vec<PathBuf> = vec![Path::new(PIN_DIR).join("txn_switch"), Path::new(PIN_DIR).join(BENCH_PIN_SUBDIR)];
    pins.extend((0..NODES_MAX).map(node_pin_dir));
    pins.extend(state.pin_dir.iter().map(PathBuf::from).filter(|p| p != Path::new(PIN_DIR)));
    for p in pins {
        if p.exists() {
            std::fs::remove_dir_all(&p).with_context(|| format!("remove {}", p.display()))?;
            removed.push(format!("pins {}", p.display()));
        }
    }
    // The pin root too, unless another testbed's pins are in it.
    let _ = std::fs::remove_dir(PIN_DIR);
    if Path::new(STATE_FILE).exists() {
        std::fs::remove_file(STATE_FILE)?;
        removed.push(format!("state {STATE_FILE}"));
    }
    let mut logs: Vec<String> = ["switch", "store", "bench-switch"].iter().map(|s| s.to_string()).collect();
    logs.extend(state.processes.iter().map(|(name, _)| name.clone()));
    for name in logs {
        let log = log_path(&name);
        if log.exists() {
            std::fs::remove_file(&log)?;
            removed.push(format!("log {}", log.display()));
        }
    }
    Ok(removed)
}
