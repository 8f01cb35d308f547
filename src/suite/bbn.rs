//! The BBN suite (`sysperf run --suite bbn`): Kranc, *Performance Improvements in UNIX Pipes
//! and Ports*, BBN Report 3970 (1978), on today's kernel.
//!
//! What it measures, after the report's test programs:
//! - §2, Tables 1-2 (t.pipe1.c): a parent writes N blocks of one size into a pipe, a child
//!   reads them. The child reads exactly one block size per block and loops on short reads
//!   (`read_exact`: a pipe may hand a block over in pieces, which happens here above the
//!   64 KiB pipe buffer). Block sizes are the report's, 2..4096 in powers of two, then on to
//!   1 MiB. Two curves: the report's fixed 1000 blocks (up to 4096, as the report), and a count
//!   calibrated to `--min-time` (up to 1 MiB).
//! - §3, Tables 3-4 (t.port1.c): "ports" were Rand's named IPC channels; today's equivalent is a
//!   named FIFO (mkfifo in a temporary directory). Three curves: the bare FIFO (Table 4's
//!   t.port1 "modified so that it did no checking and wrote no headers"), the FIFO with an
//!   8-byte header per block (length and sequence number; "t.port1.c writes an 8-byte header
//!   before it writes each block", so the header is a write(2) of its own, then the block's,
//!   and the reader reads the header, then the block), and the header with the report's
//!   checking (Table 3). The report says only that
//!   t.port1 "does much more extensive checking" and that at 4096 bytes/block "over 2 minutes are
//!   consumed in this checking"; its user time grows with the bytes moved, i.e. the check
//!   touched every byte. So here the writer fills every payload with a pattern derived from the
//!   block's sequence number, and the reader checks the header's length and sequence and
//!   compares every payload byte with the expected pattern; any mismatch fails the trial.
//! - §5, Tables 7-8, the "real-world" test: "Two processes were run in background, each of
//!   which executed t.pipe1.c. Additionally, a third process was run which copied a file
//!   continuously", and "the times for these two routines were then recorded". Here the two
//!   pipe pairs (this worker writing to its child, and a second writer and reader forked in
//!   setup) start together at the beginning of the timed region, each moves the same blocks,
//!   and the region ends when the measured pair has finished: its wall time is one t.pipe1's
//!   real time, as the report timed each process, and one operation is one block of it (the
//!   second pair, the report's other process, is waited for after the clock stops). A third process copies a 4 MiB file over and over
//!   with read/write on a disk-backed file system. 1000 blocks of 128 bytes, then 100 blocks of
//!   4096 bytes.
//!
//! One operation is one block; y is throughput (block size over the wall time per block, the
//! header not counted). The reader is reaped inside the timed region, so each point's rusage
//! (user and system time of both processes) gives the report's system time and CPU usage %,
//! (user+system)/real. In the real-world test only the measured pair is reaped inside it, so
//! its CPU columns are one t.pipe1's, its writer's and reader's, beside each of the report's
//! per-process times (#45); the second pair and the copier are reaped in teardown, and their
//! CPU time is no measured pair's, as under the report's time(1).
//!
//! Where today differs from 1978: a pipe is an in-memory ring of pages (64 KiB by default),
//! not an i-node on disk whose blocks go through the buffer cache, so the disk traffic the
//! report's improvement removed does not exist at all; writes of up to PIPE_BUF (4096) bytes
//! are atomic. A FIFO is the same pipe code reached through a name: the name is used to open
//! both ends in setup and unlinked right after (with its directory), so nothing is left on
//! disk even if the worker is killed. The file copy goes through the page cache, whose dirty
//! pages the kernel writes back behind it, as the report's copy went through the buffer cache
//! with its delayed writes (no fsync: the report's copier had none).
//! Nothing here models the report's PDP-11 or its "improved" kernel; the paper's printed
//! figures are drawn beside today's curves as printed.

use super::{Axis, Point, Printed, SeriesSpec, Suite};
use crate::bench::{Benchmark, Ctx, Placement, Shape};
use crate::error::BenchError;
use crate::model::YKind;
use crate::sys::{self, Fork, Pid};
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::PathBuf;

/// Bytes of the port header: the payload length and the sequence number, little-endian u32s.
pub const HEADER: usize = 8;
/// The report's count per run (Tables 1-6).
pub const REPORT_BLOCKS: u64 = 1000;
/// The largest block of the sweep.
const MAX_SIZE: u64 = 1 << 20;
/// The file the real-world test's copier copies, and its copy buffer.
const COPY_BYTES: usize = 4 << 20;
const COPY_CHUNK: usize = 64 << 10;

/// How a block travels: as bare bytes, behind a header, or behind a header and checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    Bare,
    Header,
    Checked,
}

