//! `sysperf runs`: the stored runs, newest first (or their `--by` groups), the observations,
//! then the built-in reference runs.

use super::args::{DbArg, FleetArgs};
use super::out::{print, print_json};
use super::Result;
use clap::Args as ClapArgs;
use sysperf::catalog::{self, CatalogError};
use sysperf::{fleet, reference, report};

#[derive(ClapArgs)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) db: DbArg,
    /// Print the stored runs as JSON instead of a table (reference runs are not included).
    #[arg(long)]
    pub(crate) json: bool,
    /// List at most N runs, newest first; 0 lists all (default: 50 in the table, all
    /// with --json).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(0..=1_000_000_000))]
    pub(crate) limit: Option<u64>,
    /// Only runs started on or after DATE (YYYY-MM-DD, UTC).
    #[arg(long, value_name = "DATE")]
    pub(crate) since: Option<String>,
    #[command(flatten)]
    pub(crate) fleet: FleetArgs,
}

/// `sysperf runs --help`: the keys of --where and --by.
pub(crate) fn runs_help() -> String {
    format!(
        "Keys of --where and --by: {}.\n\nWith --by the table lists the groups (value, runs, complete runs, newest start) instead of the runs.",
        fleet::keys_help()
    )
}

/// Runs `sysperf runs` lists in its table unless --limit says otherwise.
const RUNS_SHOWN: u64 = 50;

pub(crate) fn exec(a: Args) -> Result<i32> {
    let sel = a.fleet.selection()?;
    let mut query = sel.query.clone();
    query.since_ns = a.since.as_deref().map(fleet::parse_since).transpose()?;
    // A table for a person: the newest 50 by default; JSON for a program: all by default.
    let limit = match a.limit {
        Some(0) => None,
        Some(n) => Some(n),
        None if a.json || sel.by.is_some() => None,
        None => Some(RUNS_SHOWN),
    };
    query.limit = limit.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    // Listing never creates a store; the default one not made yet holds no runs.
    let store = match catalog::open_existing_store(a.db.db.as_ref()) {
        Ok(store) => Some(store),
        Err(CatalogError::NoStore { named: false, .. }) => None,
        Err(e) => return Err(e.into()),
    };
    // --by: the groups as the database counts them, never every run read (#35).
    if let Some(key) = sel.by {
        let counts = match &store {
            Some(store) => store.count_groups(&query, key.grouped_by())?,
            None => Vec::new(),
        };
        let groups = fleet::counted(key, counts);
        if a.json {
            return print_json(&report::json::run_groups_document(key.name(), &groups));
        }
        return print(&report::table::runs_groups(key.name(), &groups));
    }
    let (runs, matching, observations) = match store {
        Some(store) => {
            let runs = store.query_runs(&query)?;
            let all = match query.limit {
                Some(n) if runs.len() >= n => store.count_runs(&query)?,
                _ => runs.len() as u64,
            };
            (runs, all, store.list_observations()?)
        }
        None => (Vec::new(), 0, Vec::new()),
    };
    if a.json {
        return print_json(&runs);
    }
    let mut text = if runs.is_empty() && sel.is_empty() && a.since.is_none() {
        "no runs stored yet; 'sysperf run' makes one\n".to_string()
    } else if runs.is_empty() {
        "no stored run matches\n".to_string()
    } else {
        report::table::runs_list(&runs)
    };
    let more = matching.saturating_sub(runs.len() as u64);
    if more > 0 {
        text.push_str(&format!(
            "... and {more} older run{} (--limit N shows more, --limit 0 all)\n",
            if more == 1 { "" } else { "s" }
        ));
    }
    if !observations.is_empty() {
        text.push_str(&report::system::observations_list(&observations));
    }
    text.push_str(&report::table::reference_list(reference::all()?));
    print(&text)
}
