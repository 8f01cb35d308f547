//! LEBench's core operations (Ren, Rodrigues, Yuan, "An Analysis of Performance Evolution of
//! Linux's Core Operations", SOSP 2019), the modern heir of the papers' Table 1: ids `le-*`,
//! group `lebench` (issue #19).
//!
//! - `le-read-N`, `le-write-N`: one pread/pwrite of N pages (1, 10, 1,000, 10,000) at offset 0
//!   of a file whose pages setup wrote and read once, so the page cache is warm and nothing
//!   reads a disk. The file is made in the temporary directory and unlinked at once, so a
//!   killed worker leaves nothing behind.
//! - `le-mmap-N`: mmap of N pages of that file (shared, nothing touched) and its munmap.
//!   LEBench times mmap alone with a clock read between the two calls; a benchmark here never
//!   reads a clock, so the operation is the pair, and mmap alone is this less `le-munmap-N`'s
//!   unmap share (see next).
//! - `le-munmap-N`: mmap with MAP_POPULATE of N pages and its munmap: unmapping N mapped
//!   pages (LEBench's munmap row), plus the populate, which `le-mmap-N` does not have.
//! - `le-pagefault-file`: a fresh 64-page shared mapping of the warm file, one read of its
//!   first page, munmap: one page fault, which maps as many pages around the faulting one as
//!   fault-around allows (`fault_around_bytes`, 64 KiB by default: 16 pages of 4 KiB). The
//!   test `le_pagefault_file_maps_pages_around_the_fault` reports how many.
//! - `le-pagefault-anon`: a fresh one-page anonymous mapping, one write, munmap: one
//!   zero-fill fault.
//! - `le-fork`, `le-fork-6000`, `le-fork-12000`: fork of the worker after it mapped and
//!   touched 0, 6,000 or 12,000 anonymous pages (LEBench's small, big and huge fork), the
//!   child's _exit and the parent's wait. LEBench times fork to the parent's return and to
//!   the child's first run with clock reads in both; without a clock in the benchmark the
//!   operation runs to the reaped child, which includes both moments.
//! - `le-thread`: thread creation (clone with the C library's stack setup) and join.
//! - `le-send1`, `le-send96000`: send then recv of 1 or 96,000 bytes over a connected Unix
//!   stream socket pair in one process (LEBench's send and recv rows, back to back; 96,000
//!   bytes fit the default socket buffer, so neither call blocks).
//! - `le-select-N`, `le-poll-N`, `le-epoll-N` for 10 and 1,000 descriptors: the same
//!   benchmark as the `scaling` suite's select/poll/epoll curves (`super::ready`,
//!   eventfds, the last one ready, zero timeout), at LEBench's two sizes.
//! - `le-futex`: a wake/wait round trip between two threads of the worker: each waits on its
//!   own futex word and wakes the other's (two FUTEX_WAKE and two FUTEX_WAIT per round trip).
//! - `le-yield`: a sched_yield ping between two threads pinned to one CPU: each yields until
//!   the shared turn is its own, then passes it (LEBench's context-switch row).
//!
//! None of them is in the default selection (`sysperf run` with no ids runs the papers'
//! 49): `sysperf run 'le-*'` runs them all, and they keep the default run's time.

use super::ready::{ReadySet, Scan};
use super::{Benchmark, Charge, Chart, Ctx, Group, Shape, Spec};
use crate::error::BenchError;
use crate::sys::{self, Fork, Mapping};
use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// LEBench's file sizes, in pages.
pub const SIZES: [usize; 4] = [1, 10, 1_000, 10_000];
/// Pages of the page-fault test's mapping: more than fault-around maps by default.
pub const FAULT_MAP_PAGES: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Read(usize),
    Write(usize),
    Mmap(usize),
    Munmap(usize),
    FaultFile,
    FaultAnon,
    Fork(usize),
    Thread,
    Send(usize),
    Scan(Scan, u64),
    Futex,
    Yield,
}

/// The chart this family's tests are drawn on.
pub static CHART: Chart = Chart {
    name: "lebench",
    title: "LEBench's core operations",
    about: Some("LEBench's operations"),
};