impl Framing {
    /// Bytes that travel for a block of `size` (header included; a headed block is two writes).
    pub fn record_len(self, size: usize) -> usize {
        match self {
            Framing::Bare => size,
            Framing::Header | Framing::Checked => size + HEADER,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Via {
    Pipe,
    Fifo,
}

/// Why the reader gave up; also its exit status, so the parent can name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    Io = 1,
    Eof = 2,
    Length = 3,
    Sequence = 4,
    Payload = 5,
}

impl Fault {
    fn from_code(code: i32) -> Option<Fault> {
        [
            Fault::Io,
            Fault::Eof,
            Fault::Length,
            Fault::Sequence,
            Fault::Payload,
        ]
        .into_iter()
        .find(|f| *f as i32 == code)
    }

    fn describe(self) -> &'static str {
        match self {
            Fault::Io => "a read failed",
            Fault::Eof => "the writer closed the channel before the last block",
            Fault::Length => "a block's header carries the wrong length",
            Fault::Sequence => "a block's header carries the wrong sequence number",
            Fault::Payload => "a block's payload differs from what the writer sent",
        }
    }
}

impl From<Fault> for BenchError {
    fn from(f: Fault) -> BenchError {
        BenchError::Protocol(format!("reader: {}", f.describe()))
    }
}

/// The payload byte `i` of block `seq` under checking: differs between neighbouring blocks and
/// along the block, so a lost, repeated, reordered or torn block is seen.
#[inline]
fn pattern_byte(seq: u32, i: usize) -> u8 {
    (seq.wrapping_mul(31) as usize).wrapping_add(i) as u8
}

/// Writes the header of block `seq` (payload `size` bytes) at the start of `rec`.
#[inline]
pub fn put_header(rec: &mut [u8], size: usize, seq: u32) {
    rec[..4].copy_from_slice(&(size as u32).to_le_bytes());
    rec[4..HEADER].copy_from_slice(&seq.to_le_bytes());
}

/// The checked writer's record: the header, then every payload byte from the pattern.
pub fn fill_record(rec: &mut [u8], size: usize, seq: u32) {
    put_header(rec, size, seq);
    for (i, b) in rec[HEADER..HEADER + size].iter_mut().enumerate() {
        *b = pattern_byte(seq, i);
    }
}

/// The report's checking: the header's length and sequence, then every payload byte.
pub fn check_record(rec: &[u8], size: usize, seq: u32) -> Result<(), Fault> {
    let word = |at: usize| u32::from_le_bytes([rec[at], rec[at + 1], rec[at + 2], rec[at + 3]]);
    if rec.len() != size + HEADER || word(0) as usize != size {
        return Err(Fault::Length);
    }
    if word(4) != seq {
        return Err(Fault::Sequence);
    }
    let bad = rec[HEADER..]
        .iter()
        .enumerate()
        .any(|(i, &b)| b != pattern_byte(seq, i));
    if bad {
        return Err(Fault::Payload);
    }
    Ok(())
}

/// The reader's loop: `blocks` records of `framing` into `rec`, the header (if any) and then
/// the block each read whole (looping on short reads), and checked when the framing says so.
pub fn read_blocks(
    rx: &mut File,
    framing: Framing,
    size: usize,
    blocks: u64,
    rec: &mut [u8],
) -> Result<(), Fault> {
    let rec = &mut rec[..framing.record_len(size)];
    let mut read = |part: &mut [u8]| {
        rx.read_exact(part).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => Fault::Eof,
            _ => Fault::Io,
        })
    };
    for seq in 0..blocks {
        // The header as the writer sent it, on its own, then the block.
        match framing {
            Framing::Bare => read(rec)?,
            Framing::Header | Framing::Checked => {
                let (head, block) = rec.split_at_mut(HEADER);
                read(head)?;
                read(block)?;
            }
        }
        if framing == Framing::Checked {
            check_record(rec, size, seq as u32)?;
        }
    }
    Ok(())
}

/// Sends `rec` with exactly one write(2).
#[inline]
fn send_block(tx: &mut File, rec: &[u8]) -> Result<(), BenchError> {
    let n = tx.write(rec).map_err(BenchError::sys("write"))?;
    if n != rec.len() {
        return Err(BenchError::Protocol(format!(
            "short write: {n} of {} bytes",
            rec.len()
        )));
    }
    Ok(())
}

/// A directory of our own under the temporary directory, removed by `remove` and on drop.
struct Scratch {
    path: PathBuf,
}

impl Scratch {
    fn new() -> Result<Scratch, BenchError> {
        let path = crate::harness::janitor::scratch_dir(&std::env::temp_dir(), "bbn")
            .map_err(BenchError::sys("mkdir (scratch directory)"))?;
        Ok(Scratch { path })
    }

    fn remove(&self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        self.remove();
    }
}

/// A named FIFO's two ends, opened without blocking: a read-write open (which Linux allows on a
/// FIFO) stands in as the writer while the real read end opens, then the write end opens
/// against that reader. The name and its directory are gone when this returns.
fn open_port() -> Result<(File, File), BenchError> {
    let dir = Scratch::new()?;
    let name = dir.path.join("port");
    sys::mkfifo(&name, 0o600).map_err(BenchError::sys("mkfifo"))?;
    let open = |read: bool, write: bool| {
        std::fs::OpenOptions::new()
            .read(read)
            .write(write)
            .open(&name)
            .map_err(BenchError::sys("open fifo"))
    };
    let stand_in = open(true, true)?;
    let rx = open(true, false)?;
    let tx = open(false, true)?;
    drop(stand_in);
    dir.remove();
    Ok((rx, tx))
}

