//! The run engine: carries out a [`RunPlan`] from the fingerprint to the stored run. It
//! measures the timer overhead, checks the suites can run here, calibrates every target and
//! runs its warm-up, then runs the counted trials in rounds (one trial of every target per
//! round, in an order shuffled per round from the plan's seed, so that each benchmark's
//! trials sample the whole run and not one second of it), summarizes, profiles, derives and
//! stores. Progress goes to a [`Sink`] as typed [`Event`]s: the CLI's progress bar and the
//! tests are sinks. Ctrl-C (the stop flag), timeouts and incomplete runs are handled here.
//!
//! It is not the harness (which runs one worker per trial and owns the clock), nor the
//! command line (which parses arguments and prints): `sysperf run`, `run --suite`, `profile`
//! and `trace` all take their plan and budget from this module.

pub mod ab;
mod outcome;
pub mod plan;
pub mod switch;
pub mod tidy;

pub use crate::harness::budget::Budget;
pub use outcome::{exit_code, left_out};
pub use plan::{Origin, Planned, RunPlan, RunRequest};
pub use tidy::tidy;

use crate::harness::placement::{Mode, Plan};
use crate::harness::{self, Measurement, Stop};
use crate::model::{BenchResult, Fingerprint, Run, Series, TrialKind, Warning, WarningKind};
use crate::observe::doctor;
use crate::profile::{self, Profile, ProfileError};
use crate::store::{Backend, StoreError};
use crate::{derived, fingerprint, suite, sys};
use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What the engine reports while it works, in this order: `RunStarted`, `Phase`s with
/// `TargetStarted` and `TrialFinished` (calibration and warm-up of each target, then the
/// rounds), `Warning`s, `BenchmarkDone` for each target, `RunFinished`.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    RunStarted {
        run_id: &'a str,
        targets: usize,
        /// Warm-up and counted trials the plan will run (calibration trials come on top).
        planned_trials: u64,
        /// Targets whose count is calibrated (each takes a few calibration trials).
        calibrated: usize,
    },
    /// A stage of the run: "overhead", "calibration", "round 2 of 5", "profiling pipeback4".
    Phase {
        what: &'a str,
    },
    /// A target's calibration and warm-up start; `index` counts from 0.
    TargetStarted {
        id: &'a str,
        index: usize,
        total: usize,
    },
    /// One worker finished (calibration, warm-up or counted trial).
    TrialFinished {
        kind: TrialKind,
    },
    Warning {
        warning: &'a Warning,
    },
    BenchmarkDone {
        result: &'a BenchResult,
    },
    RunFinished {
        run_id: &'a str,
        interrupted: bool,
    },
}

/// Where events go.
pub trait Sink {
    fn event(&mut self, event: Event<'_>);
}

/// A sink that drops every event.
pub struct Quiet;

impl Sink for Quiet {
    fn event(&mut self, _: Event<'_>) {}
}

/// Why a run could not be carried out (a stopped or failing benchmark is not such a reason:
/// it is recorded in the run).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("{what}")]
    Store {
        what: String,
        #[source]
        source: StoreError,
    },
    #[error(transparent)]
    Profile(#[from] ProfileError),
    #[error("{what}: {source}")]
    Io {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// The temporary directory is one someone else controls (a user error).
    #[error("checking where scratch files go")]
    Unsafe(#[source] crate::safedir::Unsafe),
}

impl crate::error::Exit for EngineError {
    fn exit_code(&self) -> i32 {
        match self {
            EngineError::Store { source, .. } => source.exit_code(),
            EngineError::Profile(e) => e.exit_code(),
            EngineError::Io { .. } => crate::exit::FAILURE,
            EngineError::Unsafe(e) => crate::error::Exit::exit_code(e),
        }
    }
}

fn stored<T>(r: Result<T, StoreError>, what: impl FnOnce() -> String) -> Result<T, EngineError> {
    r.map_err(|source| EngineError::Store {
        what: what(),
        source,
    })
}

/// What a run gave.
#[derive(Debug)]
pub struct RunOutcome {
    pub run: Run,
    pub profiles: Vec<Profile>,
    pub interrupted: bool,
    /// The machine's variance estimates once this run is stored (empty when interrupted or
    /// fewer than three runs of a test are known).
    pub variance: Vec<crate::model::VarianceEstimate>,
}

/// Carries out plans.
pub struct Engine<'a> {
    /// The sysperf executable that workers are started from.
    pub worker_exe: PathBuf,
    /// Raised by Ctrl-C and termination; checked between trials and inside each wait.
    pub stop: &'a AtomicBool,
}

/// A flag that SIGINT, SIGTERM and SIGHUP raise, for commands that run workers: they check it,
/// kill their worker's process group and clean up, instead of dying with things left behind.
/// Also makes this process the reaper of any orphaned descendants.
pub fn stop_flag() -> Result<Arc<AtomicBool>, EngineError> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        let io = |source| EngineError::Io {
            what: "installing the signal handler",
            source,
        };
        signal_hook::flag::register(sig, Arc::clone(&stop)).map_err(io)?;
        signal_hook::flag::register_usize(sig, Arc::clone(stopped_by()), sig as usize)
            .map_err(io)?;
    }
    // From here the flag stops the command; the early exit (sys::exit_on_signals) stands down.
    sys::SIGNALS_HANDLED.store(true, Ordering::SeqCst);
    sys::set_child_subreaper();
    Ok(stop)
}

/// The signal that raised the stop flag last (0: none yet).
fn stopped_by() -> &'static Arc<std::sync::atomic::AtomicUsize> {
    static SIG: std::sync::OnceLock<Arc<std::sync::atomic::AtomicUsize>> =
        std::sync::OnceLock::new();
    SIG.get_or_init(|| Arc::new(std::sync::atomic::AtomicUsize::new(0)))
}

