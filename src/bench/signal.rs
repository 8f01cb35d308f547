//! `csw` and `signocsw`: signals with and without a context switch (Appendix A).
//!
//! csw forks a child and the two bounce SIGALRM back and forth: each handler sends the signal
//! on to the other process and counts; each process waits in sigsuspend (today's sigpause).
//! One operation is a round trip (two signals, two context switches on one CPU), and the
//! paper's 10,000 round trips force 2 x 10,000 switches. signocsw sends SIGALRM to itself with
//! kill(), so the handler runs without a switch. The paper estimates the context switch as
//! csw - 2 x signocsw; see `derived`.
//!
//! As the paper's `sigsub`, each handler first re-installs itself (`signal(SIGALRM, sigsub)`
//! there, sigaction here: one rt_sigaction per signal, which the paper's figures include,
//! though a sigaction handler would stay installed without it).

use super::{Benchmark, Charge, Ctx, Group, Shape, Spec};
use crate::error::BenchError;
use crate::sys::{self, Fork, Pid};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};

pub static SPECS: &[Spec] = &[
    Spec {
        id: "csw",
        label: "csw",
        group: Group::Kernel,
        chart: &super::syscall::CHART,
        paper: "perform 10,000 context switches using signals",
        today: "SIGALRM ping-pong between parent and child, each waiting in sigsuspend (for sigpause), the handler re-installing itself as sigsub did; one op = a round trip",
        paper_count: 10_000,
        unit: "round trip",
        ops_per_iteration: 1,
        shape: Shape::Pair,
        charge: Charge::Own,
        make: || Box::new(Csw { child: None }),
    },
    Spec {
        id: "signocsw",
        label: "signocsw",
        group: Group::Kernel,
        chart: &super::syscall::CHART,
        paper: "send 10,000 signals to yourself",
        today: "kill(getpid(), SIGALRM); the handler re-installs itself with sigaction, as sigsub did with signal()",
        paper_count: 10_000,
        unit: "signal",
        ops_per_iteration: 1,
        shape: Shape::Single,
        charge: Charge::Own,
        make: || Box::new(SigNoCsw { pid: 0 }),
    },
];

/// The process the handler forwards the signal to.
static OTHER: AtomicI32 = AtomicI32::new(0);
/// Signals still to receive in this process.
static REMAINING: AtomicU64 = AtomicU64::new(0);
/// Handler invocations, to check that every signal was really delivered.
static HANDLED: AtomicU64 = AtomicU64::new(0);

extern "C" fn bounce(_sig: libc::c_int) {
    // Only async-signal-safe work: sigaction, kill and atomics. The paper's sigsub re-installs
    // itself first.
    let _ = sys::set_handler(libc::SIGALRM, bounce);
    let _ = sys::kill(OTHER.load(Ordering::Relaxed), libc::SIGALRM);
    HANDLED.fetch_add(1, Ordering::Relaxed);
    let left = REMAINING.load(Ordering::Relaxed);
    REMAINING.store(left.saturating_sub(1), Ordering::Relaxed);
}

extern "C" fn count_only(_sig: libc::c_int) {
    // As sigsub: re-install, and (here) count.
    let _ = sys::set_handler(libc::SIGALRM, count_only);
    HANDLED.fetch_add(1, Ordering::Relaxed);
}

struct Csw {
    child: Option<Pid>,
}

impl Benchmark for Csw {
    fn setup(&mut self, ctx: &Ctx, iterations: u64) -> Result<(), BenchError> {
        // Block SIGALRM outside sigsuspend so that a signal arriving early stays pending
        // instead of being lost between the check and the wait.
        let alrm = sys::sigset_of(libc::SIGALRM);
        sys::sigmask(true, &alrm).map_err(BenchError::sys("sigprocmask"))?;
        sys::set_handler(libc::SIGALRM, bounce).map_err(BenchError::sys("sigaction"))?;
        let parent = sys::getpid();
        match sys::fork().map_err(BenchError::sys("fork"))? {
            Fork::Child => {
                ctx.child_init();
                OTHER.store(parent, Ordering::Relaxed);
                REMAINING.store(iterations, Ordering::Relaxed);
                let open = sys::sigset_empty();
                while REMAINING.load(Ordering::Relaxed) > 0 {
                    sys::sigsuspend(&open);
                }
                sys::exit_now(0);
            }
            Fork::Parent(pid) => self.child = Some(pid),
        }
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let child = self
            .child
            .ok_or_else(|| BenchError::Protocol("csw: no child".into()))?;
        OTHER.store(child, Ordering::Relaxed);
        REMAINING.store(iterations, Ordering::Relaxed);
        HANDLED.store(0, Ordering::Relaxed);
        let open = sys::sigset_empty();
        sys::kill(child, libc::SIGALRM).map_err(BenchError::sys("kill"))?;
        while REMAINING.load(Ordering::Relaxed) > 0 {
            sys::sigsuspend(&open);
        }
        // The paper's csw never waited for its partner: both exit from sigsub, and time
        // charged the one it started (see `reap_unwaited`).
        let handled = HANDLED.load(Ordering::Relaxed);
        if handled != iterations {
            return Err(BenchError::Protocol(format!(
                "csw: {handled} signals handled for {iterations} round trips"
            )));
        }
        Ok(())
    }

    fn reap_unwaited(&mut self) -> Result<crate::model::Usage, BenchError> {
        match self.child.take() {
            Some(child) => {
                super::ipc::reap(child).map_err(|e| BenchError::Protocol(format!("csw: {e}")))
            }
            None => Ok(crate::model::Usage::default()),
        }
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        if let Some(pid) = self.child.take() {
            let _ = sys::kill(pid, libc::SIGKILL);
            let _ = sys::wait_child(pid);
        }
        sys::default_handler(libc::SIGALRM);
        Ok(())
    }
}

struct SigNoCsw {
    pid: Pid,
}

impl Benchmark for SigNoCsw {
    fn setup(&mut self, _ctx: &Ctx, _iterations: u64) -> Result<(), BenchError> {
        sys::set_handler(libc::SIGALRM, count_only).map_err(BenchError::sys("sigaction"))?;
        self.pid = sys::getpid();
        HANDLED.store(0, Ordering::Relaxed);
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        for _ in 0..iterations {
            sys::kill(self.pid, libc::SIGALRM).map_err(BenchError::sys("kill"))?;
        }
        // A signal to self is delivered before kill() returns; a shortfall means the benchmark
        // did not do what it claims.
        let handled = HANDLED.load(Ordering::Relaxed);
        if handled != iterations {
            return Err(BenchError::Protocol(format!(
                "signocsw: {handled} signals handled for {iterations} sent"
            )));
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        sys::default_handler(libc::SIGALRM);
        Ok(())
    }
}
