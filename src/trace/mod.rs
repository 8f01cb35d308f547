//! `sysperf trace ID`: what the kernel did for one benchmark, per operation, from its own
//! trace points (§2.3 of the 4.2BSD paper: events recorded into a circular buffer in the
//! kernel, then read and summarized by a user program).
//!
//! The method, and why it gives exact counts without touching the worker:
//! - a tracefs instance of sysperf's own (`instances/sysperf-<pid>`, a fixed-size ring buffer
//!   per CPU) records the chosen events for sysperf and, through `options/event-fork`, every
//!   process it starts: the worker and the worker's children;
//! - the benchmark runs twice in its usual worker, at N and at 2N iterations, traced from
//!   before the worker starts to after it is reaped. Start-up, setup and teardown are the same
//!   in both runs, so each count's difference divided by the difference in operations is that
//!   count per operation of the timed loop alone (as tests/it/work.rs does with strace);
//! - block I/O completes in interrupt context, on behalf of no particular process, so block
//!   events go to a second instance (`sysperf-<pid>-block`) that is not filtered by process.
//!
//! This module runs the session and returns a [`TraceReport`]; it does not print (the CLI
//! does, through `report::trace`). Cleanup is by ownership: the instances and the tracefs
//! mount are values whose `Drop` removes them, and the harness kills the worker's process
//! group when `stop` is set.

pub mod parse;
pub mod syscalls;
pub mod system;
pub mod tally;
pub mod tracefs;

use crate::bench::Spec;
use crate::error::InputError;
use crate::harness::{self, budget::Budget, placement::Plan, TrialError};
use crate::{stats, sys};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use tally::Tally;
use thiserror::Error;
pub use tracefs::AccessError;

/// The sets `--events` accepts by name when nothing else is said.
pub const DEFAULT_EVENTS: &str = "syscalls,sched";
/// Ring buffer per CPU unless `--buffer-kb` says otherwise.
pub const DEFAULT_BUFFER_KB: u64 = 4096;
/// When events are lost and the buffer was not chosen, it grows up to this per CPU.
pub const MAX_AUTO_BUFFER_KB: u64 = 65536;
/// Bounds of `--buffer-kb`.
pub const BUFFER_KB_RANGE: std::ops::RangeInclusive<u64> = 1..=1_048_576;
/// Calibration stops at this many iterations, which keeps the traces to a few MB (the
/// budget's; see [`Budget::trace`]).
pub const MAX_CALIBRATED_ITERATIONS: u64 = Budget::TRACE_MAX_ITERATIONS;

/// A named group of events, each summarized its own way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Set {
    Syscalls,
    Sched,
    PageCache,
    Block,
}

impl Set {
    pub const ALL: [Set; 4] = [Set::Syscalls, Set::Sched, Set::PageCache, Set::Block];

    pub fn name(self) -> &'static str {
        match self {
            Set::Syscalls => "syscalls",
            Set::Sched => "sched",
            Set::PageCache => "pagecache",
            Set::Block => "block",
        }
    }

    /// The events of the set, as `system:name`, those this kernel lacks being skipped.
    pub fn events(self) -> &'static [&'static str] {
        match self {
            Set::Syscalls => &["raw_syscalls:sys_enter"],
            Set::Sched => &[
                "sched:sched_switch",
                "sched:sched_wakeup",
                "sched:sched_wakeup_new",
                "sched:sched_migrate_task",
                "sched:sched_process_fork",
            ],
            Set::PageCache => &[
                "filemap:mm_filemap_add_to_page_cache",
                "filemap:mm_filemap_delete_from_page_cache",
                "filemap:mm_filemap_get_pages",
                "filemap:mm_filemap_fault",
                "filemap:mm_filemap_map_pages",
                "readahead:page_cache_sync_ra",
                "readahead:page_cache_async_ra",
                "readahead:page_cache_ra_order",
                "readahead:page_cache_ra_unbounded",
            ],
            Set::Block => &["block:block_rq_issue", "block:block_rq_complete"],
        }
    }

    /// Events without which the set says nothing.
    fn required(self) -> &'static [&'static str] {
        match self {
            Set::Syscalls => &["raw_syscalls:sys_enter"],
            Set::Sched => &["sched:sched_switch"],
            Set::PageCache => &["filemap:mm_filemap_add_to_page_cache"],
            Set::Block => &["block:block_rq_issue", "block:block_rq_complete"],
        }
    }
}

/// What `--events` asked for: sets by name and events by `system:name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    pub sets: Vec<Set>,
    pub events: Vec<String>,
}

