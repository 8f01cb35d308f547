//! `command`: a whole program run as a benchmark (`sysperf ab CMD...`, `ab --a CMD --b CMD`,
//! #30, #43): each operation starts the command (through a shell, `sh -c LINE`, unless
//! `--shell=none`), waits for it, and checks that it exited 0. Two builds of a program, two
//! libraries (`--b-env LD_LIBRARY_PATH=...`), two container runtimes: the everyday A/B,
//! through the same paired rounds as a kernel switch.
//!
//! Like every benchmark it never reads a clock: the worker times `run`. Its standard input
//! is /dev/null (or `--input FILE`, read again from its start by each run), its standard
//! output /dev/null (or `--output pipe|FILE`), and its standard error an in-memory file that
//! each run writes from its start: what a failing run wrote there ends the trial's error.
//! Not in any default run, and not a benchmark `run` takes: it has nothing to run without a
//! command line.

use super::{Benchmark, Charge, Chart, Ctx, Group, Shape, Spec};
use crate::error::BenchError;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

/// The chart this family's one test is drawn on.
pub static CHART: Chart = Chart {
    name: "command",
    title: "Commands (sysperf ab)",
    about: Some("the commands of 'sysperf ab CMD...'"),
};

pub static SPECS: &[Spec] = &[Spec {
    id: "command",
    label: "command",
    group: Group::Command,
    chart: &CHART,
    paper: "(not in the papers) start a program, wait for it to exit",
    today: "the command line given to 'sysperf ab' (through sh -c unless --shell=none), started and waited for; exit 0 expected",
    paper_count: 1,
    unit: "run",
    ops_per_iteration: 1,
    shape: Shape::Single,
    // The command's own CPU time is what an A/B of two commands compares: it is waited for.
    charge: Charge::Waited,
    make: || Box::new(Run::default()),
}];

/// The shell a command line runs in unless `--shell` says otherwise (hyperfine's default).
pub const DEFAULT_SHELL: &str = "sh";

/// How many of the last lines of a failing command's standard error its error quotes.
const STDERR_LINES: usize = 5;

/// Where a command's standard output goes (hyperfine's `--output`): /dev/null, a pipe sysperf
/// reads and discards (as a program piped into another writes), or a file, truncated when each
/// trial begins.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Output {
    #[default]
    Null,
    Pipe,
    File(PathBuf),
}

impl Output {
    fn is_null(&self) -> bool {
        *self == Output::Null
    }
}

/// A command line: its arguments (the first names the program: a name is found on `PATH` by
/// sysperf's rule for programs, `sysperf::programs`, a path is taken as it is), the variables
/// set for it on top of the worker's environment, and how it runs.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CommandLine {
    pub argv: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<(String, String)>,
    /// What every output calls it: `--command-name`, or the line as typed when a shell runs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A non-zero exit is timed as any other (`--ignore-failure`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ignore_failure: bool,
    #[serde(default, skip_serializing_if = "Output::is_null")]
    pub output: Output,
    /// The file each run reads as its standard input (`--input`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<PathBuf>,
    /// A command run before each trial, outside its timed region (`--prepare`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prepare: Option<Vec<String>>,
    /// A command run after each trial, outside its timed region (`--conclude`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conclude: Option<Vec<String>>,
}

impl CommandLine {
    /// `line` split as a POSIX shell splits words (blanks; single quotes keep everything;
    /// double quotes keep all but `\"` and `\\`; a backslash outside quotes keeps the next
    /// character), with `env` (`NAME=VALUE` each). No expansion of any kind is done: this is
    /// `--shell=none`.
    pub fn parse(line: &str, env: &[String]) -> Result<CommandLine, String> {
        let argv = split_words(line)?;
        if argv.is_empty() {
            return Err("the command line is empty".into());
        }
        Ok(CommandLine {
            argv,
            env: parse_env(env)?,
            ..CommandLine::default()
        })
    }

    /// `line` as `shell` runs it (`SHELL -c LINE`, the shell's own words split as
    /// [`CommandLine::parse`] splits them), or split into words itself when `shell` is None.
    /// Redirections, pipes and globs then mean what they mean in that shell.
    pub fn in_shell(
        line: &str,
        env: &[String],
        shell: Option<&str>,
    ) -> Result<CommandLine, String> {
        let Some(shell) = shell else {
            return CommandLine::parse(line, env);
        };
        if line.trim().is_empty() {
            return Err("the command line is empty".into());
        }
        let mut argv = split_words(shell)?;
        if argv.is_empty() {
            return Err("the shell is empty; give one (--shell bash) or --shell=none".into());
        }
        argv.extend(["-c".to_string(), line.to_string()]);
        Ok(CommandLine {
            argv,
            env: parse_env(env)?,
            name: Some(line.to_string()),
            ..CommandLine::default()
        })
    }

    /// What every output calls the command: its name, else the command line.
    pub fn name(&self) -> String {
        self.name.clone().unwrap_or_else(|| self.describe())
    }

