//! The papers' published figures for the suites' curves, beyond the one column each curve
//! draws: every system of BBN Report 3970's Tables 1-8 (PDP-11/40 and 11/70, standard and
//! improved kernels, with real, user and system time and CPU usage), Feder's Table III for the
//! 3B20S, VAX-11/780 and PDP-11/70, and the 4.2BSD paper's `ls -l` of 600 files before either
//! cache, with the per-process cache and with both (§4.1.1). `run` and `show` print them under
//! each curve's table, each column with its source, so that today's figures stand beside all
//! that was printed.
//!
//! The papers' single figures (`data/reference/figures.tsv`) are [`crate::papers`]'s,
//! re-exported here.
//!
//! The figures ship as tab-separated files under `data/reference/` (transcribed exactly, with
//! a header naming paper, table and machine), embedded and parsed once. Which series a BBN or
//! Feder row belongs to is the series' own word (`SeriesSpec::printed`); the §4.1.1 file names
//! its series itself. Pure: no store, no
//! measurement. Table 2 and Table 7 of the 4.2BSD paper are reference *runs* instead, in
//! [`crate::reference`], since they compare test by test with a measured run.

use crate::papers::rows;
pub use crate::papers::{beside, figure, figures, figures_of, ReferenceError, Rel, TextFigure};
use crate::suite::{self, Printed};
use std::collections::BTreeMap;
use std::sync::OnceLock;

const BBN: &str = include_str!("../data/reference/bbn.tsv");
const FEDER: &str = include_str!("../data/reference/feder_table3.tsv");
const LEFFLER_TEXT: &str = include_str!("../data/reference/leffler_text.tsv");

const BBN_FILE: &str = "data/reference/bbn.tsv";
const FEDER_FILE: &str = "data/reference/feder_table3.tsv";
const TEXT_FILE: &str = "data/reference/leffler_text.tsv";

/// One printed figure of a column: its x (and label, for a categorical x or a process), the
/// y in the series' unit (bytes per second, nanoseconds), and what the source printed beside it.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub x: f64,
    pub label: Option<String>,
    pub y: f64,
    pub real_s: Option<f64>,
    pub user_s: Option<f64>,
    pub sys_s: Option<f64>,
    pub cpu_pct: Option<f64>,
}

/// One system's figures for one curve, with where they were printed.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// "PDP-11/70, standard system".
    pub system: String,
    /// "BBN Report 3970, Table 5".
    pub source: String,
    pub figures: Vec<Figure>,
}

/// One BBN row, as the file has it.
#[derive(Debug, Clone, PartialEq)]
pub struct BbnRow {
    pub table: u32,
    pub machine: String,
    pub system: String,
    pub test: String,
    pub block_bytes: u64,
    pub blocks: u64,
    pub process: Option<String>,
    pub real_s: f64,
    pub user_s: Option<f64>,
    pub sys_s: f64,
    pub cpu_pct: Option<f64>,
}

/// One row of Feder's Table III: milliseconds per operation, and t_III/t_V.
#[derive(Debug, Clone, PartialEq)]
pub struct FederRow {
    pub operation: String,
    pub b3b20s_ms: f64,
    pub vax780_ms: f64,
    pub vax780_gain: f64,
    pub pdp1170_ms: f64,
    pub pdp1170_gain: f64,
}

/// A non-negative number, or None for "-".
fn opt(file: &'static str, line: usize, s: &str) -> Result<Option<f64>, ReferenceError> {
    if s == "-" {
        return Ok(None);
    }
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(Some(v)),
        _ => Err(ReferenceError {
            file,
            line,
            why: format!("'{s}' is neither a non-negative number nor '-'"),
        }),
    }
}

fn num(file: &'static str, line: usize, s: &str) -> Result<f64, ReferenceError> {
    opt(file, line, s)?.ok_or_else(|| ReferenceError {
        file,
        line,
        why: "a figure is missing".into(),
    })
}

