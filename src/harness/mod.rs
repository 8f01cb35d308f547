//! The harness owns time: it starts one worker process per trial, calibrates the iteration
//! count to `--min-time`, runs a warm-up and the counted trials, kills a trial that hangs,
//! subtracts the measured timer and loop overhead, summarizes with `stats`, and flags noise.
//!
//! It does not print and does not store: progress goes to a callback, results are returned.

pub mod budget;
pub mod cgroup;
pub mod counters;
pub mod janitor;
pub mod placement;
pub mod worker;
pub mod zram;

use crate::bench::Spec;
use crate::model::{
    BenchResult, CounterSummary, Counters, Outlier, Overhead, Summary, Trial, TrialKind, Usage,
    Warning, WarningKind,
};
use crate::stats;
use crate::{procfs, sys};
use placement::{CpuChoice, Mode, Plan};

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use worker::{Report, Request};

/// Other work above this share of the benchmark's CPUs earns a noise warning.
pub const BUSY_WARN: f64 = 0.10;
/// Iteration counts never grow past this, whatever calibration says.
const MAX_ITERATIONS: u64 = 1 << 40;

/// How to measure.
#[derive(Debug, Clone)]
pub struct Options {
    /// The sysperf executable to start workers from.
    pub worker_exe: PathBuf,
    pub trials: u32,
    pub min_time: Duration,
    pub warmup: bool,
    pub mode: Mode,
    pub cpus: CpuChoice,
    pub timeout: Duration,
    /// Count every trial with system-wide /proc deltas, and the warm-up trial (every trial
    /// when there is no warm-up) with perf counters too (`run --observe`).
    pub observe: bool,
}

/// What one measurement measures: a core benchmark, or one point of a suite's series.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// What the worker is asked to run: a registry id or a series id.
    pub request_id: String,
    /// The series point's parameter, handed to the series' `make` in the worker.
    pub param: Option<u64>,
    /// The id of the result: the registry id, or `series@x` for a point.
    pub id: String,
    pub group: String,
    pub unit: String,
    pub ops_per_iteration: u64,
    pub paper_count: u64,
    /// A fixed iteration count instead of calibration to `--min-time`.
    pub iterations: Option<u64>,
    /// Every trial runs in a cgroup with this memory limit (see `cgroup`).
    pub memory_limit_bytes: Option<u64>,
    /// Every trial has a swap area of this many bytes on a zram device of its own, made
    /// before its worker starts and removed after it ended (see `zram`).
    pub swap_bytes: Option<u64>,
    /// A switch every worker of this target turns on for itself (`sysperf ab`).
    pub task: Option<worker::TaskSwitch>,
    /// The `command` benchmark's command line (`sysperf ab --a/--b`).
    pub command: Option<crate::bench::command::CommandLine>,
}

impl Target {
    /// A core benchmark, measured as the core suite does.
    pub fn bench(spec: &Spec) -> Target {
        Target {
            request_id: spec.id.to_string(),
            param: None,
            id: spec.id.to_string(),
            group: spec.group.as_str().to_string(),
            unit: spec.unit.to_string(),
            ops_per_iteration: spec.ops_per_iteration,
            paper_count: spec.paper_count,
            iterations: None,
            memory_limit_bytes: None,
            swap_bytes: None,
            task: None,
            command: None,
        }
    }
}

/// What the harness reports while it works.
#[derive(Debug, Clone)]
pub enum Event<'a> {
    /// A benchmark (or a series point) starts; `index` counts from 0.
    Benchmark {
        id: &'a str,
        index: usize,
        total: usize,
    },
    /// One worker finished.
    Trial { kind: TrialKind },
}

/// Why a measurement stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Interrupted,
}

/// Outcome of one worker execution.
enum Outcome {
    /// Boxed: a report with counters is large next to the other variants.
    Done(Box<Report>, Usage),
    Failed(String, Usage),
    Interrupted,
}

/// Something in the parent that watches a worker while it runs (the profiler's sampler).
pub trait Observer {
    /// Called once the worker exists and, held before setup, waits for the go-ahead. An error
    /// kills the worker and fails the trial with that message.
    fn attach(&mut self, pid: sys::Pid) -> Result<(), String>;
    /// Called about every 10 ms while the worker runs, and once more after it ended.
    fn poll(&mut self);
}

/// Starts a worker for `req` and waits for it, killing its whole process group on timeout or
/// interruption. Nothing it started survives this function.
fn run_worker(exe: &Path, req: &Request, timeout: Duration, stop: &AtomicBool) -> Outcome {
    run_worker_observed(exe, req, timeout, stop, None)
}

/// [`run_worker`] with an observer attached to the worker before its setup (the request is
/// sent with `hold` set, and the go-ahead written to the worker's stdin after `attach`).
fn run_worker_observed(
    exe: &Path,
    req: &Request,
    timeout: Duration,
    stop: &AtomicBool,
    mut observer: Option<&mut dyn Observer>,
) -> Outcome {
    let mut req = req.clone();
    req.hold = observer.is_some();
    let mut child = match spawn(exe, &req) {
        Ok(c) => c,
        Err(failed) => return failed,
    };
    let pid = child.id() as sys::Pid;
    let deadline = Instant::now() + timeout;
    let mut verdict: Option<Outcome> = None;
    if let Some(obs) = observer.as_deref_mut() {
        // The observer is promised a held worker: spawn returns after the exec, while the
        // loader may still be mapping libraries (a profile that read the maps then named every
        // user sample in libc "(mapping unknown)").
        wait_until_held(pid as u32, HELD_WAIT);
        let go = obs.attach(pid).and_then(|()| {
            let mut stdin = child
                .stdin
                .take()
                .ok_or_else(|| "the worker has no stdin".to_string())?;
            std::io::Write::write_all(&mut stdin, b"g")
                .map_err(|e| format!("starting the held worker: {e}"))
        });
        if let Err(e) = go {
            verdict = Some(Outcome::Failed(e, Usage::default()));
        }
    }
    let (status, total, verdict) = wait_for(pid, deadline, timeout, stop, verdict, observer);
    let out = collect(child, status, total, verdict);
    sys::reap_zombies();
    out
}

/// The longest [`wait_until_held`] waits: a worker's start (exec, the loader, naming and
/// pinning itself) takes milliseconds; past this it is observed as it is.
const HELD_WAIT: Duration = Duration::from_secs(2);

/// Waits, at most `limit`, until process `pid` is blocked reading its standard input (a
/// held worker's wait for the go-ahead, `worker::enter`), from `/proc/PID/syscall`. Returns
/// at once where that file cannot be read (no such process, or not allowed).
fn wait_until_held(pid: u32, limit: Duration) -> bool {
    let start = Instant::now();
    loop {
        match std::fs::read_to_string(format!("/proc/{pid}/syscall")) {
            Ok(s) if procfs::blocked_reading(&s, 0) => return true,
            Ok(_) if start.elapsed() < limit => std::thread::sleep(Duration::from_micros(200)),
            _ => return false,
        }
    }
}

