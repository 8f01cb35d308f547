//! The registry of suites: the papers' other studies, each a set of sweeps (x against y).
//!
//! A suite (`sysperf run --suite NAME`) is a list of [`SeriesSpec`]s; a series is one curve of
//! one of the paper's figures or tables; each of its points is an ordinary [`Benchmark`] made
//! from the point's parameter and measured by the harness exactly like the core suite's (one
//! worker per trial, calibration or a fixed count, warm-up, trials, overhead subtraction). The
//! y of a point is computed from its trials' wall time per operation ([`YKind`]), so every
//! point keeps its raw trials and its interval.
//!
//! This module holds the registry and the types; each suite's benchmarks live in its own
//! file. It does not measure (the harness does), store or draw anything.

use crate::bench::{Benchmark, Shape};
use crate::harness::Target;
use crate::model::adjusted_wall_ns;
use crate::model::{BenchResult, Derived, Overhead, Series, SeriesPoint, TrialKind, YKind};
use crate::stats;

pub mod bbn;
pub mod clock;
pub mod commands;
pub mod cspeed;
pub mod ctx;
pub mod feder;
pub mod fs;
pub mod libs;
pub mod login;
pub mod mem;
pub mod net;
pub mod perfbench;
pub mod scaling;
pub mod scaling_proc;
pub mod swap;
pub mod tty;
pub mod vm;
pub mod workload;

/// Where a series is drawn and what its axes are.
#[derive(Debug, Clone, Copy)]
pub struct Axis {
    pub name: &'static str,
    pub unit: &'static str,
    pub log: bool,
}

/// One point of a series as the suite plans it.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub x: f64,
    /// Handed to the series' `make` in the worker (a block size, a table size, a row index).
    pub param: u64,
    /// A name for x when it is categorical or worth spelling out.
    pub label: Option<String>,
    /// Operations one iteration of `run` performs at this point.
    pub ops_per_iteration: u64,
    /// Bytes one operation moves (for [`YKind::BytesPerSec`]); 0 otherwise.
    pub bytes_per_op: f64,
    /// A fixed iteration count (the paper's, like BBN's 1000 blocks) instead of calibrating
    /// to `--min-time`.
    pub iterations: Option<u64>,
    /// Run every trial of this point in a cgroup whose memory is limited to this many bytes
    /// (the paging-under-pressure suites).
    pub memory_limit_bytes: Option<u64>,
    /// Give every trial of this point a swap area of this many bytes (a zram device sysperf
    /// makes and removes, root only: the `swap` suite's anonymous pages).
    pub swap_bytes: Option<u64>,
}

impl Point {
    /// A point with one operation per iteration, calibrated, unlimited.
    pub fn new(x: f64, param: u64) -> Point {
        Point {
            x,
            param,
            label: None,
            ops_per_iteration: 1,
            bytes_per_op: 0.0,
            iterations: None,
            memory_limit_bytes: None,
            swap_bytes: None,
        }
    }
}

/// Static description of one curve; the single source for `list --suites`, runs and tests.
pub struct SeriesSpec {
    /// Unique across suites, prefixed by the suite: "bbn.pipe".
    pub id: &'static str,
    /// Curves with the same figure id are drawn on one chart.
    pub figure: &'static str,
    pub figure_title: &'static str,
    /// The legend of this curve.
    pub curve: &'static str,
    /// The paper's experiment, with its table or figure number.
    pub paper: &'static str,
    /// What sysperf does today for it.
    pub today: &'static str,
    pub x: Axis,
    pub y: YKind,
    /// What one operation is.
    pub unit: &'static str,
    pub shape: Shape,
    /// The points to measure; `quick` asks for a short sweep (`run --quick`, tests).
    pub points: fn(quick: bool) -> Vec<Point>,
    /// Makes the benchmark of one point in the worker process.
    pub make: fn(param: u64) -> Box<dyn Benchmark>,
    /// The paper's printed figures for this curve, `[x, y]` in the units of `y` (converted
    /// to [`YKind::unit`]); empty when it printed none.
    pub paper_points: &'static [[f64; 2]],
    pub paper_system: Option<&'static str>,
    /// The papers' other printed figures for this curve (`published` reads them from
    /// `data/reference/`), printed beside its table; None for most curves.
    pub printed: Option<Printed>,
}

