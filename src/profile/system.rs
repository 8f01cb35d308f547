//! `sysperf profile --system DURATION`: a kernel profile of the whole machine, as the papers'
//! §2.2 and §3.1 made one over hours of real load, rather than of one benchmark.
//!
//! One cpu-clock sampling event per online CPU for every process (pid -1), idle included,
//! kernel call chains, at about 900 Hz per CPU ([`PERIOD_NS`]). The samples are folded as they
//! arrive, so memory does not grow with the duration: at most `stack_cap` distinct stacks are
//! kept (later new ones are counted under `[other]`), at most [`PROCESS_CAP`] processes
//! (later ones under `[other]`). What is kept is the same folded-stack shape as a benchmark's
//! [`Profile`] (root first, `;`-joined; user-mode samples as `[user] <comm>`), so the flat
//! profile, call graph and flame graphs are computed the same way, plus tallies taken per
//! sample: by subsystem ([`classify`]), by process (comm and pid of the sample) and by system
//! call ([`syscall_of`]).
//!
//! Subsystem rules ([`classify`]): the frames of a kernel sample are read from the leaf
//! towards the root and the first frame that names a subsystem decides, so the innermost
//! activity wins (a page fault taken inside read(2) is a page fault; a wait inside it is the
//! scheduler; pipe_read itself is the system call):
//! - `block`: `blk_*`, `submit_bio*`, `__submit_bio*`, `bio_*`, `scsi_*`, `nvme_*`, `virtblk_*`;
//! - `softirq/net`: `net_rx_action`, `net_tx_action`, `__napi_poll`, `napi_*`;
//! - `softirq`: other softirq work (`handle_softirqs`, `__do_softirq`, `run_ksoftirqd`, ...);
//! - `interrupt`: hard interrupts (`sysvec_*`, `common_interrupt`, `handle_irq*`, ...);
//! - `page fault`: `exc_page_fault`, `do_user_addr_fault`, `handle_mm_fault`, `do_mem_abort`, ...;
//! - `scheduler`: `__schedule`, `schedule*`, `finish_task_switch*`, `pick_next_task*`, `try_to_wake_up`, ...;
//! - `syscall`: the system-call entry and dispatch (`__x64_sys_*`, `__arm64_sys_*`, `do_syscall_64`, `el0_svc*`, ...);
//! - `idle`: the idle loop (`do_idle`, `cpuidle_enter*`, `default_idle*`, `cpu_startup_entry`, ...);
//! - `other kernel`: none of these (kernel threads' own work, ...).
//!
//! User-mode samples are `user` and are not kernel time; `idle` is kernel time spent idle,
//! reported but left out of the kernel's flat profile and shares.

use super::kallsyms::Kallsyms;
use super::records::{self, Record, Sample};
use super::{Profile, ProfileError};
pub use crate::model::{FunctionCalls, ProcessRow, SystemProfile};
use crate::sys::{self, perf, PerfEventAttr, PerfRing};
use std::collections::{BTreeMap, HashMap};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Sampling period of a system profile: about 909 Hz per CPU. Lower than a benchmark
/// profile's 5 kHz because it samples every CPU for hours; 1.1 ms is not a multiple of any
/// tick period (1, 4 or 10 ms), so samples walk through the tick's phase.
pub const PERIOD_NS: u64 = 1_100_009;

/// Distinct folded stacks kept by default; new stacks past it are counted under `[other]`.
pub const DEFAULT_STACK_CAP: usize = 20_000;

/// Processes (comm, pid) kept; samples of new ones past it are counted under `[other]`.
pub const PROCESS_CAP: usize = 5_000;

/// The key under which the samples of stacks past the cap are counted.
pub const OTHER: &str = "[other]";

/// Data pages per CPU buffer (256 KiB): at 909 Hz and ~50 frames a sample, several seconds.
const DATA_PAGES: usize = 64;

/// How often the buffers are drained.
const POLL: Duration = Duration::from_millis(100);

/// Names of processes by pid kept at once; the cache is emptied when full.
const COMM_CACHE: usize = 32_768;

/// The subsystem of a kernel sample's frames, given leaf first (see the module's rules).
pub fn classify<'a>(leaf_first: impl IntoIterator<Item = &'a str>) -> &'static str {
    for f in leaf_first {
        if let Some(s) = subsystem_of_frame(f) {
            return s;
        }
    }
    "other kernel"
}

