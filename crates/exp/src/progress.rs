//! Progress of a long run (`innet check`, `innet bench`): a bar with the
//! time left when stdout is a terminal, else a few plain lines, so a CI log
//! shows the run advancing without a bar's redraws. Both go to stderr:
//! stdout carries the results, which scripts and tests read.
//!
//! ```no_run
//! let p = innet_exp::progress::Progress::new(40, "check txn");
//! for seed in 0..40 {
//!     p.step(format_args!("seed {seed}"));
//! }
//! p.finish();
//! ```
//!
//! Without a terminal, one line per finished step, `innet: LABEL: DONE/TOTAL
//! MSG (ELAPSED s, about LEFT s left)`; a run of more than [`MAX_LINES`]
//! steps prints every k-th step (and the last) so it stays within that many
//! lines. `Progress` is `Sync`: steps may finish on any thread.

use std::fmt::Display;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Most lines a run prints without a terminal.
pub const MAX_LINES: u64 = 20;

/// Set while a run that shows its own progress (`innet reproduce`) runs
/// experiments that would each show theirs: they then show nothing.
static NESTED_HIDDEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Hides (`true`) or shows again the progress of every run started after
/// this call in this process: for a command whose steps are whole runs
/// with progress of their own.
pub fn hide_nested(hide: bool) {
    NESTED_HIDDEN.store(hide, Ordering::Relaxed);
}

enum Show {
    Bar(ProgressBar),
    /// Print every `every`-th step and the last.
    Lines {
        every: u64,
    },
    Hidden,
}

/// A long run's progress (see the module doc).
pub struct Progress {
    show: Show,
    label: String,
    total: u64,
    done: AtomicU64,
    started: Instant,
    /// Serializes the lines of steps finishing at once.
    out: Mutex<()>,
}

impl Progress {
    /// `total` steps of the run named `label`: a bar if stdout and stderr
    /// are terminals, else lines.
    pub fn new(total: u64, label: &str) -> Progress {
        if NESTED_HIDDEN.load(Ordering::Relaxed) {
            return Progress::hidden();
        }
        let terminal = std::io::stdout().is_terminal() && std::io::stderr().is_terminal();
        let show = if terminal {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template(
                "{prefix} [{bar:30}] {pos}/{len} {elapsed} elapsed, about {eta} left  {wide_msg}",
            )
            .expect("a valid template")
            .progress_chars("=> ");
            bar.set_style(style);
            bar.set_prefix(label.to_string());
            Show::Bar(bar)
        } else {
            Show::Lines { every: total.div_ceil(MAX_LINES).max(1) }
        };
        Progress::with(show, total, label)
    }

    /// A run that shows nothing.
    pub fn hidden() -> Progress {
        Progress::with(Show::Hidden, 0, "")
    }

    fn with(show: Show, total: u64, label: &str) -> Progress {
        Progress {
            show,
            label: label.to_string(),
            total,
            done: AtomicU64::new(0),
            started: Instant::now(),
            out: Mutex::new(()),
        }
    }

    /// One step finished; `msg` says which (a seed, a point).
    pub fn step(&self, msg: impl Display) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        match &self.show {
            Show::Bar(bar) => {
                bar.set_message(msg.to_string());
                bar.inc(1);
            }
            Show::Lines { every } => {
                if done % every == 0 || done == self.total {
                    let _held = self.out.lock().unwrap_or_else(|e| e.into_inner());
                    eprintln!("{}", self.line(done, &msg));
                }
            }
            Show::Hidden => {}
        }
    }

    /// The line for `done` steps finished, the last being `msg`.
    fn line(&self, done: u64, msg: &dyn Display) -> String {
        let elapsed = self.started.elapsed().as_secs_f64();
        let left = elapsed / done.max(1) as f64 * self.total.saturating_sub(done) as f64;
        format!("innet: {}: {done}/{} {msg} ({elapsed:.1} s, about {left:.0} s left)", self.label, self.total)
    }

    /// Runs `f` (which prints to stdout, e.g. a table row) with the bar
    /// out of the way.
    pub fn suspend<T>(&self, f: impl FnOnce() -> T) -> T {
        match &self.show {
            Show::Bar(bar) => bar.suspend(f),
            _ => f(),
        }
    }

    /// Steps finished so far.
    pub fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }

    /// The run is over: the bar is cleared (the results follow on stdout).
    pub fn finish(self) {
        if let Show::Bar(bar) = &self.show {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_at_most_max_lines_and_include_the_last_step() {
        let every = 1000u64.div_ceil(MAX_LINES);
        let shown = (1..=1000).filter(|d| d % every == 0 || *d == 1000).count() as u64;
        assert!(shown <= MAX_LINES, "{shown} lines");
        let p = Progress::with(Show::Lines { every }, 1000, "check txn");
        (0..10).for_each(|_| p.step("x"));
        assert_eq!(p.done(), 10);
        let l = p.line(10, &"seed 9");
        assert!(l.starts_with("innet: check txn: 10/1000 seed 9 ("), "{l}");
        assert!(l.ends_with(" s left)"), "{l}");
    }
}
