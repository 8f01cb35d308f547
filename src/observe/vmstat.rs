//! vmstat's figures, computed from the kernel's counters the way procps-ng's `vmstat` (4.0)
//! computes them, so that `sysperf watch` and `vmstat` agree on the same interval.
//!
//! What each column is (procps-ng semantics, checked against the installed vmstat 4.0.2 by
//! bind-mounting fake /proc files over the real ones):
//! - `r`, `b`: `procs_running` and `procs_blocked` of /proc/stat as read (the reader itself is
//!   running, so it counts itself in `r`, as vmstat does);
//! - `swpd` = SwapTotal - SwapFree, `free` = MemFree, `buff` = Buffers, `cache` = Cached +
//!   SReclaimable, all in KiB (vmstat's default unit) from /proc/meminfo;
//! - `si`, `so`: /proc/vmstat pswpin/pswpout (pages) in KiB per second; `bi`, `bo`: pgpgin and
//!   pgpgout, which the kernel already reports in KiB, per second;
//! - `flt` (not a vmstat column): /proc/vmstat pgfault per second (minor + major faults);
//!   `majflt` (JSON only): pgmajfault per second;
//! - `in`, `cs`: the `intr` total and `ctxt` of /proc/stat per second;
//! - `us` = user + nice - guest - guest_nice, `sy` = system + irq + softirq, `id` = idle,
//!   `wa` = iowait, `st` = steal, `gu` (JSON only) = guest + guest_nice, each as a percentage of
//!   user + nice + system + irq + softirq + idle + iowait + steal of the aggregate `cpu` line.
//!   The kernel already counts guest time inside user and nice, which is why it is subtracted.
//!
//! Where sysperf deliberately differs from procps 4.0.2 (the figures are otherwise the same):
//! - rates of an interval line are divided by the measured time between the two readings, not
//!   by the nominal interval (procps divides by the integer it slept; the two differ by the
//!   time vmstat spends printing, well under 1%);
//! - rates of the since-boot line are divided by the uptime. procps divides them by the CPU
//!   time of all CPUs (the sum of the `cpu` line), which is the uptime times the number of CPUs,
//!   so its first line understates `in`, `cs`, `si`, `so`, `bi`, `bo` by that factor;
//! - `gu` of an interval is the interval's guest time; procps 4.0.2 subtracts the guest time
//!   since boot (identical on machines that run no guests, i.e. almost always);
//! - the memory columns are read for every line; procps 4.0.2 reads /proc/meminfo once and
//!   repeats its first reading on every line.
//!
//! Not here: reading the clock, sleeping and printing (see `watch`).

use super::{field, parse_error, read, ObserveError};
use serde::{Deserialize, Serialize};

pub use crate::procfs::CpuTicks;

/// The lines of /proc/stat that vmstat uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stat {
    /// The aggregate `cpu` line (the sum over online CPUs).
    pub cpu: CpuTicks,
    /// Interrupts serviced since boot (the first number of the `intr` line).
    pub intr: u64,
    /// Context switches since boot.
    pub ctxt: u64,
    pub procs_running: u64,
    pub procs_blocked: u64,
}

/// Parses /proc/stat (see `procfs`). None when the `cpu` line (with at least user, nice,
/// system and idle) or the `intr` or `ctxt` line is missing; later CPU fields absent on old
/// kernels count as 0.
pub fn parse_stat(text: &str) -> Option<Stat> {
    stat_from(&crate::procfs::parse_stat(text))
}

/// The lines vmstat uses of a /proc/stat reading.
pub fn stat_from(p: &crate::procfs::ProcStat) -> Option<Stat> {
    Some(Stat {
        cpu: p.cpu?,
        intr: p.intr?,
        ctxt: p.ctxt?,
        procs_running: p.procs_running.unwrap_or(0),
        procs_blocked: p.procs_blocked.unwrap_or(0),
    })
}

