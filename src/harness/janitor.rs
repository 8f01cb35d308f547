//! What a sysperf killed outright (SIGKILL, a crash, a reboot of the machine it left
//! half-done) leaves behind, and its removal by the next sysperf.
//!
//! Everything sysperf creates outside its store is named after the process that owns it:
//! scratch directories `sysperf-<what>-<pid>-...` under the temporary directory (the suites'
//! file trees, the exec tests' program directory, the BBN FIFOs), memory cgroups
//! `sysperf-<pid>-<n>` (see [`super::cgroup`]) and tracefs instances `sysperf-<pid>[-block]`
//! (see `trace::tracefs`). Their owners remove them on every path that runs code (drop,
//! Ctrl-C); a process killed with SIGKILL cannot. So the harness removes a killed worker's
//! directories as soon as it has reaped the worker ([`remove_owned_by`]), and `run`, `trace`,
//! `profile` and `doctor` sweep what older processes left ([`sweep_temp`]), saying so.
//!
//! An owner is gone when its pid is free, a zombie, or now belongs to a process that is not
//! sysperf (every sysperf process is named `sysperf` or `sysperf:<benchmark>`), so a reused
//! pid neither keeps a leftover forever nor lets a live sysperf's directory be taken. This
//! module removes only directories named as above; it measures and prints nothing.

use crate::procfs;
use crate::sys::{self, Pid};
use std::path::{Path, PathBuf};

/// The prefix of everything sysperf names after its owner.
pub const PREFIX: &str = "sysperf-";

/// The owner's pid in a name `sysperf-[what-]<pid>[-...]`: the first all-digit part after
/// the prefix.
pub fn owner_pid(name: &str) -> Option<Pid> {
    name.strip_prefix(PREFIX)?
        .split('-')
        .find(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))?
        .parse()
        .ok()
        .filter(|p: &Pid| *p > 0)
}

/// Whether a process's /proc/PID/stat says it is a live sysperf: its command name begins
/// with "sysperf" and it is not a zombie.
pub fn is_live_sysperf(stat: &str) -> bool {
    procfs::parse_pid_stat(stat)
        .is_some_and(|s| s.comm.starts_with("sysperf") && !matches!(s.state, 'Z' | 'X'))
}

/// Whether the owner `pid` no longer runs as a sysperf process.
pub fn owner_gone(pid: Pid) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !is_live_sysperf(&stat),
        Err(_) => true,
    }
}

/// Removes the sysperf directories in `dir` whose owner `remove` picks, returning their paths.
fn remove_where(dir: &Path, remove: impl Fn(Pid) -> bool) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = owner_pid(&name) else {
            continue;
        };
        // Only directories of ours: never follow a link someone else put here.
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && remove(pid) && std::fs::remove_dir_all(e.path()).is_ok() {
            removed.push(e.path());
        }
    }
    removed
}

/// Removes the sysperf directories in `dir` whose owner is gone.
pub fn sweep_temp(dir: &Path) -> Vec<PathBuf> {
    let me = sys::getpid();
    remove_where(dir, |pid| pid != me && owner_gone(pid))
}

/// Removes the temporary directories of `pid`, a worker just killed and reaped.
pub fn remove_owned_by(pid: Pid) -> Vec<PathBuf> {
    remove_where(&std::env::temp_dir(), |owner| owner == pid)
}

/// The parent of `pid` and whether it is a live sysperf, from /proc/PID/stat.
fn parent_of(pid: Pid) -> Option<(Pid, bool)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let ppid = procfs::parse_pid_stat(&stat)?.ppid as Pid;
    Some((ppid, is_live_sysperf(&stat)))
}

/// Live sysperf processes other than this one and its descendants (its workers and their
/// children): another run measuring at the same time disturbs this one.
pub fn other_sysperfs() -> Vec<Pid> {
    let me = sys::getpid();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<Pid>().ok()) else {
            continue;
        };
        if pid == me || !matches!(parent_of(pid), Some((_, true))) {
            continue;
        }
        // Ours if an ancestor is this process (workers are a few levels deep at most).
        let (mut at, mut ours) = (pid, false);
        for _ in 0..8 {
            match parent_of(at) {
                Some((p, _)) if p == me => {
                    ours = true;
                    break;
                }
                Some((p, _)) if p > 1 => at = p,
                _ => break,
            }
        }
        if !ours {
            out.push(pid);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_read_from_every_naming_scheme() {
        for (name, pid) in [
            ("sysperf-123-4", Some(123)),
            ("sysperf-exec-77", Some(77)),
            ("sysperf-bbn-88-port", Some(88)),
            ("sysperf-scaling-99-ab12", Some(99)),
            ("sysperf-workload-5-1700000000", Some(5)),
            ("sysperf-x", None),
            ("sysperf-0", None),
            ("other-123", None),
        ] {
            assert_eq!(owner_pid(name), pid, "{name}");
        }
    }

    #[test]
    fn a_live_sysperf_is_named_so_and_not_a_zombie() {
        assert!(is_live_sysperf("12 (sysperf) S 1 12"));
        assert!(is_live_sysperf("12 (sysperf:forks0) R 1 12"));
        assert!(!is_live_sysperf("12 (sysperf) Z 1 12"));
        assert!(!is_live_sysperf("12 (bash) S 1 12"));
        // The name ends at the last ')': a name may itself contain one.
        assert!(is_live_sysperf("12 (sysperf) x) S 1 12"));
        assert!(!is_live_sysperf("garbage"));
    }

    #[test]
    fn only_the_gone_owners_directories_go() {
        let tmp = tempfile::tempdir().unwrap();
        // A pid that cannot be live: beyond pid_max.
        let gone = tmp.path().join("sysperf-bbn-999999999-port");
        std::fs::create_dir(&gone).unwrap();
        std::fs::write(gone.join("f"), "x").unwrap();
        let mine = tmp.path().join(format!("sysperf-exec-{}", sys::getpid()));
        std::fs::create_dir(&mine).unwrap();
        let other = tmp.path().join("unrelated-999999999");
        std::fs::create_dir(&other).unwrap();
        // A link named like ours is not followed or removed.
        let link = tmp.path().join("sysperf-999999998");
        std::os::unix::fs::symlink(&other, &link).unwrap();
        let removed = sweep_temp(tmp.path());
        assert_eq!(removed, vec![gone.clone()]);
        assert!(!gone.exists() && mine.exists() && other.exists() && link.exists());
    }
}
