//! The data model of a run: what the harness produces, the store keeps, and reports render.
//!
//! These are plain serializable records with units in their field names. They hold no logic
//! beyond small derived accessors; statistics live in `stats`, persistence in `store`, and
//! rendering in `report`. Kernel profiles ([`Profile`], [`SystemProfile`]) and the lines of
//! `sysperf runs` ([`RunInfo`], [`ObservationInfo`]) are records of this model too, so the
//! store below observation keeps them without knowing how they are made. The JSON shape of
//! [`Run`] is the documented `sysperf run --json` format (see `docs/json-format.md`), so field
//! renames here are format changes.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod listing;
mod observation;
mod profile;
mod trace;
pub use listing::{ObservationInfo, RunInfo, Stopped, ABANDONED_AFTER, UNCHECKED_SILENCE};
pub use observation::{Observation, SYSTEM_PROFILE_KIND};
pub use profile::{FunctionCalls, ProcessRow, Profile, SystemProfile};
pub use trace::{StoredTrace, TRACE_KIND};

/// Which role a single worker execution played in a benchmark's measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrialKind {
    /// A run used only to find the iteration count that reaches `--min-time`.
    Calibration,
    /// A run at the calibrated count whose figures are kept but not counted.
    Warmup,
    /// A counted trial: the medians and intervals come from these.
    Measured,
}

impl TrialKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TrialKind::Calibration => "calibration",
            TrialKind::Warmup => "warmup",
            TrialKind::Measured => "measured",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "calibration" => Some(TrialKind::Calibration),
            "warmup" => Some(TrialKind::Warmup),
            "measured" => Some(TrialKind::Measured),
            _ => None,
        }
    }
}

/// Tukey's fences label; a trial is never dropped for being an outlier, only labelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outlier {
    None,
    /// Outside 1.5 IQR of the quartiles.
    Mild,
    /// Outside 3 IQR of the quartiles.
    Severe,
}

impl Outlier {
    pub fn as_str(self) -> &'static str {
        match self {
            Outlier::None => "none",
            Outlier::Mild => "mild",
            Outlier::Severe => "severe",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "none" => Some(Outlier::None),
            "mild" => Some(Outlier::Mild),
            "severe" => Some(Outlier::Severe),
            _ => None,
        }
    }
}

/// Resource usage of a span, as getrusage/wait4 report it, in integer units.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub user_ns: u64,
    pub sys_ns: u64,
    /// Minor (reclaim) page faults.
    pub minflt: u64,
    /// Major page faults (needed I/O).
    pub majflt: u64,
    /// Voluntary context switches.
    pub nvcsw: u64,
    /// Involuntary context switches.
    pub nivcsw: u64,
}

impl Usage {
    /// Field-wise `self - earlier`, saturating so a clock quirk cannot wrap.
    pub fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            user_ns: self.user_ns.saturating_sub(earlier.user_ns),
            sys_ns: self.sys_ns.saturating_sub(earlier.sys_ns),
            minflt: self.minflt.saturating_sub(earlier.minflt),
            majflt: self.majflt.saturating_sub(earlier.majflt),
            nvcsw: self.nvcsw.saturating_sub(earlier.nvcsw),
            nivcsw: self.nivcsw.saturating_sub(earlier.nivcsw),
        }
    }
    pub fn plus(&self, o: &Usage) -> Usage {
        Usage {
            user_ns: self.user_ns + o.user_ns,
            sys_ns: self.sys_ns + o.sys_ns,
            minflt: self.minflt + o.minflt,
            majflt: self.majflt + o.majflt,
            nvcsw: self.nvcsw + o.nvcsw,
            nivcsw: self.nivcsw + o.nivcsw,
        }
    }
    pub fn cpu_ns(&self) -> u64 {
        self.user_ns + self.sys_ns
    }
}

/// One execution of a benchmark in its own worker process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    pub kind: TrialKind,
    pub iterations: u64,
    /// Wall time of the timed region (the hot loop only; setup and teardown excluded).
    pub wall_ns: u64,
    /// Worker plus every child it reaped, over the timed region only.
    pub usage: Usage,
    /// The reaped children's part of `usage` (None in runs made before sysperf kept it apart):
    /// `usage - children` is the parent's own time, the figure the paper's time(1) reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub children: Option<Usage>,
    /// The worker process's whole life as its parent's wait4 saw it (startup, setup,
    /// timed region, teardown), including reaped children. Used for noise accounting.
    pub worker_total: Usage,
    /// Resident set size of the test process when the timed region began: the worker, or the
    /// helper that did the operations (forks*/execs*: the paper's forks/execs program).
    pub worker_rss_bytes: u64,
    /// Number of mappings (lines of /proc/PID/maps) of that process then.
    pub worker_maps: u64,
    /// CPU migrations of the worker's main thread during the timed region (from
    /// /proc/thread-self/sched), when the kernel exposes them.
    pub migrations: Option<u64>,
    /// CPU the worker was on when the timed region began and ended.
    pub cpu_start: Option<u32>,
    pub cpu_end: Option<u32>,
    /// Tukey label among the measured trials of the same benchmark; `None` for other kinds.
    pub outlier: Outlier,
    /// Set when the trial did not complete (timeout, crash, setup error); its figures are 0.
    pub error: Option<String>,
    /// Counters over the timed region, when the run observed them (`sysperf run --observe`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<Counters>,
    /// The round a counted trial ran in (from 0): each round runs one trial of every target
    /// in a shuffled order. None for calibration and warm-up trials and in older runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<u32>,
    /// When the worker was started, Unix nanoseconds (None in older runs): with the round it
    /// shows when in the run each trial sampled the machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_ns: Option<i64>,
}

