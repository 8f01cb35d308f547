//! The `sysperf` command line: parse arguments, call the library, print, exit with a
//! documented code. `run` reads as the whole pipeline: select benchmarks, plan placement,
//! open the store, fingerprint the machine, measure overhead, measure each benchmark, derive,
//! store, print. `compare` loads runs (built-in reference runs by name, the rest from the
//! store), builds the comparison, prints it and applies the regression gate. No measuring,
//! statistics or formatting logic lives here.

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use sysperf::error::InputError;
use sysperf::exchange::{self, ExchangeError};
use sysperf::harness::placement::{self, CpuChoice, Mode};
use sysperf::harness::{self, Event, Options};
use sysperf::model::{Run, RunParams, TrialKind};
use sysperf::observe::{doctor, watch};
use sysperf::profile::{self, Profile};
use sysperf::store::{self, Store};
use sysperf::{bench, compare, derived, exit, fingerprint, reference, report, suite, sys, trace};

const AFTER_HELP: &str = "\
Exit codes: 0 ok; 1 failure; 2 bad usage or input (unknown benchmark, bad number, unusable
database, bad import file); 3 a comparison found a significant regression; 130 interrupted (finished
benchmarks are kept, the run is marked incomplete).

The store is an SQLite file: --db PATH, else $SYSPERF_DB, else
$XDG_DATA_HOME/sysperf/sysperf.db (~/.local/share/sysperf/sysperf.db).";

#[derive(Parser)]
#[command(name = "sysperf", version, about = "Measure, observe and compare UNIX kernel performance: the 4.2/4.3BSD benchmark suite, done rigorously", after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Args, Clone)]
struct DbArg {
    /// SQLite store to use (default: $SYSPERF_DB, else the XDG data directory).
    #[arg(long, value_name = "PATH", global = true)]
    db: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run benchmarks (all by default), store the run, print it as the paper's Table 2.
    #[command(
        after_help = "Selection: ids or shell globs, e.g. sysperf run 'pipe*' forks0. 'sysperf list' shows all ids.\n\nCI: the median's distribution-free confidence interval from order statistics (95% when there are 6 or more trials; with 5 it is [min, max], 93.8%)."
    )]
    Run(RunArgs),
    /// List the benchmarks: id, group, the paper's description and count, today's equivalent.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// List the suites of 'run --suite' and their series instead (x, y and points).
        #[arg(long)]
        suites: bool,
    },
    /// List stored runs, newest first, then the built-in published reference runs.
    Runs {
        #[command(flatten)]
        db: DbArg,
        /// Print the stored runs as JSON instead of a table (reference runs are not included).
        #[arg(long)]
        json: bool,
    },
    /// Compare runs side by side as the paper's Table 2 and Table 7, with each run's ratio to
    /// a baseline, its 95% interval and a verdict.
    #[command(after_help = compare_help())]
    Compare(CompareArgs),
    /// Show a run: stored (an id, a unique id prefix, a label, or 'latest') or a built-in
    /// reference run (vax750-4.1bsd, vax750-4.2bsd, vax750-4.3bsd).
    Show {
        run: String,
        #[command(flatten)]
        db: DbArg,
        /// Print the whole run as JSON (the format of 'run --json').
        #[arg(long)]
        json: bool,
    },
    /// Delete a stored run and everything measured in it.
    Rm {
        run: String,
        #[command(flatten)]
        db: DbArg,
    },
    /// Write stored runs (ids, id prefixes, labels or 'latest') as one export file that
    /// 'sysperf import' reads on another machine: every raw trial, the fingerprint, parameters
    /// and warnings.
    #[command(after_help = "The format is documented in docs/export-format.md.")]
    Export {
        #[arg(required = true, value_name = "RUN")]
        runs: Vec<String>,
        /// Where to write the export (default: standard output).
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        #[command(flatten)]
        db: DbArg,
    },
    /// Read runs from files written by 'sysperf export' into the store. Every file is checked
    /// first; if any is bad nothing is stored. A run already in the store is skipped.
    Import {
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        #[command(flatten)]
        db: DbArg,
    },
    /// Write a self-contained HTML report comparing runs: regressions first, the comparison
    /// table with verdicts, charts, the paging figure, fingerprints, warnings, derived figures.
    #[command(
        after_help = "RUN: an id, a unique id prefix, a label, 'latest', or a reference run (vax750-4.1bsd, ...). The first run is the baseline unless --baseline names another.\n\nThe page loads nothing from anywhere (inline styles and charts, no script): open it offline or attach it to a bug report."
    )]
    Report(ReportArgs),
    /// Draw one test or a group of tests across runs as an SVG or PNG figure.
    #[command(
        after_help = "Groups: syscall (system call and signals), ipc (pipes and datagram sockets), fork (fork and vfork), exec, paging (bars and the gausspage figure), other.\n\nBars are medians with 95% confidence whiskers, one colour per run; the first run is the baseline of the verdicts written beside the bars. PNG images are drawn at twice the SVG's size."
    )]
    Plot(PlotArgs),
    /// Trace one benchmark with the kernel's trace points: system calls, context switches,
    /// page cache and block I/O, per operation.
    #[command(after_help = TRACE_HELP)]
    Trace(TraceArgs),
    /// Watch the system like vmstat (or iostat with --disk): a line since boot, then one per INTERVAL.
    #[command(after_help = WATCH_HELP)]
    Watch(WatchArgs),
    /// What on this machine makes results noisy or not comparable, each with what to do.
    Doctor {
        /// Print the findings and the facts behind them as one JSON document.
        #[arg(long)]
        json: bool,
    },
    /// Profile the kernel while a benchmark runs: a gprof-like flat profile and call graph of
    /// where the kernel spends one operation. Or print the profiles stored with a run.
    #[command(
        after_help = "TARGET: benchmark ids or globs to profile now (not stored; 'sysperf run --profile' stores profiles with a run), or one stored run (id, label, 'latest') whose profiles to print.\n\nSampling uses perf_event_open (software cpu-clock, ~5 kHz, kernel call chains) on the worker and its children, and names kernel functions from /proc/kallsyms: it needs root, CAP_PERFMON or kernel.perf_event_paranoid <= 1, and kernel addresses visible in /proc/kallsyms (kernel.kptr_restrict). When they are missing it says which and how to allow it, and exits 1."
    )]
    Profile(ProfileArgs),
    /// Write the embedded null job or big job to a file, e.g. to time it with other tools.
    Job {
        #[arg(value_parser = ["null", "big"])]
        which: String,
        /// Where to write the executable.
        #[arg(short, long)]
        output: PathBuf,
    },
}

