//! `sysperf ab`: a selection measured with a runtime switch off and on (or two command lines),
//! paired round by round or as a duet, stored as two runs, then printed side by side as
//! `compare` prints them, with its gate.

mod commands;
mod opts;

use super::args::{allowed_cpus, or_noise_default, parse_pct, parse_pct_opt, parse_seconds};
use super::args::{DbArg, PlaceArgs, ThresholdArg};
use super::failure::{with_spool, Context};
use super::out::{engine, print, spooled_into, worker_exe};
use super::progress::{Bars, Trials};
use super::shared::{print_comparison, Format};
use super::Result;
use clap::Args as ClapArgs;
use sysperf::engine::ab::{AbError, AbOutcome, Design};
use sysperf::engine::{self, switch::Switch, RunPlan, RunRequest};
use sysperf::store::Backend;
use sysperf::{catalog, compare};

pub(crate) const AB_HELP: &str = "\
Switches (--switch NAME, or --sysctl NAME=VALUE):
  seccomp              an allow-all seccomp filter in every worker (what a filter costs per
                       system call); per task, needs no privilege
  seccomp-checks=N     a seccomp filter of N argument checks more than the off side's one in
                       every worker: a planted slowdown of every system call; needs no privilege
  none                 nothing differs between the sides: an A/A
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

