//! Command-line behaviour of the `sysperf` binary: the documented commands, the JSON contract
//! scripts rely on, the store, bad input (exit 2, one line, no panic), interruption and
//! timeouts (nothing left behind). Figures are checked for sign and shape, never for speed.

use predicates::prelude::*;
use std::path::Path;
use std::time::Duration;

use crate::support as common;
use common::*;

#[test]
fn list_json_has_the_papers_49_ids_in_table_order_then_lebenchs() {
    let tmp = tempfile::tempdir().unwrap();
    let out = sysperf(&tmp.path().join("db"))
        .args(["list", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v = json_of(&out.stdout);
    let ids: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids[0], "syscall");
    assert_eq!(ids[11], "udgself4");
    assert_eq!(ids[48], "gausspage.inf");
    // Then LEBench's operations (#19): read, write, mmap, munmap, page faults, fork, thread
    // creation, send/recv, select/poll/epoll, futex and sched_yield, group "lebench".
    let all = v.as_array().unwrap();
    let le: Vec<&serde_json::Value> = all[49..all.len() - 3].iter().collect();
    assert!(le.iter().all(|e| e["group"] == "lebench"), "{le:?}");
    // Then the variants of the papers' tests (seqpage-thp: the region left to the machine's
    // transparent huge pages), chosen by id like LEBench's.
    assert_eq!(all[all.len() - 3]["id"], "seqpage-thp");
    assert_eq!(all[all.len() - 3]["group"], "variant");
    // Then the command benchmark of `ab --a/--b` (#30).
    assert_eq!(all[all.len() - 2]["id"], "command");
    // Last, the host-speed reference every interleaved run carries (#42).
    assert_eq!(all[all.len() - 1]["id"], "hostspeed");
    assert_eq!(all[all.len() - 1]["group"], "reference");
    for want in [
        "le-read-1",
        "le-write-10000",
        "le-mmap-1000",
        "le-munmap-10",
        "le-pagefault-file",
        "le-pagefault-anon",
        "le-fork-12000",
        "le-thread",
        "le-send96000",
        "le-epoll-1000",
        "le-futex",
        "le-yield",
    ] {
        assert!(ids.contains(&want), "{want} missing from {ids:?}");
    }
    for e in v.as_array().unwrap() {
        assert!(e["paper"].as_str().is_some_and(|s| !s.is_empty()));
        assert!(e["today"].as_str().is_some_and(|s| !s.is_empty()));
        assert!(e["paper_count"].as_u64().unwrap() > 0);
    }
}

#[test]
fn quick_run_of_lebench_measures_each_operation_and_the_default_run_leaves_them_out() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let v = success_json(sysperf(&db).args(["run", "le-*", "--quick", "--json"]));
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), sysperf::bench::lebench::SPECS.len());
    for r in results {
        let id = r["id"].as_str().unwrap();
        assert!(id.starts_with("le-"), "{id}");
        assert!(
            r["us_per_op"].as_f64().is_some_and(|u| u > 0.0),
            "{id}: {r}"
        );
        assert!(r["error"].is_null(), "{id}: {r}");
    }
    // Without ids, the plan is the papers' 49 (dry run: nothing measured).
    let out = sysperf(&db).args(["run", "--dry-run"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("gausspage.inf") && !text.contains("le-read-1"),
        "{text}"
    );
}