fn subsystem_of_frame(f: &str) -> Option<&'static str> {
    let any = |prefixes: &[&str]| prefixes.iter().any(|p| f.starts_with(p));
    if any(&[
        "blk_",
        "submit_bio",
        "__submit_bio",
        "bio_",
        "scsi_",
        "nvme_",
        "virtblk_",
    ]) {
        Some("block")
    } else if any(&["net_rx_action", "net_tx_action", "__napi_poll", "napi_"]) {
        Some("softirq/net")
    } else if any(&[
        "handle_softirqs",
        "__do_softirq",
        "do_softirq",
        "run_ksoftirqd",
        "__irq_exit_rcu",
        "irq_exit_rcu",
    ]) {
        Some("softirq")
    } else if any(&[
        "sysvec_",
        "asm_sysvec_",
        "__sysvec_",
        "common_interrupt",
        "asm_common_interrupt",
        "handle_irq",
        "handle_edge_irq",
        "handle_fasteoi_irq",
        "gic_handle_irq",
        "el1_interrupt",
        "el0_interrupt",
    ]) {
        Some("interrupt")
    } else if any(&[
        "exc_page_fault",
        "asm_exc_page_fault",
        "do_user_addr_fault",
        "handle_mm_fault",
        "do_page_fault",
        "do_mem_abort",
        "do_translation_fault",
    ]) {
        Some("page fault")
    } else if any(&[
        "__schedule",
        "schedule",
        "finish_task_switch",
        "pick_next_task",
        "try_to_wake_up",
        "__switch_to",
        "context_switch",
    ]) {
        Some("scheduler")
    } else if syscall_name(f).is_some()
        || any(&[
            "do_syscall_64",
            "x64_sys_call",
            "entry_SYSCALL",
            "el0_svc",
            "invoke_syscall",
            "do_el0_svc",
        ])
    {
        Some("syscall")
    } else if any(&[
        "do_idle",
        "cpu_startup_entry",
        "cpuidle_",
        "default_idle",
        "cpu_idle_poll",
        "arch_cpu_idle",
        "intel_idle",
        "acpi_idle",
        "poll_idle",
        "mwait_idle",
        "pv_native_safe_halt",
        "native_safe_halt",
    ]) {
        Some("idle")
    } else {
        None
    }
}

/// The system call a frame is the handler of: `__x64_sys_read` -> `read`; where the handler
/// is inlined into the dispatcher (x64_sys_call), the `ksys_read` or `__do_sys_read` it calls.
fn syscall_name(f: &str) -> Option<&str> {
    [
        "__x64_sys_",
        "__arm64_sys_",
        "__ia32_sys_",
        "__x64_compat_sys_",
        "__do_sys_",
        "__se_sys_",
        "ksys_",
    ]
    .iter()
    .find_map(|p| f.strip_prefix(p))
}

/// The system call of a kernel sample's frames given root first: the outermost handler frame.
pub fn syscall_of<'a>(root_first: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    root_first.into_iter().find_map(syscall_name)
}

/// Folds samples as they come, in bounded memory.
pub struct Aggregator {
    stack_cap: usize,
    stacks: HashMap<String, u64>,
    samples_in_other: u64,
    processes: HashMap<(u32, String), (u64, u64)>,
    subsystems: BTreeMap<&'static str, u64>,
    syscalls: HashMap<String, u64>,
    comms: HashMap<u32, String>,
    pub samples: u64,
    pub kernel_samples: u64,
    pub user_samples: u64,
    pub idle_samples: u64,
    pub lost: u64,
    pub throttled: u64,
    key: String,
}

impl Aggregator {
    pub fn new(stack_cap: usize) -> Aggregator {
        Aggregator {
            stack_cap: stack_cap.max(1),
            stacks: HashMap::new(),
            samples_in_other: 0,
            processes: HashMap::new(),
            subsystems: BTreeMap::new(),
            syscalls: HashMap::new(),
            comms: HashMap::new(),
            samples: 0,
            kernel_samples: 0,
            user_samples: 0,
            idle_samples: 0,
            lost: 0,
            throttled: 0,
            key: String::new(),
        }
    }