Commands, as hyperfine takes them: 'sysperf ab \"gzip -1 < f\" \"gzip -9 < f\"' (or --a CMD --b
CMD, with --a-env/--b-env NAME=VALUE). Each runs through a shell (sh -c; --shell SHELL, or -N
for none), unpinned (--cpu LIST to keep it on those CPUs). The first (or --reference) is the
baseline; each other command is one A/B with it (runs LABEL-a and LABEL-b, or LABEL-K-a/-b for
the Kth of several); a command alone is one run, timed with its interval. Timed: the wall
clock of each run from spawn to reaped exit, with its user and system CPU; a trial times many
runs together. hyperfine's flags mean the same here, but: --runs/--min-runs/--max-runs count
rounds (a trial of each command each; without --runs, as hyperfine: at least 10 rounds and
3 s a command, at most 30); --prepare and --conclude run once a trial, outside it;
--setup and --cleanup once before and after all rounds; --warmup runs each command N times
before them; --output inherit and --show-output are refused (the worker's output is its
channel to sysperf: use --output FILE). A command that exits non-zero fails its trial: its
exit code and last lines of standard error are printed and ab exits 1, unless
--ignore-failure. Printed: compare's table naming each command, hyperfine's lines (mean ± σ,
min … max in the command's unit, user and system CPU) and its summary line, \"`B` ran 1.047
[1.046, 1.049] times slower than `A`\", with the paired interval and verdict.

Each round runs every test's two sides back to back, in a random order, at one iteration count
(--duet: both at once, on two CPUs swapped every round); the interval is on the rounds' paired
log ratios.

Default selection: syscall csw pipeback4 forks0 execs0null seqpage. A suite's points
(net.stream-tcp@65536, 'bbn.pipe@*', a series, a suite) are measured as benchmarks are, each
stored among its side's results. Both runs are stored; the comparison is the one 'sysperf
compare LABEL-off LABEL-on' prints.";

#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Without a switch: the commands to time, as hyperfine takes them (the first, or
    /// --reference, the baseline; one alone is timed with its interval). With --switch or
    /// --sysctl: benchmark ids or globs, or suite points (net.stream-tcp@65536, bbn.pipe@*)
    /// (default: syscall csw pipeback4 forks0 execs0null seqpage).
    #[arg(value_name = "COMMAND|BENCHMARK")]
    pub(crate) selection: Vec<String>,
    /// The switch: seccomp, seccomp-checks=N (a planted slowdown), none (an A/A),
    /// speculation, thp or perf_event_paranoid.
    #[arg(long, value_name = "NAME")]
    pub(crate) switch: Option<String>,
    /// Side A as a command line: A/B of two commands instead of a switch (the same as
    /// 'ab CMD_A CMD_B'), each run through the shell and waited for.
    #[arg(long, value_name = "CMD", requires = "b", conflicts_with_all = ["switch", "sysctl", "selection"])]
    pub(crate) a: Option<String>,
    /// Side B as a command line.
    #[arg(long, value_name = "CMD", requires = "a")]
    pub(crate) b: Option<String>,
    /// A variable for side A's command, NAME=VALUE (repeatable; e.g. LD_LIBRARY_PATH=...).
    #[arg(long, value_name = "NAME=VALUE", requires = "a")]
    pub(crate) a_env: Vec<String>,
    /// A variable for side B's command, NAME=VALUE (repeatable).
    #[arg(long, value_name = "NAME=VALUE", requires = "b")]
    pub(crate) b_env: Vec<String>,
    /// A sysctl as the switch, with its "on" value (off is its value now).
    #[arg(long, value_name = "NAME=VALUE", conflicts_with = "switch")]
    pub(crate) sysctl: Option<String>,
    /// The "on" value of thp or perf_event_paranoid.
    #[arg(long, value_name = "VALUE")]
    pub(crate) on: Option<String>,
    /// Counted rounds: one trial of each benchmark and side each (1-1000; default 30).
    /// hyperfine's --runs: here a trial is many runs of a command, timed together.
    #[arg(long, short = 'r', visible_alias = "runs", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) trials: Option<u32>,
    #[command(flatten)]
    pub(crate) cmd: opts::CommandArgs,
    /// Minimum duration of one trial in seconds (default 0.015: many short trials).
    #[arg(long, value_name = "S", allow_negative_numbers = true, value_parser = parse_seconds)]
    pub(crate) min_time: Option<f64>,
    /// One short trial per benchmark and side: a smoke test, too few trials for a verdict.
    #[arg(long)]
    pub(crate) quick: bool,
    /// Run the two sides at the same time, one on each of two CPUs, swapped every round
    /// (one CPU a side: one-process tests, or two-process ones under --placement same).
    #[arg(long)]
    pub(crate) duet: bool,
    /// Add full rounds until every test's paired interval is at most +-PCT% (0-100).
    #[arg(long, value_name = "PCT", allow_negative_numbers = true)]
    pub(crate) precision: Option<f64>,
    /// With --precision: add rounds for at most S seconds (default 300).
    #[arg(long, value_name = "S", allow_negative_numbers = true, value_parser = parse_seconds)]
    pub(crate) max_time: Option<f64>,
    /// Seed of the shuffled order of the trials (default: random).
    #[arg(long, value_name = "N")]
    pub(crate) seed: Option<u64>,
    /// N pairs of runs, each side's runs one group ('compare' widens its interval by their
    /// run-to-run variance) (1-1000).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) repeat: u32,
    /// K paired sittings spread over time (2-100), each a whole 'ab' stored as
    /// LABEL.sI-off/-on (two commands: LABEL.sI-a/-b), the next started --spacing seconds after one ends: the ratio across
    /// them is a t interval over their estimates, so an effect that differs between the
    /// host's states (its fast and slow episodes, minutes apart) is covered, and the output
    /// says when the sittings disagree beyond their own intervals. 3 or more for a useful
    /// interval.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(2..=100), conflicts_with_all = ["repeat", "precision", "explain", "duet"])]
    pub(crate) sittings: Option<u32>,
    /// With --sittings: seconds from one sitting's end to the next one's start (default 120).
    #[arg(long, value_name = "S", requires = "sittings", allow_negative_numbers = true, value_parser = parse_seconds)]
    pub(crate) spacing: Option<f64>,
    /// The runs' labels are LABEL-off and LABEL-on (default: ab-SWITCH-RANDOM).
    #[arg(long, value_name = "TEXT")]
    pub(crate) label: Option<String>,
    /// Kill and record as failed any trial running longer than this many seconds.
    #[arg(long, value_name = "S", default_value_t = 60.0, allow_negative_numbers = true, value_parser = parse_seconds)]
    pub(crate) timeout: f64,
    #[command(flatten)]
    pub(crate) threshold: ThresholdArg,
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
    /// After the rounds, profile the kernel during one extra trial of each benchmark on each
    /// side, in that side's state, and store the profiles with the side's run: 'sysperf
    /// explain LABEL-off LABEL-on' then needs nothing else.
    #[arg(long)]
    pub(crate) profile: bool,
    /// How long each --profile trial runs, in seconds.
    #[arg(long, value_name = "S", default_value_t = 1.0, allow_negative_numbers = true, value_parser = parse_seconds)]
    pub(crate) profile_seconds: f64,
    /// Profile both sides (as --profile) and print 'sysperf explain' of the two runs after
    /// the comparison.
    #[arg(long, conflicts_with = "json")]
    pub(crate) explain: bool,
}

