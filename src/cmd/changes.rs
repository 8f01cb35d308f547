//! `sysperf changes`: when and where performance changed in the store: change points in each
//! history of complete runs (host, test, options), the false discovery rate controlled across
//! them, each with the nearest fingerprint difference, and an exit code for alerting.

use super::args::DbArg;
use super::out::{print, print_json_text};
use super::Result;
use clap::Args as ClapArgs;
use sysperf::catalog::{self, CatalogError};
use sysperf::changepoint::{self, Settings};
use sysperf::{changes, fleet, report};

#[derive(ClapArgs)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) db: DbArg,
    /// Only runs whose KEY is VALUE: host, kernel, cpu, label or date (repeatable; the same
    /// KEY twice is either value, different KEYs must all match).
    #[arg(long = "where", value_name = "KEY=VALUE")]
    pub(crate) wheres: Vec<String>,
    /// Only runs started on or after DATE (YYYY-MM-DD, UTC).
    #[arg(long, value_name = "DATE")]
    pub(crate) since: Option<String>,
    /// Search the newest N runs of each (host, test, options) history.
    #[arg(long, value_name = "N", default_value_t = changes::DEFAULT_NEWEST as u64,
          value_parser = clap::value_parser!(u64).range(10..=2000))]
    pub(crate) last: u64,
    /// The false discovery rate across all the histories searched (Benjamini-Hochberg): at
    /// most this share of the histories reported changed is expected to be false alarms, and
    /// with no change anywhere at most this share of searches reports one.
    #[arg(long, value_name = "Q", default_value_t = changes::DEFAULT_FDR,
          value_parser = fdr)]
    pub(crate) fdr: f64,
    /// Print the changes as JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

/// A false discovery rate: a number in (0, 1) exclusive (0.05 for 5%).
fn fdr(s: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(q) if q > 0.0 && q < 1.0 => Ok(q),
        _ => Err(format!(
            "'{s}' is not a false discovery rate: a number between 0 and 1, exclusive (0.05 for 5%)"
        )),
    }
}

pub(crate) const CHANGES_HELP: &str = "\
A history is one host's median time per operation of a test in each complete measured run made with the same options (selection, trials, trial length, order, precision, placement), oldest first; sides of 'sysperf ab' and --quick runs are left out. A change point is where a history moved to a new level and stayed: E-Divisive means (as MongoDB's CI), placed on log times and tested on ranks there with seeded permutations. All the histories are searched together at a false discovery rate (--fdr, Benjamini-Hochberg): with no change anywhere, at most that share of searches reports one. Each change names the runs either side, its size as a ratio measured out of sample with a 95% interval, and the nearest fingerprint difference (kernel, config, sysctl, microcode, ...) between consecutive runs around it (docs/changes.md).

Exit codes: 0 no change found; 6 changes found (for alerting); 7 nothing searched (no history has the runs a change needs); 1 failure; 2 bad usage or input.";

pub(crate) fn exec(a: Args) -> Result<i32> {
    let mut query = fleet::query(&a.wheres)?;
    query.since_ns = a.since.as_deref().map(fleet::parse_since).transpose()?;
    let settings = Settings::default();
    let newest = usize::try_from(a.last).unwrap_or(usize::MAX);
    // Reading never creates a store; the default one not made yet holds no runs.
    let found = match catalog::open_existing_store(a.db.db.as_ref()) {
        Ok(store) => changes::find(store.as_ref(), &query, newest, &settings, a.fdr)?,
        Err(CatalogError::NoStore { named: false, .. }) => {
            changes::Changes::empty(newest, a.fdr, &settings)
        }
        Err(e) => return Err(e.into()),
    };
    let used = Settings {
        permutations: found.permutations.max(settings.permutations),
        ..settings
    };
    if a.json {
        let doc =
            report::json::changes_document(&found, &changepoint::method(&used, Some(found.fdr)));
        print_json_text(&format!("{}\n", serde_json::to_string_pretty(&doc)?))?;
    } else {
        print(&report::changes::text(&found))?;
    }
    Ok(found.exit_code())
}