/// Starts a worker for `req` in a process group of its own, its stdout and stderr piped (its
/// stdin too when it is held).
fn spawn(exe: &Path, req: &Request) -> Result<std::process::Child, Outcome> {
    let json = serde_json::to_string(req)
        .map_err(|e| Outcome::Failed(format!("encoding the request: {e}"), Usage::default()))?;
    let mut cmd = crate::programs::at(exe)
        .map_err(|e| Outcome::Failed(format!("starting worker: {e}"), Usage::default()))?;
    cmd.arg("__worker")
        .arg(json)
        .arg0(format!("sysperf:{}", req.id))
        .process_group(0)
        .stdin(if req.hold {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    crate::clib::dies_with_parent(&mut cmd);
    cmd.spawn().map_err(|e| {
        Outcome::Failed(
            format!("starting worker {}: {e}", exe.display()),
            Usage::default(),
        )
    })
}

/// Waits for the worker `pid` to end, killing its process group when `verdict` is already
/// set (its observer could not attach), at the deadline, or when `stop` is raised. Returns
/// its wait status, its resource usage and the verdict, if any.
fn wait_for(
    pid: sys::Pid,
    deadline: Instant,
    timeout: Duration,
    stop: &AtomicBool,
    mut verdict: Option<Outcome>,
    mut observer: Option<&mut dyn Observer>,
) -> (libc::c_int, Usage, Option<Outcome>) {
    let pidfd = sys::pidfd_open(pid).ok();
    // The observer (the profiler's sampler) wants to be polled every 10 ms; otherwise the
    // wait sleeps on the pidfd until the worker ends, the deadline comes, or 100 ms pass (so
    // that Ctrl-C is seen promptly).
    let poll_every = Duration::from_millis(if observer.is_some() { 10 } else { 100 });
    let (status, total) = loop {
        match sys::wait4(pid, true) {
            Ok((got, status, usage)) if got == pid => {
                // The rule is about when the worker ended, not about when we looked: a worker
                // that ended after its deadline timed out, however soon we noticed.
                if verdict.is_none() {
                    if let Some(msg) = judge_end(Instant::now(), deadline, timeout) {
                        verdict = Some(Outcome::Failed(msg, Usage::default()));
                    }
                }
                break (status, usage);
            }
            Ok(_) => {}
            Err(e) => {
                verdict = Some(Outcome::Failed(
                    format!("waiting for the worker: {e}"),
                    Usage::default(),
                ));
                break (0, Usage::default());
            }
        }
        let now = Instant::now();
        if verdict.is_some() {
            // The observer could not attach: the held worker is killed below.
        } else if stop.load(Ordering::Relaxed) {
            verdict = Some(Outcome::Interrupted);
        } else if now >= deadline {
            verdict = Some(Outcome::Failed(
                timeout_message(timeout, None),
                Usage::default(),
            ));
        }
        if verdict.is_some() {
            let _ = sys::kill(-pid, libc::SIGKILL);
            let r = sys::wait4(pid, false)
                .map(|(_, s, u)| (s, u))
                .unwrap_or((0, Usage::default()));
            break r;
        }
        let wait = poll_every.min(deadline.saturating_duration_since(now));
        match &pidfd {
            Some(fd) => {
                let _ = sys::poll_readable(fd.as_raw_fd(), ceil_ms(wait));
            }
            None => std::thread::sleep(wait.min(Duration::from_millis(5))),
        }
        if let Some(obs) = observer.as_deref_mut() {
            obs.poll();
        }
    };
    if let Some(obs) = observer {
        obs.poll();
    }
    (status, total, verdict)
}

/// What an ended worker gave: everything left in its process group is killed and waited for
/// (orphans come to us as subreaper), what a killed or failed worker left in /tmp and the
/// kernel is removed, and its report is read. The caller reaps stray zombies after the last
/// of its workers (earlier, it would take another live worker's exit status).
fn collect(
    mut child: std::process::Child,
    status: libc::c_int,
    total: Usage,
    verdict: Option<Outcome>,
) -> Outcome {
    let pid = child.id() as sys::Pid;
    let _ = sys::kill(-pid, libc::SIGKILL);
    sys::reap_group(pid);
    // A worker killed mid-trial (timeout, Ctrl-C, a crash) could not remove its scratch
    // directories; one that exited 0 removed them itself, and /tmp is not read for it.
    if verdict.is_some() || sys::exit_code(status) != 0 {
        janitor::remove_owned_by(pid);
        // And its long-haul link (net suite), which lives in the kernel, not in /tmp.
        janitor::remove_links_owned_by(pid as u32);
    }
    let mut out = String::new();
    let mut err = String::new();
    if let Some(mut s) = child.stdout.take() {
        let _ = s.read_to_string(&mut out);
    }
    if let Some(mut s) = child.stderr.take() {
        let _ = s.read_to_string(&mut err);
    }
    if let Some(v) = verdict {
        return match v {
            Outcome::Failed(m, _) => Outcome::Failed(m, total),
            other => other,
        };
    }
    match serde_json::from_str::<Report>(out.trim()) {
        Ok(rep) => match rep.error {
            Some(e) => Outcome::Failed(e, total),
            None if sys::exit_code(status) != 0 => Outcome::Failed(
                format!("worker exited with {}", sys::exit_code(status)),
                total,
            ),
            None => Outcome::Done(Box::new(rep), total),
        },
        Err(_) => {
            let last = err.lines().last().unwrap_or("").trim();
            Outcome::Failed(
                format!(
                    "worker died with status {} without a report{}",
                    sys::exit_code(status),
                    if last.is_empty() {
                        String::new()
                    } else {
                        format!(": {last}")
                    }
                ),
                total,
            )
        }
    }
}

/// Two workers at once (`ab --duet`): both started, then waited for one after the other
/// (they run about as long); a stop or a timeout of either kills both. Nothing either
/// started survives this function.
fn run_pair(exe: &Path, reqs: [&Request; 2], timeout: Duration, stop: &AtomicBool) -> [Outcome; 2] {
    let children = reqs.map(|r| spawn(exe, r));
    let deadline = Instant::now() + timeout;
    let mut kill_rest = false;
    let mut done = Vec::with_capacity(2);
    for child in children {
        let child = match child {
            Ok(c) => c,
            Err(failed) => {
                kill_rest = true;
                done.push(failed);
                continue;
            }
        };
        let pid = child.id() as sys::Pid;
        let verdict = kill_rest.then(|| {
            Outcome::Failed(
                "the other side's worker failed or was stopped".into(),
                Usage::default(),
            )
        });
        let (status, total, verdict) = wait_for(pid, deadline, timeout, stop, verdict, None);
        kill_rest |= verdict.is_some();
        done.push(collect(child, status, total, verdict));
    }
    sys::reap_zombies();
    let second = done.pop().expect("two workers");
    let first = done.pop().expect("two workers");
    [first, second]
}

/// The wait rule: a worker that ended at `ended`, with `deadline` set `limit` after its start,
/// timed out if it ended after the deadline; the message says by how much.
fn judge_end(ended: Instant, deadline: Instant, limit: Duration) -> Option<String> {
    let late = ended.checked_duration_since(deadline)?;
    (!late.is_zero()).then(|| timeout_message(limit, Some(late)))
}

/// Why a trial timed out, with the real limit: killed at it (`late` None) or ended `late` after it.
fn timeout_message(limit: Duration, late: Option<Duration>) -> String {
    let limit = limit.as_secs_f64();
    match late {
        None => format!(
            "timed out at its {limit} s limit; killed with its process group (raise --timeout if this is expected)"
        ),
        Some(late) => format!(
            "timed out: ended {} after its {limit} s limit (raise --timeout if this is expected)",
            fmt_late(late)
        ),
    }
}

/// How late a worker ended, at a precision that suits the size.
fn fmt_late(late: Duration) -> String {
    let s = late.as_secs_f64();
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 0.001 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{:.0} us", s * 1e6)
    }
}

/// A wait in whole milliseconds for poll(2), rounded up so that a wait never ends before the
/// deadline it aims at (which would spin), and at least 1 ms.
fn ceil_ms(d: Duration) -> i32 {
    let ms = d.as_nanos().div_ceil(1_000_000).max(1);
    ms.min(i32::MAX as u128) as i32
}

fn trial_from(kind: TrialKind, iterations: u64, outcome: &Outcome) -> Trial {
    let (rep, total, error) = match outcome {
        Outcome::Done(r, t) => ((**r).clone(), *t, None),
        Outcome::Failed(e, t) => (Report::default(), *t, Some(e.clone())),
        Outcome::Interrupted => (
            Report::default(),
            Usage::default(),
            Some("interrupted".into()),
        ),
    };
    Trial {
        kind,
        iterations,
        wall_ns: rep.wall_ns,
        usage: rep.usage,
        children: error.is_none().then_some(rep.children),
        worker_total: total,
        worker_rss_bytes: rep.rss_bytes,
        worker_maps: rep.maps,
        migrations: rep.migrations,
        cpu_start: rep.cpu_start,
        cpu_end: rep.cpu_end,
        outlier: Outlier::None,
        error,
        counters: rep.counters,
        round: None,
        started_ns: None,
    }
}

/// Runs `worker` with what `target`'s trials need made first and removed after, once the
/// worker is gone (on success, failure, timeout and interruption alike): its swap area (see
/// `zram`) and its memory-limited cgroup (see `cgroup`), whose directory `worker` hands the
/// worker.
fn with_trial_resources(
    target: &Target,
    worker: impl FnOnce(Option<String>) -> Outcome,
) -> Outcome {
    // The swap first: the pages the limited cgroup evicts go there.
    let swap = target
        .swap_bytes
        .map(zram::ZramSwap::create)
        .transpose()
        .map_err(|e| e.to_string());
    let limited = match &swap {
        Ok(_) => target
            .memory_limit_bytes
            .map(cgroup::Limited::create)
            .transpose()
            .map_err(|e| e.to_string()),
        Err(e) => Err(e.clone()),
    };
    let outcome = match &limited {
        Ok(l) => worker(l.as_ref().map(|l| l.path().display().to_string())),
        Err(e) => Outcome::Failed(e.clone(), Usage::default()),
    };
    drop(limited);
    drop(swap);
    outcome
}

/// Runs one trial of `target` (a core benchmark or a suite's point) at `iterations` with
/// `observer` attached to its worker from before setup to the end (the profiler), in the
/// cgroup and with the swap area its trials have. Returns the worker's report (its
/// `region_ns` bounds the timed region), or why the trial failed.
pub fn observed_trial(
    target: &Target,
    plan: &Plan,
    opts: &Options,
    iterations: u64,
    observer: &mut dyn Observer,
    stop: &AtomicBool,
) -> Result<Result<Report, String>, Stop> {
    let req = Request {
        hold: true,
        ..Request::target(target, plan, iterations)
    };
    let outcome = with_trial_resources(target, |cgroup| {
        run_worker_observed(
            &opts.worker_exe,
            &Request { cgroup, ..req },
            opts.timeout,
            stop,
            Some(observer),
        )
    });
    match outcome {
        Outcome::Done(rep, _) => Ok(Ok(*rep)),
        Outcome::Failed(e, _) => Ok(Err(e)),
        Outcome::Interrupted => Err(Stop::Interrupted),
    }
}

/// Measures the timer and loop overhead in a worker placed like single-process benchmarks.
pub fn measure_overhead(opts: &Options, stop: &AtomicBool) -> Result<Overhead, String> {
    let first = opts.cpus.cpus.first().copied();
    let iterations = 10_000_000;
    let req = Request {
        pin: first.map(|c| vec![c]),
        ..Request::plain(worker::OVERHEAD_ID, iterations)
    };
    match run_worker(&opts.worker_exe, &req, opts.timeout, stop) {
        Outcome::Done(r, _) => Ok(Overhead {
            timer_ns: r.timer_ns.unwrap_or(0.0),
            loop_ns_per_iteration: r.wall_ns as f64 / iterations as f64,
        }),
        Outcome::Failed(e, _) => Err(e),
        Outcome::Interrupted => Err("interrupted".into()),
    }
}

/// Next iteration count during calibration: aim 15% past the target, grow at least 2x and at
/// most 100x per step so that a first very fast run cannot overshoot wildly.
pub fn next_iterations(n: u64, wall_ns: u64, target_ns: u64) -> u64 {
    let factor = if wall_ns == 0 {
        100.0
    } else {
        (target_ns as f64 * 1.15 / wall_ns as f64).clamp(2.0, 100.0)
    };
    ((n as f64 * factor).ceil() as u64)
        .max(n.saturating_add(1))
        .min(MAX_ITERATIONS)
}

/// The one calibration rule (a run's measurements and `sysperf trace` share it): from one
/// iteration, the count grows by [`next_iterations`] (at most to `max`) until one trial
/// lasts at least `target_ns` or the count is `max`. `trial(n)` runs a trial of `n`
/// iterations and gives its wall time, or nothing when it failed: then so does this.
pub fn calibrate<E>(
    target_ns: u64,
    max: u64,
    mut trial: impl FnMut(u64) -> Result<Option<u64>, E>,
) -> Result<Option<u64>, E> {
    let mut n = 1;
    loop {
        match trial(n)? {
            None => return Ok(None),
            Some(wall) if wall >= target_ns || n >= max => return Ok(Some(n)),
            Some(wall) => n = next_iterations(n, wall, target_ns).min(max),
        }
    }
}

/// Other work on a measurement's CPUs, accumulated over the windows in which its own trials
/// ran: with interleaved rounds those windows are spread over the whole run.
#[derive(Debug, Default, Clone)]
struct Window {
    wall_s: f64,
    busy_ticks: u64,
    steal_ticks: u64,
    ours_s: f64,
    ncpu: usize,
    /// How many windows were added: each pair of /proc/stat reads rounds a CPU's busy time
    /// down to a clock tick at either end, so the sum is off by at most one tick per CPU per
    /// window.
    windows: u32,
    /// Busy ticks of every CPU, and the CPUs the test was not placed on (none when it may
    /// run on all of them).
    all_busy_ticks: u64,
    rest_cpus: Vec<u32>,
}

impl Window {
    /// Whether other work took more than [`BUSY_WARN`] of the window's CPUs. /proc/stat counts
    /// in clock ticks (`tick_s`, 10 ms here): a window shorter than half a second cannot tell a
    /// few percent of other work from rounding, so it is judged only when the other work is
    /// over the bar even with the most rounding can add (a tick per CPU per window) taken off:
    /// a CPU hog beside a short run then still shows (#30).
    fn busy(&self, tick_s: f64) -> bool {
        self.over_bar(self.other_s(tick_s), self.ncpu, tick_s)
    }

    /// Seconds of other work on the test's CPUs: their busy time less sysperf's own.
    fn other_s(&self, tick_s: f64) -> f64 {
        (self.busy_ticks as f64 * tick_s - self.ours_s).max(0.0)
    }

    /// Seconds of other work on the machine's other CPUs: the whole machine's busy time less
    /// sysperf's own and less the other work on the test's CPUs.
    fn rest_other_s(&self, tick_s: f64) -> f64 {
        let all = (self.all_busy_ticks as f64 * tick_s - self.ours_s).max(0.0);
        (all - self.other_s(tick_s)).max(0.0)
    }

    /// Whether other work took more than [`BUSY_WARN`] of the machine's other CPUs (those the
    /// test was not placed on), judged as [`Window::busy`] judges the test's own: what the
    /// whole machine was busy with, less sysperf's own processes and the other work on the
    /// test's CPUs. Never when the test's CPUs are all of them.
    fn rest_busy(&self, tick_s: f64) -> bool {
        !self.rest_cpus.is_empty()
            && self.over_bar(self.rest_other_s(tick_s), self.rest_cpus.len(), tick_s)
    }

    /// The other work's share of `ncpu` CPUs for the window, over the bar; below half a
    /// second only with the most the ticks' rounding can add taken off.
    fn over_bar(&self, other_s: f64, ncpu: usize, tick_s: f64) -> bool {
        if self.wall_s <= 0.0 {
            return false;
        }
        let ncpu = ncpu.max(1) as f64;
        let rounding_s = f64::from(self.windows) * ncpu * tick_s;
        let share = |s: f64| s / (self.wall_s * ncpu);
        (self.wall_s >= 0.5 && share(other_s) > BUSY_WARN)
            || share(other_s - rounding_s) > BUSY_WARN
    }

    /// The other work's share of the machine's other CPUs, in percent (for the warning).
    fn rest_busy_pct(&self, tick_s: f64) -> f64 {
        100.0 * self.rest_other_s(tick_s) / (self.wall_s * self.rest_cpus.len().max(1) as f64)
    }
}

/// Unix time in nanoseconds: when a trial's worker was started, when a run began.
pub fn unix_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// The CPUs whose other work is judged: the plan's, or all when the scheduler places freely.
fn watched_cpus(plan: &Plan) -> Vec<u32> {
    if plan.label == "free" && plan.worker.is_none() {
        Vec::new()
    } else {
        plan.cpus.clone()
    }
}

/// One target being measured: calibration and warm-up first ([`Measurement::prepare`]), then
/// counted trials one at a time ([`Measurement::trial`]), so that the engine can interleave
/// the trials of many targets in rounds; [`Measurement::finish`] summarizes and warns.
pub struct Measurement<'a> {
    target: &'a Target,
    plan: &'a Plan,
    opts: &'a Options,
    result: BenchResult,
    warnings: Vec<Warning>,
    /// The calibrated count; None until prepared, or when calibration failed.
    iterations: Option<u64>,
    /// A count given instead of calibration ([`Measurement::fix_iterations`]).
    fixed: Option<u64>,
    window: Window,
    /// Uses of the trials' channels by other processes (#41): how many, in how many trials.
    intruded: (u64, usize),
}

