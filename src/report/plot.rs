//! `sysperf plot`: which figure the options name (one test, a group of tests, or a suite's
//! figure) for a set of runs, and its bytes as SVG or PNG. Pure apart from PNG's fonts, which
//! the caller's system provides.

use super::svg::{self, Svg};
use crate::compare::{self, Comparison};
use crate::error::InputError;
use crate::model::Run;
use std::path::Path;

/// The image format the output's name asks for: SVG or PNG.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Svg,
    Png,
}

/// The format from the file name's extension; anything but .svg or .png is refused.
pub fn format_of(output: &Path) -> Result<Format, InputError> {
    match output
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("svg") => Ok(Format::Svg),
        Some("png") => Ok(Format::Png),
        _ => Err(InputError::InvalidValue {
            what: "--output",
            value: output.display().to_string(),
            why: "the file name must end in .svg or .png".into(),
        }),
    }
}

/// Checks a `--group` name before any run is loaded.
pub fn check_group(group: &str) -> Result<(), InputError> {
    match svg::find_group(group) {
        Some(_) => Ok(()),
        None => Err(InputError::InvalidValue {
            what: "--group",
            value: group.to_string(),
            why: format!(
                "valid groups: {}",
                svg::groups()
                    .iter()
                    .map(|g| g.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}

/// What to draw.
pub enum What<'a> {
    Test(&'a str),
    Group(&'a str),
    Figure(&'a str),
    /// The evolution heat map (`report::heatmap`) of a comparison's columns.
    Heatmap,
}

/// The evolution heat map of a (possibly grouped) comparison: `sysperf plot --heatmap`.
pub fn heatmap(cmp: &Comparison) -> Result<Svg, InputError> {
    super::heatmap::chart(cmp).ok_or_else(|| InputError::InvalidValue {
        what: "--heatmap",
        value: format!("{} column(s)", cmp.runs.len()),
        why: "a heat map needs two columns or more with tests: name two runs or more, or group runs with --by KEY".into(),
    })
}

/// The figure `what` names for `runs` (the first is the baseline of the verdicts).
pub fn figure(runs: &[Run], what: What) -> Result<Svg, InputError> {
    let cmp: Comparison = compare::build(runs, 0, compare::DEFAULT_NOISE_PCT);
    let present = || {
        cmp.rows
            .iter()
            .map(|r| r.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match what {
        What::Heatmap => heatmap(&cmp),
        What::Figure(id) => {
            let figs = super::series_svg::figures(runs);
            match figs.iter().find(|g| g.id == id) {
                Some(fig) => Ok(super::series_svg::figure_chart(fig)),
                None => Err(InputError::InvalidValue {
                    what: "--figure",
                    value: id.to_string(),
                    why: if figs.is_empty() {
                        "these runs have no suite figures (make one with `sysperf run --suite NAME`)".into()
                    } else {
                        format!(
                            "no such figure in these runs; their figures: {}",
                            figs.iter()
                                .map(|g| g.id.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    },
                }),
            }
        }
        What::Test(id) => svg::test_chart(&cmp, id).ok_or_else(|| InputError::InvalidValue {
            what: "--test",
            value: id.to_string(),
            why: format!(
                "{}; valid tests for these runs: {}",
                if crate::bench::find(id).is_some() {
                    "none of these runs has it"
                } else {
                    "no such test"
                },
                present()
            ),
        }),
        What::Group(name) => {
            check_group(name)?;
            let Some(group) = svg::find_group(name) else {
                return Err(InputError::InvalidValue {
                    what: "--group",
                    value: name.to_string(),
                    why: "no such group".into(),
                });
            };
            let mut parts: Vec<Svg> = svg::group_chart(&cmp, group).into_iter().collect();
            if group.name == "paging" {
                parts.extend(svg::paging_figure(&cmp));
            }
            match parts.len() {
                0 => Err(InputError::InvalidValue {
                    what: "--group",
                    value: name.to_string(),
                    why: format!(
                        "none of these runs has a test in it; their tests: {}",
                        present()
                    ),
                }),
                1 => Ok(parts.remove(0)),
                _ => Ok(svg::stack(group.title, &parts)),
            }
        }
    }
}
