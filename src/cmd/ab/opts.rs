//! hyperfine's options as `sysperf ab` takes them for commands (#43), and what each means
//! under paired rounds: parsed and checked here, used by `super::commands`. Not the switch
//! form's options, which `super` (`cmd/ab.rs`) declares.

use super::super::args::ExportArgs;
use clap::Args as ClapArgs;
use std::path::PathBuf;
use sysperf::bench::command::{self, Output};
use sysperf::error::InputError;

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
    /// trial of many runs). Without --runs the rounds go on until there are N (default 10)
    /// and they have lasted 3 s a command, as hyperfine's do, up to --max-runs.
    #[arg(long, short = 'm', value_name = "N", conflicts_with = "trials", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub(crate) min_runs: Option<u32>,
    /// At most N rounds (hyperfine's --max-runs; default 30).
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
    pub(crate) fn shell(&self) -> Option<&str> {
        match self.shell.as_deref() {
            _ if self.no_shell => None,
            Some("none") => None,
            Some(s) => Some(s),
            None => Some(command::DEFAULT_SHELL),
        }
    }

    pub(crate) fn output(&self) -> Result<Output, InputError> {
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
    pub(crate) fn parameter(&self) -> Result<Option<(String, Vec<String>)>, InputError> {
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
