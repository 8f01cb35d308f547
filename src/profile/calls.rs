//! Per-function call times over a system profile, as the 4.2BSD paper's Tables 4, 9 and 10
//! give them for namei (calls per second, self and child milliseconds per call, share of the
//! kernel's time).
//!
//! Calls are counted with the kernel's function tracer: one tracefs instance per function
//! (`sysperf-<pid>-calls-<n>`, removed on every exit path by [`Instance`]'s drop and, after a
//! kill, by the janitor's sweep), its `set_ftrace_filter` naming that function alone and
//! `current_tracer` set to `function`. Each call writes one event into the instance's small
//! ring buffer, which nobody reads: the per-CPU `stats` files count what was written
//! (`entries` still in the buffer plus `overrun`, the ones overwritten), so the count costs
//! no reader and no memory however long it runs. Time comes from the profile's samples by
//! gprof's method: self = samples with the function at the leaf, children = samples with it
//! below the leaf; per call = those samples' CPU time over the counted calls. What the
//! counting costs is measured in the same profile: the samples inside the function tracer's
//! own frames (`function_trace_call`, `ftrace_*`, `ring_buffer_*`, ...), per counted call.

use crate::model::{FunctionCalls, SystemProfile};
use crate::sys;
use crate::trace::tracefs::{Instance, Tracefs};

/// The default functions: path name lookup (the paper's namei).
pub const DEFAULT: &str = "filename_lookup,link_path_walk";

/// Ring buffer per CPU of each counting instance, KiB: events are counted, not kept.
const BUFFER_KB: u64 = 16;

/// Splits and checks a comma-separated list of kernel function names.
pub fn parse_names(list: &str) -> Result<Vec<String>, String> {
    let names: Vec<String> = list
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    if names.is_empty() {
        return Err("name at least one kernel function, e.g. filename_lookup".into());
    }
    if let Some(bad) = names.iter().find(|n| {
        !n.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    }) {
        return Err(format!(
            "'{bad}' is not a kernel function name (letters, digits, '_' and '.')"
        ));
    }
    if names.len() > 16 {
        return Err("at most 16 functions at once".into());
    }
    Ok(names)
}

/// Function tracers counting calls, one instance per function.
pub struct Counter {
    // Field order is drop order: the instances go before tracefs (and its private mount).
    instances: Vec<Instance>,
    _fs: Tracefs,
}

impl Counter {
    /// Starts counting the calls of each of `names`; the error says why it cannot.
    pub fn start(names: &[String]) -> Result<Counter, String> {
        let fs = Tracefs::open().map_err(|e| e.to_string())?;
        let mut instances = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let inst = Instance::create(&fs, &format!("sysperf-{}-calls-{i}", sys::getpid()))
                .map_err(|e| e.to_string())?;
            let refused = |what: &str, e: std::io::Error| {
                format!(
                    "the function tracer refused {what} ({e}); it needs root, a kernel with \
                     CONFIG_FUNCTION_TRACER and CONFIG_DYNAMIC_FTRACE, and no kernel lockdown of \
                     tracefs (see dmesg | grep -i lockdown)"
                )
            };
            inst.set_buffer_kb(BUFFER_KB)
                .map_err(|e| refused("the buffer size", e))?;
            inst.write("set_ftrace_filter", name).map_err(|e| {
                if e.raw_os_error() == Some(libc::EINVAL) {
                    format!("{name} cannot be traced: it is not in available_filter_functions (inlined, static and unused, or marked notrace)")
                } else {
                    refused(&format!("the filter {name}"), e)
                }
            })?;
            inst.write("current_tracer", "function")
                .map_err(|e| refused("current_tracer=function", e))?;
            instances.push(inst);
        }
        for inst in &instances {
            inst.write("tracing_on", "1")
                .map_err(|e| format!("starting the function tracer: {e}"))?;
        }
        Ok(Counter { instances, _fs: fs })
    }

    /// Stops counting and returns the calls of each function (in the order given); the
    /// instances are removed when the counter drops.
    pub fn stop(self) -> Result<Vec<u64>, String> {
        for inst in &self.instances {
            let _ = inst.write("tracing_on", "0");
        }
        self.instances
            .iter()
            .map(|inst| {
                let mut total = 0;
                let dir = inst.dir.join("per_cpu");
                let cpus = std::fs::read_dir(&dir)
                    .map_err(|e| format!("reading {}: {e}", dir.display()))?;
                for cpu in cpus.flatten() {
                    let stats = std::fs::read_to_string(cpu.path().join("stats"))
                        .map_err(|e| format!("reading the function tracer's counts: {e}"))?;
                    total += events_written(&stats);
                }
                Ok(total)
            })
            .collect()
    }
}

