//! The `libs` suite's I/O benchmarks: single-character reads against stdio (§4.2), the
//! buffer-size curve of a copy (§4.2.2, Feder §V.4), setbuf's 1 KiB buffer (§4.2.2, `cat`),
//! the standard error stream's buffering (§4.2.2), line-buffered terminal output (Feder §V.5)
//! and a log written with a sync per line (§4.2.3, syslog). Each reads or writes through the C
//! library (src/clib.rs) or through read(2)/write(2) directly, as the paper's utilities did;
//! none reads a clock or prints.

use crate::bench::{Benchmark, Ctx};
use crate::clib::{self, Buffering, Stream};
use crate::error::BenchError;
use crate::suite::feder::Scratch;
use crate::sys;
use std::ffi::CStr;
use std::fs::File;
use std::io::Seek;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Bytes of the file the single-character series reads.
pub const CHARS_FILE: usize = 256 * 1024;
/// BUFSIZ of today's glibc: the user buffer of the `fread-bufsiz` point.
pub const BUFSIZ: usize = 8192;
/// Bytes the setbuf series writes with putc per iteration.
pub const SETBUF_BYTES: usize = 16 * 1024;
/// The old "optimal" buffer of §4.2.2 (and setbuf's size): 1 KiB.
pub const OLD_BUFFER: usize = 1024;
/// Lines written to a file before it is rewound (so that it stays small).
const REWIND_EVERY: u64 = 1024;

/// Text as a program prints it: 80-column lines (79 printable characters and a newline).
pub fn text(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| {
            if i % 80 == 79 {
                b'\n'
            } else {
                b' ' + 1 + (i % 80 % 94) as u8
            }
        })
        .collect()
}

fn file_in(s: &Scratch, name: &str, content: &[u8]) -> Result<File, BenchError> {
    let p = s.path().join(name);
    std::fs::write(&p, content).map_err(BenchError::sys("write (setup file)"))?;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&p)
        .map_err(BenchError::sys("open (setup file)"))
}

fn scratch() -> Result<Scratch, BenchError> {
    Scratch::named(&std::env::temp_dir(), "libs")
}

fn rewind(f: &mut File) -> Result<(), BenchError> {
    f.rewind().map_err(BenchError::sys("lseek"))
}

fn short(what: &str, got: usize, want: usize) -> BenchError {
    BenchError::Protocol(format!("{what}: moved {got} bytes, expected {want}"))
}

// ---------------------------------------------------------------------------------------------
// §4.2: single-character reads against the standard I/O library

/// How the single-character series reads its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CharMode {
    /// read(fd, &c, 1): one system call per byte, the untuned utilities of §4.2.
    Read1,
    /// getc(3) on a default stdio stream.
    Getc,
    /// fread(&c, 1, 1, f): stdio a byte at a time through fread.
    Fread1,
    /// fread into a BUFSIZ (8 KiB) buffer.
    FreadBufsiz,
    /// read(2) of st_blksize bytes: what stdio itself asks the kernel for.
    ReadBlksize,
}

pub struct Chars {
    mode: CharMode,
    scratch: Option<Scratch>,
    file: Option<File>,
    stream: Option<Stream>,
    buf: Vec<u8>,
}

impl Chars {
    pub fn new(mode: CharMode) -> Chars {
        Chars {
            mode,
            scratch: None,
            file: None,
            stream: None,
            buf: Vec::new(),
        }
    }
}