/// Every row of BBN Report 3970's Tables 1-8.
pub fn bbn_rows() -> Result<Vec<BbnRow>, ReferenceError> {
    const HEADER: [&str; 11] = [
        "table",
        "machine",
        "system",
        "test",
        "block_bytes",
        "blocks",
        "process",
        "real_s",
        "user_s",
        "sys_s",
        "cpu_pct",
    ];
    let f = BBN_FILE;
    rows(f, BBN, &HEADER)?
        .into_iter()
        .map(|(n, r)| {
            Ok(BbnRow {
                table: num(f, n, r[0])? as u32,
                machine: r[1].into(),
                system: r[2].into(),
                test: r[3].into(),
                block_bytes: num(f, n, r[4])? as u64,
                blocks: num(f, n, r[5])? as u64,
                process: (r[6] != "-").then(|| r[6].to_string()),
                real_s: num(f, n, r[7])?,
                user_s: opt(f, n, r[8])?,
                sys_s: num(f, n, r[9])?,
                cpu_pct: opt(f, n, r[10])?,
            })
        })
        .collect()
}

/// Every row of Feder's Table III, in the table's order.
pub fn feder_rows() -> Result<Vec<FederRow>, ReferenceError> {
    const HEADER: [&str; 6] = [
        "operation",
        "3b20s_ms",
        "vax780_ms",
        "vax780_gain",
        "pdp1170_ms",
        "pdp1170_gain",
    ];
    let f = FEDER_FILE;
    rows(f, FEDER, &HEADER)?
        .into_iter()
        .map(|(n, r)| {
            Ok(FederRow {
                operation: r[0].into(),
                b3b20s_ms: num(f, n, r[1])?,
                vax780_ms: num(f, n, r[2])?,
                vax780_gain: num(f, n, r[3])?,
                pdp1170_ms: num(f, n, r[4])?,
                pdp1170_gain: num(f, n, r[5])?,
            })
        })
        .collect()
}

/// The series whose printed figures these are (the suites' registry says which:
/// `SeriesSpec::printed`).
fn series_printing(these: impl Fn(Printed) -> bool) -> Option<&'static str> {
    suite::suites()
        .into_iter()
        .flat_map(|s| (s.series)())
        .find(|s| s.printed.is_some_and(&these))
        .map(|s| s.id)
}

fn build() -> Result<BTreeMap<String, Vec<Column>>, ReferenceError> {
    let mut out: BTreeMap<String, Vec<Column>> = BTreeMap::new();
    let mut add = |series: &str, system: String, source: String, fig: Figure| {
        let cols = out.entry(series.to_string()).or_default();
        match cols
            .iter_mut()
            .find(|c| c.system == system && c.source == source)
        {
            Some(c) => c.figures.push(fig),
            None => cols.push(Column {
                system,
                source,
                figures: vec![fig],
            }),
        }
    };
    for r in bbn_rows()? {
        let Some(series) = series_printing(|p| matches!(p, Printed::Bbn(t) if t == r.test)) else {
            return Err(ReferenceError {
                file: BBN_FILE,
                line: 0,
                why: format!("test '{}' is no BBN series", r.test),
            });
        };
        let what = match r.test.as_str() {
            "port-bare" => ", t.port1 without headers or checking",
            _ => "",
        };
        add(
            series,
            format!("{}, {} system{what}", r.machine, r.system),
            format!("BBN Report 3970, Table {}", r.table),
            Figure {
                x: r.block_bytes as f64,
                label: r.process.clone(),
                y: (r.blocks * r.block_bytes) as f64 / r.real_s,
                real_s: Some(r.real_s),
                user_s: r.user_s,
                sys_s: Some(r.sys_s),
                cpu_pct: r.cpu_pct,
            },
        );
    }
    let feder = feder_rows()?;
    let table3 = series_printing(|p| p == Printed::FederTable3).ok_or_else(|| ReferenceError {
        file: FEDER_FILE,
        line: 0,
        why: "no series prints Feder's Table III".into(),
    })?;
    // Table II beside each machine: how fast it ran C code, relative to the 3B20S.
    let c_speed = |m: &str| {
        figure("feder.table2.c_speed", m)
            .map(|f| {
                format!(
                    "; relative C speed {} (Feder 1984, Table II: the 3B20S is 1)",
                    f.shown()
                )
            })
            .unwrap_or_default()
    };
    for (machine, ms) in [
        (
            "AT&T 3B20S, UNIX System V",
            feder.iter().map(|r| r.b3b20s_ms).collect::<Vec<_>>(),
        ),
        (
            "VAX-11/780, UNIX System V",
            feder.iter().map(|r| r.vax780_ms).collect(),
        ),
        (
            "PDP-11/70, UNIX System V",
            feder.iter().map(|r| r.pdp1170_ms).collect(),
        ),
    ] {
        for (i, (r, ms)) in feder.iter().zip(ms).enumerate() {
            let hardware = machine.split(',').next().unwrap_or(machine);
            add(
                table3,
                format!("{machine}, CPU time{}", c_speed(hardware)),
                "Feder 1984, Table III".into(),
                Figure {
                    x: i as f64,
                    label: Some(r.operation.clone()),
                    y: ms * 1e6,
                    real_s: None,
                    user_s: None,
                    sys_s: None,
                    cpu_pct: None,
                },
            );
        }
    }
    let f = TEXT_FILE;
    for (n, r) in rows(
        f,
        LEFFLER_TEXT,
        &["series", "x", "system", "what", "seconds"],
    )? {
        let s = num(f, n, r[4])?;
        add(
            r[0],
            format!("{} ({})", r[2], r[3]),
            "Leffler et al. 1984, §4.1.1".into(),
            Figure {
                x: num(f, n, r[1])?,
                label: None,
                y: s * 1e9,
                real_s: None,
                user_s: None,
                sys_s: Some(s),
                cpu_pct: None,
            },
        );
    }
    Ok(out)
}

