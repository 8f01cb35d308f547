//! The `swap` suite: Table 7 under memory pressure as the 4.2BSD paper ran it (Leffler, Karels
//! and McKusick 1984, §3.2.8, Tables 6-8, Appendix A): the paging programs over anonymous,
//! zero-fill-on-demand memory larger than the memory they may use, with a swap area behind it.
//!
//! "The test programs dynamically allocated a 7.3 Megabyte array (using sbrk(2))" on "a
//! VAX-11/750 with 4.5 megabytes of physical memory" (§3.2.1, §3.2.8): the program was 1.6 times
//! the machine's memory, its pages were paged out to the swap area and came back with a fault.
//! Here each trial runs the appendix's program (`bench::paging`: the run script's 7500 pages,
//! its random() and gauss() walks, a store of 1 into each page touched; the `-v` variants
//! advise with madvise) in a memory cgroup (see `harness::cgroup`) whose limit leaves the
//! program 1/x of its pages, with a swap area on a zram device sysperf makes for the trial and
//! removes after it (see `harness::zram`): the pages the limit evicts are swapped out, and a
//! touch of one is a major fault that swaps it back in. Root only, and the kernel needs zram;
//! elsewhere the suite is skipped with the reason (`--suite vm` pages file-backed memory
//! instead, without swap).
//!
//! x is the program's pages over the memory the cgroup leaves them (its limit less an
//! allowance for the worker's own memory): 1 fits; 7.3 / 4.5 = 1.62 is the paper's program
//! over its machine's memory; 7.3 / 3.5 = 2.09 over what 4.2BSD left of it ("under 4.2BSD it
//! used nearly 1 megabyte of physical memory", §3.2.8). `--quick` runs the paper's 1.62.
//!
//! What differs: pages are 4 KiB (the VAX's were 1 KiB clusters), so the 7500 pages are 30 MB;
//! the swap area is compressed memory, not a disk, so a swap-in costs microseconds of CPU
//! where 1984's cost a disk transfer; and Linux's reclaim is not 4.2BSD's clock algorithm.
//! Each curve is one row of Table 7 through the paper's own point; the derived figures give,
//! per point, the major faults per touch beside Table 7's faults per touch and the page-fault
//! service time (system time per major fault) beside Table 8's.

use super::vm::{param, unparam, Walk};
use super::{Axis, Point, SeriesSpec, Suite};
use crate::bench::Shape;
use crate::harness::{cgroup, zram};
use crate::model::{Derived, Series, YKind};
use crate::sys;

pub static SUITE: Suite = Suite {
    name: "swap",
    title: "Table 7 under memory pressure: anonymous memory 1.6 times what it may use, paged to swap",
    paper: "Leffler, Karels, McKusick, \"Measuring and Improving the Performance of 4.2BSD\" (1984), §3.2.8, Tables 6-8, Appendix A",
    series,
    preflight,
    derive,
};

/// The run script's pages (`-p 7500`).
const PAGES: usize = crate::bench::paging::NPAGES;
/// The paper's array over its machine's memory: "a 7.3 Megabyte array" on "4.5 megabytes of
/// physical memory".
pub const PAPER_X: f64 = 7.3 / 4.5;
/// The array over what 4.2BSD left to programs (nearly 1 MB of the 4.5 was the system's).
const LEFT_X: f64 = 7.3 / 3.5;
/// The full sweep: fitting, the paper's ratio, and the ratio to what 4.2BSD left.
const RATIOS: &[f64] = &[1.0, PAPER_X, LEFT_X];
const QUICK_RATIOS: &[f64] = &[PAPER_X];
/// Memory the cgroup allows beyond the pages' share (the worker's heap, stack and page
/// tables), as the vm suite's.
const ALLOWANCE: u64 = super::vm::WORKER_ALLOWANCE;

fn points_for(walk: Walk, quick: bool) -> Vec<Point> {
    let ws = (PAGES * sys::page_size()) as u64;
    let touches = walk.touches(PAGES);
    let ratios = if quick { QUICK_RATIOS } else { RATIOS };
    ratios
        .iter()
        .map(|&x| {
            let limit = (ws as f64 / x) as u64 + ALLOWANCE;
            Point {
                label: Some(format!("{x:.2}x-limit-{}k", limit >> 10)),
                ops_per_iteration: touches as u64,
                // One iteration is one run of the paper's program, from nothing mapped.
                iterations: Some(1),
                memory_limit_bytes: Some(limit),
                // Room for every page the program touches, twice over.
                swap_bytes: Some(2 * ws),
                ..Point::new(x, param(PAGES, touches))
            }
        })
        .collect()
}

