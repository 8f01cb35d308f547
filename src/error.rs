//! Typed errors of the library. The CLI wraps them with context (anyhow) and takes their
//! exit codes from them ([`Exit`]); every message says what went wrong and what to do about it.

use crate::exit::{FAILURE, USAGE};
use thiserror::Error;

/// The exit code an error calls for (`sysperf::exit`): `USAGE` (2) when the user's input
/// caused it, else `FAILURE` (1). Every error type of the library implements it (there is no
/// default), an error that wraps another asks it, and the command line takes a failed
/// command's exit code from it: an error type without it does not compile where the command
/// line raises it, so none exits 1 by oversight.
pub trait Exit {
    fn exit_code(&self) -> i32;
}

/// `USAGE` when `user` (the user's input caused the error), else `FAILURE`.
pub fn usage_if(user: bool) -> i32 {
    if user {
        USAGE
    } else {
        FAILURE
    }
}

impl Exit for InputError {
    fn exit_code(&self) -> i32 {
        USAGE
    }
}

impl Exit for BenchError {
    fn exit_code(&self) -> i32 {
        FAILURE
    }
}

/// Reading or writing failed: sysperf's failure, not the user's input (a file the user named
/// that cannot be read is reported by the library's own error types).
impl Exit for std::io::Error {
    fn exit_code(&self) -> i32 {
        FAILURE
    }
}

impl Exit for serde_json::Error {
    fn exit_code(&self) -> i32 {
        FAILURE
    }
}

/// An error with its causes, as one line ("what: why: the OS's reason").
pub fn one_line(e: &dyn std::error::Error) -> String {
    let mut line = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        line.push_str(&format!(": {c}"));
        cause = c.source();
    }
    line
}

/// Errors a user can cause with their input; the CLI maps them to exit code 2.
#[derive(Debug, Error)]
pub enum InputError {
    #[error("unknown benchmark '{given}'{}; run 'sysperf list' to see all ids", suggest(.suggestions))]
    UnknownBenchmark {
        given: String,
        suggestions: Vec<String>,
    },
    #[error("'{pattern}' matches no benchmark; run 'sysperf list' to see all ids")]
    EmptyGlob { pattern: String },
    #[error("invalid {what} '{value}': {why}")]
    InvalidValue {
        what: &'static str,
        value: String,
        why: String,
    },
    #[error("no runs to compare; name at least one RUN: an id, a unique id prefix, a label, 'latest', or a reference run ('sysperf runs' lists them)")]
    NoRuns,
    /// The built-in published runs are never stored, so they cannot be changed or removed.
    #[error(
        "'{name}' is a built-in reference run (published figures), which is read-only; {what}"
    )]
    ReadOnlyReference { name: String, what: &'static str },
    /// An observation of the whole machine named beside a run: shares of a profile and
    /// measurements with intervals do not compare.
    #[error("'{name}' is an observation of the whole machine ('sysperf profile --system'), not a run: an observation compares only with another observation ('sysperf compare {name} OTHER', both observations), a run only with runs; 'sysperf runs' lists both")]
    ObservationNotRun { name: String },
}

fn suggest(s: &[String]) -> String {
    if s.is_empty() {
        String::new()
    } else {
        format!(" (did you mean {}?)", s.join(", "))
    }
}

/// Errors raised inside a benchmark's setup, hot loop or teardown.
#[derive(Debug, Error)]
pub enum BenchError {
    #[error("{op} failed: {source}")]
    Sys {
        op: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Protocol(String),
}

impl BenchError {
    /// The failure of system call `op` from its error, for `map_err`: one helper instead of the
    /// same closure at every fork, pipe and open.
    pub fn sys(op: &'static str) -> impl Fn(std::io::Error) -> BenchError + Copy {
        move |source| BenchError::Sys { op, source }
    }

    /// Wraps the current `errno` as the failure of system call `op`.
    pub fn last(op: &'static str) -> Self {
        BenchError::Sys {
            op,
            source: std::io::Error::last_os_error(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_benchmark_lists_suggestions_and_next_step() {
        let e = InputError::UnknownBenchmark {
            given: "pipebak4".into(),
            suggestions: vec!["pipeback4".into()],
        };
        let m = e.to_string();
        assert!(m.contains("did you mean pipeback4?"), "{m}");
        assert!(m.contains("sysperf list"), "{m}");
    }
}
