//! A newcomer's first hour (#33): what a new user trips on following README.md with `--quick`,
//! one test per item of the issue. Every run here is `--quick` and figures are checked for
//! what they say (a smoke test says so, "n/a" where a figure cannot be had), never for speed.

use predicates::prelude::*;
use std::path::Path;

use crate::support as common;
use common::*;

/// The output of a command that must succeed: (stdout, stderr).
fn ok(db: &Path, args: &[&str]) -> (String, String) {
    let out = sysperf(db).args(args).output().unwrap();
    let (o, e) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "sysperf {args:?} failed: {e}\n{o}");
    (o, e)
}

/// The ids of the stored runs carrying `label`.
fn labelled(db: &Path, label: &str) -> Vec<String> {
    let v = success_json(sysperf(db).args(["runs", "--json"]));
    v.as_array()
        .unwrap()
        .iter()
        .filter(|r| r["label"] == label)
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

/// Item 1: a label names a group everywhere: `rm` removes all of it, listing each run, and
/// takes several names; `show` says the label has N runs and which it shows.
#[test]
fn a_label_names_its_whole_group_for_rm_show_and_export() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    ok(
        &db,
        &[
            "run", "syscall", "--quick", "--repeat", "3", "--label", "group",
        ],
    );
    ok(&db, &["run", "syscall", "--quick", "--label", "other"]);
    let group = labelled(&db, "group");
    assert_eq!(group.len(), 3);

    let (_, err) = ok(&db, &["show", "group"]);
    assert!(err.contains("label of 3 runs"), "{err}");
    assert!(group.iter().all(|id| err.contains(id.as_str())), "{err}");

    let file = tmp.path().join("g.json");
    ok(&db, &["export", "group", "-o", file.to_str().unwrap()]);
    let exported = json_of(&std::fs::read(&file).unwrap());
    assert_eq!(exported["runs"].as_array().unwrap().len(), 3);

    let (_, err) = ok(&db, &["rm", "--dry-run", "group"]);
    assert_eq!(err.matches("would remove run").count(), 3, "{err}");
    assert_eq!(
        labelled(&db, "group").len(),
        3,
        "--dry-run removed something"
    );

    let (out, err) = ok(&db, &["rm", "group", "other"]);
    for id in &group {
        assert!(
            err.contains(&format!("removed run {id} (label 'group')")),
            "{err}"
        );
    }
    assert_eq!(err.matches("removed run").count(), 4, "{err}");
    assert!(
        out.is_empty(),
        "rm reports on stderr, as export does: {out}"
    );
    assert!(
        labelled(&db, "group").is_empty(),
        "rm left runs of the group"
    );
    assert!(labelled(&db, "other").is_empty());
}

/// Item 1: a typo in any name removes nothing.
#[test]
fn rm_resolves_every_name_before_removing_any() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    ok(&db, &["run", "syscall", "--quick", "--label", "keep"]);
    sysperf(&db)
        .args(["rm", "keep", "nosuch"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no run matches 'nosuch'"));
    assert_eq!(labelled(&db, "keep").len(), 1);
}

/// Item 5: a noise call that can estimate nothing says why and what the smallest useful call
/// is, before running anything; `noise --quick` is that call.
#[test]
fn noise_says_why_nothing_can_be_estimated_and_has_a_quick_smoke_test() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let err = usage_error(sysperf(&db).args(["noise", "syscall", "--runs", "2", "--trials", "1"]));
    assert!(err.contains("one trial has none"), "{err}");
    assert!(err.contains("smallest useful call"), "{err}");
    assert!(
        !db.exists(),
        "nothing may run, nor a store be made, before the refusal"
    );
    let out = sysperf(&db)
        .args(["noise", "syscall", "--quick", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("a smoke test of 'noise'"));
    let rows = json_of(&out.stdout);
    assert_eq!(rows.as_array().unwrap().len(), 1, "{rows}");
    assert_eq!(rows[0]["runs"], 3);
    usage_error(sysperf(&db).args(["noise", "--quick", "--trials", "3"]));
}

/// Item 7: `--help` lists the commands by task, as cargo and git do; `trace` and `profile`
/// say they observe the whole machine too; `compare`'s band is `--threshold` (criterion's
/// name), so one thing alone is called noise; old names still work; `run --help` names every
/// suite.
#[test]
fn help_lists_commands_by_task_and_old_names_still_work() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let (help, _) = ok(&db, &["--help"]);
    let heading = |h: &str| {
        help.find(&format!("\n{h}:\n"))
            .unwrap_or_else(|| panic!("no '{h}:' heading in\n{help}"))
    };
    let tasks = [
        "Measure",
        "Observe the machine",
        "Compare",
        "Keep runs",
        "Admin",
    ];
    let at: Vec<usize> = tasks.iter().map(|t| heading(t)).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{help}");
    let line = |name: &str| {
        let i = help
            .find(&format!("\n  {name} "))
            .unwrap_or_else(|| panic!("{name} not listed in\n{help}"));
        (i, help[i..].lines().nth(1).unwrap().to_string())
    };
    for (name, task) in [
        ("run", 0),
        ("noise", 0),
        ("trace", 1),
        ("jitter", 1),
        ("compare", 2),
        ("runs", 3),
        ("rm", 3),
        ("gc", 4),
    ] {
        let (i, _) = line(name);
        assert!(
            i > at[task] && at.get(task + 1).is_none_or(|next| i < *next),
            "{name} is not under {}:\n{help}",
            tasks[task]
        );
    }
    for name in ["trace", "profile"] {
        assert!(line(name).1.contains("--system"), "{}", line(name).1);
    }
    assert!(!line("jitter").1.contains("noise"), "{}", line("jitter").1);
    for old in [&["noise", "--help"][..], &["aa", "--help"], &["benchmarks"]] {
        ok(&db, old);
    }
    for band in ["--threshold", "--noise"] {
        ok(
            &db,
            &["compare", "vax750-4.2bsd", "vax750-4.3bsd", band, "5"],
        );
    }
    let (run_help, _) = ok(&db, &["run", "--help"]);
    let suites = success_json(sysperf(&db).args(["list", "--suites", "--json"]));
    for s in suites.as_array().unwrap() {
        let name = s["name"].as_str().unwrap();
        assert!(run_help.contains(name), "run --help lacks suite {name}");
    }
}