const X: Axis = Axis {
    name: "program / memory it may use",
    unit: "ratio",
    log: false,
};

const PAPER_SYSTEM: Option<&str> = Some(
    "4.2BSD on a VAX-11/750 with 4.5 MB (Table 7, real seconds over the run's touches; x = the 7.3 MB array over the 4.5 MB)",
);

macro_rules! swap_series {
    ($name:ident, $id:literal, $curve:literal, $table7:literal, $walk:expr, $advice:expr, $real_s:expr, $touches:expr) => {
        static $name: SeriesSpec = SeriesSpec {
            printed: None,
            id: $id,
            figure: "swap.paging",
            figure_title: "Table 7 under memory pressure: time per page touch, anonymous memory paged to swap",
            curve: $curve,
            paper: $table7,
            today: "the appendix's walk over 7500 fresh anonymous pages (a store into each page \
                    touched) in a memory cgroup leaving it 1/x of them, with a zram swap area \
                    made for the trial",
            x: X,
            y: YKind::CostNs,
            unit: "touch",
            shape: Shape::Single,
            points: |quick| points_for($walk, quick),
            make: |p| {
                let (npages, touches) = unparam(p);
                crate::bench::paging::anonymous_walk($walk.pattern(npages, touches), $advice, npages)
            },
            paper_points: &[[PAPER_X, $real_s * 1e9 / $touches]],
            paper_system: PAPER_SYSTEM,
        };
    };
}

swap_series!(SEQ, "swap.seqpage", "seqpage", "Table 6 seqpage: sequentially touch pages, 10 iterations (Table 7, 4.2BSD: 1126 s real, 12.8 user, 213.0 system, 17113 faults)", Walk::Seq, None, 1126.0, 75_000.0);
swap_series!(SEQ_V, "swap.seqpage-v", "seqpage-v", "Table 6 seqpage-v: as seqpage, after vadvise(VA_SEQL) (Table 7, 4.2BSD: 812 s real, 5.3 user, 237.7 system, 8351 faults)", Walk::Seq, Some(libc::MADV_SEQUENTIAL), 812.0, 75_000.0);
swap_series!(RAND, "swap.randpage", "randpage", "Table 6 randpage: touch random page 30,000 times (Table 7, 4.2BSD: 569 s real, 7.6 user, 77.2 system, 9776 faults; Table 8: 789 us per fault)", Walk::Rand, None, 569.0, 30_000.0);
swap_series!(RAND_V, "swap.randpage-v", "randpage-v", "Table 6 randpage-v: as randpage, after vadvise(VA_ANOM) (Table 7, 4.2BSD: 562 s real, 7.3 user, 77.5 system, 9852 faults; Table 8: 786 us per fault)", Walk::Rand, Some(libc::MADV_RANDOM), 562.0, 30_000.0);
swap_series!(GAUSS1, "swap.gausspage.1", "gausspage.1", "Table 6 gausspage.1: 30,000 Gaussian accesses, standard deviation of 1 (Table 7, 4.2BSD: 24 s real, 23.8 user, 0.8 system, 8 faults)", Walk::Gauss(1.0), None, 24.0, 30_000.0);
swap_series!(GAUSS10, "swap.gausspage.10", "gausspage.10", "Table 6 gausspage.10: standard deviation of 10 (Table 7, 4.2BSD: 26 s real, 23.0 user, 3.6 system, 2 faults)", Walk::Gauss(10.0), None, 26.0, 30_000.0);
swap_series!(GAUSS30, "swap.gausspage.30", "gausspage.30", "Table 6 gausspage.30: standard deviation of 30 (Table 7, 4.2BSD: 33 s real, 24.8 user, 8.9 system, 2 faults)", Walk::Gauss(30.0), None, 33.0, 30_000.0);
swap_series!(GAUSS40, "swap.gausspage.40", "gausspage.40", "Table 6 gausspage.40: standard deviation of 40 (Table 7, 4.2BSD: 81 s real, 25.0 user, 13.6 system, 260 faults)", Walk::Gauss(40.0), None, 81.0, 30_000.0);
swap_series!(GAUSS50, "swap.gausspage.50", "gausspage.50", "Table 6 gausspage.50: standard deviation of 50 (Table 7, 4.2BSD: 175 s real, 26.2 user, 26.3 system, 1851 faults)", Walk::Gauss(50.0), None, 175.0, 30_000.0);
swap_series!(GAUSS60, "swap.gausspage.60", "gausspage.60", "Table 6 gausspage.60: standard deviation of 60 (Table 7, 4.2BSD: 234 s real, 26.7 user, 36.0 system, 3177 faults)", Walk::Gauss(60.0), None, 234.0, 30_000.0);
swap_series!(GAUSS80, "swap.gausspage.80", "gausspage.80", "Table 6 gausspage.80: standard deviation of 80 (Table 7, 4.2BSD: 329 s real, 27.9 user, 52.0 system, 5105 faults)", Walk::Gauss(80.0), None, 329.0, 30_000.0);
swap_series!(GAUSSINF, "swap.gausspage.inf", "gausspage.inf", "Table 6 gausspage.inf: standard deviation of 10,000 (Table 7, 4.2BSD: 621 s real, 85.6 user, 81.5 system, 9650 faults; Table 8: 844 us per fault)", Walk::Gauss(10_000.0), None, 621.0, 30_000.0);