#[test]
fn quick_run_json_gives_positive_figures_and_is_stored() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let sel = [
        "syscall",
        "pipeself4",
        "pipeback4",
        "forks0",
        "vexecs0null",
        "execs0null-1kenv",
        "seqpage",
        "gausspage.1",
    ];
    let v = success_json(
        sysperf(&db)
            .arg("run")
            .args(sel)
            .args(["--quick", "--json", "--label", "smoke"]),
    );
    assert_eq!(v["format"], "sysperf-run");
    assert_eq!(v["complete"], true);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), sel.len());
    for r in results {
        let id = r["id"].as_str().unwrap();
        let f = |k: &str| r[k].as_f64().unwrap_or_else(|| panic!("{id}: {k} missing"));
        assert!(f("real_s") > 0.0, "{id}");
        assert!(f("user_s") + f("sys_s") > 0.0, "{id}");
        assert!(f("us_per_op") > 0.0, "{id}");
        let ci = r["us_per_op_ci"].as_array().unwrap();
        assert!(
            ci[0].as_f64().unwrap() <= f("us_per_op") && f("us_per_op") <= ci[1].as_f64().unwrap()
        );
        assert!(
            !r["trials"].as_array().unwrap().is_empty(),
            "{id}: raw trials kept"
        );
    }
    let derived = v["derived"].as_array().unwrap();
    // execs0null-1kenv is selected but not execs0null, so no environment cost; forks0 and
    // vexecs0null give no exec overhead pair either (vexecs pairs with vforks).
    assert!(!derived
        .iter()
        .any(|d| d["name"].as_str().unwrap().starts_with("environment cost")));
    assert!(derived.iter().any(|d| d["name"]
        .as_str()
        .unwrap()
        .starts_with("system time per fault (seqpage)")));
    for d in derived {
        assert!(d["formula"].as_str().is_some_and(|s| !s.is_empty()));
        assert!(d["unit"].as_str().is_some());
    }
    let id = v["id"].as_str().unwrap();

    // Stored: listed, shown by id, label and 'latest', identical to what run printed.
    sysperf(&db)
        .arg("runs")
        .assert()
        .success()
        .stdout(predicate::str::contains(id).and(predicate::str::contains("smoke")));
    for spec in [id, "smoke", "latest", &id[..6]] {
        let shown = sysperf(&db)
            .args(["show", spec, "--json"])
            .output()
            .unwrap();
        assert!(shown.status.success(), "show {spec}");
        assert_eq!(
            json_of(&shown.stdout),
            v,
            "show {spec} differs from what run printed"
        );
    }
    sysperf(&db)
        .args(["show", id])
        .assert()
        .success()
        .stdout(predicate::str::contains("Table 2.").and(predicate::str::contains("Table 7.")));
    sysperf(&db).args(["rm", id]).assert().success();
    sysperf(&db)
        .args(["show", id])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("sysperf runs"));
}

#[test]
fn list_suites_names_every_suite_and_its_series() {
    let tmp = tempfile::tempdir().unwrap();
    let out = success_json(sysperf(&tmp.path().join("s.db")).args(["list", "--suites", "--json"]));
    let names: Vec<&str> = out
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "bbn",
            "clock",
            "commands",
            "cspeed",
            "ctx",
            "feder",
            "fs",
            "libs",
            "login",
            "mem",
            "net",
            "perfbench",
            "scaling",
            "swap",
            "tty",
            "vm",
            "workload"
        ]
    );
    for suite in out.as_array().unwrap() {
        let series = suite["series"].as_array().unwrap();
        assert!(!series.is_empty(), "{}", suite["name"]);
        for s in series {
            let id = s["id"].as_str().unwrap();
            assert!(id.starts_with(&format!("{}.", suite["name"].as_str().unwrap())));
            assert!(!s["points"].as_array().unwrap().is_empty(), "{id}");
            assert!(!s["quick_points"].as_array().unwrap().is_empty(), "{id}");
        }
    }
    let text = sysperf(&tmp.path().join("s.db"))
        .args(["list", "--suites"])
        .output()
        .unwrap();
    assert!(text.status.success());
    assert!(String::from_utf8_lossy(&text.stdout).contains("sysperf run --suite bbn"));
}