/// Item 8: an observation named beside a run is said to be one, with what it compares with,
/// not "no run matches". Observations need a kernel profile of the whole machine (root).
#[test]
fn an_observation_beside_a_run_is_named_as_one() {
    if !sysperf::sys::is_root() {
        println!("skipped: 'profile --system' needs root to make the observation");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    ok(&db, &["profile", "--system", "1", "--label", "busy"]);
    ok(&db, &["run", "syscall", "--quick", "--label", "before"]);
    for args in [
        &["compare", "busy", "before"][..],
        &["compare", "before", "busy"],
        &["compare", "before", "--baseline", "busy"],
    ] {
        let err = usage_error(sysperf(&db).args(args));
        assert!(
            err.contains("'busy' is an observation of the whole machine"),
            "{args:?}: {err}"
        );
        assert!(
            err.contains("compares only with another observation"),
            "{err}"
        );
        assert!(!err.contains("no run matches"), "{err}");
    }
}

/// Item 9: two spins on one CPU take it from each other: the time lost is said to be other
/// tasks', not the hypervisor's, unless the hypervisor reported steal; numbered interrupts
/// carry their device's name.
#[test]
fn jitter_says_other_tasks_took_the_time_and_names_numbered_interrupts() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let cpu = sysperf::sys::get_affinity().unwrap()[0].to_string();
    let spin = || {
        std::process::Command::new(assert_cmd::cargo::cargo_bin("sysperf"))
            .args(["jitter", "--seconds", "0.3", "--cpu", &cpu, "--json"])
            .env("SYSPERF_DB", &db)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spin(), spin());
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        let v = json_of(&out.stdout);
        let v = &v["report"];
        let c = &v["cpus"][0];
        assert!(c["preemptions"].as_u64().is_some(), "{c}");
        assert!(c["off_cpu_ns"].as_u64().is_some(), "{c}");
        for irq in c["interrupts"].as_object().unwrap().keys() {
            if irq.bytes().all(|b| b.is_ascii_digit()) {
                assert!(
                    v["irq_names"][irq].is_string(),
                    "IRQ {irq} has no name: {v}"
                );
            }
        }
    }
    let (text, _) = ok(&db, &["jitter", "--seconds", "0.05", "--cpu", &cpu]);
    assert!(
        text.contains("lost us/s") && text.contains("preempted"),
        "{text}"
    );
    assert!(
        !text.contains("stolen"),
        "steal is the hypervisor's word: {text}"
    );
}