#[derive(Args)]
struct RunArgs {
    /// Benchmark ids or globs (default: all, or none when --suite is given).
    selection: Vec<String>,
    /// Run a suite of the papers' other studies, as curves of x against y: bbn, feder,
    /// scaling, tty, vm, workload, or all; or one series (scaling.poll) or point
    /// (bbn.pipe@65536), globs allowed (repeatable; `sysperf list --suites` lists them).
    #[arg(long, value_name = "NAME")]
    suite: Vec<String>,
    /// Counted trials per benchmark (1-1000).
    #[arg(long, default_value_t = 5, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=1000))]
    trials: u32,
    /// Minimum duration of one trial in seconds; iterations grow until a trial lasts this long.
    #[arg(long, value_name = "S", default_value_t = 0.1, allow_negative_numbers = true, value_parser = parse_seconds)]
    min_time: f64,
    /// One short trial per benchmark (0.01 s, no warm-up): a smoke test, not a measurement.
    #[arg(long)]
    quick: bool,
    #[command(flatten)]
    place: PlaceArgs,
    /// A label to find the run by later (sysperf show LABEL).
    #[arg(long, value_name = "TEXT")]
    label: Option<String>,
    /// Kill and record as failed any trial running longer than this many seconds.
    #[arg(long, value_name = "S", default_value_t = 60.0, allow_negative_numbers = true, value_parser = parse_seconds)]
    timeout: f64,
    /// Count the trials: system-wide /proc deltas (interrupts, softirqs, vmstat, disk I/O) in
    /// every trial; perf_event_open counters of the worker and its children (task clock,
    /// context switches, migrations, page faults; cycles and instructions where the CPU has
    /// them) in the warm-up trial, since they slow switches and forks (every trial if --quick).
    #[arg(long)]
    observe: bool,
    /// After measuring each benchmark, profile the kernel during one extra trial and store
    /// the profile with the run (see 'sysperf profile').
    #[arg(long)]
    profile: bool,
    /// How long each --profile trial runs, in seconds.
    #[arg(long, value_name = "S", default_value_t = 1.0, allow_negative_numbers = true, value_parser = parse_seconds)]
    profile_seconds: f64,
    #[command(flatten)]
    db: DbArg,
    /// Print the whole run as one JSON document instead of the table.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct CompareArgs {
    /// Runs, in column order: ids, unique id prefixes, labels, 'latest', or reference runs
    /// (vax750-4.1bsd, vax750-4.2bsd, vax750-4.3bsd); they may come from different machines.
    runs: Vec<String>,
    #[command(flatten)]
    against: AgainstArgs,
    /// Exit with code 3 when a test is significantly slower than the baseline by more than
    /// PCT percent (0-1000), naming each on stderr.
    #[arg(long, value_name = "PCT", allow_negative_numbers = true)]
    fail_on_regression: Option<String>,
    /// Print the comparison as one JSON document (docs/compare.md).
    #[arg(long, conflicts_with_all = ["markdown", "csv"])]
    json: bool,
    /// Print GitHub-flavoured Markdown, to paste into a mailing list or an issue.
    #[arg(long, conflicts_with = "csv")]
    markdown: bool,
    /// Print CSV: one line per test and run (docs/compare.md lists the columns).
    #[arg(long)]
    csv: bool,
    #[command(flatten)]
    db: DbArg,
}

const TRACE_HELP: &str = "\
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

#[derive(Args)]
struct TraceArgs {
    /// The benchmark to trace (an id from 'sysperf list').
    id: String,
    /// Event sets (syscalls, sched, pagecache, block) and/or events as system:name.
    #[arg(long, value_name = "SET|LIST", default_value = trace::DEFAULT_EVENTS)]
    events: String,
    /// Ring buffer size per CPU in KB (default 4096, raised automatically if events are lost).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=1_048_576))]
    buffer_kb: Option<u64>,
    /// Iterations of the first traced run (the second runs twice as many); default: calibrated
    /// to about 10 ms, at most 5000.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    iterations: Option<u64>,
    /// Also write the text traces of both runs to FILE.
    #[arg(long, value_name = "FILE")]
    raw: Option<PathBuf>,
    #[command(flatten)]
    place: PlaceArgs,
    /// Kill a traced run (and fail) when it runs longer than this many seconds.
    #[arg(long, value_name = "S", default_value_t = 60.0, allow_negative_numbers = true, value_parser = parse_seconds)]
    timeout: f64,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

const WATCH_HELP: &str = "\
Columns (vmstat's, procps-ng semantics): r b = runnable and blocked processes; swpd free buff
cache = KiB; si so = KiB swapped in/out per second; bi bo = KiB read/written to block devices
per second; flt = page faults per second; in cs = interrupts and context switches per second;
us sy id wa st = percent of CPU time in user (with nice), system (with irq and softirq), idle,
I/O wait, stolen. With --disk (sysstat's iostat -dx): tps = reads, writes and discards per
second; rkB/s wkB/s; r_await w_await = ms per request; aqu-sz = average queue; %util = time
busy. The first line covers the time since boot. Ctrl-C ends the watch with exit code 0.";

#[derive(Args)]
struct WatchArgs {
    /// Seconds between lines (0.1 to 86400); without it, one line of averages since boot.
    #[arg(allow_negative_numbers = true)]
    interval: Option<String>,
    /// Lines in all, the since-boot one included (default: until Ctrl-C).
    #[arg(allow_negative_numbers = true)]
    count: Option<String>,
    /// iostat's per-device report (tps, kB/s, await, %util) instead of vmstat's line.
    #[arg(long)]
    disk: bool,
    /// One JSON object per line instead of columns.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct ProfileArgs {
    /// Benchmark ids or globs to profile now, or one stored run whose profiles to print.
    #[arg(required = true, value_name = "TARGET")]
    target: Vec<String>,
    /// How long the profiled trial of each benchmark runs, in seconds.
    #[arg(long, value_name = "S", default_value_t = 2.0, allow_negative_numbers = true, value_parser = parse_seconds)]
    seconds: f64,
    /// Lines of flat profile to print (the call graph shows at most 12 functions).
    #[arg(long, value_name = "N", default_value_t = 25, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    top: u32,
    #[command(flatten)]
    place: PlaceArgs,
    /// Kill a trial running longer than this many seconds past --seconds.
    #[arg(long, value_name = "S", default_value_t = 60.0, allow_negative_numbers = true, value_parser = parse_seconds)]
    timeout: f64,
    #[command(flatten)]
    db: DbArg,
    /// Print the profiles as one JSON document (folded stacks, flat profile, call graph).
    #[arg(long)]
    json: bool,
}

/// Where a benchmark's processes run, shared by `run`, `trace` and `profile`.
#[derive(Args)]
struct PlaceArgs {
    /// Where two-process benchmarks run: both on one CPU, on two CPUs, or where the scheduler puts them.
    #[arg(long, value_enum, default_value_t = Mode::Same)]
    placement: Mode,
    /// CPUs to use, e.g. 1 or 0-3,5 (default: the allowed CPUs, last first).
    #[arg(long, value_name = "LIST")]
    cpu: Option<String>,
}

impl PlaceArgs {
    /// The CPUs to use: --cpu, checked against those this process may use, or all of those.
    /// Also returns the list as the user gave it, which a run records.
    fn choose(&self) -> Result<(CpuChoice, Option<Vec<u32>>)> {
        let allowed = sys::get_affinity().context("reading the CPUs this process may use")?;
        let requested = self.cpu.as_deref().map(placement::parse_list).transpose()?;
        Ok((CpuChoice::new(requested.clone(), &allowed)?, requested))
    }
}

/// What runs are compared against, shared by `compare` and `report`.
#[derive(Args)]
struct AgainstArgs {
    /// The run the others are compared with (default: the first RUN); it becomes column 1.
    #[arg(long, value_name = "RUN")]
    baseline: Option<String>,
    /// Noise band in percent (0-1000): a verdict needs the ratio's whole interval outside +-PCT.
    #[arg(
        long,
        value_name = "PCT",
        default_value = "2",
        allow_negative_numbers = true
    )]
    noise: String,
}