impl<'a> Measurement<'a> {
    pub fn new(target: &'a Target, plan: &'a Plan, opts: &'a Options) -> Measurement<'a> {
        Measurement {
            target,
            plan,
            opts,
            result: BenchResult {
                id: target.id.clone(),
                group: target.group.clone(),
                ops_per_iteration: target.ops_per_iteration,
                paper_count: target.paper_count,
                unit: target.unit.clone(),
                placement: plan.label.to_string(),
                cpus: plan.cpus.clone(),
                trials: Vec::new(),
                summary: None,
                error: None,
            },
            warnings: Vec::new(),
            iterations: None,
            fixed: None,
            window: Window::default(),
            intruded: (0, 0),
        }
    }

    /// The calibrated (or fixed) iteration count; None until prepared, or when calibration
    /// failed.
    pub fn iterations(&self) -> Option<u64> {
        self.iterations
    }

    /// Runs at `n` iterations instead of calibrating: [`Self::prepare`] then runs the warm-up
    /// only (`ab`: both sides of a test at the count calibrated for one).
    pub fn fix_iterations(&mut self, n: u64) {
        self.fixed = Some(n);
    }

    /// Per-operation wall time (overhead not subtracted) of each successful counted trial,
    /// with its round: what a paired comparison between rounds watches.
    pub fn by_round(&self) -> Vec<(u32, f64)> {
        let ops = self.target.ops_per_iteration.max(1) as f64;
        self.result
            .trials
            .iter()
            .filter(|t| t.kind == TrialKind::Measured && t.error.is_none() && t.iterations > 0)
            .filter_map(|t| Some((t.round?, t.wall_ns as f64 / (t.iterations as f64 * ops))))
            .collect()
    }

    pub fn id(&self) -> &str {
        &self.target.id
    }

    /// Whether counted trials can run: calibration (or the fixed count) gave an iteration count.
    pub fn ready(&self) -> bool {
        self.iterations.is_some()
    }

    /// Counted trials done so far (successful or not).
    pub fn measured_trials(&self) -> usize {
        self.result
            .trials
            .iter()
            .filter(|t| t.kind == TrialKind::Measured)
            .count()
    }

    /// Whether this target has something to store: a counted trial, or a failed calibration.
    pub fn settled(&self) -> bool {
        self.measured_trials() > 0 || (self.iterations.is_none() && self.result.error.is_some())
    }

    /// Per-operation wall times of the successful counted trials so far (overhead not
    /// subtracted): what a precision target watches between rounds.
    pub fn wall_ns_per_op(&self) -> Vec<f64> {
        let ops = self.target.ops_per_iteration.max(1) as f64;
        self.result
            .trials
            .iter()
            .filter(|t| t.kind == TrialKind::Measured && t.error.is_none() && t.iterations > 0)
            .map(|t| t.wall_ns as f64 / (t.iterations as f64 * ops))
            .collect()
    }

    /// Runs `f` and adds its wall time, the CPUs' busy and steal ticks and sysperf's own CPU
    /// time to the window that the busy-CPU and steal warnings judge.
    fn windowed<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        let own0 = sys::usage_self_and_children();
        let stat0 = procfs::read_stat().unwrap_or_default();
        let t0 = Instant::now();
        let out = f(self);
        let wall = t0.elapsed().as_secs_f64();
        let stat1 = procfs::read_stat().unwrap_or_default();
        let own1 = sys::usage_self_and_children();
        let watched = self.watched();
        let d = procfs::cpus_since(&stat0, &stat1, &watched);
        let all = procfs::cpus_since(&stat0, &stat1, &[]);
        let w = &mut self.window;
        w.wall_s += wall;
        w.busy_ticks += d.busy();
        w.all_busy_ticks += all.busy();
        w.rest_cpus = if watched.is_empty() {
            Vec::new()
        } else {
            stat1
                .cpus
                .keys()
                .copied()
                .filter(|n| !watched.contains(n))
                .collect()
        };
        w.steal_ticks += d.steal;
        w.ours_s += own1.since(&own0).cpu_ns() as f64 / 1e9;
        w.windows += 1;
        w.ncpu = if watched.is_empty() {
            stat1.cpus.len().max(1)
        } else {
            watched.len()
        };
        out
    }

