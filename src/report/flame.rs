//! Flame graphs of kernel profiles: the folded stacks a [`Profile`] keeps, drawn by the
//! `inferno` crate (Brendan Gregg's flamegraph.pl in Rust), made static.
//!
//! inferno's SVG is interactive: a script (zoom, search) run from an `onload` handler, a
//! gradient background referenced with `url(#background)`, a style sheet with global selectors
//! (`text {...}`), and ids (`title`, `frames`) that would collide when two graphs share a page.
//! The HTML report carries no script and no `url(` (docs/report.md), so sysperf asks inferno
//! for no JavaScript and removes what is left of it: the script element, the handler, the
//! zoom/search controls that need it, the gradient (a plain fill instead); the style sheet is
//! scoped to the graph's own id. What stays is plain SVG: a rectangle and a label per frame,
//! each with a `<title>` that any browser shows on hover (function, samples, share). Pure:
//! profiles in, text out.

use crate::profile::Profile;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum FlameError {
    #[error("the profiles have no samples to draw")]
    Empty,
    #[error("drawing the flame graph: {0}")]
    Draw(String),
}

impl crate::error::Exit for FlameError {
    fn exit_code(&self) -> i32 {
        crate::exit::FAILURE
    }
}

/// The flame graph of `profiles` as a standalone, static SVG document, its element ids
/// prefixed with `id` (unique in a page). With several profiles each stack is rooted at its
/// benchmark's name, so they stand side by side.
pub fn svg(profiles: &[&Profile], title: &str, id: &str) -> Result<String, FlameError> {
    let several = profiles.len() > 1;
    let lines: Vec<String> = profiles
        .iter()
        .flat_map(|p| {
            p.stacks.iter().filter(|(_, n)| **n > 0).map(move |(s, n)| {
                // inferno splits a line at its last space: a frame with spaces stays whole.
                // It escapes markup itself; the invisible characters are marked here.
                let s = crate::term::visible(s);
                if several {
                    format!("{};{s} {n}", crate::term::visible(&p.bench))
                } else {
                    format!("{s} {n}")
                }
            })
        })
        .collect();
    if lines.is_empty() {
        return Err(FlameError::Empty);
    }
    draw(title, None, "samples", &lines, id)
}

/// Folded `lines` drawn by inferno as a static graph scoped to `id`, with `count_name` as the
/// unit of its counts.
fn draw(
    title: &str,
    subtitle: Option<&str>,
    count_name: &str,
    lines: &[String],
    id: &str,
) -> Result<String, FlameError> {
    let mut opt = inferno::flamegraph::Options::default();
    opt.title = crate::term::visible(title).into_owned();
    opt.subtitle = subtitle.map(str::to_string);
    opt.count_name = count_name.into();
    opt.name_type = "Kernel function:".into();
    opt.no_javascript = true;
    // The same stacks always give the same picture (colours from the names, not random).
    opt.hash = true;
    opt.deterministic = true;
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut opt, lines.iter().map(String::as_str), &mut out)
        .map_err(|e| FlameError::Draw(e.to_string()))?;
    let raw = String::from_utf8(out).map_err(|e| FlameError::Draw(e.to_string()))?;
    Ok(make_static(&raw, id))
}

/// Picoseconds of CPU per operation that `samples` samples of `p` stand for: the unit of a
/// differential flame graph, so that its widths and colours are time per operation, never
/// shares (inferno's differential mode takes integer counts).
fn ps_per_op(p: &Profile, samples: u64) -> u64 {
    (samples as f64 * p.sample_period_ns as f64 * 1000.0 / p.operations.max(1) as f64).round()
        as u64
}