#[derive(Args)]
struct ReportArgs {
    /// Runs to compare (id, id prefix, label, 'latest' or a reference run).
    #[arg(required = true, value_name = "RUN")]
    runs: Vec<String>,
    /// Where to write the HTML file.
    #[arg(short, long, value_name = "FILE.html")]
    output: PathBuf,
    #[command(flatten)]
    against: AgainstArgs,
    #[command(flatten)]
    db: DbArg,
}

#[derive(Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["test", "group", "figure"])))]
struct PlotArgs {
    /// Runs to draw, one colour each (id, id prefix, label, 'latest' or a reference run).
    #[arg(required = true, value_name = "RUN")]
    runs: Vec<String>,
    /// One test, e.g. syscall.
    #[arg(long, value_name = "ID")]
    test: Option<String>,
    /// A group of tests: syscall, ipc, fork, exec, paging or other.
    #[arg(long, value_name = "NAME")]
    group: Option<String>,
    /// A figure of the runs' suites (`run --suite`), e.g. bbn.throughput: its curves of every
    /// run and the paper's figures.
    #[arg(long, value_name = "ID")]
    figure: Option<String>,
    /// Where to write the figure: FILE.svg or FILE.png.
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    #[command(flatten)]
    db: DbArg,
}

/// `sysperf compare --help`: the method, as every comparison states it.
fn compare_help() -> String {
    format!(
        "Method: {}.\n\nVerdicts: faster, SLOWER (marked !), ~ (no significant change), 'no CI' (published against published: a ratio but no interval). A test a run lacks shows as missing, a failed one as failed; a row without a ratio shows '-'.\n\nReference runs: {} are the published figures of the 4.2BSD paper's Table 2 and Table 7 (a VAX-11/750), built in and read-only; e.g. sysperf compare vax750-4.3bsd latest.\n\nExit codes: 0 ok; 2 bad input; 3 --fail-on-regression found a regression.",
        compare::method(compare::DEFAULT_NOISE_PCT),
        reference::NAMES.join(", ")
    )
}

/// A percentage option: a finite number from 0 to 1000.
fn parse_pct(what: &'static str, s: &str) -> Result<f64, InputError> {
    let bad = |why: &str| InputError::InvalidValue {
        what,
        value: s.chars().take(40).collect(),
        why: why.into(),
    };
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| bad("not a number; give a percentage such as 5"))?;
    if !v.is_finite() || !(0.0..=1000.0).contains(&v) {
        return Err(bad("give a percentage from 0 to 1000"));
    }
    Ok(v)
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !v.is_finite() || v <= 0.0 {
        return Err(format!("'{s}' must be a positive number of seconds"));
    }
    if v > 86_400.0 {
        return Err(format!(
            "'{s}' is more than a day; use a smaller number of seconds"
        ));
    }
    Ok(v)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // Worker processes are this same binary; they bypass the CLI entirely.
    if args.get(1).map(String::as_str) == Some("__worker") {
        std::process::exit(harness::worker::main(
            args.get(2).map(String::as_str).unwrap_or(""),
        ));
    }
    let cli = Cli::parse();
    let code = match dispatch(cli) {
        Ok(code) => code,
        // A reader that stopped reading (`sysperf runs | head`) is not a failure to report;
        // a run interrupted so is already stored.
        Err(e) if is_broken_pipe(&e) => exit::OK,
        Err(e) => {
            eprintln!("sysperf: error: {e:#}");
            if is_user_error(&e) {
                exit::USAGE
            } else {
                exit::FAILURE
            }
        }
    };
    let _ = std::io::stdout().flush();
    std::process::exit(code);
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Errors caused by the user's input map to exit code 2.
fn is_user_error(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<InputError>().is_some()
            || c.downcast_ref::<store::StoreError>()
                .is_some_and(|s| s.is_user_error())
            || c.downcast_ref::<ExchangeError>()
                .is_some_and(|x| x.is_user_error())
    })
}

fn dispatch(cli: Cli) -> Result<i32> {
    match cli.command {
        Cmd::Run(a) => run(a),
        Cmd::List {
            json,
            suites: false,
        } => list(json),
        Cmd::List { json, suites: true } => list_suites(json),
        Cmd::Runs { db, json } => runs(db, json),
        Cmd::Compare(a) => compare(a),
        Cmd::Show { run, db, json } => show(&run, db, json),
        Cmd::Rm { run, db } => rm(&run, db),
        Cmd::Export { runs, output, db } => export(&runs, output.as_deref(), db),
        Cmd::Import { files, db } => import(&files, db),
        Cmd::Report(a) => report_cmd(a),
        Cmd::Plot(a) => plot(a),
        Cmd::Job { which, output } => job(&which, &output),
        Cmd::Profile(a) => profile(a),
        Cmd::Watch(a) => watch(a),
        Cmd::Doctor { json } => doctor(json),
        Cmd::Trace(a) => trace_cmd(a),
    }
}

