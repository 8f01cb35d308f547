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
    let histories = |n: usize| format!("{n} histor{}", if n == 1 { "y" } else { "ies" });
    if c.searched == 0 {
        // Nothing was looked at: not "no change found" (#42), and its own exit code.
        if c.histories == 0 {
            let _ = writeln!(
                s,
                "nothing searched: no history of complete measured runs (the store holds none, or none matches)"
            );
        } else {
            let _ = writeln!(
                s,
                "nothing searched: {} too short (a history needs {} runs to be searched; {})",
                histories(c.too_short),
                c.min_runs,
                searched(c)
            );
        }
        return s;
    }
    if c.changes.is_empty() {
        let _ = writeln!(
            s,
            "no change found in {} searched ({})",
            histories(c.searched),
            searched(c)
        );
    } else {
        let _ = writeln!(
            s,
            "{} change{} in {} of {} searched ({})",
            c.changes.len(),
            if c.changes.len() == 1 { "" } else { "s" },
            c.found,
            histories(c.searched),
            searched(c)
        );
    }
    let _ = writeln!(s, "{}", false_alarms(c));
    if c.changes.is_empty() {
        return s;
    }
    let _ = writeln!(
        s,
        "ratio: new level / old level; interval: {RATIO_CI_COVERS}\n"
    );
    for ch in &c.changes {
        change(&mut s, ch);
    }
    s
}

/// What the false discovery rate promises of this search, in words.
pub fn false_alarms(c: &Changes) -> String {
    let mut s = format!(
        "false discovery rate {} across the {} searched (Benjamini-Hochberg; {} permutations per test at most): ",
        c.fdr,
        if c.searched == 1 {
            "1 history".to_string()
        } else {
            format!("{} histories", c.searched)
        },
        c.permutations
    );
    match c.level {
        Some(level) if c.found > 0 => {
            let _ = write!(
                s,
                "{} found at p <= {}; expected false alarms among them at most {} x {} = {}",
                c.found,
                p_value(level),
                c.fdr,
                c.found,
                num(c.expected_false_alarms)
            );
            let unreported = c.found - distinct_histories(c);
            if unreported > 0 {
                let _ = write!(
                    s,
                    " ({unreported} of them with steps under the smallest reported only)"
                );
            }
        }
        _ => {
            let _ = write!(
                s,
                "with no change in any of them, a search finds one at most {:.0}% of the time",
                100.0 * c.fdr
            );
        }
    }
    s
}

/// How many histories the changes reported are in.
fn distinct_histories(c: &Changes) -> usize {
    let mut keys: Vec<(&Option<String>, &str, &str, String)> = c
        .changes
        .iter()
        .map(|ch| {
            (
                &ch.host,
                ch.test.as_str(),
                ch.placement.as_str(),
                ch.options.key(),
            )
        })
        .collect();
    keys.sort();
    keys.dedup();
    keys.len()
}

/// A p-value in as many digits as it needs.
fn p_value(p: f64) -> String {
    if p >= 0.001 {
        format!("{p:.3}")
    } else {
        format!("{p:.1e}")
    }
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
    if c.ab_sides + c.quick > 0 {
        let _ = write!(
            s,
            "; left out: {} result{} of 'sysperf ab' sides and {} of --quick runs (another level and spread)",
            c.ab_sides,
            if c.ab_sides == 1 { "" } else { "s" },
            c.quick
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
        "{} on {}: {} {:.1}% (ratio {:.3}, [{:.3}, {:.3}]; {} -> {} ns/op; p = {})",
        test_name(ch),
        ch.host.as_deref().unwrap_or("?"),
        if pct > 0.0 { "slower" } else { "faster" },
        pct.abs(),
        ch.ratio,
        ch.ratio_ci[0],
        ch.ratio_ci[1],
        num(ch.level_before_ns),
        num(ch.level_after_ns),
        p_value(ch.p_value)
    );
    let _ = writeln!(s, "  runs measured with: {}", ch.options.describe());
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
