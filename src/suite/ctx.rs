//! The `ctx` suite: context switching against the number of processes and their working set,
//! lmbench's `lat_ctx -s SIZE N...` (issue #45 item 9), the papers' csw (two processes, no
//! data) extended as lmbench's scripts/lmbench runs it: 2, 4, 8, 16, 24, 32, 64 and 96
//! processes, each touching 0, 4, 8, 16, 32 or 64 KiB of its own data per switch.
//!
//! As lmbench's `src/lat_ctx.c`: N processes in a ring of N pipes, the test process first;
//! process i reads a 4-byte token from pipe i-1, sums its SIZE bytes (lmbench's `bread`: the
//! 64-bit words added), and writes the token to pipe i. The test process writes pipe 0, reads
//! pipe N-1 and sums its own data: one iteration is one trip round the ring, N switches, and
//! a point's y is the trip's wall time over N. Every process of the ring inherits the test
//! process's CPU (one CPU unless `--placement free`), so each hand-over is a context switch,
//! as lmbench's single-CPU figures assume (run lmbench under `taskset -c CPU` to compare).
//!
//! lmbench prints the time per switch less the overhead of the work a switch brings with it
//! but is not one: a pipe write and read and the sum of SIZE bytes, measured in one process
//! over as many pipes (`benchmark_overhead`, over the largest N given). A benchmark here
//! never subtracts (the harness owns time), so the `ctx.overhead` curve measures that
//! overhead (one process, 96 pipes, x = SIZE) and the suite's derived figures give lmbench's
//! number for each point: per switch less overhead, "n/a" where lmbench prints nothing
//! (overhead at least as large). The curves drawn are the ring's time per switch with the
//! overhead in it. lat_ctx's own overhead over 96 pipes reads 0.1-0.2 us more than over 16
//! here, so beside `lat_ctx -s 0 16` the derived figure reads a little lower (README,
//! Accuracy).
//!
//! The children are forked in setup, each keeping only its two pipe ends; when the clock has
//! stopped the test process closes its end and each child, reading end of file, exits in turn
//! and is reaped with its usage (`reap_unwaited`), which counts its voluntary context
//! switches. teardown kills any left; every child dies with its parent.

use super::{Axis, Point, SeriesSpec, Suite};
use crate::bench::{Benchmark, Ctx, Shape};
use crate::error::BenchError;
use crate::model::{Derived, Series, Usage, YKind};
use crate::sys::{self, Fork, Pid};
use std::hint::black_box;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

pub static SUITE: Suite = Suite {
    name: "ctx",
    title: "Context switching against processes and working set (lmbench lat_ctx)",
    paper: "lmbench (McVoy and Staelin, \"lmbench: Portable tools for performance analysis\", \
            USENIX 1996, context switching): lat_ctx -s SIZE 2 4 8 16 24 32 64 96 for SIZE 0 to \
            64 KiB (src/lat_ctx.c, scripts/lmbench); the 4.2BSD paper's csw (Table 1) is its \
            2-process, 0 KiB point",
    series,
    preflight: super::no_preflight,
    derive,
};

/// scripts/lmbench's process counts.
pub const PROCS: &[u64] = &[2, 4, 8, 16, 24, 32, 64, 96];
const QUICK_PROCS: &[u64] = &[2, 8];
/// The pipes of the overhead measurement: lmbench's largest N on the command line.
pub const OVERHEAD_PIPES: usize = 96;

/// A point's parameter: processes in the high half, bytes of data in the low.
pub fn param(procs: u64, size: u64) -> u64 {
    (procs << 32) | size
}

pub fn unparam(p: u64) -> (usize, usize) {
    ((p >> 32) as usize, (p & 0xffff_ffff) as usize)
}

fn ring_points(size_kib: u64, quick: bool) -> Vec<Point> {
    let procs = if quick { QUICK_PROCS } else { PROCS };
    procs
        .iter()
        .map(|&n| Point {
            ops_per_iteration: n,
            ..Point::new(n as f64, param(n, size_kib << 10))
        })
        .collect()
}

