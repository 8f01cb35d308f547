//! iostat's per-device figures from /proc/diskstats, computed the way sysstat's `iostat -dx`
//! (12.6) computes them, so that `sysperf watch --disk` and `iostat -dx` agree.
//!
//! Semantics (checked against the installed sysstat 12.6.1 by bind-mounting fake counters
//! over a device's stat file):
//! - devices: whole devices only, i.e. names that have an entry in /sys/block (partitions do
//!   not), and only those that have completed any read, write, discard or flush since boot
//!   (sysstat's "unused device" rule: loop and zram devices never used are skipped, a used one
//!   is shown even when idle in the interval);
//! - `tps` = (reads + writes + discards) completed per second (sysstat's `iostat -d` counts
//!   discards as transfers; flushes are not);
//! - `rkB/s`, `wkB/s`, `dkB/s`: sectors (always 512 bytes in this file) / 2 per second;
//! - `r_await`, `w_await`, `d_await`, `f_await`: milliseconds spent on the requests of that kind
//!   completed in the interval divided by their number (0 when none completed);
//! - `aqu-sz`: the weighted time in queue (field 11) per millisecond of the interval;
//! - `%util`: the time the device had I/O in flight (io_ticks, field 10) as a percentage of the
//!   interval, not capped (sysstat 12.6 does not cap it either; above 100 means the counters
//!   are not trustworthy, as with some virtual devices).
//!
//! Like iostat, the first report covers the time since boot. A device that appears between two
//! readings is shown from the next interval on (sysstat would show its counters since boot as
//! if they were the interval's). Not here: reading the clock, sleeping and printing.

use super::{read, ObserveError};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One line of /proc/diskstats. Fields a kernel does not have (discards before 4.18, flushes
/// before 5.5) are 0.
pub use crate::procfs::{parse_diskstats, DiskCounters};

/// Whether `name` is a whole device: it has a directory in /sys/block, where the kernel
/// writes '/' in device names (cciss/c0d0) as '!'.
pub fn is_whole_device(sys_block: &Path, name: &str) -> bool {
    sys_block.join(name.replace('/', "!")).exists()
}

/// The devices iostat shows, in /proc/diskstats order.
pub fn select(all: Vec<DiskCounters>, is_whole: impl Fn(&str) -> bool) -> Vec<DiskCounters> {
    all.into_iter()
        .filter(|d| d.ever_used() && is_whole(&d.name))
        .collect()
}

/// Reads the live counters of the devices iostat would show.
pub fn read_devices() -> Result<Vec<DiskCounters>, ObserveError> {
    let all = parse_diskstats(&read(crate::procfs::DISKSTATS)?);
    let sys_block = Path::new("/sys/block");
    Ok(select(all, |n| is_whole_device(sys_block, n)))
}

/// One device's line of a report; the `sysperf watch --disk --json` device format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiskLine {
    pub device: String,
    pub tps: f64,
    pub r_per_s: f64,
    pub w_per_s: f64,
    pub d_per_s: f64,
    pub f_per_s: f64,
    pub rkb_per_s: f64,
    pub wkb_per_s: f64,
    pub dkb_per_s: f64,
    pub r_await_ms: f64,
    pub w_await_ms: f64,
    pub d_await_ms: f64,
    pub f_await_ms: f64,
    pub aqu_sz: f64,
    pub util_pct: f64,
}

/// The figures of `cur` over `elapsed_s` seconds since `prev` (None: since boot, i.e. from
/// zero counters with `elapsed_s` the uptime).
pub fn compute(prev: Option<&DiskCounters>, cur: &DiskCounters, elapsed_s: f64) -> DiskLine {
    let zero = DiskCounters::default();
    let p = prev.unwrap_or(&zero);
    let d = |c: u64, p: u64| c.saturating_sub(p);
    let rd = d(cur.rd_ios, p.rd_ios);
    let wr = d(cur.wr_ios, p.wr_ios);
    let dc = d(cur.dc_ios, p.dc_ios);
    let fl = d(cur.fl_ios, p.fl_ios);
    let per_s = |n: u64| {
        if elapsed_s > 0.0 {
            n as f64 / elapsed_s
        } else {
            0.0
        }
    };
    let wait = |ticks: u64, ios: u64| {
        if ios > 0 {
            ticks as f64 / ios as f64
        } else {
            0.0
        }
    };
    let per_ms = |ms: u64| {
        if elapsed_s > 0.0 {
            ms as f64 / (elapsed_s * 1000.0)
        } else {
            0.0
        }
    };
    DiskLine {
        device: cur.name.clone(),
        tps: per_s(rd + wr + dc),
        r_per_s: per_s(rd),
        w_per_s: per_s(wr),
        d_per_s: per_s(dc),
        f_per_s: per_s(fl),
        rkb_per_s: per_s(d(cur.rd_sectors, p.rd_sectors)) / 2.0,
        wkb_per_s: per_s(d(cur.wr_sectors, p.wr_sectors)) / 2.0,
        dkb_per_s: per_s(d(cur.dc_sectors, p.dc_sectors)) / 2.0,
        r_await_ms: wait(d(cur.rd_ticks_ms, p.rd_ticks_ms), rd),
        w_await_ms: wait(d(cur.wr_ticks_ms, p.wr_ticks_ms), wr),
        d_await_ms: wait(d(cur.dc_ticks_ms, p.dc_ticks_ms), dc),
        f_await_ms: wait(d(cur.fl_ticks_ms, p.fl_ticks_ms), fl),
        aqu_sz: per_ms(d(cur.time_in_queue_ms, p.time_in_queue_ms)),
        util_pct: 100.0 * per_ms(d(cur.io_ticks_ms, p.io_ticks_ms)),
    }
}

