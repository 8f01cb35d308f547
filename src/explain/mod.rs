//! `sysperf explain A B [TEST...]`: from "slower" to "slower, and this is why". For each test
//! that `compare` finds slower or faster (or each one named), a ranked account of where the
//! time per operation went: the differential kernel profile of the two sides ([`diff`]: time
//! per operation per function and per call path, self and with children, each difference with
//! its sampling interval and its share of the measured change), the events per operation on
//! both sides (faults, context switches, migrations from the runs' trials and counters; system
//! calls from stored traces), the recorded differences tied to the test or to the functions
//! ([`facts`]), and one sentence a person can act on.
//!
//! The method is the papers' loop closed (4.2BSD §3-4: profile, find the routine, measure it
//! per call): every figure is time per operation, never a share of a profile, because shares
//! move when anything else moves (Tables 9 and 10: namei's share rose while its time per call
//! fell). It never invents a side: a test with no profile on a side says so, and why.
//!
//! Pure: runs, their comparison and profiles in, an [`Explanation`] out; what is measured when a
//! side has no profile is decided by the command (with [`facts::stands_for`]), and rendering is
//! `report::explain`.

pub mod bisect;
pub mod diff;
pub mod facts;

use crate::bench::glob_match;
use crate::compare::{Comparison, Ratio, Verdict};
use crate::error::InputError;
use crate::model::{BenchResult, Profile, Run, StoredTrace, TrialKind};
use crate::trace::TraceReport;
use diff::ProfileDiff;
use facts::{Difference, Tied};
use serde::Serialize;

pub const FORMAT: &str = "sysperf-explain";
pub const FORMAT_VERSION: u32 = 1;

/// Functions kept per test in the explanation (the largest self changes; the text shows
/// fewer).
pub const MAX_FUNCTIONS: usize = 40;
/// Functions listed for a side that alone has a profile.
pub const ONE_SIDE_FUNCTIONS: usize = 10;

/// The method, as every rendering states it.
pub fn method() -> String {
    format!(
        "each side's kernel profile is one long trial of the test sampled every period of CPU time (perf cpu-clock, kernel call chains); \
         a function's (or call path's) time per operation = its samples x period / operations. Given a side's n samples, the count in a \
         function is binomial (the counts together multinomial), so each figure has the Wilson interval of its share, scaled; the two \
         sides are independent trials, so B - A has the MOVER (Newcombe) 95% interval, and is significant when that leaves out 0. \
         Shares are of the measured change: the median wall time per operation B - A from the runs' trials. Where the change is: the \
         merged call tree followed from its root into callees that hold {:.0}% of a path's change (each significant and at least {:.0}% \
         of the whole); where that stops, the path holds the change in itself or spread over its callees; paths are disjoint, so their \
         changes add up, as the functions' self changes do; the trunk, when there is one, is the path followed alone from the root down to \
         where it splits two or more ways",
        diff::SPLIT_SHARE * 100.0,
        diff::MIN_PATH_SHARE * 100.0
    )
}

/// Where a side's profile of a test comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Source {
    /// Stored with the side's own run (`run --profile`, `ab --profile`).
    Run { run: String },
    /// Measured on this machine for the side by `explain` (now, or by an earlier explain),
    /// stored as run `run`, at `at_ns`, because the side's run has none.
    Measured { run: String, at_ns: i64 },
    /// None: why, and what would make one.
    Missing { why: String },
}

/// A side's profile of a test, and where it comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct SideProfile {
    pub profile: Profile,
    pub source: Source,
}

/// A stored trace of a test (`trace --store`) standing for a side.
#[derive(Debug, Clone, PartialEq)]
pub struct SideTrace {
    pub report: TraceReport,
    /// The stored trace's id, and whether it was attached to the side's run (else it was made
    /// on the side's machine, as recorded).
    pub id: String,
    pub attached: bool,
}

/// The stored traces (`trace --store`, newest first) that stand for `side` of `runs`: each
/// test's newest trace made on a machine whose recorded facts were that side's and not the
/// other's ([`facts::stands_for`]); a trace that fits both sides stands for neither. A trace
/// whose report cannot be read is passed over.
pub fn side_traces(side: usize, runs: [&Run; 2], traces: &[StoredTrace]) -> Vec<SideTrace> {
    let mut out: Vec<SideTrace> = Vec::new();
    for t in traces {
        if out.iter().any(|s| s.report.bench == t.bench)
            || facts::stands_for(side, runs, &t.fingerprint).is_err()
        {
            continue;
        }
        if let Ok(report) = TraceReport::of(t) {
            out.push(SideTrace {
                report,
                id: t.id.clone(),
                attached: false,
            });
        }
    }
    out
}

