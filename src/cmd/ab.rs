//! `sysperf ab`: a selection measured with a runtime switch off and on, interleaved, stored as
//! two runs, then printed side by side as `compare` prints them, with its gate.

use super::args::{allowed_cpus, or_noise_default, parse_pct, parse_pct_opt, parse_seconds};
use super::args::{DbArg, PlaceArgs};
use super::compare::{show, Format};
use super::out::{engine, spooled_into};
use super::progress::Trials;
use super::Result;
use clap::Args as ClapArgs;
use sysperf::engine::{self, switch::Switch, RunPlan, RunRequest};
use sysperf::{catalog, compare};

pub(crate) const AB_HELP: &str = "\
Switches (--switch NAME, or --sysctl NAME=VALUE):
  seccomp              an allow-all seccomp filter in every worker (what a filter costs per
                       system call); per task, needs no privilege
  speculation          speculative store bypass disabled in every worker (prctl
                       PR_SET_SPECULATION_CTRL); per task, where the CPU and kernel allow it
  thp                  /sys/kernel/mm/transparent_hugepage/enabled: off = its value now, on =
                       --on (default always); root
  perf_event_paranoid  kernel.perf_event_paranoid: off = now, on = --on (default -1); root
  --sysctl NAME=VALUE  any sysctl: off = its value now, on = VALUE; root

Off is always the machine as it is. Before a machine-wide switch is first changed, its old
value is recorded in /var/lib/sysperf/switches (or $SYSPERF_STATE_DIR); ab puts it back at the
end and on Ctrl-C/SIGTERM, and the next 'sysperf run' or 'ab' puts back what a killed ab left,
saying so. A machine-wide switch this process may not change exits 1 before anything runs
(as 'trace' and 'profile' do); a bad switch name or value exits 2.

Default selection: syscall csw pipeback4 forks0 execs0null seqpage. Both runs are stored; the
comparison is the one 'sysperf compare LABEL-off LABEL-on' prints.";

#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Benchmark ids or globs (default: syscall csw pipeback4 forks0 execs0null seqpage).
    pub(crate) selection: Vec<String>,
    /// The switch: seccomp, speculation, thp or perf_event_paranoid.
    #[arg(long, value_name = "NAME", required_unless_present = "sysctl")]
    pub(crate) switch: Option<String>,
    /// A sysctl as the switch, with its "on" value (off is its value now).
    #[arg(long, value_name = "NAME=VALUE", conflicts_with = "switch")]
    pub(crate) sysctl: Option<String>,
    /// The "on" value of thp or perf_event_paranoid.
    #[arg(long, value_name = "VALUE")]
    pub(crate) on: Option<String>,
    /// Counted trials per benchmark and side (1-1000; default 5).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) trials: Option<u32>,
    /// Minimum duration of one trial in seconds (default 0.1).
    #[arg(long, value_name = "S", allow_negative_numbers = true, value_parser = parse_seconds)]
    pub(crate) min_time: Option<f64>,
    /// One short trial per benchmark and side: a smoke test, too few trials for a verdict.
    #[arg(long)]
    pub(crate) quick: bool,
    /// Seed of the shuffled order of the trials (default: random).
    #[arg(long, value_name = "N")]
    pub(crate) seed: Option<u64>,
    /// N pairs of runs, each side's runs one group ('compare' widens its interval by their
    /// run-to-run variance) (1-1000).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) repeat: u32,
    /// The runs' labels are LABEL-off and LABEL-on (default: ab-SWITCH-RANDOM).
    #[arg(long, value_name = "TEXT")]
    pub(crate) label: Option<String>,
    /// Kill and record as failed any trial running longer than this many seconds.
    #[arg(long, value_name = "S", default_value_t = 60.0, allow_negative_numbers = true, value_parser = parse_seconds)]
    pub(crate) timeout: f64,
    /// Noise band in percent (0-1000): a verdict needs the ratio's whole interval outside +-PCT.
    #[arg(
        long = "threshold",
        visible_alias = "noise",
        value_name = "PCT",
        default_value = "2",
        allow_negative_numbers = true
    )]
    pub(crate) noise: String,
    /// Exit 3 when a test is significantly slower with the switch on by more than PCT percent.
    #[arg(long, value_name = "PCT", allow_negative_numbers = true)]
    pub(crate) fail_on_regression: Option<String>,
    #[command(flatten)]
    pub(crate) place: PlaceArgs,
    #[command(flatten)]
    pub(crate) db: DbArg,
    /// Print the comparison as JSON (the format of 'compare --json').
    #[arg(long)]
    pub(crate) json: bool,
}

impl Args {
    /// What the user asked for, as the engine takes it; `seed` when --seed was not given.
    fn request(&self, seed: u64) -> Result<RunRequest> {
        Ok(RunRequest {
            selection: or_noise_default(&self.selection),
            trials: self.trials,
            min_time_s: self.min_time,
            quick: self.quick,
            placement: self.place.placement,
            cpus: self.place.cpus()?,
            label: self.label.clone(),
            timeout_s: self.timeout,
            seed: self.seed.unwrap_or(seed),
            repeat: self.repeat,
            ..RunRequest::default()
        })
    }
}

pub(crate) fn exec(a: Args) -> Result<i32> {
    // 1. Every option is checked before anything is measured or changed.
    let noise_pct = parse_pct("--threshold", &a.noise)?;
    let gate_pct = parse_pct_opt("--fail-on-regression", a.fail_on_regression.as_deref())?;
    let switch = Switch::parse(a.switch.as_deref(), a.sysctl.as_deref(), a.on.as_deref())?;
    let mut req = a.request(engine::fresh_seed()?)?;
    if req.label.is_none() {
        req.label = Some(engine::ab::default_label(&switch)?);
    }
    let plan = RunPlan::resolve(&req, &allowed_cpus()?)?;
    // 2. Both sides, interleaved; the switch is put back whatever happens.
    let stop = engine::stop_flag()?;
    let store = catalog::open_store_to_measure(a.db.db.as_ref())?;
    let opened = store.location();
    sysperf::sync::upload_waiting(Some(store.as_ref()));
    let bar = &mut Trials::new();
    let outcomes = engine(&stop)?.execute_ab(&plan, &switch, store.as_ref(), bar);
    bar.finish();
    let outcomes = outcomes?;
    let spool = spooled_into(&opened, store.as_ref());
    let Some(last) = outcomes.last() else {
        return Ok(sysperf::exit::FAILURE);
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
    // 3. The two sides as 'compare' prints them, and the gate: from the spool file when the
    // shared store stayed away (it holds both sides whole).
    drop(store);
    let db = match &spool {
        Some(spool) => {
            say!(
                "sysperf: the runs {off} and {on} are NOT in the shared store {opened}: the server could not be reached, so they are kept in the spool file {} on this host; upload them with 'sysperf sync {} {opened}' once the server is back (exit code {})",
                spool.display(),
                spool.display(),
                sysperf::exit::SPOOLED
            );
            Some(spool.clone())
        }
        None => {
            say!("sysperf: stored as runs {off} and {on} (sysperf compare {off} {on})");
            a.db.db
        }
    };
    let req = compare::Request {
        runs: vec![off, on],
        baseline: None,
        wheres: Vec::new(),
        by: None,
        noise_pct,
        gate_pct,
    };
    let code = show(&req, Format::text_or_json(a.json), false, db)?;
    Ok(super::run::with_spool(code, spool.is_some()))
}
