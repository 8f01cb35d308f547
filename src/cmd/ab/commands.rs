//! `sysperf ab CMD...` (#43): commands timed as hyperfine times them, with its flags where
//! they mean the same, on sysperf's paired engine: each command after the baseline is one
//! A/B (paired round by round, both sides stored), a command alone is one run. Not the switch
//! form (`ab --switch`), which `super` measures on benchmarks.
//!
//! What it prints beyond `compare`'s table: hyperfine's per-command lines (mean +- sd and
//! min...max of the trials' time per run, user and system CPU) and its summary line with the
//! paired interval and verdict; where the commands ran; and, loudly, a command that failed.
//! Here: what was typed made into command lines, and the printing; --setup, --warmup, the
//! rounds and --cleanup are `sysperf::ops::commands`.

use super::super::args::{allowed_cpus, parse_pct_opt};
use super::super::failure::{with_spool, Context};
use super::super::out::{print, worker_exe};
use super::super::progress::{Bars, Trials};
use super::super::shared::{print_comparison, Format};
use super::super::Result;
use super::Args;
use std::path::PathBuf;
use sysperf::bench::command::CommandLine;
use sysperf::catalog::Catalog;
use sysperf::engine::ab::{CommandSides, Design};
use sysperf::engine::{self, RunPlan, RunRequest};
use sysperf::error::InputError;
use sysperf::harness::placement::Mode;
use sysperf::model::Run;
use sysperf::ops::commands::{self, Timed};
use sysperf::store::Backend;
use sysperf::{compare, exit};

/// One command as typed: its line, its name in outputs, and its variables.
struct Typed {
    line: String,
    name: Option<String>,
    env: Vec<String>,
}

/// The commands the user gave, the baseline first: positional (or --a/--b), each parameter
/// value's, and --reference before them.
fn typed(a: &Args) -> Result<Vec<Typed>, InputError> {
    let mut given: Vec<(String, Vec<String>)> = match (&a.a, &a.b) {
        (Some(x), Some(y)) => vec![(x.clone(), a.a_env.clone()), (y.clone(), a.b_env.clone())],
        _ => a
            .selection
            .iter()
            .map(|s| (s.clone(), Vec::new()))
            .collect(),
    };
    if given.is_empty() {
        return Err(InputError::InvalidValue {
            what: "ab",
            value: String::new(),
            why: "say what to compare: commands, as hyperfine takes them ('sysperf ab \"gzip -1 < f\" \"gzip -9 < f\"', or --a CMD --b CMD), or a switch measured on benchmarks ('sysperf ab --switch seccomp', or --sysctl NAME=VALUE; see 'sysperf ab --help')".into(),
        });
    }
    // A benchmark id where a command goes, and no program of that name: the switch form
    // was meant, without its switch.
    if a.a.is_none() {
        let benchmark = |p: &String| {
            !p.contains(char::is_whitespace)
                && sysperf::programs::find(p).is_err()
                && sysperf::engine::ab::selection(std::slice::from_ref(p), a.quick).is_ok()
        };
        if let Some(p) = a.selection.iter().find(|p| benchmark(p)) {
            return Err(InputError::InvalidValue {
                what: "ab",
                value: p.clone(),
                why: format!("a benchmark, and no program of that name: measure benchmarks with a switch ('sysperf ab {p} --switch seccomp', or --sysctl NAME=VALUE); commands are timed as 'sysperf ab \"CMD_A\" \"CMD_B\"'"),
            });
        }
    }
    let names = &a.cmd.command_name;
    let mut out = Vec::new();
    match a.cmd.parameter()? {
        Some((var, values)) => {
            let key = format!("{{{var}}}");
            for (line, env) in &given {
                for v in &values {
                    out.push(Typed {
                        line: line.replace(&key, v),
                        name: names.get(out.len()).map(|n| n.replace(&key, v)),
                        env: env.clone(),
                    });
                }
            }
        }
        None => {
            for (i, (line, env)) in given.drain(..).enumerate() {
                out.push(Typed {
                    line,
                    name: names.get(i).cloned(),
                    env,
                });
            }
        }
    }
    if names.len() > out.len() {
        return Err(InputError::InvalidValue {
            what: "--command-name",
            value: names.join(", "),
            why: format!("{} names for {} commands", names.len(), out.len()),
        });
    }
    if let Some(r) = &a.cmd.reference {
        out.insert(
            0,
            Typed {
                line: r.clone(),
                name: None,
                env: Vec::new(),
            },
        );
    }
    Ok(out)
}

