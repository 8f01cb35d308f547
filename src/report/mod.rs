//! Reports: pure functions from runs and comparisons to text, Markdown, CSV, JSON, SVG charts
//! and a self-contained HTML report, in the layout of the paper's tables.
//!
//! Nothing here measures, reads the store or writes to a terminal; callers print or write what
//! these return, which keeps every layout snapshot-testable. The one exception is `png`, which
//! rasterizes an SVG with fonts the caller loads from the system.

pub mod changes;
pub mod command;
pub mod compare;
#[cfg(test)]
mod docs;
pub mod explain;
pub mod flame;
pub mod heatmap;
pub mod html;
pub mod json;
pub mod list;
pub mod markup;
pub mod plot;
pub mod png;
pub mod profile;
pub mod series;
pub mod series_svg;
pub mod svg;
pub mod system;
pub mod table;
pub mod trace;
pub mod warnings;

/// Text made safe for HTML and XML content and attribute values. Labels, hostnames, error
/// messages and test ids all come from machines or people, so every one of them passes here.
/// The bidi controls and zero-width characters are marked as the terminal marks them
/// (`\u{202e}`, see [`crate::term::deceptive`]): raw, `adm\u{200b}in` would read "admin".
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            c if crate::term::deceptive(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters are not allowed in XML 1.0; a stored label cannot hold them
            // but an imported run might, and one bad byte must not make the SVG unreadable.
            c if c.is_control() && c != '\n' && c != '\t' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// A confidence level as printed: 0.95 -> "95%", 0.9375 -> "93.8%", 0.5 -> "50%".
pub fn fmt_level(level: f64) -> String {
    let pct = format!("{:.1}", level * 100.0);
    format!("{}%", pct.strip_suffix(".0").unwrap_or(&pct))
}

/// The label of a column of intervals whose levels are `levels`: "95% CI" when they share one
/// level, "87.5-95% CI" when they differ, and "CI" when none has a level (single trials).
pub fn ci_label(levels: impl IntoIterator<Item = f64>) -> String {
    let v: Vec<f64> = levels
        .into_iter()
        .filter(|l| l.is_finite() && *l > 0.0)
        .collect();
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if v.is_empty() {
        "CI".into()
    } else if fmt_level(lo) == fmt_level(hi) {
        format!("{} CI", fmt_level(lo))
    } else {
        format!(
            "{}-{} CI",
            fmt_level(lo).trim_end_matches('%'),
            fmt_level(hi)
        )
    }
}

/// At most `max` characters of `s`, with an ellipsis when cut (by characters, never bytes).
pub fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('\u{2026}');
        t
    }
}

pub use crate::model::scaled_s;

/// "2026-11-22 08:30:12 UTC" from Unix nanoseconds (proleptic Gregorian, no leap seconds).
pub fn utc(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = crate::model::civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// A number with precision that suits its size (3 significant digits or more).
pub fn num(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        "-".into()
    } else if a == 0.0 {
        "0".into()
    } else if a < 0.01 {
        format!("{v:.4}")
    } else if a < 1.0 {
        format!("{v:.3}")
    } else if a < 100.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.1}")
    }
}

/// A median with its interval as the fixtures' five trials give it.
#[cfg(test)]
fn fixture_estimate(m: f64, lo: f64, hi: f64) -> crate::model::Estimate {
    crate::model::Estimate {
        median: m,
        ci_low: lo,
        ci_high: hi,
        ci_level: 0.9375,
        min: lo,
        max: hi,
        mean: m,
        cv: 0.01,
        n: 5,
    }
}

