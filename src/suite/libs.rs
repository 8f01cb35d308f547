//! The libraries-and-utilities suite (`sysperf run --suite libs`): McKusick, Karels and
//! Leffler's §4.2 (4.2.1-4.2.6, "more than half of the speedups" of 4.3BSD came from the
//! libraries and utilities, not the kernel) and Feder's §V (the C library), measured on
//! today's glibc. The operations call the C library itself (src/clib.rs: stdio, nss, flock and
//! fcntl, the string, memory and conversion routines) or read(2)/write(2) directly where the
//! paper's untuned utilities did; nothing goes through Rust's own I/O or string code.
//!
//! Series (figure ids in parentheses):
//! 1. single-character reads (`libs.chars`): read(fd,&c,1), getc, fread a byte at a time,
//!    fread of BUFSIZ, read of st_blksize, per byte of a 256 KiB file; the derived ratio of
//!    read-1 to getc stands beside the paper's "factor of five" (§4.2).
//! 2. copy buffer size (`libs.copy`): read/write copies with buffers of 1 B..1 MiB (§4.2.2,
//!    Feder §V.4); the preflight notes st_blksize, where the knee should be.
//! 3. setbuf (`libs.setbuf`): putc to a file through the default buffer, setbuf's 1 KiB
//!    (the BUFSIZ of 1985, `cat`'s problem) or none (§4.2.2).
//! 4. standard error (`libs.stderr`): a diagnostic line unbuffered byte by byte (before 4.3BSD),
//!    by fprintf to an unbuffered stream (glibc buffers within the call: the 4.3BSD scheme), or
//!    line-buffered; to a file and to a pty (§4.2.2).
//! 5. terminal output (`libs.tty`): lines putc by putc to a pty, unbuffered against
//!    line-buffered (Feder §V.5, "an order of magnitude").
//! 6. lookups (`libs.passwd`, `libs.hosts`): getpwnam+getpwuid of the last of N users from
//!    the flat file and from libnss-db's hashed database; gethostbyname of the last of N hosts
//!    from the flat file and from a private unscd's cache (§4.2.1); root only (see `nss`).
//! 7. locks (`libs.lock-disk`, `libs.lock-tmpfs`): flock, fcntl, O_CREAT|O_EXCL, link/unlink in
//!    a directory of N entries (§4.2.3; the paper's "10%" beside the ratio).
//! 8. log (`libs.log`, `libs.log-reader`): a line appended with no sync, fdatasync, fsync or
//!    sync() (§4.2.3); and a reader of cached data beside such a writer.
//! 9. C run-time (`libs.string`, `libs.malloc`, `libs.convert`): memcpy, strlen, strcpy,
//!    malloc/free of powers of two (and the bytes malloc wastes, in the notes), atoi, strtod,
//!    printf %d and %f (§4.2.5, Feder §V.1-3).
//! 10. shell prompts (`libs.prompt`): an empty command to bash, dash, tcsh, csh on a pty; the
//!     system calls per prompt, counted by tracing the shell, are in the notes beside the
//!     paper's "up to twenty" (§4.2.6).
//!
//! A series that cannot run here (no root for the lookups, no libnss-db, no tmpfs, a shell not
//! installed) is left out of the suite, and the preflight says which and why.

use super::{Axis, Point, SeriesSpec, Suite};
use crate::bench::{Benchmark, Shape};
use crate::clib::Buffering;
use crate::model::{Derived, Series, YKind};

pub mod crt;
pub mod io;
pub mod lock;
pub mod nss;
pub mod shell;

use io::{CharMode, Dest, ErrMode, LogSync};
use lock::{LockKind, Where};

pub static SUITE: Suite = Suite {
    name: "libs",
    title: "Libraries and utilities: stdio, nss, locks, the C run-time, shells",
    paper: "McKusick, Karels, Leffler, Performance Improvements and Functional Enhancements in \
            4.3BSD (1985) / Leffler et al., Measuring and Improving the Performance of Berkeley \
            UNIX, §4.2 (4.2.1-4.2.6); Feder, The Evolution of UNIX System Performance (BLTJ \
            1984), §V",
    series,
    preflight,
    derive,
};

const CATEGORY: Axis = Axis {
    name: "operation",
    unit: "",
    log: false,
};

fn labelled(labels: &[&str], ops: u64) -> Vec<Point> {
    labels
        .iter()
        .enumerate()
        .map(|(i, l)| Point {
            label: Some((*l).to_string()),
            ops_per_iteration: ops,
            ..Point::new(i as f64, i as u64)
        })
        .collect()
}

fn sized(sizes: &[u64], ops: u64, bytes: bool) -> Vec<Point> {
    sizes
        .iter()
        .map(|&s| Point {
            ops_per_iteration: ops,
            bytes_per_op: if bytes { s as f64 } else { 0.0 },
            ..Point::new(s as f64, s)
        })
        .collect()
}