#[cfg(test)]
impl Trial {
    /// A measured trial of `iterations` in `wall_ns`, nothing else known: the suites' tests
    /// build the trials their derived figures read from it.
    pub(crate) fn measured(iterations: u64, wall_ns: u64) -> Trial {
        Trial {
            kind: TrialKind::Measured,
            iterations,
            wall_ns,
            usage: Usage::default(),
            children: None,
            worker_total: Usage::default(),
            worker_rss_bytes: 0,
            worker_maps: 0,
            migrations: None,
            cpu_start: None,
            cpu_end: None,
            outlier: Outlier::None,
            error: None,
            counters: None,
            round: None,
            started_ns: None,
        }
    }
}

/// What `sysperf run --observe` counts over one trial's timed region.
///
/// The /proc figures are system-wide deltas (every CPU, every process), read by the worker just
/// outside the timed region, in every trial. The perf counters are the worker's own and its
/// children's (inherited, so forked, piped and exec'd children count); they cost context
/// switches and forks something, so they are taken in the warm-up trial (in every trial when
/// there is none) and are None elsewhere.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// perf_event_open software counters (scaled if the kernel multiplexed them); None when
    /// not taken in this trial, or refused (`perf_error` says why).
    pub task_clock_ns: Option<u64>,
    pub context_switches: Option<u64>,
    pub cpu_migrations: Option<u64>,
    pub page_faults: Option<u64>,
    /// Hardware counters; None where the CPU or hypervisor does not expose them.
    pub cycles: Option<u64>,
    pub instructions: Option<u64>,
    /// True when some perf counter ran for less time than it was enabled and was scaled.
    pub perf_multiplexed: bool,
    /// Why the perf counters are missing, when they are.
    pub perf_error: Option<String>,
    /// /proc/stat: interrupts of every source on every CPU, softirqs, context switches,
    /// and processes created, system-wide.
    pub interrupts: u64,
    pub softirqs: u64,
    pub system_context_switches: u64,
    pub processes_created: u64,
    /// /proc/interrupts: interrupts on the CPUs the trial was pinned to; None when unpinned.
    pub interrupts_on_trial_cpus: Option<u64>,
    /// /proc/interrupts by source (IRQ number, or LOC, RES, CAL, TLB, ...), nonzero ones only.
    pub interrupts_by_source: BTreeMap<String, u64>,
    /// /proc/vmstat.
    pub pgfault: u64,
    pub pgmajfault: u64,
    pub pgpgin_kib: u64,
    pub pgpgout_kib: u64,
    pub pswpin_pages: u64,
    pub pswpout_pages: u64,
    /// /proc/diskstats, whole disks only (partitions would count twice).
    pub disk_reads: u64,
    pub disk_writes: u64,
    pub disk_read_bytes: u64,
    pub disk_write_bytes: u64,
    /// /proc/softirqs: NET_RX and NET_TX softirqs raised on every CPU (the network suite's
    /// protocol processing, §3.2.7 of the 4.3BSD paper); None in runs before they were kept.
    #[serde(default)]
    pub net_rx_softirqs: Option<u64>,
    #[serde(default)]
    pub net_tx_softirqs: Option<u64>,
    /// /proc/stat: time every CPU spent in softirqs, from the `cpu` line's softirq ticks
    /// (USER_HZ, so a tick's resolution: 10 ms at 100 Hz), in nanoseconds.
    #[serde(default)]
    pub softirq_time_ns: Option<u64>,
}

/// Medians of [`Counters`]: per trial over the measured trials, per operation over the trials
/// with perf counters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterSummary {
    /// Measured trials that carried counters (the source of the system-wide figures).
    pub trials: usize,
    /// Trials that carried perf counters (the source of the per-operation perf figures): the
    /// warm-up, or every measured trial of a run without one.
    pub perf_trials: usize,
    pub task_clock_ns_per_op: Option<f64>,
    pub context_switches_per_op: Option<f64>,
    pub cpu_migrations_per_op: Option<f64>,
    pub page_faults_per_op: Option<f64>,
    pub cycles_per_op: Option<f64>,
    pub instructions_per_op: Option<f64>,
    /// System-wide interrupts during one trial's timed region, and per operation.
    pub interrupts_per_trial: f64,
    pub interrupts_per_op: f64,
    pub softirqs_per_trial: f64,
    /// Interrupts on the trial's own CPUs, when it was pinned.
    pub interrupts_on_trial_cpus_per_trial: Option<f64>,
    /// Whole-disk reads plus writes completed during one trial.
    pub disk_ios_per_trial: f64,
}

/// A point estimate with its confidence interval, all in the same unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The median over measured trials.
    pub median: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    /// The confidence the interval actually achieves (0.95 when enough trials exist; with
    /// few trials the distribution-free interval is [min, max] and its exact level is stored).
    pub ci_level: f64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    /// Coefficient of variation (sample standard deviation / mean), 0 for a single trial.
    pub cv: f64,
    pub n: usize,
}

impl Estimate {
    /// One value everywhere (median, bounds, extremes, mean), no spread: a published figure
    /// (`n` 0, `ci_level` 0) or a fixture's; `ci_level` and `n` say what it stands for.
    pub fn single(v: f64, ci_level: f64, n: usize) -> Estimate {
        Estimate {
            median: v,
            ci_low: v,
            ci_high: v,
            ci_level,
            min: v,
            max: v,
            mean: v,
            cv: 0.0,
            n,
        }
    }
}

/// CPU time per operation of the benchmark's process and every child it reaped together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WholeCpu {
    pub user_ns_per_op: Estimate,
    pub sys_ns_per_op: Estimate,
}

