//! `sysperf profile`: the kernel profiled while benchmarks run (nothing stored), the profiles
//! stored with a run, or with `--system` the whole machine, stored as an observation.

use super::args::{parse_seconds, DbArg, PlaceArgs};
use super::failure::{failure, Context};
use super::out::{engine, print, print_json};
use super::progress;
use super::shared::print_system_profile;
use super::Result;
use clap::Args as ClapArgs;
use std::path::{Path, PathBuf};
use std::time::Duration;
use sysperf::catalog::{self, CatalogError};
use sysperf::engine::{self, Budget, Event, Sink};
use sysperf::error::InputError;
use sysperf::model::Profile;
use sysperf::profile::{self, kallsyms::Kallsyms, system};
use sysperf::{exit, output, report, store, units};

#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Benchmark ids or globs, or suite points, series or suites (as `run --suite` takes
    /// them: scaling.path-depth@8) to profile now, or one stored run whose profiles to print.
    #[arg(
        required_unless_present = "system",
        conflicts_with = "system",
        value_name = "TARGET"
    )]
    pub(crate) target: Vec<String>,
    /// Profile the whole machine instead of a benchmark, for DURATION (3, 10s, 5m, 1h): every
    /// CPU, every process, stored as an observation (see `sysperf runs`). Needs root or
    /// CAP_PERFMON (or kernel.perf_event_paranoid <= 0).
    #[arg(long, value_name = "DURATION")]
    pub(crate) system: Option<String>,
    /// With --system: the most distinct kernel stacks kept (memory stays bounded however long
    /// it runs); samples of new stacks past it are counted under [other].
    #[arg(long, value_name = "N", default_value_t = system::DEFAULT_STACK_CAP as u32, requires = "system", value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    pub(crate) stack_cap: u32,
    /// With --system: count the calls of these kernel functions with the function tracer and
    /// give their time per call (the 4.2BSD paper's Tables 4, 9, 10); without a list, the
    /// path-lookup functions.
    #[arg(long, value_name = "LIST", requires = "system", num_args = 0..=1, default_missing_value = profile::calls::DEFAULT)]
    pub(crate) functions: Option<String>,
    /// With --system: a label to find the observation by.
    #[arg(long, requires = "system")]
    pub(crate) label: Option<String>,
    /// How long the profiled trial of each benchmark runs, in seconds.
    #[arg(long, value_name = "S", default_value_t = 2.0, allow_negative_numbers = true, value_parser = parse_seconds)]
    pub(crate) seconds: f64,
    /// Lines of flat profile to print (the call graph shows at most 12 functions).
    #[arg(long, value_name = "N", default_value_t = 25, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub(crate) top: u32,
    #[command(flatten)]
    pub(crate) place: PlaceArgs,
    /// Kill a trial running longer than this many seconds past --seconds.
    #[arg(long, value_name = "S", default_value_t = 60.0, allow_negative_numbers = true, value_parser = parse_seconds)]
    pub(crate) timeout: f64,
    #[command(flatten)]
    pub(crate) db: DbArg,
    /// Print the profiles as one JSON document (folded stacks, flat profile, call graph).
    #[arg(long)]
    pub(crate) json: bool,
    /// Also draw the profiles' folded stacks as a flame graph into FILE (a static SVG: no
    /// script; hover a frame for its function and samples).
    #[arg(long, value_name = "FILE")]
    pub(crate) svg: Option<PathBuf>,
}

pub(crate) fn exec(a: Args) -> Result<i32> {
    if let Some(d) = &a.system {
        return whole_machine(&a, d);
    }
    if let Some(path) = &a.svg {
        output::check(path).context("--svg")?;
    }
    // A selection of benchmarks or suite points profiles now; otherwise the target names a
    // stored run.
    let targets = match engine::profile_targets(&a.target) {
        Ok(targets) => targets,
        Err(bench_err) if a.target.len() == 1 => return stored(&a, bench_err),
        Err(bench_err) => return Err(bench_err.into()),
    };
    let placing = a.place.placing()?;
    let plans = targets
        .into_iter()
        .map(|(t, shape)| Ok((t, placing.plan(shape)?)))
        .collect::<Result<Vec<_>, InputError>>()?;
    let stop = engine::stop_flag()?;
    struct Say(f64);
    impl Sink for Say {
        fn event(&mut self, e: Event<'_>) {
            if let Event::TargetStarted { id, .. } = e {
                say!("sysperf: profiling {id} for about {} s", self.0);
            }
        }
    }
    let budget = Budget::profile_calibration(Duration::from_secs_f64(a.timeout));
    let profiles = match engine(&stop)?.profile(
        &plans,
        placing.mode,
        &placing.cpus,
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
fn whole_machine(a: &Args, duration: &str) -> Result<i32> {
    let secs =
        units::parse_seconds(duration, &units::SPAN).map_err(|why| InputError::InvalidValue {
            what: "--system",
            value: duration.to_string(),
            why,
        })?;
    system::check_access()?;
    let syms = Kallsyms::load().map_err(|e| failure(format!("cannot profile the kernel: {e}")))?;
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
    let stop = engine::stop_flag()?;
    let opts = system::Options {
        duration: Duration::from_secs_f64(secs),
        stack_cap: a.stack_cap as usize,
        label: a.label.clone(),
    };
    let bar = progress::seconds(opts.duration);
    let mut tick = |elapsed: Duration, _total: Duration, samples: u64| {
        bar.set_position(elapsed.as_secs());
        bar.set_message(format!("{samples} samples"));
    };
    let p = system::record(
        &opts,
        functions.as_deref(),
        &syms,
        store.as_ref(),
        engine::new_run_id()?,
        &stop,
        &mut tick,
    );
    bar.finish_and_clear();
    let p = p?;
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

/// `sysperf profile RUN`: the profiles stored with a run.
fn stored(a: &Args, bench_err: InputError) -> Result<i32> {
    let neither = |why: String| -> Result<i32> {
        let what = format!(
            "'{}' is neither a benchmark nor a stored run ({why})",
            a.target[0]
        );
        Err(bench_err).context(what)
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
        (report::flame::FlameError::Empty, Some(id)) => failure(format!(
            "run {id} has no profile samples to draw; 'sysperf run --profile' stores them"
        )),
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