/// Kills and reaps children; a child already gone is not an error.
pub(crate) fn kill_and_reap(pids: &mut Vec<Pid>) {
    for &pid in pids.iter() {
        let _ = sys::kill(pid, libc::SIGKILL);
    }
    for pid in pids.drain(..) {
        let _ = sys::wait_child(pid);
    }
}

/// Forks a long-lived child that runs `body` (which must not return to the caller's code).
pub(crate) fn spawn(
    ctx: &Ctx,
    name: &str,
    cpus: Option<&[u32]>,
    body: impl FnOnce() -> i32,
) -> Result<Pid, BenchError> {
    match sys::fork().map_err(BenchError::sys("fork"))? {
        Fork::Child => {
            ctx.child_init();
            if let Some(c) = cpus {
                let _ = sys::set_affinity(c);
            }
            sys::set_process_name(name);
            sys::exit_now(body())
        }
        Fork::Parent(pid) => Ok(pid),
    }
}

/// One writer-reader pair moving `iterations` blocks: the pipe and port tests.
struct Stream {
    via: Via,
    framing: Framing,
    size: usize,
    rec: Vec<u8>,
    tx: Option<File>,
    reader: Vec<Pid>,
}

impl Stream {
    fn new(via: Via, framing: Framing, size: u64) -> Stream {
        Stream {
            via,
            framing,
            size: size.clamp(1, MAX_SIZE) as usize,
            rec: Vec::new(),
            tx: None,
            reader: Vec::new(),
        }
    }
}

impl Benchmark for Stream {
    fn setup(&mut self, ctx: &Ctx, iterations: u64) -> Result<(), BenchError> {
        let (mut rx, tx) = match self.via {
            Via::Pipe => {
                let (r, w) = sys::pipe().map_err(BenchError::sys("pipe"))?;
                (File::from(r), File::from(w))
            }
            Via::Fifo => open_port()?,
        };
        // Allocated before the fork: the reader only makes system calls.
        self.rec = vec![0x5a; self.framing.record_len(self.size)];
        let (framing, size) = (self.framing, self.size);
        let rec = &mut self.rec;
        // The reader keeps its copy of the write end; it dies with this process anyway.
        let pid = spawn(ctx, "sysperf:reader", None, || {
            match read_blocks(&mut rx, framing, size, iterations, rec) {
                Ok(()) => 0,
                Err(f) => f as i32,
            }
        })?;
        self.reader.push(pid);
        // Only the reader holds the read end: if it dies, the writer gets EPIPE, not a hang.
        drop(rx);
        self.tx = Some(tx);
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let (framing, size) = (self.framing, self.size);
        let tx = self
            .tx
            .as_mut()
            .ok_or_else(|| BenchError::Protocol("no channel".into()))?;
        let rec = &mut self.rec[..framing.record_len(size)];
        for seq in 0..iterations {
            let seq = seq as u32;
            match framing {
                Framing::Bare => send_block(tx, rec)?,
                Framing::Header | Framing::Checked => {
                    if framing == Framing::Header {
                        put_header(rec, size, seq);
                    } else {
                        fill_record(rec, size, seq);
                    }
                    // "t.port1.c writes an 8-byte header before it writes each block" (§3):
                    // two write(2)s, so small blocks pay a second system call.
                    send_block(tx, &rec[..HEADER])?;
                    send_block(tx, &rec[HEADER..])?;
                }
            }
        }
        // Reaped inside the timed region: the reader's CPU time belongs to the trial.
        let pid = self
            .reader
            .pop()
            .ok_or_else(|| BenchError::Protocol("no reader".into()))?;
        let code = sys::wait_child(pid).map_err(BenchError::sys("waitpid"))?;
        match (code, Fault::from_code(code)) {
            (0, _) => Ok(()),
            (_, Some(f)) => Err(f.into()),
            (c, None) => Err(BenchError::Protocol(format!("reader exited with {c}"))),
        }
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.tx = None;
        kill_and_reap(&mut self.reader);
        Ok(())
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        kill_and_reap(&mut self.reader);
    }
}

/// Copies `src` onto `dst` over and over with read/write, as a file copy does: the writes go to
/// the page cache and the kernel writes them back.
fn copy_forever(src: &mut File, dst: &mut File, buf: &mut [u8]) -> std::io::Result<()> {
    loop {
        src.rewind()?;
        dst.rewind()?;
        loop {
            let n = src.read(buf)?;
            if n == 0 {
                break;
            }
            dst.write_all(&buf[..n])?;
        }
    }
}

/// The real-world test: two timed pipe pairs side by side and a file copier.
struct RealWorld {
    measured: Stream,
    /// The second pair's writer and reader, reaped inside the timed region.
    second: Vec<Pid>,
    /// Written once to start the second pair's writer at the start of the timed region.
    go: Option<File>,
    /// The copier, killed in teardown.
    load: Vec<Pid>,
}

impl RealWorld {
    fn new(size: u64) -> RealWorld {
        RealWorld {
            measured: Stream::new(Via::Pipe, Framing::Bare, size),
            second: Vec::new(),
            go: None,
            load: Vec::new(),
        }
    }