#[test]
fn bad_input_is_one_line_exit_2_and_no_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let cases: &[(&[&str], &str)] = &[
        (&["run", "pipebak4"], "did you mean pipeback4"),
        (&["run", "nosuch*"], "matches no benchmark"),
        (&["run", "--trials", "0"], "trials"),
        (&["run", "--trials", "-3"], "trials"),
        (&["run", "--trials", "99999999999"], "trials"),
        (&["run", "--min-time", "0"], "positive"),
        (&["run", "--min-time", "-1"], "positive"),
        (&["run", "--timeout", "-5"], "positive"),
        (&["run", "--min-time", "1e300"], "more than a day"),
        (&["run", "--min-time", "NaN"], "positive"),
        (&["run", "--timeout", "abc"], "not a number"),
        (&["run", "--cpu", "9999", "syscall"], "--cpu"),
        (&["run", "--cpu", "1-0", "syscall"], "--cpu"),
        (&["run", "--placement", "sideways"], "placement"),
        (&["run", "--suite", "nope"], "no such suite"),
        (&["run", "--suite", "all", "--trials", "0"], "trials"),
        (&["show", "nope"], "no run matches"),
        (&["rm", "nope"], "no run matches"),
    ];
    for (args, needle) in cases {
        let err = usage_error(sysperf(&db).args(*args));
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn spread_needs_two_cpus() {
    let tmp = tempfile::tempdir().unwrap();
    let out = sysperf(&tmp.path().join("s.db"))
        .args([
            "run",
            "pipeback4",
            "--placement",
            "spread",
            "--cpu",
            "0",
            "--quick",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("spread needs two CPUs"));
}

#[test]
fn unusable_databases_are_refused_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    // Not SQLite at all.
    let text = tmp.path().join("notes.txt");
    std::fs::write(&text, "my precious notes\n").unwrap();
    let err = usage_error(sysperf(&text).args(["run", "syscall", "--quick"]));
    assert!(err.contains("not an SQLite database"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&text).unwrap(),
        "my precious notes\n"
    );
    // SQLite, but someone else's.
    let other = tmp.path().join("other.db");
    rusqlite::Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE accounts(x); INSERT INTO accounts VALUES (1);")
        .unwrap();
    let before = std::fs::read(&other).unwrap();
    let err = usage_error(sysperf(&other).args(["runs"]));
    assert!(err.contains("not a sysperf database"), "{err}");
    assert_eq!(std::fs::read(&other).unwrap(), before);
    // A path that cannot be created.
    usage_error(sysperf(Path::new("/proc/sysperf-nope/x.db")).args(["runs"]));
}

#[test]
fn two_runs_into_one_store_at_once_both_land() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let spawn = |label: &str| {
        std::process::Command::new(assert_cmd::cargo::cargo_bin("sysperf"))
            .env("SYSPERF_DB", &db)
            .args([
                "run",
                "syscall",
                "signocsw",
                "pipeself4",
                "--quick",
                "--json",
                "--label",
                label,
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn("a"), spawn("b"));
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(
        a.status.success() && b.status.success(),
        "{}{}",
        String::from_utf8_lossy(&a.stderr),
        String::from_utf8_lossy(&b.stderr)
    );
    for (label, printed) in [("a", &a.stdout), ("b", &b.stdout)] {
        let shown = sysperf(&db)
            .args(["show", label, "--json"])
            .output()
            .unwrap();
        assert!(shown.status.success());
        let v = json_of(&shown.stdout);
        assert_eq!(v, json_of(printed));
        assert_eq!(v["results"].as_array().unwrap().len(), 3);
    }
}

#[test]
fn a_hanging_trial_is_killed_recorded_and_the_run_goes_on() {
    let tag = unique_tag("hang");
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    // Every trial long enough to reach 2 s is killed at 0.3 s: calibration fails, the
    // benchmark is recorded as failed with the reason, and the next benchmark still runs.
    let out = sysperf(&db)
        .env("SYSPERF_TEST_TAG", &tag)
        .args([
            "run",
            "csw",
            "syscall",
            "--min-time",
            "2",
            "--timeout",
            "0.3",
            "--json",
        ])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json_of(&out.stdout);
    let results = v["results"].as_array().unwrap();
    // The two tests and the host-speed reference, whose trials are as long (#42).
    assert_eq!(results.len(), 3);
    for r in results {
        assert!(r["error"].as_str().unwrap().contains("timed out"), "{r}");
        assert!(r["trials"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["error"].as_str().is_some_and(|e| e.contains("timed out"))));
    }
    assert!(v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w["kind"] == "failed"));
    assert_nothing_left(&tag);
}

#[test]
fn ctrl_c_keeps_finished_benchmarks_and_leaves_nothing_behind() {
    let tag = unique_tag("ctrl-c");
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let child = spawn_tagged(
        &db,
        &tag,
        &[
            "run",
            "syscall",
            "signocsw",
            "csw",
            "pipeback4",
            "forks0",
            "--min-time",
            "0.2",
            "--json",
        ],
    );
    // Wait until the first benchmark is stored (after the first round), then interrupt as a
    // terminal would.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let out = sysperf(&db).args(["runs", "--json"]).output().unwrap();
        let stored = out.status.success()
            && json_of(&out.stdout).as_array().is_some_and(|a| {
                a.first()
                    .is_some_and(|r| r["benchmarks"].as_u64() >= Some(1))
            });
        if stored || std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    interrupt(&child);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json_of(&out.stdout);
    assert_eq!(v["complete"], false);
    // Trials run in rounds, so an interrupted run keeps every benchmark that had a counted
    // trial, each with the rounds it finished: fewer counted trials than the 5 x 6 asked for
    // (five tests and the host-speed reference, #42).
    let results = v["results"].as_array().unwrap();
    let n = results.len();
    assert!((1..=6).contains(&n), "{n} results");
    let counted: usize = results
        .iter()
        .map(|r| {
            r["trials"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|t| t["kind"] == "measured")
                .count()
        })
        .sum();
    assert!((1..30).contains(&counted), "{counted} counted trials");
    let stored = json_of(
        &sysperf(&db)
            .args(["show", "latest", "--json"])
            .output()
            .unwrap()
            .stdout,
    );
    assert_eq!(stored["complete"], false);
    assert_eq!(stored["results"].as_array().unwrap().len(), n);
    sysperf(&db)
        .arg("runs")
        .assert()
        .success()
        .stdout(predicate::str::contains("(incomplete: interrupted)"));
    assert_nothing_left(&tag);
}

#[test]
fn help_documents_exit_codes_and_the_store() {
    let tmp = tempfile::tempdir().unwrap();
    sysperf(&tmp.path().join("db"))
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("Exit codes").and(predicate::str::contains("SYSPERF_DB")));
}

