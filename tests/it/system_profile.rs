//! `sysperf profile --system`: the whole machine sampled while a known load runs (a pipe
//! ping-pong of two python3 processes), bounded memory, the observation stored and found
//! again, and the refusal without privilege. Sampling every CPU needs root: as another
//! user the tests check the refusal instead.

use crate::support as common;

use common::{json_of, sysperf};
use serde_json::Value;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

fn is_root() -> bool {
    sysperf::sys::is_root()
}

/// Two python3 processes passing one byte back and forth through two pipes, until killed.
struct PingPong(Child);

impl PingPong {
    fn start() -> Option<PingPong> {
        // Each side closes the ends it does not use, so the child reads end-of-file and exits
        // when the parent is killed.
        let code = "
import os
r1, w1 = os.pipe(); r2, w2 = os.pipe()
if os.fork() == 0:
    os.close(w1); os.close(r2)
    while True:
        b = os.read(r1, 1)
        if not b: os._exit(0)
        os.write(w2, b)
else:
    os.close(r1); os.close(w2)
    while True:
        os.write(w1, b'x'); os.read(r2, 1)
";
        let child = Command::new("python3")
            .args(["-c", code])
            .stdin(Stdio::null())
            // Killed mid-write, python3 complains of the broken pipe: not the test's output.
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        // Started when the forked child exists (python3 may start slowly on busy cores).
        let parent = child.id().to_string();
        for _ in 0..100 {
            if child_of(&parent) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Some(PingPong(child))
    }
}

/// Whether some process has `parent` as its parent (/proc/PID/stat's fourth field).
fn child_of(parent: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let after = stat.rsplit(')').next().unwrap_or("");
        after.split_whitespace().nth(1) == Some(parent)
    })
}

