//! `forks*` and `vforks*`: process creation without exec (Appendix A, "forks"; the vforks
//! programs are the same with vfork).
//!
//! The heap grows with sbrk(size) and gets a byte stored every 1024 bytes, as the paper's
//! program does, so fork has that much more to copy (page tables, copy-on-write marks). Each
//! operation is fork (or vfork), the child's _exit, and the parent's wait for that child.
//!
//! Both fork from a process of the paper's size: the appendix's `forks` program itself, and
//! its `vforks` made "by substituting calls to fork with calls to vfork", a few KiB of
//! freestanding C started in setup (see `forker`), which does the sbrk and the loop and reports
//! its own and its children's usage. vfork copies nothing of the parent (it borrows the address
//! space), so vforks0, vforks1k and vforks100k should cost the same.

use super::forker::Forker;
use super::{Benchmark, Charge, Chart, Ctx, Group, Helper, Shape, Spec};
use crate::error::BenchError;

/// The chart this family's tests are drawn on.
pub static CHART: Chart = Chart {
    name: "fork",
    title: "fork and vfork",
    about: Some("fork and vfork"),
};

macro_rules! fork_spec {
    ($id:literal, $paper:literal, $today:literal, $vfork:expr, $brk:literal) => {
        Spec {
            id: $id,
            label: $id,
            group: Group::Kernel,
            chart: &CHART,
            paper: $paper,
            today: $today,
            paper_count: 1_000,
            unit: "fork",
            ops_per_iteration: 1,
            shape: Shape::Single,
            charge: Charge::Waited,
            make: || {
                Box::new(Forks {
                    vfork: $vfork,
                    brk: $brk,
                    forker: None,
                })
            },
        }
    };
}

pub static SPECS: &[Spec] = &[
    fork_spec!(
        "forks0",
        "fork-exit-wait 1,000 times",
        "the appendix's forks program (a few KiB of C, run by sysperf): fork(), child \
         _exit(255), wait()",
        false,
        0
    ),
    fork_spec!(
        "forks1k",
        "sbrk(1024), fault page, fork-exit-wait 1,000 times",
        "the forks program: sbrk(1024) touched every 1 KiB, then fork(), _exit, wait()",
        false,
        1024
    ),
    fork_spec!(
        "forks100k",
        "sbrk(102400), fault pages, fork-exit-wait 1,000 times",
        "the forks program: sbrk(102400) touched every 1 KiB, then fork(), _exit, wait()",
        false,
        102_400
    ),
    fork_spec!(
        "vforks0",
        "vfork-exit-wait 1,000 times",
        "the appendix's vforks (the forks program with vfork: clone(CLONE_VM|CLONE_VFORK)), \
         child _exit(255), wait()",
        true,
        0
    ),
    fork_spec!(
        "vforks1k",
        "sbrk(1024), fault page, vfork-exit-wait 1,000 times",
        "the vforks program: sbrk(1024) touched every 1 KiB, then vfork, _exit, wait()",
        true,
        1024
    ),
    fork_spec!(
        "vforks100k",
        "sbrk(102400), fault pages, vfork-exit-wait 1,000 times",
        "the vforks program: sbrk(102400) touched every 1 KiB, then vfork, _exit, wait()",
        true,
        102_400
    ),
];

pub(crate) struct Forks {
    vfork: bool,
    brk: usize,
    /// The paper's forks (or vforks) program.
    forker: Option<Forker>,
}

impl Forks {
    /// The forks (or vforks) program with `brk` bytes sbrk'd: the feder suite's fork/exit.
    pub(crate) fn new(vfork: bool, brk: usize) -> Forks {
        Forks {
            vfork,
            brk,
            forker: None,
        }
    }
}

impl Benchmark for Forks {
    fn setup(&mut self, ctx: &Ctx, iterations: u64) -> Result<(), BenchError> {
        // "forks 1000 0" as the run script called it; the program grows its own heap.
        let argv = [
            if self.vfork { "vforks" } else { "forks" }.to_string(),
            iterations.to_string(),
            self.brk.to_string(),
        ];
        let env: Vec<String> = super::exec::BASE_ENV
            .iter()
            .map(|s| s.to_string())
            .collect();
        self.forker = Some(Forker::start(ctx, &argv, &env, None)?);
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        match &mut self.forker {
            Some(f) => f.run(iterations),
            None => Err(BenchError::Protocol("fork: no setup".into())),
        }
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.forker = None;
        Ok(())
    }

    fn helper(&mut self) -> Option<Helper> {
        self.forker.as_mut().and_then(Forker::helper)
    }
}