/// Per-operation summary of one benchmark, derived from its measured trials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Wall nanoseconds per operation, after overhead subtraction.
    pub wall_ns_per_op: Estimate,
    /// The benchmark process's own CPU time per operation, without the children it reaped:
    /// what time charged in the paper (its Table 2's User and System) for the tests whose
    /// program waited for no child; for the others the paper's columns are `whole`
    /// (`bench::charged` picks). In runs made before sysperf kept children apart (`whole`
    /// absent), these include the children.
    pub user_ns_per_op: Estimate,
    pub sys_ns_per_op: Estimate,
    /// The process and its reaped children together (the echo child of pipeback, the forked
    /// and exec'd processes); None in runs made before sysperf kept children apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub whole: Option<WholeCpu>,
    /// Medians over measured trials of the per-operation counts.
    pub minflt_per_op: f64,
    pub majflt_per_op: f64,
    pub csw_per_op: f64,
    pub nvcsw_per_op: f64,
    pub nivcsw_per_op: f64,
    pub migrations_per_op: Option<f64>,
    pub worker_rss_bytes: u64,
    pub worker_maps: u64,
    /// Counters per operation, when the run observed them (`sysperf run --observe`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<CounterSummary>,
}

impl Summary {
    /// A summary of the three times per operation alone, every count zero and nothing else
    /// known (what the paper publishes of a test, or a test's made-up figures).
    pub fn of_times(wall: Estimate, user: Estimate, sys: Estimate) -> Summary {
        Summary {
            wall_ns_per_op: wall,
            user_ns_per_op: user,
            sys_ns_per_op: sys,
            whole: None,
            minflt_per_op: 0.0,
            majflt_per_op: 0.0,
            csw_per_op: 0.0,
            nvcsw_per_op: 0.0,
            nivcsw_per_op: 0.0,
            migrations_per_op: None,
            worker_rss_bytes: 0,
            worker_maps: 0,
            counters: None,
        }
    }
}

/// Everything measured for one benchmark in a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchResult {
    pub id: String,
    pub group: String,
    /// Operations one iteration of the hot loop performs (1 except for the paging tests).
    pub ops_per_iteration: u64,
    /// Operations in the paper's run, to which table seconds are scaled.
    pub paper_count: u64,
    /// What one operation is ("call", "round trip", "fork", "touch", ...).
    pub unit: String,
    /// "same", "spread", "free", or "single" for one-process benchmarks.
    pub placement: String,
    /// CPUs the benchmark's processes were pinned to, in order (parent first).
    pub cpus: Vec<u32>,
    /// Every worker execution, in the order run: calibration, warm-up, measured.
    pub trials: Vec<Trial>,
    /// Absent when no measured trial succeeded.
    pub summary: Option<Summary>,
    /// Set when the benchmark as a whole failed.
    pub error: Option<String>,
}

/// A warning attached to a run (noise, failures, environment).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Warning {
    /// The benchmark it concerns, or None for the whole run.
    pub bench: Option<String>,
    /// Machine-readable kind, stored and exported as its string ("high_cv", "busy_cpu", ...).
    pub kind: WarningKind,
    pub message: String,
}

/// Seconds for the paper's operation count from nanoseconds per operation.
pub fn scaled_s(ns_per_op: f64, paper_count: u64) -> f64 {
    ns_per_op * paper_count as f64 / 1e9
}

/// What a warning is about. Serialized as the strings runs have always stored, so stored runs,
/// exports and `--json` read the same; a kind this version does not know (from an import of a
/// newer version's run) is kept as it was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum WarningKind {
    /// The timer and loop overhead could not be measured; nothing was subtracted.
    Overhead,
    /// A benchmark's calibration failed.
    Failed,
    /// Some counted trials failed.
    TrialFailed,
    /// A test's trials vary, the machine's speed changes taken out, well beyond the other
    /// tests' (`speed`; before #30: more than 5%, whatever the machine did).
    HighCv,
    /// Other work used the benchmark's CPUs.
    BusyCpu,
    /// Other work used the machine's other CPUs (those the benchmark was not placed on),
    /// which share caches, memory and, on a VM, perhaps host cores with its own.
    BusyMachine,
    /// The hypervisor took CPU time (steal).
    Steal,
    /// A profile could not be made.
    Profile,
    /// A suite cannot run here and was skipped.
    SuiteSkipped,
    /// `--observe` had no perf counters.
    Observe,
    /// The run was stopped before its end.
    Interrupted,
    /// `--precision` was not reached for a benchmark before `--max-time` ran out.
    Imprecise,
    /// `--settle` ran out before the machine was quiet.
    NotSettled,
    /// The machine changed speed during the run (one line for the run: `speed`).
    MachineNoise,
    /// Other processes used a test's own channel while it ran (#41: connected to the
    /// `net.connect` server's listening socket). Their cost is in its figures, but a few
    /// connections among a trial's thousands cost little: not taken for other work beside
    /// the test (`disturbs`), whose time is in every operation.
    Intruded,
    /// A kind this version does not know, kept as written.
    Other(String),
}

impl WarningKind {
    /// Whether the warning says that other work ran beside the test while it ran: other
    /// processes on its CPUs (`busy_cpu`) or on the machine's other CPUs (`busy_machine`), or
    /// the hypervisor (`steal`). Its figure then stands for that work as much as for the
    /// system: compare gives two single runs no verdict, and `changes` leaves it out.
    pub fn disturbs(&self) -> bool {
        matches!(
            self,
            WarningKind::BusyCpu | WarningKind::BusyMachine | WarningKind::Steal
        )
    }

