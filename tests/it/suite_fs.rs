//! The `fs` suite from the outside (root, loop devices, mkfs.ext4; else skipped): the grown
//! files are written 1 KiB at a time, the file systems have the block size asked for with the
//! loop device reading its file directly, and a worker killed outright leaves no loop device,
//! no mount and, after the next sysperf's sweep, no directory.

use crate::support as common;

use common::*;
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn fs_here() -> bool {
    let ok = sysperf::sys::is_root() && std::path::Path::new("/dev/loop-control").exists();
    if !ok {
        eprintln!("skipped: needs root and loop devices");
    }
    ok
}

/// Calls of `name` per operation of point `id`@`x`, from runs of `lo` and `hi` operations.
fn per_op(id: &str, x: u64, lo: u64, hi: u64, name: &str) -> f64 {
    let count = |n: u64| {
        strace_point(&["-c", "-U", "calls,name"], id, x, n)
            .concat()
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.len() == 2 && f[1] == name).then(|| f[0].parse::<f64>().unwrap())
            })
            .sum::<f64>()
    };
    (count(hi) - count(lo)) / (hi - lo) as f64
}

#[test]
fn files_grow_by_their_writes_and_are_written_back() {
    if !fs_here() || !strace_available() {
        return;
    }
    // 8 KiB in writes of 1 KiB: 8 writes and one create per file (§4.1.6's slow growth).
    assert_eq!(per_op("fs.grow-1k", 1024, 8, 24, "write"), 8.0);
    assert_eq!(per_op("fs.grow-4k", 4096, 8, 24, "write"), 2.0);
    assert_eq!(per_op("fs.grow-1k", 4096, 8, 24, "openat"), 1.0);
}

/// The loop devices attached now, with their backing files.
fn loops() -> Vec<(String, String)> {
    std::fs::read_dir("/sys/block")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let b = std::fs::read_to_string(e.path().join("loop/backing_file")).ok()?;
            Some((name, b.trim().to_string()))
        })
        .collect()
}

#[test]
fn a_killed_worker_leaves_no_loop_device_and_no_mount() {
    if !fs_here() {
        return;
    }
    let req = point_request("fs.block-read", 4096, 1_000_000);
    let mut worker = Command::new(env!("CARGO_BIN_EXE_sysperf"))
        .args(["__worker", &req])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = worker.id();
    // Its file system: a loop device of its own over a deleted file, mounted where only it sees.
    let t0 = Instant::now();
    let (dev, mount) = loop {
        let mounts = std::fs::read_to_string(format!("/proc/{pid}/mounts")).unwrap_or_default();
        let ours = mounts
            .lines()
            .find(|l| l.starts_with("/dev/loop") && l.contains("sysperf-fs-"))
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (
                    f[0].trim_start_matches("/dev/").to_string(),
                    f[1].to_string(),
                )
            });
        if let Some(found) = ours {
            break found;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60) && worker.try_wait().unwrap().is_none(),
            "no loop mount in the worker"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let backing: Vec<String> = loops()
        .into_iter()
        .filter(|(n, _)| *n == dev)
        .map(|(_, b)| b)
        .collect();
    assert!(
        backing.len() == 1 && backing[0].contains("(deleted)"),
        "{backing:?}"
    );
    // Direct I/O to the backing file: no second page cache under the file system.
    let dio = std::fs::read_to_string(format!("/sys/block/{dev}/loop/dio")).unwrap();
    assert_eq!(dio.trim(), "1");
    // Not in this process's mount namespace.
    let here = std::fs::read_to_string("/proc/self/mounts").unwrap();
    assert!(
        !here.contains(&mount),
        "the worker's mount is seen outside it"
    );
    worker.kill().unwrap();
    worker.wait().unwrap();
    // The namespace went with it, the file system with the namespace, the device with that.
    let t0 = Instant::now();
    while loops().iter().any(|(n, b)| *n == dev && *b == backing[0]) {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "{dev} still attached: {:?}",
            loops()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The empty mount point is the janitor's: the next sysperf removes it.
    let tmp = tempfile::tempdir().unwrap();
    let out = sysperf(&tmp.path().join("s.db"))
        .args(["doctor"])
        .output()
        .unwrap();
    assert!(
        !std::path::Path::new(&mount).exists(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn quick_run_stores_the_four_curves() {
    if !fs_here() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let v = json_of(
        &sysperf(&tmp.path().join("s.db"))
            .args(["run", "--suite", "fs", "--quick", "--json"])
            .timeout(Duration::from_secs(600))
            .output()
            .unwrap()
            .stdout,
    );
    for id in ["fs.cache-size", "fs.block-read", "fs.grow-1k", "fs.grow-4k"] {
        let s: &Value = series_of(&v, id);
        for p in s["points"].as_array().unwrap() {
            assert!(p["y"]["median"].as_f64().unwrap() > 0.0, "{id}: {p}");
        }
    }
}
