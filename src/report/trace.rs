//! The `sysperf trace` summary as text: one section per event set, each row a count per
//! operation (the difference of the two runs) beside its total in the longer run.
//!
//! Pure: from a [`TraceReport`] to a string. `--json` prints the report itself instead.

use crate::trace::system::SystemReport;
use crate::trace::{Count, Dist, TraceReport};
use std::fmt::Write;

/// A per-operation figure: two decimals, or three significant digits when smaller.
pub fn per_op(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
    } else if v == 0.0 {
        "0".into()
    } else if v.abs() >= 0.01 {
        format!("{v:.2}")
    } else {
        format!("{v:.2e}")
    }
}

/// 1234567 as "1,234,567".
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn pct(r: Option<f64>) -> String {
    r.map_or_else(|| "n/a".into(), |r| format!("{:.1}%", r * 100.0))
}

fn dist(d: &Option<Dist>, what: &str) -> String {
    match d {
        None => format!("no {what} to time"),
        Some(d) => format!(
            "median {:.0} us, 95th percentile {:.0} us, max {:.0} us (n = {})",
            d.median,
            d.p95,
            d.max,
            thousands(d.n as u64)
        ),
    }
}

/// "round trips", "touches".
pub fn plural(unit: &str) -> String {
    if unit.ends_with("ch") || unit.ends_with('s') || unit.ends_with("sh") {
        format!("{unit}es")
    } else {
        format!("{unit}s")
    }
}

const LABEL: usize = 44;

/// A count per operation below zero: the longer run counted fewer events than the shorter,
/// which the operations cannot do; other activity differed between the runs.
const BELOW_ZERO: &str = "~0*";

/// The note that explains [`BELOW_ZERO`], printed under the summary when a row shows it.
const BELOW_ZERO_NOTE: &str = "* run 2 counted fewer of these than run 1, which the operations cannot cause: other activity differed between the runs, so read it as about 0 per operation (its counts are in --json)";

fn row(out: &mut String, label: &str, c: Count) {
    let per = if c.per_op < 0.0 {
        BELOW_ZERO.to_string()
    } else {
        per_op(c.per_op)
    };
    let _ = writeln!(
        out,
        "  {label:<LABEL$} {:>12} {:>12}",
        per,
        thousands(c.run_total)
    );
}

/// Rows of one section, in order: a table, so that a section lists what it counts once.
fn rows(out: &mut String, rows: &[(&str, Count)]) {
    for (label, c) in rows {
        row(out, label, *c);
    }
}

fn header(out: &mut String, title: &str, unit: &str) {
    let _ = writeln!(
        out,
        "\n{title:<w$} {:>12} {:>12}",
        format!("per {unit}"),
        "run 2",
        w = LABEL + 2
    );
}

/// "tracefs PATH (mounted by sysperf...), instance NAME, ring buffer N KB per CPU; no events lost".
fn where_traced(tracefs: &str, mounted: bool, instance: &str, buffer_kb: u64, lost: u64) -> String {
    format!(
        "tracefs {tracefs}{}, instance {instance}, ring buffer {buffer_kb} KB per CPU; {}",
        if mounted {
            " (mounted by sysperf, private to it)"
        } else {
            ""
        },
        if lost == 0 {
            "no events lost".to_string()
        } else {
            format!("{} events LOST", thousands(lost))
        }
    )
}

/// The `sysperf trace` summary as text: what was traced and where, then one section per event
/// set the report holds, then the notes its rows need.
pub fn render(r: &TraceReport) -> String {
    let mut out = String::new();
    let d_ops = match (r.runs.first(), r.runs.last()) {
        (Some(a), Some(b)) => b.ops.saturating_sub(a.ops),
        _ => 0,
    };
    trace_heading(&mut out, r, d_ops);
    if let Some(s) = &r.syscalls {
        syscalls_section(&mut out, s, &r.unit, d_ops);
    }
    if let Some(s) = &r.sched {
        sched_section(&mut out, s, &r.unit);
    }
    if let Some(p) = &r.pagecache {
        pagecache_section(&mut out, p, &r.unit);
    }
    if let Some(b) = &r.block {
        block_section(&mut out, b, &r.unit);
    }
    if !r.events_per_op.is_empty() {
        header(&mut out, "Events", &r.unit);
        for e in &r.events_per_op {
            row(
                &mut out,
                &e.name,
                Count {
                    per_op: e.per_op,
                    run_total: e.run_total,
                },
            );
        }
    }
    if out.contains(BELOW_ZERO) {
        let _ = writeln!(out, "\n{BELOW_ZERO_NOTE}");
    }
    if !r.warnings.is_empty() {
        let _ = writeln!(out, "\nwarnings:");
        for w in &r.warnings {
            let _ = writeln!(out, "  {w}");
        }
    }
    out
}

