//! From an observation to benchmarks, and between observations: the papers' method starts
//! from a profile of the running machine, isolates what it found with a micro-benchmark, and
//! confirms the fix with another profile.
//!
//! - [`isolate`]: for the hottest kernel functions of a system profile (self time, idle left
//!   out), the benchmarks whose stored profiles (`sysperf run --profile`) spend the largest
//!   share of their samples in the same function reached the same way: through the callers
//!   that bring most of the observation's samples to it (a lock or an allocator is called
//!   from everywhere; the function's name alone would name any benchmark that takes it).
//! - [`compare`]: two system profiles side by side: the subsystems, system calls and kernel
//!   functions whose share of time moved, each also as CPU time per second of the
//!   observation with the 95% interval of its change from the sample counts, and, for the
//!   functions whose calls both observations counted (`--functions`), time per call: a share
//!   moves whenever anything else does (the 4.2BSD paper's Tables 9 and 10).

use super::system::SystemProfile;
use super::Profile;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Hot functions looked up by default, and benchmarks named for each.
pub const HOT_FUNCTIONS: usize = 5;
pub const BENCHMARKS_PER_FUNCTION: usize = 3;
/// A benchmark is named for a function only if it spends at least this share in it (percent).
pub const MIN_SHARE_PCT: f64 = 1.0;

/// Benchmarks that exercise one hot function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Isolation {
    pub function: String,
    /// The function's self time as a share of the observation's kernel time (percent).
    pub pct_kernel: f64,
    /// The call paths (callers first, the function last, at most [`CONTEXT`] callers) that
    /// bring most of the observation's samples in the function ([`PATH_SHARE`] of them).
    #[serde(default)]
    pub paths: Vec<Vec<String>>,
    /// (benchmark, share of its profile's samples through one of `paths`, percent), largest
    /// first.
    pub benchmarks: Vec<(String, f64)>,
}

/// Callers of a hot function that make its path: enough to tell a lock taken by the pipe code
/// from the same lock taken by the scheduler.
pub const CONTEXT: usize = 2;
/// The paths into a hot function kept: the most frequent, until they hold this share of its
/// samples in the observation.
pub const PATH_SHARE: f64 = 0.8;
/// At most this many paths per function.
pub const MAX_PATHS: usize = 4;

/// The paths into `function` in `stacks` (its samples at the leaf), most samples first: up to
/// [`CONTEXT`] callers and the function, with their samples.
fn paths_into(stacks: &BTreeMap<String, u64>, function: &str) -> Vec<(Vec<String>, u64)> {
    let mut by: BTreeMap<Vec<String>, u64> = BTreeMap::new();
    for (stack, &n) in stacks {
        let frames: Vec<&str> = stack.split(';').collect();
        if frames.last() != Some(&function) {
            continue;
        }
        let from = frames.len().saturating_sub(CONTEXT + 1);
        *by.entry(frames[from..].iter().map(|f| f.to_string()).collect())
            .or_default() += n;
    }
    let mut v: Vec<(Vec<String>, u64)> = by.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v
}

/// The most frequent of `paths` until they hold [`PATH_SHARE`] of the samples.
fn main_paths(paths: Vec<(Vec<String>, u64)>) -> Vec<Vec<String>> {
    let whole: u64 = paths.iter().map(|p| p.1).sum();
    let mut held = 0;
    let mut out = Vec::new();
    for (p, n) in paths {
        if out.len() >= MAX_PATHS || (held as f64) >= PATH_SHARE * whole as f64 {
            break;
        }
        held += n;
        out.push(p);
    }
    out
}

/// Whether `frames` holds `path` as consecutive frames.
fn goes_through(frames: &[&str], path: &[String]) -> bool {
    !path.is_empty()
        && frames
            .windows(path.len())
            .any(|w| w.iter().zip(path).all(|(a, b)| a == b))
}

/// Percent of `p`'s samples whose stack goes through one of `paths`.
fn share_through(p: &Profile, paths: &[Vec<String>]) -> f64 {
    let through: u64 = p
        .stacks
        .iter()
        .filter(|(stack, _)| {
            let frames: Vec<&str> = stack.split(';').collect();
            paths.iter().any(|path| goes_through(&frames, path))
        })
        .map(|(_, &n)| n)
        .sum();
    100.0 * through as f64 / p.samples.max(1) as f64
}