    /// The competing processes run on every CPU the measured pair may use, as everything
    /// shared the report's one CPU.
    fn load_cpus(ctx: &Ctx) -> Option<Vec<u32>> {
        let mut cpus = sys::get_affinity().ok()?;
        if let Placement::ChildOn(c) = ctx.placement {
            if !cpus.contains(&c) {
                cpus.push(c);
            }
        }
        Some(cpus)
    }

    fn start_copier(&mut self, ctx: &Ctx, cpus: Option<&[u32]>) -> Result<(), BenchError> {
        // A disk-backed directory: the report's copy was "guaranteeing continuous disk activity".
        let (base, _) = super::disk_dir().map_err(BenchError::Protocol)?;
        let path = crate::harness::janitor::scratch_dir(&base, "bbn")
            .map_err(BenchError::sys("mkdir (scratch directory)"))?;
        let dir = Scratch { path };
        let mut buf = vec![0xa5u8; COPY_CHUNK];
        let (src_name, dst_name) = (dir.path.join("src"), dir.path.join("dst"));
        let mut src = File::create(&src_name).map_err(BenchError::sys("create"))?;
        for _ in 0..COPY_BYTES / COPY_CHUNK {
            src.write_all(&buf).map_err(BenchError::sys("write"))?;
        }
        drop(src);
        let mut src = File::open(&src_name).map_err(BenchError::sys("open"))?;
        let mut dst = File::create(&dst_name).map_err(BenchError::sys("create"))?;
        // The copier keeps its files open; the names go now, so nothing outlives the worker.
        dir.remove();
        let pid = spawn(ctx, "sysperf:copier", cpus, || {
            match copy_forever(&mut src, &mut dst, &mut buf) {
                Ok(()) => 0,
                Err(_) => Fault::Io as i32,
            }
        })?;
        self.load.push(pid);
        Ok(())
    }

    /// The second t.pipe1: a writer that waits for the go byte, then sends `blocks` blocks,
    /// and a reader that reads them; both exit 0 when done.
    fn start_second_pair(
        &mut self,
        ctx: &Ctx,
        cpus: Option<&[u32]>,
        blocks: u64,
    ) -> Result<(), BenchError> {
        let (r, w) = sys::pipe().map_err(BenchError::sys("pipe"))?;
        let (mut rx, mut tx) = (File::from(r), File::from(w));
        let (go_r, go_w) = sys::pipe().map_err(BenchError::sys("pipe"))?;
        let mut go_r = File::from(go_r);
        let mut rec = vec![0x3c; self.measured.size];
        let writer = spawn(ctx, "sysperf:pair2w", cpus, || {
            let mut go = [0u8; 1];
            if go_r.read_exact(&mut go).is_err() {
                return Fault::Eof as i32;
            }
            for _ in 0..blocks {
                if send_block(&mut tx, &rec).is_err() {
                    return Fault::Io as i32;
                }
            }
            0
        })?;
        self.second.push(writer);
        drop((go_r, tx));
        let reader = spawn(ctx, "sysperf:pair2r", cpus, || {
            match read_blocks(&mut rx, Framing::Bare, rec.len(), blocks, &mut rec) {
                Ok(()) => 0,
                Err(f) => f as i32,
            }
        })?;
        self.second.push(reader);
        self.go = Some(File::from(go_w));
        Ok(())
    }
}

impl Benchmark for RealWorld {
    fn setup(&mut self, ctx: &Ctx, iterations: u64) -> Result<(), BenchError> {
        let cpus = RealWorld::load_cpus(ctx);
        self.start_copier(ctx, cpus.as_deref())?;
        self.start_second_pair(ctx, cpus.as_deref(), iterations)?;
        self.measured.setup(ctx, iterations)
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        // Both pairs start now; the region ends when the measured pair has finished, its
        // reader reaped: one t.pipe1's time(1), real and CPU, as the report timed each
        // process (#45). The second pair is the report's other process, reaped in teardown,
        // after the clock, so none of its time is the measured one's.
        let go = self
            .go
            .take()
            .ok_or_else(|| BenchError::Protocol("no second pair".into()))?;
        send_block(&mut { go }, b"g")?;
        self.measured.run(iterations)
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.go = None;
        // The second pair moves all its blocks (it loads the measured pair until it ends,
        // and a trace counts them); a pair that failed fails the trial.
        let waited = self.wait_second();
        kill_and_reap(&mut self.second);
        kill_and_reap(&mut self.load);
        let torn = self.measured.teardown();
        waited.and(torn)
    }
}

impl RealWorld {
    /// Waits for the second pair's writer and reader, each to exit 0.
    fn wait_second(&mut self) -> Result<(), BenchError> {
        for pid in std::mem::take(&mut self.second) {
            let code = sys::wait_child(pid).map_err(BenchError::sys("waitpid"))?;
            match (code, Fault::from_code(code)) {
                (0, _) => {}
                (_, Some(f)) => {
                    return Err(BenchError::Protocol(format!(
                        "second pair: {}",
                        f.describe()
                    )))
                }
                (c, None) => {
                    return Err(BenchError::Protocol(format!("second pair exited with {c}")))
                }
            }
        }
        Ok(())
    }
}

impl Drop for RealWorld {
    fn drop(&mut self) {
        kill_and_reap(&mut self.second);
        kill_and_reap(&mut self.load);
    }
}

