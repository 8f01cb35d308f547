//! `sysperf explain A B [TEST...]`: why tests moved between two runs, from the kernel profiles
//! stored with them (`run --profile`), their trials and counters, and the recorded differences
//! the ties table links to the tests or their functions. The work is `sysperf::explain`; the
//! renderings are `report::explain`.

use super::args::{parse_pct, DbArg};
use super::failure::Context;
use super::out::{print, print_json_text};
use super::Result;
use clap::Args as ClapArgs;
use sysperf::catalog::Catalog;
use sysperf::error::InputError;
use sysperf::explain::{self, Input, SideProfile, Source};
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
up: 'sysperf run --profile TEST' stores one where the side is measured. docs/explain.md has the
method and its limits.";

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
    #[command(flatten)]
    pub(crate) db: DbArg,
}

pub(crate) fn exec(a: Args) -> Result<i32> {
    let noise = parse_pct("--noise", &a.noise)?;
    let mut catalog = Catalog::new(a.db.db);
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
    let tests = explain::tests_to_explain(&cmp, 1, &a.tests)?;
    let stored = catalog.profiles(&runs)?;
    let sides: Vec<Vec<SideProfile>> = runs
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
    let e = explain::build(&Input {
        runs: [ra, rb],
        comparison: &cmp,
        column: 1,
        profiles: [&sides[0], &sides[1]],
        traces: [&[], &[]],
        unmeasured: [None, None],
        tests: &tests,
    });
    let top = a.top as usize;
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
    Ok(exit::OK)
}
