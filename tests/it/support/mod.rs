//! Helpers shared by the integration tests: running `sysperf` against a given store, reading
//! its JSON, and checking that nothing a test started is still running afterwards.

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;

/// The `sysperf` binary under test, with `db` as its store and no colour.
pub fn sysperf(db: &Path) -> Command {
    let mut c = Command::cargo_bin("sysperf").unwrap();
    c.env("SYSPERF_DB", db).env("NO_COLOR", "1");
    c
}

/// Parses command output as JSON, showing the output when it is not.
pub fn json_of(out: &[u8]) -> Value {
    serde_json::from_slice(out)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(out)))
}

/// A tag no other test, nor another checkout's test suite running on this machine at the same
/// time, uses: give it to a sysperf as SYSPERF_TEST_TAG and its workers inherit it.
pub fn unique_tag(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{name}-{}-{nanos}", std::process::id())
}

/// Live processes that carry one of `tags` in their environment, i.e. that descend from a
/// sysperf a test started with it (daemons its workers start included), as (pid, command
/// name). Zombies about to be reaped by their own parent are not counted.
pub fn tagged_processes(tags: &[&str]) -> Vec<(u32, String)> {
    for tag in tags {
        assert!(
            tag.contains('-'),
            "use unique_tag(): other test suites may run on this machine"
        );
    }
    let wanted: Vec<String> = tags
        .iter()
        .map(|t| format!("SYSPERF_TEST_TAG={t}"))
        .collect();
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let environ = std::fs::read(e.path().join("environ")).unwrap_or_default();
        let tagged = environ
            .split(|&b| b == 0)
            .any(|kv| wanted.iter().any(|w| kv == w.as_bytes()));
        if !tagged {
            continue;
        }
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let state = stat
            .rsplit(')')
            .next()
            .and_then(|s| s.split_whitespace().next())
            .unwrap_or("");
        if state != "Z" {
            let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            found.push((pid, comm.trim().to_string()));
        }
    }
    found
}

/// Live processes named "sysperf:..." (benchmark workers and their children) that carry `tag`
/// (see [`tagged_processes`]).
pub fn leftover_workers(tag: &str) -> Vec<String> {
    tagged_processes(&[tag])
        .into_iter()
        .filter(|(_, comm)| comm.starts_with("sysperf:"))
        .map(|(pid, comm)| format!("{pid} {comm}"))
        .collect()
}

/// Starts `sysperf ARGS` in the background with `db` as its store and its processes tagged
/// `tag` (see [`leftover_workers`]); stdout and stderr are piped.
pub fn spawn_tagged(db: &Path, tag: &str, args: &[&str]) -> std::process::Child {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("sysperf"))
        .env("SYSPERF_DB", db)
        .env("SYSPERF_TEST_TAG", tag)
        .env("NO_COLOR", "1")
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// `sysperf run --suite SUITE --quick --json` on a fresh store, tagged `name`: fails the test
/// unless it succeeded and left no process behind; its JSON document.
pub fn quick_suite_run(suite: &str, name: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x.db");
    let tag = unique_tag(name);
    let args = ["run", "--suite", suite, "--quick", "--json"];
    let out = spawn_tagged(&db, &tag, &args).wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_nothing_left(&tag);
    json_of(&out.stdout)
}

/// Sends SIGINT, as a terminal's Ctrl-C does.
pub fn interrupt(child: &std::process::Child) {
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -INT {} failed", child.id());
}

/// Fails if a process tagged `tag` is still alive.
pub fn assert_nothing_left(tag: &str) {
    let left = leftover_workers(tag);
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Runs `cmd`, fails with its stderr unless it succeeded, and returns its stdout as JSON.
pub fn success_json(cmd: &mut Command) -> Value {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_of(&out.stdout)
}

/// Whether strace runs here (the system-call and process counts need it). On CI (CI=true)
/// its absence fails the calling test: .ci/run installs it.
pub fn strace_available() -> bool {
    let ok = std::process::Command::new("strace")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var("CI").is_err(),
            "strace is missing on CI: .ci/run must install it"
        );
        eprintln!("strace not installed: skipping system-call counts (apt-get install strace)");
    }
    ok
}

/// The request of one worker trial of series point `id`@`param`, as `sysperf __worker` takes it.
pub fn point_request(id: &str, param: u64, iterations: u64) -> String {
    serde_json::json!({ "id": id, "param": param, "iterations": iterations, "pin": null,
                        "child_cpu": null })
    .to_string()
}

/// Runs one worker trial, `sysperf __worker REQUEST`, under `strace ARGS -o OUT` (with `envs`
/// added to its environment), and fails the test unless both strace and the worker succeeded.
/// Returns the worker's JSON report.
pub fn strace_worker(args: &[&str], out: &Path, request: &str, envs: &[(&str, &Path)]) -> Value {
    let st = std::process::Command::new("strace")
        .args(args)
        .arg("-o")
        .arg(out)
        .args([env!("CARGO_BIN_EXE_sysperf"), "__worker", request])
        .envs(envs.iter().copied())
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&st.stdout).unwrap_or(Value::Null);
    assert!(
        st.status.success() && report["error"].is_null(),
        "{request}: {} {report}",
        String::from_utf8_lossy(&st.stderr)
    );
    report
}

