//! The "scaling" suite (table searches against table size), file-system half: the quick run
//! stores every curve with its points, and each point's worker really does its operation,
//! counted from the outside with strace (system calls per iteration, from two iteration
//! counts whose difference cancels setup and teardown). Nothing here depends on speed.

use crate::support as common;

use common::*;
use serde_json::{json, Value};
use std::process::Command;
use sysperf::suite::scaling::{CacheCase, FS_SERIES};

fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_sysperf")
}

fn request(id: &str, param: u64, iterations: u64) -> String {
    json!({ "id": id, "param": param, "iterations": iterations, "pin": null, "child_cpu": null })
        .to_string()
}

/// `sysperf-scaling-PID-*` directories under the temporary directory whose process is gone:
/// what a worker that did not clean up would leave.
fn orphan_dirs() -> Vec<String> {
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.strip_prefix("sysperf-scaling-")
                .and_then(|r| r.split('-').next())
                .is_some_and(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists())
        })
        .collect()
}

#[test]
fn quick_suite_stores_every_fs_curve_with_its_points() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let v = success_json(sysperf(&db).args(["run", "--suite", "scaling", "--quick", "--json"]));
    for spec in FS_SERIES {
        let s = series_of(&v, spec.id);
        assert_eq!(s["figure"], spec.figure, "{}", spec.id);
        // Beside the papers' CPU-time points, CPU time; elsewhere wall time (#45).
        let cpu = [
            "scaling.chdir",
            "scaling.dir-lookup",
            "scaling.path",
            "scaling.ls",
        ];
        let want = if cpu.contains(&spec.figure) {
            "cpu_ns"
        } else {
            "cost_ns"
        };
        assert_eq!(s["y_kind"], want, "{}", spec.id);
        let want: Vec<f64> = (spec.points)(true).iter().map(|p| p.x).collect();
        assert_eq!(xs_of(s), want, "{}", spec.id);
        for p in s["points"].as_array().unwrap() {
            let y = p["y"]["median"].as_f64();
            assert!(y.is_some_and(|y| y > 0.0), "{}: {p}", spec.id);
        }
    }
    let cache = series_of(&v, "scaling.name-cache");
    let labels: Vec<&str> = cache["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["label"].as_str().unwrap())
        .collect();
    let want: Vec<&str> = CacheCase::ALL.iter().map(|c| c.label()).collect();
    assert_eq!(labels, want);
    // The preflight said which file system the directories were on.
    let notes = v.to_string();
    assert!(notes.contains("statfs f_type"), "no file-system note");
    assert!(orphan_dirs().is_empty(), "left behind: {:?}", orphan_dirs());
}

/// The strace trace of one worker run of `id` at `param` and `iterations`, every process's
/// (-ff: one file each, so that no call is split into "<unfinished ...>" and "resumed" halves
/// by another process's line and counted by its first half).
fn trace(id: &str, param: u64, iterations: u64, calls: &str) -> String {
    strace_point(&["-e", &format!("trace={calls}")], id, param, iterations).concat()
}

/// Lines of the traces at `lo` and `hi` iterations matching `pred`, per iteration.
fn per_iteration(
    id: &str,
    param: u64,
    (lo, hi): (u64, u64),
    calls: &str,
    pred: impl Fn(&str) -> bool,
) -> f64 {
    let count = |n| {
        trace(id, param, n, calls)
            .lines()
            .filter(|l| pred(l))
            .count() as f64
    };
    (count(hi) - count(lo)) / (hi - lo) as f64
}

fn is_stat(l: &str) -> bool {
    l.contains("statx(") || l.contains("newfstatat(")
}

#[test]
fn ls_l_lstats_every_entry_and_looks_up_the_owner_each_listing() {
    if !strace_available() {
        return;
    }
    let calls = "statx,newfstatat,openat,getdents64";
    // lstat of an entry: relative to the directory's descriptor, not following links (the C
    // library's NSS makes stat calls of its own, of /etc files).
    let stats = per_iteration("scaling.ls-l", 60, (1, 3), calls, |l| {
        is_stat(l) && l.contains("\"e0") && l.contains("AT_SYMLINK_NOFOLLOW")
    });
    assert_eq!(stats, 60.0, "one lstat per entry per listing");
    let opendirs = per_iteration("scaling.ls-l", 60, (1, 3), calls, |l| {
        l.contains("openat(") && l.contains("O_DIRECTORY")
    });
    assert_eq!(opendirs, 1.0);
    let nss = std::fs::read_to_string("/etc/nsswitch.conf").unwrap_or_default();
    let passwd_from_files = nss
        .lines()
        .any(|l| l.starts_with("passwd:") && l.contains("files"));
    if passwd_from_files {
        let passwd = per_iteration("scaling.ls-l", 60, (1, 3), calls, |l| {
            l.contains("\"/etc/passwd\"")
        });
        assert!(
            passwd >= 1.0,
            "the owner is looked up in every listing ({passwd})"
        );
    }
}

#[test]
fn lookups_and_chdir_make_one_call_per_operation() {
    if !strace_available() {
        return;
    }
    let calls = "statx,newfstatat,chdir,openat,unlinkat";
    for (id, param) in [
        ("scaling.lookup-last", 1000),
        ("scaling.lookup-absent", 1000),
        ("scaling.path-symlinks", 8),
        ("scaling.name-cache", 2),
    ] {
        assert_eq!(
            per_iteration(id, param, (10, 30), calls, is_stat),
            1.0,
            "{id}"
        );
    }
    let chdirs = per_iteration("scaling.chdir-open-files", 100, (10, 30), calls, |l| {
        l.contains("chdir(\".\")")
    });
    assert_eq!(chdirs, 1.0);
    // A miss is a lookup of a name never seen: all of them differ.
    let t = trace("scaling.lookup-absent", 100, 50, calls);
    let misses: std::collections::HashSet<&str> = t
        .lines()
        // The benchmark's names are m0, m1, ...: not a program looked up relative to a
        // PATH directory ("makedb", since #41's programs rule walks each entry).
        .filter(|l| {
            is_stat(l)
                && l.contains("ENOENT")
                && l.split(", \"m")
                    .nth(1)
                    .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
        })
        .collect();
    assert_eq!(misses.len(), 50);
}

#[test]
fn create_points_create_and_unlink_once_per_operation() {
    if !strace_available() {
        return;
    }
    let calls = "openat,unlinkat";
    for id in ["scaling.create", "scaling.create-emptied"] {
        let creates = per_iteration(id, 100, (10, 30), calls, |l| {
            l.contains("openat(") && l.contains("O_CREAT") && l.contains("\"new\"")
        });
        let unlinks = per_iteration(id, 100, (10, 30), calls, |l| {
            l.contains("unlinkat(") && l.contains("\"new\"")
        });
        assert_eq!((creates, unlinks), (1.0, 1.0), "{id}");
    }
}

#[test]
fn a_worker_run_leaves_no_directory_behind() {
    for (id, param) in [("scaling.create-emptied", 1000), ("scaling.path-depth", 32)] {
        let out = Command::new(exe())
            .args(["__worker", &request(id, param, 5)])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(out.status.success() && v["error"].is_null(), "{id}: {v}");
    }
    assert!(orphan_dirs().is_empty(), "left behind: {:?}", orphan_dirs());
}
