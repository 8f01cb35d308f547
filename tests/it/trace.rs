//! `sysperf trace`: the figures the kernel's own trace points give (exact system-call counts,
//! about two context switches per pipe round trip), bad input, and cleanup: no tracefs
//! instance, worker or child outlives the command, Ctrl-C and failures included.
//!
//! Tracing needs root (CI runs as root). Elsewhere the tests that trace print why they skip;
//! with CI set they fail instead. Nothing here depends on speed.

use assert_cmd::Command;
use serde_json::Value;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::support as common;
use common::*;

fn sysperf() -> Command {
    let mut c = Command::cargo_bin("sysperf").unwrap();
    c.env("NO_COLOR", "1");
    c
}

fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_sysperf")
}

/// Whether this machine lets sysperf trace, found by tracing once; the reason when not.
fn permitted() -> bool {
    static OK: OnceLock<Result<(), String>> = OnceLock::new();
    let r = OK.get_or_init(|| {
        let out = std::process::Command::new(exe())
            .args([
                "trace",
                "syscall",
                "--iterations",
                "1",
                "--events",
                "syscalls",
            ])
            .output()
            .unwrap();
        if out.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
        }
    });
    match r {
        Ok(()) => true,
        Err(why) => {
            assert!(
                std::env::var("CI").is_err(),
                "tracing must work on CI (root, tracefs): {why}"
            );
            eprintln!("skipping: sysperf cannot trace here: {why}");
            false
        }
    }
}

fn traced_json(args: &[&str]) -> Value {
    let out = sysperf()
        .arg("trace")
        .args(args)
        .arg("--json")
        .timeout(Duration::from_secs(300))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(v["format"], "sysperf-trace");
    for r in v["runs"].as_array().unwrap() {
        assert_eq!(r["lost_events"], 0, "{args:?}: {r}");
    }
    v
}

