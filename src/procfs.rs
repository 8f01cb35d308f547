//! The one reader of /proc/stat: its CPU time counters (aggregate and per CPU, as the one
//! [`CpuTicks`] type), interrupts, softirqs, context switches, forks and runnable and blocked
//! processes, parsed once into [`ProcStat`]. The harness (other work on a benchmark's CPUs),
//! `run --observe`'s counters, `watch` (vmstat) and the doctor all read it here.
//!
//! Also the one parser of /proc/vmstat's and /proc/meminfo's lines ([`field`],
//! [`parse_vmstat`]) and of /proc/diskstats ([`parse_diskstats`]), and the paths of all four.
//! Parsing is pure and tested on fixture text. Not here: what each caller makes of the
//! numbers (vmstat's columns, iostat's rates, the per-trial counters). /proc/interrupts and
//! /proc/softirqs are read here ([`read_interrupts`], [`read_softirqs`]) and parsed by
//! `harness::counters::parse_interrupts`; [`mapping_rss_pages`] reads /proc/self/smaps.
//! [`file_locks`] reads /proc/locks, and [`openers`] and [`describe_process`] say who holds
//! a file (the store's lock holders). [`ProcessMark`] tells a process from any later one
//! that got its pid (the writer of an unfinished run, #41).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The ten CPU time counters of one `cpu` line of /proc/stat, in clock ticks (USER_HZ).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTicks {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
    pub guest: u64,
    pub guest_nice: u64,
}

impl CpuTicks {
    /// Field-wise `self - earlier`. A counter that went backwards (idle can, for a moment,
    /// and CPU hot-plug resets a CPU's counters) contributes 0 rather than wrapping.
    pub fn since(&self, earlier: &CpuTicks) -> CpuTicks {
        CpuTicks {
            user: self.user.saturating_sub(earlier.user),
            nice: self.nice.saturating_sub(earlier.nice),
            system: self.system.saturating_sub(earlier.system),
            idle: self.idle.saturating_sub(earlier.idle),
            iowait: self.iowait.saturating_sub(earlier.iowait),
            irq: self.irq.saturating_sub(earlier.irq),
            softirq: self.softirq.saturating_sub(earlier.softirq),
            steal: self.steal.saturating_sub(earlier.steal),
            guest: self.guest.saturating_sub(earlier.guest),
            guest_nice: self.guest_nice.saturating_sub(earlier.guest_nice),
        }
    }

    /// Field-wise sum (the change over several CPUs).
    pub fn plus(&self, o: &CpuTicks) -> CpuTicks {
        CpuTicks {
            user: self.user + o.user,
            nice: self.nice + o.nice,
            system: self.system + o.system,
            idle: self.idle + o.idle,
            iowait: self.iowait + o.iowait,
            irq: self.irq + o.irq,
            softirq: self.softirq + o.softirq,
            steal: self.steal + o.steal,
            guest: self.guest + o.guest,
            guest_nice: self.guest_nice + o.guest_nice,
        }
    }

    /// Time doing work: user + nice + system + irq + softirq (guest time is inside user).
    pub fn busy(&self) -> u64 {
        self.user + self.nice + self.system + self.irq + self.softirq
    }

    /// Every tick that elapsed: guest time is excluded because user and nice contain it.
    pub fn total(&self) -> u64 {
        self.busy() + self.idle + self.iowait + self.steal
    }

    /// From the numbers after `cpu` or `cpuN`; None with fewer than user, nice, system and
    /// idle. Later fields absent on old kernels count as 0.
    fn parse(fields: &[u64]) -> Option<CpuTicks> {
        if fields.len() < 4 {
            return None;
        }
        let at = |i: usize| fields.get(i).copied().unwrap_or(0);
        Some(CpuTicks {
            user: at(0),
            nice: at(1),
            system: at(2),
            idle: at(3),
            iowait: at(4),
            irq: at(5),
            softirq: at(6),
            steal: at(7),
            guest: at(8),
            guest_nice: at(9),
        })
    }
}

