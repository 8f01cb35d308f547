//! `sysperf jitter`: clock and OS noise in the manner of osnoise and sysjitter (the papers'
//! §3.2.3 clock processing and §4.1.5 clock handling, issue #19).
//!
//! One thread per chosen CPU, pinned to it, spins reading the monotonic clock for a fixed
//! time and records every gap between two consecutive reads longer than a threshold: time
//! the CPU was taken from the thread (an interrupt, a softirq, the timer tick, another task,
//! the hypervisor). Per CPU it reports the stolen time per second of spinning, the gap
//! histogram, the largest gap, and what /proc/interrupts and /proc/softirqs counted on that
//! CPU meanwhile (the local timer interrupt `LOC` is the tick), so that gaps can be set
//! against interrupts, softirqs and ticks; the hypervisor's steal ticks from /proc/stat too.
//!
//! This is the one place outside the harness that reads a clock in a loop, on purpose: here
//! the clock reads are the measurement (a gap between two reads is the noise), not the timing
//! of an operation, so it is an observation of the machine (like `watch`), not a benchmark,
//! and it is not stored with runs. It is a command rather than a benchmark because the
//! harness times a hot loop from outside, and a spin of fixed length has nothing to time. It
//! keeps every CPU it spins on busy for the whole time: do not run it beside measurements.
//! The `clock` suite's benchmark spins here too ([`spin_on_clock`] until a fixed amount of
//! the spin's own time), and the harness times it: a spin of fixed work lengthens with what
//! is taken from it (see `suite::clock` for why that is its operation).

use crate::harness::counters::parse_interrupts;
use crate::procfs;
use crate::sys;
use serde::Serialize;
use std::collections::BTreeMap;

/// Lower bounds of the histogram's buckets in nanoseconds; the last is open-ended.
pub const BUCKETS_NS: &[u64] = &[
    0, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000,
];
/// Gaps kept per CPU; beyond this only the totals count (a gap every microsecond for a
/// second is a million).
const MAX_GAPS: usize = 1 << 20;

/// One bucket of gaps: from `from_ns` (inclusive) to `to_ns` (exclusive; None: no bound).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bucket {
    pub from_ns: u64,
    pub to_ns: Option<u64>,
    pub count: u64,
}

/// What one CPU's spin saw.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpuNoise {
    pub cpu: u32,
    /// Nanoseconds the spin lasted, by its own clock.
    pub spin_ns: u64,
    /// Clock reads in the spin.
    pub reads: u64,
    /// Gaps longer than the threshold, and their sum.
    pub gaps: u64,
    pub stolen_ns: u64,
    /// `stolen_ns` per second of spin, in microseconds.
    pub stolen_us_per_s: f64,
    pub max_gap_ns: u64,
    pub histogram: Vec<Bucket>,
    /// Timer ticks on this CPU (/proc/interrupts `LOC`, the local timer interrupt).
    pub ticks: u64,
    /// Non-zero deltas of /proc/interrupts and /proc/softirqs on this CPU, by source.
    pub interrupts: BTreeMap<String, u64>,
    pub softirqs: BTreeMap<String, u64>,
    /// Hypervisor steal on this CPU (/proc/stat), in clock ticks (USER_HZ).
    pub steal_ticks: u64,
    /// Times another task took the CPU from the spinning thread (its involuntary context
    /// switches, getrusage RUSAGE_THREAD).
    pub preemptions: u64,
    /// Nanoseconds of the spin the thread was not on the CPU at all (the spin's length less
    /// its own user and system time): other tasks ran, or the hypervisor did.
    pub off_cpu_ns: u64,
}

/// The whole measurement.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NoiseReport {
    pub seconds: f64,
    pub threshold_ns: u64,
    pub cpus: Vec<CpuNoise>,
    /// What each numbered interrupt that fired is (/proc/interrupts' last columns: the
    /// device or driver, e.g. "virtio1-req.0"), by its number.
    pub irq_names: BTreeMap<String, String>,
}

