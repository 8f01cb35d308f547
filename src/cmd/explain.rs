//! `sysperf explain A B [TEST...]`: why tests moved between two runs, from the kernel profiles
//! stored with them (`run --profile`), their trials and counters, and the recorded differences
//! the ties table links to the tests or their functions; with `--try-switches`, the
//! differences this machine can switch, each measured in paired rounds. The work is
//! `sysperf::ops::explain` (over `sysperf::explain`); the renderings are `report::explain`.

use super::args::{parse_pct, parse_seconds, DbArg};
use super::failure::Context;
use super::out::{print, print_json_text, worker_exe};
use super::progress::Bars;
use super::Result;
use clap::Args as ClapArgs;
use sysperf::engine::interrupted_code;
use sysperf::ops::explain::{explain, Request, TrySwitches};
use sysperf::{exit, report};

pub(crate) const EXPLAIN_HELP: &str = "\
A and B: a run id, a unique id prefix, a label, 'latest' or a reference run; A is the baseline.
Without TEST, the tests 'sysperf compare A B' calls slower or faster are explained; TEST (ids,
suite points such as scaling.path-depth@8, or globs) explains those whatever their verdict.

Each figure is time per operation, never a share of a profile. A function's time per operation
is its samples x the sampling period / the profiled trial's operations, with the Wilson 95%
interval of its count; B - A has the MOVER (Newcombe) interval of two independent proportions,
'~' marks a difference whose interval holds 0. 'share' is of the measured change (the median
wall time per operation, B - A). A side without a stored profile of a test is said, never made
up: 'sysperf run --profile TEST' stores one where the side is measured, and --measure profiles
it now when this machine stands for that side (and for it only). --try-switches sets each
recorded difference this machine can switch at runtime (a sysctl, THP, an ab's seccomp or
speculation switch) to A's value and to B's in paired rounds and says how much of the change
each accounts for ('cannot tell' when its interval holds no change); the others are listed
with why not, and every setting is put back. docs/explain.md has the method and its limits.";

#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Side A, the baseline: a run id, unique id prefix, label, 'latest' or reference run.
    #[arg(value_name = "A")]
    pub(crate) a: String,
    /// Side B, compared with A.
    #[arg(value_name = "B")]
    pub(crate) b: String,
    /// Tests to explain (ids, suite points, globs); default: those significantly slower or
    /// faster in B.
    #[arg(value_name = "TEST")]
    pub(crate) tests: Vec<String>,
    /// Noise band in percent (0-1000) of the verdicts that choose the tests, as 'compare
    /// --noise'.
    #[arg(
        long,
        value_name = "PCT",
        default_value = "2",
        allow_negative_numbers = true
    )]
    pub(crate) noise: String,
    /// Functions listed per test in the text and Markdown (the JSON has them all, up to 40).
    #[arg(long, value_name = "N", default_value_t = report::explain::DEFAULT_TOP as u32, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) top: u32,
    /// Print the explanation as one JSON document (docs/explain.md).
    #[arg(long, conflicts_with = "markdown")]
    pub(crate) json: bool,
    /// Print GitHub-flavoured Markdown, to paste into an issue.
    #[arg(long)]
    pub(crate) markdown: bool,
    /// Where a side's run has no profile of a test, profile the test now when this machine
    /// stands for that side (its recorded facts are this machine's now, and not the other
    /// side's), store it as a run labelled explain-RUNID and say which side was measured and
    /// when. A profile an earlier --measure stored is used without it.
    #[arg(long)]
    pub(crate) measure: bool,
    /// With --measure: how long each profiled trial runs, in seconds.
    #[arg(long, value_name = "S", default_value_t = 1.0, allow_negative_numbers = true, value_parser = parse_seconds, requires = "measure")]
    pub(crate) profile_seconds: f64,
    /// For each recorded difference this machine can switch at runtime (a sysctl, transparent
    /// huge pages, an ab's seccomp or speculation switch), measure the tests with it set to
    /// A's value and to B's in paired rounds, as 'sysperf ab' does, and say how much of the
    /// change it accounts for; the others are listed with why not. Every setting is put back.
    ///
    /// Only settings sysperf manages are set (the fingerprint's sysctls, transparent huge
    /// pages, ab's switches), only to values of their type and range, never lowering a
    /// protection; anything else the runs name is listed as not switched.
    #[arg(long)]
    pub(crate) try_switches: bool,
    /// With --try-switches: also set values recorded on another host (the run's fingerprint
    /// names another host name, or none). Off by default: a value written into a shared
    /// store or an imported file is someone else's choice of what this machine is set to.
    #[arg(long, requires = "try_switches")]
    pub(crate) allow_foreign_values: bool,
    /// With --try-switches: about how many seconds of paired rounds each switch gets (at
    /// least 10 rounds).
    #[arg(long, value_name = "S", default_value_t = 2.0, allow_negative_numbers = true, value_parser = parse_seconds, requires = "try_switches")]
    pub(crate) try_seconds: f64,
    /// Also write the explanation as a self-contained HTML page: each test's sentence and
    /// tables, its differential flame graph where both sides have a profile, and what
    /// --try-switches found.
    #[arg(long, value_name = "FILE.html")]
    pub(crate) html: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub(crate) db: DbArg,
}

impl Args {
    /// What to explain, as the library takes it.
    fn request(&self) -> Result<Request> {
        Ok(Request {
            a: self.a.clone(),
            b: self.b.clone(),
            tests: self.tests.clone(),
            noise_pct: parse_pct("--noise", &self.noise)?,
            measure_s: self.measure.then_some(self.profile_seconds),
            try_switches: self.try_switches.then_some(TrySwitches {
                seconds: self.try_seconds,
                allow_foreign_values: self.allow_foreign_values,
            }),
            db: self.db.db.clone(),
            worker_exe: worker_exe()?,
        })
    }
}

pub(crate) fn exec(a: Args) -> Result<i32> {
    let req = a.request()?;
    // Before anything is measured: a page that cannot be written is said now.
    if let Some(path) = &a.html {
        sysperf::output::check(path).context("--html")?;
    }
    let explained = explain(&req, &mut Bars::default())?;
    let e = &explained.explanation;
    if let Some(path) = &a.html {
        let page = report::html::explain_page(e, &explained.profile_pairs());
        sysperf::output::write(path, page.as_bytes(), 0o644).context("--html")?;
        say!("sysperf: wrote {}", path.display());
    }
    let top = a.top as usize;
    if a.json {
        print_json_text(&format!(
            "{}\n",
            serde_json::to_string_pretty(&report::explain::json(e))?
        ))
    } else if a.markdown {
        print(&report::explain::markdown(e, top))
    } else {
        print(&report::explain::text(e, top))
    }
    .context("writing the explanation")?;
    if explained.interrupted {
        return Ok(interrupted_code());
    }
    Ok(exit::OK)
}
