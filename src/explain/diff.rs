//! The differential kernel profile of one test: two profiles (side A, the baseline, and side
//! B) turned into time per operation per function and per call path, each difference with its
//! sampling interval, and the call paths that hold the change.
//!
//! The model. A profile is one long trial sampled every `sample_period_ns` of CPU time
//! (cpu-clock); given the `n` samples of a side, which function (and which call path) each
//! falls in is a draw from where the trial spent its CPU time, so the count `k` of a function
//! is binomial (the counts of all functions together multinomial), and its CPU time per
//! operation is `k x period / operations` with the Wilson interval of `k/n` scaled the same
//! way. The two sides are independent trials, so the interval of the difference `B - A` is
//! the MOVER combination of the two (`stats::mover_difference`; Newcombe's method for two
//! proportions). A difference is significant when its interval leaves out 0. Pure: profiles
//! in, figures out.

use crate::model::Profile;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// The normal quantile of the intervals (95%, two-sided).
pub const Z95: f64 = 1.959_963_984_540_054;

/// Call paths holding less than this share of the change are not followed on their own.
pub const MIN_PATH_SHARE: f64 = 0.05;
/// A path whose significant callees hold this share of its change is split into them; below
/// it the path itself (its own time, or time spread over many callees) is where the change is.
pub const SPLIT_SHARE: f64 = 0.8;
/// The most call paths listed as where the change is.
pub const MAX_PATHS: usize = 8;
/// Callees listed under each path.
pub const MAX_CALLEES: usize = 3;

/// One figure on both sides, in CPU nanoseconds per operation, with the difference and its
/// 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Delta {
    pub a_ns_per_op: f64,
    pub b_ns_per_op: f64,
    /// `b - a`: above 0, more time per operation on side B.
    pub change_ns_per_op: f64,
    pub change_ci_ns_per_op: [f64; 2],
    /// The samples behind each side's figure.
    pub samples: [u64; 2],
}

impl Delta {
    /// Whether the interval of the difference leaves out 0.
    pub fn significant(&self) -> bool {
        self.change_ci_ns_per_op[0] > 0.0 || self.change_ci_ns_per_op[1] < 0.0
    }
}

/// What one sample of a profile is worth per operation, and how many there are.
#[derive(Debug, Clone, Copy)]
struct Scale {
    /// CPU nanoseconds per operation one sample stands for.
    ns_per_op: f64,
    n: u64,
}

impl Scale {
    fn of(p: &Profile) -> Scale {
        Scale {
            ns_per_op: p.sample_period_ns as f64 / p.operations.max(1) as f64,
            n: p.samples,
        }
    }

    /// (point, low, high) in ns per operation for `k` of the side's samples.
    fn estimate(&self, k: u64) -> (f64, f64, f64) {
        let (lo, hi) = crate::stats::wilson_ci(k, self.n, Z95);
        let whole = self.n as f64 * self.ns_per_op;
        (k as f64 * self.ns_per_op, lo * whole, hi * whole)
    }
}

fn delta(a: Scale, ka: u64, b: Scale, kb: u64) -> Delta {
    let (ea, eb) = (a.estimate(ka), b.estimate(kb));
    let (lo, hi) = crate::stats::mover_difference(eb, ea);
    Delta {
        a_ns_per_op: ea.0,
        b_ns_per_op: eb.0,
        change_ns_per_op: eb.0 - ea.0,
        change_ci_ns_per_op: [lo, hi],
        samples: [ka, kb],
    }
}

/// One kernel function on both sides: in itself (self) and with what it called (total, a
/// sample counted once however often the function recurs in its stack).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionDelta {
    pub function: String,
    #[serde(rename = "self")]
    pub self_: Delta,
    pub total: Delta,
    /// The self change as a share of the test's measured change, in percent (set by
    /// `explain`, which knows the measured change; None without a significant one).
    pub share_pct: Option<f64>,
}

/// A call path (root first) and what changed in it: with everything below it (total), in the
/// last frame itself (self), and the callees that changed most the same way.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathDelta {
    /// Frames from the outermost caller to the function the change is in, last.
    pub path: Vec<String>,
    pub total: Delta,
    #[serde(rename = "self")]
    pub self_: Delta,
    pub callees: Vec<Callee>,
    /// The total change as a share of the test's measured change, in percent (as
    /// [`FunctionDelta::share_pct`]).
    pub share_pct: Option<f64>,
}