/// Parses `--events`: a comma-separated mix of set names and `system:name` events.
pub fn parse_selection(s: &str) -> Result<Selection, InputError> {
    let mut sel = Selection {
        sets: Vec::new(),
        events: Vec::new(),
    };
    for tok in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        if tok.contains(':') {
            let ok = tok.split_once(':').is_some_and(|(a, b)| {
                !a.is_empty()
                    && !b.is_empty()
                    && tok
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':' || c == '-')
            });
            if !ok {
                return Err(InputError::InvalidValue {
                    what: "--events",
                    value: tok.chars().take(60).collect(),
                    why: "an event is written system:name, as in tracefs's available_events (e.g. sched:sched_switch)".into(),
                });
            }
            if !sel.events.iter().any(|e| e == tok) {
                sel.events.push(tok.to_string());
            }
        } else {
            match Set::ALL.iter().find(|x| x.name() == tok) {
                Some(&set) => {
                    if !sel.sets.contains(&set) {
                        sel.sets.push(set);
                    }
                }
                None => {
                    let names: Vec<&str> = Set::ALL.iter().map(|x| x.name()).collect();
                    let near = closest(tok, names.iter().copied());
                    return Err(InputError::InvalidValue {
                        what: "--events",
                        value: tok.chars().take(60).collect(),
                        why: format!(
                            "not an event set{}; the sets are {}, or name events as system:name",
                            did_you_mean(&near),
                            names.join(", ")
                        ),
                    });
                }
            }
        }
    }
    if sel.sets.is_empty() && sel.events.is_empty() {
        return Err(InputError::InvalidValue {
            what: "--events",
            value: s.chars().take(60).collect(),
            why: format!("name at least one event set or event (default: {DEFAULT_EVENTS})"),
        });
    }
    sel.sets.sort();
    Ok(sel)
}

fn closest<'a>(given: &str, candidates: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut scored: Vec<(f64, &str)> = candidates
        .map(|c| (strsim::jaro_winkler(given, c), c))
        .filter(|(s, _)| *s > 0.8)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(3)
        .map(|(_, c)| c.to_string())
        .collect()
}

fn did_you_mean(near: &[String]) -> String {
    if near.is_empty() {
        String::new()
    } else {
        format!(" (did you mean {}?)", near.join(", "))
    }
}

/// The selection against this kernel's events: what each instance enables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub sets: Vec<Set>,
    /// Events of the process-filtered instance, as `system:name`.
    pub main: Vec<String>,
    /// Events of the unfiltered block instance.
    pub block: Vec<String>,
    /// What the user selected (sets' events and named events) that this kernel has.
    pub selected: Vec<String>,
    /// Events of the chosen sets this kernel lacks.
    pub missing: Vec<String>,
}

/// The fork event is always recorded: it is how the traced processes are known.
const FORK_EVENT: &str = "sched:sched_process_fork";

#[derive(Debug, Error)]
pub enum ResolveError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error(transparent)]
    Access(#[from] AccessError),
}

impl crate::error::Exit for ResolveError {
    fn exit_code(&self) -> i32 {
        match self {
            ResolveError::Input(e) => e.exit_code(),
            ResolveError::Access(e) => e.exit_code(),
        }
    }
}

pub fn resolve(sel: &Selection, available: &[String]) -> Result<Resolved, ResolveError> {
    let have: BTreeSet<&str> = available.iter().map(String::as_str).collect();
    for e in &sel.events {
        if !have.contains(e.as_str()) {
            let near = closest(e, available.iter().map(String::as_str));
            return Err(InputError::InvalidValue {
                what: "--events",
                value: e.clone(),
                why: format!(
                    "this kernel has no such event{}; tracefs's available_events lists them all",
                    did_you_mean(&near)
                ),
            }
            .into());
        }
    }
    let mut selected: Vec<String> = Vec::new();
    let mut missing = Vec::new();
    for set in &sel.sets {
        for r in set.required() {
            if !have.contains(r) {
                return Err(AccessError::Unavailable(format!(
                    "the {} event set needs {r}, which this kernel does not have (check \
                     CONFIG_FTRACE_SYSCALLS, CONFIG_BLK_DEV_IO_TRACE and available_events)",
                    set.name()
                ))
                .into());
            }
        }
        for e in set.events() {
            if have.contains(e) {
                selected.push(e.to_string());
            } else {
                missing.push(e.to_string());
            }
        }
    }
    selected.extend(sel.events.iter().cloned());
    let mut seen = BTreeSet::new();
    selected.retain(|e| seen.insert(e.clone()));
    let (block, mut main): (Vec<String>, Vec<String>) = selected
        .iter()
        .cloned()
        .partition(|e| e.starts_with("block:"));
    if !main.iter().any(|e| e == FORK_EVENT) {
        if !have.contains(FORK_EVENT) {
            return Err(AccessError::Unavailable(format!(
                "this kernel has no {FORK_EVENT}, which sysperf needs to know the traced processes"
            ))
            .into());
        }
        main.push(FORK_EVENT.to_string());
    }
    Ok(Resolved {
        sets: sel.sets.clone(),
        main,
        block,
        selected,
        missing,
    })
}

/// How to trace.
#[derive(Debug, Clone)]
pub struct Options {
    pub spec: &'static Spec,
    pub plan: Plan,
    pub selection: Selection,
    /// Ring buffer per CPU; None = [`DEFAULT_BUFFER_KB`], grown when events are lost.
    pub buffer_kb: Option<u64>,
    /// Iterations of the first run (the second runs twice as many); None = calibrate.
    pub iterations: Option<u64>,
    pub worker_exe: PathBuf,
    /// The calibration target and the worker timeout ([`Budget::trace`]).
    pub budget: Budget,
    /// Keep the text traces (`--raw`).
    pub keep_raw: bool,
}

