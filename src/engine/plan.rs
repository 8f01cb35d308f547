//! A run's plan: every decision made before the first trial (what is measured, where, with
//! which budget, in which order, with which probes), made from what the user asked and the
//! CPUs this process may use. Resolving a plan runs nothing and touches no file, so it is
//! tested without measuring and printed by `sysperf run --dry-run`.
//!
//! It is not the execution: [`super::Engine`] carries a plan out.

use crate::bench::{self, Spec};
use crate::error::InputError;
use crate::harness::budget::Budget;
use crate::harness::placement::{self, CpuChoice, Mode, Plan};
use crate::harness::Target;
use crate::model::RunParams;
use crate::reference;
use crate::suite::{self, Point, SeriesSpec, Suite};
use serde::Serialize;
use std::time::Duration;

/// Default counted trials per benchmark.
pub const DEFAULT_TRIALS: u32 = 5;
/// Default calibration target, in seconds.
pub const DEFAULT_MIN_TIME_S: f64 = 0.1;
/// How long `--precision` may add rounds unless `--max-time` says otherwise, in seconds.
pub const DEFAULT_MAX_TIME_S: f64 = 300.0;

/// What the user asked `run` to do, before anything is checked (the CLI's arguments, or a
/// test's).
#[derive(Debug, Clone, PartialEq)]
pub struct RunRequest {
    pub selection: Vec<String>,
    pub suites: Vec<String>,
    /// `--trials`, None when not given.
    pub trials: Option<u32>,
    /// `--min-time` in seconds, None when not given.
    pub min_time_s: Option<f64>,
    pub quick: bool,
    /// A smoke test with a budget of its own (`noise --quick`: 3 runs of 3 short trials): the
    /// runs are stored as quick, so that no estimate of this machine takes them for a
    /// measurement (#42).
    pub smoke: bool,
    pub placement: Mode,
    /// `--cpu`, parsed.
    pub cpus: Option<Vec<u32>>,
    pub label: Option<String>,
    pub timeout_s: f64,
    pub observe: bool,
    /// `--profile`: the seconds of each profiled trial.
    pub profile_seconds: Option<f64>,
    /// Seeds the order of the trials within each round.
    pub seed: u64,
    /// Trials in shuffled rounds across every target (the default), or each target's trials
    /// back to back (`--sequential`).
    pub interleave: bool,
    /// `--repeat N`: N runs of the plan, one after the other, grouped.
    pub repeat: u32,
    /// `--precision PCT`: rounds are added until every target's interval half-width is at
    /// most PCT% of its median ...
    pub precision_pct: Option<f64>,
    /// ... or until this many seconds of rounds have passed (`--max-time`).
    pub max_time_s: Option<f64>,
    /// `--settle S`: flush dirty pages and wait up to S seconds for a quiet machine first.
    pub settle_s: Option<f64>,
    /// Add the host-speed reference ([`bench::hostspeed`]) to every round of an interleaved
    /// measurement (the default; `--no-reference` says no), so that comparisons can give
    /// speed-adjusted ratios (#42). Quick and sequential runs never carry it.
    pub reference: bool,
}

impl Default for RunRequest {
    fn default() -> Self {
        RunRequest {
            selection: Vec::new(),
            suites: Vec::new(),
            trials: None,
            min_time_s: None,
            quick: false,
            smoke: false,
            placement: Mode::Same,
            cpus: None,
            label: None,
            timeout_s: 60.0,
            observe: false,
            profile_seconds: None,
            seed: 0,
            interleave: true,
            repeat: 1,
            precision_pct: None,
            max_time_s: None,
            settle_s: None,
            reference: true,
        }
    }
}

