//! `sysperf show`: one run (stored or built in) with the machine's variance and its profiles,
//! one observation of the whole machine, or one stored trace.

use super::args::{DbArg, ExportArgs};
use super::out::write_exports;
use super::shared::{print_run, print_system_profile, RUN_PROFILE_TOP};
use super::Result;
use clap::Args as ClapArgs;
use sysperf::catalog::Catalog;
use sysperf::{exit, reference};

#[derive(ClapArgs)]
pub(crate) struct Args {
    /// The run: an id, a unique id prefix (4 digits or more), a label (of several runs: the
    /// newest, naming the others), 'latest', or a reference run's name.
    pub(crate) run: String,
    #[command(flatten)]
    pub(crate) exports: ExportArgs,
    #[command(flatten)]
    pub(crate) db: DbArg,
    /// Print the whole run as JSON (the format of 'run --json').
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn exec(a: Args) -> Result<i32> {
    let mut catalog = Catalog::new(a.db.db.clone());
    if let Some(id) = catalog.find_observation(&a.run)? {
        let store = catalog.store()?;
        // A stored trace (`trace --store`) is printed as `trace` printed it.
        if let Some(t) = store.traces(None)?.into_iter().find(|t| t.id == id) {
            let report = sysperf::trace::TraceReport::of(&t)?;
            return if a.json {
                super::out::print_json(&t)
            } else {
                super::out::print(&format!(
                    "trace {} of {} made {} on {}\n{}",
                    t.id,
                    t.bench,
                    sysperf::report::utc(t.started_ns),
                    t.fingerprint.hostname.as_deref().unwrap_or("?"),
                    sysperf::report::trace::render(&report)
                ))
            };
        }
        let p = store.load_observation(&id)?;
        return print_system_profile(store, &p, RUN_PROFILE_TOP, a.json);
    }
    let run = catalog.load(&a.run)?;
    // A label names a group (`run --repeat`): show the newest, and say so.
    if !reference::is_name(&a.run) {
        let ids = catalog.named_runs(&a.run)?;
        if ids.len() > 1 {
            say!(
                "sysperf: '{}' is the label of {} runs ({}); this is the newest, {}: 'sysperf show ID' shows another, 'sysperf compare {}' takes them all as one group",
                a.run,
                ids.len(),
                ids.join(", "),
                run.id,
                a.run
            );
        }
    }
    let profiles = catalog.profiles(std::slice::from_ref(&run))?.remove(0);
    let variance = catalog.machine_variance(&run)?;
    a.exports.check()?;
    print_run(&run, &profiles, Some(&variance), a.json)?;
    // What is shown is the one run (a group's newest), so that is what the files hold.
    let spec = if reference::is_name(&a.run) {
        a.run.clone()
    } else {
        run.id.clone()
    };
    let json = serde_json::to_string_pretty(&sysperf::report::json::show_document(
        &run,
        &profiles,
        Some(&variance),
        RUN_PROFILE_TOP,
    ))?;
    write_exports(&a.exports, &spec, &(json + "\n"), a.db.db)?;
    Ok(exit::OK)
}
