//! The `sysperf` command line: parse arguments (their definitions are `sysperf::cli`), call
//! the library, print, exit with a documented code. `run` reads as the whole pipeline: resolve
//! the plan, open the store, let the engine execute it with a progress bar as its sink, print.
//! `compare` loads runs (built-in reference runs by name, the rest from the store), builds
//! the comparison, prints it and applies the regression gate. No measuring, calibration,
//! statistics, storing or formatting logic lives here.

use anyhow::{Context, Result};
use clap::Parser;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;
use sysperf::catalog::{self, Catalog, CatalogError};
use sysperf::cli::{
    parse_pct, AbArgs, Cli, Cmd, CompareArgs, DbArg, FleetArgs, JitterArgs, NoiseArgs, PlotArgs,
    ProfileArgs, ProgressSink, ReportArgs, RunArgs, TraceArgs, WatchArgs,
};
use sysperf::engine::{self, Budget, Engine, Event, RunPlan, Sink};
use sysperf::error::InputError;
use sysperf::exchange::{self, ExchangeError};
use sysperf::fleet::Selection;
use sysperf::harness::{self, placement};
use sysperf::model::{Run, VarianceEstimate as Variance};
use sysperf::observe::{doctor, jitter, watch};
use sysperf::output::{self, OutputError};
use sysperf::profile::{self, Profile};
use sysperf::report::plot::{self, What};
use sysperf::{bench, compare, exit, reference, report, store, trace};

/// A line on stderr, its control characters escaped (it may carry labels, paths, host names
/// and stored messages: nothing that reaches a terminal is trusted, see `sysperf::term`).
macro_rules! say {
    ($($arg:tt)*) => {
        eprintln!("{}", sysperf::term::text(&format!($($arg)*)))
    };
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // Worker processes are this same binary; they bypass the CLI entirely.
    if args.get(1).map(String::as_str) == Some("__worker") {
        std::process::exit(harness::worker::main(
            args.get(2).map(String::as_str).unwrap_or(""),
            engine::make_benchmark,
        ));
    }
    // A sleeping server of the net suite's memory table (`suite::net::server_memory`).
    if args.get(1).map(String::as_str) == Some("__daemon") {
        std::process::exit(sysperf::suite::net::daemon_main(
            args.get(2).map(String::as_str).unwrap_or(""),
        ));
    }
    // Before anything else: a signal at any moment ends with a message and 128 + its number.
    if let Err(e) = sysperf::sys::exit_on_signals() {
        say!("sysperf: error: installing the signal handlers: {e}");
        std::process::exit(exit::FAILURE);
    }
    let cli = Cli::parse();
    let code = match dispatch(cli) {
        Ok(code) => code,
        // A reader that stopped reading (`sysperf runs | head`) is not a failure to report;
        // a run interrupted so is already stored.
        Err(e) if is_broken_pipe(&e) => exit::OK,
        Err(e) => {
            say!("sysperf: error: {e:#}");
            if is_user_error(&e) {
                exit::USAGE
            } else {
                exit::FAILURE
            }
        }
    };
    // The memory controller sysperf turned on in a cgroup v2 parent goes off again.
    harness::cgroup::withdraw_offers();
    let _ = std::io::stdout().flush();
    std::process::exit(code);
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    let pipe = Some(std::io::ErrorKind::BrokenPipe);
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>().map(|io| io.kind()) == pipe
            // JSON written straight to stdout fails inside serde_json.
            || c.downcast_ref::<serde_json::Error>()
                .and_then(|j| j.io_error_kind())
                == pipe
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
            || c.downcast_ref::<OutputError>()
                .is_some_and(|o| matches!(o, OutputError::Refused { .. }))
            || c.downcast_ref::<CatalogError>()
                .is_some_and(|x| x.is_user_error())
            || c.downcast_ref::<sysperf::sync::SyncError>()
                .is_some_and(|x| x.is_user_error())
            || c.downcast_ref::<trace::TraceError>()
                .is_some_and(|t| matches!(t, trace::TraceError::Input(_)))
            || c.downcast_ref::<report::png::PngError>()
                .is_some_and(|p| p.is_user_error())
    })
}

fn dispatch(cli: Cli) -> Result<i32> {
    if cli.command.examines_the_machine() {
        sysperf::engine::tidy(&mut |l| say!("sysperf: {l}"));
    }
    match cli.command {
        Cmd::Run(a) => run(a),
        Cmd::List { json, suites } => {
            let text = if suites {
                report::list::suites(json)
            } else {
                report::list::benchmarks(json)
            };
            if json {
                print_json_text(&text)
            } else {
                print(&text)
            }
        }
        Cmd::Runs {
            db,
            json,
            limit,
            since,
            fleet,
        } => runs(db, json, limit, since.as_deref(), &fleet),
        Cmd::Gc { db } => gc(db),
        Cmd::Compare(a) => compare(a),
        Cmd::Ab(a) => ab(a),
        Cmd::Noise(a) => noise(a),
        Cmd::Show { run, db, json } => show(&run, db, json),
        Cmd::Rm { run, db } => rm(&run, db),
        Cmd::Export { runs, output, db } => export(&runs, output.as_deref(), db),
        Cmd::Import { files, db } => import(&files, db),
        Cmd::Sync { src, dst } => sync_cmd(&src, &dst),
        Cmd::Report(a) => report_cmd(a),
        Cmd::Plot(a) => plot(a),
        Cmd::Job { which, output } => job(&which, &output),
        Cmd::Profile(a) => profile(a),
        Cmd::Watch(a) => watch(a),
        Cmd::Jitter(a) => jitter_cmd(a),
        Cmd::Doctor { json, db } => doctor(json, db),
        Cmd::Trace(a) => trace_cmd(a),
        Cmd::Completions { shell } => {
            print_raw(&String::from_utf8_lossy(&sysperf::cli::completions(shell)))
        }
        Cmd::Man { dir } => man(&dir),
    }
}

