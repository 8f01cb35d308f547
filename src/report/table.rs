//! The run as the paper prints it: Table 2 for the kernel tests (udg after the pipe tests),
//! Table 7 for the paging tests, then the derived figures with their formulas, every
//! warning and the doctor's warnings. Seconds are scaled to the paper's operation count so
//! rows read like 1984's.

use super::{num, scaled_s, utc};
use crate::model::{BenchResult, Run};
use std::fmt::Write;

/// The header of a published reference run: what the figures are and where they come from;
/// nothing was measured, so there is no method, interval or overhead to state.
fn published_header(run: &Run) -> String {
    let f = &run.fingerprint;
    format!(
        "sysperf reference run {}{}  published figures, not measured by sysperf (read-only)\n\
         machine: {} | {} | {} | {} | {} CPU\n\
         source: {}\n",
        run.id,
        run.label
            .as_ref()
            .map(|l| format!(" \"{l}\""))
            .unwrap_or_default(),
        f.hostname.as_deref().unwrap_or("?"),
        f.os.as_deref().unwrap_or("?"),
        f.cpu_model.as_deref().unwrap_or("?"),
        f.memory_bytes
            .map(|b| format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64))
            .unwrap_or_else(|| "?".into()),
        f.threads
            .map(|t| t.to_string())
            .unwrap_or_else(|| "?".into()),
        run.citation.as_deref().unwrap_or("no citation"),
    )
}

/// Seconds as the paper prints them (one decimal) for a published figure (no trials), else
/// with the precision that suits their size.
fn secs(v: f64, published: bool) -> String {
    if published {
        format!("{v:.1}")
    } else {
        num(v)
    }
}

/// The interval of a figure, or nothing for a published one, which has none.
fn ci(w: &crate::model::Estimate, width: usize) -> String {
    if w.n == 0 {
        format!("{:w$}", "", w = 2 * width + 4)
    } else {
        format!(
            "[{:>width$}, {:>width$}]",
            num(w.ci_low / 1000.0),
            num(w.ci_high / 1000.0)
        )
    }
}

/// The header lines: what was run, where, and how it was measured.
/// The line a `--quick` run opens with, in its header, over its tables and in the report.
pub const SMOKE_TEST: &str = "SMOKE TEST (--quick): one 0.01 s trial per test, no warm-up: this checks that the tests run, it does not measure this machine; figures that need an interval print n/a. Run without --quick to measure.";

/// What a table's title says of a `--quick` run.
fn smoke(run: &Run) -> &'static str {
    if run.params.quick {
        " [SMOKE TEST: one trial each, not a measurement]"
    } else {
        ""
    }
}

pub fn header(run: &Run) -> String {
    if run.source == "published" {
        return published_header(run);
    }
    let mut s = String::new();
    let f = &run.fingerprint;
    // A smoke test must not pass for results: it says so before anything else.
    if run.params.quick {
        let _ = writeln!(s, "{SMOKE_TEST}");
    }
    let _ = writeln!(
        s,
        "sysperf run {}{}  {}  measured by sysperf {}{}",
        run.id,
        run.label
            .as_ref()
            .map(|l| format!(" \"{l}\""))
            .unwrap_or_default(),
        utc(run.started_ns),
        run.sysperf_version,
        if run.complete { "" } else { "  (INCOMPLETE)" }
    );
    let _ = writeln!(s, "{}", machine_line(f));
    let _ = writeln!(s, "{}", method_line(&run.params));
    let _ = writeln!(s, "{}", ci_line(run));
    if let Some(o) = &run.overhead {
        let _ = writeln!(
            s,
            "overhead: timer {} ns per trial and loop {} ns per iteration, measured in a worker and subtracted from elapsed time",
            num(o.timer_ns),
            num(o.loop_ns_per_iteration)
        );
    }
    s += &cpu_lines(run);
    s
}