/// Where a planned target comes from.
#[derive(Debug, Clone)]
pub enum Origin {
    /// A core benchmark of the registry.
    Bench(&'static Spec),
    /// A point of a suite's series; `suite` indexes [`RunPlan::suites`].
    Point {
        suite: usize,
        series: &'static SeriesSpec,
        point: Point,
    },
}

/// One thing to measure, placed.
#[derive(Debug, Clone)]
pub struct Planned {
    pub target: Target,
    pub placement: Plan,
    pub origin: Origin,
}

/// Where targets run: `mode` on the CPUs given (`--cpu`) among those this process may use.
/// The one placement path: a run's targets are placed through it, and so are `trace`'s and
/// `profile`'s, which make no run plan (#46).
#[derive(Debug, Clone)]
pub struct Placing {
    pub mode: Mode,
    pub cpus: CpuChoice,
}

impl Placing {
    pub fn new(
        mode: Mode,
        given: Option<Vec<u32>>,
        allowed: &[u32],
    ) -> Result<Placing, InputError> {
        Ok(Placing {
            mode,
            cpus: CpuChoice::new(given, allowed)?,
        })
    }

    /// Where a target of `shape` runs.
    pub fn plan(&self, shape: bench::Shape) -> Result<Plan, InputError> {
        placement::plan(self.mode, shape, &self.cpus)
    }
}

/// Every decision of a run, made before the first trial.
#[derive(Debug, Clone)]
pub struct RunPlan {
    /// Core benchmarks first, then the suites' points, in registry order.
    pub targets: Vec<Planned>,
    pub suites: Vec<&'static Suite>,
    pub budget: Budget,
    pub mode: Mode,
    pub cpus: CpuChoice,
    pub label: Option<String>,
    pub observe: bool,
    pub profile_seconds: Option<f64>,
    pub seed: u64,
    pub interleave: bool,
    /// Runs to make of this plan (`--repeat`), each a replicate of one group.
    pub repeat: u32,
    /// The interval half-width asked for (`--precision`), in percent of the median.
    pub precision_pct: Option<f64>,
    /// How long rounds may go on for `--precision`.
    pub max_time: Duration,
    /// This machine's run-to-run CV of each test, from its stored runs made with these
    /// options (the caller's to fill: the engine reads no store for it); `--precision`
    /// includes it in the interval it waits for. Empty: not known.
    pub run_cv: std::collections::BTreeMap<String, f64>,
    /// Counted rounds may stop before `budget.trials` once enough have run for long enough
    /// (`ab` of commands, as hyperfine's runs do); None: always `budget.trials`.
    pub rounds_until: Option<RoundsUntil>,
    /// What the run records of how it was asked for.
    pub params: RunParams,
}

/// When counted rounds may stop early (#43): after at least `min_rounds` rounds, once
/// `seconds` have passed since the measuring began (calibration and warm-up count). hyperfine
/// times a command at least 10 times and for at least 3 s; `ab` of commands asks the same of
/// each pair of commands, so that commands of 0.1-1 s take no more time than there, while
/// short ones still get every planned round. The rule reads the clock only, never the
/// figures: stopping on what was measured would bias them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoundsUntil {
    pub min_rounds: u32,
    pub seconds: f64,
}

impl RoundsUntil {
    /// Whether the rounds may stop after `done` rounds, `elapsed` after the measuring began.
    pub fn reached(&self, done: u32, elapsed: Duration) -> bool {
        done >= self.min_rounds && elapsed.as_secs_f64() >= self.seconds
    }

    /// The rounds it expects of at most `count`, `before` having passed before the first
    /// round, which lasted `first`: what the progress bar is told once a round's length is
    /// known.
    pub fn expected(&self, count: u32, before: Duration, first: Duration) -> u32 {
        let per = first.as_secs_f64().max(1e-6);
        let left = (self.seconds - before.as_secs_f64()).max(0.0);
        let n = (left / per).ceil().min(count as f64) as u32;
        n.max(self.min_rounds).min(count)
    }
}

