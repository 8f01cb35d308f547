//! The suites' figures as SVG: every series of the given runs (`sysperf run --suite`) grouped
//! by its figure id and drawn as the paper drew it, x against y, one curve per run and series,
//! with the paper's own printed figures beside them as dashed curves of hollow markers.
//!
//! A point is a marker at the median of its measured trials with a bar over its confidence
//! interval. Axes follow the data: x logarithmic where the series says so (ticks at powers of
//! two with K/M suffixes for byte sizes, 2 16 128 1K ..., else at powers of ten), categorical
//! where the points are named and x is only their index ("cooked", "raw"), linear otherwise;
//! y linear from zero, or logarithmic when the values span more than three decades (the axis
//! says so), in a unit chosen per figure (ns, µs or ms; B/s, KB/s, MB/s or GB/s, decimal;
//! operations per hour).
//!
//! Pure and deterministic like `svg`, whose scales, palette, markers and number formats it
//! uses: [`figures`] gathers the data from runs (not from a comparison), [`figure_svg`] draws
//! one figure at 720 px wide. Every string is escaped. Not a plotting library: only the suites'
//! figures.

use super::svg::{self, colour, f, marker_painted, text_w, whisker, Scale, Svg, MUTED};
use super::{clip, escape as esc, num};
use crate::model::{Run, YKind};
use std::fmt::Write;

/// Every suite figure has this width; the height grows only with the legend's rows.
pub const FIG_WIDTH: f64 = 720.0;
const PLOT_H: f64 = 250.0;
/// y is drawn on a logarithmic axis when its largest value is more than this many times its
/// smallest (three decades): a linear one would flatten the small values to the axis.
const Y_LOG_PAST: f64 = 1000.0;

/// One figure: every curve drawn on it, with its axes.
#[derive(Debug, Clone, PartialEq)]
pub struct FigureData {
    /// The series' figure id ("bbn.throughput").
    pub id: String,
    pub title: String,
    /// The paper references of its series, each once, in order.
    pub papers: Vec<String>,
    pub x_name: String,
    pub x_unit: String,
    pub x_log: bool,
    pub y_kind: YKind,
    /// What one operation is ("block", "process"): the series' own when they all agree, else
    /// "operation".
    pub unit: String,
    /// Measured curves first (in the order of the runs and their series), then the paper's.
    pub curves: Vec<Curve>,
}

/// One curve of a figure: one series of one run, or the paper's figures for one series.
#[derive(Debug, Clone, PartialEq)]
pub struct Curve {
    /// The legend: "pipe — before", or "paper: PDP-11/70".
    pub name: String,
    /// The series it draws ("bbn.pipe").
    pub series: String,
    /// Index of its run in the runs given to [`figures`]; None for the paper's figures.
    pub run: Option<usize>,
    /// Palette colour and marker shape; a paper curve shares its series' first curve's.
    pub style: usize,
    pub points: Vec<CurvePoint>,
}

impl Curve {
    pub fn is_paper(&self) -> bool {
        self.run.is_none()
    }
}

/// One point of a curve, y in the series' [`YKind`] unit (not yet scaled for display).
#[derive(Debug, Clone, PartialEq)]
pub struct CurvePoint {
    pub x: f64,
    pub label: Option<String>,
    /// The median; None when no trial of the point succeeded.
    pub y: Option<f64>,
    /// The interval of the median; None for the paper's figures.
    pub ci: Option<[f64; 2]>,
    /// (user + system) / wall time of the point's benchmark, in percent.
    pub cpu_pct: Option<f64>,
    /// Minor plus major page faults per operation.
    pub faults_per_op: Option<f64>,
}

/// The unit y is shown in: values are divided by `factor`.
#[derive(Debug, Clone, PartialEq)]
pub struct YUnit {
    pub factor: f64,
    pub label: String,
}

fn run_label(run: &Run) -> &str {
    run.label.as_deref().unwrap_or(&run.id)
}

/// "processes" from "process", "blocks" from "block".
fn plural(unit: &str) -> String {
    if unit.is_empty() {
        "operations".into()
    } else if unit.ends_with('s') || unit.ends_with("sh") || unit.ends_with("ch") {
        format!("{unit}es")
    } else {
        format!("{unit}s")
    }
}