/// A fixed, fully populated run for snapshot tests of every renderer.
/// `compare::build` of fixture runs on a machine whose run-to-run variance is known for
/// every test and point (0.3%, from 10 stored runs), as `compare` finds it in a store with a
/// history: the verdicts the renderings show.
#[cfg(test)]
pub(crate) fn fixture_compare(
    runs: &[crate::model::Run],
    baseline: usize,
    noise_pct: f64,
) -> crate::compare::Comparison {
    let var = crate::variance::RunVar {
        var: 0.003f64.powi(2),
        // The medians vary by what the component says (a fixture of 0 here would let the
        // interval's floor, the medians' own spread, never act).
        median_var: 0.003f64.powi(2),
        runs: 10,
    };
    let by_sitting: std::collections::BTreeMap<String, crate::variance::SittingVar> = runs
        .iter()
        .flat_map(|r| {
            let points = r
                .series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| &p.result));
            r.results.iter().chain(points).map(|x| {
                let v = crate::variance::SittingVar {
                    across: Some(var),
                    within: Some(var),
                    sitting_var: var.median_var,
                    sittings: 10,
                    runs: 10,
                };
                (x.id.clone(), v)
            })
        })
        .collect();
    let known = crate::compare::Known {
        between_var: by_sitting
            .iter()
            .filter_map(|(t, v)| Some((t.clone(), v.across?)))
            .collect(),
        by_sitting,
        runs: 10,
        sittings: 10,
        levels: Default::default(),
    };
    let columns: Vec<Vec<&crate::model::Run>> = runs.iter().map(|r| vec![r]).collect();
    crate::compare::build_grouped(&columns, baseline, noise_pct, &known)
}

#[cfg(test)]
pub(crate) fn fixture_run() -> crate::model::Run {
    use crate::model::*;
    let est = fixture_estimate;
    let trial = |kind, iterations, wall_ns| Trial {
        kind,
        iterations,
        wall_ns,
        usage: Usage {
            user_ns: wall_ns / 4,
            sys_ns: wall_ns / 2,
            minflt: 3,
            majflt: 0,
            nvcsw: 2,
            nivcsw: 1,
        },
        children: None,
        worker_total: Usage {
            user_ns: wall_ns / 3,
            sys_ns: wall_ns,
            minflt: 300,
            majflt: 0,
            nvcsw: 4,
            nivcsw: 2,
        },
        worker_rss_bytes: 3_432_448,
        worker_maps: 35,
        migrations: Some(0),
        cpu_start: Some(1),
        cpu_end: Some(1),
        outlier: Outlier::None,
        error: None,
        counters: None,
        round: None,
        started_ns: None,
    };
    let result = |id: &str,
                  group: &str,
                  unit: &str,
                  paper_count: u64,
                  ops: u64,
                  wall: f64,
                  user: f64,
                  sys: f64,
                  flt: f64,
                  csw: f64,
                  placement: &str| BenchResult {
        id: id.into(),
        group: group.into(),
        ops_per_iteration: ops,
        paper_count,
        unit: unit.into(),
        placement: placement.into(),
        cpus: vec![1],
        trials: vec![
            trial(TrialKind::Calibration, 1000, 50_000_000),
            trial(TrialKind::Warmup, 2000, 100_000_000),
            trial(TrialKind::Measured, 2000, 100_500_000),
            trial(TrialKind::Measured, 2000, 99_800_000),
            trial(TrialKind::Measured, 2000, 101_100_000),
        ],
        summary: Some(Summary {
            wall_ns_per_op: est(wall, wall * 0.98, wall * 1.03),
            user_ns_per_op: est(user, user, user),
            sys_ns_per_op: est(sys, sys, sys),
            whole: None,
            minflt_per_op: flt,
            majflt_per_op: 0.0,
            csw_per_op: csw,
            nvcsw_per_op: csw,
            nivcsw_per_op: 0.0,
            migrations_per_op: Some(0.0),
            worker_rss_bytes: 3_432_448,
            worker_maps: 35,
            counters: None,
        }),
        error: None,
    };
    let mut failed = result(
        "execs0null",
        "kernel",
        "exec",
        1000,
        1,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        "single",
    );
    failed.summary = None;
    failed.error = Some("calibration failed: timed out after 60.0 s".into());
    let results = vec![
        result(
            "syscall", "kernel", "call", 100_000, 1, 107.0, 45.0, 62.0, 0.0, 0.0, "single",
        ),
        result(
            "csw",
            "kernel",
            "round trip",
            10_000,
            1,
            8077.0,
            400.0,
            7700.0,
            0.0008,
            2.0,
            "same",
        ),
        result(
            "signocsw", "kernel", "signal", 10_000, 1, 1988.0, 140.0, 1800.0, 0.0, 0.0, "single",
        ),
        result(
            "pipeback4",
            "kernel",
            "round trip",
            10_000,
            1,
            4600.0,
            590.0,
            4000.0,
            0.0006,
            2.0,
            "same",
        ),
        result(
            "forks0", "kernel", "fork", 1000, 1, 120_220.0, 60_000.0, 54_000.0, 11.0, 2.0, "single",
        ),
        failed,
        result(
            "randpage", "paging", "touch", 30_000, 30_000, 393.0, 10.0, 377.4, 0.246, 0.0, "single",
        ),
    ];
    let derived = crate::derived::compute(&results);
    Run {
        id: "5f2c9a1b3d7e".into(),
        label: Some("before <patch>".into()),
        started_ns: 1_795_336_212_000_000_000,
        ended_ns: Some(1_795_336_253_000_000_000),
        complete: true,
        sysperf_version: "0.1.0".into(),
        source: "measured".into(),
        citation: None,
        params: RunParams { selection: vec![], suites: vec![], trials: 5, min_time_s: 0.1, quick: false, placement: "same".into(), cpus: None, timeout_s: 60.0, ..RunParams::default() },
        fingerprint: Fingerprint {
            hostname: Some("vm".into()),
            kernel_release: Some("6.18.44".into()),
            cpu_model: Some("AMD EPYC".into()),
            threads: Some(2),
            cores: Some(2),
            memory_bytes: Some(25_276_502_016),
            virtualization: Some("kvm".into()),
            ..Fingerprint::default()
        },
        overhead: Some(Overhead { timer_ns: 20.0, loop_ns_per_iteration: 0.257 }),
        results,
        derived,
        warnings: vec![Warning { bench: Some("csw".into()), kind: "high_cv".into(), message: "csw: trials vary by 7.6% (CV above 5%); rerun with more --trials or on a quieter machine".into() }],
        findings: vec![
            Finding { id: "thp".into(), severity: Severity::Warn, title: "transparent huge pages are 'always'".into(), detail: "the paging tests fault once per huge page".into(), fix: "echo madvise | sudo tee /sys/kernel/mm/transparent_hugepage/enabled".into() },
            Finding { id: "virtualization".into(), severity: Severity::Info, title: "running virtualized (kvm)".into(), detail: "the host schedules the virtual CPUs".into(), fix: "use dedicated vCPUs".into() },
        ],
        series: Vec::new(),
        notes: Vec::new(),
    }
}