/// Writes `text` to standard output, its control characters escaped (`sysperf::term`).
fn print(text: &str) -> Result<i32> {
    print_raw(&sysperf::term::text(text))
}

/// Writes `value` as pretty JSON to standard output; characters that JSON allows raw but a
/// terminal would interpret are written as `\u` escapes (the same document to a parser).
fn print_json<T: serde::Serialize + ?Sized>(value: &T) -> Result<i32> {
    print_json_text(&format!("{}\n", serde_json::to_string_pretty(value)?))
}

/// JSON a renderer already wrote, made inert on a terminal as [`print_json`] makes it.
fn print_json_text(text: &str) -> Result<i32> {
    print_raw(&sysperf::term::json(text))
}

/// The one write to standard output; every caller has made its text terminal-safe (or, as
/// with completion scripts, generated it from sysperf's own definitions).
fn print_raw(text: &str) -> Result<i32> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(exit::OK)
}

fn worker_exe() -> Result<PathBuf> {
    std::env::current_exe().context("finding the sysperf executable to start workers from")
}

fn allowed_cpus() -> Result<Vec<u32>> {
    sysperf::sys::get_affinity().context("reading the CPUs this process may use")
}

fn run(a: RunArgs) -> Result<i32> {
    // 1. Every decision before anything starts: what, where, with which budget and order.
    let plan = RunPlan::resolve(&a.request(engine::fresh_seed()?)?, &allowed_cpus()?)?;
    if a.dry_run {
        return if a.json {
            print_json(&plan.document())
        } else {
            print(&plan.render())
        };
    }
    // 2. Ctrl-C and termination stop the run between trials; workers are killed, never left.
    let stop = engine::stop_flag()?;
    let store = catalog::open_store(a.db.db.as_ref())?;
    store.announce("sysperf run")?;
    // 3. Measure and store, with a progress bar as the sink of the engine's events.
    let engine = Engine {
        worker_exe: worker_exe()?,
        stop: &stop,
    };
    let mut bar = ProgressSink::new();
    let outcomes = engine.execute_repeated(&plan, store.as_ref(), &mut bar)?;
    bar.0.finish_and_clear();
    // 4. Print: the run, or with --repeat each run (as a JSON array with --json).
    if a.json && outcomes.len() > 1 {
        let docs: Vec<_> = outcomes
            .iter()
            .map(|o| {
                let mut doc = report::json::run_document(&o.run);
                doc["variance"] = serde_json::json!(o.variance);
                doc
            })
            .collect();
        print_json(&docs)?;
    } else {
        for o in &outcomes {
            print_run(&o.run, &o.profiles, Some(&o.variance), a.json)?;
        }
    }
    let Some(outcome) = outcomes.last() else {
        return Ok(exit::FAILURE);
    };
    if let (true, Some(l)) = (outcomes.len() > 1, &outcome.run.label) {
        let n = outcomes.len();
        say!("sysperf: stored {n} runs labelled '{l}' ('sysperf compare {l} ...' takes them as one group)");
    }
    let run = &outcome.run;
    if outcome.interrupted {
        say!(
            "sysperf: interrupted; run {} kept as incomplete with {} benchmarks",
            run.id,
            run.results.len()
        );
        return Ok(engine::interrupted_code());
    }
    say!(
        "sysperf: stored as run {} (sysperf show {})",
        run.id,
        run.id
    );
    // One rule for what this process may not do (README, "Privileges"): the rest is measured
    // and stored, each part left out is named, and the exit code says the run is partial.
    let left_out: std::collections::BTreeSet<&str> = outcomes
        .iter()
        .flat_map(|o| &o.run.warnings)
        .filter(|w| w.kind.is_left_out())
        .map(|w| w.message.as_str())
        .collect();
    for m in &left_out {
        say!("sysperf: left out: {m}");
    }
    Ok(
        if !left_out.is_empty() || run.results.iter().any(|r| r.summary.is_none()) {
            exit::FAILURE
        } else {
            exit::OK
        },
    )
}

/// Flat-profile lines printed with a run (`sysperf profile` prints as many as --top asks).
const RUN_PROFILE_TOP: usize = 15;

fn print_run(run: &Run, profiles: &[Profile], var: Option<&[Variance]>, json: bool) -> Result<()> {
    if json {
        print_json(&report::json::show_document(
            run,
            profiles,
            var,
            RUN_PROFILE_TOP,
        ))?;
    } else {
        let mut text = report::table::render(run);
        if let Some(v) = var {
            text.push_str(&format!("\n{}", report::table::variance(run, v)));
        }
        for p in profiles {
            text.push_str(&format!(
                "\n{}",
                report::profile::render(p, RUN_PROFILE_TOP)
            ));
        }
        print(&text)?;
    }
    Ok(())
}