impl PathDelta {
    /// The function the change is in: the path's last frame.
    pub fn function(&self) -> &str {
        self.path.last().map(String::as_str).unwrap_or("")
    }
}

/// A callee of a path's function, with its change (total).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Callee {
    pub function: String,
    pub total: Delta,
}

/// Two profiles of one test compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProfileDiff {
    /// Every sample of each side: the profiled trials' CPU time per operation.
    pub all: Delta,
    /// Each side's sampling: CPU time per sample, operations, samples dropped or lost.
    pub sample_period_ns: [u64; 2],
    pub operations: [u64; 2],
    pub lost_samples: [u64; 2],
    /// Where the change is: call paths whose subtrees hold it, largest change (in the
    /// direction of `all`) first; disjoint, so their changes add up.
    pub paths: Vec<PathDelta>,
    /// The change's trunk: the deepest call path (root first) that all of it goes through
    /// before it spreads, when the walk that finds `paths` follows one chain of callees from
    /// the root to a function whose callees then split it two or more ways (its `callees` the
    /// largest of them). None when the change is in one path (then that path, `paths`'s first,
    /// is all there is to say) or splits from the root (unrelated subtrees).
    pub trunk: Option<PathDelta>,
    /// Every function with a sample on either side, largest self change first (ties by
    /// name): self changes add up to `all`'s.
    pub functions: Vec<FunctionDelta>,
}

/// A node of the merged call tree: samples through this path on each side.
#[derive(Default)]
struct Node<'a> {
    counts: [u64; 2],
    children: BTreeMap<&'a str, Node<'a>>,
}

impl<'a> Node<'a> {
    fn add(&mut self, frames: &[&'a str], side: usize, n: u64) {
        self.counts[side] += n;
        if let Some((first, rest)) = frames.split_first() {
            self.children.entry(first).or_default().add(rest, side, n);
        }
    }

    fn self_counts(&self) -> [u64; 2] {
        let mut c = self.counts;
        for k in self.children.values() {
            c[0] -= k.counts[0];
            c[1] -= k.counts[1];
        }
        c
    }
}

/// A folded stack's frames as the walk reads them: a kernel stack under a user caller
/// (`[user] COMM;FUNCTION;kernel frames...`) without its two user frames.
fn kernel_first<'s, 'a>(frames: &'s [&'a str]) -> &'s [&'a str] {
    match frames {
        [user, _, _, ..] if user.starts_with("[user] ") => &frames[2..],
        _ => frames,
    }
}

/// Per function: self and total samples on each side.
fn tallies(p: &Profile, side: usize, into: &mut BTreeMap<String, [[u64; 2]; 2]>) {
    for (stack, &n) in &p.stacks {
        let frames: Vec<&str> = stack.split(';').collect();
        if let Some(leaf) = frames.last() {
            into.entry(leaf.to_string()).or_default()[0][side] += n;
        }
        for f in frames.iter().collect::<BTreeSet<_>>() {
            into.entry(f.to_string()).or_default()[1][side] += n;
        }
    }
}

