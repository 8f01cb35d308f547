//! sysperf: measure, observe and compare the performance of UNIX-like kernels.
//!
//! The library is the whole tool except argument parsing and printing, which live in
//! `main.rs`. Layout follows the architecture:
//! - [`bench`]: the registry of benchmarks, one file per family (metadata, parameters, hot loop);
//! - [`harness`]: owns time (worker processes, calibration, trials, overhead, placement);
//! - [`stats`]: pure statistics over raw samples;
//! - [`fingerprint`]: what machine a run was made on;
//! - [`store`]: the embedded SQLite store of runs;
//! - [`compare`]: runs side by side, ratios with bootstrap intervals and verdicts;
//! - [`profile`]: kernel profiles of a benchmark (perf sampling, kallsyms, flat profile, call graph);
//! - [`derived`]: figures computed from several results (context switch, exec overhead, ...);
//! - [`report`]: pure functions from runs to bytes (tables, JSON).

pub mod bench;
pub mod compare;
pub mod derived;
pub mod error;
pub mod fingerprint;
pub mod harness;
pub mod model;
pub mod profile;
pub mod report;
pub mod stats;
pub mod store;
pub mod sys;

/// Exit codes, documented in the README and `sysperf --help`.
pub mod exit {
    /// Everything asked for was done.
    pub const OK: i32 = 0;
    /// A failure while doing it (I/O, a benchmark that could not run, ...).
    pub const FAILURE: i32 = 1;
    /// Bad usage or bad input: unknown benchmark, invalid number, unusable database.
    pub const USAGE: i32 = 2;
    /// A comparison found a significant regression (`compare --fail-on-regression`).
    pub const REGRESSION: i32 = 3;
    /// The run was interrupted (Ctrl-C); what finished was kept.
    pub const INTERRUPTED: i32 = 130;
}
