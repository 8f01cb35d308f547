//! Fleet queries and a store that scales (#21 items 4 and 7) and the evolution view (#19 item
//! 5) from the outside: a store of runs from several hosts and kernels (copies of the minimal
//! export), listed with --limit, --since, --where and --by, compared and reported one column
//! per kernel in version order, the heat map drawn, `rm` and `gc` giving space back, and a
//! writer that finds the store locked saying by whom.

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn sysperf() -> Command {
    let mut c = Command::cargo_bin("sysperf").unwrap();
    c.env_remove("SYSPERF_DB").env("NO_COLOR", "1");
    c
}

fn with_db(db: &Path, args: &[&str]) -> std::process::Output {
    sysperf().args(args).arg("--db").arg(db).output().unwrap()
}

fn ok(db: &Path, args: &[&str]) -> String {
    let out = with_db(db, args);
    assert!(
        out.status.success(),
        "sysperf {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

const DAY_NS: i64 = 86_400_000_000_000;
/// 2026-11-20 00:00 UTC.
const START_NS: i64 = 20_777 * DAY_NS;

/// (host, kernel) of each run, oldest first; run i starts i days after START_NS.
const FLEET: [(&str, &str); 6] = [
    ("a", "6.12.9-amd64"),
    ("b", "5.10.0-28-amd64"),
    ("a", "6.1.0-18-amd64"),
    ("b", "6.9.7-amd64"),
    ("c", "6.12.9-amd64"),
    ("c", "6.1.0-9-amd64"),
];

/// A store holding the fleet, imported from copies of the minimal export.
fn fleet_store() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let seed: Value = serde_json::from_slice(
        &std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/minimal-export.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let mut doc = seed.clone();
    let runs: Vec<Value> = FLEET
        .iter()
        .enumerate()
        .map(|(i, (host, kernel))| {
            let mut r = seed["runs"][0].clone();
            r["id"] = format!("f1ee7000000{i}").into();
            r["label"] = format!("fleet-{i}").into();
            r["started_ns"] = (START_NS + i as i64 * DAY_NS).into();
            r["ended_ns"] = (START_NS + i as i64 * DAY_NS + 1).into();
            r["fingerprint"]["hostname"] = (*host).into();
            r["fingerprint"]["kernel_release"] = (*kernel).into();
            r
        })
        .collect();
    doc["runs"] = runs.into();
    let file = dir.path().join("fleet.json");
    std::fs::write(&file, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    let db = dir.path().join("s.db");
    ok(&db, &["import", file.to_str().unwrap()]);
    (dir, db)
}

fn ids(json: &str) -> Vec<String> {
    let v: Value = serde_json::from_str(json).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap()[11..].to_string())
        .collect()
}

#[test]
fn runs_are_limited_filtered_and_grouped() {
    let (_d, db) = fleet_store();
    // The table shows the newest N and says how many more there are.
    let text = ok(&db, &["runs", "--limit", "2"]);
    assert!(
        text.contains("f1ee70000005") && text.contains("f1ee70000004"),
        "{text}"
    );
    assert!(!text.contains("f1ee70000003"), "{text}");
    assert!(text.contains("... and 4 older runs"), "{text}");
    assert!(!ok(&db, &["runs"]).contains("older run"));
    // JSON lists all unless told; --where and --since filter.
    assert_eq!(ids(&ok(&db, &["runs", "--json"])).len(), 6);
    assert_eq!(
        ids(&ok(&db, &["runs", "--json", "--where", "kernel=6.12"])),
        ["4", "0"]
    );
    assert_eq!(
        ids(&ok(&db, &["runs", "--json", "--where", "kernel=6.1"])),
        ["5", "2"]
    );
    assert_eq!(
        ids(&ok(
            &db,
            &[
                "runs",
                "--json",
                "--where",
                "host=a",
                "--where",
                "host=c",
                "--where",
                "kernel=6.12"
            ]
        )),
        ["4", "0"]
    );
    assert_eq!(
        ids(&ok(&db, &["runs", "--json", "--since", "2026-11-23"])),
        ["5", "4", "3"]
    );
    assert_eq!(
        ids(&ok(&db, &["runs", "--json", "--where", "date=2026-11-21"])),
        ["1"]
    );
    // --by lists the groups, kernels in version order.
    insta::assert_snapshot!(ok(&db, &["runs", "--by", "kernel"]), @r"
    kernel             runs  complete  newest
    5.10.0-28-amd64       1         1  2026-11-21 00:00:00 UTC
    6.1.0-9-amd64         1         1  2026-11-25 00:00:00 UTC
    6.1.0-18-amd64        1         1  2026-11-22 00:00:00 UTC
    6.9.7-amd64           1         1  2026-11-23 00:00:00 UTC
    6.12.9-amd64          2         2  2026-11-24 00:00:00 UTC
    ");
}

#[test]
fn an_unknown_key_is_a_usage_error_that_lists_the_keys() {
    let (_d, db) = fleet_store();
    for args in [
        &["runs", "--where", "colour=red"][..],
        &["compare", "--by", "colour"][..],
        &["runs", "--where", "kernel"][..],
        &["runs", "--since", "yesterday"][..],
    ] {
        let out = with_db(&db, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        if args[2] != "yesterday" {
            for k in ["host", "kernel", "cpu", "label", "date"] {
                assert!(err.contains(k), "{args:?}: {err}");
            }
        }
    }
}

#[test]
fn compare_by_kernel_gives_one_column_per_kernel_in_version_order() {
    let (_d, db) = fleet_store();
    let json: Value =
        serde_json::from_str(&ok(&db, &["compare", "--by", "kernel", "--json"])).unwrap();
    let labels: Vec<&str> = json["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["label"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        [
            "kernel=5.10.0-28-amd64",
            "kernel=6.1.0-9-amd64",
            "kernel=6.1.0-18-amd64",
            "kernel=6.9.7-amd64",
            "kernel=6.12.9-amd64"
        ]
    );
    // The group of two runs is one column holding both.
    assert_eq!(json["group_runs"], serde_json::json!([1, 1, 1, 1, 2]));
    // --where narrows, --by host groups what is left; named runs are grouped too.
    let json: Value = serde_json::from_str(&ok(
        &db,
        &[
            "compare",
            "--where",
            "kernel=6.12",
            "--by",
            "host",
            "--json",
        ],
    ))
    .unwrap();
    assert_eq!(json["runs"].as_array().unwrap().len(), 2);
    let json: Value = serde_json::from_str(&ok(
        &db,
        &[
            "compare",
            "f1ee70000000",
            "f1ee70000001",
            "fleet-4",
            "--by",
            "kernel",
            "--json",
        ],
    ))
    .unwrap();
    assert_eq!(json["runs"][0]["label"], "kernel=5.10.0-28-amd64");
    assert_eq!(json["group_runs"], serde_json::json!([1, 2]));
    // Nothing matches: a usage error that says so.
    let out = with_db(&db, &["compare", "--where", "host=zz"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no complete stored run matches"));
}

/// `sysperf plot --heatmap --by kernel -o OUT`.
fn heatmap(db: &Path, out: &Path) {
    ok(
        db,
        &[
            "plot",
            "--heatmap",
            "--by",
            "kernel",
            "-o",
            out.to_str().unwrap(),
        ],
    );
}

#[test]
fn the_heat_map_is_drawn_by_plot_and_in_the_report() {
    let (dir, db) = fleet_store();
    let svg = dir.path().join("evolution.svg");
    heatmap(&db, &svg);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("<svg"), "{text}");
    assert!(
        text.contains("Slowdown against kernel=5.10.0-28-amd64"),
        "{text}"
    );
    let k512 = text.find("kernel=6.12.9-amd64").unwrap();
    let k69 = text.find("kernel=6.9.7-amd64").unwrap();
    assert!(k69 < k512, "columns in version order");
    let png = dir.path().join("evolution.png");
    heatmap(&db, &png);
    assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
    let html = dir.path().join("r.html");
    ok(
        &db,
        &["report", "--by", "kernel", "-o", html.to_str().unwrap()],
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<figure id=\"figure-evolution\">"),
        "no heat map"
    );
    assert!(
        page.contains("<a href=\"#evolution\">Evolution</a>"),
        "no link to it"
    );
    // A plain report of two runs has no Evolution section.
    ok(
        &db,
        &["report", "fleet-0", "fleet-1", "-o", html.to_str().unwrap()],
    );
    assert!(!std::fs::read_to_string(&html)
        .unwrap()
        .contains("figure-evolution"));
    // One column is not a heat map.
    let out = with_db(
        &db,
        &["plot", "--heatmap", "fleet-0", "-o", svg.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn rm_gives_space_back_and_gc_says_what_it_did() {
    let (_d, db) = fleet_store();
    let full = std::fs::metadata(&db).unwrap().len();
    for i in 0..5 {
        ok(&db, &["rm", &format!("f1ee7000000{i}")]);
    }
    let after = std::fs::metadata(&db).unwrap().len();
    assert!(after < full, "{full} -> {after}");
    let text = ok(&db, &["gc"]);
    assert!(text.contains(" -> ") && text.contains("bytes"), "{text}");
    assert_eq!(ids(&ok(&db, &["runs", "--json"])), ["5"]);
}

#[test]
fn a_writer_finding_the_store_locked_names_the_holder_once() {
    let (_d, db) = fleet_store();
    let conn = rusqlite::Connection::open(&db).unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    // This test process stands for a sysperf import holding the write lock.
    conn.execute(
        "INSERT INTO writers (host, pid, work, started_ns) VALUES (?1, ?2, 'sysperf import', 0)",
        rusqlite::params![host.trim(), std::process::id()],
    )
    .unwrap();
    conn.execute_batch("BEGIN IMMEDIATE").unwrap();
    let out = sysperf()
        .env("SYSPERF_TEST_BUSY_TIMEOUT_MS", "100")
        .args(["rm", "fleet-1", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    conn.execute_batch("ROLLBACK").unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(err.matches("locked").count(), 1, "{err}");
    assert!(
        err.contains(&format!(
            "sysperf import (pid {} on host",
            std::process::id()
        )),
        "{err}"
    );
    assert!(!err.contains("database is locked"), "{err}");
    // The run is still there.
    assert_eq!(ids(&ok(&db, &["runs", "--json"])).len(), 6);
}
