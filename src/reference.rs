//! The papers' published figures as read-only reference runs: Table 2 of the 4.2BSD paper
//! (a VAX-11/750 under 4.1BSD, 4.2BSD and 4.3BSD) and its Table 7 (the paging tests under 4.1BSD
//! and 4.2BSD), so that `sysperf compare vax750-4.3bsd latest` shows how many times faster
//! today's machine does each operation.
//!
//! The tables ship as tab-separated files under `data/reference/`, transcribed exactly from the
//! papers with a header naming paper, table and page; they are embedded in the binary and parsed
//! into [`Run`]s once, on first use. A reference run is marked `source: "published"`, names its
//! paper and table in `citation`, and carries no trials and no confidence intervals: each figure
//! enters as a single published value (seconds for the paper's count, turned into nanoseconds
//! per operation so it compares like a measured run).
//!
//! This is not the store: reference runs are never written to it (which is what keeps them
//! read-only), and the CLI resolves their names before it consults the store.

use crate::model::{BenchResult, Estimate, Fingerprint, Run, RunParams, Summary};
use std::sync::OnceLock;

const TABLE2: &str = include_str!("../data/reference/table2.tsv");
const TABLE7: &str = include_str!("../data/reference/table7.tsv");

/// The names `compare`, `show` and friends accept, in the papers' order.
pub const NAMES: [&str; 3] = ["vax750-4.1bsd", "vax750-4.2bsd", "vax750-4.3bsd"];

/// Memory of the test machine as the 4.2BSD paper gives it (section 3.2.1): "4.5 megabytes of
/// physical memory", megabytes of 2^20 bytes. The 4.3BSD paper calls its machine "a 2 megabyte
/// VAX 11/750"; the citation of vax750-4.3bsd says so.
pub const VAX750_MEMORY_BYTES: u64 = 4_718_592;

const PAPER: &str = "McKusick, Leffler, Karels, \"Measuring and Improving the Performance of \
Berkeley UNIX\" (the 4.2BSD paper; revised April 17, 1991)";

/// One reference run: which column of each table it takes.
struct Def {
    name: &'static str,
    /// Fixed, documented ids: `0000004b5d` ("4 BSD", read generously) then the release, 41, 42
    /// or 43. They are valid run ids (12 hex digits), so every tool that takes an id takes
    /// them, and a random id colliding with one is a 1 in 2^48 chance per run.
    id: &'static str,
    system: &'static str,
    /// Column of Table 2 (0 = 4.1BSD, 1 = 4.2BSD, 2 = 4.3BSD).
    table2: usize,
    /// Column of Table 7 (0 = 4.1BSD, 1 = 4.2BSD); None: the paper has no paging figures.
    table7: Option<usize>,
    citation: &'static str,
    /// What the paper says about the system measured, kept in the fingerprint.
    note: &'static str,
}

const DEFS: [Def; 3] = [
    Def {
        name: NAMES[0],
        id: "0000004b5d41",
        system: "4.1BSD",
        table2: 0,
        table7: Some(0),
        citation: "Table 2 (page 9) and Table 7 (page 16), 4.1BSD columns; a VAX-11/750 with 4.5 \
                   megabytes, single user mode; the 4.1BSD system was really 4.1a configured with \
                   networking and remote file access (footnote 13)",
        note: "4.1a configured with networking and remote file access (the paper's footnote 13)",
    },
    Def {
        name: NAMES[1],
        id: "0000004b5d42",
        system: "4.2BSD",
        table2: 1,
        table7: Some(1),
        citation: "Table 2 (page 9) and Table 7 (page 16), 4.2BSD columns; a VAX-11/750 with 4.5 \
                   megabytes, single user mode; the system included the remote file access code \
                   (footnote 13)",
        note: "4.2BSD with the remote file access code (the paper's footnote 13)",
    },
    Def {
        name: NAMES[2],
        id: "0000004b5d43",
        system: "4.3BSD",
        table2: 2,
        table7: None,
        citation: "Table 2 (page 9), 4.3BSD column; the same figures are Table 2 of McKusick, \
                   Karels, Leffler, \"Performance Improvements and Functional Enhancements in \
                   4.3BSD\", which says they were run on a 2 megabyte VAX 11/750; Table 7 has no \
                   4.3BSD figures, so the paging tests are missing",
        note: "4.3BSD",
    },
];

