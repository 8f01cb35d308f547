//! The worker: one process per trial, started by the harness as `sysperf __worker REQUEST`.
//!
//! It names itself `sysperf:<id>` (PR_SET_NAME), pins itself as planned, runs the benchmark's
//! setup, then reads the clock and resource usage around `run(iterations)` only, runs teardown,
//! and prints one JSON [`Report`] on stdout. Fresh processes keep trials independent and the
//! forking process lean (its size is measured and reported, since fork cost grows with it).
//! Where a benchmark's operations ran in a helper (the paper's forks/execs program), the
//! helper's account of the run stands for the test process's (`Benchmark::helper`).
//! This is harness code: benchmarks themselves never read a clock or print.

use super::counters::{self, PerfCounters};
use crate::bench::{self, Ctx, Placement};
use crate::model::{Counters, Usage};
use crate::sys;
use serde::{Deserialize, Serialize};
use std::hint::black_box;

/// What the parent asks a worker to do.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    /// A registry id, or "__overhead" to measure the timer and loop overhead.
    pub id: String,
    pub iterations: u64,
    pub pin: Option<Vec<u32>>,
    pub child_cpu: Option<u32>,
    /// Count the timed region with system-wide /proc deltas (`run --observe`).
    #[serde(default)]
    pub observe: bool,
    /// With `observe`, also count the worker and its children with perf counters (these
    /// cost the timed region something; see `counters`).
    #[serde(default)]
    pub perf: bool,
    /// Wait for one byte on stdin before setup, so the parent can attach a profiler first.
    #[serde(default)]
    pub hold: bool,
    /// For a series id: the point's parameter, handed to the series' `make`.
    #[serde(default)]
    pub param: Option<u64>,
    /// A cgroup directory the worker moves itself into before setup (memory-limited trials);
    /// the parent made it and removes it.
    #[serde(default)]
    pub cgroup: Option<String>,
    /// A per-task switch the worker turns on before setup (`sysperf ab`'s "on" side).
    #[serde(default)]
    pub task: Option<TaskSwitch>,
    /// `ab --duet`: the CLOCK_MONOTONIC time at which the timed region starts, so that the
    /// two sides' workers, started together, run it at the same time (a worker whose setup
    /// ends later starts at once and says so with `ready_ns`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at_ns: Option<u64>,
    /// The `command` benchmark's command line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<bench::command::CommandLine>,
}

/// A switch a worker turns on for itself and the children it forks (`sysperf ab --switch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSwitch {
    /// An allow-all seccomp filter: what a filter costs per system call.
    Seccomp,
    /// A seccomp filter of this many argument checks: a planted slowdown of every system
    /// call, of a size set by the count (`ab --switch seccomp-checks=N`).
    SeccompChecks(u32),
    /// Speculative store bypass disabled (prctl PR_SET_SPECULATION_CTRL).
    Speculation,
    /// Nothing at all: both sides alike (`ab --switch none`, an A/A).
    Nothing,
}

impl TaskSwitch {
    /// Turns the switch on for the calling task.
    pub fn apply(self) -> std::io::Result<()> {
        match self {
            TaskSwitch::Seccomp => sys::seccomp_allow_all(),
            TaskSwitch::SeccompChecks(n) => sys::seccomp_arg_checks(n),
            TaskSwitch::Speculation => sys::disable_store_bypass(),
            TaskSwitch::Nothing => Ok(()),
        }
    }
}

impl Request {
    /// One trial of `spec` placed by `plan`, plain: no counters, no hold.
    pub fn trial(spec: &bench::Spec, plan: &super::placement::Plan, iterations: u64) -> Request {
        Request::target(&super::Target::bench(spec), plan, iterations)
    }

    /// One trial of a measurement target (a core benchmark or a series point).
    pub fn target(t: &super::Target, plan: &super::placement::Plan, iterations: u64) -> Request {
        Request {
            pin: plan.worker.clone(),
            child_cpu: plan.child,
            param: t.param,
            task: t.task,
            command: t.command.clone(),
            ..Request::plain(&t.request_id, iterations)
        }
    }

