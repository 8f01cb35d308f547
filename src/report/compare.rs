//! A comparison of runs as bytes: text in the layout of the paper's Table 2 and Table 7 (one
//! column per run, then each run's ratio to the baseline with its interval and verdict),
//! GitHub-flavoured Markdown for a mailing list or an issue, CSV (one line per test and run)
//! and JSON (the [`Comparison`] itself). The formats are described in docs/compare.md.
//!
//! Pure functions of a [`Comparison`]: they neither load runs nor decide verdicts (that is
//! `crate::compare`), and they print nothing.

use super::markup::{Align, Column, Group, Markdown, Markup, Table, Text};
use super::{num, series, utc};
use crate::compare::{Cell, CellState, Comparison, DerivedRow, Ratio, Row, SeriesRow, Verdict};
use crate::model::{Estimate, YKind};
use serde_json::{json, Value};
use std::fmt::Write;

/// Version of the JSON document's shape (`"format": "sysperf-compare"`); bumped on any
/// incompatible change.
pub const FORMAT_VERSION: u32 = 1;

/// The CSV header: one line per test and run follows it.
pub const CSV_COLUMNS: [&str; 16] = [
    "id",
    "label",
    "run",
    "real_s",
    "user_s",
    "sys_s",
    "us_per_op",
    "ci_low",
    "ci_high",
    "ratio",
    "ratio_ci_low",
    "ratio_ci_high",
    "verdict",
    "ci_level",
    "covers",
    "significant",
];

/// A number with three significant digits whatever its size: a VAX against today's machine
/// is a ratio like 0.000382, which `num` would round to 0.0004.
/// The line `compare --fail-on-regression` prints for each regression it found.
pub fn regression_line(c: &Comparison, r: &crate::compare::Regression, pct: f64) -> String {
    let label = c
        .runs
        .iter()
        .find(|h| h.id == r.run)
        .and_then(|h| h.label.as_deref())
        .map(|l| format!(" \"{l}\""))
        .unwrap_or_default();
    format!(
        "run {}{label}, {}: {}x the baseline's time per operation, 95% CI [{}, {}], more than {pct}% slower",
        r.run,
        r.test,
        sig3(r.ratio),
        sig3(r.ci[0]),
        sig3(r.ci[1]),
    )
}

/// The regression gate's lines for stderr: each regression, then each test it could not judge.
pub fn gate_lines(
    c: &Comparison,
    regressions: &[crate::compare::Regression],
    unjudged: &[crate::compare::Unjudged],
    pct: f64,
) -> Vec<String> {
    // The tests the gate cannot judge for one reason in one run are one line (#33): 49 quick
    // tests are "cannot judge 49 tests", not 49 lines alike.
    let mut groups: Vec<(&str, &str, Vec<&str>)> = Vec::new();
    for u in unjudged {
        match groups
            .iter_mut()
            .find(|(run, why, _)| *run == u.run && *why == u.why)
        {
            Some((_, _, tests)) => tests.push(&u.test),
            None => groups.push((&u.run, &u.why, vec![&u.test])),
        }
    }
    regressions
        .iter()
        .map(|r| format!("regression: {}", regression_line(c, r, pct)))
        .chain(groups.into_iter().map(|(run, why, tests)| {
            let which = match tests.len() {
                1 => tests[0].to_string(),
                n => format!("{n} tests ({})", named_few(&tests)),
            };
            let needs = if why == crate::compare::NOISE_UNKNOWN || why == crate::compare::DISTURBED
            {
                "the gate needs an interval that covers what two runs differ by".to_string()
            } else {
                format!(
                    "the gate needs both sides measured, with at least {} trials",
                    crate::compare::MIN_TRIALS
                )
            };
            format!("cannot judge: run {run}, {which}: {why}; {needs}")
        }))
        .collect()
}

/// "syscall, csw, signocsw and 46 more": the first few names, the rest counted.
fn named_few(names: &[&str]) -> String {
    const SHOWN: usize = 5;
    if names.len() <= SHOWN + 1 {
        return names.join(", ");
    }
    format!(
        "{} and {} more",
        names[..SHOWN].join(", "),
        names.len() - SHOWN
    )
}

pub fn sig3(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let digits = 2 - v.abs().log10().floor() as i32;
    format!("{v:.*}", digits.max(0) as usize)
}

fn published(c: &Comparison, run: usize) -> bool {
    c.runs[run].source == "published"
}

/// Seconds as the paper prints them (one decimal) for published runs, so the published
/// tables come back figure for figure; else with the precision that suits their size.
fn secs(v: f64, published: bool) -> String {
    if published {
        format!("{v:.1}")
    } else {
        num(v)
    }
}

fn tag(i: usize) -> String {
    format!("[{}]", i + 1)
}

/// Runs other than the baseline: those that have a ratio column.
fn others(c: &Comparison) -> impl Iterator<Item = usize> + '_ {
    (0..c.runs.len()).filter(move |&i| i != c.baseline)
}

/// One test of one observed run: label, run index, and the counters as printed
/// (context switches/op, migrations/op, page faults/op, interrupts/trial, cycles/op).
pub struct CounterRow {
    pub label: String,
    pub run: usize,
    pub cells: [String; 5],
}

/// The counters of every observed run, test by test in the comparison's row order; empty
/// when no run was observed.
pub fn counter_rows(c: &Comparison) -> Vec<CounterRow> {
    let opt = |v: Option<f64>| v.map(num).unwrap_or_else(|| "-".into());
    let mut out = Vec::new();
    for row in &c.rows {
        for (i, cell) in row.cells.iter().enumerate() {
            let Some(k) = cell.cell().and_then(|x| x.counters.as_ref()) else {
                continue;
            };
            out.push(CounterRow {
                label: row.label.clone(),
                run: i,
                cells: [
                    opt(k.context_switches_per_op),
                    opt(k.cpu_migrations_per_op),
                    opt(k.page_faults_per_op),
                    num(k.interrupts_per_trial),
                    opt(k.cycles_per_op),
                ],
            });
        }
    }
    out
}

const COUNTER_HEADS: [&str; 5] = ["csw/op", "migr/op", "faults/op", "intr/trial", "cycles/op"];

fn kernel_rows(c: &Comparison) -> impl Iterator<Item = &Row> {
    c.rows.iter().filter(|r| r.group != "paging")
}

fn paging_rows(c: &Comparison) -> impl Iterator<Item = &Row> {
    c.rows.iter().filter(|r| r.group == "paging")
}

/// A cell's text when the run has no figure for the test.
fn absent(cell: &CellState) -> Option<&'static str> {
    match cell {
        CellState::Present(_) => None,
        CellState::Failed { .. } => Some("failed"),
        CellState::Missing => Some("missing"),
    }
}

/// One figure of every run for a row, or "missing"/"failed".
fn per_run(c: &Comparison, row: &Row, f: impl Fn(&Cell, bool) -> String) -> Vec<String> {
    row.cells
        .iter()
        .enumerate()
        .map(|(i, cell)| match cell {
            CellState::Present(x) => f(x, published(c, i)),
            other => absent(other).unwrap_or("-").to_string(),
        })
        .collect()
}

