//! System-wide CPU time from /proc/stat, to tell whether other work shared the CPUs with a
//! benchmark: the busy time of the benchmark's CPUs minus the CPU time of sysperf's own
//! processes is work that was not ours. Parsing is pure and tested; reading is one file.

use std::collections::BTreeMap;

/// Busy and steal time of one CPU, in clock ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTicks {
    /// user + nice + system + irq + softirq (guest time is already inside user).
    pub busy: u64,
    pub steal: u64,
    pub total: u64,
}

/// Per-CPU counters ("cpuN" lines) from the text of /proc/stat.
pub fn parse(text: &str) -> BTreeMap<u32, CpuTicks> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let mut f = line.split_ascii_whitespace();
        let Some(name) = f.next() else { continue };
        let Some(n) = name.strip_prefix("cpu").and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let v: Vec<u64> = f.filter_map(|x| x.parse().ok()).collect();
        if v.len() < 4 {
            continue;
        }
        let at = |i: usize| v.get(i).copied().unwrap_or(0);
        // user nice system idle iowait irq softirq steal guest guest_nice
        let busy = at(0) + at(1) + at(2) + at(5) + at(6);
        let steal = at(7);
        let total = busy + at(3) + at(4) + steal;
        out.insert(n, CpuTicks { busy, steal, total });
    }
    out
}

pub fn read() -> BTreeMap<u32, CpuTicks> {
    std::fs::read_to_string("/proc/stat")
        .map(|t| parse(&t))
        .unwrap_or_default()
}

/// Sums the change of `cpus` (all CPUs when empty) between two readings.
pub fn delta(
    before: &BTreeMap<u32, CpuTicks>,
    after: &BTreeMap<u32, CpuTicks>,
    cpus: &[u32],
) -> CpuTicks {
    let mut d = CpuTicks::default();
    for (n, a) in after {
        if !cpus.is_empty() && !cpus.contains(n) {
            continue;
        }
        if let Some(b) = before.get(n) {
            d.busy += a.busy.saturating_sub(b.busy);
            d.steal += a.steal.saturating_sub(b.steal);
            d.total += a.total.saturating_sub(b.total);
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "cpu  10 0 10 100 0 0 0 0 0 0\ncpu0 5 0 5 50 0 0 0 0 0 0\ncpu1 5 0 5 50 0 0 0 1 0 0\nintr 1 2\n";
    const B: &str =
        "cpu  40 0 20 120 0 0 0 0 0 0\ncpu0 25 0 5 60 0 0 0 0 0 0\ncpu1 15 0 15 60 0 2 1 3 0 0\n";

    #[test]
    fn parses_per_cpu_lines_only() {
        let a = parse(A);
        assert_eq!(a.len(), 2);
        assert_eq!(
            a[&1],
            CpuTicks {
                busy: 10,
                steal: 1,
                total: 61
            }
        );
        assert!(parse("garbage\ncpuX 1 2 3 4\ncpu2 1\n").is_empty());
    }

    #[test]
    fn delta_restricts_to_chosen_cpus() {
        let (a, b) = (parse(A), parse(B));
        assert_eq!(delta(&a, &b, &[0]).busy, 20);
        // cpu1 busy: (15+15+2+1) - (5+5) = 23; total adds idle 10 and steal 2.
        assert_eq!(
            delta(&a, &b, &[1]),
            CpuTicks {
                busy: 23,
                steal: 2,
                total: 35
            }
        );
        assert_eq!(delta(&a, &b, &[]).busy, 43);
    }
}
