//! The suites' series as text: one table per curve, x against y with its interval, and what
//! each point cost the system (real, user and system time per operation of the point's
//! processes, children included, as the BBN report counted them; CPU %, faults and context
//! switches). The figures themselves are drawn by the report; this is what `run`
//! and `show` print. Pure: a run in, text out.

use super::num;
use crate::model::{Run, Series, SeriesPoint, YKind};
use crate::suite::fmt_x;
use std::fmt::Write;

/// A y unit readable at the size of the values: the divisor and its name.
pub fn y_unit(kind: YKind, largest: f64) -> (f64, &'static str) {
    let pick = |steps: &[(f64, &'static str)]| {
        steps
            .iter()
            .rev()
            .find(|(d, _)| largest >= *d)
            .copied()
            .unwrap_or(steps[0])
    };
    match kind {
        YKind::CostNs | YKind::CpuNs => pick(&[(1.0, "ns"), (1e3, "us"), (1e6, "ms"), (1e9, "s")]),
        YKind::BytesPerSec => pick(&[(1.0, "B/s"), (1e3, "KB/s"), (1e6, "MB/s"), (1e9, "GB/s")]),
        YKind::PerHour => (1.0, "per hour"),
        YKind::OpsPerSec => pick(&[(1.0, "ops/s"), (1e3, "K ops/s"), (1e6, "M ops/s")]),
    }
}

/// A y with the unit that suits its size: "445 MB/s".
pub fn y_text(kind: YKind, v: f64) -> String {
    let (div, unit) = y_unit(kind, v.abs());
    format!("{} {unit}", num(v / div))
}

/// What the y of a series is called in a table head.
pub fn y_name(kind: YKind) -> &'static str {
    match kind {
        YKind::CostNs => "time per operation",
        YKind::CpuNs => "CPU time per operation",
        YKind::BytesPerSec => "throughput",
        YKind::PerHour => "operations per hour",
        YKind::OpsPerSec => "operations per second",
    }
}

/// What the x of a point reads as: its label, else the number.
pub fn x_text(p: &SeriesPoint) -> String {
    p.label.clone().unwrap_or_else(|| fmt_x(p.x))
}

/// User and system nanoseconds per operation of a point's process and the children it reaped:
/// the suites' figures, as the BBN report's time(1) of t.pipe1 counted writer and reader
/// (80% CPU at 2-byte blocks on one CPU). Older runs have only the user and system columns,
/// which then include the children too.
pub fn cpu_ns(s: &crate::model::Summary) -> (f64, f64) {
    match &s.whole {
        Some(w) => (w.user_ns_per_op.median, w.sys_ns_per_op.median),
        None => (s.user_ns_per_op.median, s.sys_ns_per_op.median),
    }
}

/// CPU share of a point: (user + system) / real of its processes, in percent, as the BBN
/// report prints it.
pub fn cpu_pct(p: &SeriesPoint) -> Option<f64> {
    let s = p.result.summary.as_ref()?;
    let wall = s.wall_ns_per_op.median;
    let (user, sys) = cpu_ns(s);
    (wall > 0.0).then(|| 100.0 * (user + sys) / wall)
}

/// The x of a paper's printed point as the series names it (a categorical x by its label).
fn paper_x(s: &Series, x: f64) -> String {
    s.points
        .iter()
        .find(|p| p.x == x && p.label.is_some())
        .map(x_text)
        // A published x between the run's points (the vm suite's 7.3 MB / 3.5 MB) to three
        // significant digits, not all of an f64's.
        .unwrap_or_else(|| if x.fract() == 0.0 { fmt_x(x) } else { num(x) })
}

