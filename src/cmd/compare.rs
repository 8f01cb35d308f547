//! `sysperf compare`: runs (or two observations of the whole machine) side by side, printed,
//! with the regression gate. `ab` prints its two runs through [`show`].

use super::args::{parse_pct, parse_pct_opt, AgainstArgs, DbArg, FleetArgs};
use super::failure::Context;
use super::out::{print, print_json, print_json_text};
use super::Result;
use clap::Args as ClapArgs;
use std::path::PathBuf;
use sysperf::catalog::{Catalog, Compared};
use sysperf::{compare, exit, reference, report};

#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Runs, in column order: ids, unique id prefixes, labels, 'latest', or reference runs
    /// (vax750-4.1bsd, vax750-4.2bsd, vax750-4.3bsd); they may come from different machines.
    /// With --where or --by and no RUN: every stored complete run that matches.
    pub(crate) runs: Vec<String>,
    #[command(flatten)]
    pub(crate) fleet: FleetArgs,
    #[command(flatten)]
    pub(crate) against: AgainstArgs,
    /// Exit with code 3 when a test is significantly slower than the baseline by more than
    /// PCT percent (0-1000), naming each on stderr.
    #[arg(long, value_name = "PCT", allow_negative_numbers = true)]
    pub(crate) fail_on_regression: Option<String>,
    /// Print the comparison as one JSON document (docs/compare.md).
    #[arg(long, conflicts_with_all = ["markdown", "csv"])]
    pub(crate) json: bool,
    /// Print GitHub-flavoured Markdown, to paste into a mailing list or an issue.
    #[arg(long, conflicts_with = "csv")]
    pub(crate) markdown: bool,
    /// Print CSV: one line per test and run (docs/compare.md lists the columns).
    #[arg(long)]
    pub(crate) csv: bool,
    /// List every fingerprint fact that differs (text and Markdown), not only those that
    /// matter to the compared tests with a line counting the rest.
    #[arg(long)]
    pub(crate) all_differences: bool,
    #[command(flatten)]
    pub(crate) db: DbArg,
}

/// `sysperf compare --help`: the method, as every comparison states it.
pub(crate) fn compare_help() -> String {
    format!(
        "Method: {}.\n\nVerdicts: faster, SLOWER (marked !), ~ (no significant change), 'no CI' (published against published: a ratio but no interval), '<3 trials' (a measured side has fewer than 3 trials: too few for an interval). A test a run lacks shows as missing, a failed one as failed; a row without a ratio shows '-'.\n\nReference runs: {} are the published figures of the 4.2BSD paper's Table 2 and Table 7 (a VAX-11/750), built in and read-only; e.g. sysperf compare vax750-4.3bsd latest.\n\nExit codes: 0 ok; 2 bad input; 3 --fail-on-regression found a regression; 4 it could not judge a test it was asked to (missing, failed, interrupted, too few trials).",
        compare::method(compare::DEFAULT_NOISE_PCT),
        reference::NAMES.join(", ")
    )
}

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

pub(crate) fn exec(a: Args) -> Result<i32> {
    // Every option is checked before any run is loaded.
    let req = compare::Request {
        noise_pct: parse_pct("--threshold", &a.against.noise)?,
        gate_pct: parse_pct_opt("--fail-on-regression", a.fail_on_regression.as_deref())?,
        runs: a.runs,
        baseline: a.against.baseline,
        wheres: a.fleet.wheres,
        by: a.fleet.by,
    };
    let format = match (a.json, a.markdown, a.csv) {
        (true, _, _) => Format::Json,
        (_, true, _) => Format::Markdown,
        (_, _, true) => Format::Csv,
        _ => Format::Text,
    };
    show(&req, format, a.all_differences, a.db.db)
}

/// The comparison `req` asks for, printed as `format`, and its gate's exit code. One
/// connection to the store serves it all (a PostgreSQL connection costs more than a
/// compare's queries).
pub(crate) fn show(
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
