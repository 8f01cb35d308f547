//! sysperf: measure, observe and compare the performance of UNIX-like kernels.
//!
//! The library is the whole tool except argument parsing and printing, which live in the
//! binary (`main.rs`, and `cmd/` with one file per subcommand). It never prints: what it has to
//! tell the user while it works goes through [`notice`]. `unsafe` is denied but in [`sys`] and
//! [`clib`], the syscall and C library boundaries. Layout follows the architecture
//! (ARCHITECTURE.md, whose order of layers `tests/it/layers.rs` holds the code to):
//! - [`bench`]: the registry of benchmarks, one file per family (metadata, parameters, hot loop);
//! - [`harness`]: owns time (worker processes, calibration, trials, overhead, placement,
//!   per-trial counters);
//! - [`engine`]: a run from plan to store: budget, plan, interleaved rounds, events;
//! - [`suite`]: the registry of suites: the papers' other studies as sweeps of x against y;
//! - [`catalog`]: finds runs by name (reference runs, then the store);
//! - [`stats`]: pure statistics over raw samples;
//! - [`variance`]: within-run and run-to-run variance, and ratio intervals that include both;
//! - [`paired`]: the interval of a paired A/B from its rounds' log ratios (`sysperf ab`);
//! - [`speed`]: the machine's speed through a run, from its trials (change points, episodes);
//! - [`changepoint`]: change points in a test's history of runs (`sysperf changes`);
//! - [`fingerprint`]: what machine a run was made on;
//! - [`store`]: the embedded SQLite store of runs;
//! - [`derived`]: figures computed from several results (context switch, exec overhead, ...);
//! - [`changes`]: when and where performance changed in the store (`sysperf changes`);
//! - [`compare`]: runs side by side, ratios with bootstrap intervals and verdicts;
//! - [`reference`]: the papers' published figures as read-only reference runs;
//! - [`published`]: the papers' other printed figures for the suites' curves (BBN Tables 1-8,
//!   Feder's Table III, §4.1.1's ls -l);
//! - [`exchange`]: the export file that moves runs between machines, and its validation;
//! - [`output`]: files the user asked for, written without following anyone's symlinks;
//! - [`safedir`]: directories sysperf can trust (no one else can swap what is in them), and
//!   files made in them by descriptor;
//! - [`procfs`]: the one reader of /proc/stat and the one `CpuTicks`;
//! - [`programs`]: the one rule by which every external program is found (absolute, trusted
//!   directories of PATH) and run (by absolute path);
//! - [`observe`]: the live system as vmstat and iostat see it, and the doctor's findings;
//! - [`profile`]: kernel profiles of a benchmark (perf sampling, kallsyms, flat profile, call graph);
//! - [`trace`]: `sysperf trace`, a benchmark observed through the kernel's trace points;
//! - [`term`]: what may reach a terminal: control characters in any printed text escaped;
//! - [`notice`]: the library's messages to the user, through the sink the program installs;
//! - [`units`]: the one parser of durations as the user types them;
//! - [`error`]: typed errors, each with its exit code ([`error::Exit`]);
//! - [`report`]: pure functions from runs and comparisons to bytes (tables, Markdown, CSV, JSON,
//!   SVG, HTML).

#![deny(unsafe_code)]
// Test-only helpers (fixtures, the PostgreSQL cluster of tests/it/support) stay `pub` for the tests.
#![cfg_attr(not(test), warn(unreachable_pub))]

pub mod bench;
pub mod catalog;
pub mod changepoint;
pub mod changes;
#[allow(unsafe_code)]
pub mod clib;
pub mod compare;
pub mod cpusplit;
pub mod derived;
pub mod engine;
pub mod error;
pub mod exchange;
pub mod explain;
pub mod fingerprint;
pub mod fleet;
pub mod harness;
pub mod managed;
pub mod model;
pub mod notice;
pub mod observe;
pub mod ops;
pub mod output;
pub mod paired;
pub mod papers;
pub mod procfs;
pub mod profile;
pub mod programs;
pub mod published;
pub mod reference;
pub mod report;
pub mod safedir;
pub mod speed;
pub mod stats;
pub mod store;
pub mod suite;
pub mod sync;
#[allow(unsafe_code)]
pub mod sys;
pub mod term;
pub mod ties;
pub mod trace;
pub mod units;
pub mod variance;

/// This sysperf: its version and, as semver build metadata, the git commit it was built from
/// (`0.1.0+69b18ac1d2e3`). Every run stores it; `sysperf --version` prints it; `compare` says
/// when runs were measured by different ones (a benchmark's definition may have changed).
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "+", env!("SYSPERF_COMMIT"));

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
    /// `compare --fail-on-regression` could not judge a test it was asked to (missing or
    /// failed on one side, an interrupted run, too few trials for an interval).
    pub const UNJUDGED: i32 = 4;
    /// The run was measured, but the shared PostgreSQL store stayed unreachable, so it went
    /// into a spool file on this host instead (#35): the fleet's database does not hold it
    /// yet. A failure (1) or a signal's code takes precedence.
    pub const SPOOLED: i32 = 5;
    /// `sysperf changes` found a change point in a test's history of runs (#35), for
    /// alerting: a change either way (a step up or down), unlike 3 (a regression against a
    /// baseline).
    pub const CHANGED: i32 = 6;
    /// `sysperf changes` searched nothing: no history in the store (or matching its
    /// `--where`) had the runs a change needs (#42). Not 0: "no change found" would say that
    /// histories were looked at.
    pub const NOTHING_SEARCHED: i32 = 7;
    /// The run was interrupted (Ctrl-C, SIGINT); what finished was kept.
    pub const INTERRUPTED: i32 = 130;
    /// The run was ended by SIGTERM (as a service manager or `kill` ends it); what finished
    /// was kept. SIGHUP gives 129. The shell's convention: 128 + the signal's number.
    pub const TERMINATED: i32 = 143;
}
