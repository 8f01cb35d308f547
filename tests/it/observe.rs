//! Command-line behaviour of `sysperf watch` and `sysperf doctor`, and the doctor's findings
//! stored with every run. Figures are checked for shape and sign, never for speed; agreement
//! with vmstat and iostat is tests/it/watch_vs_peers.rs.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use crate::support as common;
use common::*;

#[test]
fn doctor_json_parses_and_every_finding_says_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let v = success_json(sysperf(&tmp.path().join("db")).args(["doctor", "--json"]));
    assert_eq!(v["format"], "sysperf-doctor");
    let findings = v["findings"].as_array().unwrap();
    let mut seen_info = false;
    for f in findings {
        for k in ["id", "title", "detail", "fix"] {
            assert!(
                f[k].as_str().is_some_and(|s| !s.trim().is_empty()),
                "{k} empty in {f}"
            );
        }
        match f["severity"].as_str().unwrap() {
            "warn" => assert!(!seen_info, "warnings come first: {v}"),
            "info" => seen_info = true,
            s => panic!("severity {s}"),
        }
    }
    // The facts behind them: a CPU sample was taken, and quickly.
    let sample = v["facts"]["sample_s"].as_f64().unwrap();
    assert!(sample > 0.1 && sample < 1.0, "{sample}");
    // The text form gives every finding it counts in its first line a fix. (A second look
    // may find more or fewer than the first: load and busy processes come and go.)
    let text = sysperf(&tmp.path().join("db"))
        .arg("doctor")
        .output()
        .unwrap();
    assert!(text.status.success());
    let text = String::from_utf8(text.stdout).unwrap();
    let counted: usize = text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("sysperf doctor: "))
        .unwrap_or_else(|| panic!("{text}"))
        .split(", ")
        .map(|part| {
            part.split_whitespace()
                .next()
                .unwrap()
                .parse::<usize>()
                .unwrap()
        })
        .sum();
    assert_eq!(text.matches("\n      fix: ").count(), counted, "{text}");
}

#[test]
fn run_stores_the_doctors_findings() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let v = success_json(sysperf(&db).args(["run", "syscall", "--quick", "--json"]));
    let findings = v["findings"].as_array().expect("a findings array");
    for f in findings {
        assert!(f["fix"].as_str().is_some_and(|s| !s.is_empty()), "{f}");
    }
    let shown = sysperf(&db)
        .args(["show", "latest", "--json"])
        .output()
        .unwrap();
    assert!(shown.status.success());
    assert_eq!(
        json_of(&shown.stdout),
        v,
        "show differs from what run printed"
    );
    // The table lists the warnings among them after the run's own warnings.
    let warns = findings.iter().filter(|f| f["severity"] == "warn").count();
    let table = sysperf(&db).args(["show", "latest"]).output().unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    assert_eq!(table.contains("\nDoctor ("), warns > 0, "{table}");
}

#[test]
fn watch_prints_vmstat_lines_and_json() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    // No interval: one line of averages since boot, under vmstat's two header lines.
    let out = sysperf(&db).arg("watch").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[1].split_whitespace().eq([
        "r", "b", "swpd", "free", "buff", "cache", "si", "so", "bi", "bo", "flt", "in", "cs", "us",
        "sy", "id", "wa", "st"
    ]));
    assert_eq!(lines[2].split_whitespace().count(), 18);
    // JSON: one object per line, the first since boot, then the interval.
    let out = sysperf(&db)
        .args(["watch", "0.2", "2", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["since_boot"], true);
    assert_eq!(lines[1]["since_boot"], false);
    let l = &lines[1];
    // The interval is measured, not assumed: at least the 0.2 s asked for (a sleep never ends
    // early), and however late a busy machine wakes the sampler, never the time since boot.
    let elapsed = l["elapsed_s"].as_f64().unwrap();
    assert!((0.19..60.0).contains(&elapsed), "{l}");
    let shares: f64 = ["us_pct", "sy_pct", "id_pct", "wa_pct", "st_pct", "gu_pct"]
        .iter()
        .map(|k| l[k].as_f64().unwrap())
        .sum();
    assert!((shares - 100.0).abs() < 1e-6, "{l}");
    assert!(l["cs_per_s"].as_f64().unwrap() > 0.0, "{l}");
    assert!(l["free_kib"].as_u64().unwrap() > 0, "{l}");
    // --disk: iostat's columns.
    let out = sysperf(&db).args(["watch", "--disk"]).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8(out.stdout).unwrap().contains(
        "Device             tps      rkB/s      wkB/s  r_await  w_await  aqu-sz   %util"
    ));
}

#[test]
fn watch_bad_interval_or_count_is_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    for (args, needle) in [
        (&["watch", "0"][..], "INTERVAL"),
        (&["watch", "-1"], "INTERVAL"),
        (&["watch", "1e9"], "at most a day"),
        (&["watch", "0.001"], "at least"),
        (&["watch", "nan"], "INTERVAL"),
        (&["watch", "abc"], "INTERVAL"),
        (&["watch", "1", "0"], "COUNT"),
        (&["watch", "1", "-2"], "COUNT"),
        (&["watch", "1", "2.5"], "COUNT"),
        (&["watch", "1", "2", "3"], "unexpected argument"),
    ] {
        let err = usage_error(sysperf(&db).args(args));
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn ctrl_c_ends_an_endless_watch_with_exit_0() {
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("sysperf"))
        .args(["watch", "0.2"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the since-boot line and one interval line, then interrupt as a terminal would.
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut seen = Vec::new();
    for _ in 0..4 {
        let mut l = String::new();
        reader.read_line(&mut l).unwrap();
        seen.push(l);
    }
    let sent = Instant::now();
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{seen:?}");
    // An endless watch ended by the signal, not by a count: bounded only against a hang.
    assert!(sent.elapsed() < Duration::from_secs(60));
    assert!(seen[3].split_whitespace().count() == 18, "{seen:?}");
}
