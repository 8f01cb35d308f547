//! One rule for everything a process may not do (README, "Privileges"; #14): the vm suite's
//! memory cgroups, `--observe`'s perf counters and `--profile`'s sampling. A run measures and
//! stores the rest, names each part left out in a warning and on stderr, and exits 1; it
//! exits 0 only when nothing was left out. `trace` and `profile`, which are only the privileged
//! part, exit 1 with the setting to change. As root the tests drop to `nobody` (setpriv), so
//! the rule is checked on CI too; as another user they run as that user.

use crate::support as common;

use common::json_of;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const NOBODY: &str = "65534";

/// The binary under test where an unprivileged user can run it: the checkout may sit under a
/// directory only root may enter (/root), so it is linked (or copied) into a world-readable
/// one, once per test thread and removed when the thread ends.
fn reachable_exe() -> PathBuf {
    thread_local! {
        static EXE: std::cell::RefCell<Option<(tempfile::TempDir, PathBuf)>> =
            const { std::cell::RefCell::new(None) };
    }
    EXE.with(|e| {
        e.borrow_mut()
            .get_or_insert_with(|| {
                use std::os::unix::fs::PermissionsExt;
                let dir = tempfile::tempdir().unwrap();
                std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
                    .unwrap();
                let exe = dir.path().join("sysperf");
                let built = assert_cmd::cargo::cargo_bin("sysperf");
                if std::fs::hard_link(&built, &exe).is_err() {
                    std::fs::copy(&built, &exe).unwrap();
                }
                (dir, exe)
            })
            .1
            .clone()
    })
}

/// `sysperf ARGS` as an unprivileged user, with `db` as its store.
fn unprivileged(db: &Path, args: &[&str]) -> Option<Output> {
    let exe = reachable_exe();
    let mut c = if sysperf::sys::is_root() {
        if Command::new("setpriv").arg("--version").output().is_err() {
            assert!(
                std::env::var("CI").is_err(),
                "setpriv (util-linux) is missing"
            );
            eprintln!("skipped: no setpriv to drop root with");
            return None;
        }
        let mut c = Command::new("setpriv");
        c.args([
            &format!("--reuid={NOBODY}"),
            &format!("--regid={NOBODY}"),
            "--clear-groups",
        ])
        .arg(&exe);
        c
    } else {
        Command::new(&exe)
    };
    Some(
        c.args(args)
            .env("SYSPERF_DB", db)
            .env("NO_COLOR", "1")
            .env("HOME", db.parent().unwrap())
            .output()
            .unwrap(),
    )
}

/// A store directory of the unprivileged user's (as root: given to nobody). Not one everyone
/// may write: sysperf refuses a store there, which another user could swap (#29).
fn open_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    if sysperf::sys::is_root() {
        let nobody: u32 = NOBODY.parse().unwrap();
        std::os::unix::fs::chown(dir.path(), Some(nobody), Some(nobody)).unwrap();
    }
    dir
}