/// The three lines over a trace's sections: the benchmark, the runs and how a count per
/// operation is made of them (`d_ops`: the operations run 2 did more than run 1), and where
/// it was traced. Separate so that `render` reads as the list of its sections.
fn trace_heading(out: &mut String, r: &TraceReport, d_ops: u64) {
    let runs: Vec<String> = r.runs.iter().map(|x| thousands(x.iterations)).collect();
    let _ = writeln!(out, "sysperf trace {}: {}", r.bench, r.paper);
    let _ = writeln!(
        out,
        "runs of {} iterations, placement {} (CPU {}); per {} = (run 2 - run 1) / {} {}",
        runs.join(" and "),
        r.placement,
        crate::units::format_list(&r.cpus),
        r.unit,
        thousands(d_ops),
        plural(&r.unit)
    );
    let lost: u64 = r.runs.iter().map(|x| x.lost_events).sum();
    let _ = writeln!(
        out,
        "{}",
        where_traced(
            &r.tracefs,
            r.tracefs_mounted_by_sysperf,
            &r.instance,
            r.buffer_kb,
            lost
        )
    );
}

/// System calls per operation: all of them, each call of the timed loop, and the rest folded
/// into one row. Separate because only this section decides which rows belong to the loop.
fn syscalls_section(out: &mut String, s: &crate::trace::Syscalls, unit: &str, d_ops: u64) {
    header(out, "System calls", unit);
    row(out, "all", s.total);
    // A call whose count differs between the runs belongs to the timed loop; the others
    // are start-up and teardown, folded into one row.
    let (shown, rest): (Vec<_>, Vec<_>) = s
        .by_name
        .iter()
        .partition(|c| (c.per_op * d_ops as f64).abs() >= 0.5);
    for c in &shown {
        row(
            out,
            &c.name,
            Count {
                per_op: c.per_op,
                run_total: c.run_total,
            },
        );
    }
    if !rest.is_empty() {
        let total: u64 = rest.iter().map(|c| c.run_total).sum();
        let per: f64 = rest.iter().map(|c| c.per_op).sum();
        row(
            out,
            &format!("{} other calls (start-up, setup, teardown)", rest.len()),
            Count {
                per_op: per,
                run_total: total,
            },
        );
    }
}

/// Scheduling per operation: switches by kind, wakeups, migrations, forks, and the wake-up
/// latency of run 2.
fn sched_section(out: &mut String, s: &crate::trace::Sched, unit: &str) {
    header(out, "Scheduling", unit);
    row(out, "context switches", s.switches);
    row(out, "  voluntary (the process slept)", s.voluntary);
    row(out, "  involuntary (preempted)", s.involuntary);
    if let Some(w) = s.wakeups {
        row(out, "wakeups", w);
    }
    if let Some(m) = s.migrations {
        row(out, "migrations to another CPU", m);
    }
    row(out, "processes created", s.forks);
    let _ = writeln!(
        out,
        "  wake-up latency, run 2: {}",
        dist(&s.wakeup_latency_us, "wakeups")
    );
}

/// The page cache per operation: pages requested, missed, added, read ahead and removed,
/// faults, and the hit and read-ahead ratios.
fn pagecache_section(out: &mut String, p: &crate::trace::PageCache, unit: &str) {
    header(out, "Page cache", unit);
    rows(
        out,
        &[
            ("pages requested (reads and faults)", p.requested_pages),
            ("  missed (the request waited for I/O)", p.missed_pages),
            ("pages added to the cache", p.added_pages),
            ("  read ahead", p.readahead_pages),
            ("  read ahead, then used", p.readahead_used),
            ("  read ahead, evicted unused", p.readahead_evicted_unused),
            ("pages removed from the cache", p.deleted_pages),
            ("page faults on files", p.faults),
            ("pages mapped around faults", p.mapped_pages),
            ("synchronous read-aheads", p.sync_readaheads),
            ("asynchronous read-aheads", p.async_readaheads),
        ],
    );
    let _ = writeln!(
        out,
        "  hit ratio: {} per {}, {} in run 2; read-ahead pages used: {} per {}, {} in run 2",
        pct(p.hit_ratio_per_op),
        unit,
        pct(p.hit_ratio_run),
        pct(p.readahead_used_share_per_op),
        unit,
        pct(p.readahead_used_share_run)
    );
}

