//! The `mem` suite (lmbench's lat_mem_rd and bw_mem, #45) from the outside: the quick run
//! stores every curve with its points, bandwidth points count their buffer's bytes, the
//! preflight records what sysfs says of the caches, and the random walk finds memory slower
//! than a 16 KiB working set (a 100-fold difference, not a timing detail).

use crate::support as common;

use common::*;
use sysperf::suite::find_suite;

#[test]
fn quick_mem_suite_stores_every_curve_and_the_machines_caches() {
    let v = quick_suite_run("mem", "suite-mem");
    let suite = find_suite("mem").unwrap();
    for spec in (suite.series)() {
        let s = series_of(&v, spec.id);
        let want: Vec<f64> = (spec.points)(true).iter().map(|p| p.x).collect();
        assert_eq!(xs_of(s), want, "{}", spec.id);
        for p in s["points"].as_array().unwrap() {
            let y = p["y"]["median"].as_f64();
            assert!(y.is_some_and(|y| y > 0.0), "{}: {p}", spec.id);
            if spec.id.starts_with("mem.bw-") {
                // One pass over the buffer is its size in bytes, as bw_mem counts it.
                assert_eq!(p["bytes_per_op"], p["x"], "{}", spec.id);
            }
        }
    }
    let random = series_of(&v, "mem.lat-random");
    let ys: Vec<f64> = random["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["y"]["median"].as_f64().unwrap())
        .collect();
    assert!(ys[1] > 3.0 * ys[0], "64 MiB not slower than 16 KiB: {ys:?}");
    assert!(
        v.to_string().contains("cpu0's caches (sysfs)"),
        "no note of sysfs's caches"
    );
}
