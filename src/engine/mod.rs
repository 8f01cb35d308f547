//! The run engine: carries out a [`RunPlan`] from the fingerprint to the stored run. It
//! measures the timer overhead, checks the suites can run here, calibrates every target and
//! runs its warm-up, then runs the counted trials in rounds (one trial of every target per
//! round, in an order shuffled per round from the plan's seed, so that each benchmark's
//! trials sample the whole run and not one second of it), summarizes, profiles, derives and
//! stores. The steps are a [`session::Session`]'s, shared by `run` ([`Engine::execute`]) and
//! `ab` ([`ab`]); the order of the trials and the checkpoints are [`schedule`]'s. Progress
//! goes to a [`Sink`] as typed [`Event`]s: the CLI's progress bar and the tests are sinks.
//! Ctrl-C (the stop flag), timeouts and incomplete runs are handled here.
//!
//! It is not the harness (which runs one worker per trial and owns the clock), nor the
//! command line (which parses arguments and prints), nor the catalog (the caller updates the
//! machine's variance estimates): `sysperf run`, `run --suite`, `profile` and `trace` all
//! take their plan and budget from this module.

pub mod ab;
mod outcome;
pub mod plan;
pub mod schedule;
pub mod session;
pub mod switch;
pub mod tidy;

pub use crate::harness::budget::Budget;
pub use outcome::{exit_code, left_out};
pub use plan::{Origin, Placing, Planned, RunPlan, RunRequest};
pub use schedule::trial_order;
pub use tidy::tidy;