macro_rules! le {
    ($id:literal, $lebench:literal, $today:literal, $unit:literal, $shape:expr, $op:expr) => {
        Spec {
            id: $id,
            label: $id,
            group: Group::Lebench,
            chart: &CHART,
            paper: $lebench,
            today: $today,
            paper_count: 10_000,
            unit: $unit,
            ops_per_iteration: 1,
            shape: $shape,
            // Not Appendix A's: charged as time(1) would, the children waited for (the fork
            // tests' children) with the process.
            charge: if matches!($op, Op::Fork(_)) {
                Charge::Waited
            } else {
                Charge::Own
            },
            make: || Box::new(Le::new($op)),
        }
    };
}

pub static SPECS: &[Spec] = &[
    le!("le-read-1", "LEBench read, 1 page", "pread of 1 warm page", "read", Shape::Single, Op::Read(1)),
    le!("le-read-10", "LEBench read, 10 pages", "pread of 10 warm pages", "read", Shape::Single, Op::Read(10)),
    le!("le-read-1000", "LEBench big read, 1,000 pages", "pread of 1,000 warm pages", "read", Shape::Single, Op::Read(1_000)),
    le!("le-read-10000", "LEBench huge read, 10,000 pages", "pread of 10,000 warm pages", "read", Shape::Single, Op::Read(10_000)),
    le!("le-write-1", "LEBench write, 1 page", "pwrite of 1 page over warm pages", "write", Shape::Single, Op::Write(1)),
    le!("le-write-10", "LEBench write, 10 pages", "pwrite of 10 pages over warm pages", "write", Shape::Single, Op::Write(10)),
    le!("le-write-1000", "LEBench big write, 1,000 pages", "pwrite of 1,000 pages over warm pages", "write", Shape::Single, Op::Write(1_000)),
    le!("le-write-10000", "LEBench huge write, 10,000 pages", "pwrite of 10,000 pages over warm pages", "write", Shape::Single, Op::Write(10_000)),
    le!("le-mmap-1", "LEBench mmap, 1 page", "mmap of 1 file page and its munmap, nothing touched", "mmap", Shape::Single, Op::Mmap(1)),
    le!("le-mmap-10", "LEBench mmap, 10 pages", "mmap of 10 file pages and its munmap, nothing touched", "mmap", Shape::Single, Op::Mmap(10)),
    le!("le-mmap-1000", "LEBench big mmap, 1,000 pages", "mmap of 1,000 file pages and its munmap, nothing touched", "mmap", Shape::Single, Op::Mmap(1_000)),
    le!("le-mmap-10000", "LEBench huge mmap, 10,000 pages", "mmap of 10,000 file pages and its munmap, nothing touched", "mmap", Shape::Single, Op::Mmap(10_000)),
    le!("le-munmap-1", "LEBench munmap, 1 page", "munmap of 1 mapped file page (after mmap with MAP_POPULATE)", "munmap", Shape::Single, Op::Munmap(1)),
    le!("le-munmap-10", "LEBench munmap, 10 pages", "munmap of 10 mapped file pages (after mmap with MAP_POPULATE)", "munmap", Shape::Single, Op::Munmap(10)),
    le!("le-munmap-1000", "LEBench big munmap, 1,000 pages", "munmap of 1,000 mapped file pages (after mmap with MAP_POPULATE)", "munmap", Shape::Single, Op::Munmap(1_000)),
    le!("le-munmap-10000", "LEBench huge munmap, 10,000 pages", "munmap of 10,000 mapped file pages (after mmap with MAP_POPULATE)", "munmap", Shape::Single, Op::Munmap(10_000)),
    le!("le-pagefault-file", "LEBench page fault (file-backed)", "first read of a fresh 64-page shared file mapping (fault-around maps its neighbours), with mmap and munmap", "fault", Shape::Single, Op::FaultFile),
    le!("le-pagefault-anon", "LEBench page fault (anonymous)", "first write of a fresh one-page anonymous mapping, with mmap and munmap", "fault", Shape::Single, Op::FaultAnon),
    le!("le-fork", "LEBench fork (small process)", "fork, child _exit, parent's wait", "fork", Shape::Single, Op::Fork(0)),
    le!("le-fork-6000", "LEBench big fork (6,000 mapped pages)", "fork of the worker with 6,000 touched anonymous pages, child _exit, wait", "fork", Shape::Single, Op::Fork(6_000)),
    le!("le-fork-12000", "LEBench huge fork (12,000 mapped pages)", "fork of the worker with 12,000 touched anonymous pages, child _exit, wait", "fork", Shape::Single, Op::Fork(12_000)),
    le!("le-thread", "LEBench thread create", "thread spawn (clone) and join", "thread", Shape::Single, Op::Thread),
    le!("le-send1", "LEBench send/recv, 1 byte", "send and recv of 1 byte on a Unix stream socket pair", "message", Shape::Single, Op::Send(1)),
    le!("le-send96000", "LEBench big send/recv, 96,000 bytes", "send and recv of 96,000 bytes on a Unix stream socket pair", "message", Shape::Single, Op::Send(96_000)),
    le!("le-select-10", "LEBench select, 10 descriptors", "select over 10 eventfds, the last ready (as --suite scaling)", "call", Shape::Single, Op::Scan(Scan::Select, 10)),
    le!("le-select-1000", "LEBench select, 1,000 descriptors", "select over 1,000 eventfds, the last ready (as --suite scaling)", "call", Shape::Single, Op::Scan(Scan::Select, 1_000)),
    le!("le-poll-10", "LEBench poll, 10 descriptors", "poll over 10 eventfds, the last ready (as --suite scaling)", "call", Shape::Single, Op::Scan(Scan::Poll, 10)),
    le!("le-poll-1000", "LEBench poll, 1,000 descriptors", "poll over 1,000 eventfds, the last ready (as --suite scaling)", "call", Shape::Single, Op::Scan(Scan::Poll, 1_000)),
    le!("le-epoll-10", "LEBench epoll, 10 descriptors", "epoll_wait over 10 eventfds, the last ready (as --suite scaling)", "call", Shape::Single, Op::Scan(Scan::Epoll, 10)),
    le!("le-epoll-1000", "LEBench epoll, 1,000 descriptors", "epoll_wait over 1,000 eventfds, the last ready (as --suite scaling)", "call", Shape::Single, Op::Scan(Scan::Epoll, 1_000)),
    le!("le-futex", "futex wake/wait round trip between two threads", "two threads of the worker, each waiting on its futex word and waking the other's", "round trip", Shape::Single, Op::Futex),
    le!("le-yield", "LEBench context switch (sched_yield ping, one CPU)", "two threads pinned to the worker's CPU passing a turn with sched_yield", "round trip", Shape::Single, Op::Yield),
];

