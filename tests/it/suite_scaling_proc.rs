//! The process half of `--suite scaling`: a quick run stores every curve with its points, and
//! each benchmark's hot loop is counted from the outside with strace (one fork and one wait,
//! one kill, one select/poll/epoll_wait over N descriptors finding 1 ready, per iteration).
//! Nothing here depends on speed.

use crate::support as common;

use common::*;

/// This half's series, the x values of their quick sweep, and what their y is.
const QUICK: &[(&str, &[f64], &str)] = &[
    ("scaling.forkwait", &[0.0, 100.0], "cost_ns"),
    ("scaling.forkwait-any", &[0.0, 100.0], "cost_ns"),
    ("scaling.kill", &[1.0, 100.0], "cost_ns"),
    ("scaling.select", &[1.0, 100.0], "cost_ns"),
    ("scaling.poll", &[1.0, 100.0], "cost_ns"),
    ("scaling.epoll", &[1.0, 100.0], "cost_ns"),
    ("scaling.sched-sleeping", &[0.0, 100.0], "cost_ns"),
    // The worker's CPU time: its wall time would be the spinners' share of the CPU.
    ("scaling.sched-runnable", &[0.0, 2.0], "cpu_ns"),
];

#[test]
fn quick_run_stores_every_curve_with_its_points_and_notes() {
    let v = quick_suite_run("scaling", "scaling-proc");
    for (id, xs, kind) in QUICK {
        let s = series_of(&v, id);
        assert_eq!(s["y_kind"], *kind, "{id}");
        assert_eq!(&xs_of(s), xs, "{id}");
        for p in s["points"].as_array().unwrap() {
            let y = p["y"]["median"].as_f64();
            assert!(y.is_some_and(|y| y > 0.0), "{id}: {p}");
        }
        let slope = format!("{id}.slope");
        assert!(
            v["derived"]
                .as_array()
                .unwrap()
                .iter()
                .any(|d| d["name"] == slope),
            "{slope} missing"
        );
    }
    let notes = v["notes"].to_string();
    assert!(notes.contains("live children (asked 3000"), "{notes}");
    assert!(notes.contains("FD_SETSIZE"), "{notes}");
}

/// The strace text of one worker trial of series point `id`@`param`, tracing `calls` in the
/// worker and every child, one file per process (-ff, so no line is split by another
/// process's), concatenated.
fn traced(id: &str, param: u64, iterations: u64, calls: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace");
    strace_worker(
        &["-ff", "-qq", "-e", &format!("trace={calls}")],
        &file,
        &point_request(id, param, iterations),
        &[],
    );
    files_in(dir.path()).concat()
}

/// The calls of `name` in `text` that completed, one line each with strace's padding
/// collapsed: a call split by another process's line ("<unfinished ...>", then
/// "<... name resumed>") counts once, and one interrupted to be restarted ("= ?") not at all.
fn completed(text: &str, name: &str) -> Vec<String> {
    let (open, resumed) = (format!(" {name}("), format!("<... {name} resumed>"));
    text.lines()
        .map(|l| format!(" {}", l.split_whitespace().collect::<Vec<_>>().join(" ")))
        .filter(|l| {
            ((l.contains(&open) && !l.contains("<unfinished")) || l.contains(&resumed))
                && !l.contains(" = ? ")
        })
        .collect()
}

fn starts(text: &str, name: &str) -> usize {
    completed(text, name).len()
}