/// The help is made from the registries: `run --help` names every suite (it named six of the
/// eight, without libs and net), `plot --help` every chart group and figure, so a new suite
/// or benchmark family is one file and one line in its registry.
#[test]
fn the_help_names_every_suite_chart_group_and_figure() {
    let tmp = tempfile::tempdir().unwrap();
    let help = |cmd: &str| {
        let out = sysperf(&tmp.path().join("db"))
            .args([cmd, "--help"])
            .output()
            .unwrap();
        assert!(out.status.success());
        // Joined again where clap wrapped the lines.
        String::from_utf8(out.stdout)
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let run = help("run");
    let suites = run
        .split("--suite <NAME>")
        .nth(1)
        .and_then(|s| s.split(" --").next())
        .unwrap_or("");
    for s in sysperf::suite::suites() {
        assert!(
            suites.contains(&format!(" {},", s.name)),
            "{} is not in run --help's --suite: {suites}",
            s.name
        );
    }
    let plot = help("plot");
    let between = |from: &str, to: &str| {
        plot.split(from)
            .nth(1)
            .and_then(|s| s.split(to).next())
            .unwrap_or("")
            .to_string()
    };
    let (option, groups) = (
        between("A group of tests:", " --"),
        between("Groups:", "Figures"),
    );
    for g in sysperf::bench::charts() {
        assert!(
            option.contains(g.name),
            "{} is not in --group's help: {option}",
            g.name
        );
        assert!(
            groups.contains(g.name),
            "{} is not in plot --help's groups: {groups}",
            g.name
        );
    }
    for f in sysperf::suite::all_figure_ids() {
        assert!(plot.contains(f), "{f} is not in plot --help");
    }
}

/// A stdout whose reader is already gone: every write fails with EPIPE.
fn closed_pipe() -> std::process::Stdio {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills two descriptors we then own.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both descriptors were just made and are owned once each.
    unsafe {
        drop(std::os::fd::OwnedFd::from_raw_fd(fds[0]));
        std::process::Stdio::from(std::os::fd::OwnedFd::from_raw_fd(fds[1]))
    }
}

#[test]
fn a_closed_stdout_ends_every_command_quietly() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    sysperf(&db)
        .args(["run", "syscall", "--quick"])
        .assert()
        .success();
    for args in [
        &["show", "latest", "--json"][..],
        &["show", "latest"],
        &["compare", "latest", "vax750-4.2bsd", "--json"],
        &["runs", "--json"],
        &["list", "--json"],
        &["list", "--suites"],
        &["export", "latest"],
        &["run", "syscall", "--quick", "--json"],
    ] {
        let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("sysperf"))
            .args(args)
            .env("SYSPERF_DB", &db)
            .stdout(closed_pipe())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(
            !err.contains("panicked") && !err.contains("error"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn a_store_path_that_cannot_be_a_store_is_refused_and_nothing_is_created() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir(dir.join("adir")).unwrap();
    let cases: &[(&str, &str)] = &[
        ("missing-dir/x.db", "does not exist"),
        ("typo/", "names a directory"),
        ("mysql://u@h:3306/db", "URLs are not supported"),
        ("/dev/null", "not a regular file"),
        ("adir", "is a directory"),
    ];
    for (db, why) in cases {
        for args in [
            &["runs"][..],
            &["show", "latest"],
            &["run", "syscall", "--quick"],
        ] {
            let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("sysperf"))
                .args(args)
                .arg("--db")
                .arg(db)
                .current_dir(dir)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{db} {args:?}: {err}");
            assert!(err.contains(why), "{db} {args:?}: {err}");
        }
    }
    // Nothing was made: no mistyped directory, no "postgres:" directory, no journal.
    let mut left: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, vec!["adir".to_string()]);
    assert_eq!(std::fs::read_dir(dir.join("adir")).unwrap().count(), 0);
    assert!(!std::path::Path::new("/dev/null-journal").exists());
}

