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

pub(crate) mod ab;
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
gate could not judge a test (missing, failed, interrupted or too few trials); 130 interrupted by
Ctrl-C, 143 by SIGTERM, 129 by SIGHUP (finished benchmarks are kept, the run is marked
incomplete).

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

#[derive(Subcommand)]
pub(crate) enum Cmd {
    /// Run benchmarks (all by default), store the run, print it as the paper's Table 2.
    #[command(
        after_help = "Selection: ids or shell globs, e.g. sysperf run 'pipe*' forks0. 'sysperf list' shows all ids.\n\nCI: the median's distribution-free confidence interval from order statistics (95% when there are 6 or more trials; with 5 it is [min, max], 93.8%)."
    )]
    Run(run::Args),
    /// Measure this machine's noise (an A/A experiment): K runs of a selection, the variance
    /// within and between runs, the false verdicts among them, and the smallest change a
    /// comparison can detect. The runs are stored, and 'compare' uses the run-to-run variance
    /// they show.
    #[command(
        after_help = "Default selection: syscall csw pipeback4 forks0 execs0null seqpage, 5 runs (about a minute on 2 cores)."
    )]
    Noise(noise::Args),
    /// Measure a selection with a runtime switch off and on, interleaved trial by trial, store
    /// both sides as two runs (labels LABEL-off, LABEL-on) and print them side by side with
    /// ratios, intervals and verdicts. A machine-wide switch is put back afterwards, also
    /// after Ctrl-C; after a kill, the next 'run' or 'ab' puts it back.
    #[command(after_help = ab::AB_HELP)]
    Ab(ab::Args),
    /// List the benchmarks: id, group, the paper's description and count, today's equivalent.
    List(list::Args),
    /// List stored runs, newest first, then the built-in published reference runs.
    #[command(after_help = runs::runs_help())]
    Runs(runs::Args),
    /// Give the space of removed runs back to the file system (a store made before sysperf
    /// did so by itself is converted once; later ones shrink as runs are removed).
    Gc(gc::Args),
    /// Compare runs side by side as the paper's Table 2 and Table 7, with each run's ratio to
    /// a baseline, its 95% interval and a verdict.
    #[command(after_help = compare::compare_help())]
    Compare(compare::Args),
    /// Explain why tests moved between two runs: for each test compare calls slower or faster
    /// (or each TEST named), the kernel functions and call paths where the time per operation
    /// went, with sampling intervals and shares of the change; events per operation on both
    /// sides; the recorded differences (kernel, config, sysctls, mitigations, ab switches) tied
    /// to the test or its functions; and one sentence to act on.
    #[command(after_help = explain::EXPLAIN_HELP)]
    Explain(explain::Args),
    /// Show a run: stored (an id, a unique id prefix, a label, or 'latest') or a built-in
    /// reference run (vax750-4.1bsd, vax750-4.2bsd, vax750-4.3bsd).
    Show(show::Args),
    /// Delete a stored run and everything measured in it.
    Rm(rm::Args),
    /// Write stored runs (ids, id prefixes, labels or 'latest') as one export file that
    /// 'sysperf import' reads on another machine: every raw trial, the fingerprint, parameters,
    /// warnings and the kernel profiles stored with the run ('run --profile').
    #[command(after_help = "The format is documented in docs/export-format.md.")]
    Export(export::Args),
    /// Read runs from files written by 'sysperf export' into the store. Every file is checked
    /// first; if any is bad nothing is stored. A run already in the store is skipped.
    Import(import::Args),
    /// Copy runs from one store to another: SQLite and PostgreSQL stores either way, or an
    /// export file into a store. A run already in DST is not copied again (run ids are
    /// stable), so syncing twice copies nothing; a run DST holds unfinished is completed.
    #[command(
        after_help = "SRC: an SQLite store's path, a postgres://USER@HOST:PORT/DATABASE URL, or a file written by 'sysperf export'.\nDST: an SQLite store's path or a postgres:// URL; created if needed.\n\nExample: sysperf sync ~/.local/share/sysperf/sysperf.db postgres://bench@db.lab:5432/sysperf"
    )]
    Sync(sync::Args),
    /// Write a self-contained HTML report comparing runs: regressions first, the comparison
    /// table with verdicts, charts, the paging figure, fingerprints, warnings, derived figures.
    #[command(
        after_help = "RUN: an id, a unique id prefix, a label, 'latest', or a reference run (vax750-4.1bsd, ...). The first run is the baseline unless --baseline names another.\n\nThe page loads nothing from anywhere (inline styles and charts, no script): open it offline or attach it to a bug report."
    )]
    Report(report::Args),
    /// Draw one test or a group of tests across runs as an SVG or PNG figure.
    #[command(after_help = plot::plot_help())]
    Plot(plot::Args),
    /// Trace one benchmark with the kernel's trace points: system calls, context switches,
    /// page cache and block I/O, per operation.
    #[command(after_help = trace::TRACE_HELP)]
    Trace(trace::Args),
    /// Watch the system like vmstat (or iostat with --disk): a line since boot, then one per INTERVAL.
    #[command(after_help = watch::WATCH_HELP)]
    Watch(watch::Args),
    /// Clock and OS noise (osnoise/sysjitter style): spin on the clock on each CPU, report the
    /// time stolen per second, the gap histogram and the interrupts behind the gaps.
    #[command(after_help = jitter::JITTER_HELP)]
    Jitter(jitter::Args),
    /// What on this machine makes results noisy or not comparable, each with what to do.
    Doctor(doctor::Args),
    /// Profile the kernel while a benchmark runs: a gprof-like flat profile and call graph of
    /// where the kernel spends one operation. Or print the profiles stored with a run.
    #[command(
        after_help = "TARGET: benchmark ids or globs to profile now (not stored; 'sysperf run --profile' stores profiles with a run), or one stored run (id, label, 'latest') whose profiles to print.\n\nSampling uses perf_event_open (software cpu-clock, ~5 kHz, kernel call chains) on the worker and its children, and names kernel functions from /proc/kallsyms: it needs root, CAP_PERFMON or kernel.perf_event_paranoid <= 1, and kernel addresses visible in /proc/kallsyms (kernel.kptr_restrict). When they are missing it says which and how to allow it, and exits 1."
    )]
    Profile(profile::Args),
    /// Write the embedded null job or big job to a file, e.g. to time it with other tools.
    Job(job::Args),
    /// Print the shell completion script for SHELL, generated from these argument definitions
    /// (e.g. sysperf completions bash > /etc/bash_completion.d/sysperf).
    Completions(completions::Args),
    /// Write the man pages (sysperf.1, and sysperf-COMMAND.1 for each command), generated from
    /// these argument definitions, into DIR.
    Man(man::Args),
}

impl Cmd {
    /// The commands that measure or examine the machine: before them, what killed sysperf
    /// processes left is removed (`engine::tidy`).
    pub(crate) fn examines_the_machine(&self) -> bool {
        match self {
            Cmd::Run(_) | Cmd::Ab(_) | Cmd::Profile(_) | Cmd::Doctor(_) | Cmd::Trace(_) => true,
            Cmd::Explain(a) => a.measure,
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
