//! The counters of `sysperf run --observe`, taken inside the worker around the timed region.
//!
//! Two sources:
//! - perf_event_open software counters (task-clock, context-switches, cpu-migrations,
//!   page-faults; cycles and instructions where the CPU exposes them) on the worker with
//!   `inherit`, so its children count too. They are opened before setup (children forked in
//!   setup inherit them), enabled right before the clock read that starts the timed region and
//!   disabled right after the one that ends it, with one prctl each.
//! - System-wide deltas of /proc/stat, /proc/interrupts, /proc/vmstat and /proc/diskstats,
//!   read just outside the timed region (reading them costs a few hundred microseconds, which
//!   must not land inside it). Reading them in the worker rather than in the parent around the
//!   whole trial keeps process start-up, setup and teardown out of the deltas.
//!
//! Parsing is pure and tested here; this is not a general /proc library, only the fields the
//! model's [`Counters`] keeps.

use crate::model::Counters;
use crate::sys::{self, perf, PerfEventAttr};
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd};

/// Totals of /proc/stat's system-wide lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatTotals {
    pub intr: u64,
    pub softirq: u64,
    pub ctxt: u64,
    pub processes: u64,
    /// The `cpu` line's softirq time, in clock ticks (USER_HZ).
    pub softirq_ticks: u64,
}

/// Whole-disk I/O totals of /proc/diskstats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskTotals {
    pub reads: u64,
    pub writes: u64,
    pub sectors_read: u64,
    pub sectors_written: u64,
}

/// One reading of the system-wide counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub stat: StatTotals,
    /// /proc/interrupts: source -> count per CPU number.
    pub interrupts: BTreeMap<String, BTreeMap<u32, u64>>,
    /// The /proc/vmstat fields in [`VMSTAT_KEYS`].
    pub vmstat: BTreeMap<String, u64>,
    pub disks: DiskTotals,
    /// /proc/softirqs: NET_RX and NET_TX on all CPUs.
    pub net_softirqs: [u64; 2],
}

/// NET_RX and NET_TX of /proc/softirqs (the layout of /proc/interrupts), summed over CPUs.
pub fn net_softirqs(text: &str) -> [u64; 2] {
    let kinds = parse_interrupts(text);
    ["NET_RX", "NET_TX"].map(|k| kinds.get(k).map(|c| c.values().sum()).unwrap_or(0))
}

/// The /proc/vmstat fields kept.
pub const VMSTAT_KEYS: [&str; 6] = [
    "pgfault",
    "pgmajfault",
    "pgpgin",
    "pgpgout",
    "pswpin",
    "pswpout",
];

/// diskstats counts 512-byte sectors whatever the device's block size.
const SECTOR_BYTES: u64 = 512;

/// The totals of a /proc/stat reading (see `procfs`); a line missing there counts as 0.
pub fn stat_totals(s: &crate::procfs::ProcStat) -> StatTotals {
    StatTotals {
        intr: s.intr.unwrap_or(0),
        softirq: s.softirq.unwrap_or(0),
        ctxt: s.ctxt.unwrap_or(0),
        processes: s.processes.unwrap_or(0),
        softirq_ticks: s.cpu.map(|c| c.softirq).unwrap_or(0),
    }
}

/// [`stat_totals`] of the text of /proc/stat.
pub fn parse_stat(text: &str) -> StatTotals {
    stat_totals(&crate::procfs::parse_stat(text))
}

/// /proc/interrupts: the header names the CPU columns ("CPU0 CPU1 ..."; offline CPUs have no
/// column); each line is "SOURCE: count per CPU, then a description". Lines with fewer
/// counts than CPUs (ERR, MIS) keep what they have, attributed to the first columns.
pub fn parse_interrupts(text: &str) -> BTreeMap<String, BTreeMap<u32, u64>> {
    let mut lines = text.lines();
    let cpus: Vec<u32> = lines
        .next()
        .unwrap_or("")
        .split_ascii_whitespace()
        .filter_map(|c| c.strip_prefix("CPU").and_then(|n| n.parse().ok()))
        .collect();
    let mut out = BTreeMap::new();
    for line in lines {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let name = name.trim();
        if name.is_empty() {
            continue;
        }
        let counts: BTreeMap<u32, u64> = cpus
            .iter()
            .zip(
                rest.split_ascii_whitespace()
                    .map_while(|v| v.parse::<u64>().ok()),
            )
            .map(|(&c, v)| (c, v))
            .collect();
        if !counts.is_empty() {
            out.insert(name.to_string(), counts);
        }
    }
    out
}