/// The embedded data could not be read (defined beside the other reference data, which the
/// derived figures print, so that no module of the three loops back).
pub use crate::papers::ReferenceError;

impl crate::error::Exit for ReferenceError {
    fn exit_code(&self) -> i32 {
        crate::exit::FAILURE
    }
}

/// Every reference run, in the order of [`NAMES`]; parsed once.
pub fn all() -> Result<&'static [Run], ReferenceError> {
    static RUNS: OnceLock<Result<Vec<Run>, ReferenceError>> = OnceLock::new();
    RUNS.get_or_init(build)
        .as_ref()
        .map(Vec::as_slice)
        .map_err(Clone::clone)
}

/// The reference run named `spec` (a name of [`NAMES`], any case) or with id `spec`.
pub fn find(spec: &str) -> Result<Option<&'static Run>, ReferenceError> {
    let spec = spec.trim();
    Ok(all()?.iter().find(|r| {
        r.id.eq_ignore_ascii_case(spec)
            || r.label
                .as_deref()
                .is_some_and(|l| l.eq_ignore_ascii_case(spec))
    }))
}

/// True when `spec` names a reference run, without parsing the tables.
pub fn is_name(spec: &str) -> bool {
    let spec = spec.trim();
    DEFS.iter()
        .any(|d| d.name.eq_ignore_ascii_case(spec) || d.id.eq_ignore_ascii_case(spec))
}

/// One data row: the test as the paper prints it and its figures.
struct Line {
    number: usize,
    test: String,
    values: Vec<f64>,
}

/// Parses a reference TSV: `#` comment lines, then a column header that must read exactly
/// `header`, then one row per test with a value for every column.
fn parse(file: &'static str, text: &str, header: &[&str]) -> Result<Vec<Line>, ReferenceError> {
    let err = |line: usize, why: String| ReferenceError { file, line, why };
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| !l.starts_with('#') && !l.trim().is_empty());
    let (n, first) = lines
        .next()
        .ok_or_else(|| err(0, "no column header".into()))?;
    let found: Vec<&str> = first.split('\t').collect();
    if found != header {
        return Err(err(
            n,
            format!("column header is {found:?}, expected {header:?}"),
        ));
    }
    lines
        .map(|(n, l)| {
            let fields: Vec<&str> = l.split('\t').collect();
            if fields.len() != header.len() {
                return Err(err(
                    n,
                    format!("{} fields, expected {}", fields.len(), header.len()),
                ));
            }
            let values = fields[1..]
                .iter()
                .map(|f| match f.parse::<f64>() {
                    Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
                    _ => Err(err(n, format!("'{f}' is not a non-negative number"))),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Line {
                number: n,
                test: fields[0].to_string(),
                values,
            })
        })
        .collect()
}