impl Args {
    /// Whether these are commands (positional, or --a/--b), timed as hyperfine times them
    /// ([`commands`]), rather than a switch measured on benchmarks.
    pub(crate) fn commands(&self) -> bool {
        self.switch.is_none() && self.sysctl.is_none()
    }

    /// What the user asked for, as the engine takes it; `seed` when --seed was not given.
    pub(crate) fn request(&self, seed: u64) -> Result<RunRequest> {
        // Core benchmarks and suite points (`net.stream-tcp@65536`), measured alike; the
        // commands of 'ab CMD...' as the `command` benchmark.
        let (selection, suites) = if self.switch.is_none() && self.sysctl.is_none() {
            (vec!["command".into()], Vec::new())
        } else {
            engine::ab::selection(&or_noise_default(&self.selection), self.quick)?
        };
        Ok(RunRequest {
            selection,
            suites,
            // Many short rounds unless told otherwise (`--quick` is its own budget).
            trials: self
                .trials
                .or((!self.quick).then_some(engine::ab::DEFAULT_ROUNDS)),
            min_time_s: self
                .min_time
                .or((!self.quick).then_some(engine::ab::DEFAULT_TRIAL_S)),
            quick: self.quick,
            precision_pct: self.precision,
            max_time_s: self.max_time,
            placement: self.place.placement,
            cpus: self.place.cpus()?,
            label: self.label.clone(),
            timeout_s: self.timeout,
            seed: self.seed.unwrap_or(seed),
            repeat: self.repeat,
            profile_seconds: (self.profile || self.explain).then_some(self.profile_seconds),
            // The pairing takes the host's speed out round by round: no reference (#42).
            reference: false,
            ..RunRequest::default()
        })
    }
}

