//! What a finished `run` (or `noise`) says with its exit code, in one place: the README's
//! rule for what this process may not do ("Privileges": the rest is measured and stored, each
//! part left out is named, and the exit code says the run is partial), a benchmark that
//! failed, and a run that a signal stopped.

use super::{interrupted_code, RunOutcome};
use std::collections::BTreeSet;

/// The parts of the runs this process could not do (a suite it may not run, a setting it may
/// not read), each named once, in order.
pub fn left_out(outcomes: &[RunOutcome]) -> BTreeSet<&str> {
    outcomes
        .iter()
        .flat_map(|o| &o.run.warnings)
        .filter(|w| w.kind.is_left_out())
        .map(|w| w.message.as_str())
        .collect()
}

/// The exit code of runs made one after the other: 128 + the signal when the last was stopped
/// by one; 1 when nothing was run, a part was left out, or a benchmark of the last run failed;
/// else 0.
pub fn exit_code(outcomes: &[RunOutcome]) -> i32 {
    match outcomes.last() {
        None => crate::exit::FAILURE,
        Some(o) if o.interrupted => interrupted_code(),
        Some(o) => {
            if !left_out(outcomes).is_empty() || o.run.results.iter().any(|r| r.summary.is_none()) {
                crate::exit::FAILURE
            } else {
                crate::exit::OK
            }
        }
    }
}
