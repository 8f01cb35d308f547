//! `sysperf rm`: stored runs (or observations) deleted with everything measured in them. A
//! label names every run that carries it, as it does for `compare` (`Catalog::named_runs`):
//! every name is resolved first, then each run removed is listed.

use super::args::DbArg;
use super::failure::failure;
use super::Result;
use clap::Args as ClapArgs;
use sysperf::catalog::Catalog;
use sysperf::error::InputError;
use sysperf::{exit, reference};

#[derive(ClapArgs)]
pub(crate) struct Args {
    /// The stored runs to delete: ids, unique id prefixes (4 digits or more), labels (a label
    /// names every run that carries it, as 'compare' takes it) or 'latest'; or observations
    /// ('profile --system'). Reference runs are built in and cannot be removed.
    #[arg(required = true, value_name = "RUN")]
    pub(crate) runs: Vec<String>,
    /// List what would be removed and remove nothing.
    #[arg(long, short = 'n')]
    pub(crate) dry_run: bool,
    #[command(flatten)]
    pub(crate) db: DbArg,
}

/// What one name stands for: runs (ids, each with the name it was found by) or an observation.
enum Doomed {
    Run { id: String, by: String },
    Observation(String),
}

pub(crate) fn exec(a: Args) -> Result<i32> {
    let mut catalog = Catalog::new(a.db.db);
    // Every name is resolved before anything is removed: a typo in the third name removes
    // nothing.
    let mut doomed: Vec<Doomed> = Vec::new();
    for spec in &a.runs {
        // Reference runs are not in the store; saying so beats "no run matches".
        if reference::is_name(spec) {
            return Err(InputError::ReadOnlyReference {
                name: spec.to_string(),
                what: "it is not stored, and there is nothing to remove",
            }
            .into());
        }
        if let Some(id) = catalog.find_observation(spec)? {
            doomed.push(Doomed::Observation(id));
            continue;
        }
        for id in catalog.named_runs(spec)? {
            if !doomed
                .iter()
                .any(|d| matches!(d, Doomed::Run { id: x, .. } if *x == id))
            {
                doomed.push(Doomed::Run {
                    id,
                    by: spec.clone(),
                });
            }
        }
    }
    let store = catalog.store()?;
    if store.is_read_only() && doomed.iter().any(|d| matches!(d, Doomed::Run { .. })) {
        return Err(failure(format!(
            "{} is a store you may read but not write: remove runs as the store's owner",
            store.location()
        )));
    }
    let verb = if a.dry_run { "would remove" } else { "removed" };
    for d in &doomed {
        match d {
            Doomed::Observation(id) => {
                if !a.dry_run {
                    store.remove_observation(id)?;
                }
                say!("sysperf: {verb} observation {id}");
            }
            Doomed::Run { id, by } => {
                if !a.dry_run {
                    store.remove_run(id)?;
                }
                if by == id || id.starts_with(&by.to_ascii_lowercase()) || by == "latest" {
                    say!("sysperf: {verb} run {id}");
                } else {
                    say!("sysperf: {verb} run {id} (label '{by}')");
                }
            }
        }
    }
    Ok(exit::OK)
}
