//! Charts as SVG text: grouped bar charts of microseconds per operation with 95% confidence
//! whiskers (one colour per run), and the paging figure (time and faults against gausspage's
//! standard deviation, one series per run).
//!
//! Pure and deterministic: the same comparison always gives the same bytes (coordinates are
//! printed to one decimal), so charts are snapshot-tested. Every piece of text is escaped.
//! Text widths are estimated from character counts, not measured: there is no font here.
//! Not a plotting library: only the charts the report and `sysperf plot` draw.

use super::{clip, escape as esc, num};
use crate::compare::{CellState, Comparison, RunHeader, Verdict};
use std::fmt::Write;

/// Okabe-Ito colours: distinguishable with the common colour-vision deficiencies and in
/// greyscale print order; the yellow is left out because it vanishes on white.
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#7F7F7F", "#000000",
];

/// The colour of the run at index `i` in every chart and in the report's run list.
pub fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// Red and green for verdicts, dark enough to read as text on white.
pub const SLOWER: &str = "#B42318";
pub const FASTER: &str = "#067647";

pub(crate) const FONT: &str = "DejaVu Sans, Verdana, Helvetica, Arial, sans-serif";
/// Every chart has this width, so charts line up in the report and read at the same scale.
pub const WIDTH: f64 = 1000.0;
/// Estimated advance of one character of 12 px DejaVu Sans (the widest common sans).
pub(crate) const CHAR_W: f64 = 7.0;
pub(crate) const INK: &str = "#1D2939";
pub(crate) const MUTED: &str = "#667085";
pub(crate) const GRID: &str = "#E4E7EC";

/// One chart per group of tests of similar magnitude; the groups are the benchmark registry's
/// (`bench::Chart`, declared by each family), and tests it does not know are drawn as "other".
pub use crate::bench::Chart as ChartGroup;

/// Every group, in registry order, "other" last.
pub fn groups() -> Vec<&'static ChartGroup> {
    crate::bench::charts()
}

/// The chart group a test id belongs to.
pub fn group_of(id: &str) -> &'static ChartGroup {
    crate::bench::chart_of(id)
}

/// The group with this name.
pub fn find_group(name: &str) -> Option<&'static ChartGroup> {
    groups().into_iter().find(|g| g.name == name)
}

/// The gausspage tests in the order of the paper's figure: the standard deviation in pages,
/// where the test sits on the x axis, and its tick label. The run script's 'inf' is sd 10,000;
/// drawn to scale it would squash the rest, so it sits past a break at the end of the axis.
pub const GAUSS_SD: &[(&str, f64, &str)] = &[
    ("gausspage.1", 1.0, "1"),
    ("gausspage.10", 10.0, "10"),
    ("gausspage.30", 30.0, "30"),
    ("gausspage.40", 40.0, "40"),
    ("gausspage.50", 50.0, "50"),
    ("gausspage.60", 60.0, "60"),
    ("gausspage.80", 80.0, "80"),
    ("gausspage.inf", INF_X, "inf"),
];
const INF_X: f64 = 96.0;
const BREAK_X: f64 = 88.0;
const X_MAX: f64 = 100.0;

/// A finished chart: its size and its elements. `element` is for inline use in HTML (no XML
/// namespace needed there, and no address in the page); `document` is a standalone .svg file.
#[derive(Debug, Clone, PartialEq)]
pub struct Svg {
    pub width: f64,
    pub height: f64,
    pub title: String,
    body: String,
}

impl Svg {
    /// A chart of this size from its drawn elements (for the other chart modules).
    pub(crate) fn new(width: f64, height: f64, title: String, body: String) -> Svg {
        Svg {
            width,
            height,
            title,
            body,
        }
    }

    fn open(&self, xmlns: bool) -> String {
        format!(
            "<svg{} width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\" font-family=\"{FONT}\" font-size=\"12\" fill=\"{INK}\">\n<title>{}</title>\n",
            if xmlns { " xmlns=\"http://www.w3.org/2000/svg\"" } else { "" },
            f(self.width),
            f(self.height),
            f(self.width),
            f(self.height),
            esc(&self.title),
            esc(&self.title),
        )
    }

    /// The `<svg>` element for inline use in an HTML page.
    pub fn element(&self) -> String {
        format!("{}{}</svg>\n", self.open(false), self.body)
    }

    /// A standalone SVG document, on a white background so it reads in any viewer.
    pub fn document(&self) -> String {
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{}<rect width=\"{}\" height=\"{}\" fill=\"#FFFFFF\"/>\n{}</svg>\n",
            self.open(true),
            f(self.width),
            f(self.height),
            self.body
        )
    }
}

/// Charts one above the other, as one figure (`plot --group paging`: bars and the paging
/// figure together).
pub fn stack(title: &str, parts: &[Svg]) -> Svg {
    let mut body = String::new();
    let mut y = 0.0;
    let mut width: f64 = 0.0;
    for p in parts {
        let _ = writeln!(body, "<g transform=\"translate(0,{})\">", f(y));
        body.push_str(&p.body);
        body.push_str("</g>\n");
        y += p.height;
        width = width.max(p.width);
    }
    Svg {
        width,
        height: y,
        title: title.to_string(),
        body,
    }
}

/// Coordinates to one decimal, never "-0.0".
pub(crate) fn f(v: f64) -> String {
    let v = if v.is_finite() { v } else { 0.0 };
    format!("{:.1}", (v * 10.0).round() / 10.0 + 0.0)
}

