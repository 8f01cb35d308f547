//! Settling before a run (`run --settle S`): flush dirty pages, then wait, up to S seconds,
//! until the machine is quiet: other work below [`doctor::BUSY_PCT`] of all CPUs over a
//! one-second look, and dirty plus writeback memory below [`DIRTY_KIB`].
//!
//! Why: on a VM the first run after heavy work (a compile, a test suite) differs from the
//! next ones by more than the trials' interval says (sysperf's own A/A script saw seqpage 5-7%
//! slower in every comparison against such a first run), because writeback and the load's
//! tail still compete for the CPUs and the memory. Waiting for the machine to go quiet makes
//! the runs that a comparison puts side by side start from the same state. This is not a
//! guarantee: it only waits for what it can see, and it says what it saw. It measures no
//! benchmark; the checks are pure and the loop is the only code that reads the live system.

use super::doctor;
pub use super::{dirty_kib, read_dirty_kib, DIRTY_KIB};
use crate::procfs::{self, CpuTicks};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long each look at the CPUs lasts.
pub const LOOK: Duration = Duration::from_secs(1);

/// What one look saw.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Look {
    /// Share of all CPUs' time that was busy during the look (None if /proc/stat was unreadable).
    pub busy_pct: Option<f64>,
    /// Dirty + Writeback from /proc/meminfo, in KiB (None if unreadable).
    pub dirty_kib: Option<u64>,
}

impl Look {
    /// Quiet: little other work and little memory waiting to be written. What cannot be read
    /// does not hold the run back (a container may hide /proc/meminfo).
    pub fn quiet(&self) -> bool {
        self.busy_pct.is_none_or(|b| b < doctor::BUSY_PCT)
            && self.dirty_kib.is_none_or(|d| d < DIRTY_KIB)
    }

    /// "other CPU use 3%, dirty 1.2 MiB", what was readable.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(b) = self.busy_pct {
            parts.push(format!("CPU busy {b:.0}%"));
        }
        if let Some(d) = self.dirty_kib {
            parts.push(format!("dirty+writeback {:.1} MiB", d as f64 / 1024.0));
        }
        if parts.is_empty() {
            "nothing readable".into()
        } else {
            parts.join(", ")
        }
    }
}

/// How settling went.
#[derive(Debug, Clone, PartialEq)]
pub struct Settled {
    /// Seconds from the start of settling to its end (the flush included).
    pub waited_s: f64,
    /// Whether the last look was quiet (false: the limit ran out, or the run was stopped).
    pub quiet: bool,
    /// The last look.
    pub last: Look,
}

impl Settled {
    /// One line for the run's notes or warnings.
    pub fn describe(&self) -> String {
        if self.quiet {
            format!(
                "settled: the machine was quiet after {:.1} s ({})",
                self.waited_s,
                self.last.describe()
            )
        } else {
            format!(
                "not settled: the machine was still busy after {:.1} s ({}); the first trials may differ from a later run's",
                self.waited_s,
                self.last.describe()
            )
        }
    }
}

fn busy(a: &CpuTicks, b: &CpuTicks) -> Option<f64> {
    doctor::cpu_shares(&b.since(a)).0
}

/// Flushes dirty pages (sync(2)), then looks once a [`LOOK`] until a look is quiet, `limit`
/// has passed or `stop` is set. Always looks at least once.
pub fn settle(limit: Duration, stop: &AtomicBool) -> Settled {
    let t0 = Instant::now();
    crate::sys::sync_filesystems();
    loop {
        let before = procfs::read_stat().ok().and_then(|s| s.cpu);
        std::thread::sleep(LOOK);
        let after = procfs::read_stat().ok().and_then(|s| s.cpu);
        let look = Look {
            busy_pct: match (before, after) {
                (Some(a), Some(b)) => busy(&a, &b),
                _ => None,
            },
            dirty_kib: read_dirty_kib(),
        };
        let quiet = look.quiet();
        if quiet || t0.elapsed() + LOOK > limit || stop.load(Ordering::Relaxed) {
            return Settled {
                waited_s: t0.elapsed().as_secs_f64(),
                quiet,
                last: look,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MEMINFO: &str = "MemTotal:       24591856 kB\nMemFree:        20000000 kB\nDirty:              1204 kB\nWriteback:            16 kB\nWritebackTmp:          0 kB\n";

    #[test]
    fn dirty_is_dirty_plus_writeback_and_absent_lines_are_none() {
        assert_eq!(dirty_kib(MEMINFO), Some(1220));
        assert_eq!(dirty_kib("Dirty: 5 kB\n"), Some(5));
        assert_eq!(dirty_kib("MemTotal: 5 kB\n"), None);
    }

    #[test]
    fn quiet_needs_both_low_and_unreadable_does_not_hold_back() {
        let q = |b, d| Look {
            busy_pct: b,
            dirty_kib: d,
        };
        assert!(q(Some(2.0), Some(100)).quiet());
        assert!(!q(Some(doctor::BUSY_PCT), Some(100)).quiet());
        assert!(!q(Some(2.0), Some(DIRTY_KIB)).quiet());
        assert!(q(None, None).quiet());
        assert_eq!(q(None, None).describe(), "nothing readable");
        assert_eq!(
            q(Some(3.4), Some(2048)).describe(),
            "CPU busy 3%, dirty+writeback 2.0 MiB"
        );
    }

    #[test]
    fn settling_looks_at_least_once_and_respects_the_limit_and_stop() {
        let stop = AtomicBool::new(true);
        let s = settle(Duration::from_secs(600), &stop);
        // Stopped: one look, then out, whatever the machine does.
        assert!(s.waited_s >= LOOK.as_secs_f64() * 0.9, "{s:?}");
        assert!(s.waited_s < 60.0, "{s:?}");
        let s = settle(Duration::ZERO, &AtomicBool::new(false));
        assert!(s.waited_s < 60.0, "{s:?}");
        assert!(s.describe().contains("settled"), "{}", s.describe());
    }
}