impl RunPlan {
    /// Checks and resolves `req` against the registries and the CPUs this process may use.
    pub fn resolve(req: &RunRequest, allowed_cpus: &[u32]) -> Result<RunPlan, InputError> {
        let chosen = suite::choose(&req.suites, req.quick)?;
        let specs = if chosen.is_empty() || !req.selection.is_empty() {
            bench::select(&req.selection)?
        } else {
            Vec::new()
        };
        if req.quick && (req.trials.is_some() || req.min_time_s.is_some()) {
            return Err(InputError::InvalidValue {
                what: "--quick",
                value: "with --trials or --min-time".into(),
                why: format!(
                    "--quick is its own budget ({} trial of {} s, no warm-up); drop --quick to choose trials and time",
                    Budget::QUICK_TRIALS,
                    Budget::QUICK_MIN_TIME.as_secs_f64()
                ),
            });
        }
        let placing = Placing::new(req.placement, req.cpus.clone(), allowed_cpus)?;
        check_label(req.label.as_deref())?;
        let budget = run_budget(req)?;

        let (targets, suites) = plan_targets(req, specs, chosen, &placing, &budget)?;
        check_rounds(req)?;
        let params = run_params(req, &budget);
        Ok(RunPlan {
            targets,
            suites,
            budget,
            mode: req.placement,
            cpus: placing.cpus,
            label: req.label.clone(),
            observe: req.observe,
            profile_seconds: req.profile_seconds,
            seed: req.seed,
            interleave: req.interleave,
            repeat: req.repeat,
            precision_pct: req.precision_pct,
            max_time: Duration::from_secs_f64(req.max_time_s.unwrap_or(DEFAULT_MAX_TIME_S)),
            run_cv: Default::default(),
            rounds_until: None,
            params,
        })
    }

    /// Trials at the calibrated count that the plan will run (warm-ups and counted trials):
    /// calibration trials are not known before they run and are not counted here.
    pub fn planned_trials(&self) -> u64 {
        self.targets.len() as u64 * self.budget.trials_per_target()
    }

    /// The core benchmarks of the plan (the suites' points are not counted).
    pub fn benchmarks(&self) -> usize {
        self.targets
            .iter()
            .filter(|p| matches!(p.origin, Origin::Bench(_)))
            .count()
    }

    /// Targets whose count is found by calibration (the others have a fixed count).
    pub fn calibrated_targets(&self) -> usize {
        self.targets
            .iter()
            .filter(|t| t.target.iterations.is_none())
            .count()
    }

    /// The plan as a document: what `run --dry-run --json` prints.
    pub fn document(&self) -> PlanDocument {
        PlanDocument {
            format: "sysperf-plan",
            trials: self.budget.trials,
            warmup: self.budget.warmup,
            min_time_s: self.budget.min_time.as_secs_f64(),
            timeout_s: self.budget.timeout.as_secs_f64(),
            quick: self.budget.quick,
            order: if self.interleave {
                "interleaved"
            } else {
                "sequential"
            },
            seed: self.seed,
            cpus: self.cpus.cpus.clone(),
            observe: self.observe,
            profile_seconds: self.profile_seconds,
            settle_s: self.params.settle_s,
            suites: self.suites.iter().map(|s| s.name).collect(),
            planned_trials: self.planned_trials(),
            at_least_s: self.calibrated_targets() as f64
                * self.budget.trials_per_target() as f64
                * self.budget.min_time.as_secs_f64(),
            trial_order: super::trial_order(
                self.targets.len(),
                self.budget.trials,
                self.seed,
                self.interleave,
            )
            .into_iter()
            .map(|(round, i)| (round, self.targets[i].target.id.clone()))
            .collect(),
            targets: self
                .targets
                .iter()
                .map(|p| PlannedDoc {
                    id: p.target.id.clone(),
                    placement: p.placement.label,
                    cpus: p.placement.cpus.clone(),
                    iterations: match p.target.iterations {
                        Some(n) => format!("fixed {n}"),
                        None => format!("calibrated to {} s", self.budget.min_time.as_secs_f64()),
                    },
                    memory_limit_bytes: p.target.memory_limit_bytes,
                })
                .collect(),
        }
    }