pub(crate) fn text_w(s: &str, px: f64) -> f64 {
    s.chars().count() as f64 * CHAR_W * px / 12.0
}

/// How a note beside a bar reads: a regression, an improvement, or plain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Slower,
    Faster,
    Plain,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub value: f64,
    /// Absent for published figures, which carry no interval.
    pub ci: Option<[f64; 2]>,
    /// Words after the value, e.g. "1.20x slower".
    pub note: Option<(String, Tone)>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum BarCell {
    Value(Bar),
    Failed,
    Missing,
}

/// A grouped bar chart: `cells[category][series]`.
#[derive(Debug, Clone, PartialEq)]
pub struct BarChart {
    pub title: String,
    /// Axis title with its unit.
    pub axis: String,
    pub categories: Vec<String>,
    pub series: Vec<String>,
    pub cells: Vec<Vec<BarCell>>,
}

/// How far apart the largest and smallest values of a bar chart may be on a linear axis:
/// past 30x the smallest bar is under 3% of the plot's width, invisible beside the largest
/// (syscall's 0.2 us beside csw's 7.5 us), so the axis goes logarithmic.
pub const LOG_PAST: f64 = 30.0;

/// A value axis: linear from zero, or logarithmic by decades when the values span more than
/// [`LOG_PAST`] (a linear axis would flatten the small ones to nothing).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Scale {
    Linear { top: f64, step: f64 },
    Log { lo: i32, hi: i32 },
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if !raw.is_finite() || raw <= 0.0 {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let r = raw / mag;
    let m = if r <= 1.0 {
        1.0
    } else if r <= 2.0 {
        2.0
    } else if r <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

impl Scale {
    /// Logarithmic past [`LOG_PAST`], when `allow_log`.
    fn for_values(values: &[f64], allow_log: bool) -> Scale {
        Scale::log_past(values, if allow_log { LOG_PAST } else { f64::INFINITY })
    }

    /// Logarithmic by decades when the largest positive value is more than `ratio` times
    /// the smallest, else linear from zero.
    pub(crate) fn log_past(values: &[f64], ratio: f64) -> Scale {
        let pos: Vec<f64> = values
            .iter()
            .copied()
            .filter(|v| v.is_finite() && *v > 0.0)
            .collect();
        let max = pos.iter().copied().fold(0.0, f64::max);
        let min = pos.iter().copied().fold(f64::INFINITY, f64::min);
        if !pos.is_empty() && max / min > ratio {
            let lo = min.log10().floor() as i32;
            let hi = (max.log10().ceil() as i32).max(lo + 1);
            return Scale::Log { lo, hi };
        }
        Scale::linear(max)
    }

    pub(crate) fn linear(max: f64) -> Scale {
        let max = if max.is_finite() && max > 0.0 {
            max
        } else {
            1.0
        };
        let step = nice_step(max / 5.0);
        let mut n = (max / step).ceil();
        // Leave room above the highest value when it lands exactly on a tick.
        if n * step < max * 1.0001 {
            n += 1.0;
        }
        Scale::Linear {
            top: n * step,
            step,
        }
    }

    pub(crate) fn is_log(&self) -> bool {
        matches!(self, Scale::Log { .. })
    }

    /// Position of `v` along the axis, 0 at the start and 1 at the end, clamped.
    pub(crate) fn frac(&self, v: f64) -> f64 {
        let x = match *self {
            Scale::Linear { top, .. } => v / top,
            Scale::Log { lo, hi } => {
                if v <= 0.0 {
                    0.0
                } else {
                    (v.log10() - lo as f64) / (hi - lo) as f64
                }
            }
        };
        if x.is_finite() {
            x.clamp(0.0, 1.0)
        } else {
            0.0
        }
    }

    /// Labelled ticks, and unlabelled minor ticks (2-9 of each decade on a log axis).
    pub(crate) fn ticks(&self) -> (Vec<(f64, String)>, Vec<f64>) {
        match *self {
            Scale::Linear { top, step } => {
                let decimals = (-step.log10().floor()).max(0.0) as usize;
                let n = (top / step).round() as i64;
                let major = (0..=n)
                    .map(|i| {
                        let v = i as f64 * step;
                        (v, format!("{v:.decimals$}"))
                    })
                    .collect();
                (major, Vec::new())
            }
            Scale::Log { lo, hi } => {
                let major = (lo..=hi)
                    .map(|e| {
                        let v = 10f64.powi(e);
                        let label = if e >= 0 {
                            format!("{v:.0}")
                        } else {
                            format!("{v:.prec$}", prec = (-e) as usize)
                        };
                        (v, label)
                    })
                    .collect();
                let minor = (lo..hi)
                    .flat_map(|e| (2..10).map(move |m| m as f64 * 10f64.powi(e)))
                    .collect();
                (major, minor)
            }
        }
    }
}

/// Marker shapes cycle with the colours, so series stay apart in greyscale print too.
fn marker(i: usize, x: f64, y: f64, fill: &str) -> String {
    marker_painted(i, x, y, &format!("fill=\"{fill}\""))
}

/// The marker of shape `i` with `paint` as its attributes (a fill, or a white fill and a
/// coloured stroke for a hollow marker).
pub(crate) fn marker_painted(i: usize, x: f64, y: f64, paint: &str) -> String {
    let r = 4.0;
    match i % 4 {
        0 => format!(
            "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" {paint}/>",
            f(x),
            f(y),
            f(r)
        ),
        1 => format!(
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" {paint}/>",
            f(x - r),
            f(y - r),
            f(2.0 * r),
            f(2.0 * r)
        ),
        2 => format!(
            "<path d=\"M{} {}L{} {}L{} {}Z\" {paint}/>",
            f(x),
            f(y - r - 1.0),
            f(x + r + 1.0),
            f(y + r),
            f(x - r - 1.0),
            f(y + r)
        ),
        _ => format!(
            "<path d=\"M{} {}L{} {}L{} {}L{} {}Z\" {paint}/>",
            f(x),
            f(y - r - 1.0),
            f(x + r + 1.0),
            f(y),
            f(x),
            f(y + r + 1.0),
            f(x - r - 1.0),
            f(y)
        ),
    }
}

/// A vertical interval bar with caps at x from y `lo` to y `hi` (screen coordinates).
pub(crate) fn whisker(x: f64, lo: f64, hi: f64, stroke: &str) -> String {
    format!(
        "<path d=\"M{a} {lo}V{hi}M{b} {lo}H{c}M{b} {hi}H{c}\" stroke=\"{stroke}\" stroke-width=\"1.3\" fill=\"none\"/>",
        a = f(x),
        b = f(x - 3.0),
        c = f(x + 3.0),
        lo = f(lo),
        hi = f(hi),
    )
}

#[derive(Clone, Copy, PartialEq)]
enum Key {
    Swatch,
    Marker,
}

/// Keys and names in rows from (16, y), wrapped before `width - 16`: each name clipped to
/// `clip_at` characters, its key drawn by `key(i, x, row_y)` in the `key_w` pixels before it.
/// Returns the elements and the y of the last row. One layout for every chart's legend, which
/// differ only in their keys and sizes.
pub(crate) fn wrapped_keys<'a>(
    names: impl IntoIterator<Item = &'a str>,
    clip_at: usize,
    key_w: f64,
    width: f64,
    y: f64,
    key: impl Fn(usize, f64, f64) -> String,
) -> (String, f64) {
    let mut s = String::new();
    let (mut x, mut row_y) = (16.0, y);
    for (i, name) in names.into_iter().enumerate() {
        let name = clip(name, clip_at);
        let w = key_w + text_w(&name, 12.0) + 18.0;
        if x > 16.0 && x + w > width - 16.0 {
            x = 16.0;
            row_y += 18.0;
        }
        let _ = writeln!(
            s,
            "{}<text x=\"{}\" y=\"{}\">{}</text>",
            key(i, x, row_y),
            f(x + key_w),
            f(row_y),
            esc(&name)
        );
        x += w;
    }
    (s, row_y)
}