#[derive(Debug, Error)]
pub enum TraceError {
    #[error(transparent)]
    Access(#[from] AccessError),
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("{0}")]
    Io(String),
    #[error("{bench}: the worker failed: {why}")]
    Trial { bench: String, why: String },
    #[error("interrupted")]
    Interrupted,
}

impl crate::error::Exit for TraceError {
    fn exit_code(&self) -> i32 {
        match self {
            TraceError::Access(e) => e.exit_code(),
            TraceError::Input(e) => e.exit_code(),
            TraceError::Io(_) | TraceError::Trial { .. } | TraceError::Interrupted => {
                crate::exit::FAILURE
            }
        }
    }
}

impl From<ResolveError> for TraceError {
    fn from(e: ResolveError) -> Self {
        match e {
            ResolveError::Input(i) => TraceError::Input(i),
            ResolveError::Access(a) => TraceError::Access(a),
        }
    }
}

fn io_err(e: std::io::Error) -> TraceError {
    TraceError::Io(e.to_string())
}

/// A count per operation (from the two runs' difference) and its total in the longer run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Count {
    pub per_op: f64,
    pub run_total: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NamedCount {
    pub name: String,
    pub per_op: f64,
    pub run_total: u64,
}

/// A distribution of latencies in microseconds (from the longer run).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Dist {
    pub n: usize,
    pub median: f64,
    pub p95: f64,
    pub max: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Syscalls {
    pub total: Count,
    /// By name, most frequent per operation first.
    pub by_name: Vec<SyscallCount>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SyscallCount {
    pub name: String,
    pub nr: i64,
    pub per_op: f64,
    pub run_total: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sched {
    /// A traced process switched out, as rusage counts context switches.
    pub switches: Count,
    pub voluntary: Count,
    /// Switched out while still runnable (preempted).
    pub involuntary: Count,
    pub wakeups: Option<Count>,
    pub migrations: Option<Count>,
    pub forks: Count,
    /// Wakeup to running, in microseconds (the text trace's resolution).
    pub wakeup_latency_us: Option<Dist>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageCache {
    pub requested_pages: Count,
    pub missed_pages: Count,
    pub added_pages: Count,
    pub readahead_pages: Count,
    pub readahead_used: Count,
    pub readahead_evicted_unused: Count,
    pub deleted_pages: Count,
    pub faults: Count,
    pub mapped_pages: Count,
    pub sync_readaheads: Count,
    pub async_readaheads: Count,
    /// (requested - missed) / requested, over the timed loop (the difference) when it read
    /// anything, and over the whole longer run.
    pub hit_ratio_per_op: Option<f64>,
    pub hit_ratio_run: Option<f64>,
    /// readahead_used / readahead_pages, likewise.
    pub readahead_used_share_per_op: Option<f64>,
    pub readahead_used_share_run: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Block {
    /// Requests issued from a traced process's context.
    pub requests: Count,
    pub bytes: Count,
    pub reads: Count,
    pub writes: Count,
    pub errors: Count,
    pub latency_us: Option<Dist>,
    /// Every request on every device while the longer run was traced (any process, and
    /// writeback by kernel threads): context, not attributable per operation.
    pub system_requests: u64,
    pub system_bytes: u64,
    pub system_latency_us: Option<Dist>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    pub iterations: u64,
    pub ops: u64,
    /// The worker's timed loop, traced (tracing slows it: not a measurement).
    pub wall_ns: u64,
    /// Event lines attributed to the traced processes.
    pub events: u64,
    pub lost_events: u64,
    pub buffer_kb: u64,
}

/// Everything `sysperf trace` reports; `--json` prints it as is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceReport {
    pub format: String,
    pub format_version: u32,
    pub sysperf_version: String,
    pub bench: String,
    /// The paper's description of the benchmark.
    pub paper: String,
    /// What one operation is.
    pub unit: String,
    pub ops_per_iteration: u64,
    pub placement: String,
    pub cpus: Vec<u32>,
    pub tracefs: String,
    pub tracefs_mounted_by_sysperf: bool,
    pub instance: String,
    pub buffer_kb: u64,
    /// Enabled events, `system:name`.
    pub events: Vec<String>,
    pub method: String,
    pub runs: Vec<RunInfo>,
    pub syscalls: Option<Syscalls>,
    pub sched: Option<Sched>,
    pub pagecache: Option<PageCache>,
    pub block: Option<Block>,
    /// Every selected event, per operation and in total.
    pub events_per_op: Vec<NamedCount>,
    pub warnings: Vec<String>,
}

/// The outcome of [`trace`]: the report, and the text traces when asked to keep them.
#[derive(Debug)]
pub struct Traced {
    pub report: TraceReport,
    pub raw: Option<String>,
}

impl TraceReport {
    /// The report as the store keeps it (`trace --store`), made at `started_ns` on the machine
    /// `fingerprint` describes, under the new id `id`.
    pub fn stored(
        &self,
        id: String,
        label: Option<String>,
        started_ns: i64,
        fingerprint: crate::model::Fingerprint,
    ) -> Result<crate::model::StoredTrace, serde_json::Error> {
        Ok(crate::model::StoredTrace {
            id,
            label,
            bench: self.bench.clone(),
            started_ns,
            wall_ns: self.runs.iter().map(|r| r.wall_ns).sum(),
            sysperf_version: self.sysperf_version.clone(),
            // The kernel's options are kept by their hash, as a run's fingerprint keeps them.
            fingerprint: crate::model::Fingerprint {
                kernel_config: Default::default(),
                ..fingerprint
            },
            report: serde_json::to_value(self)?,
        })
    }

    /// A stored trace's report.
    pub fn of(t: &crate::model::StoredTrace) -> Result<TraceReport, serde_json::Error> {
        serde_json::from_value(t.report.clone())
    }
}

/// One traced run's result.
struct RunOut {
    tally: Tally,
    info: RunInfo,
}

/// Traces `opts.spec` as the module documentation describes. `note` receives progress
/// messages (for stderr). Every instance made is removed before this returns.
pub fn trace(opts: &Options, stop: &AtomicBool, note: &dyn Fn(&str)) -> Result<Traced, TraceError> {
    let fs = tracefs::Tracefs::open()?;
    for name in tracefs::remove_stale(&fs) {
        note(&format!(
            "removed the tracefs instance {name} left by a sysperf that no longer runs"
        ));
    }
    let available = fs.available_events()?;
    let resolved = resolve(&opts.selection, &available)?;
    let pid = sys::getpid();
    // Declared after `fs`, so dropped (removed) before it is unmounted.
    let main = tracefs::Instance::create(&fs, &format!("{}{pid}", tracefs::PREFIX))?;
    let block = if resolved.block.is_empty() {
        None
    } else {
        Some(tracefs::Instance::create(
            &fs,
            &format!("{}{pid}-block", tracefs::PREFIX),
        )?)
    };
    let mut tracer = Tracer {
        opts,
        stop,
        note,
        main: &main,
        block: block.as_ref(),
        pid,
        buffer_kb: opts.buffer_kb.unwrap_or(DEFAULT_BUFFER_KB),
    };
    set_buffers(&tracer.instances(), tracer.buffer_kb)?;
    main.follow(pid).map_err(io_err)?;
    for e in &resolved.main {
        main.enable(e).map_err(io_err)?;
    }
    if let Some(b) = &block {
        for e in &resolved.block {
            b.enable(e).map_err(io_err)?;
        }
    }
    if stop.load(Ordering::Relaxed) {
        return Err(TraceError::Interrupted);
    }

    let iterations = match opts.iterations {
        Some(n) => {
            // The two runs cancel start-up only if they start alike: the calibration warms
            // the page cache (the worker's binary, its libraries) when it runs; without it,
            // run 1 alone would read them and carry misses and faults run 2 does not.
            note("warming up (one untraced iteration)");
            warm_up(opts, stop)?;
            n
        }
        None => {
            note("calibrating the iteration count (untraced)");
            calibrate(opts, stop)?
        }
    };
    let mut warnings = Vec::new();
    let mut raw = opts.keep_raw.then(String::new);
    let lo = tracer.run(0, iterations, &mut raw, &mut warnings)?;
    let hi = tracer.run(1, iterations.saturating_mul(2), &mut raw, &mut warnings)?;
    if !resolved.missing.is_empty() {
        warnings.push(format!(
            "this kernel lacks {}, so the figures that need them stay at zero",
            resolved.missing.join(", ")
        ));
    }
    let mut events = resolved.main.clone();
    events.extend(resolved.block.iter().cloned());
    let report = TraceReport {
        format: "sysperf-trace".into(),
        format_version: 1,
        sysperf_version: crate::VERSION.into(),
        bench: opts.spec.id.to_string(),
        paper: opts.spec.paper.to_string(),
        unit: opts.spec.unit.to_string(),
        ops_per_iteration: opts.spec.ops_per_iteration,
        placement: opts.plan.label.to_string(),
        cpus: opts.plan.cpus.clone(),
        tracefs: fs.root.display().to_string(),
        tracefs_mounted_by_sysperf: fs.mounted,
        instance: main.name.clone(),
        buffer_kb: tracer.buffer_kb,
        events,
        method: METHOD.to_string(),
        syscalls: None,
        sched: None,
        pagecache: None,
        block: None,
        events_per_op: Vec::new(),
        warnings,
        runs: Vec::new(),
    };
    let report = summarize(report, &resolved, &lo.tally, &hi.tally, lo.info, hi.info);
    Ok(Traced { report, raw })
}

/// The two traced runs of [`trace`]: the instances they turn on and read (`main`, the
/// worker's events; `block`, every process's block events), and the ring's size.
struct Tracer<'a> {
    opts: &'a Options,
    stop: &'a AtomicBool,
    note: &'a dyn Fn(&str),
    main: &'a tracefs::Instance,
    block: Option<&'a tracefs::Instance>,
    pid: sys::Pid,
    /// KB per CPU; without `--buffer-kb`, grown while a run loses events.
    buffer_kb: u64,
}

impl Tracer<'_> {
    fn instances(&self) -> Vec<&tracefs::Instance> {
        std::iter::once(self.main).chain(self.block).collect()
    }

    /// Run `index` (0 or 1) of `n` iterations, traced, and its tally; repeated with a ring
    /// four times larger (up to [`MAX_AUTO_BUFFER_KB`]) while it loses events, unless
    /// `--buffer-kb` fixed the ring. A loss left is a warning.
    fn run(
        &mut self,
        index: usize,
        n: u64,
        raw: &mut Option<String>,
        warnings: &mut Vec<String>,
    ) -> Result<RunOut, TraceError> {
        loop {
            (self.note)(&format!(
                "run {} of 2: {} iterations, traced ({} KB buffer per CPU)",
                index + 1,
                n,
                self.buffer_kb
            ));
            let (wall_ns, lost) = self.traced_trial(n)?;
            let buffer_kb = self.buffer_kb;
            if lost > 0 && self.opts.buffer_kb.is_none() && buffer_kb < MAX_AUTO_BUFFER_KB {
                let bigger = (buffer_kb * 4).min(MAX_AUTO_BUFFER_KB);
                (self.note)(&format!(
                    "{lost} events did not fit in {buffer_kb} KB per CPU; repeating run {} with {bigger} KB",
                    index + 1
                ));
                self.buffer_kb = bigger;
                set_buffers(&self.instances(), bigger)?;
                continue;
            }
            let tally = self.read(index, n, raw)?;
            let lost = lost.max(tally.lost_events);
            if lost > 0 {
                warnings.push(format!(
                    "{lost} events were lost in run {} ({buffer_kb} KB per CPU was too small), so its counts are incomplete: raise --buffer-kb or lower --iterations",
                    index + 1
                ));
            }
            let info = RunInfo {
                iterations: n,
                ops: n * self.opts.spec.ops_per_iteration,
                wall_ns,
                events: tally.events.values().sum(),
                lost_events: lost,
                buffer_kb,
            };
            return Ok(RunOut { tally, info });
        }
    }

    /// One trial of `n` iterations with the instances cleared and on: its wall time and the
    /// events the rings lost meanwhile.
    fn traced_trial(&self, n: u64) -> Result<(u64, u64), TraceError> {
        let instances = self.instances();
        let lost_before: u64 = instances.iter().map(|i| i.lost_events()).sum();
        for i in &instances {
            i.clear().map_err(io_err)?;
        }
        for i in &instances {
            i.on(true).map_err(io_err)?;
        }
        let opts = self.opts;
        let trial = harness::run_trial(
            &opts.worker_exe,
            opts.spec,
            &opts.plan,
            n,
            opts.budget.timeout,
            self.stop,
        );
        for i in &instances {
            i.on(false).map_err(io_err)?;
        }
        let rep = trial.map_err(|e| trial_error(opts, e))?;
        let lost = instances
            .iter()
            .map(|i| i.lost_events())
            .sum::<u64>()
            .saturating_sub(lost_before);
        Ok((rep.wall_ns, lost))
    }

    /// The tally of the traces of run `index` (`n` iterations), each text kept in `raw`
    /// after a header when asked.
    fn read(&self, index: usize, n: u64, raw: &mut Option<String>) -> Result<Tally, TraceError> {
        let id = self.opts.spec.id;
        let mut tally = Tally::new(self.pid, sys::page_size() as u64);
        let mut text = raw.as_mut();
        if let Some(t) = text.as_deref_mut() {
            t.push_str(&format!(
                "# sysperf trace {}: run {} of 2, {} iterations, instance {}\n",
                id,
                index + 1,
                n,
                self.main.name
            ));
        }
        read_trace(self.main, self.stop, &mut text, |l| tally.feed(l))?;
        if let Some(b) = self.block {
            if let Some(t) = text.as_deref_mut() {
                t.push_str(&format!(
                    "# sysperf trace {}: run {} of 2, block events of every process, instance {}\n",
                    id,
                    index + 1,
                    b.name
                ));
            }
            read_trace(b, self.stop, &mut text, |l| tally.feed_block(l))?;
        }
        Ok(tally)
    }
}

pub const METHOD: &str = "per operation = (count in run 2 - count in run 1) / (operations in run 2 - operations in run 1); the runs differ only in their iteration count, so process start, setup and teardown cancel. Totals and latencies are from run 2, the whole worker.";

fn set_buffers(instances: &[&tracefs::Instance], kb: u64) -> Result<(), TraceError> {
    for i in instances {
        i.set_buffer_kb(kb).map_err(|e| {
            TraceError::Io(format!(
                "{e}: cannot have a {kb} KB ring buffer per CPU; choose a smaller --buffer-kb"
            ))
        })?;
    }
    Ok(())
}

/// Feeds every line of an instance's text trace to `f`, keeping a copy in `raw` if given.
fn read_trace(
    inst: &tracefs::Instance,
    stop: &AtomicBool,
    raw: &mut Option<&mut String>,
    mut f: impl FnMut(&str),
) -> Result<(), TraceError> {
    let mut r = BufReader::with_capacity(1 << 16, inst.trace_reader().map_err(io_err)?);
    let mut line = String::new();
    let mut n = 0u64;
    loop {
        line.clear();
        match r.read_line(&mut line) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                // Not UTF-8 (a command name in another encoding): skip the line.
                continue;
            }
            Err(e) => {
                return Err(TraceError::Io(format!(
                    "reading the trace of {}: {e}",
                    inst.name
                )))
            }
        }
        f(&line);
        if let Some(t) = raw.as_deref_mut() {
            t.push_str(&line);
        }
        n += 1;
        if n.is_multiple_of(65_536) && stop.load(Ordering::Relaxed) {
            return Err(TraceError::Interrupted);
        }
    }
}