fn powers(from: u32, to: u32, step: usize) -> Vec<u64> {
    (from..=to).step_by(step).map(|e| 1u64 << e).collect()
}

// 1. §4.2: single-character reads ------------------------------------------------------------

/// The single-character series' points.
pub const CHARS: [&str; 5] = ["read-1", "getc", "fread-1", "fread-bufsiz", "read-blksize"];

pub static CHARS_SERIES: SeriesSpec = SeriesSpec {
    id: "libs.chars",
    figure: "libs.chars",
    figure_title: "§4.2: reading a file a character at a time, ns per byte",
    curve: "today",
    paper: "§4.2: utilities that spent 90% of their running time doing single character read \
            system calls; changing them to use the standard I/O library cut the running time \
            by a factor of five",
    today: "a 256 KiB file read whole per iteration by read(fd, &c, 1); getc; fread(&c, 1, 1); \
            fread of BUFSIZ (8 KiB); read of st_blksize; one operation is one byte",
    x: CATEGORY,
    y: YKind::CostNs,
    unit: "byte",
    shape: Shape::Single,
    points: |_| labelled(&CHARS, io::CHARS_FILE as u64),
    make: |p| {
        Box::new(io::Chars::new(match p {
            0 => CharMode::Read1,
            1 => CharMode::Getc,
            2 => CharMode::Fread1,
            3 => CharMode::FreadBufsiz,
            _ => CharMode::ReadBlksize,
        }))
    },
    paper_points: &[],
    paper_system: None,
    printed: None,
};

// 2. §4.2.2: the buffer size of a copy -------------------------------------------------------

pub static COPY_SERIES: SeriesSpec = SeriesSpec {
    id: "libs.copy",
    figure: "libs.copy",
    figure_title: "§4.2.2, Feder §V.4: copying a file, bytes/s against the buffer size",
    curve: "read/write copy",
    paper: "§4.2.2: utilities buffering I/O with the old optimal 1 Kbyte were changed to buffer \
            according to the file system block size; Feder §V.4: 1024-byte chunks gave 1.5 to 2 \
            times the throughput of 512-byte ones",
    today: "read(2) of the buffer size from a cached file and write(2) of what was read to \
            another, until the end; the file is 256 buffers (64 KiB to 4 MiB); one operation is \
            one whole copy",
    x: Axis {
        name: "buffer size",
        unit: "bytes",
        log: true,
    },
    y: YKind::BytesPerSec,
    unit: "copy",
    shape: Shape::Single,
    points: |quick| {
        let sizes = if quick {
            vec![1, 1024, 4096, 65536]
        } else {
            powers(0, 20, 1)
        };
        sizes
            .into_iter()
            .map(|s| Point {
                bytes_per_op: io::copy_file_bytes(s as usize) as f64,
                ..Point::new(s as f64, s)
            })
            .collect()
    },
    make: |p| Box::new(io::Copy::new(p as usize)),
    paper_points: &[],
    paper_system: None,
    printed: None,
};

// 3. §4.2.2: setbuf ---------------------------------------------------------------------------

pub const SETBUF: [&str; 3] = ["default", "setbuf-1024", "unbuffered"];

pub static SETBUF_SERIES: SeriesSpec = SeriesSpec {
    id: "libs.setbuf",
    figure: "libs.setbuf",
    figure_title: "§4.2.2: setbuf defeating stdio (cat), ns per byte putc to a file",
    curve: "today",
    paper: "§4.2.2: programs that assign an output buffer with setbuf get 1024 bytes (for \
            portability), defeating the standard I/O library's choice of the block size; cat \
            was one",
    today: "16 KiB of text putc by putc to a file per iteration (rewound each time), with the \
            stream's own buffer (st_blksize), a 1024-byte setvbuf buffer, or _IONBF",
    x: CATEGORY,
    y: YKind::CostNs,
    unit: "byte",
    shape: Shape::Single,
    points: |_| labelled(&SETBUF, io::SETBUF_BYTES as u64),
    make: |p| {
        Box::new(io::Setbuf::new(match p {
            0 => Buffering::Default,
            1 => Buffering::Full(io::OLD_BUFFER),
            _ => Buffering::Unbuffered,
        }))
    },
    paper_points: &[],
    paper_system: None,
    printed: None,
};

// 4. §4.2.2: standard error -------------------------------------------------------------------

pub const STDERR: [&str; 3] = ["byte-at-a-time", "4.3bsd-fprintf", "line-buffered"];

fn stderr_make(p: u64, dest: Dest) -> Box<dyn Benchmark> {
    Box::new(io::Stderr::new(
        match p {
            0 => ErrMode::V7,
            1 => ErrMode::Bsd43,
            _ => ErrMode::Line,
        },
        dest,
    ))
}

