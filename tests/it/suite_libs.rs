//! The libraries-and-utilities suite end to end: `sysperf run --suite libs --quick` stores every
//! series with its points and the derived ratios beside the papers' figures, and leaves no
//! scratch directory behind; each point really does its operation, checked by strace's system
//! call counts per iteration (two iteration counts, so that start-up cancels); the lookups are
//! served by the module under test (the db curve's users exist only in the database) without
//! touching the machine's /etc; and the shells print one prompt per empty command.
//!
//! Nothing here depends on speed.

use crate::support as common;

use common::*;

use std::collections::HashMap;

/// Calls per iteration of each name (the difference of `hi` and `lo` iterations).
fn per_iteration(id: &str, param: u64, lo: u64, hi: u64) -> HashMap<String, f64> {
    let (a, b) = (syscall_counts(id, param, lo), syscall_counts(id, param, hi));
    b.iter()
        .map(|(n, &c)| {
            (
                n.clone(),
                (c - a.get(n).copied().unwrap_or(0)) as f64 / (hi - lo) as f64,
            )
        })
        .collect()
}

fn get(m: &HashMap<String, f64>, name: &str) -> f64 {
    m.get(name).copied().unwrap_or(0.0)
}

/// Bytes of the file the single-character series reads (io::CHARS_FILE).
const CHARS_FILE: f64 = 256.0 * 1024.0;

#[test]
fn quick_run_stores_every_series_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let db = dir.path().join("x.db");
    let passwd = std::fs::read("/etc/passwd").unwrap();
    let v = success_json(
        sysperf(&db)
            .env("TMPDIR", &tmp)
            .args(["run", "--suite", "libs", "--quick", "--json", "--db"])
            .arg(&db),
    );
    let ids: Vec<&str> = v["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    for id in [
        "libs.chars",
        "libs.copy",
        "libs.setbuf",
        "libs.stderr-file",
        "libs.stderr-pty",
        "libs.tty-unbuffered",
        "libs.tty-line",
        "libs.lock-flock-disk",
        "libs.lock-link-disk",
        "libs.log",
        "libs.log-reader",
        "libs.memcpy",
        "libs.malloc",
        "libs.convert",
        "libs.prompt",
    ] {
        assert!(ids.contains(&id), "{id} not stored: {ids:?}");
    }
    if is_root() {
        for id in [
            "libs.pw-files",
            "libs.pw-db",
            "libs.host-files",
            "libs.host-nscd",
        ] {
            assert!(ids.contains(&id), "{id} not stored as root: {ids:?}");
        }
    }
    for s in v["series"].as_array().unwrap() {
        for p in s["points"].as_array().unwrap() {
            assert!(
                p["y"]["median"].as_f64().is_some_and(|m| m > 0.0),
                "{}: {p}",
                s["id"]
            );
        }
    }
    let chars = series_of(&v, "libs.chars");
    let labels: Vec<&str> = chars["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["label"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        ["read-1", "getc", "fread-1", "fread-bufsiz", "read-blksize"]
    );
    assert_eq!(
        xs_of(series_of(&v, "libs.copy")),
        [1.0, 1024.0, 4096.0, 65536.0]
    );
    let derived = derived_names(&v);
    assert!(
        derived.contains(&"single-character read(2) against getc (§4.2)"),
        "{derived:?}"
    );
    let five = v["derived"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "single-character read(2) against getc (§4.2)")
        .unwrap();
    assert!(
        five["formula"].as_str().unwrap().contains("factor of five"),
        "{five}"
    );
    // The papers' figures beside today's: the 10% flock saved mail delivery (§4.2.3), at
    // the quick run's 16 entries, on disk and tmpfs.
    for fs in ["disk", "tmpfs"] {
        let name = format!("link/unlink against flock, {fs}, 16 entries (§4.2.3)");
        let d = v["derived"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == name.as_str())
            .unwrap_or_else(|| panic!("{name} not derived: {derived:?}"));
        assert!(d["formula"].as_str().unwrap().contains("10%"), "{d}");
    }
    if is_root() {
        assert!(
            derived
                .contains(&"gethostbyname, flat file against the nscd cache, 1000 hosts (§4.2.1)"),
            "{derived:?}"
        );
    }
    let notes = v["notes"].to_string();
    assert!(notes.contains("st_blksize"), "{notes}");
    assert!(notes.contains("malloc's waste"), "{notes}");
    if is_root() {
        assert!(
            notes.contains("system calls per prompt (traced)"),
            "{notes}"
        );
        assert!(notes.contains("up to twenty"), "{notes}");
    }
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
    assert!(left.is_empty(), "left behind in TMPDIR: {left:?}");
    assert_eq!(std::fs::read("/etc/passwd").unwrap(), passwd);
}