/// Grows the iteration count, untraced, by the harness's rule ([`harness::calibrate`])
/// until one run lasts about 10 ms, capped at [`MAX_CALIBRATED_ITERATIONS`].
fn calibrate(opts: &Options, stop: &AtomicBool) -> Result<u64, TraceError> {
    let target = opts.budget.min_time.as_nanos().min(u64::MAX as u128) as u64;
    let found = harness::calibrate(target, MAX_CALIBRATED_ITERATIONS, |n| {
        harness::run_trial(
            &opts.worker_exe,
            opts.spec,
            &opts.plan,
            n,
            opts.budget.timeout,
            stop,
        )
        .map(|rep| Some(rep.wall_ns))
        .map_err(|e| trial_error(opts, e))
    })?;
    // A failed trial is an error here, never "no wall time": `found` always holds a count.
    Ok(found.unwrap_or(1))
}

/// One untraced trial of one iteration, so that both traced runs find what the worker
/// needs already in the page cache.
fn warm_up(opts: &Options, stop: &AtomicBool) -> Result<(), TraceError> {
    harness::run_trial(
        &opts.worker_exe,
        opts.spec,
        &opts.plan,
        1,
        opts.budget.timeout,
        stop,
    )
    .map(drop)
    .map_err(|e| trial_error(opts, e))
}