/// strace of one worker trial of series point `id`@`param` (all its processes) with `args`:
/// the summary with `-c`, else one trace per process (`-ff`, so no call is split by another
/// process's). Returns the text of strace's output files.
pub fn strace_point(args: &[&str], id: &str, param: u64, iterations: u64) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let follow = if args.contains(&"-c") { "-f" } else { "-ff" };
    let args: Vec<&str> = std::iter::once(follow)
        .chain(args.iter().copied())
        .collect();
    strace_worker(
        &args,
        &dir.path().join("strace"),
        &point_request(id, param, iterations),
        &[],
    );
    files_in(dir.path())
}

/// The text of every file in `dir`, in name order: strace -ff's one file per process.
pub fn files_in(dir: &Path) -> Vec<String> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect()
}

/// The series `id` of a run's JSON document; fails the test when the run did not store it.
pub fn series_of<'a>(run: &'a Value, id: &str) -> &'a Value {
    run["series"]
        .as_array()
        .and_then(|all| all.iter().find(|s| s["id"] == id))
        .unwrap_or_else(|| panic!("series {id} not stored"))
}

/// The x of every point of a series, in order.
pub fn xs_of(series: &Value) -> Vec<f64> {
    series["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["x"].as_f64().unwrap())
        .collect()
}

/// The names of a run's derived figures.
pub fn derived_names(run: &Value) -> Vec<&str> {
    run["derived"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect()
}

/// Runs `cmd`, fails unless it exited with 2 (bad usage or input) without panicking, and
/// returns its stderr.
pub fn usage_error(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{err}"
    );
    err
}

/// System calls of one worker run of a series point (all its processes), by name.
pub fn syscall_counts(
    id: &str,
    param: u64,
    iterations: u64,
) -> std::collections::HashMap<String, i64> {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("strace.txt");
    strace_worker(
        &["-f", "-c", "-U", "calls,name"],
        &out,
        &point_request(id, param, iterations),
        &[],
    );
    std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            match f[..] {
                [n, name] => n.parse().ok().map(|n| (name.to_string(), n)),
                _ => None,
            }
        })
        .collect()
}
pub mod certs;
pub mod pg;

/// The seccomp filter's frames below the system call entry, as the kernel's call chains have
/// them.
pub const SECCOMP_FILTER: &str =
    "entry_SYSCALL_64_after_hwframe;do_syscall_64;syscall_trace_enter;__secure_computing;__seccomp_filter";

/// An export document (`sysperf export RUN`) of one run with a profile of `bench` made into
/// side B of a planted cause: id `id`, label `label`, each measured trial and the median
/// `slower` times as slow, half as many samples again below the seccomp filter in the profile,
/// the note an `ab` with the seccomp switch on leaves, and no busy_cpu or steal warning (see
/// [`as_if_quiet`]). Returns the planted samples.
pub fn plant_seccomp(doc: &mut Value, bench: &str, id: &str, label: &str, slower: f64) -> u64 {
    let old = doc["runs"][0]["id"].as_str().unwrap().to_string();
    let run = &mut doc["runs"][0];
    run["id"] = id.into();
    run["label"] = label.into();
    run["notes"] =
        serde_json::json!(["ab: switch on: an allow-all seccomp filter in every worker"]);
    // Side B stands for a run of a quiet machine, as A is made to by `as_if_quiet`.
    if let Some(w) = run["warnings"].as_array_mut() {
        w.retain(|w| !disturbs(w));
    }
    for r in run["results"].as_array_mut().unwrap() {
        if r["id"] != bench {
            continue;
        }
        for t in r["trials"].as_array_mut().unwrap() {
            let w = t["wall_ns"].as_u64().unwrap() as f64;
            t["wall_ns"] = ((w * slower).round() as u64).into();
        }
        let w = &mut r["summary"]["wall_ns_per_op"];
        for k in ["median", "ci_low", "ci_high", "min", "max", "mean"] {
            w[k] = (w[k].as_f64().unwrap() * slower).into();
        }
    }
    let mut profiles = doc["profiles"][&old].clone();
    let p = profiles
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|p| p["bench"] == bench)
        .expect("a profile of the bench");
    let samples = p["samples"].as_u64().unwrap();
    assert!(samples >= 200, "too few samples to plant into: {samples}");
    let planted = samples / 2;
    p["stacks"][SECCOMP_FILTER] = (planted * 6 / 10).into();
    p["stacks"][format!("{SECCOMP_FILTER};seccomp_run_filters")] =
        (planted - planted * 6 / 10).into();
    p["samples"] = (samples + planted).into();
    doc["profiles"] = serde_json::json!({ id: profiles });
    planted
}