/// Counters of /proc/vmstat that vmstat shows (and the fault counters it does not).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VmCounters {
    /// KiB read from block devices (the kernel converts sectors to KiB for this file).
    pub pgpgin_kib: u64,
    pub pgpgout_kib: u64,
    /// Pages swapped in and out.
    pub pswpin: u64,
    pub pswpout: u64,
    /// Page faults (minor and major) and major faults alone.
    pub pgfault: u64,
    pub pgmajfault: u64,
}

/// Parses /proc/vmstat; absent counters are 0 (kernels built without swap lack pswp*).
pub fn parse_vmstat(text: &str) -> VmCounters {
    let f = |k| field(text, k).unwrap_or(0);
    VmCounters {
        pgpgin_kib: f("pgpgin"),
        pgpgout_kib: f("pgpgout"),
        pswpin: f("pswpin"),
        pswpout: f("pswpout"),
        pgfault: f("pgfault"),
        pgmajfault: f("pgmajfault"),
    }
}

/// vmstat's memory columns, in KiB.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Memory {
    pub swpd_kib: u64,
    pub free_kib: u64,
    pub buff_kib: u64,
    pub cache_kib: u64,
}

/// Parses /proc/meminfo; None without MemFree. Other absent fields count as 0.
pub fn parse_meminfo(text: &str) -> Option<Memory> {
    let f = |k| field(text, k).unwrap_or(0);
    Some(Memory {
        swpd_kib: f("SwapTotal").saturating_sub(f("SwapFree")),
        free_kib: field(text, "MemFree")?,
        buff_kib: f("Buffers"),
        cache_kib: f("Cached") + f("SReclaimable"),
    })
}

/// Seconds since boot: the first number of /proc/uptime.
pub fn parse_uptime(text: &str) -> Option<f64> {
    text.split_whitespace()
        .next()?
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
}

/// One reading of everything a vmstat line needs.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Snapshot {
    pub stat: Stat,
    pub vm: VmCounters,
    pub mem: Memory,
    pub uptime_s: f64,
}

/// Reads the live counters.
pub fn read_snapshot() -> Result<Snapshot, ObserveError> {
    let stat = parse_stat(&read(crate::procfs::STAT)?)
        .ok_or_else(|| parse_error(crate::procfs::STAT, "cpu, intr and ctxt lines"))?;
    let vm = parse_vmstat(&read(crate::procfs::VMSTAT)?);
    let mem = parse_meminfo(&read(crate::procfs::MEMINFO)?)
        .ok_or_else(|| parse_error(crate::procfs::MEMINFO, "MemFree line"))?;
    let uptime_s = parse_uptime(&read("/proc/uptime")?)
        .ok_or_else(|| parse_error("/proc/uptime", "uptime"))?;
    Ok(Snapshot {
        stat,
        vm,
        mem,
        uptime_s,
    })
}

/// One line of `sysperf watch`: vmstat's columns plus faults. Gauges are as read at the end
/// of the span; rates are per second over it; percentages share out the span's CPU ticks.
/// This is the `sysperf watch --json` line format (docs/json-format.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Line {
    /// True for the first line, which covers the time since boot.
    pub since_boot: bool,
    /// Seconds the line covers (the uptime for the since-boot line).
    pub elapsed_s: f64,
    pub r: u64,
    pub b: u64,
    pub swpd_kib: u64,
    pub free_kib: u64,
    pub buff_kib: u64,
    pub cache_kib: u64,
    pub si_kib_per_s: f64,
    pub so_kib_per_s: f64,
    pub bi_kib_per_s: f64,
    pub bo_kib_per_s: f64,
    pub faults_per_s: f64,
    pub majfaults_per_s: f64,
    pub in_per_s: f64,
    pub cs_per_s: f64,
    pub us_pct: f64,
    pub sy_pct: f64,
    pub id_pct: f64,
    pub wa_pct: f64,
    pub st_pct: f64,
    pub gu_pct: f64,
}