fn table(s: &Series) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n{} [{}]: {}\n  {}",
        s.figure_title, s.id, s.curve, s.paper
    );
    let x_head = if s.x_unit.is_empty() {
        s.x_name.clone()
    } else {
        format!("{} ({})", s.x_name, s.x_unit)
    };
    let _ = writeln!(
        out,
        "  {:<22} {:<36} | {:>10} {:>10} {:>10} {:>6} | {:>9} {:>9} {:>8}",
        x_head,
        format!(
            "{} [{}]",
            y_name(s.y_kind),
            super::ci_label(s.points.iter().filter_map(|p| p.y.map(|y| y.ci_level)))
        ),
        "real us/op",
        "user us/op",
        "sys us/op",
        "CPU %",
        "minflt/op",
        "majflt/op",
        "csw/op"
    );
    let _ = writeln!(out, "  {}", "-".repeat(140));
    for p in &s.points {
        let y = match &p.y {
            Some(e) => {
                // The interval in the median's unit, so the three numbers read together.
                let (div, unit) = y_unit(s.y_kind, e.median.abs());
                format!(
                    "{:>9} {:<8} [{}, {}]",
                    num(e.median / div),
                    unit,
                    num(e.ci_low / div),
                    num(e.ci_high / div)
                )
            }
            None => format!(
                "failed: {}",
                p.result.error.as_deref().unwrap_or("no trial succeeded")
            ),
        };
        let costs = match &p.result.summary {
            Some(m) => format!(
                "{:>10} {:>10} {:>10} {:>6} | {:>9} {:>9} {:>8}",
                num(m.wall_ns_per_op.median / 1e3),
                num(cpu_ns(m).0 / 1e3),
                num(cpu_ns(m).1 / 1e3),
                cpu_pct(p).map(|c| format!("{c:.0}")).unwrap_or_default(),
                num(m.minflt_per_op),
                num(m.majflt_per_op),
                num(m.csw_per_op)
            ),
            None => String::new(),
        };
        let _ = writeln!(out, "  {:<22} {y:<36} | {costs}", x_text(p));
    }
    // Every column the papers printed for this curve, with its source; else the one the run
    // stored (runs of a series the published data does not know).
    let published = crate::published::for_series(&s.id).unwrap_or(&[]);
    for c in published {
        let printed: Vec<String> = c
            .figures
            .iter()
            .map(|f| {
                // A categorical x reads as the run's own label for it (the published file's
                // name when the run has no such point); a numeric x keeps a figure's label
                // (the real-world test's process) beside it.
                let x = match &f.label {
                    Some(l) if s.x_unit.is_empty() => s
                        .points
                        .iter()
                        .find(|p| p.x == f.x && p.label.is_some())
                        .map(x_text)
                        .unwrap_or_else(|| l.clone()),
                    Some(l) => format!("{} {l}", fmt_x(f.x)),
                    None => fmt_x(f.x),
                };
                let cpu = f
                    .cpu_pct
                    .map(|c| format!(" ({c:.0}% CPU)"))
                    .unwrap_or_default();
                format!("{x}: {}{cpu}", y_text(s.y_kind, f.y))
            })
            .collect();
        let _ = writeln!(
            out,
            "  published, {} ({}): {}",
            c.system,
            c.source,
            printed.join(", ")
        );
    }
    if published.is_empty() && !s.paper_points.is_empty() {
        let printed: Vec<String> = s
            .paper_points
            .iter()
            .map(|[x, y]| format!("{}: {}", paper_x(s, *x), y_text(s.y_kind, *y)))
            .collect();
        let _ = writeln!(
            out,
            "  paper ({}): {}",
            s.paper_system.as_deref().unwrap_or("as printed"),
            printed.join(", ")
        );
    }
    out
}

/// Every series of a run, then the run's notes (but the machine noise line, which Table 2's
/// page prints on its own); empty for a run without either.
pub fn render(run: &Run) -> String {
    let mut out = String::new();
    for s in &run.series {
        out.push_str(&table(s));
    }
    let notes: Vec<&String> = run
        .notes
        .iter()
        .filter(|n| !crate::speed::is_line(n))
        .collect();
    if !notes.is_empty() {
        let _ = writeln!(out, "\nNotes");
        for n in notes {
            let _ = writeln!(out, "  {n}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_follow_the_size_of_the_values() {
        assert_eq!(y_unit(YKind::BytesPerSec, 2.5e9), (1e9, "GB/s"));
        assert_eq!(y_unit(YKind::BytesPerSec, 3e5), (1e3, "KB/s"));
        assert_eq!(y_unit(YKind::CostNs, 120.0), (1.0, "ns"));
        assert_eq!(y_unit(YKind::CostNs, 12_000.0), (1e3, "us"));
        assert_eq!(y_unit(YKind::CostNs, 0.0), (1.0, "ns"));
        assert_eq!(y_unit(YKind::PerHour, 5e4).1, "per hour");
        assert_eq!(y_unit(YKind::OpsPerSec, 2.5e6), (1e6, "M ops/s"));
        assert_eq!(y_unit(YKind::OpsPerSec, 900.0), (1.0, "ops/s"));
    }

    #[test]
    fn a_published_x_between_points_prints_three_digits_not_an_f64() {
        // The vm suite's paper point sits at 7.3 MB / 3.5 MB (#14: raw floats).
        let mut run = crate::report::fixture_suites_run();
        let s = &mut run.series[0];
        s.id = "no.published.data".into();
        s.paper_points = vec![[7.3 / 3.5, 1.0e6]];
        let text = render(&run);
        assert!(text.contains("2.09: "), "{text}");
        assert!(!text.contains("2.0857"), "{text}");
    }

    #[test]
    fn series_tables_snapshot() {
        let run = crate::report::fixture_suites_run();
        insta::assert_snapshot!(render(&run));
    }
}
