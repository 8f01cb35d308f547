//! Typed errors of the library. The CLI wraps them with context (anyhow) and maps them to
//! exit codes; every message says what went wrong and what to do about it.

use thiserror::Error;

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
