//! `sysperf doctor`: what on this machine makes results noisy or not comparable, each with the
//! command or setting that addresses it.
//!
//! Two halves. [`gather`] reads the facts: the machine [`Fingerprint`] plus readings the
//! fingerprint does not keep (turbo, the available clocksources, steal time and other work over
//! a short sample of /proc/stat and /proc/*/stat, perf_event_paranoid, tracefs, kallsyms). It
//! takes [`SAMPLE`] (0.2 s) so that `sysperf run` can afford it at every start. [`diagnose`] is
//! a pure function from those facts to [`Finding`]s, warnings first; every finding carries a
//! concrete `fix`. [`findings_summary`] condenses findings to one line each for other reports.
//!
//! Not here: changing any setting (the doctor only reads and says what to do), or judging the
//! figures of a run (that is the harness's noise warnings and `compare`).

use super::vmstat::{self, CpuTicks};
use crate::fingerprint;
use crate::model::Fingerprint;
pub use crate::model::{Finding, Severity};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Read;
use std::time::Duration;

/// How long the doctor watches the CPUs: long enough to see a busy process (20 ticks per CPU
/// at 100 Hz), short enough to run before every `sysperf run`.
pub const SAMPLE: Duration = Duration::from_millis(200);

/// A process that used CPU time during the sample (sysperf itself excluded).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BusyProcess {
    pub pid: u32,
    pub comm: String,
    /// Percent of one CPU over the sample.
    pub cpu_pct: f64,
}

/// Turbo / boost state and the file that controls it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turbo {
    pub enabled: bool,
    /// "intel_pstate" (no_turbo) or "cpufreq" (boost).
    pub control: String,
}

/// Where tracefs is and whether this process may use it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tracefs {
    /// The kernel knows the file system (/proc/filesystems lists it).
    pub supported: bool,
    pub mounted_at: Option<String>,
    /// trace_marker opens for writing (root, or permissions granted).
    pub writable: bool,
}

/// What /proc/kallsyms shows this process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kallsyms {
    pub readable: bool,
    /// Some symbol has a non-zero address (zeros mean kptr_restrict hides them).
    pub addresses: bool,
}

/// Everything the checks look at. `gather` fills it from the live system; tests build it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Facts {
    pub fingerprint: Fingerprint,
    pub turbo: Option<Turbo>,
    /// /sys/devices/system/clocksource/clocksource0/available_clocksource, split.
    pub clocksources_available: Vec<String>,
    /// Seconds the CPU sample lasted (0 when it could not be taken).
    pub sample_s: f64,
    /// Share of all CPUs' time during the sample that was busy (user, system, irq, ...).
    pub busy_pct: Option<f64>,
    /// Share of all CPUs' time during the sample that the hypervisor stole.
    pub steal_pct: Option<f64>,
    /// Share of all CPUs' time since boot that was stolen.
    pub steal_since_boot_pct: Option<f64>,
    /// Processes that used at least [`BUSY_PROCESS_PCT`] of a CPU, busiest first.
    pub busy_processes: Vec<BusyProcess>,
    pub perf_event_paranoid: Option<i64>,
    pub kptr_restrict: Option<i64>,
    /// Effective user id (0 = root).
    pub euid: Option<u32>,
    pub tracefs: Tracefs,
    pub kallsyms: Kallsyms,
    /// Live sysperf processes other than this one and its workers (another run measuring).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_sysperfs: Vec<i32>,
    /// Tracing switched on by someone else (tracefs top level or other instances), one line
    /// each: it slows the system calls being measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub foreign_tracing: Vec<String>,
    /// Dirty + Writeback memory in KiB (/proc/meminfo): pages still to be written out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dirty_kib: Option<u64>,
    /// The kernel's DAMON pages out or reclaims memory it finds cold: one line per running
    /// kdamond scheme that does (`kdamond 0: pageout (paddr)`) and per reclaim module on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub proactive_reclaim: Vec<String>,
    /// The sslmode of the store `sysperf doctor` was given, when it is PostgreSQL reached over
    /// TCP (the doctor at the start of a run does not look): None when not looked up or when
    /// there is no such store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_sslmode: Option<String>,
    /// This machine's variance estimates from the store (`sysperf doctor` looks them up; the
    /// doctor at the start of a run does not): None when not looked up or there is no store.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variance: Option<Vec<crate::model::VarianceEstimate>>,
}

/// A process counts as busy from this share of one CPU (2 ticks in a 0.2 s sample at 100 Hz).
pub const BUSY_PROCESS_PCT: f64 = 10.0;
/// Other work above this share of all CPUs during the sample is a warning.
pub const BUSY_PCT: f64 = 10.0;
/// Steal above this share during the sample is a warning.
pub const STEAL_PCT: f64 = 2.0;

// ---------------------------------------------------------------------------------------
// Parsing (pure)

/// (pid, comm, utime + stime in ticks) from the text of /proc/PID/stat. The command name is
/// in parentheses and may itself contain spaces and parentheses, so the last ')' ends it.
pub fn parse_pid_stat(text: &str) -> Option<(u32, String, u64)> {
    let s = crate::procfs::parse_pid_stat(text)?;
    Some((s.pid, s.comm, s.ticks?))
}

/// The effective uid from /proc/self/status ("Uid: real effective saved fs").
pub fn parse_euid(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The first tracefs mount point in /proc/self/mounts (octal escapes such as \040 decoded).
pub fn parse_tracefs_mount(mounts: &str) -> Option<String> {
    mounts.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        let (_dev, dir, fstype) = (f.next()?, f.next()?, f.next()?);
        (fstype == "tracefs").then(|| unescape_mount(dir))
    })
}

