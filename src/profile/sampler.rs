//! The sampler: perf_event_open cpu-clock sampling of a worker and its children, read in the
//! parent while the worker runs (a [`harness::Observer`]).
//!
//! cpu-clock is a software event driven by an hrtimer, so it needs no hardware counters;
//! kernel call chains come from the kernel's unwinder. Of user space the sampler keeps the
//! address only (a user-mode sample's ip, or the first entry of a kernel sample's user call
//! chain: where the process entered the kernel), with the mmap, exec and fork records and the
//! worker's /proc/PID/maps that let [`super::usersym`] name its function ([`user_attr`]).
//! Two scopes, the first when permitted:
//! - [`Scope::Cpus`]: one event per CPU the benchmark runs on, sampling whatever runs there
//!   (idle excluded), with fork records, so the samples of the worker's process tree can be
//!   kept and the rest counted as other work. It catches short-lived children fully, which
//!   per-task sampling cannot: an inherited event starts each child with a fresh sampling
//!   period, so a child living less than one period (fork-exit, vfork-exec) is rarely
//!   sampled. Needs root, CAP_PERFMON or kernel.perf_event_paranoid <= 0.
//! - [`Scope::Task`]: one event per CPU on the worker, inherited by its children (the kernel
//!   refuses to map the buffer of an inherited event that follows a task across CPUs; children
//!   write into their parent event's buffer). Needs kernel.perf_event_paranoid <= 1.
//!
//! The descriptors and mappings are the sampler's and close with it.

use super::records::{self, Mmap, Record, Sample};
use super::usersym;
use crate::harness::{self, counters::perf_open_error};
use crate::sys::{self, perf, PerfEventAttr, PerfRing};
use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd};

/// Sampling period in nanoseconds of CPU time: about 5 kHz, deliberately not a divisor of the
/// scheduler tick (1000, 250 or 100 Hz) so samples do not fall into lockstep with it.
pub const PERIOD_NS: u64 = 200_033;

/// Data pages per CPU buffer (256 KiB with 4 KiB pages): at 5 kHz and ~40 frames a sample
/// that is ~40 ms of samples, drained every 10 ms; small enough for the default
/// kernel.perf_event_mlock_kb (516) of unprivileged users.
const DATA_PAGES: usize = 64;

/// The kernel's limits on the call chains it records (kernel.perf_event_max_stack and
/// kernel.perf_event_max_contexts_per_stack), as they were while the sampler's events were
/// open: the kernel refuses to change either while any event samples call chains, so values
/// read then are the ones every sample was taken under. Either at 0 (any root process may set
/// it while nothing samples call chains) leaves every kernel sample without a call chain.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChainLimits {
    pub max_stack: Option<u32>,
    pub max_contexts: Option<u32>,
}

impl ChainLimits {
    pub fn read() -> ChainLimits {
        let read = |name: &str| {
            std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
                .ok()
                .and_then(|s| s.trim().parse().ok())
        };
        ChainLimits {
            max_stack: read("perf_event_max_stack"),
            max_contexts: read("perf_event_max_contexts_per_stack"),
        }
    }
}

/// What a sampling event watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Everything on the benchmark's CPUs, filtered to the worker's process tree.
    Cpus,
    /// The worker, inherited by its children.
    Task,
}

impl Scope {
    pub fn describe(self) -> &'static str {
        match self {
            Scope::Cpus => "whole-CPU sampling of the benchmark's CPUs, kept for the worker's process tree",
            Scope::Task => "per-task sampling of the worker, inherited by its children (children living less than one sampling period are under-sampled)",
        }
    }
}

/// The perf attribute of a sampling event of `scope`.
pub fn attr(scope: Scope) -> PerfEventAttr {
    let mut a = PerfEventAttr::new(perf::TYPE_SOFTWARE, perf::SW_CPU_CLOCK);
    a.sample_period = PERIOD_NS;
    a.sample_type = perf::SAMPLE_IP
        | perf::SAMPLE_TID
        | perf::SAMPLE_TIME
        | perf::SAMPLE_PERIOD
        | perf::SAMPLE_CALLCHAIN;
    a.flags = perf::FLAG_COMM
        | perf::FLAG_COMM_EXEC
        | perf::FLAG_EXCLUDE_CALLCHAIN_USER
        | perf::FLAG_USE_CLOCKID;
    a.flags |= match scope {
        Scope::Cpus => perf::FLAG_TASK | perf::FLAG_EXCLUDE_IDLE,
        Scope::Task => perf::FLAG_INHERIT,
    };
    // Sample times on the clock the worker reads around its timed region.
    a.clockid = libc::CLOCK_MONOTONIC;
    a
}