/// One reading of /proc/stat. A line the kernel did not write (or that did not parse) is
/// None, or absent from `cpus`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcStat {
    /// The aggregate `cpu` line (the sum over online CPUs).
    pub cpu: Option<CpuTicks>,
    /// The `cpuN` lines, by CPU number.
    pub cpus: BTreeMap<u32, CpuTicks>,
    /// Interrupts serviced since boot (the first number of the `intr` line).
    pub intr: Option<u64>,
    /// Softirqs since boot (the first number of the `softirq` line).
    pub softirq: Option<u64>,
    /// Context switches since boot.
    pub ctxt: Option<u64>,
    /// Processes (and threads) created since boot.
    pub processes: Option<u64>,
    pub procs_running: Option<u64>,
    pub procs_blocked: Option<u64>,
}

/// Parses the text of /proc/stat.
pub fn parse_stat(text: &str) -> ProcStat {
    let mut s = ProcStat::default();
    for line in text.lines() {
        let mut f = line.split_ascii_whitespace();
        let Some(key) = f.next() else { continue };
        if let Some(rest) = key.strip_prefix("cpu") {
            let v: Vec<u64> = f.map_while(|x| x.parse().ok()).collect();
            match rest {
                "" => s.cpu = CpuTicks::parse(&v),
                n => {
                    if let (Ok(n), Some(t)) = (n.parse::<u32>(), CpuTicks::parse(&v)) {
                        s.cpus.insert(n, t);
                    }
                }
            }
            continue;
        }
        let first = f.next().and_then(|x| x.parse::<u64>().ok());
        match key {
            "intr" => s.intr = first,
            "softirq" => s.softirq = first,
            "ctxt" => s.ctxt = first,
            "processes" => s.processes = first,
            "procs_running" => s.procs_running = first,
            "procs_blocked" => s.procs_blocked = first,
            _ => {}
        }
    }
    s
}

/// Where the kernel writes it.
pub const STAT: &str = "/proc/stat";

/// Reads and parses /proc/stat now.
pub fn read_stat() -> std::io::Result<ProcStat> {
    std::fs::read_to_string(STAT).map(|t| parse_stat(&t))
}

/// The change of `cpus` (every CPU when empty) between two readings; a CPU missing from
/// either reading (hot-plugged) counts as no change.
pub fn cpus_since(before: &ProcStat, after: &ProcStat, cpus: &[u32]) -> CpuTicks {
    after
        .cpus
        .iter()
        .filter(|(n, _)| cpus.is_empty() || cpus.contains(n))
        .filter_map(|(n, a)| before.cpus.get(n).map(|b| a.since(b)))
        .fold(CpuTicks::default(), |acc, d| acc.plus(&d))
}

/// Where the kernel writes the other files read here.
pub const VMSTAT: &str = "/proc/vmstat";
pub const INTERRUPTS: &str = "/proc/interrupts";
pub const SOFTIRQS: &str = "/proc/softirqs";

/// /proc/interrupts as text.
pub fn read_interrupts() -> std::io::Result<String> {
    std::fs::read_to_string(INTERRUPTS)
}

/// /proc/softirqs as text (the same layout as /proc/interrupts).
pub fn read_softirqs() -> std::io::Result<String> {
    std::fs::read_to_string(SOFTIRQS)
}
pub const MEMINFO: &str = "/proc/meminfo";
pub const DISKSTATS: &str = "/proc/diskstats";

/// "key value" lines (/proc/vmstat) or "Key: value kB" lines (/proc/meminfo): the first number
/// after `key`, or None.
pub fn field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let mut it = l.split_whitespace();
        let k = it.next()?;
        let k = k.strip_suffix(':').unwrap_or(k);
        if k == key {
            it.next()?.parse().ok()
        } else {
            None
        }
    })
}

/// Every "key value" line of /proc/vmstat, by key.
pub fn parse_vmstat(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_ascii_whitespace();
            Some((it.next()?.to_string(), it.next()?.parse().ok()?))
        })
        .collect()
}

