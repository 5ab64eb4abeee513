//! A receive-only AF_XDP socket in copy mode, over libc (no libxdp here):
//! what the kernel's `Documentation/networking/af_xdp.rst` asks for and
//! nothing more.
//!
//! * UMEM: `frames` chunks of [`FRAME_LEN`] bytes of anonymous memory,
//!   registered with `XDP_UMEM_REG`.
//! * Fill ring (we produce chunk addresses the kernel may write into) and
//!   completion ring (needed by `bind`, unused: we never transmit), then
//!   the RX ring (the kernel produces descriptors of received frames).
//! * `bind` to one queue of one device with `XDP_COPY`: on veth zero-copy
//!   is refused (EOPNOTSUPP), so the kernel copies each redirected frame
//!   into a chunk.
//!
//! Each ring is a single-producer single-consumer queue in shared memory:
//! a producer index, a consumer index, `size` entries (a power of two).
//! The producer writes entries, then publishes its index with a release
//! store; the consumer reads the producer index with acquire, reads the
//! entries, then publishes its own index with release. Frames that arrive
//! while the RX ring is full or the fill ring is empty are dropped by the
//! kernel, after the XDP program returned: an XSKMAP redirect cannot fall
//! back to the socket path. `XDP_STATISTICS` counts them ([`Xsk::dropped`]).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::{bail, ensure, Result};

/// Bytes per UMEM chunk (one frame each).
pub const FRAME_LEN: u32 = 4096;
/// Most entries of a ring (and twice that many chunks).
pub const RING_MAX: u32 = 1 << 15;

/// One mapped ring: indexes and entries of type `T`.
struct Mapped<T> {
    base: *mut u8,
    len: usize,
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    entries: *mut T,
    mask: u32,
}

impl<T> Mapped<T> {
    /// Maps ring `pgoff` of socket `fd` with `size` entries at the
    /// offsets the kernel reported.
    fn map(fd: RawFd, pgoff: u64, size: u32, off: &libc::xdp_ring_offset) -> Result<Mapped<T>> {
        let len = off.desc as usize + size as usize * std::mem::size_of::<T>();
        // SAFETY: mapping a ring of the socket as the kernel documents it
        // (offset `pgoff`, length up to the last entry); checked below.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd,
                pgoff as libc::off_t,
            )
        };
        ensure!(base != libc::MAP_FAILED, "mmap AF_XDP ring: {}", std::io::Error::last_os_error());
        let base = base as *mut u8;
        // SAFETY: the offsets lie within the mapping (the kernel's layout).
        unsafe {
            Ok(Mapped {
                base,
                len,
                producer: base.add(off.producer as usize) as *const AtomicU32,
                consumer: base.add(off.consumer as usize) as *const AtomicU32,
                entries: base.add(off.desc as usize) as *mut T,
                mask: size - 1,
            })
        }
    }

    fn producer(&self) -> &AtomicU32 {
        // SAFETY: a 4-byte aligned index in the mapping, shared with the kernel.
        unsafe { &*self.producer }
    }

    fn consumer(&self) -> &AtomicU32 {
        // SAFETY: as producer.
        unsafe { &*self.consumer }
    }

    fn entry(&self, index: u32) -> *mut T {
        // SAFETY: masked into the ring's `size` entries.
        unsafe { self.entries.add((index & self.mask) as usize) }
    }
}

impl<T> Drop for Mapped<T> {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what `map` mapped.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// An AF_XDP socket bound to one receive queue (see the module docs).
pub struct Xsk {
    fd: OwnedFd,
    umem: *mut u8,
    umem_len: usize,
    fill: Mapped<u64>,
    rx: Mapped<libc::xdp_desc>,
    /// Chunks we hold (not in the fill ring), to hand back after reading.
    spare: Vec<u64>,
}

// SAFETY: the mappings belong to this value alone; one thread at a time
// uses it (`&mut self`).
unsafe impl Send for Xsk {}

fn setsockopt<T>(fd: RawFd, opt: libc::c_int, v: &T, what: &str) -> Result<()> {
    // SAFETY: `v` is a valid value of the type the option expects.
    let rc = unsafe {
        libc::setsockopt(fd, libc::SOL_XDP, opt, (v as *const T).cast(), std::mem::size_of::<T>() as libc::socklen_t)
    };
    ensure!(rc == 0, "AF_XDP {what}: {}", std::io::Error::last_os_error());
    Ok(())
}

fn getsockopt<T>(fd: RawFd, opt: libc::c_int, what: &str) -> Result<T> {
    // SAFETY: a zeroed plain C struct, filled by the kernel up to `len`.
    let mut v: T = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: `v` has room for `len` bytes.
    let rc = unsafe { libc::getsockopt(fd, libc::SOL_XDP, opt, (&mut v as *mut T).cast(), &mut len) };
    ensure!(rc == 0, "AF_XDP {what}: {}", std::io::Error::last_os_error());
    Ok(v)
}

impl Xsk {
    /// A socket on queue `queue` of device `ifindex` (in the calling
    /// thread's network namespace) with RX and fill rings of `ring`
    /// entries and `2 * ring` chunks.
    pub fn bind(ifindex: u32, queue: u32, ring: u32) -> Result<Xsk> {
        ensure!(
            ring.is_power_of_two() && (64..=RING_MAX).contains(&ring),
            "AF_XDP ring {ring}: a power of two, 64..={RING_MAX}"
        );
        // SAFETY: socket(2) has no memory preconditions.
        let raw = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        ensure!(raw >= 0, "socket(AF_XDP): {} (kernel without CONFIG_XDP_SOCKETS?)", std::io::Error::last_os_error());
        // SAFETY: a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let frames = 2 * ring;
        let umem_len = frames as usize * FRAME_LEN as usize;
        // SAFETY: anonymous private memory, checked below.
        let umem = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                umem_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        ensure!(umem != libc::MAP_FAILED, "mmap UMEM: {}", std::io::Error::last_os_error());
        let umem = umem as *mut u8;
        let built = Self::rings(fd.as_raw_fd(), umem, umem_len, ring, ifindex, queue);
        let (fill, rx) = match built {
            Ok(r) => r,
            Err(e) => {
                // SAFETY: unmapping the UMEM mapped above.
                unsafe { libc::munmap(umem.cast(), umem_len) };
                return Err(e);
            }
        };
        let mut x =
            Xsk { fd, umem, umem_len, fill, rx, spare: (0..frames as u64).map(|i| i * FRAME_LEN as u64).collect() };
        x.refill();
        Ok(x)
    }

