//! The `perfbench` suite from the outside (#45): a quick run stores every curve of perf
//! bench's scheduler and futex tests and leaves no process behind, and each benchmark's work is
//! counted with strace in one worker trial: the 100-byte messages every sender writes, the
//! futex calls of hash (every one EAGAIN) and lock-pi, and one FUTEX_WAKE or
//! FUTEX_CMP_REQUEUE per blocked thread in wake, wake-parallel and requeue. Nothing here
//! depends on speed.

use crate::support as common;

use common::*;

/// Every series and the x of its quick sweep.
const QUICK: &[(&str, &str, f64)] = &[
    ("perfbench.messaging-pipe", "cost_ns", 1.0),
    ("perfbench.messaging-socket", "cost_ns", 1.0),
    ("perfbench.futex-hash", "ops_per_sec", 2.0),
    ("perfbench.futex-lock-pi", "ops_per_sec", 2.0),
    ("perfbench.futex-wake", "cost_ns", 2.0),
    ("perfbench.futex-wake-parallel", "cost_ns", 2.0),
    ("perfbench.futex-requeue", "cost_ns", 2.0),
];

#[test]
fn quick_run_stores_every_curve_and_leaves_nothing_behind() {
    let v = quick_suite_run("perfbench", "perfbench");
    for (id, kind, x) in QUICK {
        let s = series_of(&v, id);
        assert_eq!(s["y_kind"], *kind, "{id}");
        assert_eq!(xs_of(s), [*x], "{id}");
        let p = &s["points"][0];
        assert!(
            p["y"]["median"].as_f64().is_some_and(|y| y > 0.0),
            "{id}: {p}"
        );
    }
    // lock-pi's usleep(1) blocks its thread once per pair: a voluntary switch per operation.
    let lock_pi = &series_of(&v, "perfbench.futex-lock-pi")["points"][0]["result"]["summary"];
    assert!(
        lock_pi["nvcsw_per_op"].as_f64().unwrap() >= 0.9,
        "{lock_pi}"
    );
}

/// Lines of the traces that contain every one of `parts`.
fn lines_with(traces: &[String], parts: &[&str]) -> usize {
    traces
        .iter()
        .flat_map(|t| t.lines())
        .filter(|l| parts.iter().all(|p| l.contains(p)))
        .count()
}

#[test]
fn messaging_senders_write_every_message_to_every_receiver_of_their_group() {
    if !strace_available() {
        return;
    }
    for id in ["perfbench.messaging-pipe", "perfbench.messaging-socket"] {
        // One group, 3 loops: 20 senders x 20 receivers x 3 messages of 100 bytes, read whole
        // by 20 receivers (each exits 1 unless it got its 60; the trial fails then).
        let t = strace_point(&["-qq", "-e", "trace=write"], id, 1, 3);
        assert_eq!(lines_with(&t, &["write(", ", 100) = 100"]), 1200, "{id}");
        // 40 processes and the worker, each in its own trace.
        assert_eq!(t.len(), 41, "{id}");
    }
}

#[test]
fn futex_tests_make_the_calls_perf_bench_makes() {
    if !strace_available() {
        return;
    }
    let futex =
        |id: &str, param: u64, n: u64| strace_point(&["-qq", "-e", "trace=futex"], id, param, n);
    // hash: 2 threads x 300 waits for a value their words never hold, all EAGAIN.
    let t = futex("perfbench.futex-hash", 2, 300);
    assert_eq!(
        lines_with(&t, &["FUTEX_WAIT_PRIVATE, 1234, NULL) = -1 EAGAIN"]),
        600
    );
    // lock-pi: 2 threads x 20 pairs on the one PI word.
    let t = futex("perfbench.futex-lock-pi", 2, 20);
    assert_eq!(lines_with(&t, &["FUTEX_LOCK_PI_PRIVATE", ") = 0"]), 40);
    assert_eq!(lines_with(&t, &["FUTEX_UNLOCK_PI_PRIVATE", ") = 0"]), 40);
    // wake and wake-parallel: 4 blocked threads, one FUTEX_WAKE that wakes one for each.
    for id in ["perfbench.futex-wake", "perfbench.futex-wake-parallel"] {
        let t = futex(id, 4, 1);
        assert_eq!(lines_with(&t, &["FUTEX_WAKE_PRIVATE, 1) = 1"]), 4, "{id}");
    }
    // requeue: 4 moved one per call, none woken; the wake from the second word finds all 4.
    let t = futex("perfbench.futex-requeue", 4, 1);
    assert_eq!(
        lines_with(&t, &["FUTEX_CMP_REQUEUE_PRIVATE, 0, 1, ", ") = 1"]),
        4
    );
    assert_eq!(lines_with(&t, &["FUTEX_WAKE_PRIVATE, 2147483647) = 4"]), 1);
}