// ---------------------------------------------------------------------------------------
// The series.

/// The report's block sizes (Tables 1-6): 2 to 4096 bytes in powers of two.
const PAPER_SIZES: [u64; 12] = [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096];

fn block_point(size: u64, iterations: Option<u64>) -> Point {
    Point {
        bytes_per_op: size as f64,
        iterations,
        ..Point::new(size as f64, size)
    }
}

/// The report's sizes and, when `to_mib`, every power of two on to 1 MiB; quick: 3 of them.
fn sizes(quick: bool, to_mib: bool) -> Vec<u64> {
    match (quick, to_mib) {
        (true, false) => vec![2, 256, 4096],
        (true, true) => vec![2, 4096, MAX_SIZE],
        (false, false) => PAPER_SIZES.to_vec(),
        (false, true) => (1..=20).map(|k| 1u64 << k).collect(),
    }
}

fn report_count_points(quick: bool) -> Vec<Point> {
    sizes(quick, false)
        .into_iter()
        .map(|s| block_point(s, Some(REPORT_BLOCKS)))
        .collect()
}

fn calibrated_points(quick: bool) -> Vec<Point> {
    sizes(quick, true)
        .into_iter()
        .map(|s| block_point(s, None))
        .collect()
}

/// Tables 7-8: 1000 blocks of 128 bytes, then 100 blocks of 4096 bytes.
fn realworld_points(_quick: bool) -> Vec<Point> {
    vec![block_point(128, Some(1000)), block_point(4096, Some(100))]
}

/// A table's real times (seconds, one per report size, for 1000 blocks) as [size, bytes/s].
const fn report_table(real_s: [f64; 12]) -> [[f64; 2]; 12] {
    let mut out = [[0.0; 2]; 12];
    let mut i = 0;
    while i < 12 {
        let size = PAPER_SIZES[i] as f64;
        out[i] = [size, REPORT_BLOCKS as f64 * size / real_s[i]];
        i += 1;
    }
    out
}

/// Table 1 (standard system, PDP-11/40): real time for 1000 blocks.
static TABLE1_PIPE_STANDARD: [[f64; 2]; 12] = report_table([
    10.0, 9.0, 9.0, 9.0, 10.0, 12.0, 15.0, 32.0, 62.0, 123.0, 246.0, 488.0,
]);
/// Table 2, improved system, PDP-11/40 (Table 4's pipe column repeats it but for 8 bytes: 9 s).
static TABLE2_PIPE_IMPROVED: [[f64; 2]; 12] = report_table([
    9.0, 9.0, 10.0, 10.0, 10.0, 11.0, 15.0, 26.0, 45.0, 49.0, 83.0, 91.0,
]);
/// Table 3, improved system: t.port1 with its 8-byte headers and checking.
static TABLE3_PORT_CHECKED: [[f64; 2]; 12] = report_table([
    17.0, 17.0, 17.0, 19.0, 20.0, 22.0, 26.0, 32.0, 47.0, 75.0, 134.0, 249.0,
]);
/// Table 4, port column (improved system): t.port1 without headers or checking.
static TABLE4_PORT_BARE: [[f64; 2]; 12] = report_table([
    9.0, 10.0, 11.0, 11.0, 12.0, 12.0, 12.0, 28.0, 48.0, 53.0, 90.0, 100.0,
]);
/// Tables 7-8, improved system: both processes of both runs (1:40, 1:40, 1:46, 1:46 for
/// 1000 x 128 bytes, printed once as "1.46"; 29, 46, 37, 39 s for 100 x 4096 bytes).
static TABLES78_REALWORLD: [[f64; 2]; 8] = [
    [128.0, 128_000.0 / 100.0],
    [128.0, 128_000.0 / 100.0],
    [128.0, 128_000.0 / 106.0],
    [128.0, 128_000.0 / 106.0],
    [4096.0, 409_600.0 / 29.0],
    [4096.0, 409_600.0 / 46.0],
    [4096.0, 409_600.0 / 37.0],
    [4096.0, 409_600.0 / 39.0],
];

const BLOCK_AXIS: Axis = Axis {
    name: "block size",
    unit: "bytes",
    log: true,
};

/// What the series of this suite have in common: block size against throughput, one block
/// per operation, a writer and a reader.
struct Curve {
    id: &'static str,
    figure: (&'static str, &'static str),
    curve: &'static str,
    paper: &'static str,
    today: &'static str,
    points: fn(bool) -> Vec<Point>,
    make: fn(u64) -> Box<dyn Benchmark>,
    paper_points: &'static [[f64; 2]],
    paper_system: Option<&'static str>,
    /// The report's rows of this test (`data/reference/bbn.tsv`), printed beside the table.
    printed: Option<Printed>,
}

const fn block_series(c: Curve) -> SeriesSpec {
    SeriesSpec {
        id: c.id,
        figure: c.figure.0,
        figure_title: c.figure.1,
        curve: c.curve,
        paper: c.paper,
        today: c.today,
        x: BLOCK_AXIS,
        y: YKind::BytesPerSec,
        unit: "block",
        shape: Shape::Pair,
        points: c.points,
        make: c.make,
        paper_points: c.paper_points,
        paper_system: c.paper_system,
        printed: c.printed,
    }
}

