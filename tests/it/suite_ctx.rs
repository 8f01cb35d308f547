//! The `ctx` suite (lmbench's lat_ctx, #45) from the outside: the quick run stores every ring
//! curve and the overhead curve, each hand-over round a ring is a context switch (the
//! workers' rusage, children included) while the overhead loop switches nothing, the
//! derived figures subtract the overhead as lat_ctx prints it, and no process of a ring is
//! left after the run.

use crate::support as common;

use common::*;
use sysperf::suite::find_suite;

#[test]
fn quick_ctx_suite_switches_at_every_hand_over_and_leaves_nothing() {
    let v = quick_suite_run("ctx", "suite-ctx");
    let suite = find_suite("ctx").unwrap();
    for spec in (suite.series)() {
        let s = series_of(&v, spec.id);
        let want: Vec<f64> = (spec.points)(true).iter().map(|p| p.x).collect();
        assert_eq!(xs_of(s), want, "{}", spec.id);
        for p in s["points"].as_array().unwrap() {
            let sum = &p["result"]["summary"];
            let nvcsw = sum["nvcsw_per_op"].as_f64().unwrap();
            let csw = sum["csw_per_op"].as_f64().unwrap();
            if spec.id == "ctx.overhead" {
                assert!(nvcsw < 0.1, "{}: {nvcsw} switches per hand-over", spec.id);
            } else {
                // The ring shares one CPU: a process blocks on its read (a voluntary switch)
                // unless it was preempted first (an involuntary one, when the machine is
                // busy), so every hand-over is a switch of one kind or the other.
                assert!(
                    csw > 0.8,
                    "{} x={}: {csw} switches per hand-over ({nvcsw} voluntary)",
                    spec.id,
                    p["x"]
                );
            }
        }
    }
    let names = derived_names(&v);
    for id in ["ctx.s0k@2", "ctx.s64k@8"] {
        let name = format!("{id} less overhead");
        assert!(names.contains(&name.as_str()), "no {name}: {names:?}");
    }
}
