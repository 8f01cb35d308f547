//! `sysperf explain A B`'s use case: the two runs and their comparison found, the tests to
//! explain chosen, each side's kernel profiles gathered (stored with the run, stored by an
//! earlier `explain --measure`, or, with `measure`, profiled now where this machine stands
//! for the side), the stored traces that stand for each side, the explanation built, and with
//! `try_switches` the recorded differences this machine can switch measured
//! ([`super::switches`]). The explaining itself is `crate::explain`'s; its renderings are
//! `report::explain`'s and `report::html`'s.

use super::{allowed_cpus, OpsError, Progress};
use crate::catalog::{self, Catalog};
use crate::engine::{self, Engine, RunPlan, RunRequest};
use crate::error::InputError;
use crate::explain::{self as explaining, Explanation, Input, SideProfile, Source};
use crate::model::{Profile, Run};
use crate::notice::tell;
use std::path::PathBuf;

pub use super::switches::TrySwitches;

/// What to explain, and how far to go for it.
#[derive(Debug, Clone)]
pub struct Request {
    /// Side A (the baseline) and side B, as the user named them.
    pub a: String,
    pub b: String,
    /// Tests to explain (ids, suite points, globs); empty: those that moved.
    pub tests: Vec<String>,
    /// The noise band (percent) of the verdicts that choose the tests.
    pub noise_pct: f64,
    /// `--measure`: profile for this many seconds what a side lacks, where this machine
    /// stands for it.
    pub measure_s: Option<f64>,
    /// `--try-switches`.
    pub try_switches: Option<TrySwitches>,
    /// The store (`--db`).
    pub db: Option<PathBuf>,
    /// The executable workers are started from (this program).
    pub worker_exe: PathBuf,
}

/// The explanation, with the profiles it was made from.
pub struct Explained {
    pub explanation: Explanation,
    /// Each side's profiles of the tests explained.
    pub profiles: [Vec<SideProfile>; 2],
    /// Ctrl-C stopped `try_switches`' measuring.
    pub interrupted: bool,
}

impl Explained {
    /// Each test explained that both sides have a profile of, with the two profiles (the
    /// differential flame graphs).
    pub fn profile_pairs(&self) -> Vec<(String, &Profile, &Profile)> {
        fn find<'p>(side: &'p [SideProfile], t: &str) -> Option<&'p Profile> {
            side.iter()
                .find(|p| p.profile.bench == t)
                .map(|p| &p.profile)
        }
        self.explanation
            .tests
            .iter()
            .filter_map(|t| {
                Some((
                    t.test.clone(),
                    find(&self.profiles[0], &t.test)?,
                    find(&self.profiles[1], &t.test)?,
                ))
            })
            .collect()
    }
}

/// Explains `req.b` against `req.a`; what it measures reports to `progress`.
pub fn explain(req: &Request, progress: &mut dyn Progress) -> Result<Explained, OpsError> {
    let mut catalog = Catalog::new(req.db.clone());
    let pair = || format!("{} {}", req.a, req.b);
    // Observations of the whole machine have no tests to explain: compare says how they differ.
    if catalog.observation_pair(&req.a, &req.b)?.is_some() {
        return Err(InputError::InvalidValue {
            what: "A B",
            value: pair(),
            why: "these are observations of the whole machine, not runs of tests; 'sysperf compare A B' compares them function by function".into(),
        }
        .into());
    }
    let (runs, cmp) = catalog.comparison(&[req.a.clone(), req.b.clone()], None, req.noise_pct)?;
    let [ra, rb] = &runs[..] else {
        return Err(InputError::InvalidValue {
            what: "A B",
            value: pair(),
            why: "name two runs to explain B against A".into(),
        }
        .into());
    };
    // A quick run is a smoke test (one short trial a test): its figures measure nothing a
    // change could be explained by (#42: explain of two quick runs blamed a slowdown for a
    // test measured faster).
    // (An `ab --quick` side is not one: its sides are paired round by round.)
    if let Some(q) = runs
        .iter()
        .find(|r| r.params.quick && r.params.ab.is_none())
    {
        return Err(InputError::InvalidValue {
            what: "A B",
            value: q.label.clone().unwrap_or_else(|| q.id.clone()),
            why: "a --quick run is a smoke test, not a measurement: explain runs measured without --quick (or pair the sides with 'sysperf ab ... --explain')".into(),
        }
        .into());
    }
    let tests = explaining::tests_to_explain(&cmp, 1, &req.tests)?;
    let names: Vec<String> = tests.iter().map(|(t, _)| t.clone()).collect();
    let mut stored = catalog.profiles(&runs)?.into_iter();
    let mut sides: [Vec<SideProfile>; 2] = [ra, rb].map(|r| {
        stored
            .next()
            .unwrap_or_default()
            .into_iter()
            .filter(|p| names.contains(&p.bench))
            .map(|profile| SideProfile {
                profile,
                source: Source::Run { run: r.id.clone() },
            })
            .collect()
    });
    let unmeasured = fill_in(req, &mut catalog, [ra, rb], &names, &mut sides, progress)?;
    // Stored traces (`trace --store`) of the tests, each standing for the side whose machine
    // it was made on.
    let mut traces = Vec::new();
    if runs.iter().any(|r| r.source == "measured") {
        let store = catalog.store()?;
        for t in &names {
            traces.extend(store.traces(Some(t))?);
        }
    }
    let side_traces = [0, 1].map(|s| explaining::side_traces(s, [ra, rb], &traces));
    let mut explanation = explaining::build(&Input {
        runs: [ra, rb],
        comparison: &cmp,
        column: 1,
        profiles: [&sides[0], &sides[1]],
        traces: [&side_traces[0], &side_traces[1]],
        unmeasured,
        tests: &tests,
    });
    let mut interrupted = false;
    if let Some(how) = &req.try_switches {
        let (b, stopped) = super::switches::try_switches(
            how,
            super::switches::Where {
                db: req.db.as_ref(),
                worker_exe: &req.worker_exe,
                noise_pct: req.noise_pct,
            },
            [ra, rb],
            &explanation,
            progress,
        )?;
        explanation.try_switches = Some(b);
        interrupted = stopped;
    }
    Ok(Explained {
        explanation,
        profiles: sides,
        interrupted,
    })
}

