//! Message passing through pipes and Unix-domain datagram sockets (Appendix A: pipeself,
//! pipediscard, pipeback; the run script's udgself, udgdiscard, udgback).
//!
//! Three shapes, each with 4- and 512-byte messages:
//! - self: one process writes a message and reads it back (no context switch needed);
//! - discard: the parent writes, a child reads and discards (a one-way stream);
//! - back: the parent writes, the child reads and replies, the parent reads the reply
//!   (a request-response round trip: two context switches on one CPU).
//!
//! The pipe tests' discard shape comes twice: with today's default pipe (64 KiB) and with the
//! pipe set to 4 KiB (F_SETPIPE_SZ) (`pipediscard4.4k`, `pipediscard512.4k`), the buffering
//! 4.3BSD gave pipes: "The default amount of buffer space allocated for stream sockets
//! (including pipes) has been increased to 4096 bytes" (§4.1.7). 4.2BSD's, which Table 2
//! measured, held less: "4.2BSD pipes have less system buffer space provided them than 4.1BSD
//! pipes" (§3.2.1); the paper gives no figure for either. A one-way stream blocks when the
//! pipe is full, so the capacity sets how many messages go by between context switches: 8 of
//! 512 bytes at 4 KiB, 128 at 64 KiB. The self and back shapes never hold more than one
//! message, so their capacity does not matter.
//!
//! The child is forked during setup. The paper's program never waited for it: its `time`
//! stopped when the writer exited, and charged the writer alone (4.2BSD pipeback4: 37.4 s of
//! CPU in 75.0 s elapsed). So the clock stops when the parent's loop ends, and the child is
//! reaped after it (`reap_unwaited`), with the last of a full pipe still draining in the
//! discard tests; its CPU time is in the trial's All CPU, not in User and System.

use super::{Benchmark, Charge, Chart, Ctx, Group, Shape, Spec};
use crate::error::BenchError;
use crate::sys::{self, Fork, Pid};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

#[derive(Clone, Copy)]
enum Kind {
    Pipe,
    /// A pipe set to 4.3BSD's 4 KiB.
    Pipe4k,
    Udg,
}

/// What 4.3BSD's pipes held (§4.1.7: raised to 4096 bytes); 4.2BSD's held less (§3.2.1).
pub const PAPER_PIPE_BYTES: usize = 4096;

#[derive(Clone, Copy)]
enum Pattern {
    SelfLoop,
    Discard,
    Back,
}

const PIPE_TODAY: &str =
    "pipe(2) of today's default capacity (64 KiB); write the message, then read it back";
const PIPE_DISCARD_TODAY: &str = "pipe(2) of today's default capacity (64 KiB); the parent writes \
     each message, the child reads it and throws it away";
const PIPE_4K_TODAY: &str = "pipe(2) set to 4 KiB with F_SETPIPE_SZ (4.3BSD's 4096 bytes, \
     §4.1.7; 4.2BSD's pipes held less, §3.2.1: a full pipe blocks the writer after 4 KiB); the \
     parent writes each message, the child reads it and throws it away";
const UDG_TODAY: &str = "socketpair(AF_UNIX, SOCK_DGRAM), one datagram per message";

/// The chart this family's tests are drawn on.
pub static CHART: Chart = Chart {
    name: "ipc",
    title: "Pipes and datagram sockets",
    about: Some("pipes and datagram sockets"),
};

macro_rules! ipc_spec {
    ($id:literal, $paper:literal, $today:expr, $unit:literal, $shape:expr, $kind:expr, $pat:expr, $size:literal) => {
        Spec {
            id: $id,
            label: $id,
            group: Group::Kernel,
            chart: &CHART,
            paper: $paper,
            today: $today,
            paper_count: 10_000,
            unit: $unit,
            ops_per_iteration: 1,
            shape: $shape,
            charge: Charge::Own,
            make: || Box::new(Ipc::new($kind, $pat, $size)),
        }
    };
}

