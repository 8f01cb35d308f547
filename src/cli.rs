//! The command line's definitions: every subcommand, option and help text of `sysperf`, as
//! clap derives them. This is the single source of `--help`, and of the man pages and shell
//! completions generated from it. It parses and checks the shape of input only; what the
//! commands do is in `main.rs` (thin) and the library's modules.

use crate::engine::{Event, Sink};
use crate::error::InputError;
use crate::harness::placement::{self, CpuChoice, Mode};
use crate::model::TrialKind;
use crate::{compare, reference, sys};
use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

pub const AFTER_HELP: &str = "\
Exit codes: 0 ok; 1 failure; 2 bad usage or input (unknown benchmark, bad number, unusable
database, bad import file); 3 a comparison found a significant regression; 4 the regression
gate could not judge a test (missing, failed, interrupted or too few trials); 130 interrupted by
Ctrl-C, 143 by SIGTERM, 129 by SIGHUP (finished benchmarks are kept, the run is marked
incomplete).

The store is an SQLite file: --db PATH, else $SYSPERF_DB, else
$XDG_DATA_HOME/sysperf/sysperf.db (~/.local/share/sysperf/sysperf.db); or a PostgreSQL
database shared by a fleet: --db postgres://USER@HOST:PORT/DATABASE (or $SYSPERF_DB).
'sysperf sync SRC DST' copies runs between stores.";

#[derive(Parser)]
#[command(name = "sysperf", version = crate::VERSION, about = "Measure, observe and compare UNIX kernel performance: the 4.2/4.3BSD benchmark suite, done rigorously", after_help = AFTER_HELP)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Cmd,
}

#[derive(Args, Clone)]
pub struct DbArg {
    /// Store to use: an SQLite file, or a PostgreSQL database as postgres://USER@HOST:PORT/DB
    /// (default: $SYSPERF_DB, else the XDG data directory).
    #[arg(long, value_name = "PATH", global = true)]
    pub db: Option<PathBuf>,
}