    /// The plan as text: what `run --dry-run` prints.
    pub fn render(&self) -> String {
        let d = self.document();
        let reference = d
            .targets
            .iter()
            .any(|t| t.id == crate::bench::hostspeed::ID);
        let mut s = format!(
            "plan: {} targets{}, {} counted trial{} each{}, {} order (seed {}), CPUs {}\n",
            d.targets.len(),
            if reference {
                " (the last the host-speed reference: --no-reference leaves it out)"
            } else {
                ""
            },
            d.trials,
            if d.trials == 1 { "" } else { "s" },
            if d.warmup {
                " after a warm-up"
            } else {
                ", no warm-up"
            },
            d.order,
            d.seed,
            crate::units::format_list(&d.cpus),
        );
        s.push_str(&format!(
            "budget: trials of at least {} s, killed after {} s{}{}{}\n",
            d.min_time_s,
            d.timeout_s,
            if d.quick {
                "; --quick: a smoke test, not a measurement"
            } else {
                ""
            },
            if d.observe { "; counters observed" } else { "" },
            match d.profile_seconds {
                Some(p) => format!("; each benchmark profiled for {p} s"),
                None => String::new(),
            }
        ));
        if let Some(w) = d.settle_s {
            s.push_str(&format!(
                "settle: sync, then wait up to {w} s for a quiet machine before the first trial\n"
            ));
        }
        if !d.suites.is_empty() {
            s.push_str(&format!("suites: {}\n", d.suites.join(", ")));
        }
        s.push_str(&format!(
            "{} trials at the calibrated counts (plus calibration): at least {} of measuring, plus calibration and start-up{}\n",
            d.planned_trials,
            seconds(d.at_least_s),
            if self.calibrated_targets() < d.targets.len() {
                ", plus the fixed-count targets' own time"
            } else {
                ""
            }
        ));
        s.push_str(&order_lines(&d.trial_order, self.interleave));
        s.push('\n');
        s.push_str(&format!(
            "{:<28} {:<9} {:<7} iterations\n",
            "target", "placement", "cpus"
        ));
        for t in &d.targets {
            s.push_str(&format!(
                "{:<28} {:<9} {:<7} {}{}\n",
                t.id,
                t.placement,
                crate::units::format_list(&t.cpus),
                t.iterations,
                match t.memory_limit_bytes {
                    Some(b) => format!(", memory limited to {} KiB", b / 1024),
                    None => String::new(),
                }
            ));
        }
        s
    }
}

/// The budget of a run (`--trials`, `--min-time`, `--timeout`, `--quick`), its values
/// checked (and `--profile-seconds`').
fn run_budget(req: &RunRequest) -> Result<Budget, InputError> {
    if let Some(s) = req.profile_seconds {
        positive("--profile-seconds", s)?;
    }
    positive("--timeout", req.timeout_s)?;
    let trials = req.trials.unwrap_or(DEFAULT_TRIALS);
    let min_time_s = req.min_time_s.unwrap_or(DEFAULT_MIN_TIME_S);
    positive("--min-time", min_time_s)?;
    Ok(Budget::run(
        trials,
        Duration::from_secs_f64(min_time_s),
        Duration::from_secs_f64(req.timeout_s),
        req.quick,
    ))
}

/// The targets of a run, placed on `cpus`: the chosen tests (`specs`), each point of the
/// chosen suites' series, and the reference test of host speed where the run's trials are
/// interleaved and it is not among them; with the suites of the points.
fn plan_targets(
    req: &RunRequest,
    specs: Vec<&'static bench::Spec>,
    chosen: Vec<suite::Chosen>,
    placing: &Placing,
    budget: &Budget,
) -> Result<(Vec<Planned>, Vec<&'static Suite>), InputError> {
    let mut targets = Vec::new();
    for spec in specs {
        targets.push(Planned {
            target: Target::bench(spec),
            placement: placing.plan(spec.shape)?,
            origin: Origin::Bench(spec),
        });
    }
    let mut suites = Vec::new();
    for c in chosen {
        let index = suites.len();
        suites.push(c.suite);
        for (series, points) in c.series {
            let placed = placing.plan(series.shape)?;
            for point in points {
                targets.push(Planned {
                    target: suite::target(series, &point),
                    placement: placed.clone(),
                    origin: Origin::Point {
                        suite: index,
                        series,
                        point,
                    },
                });
            }
        }
    }
    let carries_reference = targets.iter().any(|t| match &t.origin {
        Origin::Bench(spec) => spec.id == bench::hostspeed::ID,
        Origin::Point { .. } => false,
    });
    if req.reference
        && req.interleave
        && !budget.quick
        && !req.smoke
        && !targets.is_empty()
        && !carries_reference
    {
        if let Some(spec) = bench::find(bench::hostspeed::ID) {
            targets.push(Planned {
                target: Target::bench(spec),
                placement: placing.plan(spec.shape)?,
                origin: Origin::Bench(spec),
            });
        }
    }
    Ok((targets, suites))
}

