//! The `swap` suite from the outside (root and zram; else the skip and its message): Table 7's
//! programs at the paper's ratio really page anonymous memory to a swap area (major faults per
//! touch, counted by the worker's rusage, beside Table 7's and Table 8's figures), and nothing
//! sysperf made for it (the zram devices, the cgroups) is left after a run, after Ctrl-C or after
//! SIGKILL and the next sysperf's sweep.

use crate::support as common;

use common::*;
use serde_json::Value;
use std::time::{Duration, Instant};
use sysperf::harness::zram;

/// The tests below watch /proc/swaps: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The zram devices in /proc/swaps.
fn zram_swaps() -> Vec<String> {
    std::fs::read_to_string("/proc/swaps")
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .filter(|d| d.starts_with("/dev/zram"))
        .map(str::to_string)
        .collect()
}

/// The owners of the zram swaps whose header is sysperf's.
fn sysperf_swap_owners() -> Vec<i32> {
    zram_swaps()
        .iter()
        .filter_map(|d| {
            let mut page = vec![0u8; sysperf::sys::page_size()];
            use std::io::Read;
            std::fs::File::open(d).ok()?.read_exact(&mut page).ok()?;
            zram::header_owner(&page)
        })
        .collect()
}

#[test]
fn the_papers_ratio_pages_to_swap_with_faults_beside_table_7_or_says_why_it_skipped() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("swap.db");
    let run = || {
        let out = sysperf(&db)
            .args(["run", "--suite", "swap.randpage", "--quick", "--json"])
            .timeout(Duration::from_secs(300))
            .output()
            .unwrap();
        json_of(&out.stdout)
    };
    let mut v = run();
    // Beside the other CLI tests (in parallel, on two CPUs) the point's one quick trial
    // failed once in several CI runs, with no summary. Once more, then fail saying why.
    let failed = |v: &Value| {
        v["series"].as_array().is_some_and(|s| {
            s.iter()
                .flat_map(|x| x["points"].as_array().into_iter().flatten())
                .any(|p| p["result"]["summary"].is_null())
        })
    };
    let zram = zram::check();
    if zram.is_ok() && failed(&v) {
        eprintln!("swap.randpage failed once, run again: {v}");
        v = run();
        assert!(!failed(&v), "swap.randpage failed twice: {v}");
    }
    if let Err(e) = zram {
        // Not root, or no zram: skipped, saying why and what the vm suite does instead.
        let skipped = v["warnings"].as_array().unwrap().iter().any(|w| {
            w["kind"] == "suite_skipped" && w["message"].as_str().unwrap().contains(&e.to_string())
        });
        assert!(skipped, "{v}");
        return;
    }
    let s = series_of(&v, "swap.randpage");
    let p = &s["points"][0];
    let sum = &p["result"]["summary"];
    // 7.3 MB over 4.5 MB: the program may keep 62% of its pages; the others go to swap and a
    // touch of one is a major fault (the paper's 4.2BSD: 9776 faults in 30,000 touches).
    assert!((p["x"].as_f64().unwrap() - 7.3 / 4.5).abs() < 1e-9, "{p}");
    let majflt = sum["majflt_per_op"].as_f64().unwrap();
    assert!(
        majflt > 0.05,
        "{majflt} major faults per touch: nothing paged"
    );
    let derived: Vec<&Value> = v["derived"].as_array().unwrap().iter().collect();
    let named = |start: &str| {
        derived
            .iter()
            .find(|d| d["name"].as_str().unwrap().starts_with(start))
            .unwrap_or_else(|| panic!("no {start}: {v}"))
    };
    let per_touch = named("major faults per touch (swap.randpage@");
    assert_eq!(per_touch["value"].as_f64().unwrap(), majflt);
    assert!(
        per_touch["formula"]
            .as_str()
            .unwrap()
            .contains("4.2BSD 9776 in 30000 = 0.3259"),
        "{per_touch}"
    );
    let pfst = named("page-fault service time (swap.randpage@");
    assert!(
        pfst["formula"].as_str().unwrap().contains("4.2BSD 789 us"),
        "{pfst}"
    );
}

#[test]
fn a_killed_run_leaves_its_swap_device_to_the_next_sysperf_which_removes_it() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if zram::check().is_err() {
        eprintln!("skipped: needs root and zram");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("swap.db");
    // seqpage at the paper's ratio takes a second or more: long enough to catch a trial.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_sysperf"))
        .args(["run", "--suite", "swap.seqpage", "--quick", "--db"])
        .arg(&db)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let t0 = Instant::now();
    while !sysperf_swap_owners().contains(&pid) {
        assert!(
            t0.elapsed() < Duration::from_secs(120) && child.try_wait().unwrap().is_none(),
            "no swap device of {pid} appeared"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // SIGKILL: no Drop runs; the device stays, swapped on, recorded under /run.
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(sysperf_swap_owners().contains(&pid));
    // The next sysperf that examines the machine removes it, and says so.
    let out = sysperf(&db).args(["doctor"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!sysperf_swap_owners().contains(&pid), "{err}");
    assert!(
        err.contains("zram swap device(s) left by sysperf processes that were killed"),
        "{err}"
    );
    let records: Vec<_> = std::fs::read_dir(zram::RECORDS)
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .starts_with(&format!("{pid}-"))
                })
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    assert!(records.is_empty(), "{records:?}");
}

#[test]
fn ctrl_c_removes_the_swap_device_at_once() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if zram::check().is_err() {
        eprintln!("skipped: needs root and zram");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("swap.db");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_sysperf"))
        .args(["run", "--suite", "swap.seqpage", "--quick", "--db"])
        .arg(&db)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let t0 = Instant::now();
    while !sysperf_swap_owners().contains(&pid) {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "no swap device of {pid}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    interrupt(&child);
    child.wait().unwrap();
    assert!(!sysperf_swap_owners().contains(&pid), "left after Ctrl-C");
}