#[derive(Subcommand)]
pub enum Cmd {
    /// Run benchmarks (all by default), store the run, print it as the paper's Table 2.
    #[command(
        after_help = "Selection: ids or shell globs, e.g. sysperf run 'pipe*' forks0. 'sysperf list' shows all ids.\n\nCI: the median's distribution-free confidence interval from order statistics (95% when there are 6 or more trials; with 5 it is [min, max], 93.8%)."
    )]
    Run(RunArgs),
    /// Measure this machine's noise (an A/A experiment): K runs of a selection, the variance
    /// within and between runs, the false verdicts among them, and the smallest change a
    /// comparison can detect. The runs are stored, and 'compare' uses the run-to-run variance
    /// they show.
    #[command(
        after_help = "Default selection: syscall csw pipeback4 forks0 execs0null seqpage, 5 runs (about a minute on 2 cores)."
    )]
    Noise(NoiseArgs),
    /// Measure a selection with a runtime switch off and on, interleaved trial by trial, store
    /// both sides as two runs (labels LABEL-off, LABEL-on) and print them side by side with
    /// ratios, intervals and verdicts. A machine-wide switch is put back afterwards, also
    /// after Ctrl-C; after a kill, the next 'run' or 'ab' puts it back.
    #[command(after_help = AB_HELP)]
    Ab(AbArgs),
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
    #[command(after_help = runs_help())]
    Runs {
        #[command(flatten)]
        db: DbArg,
        /// Print the stored runs as JSON instead of a table (reference runs are not included).
        #[arg(long)]
        json: bool,
        /// List at most N runs, newest first; 0 lists all (default: 50 in the table, all
        /// with --json).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(0..=1_000_000_000))]
        limit: Option<u64>,
        /// Only runs started on or after DATE (YYYY-MM-DD, UTC).
        #[arg(long, value_name = "DATE")]
        since: Option<String>,
        #[command(flatten)]
        fleet: FleetArgs,
    },
    /// Give the space of removed runs back to the file system (a store made before sysperf
    /// did so by itself is converted once; later ones shrink as runs are removed).
    Gc {
        #[command(flatten)]
        db: DbArg,
    },
    /// Compare runs side by side as the paper's Table 2 and Table 7, with each run's ratio to
    /// a baseline, its 95% interval and a verdict.
    #[command(after_help = compare_help())]
    Compare(CompareArgs),
    /// Show a run: stored (an id, a unique id prefix, a label, or 'latest') or a built-in
    /// reference run (vax750-4.1bsd, vax750-4.2bsd, vax750-4.3bsd).
    Show {
        /// The run: an id, a unique id prefix (4 digits or more), a label, 'latest', or a
        /// reference run's name.
        run: String,
        #[command(flatten)]
        db: DbArg,
        /// Print the whole run as JSON (the format of 'run --json').
        #[arg(long)]
        json: bool,
    },
    /// Delete a stored run and everything measured in it.
    Rm {
        /// The stored run to delete: an id, a unique id prefix (4 digits or more), a label or
        /// 'latest' (reference runs are built in and cannot be removed).
        run: String,
        #[command(flatten)]
        db: DbArg,
    },
    /// Write stored runs (ids, id prefixes, labels or 'latest') as one export file that
    /// 'sysperf import' reads on another machine: every raw trial, the fingerprint, parameters,
    /// warnings and the kernel profiles stored with the run ('run --profile').
    #[command(after_help = "The format is documented in docs/export-format.md.")]
    Export {
        /// Runs to export: ids, unique id prefixes, labels or 'latest'.
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
        /// Export files to read (written by 'sysperf export').
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        #[command(flatten)]
        db: DbArg,
    },
    /// Copy runs from one store to another: SQLite and PostgreSQL stores either way, or an
    /// export file into a store. A run already in DST is not copied again (run ids are
    /// stable), so syncing twice copies nothing; a run DST holds unfinished is completed.
    #[command(
        after_help = "SRC: an SQLite store's path, a postgres://USER@HOST:PORT/DATABASE URL, or a file written by 'sysperf export'.\nDST: an SQLite store's path or a postgres:// URL; created if needed.\n\nExample: sysperf sync ~/.local/share/sysperf/sysperf.db postgres://bench@db.lab:5432/sysperf"
    )]
    Sync {
        /// Where the runs come from: a store (SQLite path or postgres:// URL) or an export file.
        #[arg(value_name = "SRC")]
        src: PathBuf,
        /// The store the runs are copied into (SQLite path or postgres:// URL).
        #[arg(value_name = "DST")]
        dst: PathBuf,
    },
    /// Write a self-contained HTML report comparing runs: regressions first, the comparison
    /// table with verdicts, charts, the paging figure, fingerprints, warnings, derived figures.
    #[command(
        after_help = "RUN: an id, a unique id prefix, a label, 'latest', or a reference run (vax750-4.1bsd, ...). The first run is the baseline unless --baseline names another.\n\nThe page loads nothing from anywhere (inline styles and charts, no script): open it offline or attach it to a bug report."
    )]
    Report(ReportArgs),
    /// Draw one test or a group of tests across runs as an SVG or PNG figure.
    #[command(after_help = plot_help())]
    Plot(PlotArgs),
    /// Trace one benchmark with the kernel's trace points: system calls, context switches,
    /// page cache and block I/O, per operation.
    #[command(after_help = TRACE_HELP)]
    Trace(TraceArgs),
    /// Watch the system like vmstat (or iostat with --disk): a line since boot, then one per INTERVAL.
    #[command(after_help = WATCH_HELP)]
    Watch(WatchArgs),
    /// Clock and OS noise (osnoise/sysjitter style): spin on the clock on each CPU, report the
    /// time stolen per second, the gap histogram and the interrupts behind the gaps.
    #[command(after_help = JITTER_HELP)]
    Jitter(JitterArgs),
    /// What on this machine makes results noisy or not comparable, each with what to do.
    Doctor {
        /// Print the findings and the facts behind them as one JSON document.
        #[arg(long)]
        json: bool,
        /// The store whose runs of this machine give its run-to-run variance (never created).
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
        /// Which job: null (1 KiB of initialized data, then exit) or big (250 KiB), the
        /// programs of the paper's exec tests.
        #[arg(value_parser = ["null", "big"])]
        which: String,
        /// Where to write the executable.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Print the shell completion script for SHELL, generated from these argument definitions
    /// (e.g. sysperf completions bash > /etc/bash_completion.d/sysperf).
    Completions {
        /// The shell: bash, zsh, fish, elvish or powershell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write the man pages (sysperf.1, and sysperf-COMMAND.1 for each command), generated from
    /// these argument definitions, into DIR.
    Man {
        /// The directory to write the pages into (it must exist).
        dir: PathBuf,
    },
}

/// The completion script for `shell`, from the same definitions as `--help`.
pub fn completions(shell: clap_complete::Shell) -> Vec<u8> {
    use clap::CommandFactory;
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "sysperf", &mut out);
    out
}

/// The man pages as (file name, roff): `sysperf.1`, then `sysperf-COMMAND.1` for each command,
/// from the same definitions as `--help` (what `clap_mangen::generate_to` writes, kept as
/// bytes so the caller writes them without following symlinks).
pub fn man_pages() -> std::io::Result<Vec<(String, Vec<u8>)>> {
    use clap::CommandFactory;
    fn walk(cmd: &clap::Command, out: &mut Vec<(String, Vec<u8>)>) -> std::io::Result<()> {
        let man = clap_mangen::Man::new(cmd.clone());
        let mut roff = Vec::new();
        man.render(&mut roff)?;
        out.push((man.get_filename(), roff));
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            walk(sub, out)?;
        }
        Ok(())
    }
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut out = Vec::new();
    walk(&cmd, &mut out)?;
    Ok(out)
}

impl Cmd {
    /// The commands that measure or examine the machine: before them, what killed sysperf
    /// processes left is removed (`engine::tidy`).
    pub fn examines_the_machine(&self) -> bool {
        matches!(
            self,
            Cmd::Run(_) | Cmd::Ab(_) | Cmd::Profile(_) | Cmd::Doctor { .. } | Cmd::Trace(_)
        )
    }
}