/// A column group of the tables: its title and how a run's cell of a row reads in it (the
/// flag says the run is published).
type Figure = (&'static str, fn(&Row, &Cell, bool) -> String);

/// Seconds for the paper's count, or "-" for a test no paper counted (#43).
fn counted(row: &Row, s: f64, published: bool) -> String {
    if crate::bench::has_paper_count(&row.group) {
        secs(s, published)
    } else {
        "-".into()
    }
}
fn real(row: &Row, x: &Cell, published: bool) -> String {
    counted(row, x.real_s, published)
}
fn user(row: &Row, x: &Cell, published: bool) -> String {
    counted(row, x.user_s, published)
}
fn system(row: &Row, x: &Cell, published: bool) -> String {
    counted(row, x.sys_s, published)
}
fn us_per_op(_: &Row, x: &Cell, _: bool) -> String {
    num(x.us_per_op)
}
/// Faults for one run of the paper's program (Table 7).
fn faults_per_run(row: &Row, x: &Cell, _: bool) -> String {
    format!("{:.0}", x.faults_per_op * row.paper_count as f64)
}

/// Table 2's columns: Elapsed, User, System, then microseconds per operation (`unit` is
/// "us/op" in plain text, "µs/op" in Markdown).
fn table2_figures(unit: &'static str) -> [Figure; 4] {
    [
        ("Elapsed", real),
        ("User", user),
        ("System", system),
        (unit, us_per_op),
    ]
}

/// Table 7's columns: Real, User, System, and page faults for one run of the program.
const TABLE7_FIGURES: [Figure; 4] = [
    ("Elapsed", real),
    ("User", user),
    ("System", system),
    ("Page faults", faults_per_run),
];

fn verdict_word(r: &Ratio) -> String {
    let word = match r.verdict {
        Verdict::Faster => format!("faster ({}x)", sig3(1.0 / r.ratio)),
        // Regressions must stand out in a terminal full of numbers.
        Verdict::Slower => format!("SLOWER ({}x) !", sig3(r.ratio)),
        Verdict::NoChange => "~".into(),
        Verdict::Inconclusive => "?".into(),
        Verdict::Published => "no CI".into(),
        Verdict::TooFewTrials => "<3 trials".into(),
        Verdict::NoVerdict => "no CI".into(),
        Verdict::NoiseUnknown => crate::compare::NOISE_UNKNOWN.into(),
        Verdict::Disturbed => crate::compare::DISTURBED.into(),
        Verdict::Unlike => crate::compare::UNLIKE.into(),
        Verdict::SittingsUnknown => crate::compare::SITTINGS_UNKNOWN.into(),
    };
    format!("{word}{}", significance_note(r))
}

/// The significance of a change the verdict does not call (one inside the noise band, or
/// not shown beyond it), as a second statement: "; significantly slower (1.02x), not beyond
/// the band". Empty when the verdict says it all.
pub fn significance_note(r: &Ratio) -> String {
    use crate::compare::Significance;
    let (word, x) = match r.significant {
        Some(Significance::Slower) => ("slower", r.ratio),
        Some(Significance::Faster) => ("faster", 1.0 / r.ratio),
        _ => return String::new(),
    };
    match r.verdict {
        Verdict::NoChange => format!(" (significantly {word}, {}x: inside the band)", sig3(x)),
        Verdict::Inconclusive => {
            format!(
                " (significantly {word}, {}x: not shown beyond the band)",
                sig3(x)
            )
        }
        _ => String::new(),
    }
}

/// What a ratio's interval covers, for a table cell.
fn covers_cell(r: &Ratio) -> String {
    if r.ci.is_some() {
        r.covers.as_str().to_string()
    } else {
        String::new()
    }
}

fn ci_text(ci: Option<[f64; 2]>) -> String {
    ci.map(|[lo, hi]| format!("[{}, {}]", sig3(lo), sig3(hi)))
        .unwrap_or_default()
}

/// The ratio columns of one run for a row: ratio, interval, verdict; "-" without a ratio.
fn ratio_cells<M: Style>(m: &M, r: Option<&Ratio>) -> Vec<String> {
    match r {
        Some(r) => vec![sig3(r.ratio), ci_text(r.ci), covers_cell(r), m.verdict(r)],
        None => vec!["-".into(), String::new(), String::new(), String::new()],
    }
}

/// A comparison's sections, in the order a format writes them.
#[derive(Clone, Copy)]
enum Section {
    Head,
    Tables,
    Adjusted,
    Counters,
    Series,
    Failed,
    Derived,
    Doctor,
    Warnings,
    Fingerprints,
}

/// What a format does with what only a comparison has: the unit of its time per operation,
/// the order of its sections, text from outside, verdicts, and the two parts whose layout is
/// its own (the runs and the fingerprints' differences).
trait Style: Markup {
    /// Microseconds per operation: "us/op" in a terminal, "µs/op" in Markdown.
    const MICRO_OP: &'static str;
    /// Text leads with the tables, as the answer does (#33), and keeps the speed-adjusted
    /// table; Markdown states the machines first and has no speed-adjusted table.
    const ORDER: &'static [Section];
    fn esc(&self, s: &str) -> String;
    fn verdict(&self, r: &Ratio) -> String;
    /// The runs compared: a line each in text; a table, then citations and commands, in
    /// Markdown.
    fn runs(&mut self, c: &Comparison);
    /// The fingerprints' differences: each value on a line of its own in text; a table in
    /// Markdown.
    fn differences(&mut self, c: &Comparison);
}

impl Style for Text {
    const MICRO_OP: &'static str = "us/op";
    const ORDER: &'static [Section] = &[
        Section::Head,
        Section::Tables,
        Section::Adjusted,
        Section::Counters,
        Section::Series,
        Section::Failed,
        Section::Derived,
        Section::Doctor,
        Section::Warnings,
        Section::Fingerprints,
    ];
    fn esc(&self, s: &str) -> String {
        s.to_string()
    }
    fn verdict(&self, r: &Ratio) -> String {
        verdict_word(r)
    }
    fn runs(&mut self, c: &Comparison) {
        let lines: Vec<String> = (0..c.runs.len())
            .map(|i| format!("{} {}", tag(i), run_line(c, i)))
            .collect();
        self.list(&lines, false);
    }
    fn differences(&mut self, c: &Comparison) {
        let mut lines = Vec::new();
        for d in &c.fingerprint_diffs {
            if d.values.iter().all(Option::is_none) {
                // A count of what is not listed ("... and 12 more config options").
                lines.push(d.field.clone());
                continue;
            }
            for (i, v) in d.values.iter().enumerate() {
                lines.push(format!(
                    "{:<20} {} {}",
                    if i == 0 { d.field.as_str() } else { "" },
                    tag(i),
                    v.as_deref().unwrap_or("unknown")
                ));
            }
            if let Some(r) = &d.related {
                lines.push(format!("{:<20} tied to: {r}", ""));
            }
        }
        self.list(&lines, false);
    }
}

impl Style for Markdown {
    const MICRO_OP: &'static str = "µs/op";
    const ORDER: &'static [Section] = &[
        Section::Head,
        Section::Fingerprints,
        Section::Warnings,
        Section::Doctor,
        Section::Tables,
        Section::Counters,
        Section::Series,
        Section::Failed,
        Section::Derived,
    ];
    fn esc(&self, s: &str) -> String {
        md(s)
    }
    fn verdict(&self, r: &Ratio) -> String {
        md_verdict(r)
    }
    fn runs(&mut self, c: &Comparison) {
        let heads = ["", "run", "label", "source", "started", "host", "kernel"];
        let mut t = Table::new(
            heads
                .iter()
                .map(|h| Group::single("", h, Align::Left))
                .collect(),
        );
        for (i, r) in c.runs.iter().enumerate() {
            let cells = [
                format!(
                    "{}{}{}",
                    tag(i),
                    if i == c.baseline { " baseline" } else { "" },
                    if r.complete { "" } else { " **incomplete**" }
                ),
                format!("`{}`", r.id),
                md(r.label.as_deref().unwrap_or("")),
                md(&r.source),
                if r.source == "published" {
                    "-".into()
                } else {
                    utc(r.started_ns)
                },
                md(r.hostname.as_deref().unwrap_or("?")),
                md(r.kernel_release.as_deref().unwrap_or("?")),
            ];
            t.row(cells.into_iter().map(|x| vec![x]).collect());
        }
        self.table(&t);
        for (i, r) in c.runs.iter().enumerate() {
            if let Some(cite) = &r.citation {
                self.line(&format!("{} published in: {}", tag(i), md(cite)));
            }
        }
        for (i, r) in c.runs.iter().enumerate() {
            if let Some(command) = &r.command {
                self.line(&format!(
                    "{} timed the command {}",
                    tag(i),
                    md_code(command)
                ));
            }
        }
    }
    fn differences(&mut self, c: &Comparison) {
        let mut t = Table::new(vec![
            Group::single("", "fact", Align::Left),
            Group::new("", tag_columns(c, "", Align::Left)),
        ]);
        for d in &c.fingerprint_diffs {
            let fact = match &d.related {
                Some(r) => format!("{} (tied to: {})", md(&d.field), md(r)),
                None => md(&d.field),
            };
            let values = d
                .values
                .iter()
                .map(|v| md(v.as_deref().unwrap_or("unknown")))
                .collect();
            t.row(vec![vec![fact], values]);
        }
        self.table(&t);
    }
}

/// One column per run, named by its tag (after `prefix` when alone).
fn tag_columns(c: &Comparison, prefix: &str, align: Align) -> Vec<Column> {
    (0..c.runs.len())
        .map(|i| {
            let alone = format!("{prefix} {}", tag(i));
            Column::new(tag(i), alone.trim_start(), align)
        })
        .collect()
}

