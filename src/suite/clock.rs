//! The `clock` suite: the cost of clock processing today, the 4.2BSD paper's §3.2.3 (Leffler,
//! Karels and McKusick, *Measuring and Improving the Performance of Berkeley UNIX*, issue #45
//! item 7). The paper: "Nearly 25% of the time spent in the kernel is spent in the clock
//! processing routines." "In the worst case, with a clock rate of 100 Hz and with every
//! hardware interrupt scheduling a software interrupt, the processor must field 200
//! interrupts per second. The overhead of simply trapping and returning is 3% of the machine
//! cycles, figuring out that there is nothing to do requires an additional 2%."
//!
//! What is measured: how much of a CPU the timer interrupts take from a program that wants all
//! of it, against the timer load on that CPU. The test process (pinned to one CPU, as every
//! one-process test is unless `--placement free`) spins reading the monotonic clock; every
//! interval between two reads longer than [`DEFAULT_THRESHOLD_NS`] is time taken from it (an
//! interrupt, the work it raised, another task), every shorter one is its own. One operation
//! is one microsecond of its own time; the harness times how long a trial's operations take,
//! so a point's y is the wall time per microsecond of the spin's own: 1000 ns when nothing is
//! taken, 1000 / (1 - share) when a share is. x is the timer load the point sets up before the
//! clock starts: that many processes on the test's CPU, each reading a timerfd that expires
//! every millisecond (1 kHz, ten times the paper's clock), so that every expiry is a timer
//! interrupt on that CPU, a wakeup, and a switch to the process and back; at x = 0 the CPU
//! fields its own tick alone (CONFIG_HZ, recorded with the run and in its notes), the paper's
//! case.
//!
//! Why the operation reads a clock: the quantity is the time a CPU loses to interrupts, which
//! only shows as gaps in a thread's own progress, and a thread sees its progress only by
//! reading a clock (as `sysperf jitter`, whose spin this is: [`spin_on_clock`]). The reads
//! decide how much work an operation is (a microsecond of the spin's own time), never its
//! result: the harness's clock times the trial, and the interruptions lengthen it. Nothing
//! here prints.
//!
//! Every trial takes the /proc counters ([`Benchmark::counted`]): the interrupts the test's CPU
//! fielded during the timed region (/proc/interrupts, every source; `LOC`, the local timer,
//! is the tick and the timerfds' expiries on x86). The derived figures split what the spin
//! lost with its rusage (whose total is exact whatever the user/system split): its CPU time
//! beyond its own time is what its interrupts took while it held the CPU (the kernel charges
//! an interrupt to the task it interrupts, unless CONFIG_IRQ_TIME_ACCOUNTING keeps it apart,
//! which the run's notes say), and the wall time beyond its CPU time is other tasks' (the
//! timer processes woken, and on a busy machine any other). Per point: the interrupts per
//! second on the CPU (`interrupts-per-s`), the share of the wall time lost (`lost-pct`), the
//! share of the spin's CPU time its interrupts took (`interrupt-pct`), the share of the wall
//! time other tasks ran (`off-cpu-pct`) and the CPU time charged per interrupt
//! (`ns-per-interrupt`); at x = 0 beside the paper's 200 per second and 3% + 2%.
//!
//! What it does not give: the paper's 25% is a share of kernel time in a 17-hour profile of a
//! timesharing machine (its clock routines with everything they did: timeouts, scheduling,
//! statistics, draining the terminal silos); a spinning process has no kernel time to share,
//! so that figure is quoted, not reproduced. The lost time is all that is taken from the spin:
//! on a busy machine other tasks on its CPU count too (the trial's involuntary context
//! switches show them).
//!
//! The timer processes are forked in setup, each with its timerfd armed by the test process
//! on its CPU, and killed and reaped in teardown (an early death fails the trial); every one
//! dies with its parent.

use super::{Axis, Point, SeriesSpec, Suite};
use crate::bench::{Benchmark, Ctx, Shape};
use crate::error::BenchError;
use crate::model::{Derived, Series, TrialKind, YKind};
use crate::observe::jitter::{spin_on_clock, Until, DEFAULT_THRESHOLD_NS};
use crate::suite::bbn::{kill_and_reap, spawn};
use crate::sys::{self, Pid};
use std::os::fd::AsRawFd;