    /// The stored names of the kinds that [`disturb`](Self::disturbs).
    pub fn disturbing() -> impl Iterator<Item = &'static str> {
        Self::KNOWN
            .iter()
            .filter(|(k, _)| k.disturbs())
            .map(|(_, name)| *name)
    }

    pub(crate) const KNOWN: [(WarningKind, &'static str); 15] = [
        (WarningKind::Overhead, "overhead"),
        (WarningKind::Failed, "failed"),
        (WarningKind::TrialFailed, "trial_failed"),
        (WarningKind::HighCv, "high_cv"),
        (WarningKind::BusyCpu, "busy_cpu"),
        (WarningKind::BusyMachine, "busy_machine"),
        (WarningKind::Steal, "steal"),
        (WarningKind::Profile, "profile"),
        (WarningKind::SuiteSkipped, "suite_skipped"),
        (WarningKind::Observe, "observe"),
        (WarningKind::Interrupted, "interrupted"),
        (WarningKind::Imprecise, "imprecise"),
        (WarningKind::NotSettled, "not_settled"),
        (WarningKind::MachineNoise, "machine_noise"),
        (WarningKind::Intruded, "intruded"),
    ];

    /// Whether the warning says that a part of what was asked for was not done here (a suite
    /// that cannot run, perf counters or profiles the process may not open): the run is then
    /// partial, and `run` exits 1 after storing and printing the rest (README, "Privileges").
    pub fn is_left_out(&self) -> bool {
        matches!(
            self,
            WarningKind::Profile | WarningKind::SuiteSkipped | WarningKind::Observe
        )
    }

    pub fn as_str(&self) -> &str {
        match self {
            WarningKind::Other(s) => s,
            known => WarningKind::KNOWN
                .iter()
                .find(|(k, _)| k == known)
                .map(|(_, s)| *s)
                .unwrap_or(""),
        }
    }
}

impl From<String> for WarningKind {
    fn from(s: String) -> Self {
        WarningKind::KNOWN
            .iter()
            .find(|(_, name)| *name == s)
            .map(|(k, _)| k.clone())
            .unwrap_or(WarningKind::Other(s))
    }
}

impl From<&str> for WarningKind {
    fn from(s: &str) -> Self {
        WarningKind::from(s.to_string())
    }
}

impl From<WarningKind> for String {
    fn from(k: WarningKind) -> String {
        k.as_str().to_string()
    }
}

impl std::fmt::Display for WarningKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A figure computed from several results, with the formula that produced it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Derived {
    pub name: String,
    pub value: f64,
    pub unit: String,
    pub formula: String,
    /// Why the inputs cannot support the figure (one trial, an interval that includes 0, a
    /// negative cost): then it prints as "n/a" with this reason, and `value` is only the
    /// arithmetic. Absent when the figure stands (and in runs made before sysperf said so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub na: Option<String>,
}

/// How the timer and loop overhead were measured and accounted for.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Overhead {
    /// Median cost of one pair of clock reads around an empty region.
    pub timer_ns: f64,
    /// Median cost of one empty iteration of the harness's loop.
    pub loop_ns_per_iteration: f64,
}

/// Wall time of a trial less the timer overhead (once) and the loop overhead (per iteration);
/// never below zero. Here, beside the records it reads, because the harness summarises with
/// it and the comparisons and suites, above the harness or beside it, read runs with it (#46).
pub fn adjusted_wall_ns(t: &Trial, overhead: Option<&Overhead>) -> f64 {
    let o = overhead
        .map(|o| o.timer_ns + o.loop_ns_per_iteration * t.iterations as f64)
        .unwrap_or(0.0);
    (t.wall_ns as f64 - o).max(0.0)
}

/// The parameters a run was made with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunParams {
    pub selection: Vec<String>,
    /// The `--suite` patterns as given (empty for the core suite alone, and then not written, so
    /// that runs without suites serialize as they did before suites existed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suites: Vec<String>,
    pub trials: u32,
    pub min_time_s: f64,
    pub quick: bool,
    pub placement: String,
    pub cpus: Option<Vec<u32>>,
    pub timeout_s: f64,
    /// How the counted trials were ordered: "interleaved" (shuffled rounds) or "sequential".
    /// Absent in runs made before rounds existed (sequential, then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<String>,
    /// The seed of the rounds' shuffled order (replays it with `run --seed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// `run --repeat N`: the id shared by the N runs of one invocation, and this run's place
    /// among them (from 0). Absent for a run made alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicate: Option<u32>,
    /// `run --precision PCT`: the interval half-width, in percent of the median, that rounds
    /// were added for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision_pct: Option<f64>,
    /// `run --settle S`: the longest wait, in seconds, for a quiet machine before the run
    /// (what the wait found is in the run's notes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settle_s: Option<f64>,
    /// A side of `sysperf ab`: which, its partner run, and how the two were measured. Absent
    /// for other runs. Such a run never enters the machine's run-to-run variance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ab: Option<AbSide>,
}

/// The options that change a test's level ([`RunParams::level_values`]).
pub const LEVEL_OPTIONS: &[&str] = &["trial length", "quick", "order", "placement", "cpus"];

impl RunParams {
    /// Whether a run made with `other` measured as a run made with these parameters did: the
    /// same options ([`RunParams::options`]: selection and suites in any order, budget,
    /// order, precision and placement) and neither is a side of `ab`. Only such runs share a
    /// run-to-run variance (#30): another order or trial length gives another level and
    /// another spread.
    pub fn measures_like(&self, other: &RunParams) -> bool {
        self.ab.is_none() && other.ab.is_none() && self.options() == other.options()
    }

    /// What [`RunParams::measures_like`] compares, in one value: the key of a test's history
    /// in `sysperf changes` besides its host (#42), read from the store by the same
    /// [`RunOptions::new`].
    pub fn options(&self) -> RunOptions {
        RunOptions::new(
            &self.selection,
            &self.suites,
            self.trials,
            self.min_time_s,
            self.quick,
            self.order.as_deref(),
            self.precision_pct,
            &self.placement,
            self.cpus.clone(),
        )
    }

