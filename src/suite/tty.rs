//! The terminal suite (`sysperf run --suite tty`): Feder, *The Evolution of UNIX System
//! Performance* (BLTJ 1984), §IV "Terminal handling", Fig. 7 ("Terminal output at 100-percent
//! CPU use", cooked and raw mode, 256-byte writes), and the same section's remark that
//! "character input overhead is roughly an order of magnitude higher than output overhead".
//!
//! What is measured today:
//! - Output (`tty.out-cooked`, `tty.out-raw`): the worker writes blocks to the slave side of a
//!   pseudo-terminal (posix_openpt) while a reader child drains the master side in 64 KiB
//!   reads and counts the bytes. Cooked mode sets exactly `OPOST|ONLCR` (every '\n' leaves as
//!   "\r\n"); raw mode is `cfmakeraw` (no output processing). The data is text as a program
//!   would print it: 80-column lines (79 characters and a '\n'), so one byte in 80 is a
//!   newline and cooked mode delivers 81 bytes for every 80 written. One operation is one
//!   write(2) of the point's size (the paper's 256 bytes, and 16..4096 around it); y is the
//!   bytes the application wrote per second of wall time. The timed region ends only when the
//!   reader has received everything: the writer sends a NUL end mark (text has none, and
//!   neither mode changes it), the reader reports its count through a pipe and is reaped in
//!   `run`, so its CPU time is the trial's. `run` fails if the count is not the written
//!   bytes (raw) or the written bytes plus one '\r' per newline (cooked).
//! - Input (`tty.in-canon`, `tty.in-raw`): the worker writes a line (printable characters
//!   and a final '\n') into the master side and reads it from the slave side: in canonical
//!   mode (ICANON, the line discipline assembles the line and one read(2) returns exactly
//!   that line, or `run` fails) or non-canonical (`cfmakeraw`, VMIN=1: reads return whatever
//!   arrived, repeated until the line is in). ECHO is off in both, so nothing comes back on
//!   the master to fill its buffer. y is wall nanoseconds per line (see [`INPUT_Y_WHY`]).
//!
//! Where today differs from 1984: there is no serial line, no DH11/DZ11 and no KMC11
//! front end; a pty's "device" is the other side's line discipline. Feder's figure is the
//! output rate at 100% CPU with some twenty 9600-baud lines; here one writer and one reader
//! run on a multi-core machine, so wall throughput is not CPU-limited throughput: the suite
//! also derives bytes per CPU-second (user+sys of writer and reader) at 256-byte writes, the
//! paper's metric. Linux moves pty data to the other side through a kernel worker
//! (flush_to_ldisc in a kworker), whose CPU no process's rusage shows: output processing
//! (ONLCR) runs in the writer's write(2) and is counted; the receiving line discipline's work
//! is not, which is why the input curves use wall time per line.

use super::{Axis, Point, SeriesSpec, Suite};
use crate::bench::{Benchmark, Ctx, Shape};
use crate::error::BenchError;
use crate::model::{Derived, Series, TrialKind, YKind};
use crate::sys::{self, Fork, Pid};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// Characters per line of the output text, newline included (an 80-column terminal).
pub const LINE: usize = 80;
/// The end mark the writer sends after its last block; never in the text, and passed
/// unchanged by OPOST|ONLCR and by raw mode.
const END: u8 = 0;
/// The reader's read size: large, so that draining costs as few calls as possible.
const READ_CHUNK: usize = 64 * 1024;
/// Largest output write size accepted.
const MAX_WRITE: usize = 64 * 1024;
/// Canonical mode holds at most 4095 characters and the newline in a line (N_TTY_BUF_SIZE).
const MAX_LINE: usize = 4096;

/// Why the input curves use wall nanoseconds per line.
pub const INPUT_Y_WHY: &str = "wall ns per line: canonical mode's unit of work is the line (one \
     wakeup and one read per '\\n'), and on Linux the receiving line discipline runs in a kernel \
     worker whose CPU no process's rusage shows, while the wall time of write-then-read covers \
     the whole trip of a line";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OutMode {
    Cooked,
    Raw,
}