/// The machine: host, kernel, CPU, CPUs, memory, virtualization.
fn machine_line(f: &crate::model::Fingerprint) -> String {
    format!(
        "machine: {} | Linux {} | {} | {} CPUs | {} GiB | virt {}",
        f.hostname.as_deref().unwrap_or("?"),
        f.kernel_release.as_deref().unwrap_or("?"),
        f.cpu_model.as_deref().unwrap_or("?"),
        f.threads
            .map(|t| t.to_string())
            .unwrap_or_else(|| "?".into()),
        f.memory_bytes
            .map(|b| format!("{:.1}", b as f64 / (1u64 << 30) as f64))
            .unwrap_or_else(|| "?".into()),
        f.virtualization.as_deref().unwrap_or("?"),
    )
}

/// How the run measured: trials, order, worker, calibration, placement and its options.
fn method_line(p: &crate::model::RunParams) -> String {
    let order = match (p.order.as_deref(), p.seed) {
        (Some("interleaved"), Some(seed)) => {
            format!(" in interleaved rounds (every test once a round, shuffled; seed {seed})")
        }
        (Some("interleaved"), None) => " in interleaved rounds".to_string(),
        (Some(o), _) => format!(" back to back ({o})"),
        (None, _) => " back to back (made before sysperf ran trials in rounds)".to_string(),
    };
    format!(
        "method: {} measured trial(s) per test{order}, each in its own worker process, after calibration to >= {} s{}; placement {}{}{}{}{}",
        p.trials,
        p.min_time_s,
        if p.quick { " (quick)" } else { " and one warm-up" },
        p.placement,
        p.cpus.as_ref().map(|c| format!(" on CPUs {}", crate::units::format_list(c))).unwrap_or_default(),
        p.precision_pct.map(|x| format!("; rounds added until each interval is within +-{x}% of its median (--precision)")).unwrap_or_default(),
        match (&p.group, p.replicate) {
            // Numbered from 0, as `params.replicate` is in the JSON.
            (Some(g), Some(r)) => format!("; replicate {r} (from 0) of group {g} (--repeat)"),
            _ => String::new(),
        },
        // What the wait found is a note (quiet) or a warning (not), printed below.
        p.settle_s.map(|x| format!("; first waited up to {x} s for a quiet machine (--settle {x})")).unwrap_or_default(),
    )
}

/// What the intervals are, at the level the fewest trials allow.
fn ci_line(run: &Run) -> String {
    let level = run
        .results
        .iter()
        .filter_map(|r| r.summary.as_ref())
        .map(|s| s.wall_ns_per_op.ci_level)
        .fold(f64::NAN, f64::min);
    format!(
        "CI: distribution-free interval of the median from order statistics{}",
        if level.is_finite() && level == 0.0 {
            " (a single trial has none: the bracket repeats it)".to_string()
        } else if level.is_finite() && level < 0.95 {
            format!(
                " (with this few trials it is [min, max], {} confidence)",
                super::fmt_level(level)
            )
        } else if level.is_finite() {
            format!(" ({})", super::fmt_level(level))
        } else {
            String::new()
        }
    )
}

/// How User and System were obtained, and whether the CPU columns include reaped children.
fn cpu_lines(run: &Run) -> String {
    let mut s = String::new();
    // How the User and System columns were obtained (#45): this kernel's split, or the
    // paper's figures as printed.
    if run.source == "published" {
        let _ = writeln!(s, "User/System: the paper's time(1) figures, as printed");
    } else if !run.results.is_empty() || !run.series.is_empty() {
        let how = crate::cpusplit::of(&run.fingerprint).unwrap_or_else(|| {
            "unknown: no kernel configuration was read, so the split may be tick-sampled (a \
             child living less than a tick is charged all user)"
                .to_string()
        });
        // What that means for these tables, on one line with it: the documented examples
        // match the lines around the tables exactly.
        let means = if crate::cpusplit::is_tick_sampled(&how) {
            "; the fork and exec tests' children and a suite's commands live less than a tick, \
             so their kernel work shows as User (their System is understated); All CPU and \
             User + System are exact"
        } else {
            ""
        };
        let _ = writeln!(s, "User/System: {how}{means}");
    }
    let measured = run.results.iter().filter_map(|r| r.summary.as_ref());
    if measured
        .filter(|x| x.wall_ns_per_op.n > 0)
        .any(|x| x.whole.is_none())
    {
        let _ = writeln!(
            s,
            "CPU: made before sysperf kept the reaped children apart: User and System include them"
        );
    }
    s
}

