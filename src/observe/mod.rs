//! Observing the running system, in the manner of the paper's §2.1 maintenance tools: what the
//! kernel's own counters say while something else (or nothing) runs.
//!
//! - [`vmstat`]: vmstat's columns (procs, memory, swap, io, faults, system, cpu) computed from
//!   /proc/stat, /proc/vmstat, /proc/meminfo and /proc/uptime the way procps-ng computes them;
//! - [`iostat`]: iostat's per-device figures from /proc/diskstats the way sysstat computes them;
//! - [`watch`]: the `sysperf watch` loop that samples, sleeps and prints those lines;
//! - [`doctor`]: what on this machine makes results noisy or not comparable, with fixes;
//! - [`settle`]: `run --settle`, waiting until the machine is quiet before a run;
//! - [`jitter`]: `sysperf jitter`, clock and OS noise: gaps in a spin on the clock, per CPU,
//!   set against the interrupts and softirqs meanwhile.
//!
//! The parsers and the arithmetic are pure functions over file contents, tested on literal
//! snippets; only the small `read` helpers and the watch loop touch the live system. This
//! module measures no benchmark and stores nothing; `sysperf run` only calls [`doctor`] and
//! [`settle`].

// Everything here reads files; nothing needs `unsafe`.
#![forbid(unsafe_code)]

pub mod doctor;
pub mod iostat;
pub mod jitter;
pub mod settle;
pub mod vmstat;
pub mod watch;

use std::path::{Path, PathBuf};

/// Errors of observation: a kernel file that could not be read or did not say what it must.
#[derive(Debug, thiserror::Error)]
pub enum ObserveError {
    #[error("cannot read {}: {source}; is /proc mounted and readable?", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} has no {what}; this kernel's format is not supported", .path.display())]
    Parse { path: PathBuf, what: &'static str },
    #[error("writing the output: {0}")]
    Output(#[source] std::io::Error),
}

impl crate::error::Exit for ObserveError {
    fn exit_code(&self) -> i32 {
        crate::exit::FAILURE
    }
}

/// The whole of a (small) kernel file.
pub(crate) fn read(path: &str) -> Result<String, ObserveError> {
    std::fs::read_to_string(path).map_err(|source| ObserveError::Read {
        path: PathBuf::from(path),
        source,
    })
}

pub(crate) fn parse_error(path: &str, what: &'static str) -> ObserveError {
    ObserveError::Parse {
        path: Path::new(path).to_path_buf(),
        what,
    }
}

pub(crate) use crate::procfs::field;

// Memory waiting to be written, which a quiet machine holds little of: the doctor reports it
// and `settle` waits for it to drain (kept here, not in either, so neither imports the other
// both ways).

/// Dirty plus writeback memory from which the machine is not settled: 64 MiB is a few
/// seconds of writeback on a slow virtual disk, and well above what an idle system keeps.
pub const DIRTY_KIB: u64 = 64 * 1024;

/// Dirty + Writeback in KiB from the text of /proc/meminfo, or None when neither line is there.
pub fn dirty_kib(meminfo: &str) -> Option<u64> {
    let dirty = field(meminfo, "Dirty");
    let wb = field(meminfo, "Writeback");
    match (dirty, wb) {
        (None, None) => None,
        (d, w) => Some(d.unwrap_or(0) + w.unwrap_or(0)),
    }
}

/// Dirty + Writeback now, in KiB.
pub fn read_dirty_kib() -> Option<u64> {
    read(crate::procfs::MEMINFO)
        .ok()
        .as_deref()
        .and_then(dirty_kib)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_finds_both_styles() {
        let vm = "pgpgin 123\npgpgout 456\npgfault 7\n";
        assert_eq!(field(vm, "pgpgout"), Some(456));
        assert_eq!(field(vm, "pgpg"), None);
        let mem = "MemFree:        5000 kB\nCached:   1000 kB\n";
        assert_eq!(field(mem, "Cached"), Some(1000));
        assert_eq!(field(mem, "MemFree"), Some(5000));
        assert_eq!(field("x: y\n", "x"), None);
        assert_eq!(field("", "x"), None);
    }
}