#[derive(Args)]
pub struct RunArgs {
    /// Benchmark ids or globs (default: all, or none when --suite is given).
    pub selection: Vec<String>,
    /// Run a suite of the papers' other studies, as curves of x against y: bbn, feder,
    /// scaling, tty, vm, workload, or all; or one series (scaling.poll) or point
    /// (bbn.pipe@65536), globs allowed (repeatable; `sysperf list --suites` lists them).
    #[arg(long, value_name = "NAME")]
    pub suite: Vec<String>,
    /// Counted trials per benchmark (1-1000; default 5). With several benchmarks they run in
    /// rounds: each round runs one trial of every benchmark, in a shuffled order.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub trials: Option<u32>,
    /// Minimum duration of one trial in seconds (default 0.1); iterations grow until a trial
    /// lasts this long.
    #[arg(long, value_name = "S", allow_negative_numbers = true, value_parser = parse_seconds)]
    pub min_time: Option<f64>,
    /// One short trial per benchmark (0.01 s, no warm-up): a smoke test, not a measurement.
    /// Not combined with --trials or --min-time.
    #[arg(long)]
    pub quick: bool,
    /// Run each benchmark's trials back to back instead of in shuffled rounds (the order of
    /// sysperf before 0.2; trials then describe one moment of the machine, not the whole run).
    #[arg(long)]
    pub sequential: bool,
    /// Seed of the shuffled order of the trials (default: random; the run stores it).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Print the plan (what would run, where, with which budget) and run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Make N runs of the selection, one after the other, stored as one group under the same
    /// label: 'sysperf compare' takes a label with several runs as a group, and its interval
    /// then covers the run-to-run variance too (1-1000).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// Add rounds of trials until every benchmark's 95% interval half-width is at most PCT%
    /// of its median (or --max-time runs out, and then name those that did not get there).
    #[arg(long, value_name = "PCT", allow_negative_numbers = true)]
    pub precision: Option<f64>,
    /// With --precision: how long rounds may go on, in seconds (default 300).
    #[arg(long, value_name = "S", allow_negative_numbers = true, value_parser = parse_seconds)]
    pub max_time: Option<f64>,
    /// Before the run, flush dirty pages and wait up to S seconds until the machine is quiet
    /// (CPUs under 10% busy over a second, under 64 MiB waiting to be written): the first run
    /// after a compile or a test suite otherwise differs from the next. Say it for runs you
    /// will compare, such as '--settle 60'.
    #[arg(long, value_name = "S", allow_negative_numbers = true, value_parser = parse_seconds)]
    pub settle: Option<f64>,
    #[command(flatten)]
    pub place: PlaceArgs,
    /// A label to find the run by later (sysperf show LABEL).
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// Kill and record as failed any trial running longer than this many seconds.
    #[arg(long, value_name = "S", default_value_t = 60.0, allow_negative_numbers = true, value_parser = parse_seconds)]
    pub timeout: f64,
    /// Count the trials: system-wide /proc deltas (interrupts, softirqs, vmstat, disk I/O) in
    /// every trial; perf_event_open counters of the worker and its children (task clock,
    /// context switches, migrations, page faults; cycles and instructions where the CPU has
    /// them) in the warm-up trial, since they slow switches and forks (every trial if --quick).
    #[arg(long)]
    pub observe: bool,
    /// After measuring each benchmark, profile the kernel during one extra trial and store
    /// the profile with the run (see 'sysperf profile').
    #[arg(long)]
    pub profile: bool,
    /// How long each --profile trial runs, in seconds.
    #[arg(long, value_name = "S", default_value_t = 1.0, allow_negative_numbers = true, value_parser = parse_seconds)]
    pub profile_seconds: f64,
    #[command(flatten)]
    pub db: DbArg,
    /// Print the whole run as one JSON document instead of the table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct NoiseArgs {
    /// Benchmark ids or globs (default: syscall csw pipeback4 forks0 execs0null seqpage).
    pub selection: Vec<String>,
    /// Runs to make (2-100).
    #[arg(long, value_name = "K", default_value_t = 5, value_parser = clap::value_parser!(u32).range(2..=100))]
    pub runs: u32,
    /// Counted trials per benchmark in each run (1-1000; default 5).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub trials: Option<u32>,
    /// Label of the runs (default: repeat-GROUP).
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// Noise band in percent for the false-verdict count, as compare's --noise.
    #[arg(
        long,
        value_name = "PCT",
        default_value = "2",
        allow_negative_numbers = true
    )]
    pub noise: String,
    #[command(flatten)]
    pub place: PlaceArgs,
    #[command(flatten)]
    pub db: DbArg,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The selection `noise` measures when none is given: the six tests of the verdicts issue.
pub const NOISE_DEFAULT: [&str; 6] = [
    "syscall",
    "csw",
    "pipeback4",
    "forks0",
    "execs0null",
    "seqpage",
];