/// Events written to one CPU's ring buffer, from its `stats`: the ones still there plus the
/// ones overwritten (nobody reads the buffer, so none were consumed).
pub fn events_written(stats: &str) -> u64 {
    let field = |name: &str| {
        stats
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    field("entries:") + field("overrun:")
}

/// Whether a frame belongs to the function tracer itself (what counting costs).
fn is_tracer_frame(f: &str) -> bool {
    [
        "function_trace_call",
        "ftrace_",
        "__ftrace",
        "trace_function",
        "ring_buffer_",
        "rb_",
        "arch_ftrace",
    ]
    .iter()
    .any(|p| f.starts_with(p))
}

/// The functions' call times from the profile's samples and the counted `calls` (None, with
/// `note` saying why, when they could not be counted).
pub fn function_times(
    p: &SystemProfile,
    names: &[String],
    calls: Option<&[u64]>,
    note: &str,
) -> Vec<FunctionCalls> {
    let flat = p.kernel_profile().flat();
    let seconds = p.wall_ns as f64 / 1e9;
    let us = |samples: u64| samples as f64 * p.sample_period_ns as f64 / 1000.0;
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let (s, t) = flat
                .iter()
                .find(|f| &f.name == name)
                .map(|f| (f.self_samples, f.total_samples))
                .unwrap_or((0, 0));
            let n = calls.and_then(|c| c.get(i).copied());
            let per_call = |samples: u64| n.filter(|&n| n > 0).map(|n| us(samples) / n as f64);
            FunctionCalls {
                name: name.clone(),
                calls: n,
                calls_per_s: n.map(|n| {
                    if seconds > 0.0 {
                        n as f64 / seconds
                    } else {
                        0.0
                    }
                }),
                self_samples: s,
                child_samples: t - s,
                self_us_per_call: per_call(s),
                child_us_per_call: per_call(t - s),
                self_pct_kernel: p.kernel_pct(s),
                total_pct_kernel: p.kernel_pct(t),
                note: note.to_string(),
            }
        })
        .collect()
}

/// How the calls were counted, and what the counting cost as the same profile measured it.
pub fn method(p: &SystemProfile, calls: Option<&[u64]>, refused: Option<&str>) -> String {
    let gprof = "self = samples with the function at the leaf, children = samples with it below the leaf (gprof's method), per call over the counted calls";
    match (calls, refused) {
        (Some(c), _) => {
            let counted: u64 = c.iter().sum();
            let tracer: u64 = p
                .stacks
                .iter()
                .filter(|(k, _)| k.split(';').any(is_tracer_frame))
                .map(|(_, &v)| v)
                .sum();
            let cost = if counted > 0 {
                format!(
                    "{:.3} us per counted call",
                    tracer as f64 * p.sample_period_ns as f64 / 1000.0 / counted as f64
                )
            } else {
                "nothing counted".into()
            };
            format!(
                "calls counted by the function tracer (one tracefs instance per function, events counted from its per-CPU stats, never read); {gprof}; the counting cost {tracer} samples ({:.2}% of kernel time), {cost}",
                p.kernel_pct(tracer)
            )
        }
        (None, why) => format!(
            "calls not counted: {}; times from the samples only ({gprof})",
            why.unwrap_or("not asked")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::system::Aggregator;

    #[test]
    fn names_are_checked() {
        assert_eq!(
            parse_names(" filename_lookup, link_path_walk ,").unwrap(),
            vec!["filename_lookup", "link_path_walk"]
        );
        assert!(parse_names("").is_err());
        assert!(parse_names("a b").is_err());
        assert!(parse_names("x;rm").is_err());
        assert!(parse_names(&vec!["f"; 17].join(",")).is_err());
    }

    #[test]
    fn counts_are_entries_plus_overruns() {
        let stats = "entries: 120\noverrun: 3000\ncommit overrun: 0\nbytes: 4000\noldest event ts: 1.0\nnow ts: 2.0\ndropped events: 0\nread events: 0\n";
        assert_eq!(events_written(stats), 3120);
        assert_eq!(events_written(""), 0);
    }

    #[test]
    fn call_times_are_gprofs_self_and_children_over_the_counted_calls() {
        let mut p = Aggregator::new(100).finish();
        // 1 s of 1 ms samples: namei 10 self, 30 below it; 60 elsewhere; 20 in the tracer.
        p.sample_period_ns = 1_000_000;
        p.wall_ns = 1_000_000_000;
        for (k, v) in [
            ("sys;filename_lookup", 10u64),
            ("sys;filename_lookup;path_lookupat;walk", 30),
            ("sys;other", 40),
            (
                "sys;filename_lookup;function_trace_call;ring_buffer_lock_reserve",
                20,
            ),
        ] {
            p.stacks.insert(k.into(), v);
        }
        p.kernel_samples = 100;
        p.samples = 100;
        let names = vec!["filename_lookup".to_string(), "absent".to_string()];
        let f = function_times(&p, &names, Some(&[1000, 0]), "");
        assert_eq!((f[0].self_samples, f[0].child_samples), (10, 50));
        assert_eq!(f[0].calls_per_s, Some(1000.0));
        // 10 ms of self time over 1000 calls: 10 us a call; children 50 ms: 50 us.
        assert!((f[0].self_us_per_call.unwrap() - 10.0).abs() < 1e-9);
        assert!((f[0].child_us_per_call.unwrap() - 50.0).abs() < 1e-9);
        assert!((f[0].self_pct_kernel - 10.0).abs() < 1e-9);
        assert!((f[0].total_pct_kernel - 60.0).abs() < 1e-9);
        assert_eq!(f[1].self_us_per_call, None, "no calls: no time per call");
        let uncounted = function_times(&p, &names, None, "refused");
        assert_eq!(
            (uncounted[0].calls, uncounted[0].note.as_str()),
            (None, "refused")
        );
        let m = method(&p, Some(&[1000, 0]), None);
        assert!(
            m.contains("20 samples (20.00% of kernel time), 20.000 us per counted call"),
            "{m}"
        );
        assert!(method(&p, None, Some("EPERM")).contains("calls not counted: EPERM"));
    }
}
