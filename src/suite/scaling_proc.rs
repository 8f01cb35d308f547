//! The process half of "Table searches, then and now" (`--suite scaling`): the cost of
//! process-table and descriptor-set operations against the size of the table, so that a
//! linear search shows as a slope and a hashed or indexed one as a flat line.
//!
//! McKusick, Leffler and Karels, "Measuring and Improving the Performance of Berkeley UNIX",
//! §3.2.5 lists the linear searches of 4.2BSD's process table (fork allocating a slot and a
//! pid, exit and wait finding parent and children, kill and gsignal finding the processes to
//! signal); §4.1.3 says how 4.3BSD removed them (active, zombie and free lists, waits that
//! examine only the caller's own children, a range of free pids computed once); §5.1.4 says
//! select was generalized to any number of descriptors (an array of 32-bit words, still
//! scanned one descriptor at a time).
//!
//! Curves (y is wall nanoseconds per operation):
//! - `forkwait`: fork, the child's _exit(0), waitpid(that pid), against the number of idle
//!   children the worker already has (each called `ctx.child_init()` and blocks reading a pipe
//!   nobody writes). Today pids come from a radix tree (IDR) and waitpid(pid) looks the pid
//!   up, so no search grows with the table; fork still copies the worker's page tables (the
//!   worker is about 4 MiB), which is the constant part, common to every point.
//! - `forkwait-any`: the same with wait4(-1), "any child": Linux walks the caller's list of
//!   children (4.3BSD's fix: only direct descendants, not the whole table), so the cost grows
//!   with the number of children, newest last.
//! - `kill`: kill(pid, 0) of the newest idle child: the existence and permission check, which
//!   finds the process but sends nothing (so nothing is woken and the cost is the lookup).
//!   4.2BSD found a single pid through pfind's hash; the linear searches the paper names are
//!   those for signals to a group or to everyone. Today the lookup is the pid radix tree.
//! - `select`, `poll`, `epoll`: one call with a zero timeout over N descriptors of which
//!   exactly one (the last) is ready; the benchmark fails if the call does not find exactly
//!   one. The descriptors are eventfds (one descriptor per object, readable exactly when the
//!   counter is non-zero), not the paper's pipes and sockets: a pipe takes two descriptors,
//!   and 10,000 pipes would not fit this machine's RLIMIT_NOFILE of 20,000. select and poll
//!   ask every descriptor's driver on every call (linear); epoll keeps a ready list filled by
//!   wake-ups, so a call costs the ready descriptors only. select stops at FD_SETSIZE (1024
//!   descriptors numbered 0-1023, glibc's fixed fd_set), so its curve ends at 1000.
//!
//! - `sched-sleeping`, `sched-runnable`: the scheduler's periodic work against the number of
//!   processes (§3.2.5: 4.2BSD's schedcpu scanned the whole process table once a second, as
//!   much as 20% of the kernel's time on a loaded VAX-11/780 and 5-10% on average; §4.1.4:
//!   "nearly 20% of the system time" with many processes, so 4.3BSD recomputes only the
//!   runnable processes' priorities, a sleeper's when it wakes). The
//!   operation is a fixed unit of user-space work (the host-speed reference's chain, about a
//!   microsecond), timed with P processes besides the worker: asleep (idle children, as
//!   above), or runnable (children that spin at nice 19 on the worker's CPUs: they inherit
//!   its affinity). Asleep, y is wall time: what the worker lost to the scheduler's
//!   periodic work (the tick, load balancing) as the sleeping processes grow. Runnable, y is
//!   the worker's own CPU time (user + system), not wall time, which the spinners' share of
//!   the CPU would dominate: what switching among more runnable processes costs the work
//!   itself (the tick's and the switches' kernel time charged to it, its caches refilled).
//!
//! This file defines the benchmarks and [`SERIES`]; it does not measure, store or draw.

use super::{Axis, Point, SeriesSpec};
use crate::bench::ready::{ReadySet, Scan};
use crate::bench::{Benchmark, Ctx, Shape};
use crate::error::BenchError;
use crate::model::{Derived, Series, YKind};
use crate::sys::{self, Fork, Pid};
use std::os::fd::{AsRawFd, OwnedFd};