fn profile(a: ProfileArgs) -> Result<i32> {
    if let Some(d) = &a.system {
        return system_profile(&a, d);
    }
    if let Some(path) = &a.svg {
        output::check(path).context("--svg")?;
    }
    // A selection of benchmarks or suite points profiles now; otherwise the target names a
    // stored run.
    let targets = match engine::profile_targets(&a.target) {
        Ok(targets) => targets,
        Err(bench_err) if a.target.len() == 1 => return stored_profiles(&a, bench_err),
        Err(bench_err) => return Err(bench_err.into()),
    };
    let (cpus, _) = a.place.choose()?;
    let plans = targets
        .into_iter()
        .map(|(t, shape)| Ok((t, placement::plan(a.place.placement, shape, &cpus)?)))
        .collect::<Result<Vec<_>, InputError>>()?;
    let stop = engine::stop_flag()?;
    let engine = Engine {
        worker_exe: worker_exe()?,
        stop: &stop,
    };
    struct Say(f64);
    impl Sink for Say {
        fn event(&mut self, e: Event<'_>) {
            if let Event::TargetStarted { id, .. } = e {
                say!("sysperf: profiling {id} for about {} s", self.0);
            }
        }
    }
    let budget = Budget::profile_calibration(Duration::from_secs_f64(a.timeout));
    let profiles = match engine.profile(
        &plans,
        a.place.placement,
        &cpus,
        budget,
        a.seconds,
        &mut Say(a.seconds),
    ) {
        Ok(p) => p,
        Err(profile::ProfileError::Interrupted) => {
            say!("sysperf: interrupted; nothing profiled was kept");
            return Ok(engine::interrupted_code());
        }
        Err(e) => return Err(e.into()),
    };
    write_flame_graph(&profiles, a.svg.as_deref(), None)?;
    print_profiles(&profiles, a.top as usize, a.json, None)
}

/// `sysperf profile --system DURATION`: the whole machine, sampled, stored as an observation.
fn system_profile(a: &ProfileArgs, duration: &str) -> Result<i32> {
    use sysperf::profile::system;
    let duration = system::parse_duration(duration).map_err(|why| InputError::InvalidValue {
        what: "--system",
        value: duration.to_string(),
        why,
    })?;
    system::check_access()?;
    let syms = profile::kallsyms::Kallsyms::load()
        .map_err(|e| anyhow::anyhow!("cannot profile the kernel: {e}"))?;
    // The store is opened first, so a store that cannot be written costs no sampling.
    let store = catalog::open_store(a.db.db.as_ref())?;
    let functions = a
        .functions
        .as_deref()
        .map(profile::calls::parse_names)
        .transpose()
        .map_err(|why| InputError::InvalidValue {
            what: "--functions",
            value: a.functions.clone().unwrap_or_default(),
            why,
        })?;
    // The calls are counted while the machine is sampled; a refusal is said, not fatal.
    let counter = match &functions {
        Some(names) => match profile::calls::Counter::start(names) {
            Ok(c) => Some(Ok(c)),
            Err(why) => {
                say!("sysperf: cannot count the functions' calls: {why}; their times come from the samples only");
                Some(Err(why))
            }
        },
        None => None,
    };
    let stop = engine::stop_flag()?;
    say!(
        "sysperf: sampling every CPU for {} s; Ctrl-C ends it early and keeps what was sampled",
        duration.as_secs_f64()
    );
    let bar = system_progress_bar(duration);
    let opts = system::Options {
        duration,
        stack_cap: a.stack_cap as usize,
        label: a.label.clone(),
    };
    let mut tick = |elapsed: Duration, _total: Duration, samples: u64| {
        bar.set_position(elapsed.as_secs());
        bar.set_message(format!("{samples} samples"));
    };
    let mut p = system::observe(&opts, &syms, &stop, &mut tick)?;
    bar.finish_and_clear();
    if let (Some(names), Some(counter)) = (&functions, counter) {
        let counted = counter.and_then(|c| c.stop());
        let (calls, why) = match &counted {
            Ok(c) => (Some(&c[..]), None),
            Err(why) => (None, Some(why.as_str())),
        };
        p.functions = profile::calls::function_times(&p, names, calls, why.unwrap_or_default());
        p.functions_method = profile::calls::method(&p, calls, why);
    }
    p.id = engine::new_run_id()?;
    store
        .save_observation(&p)
        .context("storing the system profile")?;
    print_system_profile(store.as_ref(), &p, a.top as usize, a.json)?;
    say!(
        "sysperf: stored as observation {} (sysperf show {})",
        p.id,
        p.id
    );
    if p.interrupted {
        say!(
            "sysperf: interrupted after {} s; what was sampled is shown and stored",
            p.wall_ns / 1_000_000_000
        );
        return Ok(engine::interrupted_code());
    }
    Ok(exit::OK)
}

/// A system profile with the benchmarks that isolate its hottest functions (from the
/// benchmark profiles in `store`).
fn print_system_profile(
    store: &dyn store::Backend,
    p: &profile::system::SystemProfile,
    top: usize,
    json: bool,
) -> Result<i32> {
    let benchmarks = store.benchmark_profiles()?;
    let iso = profile::isolate::isolate(p, &benchmarks, profile::isolate::HOT_FUNCTIONS);
    if json {
        print_json(&report::system::json_document(p, top, &iso))
    } else {
        print(&report::system::render(p, top, &iso))
    }
}

