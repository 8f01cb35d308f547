//! Two sysperf runs of one suite at the same time, beside a CPU hog on every CPU (#36): two
//! people on one machine, or a scheduled run overlapping a hand-run one. Both runs must
//! succeed, store every series of the suite with every quick point measured (no series may
//! fail, as `libs.host-nscd` did when its private daemon was not listening yet), and leave
//! nothing behind: no process, scratch directory, network namespace, veth or TUN link, nor
//! memory cgroup (of a pid seen among the runs' processes, watched while they ran). For
//! `libs`, `net`, `vm` and `scaling`, the suites that make such things.
//!
//! Needs root (the private mounts, the name-service daemon, the long haul's namespaces, the
//! memory cgroups): skipped with a message as another user, except on CI (CI=true), where it
//! fails. The suites run one at a time (each test takes a lock), so that CI's two cores see
//! two sysperfs and the hog, not eight sysperfs. Nothing here depends on speed.

use crate::support as common;

use common::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// One suite's pair at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

#[test]
fn two_libs_runs_at_once_under_load_both_store_everything_and_leave_nothing() {
    two_at_once("libs");
}

#[test]
fn two_net_runs_at_once_under_load_both_store_everything_and_leave_nothing() {
    two_at_once("net");
}

#[test]
fn two_vm_runs_at_once_under_load_both_store_everything_and_leave_nothing() {
    two_at_once("vm");
}

#[test]
fn two_scaling_runs_at_once_under_load_both_store_everything_and_leave_nothing() {
    two_at_once("scaling");
}

/// Whether this test can run here; as non-root it says why not (and fails on CI).
fn root_or_skip(suite: &str) -> bool {
    if sysperf::sys::is_root() {
        return true;
    }
    assert!(
        std::env::var("CI").is_err(),
        "CI runs as root: two concurrent {suite} runs need it"
    );
    eprintln!(
        "skipped: two concurrent {suite} runs need root (private mounts, namespaces, cgroups)"
    );
    false
}

/// A busy loop on every CPU, stopped (and joined) when dropped.
struct Hog {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Hog {
    fn start() -> Hog {
        let stop = Arc::new(AtomicBool::new(false));
        let n = std::thread::available_parallelism().map_or(2, |n| n.get());
        let threads = (0..n)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                    }
                })
            })
            .collect();
        Hog { stop, threads }
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The series of `suite` and the number of points of each in a quick run, as `list` says.
fn planned(suite: &str) -> BTreeMap<String, usize> {
    let dir = tempfile::tempdir().unwrap();
    let v = success_json(sysperf(&dir.path().join("x.db")).args(["list", "--suites", "--json"]));
    let s = v
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == suite)
        .unwrap_or_else(|| panic!("no suite {suite} in list --suites"));
    s["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["id"].as_str().unwrap().to_string(),
                x["quick_points"].as_array().unwrap().len(),
            )
        })
        .collect()
}

/// Every sysperf-named thing outside a store that a run may make, with the pid of its owner:
/// scratch directories in the shared bases (/dev/shm, /var/tmp, the temporary directory),
/// network namespaces, veth and TUN links, and memory cgroups where this process could make
/// them.
fn named_things() -> BTreeSet<(String, i32)> {
    use sysperf::harness::janitor;
    let mut out = BTreeSet::new();
    let mut list = |dir: &Path, owner: &dyn Fn(&str) -> Option<i32>| {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(pid) = owner(&name) {
                out.insert((e.path().display().to_string(), pid));
            }
        }
    };
    for base in janitor::scratch_bases() {
        list(&base, &janitor::owner_pid);
    }
    let link = |n: &str| janitor::link_owner(n).map(|p| p as i32);
    list(Path::new("/run/netns"), &link);
    list(Path::new("/sys/class/net"), &link);
    for root in sysperf::harness::cgroup::Root::candidates().unwrap_or_default() {
        list(&root.dir, &janitor::owner_pid);
    }
    out
}

/// What appeared in [`named_things`] since `before` and is owned by one of `ours` (the
/// processes of the two runs), all of them gone now: left behind. Other sysperfs may run on
/// this machine meanwhile (other tests, other people), and some leave things on purpose (a
/// test that kills a worker to see the next run sweep): theirs are not this test's.
fn left_since(before: &BTreeSet<(String, i32)>, ours: &BTreeSet<u32>) -> Vec<String> {
    named_things()
        .difference(before)
        .filter(|(_, pid)| u32::try_from(*pid).is_ok_and(|p| ours.contains(&p)))
        .map(|(p, pid)| format!("{p} (pid {pid})"))
        .collect()
}