    /// The measuring options in which a run made with `other` differs from one made with
    /// these (`ab` sides aside): the selection and suites (in any order), budget (trials,
    /// trial length, quick), order, precision and placement (mode and CPUs), each as
    /// (option, this run's value, the other's). A comparison between runs that differ in any
    /// gives no verdict (#42): they measured differently, not the machine differently.
    pub fn option_diffs(&self, other: &RunParams) -> Vec<(&'static str, String, String)> {
        self.option_values()
            .into_iter()
            .zip(other.option_values())
            .filter(|((_, a), (_, b))| a != b)
            .map(|((o, a), (_, b))| (o, a, b))
            .collect()
    }

    /// The values of the options of [`RunParams::option_values`] that change what a test's
    /// figure is (its level), not only how precisely it is known: trial length, quick, order
    /// and placement. Two runs whose level values are equal measured each test alike and may
    /// be judged against each other, though they differ in the selection, the number of
    /// trials or `--precision`; they still do not share a run-to-run variance. One value per
    /// run rather than a comparison per pair: two columns of 30 runs compare a few distinct
    /// values, not 900 pairs formatted again for each test (#44).
    pub fn level_values(&self) -> Vec<(&'static str, String)> {
        self.option_values()
            .into_iter()
            .filter(|(o, _)| LEVEL_OPTIONS.contains(o))
            .collect()
    }

    /// The measuring options as they are shown, in a fixed order: selection and suites
    /// (sorted), trials, trial length, quick, order, precision, placement and CPUs.
    pub fn option_values(&self) -> Vec<(&'static str, String)> {
        let sorted = |v: &[String]| {
            let mut v = v.to_vec();
            v.sort();
            v.join(" ")
        };
        vec![
            ("selection", sorted(&self.selection)),
            ("suites", sorted(&self.suites)),
            ("trials", self.trials.to_string()),
            (
                "trial length",
                if self.min_time_s > 0.0 {
                    format!("{} s", self.min_time_s)
                } else {
                    "default".into()
                },
            ),
            ("quick", self.quick.to_string()),
            (
                "order",
                self.order.clone().unwrap_or_else(|| "sequential".into()),
            ),
            (
                "precision",
                self.precision_pct
                    .map_or("none".into(), |p| format!("{p}%")),
            ),
            ("placement", self.placement.clone()),
            (
                "cpus",
                self.cpus.as_ref().map_or("any".into(), |c| {
                    c.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
                }),
            ),
        ]
    }
}

/// The options a run was measured with that decide its level and spread (#30, #42): the
/// selection and suites (sorted: the order they were typed in does not matter), the budget
/// (trials, trial length, quick), the order of the trials ("sequential" when the run does not
/// say: runs made before rounds existed), the precision asked for, and the placement (mode and
/// CPUs). Not the seed, the group of `run --repeat`, the timeout or the settle time, which do
/// not change what a run measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunOptions {
    pub selection: Vec<String>,
    pub suites: Vec<String>,
    pub trials: u32,
    pub min_time_s: f64,
    pub quick: bool,
    pub order: String,
    pub precision_pct: Option<f64>,
    pub placement: String,
    pub cpus: Option<Vec<u32>>,
}

impl RunOptions {
    /// The one constructor, for a run's parameters and for the fields the store reads out of
    /// its stored parameters, so that both compare alike.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        selection: &[String],
        suites: &[String],
        trials: u32,
        min_time_s: f64,
        quick: bool,
        order: Option<&str>,
        precision_pct: Option<f64>,
        placement: &str,
        cpus: Option<Vec<u32>>,
    ) -> RunOptions {
        let sorted = |v: &[String]| {
            let mut v = v.to_vec();
            v.sort();
            v
        };
        RunOptions {
            selection: sorted(selection),
            suites: sorted(suites),
            trials,
            min_time_s,
            quick,
            order: order.unwrap_or("sequential").to_string(),
            precision_pct,
            placement: placement.to_string(),
            cpus,
        }
    }

    /// A text that two options share exactly when they are equal (`==`), for keying maps:
    /// the floats by value (0.0 and -0.0 alike, as `==` has them).
    pub fn key(&self) -> String {
        let float = |f: f64| {
            if f == 0.0 {
                0f64.to_bits()
            } else {
                f.to_bits()
            }
        };
        format!(
            "{:?}|{:?}|{}|{:x}|{}|{}|{:?}|{}|{:?}",
            self.selection,
            self.suites,
            self.trials,
            float(self.min_time_s),
            self.quick,
            self.order,
            self.precision_pct.map(float),
            self.placement,
            self.cpus
        )
    }

    /// The options in a few words, for telling two histories of one test apart: "5 trials of
    /// 0.1 s, interleaved, 6 tests", with the precision, the quick budget and the CPUs when
    /// set.
    pub fn describe(&self) -> String {
        let mut s = if self.quick {
            "quick".to_string()
        } else {
            format!(
                "{} trial{} of {} s",
                self.trials,
                if self.trials == 1 { "" } else { "s" },
                self.min_time_s
            )
        };
        s.push_str(&format!(", {}", self.order));
        if let Some(p) = self.precision_pct {
            s.push_str(&format!(", precision {p}%"));
        }
        if let Some(c) = &self.cpus {
            let c: Vec<String> = c.iter().map(u32::to_string).collect();
            s.push_str(&format!(", CPUs {}", c.join(",")));
        }
        // Two histories of one test can differ by the tests run beside it alone.
        match self.selection.len() {
            n if n > 6 => s.push_str(&format!(", {n} tests")),
            _ => s.push_str(&format!(", run with {}", self.selection.join(" "))),
        }
        if !self.suites.is_empty() {
            s.push_str(&format!(", suites {}", self.suites.join(",")));
        }
        s
    }
}

