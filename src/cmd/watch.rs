//! `sysperf watch`: the kernel's counters like vmstat (or iostat with `--disk`), a line per
//! interval until Ctrl-C.

use super::failure::Context;
use super::Result;
use clap::Args as ClapArgs;
use sysperf::observe::watch;
use sysperf::{engine, exit};

pub(crate) const WATCH_HELP: &str = "\
Columns (vmstat's, procps-ng semantics): r b = runnable and blocked processes; swpd free buff
cache = KiB; si so = KiB swapped in/out per second; bi bo = KiB read/written to block devices
per second; flt = page faults per second; in cs = interrupts and context switches per second;
us sy id wa st = percent of CPU time in user (with nice), system (with irq and softirq), idle,
I/O wait, stolen. With --disk (sysstat's iostat -dx): tps = reads, writes and discards per
second; rkB/s wkB/s; r_await w_await = ms per request; aqu-sz = average queue; %util = time
busy. The first line covers the time since boot. Ctrl-C ends the watch with exit code 0.";

#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Seconds between lines (0.1 to 86400); without it, one line of averages since boot.
    #[arg(allow_negative_numbers = true)]
    pub(crate) interval: Option<String>,
    /// Lines in all, the since-boot one included (default: until Ctrl-C).
    #[arg(allow_negative_numbers = true)]
    pub(crate) count: Option<String>,
    /// iostat's per-device report (tps, kB/s, await, %util) instead of vmstat's line.
    #[arg(long)]
    pub(crate) disk: bool,
    /// One JSON object per line instead of columns.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) fn exec(a: Args) -> Result<i32> {
    let opts = watch::WatchOptions {
        interval: a
            .interval
            .as_deref()
            .map(watch::parse_interval)
            .transpose()?,
        count: a.count.as_deref().map(watch::parse_count).transpose()?,
        disk: a.disk,
        json: a.json,
    };
    // Ctrl-C (or a termination request) ends the watch between lines: its normal end.
    let stop = engine::stop_flag()?;
    say!("sysperf: {}", watch::papers_note(opts.disk));
    let mut out = std::io::stdout().lock();
    watch::run(&opts, &stop, &mut out).context("watching the kernel's counters")?;
    Ok(exit::OK)
}