/// One device's line of /proc/diskstats (the fields iostat uses; sectors are 512 bytes).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiskCounters {
    pub name: String,
    pub rd_ios: u64,
    pub rd_sectors: u64,
    pub rd_ticks_ms: u64,
    pub wr_ios: u64,
    pub wr_sectors: u64,
    pub wr_ticks_ms: u64,
    /// Milliseconds with at least one request in flight.
    pub io_ticks_ms: u64,
    /// Milliseconds spent by requests in the queue, summed over requests.
    pub time_in_queue_ms: u64,
    pub dc_ios: u64,
    pub dc_sectors: u64,
    pub dc_ticks_ms: u64,
    pub fl_ios: u64,
    pub fl_ticks_ms: u64,
}

impl DiskCounters {
    /// Whether the device ever completed a request (sysstat skips those that did not).
    pub fn ever_used(&self) -> bool {
        self.rd_ios + self.wr_ios + self.dc_ios + self.fl_ios > 0
    }
}

/// Parses /proc/diskstats, skipping lines without the 11 classic counters.
pub fn parse_diskstats(text: &str) -> Vec<DiskCounters> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut f = line.split_ascii_whitespace();
        let (Some(_major), Some(_minor), Some(name)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let v: Vec<u64> = f.map_while(|x| x.parse().ok()).collect();
        if v.len() < 11 {
            continue;
        }
        let at = |i: usize| v.get(i).copied().unwrap_or(0);
        out.push(DiskCounters {
            name: name.to_string(),
            rd_ios: at(0),
            rd_sectors: at(2),
            rd_ticks_ms: at(3),
            wr_ios: at(4),
            wr_sectors: at(6),
            wr_ticks_ms: at(7),
            io_ticks_ms: at(9),
            time_in_queue_ms: at(10),
            dc_ios: at(11),
            dc_sectors: at(13),
            dc_ticks_ms: at(14),
            fl_ios: at(15),
            fl_ticks_ms: at(16),
        });
    }
    out
}

/// The fields of /proc/PID/stat that sysperf reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PidStat {
    pub pid: u32,
    /// The command name (15 bytes at most), which may itself hold spaces and parentheses.
    pub comm: String,
    /// R, S, D, Z, X, ...
    pub state: char,
    pub ppid: u32,
    /// utime + stime in clock ticks, when the line goes that far.
    pub ticks: Option<u64>,
    /// When the process started, in clock ticks since boot (field 22), when the line goes
    /// that far: with the pid, what names one process among all that ever had the pid.
    pub start_ticks: Option<u64>,
}

/// The resident pages of the mapping that starts at `address` in an smaps text (its `Rss:`
/// line, in kB), or None when no mapping starts there.
pub fn parse_smaps_rss_pages(text: &str, address: usize, page_size: usize) -> Option<u64> {
    let start = format!("{address:x}-");
    let mut lines = text.lines().skip_while(|l| !l.starts_with(&start));
    lines.next()?;
    lines
        .take_while(|l| !l.contains('-') || l.contains(':'))
        .find_map(|l| l.strip_prefix("Rss:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024 / page_size as u64)
}

/// (Rss, Pss) in KiB of a /proc/PID/smaps_rollup text: what a process has resident, and its
/// proportional share (each shared page divided among the processes that map it).
pub fn parse_smaps_rollup(text: &str) -> Option<(u64, u64)> {
    let kib = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    };
    Some((kib("Rss:")?, kib("Pss:")?))
}

/// (Rss, Pss) in KiB of process `pid` (/proc/PID/smaps_rollup, Linux 4.14 and later).
pub fn smaps_rollup(pid: u32) -> std::io::Result<(u64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))?;
    parse_smaps_rollup(&text).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("/proc/{pid}/smaps_rollup has no Rss and Pss lines"),
        )
    })
}

/// The resident pages of this process's mapping that starts at `address`
/// (/proc/self/smaps): how many pages its faults mapped so far.
pub fn mapping_rss_pages(address: usize) -> std::io::Result<u64> {
    let text = std::fs::read_to_string("/proc/self/smaps")?;
    parse_smaps_rss_pages(&text, address, crate::sys::page_size()).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("no mapping at {address:#x} in /proc/self/smaps"),
        )
    })
}