fn unescape_mount(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c));
        if b[i] == b'\\' && octal {
            let v = u32::from(b[i + 1] - b'0') * 64
                + u32::from(b[i + 2] - b'0') * 8
                + u32::from(b[i + 3] - b'0');
            out.push(u8::try_from(v).unwrap_or(b'?'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether the head of /proc/kallsyms lists symbols, and whether any address is non-zero.
pub fn parse_kallsyms_head(text: &str) -> Kallsyms {
    let mut k = Kallsyms::default();
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let (Some(addr), Some(_kind), Some(_name)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let Ok(a) = u64::from_str_radix(addr, 16) else {
            continue;
        };
        k.readable = true;
        if a != 0 {
            k.addresses = true;
            break;
        }
    }
    k
}

/// Turbo state from intel_pstate's no_turbo (1 = off) or cpufreq's boost (1 = on).
pub fn parse_turbo(no_turbo: Option<&str>, boost: Option<&str>) -> Option<Turbo> {
    if let Some(v) = no_turbo.and_then(|s| s.trim().parse::<u8>().ok()) {
        return Some(Turbo {
            enabled: v == 0,
            control: "intel_pstate".into(),
        });
    }
    let v = boost.and_then(|s| s.trim().parse::<u8>().ok())?;
    Some(Turbo {
        enabled: v != 0,
        control: "cpufreq".into(),
    })
}

fn pct(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| 100.0 * part as f64 / whole as f64)
}

/// Busy and stolen shares of a span of aggregate CPU ticks.
pub fn cpu_shares(d: &CpuTicks) -> (Option<f64>, Option<f64>) {
    let total = d.total();
    let busy = total - d.idle - d.iowait - d.steal;
    (pct(busy, total), pct(d.steal, total))
}

/// Processes whose CPU time grew by at least [`BUSY_PROCESS_PCT`] of a CPU between two
/// readings (pid -> (comm, ticks)) `sample_s` seconds apart, busiest first, at most five.
pub fn busy_processes(
    before: &BTreeMap<u32, (String, u64)>,
    after: &BTreeMap<u32, (String, u64)>,
    sample_s: f64,
    ticks_per_s: u64,
) -> Vec<BusyProcess> {
    if sample_s <= 0.0 || ticks_per_s == 0 {
        return Vec::new();
    }
    let mut v: Vec<BusyProcess> = after
        .iter()
        .filter_map(|(pid, (comm, t1))| {
            let (_, t0) = before.get(pid)?;
            let cpu_pct = 100.0 * t1.saturating_sub(*t0) as f64 / (ticks_per_s as f64 * sample_s);
            (cpu_pct >= BUSY_PROCESS_PCT).then(|| BusyProcess {
                pid: *pid,
                comm: comm.clone(),
                cpu_pct,
            })
        })
        .collect();
    v.sort_by(|a, b| b.cpu_pct.total_cmp(&a.cpu_pct).then(a.pid.cmp(&b.pid)));
    v.truncate(5);
    v
}

// ---------------------------------------------------------------------------------------
// Gathering (reads the live system)

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

fn read_i64(path: &str) -> Option<i64> {
    read_trim(path)?.parse().ok()
}

/// CPU time of every process but this one: pid -> (comm, utime + stime). The name is any
/// user's choice (prctl PR_SET_NAME, /proc/self/comm): kept on one line, its controls
/// escaped ([`crate::term::line`]), so that it can neither forge a line of the doctor's nor
/// make the run that records it unexportable (#29 item 8).
fn process_ticks(own: u32) -> BTreeMap<u32, (String, u64)> {
    let mut m = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return m;
    };
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if pid == own {
            continue;
        }
        // A process may exit between the listing and the read; it is simply skipped.
        if let Some((p, comm, t)) = std::fs::read_to_string(e.path().join("stat"))
            .ok()
            .and_then(|s| parse_pid_stat(&s))
        {
            m.insert(p, (crate::term::line(&comm).into_owned(), t));
        }
    }
    m
}

fn kallsyms() -> Kallsyms {
    // The file is megabytes long; its first 64 KiB tell whether addresses are shown.
    let mut head = Vec::new();
    match std::fs::File::open("/proc/kallsyms") {
        Ok(f) => {
            let _ = f.take(64 << 10).read_to_end(&mut head);
            parse_kallsyms_head(&String::from_utf8_lossy(&head))
        }
        Err(_) => Kallsyms::default(),
    }
}

fn tracefs() -> Tracefs {
    let supported = read_trim("/proc/filesystems").is_some_and(|s| {
        s.lines()
            .any(|l| l.split_whitespace().last() == Some("tracefs"))
    });
    let mounted_at = read_trim("/proc/self/mounts").and_then(|m| parse_tracefs_mount(&m));
    // Opening trace_marker for writing changes nothing until something is written.
    let writable = mounted_at.as_ref().is_some_and(|dir| {
        std::fs::OpenOptions::new()
            .write(true)
            .open(std::path::Path::new(dir).join("trace_marker"))
            .is_ok()
    });
    Tracefs {
        supported,
        mounted_at,
        writable,
    }
}