/// A progress bar in seconds of the profile's duration, with its ETA (hidden off a terminal).
fn system_progress_bar(duration: Duration) -> indicatif::ProgressBar {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    use std::io::IsTerminal;
    let bar = ProgressBar::new(duration.as_secs().max(1));
    if !std::io::stderr().is_terminal() {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    } else if let Ok(style) =
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} s, ETA {eta}  {msg}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// `sysperf profile RUN`: the profiles stored with a run.
fn stored_profiles(a: &ProfileArgs, bench_err: InputError) -> Result<i32> {
    let neither = |why: String| {
        let what = format!(
            "'{}' is neither a benchmark nor a stored run ({why})",
            a.target[0]
        );
        Err(anyhow::Error::new(bench_err).context(what))
    };
    let store = match catalog::open_existing_store(a.db.db.as_ref()) {
        Ok(store) => store,
        Err(e @ CatalogError::NoStore { .. }) => return neither(e.to_string()),
        Err(e) => return Err(e.into()),
    };
    let id = match store.resolve(&a.target[0]) {
        Ok(id) => id,
        Err(store::StoreError::NoSuchRun { .. }) => {
            return neither("'sysperf runs' lists those".into())
        }
        Err(e) => return Err(e.into()),
    };
    let profiles = store.load_profiles(&id)?;
    write_flame_graph(&profiles, a.svg.as_deref(), Some(&id))?;
    print_profiles(&profiles, a.top as usize, a.json, Some(&id))
}

/// `profile --svg FILE`: the profiles' flame graph, written without following a link.
fn write_flame_graph(profiles: &[Profile], path: Option<&Path>, run: Option<&str>) -> Result<()> {
    let Some(path) = path else {
        return Ok(());
    };
    let benches: Vec<&str> = profiles.iter().map(|p| p.bench.as_str()).collect();
    let title = match run {
        Some(id) => format!("Kernel profiles of run {id}: {}", benches.join(", ")),
        None => format!("Kernel profile of {}", benches.join(", ")),
    };
    let refs: Vec<&Profile> = profiles.iter().collect();
    let svg = report::flame::svg(&refs, &title, "flamegraph").map_err(|e| match (e, run) {
        (report::flame::FlameError::Empty, Some(id)) => anyhow::anyhow!(
            "run {id} has no profile samples to draw; 'sysperf run --profile' stores them"
        ),
        (e, _) => e.into(),
    })?;
    output::write(path, svg.as_bytes(), 0o644)?;
    say!("sysperf: wrote {}", path.display());
    Ok(())
}

fn print_profiles(profiles: &[Profile], top: usize, json: bool, run: Option<&str>) -> Result<i32> {
    if json {
        print_json(&report::profile::json_document(profiles, top))
    } else if let (true, Some(id)) = (profiles.is_empty(), run) {
        print(&format!(
            "run {id} has no profiles; 'sysperf run --profile' stores them\n"
        ))
    } else {
        let text: String = profiles
            .iter()
            .map(|p| format!("{}\n", report::profile::render(p, top)))
            .collect();
        print(&text)
    }
}

fn trace_cmd(a: TraceArgs) -> Result<i32> {
    if let Some(secs) = a.system {
        let sets = trace::system::parse_sets(a.events.as_deref())?;
        return trace_system(secs, sets, a.buffer_kb, a.json);
    }
    // Everything the user gave is checked before tracefs is touched.
    let id = a.id.as_deref().unwrap_or_default();
    let spec = bench::select_one(id, "trace")?;
    let selection = trace::parse_selection(a.events.as_deref().unwrap_or(trace::DEFAULT_EVENTS))?;
    let (cpus, _) = a.place.choose()?;
    let plan = placement::plan(a.place.placement, spec.shape, &cpus)?;
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
    // Counts from an overwritten ring buffer are not the kernel's: shown, but not a success.
    if traced.report.runs.iter().any(|r| r.lost_events > 0) {
        say!("sysperf: events were lost, so the counts are incomplete; raise --buffer-kb or lower --iterations");
        return Ok(exit::FAILURE);
    }
    Ok(exit::OK)
}

/// `sysperf trace --system DURATION`: the whole machine, with a progress line and an ETA.
fn trace_system(
    secs: f64,
    sets: Vec<&'static str>,
    buffer_kb: Option<u64>,
    json: bool,
) -> Result<i32> {
    let opts = trace::system::SystemOptions {
        duration: Duration::from_secs_f64(secs),
        sets,
        buffer_kb: buffer_kb.unwrap_or(trace::system::DEFAULT_SYSTEM_BUFFER_KB),
    };
    // Ctrl-C and termination end the trace early: the report so far, then 130/143.
    let stop = engine::stop_flag()?;
    let bar = indicatif::ProgressBar::new(opts.duration.as_secs().max(1));
    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "sysperf: tracing {bar:30} {pos}/{len} s, {msg}, {eta} left",
    ) {
        bar.set_style(style);
    }
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

/// Runs `sysperf runs` lists in its table unless --limit says otherwise.
const RUNS_SHOWN: u64 = 50;

