//! `sysperf changes` as text: one block per change (host, test, the runs either side, the
//! step with its interval, the nearest fingerprint difference), and a summary line. Pure:
//! the changes come from `crate::changes`; the JSON document is `report::json`'s.

use super::{num, utc};
use crate::changepoint::RATIO_CI_COVERS;
use crate::changes::{Change, Changes, NEAREST_WITHIN};
use std::fmt::Write;

/// The report of `sysperf changes`.
pub fn text(c: &Changes) -> String {
    let mut s = String::new();
    if c.changes.is_empty() {
        let _ = writeln!(
            s,
            "no change found in {} (host, test) histor{} ({})",
            c.histories,
            if c.histories == 1 { "y" } else { "ies" },
            searched(c)
        );
        return s;
    }
    let _ = writeln!(
        s,
        "{} change{} in {} (host, test) histor{} ({})",
        c.changes.len(),
        if c.changes.len() == 1 { "" } else { "s" },
        c.histories,
        if c.histories == 1 { "y" } else { "ies" },
        searched(c)
    );
    let _ = writeln!(
        s,
        "ratio: new level / old level; interval: {RATIO_CI_COVERS}\n"
    );
    for ch in &c.changes {
        change(&mut s, ch);
    }
    s
}

/// What was searched: "the newest N runs of each; M too short to search", and the results
/// left out, when there were any.
pub fn searched(c: &Changes) -> String {
    let mut s = format!(
        "the newest {} runs of each; {} too short to search",
        c.newest, c.too_short
    );
    if c.disturbed > 0 {
        let _ = write!(
            s,
            "; {} result{} left out: {} test ran beside other work (busy_cpu, busy_machine or steal warnings)",
            c.disturbed,
            if c.disturbed == 1 { "" } else { "s" },
            if c.disturbed == 1 { "its" } else { "their" }
        );
    }
    s
}

/// The test's name with its placement when that is not the usual one.
pub fn test_name(ch: &Change) -> String {
    match ch.placement.as_str() {
        "same" | "single" => ch.test.clone(),
        p => format!("{} ({p})", ch.test),
    }
}

fn change(s: &mut String, ch: &Change) {
    let pct = (ch.ratio - 1.0) * 100.0;
    let _ = writeln!(
        s,
        "{} on {}: {} {:.1}% (ratio {:.3}, [{:.3}, {:.3}]; {} -> {} ns/op; p = {:.3})",
        test_name(ch),
        ch.host.as_deref().unwrap_or("?"),
        if pct > 0.0 { "slower" } else { "faster" },
        pct.abs(),
        ch.ratio,
        ch.ratio_ci[0],
        ch.ratio_ci[1],
        num(ch.level_before_ns),
        num(ch.level_after_ns),
        ch.p_value
    );
    let _ = writeln!(
        s,
        "  between run {} ({}, last of {} before) and run {} ({}, first of {} after)",
        ch.before.id,
        utc(ch.before.started_ns),
        ch.runs_before,
        ch.after.id,
        utc(ch.after.started_ns),
        ch.runs_after
    );
    if let (true, Some(r)) = (ch.wanders, ch.residual_lag1) {
        let n = ch.history_runs;
        let _ = writeln!(
            s,
            "  the history's level also wanders: its runs' lag-1 autocorrelation about their levels is {r:.2}, over the {:.2} (2/sqrt({n})) independent runs rarely pass; this change may be that wander, not a step: confirm it with 'sysperf ab' or make the test's runs more precise ('run --precision')",
            crate::changepoint::wander_bound(n)
        );
    }
    match &ch.nearest_difference {
        None => {
            let _ = writeln!(
                s,
                "  no fingerprint difference between consecutive runs within {NEAREST_WITHIN} runs of it"
            );
        }
        Some(n) => {
            let place = match n.runs_from_change {
                0 => "at the change".to_string(),
                d if d > 0 => format!("{d} run{} after it", if d == 1 { "" } else { "s" }),
                d => format!("{} run{} before it", -d, if d == -1 { "" } else { "s" }),
            };
            let _ = writeln!(
                s,
                "  nearest fingerprint change, {place} (runs {} -> {}):",
                n.before, n.after
            );
            for d in &n.differences {
                let _ = write!(s, "    {}: {} -> {}", d.field, d.shown(0), d.shown(1));
                if let Some(r) = &d.related {
                    let _ = write!(s, " (bears on {r})");
                }
                s.push('\n');
            }
        }
    }
    s.push('\n');
}
