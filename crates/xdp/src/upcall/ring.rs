//! The user side of a BPF ring buffer (`BPF_MAP_TYPE_RINGBUF`), read over
//! its memory mapping the way libbpf's `ring_buffer__consume` does, but
//! publishing the consumer position once per pass instead of once per
//! record.
//!
//! The kernel maps a ring of `size` bytes as: page 0, the consumer
//! position (ours to write); page 1, the producer position (read only);
//! then the data pages, mapped twice in a row so that a record that wraps
//! reads as one piece. Each record starts with an 8-byte header: its
//! length, with bit 31 set while the producer still writes it (busy) and
//! bit 30 if it was discarded. Records are 8-byte aligned.
//!
//! The producer's adaptive wake-up (submit flags 0) wakes the consumer when
//! the record it commits starts exactly at the published consumer position,
//! i.e. when the consumer had caught up: publishing once per pass keeps
//! that rule intact, since a pass ends only when it has read everything.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use anyhow::{ensure, Result};

const BUSY_BIT: u32 = 1 << 31;
const DISCARD_BIT: u32 = 1 << 30;
const HEADER_LEN: u64 = 8;

/// A mapped ring buffer map.
pub struct Ring {
    consumer: *mut u8,
    producer: *mut u8,
    page: usize,
    size: usize,
    /// The map's fd (owned by the BPF object), for epoll.
    pub fd: RawFd,
}

// SAFETY: the mapping is process-wide memory; one thread at a time reads
// the ring (the `&mut self` of `drain`).
unsafe impl Send for Ring {}

impl Ring {
    /// Maps the ring buffer map `fd` of `size` bytes (its `max_entries`).
    pub fn map(fd: RawFd, size: usize) -> Result<Ring> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        ensure!(size.is_power_of_two() && size >= page, "ring size {size} is not a power of two of at least a page");
        // SAFETY: mapping the map's consumer page read-write and its producer
        // page + data (twice) read-only, as the kernel lays them out; the
        // results are checked before use.
        let consumer = unsafe {
            libc::mmap(std::ptr::null_mut(), page, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0)
        };
        ensure!(consumer != libc::MAP_FAILED, "mmap ring consumer page: {}", std::io::Error::last_os_error());
        // SAFETY: as above.
        let producer = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                page + 2 * size,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd,
                page as libc::off_t,
            )
        };
        if producer == libc::MAP_FAILED {
            let e = std::io::Error::last_os_error();
            // SAFETY: unmapping what was mapped above.
            unsafe { libc::munmap(consumer, page) };
            anyhow::bail!("mmap ring producer page and data: {e}");
        }
        Ok(Ring { consumer: consumer.cast(), producer: producer.cast(), page, size, fd })
    }

    fn consumer_pos(&self) -> &AtomicU64 {
        // SAFETY: the first 8 bytes of the consumer page, 8-byte aligned
        // (page aligned), shared with the kernel: accessed atomically.
        unsafe { &*(self.consumer as *const AtomicU64) }
    }

    fn producer_pos(&self) -> &AtomicU64 {
        // SAFETY: as consumer_pos, on the producer page.
        unsafe { &*(self.producer as *const AtomicU64) }
    }

    /// Calls `f` with every committed record, oldest first, until the ring
    /// is empty or the oldest record is still being written; returns how
    /// many it read.
    pub fn drain(&mut self, mut f: impl FnMut(&[u8])) -> u64 {
        let mask = self.size as u64 - 1;
        let mut pos = self.consumer_pos().load(Ordering::Acquire);
        let mut read = 0;
        loop {
            let end = self.producer_pos().load(Ordering::Acquire);
            if pos >= end {
                break;
            }
            let start = pos;
            while pos < end {
                // SAFETY: (pos & mask) + 8 <= size lies in the first data
                // mapping; the header is 8-byte aligned.
                let header = unsafe { self.producer.add(self.page + (pos & mask) as usize) };
                // SAFETY: as above; the kernel writes the length with a
                // release store, read here with acquire.
                let len = unsafe { &*(header as *const AtomicU32) }.load(Ordering::Acquire);
                if len & BUSY_BIT != 0 {
                    break;
                }
                let body = (len & !(BUSY_BIT | DISCARD_BIT)) as usize;
                if len & DISCARD_BIT == 0 {
                    // SAFETY: the record's body follows its header and may
                    // run past the ring's end into the second mapping of
                    // the same pages, which is mapped.
                    f(unsafe { std::slice::from_raw_parts(header.add(HEADER_LEN as usize), body) });
                    read += 1;
                }
                pos += (body as u64 + HEADER_LEN).div_ceil(8) * 8;
            }
            if pos == start {
                break; // the oldest record is busy
            }
            self.consumer_pos().store(pos, Ordering::Release);
        }
        read
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what `map` mapped.
        unsafe {
            libc::munmap(self.consumer.cast(), self.page);
            libc::munmap(self.producer.cast(), self.page + 2 * self.size);
        }
    }
}