pub static SUITE: Suite = Suite {
    name: "clock",
    title: "Clock processing: the CPU share timer interrupts take, against the timer load",
    paper: "Leffler, Karels, McKusick, \"Measuring and Improving the Performance of Berkeley \
            UNIX\" (4.2BSD), §3.2.3 Clock processing",
    series,
    preflight,
    derive,
};

/// The period of every timer process's timerfd: 1 ms (1 kHz).
pub const TIMER_PERIOD_NS: u64 = 1_000_000;
/// The spin's own time one iteration of `run` asks for, and in how many operations (of one
/// microsecond each) it counts.
const ITERATION_NS: u64 = 1_000_000;
const OPS_PER_ITERATION: u64 = ITERATION_NS / 1_000;
/// The timer loads of the full sweep and of `--quick`.
pub const LOADS: &[u64] = &[0, 1, 4, 16, 64];
const QUICK_LOADS: &[u64] = &[0, 16];

/// The paper's clock overhead with nothing to do: "The overhead of simply trapping and
/// returning is 3% of the machine cycles, figuring out that there is nothing to do requires an
/// additional 2%."
pub const PAPER_TRAP_SHARE: f64 = 0.03;
pub const PAPER_NOTHING_TO_DO_SHARE: f64 = 0.02;
/// "with a clock rate of 100 Hz ... the processor must field 200 interrupts per second".
pub const PAPER_HZ: f64 = 100.0;
pub const PAPER_INTERRUPTS_PER_S: f64 = 200.0;

const QUOTE_RATE: &str = "the paper (§3.2.3): \"In the worst case, with a clock rate of 100 \
     Hz and with every hardware interrupt scheduling a software interrupt, the processor must \
     field 200 interrupts per second.\"";
const QUOTE_SHARE: &str = "the paper (§3.2.3): \"The overhead of simply trapping and returning \
     is 3% of the machine cycles, figuring out that there is nothing to do requires an \
     additional 2%.\"";
const QUOTE_KERNEL: &str = "the paper (§3.2.3): \"Nearly 25% of the time spent in the kernel \
     is spent in the clock processing routines.\" (a share of kernel time in its 17-hour \
     profile, which a spinning process cannot give)";

fn points(quick: bool) -> Vec<Point> {
    let loads = if quick { QUICK_LOADS } else { LOADS };
    loads
        .iter()
        .map(|&n| Point {
            ops_per_iteration: OPS_PER_ITERATION,
            ..Point::new(n as f64, n)
        })
        .collect()
}

/// The y of a spin that loses `share` of its CPU: wall ns per microsecond of its own time.
pub fn y_of_share(share: f64) -> f64 {
    1_000.0 / (1.0 - share)
}

/// The share of the CPU lost at y (wall ns per microsecond of the spin's own time).
pub fn share_of_y(y: f64) -> f64 {
    1.0 - 1_000.0 / y
}

static TIMERS: SeriesSpec = SeriesSpec {
    printed: None,
    id: "clock.timers",
    figure: "clock.timers",
    figure_title:
        "Clock processing: wall time per microsecond of a spinning CPU's own time, against \
         1 kHz timers on its CPU (1000 ns: nothing lost)",
    curve: "spin on the clock",
    paper: "§3.2.3 Clock processing: at 100 Hz, 200 interrupts per second; \"The overhead of \
            simply trapping and returning is 3% of the machine cycles, figuring out that there \
            is nothing to do requires an additional 2%\" (the paper's point: 5% lost at the \
            tick alone, 1000 / 0.95 ns per microsecond)",
    today: "the test process spins reading the monotonic clock on its CPU until it has had 1 ms \
            of its own time (intervals between reads up to 1 us) per iteration, beside x \
            processes on the same CPU each reading a timerfd that expires every 1 ms; y = wall \
            time per microsecond of the spin's own, and every trial counts the CPU's interrupts \
            (/proc/interrupts)",
    x: Axis {
        name: "timer processes at 1 kHz on the CPU",
        unit: "processes",
        log: false,
    },
    y: YKind::CostNs,
    unit: "us of spin",
    shape: Shape::Single,
    points,
    make: |n| Box::new(ClockSpin::new(n)),
    paper_points: &[[
        0.0,
        1_000.0 / (1.0 - PAPER_TRAP_SHARE - PAPER_NOTHING_TO_DO_SHARE),
    ]],
    paper_system: Some(
        "one of Berkeley's general timesharing VAXes under 4.2BSD, 100 Hz clock (§3.2's \
         17-hour kernel profile)",
    ),
};