    /// The one request every other is made from: `iterations` of the test `id`, unplaced,
    /// unobserved, not held, in no cgroup, with no switch, parameter or command.
    pub fn plain(id: &str, iterations: u64) -> Request {
        Request {
            id: id.to_string(),
            iterations,
            pin: None,
            child_cpu: None,
            observe: false,
            perf: false,
            hold: false,
            param: None,
            cgroup: None,
            task: None,
            start_at_ns: None,
            command: None,
        }
    }
}

/// Makes the benchmark a request names (an id and, for a series' point, its parameter). The
/// registries live above the harness, so the binary hands the worker their lookup
/// (`engine::make_benchmark`).
pub type Make = fn(&str, Option<u64>) -> Result<Box<dyn bench::Benchmark>, String>;

/// What a worker tells the parent.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Report {
    pub wall_ns: u64,
    /// The worker and the children it reaped, over the timed region.
    pub usage: Usage,
    /// The reaped children's part of `usage` (the echo child of pipeback, the forked and
    /// exec'd processes of forks and execs): the paper's time charged it only where its
    /// program waited for them (`bench::Charge`).
    #[serde(default)]
    pub children: Usage,
    pub rss_bytes: u64,
    /// The anonymous part of `rss_bytes` (heap, stack, sbrk'd memory): unlike file-backed
    /// pages it does not vary with the page cache, so tests can check setup's touches.
    pub rss_anon_bytes: u64,
    pub maps: u64,
    pub migrations: Option<u64>,
    pub cpu_start: Option<u32>,
    pub cpu_end: Option<u32>,
    /// For "__overhead": the median cost of a pair of clock reads.
    pub timer_ns: Option<f64>,
    pub error: Option<String>,
    /// The counters of an observed trial.
    #[serde(default)]
    pub counters: Option<Counters>,
    /// CLOCK_MONOTONIC at the start and end of the timed region, so a profiler in the parent
    /// can keep only the samples taken inside it.
    #[serde(default)]
    pub region_ns: Option<[u64; 2]>,
    /// With `start_at_ns`: CLOCK_MONOTONIC when setup was done and the wait began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_ns: Option<u64>,
    /// Uses of the trial's channel by other processes (`Benchmark::intrusions`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub intrusions: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

pub const OVERHEAD_ID: &str = "__overhead";
/// Chunks the loop-overhead measurement is split into (see `overhead`).
const OVERHEAD_CHUNKS: u64 = 50;

/// Entry point of `sysperf __worker`; returns the process exit code.
pub fn main(request: &str, make: Make) -> i32 {
    let report = match serde_json::from_str::<Request>(request) {
        Ok(req) => execute(&req, make).unwrap_or_else(|e| Report {
            error: Some(e),
            ..Report::default()
        }),
        Err(e) => Report {
            error: Some(format!("bad worker request: {e}")),
            ..Report::default()
        },
    };
    let failed = report.error.is_some();
    // Written, not println!: a parent that stopped reading (it died, or was killed) must not
    // turn the report into a panic.
    let written = serde_json::to_string(&report).map(|s| {
        use std::io::Write;
        writeln!(std::io::stdout().lock(), "{s}").is_ok()
    });
    if written.ok() != Some(true) {
        return 1;
    }
    i32::from(failed)
}