/// scripts/lmbench's sizes (KiB) when it has 8 MB or more to work with.
pub const SIZES_KIB: &[u64] = &[0, 4, 8, 16, 32, 64];

const PROCS_AXIS: Axis = Axis {
    name: "processes",
    unit: "processes",
    log: false,
};

macro_rules! ring_series {
    ($name:ident, $id:literal, $curve:literal, $kib:literal) => {
        static $name: SeriesSpec = SeriesSpec {
            printed: None,
            id: $id,
            figure: "ctx.switch",
            figure_title: "Context switch against processes, by each one's working set (lmbench lat_ctx; the pipe overhead not subtracted)",
            curve: $curve,
            paper: concat!(
                "lmbench lat_ctx -s ",
                $kib,
                " 2 4 8 16 24 32 64 96: a token round a ring of N processes over pipes, each summing ",
                $kib,
                " KiB of its own per switch"
            ),
            today: "a ring of N processes (the test process first) passing a 4-byte token over \
                    N pipes, each summing its own data as lmbench's bread does; y = a trip round \
                    the ring over N, the pipe overhead in it (the derived figures subtract it)",
            x: PROCS_AXIS,
            y: YKind::CostNs,
            unit: "switch",
            shape: Shape::Single,
            points: |quick| ring_points($kib, quick),
            make: |p| {
                let (procs, size) = unparam(p);
                Box::new(Ring::new(procs, size))
            },
            paper_points: &[],
            paper_system: None,
        };
    };
}

ring_series!(S0, "ctx.s0k", "size=0k", 0);
ring_series!(S4, "ctx.s4k", "size=4k", 4);
ring_series!(S8, "ctx.s8k", "size=8k", 8);
ring_series!(S16, "ctx.s16k", "size=16k", 16);
ring_series!(S32, "ctx.s32k", "size=32k", 32);
ring_series!(S64, "ctx.s64k", "size=64k", 64);

static OVERHEAD: SeriesSpec = SeriesSpec {
    printed: None,
    id: "ctx.overhead",
    figure: "ctx.overhead",
    figure_title:
        "What lat_ctx subtracts: a pipe write and read and the sum of SIZE bytes, in one process",
    curve: "overhead",
    paper: "lmbench lat_ctx's benchmark_overhead: one process writes and reads back the token \
            on each of its pipes in turn and sums its data, no switch (the \"ovr=\" it prints)",
    today: "one process, 96 pipes used in turn, a 4-byte write and read on each and the sum of \
            SIZE bytes of its data",
    x: Axis {
        name: "data per process",
        unit: "KiB",
        log: false,
    },
    y: YKind::CostNs,
    unit: "hand-over",
    shape: Shape::Single,
    points: |_| {
        SIZES_KIB
            .iter()
            .map(|&k| Point::new(k as f64, param(1, k << 10)))
            .collect()
    },
    make: |p| Box::new(Overhead::new(unparam(p).1)),
    paper_points: &[],
    paper_system: None,
};

fn series() -> Vec<&'static SeriesSpec> {
    vec![&S0, &S4, &S8, &S16, &S32, &S64, &OVERHEAD]
}

/// lmbench's `bread`: the sum of the data's 64-bit words, which brings them into the cache.
#[inline]
fn bread(data: &[u64]) -> u64 {
    black_box(data).iter().fold(0u64, |a, &w| a.wrapping_add(w))
}

/// The token.
const TOKEN: usize = 4;

#[inline]
fn pass(fd: RawFd) -> Result<(), BenchError> {
    let msg = [1u8; TOKEN];
    if sys::write(fd, &msg).map_err(BenchError::sys("write"))? != TOKEN {
        return Err(BenchError::Protocol("short write of the token".into()));
    }
    Ok(())
}

