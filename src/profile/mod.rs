//! Kernel profiles in the manner of the paper's §2.2 (gprof on the kernel): where the kernel
//! spends one benchmark operation, as a flat profile and a call graph.
//!
//! A profile is one long trial of a benchmark with the worker and its children sampled by
//! perf_event_open (cpu-clock, ~5 kHz, kernel call chains; whole-CPU when permitted, else
//! per-task: see [`sampler`]), kernel addresses named from /proc/kallsyms ([`kallsyms`]),
//! samples outside the worker's timed region and of other processes dropped. What is kept ([`Profile`]) is the folded stacks (root first, `;`-joined, as
//! flame-graph tools read them) with their sample counts; the flat profile and call graph are
//! computed from them ([`Profile::flat`], [`Profile::call_graph`]). Rendering is in
//! `report::profile`; storing in `store`.
//!
//! User space is named by the sampled address's function ([`usersym`]): a user-mode sample is
//! `[user] <process>;<file>:<function>`, and a kernel sample's chain hangs under the user
//! function that entered the kernel (`[user] strace;libc.so.6:wait4;entry_SYSCALL_64...`), or
//! the frame says why there is no name (stripped, JIT, mapping unknown). It is not a full
//! user-space profiler: user call chains are not unwound, only the innermost user function is
//! named.

pub mod calls;
pub mod isolate;
pub mod kallsyms;
pub mod records;
pub mod sampler;
pub mod system;
pub mod usersym;

use crate::harness::{self, placement::Plan, Options, Stop};
pub use crate::model::Profile;
use crate::sys;
use kallsyms::{Kallsyms, KallsymsError};
use records::Sample;
use sampler::Scope;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::AtomicBool;

/// The frame that stands for a whole kernel stack's caller in the call graph (user space).
pub const SPONTANEOUS: &str = "<spontaneous>";

/// The root frame of a kernel sample the kernel recorded no call chain for: its function is
/// known from the sampled address alone, not its callers (see [`no_kernel_chain_note`]).
pub const NO_CHAIN: &str = "[no call chain]";

/// One line of the flat profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlatEntry {
    pub name: String,
    /// Samples with this function at the leaf (running in it).
    pub self_samples: u64,
    /// Samples with this function anywhere on the stack (it or what it called).
    pub total_samples: u64,
    pub self_pct: f64,
    /// Sum of self_pct down to this line, as gprof prints it.
    pub cumulative_pct: f64,
    pub total_pct: f64,
    /// CPU microseconds per operation: samples x sample period / operations.
    pub self_us_per_op: f64,
    pub total_us_per_op: f64,
}

/// A caller or callee of a function in the call graph, with the samples along that arc.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Arc {
    pub name: String,
    pub samples: u64,
    /// Its own entry's index in the call graph, when it has one.
    pub index: Option<usize>,
}

/// One entry of the call graph (gprof's: callers above, the function, callees below).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphEntry {
    /// 1-based, in order of total samples.
    pub index: usize,
    pub name: String,
    pub self_samples: u64,
    pub total_samples: u64,
    pub self_pct: f64,
    pub total_pct: f64,
    pub total_us_per_op: f64,
    pub callers: Vec<Arc>,
    pub callees: Vec<Arc>,
}

impl Profile {
    /// Wall nanoseconds per operation of the profiled trial.
    pub fn ns_per_op(&self) -> f64 {
        if self.operations == 0 {
            0.0
        } else {
            self.wall_ns as f64 / self.operations as f64
        }
    }

    fn us_per_op(&self, samples: u64) -> f64 {
        if self.operations == 0 {
            0.0
        } else {
            samples as f64 * self.sample_period_ns as f64 / self.operations as f64 / 1000.0
        }
    }

    fn pct(&self, samples: u64) -> f64 {
        if self.samples == 0 {
            0.0
        } else {
            100.0 * samples as f64 / self.samples as f64
        }
    }

    /// Self and total samples per function.
    fn tallies(&self) -> BTreeMap<&str, (u64, u64)> {
        let mut t: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
        for (stack, &n) in &self.stacks {
            let frames: Vec<&str> = stack.split(';').collect();
            if let Some(leaf) = frames.last() {
                t.entry(leaf).or_default().0 += n;
            }
            // A recursive function counts once per sample.
            for f in frames.iter().collect::<BTreeSet<_>>() {
                t.entry(f).or_default().1 += n;
            }
        }
        t
    }

