//! `sysperf rm`: a stored run (or observation) deleted with everything measured in it.

use super::args::DbArg;
use super::failure::failure;
use super::out::print;
use super::Result;
use clap::Args as ClapArgs;
use sysperf::catalog::Catalog;
use sysperf::error::InputError;
use sysperf::reference;

#[derive(ClapArgs)]
pub(crate) struct Args {
    /// The stored run to delete: an id, a unique id prefix (4 digits or more), a label or
    /// 'latest' (reference runs are built in and cannot be removed).
    pub(crate) run: String,
    #[command(flatten)]
    pub(crate) db: DbArg,
}

pub(crate) fn exec(a: Args) -> Result<i32> {
    let spec = &a.run;
    // Reference runs are not in the store; saying so beats "no run matches".
    if reference::is_name(spec) {
        return Err(InputError::ReadOnlyReference {
            name: spec.to_string(),
            what: "it is not stored, and there is nothing to remove",
        }
        .into());
    }
    let mut catalog = Catalog::new(a.db.db);
    if let Some(id) = catalog.find_observation(spec)? {
        catalog.store()?.remove_observation(&id)?;
        return print(&format!("removed observation {id}\n"));
    }
    let store = catalog.store().map_err(|e| e.looking_for(spec))?;
    let id = store.resolve(spec)?;
    if store.is_read_only() {
        return Err(failure(format!(
            "run {id} is in {}, which you may read but not write: remove it as the store's owner",
            store.location()
        )));
    }
    store.remove_run(&id)?;
    print(&format!("removed run {id}\n"))
}