fn trace_cmd(a: TraceArgs) -> Result<i32> {
    // Everything the user gave is checked before tracefs is touched.
    let spec = match bench::select(std::slice::from_ref(&a.id))?.as_slice() {
        [one] => *one,
        many => {
            return Err(InputError::InvalidValue {
                what: "benchmark",
                value: a.id.clone(),
                why: format!(
                    "trace takes one benchmark; this matches {} ({})",
                    many.len(),
                    many.iter().map(|s| s.id).collect::<Vec<_>>().join(", ")
                ),
            }
            .into())
        }
    };
    let selection = trace::parse_selection(&a.events)?;
    let (cpus, _) = a.place.choose()?;
    let plan = placement::plan(a.place.placement, spec.shape, &cpus)?;
    if let Some(raw) = &a.raw {
        let parent = raw
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        if raw.is_dir() || !parent.is_dir() {
            return Err(InputError::InvalidValue {
                what: "--raw",
                value: raw.display().to_string(),
                why: "name a file in an existing directory".into(),
            }
            .into());
        }
    }
    let opts = trace::Options {
        spec,
        plan,
        selection,
        buffer_kb: a.buffer_kb,
        iterations: a.iterations,
        worker_exe: std::env::current_exe()
            .context("finding the sysperf executable to start workers from")?,
        timeout: Duration::from_secs_f64(a.timeout),
        keep_raw: a.raw.is_some(),
    };

    // Ctrl-C and termination stop the trace; the worker is killed, the instance removed.
    let stop = stop_flag()?;

    let traced = match trace::trace(&opts, &stop, &|m| eprintln!("sysperf: {m}")) {
        Ok(t) => t,
        Err(trace::TraceError::Interrupted) => {
            eprintln!(
                "sysperf: interrupted; the worker was stopped and the trace instance removed"
            );
            return Ok(exit::INTERRUPTED);
        }
        Err(trace::TraceError::Input(e)) => return Err(e.into()),
        Err(e) => return Err(e.into()),
    };
    if let (Some(path), Some(text)) = (&a.raw, &traced.raw) {
        std::fs::write(path, text)
            .with_context(|| format!("writing the raw trace to {}", path.display()))?;
        eprintln!("sysperf: raw trace written to {}", path.display());
    }
    let mut out = std::io::stdout().lock();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &traced.report)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", report::trace::render(&traced.report))?;
    }
    out.flush()?;
    // Counts from an overwritten ring buffer are not the kernel's: shown, but not a success.
    if traced.report.runs.iter().any(|r| r.lost_events > 0) {
        eprintln!("sysperf: events were lost, so the counts are incomplete; raise --buffer-kb or lower --iterations");
        return Ok(exit::FAILURE);
    }
    Ok(exit::OK)
}

/// A flag that SIGINT, SIGTERM and SIGHUP raise, for commands that run workers: they check it,
/// kill their worker's process group and clean up, instead of dying with things left behind.
/// Also makes this process the reaper of any orphaned descendants.
fn stop_flag() -> Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .context("installing the signal handler")?;
    }
    sys::set_child_subreaper();
    Ok(stop)
}

fn open_store(db: &DbArg) -> Result<Store> {
    let path = db.db.clone().unwrap_or_else(store::default_path);
    Store::open(&path).with_context(|| format!("opening the store {}", path.display()))
}

/// Finds runs by what the user typed: a reference run's name (or id) first, since those are
/// built in and never stored; then the store, opened on first need, so that comparing
/// reference runs alone touches no database.
struct Loader<'a> {
    db: &'a DbArg,
    store: Option<Store>,
}

impl<'a> Loader<'a> {
    fn new(db: &'a DbArg) -> Self {
        Loader { db, store: None }
    }

    fn store(&mut self) -> Result<&Store> {
        let store = match self.store.take() {
            Some(s) => s,
            None => open_store(self.db)?,
        };
        Ok(self.store.insert(store))
    }

    fn load(&mut self, spec: &str) -> Result<Run> {
        if let Some(r) = reference::find(spec)? {
            return Ok(r.clone());
        }
        let store = self.store()?;
        let id = store.resolve(spec)?;
        Ok(store.load_run(&id)?)
    }
}

