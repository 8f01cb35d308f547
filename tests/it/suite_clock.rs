//! The `clock` suite (the 4.2BSD paper's §3.2.3 clock processing, #45 item 7) from the
//! outside: a quick run stores the curve at the tick alone and under 16 timer processes, every
//! trial counted the interrupts of the test's CPU, those interrupts rise with the timer load
//! (16 timers at 1 kHz are thousands a second more than the tick), the derived figures stand
//! beside the paper's, the notes give the machine's clock rate beside the paper's 100 Hz, and no
//! timer process is left after the run.

use crate::support as common;

use common::*;
use serde_json::Value;

fn derived<'a>(run: &'a Value, name: &str) -> &'a Value {
    run["derived"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == name)
        .unwrap_or_else(|| panic!("no derived figure {name}: {:?}", derived_names(run)))
}

#[test]
fn quick_clock_suite_counts_more_interrupts_under_timers_and_leaves_nothing() {
    let v = quick_suite_run("clock", "suite-clock");
    let s = series_of(&v, "clock.timers");
    assert_eq!(xs_of(s), [0.0, 16.0]);
    assert_eq!(s["y_kind"], "cost_ns");
    for p in s["points"].as_array().unwrap() {
        // A microsecond of the spin's own time never takes less than a microsecond.
        let y = p["y"]["median"].as_f64().unwrap();
        assert!(y >= 999.0, "x={}: {y} ns per us of spin", p["x"]);
        for t in p["result"]["trials"].as_array().unwrap() {
            if t["kind"] == "measured" {
                assert!(
                    t["counters"]["interrupts_on_trial_cpus"].as_u64().is_some(),
                    "an uncounted trial: {t}"
                );
            }
        }
    }
    let idle = derived(&v, "clock.timers.interrupts-per-s@0");
    let loaded = derived(&v, "clock.timers.interrupts-per-s@16");
    let (i, l) = (
        idle["value"].as_f64().unwrap(),
        loaded["value"].as_f64().unwrap(),
    );
    // 16 timers at 1 kHz: 16,000 expiries a second; ask for a quarter of them above the tick.
    assert!(l > i + 4_000.0, "tick alone {i}/s, 16 timers {l}/s");
    assert!(
        idle["formula"]
            .as_str()
            .unwrap()
            .contains("the processor must field 200 interrupts per second"),
        "{idle}"
    );
    let irq = derived(&v, "clock.timers.interrupt-pct@0");
    assert!(
        irq["formula"]
            .as_str()
            .unwrap()
            .contains("3% of the machine cycles"),
        "{irq}"
    );
    for name in [
        "clock.timers.ns-per-interrupt@0",
        "clock.timers.ns-per-interrupt@16",
        "clock.timers.lost-pct@0",
        "clock.timers.lost-pct@16",
        "clock.timers.off-cpu-pct@0",
        "clock.timers.interrupt-pct@16",
    ] {
        derived(&v, name);
    }
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("CONFIG_HZ") && notes.contains("the paper's clock: 100 Hz"),
        "{notes}"
    );
}