/// What [`build`] explains.
pub struct Input<'a> {
    /// Side A (the baseline) and side B.
    pub runs: [&'a Run; 2],
    /// A comparison holding both runs, A its baseline and B in column `column` (`compare::build`
    /// of the two, column 1; or a report's comparison of several runs).
    pub comparison: &'a Comparison,
    pub column: usize,
    /// Each side's profiles, the first of a test the one used.
    pub profiles: [&'a [SideProfile]; 2],
    /// Each side's stored traces, the first of a test the one used.
    pub traces: [&'a [SideTrace]; 2],
    /// Why a side's missing profiles were not measured now, when the command tried (else
    /// the side's run simply has none).
    pub unmeasured: [Option<String>; 2],
    /// The tests asked for, with why each is explained.
    pub tests: &'a [(String, Listed)],
}

/// Why a test is explained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Listed {
    Slower,
    Faster,
    /// Named on the command line, whatever its verdict.
    Named,
}

/// A side of the explanation, for headers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SideHeader {
    pub id: String,
    pub label: Option<String>,
    pub hostname: Option<String>,
    pub kernel_release: Option<String>,
    pub started_ns: i64,
}

/// Events per operation on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CountRow {
    pub what: String,
    /// Where the figures come from and what their intervals are.
    pub source: String,
    pub a: Option<f64>,
    pub b: Option<f64>,
    /// The 95% interval of each side's median, where there are trials to give one.
    pub a_ci: Option<[f64; 2]>,
    pub b_ci: Option<[f64; 2]>,
}

/// How much of the measured change the profiles hold.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Accounting {
    /// The measured change the shares are of: median wall ns per operation, B - A.
    pub measured_ns_per_op: f64,
    /// The profiles' whole change (CPU time per operation of the profiled trials), as a share.
    pub profile_pct: f64,
    /// The listed call paths' changes together, as a share.
    pub paths_pct: f64,
    /// The sides ("A", "B") whose run has a warning that other work ran beside the test
    /// (`WarningKind::disturbs`): that work's time is in the measured change, not in the CPU
    /// profiles, which then hold less of it (the planted seccomp path: 50-67% of the change on
    /// a quiet machine, 35-37% beside a build).
    pub disturbed_sides: Vec<String>,
}

/// The functions of the one side that has a profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OneSide {
    /// "A" or "B".
    pub side: String,
    pub cpu_ns_per_op: f64,
    /// (function, self ns per operation, total ns per operation), most self time first.
    pub functions: Vec<(String, f64, f64)>,
}

/// One test explained.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TestExplanation {
    pub test: String,
    /// What one operation is.
    pub unit: String,
    pub listed: Listed,
    /// B against A as `compare` has it: ratio of medians, its interval and verdict.
    pub ratio: Option<f64>,
    pub ratio_ci: Option<[f64; 2]>,
    pub verdict: Option<Verdict>,
    /// Median wall ns per operation of each side, and B - A.
    pub a_ns_per_op: Option<f64>,
    pub b_ns_per_op: Option<f64>,
    pub change_ns_per_op: Option<f64>,
    /// Where each side's profile comes from (A's, then B's).
    pub profiles: [Source; 2],
    /// Both profiles compared, when both sides have one.
    pub profile: Option<ProfileDiff>,
    pub accounting: Option<Accounting>,
    /// The one side with a profile, when only one has.
    pub one_side: Option<OneSide>,
    pub counts: Vec<CountRow>,
    /// Where the trace rows come from (A's, then B's): a stored trace's id, or None.
    pub traces: [Option<String>; 2],
    pub tied: Vec<Tied>,
    /// One line to act on.
    pub sentence: String,
}

/// `sysperf explain`'s whole answer (`--json` prints it).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    pub format: &'static str,
    pub format_version: u32,
    pub a: SideHeader,
    pub b: SideHeader,
    pub method: String,
    /// Everything recorded that differs between the sides, tied or not.
    pub differences: Vec<Difference>,
    pub tests: Vec<TestExplanation>,
    /// The differences flipped on this machine (`--try-switches`), when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub try_switches: Option<bisect::Bisection>,
}