/// Parses the text of /proc/PID/stat. The command name is in parentheses and may itself
/// contain spaces and parentheses, so the last ')' ends it.
pub fn parse_pid_stat(text: &str) -> Option<PidStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let comm = text.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = text[close + 1..].split_whitespace().collect();
    // After the name: state(3) ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
    // cmajflt utime(14) stime(15) cutime cstime priority nice num_threads itrealvalue
    // starttime(22).
    let state = rest.first()?.chars().next()?;
    let ppid = rest.get(1)?.parse().ok()?;
    let tick = |i: usize| rest.get(i).and_then(|t| t.parse::<u64>().ok());
    Some(PidStat {
        pid,
        comm,
        state,
        ppid,
        ticks: tick(11).zip(tick(12)).map(|(u, s)| u + s),
        start_ticks: tick(19),
    })
}

/// One record lock of /proc/locks (a POSIX lock or an open file description lock; flock(2)
/// locks and leases are left out: SQLite does not use them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileLock {
    /// The holder, when the kernel names it (not for an open file description lock).
    pub pid: Option<u32>,
    /// "read" or "write".
    pub kind: &'static str,
    pub major: u32,
    pub minor: u32,
    pub ino: u64,
}

impl FileLock {
    /// The device number of the locked file's file system.
    pub fn dev_t(&self) -> u64 {
        libc::makedev(self.major, self.minor)
    }
}

/// The record locks of a /proc/locks text ("1: POSIX  ADVISORY  READ 41 00:1f:1234 0 EOF";
/// "-> " lines of waiters left out).
pub fn parse_locks(text: &str) -> Vec<FileLock> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.get(1) == Some(&"->") || !matches!(f.get(1), Some(&"POSIX") | Some(&"OFDLCK")) {
                return None;
            }
            let kind = match *f.get(3)? {
                "READ" => "read",
                "WRITE" => "write",
                _ => return None,
            };
            let pid = f.get(4)?.parse::<i64>().ok()?;
            let mut dev = f.get(5)?.split(':');
            let major = u32::from_str_radix(dev.next()?, 16).ok()?;
            let minor = u32::from_str_radix(dev.next()?, 16).ok()?;
            let ino = dev.next()?.parse().ok()?;
            Some(FileLock {
                pid: u32::try_from(pid).ok().filter(|p| *p > 0),
                kind,
                major,
                minor,
                ino,
            })
        })
        .collect()
}

/// The record locks on the system now (empty when /proc/locks cannot be read).
pub fn file_locks() -> Vec<FileLock> {
    std::fs::read_to_string("/proc/locks")
        .map(|t| parse_locks(&t))
        .unwrap_or_default()
}

/// The processes with the file (`dev`, `ino`) open, as far as this process may look
/// (root sees them all): a walk of /proc/*/fd, for when a lock's holder is not named.
pub fn openers(dev: u64, ino: u64) -> Vec<u32> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return out;
    };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        if fds
            .flatten()
            .any(|fd| std::fs::metadata(fd.path()).is_ok_and(|m| m.dev() == dev && m.ino() == ino))
        {
            out.push(pid);
        }
    }
    out
}

/// "pid 41 (python3) of user mallory (uid 1001)": a process in words for a message, its
/// name with anything unprintable as '?'.
pub fn describe_process(pid: u32) -> String {
    use std::os::unix::fs::MetadataExt;
    let comm: String = std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim_end_matches('\n')
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    let user = std::fs::metadata(format!("/proc/{pid}")).map(|m| m.uid());
    let user = match user {
        Ok(uid) => match crate::sys::user_name(uid) {
            Ok(Some(n)) => format!(" of user {n} (uid {uid})"),
            _ => format!(" of uid {uid}"),
        },
        Err(_) => String::new(),
    };
    if comm.is_empty() {
        format!("pid {pid}{user}")
    } else {
        format!("pid {pid} ({comm}){user}")
    }
}