/// The suite figures of `runs`: all their series grouped by figure id, in order of first
/// appearance; one curve per run and series, and one per series whose paper printed figures.
pub fn figures(runs: &[Run]) -> Vec<FigureData> {
    let mut figs: Vec<FigureData> = Vec::new();
    for (ri, run) in runs.iter().enumerate() {
        for s in &run.series {
            let k = match figs.iter().position(|g| g.id == s.figure) {
                Some(k) => k,
                None => {
                    figs.push(FigureData {
                        id: s.figure.clone(),
                        title: s.figure_title.clone(),
                        papers: Vec::new(),
                        x_name: s.x_name.clone(),
                        x_unit: s.x_unit.clone(),
                        x_log: s.x_log,
                        y_kind: s.y_kind,
                        unit: s.unit.clone(),
                        curves: Vec::new(),
                    });
                    figs.len() - 1
                }
            };
            let fig = &mut figs[k];
            // Curves of different operations (select, poll, epoll_wait) share one axis: time
            // per operation.
            if fig.unit != s.unit {
                fig.unit = "operation".into();
            }
            if !s.paper.is_empty() && !fig.papers.contains(&s.paper) {
                fig.papers.push(s.paper.clone());
            }
            let measured = fig.curves.iter().filter(|c| !c.is_paper()).count();
            // A second run's curve of a series gets a style of its own; the paper's curve
            // takes the colour of the first curve of its series.
            fig.curves.push(Curve {
                name: format!("{} \u{2014} {}", s.curve, run_label(run)),
                series: s.id.clone(),
                run: Some(ri),
                style: measured,
                points: s
                    .points
                    .iter()
                    .map(|p| {
                        let sum = p.result.summary.as_ref();
                        CurvePoint {
                            x: p.x,
                            label: p.label.clone(),
                            y: p.y.map(|e| e.median),
                            ci: p.y.map(|e| [e.ci_low, e.ci_high]),
                            cpu_pct: super::series::cpu_pct(p),
                            faults_per_op: sum.map(|m| m.minflt_per_op + m.majflt_per_op),
                        }
                    })
                    .collect(),
            });
            let has_paper = fig.curves.iter().any(|c| c.is_paper() && c.series == s.id);
            if !s.paper_points.is_empty() && !has_paper {
                fig.curves.push(Curve {
                    name: format!(
                        "paper: {}",
                        s.paper_system.as_deref().unwrap_or("the paper's figures")
                    ),
                    series: s.id.clone(),
                    run: None,
                    style: measured,
                    points: s
                        .paper_points
                        .iter()
                        .map(|&[x, y]| CurvePoint {
                            x,
                            label: None,
                            y: Some(y),
                            ci: None,
                            cpu_pct: None,
                            faults_per_op: None,
                        })
                        .collect(),
                });
            }
        }
    }
    for fig in &mut figs {
        fig.curves.sort_by_key(Curve::is_paper);
        // Several paper curves on one figure need the curve they belong to in the legend.
        let papers = fig.curves.iter().filter(|c| c.is_paper()).count();
        if papers > 1 {
            let names: Vec<(String, String)> = runs
                .iter()
                .flat_map(|r| &r.series)
                .map(|s| (s.id.clone(), s.curve.clone()))
                .collect();
            for c in fig.curves.iter_mut().filter(|c| c.is_paper()) {
                if let Some((_, curve)) = names.iter().find(|(id, _)| *id == c.series) {
                    c.name = format!("{} \u{2014} {curve}", c.name);
                }
            }
        }
    }
    figs
}

impl FigureData {
    fn values(&self) -> Vec<f64> {
        self.curves
            .iter()
            .flat_map(|c| &c.points)
            .flat_map(|p| p.y.into_iter().chain(p.ci.into_iter().flatten()))
            .filter(|v| v.is_finite())
            .collect()
    }

