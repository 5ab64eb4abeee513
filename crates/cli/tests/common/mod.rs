//! What the testbed tests share: running commands, the root check, and
//! looking for anything a testbed left behind.
#![allow(dead_code)] // each test binary uses its own subset

use std::process::Command;
use std::time::{Duration, Instant};

/// BPF programs a testbed attaches (`bpftool prog show` names: at most 15 characters).
const PROGRAMS: [&str; 5] = ["xdp_txn_switch", "xdp_bounce", "xdp_netcraq", "xdp_netchain", "tc_chain_multic"];

pub const INNET: &str = env!("CARGO_BIN_EXE_innet");

pub fn run(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd).args(args).output().unwrap_or_else(|e| panic!("run {cmd}: {e}"));
    assert!(out.status.success(), "{cmd} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn skip_reason() -> Option<String> {
    let uid = run("id", &["-u"]);
    if uid.trim() != "0" {
        return Some(format!("not root (uid {}): network namespaces and XDP need root", uid.trim()));
    }
    for tool in ["ip", "bpftool"] {
        if Command::new(tool).arg("-V").output().is_err() {
            return Some(format!("{tool} not installed (scripts/setup.sh installs it)"));
        }
    }
    None
}

pub fn leftovers() -> Vec<String> {
    let mut v: Vec<String> = run("ip", &["netns", "list"])
        .lines()
        .filter(|l| l.starts_with("innet-"))
        .map(|l| format!("netns {l}"))
        .collect();
    v.extend(run("ip", &["-o", "link", "show"]).lines().filter(|l| l.contains(" innet-")).map(|l| format!("link {l}")));
    v.extend(
        run("bpftool", &["prog", "show"])
            .lines()
            .filter(|l| PROGRAMS.iter().any(|p| l.contains(&format!("name {p} "))))
            .map(|l| format!("prog {l}")),
    );
    if std::path::Path::new("/sys/fs/bpf/innet").exists() {
        v.push("pins /sys/fs/bpf/innet".into());
    }
    if std::path::Path::new("/run/innet/testbed.json").exists() {
        v.push("state /run/innet/testbed.json".into());
    }
    v
}

/// Namespace teardown and program release are asynchronous in the kernel.
pub fn wait_clean() -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = leftovers();
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A running `innet` process, killed when dropped (also when an assertion
/// fails), and the address its first line of output named.
pub struct Innet {
    child: std::process::Child,
    pub addr: std::net::SocketAddr,
}

impl Drop for Innet {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `innet ARGS` whose first line of output is `ROLE HOST:PORT`
/// (`innet store`, `innet switch ...`).
pub fn spawn_innet(role: &str, args: &[&str]) -> Innet {
    use std::io::BufRead;
    let mut child = Command::new(INNET)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("innet runs");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix(&format!("{role} "))
        .unwrap_or_else(|| panic!("expected '{role} ADDR' first, got {line:?}"))
        .parse()
        .unwrap();
    Innet { child, addr }
}

/// A running `innet` process whose stdout lines arrive on `lines` (read
/// by a thread of their own), killed when dropped (also when an assertion
/// fails); `child` is there to kill it on purpose (SIGKILL).
pub struct Proc {
    pub child: std::process::Child,
    pub lines: std::sync::mpsc::Receiver<String>,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `innet ARGS` with its stdout lines on [`Proc::lines`] (stderr dropped).
pub fn spawn(args: &[&str]) -> Proc {
    use std::io::BufRead;
    let mut child = Command::new(INNET)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("innet runs");
    let out = std::io::BufReader::new(child.stdout.take().unwrap());
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    Proc { child, lines }
}
