//! `sysperf ab CMD...` (#43): commands timed as hyperfine times them, with its flags where
//! they mean the same, on sysperf's paired engine: each command after the baseline is one
//! A/B (paired round by round, both sides stored), a command alone is one run. Not the switch
//! form (`ab --switch`), which `super::ab` measures on benchmarks.
//!
//! What it prints beyond `compare`'s table: hyperfine's per-command lines (mean +- sd and
//! min...max of the trials' time per run, user and system CPU) and its summary line with the
//! paired interval and verdict; where the commands ran; and, loudly, a command that failed.

use super::ab::Args;
use super::args::{allowed_cpus, parse_pct, parse_pct_opt, ExportArgs};
use super::compare::{show, Format};
use super::failure::Context;
use super::out::{engine, print, spooled_into};
use super::progress::Trials;
use super::Result;
use clap::Args as ClapArgs;
use std::path::PathBuf;
use sysperf::bench::command::{self, CommandLine, Output};
use sysperf::catalog::{self, Catalog};
use sysperf::engine::ab::{CommandSides, Design};
use sysperf::engine::{self, RunPlan};
use sysperf::error::InputError;
use sysperf::harness::placement::Mode;
use sysperf::model::Run;
use sysperf::{compare, exit};

/// hyperfine's options, as `ab` takes them for commands.
#[derive(ClapArgs, Default)]
pub(crate) struct CommandArgs {
    /// The shell each command line runs in, as 'SHELL -c LINE' (default sh): redirections,
    /// pipes and globs mean what they mean there. 'none' runs it without one, split into
    /// words as a shell splits them. The shell's own start is inside each time.
    #[arg(long, short = 'S', value_name = "SHELL")]
    pub(crate) shell: Option<String>,
    /// No shell (hyperfine's -N): the same as --shell=none.
    #[arg(short = 'N', long = "no-shell", conflicts_with = "shell")]
    pub(crate) no_shell: bool,
    /// Time a command that exits non-zero as any other. Without it such a command's trial
    /// fails, its exit code and last lines of standard error are shown, and ab exits 1.
    #[arg(long, short = 'i')]
    pub(crate) ignore_failure: bool,
    /// The name of a command in every output, in the commands' order (repeatable).
    #[arg(long, short = 'n', value_name = "NAME")]
    pub(crate) command_name: Vec<String>,
    /// The baseline the commands are compared with (default: the first command).
    #[arg(long, value_name = "CMD")]
    pub(crate) reference: Option<String>,
    /// Run each command N times before the rounds, untimed (each side also gets an untimed
    /// warm-up trial of its own).
    #[arg(long, short = 'w', value_name = "N", default_value_t = 0)]
    pub(crate) warmup: u32,
    /// At least N rounds (hyperfine's --min-runs; a round times each command once, in a
    /// trial of many runs).
    #[arg(long, short = 'm', value_name = "N", conflicts_with = "trials", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) min_runs: Option<u32>,
    /// At most N rounds (hyperfine's --max-runs).
    #[arg(long, short = 'M', value_name = "N", conflicts_with = "trials", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) max_runs: Option<u32>,
    /// Run CMD before each trial, outside its timed region. hyperfine runs it before each
    /// run; here a trial times many runs together, so it runs once a trial. Once for all
    /// commands, or once per command in their order.
    #[arg(long, short = 'p', value_name = "CMD")]
    pub(crate) prepare: Vec<String>,
    /// Run CMD after each trial, outside its timed region (once a trial, as --prepare).
    #[arg(long, short = 'C', value_name = "CMD")]
    pub(crate) conclude: Vec<String>,
    /// Run CMD once before the rounds (they interleave every command, so before all of them).
    #[arg(long, short = 's', value_name = "CMD")]
    pub(crate) setup: Option<String>,
    /// Run CMD once after the rounds.
    #[arg(long, short = 'c', value_name = "CMD")]
    pub(crate) cleanup: Option<String>,
    /// One command per value of VAR from MIN to MAX (by --parameter-step-size, default 1),
    /// {VAR} in the command lines and names replaced by it.
    #[arg(long, short = 'P', num_args = 3, value_names = ["VAR", "MIN", "MAX"], allow_negative_numbers = true)]
    pub(crate) parameter_scan: Vec<String>,
    /// The step of --parameter-scan.
    #[arg(long, short = 'D', value_name = "STEP", requires = "parameter_scan")]
    pub(crate) parameter_step_size: Option<String>,
    /// One command per value of VAR in the comma-separated list VALUES.
    #[arg(long, short = 'L', num_args = 2, value_names = ["VAR", "VALUES"], conflicts_with = "parameter_scan")]
    pub(crate) parameter_list: Vec<String>,
    /// Refused: the commands run inside sysperf's worker, whose output is its channel to
    /// sysperf; keep their output with --output FILE.
    #[arg(long)]
    pub(crate) show_output: bool,
    /// Where the commands' standard output goes: null (default), pipe (read and discarded,
    /// as a pipeline's reader would), or a FILE (truncated at each trial). inherit is refused,
    /// as --show-output is. Standard error always goes to a file of sysperf's own, quoted
    /// when a command fails.
    #[arg(long, value_name = "WHERE")]
    pub(crate) output: Option<String>,
    /// The file each run of a command reads as its standard input (default /dev/null).
    #[arg(long, value_name = "FILE")]
    pub(crate) input: Option<PathBuf>,
    /// The unit of the per-command lines: microsecond, millisecond or second (default: one
    /// that suits the time).
    #[arg(long, short = 'u', value_name = "UNIT", value_parser = ["microsecond", "millisecond", "second"])]
    pub(crate) time_unit: Option<String>,
    #[command(flatten)]
    pub(crate) exports: ExportArgs,
}

