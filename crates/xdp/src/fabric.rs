//! The fabric: how a testbed's veths carry its data plane, the same for
//! every service (issue 20's levers, measured in docs/xdp.md).
//!
//! * **Mode** ([`XdpMode`]): driver (`native`) or `generic` XDP on every
//!   device a program runs on. In driver mode a veth hands frames to its
//!   peer as `xdp_frame`s (no skb), a devmap broadcast copies without
//!   skbs, and the receiving device's NAPI poll runs the program, so with
//!   threaded NAPI the pipeline can run on every CPU. The peer of a veth
//!   that receives redirected or `XDP_TX` frames needs an XDP program of
//!   its own for them to arrive (machine facts): [`Fabric::attach`] puts
//!   `xdp_pass` on every device of the fabric that has no role's program.
//! * **Threaded NAPI** ([`Fabric::threaded`], [`ThreadedNapi`]): a veth's
//!   NAPI instance (which exists in driver mode) polls in a kernel thread
//!   of its own, which the scheduler places on any CPU, instead of in the
//!   softirq of whichever CPU sent the frame (for a socket sender: its
//!   own). On every device (`on`), each hop wakes a thread; on the
//!   fabric's entry device only (`entry`), the end hosts' CPU hands each
//!   batch to one thread, in whose softirq every later hop runs (a
//!   two-stage pipeline: end hosts on one CPU, the whole fabric on
//!   another, one wake-up per batch); `off`, all of it runs in the
//!   sender's own system call. Measured side by side in docs/xdp.md.
//!
//! Everything here needs root (CAP_NET_ADMIN, CAP_BPF).

use std::os::fd::RawFd;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::netns::{ifindex, in_netns};
pub use crate::object::XdpMode;
use crate::object::{attach_fd_in, BpfObject};

static PASS_OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/forward.bpf.o"));

/// Where a driver-mode fabric's NAPI polls run in kernel threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ThreadedNapi {
    /// A kernel thread per device: every hop wakes one.
    On,
    /// None: every hop runs in the softirq of the CPU that sent to it.
    Off,
    /// The fabric's entry device only (where the end hosts' requests
    /// come in): one wake-up per batch, the rest in that thread's softirq.
    Entry,
}

/// How a testbed's devices run their XDP programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fabric {
    pub mode: XdpMode,
    /// Driver mode only: which devices poll in a kernel thread.
    pub threaded: ThreadedNapi,
}

impl Default for Fabric {
    fn default() -> Self {
        Fabric { mode: XdpMode::Native, threaded: ThreadedNapi::Entry }
    }
}

impl Fabric {
    /// The fabric of earlier testbeds: generic XDP, softirq NAPI.
    pub fn generic() -> Fabric {
        Fabric { mode: XdpMode::Generic, threaded: ThreadedNapi::Off }
    }

    /// Driver mode with `threaded` NAPI.
    pub fn native(threaded: ThreadedNapi) -> Fabric {
        Fabric { mode: XdpMode::Native, threaded }
    }

    /// Attaches program `fd` to `devs` of `ns` in this fabric's mode.
    pub fn attach(&self, fd: RawFd, ns: &str, devs: &[&str]) -> Result<()> {
        let indexes: Vec<u32> = devs.iter().map(|d| ifindex(ns, d)).collect::<Result<_>>()?;
        in_netns(ns, || indexes.iter().try_for_each(|&i| attach_fd_in(fd, i, self.mode)))
    }

    /// Driver mode: `xdp_pass` on `devs` of `ns` (the devices that run no
    /// role but receive frames from one: without a program there, a
    /// redirected or `XDP_TX` frame is dropped), then threaded NAPI on
    /// `all` of `ns` (with [`ThreadedNapi::On`]) or on those of `all` that
    /// are in `entry` (with [`ThreadedNapi::Entry`]: the devices where the
    /// end hosts' traffic enters the fabric). Call after every role is
    /// attached. Generic mode: nothing.
    pub fn finish(&self, pass: &PassProgram, ns: &str, devs: &[&str], all: &[&str], entry: &[&str]) -> Result<()> {
        if self.mode != XdpMode::Native {
            return Ok(());
        }
        self.attach(pass.fd()?, ns, devs)?;
        for d in all {
            let threaded = match self.threaded {
                ThreadedNapi::On => true,
                ThreadedNapi::Off => false,
                ThreadedNapi::Entry => entry.contains(d),
            };
            // A device that is down has no NAPI instance to thread (a
            // failed chain node reloaded before its links come back).
            if threaded && is_up(ns, d)? {
                threaded_napi(ns, d)?;
            }
        }
        Ok(())
    }
}

