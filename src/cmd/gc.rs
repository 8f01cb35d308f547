//! `sysperf gc`: the space of removed runs given back to the file system; with `--abandoned`,
//! first the runs killed midway whose heartbeat stopped long ago removed (#35), never one
//! whose writer still runs on this machine (#41).

use super::args::{parse_span, DbArg};
use super::failure::failure;
use super::out::print;
use super::Result;
use clap::Args as ClapArgs;
use sysperf::catalog;
use sysperf::model::{ABANDONED_AFTER, UNCHECKED_SILENCE};

#[derive(ClapArgs)]
pub(crate) struct Args {
    /// First remove the abandoned runs: incomplete, never ended (killed, their host gone),
    /// their writer not running on this machine, and not heard of (no result stored, no
    /// heartbeat: a run being measured in a PostgreSQL store beats every 2 s) for --older-than; each removed is
    /// listed.
    #[arg(long)]
    pub(crate) abandoned: bool,
    /// How long an abandoned run has been silent at least (90s, 30m, 2h; default 1h; at
    /// least 10s for a run whose writer cannot be checked here, such as another host's).
    #[arg(long, value_name = "SPAN", value_parser = parse_span, requires = "abandoned")]
    pub(crate) older_than: Option<f64>,
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
    if a.abandoned {
        let after = a
            .older_than
            .map_or(ABANDONED_AFTER, std::time::Duration::from_secs_f64);
        let now = sysperf::harness::unix_ns();
        let mut removed = 0;
        for r in store.list_runs()? {
            let Some(st) = r.stopped.as_ref() else {
                continue;
            };
            // A run whose writer runs on this machine is measuring, however long it is
            // silent (#41: a run calibrating to --min-time 10 was removed, then died
            // storing its results).
            if !st.abandoned_after(r.ended_ns.is_some(), now, after) {
                continue;
            }
            store.remove_run(&r.id)?;
            removed += 1;
            say!(
                "sysperf: removed abandoned run {} ({} tests{}), of {}, last heard {} at {}",
                r.id,
                r.benchmarks,
                r.label
                    .as_deref()
                    .map_or(String::new(), |l| format!(", label {l}")),
                r.hostname.as_deref().unwrap_or("an unknown host"),
                sysperf::report::utc(st.last_heard_ns),
                st.at.as_deref().unwrap_or("its start")
            );
        }
        let unchecked = if after < UNCHECKED_SILENCE {
            format!(
                ", {} s if its writer cannot be checked here",
                UNCHECKED_SILENCE.as_secs()
            )
        } else {
            String::new()
        };
        say!(
            "sysperf: {removed} abandoned run{} removed (silent for over {} s{unchecked}, its writer not running here)",
            if removed == 1 { "" } else { "s" },
            after.as_secs()
        );
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