/// Two threads' shared state for the futex and yield pings: `turn` says whose move it is
/// (0 the worker's, 1 the partner's); `stop` ends the partner.
struct Ping {
    turn: AtomicU32,
    stop: AtomicBool,
}

struct Le {
    op: Op,
    file: Option<File>,
    buf: Vec<u8>,
    pages: Option<Mapping>,
    sock: Option<(OwnedFd, OwnedFd)>,
    scan: Option<ReadySet>,
    ping: Option<Arc<Ping>>,
    partner: Option<JoinHandle<Result<(), BenchError>>>,
}

impl Le {
    fn new(op: Op) -> Le {
        Le {
            op,
            file: None,
            buf: Vec::new(),
            pages: None,
            sock: None,
            scan: None,
            ping: None,
            partner: None,
        }
    }

    fn file(&self) -> Result<&File, BenchError> {
        self.file
            .as_ref()
            .ok_or_else(|| BenchError::Protocol("the file was not made: setup did not run".into()))
    }

    /// A warm file of `pages` pages: written, read back, unlinked.
    fn make_file(&mut self, pages: usize) -> Result<(), BenchError> {
        let ps = sys::page_size();
        let file = sys::unlinked_file(&std::env::temp_dir()).map_err(BenchError::sys("open"))?;
        self.buf = vec![0x5a; pages * ps];
        file.write_all_at(&self.buf, 0)
            .map_err(BenchError::sys("pwrite"))?;
        file.read_exact_at(&mut self.buf, 0)
            .map_err(BenchError::sys("pread"))?;
        self.file = Some(file);
        Ok(())
    }