/// The profiles of `tests` a measured side lacks: those an earlier `explain --measure` stored
/// for it, then, with `req.measure_s`, profiled now where this machine stands for the side.
/// Returns, for each side, why it was not measured (this machine does not stand for it).
fn fill_in(
    req: &Request,
    catalog: &mut Catalog,
    runs: [&Run; 2],
    tests: &[String],
    sides: &mut [Vec<SideProfile>; 2],
    progress: &mut dyn Progress,
) -> Result<[Option<String>; 2], OpsError> {
    let mut unmeasured: [Option<String>; 2] = [None, None];
    let mut hint = false;
    for side in 0..2 {
        let missing = |sides: &[Vec<SideProfile>; 2]| -> Vec<String> {
            tests
                .iter()
                .filter(|t| !sides[side].iter().any(|p| p.profile.bench == **t))
                .cloned()
                .collect()
        };
        if missing(sides).is_empty() || runs[side].source != "measured" {
            continue;
        }
        // A profile an earlier `explain --measure` made for this side.
        let found = earlier(catalog, runs[side], &missing(sides))?;
        sides[side].extend(found);
        let still = missing(sides);
        if still.is_empty() {
            continue;
        }
        let Some(seconds) = req.measure_s else {
            hint = true;
            continue;
        };
        let now = crate::fingerprint::collect();
        match explaining::facts::stands_for(side, runs, &now) {
            Err(why) => unmeasured[side] = Some(why),
            Ok(()) => sides[side].extend(measure(req, seconds, runs[side], &still, progress)?),
        }
    }
    if hint {
        tell("a side has no profile of a test; 'sysperf explain --measure' profiles it now where this machine stands for that side");
    }
    Ok(unmeasured)
}

/// The label of the runs `explain --measure` makes for `run`.
fn measured_label(run: &Run) -> String {
    format!("explain-{}", run.id)
}

/// Profiles of `tests` that an earlier `explain --measure` stored for `run` (the newest run
/// that has each).
fn earlier(
    catalog: &mut Catalog,
    run: &Run,
    tests: &[String],
) -> Result<Vec<SideProfile>, OpsError> {
    let store = catalog.store()?;
    let mut out: Vec<SideProfile> = Vec::new();
    for id in store.labelled(&measured_label(run))? {
        let made = store.load_run(&id)?;
        for p in store.load_profiles(&id)? {
            if tests.contains(&p.bench) && !out.iter().any(|o| o.profile.bench == p.bench) {
                out.push(SideProfile {
                    profile: p,
                    source: Source::Measured {
                        run: id.clone(),
                        at_ns: made.started_ns,
                    },
                });
            }
        }
    }
    Ok(out)
}

/// `tests` profiled now (one quick trial each and a profiled trial of `seconds`), stored as a
/// run labelled for `run`, standing for it.
fn measure(
    req: &Request,
    seconds: f64,
    run: &Run,
    tests: &[String],
    progress: &mut dyn Progress,
) -> Result<Vec<SideProfile>, OpsError> {
    let (points, benches): (Vec<String>, Vec<String>) =
        tests.iter().cloned().partition(|t| t.contains('@'));
    let plan = RunPlan::resolve(
        &RunRequest {
            selection: benches,
            suites: points,
            quick: true,
            label: Some(measured_label(run)),
            profile_seconds: Some(seconds),
            seed: engine::fresh_seed()?,
            ..RunRequest::default()
        },
        &allowed_cpus()?,
    )?;
    tell(&format!(
        "profiling {} on this machine for run {} (it has no profile of {})",
        tests.join(", "),
        run.id,
        if tests.len() == 1 { "it" } else { "them" }
    ));
    let stop = engine::stop_flag()?;
    let store = catalog::open_store(req.db.as_ref())?;
    store.announce("sysperf explain --measure")?;
    let engine = Engine {
        worker_exe: req.worker_exe.clone(),
        stop: &stop,
    };
    let outcome = engine.execute(&plan, store.as_ref(), progress.sink());
    progress.done();
    let outcome = outcome?;
    let made: &Run = &outcome.run;
    tell(&format!(
        "stored as run {} (label {})",
        made.id,
        measured_label(run)
    ));
    Ok(outcome
        .profiles
        .into_iter()
        .map(|p| SideProfile {
            profile: p,
            source: Source::Measured {
                run: made.id.clone(),
                at_ns: made.started_ns,
            },
        })
        .collect())
}