/// A legend of colour keys and names starting at (16, y), wrapped to the chart width.
/// Returns the elements and the y below the legend.
fn legend(names: &[String], key: Key, y: f64) -> (String, f64) {
    let (s, row_y) = wrapped_keys(
        names.iter().map(String::as_str),
        48,
        22.0,
        WIDTH,
        y,
        |i, x, row_y| {
            match key {
            Key::Swatch => format!(
                "<rect x=\"{}\" y=\"{}\" width=\"14\" height=\"12\" fill=\"{}\"/>",
                f(x),
                f(row_y - 10.0),
                colour(i)
            ),
            Key::Marker => format!(
                "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2\"/>{}",
                f(x - 2.0),
                f(row_y - 4.0),
                f(x + 16.0),
                f(row_y - 4.0),
                colour(i),
                marker(i, x + 7.0, row_y - 4.0, colour(i))
            ),
        }
        },
    );
    (s, row_y + 14.0)
}

pub(crate) fn title(s: &mut String, text: &str) {
    let _ = writeln!(
        s,
        "<text x=\"16\" y=\"22\" font-size=\"15\" font-weight=\"bold\">{}</text>",
        esc(text)
    );
}

/// A horizontal grid line across the plot from `left` to `right` at `y`, with its value
/// written left of the axis: the y axis of every vertical chart.
pub(crate) fn y_grid_line(s: &mut String, left: f64, right: f64, y: f64, label: &str) {
    let _ = writeln!(
        s,
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{GRID}\"/><text x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"{MUTED}\">{}</text>",
        f(left - 4.0),
        f(y),
        f(right),
        f(y),
        f(left - 7.0),
        f(y + 4.0),
        esc(label)
    );
}

/// A tick under the x axis at `x` with its label below it.
pub(crate) fn x_tick(s: &mut String, x: f64, bottom: f64, label: &str) {
    let _ = writeln!(
        s,
        "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{INK}\"/><text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{MUTED}\">{}</text>",
        f(x),
        f(bottom),
        f(x),
        f(bottom + 4.0),
        f(x),
        f(bottom + 17.0),
        esc(label)
    );
}

/// The two axes of a plot as one stroke: up the left side, along the bottom.
pub(crate) fn axes(s: &mut String, left: f64, top: f64, bottom: f64, right: f64) {
    let _ = writeln!(
        s,
        "<path d=\"M{} {}V{}H{}\" stroke=\"{INK}\" fill=\"none\"/>",
        f(left),
        f(top),
        f(bottom),
        f(right)
    );
}

/// The title of the horizontal axis, centred at `centre` under the tick labels.
pub(crate) fn x_axis_title(s: &mut String, centre: f64, bottom: f64, text: &str) {
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
        f(centre),
        f(bottom + 36.0),
        esc(text)
    );
}

