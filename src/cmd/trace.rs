//! `sysperf trace`: one benchmark seen through the kernel's trace points, per operation; or,
//! with `--system`, the whole machine for a while.

use super::args::{parse_seconds, parse_span, DbArg, PlaceArgs};
use super::failure::Context;
use super::out::{print, print_json, worker_exe};
use super::progress;
use super::Result;
use clap::Args as ClapArgs;
use std::path::PathBuf;
use std::time::Duration;
use sysperf::engine::{self, Budget};
use sysperf::{bench, exit, output, report, trace};

pub(crate) const TRACE_HELP: &str = "\
With --system DURATION: the whole machine, as the paper's section 2.3 traced it (a bounded
ring read as it fills): page-cache hit rate of reads and read-ahead use, dentry-cache hit rate
of path lookups, system calls by process and by kind with their time, softirq time by kind as
a share of kernel time, events lost. The instance is instances/sysperf-<pid>-system.

Event sets (--events, comma-separated; default syscalls,sched):
  syscalls   raw_syscalls:sys_enter: system calls per operation, by name
  sched      switches (voluntary, preempted), wakeups, wake-up latency, migrations, forks
  pagecache  filemap and readahead events: pages requested and missed, hit ratio, read-ahead
             pages and the share of them used (as the paper's section 3.2.6 measured)
  block      block_rq_issue/complete: requests, bytes, latency (traced system-wide)
or any events as system:name (see available_events in tracefs), mixed freely.

Method: the benchmark runs twice in its worker, at N and 2N iterations, traced in a tracefs
instance of sysperf's own (instances/sysperf-<pid>) that follows sysperf's children; per
operation = difference of the two runs' counts / difference of their operations, which cancels
start-up, setup and teardown. Needs root (or CAP_SYS_ADMIN); when tracefs is not mounted,
sysperf mounts it privately for itself. The instance is removed on every exit, Ctrl-C included.";

#[derive(ClapArgs)]
pub(crate) struct Args {
    /// The benchmark to trace (an id from 'sysperf list').
    #[arg(required_unless_present = "system")]
    pub(crate) id: Option<String>,
    /// Trace the whole machine for DURATION instead (seconds, or 90s, 5m, 1h): page-cache and
    /// dentry-cache hit rates, system calls by process and by kind, softirq time by kind,
    /// events lost. Ctrl-C ends it early, with the report so far (docs/trace.md).
    #[arg(long, value_name = "DURATION", value_parser = parse_span, conflicts_with_all = ["id", "iterations", "raw"])]
    pub(crate) system: Option<f64>,
    /// Event sets (syscalls, sched, pagecache, block) and/or events as system:name (default
    /// syscalls,sched). With --system: syscalls (with the dentry cache), softirq, pagecache
    /// (default all three).
    #[arg(long, value_name = "SET|LIST")]
    pub(crate) events: Option<String>,
    /// Ring buffer size per CPU in KB (default 4096, raised automatically if events are lost).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=1_048_576))]
    pub(crate) buffer_kb: Option<u64>,
    /// Iterations of the first traced run (the second runs twice as many); default: calibrated
    /// to about 10 ms, at most 5000.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    pub(crate) iterations: Option<u64>,
    /// Also write the text traces of both runs to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) raw: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) place: PlaceArgs,
    /// Kill a traced run (and fail) when it runs longer than this many seconds.
    #[arg(long, value_name = "S", default_value_t = 60.0, allow_negative_numbers = true, value_parser = parse_seconds)]
    pub(crate) timeout: f64,
    /// Print the summary as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// Store the trace with the machine's fingerprint, among the observations ('sysperf runs'
    /// lists it, 'show ID' prints it, 'rm ID' removes it): 'sysperf explain' gives its counts
    /// per operation beside the side whose machine it was made on.
    #[arg(long, conflicts_with = "system")]
    pub(crate) store: bool,
    /// With --store: a label to find the trace by.
    #[arg(long, requires = "store")]
    pub(crate) label: Option<String>,
    #[command(flatten)]
    pub(crate) db: DbArg,
}

pub(crate) fn exec(a: Args) -> Result<i32> {
    if let Some(secs) = a.system {
        let sets = trace::system::parse_sets(a.events.as_deref())?;
        return system(secs, sets, a.buffer_kb, a.json);
    }
    // Everything the user gave is checked before tracefs is touched.
    let id = a.id.as_deref().unwrap_or_default();
    let spec = bench::select_one(id, "trace")?;
    let selection = trace::parse_selection(a.events.as_deref().unwrap_or(trace::DEFAULT_EVENTS))?;
    let plan = a.place.placing()?.plan(spec.shape)?;
    if let Some(raw) = &a.raw {
        output::check(raw).context("--raw")?;
    }
    let opts = trace::Options {
        spec,
        plan,
        selection,
        buffer_kb: a.buffer_kb,
        iterations: a.iterations,
        worker_exe: worker_exe()?,
        budget: Budget::trace(Duration::from_secs_f64(a.timeout)),
        keep_raw: a.raw.is_some(),
    };
    // The store is opened first, so a store that cannot be written costs no tracing.
    let store = match a.store {
        true => Some(sysperf::catalog::open_store(a.db.db.as_ref())?),
        false => None,
    };
    let started_ns = sysperf::harness::unix_ns();
    // Ctrl-C and termination stop the trace; the worker is killed, the instance removed.
    let stop = engine::stop_flag()?;
    let traced = match trace::trace(&opts, &stop, &|m| say!("sysperf: {m}")) {
        Ok(t) => t,
        Err(trace::TraceError::Interrupted) => {
            say!("sysperf: interrupted; the worker was stopped and the trace instance removed");
            return Ok(engine::interrupted_code());
        }
        Err(e) => return Err(e.into()),
    };
    if let (Some(path), Some(text)) = (&a.raw, &traced.raw) {
        // Raw traces hold other processes' scheduling events: readable by the owner only.
        output::write(path, text.as_bytes(), 0o600)?;
        say!("sysperf: raw trace written to {}", path.display());
    }
    if a.json {
        print_json(&traced.report)?;
    } else {
        print(&report::trace::render(&traced.report))?;
    }
    // Counts from an overwritten ring buffer are not the kernel's: shown, but not a success,
    // and not stored.
    if traced.report.runs.iter().any(|r| r.lost_events > 0) {
        say!("sysperf: events were lost, so the counts are incomplete; raise --buffer-kb or lower --iterations");
        return Ok(exit::FAILURE);
    }
    if let Some(store) = store {
        let t = traced.report.stored(
            engine::new_run_id()?,
            a.label.clone(),
            started_ns,
            sysperf::fingerprint::collect(),
        )?;
        store.save_trace(&t)?;
        say!("sysperf: stored as trace {} (sysperf show {})", t.id, t.id);
    }
    Ok(exit::OK)
}

/// `sysperf trace --system DURATION`: the whole machine, with a progress line and an ETA.
fn system(secs: f64, sets: Vec<&'static str>, buffer_kb: Option<u64>, json: bool) -> Result<i32> {
    let opts = trace::system::SystemOptions {
        duration: Duration::from_secs_f64(secs),
        sets,
        buffer_kb: buffer_kb.unwrap_or(trace::system::DEFAULT_SYSTEM_BUFFER_KB),
    };
    // Ctrl-C and termination end the trace early: the report so far, then 130/143.
    let stop = engine::stop_flag()?;
    let bar = progress::tracing(opts.duration);
    let report = trace::system::trace_system(
        &opts,
        &stop,
        &|m| bar.suspend(|| say!("sysperf: {m}")),
        &mut |p| {
            bar.set_position(p.elapsed.as_secs());
            bar.set_message(format!(
                "{} events, {} lost",
                report::trace::thousands(p.events),
                report::trace::thousands(p.lost)
            ));
        },
    );
    bar.finish_and_clear();
    let report = report?;
    if json {
        print_json(&report)?;
    } else {
        print(&report::trace::render_system(&report))?;
    }
    if report.interrupted {
        say!("sysperf: interrupted; the report covers the time traced, and the trace instance was removed");
        return Ok(engine::interrupted_code());
    }
    // Counts from an overwritten ring buffer are not the kernel's: shown, but not a success.
    if report.lost_events > 0 {
        say!("sysperf: events were lost, so the counts are incomplete; raise --buffer-kb");
        return Ok(exit::FAILURE);
    }
    Ok(exit::OK)
}
