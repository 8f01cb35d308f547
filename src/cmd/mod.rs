//! The command line's definitions and commands, in cargo's layout: one file per subcommand
//! with its arguments (clap derives them: the single source of `--help`, of the man pages and
//! of the shell completions) and its `exec`, which calls the library and prints. Here: the
//! command tree, the argument groups several commands share ([`args`]), printing ([`out`]),
//! failures and their exit codes ([`failure`]) and the progress bars ([`progress`]). No
//! measuring, statistics, storing or formatting logic lives in this folder.

mod args;
mod failure;
mod out;
mod progress;
mod shared;

pub(crate) mod ab;
pub(crate) mod changes;
pub(crate) mod compare;
pub(crate) mod completions;
pub(crate) mod doctor;
pub(crate) mod explain;
pub(crate) mod export;
pub(crate) mod gc;
pub(crate) mod import;
pub(crate) mod jitter;
pub(crate) mod job;
pub(crate) mod list;
pub(crate) mod man;
pub(crate) mod noise;
pub(crate) mod plot;
pub(crate) mod profile;
pub(crate) mod report;
pub(crate) mod rm;
pub(crate) mod run;
pub(crate) mod runs;
pub(crate) mod show;
pub(crate) mod sync;
pub(crate) mod trace;
pub(crate) mod watch;

pub(crate) use failure::Result;

use clap::{Parser, Subcommand};

const AFTER_HELP: &str = "\
Exit codes: 0 ok; 1 failure; 2 bad usage or input (unknown benchmark, bad number, unusable
database, bad import file); 3 a comparison found a significant regression; 4 the regression
gate could not judge a test (missing, failed, interrupted or too few trials); 5 the run was
measured but the shared PostgreSQL store stayed unreachable, so it is kept in a spool file on
this host ('sysperf sync SPOOL URL' uploads it); 6 'sysperf changes' found a change point in a
test's history; 7 'sysperf changes' searched nothing (every history too short); 130
interrupted by Ctrl-C, 143 by SIGTERM, 129
by SIGHUP (finished benchmarks are kept, the run is marked incomplete).

The store is an SQLite file: --db PATH, else $SYSPERF_DB, else
$XDG_DATA_HOME/sysperf/sysperf.db (~/.local/share/sysperf/sysperf.db); or a PostgreSQL
database shared by a fleet: --db postgres://USER@HOST:PORT/DATABASE (or $SYSPERF_DB).
'sysperf sync SRC DST' copies runs between stores.";

#[derive(Parser)]
#[command(name = "sysperf", version = sysperf::VERSION, about = "Measure, observe and compare UNIX kernel performance: the 4.2/4.3BSD benchmark suite, done rigorously", after_help = AFTER_HELP)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Cmd,
}

