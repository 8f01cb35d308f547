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
    /// CPU time per second of each observation's wall time (microseconds of CPU, all CPUs
    /// together): the same samples as a rate, which does not move when something else does.
    #[serde(default)]
    pub before_us_per_s: f64,
    #[serde(default)]
    pub after_us_per_s: f64,
    /// The 95% interval of `after_us_per_s - before_us_per_s` from the sample counts (each
    /// observation's count binomial in its samples, Wilson; the two independent, MOVER).
    #[serde(default)]
    pub change_ci_us_per_s: [f64; 2],
    /// Time per call, when both observations counted the function's calls (`--functions`).
    #[serde(default)]
    pub per_call: Option<PerCall>,
}

impl Moved {
    /// Whether the interval of the change in CPU time per second leaves out 0.
    pub fn significant(&self) -> bool {
        self.change_ci_us_per_s[0] > 0.0 || self.change_ci_us_per_s[1] < 0.0
    }
}

/// A function's self time per call in two observations whose calls were counted: the
/// figure the 4.2BSD paper's Tables 9 and 10 judge a change by (namei's share rose while its
/// time per call fell).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerCall {
    pub calls: [u64; 2],
    pub before_us: f64,
    pub after_us: f64,
    /// The 95% interval of `after_us - before_us`: the calls are counted exactly, the time
    /// is sampled (Wilson on the samples, MOVER for the difference).
    pub change_ci_us: [f64; 2],
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
    /// Rows whose share moved less than this (percentage points) are left out, unless their
    /// calls were counted in both.
    pub threshold_points: f64,
}

/// The normal quantile of the intervals (95%, two-sided).
const Z95: f64 = 1.959_963_984_540_054;

/// Counts of one kind (subsystems, system calls, functions) in one observation, out of
/// `whole` samples, and what a sample is worth in microseconds of CPU per second of wall.
struct Counts<'a> {
    map: &'a BTreeMap<String, u64>,
    whole: u64,
    us_per_s: f64,
}

impl Counts<'_> {
    fn of<'a>(p: &SystemProfile, map: &'a BTreeMap<String, u64>, whole: u64) -> Counts<'a> {
        Counts {
            map,
            whole,
            us_per_s: p.sample_period_ns as f64 / 1000.0 / (p.wall_ns.max(1) as f64 / 1e9),
        }
    }

    /// (point, low, high) of `k` of the `whole` samples, scaled by `unit` per sample.
    fn estimate(k: u64, whole: u64, unit: f64) -> (f64, f64, f64) {
        let (lo, hi) = crate::stats::wilson_ci(k, whole, Z95);
        let n = whole as f64 * unit;
        (k as f64 * unit, lo * n, hi * n)
    }

    fn pct(&self, k: u64) -> f64 {
        if self.whole == 0 {
            0.0
        } else {
            100.0 * k as f64 / self.whole as f64
        }
    }
}

/// Self time per call of `name` in each observation, when both counted its calls.
fn per_call(name: &str, before: &SystemProfile, after: &SystemProfile) -> Option<PerCall> {
    let find = |p: &SystemProfile| {
        p.functions
            .iter()
            .find(|f| f.name == name)
            .and_then(|f| Some((f.calls.filter(|&c| c > 0)?, f.self_samples)))
    };
    let ((cb, kb), (ca, ka)) = (find(before)?, find(after)?);
    let est = |p: &SystemProfile, k: u64, calls: u64| {
        let unit = p.sample_period_ns as f64 / 1000.0 / calls as f64;
        Counts::estimate(k, p.kernel_samples.max(k), unit)
    };
    let (eb, ea) = (est(before, kb, cb), est(after, ka, ca));
    let (lo, hi) = crate::stats::mover_difference(ea, eb);
    Some(PerCall {
        calls: [cb, ca],
        before_us: eb.0,
        after_us: ea.0,
        change_ci_us: [lo, hi],
    })
}

/// Rows whose share moved by at least `threshold` percentage points (or whose calls both
/// counted, when `observations` is given), largest move first.
fn moved(
    before: &Counts,
    after: &Counts,
    threshold: f64,
    observations: Option<(&SystemProfile, &SystemProfile)>,
) -> Vec<Moved> {
    let names: BTreeSet<&String> = before.map.keys().chain(after.map.keys()).collect();
    let mut v: Vec<Moved> = names
        .into_iter()
        .filter_map(|n| {
            let (kb, ka) = (
                before.map.get(n).copied().unwrap_or(0),
                after.map.get(n).copied().unwrap_or(0),
            );
            let (b, a) = (before.pct(kb), after.pct(ka));
            let per_call = observations.and_then(|(x, y)| per_call(n, x, y));
            if (a - b).abs() < threshold && per_call.is_none() {
                return None;
            }
            let eb = Counts::estimate(kb, before.whole, before.us_per_s);
            let ea = Counts::estimate(ka, after.whole, after.us_per_s);
            let (lo, hi) = crate::stats::mover_difference(ea, eb);
            Some(Moved {
                name: n.clone(),
                before_pct: b,
                after_pct: a,
                ratio: (b > 0.0).then(|| a / b),
                before_us_per_s: eb.0,
                after_us_per_s: ea.0,
                change_ci_us_per_s: [lo, hi],
                per_call,
            })
        })
        .collect();
    v.sort_by(|x, y| {
        (y.after_pct - y.before_pct)
            .abs()
            .total_cmp(&(x.after_pct - x.before_pct).abs())
            .then(x.name.cmp(&y.name))
    });
    v
}

