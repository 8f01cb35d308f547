//! The `perfbench` suite: perf bench's scheduler and futex tests (#45), the same system calls
//! in the same shapes as Linux's tools/perf/bench/ sources, timed by sysperf's harness. It is
//! not perf: nothing here runs `perf bench`; `scripts/accuracy.sh` sets the two side by side.
//!
//! - `messaging-pipe`, `messaging-socket` (sched-messaging.c, hackbench): `groups` groups of
//!   20 sender and 20 receiver processes; every sender writes `loops` 100-byte messages to
//!   each of its group's 20 receivers over a pipe (`-p`) or a Unix stream socket pair; each
//!   receiver reads its 20 x `loops` messages. As perf, the processes are forked and wait,
//!   ready, before the clock (setup); the clock runs from the one byte that starts them to the
//!   last one reaped (run). The iterations are perf's `--nr_loops`, fixed at its default 100
//!   (the processes' start and reaping are in perf's time too), so y is perf's "Total time"
//!   over the messages sent: groups x 400 x 100. One part of perf's Total time is perf's own
//!   and not here: its children leave with exit(0) inside perf's binary, which runs the
//!   destructors of its 27 shared objects (glibc's _dl_fini, resolving their symbols lazily on
//!   the way) and unmaps 173 mappings each; these leave with _exit, 36 mappings of 4 shared
//!   objects. The messages are the same (strace -f -c, one group, 20 loops: 8,000 reads and
//!   8,000 writes of 100 bytes on both sides, one each per message), but between its start
//!   and its exit a perf child took 75 to 122 user page faults (perf record -e
//!   exceptions:page_fault_user, 4 groups, linux-perf 6.1), each of these 3. That exit is a
//!   constant per process, and a process has 1,000 messages at 100 loops whatever the groups:
//!   perf's Total time at `-l 1` (1,600 messages) was 0.119 s (pipes) and 0.168 s (sockets)
//!   where this benchmark's trial at 1 loop took 16 and 25 ms (one run each, load 1.7 to 4.5),
//!   0.6 to 0.9 us of perf's per-message figure at `-l 100`; so y reads 0.65 to 0.82 of perf's
//!   Total time over its messages, and `scripts/accuracy.sh` compares it with perf's slope
//!   (Total time at `-l 100` less at `-l 1`, over the messages between them) instead.
//! - `futex-hash` (futex-hash.c): each thread calls FUTEX_WAIT_PRIVATE on its own 1024 futex
//!   words in turn, with a value they never hold, so every call fails with EAGAIN after the
//!   hashing and the bucket lock (the thread checks that it does). y is operations per second
//!   of one thread, as perf's "Averaged N operations/sec"; the threads run the same count of
//!   calls and the clock stops with the last, where perf runs them all for a fixed time.
//! - `futex-wake` (futex-wake.c): the threads block on one futex word (checked in /proc
//!   before the clock, then 100 ms asleep as perf, which only sleeps); the clock runs while FUTEX_WAKE wakes them
//!   one per call until all are woken. y is the time to wake them all: perf's "Wokeup N of N
//!   threads in X ms".
//! - `futex-wake-parallel` (futex-wake-parallel.c): as wake, with as many waking threads as
//!   blocked ones (perf's default), each waking one; the clock runs from their release to the
//!   last one's end. perf prints each waker's own time of its one call, averaged, which
//!   leaves out the release and the wakers' overlap: sysperf's figure is the whole parallel
//!   wake, larger.
//! - `futex-requeue` (futex-requeue.c): the threads block on one word; the clock runs while
//!   FUTEX_CMP_REQUEUE moves them, one per call, to a second word without waking any; the
//!   wake from the second word afterwards (which must find them all there) is untimed.
//! - `futex-lock-pi` (futex-lock-pi.c): every thread takes one PI futex (FUTEX_LOCK_PI),
//!   sleeps 1 us (perf's usleep(1), which the kernel's timer slack makes about 50 us), and
//!   releases it (FUTEX_UNLOCK_PI). y is lock-unlock pairs per second of one thread.
//!
//! Placement is perf's, not `--placement`: the futex tests' threads are pinned round-robin
//! to the online CPUs (thread i to the i-th, as perf pins them), the messaging processes may
//! run on any online CPU (perf leaves them to the scheduler); the worker's own thread (the
//! one that wakes, requeues or starts the others) stays where the harness put it. The
//! futexes are private, perf's default (`-S` makes them shared).

use super::{no_derived, no_preflight, Axis, Point, SeriesSpec, Suite};
use crate::bench::{Benchmark, Ctx, Shape};
use crate::error::BenchError;
use crate::model::YKind;
use crate::sys::{self, Pid};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