/// Each command as the benchmark runs it.
fn lines(a: &Args, typed: &[Typed]) -> Result<Vec<CommandLine>, InputError> {
    let shell = a.cmd.shell();
    let output = a.cmd.output()?;
    let per = |what: &'static str, v: &[String]| -> Result<Vec<Option<Vec<String>>>, InputError> {
        let one = |line: &String| {
            CommandLine::in_shell(line, &[], shell)
                .map(|c| Some(c.argv))
                .map_err(|why| InputError::InvalidValue {
                    what,
                    value: line.clone(),
                    why,
                })
        };
        match v.len() {
            0 => Ok(vec![None; typed.len()]),
            1 => Ok(vec![one(&v[0])?; typed.len()]),
            n if n == typed.len() => v.iter().map(one).collect(),
            n => Err(InputError::InvalidValue {
                what,
                value: v.join(", "),
                why: format!(
                    "{n} given for {} commands: give one for all, or one per command",
                    typed.len()
                ),
            }),
        }
    };
    let prepare = per("--prepare", &a.cmd.prepare)?;
    let conclude = per("--conclude", &a.cmd.conclude)?;
    typed
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut c = CommandLine::in_shell(&t.line, &t.env, shell).map_err(|why| {
                InputError::InvalidValue {
                    what: "the command",
                    value: t.line.clone(),
                    why,
                }
            })?;
            c.name = t.name.clone().or(c.name.take());
            c.ignore_failure = a.cmd.ignore_failure;
            c.output = output.clone();
            c.input = a.cmd.input.clone();
            c.prepare = prepare[i].clone();
            c.conclude = conclude[i].clone();
            Ok(c)
        })
        .collect()
}

pub(crate) fn exec(a: Args) -> Result<i32> {
    // 1. Every option is checked before anything runs.
    let noise_pct = a.threshold.pct()?;
    let gate_pct = parse_pct_opt("--fail-on-regression", a.fail_on_regression.as_deref())?;
    let typed = typed(&a)?;
    let lines = lines(&a, &typed)?;
    a.cmd.exports.check()?;
    let (req, plan, design, placement) = plan(&a, &lines)?;
    if a.sittings.is_some() {
        check_sittings(&a, &lines)?;
    }
    let shell = a.cmd.shell();
    let in_shell = |line: &String| {
        CommandLine::in_shell(line, &[], shell).map_err(|why| InputError::InvalidValue {
            what: "--setup/--cleanup",
            value: line.clone(),
            why,
        })
    };
    // 2. --setup, --warmup, the rounds, --cleanup.
    let exe = worker_exe()?;
    let request = commands::Request {
        plan: &plan,
        design,
        lines: &lines,
        setup: a.cmd.setup.as_ref().map(in_shell).transpose()?,
        cleanup: a.cmd.cleanup.as_ref().map(in_shell).transpose()?,
        warmup: a.cmd.warmup,
        db: a.db.db.as_ref(),
        worker_exe: &exe,
    };
    if let Some(k) = a.sittings {
        return sittings(&a, &req, &request, k, noise_pct, gate_pct);
    }
    let timed = commands::time(&request, &mut Bars::default())?;
    let Some(db) = stored_in(&a, &timed) else {
        return Ok(engine::interrupted_code());
    };
    // 3. Each pair as 'compare' prints it (with its gate), then hyperfine's lines.
    let (comparisons, mut code) = comparisons(&a, &timed, noise_pct, gate_pct, &db)?;
    let named = named(&lines, &timed);
    let text = hyperfine_lines(&a, &named, &timed, &comparisons, &placement);
    if a.json {
        say!("{}", text.trim_end());
    } else {
        print(&format!("\n{text}"))?;
    }
    write_exports(&a, &comparisons)?;
    // 4. Failures, loudly: each failed command with what it said; exit 1.
    let failed = sysperf::report::command::failures(named.iter().map(|(n, r)| (n.clone(), *r)));
    if !failed.is_empty() {
        for f in &failed {
            say!("sysperf: {f}");
        }
        code = exit::FAILURE;
    }
    if let (true, Some((x, y))) = (a.explain, timed.pairs.first()) {
        super::explain(&a, &x.id, &y.id, db)?;
    }
    Ok(with_spool(code, timed.spool.is_some()))
}

/// `ab --sittings K` of commands: two, and no per-A/B export file.
fn check_sittings(a: &Args, lines: &[CommandLine]) -> Result<(), InputError> {
    let bad = |why: String| InputError::InvalidValue {
        what: "--sittings",
        value: a.sittings.unwrap_or_default().to_string(),
        why,
    };
    if lines.len() != 2 {
        return Err(bad(format!(
            "sittings compare two commands, and {} were given; give two (the first is the baseline)",
            lines.len()
        )));
    }
    if let Some((what, _)) = a.cmd.exports.files().first() {
        return Err(bad(format!(
            "{what} writes one A/B's comparison; the sittings' result is written by --json"
        )));
    }
    Ok(())
}

