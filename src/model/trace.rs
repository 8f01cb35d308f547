//! A trace of one benchmark as the store keeps it (`sysperf trace ID --store`): the report
//! `sysperf trace` printed, kept as its JSON document (its types are `trace`'s, a layer above),
//! with the machine's fingerprint when it was made, so that `explain` can tell which run's
//! machine it stands for.

use super::Fingerprint;
use serde::{Deserialize, Serialize};

/// The `kind` of a stored trace among the observations.
pub const TRACE_KIND: &str = "trace";

/// A stored trace of one benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredTrace {
    /// 12 hex digits, as a run's; empty until stored.
    pub id: String,
    pub label: Option<String>,
    /// The benchmark (or suite point) traced.
    pub bench: String,
    /// Unix time of the start, in nanoseconds.
    pub started_ns: i64,
    /// Wall time of the traced runs together.
    pub wall_ns: u64,
    pub sysperf_version: String,
    /// The machine when it was traced.
    pub fingerprint: Fingerprint,
    /// `sysperf trace --json`'s document (`trace::TraceReport`).
    pub report: serde_json::Value,
}