#[test]
fn fork_loops_fork_and_reap_one_child_per_iteration() {
    if !strace_available() {
        return;
    }
    for id in ["scaling.forkwait", "scaling.forkwait-any"] {
        // 10 idle children made in setup and reaped in teardown, the same at both counts.
        let (lo, hi) = (5, 15);
        let a = traced(id, 10, lo, "clone,clone3,wait4");
        let b = traced(id, 10, hi, "clone,clone3,wait4");
        let forks = |t: &str| starts(t, "clone") + starts(t, "clone3");
        assert_eq!(forks(&b) - forks(&a), (hi - lo) as usize, "{id}: forks");
        assert_eq!(
            starts(&b, "wait4") - starts(&a, "wait4"),
            (hi - lo) as usize,
            "{id}: waits"
        );
        // And setup really made the 10 idle children: lo iterations plus 10.
        assert_eq!(forks(&a), lo as usize + 10, "{id}: {a}");
    }
    // forkwait-any waits for any child (-1); forkwait names the one it forked.
    let any_child = |t: &str| {
        let waits = completed(t, "wait4");
        waits.iter().filter(|l| l.contains("wait4(-1,")).count()
    };
    assert_eq!(any_child(&traced("scaling.forkwait-any", 3, 4, "wait4")), 4);
    assert_eq!(any_child(&traced("scaling.forkwait", 3, 4, "wait4")), 0);
}

#[test]
fn kill_checks_the_newest_child_once_per_iteration() {
    if !strace_available() {
        return;
    }
    let t = traced("scaling.kill", 10, 25, "clone,clone3,kill");
    let checks: Vec<String> = completed(&t, "kill")
        .into_iter()
        .filter(|l| l.ends_with(", 0) = 0"))
        .collect();
    assert_eq!(checks.len(), 25, "{t}");
    // Every check names the same pid, the one the last fork of setup returned.
    let target = |l: &str| {
        l.split("kill(")
            .nth(1)
            .unwrap()
            .split(',')
            .next()
            .unwrap()
            .to_string()
    };
    assert!(
        checks.iter().all(|l| target(l) == target(&checks[0])),
        "{t}"
    );
    let forks = completed(&t, "clone");
    assert_eq!(forks.len(), 10, "{t}");
    assert_eq!(
        forks.last().unwrap().rsplit(" = ").next().unwrap(),
        target(&checks[0]),
        "{t}"
    );
    // Teardown kills the 10 children, nothing else is signalled.
    let kills = completed(&t, "kill");
    assert_eq!(
        kills.iter().filter(|l| l.contains("SIGKILL")).count(),
        10,
        "{t}"
    );
    assert_eq!(kills.len(), 35, "{t}");
}

#[test]
fn scans_ask_about_n_descriptors_once_per_iteration_and_find_one() {
    if !strace_available() {
        return;
    }
    let (n, k) = (50u64, 7usize);
    // select: glibc's select is the pselect6 system call; the set holds n descriptors.
    let t = traced("scaling.select", n, k as u64, "select,pselect6");
    let calls: Vec<&str> = t.lines().filter(|l| l.contains("select")).collect();
    assert_eq!(calls.len(), k, "{t}");
    for l in &calls {
        let set = l.split('[').nth(1).unwrap().split(']').next().unwrap();
        assert_eq!(set.split_whitespace().count() as u64, n, "{l}");
        assert!(l.contains(") = 1 (in ["), "{l}");
    }
    // poll: n entries, exactly one with an event.
    let t = traced("scaling.poll", n, k as u64, "poll,ppoll");
    let want = format!("], {n}, 0) = 1");
    let calls: Vec<&str> = t.lines().filter(|l| l.contains("POLLIN")).collect();
    assert_eq!(calls.len(), k, "{t}");
    assert!(calls.iter().all(|l| l.contains(&want)), "{t}");
    // epoll: n descriptors registered once in setup, then one wait per iteration finding 1.
    let t = traced(
        "scaling.epoll",
        n,
        k as u64,
        "epoll_ctl,epoll_wait,epoll_pwait",
    );
    assert_eq!(t.matches("EPOLL_CTL_ADD").count() as u64, n, "{t}");
    let waits: Vec<&str> = t.lines().filter(|l| l.contains("epoll_")).collect();
    let waits: Vec<&&str> = waits.iter().filter(|l| !l.contains("epoll_ctl")).collect();
    assert_eq!(waits.len(), k, "{t}");
    assert!(waits.iter().all(|l| l.ends_with(") = 1")), "{t}");
}