/// The exit code of a command that its stop flag ended: 128 + the signal, as a shell reports
/// a death by that signal (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP); 130 when no
/// signal was seen.
pub fn interrupted_code() -> i32 {
    match stopped_by().load(Ordering::Relaxed) {
        0 => crate::exit::INTERRUPTED,
        sig => 128 + sig as i32,
    }
}

/// A fresh seed for the order of the trials (the run stores it, so the order can be replayed).
pub fn fresh_seed() -> Result<u64, EngineError> {
    let mut b = [0u8; 8];
    sys::random_bytes(&mut b).map_err(|source| EngineError::Io {
        what: "reading random bytes for the seed",
        source,
    })?;
    Ok(u64::from_le_bytes(b))
}

/// 12 random hex digits: unique enough to merge runs from a fleet of machines.
pub fn new_run_id() -> Result<String, EngineError> {
    let mut b = [0u8; 6];
    sys::random_bytes(&mut b).map_err(|source| EngineError::Io {
        what: "reading random bytes for the run id",
        source,
    })?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

pub fn now_ns() -> i64 {
    harness::unix_ns()
}

/// A measured run of `plan`, begun now, with nothing in it yet.
fn new_run(
    plan: &RunPlan,
    fingerprint: Fingerprint,
    findings: Vec<crate::model::Finding>,
) -> Result<Run, EngineError> {
    Ok(Run {
        id: new_run_id()?,
        label: plan.label.clone(),
        started_ns: now_ns(),
        ended_ns: None,
        complete: false,
        sysperf_version: crate::VERSION.to_string(),
        source: "measured".into(),
        citation: None,
        params: plan.params.clone(),
        fingerprint,
        findings,
        overhead: None,
        results: Vec::new(),
        derived: Vec::new(),
        warnings: Vec::new(),
        series: Vec::new(),
        notes: Vec::new(),
    })
}

/// The seed of round `round`: each round shuffles with its own stream of the run's seed.
fn round_seed(seed: u64, round: u32) -> u64 {
    seed ^ u64::from(round).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// The counted trials' order: `(round, target index)` pairs. Interleaved, every round holds
/// one trial of each target in an order shuffled from the seed; sequential, each target's
/// trials come back to back (round = trial number).
pub fn trial_order(targets: usize, rounds: u32, seed: u64, interleave: bool) -> Vec<(u32, usize)> {
    let mut order = Vec::with_capacity(targets * rounds as usize);
    if interleave {
        for r in 0..rounds {
            let mut idx: Vec<usize> = (0..targets).collect();
            crate::stats::shuffle(&mut idx, round_seed(seed, r));
            order.extend(idx.into_iter().map(|i| (r, i)));
        }
    } else {
        for i in 0..targets {
            order.extend((0..rounds).map(|r| (r, i)));
        }
    }
    order
}

impl Engine<'_> {
    /// Measures `plan` into a new run in `store`: begun (marked incomplete) before the first
    /// trial, finished with everything measured, complete unless stopped.
    pub fn execute(
        &self,
        plan: &RunPlan,
        store: &dyn Backend,
        sink: &mut dyn Sink,
    ) -> Result<RunOutcome, EngineError> {
        // Benchmarks make scratch files there: refused now, before anything is measured,
        // rather than benchmark by benchmark.
        crate::safedir::check_temp_dir().map_err(EngineError::Unsafe)?;
        let began = std::time::Instant::now();
        // `--settle`: the machine's state before the first trial, made as alike as it can be
        // between the runs that will be compared (and before the doctor looks at it).
        let settled = plan.params.settle_s.map(|s| {
            sink.event(Event::Phase { what: "settling" });
            crate::observe::settle::settle(Duration::from_secs_f64(s), self.stop)
        });
        // Profiling needs permissions and kernel symbols: found out before measuring anything.
        // Refused, it is left out like every part of a run this process may not do (the one
        // rule, README "Privileges"): named in a warning, the rest measured, the run partial.
        let mut refused = Vec::new();
        let access = match plan.profile_seconds {
            Some(_) => match profile::check_access() {
                Ok(a) => Some(a),
                Err(e) => {
                    refused.push(Warning {
                        bench: None,
                        kind: WarningKind::Profile,
                        message: format!("--profile: no profiles made: {e}"),
                    });
                    None
                }
            },
            None => None,
        };
        // The machine, and what the doctor finds (a 0.2 s look at the CPUs and the settings
        // that make results noisy or not comparable).
        let fingerprint: Fingerprint = fingerprint::collect();
        let findings = doctor::diagnose(&doctor::gather(fingerprint.clone(), doctor::SAMPLE));
        let mut run = new_run(plan, fingerprint, findings)?;
        run.warnings = refused;
        match &settled {
            Some(s) if s.quiet => run.notes.push(s.describe()),
            Some(s) => run.warnings.push(Warning {
                bench: None,
                kind: WarningKind::NotSettled,
                message: s.describe(),
            }),
            None => {}
        }
        stored(store.begin_run(&run), || {
            "recording the run in the store".into()
        })?;
        sink.event(Event::RunStarted {
            run_id: &run.id,
            targets: plan.targets.len(),
            planned_trials: plan.planned_trials(),
            calibrated: plan.calibrated_targets(),
        });

        let opts = plan.budget.options(
            self.worker_exe.clone(),
            plan.mode,
            plan.cpus.clone(),
            plan.observe,
        );
        sink.event(Event::Phase { what: "overhead" });
        match harness::measure_overhead(&opts, self.stop) {
            Ok(o) => run.overhead = Some(o),
            Err(e) => run.warnings.push(Warning {
                bench: None,
                kind: WarningKind::Overhead,
                message: format!("overhead not measured ({e}); nothing subtracted"),
            }),
        }

        // Suites that cannot run here are skipped (with a warning) before anything is measured.
        let mut runnable = vec![true; plan.suites.len()];
        for (i, s) in plan.suites.iter().enumerate() {
            match (s.preflight)() {
                Ok(notes) => run
                    .notes
                    .extend(notes.into_iter().map(|n| format!("{}: {n}", s.name))),
                Err(why) => {
                    runnable[i] = false;
                    run.warnings.push(Warning {
                        bench: None,
                        kind: WarningKind::SuiteSkipped,
                        message: format!("suite {} skipped: {why}", s.name),
                    });
                }
            }
        }
        let chosen: Vec<&Planned> = plan
            .targets
            .iter()
            .filter(|p| match p.origin {
                Origin::Point { suite, .. } => runnable[suite],
                Origin::Bench(_) => true,
            })
            .collect();

        let sink = RefCell::new(sink);
        let progress = |e: harness::Event| {
            if let harness::Event::Trial { kind } = e {
                sink.borrow_mut().event(Event::TrialFinished { kind });
            }
        };
        let mut interrupted = false;
        let mut ms: Vec<Measurement> = chosen
            .iter()
            .map(|p| Measurement::new(&p.target, &p.placement, &opts))
            .collect();

        // Calibration and warm-up, target by target.
        sink.borrow_mut().event(Event::Phase {
            what: "calibration",
        });
        let total = ms.len();
        for (index, m) in ms.iter_mut().enumerate() {
            sink.borrow_mut().event(Event::TargetStarted {
                id: m.id(),
                index,
                total,
            });
            if m.prepare(self.stop, &progress).is_err() || self.stop.load(Ordering::Relaxed) {
                interrupted = true;
                break;
            }
        }

        // The counted trials, in rounds. After each round (or each benchmark, in sequential
        // order) the benchmarks' results so far are stored, so that a run killed midway keeps
        // what it finished; each is stored at its place among the run's results.
        let positions: Vec<Option<usize>> = {
            let mut next = 0;
            chosen
                .iter()
                .map(|p| match p.origin {
                    Origin::Bench(_) => {
                        next += 1;
                        Some(next - 1)
                    }
                    Origin::Point { .. } => None,
                })
                .collect()
        };
        let snapshot = |ms: &[Measurement], which: &mut dyn Iterator<Item = usize>| {
            for i in which {
                if let (Some(pos), true) = (positions[i], ms[i].settled()) {
                    let (result, _) = ms[i].finish(run.overhead.as_ref());
                    stored(store.put_result(&run.id, pos, &result), || {
                        format!("storing {}", result.id)
                    })?;
                }
            }
            Ok::<(), EngineError>(())
        };
        if !interrupted {
            let order = trial_order(ms.len(), plan.budget.trials, plan.seed, plan.interleave);
            let mut prev: Option<(u32, usize)> = None;
            for (r, i) in order {
                let new_round = prev.map(|p| p.0) != Some(r);
                if let Some((_, before)) = prev {
                    if plan.interleave && new_round {
                        snapshot(&ms, &mut (0..ms.len()))?;
                    } else if !plan.interleave && before != i {
                        snapshot(&ms, &mut std::iter::once(before))?;
                    }
                }
                if plan.interleave && new_round {
                    let what = format!("round {} of {}", r + 1, plan.budget.trials);
                    sink.borrow_mut().event(Event::Phase { what: &what });
                }
                prev = Some((r, i));
                if ms[i].trial(r, self.stop, &progress).is_err()
                    || self.stop.load(Ordering::Relaxed)
                {
                    interrupted = true;
                    break;
                }
            }
        }

        // --precision: more rounds, of the targets whose interval is still too wide, until
        // none is or --max-time has passed since the run began.
        if let (false, Some(pct)) = (interrupted, plan.precision_pct) {
            snapshot(&ms, &mut (0..ms.len()))?;
            let mut r = plan.budget.trials;
            loop {
                let mut active: Vec<usize> = (0..ms.len())
                    .filter(|&i| ms[i].ready() && !precise(&ms[i], pct))
                    .collect();
                if active.is_empty() || began.elapsed() >= plan.max_time {
                    break;
                }
                if plan.interleave {
                    crate::stats::shuffle(&mut active, round_seed(plan.seed, r));
                }
                let what = format!("round {} ({} above +-{pct}%)", r + 1, active.len());
                sink.borrow_mut().event(Event::Phase { what: &what });
                for &i in &active {
                    if ms[i].trial(r, self.stop, &progress).is_err()
                        || self.stop.load(Ordering::Relaxed)
                    {
                        interrupted = true;
                        break;
                    }
                }
                snapshot(&ms, &mut active.iter().copied())?;
                if interrupted {
                    break;
                }
                r += 1;
            }
            for m in ms.iter().filter(|m| m.ready() && !precise(m, pct)) {
                let hw = half_width_pct(m)
                    .map(|h| format!("+-{h:.1}%"))
                    .unwrap_or_else(|| "no 95% interval yet".into());
                run.warnings.push(Warning {
                    bench: Some(m.id().to_string()),
                    kind: WarningKind::Imprecise,
                    message: format!(
                        "{}: {hw} after {} trials, not the +-{pct}% asked for{}",
                        m.id(),
                        m.measured_trials(),
                        if interrupted {
                            " (interrupted)"
                        } else {
                            " before --max-time ran out"
                        }
                    ),
                });
            }
        }

        // Summaries, in plan order; then profiles, series and derived figures.
        let sink = sink.into_inner();
        let mut points: Vec<(usize, SeriesOf, BenchResult)> = Vec::new();
        let mut profiles = Vec::new();
        for (i, (p, m)) in chosen.iter().zip(&ms).enumerate() {
            // A target the stop came before (in its calibration, or before its first counted
            // trial) has nothing to show and is not stored; one that failed is.
            if interrupted && !m.settled() {
                continue;
            }
            let (result, warnings) = m.finish(run.overhead.as_ref());
            for w in &warnings {
                sink.event(Event::Warning { warning: w });
            }
            sink.event(Event::BenchmarkDone { result: &result });
            match &p.origin {
                Origin::Bench(spec) => {
                    if let Some(pos) = positions[i] {
                        stored(store.put_result(&run.id, pos, &result), || {
                            format!("storing {}", spec.id)
                        })?;
                    }
                    run.warnings.extend(warnings);
                    run.results.push(result.clone());
                }
                Origin::Point {
                    suite,
                    series,
                    point,
                } => {
                    run.warnings.extend(warnings);
                    points.push((*suite, SeriesOf::new(series, point), result.clone()));
                }
            }
            // `--profile`: a profiled trial of every target, core benchmark or suite point
            // alike, stored with the run; one that cannot be profiled says why in a warning.
            if let (Some(access), Some(seconds), false) =
                (&access, plan.profile_seconds, interrupted)
            {
                let id = &p.target.id;
                let what = format!("profiling {id}");
                sink.event(Event::Phase { what: &what });
                match self.profile_one(&p.target, &p.placement, &result, seconds, plan, access) {
                    Ok(Some(prof)) => {
                        stored(store.add_profile(&run.id, &prof), || {
                            format!("storing the profile of {id}")
                        })?;
                        profiles.push(prof);
                    }
                    Ok(None) => run.warnings.push(Warning {
                        bench: Some(id.clone()),
                        kind: WarningKind::Profile,
                        message: format!(
                            "{id}: not profiled: no trial succeeded, so there is no iteration count to profile at"
                        ),
                    }),
                    Err(ProfileError::Interrupted) => interrupted = true,
                    Err(e) => run.warnings.push(Warning {
                        bench: Some(id.clone()),
                        kind: WarningKind::Profile,
                        message: e.to_string(),
                    }),
                }
            }
        }
        // Each series from its measured points, in plan order; each suite's derived figures.
        let mut by_suite: Vec<Vec<Series>> = vec![Vec::new(); plan.suites.len()];
        let mut i = 0;
        while i < points.len() {
            let (s, head, _) = &points[i];
            let (s, spec) = (*s, head.series);
            let mut measured = Vec::new();
            while i < points.len() && std::ptr::eq(points[i].1.series, spec) {
                measured.push((points[i].1.point.clone(), points[i].2.clone()));
                i += 1;
            }
            let series = suite::series_from(spec, measured, run.overhead.as_ref());
            stored(store.add_series(&run.id, &series), || {
                format!("storing the series {}", spec.id)
            })?;
            by_suite[s].push(series);
        }
        let mut from_suites = Vec::new();
        for (s, series) in plan.suites.iter().zip(by_suite) {
            if !series.is_empty() {
                from_suites.extend((s.derive)(&series));
            }
            run.series.extend(series);
        }

        // Derive, finish the record.
        if let Some(e) = run
            .results
            .iter()
            .flat_map(|r| &r.trials)
            .find_map(|t| t.counters.as_ref().and_then(|c| c.perf_error.clone()))
        {
            run.warnings.push(Warning {
                bench: None,
                kind: WarningKind::Observe,
                message: format!("--observe: no perf counters, only system-wide /proc deltas: {e}"),
            });
        }
        run.derived = derived::compute(&run.results);
        run.derived.extend(from_suites);
        run.ended_ns = Some(now_ns());
        run.complete = !interrupted;
        if interrupted {
            let benches = plan
                .targets
                .iter()
                .filter(|p| matches!(p.origin, Origin::Bench(_)))
                .count();
            run.warnings.push(Warning {
                bench: None,
                kind: WarningKind::Interrupted,
                message: format!(
                    "interrupted after {} of {} benchmarks; the finished ones are stored",
                    run.results.len(),
                    benches
                ),
            });
        }
        stored(store.finish_run(&run), || {
            "finishing the run in the store".into()
        })?;
        // The machine's variance now includes this run. Derived and rebuilt by every run, so a
        // failure costs a warning, not the run.
        let mut variance = Vec::new();
        if !interrupted {
            match crate::catalog::record_variance(store, &run) {
                Ok(v) => variance = v,
                Err(e) => sink.event(Event::Warning {
                    warning: &Warning {
                        bench: None,
                        kind: WarningKind::Other("variance".into()),
                        message: format!("could not update this machine's variance estimates: {e}"),
                    },
                }),
            }
        }
        sink.event(Event::RunFinished {
            run_id: &run.id,
            interrupted,
        });
        Ok(RunOutcome {
            run,
            profiles,
            interrupted,
            variance,
        })
    }

    /// `run --repeat N`: the plan's runs one after the other, each stored as a replicate of
    /// one group (a fresh group id, the same label; without one, the label `repeat-GROUP`,
    /// which `compare` takes as the group), each with its own stream of the seed. Stops after
    /// an interrupted run.
    pub fn execute_repeated(
        &self,
        plan: &RunPlan,
        store: &dyn Backend,
        sink: &mut dyn Sink,
    ) -> Result<Vec<RunOutcome>, EngineError> {
        if plan.repeat <= 1 {
            return Ok(vec![self.execute(plan, store, sink)?]);
        }
        let group = new_run_id()?;
        let mut out = Vec::new();
        for k in 0..plan.repeat {
            let mut p = plan.clone();
            p.seed = plan.seed.wrapping_add(u64::from(k));
            p.label = Some(
                plan.label
                    .clone()
                    .unwrap_or_else(|| format!("repeat-{group}")),
            );
            p.params.seed = Some(p.seed);
            p.params.group = Some(group.clone());
            p.params.replicate = Some(k);
            let what = format!("run {} of {}", k + 1, plan.repeat);
            sink.event(Event::Phase { what: &what });
            let outcome = self.execute(&p, store, sink)?;
            let stop = outcome.interrupted;
            out.push(outcome);
            if stop {
                break;
            }
        }
        Ok(out)
    }

    /// One profiled trial of `target`, scaled from its measured trials to `seconds`.
    fn profile_one(
        &self,
        target: &harness::Target,
        placement: &Plan,
        result: &BenchResult,
        seconds: f64,
        plan: &RunPlan,
        access: &profile::Access,
    ) -> Result<Option<Profile>, ProfileError> {
        let Some((n, wall)) = calibrated(result) else {
            return Ok(None);
        };
        let long = plan.budget.stretched(seconds).options(
            self.worker_exe.clone(),
            plan.mode,
            plan.cpus.clone(),
            false,
        );
        let iterations = profile::iterations_for(seconds, n, wall);
        profile::profile_benchmark(target, placement, &long, iterations, access, self.stop)
            .map(Some)
    }

    /// `sysperf profile`: each benchmark calibrated with [`Budget::profile_calibration`], then
    /// profiled for about `seconds`. Nothing is stored.
    pub fn profile(
        &self,
        specs: &[(harness::Target, Plan)],
        mode: Mode,
        cpus: &harness::placement::CpuChoice,
        budget: Budget,
        seconds: f64,
        sink: &mut dyn Sink,
    ) -> Result<Vec<Profile>, ProfileError> {
        let access = profile::check_access()?;
        let calibrate = budget.options(self.worker_exe.clone(), mode, cpus.clone(), false);
        let long =
            budget
                .stretched(seconds)
                .options(self.worker_exe.clone(), mode, cpus.clone(), false);
        let mut profiles = Vec::new();
        for (index, (target, placement)) in specs.iter().enumerate() {
            sink.event(Event::TargetStarted {
                id: &target.id,
                index,
                total: specs.len(),
            });
            let (result, _) =
                match harness::measure(target, placement, &calibrate, None, self.stop, &|_| {}) {
                    Ok(r) => r,
                    Err(Stop::Interrupted) => return Err(ProfileError::Interrupted),
                };
            let Some((n, wall)) = calibrated(&result) else {
                return Err(ProfileError::Calibration {
                    bench: target.id.clone(),
                    why: result.error.unwrap_or_else(|| "no trial succeeded".into()),
                });
            };
            let iterations = profile::iterations_for(seconds, n, wall);
            profiles.push(profile::profile_benchmark(
                target, placement, &long, iterations, &access, self.stop,
            )?);
        }
        Ok(profiles)
    }
}

/// A series and one of its points, as a measured target remembers them.
struct SeriesOf {
    series: &'static suite::SeriesSpec,
    point: suite::Point,
}

impl SeriesOf {
    fn new(series: &'static suite::SeriesSpec, point: &suite::Point) -> SeriesOf {
        SeriesOf {
            series,
            point: point.clone(),
        }
    }
}

/// What `sysperf profile` profiles: each pattern's core benchmarks (ids and globs, as `run`
/// takes them), or else its suite points (`scaling.path-depth@8`, a series, a suite, a glob,
/// as `run --suite` takes them), with each one's process shape for placement. A pattern that
/// names neither is the benchmark registry's error (which suggests neighbours).
pub fn profile_targets(
    patterns: &[String],
) -> Result<Vec<(harness::Target, crate::bench::Shape)>, crate::error::InputError> {
    let mut out = Vec::new();
    for p in patterns {
        match crate::bench::select(std::slice::from_ref(p)) {
            Ok(specs) => out.extend(
                specs
                    .into_iter()
                    .map(|s| (harness::Target::bench(s), s.shape)),
            ),
            Err(bench_err) => match suite::choose(std::slice::from_ref(p), false) {
                Ok(chosen) if !chosen.is_empty() => {
                    for c in chosen {
                        for (series, points) in c.series {
                            out.extend(
                                points
                                    .iter()
                                    .map(|pt| (suite::target(series, pt), series.shape)),
                            );
                        }
                    }
                }
                _ => return Err(bench_err),
            },
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|(t, _)| seen.insert(t.id.clone()));
    Ok(out)
}

/// The benchmark a worker request names: a core benchmark by id, or a series' point by series
/// id and parameter (the worker's [`harness::worker::Make`]).
pub fn make_benchmark(
    id: &str,
    param: Option<u64>,
) -> Result<Box<dyn crate::bench::Benchmark>, String> {
    if let Some(spec) = crate::bench::find(id) {
        return Ok((spec.make)());
    }
    match (suite::find_series(id), param) {
        (Some(series), Some(param)) => Ok((series.make)(param)),
        (Some(_), None) => Err(format!("series '{id}' needs a parameter")),
        (None, _) => Err(format!("unknown benchmark '{id}'")),
    }
}

/// The half-width of a target's 95% median interval so far, in percent of its median; None
/// while its trials are too few for an order-statistic interval to reach 95% (6 or more).
pub fn half_width_pct(m: &Measurement) -> Option<f64> {
    let sorted = crate::stats::sorted(&m.wall_ns_per_op()).ok()?;
    let (lo, hi, level) = crate::stats::median_ci(&sorted, 0.95);
    let med = crate::stats::quantile(&sorted, 0.5);
    (level >= 0.95 && med > 0.0).then(|| 100.0 * (med - lo).max(hi - med) / med)
}

fn precise(m: &Measurement, pct: f64) -> bool {
    half_width_pct(m).is_some_and(|h| h <= pct)
}

/// Iterations and wall time of a benchmark's last successful measured trial.
pub fn calibrated(r: &BenchResult) -> Option<(u64, u64)> {
    r.summary.as_ref()?;
    r.trials
        .iter()
        .rev()
        .find(|t| t.kind == TrialKind::Measured && t.error.is_none() && t.wall_ns > 0)
        .map(|t| (t.iterations, t.wall_ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaved_rounds_hold_every_target_once_in_a_seeded_order() {
        let order = trial_order(4, 3, 9, true);
        assert_eq!(order.len(), 12);
        for r in 0..3 {
            let mut round: Vec<usize> = order
                .iter()
                .filter(|(x, _)| *x == r)
                .map(|(_, i)| *i)
                .collect();
            round.sort();
            assert_eq!(round, vec![0, 1, 2, 3], "round {r}");
        }
        assert_eq!(
            order,
            trial_order(4, 3, 9, true),
            "replayable from the seed"
        );
        let rounds: Vec<Vec<usize>> = (0..3)
            .map(|r| {
                order
                    .iter()
                    .filter(|(x, _)| *x == r)
                    .map(|(_, i)| *i)
                    .collect()
            })
            .collect();
        assert!(
            rounds.windows(2).any(|w| w[0] != w[1]),
            "rounds are shuffled independently"
        );
        let seq = trial_order(2, 2, 9, false);
        assert_eq!(seq, vec![(0, 0), (1, 0), (0, 1), (1, 1)]);
    }
}