impl CommandArgs {
    /// The options of the commands' form given with a switch: a usage error naming them.
    pub(crate) fn refuse_with_switch(&self) -> Result<(), InputError> {
        let given: Vec<&str> = [
            ("--shell/-N", self.shell.is_some() || self.no_shell),
            ("--ignore-failure", self.ignore_failure),
            ("--command-name", !self.command_name.is_empty()),
            ("--reference", self.reference.is_some()),
            ("--warmup", self.warmup > 0),
            (
                "--min-runs/--max-runs",
                self.min_runs.is_some() || self.max_runs.is_some(),
            ),
            (
                "--prepare/--conclude",
                !self.prepare.is_empty() || !self.conclude.is_empty(),
            ),
            (
                "--setup/--cleanup",
                self.setup.is_some() || self.cleanup.is_some(),
            ),
            (
                "--parameter-scan/--parameter-list",
                !self.parameter_scan.is_empty() || !self.parameter_list.is_empty(),
            ),
            (
                "--show-output/--output/--input",
                self.show_output || self.output.is_some() || self.input.is_some(),
            ),
            ("--time-unit", self.time_unit.is_some()),
            ("--export-*", !self.exports.files().is_empty()),
        ]
        .into_iter()
        .filter_map(|(name, on)| on.then_some(name))
        .collect();
        if given.is_empty() {
            return Ok(());
        }
        Err(InputError::InvalidValue {
            what: "ab",
            value: given.join(", "),
            why: "these time commands ('sysperf ab CMD_A CMD_B'); a switch is measured on benchmarks: leave them out, or leave out --switch/--sysctl".into(),
        })
    }

    /// The shell, or None for `--shell=none` / `-N`.
    fn shell(&self) -> Option<&str> {
        match self.shell.as_deref() {
            _ if self.no_shell => None,
            Some("none") => None,
            Some(s) => Some(s),
            None => Some(command::DEFAULT_SHELL),
        }
    }

    fn output(&self) -> Result<Output, InputError> {
        let bad = |why: &str| InputError::InvalidValue {
            what: "--output",
            value: self.output.clone().unwrap_or_default(),
            why: why.into(),
        };
        let inherit = "the commands run inside sysperf's worker, whose standard output is its channel to sysperf, so their output cannot go to this terminal; give --output FILE and read FILE afterwards";
        if self.show_output {
            return Err(InputError::InvalidValue {
                what: "--show-output",
                value: String::new(),
                why: inherit.into(),
            });
        }
        Ok(match self.output.as_deref() {
            None | Some("null") => Output::Null,
            Some("pipe") => Output::Pipe,
            Some("inherit") => return Err(bad(inherit)),
            Some("") => return Err(bad("give null, pipe or a file")),
            Some(file) => Output::File(std::path::absolute(file).map_err(|e| bad(&e.to_string()))?),
        })
    }

