//! Figures the papers compute from several results, each with the formula that produced it:
//! context-switch overhead (csw - 2 x signocsw, Appendix A), exec overhead (execs - forks at
//! the same sbrk size), the cost of a byte of environment (the system time of the 1K env pairs
//! over the paper's 1065 bytes, Table 3 and §3.2.1, with the paper's 121 and 93 beside) and the
//! system time per fault (system time / all faults, with Table 8's printed figures beside; the
//! vm suite's page-fault service time, Table 8's, counts major faults only).
//!
//! Pure functions of the results; a figure whose inputs are missing is simply not derived, and
//! one whose inputs cannot support it (one trial, an interval that includes 0, a negative cost)
//! carries why, and prints as "n/a" (#33).

use crate::model::{BenchResult, Derived, Summary};

fn summary<'a>(results: &'a [BenchResult], id: &str) -> Option<&'a Summary> {
    results
        .iter()
        .find(|r| r.id == id)
        .and_then(|r| r.summary.as_ref())
}

/// Median wall microseconds per operation.
fn us(results: &[BenchResult], id: &str) -> Option<f64> {
    summary(results, id).map(|s| s.wall_ns_per_op.median / 1000.0)
}

/// The interval of wall microseconds per operation (its confidence interval), when the
/// result has one (published figures do not).
fn us_ci(results: &[BenchResult], id: &str) -> Option<(f64, f64)> {
    summary(results, id)
        .map(|s| &s.wall_ns_per_op)
        .filter(|w| w.n > 1)
        .map(|w| (w.ci_low / 1000.0, w.ci_high / 1000.0))
}

/// Trials behind a result's wall time (0 for a published figure).
fn trials(results: &[BenchResult], id: &str) -> usize {
    summary(results, id).map_or(0, |s| s.wall_ns_per_op.n)
}

/// Why a figure made from measured inputs cannot be reported as a number, or None when it
/// stands: an input of one trial (a `--quick` run: no interval to judge it by), a difference
/// whose interval (`lo`, `hi`, from the inputs' intervals) includes 0, or a negative value of
/// something that is a cost. Published inputs (0 trials) are the papers' figures and stand.
pub fn unsupported(n: &[usize], interval: Option<(f64, f64)>, value: f64) -> Option<String> {
    if n.contains(&1) {
        return Some("one trial (--quick): no interval to judge it by; run without --quick".into());
    }
    if value < 0.0 {
        return Some(format!(
            "negative ({value:.3}), which a cost cannot be: the difference is noise"
        ));
    }
    match interval {
        Some((lo, hi)) if lo <= 0.0 && hi >= 0.0 => Some(format!(
            "within noise: from the intervals {lo:.3} to {hi:.3}, which includes 0"
        )),
        _ => None,
    }
}

/// The interval of `a - k * b`, times `scale`, from the two results' intervals.
fn difference_interval(
    results: &[BenchResult],
    a: &str,
    b: &str,
    k: f64,
    scale: f64,
) -> Option<(f64, f64)> {
    let ((alo, ahi), (blo, bhi)) = (us_ci(results, a)?, us_ci(results, b)?);
    Some(((alo - k * bhi) * scale, (ahi - k * blo) * scale))
}

/// What a difference `a - k * b` can be given the two intervals: the widest combination of
/// their ends. A figure whose interval includes zero is within noise, and says so, because a
/// difference of two medians can be negative by chance (an environment "costing" less than
/// none) and a reader must not take it for a finding.
fn difference_note(results: &[BenchResult], a: &str, b: &str, k: f64, scale: f64) -> String {
    interval_note(difference_interval(results, a, b, k, scale))
}

/// Every derived figure computable from `results`.
pub fn compute(results: &[BenchResult]) -> Vec<Derived> {
    let mut out = Vec::new();
    out.extend(context_switch(results));
    exec_overheads(results, &mut out);
    environment_costs(results, &mut out);
    fault_costs(results, &mut out);
    out
}

