//! `sysperf list`: the benchmarks, or with `--suites` the suites and their series.

use super::out::{print, print_json_text};
use super::Result;
use clap::Args as ClapArgs;
use sysperf::report;

#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
    /// List the suites of 'run --suite' and their series instead (x, y and points).
    #[arg(long)]
    pub(crate) suites: bool,
}

pub(crate) fn exec(a: Args) -> Result<i32> {
    let text = if a.suites {
        report::list::suites(a.json)
    } else {
        report::list::benchmarks(a.json)
    };
    if a.json {
        print_json_text(&text)
    } else {
        print(&text)
    }
}
