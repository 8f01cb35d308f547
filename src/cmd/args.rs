//! Arguments several commands share (the store, where benchmarks run, fleet queries, what runs
//! are compared against) and the parsers of their values. They check the shape of input only.

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::Args;
use std::path::PathBuf;
use sysperf::error::InputError;
use sysperf::harness::placement::{self, Mode};
use sysperf::units;

use super::failure::{Context, Result};

#[derive(Args, Clone)]
pub(crate) struct DbArg {
    /// Store to use: an SQLite file, or a PostgreSQL database as postgres://USER@HOST:PORT/DB
    /// (default: $SYSPERF_DB, else the XDG data directory).
    #[arg(long, value_name = "PATH", global = true)]
    pub(crate) db: Option<PathBuf>,
}

/// Files a run is also written to, as hyperfine's `--export-*` write theirs: `run` and `show`
/// print the run and write these besides.
#[derive(Args, Clone, Default)]
pub(crate) struct ExportArgs {
    /// Also write the run as CSV to FILE: one line per test, compare --csv's columns
    /// (hyperfine's --export-csv).
    #[arg(long, value_name = "FILE")]
    pub(crate) export_csv: Option<PathBuf>,
    /// Also write the run as a Markdown table to FILE, as compare --markdown prints it
    /// (hyperfine's --export-markdown).
    #[arg(long, value_name = "FILE")]
    pub(crate) export_markdown: Option<PathBuf>,
    /// Also write the run as JSON to FILE, as --json prints it (hyperfine's --export-json).
    #[arg(long, value_name = "FILE")]
    pub(crate) export_json: Option<PathBuf>,
}

impl ExportArgs {
    /// The files asked for, each with its option's name.
    pub(crate) fn files(&self) -> Vec<(&'static str, &PathBuf)> {
        [
            ("--export-csv", &self.export_csv),
            ("--export-markdown", &self.export_markdown),
            ("--export-json", &self.export_json),
        ]
        .into_iter()
        .filter_map(|(what, p)| p.as_ref().map(|p| (what, p)))
        .collect()
    }

    /// Each file checked before anything is measured: a bad path costs no run.
    pub(crate) fn check(&self) -> Result<()> {
        for (what, path) in self.files() {
            sysperf::output::check(path).context(what)?;
        }
        Ok(())
    }
}

/// Where a benchmark's processes run, shared by `run`, `trace` and `profile`.
#[derive(Args)]
pub(crate) struct PlaceArgs {
    /// Where two-process benchmarks run: both on one CPU, on two CPUs, or where the scheduler puts them.
    #[arg(long, default_value = "same", value_parser = placement_mode())]
    pub(crate) placement: Mode,
    /// CPUs to use, e.g. 1 or 0-3,5 (default: the allowed CPUs, last first).
    #[arg(long, value_name = "LIST")]
    pub(crate) cpu: Option<String>,
}

impl PlaceArgs {
    /// Where targets run: --placement on the CPUs of --cpu, checked against those this
    /// process may use, or on all of those (the engine's one placement path).
    pub(crate) fn placing(&self) -> Result<sysperf::engine::Placing> {
        Ok(sysperf::engine::Placing::new(
            self.placement,
            self.cpus()?,
            &allowed_cpus()?,
        )?)
    }

    /// --cpu as the user gave it (a run records it).
    pub(crate) fn cpus(&self) -> Result<Option<Vec<u32>>, InputError> {
        self.cpu.as_deref().map(placement::parse_list).transpose()
    }
}

/// The CPUs this process may run on.
pub(crate) fn allowed_cpus() -> Result<Vec<u32>> {
    sysperf::sys::get_affinity().context("reading the CPUs this process may use")
}

/// `--placement`: one of the harness's modes, by name.
fn placement_mode() -> impl TypedValueParser<Value = Mode> {
    PossibleValuesParser::new(Mode::ALL.map(Mode::as_str))
        .map(|name| Mode::parse(&name).unwrap_or(Mode::Same))
}