    /// The flat profile: every function, by self samples (then total, then name).
    pub fn flat(&self) -> Vec<FlatEntry> {
        let mut rows: Vec<(&str, u64, u64)> = self
            .tallies()
            .into_iter()
            .map(|(name, (s, t))| (name, s, t))
            .collect();
        rows.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.cmp(&a.2)).then(a.0.cmp(b.0)));
        let mut cumulative = 0;
        rows.into_iter()
            .map(|(name, s, t)| {
                cumulative += s;
                FlatEntry {
                    name: name.to_string(),
                    self_samples: s,
                    total_samples: t,
                    self_pct: self.pct(s),
                    cumulative_pct: self.pct(cumulative),
                    total_pct: self.pct(t),
                    self_us_per_op: self.us_per_op(s),
                    total_us_per_op: self.us_per_op(t),
                }
            })
            .collect()
    }

    /// The call graph of the `top` functions by total samples: for each, who called it and
    /// what it called, with the samples along each arc.
    pub fn call_graph(&self, top: usize) -> Vec<GraphEntry> {
        let tallies = self.tallies();
        let mut by_total: Vec<(&str, u64, u64)> =
            tallies.iter().map(|(&n, &(s, t))| (n, s, t)).collect();
        by_total.sort_by(|a, b| b.2.cmp(&a.2).then(b.1.cmp(&a.1)).then(a.0.cmp(b.0)));
        by_total.truncate(top);
        let index: HashMap<&str, usize> = by_total
            .iter()
            .enumerate()
            .map(|(i, (n, _, _))| (*n, i + 1))
            .collect();
        let mut callers: HashMap<&str, BTreeMap<&str, u64>> = HashMap::new();
        let mut callees: HashMap<&str, BTreeMap<&str, u64>> = HashMap::new();
        for (stack, &n) in &self.stacks {
            let frames: Vec<&str> = stack.split(';').collect();
            let mut seen: BTreeSet<(&str, &str)> = BTreeSet::new();
            for (i, &f) in frames.iter().enumerate() {
                let caller = if i == 0 { SPONTANEOUS } else { frames[i - 1] };
                // An arc counts once per sample, however often recursion repeats it.
                if seen.insert((caller, f)) {
                    if index.contains_key(f) {
                        *callers.entry(f).or_default().entry(caller).or_default() += n;
                    }
                    if i > 0 && index.contains_key(caller) {
                        *callees.entry(caller).or_default().entry(f).or_default() += n;
                    }
                }
            }
        }
        let arcs = |m: Option<&BTreeMap<&str, u64>>| -> Vec<Arc> {
            let mut v: Vec<Arc> = m
                .into_iter()
                .flatten()
                .map(|(&name, &samples)| Arc {
                    name: name.to_string(),
                    samples,
                    index: index.get(name).copied(),
                })
                .collect();
            v.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.name.cmp(&b.name)));
            v
        };
        by_total
            .iter()
            .enumerate()
            .map(|(i, &(name, s, t))| GraphEntry {
                index: i + 1,
                name: name.to_string(),
                self_samples: s,
                total_samples: t,
                self_pct: self.pct(s),
                total_pct: self.pct(t),
                total_us_per_op: self.us_per_op(t),
                callers: arcs(callers.get(name)),
                callees: arcs(callees.get(name)),
            })
            .collect()
    }
}

