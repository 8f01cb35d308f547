//! `sysperf changes`: when and where performance changed in the store: change points in each
//! (host, test) history of complete runs, each with the nearest fingerprint difference, and
//! an exit code for alerting.

use super::args::DbArg;
use super::out::{print, print_json_text};
use super::Result;
use clap::Args as ClapArgs;
use sysperf::catalog::{self, CatalogError};
use sysperf::changepoint::{self, Settings};
use sysperf::{changes, exit, fleet, report};

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
    /// Search the newest N runs of each (host, test) history.
    #[arg(long, value_name = "N", default_value_t = changes::DEFAULT_NEWEST as u64,
          value_parser = clap::value_parser!(u64).range(10..=2000))]
    pub(crate) last: u64,
    /// Print the changes as JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) const CHANGES_HELP: &str = "\
Each (host, test) history is the median time per operation of each complete measured run, oldest first. A change point is where it moved to a new level and stayed: E-Divisive means (as MongoDB's CI), tested on ranks with seeded permutations, placed on log times (docs/changes.md). Each change names the runs either side, its size as a ratio with a 95% interval, and the nearest fingerprint difference (kernel, config, sysctl, microcode, ...) between consecutive runs around it.

Exit codes: 0 no change found; 6 changes found (for alerting); 1 failure; 2 bad usage or input.";

pub(crate) fn exec(a: Args) -> Result<i32> {
    let mut query = fleet::query(&a.wheres)?;
    query.since_ns = a.since.as_deref().map(fleet::parse_since).transpose()?;
    let settings = Settings::default();
    let newest = usize::try_from(a.last).unwrap_or(usize::MAX);
    // Reading never creates a store; the default one not made yet holds no runs.
    let found = match catalog::open_existing_store(a.db.db.as_ref()) {
        Ok(store) => changes::find(store.as_ref(), &query, newest, &settings)?,
        Err(CatalogError::NoStore { named: false, .. }) => changes::Changes {
            histories: 0,
            too_short: 0,
            newest,
            disturbed: 0,
            changes: Vec::new(),
        },
        Err(e) => return Err(e.into()),
    };
    if a.json {
        let doc = report::json::changes_document(&found, &changepoint::method(&settings));
        print_json_text(&format!("{}\n", serde_json::to_string_pretty(&doc)?))?;
    } else {
        print(&report::changes::text(&found))?;
    }
    Ok(if found.changes.is_empty() {
        exit::OK
    } else {
        exit::CHANGED
    })
}
