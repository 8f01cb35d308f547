//! A newcomer's first hour (#33): what a new user trips on following README.md with `--quick`,
//! one test per item of the issue. Every run here is `--quick` and figures are checked for
//! what they say (a smoke test says so, "n/a" where a figure cannot be had), never for speed.

use predicates::prelude::*;
use std::path::Path;

mod common;
use common::*;

/// The output of a command that must succeed: (stdout, stderr).
fn ok(db: &Path, args: &[&str]) -> (String, String) {
    let out = sysperf(db).args(args).output().unwrap();
    let (o, e) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "sysperf {args:?} failed: {e}\n{o}");
    (o, e)
}

/// The ids of the stored runs carrying `label`.
fn labelled(db: &Path, label: &str) -> Vec<String> {
    let v = success_json(sysperf(db).args(["runs", "--json"]));
    v.as_array()
        .unwrap()
        .iter()
        .filter(|r| r["label"] == label)
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

/// Item 1: a label names a group everywhere: `rm` removes all of it, listing each run, and
/// takes several names; `show` says the label has N runs and which it shows.
#[test]
fn a_label_names_its_whole_group_for_rm_show_and_export() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    ok(
        &db,
        &[
            "run", "syscall", "--quick", "--repeat", "3", "--label", "group",
        ],
    );
    ok(&db, &["run", "syscall", "--quick", "--label", "other"]);
    let group = labelled(&db, "group");
    assert_eq!(group.len(), 3);

    let (_, err) = ok(&db, &["show", "group"]);
    assert!(err.contains("label of 3 runs"), "{err}");
    assert!(group.iter().all(|id| err.contains(id.as_str())), "{err}");

    let file = tmp.path().join("g.json");
    ok(&db, &["export", "group", "-o", file.to_str().unwrap()]);
    let exported = json_of(&std::fs::read(&file).unwrap());
    assert_eq!(exported["runs"].as_array().unwrap().len(), 3);

    let (_, err) = ok(&db, &["rm", "--dry-run", "group"]);
    assert_eq!(err.matches("would remove run").count(), 3, "{err}");
    assert_eq!(
        labelled(&db, "group").len(),
        3,
        "--dry-run removed something"
    );

    let (out, err) = ok(&db, &["rm", "group", "other"]);
    for id in &group {
        assert!(
            err.contains(&format!("removed run {id} (label 'group')")),
            "{err}"
        );
    }
    assert_eq!(err.matches("removed run").count(), 4, "{err}");
    assert!(
        out.is_empty(),
        "rm reports on stderr, as export does: {out}"
    );
    assert!(
        labelled(&db, "group").is_empty(),
        "rm left runs of the group"
    );
    assert!(labelled(&db, "other").is_empty());
}

/// Item 1: a typo in any name removes nothing.
#[test]
fn rm_resolves_every_name_before_removing_any() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    ok(&db, &["run", "syscall", "--quick", "--label", "keep"]);
    sysperf(&db)
        .args(["rm", "keep", "nosuch"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no run matches 'nosuch'"));
    assert_eq!(labelled(&db, "keep").len(), 1);
}

/// Item 5: a noise call that can estimate nothing says why and what the smallest useful call
/// is, before running anything; `noise --quick` is that call.
#[test]
fn noise_says_why_nothing_can_be_estimated_and_has_a_quick_smoke_test() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let err = usage_error(sysperf(&db).args(["noise", "syscall", "--runs", "2", "--trials", "1"]));
    assert!(err.contains("one trial has none"), "{err}");
    assert!(err.contains("smallest useful call"), "{err}");
    assert!(
        !db.exists(),
        "nothing may run, nor a store be made, before the refusal"
    );
    let out = sysperf(&db)
        .args(["noise", "syscall", "--quick", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("a smoke test of 'noise'"));
    let rows = json_of(&out.stdout);
    assert_eq!(rows.as_array().unwrap().len(), 1, "{rows}");
    assert_eq!(rows[0]["runs"], 3);
    usage_error(sysperf(&db).args(["noise", "--quick", "--trials", "3"]));
}