/// The device or driver behind each numbered interrupt line of /proc/interrupts: the fields
/// after the per-CPU counts are the chip, the hardware IRQ and its trigger, then the names.
pub fn irq_names(text: &str) -> BTreeMap<String, String> {
    let mut lines = text.lines();
    let ncpus = lines
        .next()
        .unwrap_or("")
        .split_ascii_whitespace()
        .filter(|c| c.starts_with("CPU"))
        .count();
    let mut out = BTreeMap::new();
    for line in lines {
        let Some((irq, rest)) = line.split_once(':') else {
            continue;
        };
        let irq = irq.trim();
        if irq.is_empty() || !irq.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let tail: Vec<&str> = rest.split_ascii_whitespace().skip(ncpus).collect();
        // The names follow the trigger field ("1-edge", "16-fasteoi"; older kernels:
        // "IO-APIC-edge"), and may be several, comma-separated.
        const TRIGGERS: [&str; 6] = ["edge", "level", "fasteoi", "eoi", "simple", "percpu"];
        let trigger = tail.iter().position(|f| {
            f.rsplit_once('-')
                .is_some_and(|(_, t)| TRIGGERS.contains(&t))
        });
        let name = match (trigger, tail.last()) {
            (_, None) => continue,
            (Some(i), _) if i + 1 < tail.len() => tail[i + 1..].join(" "),
            (_, Some(last)) => last.to_string(),
        };
        out.insert(irq.to_string(), name);
    }
    out
}

/// The histogram of `gaps` over [`BUCKETS_NS`].
pub fn histogram(gaps: &[u64]) -> Vec<Bucket> {
    let mut out: Vec<Bucket> = BUCKETS_NS
        .iter()
        .enumerate()
        .map(|(i, &from)| Bucket {
            from_ns: from,
            to_ns: BUCKETS_NS.get(i + 1).copied(),
            count: 0,
        })
        .collect();
    for &g in gaps {
        let i = BUCKETS_NS.iter().rposition(|&b| g >= b).unwrap_or(0);
        out[i].count += 1;
    }
    out
}

/// Per-source deltas of a parsed /proc/interrupts or /proc/softirqs on one CPU, non-zero only.
pub fn cpu_deltas(
    before: &BTreeMap<String, BTreeMap<u32, u64>>,
    after: &BTreeMap<String, BTreeMap<u32, u64>>,
    cpu: u32,
) -> BTreeMap<String, u64> {
    after
        .iter()
        .filter_map(|(name, counts)| {
            let a = counts.get(&cpu).copied().unwrap_or(0);
            let b = before
                .get(name)
                .and_then(|c| c.get(&cpu))
                .copied()
                .unwrap_or(0);
            let d = a.saturating_sub(b);
            (d > 0).then(|| (name.clone(), d))
        })
        .collect()
}

/// Gaps between two clock reads longer than this count as time taken from a spin: the
/// default of `sysperf jitter --threshold-ns`, and the `clock` suite's. A read of the
/// monotonic clock through the vDSO takes tens of nanoseconds; an interrupt, even one that
/// finds nothing to do, takes a microsecond or more.
pub const DEFAULT_THRESHOLD_NS: u64 = 1_000;

/// When a spin on the clock ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    /// When this many nanoseconds have passed on the clock, gaps included (`sysperf jitter`:
    /// a spin of fixed length).
    Elapsed(u64),
    /// When the spin has had this many nanoseconds of its own, the intervals between reads up
    /// to the threshold, gaps excluded (the `clock` suite: a fixed amount of the spin's work,
    /// which takes the longer the more is taken from it).
    Progress(u64),
}

/// What a spin on the clock saw.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Spin {
    /// Nanoseconds from the first read to the last.
    pub spin_ns: u64,
    /// Clock reads.
    pub reads: u64,
    /// Intervals longer than the threshold, their sum and the largest.
    pub gaps: u64,
    pub stolen_ns: u64,
    pub max_gap_ns: u64,
    /// The first gaps' lengths, as many as the caller asked to keep.
    pub kept: Vec<u64>,
}