/// Block I/O per operation of the traced processes, then every device's during run 2 for
/// scale.
fn block_section(out: &mut String, b: &crate::trace::Block, unit: &str) {
    header(out, "Block I/O (issued by the traced processes)", unit);
    rows(
        out,
        &[
            ("requests", b.requests),
            ("  reads", b.reads),
            ("  writes", b.writes),
            ("  failed", b.errors),
            ("bytes", b.bytes),
        ],
    );
    let _ = writeln!(
        out,
        "  latency (issue to completion), run 2: {}",
        dist(&b.latency_us, "requests")
    );
    let _ = writeln!(
        out,
        "  every device and process during run 2: {} requests, {} bytes; {}",
        thousands(b.system_requests),
        thousands(b.system_bytes),
        dist(&b.system_latency_us, "requests")
    );
}

/// Nanoseconds as milliseconds with one decimal ("12.3 ms"), or seconds past 10 s.
fn ms(ns: u64) -> String {
    if ns >= 10_000_000_000 {
        format!("{:.1} s", ns as f64 / 1e9)
    } else {
        format!("{:.1} ms", ns as f64 / 1e6)
    }
}

/// Rows shown of the longer tables of a system trace (`--json` has them all).
const SYSTEM_ROWS: usize = 15;

/// A table of (name, calls, time): its first [`SYSTEM_ROWS`] rows, then how many more.
fn calls_table(
    out: &mut String,
    title: &str,
    noun: &str,
    rows: impl ExactSizeIterator<Item = (String, u64, u64)>,
) {
    let n = rows.len();
    let _ = writeln!(out, "  {title:<28} {:>12} {:>12}", "calls", "time");
    for (name, count, ns) in rows.take(SYSTEM_ROWS) {
        let _ = writeln!(out, "  {name:<28} {:>12} {:>12}", thousands(count), ms(ns));
    }
    if n > SYSTEM_ROWS {
        let _ = writeln!(out, "  ... {} {noun} more (--json)", n - SYSTEM_ROWS);
    }
}

/// One figure of a system trace's section: its label, its value right-aligned.
fn value_line(out: &mut String, label: &str, value: String) {
    let _ = writeln!(out, "  {label:<LABEL$} {value:>14}");
}

/// The `sysperf trace --system` summary as text: how long and where it traced, one section
/// per event set the report holds, the papers' figures beside today's, then the warnings.
pub fn render_system(r: &SystemReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "sysperf trace --system: the whole machine for {:.1} s{} ({} CPUs)",
        r.elapsed_s,
        if r.interrupted {
            format!(" of {:.0} s (interrupted)", r.duration_s)
        } else {
            String::new()
        },
        r.cpus
    );
    let _ = writeln!(
        out,
        "{} ({} events read)",
        where_traced(
            &r.tracefs,
            r.tracefs_mounted_by_sysperf,
            &r.instance,
            r.buffer_kb,
            r.lost_events
        ),
        thousands(r.events_read)
    );
    if let Some(p) = &r.pagecache {
        system_pagecache(&mut out, p);
    }
    if let Some(d) = &r.dentry {
        system_dentry(&mut out, d);
    }
    if let Some(s) = &r.syscalls {
        system_syscalls(&mut out, s);
    }
    if let Some(q) = &r.softirq {
        system_softirq(&mut out, q);
    }
    out.push_str(&papers_text(&r.papers));
    for w in &r.warnings {
        let _ = writeln!(out, "\nwarning: {w}");
    }
    out
}

/// The machine's page cache while tracing: requests, misses, hit rates (with read-ahead
/// counted as the paper counted it, and not), read-ahead and what became of it.
fn system_pagecache(out: &mut String, p: &crate::trace::system::SystemPageCache) {
    let _ = writeln!(
        out,
        "\nPage cache (reads and faults; filemap and readahead trace points, as §3.2.6)"
    );
    value_line(out, "pages requested", thousands(p.requested_pages));
    value_line(out, "  missed (waited for)", thousands(p.missed_pages));
    value_line(
        out,
        "  read ahead while tracing",
        thousands(p.readahead_requested_pages),
    );
    value_line(out, "hit rate (found in the cache)", pct(p.hit_rate));
    value_line(
        out,
        "hit rate counting read-ahead as hits",
        pct(p.hit_rate_readahead_counted),
    );
    value_line(
        out,
        "read-ahead requests (sync, async)",
        format!(
            "{}, {}",
            thousands(p.sync_readaheads),
            thousands(p.async_readaheads)
        ),
    );
    value_line(out, "pages read ahead", thousands(p.readahead_pages));
    value_line(out, "  used while tracing", pct(p.readahead_used_share));
    value_line(
        out,
        "  evicted unused",
        thousands(p.readahead_evicted_unused),
    );
    if p.untracked_pages > 0 {
        value_line(
            out,
            "pages not followed (memory bound)",
            thousands(p.untracked_pages),
        );
    }
}