    /// The name of process `pid`: from comm and fork records, else /proc, else `[pid N]`.
    fn comm(&mut self, pid: u32) -> String {
        if pid == 0 {
            return "swapper".into();
        }
        if let Some(c) = self.comms.get(&pid) {
            return c.clone();
        }
        // Any user's choice of name: kept on one line, controls escaped (#29 item 8).
        let c = std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .map(|s| crate::term::line(s.trim_end_matches('\n')).into_owned())
            .unwrap_or_else(|_| format!("[pid {pid}]"));
        self.remember(pid, c.clone());
        c
    }

    fn remember(&mut self, pid: u32, comm: String) {
        if self.comms.len() >= COMM_CACHE {
            self.comms.clear();
        }
        self.comms.insert(pid, comm);
    }

    /// Takes one record of a ring buffer.
    pub fn record(&mut self, r: Record, syms: &Kallsyms) {
        match r {
            Record::Sample(s) => self.sample(&s, syms),
            Record::Lost(n) => self.lost += n,
            Record::Throttle => self.throttled += 1,
            Record::Comm { pid, comm, .. } => {
                self.remember(pid, crate::term::line(&comm).into_owned())
            }
            Record::Fork { pid, ppid, .. } => {
                if pid != ppid {
                    if let Some(c) = self.comms.get(&ppid).cloned() {
                        self.remember(pid, c);
                    }
                }
            }
            // Not asked for: a system profile names user time by process alone.
            Record::Mmap(_) => {}
        }
    }

    /// Folds one sample.
    pub fn sample(&mut self, s: &Sample, syms: &Kallsyms) {
        self.samples += 1;
        let comm = self.comm(s.pid);
        let frames = super::kernel_frames(s, syms);
        let user = frames.is_none();
        self.key.clear();
        let class = if user {
            self.user_samples += 1;
            self.key.push_str("[user] ");
            self.key.push_str(&comm);
            "user"
        } else {
            let names = frames.unwrap_or_default();
            let class = classify(names.iter().copied());
            if class == "idle" {
                self.idle_samples += 1;
            } else {
                self.kernel_samples += 1;
                if let Some(sc) = syscall_of(names.iter().rev().copied()) {
                    bump(&mut self.syscalls, sc, 1, self.stack_cap, OTHER);
                }
            }
            for (i, n) in names.iter().rev().enumerate() {
                if i > 0 {
                    self.key.push(';');
                }
                self.key.push_str(n);
            }
            class
        };
        *self.subsystems.entry(class).or_default() += 1;
        if let Some(c) = self.stacks.get_mut(self.key.as_str()) {
            *c += 1;
        } else if self.stacks.len() < self.stack_cap {
            self.stacks.insert(self.key.clone(), 1);
        } else {
            self.samples_in_other += 1;
            let other = if user { "[user] [other]" } else { OTHER };
            *self.stacks.entry(other.to_string()).or_default() += 1;
        }
        let (k, u) = match class {
            "user" => (0, 1),
            "idle" => (0, 0),
            _ => (1, 0),
        };
        if k + u > 0 {
            let key = (s.pid, comm);
            if let Some(e) = self.processes.get_mut(&key) {
                e.0 += k;
                e.1 += u;
            } else {
                let key = if self.processes.len() < PROCESS_CAP {
                    key
                } else {
                    (0, OTHER.to_string())
                };
                let e = self.processes.entry(key).or_default();
                e.0 += k;
                e.1 += u;
            }
        }
    }

    /// What was gathered, as the stored shape (identity and timing filled by the caller).
    pub fn finish(self) -> SystemProfile {
        let mut processes: Vec<ProcessRow> = self
            .processes
            .into_iter()
            .map(|((pid, comm), (k, u))| ProcessRow {
                comm,
                pid,
                kernel_samples: k,
                user_samples: u,
            })
            .collect();
        processes.sort_by(|a, b| {
            (b.kernel_samples + b.user_samples)
                .cmp(&(a.kernel_samples + a.user_samples))
                .then(b.kernel_samples.cmp(&a.kernel_samples))
                .then(a.comm.cmp(&b.comm))
                .then(a.pid.cmp(&b.pid))
        });
        SystemProfile {
            id: String::new(),
            label: None,
            started_ns: 0,
            requested_ns: 0,
            wall_ns: 0,
            interrupted: false,
            hostname: None,
            kernel_release: None,
            sysperf_version: crate::VERSION.to_string(),
            cpus: Vec::new(),
            sample_period_ns: PERIOD_NS,
            samples: self.samples,
            kernel_samples: self.kernel_samples,
            user_samples: self.user_samples,
            idle_samples: self.idle_samples,
            lost_samples: self.lost,
            throttled: self.throttled,
            stack_cap: self.stack_cap as u64,
            samples_in_other: self.samples_in_other,
            stacks: self.stacks.into_iter().collect(),
            subsystems: self
                .subsystems
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            processes,
            syscalls: self.syscalls.into_iter().collect(),
            functions: Vec::new(),
            functions_method: String::new(),
            peak_rss_kb: None,
        }
    }
}