impl NoiseArgs {
    pub fn request(&self, seed: u64) -> Result<crate::engine::RunRequest> {
        Ok(crate::engine::RunRequest {
            selection: if self.selection.is_empty() {
                NOISE_DEFAULT.iter().map(|s| s.to_string()).collect()
            } else {
                self.selection.clone()
            },
            trials: self.trials,
            placement: self.place.placement,
            cpus: self
                .place
                .cpu
                .as_deref()
                .map(placement::parse_list)
                .transpose()?,
            label: self.label.clone(),
            seed,
            repeat: self.runs,
            ..crate::engine::RunRequest::default()
        })
    }
}

pub const AB_HELP: &str = "\
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

#[derive(Args)]
pub struct AbArgs {
    /// Benchmark ids or globs (default: syscall csw pipeback4 forks0 execs0null seqpage).
    pub selection: Vec<String>,
    /// The switch: seccomp, speculation, thp or perf_event_paranoid.
    #[arg(long, value_name = "NAME", required_unless_present = "sysctl")]
    pub switch: Option<String>,
    /// A sysctl as the switch, with its "on" value (off is its value now).
    #[arg(long, value_name = "NAME=VALUE", conflicts_with = "switch")]
    pub sysctl: Option<String>,
    /// The "on" value of thp or perf_event_paranoid.
    #[arg(long, value_name = "VALUE")]
    pub on: Option<String>,
    /// Counted trials per benchmark and side (1-1000; default 5).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub trials: Option<u32>,
    /// Minimum duration of one trial in seconds (default 0.1).
    #[arg(long, value_name = "S", allow_negative_numbers = true, value_parser = parse_seconds)]
    pub min_time: Option<f64>,
    /// One short trial per benchmark and side: a smoke test, too few trials for a verdict.
    #[arg(long)]
    pub quick: bool,
    /// Seed of the shuffled order of the trials (default: random).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// N pairs of runs, each side's runs one group ('compare' widens its interval by their
    /// run-to-run variance) (1-1000).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// The runs' labels are LABEL-off and LABEL-on (default: ab-SWITCH-RANDOM).
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// Kill and record as failed any trial running longer than this many seconds.
    #[arg(long, value_name = "S", default_value_t = 60.0, allow_negative_numbers = true, value_parser = parse_seconds)]
    pub timeout: f64,
    /// Noise band in percent (0-1000): a verdict needs the ratio's whole interval outside +-PCT.
    #[arg(
        long,
        value_name = "PCT",
        default_value = "2",
        allow_negative_numbers = true
    )]
    pub noise: String,
    /// Exit 3 when a test is significantly slower with the switch on by more than PCT percent.
    #[arg(long, value_name = "PCT", allow_negative_numbers = true)]
    pub fail_on_regression: Option<String>,
    #[command(flatten)]
    pub place: PlaceArgs,
    #[command(flatten)]
    pub db: DbArg,
    /// Print the comparison as JSON (the format of 'compare --json').
    #[arg(long)]
    pub json: bool,
}

impl AbArgs {
    /// What the user asked for, as the engine takes it; `seed` when --seed was not given.
    pub fn request(&self, seed: u64) -> Result<crate::engine::RunRequest> {
        Ok(crate::engine::RunRequest {
            selection: if self.selection.is_empty() {
                NOISE_DEFAULT.iter().map(|s| s.to_string()).collect()
            } else {
                self.selection.clone()
            },
            trials: self.trials,
            min_time_s: self.min_time,
            quick: self.quick,
            placement: self.place.placement,
            cpus: self
                .place
                .cpu
                .as_deref()
                .map(placement::parse_list)
                .transpose()?,
            label: self.label.clone(),
            timeout_s: self.timeout,
            seed: self.seed.unwrap_or(seed),
            repeat: self.repeat,
            ..crate::engine::RunRequest::default()
        })
    }
}

/// Fleet queries over the stored runs (#21): `--where KEY=VALUE` and `--by KEY`, shared by
/// `runs`, `compare`, `report` and `plot`.
#[derive(Args, Clone, Default)]
pub struct FleetArgs {
    /// Only runs whose KEY is VALUE: host, kernel, cpu, label or date (repeatable; the same
    /// KEY twice is either value, different KEYs must all match).
    #[arg(long = "where", value_name = "KEY=VALUE")]
    pub wheres: Vec<String>,
    /// Group runs by KEY (host, kernel, cpu, label or date): one column per value, kernels in
    /// version order, each column the newest complete runs of its group (up to 30).
    #[arg(long, value_name = "KEY")]
    pub by: Option<String>,
}

impl FleetArgs {
    /// Whether the runs are chosen (or grouped) by stored facts rather than named one by one.
    pub fn is_set(&self) -> bool {
        !self.wheres.is_empty() || self.by.is_some()
    }
}

/// `sysperf runs --help`: the keys of --where and --by.
pub fn runs_help() -> String {
    format!(
        "Keys of --where and --by: {}.\n\nWith --by the table lists the groups (value, runs, complete runs, newest start) instead of the runs.",
        crate::fleet::keys_help()
    )
}

