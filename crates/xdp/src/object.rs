//! A loaded BPF object, independent of the program: what every data-plane
//! role shares (the transaction switch, the Paxos roles, the chain nodes).
//!
//! * [`BpfObject::load`]: open an object compiled by `build.rs`, resize maps
//!   before load (table capacities are a load-time choice), load it;
//! * [`BpfObject::test_run`]: one packet through a program with
//!   `BPF_PROG_TEST_RUN`, for differential tests;
//! * [`attach_fd_in`] / [`detach_any`]: XDP attach (driver or generic
//!   mode) and detach by netlink, from whichever network namespace the
//!   calling thread is in;
//! * pinning of maps and programs, and reading maps by index.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::path::Path;

use anyhow::{anyhow, bail, ensure, Context, Result};
use libbpf_rs::{MapCore, MapFlags, Object, ObjectBuilder, Xdp, XdpFlags};

/// XDP action codes (`enum xdp_action`).
pub const XDP_ABORTED: u32 = 0;
pub const XDP_DROP: u32 = 1;
pub const XDP_PASS: u32 = 2;
pub const XDP_TX: u32 = 3;
pub const XDP_REDIRECT: u32 = 4;

pub struct BpfObject {
    obj: Object,
}

impl BpfObject {
    /// Loads the object in `bytes` after setting `max_entries` of the named
    /// maps.
    pub fn load(bytes: &[u8], max_entries: &[(&str, u32)]) -> Result<BpfObject> {
        BpfObject::load_reusing(bytes, max_entries, None)
    }

    /// [`BpfObject::load`], except that each map named in `names` takes
    /// the map pinned at `dir/<name>` (the kernel object itself, with its
    /// contents) instead of a new one: the programs of this load see the
    /// state an earlier load of the same object left there. Every named
    /// pin must exist. libbpf adopts the pinned map's definition (its
    /// `max_entries` too): a caller that needs a size checks the pin.
    pub fn load_reusing(
        bytes: &[u8],
        max_entries: &[(&str, u32)],
        pinned: Option<(&Path, &[&str])>,
    ) -> Result<BpfObject> {
        let mut open = ObjectBuilder::default().open_memory(bytes).context("open BPF object")?;
        let mut reused = 0;
        for mut m in open.maps_mut() {
            let name = m.name().to_string_lossy().to_string();
            if let Some((_, n)) = max_entries.iter().find(|(k, _)| *k == name) {
                m.set_max_entries(*n).with_context(|| format!("resize {name}"))?;
            }
            if let Some((dir, _)) = pinned.filter(|(_, names)| names.contains(&name.as_str())) {
                let path = dir.join(&name);
                m.reuse_pinned_map(&path).with_context(|| {
                    format!("reuse the map pinned at {} (a different program or ring size?)", path.display())
                })?;
                reused += 1;
            }
        }
        if let Some((dir, names)) = pinned {
            ensure!(
                reused == names.len(),
                "{} of the {} maps to reuse from {} are in the object",
                reused,
                names.len(),
                dir.display()
            );
        }
        let obj = open.load().context("load BPF object (needs root or CAP_BPF + CAP_NET_ADMIN)")?;
        Ok(BpfObject { obj })
    }