/// Self samples of each kernel function (idle left out), and the kernel's samples.
fn function_counts(p: &SystemProfile) -> (BTreeMap<String, u64>, u64) {
    let k = p.kernel_profile();
    let counts = k
        .flat()
        .into_iter()
        .filter(|f| f.self_samples > 0)
        .map(|f| (f.name, f.self_samples))
        .collect();
    (counts, k.samples)
}

/// `after` against the baseline `before`: every share that moved by `threshold` points, and
/// every function whose calls both counted.
pub fn compare(before: &SystemProfile, after: &SystemProfile, threshold: f64) -> Comparison {
    let ((fb, nb), (fa, na)) = (function_counts(before), function_counts(after));
    Comparison {
        before: before.id.clone(),
        after: after.id.clone(),
        subsystems: moved(
            &Counts::of(before, &before.subsystems, before.samples),
            &Counts::of(after, &after.subsystems, after.samples),
            threshold,
            None,
        ),
        syscalls: moved(
            &Counts::of(before, &before.syscalls, before.kernel_samples),
            &Counts::of(after, &after.syscalls, after.kernel_samples),
            threshold,
            None,
        ),
        functions: moved(
            &Counts::of(before, &fb, nb),
            &Counts::of(after, &fa, na),
            threshold,
            Some((before, after)),
        ),
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

    /// An observation whose `filename_lookup` has `lookup` of 10,000 kernel samples (at 1 ms
    /// a sample, over 10 s), its calls counted as `calls`.
    fn namei(lookup: u64, calls: u64) -> SystemProfile {
        let mut p = observation(
            &[
                ("e;filename_lookup", lookup),
                ("e;clear_page", 10_000 - lookup),
            ],
            &[("syscall", 10_000)],
        );
        p.sample_period_ns = 1_000_000;
        p.wall_ns = 10_000_000_000;
        p.functions = vec![crate::model::FunctionCalls {
            name: "filename_lookup".into(),
            calls: Some(calls),
            calls_per_s: Some(calls as f64 / 10.0),
            self_samples: lookup,
            child_samples: 0,
            self_us_per_call: None,
            child_us_per_call: None,
            self_pct_kernel: 0.0,
            total_pct_kernel: 0.0,
            note: String::new(),
        }];
        p
    }

    #[test]
    fn a_share_that_rose_while_the_time_per_call_fell_is_told_by_its_time_per_call() {
        // Tables 9 and 10 of the 4.2BSD paper: namei's share rose, its time per call fell.
        let (a, b) = (namei(2000, 1_000_000), namei(2500, 2_000_000));
        let c = compare(&a, &b, 0.5);
        let f = c
            .functions
            .iter()
            .find(|m| m.name == "filename_lookup")
            .unwrap();
        assert!((f.before_pct - 20.0).abs() < 1e-9 && (f.after_pct - 25.0).abs() < 1e-9);
        // 2000 samples x 1 ms over 10 s = 200,000 us of CPU per second; then 250,000.
        assert!((f.before_us_per_s - 200_000.0).abs() < 1e-6, "{f:?}");
        assert!((f.after_us_per_s - 250_000.0).abs() < 1e-6);
        assert!(f.significant() && f.change_ci_us_per_s[0] > 0.0);
        // Per call: 2 us, then 1.25 us, and the interval of the fall leaves out 0.
        let pc = f.per_call.as_ref().expect("calls counted in both");
        assert_eq!(pc.calls, [1_000_000, 2_000_000]);
        assert!((pc.before_us - 2.0).abs() < 1e-9 && (pc.after_us - 1.25).abs() < 1e-9);
        assert!(pc.change_ci_us[1] < 0.0, "{pc:?}");
        assert!(pc.change_ci_us[0] < -0.75 && pc.change_ci_us[1] > -0.75);
        // A function whose calls both counted is listed even when its share did not move.
        let c = compare(&a, &namei(2000, 1_000_000), 0.5);
        let f = &c.functions[0];
        assert_eq!(f.name, "filename_lookup");
        assert!(!f.significant());
        let pc = f.per_call.as_ref().unwrap();
        assert!(pc.change_ci_us[0] < 0.0 && pc.change_ci_us[1] > 0.0);
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