    fn start_partner(&mut self, yielding: bool) -> Result<(), BenchError> {
        let ping = Arc::new(Ping {
            turn: AtomicU32::new(0),
            stop: AtomicBool::new(false),
        });
        let cpu = if yielding {
            let here = sys::current_cpu()
                .ok_or_else(|| BenchError::Protocol("sched_getcpu failed".into()))?;
            sys::set_affinity(&[here]).map_err(BenchError::sys("sched_setaffinity"))?;
            Some(here)
        } else {
            None
        };
        let p = Arc::clone(&ping);
        let partner = std::thread::Builder::new()
            .name("sysperf:le-partner".into())
            .spawn(move || -> Result<(), BenchError> {
                if let Some(cpu) = cpu {
                    sys::set_affinity(&[cpu]).map_err(BenchError::sys("sched_setaffinity"))?;
                }
                loop {
                    while p.turn.load(Ordering::Acquire) != 1 {
                        if p.stop.load(Ordering::Acquire) {
                            return Ok(());
                        }
                        if yielding {
                            sys::sched_yield();
                        } else {
                            sys::futex_wait(&p.turn, 0).map_err(BenchError::sys("futex"))?;
                        }
                    }
                    p.turn.store(0, Ordering::Release);
                    if !yielding {
                        sys::futex_wake(&p.turn).map_err(BenchError::sys("futex"))?;
                    }
                }
            })
            .map_err(BenchError::sys("clone"))?;
        self.ping = Some(ping);
        self.partner = Some(partner);
        Ok(())
    }

    /// One round trip: hand the turn to the partner and wait for it back.
    #[inline]
    fn round_trip(p: &Ping, yielding: bool) -> Result<(), BenchError> {
        p.turn.store(1, Ordering::Release);
        if !yielding {
            sys::futex_wake(&p.turn).map_err(BenchError::sys("futex"))?;
        }
        while p.turn.load(Ordering::Acquire) != 0 {
            if yielding {
                sys::sched_yield();
            } else {
                sys::futex_wait(&p.turn, 1).map_err(BenchError::sys("futex"))?;
            }
        }
        Ok(())
    }
}

