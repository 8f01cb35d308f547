//! The BBN suite (pipes and ports against block size, the real-world test): the stored series
//! have the report's shape, and each benchmark really moves its blocks, counted from outside.
//!
//! - `run --suite bbn --quick` stores six series with the planned points and the paper's
//!   printed figures;
//! - strace at two block counts: one write(2) per block in the writer (two with a port's
//!   header), as many read(2)s in the reader up to 4096 bytes, several above the pipe's 64 KiB;
//! - strace of a port: the FIFO is made with mknod(S_IFIFO), and each block is two write(2)s,
//!   the 8-byte header (length, sequence number 0, 1, 2, ...) and then the block, as t.port1;
//! - the real-world test really runs a file copier and a second pipe pair beside the measured
//!   pair, and nothing (process, FIFO, directory) outlives a worker, even a killed one.
//!
//! Nothing here depends on speed. Without strace the strace tests are skipped (failed on CI).

use crate::support as common;

use common::*;

use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_sysperf")
}

fn request(id: &str, param: u64, iterations: u64) -> String {
    json!({ "id": id, "param": param, "iterations": iterations, "pin": null, "child_cpu": null })
        .to_string()
}

#[test]
fn quick_run_stores_the_reports_series() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let v = common::success_json(
        common::sysperf(&db)
            .args(["run", "--suite", "bbn", "--quick", "--json", "--db"])
            .arg(&db),
    );
    let series = v["series"].as_array().expect("series");
    let by_id: HashMap<&str, &Value> = series
        .iter()
        .map(|s| (s["id"].as_str().unwrap(), s))
        .collect();
    let ids = [
        "bbn.pipe-1000",
        "bbn.pipe",
        "bbn.port-bare",
        "bbn.port",
        "bbn.port-check",
        "bbn.realworld",
    ];
    assert_eq!(series.len(), ids.len(), "{:?}", by_id.keys());
    for id in ids {
        let s = by_id[id];
        assert_eq!(s["y_kind"], json!("bytes_per_sec"), "{id}");
        for p in s["points"].as_array().unwrap() {
            assert!(p["result"]["error"].is_null(), "{id}: {p}");
            assert!(p["y"]["median"].as_f64().unwrap() > 0.0, "{id}: {p}");
            assert_eq!(
                p["bytes_per_op"].as_f64(),
                p["x"].as_f64(),
                "{id}: a block is the operation"
            );
        }
    }
    let xs = |id: &str| xs_of(by_id[id]);
    assert_eq!(xs("bbn.pipe-1000"), vec![2.0, 256.0, 4096.0]);
    assert_eq!(xs("bbn.pipe"), vec![2.0, 4096.0, 1048576.0]);
    assert_eq!(xs("bbn.realworld"), vec![128.0, 4096.0]);
    // The report's counts are fixed: every trial of the real-world test and of the report's
    // pipe curve moved exactly its table's number of blocks.
    let counts = |id: &str| -> Vec<u64> {
        by_id[id]["points"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|p| p["result"]["trials"].as_array().unwrap().iter())
            .map(|t| t["iterations"].as_u64().unwrap())
            .collect()
    };
    assert!(counts("bbn.pipe-1000").iter().all(|&n| n == 1000));
    let rw = counts("bbn.realworld");
    assert!(rw.contains(&1000) && rw.contains(&100), "{rw:?}");
    // The paper's printed figures, bytes/s: Table 1's 4096 bytes in 8:08.
    let paper = by_id["bbn.pipe-1000"]["paper_points"].as_array().unwrap();
    assert_eq!(paper.len(), 12);
    assert_eq!(paper[11][0].as_f64(), Some(4096.0));
    assert_eq!(paper[11][1].as_f64(), Some(4_096_000.0 / 488.0));
    assert!(by_id["bbn.port"]["paper_points"]
        .as_array()
        .unwrap()
        .is_empty());
    assert_eq!(
        by_id["bbn.realworld"]["paper_points"]
            .as_array()
            .unwrap()
            .len(),
        8
    );
}

/// Calls of `name` per block, from strace -c of runs at `lo` and `hi` blocks.
fn per_block(id: &str, param: u64, lo: u64, hi: u64, name: &str) -> f64 {
    let count = |n: u64| -> i64 {
        strace_point(&["-c", "-U", "calls,name"], id, param, n)
            .concat()
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.len() == 2 && f[1] == name).then(|| f[0].parse::<i64>().ok())?
            })
            .sum()
    };
    (count(hi) - count(lo)) as f64 / (hi - lo) as f64
}