fn series() -> Vec<&'static SeriesSpec> {
    vec![&TIMERS]
}

/// The clock the run's machine ticks at, its tick mode and clock source, beside the paper's.
fn preflight() -> Result<Vec<String>, String> {
    // A timerfd is all the load needs; without one (a seccomp filter) the suite cannot run.
    sys::timerfd_periodic(TIMER_PERIOD_NS)
        .map_err(|e| format!("cannot make a timerfd for the timer load: {e}"))?;
    let fp = crate::fingerprint::collect();
    let or_unknown = |v: Option<String>| v.unwrap_or_else(|| "unknown".into());
    Ok(vec![
        format!(
            "CONFIG_HZ {} (the paper's clock: {PAPER_HZ} Hz), tick mode {}, clock source {}",
            or_unknown(fp.hz.map(|h| h.to_string())),
            or_unknown(fp.nohz.clone()),
            or_unknown(fp.clocksource.clone())
        ),
        irq_note(fp.cpu_split.as_deref()),
        QUOTE_KERNEL.to_string(),
    ])
}

/// Whether the kernel charges an interrupt to the task it interrupts, which the derived
/// `interrupt-pct` and `ns-per-interrupt` rely on.
fn irq_note(cpu_split: Option<&str>) -> String {
    match cpu_split {
        Some(s) if s.contains("IRQ_TIME_ACCOUNTING") => {
            "interrupt time is kept apart from tasks here (CONFIG_IRQ_TIME_ACCOUNTING): the \
             spin is not charged for its interrupts, so the derived interrupt-pct and \
             ns-per-interrupt miss them and off-cpu-pct holds them"
                .into()
        }
        Some(s) if s.contains("CONFIG_") => "interrupts are charged to the task they interrupt (no \
                    CONFIG_IRQ_TIME_ACCOUNTING): the spin's CPU time beyond its own is its \
                    interrupts' (interrupt-pct, ns-per-interrupt)"
            .into(),
        _ => "how this kernel charges interrupt time is not known (no kernel configuration \
                 read, or none names it): interrupt-pct and ns-per-interrupt assume the interrupted task is \
                 charged"
            .into(),
    }
}

/// One point: a spin on the clock beside `timers` timer processes on its CPU.
pub struct ClockSpin {
    timers: u64,
    children: Vec<Pid>,
}

impl ClockSpin {
    pub fn new(timers: u64) -> ClockSpin {
        ClockSpin {
            timers,
            children: Vec::new(),
        }
    }

    /// The timer processes alive now (their pids), for tests.
    pub fn children(&self) -> &[Pid] {
        &self.children
    }
}

impl Benchmark for ClockSpin {
    fn setup(&mut self, ctx: &Ctx, _iterations: u64) -> Result<(), BenchError> {
        for _ in 0..self.timers {
            // Armed here, on the test process's CPU, which each child inherits, so the timer
            // fires there; a failure is the trial's, not a child's silent exit.
            let timer = sys::timerfd_periodic(TIMER_PERIOD_NS)
                .map_err(BenchError::sys("timerfd_create/timerfd_settime"))?;
            let pid = spawn(ctx, "sysperf:timer", None, || {
                let mut count = [0u8; 8];
                loop {
                    if sys::read(timer.as_raw_fd(), &mut count).is_err() {
                        return 1;
                    }
                }
            })?;
            self.children.push(pid);
            // The parent's copy closes here; the next child does not inherit it.
            drop(timer);
        }
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let spun = spin_on_clock(
            Until::Progress(iterations * ITERATION_NS),
            DEFAULT_THRESHOLD_NS,
            0,
        );
        std::hint::black_box(spun);
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        // A timer process that died during the trial left its point with less load than x.
        let died = self
            .children
            .iter()
            .filter(|&&pid| sys::wait4(pid, true).is_ok_and(|(got, _, _)| got == pid))
            .count();
        kill_and_reap(&mut self.children);
        if died > 0 {
            return Err(BenchError::Protocol(format!(
                "{died} of {} timer processes exited during the trial",
                self.timers
            )));
        }
        Ok(())
    }

    fn counted(&self) -> bool {
        true
    }
}

