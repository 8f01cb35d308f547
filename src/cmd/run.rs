//! `sysperf run`: the whole pipeline. Resolve the plan, open the store, let the engine
//! execute it with the progress bar as its sink, print the run, exit as the run went.

use super::args::{parse_seconds, DbArg, ExportArgs, PlaceArgs};
use super::failure::with_spool;
use super::out::{engine, print, print_json, spooled_into, write_exports};
use super::progress::Trials;
use super::shared::{print_run, RUN_PROFILE_TOP};
use super::Result;
use clap::Args as ClapArgs;
use sysperf::engine::{self, RunPlan, RunRequest};
use sysperf::error::InputError;
use sysperf::model::VarianceEstimate;
use sysperf::{catalog, report, suite};

#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Benchmark ids or globs (default: all, or none when --suite is given).
    pub(crate) selection: Vec<String>,
    #[arg(long, value_name = "NAME", help = suite_help())]
    pub(crate) suite: Vec<String>,
    /// Counted trials per benchmark (1-1000; default 5). With several benchmarks they run in
    /// rounds: each round runs one trial of every benchmark, in a shuffled order. Also
    /// spelled --runs, hyperfine's name for it (a stored run of several is --repeat).
    #[arg(long, visible_alias = "runs", value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) trials: Option<u32>,
    /// Warm-up trials before the counted ones: 1, the default (after calibration, which runs
    /// the benchmark until a trial lasts --min-time, the benchmark's caches are warm), or 0
    /// with --quick (hyperfine's --warmup; a longer warm-up is a longer --min-time).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub(crate) warmup: Option<i64>,
    /// Minimum duration of one trial in seconds (default 0.1); iterations grow until a trial
    /// lasts this long.
    #[arg(long, value_name = "S", allow_negative_numbers = true, value_parser = parse_seconds)]
    pub(crate) min_time: Option<f64>,
    /// One short trial per benchmark (0.01 s, no warm-up): a smoke test, not a measurement.
    /// Not combined with --trials or --min-time.
    #[arg(long)]
    pub(crate) quick: bool,
    /// Run each benchmark's trials back to back instead of in shuffled rounds (the order of
    /// sysperf's first runs; trials then describe one moment of the machine, not the whole run).
    #[arg(long)]
    pub(crate) sequential: bool,
    /// Leave out the host-speed reference, a user-space loop run as one more trial of every
    /// round ('hostspeed'), from which 'compare' gives speed-adjusted ratios beside the raw
    /// ones. Quick and --sequential runs never carry it.
    #[arg(long)]
    pub(crate) no_reference: bool,
    /// Seed of the shuffled order of the trials (default: random; the run stores it).
    #[arg(long, value_name = "N")]
    pub(crate) seed: Option<u64>,
    /// Print the plan (what would run, where, with which budget) and run nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// Make N runs of the selection, one after the other, stored as one group under the same
    /// label: 'sysperf compare' takes a label with several runs as a group, and its interval
    /// then covers the run-to-run variance too (1-1000).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) repeat: u32,
    /// Add rounds of trials until every benchmark's 95% interval half-width is at most PCT%
    /// of its median (or --max-time runs out, and then name those that did not get there).
    #[arg(long, value_name = "PCT", allow_negative_numbers = true)]
    pub(crate) precision: Option<f64>,
    /// With --precision: how long rounds may go on, in seconds (default 300).
    #[arg(long, value_name = "S", allow_negative_numbers = true, value_parser = parse_seconds)]
    pub(crate) max_time: Option<f64>,
    /// Before the run, flush dirty pages and wait up to S seconds until the machine is quiet
    /// (CPUs under 10% busy over a second, under 64 MiB waiting to be written): the first run
    /// after a compile or a test suite otherwise differs from the next. Say it for runs you
    /// will compare, such as '--settle 60'.
    #[arg(long, value_name = "S", allow_negative_numbers = true, value_parser = parse_seconds)]
    pub(crate) settle: Option<f64>,
    #[command(flatten)]
    pub(crate) place: PlaceArgs,
    /// A label to find the run by later (sysperf show LABEL).
    #[arg(long, value_name = "TEXT")]
    pub(crate) label: Option<String>,
    /// Kill and record as failed any trial running longer than this many seconds.
    #[arg(long, value_name = "S", default_value_t = 60.0, allow_negative_numbers = true, value_parser = parse_seconds)]
    pub(crate) timeout: f64,
    /// Count the trials: system-wide /proc deltas (interrupts, softirqs, vmstat, disk I/O) in
    /// every trial; perf_event_open counters of the worker and its children (task clock,
    /// context switches, migrations, page faults; cycles and instructions where the CPU has
    /// them) in the warm-up trial, since they slow switches and forks (every trial if --quick).
    #[arg(long)]
    pub(crate) observe: bool,
    /// After measuring each benchmark, profile the kernel during one extra trial and store
    /// the profile with the run (see 'sysperf profile').
    #[arg(long)]
    pub(crate) profile: bool,
    /// How long each --profile trial runs, in seconds.
    #[arg(long, value_name = "S", default_value_t = 1.0, allow_negative_numbers = true, value_parser = parse_seconds)]
    pub(crate) profile_seconds: f64,
    #[command(flatten)]
    pub(crate) exports: ExportArgs,
    #[command(flatten)]
    pub(crate) db: DbArg,
    /// Print the whole run as one JSON document instead of the table.
    #[arg(long)]
    pub(crate) json: bool,
}