/// The fixture run with suite series (`run --suite`): a throughput figure of two curves
/// against block size (powers of two, 2 B to 1 MiB) with paper points for both, and a
/// categorical figure (cooked against raw terminal output) with paper points. The values are
/// of the size today's kernel and the 1979-84 machines give, but made up for the tests; the
/// "paper" systems say "(fixture)" so no one takes them for the papers' numbers.
#[cfg(test)]
pub(crate) fn fixture_series_run() -> crate::model::Run {
    use crate::model::*;
    let mut run = fixture_run();
    run.id = "7e57a11c5e21".into();
    run.label = Some("suites <fixture>".into());
    run.params.suites = vec!["bbn".into(), "tty".into()];
    let template = run.results.iter().find(|r| r.id == "pipeback4").cloned();
    // A point whose benchmark took `ns` per operation moving `bytes`, with `sys` of it in
    // the kernel; y is bytes per second with a 3% interval.
    let point = |id: &str, x: f64, label: Option<&str>, bytes: f64, ns: f64, sys: f64| {
        let mut result = template.clone().unwrap_or_else(|| run.results[0].clone());
        result.id = format!("{id}@{x}");
        result.group = "suite".into();
        result.unit = "block".into();
        if let Some(m) = &mut result.summary {
            m.wall_ns_per_op = fixture_estimate(ns, ns * 0.98, ns * 1.03);
            m.sys_ns_per_op = fixture_estimate(ns * sys, ns * sys, ns * sys);
            m.user_ns_per_op = fixture_estimate(ns * 0.1, ns * 0.1, ns * 0.1);
            m.minflt_per_op = bytes / 4096.0 * 0.01;
        }
        let y = bytes * 1e9 / ns;
        SeriesPoint {
            x,
            label: label.map(str::to_string),
            bytes_per_op: bytes,
            y: Some(fixture_estimate(y, y / 1.03, y / 0.98)),
            result,
        }
    };
    let sizes = [
        (2.0, 2500.0),
        (16.0, 2600.0),
        (128.0, 2700.0),
        (1024.0, 3000.0),
        (8192.0, 6000.0),
        (65536.0, 30_000.0),
        (1_048_576.0, 400_000.0),
    ];
    let bbn = |id: &str, curve: &str, slower: f64, paper: Vec<[f64; 2]>| Series {
        suite: "bbn".into(),
        id: id.into(),
        figure: "bbn.throughput".into(),
        figure_title: "Pipe and port throughput against block size".into(),
        curve: curve.into(),
        paper: "BBN report, Tables 1-2 (t.pipe1, 1000 blocks)".into(),
        x_name: "block size".into(),
        x_unit: "bytes".into(),
        x_log: true,
        y_kind: YKind::BytesPerSec,
        unit: "block".into(),
        points: sizes
            .iter()
            .map(|&(b, ns)| point(id, b, None, b, ns * slower, 0.8))
            .collect(),
        paper_points: paper,
        paper_system: Some("PDP-11/70 (fixture)".into()),
    };
    let tty = Series {
        suite: "tty".into(),
        id: "tty.output".into(),
        figure: "tty.output".into(),
        figure_title: "Terminal output through a pseudo-terminal, 256-byte writes".into(),
        curve: "pty output".into(),
        paper: "4.2BSD paper, Fig. 7".into(),
        x_name: "mode".into(),
        x_unit: String::new(),
        x_log: false,
        y_kind: YKind::BytesPerSec,
        unit: "write".into(),
        points: vec![
            point("tty.output", 0.0, Some("cooked"), 256.0, 4200.0, 0.9),
            point("tty.output", 1.0, Some("raw"), 256.0, 2900.0, 0.85),
        ],
        paper_points: vec![[0.0, 3800.0], [1.0, 9600.0]],
        paper_system: Some("VAX-11/750 (fixture)".into()),
    };
    run.series = vec![
        bbn(
            "bbn.pipe",
            "pipe",
            1.0,
            vec![
                [2.0, 2100.0],
                [128.0, 98_000.0],
                [1024.0, 310_000.0],
                [4096.0, 420_000.0],
            ],
        ),
        bbn(
            "bbn.fifo",
            "FIFO with an 8-byte header",
            1.15,
            vec![
                [2.0, 1500.0],
                [128.0, 71_000.0],
                [1024.0, 240_000.0],
                [4096.0, 330_000.0],
            ],
        ),
        tty,
    ];
    run.notes = vec![
        "bbn: ports are FIFOs made with mkfifo(3) in a private temporary directory".into(),
        "tty: pseudo-terminal from posix_openpt(3); <cooked> is OPOST|ONLCR".into(),
    ];
    run
}