    fn rings(
        fd: RawFd,
        umem: *mut u8,
        umem_len: usize,
        ring: u32,
        ifindex: u32,
        queue: u32,
    ) -> Result<(Mapped<u64>, Mapped<libc::xdp_desc>)> {
        let reg = libc::xdp_umem_reg {
            addr: umem as u64,
            len: umem_len as u64,
            chunk_size: FRAME_LEN,
            headroom: 0,
            flags: 0,
            tx_metadata_len: 0,
        };
        setsockopt(fd, libc::XDP_UMEM_REG, &reg, "UMEM_REG")?;
        setsockopt(fd, libc::XDP_UMEM_FILL_RING, &ring, "FILL_RING")?;
        setsockopt(fd, libc::XDP_UMEM_COMPLETION_RING, &ring, "COMPLETION_RING")?;
        setsockopt(fd, libc::XDP_RX_RING, &ring, "RX_RING")?;
        let off: libc::xdp_mmap_offsets = getsockopt(fd, libc::XDP_MMAP_OFFSETS, "MMAP_OFFSETS")?;
        let fill = Mapped::map(fd, libc::XDP_UMEM_PGOFF_FILL_RING, ring, &off.fr)?;
        let rx = Mapped::map(fd, libc::XDP_PGOFF_RX_RING as u64, ring, &off.rx)?;
        let sa = libc::sockaddr_xdp {
            sxdp_family: libc::AF_XDP as u16,
            sxdp_flags: libc::XDP_COPY,
            sxdp_ifindex: ifindex,
            sxdp_queue_id: queue,
            sxdp_shared_umem_fd: 0,
        };
        // SAFETY: a valid sockaddr_xdp of the size given.
        let rc = unsafe {
            libc::bind(
                fd,
                (&sa as *const libc::sockaddr_xdp).cast(),
                std::mem::size_of::<libc::sockaddr_xdp>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            bail!(
                "bind AF_XDP socket to ifindex {ifindex} queue {queue} in copy mode: {}",
                std::io::Error::last_os_error()
            );
        }
        Ok((fill, rx))
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Hands every spare chunk to the kernel through the fill ring.
    fn refill(&mut self) {
        let prod = self.fill.producer().load(Ordering::Relaxed);
        let cons = self.fill.consumer().load(Ordering::Acquire);
        let room = (self.fill.mask + 1) - prod.wrapping_sub(cons);
        let n = (room as usize).min(self.spare.len());
        for i in 0..n {
            let addr = self.spare.pop().expect("n <= spare.len()");
            // SAFETY: an entry we own (between the kernel's consumer index
            // and ours plus the ring size).
            unsafe { *self.fill.entry(prod.wrapping_add(i as u32)) = addr };
        }
        self.fill.producer().store(prod.wrapping_add(n as u32), Ordering::Release);
    }

    /// Calls `f` with every received frame, then hands the chunks back;
    /// returns how many frames it read.
    pub fn drain(&mut self, mut f: impl FnMut(&[u8])) -> u64 {
        let cons = self.rx.consumer().load(Ordering::Relaxed);
        let prod = self.rx.producer().load(Ordering::Acquire);
        let n = prod.wrapping_sub(cons);
        for i in 0..n {
            // SAFETY: descriptors between our index and the kernel's are
            // published to us.
            let d = unsafe { *self.rx.entry(cons.wrapping_add(i)) };
            let (addr, len) = (d.addr as usize, d.len as usize);
            if addr + len <= self.umem_len {
                // SAFETY: within the UMEM; the kernel is done with the chunk.
                f(unsafe { std::slice::from_raw_parts(self.umem.add(addr), len) });
            }
            self.spare.push(d.addr & !(FRAME_LEN as u64 - 1));
        }
        self.rx.consumer().store(prod, Ordering::Release);
        if n > 0 {
            self.refill();
        }
        n as u64
    }

    /// Frames the kernel dropped at this socket (`XDP_STATISTICS`):
    /// `rx_dropped` (no chunk in the fill ring, frame too long) plus
    /// `rx_ring_full`.
    pub fn dropped(&self) -> Result<u64> {
        let s: libc::xdp_statistics = getsockopt(self.fd(), libc::XDP_STATISTICS, "STATISTICS")?;
        Ok(s.rx_dropped + s.rx_ring_full)
    }
}

impl Drop for Xsk {
    fn drop(&mut self) {
        // SAFETY: unmapping the UMEM `bind` mapped. The rings unmap
        // themselves and the socket closes after this; until then the
        // kernel writes only into the UMEM pages it pinned at
        // XDP_UMEM_REG, which it releases at close.
        unsafe { libc::munmap(self.umem.cast(), self.umem_len) };
    }
}
