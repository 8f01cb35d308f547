//! `syscall`: the cost of entering and leaving the kernel (Appendix A, "syscall").
//!
//! Each operation is one real getpid system call made through syscall(2), because C
//! libraries have at times cached getpid's value and a cached call never enters the kernel.

use super::{Benchmark, Charge, Chart, Ctx, Group, Shape, Spec};
use crate::error::BenchError;
use crate::sys;

/// The chart this family's tests are drawn on.
pub static CHART: Chart = Chart {
    name: "syscall",
    title: "System call and signals",
    about: Some("system call and signals"),
};

pub static SPECS: &[Spec] = &[Spec {
    id: "syscall",
    label: "syscall",
    group: Group::Kernel,
    chart: &CHART,
    paper: "perform 100,000 getpid system calls",
    today: "getpid through syscall(SYS_getpid), never a cached library value",
    paper_count: 100_000,
    unit: "call",
    ops_per_iteration: 1,
    shape: Shape::Single,
    charge: Charge::Own,
    make: || Box::new(Syscall),
}];

struct Syscall;

impl Benchmark for Syscall {
    fn setup(&mut self, _ctx: &Ctx, _iterations: u64) -> Result<(), BenchError> {
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        for _ in 0..iterations {
            std::hint::black_box(sys::getpid_syscall());
        }
        Ok(())
    }
}
