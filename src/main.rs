//! The `sysperf` command line: parse arguments, call the library, print, exit with a
//! documented code. `run` reads as the whole pipeline: select benchmarks, plan placement,
//! open the store, fingerprint the machine, measure overhead, measure each benchmark, derive,
//! store, print. No measuring or formatting logic lives here.

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
use sysperf::profile::{self, Profile};
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
    /// Where two-process benchmarks run (as for 'run').
    #[arg(long, value_enum, default_value_t = Mode::Same)]
    placement: Mode,
    /// CPUs to use, e.g. 1 or 0-3,5 (as for 'run').
    #[arg(long, value_name = "LIST")]
    cpu: Option<String>,
    /// Kill a trial running longer than this many seconds past --seconds.
    #[arg(long, value_name = "S", default_value_t = 60.0, allow_negative_numbers = true, value_parser = parse_seconds)]
    timeout: f64,
    #[command(flatten)]
    db: DbArg,
    /// Print the profiles as one JSON document (folded stacks, flat profile, call graph).
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
        Cmd::Profile(a) => profile(a),
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
        observe: a.observe,
    };
    // Profiling needs permissions and kernel symbols: find out before measuring anything.
    let access = if a.profile {
        Some(profile::check_access()?)
    } else {
        None
    };

    // 2. The store, the run record and the machine fingerprint.
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
            trials,
            min_time_s: min_time,
            quick: a.quick,
            placement: a.placement.as_str().to_string(),
            cpus: requested,
            timeout_s: a.timeout,
        },
        fingerprint: fingerprint::collect(),
        overhead: None,
        results: Vec::new(),
        derived: Vec::new(),
        warnings: Vec::new(),
    };
    store
        .begin_run(&run)
        .context("recording the run in the store")?;

    // 3. Ctrl-C and termination stop the run between trials; workers are killed, never left.
    let stop = install_stop()?;

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
    let mut profiles = Vec::new();
    // A profiled trial lasts --profile-seconds however short --timeout is.
    let profile_opts = Options {
        timeout: opts.timeout + Duration::from_secs_f64(3.0 * a.profile_seconds),
        ..opts.clone()
    };
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

/// SIGINT, SIGTERM and SIGHUP set the returned flag (workers are then killed, never left),
/// and orphans of killed workers come back to this process to be reaped.
fn install_stop() -> Result<Arc<AtomicBool>> {
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
    let allowed = sys::get_affinity().context("reading the CPUs this process may use")?;
    let requested = a.cpu.as_deref().map(placement::parse_list).transpose()?;
    let cpus = CpuChoice::new(requested, &allowed)?;
    let plans = specs
        .iter()
        .map(|s| placement::plan(a.placement, s.shape, &cpus))
        .collect::<Result<Vec<_>, _>>()?;
    let access = profile::check_access()?;
    let stop = install_stop()?;
    let exe =
        std::env::current_exe().context("finding the sysperf executable to start workers from")?;
    // Calibration as 'run --quick' does it, then one trial of about --seconds.
    let calibrate = Options {
        worker_exe: exe.clone(),
        trials: 1,
        min_time: Duration::from_secs_f64(0.1),
        warmup: false,
        mode: a.placement,
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
        let (result, _) = match harness::measure(spec, plan, &calibrate, None, &stop, &|_| {}) {
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
    let profiles = store.load_profiles(&id)?;
    print_run(&run, &profiles, json)?;
    Ok(exit::OK)
}

fn rm(spec: &str, db: DbArg) -> Result<i32> {
    let store = open_store(&db)?;
    let id = store.resolve(spec)?;
    store.remove_run(&id)?;
    println!("removed run {id}");
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