/// A side of a paired A/B (`sysperf ab`): both sides' trials ran in the same rounds, so the
/// comparison of the two runs is paired round by round (see `paired`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AbSide {
    /// "a" (the baseline: switch off, or the first command) or "b".
    pub side: String,
    /// The other side's run id.
    pub partner: String,
    /// "paired" (A and B back to back in each round, in a random order) or "duet" (at the
    /// same time on two CPUs, swapped every round).
    pub design: String,
    /// The side's command as every output names it (`sysperf ab CMD...`, #43): its
    /// `--command-name`, or the line as typed; None for a switch's side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

/// Why a run label would be ambiguous, or None. `latest` always names the newest run, and
/// four or more hexadecimal digits are read as a run id or its prefix before any label, so
/// such a label could find another run than the one it names. The one rule for `run --label`
/// and for imported runs; a reference run's name is refused by both as well.
pub fn ambiguous_label(label: &str) -> Option<&'static str> {
    if label == "latest" {
        Some("'latest' always names the newest run")
    } else if label.len() >= 4 && label.bytes().all(|b| b.is_ascii_hexdigit()) {
        Some("four or more hexadecimal digits are read as a run id or its prefix")
    } else {
        None
    }
}

/// Machine fingerprint: everything that makes two runs comparable or not.
/// Values are strings or small records as read from /proc and /sys; absent facts are None.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub hostname: Option<String>,
    pub os: Option<String>,
    pub kernel_release: Option<String>,
    pub kernel_version: Option<String>,
    pub kernel_cmdline: Option<String>,
    pub arch: Option<String>,
    pub cpu_model: Option<String>,
    /// Physical cores and hardware threads (logical CPUs online).
    pub cores: Option<u32>,
    pub threads: Option<u32>,
    pub memory_bytes: Option<u64>,
    pub virtualization: Option<String>,
    pub clocksource: Option<String>,
    pub cpufreq_governor: Option<String>,
    pub smt: Option<String>,
    pub thp: Option<String>,
    /// /sys/devices/system/cpu/vulnerabilities/*: name -> status line.
    pub vulnerabilities: BTreeMap<String, String>,
    /// Effective CPU limit of this process's cgroup, in CPUs (quota/period), None if unlimited.
    pub cgroup_cpu_limit: Option<f64>,
    /// Memory limit of this process's cgroup in bytes, None if unlimited.
    pub cgroup_memory_limit_bytes: Option<u64>,
    pub cgroup_version: Option<String>,
    /// 1, 5 and 15 minute load averages at the start of the run.
    pub loadavg: Option<[f64; 3]>,
    /// The timer tick rate, CONFIG_HZ of the kernel's build configuration. This and the
    /// facts below (#19) are not written when unknown, so runs made before them export as
    /// they did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hz: Option<u32>,
    /// The tick's mode: `periodic` (CONFIG_HZ_PERIODIC), `idle` (stopped on idle CPUs),
    /// `full` (also on busy `nohz_full` CPUs), or `off` (`nohz=off` on the command line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nohz: Option<String>,
    /// FNV-1a 64 (16 hex digits) of the kernel's build configuration's set options, sorted
    /// (/proc/config.gz or /boot/config-RELEASE).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_config_hash: Option<String>,
    /// The set options themselves (`CONFIG_X` -> value). Not written with a run: the store
    /// keeps one copy per distinct hash and puts it back when it reads a run.
    #[serde(skip)]
    pub kernel_config: BTreeMap<String, String>,
    /// The sysctls that matter to the benchmarks (`crate::fingerprint::SYSCTLS`): name -> value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sysctls: BTreeMap<String, String>,
    /// The CPU's microcode revision (/proc/cpuinfo `microcode`, the first CPU's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub microcode: Option<String>,
    /// How the kernel split CPU time into user and system (`crate::cpusplit`): from its
    /// configuration, or a calibration when none was readable (#45). Absent in runs made
    /// before, whose stored configuration says it instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_split: Option<String>,
}

/// How much a doctor finding matters for the figures of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Likely to make results noisy or not comparable; fix it before trusting small changes.
    Warn,
    /// Worth knowing when comparing runs (recorded, nothing necessarily wrong).
    Info,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Warn => "warn",
            Severity::Info => "info",
        }
    }
}

/// The two variance components of one test on one machine (host name, kernel and CPU model),
/// estimated from its stored runs (at least three, each with two or more trials): what a
/// comparison of one run a side must allow for. On the log scale, so `sqrt(var)` is a CV.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VarianceEstimate {
    pub test: String,
    /// Variance of a trial's log time within a run (pooled over the runs).
    pub within_var: f64,
    /// Variance of a run's log median across runs, less what its trials alone make its
    /// median vary (clipped at 0: see `clipped`).
    pub between_var: f64,
    /// Runs and trials the estimate came from.
    pub runs: usize,
    pub trials: usize,
    /// When it was estimated (ns since the epoch).
    pub updated_ns: i64,
    /// The standard deviation of the runs' log medians: how far apart the medians of two
    /// single runs of the test lie (times sqrt 2). Computed from the runs when shown; the
    /// store does not keep it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_sd: Option<f64>,
    /// The lowest and highest of the runs' medians, ns per operation (not stored either).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_range_ns: Option<[f64; 2]>,
    /// The run-to-run component came out below 0 (the medians varied less than their trials
    /// predict) and was clipped to 0: it is not known to be 0, and comparisons then use the
    /// medians' own spread instead.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub clipped: bool,
}