/// Each command's first paragraph is its line in `sysperf --help`; the rest is for
/// `sysperf COMMAND --help` (and its man page).
#[derive(Subcommand)]
pub(crate) enum Cmd {
    /// Run benchmarks (all by default), store the run, print it as the paper's Table 2.
    #[command(
        after_help = "Selection: ids or shell globs, e.g. sysperf run 'pipe*' forks0. 'sysperf list' shows all ids.\n\nCI: the median's distribution-free confidence interval from order statistics (at least 95% when there are 6 or more trials, in the steps order statistics allow: with 10 trials 97.9%, the level printed beside the interval as [97.9% CI]; with 5 it is [min, max], 93.8%)."
    )]
    Run(run::Args),
    /// Measure this machine's run-to-run variance: an A/A experiment, which 'compare' uses.
    ///
    /// K runs of a selection, the variance within and between runs, the false verdicts among
    /// them, and the smallest change a comparison can detect. The runs are stored, and
    /// 'compare' uses the run-to-run variance they show.
    #[command(
        visible_alias = "aa",
        after_help = "Default selection: syscall csw pipeback4 forks0 execs0null seqpage, 5 runs (about a minute on 2 cores)."
    )]
    Noise(noise::Args),
    /// A/B: measure a selection with a switch off and on (or two commands), round by round.
    ///
    /// Time commands as hyperfine does ('sysperf ab "gzip -1 < f" "gzip -9 < f"'), or measure
    /// a selection with a runtime switch off and on (--switch), paired round by round; store
    /// both sides as two runs (labels LABEL-a, LABEL-b or LABEL-off, LABEL-on) and print them
    /// side by side with ratios, paired intervals and verdicts. A machine-wide switch is
    /// put back afterwards, also after Ctrl-C; after a kill, the next 'run' or 'ab' puts it
    /// back.
    #[command(after_help = ab::AB_HELP)]
    Ab(Box<ab::Args>),
    /// List the benchmarks and suites there are to run (stored runs: 'sysperf runs').
    ///
    /// List the benchmarks: id, group, the paper's description and count, today's equivalent;
    /// with --suites, the suites and their series.
    #[command(visible_alias = "benchmarks")]
    List(list::Args),
    /// List stored runs, newest first, then the built-in published reference runs.
    #[command(after_help = runs::runs_help())]
    Runs(runs::Args),
    /// Give the space of removed runs back to the file system.
    ///
    /// Give the space of removed runs back to the file system (a store made before sysperf
    /// did so by itself is converted once; later ones shrink as runs are removed).
    Gc(gc::Args),
    /// Compare runs as the paper's Tables 2 and 7: ratios to a baseline, intervals, verdicts.
    ///
    /// Compare runs side by side as the paper's Table 2 and Table 7, with each run's ratio to
    /// a baseline, its 95% interval and a verdict.
    #[command(after_help = compare::compare_help())]
    Compare(compare::Args),
    /// When and where performance changed: change points in each (host, test, options) history.
    ///
    /// Find change points in each (host, test, options) history of the stored runs, all of
    /// them at a false discovery rate: where a test's time moved to a new level and stayed,
    /// with the runs either side, the step's size and the nearest fingerprint difference
    /// (kernel, config, sysctl, microcode) around it.
    #[command(after_help = changes::CHANGES_HELP)]
    Changes(changes::Args),
    /// Explain why tests moved between two runs: where the time per operation went.
    ///
    /// Explain why tests moved between two runs: for each test compare calls slower or faster
    /// (or each TEST named), the kernel functions and call paths where the time per operation
    /// went, with sampling intervals and shares of the change; events per operation on both
    /// sides; the recorded differences (kernel, config, sysctls, mitigations, ab switches) tied
    /// to the test or its functions; and one sentence to act on.
    #[command(after_help = explain::EXPLAIN_HELP)]
    Explain(explain::Args),
    /// Show a stored run (or a group's newest) or a built-in reference run.
    ///
    /// Show a run: stored (an id, a unique id prefix, a label, or 'latest') or a built-in
    /// reference run (vax750-4.1bsd, vax750-4.2bsd, vax750-4.3bsd). A label of several runs
    /// shows the newest and names the others.
    Show(show::Args),
    /// Delete stored runs (a label: its whole group), listing each.
    ///
    /// Delete stored runs and everything measured in them, listing each; a label deletes
    /// every run that carries it (the group 'compare' takes).
    Rm(rm::Args),
    /// Write stored runs as one export file for another machine's store.
    ///
    /// Write stored runs (ids, id prefixes, labels or 'latest') as one export file that
    /// 'sysperf import' reads on another machine: every raw trial, the fingerprint, parameters,
    /// warnings and the kernel profiles stored with the run ('run --profile').
    #[command(after_help = "The format is documented in docs/export-format.md.")]
    Export(export::Args),
    /// Read runs from export files into the store.
    ///
    /// Read runs from files written by 'sysperf export' into the store. Every file is checked
    /// first; if any is bad nothing is stored. A run already in the store is skipped.
    Import(import::Args),
    /// Copy runs between stores (SQLite, PostgreSQL, export files).
    ///
    /// Copy runs from one store to another: SQLite and PostgreSQL stores either way, or an
    /// export file into a store. A run already in DST is not copied again (run ids are
    /// stable), so syncing twice copies nothing; a run DST holds unfinished is completed.
    #[command(
        after_help = "SRC: an SQLite store's path, a postgres://USER@HOST:PORT/DATABASE URL, or a file written by 'sysperf export'.\nDST: an SQLite store's path or a postgres:// URL; created if needed.\n\nExample: sysperf sync ~/.local/share/sysperf/sysperf.db postgres://bench@db.lab:5432/sysperf"
    )]
    Sync(sync::Args),
    /// Write a self-contained HTML report comparing runs.
    ///
    /// Write a self-contained HTML report comparing runs: regressions first, the comparison
    /// table with verdicts, charts, the paging figure, fingerprints, warnings, derived figures.
    #[command(
        after_help = "RUN: an id, a unique id prefix, a label, 'latest', or a reference run (vax750-4.1bsd, ...). The first run is the baseline unless --baseline names another.\n\nThe page loads nothing from anywhere (inline styles and charts, no script): open it offline or attach it to a bug report."
    )]
    Report(report::Args),
    /// Draw one test or a group of tests across runs as an SVG or PNG figure.
    #[command(after_help = plot::plot_help())]
    Plot(plot::Args),
    /// Trace a benchmark's kernel events per operation, or the whole machine (--system).
    ///
    /// Trace one benchmark with the kernel's trace points: system calls, context switches,
    /// page cache and block I/O, per operation; with --system, the whole machine for a while.
    #[command(after_help = trace::TRACE_HELP)]
    Trace(trace::Args),
    /// Watch the system like vmstat (or iostat with --disk).
    ///
    /// Watch the system like vmstat (or iostat with --disk): a line since boot, then one per
    /// INTERVAL.
    #[command(after_help = watch::WATCH_HELP)]
    Watch(watch::Args),
    /// Interruptions of a spinning CPU (sysjitter style): time lost per second, and why.
    ///
    /// Spin on the clock on each CPU, report the time taken from the spinning task per
    /// second, the gap histogram and the interrupts and other tasks behind the gaps.
    #[command(after_help = jitter::JITTER_HELP)]
    Jitter(jitter::Args),
    /// What on this machine makes results noisy or not comparable, each with what to do.
    Doctor(doctor::Args),
    /// Profile the kernel under a benchmark, or the whole machine (--system), as gprof would.
    ///
    /// Profile the kernel while a benchmark runs: a gprof-like flat profile and call graph of
    /// where the kernel spends one operation; with --system, the whole machine for a while,
    /// stored as an observation. Or print the profiles stored with a run.
    #[command(
        after_help = "TARGET: benchmark ids or globs to profile now (not stored; 'sysperf run --profile' stores profiles with a run), or one stored run (id, label, 'latest') whose profiles to print.\n\nSampling uses perf_event_open (software cpu-clock, ~5 kHz, kernel call chains) on the worker and its children, and names kernel functions from /proc/kallsyms: it needs root, CAP_PERFMON or kernel.perf_event_paranoid <= 1, and kernel addresses visible in /proc/kallsyms (kernel.kptr_restrict). When they are missing it says which and how to allow it, and exits 1."
    )]
    Profile(profile::Args),
    /// Write the embedded null job or big job to a file, e.g. to time it with other tools.
    Job(job::Args),
    /// Print the shell completion script for SHELL.
    ///
    /// Print the shell completion script for SHELL, generated from these argument definitions
    /// (e.g. sysperf completions bash > /etc/bash_completion.d/sysperf).
    Completions(completions::Args),
    /// Write the man pages into DIR.
    ///
    /// Write the man pages (sysperf.1, and sysperf-COMMAND.1 for each command), generated
    /// from these argument definitions, into DIR.
    Man(man::Args),
}