/// `--suite`'s help, naming every suite of the registry.
fn suite_help() -> String {
    let names: Vec<&str> = suite::suites().iter().map(|s| s.name).collect();
    format!(
        "Run a suite of the papers' other studies, as curves of x against y: {}, or all; or one figure (net.latency: the series it draws), series (scaling.poll) or point (bbn.pipe@65536), globs allowed (repeatable; `sysperf list --suites` lists them)",
        names.join(", ")
    )
}

impl Args {
    /// What the user asked for, as the engine takes it; `seed` when --seed was not given.
    fn request(&self, seed: u64) -> Result<RunRequest> {
        Ok(RunRequest {
            selection: self.selection.clone(),
            suites: self.suite.clone(),
            trials: self.trials,
            min_time_s: self.min_time,
            quick: self.quick,
            smoke: false,
            placement: self.place.placement,
            cpus: self.place.cpus()?,
            label: self.label.clone(),
            timeout_s: self.timeout,
            observe: self.observe,
            profile_seconds: self.profile.then_some(self.profile_seconds),
            seed: self.seed.unwrap_or(seed),
            interleave: !self.sequential,
            repeat: self.repeat,
            precision_pct: self.precision,
            max_time_s: self.max_time,
            settle_s: self.settle,
            reference: !self.no_reference,
        })
    }
}

/// `--warmup N` as far as sysperf's budget has it: one warm-up trial, none with --quick.
fn check_warmup(a: &Args) -> Result<()> {
    let fits = match a.warmup {
        None => true,
        Some(n) => n == i64::from(!a.quick),
    };
    if fits {
        return Ok(());
    }
    Err(sysperf::error::InputError::InvalidValue {
        what: "--warmup",
        value: a.warmup.unwrap_or_default().to_string(),
        why: format!(
            "sysperf warms a benchmark up by calibrating it (it runs until a trial lasts --min-time) and then runs {}; a longer warm-up is a longer --min-time (run --min-time 1)",
            if a.quick { "no warm-up trial with --quick (--warmup 0)" } else { "one warm-up trial (--warmup 1)" }
        ),
    }
    .into())
}