/// Checks what bounds a run's rounds and runs: `--precision`, `--max-time`, `--settle`,
/// `--repeat`.
fn check_rounds(req: &RunRequest) -> Result<(), InputError> {
    let bad = |what: &'static str, value: String, why: &str| {
        Err(InputError::InvalidValue {
            what,
            value,
            why: why.into(),
        })
    };
    if let Some(p) = req.precision_pct {
        if !(p.is_finite() && p > 0.0 && p <= 100.0) {
            return bad(
                "--precision",
                p.to_string(),
                "give a percentage above 0 and at most 100, such as 3",
            );
        }
        if req.quick {
            return bad(
                "--precision",
                p.to_string(),
                "--quick runs one trial, which has no interval; drop --quick",
            );
        }
    }
    if let Some(m) = req.max_time_s {
        positive("--max-time", m)?;
        if req.precision_pct.is_none() {
            return bad(
                "--max-time",
                m.to_string(),
                "it bounds --precision; give --precision PCT too",
            );
        }
    }
    if let Some(s) = req.settle_s {
        positive("--settle", s)?;
    }
    if req.repeat == 0 || req.repeat > 1000 {
        return bad(
            "--repeat",
            req.repeat.to_string(),
            "give a number of runs from 1 to 1000",
        );
    }
    Ok(())
}

/// What a run records of how it was asked for.
fn run_params(req: &RunRequest, budget: &Budget) -> RunParams {
    RunParams {
        selection: req.selection.clone(),
        suites: req.suites.clone(),
        trials: budget.trials,
        min_time_s: budget.min_time.as_secs_f64(),
        quick: budget.quick || req.smoke,
        placement: req.placement.as_str().to_string(),
        cpus: req.cpus.clone(),
        timeout_s: req.timeout_s,
        order: Some(
            if req.interleave {
                "interleaved"
            } else {
                "sequential"
            }
            .into(),
        ),
        seed: Some(req.seed),
        group: None,
        replicate: None,
        precision_pct: req.precision_pct,
        settle_s: req.settle_s,
        ab: None,
    }
}

/// The plan as `run --dry-run --json` prints it.
#[derive(Debug, Clone, Serialize)]
pub struct PlanDocument {
    pub format: &'static str,
    pub trials: u32,
    pub warmup: bool,
    pub min_time_s: f64,
    pub timeout_s: f64,
    pub quick: bool,
    pub order: &'static str,
    pub seed: u64,
    pub cpus: Vec<u32>,
    pub observe: bool,
    pub profile_seconds: Option<f64>,
    /// `--settle S`: the longest wait for a quiet machine before the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settle_s: Option<f64>,
    pub suites: Vec<&'static str>,
    pub planned_trials: u64,
    /// The least time the run takes, in seconds: every planned trial of a calibrated target
    /// lasts at least `min_time_s` (calibration, start-up and fixed-count targets add to it).
    pub at_least_s: f64,
    /// The counted trials in the order the seed gives them: (round from 0, target id). The
    /// engine runs this order among the targets that prepare (a target that cannot, such as
    /// one lacking root, drops out of every round).
    pub trial_order: Vec<(u32, String)>,
    pub targets: Vec<PlannedDoc>,
}

/// "0.5 s", "1 min 30 s".
fn seconds(s: f64) -> String {
    if s < 1.0 {
        format!("{s:.2} s")
    } else if s < 60.0 {
        format!("{} s", (s * 10.0).round() / 10.0)
    } else {
        format!("{} min {} s", (s / 60.0).floor(), (s % 60.0).round())
    }
}