    fn watched(&self) -> Vec<u32> {
        watched_cpus(self.plan)
    }

    /// One worker run of `kind` at `iterations`, its trial recorded; the wall time when it
    /// succeeded.
    fn one(
        &mut self,
        kind: TrialKind,
        round: Option<u32>,
        iterations: u64,
        stop: &AtomicBool,
        progress: &dyn Fn(Event),
    ) -> Result<Option<u64>, Stop> {
        let (target, plan, opts) = (self.target, self.plan, self.opts);
        let req = Request {
            observe: opts.observe,
            // Perf counters cost context switches and forks something (see counters.rs):
            // the warm-up trial, at the same iteration count, carries them, so that the
            // counted trials stay undisturbed; without a warm-up (--quick) every trial does.
            perf: match kind {
                TrialKind::Calibration => false,
                TrialKind::Warmup => true,
                TrialKind::Measured => !opts.warmup,
            },
            ..Request::target(target, plan, iterations)
        };
        // A memory-limited target runs each trial in a cgroup of its own (and a target that
        // pages to swap with a swap area of its own), made here and removed, with anything
        // left in it, once the worker's process group is dead: whether the trial succeeded,
        // failed, timed out or was interrupted.
        let started_ns = unix_ns();
        let outcome = with_trial_resources(target, |cgroup| {
            run_worker(
                &opts.worker_exe,
                &Request { cgroup, ..req },
                opts.timeout,
                stop,
            )
        });
        if let Outcome::Interrupted = outcome {
            return Err(Stop::Interrupted);
        }
        let t = Trial {
            round,
            started_ns: Some(started_ns),
            ..trial_from(kind, iterations, &outcome)
        };
        let wall = t.error.is_none().then_some(t.wall_ns);
        self.result.trials.push(t);
        self.count_intrusions(&outcome);
        progress(Event::Trial { kind });
        Ok(wall)
    }