    /// The command line as a person would type it again (the shell and `-c` included).
    pub fn describe(&self) -> String {
        let env: Vec<String> = self
            .env
            .iter()
            .map(|(k, v)| format!("{k}={}", quote(v)))
            .collect();
        let argv: Vec<String> = self.argv.iter().map(|w| quote(w)).collect();
        [env, argv].concat().join(" ")
    }
}

/// A word quoted as a shell would need it.
pub fn quote(w: &str) -> String {
    if !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

/// `NAME=VALUE` variables.
fn parse_env(env: &[String]) -> Result<Vec<(String, String)>, String> {
    env.iter()
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) if !k.is_empty() && !k.contains('\0') && !v.contains('\0') => {
                Ok((k.to_string(), v.to_string()))
            }
            _ => Err(format!("'{kv}' is not NAME=VALUE")),
        })
        .collect()
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
    name: String,
    ignore_failure: bool,
    pipe: bool,
    /// The in-memory file the command's standard error goes to.
    stderr: Option<File>,
    /// `--input`, rewound before each run.
    input: Option<File>,
    /// `--conclude`, run after the trial, with the line whose variables it gets.
    conclude: Option<(Vec<String>, CommandLine)>,
}

/// A command for `argv`, its program found by sysperf's one rule for programs: a name in
/// PATH's trusted directories, a path (`./prog`) as the absolute path it names from here.
fn command_for(argv: &[String]) -> Result<std::process::Command, BenchError> {
    let program = &argv[0];
    let found = if program.contains('/') {
        std::path::absolute(program).and_then(|p| crate::programs::at(&p))
    } else {
        crate::programs::command(program)
    };
    let mut cmd = found.map_err(BenchError::sys("finding the command"))?;
    cmd.args(&argv[1..]);
    Ok(cmd)
}

/// The trial's error for a command that ended with `status`: its exit code or signal, and
/// the last lines it wrote to standard error (`stderr`, written from its start).
fn failure(name: &str, status: std::process::ExitStatus, stderr: Option<&File>) -> BenchError {
    use std::os::unix::process::ExitStatusExt;
    let how = match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with code {code}"),
        (None, Some(sig)) => format!("was killed by signal {sig}"),
        _ => format!("ended with {status}"),
    };
    let said = stderr.map(last_lines).unwrap_or_default();
    let said = if said.is_empty() {
        "; it wrote nothing to standard error".to_string()
    } else {
        format!("; its standard error ended:\n    {}", said.join("\n    "))
    };
    BenchError::Protocol(format!(
        "`{name}` {how}{said}\n(a benchmarked command must exit 0: fix it, or time it as it is with --ignore-failure)"
    ))
}

/// The last non-blank lines of what the last run wrote to `f` (from its start to its offset),
/// each cut to 300 characters.
fn last_lines(mut f: &File) -> Vec<String> {
    let end = f.stream_position().unwrap_or(0);
    let start = end.saturating_sub(8192);
    let mut buf = vec![0; (end - start) as usize];
    let got = f.read_at(&mut buf, start).unwrap_or(0);
    let text = String::from_utf8_lossy(&buf[..got]);
    let lines: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.chars().take(300).collect())
        .collect();
    lines[lines.len().saturating_sub(STDERR_LINES)..].to_vec()
}

/// Runs `argv` (`what`: --prepare or --conclude) to its end outside the timed region, its
/// standard error into `capture`; an error unless it exits 0.
fn untimed(
    what: &str,
    argv: &[String],
    line: &CommandLine,
    capture: &File,
) -> Result<(), BenchError> {
    use std::process::Stdio;
    let mut f: &File = capture;
    f.rewind()
        .map_err(BenchError::sys("rewinding the standard error file"))?;
    let err = capture
        .try_clone()
        .map_err(BenchError::sys("duplicating a descriptor"))?;
    let status = command_for(argv)?
        .envs(line.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err)
        .status()
        .map_err(BenchError::sys(
            "starting a command outside the timed region",
        ))?;
    if status.success() {
        return Ok(());
    }
    let name = format!("{what} {}", argv.last().map_or("", |s| s.as_str()));
    Err(failure(&name, status, Some(capture)))
}