/// A ratio's group of columns for run `i`: the ratio, then `rest`, which sit on the left from
/// the third column on (the interval is a number; its coverage and verdict are words).
fn ratio_group(c: &Comparison, i: usize, first: &str, rest: &[&str]) -> Group {
    let title = format!("{} / {}", tag(i), tag(c.baseline));
    let mut columns = vec![Column::new(first, title.clone(), Align::Right)];
    columns.extend(rest.iter().enumerate().map(|(k, name)| {
        let align = if k == 0 { Align::Right } else { Align::Left };
        Column::new(*name, format!("{title} {name}"), align)
    }));
    Group::new(title, columns)
}

/// The comparison as text: runs, method, Table 2, Table 7, the speed-adjusted ratios,
/// counters, suites, derived figures, then the doctor, warnings and fingerprint differences.
pub fn text(c: &Comparison) -> String {
    walk(c, Text::default())
}

/// The comparison as GitHub-flavoured Markdown, to paste into a mailing list or an issue.
pub fn markdown(c: &Comparison) -> String {
    walk(c, Markdown::default())
}

/// The one walk: each section in the format's order.
fn walk<M: Style>(c: &Comparison, mut m: M) -> String {
    for section in M::ORDER {
        match section {
            Section::Head => head(c, &mut m),
            Section::Tables => figure_tables(c, &mut m),
            Section::Adjusted => adjusted(c, &mut m),
            Section::Counters => counters(c, &mut m),
            Section::Series => suites(c, &mut m),
            Section::Failed => {
                let failed: Vec<String> = failures(c).iter().map(|f| m.esc(f)).collect();
                if !failed.is_empty() {
                    m.heading("Failed", "");
                    m.list(&failed, false);
                }
            }
            Section::Derived => derived(c, &mut m),
            Section::Doctor => doctor(c, &mut m),
            Section::Warnings => warnings(c, &mut m),
            Section::Fingerprints => {
                if c.fingerprint_diffs.is_empty() {
                    m.note("Fingerprints: nothing differs (kernel, command line, mitigations, governor, virtualization, CPU, memory, cgroup limits)");
                } else {
                    m.heading("What differs between the runs' fingerprints", "");
                    m.differences(c);
                }
            }
        }
    }
    m.finish()
}

/// The runs, whether they are smoke tests, the method, what the intervals cover, and how
/// each run's User and System were obtained.
fn head<M: Style>(c: &Comparison, m: &mut M) {
    // One run (`run`, `show` or a command alone, exported) is no comparison (#43: its
    // Markdown was headed "sysperf compare").
    let one_run = c.runs.len() == 1 && c.group_runs.first().is_none_or(|n| *n <= 1);
    let (title, aside) = if one_run {
        ("sysperf run", ": 1 run, no ratios".to_string())
    } else {
        (
            "sysperf compare",
            format!(
                ": {} run{}; ratios are to {} (the baseline)",
                c.runs.len(),
                if c.runs.len() == 1 { "" } else { "s" },
                tag(c.baseline)
            ),
        )
    };
    let aside = m.aside(&aside);
    m.title(title, aside);
    m.runs(c);
    if let Some(line) = smoke_line(c) {
        let line = m.esc(&line);
        m.alert(&line);
    }
    for line in missing_lines(c) {
        let line = m.esc(&line);
        m.alert(&line);
    }
    let method = m.esc(&c.method);
    m.fact("method", &method);
    let covers = m.esc(&c.covers);
    m.fact("intervals", &covers);
    for line in split_lines(c) {
        let line = m.esc(&line);
        m.line(&line);
    }
}

/// Table 2 and Table 7.
fn figure_tables<M: Style>(c: &Comparison, m: &mut M) {
    let kernel: Vec<&Row> = kernel_rows(c).collect();
    if !kernel.is_empty() {
        m.heading(
            "Table 2. Kernel benchmarks",
            &format!("(Elapsed, User, System: seconds for the paper's count; {}: median wall microseconds per operation)", M::MICRO_OP),
        );
        let t = figure_table(c, m, &kernel, &table2_figures(M::MICRO_OP));
        m.table(&t);
    }
    let paging: Vec<&Row> = paging_rows(c).collect();
    if !paging.is_empty() {
        m.heading(
            "Table 7. Paging benchmarks",
            "(seconds and page faults for one run of the paper's program)",
        );
        let t = figure_table(c, m, &paging, &TABLE7_FIGURES);
        m.table(&t);
    }
}

/// A table of the paper's: per row, each figure of every run, then each run's ratio to the
/// baseline with its interval and verdict.
fn figure_table<M: Style>(c: &Comparison, m: &M, rows: &[&Row], figures: &[Figure]) -> Table {
    let mut groups = vec![Group::single("", "Test", Align::Left)];
    groups.extend(
        figures
            .iter()
            .map(|(t, _)| Group::new(*t, tag_columns(c, t, Align::Right))),
    );
    groups.extend(others(c).map(|i| ratio_group(c, i, "ratio", &["95% CI", "covers", "verdict"])));
    let mut t = Table::new(groups);
    for row in rows {
        let mut line = vec![vec![m.esc(&row.label)]];
        for (_, f) in figures {
            line.push(per_run(c, row, |x, p| f(row, x, p)));
        }
        line.extend(others(c).map(|i| ratio_cells(m, row.ratios[i].as_ref())));
        t.row(line);
    }
    t
}

/// The speed-adjusted ratios (#42): a table beside the raw one, after the host's own
/// ratio. Nothing when no row has one.
fn adjusted<M: Style>(c: &Comparison, m: &mut M) {
    let rows: Vec<&Row> = c.rows.iter().filter(|r| !r.adjusted.is_empty()).collect();
    if rows.is_empty() {
        return;
    }
    m.heading(
        "Speed-adjusted",
        &format!("(each test's time over its run's speed: the geometric mean of the run's other tests' times, or of the '{}' loop where it measured no other: what moved every test alike (the host, or a kernel change that slows them all) moves the raw ratios, not these; a change to some tests moves both)",
        crate::bench::hostspeed::ID),
    );
    if let Some(host) = c.rows.iter().find(|r| r.id == crate::bench::hostspeed::ID) {
        let lines: Vec<String> = others(c)
            .filter_map(|i| {
                let r = host.ratios[i].as_ref()?;
                Some(format!(
                    "host speed {} / {}: {} {} ({}): {}",
                    tag(i),
                    tag(c.baseline),
                    sig3(r.ratio),
                    ci_text(r.ci),
                    covers_cell(r),
                    m.verdict(r)
                ))
            })
            .collect();
        m.list(&lines, false);
    }
    let mut groups = vec![Group::single("", "Test", Align::Left)];
    groups.extend(
        others(c).map(|i| ratio_group(c, i, "adjusted", &["95% CI", "covers", "verdict", "moved"])),
    );
    let mut t = Table::new(groups);
    for row in rows {
        let mut line = vec![vec![m.esc(&row.label)]];
        for i in others(c) {
            let adjusted = row.adjusted.get(i).and_then(Option::as_ref);
            let mut cells = ratio_cells(m, adjusted);
            cells.push(moved(row.ratios[i].as_ref(), adjusted).to_string());
            line.push(cells);
        }
        t.row(line);
    }
    m.table(&t);
}

/// The counters of the observed runs, a row per test and run.
fn counters<M: Style>(c: &Comparison, m: &mut M) {
    let counters = counter_rows(c);
    if counters.is_empty() {
        return;
    }
    m.heading("Counters", "(run --observe: perf counters per operation from the warm-up trial, or every trial of a --quick run; interrupts per trial, system-wide)");
    let mut groups = vec![
        Group::single("", "Test", Align::Left),
        Group::single("", "run", Align::Left),
    ];
    groups.extend(
        COUNTER_HEADS
            .iter()
            .map(|h| Group::single("", h, Align::Right)),
    );
    let mut t = Table::new(groups);
    // In text, the widths the counters always had; "run" sits on the right there.
    let mut fixed = vec![(Align::Left, 21), (Align::Right, 4)];
    fixed.extend([10, 10, 10, 11, 10].map(|w| (Align::Right, w)));
    t.fixed = Some(fixed);
    for r in &counters {
        let mut line = vec![vec![m.esc(&r.label)], vec![tag(r.run)]];
        line.extend(r.cells.iter().map(|x| vec![x.clone()]));
        t.row(line);
    }
    m.table(&t);
}

