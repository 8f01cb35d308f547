//! The `sysperf watch [INTERVAL [COUNT]] [--disk] [--json]` loop: read the counters, print
//! the since-boot line, then every INTERVAL seconds the change over the interval, like vmstat
//! (or, with `--disk`, like `iostat -dx`).
//!
//! Readings are scheduled on a fixed grid (start + k x INTERVAL) so lines do not drift, and
//! each rate is divided by the measured time between its two readings. Ctrl-C ends the loop
//! between lines; the caller exits 0 then, as vmstat does, because stopping a monitor is its
//! normal end. The arithmetic lives in `vmstat` and `iostat`; this file only schedules,
//! reads and prints. It starts no process and leaves nothing behind.

use super::{iostat, vmstat, ObserveError};
use crate::error::InputError;
use crate::{sys, units};
use serde_json::{json, Value};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Shortest interval: below it the 100 Hz tick counters give CPU shares in steps of 10% or more
/// per CPU, which is noise, not measurement.
pub const MIN_INTERVAL_S: f64 = 0.1;
/// Longest interval: a day. Anything longer is almost surely a typo.
pub const MAX_INTERVAL_S: f64 = units::DAY_S;

/// What to watch and how often.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WatchOptions {
    /// None: print the since-boot line only (vmstat without arguments).
    pub interval: Option<Duration>,
    /// Lines (reports) in all, the since-boot one included; None: until interrupted.
    pub count: Option<u64>,
    /// iostat's per-device report instead of vmstat's line.
    pub disk: bool,
    /// One JSON object per line instead of columns.
    pub json: bool,
}

/// INTERVAL in seconds: a number from 0.1 to 86400 (fractions allowed, unlike vmstat).
pub fn parse_interval(s: &str) -> Result<Duration, InputError> {
    let bounds = units::Bounds {
        min: Some((MIN_INTERVAL_S, "CPU time is counted in 10 ms ticks")),
        max: (MAX_INTERVAL_S, "a day"),
        ..units::SECONDS
    };
    let secs = units::parse_seconds(s, &bounds).map_err(|why| InputError::InvalidValue {
        what: "INTERVAL",
        value: s.chars().take(40).collect(),
        why,
    })?;
    Ok(Duration::from_secs_f64(secs))
}

/// COUNT: how many lines in all, a whole number from 1.
pub fn parse_count(s: &str) -> Result<u64, InputError> {
    let bad = |why: &str| InputError::InvalidValue {
        what: "COUNT",
        value: s.chars().take(40).collect(),
        why: why.into(),
    };
    match s.trim().parse::<u64>() {
        Ok(0) => Err(bad(
            "it must be at least 1 (lines in all, the since-boot one included)",
        )),
        Ok(n) => Ok(n),
        Err(_) if s.trim().starts_with('-') => Err(bad("it must be at least 1")),
        Err(_) => Err(bad("give a whole number of lines, e.g. 5")),
    }
}

fn unix_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// Sleeps until the monotonic clock reaches `deadline_ns`, in short steps so that Ctrl-C is
/// noticed within 50 ms. False when interrupted.
fn sleep_until(deadline_ns: u64, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = sys::monotonic_ns();
        if now >= deadline_ns {
            return true;
        }
        std::thread::sleep(Duration::from_nanos((deadline_ns - now).min(50_000_000)));
    }
}

/// A reader closed the pipe (`sysperf watch | head`): that ends the watch, it is not an error.
enum Flow {
    Go,
    Closed,
}

fn emit(out: &mut dyn Write, text: &str) -> Result<Flow, ObserveError> {
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => Ok(Flow::Go),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(Flow::Closed),
        Err(e) => Err(ObserveError::Output(e)),
    }
}

/// One reading: the counters and when they were read.
enum Reading {
    Vm(vmstat::Snapshot),
    Disk(Vec<iostat::DiskCounters>),
}