fn is_root() -> bool {
    sysperf::sys::is_root()
}

/// The processes named nscd now.
fn nscd_pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "nscd")
        })
        .collect()
}

#[test]
fn character_reads_make_one_read_per_byte_or_per_buffer() {
    if !strace_available() {
        return;
    }
    // read(fd, &c, 1): one read per byte and the one that sees the end.
    let m = per_iteration("libs.chars", 0, 1, 2);
    assert_eq!(get(&m, "read"), CHARS_FILE + 1.0, "{m:?}");
    // getc, fread a byte at a time, fread of BUFSIZ, read of st_blksize: one read per
    // buffer (st_blksize is at least 1 KiB).
    for p in 1..=4 {
        let m = per_iteration("libs.chars", p, 2, 6);
        let reads = get(&m, "read");
        assert!(
            (2.0..=CHARS_FILE / 1024.0 + 1.0).contains(&reads),
            "point {p}: {reads} reads per iteration"
        );
    }
}

#[test]
fn copy_moves_the_file_in_buffer_sized_calls() {
    if !strace_available() {
        return;
    }
    // 4 KiB buffers over a 1 MiB file: 256 reads and writes, and the read at the end.
    let m = per_iteration("libs.copy", 4096, 2, 6);
    assert_eq!(get(&m, "read"), 257.0, "{m:?}");
    assert_eq!(get(&m, "write"), 256.0, "{m:?}");
}

#[test]
fn stdio_buffering_decides_the_writes() {
    if !strace_available() {
        return;
    }
    // setbuf: 16 KiB putc'd per iteration; writes of st_blksize (at most 16), 1 KiB (16) or
    // one byte (16384).
    let m = per_iteration("libs.setbuf", 0, 4, 8);
    assert!(get(&m, "write") <= 16.0, "{m:?}");
    assert_eq!(get(&per_iteration("libs.setbuf", 1, 4, 8), "write"), 16.0);
    assert_eq!(
        get(&per_iteration("libs.setbuf", 2, 2, 4), "write"),
        16384.0
    );
    // stderr: a write per character before 4.3BSD, one per fprintf since, one per line
    // buffered; to a file and to a pty.
    for id in ["libs.stderr-file", "libs.stderr-pty"] {
        assert!(get(&per_iteration(id, 0, 20, 60), "write") > 40.0, "{id}");
        assert_eq!(get(&per_iteration(id, 1, 20, 60), "write"), 1.0, "{id}");
        assert_eq!(get(&per_iteration(id, 2, 20, 60), "write"), 1.0, "{id}");
    }
    // Terminal lines of 80 characters: 80 writes unbuffered, one line-buffered.
    assert_eq!(
        get(&per_iteration("libs.tty-unbuffered", 80, 20, 60), "write"),
        80.0
    );
    assert_eq!(
        get(&per_iteration("libs.tty-line", 80, 20, 60), "write"),
        1.0
    );
}