/// The suites' curves: per point each run's y with its interval, and each run against the
/// baseline (ratio of time per operation, so above 1 is slower for a throughput too).
fn suites<M: Style>(c: &Comparison, m: &mut M) {
    if c.series.is_empty() {
        return;
    }
    m.heading("Suites", "(y per run with its interval, whose level each table's header gives; ratios are of time per operation: above 1 is slower)");
    for row in &c.series {
        let head = m.esc(&series_head(row));
        m.caption(&head);
        let mut groups = vec![Group::new("", vec![Column::new("", "x", Align::Left)])];
        groups.extend((0..c.runs.len()).map(|i| {
            let y = Column::new("", tag(i), Align::Right);
            Group::new(tag(i), vec![y, Column::new("", "", Align::Right)])
        }));
        groups.extend(others(c).map(|i| {
            let mut g = ratio_group(c, i, "", &["", "", ""]);
            g.columns.iter_mut().for_each(|k| k.align = Align::Right);
            g
        }));
        groups.iter_mut().for_each(|g| g.one_cell = true);
        let mut t = Table::new(groups);
        t.names = false;
        for p in &row.points {
            let mut line = vec![vec![m.esc(&series_x(p.x, &p.label))]];
            for y in &p.y {
                let (v, ci) = series_y(row.y_kind, y.as_ref());
                line.push(vec![v, ci]);
            }
            line.extend(others(c).map(|i| ratio_cells(m, p.ratios[i].as_ref())));
            t.row(line);
        }
        m.table(&t);
    }
}

/// The suites' section alone in Markdown (its snapshot test).
#[cfg(test)]
fn series_markdown(c: &Comparison) -> String {
    let mut m = Markdown::default();
    suites(c, &mut m);
    m.finish()
}

/// The derived figures, each run's value and ratio, then why each "n/a" is one.
fn derived<M: Style>(c: &Comparison, m: &mut M) {
    if c.derived.is_empty() {
        return;
    }
    m.heading("Derived figures", "");
    let mut groups = vec![
        Group::single("", "Figure", Align::Left),
        Group::new("", tag_columns(c, "", Align::Right)),
        Group::single("", "unit", Align::Left),
    ];
    groups.extend(others(c).map(|i| ratio_group(c, i, "ratio", &[])));
    groups.push(Group::single("", "formula", Align::Left));
    let mut t = Table::new(groups);
    for d in &c.derived {
        let mut line = vec![
            vec![m.esc(&d.name)],
            derived_values(d),
            vec![m.esc(&d.unit)],
        ];
        line.extend(others(c).map(|i| vec![derived_ratio(d, c.baseline, i)]));
        line.push(vec![m.esc(formula(d))]);
        t.row(line);
    }
    m.table(&t);
    let na: Vec<String> = derived_na(c).iter().map(|l| m.esc(l)).collect();
    m.list(&na, false);
}

/// What the doctor found, each finding once with the runs it concerns.
fn doctor<M: Style>(c: &Comparison, m: &mut M) {
    let doctor = doctor_findings(c);
    if doctor.is_empty() {
        return;
    }
    let gloss = m.aside(": what on each machine makes results noisy or not comparable");
    m.heading(&format!("Doctor ({}){gloss}", doctor.len()), "");
    let items: Vec<String> = doctor
        .into_iter()
        .map(|(runs, x)| {
            format!(
                "{} {}: {} (fix: {})",
                runs,
                x.severity.as_str(),
                m.esc(&x.title),
                m.esc(&x.fix)
            )
        })
        .collect();
    m.list(&items, false);
}

/// The runs' warnings, each with its run's tag.
fn warnings<M: Style>(c: &Comparison, m: &mut M) {
    if c.warnings.is_empty() {
        m.note("Warnings: none");
        return;
    }
    m.heading(&format!("Warnings ({})", c.warnings.len()), "");
    // Each run's in turn, other work's one line per cause (#43).
    let mut items: Vec<String> = Vec::new();
    for (i, r) in c.runs.iter().enumerate() {
        let own = c
            .warnings
            .iter()
            .filter(|w| w.run == r.id)
            .map(|w| &w.warning);
        for line in super::warnings::lines(own) {
            items.push(format!("{} {}", tag(i), m.esc(&line)));
        }
    }
    // A warning of a run not among the columns (none should be) is still said, under [1].
    for w in c
        .warnings
        .iter()
        .filter(|w| !c.runs.iter().any(|r| r.id == w.run))
    {
        items.push(format!("{} {}", tag(0), m.esc(&w.warning.message)));
    }
    m.list(&items, true);
}

fn run_line(c: &Comparison, i: usize) -> String {
    let r = &c.runs[i];
    let label = r
        .label
        .as_ref()
        .map(|l| format!(" \"{l}\""))
        .unwrap_or_default();
    let what = if r.source == "published" {
        format!(
            "published: {}",
            r.citation.as_deref().unwrap_or("no citation")
        )
    } else {
        format!(
            "measured {} on {}, kernel {}",
            utc(r.started_ns),
            r.hostname.as_deref().unwrap_or("?"),
            r.kernel_release.as_deref().unwrap_or("?")
        )
    };
    let command = r
        .command
        .as_ref()
        .map(|c| format!("  command: `{c}`"))
        .unwrap_or_default();
    format!(
        "{}{}{}{}  {}{command}",
        r.id,
        label,
        if i == c.baseline { " (baseline)" } else { "" },
        if r.complete { "" } else { " (INCOMPLETE)" },
        what
    )
}

/// The tables' ratio blocks: titles and, per row, cells.
/// A point's y in a comparison cell, in the unit that suits it; "-" where the run lacks it.
fn series_y(kind: YKind, y: Option<&Estimate>) -> (String, String) {
    match y {
        Some(e) => {
            let (div, unit) = series::y_unit(kind, e.median.abs());
            (
                format!("{} {unit}", num(e.median / div)),
                if e.n > 0 {
                    format!("[{}, {}]", num(e.ci_low / div), num(e.ci_high / div))
                } else {
                    String::new()
                },
            )
        }
        None => ("-".into(), String::new()),
    }
}

fn series_x(x: f64, label: &Option<String>) -> String {
    label.clone().unwrap_or_else(|| crate::suite::fmt_x(x))
}

fn series_head(row: &SeriesRow) -> String {
    let x = if row.x_unit.is_empty() {
        row.x_name.clone()
    } else {
        format!("{} ({})", row.x_name, row.x_unit)
    };
    format!("{}: {} [{}]; x = {x}", row.figure_title, row.curve, row.id)
}

/// Which moved between the baseline and a run (#42), from the raw verdict and the
/// speed-adjusted one: the test (both say the same change), every test (the raw ratio
/// changed and the adjusted one did not: the host, or a change that moves every test), or
/// the test where the rest hid it (only the adjusted one changed).
pub fn moved(raw: Option<&Ratio>, adjusted: Option<&Ratio>) -> &'static str {
    use crate::compare::Verdict::*;
    let change = |r: Option<&Ratio>| r.map(|r| r.verdict).filter(|v| v.is_change());
    match (change(raw), adjusted.map(|r| r.verdict)) {
        (_, None) => "",
        (Some(a), Some(b)) if a == b => "the test",
        (Some(_), Some(b)) if b.is_change() => "the test and every test, opposite ways",
        (Some(_), Some(NoChange)) => "every test",
        (Some(_), Some(_)) => "every test, at least",
        (None, Some(b)) if b.is_change() => "the test (the rest hid it)",
        (None, Some(_)) => "",
    }
}