/// The machine's dentry cache while tracing: path lookups, those that missed, and where the
/// dentries were allocated.
fn system_dentry(out: &mut String, d: &crate::trace::system::SystemDentry) {
    let _ = writeln!(out, "\nDentry cache (path lookups, as §4.1.1's name cache)");
    value_line(
        out,
        "path lookups (system calls)",
        thousands(d.path_lookups),
    );
    value_line(
        out,
        "  that allocated a dentry (missed)",
        thousands(d.lookups_missed),
    );
    value_line(out, "hit rate", pct(d.hit_rate));
    value_line(
        out,
        "dentries allocated in lookups",
        thousands(d.dentries_allocated_in_lookups),
    );
    value_line(
        out,
        "dentries allocated elsewhere",
        thousands(d.dentries_allocated_elsewhere),
    );
    let _ = writeln!(
        out,
        "  kernel functions: {} (kmem:kmem_cache_alloc, name == \"dentry\", within path system calls)",
        if d.kernel_functions.is_empty() {
            "none seen".to_string()
        } else {
            d.kernel_functions.join(", ")
        }
    );
}

/// The machine's system calls while tracing: the total, then tables by kind and by process.
fn system_syscalls(out: &mut String, s: &crate::trace::system::SystemSyscalls) {
    let _ = writeln!(
        out,
        "\nSystem calls: {} calls, {} in calls (entry to exit, microsecond timestamps)",
        thousands(s.calls),
        ms(s.time_ns)
    );
    let kinds = s
        .by_kind
        .iter()
        .map(|k| (k.name.clone(), k.count, k.time_ns));
    calls_table(out, "by kind", "kinds", kinds);
    let processes = s.by_process.iter().map(|p| {
        let who = if p.pid == 0 {
            p.comm.clone()
        } else {
            format!("{} [{}]", p.comm, p.pid)
        };
        (who, p.count, p.time_ns)
    });
    calls_table(out, "by process", "processes", processes);
}

/// The machine's softirqs while tracing, by kind and in all, each as a share of kernel time.
fn system_softirq(out: &mut String, q: &crate::trace::system::SystemSoftirq) {
    let _ = writeln!(
        out,
        "\nSoftirqs: {} of {} kernel time (/proc/stat system + irq + softirq; its own softirq count: {})",
        ms(q.time_ns),
        ms(q.kernel_time_ns),
        ms(q.proc_stat_softirq_ns)
    );
    let row4 = |out: &mut String, a: &str, b: String, c: String, d: String| {
        let _ = writeln!(out, "  {a:<28} {b:>12} {c:>12} {d:>12}");
    };
    row4(
        out,
        "kind",
        "count".into(),
        "time".into(),
        "of kernel".into(),
    );
    for k in &q.by_kind {
        row4(
            out,
            &k.name,
            thousands(k.count),
            ms(k.time_ns),
            pct(k.share_of_kernel_time),
        );
    }
    row4(
        out,
        "all",
        thousands(q.by_kind.iter().map(|k| k.count).sum()),
        ms(q.time_ns),
        pct(q.share_of_kernel_time),
    );
}

/// Today's figures beside the papers' (§3.2.6's buffer cache trace, §4.1.1's name cache, §2.1's
/// and §3.2.6's system call rates).
pub fn papers_text(papers: &[crate::trace::system::BesidePaper]) -> String {
    let mut out = String::new();
    if papers.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "\nBeside the papers (the 4.2BSD paper's three-hour trace of a VAX-11/780's buffer cache, \
         §3.2.6, and its long-term figures)"
    );
    for b in papers {
        let _ = writeln!(out, "  {:<LABEL$} {:>14}", b.what, b.today);
        for p in &b.papers {
            let _ = writeln!(out, "    papers: {p}");
        }
    }
    out
}