pub static SPECS: &[Spec] = &[
    ipc_spec!(
        "pipeself4",
        "send 10,000 4-byte messages to yourself",
        PIPE_TODAY,
        "message",
        Shape::Single,
        Kind::Pipe,
        Pattern::SelfLoop,
        4
    ),
    ipc_spec!(
        "pipeself512",
        "send 10,000 512-byte messages to yourself",
        PIPE_TODAY,
        "message",
        Shape::Single,
        Kind::Pipe,
        Pattern::SelfLoop,
        512
    ),
    ipc_spec!(
        "pipediscard4",
        "send 10,000 4-byte messages to child who discards",
        PIPE_DISCARD_TODAY,
        "message",
        Shape::Pair,
        Kind::Pipe,
        Pattern::Discard,
        4
    ),
    ipc_spec!(
        "pipediscard512",
        "send 10,000 512-byte messages to child who discards",
        PIPE_DISCARD_TODAY,
        "message",
        Shape::Pair,
        Kind::Pipe,
        Pattern::Discard,
        512
    ),
    Spec {
        id: "pipediscard4.4k",
        label: "pipediscard4 (4K)",
        group: Group::Kernel,
        chart: &CHART,
        paper:
            "send 10,000 4-byte messages to child who discards, through a pipe of 4.3BSD's 4 KiB (4.2BSD's held less)",
        today: PIPE_4K_TODAY,
        paper_count: 10_000,
        unit: "message",
        ops_per_iteration: 1,
        shape: Shape::Pair,
        charge: Charge::Own,
        make: || Box::new(Ipc::new(Kind::Pipe4k, Pattern::Discard, 4)),
    },
    Spec {
        id: "pipediscard512.4k",
        label: "pipediscard512 (4K)",
        group: Group::Kernel,
        chart: &CHART,
        paper:
            "send 10,000 512-byte messages to child who discards, through a pipe of 4.3BSD's 4 KiB (4.2BSD's held less)",
        today: PIPE_4K_TODAY,
        paper_count: 10_000,
        unit: "message",
        ops_per_iteration: 1,
        shape: Shape::Pair,
        charge: Charge::Own,
        make: || Box::new(Ipc::new(Kind::Pipe4k, Pattern::Discard, 512)),
    },
    ipc_spec!(
        "pipeback4",
        "exchange 10,000 4-byte messages with child",
        "two pipes, request and reply",
        "round trip",
        Shape::Pair,
        Kind::Pipe,
        Pattern::Back,
        4
    ),
    ipc_spec!(
        "pipeback512",
        "exchange 10,000 512-byte messages with child",
        "two pipes, request and reply",
        "round trip",
        Shape::Pair,
        Kind::Pipe,
        Pattern::Back,
        512
    ),
    ipc_spec!(
        "udgself4",
        "send 10,000 4-byte datagrams to yourself (run script)",
        UDG_TODAY,
        "message",
        Shape::Single,
        Kind::Udg,
        Pattern::SelfLoop,
        4
    ),
    ipc_spec!(
        "udgself512",
        "send 10,000 512-byte datagrams to yourself (run script)",
        UDG_TODAY,
        "message",
        Shape::Single,
        Kind::Udg,
        Pattern::SelfLoop,
        512
    ),
    ipc_spec!(
        "udgdiscard4",
        "send 10,000 4-byte datagrams to child who discards (run script)",
        UDG_TODAY,
        "message",
        Shape::Pair,
        Kind::Udg,
        Pattern::Discard,
        4
    ),
    ipc_spec!(
        "udgdiscard512",
        "send 10,000 512-byte datagrams to child who discards (run script)",
        UDG_TODAY,
        "message",
        Shape::Pair,
        Kind::Udg,
        Pattern::Discard,
        512
    ),
    ipc_spec!(
        "udgback4",
        "exchange 10,000 4-byte datagrams with child (run script)",
        "two AF_UNIX datagram socket pairs, request and reply",
        "round trip",
        Shape::Pair,
        Kind::Udg,
        Pattern::Back,
        4
    ),
    ipc_spec!(
        "udgback512",
        "exchange 10,000 512-byte datagrams with child (run script)",
        "two AF_UNIX datagram socket pairs, request and reply",
        "round trip",
        Shape::Pair,
        Kind::Udg,
        Pattern::Back,
        512
    ),
];

/// A one-way channel: bytes written to `tx` come out of `rx`.
struct Channel {
    rx: OwnedFd,
    tx: OwnedFd,
}