/// The cost of a context switch: half of a `csw` round trip without its two signals.
fn context_switch(results: &[BenchResult]) -> Option<Derived> {
    let (csw, sig) = (us(results, "csw")?, us(results, "signocsw")?);
    let per_round_trip = csw - 2.0 * sig;
    Some(Derived {
        na: unsupported(
            &[trials(results, "csw"), trials(results, "signocsw")],
            difference_interval(results, "csw", "signocsw", 2.0, 0.5),
            per_round_trip / 2.0,
        ),
        name: "context switch".into(),
        value: per_round_trip / 2.0,
        unit: "us/switch".into(),
        formula: format!(
            "(csw - 2 x signocsw) / 2 = ({csw:.3} - 2 x {sig:.3}) / 2 us; a csw round trip is two signals and two switches{}",
            difference_note(results, "csw", "signocsw", 2.0, 0.5)
        ),
    })
}

/// The cost of an exec beyond its fork, for each pair of tests measured.
fn exec_overheads(results: &[BenchResult], out: &mut Vec<Derived>) {
    for (exec, fork) in [
        ("execs0null", "forks0"),
        ("execs1knull", "forks1k"),
        ("execs100knull", "forks100k"),
        ("execs0big", "forks0"),
        ("execs1kbig", "forks1k"),
        ("execs100kbig", "forks100k"),
        ("vexecs0null", "vforks0"),
        ("vexecs0big", "vforks0"),
    ] {
        if let (Some(e), Some(f)) = (us(results, exec), us(results, fork)) {
            out.push(Derived {
                na: unsupported(
                    &[trials(results, exec), trials(results, fork)],
                    difference_interval(results, exec, fork, 1.0, 1.0),
                    e - f,
                ),
                name: format!("exec overhead ({exec})"),
                value: e - f,
                unit: "us/exec".into(),
                formula: format!(
                    "{exec} - {fork} = {e:.2} - {f:.2} us{}",
                    difference_note(results, exec, fork, 1.0, 1.0)
                ),
            });
        }
    }
}

/// The environment's cost per byte of an exec (§3.2.1): Table 3's system seconds with and
/// without the 1K environment, over the 1065 bytes the paper counts (the 15 variables
/// without their NULs; the kernel copies 1,080), in the paper's accounting (the exec
/// happens in the waited-for child: bench::charged).
fn environment_costs(results: &[BenchResult], out: &mut Vec<Derived>) {
    let extra_bytes = crate::bench::exec::paper_env_bytes() as f64;
    let sys_of = |id: &str| {
        results
            .iter()
            .find(|r| r.id == id)
            .and_then(crate::bench::charged)
            .map(|(_, sys)| sys)
    };
    for base in ["execs0null", "execs1knull"] {
        let big = format!("{base}-1kenv");
        if let (Some(b), Some(k)) = (sys_of(base), sys_of(&big)) {
            let interval = (b.n > 1 && k.n > 1).then(|| {
                (
                    (k.ci_low - b.ci_high) / extra_bytes,
                    (k.ci_high - b.ci_low) / extra_bytes,
                )
            });
            let note = interval_note(interval);
            out.push(Derived {
                na: unsupported(&[b.n, k.n], interval, (k.median - b.median) / extra_bytes),
                name: format!("environment cost ({base})"),
                value: (k.median - b.median) / extra_bytes,
                unit: "ns/byte".into(),
                formula: format!(
                    "(system time of {big} - {base}) / {extra_bytes:.0} bytes = ({:.1} - {:.1}) ns / {extra_bytes:.0} per exec{note}; the paper (per byte of its 1,000 execs, i.e. us per byte of one): {}",
                    k.median,
                    b.median,
                    crate::papers::beside("env.cost")
                ),
            });
        }
    }
}

/// The system time per page fault of each paging test that faulted.
fn fault_costs(results: &[BenchResult], out: &mut Vec<Derived>) {
    for id in [
        "seqpage",
        "seqpage-v",
        "randpage",
        "randpage-v",
        "gausspage.inf",
    ] {
        if let Some(s) = summary(results, id) {
            let faults = s.minflt_per_op + s.majflt_per_op;
            if faults > 0.0 {
                let sys_ns = s.sys_ns_per_op.median;
                // Published figures (no trials) are the paper's runs, which paged: a 7.3 MB
                // array on a 4.5 MB machine, every fault a page-in (#45). Measured ones are
                // the core tests', which run without memory pressure.
                let pressure = if s.wall_ns_per_op.n == 0 {
                    "the paper's runs paged (a 7.3 MB array on a 4.5 MB VAX), so its faults are page-ins, read from disk"
                } else {
                    "the core paging tests run without memory pressure, so most faults are minor; 'page-fault service time' is the vm and swap suites' system time per major fault"
                };
                out.push(Derived {
                    na: unsupported(&[s.wall_ns_per_op.n], None, sys_ns / faults),
                    name: format!("system time per fault ({id})"),
                    value: sys_ns / faults / 1000.0,
                    unit: "us/fault".into(),
                    formula: format!(
                        "system time / (minor + major) faults = {:.1} ns / {:.4} faults per touch ({pressure}){}",
                        sys_ns,
                        faults,
                        table8_beside(id)
                    ),
                });
            }
        }
    }
}