/// All twelve rows of Table 7, in its order.
fn series() -> Vec<&'static SeriesSpec> {
    vec![
        &SEQ, &SEQ_V, &RAND, &RAND_V, &GAUSS1, &GAUSS10, &GAUSS30, &GAUSS40, &GAUSS50, &GAUSS60,
        &GAUSS80, &GAUSSINF,
    ]
}

fn preflight() -> Result<Vec<String>, String> {
    zram::check()
        .map_err(|e| format!("{e} (the vm suite pages file-backed memory without swap)"))?;
    let at = cgroup::probe(64 << 20).map_err(|e| e.to_string())?;
    let ws = PAGES * sys::page_size();
    Ok(vec![
        at,
        format!(
            "{PAGES} anonymous pages of {} KiB ({:.1} MiB; the paper's 7.3 MB were 1 KiB pages), swapped to a zram device of {} MiB made for each trial",
            sys::page_size() / 1024,
            ws as f64 / (1 << 20) as f64,
            2 * ws / (1 << 20)
        ),
    ])
}

/// Table 7's faults per touch of test `id` for each system that printed them (the published
/// runs' paging results: faults of one run over its touches).
fn table7_faults_per_touch(id: &str) -> String {
    let mut out = Vec::new();
    for name in ["vax750-4.1bsd", "vax750-4.2bsd"] {
        let r = crate::reference::find(name)
            .ok()
            .flatten()
            .and_then(|run| run.results.iter().find(|r| r.id == id))
            .and_then(|r| {
                r.summary
                    .as_ref()
                    .map(|s| (r.paper_count, s.minflt_per_op + s.majflt_per_op))
            });
        if let Some((touches, per)) = r {
            let system = name.trim_start_matches("vax750-").replace("bsd", "BSD");
            out.push(format!(
                "{system} {:.0} in {touches} = {per:.4}",
                per * touches as f64
            ));
        }
    }
    format!("Table 7's faults per touch: {}", out.join(", "))
}