/// `ab --sittings` as text (#42): each test's paired ratio in each sitting, then across
/// them with its verdict, and whether the sittings agree.
pub fn sittings_text(
    rows: &[crate::compare::SittingsRow],
    labels: &[String],
    spacing_s: f64,
) -> String {
    let k = labels.len();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "sysperf ab across {k} sittings, each started {} s after the previous one ended: each sitting is paired round by round; the ratio across them is the mean of their log ratios, its 95% interval a t interval on {} degrees of freedom over their spread (never narrower than their own intervals allow), so an effect that differs between the host's states is covered as the sittings met them",
        num(spacing_s),
        k.saturating_sub(1)
    );
    for (i, l) in labels.iter().enumerate() {
        let _ = writeln!(s, "  s{} {l}", i + 1);
    }
    let mut groups = vec![Group::single("", "Test", Align::Left)];
    groups.extend((1..=k).map(|i| {
        let ratio = Column::new("ratio", "", Align::Right);
        Group::new(
            format!("s{i}"),
            vec![ratio, Column::new("95% CI", "", Align::Right)],
        )
    }));
    let across = Group::new(
        "across sittings",
        ["ratio", "95% CI", "covers", "verdict"]
            .iter()
            .enumerate()
            .map(|(j, n)| Column::new(*n, "", if j < 2 { Align::Right } else { Align::Left }))
            .collect(),
    );
    groups.push(across);
    groups.push(Group::single("", "sittings", Align::Left));
    let mut t = Table::new(groups);
    let mut text = Text::default();
    for row in rows {
        let mut line = vec![vec![row.id.clone()]];
        for r in &row.sittings {
            line.push(match r {
                Some(r) => vec![sig3(r.ratio), ci_text(r.ci)],
                None => vec!["-".into(), "no interval".into()],
            });
        }
        line.push(ratio_cells(&text, row.across.as_ref()));
        line.push(vec![match (row.p_agree, row.disagree) {
            (Some(p), true) => format!(
                "disagree (p = {}): the effect depends on the host's state",
                sig3(p)
            ),
            (Some(p), false) => format!("agree (p = {})", sig3(p)),
            (None, _) => "a sitting has no interval".into(),
        }]);
        t.row(line);
    }
    text.table(&t);
    s + &text.finish()
}

fn failures(c: &Comparison) -> Vec<String> {
    c.rows
        .iter()
        .flat_map(|row| {
            row.cells
                .iter()
                .enumerate()
                .filter_map(move |(i, cell)| match cell {
                    CellState::Failed { error } => Some(format!("{} {}: {error}", tag(i), row.id)),
                    _ => None,
                })
        })
        .collect()
}

/// The formula without the figures it was computed from ("(csw - 2 x signocsw) / 2"): each
/// run's own figures are in `sysperf show RUN`.
fn formula(d: &DerivedRow) -> &str {
    d.formula.split(" = ").next().unwrap_or(&d.formula)
}

fn derived_ratio(d: &DerivedRow, baseline: usize, i: usize) -> String {
    match (d.values.get(baseline).copied().flatten(), d.values[i]) {
        (Some(b), Some(v)) if b > 0.0 && v > 0.0 => sig3(v / b),
        _ => "-".into(),
    }
}

/// How each run's User and System were obtained, one line a run, when a table shows them:
/// a published run's are the paper's as printed; a measured run's are its kernel's split,
/// tick-sampled on most (`crate::cpusplit`), which understates the System of short-lived
/// children beside the paper's (#45).
fn split_lines(c: &Comparison) -> Vec<String> {
    if c.rows.is_empty() {
        return Vec::new();
    }
    c.runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let how = match (&r.cpu_split, r.source == "published") {
                (_, true) => "the paper's time(1) figures, as printed".to_string(),
                (Some(split), false) => split.clone(),
                (None, false) => "unknown: no kernel configuration was kept with the run, so \
                                  the split may be tick-sampled (a child living less than a \
                                  tick is charged all user)"
                    .to_string(),
            };
            format!("User/System of {}: {how}", tag(i))
        })
        .collect()
}

/// The runs' doctor findings, each distinct one (severity, title, fix) once, with the tags of
/// the runs it was found for ("[1,2,3]"), in the order first found.
fn doctor_findings(c: &Comparison) -> Vec<(String, &crate::model::Finding)> {
    let mut out: Vec<(Vec<usize>, &crate::model::Finding)> = Vec::new();
    for f in &c.findings {
        let i = c.runs.iter().position(|r| r.id == f.run).unwrap_or(0);
        let x = &f.finding;
        match out
            .iter_mut()
            .find(|(_, y)| y.severity == x.severity && y.title == x.title && y.fix == x.fix)
        {
            Some((runs, _)) if !runs.contains(&i) => runs.push(i),
            Some(_) => {}
            None => out.push((vec![i], x)),
        }
    }
    out.into_iter()
        .map(|(runs, x)| {
            let n: Vec<String> = runs.iter().map(|i| (i + 1).to_string()).collect();
            (format!("[{}]", n.join(",")), x)
        })
        .collect()
}

/// Markdown-escapes text from outside (labels, citations, warnings, fingerprint values) for a
/// table cell or a list item: a `|` would end the cell, `<` would open an HTML tag, `*`, `_`
/// and `` ` `` would change the type, `[` could start a link. sysperf's own tags and
/// intervals ("[2]", "[1.18, 1.22]") are not escaped, so the raw text stays readable in a mail.
fn md(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '\\' | '|' | '<' | '>' | '*' | '_' | '`' | '[' | ']' | '~' | '&' => {
                out.push('\\');
                out.push(ch);
            }
            '\n' | '\r' => out.push(' '),
            _ => out.push(ch),
        }
    }
    out
}

