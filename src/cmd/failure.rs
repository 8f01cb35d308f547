//! A failed command: its error, with the context the command added (printed as one line), and
//! the exit code the library's error chose when it was raised ([`sysperf::error::Exit`]).
//! Every library error converts into a [`Failure`] only through its `Exit`, so an error type
//! without an exit code does not compile here; a failure of the command itself ([`failure`])
//! exits 1.

use std::fmt::Display;
use sysperf::error::Exit;
use sysperf::exit;

/// Why a command failed, and with which exit code.
#[derive(Debug)]
pub(crate) struct Failure {
    error: anyhow::Error,
    code: i32,
}

pub(crate) type Result<T, E = Failure> = std::result::Result<T, E>;

impl<E: Exit + std::error::Error + Send + Sync + 'static> From<E> for Failure {
    fn from(e: E) -> Failure {
        Failure {
            code: e.exit_code(),
            error: anyhow::Error::new(e),
        }
    }
}

impl Failure {
    /// The error and its context, for `{:#}` (one line, causes joined by ": ").
    pub(crate) fn error(&self) -> &anyhow::Error {
        &self.error
    }

    pub(crate) fn code(&self) -> i32 {
        self.code
    }

    /// A reader that stopped reading (`sysperf runs | head`): not a failure to report.
    pub(crate) fn is_broken_pipe(&self) -> bool {
        let pipe = Some(std::io::ErrorKind::BrokenPipe);
        self.error.chain().any(|c| {
            c.downcast_ref::<std::io::Error>().map(|io| io.kind()) == pipe
                // JSON written straight to stdout fails inside serde_json.
                || c.downcast_ref::<serde_json::Error>()
                    .and_then(|j| j.io_error_kind())
                    == pipe
        })
    }
}

/// A failure of the command itself (exit 1): what went wrong and what to do.
pub(crate) fn failure(message: String) -> Failure {
    Failure {
        error: anyhow::Error::msg(message),
        code: exit::FAILURE,
    }
}

/// What the command was doing when an error happened, said before it; the exit code stays
/// the error's.
pub(crate) trait Context<T> {
    fn context(self, what: impl Display + Send + Sync + 'static) -> Result<T>;
}

impl<T, E: Into<Failure>> Context<T> for std::result::Result<T, E> {
    fn context(self, what: impl Display + Send + Sync + 'static) -> Result<T> {
        self.map_err(|e| {
            let f = e.into();
            Failure {
                error: f.error.context(what),
                code: f.code,
            }
        })
    }
}

/// A command's exit code once its runs went into a spool file: [`sysperf::exit::SPOOLED`]
/// where it would have been 0; a failure or a signal's code says more and stays.
pub(crate) fn with_spool(code: i32, spooled: bool) -> i32 {
    if spooled && code == sysperf::exit::OK {
        sysperf::exit::SPOOLED
    } else {
        code
    }
}