#[derive(Args)]
pub struct CompareArgs {
    /// Runs, in column order: ids, unique id prefixes, labels, 'latest', or reference runs
    /// (vax750-4.1bsd, vax750-4.2bsd, vax750-4.3bsd); they may come from different machines.
    /// With --where or --by and no RUN: every stored complete run that matches.
    pub runs: Vec<String>,
    #[command(flatten)]
    pub fleet: FleetArgs,
    #[command(flatten)]
    pub against: AgainstArgs,
    /// Exit with code 3 when a test is significantly slower than the baseline by more than
    /// PCT percent (0-1000), naming each on stderr.
    #[arg(long, value_name = "PCT", allow_negative_numbers = true)]
    pub fail_on_regression: Option<String>,
    /// Print the comparison as one JSON document (docs/compare.md).
    #[arg(long, conflicts_with_all = ["markdown", "csv"])]
    pub json: bool,
    /// Print GitHub-flavoured Markdown, to paste into a mailing list or an issue.
    #[arg(long, conflicts_with = "csv")]
    pub markdown: bool,
    /// Print CSV: one line per test and run (docs/compare.md lists the columns).
    #[arg(long)]
    pub csv: bool,
    #[command(flatten)]
    pub db: DbArg,
}

pub const TRACE_HELP: &str = "\
With --system DURATION: the whole machine, as the paper's section 2.3 traced it (a bounded
ring read as it fills): page-cache hit rate of reads and read-ahead use, dentry-cache hit rate
of path lookups, system calls by process and by kind with their time, softirq time by kind as
a share of kernel time, events lost. The instance is instances/sysperf-<pid>-system.

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
pub struct TraceArgs {
    /// The benchmark to trace (an id from 'sysperf list').
    #[arg(required_unless_present = "system")]
    pub id: Option<String>,
    /// Trace the whole machine for DURATION instead (seconds, or 90s, 5m, 1h): page-cache and
    /// dentry-cache hit rates, system calls by process and by kind, softirq time by kind,
    /// events lost. Ctrl-C ends it early, with the report so far (docs/trace.md).
    #[arg(long, value_name = "DURATION", value_parser = parse_span, conflicts_with_all = ["id", "iterations", "raw"])]
    pub system: Option<f64>,
    /// Event sets (syscalls, sched, pagecache, block) and/or events as system:name (default
    /// syscalls,sched). With --system: syscalls (with the dentry cache), softirq, pagecache
    /// (default all three).
    #[arg(long, value_name = "SET|LIST")]
    pub events: Option<String>,
    /// Ring buffer size per CPU in KB (default 4096, raised automatically if events are lost).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=1_048_576))]
    pub buffer_kb: Option<u64>,
    /// Iterations of the first traced run (the second runs twice as many); default: calibrated
    /// to about 10 ms, at most 5000.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    pub iterations: Option<u64>,
    /// Also write the text traces of both runs to FILE.
    #[arg(long, value_name = "FILE")]
    pub raw: Option<PathBuf>,
    #[command(flatten)]
    pub place: PlaceArgs,
    /// Kill a traced run (and fail) when it runs longer than this many seconds.
    #[arg(long, value_name = "S", default_value_t = 60.0, allow_negative_numbers = true, value_parser = parse_seconds)]
    pub timeout: f64,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

pub const WATCH_HELP: &str = "\
Columns (vmstat's, procps-ng semantics): r b = runnable and blocked processes; swpd free buff
cache = KiB; si so = KiB swapped in/out per second; bi bo = KiB read/written to block devices
per second; flt = page faults per second; in cs = interrupts and context switches per second;
us sy id wa st = percent of CPU time in user (with nice), system (with irq and softirq), idle,
I/O wait, stolen. With --disk (sysstat's iostat -dx): tps = reads, writes and discards per
second; rkB/s wkB/s; r_await w_await = ms per request; aqu-sz = average queue; %util = time
busy. The first line covers the time since boot. Ctrl-C ends the watch with exit code 0.";

pub const JITTER_HELP: &str = "\
One thread per CPU, pinned to it, reads the monotonic clock in a loop for --seconds and records
every gap between two reads longer than --threshold-ns: time taken from it by interrupts,
softirqs, the timer tick, other tasks or the hypervisor. Per CPU: stolen microseconds per second
(the sum of the gaps), the number of gaps and the largest, the timer ticks (/proc/interrupts LOC)
and the hypervisor's steal ticks (/proc/stat) meanwhile, the gap histogram, and every
interrupt and softirq source that fired on the CPU. It keeps those CPUs busy: do not run it
beside measurements. Nothing is stored.";

#[derive(Args)]
pub struct JitterArgs {
    /// Seconds to spin on each CPU.
    #[arg(long, value_name = "S", default_value_t = 1.0, allow_negative_numbers = true, value_parser = parse_seconds)]
    pub seconds: f64,
    /// Gaps longer than this many nanoseconds count as noise.
    #[arg(long, value_name = "NS", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    pub threshold_ns: u64,
    /// CPUs to spin on (comma-separated; default: every CPU this process may use).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub cpu: Vec<u32>,
    /// One JSON document instead of the table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct WatchArgs {
    /// Seconds between lines (0.1 to 86400); without it, one line of averages since boot.
    #[arg(allow_negative_numbers = true)]
    pub interval: Option<String>,
    /// Lines in all, the since-boot one included (default: until Ctrl-C).
    #[arg(allow_negative_numbers = true)]
    pub count: Option<String>,
    /// iostat's per-device report (tps, kB/s, await, %util) instead of vmstat's line.
    #[arg(long)]
    pub disk: bool,
    /// One JSON object per line instead of columns.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct ProfileArgs {
    /// Benchmark ids or globs, or suite points, series or suites (as `run --suite` takes
    /// them: scaling.path-depth@8) to profile now, or one stored run whose profiles to print.
    #[arg(
        required_unless_present = "system",
        conflicts_with = "system",
        value_name = "TARGET"
    )]
    pub target: Vec<String>,
    /// Profile the whole machine instead of a benchmark, for DURATION (3, 10s, 5m, 1h): every
    /// CPU, every process, stored as an observation (see `sysperf runs`). Needs root or
    /// CAP_PERFMON (or kernel.perf_event_paranoid <= 0).
    #[arg(long, value_name = "DURATION")]
    pub system: Option<String>,
    /// With --system: the most distinct kernel stacks kept (memory stays bounded however long
    /// it runs); samples of new stacks past it are counted under [other].
    #[arg(long, value_name = "N", default_value_t = crate::profile::system::DEFAULT_STACK_CAP as u32, requires = "system", value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    pub stack_cap: u32,
    /// With --system: count the calls of these kernel functions with the function tracer and
    /// give their time per call (the 4.2BSD paper's Tables 4, 9, 10); without a list, the
    /// path-lookup functions.
    #[arg(long, value_name = "LIST", requires = "system", num_args = 0..=1, default_missing_value = crate::profile::calls::DEFAULT)]
    pub functions: Option<String>,
    /// With --system: a label to find the observation by.
    #[arg(long, requires = "system")]
    pub label: Option<String>,
    /// How long the profiled trial of each benchmark runs, in seconds.
    #[arg(long, value_name = "S", default_value_t = 2.0, allow_negative_numbers = true, value_parser = parse_seconds)]
    pub seconds: f64,
    /// Lines of flat profile to print (the call graph shows at most 12 functions).
    #[arg(long, value_name = "N", default_value_t = 25, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub top: u32,
    #[command(flatten)]
    pub place: PlaceArgs,
    /// Kill a trial running longer than this many seconds past --seconds.
    #[arg(long, value_name = "S", default_value_t = 60.0, allow_negative_numbers = true, value_parser = parse_seconds)]
    pub timeout: f64,
    #[command(flatten)]
    pub db: DbArg,
    /// Print the profiles as one JSON document (folded stacks, flat profile, call graph).
    #[arg(long)]
    pub json: bool,
    /// Also draw the profiles' folded stacks as a flame graph into FILE (a static SVG: no
    /// script; hover a frame for its function and samples).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
}

