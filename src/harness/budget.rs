//! The one time budget of every command that measures: how many counted trials, how long a
//! trial must last (the calibration target), whether a warm-up trial runs, and when a worker
//! is killed. `run`, `run --suite`, `profile` and `trace` all take their numbers from here, so
//! `--quick` is a budget and not a set of literals scattered through the commands.
//!
//! It decides nothing about workers or clocks itself: the harness's calibration and trials,
//! and trace's sizing, read it.

use super::placement::{CpuChoice, Mode};
use super::Options;
use std::path::PathBuf;
use std::time::Duration;

/// How much measuring a command may do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    /// Counted trials per benchmark (or per round-robin: one per round).
    pub trials: u32,
    /// Calibration grows the iteration count until one trial lasts at least this long.
    pub min_time: Duration,
    /// One uncounted trial at the calibrated count before the counted ones.
    pub warmup: bool,
    /// A worker running longer than this is killed and its trial fails.
    pub timeout: Duration,
    /// A smoke test, not a measurement (recorded with the run).
    pub quick: bool,
}

impl Budget {
    /// `--quick`: one short trial, no warm-up.
    pub const QUICK_TRIALS: u32 = 1;
    pub const QUICK_MIN_TIME: Duration = Duration::from_millis(10);
    /// `profile` calibrates as a quick run does, to a longer trial: a tenth of a second is
    /// enough to scale the profiled trial to `--seconds` within a few percent.
    pub const PROFILE_CALIBRATION: Duration = Duration::from_millis(100);
    /// `trace` sizes its first traced run to about this long: long enough that per-operation
    /// counts dominate start-up, short enough that the ring buffer keeps every event.
    pub const TRACE_CALIBRATION: Duration = Duration::from_millis(10);
    /// ... and never past this many iterations (events per operation can be many).
    pub const TRACE_MAX_ITERATIONS: u64 = 5000;

    /// The budget of `run`: `--trials` counted trials of at least `--min-time` after a warm-up,
    /// or, with `--quick`, the quick budget (which `RunPlan::resolve` refuses to combine with
    /// an explicit `--trials` or `--min-time`).
    pub fn run(trials: u32, min_time: Duration, timeout: Duration, quick: bool) -> Budget {
        if quick {
            Budget::quick(timeout)
        } else {
            Budget {
                trials,
                min_time,
                warmup: true,
                timeout,
                quick: false,
            }
        }
    }

    /// The sizing of `trace`: its first traced run is calibrated, untraced, to about
    /// [`Self::TRACE_CALIBRATION`] (at most [`Self::TRACE_MAX_ITERATIONS`]).
    pub fn trace(timeout: Duration) -> Budget {
        Budget {
            trials: 1,
            min_time: Self::TRACE_CALIBRATION,
            warmup: false,
            timeout,
            quick: false,
        }
    }

    /// One short trial, no warm-up: a smoke test.
    pub fn quick(timeout: Duration) -> Budget {
        Budget {
            trials: Self::QUICK_TRIALS,
            min_time: Self::QUICK_MIN_TIME,
            warmup: false,
            timeout,
            quick: true,
        }
    }

    /// The calibration of `profile`: one trial of about [`Self::PROFILE_CALIBRATION`], whose
    /// count and time scale the profiled trial.
    pub fn profile_calibration(timeout: Duration) -> Budget {
        Budget {
            trials: 1,
            min_time: Self::PROFILE_CALIBRATION,
            warmup: false,
            timeout,
            quick: false,
        }
    }

    /// The budget of one long trial that lasts `seconds` however short `timeout` is (a
    /// profiled trial): the timeout is stretched by three times the trial's length.
    pub fn stretched(self, seconds: f64) -> Budget {
        Budget {
            timeout: self.timeout + Duration::from_secs_f64(3.0 * seconds.max(0.0)),
            ..self
        }
    }

    /// Trials that run at the calibrated count: the warm-up and the counted ones.
    pub fn trials_per_target(&self) -> u64 {
        u64::from(self.trials) + u64::from(self.warmup)
    }

    /// The harness's options for this budget.
    pub fn options(
        &self,
        worker_exe: PathBuf,
        mode: Mode,
        cpus: CpuChoice,
        observe: bool,
    ) -> Options {
        Options {
            worker_exe,
            trials: self.trials,
            min_time: self.min_time,
            warmup: self.warmup,
            mode,
            cpus,
            timeout: self.timeout,
            observe,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_is_a_budget_not_literals() {
        let t = Duration::from_secs(60);
        let q = Budget::run(10, Duration::from_secs(1), t, true);
        assert_eq!(q, Budget::quick(t));
        assert_eq!(q.trials_per_target(), 1);
        let full = Budget::run(5, Duration::from_millis(100), t, false);
        assert!(full.warmup && !full.quick);
        assert_eq!(full.trials_per_target(), 6);
        assert_eq!(
            full.stretched(2.0).timeout,
            Duration::from_secs(66),
            "a profiled trial gets 3x its length on top"
        );
    }
}
