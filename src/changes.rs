//! When and where performance changed in the store (`sysperf changes`, #35): each history
//! of complete measured runs (a host, a test and the options its runs were measured with,
//! #42), oldest first, searched for change points (`changepoint`) with the false discovery
//! rate controlled across all the histories searched, and each change paired with the
//! nearest difference between the fingerprints of the runs around it (kernel, its
//! configuration, sysctls, microcode, ...: the facts `compare` names,
//! `compare::machine_diffs`).
//!
//! It is not the statistics (`changepoint`), nor the SQL (`store`), nor the rendering
//! (`report::changes`).

use crate::changepoint::{self, ChangePoint, Settings};
use crate::compare::{machine_diffs, FingerprintDiff};
use crate::model::RunOptions;
use crate::store::{Backend, RunMachine, RunQuery, StoreError, TestHistory};
use serde::Serialize;

/// How far from a change the fingerprint difference is looked for, in runs either way: a
/// change is placed within a few runs of where it happened (within 3 runs for 9 in 10 of
/// the 10% steps in 5% noise the tests plant).
pub const NEAREST_WITHIN: usize = 5;

/// The newest runs of each history searched unless told otherwise (`changes --last`).
pub const DEFAULT_NEWEST: usize = 100;

/// The false discovery rate across the histories searched unless told otherwise (`changes
/// --fdr`): with no change anywhere, 1 search in 20 at most reports one.
pub const DEFAULT_FDR: f64 = 0.05;

/// A run on one side of a change.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunAt {
    pub id: String,
    pub started_ns: i64,
    /// Its median wall time per operation of the test, ns.
    pub wall_median_ns: f64,
}

/// The nearest pair of consecutive runs of a history whose fingerprints differ.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Nearest {
    pub before: String,
    pub after: String,
    /// Where the pair is against the change: 0 is the pair around it, 2 two runs later,
    /// -1 one run earlier.
    pub runs_from_change: i64,
    /// Each fact that differs, `values` as [before, after].
    pub differences: Vec<FingerprintDiff>,
}

/// One change found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub host: Option<String>,
    pub test: String,
    pub placement: String,
    /// What the history's runs were measured with.
    pub options: RunOptions,
    /// The last run of the old level and the first of the new.
    pub before: RunAt,
    pub after: RunAt,
    /// Runs of the history on each side, up to the neighbouring change or the end.
    pub runs_before: usize,
    pub runs_after: usize,
    /// The medians of the two levels, ns per operation, and their ratio (after / before).
    pub level_before_ns: f64,
    pub level_after_ns: f64,
    pub ratio: f64,
    /// See [`changepoint::RATIO_CI_COVERS`].
    pub ratio_ci: [f64; 2],
    /// The split's permutation p-value, and its history's first split's (the one the false
    /// discovery rate is controlled on; the same for the history's first change).
    pub p_value: f64,
    pub history_p: f64,
    /// None: no fingerprint differs between consecutive runs within [`NEAREST_WITHIN`] runs.
    pub nearest_difference: Option<Nearest>,
    /// The history's lag-1 autocorrelation about its levels
    /// ([`changepoint::residual_lag1`]), and whether it is over [`changepoint::wander_bound`]:
    /// the level also moves besides its changes, and this change may be such a move.
    pub residual_lag1: Option<f64>,
    pub wanders: bool,
    /// Runs in the history searched.
    pub history_runs: usize,
}

/// What `sysperf changes` found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Changes {
    /// Histories, those searched (long enough to hold a change) and those too short to
    /// ([`min_runs`]).
    pub histories: usize,
    pub searched: usize,
    pub too_short: usize,
    /// The runs a history needs to be searched.
    pub min_runs: usize,
    /// The newest runs of each history searched.
    pub newest: usize,
    /// Results left out of the histories because their test ran beside other work (a
    /// `busy_cpu`, `busy_machine` or `steal` warning): a run's figure then stands for that
    /// work as much as for the system, and a few of them together made changes of their own
    /// in A/A histories.
    pub disturbed: usize,
    /// Results of runs that were a side of `sysperf ab`, and of quick runs, left out (#42).
    pub ab_sides: usize,
    pub quick: usize,
    /// The false discovery rate across the histories searched, the permutations per test,
    /// Benjamini-Hochberg's level (the p-value a history needed at most; None when none was
    /// found), the histories found, and the false alarms to expect among them at most (the
    /// rate times the histories found).
    pub fdr: f64,
    pub permutations: usize,
    pub level: Option<f64>,
    pub found: usize,
    pub expected_false_alarms: f64,
    /// The changes of the histories found, steps under the smallest reported left out.
    pub changes: Vec<Change>,
}