impl Benchmark for Run {
    fn setup(&mut self, ctx: &Ctx, _iterations: u64) -> Result<(), BenchError> {
        use std::process::Stdio;
        let line = ctx.command.as_ref().ok_or_else(|| {
            BenchError::Protocol(
                "the command benchmark needs a command line: 'sysperf ab CMD' or 'sysperf ab --a CMD --b CMD'".into(),
            )
        })?;
        let capture = crate::sys::memfd(c"sysperf-stderr")
            .map(File::from)
            .map_err(BenchError::sys(
                "making the file the command's standard error goes to",
            ))?;
        let clone = |f: &File| {
            f.try_clone()
                .map_err(BenchError::sys("duplicating a descriptor"))
        };
        // Before each trial, outside its timed region: hyperfine's --prepare, once a trial.
        if let Some(prepare) = &line.prepare {
            untimed("--prepare", prepare, line, &capture)?;
        }
        let mut cmd = command_for(&line.argv)?;
        cmd.envs(line.env.iter().map(|(k, v)| (k, v)))
            .stderr(clone(&capture)?);
        match &line.input {
            Some(path) => {
                let f = File::open(path).map_err(BenchError::sys("opening the --input file"))?;
                cmd.stdin(clone(&f)?);
                self.input = Some(f);
            }
            None => {
                cmd.stdin(Stdio::null());
            }
        }
        match &line.output {
            Output::Null => cmd.stdout(Stdio::null()),
            Output::Pipe => cmd.stdout(Stdio::piped()),
            Output::File(path) => {
                let f =
                    File::create(path).map_err(BenchError::sys("creating the --output file"))?;
                cmd.stdout(f)
            }
        };
        self.pipe = line.output == Output::Pipe;
        self.name = line.name();
        self.ignore_failure = line.ignore_failure;
        self.stderr = Some(capture);
        self.conclude = line.conclude.clone().map(|c| (c, line.clone()));
        self.cmd = Some(cmd);
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        // After the trial, outside its timed region: hyperfine's --conclude, once a trial.
        match (&self.conclude, &self.stderr) {
            (Some((argv, line)), Some(capture)) => untimed("--conclude", argv, line, capture),
            _ => Ok(()),
        }
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let cmd = self
            .cmd
            .as_mut()
            .ok_or_else(|| BenchError::Protocol("run before setup".into()))?;
        for _ in 0..iterations {
            // Each run reads its input and writes its standard error from the start (a
            // seek, the cost of a system call beside a process's start).
            for f in self.input.iter().chain(self.stderr.iter()) {
                let mut f: &File = f;
                f.seek(SeekFrom::Start(0))
                    .map_err(BenchError::sys("rewinding the command's files"))?;
            }
            let status = if self.pipe {
                let mut child = cmd
                    .spawn()
                    .map_err(BenchError::sys("starting the command"))?;
                if let Some(mut out) = child.stdout.take() {
                    std::io::copy(&mut out, &mut std::io::sink())
                        .map_err(BenchError::sys("reading the command's output"))?;
                }
                child.wait()
            } else {
                cmd.status()
            }
            .map_err(BenchError::sys("starting the command"))?;
            if !status.success() && !self.ignore_failure {
                return Err(failure(&self.name, status, self.stderr.as_ref()));
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
            e.contains("`false` exited with code 1") && e.contains("must exit 0"),
            "{e}"
        );
        assert!(Run::default().setup(&Ctx::default(), 1).is_err());
    }
    #[test]
    fn a_shell_runs_the_line_and_a_failure_says_its_code_and_last_stderr_lines() {
        // #43: a redirection means what it means in a shell; without one it is a word.
        let c = CommandLine::in_shell("echo x > /dev/null", &[], Some(DEFAULT_SHELL)).unwrap();
        assert_eq!(c.argv, ["sh", "-c", "echo x > /dev/null"]);
        assert_eq!(c.name(), "echo x > /dev/null");
        assert_eq!(
            CommandLine::in_shell("echo x > y", &[], None).unwrap().argv,
            ["echo", "x", ">", "y"]
        );
        let ctx = |c: CommandLine| Ctx {
            command: Some(c),
            ..Ctx::default()
        };
        let line = "echo one >&2; echo two >&2; exit 3";
        let mut bad = Run::default();
        bad.setup(
            &ctx(CommandLine::in_shell(line, &[], Some("sh")).unwrap()),
            2,
        )
        .unwrap();
        let e = bad.run(2).unwrap_err().to_string();
        assert!(e.contains(&format!("`{line}` exited with code 3")), "{e}");
        assert!(e.contains("ended:\n    one\n    two\n"), "{e}");
        // --ignore-failure times it as it is.
        let mut c = CommandLine::in_shell(line, &[], Some("sh")).unwrap();
        c.ignore_failure = true;
        let mut ok = Run::default();
        ok.setup(&ctx(c), 2).unwrap();
        ok.run(2).unwrap();
        // --input is read from its start by every run; --prepare runs before the trial.
        let dir = tempfile::tempdir().unwrap();
        let (input, seen) = (dir.path().join("in"), dir.path().join("seen"));
        std::fs::write(&input, "abc\n").unwrap();
        let mut c = CommandLine::in_shell(
            &format!(
                "read x && test \"$x\" = abc && echo ran >> {}",
                seen.display()
            ),
            &[],
            Some("sh"),
        )
        .unwrap();
        c.input = Some(input);
        c.prepare = Some(vec![
            "sh".into(),
            "-c".into(),
            format!("echo prep > {}", seen.display()),
        ]);
        let mut r = Run::default();
        r.setup(&ctx(c), 3).unwrap();
        r.run(3).unwrap();
        assert_eq!(
            std::fs::read_to_string(&seen).unwrap(),
            "prep\nran\nran\nran\n"
        );
    }
}