pub static SUITE: Suite = Suite {
    name: "perfbench",
    title: "perf bench's scheduler and futex tests: sched messaging over pipes and sockets, futex hash, wake, wake-parallel, requeue and lock-pi",
    paper: "perf bench (Linux tools/perf/bench/): sched-messaging.c (hackbench), futex-hash.c, futex-wake.c, futex-wake-parallel.c, futex-requeue.c, futex-lock-pi.c; compared with `perf bench` by scripts/accuracy.sh",
    series,
    preflight: no_preflight,
    derive: no_derived,
};

/// perf's DATASIZE: the bytes of one message.
pub const DATASIZE: usize = 100;
/// perf's num_fds: senders, and receivers, per group.
pub const PER_GROUP: u64 = 20;
/// perf's default nr_loops (`-l`): the messages every sender sends each receiver.
pub const MESSAGING_LOOPS: u64 = 100;
/// perf's nfutexes: the futex words of one hash thread.
pub const HASH_FUTEXES: usize = 1024;
/// The value perf's hash threads wait for, which their zeroed words never hold.
const HASH_EXPECTED: u32 = 1234;
/// How long setup waits for the futex threads to block before it gives up.
const BLOCK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);
/// perf's pause between blocking its threads and waking them (usleep(100000)).
const PERF_SETTLE: std::time::Duration = std::time::Duration::from_millis(100);

const GROUPS: Axis = Axis {
    name: "groups (20 senders and 20 receivers each)",
    unit: "groups",
    log: false,
};
const THREADS: Axis = Axis {
    name: "threads",
    unit: "threads",
    log: false,
};

fn messaging_points(quick: bool) -> Vec<Point> {
    let groups: &[u64] = if quick { &[1] } else { &[1, 2, 4, 10] };
    groups
        .iter()
        .map(|&g| Point {
            ops_per_iteration: g * PER_GROUP * PER_GROUP,
            // perf's count, not a calibrated one: starting and reaping the processes costs
            // tens of milliseconds whatever the count, inside perf's "Total time" too, so a
            // figure per message is perf's only over as many messages as perf sends.
            iterations: Some(MESSAGING_LOOPS),
            ..Point::new(g as f64, g)
        })
        .collect()
}

/// Points of a test whose threads do a calibrated count of operations each.
fn rate_points(quick: bool, full: &[u64]) -> Vec<Point> {
    let threads: &[u64] = if quick { &[2] } else { full };
    threads.iter().map(|&t| Point::new(t as f64, t)).collect()
}

/// Points of a test that blocks its threads once per trial and times one round.
fn round_points(quick: bool) -> Vec<Point> {
    let threads: &[u64] = if quick { &[2] } else { &[2, 4, 8, 16] };
    threads
        .iter()
        .map(|&t| Point {
            // The threads block once, in setup: one round per trial, as one of perf's runs.
            iterations: Some(1),
            ..Point::new(t as f64, t)
        })
        .collect()
}

static MESSAGING_PIPE: SeriesSpec = SeriesSpec {
    id: "perfbench.messaging-pipe",
    figure: "perfbench.messaging",
    figure_title: "perf bench sched messaging: time per 100-byte message, 20 senders to 20 receivers per group",
    curve: "pipes (perf bench sched messaging -p)",
    paper: "perf bench sched messaging -p -g GROUPS (tools/perf/bench/sched-messaging.c; -l 100, its default): \"Total time\" over GROUPS x 400 x 100 messages",
    today: "GROUPS x 40 forked processes; every sender writes 100 100-byte messages (perf's default loops, fixed) to each of its group's 20 receivers, one pipe per receiver; timed from the start byte to the last process reaped (they leave with _exit; perf's exit(0) through its shared objects is in its Total time); stored: ns per message",
    x: GROUPS,
    y: YKind::CostNs,
    unit: "message",
    shape: Shape::Single,
    points: messaging_points,
    make: |g| Box::new(Messaging::new(Channel::Pipe, g)),
    paper_points: &[],
    paper_system: None,
    printed: None,
};

static MESSAGING_SOCKET: SeriesSpec = SeriesSpec {
    id: "perfbench.messaging-socket",
    figure: "perfbench.messaging",
    figure_title: "perf bench sched messaging: time per 100-byte message, 20 senders to 20 receivers per group",
    curve: "Unix stream sockets (perf bench sched messaging)",
    paper: "perf bench sched messaging -g GROUPS (tools/perf/bench/sched-messaging.c, socketpair(AF_UNIX, SOCK_STREAM); -l 100, its default): \"Total time\" over GROUPS x 400 x 100 messages",
    today: "as messaging-pipe, over one AF_UNIX stream socket pair per receiver",
    x: GROUPS,
    y: YKind::CostNs,
    unit: "message",
    shape: Shape::Single,
    points: messaging_points,
    make: |g| Box::new(Messaging::new(Channel::Socket, g)),
    paper_points: &[],
    paper_system: None,
    printed: None,
};

