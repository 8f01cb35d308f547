//! The evolution heat map (#19 item 5), as LEBench's figure draws Linux's core operations
//! across kernel releases: one row per test, one column per run or group of runs (with
//! `compare --by kernel`, one per kernel release in version order), each cell the slowdown of
//! the column against the first (the ratio of time per operation, 1.00 = the same), coloured
//! red when slower and blue when faster, the colour's strength growing with the log of the
//! ratio up to 2x (or 1/2x). Each cell writes its ratio, so colour is never the only carrier,
//! and marks a significant verdict with a triangle; a ratio with no verdict (no interval, noise
//! unknown, other work beside the test) is grey with its number in brackets. Figure id:
//! `evolution`.
//!
//! Pure and deterministic, as the other charts: the same comparison gives the same bytes.

use super::svg::{self, f, Svg, CHAR_W, GRID, MUTED};
use super::{clip, escape as esc};
use crate::compare::{Comparison, Ratio, Verdict};
use std::fmt::Write;

/// The figure id of the heat map (the report's `<figure id="figure-evolution">`).
pub const FIGURE_ID: &str = "evolution";

const ROW_H: f64 = 20.0;
const TOP: f64 = 56.0;
const LABEL_W: f64 = 170.0;
const MIN_CELL_W: f64 = 64.0;

/// The fill of a cell whose ratio has no verdict.
const NO_VERDICT: &str = "#E4E7EC";

/// The cell colour of a ratio: white at 1, red above (slower), blue below (faster), full at
/// 2x either way.
fn paint(ratio: f64) -> String {
    if !ratio.is_finite() || ratio <= 0.0 {
        return "#FFFFFF".into();
    }
    let t = (ratio.log2().abs()).min(1.0);
    let mix = |full: u8| -> u8 { (255.0 - (255.0 - f64::from(full)) * t).round() as u8 };
    let (r, g, b) = if ratio >= 1.0 {
        (mix(0xD7), mix(0x30), mix(0x27))
    } else {
        (mix(0x45), mix(0x75), mix(0xB4))
    };
    format!("#{r:02X}{g:02X}{b:02X}")
}

/// The heat map of `cmp`'s tests across its columns against its baseline column; None when
/// there are fewer than two columns or no test.
pub fn chart(cmp: &Comparison) -> Option<Svg> {
    chart_marked(cmp, &[])
}

/// [`chart`] with the cells where a change point began (`changed`: test id and column, from
/// `changes::marks`) outlined and marked with a diamond.
pub fn chart_marked(cmp: &Comparison, changed: &[(String, usize)]) -> Option<Svg> {
    if cmp.runs.len() < 2 || cmp.rows.is_empty() {
        return None;
    }
    let names: Vec<String> = cmp.runs.iter().map(svg::run_name).collect();
    let cols = names.len() as f64;
    let cell_w = ((svg::WIDTH - LABEL_W - 10.0) / cols).max(MIN_CELL_W);
    let width = (LABEL_W + cell_w * cols + 10.0).max(svg::WIDTH);
    let height = TOP + ROW_H * cmp.rows.len() as f64 + 40.0;
    let base = cmp.baseline.min(names.len() - 1);
    let title = format!(
        "Slowdown against {} (time per operation; 1.00 = the same)",
        names[base]
    );
    let mut b = String::new();
    let _ = writeln!(
        b,
        "<text x=\"10\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{}</text>",
        esc(&title)
    );
    column_heads(&mut b, &names, cell_w);
    for (i, row) in cmp.rows.iter().enumerate() {
        let y = TOP + ROW_H * i as f64;
        let _ = writeln!(
            b,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" font-size=\"11\">{}</text>",
            f(LABEL_W - 6.0),
            f(y + 14.0),
            esc(&clip(&row.id, 24))
        );
        for (j, name) in names.iter().enumerate() {
            let x = LABEL_W + cell_w * j as f64;
            let marked = changed.iter().any(|(t, c)| *t == row.id && *c == j);
            let look = look(row, j, base);
            cell(&mut b, [x, y, cell_w], &row.id, name, look, marked);
        }
    }
    let _ = writeln!(
        b,
        "<text x=\"10\" y=\"{}\" font-size=\"11\" fill=\"{MUTED}\">Red: slower, blue: faster, full colour at 2x; \u{25b2}/\u{25bc}: significantly slower/faster; \u{2013}: no ratio{}.</text>",
        f(height - 14.0),
        if changed.is_empty() {
            ""
        } else {
            "; \u{25c6} outlined: a change point began in the column's runs (sysperf changes)"
        }
    );
    Some(Svg::new(width, height, title, b))
}

/// The columns' names over them, clipped to the cell with the whole name as a tooltip.
fn column_heads(b: &mut String, names: &[String], cell_w: f64) {
    let max_chars = ((cell_w - 4.0) / CHAR_W).floor().max(4.0) as usize;
    for (j, name) in names.iter().enumerate() {
        let x = LABEL_W + cell_w * (j as f64 + 0.5);
        let _ = writeln!(
            b,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11\"><title>{}</title>{}</text>",
            f(x),
            f(TOP - 8.0),
            esc(name),
            esc(&clip(name, max_chars))
        );
    }
}

/// How a cell reads: its fill, its text and its tooltip.
struct Look {
    fill: String,
    text: String,
    tip: String,
}

impl Look {
    /// A look of fixed words.
    fn new(fill: &str, text: &str, tip: &str) -> Look {
        Look {
            fill: fill.to_string(),
            text: text.to_string(),
            tip: tip.to_string(),
        }
    }
}