/// Item 10: `run --dry-run` shows the trial order (README says it does) and the least time
/// the run takes; the order it shows is the order the run then keeps.
#[test]
fn dry_run_shows_the_trial_order_the_run_keeps_and_a_time_estimate() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let args = [
        "run",
        "syscall",
        "csw",
        "pipeself4",
        "--quick",
        "--seed",
        "7",
    ];
    let (text, _) = ok(&db, &[&args[..], &["--dry-run"]].concat());
    assert!(text.contains("trial order, round 1: "), "{text}");
    assert!(text.contains("at least 0.03 s of measuring"), "{text}");
    let plan = success_json(sysperf(&db).args([&args[..], &["--dry-run", "--json"]].concat()));
    let planned: Vec<&str> = plan["trial_order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t[1].as_str().unwrap())
        .collect();
    assert_eq!(planned.len(), 3, "{plan}");
    let run = success_json(sysperf(&db).args([&args[..], &["--json"]].concat()));
    let mut ran: Vec<(u64, String)> = run["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let t = r["trials"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["round"] == 0)
                .unwrap();
            (
                t["started_ns"].as_u64().unwrap(),
                r["id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    ran.sort();
    let ran: Vec<&str> = ran.iter().map(|(_, id)| id.as_str()).collect();
    assert_eq!(
        ran, planned,
        "the run did not keep the order --dry-run showed"
    );
}

/// Versions of sysperf that a text names ("before sysperf 0.3", "before 0.2"): (line, version).
fn versions_named(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for lead in ["sysperf ", "before "] {
            for (i, _) in line.match_indices(lead) {
                let v: String = line[i + lead.len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_digit() || *c == '.')
                    .collect();
                let v = v.trim_end_matches('.');
                if v.contains('.') && v.starts_with(|c: char| c.is_ascii_digit()) {
                    out.push((n + 1, v.to_string()));
                }
            }
        }
    }
    out
}

/// Item 10: the docs and the help never speak of a sysperf version there has not been
/// ("before sysperf 0.3" while `--version` said 0.1.0).
#[test]
fn no_text_names_a_version_newer_than_this_one() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ours: Vec<u64> = env!("CARGO_PKG_VERSION")
        .split('.')
        .map(|x| x.parse().unwrap())
        .collect();
    let mut files = vec![root.join("README.md")];
    // Every file below docs/ and src/cmd/ (a command's own modules are in a folder of its
    // name: src/cmd/explain/).
    let mut dirs = vec![root.join("docs"), root.join("src/cmd")];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(path);
            }
        }
    }
    let mut bad = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for (line, v) in versions_named(&text) {
            let v: Vec<u64> = v.split('.').map(|x| x.parse().unwrap_or(0)).collect();
            if v > ours {
                bad.push(format!("{}:{line}: sysperf {v:?}", f.display()));
            }
        }
    }
    assert!(bad.is_empty(), "newer than {ours:?}:\n{}", bad.join("\n"));
    assert_eq!(
        versions_named("runs made before sysperf 0.3 (no whole); the order of sysperf before 0.2;"),
        [(1, "0.3".to_string()), (1, "0.2".to_string())]
    );
}

/// Item 10: `report -o r.txt` is refused (it would write HTML into a .txt), naming what
/// writes text; `.html` is written.
#[test]
fn report_writes_html_only_to_an_html_name() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let txt = tmp.path().join("r.txt");
    let err = usage_error(sysperf(&db).args([
        "report",
        "vax750-4.2bsd",
        "vax750-4.3bsd",
        "-o",
        txt.to_str().unwrap(),
    ]));
    assert!(
        err.contains("FILE.html") && err.contains("sysperf compare"),
        "{err}"
    );
    assert!(!txt.exists());
    let html = tmp.path().join("r.html");
    ok(
        &db,
        &[
            "report",
            "vax750-4.2bsd",
            "vax750-4.3bsd",
            "-o",
            html.to_str().unwrap(),
        ],
    );
    assert!(std::fs::read_to_string(&html)
        .unwrap()
        .starts_with("<!DOCTYPE html>"));
}

/// The docs, each file with its name.
fn docs() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = vec![(
        "README.md".to_string(),
        std::fs::read_to_string(root.join("README.md")).unwrap(),
    )];
    for e in std::fs::read_dir(root.join("docs")).unwrap() {
        let p = e.unwrap().path();
        out.push((
            p.display().to_string(),
            std::fs::read_to_string(&p).unwrap(),
        ));
    }
    out
}