/// [`attr`] with what naming user-space functions takes: mmap records of executable
/// mappings, task (fork) records in both scopes (a child starts with its parent's mappings),
/// every record timed (sample_id_all: an exec replaces a process's mappings, so a mapping is
/// known by when it was made), and user call chains (the kernel's frame-pointer walk, cut at
/// kernel.perf_event_max_stack; only its first entry, the exact user address, is used).
pub fn user_attr(scope: Scope) -> PerfEventAttr {
    let mut a = attr(scope);
    a.flags |= perf::FLAG_MMAP | perf::FLAG_TASK | perf::FLAG_SAMPLE_ID_ALL;
    a.flags &= !perf::FLAG_EXCLUDE_CALLCHAIN_USER;
    a
}

/// Samples of one worker, gathered while it runs.
pub struct Sampler {
    scope: Scope,
    cpus: Vec<u32>,
    // Field order is drop order: unmap the buffers, then close their descriptors.
    rings: Vec<PerfRing>,
    fds: Vec<OwnedFd>,
    buf: Vec<u8>,
    /// The worker's pid, once attached.
    pub root: Option<u32>,
    pub samples: Vec<Sample>,
    /// (pid, parent pid, time) of every process created on the sampled CPUs (Scope::Cpus).
    pub forks: Vec<(u32, u32, u64)>,
    pub lost: u64,
    pub throttled: u64,
    /// Names of tasks that exec'd or were renamed, by pid.
    pub comms: HashMap<u32, String>,
    /// The call chain limits the samples were taken under (read once attached).
    pub limits: ChainLimits,
    /// Executable mappings made while sampling, and (pid, time) of every exec.
    pub mmaps: Vec<Mmap>,
    pub execs: Vec<(u32, u64)>,
    /// The worker's executable mappings when it was attached (before sampling began, the
    /// kernel reports none of them).
    pub initial_maps: Vec<usersym::Map>,
}

impl Sampler {
    /// A sampler of `scope` on each of `cpus`.
    pub fn new(scope: Scope, cpus: Vec<u32>) -> Sampler {
        Sampler {
            scope,
            cpus,
            rings: Vec::new(),
            fds: Vec::new(),
            buf: Vec::new(),
            root: None,
            samples: Vec::new(),
            forks: Vec::new(),
            lost: 0,
            throttled: 0,
            comms: HashMap::new(),
            limits: ChainLimits::default(),
            mmaps: Vec::new(),
            execs: Vec::new(),
            initial_maps: Vec::new(),
        }
    }

    pub fn scope(&self) -> Scope {
        self.scope
    }

    /// What names the user addresses of the samples.
    pub fn symbolizer(&self) -> usersym::Symbolizer {
        let initial = self
            .root
            .into_iter()
            .flat_map(|pid| self.initial_maps.iter().map(move |m| (pid, m.clone())))
            .collect();
        usersym::Symbolizer::new(usersym::Spaces::new(
            &self.mmaps,
            &self.execs,
            &self.forks,
            initial,
        ))
    }
}

impl harness::Observer for Sampler {
    fn attach(&mut self, pid: sys::Pid) -> Result<(), String> {
        let a = user_attr(self.scope);
        let target = match self.scope {
            Scope::Cpus => -1,
            Scope::Task => pid,
        };
        for &cpu in &self.cpus {
            let fd = sys::perf_event_open(&a, target, cpu as i32)
                .map_err(|e| format!("sampling CPU {cpu}: {}", perf_open_error(&e)))?;
            let ring = PerfRing::map(fd.as_raw_fd(), DATA_PAGES).map_err(|e| {
                format!(
                    "mapping the perf buffer for CPU {cpu}: {e} (locked memory for perf buffers is limited by kernel.perf_event_mlock_kb and ulimit -l; run as root or raise them)"
                )
            })?;
            self.fds.push(fd);
            self.rings.push(ring);
        }
        self.root = Some(pid as u32);
        self.limits = ChainLimits::read();
        // Held before its setup (the harness attaches once the worker waits for its
        // go-ahead, its libraries loaded), the worker maps nothing new until it is let go.
        self.initial_maps = usersym::proc_maps(pid as u32);
        Ok(())
    }

    fn poll(&mut self) {
        for ring in &mut self.rings {
            self.buf.clear();
            if ring.drain(&mut self.buf) == 0 {
                continue;
            }
            for r in records::parse_with_ids(&self.buf) {
                match r {
                    Record::Sample(s) => self.samples.push(s),
                    Record::Lost(n) => self.lost += n,
                    Record::Comm {
                        pid,
                        comm,
                        exec,
                        time_ns,
                    } => {
                        if let (true, Some(t)) = (exec, time_ns) {
                            self.execs.push((pid, t));
                        }
                        self.comms.insert(pid, comm);
                    }
                    Record::Mmap(m) => self.mmaps.push(m),
                    Record::Throttle => self.throttled += 1,
                    Record::Fork { pid, ppid, time_ns } => {
                        if pid != ppid {
                            self.forks.push((pid, ppid, time_ns));
                        }
                    }
                }
            }
        }
    }
}
