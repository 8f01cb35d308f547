//! The JSON formats as documented against what the serialisers write (tests only).
//!
//! docs/json-format.md and docs/export-format.md describe each JSON object in a section whose
//! heading names its path in backticks (`results[]`, `results[].trials[]`, `estimate`; "Top
//! level" is the document itself) and whose table, headed `| field |`, lists its keys in the
//! first column. A document is split by its `#` headings, one per format. The tests serialise a
//! rich run (results with every kind of trial, counters, summaries, series, findings, warnings,
//! notes, derived figures, profiles, variance), walk its keys recursively, and require the two
//! to agree both ways: a key written but not documented fails, and so does a documented key
//! that is never written.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

type Keys = BTreeMap<String, BTreeSet<String>>;

/// Objects whose keys are data (names -> values), not fields.
const MAPS: &[&str] = &[
    "fingerprint.vulnerabilities",
    "fingerprint.sysctls",
    "results[].trials[].counters.interrupts_by_source",
    "profiles[].stacks",
    "observations[].observation.stacks",
    "observations[].observation.subsystems",
    "observations[].observation.syscalls",
    // A stored trace's report is `sysperf trace --json`'s document, described as a whole.
    "observations[].observation.report",
];

/// Objects keyed by data (run ids) whose values are objects or arrays the docs describe.
const KEYED: &[&str] = &["profiles"];

/// Paths where the same kind of object appears, written as the one name the docs use.
fn canonical(path: &str) -> String {
    let path = path.replace("series[].points[].result", "results[]");
    for (suffix, name) in [
        (".wall_ns_per_op", "estimate"),
        (".user_ns_per_op", "estimate"),
        (".sys_ns_per_op", "estimate"),
        (".usage", "usage"),
        (".children", "usage"),
        (".worker_total", "usage"),
        (".callers[]", "arc"),
        (".callees[]", "arc"),
        ("observations[].observation.fingerprint", "fingerprint"),
    ] {
        if path.ends_with(suffix) {
            return name.into();
        }
    }
    if path.ends_with("series[].points[].y") {
        return "estimate".into();
    }
    path
}