const STDERR_PAPER: &str = "§4.2.2: stderr was unbuffered, sending single-byte packets; \
     4.3BSD buffers all output within one fprintf and flushes it before returning; line or \
     block buffering can be asked for instead";
const STDERR_TODAY: &str = "one 53-byte diagnostic line per operation: snprintf then putc by \
     putc to an _IONBF stream (a write per byte); fprintf to an _IONBF stream (glibc buffers \
     within the call: one write); fprintf to an _IOLBF stream";

pub static STDERR_FILE: SeriesSpec = STDERR_FILE_BASE;

pub static STDERR_PTY: SeriesSpec = SeriesSpec {
    id: "libs.stderr-pty",
    curve: "to a pty",
    make: |p| stderr_make(p, Dest::Pty),
    ..STDERR_FILE_BASE
};

// The file series, as a constant the pty series is built from (a struct update cannot start
// from a static).
const STDERR_FILE_BASE: SeriesSpec = SeriesSpec {
    id: "libs.stderr-file",
    figure: "libs.stderr",
    figure_title: "§4.2.2: an unbuffered standard error, ns per diagnostic line",
    curve: "to a file",
    paper: STDERR_PAPER,
    today: STDERR_TODAY,
    x: CATEGORY,
    y: YKind::CostNs,
    unit: "line",
    shape: Shape::Single,
    points: |_| labelled(&STDERR, 1),
    make: |p| stderr_make(p, Dest::File),
    paper_points: &[],
    paper_system: None,
    printed: None,
};

// 5. Feder §V.5: terminal output --------------------------------------------------------------

fn tty_points(quick: bool) -> Vec<Point> {
    sized(
        if quick {
            &[80]
        } else {
            &[8, 20, 40, 80, 160, 320]
        },
        1,
        false,
    )
}

const TTY_BASE: SeriesSpec = SeriesSpec {
    id: "libs.tty-unbuffered",
    figure: "libs.tty",
    figure_title: "Feder §V.5: terminal output, ns per line against its length",
    curve: "unbuffered",
    paper: "Feder §V.5: all output to terminals unbuffered wrote single bytes at very high \
            overhead; System V buffers terminal output in lines, cutting the overhead for lines \
            of any sizable length by an order of magnitude",
    today: "a line of N characters (newline included) putc by putc to a pty's slave (a thread \
            drains the master and teardown checks every byte, with ONLCR's '\\r', arrived), \
            through an _IONBF or an _IOLBF stream",
    x: Axis {
        name: "line length",
        unit: "characters",
        log: true,
    },
    y: YKind::CostNs,
    unit: "line",
    shape: Shape::Single,
    points: tty_points,
    make: |p| Box::new(io::TtyLines::new(p as usize, false)),
    paper_points: &[],
    paper_system: None,
    printed: None,
};

pub static TTY_UNBUFFERED: SeriesSpec = TTY_BASE;

pub static TTY_LINE: SeriesSpec = SeriesSpec {
    id: "libs.tty-line",
    curve: "line-buffered",
    make: |p| Box::new(io::TtyLines::new(p as usize, true)),
    ..TTY_BASE
};

// 6. §4.2.1: lookups --------------------------------------------------------------------------

fn table_points(quick: bool) -> Vec<Point> {
    sized(
        if quick {
            &[10, 1000]
        } else {
            &[10, 100, 1000, 10000, 100000]
        },
        2,
        false,
    )
}

const PW_BASE: SeriesSpec = SeriesSpec {
    id: "libs.pw-files",
    figure: "libs.passwd",
    figure_title: "§4.2.1: password lookups, flat file against a hashed database",
    curve: "files (flat /etc/passwd)",
    paper: "§4.2.1: dbm generalized to several databases and used to rewrite the password and \
            host file lookups, which significantly improved mail, csh's tilde expansion, ls -l",
    today: "getpwnam and getpwuid of the last of N users (two lookups per iteration) in a \
            private mount namespace: nsswitch.conf 'passwd: files' over an N-user /etc/passwd, or \
            'passwd: db' over libnss-db's passwd.db made by makedb (the flat file then holds \
            root alone)",
    x: Axis {
        name: "users",
        unit: "entries",
        log: true,
    },
    y: YKind::CostNs,
    unit: "lookup",
    shape: Shape::Single,
    points: table_points,
    make: |p| Box::new(nss::Lookup::new(nss::Source::PwFiles, p as usize)),
    paper_points: &[],
    paper_system: None,
    printed: None,
};

pub static PW_FILES: SeriesSpec = PW_BASE;

pub static PW_DB: SeriesSpec = SeriesSpec {
    id: "libs.pw-db",
    curve: "db (libnss-db hash)",
    make: |p| Box::new(nss::Lookup::new(nss::Source::PwDb, p as usize)),
    ..PW_BASE
};

