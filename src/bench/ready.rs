//! A set of N descriptors of which exactly one (the last) is ready, asked with select, poll
//! or epoll_wait and a zero timeout, one call per operation: the `scaling` suite's
//! select/poll/epoll curves (`crate::suite::scaling_proc`) and LEBench's select/poll/epoll
//! rows (`le-select-N`, ...) are this one benchmark.
//!
//! The descriptors are eventfds (readable exactly when the counter is non-zero); the benchmark
//! fails if a call does not find exactly one ready.

use super::{Benchmark, Ctx};
use crate::error::BenchError;
use crate::sys::{self, Epoll, FdSet};
use std::os::fd::{AsRawFd, OwnedFd};

/// Descriptors the worker keeps besides the benchmark's (stdio, counters, the epoll itself).
const FD_RESERVE: u64 = 64;

/// How the descriptor set is asked which members are ready.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scan {
    Select,
    Poll,
    Epoll,
}

impl Scan {
    fn name(self) -> &'static str {
        match self {
            Scan::Select => "select",
            Scan::Poll => "poll",
            Scan::Epoll => "epoll_wait",
        }
    }
}

/// N descriptors, the last one ready, asked with one call per iteration.
pub struct ReadySet {
    scan: Scan,
    n: u64,
    pub(crate) fds: Vec<OwnedFd>,
    set: FdSet,
    pollfds: Vec<libc::pollfd>,
    epoll: Option<Epoll>,
    events: Vec<libc::epoll_event>,
}

impl ReadySet {
    pub fn new(scan: Scan, n: u64) -> ReadySet {
        ReadySet {
            scan,
            n,
            fds: Vec::new(),
            set: FdSet::new(),
            pollfds: Vec::new(),
            epoll: None,
            events: Vec::new(),
        }
    }

    /// A broken setup (nothing ready, or more than the one) fails the run.
    #[inline]
    fn check(&self, ready: usize) -> Result<(), BenchError> {
        if ready != 1 {
            return Err(BenchError::Protocol(format!(
                "{} over {} descriptors found {ready} ready, expected exactly 1",
                self.scan.name(),
                self.n
            )));
        }
        Ok(())
    }
}

impl Benchmark for ReadySet {
    fn setup(&mut self, _ctx: &Ctx, _iterations: u64) -> Result<(), BenchError> {
        if self.n == 0 {
            return Err(BenchError::Protocol(
                "a descriptor set needs at least one".into(),
            ));
        }
        let limit =
            sys::raise_nofile_limit().map_err(BenchError::sys("setrlimit(RLIMIT_NOFILE)"))?;
        if self.n + FD_RESERVE > limit {
            return Err(BenchError::Protocol(format!(
                "{} descriptors do not fit RLIMIT_NOFILE {limit} (hard limit)",
                self.n
            )));
        }
        for i in 0..self.n {
            // Only the last is ready: its counter starts at 1 and nothing reads it.
            let ready = u32::from(i + 1 == self.n);
            self.fds
                .push(sys::eventfd(ready).map_err(BenchError::sys("eventfd"))?);
        }
        match self.scan {
            Scan::Select => {
                for fd in &self.fds {
                    self.set
                        .insert(fd.as_raw_fd())
                        .map_err(BenchError::sys("FD_SET"))?;
                }
            }
            Scan::Poll => {
                self.pollfds = self
                    .fds
                    .iter()
                    .map(|fd| libc::pollfd {
                        fd: fd.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    })
                    .collect();
            }
            Scan::Epoll => {
                let ep = Epoll::new().map_err(BenchError::sys("epoll_create1"))?;
                for fd in &self.fds {
                    ep.add_readable(fd.as_raw_fd())
                        .map_err(BenchError::sys("epoll_ctl"))?;
                }
                self.epoll = Some(ep);
                // Room for more than one, so a second ready descriptor would be seen.
                self.events = vec![libc::epoll_event { events: 0, u64: 0 }; 8];
            }
        }
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        match self.scan {
            Scan::Select => {
                for _ in 0..iterations {
                    // select rewrites its set, so every call starts from a fresh copy, as
                    // every select loop does.
                    let mut set = self.set;
                    let ready =
                        sys::select_read_now(&mut set).map_err(BenchError::sys("select"))?;
                    self.check(ready)?;
                }
            }
            Scan::Poll => {
                for _ in 0..iterations {
                    let ready =
                        sys::poll_now(&mut self.pollfds).map_err(BenchError::sys("poll"))?;
                    self.check(ready)?;
                }
            }
            Scan::Epoll => {
                let ep = self
                    .epoll
                    .as_ref()
                    .ok_or_else(|| BenchError::Protocol("epoll: setup did not run".into()))?;
                for _ in 0..iterations {
                    let ready = ep
                        .wait_now(&mut self.events)
                        .map_err(BenchError::sys("epoll_wait"))?;
                    self.check(ready)?;
                }
            }
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.epoll = None;
        self.pollfds.clear();
        self.fds.clear();
        Ok(())
    }
}