fn kernel_row(r: &BenchResult, label: &str) -> String {
    let Some(s) = &r.summary else {
        return format!(
            "{label:<21}| {:>7} | failed: {}",
            r.paper_count,
            r.error.as_deref().unwrap_or("no result")
        );
    };
    let w = &s.wall_ns_per_op;
    let p = w.n == 0;
    // What the paper's time charged: the process, with the children it waited for.
    let (user, sys) = crate::bench::charged(r).unwrap_or((s.user_ns_per_op, s.sys_ns_per_op));
    // Seconds for the paper's count; "-" for a test no paper counted (#43: LEBench's rows
    // showed "Elapsed 691 s" for sysperf's own 10,000).
    let counted = crate::bench::has_paper_count(&r.group);
    let scaled = |ns: f64| {
        if counted {
            secs(scaled_s(ns, r.paper_count), p)
        } else {
            "-".to_string()
        }
    };
    format!(
        "{label:<21}| {:>7} | {:>8} | {:>7} | {:>7} | {:>7} | {:>9} {} | {:>9} | {:>7} | {}",
        if counted {
            r.paper_count.to_string()
        } else {
            "-".to_string()
        },
        scaled(w.median),
        scaled(user.median),
        scaled(sys.median),
        s.whole.as_ref().map_or("-".to_string(), |x| scaled(
            x.user_ns_per_op.median + x.sys_ns_per_op.median
        )),
        num(w.median / 1000.0),
        ci(w, 8),
        num(s.minflt_per_op + s.majflt_per_op),
        num(s.csw_per_op),
        r.placement,
    )
}

fn paging_row(r: &BenchResult, label: &str) -> String {
    let Some(s) = &r.summary else {
        return format!(
            "{label:<14}| failed: {}",
            r.error.as_deref().unwrap_or("no result")
        );
    };
    let w = &s.wall_ns_per_op;
    let p = w.n == 0;
    let per_run = r.paper_count as f64;
    format!(
        "{label:<14}| {:>6} | {:>7} | {:>7} | {:>7} | {:>8} {} | {:>7.0} | {:>6.0}",
        r.paper_count,
        secs(scaled_s(w.median, r.paper_count), p),
        secs(scaled_s(s.user_ns_per_op.median, r.paper_count), p),
        secs(scaled_s(s.sys_ns_per_op.median, r.paper_count), p),
        num(w.median / 1000.0),
        ci(w, 7),
        (s.minflt_per_op + s.majflt_per_op) * per_run,
        s.majflt_per_op * per_run,
    )
}

/// The whole run as text: header, Table 2, Table 7, derived figures, warnings.
pub fn render(run: &Run) -> String {
    let mut s = header(run);
    s += &kernel_table(run);
    s += &paging_table(run);
    s.push_str(&counters_table(run));
    s.push_str(&super::series::render(run));
    s += &derived_lines(run);
    s += &forking_lines(run);
    s += &closing_lines(run);
    s
}

/// A test's label as the paper's tables print it (its id when sysperf no longer knows it).
fn label_of(r: &BenchResult) -> String {
    crate::bench::find(&r.id)
        .map(|sp| sp.label.to_string())
        .unwrap_or_else(|| r.id.clone())
}

