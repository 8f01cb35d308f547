//! Command-line behaviour of observation (#4): `run --observe` counters on every trial,
//! `sysperf profile` naming the kernel paths a benchmark exercises, profiles stored with
//! `run --profile`, and Ctrl-C during a profile leaving nothing behind.
//!
//! Profiling needs root (or CAP_PERFMON / kernel.perf_event_paranoid <= 1 and visible kernel
//! addresses): without it these tests print why and skip, except on CI (CI set), which runs
//! as root and must pass them. Nothing here depends on speed.

use serde_json::Value;
use std::time::Duration;

use crate::support as common;
use common::*;

/// Function names of a profile's call graph and the top of its flat profile.
fn top_symbols(profile: &Value, flat_lines: usize) -> Vec<String> {
    let mut names: Vec<String> = profile["call_graph"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect();
    names.extend(
        profile["flat"]
            .as_array()
            .unwrap()
            .iter()
            .take(flat_lines)
            .map(|e| e["name"].as_str().unwrap().to_string()),
    );
    names
}

#[test]
fn observe_counts_every_measured_trial() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let v = observed_json(sysperf(&db).args([
        "run",
        "--observe",
        "syscall",
        "pipeback4",
        "--quick",
        "--json",
    ]));
    for r in v["results"].as_array().unwrap() {
        let id = r["id"].as_str().unwrap();
        for t in r["trials"].as_array().unwrap() {
            let c = &t["counters"];
            assert!(c.is_object(), "{id}: a trial without counters: {t}");
            assert!(c["interrupts"].as_u64().is_some(), "{id}: {c}");
            assert!(c["interrupts_by_source"].is_object(), "{id}: {c}");
        }
        let s = &r["summary"]["counters"];
        assert!(s.is_object(), "{id}: no counter summary");
        let perf_error = r["trials"]
            .as_array()
            .unwrap()
            .iter()
            .find_map(|t| t["counters"]["perf_error"].as_str());
        if let Some(e) = perf_error {
            assert!(
                std::env::var("CI").is_err() || !sysperf::sys::is_root(),
                "perf counters refused as root on CI: {e}"
            );
            eprintln!("skipping the perf counter checks: {e}");
            continue;
        }
        // --quick has no warm-up, so the measured trials carry the perf counters.
        assert!(s["task_clock_ns_per_op"].as_f64().unwrap() > 0.0, "{id}");
        for t in r["trials"].as_array().unwrap() {
            if t["kind"] == "measured" {
                assert!(
                    t["counters"]["context_switches"].as_u64().is_some(),
                    "{id}: {t}"
                );
            }
        }
        if id == "pipeback4" {
            // A round trip on one CPU switches to the child and back.
            let csw = s["context_switches_per_op"].as_f64().unwrap();
            assert!(
                csw >= 1.9,
                "pipeback4: {csw} context switches per round trip"
            );
        }
    }
    // Stored: show gives back what run printed, and the table gains the counters section.
    let shown = sysperf(&db)
        .args(["show", "latest", "--json"])
        .output()
        .unwrap();
    assert_eq!(json_of(&shown.stdout), v);
    let text = sysperf(&db).args(["show", "latest"]).output().unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("Counters (--observe)"));
    // Without --observe there are none, and no counters section.
    let plain = sysperf(&db)
        .args(["run", "syscall", "--quick", "--json"])
        .output()
        .unwrap();
    let p = json_of(&plain.stdout);
    assert!(p["results"][0]["trials"][0].get("counters").is_none());
    assert!(p["results"][0]["summary"].get("counters").is_none());
}

#[test]
fn observe_keeps_perf_counters_out_of_the_counted_trials() {
    let tmp = tempfile::tempdir().unwrap();
    let v = observed_json(sysperf(&tmp.path().join("s.db")).args([
        "run",
        "--observe",
        "pipeback4",
        "--trials",
        "3",
        "--min-time",
        "0.02",
        "--json",
    ]));
    let r = &v["results"][0];
    let trials = r["trials"].as_array().unwrap();
    let warmup = trials.iter().find(|t| t["kind"] == "warmup").unwrap();
    if let Some(e) = warmup["counters"]["perf_error"].as_str() {
        assert!(
            std::env::var("CI").is_err() || !sysperf::sys::is_root(),
            "perf counters refused as root on CI: {e}"
        );
        eprintln!("skipping: {e}");
        return;
    }
    assert!(warmup["counters"]["context_switches"].as_u64().unwrap() > 0);
    for t in trials.iter().filter(|t| t["kind"] == "measured") {
        assert!(t["counters"]["interrupts"].as_u64().is_some(), "{t}");
        assert!(t["counters"]["context_switches"].is_null(), "{t}");
    }
    let s = &r["summary"]["counters"];
    assert_eq!(s["trials"], 3);
    assert_eq!(s["perf_trials"], 1);
    assert!(s["context_switches_per_op"].as_f64().unwrap() >= 1.9, "{s}");
}