const PIPES: (&str, &str) = (
    "bbn.pipes",
    "Pipe throughput against block size (BBN Report 3970, Tables 1-2)",
);
const PORTS: (&str, &str) = (
    "bbn.ports",
    "Port (named FIFO) throughput against block size (BBN Report 3970, Tables 3-4)",
);

pub static PIPE_REPORT: SeriesSpec = block_series(Curve {
    id: "bbn.pipe-1000",
    figure: PIPES,
    curve: "1000 blocks, as the report",
    paper: "t.pipe1: parent writes 1000 blocks into a pipe, child reads them (§2, Table 1)",
    today: "pipe(2); 1000 write(2)s of one block, the child read(2)s each block whole",
    points: report_count_points,
    make: |size| Box::new(Stream::new(Via::Pipe, Framing::Bare, size)),
    paper_points: &TABLE1_PIPE_STANDARD,
    paper_system: Some(
        "PDP-11/40, dual RK05 disks, 128K memory; standard UNIX (V6), Table 1 real time",
    ),
    printed: Some(Printed::Bbn("pipe")),
});

pub static PIPE: SeriesSpec = block_series(Curve {
    id: "bbn.pipe",
    figure: PIPES,
    curve: "calibrated",
    paper: "t.pipe1: parent writes blocks into a pipe, child reads them (§2, Table 2)",
    today: "pipe(2); write(2) per block, the child read(2)s each block whole; count calibrated",
    points: calibrated_points,
    make: |size| Box::new(Stream::new(Via::Pipe, Framing::Bare, size)),
    paper_points: &TABLE2_PIPE_IMPROVED,
    paper_system: Some(
        "PDP-11/40, dual RK05 disks, 128K memory; UNIX (V6) with BBN's improved pipes, Table 2",
    ),
    printed: None,
});

pub static PORT_BARE: SeriesSpec = block_series(Curve {
    id: "bbn.port-bare",
    figure: PORTS,
    curve: "FIFO, no header, no checking",
    paper: "t.port1 modified to write no headers and do no checking (§3, Table 4)",
    today: "mkfifo(3) port opened by name; write(2) per block, the child read(2)s each whole",
    points: calibrated_points,
    make: |size| Box::new(Stream::new(Via::Fifo, Framing::Bare, size)),
    paper_points: &TABLE4_PORT_BARE,
    paper_system: Some(
        "PDP-11/40, dual RK05 disks, 128K memory; UNIX (V6) with BBN's improved ports, Table 4",
    ),
    printed: Some(Printed::Bbn("port-bare")),
});

pub static PORT: SeriesSpec = block_series(Curve {
    id: "bbn.port",
    figure: PORTS,
    curve: "FIFO, 8-byte header",
    paper: "t.port1: an 8-byte header before each block (§3)",
    today: "mkfifo(3) port; a write(2) of the header (length, sequence), then one of the \
            block; the reader reads each whole",
    points: calibrated_points,
    make: |size| Box::new(Stream::new(Via::Fifo, Framing::Header, size)),
    // The report printed no run with headers but without checking.
    paper_points: &[],
    paper_system: None,
    printed: None,
});

pub static PORT_CHECKED: SeriesSpec = block_series(Curve {
    id: "bbn.port-check",
    figure: PORTS,
    curve: "FIFO, header and checking",
    paper: "t.port1: 8-byte header and extensive checking of every block (§3, Table 3)",
    today: "mkfifo(3) port; a write(2) of the header, then one of the patterned block; the \
            reader checks length, sequence and every payload byte",
    points: calibrated_points,
    make: |size| Box::new(Stream::new(Via::Fifo, Framing::Checked, size)),
    paper_points: &TABLE3_PORT_CHECKED,
    paper_system: Some(
        "PDP-11/40, dual RK05 disks, 128K memory; UNIX (V6) with BBN's improved ports, Table 3",
    ),
    printed: Some(Printed::Bbn("port-check")),
});

pub static REALWORLD: SeriesSpec = block_series(Curve {
    id: "bbn.realworld",
    figure: (
        "bbn.realworld",
        "Pipe throughput beside a second pipe pair and a file copy \
         (BBN Report 3970, Tables 7-8)",
    ),
    curve: "measured pair, under load",
    paper: "two t.pipe1 runs at once and a continuous file copy: 1000 x 128 bytes, then \
            100 x 4096 bytes (§5, Tables 7-8)",
    today: "two pipe pairs moving the same blocks side by side, the measured one timed as one \
            t.pipe1 (the clock stops when it is done; its real and CPU time are one process's, \
            as the report's each), beside a process copying a 4 MiB file with read/write on a \
            disk file system, all on the same CPUs",
    points: realworld_points,
    make: |size| Box::new(RealWorld::new(size)),
    paper_points: &TABLES78_REALWORLD,
    paper_system: Some(
        "PDP-11/40, dual RK05 disks, 128K memory; UNIX (V6) with BBN's improved pipes, \
         Tables 7-8 (both processes, both runs)",
    ),
    printed: Some(Printed::Bbn("realworld")),
});