/// The commands by task, as `sysperf --help` lists them (cargo's and git's way): what a
/// newcomer looks for first comes first. Every command is in exactly one (a unit test checks).
const TASKS: &[(&str, &[&str])] = &[
    ("Measure", &["run", "ab", "noise", "list"]),
    (
        "Observe the machine",
        &["watch", "trace", "profile", "jitter", "doctor"],
    ),
    (
        "Compare",
        &["compare", "explain", "changes", "report", "plot"],
    ),
    (
        "Keep runs",
        &["runs", "show", "rm", "export", "import", "sync"],
    ),
    ("Admin", &["gc", "job", "completions", "man"]),
];

/// The command tree with its commands listed by task ([`TASKS`]); `main`, the man pages and
/// the completions all take it from here.
pub(crate) fn command() -> clap::Command {
    use clap::CommandFactory;
    let cmd = Cli::command();
    let listing = tasks_listing(&cmd);
    cmd.help_template(format!(
        "{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{listing}Options:\n{{options}}{{after-help}}"
    ))
}

/// The command list of `sysperf --help`, one heading per task, each command with its first
/// paragraph and its other names.
fn tasks_listing(cmd: &clap::Command) -> String {
    let width = TASKS
        .iter()
        .flat_map(|(_, names)| names.iter())
        .map(|n| n.len())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for (task, names) in TASKS {
        out += &format!("{task}:\n");
        for name in *names {
            let Some(sub) = cmd.find_subcommand(name) else {
                continue;
            };
            let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
            let aliases: Vec<&str> = sub.get_visible_aliases().collect();
            let also = if aliases.is_empty() {
                String::new()
            } else {
                format!(" (also: {})", aliases.join(", "))
            };
            out += &format!("  {name:width$}  {about}{also}\n");
        }
        out += "\n";
    }
    out
}

impl Cmd {
    /// The commands that measure or examine the machine: before them, what killed sysperf
    /// processes left is removed (`engine::tidy`).
    pub(crate) fn examines_the_machine(&self) -> bool {
        match self {
            Cmd::Run(_) | Cmd::Ab(_) | Cmd::Profile(_) | Cmd::Doctor(_) | Cmd::Trace(_) => true,
            Cmd::Explain(a) => a.measure || a.try_switches,
            _ => false,
        }
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
    fn every_command_is_under_exactly_one_task_and_help_lists_them_by_task() {
        let cmd = Cli::command();
        for sub in cmd.get_subcommands() {
            let n = TASKS
                .iter()
                .filter(|(_, names)| names.contains(&sub.get_name()))
                .count();
            assert_eq!(n, 1, "{} is under {n} tasks", sub.get_name());
        }
        let help = command().render_help().to_string();
        let mut at = 0;
        for (task, names) in TASKS {
            let here = help[at..].find(&format!("{task}:\n")).expect(task) + at;
            for name in *names {
                assert!(help[here..].contains(&format!("  {name} ")), "{name}");
            }
            at = here;
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
