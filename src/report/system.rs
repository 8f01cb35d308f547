//! A system profile (`sysperf profile --system`) as text and JSON: what was sampled, where
//! the machine's time went by subsystem, by process and by system call, then the kernel's
//! flat profile and call graph (as a benchmark's, `report::profile`), the per-function call
//! times when counted, and which benchmarks isolate the hottest functions.

use super::{num, utc};
use crate::profile::isolate::{Comparison, Isolation, Moved};
use crate::profile::system::SystemProfile;
use serde_json::{json, Value};
use std::fmt::Write;

/// Version of the system profile document's shape.
pub const FORMAT_VERSION: u32 = 1;

/// Processes and system calls listed in the text.
const TOP_ROWS: usize = 15;

fn secs(ns: u64) -> String {
    num(ns as f64 / 1e9)
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// Rows of (name, samples), most first, then by name.
fn sorted<'a>(m: impl IntoIterator<Item = (&'a String, &'a u64)>) -> Vec<(&'a str, u64)> {
    let mut v: Vec<(&str, u64)> = m.into_iter().map(|(k, &v)| (k.as_str(), v)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    v
}

/// The subsystems with their share of all samples and of kernel time (idle excluded).
pub fn subsystem_rows(p: &SystemProfile) -> Vec<(String, u64, f64, Option<f64>)> {
    sorted(&p.subsystems)
        .into_iter()
        .map(|(name, n)| {
            let of_kernel = (name != "user" && name != "idle").then(|| p.kernel_pct(n));
            (name.to_string(), n, pct(n, p.samples), of_kernel)
        })
        .collect()
}

/// The profile as text, `top` lines of flat profile, then the benchmarks that isolate its
/// hottest functions (`iso`, from the stored benchmark profiles).
pub fn render(p: &SystemProfile, top: usize, iso: &[Isolation]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "System profile {}{}: {} s of the whole machine ({} CPUs: {}), {} samples, one per {} us of CPU time{}",
        if p.id.is_empty() { "(not stored)" } else { &p.id },
        p.label.as_deref().map(|l| format!(" \"{l}\"")).unwrap_or_default(),
        secs(p.wall_ns),
        p.cpus.len(),
        crate::harness::placement::format_list(&p.cpus),
        p.samples,
        num(p.sample_period_ns as f64 / 1000.0),
        if p.interrupted { " (interrupted early)" } else { "" },
    );
    let _ = writeln!(
        s,
        "host {}, kernel {}; kernel {} samples ({:.1}%), user {} ({:.1}%), idle {} ({:.1}%); {} lost, throttled {} times; {} stacks kept (cap {}), {} samples of later stacks under [other]",
        p.hostname.as_deref().unwrap_or("?"),
        p.kernel_release.as_deref().unwrap_or("?"),
        p.kernel_samples,
        pct(p.kernel_samples, p.samples),
        p.user_samples,
        pct(p.user_samples, p.samples),
        p.idle_samples,
        pct(p.idle_samples, p.samples),
        p.lost_samples,
        p.throttled,
        p.stacks.len(),
        p.stack_cap,
        p.samples_in_other,
    );
    if p.samples == 0 {
        let _ = writeln!(s, "no samples: profile longer");
        return s;
    }
    let _ = writeln!(
        s,
        "\nBy subsystem (the innermost frame that names one decides; rules in docs/system-profile.md)"
    );
    let _ = writeln!(
        s,
        "{:<14} {:>9} {:>7} {:>8}",
        "subsystem", "samples", "all%", "kernel%"
    );
    for (name, n, all, kernel) in subsystem_rows(p) {
        let _ = writeln!(
            s,
            "{:<14} {:>9} {:>7.2} {:>8}",
            name,
            n,
            all,
            kernel
                .map(|k| format!("{k:.2}"))
                .unwrap_or_else(|| "-".into())
        );
    }
    let _ = writeln!(
        s,
        "\nBy process (kernel time: idle excluded; user: user-mode samples)"
    );
    let _ = writeln!(
        s,
        "{:<16} {:>8} {:>9} {:>8} {:>9} {:>7}",
        "command", "pid", "kernel", "kernel%", "user", "all%"
    );
    for r in p.processes.iter().take(TOP_ROWS) {
        let _ = writeln!(
            s,
            "{:<16} {:>8} {:>9} {:>8.2} {:>9} {:>7.2}",
            r.comm,
            r.pid,
            r.kernel_samples,
            p.kernel_pct(r.kernel_samples),
            r.user_samples,
            pct(r.kernel_samples + r.user_samples, p.samples),
        );
    }
    if p.processes.len() > TOP_ROWS {
        let _ = writeln!(s, "  ... {} more processes", p.processes.len() - TOP_ROWS);
    }
    let calls = sorted(&p.syscalls);
    if !calls.is_empty() {
        let _ = writeln!(
            s,
            "\nBy system call (kernel samples under the call's handler, whatever it called)"
        );
        let _ = writeln!(s, "{:<22} {:>9} {:>8}", "system call", "samples", "kernel%");
        for (name, n) in calls.iter().take(TOP_ROWS) {
            let _ = writeln!(s, "{:<22} {:>9} {:>8.2}", name, n, p.kernel_pct(*n));
        }
        if calls.len() > TOP_ROWS {
            let _ = writeln!(s, "  ... {} more system calls", calls.len() - TOP_ROWS);
        }
    }
    s.push('\n');
    // The kernel's own time as a benchmark's profile prints it, without that header (the
    // time columns are CPU microseconds per second of wall time).
    let kernel = crate::report::profile::render(&p.kernel_profile(), top);
    let _ = writeln!(
        s,
        "Kernel time (idle and user mode left out); us/op below is CPU microseconds per second of wall time"
    );
    for line in kernel.lines().skip(2) {
        let _ = writeln!(s, "{line}");
    }
    s.push_str(&functions_text(p));
    s.push_str(&isolation_text(iso));
    s
}

