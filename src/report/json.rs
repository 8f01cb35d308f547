//! The machine-readable run (`sysperf run --json`, `sysperf show --json`), documented in
//! docs/json-format.md, and every other JSON document a command assembles rather than
//! serializes as it is: `run --repeat --json`, `runs --by --json`, `jitter --json` and
//! `doctor --json`.
//!
//! It is the stored [`Run`] as is (raw trials included) with, on every entry of `results`,
//! the figures scripts want without recomputing: `real_s`, `user_s`, `sys_s` (seconds for the
//! paper's count), `us_per_op` (the median) and `us_per_op_ci` ([low, high]); the same on
//! the result of every point of a suite's series.

use super::scaled_s;
use crate::model::{BenchResult, Finding, Fingerprint, Profile, Run, VarianceEstimate};
use crate::observe::{doctor, jitter};
use serde_json::{json, Value};

/// Version of the document shape; bumped on any incompatible change.
pub const FORMAT_VERSION: u32 = 1;

pub fn run_document(run: &Run) -> Value {
    let mut v = serde_json::to_value(run).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut v {
        map.insert("format".into(), json!("sysperf-run"));
        map.insert("format_version".into(), json!(FORMAT_VERSION));
        if let Some(Value::Array(results)) = map.get_mut("results") {
            for (entry, r) in results.iter_mut().zip(&run.results) {
                add_script_figures(entry, r);
            }
        }
        // A figure its inputs cannot support says why, in stored runs too (#33).
        if let Some(Value::Array(derived)) = map.get_mut("derived") {
            for (entry, d) in derived.iter_mut().zip(&run.derived) {
                if let (Value::Object(e), Some(why)) = (entry, crate::suite::na_of(d, run)) {
                    e.insert("na".into(), json!(why));
                }
            }
        }
        // A suite's point is a benchmark result like any other: the same figures.
        if let Some(Value::Array(series)) = map.get_mut("series") {
            for (sv, s) in series.iter_mut().zip(&run.series) {
                let Some(Value::Array(points)) = sv.get_mut("points") else {
                    continue;
                };
                for (pv, p) in points.iter_mut().zip(&s.points) {
                    if let Some(entry) = pv.get_mut("result") {
                        add_script_figures(entry, &p.result);
                    }
                }
            }
        }
    }
    v
}

/// What `show --json` prints: the run document, with this machine's variance per test (when
/// known) and the kernel profiles stored with the run (their `top` busiest functions).
pub fn show_document(
    run: &Run,
    profiles: &[Profile],
    variance: Option<&[VarianceEstimate]>,
    top: usize,
) -> Value {
    let mut doc = run_document(run);
    if let Some(v) = variance {
        doc["variance"] = json!(v);
    }
    if !profiles.is_empty() {
        doc["profiles"] = super::profile::json_document(profiles, top)["profiles"].take();
    }
    doc
}

/// What `run --repeat N --json` prints: the runs' documents as one array, each with the
/// machine's variance per test once it was stored.
pub fn repeated_runs_document<'a>(
    runs: impl IntoIterator<Item = (&'a Run, &'a [VarianceEstimate])>,
) -> Value {
    Value::Array(
        runs.into_iter()
            .map(|(run, variance)| {
                let mut doc = run_document(run);
                doc["variance"] = json!(variance);
                doc
            })
            .collect(),
    )
}

/// What `changes --json` prints: the method, what each ratio's interval covers, and the
/// changes found, each with the nearest fingerprint difference.
pub fn changes_document(c: &crate::changes::Changes, method: &str) -> Value {
    json!({
        "format": "sysperf-changes",
        "format_version": 1,
        "method": method,
        "ratio_ci_covers": crate::changepoint::RATIO_CI_COVERS,
        "histories": c.histories,
        "searched": c.searched,
        "too_short": c.too_short,
        "min_runs": c.min_runs,
        "newest": c.newest,
        "disturbed_left_out": c.disturbed,
        "ab_sides_left_out": c.ab_sides,
        "quick_left_out": c.quick,
        "fdr": c.fdr,
        "fdr_method": "Benjamini-Hochberg over the histories searched, each history's first-split permutation p-value",
        "permutations": c.permutations,
        "level": c.level,
        "found": c.found,
        "expected_false_alarms_at_most": c.expected_false_alarms,
        "changes": c.changes,
    })
}

/// What `runs --by KEY --json` prints: one entry per group of stored runs.
pub fn run_groups_document(key: &str, groups: &[(String, crate::store::GroupCount)]) -> Value {
    Value::Array(
        groups
            .iter()
            .map(|(value, g)| {
                json!({
                    "key": key,
                    "value": value,
                    "runs": g.runs,
                    "complete": g.complete,
                    "newest_ns": g.newest_ns,
                })
            })
            .collect(),
    )
}

/// What `jitter --json` prints: the noise per CPU, with the clock settings it depends on.
pub fn jitter_document(fp: &Fingerprint, report: &jitter::NoiseReport) -> Value {
    json!({
        "format": "sysperf-jitter",
        "format_version": 1,
        "hz": fp.hz,
        "nohz": fp.nohz,
        "clocksource": fp.clocksource,
        "report": report,
    })
}