impl Drop for PingPong {
    fn drop(&mut self) {
        // The parent dies; the child reads end-of-file on its pipe and exits.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `sysperf profile --system ARGS` run to success, its JSON.
fn system_json(db: &std::path::Path, args: &[&str]) -> Value {
    let out = sysperf(db)
        .args(["profile", "--system"])
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    json_of(&out.stdout)
}

/// The samples in an observation's folded stacks.
fn stacked(obs: &Value) -> u64 {
    obs["stacks"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum()
}

fn names(list: &Value, key: &str) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|v| v[key].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_system_profile_names_the_ping_pong_processes_and_the_pipe_functions() {
    if !is_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let Some(_load) = PingPong::start() else {
        eprintln!("python3 not found; skipped");
        return;
    };
    let doc = system_json(&db, &["3", "--json"]);
    assert_eq!(doc["format"], "sysperf-system-profile");
    let obs = &doc["observation"];
    let comms = names(&obs["processes"], "comm");
    let pythons = obs["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["comm"] == "python3" && p["kernel_samples"].as_u64().unwrap() > 0)
        .count();
    assert!(pythons >= 2, "both python3 processes in {comms:?}");
    // The pipe functions (pipe_read, or anon_pipe_read since Linux 6.16) are named in the
    // folded stacks, whose frames the flat profile and call graph count.
    let piped: u64 = obs["stacks"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.contains("pipe_read") || k.contains("pipe_write"))
        .map(|(_, v)| v.as_u64().unwrap())
        .sum();
    assert!(piped > 0, "no stack through pipe_read or pipe_write");
    let syscalls = names(&doc["by_syscall"], "name");
    assert!(
        syscalls.iter().any(|s| s == "read" || s == "write"),
        "{syscalls:?}"
    );
    let subsystems = names(&doc["by_subsystem"], "name");
    assert!(subsystems.iter().any(|s| s == "syscall"), "{subsystems:?}");
    // Every sample is somewhere: the stacks add up to the samples.
    assert_eq!(stacked(obs), obs["samples"].as_u64().unwrap());
    assert!(obs["wall_ns"].as_u64().unwrap() >= 3_000_000_000 - 1);
}

#[test]
fn memory_stays_bounded_by_the_stack_cap() {
    if !is_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let _load = PingPong::start();
    let doc = system_json(&db, &["2", "--stack-cap", "3", "--json"]);
    let obs = &doc["observation"];
    let stacks = obs["stacks"].as_object().unwrap();
    // Three kept, and at most the two overflow keys ([other] and [user] [other]).
    assert!(stacks.len() <= 5, "{:?}", stacks.keys().collect::<Vec<_>>());
    assert!(obs["samples_in_other"].as_u64().unwrap() > 0);
    assert_eq!(obs["stack_cap"], 3);
    assert_eq!(
        stacked(obs),
        obs["samples"].as_u64().unwrap(),
        "nothing dropped"
    );
    assert!(obs["peak_rss_kb"].as_u64().unwrap() > 0);
}

#[test]
fn without_privilege_it_says_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let bin = assert_cmd::cargo::cargo_bin("sysperf");
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .unwrap_or_default()
        .trim()
        .parse::<i32>()
        .unwrap_or(2);
    let mut cmd = if is_root() {
        // Root may sample anything: run it as nobody, where the kernel lets nobody.
        if paranoid <= 0 || Command::new("setpriv").arg("--version").output().is_err() {
            return;
        }
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&bin);
        c
    } else if paranoid <= 0 {
        return;
    } else {
        Command::new(&bin)
    };
    let out = cmd
        .env("SYSPERF_DB", &db)
        .args(["profile", "--system", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("perf_event_paranoid") || err.contains("kptr_restrict"),
        "{err}"
    );
    assert!(err.contains("root") && err.contains("sysctl"), "{err}");
}

#[test]
fn a_bad_duration_is_bad_usage() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    for bad in ["0", "3d", "soon"] {
        let out = sysperf(&db)
            .args(["profile", "--system", bad])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("10s, 5m, 1h"));
    }
}

#[test]
fn an_observation_is_stored_listed_shown_compared_and_removed() {
    if !is_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let _load = PingPong::start();
    let before = system_json(&db, &["1", "--label", "quiet", "--json"]);
    let after = system_json(&db, &["1", "--json"]);
    let id = before["observation"]["id"].as_str().unwrap().to_string();
    let id2 = after["observation"]["id"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 12);
    let runs = sysperf(&db).arg("runs").output().unwrap();
    let text = String::from_utf8_lossy(&runs.stdout);
    assert!(text.contains("observations of the whole machine"), "{text}");
    assert!(text.contains(&id) && text.contains(&id2) && text.contains("quiet"));
    // Shown by id, prefix or label, as it was printed when made.
    let shown = json_of(
        &sysperf(&db)
            .args(["show", "quiet", "--json"])
            .output()
            .unwrap()
            .stdout,
    );
    assert_eq!(shown["observation"], before["observation"]);
    let text = sysperf(&db).args(["show", &id[..6]]).output().unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("By subsystem"));
    // Compared: the shares that moved, with ratios.
    let cmp = sysperf(&db).args(["compare", &id, &id2]).output().unwrap();
    assert_eq!(cmp.status.code(), Some(0));
    let text = String::from_utf8_lossy(&cmp.stdout);
    assert!(
        text.contains("2 observations of the whole machine"),
        "{text}"
    );
    let cmp = json_of(
        &sysperf(&db)
            .args(["compare", &id, &id2, "--json"])
            .output()
            .unwrap()
            .stdout,
    );
    assert!(cmp["functions"].is_array() && cmp["subsystems"].is_array());
    assert_eq!(cmp["before"], id.as_str());
    let gated = sysperf(&db)
        .args(["compare", &id, &id2, "--fail-on-regression", "5"])
        .output()
        .unwrap();
    assert_eq!(gated.status.code(), Some(4), "a gate cannot judge shares");
    // Removed.
    let rm = sysperf(&db).args(["rm", &id]).output().unwrap();
    assert!(String::from_utf8_lossy(&rm.stderr).contains("removed observation"));
    let runs = sysperf(&db).arg("runs").output().unwrap();
    assert!(!String::from_utf8_lossy(&runs.stdout).contains(&id));
}

