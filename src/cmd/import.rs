//! `sysperf import`: export files read into the store, all checked before anything is stored.

use super::args::DbArg;
use super::out::print;
use super::Result;
use clap::Args as ClapArgs;
use std::path::PathBuf;
use sysperf::exchange;

#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Export files to read (written by 'sysperf export').
    #[arg(required = true, value_name = "FILE")]
    pub(crate) files: Vec<PathBuf>,
    #[command(flatten)]
    pub(crate) db: DbArg,
}

pub(crate) fn exec(a: Args) -> Result<i32> {
    print(&exchange::import_files(&a.files, a.db.db.as_ref())?)
}
