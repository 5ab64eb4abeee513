//! CPU used by a run, for the "CPU per committed value" of the end-to-end
//! benchmarks (issue 20): the whole machine's from `/proc/stat` (user,
//! kernel, and the softirq and kernel threads where XDP programs, threaded
//! NAPI and the network stack run, whichever process caused them) and this
//! process's from `getrusage` (its threads' user and system time: the end
//! hosts, and the user-space roles of the software deployments).
//!
//! The machine's figure counts everything the machine did in the window,
//! other work included: compare deployments measured side by side, and
//! read the load average beside it.

use std::time::Instant;

use serde::Serialize;

/// One reading of the counters.
#[derive(Clone, Copy, Debug)]
pub struct CpuSnapshot {
    /// `/proc/stat`'s `cpu` line in clock ticks: user, nice, system, idle,
    /// iowait, irq, softirq, steal.
    ticks: [u64; 8],
    /// This process: user and system seconds (`RUSAGE_SELF`).
    process: (f64, f64),
    at: Instant,
}

/// CPU seconds used between two snapshots.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct CpuUse {
    pub wall_s: f64,
    /// The machine (every CPU): user (and nice) time.
    pub machine_user_s: f64,
    /// The machine: kernel time outside interrupts (system calls, kernel
    /// threads: threaded NAPI polls here).
    pub machine_system_s: f64,
    /// The machine: hard and soft interrupt time (NAPI in softirq: XDP
    /// programs and the stack's receive path when not threaded).
    pub machine_irq_s: f64,
    /// This process's threads.
    pub process_user_s: f64,
    pub process_system_s: f64,
}

/// [`CpuUse`] per committed value, in microseconds.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct CpuPerValue {
    pub values: u64,
    /// The machine's busy time per value: user + system + interrupts.
    pub machine_us: f64,
    pub user_us: f64,
    /// System and interrupt time (the kernel, XDP included).
    pub kernel_us: f64,
    /// This process's user and system time per value.
    pub process_user_us: f64,
    pub process_system_us: f64,
    /// CPUs kept busy on average over the window (of the machine's).
    pub busy_cpus: f64,
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

impl CpuSnapshot {
    pub fn now() -> CpuSnapshot {
        let mut ticks = [0u64; 8];
        if let Ok(s) = std::fs::read_to_string("/proc/stat") {
            if let Some(line) = s.lines().find(|l| l.starts_with("cpu ")) {
                for (t, v) in ticks.iter_mut().zip(line.split_whitespace().skip(1)) {
                    *t = v.parse().unwrap_or(0);
                }
            }
        }
        // SAFETY: getrusage fills a plain struct.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        CpuSnapshot { ticks, process: (tv(ru.ru_utime), tv(ru.ru_stime)), at: Instant::now() }
    }

    /// What was used from `self` to now.
    pub fn used(&self) -> CpuUse {
        let now = CpuSnapshot::now();
        let hz = clock_ticks();
        let d = |i: usize| now.ticks[i].saturating_sub(self.ticks[i]) as f64 / hz;
        CpuUse {
            wall_s: now.at.duration_since(self.at).as_secs_f64(),
            machine_user_s: d(0) + d(1),
            machine_system_s: d(2),
            machine_irq_s: d(5) + d(6),
            process_user_s: now.process.0 - self.process.0,
            process_system_s: now.process.1 - self.process.1,
        }
    }
}

impl std::ops::AddAssign for CpuUse {
    /// Two windows' CPU as one (a plane measured in several rounds).
    fn add_assign(&mut self, o: CpuUse) {
        self.wall_s += o.wall_s;
        self.machine_user_s += o.machine_user_s;
        self.machine_system_s += o.machine_system_s;
        self.machine_irq_s += o.machine_irq_s;
        self.process_user_s += o.process_user_s;
        self.process_system_s += o.process_system_s;
    }
}

impl CpuUse {
    /// Per one of `values` committed values.
    pub fn per_value(&self, values: u64) -> CpuPerValue {
        let per = |s: f64| if values == 0 { 0.0 } else { s * 1e6 / values as f64 };
        let kernel = self.machine_system_s + self.machine_irq_s;
        CpuPerValue {
            values,
            machine_us: per(self.machine_user_s + kernel),
            user_us: per(self.machine_user_s),
            kernel_us: per(kernel),
            process_user_us: per(self.process_user_s),
            process_system_us: per(self.process_system_s),
            busy_cpus: if self.wall_s > 0.0 { (self.machine_user_s + kernel) / self.wall_s } else { 0.0 },
        }
    }
}

/// Runs `f`, and what it used per committed value (`values` of its result).
pub fn measured<R>(
    f: impl FnOnce() -> anyhow::Result<R>,
    values: impl Fn(&R) -> u64,
) -> anyhow::Result<(R, CpuPerValue)> {
    let before = CpuSnapshot::now();
    let r = f()?;
    let used = before.used();
    let n = values(&r);
    Ok((r, used.per_value(n)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_loop_shows_as_user_time_of_this_process_and_the_machine() {
        let before = CpuSnapshot::now();
        let t = Instant::now();
        let mut x = 0u64;
        // Spin until this process has had 0.3 s of CPU (on a loaded
        // machine 300 ms of wall time gave it 0.1 s: the CI run of
        // 2026-11-27 23:50), giving up after 60 s.
        while before.used().process_user_s < 0.3 && t.elapsed().as_secs() < 60 {
            let spin = Instant::now();
            while spin.elapsed().as_millis() < 10 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
        }
        std::hint::black_box(x);
        let u = before.used();
        assert!(u.process_user_s > 0.2, "{u:?}");
        assert!(u.machine_user_s >= u.process_user_s * 0.8, "the machine counts this process's time: {u:?}");
        let p = u.per_value(1000);
        assert!(p.process_user_us > 200.0 && p.busy_cpus > 0.5, "{p:?}");
    }
}