impl Channel {
    fn new(kind: Kind) -> Result<Channel, BenchError> {
        let (rx, tx) = match kind {
            Kind::Pipe => sys::pipe().map_err(BenchError::sys("pipe"))?,
            Kind::Pipe4k => {
                let (rx, tx) = sys::pipe().map_err(BenchError::sys("pipe"))?;
                let got = sys::set_pipe_size(&tx, PAPER_PIPE_BYTES)
                    .map_err(BenchError::sys("fcntl(F_SETPIPE_SZ)"))?;
                if got != PAPER_PIPE_BYTES {
                    return Err(BenchError::Protocol(format!(
                        "the pipe holds {got} bytes, not {PAPER_PIPE_BYTES} (page size?)"
                    )));
                }
                (rx, tx)
            }
            Kind::Udg => sys::dgram_pair().map_err(BenchError::sys("socketpair"))?,
        };
        Ok(Channel { rx, tx })
    }
}

struct Ipc {
    kind: Kind,
    pattern: Pattern,
    size: usize,
    buf: [u8; 512],
    to_child: Option<Channel>,
    to_parent: Option<Channel>,
    child: Option<Pid>,
}

impl Ipc {
    fn new(kind: Kind, pattern: Pattern, size: usize) -> Ipc {
        Ipc {
            kind,
            pattern,
            size,
            buf: [0x5a; 512],
            to_child: None,
            to_parent: None,
            child: None,
        }
    }
}

#[inline]
fn send(fd: RawFd, msg: &[u8]) -> Result<(), BenchError> {
    let n = sys::write(fd, msg).map_err(BenchError::sys("write"))?;
    if n != msg.len() {
        return Err(BenchError::Protocol(format!(
            "short write: {n} of {} bytes",
            msg.len()
        )));
    }
    Ok(())
}

/// Reads one whole message: a datagram arrives whole; a pipe may hand it over in pieces.
#[inline]
fn recv(fd: RawFd, buf: &mut [u8]) -> Result<(), BenchError> {
    let mut got = 0;
    while got < buf.len() {
        let n = sys::read(fd, &mut buf[got..]).map_err(BenchError::sys("read"))?;
        if n == 0 {
            return Err(BenchError::Protocol("peer closed the channel early".into()));
        }
        got += n;
    }
    Ok(())
}

/// Waits for a child the paper's program left running and returns its usage; an error when
/// it did not exit with 0 (shared with csw).
pub(crate) fn reap(child: Pid) -> Result<crate::model::Usage, BenchError> {
    let (_, status, usage) = sys::wait4(child, false).map_err(BenchError::sys("wait4"))?;
    match sys::exit_code(status) {
        0 => Ok(usage),
        code => Err(BenchError::Protocol(format!("child exited with {code}"))),
    }
}

/// The child's side of discard and back; exits with 0 on success, 1 on any failure.
fn child_loop(pattern: Pattern, rx: RawFd, tx: Option<RawFd>, size: usize, iterations: u64) -> ! {
    let mut buf = [0u8; 512];
    let msg = &mut buf[..size];
    for _ in 0..iterations {
        if recv(rx, msg).is_err() {
            sys::exit_now(1);
        }
        if let (Pattern::Back, Some(tx)) = (pattern, tx) {
            if send(tx, msg).is_err() {
                sys::exit_now(1);
            }
        }
    }
    sys::exit_now(0)
}