fn read(disk: bool) -> Result<Reading, ObserveError> {
    Ok(if disk {
        Reading::Disk(iostat::read_devices()?)
    } else {
        Reading::Vm(vmstat::read_snapshot()?)
    })
}

fn vm_text(l: &vmstat::Line, json: bool) -> String {
    if json {
        let mut v = serde_json::to_value(l).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut v {
            m.insert("unix_ns".into(), json!(unix_ns()));
        }
        format!("{v}\n")
    } else {
        format!("{}\n", vmstat::format_line(l))
    }
}

fn disk_text(lines: &[iostat::DiskLine], since_boot: bool, elapsed_s: f64, json: bool) -> String {
    if json {
        let v = json!({
            "since_boot": since_boot,
            "elapsed_s": elapsed_s,
            "unix_ns": unix_ns(),
            "devices": lines,
        });
        format!("{v}\n")
    } else {
        let mut s = format!("\n{}", iostat::header());
        for l in lines {
            s.push_str(&iostat::format_line(l));
            s.push('\n');
        }
        s
    }
}

/// The papers' norms for the columns `watch` prints, one line for stderr (stdout keeps vmstat's
/// and iostat's formats): §2.1's long-term averages of a large 4.2BSD time-sharing machine and
/// its advice on us, §3.2.6's rates while it traced, and Feder's context switches a second of
/// program development (Fig. 2's text); with `disk`, §2.1's transfers a second of one arm.
pub fn papers_note(disk: bool) -> String {
    use crate::papers::beside;
    if disk {
        return format!("the papers' norm for tps: {}", beside("vmstat.tps_per_arm"));
    }
    format!(
        "the papers' norms for these columns: in + cs {}; us {}; cs {}; in {}, cs {} while §3.2.6 traced",
        beside("vmstat.cs_and_in_per_s"),
        beside("vmstat.us_pct"),
        beside("feder.cs_per_s"),
        beside("trace.interrupts_per_s"),
        beside("trace.cs_per_s"),
    )
}

