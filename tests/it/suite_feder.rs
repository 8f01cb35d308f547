//! The Feder suite end to end: `sysperf run --suite feder --quick` stores every series with
//! its points, the paper's Table III column and the derived figures, and leaves no scratch
//! directory behind; and each point's benchmark makes exactly its system calls per iteration,
//! counted by strace on a worker at two iteration counts (the difference cancels start-up).
//!
//! Nothing here depends on speed.

use crate::support as common;

use common::*;

use serde_json::{json, Value};
use std::collections::HashMap;

#[test]
fn quick_run_stores_every_series_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    // The suite's scratch directories go under TMPDIR (std::env::temp_dir), here our own.
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let db = dir.path().join("x.db");
    let v = common::success_json(
        common::sysperf(&db)
            .env("TMPDIR", &tmp)
            .args(["run", "--suite", "feder", "--quick", "--json", "--db"])
            .arg(&db),
    );
    let series = v["series"].as_array().unwrap();
    let by_id: HashMap<&str, &Value> = series
        .iter()
        .map(|s| (s["id"].as_str().unwrap(), s))
        .collect();
    let labels = |id: &str| -> Vec<String> {
        by_id[id]["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["label"].as_str().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(
        labels("feder.table3"),
        [
            "chdir",
            "open-close",
            "path-3rd-level",
            "dir-32nd-entry",
            "disk-block",
            "read-4k-file",
            "fork-exit-8k",
            "exec-8k-bss"
        ]
    );
    assert_eq!(
        labels("feder.fig1"),
        ["warm", "cache-invalidated", "sweep-alone"]
    );
    let paper = by_id["feder.table3"]["paper_points"].as_array().unwrap();
    assert_eq!(paper.len(), 8);
    assert_eq!(paper[0], json!([0.0, 1.2e6]));
    for id in ["feder.fig2-pair", "feder.fig2-self"] {
        assert_eq!(by_id[id]["figure"], "feder.fig2");
    }
    assert_eq!(by_id["feder.fig3"]["points"].as_array().unwrap().len(), 2);
    assert_eq!(by_id["feder.fig5"]["y_kind"], "bytes_per_sec");
    // Every point measured something.
    for s in series {
        for p in s["points"].as_array().unwrap() {
            assert!(p["y"]["median"].as_f64().unwrap() > 0.0, "{}: {p}", s["id"]);
        }
    }
    let derived = derived_names(&v);
    assert!(
        derived.contains(&"getpid with an invalid cache (Fig. 1)"),
        "{derived:?}"
    );
    assert!(derived.contains(&"context switch (Fig. 2)"), "{derived:?}");
    // One trial a point (--quick): a difference of two medians has no interval to judge it
    // by, so the figures are n/a with the reason, in the run and in the stored run (whose
    // store keeps no reason: it is computed again from the stored series) (#45).
    let shown = common::success_json(common::sysperf(&db).args(["show", "latest", "--json"]));
    for run in [&v, &shown] {
        for d in run["derived"].as_array().unwrap() {
            assert!(
                d["na"].as_str().unwrap_or("").starts_with("one trial"),
                "{d}"
            );
        }
    }
    let text = common::ok(&db, &["show", "latest"], 0);
    let fig1 = text
        .lines()
        .find(|l| l.contains("getpid with an invalid cache"))
        .unwrap_or_default();
    assert!(fig1.contains("n/a"), "{text}");
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
    assert!(left.is_empty(), "left behind in TMPDIR: {left:?}");
}

/// System calls of one worker run of a series point (all its processes), by name.
fn syscalls(id: &str, param: u64, iterations: u64) -> HashMap<String, i64> {
    syscall_counts(id, param, iterations)
}

/// Checks calls per iteration; each expectation names alternatives whose counts add up (a
/// C library may use faccessat or faccessat2, clone or clone3).
fn assert_calls(id: &str, param: u64, expect: &[(&[&str], f64)]) {
    let (lo, hi) = (20, 60);
    let (a, b) = (syscalls(id, param, lo), syscalls(id, param, hi));
    for (names, want) in expect {
        let sum = |m: &HashMap<String, i64>| names.iter().filter_map(|n| m.get(*n)).sum::<i64>();
        let got = (sum(&b) - sum(&a)) as f64 / (hi - lo) as f64;
        assert!(
            (got - want).abs() < 1e-9,
            "{id}@{param}: {got} {names:?} per iteration, expected {want}"
        );
    }
}

const ACCESS: &[&str] = &["faccessat", "faccessat2", "access"];
const CLONE: &[&str] = &["clone", "clone3", "fork", "vfork"];

#[test]
fn table3_rows_make_their_system_calls() {
    if !strace_available() {
        return;
    }
    let t = "feder.table3";
    assert_calls(t, 0, &[(&["chdir"], 1.0), (&["openat"], 0.0)]);
    assert_calls(t, 1, &[(&["openat"], 1.0), (&["close"], 1.0)]);
    assert_calls(t, 2, &[(ACCESS, 1.0), (&["openat"], 0.0)]);
    assert_calls(t, 3, &[(ACCESS, 1.0)]);
    // The uncached block: one O_DIRECT pread, no eviction call, no reopen.
    assert_calls(
        t,
        4,
        &[
            (&["pread64"], 1.0),
            (&["fadvise64"], 0.0),
            (&["openat"], 0.0),
        ],
    );
    assert_calls(
        t,
        5,
        &[(&["openat"], 1.0), (&["read"], 1.0), (&["close"], 1.0)],
    );
    assert_calls(t, 6, &[(CLONE, 1.0), (&["wait4"], 1.0), (&["execve"], 0.0)]);
    // The 8K-BSS program is exec'd as a file, by name (a path lookup, as an exec was), not
    // from a memfd by descriptor (#45).
    assert_calls(
        t,
        7,
        &[
            (CLONE, 1.0),
            (&["execve"], 1.0),
            (&["execveat"], 0.0),
            (&["memfd_create"], 0.0),
            (&["wait4"], 1.0),
        ],
    );
}

#[test]
fn figure_points_make_their_system_calls() {
    if !strace_available() {
        return;
    }
    assert_calls("feder.fig1", 0, &[(&["getpid"], 1.0)]);
    assert_calls("feder.fig1", 1, &[(&["getpid"], 1.0)]);
    assert_calls("feder.fig1", 2, &[(&["getpid"], 0.0)]);
    // A round trip is two 1-byte writes and two reads, in two processes or in one.
    for id in ["feder.fig2-pair", "feder.fig2-self"] {
        assert_calls(id, 0, &[(&["write"], 2.0), (&["read"], 2.0)]);
    }
    assert_calls("feder.fig3", 32768, &[(CLONE, 1.0), (&["wait4"], 1.0)]);
    assert_calls("feder.fig5", 4096, &[(&["write"], 1.0)]);
}