/// The look of `row`'s cell in column `j`: the baseline's own (1.00, or missing), a ratio's,
/// or none where the column has no ratio.
fn look(row: &crate::compare::Row, j: usize, base: usize) -> Look {
    if j == base {
        return if row.cells.get(j).is_some_and(|c| c.cell().is_some()) {
            Look::new("#FFFFFF", "1.00", "baseline")
        } else {
            Look::new("#F2F4F7", "\u{2013}", "missing")
        };
    }
    match row.ratios.get(j).and_then(Option::as_ref) {
        Some(r) => ratio_look(r),
        None => Look::new("#F2F4F7", "\u{2013}", "no ratio (missing or failed)"),
    }
}

/// A ratio's cell: coloured with a verdict's mark where it has a verdict, grey with its number
/// in brackets where it has none.
fn ratio_look(r: &Ratio) -> Look {
    let mark = match r.verdict {
        Verdict::Slower => " \u{25b2}",
        Verdict::Faster => " \u{25bc}",
        _ => "",
    };
    // Coloured only where there is a verdict: a ratio with none is grey, its number in
    // brackets, so no unjudged cell reads as a change (#42).
    let judged = matches!(
        r.verdict,
        Verdict::Slower | Verdict::Faster | Verdict::NoChange | Verdict::Inconclusive
    );
    Look {
        fill: if judged {
            paint(r.ratio)
        } else {
            NO_VERDICT.to_string()
        },
        text: if judged {
            format!("{:.2}{mark}", r.ratio)
        } else {
            format!("({:.2})", r.ratio)
        },
        tip: format!("{:.3}x, {}", r.ratio, r.verdict.as_str()),
    }
}

/// One cell at (x, y), `w` wide, of test `test` in column `name`: its rectangle with a
/// tooltip and its text; where a change point began (`marked`), a diamond before the text
/// and an outline.
fn cell(b: &mut String, [x, y, w]: [f64; 3], test: &str, name: &str, look: Look, marked: bool) {
    let Look { fill, text, tip } = look;
    let (text, tip) = if marked {
        (
            format!("\u{25c6}{text}"),
            format!("{tip}; a change point began in these runs (sysperf changes)"),
        )
    } else {
        (text, tip)
    };
    let _ = writeln!(
        b,
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{fill}\" stroke=\"{GRID}\"><title>{}: {}</title></rect>\
         <text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"11\">{}</text>",
        f(x),
        f(y),
        f(w),
        f(ROW_H),
        esc(&format!("{test} in {name}")),
        esc(&tip),
        f(x + w / 2.0),
        f(y + 14.0),
        esc(&text)
    );
    if marked {
        let _ = writeln!(
            b,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#101828\" stroke-width=\"2\"/>",
            f(x + 1.0),
            f(y + 1.0),
            f(w - 2.0),
            f(ROW_H - 2.0)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture_run;

    #[test]
    fn colours_grow_with_the_slowdown_and_are_white_at_one() {
        assert_eq!(paint(1.0), "#FFFFFF");
        assert_eq!(paint(2.0), "#D73027");
        assert_eq!(paint(4.0), "#D73027");
        assert_eq!(paint(0.5), "#4575B4");
        assert_ne!(paint(1.2), paint(1.5));
    }

    #[test]
    fn one_row_per_test_one_cell_per_column_with_its_ratio() {
        let a = fixture_run();
        let mut b = fixture_run();
        b.id = "bbbbbbbbbbbb".into();
        b.label = Some("kernel=6.12".into());
        for r in &mut b.results {
            for t in &mut r.trials {
                t.wall_ns *= 2;
            }
            if let Some(s) = &mut r.summary {
                s.wall_ns_per_op.median *= 2.0;
            }
        }
        let cmp = crate::report::fixture_compare(&[a.clone(), b], 0, 2.0);
        let svg = chart(&cmp).expect("two columns").document();
        assert_eq!(svg.matches("</rect>").count(), cmp.rows.len() * 2);
        assert!(svg.contains("kernel=6.12"), "{svg}");
        assert!(svg.contains("1.00"), "{svg}");
        assert!(svg.contains("2.00"), "{svg}");
        assert!(chart(&crate::report::fixture_compare(&[a], 0, 2.0)).is_none());
    }

    #[test]
    fn a_cell_where_a_change_began_is_outlined_and_marked() {
        let a = fixture_run();
        let mut b = fixture_run();
        b.id = "bbbbbbbbbbbb".into();
        let cmp = crate::report::fixture_compare(&[a, b], 0, 2.0);
        let test = cmp.rows[0].id.clone();
        let plain = chart(&cmp).unwrap().document();
        assert!(!plain.contains('\u{25c6}') && !plain.contains("fill=\"none\""));
        let svg = chart_marked(&cmp, &[(test.clone(), 1)]).unwrap().document();
        assert_eq!(
            svg.matches("fill=\"none\" stroke=\"#101828\"").count(),
            1,
            "{svg}"
        );
        assert_eq!(
            svg.matches('\u{25c6}').count(),
            2,
            "the cell and the legend: {svg}"
        );
        assert!(svg.contains("a change point began in these runs"), "{svg}");
        // A mark for a test or column the map does not have draws nothing.
        let none = chart_marked(&cmp, &[("no-such-test".into(), 1), (test, 9)]).unwrap();
        assert!(!none.document().contains("fill=\"none\""));
    }
}