    /// Each parameter's value: (VAR, values) from --parameter-scan or --parameter-list.
    fn parameter(&self) -> Result<Option<(String, Vec<String>)>, InputError> {
        if let [var, values] = &self.parameter_list[..] {
            let values: Vec<String> = values.split(',').map(str::to_string).collect();
            return Ok(Some((var.clone(), values)));
        }
        if !self.parameter_list.is_empty() {
            return Err(InputError::InvalidValue {
                what: "--parameter-list",
                value: self.parameter_list.join(" "),
                why: "one list: --parameter-list VAR V1,V2,...".into(),
            });
        }
        let [var, min, max] = &self.parameter_scan[..] else {
            return Ok(None);
        };
        let bad = |value: &str, why: &str| InputError::InvalidValue {
            what: "--parameter-scan",
            value: value.to_string(),
            why: why.into(),
        };
        let num = |s: &str| -> Result<f64, InputError> {
            s.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| bad(s, "not a number"))
        };
        let step_text = self.parameter_step_size.as_deref().unwrap_or("1");
        let (lo, hi, step) = (num(min)?, num(max)?, num(step_text)?);
        if step <= 0.0 || hi < lo {
            return Err(bad(
                &format!("{min} {max} -D {step_text}"),
                "give MIN <= MAX and a step above 0",
            ));
        }
        let count = ((hi - lo) / step + 1e-9).floor() as u64 + 1;
        if count > 100 {
            return Err(bad(
                &format!("{min} {max}"),
                "more than 100 values: give a larger step (-D)",
            ));
        }
        // As many decimals as the inputs have, so 0.1 steps print as 0.3, not 0.30000000000000004.
        let decimals = [min, max, step_text]
            .iter()
            .map(|s| s.split_once('.').map_or(0, |(_, d)| d.len()))
            .max()
            .unwrap_or(0);
        let values = (0..count)
            .map(|k| format!("{:.*}", decimals, lo + k as f64 * step))
            .collect();
        Ok(Some((var.clone(), values)))
    }
}

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