/// Adds `n` to `key` in a map of at most `cap` keys (new keys past it go to `other`).
fn bump(m: &mut HashMap<String, u64>, key: &str, n: u64, cap: usize, other: &str) {
    if let Some(c) = m.get_mut(key) {
        *c += n;
    } else if m.len() < cap {
        m.insert(key.to_string(), n);
    } else {
        *m.entry(other.to_string()).or_default() += n;
    }
}

impl SystemProfile {
    /// The kernel's own time as a benchmark-shaped profile: the stacks of kernel samples,
    /// idle and user mode left out, so its flat profile and call graph are the kernel's
    /// (`operations` is whole seconds of wall time: `us_per_op` is CPU microseconds per second).
    pub fn kernel_profile(&self) -> Profile {
        let stacks: BTreeMap<String, u64> = self
            .stacks
            .iter()
            .filter(|(k, _)| is_kernel_stack(k))
            .map(|(k, &v)| (k.clone(), v))
            .collect();
        Profile {
            bench: "system".into(),
            unit: "second".into(),
            placement: "system".into(),
            cpus: self.cpus.clone(),
            iterations: 1,
            operations: (self.wall_ns / 1_000_000_000).max(1),
            wall_ns: self.wall_ns,
            sample_period_ns: self.sample_period_ns,
            scope: "whole-machine sampling of every CPU, idle and user mode left out".into(),
            samples: stacks.values().sum(),
            samples_outside_region: 0,
            samples_other: 0,
            lost_samples: self.lost_samples,
            throttled: self.throttled,
            stacks,
        }
    }

    /// Kernel time (idle excluded) as a share of the CPU time that was not idle, in percent:
    /// the papers' "system time" (57% in 4.2BSD, §3.2).
    pub fn system_pct(&self) -> f64 {
        let busy = self.kernel_samples + self.user_samples;
        if busy == 0 {
            0.0
        } else {
            100.0 * self.kernel_samples as f64 / busy as f64
        }
    }

    /// Share of kernel time, in percent, of the samples under a path name translation frame
    /// ([`NAMEI_FRAMES`]): today's namei (the papers' Tables 4, 9 and 10).
    pub fn namei_pct(&self) -> f64 {
        let n: u64 = self
            .stacks
            .iter()
            .filter(|(k, _)| is_kernel_stack(k) && k.split(';').any(|f| NAMEI_FRAMES.contains(&f)))
            .map(|(_, &v)| v)
            .sum();
        self.kernel_pct(n)
    }

    /// Share of kernel time (idle excluded), in percent, of `samples`.
    pub fn kernel_pct(&self, samples: u64) -> f64 {
        if self.kernel_samples == 0 {
            0.0
        } else {
            100.0 * samples as f64 / self.kernel_samples as f64
        }
    }
}

/// Today's namei: the frames of a path name translation, one of which a sample's stack holds
/// while the kernel translates a name (stat and the other lookups through filename_lookup or
/// filename_parentat, open through link_path_walk and open_last_lookups, walk_component for
/// each component). Not the open itself, which 4.2BSD's namei did not do either.
pub const NAMEI_FRAMES: [&str; 5] = [
    "filename_lookup",
    "filename_parentat",
    "link_path_walk",
    "open_last_lookups",
    "walk_component",
];

/// Whether a folded stack is kernel time (not user mode, not idle).
pub fn is_kernel_stack(stack: &str) -> bool {
    !stack.starts_with("[user]") && classify(stack.rsplit(';')) != "idle"
}

/// The perf attribute of the system-wide sampling events: a benchmark's whole-CPU event
/// (fork and comm records for the names), idle included, at the system period.
fn attr() -> PerfEventAttr {
    let mut a = super::sampler::attr(super::sampler::Scope::Cpus);
    a.flags &= !perf::FLAG_EXCLUDE_IDLE;
    a.sample_period = PERIOD_NS;
    a
}