/// The per-function call times, as the 4.3BSD paper's Tables 4, 9 and 10.
pub fn functions_text(p: &SystemProfile) -> String {
    let mut s = String::new();
    if p.functions.is_empty() {
        return s;
    }
    let _ = writeln!(
        s,
        "\nCall times of kernel functions ({})",
        p.functions_method
    );
    let _ = writeln!(
        s,
        "{:<24} {:>10} {:>10} {:>12} {:>13} {:>8} {:>9}",
        "function", "calls", "calls/s", "self us/call", "child us/call", "self%", "total%"
    );
    let opt = |v: Option<f64>| v.map(num).unwrap_or_else(|| "-".into());
    for f in &p.functions {
        let _ = writeln!(
            s,
            "{:<24} {:>10} {:>10} {:>12} {:>13} {:>8.2} {:>9.2}",
            f.name,
            f.calls.map(|c| c.to_string()).unwrap_or_else(|| "-".into()),
            opt(f.calls_per_s),
            opt(f.self_us_per_call),
            opt(f.child_us_per_call),
            f.self_pct_kernel,
            f.total_pct_kernel,
        );
    }
    s
}

/// The hottest kernel functions and the benchmarks that exercise each.
pub fn isolation_text(iso: &[Isolation]) -> String {
    let mut s = String::new();
    if iso.is_empty() {
        return s;
    }
    let _ = writeln!(
        s,
        "\nTo isolate the hottest kernel functions (benchmarks whose stored profiles spend the most in each, with what it calls)"
    );
    let mut all: Vec<&str> = Vec::new();
    for i in iso {
        let named = if i.benchmarks.is_empty() {
            "no stored benchmark profile spends 1% in it".to_string()
        } else {
            i.benchmarks
                .iter()
                .map(|(b, pct)| format!("{b} {pct:.1}%"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            s,
            "  {:<32} {:>6.2}% of kernel time: {named}",
            i.function, i.pct_kernel
        );
        for (b, _) in &i.benchmarks {
            if !all.contains(&b.as_str()) {
                all.push(b);
            }
        }
    }
    if all.is_empty() {
        let _ = writeln!(
            s,
            "  (store benchmark profiles to compare with: sysperf run --profile, or a selection: sysperf run --profile 'pipe*' forks0 syscall)"
        );
    } else {
        let _ = writeln!(s, "to isolate this, run: sysperf run {}", all.join(" "));
    }
    s
}

fn moved_rows(s: &mut String, title: &str, rows: &[Moved]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n{title}");
    let _ = writeln!(
        s,
        "{:<36} {:>9} {:>9} {:>8}",
        "name", "before%", "after%", "ratio"
    );
    for m in rows.iter().take(TOP_ROWS + 5) {
        let _ = writeln!(
            s,
            "{:<36} {:>9.2} {:>9.2} {:>8}",
            m.name,
            m.before_pct,
            m.after_pct,
            m.ratio
                .map(|r| format!("{r:.2}x"))
                .unwrap_or_else(|| "new".into())
        );
    }
    if rows.len() > TOP_ROWS + 5 {
        let _ = writeln!(s, "  ... {} more", rows.len() - TOP_ROWS - 5);
    }
}

/// Two observations compared as text.
pub fn comparison_text(c: &Comparison, before: &SystemProfile, after: &SystemProfile) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "sysperf compare: 2 observations of the whole machine; ratios are after / before (the baseline)"
    );
    for (tag, p) in [("before", before), ("after", after)] {
        let _ = writeln!(
            s,
            "  {tag:<6} {} {}{}  {} s, {} samples, host {}, kernel {}",
            p.id,
            utc(p.started_ns),
            p.label
                .as_deref()
                .map(|l| format!(" \"{l}\""))
                .unwrap_or_default(),
            secs(p.wall_ns),
            p.samples,
            p.hostname.as_deref().unwrap_or("?"),
            p.kernel_release.as_deref().unwrap_or("?"),
        );
    }
    let _ = writeln!(
        s,
        "(shares that moved by at least {} percentage points, largest move first)",
        c.threshold_points
    );
    moved_rows(&mut s, "Subsystems (share of all samples)", &c.subsystems);
    moved_rows(&mut s, "System calls (share of kernel time)", &c.syscalls);
    moved_rows(
        &mut s,
        "Kernel functions (self time, share of kernel time)",
        &c.functions,
    );
    if c.subsystems.is_empty() && c.syscalls.is_empty() && c.functions.is_empty() {
        let _ = writeln!(s, "\nnothing moved by that much");
    }
    s
}

