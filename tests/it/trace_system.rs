//! `sysperf trace --system` (#20): the whole machine's page-cache and dentry-cache hit rates
//! follow the caches' state (lower cold than warm, in both orders for the page cache), system
//! calls and softirqs are reported, and no tracefs instance outlives the command: not after
//! the duration, not after Ctrl-C, and one left by SIGKILL goes with the next sysperf.
//!
//! Needs root (tracefs, drop_caches). Each trace runs while one workload runs and is ended by
//! SIGINT when the workload is done, so nothing depends on how fast the machine is; other
//! processes on a busy machine are traced too, which the figures' margins allow for.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;
use sysperf::trace::tracefs;

fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_sysperf")
}

fn root() -> bool {
    if sysperf::sys::is_root() {
        return true;
    }
    assert!(std::env::var("CI").is_err(), "CI runs these as root");
    eprintln!("skipped: tracing the system needs root");
    false
}

fn instance_exists(name: &str) -> bool {
    let name = name.to_string();
    tracefs::look(move |fs| fs.root.join("instances").join(&name).exists()).unwrap_or(false)
}

/// A `trace --system` running in the background, its stderr read line by line.
struct Tracing {
    child: Child,
    lines: mpsc::Receiver<String>,
    stderr: Vec<String>,
}

impl Tracing {
    /// Starts the trace and returns once it says it is tracing.
    fn start(args: &[&str]) -> Tracing {
        let mut child = Command::new(exe())
            .args(["trace", "--system"])
            .args(args)
            .env("NO_COLOR", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let err = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(err).lines() {
                let Ok(l) = l else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let mut t = Tracing {
            child,
            lines,
            stderr: Vec::new(),
        };
        loop {
            match t.lines.recv_timeout(Duration::from_secs(120)) {
                Ok(l) => {
                    let started = l.contains("tracing the whole system");
                    t.stderr.push(l);
                    if started {
                        return t;
                    }
                }
                Err(_) => panic!("the trace did not start: {:?}", t.stderr),
            }
        }
    }

    fn instance(&self) -> String {
        format!("sysperf-{}-system", self.child.id())
    }

    /// Ctrl-C, then the report: exit 130, JSON on stdout.
    fn interrupt(mut self) -> Value {
        let name = self.instance();
        assert!(instance_exists(&name), "{name} not made");
        let pid = self.child.id() as i32;
        let ok = Command::new("kill")
            .args(["-INT", &pid.to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
        let mut stdout = String::new();
        use std::io::Read;
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .unwrap();
        let status = self.child.wait().unwrap();
        self.stderr.extend(self.lines.try_iter());
        assert_eq!(status.code(), Some(130), "{:?}", self.stderr);
        assert!(!instance_exists(&name), "{name} left behind");
        let r: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
        assert_eq!(r["format"], "sysperf-trace-system");
        assert_eq!(r["interrupted"], true);
        // Lost events are reported, never hidden: in the report and on stderr.
        let lost = r["lost_events"].as_u64().unwrap();
        assert_eq!(
            lost > 0,
            r["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w.as_str().unwrap().contains("events were lost")),
            "{r}"
        );
        r
    }
}

/// Traces the system (the event sets `events`) while `work` runs.
fn traced(events: &str, work: impl FnOnce()) -> Value {
    let t = Tracing::start(&["60", "--json", "--events", events]);
    work();
    t.interrupt()
}

fn rate(r: &Value, section: &str) -> f64 {
    r[section]["hit_rate"]
        .as_f64()
        .unwrap_or_else(|| panic!("no {section} hit rate: {}", r[section]))
}

fn find_usr() {
    let ok = Command::new("find")
        .args(["/usr", "-name", "x"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(ok.code().is_some());
}

#[test]
fn the_dentry_hit_rate_is_lower_with_the_cache_dropped_than_on_a_second_pass() {
    let _tracing = crate::support::tracing();
    if !root() {
        return;
    }
    Command::new("sync").status().unwrap();
    std::fs::write("/proc/sys/vm/drop_caches", "2").unwrap();
    let cold = traced("syscalls", find_usr);
    let warm = traced("syscalls", find_usr);
    let (c, w) = (rate(&cold, "dentry"), rate(&warm, "dentry"));
    assert!(
        c < w,
        "cold {c} not below warm {w}: {} / {}",
        cold["dentry"],
        warm["dentry"]
    );
    let missed = |r: &Value| r["dentry"]["lookups_missed"].as_u64().unwrap();
    assert!(missed(&cold) > missed(&warm));
    // find's walk of /usr is path lookups by the thousand, and its name in the table.
    assert!(cold["dentry"]["path_lookups"].as_u64().unwrap() > 1000);
    assert_eq!(cold["dentry"]["kernel_functions"][0], "__d_alloc");
    assert!(cold["pagecache"].is_null() && cold["softirq"].is_null());
    let by_process = cold["syscalls"]["by_process"].as_array().unwrap();
    assert!(
        by_process.iter().any(|p| p["comm"] == "find"),
        "{by_process:?}"
    );
    let kinds = cold["syscalls"]["by_kind"].as_array().unwrap();
    assert!(kinds
        .iter()
        .any(|k| k["name"] == "getdents64" && k["count"].as_u64() > Some(0)));
}

/// Drops `path`'s pages from the page cache (it is clean: written and synced).
fn evict(path: &std::path::Path) {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).unwrap();
    sysperf::sys::fadvise_dontneed(f.as_raw_fd(), 0, 0).unwrap();
}

fn read_all(path: &std::path::Path) {
    let n = std::fs::read(path).unwrap().len();
    assert_eq!(n, 64 << 20);
}

/// Without system calls, whose flood on a busy machine can outrun the reader.
const PAGES: &str = "pagecache,softirq";

#[test]
fn the_page_cache_hit_rate_is_lower_reading_a_file_cold_than_warm_either_way_round() {
    let _tracing = crate::support::tracing();
    if !root() {
        return;
    }
    // On the root file system (a disk), not a tmpfs: its pages come and go with reads.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = dir.path().join("sixty-four-mib");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&path).unwrap();
        let block: Vec<u8> = (0..1 << 20).map(|i: u32| (i % 251) as u8).collect();
        for _ in 0..64 {
            f.write_all(&block).unwrap();
        }
        f.sync_all().unwrap();
    }
    evict(&path);
    let cold = traced(PAGES, || read_all(&path));
    let warm = traced(PAGES, || read_all(&path));
    evict(&path);
    let cold_again = traced(PAGES, || read_all(&path));
    let (c, w, c2) = (
        rate(&cold, "pagecache"),
        rate(&warm, "pagecache"),
        rate(&cold_again, "pagecache"),
    );
    assert!(
        c < w,
        "cold {c} not below warm {w}: {} / {}",
        cold["pagecache"],
        warm["pagecache"]
    );
    assert!(c2 < w, "cold again {c2} not below warm {w}");
    // The file's 16384 pages were requested each time, and read ahead when cold.
    for r in [&cold, &warm, &cold_again] {
        assert!(
            r["pagecache"]["requested_pages"].as_u64().unwrap() >= 16384,
            "{r}"
        );
    }
    assert!(
        cold["pagecache"]["readahead_requested_pages"]
            .as_u64()
            .unwrap()
            >= 8192
    );
    assert!(cold["pagecache"]["readahead_pages"].as_u64().unwrap() > 0);
    // Softirqs are timed against /proc/stat's kernel time; system calls were not traced.
    assert!(cold["softirq"]["kernel_time_ns"].as_u64().unwrap() > 0);
    assert!(cold["syscalls"].is_null() && cold["dentry"].is_null());
}

#[test]
fn a_trace_that_runs_its_course_reports_in_text_and_leaves_nothing() {
    let _tracing = crate::support::tracing();
    if !root() {
        return;
    }
    let out = Command::new(exe())
        .args(["trace", "--system", "1s"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    // Lost events make it exit 1, and are said; otherwise 0.
    let lost = text.contains("events LOST");
    assert_eq!(out.status.code(), Some(if lost { 1 } else { 0 }), "{err}");
    for section in [
        "Page cache",
        "hit rate (found in the cache)",
        "Dentry cache",
        "kernel functions:",
        "System calls:",
        "by process",
        "Softirqs:",
    ] {
        assert!(text.contains(section), "{section}: {text}");
    }
    assert!(err.contains("tracing the whole system for 1 s"), "{err}");
}

#[test]
fn an_instance_left_by_sigkill_goes_with_the_next_sysperf() {
    let _tracing = crate::support::tracing();
    if !root() {
        return;
    }
    let mut t = Tracing::start(&["60"]);
    let name = t.instance();
    assert!(instance_exists(&name));
    t.child.kill().unwrap();
    t.child.wait().unwrap();
    assert!(instance_exists(&name), "SIGKILL allows no cleanup");
    let out = Command::new(exe())
        .args(["doctor", "--json"])
        .env(
            "SYSPERF_DB",
            tempfile::tempdir().unwrap().path().join("s.db"),
        )
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(!instance_exists(&name), "{name} still there");
}

#[test]
fn bad_durations_and_mixed_modes_are_usage_errors() {
    let _tracing = crate::support::tracing();
    for args in [
        vec!["trace", "--system", "0"],
        vec!["trace", "--system", "5x"],
        vec!["trace", "--system", "-3"],
        vec!["trace", "--system", "2d"],
        vec!["trace", "--system", "200h"],
        vec!["trace", "syscall", "--system", "3"],
        vec!["trace", "--system", "3", "--iterations", "5"],
        vec!["trace"],
        vec!["trace", "--system", "3", "--events", "sched"],
        vec!["trace", "--system", "3", "--events", ","],
    ] {
        let out = Command::new(exe()).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty());
    }
}
