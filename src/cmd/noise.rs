//! `sysperf noise`: an A/A experiment. K runs of a selection, stored, then the variance within
//! and between them, the false verdicts among them and the smallest detectable change.

use super::args::{allowed_cpus, or_noise_default, parse_pct, DbArg, PlaceArgs};
use super::out::{engine, print, print_json};
use super::progress::Trials;
use super::Result;
use clap::Args as ClapArgs;
use sysperf::engine::{self, RunPlan, RunRequest};
use sysperf::model::Run;
use sysperf::{catalog, compare, report};

#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Benchmark ids or globs (default: syscall csw pipeback4 forks0 execs0null seqpage).
    pub(crate) selection: Vec<String>,
    /// Runs to make (2-100).
    #[arg(long, value_name = "K", default_value_t = 5, value_parser = clap::value_parser!(u32).range(2..=100))]
    pub(crate) runs: u32,
    /// Counted trials per benchmark in each run (1-1000; default 5).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) trials: Option<u32>,
    /// Label of the runs (default: repeat-GROUP).
    #[arg(long, value_name = "TEXT")]
    pub(crate) label: Option<String>,
    /// Noise band in percent for the false-verdict count, as compare's --noise.
    #[arg(
        long,
        value_name = "PCT",
        default_value = "2",
        allow_negative_numbers = true
    )]
    pub(crate) noise: String,
    #[command(flatten)]
    pub(crate) place: PlaceArgs,
    #[command(flatten)]
    pub(crate) db: DbArg,
    /// Print the result as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

impl Args {
    fn request(&self, seed: u64) -> Result<RunRequest> {
        Ok(RunRequest {
            selection: or_noise_default(&self.selection),
            trials: self.trials,
            placement: self.place.placement,
            cpus: self.place.cpus()?,
            label: self.label.clone(),
            seed,
            repeat: self.runs,
            ..RunRequest::default()
        })
    }
}

pub(crate) fn exec(a: Args) -> Result<i32> {
    let band = parse_pct("--noise", &a.noise)?;
    let plan = RunPlan::resolve(&a.request(engine::fresh_seed()?)?, &allowed_cpus()?)?;
    let stop = engine::stop_flag()?;
    let store = catalog::open_store(a.db.db.as_ref())?;
    let bar = &mut Trials::new();
    let outcomes = engine(&stop)?.execute_repeated(&plan, store.as_ref(), bar)?;
    bar.finish();
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