static FUTEX_HASH: SeriesSpec = SeriesSpec {
    id: "perfbench.futex-hash",
    figure: "perfbench.futex-rate",
    figure_title: "perf bench futex hash and lock-pi: operations per second of one thread",
    curve: "hash (FUTEX_WAIT that fails with EAGAIN)",
    paper: "perf bench futex hash -t THREADS (tools/perf/bench/futex-hash.c): \"Averaged N operations/sec\" of each thread, 1024 private futexes per thread",
    today: "THREADS threads pinned round-robin to the online CPUs, each calling FUTEX_WAIT_PRIVATE on its 1024 zeroed words in turn with the value 1234 (every call must fail with EAGAIN); stored: operations per second of one thread",
    x: THREADS,
    y: YKind::OpsPerSec,
    unit: "futex call",
    shape: Shape::Single,
    points: |quick| rate_points(quick, &[1, 2, 4, 8]),
    make: |t| Box::new(Rate::new(RateOp::Hash, t)),
    paper_points: &[],
    paper_system: None,
    printed: None,
};

static FUTEX_LOCK_PI: SeriesSpec = SeriesSpec {
    id: "perfbench.futex-lock-pi",
    figure: "perfbench.futex-rate",
    figure_title: "perf bench futex hash and lock-pi: operations per second of one thread",
    curve: "lock-pi (FUTEX_LOCK_PI, usleep(1), FUTEX_UNLOCK_PI on one word)",
    paper: "perf bench futex lock-pi -t THREADS (tools/perf/bench/futex-lock-pi.c): \"Averaged N operations/sec\" of each thread, one shared PI futex",
    today: "THREADS threads pinned round-robin to the online CPUs, each taking the one PI futex with FUTEX_LOCK_PI, sleeping 1 us and releasing it with FUTEX_UNLOCK_PI; stored: lock-unlock pairs per second of one thread",
    x: THREADS,
    y: YKind::OpsPerSec,
    unit: "lock-unlock pair",
    shape: Shape::Single,
    points: |quick| rate_points(quick, &[1, 2, 4]),
    make: |t| Box::new(Rate::new(RateOp::LockPi, t)),
    paper_points: &[],
    paper_system: None,
    printed: None,
};

static FUTEX_WAKE: SeriesSpec = SeriesSpec {
    id: "perfbench.futex-wake",
    figure: "perfbench.futex-wake",
    figure_title: "perf bench futex wake, wake-parallel and requeue: time to wake (or requeue) all the blocked threads",
    curve: "wake (one FUTEX_WAKE per thread)",
    paper: "perf bench futex wake -t THREADS (tools/perf/bench/futex-wake.c): \"Wokeup N of N threads in X ms\", one per call",
    today: "THREADS threads pinned round-robin to the online CPUs block in FUTEX_WAIT_PRIVATE on one word (seen in /proc before the clock); timed: FUTEX_WAKE of one at a time until all are woken; stored: ns to wake them all",
    x: THREADS,
    y: YKind::CostNs,
    unit: "wake of all threads",
    shape: Shape::Single,
    points: round_points,
    make: |t| Box::new(Round::new(RoundOp::Wake, t)),
    paper_points: &[],
    paper_system: None,
    printed: None,
};

static FUTEX_WAKE_PARALLEL: SeriesSpec = SeriesSpec {
    id: "perfbench.futex-wake-parallel",
    figure: "perfbench.futex-wake",
    figure_title: "perf bench futex wake, wake-parallel and requeue: time to wake (or requeue) all the blocked threads",
    curve: "wake-parallel (one waking thread per blocked thread)",
    paper: "perf bench futex wake-parallel -t THREADS (tools/perf/bench/futex-wake-parallel.c): as many wakers as blocked threads, each waking one; perf prints each waker's own time, averaged",
    today: "THREADS threads block as in futex-wake; THREADS waking threads, made before the clock, are released together and each wakes one; timed: from their release to the last one's end (the whole parallel wake, not perf's per-waker average); stored: ns to wake them all",
    x: THREADS,
    y: YKind::CostNs,
    unit: "wake of all threads",
    shape: Shape::Single,
    points: round_points,
    make: |t| Box::new(Round::new(RoundOp::WakeParallel, t)),
    paper_points: &[],
    paper_system: None,
    printed: None,
};

static FUTEX_REQUEUE: SeriesSpec = SeriesSpec {
    id: "perfbench.futex-requeue",
    figure: "perfbench.futex-wake",
    figure_title: "perf bench futex wake, wake-parallel and requeue: time to wake (or requeue) all the blocked threads",
    curve: "requeue (one FUTEX_CMP_REQUEUE per thread, none woken)",
    paper: "perf bench futex requeue -t THREADS (tools/perf/bench/futex-requeue.c): \"Requeued N of N threads in X ms\", one per call",
    today: "THREADS threads block as in futex-wake; timed: FUTEX_CMP_REQUEUE moving one at a time to a second word, waking none, until all are moved; the wake from the second word (which must find them all) is after the clock; stored: ns to requeue them all",
    x: THREADS,
    y: YKind::CostNs,
    unit: "requeue of all threads",
    shape: Shape::Single,
    points: round_points,
    make: |t| Box::new(Round::new(RoundOp::Requeue, t)),
    paper_points: &[],
    paper_system: None,
    printed: None,
};