/// Why a profile could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// perf_event_open refused: the message names the setting and the fix.
    #[error("cannot profile the kernel: {0}")]
    NotPermitted(String),
    #[error("cannot profile the kernel: {0}")]
    Symbols(#[from] KallsymsError),
    #[error("profiling {bench} failed: {why}")]
    Failed { bench: String, why: String },
    #[error("{bench} could not be run to calibrate the profile: {why}")]
    Calibration { bench: String, why: String },
    #[error("interrupted")]
    Interrupted,
    /// A system profile was taken but could not be stored.
    #[error("storing the system profile")]
    Store(#[source] crate::store::StoreError),
}

impl crate::error::Exit for ProfileError {
    fn exit_code(&self) -> i32 {
        match self {
            ProfileError::Store(e) => e.exit_code(),
            ProfileError::NotPermitted(_)
            | ProfileError::Symbols(_)
            | ProfileError::Failed { .. }
            | ProfileError::Calibration { .. }
            | ProfileError::Interrupted => crate::exit::FAILURE,
        }
    }
}

/// What this process may do: sample whole CPUs or only its own tasks, and the kernel's
/// symbols to name the samples with.
pub struct Access {
    pub scope: Scope,
    pub syms: Kallsyms,
}

/// Checks, before any benchmark runs, that this process may sample the kernel and name its
/// functions. Whole-CPU sampling is preferred (it catches short-lived children); per-task
/// sampling is the fallback.
pub fn check_access() -> Result<Access, ProfileError> {
    let cpu = sys::get_affinity()
        .ok()
        .and_then(|c| c.first().copied())
        .unwrap_or(0) as i32;
    let probe = |scope: Scope, pid: sys::Pid, cpu: i32| {
        let mut a = sampler::attr(scope);
        a.flags |= sys::perf::FLAG_DISABLED;
        a.flags &= !sys::perf::FLAG_INHERIT;
        // Opened and closed at once: the same permission check as the real events.
        sys::perf_event_open(&a, pid, cpu).map(drop)
    };
    let scope = match probe(Scope::Cpus, -1, cpu) {
        Ok(()) => Scope::Cpus,
        Err(_) => match probe(Scope::Task, 0, -1) {
            Ok(()) => Scope::Task,
            Err(e) => {
                return Err(ProfileError::NotPermitted(
                    harness::counters::perf_open_error(&e),
                ))
            }
        },
    };
    Ok(Access {
        scope,
        syms: Kallsyms::load()?,
    })
}

/// The processes descended from `root` (itself included), from (pid, parent, time) fork
/// records in any order.
pub fn process_tree(root: u32, forks: &[(u32, u32, u64)]) -> HashSet<u32> {
    let mut by_time = forks.to_vec();
    by_time.sort_by_key(|f| f.2);
    let mut tree = HashSet::from([root]);
    // In time order a child is always created after its parent; one pass suffices unless
    // clocks of different CPUs disagree, so repeat until nothing changes.
    loop {
        let before = tree.len();
        for &(pid, ppid, _) in &by_time {
            if tree.contains(&ppid) {
                tree.insert(pid);
            }
        }
        if tree.len() == before {
            return tree;
        }
    }
}

/// The iteration count that makes a trial last about `seconds`, from a calibrated trial of
/// `iterations` that took `wall_ns`.
pub fn iterations_for(seconds: f64, iterations: u64, wall_ns: u64) -> u64 {
    let scale = seconds * 1e9 / wall_ns.max(1) as f64;
    ((iterations as f64 * scale).round() as u64).clamp(1, 1 << 40)
}

/// Runs one trial of `target` (a core benchmark or a suite's point) at `iterations`, sampled,
/// and folds its samples into a profile named after the target's id.
pub fn profile_benchmark(
    target: &harness::Target,
    plan: &Plan,
    opts: &Options,
    iterations: u64,
    access: &Access,
    stop: &AtomicBool,
) -> Result<Profile, ProfileError> {
    let cpus = match access.scope {
        // Everything the benchmark's processes may run on: plan.cpus covers pinned and free.
        Scope::Cpus => plan.cpus.clone(),
        Scope::Task => sys::get_affinity().map_err(|e| ProfileError::Failed {
            bench: target.id.clone(),
            why: format!("reading the CPUs to sample: {e}"),
        })?,
    };
    let mut s = sampler::Sampler::new(access.scope, cpus);
    let rep = match harness::observed_trial(target, plan, opts, iterations, &mut s, stop) {
        Err(Stop::Interrupted) => return Err(ProfileError::Interrupted),
        Ok(Err(why)) => {
            return Err(ProfileError::Failed {
                bench: target.id.clone(),
                why,
            })
        }
        Ok(Ok(rep)) => rep,
    };
    let region = rep.region_ns.unwrap_or([0, u64::MAX]);
    // As the kernel's comm records have it, so that one process is one frame.
    // The worker names itself after what it was asked to run (a series id for a point).
    let worker_comm = kernel_comm(&format!("sysperf:{}", target.request_id));
    let comm_of = |pid: u32| s.comms.get(&pid).cloned().unwrap_or(worker_comm.clone());
    let tree = process_tree(s.root.unwrap_or(0), &s.forks);
    let ours = |pid: u32| s.scope() == Scope::Task || tree.contains(&pid);
    let mut names = s.symbolizer();
    let mut user = |pid, time, ip| names.frame(pid, time, ip);
    let folded = fold(&s.samples, region, &access.syms, &comm_of, &ours, &mut user);
    if let Some(note) = no_kernel_chain_note(&target.id, &folded, s.limits) {
        crate::notice::tell(&note);
    }
    Ok(Profile {
        bench: target.id.clone(),
        unit: target.unit.clone(),
        placement: plan.label.into(),
        cpus: plan.cpus.clone(),
        iterations,
        operations: iterations * target.ops_per_iteration,
        wall_ns: region[1].saturating_sub(region[0]),
        sample_period_ns: sampler::PERIOD_NS,
        scope: access.scope.describe().into(),
        samples: folded.inside,
        samples_outside_region: folded.outside,
        samples_other: folded.other,
        lost_samples: s.lost,
        throttled: s.throttled,
        stacks: folded.stacks,
    })
}

/// Samples folded into stacks, and the ones left out.
#[derive(Debug, Default)]
pub struct Folded {
    pub stacks: BTreeMap<String, u64>,
    pub inside: u64,
    /// Samples of our processes outside the region.
    pub outside: u64,
    /// Samples of other processes inside the region.
    pub other: u64,
    /// Of `inside`, those taken in the kernel, and of those, the ones without a call chain.
    pub kernel: u64,
    pub chainless: u64,
    /// The most kernel frames a sample had.
    pub longest_chain: usize,
}

/// What to tell the user when a profile's kernel samples lack their call chains, or when
/// none was taken in the kernel: the cause where it can be read (a call chain limit another
/// process set to 0 before sampling began, or lowered), else what was seen. None when the
/// kernel's samples came with their call chains.
pub fn no_kernel_chain_note(
    bench: &str,
    f: &Folded,
    limits: sampler::ChainLimits,
) -> Option<String> {
    if f.inside > 0 && f.kernel == 0 {
        return Some(format!(
            "profile of {bench}: none of its {} samples was taken in the kernel (all in user mode), so it has no kernel frame",
            f.inside
        ));
    }
    if f.chainless > 0 {
        let cause = match (limits.max_stack, limits.max_contexts) {
            (Some(0), _) => "because kernel.perf_event_max_stack is 0 (set by a root process before sampling began; the kernel keeps it while anything samples call chains); to record them: sysctl -w kernel.perf_event_max_stack=127".to_string(),
            (_, Some(0)) => "because kernel.perf_event_max_contexts_per_stack is 0 (set by a root process before sampling began; the kernel keeps it while anything samples call chains); to record them: sysctl -w kernel.perf_event_max_contexts_per_stack=8".to_string(),
            _ => "though the call chain limits allow them: the kernel's per-CPU call chain buffer was taken when they were sampled (by another perf or BPF user recording call chains on that CPU)".to_string(),
        };
        return Some(format!(
            "profile of {bench}: the kernel recorded no call chain for {} of its {} kernel samples, {cause}; each is named by its sampled function alone, under {NO_CHAIN}",
            f.chainless, f.kernel
        ));
    }
    match limits.max_stack {
        Some(k) if k < 127 && f.longest_chain + 1 >= k as usize => Some(format!(
            "profile of {bench}: kernel call chains were cut at {k} entries, as kernel.perf_event_max_stack is {k} (the kernel's default is 127), so their outer callers are missing"
        )),
        _ => None,
    }
}

/// A process name as the kernel keeps it (TASK_COMM_LEN: 15 bytes and the NUL):
/// "sysperf:pipeback4" is "sysperf:pipebac" in every comm record and /proc.
pub fn kernel_comm(name: &str) -> String {
    let mut end = name.len().min(15);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_string()
}

/// Folds the samples of processes `ours` accepts taken within `region` (CLOCK_MONOTONIC ns,
/// inclusive) into stacks, root first. A sample's user part is two frames, `[user] <comm>`
/// and its user address's frame from `user_frame(pid, time, address)` (a function, or why
/// it has none): all of a user-mode sample, and the caller of a kernel sample's call chain
/// when the kernel recorded where user space entered it. A kernel sample without it is its
/// call chain alone, as before user frames were named.
pub fn fold(
    samples: &[Sample],
    region: [u64; 2],
    syms: &Kallsyms,
    comm_of: &dyn Fn(u32) -> String,
    ours: &dyn Fn(u32) -> bool,
    user_frame: &mut dyn FnMut(u32, u64, u64) -> String,
) -> Folded {
    let mut f = Folded::default();
    for s in samples {
        let within = region[0] <= s.time_ns && s.time_ns <= region[1];
        match (ours(s.pid), within) {
            (true, true) => f.inside += 1,
            (true, false) => {
                f.outside += 1;
                continue;
            }
            (false, true) => {
                f.other += 1;
                continue;
            }
            (false, false) => continue,
        }
        let user = |ip: u64, user_frame: &mut dyn FnMut(u32, u64, u64) -> String| {
            format!(
                "[user] {};{}",
                comm_of(s.pid),
                user_frame(s.pid, s.time_ns, ip)
            )
        };
        let key = match kernel_frames(s, syms) {
            None => user(s.ip, user_frame),
            Some(names) => {
                f.kernel += 1;
                f.chainless += u64::from(s.kernel_chain.is_empty());
                f.longest_chain = f.longest_chain.max(s.kernel_chain.len());
                let kernel = names.into_iter().rev().collect::<Vec<_>>().join(";");
                match s.user_ip {
                    Some(ip) => format!("{};{kernel}", user(ip, user_frame)),
                    None => kernel,
                }
            }
        };
        *f.stacks.entry(key).or_default() += 1;
    }
    f
}

/// The functions of a kernel-mode sample, leaf first; None for a user-mode one. A kernel
/// sample without a call chain (the kernel records none when kernel.perf_event_max_stack or
/// kernel.perf_event_max_contexts_per_stack is 0, or its call chain buffer is taken) is its
/// sampled address's function under [`NO_CHAIN`]: it was once folded as user time, so a
/// profile of a system call benchmark held only `[user] sysperf:syscall` (#46).
pub fn kernel_frames<'a>(s: &Sample, syms: &'a Kallsyms) -> Option<Vec<&'a str>> {
    if s.user {
        None
    } else if s.kernel_chain.is_empty() {
        Some(vec![
            syms.lookup(s.ip).unwrap_or("[unknown kernel]"),
            NO_CHAIN,
        ])
    } else {
        Some(frame_names(&s.kernel_chain, syms))
    }
}