#[test]
fn outputs_never_write_through_another_users_symlink() {
    // As root: a link planted by another user (owned by nobody) at the output's name is
    // refused with exit 2 and what it points to is unchanged; without root there is no other
    // user to own a link, and the output then replaces a link of our own instead of following it.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let victim = dir.join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let root = unsafe { libc::geteuid() } == 0;
    for (args, name) in [
        (&["job", "null", "-o"][..], "nulljob"),
        (&["export", "vax750-4.2bsd", "-o"], "nulljob"),
        (
            &["report", "vax750-4.2bsd", "vax750-4.3bsd", "-o"],
            "nulljob",
        ),
        (
            &["plot", "vax750-4.2bsd", "--test", "syscall", "-o"],
            "fig.svg",
        ),
    ] {
        let planted = dir.join(name);
        if !planted.exists() {
            std::os::unix::fs::symlink(&victim, &planted).unwrap();
            if root {
                std::os::unix::fs::lchown(&planted, Some(65534), Some(65534)).unwrap();
            }
        }
        let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("sysperf"))
            .args(args)
            .arg(&planted)
            .env("SYSPERF_DB", dir.join("s.db"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        if root {
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains("symbolic link owned by user 65534"), "{err}");
        } else {
            assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
            std::fs::remove_file(&planted).unwrap();
            std::os::unix::fs::symlink(&victim, &planted).unwrap();
        }
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious", "{args:?}");
    }
}

#[test]
fn settle_waits_for_a_quiet_machine_and_says_what_it_found() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    // Two busy test threads may keep this machine from ever being quiet: a 2 s limit still
    // ends, and the run says which way it went (a note when quiet, a warning when not).
    let out = sysperf(&db)
        .args(["run", "syscall", "--quick", "--settle", "2"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("settled: the machine was quiet after")
            || text.contains("not settled: the machine was still busy after"),
        "{text}"
    );
    assert!(text.contains("(--settle 2)"), "{text}");
    let v = success_json(sysperf(&db).args(["show", "latest", "--json"]));
    assert_eq!(v["params"]["settle_s"], 2.0);
    let plan = success_json(sysperf(&db).args([
        "run",
        "syscall",
        "--settle",
        "30",
        "--dry-run",
        "--json",
    ]));
    assert_eq!(plan["settle_s"], 30.0);
    for bad in ["0", "-1", "x"] {
        let err = usage_error(sysperf(&db).args(["run", "syscall", "--settle", bad]));
        assert!(err.contains("--settle"), "{bad}: {err}");
    }
}

