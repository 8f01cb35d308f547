//! The `vm` suite from the outside: the stored series of a quick run, major faults really
//! taken under the cgroup's limit (counted by the worker's rusage), and every per-trial cgroup
//! removed whatever happens to the trial: success, a failing benchmark, a timeout, Ctrl-C.
//!
//! Memory cgroups need root or a delegated cgroup; without one the suite must be skipped with
//! a message saying so, which is what these tests then check instead.

use crate::support as common;

use common::*;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use sysperf::harness::cgroup::{Limited, Root};
use sysperf::harness::{self, placement, Target};

/// The tests below share this process's `sysperf-<pid>-*` names: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_sysperf")
}

/// Whether this machine lets us make memory cgroups (root, or a delegated cgroup).
fn cgroups_here() -> bool {
    match Limited::create(64 << 20) {
        Ok(_) => true,
        Err(e) => {
            eprintln!("no memory cgroup here ({e}): checking the skip path only");
            false
        }
    }
}

/// Directories named `sysperf-<pid>-*` in every place cgroups are made.
fn cgroups_of(pid: u32) -> Vec<PathBuf> {
    let prefix = format!("sysperf-{pid}-");
    Root::candidates()
        .unwrap_or_default()
        .iter()
        .filter_map(|r| std::fs::read_dir(&r.dir).ok())
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

fn assert_no_cgroup_of(pid: u32) {
    let left = cgroups_of(pid);
    assert!(left.is_empty(), "cgroups left behind: {left:?}");
}

#[test]
fn quick_run_stores_one_curve_per_pattern_or_says_why_it_skipped() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("vm.db");
    let out = sysperf(&db)
        .args(["run", "--suite", "vm", "--quick", "--json"])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let v = json_of(&out.stdout);
    if !cgroups_here() {
        assert!(
            v["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w["kind"] == "suite_skipped"
                    && w["message"]
                        .as_str()
                        .unwrap()
                        .contains("needs permission to create a memory cgroup")),
            "{v}"
        );
        return;
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let series = v["series"].as_array().unwrap();
    let ids: Vec<&str> = series.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "vm.seqpage",
            "vm.seqpage-v",
            "vm.randpage",
            "vm.randpage-v",
            "vm.gausspage.1",
            "vm.gausspage.10",
            "vm.gausspage.30",
            "vm.gausspage.40",
            "vm.gausspage.50",
            "vm.gausspage.60",
            "vm.gausspage.80",
            "vm.gausspage.inf"
        ]
    );
    // Every row of Table 7, each with its published 4.2BSD point.
    assert_eq!(
        series.len(),
        sysperf::reference::find("vax750-4.2bsd")
            .unwrap()
            .unwrap()
            .results
            .iter()
            .filter(|r| r.id.contains("page"))
            .count()
    );
    for s in series {
        assert_eq!(s["figure"], "vm.paging");
        assert_eq!(s["y_kind"], "cost_ns", "{}", s["id"]);
        assert_eq!(s["paper_points"].as_array().unwrap().len(), 1);
        let pts = s["points"].as_array().unwrap();
        assert_eq!(pts.len(), 1, "{}", s["id"]);
        let p = &pts[0];
        assert_eq!(p["x"], 2.0);
        assert!(p["label"].as_str().unwrap().contains("limit"), "{p}");
        assert!(p["y"]["median"].as_f64().unwrap() > 0.0, "{}", s["id"]);
        // Every trial began cold, so even the narrowest walk read some page from the disk.
        assert!(
            p["result"]["summary"]["majflt_per_op"].as_f64().unwrap() > 0.0,
            "{}",
            s["id"]
        );
    }
    let notes: Vec<&str> = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("memory.limit_in_bytes at") || n.contains("memory.max at")),
        "{notes:?}"
    );
    assert!(
        notes.iter().any(|n| n.contains("file-backed pages in")),
        "{notes:?}"
    );
    // Table 8's figure for every point that took major faults.
    assert!(v["derived"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["name"] == "page-fault service time (vm.randpage-v@2x-limit-1024k)"));
}

/// One worker run of randpage-v (no read-around: one page read per fault) over `npages`
/// pages, 4 touches a page, in `cgroup` if given; returns its report.
fn randpage_v(npages: usize, cgroup: Option<&str>) -> Value {
    let req = json!({
        "id": "vm.randpage-v",
        "param": sysperf::suite::vm::param(npages, 4 * npages),
        "iterations": 1,
        "pin": null,
        "child_cpu": null,
        "cgroup": cgroup,
    });
    let out = Command::new(exe())
        .args(["__worker", &req.to_string()])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    assert!(v["error"].is_null(), "{v}");
    v
}