/// Reads the monotonic clock in a loop on the calling thread until `until`, counting each
/// interval between two reads longer than `threshold_ns` as a gap (time taken from the
/// thread) and keeping the lengths of the first `keep`. The one clock spin of sysperf: `sysperf
/// jitter` and the `clock` suite's benchmark both spin here.
pub fn spin_on_clock(until: Until, threshold_ns: u64, keep: usize) -> Spin {
    let mut s = Spin {
        kept: Vec::with_capacity(keep.min(4096)),
        ..Spin::default()
    };
    let start = sys::monotonic_ns();
    let mut last = start;
    let mut own = 0u64;
    loop {
        let now = sys::monotonic_ns();
        s.reads += 1;
        let gap = now - last;
        last = now;
        if gap > threshold_ns {
            s.gaps += 1;
            s.stolen_ns += gap;
            s.max_gap_ns = s.max_gap_ns.max(gap);
            if s.kept.len() < keep {
                s.kept.push(gap);
            }
        } else {
            own += gap;
        }
        let done = match until {
            Until::Elapsed(ns) => now - start >= ns,
            Until::Progress(ns) => own >= ns,
        };
        if done {
            s.spin_ns = now - start;
            return s;
        }
    }
}

/// The spin of one CPU, with the thread's own usage meanwhile.
fn spin(cpu: u32, seconds: f64, threshold_ns: u64) -> std::io::Result<(Spin, crate::model::Usage)> {
    sys::set_affinity(&[cpu])?;
    let used = sys::usage_thread();
    let spun = spin_on_clock(
        Until::Elapsed((seconds * 1e9) as u64),
        threshold_ns,
        MAX_GAPS,
    );
    Ok((spun, sys::usage_thread().since(&used)))
}

/// Spins `seconds` on each of `cpus` at once and attributes what it saw.
pub fn measure(cpus: &[u32], seconds: f64, threshold_ns: u64) -> std::io::Result<NoiseReport> {
    let read_irqs = || {
        (
            parse_interrupts(&procfs::read_interrupts().unwrap_or_default()),
            parse_interrupts(&procfs::read_softirqs().unwrap_or_default()),
            procfs::read_stat().unwrap_or_default(),
        )
    };
    let before = read_irqs();
    let spins: Vec<std::io::Result<(Spin, crate::model::Usage)>> = std::thread::scope(|s| {
        let handles: Vec<_> = cpus
            .iter()
            .map(|&cpu| s.spawn(move || spin(cpu, seconds, threshold_ns)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("a spinning thread panicked")))
            })
            .collect()
    });
    let after = read_irqs();
    let mut out = Vec::new();
    for (&cpu, spun) in cpus.iter().zip(spins) {
        let (spun, usage) = spun?;
        let spin_ns = spun.spin_ns;
        let interrupts = cpu_deltas(&before.0, &after.0, cpu);
        let steal = procfs::cpus_since(&before.2, &after.2, &[cpu]).steal;
        out.push(CpuNoise {
            cpu,
            spin_ns,
            reads: spun.reads,
            gaps: spun.gaps,
            stolen_ns: spun.stolen_ns,
            stolen_us_per_s: spun.stolen_ns as f64 / 1e3 / (spin_ns.max(1) as f64 / 1e9),
            max_gap_ns: spun.max_gap_ns,
            histogram: histogram(&spun.kept),
            ticks: interrupts.get("LOC").copied().unwrap_or(0),
            interrupts,
            softirqs: cpu_deltas(&before.1, &after.1, cpu),
            steal_ticks: steal,
            preemptions: usage.nivcsw,
            off_cpu_ns: spin_ns.saturating_sub(usage.user_ns + usage.sys_ns),
        });
    }
    let names = irq_names(&procfs::read_interrupts().unwrap_or_default());
    let fired: std::collections::BTreeSet<&String> =
        out.iter().flat_map(|c| c.interrupts.keys()).collect();
    Ok(NoiseReport {
        seconds,
        threshold_ns,
        irq_names: names
            .into_iter()
            .filter(|(irq, _)| fired.contains(irq))
            .collect(),
        cpus: out,
    })
}

fn fmt_ns(ns: u64) -> String {
    if ns >= 1_000_000 {
        format!("{} ms", ns / 1_000_000)
    } else {
        format!("{} us", ns / 1_000)
    }
}