    /// The unit y is shown in: the largest value's on a linear axis; on a logarithmic one
    /// the middle decade's, so the tick labels run from about 0.001 to 1000 rather than from
    /// 0.000001 to 1.
    pub fn y_unit(&self) -> YUnit {
        let pos: Vec<f64> = self.values().into_iter().filter(|v| *v > 0.0).collect();
        let max = pos.iter().copied().fold(0.0, f64::max);
        let min = pos.iter().copied().fold(f64::INFINITY, f64::min);
        let max = if max / min > Y_LOG_PAST {
            (max * min).sqrt()
        } else {
            max
        };
        let (factor, label) = super::series::y_unit(self.y_kind, max);
        // The text tables keep to ASCII; a figure can say µs.
        let label = if label == "us" { "\u{b5}s" } else { label };
        match self.y_kind {
            YKind::CostNs | YKind::CpuNs | YKind::BytesPerSec | YKind::OpsPerSec => YUnit {
                factor,
                label: label.to_string(),
            },
            YKind::PerHour => YUnit {
                factor: 1.0,
                label: format!("{} per hour", plural(&self.unit)),
            },
        }
    }

    /// The y axis's title with its unit.
    pub fn y_title(&self) -> String {
        let u = self.y_unit().label;
        match self.y_kind {
            YKind::CostNs => format!("time per {} ({u})", self.unit),
            YKind::CpuNs => format!("CPU time per {} ({u})", self.unit),
            YKind::BytesPerSec => format!("throughput ({u})"),
            YKind::PerHour => u,
            YKind::OpsPerSec => format!("{} per second ({u})", plural(&self.unit)),
        }
    }

    /// The x axis's title with its unit.
    pub fn x_title(&self) -> String {
        if self.x_unit.is_empty() || self.categories().is_some() {
            self.x_name.clone()
        } else {
            format!("{} ({})", self.x_name, self.x_unit)
        }
    }

    /// The named categories of x in order, when every measured point has a name and x is only
    /// its index (0, 1, 2, ... or 1, 2, 3, ...); None for a numeric x.
    pub fn categories(&self) -> Option<Vec<(f64, String)>> {
        if self.x_log {
            return None;
        }
        let mut cats: Vec<(f64, String)> = Vec::new();
        for p in self
            .curves
            .iter()
            .filter(|c| !c.is_paper())
            .flat_map(|c| &c.points)
        {
            let label = p.label.as_ref()?;
            if !cats.iter().any(|(x, _)| *x == p.x) {
                cats.push((p.x, label.clone()));
            }
        }
        cats.sort_by(|a, b| a.0.total_cmp(&b.0));
        let first = cats.first()?.0;
        let indexed = (first == 0.0 || first == 1.0)
            && cats
                .iter()
                .enumerate()
                .all(|(i, (x, _))| *x == first + i as f64);
        // Names that only repeat the number ("1", "2") are not categories.
        let named = cats
            .iter()
            .any(|(x, l)| *l != num(*x) && *l != format!("{x}"));
        (indexed && named).then_some(cats)
    }

    /// x as the figure's tables and tooltips write it: its name, else the number in the
    /// axis's style.
    pub fn x_text(&self, x: f64, label: Option<&str>) -> String {
        match label {
            Some(l) => l.to_string(),
            None => x_number(x, self.is_bytes()),
        }
    }

    fn is_bytes(&self) -> bool {
        let u = self.x_unit.to_ascii_lowercase();
        u == "b" || u.starts_with("byte")
    }

    fn y_scale(&self) -> (Scale, YUnit) {
        let unit = self.y_unit();
        let scaled: Vec<f64> = self.values().iter().map(|v| v / unit.factor).collect();
        (Scale::log_past(&scaled, Y_LOG_PAST), unit)
    }
}