/// The output text: 80-column lines of printable characters, long enough that a write of
/// `size` bytes can start at any column.
fn text(size: usize) -> Vec<u8> {
    (0..size + LINE)
        .map(|i| {
            let col = i % LINE;
            if col == LINE - 1 {
                b'\n'
            } else {
                b' ' + (col % 94) as u8 + 1
            }
        })
        .collect()
}

/// Newlines in the first `bytes` bytes of the text stream (one at the end of every line).
pub fn newlines_in(bytes: u64) -> u64 {
    bytes / LINE as u64
}

/// One write(2) of all of `data`; a short write is an error (a blocking tty write returns
/// early only when interrupted).
#[inline]
fn write_whole(fd: RawFd, data: &[u8], op: &'static str) -> Result<(), BenchError> {
    let n = sys::write(fd, data).map_err(BenchError::sys(op))?;
    if n != data.len() {
        return Err(BenchError::Protocol(format!(
            "{op}: short write of {n} of {} bytes",
            data.len()
        )));
    }
    Ok(())
}

/// Opens a pty pair and applies `edit` to the slave's attributes.
pub(crate) fn pty_with(
    edit: impl FnOnce(&mut libc::termios),
) -> Result<(OwnedFd, OwnedFd), BenchError> {
    let (master, slave) = sys::open_pty().map_err(BenchError::sys("posix_openpt"))?;
    let mut t = sys::tcgetattr(slave.as_raw_fd()).map_err(BenchError::sys("tcgetattr"))?;
    edit(&mut t);
    sys::tcsetattr(slave.as_raw_fd(), &t).map_err(BenchError::sys("tcsetattr"))?;
    Ok((master, slave))
}

/// Terminal output: the worker writes `size`-byte blocks to the slave, a child drains the
/// master.
pub struct Output {
    mode: OutMode,
    size: usize,
    text: Vec<u8>,
    slave: Option<OwnedFd>,
    /// The read end of the pipe the reader reports its byte count on.
    report: Option<OwnedFd>,
    child: Option<Pid>,
    /// Bytes the reader received from the master side in the last `run` (before the end mark).
    pub delivered: Option<u64>,
}

impl Output {
    fn new(mode: OutMode, size: usize) -> Output {
        Output {
            mode,
            size,
            text: Vec::new(),
            slave: None,
            report: None,
            child: None,
            delivered: None,
        }
    }

    /// What the reader must receive after `iterations` writes.
    pub fn expected(&self, iterations: u64) -> u64 {
        let written = iterations * self.size as u64;
        match self.mode {
            OutMode::Cooked => written + newlines_in(written),
            OutMode::Raw => written,
        }
    }
}

/// The reader child: drains the master until the end mark, reports the count, exits 0; exit
/// 2 on a read error, 3 on end of file before the mark, 4 if the report cannot be written.
fn reader(master: RawFd, report: RawFd, buf: &mut [u8]) -> ! {
    let mut count: u64 = 0;
    loop {
        match sys::read(master, buf) {
            Ok(0) => sys::exit_now(3),
            // The end mark is the last byte the writer sends and the text never holds it,
            // so it can only be the last byte of the last read: no need to scan the chunk
            // (which would put a per-byte user-mode cost of ours into the trial).
            Ok(k) if buf[k - 1] == END => {
                count += k as u64 - 1;
                break;
            }
            Ok(k) => count += k as u64,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => sys::exit_now(2),
        }
    }
    match sys::write(report, &count.to_ne_bytes()) {
        Ok(8) => sys::exit_now(0),
        _ => sys::exit_now(4),
    }
}

