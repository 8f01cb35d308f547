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

pub fn render(r: &TraceReport) -> String {
    let mut out = String::new();
    let runs: Vec<String> = r.runs.iter().map(|x| thousands(x.iterations)).collect();
    let d_ops = match (r.runs.first(), r.runs.last()) {
        (Some(a), Some(b)) => b.ops.saturating_sub(a.ops),
        _ => 0,
    };
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

    if let Some(s) = &r.syscalls {
        header(&mut out, "System calls", &r.unit);
        row(&mut out, "all", s.total);
        // A call whose count differs between the runs belongs to the timed loop; the others
        // are start-up and teardown, folded into one row.
        let (shown, rest): (Vec<_>, Vec<_>) = s
            .by_name
            .iter()
            .partition(|c| (c.per_op * d_ops as f64).abs() >= 0.5);
        for c in &shown {
            row(
                &mut out,
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
                &mut out,
                &format!("{} other calls (start-up, setup, teardown)", rest.len()),
                Count {
                    per_op: per,
                    run_total: total,
                },
            );
        }
    }
    if let Some(s) = &r.sched {
        header(&mut out, "Scheduling", &r.unit);
        row(&mut out, "context switches", s.switches);
        row(&mut out, "  voluntary (the process slept)", s.voluntary);
        row(&mut out, "  involuntary (preempted)", s.involuntary);
        if let Some(w) = s.wakeups {
            row(&mut out, "wakeups", w);
        }
        if let Some(m) = s.migrations {
            row(&mut out, "migrations to another CPU", m);
        }
        row(&mut out, "processes created", s.forks);
        let _ = writeln!(
            out,
            "  wake-up latency, run 2: {}",
            dist(&s.wakeup_latency_us, "wakeups")
        );
    }
    if let Some(p) = &r.pagecache {
        header(&mut out, "Page cache", &r.unit);
        row(
            &mut out,
            "pages requested (reads and faults)",
            p.requested_pages,
        );
        row(
            &mut out,
            "  missed (the request waited for I/O)",
            p.missed_pages,
        );
        row(&mut out, "pages added to the cache", p.added_pages);
        row(&mut out, "  read ahead", p.readahead_pages);
        row(&mut out, "  read ahead, then used", p.readahead_used);
        row(
            &mut out,
            "  read ahead, evicted unused",
            p.readahead_evicted_unused,
        );
        row(&mut out, "pages removed from the cache", p.deleted_pages);
        row(&mut out, "page faults on files", p.faults);
        row(&mut out, "pages mapped around faults", p.mapped_pages);
        row(&mut out, "synchronous read-aheads", p.sync_readaheads);
        row(&mut out, "asynchronous read-aheads", p.async_readaheads);
        let _ = writeln!(
            out,
            "  hit ratio: {} per {}, {} in run 2; read-ahead pages used: {} per {}, {} in run 2",
            pct(p.hit_ratio_per_op),
            r.unit,
            pct(p.hit_ratio_run),
            pct(p.readahead_used_share_per_op),
            r.unit,
            pct(p.readahead_used_share_run)
        );
    }
    if let Some(b) = &r.block {
        header(
            &mut out,
            "Block I/O (issued by the traced processes)",
            &r.unit,
        );
        row(&mut out, "requests", b.requests);
        row(&mut out, "  reads", b.reads);
        row(&mut out, "  writes", b.writes);
        row(&mut out, "  failed", b.errors);
        row(&mut out, "bytes", b.bytes);
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

/// The `sysperf trace --system` summary as text.
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
    let line = |out: &mut String, label: &str, value: String| {
        let _ = writeln!(out, "  {label:<LABEL$} {value:>14}");
    };
    if let Some(p) = &r.pagecache {
        let _ = writeln!(
            out,
            "\nPage cache (reads and faults; filemap and readahead trace points, as §3.2.6)"
        );
        line(&mut out, "pages requested", thousands(p.requested_pages));
        line(&mut out, "  missed (waited for)", thousands(p.missed_pages));
        line(
            &mut out,
            "  read ahead while tracing",
            thousands(p.readahead_requested_pages),
        );
        line(&mut out, "hit rate (found in the cache)", pct(p.hit_rate));
        line(
            &mut out,
            "hit rate counting read-ahead as hits",
            pct(p.hit_rate_readahead_counted),
        );
        line(
            &mut out,
            "read-ahead requests (sync, async)",
            format!(
                "{}, {}",
                thousands(p.sync_readaheads),
                thousands(p.async_readaheads)
            ),
        );
        line(&mut out, "pages read ahead", thousands(p.readahead_pages));
        line(
            &mut out,
            "  used while tracing",
            pct(p.readahead_used_share),
        );
        line(
            &mut out,
            "  evicted unused",
            thousands(p.readahead_evicted_unused),
        );
        if p.untracked_pages > 0 {
            line(
                &mut out,
                "pages not followed (memory bound)",
                thousands(p.untracked_pages),
            );
        }
    }
    if let Some(d) = &r.dentry {
        let _ = writeln!(out, "\nDentry cache (path lookups, as §4.1.1's name cache)");
        line(
            &mut out,
            "path lookups (system calls)",
            thousands(d.path_lookups),
        );
        line(
            &mut out,
            "  that allocated a dentry (missed)",
            thousands(d.lookups_missed),
        );
        line(&mut out, "hit rate", pct(d.hit_rate));
        line(
            &mut out,
            "dentries allocated in lookups",
            thousands(d.dentries_allocated_in_lookups),
        );
        line(
            &mut out,
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
    if let Some(s) = &r.syscalls {
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
        calls_table(&mut out, "by kind", "kinds", kinds);
        let processes = s.by_process.iter().map(|p| {
            let who = if p.pid == 0 {
                p.comm.clone()
            } else {
                format!("{} [{}]", p.comm, p.pid)
            };
            (who, p.count, p.time_ns)
        });
        calls_table(&mut out, "by process", "processes", processes);
    }
    if let Some(q) = &r.softirq {
        let _ = writeln!(
            out,
            "\nSoftirqs: {} of {} kernel time (/proc/stat system + irq + softirq; its own softirq count: {})",
            ms(q.time_ns),
            ms(q.kernel_time_ns),
            ms(q.proc_stat_softirq_ns)
        );
        let _ = writeln!(
            out,
            "  {:<28} {:>12} {:>12} {:>12}",
            "kind", "count", "time", "of kernel"
        );
        for k in &q.by_kind {
            let _ = writeln!(
                out,
                "  {:<28} {:>12} {:>12} {:>12}",
                k.name,
                thousands(k.count),
                ms(k.time_ns),
                pct(k.share_of_kernel_time)
            );
        }
        let _ = writeln!(
            out,
            "  {:<28} {:>12} {:>12} {:>12}",
            "all",
            thousands(q.by_kind.iter().map(|k| k.count).sum()),
            ms(q.time_ns),
            pct(q.share_of_kernel_time)
        );
    }
    out.push_str(&papers_text(&r.papers));
    for w in &r.warnings {
        let _ = writeln!(out, "\nwarning: {w}");
    }
    out
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