/// `xdp_pass` (`bpf/forward.bpf.c`), loaded once for a testbed's build.
pub struct PassProgram(BpfObject);

impl PassProgram {
    pub fn load() -> Result<PassProgram> {
        Ok(PassProgram(BpfObject::load(PASS_OBJECT, &[])?))
    }
    pub fn fd(&self) -> Result<RawFd> {
        self.0.program_fd(crate::forward::PASS_PROGRAM)
    }
}

/// Turns on threaded NAPI for `dev` of `ns` (`/sys/class/net/DEV/threaded`,
/// written in the namespace's own sysfs: `ip netns exec` mounts it). The
/// device must have a NAPI instance: a veth has one with a driver-mode XDP
/// program attached.
pub fn threaded_napi(ns: &str, dev: &str) -> Result<()> {
    let out = std::process::Command::new("ip")
        .args(["netns", "exec", ns, "sh", "-c", &format!("echo 1 > /sys/class/net/{dev}/threaded")])
        .output()
        .context("run `ip netns exec` (package iproute2)")?;
    anyhow::ensure!(
        out.status.success(),
        "threaded NAPI on {dev} in {ns}: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(())
}

/// CPU seconds (user + system) the threaded-NAPI kernel threads of innet's
/// devices have used so far (`napi/innet-*` in `/proc`): where a driver-mode
/// fabric runs its XDP programs when NAPI is threaded.
pub fn napi_threads_cpu_s() -> f64 {
    let hz = {
        // SAFETY: sysconf has no preconditions.
        let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        if t > 0 {
            t as f64
        } else {
            100.0
        }
    };
    let Ok(dir) = std::fs::read_dir("/proc") else { return 0.0 };
    let mut ticks = 0u64;
    for e in dir.flatten() {
        let p = e.path();
        let comm = std::fs::read_to_string(p.join("comm")).unwrap_or_default();
        if !comm.starts_with("napi/innet-") {
            continue;
        }
        let stat = std::fs::read_to_string(p.join("stat")).unwrap_or_default();
        // Fields after the ")" of the command: state is field 3; utime 14, stime 15.
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<&str> = rest.split_whitespace().collect();
        ticks += f.get(11).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
        ticks += f.get(12).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
    }
    ticks as f64 / hz
}

/// Whether `dev` of `ns` is administratively up (`ip -j link show`'s flags).
pub fn is_up(ns: &str, dev: &str) -> Result<bool> {
    let out = crate::netns::ip(&["-j", "-n", ns, "link", "show", "dev", dev])?;
    let v: serde_json::Value = serde_json::from_str(&out).context("parse `ip -j link show`")?;
    Ok(v[0]["flags"].as_array().is_some_and(|f| f.iter().any(|x| x == "UP")))
}

/// Whether `dev` of `ns` has a driver-mode or a generic XDP program
/// attached (`ip -j -d link show`: the `xdp` object's `mode`, the
/// kernel's `XDP_ATTACHED_DRV` 1 or `XDP_ATTACHED_SKB` 2), or none.
pub fn attached_mode(ns: &str, dev: &str) -> Result<Option<XdpMode>> {
    let out = crate::netns::ip(&["-j", "-n", ns, "-d", "link", "show", "dev", dev])?;
    let v: serde_json::Value = serde_json::from_str(&out).context("parse `ip -j link show`")?;
    Ok(match v[0]["xdp"]["mode"].as_u64() {
        Some(1) => Some(XdpMode::Native),
        Some(2) => Some(XdpMode::Generic),
        _ => None,
    })
}
