//! `sysperf doctor`: what on this machine makes results noisy or not comparable.

use super::args::DbArg;
use super::out::{print, print_json};
use super::Result;
use clap::Args as ClapArgs;
use sysperf::observe::doctor;
use sysperf::{catalog, report};

#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Print the findings and the facts behind them as one JSON document.
    #[arg(long)]
    pub(crate) json: bool,
    /// The store whose runs of this machine give its run-to-run variance (never created).
    #[command(flatten)]
    pub(crate) db: DbArg,
}

pub(crate) fn exec(a: Args) -> Result<i32> {
    // Spool files waiting on this host are said, and uploaded when the store is the shared
    // one they wait for (#35); a store that cannot be reached leaves them said only.
    match catalog::shared_store(a.db.db.as_ref()) {
        Ok(shared) => sysperf::sync::upload_waiting_once(shared.as_deref()),
        Err(_) => sysperf::sync::upload_waiting_once(None),
    };
    let (mut facts, _) = doctor::examine();
    facts.store_sslmode = catalog::store_sslmode_over_tcp(a.db.db.as_ref()).map(String::from);
    facts.variance = catalog::stored_variance(a.db.db.as_ref(), &facts.fingerprint)?;
    let findings = doctor::diagnose(&facts);
    if a.json {
        print_json(&report::json::doctor_document(&facts, &findings))
    } else {
        print(&doctor::render(&facts, &findings))
    }
}