fn run(a: RunArgs) -> Result<i32> {
    // 1. What to run, where, and with which parameters: all validated before anything starts.
    let chosen = suite::choose(&a.suite, a.quick)?;
    let specs = if chosen.is_empty() || !a.selection.is_empty() {
        bench::select(&a.selection)?
    } else {
        Vec::new()
    };
    let (cpus, requested) = a.place.choose()?;
    let suites: Vec<&suite::Suite> = chosen.iter().map(|c| c.suite).collect();
    let suite_plans = chosen
        .into_iter()
        .map(|c| {
            c.series
                .into_iter()
                .map(|(s, points)| {
                    let plan = placement::plan(a.place.placement, s.shape, &cpus)?;
                    Ok((s, plan, points))
                })
                .collect::<Result<Vec<_>, InputError>>()
        })
        .collect::<Result<Vec<_>, _>>()?;
    let points: usize = suite_plans.iter().flatten().map(|(_, _, p)| p.len()).sum();
    let plans = specs
        .iter()
        .map(|s| placement::plan(a.place.placement, s.shape, &cpus))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(l) = &a.label {
        if l.len() > 200 || l.chars().any(char::is_control) {
            return Err(InputError::InvalidValue {
                what: "--label",
                value: l.chars().take(40).collect(),
                why: "use at most 200 printable characters".into(),
            }
            .into());
        }
        // A reference name resolves to the built-in run first, so such a label could never
        // find this run again.
        if reference::is_name(l) {
            return Err(InputError::InvalidValue {
                what: "--label",
                value: l.clone(),
                why: "it is the name of a built-in reference run; choose another label".into(),
            }
            .into());
        }
    }
    let (trials, min_time, warmup) = if a.quick {
        (1, 0.01, false)
    } else {
        (a.trials, a.min_time, true)
    };
    let opts = Options {
        worker_exe: std::env::current_exe()
            .context("finding the sysperf executable to start workers from")?,
        trials,
        min_time: Duration::from_secs_f64(min_time),
        warmup,
        mode: a.place.placement,
        cpus,
        timeout: Duration::from_secs_f64(a.timeout),
        observe: a.observe,
    };
    // Profiling needs permissions and kernel symbols: find out before measuring anything.
    let access = if a.profile {
        Some(profile::check_access()?)
    } else {
        None
    };

    // 2. The store, the run record, the machine fingerprint and what the doctor finds (a
    // 0.2 s look at the CPUs and the settings that make results noisy or not comparable).
    let fingerprint = fingerprint::collect();
    let findings = doctor::diagnose(&doctor::gather(fingerprint.clone(), doctor::SAMPLE));
    let store = open_store(&a.db)?;
    let mut run = Run {
        id: new_run_id()?,
        label: a.label.clone(),
        started_ns: now_ns(),
        ended_ns: None,
        complete: false,
        sysperf_version: env!("CARGO_PKG_VERSION").to_string(),
        source: "measured".into(),
        citation: None,
        params: RunParams {
            selection: a.selection.clone(),
            suites: a.suite.clone(),
            trials,
            min_time_s: min_time,
            quick: a.quick,
            placement: a.place.placement.as_str().to_string(),
            cpus: requested,
            timeout_s: a.timeout,
        },
        fingerprint,
        findings,
        overhead: None,
        results: Vec::new(),
        derived: Vec::new(),
        warnings: Vec::new(),
        series: Vec::new(),
        notes: Vec::new(),
    };
    store
        .begin_run(&run)
        .context("recording the run in the store")?;

    // 3. Ctrl-C and termination stop the run between trials; workers are killed, never left.
    let stop = stop_flag()?;

    // 4. Measure.
    let bar = progress_bar((specs.len() + points) as u64 * (trials as u64 + u64::from(warmup) + 3));
    bar.set_message("timer and loop overhead");
    match harness::measure_overhead(&opts, &stop) {
        Ok(o) => run.overhead = Some(o),
        Err(e) => run.warnings.push(sysperf::model::Warning {
            bench: None,
            kind: "overhead".into(),
            message: format!("overhead not measured ({e}); nothing subtracted"),
        }),
    }
    let progress = |e: Event| match e {
        Event::Benchmark { id, index, total } => {
            bar.set_message(format!("{} ({}/{})", id, index + 1, total))
        }
        Event::Trial { kind } => {
            if kind == TrialKind::Calibration && bar.position() + 1 >= bar.length().unwrap_or(0) {
                bar.inc_length(1);
            }
            bar.inc(1)
        }
    };
    let mut interrupted = false;
    let mut profiles = Vec::new();
    // A profiled trial lasts --profile-seconds however short --timeout is.
    let profile_opts = Options {
        timeout: opts.timeout + Duration::from_secs_f64(3.0 * a.profile_seconds),
        ..opts.clone()
    };
    // One benchmark or suite point: announced to the progress bar, then measured.
    let total = specs.len() + points;
    let overhead = run.overhead;
    let measure_one = |target: &harness::Target, plan: &placement::Plan, index: usize| {
        progress(Event::Benchmark {
            id: &target.id,
            index,
            total,
        });
        harness::measure(target, plan, &opts, overhead.as_ref(), &stop, &progress)
    };
    for (index, (spec, plan)) in specs.iter().zip(&plans).enumerate() {
        match measure_one(&harness::Target::bench(spec), plan, index) {
            Ok((result, warnings)) => {
                store
                    .add_result(&run.id, &result, &warnings)
                    .with_context(|| format!("storing {}", spec.id))?;
                run.warnings.extend(warnings);
                if let (Some(access), Some((n, wall))) = (&access, calibrated(&result)) {
                    bar.set_message(format!("{} (profiling)", spec.id));
                    let iterations = profile::iterations_for(a.profile_seconds, n, wall);
                    match profile::profile_benchmark(
                        spec,
                        plan,
                        &profile_opts,
                        iterations,
                        access,
                        &stop,
                    ) {
                        Ok(p) => {
                            store
                                .add_profile(&run.id, &p)
                                .with_context(|| format!("storing the profile of {}", spec.id))?;
                            profiles.push(p);
                        }
                        Err(profile::ProfileError::Interrupted) => interrupted = true,
                        Err(e) => run.warnings.push(sysperf::model::Warning {
                            bench: Some(spec.id.into()),
                            kind: "profile".into(),
                            message: e.to_string(),
                        }),
                    }
                }
                run.results.push(result);
                if interrupted {
                    break;
                }
            }
            Err(harness::Stop::Interrupted) => {
                interrupted = true;
                break;
            }
        }
        if stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
    }
    // The suites: every point of every series measured like a benchmark; each series stored
    // as soon as it is complete, so an interrupted suite keeps its finished curves.
    let mut index = specs.len();
    'suites: for (suite, series) in suites.iter().zip(&suite_plans) {
        if interrupted {
            break;
        }
        match (suite.preflight)() {
            Ok(notes) => run
                .notes
                .extend(notes.into_iter().map(|n| format!("{}: {n}", suite.name))),
            Err(why) => {
                run.warnings.push(sysperf::model::Warning {
                    bench: None,
                    kind: "suite_skipped".into(),
                    message: format!("suite {} skipped: {why}", suite.name),
                });
                index += series.iter().map(|(_, _, p)| p.len()).sum::<usize>();
                continue;
            }
        }
        let first = run.series.len();
        for (spec, plan, pts) in series {
            let mut measured = Vec::new();
            for p in pts {
                let measured_point = measure_one(&harness::Target::point(spec, p), plan, index);
                index += 1;
                match measured_point {
                    Ok((result, warnings)) => {
                        run.warnings.extend(warnings);
                        measured.push((p.clone(), result));
                    }
                    Err(harness::Stop::Interrupted) => interrupted = true,
                }
                if interrupted || stop.load(Ordering::Relaxed) {
                    interrupted = true;
                    break;
                }
            }
            if !measured.is_empty() {
                let s = suite::series_from(spec, measured, run.overhead.as_ref());
                store
                    .add_series(&run.id, &s)
                    .with_context(|| format!("storing the series {}", spec.id))?;
                run.series.push(s);
            }
            if interrupted {
                break 'suites;
            }
        }
        run.derived.extend((suite.derive)(&run.series[first..]));
    }
    bar.finish_and_clear();

    // 5. Derive, finish the record, print.
    if let Some(e) = run
        .results
        .iter()
        .flat_map(|r| &r.trials)
        .find_map(|t| t.counters.as_ref().and_then(|c| c.perf_error.clone()))
    {
        run.warnings.push(sysperf::model::Warning {
            bench: None,
            kind: "observe".into(),
            message: format!("--observe: no perf counters, only system-wide /proc deltas: {e}"),
        });
    }
    let from_suites = std::mem::take(&mut run.derived);
    run.derived = derived::compute(&run.results);
    run.derived.extend(from_suites);
    run.ended_ns = Some(now_ns());
    run.complete = !interrupted;
    if interrupted {
        run.warnings.push(sysperf::model::Warning {
            bench: None,
            kind: "interrupted".into(),
            message: format!(
                "interrupted after {} of {} benchmarks; the finished ones are stored",
                run.results.len(),
                specs.len()
            ),
        });
    }
    store
        .finish_run(&run)
        .context("finishing the run in the store")?;
    print_run(&run, &profiles, a.json)?;
    if interrupted {
        eprintln!(
            "sysperf: interrupted; run {} kept as incomplete with {} benchmarks",
            run.id,
            run.results.len()
        );
        return Ok(exit::INTERRUPTED);
    }
    eprintln!(
        "sysperf: stored as run {} (sysperf show {})",
        run.id, run.id
    );
    Ok(if run.results.iter().any(|r| r.summary.is_none()) {
        exit::FAILURE
    } else {
        exit::OK
    })
}

/// Flat-profile lines printed with a run (`sysperf profile` prints as many as --top asks).
const RUN_PROFILE_TOP: usize = 15;

fn print_run(run: &Run, profiles: &[Profile], json: bool) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        let mut doc = report::json::run_document(run);
        if !profiles.is_empty() {
            doc["profiles"] =
                report::profile::json_document(profiles, RUN_PROFILE_TOP)["profiles"].take();
        }
        serde_json::to_writer_pretty(&mut out, &doc)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", report::table::render(run))?;
        for p in profiles {
            write!(out, "\n{}", report::profile::render(p, RUN_PROFILE_TOP))?;
        }
    }
    Ok(())
}