#[test]
fn under_the_limit_random_touches_take_major_faults() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !cgroups_here() {
        return;
    }
    let npages = 512;
    let touches = 4 * npages as u64;
    let ws = (npages * 4096) as u64;
    // A quarter of the working set fits: about three touches in four miss.
    let limited = Limited::create(ws / 4 + sysperf::suite::vm::WORKER_ALLOWANCE).unwrap();
    let path = limited.path().display().to_string();
    let tight = randpage_v(npages, Some(&path))["usage"]["majflt"]
        .as_u64()
        .unwrap();
    drop(limited);
    // Unlimited, only the first touch of each page reads it (about 98% of them are touched).
    let free = randpage_v(npages, None)["usage"]["majflt"]
        .as_u64()
        .unwrap();
    assert!(
        tight >= touches / 4,
        "{tight} major faults for {touches} touches"
    );
    assert!(
        free <= npages as u64,
        "{free} major faults for {npages} pages"
    );
    assert!(tight >= 2 * free, "limited {tight} vs unlimited {free}");
    assert_no_cgroup_of(std::process::id());
}

fn target(request_id: &str, npages: usize) -> Target {
    Target {
        request_id: request_id.into(),
        param: Some(sysperf::suite::vm::param(npages, 4 * npages)),
        id: format!("{request_id}@test"),
        group: "vm".into(),
        unit: "touch".into(),
        ops_per_iteration: 4 * npages as u64,
        paper_count: 1,
        iterations: Some(1),
        memory_limit_bytes: Some(
            ((npages * 4096) / 2) as u64 + sysperf::suite::vm::WORKER_ALLOWANCE,
        ),
        swap_bytes: None,
        task: None,
        command: None,
    }
}

fn measure(t: &Target, timeout: Duration) -> sysperf::model::BenchResult {
    let cpus = placement::CpuChoice::new(None, &sysperf::sys::get_affinity().unwrap()).unwrap();
    let plan =
        placement::plan(placement::Mode::Same, sysperf::bench::Shape::Single, &cpus).unwrap();
    let opts = harness::Options {
        worker_exe: exe().into(),
        trials: 2,
        min_time: Duration::from_millis(10),
        warmup: false,
        mode: placement::Mode::Same,
        cpus,
        timeout,
        observe: false,
    };
    let stop = AtomicBool::new(false);
    harness::measure(t, &plan, &opts, None, &stop, &|_| {})
        .unwrap()
        .0
}

#[test]
fn the_harness_removes_each_trials_cgroup_on_success_failure_and_timeout() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let me = std::process::id();
    if !cgroups_here() {
        // The trial fails with the reason instead of running unlimited.
        let r = measure(&target("vm.randpage-v", 64), Duration::from_secs(30));
        let e = r.error.unwrap();
        assert!(e.contains("cgroup"), "{e}");
        return;
    }
    let ok = measure(&target("vm.randpage-v", 128), Duration::from_secs(60));
    assert!(ok.error.is_none(), "{:?}", ok.error);
    assert_eq!(
        ok.trials.len(),
        2,
        "two trials (a fixed count: no calibration)"
    );
    assert_no_cgroup_of(me);

    let failing = measure(&target("vm.no-such-series", 128), Duration::from_secs(60));
    let e = failing.error.unwrap();
    assert!(e.contains("unknown benchmark"), "{e}");
    assert_no_cgroup_of(me);

    // Killed at 1 ms: in setup or in the walk, with its process group, then its cgroup goes.
    let hung = measure(&target("vm.randpage-v", 1024), Duration::from_millis(1));
    let e = hung.error.unwrap();
    assert!(e.contains("timed out"), "{e}");
    assert_no_cgroup_of(me);
}

#[test]
fn ctrl_c_mid_suite_leaves_no_cgroup_and_no_process() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !cgroups_here() {
        return;
    }
    let tag = unique_tag("vm-ctrl-c");
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("vm.db");
    let mut child = spawn_tagged(&db, &tag, &["run", "--suite", "vm", "--json"]);
    let pid = child.id();
    // Wait until a trial runs in its cgroup, then interrupt.
    let deadline = Instant::now() + Duration::from_secs(60);
    while cgroups_of(pid).is_empty() {
        assert!(Instant::now() < deadline, "no trial cgroup appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    interrupt(&child);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "interrupted runs exit 130");
    assert_no_cgroup_of(pid);
    assert_nothing_left(&tag);
}