impl VarianceEstimate {
    pub fn within_cv(&self) -> f64 {
        self.within_var.sqrt()
    }
    pub fn between_cv(&self) -> f64 {
        self.between_var.sqrt()
    }
    /// Whether the run-to-run component was clipped to 0 (a stored estimate of exactly 0
    /// was).
    pub fn is_clipped(&self) -> bool {
        self.clipped || self.between_var == 0.0
    }
}

/// One thing `sysperf doctor` found about the machine, with what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// Machine-readable check name: "governor", "turbo", "smt", "load", ...
    pub id: String,
    pub severity: Severity,
    /// One line: what was found.
    pub title: String,
    /// Why it matters for the measurements.
    pub detail: String,
    /// The concrete command or setting that addresses it.
    pub fix: String,
}

fn measured() -> String {
    "measured".to_string()
}

/// A whole run: what `sysperf run --json` prints and the store keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// 12 hex digits, random; unique across machines so runs can be merged.
    pub id: String,
    pub label: Option<String>,
    /// Unix time in nanoseconds.
    pub started_ns: i64,
    pub ended_ns: Option<i64>,
    /// False when the run was interrupted or still in progress.
    pub complete: bool,
    pub sysperf_version: String,
    /// Where the figures come from: "measured" by sysperf, or "published" (a paper's table,
    /// shipped as a read-only reference run: no trials, no intervals).
    #[serde(default = "measured")]
    pub source: String,
    /// For published runs, the paper and table the figures are copied from.
    #[serde(default)]
    pub citation: Option<String>,
    pub params: RunParams,
    pub fingerprint: Fingerprint,
    pub overhead: Option<Overhead>,
    pub results: Vec<BenchResult>,
    pub derived: Vec<Derived>,
    pub warnings: Vec<Warning>,
    /// What `sysperf doctor` found at the start of the run (absent in runs stored before it
    /// existed, which read back as empty).
    #[serde(default)]
    pub findings: Vec<Finding>,
    /// The sweeps of `sysperf run --suite` (BBN, Feder, scaling, ...): one curve each, x
    /// against y, every point with its raw trials. Empty for runs of the core suite alone
    /// (and then not written).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<Series>,
    /// What a suite recorded about how it ran here (commands it found and used, the cgroup
    /// interface it limited memory with, why it skipped something): facts, not warnings.
    /// Not written when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Run {
    /// Whether other work ran beside test `id` in this run: a warning for it of a kind that
    /// [`disturbs`](WarningKind::disturbs): other processes on its CPUs (busy_cpu), on the
    /// machine's other CPUs (busy_machine: a hog on CPU 0 made csw on CPU 1 5% slower on this
    /// VM), or the hypervisor (steal, over 2%).
    pub fn disturbed(&self, id: &str) -> bool {
        self.warnings
            .iter()
            .any(|w| w.kind.disturbs() && w.bench.as_deref() == Some(id))
    }

    /// [`Self::disturbed`] by other processes only (busy_cpu, busy_machine), steal time not
    /// counted: what a speed-adjusted figure is refused for (#42; its speed, the run's other
    /// tests, met the hypervisor's steal as the test did).
    pub fn disturbed_by_work(&self, id: &str) -> bool {
        self.warnings.iter().any(|w| {
            w.kind.disturbs() && w.kind != WarningKind::Steal && w.bench.as_deref() == Some(id)
        })
    }
}

/// What the y of a series is, computed from each point's per-operation wall time (or, for
/// [`YKind::CpuNs`], CPU time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum YKind {
    /// Wall nanoseconds per operation (lower is better).
    CostNs,
    /// Bytes per second: the point's `bytes_per_op` over the wall time per operation
    /// (higher is better).
    BytesPerSec,
    /// Operations per hour (higher is better): processes per hour in a time-sharing work-load.
    PerHour,
    /// CPU nanoseconds per operation (lower is better): user + system time of the point's
    /// process and the children it reaped, for the papers' CPU-time figures (Feder's Table
    /// III), which count neither waiting for a device nor for the CPU.
    CpuNs,
    /// Operations per second (higher is better): the inverse of the wall time per operation,
    /// for a peer that prints a rate (perf bench's futex hash and lock-pi: operations per
    /// second of each thread).
    OpsPerSec,
}

impl YKind {
    /// Whether a larger y is the better one (throughputs) rather than the worse (costs).
    pub fn higher_is_better(self) -> bool {
        !matches!(self, YKind::CostNs | YKind::CpuNs)
    }
    /// The y of one trial from its per-operation wall nanoseconds; None when undefined
    /// (a zero time, or a CPU-time y, which comes from the trial's usage: see
    /// [`YKind::y_of_trial`]).
    pub fn y_of(self, wall_ns_per_op: f64, bytes_per_op: f64) -> Option<f64> {
        match self {
            YKind::CostNs => Some(wall_ns_per_op),
            YKind::CpuNs => None,
            _ if wall_ns_per_op <= 0.0 => None,
            YKind::BytesPerSec => Some(bytes_per_op * 1e9 / wall_ns_per_op),
            YKind::PerHour => Some(3600e9 / wall_ns_per_op),
            YKind::OpsPerSec => Some(1e9 / wall_ns_per_op),
        }
    }
    /// The y of one trial from its per-operation wall and CPU nanoseconds.
    pub fn y_of_trial(
        self,
        wall_ns_per_op: f64,
        cpu_ns_per_op: f64,
        bytes_per_op: f64,
    ) -> Option<f64> {
        match self {
            YKind::CpuNs => Some(cpu_ns_per_op),
            _ => self.y_of(wall_ns_per_op, bytes_per_op),
        }
    }
    pub fn unit(self) -> &'static str {
        match self {
            YKind::CostNs | YKind::CpuNs => "ns",
            YKind::BytesPerSec => "B/s",
            YKind::PerHour => "per hour",
            YKind::OpsPerSec => "ops/s",
        }
    }
}

