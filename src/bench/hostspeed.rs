//! `hostspeed`: the host's speed, measured in every round of a run beside the tests (#42).
//!
//! A shared host moves whole runs: in its noisy hours every test of a run is 12-22% slower
//! together, whatever it does. This test is a fixed piece of pure user-space work (no system
//! call, no allocation, no page fault once set up) run as one more trial of every round, so
//! that each run carries how fast the machine ran user code while its tests ran. `compare`
//! divides a test's ratio by this one's to give the speed-adjusted ratio beside the raw one.
//!
//! It is deliberately not a kernel operation: a kernel change that slows every system call
//! slows every test, and a reference made of system calls (or the tests' common shift) would
//! cancel exactly that change. A loop that never enters the kernel keeps it in the adjusted
//! ratio. What it cannot see: a change that slows user code too (a mitigation that flushes
//! state on every return to user space slows it a little), which is why the raw ratio stays
//! beside the adjusted one.
//!
//! The work: a dependent chain of multiply-xorshift steps, each reading and writing one word
//! of a 16 KiB table (within any L1 data cache), so that both the ALU and the load-store path
//! take part and the compiler can neither fold nor vectorise it. Not in any default
//! selection as a test: `run` adds it by itself (`--no-reference` leaves it out).

use super::{Benchmark, Charge, Chart, Ctx, Group, Shape, Spec};
use crate::error::BenchError;

/// The chart this family's one test is drawn on.
pub static CHART: Chart = Chart {
    name: "reference",
    title: "Host speed (user-space reference)",
    about: Some("the host-speed reference run beside the tests"),
};

/// Steps of the chain per operation: about a microsecond on a 2020s core.
pub const STEPS: u64 = 1024;
/// Words of the table (16 KiB).
const WORDS: usize = 2048;

pub static SPECS: &[Spec] = &[Spec {
    id: "hostspeed",
    label: "hostspeed",
    group: Group::Reference,
    chart: &CHART,
    paper: "(not in the papers) the host's speed: a fixed user-space loop in every round",
    today: "1024 dependent multiply-xorshift steps over a 16 KiB table per operation; never enters the kernel",
    paper_count: 1_000_000,
    unit: "loop",
    ops_per_iteration: 1,
    shape: Shape::Single,
    charge: Charge::Own,
    make: || Box::new(HostSpeed::default()),
}];

/// The id of the reference test.
pub const ID: &str = "hostspeed";

/// The reference's chain: also the fixed unit of user-space work of the `scaling` suite's
/// scheduler curves, which time it beside sleeping and runnable processes.
#[derive(Default)]
pub(crate) struct HostSpeed {
    table: Vec<u64>,
    state: u64,
}

impl HostSpeed {
    /// A chain ready to step: its table written, every word touched, so that stepping it
    /// takes no page fault.
    pub(crate) fn ready() -> HostSpeed {
        HostSpeed {
            table: (0..WORDS as u64)
                .map(|i| i.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1)
                .collect(),
            state: 0x1234_5678_9ABC_DEF1,
        }
    }

    /// Where the chain is: it moves with every step.
    #[cfg(test)]
    pub(crate) fn step_state(&self) -> u64 {
        self.state
    }

    /// One operation: [`STEPS`] steps of the chain; returns the state so that the work is
    /// observable (and cannot be removed).
    pub(crate) fn step(&mut self) -> u64 {
        let mut x = self.state;
        for _ in 0..STEPS {
            let i = (x as usize) & (WORDS - 1);
            x = (x ^ self.table[i]).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            x ^= x >> 29;
            self.table[i] = x;
        }
        self.state = x;
        x
    }
}

impl Benchmark for HostSpeed {
    fn setup(&mut self, _ctx: &Ctx, _iterations: u64) -> Result<(), BenchError> {
        *self = HostSpeed::ready();
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        for _ in 0..iterations {
            std::hint::black_box(self.step());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_does_its_work_in_user_space_without_faults_or_switches() {
        let mut b = HostSpeed::default();
        b.setup(&Ctx::default(), 0).unwrap();
        let before = b.state;
        // The thread's first calls grow its stack: not the loop's doing.
        b.run(100).unwrap();
        let u0 = crate::sys::usage_thread();
        b.run(20_000).unwrap();
        let u = crate::sys::usage_thread().since(&u0);
        // The work was done: the chain moved and the table was written.
        assert_ne!(b.state, before);
        assert!(b.table.iter().any(|&w| w & 1 == 0), "no word was rewritten");
        // ~20 million dependent steps: user time, no page fault (the table was touched in
        // setup, so none per operation), and no voluntary switch (no system call to wait in).
        assert!(u.user_ns > 0, "no user time was spent: {u:?}");
        // Strays aside (a NUMA hinting fault, a page the kernel reclaimed or compacted while
        // the test process's other threads work: 27 seen beside them), not one in a hundred
        // operations.
        assert!(
            u.minflt + u.majflt < 200,
            "the loop took page faults: {u:?}"
        );
        // No system call to wait in: a stray wait (the test process's other threads hold
        // its memory map's lock while a stray fault needs it) is not one in a hundred.
        assert!(u.nvcsw < 200, "the loop waited in the kernel: {u:?}");
    }

    #[test]
    fn the_chain_is_deterministic_so_every_run_does_the_same_work() {
        let (mut a, mut b) = (HostSpeed::default(), HostSpeed::default());
        a.setup(&Ctx::default(), 0).unwrap();
        b.setup(&Ctx::default(), 0).unwrap();
        a.run(10).unwrap();
        b.run(10).unwrap();
        assert_eq!(a.state, b.state);
        assert_eq!(a.table, b.table);
    }
}