impl Benchmark for Output {
    fn setup(&mut self, ctx: &Ctx, _iterations: u64) -> Result<(), BenchError> {
        if self.size == 0 || self.size > MAX_WRITE {
            return Err(BenchError::Protocol(format!(
                "write size {} is outside 1..={MAX_WRITE}",
                self.size
            )));
        }
        self.text = text(self.size);
        let mode = self.mode;
        let (master, slave) = pty_with(|t| match mode {
            // Exactly the paper's "characters processed": newline to CR-LF and nothing else
            // (no tab expansion, no delays, no case mapping).
            OutMode::Cooked => t.c_oflag = libc::OPOST | libc::ONLCR,
            OutMode::Raw => sys::cfmakeraw(t),
        })?;
        let (report_rx, report_tx) = sys::pipe().map_err(BenchError::sys("pipe"))?;
        // Allocated before fork: the child only makes system calls.
        let mut buf = vec![0u8; READ_CHUNK];
        match sys::fork().map_err(BenchError::sys("fork"))? {
            Fork::Child => {
                ctx.child_init();
                sys::set_process_name("sysperf:ttyread");
                // The reader holds only the master and the report pipe's write end.
                drop(slave);
                drop(report_rx);
                reader(master.as_raw_fd(), report_tx.as_raw_fd(), &mut buf)
            }
            Fork::Parent(pid) => self.child = Some(pid),
        }
        // The reader holds the only master and the only report write end: if it dies, the
        // writer's next write fails (EIO: the other side hung up) or the report pipe reads
        // end of file, instead of hanging.
        drop(report_tx);
        drop(master);
        self.slave = Some(slave);
        self.report = Some(report_rx);
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let slave = self
            .slave
            .as_ref()
            .ok_or_else(|| BenchError::Protocol("no pty".into()))?
            .as_raw_fd();
        let size = self.size;
        let mut off = 0;
        for _ in 0..iterations {
            write_whole(slave, &self.text[off..off + size], "write to the pty slave")?;
            off = (off + size) % LINE;
        }
        write_whole(slave, &[END], "write of the end mark to the pty slave")?;
        let report = self
            .report
            .as_ref()
            .ok_or_else(|| BenchError::Protocol("no report pipe".into()))?
            .as_raw_fd();
        let mut b = [0u8; 8];
        let mut got = 0;
        while got < b.len() {
            match sys::read(report, &mut b[got..]) {
                Ok(0) => break,
                Ok(k) => got += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(BenchError::Sys {
                        op: "read",
                        source: e,
                    })
                }
            }
        }
        let child = self
            .child
            .take()
            .ok_or_else(|| BenchError::Protocol("no reader".into()))?;
        let code = sys::wait_child(child).map_err(BenchError::sys("waitpid"))?;
        if code != 0 || got != b.len() {
            return Err(BenchError::Protocol(format!(
                "the pty reader failed (exit code {code}: 2 read error, 3 end of file \
                 before the end mark, 4 report not written)"
            )));
        }
        let count = u64::from_ne_bytes(b);
        self.delivered = Some(count);
        let want = self.expected(iterations);
        if count != want {
            return Err(BenchError::Protocol(format!(
                "the reader received {count} bytes, expected {want} ({} mode, {iterations} \
                 writes of {size} bytes)",
                if self.mode == OutMode::Cooked {
                    "cooked"
                } else {
                    "raw"
                }
            )));
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        if let Some(pid) = self.child.take() {
            let _ = sys::kill(pid, libc::SIGKILL);
            let _ = sys::wait_child(pid);
        }
        self.report = None;
        self.slave = None;
        Ok(())
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

/// Terminal input: write a line into the master, read it from the slave.
pub struct Input {
    canonical: bool,
    line: Vec<u8>,
    buf: Vec<u8>,
    master: Option<OwnedFd>,
    slave: Option<OwnedFd>,
    /// read(2) calls on the slave in the last `run`.
    pub reads: u64,
}

impl Input {
    fn new(canonical: bool, len: usize) -> Input {
        let line = (0..len)
            .map(|i| {
                if i + 1 == len {
                    b'\n'
                } else {
                    b'a' + (i % 26) as u8
                }
            })
            .collect();
        Input {
            canonical,
            line,
            buf: vec![0u8; MAX_LINE],
            master: None,
            slave: None,
            reads: 0,
        }
    }
}

impl Benchmark for Input {
    fn setup(&mut self, _ctx: &Ctx, _iterations: u64) -> Result<(), BenchError> {
        if self.line.is_empty() || self.line.len() > MAX_LINE {
            return Err(BenchError::Protocol(format!(
                "line length {} is outside 1..={MAX_LINE}",
                self.line.len()
            )));
        }
        let canonical = self.canonical;
        let (master, slave) = pty_with(|t| {
            if canonical {
                // The line discipline assembles lines; no echo (it would flow back to the
                // master, which nobody reads), no signals or flow-control characters.
                t.c_lflag = libc::ICANON;
                t.c_iflag = 0;
            } else {
                sys::cfmakeraw(t);
                t.c_cc[libc::VMIN] = 1;
                t.c_cc[libc::VTIME] = 0;
            }
        })?;
        self.master = Some(master);
        self.slave = Some(slave);
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let (master, slave) = match (&self.master, &self.slave) {
            (Some(m), Some(s)) => (m.as_raw_fd(), s.as_raw_fd()),
            _ => return Err(BenchError::Protocol("no pty".into())),
        };
        let len = self.line.len();
        let mut reads = 0;
        for _ in 0..iterations {
            write_whole(master, &self.line, "write to the pty master")?;
            let mut got = 0;
            while got < len {
                let n = sys::read(slave, &mut self.buf[got..]).map_err(BenchError::sys("read"))?;
                reads += 1;
                if n == 0 {
                    return Err(BenchError::Protocol("end of file on the pty slave".into()));
                }
                got += n;
                if self.canonical && got != len {
                    return Err(BenchError::Protocol(format!(
                        "a canonical read returned {n} bytes, not the {len}-byte line"
                    )));
                }
            }
        }
        self.reads = reads;
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.slave = None;
        self.master = None;
        Ok(())
    }
}

const OUT_SIZES: &[u64] = &[16, 64, 256, 1024, 4096];
const OUT_SIZES_QUICK: &[u64] = &[64, 256];
const IN_LINES: &[u64] = &[16, 64, 256, 1024];
const IN_LINES_QUICK: &[u64] = &[64];

fn sized_points(sizes: &[u64], bytes: bool) -> Vec<Point> {
    sizes
        .iter()
        .map(|&s| Point {
            bytes_per_op: if bytes { s as f64 } else { 0.0 },
            ..Point::new(s as f64, s)
        })
        .collect()
}

fn out_points(quick: bool) -> Vec<Point> {
    sized_points(if quick { OUT_SIZES_QUICK } else { OUT_SIZES }, true)
}

fn in_points(quick: bool) -> Vec<Point> {
    sized_points(if quick { IN_LINES_QUICK } else { IN_LINES }, false)
}

const FIG7: &str = "tty.fig7";
const FIG7_TITLE: &str = "Fig. 7: terminal output through a pseudo-terminal, cooked vs raw";
const WRITE_SIZE: Axis = Axis {
    name: "write size",
    unit: "bytes",
    log: true,
};
const LINE_LEN: Axis = Axis {
    name: "line length",
    unit: "bytes",
    log: true,
};
const PDP: &str = "PDP-11/70 with the revised clist (c. 1980), 256-byte writes, 100% CPU \
     (\"approximately 6 and 20K-bytes per second in cooked and raw modes\"; K taken as 1024)";
const OUT_TODAY: &str = "pty (posix_openpt); the worker writes 80-column text to the slave, a \
     reader child drains the master in 64 KiB reads and counts; timed until the reader has \
     everything";

/// One output curve of Fig. 7.
const fn out_spec(
    id: &'static str,
    curve: &'static str,
    paper: &'static str,
    make: fn(u64) -> Box<dyn Benchmark>,
    paper_points: &'static [[f64; 2]],
) -> SeriesSpec {
    SeriesSpec {
        id,
        figure: FIG7,
        figure_title: FIG7_TITLE,
        curve,
        paper,
        today: OUT_TODAY,
        x: WRITE_SIZE,
        y: YKind::BytesPerSec,
        unit: "write",
        shape: Shape::Pair,
        points: out_points,
        make,
        paper_points,
        paper_system: Some(PDP),
        printed: None,
    }
}

pub static OUT_COOKED: SeriesSpec = out_spec(
    "tty.out-cooked",
    "cooked (OPOST|ONLCR)",
    "Feder §IV Fig. 7: maximum terminal output rate, cooked mode (characters processed), \
     256-byte chunks; PDP-11/70 about 6 KB/s after the 1980 clist change, VAX-11/780 with \
     KMC11 over 40 kb/s in either mode",
    |p| Box::new(Output::new(OutMode::Cooked, p as usize)),
    &[[256.0, 6.0 * 1024.0]],
);

pub static OUT_RAW: SeriesSpec = out_spec(
    "tty.out-raw",
    "raw (cfmakeraw)",
    "Feder §IV Fig. 7: maximum terminal output rate, raw (transparent) mode, 256-byte \
     chunks; PDP-11/70 about 20 KB/s after the 1980 clist change",
    |p| Box::new(Output::new(OutMode::Raw, p as usize)),
    &[[256.0, 20.0 * 1024.0]],
);

const IN_FIG: &str = "tty.input";
const IN_FIG_TITLE: &str = "Terminal input through a pseudo-terminal: canonical vs raw";
const IN_PAPER: &str = "Feder §IV: \"character input overhead is roughly an order of magnitude \
     higher than output overhead\" (no figure printed)";

/// One input curve (wall ns per line, see [`INPUT_Y_WHY`]).
const fn in_spec(
    id: &'static str,
    curve: &'static str,
    today: &'static str,
    make: fn(u64) -> Box<dyn Benchmark>,
) -> SeriesSpec {
    SeriesSpec {
        id,
        figure: IN_FIG,
        figure_title: IN_FIG_TITLE,
        curve,
        paper: IN_PAPER,
        today,
        x: LINE_LEN,
        y: YKind::CostNs,
        unit: "line",
        shape: Shape::Single,
        points: in_points,
        make,
        paper_points: &[],
        paper_system: None,
        printed: None,
    }
}

pub static IN_CANON: SeriesSpec = in_spec(
    "tty.in-canon",
    "canonical (ICANON, one read per line)",
    "pty, ECHO off: write one line into the master, one read(2) of it from the slave in \
     canonical mode; y is wall ns per line",
    |p| Box::new(Input::new(true, p as usize)),
);

pub static IN_RAW: SeriesSpec = in_spec(
    "tty.in-raw",
    "non-canonical (cfmakeraw, VMIN=1)",
    "pty, cfmakeraw: write one line into the master, read the same bytes from the slave (as \
     many reads as it takes); y is wall ns per line",
    |p| Box::new(Input::new(false, p as usize)),
);

fn series() -> Vec<&'static SeriesSpec> {
    vec![&OUT_COOKED, &OUT_RAW, &IN_CANON, &IN_RAW]
}

fn preflight() -> Result<Vec<String>, String> {
    // A pty is all the suite needs; without /dev/ptmx (a container without devpts) it
    // cannot run at all.
    sys::open_pty().map_err(|e| format!("cannot open a pseudo-terminal: {e}"))?;
    Ok(vec![
        format!(
            "tty output text: {LINE}-column lines ({} characters and a newline), so cooked \
             mode adds one '\\r' per {LINE} bytes written",
            LINE - 1
        ),
        format!("tty input y: {INPUT_Y_WHY}"),
        "tty CPU figures are user+sys of the writer and its reaped reader; the kworker that \
         moves pty data (flush_to_ldisc) is not in any process's rusage"
            .into(),
    ])
}

/// Median over a point's measured trials of user+sys nanoseconds per operation (the process
/// and every child it reaped: the `login` suite's sessions too).
pub(crate) fn cpu_ns_per_op(s: &Series, x: f64) -> Option<f64> {
    let p = s.points.iter().find(|p| p.x == x)?;
    let per_op: Vec<f64> = p
        .result
        .trials
        .iter()
        .filter(|t| t.kind == TrialKind::Measured && t.error.is_none() && t.iterations > 0)
        .map(|t| {
            (t.usage.user_ns + t.usage.sys_ns) as f64
                / (t.iterations * p.result.ops_per_iteration.max(1)) as f64
        })
        .collect();
    crate::stats::median(&per_op).ok()
}

/// CPU per byte written in each mode, the cost of output processing (cooked - raw) at every
/// write size both curves have, bytes per CPU-second at 256-byte writes (Fig. 7's measure:
/// output at 100% CPU), and input against output CPU per byte (§IV's "order of magnitude").
fn derive(all: &[Series]) -> Vec<Derived> {
    let find = |id: &str| all.iter().find(|s| s.id == id);
    let mut out = Vec::new();
    let (Some(cooked), Some(raw)) = (find(OUT_COOKED.id), find(OUT_RAW.id)) else {
        return out;
    };
    for p in &cooked.points {
        let x = p.x;
        let (Some(c), Some(r)) = (cpu_ns_per_op(cooked, x), cpu_ns_per_op(raw, x)) else {
            continue;
        };
        out.push(Derived {
            na: None,
            name: format!("tty output processing CPU ({x}-byte writes)"),
            value: (c - r) / x,
            unit: "ns/byte".into(),
            formula: format!(
                "(cooked - raw) user+sys per write / {x} = ({c:.0} - {r:.0}) ns / {x}; \
                 cooked/raw CPU = {:.2}{}",
                c / r,
                if c <= r {
                    " (not above 0: the per-write cost hides the processing at this size)"
                } else {
                    ""
                }
            ),
        });
        if x == 256.0 {
            for (mode, ns) in [("cooked", c), ("raw", r)] {
                out.push(Derived {
                    na: None,
                    name: format!("tty output at 100% CPU, {mode} (Fig. 7 measure)"),
                    value: x * 1e9 / ns,
                    unit: "bytes/CPU-s".into(),
                    formula: format!(
                        "256 bytes / (user+sys per write of writer and reader = {ns:.0} ns)"
                    ),
                });
            }
        }
    }
    if let (Some(canon), Some(c64)) = (find(IN_CANON.id), cpu_ns_per_op(cooked, 64.0)) {
        if let Some(inp) = cpu_ns_per_op(canon, 64.0) {
            out.push(Derived {
                na: None,
                name: "tty input/output CPU per byte (64 bytes)".into(),
                value: inp / c64,
                unit: "ratio".into(),
                formula: format!(
                    "canonical input user+sys per 64-byte line / cooked output per 64-byte \
                     write = {inp:.0} / {c64:.0} ns (the receiving kworker's CPU is in neither)"
                ),
            });
        }
    }
    out
}

pub static SUITE: Suite = Suite {
    name: "tty",
    title: "Terminal output and input through a pseudo-terminal, cooked vs raw",
    paper: "Feder, The Evolution of UNIX System Performance (BLTJ 1984), §IV Terminal \
            handling, Fig. 7; Leffler et al. §3.2.4 (terminal multiplexors) for context",
    series,
    preflight,
    derive,
};

#[cfg(test)]
mod tests {
    use super::*;