const HOST_BASE: SeriesSpec = SeriesSpec {
    id: "libs.host-files",
    figure: "libs.hosts",
    figure_title: "§4.2.1: host lookups, flat hosts file against a cache daemon",
    curve: "files (flat /etc/hosts)",
    today: "gethostbyname of the last of N hosts in a private mount namespace: 'hosts: files' \
            over an N-host /etc/hosts; or the same answered by a private unscd (libnss-db has \
            no hosts map, so a cache stands for the hash): started in the namespace on its own \
            socket, warmed with the name, the file then emptied to localhost so that only its \
            cache can answer",
    x: Axis {
        name: "hosts",
        unit: "entries",
        log: true,
    },
    points: |quick| {
        let mut p = table_points(quick);
        p.iter_mut().for_each(|p| p.ops_per_iteration = 1);
        p
    },
    make: |p| Box::new(nss::Lookup::new(nss::Source::HostFiles, p as usize)),
    ..PW_BASE
};

pub static HOST_FILES: SeriesSpec = HOST_BASE;

pub static HOST_NSCD: SeriesSpec = SeriesSpec {
    id: "libs.host-nscd",
    curve: "nscd (unscd cache)",
    make: |p| Box::new(nss::Lookup::new(nss::Source::HostNscd, p as usize)),
    ..HOST_BASE
};

// 7. §4.2.3: locks ----------------------------------------------------------------------------

fn lock_points(quick: bool) -> Vec<Point> {
    sized(if quick { &[16] } else { &[1, 16, 256, 4096] }, 1, false)
}

const LOCK_PAPER: &str = "§4.2.3: the mail system used link and unlink for locking, which \
     modify directories (synchronous disk operations, no name cache); flock(2) is all done in \
     in-memory tables, and using it cut the basic overhead of delivering mail by another 10%";

const LOCK_BASE: SeriesSpec = SeriesSpec {
    id: "libs.lock-flock-disk",
    figure: "libs.lock-disk",
    figure_title: "§4.2.3: lock and unlock a mailbox, disk file system",
    curve: "flock",
    paper: LOCK_PAPER,
    today: "lock then unlock a mailbox in a directory of N other files: flock(LOCK_EX/LOCK_UN); \
            fcntl F_SETLKW F_WRLCK/F_UNLCK; open(O_CREAT|O_EXCL) of mbox.lock + close + \
            unlink; link(mbox.tmp, mbox.lock) + unlink",
    x: Axis {
        name: "directory entries",
        unit: "entries",
        log: true,
    },
    y: YKind::CostNs,
    unit: "lock+unlock",
    shape: Shape::Single,
    points: lock_points,
    make: |p| Box::new(lock::Lock::new(LockKind::Flock, Where::Disk, p as usize)),
    paper_points: &[],
    paper_system: None,
    printed: None,
};

pub static LOCK_FLOCK_DISK: SeriesSpec = LOCK_BASE;
pub static LOCK_FCNTL_DISK: SeriesSpec = SeriesSpec {
    id: "libs.lock-fcntl-disk",
    curve: "fcntl",
    make: |p| Box::new(lock::Lock::new(LockKind::Fcntl, Where::Disk, p as usize)),
    ..LOCK_BASE
};
pub static LOCK_EXCL_DISK: SeriesSpec = SeriesSpec {
    id: "libs.lock-excl-disk",
    curve: "O_CREAT|O_EXCL lock file",
    make: |p| Box::new(lock::Lock::new(LockKind::Excl, Where::Disk, p as usize)),
    ..LOCK_BASE
};
pub static LOCK_LINK_DISK: SeriesSpec = SeriesSpec {
    id: "libs.lock-link-disk",
    curve: "link/unlink",
    make: |p| Box::new(lock::Lock::new(LockKind::Link, Where::Disk, p as usize)),
    ..LOCK_BASE
};

const LOCK_TMPFS_BASE: SeriesSpec = SeriesSpec {
    id: "libs.lock-flock-tmpfs",
    figure: "libs.lock-tmpfs",
    figure_title: "§4.2.3: lock and unlock a mailbox, tmpfs",
    make: |p| Box::new(lock::Lock::new(LockKind::Flock, Where::Tmpfs, p as usize)),
    ..LOCK_BASE
};
pub static LOCK_FLOCK_TMPFS: SeriesSpec = LOCK_TMPFS_BASE;
pub static LOCK_FCNTL_TMPFS: SeriesSpec = SeriesSpec {
    id: "libs.lock-fcntl-tmpfs",
    curve: "fcntl",
    make: |p| Box::new(lock::Lock::new(LockKind::Fcntl, Where::Tmpfs, p as usize)),
    ..LOCK_TMPFS_BASE
};
pub static LOCK_EXCL_TMPFS: SeriesSpec = SeriesSpec {
    id: "libs.lock-excl-tmpfs",
    curve: "O_CREAT|O_EXCL lock file",
    make: |p| Box::new(lock::Lock::new(LockKind::Excl, Where::Tmpfs, p as usize)),
    ..LOCK_TMPFS_BASE
};
pub static LOCK_LINK_TMPFS: SeriesSpec = SeriesSpec {
    id: "libs.lock-link-tmpfs",
    curve: "link/unlink",
    make: |p| Box::new(lock::Lock::new(LockKind::Link, Where::Tmpfs, p as usize)),
    ..LOCK_TMPFS_BASE
};