/// Text from outside as a Markdown code span: a fence one backtick longer than the longest
/// run of backticks inside, so that nothing in it is read as Markdown (a command line).
pub fn md_code(s: &str) -> String {
    let text = s.replace(['\n', '\r'], " ");
    let (mut run, mut longest) = (0, 0);
    for ch in text.chars() {
        run = if ch == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

fn md_verdict(r: &Ratio) -> String {
    let word = match r.verdict {
        Verdict::Faster => format!("faster ({}x)", sig3(1.0 / r.ratio)),
        Verdict::Slower => format!("**SLOWER** ({}x)", sig3(r.ratio)),
        Verdict::NoChange => "no change".into(),
        Verdict::Inconclusive => "inconclusive".into(),
        Verdict::Published => "no CI".into(),
        Verdict::TooFewTrials => "<3 trials".into(),
        Verdict::NoVerdict => "no CI".into(),
        Verdict::NoiseUnknown => md(crate::compare::NOISE_UNKNOWN),
        Verdict::Disturbed => md(crate::compare::DISTURBED),
        Verdict::Unlike => md(crate::compare::UNLIKE),
        Verdict::SittingsUnknown => md(crate::compare::SITTINGS_UNKNOWN),
    };
    format!("{word}{}", md(&significance_note(r)))
}

/// The facts a comparison shows whenever they differ: which machine, system and kernel.
const CORE_FACTS: &[&str] = &[
    "hostname",
    "kernel",
    "os",
    "cpu",
    "cores/threads",
    "memory",
    "virtualization",
];

/// The fingerprint differences that matter to the compared tests, then one line counting the
/// rest (what `compare` prints unless `--all-differences`): the machine's core facts; and
/// every other fact that each run records, unless `data/kernel-ties.tsv` ties it only to
/// tests not compared. A fact one run does not record (a published run's sysctls) is no
/// difference to act on.
pub fn differences_that_matter(c: &Comparison) -> Vec<crate::compare::FingerprintDiff> {
    let tests: Vec<&str> = c.rows.iter().map(|r| r.id.as_str()).collect();
    let bears_on_tests = |related: &str| {
        let patterns = related.split(" (").next().unwrap_or("");
        patterns
            .split(',')
            .map(str::trim)
            .any(|p| tests.iter().any(|t| crate::bench::glob_match(p, t)))
    };
    let (mut keep, mut unknown, mut untied) = (Vec::new(), 0usize, 0usize);
    for d in &c.fingerprint_diffs {
        let known = d.values.iter().all(Option::is_some);
        if CORE_FACTS.contains(&d.field.as_str())
            || (known && d.related.as_deref().is_none_or(bears_on_tests))
        {
            keep.push(d.clone());
        } else if known {
            untied += 1;
        } else {
            unknown += 1;
        }
    }
    if unknown + untied > 0 {
        keep.push(crate::compare::FingerprintDiff {
            field: format!(
                "... and {} more: {unknown} a run does not record, {untied} tied to tests not compared ('sysperf compare --all-differences' lists them)",
                unknown + untied
            ),
            values: vec![None; c.runs.len()],
            related: None,
        });
    }
    keep
}

/// What a comparison of `--quick` runs says under its runs: they are smoke tests.
pub fn smoke_line(c: &Comparison) -> Option<String> {
    let quick: Vec<String> = (0..c.runs.len())
        .filter(|&i| c.runs[i].quick)
        .map(tag)
        .collect();
    (!quick.is_empty()).then(|| {
        format!(
            "SMOKE TEST: {} {} --quick (one trial per test, no warm-up): the figures check that the tests run and do not measure the machine; run without --quick to measure",
            quick.join(" "),
            if quick.len() == 1 { "is" } else { "are" }
        )
    })
}

/// For each run that lacks most of the baseline's tests, what it lacks and the run that has
/// them (#43: `compare vax750-4.3bsd latest` after a quick run of one test answered with 27
/// `missing` rows and no word on what to run). Empty when every run has at least half.
pub fn missing_lines(c: &Comparison) -> Vec<String> {
    let has = |i: usize, r: &crate::compare::Row| !matches!(r.cells[i], CellState::Missing);
    let base: Vec<&crate::compare::Row> = c.rows.iter().filter(|r| has(c.baseline, r)).collect();
    (0..c.runs.len())
        .filter(|&i| i != c.baseline)
        .filter_map(|i| {
            let lacking: Vec<&str> = base
                .iter()
                .filter(|r| !has(i, r))
                .map(|r| r.id.as_str())
                .collect();
            (2 * lacking.len() > base.len()).then(|| {
                let shown: Vec<&str> = lacking.iter().take(8).copied().collect();
                format!(
                    "{} has {} of the {} tests of {}: to compare them all, measure them (sysperf run {}{})",
                    tag(i),
                    base.len() - lacking.len(),
                    base.len(),
                    tag(c.baseline),
                    shown.join(" "),
                    if lacking.len() > shown.len() {
                        format!(" ...; or sysperf run alone for every test: {} more", lacking.len() - shown.len())
                    } else {
                        String::new()
                    }
                )
            })
        })
        .collect()
}

/// A derived figure's cells, one per run: its value, "n/a" where its inputs cannot support it
/// (the reason follows the table), "-" where the run lacks it.
fn derived_values(d: &DerivedRow) -> Vec<String> {
    d.values
        .iter()
        .zip(&d.na)
        .map(|(v, na)| match (v, na) {
            (_, Some(_)) => "n/a".to_string(),
            (Some(v), None) => num(*v),
            (None, None) => "-".to_string(),
        })
        .collect()
}

/// Why each "n/a" of the derived figures is one: "n/a [2] context switch: one trial ...".
fn derived_na(c: &Comparison) -> Vec<String> {
    c.derived
        .iter()
        .flat_map(|d| {
            d.na.iter().enumerate().filter_map(move |(i, why)| {
                why.as_ref()
                    .map(|why| format!("n/a {} {}: {why}", tag(i), d.name))
            })
        })
        .collect()
}

/// A CSV text field (ids, labels: never a number), quoted as RFC 4180 says: when it holds a
/// comma, a quote or a line break, in double quotes with its quotes doubled. Text that begins
/// with `=`, `+`, `-`, `@`, a tab or a carriage return, which a spreadsheet would take for a
/// formula (an imported run's label could be `=HYPERLINK(...)`), gets a leading `'` and the
/// quotes, so that it stays text.
fn csv_field(s: &str) -> String {
    if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("\"'{}\"", s.replace('"', "\"\""))
    } else if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A number in full precision (the shortest text that reads back exactly), empty if absent.
fn csv_num(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite())
        .map(|v| v.to_string())
        .unwrap_or_default()
}

fn verdict_code(v: Verdict) -> &'static str {
    match v {
        Verdict::Faster => "faster",
        Verdict::Slower => "slower",
        Verdict::NoChange => "no_change",
        Verdict::Inconclusive => "inconclusive",
        Verdict::Published => "published",
        Verdict::TooFewTrials => "too_few_trials",
        Verdict::NoVerdict => "no_verdict",
        Verdict::NoiseUnknown => "noise_unknown",
        Verdict::Disturbed => "disturbed",
        Verdict::Unlike => "unlike_options",
        Verdict::SittingsUnknown => "sittings_unknown",
    }
}

/// The comparison as CSV: a header, then one line per test and run (tests in the paper's
/// order, runs in column order). `verdict` is `faster`, `slower`, `no_change`, `inconclusive`,
/// `published` (published against published), `too_few_trials` (a side has fewer than 3),
/// `no_verdict` (no finite interval), `noise_unknown` (single runs, no run-to-run variance
/// known), `disturbed` (other work beside the test), `unlike_options` (measured with other
/// options), `sittings_unknown` (runs of different sittings, too few sittings stored), `baseline`, `missing`, `failed`, or `no_baseline` (the baseline lacks the test). Derived figures and the suites' series are not included (see
/// the JSON, text or Markdown).
pub fn csv(c: &Comparison) -> String {
    let mut s = CSV_COLUMNS.join(",") + "\n";
    for row in &c.rows {
        for (i, cell) in row.cells.iter().enumerate() {
            let x = cell.cell();
            let ratio = row.ratios[i].as_ref();
            let verdict = match (cell, ratio) {
                (CellState::Missing, _) => "missing",
                (CellState::Failed { .. }, _) => "failed",
                _ if i == c.baseline => "baseline",
                (_, Some(r)) => verdict_code(r.verdict),
                (_, None) => "no_baseline",
            };
            let fields = [
                csv_field(&row.id),
                csv_field(&row.label),
                csv_field(&c.runs[i].id),
                csv_num(x.map(|x| x.real_s)),
                csv_num(x.map(|x| x.user_s)),
                csv_num(x.map(|x| x.sys_s)),
                csv_num(x.map(|x| x.us_per_op)),
                csv_num(x.and_then(|x| x.us_per_op_ci).map(|c| c[0])),
                csv_num(x.and_then(|x| x.us_per_op_ci).map(|c| c[1])),
                csv_num(ratio.map(|r| r.ratio)),
                csv_num(ratio.and_then(|r| r.ci).map(|c| c[0])),
                csv_num(ratio.and_then(|r| r.ci).map(|c| c[1])),
                verdict.to_string(),
                csv_num(x.and_then(|x| x.ci_level)),
                ratio
                    .map(|r| r.covers.as_str().to_string())
                    .unwrap_or_default(),
                ratio
                    .and_then(|r| r.significant)
                    .and_then(|v| serde_json::to_value(v).ok())
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
            ];
            s += &fields.join(",");
            s.push('\n');
        }
    }
    s
}

/// The comparison as one JSON document: the [`Comparison`] with `format: "sysperf-compare"`
/// and `format_version`.
pub fn json_value(c: &Comparison) -> Value {
    let mut v = serde_json::to_value(c).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut v {
        map.insert("format".into(), json!("sysperf-compare"));
        map.insert("format_version".into(), json!(FORMAT_VERSION));
    }
    v
}

/// [`json_value`] as pretty-printed text with a final newline.
pub fn json(c: &Comparison) -> String {
    let mut s = serde_json::to_string_pretty(&json_value(c)).unwrap_or_default();
    s.push('\n');
    s
}

