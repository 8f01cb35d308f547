//! The Feder suite (`sysperf run --suite feder`): J. Feder, "The Evolution of UNIX System
//! Performance", AT&T Bell Laboratories Technical Journal 63(8), 1984, Section III (kernel):
//! Table III (System V kernel operations), Fig. 1 (getpid with an invalid cache), Fig. 2
//! (context switch), Fig. 3 (fork/exit of a 32K-byte process) and Fig. 5 (pipe bandwidth).
//! It is not Figs. 4 and 6-8 (i-node table fill, buffer counts, terminals, the time-sharing
//! script). Table III's times are CPU time, so its y is too: user + system time per operation
//! of the point's process and the children it reaped, which counts neither waiting for the
//! disk nor for a CPU; every other y here is wall time (or bytes over wall time).
//!
//! Where today differs from 1984:
//! - The i-node table searched by chdir/open/access is today's dentry cache, a hash table, so
//!   "the 32nd position in a large directory" is a hashed lookup of the 32nd name created (of
//!   64, the paper's halfway point); ext4's htree keeps no creation order.
//! - "Access disk block" (CPU cost of one disk transfer, without the copy to the user) is one
//!   4 KiB pread with O_DIRECT of a file on a disk-backed file system (/tmp, else /var/tmp,
//!   checked with statfs): O_DIRECT goes to the device every time with no eviction call in the
//!   loop, so nothing has to be subtracted. It skips the page cache (the paper's buffer cache
//!   lookup). The paper's time "includes disk management overhead and context switches" but
//!   not the wait for the device, and neither does the CPU time y (the wall time, with the
//!   wait for the (virtual) disk, is the table's real column). "Read 4K file" is
//!   open(O_DIRECT), read of 4096 bytes, close: the paper's
//!   text makes it a disk read (its cost halved when the block size doubled).
//! - Fork copies page tables and marks copy-on-write instead of copying the data; the forking
//!   process is the paper's "very small benchmark program": the 4.2BSD appendix's `forks`
//!   program (`bench::forker`, a few KiB of freestanding C, as the core `forks*` tests use),
//!   plus the sbrk'd data the point names, not the multi-MiB sysperf worker.
//! - "Exec 8K BSS" is the appendix's `vexecs` program (the same small forker, with vfork):
//!   vfork + execve by name of a static program whose only data is 8 KiB of BSS
//!   (csrc/bss8k.c), written as a file beside it, + its exit + wait.
//! - The "invalid cache" of Fig. 1 is made by writing a buffer as large as the CPU's largest
//!   private cache (L2) between calls; the sweep is timed too, so its cost alone is a point of its own and `derive`
//!   reports the difference.
//! - Fig. 2's switch is a 1-byte pipe round trip between two processes, less the same four pipe
//!   calls in one process; the placement of the pair is the harness's (`--placement`).

use super::{Axis, Point, Printed, SeriesSpec, Suite};
use crate::bench::{Benchmark, Ctx, Shape};
use crate::error::BenchError;
use crate::model::{Derived, Estimate, Series, YKind};
use crate::sys::{self, Fork, Pid};
use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Entries in the "large directory" of Table III row 4; the target is the 32nd, halfway.
pub const DIR_ENTRIES: usize = 64;
/// Position (1-based, in creation order) of the name row 4 looks up.
pub const DIR_TARGET: usize = 32;
/// Bytes of one "disk block" today (the page and ext4 block size).
pub const BLOCK: usize = 4096;

fn cstring(bytes: &[u8]) -> Result<CString, BenchError> {
    CString::new(bytes).map_err(|_| BenchError::Protocol("NUL in a path".into()))
}

/// Name of the `i`th (1-based) entry of the large directory.
pub fn dir_entry_name(i: usize) -> String {
    format!("e{i:02}")
}

// ---------------------------------------------------------------------------------------------
// Scratch directories

/// A directory made for one benchmark, with a descriptor for *at() calls; removed by Drop.
pub struct Scratch {
    path: PathBuf,
    dir: Option<OwnedFd>,
}

impl Scratch {
    pub fn new(base: &Path) -> Result<Scratch, BenchError> {
        Scratch::named(base, "feder")
    }