/// The title of the vertical axis, turned to read upwards, centred at (`x`, `middle`).
pub(crate) fn y_axis_title(s: &mut String, x: f64, middle: f64, text: &str) {
    let _ = writeln!(
        s,
        "<text transform=\"translate({},{}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
        f(x),
        f(middle),
        esc(text)
    );
}

/// A curve through `points` (screen coordinates, in order), `width` wide, dashed by `dash`
/// (an SVG dash array) when given.
pub(crate) fn polyline(
    s: &mut String,
    points: &[(f64, f64)],
    stroke: &str,
    width: &str,
    dash: Option<&str>,
) {
    let d: Vec<String> = points
        .iter()
        .map(|(x, y)| format!("{} {}", f(*x), f(*y)))
        .collect();
    let _ = writeln!(
        s,
        "<path d=\"M{}\" stroke=\"{stroke}\" stroke-width=\"{width}\" fill=\"none\"{}/>",
        d.join("L"),
        dash.map(|d| format!(" stroke-dasharray=\"{d}\""))
            .unwrap_or_default()
    );
}

/// Every value a value axis must hold: each value and the ends of its interval.
fn with_intervals(points: impl IntoIterator<Item = (f64, Option<[f64; 2]>)>) -> Vec<f64> {
    let mut values = Vec::new();
    for (v, ci) in points {
        values.push(v);
        if let Some([lo, hi]) = ci {
            values.extend([lo, hi]);
        }
    }
    values
}

/// Where a bar chart's parts go: its value axis, the height of a bar and of a band (one band
/// per category), and the plot's edges.
struct BarLayout {
    scale: Scale,
    bar_h: f64,
    band: f64,
    left: f64,
    plot_w: f64,
    top: f64,
    bottom: f64,
}

impl BarLayout {
    /// Bars thinner as there are more series; the plot starts after the longest category
    /// name (`categories`, clipped) and leaves room on the right for the notes.
    fn new(c: &BarChart, categories: &[String], top: f64) -> BarLayout {
        let values = with_intervals(c.cells.iter().flatten().filter_map(|cell| match cell {
            BarCell::Value(b) => Some((b.value, b.ci)),
            _ => None,
        }));
        let scale = Scale::for_values(&values, true);
        let nser = c.series.len().max(1);
        let bar_h = if nser <= 4 {
            14.0
        } else if nser <= 8 {
            10.0
        } else {
            6.0
        };
        let band = nser as f64 * bar_h + 12.0;
        let label_w = categories
            .iter()
            .map(|n| text_w(n, 12.0))
            .fold(0.0, f64::max)
            .clamp(50.0, 210.0);
        let left = 16.0 + label_w + 10.0;
        // Room on the right for the longest note ("1234.5  +1.20x slower").
        let plot_w = WIDTH - left - 160.0;
        let plot_h = band * c.categories.len().max(1) as f64;
        BarLayout {
            scale,
            bar_h,
            band,
            left,
            plot_w,
            top,
            bottom: top + plot_h,
        }
    }

    /// Where the value `v` lands along the bars.
    fn x_of(&self, v: f64) -> f64 {
        self.left + self.scale.frac(v) * self.plot_w
    }
}

/// A horizontal grouped bar chart: one band per test, one bar per run, whiskers for the 95%
/// interval, the value (and any verdict) written after each bar. Horizontal because the
/// paper's test names are long and read best left-aligned, one under the other.
pub fn bar_chart(c: &BarChart) -> Svg {
    let mut s = String::new();
    title(&mut s, &c.title);
    let (leg, top) = legend(&c.series, Key::Swatch, 44.0);
    s.push_str(&leg);
    let categories: Vec<String> = c.categories.iter().map(|n| clip(n, 28)).collect();
    let l = BarLayout::new(c, &categories, top + 4.0);
    bar_grid(&mut s, &l, c.categories.len());
    for (k, (name, row)) in categories.iter().zip(&c.cells).enumerate() {
        let band_top = l.top + k as f64 * l.band;
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            f(l.left - 10.0),
            f(band_top + l.band / 2.0 + 4.0),
            esc(name)
        );
        for (j, cell) in row.iter().enumerate() {
            let y = band_top + 6.0 + j as f64 * l.bar_h;
            let who = c.series.get(j).map(String::as_str).unwrap_or("");
            bar_cell(&mut s, &l, y, j, cell, who);
        }
    }
    axes(&mut s, l.left, l.top, l.bottom, l.left + l.plot_w);
    let axis = if l.scale.is_log() {
        format!("{} (log scale)", c.axis)
    } else {
        c.axis.clone()
    };
    x_axis_title(&mut s, l.left + l.plot_w / 2.0, l.bottom, &axis);
    Svg {
        width: WIDTH,
        height: l.bottom + 50.0,
        title: c.title.clone(),
        body: s,
    }
}

/// What the bars stand on: every other band shaded, then the value axis's grid with its
/// labels under the plot. Drawn first, so the bars lie over it.
fn bar_grid(s: &mut String, l: &BarLayout, categories: usize) {
    for k in (0..categories).filter(|k| k % 2 == 1) {
        let _ = writeln!(
            s,
            "<rect x=\"16\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#F5F6F8\"/>",
            f(l.top + k as f64 * l.band),
            f(WIDTH - 32.0),
            f(l.band)
        );
    }
    let (major, minor) = l.scale.ticks();
    for v in minor {
        let x = l.x_of(v);
        let _ = writeln!(
            s,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#F0F1F3\"/>",
            f(x),
            f(l.top),
            f(x),
            f(l.bottom)
        );
    }
    for (v, label) in &major {
        let x = l.x_of(*v);
        let _ = writeln!(
            s,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{GRID}\"/><text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{MUTED}\">{}</text>",
            f(x),
            f(l.top),
            f(x),
            f(l.bottom + 4.0),
            f(x),
            f(l.bottom + 18.0),
            esc(label)
        );
    }
}