/// The trial order as `--dry-run` prints it: interleaved, the first round in full and how the
/// others follow; sequential, the targets in turn.
fn order_lines(order: &[(u32, String)], interleave: bool) -> String {
    let round = |r: u32| -> Vec<&str> {
        order
            .iter()
            .filter(|(x, _)| *x == r)
            .map(|(_, id)| id.as_str())
            .collect()
    };
    let rounds = order.iter().map(|(r, _)| r + 1).max().unwrap_or(0);
    if !interleave {
        let mut ids: Vec<&str> = order.iter().map(|(_, id)| id.as_str()).collect();
        ids.dedup();
        return format!(
            "trial order: each target's trials back to back (--sequential): {}\n",
            ids.join(", ")
        );
    }
    let mut s = format!("trial order, round 1: {}\n", round(0).join(", "));
    if rounds > 1 {
        s += &format!(
            "  rounds 2-{rounds}: each shuffled anew from the seed (round 2: {}); --json lists every trial\n",
            round(1).join(", ")
        );
    }
    s
}

#[derive(Debug, Clone, Serialize)]
pub struct PlannedDoc {
    pub id: String,
    pub placement: &'static str,
    pub cpus: Vec<u32>,
    pub iterations: String,
    pub memory_limit_bytes: Option<u64>,
}

fn positive(what: &'static str, v: f64) -> Result<(), InputError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(InputError::InvalidValue {
            what,
            value: v.to_string(),
            why: "give a positive number of seconds".into(),
        })
    }
}