/// Reads the facts from the live system, watching the CPUs for `sample` (use [`SAMPLE`]).
pub fn gather(fingerprint: Fingerprint, sample: Duration) -> Facts {
    let own = std::process::id();
    let stat0 = crate::procfs::read_stat()
        .ok()
        .and_then(|s| vmstat::stat_from(&s));
    let procs0 = process_ticks(own);
    let t0 = crate::sys::monotonic_ns();
    std::thread::sleep(sample);
    let stat1 = crate::procfs::read_stat()
        .ok()
        .and_then(|s| vmstat::stat_from(&s));
    let procs1 = process_ticks(own);
    let sample_s = crate::sys::monotonic_ns().saturating_sub(t0) as f64 / 1e9;
    let (busy_pct, steal_pct) = match (&stat0, &stat1) {
        (Some(a), Some(b)) => cpu_shares(&b.cpu.since(&a.cpu)),
        _ => (None, None),
    };
    let steal_since_boot_pct = stat0.and_then(|s| pct(s.cpu.steal, s.cpu.total()));
    Facts {
        turbo: parse_turbo(
            read_trim("/sys/devices/system/cpu/intel_pstate/no_turbo").as_deref(),
            read_trim("/sys/devices/system/cpu/cpufreq/boost").as_deref(),
        ),
        clocksources_available: read_trim(
            "/sys/devices/system/clocksource/clocksource0/available_clocksource",
        )
        .map(|s| s.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default(),
        sample_s,
        busy_pct,
        steal_pct,
        steal_since_boot_pct,
        busy_processes: busy_processes(&procs0, &procs1, sample_s, crate::sys::clock_ticks()),
        perf_event_paranoid: read_i64("/proc/sys/kernel/perf_event_paranoid"),
        kptr_restrict: read_i64("/proc/sys/kernel/kptr_restrict"),
        euid: read_trim("/proc/self/status").and_then(|s| parse_euid(&s)),
        tracefs: tracefs(),
        kallsyms: kallsyms(),
        dirty_kib: super::read_dirty_kib(),
        proactive_reclaim: proactive_reclaim(std::path::Path::new("/sys")),
        other_sysperfs: crate::harness::janitor::other_sysperfs(),
        foreign_tracing: crate::trace::tracefs::look(crate::trace::tracefs::foreign_tracing)
            .unwrap_or_default()
            .iter()
            .map(|t| crate::term::line(t).into_owned())
            .collect(),
        store_sslmode: None,
        variance: None,
        fingerprint,
    }
}

/// The fingerprint and the facts of the live system, then the findings: what `sysperf doctor`
/// and the start of `sysperf run` call.
pub fn examine() -> (Facts, Vec<Finding>) {
    let facts = gather(fingerprint::collect(), SAMPLE);
    let findings = diagnose(&facts);
    (facts, findings)
}

// ---------------------------------------------------------------------------------------
// The checks (pure)

fn finding(id: &str, severity: Severity, title: String, detail: &str, fix: String) -> Finding {
    Finding {
        id: id.into(),
        severity,
        title,
        detail: detail.into(),
        fix,
    }
}

fn check_governor(f: &Facts, out: &mut Vec<Finding>) {
    match f.fingerprint.cpufreq_governor.as_deref() {
        Some("performance") => {}
        Some(g) => out.push(finding(
            "governor",
            Severity::Warn,
            format!("CPU frequency governor is '{g}'"),
            "the clock speed follows the load, so a benchmark's first milliseconds run slower than its last and two runs differ with the governor's timing",
            "sudo cpupower frequency-set -g performance (or: echo performance | sudo tee /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor)".into(),
        )),
        None => out.push(finding(
            "governor",
            Severity::Info,
            "no CPU frequency control is visible".into(),
            "this machine exposes no cpufreq governor (usual in VMs and with firmware-managed frequency); the clock speed is set by the host or firmware and cannot be checked from here",
            "on a VM, set the host's governor to performance and compare only runs from the same host; on bare metal, load a cpufreq driver (e.g. sudo modprobe acpi-cpufreq) so it can be checked".into(),
        )),
    }
}

fn check_turbo(f: &Facts, out: &mut Vec<Finding>) {
    let Some(t) = &f.turbo else { return };
    if !t.enabled {
        return;
    }
    let fix = if t.control == "intel_pstate" {
        "echo 1 | sudo tee /sys/devices/system/cpu/intel_pstate/no_turbo"
    } else {
        "echo 0 | sudo tee /sys/devices/system/cpu/cpufreq/boost"
    };
    out.push(finding(
        "turbo",
        Severity::Warn,
        "turbo boost is on".into(),
        "the CPU runs above its base clock while it is cool and the other cores are idle, so results depend on temperature and on what else runs",
        fix.into(),
    ));
}

fn check_smt(f: &Facts, out: &mut Vec<Finding>) {
    let Some(smt) = f.fingerprint.smt.as_deref() else {
        return;
    };
    if smt == "on (active)" || smt == "on" {
        out.push(finding(
            "smt",
            Severity::Warn,
            "SMT (hyper-threading) is on".into(),
            "two hardware threads share one core's caches and execution units: a benchmark slows down whenever its sibling thread is busy",
            "echo off | sudo tee /sys/devices/system/cpu/smt/control, or give --cpu one thread per core (siblings: /sys/devices/system/cpu/cpuN/topology/thread_siblings_list)".into(),
        ));
    }
}

fn check_mitigations(f: &Facts, out: &mut Vec<Finding>) {
    let v = &f.fingerprint.vulnerabilities;
    let on: Vec<&str> = v
        .iter()
        .filter(|(_, s)| s.starts_with("Mitigation"))
        .map(|(k, _)| k.as_str())
        .collect();
    let open: Vec<&str> = v
        .iter()
        .filter(|(_, s)| s.starts_with("Vulnerable"))
        .map(|(k, _)| k.as_str())
        .collect();
    let off = f
        .fingerprint
        .kernel_cmdline
        .as_deref()
        .is_some_and(|c| c.split_whitespace().any(|a| a == "mitigations=off"));
    if on.is_empty() && open.is_empty() && !off {
        return;
    }
    let mut title = format!("{} CPU vulnerability mitigation(s) on", on.len());
    if !on.is_empty() {
        title.push_str(&format!(" ({})", on.join(", ")));
    }
    if !open.is_empty() {
        title.push_str(&format!("; unmitigated: {}", open.join(", ")));
    }
    if off {
        title.push_str("; booted with mitigations=off");
    }
    out.push(finding(
        "mitigations",
        Severity::Info,
        title,
        "mitigations add work to system calls, context switches and page faults, so figures compare only with runs under the same set (every run's fingerprint records it); this is a comparability note, not something to switch off",
        "compare runs with identical mitigations (compare lists fingerprint differences); to measure what they cost, boot a test machine with mitigations=off and compare the two runs".into(),
    ));
}

fn check_thp(f: &Facts, out: &mut Vec<Finding>) {
    if f.fingerprint.thp.as_deref() == Some("always") {
        out.push(finding(
            "thp",
            Severity::Warn,
            "transparent huge pages are 'always'".into(),
            "the kernel may back anonymous memory with 2 MiB pages: the paper's paging tests turn them off for their regions, but seqpage-thp and LEBench's big forks (le-fork-N) fault or copy once per huge page instead of once per page and vary with memory fragmentation",
            "echo madvise | sudo tee /sys/kernel/mm/transparent_hugepage/enabled".into(),
        ));
    }
}

fn check_clocksource(f: &Facts, out: &mut Vec<Finding>) {
    let Some(cs) = f.fingerprint.clocksource.as_deref() else {
        return;
    };
    if cs == "tsc" {
        return;
    }
    let tsc_available = f.clocksources_available.iter().any(|c| c == "tsc");
    let fix = if tsc_available {
        "echo tsc | sudo tee /sys/devices/system/clocksource/clocksource0/current_clocksource"
            .to_string()
    } else {
        "compare only runs made with the same clocksource (the fingerprint records it); if the TSC is stable on this CPU, boot with tsc=reliable to make it available".to_string()
    };
    let slow = matches!(cs, "hpet" | "acpi_pm" | "pit" | "jiffies");
    if slow {
        out.push(finding(
            "clocksource",
            Severity::Warn,
            format!("slow clocksource '{cs}'"),
            "every clock read goes to a slow device (microseconds instead of tens of nanoseconds): the timer overhead grows and anything that reads the time slows down",
            fix,
        ));
    } else {
        out.push(finding(
            "clocksource",
            Severity::Info,
            format!("clocksource is '{cs}', not the TSC"),
            "clock reads cost more than with the TSC (for kvm-clock: a paravirtual page shared with the host); the timer overhead sysperf subtracts includes it",
            fix,
        ));
    }
}

fn check_virtualization(f: &Facts, out: &mut Vec<Finding>) {
    let Some(v) = f.fingerprint.virtualization.as_deref() else {
        return;
    };
    if v == "none" {
        return;
    }
    out.push(finding(
        "virtualization",
        Severity::Info,
        format!("running virtualized ({v})"),
        "the host schedules the virtual CPUs: other guests, host interrupts and steal time add noise, and figures compare only with runs on the same host or instance type",
        "use dedicated (pinned, not overcommitted) vCPUs and compare with runs from the same instance type; the fingerprint records the hypervisor".into(),
    ));
}

fn check_steal(f: &Facts, out: &mut Vec<Finding>) {
    match (f.steal_pct, f.steal_since_boot_pct) {
        (Some(s), _) if s >= STEAL_PCT => out.push(finding(
            "steal",
            Severity::Warn,
            format!("the hypervisor stole {s:.1}% of CPU time during a {:.1} s sample", f.sample_s),
            "stolen time is time the benchmark's virtual CPU was not running, which lengthens elapsed times at random",
            "move to dedicated vCPUs or a quieter host and rerun; sysperf also warns per benchmark when time was stolen".into(),
        )),
        (_, Some(s)) if s >= 1.0 => out.push(finding(
            "steal",
            Severity::Info,
            format!("{s:.1}% of CPU time since boot was stolen by the hypervisor"),
            "none was stolen during the sample, but the host has been busy before; a run can meet it again",
            "prefer dedicated vCPUs; sysperf warns per benchmark when time was stolen during it".into(),
        )),
        _ => {}
    }
}

fn check_load(f: &Facts, out: &mut Vec<Finding>) {
    let (Some([l1, _, _]), Some(n)) = (f.fingerprint.loadavg, f.fingerprint.threads) else {
        return;
    };
    if l1 > 0.5 * n as f64 {
        out.push(finding(
            "load",
            Severity::Warn,
            format!("load average {l1:.2} on {n} CPUs"),
            "over the last minute other runnable processes competed for the CPUs and caches the benchmarks use",
            format!(
                "stop the other work (see the busy processes), or wait until the 1-minute load is below {:.1} and run 'sysperf doctor' again",
                0.5 * n as f64
            ),
        ));
    }
}

fn check_dirty(f: &Facts, out: &mut Vec<Finding>) {
    let Some(d) = f.dirty_kib else { return };
    if d >= super::DIRTY_KIB {
        out.push(finding(
            "writeback",
            Severity::Warn,
            format!("{:.0} MiB of dirty pages waiting to be written", d as f64 / 1024.0),
            "the kernel's writeback of earlier work competes with the benchmarks for the CPUs, the memory and the disk, so the first run after it differs from the next",
            "wait for it ('sync' returns when it is written), or run with 'sysperf run --settle 60', which waits until the machine is quiet".into(),
        ));
    }
}

fn check_others(f: &Facts, out: &mut Vec<Finding>) {
    if f.other_sysperfs.is_empty() {
        return;
    }
    let pids: Vec<String> = f.other_sysperfs.iter().map(|p| p.to_string()).collect();
    out.push(finding(
        "others",
        Severity::Warn,
        format!("another sysperf is running (pid {})", pids.join(", ")),
        "two sysperf runs at once share the CPUs, caches and memory, so each measures the other too",
        "wait for it to end ('sysperf runs' shows an incomplete run while it measures) and run again".into(),
    ));
}

fn check_tracers(f: &Facts, out: &mut Vec<Finding>) {
    if f.foreign_tracing.is_empty() {
        return;
    }
    out.push(finding(
        "tracer",
        Severity::Warn,
        format!(
            "someone else is tracing the kernel: {}",
            f.foreign_tracing.join("; ")
        ),
        "each enabled trace event or tracer runs on every hit, recorded or not, so system calls, \
         switches and faults measure slower than on a machine nobody traces",
        "stop it before measuring (trace-cmd reset, or echo 0 > tracing_on and echo > set_event \
         in that instance), or compare only with runs made under the same tracing"
            .into(),
    ));
}

/// DAMON's running schemes that take memory away from processes (`pageout`, `lru_deprio`,
/// `cold`) and the reclaim modules turned on, under the sysfs root `sys`.
fn proactive_reclaim(sys: &std::path::Path) -> Vec<String> {
    let read = |p: std::path::PathBuf| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let dirs = |p: std::path::PathBuf| -> Vec<std::path::PathBuf> {
        let mut v: Vec<_> = std::fs::read_dir(p)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        v.sort();
        v
    };
    let mut out = Vec::new();
    for k in dirs(sys.join("kernel/mm/damon/admin/kdamonds")) {
        if read(k.join("state")) != "on" {
            continue;
        }
        let name = k
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for c in dirs(k.join("contexts")) {
            let ops = read(c.join("operations"));
            for sch in dirs(c.join("schemes")) {
                let action = read(sch.join("action"));
                if matches!(action.as_str(), "pageout" | "lru_deprio" | "cold") {
                    out.push(
                        crate::term::line(&format!("kdamond {name}: {action} ({ops})"))
                            .into_owned(),
                    );
                }
            }
        }
    }
    for m in ["damon_reclaim", "damon_lru_sort"] {
        if read(sys.join("module").join(m).join("parameters/enabled")) == "Y" {
            out.push(format!("{m} enabled"));
        }
    }
    out
}

fn check_reclaim(f: &Facts, out: &mut Vec<Finding>) {
    if f.proactive_reclaim.is_empty() {
        return;
    }
    out.push(finding(
        "reclaim",
        Severity::Info,
        format!(
            "the kernel pages out memory it finds cold: {}",
            f.proactive_reclaim.join("; ")
        ),
        "DAMON swaps out or drops pages that were not touched for a while, a benchmark's included: \
         a paging test may fault them back in its timed region, a file test may read them again \
         from disk, and resident sizes come out smaller (anonymous pages only while a swap area \
         is on)",
        "turn it off while measuring (echo off > /sys/kernel/mm/damon/admin/kdamonds/N/state), or \
         compare only with runs made under the same reclaim"
            .into(),
    ));
}

fn check_busy(f: &Facts, out: &mut Vec<Finding>) {
    let others = f
        .busy_processes
        .iter()
        .map(|p| format!("{} {} ({:.0}% of a CPU)", p.pid, p.comm, p.cpu_pct))
        .collect::<Vec<_>>();
    if let Some(b) = f.busy_pct.filter(|b| *b >= BUSY_PCT || !others.is_empty()) {
        let who = if others.is_empty() {
            "no single process stood out (many short ones, or kernel threads)".to_string()
        } else {
            others.join(", ")
        };
        let pids: Vec<String> = f.busy_processes.iter().map(|p| p.pid.to_string()).collect();
        let fix = if pids.is_empty() {
            "find the work with top or pidstat 1; wait for it to end, or let the run wait for a quiet machine (sysperf run --settle SECONDS), or keep it off the benchmark CPUs (taskset, and sysperf run --cpu)".to_string()
        } else {
            // Another user's work is theirs to stop (#43): the advice is to wait, and to pause
            // only one's own.
            format!(
                    "wait for it to end, or let the run wait for a quiet machine (sysperf run --settle SECONDS); if it is your own work, you may pause it (kill -STOP {0}; resume with kill -CONT {0}); or keep it off the benchmark CPUs (taskset, and sysperf run --cpu)",
                    pids.join(" ")
                )
        };
        out.push(Finding {
            id: "busy".into(),
            severity: Severity::Warn,
            title: format!(
                "other work used {b:.0}% of the CPUs during a {:.1} s sample",
                f.sample_s
            ),
            detail: format!("busiest: {who}"),
            fix,
        });
    }
}

fn check_cgroup(f: &Facts, out: &mut Vec<Finding>) {
    let fp = &f.fingerprint;
    if let Some(q) = fp.cgroup_cpu_limit {
        let below = fp.threads.is_some_and(|n| q < n as f64);
        out.push(finding(
            "cgroup_cpu",
            if below { Severity::Warn } else { Severity::Info },
            format!("this cgroup has a CPU quota of {q:.2} CPUs"),
            "once the cgroup has used its quota in a period (100 ms by default) the kernel throttles it, pausing benchmarks mid-loop",
            "run sysperf outside the quota (e.g. sudo systemd-run --scope -p CPUQuota= sysperf run) or raise the cgroup's cpu.max (v1: cpu.cfs_quota_us)".into(),
        ));
    }
    if let Some(b) = fp.cgroup_memory_limit_bytes {
        out.push(finding(
            "cgroup_memory",
            Severity::Info,
            format!(
                "this cgroup has a memory limit of {:.1} GiB",
                b as f64 / (1u64 << 30) as f64
            ),
            "near the limit the kernel reclaims this cgroup's pages, which changes the paging tests' fault counts and times",
            "raise the cgroup's memory.max (v1: memory.limit_in_bytes) or run sysperf outside the cgroup".into(),
        ));
    }
}

fn check_perf(f: &Facts, out: &mut Vec<Finding>) {
    let Some(p) = f.perf_event_paranoid else {
        return;
    };
    if p <= 1 {
        return;
    }
    if f.euid == Some(0) {
        out.push(finding(
            "perf_event_paranoid",
            Severity::Info,
            format!("perf_event_paranoid is {p}; root is exempt"),
            "kernel profiling works for root; other users are limited to their own user-space code",
            "nothing to do as root; for other users: sudo sysctl -w kernel.perf_event_paranoid=1"
                .into(),
        ));
    } else {
        out.push(finding(
            "perf_event_paranoid",
            Severity::Warn,
            format!("perf_event_paranoid is {p}: this user cannot profile the kernel"),
            "kernel profiles (where system time goes) need perf_event_paranoid <= 1 or root",
            "sudo sysctl -w kernel.perf_event_paranoid=1 (or run sysperf as root)".into(),
        ));
    }
}

fn check_tracefs(f: &Facts, out: &mut Vec<Finding>) {
    let t = &f.tracefs;
    let root = f.euid == Some(0);
    match (&t.mounted_at, t.writable) {
        (Some(_), true) => {}
        (Some(dir), false) => out.push(finding(
            "tracefs",
            Severity::Warn,
            format!("tracefs at {dir} is not writable by this user"),
            "kernel tracing (a circular buffer of kernel events) needs write access to tracefs",
            "run sysperf as root for kernel tracing".into(),
        )),
        (None, _) if !t.supported => out.push(finding(
            "tracefs",
            Severity::Warn,
            "this kernel has no tracefs".into(),
            "kernel tracing is unavailable on this kernel",
            "use a kernel built with CONFIG_FTRACE (most distribution kernels are)".into(),
        )),
        // Root: `sysperf trace` mounts it in a private mount namespace of its own, so an
        // unmounted tracefs is nothing to fix.
        (None, _) if root => {}
        (None, _) => out.push(finding(
            "tracefs",
            Severity::Warn,
            "tracefs is not mounted, and mounting it needs root".into(),
            "kernel tracing needs tracefs; 'sysperf trace' run as root mounts it privately",
            "run sysperf trace as root, or have it mounted: sudo mount -t tracefs nodev /sys/kernel/tracing".into(),
        )),
    }
}

fn check_kallsyms(f: &Facts, out: &mut Vec<Finding>) {
    let k = f.kallsyms;
    if k.readable && k.addresses {
        return;
    }
    let restrict = f
        .kptr_restrict
        .map(|r| format!(" (kptr_restrict={r})"))
        .unwrap_or_default();
    if k.readable {
        // The kernel's rule (kallsyms_show_value): kptr_restrict 2 hides them from everyone;
        // 1 shows them to CAP_SYSLOG only; 0 shows them to everyone when perf_event_paranoid
        // is at most 1, else to CAP_SYSLOG only. Name the setting that hides them here.
        let paranoid = f.perf_event_paranoid.unwrap_or(2);
        let fix = match f.kptr_restrict {
            Some(r) if r >= 2 => "sudo sysctl -w kernel.kptr_restrict=1 and run sysperf as root (2 hides them even from root)".to_string(),
            Some(0) if paranoid > 1 => format!(
                "they are hidden because kernel.perf_event_paranoid is {paranoid} (above 1): run sysperf as root, or sudo sysctl -w kernel.perf_event_paranoid=1"
            ),
            _ => "run sysperf as root (CAP_SYSLOG), or sudo sysctl -w kernel.kptr_restrict=0 with kernel.perf_event_paranoid at most 1".into(),
        };
        out.push(finding(
            "kallsyms",
            Severity::Warn,
            format!("kernel symbol addresses are hidden{restrict}"),
            "/proc/kallsyms shows zero addresses, so kernel profiles and traces cannot name kernel functions",
            fix,
        ));
    } else {
        out.push(finding(
            "kallsyms",
            Severity::Warn,
            "/proc/kallsyms is not readable".into(),
            "kernel profiles and traces cannot name kernel functions without it",
            "run sysperf as root (and check that /proc is mounted)".into(),
        ));
    }
}

/// Every check over the facts: warnings first, then notes, each group in check order.
pub fn diagnose(f: &Facts) -> Vec<Finding> {
    let mut out = Vec::new();
    check_governor(f, &mut out);
    check_turbo(f, &mut out);
    check_smt(f, &mut out);
    check_mitigations(f, &mut out);
    check_thp(f, &mut out);
    check_clocksource(f, &mut out);
    check_virtualization(f, &mut out);
    check_steal(f, &mut out);
    check_load(f, &mut out);
    check_busy(f, &mut out);
    check_dirty(f, &mut out);
    check_others(f, &mut out);
    check_tracers(f, &mut out);
    check_reclaim(f, &mut out);
    check_cgroup(f, &mut out);
    check_perf(f, &mut out);
    check_tracefs(f, &mut out);
    check_kallsyms(f, &mut out);
    check_variance(f, &mut out);
    check_store_tls(f, &mut out);
    // Stable: the check order is kept within each severity.
    out.sort_by_key(|x| x.severity == Severity::Info);
    out
}

/// A test's run-to-run CV from which doctor warns: a comparison of one run a side then needs
/// a change of about 3x this (two runs' shifts, at 95%) before it can call it.
pub const RUN_CV_PCT: f64 = 3.0;

fn check_variance(f: &Facts, out: &mut Vec<Finding>) {
    let Some(v) = &f.variance else { return };
    if v.is_empty() {
        out.push(finding(
            "variance",
            Severity::Info,
            "run-to-run variance of this machine: not known yet".into(),
            "compare widens a one-run-a-side interval by the machine's run-to-run variance, estimated from at least three stored runs of this host, kernel and CPU; until then its intervals cover the trials within each run only",
            "sysperf noise (a few minutes), or sysperf run --repeat 3".into(),
        ));
        return;
    }
    let mut cvs: Vec<(f64, &str)> = v
        .iter()
        .map(|e| (e.between_cv() * 100.0, e.test.as_str()))
        .collect();
    cvs.sort_by(|a, b| b.0.total_cmp(&a.0));
    let large: Vec<String> = cvs
        .iter()
        .filter(|(cv, _)| *cv > RUN_CV_PCT)
        .map(|(cv, t)| format!("{t} {cv:.1}%"))
        .collect();
    let runs = v.iter().map(|e| e.runs).max().unwrap_or(0);
    if large.is_empty() {
        return;
    }
    let shown = large.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    let more = large.len().saturating_sub(5);
    out.push(finding(
        "variance",
        Severity::Warn,
        format!(
            "run-to-run variance is large: {} of {} tests shift by more than {RUN_CV_PCT}% from run to run ({shown}{}; from {runs} stored runs)",
            large.len(),
            v.len(),
            if more > 0 { format!(", {more} more") } else { String::new() }
        ),
        "two runs of this unchanged machine differ by this much, so a comparison of one run a side cannot call a change smaller than about three times it; compare allows for it, and says inconclusive where it must",
        "compare groups of runs (sysperf run --repeat 5 --label NAME on each side), and look for the cause: sysperf doctor's other findings (governor, steal, busy processes)".into(),
    ));
}

/// A PostgreSQL store over TCP whose server's certificate is not checked to name its host
/// (#41): the fleet's runs cross a network, and below verify-full a machine in the middle can
/// stand in for the server.
fn check_store_tls(f: &Facts, out: &mut Vec<Finding>) {
    let Some(mode) = f.store_sslmode.as_deref() else {
        return;
    };
    if mode == "verify-full" {
        return;
    }
    out.push(finding(
        "store_tls",
        Severity::Warn,
        format!("the PostgreSQL store is reached over TCP with sslmode={mode}: its server's certificate is not checked to name its host"),
        "prefer and require take any certificate (require checks the chain only when root certificates are given), prefer goes without TLS when the server offers none, and verify-ca takes a certificate the roots signed for any host: a machine in the middle can then read and change the runs stored and fetched, and learn a salted proof of the password",
        "add sslmode=verify-full&sslrootcert=FILE to the store's URL (FILE: the server's CA certificate, or the server's own self-signed certificate), or set PGSSLMODE=verify-full and PGSSLROOTCERT=FILE".into(),
    ));
}

/// One line per finding, warnings first: for compare and the report to show beside a run.
pub fn findings_summary(findings: &[Finding]) -> Vec<String> {
    let mut v: Vec<&Finding> = findings.iter().collect();
    v.sort_by_key(|x| x.severity == Severity::Info);
    v.iter()
        .map(|x| {
            format!(
                "{}: {} (fix: {})",
                x.severity.as_str(),
                crate::term::line(&x.title),
                crate::term::line(&x.fix)
            )
        })
        .collect()
}

/// The text `sysperf doctor` prints.
pub fn render(facts: &Facts, findings: &[Finding]) -> String {
    let warns = findings
        .iter()
        .filter(|x| x.severity == Severity::Warn)
        .count();
    let mut s = format!(
        "sysperf doctor: {warns} warning(s), {} note(s) (CPUs sampled for {:.2} s)\n",
        findings.len() - warns,
        facts.sample_s
    );
    if findings.is_empty() {
        s.push_str("\nnothing found that would make results noisy or not comparable\n");
    }
    // Each part is one line: a newline in one (a stored finding's, an imported one's) is
    // escaped rather than allowed to start a line that looks like the doctor's.
    let line = crate::term::line;
    for x in findings {
        s.push_str(&format!(
            "\n{:<4}  {}: {}\n      {}\n      fix: {}\n",
            x.severity.as_str(),
            line(&x.id),
            line(&x.title),
            line(&x.detail),
            line(&x.fix)
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A quiet, well-tuned bare-metal machine run by root: nothing to report.
    fn quiet() -> Facts {
        Facts {
            fingerprint: Fingerprint {
                threads: Some(4),
                cpufreq_governor: Some("performance".into()),
                smt: Some("off".into()),
                thp: Some("madvise".into()),
                clocksource: Some("tsc".into()),
                virtualization: Some("none".into()),
                loadavg: Some([0.1, 0.1, 0.1]),
                vulnerabilities: [("meltdown".to_string(), "Not affected".to_string())].into(),
                ..Fingerprint::default()
            },
            turbo: Some(Turbo {
                enabled: false,
                control: "intel_pstate".into(),
            }),
            clocksources_available: vec!["tsc".into(), "hpet".into()],
            sample_s: 0.2,
            busy_pct: Some(1.0),
            steal_pct: Some(0.0),
            steal_since_boot_pct: Some(0.0),
            busy_processes: vec![],
            perf_event_paranoid: Some(1),
            kptr_restrict: Some(0),
            euid: Some(0),
            tracefs: Tracefs {
                supported: true,
                mounted_at: Some("/sys/kernel/tracing".into()),
                writable: true,
            },
            kallsyms: Kallsyms {
                readable: true,
                addresses: true,
            },
            dirty_kib: Some(1024),
            proactive_reclaim: vec![],
            other_sysperfs: vec![],
            foreign_tracing: vec![],
            store_sslmode: None,
            variance: None,
        }
    }

    #[test]
    fn someone_else_tracing_is_a_warning() {
        let mut f = quiet();
        assert!(diagnose(&f).iter().all(|x| x.id != "tracer"));
        f.foreign_tracing =
            vec!["tracefs instance perf: 1 event(s) enabled (sched:sched_switch)".into()];
        let w = one(&f, "tracer");
        assert_eq!(w.severity, Severity::Warn);
        assert!(w.title.contains("sched:sched_switch"), "{}", w.title);
    }

    #[test]
    fn another_sysperf_running_is_a_warning() {
        let mut f = quiet();
        f.other_sysperfs = vec![4242];
        let w = one(&f, "others");
        assert_eq!(w.severity, Severity::Warn);
        assert!(w.title.contains("4242"), "{}", w.title);
    }

    #[test]
    fn much_dirty_memory_is_a_warning() {
        let mut f = quiet();
        f.dirty_kib = Some(super::super::DIRTY_KIB);
        let w = one(&f, "writeback");
        assert_eq!(w.severity, Severity::Warn);
        assert!(w.title.starts_with("64 MiB"), "{}", w.title);
        assert!(w.fix.contains("--settle"), "{}", w.fix);
        f.dirty_kib = None;
        assert!(ids(&f).is_empty());
    }

    #[test]
    fn large_run_to_run_variance_is_a_warning_and_none_known_is_said() {
        let est = |test: &str, cv: f64| crate::model::VarianceEstimate {
            test: test.into(),
            within_var: 0.01f64.powi(2),
            between_var: cv.powi(2),
            runs: 6,
            trials: 30,
            updated_ns: 0,
            ..Default::default()
        };
        let mut f = quiet();
        f.variance = Some(vec![est("syscall", 0.01), est("forks0", 0.012)]);
        assert!(diagnose(&f).is_empty(), "{:?}", diagnose(&f));
        f.variance = Some(vec![est("syscall", 0.01), est("forks0", 0.08)]);
        let d = diagnose(&f);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].severity, Severity::Warn);
        assert!(
            d[0].title.contains("1 of 2 tests") && d[0].title.contains("forks0 8.0%"),
            "{}",
            d[0].title
        );
        f.variance = Some(vec![]);
        assert_eq!(ids(&f), vec![("variance".to_string(), Severity::Info)]);
    }

    fn ids(f: &Facts) -> Vec<(String, Severity)> {
        diagnose(f)
            .into_iter()
            .map(|x| (x.id, x.severity))
            .collect()
    }

    fn one(f: &Facts, id: &str) -> Finding {
        let all = diagnose(f);
        let mut it = all.iter().filter(|x| x.id == id);
        let x = it
            .next()
            .unwrap_or_else(|| panic!("no {id} in {all:?}"))
            .clone();
        assert!(it.next().is_none(), "two {id}");
        x
    }

    #[test]
    fn a_quiet_machine_has_nothing_to_report() {
        assert_eq!(ids(&quiet()), vec![]);
    }

    #[test]
    fn governor() {
        let mut f = quiet();
        f.fingerprint.cpufreq_governor = Some("powersave".into());
        let x = one(&f, "governor");
        assert_eq!(x.severity, Severity::Warn);
        assert!(x.title.contains("powersave"));
        assert!(x.fix.contains("performance"));
        f.fingerprint.cpufreq_governor = None;
        assert_eq!(one(&f, "governor").severity, Severity::Info);
    }

    #[test]
    fn turbo() {
        let mut f = quiet();
        f.turbo = Some(Turbo {
            enabled: true,
            control: "intel_pstate".into(),
        });
        assert!(one(&f, "turbo").fix.contains("no_turbo"));
        f.turbo = Some(Turbo {
            enabled: true,
            control: "cpufreq".into(),
        });
        assert!(one(&f, "turbo").fix.contains("cpufreq/boost"));
        f.turbo = None;
        assert_eq!(ids(&f), vec![]);
        assert_eq!(
            parse_turbo(Some("1\n"), Some("1")),
            Some(Turbo {
                enabled: false,
                control: "intel_pstate".into()
            })
        );
        assert!(parse_turbo(None, Some("1\n")).unwrap().enabled);
        assert!(!parse_turbo(None, Some("0")).unwrap().enabled);
        assert_eq!(parse_turbo(Some("x"), None), None);
        assert_eq!(parse_turbo(None, None), None);
    }

    #[test]
    fn smt() {
        let mut f = quiet();
        for (s, warn) in [
            ("on (active)", true),
            ("on", true),
            ("on (inactive)", false),
            ("notsupported", false),
            ("forceoff", false),
        ] {
            f.fingerprint.smt = Some(s.into());
            assert_eq!(ids(&f).iter().any(|(i, _)| i == "smt"), warn, "{s}");
        }
    }

    #[test]
    fn mitigations_are_a_comparability_note() {
        let mut f = quiet();
        f.fingerprint.vulnerabilities = [
            ("spectre_v2", "Mitigation: Retpolines; STIBP: disabled"),
            ("spectre_v1", "Mitigation: usercopy/swapgs barriers"),
            ("retbleed", "Vulnerable"),
            ("mds", "Not affected"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let x = one(&f, "mitigations");
        assert_eq!(x.severity, Severity::Info);
        assert!(
            x.title
                .contains("2 CPU vulnerability mitigation(s) on (spectre_v1, spectre_v2)"),
            "{}",
            x.title
        );
        assert!(x.title.contains("unmitigated: retbleed"), "{}", x.title);
        let mut off = quiet();
        off.fingerprint.kernel_cmdline = Some("root=/dev/vda mitigations=off".into());
        assert!(one(&off, "mitigations").title.contains("mitigations=off"));
    }

    #[test]
    fn thp_always_warns() {
        let mut f = quiet();
        f.fingerprint.thp = Some("always".into());
        let x = one(&f, "thp");
        assert_eq!(x.severity, Severity::Warn);
        assert!(x.fix.contains("madvise"));
        f.fingerprint.thp = Some("never".into());
        assert_eq!(ids(&f), vec![]);
    }

    #[test]
    fn clocksource() {
        let mut f = quiet();
        f.fingerprint.clocksource = Some("hpet".into());
        let x = one(&f, "clocksource");
        assert_eq!(x.severity, Severity::Warn);
        assert!(x.fix.starts_with("echo tsc"));
        f.fingerprint.clocksource = Some("kvm-clock".into());
        f.clocksources_available = vec!["kvm-clock".into()];
        let x = one(&f, "clocksource");
        assert_eq!(x.severity, Severity::Info);
        assert!(x.fix.contains("same clocksource"));
    }

    #[test]
    fn virtualization_and_steal() {
        let mut f = quiet();
        f.fingerprint.virtualization = Some("kvm".into());
        assert_eq!(one(&f, "virtualization").severity, Severity::Info);
        f.steal_pct = Some(5.0);
        let x = one(&f, "steal");
        assert_eq!(x.severity, Severity::Warn);
        assert!(x.title.contains("5.0%"), "{}", x.title);
        f.steal_pct = Some(0.0);
        f.steal_since_boot_pct = Some(3.0);
        assert_eq!(one(&f, "steal").severity, Severity::Info);
        f.steal_since_boot_pct = Some(0.1);
        assert!(!ids(&f).iter().any(|(i, _)| i == "steal"));
    }

    #[test]
    fn load_and_busy_processes() {
        let mut f = quiet();
        f.fingerprint.loadavg = Some([2.5, 1.0, 0.5]);
        let x = one(&f, "load");
        assert!(x.title.contains("2.50 on 4 CPUs"), "{}", x.title);
        assert!(x.fix.contains("below 2.0"), "{}", x.fix);
        f.busy_pct = Some(40.0);
        f.busy_processes = vec![BusyProcess {
            pid: 4242,
            comm: "rustc".into(),
            cpu_pct: 95.0,
        }];
        let x = one(&f, "busy");
        assert!(x.title.contains("40%"), "{}", x.title);
        assert!(
            x.detail.contains("4242 rustc (95% of a CPU)"),
            "{}",
            x.detail
        );
        assert!(x.fix.contains("kill -STOP 4242"), "{}", x.fix);
        // Waiting comes first; pausing is for one's own work only (#43).
        let wait = x.fix.find("--settle").expect("settle advised");
        assert!(wait < x.fix.find("kill -STOP").unwrap(), "{}", x.fix);
        assert!(x.fix.contains("if it is your own work"), "{}", x.fix);
        // Busy without a single culprit still warns, with a generic fix.
        f.busy_processes.clear();
        assert!(one(&f, "busy").fix.contains("top"));
        f.busy_pct = Some(2.0);
        assert!(!ids(&f).iter().any(|(i, _)| i == "busy"));
    }

    #[test]
    fn a_finding_prints_each_part_on_its_own_line() {
        let mut f = quiet();
        f.busy_pct = Some(40.0);
        // As an imported or older stored finding could hold it (live names are escaped
        // where they are read).
        f.busy_processes = vec![BusyProcess {
            pid: 4242,
            comm: "ok\n  ! FAKE".into(),
            cpu_pct: 95.0,
        }];
        let findings = diagnose(&f);
        let text = render(&f, &findings);
        assert!(
            !text.lines().any(|l| l.trim_start().starts_with("! FAKE")),
            "{text}"
        );
        assert!(text.contains("4242 ok\\x0a  ! FAKE"), "{text}");
        for l in findings_summary(&findings) {
            assert!(!l.contains('\n'), "{l}");
        }
    }

    #[test]
    fn cgroup_limits() {
        let mut f = quiet();
        f.fingerprint.cgroup_cpu_limit = Some(1.5);
        f.fingerprint.cgroup_memory_limit_bytes = Some(2 << 30);
        let all = ids(&f);
        assert!(all.contains(&("cgroup_cpu".into(), Severity::Warn)));
        assert!(all.contains(&("cgroup_memory".into(), Severity::Info)));
        assert!(one(&f, "cgroup_memory").title.contains("2.0 GiB"));
        f.fingerprint.cgroup_cpu_limit = Some(8.0);
        assert_eq!(one(&f, "cgroup_cpu").severity, Severity::Info);
    }

    #[test]
    fn perf_event_paranoid() {
        let mut f = quiet();
        f.perf_event_paranoid = Some(2);
        assert_eq!(one(&f, "perf_event_paranoid").severity, Severity::Info);
        f.euid = Some(1000);
        let x = one(&f, "perf_event_paranoid");
        assert_eq!(x.severity, Severity::Warn);
        assert!(x.fix.contains("perf_event_paranoid=1"));
        f.perf_event_paranoid = Some(-1);
        assert!(!ids(&f).iter().any(|(i, _)| i == "perf_event_paranoid"));
    }

    #[test]
    fn tracefs() {
        let mut f = quiet();
        f.tracefs.writable = false;
        assert_eq!(one(&f, "tracefs").severity, Severity::Warn);
        f.tracefs.mounted_at = None;
        // Root: sysperf trace mounts it privately, so there is nothing to report.
        assert!(
            ids(&f).iter().all(|(id, _)| id != "tracefs"),
            "{:?}",
            ids(&f)
        );
        f.euid = Some(1000);
        let x = one(&f, "tracefs");
        assert_eq!(x.severity, Severity::Warn);
        assert!(x.title.contains("needs root") && x.fix.contains("mount -t tracefs"));
        f.tracefs.supported = false;
        assert!(one(&f, "tracefs").fix.contains("CONFIG_FTRACE"));
    }

    #[test]
    fn kallsyms() {
        let mut f = quiet();
        f.kallsyms.addresses = false;
        f.kptr_restrict = Some(1);
        let x = one(&f, "kallsyms");
        assert!(x.title.contains("kptr_restrict=1"));
        assert!(x.fix.contains("CAP_SYSLOG"), "{}", x.fix);
        // kptr_restrict 0 hides them only through perf_event_paranoid: name that.
        f.kptr_restrict = Some(0);
        f.perf_event_paranoid = Some(3);
        let x = one(&f, "kallsyms");
        assert!(x.fix.contains("perf_event_paranoid is 3"), "{}", x.fix);
        f.kptr_restrict = Some(2);
        assert!(one(&f, "kallsyms").fix.contains("even from root"));
        f.kallsyms.readable = false;
        assert!(one(&f, "kallsyms").title.contains("not readable"));
        assert_eq!(
            parse_kallsyms_head("ffffffff81000000 T _stext\n"),
            Kallsyms {
                readable: true,
                addresses: true
            }
        );
        assert_eq!(
            parse_kallsyms_head("0000000000000000 T _stext\n0000000000000000 t x [mod]\n"),
            Kallsyms {
                readable: true,
                addresses: false
            }
        );
        assert_eq!(parse_kallsyms_head(""), Kallsyms::default());
        assert_eq!(parse_kallsyms_head("zz T x\n"), Kallsyms::default());
    }

    #[test]
    fn warnings_come_first_and_every_finding_has_a_fix() {
        let mut f = Facts::default();
        f.fingerprint.thp = Some("always".into());
        f.fingerprint.virtualization = Some("kvm".into());
        f.fingerprint.smt = Some("on (active)".into());
        f.fingerprint.clocksource = Some("kvm-clock".into());
        f.fingerprint.cgroup_memory_limit_bytes = Some(1 << 30);
        f.perf_event_paranoid = Some(3);
        let all = diagnose(&f);
        let first_info = all
            .iter()
            .position(|x| x.severity == Severity::Info)
            .unwrap();
        assert!(all[first_info..]
            .iter()
            .all(|x| x.severity == Severity::Info));
        assert!(first_info > 0);
        for x in &all {
            assert!(
                !x.fix.trim().is_empty() && !x.detail.is_empty() && !x.title.is_empty(),
                "{x:?}"
            );
        }
        let summary = findings_summary(&all);
        assert_eq!(summary.len(), all.len());
        assert!(summary[0].starts_with("warn: "), "{}", summary[0]);
        assert!(summary.last().unwrap().starts_with("info: "));
        assert!(summary.iter().all(|l| l.contains("(fix: ")));
        let text = render(&f, &all);
        assert!(text.contains("fix: echo madvise"), "{text}");
        assert!(render(&quiet(), &[]).contains("nothing found"));
    }

    #[test]
    fn pid_stat_parsing() {
        let line = "4242 (my (weird) prog) R 1 4242 4242 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 1 0 100 1000 10";
        assert_eq!(
            parse_pid_stat(line),
            Some((4242, "my (weird) prog".to_string(), 300))
        );
        assert_eq!(parse_pid_stat("1 (init) S 0"), None);
        assert_eq!(parse_pid_stat("garbage"), None);
        assert_eq!(parse_pid_stat(")("), None);
    }

    #[test]
    fn busy_process_deltas() {
        let before: BTreeMap<u32, (String, u64)> = [
            (1, ("init".to_string(), 100)),
            (2, ("cc1".to_string(), 1000)),
            (3, ("idle".to_string(), 5)),
        ]
        .into();
        let after: BTreeMap<u32, (String, u64)> = [
            (1, ("init".to_string(), 101)),
            (2, ("cc1".to_string(), 1020)),
            (3, ("idle".to_string(), 5)),
            (9, ("new".to_string(), 500)),
        ]
        .into();
        let v = busy_processes(&before, &after, 0.2, 100);
        // cc1: 20 ticks in 0.2 s at 100 Hz = 100% of a CPU; init 5%: below the bar; the new
        // process has no earlier reading.
        assert_eq!(v.len(), 1);
        assert_eq!((v[0].pid, v[0].cpu_pct), (2, 100.0));
        assert!(busy_processes(&before, &after, 0.0, 100).is_empty());
    }

    #[test]
    fn small_parsers() {
        assert_eq!(parse_euid("Name:\tx\nUid:\t1000\t0\t0\t0\n"), Some(0));
        assert_eq!(parse_euid("Uid: 5\n"), None);
        assert_eq!(
            parse_tracefs_mount(
                "proc /proc proc rw 0 0\nnodev /sys/kernel/my\\040tracing tracefs rw 0 0\n"
            ),
            Some("/sys/kernel/my tracing".into())
        );
        assert_eq!(parse_tracefs_mount("proc /proc proc rw 0 0\n"), None);
        let (busy, steal) = cpu_shares(&CpuTicks {
            user: 30,
            system: 10,
            idle: 50,
            iowait: 5,
            steal: 5,
            ..CpuTicks::default()
        });
        assert_eq!((busy, steal), (Some(40.0), Some(5.0)));
        assert_eq!(cpu_shares(&CpuTicks::default()), (None, None));
    }

    #[test]
    fn gather_live_is_fast_and_sane() {
        let t = std::time::Instant::now();
        let facts = gather(Fingerprint::default(), Duration::from_millis(50));
        assert!(t.elapsed() < Duration::from_secs(5));
        assert!(facts.sample_s > 0.0);
        assert!(facts.busy_pct.is_some());
        for x in diagnose(&facts) {
            assert!(!x.fix.is_empty());
        }
    }

    #[test]
    fn a_damon_scheme_that_pages_out_is_found_and_named() {
        let sys = tempfile::tempdir().unwrap();
        let k = sys.path().join("kernel/mm/damon/admin/kdamonds/0");
        let sch = k.join("contexts/0/schemes/0");
        std::fs::create_dir_all(&sch).unwrap();
        std::fs::write(k.join("state"), "on\n").unwrap();
        std::fs::write(k.join("contexts/0/operations"), "paddr\n").unwrap();
        std::fs::write(sch.join("action"), "pageout\n").unwrap();
        // A second kdamond that is off, and a scheme that only watches.
        let off = sys.path().join("kernel/mm/damon/admin/kdamonds/1");
        std::fs::create_dir_all(off.join("contexts/0/schemes/0")).unwrap();
        std::fs::write(off.join("state"), "off\n").unwrap();
        std::fs::write(off.join("contexts/0/schemes/0/action"), "pageout\n").unwrap();
        let stat = k.join("contexts/0/schemes/1");
        std::fs::create_dir_all(&stat).unwrap();
        std::fs::write(stat.join("action"), "stat\n").unwrap();
        let found = proactive_reclaim(sys.path());
        assert_eq!(found, vec!["kdamond 0: pageout (paddr)".to_string()]);
        let mut f = quiet();
        f.proactive_reclaim = found;
        let d = diagnose(&f);
        assert!(
            d.iter()
                .any(|x| x.id == "reclaim" && x.title.contains("kdamond 0: pageout")),
            "{d:?}"
        );
        assert!(diagnose(&quiet()).iter().all(|x| x.id != "reclaim"));
    }

    #[test]
    fn a_tcp_store_below_verify_full_is_a_warning_saying_what_to_set() {
        let mut f = quiet();
        f.store_sslmode = Some("verify-full".into());
        assert!(diagnose(&f).iter().all(|x| x.id != "store_tls"));
        for mode in ["disable", "prefer", "require", "verify-ca"] {
            f.store_sslmode = Some(mode.into());
            let d = diagnose(&f);
            let x = d.iter().find(|x| x.id == "store_tls").unwrap();
            assert_eq!(x.severity, Severity::Warn);
            assert!(x.title.contains(&format!("sslmode={mode}")), "{x:?}");
            assert!(x.fix.contains("sslmode=verify-full"), "{x:?}");
        }
    }
}