impl RunArgs {
    /// What the user asked for, as the engine takes it; `seed` when --seed was not given.
    pub fn request(&self, seed: u64) -> Result<crate::engine::RunRequest> {
        let cpus = self
            .place
            .cpu
            .as_deref()
            .map(placement::parse_list)
            .transpose()?;
        Ok(crate::engine::RunRequest {
            selection: self.selection.clone(),
            suites: self.suite.clone(),
            trials: self.trials,
            min_time_s: self.min_time,
            quick: self.quick,
            placement: self.place.placement,
            cpus,
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
        })
    }
}

/// Where a benchmark's processes run, shared by `run`, `trace` and `profile`.
#[derive(Args)]
pub struct PlaceArgs {
    /// Where two-process benchmarks run: both on one CPU, on two CPUs, or where the scheduler puts them.
    #[arg(long, value_enum, default_value_t = Mode::Same)]
    pub placement: Mode,
    /// CPUs to use, e.g. 1 or 0-3,5 (default: the allowed CPUs, last first).
    #[arg(long, value_name = "LIST")]
    pub cpu: Option<String>,
}

impl PlaceArgs {
    /// The CPUs to use: --cpu, checked against those this process may use, or all of those.
    /// Also returns the list as the user gave it, which a run records.
    pub fn choose(&self) -> Result<(CpuChoice, Option<Vec<u32>>)> {
        let allowed = sys::get_affinity().context("reading the CPUs this process may use")?;
        let requested = self.cpu.as_deref().map(placement::parse_list).transpose()?;
        Ok((CpuChoice::new(requested.clone(), &allowed)?, requested))
    }
}

/// What runs are compared against, shared by `compare` and `report`.
#[derive(Args)]
pub struct AgainstArgs {
    /// The run the others are compared with (default: the first RUN); it becomes column 1.
    #[arg(long, value_name = "RUN")]
    pub baseline: Option<String>,
    /// Noise band in percent (0-1000): a verdict needs the ratio's whole interval outside +-PCT
    /// (also spelled --threshold, criterion's name for it).
    #[arg(
        long,
        visible_alias = "threshold",
        value_name = "PCT",
        default_value = "2",
        allow_negative_numbers = true
    )]
    pub noise: String,
}