    pub fn map(&self, name: &str) -> Result<libbpf_rs::Map<'_>> {
        self.obj.maps().find(|m| m.name() == name).ok_or_else(|| anyhow!("no map {name} in the object"))
    }

    fn program(&self, name: &str) -> Result<libbpf_rs::ProgramMut<'_>> {
        self.obj.progs_mut().find(|q| q.name() == name).ok_or_else(|| anyhow!("no program {name} in the object"))
    }

    /// Writes `value` at `index` of an array map.
    pub fn write(&self, map: &str, index: u32, value: &[u8]) -> Result<()> {
        self.map(map)?
            .update(&index.to_ne_bytes(), value, MapFlags::ANY)
            .with_context(|| format!("write {map}[{index}]"))
    }

    /// Runs `frame` through program `name` once with `BPF_PROG_TEST_RUN`:
    /// the action and the frame as the program left it.
    pub fn test_run(&self, name: &str, frame: &[u8]) -> Result<(u32, Vec<u8>)> {
        self.test_run_on(name, frame, None)
    }

    /// [`BpfObject::test_run`] with the frame received on interface
    /// `ingress_ifindex` (receive queue 0) of the calling thread's network
    /// namespace instead of the loopback device.
    pub fn test_run_on(&self, name: &str, frame: &[u8], ingress_ifindex: Option<u32>) -> Result<(u32, Vec<u8>)> {
        // struct xdp_md: data, data_end, data_meta, ingress_ifindex, rx_queue_index, egress_ifindex.
        let mut ctx = [0u8; 24];
        if let Some(ifindex) = ingress_ifindex {
            ctx[4..8].copy_from_slice(&(frame.len() as u32).to_ne_bytes());
            ctx[12..16].copy_from_slice(&ifindex.to_ne_bytes());
        }
        self.run_once(name, frame, ingress_ifindex.map(|_| &mut ctx[..]))
    }

    /// Runs `frame` through the tc program `name` once with
    /// `BPF_PROG_TEST_RUN`, received on interface `ifindex` of the calling
    /// thread's network namespace: the action and the frame it left.
    pub fn test_run_skb_on(&self, name: &str, frame: &[u8], ifindex: u32) -> Result<(u32, Vec<u8>)> {
        // struct __sk_buff up to ifindex: ingress_ifindex at 36, ifindex at
        // 40 (the kernel takes a prefix; the rest reads as zero).
        let mut ctx = [0u8; 44];
        ctx[36..40].copy_from_slice(&ifindex.to_ne_bytes());
        ctx[40..44].copy_from_slice(&ifindex.to_ne_bytes());
        self.run_once(name, frame, Some(&mut ctx[..]))
    }

    fn run_once(&self, name: &str, frame: &[u8], context_in: Option<&mut [u8]>) -> Result<(u32, Vec<u8>)> {
        let prog = self.program(name)?;
        let mut out = vec![0u8; frame.len() + 256];
        let input = libbpf_rs::ProgramInput {
            data_in: Some(frame),
            data_out: Some(&mut out),
            context_in,
            ..Default::default()
        };
        let o = prog.test_run(input).context("BPF_PROG_TEST_RUN")?;
        let (action, n) = (o.return_value, o.data.map_or(0, |d| d.len()));
        out.truncate(n);
        Ok((action, out))
    }

    /// Runs program `name` on `repeat` copies of `frame` received on
    /// `ingress_ifindex` (queue 0) of the calling thread's network
    /// namespace, in live frame mode (`BPF_F_TEST_XDP_LIVE_FRAMES`): the
    /// program's actions take effect (`XDP_TX` and `XDP_REDIRECT` send the
    /// frames, `XDP_PASS` hands them to the stack). The kernel copies
    /// `frame` into a page once and recycles the page without copying it
    /// again, so a program that must see fresh contents writes them itself.
    /// Returns the kernel's time per frame (the program, and whatever its
    /// actions set off in this CPU's softirq, e.g. the receiving end of a
    /// veth; time given to other tasks at a reschedule not included).
    ///
    /// Each run with `repeat > 1` adds the program to the XDP dispatcher
    /// and removes it after, two image updates that each wait for an RCU
    /// grace period (~24 ms per run measured here) unless the program is
    /// in the dispatcher already, i.e. attached somewhere in driver mode.
    pub fn test_run_live(
        &self,
        name: &str,
        frame: &[u8],
        ingress_ifindex: u32,
        repeat: u32,
    ) -> Result<std::time::Duration> {
        let prog = self.program(name)?;
        // struct xdp_md: data, data_end, data_meta, ingress_ifindex, rx_queue_index, egress_ifindex.
        let mut ctx = [0u8; 24];
        ctx[4..8].copy_from_slice(&(frame.len() as u32).to_ne_bytes());
        ctx[12..16].copy_from_slice(&ingress_ifindex.to_ne_bytes());
        let input = libbpf_rs::ProgramInput {
            data_in: Some(frame),
            context_in: Some(&mut ctx[..]),
            flags: test_run_flags::TEST_XDP_LIVE_FRAMES,
            repeat,
            ..Default::default()
        };
        Ok(prog.test_run(input).context("BPF_PROG_TEST_RUN in live frame mode")?.duration)
    }

    /// Runs `frame` through program `name` `repeat` times in the kernel
    /// (`BPF_PROG_TEST_RUN`): the mean time of one run.
    pub fn test_run_repeat(&self, name: &str, frame: &[u8], repeat: u32) -> Result<std::time::Duration> {
        let prog = self.program(name)?;
        let input = libbpf_rs::ProgramInput { data_in: Some(frame), repeat, ..Default::default() };
        Ok(prog.test_run(input).context("BPF_PROG_TEST_RUN")?.duration)
    }

    /// Runs `frame` through program `name` once in the kernel
    /// (`BPF_PROG_TEST_RUN`): the time of that run, as the kernel measured
    /// it (one clock read included).
    pub fn test_run_once_ns(&self, name: &str, frame: &[u8]) -> Result<u64> {
        Ok(self.test_run_repeat(name, frame, 1)?.as_nanos() as u64)
    }

    /// The median of `runs` single runs of `frame` through program `name`
    /// ([`BpfObject::test_run_once_ns`]), each on a fresh copy of the
    /// frame: a program that rewrites its frame is measured on the frame
    /// it was given every time, which one run repeated in the kernel
    /// would not do.
    pub fn median_run_ns(&self, name: &str, frame: &[u8], runs: u32) -> Result<u64> {
        let mut ns: Vec<u64> = (0..runs.max(1)).map(|_| self.test_run_once_ns(name, frame)).collect::<Result<_>>()?;
        ns.sort_unstable();
        Ok(ns[ns.len() / 2])
    }

    /// Map `name`'s file descriptor (valid while `self` lives).
    pub fn map_fd(&self, name: &str) -> Result<RawFd> {
        Ok(self.map(name)?.as_fd().as_raw_fd())
    }

    /// Program `name`'s file descriptor (valid while `self` lives), for
    /// [`attach_fd`] on a thread in another network namespace.
    pub fn program_fd(&self, name: &str) -> Result<RawFd> {
        Ok(self.program(name)?.as_fd().as_raw_fd())
    }

    /// Pins the maps named in `names` under `dir` (on a bpffs).
    pub fn pin_maps(&mut self, dir: &Path, names: &[&str]) -> Result<()> {
        ensure_bpffs(dir)?;
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
        for mut m in self.obj.maps_mut() {
            let name = m.name().to_string_lossy().to_string();
            if names.contains(&name.as_str()) {
                m.pin(dir.join(&name)).with_context(|| format!("pin {name}"))?;
            }
        }
        Ok(())
    }

    /// Pins program `name` at `path` (on a bpffs).
    pub fn pin_program(&mut self, name: &str, path: &Path) -> Result<()> {
        ensure_bpffs(path)?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
        }
        self.program(name)?.pin(path).with_context(|| format!("pin {}", path.display()))
    }
}