/// The pids of the processes tagged with `tags` (see [`tagged_processes`]), gathered every
/// 10 ms until `stop`: the two runs, their workers, their workers' children.
fn watch(tags: [String; 2], stop: Arc<AtomicBool>) -> std::thread::JoinHandle<BTreeSet<u32>> {
    std::thread::spawn(move || {
        let mut seen = BTreeSet::new();
        let tags = [tags[0].as_str(), tags[1].as_str()];
        while !stop.load(Ordering::Relaxed) {
            seen.extend(tagged_processes(&tags).into_iter().map(|(pid, _)| pid));
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        seen
    })
}

/// One of the two runs: its store and scratch directory, and the tag of its processes.
struct Run {
    dir: tempfile::TempDir,
    tag: String,
}

impl Run {
    /// Starts `sysperf run --quick --suite SUITE --json` with a store and TMPDIR of its own.
    fn start(suite: &str, n: usize) -> (Run, std::process::Child) {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("tmp");
        std::fs::create_dir(&tmp).unwrap();
        let tag = unique_tag(&format!("concurrent-{suite}-{n}"));
        let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("sysperf"))
            .env("SYSPERF_DB", dir.path().join("x.db"))
            .env("SYSPERF_TEST_TAG", &tag)
            .env("NO_COLOR", "1")
            .env("TMPDIR", &tmp)
            .args(["run", "--quick", "--suite", suite, "--json"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        (Run { dir, tag }, child)
    }

    fn db(&self) -> PathBuf {
        self.dir.path().join("x.db")
    }

    fn scratch(&self) -> PathBuf {
        self.dir.path().join("tmp")
    }
}

/// Fails unless `v` holds every series of `plan` with all its points measured and none
/// failed (`who` names the run in messages).
fn assert_everything_measured(who: &str, v: &Value, plan: &BTreeMap<String, usize>) {
    let series = v["series"].as_array().unwrap();
    let mut got = BTreeMap::new();
    for s in series {
        let id = s["id"].as_str().unwrap().to_string();
        assert!(s["error"].is_null(), "{who}: {id} failed: {}", s["error"]);
        let points = s["points"].as_array().unwrap();
        for p in points {
            assert!(
                p["y"]["median"].as_f64().is_some_and(|m| m > 0.0),
                "{who}: {id} has a point without a measurement: {p}"
            );
        }
        got.insert(id, points.len());
    }
    assert_eq!(
        &got, plan,
        "{who}: the series stored (id: points) are not the suite's"
    );
}

fn two_at_once(suite: &str) {
    if !root_or_skip(suite) {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // The vm suite is skipped (with a warning) where no memory cgroup can be made, even as
    // root (cgroup v2 without a delegated parent); then both runs must say so.
    let skipped = suite == "vm" && sysperf::harness::cgroup::Limited::create(64 << 20).is_err();
    let plan = if skipped {
        eprintln!("no memory cgroup here: the vm runs must both say they skipped");
        BTreeMap::new()
    } else {
        planned(suite)
    };
    let before = named_things();
    let hog = Hog::start();
    let started = [Run::start(suite, 1), Run::start(suite, 2)];
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = watch(
        [started[0].0.tag.clone(), started[1].0.tag.clone()],
        stop.clone(),
    );
    let outs: Vec<(Run, std::process::Output)> = started
        .into_iter()
        .map(|(run, child)| (run, child.wait_with_output().unwrap()))
        .collect();
    stop.store(true, Ordering::Relaxed);
    let ours = watcher.join().unwrap();
    drop(hog);
    // The two runs and some of their workers at least, or nothing left could be found.
    assert!(ours.len() >= 4, "the watcher saw only {ours:?}");
    for (i, (run, out)) in outs.iter().enumerate() {
        let who = format!("{suite} run {}", i + 1);
        assert!(
            out.status.success(),
            "{who} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let v = json_of(&out.stdout);
        assert_everything_measured(&who, &v, &plan);
        if skipped {
            let warnings = v["warnings"].as_array().unwrap();
            let said = warnings.iter().any(|w| w["kind"] == "suite_skipped");
            assert!(said, "{who}: {v}");
        }
        // Stored as printed: the store holds every series too.
        let id = v["id"].as_str().unwrap();
        let shown = success_json(sysperf(&run.db()).args(["show", id, "--json"]));
        assert_everything_measured(&format!("{who}, stored"), &shown, &plan);
        assert_eq!(
            files_in(&run.scratch()),
            Vec::<String>::new(),
            "{who}: scratch left"
        );
        let left = tagged_processes(&[&run.tag]);
        assert!(left.is_empty(), "{who}: processes left: {left:?}");
    }
    let left = left_since(&before, &ours);
    assert!(left.is_empty(), "{suite}: left behind: {left:?}");
}