fn series() -> Vec<&'static SeriesSpec> {
    vec![
        &MESSAGING_PIPE,
        &MESSAGING_SOCKET,
        &FUTEX_HASH,
        &FUTEX_LOCK_PI,
        &FUTEX_WAKE,
        &FUTEX_WAKE_PARALLEL,
        &FUTEX_REQUEUE,
    ]
}

/// The CPUs perf spreads its threads over: the online ones (perf_cpu_map__new(NULL)).
fn perf_cpus() -> Vec<u32> {
    let cpus = crate::profile::system::online_cpus();
    if cpus.is_empty() {
        vec![0]
    } else {
        cpus
    }
}

// ---------------------------------------------------------------------------------------
// sched messaging

#[derive(Clone, Copy)]
enum Channel {
    Pipe,
    Socket,
}

impl Channel {
    /// perf's fdpair(): (read end, write end).
    fn pair(self) -> Result<(OwnedFd, OwnedFd), BenchError> {
        match self {
            Channel::Pipe => sys::pipe().map_err(BenchError::sys("pipe")),
            Channel::Socket => sys::stream_pair().map_err(BenchError::sys("socketpair")),
        }
    }
}

struct Messaging {
    channel: Channel,
    groups: u64,
    /// Every sender and receiver, until reaped.
    children: Vec<Pid>,
    /// The write end of the start channel: one byte starts every process.
    wake_tx: Option<OwnedFd>,
    /// What the reaped children used, together.
    reaped: crate::model::Usage,
}

impl Messaging {
    fn new(channel: Channel, groups: u64) -> Messaging {
        Messaging {
            channel,
            groups,
            children: Vec::new(),
            wake_tx: None,
            reaped: crate::model::Usage::default(),
        }
    }
}

/// perf's ready(): says so on `ready_tx`, then waits until `wake_rx` is readable.
fn ready(ready_tx: RawFd, wake_rx: RawFd) -> Result<(), ()> {
    if !matches!(sys::write(ready_tx, &[0]), Ok(1)) {
        return Err(());
    }
    loop {
        match sys::poll_readable(wake_rx, -1) {
            Ok(true) => return Ok(()),
            Ok(false) => continue,
            Err(_) => return Err(()),
        }
    }
}

/// perf's sender(): `loops` messages down each of `out`, in turn; the exit code.
fn sender(out: &[RawFd], ready_tx: RawFd, wake_rx: RawFd, loops: u64) -> i32 {
    if ready(ready_tx, wake_rx).is_err() {
        return 1;
    }
    let data = [0x5au8; DATASIZE];
    for _ in 0..loops {
        for &fd in out {
            let mut done = 0;
            while done < DATASIZE {
                match sys::write(fd, &data[done..]) {
                    Ok(n) => done += n,
                    Err(_) => return 1,
                }
            }
        }
    }
    0
}

/// perf's receiver(): reads `packets` messages of DATASIZE bytes; the exit code (1 when the
/// channel ends early).
fn receiver(rx: RawFd, ready_tx: RawFd, wake_rx: RawFd, packets: u64) -> i32 {
    if ready(ready_tx, wake_rx).is_err() {
        return 1;
    }
    let mut data = [0u8; DATASIZE];
    for _ in 0..packets {
        let mut done = 0;
        while done < DATASIZE {
            match sys::read(rx, &mut data[done..]) {
                Ok(0) | Err(_) => return 1,
                Ok(n) => done += n,
            }
        }
    }
    0
}

