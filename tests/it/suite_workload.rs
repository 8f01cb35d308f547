//! `sysperf run --suite workload`: the time-sharing work-load curve is measured and stored,
//! and the processes it counts are the processes its scripts really create.
//!
//! - The quick suite stores one series (x = 1 and 2 scripts, y in processes per hour), the
//!   commands it used as run notes, and the peak as a derived figure; nothing is left in the
//!   temporary directory.
//! - strace counts the programs exec'd by a worker at 1 and 2 scripts: the shell and each
//!   command of the mix exactly once per script, so `ops_per_iteration` is the count of
//!   processes created. strace is a test-only package that .ci/run installs; on CI (CI=true)
//!   its absence fails the test instead of skipping it.
//!
//! Nothing here depends on speed.

use crate::support as common;

use common::*;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use sysperf::programs::{find, search_path};
use sysperf::suite::workload::{present, processes_per_script, SHELL, STEPS};

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn quick_suite_stores_the_throughput_curve_and_leaves_nothing() {
    let db = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let tag = unique_tag("suite-workload");
    let v = success_json(
        sysperf(&db.path().join("s.db"))
            .env("TMPDIR", tmp.path())
            .env("SYSPERF_TEST_TAG", &tag)
            .args(["run", "--suite", "workload", "--quick", "--json"]),
    );
    common::assert_nothing_left(&tag);
    assert!(
        entries(tmp.path()).is_empty(),
        "left in TMPDIR: {:?}",
        entries(tmp.path())
    );

    let series = v["series"].as_array().unwrap();
    assert_eq!(series.len(), 1, "{series:?}");
    let s = &series[0];
    assert_eq!(s["id"], "workload.throughput");
    assert_eq!(s["figure"], "workload.fig8");
    assert_eq!(s["y_kind"], "per_hour");
    assert_eq!(s["unit"], "process");
    let points = s["points"].as_array().unwrap();
    assert_eq!(xs_of(s), [1.0, 2.0]);
    for p in points {
        let x = p["x"].as_f64().unwrap() as u64;
        let ops = p["result"]["ops_per_iteration"].as_u64().unwrap();
        // The quick list is five cheap commands (those present) plus the shell.
        assert_eq!(ops % x, 0, "{p}");
        assert!((2..=6).contains(&(ops / x)), "{p}");
        assert!(p["result"]["error"].is_null(), "{p}");
        assert!(p["y"]["median"].as_f64().unwrap() > 0.0, "{p}");
    }

    let notes: Vec<&str> = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        notes.iter().any(|n| n.starts_with("workload: used: ")),
        "{notes:?}"
    );
    let derived = v["derived"].as_array().unwrap();
    let peak = derived
        .iter()
        .find(|d| {
            d["name"]
                .as_str()
                .unwrap()
                .starts_with("workload peak throughput, processes/hour, at ")
        })
        .unwrap_or_else(|| panic!("no peak in {derived:?}"));
    let best = points
        .iter()
        .map(|p| p["y"]["median"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert_eq!(peak["value"].as_f64().unwrap(), best);
}

/// Successful execve calls of a worker running `scripts` scripts once, by program path.
fn execs(scripts: u64) -> HashMap<String, u64> {
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // One output file per process (-ff), so concurrent calls are never split across lines.
    strace_worker(
        &["-f", "-ff", "-qq", "-e", "trace=execve"],
        &dir.path().join("t"),
        &point_request("workload.throughput", scripts, 1),
        &[("TMPDIR", tmp.path())],
    );
    assert!(
        entries(tmp.path()).is_empty(),
        "the worker left its directory"
    );
    let mut m = HashMap::new();
    for f in entries(dir.path()) {
        let text = std::fs::read_to_string(dir.path().join(f)).unwrap();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("execve(\"") {
                if line.ends_with("= 0") {
                    let path = rest.split('"').next().unwrap().to_string();
                    *m.entry(path).or_insert(0) += 1;
                }
            }
        }
    }
    m
}

#[test]
fn each_script_creates_its_shell_and_one_process_per_command() {
    if !strace_available() {
        return;
    }
    let steps = present(STEPS, &search_path());
    let mut ours: Vec<String> = steps.iter().map(|(_, p)| p.display().to_string()).collect();
    ours.push(find(SHELL).unwrap().display().to_string());
    for scripts in [1, 2] {
        let m = execs(scripts);
        for p in &ours {
            assert_eq!(m.get(p).copied().unwrap_or(0), scripts, "{p} in {m:?}");
        }
        let counted: u64 = ours.iter().map(|p| m[p]).sum();
        assert_eq!(counted, scripts * processes_per_script(steps.len()));
    }
}