/// Iterations and wall time of a benchmark's last successful measured trial.
fn calibrated(r: &sysperf::model::BenchResult) -> Option<(u64, u64)> {
    r.summary.as_ref()?;
    r.trials
        .iter()
        .rev()
        .find(|t| t.kind == TrialKind::Measured && t.error.is_none() && t.wall_ns > 0)
        .map(|t| (t.iterations, t.wall_ns))
}

fn profile(a: ProfileArgs) -> Result<i32> {
    // A benchmark selection profiles now; otherwise the target names a stored run.
    let specs = match bench::select(&a.target) {
        Ok(specs) => specs,
        Err(bench_err) => {
            if a.target.len() != 1 {
                return Err(bench_err.into());
            }
            let store = open_store(&a.db)?;
            let id = match store.resolve(&a.target[0]) {
                Ok(id) => id,
                Err(store::StoreError::NoSuchRun { .. }) => {
                    let what = format!(
                        "'{}' is neither a benchmark nor a stored run ('sysperf runs' lists those)",
                        a.target[0]
                    );
                    return Err(anyhow::Error::new(bench_err).context(what));
                }
                Err(e) => return Err(e.into()),
            };
            let profiles = store.load_profiles(&id)?;
            if a.json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&report::profile::json_document(
                        &profiles,
                        a.top as usize
                    ))?
                );
            } else if profiles.is_empty() {
                println!("run {id} has no profiles; 'sysperf run --profile' stores them");
            } else {
                for p in &profiles {
                    println!("{}", report::profile::render(p, a.top as usize));
                }
            }
            return Ok(exit::OK);
        }
    };
    let (cpus, _) = a.place.choose()?;
    let plans = specs
        .iter()
        .map(|s| placement::plan(a.place.placement, s.shape, &cpus))
        .collect::<Result<Vec<_>, _>>()?;
    let access = profile::check_access()?;
    let stop = stop_flag()?;
    let exe =
        std::env::current_exe().context("finding the sysperf executable to start workers from")?;
    // Calibration as 'run --quick' does it, then one trial of about --seconds.
    let calibrate = Options {
        worker_exe: exe.clone(),
        trials: 1,
        min_time: Duration::from_secs_f64(0.1),
        warmup: false,
        mode: a.place.placement,
        cpus: cpus.clone(),
        timeout: Duration::from_secs_f64(a.timeout),
        observe: false,
    };
    let long = Options {
        timeout: Duration::from_secs_f64(a.timeout + 3.0 * a.seconds),
        ..calibrate.clone()
    };
    let mut profiles = Vec::new();
    for (spec, plan) in specs.iter().zip(&plans) {
        eprintln!("sysperf: profiling {} for about {} s", spec.id, a.seconds);
        let target = harness::Target::bench(spec);
        let (result, _) = match harness::measure(&target, plan, &calibrate, None, &stop, &|_| {}) {
            Ok(r) => r,
            Err(harness::Stop::Interrupted) => return interrupted_profile(),
        };
        let Some((n, wall)) = calibrated(&result) else {
            anyhow::bail!(
                "{} could not be run to calibrate the profile: {}",
                spec.id,
                result.error.as_deref().unwrap_or("no trial succeeded")
            );
        };
        let iterations = profile::iterations_for(a.seconds, n, wall);
        match profile::profile_benchmark(spec, plan, &long, iterations, &access, &stop) {
            Ok(p) => profiles.push(p),
            Err(profile::ProfileError::Interrupted) => return interrupted_profile(),
            Err(e) => return Err(e.into()),
        }
    }
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report::profile::json_document(
                &profiles,
                a.top as usize
            ))?
        );
    } else {
        for p in &profiles {
            println!("{}", report::profile::render(p, a.top as usize));
        }
    }
    Ok(exit::OK)
}

fn interrupted_profile() -> Result<i32> {
    eprintln!("sysperf: interrupted; nothing profiled was kept");
    Ok(exit::INTERRUPTED)
}

fn progress_bar(len: u64) -> ProgressBar {
    let bar = ProgressBar::new(len);
    if !std::io::stderr().is_terminal() {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    } else {
        bar.set_draw_target(ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} trials, ETA {eta}  {msg}",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.enable_steady_tick(Duration::from_millis(200));
    }
    bar
}

fn list(json: bool) -> Result<i32> {
    let specs = bench::all();
    let mut out = std::io::stdout().lock();
    if json {
        let v: Vec<serde_json::Value> = specs
            .iter()
            .map(|s| {
                serde_json::json!({
                    "id": s.id, "label": s.label, "group": s.group.as_str(), "paper": s.paper,
                    "paper_count": s.paper_count, "unit": s.unit, "ops_per_iteration": s.ops_per_iteration,
                    "today": s.today, "processes": match s.shape { bench::Shape::Single => 1, bench::Shape::Pair => 2 },
                })
            })
            .collect();
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "{:<18} {:<7} {:>7} {:<11}  the paper / today",
            "id", "group", "count", "unit"
        )?;
        for s in specs {
            writeln!(
                out,
                "{:<18} {:<7} {:>7} {:<11}  {}",
                s.id,
                s.group.as_str(),
                s.paper_count,
                s.unit,
                s.paper
            )?;
            writeln!(out, "{:<46}  today: {}", "", s.today)?;
        }
    }
    Ok(exit::OK)
}

fn list_suites(json: bool) -> Result<i32> {
    let mut out = std::io::stdout().lock();
    let xs = |s: &suite::SeriesSpec, quick: bool| -> Vec<String> {
        (s.points)(quick)
            .iter()
            .map(|p| p.label.clone().unwrap_or_else(|| suite::fmt_x(p.x)))
            .collect()
    };
    if json {
        let v: Vec<serde_json::Value> = suite::suites()
            .iter()
            .map(|suite| {
                let series: Vec<serde_json::Value> = (suite.series)()
                    .iter()
                    .map(|s| {
                        serde_json::json!({
                            "id": s.id, "figure": s.figure, "figure_title": s.figure_title,
                            "curve": s.curve, "paper": s.paper, "today": s.today,
                            "x_name": s.x.name, "x_unit": s.x.unit, "x_log": s.x.log,
                            "y_kind": s.y, "y_unit": s.y.unit(), "unit": s.unit,
                            "points": xs(s, false), "quick_points": xs(s, true),
                            "processes": match s.shape { bench::Shape::Single => 1, bench::Shape::Pair => 2 },
                        })
                    })
                    .collect();
                serde_json::json!({
                    "name": suite.name, "title": suite.title, "paper": suite.paper, "series": series,
                })
            })
            .collect();
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
        return Ok(exit::OK);
    }
    for suite in suite::suites() {
        writeln!(
            out,
            "{}: {}  (sysperf run --suite {})",
            suite.name, suite.title, suite.name
        )?;
        writeln!(out, "  {}", suite.paper)?;
        for s in (suite.series)() {
            writeln!(
                out,
                "  {:<26} {} against {} ({}): {}",
                s.id,
                s.y.unit(),
                s.x.name,
                s.curve,
                s.paper
            )?;
            writeln!(out, "  {:<26} today: {}", "", s.today)?;
            writeln!(out, "  {:<26} points: {}", "", xs(s, false).join(", "))?;
        }
        writeln!(out)?;
    }
    Ok(exit::OK)
}