    /// A scratch directory named for suite `kind` (`sysperf-KIND-PID-...`).
    pub fn named(base: &Path, kind: &str) -> Result<Scratch, BenchError> {
        let path = crate::harness::janitor::scratch_dir(base, kind)
            .map_err(BenchError::sys("mkdir (scratch directory)"))?;
        let mut s = Scratch { path, dir: None };
        let c = cstring(s.path.as_os_str().as_bytes())?;
        s.dir = Some(
            sys::open_at(libc::AT_FDCWD, &c, libc::O_RDONLY | libc::O_DIRECTORY)
                .map_err(BenchError::sys("open(directory)"))?,
        );
        Ok(s)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn fd(&self) -> RawFd {
        self.dir.as_ref().map_or(-1, |d| d.as_raw_fd())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        self.dir = None;
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

// ---------------------------------------------------------------------------------------------
// Table III rows 1-6: file operations

/// The file-system rows of Table III.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileRow {
    Chdir,
    OpenClose,
    Path3,
    Dir32,
    DiskBlock,
    Read4k,
}

/// An aligned 4 KiB buffer for O_DIRECT, carved out of a larger vector without unsafe code.
struct Aligned {
    mem: Vec<u8>,
    off: usize,
}

impl Aligned {
    fn new() -> Aligned {
        let mem = vec![0u8; 2 * BLOCK];
        let off = mem.as_ptr().align_offset(BLOCK);
        Aligned { mem, off }
    }
    fn block(&mut self) -> &mut [u8] {
        &mut self.mem[self.off..self.off + BLOCK]
    }
}

pub struct FileOps {
    row: FileRow,
    scratch: Option<Scratch>,
    target: CString,
    block: Option<std::fs::File>,
    buf: Aligned,
}

impl FileOps {
    pub fn new(row: FileRow) -> FileOps {
        FileOps {
            row,
            scratch: None,
            target: CString::default(),
            block: None,
            buf: Aligned::new(),
        }
    }

    /// The scratch directory (None before setup and after teardown).
    pub fn scratch(&self) -> Option<&Scratch> {
        self.scratch.as_ref()
    }

    /// The name the timed loop looks up, relative to the scratch directory.
    pub fn target(&self) -> &CStr {
        &self.target
    }

    fn dir(&self) -> RawFd {
        self.scratch.as_ref().map_or(-1, Scratch::fd)
    }
}

impl Benchmark for FileOps {
    fn setup(&mut self, _ctx: &Ctx, _iterations: u64) -> Result<(), BenchError> {
        let base = match self.row {
            FileRow::DiskBlock | FileRow::Read4k => {
                super::disk_dir().map_err(BenchError::Protocol)?.0
            }
            _ => std::env::temp_dir(),
        };
        let s = Scratch::new(&base)?;
        let root = s.path().to_path_buf();
        let write = |p: PathBuf, len: usize| -> Result<(), BenchError> {
            let f = std::fs::File::create(p).map_err(BenchError::sys("create"))?;
            f.write_all_at(&vec![0x5a; len], 0)
                .map_err(BenchError::sys("write"))?;
            // On disk before the timed loop: an O_DIRECT read of dirty pages would first
            // write them back.
            f.sync_all().map_err(BenchError::sys("fsync"))
        };
        let target: String = match self.row {
            FileRow::Chdir => ".".into(),
            FileRow::OpenClose => {
                write(root.join("file"), 100)?;
                "file".into()
            }
            FileRow::Path3 => {
                std::fs::create_dir_all(root.join("a/b/c")).map_err(BenchError::sys("mkdir"))?;
                "a/b/c".into()
            }
            FileRow::Dir32 => {
                for i in 1..=DIR_ENTRIES {
                    write(root.join(dir_entry_name(i)), 0)?;
                }
                dir_entry_name(DIR_TARGET)
            }
            FileRow::DiskBlock | FileRow::Read4k => {
                write(root.join("block"), BLOCK)?;
                "block".into()
            }
        };
        self.target = cstring(target.as_bytes())?;
        self.scratch = Some(s);
        if self.row == FileRow::DiskBlock {
            let fd = sys::open_at(self.dir(), &self.target, libc::O_RDONLY | libc::O_DIRECT)
                .map_err(BenchError::sys("open(O_DIRECT)"))?;
            self.block = Some(std::fs::File::from(fd));
        }
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let dir = self.dir();
        for _ in 0..iterations {
            match self.row {
                FileRow::Chdir => {
                    std::env::set_current_dir(".").map_err(BenchError::sys("chdir"))?
                }
                FileRow::OpenClose => drop(
                    sys::open_at(dir, &self.target, libc::O_RDONLY)
                        .map_err(BenchError::sys("open"))?,
                ),
                FileRow::Path3 | FileRow::Dir32 => {
                    sys::access_at(dir, &self.target).map_err(BenchError::sys("access"))?
                }
                FileRow::DiskBlock => {
                    let f = self
                        .block
                        .as_ref()
                        .ok_or_else(|| BenchError::Protocol("disk block: no setup".into()))?;
                    let n = f
                        .read_at(self.buf.block(), 0)
                        .map_err(BenchError::sys("pread"))?;
                    check_len(n)?;
                }
                FileRow::Read4k => {
                    let fd = sys::open_at(dir, &self.target, libc::O_RDONLY | libc::O_DIRECT)
                        .map_err(BenchError::sys("open(O_DIRECT)"))?;
                    let n = sys::read(fd.as_raw_fd(), self.buf.block())
                        .map_err(BenchError::sys("read"))?;
                    check_len(n)?;
                }
            }
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.block = None;
        self.scratch = None;
        Ok(())
    }
}

fn check_len(n: usize) -> Result<(), BenchError> {
    if n != BLOCK {
        return Err(BenchError::Protocol(format!(
            "short read: {n} of {BLOCK} bytes"
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Table III rows 7-8 and Fig. 3: fork/exit with data, exec of the 8K-BSS program

fn reap(pid: Pid) -> Result<(), BenchError> {
    let code = sys::wait_child(pid).map_err(BenchError::sys("waitpid"))?;
    crate::bench::check_status("feder", code, 0)
}

/// Fig. 3 and Table III row 7: fork, the child's _exit, wait, from a process of "a very small
/// benchmark program to which [`data`] bytes of data have been artificially added": the
/// appendix's `forks` program (`bench::forker`, a few KiB of C) with `data` bytes sbrk'd and
/// touched every 1 KiB, not the multi-MiB worker, whose page tables fork would copy instead.
/// Its and its children's CPU time are the point's (the harness takes the program's answer).
pub fn fork_data(data: usize) -> Box<dyn Benchmark> {
    Box::new(crate::bench::fork::Forks::new(false, data))
}

/// Table III row 8: the 8K-BSS program (csrc/bss8k.c) exec'd by name, as a file in the
/// forker's private directory (a path lookup and a read of the file, as an exec was), by the
/// appendix's `vexecs` program: vfork (which copies nothing, so the row is the exec's), the
/// child's execve("bss8k"), its exit, wait.
pub fn exec_bss() -> Box<dyn Benchmark> {
    Box::new(crate::bench::exec::Execs::new(
        true,
        0,
        crate::bench::exec::Job::Bss8k,
        false,
    ))
}

// ---------------------------------------------------------------------------------------------
// Fig. 1: getpid warm and with an invalid cache

/// Size of the largest cache private to CPU 0 (one whose shared_cpu_list names only CPU 0,
/// or its SMT siblings, which share a core's private caches): the level-2 cache on today's
/// x86, 1 MiB here. Sweeping it leaves nothing of the system-call path in the CPU's own
/// caches, as Feder's "invalid cache" left nothing in the VAX's one cache; sweeping the
/// shared last level as well would cost milliseconds per call, whose noise buries the
/// microseconds being measured. 1 MiB when sysfs says nothing usable.
pub fn private_cache_bytes() -> usize {
    let parse = |s: &str| -> Option<usize> {
        let s = s.trim();
        let (num, mult) = match s.as_bytes().last()? {
            b'K' => (&s[..s.len() - 1], 1024),
            b'M' => (&s[..s.len() - 1], 1024 * 1024),
            _ => (s, 1),
        };
        num.parse::<usize>().ok().map(|n| n * mult)
    };
    let siblings =
        std::fs::read_to_string("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list")
            .unwrap_or_else(|_| "0".into());
    let mut best: Option<(u32, usize)> = None;
    if let Ok(dir) = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache") {
        for e in dir.flatten() {
            let p = e.path();
            let read = |f: &str| std::fs::read_to_string(p.join(f)).ok();
            let level = read("level").and_then(|s| s.trim().parse::<u32>().ok());
            let size = read("size").and_then(|s| parse(&s));
            let private = read("shared_cpu_list")
                .is_some_and(|l| l.trim() == "0" || l.trim() == siblings.trim());
            if let (Some(l), Some(sz), true) = (level, size, private) {
                if best.is_none_or(|(bl, _)| l > bl) {
                    best = Some((l, sz));
                }
            }
        }
    }
    best.map_or(1 << 20, |(_, s)| s)
}

/// Fig. 1's points: getpid alone, a cache sweep then getpid, the cache sweep alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GetpidMode {
    Warm,
    Cold,
    EvictAlone,
}

pub struct Getpid {
    mode: GetpidMode,
    buf: Vec<u8>,
}

impl Getpid {
    pub fn new(mode: GetpidMode) -> Getpid {
        Getpid {
            mode,
            buf: Vec::new(),
        }
    }

    /// Writes one byte in every 64-byte line of the buffer, pushing everything else out of
    /// the caches (data and, with it, the kernel's system-call path).
    #[inline(never)]
    fn evict_l2(&mut self) {
        for i in (0..self.buf.len()).step_by(64) {
            self.buf[i] = self.buf[i].wrapping_add(1);
        }
        std::hint::black_box(&mut self.buf);
    }
}

impl Benchmark for Getpid {
    fn setup(&mut self, _ctx: &Ctx, _iterations: u64) -> Result<(), BenchError> {
        if self.mode != GetpidMode::Warm {
            // Filled now, so the timed sweeps never fault.
            self.buf = vec![1u8; private_cache_bytes()];
        }
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        for _ in 0..iterations {
            if self.mode != GetpidMode::Warm {
                self.evict_l2();
            }
            if self.mode != GetpidMode::EvictAlone {
                std::hint::black_box(sys::getpid_syscall());
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Fig. 2: a byte passed back and forth between two processes, and the same I/O in one

pub struct Csw {
    pair: bool,
    /// Parent to child, child to parent: (read end, write end).
    pipes: Vec<(OwnedFd, OwnedFd)>,
    child: Option<Pid>,
}

impl Csw {
    pub fn new(pair: bool) -> Csw {
        Csw {
            pair,
            pipes: Vec::new(),
            child: None,
        }
    }
}

fn put(fd: RawFd, b: &[u8]) -> Result<(), BenchError> {
    match sys::write(fd, b).map_err(BenchError::sys("write"))? {
        n if n == b.len() => Ok(()),
        n => Err(BenchError::Protocol(format!(
            "short write: {n} of {}",
            b.len()
        ))),
    }
}

fn get1(fd: RawFd) -> Result<(), BenchError> {
    let mut b = [0u8; 1];
    match sys::read(fd, &mut b).map_err(BenchError::sys("read"))? {
        1 => Ok(()),
        _ => Err(BenchError::Protocol("peer closed the pipe early".into())),
    }
}

/// Kills and reaps a child that a failed run left behind.
fn kill_child(child: &mut Option<Pid>) {
    if let Some(pid) = child.take() {
        let _ = sys::kill(pid, libc::SIGKILL);
        let _ = sys::wait_child(pid);
    }
}

impl Benchmark for Csw {
    fn setup(&mut self, ctx: &Ctx, iterations: u64) -> Result<(), BenchError> {
        for _ in 0..2 {
            self.pipes
                .push(sys::pipe().map_err(BenchError::sys("pipe"))?);
        }
        if !self.pair {
            return Ok(());
        }
        let (down, up) = (self.pipes[0].0.as_raw_fd(), self.pipes[1].1.as_raw_fd());
        match sys::fork().map_err(BenchError::sys("fork"))? {
            Fork::Child => {
                ctx.child_init();
                for _ in 0..iterations {
                    if get1(down).and_then(|_| put(up, b"x")).is_err() {
                        sys::exit_now(1);
                    }
                }
                sys::exit_now(0)
            }
            Fork::Parent(pid) => self.child = Some(pid),
        }
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let [(r0, w0), (r1, w1)] = [0, 1].map(|i| {
            self.pipes
                .get(i)
                .map_or((-1, -1), |(r, w)| (r.as_raw_fd(), w.as_raw_fd()))
        });
        for _ in 0..iterations {
            put(w0, b"x")?;
            if !self.pair {
                // The same four calls as one round trip of the pair, with no one to switch to.
                get1(r0)?;
                put(w1, b"x")?;
            }
            get1(r1)?;
        }
        if let Some(pid) = self.child.take() {
            reap(pid)?;
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        kill_child(&mut self.child);
        self.pipes.clear();
        Ok(())
    }
}

impl Drop for Csw {
    fn drop(&mut self) {
        kill_child(&mut self.child);
    }
}

// ---------------------------------------------------------------------------------------------
// Fig. 5: pipe bandwidth against chunk size, between two processes

pub struct PipeBw {
    chunk: usize,
    tx: Option<OwnedFd>,
    child: Option<Pid>,
    buf: Vec<u8>,
}

impl PipeBw {
    pub fn new(chunk: usize) -> PipeBw {
        PipeBw {
            chunk: chunk.max(1),
            tx: None,
            child: None,
            buf: Vec::new(),
        }
    }
}

impl Benchmark for PipeBw {
    fn setup(&mut self, ctx: &Ctx, _iterations: u64) -> Result<(), BenchError> {
        self.buf = vec![0x5a; self.chunk];
        let (rx, tx) = sys::pipe().map_err(BenchError::sys("pipe"))?;
        match sys::fork().map_err(BenchError::sys("fork"))? {
            Fork::Child => {
                ctx.child_init();
                drop(tx);
                // The reader reads in chunks of the same size until the writer closes.
                loop {
                    match sys::read(rx.as_raw_fd(), &mut self.buf) {
                        Ok(0) => sys::exit_now(0),
                        Ok(_) => {}
                        Err(_) => sys::exit_now(1),
                    }
                }
            }
            Fork::Parent(pid) => {
                self.child = Some(pid);
                self.tx = Some(tx);
            }
        }
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let tx = self
            .tx
            .take()
            .ok_or_else(|| BenchError::Protocol("pipe: no setup".into()))?;
        for _ in 0..iterations {
            put(tx.as_raw_fd(), &self.buf)?;
        }
        // End of data: the reader sees EOF, exits, and is reaped inside the timed region.
        drop(tx);
        if let Some(pid) = self.child.take() {
            reap(pid)?;
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.tx = None;
        kill_child(&mut self.child);
        Ok(())
    }
}

impl Drop for PipeBw {
    fn drop(&mut self) {
        self.tx = None;
        kill_child(&mut self.child);
    }
}

// ---------------------------------------------------------------------------------------------
// The series

/// Table III's rows: label, and the VAX-11/780 System V time in ms.
pub const TABLE3: [(&str, f64); 8] = [
    ("chdir", 1.2),
    ("open-close", 2.5),
    ("path-3rd-level", 5.9),
    ("dir-32nd-entry", 3.0),
    ("disk-block", 3.1),
    ("read-4k-file", 19.0),
    ("fork-exit-8k", 22.0),
    ("exec-8k-bss", 19.0),
];

/// The paper's VAX-11/780 System V column of Table III, ms converted to ns.
static TABLE3_PAPER: [[f64; 2]; 8] = [
    [0.0, 1.2e6],
    [1.0, 2.5e6],
    [2.0, 5.9e6],
    [3.0, 3.0e6],
    [4.0, 3.1e6],
    [5.0, 19.0e6],
    [6.0, 22.0e6],
    [7.0, 19.0e6],
];

fn table3_make(row: u64) -> Box<dyn Benchmark> {
    let file = |r| Box::new(FileOps::new(r)) as Box<dyn Benchmark>;
    match row {
        0 => file(FileRow::Chdir),
        1 => file(FileRow::OpenClose),
        2 => file(FileRow::Path3),
        3 => file(FileRow::Dir32),
        4 => file(FileRow::DiskBlock),
        5 => file(FileRow::Read4k),
        6 => fork_data(8 * 1024),
        _ => exec_bss(),
    }
}

pub(super) fn labelled(labels: &[&str]) -> Vec<Point> {
    labels
        .iter()
        .enumerate()
        .map(|(i, l)| Point {
            label: Some((*l).to_string()),
            ..Point::new(i as f64, i as u64)
        })
        .collect()
}

pub(super) const CATEGORY: Axis = Axis {
    name: "operation",
    unit: "",
    log: false,
};

pub static TABLE3_SERIES: SeriesSpec = SeriesSpec {
    id: "feder.table3",
    figure: "feder.table3",
    figure_title: "Table III: System V kernel operations, today",
    curve: "today",
    paper: "Table III: chdir \".\"; open/close \"file\"; search path 3rd level; search dir 32nd \
            position; access disk block; read 4K file; fork/exit 8K data; exec 8K BSS",
    today: "chdir(\".\"); openat+close; faccessat(\"a/b/c\"); faccessat of the 32nd of 64 names; \
            4 KiB O_DIRECT pread on a disk file system; open(O_DIRECT)+read 4096+close; fork + \
            _exit + wait from the small forks program with 8 KiB sbrk'd; vfork + execve by name \
            of an 8 KiB-BSS static program file, from the small vexecs program, + wait",
    x: CATEGORY,
    // The paper's figures are CPU time ("the CPU time to access a disk block"), not elapsed.
    y: YKind::CpuNs,
    unit: "operation",
    shape: Shape::Single,
    points: |_| labelled(&TABLE3.map(|(l, _)| l)),
    make: table3_make,
    paper_points: &TABLE3_PAPER,
    paper_system: Some("VAX-11/780, UNIX System V (5.0), CPU time (Table III)"),
    printed: Some(Printed::FederTable3),
};

/// Fig. 1's point labels.
pub const FIG1: [&str; 3] = ["warm", "cache-invalidated", "sweep-alone"];

pub static FIG1_SERIES: SeriesSpec = SeriesSpec {
    id: "feder.fig1",
    figure: "feder.fig1",
    figure_title: "Fig. 1: system call overhead, getpid (invalid cache)",
    curve: "today",
    paper: "Fig. 1: getpid with nothing useful in the memory cache at the call",
    today: "syscall(SYS_getpid) alone; after writing a buffer the size of the CPU's private \
            (L2) cache; and that sweep alone (derive: cold getpid = second - third)",
    x: CATEGORY,
    y: YKind::CostNs,
    unit: "call",
    shape: Shape::Single,
    points: |_| labelled(&FIG1),
    make: |p| {
        Box::new(Getpid::new(match p {
            0 => GetpidMode::Warm,
            1 => GetpidMode::Cold,
            _ => GetpidMode::EvictAlone,
        }))
    },
    paper_points: &[],
    paper_system: None,
    printed: None,
};

fn one_point(label: &str) -> Vec<Point> {
    labelled(&[label])
}

pub static FIG2_PAIR: SeriesSpec = SeriesSpec {
    id: "feder.fig2-pair",
    figure: "feder.fig2",
    figure_title: "Fig. 2: context switch (1-byte pipe round trip, less the same I/O alone)",
    curve: "two processes",
    paper: "Fig. 2: a byte of data passed back and forth between two processes",
    today: "parent writes 1 byte on one pipe, child reads it and writes 1 byte back on another, \
            parent reads it: two switches per round trip",
    x: CATEGORY,
    y: YKind::CostNs,
    unit: "round trip",
    shape: Shape::Pair,
    points: |_| one_point("round-trip"),
    make: |_| Box::new(Csw::new(true)),
    paper_points: &[],
    paper_system: None,
    printed: None,
};

pub static FIG2_SELF: SeriesSpec = SeriesSpec {
    id: "feder.fig2-self",
    figure: "feder.fig2",
    figure_title: "Fig. 2: context switch (1-byte pipe round trip, less the same I/O alone)",
    curve: "one process, same I/O",
    paper: "Fig. 2: the times to perform equivalent I/O without context switches (subtracted)",
    today: "one process makes the round trip's two 1-byte writes and two reads on its own pipes",
    x: CATEGORY,
    y: YKind::CostNs,
    unit: "round trip",
    shape: Shape::Single,
    points: |_| one_point("round-trip"),
    make: |_| Box::new(Csw::new(false)),
    paper_points: &[],
    paper_system: None,
    printed: None,
};

pub static FIG3_SERIES: SeriesSpec = SeriesSpec {
    id: "feder.fig3",
    figure: "feder.fig3",
    figure_title: "Fig. 3: fork/exit against the process's data size",
    curve: "today",
    paper: "Fig. 3: fork/exit of a very small program with 32 kilobytes of data added by sbrk \
            (Table III: 8K)",
    today: "the appendix's forks program (a few KiB of C): sbrk(size) touched every 1 KiB, then \
            fork, child _exit, wait",
    x: Axis {
        name: "data size",
        unit: "bytes",
        log: false,
    },
    y: YKind::CostNs,
    unit: "fork/exit",
    shape: Shape::Single,
    points: |quick| {
        let sizes: &[u64] = if quick {
            &[0, 32 << 10]
        } else {
            &[0, 8 << 10, 32 << 10, 128 << 10, 1 << 20]
        };
        sizes.iter().map(|&s| Point::new(s as f64, s)).collect()
    },
    make: |p| fork_data(p as usize),
    paper_points: &[],
    paper_system: None,
    printed: None,
};

pub static FIG5_SERIES: SeriesSpec = SeriesSpec {
    id: "feder.fig5",
    figure: "feder.fig5",
    figure_title: "Fig. 5: pipe bandwidth against transfer size",
    curve: "today",
    paper: "Fig. 5: maximum rate of data transfer between two processes through a pipe, \
            against the size of the chunks (512 and 1024 bytes discussed)",
    today: "parent writes chunks into a pipe, a child reads chunks of the same size until EOF",
    x: Axis {
        name: "chunk size",
        unit: "bytes",
        log: true,
    },
    y: YKind::BytesPerSec,
    unit: "chunk",
    shape: Shape::Pair,
    points: |quick| {
        let sizes: &[u64] = if quick {
            &[512, 4096]
        } else {
            &[1, 16, 128, 512, 1024, 4096, 16384, 65536]
        };
        sizes
            .iter()
            .map(|&s| Point {
                bytes_per_op: s as f64,
                ..Point::new(s as f64, s)
            })
            .collect()
    },
    make: |p| Box::new(PipeBw::new(p as usize)),
    paper_points: &[],
    paper_system: None,
    printed: None,
};

fn series() -> Vec<&'static SeriesSpec> {
    vec![
        &TABLE3_SERIES,
        &FIG1_SERIES,
        &FIG2_PAIR,
        &FIG2_SELF,
        &FIG3_SERIES,
        &FIG5_SERIES,
    ]
}

fn preflight() -> Result<Vec<String>, String> {
    let mut notes = vec![format!(
        "Fig. 1's cache invalidation writes a {} KiB buffer (CPU 0's largest private \
         cache) between getpid calls",
        private_cache_bytes() / 1024
    )];
    notes.push(match super::disk_dir() {
        Ok((p, fs)) => format!(
            "uncached block reads use O_DIRECT on {} ({fs})",
            p.display()
        ),
        Err(e) => format!("{e}; Table III rows 5-6 will fail"),
    });
    Ok(notes)
}

/// The y estimate of the point `label` of series `id`.
pub(super) fn point_y<'a>(series: &'a [Series], id: &str, label: &str) -> Option<&'a Estimate> {
    series
        .iter()
        .find(|s| s.id == id)?
        .points
        .iter()
        .find(|p| p.label.as_deref() == Some(label))?
        .y
        .as_ref()
}

/// `(a - b) / div` with the widest interval the two intervals allow, in ns.
fn difference(name: &str, a: (&str, &Estimate), b: (&str, &Estimate), div: f64) -> Derived {
    let (an, a) = a;
    let (bn, b) = b;
    let (lo, hi) = ((a.ci_low - b.ci_high) / div, (a.ci_high - b.ci_low) / div);
    let verdict = if a.n < 2 || b.n < 2 {
        "one trial: no interval"
    } else if lo <= 0.0 && hi >= 0.0 {
        "includes 0: within noise"
    } else {
        "excludes 0"
    };
    let over = if div == 1.0 {
        String::new()
    } else {
        format!(" / {div}")
    };
    let value = (a.median - b.median) / div;
    Derived {
        // A difference of two medians can come out negative, or within the noise of its
        // inputs, and a --quick trial has no interval: then the figure prints as n/a with
        // the reason, not as a cost of -4510 ns (#45).
        na: crate::derived::unsupported(&[a.n, b.n], Some((lo, hi)), value),
        name: name.into(),
        value,
        unit: "ns".into(),
        formula: format!(
            "({an} - {bn}){over} = ({:.1} - {:.1}){over} ns; from the intervals: {lo:.1} to \
             {hi:.1} ({verdict})",
            a.median, b.median
        ),
    }
}

fn derive(series: &[Series]) -> Vec<Derived> {
    let mut out = Vec::new();
    if let (Some(c), Some(s)) = (
        point_y(series, "feder.fig1", FIG1[1]),
        point_y(series, "feder.fig1", FIG1[2]),
    ) {
        out.push(difference(
            "getpid with an invalid cache (Fig. 1)",
            ("sweep+getpid", c),
            ("sweep alone", s),
            1.0,
        ));
    }
    if let (Some(p), Some(s)) = (
        point_y(series, "feder.fig2-pair", "round-trip"),
        point_y(series, "feder.fig2-self", "round-trip"),
    ) {
        out.push(difference(
            "context switch (Fig. 2)",
            ("pair round trip", p),
            ("same I/O in one process", s),
            2.0,
        ));
    }
    out
}

pub static SUITE: Suite = Suite {
    name: "feder",
    title: "Feder 1984: the evolution of UNIX system performance (kernel operations)",
    paper: "J. Feder, \"The Evolution of UNIX System Performance\", AT&T Bell Laboratories \
            Technical Journal 63(8), 1984: Section III, Table III, Figs. 1, 2, 3, 5",
    series,
    preflight,
    derive,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_planted_at_the_old_predictable_scratch_names_do_not_stop_the_suite() {
        // Another user could make sysperf-feder-<pid>-<n> before a run (files here; as
        // directories of their own they would be the same obstacle): the scratch directory
        // is made elsewhere, private, and the planted names are left alone.
        let base = tempfile::tempdir().unwrap();
        for n in 0..256 {
            let planted = base
                .path()
                .join(format!("sysperf-feder-{}-{n}", std::process::id()));
            std::fs::write(planted, "theirs").unwrap();
        }
        let s = Scratch::new(base.path()).unwrap();
        assert!(s.path().is_dir());
        assert!(s.fd() >= 0);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(s.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        drop(s);
        assert_eq!(std::fs::read_dir(base.path()).unwrap().count(), 256);
    }

    #[test]
    fn table3_is_cpu_time_as_the_papers_times_are_not_elapsed_time() {
        use crate::model::{BenchResult, Trial, Usage};
        assert_eq!(TABLE3_SERIES.y, YKind::CpuNs);
        // A disk read: 3 ms elapsed waiting for the device, 0.1 ms of CPU (the worker's own
        // and its reaped children's). The paper's 3.1 ms was CPU time, so the y is the 0.1.
        let trial = Trial {
            usage: Usage {
                user_ns: 200_000,
                sys_ns: 800_000,
                ..Usage::default()
            },
            children: Some(Usage::default()),
            ..Trial::measured(10, 30_000_000)
        };
        let result = BenchResult {
            id: "feder.table3@disk-block".into(),
            group: "feder".into(),
            ops_per_iteration: 1,
            paper_count: 1,
            unit: "operation".into(),
            placement: "single".into(),
            cpus: vec![],
            trials: vec![trial],
            summary: None,
            error: None,
        };
        let ys = crate::suite::y_samples(TABLE3_SERIES.y, 0.0, &result, None);
        assert_eq!(ys, [100_000.0]);
        // Figs. 1-3 and 5 stay elapsed time.
        assert_eq!(FIG1_SERIES.y, YKind::CostNs);
    }

    #[test]
    fn table3_is_the_published_vax_column() {
        let rows = crate::published::feder_rows().unwrap();
        let published: Vec<(&str, f64)> = rows
            .iter()
            .map(|r| (r.operation.as_str(), r.vax780_ms))
            .collect();
        assert_eq!(published, TABLE3);
        for (i, (_, ms)) in TABLE3.iter().enumerate() {
            assert_eq!(TABLE3_PAPER[i], [i as f64, ms * 1e6]);
        }
    }

    /// Bytes this thread has caused to be read from storage (/proc/thread-self/io).
    fn thread_read_bytes() -> u64 {
        let s = std::fs::read_to_string("/proc/thread-self/io").unwrap();
        s.lines()
            .find_map(|l| l.strip_prefix("read_bytes: "))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    #[test]
    fn the_large_directory_has_64_entries_and_the_target_is_the_32nd_created() {
        let mut b = FileOps::new(FileRow::Dir32);
        b.setup(&Ctx::default(), 1).unwrap();
        let dir = b.scratch().unwrap().path().to_path_buf();
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names.len(), DIR_ENTRIES);
        assert!(names.len() >= 32, "{} entries", names.len());
        // Creation order: each entry's inode is newer than the one before.
        let ino = |i: usize| {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(dir.join(dir_entry_name(i)))
                .unwrap()
                .ino()
        };
        assert!((2..=DIR_ENTRIES).all(|i| ino(i) != ino(i - 1)));
        assert_eq!(b.target().to_str().unwrap(), dir_entry_name(32));
        assert_eq!(
            names.iter().filter(|n| **n == dir_entry_name(32)).count(),
            1
        );
        b.run(3).unwrap();
        b.teardown().unwrap();
        assert!(!dir.exists(), "scratch directory left behind");
    }

    #[test]
    fn the_third_level_path_exists_and_every_scratch_is_removed() {
        for row in [FileRow::OpenClose, FileRow::Path3, FileRow::Chdir] {
            let mut b = FileOps::new(row);
            b.setup(&Ctx::default(), 1).unwrap();
            let dir = b.scratch().unwrap().path().to_path_buf();
            if row == FileRow::Path3 {
                assert!(dir.join("a/b/c").is_dir());
                assert_eq!(b.target().to_bytes(), b"a/b/c");
            }
            b.run(5).unwrap();
            drop(b);
            assert!(!dir.exists(), "{row:?}: {} left behind", dir.display());
        }
    }

    #[test]
    fn uncached_reads_really_read_the_disk_every_time() {
        // O_DIRECT bypasses the page cache: each read is a block-layer read, counted in this
        // thread's read_bytes (which counts only bytes fetched from storage).
        let Ok((base, fs)) = crate::suite::disk_dir() else {
            eprintln!("no disk-backed directory here: skipping");
            return;
        };
        let t = sys::fs_type(&base).unwrap();
        assert!(
            t != crate::suite::TMPFS_MAGIC && t != crate::suite::RAMFS_MAGIC,
            "{} is {fs}",
            base.display()
        );
        for row in [FileRow::DiskBlock, FileRow::Read4k] {
            let mut b = FileOps::new(row);
            b.setup(&Ctx::default(), 1).unwrap();
            let n = 20;
            let before = thread_read_bytes();
            b.run(n).unwrap();
            let read = thread_read_bytes() - before;
            assert!(
                read >= n * BLOCK as u64,
                "{row:?}: {read} bytes from storage for {n} reads"
            );
            b.teardown().unwrap();
        }
    }

    #[test]
    fn the_8k_bss_job_has_exactly_8_kib_of_bss() {
        // ELF64 program headers: the PT_LOAD segments' memsz - filesz is the zero-filled BSS.
        let b = crate::bench::exec::BSS8K_JOB;
        assert_eq!(&b[..4], b"\x7fELF");
        assert_eq!(b[4], 2, "ELF64");
        let u16at = |o: usize| u16::from_le_bytes(b[o..o + 2].try_into().unwrap()) as usize;
        let u64at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        let (phoff, phentsize, phnum) = (u64at(0x20) as usize, u16at(0x36), u16at(0x38));
        let mut bss = 0;
        for i in 0..phnum {
            let h = phoff + i * phentsize;
            if u32::from_le_bytes(b[h..h + 4].try_into().unwrap()) == 1 {
                bss += u64at(h + 0x28) - u64at(h + 0x20);
            }
        }
        // 8 KiB of BSS, plus at most the alignment padding of the segment.
        assert!((8192..8192 + 64).contains(&bss), "bss {bss}");
        assert!(
            b.len() < 8192,
            "the BSS takes no room in the file: {}",
            b.len()
        );
    }

    #[test]
    fn exec_and_fork_points_run_their_children_to_completion() {
        // Both fork from the small forks/execs program, not this multi-MiB process (#45):
        // its answer (its own and its children's usage, its size) is the point's.
        for row in [6, 7] {
            let mut b = table3_make(row);
            b.setup(&Ctx::default(), 20).unwrap();
            b.run(20).unwrap();
            let h = b.helper().expect("the forker's answer");
            b.teardown().unwrap();
            assert!(h.maps > 0 && h.maps < 16, "row {row}: {} mappings", h.maps);
            assert!(
                h.rss_bytes < 2 << 20,
                "row {row}: a forker of {} bytes",
                h.rss_bytes
            );
            // The children it reaped ran: a fork's child faults at least its stack page; an
            // exec's child maps a new image and faults its BSS.
            assert!(h.children.minflt >= 20, "row {row}: {:?}", h.children);
        }
        let own = sys::process_size(&sys::getpid().to_string());
        assert!(own.2 >= 16, "this test process has {} mappings", own.2);
    }

    #[test]
    fn pipe_and_switch_benchmarks_complete_their_exchanges() {
        let mut p = PipeBw::new(1000);
        p.setup(&Ctx::default(), 50).unwrap();
        p.run(50).unwrap();
        p.teardown().unwrap();
        for pair in [true, false] {
            let mut c = Csw::new(pair);
            c.setup(&Ctx::default(), 30).unwrap();
            c.run(30).unwrap();
            c.teardown().unwrap();
        }
    }

    #[test]
    fn private_cache_size_is_read_or_defaults_to_1_mib() {
        let n = private_cache_bytes();
        assert!(n >= 16 * 1024, "{n}");
    }

    #[test]
    fn derive_reports_cold_getpid_and_per_switch_cost() {
        // The difference and its interval from two estimates; verdict on the interval.
        let e = |m: f64| crate::stats::estimate(&[m - 1.0, m, m + 1.0]).unwrap();
        let d = difference("x", ("a", &e(5000.0)), ("b", &e(1000.0)), 2.0);
        assert_eq!(d.value, 2000.0);
        assert!(d.formula.contains("excludes 0"), "{}", d.formula);
        let d = difference("x", ("a", &e(1000.5)), ("b", &e(1000.0)), 1.0);
        assert!(d.formula.contains("within noise"), "{}", d.formula);
    }

    #[test]
    fn a_difference_its_inputs_cannot_support_is_n_a_with_the_reason() {
        let e = |m: f64| crate::stats::estimate(&[m - 1.0, m, m + 1.0]).unwrap();
        assert_eq!(
            difference("x", ("a", &e(5000.0)), ("b", &e(1000.0)), 2.0).na,
            None
        );
        // A --quick trial gave Fig. 1 as -4510 ns: printed, not n/a (#45).
        let one = |m: f64| crate::stats::estimate(&[m]).unwrap();
        let d = difference("x", ("a", &one(1000.0)), ("b", &one(5510.0)), 1.0);
        assert_eq!(d.value, -4510.0);
        assert!(
            d.na.as_deref().unwrap_or("").starts_with("one trial"),
            "{d:?}"
        );
        let d = difference("x", ("a", &e(1000.0)), ("b", &e(5510.0)), 1.0);
        assert!(
            d.na.as_deref().unwrap_or("").starts_with("negative"),
            "{d:?}"
        );
        let d = difference("x", ("a", &e(1000.5)), ("b", &e(1000.0)), 1.0);
        assert!(
            d.na.as_deref().unwrap_or("").contains("includes 0"),
            "{d:?}"
        );
    }
}
