//! `sysperf ab CMD...` (#43): commands timed as hyperfine times them, on the paired engine:
//! a shell by default, failures loud, the commands named in every output, unpinned, no dead
//! ends, and hyperfine's flags. Quick functional invocations only (a few short trials each):
//! what they check is behaviour, not timing.

use crate::support as common;

use common::{json_of, sysperf, usage_error};
use std::path::Path;

/// A short A/B's options: three rounds of short trials (`--trials`, which `--runs` names as
/// hyperfine does).
const QUICK: [&str; 4] = ["--trials", "3", "--min-time", "0.005"];

/// `sysperf ARGS` in `dir` against the store `db` (three short rounds when `quick`), which
/// must exit `code`: its stdout and stderr.
fn sp(db: &Path, dir: &Path, args: &[&str], quick: bool, code: i32) -> (String, String) {
    let mut cmd = sysperf(db);
    cmd.current_dir(dir).args(args);
    if quick {
        cmd.args(QUICK);
    }
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    (String::from_utf8_lossy(&out.stdout).into_owned(), err)
}

fn show(db: &Path, label: &str) -> serde_json::Value {
    let (out, _) = sp(db, Path::new("/"), &["show", label, "--json"], false, 0);
    json_of(out.as_bytes())
}

#[test]
fn a_shell_runs_each_command_line_and_its_input_file_is_left_alone() {
    // #43 item 1: without a shell gzip took '<' for a file and compressed f in place.
    let dir = tempfile::tempdir().unwrap();
    let (d, db) = (dir.path(), dir.path().join("s.db"));
    let text: String = (0..2000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(d.join("f"), &text).unwrap();
    let args = [
        "ab",
        "--a",
        "gzip -1 < f",
        "--b",
        "gzip -9 < f",
        "--label",
        "gz",
    ];
    sp(&db, d, &args, true, 0);
    assert_eq!(std::fs::read_to_string(d.join("f")).unwrap(), text);
    assert!(!d.join("f.gz").exists());
    let a = show(&db, "gz-a");
    assert!(
        a["results"][0]["summary"].is_object(),
        "{}",
        a["results"][0]
    );
    // -N (hyperfine's): no shell, the line split into words; '>' is then a word.
    sp(&db, d, &["ab", "-N", "echo x > y"], true, 0);
    assert!(!d.join("y").exists());
}

#[test]
fn a_failing_command_shows_its_exit_code_and_stderr_and_ab_exits_1() {
    // #43 item 2: both sides failed and ab exited 0, gzip's own error hidden.
    let dir = tempfile::tempdir().unwrap();
    let (d, db) = (dir.path(), dir.path().join("s.db"));
    let loud = "echo first >&2; echo 'no such input' >&2; exit 3";
    let (_, err) = sp(&db, d, &["ab", "--a", "true", "--b", loud], true, 1);
    assert!(err.contains("exited with code 3"), "{err}");
    assert!(err.contains("no such input"), "{err}");
    assert!(err.contains("--ignore-failure"), "{err}");
    // --ignore-failure times it as it is.
    sp(&db, d, &["ab", "true", loud, "--ignore-failure"], true, 0);
}

#[test]
fn the_commands_are_named_in_text_json_markdown_and_html_with_a_summary_line() {
    // #43 item 3: rows said 'command', labels ab-cmd-...-a/-b; nothing named the commands.
    let dir = tempfile::tempdir().unwrap();
    let (d, db) = (dir.path(), dir.path().join("s.db"));
    let args = [
        "ab",
        "--a",
        "sleep 0.001",
        "--b",
        "sleep 0.02",
        "--label",
        "named",
        "--json",
    ];
    let (out, err) = sp(&db, d, &args, true, 0);
    let doc = json_of(out.as_bytes());
    assert_eq!(doc["runs"][0]["command"], "sleep 0.001", "{}", doc["runs"]);
    assert_eq!(doc["runs"][1]["command"], "sleep 0.02", "{}", doc["runs"]);
    // hyperfine's lines (on stderr beside --json) and its summary line.
    for line in [
        "Command 1: sleep 0.001",
        "Time (mean ± σ):",
        "Range (min … max):",
        "`sleep 0.02` ran ",
        // Slower, or on a host busy enough to stretch a 1 ms sleep, faster: the line is
        // hyperfine's either way.
        "than `sleep 0.001`",
    ] {
        assert!(err.contains(line), "{line}: {err}");
    }
    let (md, _) = sp(
        &db,
        d,
        &["compare", "named-a", "named-b", "--markdown"],
        false,
        0,
    );
    assert!(md.contains("timed the command `sleep 0.02`"), "{md}");
    let (text, _) = sp(&db, d, &["compare", "named-a", "named-b"], false, 0);
    assert!(text.contains("command: `sleep 0.001`"), "{text}");
    sp(
        &db,
        d,
        &["report", "named-a", "named-b", "-o", "r.html"],
        false,
        0,
    );
    let html = std::fs::read_to_string(d.join("r.html")).unwrap();
    assert!(
        html.contains("<code>sleep 0.02</code>"),
        "report names no command"
    );
}

#[test]
fn commands_run_unpinned_unless_cpus_are_given_and_the_output_says_so() {
    // #43 item 4: the commands ran pinned to one CPU, undocumented.
    let dir = tempfile::tempdir().unwrap();
    let (d, db) = (dir.path(), dir.path().join("s.db"));
    let (text, _) = sp(
        &db,
        d,
        &["ab", "--a", "true", "--b", "sleep 0.001", "--label", "free"],
        true,
        0,
    );
    assert!(text.contains("ran unpinned"), "{text}");
    let a = show(&db, "free-a");
    assert_eq!(a["results"][0]["placement"], "free", "{}", a["results"][0]);
    let args = [
        "ab",
        "true",
        "sleep 0.001",
        "--cpu",
        "0",
        "--label",
        "pinned",
    ];
    let (text, _) = sp(&db, d, &args, true, 0);
    assert!(text.contains("ran on CPUs 0 (--cpu)"), "{text}");
    let b = show(&db, "pinned-b");
    assert_eq!(b["results"][0]["cpus"], serde_json::json!([0]));
}

#[test]
fn a_command_line_given_to_run_or_ab_without_a_switch_points_to_the_right_form() {
    // #43 item 5: 'run CMD' said "unknown benchmark", 'run command' stored a failed run, and
    // 'ab' alone asked for --switch only.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let err = usage_error(sysperf(&db).args(["run", "gzip -9 big.txt"]));
    assert!(err.contains("sysperf ab \"gzip -9 big.txt\""), "{err}");
    let err = usage_error(sysperf(&db).args(["run", "command"]));
    assert!(err.contains("nothing to run by itself"), "{err}");
    let err = usage_error(sysperf(&db).arg("ab"));
    assert!(
        err.contains("--switch") && err.contains("--a CMD --b CMD"),
        "{err}"
    );
    // The commands' options are not the switch's.
    let err = usage_error(sysperf(&db).args(["ab", "--switch", "none", "--warmup", "2"]));
    assert!(err.contains("--warmup"), "{err}");
    // Output cannot reach this terminal through the worker: said, with what to do.
    let err = usage_error(sysperf(&db).args(["ab", "true", "--show-output"]));
    assert!(err.contains("--output FILE"), "{err}");
}

#[test]
fn hyperfines_flags_mean_the_same_a_command_alone_has_its_interval() {
    // #43 item 6: --runs, --warmup, --prepare ... were refused.
    let dir = tempfile::tempdir().unwrap();
    let (d, db) = (dir.path(), dir.path().join("s.db"));
    std::fs::write(d.join("in"), "abc\n").unwrap();
    let args = [
        "ab",
        "read x && test \"$x\" = abc && echo {n}",
        "-L",
        "n",
        "1,2",
        "-n",
        "one",
        "-n",
        "two",
        "-w",
        "2",
        "-u",
        "microsecond",
        "--prepare",
        "echo prepare >> log",
        "--conclude",
        "echo conclude >> log",
        "--setup",
        "echo setup >> log",
        "--cleanup",
        "echo cleanup >> log",
        "--input",
        "in",
        "--output",
        "out",
        "--export-markdown",
        "ab.md",
    ];
    let (text, _) = sp(&db, d, &args, true, 0);
    assert!(
        text.contains("Command 1: one") && text.contains("Command 2: two"),
        "{text}"
    );
    assert!(text.contains(" µs ± "), "{text}");
    assert!(text.contains("`two` ran "), "{text}");
    let md = std::fs::read_to_string(d.join("ab.md")).unwrap();
    assert!(md.contains("timed the command `two`"), "{md}");
    let log = std::fs::read_to_string(d.join("log")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.first(), Some(&"setup"), "{log}");
    assert_eq!(lines.last(), Some(&"cleanup"), "{log}");
    let count = |w: &str| lines.iter().filter(|l| **l == w).count();
    assert!(count("prepare") >= 6, "a prepare per trial: {log}");
    assert_eq!(count("prepare"), count("conclude"), "{log}");
    // The last trial's output (the input read, the parameter's value) went to the file.
    let written = std::fs::read_to_string(d.join("out")).unwrap();
    let ok = written.lines().all(|l| l == "1" || l == "2");
    assert!(ok && !written.is_empty(), "{written}");
    // One command alone: one run, its median with its interval.
    let (text, _) = sp(&db, d, &["ab", "sleep 0.001", "--label", "alone"], true, 0);
    assert!(
        text.contains("Command 1: sleep 0.001") && text.contains("Median: "),
        "{text}"
    );
    assert!(show(&db, "alone")["results"][0]["summary"].is_object());
    // --parameter-scan with a step, the first the baseline of the others.
    let (text, _) = sp(
        &db,
        d,
        &["ab", "sleep 0.00{d}", "-P", "d", "1", "5", "-D", "2"],
        true,
        0,
    );
    assert!(text.contains("Command 3: sleep 0.005"), "{text}");
    assert!(text.contains("than `sleep 0.001`"), "{text}");
}

#[test]
fn without_runs_the_rounds_stop_as_hyperfines_do_after_the_least_rounds_and_3_s_a_command() {
    // #43: 30 paired rounds of commands of 0.1-1 s took 2.5-3.5 times hyperfine's time, which
    // stops at 10 runs once 3 s have passed. Here: 0.5 s commands, at least 3 rounds: 3 s a
    // command (6 s for the pair, calibration and warm-up included) pass within 6 rounds of
    // 1 s, and the rounds stop there.
    let dir = tempfile::tempdir().unwrap();
    let (d, db) = (dir.path(), dir.path().join("s.db"));
    let counted = |label: &str| {
        show(&db, label)["results"][0]["trials"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["kind"] == "measured")
            .count()
    };
    let args = [
        "ab",
        "sleep 0.5",
        "sleep 0.5",
        "--min-runs",
        "3",
        "--label",
        "slow",
    ];
    sp(&db, d, &args, false, 0);
    let (a, b) = (counted("slow-a"), counted("slow-b"));
    assert_eq!(a, b, "both sides run every round");
    assert!((3..=6).contains(&a), "rounds of 1 s stop by 6 s: {a}");
    // Short commands never reach 3 s: every round up to --max-runs runs.
    let args = [
        "ab",
        "true",
        "true",
        "--max-runs",
        "12",
        "--min-time",
        "0.005",
        "--label",
        "fast",
    ];
    sp(&db, d, &args, false, 0);
    assert_eq!((counted("fast-a"), counted("fast-b")), (12, 12));
}

#[test]
fn sittings_of_two_commands_store_each_and_judge_across_them() {
    // #43: --sittings was refused for commands ("made of a switch's A/B for now").
    let dir = tempfile::tempdir().unwrap();
    let (d, db) = (dir.path(), dir.path().join("s.db"));
    let args = [
        "ab",
        "sleep 0.001",
        "sleep 0.003",
        "--sittings",
        "2",
        "--spacing",
        "0.1",
        "--trials",
        "6",
        "--min-time",
        "0.005",
        "--label",
        "st",
        "--json",
        "--setup",
        "echo s >> log",
        "--cleanup",
        "echo c >> log",
    ];
    let (out, _) = sp(&db, d, &args, false, 0);
    let doc = json_of(out.as_bytes());
    assert_eq!(doc["format"], "sysperf-ab-sittings", "{doc}");
    assert_eq!(doc["commands"][0], "sleep 0.001", "{doc}");
    assert_eq!(doc["commands"][1], "sleep 0.003", "{doc}");
    let row = &doc["tests"][0];
    assert_eq!(row["id"], "command", "{doc}");
    assert_eq!(row["sittings"].as_array().unwrap().len(), 2, "{doc}");
    // Each sitting's sides are stored, B the 3 ms command.
    for i in [1, 2] {
        let (a, b) = (
            show(&db, &format!("st.s{i}-a")),
            show(&db, &format!("st.s{i}-b")),
        );
        let median = |r: &serde_json::Value| {
            r["results"][0]["summary"]["wall_ns_per_op"]["median"]
                .as_f64()
                .unwrap()
        };
        let (ma, mb) = (median(&a), median(&b));
        assert!(mb > ma, "sitting {i}: A {ma} ns, B {mb} ns");
    }
    // --setup once before the first sitting, --cleanup once after the last.
    assert_eq!(std::fs::read_to_string(d.join("log")).unwrap(), "s\nc\n");
    // Three commands, or an export of one A/B, are refused before anything runs.
    let three = ["ab", "true", "true", "true", "--sittings", "2"];
    let (_, err) = sp(&db, d, &three, false, 2);
    assert!(err.contains("give two"), "{err}");
    let export = [
        "ab",
        "true",
        "true",
        "--sittings",
        "2",
        "--export-csv",
        "x.csv",
    ];
    let (_, err) = sp(&db, d, &export, false, 2);
    assert!(err.contains("--json"), "{err}");
}

/// A program of the test's own, built with its symbol table: most of its time in one function
/// of its own in user mode, then a loop of system calls made through libc's `getppid`.
const SPINNER_C: &str = r#"
#include <stdio.h>
#include <unistd.h>
unsigned long spin_here(unsigned long n) {
    volatile unsigned long s = 0;
    for (unsigned long i = 0; i < n; i++) s += i * i;
    return s;
}
int main(void) {
    unsigned long s = spin_here(3000000);
    for (int i = 0; i < 20000; i++) s += (unsigned long)getppid();
    printf("%lu\n", s);
    return 0;
}
"#;

/// #43: a profile of a command names its user-mode time by function (the program's own, from
/// its symbol table) and the user function its kernel time was entered from (libc's, from its
/// dynamic symbols), where it was one frame per program, `[user] spinner`, before.
#[test]
fn a_profile_of_a_command_names_its_user_functions() {
    if !common::profiling_allowed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (d, db) = (dir.path(), dir.path().join("s.db"));
    std::fs::write(d.join("spinner.c"), SPINNER_C).unwrap();
    // Building sysperf takes a C compiler too (ring), so one is there wherever this runs.
    let built = std::process::Command::new("cc")
        .args(["-O0", "-o", "spinner", "spinner.c"])
        .current_dir(d)
        .status()
        .expect("running cc");
    assert!(built.success(), "cc failed to build the test's program");
    let args = [
        "ab",
        "--a",
        "./spinner",
        "--b",
        "./spinner x",
        "--label",
        "usym",
        "--profile",
        "--profile-seconds",
        "0.5",
    ];
    sp(&db, d, &args, true, 0);
    let (out, _) = sp(&db, d, &["profile", "usym-a", "--json"], false, 0);
    let v = json_of(out.as_bytes());
    let p = &v["profiles"][0];
    let stacks = p["stacks"].as_object().unwrap();
    let samples = |pick: &dyn Fn(&str) -> bool| -> u64 {
        stacks
            .iter()
            .filter(|(k, _)| pick(k))
            .map(|(_, n)| n.as_u64().unwrap())
            .sum()
    };
    let all = samples(&|_| true);
    // The loop's time is the program's own function, by name, not `[user] spinner` alone.
    let spin = samples(&|k| k == "[user] spinner;spinner:spin_here");
    assert!(
        spin * 4 >= all,
        "spin_here has {spin} of {all} samples; the user stacks: {:?}",
        stacks
            .keys()
            .filter(|k| k.starts_with("[user]"))
            .collect::<Vec<_>>()
    );
    // Its system calls are entered from libc's getppid (glibc's or musl's library).
    let from_getppid = samples(&|k| {
        k.starts_with("[user] spinner;")
            && k.split(';').nth(1).is_some_and(|f| f.ends_with(":getppid"))
            && k.contains(";do_syscall_64")
    });
    assert!(
        from_getppid > 0,
        "no kernel time entered from getppid among {:?}",
        stacks.keys().collect::<Vec<_>>()
    );
}