#[derive(Args)]
pub struct ReportArgs {
    /// Runs to compare (id, id prefix, label, 'latest' or a reference run); with --where or
    /// --by and no RUN, every stored complete run that matches.
    #[arg(required_unless_present_any = ["wheres", "by"], value_name = "RUN")]
    pub runs: Vec<String>,
    #[command(flatten)]
    pub fleet: FleetArgs,
    /// Where to write the HTML file.
    #[arg(short, long, value_name = "FILE.html")]
    pub output: PathBuf,
    #[command(flatten)]
    pub against: AgainstArgs,
    #[command(flatten)]
    pub db: DbArg,
}

#[derive(Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["test", "group", "figure", "heatmap"])))]
pub struct PlotArgs {
    /// Runs to draw, one colour each (id, id prefix, label, 'latest' or a reference run);
    /// with --where or --by and no RUN, every stored complete run that matches.
    #[arg(required_unless_present_any = ["wheres", "by"], value_name = "RUN")]
    pub runs: Vec<String>,
    /// The evolution heat map: one row per test, one column per run or --by group (kernels
    /// in version order), each cell the slowdown against the first column.
    #[arg(long)]
    pub heatmap: bool,
    #[command(flatten)]
    pub fleet: FleetArgs,
    /// One test, e.g. syscall.
    #[arg(long, value_name = "ID")]
    pub test: Option<String>,
    /// A group of tests: syscall, ipc, fork, exec, paging, lebench or other.
    #[arg(long, value_name = "NAME")]
    pub group: Option<String>,
    /// A figure of the runs' suites (`run --suite`), e.g. bbn.pipes: its curves of every run
    /// and the paper's figures (the ids are listed below and by `sysperf list --suites`).
    #[arg(long, value_name = "ID")]
    pub figure: Option<String>,
    /// Where to write the figure: FILE.svg or FILE.png.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    #[command(flatten)]
    pub db: DbArg,
}

/// `sysperf plot --help`: the groups, and the figure ids from the suites' registry.
pub fn plot_help() -> String {
    format!(
        "Groups: syscall (system call and signals), ipc (pipes and datagram sockets), fork (fork and vfork), exec, paging (bars and the gausspage figure), lebench (LEBench's operations), other.\n\nFigures (--figure, of runs made with --suite): {}.\n\nBars are medians with 95% confidence whiskers, one colour per run; the first run is the baseline of the verdicts written beside the bars. PNG images are drawn at twice the SVG's size.",
        crate::suite::all_figure_ids().join(", ")
    )
}

/// `sysperf compare --help`: the method, as every comparison states it.
pub fn compare_help() -> String {
    format!(
        "Method: {}.\n\nVerdicts: faster, SLOWER (marked !), ~ (no significant change), 'no CI' (published against published: a ratio but no interval), '<3 trials' (a measured side has fewer than 3 trials: too few for an interval). A test a run lacks shows as missing, a failed one as failed; a row without a ratio shows '-'.\n\nReference runs: {} are the published figures of the 4.2BSD paper's Table 2 and Table 7 (a VAX-11/750), built in and read-only; e.g. sysperf compare vax750-4.3bsd latest.\n\nExit codes: 0 ok; 2 bad input; 3 --fail-on-regression found a regression; 4 it could not judge a test it was asked to (missing, failed, interrupted, too few trials).",
        compare::method(compare::DEFAULT_NOISE_PCT),
        reference::NAMES.join(", ")
    )
}