pub(crate) fn exec(a: Args) -> Result<i32> {
    if a.commands() {
        return commands::exec(a);
    }
    a.cmd.refuse_with_switch()?;
    // 1. Every option is checked before anything is measured or changed.
    let noise_pct = a.threshold.pct()?;
    let gate_pct = parse_pct_opt("--fail-on-regression", a.fail_on_regression.as_deref())?;
    let switch = Switch::parse(a.switch.as_deref(), a.sysctl.as_deref(), a.on.as_deref())?;
    let name = switch.name().to_string();
    let mut req = a.request(engine::fresh_seed()?)?;
    if req.label.is_none() {
        req.label = Some(engine::ab::default_label(&name)?);
    }
    if let Some(k) = a.sittings {
        let plans = sitting_plans(&req, k, None)?;
        let mut measure =
            |e: &engine::Engine<'_>, p: &RunPlan, st: &dyn Backend, bar: &mut Trials| {
                e.execute_ab(p, Design::Paired, &switch, st, bar)
            };
        return sittings(&a, plans, &mut measure, None, noise_pct, gate_pct);
    }
    let plan = RunPlan::resolve(&req, &allowed_cpus()?)?;
    let design = if a.duet {
        engine::ab::check_duet(&plan, switch.concurrent())?;
        Design::Duet
    } else {
        Design::Paired
    };
    // 2. Both sides, paired round by round; the switch is put back whatever happens.
    let stop = engine::stop_flag()?;
    let store = catalog::open_store_to_measure(a.db.db.as_ref())?;
    let opened = store.location();
    sysperf::sync::upload_waiting_once(Some(store.as_ref()));
    let bar = &mut Trials::new();
    let engine = engine(&stop)?;
    let outcomes = engine.execute_ab(&plan, design, &switch, store.as_ref(), bar);
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
        say!("sysperf: interrupted; the runs {off} and {on} are kept as incomplete; {name} is as it was");
        return Ok(engine::interrupted_code());
    }
    // 3. The two sides as 'compare' prints them, and the gate: from the spool file when the
    // shared store stayed away (it holds both sides whole).
    drop(store);
    let db = match &spool {
        Some(spool) => {
            say!(
                "sysperf: the runs {off} and {on} are NOT in the shared store {opened}: the server could not be reached, so they are kept in the spool file {} on this host; nothing uploads them by itself: the next sysperf command on this host that opens that store (run, ab, doctor, runs, show, sync...; on a fleet host, the playbook's timer) uploads them once the server is back ('sysperf sync {} {opened}' does it by hand; exit code {})",
                spool.display(),
                spool.display(),
                sysperf::exit::SPOOLED
            );
            Some(spool.clone())
        }
        None => {
            say!("sysperf: stored as runs {off} and {on} (sysperf compare {off} {on})");
            a.db.db.clone()
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
    let code = print_comparison(&req, Format::text_or_json(a.json), false, db.clone())?;
    if a.explain {
        explain(&a, &req.runs[0], &req.runs[1], db)?;
    }
    Ok(with_spool(code, spool.is_some()))
}

/// Seconds between sittings when --spacing is not given.
const DEFAULT_SPACING_S: f64 = 120.0;

/// The plans of `ab --sittings K`: `req` K times, labelled LABEL.sI, each with a seed of its
/// own (and the rounds' stop rule of `ab` of commands, where there is one).
pub(crate) fn sitting_plans(
    req: &RunRequest,
    k: u32,
    until: Option<engine::plan::RoundsUntil>,
) -> Result<Vec<RunPlan>> {
    let base = req.label.clone().unwrap_or_default();
    let mut plans = Vec::new();
    for i in 1..=k {
        let mut r = req.clone();
        r.label = Some(format!("{base}.s{i}"));
        r.seed = engine::fresh_seed()?;
        let mut plan = RunPlan::resolve(&r, &allowed_cpus()?)?;
        plan.rounds_until = until;
        plans.push(plan);
    }
    Ok(plans)
}

/// How one sitting of `ab --sittings` is measured: a switch's A/B, or two commands'.
pub(crate) type Sitting<'a> = dyn FnMut(
        &engine::Engine<'_>,
        &RunPlan,
        &dyn Backend,
        &mut Trials,
    ) -> std::result::Result<Vec<AbOutcome>, AbError>
    + 'a;