/// Which of the papers' printed tables a series' other published figures are rows of (the
/// 4.2BSD paper's §4.1.1 figures name their series in their own file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Printed {
    /// BBN Report 3970's Tables 1-8: the rows of this test (`data/reference/bbn.tsv`).
    Bbn(&'static str),
    /// Feder's Table III (`data/reference/feder_table3.tsv`), every machine.
    FederTable3,
}

impl SeriesSpec {
    /// The suite's name: the id's prefix ("bbn" of "bbn.pipe"), which the registry's test
    /// holds every series to.
    pub fn suite(&self) -> &'static str {
        self.id.split('.').next().unwrap_or(self.id)
    }
}

impl std::fmt::Debug for SeriesSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SeriesSpec").field("id", &self.id).finish()
    }
}

/// One suite: `sysperf run --suite NAME`.
pub struct Suite {
    pub name: &'static str,
    pub title: &'static str,
    /// The paper and sections it reproduces.
    pub paper: &'static str,
    pub series: fn() -> Vec<&'static SeriesSpec>,
    /// Checked before anything is measured: `Ok(notes)` to record with the run (which
    /// commands were found, which cgroup interface is used), or `Err(why)` when the suite
    /// cannot run here (no permission, no cgroup), in which case it is skipped and says so.
    pub preflight: fn() -> Result<Vec<String>, String>,
    /// Figures computed from several measured series once the suite ran (a difference of two
    /// curves, a peak); none for most suites.
    pub derive: fn(&[crate::model::Series]) -> Vec<Derived>,
}

impl std::fmt::Debug for Suite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Suite").field("name", &self.name).finish()
    }
}

/// No preflight: the suite runs anywhere the core suite does.
pub fn no_preflight() -> Result<Vec<String>, String> {
    Ok(Vec::new())
}

/// No derived figures.
pub fn no_derived(_: &[crate::model::Series]) -> Vec<Derived> {
    Vec::new()
}

/// Every suite, in the order `--suite all` runs them.
pub fn suites() -> Vec<&'static Suite> {
    vec![
        &bbn::SUITE,
        &clock::SUITE,
        &commands::SUITE,
        &cspeed::SUITE,
        &ctx::SUITE,
        &feder::SUITE,
        &fs::SUITE,
        &libs::SUITE,
        &login::SUITE,
        &mem::SUITE,
        &net::SUITE,
        &perfbench::SUITE,
        &scaling::SUITE,
        &swap::SUITE,
        &tty::SUITE,
        &vm::SUITE,
        &workload::SUITE,
    ]
}

/// The figure ids of a suite's series (`sysperf plot --figure ID`), in registry order, each once.
pub fn figure_ids(suite: &Suite) -> Vec<&'static str> {
    let mut ids: Vec<&'static str> = Vec::new();
    for s in (suite.series)() {
        if !ids.contains(&s.figure) {
            ids.push(s.figure);
        }
    }
    ids
}

/// Every figure id of every suite, in registry order.
pub fn all_figure_ids() -> Vec<&'static str> {
    suites().into_iter().flat_map(figure_ids).collect()
}

/// Why `pattern` chose nothing with `--quick` although it names points of the full sweeps:
/// those points are not among the few `--quick` keeps. None when it names no point at all.
fn dropped_by_quick(pattern: &str) -> Option<String> {
    let mut kept = Vec::new();
    let mut any = false;
    for suite in suites() {
        let whole = crate::bench::glob_match(pattern, suite.name);
        for s in (suite.series)() {
            let every = whole || crate::bench::glob_match(pattern, s.id);
            if (s.points)(false)
                .iter()
                .any(|p| every || crate::bench::glob_match(pattern, &point_id(s, p)))
            {
                any = true;
                let xs: Vec<String> = (s.points)(true).iter().map(|p| point_id(s, p)).collect();
                kept.push(xs.join(", "));
            }
        }
    }
    any.then(|| {
        format!(
            "--quick keeps only a few points of each series, and not this one (it keeps {}); \
             drop --quick to run it, or pick a kept point",
            kept.join("; ")
        )
    })
}

/// The suite with this name.
pub fn find_suite(name: &str) -> Option<&'static Suite> {
    suites().into_iter().find(|s| s.name == name)
}

/// The series with this id, in any suite (the worker resolves its request with it).
pub fn find_series(id: &str) -> Option<&'static SeriesSpec> {
    suites()
        .into_iter()
        .flat_map(|s| (s.series)())
        .find(|s| s.id == id)
}