impl Drop for ClockSpin {
    fn drop(&mut self) {
        kill_and_reap(&mut self.children);
    }
}

/// What a point's counted trials add up to: interrupts on the test's CPU, `LOC` interrupts on
/// every CPU, wall time, the spin's CPU time, and the part of its CPU time beyond its own.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Sums {
    trials: usize,
    interrupts: f64,
    loc_all_cpus: f64,
    wall_ns: f64,
    cpu_ns: f64,
    /// CPU time charged to the spin beyond its own time: the interrupts it fielded (and what
    /// they raised) while it held the CPU, which the kernel charges to the task it interrupts
    /// unless CONFIG_IRQ_TIME_ACCOUNTING keeps them apart.
    charged_lost_ns: f64,
}

impl Sums {
    /// Wall time the spin was not on its CPU: other tasks ran there (the timer processes,
    /// and any other).
    fn off_cpu_ns(&self) -> f64 {
        (self.wall_ns - self.cpu_ns).max(0.0)
    }
}

fn sums(p: &crate::model::SeriesPoint) -> Sums {
    let mut s = Sums::default();
    for t in p
        .result
        .trials
        .iter()
        .filter(|t| t.kind == TrialKind::Measured && t.error.is_none() && t.iterations > 0)
    {
        let Some(c) = &t.counters else {
            continue;
        };
        let Some(intr) = c.interrupts_on_trial_cpus else {
            continue;
        };
        let own = (t.iterations * ITERATION_NS) as f64;
        let cpu = t.usage.cpu_ns() as f64;
        s.trials += 1;
        s.interrupts += intr as f64;
        s.loc_all_cpus += c.interrupts_by_source.get("LOC").copied().unwrap_or(0) as f64;
        s.wall_ns += t.wall_ns as f64;
        s.cpu_ns += cpu;
        s.charged_lost_ns += (cpu - own).max(0.0);
    }
    s
}