/// Every test of the comparison: the rows, then the suites' points, with column `column`'s
/// ratio to the baseline.
fn every_test(c: &Comparison, column: usize) -> Vec<(&str, Option<&Ratio>)> {
    let rows = c
        .rows
        .iter()
        .map(move |r| (r.id.as_str(), r.ratios.get(column).and_then(Option::as_ref)));
    let points = c.series.iter().flat_map(move |s| {
        s.points.iter().map(move |p| {
            (
                p.test.as_str(),
                p.ratios.get(column).and_then(Option::as_ref),
            )
        })
    });
    rows.chain(points).collect()
}

/// The tests to explain: those `c` calls slower or faster in column `column` (B) against its
/// baseline (A), or, when `named` is not empty, the tests of the comparison matching a name
/// (ids or globs), each once.
pub fn tests_to_explain(
    c: &Comparison,
    column: usize,
    named: &[String],
) -> Result<Vec<(String, Listed)>, InputError> {
    let all = every_test(c, column);
    if named.is_empty() {
        return Ok(all
            .into_iter()
            .filter_map(|(id, r)| match r?.verdict {
                Verdict::Slower => Some((id.to_string(), Listed::Slower)),
                Verdict::Faster => Some((id.to_string(), Listed::Faster)),
                _ => None,
            })
            .collect());
    }
    let mut out: Vec<(String, Listed)> = Vec::new();
    for name in named {
        let hits: Vec<&str> = all
            .iter()
            .map(|(id, _)| *id)
            .filter(|id| glob_match(name, id))
            .collect();
        if hits.is_empty() {
            return Err(InputError::InvalidValue {
                what: "TEST",
                value: name.clone(),
                why: "neither run has a test of that name ('sysperf show RUN' lists a run's tests)"
                    .into(),
            });
        }
        for id in hits {
            if !out.iter().any(|(x, _)| x == id) {
                out.push((id.to_string(), Listed::Named));
            }
        }
    }
    Ok(out)
}

/// The tests `c` calls slower or faster in column `column` that both sides have a kernel
/// profile of (with samples): those `explain` can account for from what is stored.
pub fn explainable(
    c: &Comparison,
    column: usize,
    a: &[Profile],
    b: &[Profile],
) -> Vec<(String, Listed)> {
    let has = |ps: &[Profile], t: &str| {
        ps.iter()
            .any(|p| p.bench == t && p.samples > 0 && p.operations > 0)
    };
    tests_to_explain(c, column, &[])
        .unwrap_or_default()
        .into_iter()
        .filter(|(t, _)| has(a, t) && has(b, t))
        .collect()
}

/// A run's result of test `id`: a benchmark's, or a suite point's.
pub fn find_result<'r>(run: &'r Run, id: &str) -> Option<&'r BenchResult> {
    run.results.iter().find(|r| r.id == id).or_else(|| {
        run.series
            .iter()
            .flat_map(|s| &s.points)
            .map(|p| &p.result)
            .find(|r| r.id == id)
    })
}

fn header(r: &Run) -> SideHeader {
    SideHeader {
        id: r.id.clone(),
        label: r.label.clone(),
        hostname: r.fingerprint.hostname.clone(),
        kernel_release: r.fingerprint.kernel_release.clone(),
        started_ns: r.started_ns,
    }
}

/// The explanation of `input`'s tests.
pub fn build(input: &Input<'_>) -> Explanation {
    let differences = facts::differences(input.runs, &input.comparison.fingerprint_diffs);
    let ratios = every_test(input.comparison, input.column);
    let tests = input
        .tests
        .iter()
        .map(|(id, listed)| {
            let ratio = ratios.iter().find(|(t, _)| t == id).and_then(|(_, r)| *r);
            explain_test(input, id, *listed, ratio, &differences)
        })
        .collect();
    Explanation {
        format: FORMAT,
        format_version: FORMAT_VERSION,
        a: header(input.runs[0]),
        b: header(input.runs[1]),
        method: method(),
        differences,
        tests,
        try_switches: None,
    }
}

fn side_name(side: usize) -> &'static str {
    if side == 0 {
        "A"
    } else {
        "B"
    }
}

