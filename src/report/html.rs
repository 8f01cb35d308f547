//! The HTML report (`sysperf report RUN... -o FILE.html`): one self-contained page that reads
//! at a glance. Regressions and improvements come first, in words and colour; then the runs,
//! the comparison table with verdicts, a chart per group of tests, the paging figure, the
//! suites' figures with a table of their points (runs of `run --suite` only), fingerprints
//! side by side, warnings, derived figures with their formulas, and the method.
//!
//! Self-contained and offline: inline CSS and inline SVG, no script, no font, image or style
//! fetched from anywhere, and a Content-Security-Policy that forbids all of it, so a page that
//! tried would show an error in the browser's console rather than reach the network. Every
//! string from a machine or a person (labels, hostnames, messages, test ids) is escaped.
//! A pure function of the runs and their comparison; deterministic, hence snapshot-tested.

use super::svg::{self, colour, run_name};
use super::{escape as esc, num, utc};
use crate::compare::{CellState, Comparison, Ratio, Verdict};
use crate::model::{Fingerprint, Run};
use crate::profile::Profile;
use std::fmt::Write;

const CSS: &str = r#"
*{box-sizing:border-box}
body{margin:0;background:#F2F4F7;color:#1D2939;font:14px/1.5 "DejaVu Sans",system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif}
main{max-width:1180px;margin:0 auto;padding:28px 28px 48px}
header h1{font-size:26px;margin:0 0 4px}
header p{margin:0;color:#475467}
section{background:#fff;border:1px solid #E4E7EC;border-radius:10px;padding:18px 22px;margin:18px 0}
h2{font-size:19px;margin:0 0 12px}
h3{font-size:15px;margin:18px 0 8px}
nav.toc{position:sticky;top:0;z-index:5;margin:14px -28px 0;padding:8px 28px;font-size:13px;background:#F2F4F7;border-bottom:1px solid #E4E7EC}
nav.toc a{color:#175CD3;text-decoration:none;margin-right:14px;white-space:nowrap}
section{scroll-margin-top:48px}
details.fold{margin:10px 0 0}
details.fold summary{cursor:pointer;color:#175CD3;font-weight:600}
.banner{display:grid;grid-template-columns:repeat(auto-fit,minmax(320px,1fr));gap:14px;margin:0 0 14px}
.box{border-radius:8px;padding:14px 18px;border:1px solid}
.box h2{margin:0 0 6px;font-size:21px}
.box p{margin:0 0 4px}
.box ul{margin:0;padding:0;list-style:none}
.box li{padding:3px 0}
.bad{background:#FEF3F2;border-color:#FDA29B;color:#7A271A}
.bad h2{color:#B42318}
.good{background:#ECFDF3;border-color:#75E0A7;color:#054F31}
.good h2{color:#067647}
.calm{background:#F9FAFB;border-color:#D0D5DD;color:#344054}
.smoke{background:#FEF0C7;border:3px solid #DC6803;color:#7A2E0E;margin:0 0 14px}
.smoke h2{color:#B54708;font-size:24px}
td.na{color:#B54708;font-weight:600}
.counts{margin:4px 0 0;color:#475467}
.alert{margin:8px 0 0;color:#B54708;font-weight:600}
table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}
th,td{padding:5px 10px;border-bottom:1px solid #EAECF0;text-align:right;vertical-align:top}
thead th{background:#F9FAFB;color:#344054;font-weight:600;border-bottom:2px solid #D0D5DD}
.l{text-align:left}
tr.grp th{background:#EEF2F6;text-align:left;font-size:12px;text-transform:uppercase;letter-spacing:.05em;color:#475467}
tr.slower td{background:#FEF3F2}
tr.slower td:first-child{box-shadow:inset 4px 0 #B42318}
tr.faster td{background:#F6FEF9}
tr.faster td:first-child{box-shadow:inset 4px 0 #067647}
.name{font-weight:600}
.unit,.ci{display:block;color:#667085;font-size:12px;font-weight:400}
.v{font-weight:600}
.ratio{font-weight:600;margin-left:6px}
.verdict{display:inline-block;border-radius:4px;padding:0 7px;font-size:12px;font-weight:700;white-space:nowrap}
.verdict.slower{background:#B42318;color:#fff}
.verdict.faster{background:#067647;color:#fff}
.verdict.same{background:#F2F4F7;color:#475467}
.verdict.none{color:#667085;border:1px solid #D0D5DD}
.failed{color:#B42318;font-weight:600}
.muted{color:#667085}
.sw{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:6px;vertical-align:-1px}
.tag{display:inline-block;background:#F2F4F7;border-radius:4px;padding:0 6px;font-size:12px;color:#344054;margin-right:4px}
.base{background:#EFF8FF;color:#175CD3}
tr.diff td,tr.diff th{background:#FFFAEB}
.differs{display:inline-block;margin-left:6px;font-size:11px;font-weight:700;color:#B54708;text-transform:uppercase}
td.fp,th.fp{text-align:left;word-break:break-word;max-width:360px}
code,.mono{font-family:"DejaVu Sans Mono",ui-monospace,Menlo,Consolas,monospace;font-size:12.5px}
figure{margin:0 0 22px}
figure svg{max-width:100%;height:auto;display:block}
figcaption{color:#475467;font-size:13px;margin-top:4px}
ul.warn{margin:0;padding-left:18px}
ul.warn li{margin:3px 0}
.formula{font-family:"DejaVu Sans Mono",ui-monospace,Menlo,Consolas,monospace;font-size:12px;color:#344054;text-align:left}
footer{color:#667085;font-size:12px;text-align:center}
@media print{body{background:#fff}section{border:none;padding:0}nav.toc{position:static}}
"#;

/// The verdict in words with its class; colour is never the only signal.
fn verdict_badge(v: Verdict) -> String {
    let (class, mark) = match v {
        Verdict::Slower => ("slower", "\u{25b2} "),
        Verdict::Faster => ("faster", "\u{25bc} "),
        Verdict::NoChange => ("same", "\u{2248} "),
        Verdict::Inconclusive => ("none", "? "),
        Verdict::Published
        | Verdict::TooFewTrials
        | Verdict::NoVerdict
        | Verdict::NoiseUnknown
        | Verdict::Disturbed
        | Verdict::Unlike
        | Verdict::SittingsUnknown => ("none", ""),
    };
    format!(
        "<span class=\"verdict {class}\">{mark}{}</span>",
        esc(v.as_str())
    )
}

fn ratio_text(r: &Ratio) -> String {
    // Every interval says what it covers (#30).
    let ci = match r.ci {
        Some([lo, hi]) => format!(
            "<span class=\"ci\">[{}, {}] {}{}</span>",
            esc(&num(lo)),
            esc(&num(hi)),
            esc(r.covers.as_str()),
            esc(&crate::report::compare::significance_note(r))
        ),
        None => String::new(),
    };
    format!(
        "{}<span class=\"ratio\">{:.3}\u{d7}</span>{ci}",
        verdict_badge(r.verdict),
        r.ratio
    )
}

fn swatch(i: usize) -> String {
    format!(
        "<span class=\"sw\" style=\"background:{}\"></span>",
        colour(i)
    )
}

fn opt(v: Option<String>) -> String {
    match v {
        Some(s) => esc(&s),
        None => "<span class=\"muted\">\u{2014}</span>".into(),
    }
}

/// What the summary lists: one line per test and run with a verdict.
struct Change<'a> {
    test: &'a str,
    run: usize,
    ratio: &'a Ratio,
}

fn changes(cmp: &Comparison, verdict: Verdict) -> Vec<Change<'_>> {
    cmp.rows
        .iter()
        .flat_map(|row| {
            row.ratios
                .iter()
                .enumerate()
                .filter_map(move |(i, r)| match r {
                    Some(r) if r.verdict == verdict => Some(Change {
                        test: &row.label,
                        run: i,
                        ratio: r,
                    }),
                    _ => None,
                })
        })
        .collect()
}

/// How many comparisons against the baseline (tests and suites' points, each run) have a
/// verdict (faster, slower, no change), and how many have none.
fn verdict_counts(cmp: &Comparison) -> (usize, usize) {
    let ratios = cmp.rows.iter().flat_map(|r| r.ratios.iter()).chain(
        cmp.series
            .iter()
            .flat_map(|row| row.points.iter().flat_map(|p| p.ratios.iter())),
    );
    ratios.flatten().fold((0, 0), |(j, u), r| {
        if matches!(
            r.verdict,
            Verdict::Faster | Verdict::Slower | Verdict::NoChange
        ) {
            (j + 1, u)
        } else {
            (j, u + 1)
        }
    })
}

fn change_list(s: &mut String, cmp: &Comparison, list: &[Change], word: &str) {
    s.push_str("<ul>");
    for c in list {
        let ci = c
            .ratio
            .ci
            .map(|[lo, hi]| format!(" <span class=\"muted\">[{}, {}]</span>", num(lo), num(hi)))
            .unwrap_or_default();
        let who = if cmp.runs.len() > 2 {
            format!(
                " {}{}",
                swatch(c.run),
                esc(&cmp.runs.get(c.run).map(run_name).unwrap_or_default())
            )
        } else {
            String::new()
        };
        let _ = write!(
            s,
            "<li><span class=\"name\">{}</span>{who}: <b>{:.2}\u{d7} {word}</b>{ci}</li>",
            esc(c.test),
            c.ratio.ratio,
        );
    }
    s.push_str("</ul>");
}

/// The banner over everything of a report with `--quick` runs: a smoke test must not pass
/// for results at a glance.
fn smoke_banner(s: &mut String, runs: &[Run]) {
    let quick: Vec<String> = runs
        .iter()
        .filter(|r| r.params.quick)
        .map(|r| r.label.clone().unwrap_or_else(|| r.id.clone()))
        .collect();
    if quick.is_empty() {
        return;
    }
    let _ = write!(
        s,
        "<div class=\"box smoke\" id=\"smoke-test\"><h2>Smoke test, not a measurement</h2><p>{} {} made with <code>--quick</code>: one 0.01 s trial per test, no warm-up. It shows that the tests run; its figures do not measure the machine, and those that need an interval are n/a. Run without <code>--quick</code> to measure.</p></div>",
        esc(&quick.join(", ")),
        if quick.len() == 1 { "was" } else { "were" }
    );
}

/// The summary at the top of the page: a smoke test's banner, the boxes of regressions and
/// improvements, the counts behind them, and what makes them less trustworthy.
fn summary(s: &mut String, runs: &[Run], cmp: &Comparison) {
    smoke_banner(s, runs);
    s.push_str("<div class=\"banner\">");
    if cmp.runs.len() < 2 {
        s.push_str("<div class=\"box calm\"><h2>One run</h2><p>Nothing to compare it with: the table and charts show its figures. Give two or more runs to see ratios and verdicts.</p></div>");
    } else {
        verdict_boxes(s, cmp);
    }
    s.push_str("</div>");
    verdict_count_line(s, cmp);
    trust_alerts(s, runs, cmp);
}

/// The two boxes of a comparison: its regressions (or why there are none, or no verdict at
/// all), then its improvements.
fn verdict_boxes(s: &mut String, cmp: &Comparison) {
    let base = cmp.runs.get(cmp.baseline).map(run_name).unwrap_or_default();
    let slower = changes(cmp, Verdict::Slower);
    let faster = changes(cmp, Verdict::Faster);
    let (judged, unjudged) = verdict_counts(cmp);
    if slower.is_empty() && judged == 0 {
        // Nothing unjudged looks judged (#42): no green box when no row had a verdict.
        let _ = write!(
            s,
            "<div class=\"box calm\" id=\"no-verdict\"><h2>No verdict</h2><p>None of the {unjudged} comparisons against the baseline {} could be judged: each row says why (no interval, run-to-run or sitting-to-sitting noise unknown, other work beside the test, other options). Nothing here says the runs are alike, or that they differ.</p></div>",
            esc(&base)
        );
    } else if slower.is_empty() {
        let _ = write!(
            s,
            "<div class=\"box good\"><h2>No regressions</h2><p>No test is significantly slower than the baseline {} among the {judged} comparisons judged{}.</p></div>",
            esc(&base),
            if unjudged > 0 {
                format!("; {unjudged} more have no verdict (each row says why)")
            } else {
                String::new()
            }
        );
    } else {
        change_box(s, cmp, &slower, &base, ChangeBox::SLOWER);
    }
    if faster.is_empty() {
        s.push_str("<div class=\"box calm\"><h2>No improvements</h2><p>No test is significantly faster than the baseline.</p></div>");
    } else {
        change_box(s, cmp, &faster, &base, ChangeBox::FASTER);
    }
}

/// How a box of changes in one direction reads: its class, mark, nouns and word.
struct ChangeBox {
    class: &'static str,
    mark: &'static str,
    one: &'static str,
    many: &'static str,
    word: &'static str,
}

impl ChangeBox {
    const SLOWER: ChangeBox = ChangeBox {
        class: "bad",
        mark: "\u{25b2}",
        one: "regression",
        many: "regressions",
        word: "slower",
    };
    const FASTER: ChangeBox = ChangeBox {
        class: "good",
        mark: "\u{25bc}",
        one: "improvement",
        many: "improvements",
        word: "faster",
    };
}

/// A box listing the changes of one direction against the baseline `base`: one form for
/// regressions and improvements, so that they read alike.
fn change_box(s: &mut String, cmp: &Comparison, list: &[Change], base: &str, b: ChangeBox) {
    let _ = write!(
        s,
        "<div class=\"box {}\"><h2>{} {} {}</h2><p>Significantly {} than the baseline {}:</p>",
        b.class,
        b.mark,
        list.len(),
        if list.len() == 1 { b.one } else { b.many },
        b.word,
        esc(base)
    );
    change_list(s, cmp, list, b.word);
    s.push_str("</div>");
}

/// The counts behind the verdicts: tests, runs, the noise band, each verdict, and failed and
/// missing results.
fn verdict_count_line(s: &mut String, cmp: &Comparison) {
    let all: Vec<&Ratio> = cmp
        .rows
        .iter()
        .flat_map(|r| r.ratios.iter().flatten())
        .collect();
    let count = |v: Verdict| all.iter().filter(|r| r.verdict == v).count();
    let cells = cmp.rows.iter().flat_map(|r| r.cells.iter());
    let failed = cells
        .clone()
        .filter(|c| matches!(c, CellState::Failed { .. }))
        .count();
    let missing = cells.filter(|c| matches!(c, CellState::Missing)).count();
    let _ = write!(
        s,
        "<p class=\"counts\">{} tests, {} runs, noise band \u{b1}{}%: {} slower, {} faster, {} with no significant change, {} inconclusive, {} without an interval; {} failed and {} missing results.</p>",
        cmp.rows.len(),
        cmp.runs.len(),
        cmp.noise_pct,
        count(Verdict::Slower),
        count(Verdict::Faster),
        count(Verdict::NoChange),
        count(Verdict::Inconclusive),
        count(Verdict::Published)
            + count(Verdict::TooFewTrials)
            + count(Verdict::NoVerdict)
            + count(Verdict::NoiseUnknown)
            + count(Verdict::Disturbed)
            + count(Verdict::Unlike)
            + count(Verdict::SittingsUnknown),
        failed,
        missing
    );
}

/// What makes the verdicts less trustworthy: incomplete runs, runs of too few trials, and
/// the comparison's warnings.
fn trust_alerts(s: &mut String, runs: &[Run], cmp: &Comparison) {
    for r in runs.iter().filter(|r| !r.complete) {
        let _ = write!(
            s,
            "<p class=\"alert\">Run {} is incomplete (interrupted or still running): some tests are missing from it.</p>",
            esc(&r.label.clone().unwrap_or_else(|| r.id.clone()))
        );
    }
    let few: Vec<String> = runs
        .iter()
        .filter(|r| r.source != "published" && (r.params.quick || r.params.trials < 3))
        .map(|r| esc(r.label.as_deref().unwrap_or(&r.id)))
        .collect();
    if !few.is_empty() {
        let _ = write!(
            s,
            "<p class=\"alert\">Too few trials for trustworthy verdicts in {}: with one or two trials an interval is only the trials themselves. Rerun without --quick, with --trials 5 or more.</p>",
            few.join(", ")
        );
    }
    if !cmp.warnings.is_empty() {
        let _ = write!(
            s,
            "<p class=\"alert\">{} warning{} about noise or failures: see <a href=\"#warnings\">Warnings</a>.</p>",
            cmp.warnings.len(),
            if cmp.warnings.len() == 1 { "" } else { "s" }
        );
    }
}

fn runs_table(s: &mut String, runs: &[Run], cmp: &Comparison) {
    s.push_str("<table><thead><tr><th class=\"l\">Run</th><th class=\"l\">Host</th><th class=\"l\">Kernel</th><th class=\"l\">Started</th><th class=\"l\">Source</th><th>Tests</th></tr></thead><tbody>");
    for (i, r) in runs.iter().enumerate() {
        let mut notes = String::new();
        if i == cmp.baseline && runs.len() > 1 {
            notes.push_str(" <span class=\"tag base\">baseline</span>");
        }
        if !r.complete {
            notes.push_str(" <span class=\"tag\">incomplete</span>");
        }
        let source = match (&r.source[..], &r.citation) {
            ("published", Some(c)) => format!("published: {}", esc(c)),
            (src, _) => esc(src),
        };
        // A side of `sysperf ab CMD...` (#43): the command it timed, named where the run is.
        if let Some(command) = r.params.ab.as_ref().and_then(|a| a.command.as_ref()) {
            let _ = write!(
                notes,
                " <span class=\"mono\">command: <code>{}</code></span>",
                esc(command)
            );
        }
        let _ = write!(
            s,
            "<tr><td class=\"l\">{}<span class=\"name\">{}</span>{notes}<span class=\"unit mono\">{}</span></td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{source}</td><td>{}</td></tr>",
            swatch(i),
            esc(r.label.as_deref().unwrap_or(&r.id)),
            esc(&r.id),
            opt(r.fingerprint.hostname.clone()),
            opt(r.fingerprint.kernel_release.clone()),
            esc(&utc(r.started_ns)),
            r.results.len()
        );
    }
    s.push_str("</tbody></table>");
}

fn comparison_table(s: &mut String, cmp: &Comparison) {
    let n = cmp.runs.len();
    let has_ratio = |i: usize| n > 1 && i != cmp.baseline;
    s.push_str("<table><thead><tr><th class=\"l\" rowspan=\"2\">Test</th>");
    for (i, h) in cmp.runs.iter().enumerate() {
        let _ = write!(
            s,
            "<th colspan=\"{}\" class=\"l\">{}{}{}</th>",
            if has_ratio(i) { 2 } else { 1 },
            swatch(i),
            esc(&run_name(h)),
            if i == cmp.baseline && n > 1 {
                " <span class=\"tag base\">baseline</span>"
            } else {
                ""
            }
        );
    }
    s.push_str("</tr><tr>");
    for i in 0..n {
        let levels = cmp.rows.iter().filter_map(|r| match &r.cells[i] {
            crate::compare::CellState::Present(c) => c.ci_level,
            _ => None,
        });
        let _ = write!(s, "<th>\u{b5}s/op [{}]</th>", super::ci_label(levels));
        if has_ratio(i) {
            s.push_str("<th class=\"l\">vs baseline</th>");
        }
    }
    s.push_str("</tr></thead><tbody>");
    let cols = 1 + (0..n).map(|i| 1 + usize::from(has_ratio(i))).sum::<usize>();
    let mut group = "";
    for row in &cmp.rows {
        let g = if row.group == "paging" {
            "Table 7 \u{b7} paging tests (per page touch)"
        } else {
            "Table 2 \u{b7} kernel tests (per operation)"
        };
        if g != group {
            let _ = write!(s, "<tr class=\"grp\"><th colspan=\"{cols}\">{g}</th></tr>");
            group = g;
        }
        let verdicts: Vec<Verdict> = row.ratios.iter().flatten().map(|r| r.verdict).collect();
        let class = if verdicts.contains(&Verdict::Slower) {
            " class=\"slower\""
        } else if verdicts.contains(&Verdict::Faster) {
            " class=\"faster\""
        } else {
            ""
        };
        let spec = crate::bench::find(&row.id);
        let _ = write!(
            s,
            "<tr{class}><td class=\"l\" title=\"{}\"><span class=\"name\">{}</span><span class=\"unit\">{}</span></td>",
            esc(spec.map(|s| s.paper).unwrap_or("")),
            esc(&row.label),
            esc(&spec.map(|s| format!("per {}", s.unit)).unwrap_or_default()),
        );
        for (i, cell) in row.cells.iter().enumerate() {
            match cell {
                CellState::Present(c) => {
                    let ci = c
                        .us_per_op_ci
                        .map(|[lo, hi]| format!("[{}, {}]", num(lo), num(hi)))
                        .unwrap_or_else(|| "no interval".into());
                    let _ = write!(
                        s,
                        "<td title=\"elapsed {} s, user {} s, system {} s for the paper's count; {} faults/op, {} csw/op\"><span class=\"v\">{}</span><span class=\"ci\">{}</span></td>",
                        num(c.real_s),
                        num(c.user_s),
                        num(c.sys_s),
                        num(c.faults_per_op),
                        num(c.csw_per_op),
                        esc(&num(c.us_per_op)),
                        esc(&ci)
                    );
                }
                CellState::Failed { error } => {
                    let _ = write!(
                        s,
                        "<td title=\"{}\"><span class=\"failed\">failed</span><span class=\"ci\">{}</span></td>",
                        esc(error),
                        esc(&super::clip(error, 40))
                    );
                }
                CellState::Missing => {
                    s.push_str("<td><span class=\"muted\">not run</span></td>");
                }
            }
            if has_ratio(i) {
                match row.ratios.get(i).and_then(Option::as_ref) {
                    Some(r) => {
                        let _ = write!(s, "<td class=\"l\">{}</td>", ratio_text(r));
                    }
                    None => {
                        s.push_str("<td class=\"l\"><span class=\"muted\">\u{2014}</span></td>")
                    }
                }
            }
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table>");
}

/// Every fingerprint fact as (name, value per run), vulnerabilities one per row.
fn fingerprint_rows(fps: &[&Fingerprint]) -> Vec<(String, Vec<Option<String>>)> {
    type Getter = fn(&Fingerprint) -> Option<String>;
    let fields: [(&str, Getter); 24] = [
        ("hostname", |f| f.hostname.clone()),
        ("os", |f| f.os.clone()),
        ("kernel release", |f| f.kernel_release.clone()),
        ("kernel version", |f| f.kernel_version.clone()),
        ("kernel command line", |f| f.kernel_cmdline.clone()),
        ("architecture", |f| f.arch.clone()),
        ("cpu model", |f| f.cpu_model.clone()),
        ("cores", |f| f.cores.map(|v| v.to_string())),
        ("threads", |f| f.threads.map(|v| v.to_string())),
        ("memory", |f| {
            f.memory_bytes
                .map(|b| format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64))
        }),
        ("virtualization", |f| f.virtualization.clone()),
        ("clocksource", |f| f.clocksource.clone()),
        ("cpufreq governor", |f| f.cpufreq_governor.clone()),
        ("smt", |f| f.smt.clone()),
        ("transparent huge pages", |f| f.thp.clone()),
        ("cgroup version", |f| f.cgroup_version.clone()),
        ("cgroup cpu limit", |f| {
            f.cgroup_cpu_limit.map(|c| format!("{c} CPUs"))
        }),
        ("cgroup memory limit", |f| {
            f.cgroup_memory_limit_bytes
                .map(|b| format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64))
        }),
        ("load average (1, 5, 15 min)", |f| {
            f.loadavg.map(|[a, b, c]| format!("{a:.2}, {b:.2}, {c:.2}"))
        }),
        ("timer tick (CONFIG_HZ)", |f| f.hz.map(|h| h.to_string())),
        ("tick mode (nohz)", |f| f.nohz.clone()),
        ("microcode", |f| f.microcode.clone()),
        ("User/System split", crate::cpusplit::of),
        ("kernel config (hash)", |f| f.kernel_config_hash.clone()),
    ];
    let mut rows: Vec<(String, Vec<Option<String>>)> = fields
        .iter()
        .map(|(name, get)| (name.to_string(), fps.iter().map(|f| get(f)).collect()))
        .collect();
    map_rows(&mut rows, fps, "vulnerability: ", |f| &f.vulnerabilities);
    map_rows(&mut rows, fps, "sysctl ", |f| &f.sysctls);
    rows
}

/// A row per key of a map-valued fact (mitigations, sysctls), keys of every run, sorted.
fn map_rows(
    rows: &mut Vec<(String, Vec<Option<String>>)>,
    fps: &[&Fingerprint],
    prefix: &str,
    map: fn(&Fingerprint) -> &std::collections::BTreeMap<String, String>,
) {
    let names: std::collections::BTreeSet<&String> =
        fps.iter().flat_map(|f| map(f).keys()).collect();
    for n in names {
        rows.push((
            format!("{prefix}{n}"),
            fps.iter().map(|f| map(f).get(n).cloned()).collect(),
        ));
    }
}

/// How each run was made, side by side like the fingerprint.
fn parameter_rows(runs: &[Run]) -> Vec<(String, Vec<Option<String>>)> {
    type Getter = fn(&Run) -> Option<String>;
    let fields: [(&str, Getter); 10] = [
        ("sysperf version", |r| Some(r.sysperf_version.clone())),
        ("source", |r| Some(r.source.clone())),
        ("citation", |r| r.citation.clone()),
        ("measured trials per test", |r| {
            Some(r.params.trials.to_string())
        }),
        ("minimum trial time", |r| {
            Some(format!("{} s", r.params.min_time_s))
        }),
        ("quick", |r| Some(r.params.quick.to_string())),
        ("placement", |r| Some(r.params.placement.clone())),
        ("cpus", |r| {
            r.params.cpus.as_ref().map(|c| crate::units::format_list(c))
        }),
        ("trial timeout", |r| {
            Some(format!("{} s", r.params.timeout_s))
        }),
        ("timer / loop overhead subtracted", |r| {
            r.overhead.map(|o| {
                format!(
                    "{} ns per trial, {} ns per iteration",
                    num(o.timer_ns),
                    num(o.loop_ns_per_iteration)
                )
            })
        }),
    ];
    fields
        .iter()
        .map(|(name, get)| (name.to_string(), runs.iter().map(get).collect()))
        .collect()
}

/// Rows past which a list or table that says the same in every run is folded (`<details>`,
/// no script): a fingerprint has some 70 facts, most alike, and the page is read for what
/// differs.
pub const FOLD_ROWS: usize = 12;

/// A table of facts, one column per run: the facts that differ in the open, those the same
/// in every run (or, for one run, all of them) folded under a summary when there are more
/// than [`FOLD_ROWS`].
fn side_by_side(s: &mut String, cmp: &Comparison, rows: &[(String, Vec<Option<String>>)]) {
    let differs =
        |values: &Vec<Option<String>>| values.len() > 1 && values.windows(2).any(|w| w[0] != w[1]);
    let (open, same): (Vec<_>, Vec<_>) = rows.iter().cloned().partition(|(_, v)| differs(v));
    if same.len() <= FOLD_ROWS {
        return fact_table(s, cmp, rows);
    }
    if !open.is_empty() {
        fact_table(s, cmp, &open);
    }
    let _ = write!(
        s,
        "<details class=\"fold\"><summary>{} {} the same in every run</summary>",
        same.len(),
        if cmp.runs.len() > 1 {
            "facts,"
        } else {
            "facts of the machine,"
        }
    );
    fact_table(s, cmp, &same);
    s.push_str("</details>");
}

fn fact_table(s: &mut String, cmp: &Comparison, rows: &[(String, Vec<Option<String>>)]) {
    s.push_str("<table><thead><tr><th class=\"fp\">Fact</th>");
    for (i, h) in cmp.runs.iter().enumerate() {
        let _ = write!(
            s,
            "<th class=\"fp\">{}{}</th>",
            swatch(i),
            esc(&run_name(h))
        );
    }
    s.push_str("</tr></thead><tbody>");
    for (name, values) in rows {
        let differs = values.len() > 1 && values.windows(2).any(|w| w[0] != w[1]);
        let _ = write!(
            s,
            "<tr{}><th class=\"fp\">{}{}</th>",
            if differs { " class=\"diff\"" } else { "" },
            esc(name),
            if differs {
                "<span class=\"differs\">differs</span>"
            } else {
                ""
            }
        );
        for v in values {
            let _ = write!(s, "<td class=\"fp\">{}</td>", opt(v.clone()));
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table>");
}

/// Per-operation counters of observed runs, one row per test and run (the caller leaves the
/// section out when no run was observed).
fn counters(s: &mut String, cmp: &Comparison, rows: Vec<crate::report::compare::CounterRow>) {
    s.push_str("<table><thead><tr><th>Test</th><th>Run</th><th>context switches/op</th><th>migrations/op</th><th>page faults/op</th><th>interrupts/trial</th><th>cycles/op</th></tr></thead><tbody>");
    for r in rows {
        let name = cmp.runs.get(r.run).map(run_name).unwrap_or_default();
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&r.label),
            swatch(r.run),
            esc(&name),
            r.cells[0],
            r.cells[1],
            r.cells[2],
            r.cells[3],
            r.cells[4]
        );
    }
    s.push_str("</tbody></table>");
}

/// The stored kernel profiles, as `sysperf profile` prints them (the caller leaves the
/// section out when no run has any).
fn profiles_section(s: &mut String, cmp: &Comparison, profiles: &[Vec<Profile>]) {
    for (i, ps) in profiles.iter().enumerate() {
        let name = cmp.runs.get(i).map(run_name).unwrap_or_default();
        // One flame graph per run, its benchmarks side by side (static: no script).
        let refs: Vec<&Profile> = ps.iter().collect();
        let benches: Vec<&str> = ps.iter().map(|p| p.bench.as_str()).collect();
        let title = format!("Kernel profiles of {name}: {}", benches.join(", "));
        if let Ok(svg) = crate::report::flame::svg(&refs, &title, &format!("flame-{i}")) {
            let _ = write!(
                s,
                "<h3>{}{} flame graph</h3><figure id=\"figure-flame-{i}\" class=\"flame\">{}<figcaption>Flame graph of the folded kernel stacks: each box is a function, its width the share of the samples with it on the stack, the functions it called stacked above it; hover a box for its name and samples.</figcaption></figure>",
                swatch(i),
                esc(&name),
                crate::report::flame::inline(&svg)
            );
        }
        for p in ps {
            let _ = write!(
                s,
                "<h3>{}{}</h3><pre>{}</pre>",
                swatch(i),
                esc(&name),
                esc(&crate::report::profile::render(p, 15))
            );
        }
    }
}

/// The Explain section: for each run against the baseline, the tests compared slower or
/// faster explained from the profiles stored with both (`crate::explain`), each with its
/// differential flame graph. Empty (and not shown) when no such test has a profile on both
/// sides.
fn explain_section(runs: &[Run], cmp: &Comparison, profiles: &[Vec<Profile>]) -> String {
    use crate::explain::{self, Input, SideProfile, Source};
    let mut s = String::new();
    let Some(base) = runs.get(cmp.baseline) else {
        return s;
    };
    let side = |i: usize| -> Vec<SideProfile> {
        profiles
            .get(i)
            .into_iter()
            .flatten()
            .map(|p| SideProfile {
                profile: p.clone(),
                source: Source::Run {
                    run: runs[i].id.clone(),
                },
            })
            .collect()
    };
    let a = side(cmp.baseline);
    for (i, run) in runs.iter().enumerate() {
        if i == cmp.baseline {
            continue;
        }
        let none = Vec::new();
        let tests = explain::explainable(
            cmp,
            i,
            profiles.get(cmp.baseline).unwrap_or(&none),
            profiles.get(i).unwrap_or(&none),
        );
        let b = side(i);
        if tests.is_empty() {
            continue;
        }
        let e = explain::build(&Input {
            runs: [base, run],
            comparison: cmp,
            column: i,
            profiles: [&a, &b],
            traces: [&[], &[]],
            unmeasured: [None, None],
            tests: &tests,
        });
        fn find<'p>(ps: &'p [SideProfile], t: &str) -> Option<&'p Profile> {
            ps.iter().find(|p| p.profile.bench == t).map(|p| &p.profile)
        }
        let pairs: Vec<(String, &Profile, &Profile)> = tests
            .iter()
            .filter_map(|(t, _)| Some((t.clone(), find(&a, t)?, find(&b, t)?)))
            .collect();
        s.push_str(&crate::report::explain::html_section(&e, &pairs, i));
    }
    s
}

/// `sysperf explain --html`: a page of one explanation, B against A: each test's sentence,
/// tables and differential flame graph (`profiles`: (test, A's, B's) where both sides have
/// one), and what `--try-switches` found when it ran (#34; the report's Explain section is
/// made from stored profiles and has no switches to show).
pub fn explain_page(
    e: &crate::explain::Explanation,
    profiles: &[(String, &Profile, &Profile)],
) -> String {
    let mut s = String::with_capacity(64 * 1024);
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
         <title>sysperf explain: {} against {}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n\
         <header><h1>sysperf explain</h1></header>\n\
         <section id=\"explain\">\n<h2>Explain</h2>\n<p>Where the time per operation went, B against the baseline A: per call path and function, each difference with its 95% sampling interval; the method and its limits are in docs/explain.md.</p>\n{}\n<p>Method: {}.</p>\n</section>\n",
        esc(&e.b.id),
        esc(&e.a.id),
        crate::report::explain::html_section(e, profiles, 1),
        esc(&e.method)
    );
    let _ = write!(
        s,
        "<footer>Made by sysperf {}. Self-contained: this page loads nothing from anywhere.</footer>\n</main>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION")
    );
    s
}

/// The doctor's findings on each run's machine, warnings first, each with its fix.
fn findings(s: &mut String, cmp: &Comparison) {
    if cmp.findings.is_empty() {
        s.push_str("<p>No findings recorded for these runs.</p>");
        return;
    }
    let folded = cmp.findings.len() > FOLD_ROWS;
    if folded {
        let _ = write!(
            s,
            "<details class=\"fold\"><summary>{} findings</summary>",
            cmp.findings.len()
        );
    }
    s.push_str("<ul class=\"warn\">");
    for f in &cmp.findings {
        let i = cmp.runs.iter().position(|h| h.id == f.run).unwrap_or(0);
        let name = cmp.runs.get(i).map(run_name).unwrap_or_default();
        let x = &f.finding;
        let _ = write!(
            s,
            "<li>{}<span class=\"tag\">{}</span> <code>{}</code> <strong>{}</strong>: {} <em>Fix:</em> {}</li>",
            swatch(i),
            esc(&name),
            esc(x.severity.as_str()),
            esc(&x.title),
            esc(&x.detail),
            esc(&x.fix)
        );
    }
    s.push_str("</ul>");
    if folded {
        s.push_str("</details>");
    }
}

fn warnings(s: &mut String, cmp: &Comparison) {
    if cmp.warnings.is_empty() {
        s.push_str("<p>No warnings: no noisy trials, busy CPUs, stolen time or failures were detected.</p>");
        return;
    }
    s.push_str("<ul class=\"warn\">");
    for w in &cmp.warnings {
        let i = cmp.runs.iter().position(|h| h.id == w.run).unwrap_or(0);
        let name = cmp.runs.get(i).map(run_name).unwrap_or_default();
        let _ = write!(
            s,
            "<li>{}<span class=\"tag\">{}</span> <code>{}</code>{} {}</li>",
            swatch(i),
            esc(&name),
            esc(w.warning.kind.as_str()),
            w.warning
                .bench
                .as_ref()
                .map(|b| format!(" <span class=\"tag\">{}</span>", esc(b)))
                .unwrap_or_default(),
            esc(&w.warning.message)
        );
    }
    s.push_str("</ul>");
}

fn derived(s: &mut String, runs: &[Run], cmp: &Comparison) {
    if cmp.derived.is_empty() {
        s.push_str("<p>None: the runs lack the tests the derived figures need (csw and signocsw, an exec and its fork, the 1K env pairs, the paging tests).</p>");
        return;
    }
    s.push_str("<table><thead><tr><th class=\"l\">Figure</th><th class=\"l\">Unit</th>");
    for (i, h) in cmp.runs.iter().enumerate() {
        let _ = write!(s, "<th>{}{}</th>", swatch(i), esc(&run_name(h)));
    }
    s.push_str("<th class=\"l\">Formula, with each run's numbers</th></tr></thead><tbody>");
    for d in &cmp.derived {
        let _ = write!(
            s,
            "<tr><td class=\"l name\">{}</td><td class=\"l\">{}</td>",
            esc(&d.name),
            esc(&d.unit)
        );
        for (v, na) in d.values.iter().zip(&d.na) {
            match na {
                // A figure its inputs cannot support says so, and why, not a number.
                Some(why) => {
                    let _ = write!(
                        s,
                        "<td class=\"na\">n/a<span class=\"ci\">{}</span></td>",
                        esc(why)
                    );
                }
                None => {
                    let _ = write!(s, "<td>{}</td>", opt(v.map(num)));
                }
            }
        }
        s.push_str("<td class=\"formula\">");
        for (i, run) in runs.iter().enumerate() {
            if let Some(x) = run.derived.iter().find(|x| x.name == d.name) {
                let _ = write!(s, "<div>{}{}</div>", swatch(i), esc(&x.formula));
            }
        }
        s.push_str("</td></tr>");
    }
    s.push_str("</tbody></table>");
}

/// The suites' figures (`run --suite`), drawn from the runs' series, each with a table of its
/// points: y with its interval in the figure's unit, CPU use and page faults of the point's
/// benchmark; then what the suites noted about how they ran.
fn suites(s: &mut String, runs: &[Run]) {
    use super::series_svg::{figure_chart, figures};
    for fig in figures(runs) {
        let unit = fig.y_unit();
        let caption = if fig.papers.is_empty() {
            String::new()
        } else {
            format!(" Reproduces {}.", esc(&fig.papers.join("; ")))
        };
        let _ = write!(
            s,
            "<figure id=\"figure-{}\">\n{}<figcaption>Markers: median of the measured trials; bars: its confidence interval. Hollow markers on dashed lines: the paper's printed figures.{caption}</figcaption></figure>\n",
            esc(&fig.id),
            figure_chart(&fig).element()
        );
        // Rows: the categories in order, else every x of any curve, ascending.
        let rows: Vec<(f64, String)> = match fig.categories() {
            Some(c) => c,
            None => {
                let mut xs: Vec<(f64, Option<&str>)> = Vec::new();
                for p in fig.curves.iter().flat_map(|c| &c.points) {
                    if p.x.is_finite() && !xs.iter().any(|(x, _)| *x == p.x) {
                        xs.push((p.x, p.label.as_deref()));
                    }
                }
                xs.sort_by(|a, b| a.0.total_cmp(&b.0));
                xs.into_iter().map(|(x, l)| (x, fig.x_text(x, l))).collect()
            }
        };
        let _ = write!(
            s,
            "<table class=\"series\" style=\"margin-bottom:28px\"><thead><tr><th class=\"l\" rowspan=\"2\">{}</th>",
            esc(&fig.x_title())
        );
        for c in &fig.curves {
            let _ = write!(
                s,
                "<th class=\"l\" colspan=\"{}\">{}{}</th>",
                if c.is_paper() { 1 } else { 3 },
                swatch(c.style),
                esc(&c.name)
            );
        }
        s.push_str("</tr><tr>");
        for c in &fig.curves {
            if c.is_paper() {
                let _ = write!(s, "<th>{}</th>", esc(&unit.label));
            } else {
                let _ = write!(
                    s,
                    "<th>{} [CI]</th><th>CPU %</th><th>faults/op</th>",
                    esc(&unit.label)
                );
            }
        }
        s.push_str("</tr></thead><tbody>");
        for (x, label) in &rows {
            let _ = write!(s, "<tr><td class=\"l\">{}</td>", esc(label));
            for c in &fig.curves {
                let p = c.points.iter().find(|p| p.x == *x);
                let y = p.and_then(|p| p.y).map(|v| num(v / unit.factor));
                if c.is_paper() {
                    let _ = write!(s, "<td>{}</td>", opt(y));
                    continue;
                }
                let ci = p
                    .and_then(|p| p.ci)
                    .map(|[lo, hi]| {
                        format!(
                            "<span class=\"ci\">[{}, {}]</span>",
                            num(lo / unit.factor),
                            num(hi / unit.factor)
                        )
                    })
                    .unwrap_or_default();
                let _ = write!(
                    s,
                    "<td><span class=\"v\">{}</span>{ci}</td><td>{}</td><td>{}</td>",
                    opt(y),
                    opt(p.and_then(|p| p.cpu_pct).map(|v| format!("{v:.0}"))),
                    opt(p.and_then(|p| p.faults_per_op).map(num))
                );
            }
            s.push_str("</tr>");
        }
        s.push_str("</tbody></table>\n");
    }
    let notes: Vec<(usize, &String)> = runs
        .iter()
        .enumerate()
        .flat_map(|(i, r)| r.notes.iter().map(move |n| (i, n)))
        .collect();
    if !notes.is_empty() {
        s.push_str("<h3>Notes</h3><ul class=\"warn\">");
        for (i, note) in notes {
            let _ = write!(
                s,
                "<li>{}<span class=\"tag\">{}</span> {}</li>",
                swatch(i),
                esc(runs[i].label.as_deref().unwrap_or(&runs[i].id)),
                esc(note)
            );
        }
        s.push_str("</ul>");
    }
}

/// The Changes section: each change point of the fleet's histories (host, test, options), as
/// `sysperf changes` prints it.
fn changes_section(s: &mut String, c: &crate::changes::Changes) {
    open_section(s, "changes", Some("Changes"));
    let _ = writeln!(
        s,
        "<p>Change points in the {} histories (host, test, options) of the matching complete runs ({}), as <code>sysperf changes</code> finds them (docs/changes.md); {}. Ratio: the new level over the old; interval: {}.</p>",
        c.histories,
        esc(&crate::report::changes::searched(c)),
        esc(&crate::report::changes::false_alarms(c)),
        esc(crate::changepoint::RATIO_CI_COVERS)
    );
    if c.searched == 0 {
        s.push_str(
            "<p>Nothing searched: no history has the runs a change needs.</p>\n</section>\n",
        );
        return;
    }
    if c.changes.is_empty() {
        s.push_str("<p>No change found.</p>\n</section>\n");
        return;
    }
    s.push_str("<table><thead><tr><th>test</th><th>host</th><th>last run before</th><th>first run after</th><th>ratio [95%]</th><th>nearest fingerprint change</th></tr></thead><tbody>\n");
    for ch in &c.changes {
        let near = match &ch.nearest_difference {
            None => format!("none within {} runs", crate::changes::NEAREST_WITHIN),
            Some(n) => {
                let facts: Vec<String> = n
                    .differences
                    .iter()
                    .map(|d| {
                        format!(
                            "{}: {} \u{2192} {}",
                            esc(&d.field),
                            esc(d.shown(0)),
                            esc(d.shown(1))
                        )
                    })
                    .collect();
                format!(
                    "{} ({} run{} from the change)",
                    facts.join("; "),
                    n.runs_from_change,
                    if n.runs_from_change.abs() == 1 {
                        ""
                    } else {
                        "s"
                    }
                )
            }
        };
        let _ = writeln!(
            s,
            "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{} ({})</td><td>{} ({})</td><td>{} {} [{}, {}]</td><td>{}</td></tr>",
            if ch.ratio > 1.0 { "slower" } else { "faster" },
            esc(&crate::report::changes::test_name(ch)),
            esc(ch.host.as_deref().unwrap_or("?")),
            esc(&ch.before.id),
            utc(ch.before.started_ns),
            esc(&ch.after.id),
            utc(ch.after.started_ns),
            if ch.ratio > 1.0 { "\u{25b2} slower" } else { "\u{25bc} faster" },
            num(ch.ratio),
            num(ch.ratio_ci[0]),
            num(ch.ratio_ci[1]),
            match (ch.wanders, ch.residual_lag1) {
                (true, Some(r)) => format!(
                    "{near}; the history's level also wanders (lag-1 autocorrelation {r:.2}): this may be that wander, not a step"
                ),
                _ => near,
            }
        );
    }
    s.push_str("</tbody></table>\n</section>\n");
}

/// The whole report as one HTML document. `cmp` must be `compare::build` of `runs`;
/// `profiles[i]` holds the kernel profiles stored with `runs[i]` (`run --profile`), if any.
pub fn html(runs: &[Run], cmp: &Comparison, profiles: &[Vec<Profile>]) -> String {
    html_by(runs, cmp, profiles, None)
}

/// [`html`] of a fleet comparison grouped `--by KEY` (`by`: the key): an Evolution section
/// after the comparison draws its heat map (`report::heatmap`), one column per group.
pub fn html_by(
    runs: &[Run],
    cmp: &Comparison,
    profiles: &[Vec<Profile>],
    by: Option<&str>,
) -> String {
    html_fleet(runs, cmp, profiles, by, None, &[])
}

/// [`html_by`] with a Changes section after the Evolution one: the change points of the
/// histories of the fleet's runs (`sysperf changes` of the same `--where`), when given, and
/// the heat map's cells where one began (`marked`: test and column, `changes::marks`).
pub fn html_fleet(
    runs: &[Run],
    cmp: &Comparison,
    profiles: &[Vec<Profile>],
    by: Option<&str>,
    changes: Option<&crate::changes::Changes>,
    marked: &[(String, usize)],
) -> String {
    // Counters and profiles, and their links, only when some run has them: most runs are
    // neither observed nor profiled, and an empty section says nothing.
    let counter_rows = crate::report::compare::counter_rows(cmp);
    let has_profiles = profiles.iter().any(|p| !p.is_empty());
    let explained = if has_profiles {
        explain_section(runs, cmp, profiles)
    } else {
        String::new()
    };
    let shown = Shown {
        evolution: by.is_some() && crate::report::heatmap::chart(cmp).is_some(),
        changes: changes.is_some(),
        // The Suites section and its link appear only for runs of `run --suite`.
        suites: runs.iter().any(|r| !r.series.is_empty()),
        counters: !counter_rows.is_empty(),
        explain: !explained.is_empty(),
        profiles: has_profiles,
    };
    let mut s = String::with_capacity(64 * 1024);
    page_top(&mut s, cmp, &shown);
    section(&mut s, "summary", None, |s| {
        summary(s, runs, cmp);
        s.push_str("<h3>Runs</h3>");
        runs_table(s, runs, cmp);
    });
    section(&mut s, "comparison", Some("Comparison"), |s| {
        comparison_table(s, cmp)
    });
    if let (Some(key), Some(map)) = (by, crate::report::heatmap::chart_marked(cmp, marked)) {
        evolution_section(&mut s, key, &map, !marked.is_empty());
    }
    if let Some(c) = changes {
        changes_section(&mut s, c);
    }
    charts_section(&mut s, cmp);
    paging_section(&mut s, cmp);
    if shown.suites {
        open_section(&mut s, "suites", Some("Suites"));
        s.push_str("<p>The suites' sweeps (<code>sysperf run --suite</code>) drawn as the papers' figures, one curve per run and series, each with its points below it.</p>\n");
        suites(&mut s, runs);
        s.push_str("</section>\n");
    }
    section(&mut s, "fingerprints", Some("Fingerprints"), |s| {
        fingerprints(s, runs, cmp)
    });
    section(&mut s, "warnings", Some("Warnings"), |s| warnings(s, cmp));
    if shown.counters {
        section(&mut s, "counters", Some("Counters"), |s| {
            s.push_str("<p>What <code>sysperf run --observe</code> counted: context switches, migrations and page faults per operation from perf counters on the worker and its children (taken in the warm-up trial, since they slow the work they count, or in every trial of a <code>--quick</code> run, which has none), interrupts per trial system-wide.</p>\n");
            counters(s, cmp, counter_rows);
        });
    }
    if shown.explain {
        section(&mut s, "explain", Some("Explain"), |s| {
            let _ = write!(
                s,
                "<p>Why the tests compared slower or faster moved, from the kernel profiles stored with both runs (<code>sysperf explain</code>): time per operation per call path and function, B against the baseline A, each difference with its 95% sampling interval; the method and its limits are in docs/explain.md.</p>\n{explained}"
            );
        });
    }
    if shown.profiles {
        section(&mut s, "profiles", Some("Kernel profiles"), |s| {
            profiles_section(s, cmp, profiles)
        });
    }
    section(&mut s, "doctor", Some("Doctor"), |s| {
        s.push_str("<p>What <code>sysperf doctor</code> found on each machine when its run was made: settings and activity that make results noisy or not comparable.</p>\n");
        findings(s, cmp);
    });
    section(&mut s, "derived", Some("Derived figures"), |s| {
        derived(s, runs, cmp)
    });
    page_bottom(&mut s, cmp);
    s
}

/// The optional sections a page has, each with its link in the table of contents.
struct Shown {
    evolution: bool,
    changes: bool,
    suites: bool,
    counters: bool,
    explain: bool,
    profiles: bool,
}

/// A section's opening tag and, when it has one, its heading: one form for every section of
/// the page, so that the table of contents' links find them.
fn open_section(s: &mut String, id: &str, heading: Option<&str>) {
    let _ = writeln!(s, "<section id=\"{id}\">");
    if let Some(h) = heading {
        let _ = writeln!(s, "<h2>{h}</h2>");
    }
}

/// A whole section: its opening, what `body` writes, and its end on a line of its own.
fn section(s: &mut String, id: &str, heading: Option<&str>, body: impl FnOnce(&mut String)) {
    open_section(s, id, heading);
    body(s);
    s.push_str("\n</section>\n");
}

/// The document's head (title, inline style, the policy that forbids every fetch), the
/// page's header, and the table of contents with a link to each section it has.
fn page_top(s: &mut String, cmp: &Comparison, shown: &Shown) {
    let names: Vec<String> = cmp.runs.iter().map(run_name).collect();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
         <title>sysperf report: {}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n",
        esc(&names.join(" vs "))
    );
    let link = |on: bool, id: &str, text: &str| {
        if on {
            format!("<a href=\"#{id}\">{text}</a>")
        } else {
            String::new()
        }
    };
    let _ = write!(
        s,
        "<header><h1>sysperf report</h1><p>{} run{} compared{}, by the method of Leffler, Karels and McKusick's 4.2BSD measurements (1984).</p>\n\
         </header>\n<nav class=\"toc\"><a href=\"#comparison\">Comparison</a>{}{}<a href=\"#charts\">Charts</a><a href=\"#paging\">Paging</a>{}<a href=\"#fingerprints\">Fingerprints</a><a href=\"#warnings\">Warnings</a><a href=\"#doctor\">Doctor</a>{}{}{}<a href=\"#derived\">Derived figures</a><a href=\"#method\">Method</a></nav>\n",
        cmp.runs.len(),
        if cmp.runs.len() == 1 { "" } else { "s" },
        cmp.runs
            .get(cmp.baseline)
            .filter(|_| cmp.runs.len() > 1)
            .map(|h| format!(" against the baseline {}", esc(&run_name(h))))
            .unwrap_or_default(),
        link(shown.evolution, "evolution", "Evolution"),
        link(shown.changes, "changes", "Changes"),
        link(shown.suites, "suites", "Suites"),
        link(shown.counters, "counters", "Counters"),
        link(shown.explain, "explain", "Explain"),
        link(shown.profiles, "profiles", "Profiles"),
    );
}

/// The Evolution section of a report grouped `--by key`: the heat map, one column per group.
fn evolution_section(s: &mut String, key: &str, map: &svg::Svg, marked: bool) {
    let _ = write!(
        s,
        "<section id=\"evolution\">\n<h2>Evolution</h2>\n<p>One column per {}, {}; each cell is the test's time per operation against the first column, as LEBench's figure of Linux's core operations across kernels.</p>\n<figure id=\"figure-{}\">\n{}<figcaption>Red: slower, blue: faster than the first column (full colour at 2x); \u{25b2}/\u{25bc}: a significant verdict{}.</figcaption></figure>\n</section>\n",
        esc(key),
        if key == "kernel" { "ordered by version" } else { "in order" },
        crate::report::heatmap::FIGURE_ID,
        map.element(),
        if marked {
            "; \u{25c6} outlined: a change point (see Changes) began in the column's runs"
        } else {
            ""
        }
    );
}

/// The Charts section: a bar chart per group of tests the comparison has.
fn charts_section(s: &mut String, cmp: &Comparison) {
    open_section(s, "charts", Some("Charts"));
    let mut any = false;
    for g in svg::groups() {
        if let Some(chart) = svg::group_chart(cmp, g) {
            any = true;
            let _ = write!(
                s,
                "<figure>\n{}<figcaption>Bars: median per operation; whiskers: its interval, at the level the axis names (published runs have none). \u{25b2}/\u{25bc}: significantly slower/faster than the baseline.</figcaption></figure>\n",
                chart.element()
            );
        }
    }
    if !any {
        s.push_str("<p>No test results to chart.</p>");
    }
    s.push_str("</section>\n");
}

/// The Paging section: the paper's paging figure, or how to get the tests it needs.
fn paging_section(s: &mut String, cmp: &Comparison) {
    open_section(s, "paging", Some("Paging figure"));
    match svg::paging_figure(cmp) {
        Some(fig) => {
            let _ = write!(
                s,
                "<figure>\n{}<figcaption>Time and page faults for one run of the paper's program (30,000 touches of 7500 pages) against the standard deviation of the Gaussian walk, as in Tables 6 and 7; 'inf' is the run script's 10,000 pages, placed past the break. Whiskers: the interval of the time's median, at the level its trials allow.</figcaption></figure>\n",
                fig.element()
            );
        }
        None => s.push_str("<p>The runs have no gausspage tests; run <code>sysperf run 'gausspage*'</code> to draw this figure.</p>"),
    }
    s.push_str("</section>\n");
}

/// The Fingerprints section's body: the machines' facts and the runs' parameters side by
/// side, with a word on how many facts differ.
fn fingerprints(s: &mut String, runs: &[Run], cmp: &Comparison) {
    if cmp.fingerprint_diffs.is_empty() || cmp.runs.len() < 2 {
        s.push_str("<p>The machines' recorded facts, side by side.</p>");
    } else {
        let _ = write!(
            s,
            "<p class=\"alert\">{} between the runs (highlighted): differences may explain the ratios.</p>",
            if cmp.fingerprint_diffs.len() == 1 {
                "1 fact differs".to_string()
            } else {
                format!("{} facts differ", cmp.fingerprint_diffs.len())
            }
        );
    }
    let fps: Vec<&Fingerprint> = runs.iter().map(|r| &r.fingerprint).collect();
    side_by_side(s, cmp, &fingerprint_rows(&fps));
    s.push_str("<h3>How the runs were made</h3>");
    side_by_side(s, cmp, &parameter_rows(runs));
}

/// The Method section and the footer, which end the page.
fn page_bottom(s: &mut String, cmp: &Comparison) {
    let _ = write!(
        s,
        "<section id=\"method\">\n<h2>Method</h2>\n<ul class=\"warn\">\
         <li>Each test runs in its own worker process; iterations grow until a trial lasts the minimum trial time, then come the measured trials. Figures are medians over those trials of wall time per operation, after the timer and loop overhead are subtracted.</li>\
         <li>The interval of a median is distribution-free (from order statistics): 95% with 6 or more trials; with 5 it is [min, max] at 93.75%.</li>\
         <li>Verdicts: {}.</li>\
         <li>Published runs are figures copied from a paper's table: no trials, so no intervals and no whiskers.</li>\
         </ul>\n</section>\n",
        esc(&cmp.method)
    );
    let _ = write!(
        s,
        "<footer>Made by sysperf {}. Self-contained: this page loads nothing from anywhere.</footer>\n</main>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hostile_pair() -> (Vec<Run>, Comparison) {
        let mut base = crate::report::fixture_run();
        base.fingerprint.hostname = Some("<script>alert(1)</script>".into());
        base.fingerprint
            .vulnerabilities
            .insert("spectre_v2".into(), "Mitigation: Retpolines".into());
        let mut slow = crate::report::fixture_slower(&base);
        slow.label = Some("\"quotes\" & ampersands".into());
        slow.fingerprint.kernel_release = Some("6.19.0".into());
        slow.warnings.push(crate::model::Warning {
            bench: Some("<b>syscall</b>".into()),
            kind: "busy_cpu".into(),
            message: "<img src=x onerror=alert(2)> used the CPU".into(),
        });
        let runs = vec![base, slow];
        let cmp = crate::report::fixture_compare(&runs, 0, 2.0);
        (runs, cmp)
    }

    #[test]
    fn html_snapshot() {
        let (runs, cmp) = hostile_pair();
        insta::assert_snapshot!(html(&runs, &cmp, &[]));
    }

    #[test]
    fn counters_and_profiles_appear_only_when_a_run_has_them() {
        let (runs, cmp) = hostile_pair();
        let page = html(&runs, &cmp, &[]);
        for id in ["counters", "profiles"] {
            assert!(
                !page.contains(&format!("id=\"{id}\"")),
                "empty {id} section"
            );
            assert!(
                !page.contains(&format!("href=\"#{id}\"")),
                "link to empty {id}"
            );
        }
        let mut observed = runs.clone();
        if let Some(sum) = &mut observed[0].results[0].summary {
            sum.counters = Some(crate::model::CounterSummary {
                trials: 5,
                perf_trials: 1,
                task_clock_ns_per_op: Some(100.0),
                context_switches_per_op: Some(0.001),
                cpu_migrations_per_op: None,
                page_faults_per_op: None,
                cycles_per_op: None,
                instructions_per_op: None,
                interrupts_per_trial: 6.0,
                interrupts_per_op: 0.0001,
                softirqs_per_trial: 3.0,
                interrupts_on_trial_cpus_per_trial: None,
                disk_ios_per_trial: 0.0,
            });
        }
        let cmp = crate::report::fixture_compare(&observed, 0, 2.0);
        let profiles = vec![vec![crate::report::profile::tests::fixture()], vec![]];
        let page = html(&observed, &cmp, &profiles);
        for id in ["counters", "profiles"] {
            assert!(
                page.contains(&format!("<section id=\"{id}\">")),
                "{id} section"
            );
            assert!(page.contains(&format!("href=\"#{id}\"")), "link to {id}");
        }
        // The profiled run's flame graph, inline and static; none for the other run.
        assert!(page.contains("<figure id=\"figure-flame-0\""));
        assert!(page.contains("<svg id=\"flame-0\""));
        assert!(!page.contains("figure-flame-1"));
        assert!(!page.contains("<script") && !page.contains("url("));
        assert!(!page.contains("<?xml"));
    }

    #[test]
    fn a_test_profiled_on_both_sides_is_explained_with_a_differential_flame_graph() {
        let (a, b, pa, pb) = crate::explain::tests::fixture_profiled();
        let runs = vec![a, b];
        let cmp = crate::report::fixture_compare(&runs, 0, 2.0);
        let page = html(&runs, &cmp, &[vec![pa.clone()], vec![pb.clone()]]);
        assert!(
            page.contains("<section id=\"explain\">"),
            "no explain section"
        );
        assert!(page.contains("href=\"#explain\""));
        // The syscall test, slower, explained against the baseline (column 1).
        assert!(
            page.contains("<figure id=\"figure-diff-flame-1-0\""),
            "no differential flame graph"
        );
        assert!(page.contains("<svg id=\"diff-flame-1-0\""));
        assert!(page.contains("<code>__seccomp_filter</code>"));
        assert!(page.contains("syscall 1.20x slower"));
        assert!(!page.contains("<script"));
        // A profile on one side only explains nothing here: no section, no link.
        let page = html(&runs, &cmp, &[vec![pa], vec![]]);
        assert!(!page.contains("id=\"explain\"") && !page.contains("href=\"#explain\""));
    }

    #[test]
    fn a_hostile_frame_name_in_a_flame_graph_is_text() {
        let (runs, cmp) = hostile_pair();
        let mut p = crate::report::profile::tests::fixture();
        p.stacks
            .insert("[user] <script>alert(1)</script>".into(), 100);
        let page = html(&runs, &cmp, &[vec![p], vec![]]);
        assert!(page.contains("figure-flame-0"));
        assert!(!page.contains("<script"), "raw script tag in the page");
    }

    #[test]
    fn every_machine_string_is_escaped() {
        let (runs, cmp) = hostile_pair();
        let page = html(&runs, &cmp, &[]);
        assert!(!page.contains("<script"), "raw script tag in the page");
        assert!(!page.contains("<img"), "raw img tag in the page");
        assert!(!page.contains("<b>syscall"));
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(page.contains("&quot;quotes&quot; &amp; ampersands"));
        assert!(page.contains("&lt;img src=x onerror=alert(2)&gt;"));
        // The fixture's own label, "before <patch>", too.
        assert!(page.contains("before &lt;patch&gt;") && !page.contains("<patch>"));
    }

    #[test]
    fn regressions_lead_and_the_page_is_self_contained() {
        let (runs, cmp) = hostile_pair();
        let page = html(&runs, &cmp, &[]);
        let banner = page.find("1 regression<").expect("regression banner");
        assert!(banner < page.find("<table").unwrap(), "before any table");
        assert!(page[banner..].contains("syscall"));
        assert!(page.contains("class=\"diff\""), "kernel differs");
        for remote in ["http://", "https://", "@import", "url(", "<script", "<link"] {
            assert!(!page.contains(remote), "{remote}");
        }
        assert!(
            page.matches("<svg").count() >= 3,
            "kernel charts and paging bars"
        );
    }

    #[test]
    fn suites_draw_each_figure_with_its_table_and_notes() {
        let plain = crate::report::fixture_run();
        let runs = vec![plain.clone(), crate::report::fixture_series_run()];
        let cmp = crate::report::fixture_compare(&runs, 0, 2.0);
        let page = html(&runs, &cmp, &[]);
        let at = page
            .find("<section id=\"suites\">")
            .expect("Suites section");
        let section = &page[at..at + page[at..].find("</section>").unwrap()];
        assert!(page.contains("<a href=\"#suites\">Suites</a>"));
        // The throughput figure: two measured curves and two paper ones, 7 + 7 + 4 + 4 points;
        // the categorical one: one measured and one paper curve of two points each.
        let figures: Vec<&str> = section.split("<figure ").skip(1).collect();
        assert_eq!(figures.len(), 2);
        assert_eq!(figures[0].matches("<g class=\"curve\"").count(), 4);
        assert_eq!(figures[0].matches("<g class=\"point\"").count(), 22);
        assert_eq!(figures[1].matches("<g class=\"curve\"").count(), 2);
        assert_eq!(figures[1].matches("<g class=\"point\"").count(), 4);
        // Tables: 7 block sizes plus the paper's 4096 (no measured point there); 2 modes.
        let tables: Vec<&str> = section.split("<table class=\"series\"").skip(1).collect();
        assert_eq!(tables.len(), 2);
        assert_eq!(tables[0].matches("<tr><td").count(), 8);
        assert!(tables[0].contains(">1M</td>") && tables[0].contains(">4K</td>"));
        assert!(tables[1].contains(">cooked</td>") && tables[1].contains(">raw</td>"));
        // pipe at 2 bytes: 0.800 MB/s; CPU (0.1 + 0.8) of the wall time.
        assert!(
            tables[0].contains("<span class=\"v\">0.800</span>"),
            "{}",
            tables[0]
        );
        assert!(tables[0].contains("<td>90</td>"));
        // Notes of the runs, escaped.
        assert!(section.contains("&lt;cooked&gt; is OPOST|ONLCR"));
        assert!(section.contains("suites &lt;fixture&gt;") && !section.contains("<fixture>"));
        // A report of runs without series has no Suites section at all.
        let one = crate::report::fixture_compare(std::slice::from_ref(&plain), 0, 2.0);
        let page = html(std::slice::from_ref(&plain), &one, &[]);
        assert!(!page.contains("id=\"suites\"") && !page.contains("#suites"));
    }

    #[test]
    fn nothing_unjudged_looks_judged() {
        // #42 item 5: two single runs with no run-to-run variance known: every row is
        // noise_unknown. No green "No regressions" box, the heat map greys the cells, and the
        // gate names the suites' points too.
        let (a, mut b) = (crate::report::fixture_run(), crate::report::fixture_run());
        b.id = "b0000000042b".into();
        b.started_ns += 3_600_000_000_000;
        let runs = vec![a, b];
        let cmp = crate::compare::build(&runs, 0, 2.0);
        assert!(cmp.rows.iter().all(|r| r.ratios[1]
            .as_ref()
            .is_none_or(|x| !x.verdict.is_change() && x.verdict != Verdict::NoChange)));
        let page = html(&runs, &cmp, &[]);
        assert!(page.contains("<h2>No verdict</h2>"), "no-verdict banner");
        assert!(!page.contains("No regressions"), "no green box");
        let map = crate::report::heatmap::chart(&cmp).unwrap().element();
        assert!(map.contains("fill=\"#E4E7EC\""), "grey cells: {map}");
        // The suites' points: a point with no verdict is named by the gate, as a test is.
        let base = crate::report::fixture_suites_run();
        let mut other = base.clone();
        other.id = "b0000000042c".into();
        other.started_ns += 3_600_000_000_000;
        let cmp = crate::compare::build(&[base, other], 0, 2.0);
        let points: Vec<_> = crate::compare::unjudged(&cmp)
            .into_iter()
            .filter(|u| u.test.contains('@'))
            .collect();
        assert!(!points.is_empty(), "the gate names unjudged suite points");
    }

    #[test]
    fn a_single_run_reports_without_verdicts() {
        let run = crate::report::fixture_run();
        let cmp = crate::report::fixture_compare(std::slice::from_ref(&run), 0, 2.0);
        let page = html(std::slice::from_ref(&run), &cmp, &[]);
        assert!(page.contains("One run"));
        assert!(!page.contains("vs baseline"));
        assert!(!page.contains("class=\"diff\""));
    }
}