/// Per point: the interrupts per second the test's CPU fielded; the share of the CPU the spin
/// lost, split into the share of its own CPU time its interrupts took and the share of the
/// wall time other tasks ran; and the time charged per interrupt; at x = 0 with the paper's
/// figures beside.
fn derive(series: &[Series]) -> Vec<Derived> {
    let mut out = Vec::new();
    for s in series.iter().filter(|s| s.id == TIMERS.id) {
        for p in &s.points {
            let x = super::fmt_x(p.x);
            let idle = p.x == 0.0;
            let sum = sums(p);
            let mut put =
                |name: &str, value: f64, unit: &str, formula: String, na: Option<String>| {
                    out.push(Derived {
                        na,
                        name: format!("{}.{name}@{x}", s.id),
                        value,
                        unit: unit.into(),
                        formula,
                    })
                };
            if let Some(y) = &p.y {
                let share = share_of_y(y.median);
                put(
                    "lost-pct",
                    100.0 * share,
                    "% of the wall time",
                    format!(
                        "100 x (1 - 1000 / {:.1} ns per microsecond of the spin's own time): \
                         everything taken from it, interrupts and other tasks",
                        y.median
                    ),
                    (share < 0.0).then(|| {
                        "the spin took less wall time than its own: a clock quirk".to_string()
                    }),
                );
            }
            if sum.trials == 0 {
                put(
                    "interrupts-per-s",
                    0.0,
                    "interrupts/s on the test's CPU",
                    "/proc/interrupts on the test's CPU / wall time".into(),
                    Some(
                        "no counted trial has the test CPU's interrupts: the trials were not \
                         pinned (--placement free) or did not complete"
                            .into(),
                    ),
                );
                continue;
            }
            let expiries = if idle {
                format!("; {QUOTE_RATE}")
            } else {
                format!(
                    "; {x} timer processes at 1 kHz ask for {:.0} expiries/s",
                    p.x * 1e9 / TIMER_PERIOD_NS as f64
                )
            };
            put(
                "interrupts-per-s",
                sum.interrupts * 1e9 / sum.wall_ns.max(1.0),
                "interrupts/s on the test's CPU",
                format!(
                    "/proc/interrupts, every source, on the test's CPU / wall time, {} counted \
                     trials: {:.0} in {:.3} s (LOC, the local timer, on all CPUs: \
                     {:.0}/s){expiries}",
                    sum.trials,
                    sum.interrupts,
                    sum.wall_ns / 1e9,
                    sum.loc_all_cpus * 1e9 / sum.wall_ns.max(1.0),
                ),
                None,
            );
            let beside_share = if idle {
                format!(
                    "; {QUOTE_SHARE} ({:.0}% in all at the tick alone)",
                    100.0 * (PAPER_TRAP_SHARE + PAPER_NOTHING_TO_DO_SHARE)
                )
            } else {
                String::new()
            };
            put(
                "interrupt-pct",
                100.0 * sum.charged_lost_ns / sum.cpu_ns.max(1.0),
                "% of the spin's CPU time",
                format!(
                    "100 x (the spin's CPU time - its own time) / its CPU time = {:.3} ms / \
                     {:.3} ms: the cycles its interrupts (and the softirqs and switches they \
                     brought) took while it held the CPU, as the kernel charges them to the \
                     task they interrupt{beside_share}",
                    sum.charged_lost_ns / 1e6,
                    sum.cpu_ns / 1e6,
                ),
                (sum.cpu_ns <= 0.0).then(|| "the spin was charged no CPU time".into()),
            );
            put(
                "off-cpu-pct",
                100.0 * sum.off_cpu_ns() / sum.wall_ns.max(1.0),
                "% of the wall time",
                format!(
                    "100 x (wall time - the spin's CPU time) / wall time = {:.3} ms / {:.3} ms: \
                     other tasks on its CPU (the timer processes woken, and on a busy machine \
                     any other)",
                    sum.off_cpu_ns() / 1e6,
                    sum.wall_ns / 1e6
                ),
                None,
            );
            let beside_cost = if idle {
                format!(
                    "; the paper's 3% at 200 per second is {:.0} us per interrupt on its VAX",
                    PAPER_TRAP_SHARE * 1e6 / PAPER_INTERRUPTS_PER_S
                )
            } else {
                String::new()
            };
            put(
                "ns-per-interrupt",
                sum.charged_lost_ns / sum.interrupts.max(1.0),
                "ns charged per interrupt",
                format!(
                    "(the spin's CPU time - its own time) / interrupts on its CPU = {:.3} ms / \
                     {:.0}{beside_cost}",
                    sum.charged_lost_ns / 1e6,
                    sum.interrupts,
                ),
                (sum.interrupts == 0.0 || sum.charged_lost_ns <= 0.0).then(|| {
                    "no interrupt on the test's CPU, or no CPU time charged beyond the spin's \
                     own: nothing to divide"
                        .into()
                }),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::counters::parse_interrupts;
    use crate::model::{BenchResult, Counters, Estimate, SeriesPoint, Trial, Usage};

    /// Interrupts on `cpu` since boot, every source.
    fn interrupts_on(cpu: u32) -> u64 {
        let text = crate::procfs::read_interrupts().unwrap();
        parse_interrupts(&text)
            .values()
            .filter_map(|c| c.get(&cpu))
            .sum()
    }

    /// Runs the benchmark with `timers` on this thread's CPU for `ms` of spin; returns the
    /// interrupts that CPU fielded meanwhile.
    fn spun_interrupts(cpu: u32, timers: u64, ms: u64) -> u64 {
        let mut b = ClockSpin::new(timers);
        b.setup(&Ctx::default(), ms).unwrap();
        assert_eq!(b.children().len() as u64, timers);
        let pids = b.children().to_vec();
        let before = interrupts_on(cpu);
        b.run(ms).unwrap();
        let after = interrupts_on(cpu);
        b.teardown().unwrap();
        for pid in pids {
            // Killed and reaped: the pid is no longer ours to signal.
            assert!(sys::kill(pid, 0).is_err(), "timer process {pid} left");
        }
        assert!(b.children().is_empty());
        after - before
    }

    /// The timer load really loads the test's CPU: 16 timers at 1 kHz add thousands of
    /// interrupts per second to the tick, and teardown leaves none of them.
    #[test]
    fn timers_raise_the_cpus_interrupts_and_teardown_leaves_none() {
        let cpu = *sys::get_affinity().unwrap().last().unwrap();
        sys::set_affinity(&[cpu]).unwrap();
        let ms = 300;
        let idle = spun_interrupts(cpu, 0, ms);
        let loaded = spun_interrupts(cpu, 16, ms);
        // 16 timers for at least 0.3 s: 4800 expiries; ask for half, above the tick alone.
        assert!(
            loaded > idle + 16 * ms / 2,
            "16 timers: {loaded} interrupts, the tick alone: {idle}"
        );
    }

    #[test]
    fn a_spin_ends_after_its_own_time_and_accounts_every_gap() {
        let s = spin_on_clock(Until::Progress(2_000_000), DEFAULT_THRESHOLD_NS, 8);
        let own = s.spin_ns - s.stolen_ns;
        assert!(
            (2_000_000..2_000_000 + DEFAULT_THRESHOLD_NS).contains(&own),
            "{s:?}"
        );
        assert!(s.kept.len() as u64 == s.gaps.min(8) && s.max_gap_ns <= s.stolen_ns);
    }

    #[test]
    fn share_and_y_are_inverse_and_the_papers_point_is_5_percent() {
        assert!((share_of_y(y_of_share(0.05)) - 0.05).abs() < 1e-12);
        assert!((TIMERS.paper_points[0][1] - 1052.63).abs() < 0.01);
        assert_eq!(share_of_y(1000.0), 0.0);
    }

    fn trial(iterations: u64, wall_ns: u64, cpu_ns: u64, intr: Option<u64>) -> Trial {
        Trial {
            usage: Usage {
                user_ns: cpu_ns,
                ..Usage::default()
            },
            counters: Some(Counters {
                interrupts_on_trial_cpus: intr,
                interrupts_by_source: [("LOC".to_string(), 600)].into(),
                ..Counters::default()
            }),
            ..Trial::measured(iterations, wall_ns)
        }
    }

    fn point(x: f64, trials: Vec<Trial>, y: f64) -> SeriesPoint {
        SeriesPoint {
            x,
            label: None,
            bytes_per_op: 0.0,
            y: Some(Estimate::single(y, 1.0, 1)),
            result: BenchResult {
                id: format!("clock.timers@{x}"),
                group: "clock".into(),
                ops_per_iteration: OPS_PER_ITERATION,
                paper_count: 1,
                unit: "us of spin".into(),
                placement: "single".into(),
                cpus: vec![1],
                trials,
                summary: None,
                error: None,
            },
        }
    }

    #[test]
    fn derive_gives_rate_shares_and_cost_per_interrupt_beside_the_paper() {
        let mut s = super::super::series_from(&TIMERS, Vec::new(), None);
        // Two trials of 1000 iterations (1 s of the spin's own time) in 1.10 s each, 1.03 s
        // of them on the CPU, 250 interrupts each: 250/1.1 per second, 3/103 of the CPU time
        // charged to interrupts (120 us each), 0.07 of the wall time off the CPU.
        s.points.push(point(
            0.0,
            vec![
                trial(1000, 1_100_000_000, 1_030_000_000, Some(250)),
                trial(1000, 1_100_000_000, 1_030_000_000, Some(250)),
            ],
            1100.0,
        ));
        s.points.push(point(
            16.0,
            vec![trial(1000, 1_100_000_000, 1_030_000_000, None)],
            1100.0,
        ));
        let d = derive(&[s]);
        let get = |n: &str| {
            d.iter()
                .find(|f| f.name == n)
                .unwrap_or_else(|| panic!("{n}: {d:?}"))
        };
        // Each figure at x = 0: its value, and what its formula must quote or show.
        let want: [(&str, f64, &str); 5] = [
            ("interrupts-per-s", 250.0 / 1.1, "200 interrupts per second"),
            ("lost-pct", 100.0 * (1.0 - 1000.0 / 1100.0), "1100.0 ns"),
            ("interrupt-pct", 300.0 / 103.0, "3% of the machine cycles"),
            ("off-cpu-pct", 100.0 * 0.07 / 1.1, "140.000 ms / 2200"),
            ("ns-per-interrupt", 120_000.0, "150 us"),
        ];
        for (name, value, quote) in want {
            let f = get(&format!("clock.timers.{name}@0"));
            assert!((f.value - value).abs() < 1e-6 * value, "{f:?}");
            assert!(f.na.is_none() && f.formula.contains(quote), "{f:?}");
        }
        // Unpinned trials have no per-CPU count: n/a, and nothing derived from it.
        assert!(get("clock.timers.interrupts-per-s@16").na.is_some());
        assert!(!d
            .iter()
            .any(|f| f.name == "clock.timers.ns-per-interrupt@16"));
    }
}