pub(crate) fn exec(a: Args) -> Result<i32> {
    // 1. Every decision before anything starts: what, where, with which budget and order.
    check_warmup(&a)?;
    not_a_command(&a.selection)?;
    let mut plan = RunPlan::resolve(
        &a.request(engine::fresh_seed()?)?,
        &super::args::allowed_cpus()?,
    )?;
    a.exports.check()?;
    if a.dry_run {
        return if a.json {
            print_json(&plan.document())
        } else {
            print(&plan.render())
        };
    }
    // 2. Ctrl-C and termination stop the run between trials; workers are killed, never left.
    let stop = engine::stop_flag()?;
    let store = catalog::open_store_to_measure(a.db.db.as_ref())?;
    let opened = store.location();
    store.announce("sysperf run")?;
    // A spool file an earlier run left when the shared store was away goes up now (#35).
    sysperf::sync::upload_waiting_once(Some(store.as_ref()));
    // `--precision` waits for the interval of a comparison, this machine's run-to-run part
    // included where it is known for runs made like this one.
    if plan.precision_pct.is_some() {
        plan.run_cv = catalog::run_cv(store.as_ref(), &plan.params)?;
    }
    // 3. Measure and store, with a progress bar as the sink of the engine's events.
    let bar = &mut Trials::new();
    let outcomes = engine(&stop)?.execute_repeated(&plan, store.as_ref(), bar)?;
    bar.finish();
    let variance = sysperf::ops::record_variance(store.as_ref(), &outcomes);
    // 4. Print: the run, or with --repeat each run (as a JSON array with --json).
    if a.json && outcomes.len() > 1 {
        print_json(&repeated_document(&outcomes, &variance))?;
    } else {
        for o in &outcomes {
            print_run(&o.run, &o.profiles, Some(&variance), a.json)?;
        }
    }
    // 5. Say what was stored, and what was left out; the exit code says how the run went.
    let spool = spooled_into(&opened, store.as_ref());
    if let Some(outcome) = outcomes.last() {
        let run = &outcome.run;
        if let (true, Some(l)) = (outcomes.len() > 1, &run.label) {
            let n = outcomes.len();
            say!("sysperf: stored {n} runs labelled '{l}' ('sysperf compare {l} ...' takes them as one group)");
        }
        if outcome.interrupted {
            say!(
                "sysperf: interrupted; run {} kept as incomplete with {} benchmarks",
                run.id,
                run.results.len()
            );
        } else if let Some(spool) = &spool {
            say!(
                "sysperf: run {} is NOT in the shared store {opened}: the server could not be reached, so the run is kept in the spool file {} on this host; nothing uploads it by itself: the next sysperf command on this host that opens that store (run, ab, doctor, runs, show, sync...; on a fleet host, the playbook's timer) uploads it once the server is back ('sysperf sync {} {opened}' does it by hand; exit code {})",
                run.id,
                spool.display(),
                spool.display(),
                sysperf::exit::SPOOLED
            );
        } else {
            say!(
                "sysperf: stored as run {} (sysperf show {})",
                run.id,
                run.id
            );
        }
        if !outcome.interrupted {
            for m in engine::left_out(&outcomes) {
                say!("sysperf: left out: {m}");
            }
        }
        // The files of --export-*: the group with --repeat, else the run.
        let spec = match (&run.label, outcomes.len() > 1) {
            (Some(l), true) => l.clone(),
            _ => run.id.clone(),
        };
        let json = if outcomes.len() > 1 {
            serde_json::to_string_pretty(&repeated_document(&outcomes, &variance))?
        } else {
            serde_json::to_string_pretty(&report::json::show_document(
                run,
                &outcome.profiles,
                Some(&variance),
                RUN_PROFILE_TOP,
            ))?
        };
        // A spooled run is read back from its spool file: the shared store does not hold it.
        let db = spool.clone().or_else(|| a.db.db.clone());
        write_exports(&a.exports, &spec, &(json + "\n"), db)?;
    }
    Ok(with_spool(engine::exit_code(&outcomes), spool.is_some()))
}

/// A command line where a benchmark id goes, or the `command` benchmark alone (which has
/// nothing to run without one): a usage error pointing to `sysperf ab`, which times commands
/// (#43).
fn not_a_command(selection: &[String]) -> Result<(), InputError> {
    for p in selection {
        let why = if p == "command" {
            "the command benchmark times the command lines given to 'sysperf ab' and has nothing to run by itself: time a command with 'sysperf ab \"CMD\"' (two or more to compare them, as hyperfine does)".to_string()
        } else if p.trim().contains(char::is_whitespace) {
            format!("a command line, not a benchmark id: time it with 'sysperf ab \"{p}\"' (two or more commands to compare them, as hyperfine does); 'sysperf list' shows the benchmark ids")
        } else {
            continue;
        };
        return Err(InputError::InvalidValue {
            what: "benchmark",
            value: p.clone(),
            why,
        });
    }
    Ok(())
}

/// The runs of `--repeat` as one JSON document (an array), each with the machine's variance
/// as the runs left it.
fn repeated_document(
    outcomes: &[engine::RunOutcome],
    variance: &[VarianceEstimate],
) -> serde_json::Value {
    report::json::repeated_runs_document(outcomes.iter().map(|o| (&o.run, variance)))
}