    /// setup, run(n), teardown of one output point; returns what the reader received.
    fn output_delivered(mode: OutMode, size: usize, n: u64) -> u64 {
        let mut b = Output::new(mode, size);
        b.setup(&Ctx::default(), n).unwrap();
        b.run(n).unwrap();
        let got = b.delivered.unwrap();
        b.teardown().unwrap();
        got
    }

    #[test]
    fn text_is_80_column_lines_without_the_end_mark() {
        let t = text(256);
        assert_eq!(t.len(), 256 + LINE);
        assert_eq!(t.iter().filter(|&&c| c == b'\n').count(), t.len() / LINE);
        assert!(t.iter().all(|&c| c == b'\n' || c.is_ascii_graphic()));
        assert!(!t.contains(&END));
    }

    #[test]
    fn cooked_output_adds_a_carriage_return_per_newline() {
        // 100 writes of 256 bytes: 25,600 bytes of 80-column text hold 320 newlines.
        assert_eq!(output_delivered(OutMode::Cooked, 256, 100), 25_600 + 320);
        // 7 writes of 100 bytes end mid-line: 700 bytes, 8 complete lines.
        assert_eq!(output_delivered(OutMode::Cooked, 100, 7), 700 + 8);
    }

    #[test]
    fn raw_output_delivers_exactly_the_bytes_written() {
        assert_eq!(output_delivered(OutMode::Raw, 256, 100), 25_600);
        assert_eq!(output_delivered(OutMode::Raw, 4096, 20), 81_920);
    }

