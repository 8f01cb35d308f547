//! `sysperf gc`: the space of removed runs given back to the file system.

use super::args::DbArg;
use super::failure::failure;
use super::out::print;
use super::Result;
use clap::Args as ClapArgs;
use sysperf::catalog;

#[derive(ClapArgs)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) db: DbArg,
}

pub(crate) fn exec(a: Args) -> Result<i32> {
    let store = catalog::open_existing_store(a.db.db.as_ref())?;
    if store.is_read_only() {
        return Err(failure(format!(
            "{} is a store you may read but not write: run 'sysperf gc' as its owner",
            store.location()
        )));
    }
    let r = store.gc()?;
    if r.converted {
        say!("sysperf: converted the store to give removed runs' space back as they are removed (once)");
    }
    print(&format!(
        "{}: {} -> {} bytes\n",
        store.location(),
        r.bytes_before,
        r.bytes_after
    ))
}