/// For the `hot` hottest kernel functions of `p` (by self samples), the benchmarks among
/// `profiles` (the newest profile of each benchmark counts) that spend the most in them by
/// the same call paths.
pub fn isolate(p: &SystemProfile, profiles: &[Profile], hot: usize) -> Vec<Isolation> {
    // The first profile of each benchmark wins: callers pass them newest first.
    let mut seen = BTreeSet::new();
    let benches: Vec<&Profile> = profiles
        .iter()
        .filter(|b| b.samples > 0 && seen.insert(b.bench.as_str()))
        .collect();
    let kernel = p.kernel_profile();
    kernel
        .flat()
        .into_iter()
        .filter(|f| f.self_samples > 0 && !f.name.starts_with('['))
        .take(hot)
        .map(|f| {
            let paths = main_paths(paths_into(&kernel.stacks, &f.name));
            let mut benchmarks: Vec<(String, f64)> = benches
                .iter()
                .map(|b| (b.bench.clone(), share_through(b, &paths)))
                .filter(|(_, pct)| *pct >= MIN_SHARE_PCT)
                .collect();
            benchmarks.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            benchmarks.truncate(BENCHMARKS_PER_FUNCTION);
            Isolation {
                pct_kernel: p.kernel_pct(f.self_samples),
                function: f.name,
                paths,
                benchmarks,
            }
        })
        .collect()
}

/// One thing whose share moved between two observations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Moved {
    pub name: String,
    /// Shares in percent: in the baseline, in the other.
    pub before_pct: f64,
    pub after_pct: f64,
    /// after / before; None when the baseline share is zero.
    pub ratio: Option<f64>,
}

/// Two observations compared: what moved, most first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub before: String,
    pub after: String,
    /// Share of all samples (user and idle are subsystems here).
    pub subsystems: Vec<Moved>,
    /// Share of kernel time (idle excluded).
    pub syscalls: Vec<Moved>,
    /// Self time as a share of kernel time.
    pub functions: Vec<Moved>,
    /// Rows whose share moved less than this (percentage points) are left out.
    pub threshold_points: f64,
}

/// Shares moved by at least `threshold` percentage points, largest move first.
fn moved(
    before: &BTreeMap<String, f64>,
    after: &BTreeMap<String, f64>,
    threshold: f64,
) -> Vec<Moved> {
    let names: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let mut v: Vec<Moved> = names
        .into_iter()
        .map(|n| {
            let b = before.get(n).copied().unwrap_or(0.0);
            let a = after.get(n).copied().unwrap_or(0.0);
            Moved {
                name: n.clone(),
                before_pct: b,
                after_pct: a,
                ratio: (b > 0.0).then(|| a / b),
            }
        })
        .filter(|m| (m.after_pct - m.before_pct).abs() >= threshold)
        .collect();
    v.sort_by(|x, y| {
        (y.after_pct - y.before_pct)
            .abs()
            .total_cmp(&(x.after_pct - x.before_pct).abs())
            .then(x.name.cmp(&y.name))
    });
    v
}

fn shares(m: &BTreeMap<String, u64>, whole: u64) -> BTreeMap<String, f64> {
    m.iter()
        .map(|(k, &v)| {
            let pct = if whole == 0 {
                0.0
            } else {
                100.0 * v as f64 / whole as f64
            };
            (k.clone(), pct)
        })
        .collect()
}

fn function_shares(p: &SystemProfile) -> BTreeMap<String, f64> {
    let k = p.kernel_profile();
    k.flat()
        .into_iter()
        .filter(|f| f.self_samples > 0)
        .map(|f| (f.name, f.self_pct))
        .collect()
}