/// Side B against side A (the baseline).
pub fn diff(a: &Profile, b: &Profile) -> ProfileDiff {
    let (sa, sb) = (Scale::of(a), Scale::of(b));
    let all = delta(sa, a.samples, sb, b.samples);

    let mut t: BTreeMap<String, [[u64; 2]; 2]> = BTreeMap::new();
    tallies(a, 0, &mut t);
    tallies(b, 1, &mut t);
    let mut functions: Vec<FunctionDelta> = t
        .into_iter()
        .map(|(function, [s, tot])| FunctionDelta {
            function,
            self_: delta(sa, s[0], sb, s[1]),
            total: delta(sa, tot[0], sb, tot[1]),
            share_pct: None,
        })
        .collect();
    functions.sort_by(|x, y| {
        y.self_
            .change_ns_per_op
            .abs()
            .total_cmp(&x.self_.change_ns_per_op.abs())
            .then_with(|| x.function.cmp(&y.function))
    });

    // The walk to where the change is goes kernel first: a kernel stack's leading user
    // frames (its process and the user function that entered the kernel, #43) are left out
    // of the tree, so that kernel time entered from several user call sites stays one path
    // (a seccomp filter on system call entry is one change, whichever call site met it).
    // User-mode stacks keep their two frames; the Functions table counts every frame.
    let mut root = Node::default();
    for (side, p) in [a, b].into_iter().enumerate() {
        for (stack, &n) in &p.stacks {
            let frames: Vec<&str> = stack.split(';').collect();
            root.add(kernel_first(&frames), side, n);
        }
    }
    let mut paths = Vec::new();
    let sign = if all.change_ns_per_op < 0.0 {
        -1.0
    } else {
        1.0
    };
    let whole = (all.change_ns_per_op * sign).max(0.0);
    if whole > 0.0 {
        let mut path = Vec::new();
        split(&root, &mut path, sa, sb, sign, whole, &mut paths);
    }
    paths.sort_by(|x, y| {
        (y.total.change_ns_per_op * sign)
            .total_cmp(&(x.total.change_ns_per_op * sign))
            .then_with(|| x.path.cmp(&y.path))
    });
    paths.truncate(MAX_PATHS);
    let trunk = if whole > 0.0 {
        trunk(&root, sa, sb, sign, whole)
    } else {
        None
    };
    ProfileDiff {
        all,
        sample_period_ns: [a.sample_period_ns, b.sample_period_ns],
        operations: [a.operations, b.operations],
        lost_samples: [a.lost_samples, b.lost_samples],
        paths,
        trunk,
        functions,
    }
}

/// The children of `node` the change is followed into: each significant, with at least
/// [`MIN_PATH_SHARE`] of the whole change (in its direction, `sign`), and their change.
fn followed<'n, 'a>(
    node: &'n Node<'a>,
    sa: Scale,
    sb: Scale,
    sign: f64,
    whole: f64,
) -> Vec<(&'a str, &'n Node<'a>, Delta)> {
    node.children
        .iter()
        .map(|(name, k)| (*name, k, delta(sa, k.counts[0], sb, k.counts[1])))
        .filter(|(_, _, d)| d.significant() && d.change_ns_per_op * sign >= MIN_PATH_SHARE * whole)
        .collect()
}

/// Whether the change of `node` (reached by `path`) is followed into `kids`: they hold
/// [`SPLIT_SHARE`] of it; the root, which stands for no frame, always is.
fn splits(path: &[&str], total: &Delta, kids: &[(&str, &Node, Delta)], sign: f64) -> bool {
    let held: f64 = kids.iter().map(|(_, _, d)| d.change_ns_per_op * sign).sum();
    path.is_empty() || held >= SPLIT_SHARE * total.change_ns_per_op * sign
}

/// Follows the change down the merged call tree from `node` (reached by `path`): into its
/// children while a few significant ones, each with at least [`MIN_PATH_SHARE`] of the whole
/// change, hold [`SPLIT_SHARE`] of the node's; otherwise the node is where the change is.
fn split<'a>(
    node: &Node<'a>,
    path: &mut Vec<&'a str>,
    sa: Scale,
    sb: Scale,
    sign: f64,
    whole: f64,
    out: &mut Vec<PathDelta>,
) {
    let total = delta(sa, node.counts[0], sb, node.counts[1]);
    let kids = followed(node, sa, sb, sign, whole);
    if splits(path, &total, &kids, sign) {
        for (name, k, _) in kids {
            path.push(name);
            split(k, path, sa, sb, sign, whole, out);
            path.pop();
        }
        return;
    }
    if total.significant() {
        out.push(path_delta(node, path, total, sa, sb, sign));
    }
}

/// The trunk of the change ([`ProfileDiff::trunk`]): the walk of [`split`] from the root
/// while it follows a single child; the node it then splits two or more ways, if it is a
/// frame (not the root) and its change is significant.
fn trunk(root: &Node, sa: Scale, sb: Scale, sign: f64, whole: f64) -> Option<PathDelta> {
    let (mut node, mut path) = (root, Vec::new());
    loop {
        let total = delta(sa, node.counts[0], sb, node.counts[1]);
        let kids = followed(node, sa, sb, sign, whole);
        if !splits(&path, &total, &kids, sign) {
            // The walk stops here: this node is a listed path, not a trunk above others.
            return None;
        }
        match kids.as_slice() {
            [(name, k, _)] => {
                path.push(*name);
                node = k;
            }
            [_, _, ..] if !path.is_empty() && total.significant() => {
                return Some(path_delta(node, &path, total, sa, sb, sign));
            }
            _ => return None,
        }
    }
}