impl Benchmark for Messaging {
    fn setup(&mut self, ctx: &Ctx, iterations: u64) -> Result<(), BenchError> {
        let cpus = perf_cpus();
        let (ready_rx, ready_tx) = Channel::Pipe.pair()?;
        let (wake_rx, wake_tx) = Channel::Pipe.pair()?;
        let (ready_w, wake_r) = (ready_tx.as_raw_fd(), wake_rx.as_raw_fd());
        let spawn =
            |name: &str, body: &dyn Fn() -> i32| super::bbn::spawn(ctx, name, Some(&cpus), body);
        for _ in 0..self.groups {
            // As perf's group(): a channel and a receiver per receiver, then the senders,
            // each holding every channel's write end.
            let mut outs = Vec::with_capacity(PER_GROUP as usize);
            for _ in 0..PER_GROUP {
                let (rx, tx) = self.channel.pair()?;
                let rx_fd = rx.as_raw_fd();
                let pid = spawn("sysperf-msg-rx", &|| {
                    receiver(rx_fd, ready_w, wake_r, PER_GROUP * iterations)
                })?;
                self.children.push(pid);
                outs.push(tx);
            }
            let out_fds: Vec<RawFd> = outs.iter().map(|f| f.as_raw_fd()).collect();
            for _ in 0..PER_GROUP {
                let pid = spawn("sysperf-msg-tx", &|| {
                    sender(&out_fds, ready_w, wake_r, iterations)
                })?;
                self.children.push(pid);
            }
        }
        // Only the children hold the ready channel now, so a child that dies before it said
        // it was ready ends the wait below with EOF instead of a hang.
        drop(ready_tx);
        drop(wake_rx);
        let mut byte = [0u8];
        for _ in 0..self.children.len() {
            match sys::read(ready_rx.as_raw_fd(), &mut byte) {
                Ok(1) => {}
                Ok(_) => {
                    return Err(BenchError::Protocol(
                        "a messaging process ended before it was ready".into(),
                    ))
                }
                Err(e) => {
                    return Err(BenchError::Sys {
                        op: "read",
                        source: e,
                    })
                }
            }
        }
        self.wake_tx = Some(wake_tx);
        Ok(())
    }

    fn run(&mut self, _iterations: u64) -> Result<(), BenchError> {
        let wake = self
            .wake_tx
            .as_ref()
            .ok_or_else(|| BenchError::Protocol("no start channel".into()))?;
        // One byte, never read: every process polls the channel and sees it readable.
        if sys::write(wake.as_raw_fd(), &[0]).map_err(BenchError::sys("write"))? != 1 {
            return Err(BenchError::Protocol("short write of the start byte".into()));
        }
        // As perf, the clock stops when the last of them is reaped.
        while let Some(&pid) = self.children.last() {
            let used = crate::bench::ipc::reap(pid)?;
            self.reaped = self.reaped.plus(&used);
            self.children.pop();
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        super::bbn::kill_and_reap(&mut self.children);
        self.wake_tx = None;
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// futex threads

/// A start line for threads made in setup: 0 closed, [`GO`] open, [`ABORT`] when setup or a
/// run failed and the threads must leave without working.
struct Gate(AtomicU32);

const GO: u32 = 1;
const ABORT: u32 = 2;

impl Gate {
    fn new() -> Gate {
        Gate(AtomicU32::new(0))
    }

    /// Waits until the gate opens: true for [`GO`], false for [`ABORT`].
    fn wait(&self) -> Result<bool, String> {
        loop {
            match self.0.load(Ordering::Acquire) {
                0 => match sys::futex_wait_raw(&self.0, 0) {
                    Ok(()) => {}
                    Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EINTR)) => {}
                    Err(e) => return Err(format!("futex wait on the start line: {e}")),
                },
                GO => return Ok(true),
                _ => return Ok(false),
            }
        }
    }

    fn open(&self, to: u32) -> Result<(), BenchError> {
        self.0.store(to, Ordering::Release);
        sys::futex_wake_n(&self.0, u32::MAX).map_err(BenchError::sys("futex(FUTEX_WAKE)"))?;
        Ok(())
    }
}

/// Pins the calling thread to the `i`-th of `cpus`, round-robin, as perf pins its threads; a
/// failure (a CPU this process may not use) leaves it where it is.
fn pin(cpus: &[u32], i: usize) {
    let _ = sys::set_affinity(&[cpus[i % cpus.len()]]);
}

type Worker = JoinHandle<Result<(), String>>;

fn spawn_thread(
    name: &str,
    body: impl FnOnce() -> Result<(), String> + Send + 'static,
) -> Result<Worker, BenchError> {
    std::thread::Builder::new()
        .name(name.into())
        .stack_size(64 << 10)
        .spawn(body)
        .map_err(BenchError::sys("pthread_create"))
}

/// Joins every thread: the first failure, if any.
fn join_all(threads: &mut Vec<Worker>) -> Result<(), BenchError> {
    let mut first = Ok(());
    for h in threads.drain(..) {
        let r = match h.join() {
            Ok(r) => r.map_err(BenchError::Protocol),
            Err(_) => Err(BenchError::Protocol("a benchmark thread panicked".into())),
        };
        if first.is_ok() {
            first = r;
        }
    }
    first
}

#[derive(Clone, Copy)]
enum RateOp {
    Hash,
    LockPi,
}

/// Threads that each do a calibrated count of operations once the gate opens.
struct Rate {
    op: RateOp,
    threads: u64,
    gate: Arc<Gate>,
    workers: Vec<Worker>,
}

impl Rate {
    fn new(op: RateOp, threads: u64) -> Rate {
        Rate {
            op,
            threads,
            gate: Arc::new(Gate::new()),
            workers: Vec::new(),
        }
    }
}

/// perf's hash worker: FUTEX_WAIT on its words in turn, every call expected to fail with
/// EAGAIN ("We want the futex calls to fail in order to stress the hashing of uaddr").
fn hash_worker(words: &[AtomicU32], calls: u64) -> Result<(), String> {
    for k in 0..calls {
        match sys::futex_wait_raw(&words[k as usize % words.len()], HASH_EXPECTED) {
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {}
            Ok(()) => return Err("a futex wait that should fail with EAGAIN slept".into()),
            Err(e) => return Err(format!("futex wait: {e} (expected EAGAIN)")),
        }
    }
    Ok(())
}

/// perf's lock-pi worker: lock, usleep(1), unlock, `pairs` times.
fn lock_pi_worker(lock: &AtomicU32, pairs: u64) -> Result<(), String> {
    for _ in 0..pairs {
        loop {
            match sys::futex_lock_pi(lock) {
                Ok(()) => break,
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) => return Err(format!("FUTEX_LOCK_PI: {e}")),
            }
        }
        std::thread::sleep(std::time::Duration::from_micros(1));
        sys::futex_unlock_pi(lock).map_err(|e| format!("FUTEX_UNLOCK_PI: {e}"))?;
    }
    Ok(())
}