/// Two stored traces of one benchmark side by side, per operation: each count before, after,
/// and after / before. Counts are the difference of two traced runs (no interval); a count
/// that moved says the kernel did more or less of it per operation.
pub fn comparison_text(
    before: &crate::model::StoredTrace,
    after: &crate::model::StoredTrace,
    reports: [&TraceReport; 2],
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "sysperf compare: 2 traces of {} per {}; ratios are after / before (the baseline)",
        after.bench, reports[1].unit
    );
    for (tag, t) in [("before", before), ("after", after)] {
        let _ = writeln!(
            s,
            "  {tag:<6} {} {}{}  host {}, kernel {}",
            t.id,
            super::utc(t.started_ns),
            t.label
                .as_deref()
                .map(|l| format!(" \"{l}\""))
                .unwrap_or_default(),
            t.fingerprint.hostname.as_deref().unwrap_or("?"),
            t.fingerprint.kernel_release.as_deref().unwrap_or("?"),
        );
    }
    let diffs = crate::compare::machine_diffs(vec![&before.fingerprint, &after.fingerprint]);
    if diffs.is_empty() {
        let _ = writeln!(s, "  the machines' recorded facts are the same");
    }
    for d in &diffs {
        let v = |x: Option<&Option<String>>| x.cloned().flatten().unwrap_or_else(|| "?".into());
        let _ = writeln!(
            s,
            "  differs: {}: before {}, after {}",
            d.field,
            v(d.values.first()),
            v(d.values.get(1))
        );
    }
    let _ = writeln!(
        s,
        "\n{:<34} {:>14} {:>14} {:>9}",
        format!("per {}", reports[1].unit),
        "before",
        "after",
        "ratio"
    );
    let rows = crate::explain::trace_rows([Some(reports[0]), Some(reports[1])]);
    for r in &rows {
        let cell = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.4}"));
        let ratio = match (r.a, r.b) {
            (Some(a), Some(b)) if a > 0.0 && b >= 0.0 => format!("{:.2}x", b / a),
            (Some(a), Some(b)) if a == 0.0 && b > 0.0 => "new".into(),
            _ => "-".into(),
        };
        let _ = writeln!(
            s,
            "{:<34} {:>14} {:>14} {:>9}",
            r.what,
            cell(r.a),
            cell(r.b),
            ratio
        );
    }
    if rows.is_empty() {
        let _ = writeln!(
            s,
            "(neither trace has system calls, switches or page-cache faults)"
        );
    }
    let _ = writeln!(
        s,
        "\nEach count is the difference of the trace's two traced runs per operation, which cancels start-up; it has no interval, and events of other work on the same CPUs can still land in it (a small negative count is that). Tracing slows the work, so no time is compared."
    );
    s
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::trace::*;

    fn c(per_op: f64, run_total: u64) -> Count {
        Count { per_op, run_total }
    }

    #[test]
    fn two_stored_traces_compare_per_operation() {
        let before = fixture();
        let mut after = fixture();
        if let Some(sys) = &mut after.syscalls {
            sys.total.per_op *= 2.0;
            for c in &mut sys.by_name {
                c.per_op *= 2.0;
            }
        }
        let fp = crate::model::Fingerprint {
            hostname: Some("h".into()),
            kernel_release: Some("6.1".into()),
            ..Default::default()
        };
        let mut fp2 = fp.clone();
        fp2.kernel_release = Some("6.2".into());
        let tb = before.stored("a0".into(), None, 0, fp).unwrap();
        let ta = after
            .stored("b0".into(), Some("new".into()), 0, fp2)
            .unwrap();
        let s = comparison_text(&tb, &ta, [&before, &after]);
        assert!(
            s.starts_with("sysperf compare: 2 traces of pipeback4 per round trip"),
            "{s}"
        );
        assert!(s.contains("differs: kernel: before 6.1, after 6.2"), "{s}");
        let row = s
            .lines()
            .find(|l| l.starts_with("system calls (trace)"))
            .expect(&s);
        assert!(row.ends_with("2.00x"), "{row}");
    }

    pub(crate) fn fixture() -> TraceReport {
        TraceReport {
            format: "sysperf-trace".into(),
            format_version: 1,
            sysperf_version: "0.1.0".into(),
            bench: "pipeback4".into(),
            paper: "exchange 10,000 4-byte messages with child".into(),
            unit: "round trip".into(),
            ops_per_iteration: 1,
            placement: "same".into(),
            cpus: vec![1],
            tracefs: "/sys/kernel/tracing".into(),
            tracefs_mounted_by_sysperf: true,
            instance: "sysperf-4242".into(),
            buffer_kb: 4096,
            events: vec!["raw_syscalls:sys_enter".into(), "sched:sched_switch".into()],
            method: METHOD.into(),
            runs: vec![
                RunInfo {
                    iterations: 2000,
                    ops: 2000,
                    wall_ns: 21_000_000,
                    events: 17_000,
                    lost_events: 0,
                    buffer_kb: 4096,
                },
                RunInfo {
                    iterations: 4000,
                    ops: 4000,
                    wall_ns: 42_000_000,
                    events: 33_000,
                    lost_events: 0,
                    buffer_kb: 4096,
                },
            ],
            syscalls: Some(Syscalls {
                total: c(4.0, 16_234),
                by_name: vec![
                    SyscallCount {
                        name: "read".into(),
                        nr: 0,
                        per_op: 2.0,
                        run_total: 8012,
                    },
                    SyscallCount {
                        name: "write".into(),
                        nr: 1,
                        per_op: 2.0,
                        run_total: 8003,
                    },
                    SyscallCount {
                        name: "mmap".into(),
                        nr: 9,
                        per_op: 0.0,
                        run_total: 150,
                    },
                    SyscallCount {
                        name: "close".into(),
                        nr: 3,
                        per_op: 0.0,
                        run_total: 69,
                    },
                ],
            }),
            sched: Some(Sched {
                switches: c(2.0, 8010),
                voluntary: c(1.0, 4006),
                involuntary: c(1.0, 4004),
                wakeups: Some(c(1.0, 4003)),
                migrations: Some(c(0.0, 0)),
                forks: c(0.0, 1),
                wakeup_latency_us: Some(Dist {
                    n: 4003,
                    median: 2.0,
                    p95: 4.0,
                    max: 31.0,
                }),
            }),
            pagecache: Some(PageCache {
                requested_pages: c(0.0, 240),
                missed_pages: c(0.0, 3),
                added_pages: c(0.0, 3),
                readahead_pages: c(0.0, 0),
                readahead_used: c(0.0, 0),
                readahead_evicted_unused: c(0.0, 0),
                deleted_pages: c(0.0, 0),
                faults: c(0.0, 200),
                mapped_pages: c(0.0, 1800),
                sync_readaheads: c(0.0, 1),
                async_readaheads: c(0.0, 0),
                hit_ratio_per_op: None,
                hit_ratio_run: Some(237.0 / 240.0),
                readahead_used_share_per_op: None,
                readahead_used_share_run: None,
            }),
            block: Some(Block {
                requests: c(0.0, 0),
                bytes: c(0.0, 0),
                reads: c(0.0, 0),
                writes: c(0.0, 0),
                errors: c(0.0, 0),
                latency_us: None,
                system_requests: 12,
                system_bytes: 49152,
                system_latency_us: Some(Dist {
                    n: 12,
                    median: 150.0,
                    p95: 410.0,
                    max: 500.0,
                }),
            }),
            events_per_op: vec![NamedCount {
                name: "sched:sched_switch".into(),
                per_op: 2.0,
                run_total: 8010,
            }],
            warnings: vec!["an example warning".into()],
        }
    }

    #[test]
    fn trace_snapshot() {
        insta::assert_snapshot!(render(&fixture()));
    }

    #[test]
    fn json_snapshot() {
        insta::assert_json_snapshot!(fixture());
    }

    #[test]
    fn a_count_below_zero_per_operation_is_about_zero_with_a_note() {
        let mut r = fixture();
        assert!(!render(&r).contains(BELOW_ZERO_NOTE));
        r.events_per_op[0].per_op = -2.0e-4;
        let text = render(&r);
        let line = text
            .lines()
            .find(|l| l.contains("sched:sched_switch"))
            .unwrap();
        assert!(line.contains("~0*") && !line.contains("-2.00e-4"), "{line}");
        assert!(text.contains(BELOW_ZERO_NOTE), "{text}");
    }

    #[test]
    fn numbers() {
        assert_eq!(per_op(1.0), "1.00");
        assert_eq!(per_op(0.0), "0");
        assert_eq!(per_op(0.000_013_3), "1.33e-5");
        assert_eq!(per_op(-0.5), "-0.50");
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(100), "100");
        assert_eq!(plural("touch"), "touches");
        assert_eq!(plural("round trip"), "round trips");
    }
}