use crate::harness::placement::{Mode, Plan};
use crate::harness::{self, Measurement, Stop};
use crate::model::{BenchResult, Fingerprint, Run, Series, TrialKind, Warning, WarningKind};
use crate::observe::doctor;
use crate::profile::{self, Profile, ProfileError};
use crate::store::{Backend, StoreError};
use crate::{fingerprint, suite, sys};
use session::{Done, Order, Session, Slot, Wide};
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
    /// The counted rounds will stop early ([`plan::RoundsUntil`]): `trials` fewer than
    /// `RunStarted` planned.
    FewerTrials {
        trials: u64,
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
    /// The plan cannot be carried out as asked (checked again where it is used).
    #[error(transparent)]
    Input(Box<crate::error::InputError>),
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
            EngineError::Input(e) => e.exit_code(),
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

impl Engine<'_> {
    /// Measures `plan` into a new run in `store`: begun (marked incomplete) before the first
    /// trial, finished with everything measured, complete unless stopped. The machine's
    /// variance estimates are the caller's to update ([`crate::catalog::record_variance`]).
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
        let settled = self.settle(plan, sink);
        let (access, refused) = profile_access(plan);
        let mut run = self.new_run_here(plan)?;
        run.warnings = refused;
        match settled {
            Some(s) if s.quiet => run.notes.push(s.describe()),
            Some(s) => run.warnings.push(Warning {
                bench: None,
                kind: WarningKind::NotSettled,
                message: s.describe(),
            }),
            None => {}
        }
        let mut s = Session::begin(self, plan, store, sink, vec![run], began)?;
        let opts = self.options(plan);
        s.overhead(&opts);
        let chosen = preflight(plan, &mut s.runs[0]);
        let mut ms: Vec<Measurement> = chosen
            .iter()
            .map(|p| Measurement::new(&p.target, &p.placement, &opts))
            .collect();
        let slots = run_slots(&chosen);
        let mut plain = |_| Ok::<(), EngineError>(());
        s.calibrate(&mut ms, (0, chosen.len()), &mut plain)?;
        let order = if plan.interleave {
            Order::Interleaved
        } else {
            Order::Sequential
        };
        s.rounds(&mut ms, &slots, plan, order, &mut plain)?;
        let wide = |ms: &[Measurement], pct| run_wide(ms, pct, &plan.run_cv);
        s.precision(&mut ms, &slots, plan, order, &wide, &mut plain)?;
        let done = s.summarise(&ms, &slots)?;
        let (profiles, points) = self.place(&mut s, plan, &chosen, done, access.as_ref())?;
        let from_suites = self.series(&mut s, plan, points)?;
        machine_noise(&mut s.runs[0]);
        let interrupted = s.interrupted;
        let run = s
            .finish(plan.benchmarks(), |_| from_suites.clone())?
            .remove(0);
        Ok(RunOutcome {
            run,
            profiles,
            interrupted,
        })
    }

    /// The summaries of a run's measurements into the run: a core benchmark's among its
    /// results, a suite's point kept for its series; each profiled first with `--profile`.
    fn place(
        &self,
        s: &mut Session,
        plan: &RunPlan,
        chosen: &[&Planned],
        done: Vec<Done>,
        access: Option<&profile::Access>,
    ) -> Result<(Vec<Profile>, Points), EngineError> {
        let (mut profiles, mut points) = (Vec::new(), Vec::new());
        for (p, done) in chosen.iter().zip(done) {
            let Some((result, warnings)) = done else {
                continue;
            };
            s.runs[0].warnings.extend(warnings);
            // `--profile`: a profiled trial of every target, core benchmark or suite point
            // alike, stored with the run; one that cannot be profiled says why in a warning.
            if let (Some(access), false) = (access, s.interrupted) {
                profiles.extend(self.profile_into(s, p, &result, plan, access)?);
            }
            match &p.origin {
                Origin::Bench(_) => s.runs[0].results.push(result),
                Origin::Point {
                    suite,
                    series,
                    point,
                } => points.push((*suite, SeriesOf::new(series, point), result)),
            }
        }
        Ok((profiles, points))
    }

    /// `--settle`: the machine's state before the first trial, made as alike as it can be
    /// between the runs that will be compared (and before the doctor looks at it).
    fn settle(
        &self,
        plan: &RunPlan,
        sink: &mut dyn Sink,
    ) -> Option<crate::observe::settle::Settled> {
        plan.params.settle_s.map(|s| {
            sink.event(Event::Phase { what: "settling" });
            crate::observe::settle::settle(Duration::from_secs_f64(s), self.stop)
        })
    }

    /// A new run of `plan` on this machine: its fingerprint, and what the doctor finds (a
    /// 0.2 s look at the CPUs and the settings that make results noisy or not comparable).
    fn new_run_here(&self, plan: &RunPlan) -> Result<Run, EngineError> {
        let fingerprint: Fingerprint = fingerprint::collect();
        let findings = doctor::diagnose(&doctor::gather(fingerprint.clone(), doctor::SAMPLE));
        new_run(plan, fingerprint, findings)
    }

    /// The harness's options for `plan`.
    fn options(&self, plan: &RunPlan) -> harness::Options {
        plan.budget.options(
            self.worker_exe.clone(),
            plan.mode,
            plan.cpus.clone(),
            plan.observe,
        )
    }

    /// The profile of one measured target (`run --profile`), stored with the run; a failure,
    /// or a target without a successful trial to profile at, is a warning in the run, a stop
    /// ends the session.
    fn profile_into(
        &self,
        s: &mut Session,
        p: &Planned,
        result: &BenchResult,
        plan: &RunPlan,
        access: &profile::Access,
    ) -> Result<Option<Profile>, EngineError> {
        let Some(seconds) = plan.profile_seconds else {
            return Ok(None);
        };
        let id = &p.target.id;
        s.phase(&format!("profiling {id}"));
        let warning = |message: String| Warning {
            bench: Some(id.clone()),
            kind: WarningKind::Profile,
            message,
        };
        match self.profile_one(&p.target, &p.placement, result, seconds, plan, access) {
            Ok(Some(prof)) => {
                stored(s.store().add_profile(&s.runs[0].id, &prof), || {
                    format!("storing the profile of {id}")
                })?;
                Ok(Some(prof))
            }
            Ok(None) => {
                s.runs[0].warnings.push(warning(format!(
                    "{id}: not profiled: no trial succeeded, so there is no iteration count to profile at"
                )));
                Ok(None)
            }
            Err(ProfileError::Interrupted) => {
                s.interrupted = true;
                Ok(None)
            }
            Err(e) => {
                s.runs[0].warnings.push(warning(e.to_string()));
                Ok(None)
            }
        }
    }

    /// Each series from its measured points, in plan order, stored with the run; returns the
    /// suites' derived figures.
    fn series(
        &self,
        s: &mut Session,
        plan: &RunPlan,
        points: Points,
    ) -> Result<Vec<crate::model::Derived>, EngineError> {
        let mut by_suite: Vec<Vec<Series>> = vec![Vec::new(); plan.suites.len()];
        let mut i = 0;
        while i < points.len() {
            let (suite, spec) = (points[i].0, points[i].1.series);
            let mut measured = Vec::new();
            while i < points.len() && std::ptr::eq(points[i].1.series, spec) {
                measured.push((points[i].1.point.clone(), points[i].2.clone()));
                i += 1;
            }
            let run = &s.runs[0];
            let series = suite::series_from(spec, measured, run.overhead.as_ref());
            stored(s.store().add_series(&run.id, &series), || {
                format!("storing the series {}", spec.id)
            })?;
            by_suite[suite].push(series);
        }
        let mut from_suites = Vec::new();
        for (suite, series) in plan.suites.iter().zip(by_suite) {
            if !series.is_empty() {
                from_suites.extend((suite.derive)(&series));
            }
            s.runs[0].series.extend(series);
        }
        Ok(from_suites)
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
        let label = plan
            .label
            .clone()
            .unwrap_or_else(|| format!("repeat-{group}"));
        repeated(
            plan,
            "run",
            sink,
            |mut p, sink| {
                p.label = Some(label.clone());
                p.params.group = Some(group.clone());
                self.execute(&p, store, sink)
            },
            |o| o.interrupted,
        )
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

/// The `--repeat` loop of `run` and `ab`: `plan.repeat` copies of the plan run by `one`,
/// one after the other, the k-th with the k-th stream of the seed and, when there are
/// several, numbered as replicate k and announced as the phase "NOUN k+1 of N"; stops after
/// one that was `interrupted`.
pub(crate) fn repeated<O, E>(
    plan: &RunPlan,
    noun: &str,
    sink: &mut dyn Sink,
    mut one: impl FnMut(RunPlan, &mut dyn Sink) -> Result<O, E>,
    interrupted: impl Fn(&O) -> bool,
) -> Result<Vec<O>, E> {
    let mut out = Vec::new();
    for k in 0..plan.repeat {
        let mut p = plan.clone();
        p.seed = plan.seed.wrapping_add(u64::from(k));
        p.params.seed = Some(p.seed);
        if plan.repeat > 1 {
            p.params.replicate = Some(k);
            let what = format!("{noun} {} of {}", k + 1, plan.repeat);
            sink.event(Event::Phase { what: &what });
        }
        let o = one(p, sink)?;
        let stop = interrupted(&o);
        out.push(o);
        if stop {
            break;
        }
    }
    Ok(out)
}

/// Profiling needs permissions and kernel symbols: found out before measuring anything.
/// Refused, it is left out like every part of a run this process may not do (the one rule,
/// README "Privileges"): named in a warning, the rest measured, the run partial.
fn profile_access(plan: &RunPlan) -> (Option<profile::Access>, Vec<Warning>) {
    if plan.profile_seconds.is_none() {
        return (None, Vec::new());
    }
    match profile::check_access() {
        Ok(a) => (Some(a), Vec::new()),
        Err(e) => (
            None,
            vec![Warning {
                bench: None,
                kind: WarningKind::Profile,
                message: format!("--profile: no profiles made: {e}"),
            }],
        ),
    }
}

/// The measurements of a run whose interval is still wider than `--precision` asked: the
/// interval of a comparison of this run with another made alike, that is sqrt(2) times the
/// median's interval from the trials and, where this machine's run-to-run CV of the test is known
/// (`run_cv`), its level's variation across runs (#30). Rounds cannot narrow the latter:
/// a test whose run-to-run part alone is wider than asked is named, and not waited for.
fn run_wide(
    ms: &[Measurement],
    pct: f64,
    run_cv: &std::collections::BTreeMap<String, f64>,
) -> Vec<Wide> {
    let z = crate::variance::normal_quantile(0.975);
    // Against another run made alike, both runs' trials and both levels vary: the log
    // ratio's half-width is sqrt(2) times one run's (#42: --precision waited for one run's
    // interval while compare used about 1.4 times it).
    let two = std::f64::consts::SQRT_2;
    ms.iter()
        .enumerate()
        .filter(|(_, m)| m.ready())
        .filter_map(|(index, m)| {
            let trials = half_width_pct(m).map(|t| two * t);
            let runs = run_cv.get(m.id()).map(|cv| two * 100.0 * z * cv);
            let total = trials.map(|t| t.hypot(runs.unwrap_or(0.0)));
            if total.is_some_and(|h| h <= pct) {
                return None;
            }
            let reachable = runs.is_none_or(|r| r < pct);
            let now = match (total, runs) {
                (None, _) => "no 95% interval yet".to_string(),
                (Some(h), None) => format!("+-{h:.1}%"),
                (Some(h), Some(r)) if reachable => format!(
                    "+-{h:.1}% (this machine's run-to-run variation +-{r:.1}% included, speed-adjusted where that is smaller)"
                ),
                (Some(h), Some(r)) => format!(
                    "+-{h:.1}%, of which this machine's run-to-run variation alone is +-{r:.1}%, which more rounds cannot narrow ('run --repeat N' averages runs)"
                ),
            };
            Some(Wide {
                index,
                now,
                reachable,
            })
        })
        .collect()
}

/// What the run saw of the machine's speed (#30): one line (a warning when the host changed
/// speed, else a note), and a warning for each test whose own noise stands out.
fn machine_noise(run: &mut Run) {
    let Some(m) = crate::speed::machine_noise(run) else {
        return;
    };
    let line = m.line(ab::DEFAULT_TRIAL_S);
    match m.speeds {
        Some(s) if s.ratio >= 1.05 => run.warnings.push(Warning {
            bench: None,
            kind: WarningKind::MachineNoise,
            message: line,
        }),
        _ => run.notes.push(line),
    }
    for (id, sd) in &m.flagged {
        run.warnings.push(Warning {
            bench: Some(id.clone()),
            kind: WarningKind::HighCv,
            message: format!(
                "{id}: trials vary by {:.0}% with the machine's speed changes taken out, more than the other tests'; rerun it, or look at what it does that the others do not",
                100.0 * sd
            ),
        });
    }
}

/// Where a run's measurements are stored: a core benchmark at its place among the run's
/// results, a suite's point with its series at the end (no slot).
fn run_slots(chosen: &[&Planned]) -> Vec<Slot> {
    let mut next = 0..;
    chosen
        .iter()
        .map(|p| match p.origin {
            Origin::Bench(_) => next.next().map(|pos| (0, pos)),
            Origin::Point { .. } => None,
        })
        .collect()
}

/// The suites' preflight: a suite that cannot run here is skipped (with a warning in `run`)
/// before anything is measured. Returns the targets left to measure, in plan order.
fn preflight<'p>(plan: &'p RunPlan, run: &mut Run) -> Vec<&'p Planned> {
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
    plan.targets
        .iter()
        .filter(|p| match p.origin {
            Origin::Point { suite, .. } => runnable[suite],
            Origin::Bench(_) => true,
        })
        .collect()
}

