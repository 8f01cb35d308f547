//! Figures the papers compute from several results, each with the formula that produced it:
//! context-switch overhead (csw - 2 x signocsw, Appendix A), exec overhead (execs - forks at
//! the same sbrk size), the cost of a byte of environment (the 1K env pairs, Table 3) and the
//! system time per fault (system time / all faults; the vm suite's page-fault service time,
//! Table 8's, counts major faults only).
//!
//! Pure functions of the results; a figure whose inputs are missing is simply not derived.

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

/// What a difference `a - k * b` can be given the two intervals: the widest combination of
/// their ends. A figure whose interval includes zero is within noise, and says so, because a
/// difference of two medians can be negative by chance (an environment "costing" less than
/// none) and a reader must not take it for a finding.
fn difference_note(results: &[BenchResult], a: &str, b: &str, k: f64, scale: f64) -> String {
    match (us_ci(results, a), us_ci(results, b)) {
        (Some((alo, ahi)), Some((blo, bhi))) => {
            let (lo, hi) = ((alo - k * bhi) * scale, (ahi - k * blo) * scale);
            let verdict = if lo <= 0.0 && hi >= 0.0 {
                "includes 0: within noise"
            } else {
                "excludes 0"
            };
            format!("; from the intervals: {lo:.3} to {hi:.3} ({verdict})")
        }
        _ => String::new(),
    }
}

/// Every derived figure computable from `results`.
pub fn compute(results: &[BenchResult]) -> Vec<Derived> {
    let mut out = Vec::new();

    if let (Some(csw), Some(sig)) = (us(results, "csw"), us(results, "signocsw")) {
        let per_round_trip = csw - 2.0 * sig;
        out.push(Derived {
            name: "context switch".into(),
            value: per_round_trip / 2.0,
            unit: "us/switch".into(),
            formula: format!(
                "(csw - 2 x signocsw) / 2 = ({csw:.3} - 2 x {sig:.3}) / 2 us; a csw round trip is two signals and two switches{}",
                difference_note(results, "csw", "signocsw", 2.0, 0.5)
            ),
        });
    }

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

    let extra_bytes =
        (crate::bench::exec::env_bytes(true) - crate::bench::exec::env_bytes(false)) as f64;
    for base in ["execs0null", "execs1knull"] {
        let big = format!("{base}-1kenv");
        if let (Some(b), Some(k)) = (us(results, base), us(results, &big)) {
            out.push(Derived {
                name: format!("environment cost ({base})"),
                value: (k - b) * 1000.0 / extra_bytes,
                unit: "ns/byte".into(),
                formula: format!(
                    "({big} - {base}) / {extra_bytes:.0} bytes = ({k:.2} - {b:.2}) us / {extra_bytes:.0}{}",
                    difference_note(results, &big, base, 1.0, 1000.0 / extra_bytes)
                ),
            });
        }
    }

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
                out.push(Derived {
                    name: format!("system time per fault ({id})"),
                    value: sys_ns / faults / 1000.0,
                    unit: "us/fault".into(),
                    formula: format!(
                        "system time / (minor + major) faults = {:.1} ns / {:.4} faults per touch (the core paging tests run without memory pressure, so most faults are minor; 'page-fault service time' is the vm suite's system time per major fault)",
                        sys_ns, faults
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
    use crate::model::Estimate;

    fn est(v: f64) -> Estimate {
        Estimate {
            median: v,
            ci_low: v,
            ci_high: v,
            ci_level: 0.95,
            min: v,
            max: v,
            mean: v,
            cv: 0.0,
            n: 5,
        }
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
                wall_ns_per_op: est(wall_ns),
                user_ns_per_op: est(0.0),
                sys_ns_per_op: est(sys_ns),
                whole: None,
                minflt_per_op: minflt,
                majflt_per_op: 0.0,
                csw_per_op: 0.0,
                nvcsw_per_op: 0.0,
                nivcsw_per_op: 0.0,
                migrations_per_op: None,
                worker_rss_bytes: 0,
                worker_maps: 0,
                counters: None,
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
            result("execs0null", 300_000.0, 0.0, 0.0),
            result("execs0null-1kenv", 301_080.0, 0.0, 0.0),
            result("randpage", 0.0, 500.0, 0.25),
        ]);
        let get = |n: &str| d.iter().find(|d| d.name == n).unwrap().value;
        assert!((get("exec overhead (execs0null)") - 200.0).abs() < 1e-9);
        assert!((get("environment cost (execs0null)") - 1.0).abs() < 1e-9);
        assert!((get("system time per fault (randpage)") - 2.0).abs() < 1e-9);
    }

    #[test]
    fn differences_within_noise_say_so() {
        let with_ci = |id: &str, wall_ns: f64, half_ns: f64| {
            let mut r = result(id, wall_ns, 0.0, 0.0);
            if let Some(s) = &mut r.summary {
                s.wall_ns_per_op.ci_low = wall_ns - half_ns;
                s.wall_ns_per_op.ci_high = wall_ns + half_ns;
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