/// Whether a `/proc/PID/syscall` line is a process blocked in read(2) of descriptor `fd`
/// ("0 0x0 0x7f... ..." on x86-64 for descriptor 0; "running" while it runs).
pub fn blocked_reading(syscall: &str, fd: u64) -> bool {
    let mut f = syscall.split_whitespace();
    f.next().and_then(|n| n.parse::<i64>().ok()) == Some(libc::SYS_read)
        && f.next() == Some(&format!("{fd:#x}"))
}

/// A process's start time (clock ticks since boot, /proc/PID/stat field 22).
pub fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_pid_stat(&stat)?.start_ticks
}

/// A process as this machine tells it from any later one with its pid (#41): the boot it ran
/// in, the PID namespace its pid means something in, the pid and its start time. Recorded
/// with an unfinished run, so that `gc --abandoned` never takes a run whose writer still
/// runs (calibrating for minutes, say) for abandoned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessMark {
    /// /proc/sys/kernel/random/boot_id: a new one every boot, on every machine.
    pub boot_id: String,
    /// The inode of /proc/self/ns/pid: a pid names another process in another namespace.
    pub pid_ns: u64,
    pub pid: u32,
    pub start_ticks: u64,
}

/// Whether a process lives now, as [`ProcessMark::alive_here`] says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    Alive,
    Gone,
    /// Not this machine's boot or PID namespace, or a process this one may not look at.
    Unknown,
}

fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(id.trim().to_string()).filter(|id| !id.is_empty())
}

fn pid_ns() -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self/ns/pid").ok().map(|m| m.ino())
}

impl ProcessMark {
    /// This process's mark; None where /proc does not say (no boot id, say).
    pub fn this_process() -> Option<ProcessMark> {
        let pid = std::process::id();
        Some(ProcessMark {
            boot_id: boot_id()?,
            pid_ns: pid_ns()?,
            pid,
            start_ticks: start_ticks(pid)?,
        })
    }