/// Flags of `BPF_PROG_TEST_RUN` (`include/uapi/linux/bpf.h`).
mod test_run_flags {
    /// `BPF_F_TEST_XDP_LIVE_FRAMES`.
    pub const TEST_XDP_LIVE_FRAMES: u32 = 1 << 1;
}

/// Where the BPF filesystem is conventionally mounted.
pub const BPFFS: &str = "/sys/fs/bpf";

/// Mounts the BPF filesystem at [`BPFFS`] if `path` lies under it and nothing
/// is mounted there, as bpftool does: a fresh VM often boots without it, and
/// pinning then fails with "No such file or directory".
fn ensure_bpffs(path: &Path) -> Result<()> {
    if !path.starts_with(BPFFS) || is_bpffs(Path::new(BPFFS)) {
        return Ok(());
    }
    // The mount point may be missing too (/sys/fs on a tmpfs, a container).
    std::fs::create_dir_all(BPFFS).with_context(|| format!("create the mount point {BPFFS}"))?;
    let target = std::ffi::CString::new(BPFFS).expect("no NUL");
    let kind = std::ffi::CString::new("bpf").expect("no NUL");
    // SAFETY: every pointer is a valid NUL-terminated string that outlives
    // the call; the data argument may be null.
    let rc = unsafe { libc::mount(kind.as_ptr(), target.as_ptr(), kind.as_ptr(), 0, std::ptr::null()) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        bail!("the BPF filesystem is not mounted at {BPFFS} and mounting it failed ({e}); run `mount -t bpf bpf {BPFFS}` as root");
    }
    Ok(())
}