#[test]
fn locks_and_log_syncs_make_their_calls() {
    if !strace_available() {
        return;
    }
    for fs in ["disk", "tmpfs"] {
        let id = |k: &str| format!("libs.lock-{k}-{fs}");
        assert_eq!(get(&per_iteration(&id("flock"), 16, 20, 60), "flock"), 2.0);
        assert_eq!(get(&per_iteration(&id("fcntl"), 16, 20, 60), "fcntl"), 2.0);
        let m = per_iteration(&id("excl"), 16, 20, 60);
        assert_eq!(
            (get(&m, "openat"), get(&m, "close"), get(&m, "unlinkat")),
            (1.0, 1.0, 1.0),
            "{m:?}"
        );
        let m = per_iteration(&id("link"), 16, 20, 60);
        assert_eq!(
            (get(&m, "linkat"), get(&m, "unlinkat")),
            (1.0, 1.0),
            "{m:?}"
        );
    }
    let m = per_iteration("libs.log", 0, 20, 60);
    assert_eq!((get(&m, "write"), get(&m, "fsync")), (1.0, 0.0), "{m:?}");
    assert_eq!(get(&per_iteration("libs.log", 1, 5, 10), "fdatasync"), 1.0);
    assert_eq!(get(&per_iteration("libs.log", 2, 5, 10), "fsync"), 1.0);
    // The reader: one 64 KiB pread per operation, beside a writer child that syncs.
    assert_eq!(
        get(&per_iteration("libs.log-reader", 2, 20, 60), "pread64"),
        1.0
    );
    assert!(syscall_counts("libs.log-reader", 2, 200)["fsync"] > 0);
}

#[test]
fn lookups_are_served_by_the_module_under_test_in_a_private_namespace() {
    if !is_root() || !strace_available() || !std::path::Path::new("/usr/bin/makedb").exists() {
        eprintln!("needs root, strace and libnss-db: skipped");
        return;
    }
    let passwd = std::fs::read("/etc/passwd").unwrap();
    let conf = std::fs::read("/etc/nsswitch.conf").unwrap();
    // Calls per iteration (30 against 10 iterations) of one kind, by every process of the
    // worker (the nscd curve's daemon too), that succeeded and name `what`.
    let per_lookup = |id: &str, call: &str, what: &str| -> f64 {
        // One file per process (-ff): with -f into one file, a call interrupted by another
        // process's line is split into "<unfinished ...>" and "<... resumed> = -1", and the
        // first half of a refused connect (the warm-up's wait for the daemon) counted as one
        // that succeeded (CI: 19 of 20).
        let trace = |n: u64| -> usize {
            let dir = tempfile::tempdir().unwrap();
            strace_worker(
                &["-ff", "-e", "trace=openat,connect"],
                &dir.path().join("t"),
                &point_request(id, 100, n),
                &[],
            );
            files_in(dir.path())
                .iter()
                .flat_map(|text| text.lines())
                .filter(|l| l.contains(&format!("{call}(")) && l.contains(what))
                .filter(|l| !l.contains("= -1"))
                .count()
        };
        (trace(30) as f64 - trace(10) as f64) / 20.0
    };
    let opens = |id: &str, path: &str| per_lookup(id, "openat", &format!("\"{path}\""));
    // The flat file is opened for each of the two lookups; the database never.
    assert_eq!(opens("libs.pw-files", "/etc/passwd"), 2.0);
    assert_eq!(opens("libs.pw-files", "/var/lib/misc/passwd.db"), 0.0);
    // The db curve's users are only in the database (the flat file the worker sees holds
    // root alone), so its lookups succeeding means the db module served them; and it
    // reads the database, not the flat file.
    assert_eq!(opens("libs.pw-db", "/etc/passwd"), 0.0);
    // Berkeley DB opens the file twice per lookup.
    assert!(opens("libs.pw-db", "/var/lib/misc/passwd.db") >= 2.0);
    assert_eq!(opens("libs.host-files", "/etc/hosts"), 1.0);
    // No nscd answers the flat-file lookups: the machine's socket is hidden.
    let nscd_socket = "sun_path=\"/var/run/nscd/socket\"";
    assert_eq!(per_lookup("libs.host-files", "connect", nscd_socket), 0.0);
    if std::path::Path::new("/usr/sbin/nscd").exists() {
        // The cache daemon's curve: the worker connects to the private daemon's socket for
        // each lookup, and nobody opens the hosts file (which, after the warm-up, holds
        // localhost alone: only the cache can answer).
        let before = nscd_pids();
        let connects = per_lookup("libs.host-nscd", "connect", nscd_socket);
        assert!(connects >= 1.0, "{connects} connects per lookup");
        assert_eq!(opens("libs.host-nscd", "/etc/hosts"), 0.0);
        // Each worker killed and reaped its daemon.
        let left: Vec<u32> = nscd_pids()
            .into_iter()
            .filter(|p| !before.contains(p))
            .collect();
        assert!(left.is_empty(), "nscd left running: {left:?}");
    } else {
        assert!(
            std::env::var("CI").is_err(),
            "unscd is missing on CI: .ci/run must install it"
        );
        eprintln!("unscd not installed: the nscd curve is not checked (apt-get install unscd)");
    }
    // The machine's files are as they were, and no mount outlived the workers.
    assert_eq!(std::fs::read("/etc/passwd").unwrap(), passwd);
    assert_eq!(std::fs::read("/etc/nsswitch.conf").unwrap(), conf);
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains("sysperf-libs-"), "{mounts}");
}