#[test]
fn ctrl_c_ends_early_and_stores_what_was_sampled() {
    if !is_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    use std::io::{BufRead, Read};
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("sysperf"))
        .env("SYSPERF_DB", &db)
        .args(["profile", "--system", "1h", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupted once it says it is sampling (before that, Ctrl-C ends it with nothing).
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    stderr.read_line(&mut first).unwrap();
    assert!(first.contains("sampling every CPU"), "{first}");
    std::thread::sleep(std::time::Duration::from_millis(500));
    sysperf::sys::kill(child.id() as i32, libc::SIGINT).unwrap();
    // stderr is drained beside stdout: a JSON larger than a pipe's buffer would otherwise
    // block the child on stdout while this waited for stderr's end (it hung on a busy machine).
    let rest = std::thread::spawn(move || {
        let mut rest = String::new();
        stderr.read_to_string(&mut rest).unwrap();
        rest
    });
    let out = child.wait_with_output().unwrap();
    let rest = rest.join().unwrap();
    let err = format!("{first}{rest}");
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("stored as observation"), "{err}");
    let doc = json_of(&out.stdout);
    assert_eq!(doc["observation"]["interrupted"], true);
    assert!(doc["observation"]["wall_ns"].as_u64().unwrap() < 3_600_000_000_000);
    let runs = sysperf(&db).arg("runs").output().unwrap();
    let id = doc["observation"]["id"].as_str().unwrap();
    assert!(String::from_utf8_lossy(&runs.stdout).contains(id));
}

#[test]
fn hot_functions_name_the_benchmarks_with_stored_profiles() {
    if !is_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let _load = PingPong::start();
    // No benchmark profiles stored: the report says how to store them.
    let out = sysperf(&db)
        .args(["profile", "--system", "1"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("sysperf run --profile"), "{text}");
    // With pipeback4's profile stored, a hot function is put to it exactly when that
    // profile spends 1% or more of its samples in it.
    let run = sysperf(&db)
        .args([
            "run",
            "pipeback4",
            "--quick",
            "--profile",
            "--profile-seconds",
            "0.5",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let bench = json_of(&run.stdout);
    let flat = bench["profiles"][0]["flat"].as_array().unwrap().clone();
    let doc = system_json(&db, &["2", "--json"]);
    let iso = doc["isolate"].as_array().unwrap();
    assert!(!iso.is_empty());
    for i in iso {
        let f = i["function"].as_str().unwrap();
        let share = flat
            .iter()
            .find(|e| e["name"] == f)
            .map(|e| e["total_pct"].as_f64().unwrap())
            .unwrap_or(0.0);
        let named = i["benchmarks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b[0] == "pipeback4");
        assert_eq!(named, share >= 1.0, "{f}: {share}% in pipeback4");
    }
}

#[test]
fn function_call_times_come_with_how_they_were_counted() {
    if !is_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    // Path lookups to time: find stats every file under /usr.
    // In a process group of its own, so the loop and its find end together.
    let mut find = Command::new("sh")
        .args(["-c", "while :; do find /usr -name x >/dev/null 2>&1; done"])
        .process_group(0)
        .spawn()
        .unwrap();
    let out = sysperf(&db)
        .args(["profile", "--system", "2", "--functions", "--json"])
        .output()
        .unwrap();
    let _ = sysperf::sys::kill(-(find.id() as i32), libc::SIGKILL);
    let _ = find.wait();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let doc = json_of(&out.stdout);
    let obs = &doc["observation"];
    let f = obs["functions"].as_array().unwrap();
    assert_eq!(
        names(&obs["functions"], "name"),
        ["filename_lookup", "link_path_walk"]
    );
    let sampled: u64 = f
        .iter()
        .map(|e| e["self_samples"].as_u64().unwrap() + e["child_samples"].as_u64().unwrap())
        .sum();
    assert!(sampled > 0, "find's path lookups were sampled: {f:?}");
    let method = obs["functions_method"].as_str().unwrap();
    assert!(method.contains("gprof's method"), "{method}");
    if f[0]["calls"].is_null() {
        // Counting refused (a locked-down kernel): said on stderr and in the method.
        assert!(method.contains("calls not counted"), "{method}");
        assert!(err.contains("cannot count the functions' calls"), "{err}");
    } else {
        assert!(f[0]["calls"].as_u64().unwrap() > 0);
        assert!(method.contains("per counted call"), "{method}");
    }
    let bad = sysperf(&db)
        .args(["profile", "--system", "1", "--functions", "a;b"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}