impl Changes {
    /// Nothing in the store to search: no history, or every one too short.
    pub fn empty(newest: usize, fdr: f64, s: &Settings) -> Changes {
        Changes {
            histories: 0,
            searched: 0,
            too_short: 0,
            min_runs: min_runs(s),
            newest,
            disturbed: 0,
            ab_sides: 0,
            quick: 0,
            fdr,
            permutations: 0,
            level: None,
            found: 0,
            expected_false_alarms: 0.0,
            changes: Vec::new(),
        }
    }

    /// The exit code for alerting: a change found ([`crate::exit::CHANGED`]), no history
    /// long enough to search ([`crate::exit::NOTHING_SEARCHED`]: nothing was looked at, which
    /// is not "no change"), else [`crate::exit::OK`].
    pub fn exit_code(&self) -> i32 {
        if !self.changes.is_empty() {
            crate::exit::CHANGED
        } else if self.searched == 0 {
            crate::exit::NOTHING_SEARCHED
        } else {
            crate::exit::OK
        }
    }
}

/// Why the changes could not be found.
#[derive(Debug, thiserror::Error)]
pub enum ChangesError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Change(#[from] changepoint::ChangeError),
}

impl crate::error::Exit for ChangesError {
    fn exit_code(&self) -> i32 {
        match self {
            ChangesError::Store(e) => e.exit_code(),
            ChangesError::Change(e) => e.exit_code(),
        }
    }
}

/// The fewest runs a history needs to hold a change: a level on each side.
pub fn min_runs(s: &Settings) -> usize {
    2 * s.min_size
}

/// The changes in the histories of the runs `query` matches (its limit aside), the newest
/// `newest` runs of each history searched, oldest first, at false discovery rate `fdr`
/// across the histories searched ([`changepoint::search`]).
pub fn find(
    store: &dyn Backend,
    query: &RunQuery,
    newest: usize,
    s: &Settings,
    fdr: f64,
) -> Result<Changes, ChangesError> {
    let mut read = store.test_histories(query, newest)?;
    // The host-speed reference is the machine's, not a test (#42): its history is not
    // searched, so it neither raises an alert nor enters the false discovery rate's count.
    read.histories
        .retain(|h| h.test != crate::bench::hostspeed::ID);
    let histories = &read.histories;
    let values: Vec<Vec<f64>> = histories
        .iter()
        .map(|h| h.points.iter().map(|p| p.wall_median_ns).collect())
        .collect();
    let slices: Vec<&[f64]> = values.iter().map(Vec::as_slice).collect();
    let search = changepoint::search(&slices, s, fdr)?;
    let mut found: Vec<(&TestHistory, f64, ChangePoint)> = Vec::new();
    // Each history's lag-1 autocorrelation about its levels, where it has a change.
    let mut lag1s: Vec<(&TestHistory, Option<f64>)> = Vec::new();
    for ((h, v), (points, p)) in histories
        .iter()
        .zip(&values)
        .zip(search.changes.iter().zip(&search.p_values))
    {
        if !points.is_empty() {
            lag1s.push((h, changepoint::residual_lag1(v, points)));
        }
        let p = p.unwrap_or(1.0);
        found.extend(points.iter().map(|c| (h, p, c.clone())));
    }
    // The fingerprints of the runs near each change, read once each.
    let mut ids: Vec<&str> = found
        .iter()
        .flat_map(|(h, _, c)| window(h, c.index).map(|i| h.points[i].run_id.as_str()))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let machines = store.run_machines(&ids)?;
    let changes = found
        .iter()
        .map(|(h, history_p, c)| {
            let (before, after) = (&h.points[c.index - 1], &h.points[c.index]);
            let at = |p: &crate::store::HistoryPoint| RunAt {
                id: p.run_id.clone(),
                started_ns: p.started_ns,
                wall_median_ns: p.wall_median_ns,
            };
            let (from, to) = level_bounds(&found, h, c.index);
            let lag1 = lag1s
                .iter()
                .find(|(g, _)| std::ptr::eq(*g, *h))
                .and_then(|(_, r)| *r);
            Change {
                host: h.host.clone(),
                test: h.test.clone(),
                placement: h.placement.clone(),
                options: h.options.clone(),
                before: at(before),
                after: at(after),
                runs_before: c.index - from,
                runs_after: to - c.index,
                level_before_ns: c.before,
                level_after_ns: c.after,
                ratio: c.ratio(),
                ratio_ci: c.ratio_ci,
                p_value: c.p_value,
                history_p: *history_p,
                nearest_difference: nearest(h, c.index, &machines),
                residual_lag1: lag1,
                wanders: changepoint::wanders(lag1, h.points.len()),
                history_runs: h.points.len(),
            }
        })
        .collect();
    Ok(Changes {
        histories: histories.len(),
        searched: search.searched,
        too_short: histories.len() - search.searched,
        min_runs: min_runs(s),
        newest,
        disturbed: histories.iter().map(|h| h.disturbed).sum(),
        ab_sides: read.ab_sides,
        quick: read.quick,
        fdr,
        permutations: search.permutations,
        level: search.level,
        found: search.discoveries(),
        expected_false_alarms: search.expected_false_alarms(),
        changes,
    })
}