fn execute(req: &Request, make: Make) -> Result<Report, String> {
    enter(req)?;
    if req.id == OVERHEAD_ID {
        return Ok(overhead(req.iterations));
    }
    if let Some(dir) = &req.cgroup {
        join_cgroup(dir)?;
    }
    let mut b = make(&req.id, req.param)?;
    // Opened before setup, so that children forked in setup inherit the counters.
    let perf = (req.observe && req.perf).then(PerfCounters::open);
    let ctx = Ctx {
        placement: req
            .child_cpu
            .map(Placement::ChildOn)
            .unwrap_or(Placement::Inherit),
        command: req.command.clone(),
    };
    b.setup(&ctx, req.iterations)
        .map_err(|e| format!("setup: {e}"))?;
    let (rss_bytes, rss_anon_bytes, maps) = sys::process_size("self");
    // `ab --duet`: wait for the other side, outside everything that is measured.
    let ready_ns = req.start_at_ns.map(|at| {
        let now = sys::monotonic_ns();
        if at > now {
            std::thread::sleep(std::time::Duration::from_nanos(at - now));
        }
        now
    });
    let mig0 = migrations();
    let cpu_start = sys::current_cpu();
    let observe = req.observe || b.counted();
    let snap0 = observe.then(counters::snapshot);
    let u0 = sys::usage_self_and_children();
    let c0 = sys::usage_children();
    // The clock reads sit inside the rusage reads so that the wall time covers the loop only;
    // the perf counters, when observed, sit right inside the rusage reads too.
    if let Some(p) = &perf {
        p.enable(true);
    }
    let t0 = sys::monotonic_ns();
    let ran = b.run(req.iterations);
    let t1 = sys::monotonic_ns();
    if let Some(p) = &perf {
        p.enable(false);
    }
    let c1 = sys::usage_children();
    let u1 = sys::usage_self_and_children();
    let snap1 = observe.then(counters::snapshot);
    let cpu_end = sys::current_cpu();
    let mig1 = migrations();
    // The children the paper's program never waited for, reaped once the clock has stopped
    // (its time stopped when the program exited): their usage is the trial's, not its own.
    let late = b.reap_unwaited();
    let counters = counter_delta(req, snap0.as_ref().zip(snap1.as_ref()), perf.as_ref());
    // A helper process that did the operations (the paper's forks/execs program) is the test
    // process: its own time is the parent's, its children's the children's, its size the
    // forking process's.
    let helper = b.helper();
    let torn = b.teardown();
    let intrusions = b.intrusions();
    ran.map_err(|e| format!("run: {e}"))?;
    let late = late.map_err(|e| format!("run: {e}"))?;
    torn.map_err(|e| format!("teardown: {e}"))?;
    let (mut usage, mut children) = (u1.since(&u0).plus(&late), c1.since(&c0).plus(&late));
    let (mut rss_bytes, mut rss_anon_bytes, mut maps) = (rss_bytes, rss_anon_bytes, maps);
    if let Some(h) = helper {
        usage = usage.plus(&h.own).plus(&h.children);
        children = children.plus(&h.children);
        (rss_bytes, rss_anon_bytes, maps) = (h.rss_bytes, h.rss_anon_bytes, h.maps);
    }
    Ok(Report {
        wall_ns: t1.saturating_sub(t0),
        usage,
        children,
        rss_bytes,
        rss_anon_bytes,
        maps,
        migrations: mig0.zip(mig1).map(|(a, b)| b.saturating_sub(a)),
        cpu_start,
        cpu_end,
        timer_ns: None,
        error: None,
        counters,
        region_ns: Some([t0, t1]),
        ready_ns,
        intrusions,
    })
}

/// Makes this process the trial's: named after the test, killed with sysperf, pinned, held
/// until the harness's go-ahead (`hold`), with the task's switch on.
fn enter(req: &Request) -> Result<(), String> {
    sys::set_process_name(&format!("sysperf:{}", req.id));
    // If sysperf dies, so does its worker (and the worker's children, which do the same).
    sys::set_parent_death_signal(libc::SIGKILL);
    if let Some(cpus) = &req.pin {
        sys::set_affinity(cpus).map_err(|e| format!("pinning to CPUs {cpus:?}: {e}"))?;
    }
    if req.hold {
        // The parent attaches its profiler now; EOF means it gave up (or died).
        let mut go = [0u8; 1];
        match sys::read(0, &mut go) {
            Ok(1) => {}
            _ => return Err("the harness did not give the go-ahead".into()),
        }
    }
    if let Some(sw) = req.task {
        sw.apply()
            .map_err(|e| format!("turning on the switch {sw:?}: {e}"))?;
    }
    Ok(())
}

