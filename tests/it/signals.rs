//! A signal at any moment of any command ends sysperf with a message and 128 + the signal
//! (#14): also in commands without a graceful stop of their own, and before a run installs
//! its handlers. Commands with workers (run, trace, profile) stop them and keep what finished;
//! tests/it/cli.rs and tests/engine.rs hold those.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Whether `pid` catches `sig` (its SigCgt mask in /proc/PID/status).
fn catches(pid: u32, sig: i32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .is_some_and(|m| m & (1 << (sig - 1)) != 0)
}

fn signalled(sig: i32, name: &str, code: i32, message: &str) {
    let dir = tempfile::tempdir().unwrap();
    // doctor looks at the CPUs for 0.2 s and has no stop of its own.
    let child = Command::new(assert_cmd::cargo::cargo_bin("sysperf"))
        .arg("doctor")
        .env("SYSPERF_DB", dir.path().join("s.db"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !catches(child.id(), sig) {
        assert!(
            Instant::now() < deadline,
            "doctor never caught signal {sig}: it would die without a word"
        );
        std::thread::sleep(Duration::from_micros(200));
    }
    Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(code), "{out:?}");
    // The tidy-up may have said a line first (leftovers of other killed sysperfs).
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().last(), Some(message), "{err}");
}

#[test]
fn sigint_in_a_command_without_a_stop_of_its_own_exits_130_with_a_message() {
    signalled(libc::SIGINT, "INT", 130, "sysperf: interrupted");
}

#[test]
fn sigterm_exits_143_with_a_message() {
    signalled(libc::SIGTERM, "TERM", 143, "sysperf: terminated");
}