/// What `--suite` chose in one suite: its series, each with the points to measure.
#[derive(Debug)]
pub struct Chosen {
    pub suite: &'static Suite,
    pub series: Vec<(&'static SeriesSpec, Vec<Point>)>,
}

/// Resolves `--suite` patterns into what to measure, in registry order, without duplicates.
/// A pattern is `all`, a suite's name (`scaling`), a figure id (`net.latency`: its series), a
/// series id (`scaling.poll`) or a point id (`bbn.pipe@65536`), and series and point ids may be
/// shell globs (`'scaling.*poll'`,
/// `'bbn.pipe@[0-9]*'`). A pattern that matches nothing is an error naming the suites.
pub fn choose(patterns: &[String], quick: bool) -> Result<Vec<Chosen>, crate::error::InputError> {
    // Every planned point of every series, with whether some pattern chose it.
    type Marked = Vec<(&'static SeriesSpec, Vec<(Point, bool)>)>;
    let mut all: Vec<(&'static Suite, Marked)> = suites()
        .into_iter()
        .map(|suite| {
            let series = (suite.series)()
                .into_iter()
                .map(|s| {
                    (
                        s,
                        (s.points)(quick).into_iter().map(|p| (p, false)).collect(),
                    )
                })
                .collect();
            (suite, series)
        })
        .collect();
    for pat in patterns {
        let mut matched = false;
        for (suite, series) in &mut all {
            let whole = pat == "all" || crate::bench::glob_match(pat, suite.name);
            for (s, points) in series {
                // A figure id (`net.latency`, as `plot --figure` and `list --suites` name it)
                // chooses the series drawn in it.
                let every = whole || crate::bench::glob_match(pat, s.id) || s.figure == pat;
                for (p, chosen) in points {
                    if every || crate::bench::glob_match(pat, &point_id(s, p)) {
                        *chosen = true;
                        matched = true;
                    }
                }
            }
        }
        if !matched {
            return Err(crate::error::InputError::InvalidValue {
                what: "--suite",
                value: pat.clone(),
                why: quick
                    .then(|| dropped_by_quick(pat))
                    .flatten()
                    .unwrap_or_else(|| {
                        format!(
                    "no such suite, figure, series or point; suites: all, {} (their figures, series and \
                     points: `sysperf list --suites`)",
                    suites()
                        .iter()
                        .map(|s| s.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
                    }),
            });
        }
    }
    Ok(all
        .into_iter()
        .map(|(suite, series)| Chosen {
            suite,
            series: series
                .into_iter()
                .map(|(s, points)| (s, points.into_iter().filter(|p| p.1).map(|p| p.0).collect()))
                .filter(|(_, points): &(_, Vec<Point>)| !points.is_empty())
                .collect(),
        })
        .filter(|c| !c.series.is_empty())
        .collect())
}

/// The y of every successful measured trial of a point, in trial order (see [`YKind::y_of`]).
pub fn y_samples(
    kind: YKind,
    bytes_per_op: f64,
    result: &BenchResult,
    overhead: Option<&Overhead>,
) -> Vec<f64> {
    result
        .trials
        .iter()
        .filter(|t| t.kind == TrialKind::Measured && t.error.is_none() && t.iterations > 0)
        .filter_map(|t| {
            let ops = (t.iterations * result.ops_per_iteration.max(1)) as f64;
            let per_op = adjusted_wall_ns(t, overhead) / ops;
            // The process and every child it reaped (the trial's usage covers both).
            let cpu_per_op = t.usage.cpu_ns() as f64 / ops;
            kind.y_of_trial(per_op, cpu_per_op, bytes_per_op)
        })
        .collect()
}

/// A measured series: its points in the order measured, each with its y estimate.
pub fn series_from(
    spec: &SeriesSpec,
    measured: Vec<(Point, BenchResult)>,
    overhead: Option<&Overhead>,
) -> Series {
    let points = measured
        .into_iter()
        .map(|(p, result)| {
            let ys = y_samples(spec.y, p.bytes_per_op, &result, overhead);
            SeriesPoint {
                x: p.x,
                label: p.label,
                bytes_per_op: p.bytes_per_op,
                y: stats::estimate(&ys).ok(),
                result,
            }
        })
        .collect();
    Series {
        suite: spec.suite().to_string(),
        id: spec.id.to_string(),
        figure: spec.figure.to_string(),
        figure_title: spec.figure_title.to_string(),
        curve: spec.curve.to_string(),
        paper: spec.paper.to_string(),
        x_name: spec.x.name.to_string(),
        x_unit: spec.x.unit.to_string(),
        x_log: spec.x.log,
        y_kind: spec.y,
        unit: spec.unit.to_string(),
        points,
        paper_points: spec.paper_points.to_vec(),
        paper_system: spec.paper_system.map(str::to_string),
    }
}

/// statfs magic numbers of the file systems that keep pages in memory only.
pub(crate) const TMPFS_MAGIC: i64 = 0x0102_1994;
pub(crate) const RAMFS_MAGIC: i64 = 0x8584_58f6;

/// A name for a statfs magic number, for notes.
pub fn fs_name(magic: i64) -> String {
    match magic {
        0xEF53 => "ext2/3/4".into(),
        0x5846_5342 => "xfs".into(),
        0x9123_683E => "btrfs".into(),
        0x794C_7630 => "overlayfs".into(),
        TMPFS_MAGIC => "tmpfs".into(),
        RAMFS_MAGIC => "ramfs".into(),
        m => format!("file system 0x{m:x}"),
    }
}

/// A directory on a disk-backed file system, for suites that must read from storage (the
/// paged file of `vm`, the uncached reads of `feder`): the temporary directory when a disk
/// holds it, else /var/tmp; with its file system's name.
pub fn disk_dir() -> Result<(std::path::PathBuf, String), String> {
    let mut seen = Vec::new();
    for dir in [std::env::temp_dir(), std::path::PathBuf::from("/var/tmp")] {
        match crate::sys::fs_type(&dir) {
            Ok(m) if m != TMPFS_MAGIC && m != RAMFS_MAGIC => return Ok((dir, fs_name(m))),
            Ok(m) => seen.push(format!("{} is {}", dir.display(), fs_name(m))),
            Err(e) => seen.push(format!("{}: {e}", dir.display())),
        }
    }
    Err(format!(
        "no disk-backed directory ({}); set TMPDIR to a directory on a disk",
        seen.join(", ")
    ))
}

/// The id a point's benchmark result carries: `series@x`, or `series@label` with every
/// character that is not printable ASCII (a space, say) as `_`, so that the id can be typed
/// and exported like a benchmark id.
pub fn point_id(series: &SeriesSpec, p: &Point) -> String {
    point_id_of(series.id, p.x, p.label.as_deref())
}

/// [`point_id`] from its parts.
pub fn point_id_of(series: &str, x: f64, label: Option<&str>) -> String {
    match label {
        Some(l) => {
            let l: String = l
                .chars()
                .map(|c| if c.is_ascii_graphic() { c } else { '_' })
                .collect();
            format!("{series}@{l}")
        }
        None => format!("{series}@{}", fmt_x(x)),
    }
}

/// x without a useless ".0" (block sizes and table sizes are whole numbers).
pub fn fmt_x(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// The harness's target for one point of a series.
pub fn target(series: &SeriesSpec, p: &Point) -> Target {
    Target {
        request_id: series.id.to_string(),
        param: Some(p.param),
        id: point_id(series, p),
        group: series.suite().to_string(),
        unit: series.unit.to_string(),
        ops_per_iteration: p.ops_per_iteration.max(1),
        // Table seconds are scaled to one operation for series (they have no paper count).
        paper_count: 1,
        iterations: p.iterations,
        memory_limit_bytes: p.memory_limit_bytes,
        swap_bytes: p.swap_bytes,
        task: None,
        command: None,
    }
}

/// Why derived figure `d` of `run` prints "n/a", if it does: the figure's own reason, the one
/// its results give again ([`crate::derived::na_of_results`]), or for a suite's figure (such as
/// Feder's cold getpid, #45) the one its stored series give again. Here, not in `derived`,
/// so that the registries do not depend on each other in a loop.
pub fn na_of(d: &Derived, run: &crate::model::Run) -> Option<String> {
    crate::derived::na_of_results(d, run).or_else(|| {
        suites()
            .into_iter()
            .filter_map(|suite| {
                let mine: Vec<Series> = run
                    .series
                    .iter()
                    .filter(|s| s.suite == suite.name)
                    .cloned()
                    .collect();
                (!mine.is_empty()).then(|| (suite.derive)(&mine))
            })
            .flatten()
            .find(|f| f.name == d.name)
            .and_then(|f| f.na)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_series_is_complete_and_unique() {
        let mut seen = std::collections::HashSet::new();
        for suite in suites() {
            assert!(!suite.title.is_empty() && !suite.paper.is_empty());
            for s in (suite.series)() {
                assert!(seen.insert(s.id), "duplicate series id {}", s.id);
                assert!(
                    s.id.starts_with(&format!("{}.", suite.name)),
                    "{} is not prefixed by its suite",
                    s.id
                );
                assert!(!s.paper.is_empty() && !s.today.is_empty(), "{}", s.id);
                assert!(!s.unit.is_empty() && !s.curve.is_empty(), "{}", s.id);
                // Ids are used unquoted on command lines and in process names.
                assert!(
                    s.id.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.'),
                    "{}",
                    s.id
                );
                for quick in [true, false] {
                    let pts = (s.points)(quick);
                    assert!(!pts.is_empty(), "{} has no points", s.id);
                    for p in &pts {
                        assert!(p.ops_per_iteration > 0, "{}", s.id);
                        assert!(p.x.is_finite(), "{}", s.id);
                        if s.y == YKind::BytesPerSec {
                            assert!(p.bytes_per_op > 0.0, "{}", s.id);
                        }
                    }
                }
                // A series' id never collides with a core benchmark's.
                assert!(crate::bench::find(s.id).is_none(), "{}", s.id);
            }
        }
    }

    #[test]
    fn unknown_suite_is_a_usage_error_naming_the_choices() {
        let e = choose(&["nope".into()], true).unwrap_err();
        assert!(
            e.to_string().contains("nope") && e.to_string().contains("bbn"),
            "{e}"
        );
        assert_eq!(choose(&["all".into()], true).unwrap().len(), suites().len());
        assert!(choose(&[], true).unwrap().is_empty());
    }

    /// #43: `net.latency` is a figure id (`plot --figure`, `list --suites`), and `--suite`
    /// takes it: the series drawn in that figure, and only those.
    #[test]
    fn a_figure_id_chooses_the_series_it_draws() {
        for fig in all_figure_ids() {
            let chosen = choose(&[fig.to_string()], false).unwrap_or_else(|e| panic!("{fig}: {e}"));
            let ids: Vec<&str> = chosen
                .iter()
                .flat_map(|c| &c.series)
                .filter(|(_, pts)| !pts.is_empty())
                .map(|(s, _)| s.id)
                .collect();
            let drawn: Vec<&str> = suites()
                .into_iter()
                .flat_map(|s| (s.series)())
                .filter(|s| s.figure == fig && !(s.points)(false).is_empty())
                .map(|s| s.id)
                .collect();
            assert!(!drawn.is_empty(), "{fig}");
            assert_eq!(ids, drawn, "{fig}");
        }
    }

    #[test]
    fn suites_series_and_points_can_be_chosen_by_name_and_glob() {
        let ids = |c: &[Chosen]| -> Vec<String> {
            c.iter()
                .flat_map(|c| &c.series)
                .flat_map(|(s, pts)| pts.iter().map(|p| point_id(s, p)))
                .collect()
        };
        // A whole suite: every point of every series, as planned.
        let bbn = choose(&["bbn".into()], false).unwrap();
        let planned: usize = (find_suite("bbn").unwrap().series)()
            .iter()
            .map(|s| (s.points)(false).len())
            .sum();
        assert_eq!(ids(&bbn).len(), planned);
        // One series; one point; a glob over series in two suites, without duplicates and
        // in registry order.
        let one = choose(&["scaling.poll".into()], false).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].series.len(), 1);
        assert_eq!(one[0].series[0].0.id, "scaling.poll");
        assert_eq!(
            ids(&choose(&["bbn.pipe@65536".into()], false).unwrap()),
            ["bbn.pipe@65536"]
        );
        let globbed = choose(
            &[
                "scaling.*poll".into(),
                "scaling.poll".into(),
                "bbn.pipe@4096".into(),
            ],
            false,
        )
        .unwrap();
        let got: Vec<&str> = globbed
            .iter()
            .flat_map(|c| c.series.iter().map(|(s, _)| s.id))
            .collect();
        assert_eq!(got, ["bbn.pipe", "scaling.poll", "scaling.epoll"]);
        assert!(choose(&["bbn.pipe@3".into()], false).is_err());
    }

    #[test]
    fn point_ids_are_typeable() {
        assert_eq!(point_id_of("bbn.pipe", 4096.0, None), "bbn.pipe@4096");
        assert_eq!(
            point_id_of("feder.table3", 0.0, Some("chdir \".\" é")),
            "feder.table3@chdir_\".\"__"
        );
    }

    #[test]
    fn x_prints_without_a_useless_fraction() {
        assert_eq!(fmt_x(4096.0), "4096");
        assert_eq!(fmt_x(0.5), "0.5");
    }
}