/// The functions of a kernel call chain, leaf first. A return address points after its
/// call, which may be the first byte of the next function, hence the -1 above the leaf.
pub fn frame_names<'a>(chain: &[u64], syms: &'a Kallsyms) -> Vec<&'a str> {
    chain
        .iter()
        .enumerate()
        .map(|(i, &a)| {
            let a = if i == 0 { a } else { a.saturating_sub(1) };
            syms.lookup(a).unwrap_or("[unknown kernel]")
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::records::{self, synth, Record};
    use super::*;

    #[test]
    fn a_process_name_is_cut_as_the_kernel_cuts_it() {
        // One process, one frame: the name sysperf gives a worker and the kernel's comm
        // record of it must be the same string.
        assert_eq!(kernel_comm("sysperf:pipeback4"), "sysperf:pipebac");
        assert_eq!(kernel_comm("sysperf:syscall"), "sysperf:syscall");
        assert_eq!(kernel_comm("nulljob"), "nulljob");
        assert_eq!(kernel_comm("ééééééééé"), "ééééééé");
    }

    const SYMS: &str = "\
ffffffff81001000 T entry_SYSCALL_64_after_hwframe
ffffffff81002000 T do_syscall_64
ffffffff81003000 T x64_sys_call
ffffffff81004000 T __x64_sys_getpid
ffffffff81005000 T __task_pid_nr_ns
";

    /// A profile of syscall with these folded stacks (shared with other modules' tests).
    pub(crate) fn profile(stacks: &[(&str, u64)]) -> Profile {
        Profile {
            bench: "syscall".into(),
            unit: "call".into(),
            placement: "single".into(),
            cpus: vec![1],
            iterations: 1000,
            operations: 1000,
            wall_ns: 2_000_000,
            sample_period_ns: 200_000,
            scope: "test".into(),
            samples: stacks.iter().map(|s| s.1).sum(),
            samples_outside_region: 0,
            samples_other: 0,
            lost_samples: 0,
            throttled: 0,
            stacks: stacks.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        }
    }

    /// A user frame named after its address, as a symbolizer would name a function.
    fn names(_pid: u32, _time: u64, ip: u64) -> String {
        format!("main:f{ip:#x}")
    }

    /// The samples among the records of `bytes`.
    fn samples_of(bytes: &[u8]) -> Vec<Sample> {
        records::parse(bytes)
            .into_iter()
            .filter_map(|r| match r {
                Record::Sample(s) => Some(s),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn samples_fold_into_named_stacks_inside_the_region() {
        let syms = Kallsyms::parse(SYMS).unwrap();
        let mut bytes = Vec::new();
        // getpid <- x64_sys_call <- do_syscall_64 <- entry (return addresses point past calls).
        let chain = [
            0xffffffff81005010,
            0xffffffff81004020,
            0xffffffff81003030,
            0xffffffff81002040,
            0xffffffff81001050,
        ];
        bytes.extend(synth::sample(7, 100, false, chain[0], &chain));
        bytes.extend(synth::sample(7, 150, false, chain[1], &chain[1..]));
        bytes.extend(synth::sample(7, 160, true, 0x5555_0000_1234, &[]));
        bytes.extend(synth::sample(8, 170, true, 0x5555_0000_1234, &[]));
        bytes.extend(synth::sample(7, 999, false, chain[0], &chain)); // after the region
                                                                      // A return address at the very start of the next function belongs to the caller.
        bytes.extend(synth::sample(
            7,
            120,
            false,
            0xffffffff81004010,
            &[0xffffffff81004010, 0xffffffff81004000],
        ));
        let samples = samples_of(&bytes);
        let comm = |pid: u32| {
            if pid == 8 {
                "nulljob".to_string()
            } else {
                "sysperf:syscall".to_string()
            }
        };
        let all = |_pid: u32| true;
        let f = fold(&samples, [100, 500], &syms, &comm, &all, &mut names);
        assert_eq!((f.inside, f.outside, f.other), (5, 1, 0));
        let stacks = f.stacks;
        assert_eq!(stacks["entry_SYSCALL_64_after_hwframe;do_syscall_64;x64_sys_call;__x64_sys_getpid;__task_pid_nr_ns"], 1);
        assert_eq!(
            stacks["entry_SYSCALL_64_after_hwframe;do_syscall_64;x64_sys_call;__x64_sys_getpid"],
            1
        );
        assert_eq!(stacks["x64_sys_call;__x64_sys_getpid"], 1);
        assert_eq!(stacks["[user] sysperf:syscall;main:f0x555500001234"], 1);
        assert_eq!(stacks["[user] nulljob;main:f0x555500001234"], 1);
        // Other processes' samples are counted inside the region only, never folded.
        let only7 = |pid: u32| pid == 7;
        let f = fold(&samples, [100, 500], &syms, &comm, &only7, &mut names);
        assert_eq!((f.inside, f.outside, f.other), (4, 1, 1));
        assert!(!f.stacks.contains_key("[user] nulljob;main:f0x555500001234"));
    }

    /// A kernel sample with its user call chain is called from the user function it entered
    /// the kernel from (#43): explain's "from" can name it.
    #[test]
    fn kernel_time_hangs_under_the_user_function_that_entered_the_kernel() {
        let syms = Kallsyms::parse(SYMS).unwrap();
        let chain = [0xffffffff81004010, 0xffffffff81002040, 0xffffffff81001050];
        let bytes = synth::sample_with_user_chain(
            7,
            100,
            false,
            chain[0],
            &chain,
            &[0x7f00_0010, 0x55_0000],
        );
        let samples = samples_of(&bytes);
        let comm = |_pid: u32| "strace".to_string();
        let mut seen = Vec::new();
        let mut user = |pid, time, ip| {
            seen.push((pid, time, ip));
            "libc.so.6:wait4".to_string()
        };
        let f = fold(&samples, [0, 500], &syms, &comm, &|_| true, &mut user);
        assert_eq!(
            f.stacks["[user] strace;libc.so.6:wait4;entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_getpid"],
            1
        );
        // The address asked about is the user chain's first entry, at the sample's time.
        assert_eq!(seen, vec![(7, 100, 0x7f00_0010)]);
        assert_eq!((f.kernel, f.chainless), (1, 0));
        let p = profile(&[(f.stacks.keys().next().unwrap().as_str(), 1)]);
        let g = p.call_graph(10);
        let entry = g
            .iter()
            .find(|e| e.name == "entry_SYSCALL_64_after_hwframe")
            .unwrap();
        assert_eq!(entry.callers[0].name, "libc.so.6:wait4");
    }

    /// A kernel sample the kernel gave no call chain is kernel time named by its address,
    /// not user time (#46: a profile held only `[user] sysperf:syscall` once), and the note
    /// names the limit that caused it when one is 0.
    #[test]
    fn kernel_samples_without_a_call_chain_stay_kernel_and_are_explained() {
        let syms = Kallsyms::parse(SYMS).unwrap();
        let mut bytes = Vec::new();
        // In __x64_sys_getpid, no chain (what perf_event_max_stack=0 gives); one user sample.
        bytes.extend(synth::sample(7, 100, false, 0xffffffff81004010, &[]));
        bytes.extend(synth::sample(7, 110, false, 0xffffffff81004010, &[]));
        bytes.extend(synth::sample(7, 120, true, 0x5555_0000_1234, &[]));
        let samples = samples_of(&bytes);
        let comm = |_pid: u32| "sysperf:syscall".to_string();
        let f = fold(&samples, [0, 500], &syms, &comm, &|_| true, &mut names);
        assert_eq!(f.stacks[&format!("{NO_CHAIN};__x64_sys_getpid")], 2);
        assert_eq!(f.stacks["[user] sysperf:syscall;main:f0x555500001234"], 1);
        assert_eq!((f.inside, f.kernel, f.chainless), (3, 2, 2));
        let limits = |max_stack, max_contexts| sampler::ChainLimits {
            max_stack: Some(max_stack),
            max_contexts: Some(max_contexts),
        };
        let note = no_kernel_chain_note("syscall", &f, limits(0, 8)).unwrap();
        assert!(
            note.contains("no call chain for 2 of its 2 kernel samples")
                && note.contains("kernel.perf_event_max_stack is 0")
                && note.contains("sysctl -w kernel.perf_event_max_stack=127"),
            "{note}"
        );
        let note = no_kernel_chain_note("syscall", &f, limits(127, 0)).unwrap();
        assert!(
            note.contains("perf_event_max_contexts_per_stack is 0"),
            "{note}"
        );
        let note = no_kernel_chain_note("syscall", &f, limits(127, 8)).unwrap();
        assert!(note.contains("call chain buffer was taken"), "{note}");
        // All in user mode: said, without a cause it cannot see.
        let user_only = fold(&samples[2..], [0, 500], &syms, &comm, &|_| true, &mut names);
        let note = no_kernel_chain_note("syscall", &user_only, limits(127, 8)).unwrap();
        assert!(
            note.contains("none of its 1 samples was taken in the kernel"),
            "{note}"
        );
        // Chains cut by a lowered limit; and a normal profile needs no note.
        let mut chained = Vec::new();
        let chain = [0xffffffff81004010, 0xffffffff81003030, 0xffffffff81002040];
        chained.extend(synth::sample(7, 100, false, chain[0], &chain));
        let chained = samples_of(&chained);
        let f = fold(&chained, [0, 500], &syms, &comm, &|_| true, &mut names);
        assert!(no_kernel_chain_note("syscall", &f, limits(127, 8)).is_none());
        let note = no_kernel_chain_note("syscall", &f, limits(4, 8)).unwrap();
        assert!(note.contains("cut at 4 entries"), "{note}");
    }

    #[test]
    fn process_tree_follows_forks_in_any_order() {
        // 10 forks 11, 11 forks 12 (recorded on another CPU, out of order), 20 is unrelated.
        let forks = [(12, 11, 300), (11, 10, 200), (21, 20, 250), (13, 10, 400)];
        let t = process_tree(10, &forks);
        let mut v: Vec<u32> = t.into_iter().collect();
        v.sort();
        assert_eq!(v, vec![10, 11, 12, 13]);
        // Skewed clocks: the grandchild's record appears earlier than its parent's.
        let skew = [(12, 11, 100), (11, 10, 200)];
        assert_eq!(process_tree(10, &skew).len(), 3);
    }

    #[test]
    fn flat_profile_counts_self_and_children() {
        let p = profile(&[
            ("entry;do_syscall_64;x64_sys_call;__x64_sys_getpid", 6),
            ("entry;do_syscall_64", 2),
            ("entry;do_syscall_64;rec;rec;rec", 1),
            ("[user] sysperf:syscall", 1),
        ]);
        let flat = p.flat();
        assert_eq!(flat[0].name, "__x64_sys_getpid");
        assert_eq!((flat[0].self_samples, flat[0].total_samples), (6, 6));
        assert!((flat[0].self_pct - 60.0).abs() < 1e-9);
        // 6 samples x 200 us / 1000 operations = 1.2 us per operation.
        assert!((flat[0].self_us_per_op - 1.2).abs() < 1e-9);
        let entry = flat.iter().find(|f| f.name == "entry").unwrap();
        assert_eq!((entry.self_samples, entry.total_samples), (0, 9));
        let rec = flat.iter().find(|f| f.name == "rec").unwrap();
        assert_eq!(rec.total_samples, 1, "recursion counts once");
        assert!((flat.last().unwrap().cumulative_pct - 100.0).abs() < 1e-9);
        let total_self: u64 = flat.iter().map(|f| f.self_samples).sum();
        assert_eq!(total_self, p.samples);
    }

    #[test]
    fn call_graph_has_callers_and_callees_with_arc_counts() {
        let p = profile(&[
            ("entry;do_syscall_64;x64_sys_call;__x64_sys_getpid", 6),
            ("entry;do_syscall_64;syscall_exit", 3),
            ("irq;do_syscall_64", 1),
            ("entry;do_syscall_64;rec;rec", 2),
        ]);
        let g = p.call_graph(4);
        assert_eq!(g.len(), 4);
        assert_eq!(g[0].name, "do_syscall_64");
        assert_eq!(g[0].total_samples, 12);
        assert_eq!(g[0].self_samples, 1);
        let callers: Vec<(&str, u64)> = g[0]
            .callers
            .iter()
            .map(|a| (a.name.as_str(), a.samples))
            .collect();
        assert_eq!(callers, vec![("entry", 11), ("irq", 1)]);
        let callees: Vec<(&str, u64)> = g[0]
            .callees
            .iter()
            .map(|a| (a.name.as_str(), a.samples))
            .collect();
        assert_eq!(
            callees,
            vec![("x64_sys_call", 6), ("syscall_exit", 3), ("rec", 2)]
        );
        let entry = g.iter().find(|e| e.name == "entry").unwrap();
        assert_eq!(entry.callers[0].name, SPONTANEOUS);
        assert_eq!(entry.callees[0].index, Some(g[0].index));
        let rec = p
            .call_graph(100)
            .into_iter()
            .find(|e| e.name == "rec")
            .unwrap();
        // rec calls itself once per sample: one arc of 2 samples, listed both ways.
        assert!(rec
            .callers
            .iter()
            .any(|a| a.name == "rec" && a.samples == 2));
        assert!(rec
            .callees
            .iter()
            .any(|a| a.name == "rec" && a.samples == 2));
    }

    #[test]
    fn empty_profiles_do_not_divide_by_zero() {
        let mut p = profile(&[]);
        p.operations = 0;
        assert!(p.flat().is_empty() && p.call_graph(10).is_empty());
        assert_eq!(p.ns_per_op(), 0.0);
    }

    #[test]
    fn iterations_scale_to_the_requested_seconds() {
        assert_eq!(iterations_for(1.0, 1000, 100_000_000), 10_000);
        assert_eq!(iterations_for(1.0, 1, u64::MAX), 1);
        assert_eq!(iterations_for(5.0, 1000, 0), 1 << 40);
    }
}
