//! `sysperf noise`: an A/A experiment. K runs of a selection, stored, then the variance within
//! and between them, the false verdicts among them and the smallest detectable change.

use super::args::{allowed_cpus, or_noise_default, DbArg, PlaceArgs, ThresholdArg};
use super::out::{engine, print, print_json};
use super::progress::Trials;
use super::Result;
use clap::Args as ClapArgs;
use sysperf::engine::{self, RunPlan, RunRequest};
use sysperf::error::InputError;
use sysperf::model::Run;
use sysperf::{catalog, compare, report};

#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Benchmark ids or globs (default: syscall csw pipeback4 forks0 execs0null seqpage).
    pub(crate) selection: Vec<String>,
    /// Runs to make (2-100; default 5, 3 with --quick).
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(2..=100))]
    pub(crate) runs: Option<u32>,
    /// Counted trials per benchmark in each run (2-1000; default 5): the variance within a
    /// run needs two or more.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) trials: Option<u32>,
    /// The smallest call that estimates anything, as a smoke test of the command (not a
    /// measurement of the machine): 3 runs of 3 trials of 0.01 s each. Not combined with
    /// --trials.
    #[arg(long, conflicts_with = "trials")]
    pub(crate) quick: bool,
    /// Label of the runs (default: repeat-GROUP).
    #[arg(long, value_name = "TEXT")]
    pub(crate) label: Option<String>,
    #[command(flatten)]
    pub(crate) threshold: ThresholdArg,
    #[command(flatten)]
    pub(crate) place: PlaceArgs,
    #[command(flatten)]
    pub(crate) db: DbArg,
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

/// What `--quick` makes: the fewest runs and trials that give each variance component a
/// degree of freedom or two, of trials as short as `run --quick`'s.
const QUICK_RUNS: u32 = 3;
const QUICK_TRIALS: u32 = 3;
const QUICK_MIN_TIME_S: f64 = 0.01;

/// The smallest call worth making, said whenever nothing can be estimated.
const SMALLEST: &str = "the smallest useful call is 'sysperf noise syscall --runs 2 --trials 2', or 'sysperf noise --quick' (3 runs of 3 short trials: a smoke test); the default, 5 runs of 5 trials, is a measurement";

impl Args {
    fn runs(&self) -> u32 {
        self.runs.unwrap_or(if self.quick { QUICK_RUNS } else { 5 })
    }

    fn request(&self, seed: u64) -> Result<RunRequest> {
        if self.trials == Some(1) {
            return Err(InputError::InvalidValue {
                what: "--trials",
                value: "1".into(),
                why: format!("noise estimates the variance within a run from its trials, and one trial has none; {SMALLEST}"),
            }
            .into());
        }
        Ok(RunRequest {
            selection: or_noise_default(&self.selection),
            trials: self.trials.or(self.quick.then_some(QUICK_TRIALS)),
            min_time_s: self.quick.then_some(QUICK_MIN_TIME_S),
            smoke: self.quick,
            placement: self.place.placement,
            cpus: self.place.cpus()?,
            label: self.label.clone(),
            seed,
            repeat: self.runs(),
            ..RunRequest::default()
        })
    }
}

pub(crate) fn exec(a: Args) -> Result<i32> {
    let band = a.threshold.pct()?;
    let plan = RunPlan::resolve(&a.request(engine::fresh_seed()?)?, &allowed_cpus()?)?;
    let stop = engine::stop_flag()?;
    let store = catalog::open_store(a.db.db.as_ref())?;
    let bar = &mut Trials::new();
    let outcomes = engine(&stop)?.execute_repeated(&plan, store.as_ref(), bar)?;
    bar.finish();
    sysperf::ops::record_variance(store.as_ref(), &outcomes);
    if outcomes.iter().any(|o| o.interrupted) {
        say!("sysperf: interrupted; the finished runs are stored");
        return Ok(engine::interrupted_code());
    }
    let runs: Vec<Run> = outcomes.into_iter().map(|o| o.run).collect();
    let rows = compare::noise(&runs, band);
    if rows.is_empty() {
        say!("sysperf: nothing could be estimated: each test needs 2 or more successful trials in each of 2 or more runs, and none had them (failed or interrupted trials do not count); {SMALLEST}");
    } else if a.quick {
        say!("sysperf: --quick: a smoke test of 'noise', not a measurement of this machine (3 runs of 3 trials of 0.01 s); drop --quick to measure");
    }
    if a.json {
        print_json(&rows)
    } else {
        print(&report::compare::noise_text(&runs, &rows, band))
    }
}