fn runs(db: DbArg, json: bool) -> Result<i32> {
    let store = open_store(&db)?;
    let runs = store.list_runs()?;
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&runs)?)?;
        return Ok(exit::OK);
    }
    if runs.is_empty() {
        writeln!(out, "no runs stored yet; 'sysperf run' makes one")?;
    } else {
        write!(out, "{}", report::table::runs_list(&runs))?;
    }
    write!(out, "{}", report::table::reference_list(reference::all()?))?;
    Ok(exit::OK)
}

/// Loads the runs to compare, in the order given, with the baseline (when one is named) first:
/// named again among the runs, it is the same column, not a second one.
fn load_with_baseline(db: &DbArg, specs: &[String], baseline: Option<&str>) -> Result<Vec<Run>> {
    let mut specs = specs.to_vec();
    if let Some(b) = baseline {
        specs.insert(0, b.to_string());
    }
    if specs.is_empty() {
        return Err(InputError::NoRuns.into());
    }
    let mut loader = Loader::new(db);
    let mut runs = specs
        .iter()
        .map(|s| loader.load(s))
        .collect::<Result<Vec<_>>>()?;
    if baseline.is_some() {
        let base = runs[0].id.clone();
        let mut seen = false;
        runs.retain(|r| r.id != base || !std::mem::replace(&mut seen, true));
    }
    Ok(runs)
}

fn compare(a: CompareArgs) -> Result<i32> {
    // 1. Every option is checked before any run is loaded.
    let noise = parse_pct("--noise", &a.against.noise)?;
    let gate = a
        .fail_on_regression
        .as_deref()
        .map(|v| parse_pct("--fail-on-regression", v))
        .transpose()?;
    let runs = load_with_baseline(&a.db, &a.runs, a.against.baseline.as_deref())?;

    // 3. Compare, print, and gate.
    let c = compare::build(&runs, 0, noise);
    let text = if a.json {
        report::compare::json(&c)
    } else if a.markdown {
        report::compare::markdown(&c)
    } else if a.csv {
        report::compare::csv(&c)
    } else {
        report::compare::text(&c)
    };
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .context("writing the comparison")?;
    let Some(pct) = gate else {
        return Ok(exit::OK);
    };
    let regressions = compare::regressions(&c, pct);
    for r in &regressions {
        let label = c
            .runs
            .iter()
            .find(|h| h.id == r.run)
            .and_then(|h| h.label.as_deref())
            .map(|l| format!(" \"{l}\""))
            .unwrap_or_default();
        eprintln!(
            "sysperf: regression: run {}{label}, {}: {}x the baseline's time per operation, 95% CI [{}, {}], more than {pct}% slower",
            r.run,
            r.test,
            report::compare::sig3(r.ratio),
            report::compare::sig3(r.ci[0]),
            report::compare::sig3(r.ci[1]),
        );
    }
    Ok(if regressions.is_empty() {
        exit::OK
    } else {
        exit::REGRESSION
    })
}

fn show(spec: &str, db: DbArg, json: bool) -> Result<i32> {
    let mut loader = Loader::new(&db);
    let run = loader.load(spec)?;
    // Profiles live in the store beside their run; a reference run has none.
    let profiles = match reference::is_name(spec) {
        true => Vec::new(),
        false => loader.store()?.load_profiles(&run.id)?,
    };
    print_run(&run, &profiles, json)?;
    Ok(exit::OK)
}

fn rm(spec: &str, db: DbArg) -> Result<i32> {
    // Reference runs are not in the store; saying so beats "no run matches".
    if reference::is_name(spec) {
        return Err(InputError::ReadOnlyReference {
            name: spec.to_string(),
            what: "it is not stored, and there is nothing to remove",
        }
        .into());
    }
    let store = open_store(&db)?;
    let id = store.resolve(spec)?;
    store.remove_run(&id)?;
    println!("removed run {id}");
    Ok(exit::OK)
}

fn export(specs: &[String], output: Option<&std::path::Path>, db: DbArg) -> Result<i32> {
    let mut loader = Loader::new(&db);
    let mut runs: Vec<Run> = Vec::with_capacity(specs.len());
    for spec in specs {
        let run = loader.load(spec)?;
        // 'latest' and the run's own id name one run; it is exported once.
        if !runs.iter().any(|r| r.id == run.id) {
            runs.push(run);
        }
    }
    let bytes = exchange::export(&runs)?;
    let plural = if runs.len() == 1 { "" } else { "s" };
    match output {
        Some(path) => {
            std::fs::write(path, &bytes).with_context(|| format!("writing {}", path.display()))?;
            eprintln!(
                "sysperf: exported {} run{plural} to {}",
                runs.len(),
                path.display()
            );
        }
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(&bytes)
                .and_then(|()| out.flush())
                .context("writing the export to standard output")?;
        }
    }
    Ok(exit::OK)
}

fn import(files: &[PathBuf], db: DbArg) -> Result<i32> {
    // Every file is read and checked before the store is opened, so a bad file leaves the
    // store as it was (not even created); then all runs are saved in one transaction.
    let mut batches = Vec::with_capacity(files.len());
    for path in files {
        let runs = match read_export(path).and_then(|bytes| exchange::import(&bytes)) {
            Ok(runs) => runs,
            // A read error names the file already; other problems get it as context.
            Err(e @ ExchangeError::Read { .. }) => return Err(e.into()),
            Err(e) => {
                return Err(anyhow::Error::new(e).context(format!("importing {}", path.display())))
            }
        };
        batches.push((path, runs));
    }
    let all: Vec<Run> = batches
        .iter()
        .flat_map(|(_, runs)| runs.iter().cloned())
        .collect();
    let store = open_store(&db)?;
    let saved = store
        .save_runs(&all)
        .context("saving the imported runs (nothing was stored)")?;
    let mut saved = saved.into_iter();
    let mut out = std::io::stdout().lock();
    for (path, runs) in &batches {
        for run in runs {
            if saved.next().unwrap_or(false) {
                match &run.label {
                    Some(label) => {
                        writeln!(out, "imported {} ({label}) from {}", run.id, path.display())?
                    }
                    None => writeln!(out, "imported {} from {}", run.id, path.display())?,
                }
            } else {
                writeln!(out, "already present: {}", run.id)?;
            }
        }
    }
    Ok(exit::OK)
}