/// The online CPUs (/sys/devices/system/cpu/online), else the ones this process may use.
pub fn online_cpus() -> Vec<u32> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| crate::harness::placement::parse_list(s.trim()).ok())
        .or_else(|| sys::get_affinity().ok())
        .unwrap_or_else(|| vec![0])
}

/// Why system-wide sampling is refused, with what it takes.
fn not_permitted(e: &std::io::Error) -> ProfileError {
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    ProfileError::NotPermitted(match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "sampling every CPU for all processes (perf_event_open with pid -1) was refused: \
             kernel.perf_event_paranoid is {paranoid} and this user is not root; it takes root \
             or CAP_PERFMON (CAP_SYS_ADMIN before Linux 5.8), or: sysctl -w kernel.perf_event_paranoid=0 \
             (plus kernel.kptr_restrict=0 to name the kernel's functions)"
        ),
        _ => super::super::harness::counters::perf_open_error(e),
    })
}

/// Checks, before anything else, that this process may sample every CPU for all processes:
/// one event opened and closed on the first online CPU, the same permission check as the real
/// ones. (It comes before reading /proc/kallsyms, which a non-root user sees as zeros while
/// kernel.perf_event_paranoid is above 1 whatever kptr_restrict says, so that the error names
/// the setting that matters first.)
pub fn check_access() -> Result<(), ProfileError> {
    let cpu = online_cpus().first().copied().unwrap_or(0);
    let mut a = attr();
    a.flags |= perf::FLAG_DISABLED;
    sys::perf_event_open(&a, -1, cpu as i32)
        .map(drop)
        .map_err(|e| not_permitted(&e))
}

/// What the sampling loop reports as it goes.
pub trait Progress {
    /// `elapsed` of `total`, with the samples so far.
    fn tick(&mut self, elapsed: Duration, total: Duration, samples: u64);
}

impl<F: FnMut(Duration, Duration, u64)> Progress for F {
    fn tick(&mut self, elapsed: Duration, total: Duration, samples: u64) {
        self(elapsed, total, samples)
    }
}

/// Options of a system profile.
pub struct Options {
    pub duration: Duration,
    pub stack_cap: usize,
    pub label: Option<String>,
}

/// `sysperf profile --system`: samples the machine as [`observe`] does and stores the profile
/// in `store` as observation `id`. With `functions`, their calls are counted by the function
/// tracer meanwhile and their times per call computed (the papers' Tables 4, 9 and 10); a
/// refusal to count is told (`notice`), and their times then come from the samples only.
/// Interrupted, what was sampled is stored (`interrupted` is set).
#[allow(clippy::too_many_arguments)]
pub fn record(
    opts: &Options,
    functions: Option<&[String]>,
    syms: &Kallsyms,
    store: &dyn crate::store::Backend,
    id: String,
    stop: &AtomicBool,
    progress: &mut dyn Progress,
) -> Result<SystemProfile, ProfileError> {
    // The calls are counted while the machine is sampled; a refusal is said, not fatal.
    let counter = functions.map(|names| {
        super::calls::Counter::start(names).inspect_err(|why| {
            crate::notice::tell(&format!(
                "cannot count the functions' calls: {why}; their times come from the samples only"
            ))
        })
    });
    crate::notice::tell(&format!(
        "sampling every CPU for {} s; Ctrl-C ends it early and keeps what was sampled",
        opts.duration.as_secs_f64()
    ));
    let mut p = observe(opts, syms, stop, progress)?;
    if let (Some(names), Some(counter)) = (functions, counter) {
        let counted = counter.and_then(|c| c.stop());
        let (calls, why) = match &counted {
            Ok(c) => (Some(&c[..]), None),
            Err(why) => (None, Some(why.as_str())),
        };
        p.functions = super::calls::function_times(&p, names, calls, why.unwrap_or_default());
        p.functions_method = super::calls::method(&p, calls, why);
    }
    p.id = id;
    store.save_observation(&p).map_err(ProfileError::Store)?;
    Ok(p)
}