/// A run's measured suite points: the suite (an index into the plan's), the series and
/// point, the result.
type Points = Vec<(usize, SeriesOf, BenchResult)>;

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

/// What one selection pattern names: core benchmarks (ids and globs, as `run` takes them),
/// or else suite points (`scaling.path-depth@8`, a series, a suite, a glob, as `run --suite`
/// takes them; `quick`: among `--quick`'s points). A pattern that names neither is the
/// benchmark registry's error (which suggests neighbours).
pub enum Picked {
    Benches(Vec<&'static crate::bench::Spec>),
    Points(Vec<suite::Chosen>),
}

impl Picked {
    pub fn of(pattern: &str, quick: bool) -> Result<Picked, crate::error::InputError> {
        let p = [pattern.to_string()];
        match crate::bench::select(&p) {
            Ok(specs) => Ok(Picked::Benches(specs)),
            Err(bench_err) => match suite::choose(&p, quick) {
                Ok(chosen) if !chosen.is_empty() => Ok(Picked::Points(chosen)),
                _ => Err(bench_err),
            },
        }
    }
}

/// What `sysperf profile` profiles: each pattern's core benchmarks or suite points
/// ([`Picked`]), with each one's process shape for placement.
pub fn profile_targets(
    patterns: &[String],
) -> Result<Vec<(harness::Target, crate::bench::Shape)>, crate::error::InputError> {
    let mut out = Vec::new();
    for p in patterns {
        match Picked::of(p, false)? {
            Picked::Benches(specs) => out.extend(
                specs
                    .into_iter()
                    .map(|s| (harness::Target::bench(s), s.shape)),
            ),
            Picked::Points(chosen) => {
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

/// Iterations and wall time of a benchmark's last successful measured trial.
pub fn calibrated(r: &BenchResult) -> Option<(u64, u64)> {
    r.summary.as_ref()?;
    r.trials
        .iter()
        .rev()
        .find(|t| t.kind == TrialKind::Measured && t.error.is_none() && t.wall_ns > 0)
        .map(|t| (t.iterations, t.wall_ns))
}