// 8. §4.2.3: syslog's sync per line ------------------------------------------------------------

pub const LOG: [&str; 4] = ["no-sync", "fdatasync", "fsync", "sync"];

pub static LOG_SERIES: SeriesSpec = SeriesSpec {
    id: "libs.log",
    figure: "libs.log",
    figure_title: "§4.2.3: appending a log line with a sync after each, ns per line",
    curve: "today",
    paper: "§4.2.3: syslog performed a sync operation after each message it received, which \
            wrecked the buffer cache and explained much of the load of mail to large lists",
    today: "write(2) of a 68-byte line to an O_APPEND file on a disk file system, then nothing, \
            fdatasync, fsync, or sync() (every file system of the machine)",
    x: CATEGORY,
    y: YKind::CostNs,
    unit: "line",
    shape: Shape::Single,
    // sync() flushes every file system of the machine (others' work too): not in --quick.
    points: |quick| labelled(if quick { &LOG[..3] } else { &LOG }, 1),
    make: |p| Box::new(io::Log::new(log_sync(p))),
    paper_points: &[],
    paper_system: None,
    printed: None,
};

pub static LOG_READER: SeriesSpec = SeriesSpec {
    id: "libs.log-reader",
    figure: "libs.log-reader",
    figure_title:
        "§4.2.3: a reader of cached data while a log is synced per line, ns per 64 KiB read",
    curve: "reader",
    paper: "§4.2.3: syslog's sync after each message wreaked havoc on the effectiveness of the \
            buffer cache",
    today: "the worker preads a 4 MiB cached file 64 KiB at a time while a child appends log \
            lines on the same disk file system without pause, with no sync, fdatasync, fsync or \
            sync() after each (the point's label); Linux's writeback does not evict clean \
            pages, so the reads stay page-cache hits and what is left is the competition",
    x: CATEGORY,
    y: YKind::CostNs,
    unit: "64 KiB read",
    shape: Shape::Pair,
    points: |quick| labelled(if quick { &LOG[..3] } else { &LOG }, 1),
    make: |p| Box::new(io::LogReader::new(log_sync(p))),
    paper_points: &[],
    paper_system: None,
    printed: None,
};

fn log_sync(p: u64) -> LogSync {
    match p {
        0 => LogSync::None,
        1 => LogSync::Fdatasync,
        2 => LogSync::Fsync,
        _ => LogSync::Sync,
    }
}

// 9. §4.2.5, Feder §V.1-3: the C run-time ------------------------------------------------------

fn string_points(quick: bool) -> Vec<Point> {
    if quick {
        sized(&[64, 4096], 1, true)
    } else {
        sized(&powers(3, 20, 1), 1, true)
    }
}

const STRING_BASE: SeriesSpec = SeriesSpec {
    id: "libs.memcpy",
    figure: "libs.string",
    figure_title: "§4.2.5, Feder §V.1-2: C library string routines, bytes/s against size",
    curve: "memcpy",
    paper: "§4.2.5: the running time of the string routines can be cut in half by rewriting \
            them with the VAX string instructions; Feder §V.1-2: assembler coding and block \
            rather than character-at-a-time primitives, in some cases over an order of magnitude",
    today: "glibc's memcpy, strlen and strcpy (its ifunc-selected vector versions) of N bytes; \
            the destination half a page from the source modulo 4 KiB (a few bytes after it, \
            where two malloc'd buffers land, makes memcpy's rep movsb ~100x slower: 4K aliasing)",
    x: Axis {
        name: "size",
        unit: "bytes",
        log: true,
    },
    y: YKind::BytesPerSec,
    unit: "call",
    shape: Shape::Single,
    points: string_points,
    make: |p| Box::new(crt::Strings::new(crt::StrOp::Memcpy, p as usize)),
    paper_points: &[],
    paper_system: None,
    printed: None,
};
pub static MEMCPY: SeriesSpec = STRING_BASE;
pub static STRLEN: SeriesSpec = SeriesSpec {
    id: "libs.strlen",
    curve: "strlen",
    make: |p| Box::new(crt::Strings::new(crt::StrOp::Strlen, p as usize)),
    ..STRING_BASE
};
pub static STRCPY: SeriesSpec = SeriesSpec {
    id: "libs.strcpy",
    curve: "strcpy",
    make: |p| Box::new(crt::Strings::new(crt::StrOp::Strcpy, p as usize)),
    ..STRING_BASE
};