/// Table 2: the kernel tests, with their header and rule; empty without any.
fn kernel_table(run: &Run) -> String {
    let mut s = String::new();
    let kernel: Vec<&BenchResult> = run.results.iter().filter(|r| r.group != "paging").collect();
    if !kernel.is_empty() {
        let _ = writeln!(
            s,
            "\nTable 2. Kernel benchmarks (seconds for the paper's Count; User and System are what time \
             charged the paper's program: the process and, for the fork and exec tests, the children it \
             waited for, not the children of csw and the pipe and udg tests, which it never reaped; All \
             CPU counts every child){}",
            smoke(run)
        );
        let _ = writeln!(
            s,
            "{:<21}| {:>7} | {:>8} | {:>7} | {:>7} | {:>7} | {:>9} {:>20} | {:>9} | {:>7} | placement",
            "Test",
            "Count",
            "Elapsed",
            "User",
            "System",
            "All CPU",
            "us/op",
            format!(
                "[{}]",
                super::ci_label(
                    kernel
                        .iter()
                        .filter_map(|r| r.summary.as_ref().map(|s| s.wall_ns_per_op.ci_level))
                )
            ),
            "faults/op",
            "csw/op"
        );
        let _ = writeln!(s, "{}", "-".repeat(132));
        for r in kernel {
            let _ = writeln!(s, "{}", kernel_row(r, &label_of(r)));
        }
    }
    s
}

/// Table 7: the paging tests, with their header and rule; empty without any.
fn paging_table(run: &Run) -> String {
    let mut s = String::new();
    let paging: Vec<&BenchResult> = run.results.iter().filter(|r| r.group == "paging").collect();
    if !paging.is_empty() {
        let _ = writeln!(
            s,
            "\nTable 7. Paging benchmarks (seconds and faults for one run of the paper's program){}",
            smoke(run)
        );
        let _ = writeln!(
            s,
            "{:<14}| {:>6} | {:>7} | {:>7} | {:>7} | {:>8} {:>18} | {:>7} | {:>6}",
            "Test",
            "Touch",
            "Elapsed",
            "User",
            "System",
            "us/touch",
            format!(
                "[{}]",
                super::ci_label(
                    paging
                        .iter()
                        .filter_map(|r| r.summary.as_ref().map(|s| s.wall_ns_per_op.ci_level))
                )
            ),
            "Faults",
            "Major"
        );
        let _ = writeln!(s, "{}", "-".repeat(100));
        for r in paging {
            let _ = writeln!(s, "{}", paging_row(r, &label_of(r)));
        }
    }
    s
}

/// The derived figures with their formulas; empty without any.
fn derived_lines(run: &Run) -> String {
    let mut s = String::new();
    if !run.derived.is_empty() {
        let _ = writeln!(s, "\nDerived figures");
        for d in &run.derived {
            match &crate::suite::na_of(d, run) {
                Some(why) => {
                    let _ = writeln!(
                        s,
                        "  {:<44} {:>10} {:<10} ({why}) = {}",
                        d.name, "n/a", d.unit, d.formula
                    );
                }
                None => {
                    let _ = writeln!(
                        s,
                        "  {:<44} {:>10} {:<10} = {}",
                        d.name,
                        num(d.value),
                        d.unit,
                        d.formula
                    );
                }
            }
        }
    }
    s
}

/// The forking process's size, for forks0 and vforks0 when measured; empty otherwise.
fn forking_lines(run: &Run) -> String {
    let mut s = String::new();
    // The forking process's size when the timed region began: the paper's forks program for
    // forks0 and the vforks program for vforks0 (a worker in runs made before them).
    let rss: Vec<String> = run
        .results
        .iter()
        .filter(|r| r.id == "forks0" || r.id == "vforks0")
        .filter_map(|r| Some((r.id.as_str(), r.summary.as_ref()?)))
        // Published figures say nothing about the forking process.
        .filter(|(_, s)| s.wall_ns_per_op.n > 0)
        .map(|(id, s)| {
            format!(
                "  {id:<8} {:>6} KiB resident, {:>3} mappings",
                s.worker_rss_bytes / 1024,
                s.worker_maps
            )
        })
        .collect();
    if !rss.is_empty() {
        let _ = writeln!(
            s,
            "\nForking process (fork copies its page tables: the cost grows with both; vfork copies neither)"
        );
        for line in rss {
            let _ = writeln!(s, "{line}");
        }
    }
    s
}