/// `ab --sittings K` of two commands (#43): --setup and --warmup before the first sitting,
/// each sitting the two commands' paired rounds, --cleanup after the last; the result is the
/// switches' sittings table.
fn sittings(
    a: &Args,
    req: &RunRequest,
    request: &commands::Request<'_>,
    k: u32,
    noise_pct: f64,
    gate_pct: Option<f64>,
) -> Result<i32> {
    let plans = super::sitting_plans(req, k, request.plan.rounds_until)?;
    commands::before(request)?;
    let mut sides = CommandSides {
        a: request.lines[0].clone(),
        b: request.lines[1].clone(),
    };
    let mut measure = |e: &engine::Engine<'_>, p: &RunPlan, st: &dyn Backend, bar: &mut Trials| {
        e.execute_sides(p, Design::Paired, &mut sides, st, bar)
    };
    let named = [request.lines[0].name(), request.lines[1].name()];
    let code = super::sittings(a, plans, &mut measure, Some(named), noise_pct, gate_pct)?;
    commands::after(request)?;
    Ok(code)
}

/// hyperfine's least number of runs of a command, and the least time it times one for: the
/// rounds of a pair of commands stop at `--max-runs` (30), or earlier once both hold (#43).
const MIN_ROUNDS: u32 = 10;
const SECONDS_PER_COMMAND: f64 = 3.0;

/// The plan of the rounds, their design, and where the commands ran, in words.
fn plan(a: &Args, lines: &[CommandLine]) -> Result<(RunRequest, RunPlan, Design, String)> {
    let mut req = a.request(engine::fresh_seed()?)?;
    // hyperfine's rule when --runs (--trials) does not fix the rounds: at least --min-runs
    // (10) rounds and at least 3 s a command, at most --max-runs (30, the paired default).
    let mut until = None;
    if req.trials.is_some() && a.trials.is_none() {
        let lo = a.cmd.min_runs.unwrap_or(MIN_ROUNDS);
        let hi = a.cmd.max_runs.unwrap_or(engine::ab::DEFAULT_ROUNDS.max(lo));
        if lo > hi {
            return Err(InputError::InvalidValue {
                what: "--min-runs",
                value: lo.to_string(),
                why: format!("more than --max-runs {hi}"),
            }
            .into());
        }
        req.trials = Some(hi);
        until = Some(engine::plan::RoundsUntil {
            min_rounds: lo,
            seconds: SECONDS_PER_COMMAND * lines.len().min(2) as f64,
        });
    }
    // A command is a program of its own, perhaps of many threads: where the scheduler puts
    // it, unless --cpu names CPUs (or a duet gives each side one).
    if !a.duet {
        req.placement = Mode::Free;
    }
    if req.label.is_none() {
        req.label = Some(engine::ab::default_label("cmd")?);
    }
    let mut plan = RunPlan::resolve(&req, &allowed_cpus()?)?;
    plan.rounds_until = until;
    let design = if a.duet {
        if lines.len() < 2 {
            return Err(InputError::InvalidValue {
                what: "--duet",
                value: String::new(),
                why: "a duet runs two commands at once; give two".into(),
            }
            .into());
        }
        engine::ab::check_duet(&plan, Ok(()))?;
        Design::Duet
    } else {
        Design::Paired
    };
    let placement = match (a.duet, &req.cpus) {
        (true, _) => format!(
            "the commands ran at the same time, each on a CPU of its own (CPUs {}), swapped every round (--duet)",
            sysperf::units::format_list(&plan.cpus.cpus[..2.min(plan.cpus.cpus.len())])
        ),
        (false, Some(cpus)) => format!(
            "the commands ran on CPUs {} (--cpu), back to back in a random order each round",
            sysperf::units::format_list(cpus)
        ),
        (false, None) => "the commands ran unpinned, where the scheduler put them (--cpu LIST keeps them on those CPUs), back to back in a random order each round".into(),
    };
    Ok((req, plan, design, placement))
}

/// Says where the runs were stored and returns the store to read them back from (the spool
/// file when the shared store stayed away); None when Ctrl-C stopped the rounds.
fn stored_in(a: &Args, timed: &Timed) -> Option<Option<PathBuf>> {
    let labels: Vec<String> = timed
        .pairs
        .iter()
        .flat_map(|(x, y)| [x, y])
        .chain(timed.alone.iter())
        .map(|r| r.label.clone().unwrap_or_else(|| r.id.clone()))
        .collect();
    if timed.interrupted {
        say!(
            "sysperf: interrupted; the runs {} are kept as incomplete",
            labels.join(", ")
        );
        return None;
    }
    let opened = &timed.opened;
    Some(match &timed.spool {
        Some(spool) => {
            say!(
                "sysperf: the runs {} are NOT in the shared store {opened}: the server could not be reached, so they are kept in the spool file {} on this host; upload them with 'sysperf sync {} {opened}' once the server is back (exit code {})",
                labels.join(", "),
                spool.display(),
                spool.display(),
                exit::SPOOLED
            );
            Some(spool.clone())
        }
        None => {
            say!("sysperf: stored as runs {}", labels.join(", "));
            a.db.db.clone()
        }
    })
}