/// The differential flame graph of `b` against `a` (Gregg's, 2014, as inferno draws it): B's
/// stacks, each box as wide as B's CPU time per operation in the function and what it called,
/// red where B spends more time per operation than A and blue where less. Both sides are put
/// in picoseconds per operation first: inferno's own `normalize` would scale A's samples to
/// B's total, which compares shares (the trap of the 4.2BSD paper's Tables 9 and 10), and raw
/// samples would compare trials of different lengths. Static and scoped to `id` as [`svg`].
pub fn differential(a: &Profile, b: &Profile, title: &str, id: &str) -> Result<String, FlameError> {
    let mut stacks: std::collections::BTreeMap<&str, [u64; 2]> = Default::default();
    for (side, p) in [a, b].into_iter().enumerate() {
        for (s, &n) in &p.stacks {
            stacks.entry(s.as_str()).or_default()[side] += ps_per_op(p, n);
        }
    }
    let lines: Vec<String> = stacks
        .iter()
        .filter(|(_, c)| c[0] > 0 || c[1] > 0)
        .map(|(s, c)| format!("{} {} {}", crate::term::visible(s), c[0], c[1]))
        .collect();
    if stacks.values().all(|c| c[1] == 0) {
        return Err(FlameError::Empty);
    }
    draw(
        title,
        Some("red: more time per operation in B than in A; blue: less"),
        "ps per op",
        &lines,
        id,
    )
}

/// Removes the element that starts with `open` (up to `close`, inclusive), if present.
fn cut(s: &mut String, open: &str, close: &str) {
    if let Some(a) = s.find(open) {
        if let Some(len) = s[a..].find(close) {
            s.replace_range(a..a + len + close.len(), "");
        }
    }
}

/// inferno's interactive SVG made static and scoped to `id` (see the module documentation).
pub fn make_static(raw: &str, id: &str) -> String {
    let mut s = raw.to_string();
    cut(&mut s, "<script", "</script>");
    cut(&mut s, "<defs>", "</defs>");
    cut(&mut s, "<style", "</style>");
    for control in ["unzoom", "search", "matched", "details"] {
        cut(&mut s, &format!("<text id=\"{control}\""), "</text>");
    }
    let s = s
        .replace(" onload=\"init(evt)\"", "")
        .replace("fill=\"url(#background)\"", "fill=\"#f4f4ec\"")
        .replace("id=\"title\"", &format!("id=\"{id}-title\""))
        .replace("id=\"subtitle\"", &format!("id=\"{id}-subtitle\""))
        .replace("id=\"frames\"", &format!("id=\"{id}-frames\""));
    let style = format!(
        "<style type=\"text/css\">#{id} text {{ font-family:monospace; font-size:12px }} \
         #{id}-title {{ text-anchor:middle; font-size:17px }} \
         #{id}-subtitle {{ text-anchor:middle }} \
         #{id}-frames > g:hover > rect {{ stroke:black; stroke-width:0.5 }}</style>"
    );
    // The outer element gets the id and the scoped style sheet.
    match s.find("<svg ") {
        Some(at) => {
            let end = at + s[at..].find('>').unwrap_or(0) + 1;
            format!(
                "{}<svg id=\"{id}\" {}{style}{}",
                &s[..at],
                &s[at + 5..end],
                &s[end..]
            )
        }
        None => s,
    }
}