fn explain_test(
    input: &Input<'_>,
    id: &str,
    listed: Listed,
    ratio: Option<&Ratio>,
    differences: &[Difference],
) -> TestExplanation {
    let results = input.runs.map(|r| find_result(r, id));
    let median = |r: Option<&BenchResult>| {
        r.and_then(|r| r.summary.as_ref())
            .map(|s| s.wall_ns_per_op.median)
    };
    let (a_ns, b_ns) = (median(results[0]), median(results[1]));
    let change = a_ns.zip(b_ns).map(|(a, b)| b - a);
    let significant = ratio.is_some_and(|r| matches!(r.verdict, Verdict::Slower | Verdict::Faster));
    let unit = results
        .iter()
        .flatten()
        .map(|r| r.unit.clone())
        .next()
        .unwrap_or_else(|| "operation".into());

    let found: [Option<&SideProfile>; 2] = [0, 1].map(|s| {
        input.profiles[s]
            .iter()
            .find(|p| p.profile.bench == id && p.profile.samples > 0 && p.profile.operations > 0)
    });
    let sources = profile_sources(input, id, found);

    // Shares are of the measured change, when there is a significant one to share.
    let denominator = change.filter(|c| significant && *c != 0.0);
    let (mut profile, mut accounting, mut one_side) = (None, None, None);
    match found {
        [Some(a), Some(b)] => {
            let (d, acc) = profile_diff(input, id, a, b, denominator);
            (profile, accounting) = (Some(d), acc);
        }
        [Some(p), None] | [None, Some(p)] => {
            let side = if found[0].is_some() { 0 } else { 1 };
            one_side = Some(only_side(side, p));
        }
        [None, None] => {}
    }

    // The functions that changed significantly the way the test did tie differences to it.
    let sign = change.map_or(1.0, f64::signum);
    let changed: Vec<(&str, f64)> = profile
        .iter()
        .flat_map(|d| &d.functions)
        .filter(|f| f.total.significant() && f.total.change_ns_per_op * sign > 0.0)
        .map(|f| (f.function.as_str(), f.total.change_ns_per_op))
        .collect();
    let tied = facts::tied(differences, id, &changed);

    let traces: [Option<&SideTrace>; 2] =
        [0, 1].map(|s| input.traces[s].iter().find(|t| t.report.bench == id));
    let counts = counts(results, traces);

    let mut t = TestExplanation {
        test: id.to_string(),
        unit,
        listed,
        ratio: ratio.map(|r| r.ratio),
        ratio_ci: ratio.and_then(|r| r.ci),
        verdict: ratio.map(|r| r.verdict),
        a_ns_per_op: a_ns,
        b_ns_per_op: b_ns,
        change_ns_per_op: change,
        profiles: sources,
        profile,
        accounting,
        one_side,
        counts,
        traces: traces.map(|t| t.map(|t| t.id.clone())),
        tied,
        sentence: String::new(),
    };
    t.sentence = sentence(&t);
    t
}

/// Where each side's profile of test `id` comes from (`found`: the profile used), or why
/// there is none.
fn profile_sources(input: &Input<'_>, id: &str, found: [Option<&SideProfile>; 2]) -> [Source; 2] {
    [0, 1].map(|s| match found[s] {
        Some(p) => p.source.clone(),
        None => Source::Missing {
            why: match &input.unmeasured[s] {
                Some(why) => format!("run {} has no profile of {id}, and none was made now: {why}", input.runs[s].id),
                None => format!(
                    "run {} has no profile of {id} ('sysperf run --profile {id}' where it was measured stores one)",
                    input.runs[s].id
                ),
            },
        },
    })
}

/// The difference of the two sides' profiles of test `id`, its largest functions, each
/// function's and path's share of the measured change (`denominator`, when significant),
/// and how much of that change the profiles account for.
fn profile_diff(
    input: &Input<'_>,
    id: &str,
    a: &SideProfile,
    b: &SideProfile,
    denominator: Option<f64>,
) -> (ProfileDiff, Option<Accounting>) {
    let share = |x: f64| denominator.map(|d| 100.0 * x / d);
    let mut d = diff::diff(&a.profile, &b.profile);
    d.functions.truncate(MAX_FUNCTIONS);
    for f in &mut d.functions {
        f.share_pct = share(f.self_.change_ns_per_op);
    }
    for p in d.paths.iter_mut().chain(&mut d.trunk) {
        p.share_pct = share(p.total.change_ns_per_op);
    }
    let accounting = denominator.map(|m| Accounting {
        measured_ns_per_op: m,
        profile_pct: 100.0 * d.all.change_ns_per_op / m,
        paths_pct: 100.0
            * d.paths
                .iter()
                .map(|p| p.total.change_ns_per_op)
                .sum::<f64>()
            / m,
        disturbed_sides: (0..2)
            .filter(|&s| input.runs[s].disturbed(id))
            .map(|s| side_name(s).to_string())
            .collect(),
    });
    (d, accounting)
}