/// A number for an axis: powers of two of bytes as 1K, 64K, 1M; others compact (10k, 1M).
fn x_number(x: f64, bytes: bool) -> String {
    let pow2 = x >= 1.0 && x.log2().fract() == 0.0;
    if bytes && pow2 {
        for (k, suffix) in [(1u64 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")] {
            if x >= k as f64 {
                return format!("{}{suffix}", x / k as f64);
            }
        }
    }
    let whole = x.fract() == 0.0;
    if whole && x >= 1e6 && (x / 1e6).fract() == 0.0 {
        format!("{}M", x / 1e6)
    } else if whole && x >= 1e4 && (x / 1e3).fract() == 0.0 {
        format!("{}k", x / 1e3)
    } else if whole {
        format!("{x}")
    } else {
        num(x)
    }
}

/// Where an x lands on the axis, from 0 to 1.
enum XAxis {
    Categories(Vec<(f64, String)>),
    /// log10 of the ends; ticks at powers of two when every x is one.
    Log {
        lo: f64,
        hi: f64,
        pow2: bool,
    },
    Linear(Scale),
}

impl XAxis {
    fn of(fig: &FigureData) -> XAxis {
        if let Some(c) = fig.categories() {
            return XAxis::Categories(c);
        }
        let xs: Vec<f64> = fig
            .curves
            .iter()
            .flat_map(|c| &c.points)
            .map(|p| p.x)
            .filter(|x| x.is_finite())
            .collect();
        if fig.x_log {
            let pos: Vec<f64> = xs.iter().copied().filter(|x| *x > 0.0).collect();
            if !pos.is_empty() {
                let lo = pos.iter().copied().fold(f64::INFINITY, f64::min).log10();
                let hi = pos.iter().copied().fold(0.0, f64::max).log10();
                let pad = ((hi - lo) * 0.04).max(0.1);
                let pow2 = pos.iter().all(|x| *x >= 1.0 && x.log2().fract() == 0.0);
                return XAxis::Log {
                    lo: lo - pad,
                    hi: hi + pad,
                    pow2,
                };
            }
        }
        XAxis::Linear(Scale::linear(xs.into_iter().fold(0.0, f64::max)))
    }

    fn frac(&self, x: f64) -> Option<f64> {
        match self {
            XAxis::Categories(c) => {
                let i = c.iter().position(|(cx, _)| *cx == x)?;
                Some((i as f64 + 0.5) / c.len() as f64)
            }
            XAxis::Log { lo, hi, .. } => {
                (x > 0.0).then(|| ((x.log10() - lo) / (hi - lo)).clamp(0.0, 1.0))
            }
            XAxis::Linear(s) => Some(s.frac(x)),
        }
    }

    fn is_log(&self) -> bool {
        matches!(self, XAxis::Log { .. })
    }

    /// Labelled ticks as (x, label), at most about nine of them.
    fn ticks(&self, bytes: bool) -> Vec<(f64, String)> {
        match self {
            XAxis::Categories(c) => c.clone(),
            XAxis::Log { lo, hi, pow2: true } => {
                let l2 = std::f64::consts::LOG2_10;
                let (e0, e1) = ((lo * l2).ceil() as i32, (hi * l2).floor() as i32);
                let stride = [1, 2, 3, 4, 5, 6, 8, 10]
                    .into_iter()
                    .find(|k| (e1 - e0) / k < 9)
                    .unwrap_or(10);
                // Both ends of the data are labelled: the last regular tick gives way to
                // the largest size when it would crowd it (2 16 128 1K 8K 64K 1M).
                let mut exps: Vec<i32> = (e0..=e1).step_by(stride as usize).collect();
                if let Some(last) = exps.last_mut() {
                    if *last != e1 && 2 * (e1 - *last) < stride {
                        *last = e1;
                    } else if *last != e1 {
                        exps.push(e1);
                    }
                }
                exps.into_iter()
                    .map(|e| {
                        let v = 2f64.powi(e);
                        (v, x_number(v, bytes))
                    })
                    .collect()
            }
            XAxis::Log {
                lo,
                hi,
                pow2: false,
            } => {
                let (e0, e1) = (lo.ceil() as i32, hi.floor() as i32);
                // Less than two decades shown: 1, 2 and 5 of each, else powers of ten.
                let mult: &[f64] = if e1 - e0 < 2 {
                    &[1.0, 2.0, 5.0]
                } else {
                    &[1.0]
                };
                let stride = if e1 - e0 > 8 { 2 } else { 1 };
                (e0 - 1..=e1)
                    .step_by(stride)
                    .flat_map(|e| mult.iter().map(move |m| m * 10f64.powi(e)))
                    .filter(|v| (lo..=hi).contains(&&v.log10()))
                    .map(|v| (v, x_number(v, false)))
                    .collect()
            }
            XAxis::Linear(s) => s.ticks().0,
        }
    }
}

/// The legend: one key (line and marker, dashed and hollow for the paper's) and name per
/// curve, wrapped to the width. Returns the elements and the y below it.
fn legend(curves: &[Curve], lines: bool, y: f64) -> (String, f64) {
    let (s, row_y) = svg::wrapped_keys(
        curves.iter().map(|c| c.name.as_str()),
        56,
        26.0,
        FIG_WIDTH,
        y,
        |i, x, row_y| {
            let c = &curves[i];
            // A line in the key only where the curves are drawn with one (not for categories).
            let line = if lines {
                format!(
                    "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2\"{}/>",
                    f(x),
                    f(row_y - 4.0),
                    f(x + 20.0),
                    f(row_y - 4.0),
                    colour(c.style),
                    if c.is_paper() { " stroke-dasharray=\"4 3\"" } else { "" },
                )
            } else {
                String::new()
            };
            format!("{line}{}", marker(c, x + 10.0, row_y - 4.0))
        },
    );
    (s, row_y + 8.0)
}

/// A curve's marker: filled for measured points, hollow for the paper's.
fn marker(c: &Curve, x: f64, y: f64) -> String {
    let paint = if c.is_paper() {
        format!(
            "fill=\"#FFFFFF\" stroke=\"{}\" stroke-width=\"1.6\"",
            colour(c.style)
        )
    } else {
        format!("fill=\"{}\"", colour(c.style))
    };
    marker_painted(c.style, x, y, &paint)
}

/// Lines of at most `max` characters, broken at spaces, at most `lines` of them (the last
/// clipped).
fn wrap(text: &str, max: usize, lines: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in text.split_whitespace() {
        if !cur.is_empty() && cur.chars().count() + 1 + word.chars().count() > max {
            out.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    if out.len() > lines {
        let rest = out[lines - 1..].join(" ");
        out.truncate(lines - 1);
        out.push(rest);
    }
    out.into_iter().map(|l| clip(&l, max)).collect()
}

/// One figure as a chart (for inline use in the report, or as a document): its title and
/// caption, legend, axes, then its curves.
pub fn figure_chart(fig: &FigureData) -> Svg {
    let mut s = String::new();
    svg::title(&mut s, &clip(&fig.title, 80));
    let y = caption(&mut s, fig);
    let axis = XAxis::of(fig);
    let categorical = matches!(axis, XAxis::Categories(_));
    let (leg, below) = legend(&fig.curves, !categorical, y + 24.0);
    s.push_str(&leg);
    let plot = Plot::new(fig, axis, below + 12.0);
    plot.axes(&mut s, fig);
    plot.curves(&mut s, fig);
    Svg::new(FIG_WIDTH, plot.bottom + 48.0, fig.title.clone(), s)
}

/// The papers a figure reproduces, in at most two lines under its title. Returns the y of
/// the last line.
fn caption(s: &mut String, fig: &FigureData) -> f64 {
    let mut y = 22.0;
    let caption = fig.papers.join("; ");
    for line in wrap(
        &caption,
        ((FIG_WIDTH - 32.0) / text_w("x", 11.0)) as usize,
        2,
    ) {
        y += 16.0;
        let _ = writeln!(
            s,
            "<text x=\"16\" y=\"{}\" font-size=\"11\" fill=\"{MUTED}\">{}</text>",
            f(y),
            esc(&line)
        );
    }
    y
}

/// Where a figure's plot lies and how values map onto it: its axes and units, and its
/// edges (the left one after the widest y label).
struct Plot {
    axis: XAxis,
    scale: Scale,
    unit: YUnit,
    y_ticks: Vec<(f64, String)>,
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
}

impl Plot {
    fn new(fig: &FigureData, axis: XAxis, top: f64) -> Plot {
        let (scale, unit) = fig.y_scale();
        let y_ticks = scale.ticks().0;
        let label_w = y_ticks
            .iter()
            .map(|(_, l)| text_w(l, 12.0))
            .fold(0.0, f64::max);
        Plot {
            axis,
            scale,
            unit,
            y_ticks,
            left: 34.0 + label_w + 8.0,
            right: FIG_WIDTH - 20.0,
            top,
            bottom: top + PLOT_H,
        }
    }

    /// The plot's width between its axes' ends.
    fn width(&self) -> f64 {
        self.right - self.left
    }

    /// Where a value of y in the series' unit lands (before `unit` scales it for display).
    fn y_of(&self, v: f64) -> f64 {
        self.bottom - self.scale.frac(v / self.unit.factor) * PLOT_H
    }

    /// Where `x` lands along the plot; None where the axis has no place for it.
    fn x_of(&self, x: f64) -> Option<f64> {
        self.axis.frac(x).map(|t| self.left + t * self.width())
    }

    /// The width of one x tick's share of the plot (a category's band).
    fn band(&self, fig: &FigureData) -> f64 {
        self.width() / self.axis.ticks(fig.is_bytes()).len().max(1) as f64
    }

    /// Whether x names categories (drawn without lines) rather than numbers.
    fn is_categorical(&self) -> bool {
        matches!(self.axis, XAxis::Categories(_))
    }

    /// The grid and ticks of both axes, the axes, their titles, and a note on a figure with
    /// no measured point.
    fn axes(&self, s: &mut String, fig: &FigureData) {
        let (left, right, top, bottom) = (self.left, self.right, self.top, self.bottom);
        for (v, label) in &self.y_ticks {
            svg::y_grid_line(s, left, right, bottom - self.scale.frac(*v) * PLOT_H, label);
        }
        // Tick labels that would run into the previous one are left out (categories are
        // clipped to their band instead).
        let band = self.band(fig);
        let mut last_end = f64::NEG_INFINITY;
        for (v, label) in &self.axis.ticks(fig.is_bytes()) {
            let Some(x) = self.x_of(*v) else { continue };
            let label = match self.axis {
                XAxis::Categories(_) => {
                    clip(label, ((band - 6.0) / text_w("x", 12.0)).max(3.0) as usize)
                }
                _ => label.clone(),
            };
            let half = text_w(&label, 12.0) / 2.0;
            if x - half < last_end + 6.0 {
                continue;
            }
            last_end = x + half;
            svg::x_tick(s, x, bottom, &label);
        }
        svg::axes(s, left, top, bottom, right);
        let log_note = |t: String, log: bool| if log { format!("{t}, log scale") } else { t };
        let y_title = log_note(fig.y_title(), self.scale.is_log());
        svg::y_axis_title(s, 24.0, top + PLOT_H / 2.0, &y_title);
        let x_title = log_note(fig.x_title(), self.axis.is_log());
        svg::x_axis_title(s, left + self.width() / 2.0, bottom, &x_title);
        if fig.values().is_empty() {
            let _ = writeln!(
                s,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{MUTED}\" font-style=\"italic\">no point of this figure was measured</text>",
                f(left + self.width() / 2.0),
                f(top + PLOT_H / 2.0)
            );
        }
    }

    /// Every curve, the paper's first so the measured ones are drawn over them. Curves sit
    /// side by side around each x, so equal values do not hide one another: a few pixels on a
    /// numeric axis, spread over the band for categories (which get no lines). On a numeric
    /// axis the paper's points stay at their x; only measured curves are spread.
    fn curves(&self, s: &mut String, fig: &FigureData) {
        let categorical = self.is_categorical();
        let measured = fig.curves.iter().filter(|c| !c.is_paper()).count();
        let n = if categorical {
            fig.curves.len()
        } else {
            measured
        };
        let step = if categorical {
            (self.band(fig) * 0.6 / n as f64).min(14.0)
        } else {
            4.0
        };
        let order = fig
            .curves
            .iter()
            .enumerate()
            .filter(|(_, c)| c.is_paper())
            .chain(fig.curves.iter().enumerate().filter(|(_, c)| !c.is_paper()));
        for (k, c) in order {
            let dodge = if !categorical && c.is_paper() {
                0.0
            } else {
                (k as f64 - (n as f64 - 1.0) / 2.0) * step
            };
            self.curve(s, fig, c, dodge);
        }
    }

    /// One curve moved `dodge` pixels along x: its line (not for categories), then each point
    /// with its tooltip, whisker and marker, in one group named after its series.
    fn curve(&self, s: &mut String, fig: &FigureData, c: &Curve, dodge: f64) {
        let mut pts: Vec<(&CurvePoint, f64, f64)> = c
            .points
            .iter()
            .filter_map(|p| {
                let x = self.x_of(p.x)? + dodge;
                Some((p, x, self.y_of(p.y.filter(|v| v.is_finite())?)))
            })
            .collect();
        pts.sort_by(|a, b| a.1.total_cmp(&b.1));
        let _ = writeln!(s, "<g class=\"curve\" data-curve=\"{}\">", esc(&c.series));
        if !self.is_categorical() && pts.len() > 1 {
            let line: Vec<(f64, f64)> = pts.iter().map(|(_, x, y)| (*x, *y)).collect();
            let (width, dash) = if c.is_paper() {
                ("1.5", Some("5 4"))
            } else {
                ("2", None)
            };
            svg::polyline(s, &line, colour(c.style), width, dash);
        }
        let unit = &self.unit;
        for (p, x, y) in &pts {
            let ci = p
                .ci
                .map(|[lo, hi]| format!(" [{}, {}]", num(lo / unit.factor), num(hi / unit.factor)))
                .unwrap_or_default();
            let tip = format!(
                "{}: {} \u{2192} {} {}{ci}",
                c.name,
                fig.x_text(p.x, p.label.as_deref()),
                num(p.y.unwrap_or(0.0) / unit.factor),
                unit.label
            );
            let bar =
                p.ci.map(|[lo, hi]| whisker(*x, self.y_of(lo), self.y_of(hi), colour(c.style)))
                    .unwrap_or_default();
            let _ = writeln!(
                s,
                "<g class=\"point\"><title>{}</title>{bar}{}</g>",
                esc(&tip),
                marker(c, *x, *y)
            );
        }
        s.push_str("</g>\n");
    }
}

/// One figure as a standalone SVG document (`sysperf plot --figure ID -o x.svg`).
pub fn figure_svg(fig: &FigureData) -> String {
    figure_chart(fig).document()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_group_series_and_add_paper_curves_once() {
        let run = crate::report::fixture_series_run();
        let mut other = run.clone();
        other.id = "0000000000d4".into();
        other.label = Some("after".into());
        let figs = figures(&[run, other]);
        let ids: Vec<&str> = figs.iter().map(|g| g.id.as_str()).collect();
        assert_eq!(ids, ["bbn.throughput", "tty.output"]);
        let names: Vec<&str> = figs[0].curves.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "pipe \u{2014} suites <fixture>",
                "FIFO with an 8-byte header \u{2014} suites <fixture>",
                "pipe \u{2014} after",
                "FIFO with an 8-byte header \u{2014} after",
                "paper: PDP-11/70 (fixture) \u{2014} pipe",
                "paper: PDP-11/70 (fixture) \u{2014} FIFO with an 8-byte header",
            ]
        );
        // The paper curves take their series' first colour; the runs' curves differ.
        let styles: Vec<usize> = figs[0].curves.iter().map(|c| c.style).collect();
        assert_eq!(styles, [0, 1, 2, 3, 0, 1]);
        assert!(figs[1].categories().is_some() && figs[0].categories().is_none());
        assert_eq!(
            figs[0].y_unit().label,
            "MB/s",
            "log axis: the middle decade's unit"
        );
        let p = &figs[0].curves[0].points[0];
        assert!(p.cpu_pct.unwrap() > 0.0 && p.faults_per_op.is_some());
    }

    #[test]
    fn figure_snapshot() {
        let figs = figures(&[crate::report::fixture_series_run()]);
        let doc = figure_svg(&figs[0]);
        // Two measured curves of 7 points with whiskers, two paper curves of 4 hollow ones.
        assert_eq!(doc.matches("<g class=\"curve\"").count(), 4);
        assert_eq!(doc.matches("<g class=\"point\"").count(), 2 * 7 + 2 * 4);
        assert_eq!(doc.matches("stroke-width=\"1.3\"").count(), 2 * 7);
        assert_eq!(doc.matches("fill=\"#FFFFFF\" stroke=").count(), 2 * 4 + 2);
        for tick in [">2<", ">16<", ">128<", ">1K<", ">8K<", ">64K<", ">1M<"] {
            assert!(doc.contains(tick), "{tick}");
        }
        insta::assert_snapshot!(doc);
    }

    #[test]
    fn categorical_figure_snapshot() {
        let figs = figures(&[crate::report::fixture_series_run()]);
        let doc = figure_svg(&figs[1]);
        assert!(doc.contains(">cooked<") && doc.contains(">raw<"));
        assert!(
            !doc.contains("stroke-width=\"2\" fill=\"none\""),
            "no lines"
        );
        insta::assert_snapshot!(doc);
    }

    /// Every figure is SVG that resvg reads and draws. With SYSPERF_KEEP_FIGURES=DIR the
    /// PNGs are written there, to be looked at.
    #[test]
    fn figures_rasterize() {
        let fonts = crate::report::png::system_fonts();
        for fig in figures(&[crate::report::fixture_series_run()]) {
            let chart = figure_chart(&fig);
            let png = crate::report::png::render(&chart.document(), fonts.clone()).unwrap();
            assert_eq!(png.width, (chart.width * 2.0).round() as u32);
            if let Some(dir) = std::env::var_os("SYSPERF_KEEP_FIGURES") {
                let path = std::path::Path::new(&dir).join(format!("{}.png", fig.id));
                std::fs::write(path, &png.bytes).unwrap();
            }
        }
    }

    #[test]
    fn units_scales_and_ticks() {
        let mut fig = figures(&[crate::report::fixture_series_run()]).remove(0);
        fig.y_kind = YKind::CostNs;
        assert_eq!(fig.y_unit().label, "ms");
        assert!(fig.y_scale().0.is_log(), "2 KB/s to 2.6 GB/s: six decades");
        for c in &mut fig.curves {
            for (k, p) in c.points.iter_mut().enumerate() {
                p.y = Some(10.0 + 100.0 * k as f64);
                p.ci = None;
            }
        }
        assert_eq!(fig.y_unit().label, "ns");
        assert!(!fig.y_scale().0.is_log(), "10 to 610 ns: linear");
        fig.curves[0].points[0].y = Some(0.5);
        assert!(fig.y_scale().0.is_log(), "more than three decades");
        fig.y_kind = YKind::PerHour;
        fig.unit = "process".into();
        assert_eq!(fig.y_title(), "processes per hour");
        assert_eq!(x_number(65536.0, true), "64K");
        assert_eq!(x_number(65536.0, false), "65536");
        assert_eq!(x_number(100_000.0, false), "100k");
        assert_eq!(x_number(0.5, false), "0.500");
        let ticks = XAxis::Log {
            lo: 0.0,
            hi: 5.0,
            pow2: false,
        }
        .ticks(false);
        let labels: Vec<&str> = ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["1", "10", "100", "1000", "10k", "100k"]);
        assert_eq!(wrap("a bb ccc dddd", 6, 2), ["a bb", "ccc d\u{2026}"]);
    }

    #[test]
    fn every_string_is_escaped_and_odd_values_survive() {
        let mut run = crate::report::fixture_series_run();
        for s in &mut run.series {
            s.figure_title = "<script>alert(1)</script>".into();
            s.curve = "\"q\" & a".into();
            s.paper = "<img src=x>".into();
            s.points[0].y = None;
            s.points[1].label = Some("<b>".into());
            if let Some(y) = s.points.last_mut().and_then(|p| p.y.as_mut()) {
                y.median = f64::NAN;
            }
        }
        for fig in figures(&[run]) {
            let doc = figure_svg(&fig);
            assert!(!doc.contains("<script") && !doc.contains("<img") && !doc.contains("<b>"));
            assert!(doc.contains("&lt;script&gt;") && doc.contains("&quot;q&quot; &amp; a"));
            assert!(!doc.contains("NaN") && !doc.contains("inf\""));
        }
        let empty = FigureData {
            curves: Vec::new(),
            ..figures(&[crate::report::fixture_series_run()]).remove(0)
        };
        assert!(figure_svg(&empty).contains("no point of this figure was measured"));
    }
}