/// The report as text: a line per CPU, the histogram, then the interrupt and softirq deltas.
pub fn render(r: &NoiseReport, hz: Option<u32>) -> String {
    let mut s = format!(
        "Jitter: {} s spin per CPU, gaps over {} ns{}\n",
        r.seconds,
        r.threshold_ns,
        hz.map(|h| format!(" (CONFIG_HZ {h})")).unwrap_or_default()
    );
    s += "  cpu   lost us/s    gaps   max gap   ticks   preempted   off-CPU us/s   steal ticks\n";
    for c in &r.cpus {
        s += &format!(
            "  {:>3}   {:>9.1}   {:>5}   {:>7}   {:>5}   {:>9}   {:>12.1}   {:>11}\n",
            c.cpu,
            c.stolen_us_per_s,
            c.gaps,
            fmt_ns(c.max_gap_ns),
            c.ticks,
            c.preemptions,
            c.off_cpu_ns as f64 / 1e3 / (c.spin_ns.max(1) as f64 / 1e9),
            c.steal_ticks
        );
    }
    for c in &r.cpus {
        if let Some(line) = who_took_it(c) {
            s += &format!("  cpu {}: {line}\n", c.cpu);
        }
    }
    s += "Gap histogram (gaps per bucket, by CPU)\n";
    for (i, b) in BUCKETS_NS.iter().enumerate() {
        let name = match BUCKETS_NS.get(i + 1) {
            Some(&to) if *b == 0 => format!("< {}", fmt_ns(to)),
            Some(&to) => format!("{} - {}", fmt_ns(*b), fmt_ns(to)),
            None => format!(">= {}", fmt_ns(*b)),
        };
        let counts: Vec<String> = r
            .cpus
            .iter()
            .map(|c| format!("{:>7}", c.histogram[i].count))
            .collect();
        s += &format!("  {name:<17} {}\n", counts.join(" "));
    }
    s += "Interrupts and softirqs during the spin (by CPU)\n";
    for c in &r.cpus {
        let list = |m: &BTreeMap<String, u64>| {
            let mut v: Vec<(&String, &u64)> = m.iter().collect();
            v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            v.iter()
                .map(|(k, n)| match r.irq_names.get(*k) {
                    Some(name) => format!("{k} ({name}) {n}"),
                    None => format!("{k} {n}"),
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        s += &format!(
            "  cpu {}: interrupts: {}; softirqs: {}\n",
            c.cpu,
            or_none(list(&c.interrupts)),
            or_none(list(&c.softirqs))
        );
    }
    s += "Lost time is the sum of the gaps; set their count against the interrupts, softirqs and ticks on the CPU (LOC is the timer tick), the times other tasks preempted the spin (off-CPU: the spin's time it did not run at all), and the hypervisor's steal.\n";
    s
}

/// Who took a CPU's lost time, when most of it is one cause: other tasks (the spin was off
/// the CPU and the hypervisor reported no steal) or the hypervisor (steal ticks). The
/// hypervisor's steal is all that "steal" means; time other tasks ran is not steal.
fn who_took_it(c: &CpuNoise) -> Option<String> {
    let spin = c.spin_ns.max(1) as f64;
    let lost = c.stolen_ns as f64 / spin;
    let off = c.off_cpu_ns as f64 / spin;
    if lost < 0.01 {
        return None;
    }
    let pct = |x: f64| format!("{:.0}%", 100.0 * x);
    Some(if c.steal_ticks == 0 && off >= lost / 2.0 {
        format!(
            "{} of the spin lost; the spin was off the CPU {} of the time, preempted {} times: other tasks ran on this CPU, not the hypervisor (its steal ticks are 0)",
            pct(lost),
            pct(off),
            c.preemptions
        )
    } else if c.steal_ticks > 0 {
        format!(
            "{} of the spin lost; the hypervisor reports {} steal ticks on this CPU, and other tasks preempted the spin {} times",
            pct(lost),
            c.steal_ticks,
            c.preemptions
        )
    } else {
        format!(
            "{} of the spin lost while it kept the CPU: interrupts and softirqs (below), not other tasks nor the hypervisor",
            pct(lost)
        )
    })
}

fn or_none(s: String) -> String {
    if s.is_empty() {
        "none".into()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_puts_each_gap_in_its_bucket() {
        let h = histogram(&[1_500, 2_000, 4_999, 1_000_000, 7_000_000]);
        let counts: Vec<u64> = h.iter().map(|b| b.count).collect();
        assert_eq!(counts, [1, 2, 0, 0, 0, 0, 0, 0, 0, 2]);
        assert_eq!(h[0].to_ns, Some(2_000));
        assert_eq!(h.last().unwrap().to_ns, None);
    }

    #[test]
    fn deltas_are_per_cpu_and_non_zero() {
        let before = parse_interrupts("     CPU0 CPU1\nLOC: 10 20 Local timer\nRES: 5 5 Resched\n");
        let after = parse_interrupts("     CPU0 CPU1\nLOC: 15 40 Local timer\nRES: 5 6 Resched\n");
        let d = cpu_deltas(&before, &after, 1);
        assert_eq!(d.get("LOC"), Some(&20));
        assert_eq!(d.get("RES"), Some(&1));
        let d0 = cpu_deltas(&before, &after, 0);
        assert_eq!(d0.len(), 1);
    }

    #[test]
    fn a_short_spin_accounts_its_gaps() {
        let cpu = sys::get_affinity().unwrap()[0];
        let r = measure(&[cpu], 0.05, 1_000).unwrap();
        let c = &r.cpus[0];
        assert!(c.spin_ns >= 50_000_000, "{c:?}");
        assert!(c.reads > 0);
        assert_eq!(c.histogram.iter().map(|b| b.count).sum::<u64>(), c.gaps);
        assert!(c.stolen_ns <= c.spin_ns);
        assert!(c.max_gap_ns <= c.stolen_ns);
        let text = render(&r, Some(250));
        assert!(
            text.contains("CONFIG_HZ 250") && text.contains("lost us/s"),
            "{text}"
        );
    }

    #[test]
    fn numbered_interrupts_are_named_by_their_device() {
        let text = "           CPU0       CPU1\n 24:          1          0  IO-APIC   5-edge      ACPI:Ged\n 36:          0    1270229 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n 16:   3 4  IO-APIC  16-fasteoi   ehci_hcd:usb1, ahci[0000:00:1f.2]\nLOC:    5  6   Local timer interrupts\n";
        let names = irq_names(text);
        assert_eq!(names["36"], "virtio1-req.0");
        assert_eq!(names["24"], "ACPI:Ged");
        assert_eq!(names["16"], "ehci_hcd:usb1, ahci[0000:00:1f.2]");
        assert!(
            !names.contains_key("LOC"),
            "named interrupts keep their name"
        );
    }

    fn cpu(lost: u64, off: u64, steal: u64) -> CpuNoise {
        CpuNoise {
            cpu: 0,
            spin_ns: 1_000_000_000,
            reads: 1,
            gaps: 1,
            stolen_ns: lost,
            stolen_us_per_s: lost as f64 / 1e3,
            max_gap_ns: lost,
            histogram: histogram(&[lost]),
            ticks: 0,
            interrupts: BTreeMap::new(),
            softirqs: BTreeMap::new(),
            steal_ticks: steal,
            preemptions: 40,
            off_cpu_ns: off,
        }
    }

    #[test]
    fn time_other_tasks_took_is_not_called_the_hypervisors() {
        let tasks = who_took_it(&cpu(750_000_000, 740_000_000, 0)).unwrap();
        assert!(
            tasks.contains("other tasks ran on this CPU, not the hypervisor"),
            "{tasks}"
        );
        assert!(tasks.starts_with("75% of the spin lost"), "{tasks}");
        let hyper = who_took_it(&cpu(750_000_000, 740_000_000, 30)).unwrap();
        assert!(
            hyper.contains("the hypervisor reports 30 steal ticks"),
            "{hyper}"
        );
        let irqs = who_took_it(&cpu(100_000_000, 0, 0)).unwrap();
        assert!(irqs.contains("interrupts and softirqs"), "{irqs}");
        assert_eq!(
            who_took_it(&cpu(1_000, 0, 0)),
            None,
            "a quiet CPU needs no line"
        );
    }
}