/// Each pair's comparison (a command alone: its run's), printed as 'compare' prints it (as
/// one JSON document, or an array, with --json), with the gate's exit code.
fn comparisons(
    a: &Args,
    timed: &Timed,
    noise_pct: f64,
    gate_pct: Option<f64>,
    db: &Option<PathBuf>,
) -> Result<(Vec<compare::Comparison>, i32)> {
    let mut code = exit::OK;
    let mut comparisons = Vec::new();
    for (x, y) in &timed.pairs {
        let req = compare::Request {
            runs: vec![x.id.clone(), y.id.clone()],
            baseline: None,
            wheres: Vec::new(),
            by: None,
            noise_pct,
            gate_pct,
        };
        if !a.json {
            code = code.max(print_comparison(&req, Format::Text, false, db.clone())?);
        }
        let (_, c) = Catalog::new(db.clone()).comparison(&req.runs, None, noise_pct)?;
        comparisons.push(c);
    }
    // A command alone: its run as 'compare' takes one (for --json and the exports).
    if let Some(run) = &timed.alone {
        let (_, c) =
            Catalog::new(db.clone()).comparison(std::slice::from_ref(&run.id), None, noise_pct)?;
        comparisons.push(c);
    }
    if a.json {
        let docs: Vec<String> = comparisons
            .iter()
            .map(sysperf::report::compare::json)
            .collect();
        let text = if docs.len() == 1 {
            docs[0].clone()
        } else {
            format!("[{}]", docs.join(",\n"))
        };
        print(&format!("{}\n", text.trim_end()))?;
        if let Some(pct) = gate_pct {
            for c in &comparisons {
                let (r, u) = (compare::regressions(c, pct), compare::unjudged(c));
                code = code.max(compare::gate_code(&r, &u));
            }
        }
    }
    Ok((comparisons, code))
}

/// Every command once, in order, with the run that timed it (the baseline's first pair).
fn named<'t>(lines: &[CommandLine], timed: &'t Timed) -> Vec<(String, &'t Run)> {
    timed
        .pairs
        .iter()
        .enumerate()
        .flat_map(|(k, (x, y))| {
            let b = (lines[k + 1].name(), y);
            if k == 0 {
                vec![(lines[0].name(), x), b]
            } else {
                vec![b]
            }
        })
        .chain(timed.alone.iter().map(|r| (lines[0].name(), r)))
        .collect()
}

/// hyperfine's lines: each command's, its summary, and where the commands ran.
fn hyperfine_lines(
    a: &Args,
    named: &[(String, &Run)],
    timed: &Timed,
    comparisons: &[compare::Comparison],
    placement: &str,
) -> String {
    let unit = a.cmd.time_unit.as_deref();
    let mut text = String::new();
    for (i, (name, run)) in named.iter().enumerate() {
        text += &sysperf::report::command::per_command(i + 1, name, run, unit);
    }
    if let Some(run) = &timed.alone {
        text += &sysperf::report::command::alone(run, unit);
    }
    let summary: Vec<String> = timed
        .pairs
        .iter()
        .zip(comparisons)
        .filter_map(|((x, y), c)| sysperf::report::command::summary(x, y, c))
        .collect();
    if !summary.is_empty() {
        text += &format!("Summary\n  {}\n", summary.join("\n  "));
    }
    text + &format!("  ({placement})\n")
}

/// Exports: each pair's comparison (several: a JSON array, the rest one after the other).
fn write_exports(a: &Args, comparisons: &[compare::Comparison]) -> Result<()> {
    for (what, path) in a.cmd.exports.files() {
        let parts: Vec<String> = comparisons
            .iter()
            .map(|c| match what {
                "--export-csv" => sysperf::report::compare::csv(c),
                "--export-markdown" => sysperf::report::compare::markdown(c),
                _ => sysperf::report::compare::json(c),
            })
            .collect();
        let body = match what {
            "--export-json" if parts.len() != 1 => format!("[{}]\n", parts.join(",\n")),
            _ => parts.join("\n"),
        };
        sysperf::output::write(path, body.as_bytes(), 0o644).context(what)?;
        say!("sysperf: wrote {} ({what})", path.display());
    }
    Ok(())
}