/// Item 11: wherever the docs enumerate the values of a registry (a result's `group`, a
/// series' `suite`, `plot --group`'s charts), they enumerate all of them.
#[test]
fn the_docs_enumerate_every_group_suite_and_chart_the_registries_have() {
    let tmp = tempfile::tempdir().unwrap();
    let list = success_json(sysperf(&tmp.path().join("s.db")).args(["list", "--json"]));
    let mut groups: Vec<String> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["group"].as_str().unwrap().to_string())
        .collect();
    groups.sort();
    groups.dedup();
    let suites: Vec<&str> = sysperf::suite::suites().iter().map(|s| s.name).collect();
    let charts: Vec<&str> = sysperf::bench::charts().iter().map(|c| c.name).collect();
    let quoted = |line: &str, names: &[&str]| -> Vec<String> {
        names
            .iter()
            .filter(|n| !line.contains(&format!("`{n}`")))
            .map(|n| n.to_string())
            .collect()
    };
    let mut bad = Vec::new();
    let mut seen = [0; 3];
    for (file, text) in docs() {
        for (n, line) in text.lines().enumerate() {
            let group_names: Vec<&str> = groups.iter().map(String::as_str).collect();
            let lists = [
                // A result's group: a table row documenting `group` by its values.
                (
                    line.starts_with("| `group` |") && line.contains("`kernel`"),
                    &group_names,
                ),
                // A series' suite.
                (
                    line.starts_with("| `suite`") && line.contains("`bbn`"),
                    &suites,
                ),
                // plot --group's charts.
                (line.contains("`ipc`, `fork`, `exec`"), &charts),
            ];
            for (i, (here, names)) in lists.iter().enumerate() {
                if *here {
                    seen[i] += 1;
                    let missing = quoted(line, names);
                    if !missing.is_empty() {
                        bad.push(format!("{file}:{}: lacks {missing:?}", n + 1));
                    }
                }
            }
        }
    }
    assert!(
        seen.iter().all(|&n| n > 0),
        "an enumeration was not found: {seen:?}"
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Item 1: `compare` follows the same rule: a label is its group, an id (or 'latest') the one
/// run it names, even when that run belongs to a group.
#[test]
fn compare_takes_a_label_as_its_group_and_an_id_as_one_run() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    ok(
        &db,
        &["run", "syscall", "--quick", "--repeat", "2", "--label", "g"],
    );
    let one = labelled(&db, "g")[1].clone();
    for (spec, runs) in [("g", 2), (one.as_str(), 1), ("latest", 1)] {
        let v = success_json(sysperf(&db).args(["compare", spec, "--json"]));
        assert_eq!(
            v["group_runs"][0], runs,
            "compare {spec}: {}",
            v["group_runs"]
        );
    }
}

/// Item 13: hyperfine's habits where they fit: `--runs` is `--trials`, `--warmup` as far as
/// the budget has it (else exit 2 saying why), `--export-csv`/`--export-markdown`/
/// `--export-json` on `run` and `show`.
#[test]
fn hyperfine_habits_carry_over_to_run_and_show() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let file = |n: &str| tmp.path().join(n).to_str().unwrap().to_string();
    let (_, err) = ok(
        &db,
        &[
            "run",
            "syscall",
            "--runs",
            "3",
            "--warmup",
            "1",
            "--min-time",
            "0.01",
            "--export-csv",
            &file("r.csv"),
            "--export-markdown",
            &file("r.md"),
            "--export-json",
            &file("r.json"),
        ],
    );
    assert!(
        err.contains("wrote") && err.contains("(--export-csv)"),
        "{err}"
    );
    let csv = std::fs::read_to_string(file("r.csv")).unwrap();
    let mut lines = csv.lines();
    assert!(lines.next().unwrap().starts_with("id,label,run,"), "{csv}");
    assert!(lines.next().unwrap().starts_with("syscall,"), "{csv}");
    let md = std::fs::read_to_string(file("r.md")).unwrap();
    assert!(md.contains("| syscall"), "{md}");
    let json = json_of(&std::fs::read(file("r.json")).unwrap());
    let trials = json["results"][0]["trials"].as_array().unwrap();
    assert_eq!(
        trials.iter().filter(|t| !t["round"].is_null()).count(),
        3,
        "--runs 3 is three counted trials"
    );
    let err = usage_error(sysperf(&db).args(["run", "syscall", "--warmup", "3"]));
    assert!(err.contains("--min-time"), "{err}");
    ok(&db, &["run", "syscall", "--quick", "--warmup", "0"]);
    let (_, err) = ok(
        &db,
        &["show", "vax750-4.2bsd", "--export-csv", &file("v.csv")],
    );
    assert!(err.contains("v.csv"), "{err}");
    assert!(std::fs::read_to_string(file("v.csv"))
        .unwrap()
        .contains("0000004b5d42"));
}