/// Runs `line` once in this process, untimed (--setup, --cleanup, --warmup), its output
/// discarded; an error quoting its standard error unless it exits 0.
fn once(what: &str, c: &CommandLine) -> Result<()> {
    let program = &c.argv[0];
    let found = if program.contains('/') {
        std::path::absolute(program).and_then(|p| sysperf::programs::at(&p))
    } else {
        sysperf::programs::command(program)
    };
    let mut cmd = found.context(format!("{what}: finding {program}"))?;
    let input = match &c.input {
        Some(path) => std::process::Stdio::from(
            std::fs::File::open(path).context(format!("opening --input {}", path.display()))?,
        ),
        None => std::process::Stdio::null(),
    };
    let out = cmd
        .args(&c.argv[1..])
        .envs(c.env.iter().map(|(k, v)| (k, v)))
        .stdin(input)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output()
        .context(format!("{what}: starting `{}`", c.name()))?;
    if out.status.success() || (c.ignore_failure && what == "--warmup") {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = &tail[tail.len().saturating_sub(5)..];
    let how = match out.status.code() {
        Some(code) => format!("exited with code {code}"),
        None => format!("ended with {}", out.status),
    };
    let said = if tail.is_empty() {
        "; it wrote nothing to standard error".to_string()
    } else {
        format!("; its standard error ended:\n    {}", tail.join("\n    "))
    };
    Err(super::failure::failure(format!(
        "{what} `{}` {how}{said}",
        c.name()
    )))
}

pub(crate) fn exec(a: Args) -> Result<i32> {
    // 1. Every option is checked before anything runs.
    let noise_pct = parse_pct("--threshold", &a.noise)?;
    let gate_pct = parse_pct_opt("--fail-on-regression", a.fail_on_regression.as_deref())?;
    let typed = typed(&a)?;
    let lines = lines(&a, &typed)?;
    a.cmd.exports.check()?;
    let shell = a.cmd.shell();
    let mut req = a.request(engine::fresh_seed()?)?;
    // hyperfine's --min-runs/--max-runs bound the rounds.
    if req.trials.is_some() && a.trials.is_none() {
        let (lo, hi) = (a.cmd.min_runs.unwrap_or(1), a.cmd.max_runs.unwrap_or(1000));
        if lo > hi {
            return Err(InputError::InvalidValue {
                what: "--min-runs",
                value: lo.to_string(),
                why: format!("more than --max-runs {hi}"),
            }
            .into());
        }
        req.trials = Some(engine::ab::DEFAULT_ROUNDS.clamp(lo, hi));
    }
    // A command is a program of its own, perhaps of many threads: where the scheduler puts
    // it, unless --cpu names CPUs (or a duet gives each side one).
    if !a.duet {
        req.placement = Mode::Free;
    }
    if req.label.is_none() {
        req.label = Some(engine::ab::default_label("cmd")?);
    }
    let plan = RunPlan::resolve(&req, &allowed_cpus()?)?;
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
            sysperf::harness::placement::format_list(&plan.cpus.cpus[..2.min(plan.cpus.cpus.len())])
        ),
        (false, Some(cpus)) => format!(
            "the commands ran on CPUs {} (--cpu), back to back in a random order each round",
            sysperf::harness::placement::format_list(cpus)
        ),
        (false, None) => "the commands ran unpinned, where the scheduler put them (--cpu LIST keeps them on those CPUs), back to back in a random order each round".into(),
    };
    // 2. --setup, --warmup, the rounds, --cleanup.
    let in_shell = |line: &str| {
        CommandLine::in_shell(line, &[], shell).map_err(|why| InputError::InvalidValue {
            what: "--setup/--cleanup",
            value: line.to_string(),
            why,
        })
    };
    if let Some(setup) = &a.cmd.setup {
        once("--setup", &in_shell(setup)?)?;
    }
    for c in &lines {
        for _ in 0..a.cmd.warmup {
            once("--warmup", c)?;
        }
    }
    let stop = engine::stop_flag()?;
    let store = catalog::open_store_to_measure(a.db.db.as_ref())?;
    let opened = store.location();
    sysperf::sync::upload_waiting(Some(store.as_ref()));
    let bar = &mut Trials::new();
    let engine = engine(&stop)?;
    // Each command after the baseline is one A/B with it; a command alone is one run.
    let mut pairs: Vec<(Run, Run)> = Vec::new();
    let mut alone: Option<Run> = None;
    let mut interrupted = false;
    let measured: Result<()> = (|| {
        if lines.len() == 1 {
            let mut p = plan.clone();
            for t in &mut p.targets {
                t.target.command = Some(lines[0].clone());
            }
            let o = engine.execute(&p, store.as_ref(), bar)?;
            interrupted = o.interrupted;
            alone = Some(o.run);
            return Ok(());
        }
        for (j, b) in lines.iter().enumerate().skip(1) {
            let mut p = plan.clone();
            if lines.len() > 2 {
                p.label = plan.label.as_ref().map(|l| format!("{l}-{}", j + 1));
            }
            let mut sides = CommandSides {
                a: lines[0].clone(),
                b: b.clone(),
            };
            let outcomes = engine.execute_sides(&p, design, &mut sides, store.as_ref(), bar)?;
            let Some(last) = outcomes.into_iter().last() else {
                break;
            };
            interrupted = last.interrupted;
            pairs.push((last.off, last.on));
            if interrupted {
                break;
            }
        }
        Ok(())
    })();
    bar.finish();
    measured?;
    if let Some(cleanup) = &a.cmd.cleanup {
        once("--cleanup", &in_shell(cleanup)?)?;
    }
    let spool = spooled_into(&opened, store.as_ref());
    drop(store);
    let labels: Vec<String> = pairs
        .iter()
        .flat_map(|(x, y)| [x, y])
        .chain(alone.iter())
        .map(|r| r.label.clone().unwrap_or_else(|| r.id.clone()))
        .collect();
    if interrupted {
        say!(
            "sysperf: interrupted; the runs {} are kept as incomplete",
            labels.join(", ")
        );
        return Ok(engine::interrupted_code());
    }
    let db = match &spool {
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
    };
    // 3. Each pair as 'compare' prints it (with its gate), then hyperfine's lines.
    let mut code = exit::OK;
    let mut comparisons = Vec::new();
    for (x, y) in &pairs {
        let req = compare::Request {
            runs: vec![x.id.clone(), y.id.clone()],
            baseline: None,
            wheres: Vec::new(),
            by: None,
            noise_pct,
            gate_pct,
        };
        if !a.json {
            code = code.max(show(&req, Format::Text, false, db.clone())?);
        }
        let (_, c) = Catalog::new(db.clone()).comparison(&req.runs, None, noise_pct)?;
        comparisons.push(c);
    }
    // A command alone: its run as 'compare' takes one (for --json and the exports).
    if let Some(run) = &alone {
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
    let unit = a.cmd.time_unit.as_deref();
    // Every command once, in order, with the run that timed it (the baseline's first pair).
    let named: Vec<(String, &Run)> = pairs
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
        .chain(alone.iter().map(|r| (lines[0].name(), r)))
        .collect();
    let mut text = String::new();
    for (i, (name, run)) in named.iter().enumerate() {
        text += &sysperf::report::command::per_command(i + 1, name, run, unit);
    }
    if let Some(run) = &alone {
        text += &sysperf::report::command::alone(run, unit);
    }
    let summary: Vec<String> = pairs
        .iter()
        .zip(&comparisons)
        .filter_map(|((x, y), c)| sysperf::report::command::summary(x, y, c))
        .collect();
    if !summary.is_empty() {
        text += &format!("Summary\n  {}\n", summary.join("\n  "));
    }
    text += &format!("  ({placement})\n");
    if a.json {
        say!("{}", text.trim_end());
    } else {
        print(&format!("\n{text}"))?;
    }
    // Exports: each pair's comparison (several: a JSON array, the rest one after the other).
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
    // 4. Failures, loudly: each failed command with what it said; exit 1.
    let failed = sysperf::report::command::failures(named.iter().map(|(n, r)| (n.clone(), *r)));
    if !failed.is_empty() {
        for f in &failed {
            say!("sysperf: {f}");
        }
        code = exit::FAILURE;
    }
    if let (true, Some((x, y))) = (a.explain, pairs.first()) {
        super::ab::explain(&a, &x.id, &y.id, db)?;
    }
    Ok(super::run::with_spool(code, spool.is_some()))
}
