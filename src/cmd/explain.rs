//! `sysperf explain A B [TEST...]`: why tests moved between two runs, from the kernel profiles
//! stored with them (`run --profile`), their trials and counters, and the recorded differences
//! the ties table links to the tests or their functions; with `--try-switches`, the
//! differences this machine can switch, each measured in paired rounds ([`switches`]). The
//! work is `sysperf::explain`; the renderings are `report::explain`.

mod switches;

use super::args::{parse_pct, parse_seconds, DbArg};
use super::failure::Context;
use super::out::engine;
use super::out::{print, print_json_text};
use super::progress::Trials;
use super::Result;
use clap::Args as ClapArgs;
use sysperf::catalog::{self, Catalog};
use sysperf::engine::{self as run_engine, RunPlan, RunRequest};
use sysperf::error::InputError;
use sysperf::explain::{self, Input, SideProfile, Source};
use sysperf::model::{Profile, Run};
use sysperf::{exit, report};

pub(crate) const EXPLAIN_HELP: &str = "\
A and B: a run id, a unique id prefix, a label, 'latest' or a reference run; A is the baseline.
Without TEST, the tests 'sysperf compare A B' calls slower or faster are explained; TEST (ids,
suite points such as scaling.path-depth@8, or globs) explains those whatever their verdict.

Each figure is time per operation, never a share of a profile. A function's time per operation
is its samples x the sampling period / the profiled trial's operations, with the Wilson 95%
interval of its count; B - A has the MOVER (Newcombe) interval of two independent proportions,
'~' marks a difference whose interval holds 0. 'share' is of the measured change (the median
wall time per operation, B - A). A side without a stored profile of a test is said, never made
up: 'sysperf run --profile TEST' stores one where the side is measured, and --measure profiles
it now when this machine stands for that side (and for it only). --try-switches sets each
recorded difference this machine can switch at runtime (a sysctl, THP, an ab's seccomp or
speculation switch) to A's value and to B's in paired rounds and says how much of the change
each accounts for ('cannot tell' when its interval holds no change); the others are listed
with why not, and every setting is put back. docs/explain.md has the method and its limits.";

#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Side A, the baseline: a run id, unique id prefix, label, 'latest' or reference run.
    #[arg(value_name = "A")]
    pub(crate) a: String,
    /// Side B, compared with A.
    #[arg(value_name = "B")]
    pub(crate) b: String,
    /// Tests to explain (ids, suite points, globs); default: those significantly slower or
    /// faster in B.
    #[arg(value_name = "TEST")]
    pub(crate) tests: Vec<String>,
    /// Noise band in percent (0-1000) of the verdicts that choose the tests, as 'compare
    /// --noise'.
    #[arg(
        long,
        value_name = "PCT",
        default_value = "2",
        allow_negative_numbers = true
    )]
    pub(crate) noise: String,
    /// Functions listed per test in the text and Markdown (the JSON has them all, up to 40).
    #[arg(long, value_name = "N", default_value_t = report::explain::DEFAULT_TOP as u32, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) top: u32,
    /// Print the explanation as one JSON document (docs/explain.md).
    #[arg(long, conflicts_with = "markdown")]
    pub(crate) json: bool,
    /// Print GitHub-flavoured Markdown, to paste into an issue.
    #[arg(long)]
    pub(crate) markdown: bool,
    /// Where a side's run has no profile of a test, profile the test now when this machine
    /// stands for that side (its recorded facts are this machine's now, and not the other
    /// side's), store it as a run labelled explain-RUNID and say which side was measured and
    /// when. A profile an earlier --measure stored is used without it.
    #[arg(long)]
    pub(crate) measure: bool,
    /// With --measure: how long each profiled trial runs, in seconds.
    #[arg(long, value_name = "S", default_value_t = 1.0, allow_negative_numbers = true, value_parser = parse_seconds, requires = "measure")]
    pub(crate) profile_seconds: f64,
    /// For each recorded difference this machine can switch at runtime (a sysctl, transparent
    /// huge pages, an ab's seccomp or speculation switch), measure the tests with it set to
    /// A's value and to B's in paired rounds, as 'sysperf ab' does, and say how much of the
    /// change it accounts for; the others are listed with why not. Every setting is put back.
    ///
    /// Only settings sysperf manages are set (the fingerprint's sysctls, transparent huge
    /// pages, ab's switches), only to values of their type and range, never lowering a
    /// protection; anything else the runs name is listed as not switched.
    #[arg(long)]
    pub(crate) try_switches: bool,
    /// With --try-switches: also set values recorded on another host (the run's fingerprint
    /// names another host name, or none). Off by default: a value written into a shared
    /// store or an imported file is someone else's choice of what this machine is set to.
    #[arg(long, requires = "try_switches")]
    pub(crate) allow_foreign_values: bool,
    /// With --try-switches: about how many seconds of paired rounds each switch gets (at
    /// least 10 rounds).
    #[arg(long, value_name = "S", default_value_t = 2.0, allow_negative_numbers = true, value_parser = parse_seconds, requires = "try_switches")]
    pub(crate) try_seconds: f64,
    /// Also write the explanation as a self-contained HTML page: each test's sentence and
    /// tables, its differential flame graph where both sides have a profile, and what
    /// --try-switches found.
    #[arg(long, value_name = "FILE.html")]
    pub(crate) html: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub(crate) db: DbArg,
}

