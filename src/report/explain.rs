//! `sysperf explain` rendered: text, Markdown, the JSON document, and the HTML report's
//! section with a differential flame graph per test (`report::flame::differential`). Pure:
//! an [`Explanation`] (and, for the flame graphs, the two profiles of each test) in, text out.

use super::markup::{Markdown, Markup, Text};
use crate::explain::bisect::{Bisection, Effect, Tried};
use crate::explain::diff::{Delta, FunctionDelta, PathDelta, ProfileDiff};
use crate::explain::facts::Tied;
use crate::explain::{
    ns, signed_ns, CountRow, Explanation, Listed, OneSide, SideHeader, Source, TestExplanation,
};
use crate::model::Profile;
use serde_json::Value;
use std::fmt::Write;

/// Functions listed per test unless asked otherwise.
pub const DEFAULT_TOP: usize = 12;

fn side(h: &SideHeader) -> String {
    let mut s = h.id.clone();
    if let Some(l) = &h.label {
        s = format!("{l} ({s})");
    }
    let machine: Vec<&str> = [h.hostname.as_deref(), h.kernel_release.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    if !machine.is_empty() {
        s.push_str(&format!(", {}", machine.join(" ")));
    }
    format!("{s}, {}", super::utc(h.started_ns))
}

fn source(s: &Source, samples: Option<u64>) -> String {
    let n = samples
        .map(|n| format!(" ({n} samples)"))
        .unwrap_or_default();
    match s {
        Source::Run { run } => format!("stored with run {run}{n}"),
        Source::Measured { run, at_ns } => format!(
            "measured on this machine for this side by explain at {} (stored as run {run}){n}",
            super::utc(*at_ns)
        ),
        Source::Missing { why } => format!("none: {why}"),
    }
}

/// A difference with its interval: "+80.3 [+75.1, +85.9]".
fn change(d: &Delta) -> String {
    format!(
        "{} [{}, {}]{}",
        signed_ns(d.change_ns_per_op),
        signed_ns(d.change_ci_ns_per_op[0]),
        signed_ns(d.change_ci_ns_per_op[1]),
        if d.significant() { "" } else { " ~" }
    )
}

fn pct(p: Option<f64>) -> String {
    p.map(|p| format!("{:.0}%", p))
        .unwrap_or_else(|| "-".into())
}

fn headline(t: &TestExplanation) -> String {
    let listed = match t.listed {
        Listed::Slower => "slower",
        Listed::Faster => "faster",
        Listed::Named => "named",
    };
    let ratio = match (t.ratio, t.ratio_ci) {
        (Some(r), Some([lo, hi])) => format!("ratio {r:.3} [{lo:.3}, {hi:.3}]"),
        (Some(r), None) => format!("ratio {r:.3}, no interval"),
        _ => "no ratio".into(),
    };
    let times = match (t.a_ns_per_op, t.b_ns_per_op, t.change_ns_per_op) {
        (Some(a), Some(b), Some(c)) => {
            format!("{} -> {} per {} ({})", ns(a), ns(b), t.unit, signed_ns(c))
        }
        _ => format!("a side lacks {}", t.test),
    };
    format!(
        "{} ({listed}): {times}, {ratio}, {}",
        t.test,
        t.verdict.map_or("no verdict", |v| v.as_str())
    )
}

fn path_line(p: &PathDelta) -> String {
    p.path[..p.path.len().saturating_sub(1)].join(" > ")
}

/// A path's row in the text: its function, both sides, the change and its share.
fn path_row(s: &mut String, p: &PathDelta) {
    let _ = writeln!(
        s,
        "    {:<52} {:>10} {:>10}  {:<28} {:>6}",
        p.function(),
        ns(p.total.a_ns_per_op),
        ns(p.total.b_ns_per_op),
        change(&p.total),
        pct(p.share_pct)
    );
}

/// A path's callees with their changes: "f +1.20 ns, g +0.800 ns".
fn callees(p: &PathDelta) -> String {
    p.callees
        .iter()
        .map(|c| format!("{} {}", c.function, signed_ns(c.total.change_ns_per_op)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The trunk in a line, after "The change's trunk": "(...): a > b: B-A [95%], share".
fn trunk_line(p: &PathDelta) -> String {
    format!(
        " (the call path it goes through, then spreads from): {}: B-A {}, {} of the measured change",
        p.path.join(" > "),
        change(&p.total),
        pct(p.share_pct)
    )
}

fn count_value(v: Option<f64>, ci: Option<[f64; 2]>) -> String {
    match (v, ci) {
        (Some(v), Some([lo, hi])) => format!("{} [{}, {}]", num4(v), num4(lo), num4(hi)),
        (Some(v), None) => num4(v),
        (None, _) => "-".into(),
    }
}

/// Four significant figures; small counts per operation stay readable.
fn num4(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 1000.0 {
        format!("{v:.0}")
    } else {
        let digits = (3 - v.abs().log10().floor() as i32).clamp(0, 8) as usize;
        format!("{v:.digits$}")
    }
}

/// The explanation as text; `top` functions per test.
pub fn text(e: &Explanation, top: usize) -> String {
    walk(e, top, Text::default())
}

/// The explanation as GitHub-flavoured Markdown; `top` functions per test.
pub fn markdown(e: &Explanation, top: usize) -> String {
    walk(e, top, Markdown::default())
}

/// How a format writes each part of an explanation, a row at a time; [`walk`] visits the
/// parts once, in order. The parts a mail leaves out (one side's profile, the traces, the
/// disturbed line, the recorded differences at the end) are written by the text alone.
trait Parts: Markup {
    /// The title and the two sides.
    fn open(&mut self, e: &Explanation);
    fn no_tests(&mut self);
    /// A test's headline, sentence and where its profiles came from.
    fn test(&mut self, t: &TestExplanation);
    /// The CPU time both profiles hold, and how much of the measured change that is.
    fn cpu(&mut self, t: &TestExplanation, d: &ProfileDiff);
    fn trunk(&mut self, p: &PathDelta);
    /// What comes before the changed call paths (`none`: there are none).
    fn paths(&mut self, none: bool);
    fn path(&mut self, p: &PathDelta);
    fn functions(&mut self, t: &TestExplanation);
    fn function(&mut self, f: &FunctionDelta);
    fn one_side(&mut self, _t: &TestExplanation, _o: &OneSide) {}
    fn traces(&mut self, _t: &TestExplanation) {}
    fn counts(&mut self, t: &TestExplanation);
    fn count(&mut self, c: &CountRow);
    fn tied_head(&mut self, _t: &TestExplanation) {}
    fn tied(&mut self, t: &TestExplanation, x: &Tied);
    /// `--try-switches`: what was done, before each difference switched.
    fn switches(&mut self, b: &Bisection);
    fn tried(&mut self, t: &Tried);
    fn effect(&mut self, t: &Tried, e: &Effect);
    fn tried_end(&mut self, _t: &Tried) {}
    /// The differences not switched and the tests not measured, then the method.
    fn switches_end(&mut self, b: &Bisection);
    /// The recorded differences and the method.
    fn close(&mut self, e: &Explanation);
}

/// The one walk: each test, its profiles, paths, functions, counts and ties, then the
/// switched differences, each written by the format.
fn walk<W: Parts>(e: &Explanation, top: usize, mut w: W) -> String {
    w.open(e);
    if e.tests.is_empty() {
        w.no_tests();
    }
    for t in &e.tests {
        w.test(t);
        if let Some(d) = &t.profile {
            w.cpu(t, d);
            if let Some(p) = &d.trunk {
                w.trunk(p);
            }
            w.paths(d.paths.is_empty());
            d.paths.iter().for_each(|p| w.path(p));
            w.functions(t);
            d.functions.iter().take(top).for_each(|f| w.function(f));
        }
        if let Some(o) = &t.one_side {
            w.one_side(t, o);
        }
        w.traces(t);
        if !t.counts.is_empty() {
            w.counts(t);
            t.counts.iter().for_each(|c| w.count(c));
        }
        w.tied_head(t);
        t.tied.iter().for_each(|x| w.tied(t, x));
    }
    if let Some(b) = &e.try_switches {
        w.switches(b);
        for t in &b.tried {
            w.tried(t);
            t.effects.iter().for_each(|x| w.effect(t, x));
            w.tried_end(t);
        }
        w.switches_end(b);
    }
    w.close(e);
    w.finish()
}

/// The samples of a side's profile, when both sides have one.
fn samples(t: &TestExplanation, i: usize) -> Option<u64> {
    t.profile.as_ref().map(|d| d.all.samples[i])
}

/// A tied difference's functions with their changes: "f +1.20 ns, g +0.800 ns".
fn tied_functions(x: &Tied, code: &str) -> String {
    x.functions
        .iter()
        .map(|(f, c)| format!("{code}{f}{code} {}", signed_ns(*c)))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Parts for Text {
    fn open(&mut self, e: &Explanation) {
        let s = &mut self.0;
        let _ = writeln!(s, "sysperf explain: B against A (the baseline)");
        let _ = writeln!(s, "  A: {}", side(&e.a));
        let _ = writeln!(s, "  B: {}", side(&e.b));
    }
    fn no_tests(&mut self) {
        let _ = writeln!(
            self.0,
            "\nNo test is significantly slower or faster in B; name tests (sysperf explain A B TEST...) to explain them anyway."
        );
    }
    fn test(&mut self, t: &TestExplanation) {
        let s = &mut self.0;
        let _ = writeln!(s, "\n{}", headline(t));
        let _ = writeln!(s, "  => {}", t.sentence);
        let _ = writeln!(s, "  Profiles: A {}", source(&t.profiles[0], samples(t, 0)));
        let _ = writeln!(s, "            B {}", source(&t.profiles[1], samples(t, 1)));
    }
    fn cpu(&mut self, t: &TestExplanation, d: &ProfileDiff) {
        let s = &mut self.0;
        let _ = writeln!(
            s,
            "  CPU time per {} in the profiles: A {}, B {}: {} (its interval: the sampling of one profiled trial a side, not trial-to-trial noise){}",
            t.unit,
            ns(d.all.a_ns_per_op),
            ns(d.all.b_ns_per_op),
            change(&d.all),
            match &t.accounting {
                Some(a) => format!(
                    "; {:.0}% of the measured {}, the paths below {:.0}%",
                    a.profile_pct,
                    signed_ns(a.measured_ns_per_op),
                    a.paths_pct
                ),
                None => String::new(),
            }
        );
        if let Some(line) = t.accounting.as_ref().and_then(disturbed_line) {
            let _ = writeln!(s, "  {line}");
        }
    }
    fn trunk(&mut self, p: &PathDelta) {
        let s = &mut self.0;
        let _ = writeln!(
            s,
            "\n  The change's trunk (the call path it goes through, then spreads from): {}",
            p.path.join(" > ")
        );
        path_row(s, p);
        let _ = writeln!(
            s,
            "      self {}; spreads into {}",
            change(&p.self_),
            callees(p)
        );
    }
    fn paths(&mut self, none: bool) {
        if none {
            let _ = writeln!(
                self.0,
                "  Where the change is: no call path changed significantly"
            );
        } else {
            let _ = writeln!(
                self.0,
                "\n  Where the change is (call paths, with what they call): {:>10} {:>10}  {:<28} {:>6}",
                "A", "B", "B-A [95%]", "share"
            );
        }
    }
    fn path(&mut self, p: &PathDelta) {
        let s = &mut self.0;
        path_row(s, p);
        let _ = writeln!(s, "      self {}; from {}", change(&p.self_), path_line(p));
        if !p.callees.is_empty() {
            let _ = writeln!(s, "      calls {}", callees(p));
        }
    }
    fn functions(&mut self, t: &TestExplanation) {
        let s = &mut self.0;
        let _ = writeln!(
            s,
            "\n  Functions (self: in it; total: with what it called; ns per {}, B-A with its 95% interval, ~ not significant)",
            t.unit
        );
        let _ = writeln!(
            s,
            "    {:<40} {:>9} {:>9}  {:<28} {:>6}  {:>9} {:>9}  total B-A [95%]",
            "function", "self A", "self B", "self B-A [95%]", "share", "total A", "total B",
        );
    }
    fn function(&mut self, f: &FunctionDelta) {
        let _ = writeln!(
            self.0,
            "    {:<40} {:>9} {:>9}  {:<28} {:>6}  {:>9} {:>9}  {}",
            f.function,
            ns(f.self_.a_ns_per_op),
            ns(f.self_.b_ns_per_op),
            change(&f.self_),
            pct(f.share_pct),
            ns(f.total.a_ns_per_op),
            ns(f.total.b_ns_per_op),
            change(&f.total)
        );
    }
    fn one_side(&mut self, t: &TestExplanation, o: &OneSide) {
        let s = &mut self.0;
        let _ = writeln!(
            s,
            "  Only {} has a profile: {} of CPU per {}; its functions (self, total):",
            o.side,
            ns(o.cpu_ns_per_op),
            t.unit
        );
        for (f, sf, tot) in &o.functions {
            let _ = writeln!(s, "    {:<48} {:>10} {:>10}", f, ns(*sf), ns(*tot));
        }
    }
    fn traces(&mut self, t: &TestExplanation) {
        if t.traces.iter().all(Option::is_none) {
            return;
        }
        let shown = |x: &Option<String>| {
            x.as_ref()
                .map_or("none".to_string(), |id| format!("stored trace {id}"))
        };
        let _ = writeln!(
            self.0,
            "  Traces: A {}, B {}",
            shown(&t.traces[0]),
            shown(&t.traces[1])
        );
    }
    fn counts(&mut self, t: &TestExplanation) {
        let _ = writeln!(
            self.0,
            "\n  Events per {}{:>24} {:>24}  source",
            t.unit, "A", "B"
        );
    }
    fn count(&mut self, c: &CountRow) {
        let _ = writeln!(
            self.0,
            "    {:<30} {:>24} {:>24}  {}",
            c.what,
            count_value(c.a, c.a_ci),
            count_value(c.b, c.b_ci),
            c.source
        );
    }
    fn tied_head(&mut self, t: &TestExplanation) {
        if t.tied.is_empty() {
            let _ = writeln!(
                self.0,
                "\n  No recorded difference between A and B is tied to {}.",
                t.test
            );
        } else {
            let _ = writeln!(self.0, "\n  Recorded differences tied to {}:", t.test);
        }
    }
    fn tied(&mut self, t: &TestExplanation, x: &Tied) {
        let by = match (x.by_test, x.functions.is_empty()) {
            (true, true) => format!("the table ties {} to it", t.test),
            (true, false) => format!("the table ties {} and these functions to it", t.test),
            (false, _) => "the table ties these functions to it".into(),
        };
        let _ = writeln!(
            self.0,
            "    {} ({by}{}){}",
            crate::explain::difference_words(&x.difference),
            x.difference
                .source
                .as_deref()
                .map(|src| format!("; {src}"))
                .unwrap_or_default(),
            if x.functions.is_empty() {
                String::new()
            } else {
                format!(": {}", tied_functions(x, ""))
            }
        );
    }
    fn switches(&mut self, b: &Bisection) {
        let _ = writeln!(
            self.0,
            "\nDifferences switched on this machine (--try-switches: B's setting against A's, paired rounds, about {} s each)",
            b.seconds_per_switch
        );
        if b.tried.is_empty() {
            let _ = writeln!(self.0, "  none could be switched here");
        }
    }
    fn tried(&mut self, t: &Tried) {
        let _ = writeln!(
            self.0,
            "  {} ({}): {}; {}",
            t.field,
            values(&t.a, &t.b),
            t.flip.describe(),
            flip_runs(t)
        );
    }
    fn effect(&mut self, _t: &Tried, e: &Effect) {
        let _ = writeln!(self.0, "    {}: {}{}", e.test, e.words, rounds(e));
    }
    fn tried_end(&mut self, t: &Tried) {
        if let Some(err) = &t.error {
            let _ = writeln!(self.0, "    not finished: {err}");
        }
    }
    fn switches_end(&mut self, b: &Bisection) {
        let s = &mut self.0;
        for (test, why) in &b.not_measured {
            let _ = writeln!(s, "  {test} not measured: {why}");
        }
        if !b.not_switchable.is_empty() {
            let _ = writeln!(s, "  Not switched here:");
            for n in &b.not_switchable {
                let _ = writeln!(s, "    {} ({}): {}", n.field, values(&n.a, &n.b), n.why);
            }
        }
        let _ = writeln!(s, "  Method: {}.", b.method);
    }
    fn close(&mut self, e: &Explanation) {
        let s = &mut self.0;
        let _ = writeln!(s, "\nRecorded differences between A and B");
        if e.differences.is_empty() {
            let _ = writeln!(s, "  none: the fingerprints (and ab switches) are the same");
        }
        for d in &e.differences {
            let _ = writeln!(
                s,
                "  {}: A {}, B {}{}",
                d.field,
                d.a.as_deref().unwrap_or("unknown"),
                d.b.as_deref().unwrap_or("unknown"),
                d.fact
                    .as_deref()
                    .map(|f| format!(" (ties table: {f})"))
                    .unwrap_or_default()
            );
        }
        let _ = writeln!(s, "\nMethod: {}.", e.method);
    }
}

impl Parts for Markdown {
    fn open(&mut self, e: &Explanation) {
        let s = &mut self.0;
        let _ = writeln!(s, "## sysperf explain: B against A\n");
        let _ = writeln!(s, "- **A** (baseline): {}", md(&side(&e.a)));
        let _ = writeln!(s, "- **B**: {}", md(&side(&e.b)));
    }
    fn no_tests(&mut self) {
        let _ = writeln!(
            self.0,
            "\nNo test is significantly slower or faster in B; name tests to explain them anyway."
        );
    }
    fn test(&mut self, t: &TestExplanation) {
        let s = &mut self.0;
        let _ = writeln!(s, "\n### {}\n", md(&headline(t)));
        let _ = writeln!(s, "**{}**\n", md(&t.sentence));
        let src = |i: usize| md(&source(&t.profiles[i], samples(t, i)));
        let _ = writeln!(s, "- A's profile: {}", src(0));
        let _ = writeln!(s, "- B's profile: {}", src(1));
    }
    fn cpu(&mut self, t: &TestExplanation, d: &ProfileDiff) {
        let _ = writeln!(
            self.0,
            "- CPU time per {} in the profiles: A {}, B {}: {} (sampling of one profiled trial a side){}",
            t.unit,
            ns(d.all.a_ns_per_op),
            ns(d.all.b_ns_per_op),
            md(&change(&d.all)),
            t.accounting
                .as_ref()
                .map(|a| format!(
                    "; {:.0}% of the measured {}, the paths {:.0}%",
                    a.profile_pct,
                    signed_ns(a.measured_ns_per_op),
                    a.paths_pct
                ))
                .unwrap_or_default()
        );
    }
    fn trunk(&mut self, p: &PathDelta) {
        let _ = writeln!(self.0, "- The change's trunk{}", md(&trunk_line(p)));
    }
    fn paths(&mut self, none: bool) {
        if !none {
            let _ = writeln!(
                self.0,
                "\n| where the change is | from | A | B | B-A [95%] | share |\n|---|---|---:|---:|---|---:|"
            );
        }
    }
    fn path(&mut self, p: &PathDelta) {
        let _ = writeln!(
            self.0,
            "| `{}` | {} | {} | {} | {} | {} |",
            md(p.function()),
            md(&path_line(p)),
            ns(p.total.a_ns_per_op),
            ns(p.total.b_ns_per_op),
            md(&change(&p.total)),
            pct(p.share_pct)
        );
    }
    fn functions(&mut self, _t: &TestExplanation) {
        let _ = writeln!(
            self.0,
            "\n| function | self A | self B | self B-A [95%] | share | total A | total B | total B-A [95%] |\n|---|---:|---:|---|---:|---:|---:|---|"
        );
    }
    fn function(&mut self, f: &FunctionDelta) {
        let _ = writeln!(
            self.0,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} |",
            md(&f.function),
            ns(f.self_.a_ns_per_op),
            ns(f.self_.b_ns_per_op),
            md(&change(&f.self_)),
            pct(f.share_pct),
            ns(f.total.a_ns_per_op),
            ns(f.total.b_ns_per_op),
            md(&change(&f.total))
        );
    }
    fn counts(&mut self, t: &TestExplanation) {
        let _ = writeln!(
            self.0,
            "\n| per {} | A | B | source |\n|---|---:|---:|---|",
            md(&t.unit)
        );
    }
    fn count(&mut self, c: &CountRow) {
        let _ = writeln!(
            self.0,
            "| {} | {} | {} | {} |",
            md(c.what.trim()),
            count_value(c.a, c.a_ci),
            count_value(c.b, c.b_ci),
            md(&c.source)
        );
    }
    fn tied(&mut self, _t: &TestExplanation, x: &Tied) {
        let _ = writeln!(
            self.0,
            "- tied: {}{}",
            md(&crate::explain::difference_words(&x.difference)),
            if x.functions.is_empty() {
                String::new()
            } else {
                format!(" (functions: {})", md(&tied_functions(x, "`")))
            }
        );
    }
    fn switches(&mut self, b: &Bisection) {
        let _ = writeln!(
            self.0,
            "\n### Differences switched on this machine\n\nEach set to A's setting and to B's in paired rounds, about {} s each (`--try-switches`).\n",
            b.seconds_per_switch
        );
        if !b.tried.is_empty() {
            let _ = writeln!(
                self.0,
                "| difference | A | B | test | B's setting / A's [95%] | share of A->B | account |\n|---|---|---|---|---|---|---|"
            );
        }
    }
    fn tried(&mut self, t: &Tried) {
        if t.effects.is_empty() {
            let _ = writeln!(
                self.0,
                "| {} | - | - | - | {} |",
                switched_cells(t),
                md(t.error.as_deref().unwrap_or("not measured"))
            );
        }
    }
    fn effect(&mut self, t: &Tried, e: &Effect) {
        let _ = writeln!(
            self.0,
            "| {} | {} | {} | {} | {} |",
            switched_cells(t),
            md(&e.test),
            e.ratio_text(),
            e.share_text(),
            md(&e.words)
        );
    }
    fn switches_end(&mut self, b: &Bisection) {
        let s = &mut self.0;
        for n in &b.not_switchable {
            let _ = writeln!(
                s,
                "- not switched here: {} ({}): {}",
                md(&n.field),
                md(&values(&n.a, &n.b)),
                md(&n.why)
            );
        }
        for (test, why) in &b.not_measured {
            let _ = writeln!(s, "- {} not measured: {}", md(test), md(why));
        }
        let _ = writeln!(s, "\n_Switching: {}._", md(&b.method));
    }
    fn close(&mut self, e: &Explanation) {
        let _ = writeln!(self.0, "\n_Method: {}._", md(&e.method));
    }
}

/// A switched difference's first cells in Markdown: the field, A's value, B's value.
fn switched_cells(t: &Tried) -> String {
    let cell = |v: &Option<String>| md(v.as_deref().unwrap_or("unknown"));
    format!("{} | {} | {}", md(&t.field), cell(&t.a), cell(&t.b))
}

/// Why the profiles may hold less of the change than the trials measured: other work ran
/// beside the test in a side's run. Said when they hold under 80% of it.
pub fn disturbed_line(a: &crate::explain::Accounting) -> Option<String> {
    if a.disturbed_sides.is_empty() || a.profile_pct.abs() >= 80.0 {
        return None;
    }
    Some(format!(
        "Other work ran beside the test in {} (busy_cpu, busy_machine or steal warnings): its time is in the measured change but not in the CPU profiles, which hold {:.0}% of it; profile on a quiet machine for shares of the kernel's change alone.",
        a.disturbed_sides.join(" and "),
        a.profile_pct
    ))
}

/// "A x, B y" of a difference's values.
fn values(a: &Option<String>, b: &Option<String>) -> String {
    format!(
        "A {}, B {}",
        a.as_deref().unwrap_or("unknown"),
        b.as_deref().unwrap_or("unknown")
    )
}

/// The runs a flip's two sides were stored as.
fn flip_runs(t: &Tried) -> String {
    match (&t.runs, &t.labels) {
        (Some([a, b]), Some([la, lb])) => {
            format!("runs {la} ({a}, A's setting) and {lb} ({b}, B's)")
        }
        _ => "no runs stored".into(),
    }
}

fn rounds(e: &Effect) -> String {
    e.rounds
        .map(|r| format!(" ({r} rounds)"))
        .unwrap_or_default()
}

/// A Markdown cell: pipes and newlines would break the table.
fn md(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The JSON document (`explain --json`).
pub fn json(e: &Explanation) -> Value {
    serde_json::to_value(e).unwrap_or(Value::Null)
}

/// The HTML report's section: each test's sentence, its paths and functions, and a
/// differential flame graph where both sides have a profile (`profiles` holds them, by test:
/// (test, A's, B's)). `index` keeps element ids unique when a page has several sections.
pub fn html_section(
    e: &Explanation,
    profiles: &[(String, &Profile, &Profile)],
    index: usize,
) -> String {
    use super::escape as esc;
    let mut s = String::new();
    let _ = write!(
        s,
        "<h3>{} against {}</h3>",
        esc(&side(&e.b)),
        esc(&side(&e.a))
    );
    if e.tests.is_empty() {
        s.push_str("<p>No test is significantly slower or faster.</p>");
    }
    for (j, t) in e.tests.iter().enumerate() {
        let _ = write!(
            s,
            "<h4>{}</h4><p class=\"alert\">{}</p>",
            esc(&headline(t)),
            esc(&t.sentence)
        );
        if let Some((_, a, b)) = profiles.iter().find(|(id, _, _)| *id == t.test) {
            let id = format!("diff-flame-{index}-{j}");
            let title = format!("{}: B against A, time per {}", t.test, t.unit);
            if let Ok(svg) = super::flame::differential(a, b, &title, &id) {
                let _ = write!(
                    s,
                    "<figure id=\"figure-{id}\" class=\"flame\">{}<figcaption>Differential flame graph (Gregg's): each box is a function on B's call stacks, its width B's CPU time per {} in it and what it called; red where B spends more time per {} than A, blue where less, the deeper the colour the larger the change; hover a box for its picoseconds per {} in B and the change as a share of B's total. Code that only A ran has no width here: the table lists it.</figcaption></figure>",
                    super::flame::inline(&svg),
                    esc(&t.unit),
                    esc(&t.unit),
                    esc(&t.unit)
                );
            }
        }
        if let Some(d) = &t.profile {
            if let Some(p) = &d.trunk {
                let _ = write!(s, "<p>The change's trunk{}</p>", esc(&trunk_line(p)));
            }
            if !d.paths.is_empty() {
                s.push_str("<table><thead><tr><th>where the change is</th><th>from</th><th>A</th><th>B</th><th>B-A [95%]</th><th>share</th></tr></thead><tbody>");
                for p in &d.paths {
                    let _ = write!(
                        s,
                        "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                        esc(p.function()),
                        esc(&path_line(p)),
                        ns(p.total.a_ns_per_op),
                        ns(p.total.b_ns_per_op),
                        esc(&change(&p.total)),
                        pct(p.share_pct)
                    );
                }
                s.push_str("</tbody></table>");
            }
        }
        if !t.counts.is_empty() {
            let _ = write!(
                s,
                "<table><thead><tr><th>per {}</th><th>A</th><th>B</th><th>source</th></tr></thead><tbody>",
                esc(&t.unit)
            );
            for c in &t.counts {
                let _ = write!(
                    s,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(c.what.trim()),
                    count_value(c.a, c.a_ci),
                    count_value(c.b, c.b_ci),
                    esc(&c.source)
                );
            }
            s.push_str("</tbody></table>");
        }
    }
    if let Some(b) = &e.try_switches {
        switches_html(&mut s, b);
    }
    s
}

/// `--try-switches` in the HTML section: per difference switched and test, B's setting
/// against A's with its paired interval and the share of A->B's change it accounts for; the
/// differences not switched here, each with why.
fn switches_html(s: &mut String, b: &Bisection) {
    use super::escape as esc;
    let _ = write!(
        s,
        "<h4>Differences switched on this machine</h4><p>Each recorded difference this machine can switch at runtime, set to A's setting and to B's in paired rounds, about {} s each (<code>--try-switches</code>): how much of each test's change from A to B it accounts for.</p>",
        b.seconds_per_switch
    );
    if b.tried.is_empty() {
        s.push_str("<p>None could be switched here.</p>");
    } else {
        s.push_str("<table><thead><tr><th>difference</th><th>A</th><th>B</th><th>test</th><th>B's setting / A's [95%]</th><th>rounds</th><th>share of A-&gt;B</th><th>account</th></tr></thead><tbody>");
    }
    for t in &b.tried {
        let cell = |v: &Option<String>| esc(v.as_deref().unwrap_or("unknown"));
        let head = format!(
            "<td title=\"{}; {}\">{}</td><td>{}</td><td>{}</td>",
            esc(&t.flip.describe()),
            esc(&flip_runs(t)),
            esc(&t.field),
            cell(&t.a),
            cell(&t.b)
        );
        if t.effects.is_empty() {
            let _ = write!(
                s,
                "<tr>{head}<td>-</td><td>-</td><td>-</td><td>-</td><td>{}</td></tr>",
                esc(t.error.as_deref().unwrap_or("not measured"))
            );
        }
        for e in &t.effects {
            let (ratio, share) = (e.ratio_text(), e.share_text());
            let rounds = e.rounds.map_or("-".into(), |r| r.to_string());
            let _ = write!(
                s,
                "<tr>{head}<td>{}</td><td>{ratio}</td><td>{rounds}</td><td>{share}</td><td>{}</td></tr>",
                esc(&e.test),
                esc(&e.words)
            );
        }
        if let (false, Some(err)) = (t.effects.is_empty(), &t.error) {
            let _ = write!(
                s,
                "<tr>{head}<td colspan=\"5\">not finished: {}</td></tr>",
                esc(err)
            );
        }
    }
    if !b.tried.is_empty() {
        s.push_str("</tbody></table>");
    }
    if !b.not_switchable.is_empty() || !b.not_measured.is_empty() {
        s.push_str("<ul>");
        for n in &b.not_switchable {
            let _ = write!(
                s,
                "<li>Not switched here: {} ({}): {}</li>",
                esc(&n.field),
                esc(&values(&n.a, &n.b)),
                esc(&n.why)
            );
        }
        for (test, why) in &b.not_measured {
            let _ = write!(s, "<li>{} not measured: {}</li>", esc(test), esc(why));
        }
        s.push_str("</ul>");
    }
    let _ = write!(s, "<p>Switching: {}.</p>", esc(&b.method));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_gives_the_sentence_the_paths_the_functions_and_the_ties() {
        let (e, _, _) = crate::explain::tests::fixture();
        let s = text(&e, 5);
        for needle in [
            "syscall (slower): 107 ns -> 128 ns per call (+21.4 ns), ratio 1.200",
            "  => syscall 1.20x slower",
            "Profiles: A stored with run 5f2c9a1b3d7e (100000 samples)",
            "Where the change is (call paths, with what they call)",
            "__seccomp_filter",
            "from entry_SYSCALL_64_after_hwframe > do_syscall_64 > syscall_trace_enter > __secure_computing",
            "calls seccomp_run_filters +7.60 ns",
            "Functions (self: in it",
            "Events per call",
            "page faults",
            "Recorded differences tied to syscall:",
            "B ran with an allow-all seccomp filter in every worker (the ab switch on)",
            "ab switch: A switch seccomp off, B switch on: an allow-all",
            "Method: each side's kernel profile",
        ] {
            assert!(s.contains(needle), "{needle}:\n{s}");
        }
        // Not significant figures are marked.
        assert!(s.contains(" ~"), "{s}");
        let m = markdown(&e, 5);
        assert!(m.contains("| `__seccomp_filter` |"), "{m}");
        assert!(m.contains("**syscall 1.20x slower"));
        let j = json(&e);
        assert_eq!(j["format"], "sysperf-explain");
        assert_eq!(
            j["tests"][0]["profile"]["paths"][0]["path"][4],
            "__seccomp_filter"
        );
        assert!(j["tests"][0]["profile"]["functions"][0]["self"]["change_ci_ns_per_op"].is_array());
    }

    /// #34: the trunk a change goes through before it spreads is shown in every rendering,
    /// and only where there is one.
    #[test]
    fn the_trunk_of_a_spreading_change_is_rendered() {
        let e = crate::explain::tests::fixture_spreading();
        let s = text(&e, 5);
        for needle in [
            "The change's trunk (the call path it goes through, then spreads from): entry_SYSCALL_64_after_hwframe > do_syscall_64 > __x64_sys_recvfrom > tcp_recvmsg > __tcp_transmit_skb\n    __tcp_transmit_skb",
            "; spreads into ip_output +",
            "  => syscall 1.20x slower (107 ns -> 128 ns per call): +",
        ] {
            assert!(s.contains(needle), "{needle}:\n{s}");
        }
        assert!(s.find("The change's trunk") < s.find("Where the change is"));
        let m = markdown(&e, 5);
        assert!(
            m.contains("- The change's trunk (the call path it goes through, then spreads from): entry_SYSCALL_64_after_hwframe > do_syscall_64 > __x64_sys_recvfrom > tcp_recvmsg > __tcp_transmit_skb: B-A +"),
            "{m}"
        );
        assert!(m.contains(", 90% of the measured change"), "{m}");
        let h = html_section(&e, &[], 0);
        assert!(h.contains("<p>The change's trunk (the call path"), "{h}");
        let j = json(&e);
        let trunk = &j["tests"][0]["profile"]["trunk"];
        assert_eq!(trunk["path"][4], "__tcp_transmit_skb");
        assert!((trunk["share_pct"].as_f64().unwrap() - 90.0).abs() < 0.5);
        assert!(trunk["total"]["change_ci_ns_per_op"].is_array());
        // The seccomp filter's change is in one path: no trunk, said nowhere.
        let (e, _, _) = crate::explain::tests::fixture();
        assert!(!text(&e, 5).contains("The change's trunk"));
        assert!(!markdown(&e, 5).contains("The change's trunk"));
        assert!(json(&e)["tests"][0]["profile"]["trunk"].is_null());
    }

    /// The fixture with `--try-switches` results: one sysctl switched (syscall measured in
    /// 40 paired rounds, 1.10x), the kernel not switchable, a suite point not measured.
    fn switched() -> Explanation {
        use crate::compare::{Covers, Ratio, Verdict};
        use crate::explain::bisect::{self, Flip, NotSwitched};
        let (mut e, _, _) = crate::explain::tests::fixture();
        let paired = Ratio {
            ratio: 1.1,
            ci: Some([1.08, 1.12]),
            verdict: Verdict::Slower,
            covers: Covers::Paired,
            significant: None,
            rounds: Some(40),
            effective_rounds: None,
        };
        let effect = bisect::effect(&e.tests[0], Some(&paired), false);
        e.try_switches = Some(Bisection {
            method: bisect::method(2.0, 10, 1.0),
            seconds_per_switch: 2.0,
            tests: vec!["syscall".into()],
            not_measured: vec![("scaling.path-depth@8".into(), "a suite's point".into())],
            tried: vec![Tried {
                field: "sysctl vm.stat_interval".into(),
                a: Some("1".into()),
                b: Some("2".into()),
                flip: Flip::Setting {
                    name: "vm.stat_interval".into(),
                    a: "1".into(),
                    b: "2".into(),
                },
                runs: Some(["0a".into(), "0b".into()]),
                labels: Some([
                    "try-vm.stat_interval-abcdef-off".into(),
                    "try-vm.stat_interval-abcdef-on".into(),
                ]),
                effects: vec![effect],
                error: None,
            }],
            not_switchable: vec![NotSwitched {
                field: "kernel".into(),
                a: Some("6.1".into()),
                b: Some("6.8".into()),
                why: "the kernel's build: only booting that kernel changes it".into(),
            }],
            interrupted: false,
        });
        e
    }

    #[test]
    fn switched_differences_are_rendered_with_their_account_and_the_rest_with_why_not() {
        let mut e = switched();
        let s = text(&e, 5);
        for needle in [
            "Differences switched on this machine (--try-switches",
            "  sysctl vm.stat_interval (A 1, B 2): vm.stat_interval between A's 1 and B's 2; runs try-vm.stat_interval-abcdef-off (0a, A's setting) and try-vm.stat_interval-abcdef-on (0b, B's)",
            "    syscall: accounts for ",
            "(40 rounds)",
            "  Not switched here:\n    kernel (A 6.1, B 6.8): the kernel's build",
            "  scaling.path-depth@8 not measured: a suite's point",
        ] {
            assert!(s.contains(needle), "{needle}:\n{s}");
        }
        let m = markdown(&e, 5);
        assert!(
            m.contains("| sysctl vm.stat_interval | 1 | 2 | syscall | 1.100 [1.080, 1.120] | "),
            "{m}"
        );
        assert!(
            m.contains("- not switched here: kernel (A 6.1, B 6.8)"),
            "{m}"
        );
        let j = json(&e);
        let t = &j["try_switches"]["tried"][0];
        assert_eq!(t["flip"]["kind"], "setting");
        assert_eq!(t["effects"][0]["account"], "accounts");
        assert!(t["effects"][0]["share_bounds_pct"].is_array());
        // Without --try-switches the document is as it was.
        e.try_switches = None;
        assert!(json(&e).get("try_switches").is_none());
    }

    #[test]
    fn the_html_section_draws_a_differential_flame_graph_per_test() {
        let (e, a, b) = crate::explain::tests::fixture();
        let h = html_section(&e, &[("syscall".into(), &a, &b)], 0);
        assert!(h.contains("<figure id=\"figure-diff-flame-0-0\""), "{h}");
        assert!(h.contains("<svg id=\"diff-flame-0-0\""));
        assert!(h.contains("Differential flame graph"));
        assert!(h.contains("<code>__seccomp_filter</code>"));
        assert!(!h.contains("<script"));
        // Without the profiles: the sentence and tables, no graph.
        let h = html_section(&e, &[], 0);
        assert!(!h.contains("<svg") && h.contains("syscall 1.20x slower"));
        assert!(!h.contains("switched on this machine"), "{h}");
    }

    /// #34: the HTML section says what `--try-switches` found, as the text and Markdown do
    /// (it said nothing of it).
    #[test]
    fn the_html_section_gives_the_switched_differences_account() {
        let (_, a, b) = crate::explain::tests::fixture();
        let e = switched();
        let h = html_section(&e, &[("syscall".into(), &a, &b)], 0);
        for needle in [
            "<h4>Differences switched on this machine</h4>",
            ">sysctl vm.stat_interval</td><td>1</td><td>2</td><td>syscall</td><td>1.100 [1.080, 1.120]</td><td>40</td>",
            "vm.stat_interval between A&#39;s 1 and B&#39;s 2; runs try-vm.stat_interval-abcdef-off (0a, A&#39;s setting)",
            "<li>Not switched here: kernel (A 6.1, B 6.8): the kernel&#39;s build",
            "<li>scaling.path-depth@8 not measured: a suite&#39;s point</li>",
            "Switching: ",
        ] {
            assert!(h.contains(needle), "{needle}:\n{h}");
        }
        let account = &e.try_switches.as_ref().unwrap().tried[0].effects[0].words;
        assert!(
            h.contains(&super::super::escape(account)),
            "{account}:\n{h}"
        );
        // The differential flame graph is still drawn before it.
        assert!(h.find("diff-flame-0-0") < h.find("switched on this machine"));
    }
}