#[test]
fn profile_syscall_names_the_entry_path_and_getpid() {
    if !profiling_allowed() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let v = success_json(
        sysperf(&tmp.path().join("s.db"))
            .args(["profile", "syscall", "--seconds", "1", "--json"])
            .timeout(Duration::from_secs(120)),
    );
    assert_eq!(v["format"], "sysperf-profile");
    let p = &v["profiles"][0];
    assert_eq!(p["bench"], "syscall");
    assert!(p["samples"].as_u64().unwrap() > 0);
    let names = top_symbols(p, 15);
    assert!(
        names.iter().any(|n| n.contains("sys_getpid")),
        "no getpid symbol among {names:?}"
    );
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("entry_SYSCALL_64") || n == "do_syscall_64"),
        "no system-call entry symbol among {names:?}"
    );
    // The user function that makes the call, glibc's syscall(), is named. The worker's maps
    // were once read while the loader was still mapping libc, and every user sample in it
    // was "(mapping unknown)".
    assert!(
        names.iter().any(|n| n.starts_with("libc.so")),
        "no C library function among {names:?}"
    );
    assert!(
        !names.iter().any(|n| n == "(mapping unknown)"),
        "an unnamed user mapping among {names:?}"
    );
}

#[test]
fn profile_forks0_shows_the_fork_exit_wait_path() {
    if !profiling_allowed() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let v = success_json(
        sysperf(&tmp.path().join("s.db"))
            .args([
                "profile",
                "forks0",
                "--seconds",
                "1",
                "--json",
                "--top",
                "60",
            ])
            .timeout(Duration::from_secs(120)),
    );
    let names = top_symbols(&v["profiles"][0], 60);
    assert!(
        names
            .iter()
            .any(|n| n == "kernel_clone" || n == "copy_process"),
        "no fork path among {names:?}"
    );
    assert!(
        names
            .iter()
            .any(|n| n == "do_wait" || n == "do_exit" || n == "release_task"),
        "no exit or wait path among {names:?}"
    );
}

#[test]
fn run_profile_stores_profiles_with_the_run() {
    if !profiling_allowed() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let v = success_json(
        sysperf(&db)
            .args([
                "run",
                "syscall",
                "--quick",
                "--profile",
                "--profile-seconds",
                "0.3",
                "--json",
                "--label",
                "prof",
            ])
            .timeout(Duration::from_secs(120)),
    );
    assert_eq!(v["profiles"][0]["bench"], "syscall");
    let shown = sysperf(&db)
        .args(["show", "prof", "--json"])
        .output()
        .unwrap();
    assert_eq!(json_of(&shown.stdout), v);
    let text = sysperf(&db).args(["show", "prof"]).output().unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("Kernel profile of syscall"));
    let stored = sysperf(&db)
        .args(["profile", "prof", "--json"])
        .output()
        .unwrap();
    assert!(stored.status.success());
    assert_eq!(
        json_of(&stored.stdout)["profiles"][0]["stacks"],
        v["profiles"][0]["stacks"]
    );
}

/// A written flame graph: one static SVG document naming `bench`.
fn assert_flame_graph(path: &std::path::Path, bench: &str) {
    let svg = std::fs::read_to_string(path).unwrap();
    assert!(svg.starts_with("<?xml"), "{svg}");
    assert!(svg.contains("<svg id=\"flamegraph\""));
    assert!(svg.contains(bench), "{bench} not in the title");
    assert!(svg.matches("<rect").count() > 3, "no frames");
    for banned in ["<script", "onload", "url("] {
        assert!(!svg.contains(banned), "{banned} in the flame graph");
    }
}