impl Benchmark for Chars {
    fn setup(&mut self, _: &Ctx, _: u64) -> Result<(), BenchError> {
        let s = scratch()?;
        let f = file_in(&s, "input", &text(CHARS_FILE))?;
        self.buf = vec![
            0u8;
            match self.mode {
                CharMode::FreadBufsiz => BUFSIZ,
                CharMode::ReadBlksize =>
                    sys::blksize(f.as_raw_fd()).map_err(BenchError::sys("fstat"))? as usize,
                _ => 1,
            }
        ];
        match self.mode {
            CharMode::Read1 | CharMode::ReadBlksize => self.file = Some(f),
            _ => {
                self.stream = Some(
                    Stream::fdopen(OwnedFd::from(f), c"r", Buffering::Default)
                        .map_err(BenchError::sys("fdopen"))?,
                )
            }
        }
        self.scratch = Some(s);
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        for _ in 0..iterations {
            let mut n = 0usize;
            if let Some(f) = &mut self.file {
                rewind(f)?;
                let fd = f.as_raw_fd();
                loop {
                    match sys::read(fd, &mut self.buf).map_err(BenchError::sys("read"))? {
                        0 => break,
                        k => n += k,
                    }
                }
            } else if let Some(s) = &mut self.stream {
                s.rewind().map_err(BenchError::sys("fseek"))?;
                match self.mode {
                    CharMode::Getc => {
                        while let Some(c) = s.getc() {
                            std::hint::black_box(c);
                            n += 1;
                        }
                    }
                    _ => loop {
                        match s.fread(&mut self.buf) {
                            0 => break,
                            k => n += k,
                        }
                    },
                }
            }
            if n != CHARS_FILE {
                return Err(short("reading the file", n, CHARS_FILE));
            }
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.stream = None;
        self.file = None;
        self.scratch = None;
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// §4.2.2, Feder §V.4: copying a file with buffers of every size

/// The file a copy with a `buf`-byte buffer moves: 256 buffers, within 64 KiB..4 MiB (so
/// that the 1-byte point stays short and the 1 MiB point still loops).
pub fn copy_file_bytes(buf: usize) -> usize {
    (buf * 256).clamp(64 << 10, 4 << 20)
}

pub struct Copy {
    size: usize,
    scratch: Option<Scratch>,
    files: Option<(File, File)>,
    buf: Vec<u8>,
}

impl Copy {
    pub fn new(size: usize) -> Copy {
        Copy {
            size: size.max(1),
            scratch: None,
            files: None,
            buf: Vec::new(),
        }
    }
}

impl Benchmark for Copy {
    fn setup(&mut self, _: &Ctx, _: u64) -> Result<(), BenchError> {
        let s = scratch()?;
        let len = copy_file_bytes(self.size);
        let src = file_in(&s, "src", &text(len))?;
        // The destination exists at its full size, so that copies overwrite cached pages.
        let dst = file_in(&s, "dst", &vec![0u8; len])?;
        self.files = Some((src, dst));
        self.buf = vec![0u8; self.size];
        self.scratch = Some(s);
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let Some((src, dst)) = &mut self.files else {
            return Err(BenchError::Protocol("copy: not set up".into()));
        };
        let want = copy_file_bytes(self.size);
        for _ in 0..iterations {
            rewind(src)?;
            rewind(dst)?;
            let mut n = 0;
            loop {
                let k =
                    sys::read(src.as_raw_fd(), &mut self.buf).map_err(BenchError::sys("read"))?;
                if k == 0 {
                    break;
                }
                let w = sys::write(dst.as_raw_fd(), &self.buf[..k])
                    .map_err(BenchError::sys("write"))?;
                if w != k {
                    return Err(short("write", w, k));
                }
                n += k;
            }
            if n != want {
                return Err(short("copying the file", n, want));
            }
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.files = None;
        self.scratch = None;
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Output through stdio to a file or a terminal

/// The master side of a pseudo-terminal drained by a thread (as a terminal shows what it
/// receives), and the slave side for the program's output.
pub struct Terminal {
    received: Arc<AtomicU64>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Terminal {
    /// A pty whose master a thread reads until the slave is closed; returns the slave.
    pub fn open() -> Result<(Terminal, OwnedFd), BenchError> {
        let (master, slave) = sys::open_pty().map_err(BenchError::sys("posix_openpt"))?;
        let received = Arc::new(AtomicU64::new(0));
        let count = received.clone();
        let reader = std::thread::Builder::new()
            .name("pty-drain".into())
            .spawn(move || {
                let mut buf = vec![0u8; 64 * 1024];
                // EIO once every slave descriptor is closed.
                while let Ok(n @ 1..) = sys::read(master.as_raw_fd(), &mut buf) {
                    count.fetch_add(n as u64, Ordering::Relaxed);
                }
            })
            .map_err(BenchError::sys("pthread_create"))?;
        Ok((
            Terminal {
                received,
                reader: Some(reader),
            },
            slave,
        ))
    }

    /// Bytes the terminal has received so far.
    pub fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }

    /// Waits for the reader after the slave was closed.
    pub fn close(mut self) {
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }
}

/// Where an output series writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dest {
    File,
    Pty,
}

/// A stdio stream on a scratch file or a pty, rewound every [`REWIND_EVERY`] operations when
/// it is a file.
struct Output {
    dest: Dest,
    scratch: Option<Scratch>,
    term: Option<Terminal>,
    stream: Option<Stream>,
    ops: u64,
}

impl Output {
    fn new(dest: Dest) -> Output {
        Output {
            dest,
            scratch: None,
            term: None,
            stream: None,
            ops: 0,
        }
    }

    fn open(&mut self, buffering: Buffering) -> Result<(), BenchError> {
        let fd = match self.dest {
            Dest::File => {
                let s = scratch()?;
                let f = file_in(&s, "out", b"")?;
                self.scratch = Some(s);
                OwnedFd::from(f)
            }
            Dest::Pty => {
                let (t, slave) = Terminal::open()?;
                self.term = Some(t);
                slave
            }
        };
        self.stream = Some(Stream::fdopen(fd, c"w", buffering).map_err(BenchError::sys("fdopen"))?);
        Ok(())
    }

    /// The stream, rewound first when a file has taken enough operations.
    #[inline]
    fn stream(&mut self) -> Result<&mut Stream, BenchError> {
        let s = self
            .stream
            .as_mut()
            .ok_or_else(|| BenchError::Protocol("output: not set up".into()))?;
        self.ops += 1;
        if self.dest == Dest::File && self.ops.is_multiple_of(REWIND_EVERY) {
            s.rewind().map_err(BenchError::sys("fseek"))?;
        }
        Ok(s)
    }

    fn close(&mut self) -> Result<(), BenchError> {
        let flushed = self.stream.as_mut().map(Stream::flush);
        self.stream = None;
        if let Some(t) = self.term.take() {
            t.close();
        }
        self.scratch = None;
        flushed
            .transpose()
            .map(drop)
            .map_err(BenchError::sys("fflush"))
    }
}

/// §4.2.2, `cat`: putc of text to a file through the default buffer, setbuf's 1 KiB, or none.
pub struct Setbuf {
    buffering: Buffering,
    text: Vec<u8>,
    out: Output,
}

impl Setbuf {
    pub fn new(buffering: Buffering) -> Setbuf {
        Setbuf {
            buffering,
            text: text(SETBUF_BYTES),
            out: Output::new(Dest::File),
        }
    }
}

impl Benchmark for Setbuf {
    fn setup(&mut self, _: &Ctx, _: u64) -> Result<(), BenchError> {
        self.out.open(self.buffering)
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        for _ in 0..iterations {
            let s = self
                .out
                .stream
                .as_mut()
                .ok_or_else(|| BenchError::Protocol("setbuf: not set up".into()))?;
            s.rewind().map_err(BenchError::sys("fseek"))?;
            for &c in &self.text {
                s.putc(c).map_err(BenchError::sys("putc"))?;
            }
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.out.close()
    }
}

/// How the standard error series writes its diagnostic line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrMode {
    /// Formatted first, then putc by putc to an unbuffered stream: one write(2) per
    /// character, as an unbuffered stderr did before 4.3BSD.
    V7,
    /// fprintf to an unbuffered stream: glibc buffers within the call and flushes before
    /// returning, the 4.3BSD scheme.
    Bsd43,
    /// fprintf to a line-buffered stream.
    Line,
}

pub const DIAG_PROG: &CStr = c"sysperf";
pub const DIAG_WHAT: &CStr = c"cannot open file";
pub const DIAG_WHY: &CStr = c"No such file or directory";

pub struct Stderr {
    mode: ErrMode,
    out: Output,
    line: Vec<u8>,
}

impl Stderr {
    pub fn new(mode: ErrMode, dest: Dest) -> Stderr {
        Stderr {
            mode,
            out: Output::new(dest),
            line: vec![0u8; 128],
        }
    }
}

impl Benchmark for Stderr {
    fn setup(&mut self, _: &Ctx, _: u64) -> Result<(), BenchError> {
        self.out.open(match self.mode {
            ErrMode::V7 | ErrMode::Bsd43 => Buffering::Unbuffered,
            ErrMode::Line => Buffering::Line,
        })
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        for i in 0..iterations {
            let n = (i % 1000) as i32;
            match self.mode {
                ErrMode::V7 => {
                    let len = clib::format_into(&mut self.line, DIAG_PROG, DIAG_WHAT, n, DIAG_WHY);
                    let s = self.out.stream()?;
                    for &c in &self.line[..len] {
                        s.putc(c).map_err(BenchError::sys("putc"))?;
                    }
                }
                _ => self
                    .out
                    .stream()?
                    .print_diagnostic(DIAG_PROG, DIAG_WHAT, n, DIAG_WHY)
                    .map_err(BenchError::sys("fprintf"))?,
            }
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.out.close()
    }
}

/// Feder §V.5: lines of `len` characters (newline included) putc by putc to a terminal,
/// unbuffered or line-buffered.
pub struct TtyLines {
    line: Vec<u8>,
    buffering: Buffering,
    out: Output,
    /// Bytes the terminal received, checked in teardown.
    pub received: u64,
    written: u64,
}

impl TtyLines {
    pub fn new(len: usize, line_buffered: bool) -> TtyLines {
        // One line of `len` characters: `text` breaks every 80, and a line of 160 would be two
        // (the terminal's extra '\r' per '\n' made the byte check fail at 160 and 320).
        let mut line: Vec<u8> = text(len.max(1))
            .into_iter()
            .map(|c| if c == b'\n' { b'.' } else { c })
            .collect();
        if let Some(last) = line.last_mut() {
            *last = b'\n';
        }
        TtyLines {
            line,
            buffering: if line_buffered {
                Buffering::Line
            } else {
                Buffering::Unbuffered
            },
            out: Output::new(Dest::Pty),
            received: 0,
            written: 0,
        }
    }
}

impl Benchmark for TtyLines {
    fn setup(&mut self, _: &Ctx, _: u64) -> Result<(), BenchError> {
        self.out.open(self.buffering)
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        for _ in 0..iterations {
            let s = self.out.stream()?;
            for &c in &self.line {
                s.putc(c).map_err(BenchError::sys("putc"))?;
            }
        }
        self.written += iterations * self.line.len() as u64;
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        let term = self.out.term.as_ref().map(|t| t.received.clone());
        self.out.close()?;
        self.received = term.map_or(0, |r| r.load(Ordering::Relaxed));
        // The terminal sends "\r\n" for every '\n' (OPOST|ONLCR, a terminal's default).
        let want = self.written + self.written / self.line.len() as u64;
        if self.received != want {
            return Err(short(
                "terminal output",
                self.received as usize,
                want as usize,
            ));
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// §4.2.3: a log with a sync after every line (syslog's bug)

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogSync {
    None,
    Fdatasync,
    Fsync,
    Sync,
}

/// Lines appended before the log is truncated (so that a fast point does not fill a disk).
const LOG_TRUNCATE_EVERY: u64 = 65536;

pub struct Log {
    how: LogSync,
    line: Vec<u8>,
    scratch: Option<Scratch>,
    file: Option<File>,
    lines: u64,
}

impl Log {
    pub fn new(how: LogSync) -> Log {
        Log {
            how,
            line: b"Nov 25 03:16:28 host sendmail[4711]: delivered to user, stat=Sent\n".to_vec(),
            scratch: None,
            file: None,
            lines: 0,
        }
    }
}

impl Benchmark for Log {
    fn setup(&mut self, _: &Ctx, _: u64) -> Result<(), BenchError> {
        let (dir, _) = super::super::disk_dir().map_err(BenchError::Protocol)?;
        let s = Scratch::named(&dir, "libs")?;
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(s.path().join("log"))
            .map_err(BenchError::sys("open (log)"))?;
        self.file = Some(f);
        self.scratch = Some(s);
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let Some(f) = &self.file else {
            return Err(BenchError::Protocol("log: not set up".into()));
        };
        for _ in 0..iterations {
            let n = sys::write(f.as_raw_fd(), &self.line).map_err(BenchError::sys("write"))?;
            if n != self.line.len() {
                return Err(short("log write", n, self.line.len()));
            }
            match self.how {
                LogSync::None => {}
                LogSync::Fdatasync => f.sync_data().map_err(BenchError::sys("fdatasync"))?,
                LogSync::Fsync => f.sync_all().map_err(BenchError::sys("fsync"))?,
                LogSync::Sync => sys::sync_filesystems(),
            }
            self.lines += 1;
            if self.lines.is_multiple_of(LOG_TRUNCATE_EVERY) {
                f.set_len(0).map_err(BenchError::sys("ftruncate"))?;
            }
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.file = None;
        self.scratch = None;
        Ok(())
    }
}

/// Bytes of the file the concurrent reader reads, and of each of its reads.
pub const READER_FILE: usize = 4 << 20;
pub const READER_CHUNK: usize = 64 << 10;

/// §4.2.3's other half: a reader re-reading a cached file (one operation: a 64 KiB pread, the
/// file's chunks in turn) while a child appends log lines with `how` after each, without
/// pause. In 1985 every sync emptied the buffer cache of its use; Linux's writeback does not
/// evict clean pages, so today's reader should keep its hits, and what remains is the
/// writer's competition for the CPU and the disk.
pub struct LogReader {
    how: LogSync,
    scratch: Option<Scratch>,
    file: Option<File>,
    writer: Option<sys::Pid>,
    buf: Vec<u8>,
    at: usize,
}

impl LogReader {
    pub fn new(how: LogSync) -> LogReader {
        LogReader {
            how,
            scratch: None,
            file: None,
            writer: None,
            buf: Vec::new(),
            at: 0,
        }
    }
}

impl Benchmark for LogReader {
    fn setup(&mut self, ctx: &Ctx, _: u64) -> Result<(), BenchError> {
        let (dir, _) = super::super::disk_dir().map_err(BenchError::Protocol)?;
        let s = Scratch::named(&dir, "libs")?;
        let data = file_in(&s, "data", &text(READER_FILE))?;
        data.sync_all().map_err(BenchError::sys("fsync"))?;
        self.buf = vec![0u8; READER_CHUNK];
        // Read once, so that every timed read is a page-cache hit unless something evicts.
        for off in (0..READER_FILE).step_by(READER_CHUNK) {
            std::os::unix::fs::FileExt::read_exact_at(&data, &mut self.buf, off as u64)
                .map_err(BenchError::sys("pread"))?;
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(s.path().join("log"))
            .map_err(BenchError::sys("open (log)"))?;
        let mut writer = Log::new(self.how);
        // Prepared before the fork: the child only makes system calls.
        writer.file = Some(log);
        match sys::fork().map_err(BenchError::sys("fork"))? {
            sys::Fork::Child => {
                ctx.child_init();
                loop {
                    if writer.run(LOG_TRUNCATE_EVERY).is_err() {
                        sys::exit_now(1);
                    }
                }
            }
            sys::Fork::Parent(pid) => self.writer = Some(pid),
        }
        self.file = Some(data);
        self.scratch = Some(s);
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let Some(f) = &self.file else {
            return Err(BenchError::Protocol("log reader: not set up".into()));
        };
        for _ in 0..iterations {
            let n = std::os::unix::fs::FileExt::read_at(f, &mut self.buf, self.at as u64)
                .map_err(BenchError::sys("pread"))?;
            if n != READER_CHUNK {
                return Err(short("pread", n, READER_CHUNK));
            }
            self.at = (self.at + READER_CHUNK) % READER_FILE;
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        if let Some(pid) = self.writer.take() {
            let _ = sys::kill(pid, libc::SIGKILL);
            let _ = sys::wait_child(pid);
        }
        self.file = None;
        self.scratch = None;
        Ok(())
    }
}

impl Drop for LogReader {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_terminal_line_has_one_newline_whatever_its_length() {
        for len in [1, 8, 80, 160, 320] {
            let t = TtyLines::new(len, false);
            assert_eq!(t.line.len(), len);
            assert_eq!(t.line.iter().filter(|&&c| c == b'\n').count(), 1, "{len}");
            assert_eq!(t.line.last(), Some(&b'\n'));
        }
    }
}