/// A whole report: every shown device of `cur`, against its previous reading when there is
/// one. `prev` None means since boot. Devices new since `prev` wait for the next report.
pub fn report(
    prev: Option<&[DiskCounters]>,
    cur: &[DiskCounters],
    elapsed_s: f64,
) -> Vec<DiskLine> {
    cur.iter()
        .filter_map(|c| match prev {
            None => Some(compute(None, c, elapsed_s)),
            Some(p) => p
                .iter()
                .find(|x| x.name == c.name)
                .map(|x| compute(Some(x), c, elapsed_s)),
        })
        .collect()
}

/// The column header, iostat style.
pub fn header() -> String {
    format!(
        "{:<12} {:>9} {:>10} {:>10} {:>8} {:>8} {:>7} {:>7}\n",
        "Device", "tps", "rkB/s", "wkB/s", "r_await", "w_await", "aqu-sz", "%util"
    )
}

/// One device's line with two decimals, as iostat prints.
pub fn format_line(l: &DiskLine) -> String {
    let f = |v: f64| if v.is_finite() { v } else { 0.0 };
    format!(
        "{:<12} {:>9.2} {:>10.2} {:>10.2} {:>8.2} {:>8.2} {:>7.2} {:>7.2}",
        l.device,
        f(l.tps),
        f(l.rkb_per_s),
        f(l.wkb_per_s),
        f(l.r_await_ms),
        f(l.w_await_ms),
        f(l.aqu_sz),
        f(l.util_pct)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // The development VM's /proc/diskstats (kernel 6.18: 17 counters), plus a partition, an
    // old-format line (11 counters) and junk.
    const DISKSTATS: &str = "\
   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
   7       1 loop1 100 0 800 50 40 0 640 120 0 5000 3600 10 0 80 30 8 16
 254       0 vda 148936 30644 18969202 141005 43749 34684 12644592 43552 0 23468 186462 13661 31 2199016 1550 8963 353
 254       1 vda1 148000 30644 18960000 140000 43700 34684 12640000 43500 0 23400 186000 0 0 0 0 0 0
 253       0 zram0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
   8       0 sda 10 0 20 5 0 0 0 0 0 5 5
 garbage line
   8      16 sdb 1 2 3
";

    fn whole(n: &str) -> bool {
        !n.ends_with(char::is_numeric) || n.starts_with("loop") || n.starts_with("zram")
    }

    #[test]
    fn parses_new_and_old_formats() {
        let all = parse_diskstats(DISKSTATS);
        assert_eq!(all.len(), 6);
        let vda = &all[2];
        assert_eq!(vda.name, "vda");
        assert_eq!(
            (vda.rd_ios, vda.rd_sectors, vda.rd_ticks_ms),
            (148936, 18969202, 141005)
        );
        assert_eq!(
            (vda.wr_ios, vda.wr_sectors, vda.wr_ticks_ms),
            (43749, 12644592, 43552)
        );
        assert_eq!((vda.io_ticks_ms, vda.time_in_queue_ms), (23468, 186462));
        assert_eq!(
            (vda.dc_ios, vda.dc_sectors, vda.dc_ticks_ms),
            (13661, 2199016, 1550)
        );
        assert_eq!((vda.fl_ios, vda.fl_ticks_ms), (8963, 353));
        let sda = &all[5];
        assert_eq!((sda.rd_ios, sda.dc_ios, sda.fl_ios), (10, 0, 0));
    }

    #[test]
    fn selection_follows_sysstat_defaults() {
        let shown = select(parse_diskstats(DISKSTATS), whole);
        let names: Vec<&str> = shown.iter().map(|d| d.name.as_str()).collect();
        // Unused loop0 and zram0 skipped, used loop1 kept, partition vda1 skipped.
        assert_eq!(names, ["loop1", "vda", "sda"]);
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("vda")).unwrap();
        std::fs::create_dir_all(dir.path().join("cciss!c0d0")).unwrap();
        assert!(is_whole_device(dir.path(), "vda"));
        assert!(is_whole_device(dir.path(), "cciss/c0d0"));
        assert!(!is_whole_device(dir.path(), "vda1"));
    }

    #[test]
    fn since_boot_matches_iostat() {
        // The same counters, bind-mounted over /sys/block/loop0/stat, made iostat 12.6.1 print
        // (uptime 2033.26 s): r/s 0.05 rkB/s 0.20 r_await 0.50 w/s 0.02 wkB/s 0.16
        // w_await 3.00 dkB/s 0.02 d_await 3.00 f_await 2.00 aqu-sz 1.77 %util 245.91, tps 0.07.
        let c = parse_diskstats(
            "7 0 loop0 100 5 800 50 40 4 640 120 0 5000000 3600000 10 1 80 30 8 16\n",
        );
        let l = compute(None, &c[0], 2033.26);
        let two = |v: f64| format!("{v:.2}");
        assert_eq!(two(l.r_per_s), "0.05");
        assert_eq!(two(l.rkb_per_s), "0.20");
        assert_eq!(two(l.r_await_ms), "0.50");
        assert_eq!(two(l.w_per_s), "0.02");
        assert_eq!(two(l.wkb_per_s), "0.16");
        assert_eq!(two(l.w_await_ms), "3.00");
        assert_eq!(two(l.dkb_per_s), "0.02");
        assert_eq!(two(l.d_await_ms), "3.00");
        assert_eq!(two(l.f_await_ms), "2.00");
        assert_eq!(two(l.aqu_sz), "1.77");
        assert_eq!(two(l.util_pct), "245.91");
        assert_eq!(two(l.tps), "0.07");
    }

    #[test]
    fn interval_uses_deltas() {
        let a = parse_diskstats("254 0 vda 100 0 1000 200 50 0 400 100 0 1000 3000 0 0 0 0 2 4\n");
        let b = parse_diskstats("254 0 vda 150 0 3000 300 60 0 600 150 1 1500 3500 4 0 16 8 3 5\n");
        let l = compute(Some(&a[0]), &b[0], 0.5);
        assert_eq!(l.r_per_s, 100.0);
        assert_eq!(l.w_per_s, 20.0);
        assert_eq!(l.d_per_s, 8.0);
        assert_eq!(l.f_per_s, 2.0);
        assert_eq!(l.tps, 128.0);
        assert_eq!(l.rkb_per_s, 2000.0); // 2000 sectors = 1000 KiB in half a second
        assert_eq!(l.wkb_per_s, 200.0);
        assert_eq!(l.dkb_per_s, 16.0);
        assert_eq!(l.r_await_ms, 2.0);
        assert_eq!(l.w_await_ms, 5.0);
        assert_eq!(l.d_await_ms, 2.0);
        assert_eq!(l.f_await_ms, 1.0);
        assert_eq!(l.aqu_sz, 1.0);
        assert_eq!(l.util_pct, 100.0);
        // Nothing completed: waits are 0, not NaN; a zero span gives 0 rates.
        let idle = compute(Some(&a[0]), &a[0], 1.0);
        assert_eq!((idle.tps, idle.r_await_ms, idle.util_pct), (0.0, 0.0, 0.0));
        assert_eq!(compute(Some(&a[0]), &b[0], 0.0).tps, 0.0);
        // Counters that went backwards (device re-created) do not wrap.
        assert_eq!(compute(Some(&b[0]), &a[0], 1.0).tps, 0.0);
    }

    #[test]
    fn reports_skip_devices_without_a_previous_reading() {
        let a = parse_diskstats("254 0 vda 1 0 2 1 0 0 0 0 0 1 1\n");
        let b =
            parse_diskstats("254 0 vda 2 0 4 2 0 0 0 0 0 2 2\n8 0 sdz 5 0 10 5 0 0 0 0 0 5 5\n");
        let boot = report(None, &b, 100.0);
        assert_eq!(boot.len(), 2);
        let next = report(Some(&a), &b, 1.0);
        assert_eq!(next.len(), 1);
        assert_eq!(next[0].device, "vda");
        assert_eq!(next[0].r_per_s, 1.0);
    }

    #[test]
    fn line_format_lines_up_with_header() {
        let c = parse_diskstats("254 0 vda 10 0 20 5 0 0 0 0 0 5 5\n");
        let l = compute(None, &c[0], 10.0);
        let line = format_line(&l);
        assert_eq!(line.len() + 1, header().len());
        assert!(line.starts_with("vda "), "{line}");
        assert!(line.contains(" 1.00 "), "{line}");
    }
}