impl Benchmark for Rate {
    fn setup(&mut self, _ctx: &Ctx, iterations: u64) -> Result<(), BenchError> {
        let cpus = Arc::new(perf_cpus());
        // lock-pi's one word, shared by every thread (perf's global_futex).
        let lock = Arc::new(AtomicU32::new(0));
        for i in 0..self.threads as usize {
            let (gate, cpus, lock, op) = (self.gate.clone(), cpus.clone(), lock.clone(), self.op);
            // perf callocs each hash thread's words before it makes the thread.
            let words: Vec<AtomicU32> = match op {
                RateOp::Hash => (0..HASH_FUTEXES).map(|_| AtomicU32::new(0)).collect(),
                RateOp::LockPi => Vec::new(),
            };
            let h = spawn_thread("sysperf-futex", move || {
                pin(&cpus, i);
                if !gate.wait()? {
                    return Ok(());
                }
                match op {
                    RateOp::Hash => hash_worker(&words, iterations),
                    RateOp::LockPi => lock_pi_worker(&lock, iterations),
                }
            });
            match h {
                Ok(h) => self.workers.push(h),
                Err(e) => {
                    let _ = self.teardown();
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    fn run(&mut self, _iterations: u64) -> Result<(), BenchError> {
        self.gate.open(GO)?;
        join_all(&mut self.workers)
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        if !self.workers.is_empty() {
            let _ = self.gate.open(ABORT);
            let _ = join_all(&mut self.workers);
        }
        Ok(())
    }
}

#[derive(Clone, Copy, PartialEq)]
enum RoundOp {
    Wake,
    WakeParallel,
    Requeue,
}

/// The words the blocked threads wait on: `first`, and for requeue `second`.
struct Words {
    first: AtomicU32,
    second: AtomicU32,
}

/// Threads blocked on a futex in setup, then woken (or requeued) all at once in one timed
/// round.
struct Round {
    op: RoundOp,
    threads: u64,
    words: Arc<Words>,
    blocked: Vec<Worker>,
    /// wake-parallel's waking threads, each returning through `woken` how many it woke.
    wakers: Vec<Worker>,
    woken: Arc<AtomicU32>,
    gate: Arc<Gate>,
    /// Whether the timed round ran to its end (teardown then checks the requeue's result).
    done: bool,
}

impl Round {
    fn new(op: RoundOp, threads: u64) -> Round {
        Round {
            op,
            threads,
            words: Arc::new(Words {
                first: AtomicU32::new(0),
                second: AtomicU32::new(0),
            }),
            blocked: Vec::new(),
            wakers: Vec::new(),
            woken: Arc::new(AtomicU32::new(0)),
            gate: Arc::new(Gate::new()),
            done: false,
        }
    }

    fn make_threads(&mut self) -> Result<(), BenchError> {
        let cpus = Arc::new(perf_cpus());
        let tids: Arc<Vec<AtomicI32>> =
            Arc::new((0..self.threads).map(|_| AtomicI32::new(0)).collect());
        for i in 0..self.threads as usize {
            let (words, tids, cpus) = (self.words.clone(), tids.clone(), cpus.clone());
            self.blocked.push(spawn_thread("sysperf-futex", move || {
                pin(&cpus, i);
                tids[i].store(sys::gettid(), Ordering::Release);
                // perf's blocked worker: wait while the word is 0; woken (or, requeued,
                // woken from the second word) it returns. EAGAIN: teardown set the word
                // before this thread got to wait.
                loop {
                    match sys::futex_wait_raw(&words.first, 0) {
                        Ok(()) => return Ok(()),
                        Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                        Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => return Ok(()),
                        Err(e) => return Err(format!("futex wait: {e}")),
                    }
                }
            })?);
        }
        if self.op == RoundOp::WakeParallel {
            // Each waker wakes threads / wakers = 1 (perf's default: as many as blocked).
            // perf makes them with the attribute that pinned the last blocked thread, so
            // they all run on that thread's CPU.
            let last = self.threads as usize - 1;
            for _ in 0..self.threads {
                let (words, gate, woken, cpus) = (
                    self.words.clone(),
                    self.gate.clone(),
                    self.woken.clone(),
                    cpus.clone(),
                );
                self.wakers.push(spawn_thread("sysperf-waker", move || {
                    pin(&cpus, last);
                    if !gate.wait()? {
                        return Ok(());
                    }
                    let n = sys::futex_wake_n(&words.first, 1)
                        .map_err(|e| format!("futex wake: {e}"))?;
                    woken.fetch_add(n as u32, Ordering::AcqRel);
                    Ok(())
                })?);
            }
        }
        // Every thread asleep in the futex before the clock (perf sleeps 100 ms and trusts
        // that they are).
        let deadline = std::time::Instant::now() + BLOCK_TIMEOUT;
        for t in tids.iter() {
            loop {
                let tid = t.load(Ordering::Acquire);
                if tid != 0
                    && sys::thread_waits_on_futex(tid, &self.words.first)
                        .map_err(BenchError::sys("read /proc/self/task"))?
                {
                    break;
                }
                if std::time::Instant::now() > deadline {
                    return Err(BenchError::Protocol(format!(
                        "a thread did not block on the futex within {} s",
                        BLOCK_TIMEOUT.as_secs()
                    )));
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        // Then perf's usleep(100000): its timed loop starts after 100 ms asleep, with what
        // that leaves in the caches, and so does this one.
        std::thread::sleep(PERF_SETTLE);
        Ok(())
    }
}

impl Benchmark for Round {
    fn setup(&mut self, _ctx: &Ctx, iterations: u64) -> Result<(), BenchError> {
        if iterations != 1 {
            return Err(BenchError::Protocol(format!(
                "the threads block once per trial: one round, not {iterations}"
            )));
        }
        if let Err(e) = self.make_threads() {
            let _ = self.teardown();
            return Err(e);
        }
        Ok(())
    }

    fn run(&mut self, _iterations: u64) -> Result<(), BenchError> {
        let n = self.threads as usize;
        let words = &self.words;
        let mut moved = 0;
        match self.op {
            RoundOp::Wake => {
                while moved < n {
                    moved += sys::futex_wake_n(&words.first, 1)
                        .map_err(BenchError::sys("futex(FUTEX_WAKE)"))?;
                }
            }
            RoundOp::Requeue => {
                while moved < n {
                    moved += sys::futex_cmp_requeue(&words.first, 0, &words.second, 0, 1)
                        .map_err(BenchError::sys("futex(FUTEX_CMP_REQUEUE)"))?;
                }
            }
            RoundOp::WakeParallel => {
                self.gate.open(GO)?;
                join_all(&mut self.wakers)?;
                moved = self.woken.load(Ordering::Acquire) as usize;
                if moved != n {
                    return Err(BenchError::Protocol(format!(
                        "the wakers woke {moved} of {n} threads"
                    )));
                }
            }
        }
        self.done = true;
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        let mut result = Ok(());
        if self.op == RoundOp::Requeue && self.done {
            // Every thread must be waiting on the second word now, none woken.
            result = match sys::futex_wake_n(&self.words.second, u32::MAX) {
                Ok(n) if n == self.threads as usize => Ok(()),
                Ok(n) => Err(BenchError::Protocol(format!(
                    "{n} of {} threads were on the second futex after the requeue",
                    self.threads
                ))),
                Err(e) => Err(BenchError::Sys {
                    op: "futex(FUTEX_WAKE)",
                    source: e,
                }),
            };
        }
        let _ = self.gate.open(ABORT);
        let _ = join_all(&mut self.wakers);
        // Whatever still waits (a failed run), on either word, leaves now.
        self.words.first.store(1, Ordering::Release);
        self.words.second.store(1, Ordering::Release);
        let _ = sys::futex_wake_n(&self.words.first, u32::MAX);
        let _ = sys::futex_wake_n(&self.words.second, u32::MAX);
        let joined = join_all(&mut self.blocked);
        result.and(joined)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn my_children() -> usize {
        std::fs::read_to_string("/proc/thread-self/children")
            .unwrap()
            .split_whitespace()
            .count()
    }

    #[test]
    fn the_suite_lists_every_perf_bench_test_and_the_file_it_follows() {
        let ids: Vec<&str> = series().iter().map(|s| s.id).collect();
        for (id, file) in [
            ("perfbench.messaging-pipe", "sched-messaging.c"),
            ("perfbench.messaging-socket", "sched-messaging.c"),
            ("perfbench.futex-hash", "futex-hash.c"),
            ("perfbench.futex-wake", "futex-wake.c"),
            ("perfbench.futex-wake-parallel", "futex-wake-parallel.c"),
            ("perfbench.futex-requeue", "futex-requeue.c"),
            ("perfbench.futex-lock-pi", "futex-lock-pi.c"),
        ] {
            assert!(ids.contains(&id), "{id}");
            let s = super::super::find_series(id).unwrap();
            assert!(s.paper.contains(file), "{id}: {}", s.paper);
            assert!(SUITE.paper.contains(file), "{file}");
        }
        // A message point's operations are every message one loop sends: 20 x 20 per group.
        let p = messaging_points(false);
        assert_eq!(
            p.iter().map(|p| p.x).collect::<Vec<_>>(),
            [1.0, 2.0, 4.0, 10.0]
        );
        assert_eq!(p[3].ops_per_iteration, 10 * 400);
        assert!(p.iter().all(|p| p.iterations == Some(MESSAGING_LOOPS)));
        assert!(round_points(true).iter().all(|p| p.iterations == Some(1)));
    }

    #[test]
    fn messaging_forks_its_groups_and_every_message_gets_through() {
        for channel in [Channel::Pipe, Channel::Socket] {
            let mut b = Messaging::new(channel, 1);
            b.setup(&Ctx::default(), 50).unwrap();
            // Every sender and receiver is forked and ready before the clock.
            assert_eq!(b.children.len(), 40);
            assert!(my_children() >= 40);
            b.run(50).unwrap();
            assert!(b.children.is_empty());
            // Each of the 40 blocked at least once (in poll, waiting for the start byte) and
            // exited with 0, the receivers having read 20 x 50 whole messages each.
            assert!(b.reaped.nvcsw >= 40, "{:?}", b.reaped);
            // The receivers read 40 x 50 x 100 bytes each side: CPU time, not nothing.
            assert!(b.reaped.cpu_ns() > 0, "{:?}", b.reaped);
            b.teardown().unwrap();
        }
    }

    #[test]
    fn messaging_teardown_kills_what_a_failed_run_left() {
        let mut b = Messaging::new(Channel::Pipe, 1);
        b.setup(&Ctx::default(), 1_000_000).unwrap();
        assert_eq!(b.children.len(), 40);
        // Never started: teardown kills and reaps them all.
        b.teardown().unwrap();
        assert!(b.children.is_empty());
    }

    #[test]
    fn hash_calls_are_system_calls_that_fail_with_eagain() {
        // One worker on this thread: 100,000 futex calls (hash_worker fails on any answer but
        // EAGAIN) cost this thread milliseconds of CPU, where a loop without them costs
        // about 0.1 ms.
        let words: Vec<AtomicU32> = (0..HASH_FUTEXES).map(|_| AtomicU32::new(0)).collect();
        let before = sys::usage_thread();
        hash_worker(&words, 100_000).unwrap();
        let used = sys::usage_thread().since(&before);
        assert!(used.cpu_ns() > 5_000_000, "{used:?}");
        // The benchmark's threads do the same, started together and joined.
        let mut b = Rate::new(RateOp::Hash, 2);
        b.setup(&Ctx::default(), 20_000).unwrap();
        b.run(20_000).unwrap();
        b.teardown().unwrap();
        assert!(b.workers.is_empty());
    }

    #[test]
    fn lock_pi_sleeps_once_per_pair_and_leaves_the_lock_free() {
        // usleep(1) blocks: a voluntary switch per pair; the lock is free afterwards.
        let lock = AtomicU32::new(0);
        let before = sys::usage_thread();
        lock_pi_worker(&lock, 200).unwrap();
        let used = sys::usage_thread().since(&before);
        assert!(used.nvcsw >= 200, "{used:?}");
        assert_eq!(lock.load(Ordering::Relaxed), 0);
        let mut b = Rate::new(RateOp::LockPi, 2);
        b.setup(&Ctx::default(), 200).unwrap();
        b.run(200).unwrap();
        b.teardown().unwrap();
    }

    #[test]
    fn wake_and_requeue_move_every_blocked_thread() {
        for op in [RoundOp::Wake, RoundOp::WakeParallel, RoundOp::Requeue] {
            let mut b = Round::new(op, 4);
            b.setup(&Ctx::default(), 1).unwrap();
            // All four asleep on the first word (make_threads saw each in /proc).
            b.run(1).unwrap();
            // Requeue's teardown wakes the second word and fails unless all four were there.
            b.teardown().unwrap();
            assert!(b.blocked.is_empty() && b.wakers.is_empty());
        }
        // A requeue that never ran leaves them on the first word: teardown still frees them.
        let mut b = Round::new(RoundOp::Requeue, 3);
        b.setup(&Ctx::default(), 1).unwrap();
        b.teardown().unwrap();
        assert!(b.blocked.is_empty());
        assert!(Round::new(RoundOp::Wake, 2)
            .setup(&Ctx::default(), 2)
            .is_err());
    }
}