/// The cells of an evolution heat map grouped by `key` (its columns the groups whose first
/// runs are `columns`) where a change began: (test, column) for each change whose first run
/// after it belongs to that column's group.
pub fn marks(
    store: &dyn Backend,
    c: &Changes,
    key: crate::fleet::Key,
    columns: &[crate::model::Run],
) -> Result<Vec<(String, usize)>, ChangesError> {
    use crate::fleet::Facts;
    let values: Vec<String> = columns
        .iter()
        .map(|r| key.value_of(Facts::from(r)))
        .collect();
    let ids: Vec<&str> = c.changes.iter().map(|ch| ch.after.id.as_str()).collect();
    let machines = store.run_machines(&ids)?;
    let mut out = Vec::new();
    for ch in &c.changes {
        let Some(m) = machines.iter().find(|m| m.id == ch.after.id) else {
            continue;
        };
        let facts = Facts {
            host: m.fingerprint.hostname.as_deref(),
            kernel: m.fingerprint.kernel_release.as_deref(),
            cpu: m.fingerprint.cpu_model.as_deref(),
            label: m.label.as_deref(),
            started_ns: m.started_ns,
        };
        let value = key.value_of(facts);
        if let Some(j) = values.iter().position(|v| *v == value) {
            if !out.contains(&(ch.test.clone(), j)) {
                out.push((ch.test.clone(), j));
            }
        }
    }
    Ok(out)
}

/// The indices of the runs whose fingerprints may be compared for the change at `index`.
fn window(h: &TestHistory, index: usize) -> std::ops::Range<usize> {
    index.saturating_sub(NEAREST_WITHIN + 1)..(index + NEAREST_WITHIN + 1).min(h.points.len())
}

/// The runs of the levels either side of the change at `index`: from the previous change
/// found in the same history (or the start) to the next (or the end).
fn level_bounds(
    found: &[(&TestHistory, f64, ChangePoint)],
    h: &TestHistory,
    index: usize,
) -> (usize, usize) {
    let same: Vec<usize> = found
        .iter()
        .filter(|(g, ..)| std::ptr::eq(*g, h))
        .map(|(_, _, c)| c.index)
        .collect();
    let from = same
        .iter()
        .copied()
        .filter(|i| *i < index)
        .max()
        .unwrap_or(0);
    let to = same
        .iter()
        .copied()
        .filter(|i| *i > index)
        .min()
        .unwrap_or(h.points.len());
    (from, to)
}