impl Benchmark for Ipc {
    fn setup(&mut self, ctx: &Ctx, iterations: u64) -> Result<(), BenchError> {
        self.to_child = Some(Channel::new(self.kind)?);
        if let Pattern::Back = self.pattern {
            self.to_parent = Some(Channel::new(self.kind)?);
        }
        if let Pattern::SelfLoop = self.pattern {
            return Ok(());
        }
        match sys::fork().map_err(BenchError::sys("fork"))? {
            Fork::Child => {
                ctx.child_init();
                let rx = self
                    .to_child
                    .as_ref()
                    .map(|c| c.rx.as_raw_fd())
                    .unwrap_or(-1);
                let tx = self.to_parent.as_ref().map(|c| c.tx.as_raw_fd());
                child_loop(self.pattern, rx, tx, self.size, iterations)
            }
            Fork::Parent(pid) => self.child = Some(pid),
        }
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let size = self.size;
        let out = self
            .to_child
            .as_ref()
            .ok_or_else(|| BenchError::Protocol("no channel".into()))?;
        let (tx, rx) = (out.tx.as_raw_fd(), out.rx.as_raw_fd());
        match self.pattern {
            Pattern::SelfLoop => {
                for _ in 0..iterations {
                    send(tx, &self.buf[..size])?;
                    recv(rx, &mut self.buf[..size])?;
                }
                return Ok(());
            }
            Pattern::Discard => {
                for _ in 0..iterations {
                    send(tx, &self.buf[..size])?;
                }
            }
            Pattern::Back => {
                let back = self
                    .to_parent
                    .as_ref()
                    .ok_or_else(|| BenchError::Protocol("no reply channel".into()))?;
                let reply = back.rx.as_raw_fd();
                for _ in 0..iterations {
                    send(tx, &self.buf[..size])?;
                    recv(reply, &mut self.buf[..size])?;
                }
            }
        }
        Ok(())
    }

    fn reap_unwaited(&mut self) -> Result<crate::model::Usage, BenchError> {
        let Some(child) = self.child.take() else {
            return Ok(crate::model::Usage::default());
        };
        reap(child)
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        if let Some(pid) = self.child.take() {
            let _ = sys::kill(pid, libc::SIGKILL);
            let _ = sys::wait_child(pid);
        }
        self.to_child = None;
        self.to_parent = None;
        Ok(())
    }
}

/// The children of the calling thread (zombies included) as the kernel lists them: what the
/// tests of a benchmark with children check it left.
#[cfg(test)]
pub(crate) fn my_children() -> Vec<Pid> {
    std::fs::read_to_string("/proc/thread-self/children")
        .unwrap()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_partner_is_reaped_after_the_clock_stopped_not_in_the_timed_loop() {
        // The paper's pipediscard, pipeback and csw never waited for their child: time stopped
        // when the writer exited. So run() (timed) ends with the writer's loop and leaves the
        // child to reap_unwaited() (untimed), whose usage is the child's.
        // (csw's signals go to the process, which in a test binary has other threads: its
        // reaping is the same `reap`, checked through workers in tests/it/work.rs.)
        for id in [
            "pipediscard512",
            "pipediscard4.4k",
            "pipeback4",
            "udgdiscard4",
        ] {
            let spec = crate::bench::find(id).unwrap();
            let mut b = (spec.make)();
            let n = 5_000;
            b.setup(&Ctx::default(), n).unwrap();
            let before = my_children();
            assert_eq!(before.len(), 1, "{id}: one child after setup: {before:?}");
            b.run(n).unwrap();
            assert_eq!(my_children(), before, "{id}: run() reaped the child");
            let usage = b.reap_unwaited().unwrap();
            assert!(my_children().is_empty(), "{id}: not reaped after the clock");
            // It did its reading: at least a page of faults or some CPU time over its life.
            assert!(usage.minflt + usage.cpu_ns() > 0, "{id}: {usage:?}");
            b.teardown().unwrap();
        }
        // A one-process test has no child to reap.
        let mut b = (crate::bench::find("pipeself4").unwrap().make)();
        b.setup(&Ctx::default(), 10).unwrap();
        b.run(10).unwrap();
        assert_eq!(b.reap_unwaited().unwrap(), crate::model::Usage::default());
    }

    #[test]
    fn the_4k_variants_say_whose_buffering_4_kib_was() {
        // §4.1.7: 4.3BSD raised pipes' buffering to 4096 bytes; §3.2.1: 4.2BSD's was less.
        for id in ["pipediscard4.4k", "pipediscard512.4k"] {
            let s = crate::bench::find(id).unwrap();
            assert!(s.paper.contains("4.3BSD's 4 KiB"), "{id}: {}", s.paper);
            assert!(
                s.today.contains("§4.1.7") && s.today.contains("§3.2.1"),
                "{id}"
            );
            assert!(!s.paper.contains("4.2BSD's 4 KiB"), "{id}");
        }
    }
}