/// One curve of a suite: a sweep of x with one measured benchmark per point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// The suite it belongs to ("bbn", "feder", "libs", "net", "scaling", "tty", "vm", "workload").
    pub suite: String,
    /// Registry id of the series, unique across suites ("bbn.pipe").
    pub id: String,
    /// Curves with the same figure id are drawn on one chart ("bbn.throughput").
    pub figure: String,
    pub figure_title: String,
    /// The curve's legend ("pipe", "FIFO with an 8-byte header").
    pub curve: String,
    /// The paper's experiment this reproduces, with its table or figure number.
    pub paper: String,
    pub x_name: String,
    pub x_unit: String,
    /// Drawn on a logarithmic x axis (block sizes, table sizes).
    pub x_log: bool,
    pub y_kind: YKind,
    /// What one operation of a point is ("block", "lookup", "process").
    pub unit: String,
    pub points: Vec<SeriesPoint>,
    /// The paper's own figures for this curve as printed, `[x, y]` in this series' units
    /// (y converted to [`YKind::unit`]), and the system they were measured on; empty where
    /// the paper printed none. Reports draw them beside today's curve.
    #[serde(default)]
    pub paper_points: Vec<[f64; 2]>,
    #[serde(default)]
    pub paper_system: Option<String>,
}

/// One point of a series: x, the measured benchmark behind it, and its y with an interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesPoint {
    pub x: f64,
    /// A name for x when it is categorical ("cooked", "raw") or worth spelling out.
    pub label: Option<String>,
    /// Bytes one operation moves, for throughputs (0 where it means nothing).
    pub bytes_per_op: f64,
    /// The series' y (see [`YKind`]): median over the measured trials with its interval;
    /// None when no trial succeeded.
    pub y: Option<Estimate>,
    /// The benchmark measured at this point, with every trial (its id is `series@x`).
    pub result: BenchResult,
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil),
/// for the dates `fleet` selects by and the validity of a pinned TLS certificate.
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The proleptic Gregorian (year, month, day) of a count of days since 1970-01-01 (Howard
/// Hinnant's civil_from_days), for the dates `report` prints and `fleet` groups by.
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ambiguous_labels_are_latest_and_id_like_hex() {
        for bad in ["latest", "cafe", "CAFE", "0123", "0123456789ab"] {
            assert!(ambiguous_label(bad).is_some(), "{bad}");
        }
        for ok in ["Latest", "abc", "cafe-1", "v6.12", "before", "a1"] {
            assert!(ambiguous_label(ok).is_none(), "{ok}");
        }
    }

    /// #42: a history's options are what `measures_like` compares, and their key tells them
    /// apart exactly when they differ.
    #[test]
    fn options_are_what_measures_like_compares() {
        let base = RunParams {
            selection: vec!["syscall".into(), "csw".into()],
            trials: 5,
            min_time_s: 0.1,
            placement: "same".into(),
            ..RunParams::default()
        };
        // No option: the order of the lists, the seed, the group, the timeout, the settle
        // time; and a run without an order is a sequential one.
        let mut alike = base.clone();
        alike.selection.reverse();
        alike.seed = Some(3);
        alike.group = Some("0123456789ab".into());
        alike.replicate = Some(1);
        alike.timeout_s = 9.0;
        alike.settle_s = Some(30.0);
        alike.order = Some("sequential".into());
        assert!(base.measures_like(&alike));
        assert_eq!(base.options(), alike.options());
        assert_eq!(base.options().key(), alike.options().key());
        let changes: [fn(&mut RunParams); 9] = [
            |p| p.selection.push("pipeback4".into()),
            |p| p.suites = vec!["vm".into()],
            |p| p.trials = 3,
            |p| p.min_time_s = 0.2,
            |p| p.quick = true,
            |p| p.order = Some("interleaved".into()),
            |p| p.precision_pct = Some(2.0),
            |p| p.placement = "spread".into(),
            |p| p.cpus = Some(vec![1]),
        ];
        for (i, change) in changes.iter().enumerate() {
            let mut other = base.clone();
            change(&mut other);
            assert!(!base.measures_like(&other), "change {i}");
            assert_ne!(base.options().key(), other.options().key(), "change {i}");
        }
        // A side of `ab` measures like no run, whatever its options.
        let mut side = base.clone();
        side.ab = Some(AbSide {
            side: "b".into(),
            partner: "0123456789ab".into(),
            design: "paired".into(),
            command: None,
        });
        assert!(!base.measures_like(&side) && !side.measures_like(&side));
        // -0.0 == 0.0, and their keys are one.
        let (mut z, mut nz) = (base.clone(), base.clone());
        z.min_time_s = 0.0;
        nz.min_time_s = -0.0;
        assert!(z.measures_like(&nz));
        assert_eq!(z.options().key(), nz.options().key());
    }

    #[test]
    fn warning_kinds_serialize_as_the_strings_runs_have_always_stored() {
        for (kind, name) in WarningKind::KNOWN {
            assert_eq!(serde_json::to_string(&kind).unwrap(), format!("\"{name}\""));
            assert_eq!(WarningKind::from(name), kind);
        }
        // A kind from a newer version survives a round trip unchanged.
        let other: WarningKind = serde_json::from_str("\"from_the_future\"").unwrap();
        assert_eq!(other, WarningKind::Other("from_the_future".into()));
        assert_eq!(
            serde_json::to_string(&other).unwrap(),
            "\"from_the_future\""
        );
    }
}