fn trial_error(opts: &Options, e: TrialError) -> TraceError {
    match e {
        TrialError::Interrupted => TraceError::Interrupted,
        TrialError::Failed(why) => TraceError::Trial {
            bench: opts.spec.id.to_string(),
            why,
        },
    }
}

/// Latencies in microseconds: median, 95th percentile, maximum.
pub fn dist_us(samples_ns: &[u64]) -> Option<Dist> {
    let us: Vec<f64> = samples_ns.iter().map(|&n| n as f64 / 1000.0).collect();
    let s = stats::sorted(&us).ok()?;
    Some(Dist {
        n: s.len(),
        median: stats::quantile(&s, 0.5),
        p95: stats::quantile(&s, 0.95),
        max: *s.last()?,
    })
}

/// Builds the summaries from the two runs' tallies.
pub fn summarize(
    mut report: TraceReport,
    resolved: &Resolved,
    lo: &Tally,
    hi: &Tally,
    lo_info: RunInfo,
    hi_info: RunInfo,
) -> TraceReport {
    let d_ops = hi_info.ops.saturating_sub(lo_info.ops).max(1) as f64;
    let count = |a: u64, b: u64| Count {
        per_op: (b as f64 - a as f64) / d_ops,
        run_total: b,
    };
    let enabled = |e: &str| resolved.main.iter().chain(&resolved.block).any(|x| x == e);
    if enabled("raw_syscalls:sys_enter") {
        report.syscalls = Some(syscall_counts(lo, hi, &count));
    }
    if enabled("sched:sched_switch") {
        let (l, h) = (&lo.sched, &hi.sched);
        report.sched = Some(Sched {
            switches: count(l.switches, h.switches),
            voluntary: count(l.switches - l.involuntary, h.switches - h.involuntary),
            involuntary: count(l.involuntary, h.involuntary),
            wakeups: (enabled("sched:sched_wakeup") || enabled("sched:sched_wakeup_new"))
                .then(|| count(l.wakeups, h.wakeups)),
            migrations: enabled("sched:sched_migrate_task")
                .then(|| count(l.migrations, h.migrations)),
            forks: count(l.forks, h.forks),
            wakeup_latency_us: dist_us(&h.wakeup_latency_ns),
        });
    }
    if resolved.sets.contains(&Set::PageCache)
        || resolved
            .selected
            .iter()
            .any(|e| e.starts_with("filemap:") || e.starts_with("readahead:"))
    {
        report.pagecache = Some(pagecache_counts(&lo.pagecache, &hi.pagecache, &count));
    }
    if !resolved.block.is_empty() {
        let (l, h) = (&lo.block, &hi.block);
        report.block = Some(Block {
            requests: count(l.ours.requests, h.ours.requests),
            bytes: count(l.ours.bytes, h.ours.bytes),
            reads: count(l.ours.read_requests, h.ours.read_requests),
            writes: count(l.ours.write_requests, h.ours.write_requests),
            errors: count(l.ours.errors, h.ours.errors),
            latency_us: dist_us(&h.ours.latency_ns),
            system_requests: h.all.requests,
            system_bytes: h.all.bytes,
            system_latency_us: dist_us(&h.all.latency_ns),
        });
    }
    report.events_per_op = resolved
        .selected
        .iter()
        .map(|e| {
            let short = e.split_once(':').map_or(e.as_str(), |(_, n)| n);
            let get = |t: &Tally| t.events.get(short).copied().unwrap_or(0);
            let c = count(get(lo), get(hi));
            NamedCount {
                name: e.clone(),
                per_op: c.per_op,
                run_total: c.run_total,
            }
        })
        .collect();
    report.runs = vec![lo_info, hi_info];
    report
}