/// One series' cell of a band, at `y`: its bar, or the word for a failed or missing result
/// (`who`: the series' name).
fn bar_cell(s: &mut String, l: &BarLayout, y: f64, j: usize, cell: &BarCell, who: &str) {
    let cy = y + (l.bar_h - 2.0) / 2.0;
    let word = match cell {
        BarCell::Value(b) => return bar(s, l, y, j, b, who),
        BarCell::Failed => "failed",
        BarCell::Missing => "not in this run",
    };
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" font-size=\"11\" font-style=\"italic\" fill=\"{}\">{who}: {word}</text>",
        f(l.left + 4.0),
        f(cy + 4.0),
        if matches!(cell, BarCell::Failed) { SLOWER } else { MUTED },
        who = esc(&clip(who, 40)),
    );
}

/// A bar at `y` in series `j`'s colour with its tooltip, its interval's whisker, and its
/// value and note written after whichever ends further right.
fn bar(s: &mut String, l: &BarLayout, y: f64, j: usize, b: &Bar, who: &str) {
    let cy = y + (l.bar_h - 2.0) / 2.0;
    let x1 = l.x_of(b.value);
    let tip = match b.ci {
        Some([lo, hi]) => format!("{who}: {} [{}, {}]", num(b.value), num(lo), num(hi)),
        None => format!("{who}: {} (no interval)", num(b.value)),
    };
    let _ = writeln!(
        s,
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}</title></rect>",
        f(l.left),
        f(y),
        f((x1 - l.left).max(1.0)),
        f(l.bar_h - 2.0),
        colour(j),
        esc(&tip)
    );
    let mut end = x1;
    if let Some([lo, hi]) = b.ci {
        let (a, z) = (l.x_of(lo), l.x_of(hi));
        end = end.max(z);
        let cap = (l.bar_h - 2.0) * 0.4;
        let _ = writeln!(
            s,
            "<path d=\"M{} {}H{}M{} {}V{}M{} {}V{}\" stroke=\"{INK}\" stroke-width=\"1.3\" fill=\"none\"/>",
            f(a),
            f(cy),
            f(z),
            f(a),
            f(cy - cap),
            f(cy + cap),
            f(z),
            f(cy - cap),
            f(cy + cap)
        );
    }
    let note = match &b.note {
        Some((text, tone)) => {
            let (fill, mark) = match tone {
                Tone::Slower => (SLOWER, "\u{25b2} "),
                Tone::Faster => (FASTER, "\u{25bc} "),
                Tone::Plain => (MUTED, ""),
            };
            format!(
                "<tspan dx=\"6\" fill=\"{fill}\" font-weight=\"bold\">{mark}{}</tspan>",
                esc(text)
            )
        }
        None => String::new(),
    };
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" font-size=\"11\">{}{note}</text>",
        f(end + 5.0),
        f(cy + 4.0),
        esc(&num(b.value))
    );
}

/// One point of an x-y series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct XyPoint {
    pub y: f64,
    pub ci: Option<[f64; 2]>,
}

/// One panel of an x-y figure: `series[run][x]`, x as in the figure's `x`.
#[derive(Debug, Clone, PartialEq)]
pub struct XyPanel {
    pub title: String,
    pub y_axis: String,
    pub series: Vec<Vec<Option<XyPoint>>>,
}

/// Panels side by side sharing an x axis and a legend. `x` holds each position on the axis
/// (0 to 100) with its tick label; positions past `BREAK_X` are drawn after an axis break.
#[derive(Debug, Clone, PartialEq)]
pub struct XyFigure {
    pub title: String,
    pub x_axis: String,
    pub x: Vec<(f64, String)>,
    pub series_names: Vec<String>,
    pub panels: Vec<XyPanel>,
}

/// Panels side by side under one title and legend, each drawn by [`xy_panel`].
pub fn xy_figure(fig: &XyFigure) -> Svg {
    let mut s = String::new();
    title(&mut s, &fig.title);
    let (leg, top) = legend(&fig.series_names, Key::Marker, 44.0);
    s.push_str(&leg);
    let n = fig.panels.len().max(1) as f64;
    let panel_w = (WIDTH - 16.0) / n;
    let ptop = top + 26.0;
    let bottom = ptop + XY_PLOT_H;
    for (p, panel) in fig.panels.iter().enumerate() {
        let px = 8.0 + p as f64 * panel_w;
        xy_panel(&mut s, fig, panel, px, panel_w, ptop);
    }
    Svg {
        width: WIDTH,
        height: bottom + 50.0,
        title: fig.title.clone(),
        body: s,
    }
}

/// The height of an x-y figure's plots.
const XY_PLOT_H: f64 = 220.0;