fn series() -> Vec<&'static SeriesSpec> {
    vec![
        &PIPE_REPORT,
        &PIPE,
        &PORT_BARE,
        &PORT,
        &PORT_CHECKED,
        &REALWORLD,
    ]
}

pub static SUITE: Suite = Suite {
    name: "bbn",
    title: "Pipes and ports against block size",
    paper: "Kranc, Performance Improvements in UNIX Pipes and Ports, BBN Report 3970 (1978): \
            §2 Tables 1-2 (pipes), §3 Tables 3-4 (ports), §5 Tables 7-8 (real-world test)",
    series,
    preflight: super::no_preflight,
    derive: super::no_derived,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_real_world_trial_times_one_pair_as_the_report_timed_each_process() {
        // The timed region reaps only the measured pair's reader: the second pair (the
        // report's other t.pipe1) is still this process's child when run returns, so neither
        // its time nor its CPU is the measured process's (#45); teardown waits for it.
        let children = || -> Vec<String> {
            std::fs::read_to_string("/proc/thread-self/children")
                .unwrap()
                .split_whitespace()
                .map(str::to_string)
                .collect()
        };
        let mut rw = RealWorld::new(128);
        rw.setup(&Ctx::default(), 200).unwrap();
        let second: Vec<String> = rw.second.iter().map(|p| p.to_string()).collect();
        assert_eq!(second.len(), 2);
        rw.run(200).unwrap();
        let left = children();
        assert!(
            second.iter().all(|p| left.contains(p)),
            "the second pair was reaped inside the timed region: {second:?} not in {left:?}"
        );
        rw.teardown().unwrap();
        let after = children();
        assert!(second.iter().all(|p| !after.contains(p)), "{after:?}");
        assert!(rw.second.is_empty() && rw.load.is_empty());
    }

    #[test]
    fn a_file_planted_at_the_old_predictable_port_name_does_not_stop_the_suite() {
        // sysperf-bbn-<pid>-port is what the suite used to make (and, before that, remove
        // whoever owned it); a file there now changes nothing.
        let planted = std::env::temp_dir().join(format!("sysperf-bbn-{}-port", sys::getpid()));
        std::fs::write(&planted, "theirs").unwrap();
        let ports = open_port();
        let kept = std::fs::read(&planted);
        let _ = std::fs::remove_file(&planted);
        assert!(ports.is_ok(), "{:?}", ports.err());
        assert_eq!(kept.unwrap(), b"theirs");
    }

    fn record(size: usize, seq: u32) -> Vec<u8> {
        let mut rec = vec![0; size + HEADER];
        fill_record(&mut rec, size, seq);
        rec
    }

    #[test]
    fn the_header_carries_length_and_sequence_before_the_payload() {
        let mut rec = vec![0xffu8; 12];
        put_header(&mut rec, 4, 7);
        assert_eq!(&rec[..HEADER], &[4, 0, 0, 0, 7, 0, 0, 0]);
        assert_eq!(&rec[HEADER..], &[0xff; 4], "the payload is left alone");
        assert_eq!(Framing::Header.record_len(4096), 4104);
        assert_eq!(Framing::Bare.record_len(4096), 4096);
    }

    #[test]
    fn the_checker_accepts_what_the_writer_sent_and_nothing_else() {
        let good = record(64, 3);
        assert_eq!(check_record(&good, 64, 3), Ok(()));
        assert_eq!(check_record(&good, 64, 4), Err(Fault::Sequence));
        assert_eq!(check_record(&good[..70], 64, 3), Err(Fault::Length));
        let mut bad = good.clone();
        bad[1] = 1; // length field says 320
        assert_eq!(check_record(&bad, 64, 3), Err(Fault::Length));
        for at in [HEADER, HEADER + 31, good.len() - 1] {
            let mut bad = good.clone();
            bad[at] ^= 0x10;
            assert_eq!(check_record(&bad, 64, 3), Err(Fault::Payload), "byte {at}");
        }
        // Neighbouring blocks differ, so a repeated block with a forged header is caught too.
        let mut replay = record(64, 2);
        put_header(&mut replay, 64, 3);
        assert_eq!(check_record(&replay, 64, 3), Err(Fault::Payload));
        let e: BenchError = Fault::Payload.into();
        assert!(e.to_string().contains("payload"), "{e}");
    }

    /// A pipe holding `n` records of `size`, block `bad` damaged in transit at `at`, the
    /// write end closed.
    fn stream_with(n: u32, size: usize, bad: u32, at: usize) -> File {
        let (r, w) = sys::pipe().unwrap();
        let mut tx = File::from(w);
        for seq in 0..n {
            let mut rec = record(size, seq);
            if seq == bad {
                rec[at] ^= 0x80;
            }
            tx.write_all(&rec).unwrap();
        }
        File::from(r)
    }

    /// The port tests' reader, run here on pipes whose contents were damaged.
    #[test]
    fn the_checking_reader_fails_on_a_corrupted_block() {
        let mut buf = vec![0; 108];
        let cases = [
            (HEADER + 50, Fault::Payload),
            (HEADER + 99, Fault::Payload),
            (0, Fault::Length),
            (5, Fault::Sequence),
        ];
        for (at, fault) in cases {
            let mut rx = stream_with(3, 100, 1, at);
            assert_eq!(
                read_blocks(&mut rx, Framing::Checked, 100, 3, &mut buf),
                Err(fault),
                "damage at byte {at}"
            );
            // Without checking the same bytes pass unnoticed, as in the report's Table 4 run.
            let mut rx = stream_with(3, 100, 1, at);
            assert_eq!(
                read_blocks(&mut rx, Framing::Header, 100, 3, &mut buf),
                Ok(())
            );
        }
        // A writer that stops early is an error too, not a short count.
        let mut rx = stream_with(2, 100, 9, 0);
        assert_eq!(
            read_blocks(&mut rx, Framing::Checked, 100, 3, &mut buf),
            Err(Fault::Eof)
        );
        // The exit status names the fault to the parent.
        assert_eq!(
            Fault::from_code(Fault::Payload as i32),
            Some(Fault::Payload)
        );
        assert_eq!(Fault::from_code(0), None);
    }

    #[test]
    fn the_reader_loops_on_short_reads() {
        // A block larger than the pipe can hold arrives in several reads; the reader waits for
        // all of it. A writer thread is fine here: no fork involved.
        let (r, w) = sys::pipe().unwrap();
        let (mut rx, mut tx) = (File::from(r), File::from(w));
        let size = 256 << 10;
        let writer = std::thread::spawn(move || {
            for _ in 0..2 {
                tx.write_all(&vec![7u8; size]).unwrap();
            }
        });
        let mut buf = vec![0; size];
        assert_eq!(
            read_blocks(&mut rx, Framing::Bare, size, 2, &mut buf),
            Ok(())
        );
        writer.join().unwrap();
        assert!(buf.iter().all(|&b| b == 7));
    }

    #[test]
    fn block_sizes_follow_the_report_and_go_on_to_a_mebibyte() {
        let report: Vec<f64> = report_count_points(false).iter().map(|p| p.x).collect();
        assert_eq!(report, PAPER_SIZES.map(|s| s as f64).to_vec());
        assert!(report_count_points(false)
            .iter()
            .all(|p| p.iterations == Some(1000) && p.bytes_per_op == p.x));
        let cal = calibrated_points(false);
        assert_eq!(cal.len(), 20);
        assert_eq!(cal.last().map(|p| p.param), Some(1 << 20));
        assert!(cal.iter().all(|p| p.iterations.is_none()));
        for quick in [report_count_points(true), calibrated_points(true)] {
            assert_eq!(quick.len(), 3);
        }
        let rw = realworld_points(false);
        assert_eq!(
            rw.iter()
                .map(|p| (p.param, p.iterations))
                .collect::<Vec<_>>(),
            vec![(128, Some(1000)), (4096, Some(100))]
        );
    }

    #[test]
    fn drawn_curves_are_the_published_tables_columns() {
        let rows = crate::published::bbn_rows().unwrap();
        let col = |table: u32, system: &str, test: &str| {
            let pts: Vec<[f64; 2]> = rows
                .iter()
                .filter(|r| r.table == table && r.system == system && r.test == test)
                .map(|r| {
                    [
                        r.block_bytes as f64,
                        (r.blocks * r.block_bytes) as f64 / r.real_s,
                    ]
                })
                .collect();
            pts
        };
        assert_eq!(col(1, "standard", "pipe"), TABLE1_PIPE_STANDARD);
        assert_eq!(col(2, "improved", "pipe"), TABLE2_PIPE_IMPROVED);
        assert_eq!(col(3, "improved", "port-check"), TABLE3_PORT_CHECKED);
        assert_eq!(col(4, "improved", "port-bare"), TABLE4_PORT_BARE);
        let mut rw = col(7, "improved", "realworld");
        rw.extend(col(8, "improved", "realworld"));
        assert_eq!(rw, TABLES78_REALWORLD);
    }

    #[test]
    fn paper_points_are_the_tables_real_times_as_bytes_per_second() {
        // "at the maximum block size of 4096 bytes, throughput is about 65 Kbps" (8:08) and
        // "360 Kbps" for the improved system (1:31): kilobits per second.
        let last = |t: &[[f64; 2]]| t[t.len() - 1];
        assert_eq!(last(&TABLE1_PIPE_STANDARD)[0], 4096.0);
        let kbps = |p: [f64; 2]| p[1] * 8.0 / 1000.0;
        assert!((kbps(last(&TABLE1_PIPE_STANDARD)) - 67.1).abs() < 0.1);
        assert!((kbps(last(&TABLE2_PIPE_IMPROVED)) - 360.1).abs() < 0.1);
        // "At 4096 bytes/block, throughput is about 325 Kbps" for Table 4's ports.
        assert!((kbps(last(&TABLE4_PORT_BARE)) - 327.7).abs() < 0.1);
        assert_eq!(TABLE1_PIPE_STANDARD[0], [2.0, 200.0]);
        assert_eq!(TABLE3_PORT_CHECKED[11][1], 4_096_000.0 / 249.0);
    }

    #[test]
    fn the_suite_is_registered() {
        assert!(super::super::find_suite("bbn").is_some());
        assert!(super::super::find_series("bbn.port-check").is_some());
    }
}
