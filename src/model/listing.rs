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
    /// For an incomplete run: when and where it was last heard of (#35). None for a
    /// complete run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Stopped>,
}

/// How long an incomplete run may go without a write before it is taken for abandoned
/// (killed, its host gone): a run stores its results after every round, and no round of a
/// benchmark nor the calibration of a suite takes this long.
pub const ABANDONED_AFTER: std::time::Duration = std::time::Duration::from_secs(3600);

/// An incomplete run's last sign of life: its heartbeat (the time of its last write while it
/// was measured, or its start), what that write stored, and whether it is that long ago that
/// the run is taken for abandoned ([`ABANDONED_AFTER`]), rather than still measuring. A run
/// interrupted by a signal has an end and is never abandoned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Stopped {
    pub last_heard_ns: i64,
    /// What the last write stored ("ctx after 3 counted trials"), None before its first.
    pub at: Option<String>,
    pub abandoned: bool,
}

impl Stopped {
    /// The stop of an incomplete run last heard of at `last_heard_ns` (`ended`: it stored
    /// its end, as an interrupted run does), judged at `now_ns`.
    pub fn judged(last_heard_ns: i64, at: Option<String>, ended: bool, now_ns: i64) -> Stopped {
        Stopped {
            last_heard_ns,
            at,
            abandoned: !ended && Stopped::silent_for(last_heard_ns, now_ns, ABANDONED_AFTER),
        }
    }

    /// Whether a run last heard of at `last_heard_ns` has been silent for longer than
    /// `after` at `now_ns`.
    pub fn silent_for(last_heard_ns: i64, now_ns: i64, after: std::time::Duration) -> bool {
        let after = i64::try_from(after.as_nanos()).unwrap_or(i64::MAX);
        now_ns.saturating_sub(last_heard_ns) > after
    }
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