    /// Whether the marked process runs now: gone when its pid is free, a zombie or another
    /// process's (another start time); unknown when it ran in another boot, on another
    /// machine or in another PID namespace, or hides from this user (hidepid).
    pub fn alive_here(&self) -> Liveness {
        if boot_id().as_deref() != Some(self.boot_id.as_str()) || pid_ns() != Some(self.pid_ns) {
            return Liveness::Unknown;
        }
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)) else {
            // A pid /proc hides (hidepid) still answers kill(0), with EPERM. Never pid 0 or
            // below: kill(0) would ask about a process group.
            let pid = crate::sys::Pid::try_from(self.pid).ok().filter(|&p| p > 0);
            return match pid.map(|p| crate::sys::kill(p, 0)) {
                None => Liveness::Gone,
                Some(Err(e)) if e.raw_os_error() == Some(libc::ESRCH) => Liveness::Gone,
                Some(_) => Liveness::Unknown,
            };
        };
        match parse_pid_stat(&stat) {
            Some(s) if !matches!(s.state, 'Z' | 'X') && s.start_ticks == Some(self.start_ticks) => {
                Liveness::Alive
            }
            Some(_) => Liveness::Gone,
            None => Liveness::Unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_of_the_descriptor_is_blocked_reading_and_anything_else_is_not() {
        let stdin = "0 0x0 0x7f4406cac000 0x20000 0x7f4406d3eb60 0xffffffff 0x0 0x7ffc0cfdf088 0x7f4406e272ad\n";
        assert!(blocked_reading(stdin, 0));
        assert!(!blocked_reading(stdin, 3));
        assert!(blocked_reading(
            "0 0x3 0x7f2a21ed8000 0x20000 0x0 0x0 0x0 0x0 0x0\n",
            3
        ));
        assert!(!blocked_reading(
            "0 0x3 0x7f2a21ed8000 0x20000 0x0 0x0 0x0 0x0 0x0\n",
            0
        ));
        assert!(!blocked_reading("running\n", 0));
        assert!(!blocked_reading(
            "232 0x0 0x7ffc 0x1 0x0 0x0 0x0 0x7ffc 0x7f01\n",
            0
        ));
        assert!(!blocked_reading("", 0));
    }

    #[test]
    fn this_process_runs_and_a_later_one_with_its_pid_is_another() {
        let me = ProcessMark::this_process().expect("this process's mark");
        assert_eq!(me.alive_here(), Liveness::Alive);
        let later = ProcessMark {
            start_ticks: me.start_ticks + 1,
            ..me.clone()
        };
        assert_eq!(later.alive_here(), Liveness::Gone);
        // Above any pid_max: never in use.
        let free = ProcessMark {
            pid: 1 << 30,
            ..me.clone()
        };
        assert_eq!(free.alive_here(), Liveness::Gone);
        let elsewhere = ProcessMark {
            boot_id: "another boot".into(),
            ..me.clone()
        };
        assert_eq!(elsewhere.alive_here(), Liveness::Unknown);
        let other_ns = ProcessMark {
            pid_ns: me.pid_ns + 1,
            ..me
        };
        assert_eq!(other_ns.alive_here(), Liveness::Unknown);
    }

    #[test]
    fn smaps_rss_of_one_mapping() {
        let text = "7f00-7f10 rw-s 00000000 fe:01 12 /tmp/x (deleted)\nSize: 64 kB\nRss: 64 kB\n\
                    7f20-7f30 rw-p 00000000 00:00 0\nSize: 64 kB\nRss: 8 kB\n";
        assert_eq!(parse_smaps_rss_pages(text, 0x7f00, 4096), Some(16));
        assert_eq!(parse_smaps_rss_pages(text, 0x7f20, 4096), Some(2));
        assert_eq!(parse_smaps_rss_pages(text, 0x7f40, 4096), None);
    }

    #[test]
    fn pid_stat_gives_name_state_parent_and_ticks() {
        let line = "4242 (sysperf:pipe) x) R 17 4242 4242 0 -1 4194304 100 0 0 0 7 5 0 0";
        let s = parse_pid_stat(line).unwrap();
        assert_eq!(
            (s.pid, s.comm.as_str(), s.state, s.ppid),
            (4242, "sysperf:pipe) x", 'R', 17)
        );
        assert_eq!(s.ticks, Some(12));
        assert_eq!(s.start_ticks, None);
        let full = "7 (sysperf) S 1 7 7 0 -1 4194560 10 0 0 0 3 4 0 0 20 0 1 0 123456 1000 50";
        assert_eq!(parse_pid_stat(full).unwrap().start_ticks, Some(123_456));
        assert_eq!(parse_pid_stat("1 (init) S 0").unwrap().ticks, None);
        assert_eq!(parse_pid_stat("1 (init)"), None);
        assert_eq!(parse_pid_stat(")("), None);
    }

    #[test]
    fn locks_give_holder_kind_and_file() {
        let text = "1: POSIX  ADVISORY  READ 41 00:1f:1234 0 EOF\n\
                    1: -> POSIX  ADVISORY  WRITE 42 00:1f:1234 0 EOF\n\
                    2: OFDLCK ADVISORY  WRITE -1 fd:01:99 120 120\n\
                    3: FLOCK  ADVISORY  WRITE 43 00:1f:7 0 EOF\n";
        let locks = parse_locks(text);
        assert_eq!(locks.len(), 2, "{locks:?}");
        assert_eq!(
            (
                locks[0].pid,
                locks[0].kind,
                locks[0].major,
                locks[0].minor,
                locks[0].ino
            ),
            (Some(41), "read", 0, 0x1f, 1234)
        );
        assert_eq!(
            (locks[1].pid, locks[1].kind, locks[1].major),
            (None, "write", 0xfd)
        );
        assert_eq!(locks[1].dev_t(), libc::makedev(0xfd, 1));
    }

    /// Kernel 6.x, two CPUs, every line the kernel writes.
    const NEW: &str = "cpu  10 2 10 100 3 1 1 0 0 0\n\
cpu0 5 1 5 50 1 0 0 0 0 0\n\
cpu1 5 1 5 50 2 1 1 1 0 0\n\
intr 12345 1 2 3\n\
ctxt 67890\n\
btime 1700000000\n\
processes 4242\n\
procs_running 3\n\
procs_blocked 1\n\
softirq 999 1 2 3 4 5 6 7 8 9 10\n";

    #[test]
    fn smaps_rollup_gives_rss_and_pss() {
        let t = "55d0-7ffd ---p 00000000 00:00 0  [rollup]\nRss:                2812 kB\nPss:                 611 kB\nPss_Anon:            120 kB\n";
        assert_eq!(parse_smaps_rollup(t), Some((2812, 611)));
        assert_eq!(parse_smaps_rollup("Rss: 5 kB\n"), None);
        let (rss, pss) = smaps_rollup(std::process::id()).unwrap();
        assert!(rss > 0 && pss > 0 && pss <= rss, "{rss} {pss}");
    }

    /// An old kernel: four CPU fields only, no softirq line.
    const OLD: &str = "cpu 1 2 3 4\ncpu0 1 2 3 4\nintr 5\nctxt 6\nprocesses 7\n";

    #[test]
    fn parses_every_line_of_a_new_kernel() {
        let s = parse_stat(NEW);
        let cpu = s.cpu.unwrap();
        assert_eq!((cpu.user, cpu.nice, cpu.iowait, cpu.irq), (10, 2, 3, 1));
        assert_eq!(cpu.busy(), 10 + 2 + 10 + 1 + 1);
        assert_eq!(cpu.total(), cpu.busy() + 100 + 3);
        assert_eq!(s.cpus.len(), 2);
        assert_eq!(s.cpus[&1].steal, 1);
        assert_eq!(
            (s.intr, s.ctxt, s.processes, s.softirq),
            (Some(12345), Some(67890), Some(4242), Some(999))
        );
        assert_eq!((s.procs_running, s.procs_blocked), (Some(3), Some(1)));
    }

    #[test]
    fn old_kernels_count_missing_fields_as_zero_and_lines_as_absent() {
        let s = parse_stat(OLD);
        let cpu = s.cpu.unwrap();
        assert_eq!((cpu.idle, cpu.iowait, cpu.steal), (4, 0, 0));
        assert_eq!(s.softirq, None);
        assert_eq!(s.procs_running, None);
        assert_eq!(
            parse_stat("garbage\ncpuX 1 2 3 4\ncpu2 1\n"),
            ProcStat::default()
        );
    }

    #[test]
    fn deltas_restrict_to_chosen_cpus_and_never_wrap() {
        let a = parse_stat(NEW);
        let b = parse_stat("cpu0 25 1 5 60 1 0 0 0 0 0\ncpu1 15 1 15 60 2 3 2 3 0 0\n");
        assert_eq!(cpus_since(&a, &b, &[0]).busy(), 20);
        let one = cpus_since(&a, &b, &[1]);
        assert_eq!((one.busy(), one.steal, one.total()), (23, 2, 35));
        assert_eq!(cpus_since(&a, &b, &[]).busy(), 43);
        // A counter that went backwards contributes nothing.
        assert_eq!(cpus_since(&b, &a, &[0]).user, 0);
    }

    #[test]
    fn vmstat_meminfo_and_diskstats_parse_once_for_every_reader() {
        let vm = parse_vmstat("pgfault 7\npgmajfault 2\nbad x\n");
        assert_eq!((vm["pgfault"], vm["pgmajfault"], vm.len()), (7, 2, 2));
        assert_eq!(
            field("MemFree:  5000 kB\nCached: 10 kB\n", "MemFree"),
            Some(5000)
        );
        let d = parse_diskstats(
            " 253 0 vda 10 0 80 5 20 0 160 9 0 12 14 0 0 0 0 1 2\n 253 1 vda1 1 0 8 1 2 0 16 1 0 1 2\n short 1 2\n",
        );
        assert_eq!(d.len(), 2);
        assert_eq!(
            (
                d[0].name.as_str(),
                d[0].rd_ios,
                d[0].wr_sectors,
                d[0].fl_ios
            ),
            ("vda", 10, 160, 1)
        );
    }

    #[test]
    fn the_live_file_parses() {
        let s = read_stat().unwrap();
        assert!(s.cpu.is_some() && !s.cpus.is_empty() && s.ctxt.is_some());
    }
}