fn runs(
    db: DbArg,
    json: bool,
    limit: Option<u64>,
    since: Option<&str>,
    fleet: &FleetArgs,
) -> Result<i32> {
    let sel = Selection::parse(&fleet.wheres, fleet.by.as_deref())?;
    let mut query = sel.query.clone();
    query.since_ns = since.map(sysperf::fleet::parse_since).transpose()?;
    // A table for a person: the newest 50 by default; JSON for a program: all by default.
    let limit = match limit {
        Some(0) => None,
        Some(n) => Some(n),
        None if json || sel.by.is_some() => None,
        None => Some(RUNS_SHOWN),
    };
    query.limit = limit.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    // Listing never creates a store; the default one not made yet holds no runs.
    let (runs, matching, observations) = match catalog::open_existing_store(db.db.as_ref()) {
        Ok(store) => {
            let runs = store.query_runs(&query)?;
            let all = match query.limit {
                Some(n) if runs.len() >= n => store.count_runs(&query)?,
                _ => runs.len() as u64,
            };
            (runs, all, store.list_observations()?)
        }
        Err(CatalogError::NoStore { named: false, .. }) => (Vec::new(), 0, Vec::new()),
        Err(e) => return Err(e.into()),
    };
    if let Some(key) = sel.by {
        let groups =
            sysperf::fleet::group(runs.iter(), key, |r| key.value_of((*r).into()), usize::MAX);
        if json {
            let doc: Vec<_> = groups
                .iter()
                .map(|(value, g)| {
                    serde_json::json!({
                        "key": key.name(),
                        "value": value,
                        "runs": g.len(),
                        "complete": g.iter().filter(|r| r.complete).count(),
                        "newest_ns": g.iter().map(|r| r.started_ns).max(),
                    })
                })
                .collect();
            return print_json(&doc);
        }
        return print(&report::table::runs_groups(key.name(), &groups));
    }
    if json {
        return print_json(&runs);
    }
    let mut text = if runs.is_empty() && sel.is_empty() && since.is_none() {
        "no runs stored yet; 'sysperf run' makes one\n".to_string()
    } else if runs.is_empty() {
        "no stored run matches\n".to_string()
    } else {
        report::table::runs_list(&runs)
    };
    let more = matching.saturating_sub(runs.len() as u64);
    if more > 0 {
        text.push_str(&format!(
            "... and {more} older run{} (--limit N shows more, --limit 0 all)\n",
            if more == 1 { "" } else { "s" }
        ));
    }
    if !observations.is_empty() {
        text.push_str(&report::system::observations_list(&observations));
    }
    text.push_str(&report::table::reference_list(reference::all()?));
    print(&text)
}

/// The observation `spec` names in `store`, when it names no run (nor a reference run) but
/// one observation (`sysperf profile --system`).
fn observation_in(store: &dyn store::Backend, spec: &str) -> Result<Option<String>> {
    if reference::is_name(spec) || store.resolve(spec).is_ok() {
        return Ok(None);
    }
    Ok(store.resolve_observation(spec)?)
}

/// The stored observation `spec` names, with its store. A reference run needs no store; a
/// store that cannot be opened is the runs' path's to report, with its own advice.
fn find_observation(db: &DbArg, spec: &str) -> Result<Option<(Box<dyn store::Backend>, String)>> {
    if reference::is_name(spec) {
        return Ok(None);
    }
    let Ok(store) = catalog::open_existing_store(db.db.as_ref()) else {
        return Ok(None);
    };
    Ok(observation_in(&*store, spec)?.map(|id| (store, id)))
}

/// The ids of two observations, when both names are observations, through the catalog's own
/// connection (each PostgreSQL connection costs round trips, and `compare` of two runs used
/// to open three). A store that cannot be opened is the runs' path's to report.
fn observation_pair(
    catalog: &mut Catalog,
    before: &str,
    after: &str,
) -> Result<Option<(String, String)>> {
    if reference::is_name(before) || reference::is_name(after) {
        return Ok(None);
    }
    let Ok(store) = catalog.store() else {
        return Ok(None);
    };
    let Some(x) = observation_in(store, before)? else {
        return Ok(None);
    };
    Ok(observation_in(store, after)?.map(|y| (x, y)))
}

/// Shares of two observations that moved less than this (percentage points) are not listed.
const OBSERVATION_THRESHOLD_POINTS: f64 = 0.5;