/// A run of two suites for the series renderers: two curves on one throughput figure (one
/// with the paper's printed points, one with a failed point), and a categorical cost series.
/// Every point carries a full result (trials and summary) scaled from the fixture's pipe test.
#[cfg(test)]
pub(crate) fn fixture_suites_run() -> crate::model::Run {
    use crate::model::*;
    let mut run = fixture_run();
    run.id = "00000000c0de".into();
    run.label = Some("suites".into());
    run.params.selection.clear();
    run.params.suites = vec!["bbn".into(), "feder".into()];
    let base = run
        .results
        .iter()
        .find(|r| r.id == "pipeback4")
        .cloned()
        .expect("the fixture has pipeback4");
    run.results.clear();
    run.derived.clear();
    let point = |id: &str, x: f64, label: Option<&str>, bytes: f64, kind: YKind, scale: f64| {
        let mut result = base.clone();
        result.id = crate::suite::point_id_of(id, x, label);
        result.unit = "block".into();
        for t in &mut result.trials {
            t.wall_ns = (t.wall_ns as f64 * scale) as u64;
        }
        let sm = result.summary.as_mut().expect("fixture summary");
        for e in [
            &mut sm.wall_ns_per_op,
            &mut sm.user_ns_per_op,
            &mut sm.sys_ns_per_op,
        ] {
            for v in [
                &mut e.median,
                &mut e.ci_low,
                &mut e.ci_high,
                &mut e.min,
                &mut e.max,
                &mut e.mean,
            ] {
                *v *= scale;
            }
        }
        let w = sm.wall_ns_per_op;
        let y = match kind {
            YKind::CostNs => w,
            // A throughput's interval is the cost's turned over: the low cost gives the high rate.
            _ => Estimate {
                median: kind.y_of(w.median, bytes).unwrap_or(0.0),
                ci_low: kind.y_of(w.ci_high, bytes).unwrap_or(0.0),
                ci_high: kind.y_of(w.ci_low, bytes).unwrap_or(0.0),
                min: kind.y_of(w.max, bytes).unwrap_or(0.0),
                max: kind.y_of(w.min, bytes).unwrap_or(0.0),
                mean: kind.y_of(w.mean, bytes).unwrap_or(0.0),
                ..w
            },
        };
        SeriesPoint {
            x,
            label: label.map(str::to_string),
            bytes_per_op: bytes,
            y: Some(y),
            result,
        }
    };
    let series = |suite: &str,
                  id: &str,
                  figure: &str,
                  title: &str,
                  curve: &str,
                  x_name: &str,
                  x_unit: &str,
                  x_log: bool,
                  kind: YKind,
                  points: Vec<SeriesPoint>| Series {
        suite: suite.into(),
        id: id.into(),
        figure: figure.into(),
        figure_title: title.into(),
        curve: curve.into(),
        paper: "BBN Report 3970, Tables 1-2".into(),
        x_name: x_name.into(),
        x_unit: x_unit.into(),
        x_log,
        y_kind: kind,
        unit: "block".into(),
        points,
        paper_points: Vec::new(),
        paper_system: None,
    };
    let bps = YKind::BytesPerSec;
    let mut pipe = series(
        "bbn",
        "bbn.pipe",
        "bbn.throughput",
        "Pipe and FIFO throughput against block size",
        "pipe",
        "block size",
        "bytes",
        true,
        bps,
        vec![
            point("bbn.pipe", 2.0, None, 2.0, bps, 0.2),
            point("bbn.pipe", 512.0, None, 512.0, bps, 0.25),
            point("bbn.pipe", 4096.0, None, 4096.0, bps, 0.4),
        ],
    );
    pipe.paper_points = vec![[2.0, 1.9e3], [512.0, 1.2e5], [4096.0, 2.1e5]];
    pipe.paper_system = Some("fixture system (not the paper's figures)".into());
    let mut failed = point("bbn.fifo", 4096.0, None, 4096.0, bps, 0.5);
    failed.y = None;
    failed.result.summary = None;
    failed.result.error = Some("setup: mkfifo: permission denied".into());
    let fifo = series(
        "bbn",
        "bbn.fifo",
        "bbn.throughput",
        "Pipe and FIFO throughput against block size",
        "FIFO, 8-byte header",
        "block size",
        "bytes",
        true,
        bps,
        vec![
            point("bbn.fifo", 2.0, None, 2.0, bps, 0.22),
            point("bbn.fifo", 512.0, None, 512.0, bps, 0.3),
            failed,
        ],
    );
    let cost = YKind::CostNs;
    let mut table3 = series(
        "feder",
        "feder.table3",
        "feder.table3",
        "Kernel operations (Feder Table III)",
        "today",
        "operation",
        "",
        false,
        cost,
        vec![
            point("feder.table3", 0.0, Some("chdir ."), 0.0, cost, 0.05),
            point("feder.table3", 1.0, Some("open+close"), 0.0, cost, 0.2),
        ],
    );
    table3.paper = "Feder 1984, Table III".into();
    table3.paper_points = vec![[0.0, 1.0e6], [1.0, 2.4e6]];
    table3.paper_system = Some("fixture system (not the paper's figures)".into());
    run.series = vec![pipe, fifo, table3];
    run.notes = vec!["workload: used cc, grep, sort; absent: ed".into()];
    run
}