/// The share `num / den`, within 0..=1; none without a denominator.
fn ratio(num: f64, den: f64) -> Option<f64> {
    (den > 0.0).then(|| (num / den).clamp(0.0, 1.0))
}

/// The system calls of the two runs (`lo`, `hi`) per operation, by name, the most frequent
/// first; `count` makes a [`Count`] of a figure of each run.
fn syscall_counts(lo: &Tally, hi: &Tally, count: &dyn Fn(u64, u64) -> Count) -> Syscalls {
    let nrs: BTreeSet<i64> = lo
        .syscalls
        .keys()
        .chain(hi.syscalls.keys())
        .copied()
        .collect();
    let get = |t: &Tally, nr: i64| t.syscalls.get(&nr).copied().unwrap_or(0);
    let mut by_name: Vec<SyscallCount> = nrs
        .into_iter()
        .map(|nr| {
            let c = count(get(lo, nr), get(hi, nr));
            SyscallCount {
                name: syscalls::name(nr),
                nr,
                per_op: c.per_op,
                run_total: c.run_total,
            }
        })
        .collect();
    by_name.sort_by(|a, b| {
        b.per_op
            .total_cmp(&a.per_op)
            .then(b.run_total.cmp(&a.run_total))
            .then(a.name.cmp(&b.name))
    });
    Syscalls {
        total: count(lo.syscalls.values().sum(), hi.syscalls.values().sum()),
        by_name,
    }
}

