//! `command`: a whole program run as a benchmark (`sysperf ab --a CMD --b CMD`, #30): each
//! operation starts the command (fork and exec of its argument vector, no shell), waits for
//! it, and checks that it exited 0. Two builds of a program, two libraries
//! (`--b-env LD_LIBRARY_PATH=...`), two container runtimes: the everyday A/B, through the
//! same paired rounds as a kernel switch.
//!
//! Like every benchmark it never reads a clock: the worker times `run`. Its standard input,
//! output and error are /dev/null, so a command that writes much is timed without a
//! terminal. Not in any default run: it has nothing to run without a command line.

use super::{Benchmark, Charge, Chart, Ctx, Group, Shape, Spec};
use crate::error::BenchError;
use serde::{Deserialize, Serialize};

/// The chart this family's one test is drawn on.
pub static CHART: Chart = Chart {
    name: "command",
    title: "Commands (sysperf ab --a/--b)",
    about: Some("the commands of 'ab --a/--b'"),
};

pub static SPECS: &[Spec] = &[Spec {
    id: "command",
    label: "command",
    group: Group::Command,
    chart: &CHART,
    paper: "(not in the papers) start a program, wait for it to exit",
    today: "fork and exec of the command line given to 'sysperf ab --a/--b' (no shell), waited for; exit 0 expected",
    paper_count: 1,
    unit: "run",
    ops_per_iteration: 1,
    shape: Shape::Single,
    // The command's own CPU time is what an A/B of two commands compares: it is waited for.
    charge: Charge::Waited,
    make: || Box::new(Run::default()),
}];

/// A command line: its arguments (the first names the program: a name is found on `PATH` by
/// sysperf's rule for programs, `sysperf::programs`, a path is taken as it is) and the variables set for it on top of the worker's environment.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CommandLine {
    pub argv: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<(String, String)>,
}

impl CommandLine {
    /// `line` split as a POSIX shell splits words (blanks; single quotes keep everything;
    /// double quotes keep all but `\"` and `\\`; a backslash outside quotes keeps the next
    /// character), with `env` (`NAME=VALUE` each). No expansion of any kind is done.
    pub fn parse(line: &str, env: &[String]) -> Result<CommandLine, String> {
        let argv = split_words(line)?;
        if argv.is_empty() {
            return Err("the command line is empty".into());
        }
        let env = env
            .iter()
            .map(|kv| match kv.split_once('=') {
                Some((k, v)) if !k.is_empty() && !k.contains('\0') && !v.contains('\0') => {
                    Ok((k.to_string(), v.to_string()))
                }
                _ => Err(format!("'{kv}' is not NAME=VALUE")),
            })
            .collect::<Result<_, _>>()?;
        Ok(CommandLine { argv, env })
    }

    /// The command line as a person would type it again.
    pub fn describe(&self) -> String {
        let quote = |w: &String| {
            if !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        };
        let env: Vec<String> = self
            .env
            .iter()
            .map(|(k, v)| format!("{k}={}", quote(v)))
            .collect();
        let argv: Vec<String> = self.argv.iter().map(quote).collect();
        [env, argv].concat().join(" ")
    }
}

fn split_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => words.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => return Err("a single quote is not closed".into()),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\')) => w.push(c),
                            Some(c) => {
                                w.push('\\');
                                w.push(c);
                            }
                            None => return Err("a double quote is not closed".into()),
                        },
                        Some(c) => w.push(c),
                        None => return Err("a double quote is not closed".into()),
                    }
                }
            }
            '\\' => match chars.next() {
                Some(c) => word.get_or_insert_with(String::new).push(c),
                None => return Err("the line ends with a backslash".into()),
            },
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

#[derive(Default)]
struct Run {
    cmd: Option<std::process::Command>,
}

impl Benchmark for Run {
    fn setup(&mut self, ctx: &Ctx, _iterations: u64) -> Result<(), BenchError> {
        let line = ctx.command.as_ref().ok_or_else(|| {
            BenchError::Protocol(
                "the command benchmark needs a command line: 'sysperf ab --a CMD --b CMD'".into(),
            )
        })?;
        // By sysperf's one rule for programs: a name is found in PATH's trusted directories,
        // a path (`./prog`) is run as the absolute path it names from here.
        let program = &line.argv[0];
        let found = if program.contains('/') {
            std::path::absolute(program).and_then(|p| crate::programs::at(&p))
        } else {
            crate::programs::command(program)
        };
        let mut cmd = found.map_err(BenchError::sys("finding the command"))?;
        cmd.args(&line.argv[1..])
            .envs(line.env.iter().map(|(k, v)| (k, v)))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        self.cmd = Some(cmd);
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let cmd = self
            .cmd
            .as_mut()
            .ok_or_else(|| BenchError::Protocol("run before setup".into()))?;
        for _ in 0..iterations {
            let status = cmd
                .status()
                .map_err(BenchError::sys("starting the command"))?;
            if !status.success() {
                return Err(BenchError::Protocol(format!(
                    "the command {status}; a benchmarked command must exit 0"
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_split_as_a_shell_splits_words() {
        let c = CommandLine::parse(r#"./prog -x 'a b' "c \"d\"" e\ f"#, &["K=v=w".into()]).unwrap();
        assert_eq!(c.argv, ["./prog", "-x", "a b", "c \"d\"", "e f"]);
        assert_eq!(c.env, [("K".to_string(), "v=w".to_string())]);
        assert_eq!(c.describe(), r#"K=v=w ./prog -x 'a b' 'c "d"' 'e f'"#);
        for bad in ["", "  ", "'open", "\"open", "end\\"] {
            assert!(CommandLine::parse(bad, &[]).is_err(), "{bad:?}");
        }
        assert!(CommandLine::parse("true", &["=x".into()]).is_err());
        assert!(CommandLine::parse("true", &["NOEQUALS".into()]).is_err());
    }

    #[test]
    fn a_command_runs_and_a_failing_one_fails_the_trial() {
        let ctx = |line: &str| Ctx {
            command: Some(CommandLine::parse(line, &[]).unwrap()),
            ..Ctx::default()
        };
        let mut ok = Run::default();
        ok.setup(&ctx("true"), 3).unwrap();
        ok.run(3).unwrap();
        let mut bad = Run::default();
        bad.setup(&ctx("false"), 1).unwrap();
        let e = bad.run(1).unwrap_err().to_string();
        assert!(
            e.contains("exit status: 1") && e.contains("must exit 0"),
            "{e}"
        );
        assert!(Run::default().setup(&Ctx::default(), 1).is_err());
    }
}