    /// Calibration, then the warm-up trial. Calibration grows the count until one trial lasts
    /// at least `--min-time`, unless the target fixes its count (the paper's own, like BBN's
    /// 1000 blocks): then there is nothing to find, and a target that cannot run fails its
    /// warm-up and trials instead (some suites' setup costs seconds, which a calibration trial
    /// would spend for nothing). A failed calibration records the error; [`Self::ready`] says.
    pub fn prepare(&mut self, stop: &AtomicBool, progress: &dyn Fn(Event)) -> Result<(), Stop> {
        self.windowed(|m| m.prepare_inner(stop, progress))
    }

    fn prepare_inner(&mut self, stop: &AtomicBool, progress: &dyn Fn(Event)) -> Result<(), Stop> {
        let target_ns = self.opts.min_time.as_nanos().min(u64::MAX as u128) as u64;
        let iterations = if let Some(fixed) = self.fixed.or(self.target.iterations) {
            fixed.max(1)
        } else {
            let found = calibrate(target_ns, MAX_ITERATIONS, |n| {
                self.one(TrialKind::Calibration, None, n, stop, progress)
            })?;
            let Some(n) = found else {
                let why = self
                    .result
                    .trials
                    .last()
                    .and_then(|t| t.error.clone())
                    .unwrap_or_default();
                self.result.error = Some(format!("calibration failed: {why}"));
                self.warnings.push(Warning {
                    bench: Some(self.target.id.clone()),
                    kind: WarningKind::Failed,
                    message: format!("{}: {why}", self.target.id),
                });
                return Ok(());
            };
            n
        };
        if self.opts.warmup {
            self.one(TrialKind::Warmup, None, iterations, stop, progress)?;
        }
        self.iterations = Some(iterations);
        Ok(())
    }

    /// One counted trial at the calibrated count, in `round`; nothing when calibration failed.
    pub fn trial(
        &mut self,
        round: u32,
        stop: &AtomicBool,
        progress: &dyn Fn(Event),
    ) -> Result<(), Stop> {
        let Some(n) = self.iterations else {
            return Ok(());
        };
        self.windowed(|m| {
            m.one(TrialKind::Measured, Some(round), n, stop, progress)
                .map(|_| ())
        })
    }

    /// Summary (overhead subtracted, outliers labelled) and the warnings: failed trials, high
    /// variation, other work on the CPUs, steal.
    /// Non-destructive: the engine takes a snapshot after every round to store what the run
    /// has so far.
    pub fn finish(&self, overhead: Option<&Overhead>) -> (BenchResult, Vec<Warning>) {
        let (result, mut warnings) = Self::summarized(
            self.target,
            self.plan,
            &self.window,
            self.iterations,
            self.result.clone(),
            self.warnings.clone(),
            overhead,
        );
        warnings.extend(self.intruded_warning());
        (result, warnings)
    }

    fn count_intrusions(&mut self, outcome: &Outcome) {
        if let Outcome::Done(r, _) = outcome {
            if r.intrusions > 0 {
                self.intruded.0 += r.intrusions;
                self.intruded.1 += 1;
            }
        }
    }

    /// Says that other processes used the test's own channel (#41): counted apart from the
    /// test's own work, their cost is in the trials all the same.
    fn intruded_warning(&self) -> Option<Warning> {
        let (times, trials) = self.intruded;
        let id = &self.target.id;
        (times > 0).then(|| Warning {
            bench: Some(id.clone()),
            kind: WarningKind::Intruded,
            message: format!(
                "{id}: other processes connected to the test's own listening socket {times} time{} in {trials} of its {} trials (its address is listed in /proc/net/unix or /proc/net/tcp); the server accepted and closed them apart from the test's connections, and its time on them is in those trials: see who connects (ss -xp, ss -tp) and run again",
                if times == 1 { "" } else { "s" },
                self.result.trials.len()
            ),
        })
    }

    fn summarized(
        target: &Target,
        plan: &Plan,
        window: &Window,
        iterations: Option<u64>,
        mut result: BenchResult,
        mut warnings: Vec<Warning>,
        overhead: Option<&Overhead>,
    ) -> (BenchResult, Vec<Warning>) {
        let id = target.id.clone();
        if iterations.is_none() {
            return (result, warnings);
        }
        let measured = result
            .trials
            .iter()
            .filter(|t| t.kind == TrialKind::Measured)
            .count();
        let failed: Vec<&Trial> = result
            .trials
            .iter()
            .filter(|t| t.kind == TrialKind::Measured && t.error.is_some())
            .collect();
        if let Some(t) = failed.first() {
            let w = Warning {
                bench: Some(id.clone()),
                kind: WarningKind::TrialFailed,
                message: format!(
                    "{id}: {} of {measured} trials failed ({})",
                    failed.len(),
                    t.error.clone().unwrap_or_default()
                ),
            };
            warnings.push(w);
        }
        // How much the trials vary is judged for the whole run, against the machine's speed
        // changes (`crate::speed`), not test by test.
        match summarize(target.ops_per_iteration, &mut result.trials, overhead) {
            Some(summary) => result.summary = Some(summary),
            None => {
                // Say why, as calibration failures do: with a fixed count there was no
                // calibration trial to fail first.
                let why = result.trials.iter().find_map(|t| t.error.clone());
                result.error = Some(match why {
                    Some(e) => format!("no trial succeeded: {e}"),
                    None => "no trial succeeded".into(),
                });
            }
        }
        // Other work on our CPUs: their busy time minus what sysperf's processes used.
        let w = window;
        let tick_s = 1.0 / sys::clock_ticks() as f64;
        let other = w.other_s(tick_s);
        let ncpu = w.ncpu.max(1) as f64;
        let watched = watched_cpus(plan);
        let judged = w.wall_s >= 0.5;
        if w.busy(tick_s) {
            warnings.push(Warning {
                bench: Some(id.clone()),
                kind: WarningKind::BusyCpu,
                message: format!(
                    "{id}: other work used {:.0}% of CPU {} while it ran; results may be inflated (see what else runs with top)",
                    100.0 * other / (w.wall_s * ncpu),
                    if watched.is_empty() { "all".to_string() } else { crate::units::format_list(&watched) }
                ),
            });
        }
        if w.rest_busy(tick_s) {
            warnings.push(Warning {
                bench: Some(id.clone()),
                kind: WarningKind::BusyMachine,
                message: format!(
                    "{id}: other work used {:.0}% of CPU {} (not the test's) while it ran; CPUs that share caches, memory or, on a VM, host cores slow the test too (see what else runs with top)",
                    w.rest_busy_pct(tick_s),
                    crate::units::format_list(&w.rest_cpus)
                ),
            });
        }
        let steal = w.steal_ticks as f64 * tick_s / (w.wall_s * ncpu);
        if judged && steal > 0.02 {
            warnings.push(Warning {
                bench: Some(id.clone()),
                kind: WarningKind::Steal,
                message: format!(
                    "{id}: the hypervisor took {:.0}% of the CPU (steal time) while it ran",
                    100.0 * steal
                ),
            });
        }
        (result, warnings)
    }
}