/// us, sy, id, wa, st, gu of a span of CPU ticks, as procps shares them out. With no tick in
/// the span (possible only on a very short interval) the CPU counts as idle, as in procps.
pub fn cpu_percentages(d: &CpuTicks) -> [f64; 6] {
    let used = d.user + d.nice;
    let guest = d.guest + d.guest_nice;
    let sys = d.system + d.irq + d.softirq;
    let div = used + sys + d.idle + d.iowait + d.steal;
    if div == 0 {
        return [0.0, 0.0, 100.0, 0.0, 0.0, 0.0];
    }
    let pct = |x: u64| 100.0 * x as f64 / div as f64;
    // Guest time can briefly exceed user time (they are sampled apart); procps shows 0 then.
    [
        pct(used.saturating_sub(guest)),
        pct(sys),
        pct(d.idle),
        pct(d.iowait),
        pct(d.steal),
        pct(guest),
    ]
}

fn line(
    since_boot: bool,
    elapsed_s: f64,
    cur: &Snapshot,
    counts: (&Stat, &VmCounters),
    cpu: &CpuTicks,
    page_kib: u64,
) -> Line {
    let (s, v) = counts;
    // A zero or negative span cannot give a rate; 0 is printed rather than infinity.
    let rate = |n: u64| {
        if elapsed_s > 0.0 {
            n as f64 / elapsed_s
        } else {
            0.0
        }
    };
    let [us, sy, id, wa, st, gu] = cpu_percentages(cpu);
    Line {
        since_boot,
        elapsed_s,
        r: cur.stat.procs_running,
        b: cur.stat.procs_blocked,
        swpd_kib: cur.mem.swpd_kib,
        free_kib: cur.mem.free_kib,
        buff_kib: cur.mem.buff_kib,
        cache_kib: cur.mem.cache_kib,
        si_kib_per_s: rate(v.pswpin.saturating_mul(page_kib)),
        so_kib_per_s: rate(v.pswpout.saturating_mul(page_kib)),
        bi_kib_per_s: rate(v.pgpgin_kib),
        bo_kib_per_s: rate(v.pgpgout_kib),
        faults_per_s: rate(v.pgfault),
        majfaults_per_s: rate(v.pgmajfault),
        in_per_s: rate(s.intr),
        cs_per_s: rate(s.ctxt),
        us_pct: us,
        sy_pct: sy,
        id_pct: id,
        wa_pct: wa,
        st_pct: st,
        gu_pct: gu,
    }
}

/// The first line: averages since boot (rates over the uptime, CPU shares of all ticks).
pub fn since_boot(s: &Snapshot, page_kib: u64) -> Line {
    line(true, s.uptime_s, s, (&s.stat, &s.vm), &s.stat.cpu, page_kib)
}

/// A later line: the change from `prev` to `cur`, which were read `elapsed_s` seconds apart.
pub fn interval(prev: &Snapshot, cur: &Snapshot, elapsed_s: f64, page_kib: u64) -> Line {
    let stat = Stat {
        cpu: cur.stat.cpu.since(&prev.stat.cpu),
        intr: cur.stat.intr.saturating_sub(prev.stat.intr),
        ctxt: cur.stat.ctxt.saturating_sub(prev.stat.ctxt),
        ..cur.stat
    };
    let (a, b) = (&cur.vm, &prev.vm);
    let vm = VmCounters {
        pgpgin_kib: a.pgpgin_kib.saturating_sub(b.pgpgin_kib),
        pgpgout_kib: a.pgpgout_kib.saturating_sub(b.pgpgout_kib),
        pswpin: a.pswpin.saturating_sub(b.pswpin),
        pswpout: a.pswpout.saturating_sub(b.pswpout),
        pgfault: a.pgfault.saturating_sub(b.pgfault),
        pgmajfault: a.pgmajfault.saturating_sub(b.pgmajfault),
    };
    line(false, elapsed_s, cur, (&stat, &vm), &stat.cpu, page_kib)
}