/// The largest process-table point asked for; [`child_cap`] lowers it where the machine's
/// limits leave less room.
const MOST_CHILDREN: u64 = 3000;
/// Tasks left free for everything else on the machine when sizing the largest point.
const TASK_RESERVE: u64 = 2000;
/// The largest descriptor point of poll and epoll.
const MOST_DESCRIPTORS: u64 = 10_000;
/// select's largest point: the descriptors must be numbered below FD_SETSIZE (1024), and the
/// worker already holds a few.
const MOST_SELECT: u64 = 1000;

/// The status the timed children exit with.
const CHILD_STATUS: i32 = 0;

const X_CHILDREN: Axis = Axis {
    name: "live processes",
    unit: "children of the worker",
    log: false,
};

const X_DESCRIPTORS: Axis = Axis {
    name: "descriptors",
    unit: "descriptors",
    log: true,
};

/// The largest number of idle children this machine has room for (at most 3000), and why:
/// what pid_max, threads-max and RLIMIT_NPROC leave once the tasks already running and a
/// reserve for everything else are counted. Rounded down to a hundred.
pub fn child_cap() -> (u64, String) {
    let read = |p: &str| -> Option<u64> { std::fs::read_to_string(p).ok()?.trim().parse().ok() };
    let pid_max = read("/proc/sys/kernel/pid_max").unwrap_or(32_768);
    let threads_max = read("/proc/sys/kernel/threads-max").unwrap_or(u64::MAX);
    let nproc = sys::nproc_limit().unwrap_or(u64::MAX);
    // /proc/loadavg's fourth field is "runnable/total" scheduling entities (threads).
    let tasks = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().nth(3)?.split('/').nth(1)?.parse().ok())
        .unwrap_or(0u64);
    let room = |limit: u64| limit.saturating_sub(tasks + TASK_RESERVE);
    let cap = MOST_CHILDREN
        .min(room(pid_max))
        .min(room(threads_max))
        .min(room(nproc));
    let cap = cap / 100 * 100;
    let lim = |v: u64| {
        if v == u64::MAX {
            "unlimited".to_string()
        } else {
            v.to_string()
        }
    };
    let why = format!(
        "fork/kill curves: largest point {cap} live children (asked {MOST_CHILDREN}; \
         pid_max {pid_max}, threads-max {}, RLIMIT_NPROC {}, {tasks} tasks running, \
         {TASK_RESERVE} kept free)",
        lim(threads_max),
        lim(nproc)
    );
    (cap, why)
}

/// What this half of the suite records with a run: the process-table cap and the
/// descriptor limits.
pub fn notes() -> Vec<String> {
    vec![
        child_cap().1,
        format!(
            "select/poll/epoll: eventfd descriptors, one ready; select ends at \
             {MOST_SELECT} (FD_SETSIZE {}), poll and epoll at {MOST_DESCRIPTORS}; the worker \
             raises its soft RLIMIT_NOFILE to the hard limit",
            libc::FD_SETSIZE
        ),
    ]
}

/// Fixed counts (setup with a thousand children is too heavy to repeat for calibration):
/// about 15 ms of timed work per trial on a quiet machine of this kind (long enough for the
/// clock, short beside setup), under a millisecond in quick mode.
fn fixed(x: u64, param: u64, iterations: u64) -> Point {
    Point {
        iterations: Some(iterations.max(1)),
        ..Point::new(x as f64, param)
    }
}

/// The process-table sizes: 0 (or 1 when the operation needs a target), 10, 100, 1000 and
/// the machine's cap (3000 where it allows).
fn child_sizes(quick: bool, least: u64) -> Vec<u64> {
    if quick {
        return vec![least, 100];
    }
    let cap = child_cap().0.max(least);
    let mut v: Vec<u64> = [least, 10, 100, 1000]
        .into_iter()
        .filter(|&p| p < cap)
        .collect();
    v.push(cap);
    v
}

fn forkwait_points(quick: bool) -> Vec<Point> {
    let n = if quick { 10 } else { 100 };
    child_sizes(quick, 0)
        .into_iter()
        .map(|p| fixed(p, p, n))
        .collect()
}

fn kill_points(quick: bool) -> Vec<Point> {
    let n = if quick { 1000 } else { 50_000 };
    child_sizes(quick, 1)
        .into_iter()
        .map(|p| fixed(p, p, n))
        .collect()
}

