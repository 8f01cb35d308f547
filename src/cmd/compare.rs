//! `sysperf compare`: runs (or two observations of the whole machine) side by side, printed,
//! with the regression gate (printed by `shared::print_comparison`, which `ab` uses too).

use super::args::{parse_pct_opt, AgainstArgs, DbArg, FleetArgs};
use super::shared::{print_comparison, Format};
use super::Result;
use clap::Args as ClapArgs;
use sysperf::{compare, reference};

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

pub(crate) fn exec(a: Args) -> Result<i32> {
    // Every option is checked before any run is loaded.
    let req = compare::Request {
        noise_pct: a.against.threshold.pct()?,
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
    print_comparison(&req, format, a.all_differences, a.db.db)
}
