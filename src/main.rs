//! The `sysperf` command line: parse arguments, call the library, print, exit with a
//! documented code. `run` reads as the whole pipeline: select benchmarks, plan placement,
//! open the store, fingerprint the machine, ask the doctor, measure overhead, measure each
//! benchmark, derive, store, print. No measuring or formatting logic lives here.

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use sysperf::error::InputError;
use sysperf::harness::placement::{self, CpuChoice, Mode};
use sysperf::harness::{self, Event, Options};
use sysperf::model::{Run, RunParams, TrialKind};
use sysperf::observe::{doctor, watch};
use sysperf::store::{self, Store};
use sysperf::{bench, derived, exit, fingerprint, report, sys};

const AFTER_HELP: &str = "\
Exit codes: 0 ok; 1 failure; 2 bad usage or input (unknown benchmark, bad number, unusable
database); 3 a comparison found a significant regression; 130 interrupted (finished
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
    },
    /// List stored runs, newest first.
    Runs {
        #[command(flatten)]
        db: DbArg,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show a stored run (an id, a unique id prefix, a label, or 'latest').
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
    /// Watch the system like vmstat (or iostat with --disk): a line since boot, then one per INTERVAL.
    #[command(after_help = WATCH_HELP)]
    Watch(WatchArgs),
    /// What on this machine makes results noisy or not comparable, each with what to do.
    Doctor {
        /// Print the findings and the facts behind them as one JSON document.
        #[arg(long)]
        json: bool,
    },
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
    /// Benchmark ids or globs (default: all).
    selection: Vec<String>,
    /// Counted trials per benchmark (1-1000).
    #[arg(long, default_value_t = 5, allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=1000))]
    trials: u32,
    /// Minimum duration of one trial in seconds; iterations grow until a trial lasts this long.
    #[arg(long, value_name = "S", default_value_t = 0.1, allow_negative_numbers = true, value_parser = parse_seconds)]
    min_time: f64,
    /// One short trial per benchmark (0.01 s, no warm-up): a smoke test, not a measurement.
    #[arg(long)]
    quick: bool,
    /// Where two-process benchmarks run: both on one CPU, on two CPUs, or where the scheduler puts them.
    #[arg(long, value_enum, default_value_t = Mode::Same)]
    placement: Mode,
    /// CPUs to use, e.g. 1 or 0-3,5 (default: the allowed CPUs, last first).
    #[arg(long, value_name = "LIST")]
    cpu: Option<String>,
    /// A label to find the run by later (sysperf show LABEL).
    #[arg(long, value_name = "TEXT")]
    label: Option<String>,
    /// Kill and record as failed any trial running longer than this many seconds.
    #[arg(long, value_name = "S", default_value_t = 60.0, allow_negative_numbers = true, value_parser = parse_seconds)]
    timeout: f64,
    #[command(flatten)]
    db: DbArg,
    /// Print the whole run as one JSON document instead of the table.
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

/// Errors caused by the user's input map to exit code 2.
fn is_user_error(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<InputError>().is_some()
            || c.downcast_ref::<store::StoreError>()
                .is_some_and(|s| s.is_user_error())
    })
}

fn dispatch(cli: Cli) -> Result<i32> {
    match cli.command {
        Cmd::Run(a) => run(a),
        Cmd::List { json } => list(json),
        Cmd::Runs { db, json } => runs(db, json),
        Cmd::Show { run, db, json } => show(&run, db, json),
        Cmd::Rm { run, db } => rm(&run, db),
        Cmd::Watch(a) => watch(a),
        Cmd::Doctor { json } => doctor(json),
        Cmd::Job { which, output } => job(&which, &output),
    }
}

fn open_store(db: &DbArg) -> Result<Store> {
    let path = db.db.clone().unwrap_or_else(store::default_path);
    Store::open(&path).with_context(|| format!("opening the store {}", path.display()))
}

fn run(a: RunArgs) -> Result<i32> {
    // 1. What to run, where, and with which parameters: all validated before anything starts.
    let specs = bench::select(&a.selection)?;
    let allowed = sys::get_affinity().context("reading the CPUs this process may use")?;
    let requested = a.cpu.as_deref().map(placement::parse_list).transpose()?;
    let cpus = CpuChoice::new(requested.clone(), &allowed)?;
    let plans = specs
        .iter()
        .map(|s| placement::plan(a.placement, s.shape, &cpus))
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
        mode: a.placement,
        cpus,
        timeout: Duration::from_secs_f64(a.timeout),
    };

    // 2. The store, the run record, the machine fingerprint and what the doctor finds (a
    // 0.2 s look at the CPUs and the settings that make results noisy or not comparable).
    let store = open_store(&a.db)?;
    let fingerprint = fingerprint::collect();
    let findings = doctor::diagnose(&doctor::gather(fingerprint.clone(), doctor::SAMPLE));
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
            trials,
            min_time_s: min_time,
            quick: a.quick,
            placement: a.placement.as_str().to_string(),
            cpus: requested,
            timeout_s: a.timeout,
        },
        fingerprint,
        overhead: None,
        results: Vec::new(),
        derived: Vec::new(),
        warnings: Vec::new(),
        findings,
    };
    store
        .begin_run(&run)
        .context("recording the run in the store")?;

    // 3. Ctrl-C and termination stop the run between trials; workers are killed, never left.
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

    // 4. Measure.
    let bar = progress_bar(specs.len() as u64 * (trials as u64 + u64::from(warmup) + 3));
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
        Event::Benchmark { spec, index, total } => {
            bar.set_message(format!("{} ({}/{})", spec.id, index + 1, total))
        }
        Event::Trial { kind } => {
            if kind == TrialKind::Calibration && bar.position() + 1 >= bar.length().unwrap_or(0) {
                bar.inc_length(1);
            }
            bar.inc(1)
        }
    };
    let mut interrupted = false;
    for (index, (spec, plan)) in specs.iter().zip(&plans).enumerate() {
        progress(Event::Benchmark {
            spec,
            index,
            total: specs.len(),
        });
        match harness::measure(spec, plan, &opts, run.overhead.as_ref(), &stop, &progress) {
            Ok((result, warnings)) => {
                store
                    .add_result(&run.id, &result, &warnings)
                    .with_context(|| format!("storing {}", spec.id))?;
                run.results.push(result);
                run.warnings.extend(warnings);
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
    bar.finish_and_clear();

    // 5. Derive, finish the record, print.
    run.derived = derived::compute(&run.results);
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
    print_run(&run, a.json)?;
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

fn print_run(run: &Run, json: bool) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &report::json::run_document(run))?;
        writeln!(out)?;
    } else {
        write!(out, "{}", report::table::render(run))?;
    }
    Ok(())
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

fn runs(db: DbArg, json: bool) -> Result<i32> {
    let store = open_store(&db)?;
    let runs = store.list_runs()?;
    if json {
        println!("{}", serde_json::to_string_pretty(&runs)?);
    } else if runs.is_empty() {
        println!("no runs stored yet; 'sysperf run' makes one");
    } else {
        print!("{}", report::table::runs_list(&runs));
    }
    Ok(exit::OK)
}

fn show(spec: &str, db: DbArg, json: bool) -> Result<i32> {
    let store = open_store(&db)?;
    let id = store.resolve(spec)?;
    let run = store.load_run(&id)?;
    print_run(&run, json)?;
    Ok(exit::OK)
}

fn rm(spec: &str, db: DbArg) -> Result<i32> {
    let store = open_store(&db)?;
    let id = store.resolve(spec)?;
    store.remove_run(&id)?;
    println!("removed run {id}");
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
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .context("installing the signal handler")?;
    }
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