#[inline]
fn take(fd: RawFd) -> Result<(), BenchError> {
    let mut msg = [0u8; TOKEN];
    match sys::read(fd, &mut msg).map_err(BenchError::sys("read"))? {
        TOKEN => Ok(()),
        0 => Err(BenchError::Protocol("a process of the ring is gone".into())),
        n => Err(BenchError::Protocol(format!("read {n} bytes of the token"))),
    }
}

/// A child of the ring: token in, sum, token out, until end of file (exit 0) or an error
/// (exit 1). It allocates nothing: its data is the parent's copy, made its own by writing it.
fn child_loop(rx: RawFd, tx: RawFd, data: &mut [u64]) -> ! {
    // Written, so that the pages are this process's own, not the parent's shared by fork.
    data.fill(1);
    let mut msg = [0u8; TOKEN];
    loop {
        match sys::read(rx, &mut msg) {
            Ok(0) => sys::exit_now(0),
            Ok(TOKEN) => {}
            _ => sys::exit_now(1),
        }
        black_box(bread(data));
        if !matches!(sys::write(tx, &msg), Ok(TOKEN)) {
            sys::exit_now(1);
        }
    }
}

/// One point of a ring curve: `procs` processes, `size` bytes of data each.
pub struct Ring {
    procs: usize,
    size: usize,
    data: Vec<u64>,
    /// The test process's ends: it writes pipe 0 and reads pipe N-1.
    tx: Option<OwnedFd>,
    rx: Option<OwnedFd>,
    children: Vec<Pid>,
}

impl Ring {
    pub fn new(procs: usize, size: usize) -> Ring {
        Ring {
            procs,
            size,
            data: Vec::new(),
            tx: None,
            rx: None,
            children: Vec::new(),
        }
    }

    fn ends(&self) -> Result<(RawFd, RawFd), BenchError> {
        match (&self.tx, &self.rx) {
            (Some(tx), Some(rx)) => Ok((tx.as_raw_fd(), rx.as_raw_fd())),
            _ => Err(BenchError::Protocol("the ring is not set up".into())),
        }
    }
}

impl Benchmark for Ring {
    fn setup(&mut self, ctx: &Ctx, _: u64) -> Result<(), BenchError> {
        if self.procs < 2 {
            return Err(BenchError::Protocol(format!(
                "a ring needs 2 processes or more, not {}",
                self.procs
            )));
        }
        // Written, so that its pages are its own (an untouched allocation reads the one zero
        // page, whatever its size).
        self.data = vec![1u64; self.size / 8];
        let mut pipes = Vec::with_capacity(self.procs);
        for _ in 0..self.procs {
            pipes.push(sys::pipe().map_err(BenchError::sys("pipe"))?);
        }
        for i in 1..self.procs {
            match sys::fork().map_err(BenchError::sys("fork"))? {
                Fork::Child => {
                    ctx.child_init();
                    for (j, (r, w)) in pipes.iter().enumerate() {
                        if j != i - 1 {
                            sys::close_in_child(r);
                        }
                        if j != i {
                            sys::close_in_child(w);
                        }
                    }
                    child_loop(
                        pipes[i - 1].0.as_raw_fd(),
                        pipes[i].1.as_raw_fd(),
                        &mut self.data,
                    )
                }
                Fork::Parent(pid) => self.children.push(pid),
            }
        }
        // Keep only the ends the test process uses, so that closing them ends the ring.
        let last = pipes.len() - 1;
        for (j, (r, w)) in pipes.into_iter().enumerate() {
            if j == 0 {
                self.tx = Some(w);
            }
            if j == last {
                self.rx = Some(r);
            }
        }
        // Once round the ring, as lat_ctx's create_daemons: everyone is ready.
        let (tx, rx) = self.ends()?;
        pass(tx)?;
        take(rx)?;
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let (tx, rx) = self.ends()?;
        for _ in 0..iterations {
            pass(tx)?;
            take(rx)?;
            black_box(bread(&self.data));
        }
        Ok(())
    }

