//! What several commands print alike, and no command's own: a comparison with its gate
//! (`compare`, and `ab` after its rounds), a run with its variance and profiles (`run`, `show`),
//! an observation of the whole machine with the benchmarks that isolate its hottest functions
//! (`profile --system`, `show`). Not a command: command files call it, it calls none of them.

use super::failure::Context;
use super::out::{print, print_json, print_json_text};
use super::Result;
use std::path::PathBuf;
use sysperf::catalog::{Catalog, Compared};
use sysperf::model::{Profile, Run, SystemProfile, VarianceEstimate};
use sysperf::{compare, exit, profile, report, store};

/// How a comparison is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Text,
    Json,
    Markdown,
    Csv,
}

impl Format {
    pub(crate) fn text_or_json(json: bool) -> Format {
        if json {
            Format::Json
        } else {
            Format::Text
        }
    }
}

/// The comparison `req` asks for, printed as `format`, and its gate's exit code. One
/// connection to the store serves it all (a PostgreSQL connection costs more than a
/// compare's queries).
pub(crate) fn print_comparison(
    req: &compare::Request,
    format: Format,
    all_differences: bool,
    db: Option<PathBuf>,
) -> Result<i32> {
    let mut catalog = Catalog::new(db);
    let (runs, c) = match catalog.compare(req)? {
        // Two observations of the whole machine compare as profiles, not as runs.
        Compared::Observations {
            comparison,
            before,
            after,
        } => {
            if format == Format::Json {
                print_json(&comparison)?;
            } else {
                print(&report::system::comparison_text(
                    &comparison,
                    &before,
                    &after,
                ))?;
            }
            // Shares of a profile are not measurements with intervals: no gate judges them.
            if req.gate_pct.is_some() {
                say!("sysperf: --fail-on-regression judges benchmark runs; observations have no intervals to judge");
                return Ok(exit::UNJUDGED);
            }
            return Ok(exit::OK);
        }
        Compared::Traces { before, after } => {
            if format == Format::Json {
                print_json(&serde_json::json!({
                    "format": "sysperf-trace-comparison",
                    "format_version": 1,
                    "before": before,
                    "after": after,
                    "per_op": sysperf::explain::trace_rows([
                        Some(&sysperf::trace::TraceReport::of(&before)?),
                        Some(&sysperf::trace::TraceReport::of(&after)?),
                    ]),
                }))?;
            } else {
                let reports = [
                    sysperf::trace::TraceReport::of(&before)?,
                    sysperf::trace::TraceReport::of(&after)?,
                ];
                print(&report::trace::comparison_text(
                    &before,
                    &after,
                    [&reports[0], &reports[1]],
                ))?;
            }
            if req.gate_pct.is_some() {
                say!("sysperf: --fail-on-regression judges benchmark runs; traces have no intervals to judge");
                return Ok(exit::UNJUDGED);
            }
            return Ok(exit::OK);
        }
        Compared::Runs { runs, comparison } => (runs, comparison),
    };
    // Read by people, the text and Markdown lead with the answer: the differences that matter
    // to the compared tests, the rest counted (#33); JSON and CSV keep every one.
    let shown = if all_differences || matches!(format, Format::Json | Format::Csv) {
        None
    } else {
        let mut shown = c.clone();
        shown.fingerprint_diffs = report::compare::differences_that_matter(&c);
        Some(shown)
    };
    let c = shown.as_ref().unwrap_or(&c);
    match format {
        Format::Json => print_json_text(&report::compare::json(c)),
        Format::Markdown => print(&report::compare::markdown(c)),
        Format::Csv => print(&report::compare::csv(c)),
        Format::Text => print(&report::compare::text(c)),
    }
    .context("writing the comparison")?;
    if format == Format::Text {
        explain_hint(&mut catalog, &runs, c)?;
    }
    let Some(pct) = req.gate_pct else {
        return Ok(exit::OK);
    };
    let (regressions, unjudged) = (compare::regressions(c, pct), compare::unjudged(c));
    for line in report::compare::gate_lines(c, &regressions, &unjudged, pct) {
        say!("sysperf: {line}");
    }
    Ok(compare::gate_code(&regressions, &unjudged))
}

/// Tests that moved and have a kernel profile stored on both sides: `sysperf explain` says
/// where their time per operation went, so the comparison says so (it does not read the
/// profiles itself). Only runs with profiles cost a look in the store.
fn explain_hint(
    catalog: &mut Catalog,
    runs: &[sysperf::model::Run],
    c: &compare::Comparison,
) -> Result<()> {
    if runs.len() < 2 || runs.iter().all(|r| r.source == "published") {
        return Ok(());
    }
    let moved = (0..runs.len()).any(|i| {
        i != c.baseline
            && !sysperf::explain::tests_to_explain(c, i, &[])
                .unwrap_or_default()
                .is_empty()
    });
    if !moved {
        return Ok(());
    }
    let profiles = catalog.profiles(runs)?;
    let none = Vec::new();
    let base = profiles.get(c.baseline).unwrap_or(&none);
    for (i, run) in runs.iter().enumerate() {
        if i == c.baseline {
            continue;
        }
        let tests = sysperf::explain::explainable(c, i, base, profiles.get(i).unwrap_or(&none));
        if tests.is_empty() {
            continue;
        }
        let names: Vec<&str> = tests.iter().map(|(t, _)| t.as_str()).collect();
        say!(
            "sysperf: {} moved and both runs have kernel profiles of {}: 'sysperf explain {} {}' says where the time per operation went",
            names.join(", "),
            if names.len() == 1 { "it" } else { "them" },
            runs[c.baseline].id,
            run.id
        );
    }
    Ok(())
}

/// Flat-profile lines printed with a run (`sysperf profile` prints as many as --top asks).
pub(crate) const RUN_PROFILE_TOP: usize = 15;

/// A run as `run` and `show` print it: Table 2 with the machine's variance and the kernel
/// profiles stored with it, or its JSON document.
pub(crate) fn print_run(
    run: &Run,
    profiles: &[Profile],
    var: Option<&[VarianceEstimate]>,
    json: bool,
) -> Result<()> {
    if json {
        print_json(&report::json::show_document(
            run,
            profiles,
            var,
            RUN_PROFILE_TOP,
        ))?;
    } else {
        let mut text = report::table::render(run);
        if let Some(v) = var {
            text.push_str(&format!("\n{}", report::table::variance(run, v)));
        }
        for p in profiles {
            text.push_str(&format!(
                "\n{}",
                report::profile::render(p, RUN_PROFILE_TOP)
            ));
        }
        print(&text)?;
    }
    Ok(())
}

/// A system profile with the benchmarks that isolate its hottest functions (from the
/// benchmark profiles in `store`).
pub(crate) fn print_system_profile(
    store: &dyn store::Backend,
    p: &SystemProfile,
    top: usize,
    json: bool,
) -> Result<i32> {
    let benchmarks = store.benchmark_profiles()?;
    let iso = profile::isolate::isolate(p, &benchmarks, profile::isolate::HOT_FUNCTIONS);
    if json {
        print_json(&report::system::json_document(p, top, &iso))
    } else {
        print(&report::system::render(p, top, &iso))
    }
}