#[test]
fn shells_print_one_prompt_per_empty_command() {
    if !strace_available() {
        return;
    }
    for (param, shell) in ["bash", "dash", "tcsh", "csh"].iter().enumerate() {
        if !["/usr/bin", "/bin"]
            .iter()
            .any(|d| std::path::Path::new(d).join(shell).exists())
        {
            eprintln!("{shell} not installed: skipped");
            continue;
        }
        // Writes of the prompt by the shell (its own strace file: -ff), and reads of the
        // typed newline, per iteration.
        let count = |n: u64| -> (usize, usize) {
            let files = strace_point(&["-e", "trace=read,write"], "libs.prompt", param as u64, n);
            let shell_file = files
                .iter()
                .find(|f| {
                    f.lines()
                        .any(|l| l.starts_with("write(") && l.contains("@sp> "))
                })
                .unwrap_or_else(|| panic!("{shell}: no process wrote the prompt"));
            let prompts = shell_file
                .lines()
                .filter(|l| l.starts_with("write(") && l.contains("@sp> "))
                .count();
            let newlines = shell_file
                .lines()
                .filter(|l| l.starts_with("read(") && l.contains("\"\\n\""))
                .count();
            (prompts, newlines)
        };
        let (a, b) = (count(5), count(15));
        assert_eq!(b.0 - a.0, 10, "{shell}: prompts");
        assert!(b.1 - a.1 >= 10, "{shell}: newlines read {a:?} {b:?}");
    }
}