/// What one side's profile alone (`side`'s, `p`) says: its CPU time per operation and its
/// heaviest functions.
fn only_side(side: usize, p: &SideProfile) -> OneSide {
    OneSide {
        side: side_name(side).into(),
        cpu_ns_per_op: p.profile.samples as f64 * p.profile.sample_period_ns as f64
            / p.profile.operations as f64,
        functions: p
            .profile
            .flat()
            .into_iter()
            .take(ONE_SIDE_FUNCTIONS)
            .map(|f| {
                (
                    f.name,
                    f.self_us_per_op * 1000.0,
                    f.total_us_per_op * 1000.0,
                )
            })
            .collect(),
    }
}

/// The per-operation figures of each measured trial of a result, by `per_op`.
fn per_trial(r: &BenchResult, per_op: impl Fn(&crate::model::Trial) -> Option<f64>) -> Vec<f64> {
    r.trials
        .iter()
        .filter(|t| t.kind == TrialKind::Measured && t.error.is_none() && t.iterations > 0)
        .filter_map(|t| per_op(t).map(|v| v / (t.iterations * r.ops_per_iteration.max(1)) as f64))
        .collect()
}

/// A row of medians over each side's trials, with their intervals.
fn trial_row(
    what: &str,
    results: [Option<&BenchResult>; 2],
    per_op: impl Fn(&crate::model::Trial) -> Option<f64> + Copy,
) -> Option<CountRow> {
    let est = results.map(|r| {
        r.map(|r| per_trial(r, per_op))
            .filter(|v| !v.is_empty())
            .and_then(|v| crate::stats::estimate(&v).ok())
    });
    if est.iter().all(Option::is_none) {
        return None;
    }
    let ci =
        |e: &Option<crate::model::Estimate>| e.filter(|e| e.n >= 3).map(|e| [e.ci_low, e.ci_high]);
    Some(CountRow {
        what: what.into(),
        source: "rusage of the measured trials: median, with its order-statistic interval".into(),
        a: est[0].map(|e| e.median),
        b: est[1].map(|e| e.median),
        a_ci: ci(&est[0]),
        b_ci: ci(&est[1]),
    })
}

/// Events per operation on both sides: from the trials (rusage: faults, context switches,
/// migrations), the perf counters of an observed run, and stored traces.
fn counts(results: [Option<&BenchResult>; 2], traces: [Option<&SideTrace>; 2]) -> Vec<CountRow> {
    let mut rows: Vec<CountRow> = [
        trial_row("page faults", results, |t| {
            Some((t.usage.minflt + t.usage.majflt) as f64)
        }),
        trial_row("context switches", results, |t| {
            Some((t.usage.nvcsw + t.usage.nivcsw) as f64)
        }),
        trial_row("migrations (main thread)", results, |t| {
            t.migrations.map(|m| m as f64)
        }),
    ]
    .into_iter()
    .flatten()
    .collect();
    type Get = fn(&crate::model::CounterSummary) -> Option<f64>;
    let perf: [(&str, Get); 5] = [
        ("context switches (perf)", |c| c.context_switches_per_op),
        ("CPU migrations (perf)", |c| c.cpu_migrations_per_op),
        ("page faults (perf)", |c| c.page_faults_per_op),
        ("instructions", |c| c.instructions_per_op),
        ("cycles", |c| c.cycles_per_op),
    ];
    let counters = results.map(|r| {
        r.and_then(|r| r.summary.as_ref())
            .and_then(|s| s.counters.as_ref())
    });
    for (what, get) in perf {
        let v = counters.map(|c| c.and_then(get));
        if v.iter().any(Option::is_some) {
            rows.push(CountRow {
                what: what.into(),
                source: "perf counters of the worker and its children (run --observe), median of the trials that took them".into(),
                a: v[0],
                b: v[1],
                a_ci: None,
                b_ci: None,
            });
        }
    }
    rows.extend(trace_rows(traces.map(|t| t.map(|t| &t.report))));
    rows
}