/// Runs the watch, writing to `out` until COUNT lines are printed, `stop` is set (Ctrl-C) or
/// the reader goes away.
pub fn run(
    opts: &WatchOptions,
    stop: &AtomicBool,
    out: &mut dyn Write,
) -> Result<(), ObserveError> {
    let page_kib = (sys::page_size() / 1024) as u64;
    let total = match opts.interval {
        None => 1,
        Some(_) => opts.count.unwrap_or(u64::MAX),
    };
    let start = sys::monotonic_ns();
    let mut prev = read(opts.disk)?;
    let mut prev_ns = start;
    let first = match &prev {
        Reading::Vm(s) => {
            let head = if opts.json {
                String::new()
            } else {
                vmstat::header()
            };
            format!(
                "{head}{}",
                vm_text(&vmstat::since_boot(s, page_kib), opts.json)
            )
        }
        Reading::Disk(d) => {
            // iostat's first report is since boot: the uptime is its span.
            let up = super::read("/proc/uptime")
                .ok()
                .and_then(|t| vmstat::parse_uptime(&t))
                .unwrap_or(0.0);
            disk_text(&iostat::report(None, d, up), true, up, opts.json)
        }
    };
    if let Flow::Closed = emit(out, &first)? {
        return Ok(());
    }
    let step_ns = opts.interval.map_or(0, |d| d.as_nanos() as u64);
    let mut k: u64 = 1;
    while k < total {
        let deadline = start.saturating_add(step_ns.saturating_mul(k));
        if !sleep_until(deadline, stop) {
            break;
        }
        let now_ns = sys::monotonic_ns();
        let cur = read(opts.disk)?;
        let elapsed_s = now_ns.saturating_sub(prev_ns) as f64 / 1e9;
        let text = match (&prev, &cur) {
            (Reading::Vm(a), Reading::Vm(b)) => {
                vm_text(&vmstat::interval(a, b, elapsed_s, page_kib), opts.json)
            }
            (Reading::Disk(a), Reading::Disk(b)) => disk_text(
                &iostat::report(Some(a), b, elapsed_s),
                false,
                elapsed_s,
                opts.json,
            ),
            // Both readings come from the same `opts.disk`.
            _ => String::new(),
        };
        if let Flow::Closed = emit(out, &text)? {
            return Ok(());
        }
        prev = cur;
        prev_ns = now_ns;
        k += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_papers_norms_name_their_figures_and_sources() {
        let n = papers_note(false);
        // §2.1: 60 context switches and interrupts, 90 system calls a second (the call rate is
        // trace --system's); us above 50%; Feder's Fig. 2 text: 100 then 40 switches a second.
        assert!(
            n.contains("in + cs 4.2BSD 60 per second (Leffler et al. 1984, §2.1)"),
            "{n}"
        );
        assert!(n.contains("us 4.2BSD >50 %"), "{n}");
        assert!(
            n.contains("cs System III ~100, System V ~40 per second (Feder 1984, §3.2 (Fig. 2))"),
            "{n}"
        );
        assert!(
            n.contains("in 4.2BSD 90 per second") && n.contains("cs 4.2BSD 50 per second"),
            "{n}"
        );
        assert!(
            papers_note(true).contains("4.2BSD 25-35 transfers/s"),
            "{}",
            papers_note(true)
        );
    }

    #[test]
    fn interval_and_count_validation() {
        assert_eq!(parse_interval("1").unwrap(), Duration::from_secs(1));
        assert_eq!(parse_interval(" 0.5 ").unwrap(), Duration::from_millis(500));
        for bad in ["0", "-1", "0.01", "nan", "inf", "1e9", "abc", ""] {
            assert!(parse_interval(bad).is_err(), "{bad}");
        }
        assert!(parse_interval("1e9")
            .unwrap_err()
            .to_string()
            .contains("at most a day"));
        assert_eq!(parse_count("5").unwrap(), 5);
        for bad in ["0", "-3", "1.5", "x", "99999999999999999999999"] {
            assert!(parse_count(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn since_boot_only_without_interval() {
        let mut out = Vec::new();
        let opts = WatchOptions {
            interval: None,
            count: Some(10),
            disk: false,
            json: true,
        };
        run(&opts, &AtomicBool::new(false), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        let v: Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(v["since_boot"], true);
        assert!(v["cs_per_s"].as_f64().unwrap() > 0.0);
        assert!(v["unix_ns"].as_i64().unwrap() > 0);
    }

    #[test]
    fn counted_lines_and_stop() {
        let opts = WatchOptions {
            interval: Some(Duration::from_millis(100)),
            count: Some(3),
            disk: false,
            json: false,
        };
        let mut out = Vec::new();
        run(&opts, &AtomicBool::new(false), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        // Two header lines, the since-boot line, two interval lines.
        assert_eq!(text.lines().count(), 5, "{text}");
        // A stop request ends an endless watch after its first line.
        let mut out = Vec::new();
        let endless = WatchOptions {
            count: None,
            ..opts
        };
        run(&endless, &AtomicBool::new(true), &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap().lines().count(), 3);
    }

    #[test]
    fn disk_reports_are_json_objects() {
        let opts = WatchOptions {
            interval: Some(Duration::from_millis(100)),
            count: Some(2),
            disk: true,
            json: true,
        };
        let mut out = Vec::new();
        run(&opts, &AtomicBool::new(false), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["since_boot"], true);
        assert_eq!(lines[1]["since_boot"], false);
        assert!(lines[1]["devices"].is_array());
    }

    /// A writer whose reader has gone away.
    struct Closed;
    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_ends_the_watch_quietly() {
        let opts = WatchOptions {
            interval: Some(Duration::from_secs(1)),
            count: None,
            disk: false,
            json: false,
        };
        run(&opts, &AtomicBool::new(false), &mut Closed).unwrap();
    }
}