/// `sysperf noise` as text: one line per test with its variance at both levels, the false
/// verdicts among all pairs of runs, and the smallest detectable change.
pub fn noise_text(
    runs: &[crate::model::Run],
    rows: &[crate::compare::NoiseRow],
    band: f64,
) -> String {
    let mut s = String::new();
    let first = runs.first();
    let _ = writeln!(
        s,
        "noise: {} runs on {} ({}), labelled '{}'; band +-{band}%",
        runs.len(),
        first
            .and_then(|r| r.fingerprint.hostname.clone())
            .unwrap_or_else(|| "?".into()),
        first
            .and_then(|r| r.fingerprint.kernel_release.clone())
            .unwrap_or_else(|| "?".into()),
        first.and_then(|r| r.label.clone()).unwrap_or_default()
    );
    let _ = writeln!(
        s,
        "{:<14} {:>9} {:>10}  {:>22}  {:>24}",
        "test", "within CV", "between CV", "false verdicts: trials", "detectable: 1 run / K runs"
    );
    let _ = writeln!(
        s,
        "{:<14} {:>9} {:>10}  {:>22}  {:>24}",
        "", "", "", "only / + run variance", "a side (95%, power 80%)"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{:<14} {:>8.1}% {:>9.1}%  {:>10} / {:<11}  {:>10.1}% / {:.1}%",
            r.id,
            100.0 * r.within_cv,
            100.0 * r.between_cv,
            format!("{}/{}", r.false_verdicts_trials_only, r.pairs),
            format!("{}/{}", r.false_verdicts_widened, r.pairs),
            r.detectable_pct_one_run,
            r.detectable_pct_k_runs,
        );
    }
    let _ = writeln!(
        s,
        "\nThe runs are stored: 'sysperf compare' widens one-run intervals by this machine's run-to-run variance from them."
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The series fixture with its 512-byte pipe point made 30% slower (trials and figures),
    /// and its 2-byte FIFO point removed.
    fn slower_series(base: &crate::model::Run) -> crate::model::Run {
        let mut slow = base.clone();
        slow.id = "00000000c0df".into();
        slow.label = Some("slower pipes".into());
        for p in slow.series[0].points.iter_mut().filter(|p| p.x == 512.0) {
            for t in &mut p.result.trials {
                t.wall_ns = t.wall_ns * 13 / 10;
            }
            let s = p.result.summary.as_mut().unwrap();
            s.wall_ns_per_op.median *= 1.3;
            let y = p.y.as_mut().unwrap();
            y.median /= 1.3;
            y.ci_low /= 1.3;
            y.ci_high /= 1.3;
        }
        slow.series[1].points.retain(|p| p.x != 2.0);
        slow
    }

    /// #43: a run with few of the baseline's tests says which and what to run.
    #[test]
    fn a_run_lacking_most_tests_says_what_to_run() {
        let base = crate::report::fixture_run();
        let mut few = base.clone();
        few.id = "00000000fe77".into();
        few.results.truncate(1);
        let c = crate::report::fixture_compare(&[base.clone(), few], 0, 2.0);
        let lines = missing_lines(&c);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].starts_with("[2] has 1 of the "), "{}", lines[0]);
        assert!(lines[0].contains("sysperf run "), "{}", lines[0]);
        assert!(text(&c).contains(&lines[0]));
        // Every test there: nothing to say.
        let c = crate::report::fixture_compare(&[base.clone(), base], 0, 2.0);
        assert!(missing_lines(&c).is_empty());
    }

    /// #43: one run exported is headed as a run, not as a comparison, in both formats.
    #[test]
    fn one_run_is_headed_as_a_run() {
        let c = crate::report::fixture_compare(&[crate::report::fixture_run()], 0, 2.0);
        assert!(
            markdown(&c).starts_with("## sysperf run\n"),
            "{}",
            markdown(&c)
        );
        assert!(
            text(&c).starts_with("sysperf run: 1 run, no ratios\n"),
            "{}",
            text(&c)
        );
        let two = crate::report::fixture_compare(
            &[crate::report::fixture_run(), crate::report::fixture_run()],
            0,
            2.0,
        );
        assert!(markdown(&two).starts_with("## sysperf compare\n"));
    }

    #[test]
    fn series_compare_point_by_point_and_a_fallen_throughput_is_a_regression() {
        let base = crate::report::fixture_suites_run();
        let slow = slower_series(&base);
        let c = crate::report::fixture_compare(&[base, slow], 0, 2.0);
        assert_eq!(c.series.len(), 3);
        let pipe = &c.series[0];
        let at = |x: f64| pipe.points.iter().find(|p| p.x == x).unwrap();
        let r512 = at(512.0).ratios[1].as_ref().unwrap();
        assert!((r512.ratio - 1.3).abs() < 0.01, "{r512:?}");
        assert_eq!(r512.verdict, Verdict::Slower);
        assert_eq!(
            at(4096.0).ratios[1].as_ref().unwrap().verdict,
            Verdict::NoChange
        );
        // A point one run lacks: a dash, no ratio.
        let fifo2 = &c.series[1].points[0];
        assert!(fifo2.y[1].is_none() && fifo2.ratios[1].is_none());
        let regs = crate::compare::regressions(&c, 5.0);
        assert_eq!(regs.len(), 1, "{regs:?}");
        assert_eq!(regs[0].test, "bbn.pipe@512");
        insta::assert_snapshot!("series_compare_text", text(&c));
        insta::assert_snapshot!("series_compare_markdown", series_markdown(&c));
    }

    #[test]
    fn observed_runs_show_their_counters_everywhere() {
        let mut run = crate::report::fixture_run();
        let c0 = crate::compare::build(std::slice::from_ref(&run), 0, 2.0);
        assert!(counter_rows(&c0).is_empty() && !text(&c0).contains("\nCounters"));
        for r in &mut run.results {
            if let Some(s) = &mut r.summary {
                s.counters = Some(crate::model::CounterSummary {
                    trials: 3,
                    perf_trials: 1,
                    task_clock_ns_per_op: Some(4500.0),
                    context_switches_per_op: Some(2.0),
                    cpu_migrations_per_op: Some(0.0),
                    page_faults_per_op: Some(0.25),
                    cycles_per_op: None,
                    instructions_per_op: None,
                    interrupts_per_trial: 131.0,
                    interrupts_per_op: 0.005,
                    softirqs_per_trial: 40.0,
                    interrupts_on_trial_cpus_per_trial: Some(101.0),
                    disk_ios_per_trial: 0.0,
                });
            }
        }
        let c = crate::compare::build(std::slice::from_ref(&run), 0, 2.0);
        let rows = counter_rows(&c);
        assert_eq!(
            rows.len(),
            run.results.iter().filter(|r| r.summary.is_some()).count()
        );
        assert_eq!(
            rows[0].cells,
            ["2.00", "0", "0.250", "131.0", "-"].map(String::from)
        );
        let t = text(&c);
        assert!(
            t.contains("\nCounters (run --observe") && t.contains("cycles/op"),
            "{t}"
        );
        assert!(markdown(&c).contains("**Counters**"));
        let page = crate::report::html::html(std::slice::from_ref(&run), &c, &[Vec::new()]);
        assert!(page.contains("id=\"counters\"") && page.contains("<td>131.0</td>"));
    }
    use crate::model::{Run, Trial, TrialKind};

    /// Gives every result five measured trials within +-1% of its median (the fixture's one
    /// trial is shared by all its results, so the bootstrap would not match the medians).
    fn with_trials(run: &mut Run) {
        let o = run.overhead.expect("the fixture has overhead");
        for r in &mut run.results {
            let Some(s) = &r.summary else { continue };
            let median = s.wall_ns_per_op.median;
            let Some(template) = r
                .trials
                .iter()
                .find(|t| t.kind == TrialKind::Measured)
                .cloned()
            else {
                continue;
            };
            r.trials.retain(|t| t.kind != TrialKind::Measured);
            for f in [0.99, 0.995, 1.0, 1.005, 1.01] {
                let iterations = 1000u64;
                let ops = (iterations * r.ops_per_iteration) as f64;
                let wall =
                    median * f * ops + o.timer_ns + o.loop_ns_per_iteration * iterations as f64;
                r.trials.push(Trial {
                    iterations,
                    wall_ns: wall.round() as u64,
                    ..template.clone()
                });
            }
        }
    }

    /// The fixture, a copy made on a newer kernel where syscall is 20% slower and csw is
    /// missing, and (optionally) the published 4.3BSD figures.
    fn runs(with_reference: bool) -> Vec<Run> {
        let mut base = crate::report::fixture_run();
        let mut after = base.clone();
        after.id = "7a3e0c9d1f20".into();
        after.label = Some("after, \"patched\"".into());
        after.started_ns += 3_600_000_000_000;
        after.fingerprint.kernel_release = Some("6.19.0".into());
        after.results.retain(|r| r.id != "csw");
        for r in after.results.iter_mut().filter(|r| r.id == "syscall") {
            if let Some(s) = &mut r.summary {
                s.wall_ns_per_op.median *= 1.2;
                s.wall_ns_per_op.ci_low *= 1.2;
                s.wall_ns_per_op.ci_high *= 1.2;
            }
        }
        with_trials(&mut base);
        with_trials(&mut after);
        after.warnings.clear();
        after.derived = crate::derived::compute(&after.results);
        let mut v = vec![base, after];
        if with_reference {
            v.push(
                crate::reference::find("vax750-4.3bsd")
                    .unwrap()
                    .unwrap()
                    .clone(),
            );
        }
        v
    }

    #[test]
    fn beside_the_vax_each_runs_user_system_split_says_how_it_was_obtained() {
        // A run on a kernel whose configuration says tick accounting, beside the 4.2BSD
        // paper's: the text, the Markdown and `show` say how each split was obtained (#45).
        let mut live = crate::report::fixture_run();
        live.fingerprint.kernel_config = crate::fingerprint::parse_kernel_config(
            "CONFIG_TICK_CPU_ACCOUNTING=y\nCONFIG_HZ=250\n",
        );
        let vax = crate::reference::find("vax750-4.2bsd")
            .unwrap()
            .unwrap()
            .clone();
        let c = crate::report::fixture_compare(&[vax, live.clone()], 0, 2.0);
        for out in [text(&c), markdown(&c)] {
            let line = |start: &str| {
                out.lines()
                    .find(|l| l.trim_start_matches('\n').starts_with(start))
                    .unwrap_or_else(|| panic!("no {start} line: {out}"))
                    .to_string()
            };
            assert!(line("User/System of ").contains("as printed"), "{out}");
            let b = out
                .lines()
                .filter(|l| l.starts_with("User/System of "))
                .nth(1)
                .unwrap_or_else(|| panic!("{out}"))
                .replace('\\', ""); // Markdown escapes "_"
            assert!(
                b.contains("tick-sampled") && b.contains("CONFIG_TICK_CPU_ACCOUNTING, HZ=250"),
                "{b}"
            );
        }
        let shown = crate::report::table::render(&live);
        assert!(
            shown
                .lines()
                .any(|l| l.starts_with("User/System: tick-sampled")),
            "{shown}"
        );
        assert!(shown.contains("their System is understated"), "{shown}");
    }

    #[test]
    fn text_snapshot() {
        insta::assert_snapshot!(text(&crate::report::fixture_compare(&runs(true), 0, 2.0)));
    }

    #[test]
    fn markdown_snapshot() {
        insta::assert_snapshot!(markdown(&crate::report::fixture_compare(
            &runs(true),
            0,
            2.0
        )));
    }

    #[test]
    fn json_snapshot() {
        insta::assert_snapshot!(json(&crate::report::fixture_compare(&runs(false), 0, 2.0)));
    }

    #[test]
    fn csv_has_a_line_per_test_and_run_with_every_column() {
        let c = crate::report::fixture_compare(&runs(true), 0, 2.0);
        let out = csv(&c);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], CSV_COLUMNS.join(","));
        assert_eq!(lines.len(), 1 + c.rows.len() * 3);
        // The quoted label of run 2 is not in the CSV (runs are named by id), so no field
        // here needs quotes except the (1K env) labels, which have none: every line splits
        // into exactly as many fields as there are columns.
        for l in &lines {
            assert_eq!(l.split(',').count(), CSV_COLUMNS.len(), "{l}");
        }
        // The verdict column, whatever follows it.
        let verdict = |l: &str| l.split(',').nth(12).unwrap_or_default().to_string();
        let syscall: Vec<&str> = lines
            .iter()
            .copied()
            .filter(|l| l.starts_with("syscall,"))
            .collect();
        assert_eq!(syscall.len(), 3);
        assert_eq!(verdict(syscall[0]), "baseline", "{}", syscall[0]);
        assert_eq!(verdict(syscall[1]), "slower", "{}", syscall[1]);
        assert_eq!(verdict(syscall[2]), "slower", "{}", syscall[2]);
        assert!(
            syscall[1].ends_with(",trials+sittings,slower"),
            "{}",
            syscall[1]
        );
        assert!(lines
            .iter()
            .any(|l| l.starts_with("csw,csw,7a3e0c9d1f20,,") && verdict(l) == "missing"));
        assert!(lines
            .iter()
            .any(|l| l.starts_with("execs0null,") && verdict(l) == "failed"));
        // A test only the reference run has: no baseline to compare with.
        assert!(lines
            .iter()
            .any(|l| l.starts_with("forks1k,") && verdict(l) == "no_baseline"));
    }

    #[test]
    fn csv_quotes_as_rfc_4180_says() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
        let mut c = crate::report::fixture_compare(&runs(false), 0, 2.0);
        c.rows[0].label = "sys,call \"x\"".into();
        let out = csv(&c);
        assert!(out.contains(",\"sys,call \"\"x\"\"\","), "{out}");
    }

    #[test]
    fn csv_text_that_a_spreadsheet_would_run_as_a_formula_stays_text() {
        for (text, cell) in [
            ("=1+1", "\"'=1+1\""),
            ("+cmd", "\"'+cmd\""),
            ("-2+3", "\"'-2+3\""),
            ("@SUM(A1)", "\"'@SUM(A1)\""),
            ("\tx", "\"'\tx\""),
            ("\rx", "\"'\rx\""),
            (
                "=HYPERLINK(\"http://x\",\"y\")",
                "\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\"",
            ),
            ("a=b", "a=b"),
        ] {
            assert_eq!(csv_field(text), cell, "{text:?}");
        }
        // Numbers are numbers, negative ones too.
        assert_eq!(csv_num(Some(-1.5)), "-1.5");
        let mut c = crate::report::fixture_compare(&runs(false), 0, 2.0);
        c.rows[0].label = "=cmd|' /C calc'!A0".into();
        let out = csv(&c);
        assert!(out.contains(",\"'=cmd|' /C calc'!A0\","), "{out}");
        assert!(!out.contains(",=cmd"), "{out}");
    }

    #[test]
    fn regressions_stand_out_and_missing_tests_show() {
        let c = crate::report::fixture_compare(&runs(false), 0, 2.0);
        let t = text(&c);
        let syscall = t.lines().find(|l| l.starts_with("syscall ")).unwrap();
        assert!(syscall.contains("SLOWER (1.20x) !"), "{syscall}");
        let csw = t.lines().find(|l| l.starts_with("csw ")).unwrap();
        assert!(csw.contains("missing"), "{csw}");
        assert!(csw.trim_end().ends_with('-'), "{csw}");
        let md = markdown(&c);
        assert!(md.contains("**SLOWER** (1.20x)"), "{md}");
        // The label's quote and comma are fine in Markdown; its angle brackets are escaped.
        assert!(md.contains("before \\<patch\\>"), "{md}");
    }

    #[test]
    fn markdown_tables_have_as_many_cells_as_headers() {
        let mut c = crate::report::fixture_compare(&runs(true), 0, 2.0);
        c.runs[1].label = Some("a | b".into());
        let md = markdown(&c);
        // Unescaped pipes delimit cells: every line of a table has as many as its header.
        let cells = |l: &str| l.replace("\\|", "").matches('|').count();
        let mut tables = 0;
        let mut width = None;
        for l in md.lines() {
            if l.starts_with('|') {
                let n = cells(l);
                assert_eq!(*width.get_or_insert(n), n, "{l}");
            } else {
                tables += usize::from(width.is_some());
                width = None;
            }
        }
        tables += usize::from(width.is_some());
        assert_eq!(tables, 5, "{md}");
    }

    #[test]
    fn published_against_published_prints_the_papers_figures_and_no_verdict() {
        let refs = crate::reference::all().unwrap().to_vec();
        let c = crate::report::fixture_compare(&refs, 0, 2.0);
        let t = text(&c);
        let row = t.lines().find(|l| l.starts_with("forks100k ")).unwrap();
        for fig in ["217.5", "223.0", "176.0", "0.7", "214.3", "175.2", "no CI"] {
            assert!(row.contains(fig), "{fig}: {row}");
        }
        // No verdict anywhere in the tables (the method line does mention the words).
        let tables = &t[t.find("Table 2.").unwrap()..];
        assert!(
            !tables.contains("faster") && !tables.contains("SLOWER"),
            "{t}"
        );
        let seq = t.lines().find(|l| l.starts_with("seqpage ")).unwrap();
        assert!(seq.contains("17132") && seq.contains("missing"), "{seq}");
    }

    #[test]
    fn json_is_the_comparison_with_its_format() {
        let c = crate::report::fixture_compare(&runs(false), 0, 2.0);
        let v: Value = serde_json::from_str(&json(&c)).unwrap();
        assert_eq!(v["format"], "sysperf-compare");
        assert_eq!(v["format_version"], 1);
        assert_eq!(v["rows"][0]["id"], "syscall");
        assert_eq!(v["rows"][0]["ratios"][1]["verdict"], "slower");
        assert_eq!(v["rows"][1]["cells"][1]["state"], "missing");
        assert_eq!(v["runs"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn three_significant_digits_at_any_size() {
        assert_eq!(sig3(0.000_382_4), "0.000382");
        assert_eq!(sig3(1.2), "1.20");
        assert_eq!(sig3(2617.4), "2617");
        assert_eq!(sig3(0.0), "0");
        assert_eq!(sig3(f64::INFINITY), "-");
    }
}
