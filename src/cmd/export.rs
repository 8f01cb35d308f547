//! `sysperf export`: stored (or reference) runs, and stored observations (traces, system
//! profiles), written as one export file, or to standard output made inert for a terminal.

use super::args::DbArg;
use super::failure::{Context, Failure};
use super::out::TermJson;
use super::Result;
use clap::Args as ClapArgs;
use std::path::PathBuf;
use sysperf::catalog::Catalog;
use sysperf::exchange::{self, ExportList};
use sysperf::{exit, output};

#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Runs to export: ids, unique id prefixes, labels or 'latest'; or stored observations
    /// ('trace --store', 'profile --system') by id, unique id prefix or label.
    #[arg(required = true, value_name = "RUN")]
    pub(crate) runs: Vec<String>,
    /// Where to write the export (default: standard output).
    #[arg(short, long, value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) db: DbArg,
}

pub(crate) fn exec(a: Args) -> Result<i32> {
    // Every name is resolved first (a typo costs nothing); then the runs are loaded, checked
    // and written a few at a time.
    let mut catalog = Catalog::new(a.db.db);
    let list = ExportList::resolve(&mut catalog, &a.runs)?;
    let Some(path) = a.output else {
        // The export is JSON; on a terminal it is shown inert like every other output.
        let mut out = TermJson(std::io::stdout().lock());
        exchange::export_to(&list, &mut catalog, &mut out)
            .context("writing the export to standard output")?;
        return Ok(exit::OK);
    };
    let mut failed: Option<Failure> = None;
    output::write_with(&path, 0o644, |f| {
        exchange::export_to(&list, &mut catalog, f).map_err(|e| {
            failed = Some(e.into());
            std::io::Error::other("the export stopped")
        })
    })
    .or_else(|e| failed.take().map_or(Err(e.into()), Err))?;
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let runs = list.len();
    let what = match list.observations() {
        0 => plural(runs, "run"),
        n if runs == 0 => plural(n, "observation"),
        n => format!("{} and {}", plural(runs, "run"), plural(n, "observation")),
    };
    say!("sysperf: exported {what} to {}", path.display());
    Ok(exit::OK)
}
