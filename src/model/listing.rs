//! The lines of `sysperf runs`: a stored run and a stored observation as the store lists
//! them, without loading them whole.

use serde::Serialize;

/// One line of `sysperf runs`.
#[derive(Debug, Clone, Serialize)]
pub struct RunInfo {
    pub id: String,
    pub label: Option<String>,
    pub started_ns: i64,
    pub ended_ns: Option<i64>,
    pub complete: bool,
    pub hostname: Option<String>,
    pub kernel_release: Option<String>,
    pub cpu_model: Option<String>,
    /// Results stored for the run.
    pub benchmarks: u64,
    /// Series (suite curves) stored for the run.
    pub series: u64,
    pub warnings: u64,
}

/// One line of `sysperf runs`' list of observations.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObservationInfo {
    pub id: String,
    pub kind: String,
    pub label: Option<String>,
    pub started_ns: i64,
    pub wall_ns: u64,
    pub hostname: Option<String>,
    pub kernel_release: Option<String>,
}