/// The SVG element alone (no XML declaration or DOCTYPE), to sit inline in an HTML page.
pub fn inline(svg: &str) -> &str {
    svg.find("<svg").map_or(svg, |at| &svg[at..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::profile::tests::fixture;

    #[test]
    fn invisible_characters_in_frames_and_titles_are_marked() {
        let mut p = fixture();
        p.stacks.insert("[user] adm\u{200b}in".into(), 2500);
        p.bench = "sys\u{202e}call".into();
        let svg = svg(&[&p, &fixture()], "Profile of x\u{feff}", "flame-0").unwrap();
        assert!(
            !svg.chars().any(crate::term::deceptive),
            "a raw invisible character in the flame graph"
        );
        for marked in [r"adm\u{200b}in", r"sys\u{202e}call", r"x\u{feff}"] {
            assert!(svg.contains(marked), "{marked}");
        }
    }

    #[test]
    fn a_static_flame_graph_of_the_folded_stacks() {
        let p = fixture();
        let svg = svg(&[&p], "Kernel profile of syscall", "flame-0").unwrap();
        for banned in [
            "<script",
            "onload",
            "url(",
            "init(evt)",
            "Reset Zoom",
            "Search",
        ] {
            assert!(!svg.contains(banned), "{banned} in the flame graph");
        }
        assert!(svg.contains("<svg id=\"flame-0\""));
        assert!(svg.contains("id=\"flame-0-frames\""));
        assert!(svg.contains("#flame-0 text"));
        // Every frame is a rectangle with its function and samples on hover.
        assert!(svg.contains("<title>__x64_sys_getpid (2,500 samples, 50.00%)</title>"));
        assert!(svg.contains("Kernel profile of syscall"));
        assert!(inline(&svg).starts_with("<svg id=\"flame-0\""));
        // The same stacks give the same bytes.
        assert_eq!(
            svg,
            super::svg(&[&p], "Kernel profile of syscall", "flame-0").unwrap()
        );
    }

    #[test]
    fn several_profiles_stand_side_by_side_under_their_names() {
        let a = fixture();
        let mut b = fixture();
        b.bench = "pipeback4".into();
        let svg = svg(&[&a, &b], "two", "f").unwrap();
        assert!(
            svg.contains("<title>syscall (5,000 samples, 50.00%)</title>"),
            "{svg}"
        );
        assert!(svg.contains("<title>pipeback4 (5,000 samples, 50.00%)</title>"));
    }

    #[test]
    fn a_differential_flame_graph_is_red_where_b_spends_more_per_operation() {
        let a = fixture();
        let mut b = fixture();
        // B runs twice the operations with the same samples, plus a new stack: per operation,
        // everything A had halved (blue) and the new stack grew (red).
        b.operations *= 2;
        b.stacks.insert(
            "entry_SYSCALL_64_after_hwframe;do_syscall_64;__seccomp_filter".into(),
            3000,
        );
        b.samples += 3000;
        let svg = differential(&a, &b, "syscall: B against A", "diff-0").unwrap();
        for banned in ["<script", "onload", "url(", "Search"] {
            assert!(!svg.contains(banned), "{banned}");
        }
        assert!(svg.contains("<svg id=\"diff-0\""));
        assert!(svg.contains("ps per op"), "the unit is time per operation");
        // __seccomp_filter: 3000 samples x 200,033 ns / 18,000,000 operations = 33,339 ps.
        let at = svg
            .find("<title>__seccomp_filter (")
            .expect("the new function drawn");
        assert!(
            svg[at..].starts_with("<title>__seccomp_filter (33,339 ps per op"),
            "{}",
            &svg[at..at + 80]
        );
        // inferno colours a grown frame rgb(255,c,c) and a shrunk one rgb(c,c,255).
        let fill = |name: &str| {
            let g = svg.find(&format!("<title>{name} (")).unwrap();
            let f = g + svg[g..].find("fill=\"").unwrap() + 6;
            svg[f..f + svg[f..].find('"').unwrap()].to_string()
        };
        assert!(
            fill("__seccomp_filter").starts_with("rgb(255,"),
            "{}",
            fill("__seccomp_filter")
        );
        assert!(
            fill("__task_pid_nr_ns").ends_with(",255)"),
            "{}",
            fill("__task_pid_nr_ns")
        );
        // The same profiles give the same bytes.
        assert_eq!(
            svg,
            differential(&a, &b, "syscall: B against A", "diff-0").unwrap()
        );
        let mut empty = fixture();
        empty.stacks.clear();
        assert!(matches!(
            differential(&a, &empty, "t", "f"),
            Err(FlameError::Empty)
        ));
    }

    #[test]
    fn an_empty_profile_has_nothing_to_draw() {
        let mut p = fixture();
        p.stacks.clear();
        assert!(matches!(svg(&[&p], "t", "f"), Err(FlameError::Empty)));
        assert!(matches!(svg(&[], "t", "f"), Err(FlameError::Empty)));
    }
}