/// Fleet queries over the stored runs (#21): `--where KEY=VALUE` and `--by KEY`, shared by
/// `runs`, `compare`, `report` and `plot`.
#[derive(Args, Clone, Default)]
pub(crate) struct FleetArgs {
    /// Only runs whose KEY is VALUE: host, kernel, cpu, label or date (repeatable; the same
    /// KEY twice is either value, different KEYs must all match).
    #[arg(long = "where", value_name = "KEY=VALUE")]
    pub(crate) wheres: Vec<String>,
    /// Group runs by KEY (host, kernel, cpu, label or date): one column per value, kernels in
    /// version order, each column the newest complete runs of its group (up to 30).
    #[arg(long, value_name = "KEY")]
    pub(crate) by: Option<String>,
}

impl FleetArgs {
    /// The query the options make.
    pub(crate) fn selection(&self) -> Result<sysperf::fleet::Selection, InputError> {
        sysperf::fleet::Selection::parse(&self.wheres, self.by.as_deref())
    }
}

/// What runs are compared against, shared by `compare` and `report`.
#[derive(Args)]
pub(crate) struct AgainstArgs {
    /// The run the others are compared with (default: the first RUN); it becomes column 1.
    #[arg(long, value_name = "RUN")]
    pub(crate) baseline: Option<String>,
    #[command(flatten)]
    pub(crate) threshold: ThresholdArg,
}

/// `--threshold` (`--noise`), the one definition `compare`, `report`, `noise` and `ab` share.
#[derive(Args, Clone)]
pub(crate) struct ThresholdArg {
    /// The smallest change that counts, in percent (0-1000): a verdict needs the ratio's whole
    /// interval outside +-PCT (criterion's name; --noise is its old name).
    #[arg(
        long = "threshold",
        visible_alias = "noise",
        value_name = "PCT",
        default_value = "2",
        allow_negative_numbers = true
    )]
    pub(crate) noise: String,
}

impl ThresholdArg {
    /// The band, checked.
    pub(crate) fn pct(&self) -> Result<f64, InputError> {
        parse_pct("--threshold", &self.noise)
    }
}

/// The selection `noise` and `ab` measure when none is given: the six tests of the verdicts
/// issue.
pub(crate) const NOISE_DEFAULT: [&str; 6] = [
    "syscall",
    "csw",
    "pipeback4",
    "forks0",
    "execs0null",
    "seqpage",
];

/// The selection given, else [`NOISE_DEFAULT`].
pub(crate) fn or_noise_default(selection: &[String]) -> Vec<String> {
    if selection.is_empty() {
        NOISE_DEFAULT.iter().map(|s| s.to_string()).collect()
    } else {
        selection.to_vec()
    }
}

/// A percentage option: a finite number from 0 to 1000.
pub(crate) fn parse_pct(what: &'static str, s: &str) -> Result<f64, InputError> {
    let bad = |why: &str| InputError::InvalidValue {
        what,
        value: s.chars().take(40).collect(),
        why: why.into(),
    };
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| bad("not a number; give a percentage such as 5"))?;
    if !v.is_finite() || !(0.0..=1000.0).contains(&v) {
        return Err(bad("give a percentage from 0 to 1000"));
    }
    Ok(v)
}

/// A percentage option that may be left out.
pub(crate) fn parse_pct_opt(
    what: &'static str,
    s: Option<&str>,
) -> Result<Option<f64>, InputError> {
    s.map(|v| parse_pct(what, v)).transpose()
}

/// A seconds option (`--min-time`, `--timeout`, ...): above 0, at most a day.
pub(crate) fn parse_seconds(s: &str) -> std::result::Result<f64, String> {
    units::parse_seconds(s, &units::SECONDS)
}

/// A span with units (`10`, `2.5`, `90s`, `5m`, `1h`), at most a week.
pub(crate) fn parse_span(s: &str) -> std::result::Result<f64, String> {
    units::parse_seconds(s, &units::SPAN)
}