/// A label finds the run again: printable, not too long, not a reference run's name (which
/// resolves to the built-in run first, so such a label could never find this run), and not
/// otherwise ambiguous ([`crate::model::ambiguous_label`]).
fn check_label(label: Option<&str>) -> Result<(), InputError> {
    let Some(l) = label else { return Ok(()) };
    if l.len() > 200 || l.chars().any(char::is_control) {
        return Err(InputError::InvalidValue {
            what: "--label",
            value: l.chars().take(40).collect(),
            why: "use at most 200 printable characters".into(),
        });
    }
    if reference::is_name(l) {
        return Err(InputError::InvalidValue {
            what: "--label",
            value: l.to_string(),
            why: "it is the name of a built-in reference run; choose another label".into(),
        });
    }
    if let Some(why) = crate::model::ambiguous_label(l) {
        return Err(InputError::InvalidValue {
            what: "--label",
            value: l.to_string(),
            why: format!("{why}; choose another label"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn rounds_stop_only_after_the_least_rounds_and_the_time() {
        let u = RoundsUntil {
            min_rounds: 10,
            seconds: 6.0,
        };
        let s = Duration::from_secs_f64;
        assert!(!u.reached(9, s(60.0)), "fewer rounds than the least");
        assert!(!u.reached(20, s(5.9)), "not yet 6 s");
        assert!(u.reached(10, s(6.0)));
        // What the bar expects from the first round's length, within [least, count].
        assert_eq!(u.expected(30, s(0.0), s(0.6)), 10);
        assert_eq!(u.expected(30, s(0.0), s(0.25)), 24);
        assert_eq!(
            u.expected(30, s(1.0), s(0.25)),
            20,
            "calibration's second counts"
        );
        assert_eq!(u.expected(30, s(9.0), s(0.25)), 10, "never below the least");
        assert_eq!(u.expected(30, s(0.0), s(0.001)), 30);
        assert_eq!(u.expected(8, s(0.0), s(2.0)), 8, "never past the count");
    }

    use super::*;

    fn req(selection: &[&str]) -> RunRequest {
        RunRequest {
            selection: selection.iter().map(|s| s.to_string()).collect(),
            seed: 42,
            reference: false,
            ..RunRequest::default()
        }
    }

    #[test]
    fn the_host_speed_reference_joins_interleaved_measurements_only() {
        let with = |r: RunRequest| {
            RunPlan::resolve(&r, &[0, 1])
                .unwrap()
                .targets
                .iter()
                .map(|t| t.target.id.clone())
                .collect::<Vec<_>>()
        };
        let on = RunRequest {
            reference: true,
            ..req(&["syscall"])
        };
        // Last, after the tests and any suite's points, once.
        assert_eq!(with(on.clone()), ["syscall", "hostspeed"]);
        let points = RunRequest {
            suites: vec!["bbn.pipe@65536".into()],
            ..on.clone()
        };
        assert_eq!(with(points), ["syscall", "bbn.pipe@65536", "hostspeed"]);
        let chosen = RunRequest {
            selection: vec!["hostspeed".into(), "syscall".into()],
            ..on.clone()
        };
        assert_eq!(with(chosen), ["syscall", "hostspeed"]);
        // Not in a smoke test, a sequential run, or when told no.
        let quick = RunRequest {
            quick: true,
            ..on.clone()
        };
        assert_eq!(with(quick), ["syscall"]);
        let sequential = RunRequest {
            interleave: false,
            ..on.clone()
        };
        assert_eq!(with(sequential), ["syscall"]);
        assert_eq!(with(req(&["syscall"])), ["syscall"]);
        assert!(RunRequest::default().reference);
    }

    #[test]
    fn a_plan_is_resolved_without_running_anything() {
        let p = RunPlan::resolve(&req(&["syscall", "pipeback4"]), &[0, 1]).unwrap();
        assert_eq!(p.targets.len(), 2);
        assert_eq!(p.budget.trials, DEFAULT_TRIALS);
        assert!(p.budget.warmup);
        assert_eq!(p.planned_trials(), 2 * (DEFAULT_TRIALS as u64 + 1));
        assert_eq!(p.calibrated_targets(), 2);
        // Default CPUs: the last allowed first; a pair on one CPU by default.
        assert_eq!(p.targets[1].placement.label, "same");
        let text = p.render();
        assert!(text.contains("interleaved order (seed 42)"), "{text}");
        assert!(text.contains("pipeback4"), "{text}");
        let doc = serde_json::to_value(p.document()).unwrap();
        assert_eq!(doc["targets"][0]["id"], "syscall");
        assert_eq!(doc["planned_trials"], 12);
    }

    #[test]
    fn quick_refuses_an_explicit_budget_and_bad_input_is_an_input_error() {
        let quick = RunRequest {
            quick: true,
            trials: Some(10),
            ..req(&["syscall"])
        };
        let e = RunPlan::resolve(&quick, &[0]).unwrap_err().to_string();
        assert!(e.contains("--quick is its own budget"), "{e}");
        let q = RunPlan::resolve(
            &RunRequest {
                quick: true,
                ..req(&["syscall"])
            },
            &[0],
        )
        .unwrap();
        assert_eq!(q.budget, Budget::quick(Duration::from_secs(60)));
        assert!(RunPlan::resolve(&req(&["nosuch"]), &[0]).is_err());
        let bad_cpu = RunRequest {
            cpus: Some(vec![7]),
            ..req(&["syscall"])
        };
        assert!(RunPlan::resolve(&bad_cpu, &[0, 1]).is_err());
        let label = RunRequest {
            label: Some("vax750-4.2bsd".into()),
            ..req(&["syscall"])
        };
        assert!(RunPlan::resolve(&label, &[0]).is_err());
    }

    #[test]
    fn suite_points_are_planned_after_the_benchmarks() {
        let r = RunRequest {
            suites: vec!["bbn.pipe@65536".into()],
            ..req(&["syscall"])
        };
        let p = RunPlan::resolve(&r, &[0, 1]).unwrap();
        assert_eq!(p.suites.len(), 1);
        assert_eq!(p.targets.len(), 2);
        assert!(matches!(p.targets[0].origin, Origin::Bench(_)));
        assert!(matches!(
            p.targets[1].origin,
            Origin::Point { suite: 0, .. }
        ));
        assert_eq!(p.targets[1].target.id, "bbn.pipe@65536");
    }
}