/// A percentage option: a finite number from 0 to 1000.
pub fn parse_pct(what: &'static str, s: &str) -> Result<f64, InputError> {
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

pub fn parse_seconds(s: &str) -> Result<f64, String> {
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

/// A duration as seconds: `10`, `2.5`, `90s`, `5m`, `1h` (at most a week).
pub fn parse_span(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, scale) = match t.char_indices().last() {
        Some((i, 's')) => (&t[..i], 1.0),
        Some((i, 'm')) => (&t[..i], 60.0),
        Some((i, 'h')) => (&t[..i], 3600.0),
        _ => (t, 1.0),
    };
    let v: f64 = num.trim().parse().map_err(|_| {
        format!(
            "'{s}' is not a duration: give seconds (10), or a number with s, m or h (90s, 5m, 1h)"
        )
    })?;
    let secs = v * scale;
    if !secs.is_finite() || secs <= 0.0 {
        return Err(format!("'{s}' must be a positive duration"));
    }
    if secs > 7.0 * 86_400.0 {
        return Err(format!(
            "'{s}' is more than a week; give a shorter duration"
        ));
    }
    Ok(secs)
}

/// The progress bar on stderr (hidden when stderr is not a terminal): the engine's sink for
/// `sysperf run`.
pub struct ProgressSink(pub ProgressBar);

impl ProgressSink {
    pub fn new() -> ProgressSink {
        let bar = ProgressBar::new(0);
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
        ProgressSink(bar)
    }
}

impl Sink for ProgressSink {
    fn event(&mut self, e: Event<'_>) {
        let bar = &self.0;
        match e {
            // Calibration takes a few trials per calibrated target: guessed at 3, corrected
            // as they come.
            Event::RunStarted {
                planned_trials,
                calibrated,
                ..
            } => bar.set_length(1 + planned_trials + 3 * calibrated as u64),
            Event::Phase { what } => bar.set_message(what.to_string()),
            Event::TargetStarted { id, index, total } => {
                bar.set_message(format!("{} ({}/{})", id, index + 1, total))
            }
            Event::TrialFinished { kind } => {
                if kind == TrialKind::Calibration && bar.position() + 1 >= bar.length().unwrap_or(0)
                {
                    bar.inc_length(1);
                }
                bar.inc(1)
            }
            Event::Warning { .. } | Event::BenchmarkDone { .. } | Event::RunFinished { .. } => {}
        }
    }
}

impl Default for ProgressSink {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// README.md and docs/*.md, where every option must be written at least once.
    fn docs() -> String {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut text = std::fs::read_to_string(root.join("README.md")).expect("README");
        for e in std::fs::read_dir(root.join("docs")).expect("docs/") {
            let p = e.expect("docs/ entry").path();
            if p.extension().is_some_and(|x| x == "md") {
                text += &std::fs::read_to_string(p).expect("doc");
            }
        }
        text
    }

    /// Whether an option (`--long`, or `-s` when it has a short form) is written in a paragraph
    /// of the docs that names the subcommand (`sysperf name`, `name --`, or `` `name` ``).
    fn documented_with(docs: &str, name: &str, arg: &clap::Arg) -> bool {
        let spellings: Vec<String> = arg
            .get_long()
            .map(|l| format!("--{l}"))
            .into_iter()
            .chain(arg.get_short().map(|c| format!("-{c}")))
            .collect();
        let names = [
            format!("sysperf {name}"),
            format!("{name} --"),
            format!("`{name}`"),
        ];
        docs.split("\n\n")
            .filter(|p| names.iter().any(|n| p.contains(n.as_str())))
            .any(|p| {
                spellings.iter().any(|o| {
                    p.match_indices(o.as_str()).any(|(i, m)| {
                        let before = p[..i].chars().next_back();
                        let next = p[i + m.len()..].chars().next();
                        !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
                            && !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
                    })
                })
            })
    }

    /// What `--help` leaves unsaid, and options the docs never name: `sub: problem` lines.
    fn undocumented(cmd: &clap::Command, docs: &str) -> Vec<String> {
        let mut out = Vec::new();
        for sub in cmd.get_subcommands() {
            let name = sub.get_name();
            if sub
                .get_about()
                .is_none_or(|a| a.to_string().trim().is_empty())
            {
                out.push(format!("{name}: no description"));
            }
            for arg in sub.get_arguments() {
                let id = arg.get_id().as_str();
                if matches!(id, "help" | "version") {
                    continue;
                }
                let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
                let shown = match arg.get_long() {
                    Some(long) => format!("--{long}"),
                    None => format!("<{}>", id.to_uppercase()),
                };
                if help.trim().is_empty() {
                    out.push(format!("{name}: {shown} has no description"));
                }
                // `--db` is every command's, documented once for all.
                if let Some(long) = arg.get_long().filter(|l| *l != "db") {
                    if !documented_with(docs, name, arg) {
                        out.push(format!(
                            "{name}: --{long} is in no paragraph of the docs about '{name}'"
                        ));
                    }
                }
            }
            out.extend(undocumented(sub, docs));
        }
        out
    }

    #[test]
    fn spans_read_seconds_minutes_and_hours() {
        assert_eq!(parse_span("10"), Ok(10.0));
        assert_eq!(parse_span("2.5"), Ok(2.5));
        assert_eq!(parse_span("90s"), Ok(90.0));
        assert_eq!(parse_span("5m"), Ok(300.0));
        assert_eq!(parse_span(" 1h "), Ok(3600.0));
        for bad in ["", "0", "-1", "5x", "m", "nan", "inf", "200h", "1e9"] {
            assert!(parse_span(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_option_and_argument_is_described_and_documented() {
        let bad = undocumented(&Cli::command(), &docs());
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }

    #[test]
    fn an_undescribed_argument_is_caught() {
        let cmd = clap::Command::new("x").subcommand(
            clap::Command::new("show")
                .about("Show")
                .arg(clap::Arg::new("run"))
                .arg(clap::Arg::new("wide").long("wide").help("Wide.")),
        );
        assert_eq!(
            undocumented(&cmd, "`x show --wide`"),
            vec!["show: <RUN> has no description"]
        );
        assert_eq!(
            undocumented(&cmd, "x show --wider\n\nx list --wide"),
            vec![
                "show: <RUN> has no description",
                "show: --wide is in no paragraph of the docs about 'show'"
            ]
        );
    }
}