/// Whether `dir` is the root of a mounted BPF filesystem.
fn is_bpffs(dir: &Path) -> bool {
    const BPF_FS_MAGIC: i64 = 0xcafe_4a11;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else { return false };
    // SAFETY: `c` is a valid NUL-terminated path and `st` a writable statfs.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statfs(c.as_ptr(), &mut st) };
    rc == 0 && st.f_type as i64 == BPF_FS_MAGIC
}

/// Attaches the XDP program `fd` in generic (skb) mode to `ifindex` of the
/// calling thread's network namespace, replacing what is there. The
/// attachment (netlink, not a bpf_link) outlives this process.
pub fn attach_fd(fd: RawFd, ifindex: u32) -> Result<()> {
    attach_fd_in(fd, ifindex, XdpMode::Generic)
}

/// Where an XDP program runs on a device: in the driver (`native`: on a
/// veth, frames pass between devices as `xdp_frame`s, a devmap broadcast
/// copies without skbs, and the receiving veth's NAPI, threaded if asked,
/// can run on another CPU; the peer of a veth needs an XDP program for
/// frames to reach it) or after the kernel built an skb (`generic`: works
/// on any device and needs nothing on the peer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum XdpMode {
    #[default]
    Native,
    Generic,
}

impl XdpMode {
    fn flags(self) -> XdpFlags {
        match self {
            XdpMode::Native => XdpFlags::DRV_MODE,
            XdpMode::Generic => XdpFlags::SKB_MODE,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            XdpMode::Native => "native",
            XdpMode::Generic => "generic",
        }
    }
}

impl std::fmt::Display for XdpMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Attaches the XDP program `fd` in `mode` to `ifindex` of the calling
/// thread's network namespace, replacing what is there (in either mode).
/// The attachment (netlink, not a bpf_link) outlives this process.
pub fn attach_fd_in(fd: RawFd, ifindex: u32, mode: XdpMode) -> Result<()> {
    // SAFETY: the caller keeps the program open (it borrows the BpfObject
    // that returned `fd` for the duration of the call).
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    Xdp::new(fd)
        .attach(ifindex as i32, mode.flags())
        .or_else(|_| {
            // A program in the other mode (one mode at a time): off, then on.
            for m in [XdpMode::Native, XdpMode::Generic] {
                let _ = Xdp::new(fd).detach(ifindex as i32, m.flags());
            }
            Xdp::new(fd).attach(ifindex as i32, mode.flags())
        })
        .with_context(|| format!("attach XDP ({mode} mode) to ifindex {ifindex}"))
}

/// Detaches the XDP program of `ifindex` (calling thread's namespace) in
/// whichever mode it runs; `fd` is any open program (netlink needs one to
/// build the request). Nothing attached is no error.
pub fn detach_any(fd: RawFd, ifindex: u32) -> Result<()> {
    // SAFETY: as in attach_fd.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    let mut last = None;
    for m in [XdpMode::Native, XdpMode::Generic] {
        // Only the mode a program runs in (a detach in the other mode is
        // refused, and libbpf logs the kernel's refusal).
        if Xdp::new(fd).query_id(ifindex as i32, m.flags()).unwrap_or(1) == 0 {
            continue;
        }
        if let Err(e) = Xdp::new(fd).detach(ifindex as i32, m.flags()) {
            last = Some(e);
        }
    }
    let attached = Xdp::new(fd).query_id(ifindex as i32, XdpFlags::NONE).unwrap_or(0);
    match (attached, last) {
        (0, _) => Ok(()),
        (_, Some(e)) => Err(e).with_context(|| format!("detach XDP from ifindex {ifindex}")),
        (id, None) => bail!("XDP program {id} still attached to ifindex {ifindex}"),
    }
}