/// The page cache figures of the two runs (`l`, `h`) per operation, with the hit ratio and
/// readahead's used share per operation and over the longer run; `count` as in
/// [`syscall_counts`].
fn pagecache_counts(
    l: &tally::PageCache,
    h: &tally::PageCache,
    count: &dyn Fn(u64, u64) -> Count,
) -> PageCache {
    let c = |f: fn(&tally::PageCache) -> u64| count(f(l), f(h));
    let diff = |f: fn(&tally::PageCache) -> u64| f(h) as f64 - f(l) as f64;
    let (dreq, dmiss) = (diff(|p| p.requested_pages), diff(|p| p.missed_pages));
    let (dra, dused) = (diff(|p| p.readahead_pages), diff(|p| p.readahead_used));
    PageCache {
        requested_pages: c(|p| p.requested_pages),
        missed_pages: c(|p| p.missed_pages),
        added_pages: c(|p| p.added_pages),
        readahead_pages: c(|p| p.readahead_pages),
        readahead_used: c(|p| p.readahead_used),
        readahead_evicted_unused: c(|p| p.readahead_evicted_unused),
        deleted_pages: c(|p| p.deleted_pages),
        faults: c(|p| p.faults),
        mapped_pages: c(|p| p.mapped_pages),
        sync_readaheads: c(|p| p.sync_readaheads),
        async_readaheads: c(|p| p.async_readaheads),
        hit_ratio_per_op: ratio(dreq - dmiss, dreq),
        hit_ratio_run: ratio(
            h.requested_pages.saturating_sub(h.missed_pages) as f64,
            h.requested_pages as f64,
        ),
        readahead_used_share_per_op: ratio(dused, dra),
        readahead_used_share_run: ratio(h.readahead_used as f64, h.readahead_pages as f64),
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    fn avail(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    const KERNEL: &[&str] = &[
        "raw_syscalls:sys_enter",
        "raw_syscalls:sys_exit",
        "sched:sched_switch",
        "sched:sched_wakeup",
        "sched:sched_wakeup_new",
        "sched:sched_migrate_task",
        "sched:sched_process_fork",
        "filemap:mm_filemap_add_to_page_cache",
        "filemap:mm_filemap_get_pages",
        "block:block_rq_issue",
        "block:block_rq_complete",
    ];

    #[test]
    fn selections_of_sets_and_events() {
        let s = parse_selection("sched, syscalls,sched").unwrap();
        assert_eq!(s.sets, vec![Set::Syscalls, Set::Sched]);
        let s = parse_selection("block,raw_syscalls:sys_exit").unwrap();
        assert_eq!(s.sets, vec![Set::Block]);
        assert_eq!(s.events, vec!["raw_syscalls:sys_exit".to_string()]);
        for (bad, needle) in [
            ("schedd", "did you mean sched"),
            ("", "at least one"),
            (",,", "at least one"),
            ("a:", "system:name"),
            (":b", "system:name"),
            ("x:y z", "system:name"),
            ("nothing", "the sets are"),
        ] {
            let e = parse_selection(bad).unwrap_err().to_string();
            assert!(e.contains(needle), "{bad}: {e}");
        }
    }

    #[test]
    fn resolution_splits_instances_and_always_follows_forks() {
        let r = resolve(&parse_selection("syscalls").unwrap(), &avail(KERNEL)).unwrap();
        assert_eq!(r.main, vec!["raw_syscalls:sys_enter", FORK_EVENT]);
        assert!(r.block.is_empty());
        assert_eq!(r.selected, vec!["raw_syscalls:sys_enter"]);
        let r = resolve(&parse_selection("pagecache,block").unwrap(), &avail(KERNEL)).unwrap();
        assert_eq!(
            r.block,
            vec!["block:block_rq_issue", "block:block_rq_complete"]
        );
        assert!(r
            .missing
            .contains(&"readahead:page_cache_sync_ra".to_string()));
        assert!(!r.main.iter().any(|e| e.starts_with("block:")));
        let e = resolve(
            &parse_selection("sched:sched_swich").unwrap(),
            &avail(KERNEL),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("did you mean sched:sched_switch"), "{e}");
        // A set whose essential event is absent is an unavailable feature, not bad input.
        assert!(matches!(
            resolve(
                &parse_selection("syscalls").unwrap(),
                &avail(&["sched:sched_process_fork"])
            ),
            Err(ResolveError::Access(_))
        ));
    }

    #[test]
    fn per_op_is_the_difference_of_the_runs() {
        let resolved =
            resolve(&parse_selection("syscalls,sched").unwrap(), &avail(KERNEL)).unwrap();
        let run = |iters: u64| {
            let mut t = Tally::new(1, 4096);
            t.feed(" a-1 [000] ..... 1.000000: sched_process_fork: comm=a pid=1 child_comm=w child_pid=2");
            // 30 calls of start-up, then one getpid per iteration.
            for _ in 0..30 {
                t.feed(" w-2 [000] ..... 1.000001: sys_enter: NR 12 (0, 0, 0, 0, 0, 0)");
            }
            for _ in 0..iters {
                t.feed(&format!(
                    " w-2 [000] ..... 1.000002: sys_enter: NR {} (0, 0, 0, 0, 0, 0)",
                    libc::SYS_getpid
                ));
            }
            let info = RunInfo {
                iterations: iters,
                ops: iters,
                wall_ns: 1,
                events: 0,
                lost_events: 0,
                buffer_kb: 4,
            };
            (t, info)
        };
        let (lo, li) = run(100);
        let (hi, hinfo) = run(200);
        let base = TraceReport {
            format: "sysperf-trace".into(),
            format_version: 1,
            sysperf_version: "0".into(),
            bench: "syscall".into(),
            paper: "perform 100,000 getpid system calls".into(),
            unit: "call".into(),
            ops_per_iteration: 1,
            placement: "single".into(),
            cpus: vec![1],
            tracefs: "/sys/kernel/tracing".into(),
            tracefs_mounted_by_sysperf: true,
            instance: "sysperf-1".into(),
            buffer_kb: 4,
            events: vec![],
            method: METHOD.into(),
            runs: vec![],
            syscalls: None,
            sched: None,
            pagecache: None,
            block: None,
            events_per_op: vec![],
            warnings: vec![],
        };
        let r = summarize(base, &resolved, &lo, &hi, li, hinfo);
        let s = r.syscalls.unwrap();
        assert_eq!(s.total.per_op, 1.0);
        assert_eq!(s.total.run_total, 230);
        assert_eq!(s.by_name[0].name, "getpid");
        assert_eq!(s.by_name[0].per_op, 1.0);
        assert_eq!(s.by_name[1].per_op, 0.0);
        assert_eq!(s.by_name[1].run_total, 30);
        let sched = r.sched.unwrap();
        assert_eq!(sched.switches.per_op, 0.0);
        assert!(sched.wakeup_latency_us.is_none());
        assert!(r.pagecache.is_none() && r.block.is_none());
        assert_eq!(r.events_per_op.len(), 6);
        assert_eq!(r.events_per_op[0].name, "raw_syscalls:sys_enter");
        assert_eq!(r.events_per_op[0].per_op, 1.0);
    }

    #[test]
    fn latency_distribution() {
        let d = dist_us(&[1000, 2000, 3000, 4000, 100_000]).unwrap();
        assert_eq!((d.n, d.median, d.max), (5, 3.0, 100.0));
        assert!(d.p95 > 4.0 && d.p95 <= 100.0);
        assert!(dist_us(&[]).is_none());
    }
}