/// `ab --sittings K` (#42): K whole paired `ab`s (`plans`, each measured by `measure`),
/// --spacing seconds apart, each stored as LABEL.sI; then every test's ratio in each and
/// across them, with the gate on the latter. `named`: the two commands, when they are what
/// the sides ran (#43).
pub(crate) fn sittings(
    a: &Args,
    plans: Vec<RunPlan>,
    measure: &mut Sitting<'_>,
    named: Option<[String; 2]>,
    noise_pct: f64,
    gate_pct: Option<f64>,
) -> Result<i32> {
    // parse_seconds took only positive, finite seconds.
    let spacing = a.spacing.unwrap_or(DEFAULT_SPACING_S);
    let k = plans.len();
    let stop = engine::stop_flag()?;
    let store = catalog::open_store_to_measure(a.db.db.as_ref())?;
    let opened = store.location();
    sysperf::sync::upload_waiting_once(Some(store.as_ref()));
    let engine = engine(&stop)?;
    let mut pairs = Vec::new();
    let mut labels = Vec::new();
    for (i, plan) in plans.iter().enumerate() {
        let bar = &mut Trials::new();
        let outcomes = measure(&engine, plan, store.as_ref(), bar);
        bar.finish();
        let Some(last) = outcomes?.pop() else {
            return Ok(sysperf::exit::FAILURE);
        };
        let label = plan.label.clone().unwrap_or_default();
        if last.interrupted {
            say!("sysperf: interrupted in sitting {} of {k}; its runs are kept as incomplete ({label}), the earlier sittings whole", i + 1);
            return Ok(engine::interrupted_code());
        }
        say!(
            "sysperf: sitting {} of {k} stored as {} and {}",
            i + 1,
            last.off.label.clone().unwrap_or_default(),
            last.on.label.clone().unwrap_or_default()
        );
        labels.push(format!(
            "{} / {}",
            last.on.label.clone().unwrap_or_default(),
            last.off.label.clone().unwrap_or_default()
        ));
        pairs.push((last.off, last.on));
        if i + 1 < plans.len() {
            say!("sysperf: the next sitting starts in {spacing} s (Ctrl-C stops here, keeping what is stored)");
            let until = std::time::Instant::now() + std::time::Duration::from_secs_f64(spacing);
            while std::time::Instant::now() < until {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    say!(
                        "sysperf: interrupted between sittings; {} of {k} are stored",
                        i + 1
                    );
                    return Ok(engine::interrupted_code());
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        }
    }
    let spooled = spooled_into(&opened, store.as_ref()).is_some();
    if spooled {
        say!("sysperf: the sittings' runs are in this host's spool file, not yet in {opened}: 'sysperf sync' uploads them");
    }
    let refs: Vec<(&sysperf::model::Run, &sysperf::model::Run)> =
        pairs.iter().map(|(x, y)| (x, y)).collect();
    let rows = compare::across_sittings(&refs, noise_pct);
    if a.json {
        let doc = serde_json::json!({
            "format": "sysperf-ab-sittings",
            "format_version": 1,
            "labels": labels,
            "spacing_s": spacing,
            "commands": named,
            "noise_pct": noise_pct,
            "tests": rows,
        });
        print(&format!("{}\n", serde_json::to_string_pretty(&doc)?))?;
    } else {
        if let Some([x, y]) = &named {
            print(&format!(
                "A: `{x}`\nB: `{y}` (the test 'command' is B against A)\n"
            ))?;
        }
        print(&sysperf::report::compare::sittings_text(
            &rows, &labels, spacing,
        ))?;
    }
    let regressed = gate_pct.is_some_and(|g| {
        rows.iter().any(|r| {
            r.across.as_ref().is_some_and(|x| {
                x.verdict == compare::Verdict::Slower
                    && x.ci.is_some_and(|[lo, _]| lo > 1.0 + g / 100.0)
            })
        })
    });
    let unjudged = gate_pct.is_some() && rows.iter().any(|r| r.across.is_none());
    let code = if regressed {
        sysperf::exit::REGRESSION
    } else if unjudged {
        sysperf::exit::UNJUDGED
    } else {
        sysperf::exit::OK
    };
    Ok(with_spool(code, spooled))
}

/// `--explain`: 'sysperf explain' of the two sides `x` and `y`, after the comparison, as its
/// text.
pub(crate) fn explain(a: &Args, x: &str, y: &str, db: Option<std::path::PathBuf>) -> Result<()> {
    print("\n")?;
    let req = sysperf::ops::explain::Request {
        a: x.to_string(),
        b: y.to_string(),
        tests: Vec::new(),
        noise_pct: parse_pct("--noise", &a.threshold.noise)?,
        measure_s: None,
        try_switches: None,
        db,
        worker_exe: worker_exe()?,
    };
    let explained = sysperf::ops::explain::explain(&req, &mut Bars::default())?;
    let text = sysperf::report::explain::text(
        &explained.explanation,
        sysperf::report::explain::DEFAULT_TOP,
    );
    print(&text).context("writing the explanation")?;
    Ok(())
}
