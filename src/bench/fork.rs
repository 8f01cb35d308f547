//! `forks*` and `vforks*`: process creation without exec (Appendix A, "forks"; the vforks
//! programs are the same with vfork).
//!
//! Setup grows the heap with sbrk(size) and stores a byte every 1024 bytes, as the paper's
//! program does, so fork has that much more to copy (page tables, copy-on-write marks). Each
//! operation is fork (or vfork), the child's _exit, and the parent's wait for that child.
//! vfork copies nothing, so vforks0, vforks1k and vforks100k should cost the same.

use super::{Benchmark, Ctx, Group, Shape, Spec};
use crate::error::BenchError;
use crate::sys::{self, ChildStack, Fork};

/// The paper's child exits with _exit(-1), i.e. status 255.
pub(crate) const CHILD_STATUS: i32 = 255;

macro_rules! fork_spec {
    ($id:literal, $paper:literal, $today:literal, $vfork:expr, $brk:literal) => {
        Spec {
            id: $id,
            label: $id,
            group: Group::Kernel,
            paper: $paper,
            today: $today,
            paper_count: 1_000,
            unit: "fork",
            ops_per_iteration: 1,
            shape: Shape::Single,
            make: || {
                Box::new(Forks {
                    vfork: $vfork,
                    brk: $brk,
                    stack: None,
                })
            },
        }
    };
}

pub static SPECS: &[Spec] = &[
    fork_spec!(
        "forks0",
        "fork-exit-wait 1,000 times",
        "fork(), child _exit(255), waitpid",
        false,
        0
    ),
    fork_spec!(
        "forks1k",
        "sbrk(1024), fault page, fork-exit-wait 1,000 times",
        "sbrk(1024) touched every 1 KiB, then fork(), _exit, waitpid",
        false,
        1024
    ),
    fork_spec!(
        "forks100k",
        "sbrk(102400), fault pages, fork-exit-wait 1,000 times",
        "sbrk(102400) touched every 1 KiB, then fork(), _exit, waitpid",
        false,
        102_400
    ),
    fork_spec!(
        "vforks0",
        "vfork-exit-wait 1,000 times",
        "vfork semantics via clone(CLONE_VM|CLONE_VFORK) as posix_spawn does, _exit, waitpid",
        true,
        0
    ),
    fork_spec!(
        "vforks1k",
        "sbrk(1024), fault page, vfork-exit-wait 1,000 times",
        "sbrk(1024) touched every 1 KiB, then clone(CLONE_VM|CLONE_VFORK), _exit, waitpid",
        true,
        1024
    ),
    fork_spec!(
        "vforks100k",
        "sbrk(102400), fault pages, vfork-exit-wait 1,000 times",
        "sbrk(102400) touched every 1 KiB, then clone(CLONE_VM|CLONE_VFORK), _exit, waitpid",
        true,
        102_400
    ),
];

pub(crate) struct Forks {
    vfork: bool,
    brk: usize,
    stack: Option<ChildStack>,
}

/// Checks a reaped child's exit code; shared with the exec family.
pub(crate) fn check_status(op: &str, code: i32, want: i32) -> Result<(), BenchError> {
    if code != want {
        return Err(BenchError::Protocol(format!(
            "{op}: child exited with {code}, expected {want}"
        )));
    }
    Ok(())
}

impl Benchmark for Forks {
    fn setup(&mut self, _ctx: &Ctx, _iterations: u64) -> Result<(), BenchError> {
        sys::sbrk_and_touch(self.brk, 1024).map_err(BenchError::sys("sbrk"))?;
        if self.vfork {
            self.stack = Some(ChildStack::new(16 * 1024));
        }
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        for _ in 0..iterations {
            let pid = match &mut self.stack {
                Some(stack) => sys::vfork_exit(stack, CHILD_STATUS as u8)
                    .map_err(BenchError::sys("clone(CLONE_VFORK)"))?,
                None => match sys::fork().map_err(BenchError::sys("fork"))? {
                    Fork::Child => sys::exit_now(CHILD_STATUS),
                    Fork::Parent(pid) => pid,
                },
            };
            let code = sys::wait_child(pid).map_err(BenchError::sys("waitpid"))?;
            check_status("fork", code, CHILD_STATUS)?;
        }
        Ok(())
    }
}