/// The scratch directories of worker `pid` in `base`.
fn scratch_of(base: &std::path::Path, pid: u32) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(base)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with(&format!("sysperf-libs-{pid}-")))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_killed_workers_scratch_in_dev_shm_and_var_tmp_is_named_for_it_and_swept() {
    let shm = std::path::Path::new("/dev/shm");
    let var_tmp = std::path::Path::new("/var/tmp");
    if !shm.is_dir() || !var_tmp.is_dir() {
        eprintln!("no /dev/shm or /var/tmp: skipped");
        return;
    }
    // TMPDIR on tmpfs: the disk series then write to /var/tmp (when it is on a disk).
    let tmp = tempfile::tempdir_in(shm).unwrap();
    // (tmpfs and ramfs magic numbers, as the suite's disk_dir tells them)
    let var_tmp_on_disk =
        sysperf::sys::fs_type(var_tmp).is_ok_and(|m| m != 0x0102_1994 && m != 0x8584_58f6);
    let mut cases = vec![("libs.lock-flock-tmpfs", shm)];
    if var_tmp_on_disk {
        cases.push(("libs.lock-flock-disk", var_tmp));
    }
    let mut killed = Vec::new();
    for (id, base) in cases {
        let mut w = std::process::Command::new(env!("CARGO_BIN_EXE_sysperf"))
            .args(["__worker", &point_request(id, 16, 1 << 40)])
            .env("TMPDIR", tmp.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = w.id();
        let start = std::time::Instant::now();
        while scratch_of(base, pid).is_empty() {
            assert!(
                start.elapsed() < std::time::Duration::from_secs(30),
                "{id}: no sysperf-libs-{pid}-* in {}",
                base.display()
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        w.kill().unwrap();
        w.wait().unwrap();
        // SIGKILL: the worker could not remove its scratch, named after it.
        let left = scratch_of(base, pid);
        assert_eq!(left.len(), 1, "{id}: {left:?}");
        killed.push(left[0].clone());
    }
    // The next run's tidy removes them, and says so.
    let db = tmp.path().join("x.db");
    let out = sysperf(&db)
        .env("TMPDIR", tmp.path())
        .args(["run", "--suite", "libs.convert", "--quick", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    for d in &killed {
        assert!(!d.exists(), "{} left after the run: {err}", d.display());
        assert!(err.contains(&d.display().to_string()), "{err}");
    }
}

#[test]
fn series_that_cannot_run_say_skipped_and_why_in_the_output_and_notes() {
    // As nobody (setpriv from root): the lookups need root, so each is skipped with the
    // reason, in the printed run (its Notes) and in the stored notes; the rest is measured.
    if !is_root()
        || !std::process::Command::new("setpriv")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    {
        eprintln!("needs root and setpriv to run as another user: skipped");
        return;
    }
    // Nobody's own directory (not one everyone may write, which sysperf refuses: #29).
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::chown(dir.path(), Some(65534), Some(65534)).unwrap();
    let db = dir.path().join("x.db");
    let run = |args: &[&str]| {
        let out = std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_sysperf"))
            .args(args)
            .arg("--db")
            .arg(&db)
            .env("HOME", dir.path())
            .env("TMPDIR", dir.path())
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let text = run(&["run", "--suite", "libs.convert", "--quick"]);
    let v: serde_json::Value = serde_json::from_str(&run(&[
        "run",
        "--suite",
        "libs.convert",
        "--quick",
        "--json",
    ]))
    .unwrap();
    let notes = v["notes"].to_string();
    for id in [
        "libs.pw-files",
        "libs.pw-db",
        "libs.host-files",
        "libs.host-nscd",
    ] {
        let line = format!("libs: {id} skipped: needs root");
        assert!(text.contains(&line), "{id} not said skipped:\n{text}");
        assert!(notes.contains(&line), "{id} not in the notes: {notes}");
    }
    assert!(text.contains("libs.convert"), "{text}");
}

#[test]
fn the_private_nscd_dies_with_a_worker_killed_outright() {
    if !is_root() || !std::path::Path::new("/usr/sbin/nscd").exists() {
        eprintln!("needs root and unscd: skipped");
        return;
    }
    // A worker outside the harness (no process group is killed after it), SIGKILLed while
    // it times lookups answered by its daemon.
    let mut w = std::process::Command::new(env!("CARGO_BIN_EXE_sysperf"))
        .args(["__worker", &point_request("libs.host-nscd", 10, 1 << 40)])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let worker = w.id();
    let parent_of = |p: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
        let after = &stat[stat.rfind(')')? + 2..];
        after.split_whitespace().nth(1)?.parse().ok()
    };
    let start = std::time::Instant::now();
    let daemon = loop {
        if let Some(d) = nscd_pids()
            .into_iter()
            .find(|&p| parent_of(p) == Some(worker))
        {
            break d;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "the worker started no nscd"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    // Wait for the timed loop: the daemon's socket is up once lookups run; a little later
    // is as good.
    std::thread::sleep(std::time::Duration::from_millis(300));
    w.kill().unwrap();
    w.wait().unwrap();
    let alive = |p: u32| {
        std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| {
            let state = s[s.rfind(')').unwrap() + 2..].chars().next();
            !matches!(state, Some('Z' | 'X'))
        })
    };
    let start = std::time::Instant::now();
    while alive(daemon) {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "nscd {daemon} outlived its worker {worker}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
