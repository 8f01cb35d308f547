//! The `cspeed` suite (Feder's Table II and compile time, #45) from the outside: the quick run
//! stores both series with every kernel and build, the C-speed program's CPU time is the
//! points' (the helper's usage counted as the test's), each compile's time is cc's (reaped
//! children), the derived figures print Table II beside today's; and a compiler variable in
//! the caller's environment (COMPILER_PATH, which would make gcc run a planted `as`) never
//! reaches the cc sysperf runs, which leaves no scratch directory behind.

use crate::support as common;

use common::*;
use sysperf::suite::find_suite;

#[test]
fn quick_cspeed_suite_runs_the_program_and_the_compiler_and_prints_table_2() {
    let v = quick_suite_run("cspeed", "suite-cspeed");
    let suite = find_suite("cspeed").unwrap();
    for spec in (suite.series)() {
        let s = series_of(&v, spec.id);
        let want: Vec<f64> = (spec.points)(true).iter().map(|p| p.x).collect();
        assert_eq!(xs_of(s), want, "{}", spec.id);
        for p in s["points"].as_array().unwrap() {
            assert!(p["y"]["median"].as_f64().unwrap() > 0.0, "{}: {p}", spec.id);
            let t = p["result"]["trials"].as_array().unwrap().last().unwrap();
            let (own, children) = (&t["usage"], &t["children"]);
            let cpu = |u: &serde_json::Value| {
                u["user_ns"].as_u64().unwrap() + u["sys_ns"].as_u64().unwrap()
            };
            if spec.id == "cspeed.table2" {
                // The program's passes are the test's CPU time, and it has no children.
                assert!(cpu(own) > 0, "{}: {t}", p["label"]);
                assert_eq!(cpu(children), 0, "{}: {t}", p["label"]);
            } else {
                // cc and its passes (cc1, as, ld) are reaped children.
                assert!(cpu(children) > 0, "{}: {t}", p["label"]);
            }
        }
    }
    let labels: Vec<&str> = series_of(&v, "cspeed.table2")["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["wc", "symtab", "sort", "interp", "crc"]);
    let derived = v["derived"].as_array().unwrap();
    let table2 = derived
        .iter()
        .find(|d| d["name"].as_str().unwrap().contains("(Table II)"))
        .expect("the Table II figure");
    let formula = table2["formula"].as_str().unwrap();
    for paper in [
        "3B20S 1",
        "VAX-11/780 0.97",
        "VAX-11/750 0.61",
        "PDP-11/70 0.83",
    ] {
        assert!(formula.contains(paper), "{paper}: {formula}");
    }
    assert!(formula.contains("sysperf compare"), "{formula}");
    assert!(
        derived_names(&v)
            .iter()
            .any(|n| n.starts_with("compile time of the benchmark program")),
        "{:?}",
        derived_names(&v)
    );
}

#[test]
fn a_planted_compiler_path_is_not_used_and_nothing_is_left() {
    if sysperf::programs::find("cc").is_err() {
        println!("skipped: no cc here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    let planted = dir.path().join("planted");
    std::fs::create_dir(&tmp).unwrap();
    std::fs::create_dir(&planted).unwrap();
    let marker = dir.path().join("ran");
    // gcc runs `as` (and cc1, collect2) from COMPILER_PATH and GCC_EXEC_PREFIX before its own.
    let script = format!("#!/bin/sh\ntouch '{}'\nexit 1\n", marker.display());
    for name in ["as", "cc1", "collect2", "ld"] {
        let p = planted.join(name);
        std::fs::write(&p, &script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let db = dir.path().join("x.db");
    let v = success_json(
        sysperf(&db)
            .env("TMPDIR", &tmp)
            .env("COMPILER_PATH", &planted)
            .env("GCC_EXEC_PREFIX", format!("{}/", planted.display()))
            .args(["run", "--suite", "cspeed.compile", "--quick", "--json"]),
    );
    let s = series_of(&v, "cspeed.compile");
    for p in s["points"].as_array().unwrap() {
        assert!(
            p["result"]["error"].is_null(),
            "{}: {}",
            p["label"],
            p["result"]["error"]
        );
    }
    assert!(
        !marker.exists(),
        "cc ran a program planted in COMPILER_PATH"
    );
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().flatten().collect();
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
}