/// The nearest pair of consecutive runs around the change at `index` whose fingerprints (or
/// sysperf versions) differ: the pair around it first, then one run later, one run earlier,
/// two later, ... up to [`NEAREST_WITHIN`] runs away.
fn nearest(h: &TestHistory, index: usize, machines: &[RunMachine]) -> Option<Nearest> {
    let machine = |i: usize| {
        let id = &h.points[i].run_id;
        machines.iter().find(|m| &m.id == id)
    };
    let offsets =
        (0..=NEAREST_WITHIN as i64).flat_map(|d| if d == 0 { vec![0] } else { vec![d, -d] });
    for d in offsets {
        let Some(j) = usize::try_from(index as i64 + d)
            .ok()
            .filter(|j| *j >= 1 && *j < h.points.len())
        else {
            continue;
        };
        let (Some(a), Some(b)) = (machine(j - 1), machine(j)) else {
            continue;
        };
        let differences = differences(a, b);
        if !differences.is_empty() {
            return Some(Nearest {
                before: a.id.clone(),
                after: b.id.clone(),
                runs_from_change: d,
                differences,
            });
        }
    }
    None
}

/// The facts that differ between two runs of one host, as `compare` names them, and the
/// sysperf that measured them (a benchmark's definition may have changed).
fn differences(a: &RunMachine, b: &RunMachine) -> Vec<FingerprintDiff> {
    let mut out = machine_diffs(vec![&a.fingerprint, &b.fingerprint]);
    if a.sysperf_version != b.sysperf_version {
        out.push(FingerprintDiff {
            field: "sysperf version".into(),
            values: vec![
                Some(a.sysperf_version.clone()),
                Some(b.sysperf_version.clone()),
            ],
            related: None,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Fingerprint;
    use crate::store::HistoryPoint;

    /// A history of `n` runs r0, r1, ... and their machines: the kernel is "6.1" before run
    /// `kernel_at` and "6.12" from it on; the sysctl is "1" before `sysctl_at`, "2" after.
    fn history(n: usize, kernel_at: usize, sysctl_at: usize) -> (TestHistory, Vec<RunMachine>) {
        let h = TestHistory {
            host: Some("h".into()),
            test: "syscall".into(),
            placement: "single".into(),
            options: crate::model::RunParams::default().options(),
            points: (0..n)
                .map(|i| HistoryPoint {
                    run_id: format!("r{i}"),
                    started_ns: i as i64,
                    wall_median_ns: 100.0,
                })
                .collect(),
            disturbed: 0,
        };
        let machines = (0..n)
            .map(|i| {
                let mut f = Fingerprint {
                    hostname: Some("h".into()),
                    kernel_release: Some(if i < kernel_at { "6.1" } else { "6.12" }.into()),
                    ..Fingerprint::default()
                };
                let v = if i < sysctl_at { "1" } else { "2" };
                f.sysctls.insert("vm.swappiness".into(), v.into());
                RunMachine {
                    id: format!("r{i}"),
                    label: None,
                    started_ns: i as i64,
                    sysperf_version: "0.1.0".into(),
                    fingerprint: f,
                }
            })
            .collect();
        (h, machines)
    }

    #[test]
    fn the_pair_around_the_change_comes_first_then_later_then_earlier() {
        // The kernel changed 2 runs before the change, the sysctl 2 runs after: later first.
        let (h, m) = history(30, 13, 17);
        let n = nearest(&h, 15, &m).unwrap();
        assert_eq!((n.before.as_str(), n.after.as_str()), ("r16", "r17"));
        assert_eq!(n.runs_from_change, 2);
        assert_eq!(n.differences[0].field, "sysctl vm.swappiness");
        assert_eq!(
            n.differences[0].values,
            vec![Some("1".to_string()), Some("2".to_string())]
        );
        // At the change itself: that pair, whatever else changed nearby.
        let (h, m) = history(30, 15, 16);
        let n = nearest(&h, 15, &m).unwrap();
        assert_eq!(n.runs_from_change, 0);
        assert_eq!(n.differences[0].field, "kernel");
        // Only earlier: found there, with a negative distance.
        let (h, m) = history(30, 12, 99);
        assert_eq!(nearest(&h, 15, &m).unwrap().runs_from_change, -3);
    }

    #[test]
    fn nothing_within_reach_is_none_and_the_ends_are_safe() {
        let (h, m) = history(30, 2, 28);
        assert_eq!(nearest(&h, 15, &m), None);
        // A change near either end looks only at pairs inside the history.
        let (h, m) = history(12, 99, 99);
        assert_eq!(nearest(&h, 1, &m), None);
        assert_eq!(nearest(&h, 11, &m), None);
        // Runs whose machines were not read are skipped, not a panic.
        let (h, _) = history(30, 15, 15);
        assert_eq!(nearest(&h, 15, &[]), None);
    }
}
