//! `sysperf report`: a self-contained HTML page comparing runs.

use super::args::{AgainstArgs, DbArg, FleetArgs};
use super::failure::Context;
use super::Result;
use clap::Args as ClapArgs;
use std::path::PathBuf;
use sysperf::catalog::{self, Catalog};
use sysperf::error::InputError;
use sysperf::{changes, exit, output, report};

#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Runs to compare (id, id prefix, label, 'latest' or a reference run); with --where or
    /// --by and no RUN, every stored complete run that matches.
    #[arg(required_unless_present_any = ["wheres", "by"], value_name = "RUN")]
    pub(crate) runs: Vec<String>,
    #[command(flatten)]
    pub(crate) fleet: FleetArgs,
    /// Where to write the HTML file.
    #[arg(short, long, value_name = "FILE.html")]
    pub(crate) output: PathBuf,
    #[command(flatten)]
    pub(crate) against: AgainstArgs,
    #[command(flatten)]
    pub(crate) db: DbArg,
}

pub(crate) fn exec(a: Args) -> Result<i32> {
    let noise = a.against.threshold.pct()?;
    // The page is HTML whatever the name says: a name that promises another format is a
    // mistake to stop, not a file to write (a device or a name without one is written).
    if let Some(ext) = a.output.extension().and_then(|e| e.to_str()) {
        if !matches!(ext.to_ascii_lowercase().as_str(), "html" | "htm") {
            return Err(InputError::InvalidValue {
                what: "--output",
                value: a.output.display().to_string(),
                why: format!("the report is an HTML page: name it FILE.html; for text use 'sysperf compare RUN... > FILE.{ext}' (--markdown, --csv and --json print those formats)"),
            }
            .into());
        }
    }
    output::check(&a.output).context("--output")?;
    let sel = a.fleet.selection()?;
    let db = a.db.db;
    let mut catalog = Catalog::new(db.clone());
    let (runs, cmp) =
        catalog.fleet_comparison(&a.runs, a.against.baseline.as_deref(), &sel, noise)?;
    // Profiles stored with a run (`run --profile`) are shown too; reference runs have none.
    let profiles = catalog.profiles(&runs)?;
    let by = sel.by.map(|k| k.name());
    // A fleet's report says when and where its runs changed, as `sysperf changes` would (#35).
    let (changes, marked) = match sel.by {
        Some(key) => {
            let store = catalog::open_existing_store(db.as_ref())?;
            let settings = sysperf::changepoint::Settings::default();
            let newest = changes::DEFAULT_NEWEST;
            let found = changes::find(
                store.as_ref(),
                &sel.query,
                newest,
                &settings,
                changes::DEFAULT_FDR,
            )?;
            let marked = changes::marks(store.as_ref(), &found, key, &runs)?;
            (Some(found), marked)
        }
        None => (None, Vec::new()),
    };
    let page = report::html::html_fleet(&runs, &cmp, &profiles, by, changes.as_ref(), &marked);
    output::write(&a.output, page.as_bytes(), 0o644)?;
    say!("sysperf: wrote {}", a.output.display());
    Ok(exit::OK)
}
