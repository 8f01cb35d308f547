//! The lines `sysperf ab CMD...` prints as hyperfine prints them (#43): per command its time
//! per run (mean +- sd, min...max over the trials, user and system CPU), for a command alone
//! its median's interval, per A/B the summary line with the paired ratio, its interval and
//! verdict, and each failed command with what it said. Not the comparison table, which
//! `compare` prints.

use crate::compare::{Comparison, Verdict};
use crate::model::{Estimate, Run, TrialKind};

/// A time in `unit` (microsecond, millisecond, second), or one that suits `ns`.
fn unit_of(ns: f64, unit: Option<&str>) -> (f64, &'static str) {
    match unit {
        Some("microsecond") => (1e3, "µs"),
        Some("millisecond") => (1e6, "ms"),
        Some("second") => (1e9, "s"),
        _ if ns < 1e6 => (1e3, "µs"),
        _ if ns < 1e9 => (1e6, "ms"),
        _ => (1e9, "s"),
    }
}

/// The `command` result's summary of `run`, if it has one.
fn estimate(run: &Run) -> Option<(&Estimate, &Estimate, &Estimate, u64)> {
    let r = run.results.iter().find(|r| r.id == "command")?;
    let s = r.summary.as_ref()?;
    let per_trial = r
        .trials
        .iter()
        .filter(|t| t.kind == TrialKind::Measured)
        .map(|t| t.iterations)
        .max()
        .unwrap_or(0);
    // The command's CPU time is its process's and its children's (`whole`); the waiting
    // worker's own is the spawning's, beside it.
    let (user, sys) = match &s.whole {
        Some(w) => (&w.user_ns_per_op, &w.sys_ns_per_op),
        None => (&s.user_ns_per_op, &s.sys_ns_per_op),
    };
    Some((&s.wall_ns_per_op, user, sys, per_trial))
}

/// hyperfine's lines for the `i`th command, `name`, of `run`: its mean time per run +- the
/// trials' standard deviation, user and system CPU per run, and the trials' range.
pub fn per_command(i: usize, name: &str, run: &Run, unit: Option<&str>) -> String {
    let mut s = format!("Command {i}: {name}\n");
    let Some((wall, user, sys, per_trial)) = estimate(run) else {
        s += "  failed: no trial succeeded (see below)\n";
        return s;
    };
    let (div, u) = unit_of(wall.mean, unit);
    let f = |ns: f64| format!("{:.3} {u}", ns / div);
    s += &format!(
        "  Time (mean ± σ):   {} ± {}    [User: {}, System: {}]\n",
        f(wall.mean),
        f(wall.cv * wall.mean),
        f(user.median),
        f(sys.median)
    );
    s += &format!(
        "  Range (min … max): {} … {}    {} trials of {} runs each (each trial's time per run)\n",
        f(wall.min),
        f(wall.max),
        wall.n,
        per_trial
    );
    s
}

/// A command timed alone: its median time per run with the interval.
pub fn alone(run: &Run, unit: Option<&str>) -> String {
    let Some((wall, ..)) = estimate(run) else {
        return String::new();
    };
    let (div, u) = unit_of(wall.mean, unit);
    format!(
        "  Median: {:.3} {u} [{:.3}, {:.3}] ({:.0}% interval over the trials)\n",
        wall.median / div,
        wall.ci_low / div,
        wall.ci_high / div,
        100.0 * wall.ci_level
    )
}

/// hyperfine's summary line for the A/B of `a` (the baseline) and `b`: "`B` ran 1.047
/// [1.046, 1.049] times slower than `A`", with the verdict and what the interval covers.
pub fn summary(a: &Run, b: &Run, c: &Comparison) -> Option<String> {
    let name = |r: &Run| {
        r.params
            .ab
            .as_ref()
            .and_then(|s| s.command.clone())
            .unwrap_or_else(|| r.label.clone().unwrap_or_else(|| r.id.clone()))
    };
    let row = c.rows.iter().find(|r| r.id == "command")?;
    let ratio = row.ratios.get(1)?.as_ref()?;
    let (x, lo, hi, how) = if ratio.ratio >= 1.0 {
        let [lo, hi] = ratio.ci.unwrap_or([f64::NAN; 2]);
        (ratio.ratio, lo, hi, "slower")
    } else {
        let [lo, hi] = ratio.ci.unwrap_or([f64::NAN; 2]);
        (1.0 / ratio.ratio, 1.0 / hi, 1.0 / lo, "faster")
    };
    let interval = match ratio.ci {
        Some(_) => format!(" [{lo:.3}, {hi:.3}]"),
        None => String::new(),
    };
    let verdict = match ratio.verdict {
        Verdict::Faster | Verdict::Slower => format!(
            "{}: the whole {:.0}% interval ({}) lies outside the ±{}% noise band",
            ratio.verdict.as_str(),
            100.0 * crate::compare::LEVEL,
            ratio.covers.as_str(),
            c.noise_pct
        ),
        Verdict::NoChange => format!(
            "no significant change: the whole {:.0}% interval ({}) lies inside the ±{}% noise band",
            100.0 * crate::compare::LEVEL,
            ratio.covers.as_str(),
            c.noise_pct
        ),
        v => v.as_str().to_string(),
    };
    Some(format!(
        "`{}` ran {x:.3}{interval} times {how} than `{}`: {verdict}",
        name(b),
        name(a)
    ))
}

/// Each failed command of `runs` (`name`, run), with its error: the exit code and the last
/// lines of standard error the benchmark quoted.
pub fn failures<'r>(runs: impl Iterator<Item = (String, &'r Run)>) -> Vec<String> {
    let mut out = Vec::new();
    for (name, run) in runs {
        for r in run.results.iter().filter(|r| r.id == "command") {
            let error = r
                .error
                .clone()
                .or_else(|| r.trials.iter().find_map(|t| t.error.clone()));
            if let Some(e) = error {
                out.push(format!(
                    "the command `{name}` failed (run {}): {e}",
                    run.label.as_deref().unwrap_or(&run.id)
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_take_the_unit_asked_for_or_one_that_suits_them() {
        assert_eq!(unit_of(2.5e5, None), (1e3, "µs"));
        assert_eq!(unit_of(2.5e7, None), (1e6, "ms"));
        assert_eq!(unit_of(2.5e9, None), (1e9, "s"));
        assert_eq!(unit_of(2.5e9, Some("millisecond")), (1e6, "ms"));
    }
}