/// The fields of /proc/vmstat in [`VMSTAT_KEYS`] (parsed by `procfs`).
pub fn parse_vmstat(text: &str) -> BTreeMap<String, u64> {
    crate::procfs::parse_vmstat(text)
        .into_iter()
        .filter(|(k, _)| VMSTAT_KEYS.contains(&k.as_str()))
        .collect()
}

/// Sums the devices for which `whole` is true (whole disks: partitions would count twice).
pub fn parse_diskstats(text: &str, whole: &dyn Fn(&str) -> bool) -> DiskTotals {
    let mut t = DiskTotals::default();
    for d in crate::procfs::parse_diskstats(text) {
        if !whole(&d.name) {
            continue;
        }
        t.reads += d.rd_ios;
        t.sectors_read += d.rd_sectors;
        t.writes += d.wr_ios;
        t.sectors_written += d.wr_sectors;
    }
    t
}

/// Reads the four files now. A file that cannot be read counts as empty (its deltas are 0).
pub fn snapshot() -> Snapshot {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    // Whole disks are the entries of /sys/block; partitions live below them.
    let disks: Vec<String> = std::fs::read_dir("/sys/block")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    Snapshot {
        stat: stat_totals(&crate::procfs::read_stat().unwrap_or_default()),
        interrupts: parse_interrupts(&read(crate::procfs::INTERRUPTS)),
        vmstat: parse_vmstat(&read(crate::procfs::VMSTAT)),
        disks: parse_diskstats(&read(crate::procfs::DISKSTATS), &|name| {
            disks.iter().any(|d| d == name)
        }),
        net_softirqs: net_softirqs(&crate::procfs::read_softirqs().unwrap_or_default()),
    }
}

/// The system-wide part of [`Counters`] between two snapshots; `cpus` are the CPUs the trial
/// was pinned to (empty: unpinned, so no per-CPU figure). Perf fields are left empty.
pub fn delta(before: &Snapshot, after: &Snapshot, cpus: &[u32]) -> Counters {
    let d = |a: u64, b: u64| a.saturating_sub(b);
    let vm = |k: &str| {
        d(
            after.vmstat.get(k).copied().unwrap_or(0),
            before.vmstat.get(k).copied().unwrap_or(0),
        )
    };
    let mut by_source = BTreeMap::new();
    let mut on_cpus = 0;
    for (name, counts) in &after.interrupts {
        let old = before.interrupts.get(name);
        let mut total = 0;
        for (cpu, v) in counts {
            let was = old.and_then(|o| o.get(cpu)).copied().unwrap_or(*v);
            let dv = d(*v, was);
            total += dv;
            if cpus.contains(cpu) {
                on_cpus += dv;
            }
        }
        if total > 0 {
            by_source.insert(name.clone(), total);
        }
    }
    Counters {
        interrupts: d(after.stat.intr, before.stat.intr),
        softirqs: d(after.stat.softirq, before.stat.softirq),
        system_context_switches: d(after.stat.ctxt, before.stat.ctxt),
        processes_created: d(after.stat.processes, before.stat.processes),
        interrupts_on_trial_cpus: (!cpus.is_empty()).then_some(on_cpus),
        interrupts_by_source: by_source,
        pgfault: vm("pgfault"),
        pgmajfault: vm("pgmajfault"),
        pgpgin_kib: vm("pgpgin"),
        pgpgout_kib: vm("pgpgout"),
        pswpin_pages: vm("pswpin"),
        pswpout_pages: vm("pswpout"),
        disk_reads: d(after.disks.reads, before.disks.reads),
        disk_writes: d(after.disks.writes, before.disks.writes),
        disk_read_bytes: d(after.disks.sectors_read, before.disks.sectors_read) * SECTOR_BYTES,
        disk_write_bytes: d(after.disks.sectors_written, before.disks.sectors_written)
            * SECTOR_BYTES,
        net_rx_softirqs: Some(d(after.net_softirqs[0], before.net_softirqs[0])),
        net_tx_softirqs: Some(d(after.net_softirqs[1], before.net_softirqs[1])),
        softirq_time_ns: Some(
            d(after.stat.softirq_ticks, before.stat.softirq_ticks) * 1_000_000_000
                / crate::sys::clock_ticks().max(1),
        ),
        ..Counters::default()
    }
}