/// Iterations for one call over `n` descriptors: about 15 ms of calls per trial (0.3 ms quick)
/// at roughly 300 ns a call plus 40 ns a descriptor visited.
fn scan_iterations(quick: bool, n: u64) -> u64 {
    let budget_ns = if quick { 300_000 } else { 15_000_000 };
    (budget_ns / (300 + 40 * n)).max(if quick { 5 } else { 50 })
}

fn descriptor_points(quick: bool, most: u64, linear: bool) -> Vec<Point> {
    let sizes: Vec<u64> = if quick {
        vec![1, 100]
    } else {
        [1, 10, 100, 1000, 10_000]
            .into_iter()
            .filter(|&n| n <= most)
            .collect()
    };
    sizes
        .into_iter()
        .map(|n| {
            // epoll's cost does not grow with n, so neither does its count.
            let it = scan_iterations(quick, if linear { n } else { 1 });
            fixed(n, n, it)
        })
        .collect()
}

/// The most runnable processes of the scheduler curve: 64 spinners at nice 19 leave the
/// worker (nice 0) about half its CPU (weights 1024 against 64 x 15).
const MOST_RUNNABLE: u64 = 64;

/// The runnable curve's sizes.
fn runnable_sizes(quick: bool) -> Vec<u64> {
    if quick {
        vec![0, 2]
    } else {
        vec![0, 1, 2, 4, 8, 16, 32, MOST_RUNNABLE]
    }
}

/// Units of work (about a microsecond each) per trial: about 15 ms (0.3 ms quick) on a
/// quiet machine of this kind; more runnable processes stretch the wall time, not the work.
fn compute_points(sizes: Vec<u64>, quick: bool) -> Vec<Point> {
    let n = if quick { 300 } else { 15_000 };
    sizes.into_iter().map(|p| fixed(p, p, n)).collect()
}

/// What one process-table iteration does.
#[derive(Debug, Clone, Copy, PartialEq)]
enum ProcOp {
    /// One unit of user-space work ([`crate::bench::hostspeed::HostSpeed::step`]), with the
    /// children asleep or spinning.
    Compute,
    /// fork, _exit, waitpid(pid).
    ForkWaitPid,
    /// fork, _exit, wait4(-1).
    ForkWaitAny,
    /// kill(newest child, 0).
    Kill,
}

/// A worker with `want` idle children (the process table's size) and a per-iteration
/// operation on it.
pub(crate) struct LiveChildren {
    op: ProcOp,
    want: u64,
    /// Idle children, oldest first.
    children: Vec<Pid>,
    /// The idle children block reading this pipe; every holder keeps the write end too, so
    /// the read never returns: they wait there until teardown kills them.
    gate: Option<(OwnedFd, OwnedFd)>,
    /// The children spin at nice 19 instead of sleeping (the runnable scheduler curve).
    spin: bool,
    /// [`ProcOp::Compute`]'s unit of work, made ready in setup.
    chain: Option<crate::bench::hostspeed::HostSpeed>,
}

impl LiveChildren {
    fn new(op: ProcOp, want: u64) -> LiveChildren {
        LiveChildren {
            op,
            want,
            children: Vec::new(),
            gate: None,
            spin: false,
            chain: None,
        }
    }

    /// [`ProcOp::Compute`] beside `want` children spinning at nice 19.
    fn spinning(want: u64) -> LiveChildren {
        let mut b = LiveChildren::new(ProcOp::Compute, want);
        b.spin = true;
        b
    }

    /// Kills and reaps every idle child; the first failure other than "already gone" is
    /// returned after all were tried.
    fn reap_all(&mut self) -> Result<(), BenchError> {
        let mut first = None;
        for &pid in &self.children {
            if let Err(e) = sys::kill(pid, libc::SIGKILL) {
                if e.raw_os_error() != Some(libc::ESRCH) {
                    first.get_or_insert(BenchError::Sys {
                        op: "kill(SIGKILL)",
                        source: e,
                    });
                }
            }
        }
        for &pid in &self.children {
            if let Err(e) = sys::wait_child(pid) {
                // ECHILD: reaped already (a test harness reaping zombies of its own).
                if e.raw_os_error() != Some(libc::ECHILD) {
                    first.get_or_insert(BenchError::Sys {
                        op: "waitpid",
                        source: e,
                    });
                }
            }
        }
        self.children.clear();
        self.gate = None;
        first.map_or(Ok(()), Err)
    }