/// What closes the run: the machine's speed, the warnings, the doctor's warnings.
fn closing_lines(run: &Run) -> String {
    let mut s = String::new();
    // The machine's speed through the run (`crate::speed`): a note when it kept one speed
    // (a warning, below, when it changed speed).
    for note in run.notes.iter().filter(|n| crate::speed::is_line(n)) {
        let _ = writeln!(s, "\n{note}");
    }
    if !run.warnings.is_empty() {
        let _ = writeln!(s, "\nWarnings ({})", run.warnings.len());
        for line in super::warnings::lines(&run.warnings) {
            let _ = writeln!(s, "  ! {line}");
        }
    }
    // The doctor's warnings from the start of the run; its notes are in --json and
    // 'sysperf doctor'.
    let doctor: Vec<_> = run
        .findings
        .iter()
        .filter(|f| f.severity == crate::model::Severity::Warn)
        .collect();
    if !doctor.is_empty() {
        let _ = writeln!(
            s,
            "\nDoctor ({} at the start; 'sysperf doctor' explains each)",
            doctor.len()
        );
        for f in doctor {
            let (title, fix) = (crate::term::line(&f.title), crate::term::line(&f.fix));
            let _ = writeln!(s, "  ! {title}; fix: {fix}");
        }
    }
    s
}