/// How a duet round went ([`duet`]).
#[derive(Debug, Clone, Copy)]
pub struct DuetRound {
    /// From starting the two workers to the later one's end of setup: the least wait the
    /// next round's start should allow.
    pub ready: Duration,
    /// The share of the longer timed region that the two overlapped (1: fully), when both
    /// succeeded.
    pub overlap: Option<f64>,
}

/// One counted trial of `a` and one of `b` at the same time (`ab --duet`, #30): `a`'s worker
/// pinned to `cpus[0]`, `b`'s to `cpus[1]` (their children too: they inherit it), both timed
/// regions started together `start_in` after the workers are started (each waits after its
/// setup). Both must be prepared single-CPU measurements; busy-CPU accounting is left out,
/// the other side being the other work by design.
pub fn duet<'m>(
    a: &mut Measurement<'m>,
    b: &mut Measurement<'m>,
    round: u32,
    cpus: [u32; 2],
    start_in: Duration,
    stop: &AtomicBool,
    progress: &dyn Fn(Event),
) -> Result<DuetRound, Stop> {
    let (Some(na), Some(nb)) = (a.iterations, b.iterations) else {
        return Ok(DuetRound {
            ready: start_in,
            overlap: None,
        });
    };
    let spawned = sys::monotonic_ns();
    let start_at = spawned + start_in.as_nanos().min(u64::MAX as u128) as u64;
    let request = |m: &Measurement, n: u64, cpu: u32| Request {
        pin: Some(vec![cpu]),
        child_cpu: None,
        start_at_ns: Some(start_at),
        ..Request::target(m.target, m.plan, n)
    };
    let (ra, rb) = (request(a, na, cpus[0]), request(b, nb, cpus[1]));
    let started_ns = unix_ns();
    let outcomes = run_pair(&a.opts.worker_exe, [&ra, &rb], a.opts.timeout, stop);
    if outcomes.iter().any(|o| matches!(o, Outcome::Interrupted)) {
        return Err(Stop::Interrupted);
    }
    let report = |o: &Outcome| match o {
        Outcome::Done(r, _) => Some((r.ready_ns, r.region_ns)),
        _ => None,
    };
    let (ga, gb) = (report(&outcomes[0]), report(&outcomes[1]));
    let ready = [ga, gb]
        .iter()
        .flatten()
        .filter_map(|(r, _)| *r)
        .max()
        .map_or(start_in, |r| {
            Duration::from_nanos(r.saturating_sub(spawned))
        });
    let overlap = match (ga.and_then(|g| g.1), gb.and_then(|g| g.1)) {
        (Some([a0, a1]), Some([b0, b1])) => {
            let both = a1.min(b1).saturating_sub(a0.max(b0)) as f64;
            let longer = (a1 - a0).max(b1 - b0).max(1) as f64;
            Some(both / longer)
        }
        _ => None,
    };
    for (m, (n, outcome)) in [a, b]
        .into_iter()
        .zip([(na, &outcomes[0]), (nb, &outcomes[1])])
    {
        m.result.placement = "duet".into();
        m.result.cpus = vec![cpus[0].min(cpus[1]), cpus[0].max(cpus[1])];
        m.result.trials.push(Trial {
            round: Some(round),
            started_ns: Some(started_ns),
            ..trial_from(TrialKind::Measured, n, outcome)
        });
        m.count_intrusions(outcome);
        progress(Event::Trial {
            kind: TrialKind::Measured,
        });
    }
    Ok(DuetRound { ready, overlap })
}

/// Measures one target placed by `plan` (see [`placement::plan`]) on its own: calibration,
/// warm-up, counted trials back to back, summary and warnings. The engine interleaves
/// [`Measurement`]s instead; this is for one-off measurements (profile calibration, tests).
pub fn measure(
    target: &Target,
    plan: &Plan,
    opts: &Options,
    overhead: Option<&Overhead>,
    stop: &AtomicBool,
    progress: &dyn Fn(Event),
) -> Result<(BenchResult, Vec<Warning>), Stop> {
    let mut m = Measurement::new(target, plan, opts);
    m.prepare(stop, progress)?;
    if m.ready() {
        for round in 0..opts.trials {
            m.trial(round, stop, progress)?;
        }
    }
    Ok(m.finish(overhead))
}

/// Why a trial run by [`run_trial`] gave no report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrialError {
    Interrupted,
    Failed(String),
}

/// Runs one trial of `spec` placed by `plan`, outside any calibration or trial plan, for
/// commands that watch a worker from outside (`sysperf trace`). The same guarantees as every
/// trial: the worker and its process group are killed on timeout or when `stop` is set.
pub fn run_trial(
    exe: &Path,
    spec: &Spec,
    plan: &Plan,
    iterations: u64,
    timeout: Duration,
    stop: &AtomicBool,
) -> Result<Report, TrialError> {
    // A trace counts what the kernel does itself: no counters of ours in its way.
    let req = Request::trial(spec, plan, iterations);
    match run_worker(exe, &req, timeout, stop) {
        Outcome::Done(r, _) => Ok(*r),
        Outcome::Failed(e, _) => Err(TrialError::Failed(e)),
        Outcome::Interrupted => Err(TrialError::Interrupted),
    }
}

/// Per-operation summary of the measured, successful trials; labels their outliers.
pub fn summarize(
    ops_per_iteration: u64,
    trials: &mut [Trial],
    overhead: Option<&Overhead>,
) -> Option<Summary> {
    let idx: Vec<usize> = (0..trials.len())
        .filter(|&i| {
            trials[i].kind == TrialKind::Measured
                && trials[i].error.is_none()
                && trials[i].iterations > 0
        })
        .collect();
    if idx.is_empty() {
        return None;
    }
    let ops = |t: &Trial| (t.iterations * ops_per_iteration) as f64;
    let per_op = |f: &dyn Fn(&Trial) -> f64| -> Vec<f64> {
        idx.iter()
            .map(|&i| f(&trials[i]) / ops(&trials[i]))
            .collect()
    };
    let wall = per_op(&|t| crate::model::adjusted_wall_ns(t, overhead));
    // The parent's own time, and the whole tree beside it: which of them the paper's time
    // charged depends on whether its program waited for its children (bench::charged).
    let child = |t: &Trial| t.children.unwrap_or_default();
    let user = per_op(&|t| t.usage.user_ns.saturating_sub(child(t).user_ns) as f64);
    let sys_ = per_op(&|t| t.usage.sys_ns.saturating_sub(child(t).sys_ns) as f64);
    let known = idx.iter().all(|&i| trials[i].children.is_some());
    let whole = known
        .then(|| {
            Some(crate::model::WholeCpu {
                user_ns_per_op: stats::estimate(&per_op(&|t| t.usage.user_ns as f64)).ok()?,
                sys_ns_per_op: stats::estimate(&per_op(&|t| t.usage.sys_ns as f64)).ok()?,
            })
        })
        .flatten();
    let med = |v: Vec<f64>| stats::median(&v).unwrap_or(0.0);
    let labels = stats::tukey_labels(&wall).ok()?;
    let first = &trials[idx[0]];
    let migrations: Option<Vec<f64>> = idx
        .iter()
        .map(|&i| trials[i].migrations.map(|m| m as f64 / ops(&trials[i])))
        .collect();
    let summary = Summary {
        wall_ns_per_op: stats::estimate(&wall).ok()?,
        user_ns_per_op: stats::estimate(&user).ok()?,
        sys_ns_per_op: stats::estimate(&sys_).ok()?,
        whole,
        minflt_per_op: med(per_op(&|t| t.usage.minflt as f64)),
        majflt_per_op: med(per_op(&|t| t.usage.majflt as f64)),
        csw_per_op: med(per_op(&|t| (t.usage.nvcsw + t.usage.nivcsw) as f64)),
        nvcsw_per_op: med(per_op(&|t| t.usage.nvcsw as f64)),
        nivcsw_per_op: med(per_op(&|t| t.usage.nivcsw as f64)),
        migrations_per_op: migrations.map(med),
        worker_rss_bytes: first.worker_rss_bytes,
        worker_maps: first.worker_maps,
        counters: summarize_counters(trials, ops_per_iteration),
    };
    for (&i, l) in idx.iter().zip(labels) {
        trials[i].outlier = l;
    }
    Some(summary)
}