/// The published columns of a suite series (by id), in the order of their files; empty for a
/// series the papers printed nothing more for.
pub fn for_series(id: &str) -> Result<&'static [Column], ReferenceError> {
    static ALL: OnceLock<Result<BTreeMap<String, Vec<Column>>, ReferenceError>> = OnceLock::new();
    match ALL.get_or_init(build) {
        Ok(m) => Ok(m.get(id).map(Vec::as_slice).unwrap_or(&[])),
        Err(e) => Err(e.clone()),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_bbn_report_is_credited_to_its_author_as_printed() {
        // The report's title page: "Morris Kranc" (#45).
        let header: Vec<&str> = super::BBN
            .lines()
            .take_while(|l| l.starts_with('#'))
            .collect();
        let report = header.iter().find(|l| l.starts_with("# Report:")).unwrap();
        assert!(report.starts_with("# Report: Morris Kranc,"), "{report}");
    }

    use super::*;

    fn bbn(table: u32, system: &str, test: &str, block: u64) -> Vec<BbnRow> {
        bbn_rows()
            .unwrap()
            .into_iter()
            .filter(|r| {
                r.table == table && r.system == system && r.test == test && r.block_bytes == block
            })
            .collect()
    }

    #[test]
    fn every_bbn_table_is_there_with_its_rows() {
        let rows = bbn_rows().unwrap();
        let count = |t| rows.iter().filter(|r| r.table == t).count();
        // Tables 1-6: 12 block sizes per printed column; 7-8: 2 systems x 2 runs x 2 processes.
        let want = [
            (1, 12),
            (2, 24),
            (3, 24),
            (4, 24),
            (5, 24),
            (6, 24),
            (7, 8),
            (8, 8),
        ];
        for (t, n) in want {
            assert_eq!(count(t), n, "Table {t}");
        }
        assert_eq!(rows.len(), 148);
    }

    #[test]
    fn bbn_figures_match_the_report_as_printed() {
        // Table 1, 4096 bytes: 8:08 real, 1:34 system, 19%.
        let r = &bbn(1, "standard", "pipe", 4096)[0];
        assert_eq!((r.real_s, r.sys_s, r.cpu_pct), (488.0, 94.0, Some(19.0)));
        // Table 3, improved, 2048 bytes: 2:14 real, 1:06.6 user, 1:04.6 system, 98%.
        let r = &bbn(3, "improved", "port-check", 2048)[0];
        assert_eq!(
            (r.real_s, r.user_s, r.sys_s, r.cpu_pct),
            (134.0, Some(66.6), 64.6, Some(98.0))
        );
        // Table 5 (PDP-11/70), standard pipes at 4096: 1:58 real, 38.1 system, 32%.
        let r = &bbn(5, "standard", "pipe", 4096)[0];
        assert_eq!(r.machine, "PDP-11/70");
        assert_eq!((r.real_s, r.sys_s, r.cpu_pct), (118.0, 38.1, Some(32.0)));
        // Table 6, standard ports at 4096: 2:25, 36.5, 47.9, 13%.
        let r = &bbn(6, "standard", "port-check", 4096)[0];
        assert_eq!(
            (r.real_s, r.user_s, r.sys_s, r.cpu_pct),
            (145.0, Some(36.5), 47.9, Some(13.0))
        );
        // Table 7, standard: 2:05 2:07 2:15 2:24 real; Table 8: 1:36 1:47 1:52 1:53.
        let real = |t, sys| {
            bbn(t, sys, "realworld", if t == 7 { 128 } else { 4096 })
                .iter()
                .map(|r| r.real_s)
                .collect::<Vec<_>>()
        };
        assert_eq!(real(7, "standard"), [125.0, 127.0, 135.0, 144.0]);
        assert_eq!(real(7, "improved"), [100.0, 100.0, 106.0, 106.0]);
        assert_eq!(real(8, "standard"), [96.0, 107.0, 112.0, 113.0]);
        assert_eq!(real(8, "improved"), [29.0, 46.0, 37.0, 39.0]);
        let blocks: Vec<u64> = bbn(8, "standard", "realworld", 4096)
            .iter()
            .map(|r| r.blocks)
            .collect();
        assert_eq!(blocks, [100; 4]);
    }

    #[test]
    fn table_4s_pipe_column_differs_from_table_2s_at_8_bytes_only() {
        let real = |t| {
            bbn_rows()
                .unwrap()
                .into_iter()
                .filter(|r| r.table == t && r.system == "improved" && r.test == "pipe")
                .map(|r| (r.block_bytes, r.real_s))
                .collect::<Vec<_>>()
        };
        let differ: Vec<_> = real(2)
            .into_iter()
            .zip(real(4))
            .filter(|(a, b)| a != b)
            .collect();
        assert_eq!(differ, [((8, 10.0), (8, 9.0))]);
    }

    #[test]
    fn feder_table3_has_all_three_machines() {
        let rows = feder_rows().unwrap();
        let col = |f: fn(&FederRow) -> f64| rows.iter().map(f).collect::<Vec<_>>();
        assert_eq!(
            col(|r| r.b3b20s_ms),
            [1.2, 1.9, 4.1, 2.2, 3.1, 16.0, 17.0, 14.0]
        );
        assert_eq!(
            col(|r| r.pdp1170_ms),
            [3.4, 6.8, 17.1, 11.1, 4.2, 66.0, 24.0, 35.0]
        );
        assert_eq!(
            col(|r| r.vax780_gain),
            [2.5, 2.8, 2.9, 2.5, 1.0, 2.1, 1.1, 1.2]
        );
        assert_eq!(
            col(|r| r.pdp1170_gain),
            [1.0, 1.0, 1.0, 1.0, 0.9, 0.9, 1.0, 1.1]
        );
        let cols = for_series("feder.table3").unwrap();
        assert_eq!(cols.len(), 3);
        // Table II beside each machine's column.
        assert!(
            cols[0].system.contains("relative C speed 1 ("),
            "{}",
            cols[0].system
        );
        assert!(
            cols[1].system.contains("relative C speed 0.97"),
            "{}",
            cols[1].system
        );
        assert!(
            cols[2].system.contains("relative C speed 0.83"),
            "{}",
            cols[2].system
        );
        assert!(cols.iter().all(|c| c.figures.len() == 8));
        assert_eq!(cols[0].figures[5].y, 16e6);
        assert_eq!(cols[2].figures[7].label.as_deref(), Some("exec-8k-bss"));
    }

    #[test]
    fn the_single_figures_are_the_papers() {
        let all = figures().unwrap();
        assert!(all.len() >= 70, "{}", all.len());
        let v = |k: &str, sys: &str| figure(k, sys).unwrap_or_else(|| panic!("{k} {sys}")).value;
        // Table 8.
        assert_eq!(v("table8.pfst.randpage", "4.2BSD"), 789.0);
        assert_eq!(v("table8.pfst.randpage-v", "4.2BSD"), 786.0);
        assert_eq!(v("table8.pfst.gausspage.inf", "4.1BSD"), 848.0);
        assert_eq!(v("table8.faults.randpage-v", "4.2BSD"), 9852.0);
        // §3.2.1: the environment, and its cost per byte from Table 3 as the text prints it.
        assert_eq!(v("env.bytes", "4.1BSD and 4.2BSD"), 1065.0);
        assert_eq!(
            (v("env.cost", "4.1BSD"), v("env.cost", "4.2BSD")),
            (93.0, 121.0)
        );
        // Tables 4, 9, 10: self + child = total.
        for sys in ["4.2BSD", "with the per-process cache", "with both caches"] {
            let t = v("namei.total_ms", sys);
            assert!(
                (v("namei.self_ms", sys) + v("namei.child_ms", sys) - t).abs() < 1e-9,
                "{sys}"
            );
            let p = v("namei.total_pct", sys);
            assert!(
                (v("namei.self_pct", sys) + v("namei.child_pct", sys) - p).abs() < 0.051,
                "{sys}"
            );
        }
        assert_eq!(v("namei.total_pct", "with both caches"), 12.8);
        assert_eq!(figure("namei.share", "4.3BSD").unwrap().shown(), "<10");
        assert_eq!(v("bufcache.hit_rate", "4.2BSD"), 85.0);
        assert_eq!(
            figure("bufcache.readahead_used", "4.2BSD").unwrap().shown(),
            ">90"
        );
        assert_eq!(v("feder.table2.c_speed", "VAX-11/750"), 0.61);
        assert_eq!(v("feder.table4.change_pct", "PDP-11/70"), -3.0);
        assert_eq!(v("feder.cs_per_s", "System V"), 40.0);
        // Ranges as printed.
        assert_eq!(
            figure("vmstat.tps_per_arm", "4.2BSD").unwrap().shown(),
            "25-35"
        );
        assert_eq!(
            figure("namei.hit_rate", "name cache").unwrap().shown(),
            "70-80"
        );
        assert_eq!(
            figure("system.share", "in the past").unwrap().high,
            Some(70.0)
        );
        // Every figure carries its source and the paper's words.
        for f in all {
            assert!(
                f.source.contains("1984") || f.source.contains("1985"),
                "{f:?}"
            );
            assert!(f.words.len() > 3, "{f:?}");
        }
        assert_eq!(
            beside("system.share"),
            "4.1BSD 45, 4.2BSD 57, with the per-process cache ~55, with both caches ~49, in the past 65-70, System V ~50 % of CPU time (Leffler et al. 1984, §3.2; Leffler et al. 1984, §4.1.1; Feder 1984, §VII)"
        );
        assert_eq!(beside("no.such"), "");
    }

    #[test]
    fn ls_l_before_and_after_the_cache() {
        let cols = for_series("scaling.ls-l").unwrap();
        let secs: Vec<f64> = cols.iter().map(|c| c.figures[0].sys_s.unwrap()).collect();
        // Before either cache, with the per-process cache, with both (§4.1.1).
        assert_eq!(secs, [22.3, 3.3, 3.7]);
        assert!(
            cols[0].system.starts_with("4.2BSD, before either cache"),
            "{}",
            cols[0].system
        );
        assert!(
            cols[2].system.contains("system-wide name cache"),
            "{}",
            cols[2].system
        );
        assert!(cols.iter().all(|c| c.source.contains("§4.1.1")));
    }

    #[test]
    fn series_columns_carry_throughput_and_their_source() {
        let cols = for_series("bbn.pipe-1000").unwrap();
        // Tables 1, 2 (standard, improved), 4 (pipe), 5 (standard, improved).
        assert_eq!(cols.len(), 6, "{cols:#?}");
        let t5 = cols
            .iter()
            .find(|c| c.source.ends_with("Table 5") && c.system.contains("improved"))
            .unwrap();
        assert_eq!(t5.system, "PDP-11/70, improved system");
        let f = t5.figures.iter().find(|f| f.x == 4096.0).unwrap();
        assert_eq!(f.y, 4096.0 * 1000.0 / 36.0);
        assert_eq!(f.cpu_pct, Some(96.0));
        let rw = for_series("bbn.realworld").unwrap();
        assert_eq!(rw.len(), 4);
        assert!(for_series("bbn.port").unwrap().is_empty());
        assert!(for_series("no.such").unwrap().is_empty());
    }

    #[test]
    fn every_series_that_names_printed_figures_has_them() {
        let printing: Vec<_> = crate::suite::suites()
            .into_iter()
            .flat_map(|s| (s.series)())
            .filter(|s| s.printed.is_some())
            .collect();
        assert_eq!(printing.len(), 5, "{printing:?}");
        for s in printing {
            assert!(!for_series(s.id).unwrap().is_empty(), "{}", s.id);
        }
    }
}