/// One panel of an x-y figure at `px`, `panel_w` wide, its plot from `ptop` down: its title,
/// its own y axis (each panel has its own unit), the shared x axis with its break, and the
/// series. Separate because a figure repeats it once per panel.
fn xy_panel(s: &mut String, fig: &XyFigure, panel: &XyPanel, px: f64, panel_w: f64, ptop: f64) {
    let plot_h = XY_PLOT_H;
    let bottom = ptop + plot_h;
    let left = px + 64.0;
    let plot_w = panel_w - 64.0 - 16.0;
    let x_of = |x: f64| left + (x / X_MAX).clamp(0.0, 1.0) * plot_w;
    let values = with_intervals(
        panel
            .series
            .iter()
            .flatten()
            .flatten()
            .map(|pt| (pt.y, pt.ci)),
    );
    let scale = Scale::for_values(&values, false);
    let y_of = |v: f64| bottom - scale.frac(v) * plot_h;
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" font-weight=\"bold\">{}</text>",
        f(left),
        f(ptop - 10.0),
        esc(&panel.title)
    );
    let (major, _) = scale.ticks();
    for (v, label) in &major {
        y_grid_line(s, left, left + plot_w, y_of(*v), label);
    }
    for (x, label) in &fig.x {
        x_tick(s, x_of(*x), bottom, label);
    }
    // Axes, with a break in the x axis before the points placed past it.
    let brk = x_of(BREAK_X);
    let _ = writeln!(
        s,
        "<path d=\"M{l} {t}V{b}H{b1}M{b2} {b}H{r}\" stroke=\"{INK}\" fill=\"none\"/><path d=\"M{a1} {y1}L{a2} {y2}M{c1} {y1}L{c2} {y2}\" stroke=\"{INK}\"/>",
        l = f(left),
        t = f(ptop),
        b = f(bottom),
        b1 = f(brk - 3.0),
        b2 = f(brk + 3.0),
        r = f(left + plot_w),
        a1 = f(brk - 6.0),
        a2 = f(brk),
        c1 = f(brk),
        c2 = f(brk + 6.0),
        y1 = f(bottom + 5.0),
        y2 = f(bottom - 5.0),
    );
    y_axis_title(s, px + 14.0, ptop + plot_h / 2.0, &panel.y_axis);
    x_axis_title(s, left + plot_w / 2.0, bottom, &fig.x_axis);
    // Series side by side around each x (a few pixels apart), so that equal values
    // do not hide one another and every whisker stays visible.
    let nser = panel.series.len();
    for (i, series) in panel.series.iter().enumerate() {
        let dodge = (i as f64 - (nser as f64 - 1.0) / 2.0) * 5.0;
        let pts: Vec<(f64, f64, XyPoint)> = fig
            .x
            .iter()
            .zip(series)
            .filter_map(|((x, _), p)| p.map(|p| (*x, x_of(*x) + dodge, p)))
            .collect();
        xy_series(s, i, &pts, &y_of);
    }
}

/// Series `i` of a panel: `pts` as (x on the axis, x on screen, point), a solid line through
/// those before the axis break, a dashed one across it, and each point's marker and whisker.
fn xy_series(s: &mut String, i: usize, pts: &[(f64, f64, XyPoint)], y_of: &dyn Fn(f64) -> f64) {
    // Solid line within the scaled part of the axis, dashed across the break.
    let (near, far): (Vec<_>, Vec<_>) = pts.iter().partition(|(x, _, _)| *x < BREAK_X);
    if near.len() > 1 {
        let line: Vec<(f64, f64)> = near.iter().map(|(_, sx, p)| (*sx, y_of(p.y))).collect();
        polyline(s, &line, colour(i), "2", None);
    }
    if let (Some((_, x0, p0)), Some((_, x1, p1))) = (near.last(), far.first()) {
        let _ = writeln!(
            s,
            "<path d=\"M{} {}L{} {}\" stroke=\"{}\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\" fill=\"none\"/>",
            f(*x0),
            f(y_of(p0.y)),
            f(*x1),
            f(y_of(p1.y)),
            colour(i)
        );
    }
    for (_, cx, p) in pts {
        let cy = y_of(p.y);
        if let Some([lo, hi]) = p.ci {
            let _ = writeln!(s, "{}", whisker(*cx, y_of(lo), y_of(hi), colour(i)));
        }
        let _ = writeln!(s, "{}", marker(i, *cx, cy, colour(i)));
    }
}

/// What a run is called in legends: its label, else its id; published runs say so, since
/// they have no whiskers, and so do quick runs, whose whiskers span one short trial's
/// spread, not an interval (#43).
pub fn run_name(h: &RunHeader) -> String {
    let name = h.label.clone().unwrap_or_else(|| h.id.clone());
    if h.source == "published" {
        format!("{name} (published)")
    } else if h.quick {
        format!("{name} (quick: no interval)")
    } else {
        name
    }
}

fn series_names(cmp: &Comparison) -> Vec<String> {
    cmp.runs
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let n = run_name(h);
            if i == cmp.baseline && cmp.runs.len() > 1 {
                format!("{n} (baseline)")
            } else {
                n
            }
        })
        .collect()
}