/// Rows from stored traces: exact counts per operation (the difference of two traced runs).
/// Also what `compare` of two stored traces prints.
pub fn trace_rows(traces: [Option<&TraceReport>; 2]) -> Vec<CountRow> {
    if traces.iter().all(Option::is_none) {
        return Vec::new();
    }
    let source = "stored trace (trace --store): exact count per operation, the difference of two traced runs";
    let row = |what: String, v: [Option<f64>; 2]| CountRow {
        what,
        source: source.into(),
        a: v[0],
        b: v[1],
        a_ci: None,
        b_ci: None,
    };
    let mut rows = Vec::new();
    let sys = traces.map(|t| t.and_then(|t| t.syscalls.as_ref()));
    if sys.iter().any(Option::is_some) {
        rows.push(row(
            "system calls (trace)".into(),
            sys.map(|s| s.map(|s| s.total.per_op)),
        ));
        let mut names: Vec<&str> = Vec::new();
        for s in sys.iter().flatten() {
            for c in &s.by_name {
                if c.per_op.abs() >= 0.01 && !names.contains(&c.name.as_str()) {
                    names.push(&c.name);
                }
            }
        }
        for name in names {
            rows.push(row(
                format!("  {name}"),
                sys.map(|s| {
                    s.map(|s| {
                        s.by_name
                            .iter()
                            .find(|c| c.name == name)
                            .map_or(0.0, |c| c.per_op)
                    })
                }),
            ));
        }
    }
    let sched = traces.map(|t| t.and_then(|t| t.sched.as_ref()));
    if sched.iter().any(Option::is_some) {
        rows.push(row(
            "context switches (trace)".into(),
            sched.map(|s| s.map(|s| s.switches.per_op)),
        ));
        rows.push(row(
            "migrations (trace)".into(),
            sched.map(|s| s.and_then(|s| s.migrations.map(|m| m.per_op))),
        ));
    }
    let pc = traces.map(|t| t.and_then(|t| t.pagecache.as_ref()));
    if pc.iter().any(Option::is_some) {
        rows.push(row(
            "page-cache faults (trace)".into(),
            pc.map(|p| p.map(|p| p.faults.per_op)),
        ));
    }
    rows
}

/// "1.26x slower", "1.10x faster", or the ratio alone.
pub fn ratio_words(t: &TestExplanation) -> String {
    match (t.ratio, t.verdict) {
        (Some(r), Some(Verdict::Slower)) => format!("{}x slower", sig(r)),
        (Some(r), Some(Verdict::Faster)) if r > 0.0 => format!("{}x faster", sig(1.0 / r)),
        (Some(r), Some(v)) => format!("ratio {} ({})", sig(r), v.as_str()),
        _ => "not compared".into(),
    }
}

