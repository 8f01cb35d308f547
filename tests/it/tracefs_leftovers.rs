//! tracefs seen by `doctor` and the tidy-up before `run`/`trace`/`profile`/`doctor`, whether or
//! not anyone has mounted it (#14): a trace instance left by a killed sysperf is removed, and
//! tracing that someone else switched on is a doctor warning. Needs root (tracefs).

use crate::support as common;

use common::{json_of, sysperf};
use std::path::PathBuf;
use sysperf::trace::tracefs;

/// An instance made for the test, removed however the test ends.
struct Made(String);

impl Drop for Made {
    fn drop(&mut self) {
        let name = self.0.clone();
        tracefs::look(move |fs| std::fs::remove_dir(fs.root.join("instances").join(&name)));
    }
}

fn make(name: &str, events: &str) -> Made {
    let (name_c, events) = (name.to_string(), events.to_string());
    let made = tracefs::look(move |fs| {
        let dir: PathBuf = fs.root.join("instances").join(&name_c);
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("set_event"), events).unwrap();
    });
    assert!(made.is_some(), "tracefs not visible as root");
    Made(name.to_string())
}

fn exists(name: &str) -> bool {
    let name = name.to_string();
    tracefs::look(move |fs| fs.root.join("instances").join(&name).exists()).unwrap()
}

fn root() -> bool {
    if !sysperf::sys::is_root() {
        eprintln!("skipped: tracefs needs root");
        return false;
    }
    true
}

#[test]
fn a_killed_traces_instance_is_removed_even_where_tracefs_is_not_mounted() {
    let _tracing = crate::support::tracing();
    if !root() {
        return;
    }
    // Any sysperf starting now (another test, another checkout's tests) sweeps the same
    // instance; when one beats the doctor to it, plant it again.
    let mut named = false;
    for _ in 0..5 {
        let mut dead = std::process::Command::new("true").spawn().unwrap();
        let pid = dead.id();
        dead.wait().unwrap();
        let name = format!("sysperf-{pid}");
        let _made = make(&name, "raw_syscalls:sys_enter\n");
        assert!(exists(&name));
        let dir = tempfile::tempdir().unwrap();
        let out = sysperf(&dir.path().join("s.db"))
            .arg("doctor")
            .output()
            .unwrap();
        assert!(out.status.success());
        assert!(!exists(&name), "{name} still there");
        let err = String::from_utf8_lossy(&out.stderr);
        if err
            .lines()
            .any(|l| l.contains("tracefs instance(s)") && l.contains(&name))
        {
            named = true;
            break;
        }
    }
    assert!(named, "doctor never removed a stale instance itself");
    // The look mounted nothing the rest of the system (or this process) can see.
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    let before = tracefs::find_tracefs(&mounts).is_some();
    tracefs::look(|_| ());
    let after = tracefs::find_tracefs(&std::fs::read_to_string("/proc/self/mounts").unwrap());
    assert_eq!(after.is_some(), before);
}

#[test]
fn someone_elses_tracing_is_a_doctor_warning() {
    let _tracing = crate::support::tracing();
    if !root() {
        return;
    }
    let name = format!("othertracer{}", std::process::id());
    let _made = make(&name, "sched:sched_process_exec\n");
    let dir = tempfile::tempdir().unwrap();
    let out = sysperf(&dir.path().join("s.db"))
        .args(["doctor", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let doc = json_of(&out.stdout);
    let tracer = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "tracer")
        .unwrap_or_else(|| panic!("no tracer finding: {doc}"));
    assert_eq!(tracer["severity"], "warn");
    let title = tracer["title"].as_str().unwrap();
    assert!(
        title.contains(&name) && title.contains("sched:sched_process_exec"),
        "{title}"
    );
}