/// Bars for the given tests of the comparison; None when it has none of them.
fn bars(cmp: &Comparison, title: String, ids: &[&str]) -> Option<BarChart> {
    let rows: Vec<_> = cmp
        .rows
        .iter()
        .filter(|r| ids.contains(&r.id.as_str()))
        .collect();
    if rows.is_empty() {
        return None;
    }
    let per_touch = rows.iter().all(|r| group_of(&r.id).name == "paging");
    let levels = super::ci_label(rows.iter().flat_map(|r| {
        r.cells.iter().filter_map(|c| match c {
            crate::compare::CellState::Present(c) => c.ci_level,
            _ => None,
        })
    }));
    Some(BarChart {
        title,
        axis: if per_touch {
            format!("\u{b5}s per page touch (median, {levels})")
        } else {
            format!("\u{b5}s per operation (median, {levels})")
        },
        categories: rows.iter().map(|r| r.label.clone()).collect(),
        series: series_names(cmp),
        cells: rows
            .iter()
            .map(|r| {
                r.cells
                    .iter()
                    .enumerate()
                    .map(|(i, c)| match c {
                        CellState::Present(c) => BarCell::Value(Bar {
                            value: c.us_per_op,
                            ci: c.us_per_op_ci,
                            note: r.ratios.get(i).and_then(Option::as_ref).and_then(|q| {
                                let tone = match q.verdict {
                                    Verdict::Slower => Tone::Slower,
                                    Verdict::Faster => Tone::Faster,
                                    _ => return None,
                                };
                                Some((format!("{:.2}\u{d7} {}", q.ratio, q.verdict.as_str()), tone))
                            }),
                        }),
                        CellState::Failed { .. } => BarCell::Failed,
                        CellState::Missing => BarCell::Missing,
                    })
                    .collect()
            })
            .collect(),
    })
}

/// The chart of one group of tests, if the comparison has any of them.
pub fn group_chart(cmp: &Comparison, group: &ChartGroup) -> Option<Svg> {
    let ids: Vec<&str> = cmp
        .rows
        .iter()
        .filter(|r| group_of(&r.id).name == group.name)
        .map(|r| r.id.as_str())
        .collect();
    bars(cmp, group.title.to_string(), &ids).map(|c| bar_chart(&c))
}

/// The chart of a single test, if the comparison has it.
pub fn test_chart(cmp: &Comparison, id: &str) -> Option<Svg> {
    let label = cmp.rows.iter().find(|r| r.id == id)?.label.clone();
    bars(cmp, label, &[id]).map(|c| bar_chart(&c))
}