/// The registry's spec for a test as the paper names it: by row label ("execs0null (1K env)"
/// is `execs0null-1kenv`), else by id.
fn spec_of(file: &'static str, line: &Line) -> Result<&'static crate::bench::Spec, ReferenceError> {
    crate::bench::all()
        .into_iter()
        .find(|s| s.label == line.test || s.id == line.test)
        .ok_or_else(|| ReferenceError {
            file,
            line: line.number,
            why: format!("'{}' is not a sysperf benchmark", line.test),
        })
}

/// A published figure as an estimate: the single value everywhere, no interval (level 0), no
/// trials (n 0).
fn single(v: f64) -> Estimate {
    Estimate::single(v, 0.0, 0)
}

/// A result from the paper's seconds for its count of operations and, for the paging tests,
/// the page faults of one run of the program.
fn result(spec: &crate::bench::Spec, real: f64, user: f64, sys: f64, faults: f64) -> BenchResult {
    let count = spec.paper_count as f64;
    let per_op = |s: f64| s * 1e9 / count;
    BenchResult {
        id: spec.id.to_string(),
        group: spec.group.as_str().to_string(),
        ops_per_iteration: spec.ops_per_iteration,
        paper_count: spec.paper_count,
        unit: spec.unit.to_string(),
        placement: "published".into(),
        cpus: Vec::new(),
        trials: Vec::new(),
        summary: Some(Summary {
            // Table 7's page faults were page-ins: its 7.3 MB array paged on a 4.5 MB VAX
            // (§3.2.8), and Table 8 serves them from disk. A major fault is that (#45).
            majflt_per_op: faults / count,
            ..Summary::of_times(
                single(per_op(real)),
                single(per_op(user)),
                single(per_op(sys)),
            )
        }),
        error: None,
    }
}

fn build() -> Result<Vec<Run>, ReferenceError> {
    const T2: &str = "data/reference/table2.tsv";
    const T7: &str = "data/reference/table7.tsv";
    let table2 = parse(
        T2,
        TABLE2,
        &[
            "test", "real_4.1", "real_4.2", "real_4.3", "user_4.1", "user_4.2", "user_4.3",
            "sys_4.1", "sys_4.2", "sys_4.3",
        ],
    )?;
    let table7 = parse(
        T7,
        TABLE7,
        &[
            "test",
            "real_4.1",
            "real_4.2",
            "user_4.1",
            "user_4.2",
            "sys_4.1",
            "sys_4.2",
            "faults_4.1",
            "faults_4.2",
        ],
    )?;
    let specs2 = table2
        .iter()
        .map(|l| spec_of(T2, l))
        .collect::<Result<Vec<_>, _>>()?;
    let specs7 = table7
        .iter()
        .map(|l| spec_of(T7, l))
        .collect::<Result<Vec<_>, _>>()?;

    Ok(DEFS
        .iter()
        .map(|d| {
            // Table 2: real, user, system for 3 systems; column c of each group of three.
            let mut results: Vec<BenchResult> = table2
                .iter()
                .zip(&specs2)
                .map(|(l, s)| {
                    let v = |group: usize| l.values[group * 3 + d.table2];
                    result(s, v(0), v(1), v(2), 0.0)
                })
                .collect();
            if let Some(c) = d.table7 {
                results.extend(table7.iter().zip(&specs7).map(|(l, s)| {
                    let v = |group: usize| l.values[group * 2 + c];
                    result(s, v(0), v(1), v(2), v(3))
                }));
            }
            // The registry's order, which is the papers' (both tables are printed in it).
            let order = |id: &str| crate::bench::all().iter().position(|s| s.id == id);
            results.sort_by_key(|r| order(&r.id));
            let derived = crate::derived::compute(&results);
            Run {
                id: d.id.to_string(),
                label: Some(d.name.to_string()),
                // The papers date neither run; 0 means unknown, and reports print the citation.
                started_ns: 0,
                ended_ns: None,
                complete: true,
                sysperf_version: env!("CARGO_PKG_VERSION").to_string(),
                source: "published".into(),
                citation: Some(format!("{PAPER}, {}", d.citation)),
                params: RunParams {
                    selection: results.iter().map(|r| r.id.clone()).collect(),
                    suites: Vec::new(),
                    trials: 0,
                    min_time_s: 0.0,
                    quick: false,
                    placement: "published".into(),
                    cpus: None,
                    timeout_s: 0.0,
                    ..RunParams::default()
                },
                fingerprint: Fingerprint {
                    hostname: Some("vax750".into()),
                    os: Some(d.system.into()),
                    kernel_release: Some(d.system.into()),
                    kernel_version: Some(d.note.into()),
                    arch: Some("vax".into()),
                    cpu_model: Some("DEC VAX-11/750".into()),
                    cores: Some(1),
                    threads: Some(1),
                    memory_bytes: Some(VAX750_MEMORY_BYTES),
                    virtualization: Some("none".into()),
                    ..Fingerprint::default()
                },
                overhead: None,
                results,
                derived,
                warnings: Vec::new(),
                // No doctor examined a 1984 VAX.
                findings: Vec::new(),
                series: Vec::new(),
                notes: Vec::new(),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(name: &str) -> &'static Run {
        find(name).unwrap().unwrap()
    }

    fn seconds(r: &Run, id: &str) -> [f64; 3] {
        let x = r.results.iter().find(|x| x.id == id).unwrap();
        let s = x.summary.as_ref().unwrap();
        let c = x.paper_count as f64;
        [
            s.wall_ns_per_op.median * c / 1e9,
            s.user_ns_per_op.median * c / 1e9,
            s.sys_ns_per_op.median * c / 1e9,
        ]
    }

    fn close(a: [f64; 3], b: [f64; 3]) -> bool {
        a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-9)
    }

    #[test]
    fn the_tables_parse_into_three_published_runs() {
        let runs = all().unwrap();
        assert_eq!(runs.len(), 3);
        for (r, name) in runs.iter().zip(NAMES) {
            assert_eq!(r.label.as_deref(), Some(name));
            assert_eq!(r.source, "published");
            assert!(r.citation.as_deref().unwrap().contains("Table 2"));
            assert_eq!(r.id.len(), 12);
            assert!(r.id.chars().all(|c| c.is_ascii_hexdigit()));
            assert!(r.complete && r.warnings.is_empty());
            assert_eq!(r.fingerprint.cpu_model.as_deref(), Some("DEC VAX-11/750"));
            assert_eq!(r.fingerprint.memory_bytes, Some(4_718_592));
            for x in &r.results {
                assert!(x.trials.is_empty() && x.error.is_none());
                let w = x.summary.as_ref().unwrap().wall_ns_per_op;
                assert_eq!((w.n, w.ci_level), (0, 0.0));
                assert_eq!((w.ci_low, w.ci_high), (w.median, w.median));
            }
        }
        // 29 kernel tests each (no udg figures in the paper); Table 7's 12 for 4.1 and 4.2.
        let counts: Vec<usize> = runs.iter().map(|r| r.results.len()).collect();
        assert_eq!(counts, [41, 41, 29]);
        assert!(runs[2].results.iter().all(|x| x.group == "kernel"));
        assert!(!runs[0].results.iter().any(|x| x.id.starts_with("udg")));
    }

    #[test]
    fn figures_are_the_papers() {
        let (a, b, c) = (
            run("vax750-4.1bsd"),
            run("vax750-4.2bsd"),
            run("vax750-4.3bsd"),
        );
        assert!(close(seconds(a, "syscall"), [28.0, 4.5, 23.9]));
        assert!(close(seconds(c, "syscall"), [23.0, 3.5, 20.4]));
        assert!(close(seconds(b, "forks100k"), [223.0, 0.6, 218.4]));
        // The (1K env) rows map to their registry ids.
        assert!(close(seconds(b, "execs0null-1kenv"), [229.0, 2.6, 212.3]));
        assert!(close(seconds(c, "vexecs100kbig"), [101.0, 1.3, 89.0]));
        // Table 7: seconds for one run of the program, faults per touch from faults per run.
        assert!(close(seconds(a, "seqpage"), [959.0, 16.7, 197.0]));
        let gauss = b.results.iter().find(|x| x.id == "gausspage.40").unwrap();
        // Its faults were page-ins (a 7.3 MB array on a 4.5 MB machine): major, none minor.
        let s = gauss.summary.as_ref().unwrap();
        let f = s.majflt_per_op * gauss.paper_count as f64;
        assert!((f - 260.0).abs() < 1e-9, "{f}");
        assert_eq!(s.minflt_per_op, 0.0);
    }

    #[test]
    fn results_follow_the_registry_order() {
        let order: Vec<&str> = crate::bench::all().iter().map(|s| s.id).collect();
        for r in all().unwrap() {
            let pos: Vec<usize> = r
                .results
                .iter()
                .map(|x| order.iter().position(|id| *id == x.id).unwrap())
                .collect();
            assert!(pos.windows(2).all(|w| w[0] < w[1]), "{}", r.id);
        }
    }

    #[test]
    fn names_and_ids_resolve_and_nothing_else_does() {
        assert_eq!(run("VAX750-4.2BSD").id, "0000004b5d42");
        assert_eq!(run("0000004b5d43").label.as_deref(), Some("vax750-4.3bsd"));
        assert!(find("latest").unwrap().is_none());
        assert!(find("vax750").unwrap().is_none());
        for n in NAMES {
            assert!(is_name(n));
        }
        assert!(!is_name("vax750-4.4bsd"));
    }

    #[test]
    fn derived_figures_use_the_stated_formulas() {
        let a = run("vax750-4.1bsd");
        let get = |n: &str| a.derived.iter().find(|d| d.name == n).unwrap().value;
        // (csw - 2 x signocsw) / 2 = (4500 - 2 x 1650) / 2 us.
        assert!((get("context switch") - 600.0).abs() < 1e-9);
        // randpage: 64.0 s system time / 8085 faults.
        let pfst = get("system time per fault (randpage)");
        assert!((pfst - 64.0e6 / 8085.0).abs() < 1e-6, "{pfst}");
        // §3.2.1's cost of a byte of environment from Table 3's system times over 1065
        // bytes: 4.1BSD (167.8 - 68.7) s / 1000 execs / 1065 = 93 us, which the paper prints
        // as 93 ms/byte of its 1,000 execs; 4.2BSD 121.
        let env = get("environment cost (execs0null)");
        assert!((env / 1000.0 - 93.05).abs() < 0.01, "{env} ns/byte");
        let b = run("vax750-4.2bsd");
        let env42 = b
            .derived
            .iter()
            .find(|d| d.name == "environment cost (execs0null)")
            .unwrap();
        assert!(
            (env42.value / 1000.0 - 121.88).abs() < 0.01,
            "{}",
            env42.value
        );
        assert!(
            env42.formula.contains("4.2BSD 121 ms/byte"),
            "{}",
            env42.formula
        );
        // Table 8's printed 789 us beside the 7.9 ms that Table 7 gives.
        let rp = b
            .derived
            .iter()
            .find(|d| d.name == "system time per fault (randpage)")
            .unwrap();
        assert!((rp.value - 77.2e6 / 9776.0).abs() < 1e-6);
        assert!(rp.formula.contains("4.2BSD 789 us"), "{}", rp.formula);
        let rv = b
            .derived
            .iter()
            .find(|d| d.name == "system time per fault (randpage-v)")
            .unwrap();
        assert!(rv.formula.contains("4.2BSD 786 us"), "{}", rv.formula);
    }

    #[test]
    fn bad_data_is_a_typed_error_not_a_panic() {
        let h = ["test", "a"];
        assert!(parse("x", "test\ta\nsyscall\t1.0\n", &h).is_ok());
        let e = parse("x", "# c\ntest\tb\n", &h).err().unwrap();
        assert_eq!(e.line, 2);
        let e = parse("x", "test\ta\nsyscall\tNaN\n", &h).err().unwrap();
        assert!(e.to_string().contains("bug in sysperf"), "{e}");
        assert!(parse("x", "test\ta\nsyscall\n", &h).is_err());
        assert!(parse("x", "", &h).is_err());
        let l = &parse("x", "test\ta\nnosuch\t1\n", &h).unwrap()[0];
        assert!(spec_of("x", l).is_err());
    }
}
