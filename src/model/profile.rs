//! Kernel profiles as records: a benchmark's [`Profile`] and the whole machine's
//! [`SystemProfile`] (`sysperf profile --system`), as the store keeps them, exports carry them
//! and reports render them. How they are made (sampling, folding, the subsystem rules) is
//! `profile`'s; what is computed from them (flat profile, call graph) is there too.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A stored kernel profile of one benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    pub bench: String,
    /// What one operation is ("call", "round trip", "fork", ...).
    pub unit: String,
    pub placement: String,
    pub cpus: Vec<u32>,
    pub iterations: u64,
    /// Operations in the profiled trial (iterations x operations per iteration).
    pub operations: u64,
    /// Wall time of the profiled trial's timed region; sampling slows it slightly, so this is
    /// for scale, not a measurement (the run's trials are).
    pub wall_ns: u64,
    /// CPU time each sample stands for.
    pub sample_period_ns: u64,
    /// How the samples were taken (whole-CPU or per-task; see `profile::sampler`).
    #[serde(default)]
    pub scope: String,
    /// Samples inside the timed region (the ones in `stacks`).
    pub samples: u64,
    /// Samples of setup and teardown, dropped.
    pub samples_outside_region: u64,
    /// Samples of other processes on the benchmark's CPUs during the timed region (whole-CPU
    /// sampling only), dropped: other work that competed with the benchmark.
    #[serde(default)]
    pub samples_other: u64,
    /// Samples the kernel could not deliver (buffer full) and times it throttled sampling.
    pub lost_samples: u64,
    pub throttled: u64,
    /// Folded stacks: frames root first joined by ';' -> samples.
    pub stacks: BTreeMap<String, u64>,
}

/// One process's samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessRow {
    pub comm: String,
    pub pid: u32,
    /// Samples in the kernel (idle excluded) and in user mode.
    pub kernel_samples: u64,
    pub user_samples: u64,
}

/// Calls of one kernel function counted over the profile, with its time from the samples
/// (gprof's method: self = samples with it at the leaf; children = samples with it below the
/// leaf), as the 4.3BSD paper's Tables 4, 9 and 10.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCalls {
    pub name: String,
    /// Calls counted (None when they could not be counted; `note` says why).
    pub calls: Option<u64>,
    pub calls_per_s: Option<f64>,
    pub self_samples: u64,
    pub child_samples: u64,
    /// Microseconds of CPU per call, from the samples over the counted calls.
    pub self_us_per_call: Option<f64>,
    pub child_us_per_call: Option<f64>,
    /// Share of kernel time (idle excluded): self and self+children.
    pub self_pct_kernel: f64,
    pub total_pct_kernel: f64,
    #[serde(default)]
    pub note: String,
}

/// A kernel profile of the whole machine over a period.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemProfile {
    /// The observation's id in the store (12 hex digits), empty until stored.
    pub id: String,
    pub label: Option<String>,
    /// Unix time of the start, in nanoseconds.
    pub started_ns: i64,
    pub requested_ns: u64,
    /// How long it sampled (less than requested when interrupted).
    pub wall_ns: u64,
    pub interrupted: bool,
    pub hostname: Option<String>,
    pub kernel_release: Option<String>,
    pub sysperf_version: String,
    pub cpus: Vec<u32>,
    pub sample_period_ns: u64,
    /// Every sample, and how they divide: kernel (idle excluded), user, idle.
    pub samples: u64,
    pub kernel_samples: u64,
    pub user_samples: u64,
    pub idle_samples: u64,
    pub lost_samples: u64,
    pub throttled: u64,
    /// The most distinct stacks kept, and the samples of stacks past it (under `[other]`).
    pub stack_cap: u64,
    pub samples_in_other: u64,
    /// Folded stacks, root first, as a benchmark profile's (`[user] comm` for user mode).
    pub stacks: BTreeMap<String, u64>,
    /// Samples by subsystem (see `profile::system`'s rules), idle and user included.
    pub subsystems: BTreeMap<String, u64>,
    /// By process, most samples first; processes past the cap are one `[other]` row.
    pub processes: Vec<ProcessRow>,
    /// Kernel samples (idle excluded) by system call, from the outermost `__x64_sys_*` (or
    /// `__arm64_sys_*`, `__ia32_sys_*`; where the handler is inlined, `ksys_*`, `__do_sys_*`)
    /// frame.
    pub syscalls: BTreeMap<String, u64>,
    /// Per-function call times (`--functions`).
    #[serde(default)]
    pub functions: Vec<FunctionCalls>,
    /// How the calls were counted and what it cost, when `--functions` was given.
    #[serde(default)]
    pub functions_method: String,
    /// Peak resident memory of sysperf at the end (VmHWM), KiB.
    pub peak_rss_kb: Option<u64>,
}