#[test]
fn profile_svg_draws_a_flame_graph_now_and_of_a_stored_run() {
    if !profiling_allowed() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    // A benchmark profiled now: the profile on stdout, the flame graph in the file.
    let now = tmp.path().join("now.svg");
    let out = sysperf(&db)
        .args(["profile", "pipeback4", "--seconds", "0.3", "--svg"])
        .arg(&now)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("Kernel profile of pipeback4"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("wrote"));
    assert_flame_graph(&now, "pipeback4");
    // A stored run's profiles, each benchmark rooted under its name.
    let run = sysperf(&db)
        .args(["run", "syscall", "pipeback4", "--quick", "--profile"])
        .args(["--profile-seconds", "0.3", "--label", "prof"])
        .timeout(Duration::from_secs(180))
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let stored = tmp.path().join("stored.svg");
    let out = sysperf(&db)
        .args(["profile", "prof", "--svg"])
        .arg(&stored)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_flame_graph(&stored, "syscall, pipeback4");
    let svg = std::fs::read_to_string(&stored).unwrap();
    assert!(
        svg.contains("<title>syscall ("),
        "syscall is not a root frame"
    );
    // Never through a link: a link planted at the name is replaced, what it points at kept.
    let target = tmp.path().join("target.txt");
    std::fs::write(&target, "keep").unwrap();
    let link = tmp.path().join("link.svg");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let out = sysperf(&db)
        .args(["profile", "prof", "--svg"])
        .arg(&link)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    assert!(!std::fs::symlink_metadata(&link).unwrap().is_symlink());
    assert_flame_graph(&link, "syscall, pipeback4");
    // A directory is no file to write: refused before anything is profiled.
    let out = sysperf(&db)
        .args(["profile", "syscall", "--svg"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("directory"));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("profiling"));
    // A run without profiles has nothing to draw: said, exit 1, no file.
    let plain = sysperf(&db)
        .args(["run", "syscall", "--quick", "--label", "plain"])
        .output()
        .unwrap();
    assert!(plain.status.success());
    let none = tmp.path().join("none.svg");
    let out = sysperf(&db)
        .args(["profile", "plain", "--svg"])
        .arg(&none)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("run --profile"));
    assert!(!none.exists());
}

#[test]
fn ctrl_c_during_a_profile_leaves_nothing_behind() {
    if !profiling_allowed() {
        return;
    }
    let tag = unique_tag("profile-ctrl-c");
    let tmp = tempfile::tempdir().unwrap();
    let mut child = spawn_tagged(
        &tmp.path().join("s.db"),
        &tag,
        &["profile", "forks0", "--seconds", "5"],
    );
    // Interrupt once the profiled trial's worker runs (calibration is over by then).
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while leftover_workers(&tag).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(1500));
    interrupt(&child);
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert_nothing_left(&tag);
}

#[test]
fn profile_bad_input_is_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let cases: &[(&[&str], &str)] = &[
        (&["profile", "forkz0"], "did you mean forks0"),
        (&["profile", "nosuch*"], "matches no benchmark"),
        (&["profile", "syscall", "--seconds", "0"], "positive"),
        (&["profile", "syscall", "--top", "0"], "top"),
        (&["profile"], "TARGET"),
        (&["run", "syscall", "--profile-seconds", "-1"], "positive"),
    ];
    for (args, needle) in cases {
        let err = usage_error(sysperf(&db).args(*args));
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

/// A `run --observe` document: exit 0, or exit 1 exactly when the perf counters were refused
/// (an unprivileged user under kernel.perf_event_paranoid >= 2), which the run names in an
/// `observe` warning (the one rule for what a process may not do, tests/it/privileges.rs).
fn observed_json(cmd: &mut assert_cmd::Command) -> Value {
    let out = cmd.output().unwrap();
    let v = json_of(&out.stdout);
    let refused = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w["kind"] == "observe");
    let expected = if refused { 1 } else { 0 };
    assert_eq!(
        out.status.code(),
        Some(expected),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    v
}

/// Any suite point profiles as a core benchmark does: `sysperf profile SERIES@X` now, and
/// `run --profile --suite ...` stores a profile for each point it measured (issue #32: the
/// first errored and the second stored nothing, silently, exit 0).
#[test]
fn suite_points_profile_now_and_with_a_run() {
    if !profiling_allowed() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let v = success_json(
        sysperf(&db)
            .args([
                "profile",
                "scaling.path-depth@8",
                "--seconds",
                "0.3",
                "--json",
                "--top",
                "40",
            ])
            .timeout(Duration::from_secs(120)),
    );
    let p = &v["profiles"][0];
    assert_eq!(p["bench"], "scaling.path-depth@8");
    assert!(p["samples"].as_u64().unwrap() > 0, "{p}");
    let names = top_symbols(p, 40);
    assert!(
        names
            .iter()
            .any(|n| n == "link_path_walk" || n == "walk_component"),
        "no path walk among {names:?}"
    );
    let run = success_json(
        sysperf(&db)
            .args([
                "run",
                "--suite",
                "scaling.path-depth@8",
                "--quick",
                "--profile",
                "--profile-seconds",
                "0.2",
                "--json",
            ])
            .timeout(Duration::from_secs(300)),
    );
    let benches: Vec<&str> = run["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["bench"].as_str().unwrap())
        .collect();
    assert_eq!(benches, ["scaling.path-depth@8"], "{run}");
    let stored = sysperf(&db)
        .args(["profile", "latest", "--json"])
        .output()
        .unwrap();
    assert!(stored.status.success());
    assert_eq!(
        json_of(&stored.stdout)["profiles"][0]["bench"],
        "scaling.path-depth@8"
    );
}