/// The sizes the malloc series allocates (powers of two).
pub fn malloc_sizes(quick: bool) -> Vec<u64> {
    if quick {
        vec![16, 4096]
    } else {
        powers(4, 20, 2)
    }
}

pub static MALLOC: SeriesSpec = SeriesSpec {
    id: "libs.malloc",
    figure: "libs.malloc",
    figure_title: "§4.2.5: malloc and free of power-of-two sizes, ns per pair",
    curve: "malloc+free",
    paper: "§4.2.5: the memory allocation routines were tuned to waste less memory for \
            allocations with sizes that are a power of two",
    today: "glibc malloc(N), one byte written, free; the bytes wasted per size (usable size \
            and chunk header less N) are in the run's notes",
    x: Axis {
        name: "size",
        unit: "bytes",
        log: true,
    },
    y: YKind::CostNs,
    unit: "malloc+free",
    shape: Shape::Single,
    points: |quick| sized(&malloc_sizes(quick), 1, false),
    make: |p| Box::new(crt::Malloc::new(p as usize)),
    paper_points: &[],
    paper_system: None,
    printed: None,
};

pub const CONVERT: [&str; 4] = ["atoi", "strtod", "printf-d", "printf-f"];

pub static CONVERT_SERIES: SeriesSpec = SeriesSpec {
    id: "libs.convert",
    figure: "libs.convert",
    figure_title: "Feder §V.3: conversions between ASCII and numbers, ns per call",
    curve: "today",
    paper: "Feder §V (C library): conversion between ASCII and numeric quantities among the \
            commonly used portions whose performance changed",
    today: "atoi(\"123456789\"); strtod(\"1234.5678\"); snprintf(\"%d\", 123456789); \
            snprintf(\"%f\", 1234.5678)",
    x: CATEGORY,
    y: YKind::CostNs,
    unit: "call",
    shape: Shape::Single,
    points: |_| labelled(&CONVERT, 1),
    make: |p| {
        Box::new(crt::Convert::new(match p {
            0 => crt::Conv::Atoi,
            1 => crt::Conv::Strtod,
            2 => crt::Conv::PrintfD,
            _ => crt::Conv::PrintfF,
        }))
    },
    paper_points: &[],
    paper_system: None,
    printed: None,
};

// 10. §4.2.6: shell prompts --------------------------------------------------------------------

/// The installed shells, as points (param = index in [`shell::SHELLS`]).
fn prompt_points(_: bool) -> Vec<Point> {
    let mut v: Vec<Point> = shell::SHELLS
        .iter()
        .enumerate()
        .filter(|(_, (name, _))| shell::shell_path(name).is_some())
        .map(|(i, (name, _))| Point {
            label: Some((*name).to_string()),
            ..Point::new(i as f64, i as u64)
        })
        .collect();
    if v.is_empty() {
        // Never empty (the registry's rule); the series is left out of the suite then.
        v.push(Point {
            label: Some("bash".into()),
            ..Point::new(0.0, 0)
        });
    }
    v
}

pub static PROMPT: SeriesSpec = SeriesSpec {
    id: "libs.prompt",
    figure: "libs.prompt",
    figure_title: "§4.2.6: an empty command at an interactive shell, ns per prompt",
    curve: "today",
    paper: "§4.2.6: the C-shell on 4.2BSD generated up to twenty system calls per prompt; \
            using the new signal facilities directly cut them in half",
    today: "bash --norc -i, dash -i, tcsh -f -i, csh -f -i (those installed) as session leaders \
            on a pty; one operation is a newline typed on the master and the next prompt read \
            back; the system calls per prompt (tracefs raw_syscalls of the shell's pid) are in \
            the notes",
    x: CATEGORY,
    y: YKind::CostNs,
    unit: "prompt",
    shape: Shape::Single,
    points: prompt_points,
    make: |p| Box::new(shell::Prompt::new(p as usize)),
    paper_points: &[],
    paper_system: None,
    printed: None,
};

// ----------------------------------------------------------------------------------------------

