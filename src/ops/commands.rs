//! `sysperf ab CMD...`'s use case (#43): command lines timed on the paired engine, with
//! hyperfine's --setup, --warmup and --cleanup around the rounds: each command after the
//! baseline is one A/B with it (both sides stored), a command alone is one run. What the
//! commands are (parsing what was typed) and printing the comparisons and hyperfine's lines
//! are the command line's.

use super::{OpsError, Progress};
use crate::bench::command::CommandLine;
use crate::catalog;
use crate::engine::ab::{CommandSides, Design};
use crate::engine::{self, Engine, RunPlan};
use crate::model::Run;
use crate::store::Location;
use std::path::{Path, PathBuf};

/// The commands to time, and how.
pub struct Request<'a> {
    /// The plan of the rounds (its targets are the `command` benchmark).
    pub plan: &'a RunPlan,
    pub design: Design,
    /// The commands, the baseline first.
    pub lines: &'a [CommandLine],
    /// Run once before the rounds and once after (`--setup`, `--cleanup`).
    pub setup: Option<CommandLine>,
    pub cleanup: Option<CommandLine>,
    /// Untimed runs of each command before the rounds (`--warmup`).
    pub warmup: u32,
    /// The store (`--db`).
    pub db: Option<&'a PathBuf>,
    /// The executable workers are started from (this program).
    pub worker_exe: &'a Path,
}

/// What the rounds made.
pub struct Timed {
    /// Each command after the baseline: the baseline's run and its own.
    pub pairs: Vec<(Run, Run)>,
    /// A command alone: its run.
    pub alone: Option<Run>,
    /// Ctrl-C stopped the rounds (what was made is stored, incomplete).
    pub interrupted: bool,
    /// The store the runs went to, as it was opened.
    pub opened: Location,
    /// The spool file the runs went into instead, when that store is a shared one that stayed
    /// unreachable.
    pub spool: Option<PathBuf>,
}

/// Times `req.lines`; the rounds report to `progress`.
pub fn time(req: &Request<'_>, progress: &mut dyn Progress) -> Result<Timed, OpsError> {
    before(req)?;
    let stop = engine::stop_flag()?;
    let store = catalog::open_store_to_measure(req.db)?;
    let opened = store.location();
    crate::sync::upload_waiting(Some(store.as_ref()));
    let engine = Engine {
        worker_exe: req.worker_exe.to_path_buf(),
        stop: &stop,
    };
    let mut timed = Timed {
        pairs: Vec::new(),
        alone: None,
        interrupted: false,
        spool: None,
        opened,
    };
    let measured = rounds(req, &engine, store.as_ref(), progress.sink(), &mut timed);
    progress.done();
    measured?;
    after(req)?;
    if let (Location::Postgres(_), Location::Sqlite(spool)) = (&timed.opened, store.location()) {
        timed.spool = Some(spool);
    }
    Ok(timed)
}

/// What runs before the rounds: `--setup`, then each command `--warmup` times (before the
/// first of `ab --sittings` too).
pub fn before(req: &Request<'_>) -> Result<(), OpsError> {
    if let Some(setup) = &req.setup {
        once("--setup", setup)?;
    }
    for c in req.lines {
        for _ in 0..req.warmup {
            once("--warmup", c)?;
        }
    }
    Ok(())
}

/// What runs after the rounds (after the last of `ab --sittings`): `--cleanup`.
pub fn after(req: &Request<'_>) -> Result<(), OpsError> {
    if let Some(cleanup) = &req.cleanup {
        once("--cleanup", cleanup)?;
    }
    Ok(())
}

/// The rounds: each command after the baseline is one A/B with it; a command alone is one run.
fn rounds(
    req: &Request<'_>,
    engine: &Engine<'_>,
    store: &dyn crate::store::Backend,
    sink: &mut dyn engine::Sink,
    timed: &mut Timed,
) -> Result<(), OpsError> {
    let (plan, lines) = (req.plan, req.lines);
    if lines.len() == 1 {
        let mut p = plan.clone();
        for t in &mut p.targets {
            t.target.command = Some(lines[0].clone());
        }
        let o = engine.execute(&p, store, sink)?;
        timed.interrupted = o.interrupted;
        timed.alone = Some(o.run);
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
        let outcomes = engine.execute_sides(&p, req.design, &mut sides, store, sink)?;
        let Some(last) = outcomes.into_iter().last() else {
            break;
        };
        timed.interrupted = last.interrupted;
        timed.pairs.push((last.off, last.on));
        if timed.interrupted {
            break;
        }
    }
    Ok(())
}

/// Runs `c` once in this process, untimed (--setup, --cleanup, --warmup), its output
/// discarded; an error quoting its standard error unless it exits 0.
fn once(what: &str, c: &CommandLine) -> Result<(), OpsError> {
    let io = |doing: String| {
        move |source| OpsError::Io {
            what: doing,
            source,
        }
    };
    let program = &c.argv[0];
    let found = if program.contains('/') {
        std::path::absolute(program).and_then(|p| crate::programs::at(&p))
    } else {
        crate::programs::command(program)
    };
    let mut cmd = found.map_err(io(format!("{what}: finding {program}")))?;
    let input = match &c.input {
        Some(path) => std::process::Stdio::from(
            std::fs::File::open(path).map_err(io(format!("opening --input {}", path.display())))?,
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
        .map_err(io(format!("{what}: starting `{}`", c.name())))?;
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
    Err(OpsError::Failed(format!(
        "{what} `{}` {how}{said}",
        c.name()
    )))
}
