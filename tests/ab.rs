//! `sysperf ab --switch` (#19 item 4): a selection measured with a switch off and on,
//! interleaved, stored as two runs and compared with verdicts; a machine-wide switch is put
//! back at the end, on SIGTERM, and (from its record) by the next `run` after a SIGKILL.
//! The machine-wide tests change harmless SysV IPC limits (kernel.msgmax, msgmnb, msgmni), one
//! per test so they may run at once, with a private state directory each; they need root
//! (the unprivileged case is in tests/privileges.rs).

mod common;

use common::{json_of, sysperf, usage_error};
use std::path::Path;
use std::time::{Duration, Instant};

fn read(sysctl: &str) -> String {
    std::fs::read_to_string(format!("/proc/sys/kernel/{sysctl}"))
        .unwrap()
        .trim()
        .to_string()
}

/// The current value plus one: an "on" value that differs.
fn other(value: &str) -> String {
    (value.parse::<u64>().unwrap() + 1).to_string()
}

fn files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn a_task_switch_gives_two_stored_runs_and_a_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let out = sysperf(&db)
        .args(["ab", "syscall", "--switch", "seccomp", "--trials", "6"])
        .args(["--min-time", "0.01", "--label", "sec", "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("stored as runs sec-off and sec-on"), "{err}");
    let c = json_of(&out.stdout);
    let row = &c["rows"][0];
    assert_eq!(row["id"], "syscall");
    let ratio = &row["ratios"][1];
    assert!(ratio["ratio"].as_f64().unwrap() > 0.0, "{ratio}");
    assert!(
        ratio["ci"].is_array(),
        "six trials a side give an interval: {ratio}"
    );
    assert!(ratio["verdict"].is_string(), "{ratio}");
    // Both sides stored, each saying what its switch was.
    for (label, note) in [
        ("sec-off", "switch seccomp off"),
        ("sec-on", "seccomp filter"),
    ] {
        let out = sysperf(&db)
            .args(["show", label, "--json"])
            .output()
            .unwrap();
        assert!(out.status.success());
        let run = json_of(&out.stdout);
        let notes = run["notes"].to_string();
        assert!(notes.contains(note), "{label}: {notes}");
        assert_eq!(
            run["results"][0]["trials"]
                .as_array()
                .map(|t| !t.is_empty()),
            Some(true)
        );
    }
    // The table form: Table 2 with the ratio column.
    let out = sysperf(&db)
        .args(["ab", "syscall", "--switch", "seccomp", "--quick"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        text.contains("[2] / [1]") && text.contains("syscall |"),
        "{text}"
    );
}

#[test]
fn bad_switches_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    for args in [
        &["ab", "syscall", "--switch", "warp"][..],
        &["ab", "syscall", "--sysctl", "kernel.no_such_limit=1"],
        &["ab", "syscall", "--sysctl", "kernel.msgmax"],
        &["ab", "syscall", "--switch", "seccomp", "--on", "1"],
        &["ab", "syscall"],
    ] {
        let err = usage_error(sysperf(&db).args(args));
        assert!(
            err.contains("switch") || err.contains("sysctl"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn a_sysctl_switch_is_put_back_at_the_end() {
    if !sysperf::sys::is_root() {
        eprintln!("skipped: changing a sysctl needs root");
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let db = state.path().join("s.db");
    let old = read("msgmni");
    let on = other(&old);
    let out = sysperf(&db)
        .env("SYSPERF_STATE_DIR", state.path().join("st"))
        .args(["ab", "syscall", "--quick", "--label", "mni", "--sysctl"])
        .arg(format!("kernel.msgmni={on}"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(read("msgmni"), old);
    assert!(
        files(&state.path().join("st")).is_empty(),
        "the record is removed"
    );
    let run = json_of(
        &sysperf(&db)
            .args(["show", "mni-on", "--json"])
            .output()
            .unwrap()
            .stdout,
    );
    let notes = run["notes"].to_string();
    assert!(notes.contains(&format!("kernel.msgmni = {on}")), "{notes}");
}

/// A long `ab` of syscall with the sysctl switch `setting` (NAME=VALUE), stderr piped.
fn spawn_ab(db: &Path, state: &Path, setting: &str) -> std::process::Child {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("sysperf"))
        .env("SYSPERF_DB", db)
        .env("SYSPERF_STATE_DIR", state)
        .args(["ab", "syscall", "--trials", "1000", "--min-time", "0.01"])
        .args(["--sysctl", setting])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until `ab` (pid) is stopped with its switch on; returns false if it ended first.
fn stop_while_on(child: &mut std::process::Child, sysctl: &str, on: &str) -> bool {
    let pid = child.id().to_string();
    let kill = |sig: &str| {
        std::process::Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap()
    };
    let began = Instant::now();
    while began.elapsed() < Duration::from_secs(120) {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        kill("-STOP");
        std::thread::sleep(Duration::from_millis(20));
        if read(sysctl) == on {
            return true;
        }
        kill("-CONT");
        std::thread::sleep(Duration::from_millis(3));
    }
    false
}

#[test]
fn a_killed_ab_leaves_a_record_and_the_next_run_puts_the_sysctl_back() {
    if !sysperf::sys::is_root() {
        eprintln!("skipped: changing a sysctl needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let st = dir.path().join("st");
    let old = read("msgmax");
    let on = other(&old);
    let mut child = spawn_ab(&db, &st, &format!("kernel.msgmax={on}"));
    let caught = stop_while_on(&mut child, "msgmax", &on);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(caught, "ab ended before it switched kernel.msgmax on");
    assert_eq!(read("msgmax"), on, "a SIGKILL leaves the switch on");
    assert_eq!(files(&st).len(), 1, "with its record");
    let out = sysperf(&db)
        .env("SYSPERF_STATE_DIR", &st)
        .args(["run", "syscall", "--quick"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!("restored kernel.msgmax to {old}"))
            && err.contains(&format!("left it at {on}")),
        "{err}"
    );
    assert_eq!(read("msgmax"), old);
    assert!(files(&st).is_empty(), "the record is removed");
}

#[test]
fn sigterm_ends_ab_with_143_and_the_sysctl_put_back() {
    if !sysperf::sys::is_root() {
        eprintln!("skipped: changing a sysctl needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let st = dir.path().join("st");
    let old = read("msgmnb");
    let on = other(&old);
    let mut child = spawn_ab(
        &dir.path().join("s.db"),
        &st,
        &format!("kernel.msgmnb={on}"),
    );
    let caught = stop_while_on(&mut child, "msgmnb", &on);
    let pid = child.id().to_string();
    for sig in ["-TERM", "-CONT"] {
        std::process::Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(caught, "ab ended before it switched kernel.msgmnb on");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{err}");
    assert!(err.contains("kernel.msgmnb is as it was"), "{err}");
    assert_eq!(read("msgmnb"), old);
    assert!(files(&st).is_empty(), "the record is removed");
}

#[test]
fn two_abs_switching_one_setting_take_turns_and_the_first_value_comes_back() {
    // #36: the second `ab` read the first one's "on" value as its "off", put that back at its
    // end, and left the machine changed. They take turns now, and the second says it waits.
    if !sysperf::sys::is_root() {
        eprintln!("skipped: changing a sysctl needs root");
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let st = state.path().join("st");
    let old = read("msgmnb");
    let on = other(&old);
    let ab = |label: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_sysperf"))
            .env("SYSPERF_DB", state.path().join(format!("{label}.db")))
            .env("SYSPERF_STATE_DIR", &st)
            .env("NO_COLOR", "1")
            .args(["ab", "syscall", "--quick", "--label", label, "--sysctl"])
            .arg(format!("kernel.msgmnb={on}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let first = ab("first");
    // The first holds the setting once its record is written.
    let has_record = || {
        std::fs::read_dir(&st).is_ok_and(|d| {
            d.flatten().any(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("sysperf-switch-")
            })
        })
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while !has_record() {
        assert!(Instant::now() < deadline, "the first ab wrote no record");
        std::thread::sleep(Duration::from_millis(2));
    }
    let second = ab("second");
    let (a, b) = (
        first.wait_with_output().unwrap(),
        second.wait_with_output().unwrap(),
    );
    let (ea, eb) = (
        String::from_utf8_lossy(&a.stderr),
        String::from_utf8_lossy(&b.stderr),
    );
    assert!(a.status.success(), "{ea}");
    assert!(b.status.success(), "{eb}");
    assert_eq!(read("msgmnb"), old, "first: {ea}\nsecond: {eb}");
    assert!(!has_record(), "a record is left in {}", st.display());
    // The first may have finished before the second asked (a quick ab is short); when it had
    // not, the second said whom it waited for.
    if eb.contains("waiting") {
        assert!(
            eb.contains("waiting for another sysperf ab") && eb.contains("kernel.msgmnb"),
            "{eb}"
        );
    }
}