pub(crate) fn exec(a: Args) -> Result<i32> {
    let noise = parse_pct("--noise", &a.noise)?;
    // Before anything is measured: a page that cannot be written is said now.
    if let Some(path) = &a.html {
        sysperf::output::check(path).context("--html")?;
    }
    let mut catalog = Catalog::new(a.db.db.clone());
    // Observations of the whole machine have no tests to explain: compare says how they differ.
    if catalog.observation_pair(&a.a, &a.b)?.is_some() {
        return Err(InputError::InvalidValue {
            what: "A B",
            value: format!("{} {}", a.a, a.b),
            why: "these are observations of the whole machine, not runs of tests; 'sysperf compare A B' compares them function by function".into(),
        }
        .into());
    }
    let (runs, cmp) = catalog.comparison(&[a.a.clone(), a.b.clone()], None, noise)?;
    let [ra, rb] = &runs[..] else {
        return Err(InputError::InvalidValue {
            what: "A B",
            value: format!("{} {}", a.a, a.b),
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
    let tests = explain::tests_to_explain(&cmp, 1, &a.tests)?;
    let stored = catalog.profiles(&runs)?;
    let mut sides: Vec<Vec<SideProfile>> = runs
        .iter()
        .zip(stored)
        .map(|(r, ps)| {
            ps.into_iter()
                .filter(|p| tests.iter().any(|(t, _)| *t == p.bench))
                .map(|profile| SideProfile {
                    profile,
                    source: Source::Run { run: r.id.clone() },
                })
                .collect()
        })
        .collect();
    let mut unmeasured: [Option<String>; 2] = [None, None];
    let mut hint = false;
    for side in 0..2 {
        let missing = |sides: &[Vec<SideProfile>]| -> Vec<String> {
            tests
                .iter()
                .map(|(t, _)| t.clone())
                .filter(|t| !sides[side].iter().any(|p| p.profile.bench == *t))
                .collect()
        };
        if missing(&sides).is_empty() || runs[side].source != "measured" {
            continue;
        }
        // A profile an earlier `explain --measure` made for this side.
        let found = earlier(&mut catalog, &runs[side], &missing(&sides))?;
        sides[side].extend(found);
        let still = missing(&sides);
        if still.is_empty() {
            continue;
        }
        if !a.measure {
            hint = true;
            continue;
        }
        let now = sysperf::fingerprint::collect();
        match explain::facts::stands_for(side, [ra, rb], &now) {
            Err(why) => unmeasured[side] = Some(why),
            Ok(()) => sides[side].extend(measure(&a, &runs[side], &still)?),
        }
    }
    // Stored traces (`trace --store`) of the tests, each standing for the side whose machine
    // it was made on.
    let mut traces = Vec::new();
    if runs.iter().any(|r| r.source == "measured") {
        let store = catalog.store()?;
        for (t, _) in &tests {
            traces.extend(store.traces(Some(t))?);
        }
    }
    let side_traces = [0, 1].map(|s| explain::side_traces(s, [ra, rb], &traces));
    if hint {
        say!("sysperf: a side has no profile of a test; 'sysperf explain --measure' profiles it now where this machine stands for that side");
    }
    let mut e = explain::build(&Input {
        runs: [ra, rb],
        comparison: &cmp,
        column: 1,
        profiles: [&sides[0], &sides[1]],
        traces: [&side_traces[0], &side_traces[1]],
        unmeasured,
        tests: &tests,
    });
    let mut interrupted = false;
    if a.try_switches {
        let (b, stopped) = switches::try_switches(&a, [ra, rb], &e, noise)?;
        e.try_switches = Some(b);
        interrupted = stopped;
    }
    let top = a.top as usize;
    if let Some(path) = &a.html {
        fn find<'p>(side: &'p [SideProfile], t: &str) -> Option<&'p Profile> {
            side.iter()
                .find(|p| p.profile.bench == t)
                .map(|p| &p.profile)
        }
        let pairs: Vec<(String, &Profile, &Profile)> = e
            .tests
            .iter()
            .filter_map(|t| {
                Some((
                    t.test.clone(),
                    find(&sides[0], &t.test)?,
                    find(&sides[1], &t.test)?,
                ))
            })
            .collect();
        let page = report::html::explain_page(&e, &pairs);
        sysperf::output::write(path, page.as_bytes(), 0o644).context("--html")?;
        say!("sysperf: wrote {}", path.display());
    }
    if a.json {
        print_json_text(&format!(
            "{}\n",
            serde_json::to_string_pretty(&report::explain::json(&e))?
        ))
    } else if a.markdown {
        print(&report::explain::markdown(&e, top))
    } else {
        print(&report::explain::text(&e, top))
    }
    .context("writing the explanation")?;
    if interrupted {
        return Ok(run_engine::interrupted_code());
    }
    Ok(exit::OK)
}

/// The label of the runs `explain --measure` makes for `run`.
fn measured_label(run: &Run) -> String {
    format!("explain-{}", run.id)
}

/// Profiles of `tests` that an earlier `explain --measure` stored for `run` (the newest run
/// that has each).
fn earlier(catalog: &mut Catalog, run: &Run, tests: &[String]) -> Result<Vec<SideProfile>> {
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

/// `tests` profiled now (one quick trial each and a profiled trial), stored as a run labelled
/// for `run`, standing for it.
fn measure(a: &Args, run: &Run, tests: &[String]) -> Result<Vec<SideProfile>> {
    let (points, benches): (Vec<String>, Vec<String>) =
        tests.iter().cloned().partition(|t| t.contains('@'));
    let req = RunRequest {
        selection: benches,
        suites: points,
        quick: true,
        label: Some(measured_label(run)),
        profile_seconds: Some(a.profile_seconds),
        seed: run_engine::fresh_seed()?,
        ..RunRequest::default()
    };
    let plan = RunPlan::resolve(&req, &super::args::allowed_cpus()?)?;
    say!(
        "sysperf: profiling {} on this machine for run {} (it has no profile of {})",
        tests.join(", "),
        run.id,
        if tests.len() == 1 { "it" } else { "them" }
    );
    let stop = run_engine::stop_flag()?;
    let store = catalog::open_store(a.db.db.as_ref())?;
    store.announce("sysperf explain --measure")?;
    let bar = &mut Trials::new();
    let outcome = engine(&stop)?.execute(&plan, store.as_ref(), bar)?;
    bar.finish();
    let made: &Run = &outcome.run;
    say!(
        "sysperf: stored as run {} (label {})",
        made.id,
        measured_label(run)
    );
    let profiles: Vec<Profile> = outcome.profiles;
    Ok(profiles
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
