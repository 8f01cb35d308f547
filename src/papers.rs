//! The papers' single figures (`data/reference/figures.tsv`: Table 8's page-fault service
//! times, namei's Tables 4, 9 and 10, the buffer cache's hit rate, vmstat's norms, Feder's
//! Tables II and IV, ...), which the commands that measure the same thing print beside their
//! own ([`figures_of`], [`beside`]); and the reader of the built-in tab-separated reference
//! files ([`rows`]) with its error. Pure data, embedded and parsed once: it sits with the
//! foundations so that observation (`watch`, `trace --system`, `profile --system`) and the
//! derived figures can print the papers' figures without depending on the registries of
//! curves (`published`) and reference runs (`reference`), which build on it.

use std::sync::OnceLock;

const FIGURES: &str = include_str!("../data/reference/figures.tsv");
const FIGURES_FILE: &str = "data/reference/figures.tsv";

/// The embedded data could not be read: a defect of this build of sysperf, never of the
/// user's input.
#[derive(Debug, Clone, thiserror::Error)]
#[error("built-in reference data {file}, line {line}: {why}; this is a bug in sysperf, please report it")]
pub struct ReferenceError {
    pub file: &'static str,
    pub line: usize,
    pub why: String,
}

/// How a single figure was printed: exactly, as a bound, or as an estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rel {
    Equal,
    Less,
    More,
    About,
}

impl Rel {
    fn sign(self) -> &'static str {
        match self {
            Rel::Equal => "",
            Rel::Less => "<",
            Rel::More => ">",
            Rel::About => "~",
        }
    }
}

/// One of the papers' single figures (data/reference/figures.tsv).
#[derive(Debug, Clone, PartialEq)]
pub struct TextFigure {
    /// What it measures; the commands that print it look it up by this.
    pub key: String,
    /// The system as the paper names it.
    pub system: String,
    pub rel: Rel,
    pub value: f64,
    /// The top of a range the paper printed ("25-35 tps"), `value` being its bottom.
    pub high: Option<f64>,
    pub unit: String,
    /// "Leffler et al. 1984, Table 8".
    pub source: String,
    /// The paper's words.
    pub words: String,
}

impl TextFigure {
    /// "~49" or "<13" or "789": the figure as printed, without its unit.
    pub fn shown(&self) -> String {
        let n = |v: f64| {
            if v.fract() == 0.0 {
                format!("{}", v as i64)
            } else {
                format!("{v}")
            }
        };
        let v = match self.high {
            Some(h) => format!("{}-{}", n(self.value), n(h)),
            None => n(self.value),
        };
        format!("{}{v}", self.rel.sign())
    }
}

/// Every single figure, in the file's order; parsed once.
pub fn figures() -> Result<&'static [TextFigure], ReferenceError> {
    static ALL: OnceLock<Result<Vec<TextFigure>, ReferenceError>> = OnceLock::new();
    ALL.get_or_init(|| {
        const HEADER: [&str; 7] = ["key", "system", "rel", "value", "unit", "source", "words"];
        let f = FIGURES_FILE;
        rows(f, FIGURES, &HEADER)?
            .into_iter()
            .map(|(n, r)| {
                let err = |why: String| ReferenceError {
                    file: f,
                    line: n,
                    why,
                };
                let rel = match r[2] {
                    "=" => Rel::Equal,
                    "<" => Rel::Less,
                    ">" => Rel::More,
                    "~" => Rel::About,
                    x => return Err(err(format!("'{x}' is not one of = < > ~"))),
                };
                // A number, or a range "25-35" (a leading '-' is a sign).
                let number = |t: &str| t.parse::<f64>().ok().filter(|v| v.is_finite());
                let (value, high) = match r[3].get(1..).and_then(|t| t.find('-')) {
                    Some(i) => (number(&r[3][..=i]), number(&r[3][i + 2..]).map(Some)),
                    None => (number(r[3]), Some(None)),
                };
                let (value, high) = value
                    .zip(high)
                    .ok_or_else(|| err(format!("'{}' is neither a number nor a range", r[3])))?;
                if r.iter().any(|c| c.is_empty()) {
                    return Err(err("an empty column".into()));
                }
                Ok(TextFigure {
                    key: r[0].into(),
                    system: r[1].into(),
                    rel,
                    value,
                    high,
                    unit: r[4].into(),
                    source: r[5].into(),
                    words: r[6].into(),
                })
            })
            .collect()
    })
    .as_ref()
    .map(Vec::as_slice)
    .map_err(Clone::clone)
}

/// The figures of `key`, one per system, in the file's order (none for an unknown key).
pub fn figures_of(key: &str) -> Result<Vec<&'static TextFigure>, ReferenceError> {
    Ok(figures()?.iter().filter(|f| f.key == key).collect())
}

/// The figures of `key` as one phrase to print beside today's: "4.1BSD 45, 4.2BSD 57, with
/// both caches ~49 % of CPU time (Leffler et al. 1984, §3.2; §4.1.1)"; empty for an unknown
/// key, and the error's text if the built-in data cannot be read (a bug, tested).
pub fn beside(key: &str) -> String {
    match figures_of(key) {
        Ok(f) if f.is_empty() => String::new(),
        Ok(f) => {
            let values: Vec<String> = f
                .iter()
                .map(|x| format!("{} {}", x.system, x.shown()))
                .collect();
            let mut sources: Vec<&str> = Vec::new();
            for x in &f {
                if !sources.contains(&x.source.as_str()) {
                    sources.push(&x.source);
                }
            }
            format!(
                "{} {} ({})",
                values.join(", "),
                f[0].unit,
                sources.join("; ")
            )
        }
        Err(e) => e.to_string(),
    }
}

/// The one figure of `key` for `system`, if the papers printed it.
pub fn figure(key: &str, system: &str) -> Option<&'static TextFigure> {
    figures()
        .ok()?
        .iter()
        .find(|f| f.key == key && f.system == system)
}

/// Data lines of a TSV after its exact header, each split into `header.len()` fields.
pub(crate) fn rows<'a>(
    file: &'static str,
    text: &'a str,
    header: &[&str],
) -> Result<Vec<(usize, Vec<&'a str>)>, ReferenceError> {
    let err = |line, why: String| ReferenceError { file, line, why };
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| !l.starts_with('#') && !l.trim().is_empty());
    let (n, first) = lines.next().ok_or_else(|| err(0, "no header".into()))?;
    let found: Vec<&str> = first.split('\t').collect();
    if found != header {
        return Err(err(n, format!("header is {found:?}, expected {header:?}")));
    }
    lines
        .map(|(n, l)| {
            let f: Vec<&str> = l.split('\t').collect();
            if f.len() == header.len() {
                Ok((n, f))
            } else {
                Err(err(
                    n,
                    format!("{} fields, expected {}", f.len(), header.len()),
                ))
            }
        })
        .collect()
}