/// Which counter a perf descriptor counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Which {
    TaskClock,
    ContextSwitches,
    Migrations,
    PageFaults,
    Cycles,
    Instructions,
}

const EVENTS: [(Which, u32, u64); 6] = [
    (Which::TaskClock, perf::TYPE_SOFTWARE, perf::SW_TASK_CLOCK),
    (
        Which::ContextSwitches,
        perf::TYPE_SOFTWARE,
        perf::SW_CONTEXT_SWITCHES,
    ),
    (
        Which::Migrations,
        perf::TYPE_SOFTWARE,
        perf::SW_CPU_MIGRATIONS,
    ),
    (Which::PageFaults, perf::TYPE_SOFTWARE, perf::SW_PAGE_FAULTS),
    (Which::Cycles, perf::TYPE_HARDWARE, perf::HW_CPU_CYCLES),
    (
        Which::Instructions,
        perf::TYPE_HARDWARE,
        perf::HW_INSTRUCTIONS,
    ),
];

/// The worker's perf counters: opened disabled, enabled and disabled together.
pub struct PerfCounters {
    open: Vec<(Which, OwnedFd)>,
    error: Option<String>,
}

impl PerfCounters {
    /// Opens every counter on the calling process, inherited by children forked from now on.
    /// Hardware counters the machine lacks are skipped; a refused software counter is an
    /// error recorded for the trial (the /proc deltas are still taken).
    pub fn open() -> PerfCounters {
        let mut open = Vec::new();
        let mut error = None;
        for (which, kind, config) in EVENTS {
            let mut attr = PerfEventAttr::new(kind, config);
            attr.read_format = perf::FORMAT_TOTAL_TIME_ENABLED | perf::FORMAT_TOTAL_TIME_RUNNING;
            attr.flags = perf::FLAG_DISABLED | perf::FLAG_INHERIT | perf::FLAG_EXCLUDE_HV;
            match sys::perf_event_open(&attr, 0, -1) {
                Ok(fd) => open.push((which, fd)),
                Err(_) if kind == perf::TYPE_HARDWARE => {}
                Err(e) => {
                    error.get_or_insert_with(|| perf_open_error(&e));
                }
            }
        }
        if error.is_some() {
            open.clear();
        }
        PerfCounters { open, error }
    }

    /// Starts (or stops) every counter, children's copies included.
    #[inline]
    pub fn enable(&self, on: bool) {
        if !self.open.is_empty() {
            sys::perf_events_enable_own(on);
        }
    }

    /// Fills the perf fields of `c` from the (disabled) counters.
    pub fn read_into(&self, c: &mut Counters) {
        c.perf_error = self.error.clone();
        for (which, fd) in &self.open {
            let [value, enabled, running] = match sys::perf_read_counter(fd.as_raw_fd()) {
                Ok(v) => v,
                Err(e) => {
                    c.perf_error
                        .get_or_insert_with(|| format!("reading a perf counter: {e}"));
                    continue;
                }
            };
            let (v, scaled) = scale(value, enabled, running);
            c.perf_multiplexed |= scaled;
            let slot = match which {
                Which::TaskClock => &mut c.task_clock_ns,
                Which::ContextSwitches => &mut c.context_switches,
                Which::Migrations => &mut c.cpu_migrations,
                Which::PageFaults => &mut c.page_faults,
                Which::Cycles => &mut c.cycles,
                Which::Instructions => &mut c.instructions,
            };
            *slot = v;
        }
    }
}