/// Every object's keys in a JSON value, by canonical path.
pub(crate) fn written(v: &Value) -> Keys {
    fn walk(v: &Value, path: &str, out: &mut Keys) {
        match v {
            Value::Object(m) => {
                if MAPS.iter().any(|m| path.ends_with(m)) {
                    return;
                }
                // Keyed by data whose values are documented objects (the export's `profiles`:
                // run id -> profiles): the values are described as if the key were not there.
                if KEYED.contains(&path) {
                    for child in m.values() {
                        walk(child, path, out);
                    }
                    return;
                }
                let here = canonical(path);
                let keys = out.entry(here.clone()).or_default();
                keys.extend(m.keys().cloned());
                for (k, child) in m {
                    let p = if here.is_empty() {
                        k.clone()
                    } else {
                        format!("{here}.{k}")
                    };
                    walk(child, &p, out);
                }
            }
            Value::Array(a) => {
                for child in a {
                    walk(child, &format!("{path}[]"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Keys::new();
    walk(v, "", &mut out);
    out
}

/// Backticked words of a Markdown line.
fn backticked(s: &str) -> Vec<&str> {
    s.split('`').skip(1).step_by(2).collect()
}

fn is_path(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').all(|part| {
            let name = part.strip_suffix("[]").unwrap_or(part);
            name.is_empty() && part == "[]"
                || !name.is_empty()
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        })
}

/// The documented keys of the format whose `#` heading contains `title`, by path.
pub(crate) fn documented(md: &str, title: &str) -> Keys {
    let mut out = Keys::new();
    let mut in_format = false;
    let mut paths: Vec<String> = Vec::new();
    let mut in_table = false;
    let mut in_code = false;
    for line in md.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        if let Some(h) = line.strip_prefix('#') {
            if !h.starts_with('#') {
                in_format = h.contains(title);
            }
            let h = h.trim_start_matches('#');
            paths = if h.trim() == "Top level" {
                vec![String::new()]
            } else {
                backticked(h)
                    .into_iter()
                    .filter(|p| is_path(p))
                    .map(String::from)
                    .collect()
            };
            in_table = false;
            continue;
        }
        if !in_format || paths.is_empty() {
            continue;
        }
        let Some(row) = line.trim().strip_prefix('|') else {
            in_table = false;
            continue;
        };
        let first = row.split('|').next().unwrap_or("").trim();
        if first == "field" {
            in_table = true;
            continue;
        }
        if !in_table || first.starts_with("---") {
            continue;
        }
        for p in &paths {
            out.entry(p.clone())
                .or_default()
                .extend(backticked(first).into_iter().map(String::from));
        }
    }
    out
}

/// The keys in the first column of the first `| field |` table after the heading `heading`
/// (plain names only: `rows[].cells` describes a nested object, not a key).
pub(crate) fn table_keys(md: &str, heading: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut lines = md.lines().skip_while(|l| l.trim() != heading);
    let mut in_table = false;
    for line in lines.by_ref().skip(1) {
        if line.starts_with('#') {
            break;
        }
        let Some(row) = line.trim().strip_prefix('|') else {
            if in_table {
                break;
            }
            continue;
        };
        let first = row.split('|').next().unwrap_or("").trim();
        if first == "field" {
            in_table = true;
        } else if in_table && !first.starts_with("---") {
            out.extend(
                backticked(first)
                    .into_iter()
                    .filter(|k| is_path(k) && !k.contains('.'))
                    .map(String::from),
            );
        }
    }
    out
}

/// Both ways: every written key documented at its path, every documented key written.
pub(crate) fn disagreements(written: &Keys, documented: &Keys) -> Vec<String> {
    let mut out = Vec::new();
    for (path, keys) in written {
        let shown = if path.is_empty() { "top level" } else { path };
        let Some(doc) = documented.get(path) else {
            out.push(format!(
                "`{shown}` (keys {keys:?}) has no section with a `| field |` table"
            ));
            continue;
        };
        for k in keys.difference(doc) {
            out.push(format!("`{shown}`: `{k}` is written but not documented"));
        }
        for k in doc.difference(keys) {
            out.push(format!("`{shown}`: `{k}` is documented but never written"));
        }
    }
    for path in documented.keys().filter(|p| !written.contains_key(*p)) {
        out.push(format!("`{path}` is documented but never written"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::*;

    fn doc(name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
        std::fs::read_to_string(path).expect("doc readable")
    }

    fn check(written: &Keys, md: &str, title: &str) {
        let documented = documented(md, title);
        let bad = disagreements(written, &documented);
        assert!(
            bad.is_empty(),
            "the {title} format and its documentation disagree:\n{}",
            bad.join("\n")
        );
    }

    /// A run with every optional part present: what the serialiser can write, all of it.
    fn rich_run() -> Run {
        let mut run = crate::report::fixture_suites_run();
        let base = crate::report::fixture_run();
        run.results = base.results.clone();
        run.findings = base.findings.clone();
        run.derived = base.derived.clone();
        // A figure its inputs cannot support carries why (#33).
        run.derived[0].na = Some("one trial (--quick)".into());
        run.warnings = base.warnings.clone();
        assert!(!run.series.is_empty() && !run.notes.is_empty() && !run.findings.is_empty());
        run.params.order = Some("interleaved".into());
        run.params.seed = Some(7);
        run.params.group = Some("0123456789ab".into());
        run.params.replicate = Some(0);
        run.params.precision_pct = Some(1.0);
        run.params.settle_s = Some(60.0);
        run.params.cpus = Some(vec![1]);
        run.params.ab = Some(crate::model::AbSide {
            side: "a".into(),
            partner: "0123456789ab".into(),
            design: "paired".into(),
            command: Some("gzip -1 < f".into()),
        });
        // The fingerprint's facts written only when known (#19).
        run.fingerprint.hz = Some(250);
        run.fingerprint.nohz = Some("idle".into());
        run.fingerprint.kernel_config_hash = Some("0123456789abcdef".into());
        run.fingerprint.microcode = Some("0xa0011d1".into());
        run.fingerprint.cpu_split = Some("tick-sampled: (CONFIG_TICK_CPU_ACCOUNTING)".into());
        run.fingerprint.sysctls = [("vm.swappiness".to_string(), "60".to_string())].into();
        let counters = Counters {
            task_clock_ns: Some(1),
            interrupts_by_source: [("LOC".to_string(), 3)].into(),
            ..Counters::default()
        };
        let fill = |r: &mut BenchResult| {
            for t in &mut r.trials {
                t.children = Some(t.usage);
                t.counters = Some(counters.clone());
                t.round = Some(0);
                t.started_ns = Some(1);
            }
            if let Some(s) = &mut r.summary {
                s.whole = Some(WholeCpu {
                    user_ns_per_op: s.user_ns_per_op,
                    sys_ns_per_op: s.sys_ns_per_op,
                });
                s.counters = Some(CounterSummary {
                    trials: 1,
                    perf_trials: 1,
                    task_clock_ns_per_op: Some(1.0),
                    context_switches_per_op: None,
                    cpu_migrations_per_op: None,
                    page_faults_per_op: None,
                    cycles_per_op: None,
                    instructions_per_op: None,
                    interrupts_per_trial: 1.0,
                    interrupts_per_op: 1.0,
                    softirqs_per_trial: 1.0,
                    interrupts_on_trial_cpus_per_trial: None,
                    disk_ios_per_trial: 0.0,
                });
            }
        };
        run.results.iter_mut().for_each(fill);
        for s in &mut run.series {
            s.points.iter_mut().for_each(|p| fill(&mut p.result));
        }
        run
    }

    #[test]
    fn the_run_document_is_documented_field_for_field() {
        let run = rich_run();
        let variance = [VarianceEstimate {
            test: "syscall".into(),
            within_var: 1e-4,
            between_var: 1e-4,
            runs: 3,
            trials: 15,
            updated_ns: 1,
            median_sd: Some(0.01),
            median_range_ns: Some([100.0, 102.0]),
            clipped: true,
        }];
        let profiles = [crate::report::profile::tests::fixture()];
        let v = crate::report::json::show_document(&run, &profiles, Some(&variance), 5);
        check(
            &written(&v),
            &doc("docs/json-format.md"),
            "sysperf run --json",
        );
    }

    #[test]
    fn the_export_file_is_documented_field_for_field() {
        use crate::model::{FunctionCalls, Observation, ProcessRow};
        let profiles = vec![vec![crate::report::profile::tests::fixture()]];
        let mut fp = rich_run().fingerprint;
        fp.hostname = Some("tracer".into());
        let trace = crate::report::trace::tests::fixture()
            .stored("cccc00000001".into(), Some("t".into()), 1, fp)
            .expect("a stored trace");
        let mut sys = crate::profile::system::Aggregator::new(10).finish();
        sys.id = "aaaa00000001".into();
        sys.stacks.insert("a;b".into(), 2);
        sys.subsystems.insert("fs".into(), 2);
        sys.syscalls.insert("read".into(), 2);
        sys.processes.push(ProcessRow {
            comm: "sh".into(),
            pid: 7,
            kernel_samples: 2,
            user_samples: 0,
        });
        sys.functions.push(FunctionCalls {
            name: "b".into(),
            calls: Some(10),
            calls_per_s: Some(10.0),
            self_samples: 2,
            child_samples: 0,
            self_us_per_call: Some(1.0),
            child_us_per_call: Some(0.0),
            self_pct_kernel: 100.0,
            total_pct_kernel: 100.0,
            note: String::new(),
        });
        let observations = [
            Observation::Trace(Box::new(trace)),
            Observation::SystemProfile(Box::new(sys)),
        ];
        let bytes =
            crate::exchange::export_all(&[rich_run()], &profiles, &observations).expect("exports");
        let v: Value = serde_json::from_slice(&bytes).expect("JSON");
        // The docs describe a run's objects from the run (`params`, not `runs[].params`).
        let keys: Keys = written(&v)
            .into_iter()
            .map(|(p, k)| match p.strip_prefix("runs[].") {
                Some(rest) => (rest.to_string(), k),
                None => (p, k),
            })
            .collect();
        check(&keys, &doc("docs/export-format.md"), "export file");
    }

    #[test]
    fn list_and_runs_documents_are_documented_field_for_field() {
        let list: Value =
            serde_json::from_str(&crate::report::list::benchmarks(true)).expect("list JSON");
        check(
            &written(&list),
            &doc("docs/json-format.md"),
            "sysperf list --json",
        );
        let runs = serde_json::to_value([crate::store::RunInfo {
            id: "0123456789ab".into(),
            label: Some("before".into()),
            started_ns: 1,
            ended_ns: Some(2),
            complete: true,
            hostname: Some("vm".into()),
            kernel_release: Some("6.1".into()),
            cpu_model: Some("AMD EPYC 7B13".into()),
            benchmarks: 49,
            series: 0,
            warnings: 0,
            quick: true,
            stopped: Some(crate::model::Stopped {
                last_heard_ns: 2,
                at: Some("ctx after 3 counted trials".into()),
                writer_alive: Some(false),
                abandoned: true,
            }),
        }])
        .expect("runs JSON");
        check(
            &written(&runs),
            &doc("docs/json-format.md"),
            "sysperf runs --json",
        );
    }

    #[test]
    fn the_comparison_document_is_documented_key_for_key() {
        let base = rich_run();
        let mut other = crate::report::fixture_slower(&base);
        other.series = base.series.clone();
        let c = crate::report::fixture_compare(&[base, other], 0, 2.0);
        assert!(!c.findings.is_empty() && !c.series.is_empty());
        let v = crate::report::compare::json_value(&c);
        let written: BTreeSet<String> = v.as_object().expect("object").keys().cloned().collect();
        let documented = table_keys(&doc("docs/compare.md"), "## JSON (`--json`)");
        // `format` and `format_version` are said in the sentence above the table.
        let written: BTreeSet<String> = written
            .into_iter()
            .filter(|k| !k.starts_with("format"))
            .collect();
        assert_eq!(
            written, documented,
            "compare --json against docs/compare.md"
        );
    }

    #[test]
    fn every_warning_kind_is_documented() {
        let md = doc("docs/json-format.md");
        let row = md
            .lines()
            .find(|l| l.starts_with("| `kind` |") && l.contains("high_cv"))
            .expect("the warnings' kind row");
        let documented = backticked(row);
        for (_, name) in WarningKind::KNOWN {
            assert!(
                documented.contains(&name),
                "warning kind `{name}` is not documented"
            );
        }
    }

    #[test]
    fn a_key_missing_from_either_side_is_caught() {
        let md = "# `x --json`\n\n## Top level\n\n| field | meaning |\n| --- | --- |\n| `a`, `b` | |\n\n## `b[]`\n\n| field | meaning |\n| --- | --- |\n| `c` | |\n";
        let v: Value = serde_json::json!({"a": 1, "b": [{"c": 2}]});
        assert!(disagreements(&written(&v), &documented(md, "x --json")).is_empty());
        let added: Value = serde_json::json!({"a": 1, "b": [{"c": 2, "d": 3}]});
        let bad = disagreements(&written(&added), &documented(md, "x --json"));
        assert_eq!(bad, vec!["`b[]`: `d` is written but not documented"]);
        let dropped: Value = serde_json::json!({"b": [{"c": 2}]});
        let bad = disagreements(&written(&dropped), &documented(md, "x --json"));
        assert_eq!(
            bad,
            vec!["`top level`: `a` is documented but never written"]
        );
    }
}