/// Medians of the counters per operation and per trial, None when no trial was observed.
/// The system-wide /proc figures come from the measured trials; the perf figures from every
/// successful non-calibration trial that has them (the warm-up, or the measured trials of a
/// run without one), each only when some trial has it.
pub fn summarize_counters(trials: &[Trial], ops_per_iteration: u64) -> Option<CounterSummary> {
    let ok = |t: &&Trial| t.error.is_none() && t.iterations > 0 && t.counters.is_some();
    fn with_ops(t: &Trial, ops_per_iteration: u64) -> Option<(&Counters, f64)> {
        let ops = (t.iterations * ops_per_iteration) as f64;
        t.counters.as_ref().map(|c| (c, ops))
    }
    let measured: Vec<(&Counters, f64)> = trials
        .iter()
        .filter(ok)
        .filter(|t| t.kind == TrialKind::Measured)
        .filter_map(|t| with_ops(t, ops_per_iteration))
        .collect();
    if measured.is_empty() {
        return None;
    }
    let perf: Vec<(&Counters, f64)> = trials
        .iter()
        .filter(ok)
        .filter(|t| t.kind != TrialKind::Calibration)
        .filter_map(|t| with_ops(t, ops_per_iteration))
        .filter(|(c, _)| c.task_clock_ns.is_some() || c.context_switches.is_some())
        .collect();
    let med = |v: Vec<f64>| stats::median(&v).unwrap_or(0.0);
    let per_op = |f: &dyn Fn(&Counters) -> Option<u64>| -> Option<f64> {
        let v: Vec<f64> = perf
            .iter()
            .filter_map(|(c, ops)| f(c).map(|v| v as f64 / ops))
            .collect();
        (!v.is_empty()).then(|| med(v))
    };
    let per_trial =
        |f: &dyn Fn(&Counters) -> u64| med(measured.iter().map(|(c, _)| f(c) as f64).collect());
    Some(CounterSummary {
        trials: measured.len(),
        perf_trials: perf.len(),
        task_clock_ns_per_op: per_op(&|c| c.task_clock_ns),
        context_switches_per_op: per_op(&|c| c.context_switches),
        cpu_migrations_per_op: per_op(&|c| c.cpu_migrations),
        page_faults_per_op: per_op(&|c| c.page_faults),
        cycles_per_op: per_op(&|c| c.cycles),
        instructions_per_op: per_op(&|c| c.instructions),
        interrupts_per_trial: per_trial(&|c| c.interrupts),
        interrupts_per_op: med(measured
            .iter()
            .map(|(c, ops)| c.interrupts as f64 / ops)
            .collect()),
        softirqs_per_trial: per_trial(&|c| c.softirqs),
        interrupts_on_trial_cpus_per_trial: {
            let v: Vec<f64> = measured
                .iter()
                .filter_map(|(c, _)| c.interrupts_on_trial_cpus.map(|v| v as f64))
                .collect();
            (!v.is_empty()).then(|| med(v))
        },
        disk_ios_per_trial: per_trial(&|c| c.disk_reads + c.disk_writes),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_waiting_on_its_stdin_is_found_held_and_a_gone_one_is_not_waited_for() {
        // `cat` blocks reading its standard input, a pipe nobody writes, as a held worker does.
        let mut cat = crate::programs::command("cat")
            .unwrap()
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let held = wait_until_held(cat.id(), Duration::from_secs(30));
        cat.kill().unwrap();
        cat.wait().unwrap();
        assert!(held, "cat never seen blocked reading descriptor 0");
        let t = Instant::now();
        assert!(!wait_until_held(u32::MAX / 2, Duration::from_secs(30)));
        assert!(t.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn other_work_in_a_short_window_shows_only_beyond_what_rounding_can_add() {
        let tick = 0.01;
        let w = |wall_s: f64, busy_ticks: u64, ours_s: f64, windows: u32| Window {
            wall_s,
            busy_ticks,
            steal_ticks: 0,
            ours_s,
            ncpu: 1,
            windows,
            all_busy_ticks: busy_ticks,
            rest_cpus: Vec::new(),
        };
        // Half a second or more: judged as before, 10% of the CPU.
        assert!(w(1.0, 100, 0.85, 5).busy(tick));
        assert!(!w(1.0, 100, 0.95, 5).busy(tick));
        // 0.3 s in 5 windows, a hog taking half the CPU: 0.15 s of other work, of which
        // rounding can explain 0.05 s at most: busy.
        assert!(w(0.3, 30, 0.15, 5).busy(tick));
        // 0.3 s with 0.06 s of other work: the rounding's 0.05 s could be most of it.
        assert!(!w(0.3, 30, 0.24, 5).busy(tick));
        // Windows so short that rounding covers everything: never busy.
        assert!(!w(0.03, 3, 0.0, 3).busy(tick));
        assert!(!w(0.0, 0, 0.0, 0).busy(tick));
    }

    #[test]
    fn other_work_on_the_machines_other_cpus_is_judged_apart_from_the_tests_own() {
        let tick = 0.01;
        // The test on CPU 1 for a second, 0.95 s of its own work there; CPU 0 as busy as
        // `rest_ticks` says, of which sysperf's own processes did nothing.
        let w = |rest_ticks: u64, rest_cpus: Vec<u32>| Window {
            wall_s: 1.0,
            busy_ticks: 100,
            steal_ticks: 0,
            ours_s: 0.95,
            ncpu: 1,
            windows: 5,
            all_busy_ticks: 100 + rest_ticks,
            rest_cpus,
        };
        // A hog on CPU 0: the machine is busy, the test's CPU is not.
        assert!(w(100, vec![0]).rest_busy(tick));
        assert!(!w(100, vec![0]).busy(tick));
        assert!((w(100, vec![0]).rest_busy_pct(tick) - 100.0).abs() < 1e-9);
        // A few percent of background on CPU 0: quiet.
        assert!(!w(3, vec![0]).rest_busy(tick));
        // The test placed on every CPU: no other CPU to judge.
        assert!(!w(100, Vec::new()).rest_busy(tick));
        // sysperf's own parent busy on CPU 0 (its CPU time beyond the test's CPU) is not other
        // work: 1.0 s of ours, 0.05 s of it beyond CPU 1's busy time.
        let ours = Window {
            ours_s: 1.05,
            all_busy_ticks: 105,
            ..w(0, vec![0])
        };
        assert!(!ours.rest_busy(tick));
    }

    #[test]
    fn a_worker_that_ends_after_its_deadline_timed_out_with_the_real_limit() {
        let start = Instant::now();
        let limit = Duration::from_millis(1);
        let deadline = start + limit;
        // Ended 40 ms late, but noticed at once: still a timeout, saying by how much.
        let m = judge_end(deadline + Duration::from_millis(40), deadline, limit).unwrap();
        assert!(m.starts_with("timed out"), "{m}");
        assert!(m.contains("0.001 s limit"), "{m}");
        assert!(m.contains("40.0 ms after"), "{m}");
        // Ended before (or exactly at) the deadline: on time.
        assert_eq!(judge_end(start, deadline, limit), None);
        assert_eq!(judge_end(deadline, deadline, limit), None);
        // The killed-at-the-limit message names the real limit, not a rounded one.
        let m = timeout_message(Duration::from_millis(50), None);
        assert!(m.contains("at its 0.05 s limit"), "{m}");
        assert_eq!(fmt_late(Duration::from_micros(250)), "250 us");
        assert_eq!(fmt_late(Duration::from_millis(1500)), "1.50 s");
    }

    #[test]
    fn waits_round_up_to_whole_milliseconds() {
        assert_eq!(ceil_ms(Duration::ZERO), 1);
        assert_eq!(ceil_ms(Duration::from_micros(1)), 1);
        assert_eq!(ceil_ms(Duration::from_micros(1001)), 2);
        assert_eq!(ceil_ms(Duration::from_millis(100)), 100);
        assert_eq!(ceil_ms(Duration::from_secs(1 << 40)), i32::MAX);
    }

    /// A stand-in worker: a shell script that ignores its arguments and sleeps.
    fn sleeper(dir: &std::path::Path, secs: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join("sleeper");
        std::fs::write(&p, format!("#!/bin/sh\nexec sleep {secs}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[test]
    fn a_worker_past_its_limit_is_killed_and_the_message_states_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let exe = sleeper(dir.path(), "30");
        let req = Request::plain("syscall", 1);
        let stop = AtomicBool::new(false);
        let t0 = Instant::now();
        let out = run_worker(&exe, &req, Duration::from_millis(50), &stop);
        // Killed at the deadline (not after a 30 s sleep), with the limit as given.
        assert!(t0.elapsed() < Duration::from_secs(20));
        match out {
            Outcome::Failed(m, _) => assert!(m.contains("at its 0.05 s limit"), "{m}"),
            _ => panic!("a sleeping worker past its limit must time out"),
        }
    }

    #[test]
    fn calibration_grows_boundedly() {
        assert_eq!(next_iterations(1, 0, 100), 100);
        assert_eq!(next_iterations(10, 1_000, 100_000_000), 1000);
        assert_eq!(next_iterations(100, 90, 100), 200);
        assert!(next_iterations(MAX_ITERATIONS, 1, 100) <= MAX_ITERATIONS);
    }

    #[test]
    fn calibrate_stops_at_the_target_the_cap_or_a_failure() {
        // 10 ns an iteration, 1000 ns wanted: 1 -> 100 (grown at most 100x: 1000 ns, reached).
        let mut counts = Vec::new();
        let n = calibrate::<()>(1000, 1 << 20, |n| {
            counts.push(n);
            Ok(Some(10 * n))
        });
        assert_eq!((n, counts), (Ok(Some(100)), vec![1, 100]));
        // Never long enough: the cap ends it, at the cap.
        let n = calibrate::<()>(u64::MAX, 50, |n| Ok(Some(n)));
        assert_eq!(n, Ok(Some(50)));
        // A failed trial: no count; an error: the error.
        assert_eq!(calibrate::<()>(1000, 50, |_| Ok(None)), Ok(None));
        assert_eq!(calibrate(1000, 50, |_| Err("stop")), Err("stop"));
    }

    fn trial(kind: TrialKind, iterations: u64, wall_ns: u64) -> Trial {
        Trial {
            kind,
            iterations,
            wall_ns,
            usage: Usage {
                user_ns: wall_ns / 4,
                sys_ns: wall_ns / 2,
                minflt: iterations,
                majflt: 0,
                nvcsw: 2 * iterations,
                nivcsw: 0,
            },
            children: None,
            worker_total: Usage::default(),
            worker_rss_bytes: 4096,
            worker_maps: 10,
            migrations: Some(0),
            cpu_start: Some(1),
            cpu_end: Some(1),
            outlier: Outlier::None,
            error: None,
            counters: None,
            round: None,
            started_ns: None,
        }
    }

    #[test]
    fn summary_uses_measured_trials_only_and_subtracts_overhead() {
        let spec = crate::bench::find("syscall").unwrap();
        let mut t = vec![
            trial(TrialKind::Calibration, 10, 999_999),
            trial(TrialKind::Warmup, 1000, 500_000),
            trial(TrialKind::Measured, 1000, 100_000),
            trial(TrialKind::Measured, 1000, 100_000),
            trial(TrialKind::Measured, 1000, 100_000),
        ];
        let mut failed = trial(TrialKind::Measured, 1000, 0);
        failed.error = Some("boom".into());
        t.push(failed);
        let o = Overhead {
            timer_ns: 0.0,
            loop_ns_per_iteration: 10.0,
        };
        let s = summarize(spec.ops_per_iteration, &mut t, Some(&o)).unwrap();
        assert_eq!(s.wall_ns_per_op.n, 3);
        assert!((s.wall_ns_per_op.median - 90.0).abs() < 1e-9);
        assert!((s.csw_per_op - 2.0).abs() < 1e-9);
        assert!((s.minflt_per_op - 1.0).abs() < 1e-9);
        let s0 = summarize(spec.ops_per_iteration, &mut t, None).unwrap();
        assert!((s0.wall_ns_per_op.median - 100.0).abs() < 1e-9);
    }

    #[test]
    fn counter_summary_takes_proc_figures_from_measured_and_perf_from_any_trial() {
        let spec = crate::bench::find("pipeback4").unwrap();
        let observed = |kind, csw: Option<u64>, intr: u64| {
            let mut t = trial(kind, 1000, 100_000);
            t.counters = Some(Counters {
                context_switches: csw,
                task_clock_ns: csw.map(|_| 90_000),
                interrupts: intr,
                interrupts_on_trial_cpus: Some(intr / 2),
                disk_reads: 1,
                ..Counters::default()
            });
            t
        };
        // Perf counters on the warm-up only, /proc deltas everywhere (the default design).
        let mut t = vec![
            observed(TrialKind::Calibration, Some(5), 1000),
            observed(TrialKind::Warmup, Some(2000), 1000),
            observed(TrialKind::Measured, None, 10),
            observed(TrialKind::Measured, None, 30),
            observed(TrialKind::Measured, None, 20),
        ];
        let c = summarize(spec.ops_per_iteration, &mut t, None)
            .unwrap()
            .counters
            .unwrap();
        assert_eq!((c.trials, c.perf_trials), (3, 1));
        assert_eq!(c.context_switches_per_op, Some(2.0));
        assert_eq!(c.task_clock_ns_per_op, Some(90.0));
        assert_eq!(c.cycles_per_op, None);
        assert_eq!(c.interrupts_per_trial, 20.0);
        assert_eq!(c.interrupts_on_trial_cpus_per_trial, Some(10.0));
        assert_eq!(c.disk_ios_per_trial, 1.0);
        // --quick: perf counters on the measured trials; their median.
        let mut q = vec![
            observed(TrialKind::Measured, Some(2000), 10),
            observed(TrialKind::Measured, Some(2100), 10),
            observed(TrialKind::Measured, Some(1900), 10),
        ];
        let c = summarize(spec.ops_per_iteration, &mut q, None)
            .unwrap()
            .counters
            .unwrap();
        assert_eq!(
            (c.trials, c.perf_trials, c.context_switches_per_op),
            (3, 3, Some(2.0))
        );
        // Unobserved runs have no counter summary.
        let mut plain = vec![trial(TrialKind::Measured, 1000, 100_000)];
        assert!(summarize(spec.ops_per_iteration, &mut plain, None)
            .unwrap()
            .counters
            .is_none());
    }

    #[test]
    fn no_successful_trial_means_no_summary() {
        let spec = crate::bench::find("syscall").unwrap();
        let mut t = vec![trial(TrialKind::Calibration, 10, 5)];
        assert!(summarize(spec.ops_per_iteration, &mut t, None).is_none());
    }
}