/// A counter's value scaled to its enabled time when the kernel multiplexed it (it ran for
/// only part of the time it was enabled); None when it was enabled but never ran. The flag
/// says whether it was scaled.
pub fn scale(value: u64, enabled: u64, running: u64) -> (Option<u64>, bool) {
    if running == 0 {
        return (if enabled == 0 { Some(value) } else { None }, false);
    }
    if running >= enabled {
        return (Some(value), false);
    }
    let v = (value as u128 * enabled as u128 / running as u128).min(u64::MAX as u128) as u64;
    (Some(v), true)
}

/// What a refused perf_event_open means and how to allow it.
pub fn perf_open_error(e: &std::io::Error) -> String {
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "perf_event_open: permission denied (kernel.perf_event_paranoid is {paranoid}; \
             run as root or with CAP_PERFMON, or allow it with: sysctl -w kernel.perf_event_paranoid=1)"
        ),
        Some(libc::ENOSYS) => {
            "perf_event_open: this kernel was built without perf events (CONFIG_PERF_EVENTS)"
                .into()
        }
        Some(libc::EMFILE) | Some(libc::ENFILE) => {
            format!("perf_event_open: out of file descriptors ({e}); raise ulimit -n")
        }
        _ => format!("perf_event_open: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTERRUPTS_A: &str = "           CPU0       CPU1       \n  \
 24:          1          0  IO-APIC   5-edge      ACPI:Ged\n  \
 36:          0     161841 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n\
NMI:          0          0   Non-maskable interrupts\n\
LOC:     177392     203495   Local timer interrupts\n\
RES:      55365      52913   Rescheduling interrupts\n\
ERR:          0\n";
    const INTERRUPTS_B: &str = "           CPU0       CPU1       \n  \
 24:          1          0  IO-APIC   5-edge      ACPI:Ged\n  \
 36:          0     161851 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n\
NMI:          0          0   Non-maskable interrupts\n\
LOC:     177492     203595   Local timer interrupts\n\
RES:      55367      52913   Rescheduling interrupts\n\
ERR:          0\n";

    #[test]
    fn parses_stat_totals() {
        let t = parse_stat(
            "cpu  1 2 3 4\nintr 7847680 0 0 5\nctxt 32300840\nbtime 1\nprocesses 1506712\nprocs_running 2\nsoftirq 1119484 0 79716\n",
        );
        assert_eq!(
            t,
            StatTotals {
                intr: 7_847_680,
                softirq: 1_119_484,
                ctxt: 32_300_840,
                processes: 1_506_712,
                softirq_ticks: 0,
            }
        );
        assert_eq!(parse_stat("garbage\nintr x\n"), StatTotals::default());
    }

    #[test]
    fn parses_interrupts_per_cpu_column() {
        let i = parse_interrupts(INTERRUPTS_A);
        assert_eq!(i["LOC"][&1], 203_495);
        assert_eq!(i["36"][&1], 161_841);
        assert_eq!(i["ERR"].len(), 1);
        // Offline CPUs leave gaps: columns are named by the header, not counted.
        let gap = parse_interrupts("   CPU0   CPU2\nLOC:  5  7  Local\n");
        assert_eq!(gap["LOC"][&2], 7);
        assert!(parse_interrupts("").is_empty());
    }

    #[test]
    fn parses_vmstat_keys_and_whole_disks() {
        let v = parse_vmstat("nr_free_pages 5\npgfault 100\npgmajfault 2\npswpin 0\nbad\n");
        assert_eq!(v.len(), 3);
        assert_eq!(v["pgfault"], 100);
        let text = " 254       0 vda 176051 32014 20290298 187353 51247 52911 16318504 71139 29 26144 260654\n 254       1 vda1 100 0 200 0 50 0 400 0 0 0 0\n   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0\n";
        let d = parse_diskstats(text, &|n| n == "vda" || n == "loop0");
        assert_eq!(
            d,
            DiskTotals {
                reads: 176_051,
                writes: 51_247,
                sectors_read: 20_290_298,
                sectors_written: 16_318_504
            }
        );
    }

    #[test]
    fn delta_counts_sources_and_trial_cpus() {
        let a = Snapshot {
            stat: StatTotals {
                intr: 100,
                softirq: 10,
                ctxt: 1000,
                processes: 5,
                softirq_ticks: 100,
            },
            interrupts: parse_interrupts(INTERRUPTS_A),
            vmstat: parse_vmstat("pgfault 100\npgpgout 8\n"),
            disks: DiskTotals {
                reads: 1,
                writes: 1,
                sectors_read: 8,
                sectors_written: 8,
            },
            net_softirqs: net_softirqs("   CPU0  CPU1\nNET_TX: 1 0\nNET_RX: 3 2\n"),
        };
        assert_eq!(a.net_softirqs, [5, 1]);
        let mut b = a.clone();
        b.stat.softirq_ticks = 100 + crate::sys::clock_ticks();
        b.net_softirqs = [9, 1];
        b.stat.intr = 312;
        b.stat.ctxt = 1002;
        b.interrupts = parse_interrupts(INTERRUPTS_B);
        b.vmstat = parse_vmstat("pgfault 150\npgpgout 12\n");
        b.disks.writes = 3;
        b.disks.sectors_written = 24;
        let c = delta(&a, &b, &[1]);
        assert_eq!(c.interrupts, 212);
        assert_eq!(c.system_context_switches, 2);
        assert_eq!(c.interrupts_by_source.len(), 3);
        assert_eq!(c.interrupts_by_source["LOC"], 200);
        assert_eq!(c.interrupts_by_source["RES"], 2);
        assert_eq!(c.interrupts_by_source["36"], 10);
        // CPU 1: LOC 100 + virtio 10; the 2 RES were on CPU 0.
        assert_eq!(c.interrupts_on_trial_cpus, Some(110));
        assert_eq!(delta(&a, &b, &[]).interrupts_on_trial_cpus, None);
        assert_eq!(c.net_rx_softirqs, Some(4));
        assert_eq!(c.net_tx_softirqs, Some(0));
        assert_eq!(
            c.softirq_time_ns,
            Some(1_000_000_000),
            "one second of ticks"
        );
        assert_eq!(c.pgfault, 50);
        assert_eq!(c.pgpgout_kib, 4);
        assert_eq!((c.disk_writes, c.disk_write_bytes), (2, 16 * 512));
        assert_eq!(c.task_clock_ns, None);
        // Counters going backwards (a reset) give 0, not a wrap.
        assert_eq!(delta(&b, &a, &[1]).interrupts, 0);
    }

    #[test]
    fn scaling_of_multiplexed_counters() {
        assert_eq!(scale(100, 10, 10), (Some(100), false));
        assert_eq!(scale(100, 10, 5), (Some(200), true));
        assert_eq!(scale(0, 0, 0), (Some(0), false));
        assert_eq!(scale(0, 10, 0), (None, false));
        assert_eq!(scale(u64::MAX, 2, 1), (Some(u64::MAX), true));
    }

    #[test]
    fn refusals_name_the_setting_and_the_fix() {
        let m = perf_open_error(&std::io::Error::from_raw_os_error(libc::EACCES));
        assert!(m.contains("kernel.perf_event_paranoid is"), "{m}");
        assert!(m.contains("sysctl -w kernel.perf_event_paranoid=1"), "{m}");
        assert!(m.contains("CAP_PERFMON"), "{m}");
        let m = perf_open_error(&std::io::Error::from_raw_os_error(libc::ENOSYS));
        assert!(m.contains("CONFIG_PERF_EVENTS"), "{m}");
    }

    #[test]
    fn software_counters_count_this_process() {
        let p = PerfCounters::open();
        if let Some(e) = &p.error {
            assert!(
                std::env::var("CI").is_err() || !crate::sys::is_root(),
                "perf counters refused on CI as root: {e}"
            );
            eprintln!("skipping: {e}");
            return;
        }
        p.enable(true);
        let m = crate::sys::Mapping::anonymous(16 * crate::sys::page_size()).unwrap();
        for i in 0..16 {
            m.touch(i * crate::sys::page_size(), 1);
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
        p.enable(false);
        let mut c = Counters::default();
        p.read_into(&mut c);
        assert!(c.perf_error.is_none(), "{:?}", c.perf_error);
        assert!(c.task_clock_ns.unwrap() > 0);
        assert!(c.page_faults.unwrap() >= 16, "{c:?}");
        assert!(c.context_switches.unwrap() >= 1, "{c:?}");
    }
}
