//! A kernel profile as gprof prints one (the paper's §2.2): a header saying what was sampled,
//! the flat profile (self %, cumulative %, self+children %, samples, CPU time per operation,
//! function), then the call graph of the busiest functions (callers above each, callees
//! below, with the samples along each arc), and the same as JSON for scripts.

use super::num;
use crate::profile::{Arc, GraphEntry, Profile};
use serde_json::{json, Value};
use std::fmt::Write;

/// Callers and callees listed per call-graph entry.
const MAX_ARCS: usize = 6;

/// The profile as text: `top` lines of flat profile and `top.min(12)` call-graph entries.
pub fn render(p: &Profile, top: usize) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Kernel profile of {} ({} placement, CPUs {}): {} samples, one per {} us of CPU time, over {} operations at {} us per {}",
        p.bench,
        p.placement,
        crate::units::format_list(&p.cpus),
        p.samples,
        num(p.sample_period_ns as f64 / 1000.0),
        p.operations,
        num(p.ns_per_op() / 1000.0),
        p.unit,
    );
    let _ = writeln!(
        s,
        "({}; timed region only: dropped {} samples of setup and teardown and {} of other processes; {} lost; throttled {} times)",
        if p.scope.is_empty() { "sampling scope not recorded" } else { &p.scope },
        p.samples_outside_region,
        p.samples_other,
        p.lost_samples,
        p.throttled
    );
    if p.samples == 0 {
        let _ = writeln!(
            s,
            "no samples: the trial was too short to sample; profile longer (--seconds)"
        );
        return s;
    }
    let flat = p.flat();
    let _ = writeln!(
        s,
        "\nFlat profile (self: in the function itself; total: with everything it called; us/op: CPU time per {})",
        p.unit
    );
    let _ = writeln!(
        s,
        "{:>7} {:>7} {:>7} {:>8} {:>8} {:>10} {:>10}  function",
        "self%", "cum%", "total%", "self", "total", "self us/op", "total us/op"
    );
    for f in flat.iter().take(top) {
        let _ = writeln!(
            s,
            "{:>7.2} {:>7.2} {:>7.2} {:>8} {:>8} {:>10} {:>10}  {}",
            f.self_pct,
            f.cumulative_pct,
            f.total_pct,
            f.self_samples,
            f.total_samples,
            num(f.self_us_per_op),
            num(f.total_us_per_op),
            f.name
        );
    }
    if flat.len() > top {
        let rest: u64 = flat[top..].iter().map(|f| f.self_samples).sum();
        let _ = writeln!(
            s,
            "  ... {} more functions with {} self samples ({:.2}%)",
            flat.len() - top,
            rest,
            100.0 * rest as f64 / p.samples as f64
        );
    }
    let graph = p.call_graph(top.min(12));
    let _ = writeln!(
        s,
        "\nCall graph (by total; callers above each function, callees below, samples along each arc / the function's total)"
    );
    let _ = writeln!(
        s,
        "{:<6} {:>7} {:>7} {:>8} {:>8}  function",
        "index", "total%", "self%", "self", "total"
    );
    for e in &graph {
        render_entry(&mut s, e);
    }
    s
}

fn arc_name(name: &str, index: Option<usize>) -> String {
    match index {
        Some(i) => format!("{name} [{i}]"),
        None => name.to_string(),
    }
}

fn render_entry(s: &mut String, e: &GraphEntry) {
    arcs(s, e, &e.callers, "", "callers");
    let _ = writeln!(
        s,
        "{:<6} {:>7.2} {:>7.2} {:>8} {:>8}  {}",
        format!("[{}]", e.index),
        e.total_pct,
        e.self_pct,
        e.self_samples,
        e.total_samples,
        arc_name(&e.name, Some(e.index))
    );
    arcs(s, e, &e.callees, "  ", "callees");
    let _ = writeln!(s, "{}", "-".repeat(60));
}

/// One side of a call-graph entry, as gprof prints it: callers above the function, callees
/// (indented two more) below, each with its samples out of the function's total.
fn arcs(s: &mut String, e: &GraphEntry, list: &[Arc], indent: &str, what: &str) {
    let pad = " ".repeat(31);
    for a in list.iter().take(MAX_ARCS) {
        let _ = writeln!(
            s,
            "{pad}{:>10}      {indent}{}",
            format!("{}/{}", a.samples, e.total_samples),
            arc_name(&a.name, a.index)
        );
    }
    if list.len() > MAX_ARCS {
        let _ = writeln!(
            s,
            "{pad}{:>10}      {indent}({} more {what})",
            "",
            list.len() - MAX_ARCS
        );
    }
}

/// Version of the profile document's shape.
pub const FORMAT_VERSION: u32 = 1;

/// The profiles as one JSON document: each stored profile (folded stacks included) with its
/// computed `ns_per_op`, `flat` profile and `call_graph` (the `top` busiest functions).
pub fn json_document(profiles: &[Profile], top: usize) -> Value {
    let list: Vec<Value> = profiles
        .iter()
        .map(|p| {
            let mut v = serde_json::to_value(p).unwrap_or(Value::Null);
            if let Value::Object(m) = &mut v {
                m.insert("ns_per_op".into(), json!(p.ns_per_op()));
                m.insert("flat".into(), json!(p.flat()));
                m.insert("call_graph".into(), json!(p.call_graph(top)));
            }
            v
        })
        .collect();
    json!({ "format": "sysperf-profile", "format_version": FORMAT_VERSION, "profiles": list })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn fixture() -> Profile {
        let stacks = [
            (
                "entry_SYSCALL_64_after_hwframe;do_syscall_64;x64_sys_call;__x64_sys_getpid;__task_pid_nr_ns",
                1800u64,
            ),
            (
                "entry_SYSCALL_64_after_hwframe;do_syscall_64;x64_sys_call;__x64_sys_getpid",
                700,
            ),
            ("entry_SYSCALL_64_after_hwframe;do_syscall_64", 900),
            (
                "entry_SYSCALL_64_after_hwframe;do_syscall_64;syscall_exit_to_user_mode",
                600,
            ),
            ("entry_SYSCALL_64_after_hwframe", 500),
            ("[user] sysperf:syscall", 500),
        ];
        Profile {
            bench: "syscall".into(),
            unit: "call".into(),
            placement: "single".into(),
            cpus: vec![1],
            iterations: 9_000_000,
            operations: 9_000_000,
            wall_ns: 1_000_000_000,
            sample_period_ns: 200_033,
            scope: crate::profile::sampler::Scope::Cpus.describe().into(),
            samples: stacks.iter().map(|s| s.1).sum(),
            samples_outside_region: 12,
            samples_other: 3,
            lost_samples: 0,
            throttled: 0,
            stacks: stacks.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    #[test]
    fn profile_snapshot() {
        insta::assert_snapshot!(render(&fixture(), 25));
    }

    #[test]
    fn json_has_flat_and_graph_and_round_trips_the_stored_profile() {
        let p = fixture();
        let doc = json_document(std::slice::from_ref(&p), 5);
        assert_eq!(doc["format"], "sysperf-profile");
        let e = &doc["profiles"][0];
        assert_eq!(e["flat"][0]["name"], "__task_pid_nr_ns");
        assert_eq!(e["call_graph"].as_array().unwrap().len(), 5);
        let back: Profile = serde_json::from_value(e.clone()).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn an_empty_profile_says_why() {
        let mut p = fixture();
        p.samples = 0;
        p.stacks.clear();
        assert!(render(&p, 10).contains("no samples"));
    }
}