/// Writes `key` -> `value` into the map `fd` from the calling thread: for
/// maps whose values name devices (a devmap entry's ifindex is looked up in
/// the writer's network namespace), written from a thread in the
/// devices' namespace ([`crate::testbed::in_netns`]).
pub fn update_raw(fd: RawFd, key: &[u8], value: &[u8]) -> Result<()> {
    // SAFETY: the caller keeps the map open; key and value are valid for
    // the map's key and value sizes, which the kernel checks.
    let rc = unsafe { libbpf_rs::libbpf_sys::bpf_map_update_elem(fd, key.as_ptr().cast(), value.as_ptr().cast(), 0) };
    if rc != 0 {
        bail!("bpf_map_update_elem: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

/// Removes `key` from the map `fd` (any thread; see [`update_raw`]).
pub fn delete_raw(fd: RawFd, key: &[u8]) -> Result<()> {
    // SAFETY: the caller keeps the map open; the key is valid for its size.
    let rc = unsafe { libbpf_rs::libbpf_sys::bpf_map_delete_elem(fd, key.as_ptr().cast()) };
    if rc != 0 {
        bail!("bpf_map_delete_elem: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

/// Every key of the map `fd`, whose keys are u32s (a hash or devmap hash).
pub fn u32_keys(fd: RawFd) -> Result<Vec<u32>> {
    let mut keys = vec![];
    let mut key = 0u32;
    let mut first = true;
    loop {
        let mut next = 0u32;
        let prev: *const u32 = if first { std::ptr::null() } else { &key };
        // SAFETY: the caller keeps the map open; both keys are u32s, the
        // map's key size.
        let rc =
            unsafe { libbpf_rs::libbpf_sys::bpf_map_get_next_key(fd, prev.cast(), (&mut next as *mut u32).cast()) };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::ENOENT) {
                return Ok(keys);
            }
            bail!("bpf_map_get_next_key: {e}");
        }
        keys.push(next);
        key = next;
        first = false;
    }
}

/// Element `index` of an array map.
pub fn lookup(m: &impl MapCore, index: u32) -> Result<Vec<u8>> {
    m.lookup(&index.to_ne_bytes(), MapFlags::ANY)?.ok_or_else(|| anyhow!("{:?}[{index}] missing", m.name()))
}

/// Whether this process runs as root (BPF and namespaces need it).
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Attaches the tc program `fd` to the clsact ingress hook of `ifindex`
/// (calling thread's namespace), creating the clsact qdisc. Like the XDP
/// attachment it outlives this process; deleting the link removes it.
pub fn attach_tc_ingress(fd: RawFd, ifindex: u32) -> Result<()> {
    // SAFETY: as in attach_fd.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    let mut hook = libbpf_rs::TcHookBuilder::new(fd)
        .ifindex(ifindex as i32)
        .replace(true)
        .handle(1)
        .priority(1)
        .hook(libbpf_rs::TC_INGRESS);
    hook.create().with_context(|| format!("clsact qdisc on ifindex {ifindex}"))?;
    hook.attach().with_context(|| format!("attach tc ingress to ifindex {ifindex}"))?;
    Ok(())
}

/// One map of an object as compiled: its name, `max_entries` and value size
/// in bytes, or `None` where a check does not care.
#[cfg(test)]
pub(crate) type MapSpec<'a> = (&'a str, Option<u32>, Option<u32>);

/// Asserts that the object in `bytes` holds exactly the maps of `expected`,
/// with their sizes. Opens the object without loading it: no privileges.
#[cfg(test)]
pub(crate) fn assert_maps(bytes: &[u8], expected: &[MapSpec]) {
    let open = ObjectBuilder::default().open_memory(bytes).expect("open BPF object");
    let mut found: Vec<(String, u32, u32)> = open
        .maps()
        .map(|m| (m.name().to_string_lossy().to_string(), m.max_entries(), m.value_size()))
        .filter(|(name, _, _)| !name.contains('.')) // libbpf's own: .rodata, .bss
        .collect();
    found.sort();
    let mut names: Vec<&str> = expected.iter().map(|e| e.0).collect();
    names.sort();
    assert_eq!(found.iter().map(|f| f.0.as_str()).collect::<Vec<_>>(), names, "map names");
    for (name, entries, value_size) in expected {
        let (_, e, v) = found.iter().find(|f| f.0 == *name).expect("found above");
        assert!(entries.is_none_or(|x| x == *e), "{name}: max_entries {e}, header says {entries:?}");
        assert!(value_size.is_none_or(|x| x == *v), "{name}: value size {v}, header says {value_size:?}");
    }
}
