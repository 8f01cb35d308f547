//! The `commands` suite really runs its commands on its inputs: one exec of cat or who per
//! operation (nroff: groff's pipeline of processes), each reaped, counted by strace at two
//! operation counts; and a quick run stores its three curves.

use crate::support as common;

use common::*;
use std::time::Duration;

/// execve calls per operation of point `id`@`x`, from runs of `lo` and `hi` operations.
fn execs_per_op(id: &str, x: u64, lo: u64, hi: u64) -> f64 {
    let count = |n: u64| {
        strace_point(&["-c", "-U", "calls,name"], id, x, n)
            .concat()
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.len() == 2 && f[1] == "execve").then(|| f[0].parse::<f64>().unwrap())
            })
            .sum::<f64>()
    };
    (count(hi) - count(lo)) / (hi - lo) as f64
}

#[test]
fn each_operation_runs_the_command_once() {
    if !strace_available() {
        return;
    }
    for (id, program, x, per_op) in [
        ("commands.cat", "cat", 4096, 1.0),
        ("commands.who", "who", 16, 1.0),
    ] {
        if sysperf::programs::find(program).is_err() {
            eprintln!("skipped {id}: no {program}");
            continue;
        }
        assert_eq!(execs_per_op(id, x, 2, 6), per_op, "{id}");
    }
    if sysperf::programs::find("nroff").is_ok() {
        // groff's nroff script, then groff, troff and grotty: several programs per run.
        let n = execs_per_op("commands.nroff", 100, 2, 4);
        assert!(n >= 3.0 && n.fract() == 0.0, "{n} execs per nroff run");
    }
}

#[test]
fn quick_run_stores_the_three_commands() {
    let tmp = tempfile::tempdir().unwrap();
    let v = json_of(
        &sysperf(&tmp.path().join("s.db"))
            .args(["run", "--suite", "commands", "--quick", "--json"])
            .timeout(Duration::from_secs(300))
            .output()
            .unwrap()
            .stdout,
    );
    for id in ["commands.cat", "commands.who", "commands.nroff"] {
        let s = series_of(&v, id);
        let p = &s["points"][0];
        assert!(p["y"]["median"].as_f64().unwrap() > 0.0, "{id}: {p}");
        // The command's processes were reaped inside the trial: their CPU time is in it.
        let whole = &p["result"]["summary"]["whole"];
        let cpu = whole["user_ns_per_op"]["median"].as_f64().unwrap()
            + whole["sys_ns_per_op"]["median"].as_f64().unwrap();
        assert!(cpu > 0.0, "{id}: {p}");
    }
}
