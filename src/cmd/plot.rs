//! `sysperf plot`: one test, a group of tests, a suite's figure or the evolution heat map of
//! runs, as an SVG or PNG file.

use super::args::{DbArg, FleetArgs};
use super::failure::Context;
use super::Result;
use clap::Args as ClapArgs;
use std::path::PathBuf;
use sysperf::catalog::Catalog;
use sysperf::error::InputError;
use sysperf::model::Run;
use sysperf::report::plot::{self, What};
use sysperf::{bench, compare, exit, output, report};

#[derive(ClapArgs)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["test", "group", "figure", "heatmap"])))]
pub(crate) struct Args {
    /// Runs to draw, one colour each (id, id prefix, label, 'latest' or a reference run);
    /// with --where or --by and no RUN, every stored complete run that matches.
    #[arg(required_unless_present_any = ["wheres", "by"], value_name = "RUN")]
    pub(crate) runs: Vec<String>,
    /// The evolution heat map: one row per test, one column per run or --by group (kernels
    /// in version order), each cell the slowdown against the first column.
    #[arg(long)]
    pub(crate) heatmap: bool,
    #[command(flatten)]
    pub(crate) fleet: FleetArgs,
    /// One test, e.g. syscall.
    #[arg(long, value_name = "ID")]
    pub(crate) test: Option<String>,
    #[arg(long, value_name = "NAME", help = group_help())]
    pub(crate) group: Option<String>,
    /// A figure of the runs' suites (`run --suite`), e.g. bbn.pipes: its curves of every run
    /// and the paper's figures (the ids are listed below and by `sysperf list --suites`).
    #[arg(long, value_name = "ID")]
    pub(crate) figure: Option<String>,
    /// Where to write the figure: FILE.svg or FILE.png.
    #[arg(short, long, value_name = "FILE")]
    pub(crate) output: PathBuf,
    #[command(flatten)]
    pub(crate) db: DbArg,
}

/// `--group`'s help: the benchmarks' chart groups, from their registry.
fn group_help() -> String {
    let names: Vec<&str> = bench::charts().iter().map(|c| c.name).collect();
    match names.split_last() {
        Some((last, rest)) => format!("A group of tests: {} or {last}", rest.join(", ")),
        None => "A group of tests".into(),
    }
}

/// `sysperf plot --help`: the groups from the benchmarks' registry, and the figure ids from
/// the suites'.
pub(crate) fn plot_help() -> String {
    let groups: Vec<String> = bench::charts()
        .iter()
        .map(|c| match c.about {
            Some(about) => format!("{} ({about})", c.name),
            None => c.name.to_string(),
        })
        .collect();
    format!(
        "Groups: {}.\n\nFigures (--figure, of runs made with --suite): {}.\n\nBars are medians with 95% confidence whiskers, one colour per run; the first run is the baseline of the verdicts written beside the bars. PNG images are drawn at twice the SVG's size.",
        groups.join(", "),
        sysperf::suite::all_figure_ids().join(", ")
    )
}

pub(crate) fn exec(a: Args) -> Result<i32> {
    // The format and the group are checked first, so a typo costs nothing.
    let format = plot::format_of(&a.output)?;
    output::check(&a.output).context("--output")?;
    if let Some(g) = &a.group {
        plot::check_group(g)?;
    }
    let what = match (&a.figure, &a.test, &a.group) {
        _ if a.heatmap => What::Heatmap,
        (Some(f), _, _) => What::Figure(f),
        (None, Some(t), _) => What::Test(t),
        (None, None, Some(g)) => What::Group(g),
        // clap requires one of the three; kept total rather than unreachable!().
        (None, None, None) => {
            return Err(InputError::InvalidValue {
                what: "arguments",
                value: String::new(),
                why: "give --test ID, --group NAME or --figure ID".into(),
            }
            .into())
        }
    };
    let sel = a.fleet.selection()?;
    let mut catalog = Catalog::new(a.db.db);
    let figure = if a.heatmap {
        // Columns as compare makes them: groups of replicated runs, or --by groups.
        let (_, cmp) = catalog.fleet_comparison(&a.runs, None, &sel, compare::DEFAULT_NOISE_PCT)?;
        plot::heatmap(&cmp)?
    } else if !sel.is_empty() {
        let columns = catalog.select_columns(&a.runs, None, &sel)?;
        let firsts: Vec<Run> = columns
            .into_iter()
            .filter_map(|c| c.into_iter().next())
            .collect();
        plot::figure(&firsts, what)?
    } else {
        let runs = catalog.load_with_baseline(&a.runs, None)?;
        plot::figure(&runs, what)?
    };
    let bytes = match format {
        plot::Format::Png => {
            let image = report::png::render(&figure.document(), report::png::system_fonts())?;
            if !image.has_text {
                say!("sysperf: warning: no fonts found, so the PNG has no text; install one (Debian: apt-get install fonts-dejavu-core) or write .svg");
            }
            image.bytes
        }
        plot::Format::Svg => figure.document().into_bytes(),
    };
    output::write(&a.output, &bytes, 0o644)?;
    say!("sysperf: wrote {}", a.output.display());
    Ok(exit::OK)
}