#[test]
fn writer_writes_each_block_once_and_the_reader_reads_it_whole() {
    if !strace_available() {
        return;
    }
    // A port with a header writes the header, then the block, as t.port1 did; the reader
    // reads them in the same two steps.
    for (id, calls) in [
        ("bbn.pipe", 1.0),
        ("bbn.port-bare", 1.0),
        ("bbn.port", 2.0),
        ("bbn.port-check", 2.0),
    ] {
        assert_eq!(per_block(id, 512, 100, 300, "write"), calls, "{id}");
        // At most PIPE_BUF, a block arrives whole: one read.
        assert_eq!(per_block(id, 512, 100, 300, "read"), calls, "{id}");
    }
    // A 1 MiB block passes a 64 KiB pipe in pieces: still one write, many reads.
    assert_eq!(per_block("bbn.pipe", 1 << 20, 10, 30, "write"), 1.0);
    let reads = per_block("bbn.pipe", 1 << 20, 10, 30, "read");
    assert!(reads >= 2.0, "{reads} reads per 1 MiB block");
    // The real-world test: "Two processes ... each of which executed t.pipe1.c" and "the times
    // for these two routines were then recorded": both writers send exactly their blocks (of
    // 'Z's and of '<'s) inside the trial, and the copier never syncs (the report's had no
    // fsync).
    let traces = strace_point(
        &["-e", "trace=write,fsync,fdatasync,sync_file_range"],
        "bbn.realworld",
        128,
        50,
    );
    let lines = || traces.iter().flat_map(|t| t.lines());
    let blocks = |fill: &str| {
        lines()
            .filter(|l| l.contains(&format!("\"{fill}{fill}")) && l.ends_with(", 128) = 128"))
            .count()
    };
    assert_eq!(blocks("Z"), 50, "{traces:?}");
    assert_eq!(blocks("<"), 50, "the second pair moves the same blocks");
    let syncs: Vec<&str> = lines().filter(|l| l.contains("sync")).collect();
    assert!(syncs.is_empty(), "the copier syncs: {syncs:?}");
}

/// The payload bytes a traced write(2) shows (`-xx`: every byte as \xNN) and its length.
fn traced_write(line: &str) -> Option<(Vec<u8>, usize)> {
    let args = line.split_once("write(")?.1;
    let (_, rest) = args.split_once(", \"")?;
    let (hex, tail) = rest.split_once('"')?;
    let bytes = hex
        .split("\\x")
        .filter(|h| !h.is_empty())
        .map(|h| u8::from_str_radix(h, 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    let len = tail.split(", ").nth(1)?.split(')').next()?.parse().ok()?;
    Some((bytes, len))
}

#[test]
fn the_port_is_a_fifo_and_each_block_carries_its_header() {
    if !strace_available() {
        return;
    }
    let blocks = 20u32;
    let trace = strace_point(
        &["-e", "trace=mknodat,mknod,write", "-xx", "-s", "8"],
        "bbn.port",
        100,
        blocks as u64,
    )
    .concat();
    assert!(
        trace
            .lines()
            .any(|l| l.contains("mknod") && l.contains("S_IFIFO")),
        "no FIFO made:\n{trace}"
    );
    // The writer's writes in order: header (8 bytes), block (100), header, block, ...
    // (the worker's own report to the harness is longer than either)
    let writes: Vec<(Vec<u8>, usize)> = trace
        .lines()
        .filter_map(traced_write)
        .filter(|(_, len)| *len == 8 || *len == 100)
        .collect();
    let lens: Vec<usize> = writes.iter().map(|(_, l)| *l).collect();
    assert_eq!(lens, [8, 100].repeat(blocks as usize), "{trace}");
    for (seq, (head, _)) in writes.iter().step_by(2).enumerate() {
        let mut want = 100u32.to_le_bytes().to_vec();
        want.extend((seq as u32).to_le_bytes());
        assert_eq!(head, &want, "header of block {seq}");
    }
    // The bare port sends the block alone.
    let bare = strace_point(&["-e", "trace=write"], "bbn.port-bare", 100, 20).concat();
    assert_eq!(
        bare.lines().filter(|l| l.ends_with(", 100) = 100")).count(),
        20
    );
}

/// Children of `pid` by name (comm), from /proc.
fn children(pid: u32) -> Vec<(u32, String)> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let Some((comm, rest)) = stat.split_once(" (").and_then(|(_, r)| r.rsplit_once(") "))
        else {
            continue;
        };
        let ppid = rest.split_whitespace().nth(1).and_then(|x| x.parse().ok());
        if ppid == Some(pid) {
            v.push((p, comm.to_string()));
        }
    }
    v
}