#[test]
fn descriptions_say_what_the_code_does() {
    // Issue #13's texts: each of these said something the code did not do.
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let core = success_json(sysperf(&db).args(["list", "--json"]));
    let today = |id: &str| {
        core.as_array()
            .unwrap()
            .iter()
            .find(|e| e["id"] == id)
            .and_then(|e| e["today"].as_str())
            .unwrap_or_else(|| panic!("{id} not listed"))
            .to_string()
    };
    // The discard tests' child reads and throws away; nothing comes back.
    for id in ["pipediscard4", "pipediscard512.4k"] {
        let t = today(id);
        assert!(
            t.contains("reads it and throws it away") && !t.contains("read it back"),
            "{id}: {t}"
        );
    }
    // The 1K environment is the paper's 1,065 bytes (§3.2.1), 1,080 with terminators.
    assert!(today("execs0null-1kenv").contains("the paper's 1,065 bytes; 1,080 with terminators"));
    // Fork and exec tests name the process they fork from; paging says it has no pressure.
    assert!(today("forks0").contains("forks program"));
    assert!(today("execs0null").contains("execs program"));
    assert!(today("seqpage").contains("without memory pressure"));
    let suites = success_json(sysperf(&db).args(["list", "--suites", "--json"]));
    let series_text = |id: &str, field: &str| {
        suites
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|s| s["series"].as_array().unwrap())
            .find(|s| s["id"] == id)
            .and_then(|s| s[field].as_str())
            .unwrap_or_else(|| panic!("{id} not listed"))
            .to_string()
    };
    let series_today = |id: &str| series_text(id, "today");
    // Feder names the kinds of commands, not the commands: the choice is sysperf's.
    assert!(series_today("workload.throughput").contains("sysperf's choice"));
    // ls -l is emulated in process, not the ls program.
    assert!(series_text("scaling.ls-l", "curve").contains("in process (not the ls program)"));
    // A port with a header writes it before the block, in its own write(2).
    assert!(series_today("bbn.port").contains("a write(2) of the header"));
}

#[test]
fn sigterm_ends_a_run_with_143_and_keeps_it_incomplete() {
    // As a service manager or `kill` ends a run: 128 + SIGTERM, as the shell reports a death
    // by that signal, not Ctrl-C's 130.
    let tag = unique_tag("sigterm");
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let child = spawn_tagged(
        &db,
        &tag,
        &["run", "syscall", "csw", "--min-time", "0.2", "--json"],
    );
    // Past the handler's installation: once the run is in the store.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !db.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(143),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(json_of(&out.stdout)["complete"], false);
}

#[test]
fn the_noise_band_limit_is_the_same_in_the_code_and_every_doc() {
    // 0 to 1000 percent, everywhere (docs/report.md said 0-100).
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let out = tmp.path().join("r.html");
    let out = out.to_str().unwrap();
    let err = usage_error(sysperf(&db).args([
        "report",
        "vax750-4.2bsd",
        "vax750-4.3bsd",
        "--noise",
        "1001",
        "-o",
        out,
    ]));
    assert!(err.contains("--threshold"), "{err}");
    sysperf(&db)
        .args([
            "report",
            "vax750-4.2bsd",
            "vax750-4.3bsd",
            "--noise",
            "1000",
            "-o",
            out,
        ])
        .assert()
        .success();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for doc in ["docs/report.md", "docs/compare.md"] {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        assert!(
            !text.contains("0-100)") && !text.contains("0 to 100 "),
            "{doc}"
        );
    }
    let text = std::fs::read_to_string(root.join("docs/report.md")).unwrap();
    assert!(text.contains("0-1000"));
}