    #[test]
    fn the_reader_is_reaped_by_run() {
        let mut b = Output::new(OutMode::Raw, 64);
        b.setup(&Ctx::default(), 10).unwrap();
        let pid = b.child.unwrap();
        b.run(10).unwrap();
        assert!(b.child.is_none());
        // The pid is gone: no zombie, nothing running (kill(pid, 0) fails with ESRCH).
        let e = sys::kill(pid, 0).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ESRCH));
        b.teardown().unwrap();
    }

    #[test]
    fn a_dead_reader_is_an_error_not_a_hang() {
        let mut b = Output::new(OutMode::Raw, 16);
        b.setup(&Ctx::default(), 1).unwrap();
        let pid = b.child.unwrap();
        sys::kill(pid, libc::SIGKILL).unwrap();
        // Either the write fails (the master is closed: EIO) or, if the reader was not dead
        // yet, the report pipe reads end of file.
        let e = b.run(1).unwrap_err();
        assert!(e.to_string().contains("pty"), "{e}");
        b.teardown().unwrap();
    }

    #[test]
    fn canonical_input_delivers_one_line_per_read() {
        let mut b = Input::new(true, 64);
        b.setup(&Ctx::default(), 50).unwrap();
        b.run(50).unwrap();
        assert_eq!(b.reads, 50);
        assert_eq!(&b.buf[..64], &b.line[..]);
        // Two lines in one write come back as two reads: the discipline splits at '\n'.
        let (m, s) = (
            b.master.as_ref().unwrap().as_raw_fd(),
            b.slave.as_ref().unwrap().as_raw_fd(),
        );
        sys::write(m, b"first\nsecond\n").unwrap();
        let mut buf = [0u8; 64];
        assert_eq!(sys::read(s, &mut buf).unwrap(), 6);
        assert_eq!(sys::read(s, &mut buf).unwrap(), 7);
        // A partial line is not readable until its newline comes.
        sys::write(m, b"partial").unwrap();
        assert!(!sys::poll_readable(s, 200).unwrap());
        sys::write(m, b"\n").unwrap();
        assert_eq!(sys::read(s, &mut buf).unwrap(), 8);
        // Echo is off: nothing came back on the master.
        assert!(!sys::poll_readable(m, 0).unwrap());
        b.teardown().unwrap();
    }

    #[test]
    fn raw_input_hands_over_bytes_without_waiting_for_a_newline() {
        let mut b = Input::new(false, 64);
        b.setup(&Ctx::default(), 20).unwrap();
        b.run(20).unwrap();
        assert!(b.reads >= 20);
        let (m, s) = (
            b.master.as_ref().unwrap().as_raw_fd(),
            b.slave.as_ref().unwrap().as_raw_fd(),
        );
        sys::write(m, b"partial").unwrap();
        assert!(sys::poll_readable(s, 5000).unwrap());
        let mut buf = [0u8; 64];
        assert!(sys::read(s, &mut buf).unwrap() > 0);
        assert!(!sys::poll_readable(m, 0).unwrap());
        b.teardown().unwrap();
    }

    #[test]
    fn out_of_range_sizes_are_setup_errors() {
        assert!(Output::new(OutMode::Raw, 0)
            .setup(&Ctx::default(), 1)
            .is_err());
        assert!(Input::new(true, MAX_LINE + 1)
            .setup(&Ctx::default(), 1)
            .is_err());
    }

    #[test]
    fn points_keep_the_papers_256_bytes() {
        for quick in [true, false] {
            assert!(out_points(quick).iter().any(|p| p.param == 256));
            assert!(out_points(quick)
                .iter()
                .all(|p| p.bytes_per_op == p.param as f64));
        }
    }
}