/// The profile as one JSON document: the stored observation (folded stacks included), the
/// kernel's flat profile and call graph (`top` functions), and the tallies with their shares.
pub fn json_document(p: &SystemProfile, top: usize, iso: &[Isolation]) -> Value {
    let k = p.kernel_profile();
    let subsystems: Vec<Value> = subsystem_rows(p)
        .into_iter()
        .map(|(name, n, all, kernel)| {
            json!({"name": name, "samples": n, "pct_all": all, "pct_kernel": kernel})
        })
        .collect();
    let syscalls: Vec<Value> = sorted(&p.syscalls)
        .into_iter()
        .map(|(name, n)| json!({"name": name, "samples": n, "pct_kernel": p.kernel_pct(n)}))
        .collect();
    json!({
        "format": "sysperf-system-profile",
        "format_version": FORMAT_VERSION,
        "observation": p,
        "by_subsystem": subsystems,
        "by_syscall": syscalls,
        "kernel_flat": k.flat().into_iter().take(top).collect::<Vec<_>>(),
        "kernel_call_graph": k.call_graph(top.min(50)),
        "isolate": iso,
    })
}

/// The stored observations, for the end of `sysperf runs`.
pub fn observations_list(list: &[crate::store::ObservationInfo]) -> String {
    let mut s = String::from(
        "\nobservations of the whole machine (sysperf profile --system; show, compare and rm take their ids)\n",
    );
    let _ = writeln!(
        s,
        "{:<12}  {:<23}  {:<18}  {:<22}  {:>8}  {:<14}  label",
        "id", "started", "host", "kernel", "seconds", "kind"
    );
    for o in list {
        let _ = writeln!(
            s,
            "{:<12}  {:<23}  {:<18}  {:<22}  {:>8}  {:<14}  {}",
            o.id,
            utc(o.started_ns),
            o.hostname.as_deref().unwrap_or("?"),
            o.kernel_release.as_deref().unwrap_or("?"),
            secs(o.wall_ns),
            o.kind,
            o.label.as_deref().unwrap_or("")
        );
    }
    s
}