/// Item 2: a `--quick` run says it is a smoke test in its header, over its tables and in a
/// comparison; a derived figure its one-trial inputs cannot support prints "n/a" and why.
#[test]
fn a_quick_run_says_it_is_a_smoke_test_and_unsupported_figures_are_na() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let sel = ["csw", "signocsw", "syscall", "--quick"];
    let (text, _) = ok(&db, &[&["run"][..], &sel, &["--label", "q1"]].concat());
    assert!(text.starts_with("SMOKE TEST (--quick)"), "{text}");
    let title = text.lines().find(|l| l.starts_with("Table 2.")).unwrap();
    assert!(title.contains("SMOKE TEST"), "{title}");
    let csw = text
        .lines()
        .find(|l| l.trim_start().starts_with("context switch"))
        .unwrap();
    assert!(csw.contains(" n/a ") && csw.contains("one trial"), "{csw}");
    let v = success_json(
        sysperf(&db).args([&["run"][..], &sel, &["--json", "--label", "q2"]].concat()),
    );
    let d = v["derived"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "context switch")
        .unwrap();
    assert!(d["na"].as_str().unwrap().starts_with("one trial"), "{d}");
    let (cmp, _) = ok(&db, &["compare", "q1", "q2"]);
    assert!(cmp.contains("SMOKE TEST: [1] [2] are --quick"), "{cmp}");
    assert!(cmp.contains("n/a [2] context switch: one trial"), "{cmp}");
    let row = cmp
        .lines()
        .find(|l| l.starts_with("context switch"))
        .unwrap();
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    assert_eq!(cells[1], "n/a n/a", "no number: {row}");
    assert_eq!(cells[3], "-", "no ratio of figures that are n/a: {row}");
}

/// Item 3 (and item 10's doctor last): compare leads with its answer: the tables first, the
/// doctor's findings after them, then the fingerprint differences that matter to the
/// compared tests with one line counting the rest; --all-differences lists them all.
#[test]
fn compare_leads_with_the_tables_and_summarises_differences_that_do_not_matter() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    ok(&db, &["run", "syscall", "--quick"]);
    let (text, _) = ok(&db, &["compare", "vax750-4.3bsd", "latest"]);
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("no '{needle}' in\n{text}"))
    };
    assert!(at("Table 2.") < at("What differs"), "{text}");
    assert!(at("Table 2.") < at("\nDoctor ("), "{text}");
    assert!(at("\nDoctor (") < at("What differs"), "{text}");
    assert!(at("--all-differences") > at("What differs"));
    assert!(
        !text.contains("sysctl kernel."),
        "unrecorded sysctls listed:\n{text}"
    );
    assert!(text.lines().count() < 100, "{} lines", text.lines().count());
    let (all, _) = ok(
        &db,
        &["compare", "vax750-4.3bsd", "latest", "--all-differences"],
    );
    assert!(all.contains("sysctl kernel."), "{all}");
    // JSON keeps every difference.
    let v = success_json(sysperf(&db).args(["compare", "vax750-4.3bsd", "latest", "--json"]));
    assert!(v["fingerprint_diffs"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["field"].as_str().unwrap().starts_with("sysctl ")));
}

/// Item 6: a gate that cannot judge many tests for one reason says so in one line.
#[test]
fn the_gate_says_what_it_cannot_judge_in_one_line_per_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let sel = [
        "syscall",
        "csw",
        "signocsw",
        "pipeself4",
        "pipeback4",
        "forks0",
        "seqpage",
    ];
    for label in ["before", "after"] {
        ok(
            &db,
            &[&["run"][..], &sel, &["--quick", "--label", label]].concat(),
        );
    }
    let out = sysperf(&db)
        .args(["compare", "before", "after", "--fail-on-regression", "5"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("cannot judge")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("7 tests ("), "{}", lines[0]);
    assert!(lines[0].contains("and 2 more"), "{}", lines[0]);
}

/// Item 10: a replicate is numbered from 0 in the text as in the JSON; a quick run's counters
/// are not said to come from a warm-up trial it does not have.
#[test]
fn replicates_count_from_0_everywhere_and_quick_counters_come_from_every_trial() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let v = success_json(sysperf(&db).args([
        "run",
        "syscall",
        "--quick",
        "--repeat",
        "2",
        "--observe",
        "--json",
        "--label",
        "r",
    ]));
    let replicates: Vec<u64> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["params"]["replicate"].as_u64().unwrap())
        .collect();
    assert_eq!(replicates, [0, 1]);
    for (k, id) in labelled(&db, "r").iter().rev().enumerate() {
        let (text, _) = ok(&db, &["show", id]);
        assert!(
            text.contains(&format!("; replicate {k} (from 0) of group ")),
            "{text}"
        );
        if text.contains("\nCounters (--observe)") {
            assert!(
                text.contains("in every trial (--quick has no warm-up trial)"),
                "{text}"
            );
            assert!(!text.contains("in the warm-up trial"), "{text}");
        }
    }
}
