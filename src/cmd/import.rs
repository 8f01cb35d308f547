//! `sysperf import`: export files read into the store, all checked before anything is stored.

use super::args::DbArg;
use super::Result;
use clap::Args as ClapArgs;
use std::path::PathBuf;
use sysperf::{exchange, exit};

#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Export files to read (written by 'sysperf export').
    #[arg(required = true, value_name = "FILE")]
    pub(crate) files: Vec<PathBuf>,
    #[command(flatten)]
    pub(crate) db: DbArg,
}

/// What was imported is a report on what the command did, not its output: stderr, as `export`
/// and `rm` report.
pub(crate) fn exec(a: Args) -> Result<i32> {
    for line in exchange::import_files(&a.files, a.db.db.as_ref())?.lines() {
        say!("sysperf: {line}");
    }
    Ok(exit::OK)
}