/// Samples every online CPU for `opts.duration` (or until `stop`, then `interrupted` is set
/// and what was gathered is returned), folding as it goes.
pub fn observe(
    opts: &Options,
    syms: &Kallsyms,
    stop: &AtomicBool,
    progress: &mut dyn Progress,
) -> Result<SystemProfile, ProfileError> {
    let cpus = online_cpus();
    let a = attr();
    // Field order is drop order: the rings unmap before their descriptors close.
    let mut rings: Vec<PerfRing> = Vec::new();
    let mut fds: Vec<OwnedFd> = Vec::new();
    for &cpu in &cpus {
        let fd = match sys::perf_event_open(&a, -1, cpu as i32) {
            Ok(fd) => fd,
            // A CPU that went offline between the list and the open is skipped.
            Err(e) if e.raw_os_error() == Some(libc::ENODEV) => continue,
            Err(e) => return Err(not_permitted(&e)),
        };
        let ring = PerfRing::map(fd.as_raw_fd(), DATA_PAGES).map_err(|e| ProfileError::Failed {
            bench: "the system".into(),
            why: format!("mapping the perf buffer of CPU {cpu}: {e} (locked memory for perf buffers is limited by kernel.perf_event_mlock_kb and ulimit -l)"),
        })?;
        fds.push(fd);
        rings.push(ring);
    }
    let started_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0);
    let t0 = std::time::Instant::now();
    let mut agg = Aggregator::new(opts.stack_cap);
    let mut buf = Vec::new();
    let mut interrupted = false;
    loop {
        let elapsed = t0.elapsed();
        if stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        let done = elapsed >= opts.duration;
        // Every ring is drained before any sample is folded, so that a process's name
        // (its exec or fork, recorded on one CPU) is known for its samples on another.
        buf.clear();
        for ring in &mut rings {
            ring.drain(&mut buf);
        }
        let recs = records::parse(&buf);
        let (samples, names): (Vec<Record>, Vec<Record>) = recs
            .into_iter()
            .partition(|r| matches!(r, Record::Sample(_)));
        for r in names.into_iter().chain(samples) {
            agg.record(r, syms);
        }
        progress.tick(elapsed.min(opts.duration), opts.duration, agg.samples);
        if done {
            break;
        }
        std::thread::sleep(POLL.min(opts.duration.saturating_sub(elapsed)));
        // The buffer's memory is not kept at its high-water mark between drains.
        if buf.capacity() > 1 << 20 {
            buf = Vec::new();
        }
    }
    let wall_ns = t0.elapsed().min(opts.duration).as_nanos() as u64;
    drop(rings);
    drop(fds);
    let mut p = agg.finish();
    let fp = crate::fingerprint::collect();
    p.label = opts.label.clone();
    p.started_ns = started_ns;
    p.requested_ns = opts.duration.as_nanos() as u64;
    p.wall_ns = wall_ns;
    p.interrupted = interrupted;
    p.hostname = fp.hostname;
    p.kernel_release = fp.kernel_release;
    p.cpus = cpus;
    p.peak_rss_kb = peak_rss_kb();
    Ok(p)
}