/// A path's figures: its total change (`total`), its own, and its callees that changed most
/// the way of `sign`.
fn path_delta(
    node: &Node,
    path: &[&str],
    total: Delta,
    sa: Scale,
    sb: Scale,
    sign: f64,
) -> PathDelta {
    let s = node.self_counts();
    let mut callees: Vec<Callee> = node
        .children
        .iter()
        .map(|(name, k)| Callee {
            function: name.to_string(),
            total: delta(sa, k.counts[0], sb, k.counts[1]),
        })
        .filter(|c| c.total.change_ns_per_op * sign > 0.0)
        .collect();
    callees.sort_by(|x, y| {
        (y.total.change_ns_per_op * sign)
            .total_cmp(&(x.total.change_ns_per_op * sign))
            .then_with(|| x.function.cmp(&y.function))
    });
    callees.truncate(MAX_CALLEES);
    PathDelta {
        path: path.iter().map(|f| f.to_string()).collect(),
        total,
        self_: delta(sa, s[0], sb, s[1]),
        callees,
        share_pct: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A profile of `operations` operations sampled every 1000 ns.
    fn profile(stacks: &[(&str, u64)], operations: u64) -> Profile {
        let mut p = crate::profile::tests::profile(stacks);
        p.operations = operations;
        p.sample_period_ns = 1000;
        p
    }

    const ENTRY: &str = "entry_SYSCALL_64_after_hwframe;do_syscall_64";

    fn syscall(extra: &[(&str, u64)], operations: u64) -> Profile {
        let mut stacks = vec![
            (format!("{ENTRY};__x64_sys_getpid;__task_pid_nr_ns"), 4000),
            (ENTRY.to_string(), 3000),
            ("[user] sysperf:syscall".to_string(), 3000),
        ];
        stacks.extend(extra.iter().map(|(s, n)| (s.to_string(), *n)));
        let refs: Vec<(&str, u64)> = stacks.iter().map(|(s, n)| (s.as_str(), *n)).collect();
        profile(&refs, operations)
    }

    /// #43: kernel stacks carry the user function that entered the kernel. A change on
    /// system call entry met from two user call sites is still one path, the kernel's: the
    /// walk leaves the user frames of kernel stacks out.
    #[test]
    fn kernel_time_from_several_user_call_sites_is_one_kernel_path() {
        let user = |site: &str, rest: &str| format!("[user] sysperf:syscall;main:{site};{rest}");
        let base = |site: &str| user(site, &format!("{ENTRY};__x64_sys_getpid"));
        let stacks_a = [(base("f1"), 5000), (base("f2"), 5000)];
        let filter = format!("{ENTRY};syscall_trace_enter;__secure_computing;__seccomp_filter");
        let stacks_b = [
            (base("f1"), 5000),
            (base("f2"), 5000),
            (user("f1", &filter), 1000),
            (user("f2", &filter), 1000),
        ];
        let of = |v: &[(String, u64)]| -> Profile {
            let r: Vec<(&str, u64)> = v.iter().map(|(s, n)| (s.as_str(), *n)).collect();
            profile(&r, 100_000)
        };
        let d = diff(&of(&stacks_a), &of(&stacks_b));
        let top = &d.paths[0];
        assert_eq!(top.function(), "__seccomp_filter", "{:?}", d.paths);
        assert!(!top.path.iter().any(|f| f.starts_with("[user]")), "{top:?}");
        // The Functions table still counts the user frames.
        assert!(d.functions.iter().any(|f| f.function == "main:f1"));
    }

    #[test]
    fn a_planted_subtree_is_where_the_change_is() {
        // Side B spends 2,000 more samples per 100,000 operations below __seccomp_filter.
        let a = syscall(&[], 100_000);
        let filter = format!("{ENTRY};syscall_trace_enter;__secure_computing;__seccomp_filter");
        let b = syscall(
            &[
                (&filter, 1200),
                (&format!("{filter};seccomp_run_filters"), 600),
                (&format!("{filter};seccomp_run_filters;bpf_prog_x_F"), 200),
            ],
            100_000,
        );
        let d = diff(&a, &b);
        // 2,000 samples x 1000 ns / 100,000 operations = 20 ns per operation.
        assert!((d.all.change_ns_per_op - 20.0).abs() < 1e-9);
        assert!(d.all.significant());
        assert_eq!(d.paths.len(), 1, "{:?}", d.paths);
        let p = &d.paths[0];
        assert_eq!(p.function(), "__seccomp_filter");
        assert_eq!(p.path[0], "entry_SYSCALL_64_after_hwframe");
        assert!((p.total.change_ns_per_op - 20.0).abs() < 1e-9);
        assert!((p.self_.change_ns_per_op - 12.0).abs() < 1e-9);
        assert_eq!(p.callees[0].function, "seccomp_run_filters");
        // Self changes add up to the whole change; the largest comes first.
        let sum: f64 = d.functions.iter().map(|f| f.self_.change_ns_per_op).sum();
        assert!((sum - 20.0).abs() < 1e-9);
        assert_eq!(d.functions[0].function, "__seccomp_filter");
        let getpid = d
            .functions
            .iter()
            .find(|f| f.function == "__x64_sys_getpid")
            .unwrap();
        assert!(!getpid.total.significant(), "unchanged: {getpid:?}");
    }

    #[test]
    fn figures_are_per_operation_not_shares() {
        // B ran twice the operations with the same samples: each function's time per
        // operation halved, though every share is the same (the trap of Tables 9 and 10).
        let a = syscall(&[], 100_000);
        let b = syscall(&[], 200_000);
        let d = diff(&a, &b);
        assert!((d.all.change_ns_per_op + 50.0).abs() < 1e-9, "{:?}", d.all);
        let getpid = d
            .functions
            .iter()
            .find(|f| f.function == "__task_pid_nr_ns")
            .unwrap();
        assert!((getpid.self_.a_ns_per_op - 40.0).abs() < 1e-9);
        assert!((getpid.self_.b_ns_per_op - 20.0).abs() < 1e-9);
        assert!(getpid.self_.significant());
        // Faster: the paths are followed the other way, and hold the (negative) change.
        let held: f64 = d.paths.iter().map(|p| p.total.change_ns_per_op).sum();
        assert!(held < 0.0 && held >= d.all.change_ns_per_op - 1e-9);
    }

    #[test]
    fn a_change_spread_over_many_callees_stops_at_their_caller() {
        // Ten callees of do_syscall_64 each gain 300 samples: none holds 5% of the change on
        // its own with significance... each holds 10%, so the split goes into all of them.
        let mut extra = Vec::new();
        let names: Vec<String> = (0..10).map(|i| format!("{ENTRY};f{i}")).collect();
        for n in &names {
            extra.push((n.as_str(), 300));
        }
        let a = syscall(&[], 100_000);
        let b = syscall(&extra, 100_000);
        let d = diff(&a, &b);
        assert!(d.paths.iter().all(|p| p.function().starts_with('f')));
        assert_eq!(d.paths.len(), MAX_PATHS);
        // With 40 callees of 75 samples each (2.5% of the change apiece), it stops above them.
        let names: Vec<String> = (0..40).map(|i| format!("{ENTRY};g{i}")).collect();
        let extra: Vec<(&str, u64)> = names.iter().map(|n| (n.as_str(), 75)).collect();
        let d = diff(&a, &syscall(&extra, 100_000));
        assert_eq!(d.paths.len(), 1);
        assert_eq!(d.paths[0].function(), "do_syscall_64");
    }

    #[test]
    fn equal_profiles_show_no_significant_change() {
        let a = syscall(&[], 100_000);
        let d = diff(&a, &a.clone());
        assert_eq!(d.all.change_ns_per_op, 0.0);
        assert!(!d.all.significant());
        assert!(d.paths.is_empty());
        assert!(d.functions.iter().all(|f| !f.self_.significant()));
        // A function only one side has: an interval from the Wilson bound at 0 samples.
        let b = syscall(&[("x;new_fn", 5)], 100_000);
        let f = diff(&a, &b)
            .functions
            .into_iter()
            .find(|f| f.function == "new_fn")
            .unwrap();
        assert_eq!(f.self_.a_ns_per_op, 0.0);
        assert!(f.self_.change_ci_ns_per_op[1] > f.self_.change_ns_per_op);
    }
}