    fn reap_unwaited(&mut self) -> Result<Usage, BenchError> {
        // Closing pipe 0's write end reaches child 1 as end of file; it exits, closing pipe
        // 1's, and so on round the ring.
        self.tx = None;
        let mut total = Usage::default();
        // One at a time off the list, so that after a child that ended wrongly teardown still
        // finds the others.
        while let Some(&pid) = self.children.first() {
            let usage = crate::bench::ipc::reap(pid);
            self.children.remove(0);
            total = total.plus(&usage?);
        }
        self.rx = None;
        Ok(total)
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        for pid in std::mem::take(&mut self.children) {
            let _ = sys::kill(pid, libc::SIGKILL);
            let _ = sys::wait_child(pid);
        }
        self.tx = None;
        self.rx = None;
        Ok(())
    }
}

/// lat_ctx's overhead: one process, the token written and read back on each pipe in turn,
/// and the sum of its data.
pub struct Overhead {
    size: usize,
    data: Vec<u64>,
    pipes: Vec<(OwnedFd, OwnedFd)>,
    next: usize,
}

impl Overhead {
    pub fn new(size: usize) -> Overhead {
        Overhead {
            size,
            data: Vec::new(),
            pipes: Vec::new(),
            next: 0,
        }
    }
}

impl Benchmark for Overhead {
    fn setup(&mut self, _: &Ctx, _: u64) -> Result<(), BenchError> {
        self.data = vec![1u64; self.size / 8];
        for _ in 0..OVERHEAD_PIPES {
            self.pipes
                .push(sys::pipe().map_err(BenchError::sys("pipe"))?);
        }
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        for _ in 0..iterations {
            let (r, w) = &self.pipes[self.next];
            pass(w.as_raw_fd())?;
            take(r.as_raw_fd())?;
            self.next = (self.next + 1) % self.pipes.len();
            black_box(bread(&self.data));
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.pipes.clear();
        Ok(())
    }
}

/// lmbench's figure for each ring point: its time per switch less the overhead at its size,
/// "n/a" where lat_ctx prints nothing (the difference not above 0).
pub fn derive(series: &[Series]) -> Vec<Derived> {
    let Some(ovr) = series.iter().find(|s| s.id == OVERHEAD.id) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for s in series.iter().filter(|s| s.id != OVERHEAD.id) {
        let Some(kib) =
            s.id.strip_prefix("ctx.s")
                .and_then(|r| r.strip_suffix('k'))
                .and_then(|k| k.parse::<f64>().ok())
        else {
            continue;
        };
        let Some(o) = ovr
            .points
            .iter()
            .find(|p| p.x == kib)
            .and_then(|p| p.y.as_ref())
        else {
            continue;
        };
        for p in &s.points {
            let Some(y) = &p.y else {
                continue;
            };
            let value = y.median - o.median;
            out.push(Derived {
                na: (value <= 0.0).then(|| {
                    "the overhead is as large as the time per switch, where lat_ctx prints nothing"
                        .to_string()
                }),
                name: format!("{} less overhead", p.result.id),
                value,
                unit: "ns per switch".into(),
                formula: format!(
                    "{:.2} ns per switch - {:.2} ns overhead (ctx.overhead@{}), as lat_ctx prints it",
                    y.median,
                    o.median,
                    super::fmt_x(kib)
                ),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::ipc::my_children;

    #[test]
    fn the_ring_switches_at_every_hand_over_and_leaves_no_child() {
        // 4 processes, 16 KiB each: every trip round the ring blocks each child once on its
        // read, a voluntary context switch, which its rusage counts.
        let n = 2_000;
        let mut b = Ring::new(4, 16 << 10);
        b.setup(&Ctx::default(), n).unwrap();
        assert_eq!(my_children().len(), 3);
        let before = sys::usage_thread();
        b.run(n).unwrap();
        let mine = sys::usage_thread().since(&before);
        let children = b.reap_unwaited().unwrap();
        assert!(
            my_children().is_empty(),
            "children left: {:?}",
            my_children()
        );
        // A process preempted before its read finds the token there and does not block: on a
        // busy machine some of the switches are involuntary instead.
        let switches = |u: &Usage| u.nvcsw + u.nivcsw;
        assert!(
            switches(&children) >= 3 * n * 9 / 10,
            "{children:?}: the 3 children's switches for {n} trips"
        );
        assert!(switches(&mine) >= n * 9 / 10, "the test process: {mine:?}");
        // Each child touched its 16 KiB: its own copy of the data's pages.
        assert!(children.minflt >= 3 * 4, "{children:?}");
        b.teardown().unwrap();
    }

    #[test]
    fn a_failed_ring_leaves_nothing_behind() {
        let mut b = Ring::new(8, 0);
        b.setup(&Ctx::default(), 10).unwrap();
        assert_eq!(my_children().len(), 7);
        // A child killed mid-run: the trip fails, and teardown reaps the rest.
        let victim = b.children[3];
        sys::kill(victim, libc::SIGKILL).unwrap();
        assert!(b.run(100).is_err());
        b.teardown().unwrap();
        assert!(my_children().is_empty(), "{:?}", my_children());
        assert!(Ring::new(1, 0).setup(&Ctx::default(), 1).is_err());
    }

    #[test]
    fn the_overhead_loop_switches_nothing() {
        let n = 2_000;
        let mut b = Overhead::new(4 << 10);
        b.setup(&Ctx::default(), n).unwrap();
        let before = sys::usage_thread();
        b.run(n).unwrap();
        let d = sys::usage_thread().since(&before);
        // A pipe that holds the token never blocks its reader.
        assert!(d.nvcsw < n / 10, "{d:?}");
        b.teardown().unwrap();
    }

    #[test]
    fn derived_figures_subtract_the_overhead_at_the_same_size() {
        use crate::model::{BenchResult, Estimate, SeriesPoint};
        let point = |id: &str, x: f64, y: f64| SeriesPoint {
            x,
            label: None,
            bytes_per_op: 0.0,
            y: Some(Estimate::single(y, 0.95, 5)),
            result: BenchResult {
                id: id.into(),
                group: "ctx".into(),
                ops_per_iteration: 1,
                paper_count: 1,
                unit: "switch".into(),
                placement: "single".into(),
                cpus: vec![],
                trials: vec![],
                summary: None,
                error: None,
            },
        };
        let mut ring = super::super::series_from(&S16, Vec::new(), None);
        ring.points.push(point("ctx.s16k@8", 8.0, 3000.0));
        ring.points.push(point("ctx.s16k@2", 2.0, 900.0));
        let mut ovr = super::super::series_from(&OVERHEAD, Vec::new(), None);
        ovr.points.push(point("ctx.overhead@0", 0.0, 500.0));
        ovr.points.push(point("ctx.overhead@16", 16.0, 1000.0));
        let d = derive(&[ring, ovr]);
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].name, "ctx.s16k@8 less overhead");
        assert_eq!(d[0].value, 2000.0);
        assert!(d[0].na.is_none());
        assert!(d[0].formula.contains("ctx.overhead@16"), "{}", d[0].formula);
        assert!(d[1].na.is_some(), "900 - 1000 is not a switch");
    }

    #[test]
    fn the_sweep_is_lmbench_scripts() {
        assert_eq!(unparam(param(96, 64 << 10)), (96, 64 << 10));
        let pts = ring_points(64, false);
        assert_eq!(pts.len(), 8);
        assert_eq!(pts.last().unwrap().ops_per_iteration, 96);
        assert_eq!(series().len(), SIZES_KIB.len() + 1);
    }
}