/// What `doctor --json` prints: the findings and the facts behind them.
pub fn doctor_document(facts: &doctor::Facts, findings: &[Finding]) -> Value {
    json!({
        "format": "sysperf-doctor",
        "format_version": 1,
        "findings": findings,
        "facts": facts,
    })
}

/// The figures scripts want on one result's entry, computed from its summary: seconds for
/// the paper's count, microseconds per operation with its interval, faults and switches.
fn add_script_figures(entry: &mut Value, r: &BenchResult) {
    let Value::Object(e) = entry else { return };
    let Some(s) = &r.summary else {
        for k in [
            "real_s",
            "user_s",
            "sys_s",
            "parent_user_s",
            "parent_sys_s",
            "whole_user_s",
            "whole_sys_s",
            "us_per_op",
            "us_per_op_ci",
        ] {
            e.insert(k.into(), Value::Null);
        }
        return;
    };
    let w = &s.wall_ns_per_op;
    e.insert("real_s".into(), json!(scaled_s(w.median, r.paper_count)));
    // The paper's columns: what time charged its program (the children it waited for
    // included, see bench::Charge).
    let (user, sys) = crate::bench::charged(r).unwrap_or((s.user_ns_per_op, s.sys_ns_per_op));
    e.insert("user_s".into(), json!(scaled_s(user.median, r.paper_count)));
    e.insert("sys_s".into(), json!(scaled_s(sys.median, r.paper_count)));
    // Named for what they cover: the parent's own time and the whole tree; runs made
    // before sysperf kept the children apart know only the whole.
    let sec = |ns: f64| json!(scaled_s(ns, r.paper_count));
    let (parent, whole) = match (&s.whole, w.n) {
        (Some(x), _) => (
            (sec(s.user_ns_per_op.median), sec(s.sys_ns_per_op.median)),
            (sec(x.user_ns_per_op.median), sec(x.sys_ns_per_op.median)),
        ),
        // A published run: time charged the parent alone, with the children it waited for
        // for the fork and exec tests (bench::Charge), which are then the whole tree.
        (None, 0) => {
            let paper = (sec(s.user_ns_per_op.median), sec(s.sys_ns_per_op.median));
            let nothing = (Value::Null, Value::Null);
            if crate::bench::find(&r.id).is_some_and(|b| b.charge == crate::bench::Charge::Waited) {
                (nothing, paper)
            } else {
                (paper, nothing)
            }
        }
        (None, _) => (
            (Value::Null, Value::Null),
            (sec(s.user_ns_per_op.median), sec(s.sys_ns_per_op.median)),
        ),
    };
    e.insert("parent_user_s".into(), parent.0);
    e.insert("parent_sys_s".into(), parent.1);
    e.insert("whole_user_s".into(), whole.0);
    e.insert("whole_sys_s".into(), whole.1);
    e.insert("us_per_op".into(), json!(w.median / 1000.0));
    e.insert(
        "us_per_op_ci".into(),
        json!([w.ci_low / 1000.0, w.ci_high / 1000.0]),
    );
    e.insert("ci_level".into(), json!(w.ci_level));
    e.insert(
        "faults_per_op".into(),
        json!(s.minflt_per_op + s.majflt_per_op),
    );
    e.insert("csw_per_op".into(), json!(s.csw_per_op));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_snapshot() {
        let doc = run_document(&crate::report::fixture_run());
        insta::assert_json_snapshot!(doc);
    }

    #[test]
    fn scripts_fields_are_present_and_consistent() {
        let run = crate::report::fixture_run();
        let doc = run_document(&run);
        let r = &doc["results"][0];
        assert_eq!(r["id"], "syscall");
        // 107 ns per call for the paper's 100,000 calls is 0.0107 s.
        assert!((r["real_s"].as_f64().unwrap() - 0.0107).abs() < 1e-12);
        assert!((r["us_per_op"].as_f64().unwrap() - 0.107).abs() < 1e-12);
        let ci = r["us_per_op_ci"].as_array().unwrap();
        assert!(ci[0].as_f64().unwrap() < 0.107 && ci[1].as_f64().unwrap() > 0.107);
        // A failed benchmark keeps its entry with null figures and its error.
        let failed = doc["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == "execs0null")
            .unwrap();
        assert!(
            failed["real_s"].is_null() && failed["error"].as_str().unwrap().contains("timed out")
        );
        // The document is the run, losslessly: it deserializes back.
        let back: Run = serde_json::from_value(doc).unwrap();
        assert_eq!(back, run);
    }

    #[test]
    fn a_suite_point_has_the_figures_a_result_has() {
        let run = crate::report::fixture_suites_run();
        let doc = run_document(&run);
        let point = &doc["series"][0]["points"][0]["result"];
        for k in [
            "real_s",
            "user_s",
            "sys_s",
            "us_per_op",
            "us_per_op_ci",
            "ci_level",
            "faults_per_op",
            "csw_per_op",
        ] {
            assert!(point.get(k).is_some(), "points[].result lacks {k}: {point}");
        }
        let p = &run.series[0].points[0].result;
        let us = p.summary.as_ref().unwrap().wall_ns_per_op.median / 1000.0;
        assert!((point["us_per_op"].as_f64().unwrap() - us).abs() < 1e-9);
        // Still the run, losslessly.
        let back: Run = serde_json::from_value(doc).unwrap();
        assert_eq!(back, run);
    }
}