/// Every series with why it cannot run here (None when it can).
fn all_series() -> Vec<(&'static SeriesSpec, Option<String>)> {
    let tmpfs = lock::tmpfs_dir().err();
    let disk = super::disk_dir().err();
    let shells = shell::SHELLS
        .iter()
        .any(|(n, _)| shell::shell_path(n).is_some());
    vec![
        (&CHARS_SERIES, None),
        (&COPY_SERIES, None),
        (&SETBUF_SERIES, None),
        (&STDERR_FILE, None),
        (&STDERR_PTY, None),
        (&TTY_UNBUFFERED, None),
        (&TTY_LINE, None),
        (&PW_FILES, nss::unavailable(nss::Source::PwFiles)),
        (&PW_DB, nss::unavailable(nss::Source::PwDb)),
        (&HOST_FILES, nss::unavailable(nss::Source::HostFiles)),
        (&HOST_NSCD, nss::unavailable(nss::Source::HostNscd)),
        (&LOCK_FLOCK_DISK, disk.clone()),
        (&LOCK_FCNTL_DISK, disk.clone()),
        (&LOCK_EXCL_DISK, disk.clone()),
        (&LOCK_LINK_DISK, disk.clone()),
        (&LOCK_FLOCK_TMPFS, tmpfs.clone()),
        (&LOCK_FCNTL_TMPFS, tmpfs.clone()),
        (&LOCK_EXCL_TMPFS, tmpfs.clone()),
        (&LOCK_LINK_TMPFS, tmpfs),
        (&LOG_SERIES, disk.clone()),
        (&LOG_READER, disk),
        (&MEMCPY, None),
        (&STRLEN, None),
        (&STRCPY, None),
        (&MALLOC, None),
        (&CONVERT_SERIES, None),
        (
            &PROMPT,
            (!shells).then(|| "no shell installed (apt-get install bash dash tcsh csh)".into()),
        ),
    ]
}

/// The series that can run on this machine.
fn series() -> Vec<&'static SeriesSpec> {
    all_series()
        .into_iter()
        .filter(|(_, why)| why.is_none())
        .map(|(s, _)| s)
        .collect()
}

/// The series left out here and why, then the facts the curves are read against: st_blksize
/// (the copy's knee), malloc's waste per size, and each shell's system calls per prompt.
fn preflight() -> Result<Vec<String>, String> {
    let mut notes: Vec<String> = all_series()
        .into_iter()
        .filter_map(|(s, why)| why.map(|w| format!("{} skipped: {w}", s.id)))
        .collect();
    if let Ok(f) = std::fs::File::open(std::env::temp_dir()) {
        use std::os::fd::AsRawFd;
        if let Ok(b) = crate::sys::blksize(f.as_raw_fd()) {
            notes.push(format!(
                "st_blksize of {} is {b} bytes: the copy curve's knee should be there (the \
                 paper's old optimal buffer was 1024 bytes, §4.2.2)",
                std::env::temp_dir().display()
            ));
        }
    }
    let waste: Vec<String> = malloc_sizes(false)
        .into_iter()
        .filter_map(|s| crt::malloc_waste_percent(s as usize).map(|w| format!("{s} B: {w:.1}%")))
        .collect();
    notes.push(format!(
        "malloc's waste for power-of-two requests (reserved less requested, over requested): {} \
         (§4.2.5)",
        waste.join(", ")
    ));
    for (i, (name, _)) in shell::SHELLS.iter().enumerate() {
        if shell::shell_path(name).is_none() {
            notes.push(format!(
                "{name} not installed: no prompt point (apt-get install {name})"
            ));
            continue;
        }
        notes.push(match shell::count_syscalls_per_prompt(i, 20) {
            Ok(n) => format!(
                "{name}: {n:.1} system calls per prompt (traced); the paper: up to twenty for \
                 4.2BSD's csh, halved in 4.3BSD (§4.2.6)"
            ),
            Err(e) => format!("{name}: system calls per prompt not counted: {e}"),
        });
    }
    Ok(notes)
}

/// The y median of point `label` (or x) of series `id`.
fn y_at(series: &[Series], id: &str, label: Option<&str>, x: Option<f64>) -> Option<f64> {
    series
        .iter()
        .find(|s| s.id == id)?
        .points
        .iter()
        .find(|p| match (label, x) {
            (Some(l), _) => p.label.as_deref() == Some(l),
            (None, Some(x)) => p.x == x,
            _ => false,
        })?
        .y
        .as_ref()
        .map(|e| e.median)
}

fn ratio(
    name: &str,
    a: (&str, Option<f64>),
    b: (&str, Option<f64>),
    paper: &str,
) -> Option<Derived> {
    let (an, a) = a;
    let (bn, b) = b;
    let (a, b) = (a?, b?);
    (b > 0.0).then(|| Derived {
        na: None,
        name: name.into(),
        value: a / b,
        unit: "x".into(),
        formula: format!("{an} / {bn} = {a:.1} / {b:.1}; the paper: {paper}"),
    })
}