fn scratch_dirs(pid: u32) -> Vec<PathBuf> {
    let prefix = format!("sysperf-bbn-{pid}-");
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

fn wchar(pid: u32) -> u64 {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap_or_default();
    io.lines()
        .find_map(|l| l.strip_prefix("wchar: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// Starts a worker and waits until its children named `names` all run.
fn worker_with(
    id: &str,
    param: u64,
    iterations: u64,
    names: &[&str],
) -> (std::process::Child, Vec<(u32, String)>) {
    let mut worker = Command::new(exe())
        .args(["__worker", &request(id, param, iterations)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    loop {
        let kids = children(worker.id());
        if names.iter().all(|n| kids.iter().any(|(_, c)| c == n)) {
            return (worker, kids);
        }
        if t0.elapsed() > Duration::from_secs(30) || matches!(worker.try_wait(), Ok(Some(_))) {
            let _ = worker.kill();
            let out = worker.wait_with_output().unwrap();
            panic!(
                "{id}: children {kids:?}; {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn gone(pids: &[u32]) {
    let t0 = Instant::now();
    while pids
        .iter()
        .any(|p| std::path::Path::new(&format!("/proc/{p}")).exists())
    {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "still alive: {pids:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn the_real_world_test_runs_a_copier_and_a_second_pair_and_leaves_nothing() {
    let names = [
        "sysperf:copier",
        "sysperf:pair2w",
        "sysperf:pair2r",
        "sysperf:reader",
    ];
    // Long enough to look at while it runs; the count does not matter otherwise.
    let (worker, kids) = worker_with("bbn.realworld", 128, 3_000_000, &names);
    let pid = worker.id();
    let copier = kids.iter().find(|(_, c)| c == "sysperf:copier").unwrap().0;
    let w0 = wchar(copier);
    let t0 = Instant::now();
    while wchar(copier) <= w0 + (4 << 20) {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the copier copies nothing"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // The copier's files are unlinked while it runs: a killed worker leaves no file.
    assert!(scratch_dirs(pid).is_empty(), "{:?}", scratch_dirs(pid));
    let out = worker.wait_with_output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    assert!(out.status.success() && v["error"].is_null(), "{v}");
    gone(&kids.iter().map(|k| k.0).collect::<Vec<_>>());
}

#[test]
fn a_killed_port_worker_leaves_no_fifo_and_no_reader() {
    let (mut worker, kids) = worker_with("bbn.port-check", 4096, 50_000_000, &["sysperf:reader"]);
    let pid = worker.id();
    // The FIFO's name served only to open it: already gone while the blocks flow.
    assert!(scratch_dirs(pid).is_empty(), "{:?}", scratch_dirs(pid));
    worker.kill().unwrap();
    worker.wait().unwrap();
    gone(&kids.iter().map(|k| k.0).collect::<Vec<_>>());
    assert!(scratch_dirs(pid).is_empty());
}

fn run_worker(id: &str, param: u64, iterations: u64) -> (u32, Value) {
    let w = Command::new(exe())
        .args(["__worker", &request(id, param, iterations)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = w.id();
    let out = w.wait_with_output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{id}: {}", String::from_utf8_lossy(&out.stderr)));
    assert!(out.status.success() && v["error"].is_null(), "{id}: {v}");
    (pid, v)
}

#[test]
fn a_completed_port_worker_removes_its_directory() {
    let (pid, _) = run_worker("bbn.port", 512, 1000);
    assert!(scratch_dirs(pid).is_empty(), "{:?}", scratch_dirs(pid));
}

#[test]
fn the_readers_usage_is_part_of_the_trial() {
    // The reader is reaped inside the timed region, so its resource usage is in the trial's.
    // Its 1 MiB buffer was filled before the fork: reading the first block into it takes one
    // copy-on-write fault per page, in the reader only (the bare writer never writes to its
    // buffer).
    let (_, v) = run_worker("bbn.pipe", 1 << 20, 3);
    let minflt = v["usage"]["minflt"].as_u64().unwrap();
    assert!(
        minflt >= 200,
        "{minflt} minor faults: the reader's were not counted"
    );
}