/// Per point: the major faults per touch beside Table 7's faults per touch, and the page-fault
/// service time (system time per major fault, Table 8's definition) beside Table 8's.
fn derive(series: &[Series]) -> Vec<Derived> {
    let mut out = Vec::new();
    for s in series {
        let test = s.id.trim_start_matches("swap.");
        for p in &s.points {
            let Some(sum) = &p.result.summary else {
                continue;
            };
            let id = &p.result.id;
            let (majflt, minflt) = (sum.majflt_per_op, sum.minflt_per_op);
            out.push(Derived {
                na: None,
                name: format!("major faults per touch ({id})"),
                value: majflt,
                unit: "faults/touch".into(),
                formula: format!(
                    "major faults / touches, {minflt:.4} minor (zero-fill) faults per touch besides; {}",
                    table7_faults_per_touch(test)
                ),
            });
            if majflt > 0.0 {
                let sys_ns = sum.sys_ns_per_op.median;
                out.push(Derived {
                    na: None,
                    name: format!("page-fault service time ({id})"),
                    value: sys_ns / majflt / 1000.0,
                    unit: "us/fault".into(),
                    formula: format!(
                        "system time / major faults = {sys_ns:.1} ns / {majflt:.4} per touch (Table 8's definition){}",
                        crate::derived::table8_beside(test)
                    ),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{BenchResult, Estimate, SeriesPoint, Summary};

    #[test]
    fn all_twelve_rows_through_the_papers_point_at_its_ratio() {
        let reference = crate::reference::find("vax750-4.2bsd").unwrap().unwrap();
        let ours = series();
        assert_eq!(ours.len(), 12);
        let paging: Vec<_> = reference
            .results
            .iter()
            .filter(|r| {
                crate::bench::find(&r.id).is_some_and(|s| s.group == crate::bench::Group::Paging)
            })
            .collect();
        for (s, r) in ours.iter().zip(&paging) {
            assert_eq!(s.id, format!("swap.{}", r.id), "Table 7's order");
            let per_touch = r.summary.as_ref().unwrap().wall_ns_per_op.median;
            assert_eq!(s.paper_points, [[PAPER_X, s.paper_points[0][1]]]);
            assert!(
                (s.paper_points[0][1] / per_touch - 1.0).abs() < 1e-9,
                "{}",
                s.id
            );
        }
        // 7.3 MB over 4.5 MB.
        assert!((PAPER_X - 1.622).abs() < 0.001);
    }

    #[test]
    fn points_limit_the_pages_to_1_over_x_and_give_them_swap() {
        let ws = (PAGES * sys::page_size()) as u64;
        for s in series() {
            for quick in [true, false] {
                for p in (s.points)(quick) {
                    let (npages, touches) = unparam(p.param);
                    assert_eq!(npages, 7500);
                    assert_eq!(p.ops_per_iteration, touches as u64);
                    let left = (p.memory_limit_bytes.unwrap() - ALLOWANCE) as f64;
                    assert!((ws as f64 / left - p.x).abs() < 1e-6, "{} {}", s.id, p.x);
                    assert!(p.swap_bytes.unwrap() >= ws, "{}", s.id);
                }
            }
            let quick: Vec<f64> = (s.points)(true).iter().map(|p| p.x).collect();
            assert_eq!(quick, [PAPER_X]);
        }
    }

    #[test]
    fn derive_puts_majflt_per_touch_beside_table_7_and_pfst_beside_table_8() {
        let est = |v: f64| Estimate::single(v, 1.0, 1);
        let summary = Summary {
            minflt_per_op: 0.25,
            majflt_per_op: 0.3,
            ..Summary::of_times(est(5_000.0), est(100.0), est(1_500.0))
        };
        let mut s = super::super::series_from(&RAND, Vec::new(), None);
        s.points.push(SeriesPoint {
            x: PAPER_X,
            label: None,
            bytes_per_op: 0.0,
            y: None,
            result: BenchResult {
                id: "swap.randpage@1.62x".into(),
                group: "swap".into(),
                ops_per_iteration: 30_000,
                paper_count: 1,
                unit: "touch".into(),
                placement: "single".into(),
                cpus: vec![],
                trials: vec![],
                summary: Some(summary),
                error: None,
            },
        });
        let d = derive(&[s]);
        assert_eq!(d[0].name, "major faults per touch (swap.randpage@1.62x)");
        assert_eq!(d[0].value, 0.3);
        assert!(
            d[0].formula
                .contains("4.1BSD 8085 in 30000 = 0.2695, 4.2BSD 9776 in 30000 = 0.3259"),
            "{}",
            d[0].formula
        );
        assert_eq!(d[1].name, "page-fault service time (swap.randpage@1.62x)");
        assert!((d[1].value - 5.0).abs() < 1e-9);
        assert!(
            d[1].formula
                .contains("4.1BSD 791, 4.2BSD 789 us (Leffler et al. 1984, Table 8)"),
            "{}",
            d[1].formula
        );
    }
}