fn proc_value(path: &str) -> Option<i64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Whether this machine lets us profile the kernel; prints why not and, on CI, fails.
pub fn profiling_allowed() -> bool {
    let paranoid = proc_value("/proc/sys/kernel/perf_event_paranoid").unwrap_or(3);
    let kptr = proc_value("/proc/sys/kernel/kptr_restrict").unwrap_or(2);
    let ok = sysperf::sys::is_root() && kptr < 2 || paranoid <= 1 && kptr == 0;
    if !ok {
        assert!(
            std::env::var("CI").is_err(),
            "CI runs as root and must be able to profile (perf_event_paranoid {paranoid}, kptr_restrict {kptr})"
        );
        eprintln!(
            "skipping: profiling the kernel needs root, or kernel.perf_event_paranoid <= 1 and kernel.kptr_restrict = 0 (they are {paranoid} and {kptr})"
        );
    }
    ok
}

/// Runs `args` against the store `db`, expects exit code `code`, returns stdout.
pub fn ok(db: &Path, args: &[&str], code: i32) -> String {
    let out = sysperf(db).args(args).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(code),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Whether a warning of a run's JSON says other work ran beside its test (busy_cpu,
/// busy_machine, steal: `WarningKind::disturbs`).
pub fn disturbs(warning: &Value) -> bool {
    sysperf::model::WarningKind::from(warning["kind"].as_str().unwrap()).disturbs()
}

/// Takes the warnings that other work ran beside a test (busy_cpu, busy_machine, steal:
/// `WarningKind::disturbing`) off the stored run labelled `label`, for tests of what compare,
/// explain, report or changes do with a verdict, not of this machine's load: a run made beside
/// other work gets no verdict against a single run (#30) and is left out of `changes`'
/// histories (#35), and on a machine busy with the other tests a quick run often is. Returns
/// how many it took off.
pub fn as_if_quiet(db: &Path, label: &str) -> usize {
    let kinds: Vec<String> = sysperf::model::WarningKind::disturbing()
        .map(|k| format!("'{k}'"))
        .collect();
    let conn = rusqlite::Connection::open(db).unwrap();
    let removed = conn
        .execute(
            &format!(
                "DELETE FROM warnings WHERE kind IN ({}) \
                 AND run_id IN (SELECT id FROM runs WHERE label = ?1)",
                kinds.join(", ")
            ),
            [label],
        )
        .unwrap();
    // The store keeps a result's disturbance as a flag too, written with its warnings
    // (#44 item 3), and the run lists its measured tests with their flags (`runs.points`,
    // which `changes` counts): both go with them.
    conn.execute(
        "UPDATE results SET disturbed = 0 \
         WHERE run_id IN (SELECT id FROM runs WHERE label = ?1)",
        [label],
    )
    .unwrap();
    conn.execute(
        "UPDATE runs SET points = (SELECT json_group_array(json_array( \
         json_extract(p.value, '$[0]'), json_extract(p.value, '$[1]'), 0)) FROM json_each(runs.points) AS p) WHERE label = ?1",
        [label],
    )
    .unwrap();
    removed
}

/// Three runs of `args` (`run ARGS --repeat 3`) labelled "history": the machine's run-to-run
/// variance, without which two single runs get no verdict.
pub fn history(db: &Path, args: &[&str]) {
    let out = sysperf(db)
        .arg("run")
        .args(args)
        .args(["--repeat", "3", "--label", "history"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Held by every test that changes the machine's transparent-huge-page policy (`ab --switch
/// thp`) or whose counts depend on it (seqpage-thp's faults): in one test binary they would
/// otherwise overlap; and, by flock(2) on the policy's sysfs directory, across test binaries
/// (two checkouts' `cargo test` at once: one test's runs under "always" measured "madvise",
/// set by the other's).
pub fn thp_policy() -> ThpPolicy {
    static THP: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let held = THP.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::fs::File::open("/sys/kernel/mm/transparent_hugepage")
        .ok()
        .filter(|d| d.lock().is_ok());
    ThpPolicy {
        _dir: dir,
        _held: held,
    }
}

/// [`thp_policy`]'s hold: the flock goes with the file, then the mutex.
pub struct ThpPolicy {
    _dir: Option<std::fs::File>,
    _held: std::sync::MutexGuard<'static, ()>,
}

/// Held by every test that traces (`sysperf trace`, tracefs instances): those tests count
/// kernel events, and another trace running at the same moment (`trace --system` above all)
/// changes what they count. In one test binary they would otherwise overlap; other tests still
/// run beside them.
pub fn tracing() -> std::sync::MutexGuard<'static, ()> {
    static TRACING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TRACING.lock().unwrap_or_else(|e| e.into_inner())
}