/// The paging figure of Tables 6-7: elapsed seconds and page faults per run of the paper's
/// program against the walk's standard deviation, one series per run. None without any
/// gausspage test.
pub fn paging_figure(cmp: &Comparison) -> Option<Svg> {
    let rows: Vec<_> = GAUSS_SD
        .iter()
        .map(|(id, _, _)| cmp.rows.iter().find(|r| r.id == *id))
        .collect();
    if rows.iter().all(Option::is_none) {
        return None;
    }
    let count = |id: &str| {
        crate::bench::find(id)
            .map(|s| s.paper_count)
            .unwrap_or(30_000) as f64
    };
    let series = |pick: &dyn Fn(&str, &crate::compare::Cell) -> XyPoint| {
        (0..cmp.runs.len())
            .map(|i| {
                GAUSS_SD
                    .iter()
                    .zip(&rows)
                    .map(|((id, _, _), row)| match (*row)?.cells.get(i)? {
                        CellState::Present(c) => Some(pick(id, c)),
                        _ => None,
                    })
                    .collect()
            })
            .collect()
    };
    let time = series(&|id, c| XyPoint {
        y: c.real_s,
        // The interval of the time per touch, scaled to the program's touches.
        ci: c.us_per_op_ci.map(|[lo, hi]| {
            let k = count(id) / 1e6;
            [lo * k, hi * k]
        }),
    });
    let faults = series(&|id, c| XyPoint {
        y: c.faults_per_op * count(id),
        ci: None,
    });
    Some(xy_figure(&XyFigure {
        title: "Paging: Gaussian page walks (Tables 6-7)".into(),
        x_axis: "standard deviation of the walk (pages)".into(),
        x: GAUSS_SD
            .iter()
            .map(|(_, x, l)| (*x, l.to_string()))
            .collect(),
        series_names: series_names(cmp),
        panels: vec![
            XyPanel {
                title: "Elapsed time".into(),
                y_axis: "seconds per run of the program".into(),
                series: time,
            },
            XyPanel {
                title: "Page faults".into(),
                y_axis: "faults per run of the program".into(),
                series: faults,
            },
        ],
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// #43: a quick run's whiskers are one short trial's, so its legend says so.
    #[test]
    fn a_quick_run_is_named_so_in_legends() {
        let mut run = crate::report::fixture_run();
        run.params.quick = true;
        let c = crate::report::fixture_compare(&[run.clone()], 0, 2.0);
        assert!(
            run_name(&c.runs[0]).ends_with(" (quick: no interval)"),
            "{}",
            run_name(&c.runs[0])
        );
        run.params.quick = false;
        let c = crate::report::fixture_compare(&[run], 0, 2.0);
        assert!(!run_name(&c.runs[0]).contains("quick"));
    }

    fn with_gauss(mut run: crate::model::Run, factor: f64) -> crate::model::Run {
        let template = run
            .results
            .iter()
            .find(|r| r.id == "randpage")
            .cloned()
            .unwrap();
        for (k, (id, sd, _)) in GAUSS_SD.iter().enumerate() {
            let mut r = template.clone();
            r.id = id.to_string();
            let s = r.summary.as_mut().unwrap();
            // Faults and time grow with the walk's spread, as in Table 7.
            let grow = (1.0 + sd.min(100.0) / 20.0) * factor;
            s.wall_ns_per_op.median = 40.0 * grow + k as f64;
            s.wall_ns_per_op.ci_low = s.wall_ns_per_op.median * 0.97;
            s.wall_ns_per_op.ci_high = s.wall_ns_per_op.median * 1.04;
            s.minflt_per_op = 0.01 * grow;
            run.results.push(r);
        }
        run
    }

    #[test]
    fn every_registry_test_has_a_named_group() {
        for s in crate::bench::all() {
            assert_ne!(group_of(s.id).name, "other", "{}", s.id);
        }
        assert_eq!(group_of("udgback512").name, "ipc");
        assert_eq!(group_of("vexecs0big").name, "exec");
        assert_eq!(group_of("vforks1k").name, "fork");
        assert_eq!(group_of("signocsw").name, "syscall");
        assert_eq!(group_of("gausspage.inf").name, "paging");
        assert_eq!(group_of("something-new").name, "other");
        assert!(find_group("paging").is_some() && find_group("nope").is_none());
    }

    #[test]
    fn scales_are_nice_and_go_log_past_30x() {
        assert_eq!(
            Scale::for_values(&[0.1, 2.5], true),
            Scale::linear(2.5),
            "25x stays linear"
        );
        assert_eq!(
            Scale::for_values(&[0.2, 7.5], true),
            Scale::Log { lo: -1, hi: 1 },
            "syscall's 0.2 us beside csw's 7.5 us: 37.5x goes log"
        );
        assert_eq!(
            Scale::for_values(&[0.1, 300.0], true),
            Scale::Log { lo: -1, hi: 3 }
        );
        assert_eq!(
            Scale::linear(4.3),
            Scale::Linear {
                top: 5.0,
                step: 1.0
            }
        );
        assert_eq!(
            Scale::linear(5.0),
            Scale::Linear {
                top: 6.0,
                step: 1.0
            }
        );
        let (major, minor) = Scale::Log { lo: -1, hi: 1 }.ticks();
        let labels: Vec<&str> = major.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["0.1", "1", "10"]);
        assert_eq!(minor.len(), 16);
        // Nothing usable still gives a drawable axis.
        for v in [&[][..], &[f64::NAN, -1.0, 0.0][..]] {
            let s = Scale::for_values(v, true);
            assert!(
                matches!(s, Scale::Linear { top, step } if (top - 1.2).abs() < 1e-9 && step == 0.2),
                "{s:?}"
            );
            assert_eq!(s.frac(f64::NAN), 0.0);
        }
    }

    #[test]
    fn bar_chart_snapshot() {
        let base = crate::report::fixture_run();
        let c = crate::report::fixture_compare(
            &[base.clone(), crate::report::fixture_slower(&base)],
            0,
            2.0,
        );
        let svg = group_chart(&c, find_group("syscall").unwrap()).unwrap();
        insta::assert_snapshot!(svg.document());
    }

    #[test]
    fn paging_figure_snapshot() {
        let base = with_gauss(crate::report::fixture_run(), 1.0);
        let mut other = with_gauss(
            crate::report::fixture_slower(&crate::report::fixture_run()),
            1.3,
        );
        // A published run: figures without intervals, so no whiskers.
        other.source = "published".into();
        for r in &mut other.results {
            for t in &mut r.trials {
                t.kind = crate::model::TrialKind::Calibration;
            }
            if let Some(s) = &mut r.summary {
                s.wall_ns_per_op.n = 0;
            }
        }
        let c = crate::report::fixture_compare(&[base, other], 0, 2.0);
        let svg = paging_figure(&c).unwrap();
        let doc = svg.document();
        // The published series has markers but no whiskers: 8 whiskers, all the baseline's.
        assert_eq!(
            doc.matches("stroke=\"#0072B2\" stroke-width=\"1.3\"")
                .count(),
            8
        );
        assert_eq!(
            doc.matches("stroke=\"#E69F00\" stroke-width=\"1.3\"")
                .count(),
            0
        );
        insta::assert_snapshot!(doc);
    }

    #[test]
    fn charts_escape_every_label_and_survive_odd_values() {
        let mut base = crate::report::fixture_run();
        base.label = Some("<script>alert(1)</script>".into());
        let mut odd = base.clone();
        odd.id = "0000000000c3".into();
        odd.label = Some("\"quotes\" & ampersands".into());
        odd.results[0].id = "<img src=x>".into();
        for r in &mut odd.results {
            if let Some(s) = &mut r.summary {
                s.wall_ns_per_op.median = f64::NAN;
            }
        }
        let c = crate::report::fixture_compare(&[base, odd], 0, 2.0);
        let mut all = String::new();
        for g in groups() {
            if let Some(svg) = group_chart(&c, g) {
                all.push_str(&svg.document());
            }
        }
        assert!(all.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(all.contains("&quot;quotes&quot; &amp; ampersands"));
        assert!(all.contains("&lt;img src=x&gt;"));
        assert!(!all.contains("<script") && !all.contains("<img"));
        assert!(!all.contains("NaN") && !all.contains("inf\""));
    }

    #[test]
    fn a_chart_of_nothing_is_none_and_stacks_add_heights() {
        let c = crate::report::fixture_compare(&[crate::report::fixture_run()], 0, 2.0);
        assert!(paging_figure(&c).is_none());
        assert!(test_chart(&c, "nosuch").is_none());
        let a = test_chart(&c, "syscall").unwrap();
        let b = test_chart(&c, "csw").unwrap();
        let st = stack("both", &[a.clone(), b.clone()]);
        assert_eq!(st.height, a.height + b.height);
        assert!(st.document().contains("translate(0,"));
    }
}