#[test]
fn a_store_path_that_is_another_users_symlink_is_refused_and_its_target_kept() {
    // As root: --db naming a link that another user (nobody) planted, pointing at a file
    // outside the directory, is refused with exit 2; the file is not turned into a store.
    if !sysperf::sys::is_root() {
        println!("skipped: needs root to make a link owned by another user");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let planted = tmp.path().join("s.db");
    std::os::unix::fs::symlink(&victim, &planted).unwrap();
    std::os::unix::fs::lchown(&planted, Some(65534), Some(65534)).unwrap();
    let export = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/minimal-export.json"
    );
    for args in [&["runs"][..], &["import", export]] {
        let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("sysperf"))
            .args(args)
            .arg("--db")
            .arg(&planted)
            .env_remove("SYSPERF_DB")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("symbolic link owned by another user"), "{err}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious", "{args:?}");
    }
}

#[test]
fn jitter_reports_stolen_time_a_histogram_and_the_interrupts_per_cpu() {
    let tmp = tempfile::tempdir().unwrap();
    let cpu = sysperf::sys::get_affinity().unwrap()[0];
    let v = success_json(sysperf(&tmp.path().join("db")).args([
        "jitter",
        "--seconds",
        "0.05",
        "--cpu",
        &cpu.to_string(),
        "--json",
    ]));
    assert_eq!(v["format"], "sysperf-jitter");
    let cpus = v["report"]["cpus"].as_array().unwrap();
    assert_eq!(cpus.len(), 1);
    let c = &cpus[0];
    assert_eq!(c["cpu"], cpu);
    let gaps = c["gaps"].as_u64().unwrap();
    let in_buckets: u64 = c["histogram"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["count"].as_u64().unwrap())
        .sum();
    assert_eq!(in_buckets, gaps, "{c}");
    assert!(c["stolen_us_per_s"].as_f64().unwrap() >= 0.0);
    assert!(
        c["interrupts"].is_object() && c["softirqs"].is_object(),
        "{c}"
    );
    assert!(c["spin_ns"].as_u64().unwrap() >= 50_000_000, "{c}");
    // Nothing is stored.
    assert!(!tmp.path().join("db").exists());
    // A CPU this process may not use is bad usage.
    sysperf(&tmp.path().join("db"))
        .args(["jitter", "--cpu", "4095", "--seconds", "0.01"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("choose among them"));
}

/// #41 item 9: `gc --abandoned --older-than 8s` removed a run still calibrating (`run
/// --min-time 10`: no write for as long as calibration took), which then died storing its
/// results. A run whose writer runs on this machine is never abandoned.
#[test]
fn gc_abandoned_leaves_a_calibrating_run_alone_and_the_run_beats() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    // Calibration to 3 s, a 3 s warm-up, a 3 s trial: its first result comes 9 s in.
    let run = std::process::Command::new(assert_cmd::cargo::cargo_bin("sysperf"))
        .env("SYSPERF_DB", &db)
        .args(["run", "syscall", "--min-time", "3", "--trials", "1"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Before the store exists, not JSON: no run yet.
    let runs = || {
        let out = sysperf(&db).args(["runs", "--json"]).output().unwrap();
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap_or_default()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let started = loop {
        if let Some(s) = runs()[0]["started_ns"].as_i64() {
            break s;
        }
        assert!(std::time::Instant::now() < deadline, "the run never began");
        std::thread::sleep(Duration::from_millis(100));
    };
    let since = || sysperf::harness::unix_ns() - started;
    while since() < 4_500_000_000 {
        std::thread::sleep(Duration::from_millis(100));
    }
    let gc = sysperf(&db)
        .args(["gc", "--abandoned", "--older-than", "1s"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&gc.stderr);
    assert!(gc.status.success(), "{said}");
    assert!(
        !said.contains("removed abandoned run"),
        "gc removed the run being measured: {said}"
    );
    let v = runs();
    assert_eq!(v[0]["benchmarks"], 0, "no longer calibrating: {v}");
    // On SQLite the writer's liveness is what keeps the run (the beat thread runs for
    // PostgreSQL stores only: `store::tests::a_run_being_measured_beats_between_its_writes`).
    assert_eq!(v[0]["stopped"]["writer_alive"], true, "{v}");
    let out = run.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(runs()[0]["complete"], true);
}