/// The per-operation counters of an observed run (`run --observe`), one row per benchmark
/// that has them; empty when the run was not observed. Cycles and instructions get columns
/// only when some benchmark has them (virtual machines often expose no hardware counters).
/// How much a test's time varies, at both levels (`show`): the CV of one trial within this
/// run, and this machine's within-run and run-to-run CV from its stored runs (`estimates`,
/// from at least three runs; none yet says how to get them). The run-to-run CV is what a
/// comparison of one run a side must allow for.
pub fn variance(run: &Run, estimates: &[crate::model::VarianceEstimate]) -> String {
    let mut s = String::new();
    if run.source != "measured" {
        return s;
    }
    if let Some(side) = &run.params.ab {
        let _ = writeln!(
            s,
            "A side of 'sysperf ab' ({}): compared with its partner {} round by round; the machine's run-to-run variance does not apply to it, nor is it estimated from it",
            side.design, side.partner
        );
        return s;
    }
    let known: Vec<(&crate::model::BenchResult, &crate::model::VarianceEstimate)> = run
        .results
        .iter()
        .filter_map(|r| Some((r, estimates.iter().find(|e| e.test == r.id)?)))
        .collect();
    // A table of dashes says nothing (#30): without estimates, one line.
    if known.is_empty() {
        let _ = writeln!(
            s,
            "Run-to-run variance of this machine: not known yet for these options (it needs {} stored runs made alike: the same selection, trials, order and placement; 'sysperf noise' or 'sysperf run --repeat {}' makes them); until then a comparison of two single runs gives no verdict, 'sysperf ab' does",
            crate::compare::VARIANCE_RUNS,
            crate::compare::VARIANCE_RUNS
        );
        return s;
    }
    let pct = |v: f64| format!("{:.1}%", v * 100.0);
    let runs = known.iter().map(|(_, e)| e.runs).max().unwrap_or(0);
    let _ = writeln!(
        s,
        "Variance (CV: one trial within this run; this machine's within-run and run-to-run CV, from its last {runs} stored runs made with these options, beside the spread of those runs' medians)"
    );
    let w = known
        .iter()
        .map(|(r, _)| r.id.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = writeln!(
        s,
        "  {:<w$}  {:>9}  {:>14}  {:>19}  {:>14}  {:>21}  {:>4}",
        "test",
        "this run",
        "machine within",
        "run-to-run",
        "medians' spread",
        "medians (us/op)",
        "runs"
    );
    for (r, e) in &known {
        let between = if e.is_clipped() {
            "0 (clipped)".to_string()
        } else {
            pct(e.between_cv())
        };
        let range = e.median_range_ns.map_or("-".to_string(), |[lo, hi]| {
            format!("{}-{}", sig(lo / 1000.0), sig(hi / 1000.0))
        });
        let _ = writeln!(
            s,
            "  {:<w$}  {:>9}  {:>14}  {:>19}  {:>14}  {:>21}  {:>4}",
            r.id,
            crate::compare::trial_cv(run, r).map_or("-".to_string(), pct),
            pct(e.within_cv()),
            between,
            e.median_sd.map_or("-".to_string(), pct),
            range,
            e.runs,
        );
    }
    // What two single runs made like this one resolve, from each test's components.
    let mut resolves: Vec<f64> = known
        .iter()
        .map(|(r, e)| {
            let c = crate::variance::Components {
                within_var: e.within_var,
                between_var: e.between_var,
                median_var: e.median_sd.unwrap_or(0.0).powi(2),
                clipped: e.is_clipped(),
                runs: e.runs,
                trials: e.trials,
            };
            let trials = r.summary.as_ref().map_or(1, |x| x.wall_ns_per_op.n.max(1));
            100.0 * crate::variance::detectable_change(&c, trials, 1, 0.95, 0.8)
        })
        .filter(|v| v.is_finite())
        .collect();
    if !resolves.is_empty() {
        resolves.sort_by(f64::total_cmp);
        let _ = writeln!(
            s,
            "  two single runs made like this one resolve about {:.0}% (median over these tests; {:.0}-{:.0}%; 95%, power 80%); 'sysperf ab' pairs its sides round by round",
            resolves[resolves.len() / 2],
            resolves[0],
            resolves[resolves.len() - 1]
        );
    }
    s
}

/// Three significant digits, as the tables print figures.
fn sig(v: f64) -> String {
    crate::report::compare::sig3(v)
}

pub fn counters_table(run: &Run) -> String {
    use crate::model::CounterSummary;
    let rows: Vec<(&BenchResult, &CounterSummary)> = run
        .results
        .iter()
        .filter_map(|r| {
            r.summary
                .as_ref()
                .and_then(|s| s.counters.as_ref())
                .map(|c| (r, c))
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let hw = rows
        .iter()
        .any(|(_, c)| c.cycles_per_op.is_some() || c.instructions_per_op.is_some());
    let opt = |v: Option<f64>| v.map(num).unwrap_or_else(|| "-".into());
    let mut s = String::new();
    // A quick run has no warm-up trial: its one trial carries the counters.
    let _ = writeln!(
        s,
        "\nCounters (--observe): per operation from perf_event_open on the worker and its children, {}; interrupts, softirqs and disk I/Os system-wide, per measured trial (medians)",
        if run.params.quick {
            "in every trial (--quick has no warm-up trial)"
        } else {
            "in the warm-up trial"
        }
    );
    let mut head = format!(
        "{:<18}| {:>10} | {:>8} | {:>8} | {:>9} |",
        "Test", "task us/op", "csw/op", "migr/op", "faults/op"
    );
    if hw {
        let _ = write!(head, " {:>10} | {:>10} |", "cycles/op", "instr/op");
    }
    let _ = write!(
        head,
        " {:>10} | {:>11} | {:>9} | {:>7}",
        "intr/trial", "on its CPUs", "softirq", "disk I/O"
    );
    let _ = writeln!(s, "{head}");
    let _ = writeln!(s, "{}", "-".repeat(head.len()));
    for (r, c) in rows {
        let mut line = format!(
            "{:<18}| {:>10} | {:>8} | {:>8} | {:>9} |",
            r.id,
            opt(c.task_clock_ns_per_op.map(|v| v / 1000.0)),
            opt(c.context_switches_per_op),
            opt(c.cpu_migrations_per_op),
            opt(c.page_faults_per_op),
        );
        if hw {
            let _ = write!(
                line,
                " {:>10} | {:>10} |",
                opt(c.cycles_per_op),
                opt(c.instructions_per_op)
            );
        }
        let _ = write!(
            line,
            " {:>10} | {:>11} | {:>9} | {:>7}",
            num(c.interrupts_per_trial),
            opt(c.interrupts_on_trial_cpus_per_trial),
            num(c.softirqs_per_trial),
            num(c.disk_ios_per_trial)
        );
        let _ = writeln!(s, "{line}");
    }
    s
}

/// One line per stored run, newest first (`sysperf runs`).
pub fn runs_list(runs: &[crate::store::RunInfo]) -> String {
    let mut s = format!(
        "{:<12}  {:<23}  {:<18}  {:<22}  {:>5}  {:>6}  {:>4}  label\n",
        "id", "started", "host", "kernel", "tests", "curves", "warn"
    );
    for r in runs {
        let _ = writeln!(
            s,
            "{:<12}  {:<23}  {:<18}  {:<22}  {:>5}  {:>6}  {:>4}  {}{}{}",
            r.id,
            utc(r.started_ns),
            r.hostname.as_deref().unwrap_or("?"),
            r.kernel_release.as_deref().unwrap_or("?"),
            r.benchmarks,
            r.series,
            r.warnings,
            r.label.as_deref().unwrap_or(""),
            if r.quick {
                " (quick: a smoke test)"
            } else {
                ""
            },
            run_state(r)
        );
    }
    s
}

/// What `sysperf runs` says after an incomplete run (#35): interrupted (it stored its end),
/// still measuring, or abandoned, with when it was last heard of and where it was.
fn run_state(r: &crate::store::RunInfo) -> String {
    let Some(st) = r.stopped.as_ref().filter(|_| !r.complete) else {
        return String::new();
    };
    let at = st.at.as_deref().unwrap_or("before its first result");
    let heard = utc(st.last_heard_ns);
    if r.ended_ns.is_some() {
        " (incomplete: interrupted)".into()
    } else if st.abandoned {
        format!(
            " (ABANDONED: last heard {heard} on {}, at {at}; 'sysperf gc --abandoned' removes it)",
            r.hostname.as_deref().unwrap_or("?")
        )
    } else {
        format!(" (incomplete: measuring, last heard {heard}, at {at})")
    }
}

/// `sysperf runs --by KEY`: one line per group (its value, runs, complete runs, newest start),
/// in the groups' order (kernels by version).
pub fn runs_groups(key: &str, groups: &[(String, crate::store::GroupCount)]) -> String {
    let width = groups
        .iter()
        .map(|(v, _)| v.chars().count())
        .chain([key.len(), 1])
        .max()
        .unwrap_or(1);
    let mut s = format!("{key:<width$}  {:>6}  {:>8}  newest\n", "runs", "complete");
    for (value, g) in groups {
        let _ = writeln!(
            s,
            "{:<width$}  {:>6}  {:>8}  {}",
            if value.is_empty() { "?" } else { value },
            g.runs,
            g.complete,
            utc(g.newest_ns)
        );
    }
    s
}

/// The built-in published runs, for the end of `sysperf runs`.
pub fn reference_list(runs: &[Run]) -> String {
    let mut s = String::from(
        "\npublished reference runs (built in, read-only; compare them by name, e.g. sysperf compare vax750-4.3bsd latest)\n",
    );
    let _ = writeln!(s, "{:<14}  {:<12}  {:>5}  machine", "name", "id", "tests");
    for r in runs {
        let f = &r.fingerprint;
        let _ = writeln!(
            s,
            "{:<14}  {:<12}  {:>5}  {} under {}",
            r.label.as_deref().unwrap_or(""),
            r.id,
            r.results.len(),
            f.cpu_model.as_deref().unwrap_or("?"),
            f.os.as_deref().unwrap_or("?"),
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_snapshot() {
        insta::assert_snapshot!(render(&crate::report::fixture_run()));
    }

    /// #43: a test no paper counted (LEBench's, the host-speed reference) shows "-" for the
    /// count and the seconds scaled to it, and its time per operation as any test's.
    #[test]
    fn a_test_no_paper_counted_has_no_seconds_for_a_count() {
        let mut run = crate::report::fixture_run();
        let mut le = run.results[0].clone();
        le.id = "le-getpid".into();
        le.group = "lebench".into();
        le.paper_count = 10_000;
        run.results = vec![run.results[0].clone(), le];
        let t = render(&run);
        let row = t
            .lines()
            .find(|l| l.starts_with("le-getpid"))
            .unwrap_or_else(|| panic!("{t}"));
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        assert_eq!(&cells[1..6], ["-", "-", "-", "-", "-"], "{row}");
        assert!(
            cells[6].parse::<f64>().is_ok() || cells[6].contains('['),
            "{row}"
        );
        let kernel = t
            .lines()
            .find(|l| l.starts_with(run.results[0].id.as_str()))
            .unwrap();
        assert!(
            !kernel.split('|').nth(1).unwrap().trim().starts_with('-'),
            "{kernel}"
        );
    }

    #[test]
    fn published_runs_show_the_papers_figures_and_their_source() {
        let run = crate::reference::find("vax750-4.2bsd").unwrap().unwrap();
        let t = render(run);
        assert!(t.contains("published figures, not measured"), "{t}");
        assert!(t.contains("Table 2 (page 9)"), "{t}");
        assert!(!t.contains("method:") && !t.contains("overhead:"), "{t}");
        let row = t.lines().find(|l| l.starts_with("forks100k ")).unwrap();
        assert!(row.contains("223.0") && row.contains("218.4"), "{row}");
        assert!(
            !row.contains('['),
            "a published figure has no interval: {row}"
        );
        let seq = t.lines().find(|l| l.starts_with("seqpage ")).unwrap();
        assert!(seq.contains("1126.0") && seq.contains("17113"), "{seq}");
        let list = reference_list(crate::reference::all().unwrap());
        assert!(
            list.contains("vax750-4.3bsd   0000004b5d43     29  DEC VAX-11/750 under 4.3BSD"),
            "{list}"
        );
    }

    #[test]
    fn counters_table_snapshot_and_absent_when_not_observed() {
        let mut run = crate::report::fixture_run();
        assert!(counters_table(&run).is_empty());
        let c = crate::model::CounterSummary {
            trials: 5,
            perf_trials: 1,
            task_clock_ns_per_op: Some(4_512.5),
            context_switches_per_op: Some(2.0),
            cpu_migrations_per_op: Some(0.0),
            page_faults_per_op: Some(0.0004),
            cycles_per_op: None,
            instructions_per_op: None,
            interrupts_per_trial: 131.0,
            interrupts_per_op: 0.0052,
            softirqs_per_trial: 40.0,
            interrupts_on_trial_cpus_per_trial: Some(101.0),
            disk_ios_per_trial: 0.0,
        };
        for r in &mut run.results {
            if let Some(s) = &mut r.summary {
                s.counters = Some(c.clone());
            }
        }
        insta::assert_snapshot!(counters_table(&run));
        run.results[0]
            .summary
            .as_mut()
            .unwrap()
            .counters
            .as_mut()
            .unwrap()
            .cycles_per_op = Some(420.0);
        assert!(counters_table(&run).contains("cycles/op"));
    }

    #[test]
    fn the_machine_noise_note_is_printed_once_and_the_other_notes_under_notes() {
        // #30: a host that kept one speed makes the machine noise line a note, which the
        // Notes section printed a second time.
        let mut run = crate::report::fixture_run();
        let line = format!("{} this host kept one speed", crate::speed::LINE_PREFIX);
        run.notes = vec![line.clone(), "another note".into()];
        let t = render(&run);
        assert_eq!(t.matches(&line).count(), 1, "{t}");
        assert!(t.contains("Notes\n  another note"), "{t}");
    }

    #[test]
    fn incomplete_runs_say_so_in_the_header() {
        let mut run = crate::report::fixture_run();
        run.complete = false;
        assert!(header(&run).contains("(INCOMPLETE)"));
    }
}