/// Three significant figures, as compare prints ratios.
fn sig(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// ns per operation, signed, in a readable unit.
pub fn signed_ns(v: f64) -> String {
    let sign = if v < 0.0 { "-" } else { "+" };
    format!("{sign}{}", ns(v.abs()))
}

/// ns per operation in a readable unit, to three significant figures.
pub fn ns(v: f64) -> String {
    if v >= 1e6 {
        format!("{} ms", sig(v / 1e6))
    } else if v >= 1e4 {
        format!("{} us", sig(v / 1e3))
    } else if v >= 100.0 {
        format!("{v:.0} ns")
    } else if v >= 10.0 {
        format!("{v:.1} ns")
    } else {
        format!("{v:.2} ns")
    }
}

/// The sentence: what changed, where, and which recorded difference ties to it.
pub fn sentence(t: &TestExplanation) -> String {
    let head = match (t.a_ns_per_op, t.b_ns_per_op) {
        (Some(a), Some(b)) => format!(
            "{} {} ({} -> {} per {})",
            t.test,
            ratio_words(t),
            ns(a),
            ns(b),
            t.unit
        ),
        _ => format!("{} {}", t.test, ratio_words(t)),
    };
    let missing: Vec<String> = t
        .profiles
        .iter()
        .enumerate()
        .filter_map(|(i, s)| match s {
            Source::Missing { why } => Some(format!("side {}: {why}", side_name(i))),
            _ => None,
        })
        .collect();
    let Some(d) = &t.profile else {
        let tie = t
            .tied
            .first()
            .map(|x| {
                format!(
                    "; recorded difference tied to {}: {}",
                    t.test,
                    difference_words(&x.difference)
                )
            })
            .unwrap_or_default();
        return format!(
            "{head}: no differential profile ({}){tie}",
            missing.join("; ")
        );
    };
    let Some(top) = d.paths.first() else {
        return format!(
            "{head}: the kernel profiles show no significant change in any call path (their CPU time per {} moved {} [{}, {}]): the time went where sampling does not see it (waiting, other processes) or within its error; profile longer (--profile-seconds)",
            t.unit,
            signed_ns(d.all.change_ns_per_op),
            signed_ns(d.all.change_ci_ns_per_op[0]),
            signed_ns(d.all.change_ci_ns_per_op[1]),
        );
    };
    let of = |p: &diff::PathDelta| match (p.share_pct, t.change_ns_per_op) {
        (Some(p), Some(c)) => format!(" ({}% of the {})", p.round(), signed_ns(c)),
        _ => String::new(),
    };
    let caller = top
        .path
        .len()
        .checked_sub(2)
        .map(|i| format!(", called from {}", top.path[i]))
        .unwrap_or_default();
    let below = if top.callees.is_empty() {
        ""
    } else {
        " and what it calls"
    };
    let mut s = match &d.trunk {
        // The change goes one way before it spreads: that way first, then where most of it is.
        Some(trunk) => format!(
            "{head}: {} per {} under {}{}, most in {}{below} ({}{}){caller}",
            signed_ns(trunk.total.change_ns_per_op),
            t.unit,
            trunk_words(&trunk.path),
            of(trunk),
            top.function(),
            signed_ns(top.total.change_ns_per_op),
            top.share_pct
                .map(|p| format!(", {}%", p.round()))
                .unwrap_or_default(),
        ),
        None => format!(
            "{head}: {} per {} in {}{below}{}{caller}",
            signed_ns(top.total.change_ns_per_op),
            t.unit,
            top.function(),
            of(top)
        ),
    };
    // The difference tied to the functions first, else one tied to the test.
    match t.tied.first() {
        Some(x) if !x.functions.is_empty() => s.push_str(&format!(
            "; {}, which does its work in {}",
            difference_words(&x.difference),
            x.functions
                .iter()
                .take(3)
                .map(|f| f.0.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Some(x) => s.push_str(&format!(
            "; {} (tied to {} by {}, not to these functions)",
            difference_words(&x.difference),
            t.test,
            x.difference.source.as_deref().unwrap_or("the ties table")
        )),
        None => s.push_str("; no recorded difference between the runs is tied to it"),
    }
    s
}

/// A call path in a few words: from the system call's entry (the first frame such as
/// `__x64_sys_recvfrom`, past the generic entry code), else from its first frame; a long one
/// as its first frame, "...", and its last two.
pub fn trunk_words(path: &[String]) -> String {
    let from = path
        .iter()
        .position(|f| f.starts_with("__") && f.contains("_sys_"))
        .unwrap_or(0);
    match &path[from..] {
        [first, .., last2, last] if path.len() - from > 4 => {
            format!("{first} > ... > {last2} > {last}")
        }
        frames => frames.join(" > "),
    }
}

/// A value for a sentence: a long one (a list of 500 reserved ports is 3 KB) as its first 80
/// characters and how long it is; the JSON and the recorded differences keep it whole.
fn brief(v: &str) -> String {
    const MOST: usize = 120;
    let n = v.chars().count();
    if n <= MOST {
        return v.to_string();
    }
    let head: String = v.chars().take(80).collect();
    format!("{head}... ({n} characters)")
}

/// "B runs with ... (A: ...)" for a difference.
pub fn difference_words(d: &Difference) -> String {
    let v = |x: &Option<String>| x.as_deref().map_or_else(|| "unknown".into(), brief);
    if d.field == "ab switch" {
        // "switch on: WHAT" (a task switch) or "switch on NAME: NAME = VALUE".
        let on = |x: &Option<String>| {
            let rest = x.as_deref()?.strip_prefix("switch on")?;
            Some(brief(rest.split_once(": ").map_or(rest, |(_, w)| w)))
        };
        return match (on(&d.a), on(&d.b)) {
            (None, Some(b)) => format!("B ran with {b} (the ab switch on)"),
            (Some(a), None) => format!("A ran with {a} (the ab switch on), B without"),
            _ => format!("the ab switch: {} in B, {} in A", v(&d.b), v(&d.a)),
        };
    }
    format!("{} is {} in B, {} in A", d.field, v(&d.b), v(&d.a))
}

#[cfg(test)]
pub(crate) mod tests;