impl Benchmark for Le {
    fn setup(&mut self, ctx: &Ctx, iterations: u64) -> Result<(), BenchError> {
        let ps = sys::page_size();
        match self.op {
            Op::Read(n) | Op::Write(n) | Op::Mmap(n) | Op::Munmap(n) => self.make_file(n)?,
            Op::FaultFile => self.make_file(FAULT_MAP_PAGES)?,
            Op::FaultAnon | Op::Thread => {}
            Op::Fork(n) => {
                if n > 0 {
                    let m = Mapping::anonymous(n * ps).map_err(BenchError::sys("mmap"))?;
                    for i in 0..n {
                        m.touch(i * ps, 1);
                    }
                    self.pages = Some(m);
                }
            }
            Op::Send(n) => {
                self.sock = Some(sys::stream_pair().map_err(BenchError::sys("socketpair"))?);
                self.buf = vec![0x5a; n];
            }
            Op::Scan(scan, n) => {
                let mut set = ReadySet::new(scan, n);
                set.setup(ctx, iterations)?;
                self.scan = Some(set);
            }
            Op::Futex => self.start_partner(false)?,
            Op::Yield => self.start_partner(true)?,
        }
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let ps = sys::page_size();
        match self.op {
            Op::Read(_) => {
                let file = self.file.as_ref().ok_or_else(no_setup)?;
                for _ in 0..iterations {
                    file.read_exact_at(&mut self.buf, 0)
                        .map_err(BenchError::sys("pread"))?;
                }
            }
            Op::Write(_) => {
                let file = self.file()?;
                for _ in 0..iterations {
                    file.write_all_at(&self.buf, 0)
                        .map_err(BenchError::sys("pwrite"))?;
                }
            }
            Op::Mmap(n) | Op::Munmap(n) => {
                let fd = self.file()?.as_raw_fd();
                let populate = matches!(self.op, Op::Munmap(_));
                for _ in 0..iterations {
                    let m = if populate {
                        Mapping::shared_file_populated(fd, n * ps)
                    } else {
                        Mapping::shared_file(fd, n * ps)
                    }
                    .map_err(BenchError::sys("mmap"))?;
                    drop(m);
                }
            }
            Op::FaultFile => {
                let fd = self.file()?.as_raw_fd();
                for _ in 0..iterations {
                    let m = Mapping::shared_file(fd, FAULT_MAP_PAGES * ps)
                        .map_err(BenchError::sys("mmap"))?;
                    std::hint::black_box(m.peek(0));
                }
            }
            Op::FaultAnon => {
                for _ in 0..iterations {
                    let m = Mapping::anonymous(ps).map_err(BenchError::sys("mmap"))?;
                    m.touch(0, 1);
                }
            }
            Op::Fork(_) => {
                for _ in 0..iterations {
                    match sys::fork().map_err(BenchError::sys("fork"))? {
                        Fork::Child => sys::exit_now(0),
                        Fork::Parent(pid) => {
                            let code = sys::wait_child(pid).map_err(BenchError::sys("waitpid"))?;
                            if code != 0 {
                                return Err(BenchError::Protocol(format!(
                                    "fork's child exited with {code}, expected 0"
                                )));
                            }
                        }
                    }
                }
            }
            Op::Thread => {
                for _ in 0..iterations {
                    let t = std::thread::Builder::new()
                        .spawn(|| std::hint::black_box(1u8))
                        .map_err(BenchError::sys("clone"))?;
                    t.join()
                        .map_err(|_| BenchError::Protocol("a created thread panicked".into()))?;
                }
            }
            Op::Send(n) => {
                let (a, b) = self.sock.as_ref().ok_or_else(no_setup)?;
                let (a, b) = (a.as_raw_fd(), b.as_raw_fd());
                let mut into = vec![0u8; n];
                for _ in 0..iterations {
                    let mut sent = 0;
                    while sent < n {
                        sent += sys::send(a, &self.buf[sent..]).map_err(BenchError::sys("send"))?;
                    }
                    let mut got = 0;
                    while got < n {
                        let k = sys::recv(b, &mut into[got..]).map_err(BenchError::sys("recv"))?;
                        if k == 0 {
                            return Err(BenchError::Protocol("recv: the socket closed".into()));
                        }
                        got += k;
                    }
                }
            }
            Op::Scan(..) => self.scan.as_mut().ok_or_else(no_setup)?.run(iterations)?,
            Op::Futex | Op::Yield => {
                let yielding = self.op == Op::Yield;
                let p = self.ping.as_ref().ok_or_else(no_setup)?;
                for _ in 0..iterations {
                    Le::round_trip(p, yielding)?;
                }
            }
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        if let Some(p) = self.ping.take() {
            p.stop.store(true, Ordering::Release);
            // Wake a partner asleep on its futex; it then sees `stop`.
            p.turn.store(0, Ordering::Release);
            sys::futex_wake(&p.turn).map_err(BenchError::sys("futex"))?;
            if let Some(t) = self.partner.take() {
                t.join()
                    .map_err(|_| BenchError::Protocol("the partner thread panicked".into()))??;
            }
        }
        if let Some(mut s) = self.scan.take() {
            s.teardown()?;
        }
        self.pages = None;
        self.file = None;
        self.sock = None;
        Ok(())
    }
}

fn no_setup() -> BenchError {
    BenchError::Protocol("setup did not run".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: &str, iterations: u64) {
        let spec = super::super::find(id).unwrap();
        let mut b = (spec.make)();
        b.setup(&Ctx::default(), iterations).unwrap();
        b.run(iterations).unwrap();
        b.teardown().unwrap();
    }

    #[test]
    fn every_lebench_spec_runs_a_few_iterations() {
        for s in SPECS {
            run(s.id, 3);
        }
    }

    #[test]
    fn ids_are_in_the_lebench_group_with_lebench_sizes() {
        for s in SPECS {
            assert!(s.id.starts_with("le-"), "{}", s.id);
            assert_eq!(s.group, Group::Lebench);
        }
        for n in SIZES {
            for op in ["read", "write", "mmap", "munmap"] {
                let id = format!("le-{op}-{n}");
                assert!(SPECS.iter().any(|s| s.id == id), "{id}");
            }
        }
    }

    #[test]
    fn le_pagefault_file_maps_pages_around_the_fault() {
        // One read fault of a fresh file mapping maps fault-around's window, not one page:
        // the mapping's resident size after the fault says how many pages.
        let mut b = Le::new(Op::FaultFile);
        b.setup(&Ctx::default(), 1).unwrap();
        let ps = sys::page_size();
        let fd = b.file().unwrap().as_raw_fd();
        let m = Mapping::shared_file(fd, FAULT_MAP_PAGES * ps).unwrap();
        std::hint::black_box(m.peek(0));
        let mapped = crate::procfs::mapping_rss_pages(m.address()).unwrap();
        eprintln!("le-pagefault-file: one fault mapped {mapped} pages");
        assert!((1..=FAULT_MAP_PAGES as u64).contains(&mapped), "{mapped}");
        drop(m);
        b.teardown().unwrap();
    }
}
