//! The harness owns time: it starts one worker process per trial, calibrates the iteration
//! count to `--min-time`, runs a warm-up and the counted trials, kills a trial that hangs,
//! subtracts the measured timer and loop overhead, summarizes with `stats`, and flags noise.
//!
//! It does not print and does not store: progress goes to a callback, results are returned.

pub mod cpustat;
pub mod placement;
pub mod worker;

use crate::bench::Spec;
use crate::model::{BenchResult, Outlier, Overhead, Summary, Trial, TrialKind, Usage, Warning};
use crate::stats;
use crate::sys;
use placement::{CpuChoice, Mode, Plan};

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use worker::{Report, Request};

/// A coefficient of variation above this earns a noise warning.
pub const CV_WARN: f64 = 0.05;
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
}

/// What the harness reports while it works.
#[derive(Debug, Clone)]
pub enum Event<'a> {
    /// A benchmark starts; `index` counts from 0.
    Benchmark {
        spec: &'a Spec,
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
    Done(Report, Usage),
    Failed(String, Usage),
    Interrupted,
}

/// Starts a worker for `req` and waits for it, killing its whole process group on timeout or
/// interruption. Nothing it started survives this function.
fn run_worker(exe: &PathBuf, req: &Request, timeout: Duration, stop: &AtomicBool) -> Outcome {
    let json = match serde_json::to_string(req) {
        Ok(j) => j,
        Err(e) => return Outcome::Failed(format!("encoding the request: {e}"), Usage::default()),
    };
    let mut cmd = Command::new(exe);
    cmd.arg("__worker")
        .arg(json)
        .arg0(format!("sysperf:{}", req.id))
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Outcome::Failed(
                format!("starting worker {}: {e}", exe.display()),
                Usage::default(),
            )
        }
    };
    let pid = child.id() as sys::Pid;
    let pidfd = sys::pidfd_open(pid).ok();
    let deadline = Instant::now() + timeout;
    let mut verdict: Option<Outcome> = None;
    let (status, total) = loop {
        match sys::wait4(pid, true) {
            Ok((got, status, usage)) if got == pid => break (status, usage),
            Ok(_) => {}
            Err(e) => {
                verdict = Some(Outcome::Failed(
                    format!("waiting for the worker: {e}"),
                    Usage::default(),
                ));
                break (0, Usage::default());
            }
        }
        if stop.load(Ordering::Relaxed) {
            verdict = Some(Outcome::Interrupted);
        } else if Instant::now() >= deadline {
            verdict = Some(Outcome::Failed(
                format!("timed out after {:.1} s; killed with its process group (raise --timeout if this is expected)", timeout.as_secs_f64()),
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
        match &pidfd {
            Some(fd) => {
                let _ = sys::poll_readable(fd.as_raw_fd(), 100);
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    // Whatever the worker left in its group dies now; orphans came to us as subreaper, and
    // we wait for each of them so that nothing is still dying when this returns.
    let _ = sys::kill(-pid, libc::SIGKILL);
    sys::reap_group(pid);
    sys::reap_zombies();
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
            None => Outcome::Done(rep, total),
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

fn trial_from(kind: TrialKind, iterations: u64, outcome: &Outcome) -> Trial {
    let (rep, total, error) = match outcome {
        Outcome::Done(r, t) => (r.clone(), *t, None),
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
        worker_total: total,
        worker_rss_bytes: rep.rss_bytes,
        worker_maps: rep.maps,
        migrations: rep.migrations,
        cpu_start: rep.cpu_start,
        cpu_end: rep.cpu_end,
        outlier: Outlier::None,
        error,
    }
}

/// Measures the timer and loop overhead in a worker placed like single-process benchmarks.
pub fn measure_overhead(opts: &Options, stop: &AtomicBool) -> Result<Overhead, String> {
    let first = opts.cpus.cpus.first().copied();
    let iterations = 10_000_000;
    let req = Request {
        id: worker::OVERHEAD_ID.into(),
        iterations,
        pin: first.map(|c| vec![c]),
        child_cpu: None,
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

/// Measures one benchmark placed by `plan` (see [`placement::plan`]): calibration, warm-up,
/// counted trials, summary and warnings.
pub fn measure(
    spec: &'static Spec,
    plan: &Plan,
    opts: &Options,
    overhead: Option<&Overhead>,
    stop: &AtomicBool,
    progress: &dyn Fn(Event),
) -> Result<(BenchResult, Vec<Warning>), Stop> {
    let mut result = BenchResult {
        id: spec.id.to_string(),
        group: spec.group.as_str().to_string(),
        ops_per_iteration: spec.ops_per_iteration,
        paper_count: spec.paper_count,
        unit: spec.unit.to_string(),
        placement: plan.label.to_string(),
        cpus: plan.cpus.clone(),
        trials: Vec::new(),
        summary: None,
        error: None,
    };
    let mut warnings = Vec::new();
    let own0 = sys::usage_self_and_children();
    let stat0 = cpustat::read();
    let started = Instant::now();

    let one =
        |kind: TrialKind, iterations: u64, result: &mut BenchResult| -> Result<Option<u64>, Stop> {
            let req = Request {
                id: spec.id.to_string(),
                iterations,
                pin: plan.worker.clone(),
                child_cpu: plan.child,
            };
            let outcome = run_worker(&opts.worker_exe, &req, opts.timeout, stop);
            if let Outcome::Interrupted = outcome {
                return Err(Stop::Interrupted);
            }
            let t = trial_from(kind, iterations, &outcome);
            let wall = t.error.is_none().then_some(t.wall_ns);
            result.trials.push(t);
            progress(Event::Trial { kind });
            Ok(wall)
        };

    // Calibration: grow until one trial lasts at least --min-time.
    let target = opts.min_time.as_nanos().min(u64::MAX as u128) as u64;
    let mut n = 1u64;
    let iterations = loop {
        match one(TrialKind::Calibration, n, &mut result)? {
            None => {
                let why = result
                    .trials
                    .last()
                    .and_then(|t| t.error.clone())
                    .unwrap_or_default();
                result.error = Some(format!("calibration failed: {why}"));
                warnings.push(Warning {
                    bench: Some(spec.id.into()),
                    kind: "failed".into(),
                    message: format!("{}: {why}", spec.id),
                });
                return Ok((result, warnings));
            }
            Some(wall) if wall >= target || n >= MAX_ITERATIONS => break n,
            Some(wall) => n = next_iterations(n, wall, target),
        }
    };
    if opts.warmup {
        one(TrialKind::Warmup, iterations, &mut result)?;
    }
    for _ in 0..opts.trials {
        one(TrialKind::Measured, iterations, &mut result)?;
    }

    let failed: Vec<&Trial> = result
        .trials
        .iter()
        .filter(|t| t.kind == TrialKind::Measured && t.error.is_some())
        .collect();
    if let Some(t) = failed.first() {
        warnings.push(Warning {
            bench: Some(spec.id.into()),
            kind: "trial_failed".into(),
            message: format!(
                "{}: {} of {} trials failed ({})",
                spec.id,
                failed.len(),
                opts.trials,
                t.error.clone().unwrap_or_default()
            ),
        });
    }
    match summarize(spec, &mut result.trials, overhead) {
        Some(summary) => {
            let cv = summary.wall_ns_per_op.cv;
            if cv > CV_WARN {
                warnings.push(Warning {
                    bench: Some(spec.id.into()),
                    kind: "high_cv".into(),
                    message: format!("{}: trials vary by {:.1}% (CV above {:.0}%); rerun with more --trials or on a quieter machine", spec.id, cv * 100.0, CV_WARN * 100.0),
                });
            }
            result.summary = Some(summary);
        }
        None => {
            result.error = Some("no trial succeeded".into());
        }
    }

    // Other work on our CPUs: their busy time minus what sysperf's processes used.
    let wall = started.elapsed().as_secs_f64();
    let stat1 = cpustat::read();
    let own1 = sys::usage_self_and_children();
    let watched: Vec<u32> = if plan.label == "free" && plan.worker.is_none() {
        Vec::new()
    } else {
        plan.cpus.clone()
    };
    let d = cpustat::delta(&stat0, &stat1, &watched);
    let tick_s = 1.0 / sys::clock_ticks() as f64;
    let ours = own1.since(&own0).cpu_ns() as f64 / 1e9;
    let other = (d.busy as f64 * tick_s - ours).max(0.0);
    let ncpu = if watched.is_empty() {
        stat1.len().max(1)
    } else {
        watched.len()
    } as f64;
    // /proc/stat counts in clock ticks (10 ms here): a window shorter than half a second
    // cannot tell a few percent of other work from rounding, so it is not judged.
    let judged = wall >= 0.5;
    if judged && other / (wall * ncpu) > BUSY_WARN {
        warnings.push(Warning {
            bench: Some(spec.id.into()),
            kind: "busy_cpu".into(),
            message: format!(
                "{}: other work used {:.0}% of CPU {} while it ran; results may be inflated (see what else runs with top)",
                spec.id,
                100.0 * other / (wall * ncpu),
                if watched.is_empty() { "all".to_string() } else { placement::format_list(&watched) }
            ),
        });
    }
    if judged && d.steal as f64 * tick_s / (wall * ncpu) > 0.02 {
        warnings.push(Warning {
            bench: Some(spec.id.into()),
            kind: "steal".into(),
            message: format!(
                "{}: the hypervisor took {:.0}% of the CPU (steal time) while it ran",
                spec.id,
                100.0 * d.steal as f64 * tick_s / (wall * ncpu)
            ),
        });
    }
    Ok((result, warnings))
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
    exe: &PathBuf,
    spec: &Spec,
    plan: &Plan,
    iterations: u64,
    timeout: Duration,
    stop: &AtomicBool,
) -> Result<Report, TrialError> {
    let req = Request {
        id: spec.id.to_string(),
        iterations,
        pin: plan.worker.clone(),
        child_cpu: plan.child,
    };
    match run_worker(exe, &req, timeout, stop) {
        Outcome::Done(r, _) => Ok(r),
        Outcome::Failed(e, _) => Err(TrialError::Failed(e)),
        Outcome::Interrupted => Err(TrialError::Interrupted),
    }
}

/// Per-operation summary of the measured, successful trials; labels their outliers.
pub fn summarize(
    spec: &Spec,
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
    let ops = |t: &Trial| (t.iterations * spec.ops_per_iteration) as f64;
    let per_op = |f: &dyn Fn(&Trial) -> f64| -> Vec<f64> {
        idx.iter()
            .map(|&i| f(&trials[i]) / ops(&trials[i]))
            .collect()
    };
    let wall = per_op(&|t| adjusted_wall_ns(t, overhead));
    let user = per_op(&|t| t.usage.user_ns as f64);
    let sys_ = per_op(&|t| t.usage.sys_ns as f64);
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
        minflt_per_op: med(per_op(&|t| t.usage.minflt as f64)),
        majflt_per_op: med(per_op(&|t| t.usage.majflt as f64)),
        csw_per_op: med(per_op(&|t| (t.usage.nvcsw + t.usage.nivcsw) as f64)),
        nvcsw_per_op: med(per_op(&|t| t.usage.nvcsw as f64)),
        nivcsw_per_op: med(per_op(&|t| t.usage.nivcsw as f64)),
        migrations_per_op: migrations.map(med),
        worker_rss_bytes: first.worker_rss_bytes,
        worker_maps: first.worker_maps,
    };
    for (&i, l) in idx.iter().zip(labels) {
        trials[i].outlier = l;
    }
    Some(summary)
}

/// Wall time of a trial less the timer overhead (once) and the loop overhead (per iteration);
/// never below zero.
pub fn adjusted_wall_ns(t: &Trial, overhead: Option<&Overhead>) -> f64 {
    let o = overhead
        .map(|o| o.timer_ns + o.loop_ns_per_iteration * t.iterations as f64)
        .unwrap_or(0.0);
    (t.wall_ns as f64 - o).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibration_grows_boundedly() {
        assert_eq!(next_iterations(1, 0, 100), 100);
        assert_eq!(next_iterations(10, 1_000, 100_000_000), 1000);
        assert_eq!(next_iterations(100, 90, 100), 200);
        assert!(next_iterations(MAX_ITERATIONS, 1, 100) <= MAX_ITERATIONS);
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
            worker_total: Usage::default(),
            worker_rss_bytes: 4096,
            worker_maps: 10,
            migrations: Some(0),
            cpu_start: Some(1),
            cpu_end: Some(1),
            outlier: Outlier::None,
            error: None,
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
        let s = summarize(spec, &mut t, Some(&o)).unwrap();
        assert_eq!(s.wall_ns_per_op.n, 3);
        assert!((s.wall_ns_per_op.median - 90.0).abs() < 1e-9);
        assert!((s.csw_per_op - 2.0).abs() < 1e-9);
        assert!((s.minflt_per_op - 1.0).abs() < 1e-9);
        let s0 = summarize(spec, &mut t, None).unwrap();
        assert!((s0.wall_ns_per_op.median - 100.0).abs() < 1e-9);
    }

    #[test]
    fn no_successful_trial_means_no_summary() {
        let spec = crate::bench::find("syscall").unwrap();
        let mut t = vec![trial(TrialKind::Calibration, 10, 5)];
        assert!(summarize(spec, &mut t, None).is_none());
    }
}