/// The ratios the papers printed a figure for, today's beside theirs.
fn derive(series: &[Series]) -> Vec<Derived> {
    let at = |id, l| y_at(series, id, Some(l), None);
    let mut out = Vec::new();
    out.extend(ratio(
        "single-character read(2) against getc (§4.2)",
        ("read-1 ns/byte", at("libs.chars", "read-1")),
        ("getc ns/byte", at("libs.chars", "getc")),
        "stdio cut the running time by a factor of five (§4.2)",
    ));
    out.extend(ratio(
        "setbuf's 1 KiB buffer against stdio's own (§4.2.2)",
        ("setbuf-1024 ns/byte", at("libs.setbuf", "setbuf-1024")),
        ("default ns/byte", at("libs.setbuf", "default")),
        "no figure printed (\"added overhead\", §4.2.2)",
    ));
    for id in ["libs.stderr-file", "libs.stderr-pty"] {
        out.extend(ratio(
            &format!("unbuffered stderr against the 4.3BSD scheme, {id} (§4.2.2)"),
            ("byte-at-a-time ns/line", at(id, "byte-at-a-time")),
            ("4.3bsd-fprintf ns/line", at(id, "4.3bsd-fprintf")),
            "no figure printed (§4.2.2)",
        ));
    }
    out.extend(ratio(
        "unbuffered against line-buffered terminal output, 80 characters (Feder §V.5)",
        (
            "unbuffered ns/line",
            y_at(series, "libs.tty-unbuffered", None, Some(80.0)),
        ),
        (
            "line-buffered ns/line",
            y_at(series, "libs.tty-line", None, Some(80.0)),
        ),
        "an order of magnitude (Feder §V.5)",
    ));
    for fs in ["disk", "tmpfs"] {
        for x in [16.0, 4096.0] {
            out.extend(ratio(
                &format!("link/unlink against flock, {fs}, {x} entries (§4.2.3)"),
                (
                    "link/unlink ns",
                    y_at(series, &format!("libs.lock-link-{fs}"), None, Some(x)),
                ),
                (
                    "flock ns",
                    y_at(series, &format!("libs.lock-flock-{fs}"), None, Some(x)),
                ),
                "flock cut the basic overhead of delivering mail by another 10% (§4.2.3)",
            ));
        }
    }
    out.extend(ratio(
        "sync() per line against no sync (§4.2.3)",
        ("sync ns/line", at("libs.log", "sync")),
        ("no-sync ns/line", at("libs.log", "no-sync")),
        "no figure printed (\"wreaked havoc on the buffer cache\", §4.2.3)",
    ));
    for x in [1000.0, 100000.0] {
        out.extend(ratio(
            &format!("gethostbyname, flat file against the nscd cache, {x} hosts (§4.2.1)"),
            (
                "files ns/lookup",
                y_at(series, "libs.host-files", None, Some(x)),
            ),
            (
                "nscd ns/lookup",
                y_at(series, "libs.host-nscd", None, Some(x)),
            ),
            "no figure printed (\"significantly improved\", §4.2.1)",
        ));
    }
    // The crossover of the passwd curves: the smallest table the hash answers faster.
    let files = series.iter().find(|s| s.id == "libs.pw-files");
    if let (Some(f), true) = (files, series.iter().any(|s| s.id == "libs.pw-db")) {
        if let Some(p) = f.points.iter().find(|p| {
            match (p.y.as_ref(), y_at(series, "libs.pw-db", None, Some(p.x))) {
                (Some(fy), Some(dy)) => dy < fy.median,
                _ => false,
            }
        }) {
            out.push(Derived {
                na: None,
                name: "passwd crossover: the smallest table the db answers faster (§4.2.1)".into(),
                value: p.x,
                unit: "entries".into(),
                formula: "first measured N with db's ns/lookup below files'; the paper printed \
                          no size (§4.2.1)"
                    .into(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_series_is_listed_once_with_quick_points() {
        let all = all_series();
        let mut ids: Vec<&str> = all.iter().map(|(s, _)| s.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), all.len());
        assert!(all.len() >= 10);
        for (s, _) in &all {
            assert!(!(s.points)(true).is_empty(), "{}", s.id);
            assert!(
                (s.points)(true).len() <= (s.points)(false).len(),
                "{}",
                s.id
            );
        }
    }

    #[test]
    fn passwd_and_makedb_input_hold_every_user_under_three_keys() {
        let p = nss::passwd_text(3);
        assert_eq!(p.lines().count(), 4);
        assert!(p.lines().last().unwrap().starts_with("user2:x:20002:"));
        let m = nss::makedb_input(&p);
        assert_eq!(m.lines().count(), 12);
        assert!(m.contains(".user2 user2:x:20002:"));
        assert!(m.contains("=20002 user2:x:20002:"));
        assert!(m.contains("03 user2:x:"));
    }

    #[test]
    fn copy_files_hold_whole_buffers() {
        for e in 0..=20 {
            let b = 1usize << e;
            let f = io::copy_file_bytes(b);
            assert_eq!(f % b, 0, "{b}");
            assert!((64 << 10..=4 << 20).contains(&f));
        }
    }
}