/// The two header lines, column for column like vmstat's, with `flt` after `bo`.
pub fn header() -> String {
    let columns = format_row(&[
        "r", "b", "swpd", "free", "buff", "cache", "si", "so", "bi", "bo", "flt", "in", "cs", "us",
        "sy", "id", "wa", "st",
    ]);
    format!(
        "procs -----------memory---------- ---swap-- -----io---- -flt- -system-- ------cpu-----\n{columns}\n"
    )
}

const WIDTHS: [usize; 18] = [2, 2, 6, 6, 6, 6, 4, 4, 5, 5, 5, 4, 4, 2, 2, 2, 2, 2];

fn format_row<S: AsRef<str>>(cells: &[S]) -> String {
    cells
        .iter()
        .zip(WIDTHS)
        .map(|(c, w)| format!("{:>w$}", c.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Rounded half up, like procps's integer arithmetic; never negative.
fn whole(v: f64) -> u64 {
    if v.is_finite() && v > 0.0 {
        v.round() as u64
    } else {
        0
    }
}

/// One line as vmstat prints it: whole numbers, rounded half up.
pub fn format_line(l: &Line) -> String {
    let cells = [
        l.r,
        l.b,
        l.swpd_kib,
        l.free_kib,
        l.buff_kib,
        l.cache_kib,
        whole(l.si_kib_per_s),
        whole(l.so_kib_per_s),
        whole(l.bi_kib_per_s),
        whole(l.bo_kib_per_s),
        whole(l.faults_per_s),
        whole(l.in_per_s),
        whole(l.cs_per_s),
        whole(l.us_pct),
        whole(l.sy_pct),
        whole(l.id_pct),
        whole(l.wa_pct),
        whole(l.st_pct),
    ]
    .map(|v| v.to_string());
    format_row(&cells)
}

#[cfg(test)]
mod tests {
    use super::*;

    // A real /proc/stat of the development VM (2 CPUs, per-IRQ counts shortened).
    const STAT_A: &str = "\
cpu  58891 0 37237 237726 1304 0 238 54 0 0
cpu0 28565 0 11075 127813 267 0 66 25 0 0
cpu1 30326 0 26161 109912 1037 0 171 28 0 0
intr 7768282 0 0 0 0 0 12 0
ctxt 32194795
btime 1795334479
processes 48124
procs_running 3
procs_blocked 1
softirq 1630511 0 436187 2 23 0 0 125 1194174 0 0
";
    // One second later: 200 ticks elapsed over the 2 CPUs.
    const STAT_B: &str = "\
cpu  58951 10 37267 237820 1306 2 244 55 0 0
cpu0 28600 5 11080 127870 267 1 70 25 0 0
cpu1 30351 5 26187 109950 1039 1 174 30 0 0
intr 7770582 0 0 0 0 0 12 0
ctxt 32204331
btime 1795334479
processes 48130
procs_running 2
procs_blocked 0
";

    const VMSTAT_A: &str = "nr_free_pages 5079607\npgpgin 9665601\npgpgout 7211908\npswpin 0\npswpout 0\npgfault 33100200\npgmajfault 1200\n";
    const VMSTAT_B: &str = "nr_free_pages 5079000\npgpgin 9665701\npgpgout 7211912\npswpin 3\npswpout 5\npgfault 33104200\npgmajfault 1202\n";

    const MEMINFO: &str = "\
MemTotal:       24684084 kB
MemFree:        20318428 kB
MemAvailable:   23100000 kB
Buffers:          238364 kB
Cached:          3000000 kB
SwapCached:            7 kB
SwapTotal:           900 kB
SwapFree:            100 kB
Shmem:                40 kB
SReclaimable:     416448 kB
";

    fn snap(stat: &str, vm: &str, uptime_s: f64) -> Snapshot {
        Snapshot {
            stat: parse_stat(stat).unwrap(),
            vm: parse_vmstat(vm),
            mem: parse_meminfo(MEMINFO).unwrap(),
            uptime_s,
        }
    }

    #[test]
    fn parses_the_stat_lines_vmstat_uses() {
        let s = parse_stat(STAT_A).unwrap();
        assert_eq!(s.cpu.user, 58891);
        assert_eq!(s.cpu.system, 37237);
        assert_eq!(s.cpu.steal, 54);
        assert_eq!(s.cpu.total(), 58891 + 37237 + 237726 + 1304 + 238 + 54);
        assert_eq!((s.intr, s.ctxt), (7768282, 32194795));
        assert_eq!((s.procs_running, s.procs_blocked), (3, 1));
        // Old kernels: four CPU fields; the rest count as 0.
        let old = parse_stat("cpu 1 2 3 4\nintr 5\nctxt 6\n").unwrap();
        assert_eq!(old.cpu.idle, 4);
        assert_eq!(old.cpu.steal, 0);
        // Missing essentials.
        assert_eq!(parse_stat("cpu 1 2 3\nintr 5\nctxt 6\n"), None);
        assert_eq!(parse_stat("cpu 1 2 3 4\nctxt 6\n"), None);
        assert_eq!(parse_stat("cpu0 1 2 3 4\nintr 5\nctxt 6\n"), None);
        assert_eq!(parse_stat(""), None);
        assert_eq!(parse_stat("procs_running x\n"), None);
    }

    #[test]
    fn memory_is_vmstats_kib() {
        let m = parse_meminfo(MEMINFO).unwrap();
        // Checked against vmstat 4.0.2 on a bind-mounted fake /proc/meminfo: swpd excludes
        // nothing but SwapFree, cache adds SReclaimable to Cached.
        assert_eq!(m.swpd_kib, 800);
        assert_eq!(m.free_kib, 20318428);
        assert_eq!(m.buff_kib, 238364);
        assert_eq!(m.cache_kib, 3_416_448);
        assert_eq!(parse_meminfo("Buffers: 1 kB\n"), None);
        let bare = parse_meminfo("MemFree: 5 kB\n").unwrap();
        assert_eq!((bare.free_kib, bare.cache_kib, bare.swpd_kib), (5, 0, 0));
    }

    #[test]
    fn uptime() {
        assert_eq!(parse_uptime("1733.95 2377.77\n"), Some(1733.95));
        assert_eq!(parse_uptime("x"), None);
        assert_eq!(parse_uptime("-1 0"), None);
        assert_eq!(parse_uptime(""), None);
    }

    #[test]
    fn interval_line_matches_procps_arithmetic() {
        let a = snap(STAT_A, VMSTAT_A, 1733.0);
        let b = snap(STAT_B, VMSTAT_B, 1734.0);
        let l = interval(&a, &b, 1.0, 4);
        assert!(!l.since_boot);
        // Gauges come from the later reading.
        assert_eq!((l.r, l.b), (2, 0));
        assert_eq!(l.free_kib, 20318428);
        assert_eq!(l.in_per_s, 2300.0);
        assert_eq!(l.cs_per_s, 9536.0);
        assert_eq!(l.bi_kib_per_s, 100.0);
        assert_eq!(l.bo_kib_per_s, 4.0);
        assert_eq!(l.si_kib_per_s, 12.0); // 3 pages of 4 KiB
        assert_eq!(l.so_kib_per_s, 20.0);
        assert_eq!(l.faults_per_s, 4000.0);
        assert_eq!(l.majfaults_per_s, 2.0);
        // Ticks: user 60 + nice 10 = 70; system 30 + irq 2 + softirq 6 = 38; idle 94;
        // iowait 2; steal 1: 205 in all.
        let close = |x: f64, y: f64| (x - y).abs() < 1e-9;
        assert!(close(l.us_pct, 7000.0 / 205.0), "{}", l.us_pct);
        assert!(close(l.sy_pct, 3800.0 / 205.0));
        assert!(close(l.id_pct, 9400.0 / 205.0));
        assert!(close(l.wa_pct, 200.0 / 205.0));
        assert!(close(l.st_pct, 100.0 / 205.0));
        assert_eq!(l.gu_pct, 0.0);
        // procps: (100*x + Div/2)/Div = 34 19 46 1 0.
        assert_eq!(
            format_line(&l),
            " 2  0    800 20318428 238364 3416448   12   20   100     4  4000 2300 9536 34 19 46  1  0"
        );
        // Rates are per second of the measured span.
        assert_eq!(interval(&a, &b, 2.0, 4).cs_per_s, 4768.0);
        assert_eq!(interval(&a, &b, 0.0, 4).cs_per_s, 0.0);
    }

    #[test]
    fn since_boot_divides_by_uptime() {
        let a = snap(STAT_A, VMSTAT_A, 2000.0);
        let l = since_boot(&a, 4);
        assert!(l.since_boot);
        assert_eq!(l.elapsed_s, 2000.0);
        assert_eq!(l.in_per_s, 7768282.0 / 2000.0);
        assert_eq!(l.cs_per_s, 32194795.0 / 2000.0);
        assert_eq!(l.bi_kib_per_s, 9665601.0 / 2000.0);
        let total = a.stat.cpu.total() as f64;
        assert!((l.us_pct - 100.0 * 58891.0 / total).abs() < 1e-9);
        assert!((l.sy_pct - 100.0 * (37237.0 + 238.0) / total).abs() < 1e-9);
        let sum = l.us_pct + l.sy_pct + l.id_pct + l.wa_pct + l.st_pct + l.gu_pct;
        assert!((sum - 100.0).abs() < 1e-9);
    }

    #[test]
    fn guest_time_is_taken_out_of_user() {
        let d = CpuTicks {
            user: 50,
            nice: 10,
            system: 20,
            idle: 20,
            guest: 30,
            guest_nice: 5,
            ..CpuTicks::default()
        };
        let [us, sy, id, _, _, gu] = cpu_percentages(&d);
        assert_eq!((us, sy, id, gu), (25.0, 20.0, 20.0, 35.0));
        // Guest sampled above user: us is 0, never negative.
        let odd = CpuTicks {
            user: 1,
            guest: 3,
            idle: 1,
            ..CpuTicks::default()
        };
        assert_eq!(cpu_percentages(&odd)[0], 0.0);
    }

    #[test]
    fn no_ticks_is_idle_and_backwards_counters_do_not_wrap() {
        assert_eq!(
            cpu_percentages(&CpuTicks::default()),
            [0.0, 0.0, 100.0, 0.0, 0.0, 0.0]
        );
        let a = snap(STAT_B, VMSTAT_B, 10.0);
        let b = snap(STAT_A, VMSTAT_A, 11.0);
        let l = interval(&a, &b, 1.0, 4);
        assert_eq!((l.cs_per_s, l.in_per_s, l.bi_kib_per_s), (0.0, 0.0, 0.0));
        assert_eq!(l.id_pct, 100.0);
    }

    #[test]
    fn header_columns_line_up_with_values() {
        let h = header();
        let lines: Vec<&str> = h.lines().collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(
            lines[1],
            " r  b   swpd   free   buff  cache   si   so    bi    bo   flt   in   cs us sy id wa st"
        );
        // The group line is as wide as the column line, like vmstat's.
        assert_eq!(lines[0].len(), lines[1].len());
        let zero = Line {
            since_boot: false,
            elapsed_s: 1.0,
            r: 0,
            b: 0,
            swpd_kib: 0,
            free_kib: 0,
            buff_kib: 0,
            cache_kib: 0,
            si_kib_per_s: f64::NAN,
            so_kib_per_s: -1.0,
            bi_kib_per_s: 0.5,
            bo_kib_per_s: 0.49,
            faults_per_s: 0.0,
            majfaults_per_s: 0.0,
            in_per_s: 0.0,
            cs_per_s: 0.0,
            us_pct: 0.0,
            sy_pct: 0.0,
            id_pct: 100.0,
            wa_pct: 0.0,
            st_pct: 0.0,
            gu_pct: 0.0,
        };
        let f = format_line(&zero);
        assert_eq!(f.len(), lines[1].len() + 1, "{f}"); // 100 is one digit wider
        assert!(f.contains("    0    0     1     0"), "{f}");
    }
}