/// `after` against the baseline `before`: every share that moved by `threshold` points.
pub fn compare(before: &SystemProfile, after: &SystemProfile, threshold: f64) -> Comparison {
    Comparison {
        before: before.id.clone(),
        after: after.id.clone(),
        subsystems: moved(
            &shares(&before.subsystems, before.samples),
            &shares(&after.subsystems, after.samples),
            threshold,
        ),
        syscalls: moved(
            &shares(&before.syscalls, before.kernel_samples),
            &shares(&after.syscalls, after.kernel_samples),
            threshold,
        ),
        functions: moved(&function_shares(before), &function_shares(after), threshold),
        threshold_points: threshold,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::system::Aggregator;

    fn observation(stacks: &[(&str, u64)], subsystems: &[(&str, u64)]) -> SystemProfile {
        let mut p = Aggregator::new(10).finish();
        p.stacks = stacks.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        p.samples = stacks.iter().map(|s| s.1).sum();
        p.kernel_samples = p.samples;
        p.subsystems = subsystems
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect();
        p.wall_ns = 1_000_000_000;
        p
    }

    fn bench(name: &str, stacks: &[(&str, u64)]) -> Profile {
        let mut p = crate::profile::tests::profile(stacks);
        p.bench = name.into();
        p
    }

    #[test]
    fn hot_functions_name_the_benchmarks_that_spend_most_in_them() {
        let p = observation(
            &[
                ("entry;ksys_read;anon_pipe_read", 60),
                ("entry;ksys_write;anon_pipe_write", 30),
                ("entry;do_fork;copy_process", 10),
            ],
            &[("syscall", 100)],
        );
        let profiles = vec![
            bench(
                "pipeback4",
                &[("entry;ksys_read;anon_pipe_read", 50), ("entry;x", 50)],
            ),
            bench(
                "pipeself4",
                &[("entry;ksys_read;anon_pipe_read", 80), ("y", 20)],
            ),
            // An older profile of the same benchmark does not count.
            bench(
                "pipeself4",
                &[("entry;ksys_read;anon_pipe_read", 1), ("y", 99)],
            ),
            bench("forks0", &[("entry;do_fork;copy_process", 90), ("z", 10)]),
            bench("syscall", &[("entry;getpid", 100)]),
        ];
        let iso = isolate(&p, &profiles, 3);
        assert_eq!(iso.len(), 3);
        assert_eq!(iso[0].function, "anon_pipe_read");
        assert!((iso[0].pct_kernel - 60.0).abs() < 1e-9);
        assert_eq!(
            iso[0].benchmarks,
            vec![
                ("pipeself4".to_string(), 80.0),
                ("pipeback4".to_string(), 50.0)
            ]
        );
        assert!(iso[1].benchmarks.is_empty(), "no benchmark writes a pipe");
        assert_eq!(iso[2].benchmarks, vec![("forks0".to_string(), 90.0)]);
        assert!(isolate(&p, &[], 3).iter().all(|i| i.benchmarks.is_empty()));
    }

    #[test]
    fn a_function_called_from_everywhere_names_the_benchmarks_that_reach_it_the_same_way() {
        // The machine spends its time in a lock released by the block layer's completion; a
        // pipe benchmark releases the same lock more often, on its wake-up path.
        const LOCK: &str = "_raw_spin_unlock_irqrestore";
        let p = observation(
            &[
                (
                    "irq;blk_mq_end_request;blk_update_request;_raw_spin_unlock_irqrestore",
                    90,
                ),
                ("entry;x;y;_raw_spin_unlock_irqrestore", 10),
            ],
            &[("irq", 100)],
        );
        let profiles =
            vec![
            bench(
                "pipeback4",
                &[
                    ("entry;anon_pipe_write;__wake_up_sync_key;_raw_spin_unlock_irqrestore", 30),
                    ("entry;anon_pipe_read", 70),
                ],
            ),
            bench(
                "seqpage",
                &[
                    (
                        "irq;blk_mq_end_request;blk_update_request;_raw_spin_unlock_irqrestore;__x",
                        5,
                    ),
                    ("entry;filemap_read", 95),
                ],
            ),
        ];
        let iso = isolate(&p, &profiles, 1);
        assert_eq!(iso[0].function, LOCK);
        assert_eq!(
            iso[0].paths,
            vec![vec![
                "blk_mq_end_request".to_string(),
                "blk_update_request".into(),
                LOCK.into()
            ]],
            "the callers that bring 80% of its samples"
        );
        assert_eq!(iso[0].benchmarks, vec![("seqpage".to_string(), 5.0)]);
    }

    #[test]
    fn comparison_lists_what_moved_with_ratios() {
        let a = observation(
            &[("e;anon_pipe_read", 50), ("e;clear_page", 50)],
            &[("syscall", 50), ("page fault", 50)],
        );
        let b = observation(
            &[("e;anon_pipe_read", 25), ("e;clear_page", 74), ("e;new", 1)],
            &[("syscall", 25), ("page fault", 75)],
        );
        let c = compare(&a, &b, 0.5);
        let names: Vec<&str> = c.functions.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, vec!["anon_pipe_read", "clear_page", "new"]);
        assert_eq!(c.functions[0].ratio, Some(0.5));
        assert_eq!(c.functions[2].ratio, None, "new: nothing to divide by");
        assert_eq!(c.subsystems[0].name, "page fault");
        assert_eq!(c.subsystems[0].ratio, Some(1.5));
        // Below the threshold nothing is listed.
        assert!(compare(&a, &a, 0.5).functions.is_empty());
    }
}
