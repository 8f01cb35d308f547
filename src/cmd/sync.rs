//! `sysperf sync SRC DST`: the runs DST lacks, copied from SRC.

use super::out::print;
use super::Result;
use clap::Args as ClapArgs;
use std::path::PathBuf;

#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Where the runs come from: a store (SQLite path or postgres:// URL) or an export file.
    #[arg(value_name = "SRC")]
    pub(crate) src: PathBuf,
    /// The store the runs are copied into (SQLite path or postgres:// URL).
    #[arg(value_name = "DST")]
    pub(crate) dst: PathBuf,
}

pub(crate) fn exec(a: Args) -> Result<i32> {
    let done = sysperf::sync::sync(&a.src, &a.dst)?;
    let (src, dst) = (sysperf::sync::shown(&a.src), sysperf::sync::shown(&a.dst));
    print(&done.summary(&src, &dst))
}
