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
    /// A `--quick` run: a smoke test, one short trial a test, never an estimate (#43: `runs`
    /// and `plot` say so).
    #[serde(default)]
    pub quick: bool,
    /// For an incomplete run: when and where it was last heard of (#35). None for a
    /// complete run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Stopped>,
}

/// How long an incomplete run may go without a write before it is taken for abandoned
/// (killed, its host gone): a run stores its results after every round, and no round of a
/// benchmark nor the calibration of a suite takes this long.
pub const ABANDONED_AFTER: std::time::Duration = std::time::Duration::from_secs(3600);

/// The least silence that makes a run abandoned when its writer cannot be checked here (#41:
/// another host's run in a shared store, a run from before writers were recorded): five of
/// the measuring process's heartbeats (`store::BEAT_EVERY`, 2 s), so that no shorter
/// `gc --abandoned --older-than` takes a live run of another host for abandoned.
pub const UNCHECKED_SILENCE: std::time::Duration = std::time::Duration::from_secs(10);

/// An incomplete run's last sign of life: its heartbeat (the time of its last write or beat
/// while it was measured, or its start), what its last write stored, whether its writer
/// still runs, and whether the run is taken for abandoned ([`ABANDONED_AFTER`]), rather than
/// still measuring. A run interrupted by a signal has an end and is never abandoned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Stopped {
    pub last_heard_ns: i64,
    /// What the last write stored ("ctx after 3 counted trials"), None before its first.
    pub at: Option<String>,
    /// Whether the process measuring it runs on this machine now (#41); None when that
    /// cannot be told here (another machine or boot, another PID namespace, a run stored
    /// before writers were recorded, or copied by `import` or `sync`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writer_alive: Option<bool>,
    pub abandoned: bool,
}

impl Stopped {
    /// The stop of an incomplete run last heard of at `last_heard_ns` (`ended`: it stored
    /// its end, as an interrupted run does), its writer alive or not, judged at `now_ns`.
    pub fn judged(
        last_heard_ns: i64,
        at: Option<String>,
        ended: bool,
        writer_alive: Option<bool>,
        now_ns: i64,
    ) -> Stopped {
        let mut st = Stopped {
            last_heard_ns,
            at,
            writer_alive,
            abandoned: false,
        };
        st.abandoned = st.abandoned_after(ended, now_ns, ABANDONED_AFTER);
        st
    }

    /// The one rule of abandonment (#35, #41): the run never stored its end, its writer does
    /// not run on this machine, and it has been silent for longer than `after` at `now_ns`
    /// (at least [`UNCHECKED_SILENCE`] when its writer cannot be checked here).
    pub fn abandoned_after(&self, ended: bool, now_ns: i64, after: std::time::Duration) -> bool {
        let after = match self.writer_alive {
            Some(true) => return false,
            Some(false) => after,
            None => after.max(UNCHECKED_SILENCE),
        };
        !ended && Stopped::silent_for(self.last_heard_ns, now_ns, after)
    }

    /// Whether a run last heard of at `last_heard_ns` has been silent for longer than
    /// `after` at `now_ns`.
    fn silent_for(last_heard_ns: i64, now_ns: i64, after: std::time::Duration) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// #41: `gc --abandoned --older-than 8s` took a run calibrating for abandoned.
    #[test]
    fn a_run_whose_writer_runs_here_is_never_abandoned_nor_an_unchecked_one_soon() {
        let stop = |writer_alive| Stopped {
            last_heard_ns: 0,
            at: None,
            writer_alive,
            abandoned: false,
        };
        let s = 1_000_000_000;
        let after = Duration::from_secs(1);
        assert!(!stop(Some(true)).abandoned_after(false, 1_000_000 * s, after));
        assert!(stop(Some(false)).abandoned_after(false, 2 * s, after));
        assert!(!stop(None).abandoned_after(false, 2 * s, after));
        assert!(stop(None).abandoned_after(false, 11 * s, after));
        assert!(
            !stop(Some(false)).abandoned_after(true, 11 * s, after),
            "it stored its end"
        );
    }
}