/// The rule, for one run: exit 1 exactly when a part was left out, each named on stderr, the
/// rest measured and stored either way. Returns the kinds left out.
fn check_rule(args: &[&str]) -> Option<Vec<String>> {
    let dir = open_dir();
    let db = dir.path().join("s.db");
    let mut full = args.to_vec();
    full.extend(["--quick", "--json"]);
    let out = unprivileged(&db, &full)?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let run = json_of(&out.stdout);
    let left: Vec<(String, String)> = run["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| ["suite_skipped", "observe", "profile"].contains(&w["kind"].as_str().unwrap()))
        .map(|w| {
            (
                w["kind"].as_str().unwrap().to_string(),
                w["message"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected = if left.is_empty() { 0 } else { 1 };
    assert_eq!(out.status.code(), Some(expected), "{args:?}: {stderr}");
    for (_, m) in &left {
        assert!(
            stderr.contains(&format!("left out: {m}")),
            "{args:?}: {stderr}"
        );
    }
    // Every case includes syscall, which needs no privilege.
    assert_eq!(run["results"][0]["id"], "syscall", "{args:?}: {run}");
    // Stored: the store lists the run whatever the exit code.
    let listed = unprivileged(&db, &["runs", "--json"])?;
    assert!(listed.status.success());
    assert_eq!(json_of(&listed.stdout)[0]["id"], run["id"]);
    Some(left.into_iter().map(|(k, _)| k).collect())
}

#[test]
fn a_part_the_process_may_not_do_is_left_out_named_and_exits_1() {
    let Some(vm) = check_rule(&["run", "syscall", "--suite", "vm"]) else {
        return;
    };
    // No unprivileged user may create memory cgroups under root's hierarchy.
    if sysperf::sys::is_root() {
        assert_eq!(vm, ["suite_skipped"]);
    }
    let observe = check_rule(&["run", "syscall", "--observe"]).unwrap();
    let profile = check_rule(&["run", "syscall", "--profile", "--profile-seconds", "0.2"]).unwrap();
    // perf_event_open for an unprivileged process is a kernel setting: both follow it alike.
    let paranoid: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().parse().unwrap_or(2))
        .unwrap_or(2);
    if paranoid >= 2 {
        assert_eq!(observe, ["observe"]);
        assert_eq!(profile, ["profile"]);
    }
}

#[test]
fn commands_that_are_only_the_privileged_part_exit_1_with_the_fix() {
    let dir = open_dir();
    let db = dir.path().join("s.db");
    let paranoid: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().parse().unwrap_or(2))
        .unwrap_or(2);
    if paranoid >= 2 {
        let Some(out) = unprivileged(&db, &["profile", "syscall", "--seconds", "0.2"]) else {
            return;
        };
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("perf_event_paranoid"), "{err}");
    }
    let Some(out) = unprivileged(&db, &["trace", "syscall"]) else {
        return;
    };
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("root"), "{err}");
    // The whole machine's trace needs the same, and says so before tracing anything (#20).
    let Some(out) = unprivileged(&db, &["trace", "--system", "1"]) else {
        return;
    };
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("root") && err.contains("tracefs"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn ab_with_a_machine_wide_switch_exits_1_saying_it_needs_root_and_a_task_switch_runs() {
    let dir = open_dir();
    let db = dir.path().join("s.db");
    let old = std::fs::read_to_string("/proc/sys/kernel/msgmax").unwrap();
    let on = format!("kernel.msgmax={}", old.trim().parse::<u64>().unwrap() + 1);
    let Some(out) = unprivileged(&db, &["ab", "syscall", "--quick", "--sysctl", &on]) else {
        return;
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("needs root") && err.contains("kernel.msgmax"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string("/proc/sys/kernel/msgmax").unwrap(),
        old
    );
    // A per-task switch needs no privilege (seccomp with no_new_privs).
    let out = unprivileged(&db, &["ab", "syscall", "--quick", "--switch", "seccomp"]).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn another_users_store_is_read_for_listing_and_left_as_it_was() {
    if !sysperf::sys::is_root() {
        eprintln!("skipped: needs root to make a store another user may only read");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let db = dir.path().join("root.db");
    let made = common::sysperf(&db)
        .args(["run", "syscall", "--quick", "--label", "roots"])
        .output()
        .unwrap();
    assert!(made.status.success());
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    let before = std::fs::read(&db).unwrap();
    let files = || {
        let mut v: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let listed_before = files();
    for args in [
        vec!["runs"],
        vec!["show", "roots"],
        vec!["show", "latest", "--json"],
        vec!["compare", "roots", "latest"],
        vec!["export", "roots"],
        vec!["doctor"],
    ] {
        let Some(out) = unprivileged(&db, &args) else {
            return;
        };
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if args[0] == "runs" {
            assert!(String::from_utf8_lossy(&out.stdout).contains("roots"));
        }
    }
    // Removing needs write access: refused with a message, nothing changed.
    let out = unprivileged(&db, &["rm", "roots"]).unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("may read but not write"), "{err}");
    assert_eq!(std::fs::read(&db).unwrap(), before, "the store changed");
    assert_eq!(files(), listed_before);
}