fn calls_per_op(v: &Value, name: &str) -> f64 {
    v["syscalls"]["by_name"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {}", v["syscalls"]))["per_op"]
        .as_f64()
        .unwrap()
}

#[test]
fn syscall_makes_exactly_one_system_call_per_operation() {
    let _tracing = crate::support::tracing();
    if !permitted() {
        return;
    }
    let v = traced_json(&["syscall"]);
    let total = v["syscalls"]["total"]["per_op"].as_f64().unwrap();
    assert!((total - 1.0).abs() < 1e-9, "{}", v["syscalls"]);
    assert!((calls_per_op(&v, "getpid") - 1.0).abs() < 1e-9);
    assert_eq!(v["bench"], "syscall");
    assert_eq!(v["runs"].as_array().unwrap().len(), 2);
}

#[test]
fn pipeself4_makes_a_write_and_a_read_per_message() {
    let _tracing = crate::support::tracing();
    if !permitted() {
        return;
    }
    let v = traced_json(&["pipeself4", "--iterations", "1000"]);
    let total = v["syscalls"]["total"]["per_op"].as_f64().unwrap();
    assert!((total - 2.0).abs() < 1e-9, "{}", v["syscalls"]);
    assert!((calls_per_op(&v, "write") - 1.0).abs() < 1e-9);
    assert!((calls_per_op(&v, "read") - 1.0).abs() < 1e-9);
}

#[test]
fn pipeback4_switches_context_about_twice_per_round_trip_on_one_cpu() {
    let _tracing = crate::support::tracing();
    if !permitted() {
        return;
    }
    let v = traced_json(&["pipeback4", "--placement", "same"]);
    assert_eq!(v["placement"], "same");
    let sw = v["sched"]["switches"]["per_op"].as_f64().unwrap();
    assert!((1.5..=3.0).contains(&sw), "{sw} switches per round trip");
    let calls = v["syscalls"]["total"]["per_op"].as_f64().unwrap();
    assert!((calls - 4.0).abs() < 1e-9, "{calls} calls per round trip");
    let wake = &v["sched"]["wakeup_latency_us"];
    assert!(wake["n"].as_u64().unwrap() > 0, "{wake}");
    assert!(wake["median"].as_f64().unwrap() <= wake["p95"].as_f64().unwrap());
}

#[test]
fn every_set_and_a_raw_trace() {
    let _tracing = crate::support::tracing();
    if !permitted() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("raw.txt");
    let v = traced_json(&[
        "forks0",
        "--iterations",
        "20",
        "--events",
        "syscalls,sched,pagecache,block,exceptions:page_fault_user",
        "--raw",
        raw.to_str().unwrap(),
    ]);
    // forks0: one fork (clone), one wait and one exit per operation (strace cannot count the
    // exit, which never returns; the trace point sees it enter); each fork makes a process.
    assert!((calls_per_op(&v, "clone") - 1.0).abs() < 1e-9);
    assert!((calls_per_op(&v, "wait4") - 1.0).abs() < 1e-9);
    assert!((calls_per_op(&v, "exit_group") - 1.0).abs() < 1e-9);
    assert!((v["sched"]["forks"]["per_op"].as_f64().unwrap() - 1.0).abs() < 1e-9);
    for k in ["pagecache", "block"] {
        assert!(v[k].is_object(), "{k} missing");
    }
    assert!(v["events_per_op"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["name"] == "exceptions:page_fault_user"));
    let text = std::fs::read_to_string(&raw).unwrap();
    assert!(text.contains("sys_enter: NR"), "raw trace without events");
    assert!(text.contains("run 2 of 2"));
    // Other processes' scheduling events: readable by the owner only, whatever the umask.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&raw).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
}

/// Names of the sysperf instances in tracefs, wherever it is mounted (or, if it is not, seen
/// through a private mount that vanishes with the listing command).
fn sysperf_instances() -> Vec<String> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    let names = match mounts
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.get(2) == Some(&"tracefs"))
    {
        Some(f) => std::fs::read_dir(format!("{}/instances", f[1]))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect::<Vec<_>>(),
        None => {
            let out = std::process::Command::new("unshare")
                .args([
                    "-m",
                    "--propagation",
                    "slave",
                    "sh",
                    "-c",
                    "mount -t tracefs nodev /sys/kernel/tracing && ls -1 /sys/kernel/tracing/instances",
                ])
                .output()
                .expect("unshare (util-linux) lists tracefs instances when tracefs is not mounted");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(String::from)
                .collect()
        }
    };
    names
        .into_iter()
        .filter(|n| n.starts_with("sysperf-"))
        .collect()
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Fails if the instance `mine` (sysperf-<pid>) or one of its siblings (sysperf-<pid>-block)
/// is still in tracefs.
fn assert_instances_gone(mine: &str) {
    let left = sysperf_instances();
    assert!(
        !left
            .iter()
            .any(|n| n == mine || n.starts_with(&format!("{mine}-"))),
        "{left:?}"
    );
}

/// Starts a trace of csw long enough to be stopped midway, tagged `tag`, and waits for its
/// tracefs instance; returns the process and the instance's name.
fn long_trace(dir: &std::path::Path, tag: &str) -> (std::process::Child, String) {
    let child = spawn_tagged(
        &dir.join("s.db"),
        tag,
        &["trace", "csw", "--iterations", "100000000"],
    );
    let mine = format!("sysperf-{}", child.id());
    wait_for("the instance", || sysperf_instances().contains(&mine));
    (child, mine)
}

#[test]
fn ctrl_c_midway_leaves_no_instance_worker_or_child() {
    let _tracing = crate::support::tracing();
    if !permitted() {
        return;
    }
    let tag = &unique_tag("trace-ctrl-c");
    let tmp = tempfile::tempdir().unwrap();
    let (mut child, mine) = long_trace(tmp.path(), tag);
    // Midway: the traced worker and its child are running.
    wait_for("the worker and its child", || {
        leftover_workers(tag).len() >= 2
    });
    std::thread::sleep(Duration::from_millis(200));
    interrupt(&child);
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("sysperf trace did not stop on SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert_instances_gone(&mine);
    assert_nothing_left(tag);
}

#[test]
fn a_run_that_times_out_fails_and_leaves_nothing() {
    let _tracing = crate::support::tracing();
    if !permitted() {
        return;
    }
    let tag = &unique_tag("trace-timeout");
    let tmp = tempfile::tempdir().unwrap();
    let child = spawn_tagged(
        &tmp.path().join("s.db"),
        tag,
        &[
            "trace",
            "pipeback4",
            "--iterations",
            "100000000",
            "--timeout",
            "0.5",
            "--events",
            "sched,block",
        ],
    );
    let mine = format!("sysperf-{}", child.id());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("timed out"), "{err}");
    // Neither of its instances (main and block) nor its workers remain.
    assert_instances_gone(&mine);
    assert_nothing_left(tag);
}