/// This process's peak resident set (VmHWM), KiB.
pub fn peak_rss_kb() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::super::records::{self, synth};
    use super::*;

    const SYMS: &str = "\
ffffffff81001000 T entry_SYSCALL_64_after_hwframe
ffffffff81002000 T do_syscall_64
ffffffff81003000 T __x64_sys_read
ffffffff81004000 T pipe_read
ffffffff81005000 T __schedule
ffffffff81006000 T do_idle
ffffffff81007000 T default_idle
ffffffff81008000 T asm_exc_page_fault
ffffffff81009000 T clear_page
";

    fn samples(bytes: &[u8]) -> Vec<Record> {
        records::parse(bytes)
    }

    #[test]
    fn subsystems_are_decided_by_the_innermost_frame() {
        let c = |s: &str| classify(s.rsplit(';'));
        assert_eq!(
            c("entry_SYSCALL_64;do_syscall_64;__x64_sys_read;pipe_read"),
            "syscall"
        );
        assert_eq!(
            c("entry_SYSCALL_64;do_syscall_64;__x64_sys_read;pipe_read;schedule;__schedule"),
            "scheduler"
        );
        assert_eq!(
            c("__x64_sys_read;copy_to_user;asm_exc_page_fault;exc_page_fault;handle_mm_fault;clear_page"),
            "page fault"
        );
        assert_eq!(
            c("do_idle;asm_sysvec_apic_timer_interrupt;irq_exit_rcu;handle_softirqs;net_rx_action;__napi_poll;virtnet_poll"),
            "softirq/net"
        );
        assert_eq!(
            c("do_idle;sysvec_apic_timer_interrupt;hrtimer_interrupt"),
            "interrupt"
        );
        assert_eq!(
            c("secondary_startup_64;cpu_startup_entry;do_idle;default_idle;pv_native_safe_halt"),
            "idle"
        );
        assert_eq!(
            c("ret_from_fork;kthread;worker_thread;blk_mq_run_work_fn;virtblk_done"),
            "block"
        );
        assert_eq!(
            c("ret_from_fork;kthread;worker_thread;memcpy"),
            "other kernel"
        );
        assert_eq!(
            syscall_of("entry;do_syscall_64;__x64_sys_write;pipe_write".split(';')),
            Some("write")
        );
        assert_eq!(syscall_of("do_idle;default_idle".split(';')), None);
        // Handlers inlined into the dispatcher leave the ksys_ function they call.
        assert_eq!(
            syscall_of("entry;do_syscall_64;ksys_read;vfs_read;anon_pipe_read".split(';')),
            Some("read")
        );
    }

    #[test]
    fn samples_fold_by_stack_subsystem_process_and_syscall() {
        let syms = Kallsyms::parse(SYMS).unwrap();
        let read = [
            0xffffffff81004010,
            0xffffffff81003020,
            0xffffffff81002030,
            0xffffffff81001040,
        ];
        let idle = [0xffffffff81007010, 0xffffffff81006020];
        let mut bytes = synth::comm(7, "python3", true);
        bytes.extend(synth::sample(7, 1, false, read[0], &read));
        bytes.extend(synth::sample(7, 2, false, read[0], &read));
        bytes.extend(synth::sample(7, 3, true, 0x5555_0000_1234, &[]));
        bytes.extend(synth::fork(8, 7, 4));
        bytes.extend(synth::sample(8, 5, false, read[0], &read));
        bytes.extend(synth::sample(0, 6, false, idle[0], &idle));
        bytes.extend(synth::lost(2));
        let mut agg = Aggregator::new(100);
        for r in samples(&bytes) {
            agg.record(r, &syms);
        }
        let p = agg.finish();
        assert_eq!(
            (p.samples, p.kernel_samples, p.user_samples, p.idle_samples),
            (5, 3, 1, 1)
        );
        assert_eq!(p.lost_samples, 2);
        assert_eq!(
            p.stacks["entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_read;pipe_read"],
            3
        );
        assert_eq!(p.stacks["[user] python3"], 1);
        assert_eq!(p.subsystems["syscall"], 3);
        assert_eq!(p.subsystems["idle"], 1);
        assert_eq!(p.subsystems["user"], 1);
        assert_eq!(p.syscalls["read"], 3);
        // The forked child takes its parent's name; idle is no process's time.
        assert_eq!(p.processes[0].comm, "python3");
        assert_eq!((p.processes[0].pid, p.processes[0].kernel_samples), (7, 2));
        assert_eq!(p.processes[0].user_samples, 1);
        assert_eq!(
            (p.processes[1].pid, p.processes[1].comm.as_str()),
            (8, "python3")
        );
        assert_eq!(p.processes.len(), 2);
        let k = p.kernel_profile();
        assert_eq!(k.samples, 3);
        assert_eq!(k.flat()[0].name, "pipe_read");
    }

    #[test]
    fn distinct_stacks_past_the_cap_are_counted_under_other() {
        let syms = Kallsyms::parse(SYMS).unwrap();
        let mut agg = Aggregator::new(2);
        let leaves = [
            0xffffffff81004010u64,
            0xffffffff81005010,
            0xffffffff81009010,
            0xffffffff81008010,
        ];
        for (i, &leaf) in leaves.iter().enumerate() {
            let chain = [leaf, 0xffffffff81003020, 0xffffffff81002030];
            for r in samples(&synth::sample(9, i as u64, false, leaf, &chain)) {
                agg.record(r, &syms);
            }
        }
        let p = agg.finish();
        assert_eq!(p.stacks.len(), 3, "two kept and [other]");
        assert_eq!(p.stacks[OTHER], 2);
        assert_eq!(p.samples_in_other, 2);
        assert_eq!(p.stacks.values().sum::<u64>(), 4, "no sample is dropped");
    }
}