/// The bytes of an export file, reading no more than an export may hold: a larger file (or
/// an endless one such as /dev/zero) is refused without being read into memory.
fn read_export(path: &std::path::Path) -> Result<Vec<u8>, ExchangeError> {
    use std::io::Read;
    let read_err = |cause| ExchangeError::Read {
        path: path.to_path_buf(),
        cause,
    };
    let file = std::fs::File::open(path).map_err(read_err)?;
    let too_large = |size| ExchangeError::TooLarge {
        size,
        limit: exchange::MAX_FILE_BYTES,
    };
    let len = file.metadata().map_err(read_err)?.len();
    if len > exchange::MAX_FILE_BYTES {
        return Err(too_large(len));
    }
    let mut bytes = Vec::new();
    file.take(exchange::MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read_err)?;
    if bytes.len() as u64 > exchange::MAX_FILE_BYTES {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

fn report_cmd(a: ReportArgs) -> Result<i32> {
    let noise = parse_pct("--noise", &a.against.noise)?;
    let runs = load_with_baseline(&a.db, &a.runs, a.against.baseline.as_deref())?;
    let cmp = compare::build(&runs, 0, noise);
    // Profiles stored with a run (`run --profile`) are shown too; reference runs have none.
    let profiles = if runs.iter().all(|r| r.source == "published") {
        vec![Vec::new(); runs.len()]
    } else {
        let store = open_store(&a.db)?;
        runs.iter()
            .map(|r| store.load_profiles(&r.id))
            .collect::<Result<Vec<_>, _>>()?
    };
    let page = report::html::html(&runs, &cmp, &profiles);
    std::fs::write(&a.output, page)
        .with_context(|| format!("writing the report to {}", a.output.display()))?;
    eprintln!("sysperf: wrote {}", a.output.display());
    Ok(exit::OK)
}

fn plot(a: PlotArgs) -> Result<i32> {
    use report::svg;
    // The format comes from the name; checked first so a typo costs nothing.
    let ext = a
        .output
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let png = match ext.as_deref() {
        Some("svg") => false,
        Some("png") => true,
        _ => {
            return Err(InputError::InvalidValue {
                what: "--output",
                value: a.output.display().to_string(),
                why: "the file name must end in .svg or .png".into(),
            }
            .into())
        }
    };
    if let Some(g) = &a.group {
        if svg::find_group(g).is_none() {
            return Err(InputError::InvalidValue {
                what: "--group",
                value: g.clone(),
                why: format!(
                    "valid groups: {}",
                    svg::GROUPS
                        .iter()
                        .map(|g| g.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
            .into());
        }
    }
    let runs = load_with_baseline(&a.db, &a.runs, None)?;
    let cmp = compare::build(&runs, 0, compare::DEFAULT_NOISE_PCT);
    let present = || {
        cmp.rows
            .iter()
            .map(|r| r.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let figure = match (&a.test, &a.group) {
        _ if a.figure.is_some() => {
            let id = a.figure.as_deref().unwrap_or_default();
            let figs = report::series_svg::figures(&runs);
            match figs.iter().find(|g| g.id == id) {
                Some(fig) => report::series_svg::figure_chart(fig),
                None => {
                    return Err(InputError::InvalidValue {
                        what: "--figure",
                        value: id.to_string(),
                        why: if figs.is_empty() {
                            "these runs have no suite figures (make one with `sysperf run --suite NAME`)".into()
                        } else {
                            format!(
                                "no such figure in these runs; their figures: {}",
                                figs.iter().map(|g| g.id.as_str()).collect::<Vec<_>>().join(", ")
                            )
                        },
                    }
                    .into())
                }
            }
        }
        (Some(id), _) => svg::test_chart(&cmp, id).ok_or_else(|| InputError::InvalidValue {
            what: "--test",
            value: id.clone(),
            why: format!(
                "{}; valid tests for these runs: {}",
                if bench::find(id).is_some() {
                    "none of these runs has it"
                } else {
                    "no such test"
                },
                present()
            ),
        })?,
        (None, Some(name)) => {
            let group = svg::find_group(name).context("group checked above")?;
            let mut parts: Vec<svg::Svg> = svg::group_chart(&cmp, group).into_iter().collect();
            if group.name == "paging" {
                parts.extend(svg::paging_figure(&cmp));
            }
            match parts.len() {
                0 => {
                    return Err(InputError::InvalidValue {
                        what: "--group",
                        value: name.clone(),
                        why: format!(
                            "none of these runs has a test in it; their tests: {}",
                            present()
                        ),
                    }
                    .into())
                }
                1 => parts.remove(0),
                _ => svg::stack(group.title, &parts),
            }
        }
        // clap requires exactly one of the two; kept total rather than unreachable!().
        (None, None) => {
            return Err(InputError::InvalidValue {
                what: "arguments",
                value: String::new(),
                why: "give --test ID, --group NAME or --figure ID".into(),
            }
            .into())
        }
    };
    let bytes = if png {
        let image = report::png::render(&figure.document(), report::png::system_fonts())?;
        if !image.has_text {
            eprintln!("sysperf: warning: no fonts found, so the PNG has no text; install one (Debian: apt-get install fonts-dejavu-core) or write .svg");
        }
        image.bytes
    } else {
        figure.document().into_bytes()
    };
    std::fs::write(&a.output, bytes)
        .with_context(|| format!("writing the figure to {}", a.output.display()))?;
    eprintln!("sysperf: wrote {}", a.output.display());
    Ok(exit::OK)
}

fn watch(a: WatchArgs) -> Result<i32> {
    let opts = watch::WatchOptions {
        interval: a
            .interval
            .as_deref()
            .map(watch::parse_interval)
            .transpose()?,
        count: a.count.as_deref().map(watch::parse_count).transpose()?,
        disk: a.disk,
        json: a.json,
    };
    // Ctrl-C (or a termination request) ends the watch between lines: its normal end.
    let stop = stop_flag()?;
    let mut out = std::io::stdout().lock();
    watch::run(&opts, &stop, &mut out).context("watching the kernel's counters")?;
    Ok(exit::OK)
}

fn doctor(json: bool) -> Result<i32> {
    let (facts, findings) = doctor::examine();
    let mut out = std::io::stdout().lock();
    if json {
        let doc = serde_json::json!({
            "format": "sysperf-doctor",
            "format_version": 1,
            "findings": findings,
            "facts": facts,
        });
        serde_json::to_writer_pretty(&mut out, &doc)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", doctor::render(&facts, &findings))?;
    }
    Ok(exit::OK)
}

fn job(which: &str, output: &std::path::Path) -> Result<i32> {
    use std::os::unix::fs::PermissionsExt;
    let bytes = match which {
        "big" => bench::exec::BIG_JOB,
        _ => bench::exec::NULL_JOB,
    };
    std::fs::write(output, bytes).with_context(|| format!("writing {}", output.display()))?;
    std::fs::set_permissions(output, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("making {} executable", output.display()))?;
    Ok(exit::OK)
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// 12 random hex digits: unique enough to merge runs from a fleet of machines.
fn new_run_id() -> Result<String> {
    let mut b = [0u8; 6];
    sys::random_bytes(&mut b).context("reading random bytes for the run id")?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}