#[test]
fn unknown_events_are_bad_input_with_suggestions() {
    let _tracing = crate::support::tracing();
    if !permitted() {
        return;
    }
    let out = sysperf()
        .args(["trace", "syscall", "--events", "sched:sched_swich"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("did you mean sched:sched_switch"), "{err}");
}

#[test]
fn without_privilege_one_line_says_what_is_missing() {
    let _tracing = crate::support::tracing();
    // Runs sysperf as nobody, which only root can arrange.
    if !std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
    {
        eprintln!("skipping: not root, so cannot run sysperf as another user");
        return;
    }
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", exe()])
        .args(["trace", "syscall"])
        .output();
    let Ok(out) = out else {
        eprintln!("skipping: setpriv (util-linux) is not installed");
        return;
    };
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("Permission denied") && !err.contains("sysperf") {
        eprintln!("skipping: user nobody cannot run {}: {err}", exe());
        return;
    }
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("root"), "{err}");
    assert!(err.contains("CAP_SYS_ADMIN"), "{err}");
}

#[test]
fn bad_usage_is_exit_2_before_anything_is_traced() {
    let _tracing = crate::support::tracing();
    let cases: &[(&[&str], &str)] = &[
        (
            &["trace", "syscall", "--events", "schedd"],
            "did you mean sched",
        ),
        (&["trace", "syscall", "--events", ""], "at least one"),
        (&["trace", "syscall", "--events", "a:b c"], "system:name"),
        (&["trace", "syscall", "--buffer-kb", "0"], "buffer-kb"),
        (&["trace", "syscall", "--buffer-kb", "1048577"], "buffer-kb"),
        (&["trace", "syscall", "--buffer-kb", "-1"], "buffer-kb"),
        (&["trace", "syscall", "--iterations", "0"], "iterations"),
        (&["trace", "pipe*"], "trace takes one benchmark"),
        (&["trace", "pipebak4"], "did you mean pipeback4"),
        (
            &["trace", "syscall", "--raw", "/nonexistent-dir/x"],
            "--raw",
        ),
        (
            &["trace", "pipeback4", "--placement", "spread", "--cpu", "0"],
            "spread needs two CPUs",
        ),
        (&["trace"], "ID"),
    ];
    for (args, needle) in cases {
        let err = usage_error(sysperf().args(*args));
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn an_instance_left_by_a_killed_sysperf_is_removed_by_the_next_trace() {
    let _tracing = crate::support::tracing();
    if !permitted() {
        return;
    }
    let tag = &unique_tag("trace-sigkill");
    let tmp = tempfile::tempdir().unwrap();
    let (mut child, mine) = long_trace(tmp.path(), tag);
    // SIGKILL: no cleanup can run; the workers die with their parent (PR_SET_PDEATHSIG).
    child.kill().unwrap();
    child.wait().unwrap();
    wait_for("the workers to die", || leftover_workers(tag).is_empty());
    let out = sysperf()
        .args([
            "trace",
            "syscall",
            "--iterations",
            "10",
            "--events",
            "syscalls",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // This trace removed it (and said so), unless a trace of a parallel test came first.
    assert!(!sysperf_instances().contains(&mine), "{err}");
}

#[test]
fn lost_events_are_reported_and_fail_the_command() {
    let _tracing = crate::support::tracing();
    if !permitted() {
        return;
    }
    // 5000 system calls cannot fit in 8 KB; the buffer was chosen, so it is not raised.
    let out = sysperf()
        .args([
            "trace",
            "syscall",
            "--iterations",
            "5000",
            "--buffer-kb",
            "8",
            "--json",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("events were lost"), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["runs"][1]["lost_events"].as_u64().unwrap() > 0);
    assert!(v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("raise --buffer-kb")));
}