/// The fixture run made 20% slower at `syscall` (trials, median and interval), as another
/// run labelled "after": a comparison of the two has exactly one regression.
#[cfg(test)]
pub(crate) fn fixture_slower(base: &crate::model::Run) -> crate::model::Run {
    let mut slow = base.clone();
    slow.id = "0000000000b2".into();
    slow.label = Some("after".into());
    for r in slow.results.iter_mut().filter(|r| r.id == "syscall") {
        for t in &mut r.trials {
            t.wall_ns = t.wall_ns * 6 / 5;
        }
        if let Some(s) = &mut r.summary {
            s.wall_ns_per_op.median *= 1.2;
            s.wall_ns_per_op.ci_low *= 1.2;
            s.wall_ns_per_op.ci_high *= 1.2;
        }
    }
    slow
}

#[cfg(test)]
mod tests {

    #[test]
    fn every_interval_label_carries_the_level_it_really_has() {
        assert_eq!(fmt_level(0.95), "95%");
        assert_eq!(fmt_level(0.9375), "93.8%");
        assert_eq!(fmt_level(0.5), "50%");
        assert_eq!(ci_label([0.75, 0.75]), "75% CI");
        assert_eq!(ci_label([0.875, 0.95]), "87.5-95% CI");
        assert_eq!(ci_label([0.0]), "CI");
        // A run of 3 trials (75%) and one of 5 (93.75%), rendered as a table and in HTML.
        for (level, label) in [(0.75, "75%"), (0.9375, "93.8%")] {
            let mut run = fixture_run();
            for r in &mut run.results {
                if let Some(s) = &mut r.summary {
                    s.wall_ns_per_op.ci_level = level;
                }
            }
            let text = table::render(&run);
            assert!(text.contains(&format!("[{label} CI]")), "{text}");
            assert!(!text.contains("95% CI"), "{text}");
            let cmp = crate::compare::build(std::slice::from_ref(&run), 0, 2.0);
            let page = html::html(std::slice::from_ref(&run), &cmp, &[Vec::new()]);
            assert!(page.contains(&format!("s/op [{label} CI]")), "{label}");
            assert!(!page.contains("s/op [95% CI]"));
        }
    }
    use super::*;