/// What an interval of a difference says, as a note to its formula: a figure whose
/// interval includes zero is within noise (see [`difference_note`]); nothing without one.
fn interval_note(interval: Option<(f64, f64)>) -> String {
    match interval {
        Some((lo, hi)) => {
            let verdict = if lo <= 0.0 && hi >= 0.0 {
                "includes 0: within noise"
            } else {
                "excludes 0"
            };
            format!("; from the intervals: {lo:.3} to {hi:.3} ({verdict})")
        }
        None => String::new(),
    }
}

/// Why figure `d` of `run` cannot be supported, from the results' figures alone (the
/// figure's own reason, or for a run read back from a store, which keeps each figure's value
/// but not this, the reason computed again from the stored results). A suite's figures are
/// judged again from the stored series by [`crate::suite::na_of`], which callers use.
pub fn na_of_results(d: &Derived, run: &crate::model::Run) -> Option<String> {
    d.na.clone().or_else(|| {
        compute(&run.results)
            .into_iter()
            .find(|f| f.name == d.name)
            .and_then(|f| f.na)
    })
}

/// Table 8's printed page-fault service times for a paging test, to print beside a figure
/// computed from Table 7 (which they do not equal: randpage 4.2BSD, 77.2 s / 9776 faults is
/// 7.9 ms, printed 789 us); empty for a test Table 8 does not list.
pub fn table8_beside(id: &str) -> String {
    let printed = crate::papers::beside(&format!("table8.pfst.{id}"));
    if printed.is_empty() {
        String::new()
    } else {
        format!("; Table 8's page-fault service time: {printed}")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_papers_faults_were_page_ins_and_its_note_says_so() {
        // The published runs paged (#45): "Major" is Table 7's page faults, and the note on
        // system time per fault does not claim the paper's runs had no memory pressure.
        let run = crate::reference::find("vax750-4.2bsd").unwrap().unwrap();
        let randpage = run.results.iter().find(|r| r.id == "randpage").unwrap();
        let s = randpage.summary.as_ref().unwrap();
        assert_eq!(s.majflt_per_op * randpage.paper_count as f64, 9776.0);
        let d = compute(&run.results);
        let pf = d
            .iter()
            .find(|d| d.name == "system time per fault (randpage)")
            .unwrap();
        assert!(
            pf.formula.contains("the paper's runs paged"),
            "{}",
            pf.formula
        );
        assert!(
            !pf.formula.contains("without memory pressure"),
            "{}",
            pf.formula
        );
        let table = crate::report::table::render(run);
        let row = table.lines().find(|l| l.starts_with("randpage ")).unwrap();
        let cols: Vec<&str> = row.split('|').map(str::trim).collect();
        assert_eq!(cols[cols.len() - 2..], ["9776", "9776"], "{row}");
    }
    #[test]
    fn a_figure_its_inputs_cannot_support_says_why() {
        let one = unsupported(&[1, 5], Some((0.1, 0.2)), 0.15).unwrap();
        assert!(one.starts_with("one trial"), "{one}");
        let negative = unsupported(&[5, 5], Some((-0.2, -0.1)), -0.15).unwrap();
        assert!(negative.starts_with("negative (-0.150)"), "{negative}");
        let noise = unsupported(&[5, 5], Some((-0.1, 0.3)), 0.1).unwrap();
        assert!(noise.contains("includes 0"), "{noise}");
        assert_eq!(unsupported(&[5, 5], Some((0.1, 0.3)), 0.2), None);
        assert_eq!(
            unsupported(&[0, 0], None, 12.0),
            None,
            "the papers' figures stand"
        );
    }

    use super::*;
    use crate::model::Estimate;

    fn est(v: f64) -> Estimate {
        Estimate::single(v, 0.95, 5)
    }

    fn result(id: &str, wall_ns: f64, sys_ns: f64, minflt: f64) -> BenchResult {
        BenchResult {
            id: id.into(),
            group: "kernel".into(),
            ops_per_iteration: 1,
            paper_count: 1,
            unit: "op".into(),
            placement: "same".into(),
            cpus: vec![0],
            trials: vec![],
            summary: Some(Summary {
                minflt_per_op: minflt,
                ..Summary::of_times(est(wall_ns), est(0.0), est(sys_ns))
            }),
            error: None,
        }
    }

    #[test]
    fn context_switch_is_csw_less_two_signals_per_switch() {
        let d = compute(&[
            result("csw", 5000.0, 0.0, 0.0),
            result("signocsw", 1000.0, 0.0, 0.0),
        ]);
        let cs = d.iter().find(|d| d.name == "context switch").unwrap();
        assert!((cs.value - 1.5).abs() < 1e-12);
        assert!(cs.formula.contains("csw - 2 x signocsw"));
    }

    #[test]
    fn exec_env_and_fault_figures() {
        let d = compute(&[
            result("forks0", 100_000.0, 0.0, 0.0),
            result("execs0null", 300_000.0, 50_000.0, 0.0),
            result("execs0null-1kenv", 301_080.0, 52_130.0, 0.0),
            result("randpage", 0.0, 500.0, 0.25),
        ]);
        let get = |n: &str| d.iter().find(|d| d.name == n).unwrap();
        assert!((get("exec overhead (execs0null)").value - 200.0).abs() < 1e-9);
        // System time over the paper's 1065 bytes, with its 121 and 93 beside.
        let env = get("environment cost (execs0null)");
        assert!((env.value - 2.0).abs() < 1e-9, "{}", env.value);
        assert!(env.formula.contains("/ 1065 bytes"), "{}", env.formula);
        assert!(
            env.formula.contains("4.1BSD 93, 4.2BSD 121 ms/byte"),
            "{}",
            env.formula
        );
        let pf = get("system time per fault (randpage)");
        assert!((pf.value - 2.0).abs() < 1e-9);
        // Table 8's printed figures beside the one computed from Table 7.
        assert!(
            pf.formula
                .contains("4.1BSD 791, 4.2BSD 789 us (Leffler et al. 1984, Table 8)"),
            "{}",
            pf.formula
        );
    }

    #[test]
    fn differences_within_noise_say_so() {
        // The environment cost is of system time (the paper's), so the intervals are set on
        // both figures.
        let with_ci = |id: &str, ns: f64, half_ns: f64| {
            let mut r = result(id, ns, ns, 0.0);
            if let Some(s) = &mut r.summary {
                for e in [&mut s.wall_ns_per_op, &mut s.sys_ns_per_op] {
                    e.ci_low = ns - half_ns;
                    e.ci_high = ns + half_ns;
                }
            }
            r
        };
        // 1 us apart with +-5 us intervals: the environment "cost" could be anything near 0.
        let d = compute(&[
            with_ci("execs0null", 200_000.0, 5_000.0),
            with_ci("execs0null-1kenv", 199_000.0, 5_000.0),
        ]);
        let env = d
            .iter()
            .find(|d| d.name.starts_with("environment cost"))
            .unwrap();
        assert!(
            env.value < 0.0 && env.formula.contains("within noise"),
            "{}",
            env.formula
        );
        // 50 us apart with +-1 us intervals: a real cost.
        let d = compute(&[
            with_ci("execs0null", 200_000.0, 1_000.0),
            with_ci("execs0null-1kenv", 250_000.0, 1_000.0),
        ]);
        let env = d
            .iter()
            .find(|d| d.name.starts_with("environment cost"))
            .unwrap();
        assert!(env.formula.contains("excludes 0"), "{}", env.formula);
    }

    #[test]
    fn missing_inputs_derive_nothing() {
        assert!(compute(&[result("csw", 1.0, 0.0, 0.0)]).is_empty());
    }
}
