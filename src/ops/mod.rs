//! Use cases: what a command does from its request to its result, over the run engine, the
//! catalog and the store (cargo's `ops/` under its thin `commands/`). The command line parses
//! its arguments into a request, calls one use case and prints what it returns; nothing here
//! parses arguments or prints: results are returned, progress goes to the engine's [`Sink`]
//! the caller gives ([`Progress`]), and what the user should hear while it works goes through
//! `notice`. Not the engine's own work (plans, trials, the switch's record), which
//! `engine` does for every command alike.

pub mod commands;
pub mod explain;
mod switches;

use crate::catalog::CatalogError;
use crate::engine::ab::AbError;
use crate::engine::{EngineError, Sink};
use crate::error::InputError;
use crate::store::StoreError;

/// Where the engine's events of each run a use case makes go: a fresh sink per run (a
/// progress bar), told when the run is over (the bar comes off the screen before anything
/// about the run is said).
pub trait Progress {
    /// The sink of the run about to start.
    fn sink(&mut self) -> &mut dyn Sink;
    /// The run is over, however it ended.
    fn done(&mut self);
}

/// Why a use case could not be carried out; each wrapped error keeps its exit code.
#[derive(Debug, thiserror::Error)]
pub enum OpsError {
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Ab(#[from] AbError),
    #[error(transparent)]
    Input(#[from] InputError),
    /// Something the use case ran failed (a command's --setup exited non-zero): what, and
    /// what it said.
    #[error("{0}")]
    Failed(String),
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

impl crate::error::Exit for OpsError {
    fn exit_code(&self) -> i32 {
        match self {
            OpsError::Catalog(e) => e.exit_code(),
            OpsError::Store(e) => e.exit_code(),
            OpsError::Engine(e) => e.exit_code(),
            OpsError::Ab(e) => e.exit_code(),
            OpsError::Input(e) => e.exit_code(),
            OpsError::Failed(_) | OpsError::Io { .. } => crate::exit::FAILURE,
        }
    }
}

/// The CPUs this process may use, which every plan is resolved within.
pub fn allowed_cpus() -> Result<Vec<u32>, OpsError> {
    crate::sys::get_affinity().map_err(|source| OpsError::Io {
        what: "reading the CPUs this process may use".into(),
        source,
    })
}

/// The machine's variance estimates once a command's runs (`outcomes`, of `run` and `noise`)
/// are stored, from the newest not interrupted (none: nothing is recorded): the engine does
/// not know the catalog. Derived and rebuilt after every run, so a failure costs a warning
/// (`notice`), not the runs.
pub fn record_variance(
    store: &dyn crate::store::Backend,
    outcomes: &[crate::engine::RunOutcome],
) -> Vec<crate::model::VarianceEstimate> {
    let Some(o) = outcomes.iter().rev().find(|o| !o.interrupted) else {
        return Vec::new();
    };
    crate::catalog::record_variance(store, &o.run).unwrap_or_else(|e| {
        crate::notice::tell(&format!(
            "warning: could not update this machine's variance estimates: {e}"
        ));
        Vec::new()
    })
}