/// Joins the cgroup `dir` of a memory-limited target.
fn join_cgroup(dir: &str) -> Result<(), String> {
    // Before setup, so that every page setup and the timed region touch is charged to
    // the limited cgroup.
    let procs = std::path::Path::new(dir).join("cgroup.procs");
    std::fs::write(&procs, std::process::id().to_string())
        .map_err(|e| format!("joining the cgroup {}: {e}", procs.display()))?;
    Ok(())
}

/// What the counters counted between two snapshots (`snaps`), on the trial's CPUs (the
/// pinned ones and the child's, or all), with the perf counters' figures; none unobserved.
fn counter_delta(
    req: &Request,
    snaps: Option<(&counters::Snapshot, &counters::Snapshot)>,
    perf: Option<&PerfCounters>,
) -> Option<Counters> {
    match snaps {
        Some((a, b)) => {
            let mut cpus: Vec<u32> = req.pin.clone().unwrap_or_default();
            if !cpus.is_empty() {
                cpus.extend(req.child_cpu);
            }
            let mut c = counters::delta(a, b, &cpus);
            if let Some(p) = perf {
                p.read_into(&mut c);
            }
            Some(c)
        }
        _ => None,
    }
}

/// Measures the two costs the harness subtracts: a pair of clock reads around nothing (the
/// timer), and one iteration of an empty loop shaped like the benchmarks' (the loop).
fn overhead(iterations: u64) -> Report {
    let mut pairs: Vec<u64> = (0..1001)
        .map(|_| {
            let a = sys::monotonic_ns();
            let b = sys::monotonic_ns();
            b.saturating_sub(a)
        })
        .collect();
    pairs.sort_unstable();
    let timer_ns = pairs[pairs.len() / 2] as f64;
    // The loop runs in short chunks and the fastest chunk stands for all: interference (a
    // preemption, an interrupt) can only make a chunk slower, and a single long loop on a busy
    // machine would inflate the overhead that is then subtracted from every trial.
    let chunk = (iterations / OVERHEAD_CHUNKS).max(1);
    let u0 = sys::usage_self_and_children();
    let fastest = (0..OVERHEAD_CHUNKS)
        .map(|_| {
            let t0 = sys::monotonic_ns();
            for i in 0..chunk {
                black_box(i);
            }
            sys::monotonic_ns().saturating_sub(t0)
        })
        .min()
        .unwrap_or(0);
    let u1 = sys::usage_self_and_children();
    Report {
        // As if all `iterations` had run at the fastest chunk's pace.
        wall_ns: fastest * iterations / chunk,
        usage: u1.since(&u0),
        timer_ns: Some(timer_ns),
        ..Report::default()
    }
}

/// Migrations of this thread so far, from the scheduler's statistics (CONFIG_SCHED_DEBUG).
fn migrations() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/sched").ok()?;
    parse_migrations(&text)
}

fn parse_migrations(text: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.starts_with("se.nr_migrations"))
        .and_then(|l| l.split(':').nth(1))
        .and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_scheduler_migrations() {
        let t = "sysperf (1, #threads: 1)\n---\nse.exec_start : 1.0\nse.nr_migrations                             :                    7\n";
        assert_eq!(parse_migrations(t), Some(7));
        assert_eq!(parse_migrations("nothing"), None);
    }

    #[test]
    fn bad_requests_are_reported_not_panicked() {
        assert_eq!(main("{not json", crate::engine::make_benchmark), 1);
        assert_eq!(
            main(
                r#"{"id":"nope","iterations":1,"pin":null,"child_cpu":null}"#,
                crate::engine::make_benchmark
            ),
            1
        );
    }
}