    fn fork_one(&self) -> Result<Pid, BenchError> {
        match sys::fork().map_err(BenchError::sys("fork"))? {
            Fork::Child => sys::exit_now(CHILD_STATUS),
            Fork::Parent(pid) => Ok(pid),
        }
    }
}

impl Benchmark for LiveChildren {
    fn setup(&mut self, ctx: &Ctx, _iterations: u64) -> Result<(), BenchError> {
        if self.op == ProcOp::Kill && self.want == 0 {
            return Err(BenchError::Protocol(
                "kill needs at least one live child to find".into(),
            ));
        }
        let gate = sys::pipe().map_err(BenchError::sys("pipe"))?;
        let gate_read = gate.0.as_raw_fd();
        self.gate = Some(gate);
        self.children.reserve(self.want as usize);
        for _ in 0..self.want {
            match sys::fork() {
                Ok(Fork::Child) => {
                    ctx.child_init();
                    if self.spin {
                        // Runnable for good, at the lowest priority (SIGKILL ends it); a
                        // child that cannot lower its priority would take half the CPU.
                        if sys::set_nice(19).is_err() {
                            sys::exit_now(1)
                        }
                        let mut x = 1u64;
                        loop {
                            x = std::hint::black_box(x.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 1);
                        }
                    }
                    let mut b = [0u8; 1];
                    // Blocks for good (see `gate`); SIGKILL or the parent's death ends it.
                    let _ = sys::read(gate_read, &mut b);
                    sys::exit_now(0)
                }
                Ok(Fork::Parent(pid)) => self.children.push(pid),
                Err(e) => {
                    let made = self.children.len();
                    let _ = self.reap_all();
                    return Err(BenchError::Protocol(format!(
                        "fork of idle child {} of {} failed: {e} (pid_max, threads-max or \
                         RLIMIT_NPROC too small for this point)",
                        made + 1,
                        self.want
                    )));
                }
            }
        }
        if self.op == ProcOp::Compute {
            self.chain = Some(crate::bench::hostspeed::HostSpeed::ready());
        }
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        match self.op {
            ProcOp::Compute => {
                let chain = self.chain.as_mut().ok_or_else(|| {
                    BenchError::Protocol("compute: no chain (setup did not run)".into())
                })?;
                for _ in 0..iterations {
                    std::hint::black_box(chain.step());
                }
            }
            ProcOp::ForkWaitPid => {
                for _ in 0..iterations {
                    let pid = self.fork_one()?;
                    let code = sys::wait_child(pid).map_err(BenchError::sys("waitpid"))?;
                    crate::bench::check_status("fork", code, CHILD_STATUS)?;
                }
            }
            ProcOp::ForkWaitAny => {
                for _ in 0..iterations {
                    let pid = self.fork_one()?;
                    let (got, status, _) =
                        sys::wait4(-1, false).map_err(BenchError::sys("wait4(-1)"))?;
                    if got != pid {
                        return Err(BenchError::Protocol(format!(
                            "wait4(-1) reaped {got}, not the child just forked ({pid}): an \
                             idle child died"
                        )));
                    }
                    crate::bench::check_status("fork", sys::exit_code(status), CHILD_STATUS)?;
                }
            }
            ProcOp::Kill => {
                let target = *self.children.last().ok_or_else(|| {
                    BenchError::Protocol("kill: no live child (setup did not run)".into())
                })?;
                for _ in 0..iterations {
                    sys::kill(target, 0).map_err(BenchError::sys("kill(pid, 0)"))?;
                }
            }
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.reap_all()
    }
}

impl Drop for LiveChildren {
    fn drop(&mut self) {
        if !self.children.is_empty() {
            let _ = self.reap_all();
        }
    }
}

const PROCS_FIGURE: &str = "scaling.proctable";
const PROCS_TITLE: &str =
    "Process table: fork+wait against the number of live processes (§3.2.5, §4.1.3)";
const KILL_FIGURE: &str = "scaling.kill";
const KILL_TITLE: &str =
    "Process table: kill(pid, 0) against the number of live processes (§3.2.5)";
const SCHED_FIGURE: &str = "scaling.scheduler";
const SCHED_TITLE: &str = "The scheduler's periodic work: a unit of user-space work beside sleeping processes, wall time (§3.2.5, §4.1.4)";
/// The runnable curve has a chart of its own: its y is CPU time, and a chart has one y.
const RUNNABLE_FIGURE: &str = "scaling.scheduler-runnable";
const RUNNABLE_TITLE: &str = "The scheduler's periodic work: a unit of user-space work beside runnable processes, the worker's CPU time (§3.2.5, §4.1.4)";
const FDS_FIGURE: &str = "scaling.descriptors";
const FDS_TITLE: &str =
    "Descriptor sets: select, poll and epoll against the number of descriptors (§5.1.4)";

/// One curve of this half: every one is a cost in ns against a size, measured in one process,
/// with no printed figures of the paper's to draw beside it.
macro_rules! series {
    ($id:literal, ($fig:expr, $title:expr), $curve:literal, $paper:literal, $today:literal,
     $x:expr, $unit:literal, $points:expr, $make:expr) => {
        SeriesSpec {
            id: $id,
            figure: $fig,
            figure_title: $title,
            curve: $curve,
            paper: $paper,
            today: $today,
            x: $x,
            y: YKind::CostNs,
            unit: $unit,
            shape: Shape::Single,
            points: $points,
            make: $make,
            paper_points: &[],
            paper_system: None,
            printed: None,
        }
    };
}

/// The process half of the scaling suite's series (the lead merges them with the file-system
/// half into one suite).
pub static SERIES: &[SeriesSpec] = &[
    series!(
        "scaling.forkwait",
        (PROCS_FIGURE, PROCS_TITLE),
        "fork + waitpid(pid)",
        "§3.2.5: 4.2BSD's fork searched the process table linearly to allocate a slot, \
                count the user's processes and check the new pid, and wait scanned it for \
                zombies; §4.1.3: 4.3BSD keeps free, active and zombie lists, assigns pids from \
                a precomputed free range and waits over the caller's children only",
        "fork(), child _exit(0), waitpid(that pid), with P idle children of the ~4 MiB \
                worker alive; pids come from a radix tree and waitpid(pid) looks the pid up",
        X_CHILDREN,
        "fork+wait",
        forkwait_points,
        |p| Box::new(LiveChildren::new(ProcOp::ForkWaitPid, p))
    ),
    series!(
        "scaling.forkwait-any",
        (PROCS_FIGURE, PROCS_TITLE),
        "fork + wait4(-1)",
        "§3.2.5: 4.2BSD's wait searched the whole process table for ZOMBIE and STOPPED \
                children; §4.1.3: 4.3BSD examines only the caller's direct descendants",
        "fork(), child _exit(0), wait4(-1) for any child, with P idle children alive: \
                Linux walks the caller's children list (the newest last), as 4.3BSD does",
        X_CHILDREN,
        "fork+wait",
        forkwait_points,
        |p| Box::new(LiveChildren::new(ProcOp::ForkWaitAny, p))
    ),
    series!(
        "scaling.kill",
        (KILL_FIGURE, KILL_TITLE),
        "kill(pid, 0)",
        "§3.2.5: kill and gsignal searched 4.2BSD's process table linearly for the \
                processes to signal (a single pid went through pfind's hash chains)",
        "kill(newest of P idle children, 0): the existence and permission check only, \
                which finds the process (pid radix tree) and sends nothing",
        X_CHILDREN,
        "kill",
        kill_points,
        |p| Box::new(LiveChildren::new(ProcOp::Kill, p))
    ),
    series!(
        "scaling.sched-sleeping",
        (SCHED_FIGURE, SCHED_TITLE),
        "sleeping processes (wall time)",
        "§3.2.5: 4.2BSD's schedcpu scanned the whole process table once a second to \
                recompute priorities, as much as 20% of the kernel's time on a loaded system \
                and 5-10% on average; §4.1.4: 4.3BSD recomputes only runnable processes, a \
                sleeper's priority when it wakes",
        "1024 dependent multiply-xorshift steps over a 16 KiB table (the host-speed \
                chain, about 1 us) with P idle children asleep on a pipe; wall time",
        X_CHILDREN,
        "unit of work",
        |q| compute_points(child_sizes(q, 0), q),
        |p| Box::new(LiveChildren::new(ProcOp::Compute, p))
    ),
    SeriesSpec {
        y: YKind::CpuNs,
        ..series!(
            "scaling.sched-runnable",
            (RUNNABLE_FIGURE, RUNNABLE_TITLE),
            "runnable processes (the worker's CPU time)",
            "§3.2.5, §4.1.4: the scheduler's periodic work grew with the processes it \
                    considered; 4.3BSD considers only the runnable ones",
            "the same unit of work with P children spinning at nice 19 on the worker's \
                    CPUs; y is the worker's user + system time, not wall time, which the \
                    spinners' share of the CPU would dominate",
            X_CHILDREN,
            "unit of work",
            |q| compute_points(runnable_sizes(q), q),
            |p| Box::new(LiveChildren::spinning(p))
        )
    },
    series!(
        "scaling.select",
        (FDS_FIGURE, FDS_TITLE),
        "select",
        "§5.1.4: select generalized to arrays of 32-bit words for any number of \
                descriptors (it still visits each one)",
        "select(read set of N eventfds, zero timeout), the last one ready: FD_SETSIZE \
                (1024) caps the set, so the curve ends at 1000",
        X_DESCRIPTORS,
        "select",
        |q| descriptor_points(q, MOST_SELECT, true),
        |n| Box::new(ReadySet::new(Scan::Select, n))
    ),
    series!(
        "scaling.poll",
        (FDS_FIGURE, FDS_TITLE),
        "poll",
        "§5.1.4: the descriptor limit raised from 20 to 64 and no hard upper limit; \
                select (poll's 4.2BSD counterpart) visits every descriptor",
        "poll(N eventfds, zero timeout), the last one ready; up to 10,000 (soft \
                RLIMIT_NOFILE raised to the hard limit)",
        X_DESCRIPTORS,
        "poll",
        |q| descriptor_points(q, MOST_DESCRIPTORS, true),
        |n| Box::new(ReadySet::new(Scan::Poll, n))
    ),
    series!(
        "scaling.epoll",
        (FDS_FIGURE, FDS_TITLE),
        "epoll_wait",
        "§5.1.4: select over many descriptors (no 1985 counterpart: epoll is Linux's \
                answer to select's linear scan)",
        "epoll_wait(interest list of N eventfds, level-triggered, zero timeout), the \
                last one ready: the kernel returns its ready list without visiting the others",
        X_DESCRIPTORS,
        "epoll_wait",
        |q| descriptor_points(q, MOST_DESCRIPTORS, false),
        |n| Box::new(ReadySet::new(Scan::Epoll, n))
    ),
];

/// The growth of each of this half's curves: y at its largest x minus y at its smallest,
/// per unit of x (ns per extra process or descriptor); about 0 is flat.
pub fn derive(series: &[Series]) -> Vec<Derived> {
    let mut out = Vec::new();
    for s in series {
        if !SERIES.iter().any(|x| x.id == s.id) {
            continue;
        }
        let measured: Vec<(f64, f64)> = s
            .points
            .iter()
            .filter_map(|p| Some((p.x, p.y.as_ref()?.median)))
            .collect();
        let (Some(lo), Some(hi)) = (measured.first(), measured.last()) else {
            continue;
        };
        if hi.0 <= lo.0 {
            continue;
        }
        out.push(Derived {
            na: None,
            name: format!("{}.slope", s.id),
            value: (hi.1 - lo.1) / (hi.0 - lo.0),
            unit: if s.x_name == X_CHILDREN.name {
                "ns per live process"
            } else {
                "ns per descriptor"
            }
            .to_string(),
            formula: format!(
                "(y at x={} - y at x={}) / {}",
                super::fmt_x(hi.0),
                super::fmt_x(lo.0),
                super::fmt_x(hi.0 - lo.0)
            ),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Live (not zombie) children of this process, from every /proc/<pid>/stat's ppid.
    fn live_children() -> Vec<(Pid, char)> {
        let me = sys::getpid();
        let mut v = Vec::new();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<Pid>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
                continue; // exited while we looked
            };
            // "pid (comm) state ppid ...": comm may hold spaces, so split after its ')'.
            let rest: Vec<&str> = stat
                .rsplit_once(')')
                .unwrap()
                .1
                .split_whitespace()
                .collect();
            let state = rest[0].chars().next().unwrap();
            if rest[1].parse::<Pid>().unwrap() == me && state != 'Z' {
                v.push((pid, state));
            }
        }
        v
    }

    /// Of `pids`, those still alive as our children.
    fn still_ours(pids: &[Pid]) -> Vec<Pid> {
        live_children()
            .into_iter()
            .map(|c| c.0)
            .filter(|p| pids.contains(p))
            .collect()
    }

    #[test]
    fn setup_makes_p_idle_children_and_teardown_leaves_none() {
        for op in [
            ProcOp::ForkWaitPid,
            ProcOp::ForkWaitAny,
            ProcOp::Kill,
            ProcOp::Compute,
        ] {
            let mut b = LiveChildren::new(op, 40);
            b.setup(&Ctx::default(), 1).unwrap();
            let pids = b.children.clone();
            assert_eq!(pids.len(), 40);
            // Idle: each reaches its read and sleeps there (a fresh child may still be on its
            // way, so look again for a while; never a timing assertion, only a bound).
            let mut ours: Vec<(Pid, char)> = Vec::new();
            for _ in 0..1000 {
                ours = live_children()
                    .into_iter()
                    .filter(|c| pids.contains(&c.0))
                    .collect();
                if ours.iter().all(|c| c.1 == 'S') {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            assert_eq!(ours.len(), 40, "{op:?}: {ours:?}");
            assert!(ours.iter().all(|c| c.1 == 'S'), "{op:?}: {ours:?}");
            // wait4(-1) would reap other tests' children in this multi-threaded process: its
            // loop is counted from the outside (tests/it/suite_scaling_proc.rs) instead.
            if op != ProcOp::ForkWaitAny {
                b.run(5).unwrap();
            }
            // The timed loop leaves the table as it found it.
            assert_eq!(still_ours(&pids).len(), 40, "{op:?}");
            b.teardown().unwrap();
            assert!(b.children.is_empty());
            assert!(
                still_ours(&pids).is_empty(),
                "{op:?}: left {:?}",
                still_ours(&pids)
            );
            // Reaped, not just killed: no /proc entry (no zombie) is left.
            for p in &pids {
                assert!(!std::path::Path::new(&format!("/proc/{p}")).exists(), "{p}");
            }
        }
    }

    /// Field `n` (1-based, as proc(5) counts) of /proc/PID/stat.
    fn stat_field(pid: Pid, n: usize) -> Option<String> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let rest = stat.rsplit_once(')')?.1;
        rest.split_whitespace().nth(n - 3).map(str::to_string)
    }

    /// The runnable curve's children really are runnable, at nice 19, and gone after
    /// teardown; the unit of work really runs (user time, no wait in the kernel), and its
    /// chain moves.
    #[test]
    fn spinning_children_stay_runnable_at_nice_19_and_the_work_is_done() {
        let mut b = LiveChildren::spinning(3);
        b.setup(&Ctx::default(), 1).unwrap();
        let pids = b.children.clone();
        assert_eq!(pids.len(), 3);
        // A fresh child may not have lowered its priority yet: look again for a while.
        let mut seen: Vec<(Option<String>, Option<String>)> = Vec::new();
        for _ in 0..1000 {
            seen = pids
                .iter()
                .map(|&p| (stat_field(p, 3), stat_field(p, 19)))
                .collect();
            if seen.iter().all(|(_, n)| n.as_deref() == Some("19")) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(
            seen.iter()
                .all(|(st, n)| st.as_deref() == Some("R") && n.as_deref() == Some("19")),
            "state and nice of the spinners: {seen:?}"
        );
        let before = b.chain.as_ref().unwrap().step_state();
        b.run(100).unwrap();
        let u0 = sys::usage_thread();
        b.run(20_000).unwrap();
        let u = sys::usage_thread().since(&u0);
        assert!(u.user_ns > 0, "{u:?}");
        // No system call to wait in: a stray wait (the test process's other threads hold its
        // memory map's lock while a stray fault needs it) is not one in a hundred units.
        assert!(
            u.nvcsw < 200,
            "the unit of work waited in the kernel: {u:?}"
        );
        assert_ne!(b.chain.as_ref().unwrap().step_state(), before);
        b.teardown().unwrap();
        assert!(still_ours(&pids).is_empty(), "left {:?}", still_ours(&pids));
        for p in &pids {
            assert!(!std::path::Path::new(&format!("/proc/{p}")).exists(), "{p}");
        }
        // The sleeping curve's children sleep (`setup_makes_p_idle_children...` checks the
        // state); its run needs setup's chain.
        let mut none = LiveChildren::new(ProcOp::Compute, 0);
        assert!(none.run(1).is_err());
    }

    #[test]
    fn dropping_without_teardown_reaps_the_children() {
        let mut b = LiveChildren::new(ProcOp::Kill, 5);
        b.setup(&Ctx::default(), 1).unwrap();
        let pids = b.children.clone();
        drop(b);
        assert!(still_ours(&pids).is_empty());
        for p in &pids {
            assert!(!std::path::Path::new(&format!("/proc/{p}")).exists(), "{p}");
        }
    }

    #[test]
    fn kill_checks_the_newest_child_and_needs_one() {
        let mut none = LiveChildren::new(ProcOp::Kill, 0);
        assert!(none.setup(&Ctx::default(), 1).is_err());
        let mut b = LiveChildren::new(ProcOp::Kill, 3);
        b.setup(&Ctx::default(), 1).unwrap();
        let newest = *b.children.last().unwrap();
        b.run(100).unwrap();
        b.teardown().unwrap();
        // The target is gone now, so the same check fails: it really looks the pid up.
        let e = sys::kill(newest, 0).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ESRCH));
    }

    #[test]
    fn every_scan_finds_exactly_the_one_ready_descriptor() {
        for scan in [Scan::Select, Scan::Poll, Scan::Epoll] {
            for n in [1, 100] {
                let mut b = ReadySet::new(scan, n);
                b.setup(&Ctx::default(), 1).unwrap();
                assert_eq!(b.fds.len() as u64, n);
                b.run(10).unwrap();
                b.teardown().unwrap();
            }
        }
    }

    #[test]
    fn a_broken_set_fails_the_run() {
        for scan in [Scan::Select, Scan::Poll, Scan::Epoll] {
            // Nothing ready: drain the ready eventfd's counter.
            let mut b = ReadySet::new(scan, 10);
            b.setup(&Ctx::default(), 1).unwrap();
            let mut c = [0u8; 8];
            sys::read(b.fds[9].as_raw_fd(), &mut c).unwrap();
            let e = b.run(1).unwrap_err().to_string();
            assert!(e.contains("found 0 ready"), "{scan:?}: {e}");
            // Two ready.
            let mut b = ReadySet::new(scan, 10);
            b.setup(&Ctx::default(), 1).unwrap();
            sys::write(b.fds[0].as_raw_fd(), &1u64.to_ne_bytes()).unwrap();
            let e = b.run(1).unwrap_err().to_string();
            assert!(e.contains("found 2 ready"), "{scan:?}: {e}");
        }
    }

    #[test]
    fn select_refuses_descriptors_beyond_fd_setsize() {
        let mut b = ReadySet::new(Scan::Select, libc::FD_SETSIZE as u64 + 10);
        let e = b.setup(&Ctx::default(), 1).unwrap_err().to_string();
        assert!(e.contains("FD_SETSIZE"), "{e}");
    }

    #[test]
    fn points_respect_the_limits() {
        let (cap, why) = child_cap();
        assert!(
            cap <= MOST_CHILDREN && why.contains(&cap.to_string()),
            "{why}"
        );
        for s in SERIES {
            for quick in [true, false] {
                let pts = (s.points)(quick);
                let xs: Vec<f64> = pts.iter().map(|p| p.x).collect();
                assert!(xs.windows(2).all(|w| w[0] < w[1]), "{}: {xs:?}", s.id);
                assert!(pts.iter().all(|p| p.iterations.is_some()), "{}", s.id);
                let most = *xs.last().unwrap();
                match s.id {
                    "scaling.select" => assert!(most < libc::FD_SETSIZE as f64),
                    "scaling.sched-runnable" => assert!(most <= MOST_RUNNABLE as f64),
                    "scaling.poll" | "scaling.epoll" if !quick => assert_eq!(most, 10_000.0),
                    // The cap follows the tasks running, which change between two looks.
                    "scaling.forkwait"
                    | "scaling.forkwait-any"
                    | "scaling.kill"
                    | "scaling.sched-sleeping" => {
                        assert!(
                            most <= MOST_CHILDREN as f64 && most % 100.0 == 0.0,
                            "{most}"
                        )
                    }
                    _ => {}
                }
                if quick {
                    assert!(most <= 100.0, "{}: quick goes to {most}", s.id);
                }
            }
        }
        // kill needs a target, fork+wait starts from an empty table.
        assert_eq!(kill_points(false)[0].x, 1.0);
        assert_eq!(forkwait_points(false)[0].x, 0.0);
    }
}
