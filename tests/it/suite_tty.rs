//! The terminal suite end to end: `sysperf run --suite tty --quick` stores the four series of
//! Fig. 7 and the input curves with their points and derived figures, leaves no process
//! behind, and, counted by strace from the outside, each output operation is one write(2) and
//! each canonical input operation is one write and one read. Nothing here depends on speed.

use crate::support as common;
use common::*;

#[test]
fn quick_suite_stores_the_four_curves() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("tty.db");
    let tag = unique_tag("suite-tty");
    let v = success_json(
        sysperf(&db)
            .env("SYSPERF_TEST_TAG", &tag)
            .args(["run", "--suite", "tty", "--quick", "--json"]),
    );
    // The reader children were reaped by their workers, the workers by sysperf.
    assert_nothing_left(&tag);
    let series = v["series"].as_array().unwrap();
    let ids: Vec<&str> = series.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "tty.out-cooked",
            "tty.out-raw",
            "tty.in-canon",
            "tty.in-raw"
        ]
    );
    for s in series {
        let id = s["id"].as_str().unwrap();
        let points = s["points"].as_array().unwrap();
        assert!(!points.is_empty(), "{id}");
        for p in points {
            assert!(p["result"]["error"].is_null(), "{id}: {p}");
            assert!(p["y"]["median"].as_f64().unwrap() > 0.0, "{id}: {p}");
        }
        if id.starts_with("tty.out") {
            assert_eq!(s["figure"], "tty.fig7");
            assert_eq!(s["y_kind"], "bytes_per_sec", "{id}");
            // The paper's 256-byte writes are always measured, and its figure drawn beside.
            assert!(points.iter().any(|p| p["x"] == 256.0), "{id}");
            assert_eq!(s["paper_points"][0][0], 256.0, "{id}");
            for p in points {
                assert_eq!(p["bytes_per_op"], p["x"], "{id}");
            }
        } else {
            assert_eq!(s["y_kind"], "cost_ns", "{id}");
        }
    }
    let derived = derived_names(&v);
    for want in [
        "tty output processing CPU (256-byte writes)",
        "tty output at 100% CPU, cooked (Fig. 7 measure)",
        "tty output at 100% CPU, raw (Fig. 7 measure)",
        "tty input/output CPU per byte (64 bytes)",
    ] {
        assert!(derived.contains(&want), "{want} not in {derived:?}");
    }
}

/// The read and write calls of one worker trial (worker and reader child), one a line, as
/// strace -ff prints them: `write(4, "text"..., 256) = 256`.
fn traced_io(id: &str, param: u64, iterations: u64) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    // -ff: one file per process, so that no call is split into "unfinished" and "resumed"
    // lines by the other process's calls.
    let log = dir.path().join("io");
    strace_worker(
        &["-ff", "-e", "trace=read,write", "-e", "signal=none"],
        &log,
        &point_request(id, param, iterations),
        &[],
    );
    let mut lines = Vec::new();
    for f in std::fs::read_dir(dir.path()).unwrap() {
        let text = std::fs::read_to_string(f.unwrap().path()).unwrap();
        // strace pads short calls before " = N": one space everywhere.
        lines.extend(
            text.lines()
                .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")),
        );
    }
    lines
}

fn count(lines: &[String], call: &str, data: &str, ends: &str) -> usize {
    lines
        .iter()
        .filter(|l| l.contains(&format!("{call}(")) && l.contains(data) && l.ends_with(ends))
        .count()
}

#[test]
fn one_write_per_output_operation() {
    if !strace_available() {
        return;
    }
    for id in ["tty.out-cooked", "tty.out-raw"] {
        let io = traced_io(id, 256, 300);
        // The writer: one 256-byte write per operation, then the one-byte end mark; the
        // reader: one 8-byte report of its count.
        assert_eq!(count(&io, "write", "", ", 256) = 256"), 300, "{id}");
        assert_eq!(count(&io, "write", r#", "\0", 1)"#, "= 1"), 1, "{id}");
        assert_eq!(count(&io, "write", "", ", 8) = 8"), 1, "{id}");
    }
}

#[test]
fn canonical_input_is_one_write_and_one_read_per_line() {
    if !strace_available() {
        return;
    }
    let io = traced_io("tty.in-canon", 64, 300);
    // The line is "abcd...\n": every write of it is one line, and every read that returned
    // any of it returned all 64 bytes, once per line.
    assert_eq!(count(&io, "write", r#""abcdefgh"#, ", 64) = 64"), 300);
    assert_eq!(count(&io, "read", r#""abcdefgh"#, ") = 64"), 300);
    assert_eq!(count(&io, "read", r#""abcdefgh"#, ""), 300);
}