    #[test]
    fn utc_formats_known_instants() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_795_336_212_000_000_000), "2026-11-22 08:30:12 UTC");
        assert_eq!(utc(951_782_400_000_000_000), "2000-02-29 00:00:00 UTC");
    }

    #[test]
    fn escape_covers_markup_quotes_and_controls() {
        assert_eq!(
            escape("<script>alert(1)</script>"),
            "&lt;script&gt;alert(1)&lt;/script&gt;"
        );
        assert_eq!(
            escape("\"quotes\" & 'ampersands'"),
            "&quot;quotes&quot; &amp; &#39;ampersands&#39;"
        );
        assert_eq!(escape("a\u{0}b"), "a\u{fffd}b");
        assert_eq!(
            escape("adm\u{200b}in\u{202e}<"),
            "adm\\u{200b}in\\u{202e}&lt;"
        );
        assert_eq!(clip("abcdef", 4), "abc\u{2026}");
        assert_eq!(clip("\u{e9}\u{e9}\u{e9}", 3), "\u{e9}\u{e9}\u{e9}");
    }

    #[test]
    fn numbers_keep_three_significant_digits() {
        assert_eq!(num(0.1234), "0.123");
        assert_eq!(num(12.345), "12.35");
        assert_eq!(num(1234.5), "1234.5");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(f64::NAN), "-");
    }
}