fn gc(db: DbArg) -> Result<i32> {
    let store = catalog::open_existing_store(db.db.as_ref())?;
    if store.is_read_only() {
        anyhow::bail!(
            "{} is a store you may read but not write: run 'sysperf gc' as its owner",
            store.location()
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

fn compare(a: CompareArgs) -> Result<i32> {
    // 1. Every option is checked before any run is loaded.
    let noise = parse_pct("--noise", &a.against.noise)?;
    let gate = a
        .fail_on_regression
        .as_deref()
        .map(|v| parse_pct("--fail-on-regression", v))
        .transpose()?;
    // One connection to the store for everything below (a PostgreSQL connection costs more
    // than a compare's queries).
    let mut catalog = Catalog::new(a.db.db);
    // Two observations of the whole machine compare as profiles, not as runs.
    if let [before, after] = &a.runs[..] {
        if let Some((x, y)) = observation_pair(&mut catalog, before, after)? {
            let store = catalog.store()?;
            let (x, y) = (store.load_observation(&x)?, store.load_observation(&y)?);
            let c = profile::isolate::compare(&x, &y, OBSERVATION_THRESHOLD_POINTS);
            if a.json {
                print_json(&c)?;
            } else {
                print(&report::system::comparison_text(&c, &x, &y))?;
            }
            // Shares of a profile are not measurements with intervals: no gate judges them.
            if gate.is_some() {
                say!("sysperf: --fail-on-regression judges benchmark runs; observations have no intervals to judge");
                return Ok(exit::UNJUDGED);
            }
            return Ok(exit::OK);
        }
    }
    let sel = Selection::parse(&a.fleet.wheres, a.fleet.by.as_deref())?;
    // 2. Compare, print, and gate.
    let (_, c) = catalog.fleet_comparison(&a.runs, a.against.baseline.as_deref(), &sel, noise)?;
    if a.json {
        print_json_text(&report::compare::json(&c))
    } else {
        print(&if a.markdown {
            report::compare::markdown(&c)
        } else if a.csv {
            report::compare::csv(&c)
        } else {
            report::compare::text(&c)
        })
    }
    .context("writing the comparison")?;
    let Some(pct) = gate else {
        return Ok(exit::OK);
    };
    let (regressions, unjudged) = (compare::regressions(&c, pct), compare::unjudged(&c));
    for line in report::compare::gate_lines(&c, &regressions, &unjudged, pct) {
        say!("sysperf: {line}");
    }
    Ok(compare::gate_code(&regressions, &unjudged))
}

fn ab(a: AbArgs) -> Result<i32> {
    // 1. Every option is checked before anything is measured or changed.
    let noise = parse_pct("--noise", &a.noise)?;
    let gate = a
        .fail_on_regression
        .as_deref()
        .map(|v| parse_pct("--fail-on-regression", v))
        .transpose()?;
    let switch =
        engine::switch::Switch::parse(a.switch.as_deref(), a.sysctl.as_deref(), a.on.as_deref())?;
    let mut req = a.request(engine::fresh_seed()?)?;
    if req.label.is_none() {
        let tag = &engine::new_run_id()?[..6];
        req.label = Some(format!("ab-{}-{tag}", switch.name()));
    }
    let plan = RunPlan::resolve(&req, &allowed_cpus()?)?;
    // 2. Both sides, interleaved; the switch is put back whatever happens.
    let stop = engine::stop_flag()?;
    let store = catalog::open_store(a.db.db.as_ref())?;
    let engine = Engine {
        worker_exe: worker_exe()?,
        stop: &stop,
    };
    let mut bar = ProgressSink::new();
    let outcomes = engine.execute_ab(&plan, &switch, store.as_ref(), &mut bar);
    bar.0.finish_and_clear();
    let outcomes = outcomes?;
    let Some(last) = outcomes.last() else {
        return Ok(exit::FAILURE);
    };
    let (off, on) = (
        last.off.label.clone().unwrap_or_default(),
        last.on.label.clone().unwrap_or_default(),
    );
    if last.interrupted {
        say!(
            "sysperf: interrupted; the runs {off} and {on} are kept as incomplete; {} is as it was",
            switch.name()
        );
        return Ok(engine::interrupted_code());
    }
    say!("sysperf: stored as runs {off} and {on} (sysperf compare {off} {on})");
    // 3. The two sides as 'compare' prints them, and the gate.
    drop(store);
    compare(CompareArgs {
        runs: vec![off, on],
        against: sysperf::cli::AgainstArgs {
            baseline: None,
            noise: noise.to_string(),
        },
        fail_on_regression: gate.map(|g| g.to_string()),
        json: a.json,
        markdown: false,
        csv: false,
        db: a.db,
        fleet: FleetArgs::default(),
    })
}

fn noise(a: NoiseArgs) -> Result<i32> {
    let band = parse_pct("--noise", &a.noise)?;
    let plan = RunPlan::resolve(&a.request(engine::fresh_seed()?)?, &allowed_cpus()?)?;
    let stop = engine::stop_flag()?;
    let store = catalog::open_store(a.db.db.as_ref())?;
    let engine = Engine {
        worker_exe: worker_exe()?,
        stop: &stop,
    };
    let mut bar = ProgressSink::new();
    let outcomes = engine.execute_repeated(&plan, store.as_ref(), &mut bar)?;
    bar.0.finish_and_clear();
    if outcomes.iter().any(|o| o.interrupted) {
        say!("sysperf: interrupted; the finished runs are stored");
        return Ok(engine::interrupted_code());
    }
    let runs: Vec<Run> = outcomes.into_iter().map(|o| o.run).collect();
    let rows = compare::noise(&runs, band);
    if a.json {
        print_json(&rows)
    } else {
        print(&report::compare::noise_text(&runs, &rows, band))
    }
}

fn show(spec: &str, db: DbArg, json: bool) -> Result<i32> {
    if let Some((store, id)) = find_observation(&db, spec)? {
        let p = store.load_observation(&id)?;
        return print_system_profile(store.as_ref(), &p, RUN_PROFILE_TOP, json);
    }
    let mut catalog = Catalog::new(db.db);
    let run = catalog.load(spec)?;
    let profiles = catalog.profiles(std::slice::from_ref(&run))?.remove(0);
    let variance = catalog.machine_variance(&run)?;
    print_run(&run, &profiles, Some(&variance), json)?;
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
    if let Some((store, id)) = find_observation(&db, spec)? {
        store.remove_observation(&id)?;
        return print(&format!("removed observation {id}\n"));
    }
    let store = catalog::open_existing_store(db.db.as_ref()).map_err(|e| e.looking_for(spec))?;
    let id = store.resolve(spec)?;
    if store.is_read_only() {
        anyhow::bail!(
            "run {id} is in {}, which you may read but not write: remove it as the store's owner",
            store.location()
        );
    }
    store.remove_run(&id)?;
    print(&format!("removed run {id}\n"))
}

/// Runs `export` loads from the store at a time: memory holds this many, not every run.
const EXPORT_BATCH: usize = 32;

fn export(specs: &[String], output: Option<&Path>, db: DbArg) -> Result<i32> {
    // Every name is resolved first (a typo costs nothing); then the runs are loaded, checked
    // and written one at a time, so memory holds one run however many are exported.
    let mut catalog = Catalog::new(db.db);
    let mut named: Vec<Result<Run, String>> = Vec::with_capacity(specs.len());
    let mut seen = std::collections::HashSet::new();
    for spec in specs {
        let one = match reference::find(spec)? {
            Some(r) => (r.id.clone(), Ok(r.clone())),
            None => {
                let store = catalog.store().map_err(|e| e.looking_for(spec))?;
                let id = store.resolve(spec)?;
                (id.clone(), Err(id))
            }
        };
        // 'latest' and the run's own id name one run; it is exported once.
        if seen.insert(one.0) {
            named.push(one.1);
        }
    }
    let count = named.len();
    let mut write = |out: &mut dyn Write| -> Result<()> {
        let mut w = exchange::ExportWriter::new(out)?;
        let mut ids = Vec::with_capacity(count);
        // A few runs loaded at a time (PostgreSQL reads them together), written one by one.
        for chunk in named.chunks(EXPORT_BATCH) {
            let stored: Vec<&str> = chunk
                .iter()
                .filter_map(|n| n.as_ref().err().map(String::as_str))
                .collect();
            let mut loaded = if stored.is_empty() {
                Vec::new()
            } else {
                catalog.store()?.load_runs(&stored)?
            }
            .into_iter();
            for n in chunk {
                let run = match n {
                    Ok(r) => r.clone(),
                    Err(id) => loaded
                        .next()
                        .with_context(|| format!("internal: run {id} was not loaded"))?,
                };
                w.run(&run)?;
                ids.push((run.id.clone(), run.source == "published"));
            }
        }
        // Everything a run has goes with it: its kernel profiles too (`run --profile`).
        ids.sort();
        for (id, published) in &ids {
            if !published {
                let profiles = catalog.store()?.load_profiles(id)?;
                w.profiles(id, &profiles)?;
            }
        }
        w.finish()?;
        Ok(())
    };
    let Some(path) = output else {
        // The export is JSON; on a terminal it is shown inert like every other output.
        let mut out = TermJson(std::io::stdout().lock());
        write(&mut out).context("writing the export to standard output")?;
        return Ok(exit::OK);
    };
    let mut failed = None;
    output::write_with(path, 0o644, |f| {
        write(f).map_err(|e| {
            failed = Some(e);
            std::io::Error::other("the export stopped")
        })
    })
    .or_else(|e| failed.take().map_or(Err(e.into()), Err))?;
    let plural = if count == 1 { "" } else { "s" };
    say!(
        "sysperf: exported {count} run{plural} to {}",
        path.display()
    );
    Ok(exit::OK)
}

/// A writer that passes JSON text on with its terminal-hostile characters escaped, as
/// [`print_json_text`] does; each write is whole UTF-8 text (`exchange::ExportWriter`'s are).
struct TermJson<W: Write>(W);

impl<W: Write> Write for TermJson<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.0.write_all(sysperf::term::json(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

fn import(files: &[PathBuf], db: DbArg) -> Result<i32> {
    // Every file is read and checked before the store is opened, so a bad file leaves the
    // store as it was (not even created), keeping only each run's id and label; then the
    // files are read again, run by run, and the runs saved in one transaction. One run is
    // held in memory at a time, however many the files hold.
    let mut heads: Vec<(String, Option<String>)> = Vec::new();
    let mut batches = Vec::with_capacity(files.len());
    for path in files {
        let before = heads.len();
        exchange::stream_file(path, &mut |item| -> Result<()> {
            if let exchange::Streamed::Run(run) = item {
                catalog::check_importable_run(heads.len(), &run)?;
                heads.push((run.id, run.label));
            }
            Ok(())
        })
        .map_err(|e| match e.downcast_ref::<ExchangeError>() {
            // A read error names the file already; other problems get it as context.
            Some(ExchangeError::Read { .. }) | None => e,
            Some(_) => e.context(format!("importing {}", path.display())),
        })?;
        batches.push((path, heads.len() - before));
    }
    let store = catalog::open_store(db.db.as_ref())?;
    // One long transaction: a writer that waits for it can say who holds the store.
    store.announce("sysperf import")?;
    let mut saved: Vec<bool> = Vec::with_capacity(heads.len());
    store
        .import_runs(&mut |sink| {
            // Called again from the start if PostgreSQL's connection is lost midway.
            saved.clear();
            let mut new = std::collections::HashSet::new();
            for path in files {
                exchange::stream_file(path, &mut |item| -> Result<(), Fed> {
                    match item {
                        exchange::Streamed::Run(run) => {
                            let stored = sink.run(&run)?;
                            if stored {
                                new.insert(run.id);
                            }
                            saved.push(stored);
                        }
                        exchange::Streamed::Profiles { id, profiles } => {
                            if new.contains(&id) {
                                sink.profiles(&id, &profiles)?;
                            }
                        }
                    }
                    Ok(())
                })
                .map_err(|e| match e {
                    Fed::Store(e) => e,
                    Fed::File(e) => {
                        store::StoreError::Feed(format!("importing {} again: {e}", path.display()))
                    }
                })?;
            }
            Ok(())
        })
        .context("saving the imported runs (nothing was stored)")?;
    let heads = heads
        .iter()
        .map(|(id, label)| (id.as_str(), label.as_deref()));
    print(&exchange::import_lines(&batches, heads, &saved))
}

/// Why [`import`]'s second reading of a file stopped: the store, or the file itself (changed
/// since it was checked).
enum Fed {
    Store(store::StoreError),
    File(ExchangeError),
}

impl From<ExchangeError> for Fed {
    fn from(e: ExchangeError) -> Fed {
        Fed::File(e)
    }
}

impl From<store::StoreError> for Fed {
    fn from(e: store::StoreError) -> Fed {
        Fed::Store(e)
    }
}

/// `sysperf sync SRC DST`: copies the runs DST lacks.
fn sync_cmd(src: &Path, dst: &Path) -> Result<i32> {
    let done = sysperf::sync::sync(src, dst)?;
    let (src, dst) = (sysperf::sync::shown(src), sysperf::sync::shown(dst));
    print(&done.summary(&src, &dst))
}

fn report_cmd(a: ReportArgs) -> Result<i32> {
    let noise = parse_pct("--noise", &a.against.noise)?;
    output::check(&a.output).context("--output")?;
    let sel = Selection::parse(&a.fleet.wheres, a.fleet.by.as_deref())?;
    let mut catalog = Catalog::new(a.db.db);
    let (runs, cmp) =
        catalog.fleet_comparison(&a.runs, a.against.baseline.as_deref(), &sel, noise)?;
    // Profiles stored with a run (`run --profile`) are shown too; reference runs have none.
    let profiles = catalog.profiles(&runs)?;
    let by = sel.by.map(|k| k.name());
    let page = report::html::html_by(&runs, &cmp, &profiles, by);
    output::write(&a.output, page.as_bytes(), 0o644)?;
    say!("sysperf: wrote {}", a.output.display());
    Ok(exit::OK)
}

fn plot(a: PlotArgs) -> Result<i32> {
    // The format and the group are checked first, so a typo costs nothing.
    let format = plot::format_of(&a.output)?;
    output::check(&a.output).context("--output")?;
    if let Some(g) = &a.group {
        plot::check_group(g)?;
    }
    let what = match (&a.figure, &a.test, &a.group) {
        _ if a.heatmap => What::Heatmap,
        (Some(f), _, _) => What::Figure(f),
        (None, Some(t), _) => What::Test(t),
        (None, None, Some(g)) => What::Group(g),
        // clap requires one of the three; kept total rather than unreachable!().
        (None, None, None) => {
            return Err(InputError::InvalidValue {
                what: "arguments",
                value: String::new(),
                why: "give --test ID, --group NAME or --figure ID".into(),
            }
            .into())
        }
    };
    let sel = Selection::parse(&a.fleet.wheres, a.fleet.by.as_deref())?;
    let figure = if a.heatmap {
        // Columns as compare makes them: groups of replicated runs, or --by groups.
        let (_, cmp) = Catalog::new(a.db.db).fleet_comparison(
            &a.runs,
            None,
            &sel,
            compare::DEFAULT_NOISE_PCT,
        )?;
        plot::heatmap(&cmp)?
    } else if !sel.is_empty() {
        let columns = Catalog::new(a.db.db).select_columns(&a.runs, None, &sel)?;
        let firsts: Vec<Run> = columns
            .into_iter()
            .filter_map(|c| c.into_iter().next())
            .collect();
        plot::figure(&firsts, what)?
    } else {
        let runs = Catalog::new(a.db.db).load_with_baseline(&a.runs, None)?;
        plot::figure(&runs, what)?
    };
    let bytes = match format {
        plot::Format::Png => {
            let image = report::png::render(&figure.document(), report::png::system_fonts())?;
            if !image.has_text {
                say!("sysperf: warning: no fonts found, so the PNG has no text; install one (Debian: apt-get install fonts-dejavu-core) or write .svg");
            }
            image.bytes
        }
        plot::Format::Svg => figure.document().into_bytes(),
    };
    output::write(&a.output, &bytes, 0o644)?;
    say!("sysperf: wrote {}", a.output.display());
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
    let stop = engine::stop_flag()?;
    say!("sysperf: {}", watch::papers_note(opts.disk));
    let mut out = std::io::stdout().lock();
    watch::run(&opts, &stop, &mut out).context("watching the kernel's counters")?;
    Ok(exit::OK)
}

fn jitter_cmd(a: JitterArgs) -> Result<i32> {
    let allowed = sysperf::sys::get_affinity().context("reading this process's CPU affinity")?;
    let cpus = if a.cpu.is_empty() {
        allowed
    } else {
        if let Some(bad) = a.cpu.iter().find(|c| !allowed.contains(c)) {
            return Err(InputError::InvalidValue {
                what: "--cpu",
                value: bad.to_string(),
                why: format!(
                    "this process may run on CPUs {}; choose among them",
                    allowed
                        .iter()
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join(",")
                ),
            }
            .into());
        }
        a.cpu.clone()
    };
    let report = jitter::measure(&cpus, a.seconds, a.threshold_ns)
        .context("spinning on the clock (pinning a thread to each CPU)")?;
    let fp = sysperf::fingerprint::collect();
    if a.json {
        return print_json(&serde_json::json!({
            "format": "sysperf-jitter",
            "format_version": 1,
            "hz": fp.hz,
            "nohz": fp.nohz,
            "clocksource": fp.clocksource,
            "report": report,
        }));
    }
    print(&jitter::render(&report, fp.hz))
}

fn doctor(json: bool, db: DbArg) -> Result<i32> {
    let (mut facts, _) = doctor::examine();
    facts.variance = catalog::stored_variance(db.db.as_ref(), &facts.fingerprint)?;
    let findings = doctor::diagnose(&facts);
    if json {
        print_json(&serde_json::json!({
            "format": "sysperf-doctor",
            "format_version": 1,
            "findings": findings,
            "facts": facts,
        }))
    } else {
        print(&doctor::render(&facts, &findings))
    }
}

fn man(dir: &Path) -> Result<i32> {
    if !dir.is_dir() {
        return Err(InputError::InvalidValue {
            what: "DIR",
            value: dir.display().to_string(),
            why: "is not a directory; create it first (mkdir -p)".into(),
        }
        .into());
    }
    let pages = sysperf::cli::man_pages().context("rendering the man pages")?;
    for (name, roff) in &pages {
        output::write(&dir.join(name), roff, 0o644)?;
    }
    say!(
        "sysperf: wrote {} man pages to {}",
        pages.len(),
        dir.display()
    );
    Ok(exit::OK)
}

fn job(which: &str, output: &Path) -> Result<i32> {
    let bytes = match which {
        "big" => bench::exec::BIG_JOB,
        _ => bench::exec::NULL_JOB,
    };
    output::write(output, bytes, 0o755)?;
    Ok(exit::OK)
}
