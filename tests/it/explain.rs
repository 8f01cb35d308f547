//! `sysperf explain A B [TEST...]` from the command line: a side without a profile is said and
//! never made up; bad input exits 2; a kernel path planted in B's stored profile (an exported
//! run given a seccomp filter's stacks and the ab switch's note, then imported) is named first,
//! tied to the switch, and accounts for the change its samples make; `--measure` and a stored
//! trace (`trace --store`) stand only for the side this machine is.
//!
//! Live runs are quick smoke runs: nothing here depends on speed. The planted test needs the
//! kernel profiled (root, or perf_event_paranoid <= 1 with kernel addresses visible); without
//! it it says why and skips, except on CI.

use serde_json::Value;

use crate::support as common;
use common::*;

#[test]
fn a_side_without_a_profile_is_said_and_bad_input_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    for label in ["a", "b"] {
        ok(
            &db,
            &[
                "run",
                "syscall",
                "--trials",
                "3",
                "--min-time",
                "0.01",
                "--label",
                label,
            ],
            0,
        );
    }
    let text = ok(&db, &["explain", "a", "b", "syscall"], 0);
    for needle in [
        "sysperf explain: B against A (the baseline)",
        "syscall (named): ",
        "has no profile of syscall ('sysperf run --profile syscall' where it was measured stores one)",
        "no differential profile",
        "Recorded differences between A and B",
        "Method: ",
    ] {
        assert!(text.contains(needle), "{needle}:\n{text}");
    }
    let v: Value = json_of(ok(&db, &["explain", "a", "b", "sys*", "--json"], 0).as_bytes());
    assert_eq!(v["format"], "sysperf-explain");
    assert_eq!(v["tests"][0]["test"], "syscall");
    assert_eq!(v["tests"][0]["listed"], "named");
    assert_eq!(v["tests"][0]["profiles"][0]["kind"], "missing");
    assert!(v["tests"][0]["profile"].is_null());
    let md = ok(&db, &["explain", "a", "b", "syscall", "--markdown"], 0);
    assert!(md.starts_with("## sysperf explain: B against A"), "{md}");

    // Bad input: one line, exit 2, nothing printed on stdout.
    for (args, needle) in [
        (
            vec!["explain", "a", "b", "nosuch"],
            "neither run has a test of that name",
        ),
        (
            vec!["explain", "a", "nosuchrun"],
            "no run matches 'nosuchrun'",
        ),
        (vec!["explain", "a", "b", "--noise", "-3"], "--noise"),
    ] {
        let err = usage_error(sysperf(&db).args(&args));
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn a_kernel_path_planted_in_b_is_named_first_and_tied_to_the_switch() {
    if !profiling_allowed() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    history(&db, &["syscall", "--trials", "3", "--min-time", "0.01"]);
    ok(
        &db,
        &[
            "run",
            "syscall",
            "--trials",
            "3",
            "--min-time",
            "0.01",
            "--profile",
            "--profile-seconds",
            // A second, not less: under a load of 7-10 a 0.3 s profile once held 59 samples,
            // too few to plant a path into.
            "1",
            "--label",
            "a",
        ],
        0,
    );
    // B: A's run and profile, its trials 1000 times as slow (the history above gives compare
    // the run-to-run variance it needs for a verdict), half as many samples again below
    // __seccomp_filter, and the note an ab with the seccomp switch on leaves.
    as_if_quiet(&db, "a");
    let mut doc = json_of(ok(&db, &["export", "a"], 0).as_bytes());
    let b_id = "b1a2c3d4e5f6";
    // 1000 times as slow, as in the report's test: under a load of 7-10, three quick history
    // runs once made 10x's interval [0.109, 958], and the test moved without a verdict.
    plant_seccomp(&mut doc, "syscall", b_id, "planted", 1000.0);
    let file = tmp.path().join("planted.json");
    std::fs::write(&file, serde_json::to_vec(&doc).unwrap()).unwrap();
    ok(&db, &["import", file.to_str().unwrap()], 0);

    // compare points at explain: the test moved and both runs have profiles of it.
    let out = sysperf(&db)
        .args(["compare", "a", "planted"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("syscall moved and both runs have kernel profiles of it: 'sysperf explain "),
        "{err}{}",
        String::from_utf8_lossy(&out.stdout)
    );

    // Without TEST: the test compare calls slower.
    let v = json_of(ok(&db, &["explain", "a", "planted", "--json"], 0).as_bytes());
    let t = &v["tests"][0];
    assert_eq!(t["listed"], "slower", "{t}");
    assert!(t["profile"]["paths"][0]["share_pct"].as_f64().is_some());
    assert_eq!(t["profiles"][1]["kind"], "run");
    assert_eq!(t["profiles"][1]["run"], b_id);
    let d = &t["profile"];
    let path = d["paths"][0]["path"].as_array().unwrap();
    assert_eq!(path.last().unwrap(), "__seccomp_filter", "{}", d["paths"]);
    assert_eq!(d["functions"][0]["function"], "__seccomp_filter");
    // The planted samples are the whole change of the profiles, and the path holds >= 90% of it.
    let all = d["all"]["change_ns_per_op"].as_f64().unwrap();
    let held = d["paths"][0]["total"]["change_ns_per_op"].as_f64().unwrap();
    assert!(all > 0.0 && held >= 0.9 * all, "{held} of {all}");
    assert_eq!(t["tied"][0]["fact"], "seccomp");
    assert_eq!(t["tied"][0]["functions"][0][0], "__seccomp_filter");
    let sentence = t["sentence"].as_str().unwrap();
    for needle in [
        "in __seccomp_filter and what it calls",
        "B ran with an allow-all seccomp filter in every worker (the ab switch on)",
    ] {
        assert!(sentence.contains(needle), "{needle}: {sentence}");
    }
    let text = ok(&db, &["explain", "a", "planted", "syscall"], 0);
    assert!(text.contains("Where the change is (call paths"), "{text}");
}

#[test]
fn measure_profiles_only_the_side_this_machine_stands_for_and_says_so() {
    let _tracing = crate::support::tracing();
    if !profiling_allowed() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    ok(
        &db,
        &[
            "run",
            "syscall",
            "--trials",
            "3",
            "--min-time",
            "0.01",
            "--label",
            "na",
        ],
        0,
    );
    // B: A's run recorded with another value of a sysctl: this machine is A's, not B's.
    let mut doc = json_of(ok(&db, &["export", "na"], 0).as_bytes());
    let a_id = doc["runs"][0]["id"].as_str().unwrap().to_string();
    let run = &mut doc["runs"][0];
    run["id"] = "bb0000000001".into();
    run["label"] = "nb".into();
    run["fingerprint"]["sysctls"]["kernel.sched_autogroup_enabled"] = "9".into();
    let file = tmp.path().join("nb.json");
    std::fs::write(&file, serde_json::to_vec(&doc).unwrap()).unwrap();
    ok(&db, &["import", file.to_str().unwrap()], 0);

    // Without --measure: nothing is measured, and the user is told how.
    let out = sysperf(&db)
        .args(["explain", "na", "nb", "syscall"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("'sysperf explain --measure'"));

    let args = [
        "explain",
        "na",
        "nb",
        "syscall",
        "--measure",
        "--profile-seconds",
        "0.3",
        "--json",
    ];
    let v = json_of(ok(&db, &args, 0).as_bytes());
    let t = &v["tests"][0];
    assert_eq!(t["profiles"][0]["kind"], "measured", "{t}");
    let made = t["profiles"][0]["run"].as_str().unwrap().to_string();
    assert_eq!(t["profiles"][1]["kind"], "missing");
    let why = t["profiles"][1]["why"].as_str().unwrap();
    assert!(
        why.contains("this machine is not B's as it was: sysctl kernel.sched_autogroup_enabled"),
        "{why}"
    );
    assert!(t["one_side"]["side"] == "A", "{t}");
    // The profile made is a run of its own, found again by a later explain.
    let text = ok(&db, &["explain", "na", "nb", "syscall"], 0);
    assert!(
        text.contains("A measured on this machine for this side by explain at "),
        "{text}"
    );
    assert!(text.contains(&format!("(stored as run {made})")), "{text}");
    let shown = ok(&db, &["show", &format!("explain-{a_id}")], 0);
    assert!(shown.contains("Kernel profile of syscall"), "{shown}");

    // A stored trace made here stands for A too: its counts per call beside A's.
    let out = sysperf(&db)
        .args(["trace", "syscall", "--store", "--label", "tr"])
        .args(["--iterations", "200", "--events", "syscalls"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let id = err
        .split("stored as trace ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("{err}"))
        .to_string();
    let v = json_of(ok(&db, &["explain", "na", "nb", "syscall", "--json"], 0).as_bytes());
    let t = &v["tests"][0];
    assert_eq!(t["traces"][0], id.as_str(), "{t}");
    assert!(t["traces"][1].is_null());
    let row = t["counts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["what"] == "system calls (trace)")
        .unwrap_or_else(|| panic!("{t}"));
    // One getpid per call, and the loop's own calls none: at least 1 per call.
    assert!(
        row["a"].as_f64().unwrap() >= 1.0 && row["b"].is_null(),
        "{row}"
    );
    let text = ok(&db, &["explain", "na", "nb", "syscall"], 0);
    assert!(
        text.contains(&format!("Traces: A stored trace {id}, B none")),
        "{text}"
    );
    let shown = ok(&db, &["show", "tr"], 0);
    assert!(
        shown.starts_with(&format!("trace {id} of syscall made ")),
        "{shown}"
    );
    assert!(ok(&db, &["runs"], 0).contains(&id));
    // Two stored traces of a test compare per operation; a trace and a run do not.
    let out = sysperf(&db)
        .args(["trace", "syscall", "--store", "--label", "tr2"])
        .args(["--iterations", "200", "--events", "syscalls"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = ok(&db, &["compare", "tr", "tr2"], 0);
    assert!(
        text.starts_with("sysperf compare: 2 traces of syscall per call"),
        "{text}"
    );
    let row = text
        .lines()
        .find(|l| l.starts_with("  getpid"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.ends_with("1.00x"), "one getpid per call on both: {row}");
    let v = json_of(ok(&db, &["compare", "tr", "tr2", "--json"], 0).as_bytes());
    assert_eq!(v["format"], "sysperf-trace-comparison");
    assert_eq!(v["before"]["id"], id.as_str());
}

/// The issue's planted cause (#34): `ab --switch seccomp syscall --profile`, then `explain` of
/// its two runs, names the seccomp filter's code first, tied to the switch. The share of the
/// change it accounts for is reported, not judged here (a figure of timing).
#[test]
fn ab_profile_then_explain_names_the_planted_seccomp_filter() {
    if !profiling_allowed() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let args = [
        "ab",
        "--switch",
        "seccomp",
        "syscall",
        "--profile",
        // 2 s a side, not 0.5: with half a second's samples the top path of the difference was
        // once another one in a full run of the tests (other tests' work on the machine).
        "--profile-seconds",
        "2",
    ];
    // Without call chains the kernel's samples are named by their function alone, so no path
    // leads to the filter. Where a root process outside sysperf set a call chain limit to 0
    // (the profile's note names it; #46: the profile once held only `[user] sysperf:syscall`),
    // once more after a pause, then skipped saying why. Any other profile is judged below.
    let limit_at_zero = |err: &str| {
        err.contains("the kernel recorded no call chain") && err.contains("is 0 (set by a root")
    };
    let mut label = String::new();
    for attempt in 1..=2 {
        label = format!("pc{attempt}");
        let out = sysperf(&db)
            .args(args)
            .args(["--label", &label])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        if !limit_at_zero(&err) {
            break;
        }
        if attempt == 2 {
            eprintln!("skipped: the kernel recorded no call chains, twice: {err}");
            return;
        }
        std::thread::sleep(std::time::Duration::from_secs(5));
    }
    let (off, on) = (format!("{label}-off"), format!("{label}-on"));
    let v = json_of(ok(&db, &["explain", &off, &on, "syscall", "--json"], 0).as_bytes());
    let t = &v["tests"][0];
    assert_eq!(t["profiles"][0]["kind"], "run", "{t}");
    assert_eq!(t["profiles"][1]["kind"], "run");
    let seccomp = |f: &str| {
        [
            "__seccomp_filter",
            "__secure_computing",
            "seccomp_run_filters",
            "syscall_trace_enter",
        ]
        .contains(&f)
    };
    // Where the change is: the seccomp hook on the system call entry, or the filter below it.
    let top = &t["profile"]["paths"][0];
    let f = top["path"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .as_str()
        .unwrap();
    let callees: Vec<&str> = top["callees"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["function"].as_str().unwrap())
        .collect();
    // Or the path stops one caller higher (do_syscall_64: under load, x64_sys_call moved too,
    // so the path holding the change is their common caller), and the callee that moved most
    // is the seccomp hook: the same function named first, one level down.
    let biggest = top["callees"]
        .as_array()
        .unwrap()
        .iter()
        .max_by(|a, b| {
            let d = |c: &serde_json::Value| c["total"]["change_ns_per_op"].as_f64().unwrap();
            d(a).total_cmp(&d(b))
        })
        .and_then(|c| c["function"].as_str());
    assert!(
        (seccomp(f) && (f != "syscall_trace_enter" || callees.contains(&"__seccomp_filter")))
            || biggest.is_some_and(seccomp),
        "{top}\nall paths: {}",
        t["profile"]["paths"]
    );
    assert_eq!(t["tied"][0]["fact"], "seccomp");
    assert_eq!(
        t["tied"][0]["functions"][0][0], "__seccomp_filter",
        "{}",
        t["tied"]
    );
    // ab --explain prints the same after the comparison.
    let out = ok(
        &db,
        &[
            "ab",
            "--switch",
            "seccomp",
            "syscall",
            "--quick",
            "--explain",
        ],
        0,
    );
    assert!(out.contains("sysperf explain: B against A"), "{out}");
}

/// The issue's planted `speculation` cause (#34), where the CPU lets a task control
/// speculative store bypass: `ab --switch speculation syscall --profile` then `explain` ties
/// the change to the switch. Where it does not (this VM: PR_GET_SPECULATION_CTRL = 0x2, no
/// PR_SPEC_PRCTL), `ab` must refuse the switch and say why, not measure two identical sides;
/// the planted half has not run on this VM.
#[test]
fn ab_switch_speculation_is_explained_where_the_cpu_allows_it_and_refused_where_not() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let controllable = sysperf::sys::store_bypass_ctrl()
        .map(|bits| bits & libc::PR_SPEC_PRCTL != 0)
        .unwrap_or(false);
    if !controllable {
        let out = sysperf(&db)
            .args(["ab", "--switch", "speculation", "syscall", "--quick"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains("the speculation switch changes nothing here")
                && err.contains("PR_GET_SPECULATION_CTRL"),
            "{err}"
        );
        assert!(ok(&db, &["runs", "--json"], 0).matches("\"id\"").count() == 0);
        return;
    }
    if !profiling_allowed() {
        return;
    }
    let args = [
        "ab",
        "--switch",
        "speculation",
        "syscall",
        "--profile",
        "--profile-seconds",
        "2",
        "--label",
        "sp",
    ];
    ok(&db, &args, 0);
    let v = explained(&db, "sp-off", "sp-on", "syscall");
    let t = &v["tests"][0];
    assert_eq!(t["profiles"][0]["kind"], "run", "{t}");
    assert_eq!(t["profiles"][1]["kind"], "run", "{t}");
    // The switch is the recorded difference, tied to the test (and to the functions that
    // write the control, where the change is in them).
    assert_eq!(t["tied"][0]["fact"], "speculation", "{}", t["tied"]);
    let sentence = t["sentence"].as_str().unwrap();
    assert!(sentence.contains("speculation"), "{sentence}");
}

/// The issue's planted cause on a paging test (#34): `ab --switch thp seqpage-thp --profile`
/// flips the machine's transparent-huge-page policy for one side; `explain` of the two runs
/// finds the change on the page-fault path and ties it to the policy through the functions
/// that take the small-page or the huge-page fault. The paper's paging tests turn huge pages
/// off for their regions, so they cannot show it (their faults are the Table 8 figure).
#[test]
fn ab_profile_then_explain_finds_the_planted_huge_page_policy_on_the_fault_path() {
    if !profiling_allowed() || !sysperf::sys::is_root() {
        return;
    }
    let path = "/sys/kernel/mm/transparent_hugepage/enabled";
    let Ok(policy) = std::fs::read_to_string(path) else {
        eprintln!("no transparent huge pages here ({path}): skipped");
        return;
    };
    let _thp = crate::support::thp_policy();
    // The other side of what the machine has: huge pages for one side, none for the other.
    let on = if policy.contains("[always]") {
        "never"
    } else {
        "always"
    };
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let args = [
        "ab",
        "--switch",
        "thp",
        "--on",
        on,
        "seqpage-thp",
        "--profile",
        "--profile-seconds",
        "2",
        "--label",
        "th",
    ];
    ok(&db, &args, 0);
    // The machine's policy is back.
    assert_eq!(std::fs::read_to_string(path).unwrap(), policy);
    let v = explained(&db, "th-off", "th-on", "seqpage-thp");
    let t = &v["tests"][0];
    let fault_path = |f: &str| {
        [
            "asm_exc_page_fault",
            "exc_page_fault",
            "do_user_addr_fault",
            "handle_mm_fault",
            "__handle_mm_fault",
            "do_anonymous_page",
            "do_huge_pmd_anonymous_page",
            "__do_huge_pmd_anonymous_page",
        ]
        .contains(&f)
    };
    let top = &t["profile"]["paths"][0];
    let path_fns: Vec<&str> = top["path"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f.as_str())
        .collect();
    assert!(
        path_fns.last().is_some_and(|f| fault_path(f)),
        "{top}\nall paths: {}",
        t["profile"]["paths"]
    );
    // Tied to the policy by the test and by the functions of the fault it chooses.
    let tied = &t["tied"][0];
    assert_eq!(tied["fact"], "transparent_hugepage", "{}", t["tied"]);
    let tied_fns = tied_functions(tied);
    assert!(
        tied_fns
            .iter()
            .any(|f| ["__handle_mm_fault", "do_anonymous_page"].contains(f)
                || f.starts_with("do_huge_pmd")),
        "{}",
        t["tied"]
    );
}

/// The issue's planted cause for a sysctl (#34): `ab --sysctl net.ipv4.tcp_rmem=... --profile`
/// on a suite point, `net.stream-tcp@65536`, gives the reader of side B a 16 KiB receive
/// buffer (the machine's is 128 KiB and grows), so the writer's 64 KiB writes go out in small
/// segments, each let out by a window update that the reader's recvmsg sends: explain finds
/// the change on that path (tcp_recvmsg sending the update, then, in the softirq it runs, the
/// writer's tcp_write_xmit sending the next segments) and ties it to the sysctl through those
/// functions. The slowdown is several times, far outside any noise.
#[test]
fn ab_profile_then_explain_finds_a_small_tcp_receive_buffer_on_the_window_update_path() {
    if !profiling_allowed() || !sysperf::sys::is_root() {
        return;
    }
    let path = "/proc/sys/net/ipv4/tcp_rmem";
    let Ok(before) = std::fs::read_to_string(path) else {
        eprintln!("no {path} here: skipped");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let state = tmp.path().join("state");
    let out = sysperf(&db)
        .env("SYSPERF_STATE_DIR", &state)
        .args(["ab", "--sysctl", "net.ipv4.tcp_rmem=4096 16384 16384"])
        .args(["net.stream-tcp@65536", "--profile", "--label", "rm"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // The machine's setting is back.
    assert_eq!(std::fs::read_to_string(path).unwrap(), before);
    let v = explained(&db, "rm-off", "rm-on", "net.stream-tcp@65536");
    let t = &v["tests"][0];
    assert_eq!(t["verdict"], "slower", "{}", t["sentence"]);
    let top = &t["profile"]["paths"][0];
    let path_fns: Vec<&str> = top["path"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f.as_str())
        .collect();
    // The reader's system call sends the window update, and the segments it lets out are
    // sent from within it.
    assert!(
        path_fns.contains(&"tcp_recvmsg")
            && ["__tcp_transmit_skb", "tcp_write_xmit"]
                .iter()
                .any(|f| path_fns.contains(f)),
        "{top}\nall paths: {}",
        t["profile"]["paths"]
    );
    // Tied to the sysctl (an ab switch) by the test and by the functions of that path.
    let tied = &t["tied"][0];
    assert_eq!(tied["fact"], "net.ipv4.tcp_rmem", "{}", t["tied"]);
    assert_eq!(tied["by_test"], true, "{tied}");
    let tied_fns = tied_functions(tied);
    assert!(
        tied_fns
            .iter()
            .any(|f| ["tcp_write_xmit", "__tcp_push_pending_frames"].contains(f)),
        "{}",
        t["tied"]
    );
}

/// The issue's planted sysctl whose cost is CPU time in one place (#34):
/// `net.ipv4.ip_local_reserved_ports` reserving most of the local port range. Each
/// `net.connect@tcp` connection needs a local port, and `__inet_hash_connect` scans the range
/// for one, a bitmap test per port, first the ports of the range's low end's parity (all
/// reserved here), then the others from a point drawn at random (reserved up to a free block
/// at the top): some ten thousand ports skipped per connection, in that one function. explain
/// must find the change there, account for most of it, and tie it to the sysctl. The share
/// itself is reported in the note, not judged here (a figure of timing).
///
/// `ab` runs in a network namespace of its own (the setting is per namespace): with 512 ports
/// left free, each trial's listener holds one for a minute (the server's TIME_WAIT), and tests
/// beside it in the machine's namespace would have found their ports gone. The value fits in
/// one write (the kernel takes at most a page).
#[test]
fn ab_profile_then_explain_finds_reserved_local_ports_in_the_connect_port_search() {
    if !profiling_allowed() || !sysperf::sys::is_root() {
        return;
    }
    let has = |tool: &str, version: &str| {
        std::process::Command::new(tool)
            .arg(version)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !has("unshare", "--version") || !has("ip", "-V") {
        eprintln!("no unshare or ip here: skipped");
        return;
    }
    let range = "/proc/sys/net/ipv4/ip_local_port_range";
    let r = std::fs::read_to_string(range).unwrap();
    let ends: Vec<u32> = r
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    let [lo, hi] = ends[..] else {
        panic!("{range}: {r:?}");
    };
    if hi < lo + 8192 {
        eprintln!("local ports {lo}-{hi}: too few to reserve most of them; skipped");
        return;
    }
    // All of [lo, hi - 1024], then the ports of lo's parity in the top 1024: the other 512 stay
    // free, and the connect's first pass (lo's parity) finds none.
    let top = hi - 1023;
    let singles: Vec<String> = (top..=hi)
        .filter(|p| p % 2 == lo % 2)
        .map(|p| p.to_string())
        .collect();
    let value = format!("{lo}-{},{}", top - 1, singles.join(","));
    assert!(value.len() < 4000, "{}", value.len());
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let setting = format!("net.ipv4.ip_local_reserved_ports={value}");
    let bin = assert_cmd::cargo::cargo_bin("sysperf");
    // In the new namespace: loopback up, the ab, then the list as ab left it.
    let script = r#"ip link set lo up && "$0" "$@"; code=$?;
        printf 'left:%s:' "$(cat /proc/sys/net/ipv4/ip_local_reserved_ports)" >&2; exit $code"#;
    let out = std::process::Command::new("unshare")
        .args(["--net", "--", "sh", "-c", script])
        .arg(&bin)
        .args(["ab", "--sysctl", &setting, "net.connect@tcp", "--profile"])
        .args(["--label", "lp"])
        .env("SYSPERF_DB", &db)
        .env("SYSPERF_STATE_DIR", tmp.path().join("state"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // The namespace's (empty) list is back: "off" and the restore write it, not skip it.
    assert!(err.ends_with("left::"), "{err}");
    let v = explained(&db, "lp-off", "lp-on", "net.connect@tcp");
    let t = &v["tests"][0];
    assert_eq!(t["verdict"], "slower", "{}", t["sentence"]);
    // The change is in the port search: the first path ends in it.
    let top_path = &t["profile"]["paths"][0];
    let last = top_path["path"]
        .as_array()
        .and_then(|p| p.last())
        .and_then(|f| f.as_str());
    assert_eq!(
        last,
        Some("__inet_hash_connect"),
        "{top_path}\nall paths: {}",
        t["profile"]["paths"]
    );
    assert!(top_path["share_pct"].as_f64().is_some(), "{top_path}");
    // Tied to the sysctl (the ab switch) by the test and by that function.
    let tied = &t["tied"][0];
    assert_eq!(
        tied["fact"], "net.ipv4.ip_local_reserved_ports",
        "{}",
        t["tied"]
    );
    assert_eq!(tied["by_test"], true, "{tied}");
    let tied_fns = tied_functions(tied);
    assert!(tied_fns.contains(&"__inet_hash_connect"), "{}", t["tied"]);
}

/// `--try-switches` measures a suite point as `ab` does (#34): the seccomp switch of an `ab`
/// of `net.stream-unix@64` is flipped and the point measured in the paired rounds, not left
/// out as "not measured".
#[test]
fn try_switches_measures_a_suite_point() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let point = "net.stream-unix@64";
    let ab = [
        "ab", "--switch", "seccomp", point, "--quick", "--label", "sp",
    ];
    ok(&db, &ab, 0);
    let out = sysperf(&db)
        .env("SYSPERF_STATE_DIR", tmp.path().join("st"))
        .args(["explain", "sp-off", "sp-on", point, "--try-switches"])
        .args(["--try-seconds", "0.3", "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let t = &json_of(&out.stdout)["try_switches"];
    assert_eq!(t["not_measured"], serde_json::json!([]), "{t}");
    let tried = &t["tried"][0];
    assert!(tried["error"].is_null(), "{tried}");
    let e = &tried["effects"][0];
    assert_eq!(e["test"], point, "{tried}");
    assert!(e["rounds"].as_u64().is_some_and(|r| r >= 10), "{e}");
}

/// A sysctl's value as the fingerprint records it (multiple values joined by one space).
fn sysctl(name: &str) -> String {
    let path = format!("/proc/sys/{}", name.replace('.', "/"));
    let text = std::fs::read_to_string(path).unwrap();
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Runs `ta` and `tb` in the store `db`: a run of syscall made here, exported and imported
/// twice, each recording `name` (a harmless IPC limit, one per test so that they may run at
/// once; not one sysperf records itself, so no other test's fingerprints see it change): A
/// with its value now, B with its last number one higher and another microcode. Returns the
/// value now and B's.
fn runs_differing_in_a_sysctl(
    db: &std::path::Path,
    dir: &std::path::Path,
    name: &str,
) -> (String, String) {
    let old = sysctl(name);
    let (head, last) = old.rsplit_once(' ').unwrap_or(("", &old));
    let last = (last.parse::<u64>().unwrap() + 1).to_string();
    let b = if head.is_empty() {
        last
    } else {
        format!("{head} {last}")
    };
    imported_pair(db, dir, "t", |run, is_b| {
        let value = if is_b { &b } else { &old };
        run["fingerprint"]["sysctls"][name] = value.clone().into();
    });
    (old, b)
}

/// Runs `{prefix}a` and `{prefix}b` in the store `db`: a run of syscall made here, exported,
/// edited by `edit` (the run, whether it is B's; B also gets another microcode) and imported
/// twice, as anyone could write runs into a store.
fn imported_pair(
    db: &std::path::Path,
    dir: &std::path::Path,
    prefix: &str,
    edit: impl Fn(&mut Value, bool),
) {
    let first = format!("{prefix}0");
    ok(
        db,
        &[
            "run",
            "syscall",
            "--trials",
            "3",
            "--min-time",
            "0.01",
            "--label",
            &first,
        ],
        0,
    );
    let doc = json_of(ok(db, &["export", &first], 0).as_bytes());
    let tag: String = prefix.bytes().map(|b| format!("{:x}", b % 16)).collect();
    for (side, is_b) in [("a", false), ("b", true)] {
        let mut doc = doc.clone();
        let run = &mut doc["runs"][0];
        run["id"] = format!("{side}{side}{tag:0<10}").into();
        run["label"] = format!("{prefix}{side}").into();
        edit(run, is_b);
        if is_b {
            run["fingerprint"]["microcode"] = "0xdead".into();
        }
        let file = dir.join(format!("{prefix}{side}.json"));
        std::fs::write(&file, serde_json::to_vec(&doc).unwrap()).unwrap();
        ok(db, &["import", file.to_str().unwrap()], 0);
    }
}

/// #41 item 1: what two stored runs name is data, so `--try-switches` sets only what sysperf
/// manages, to values of its type and range, never lowering a protection, and values recorded
/// on another host only with --allow-foreign-values. An export whose B run records
/// `kernel.core_pattern = |...` (by the fingerprint, and by an ab side's notes) is listed as
/// not switched and nothing is tried; the pattern is never written.
#[test]
fn try_switches_sets_only_managed_settings_from_this_host() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let state = tmp.path().join("st");
    let core = sysctl("kernel.core_pattern");
    let hostile = "|/nonexistent/sysperf-evil %p";
    let aslr = sysctl("kernel.randomize_va_space");
    imported_pair(&db, tmp.path(), "h", |run, is_b| {
        let (pattern, aslr) = if is_b {
            (hostile, "0")
        } else {
            (&core[..], &aslr[..])
        };
        let sysctls = &mut run["fingerprint"]["sysctls"];
        sysctls["kernel.core_pattern"] = pattern.into();
        sysctls["kernel.randomize_va_space"] = aslr.into();
        let side = if is_b { "on" } else { "off" };
        run["notes"] = serde_json::json!([format!(
            "ab: switch {side} kernel.core_pattern: kernel.core_pattern = {pattern}"
        )]);
    });
    let try_switches = |a: &str, b: &str, more: &[&str]| {
        let out = sysperf(&db)
            .env("SYSPERF_STATE_DIR", &state)
            .args(["explain", a, b, "syscall", "--try-switches", "--json"])
            .args(["--try-seconds", "0.3"])
            .args(more)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{err}");
        json_of(&out.stdout)["try_switches"].clone()
    };
    let why = |t: &Value, field: &str| -> String {
        t["not_switchable"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["field"] == field)
            .unwrap_or_else(|| panic!("{field} not listed: {t}"))["why"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let t = try_switches("ha", "hb", &[]);
    assert_eq!(t["tried"], serde_json::json!([]), "nothing is tried: {t}");
    for field in ["sysctl kernel.core_pattern", "ab switch"] {
        let w = why(&t, field);
        assert!(w.contains("not a setting sysperf manages"), "{field}: {w}");
    }
    if aslr != "0" {
        let w = why(&t, "sysctl kernel.randomize_va_space");
        assert!(w.contains("lower a protection"), "{w}");
    }
    assert_eq!(sysctl("kernel.core_pattern"), core);

    // A managed sysctl, a harmless value, recorded on another host: not without the flag.
    imported_pair(&db, tmp.path(), "f", |run, is_b| {
        let shmmni = sysctl("kernel.shmmni");
        let v = if is_b {
            (shmmni.parse::<u64>().unwrap() + 1).to_string()
        } else {
            shmmni
        };
        run["fingerprint"]["sysctls"]["kernel.shmmni"] = v.into();
        if is_b {
            run["fingerprint"]["hostname"] = "elsewhere".into();
        }
    });
    let t = try_switches("fa", "fb", &[]);
    let w = why(&t, "sysctl kernel.shmmni");
    assert!(
        w.contains("B's value was recorded on host 'elsewhere'")
            && w.contains("--allow-foreign-values"),
        "{w}"
    );
    assert_eq!(t["tried"], serde_json::json!([]), "{t}");
    let t = try_switches("fa", "fb", &["--allow-foreign-values"]);
    if sysperf::sys::is_root() {
        assert_eq!(t["tried"][0]["field"], "sysctl kernel.shmmni", "{t}");
    } else {
        assert!(
            why(&t, "sysctl kernel.shmmni").contains("needs root"),
            "{t}"
        );
    }
}

/// #34 item 3: `explain --try-switches` sets a recorded sysctl difference to A's value and to
/// B's in paired rounds, reports the paired ratio per test with its account, stores the two
/// sides as runs, and leaves the sysctl as found; a difference no runtime switch changes (the
/// microcode) is listed with why. As non-root the sysctl is listed as needing root. No figure
/// of timing is judged.
#[test]
fn try_switches_flips_a_recorded_sysctl_and_puts_it_back() {
    const NAME: &str = "kernel.shmmni";
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let state = tmp.path().join("st");
    let (old, b) = runs_differing_in_a_sysctl(&db, tmp.path(), NAME);
    let page = tmp.path().join("explain.html");
    let out = sysperf(&db)
        .env("SYSPERF_STATE_DIR", &state)
        .args(["explain", "ta", "tb", "syscall", "--try-switches"])
        .args(["--try-seconds", "0.3", "--json", "--html"])
        .arg(&page)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(sysctl(NAME), old, "the sysctl is as it was found");
    let v = json_of(&out.stdout);
    let t = &v["try_switches"];
    let field = format!("sysctl {NAME}");
    // The HTML page (--html) says what the switching found, as the JSON does (#34).
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("<h4>Differences switched on this machine</h4>"),
        "{html}"
    );
    let in_page = if sysperf::sys::is_root() {
        format!(">{field}</td><td>{old}</td><td>{b}</td><td>syscall</td>")
    } else {
        format!("<li>Not switched here: {field} (A {old}, B {b}): changing it needs root")
    };
    assert!(html.contains(&in_page), "{in_page}:\n{html}");
    assert!(!html.contains("<script"));
    let microcode = t["not_switchable"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["field"] == "microcode")
        .unwrap_or_else(|| panic!("{t}"));
    assert!(
        microcode["why"].as_str().unwrap().contains("firmware"),
        "{microcode}"
    );
    if !sysperf::sys::is_root() {
        let n = t["not_switchable"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["field"] == field.as_str())
            .unwrap_or_else(|| panic!("{t}"));
        assert!(n["why"].as_str().unwrap().contains("needs root"), "{n}");
        assert!(t["tried"].as_array().unwrap().is_empty(), "{t}");
        return;
    }
    let tried = &t["tried"][0];
    assert_eq!(tried["field"], field.as_str(), "{t}");
    assert_eq!(tried["flip"]["a"], old.as_str());
    assert_eq!(tried["flip"]["b"], b.as_str());
    assert!(tried["error"].is_null(), "{tried}");
    let e = &tried["effects"][0];
    assert_eq!(e["test"], "syscall", "{tried}");
    assert!(e["ratio"].as_f64().is_some_and(|r| r > 0.0), "{e}");
    assert!(e["rounds"].as_u64().is_some_and(|r| r >= 10), "{e}");
    // Two single runs of A and B have no verdict: nothing to share, whatever the flip did.
    assert_eq!(e["account"], "nothing_to_share", "{e}");
    for needle in [
        format!("--try-switches: 1 difference(s) this machine can switch (sysctl {NAME})"),
        format!("{NAME} is {old} again (found at {old})"),
    ] {
        assert!(err.contains(&needle), "{needle}: {err}");
    }
    // Each side stored as a run, at the value it stands for.
    let labels = &tried["labels"];
    for (side, value) in [(0, &old), (1, &b)] {
        let label = labels[side].as_str().unwrap();
        assert!(label.ends_with(["-off", "-on"][side]), "{labels}");
        let run = json_of(ok(&db, &["show", label, "--json"], 0).as_bytes());
        let notes = run["notes"].to_string();
        assert!(
            notes.contains(&format!("{NAME} = {value}")),
            "{side}: {notes}"
        );
    }
    assert!(
        std::fs::read_dir(&state).unwrap().next().is_none(),
        "the switch's record is removed"
    );
    // Only when asked.
    let text = ok(&db, &["explain", "ta", "tb", "syscall"], 0);
    assert!(!text.contains("Differences switched"), "{text}");
}

/// Ctrl-C while --try-switches has B's value set: the value found comes back, the record
/// goes, the explanation so far is printed and the exit code is 130. B's value of a sysctl of
/// several numbers is written as recorded.
#[test]
fn ctrl_c_during_try_switches_puts_the_sysctl_back() {
    if !sysperf::sys::is_root() {
        eprintln!("skipped: changing a sysctl needs root");
        return;
    }
    const NAME: &str = "kernel.sem";
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    let state = tmp.path().join("st");
    let (old, b) = runs_differing_in_a_sysctl(&db, tmp.path(), NAME);
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("sysperf"))
        .env("SYSPERF_DB", &db)
        .env("SYSPERF_STATE_DIR", &state)
        .args(["explain", "ta", "tb", "syscall", "--try-switches"])
        .args(["--try-seconds", "120"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let began = std::time::Instant::now();
    while sysctl(NAME) != b {
        assert!(
            began.elapsed() < std::time::Duration::from_secs(120),
            "B's value was never set"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    interrupt(&child);
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert_eq!(sysctl(NAME), old, "the value found is back");
    assert!(
        std::fs::read_dir(&state).unwrap().next().is_none(),
        "the switch's record is removed"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("not finished: stopped (Ctrl-C) while measuring"),
        "{text}"
    );
}

/// `sysperf explain A B TEST --json` of a store, which must succeed.
fn explained(db: &std::path::Path, a: &str, b: &str, test: &str) -> serde_json::Value {
    json_of(ok(db, &["explain", a, b, test, "--json"], 0).as_bytes())
}

/// The functions a tied difference names (each `[name, ...]` in the JSON).
fn tied_functions(tied: &serde_json::Value) -> Vec<&str> {
    tied["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f[0].as_str())
        .collect()
}

/// #42 item 6: a `--quick` run is a smoke test, and `explain` refuses it (exit 2) rather than
/// explain a change its one short trial cannot show.
#[test]
fn explain_refuses_quick_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    ok(&db, &["run", "syscall", "--quick", "--label", "q"], 0);
    ok(
        &db,
        &[
            "run",
            "syscall",
            "--trials",
            "3",
            "--min-time",
            "0.01",
            "--label",
            "m",
        ],
        0,
    );
    let out = sysperf(&db)
        .args(["explain", "m", "q", "syscall"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("smoke test"), "{err}");
}
