//! tracefs: finding (or mounting) it, and tracefs instances that clean up after themselves.
//!
//! An instance (`instances/NAME`) is a ring buffer and event set of its own, so sysperf
//! neither disturbs nor is disturbed by anyone else tracing the machine. [`Instance`] removes
//! its directory when dropped, on every exit path that unwinds (errors, Ctrl-C handled by the
//! caller, panics); an instance left by a sysperf killed outright (SIGKILL) is removed by the
//! next `sysperf trace` ([`remove_stale`]). When tracefs is not mounted, sysperf mounts it in
//! a private mount namespace of its own ([`sys::private_mount_namespace`]): the mount is
//! invisible to the rest of the system and vanishes with sysperf, whatever way it ends.
//!
//! This module only does file operations on tracefs; what to trace and how to read the trace
//! are decided elsewhere.

use crate::sys;
use std::fs;
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Tracing is not available to this process; the message says what is missing and how to
/// allow it.
#[derive(Debug, Error)]
pub enum AccessError {
    #[error("{0}")]
    NotPermitted(String),
    #[error("{0}")]
    Unavailable(String),
}

impl crate::error::Exit for AccessError {
    fn exit_code(&self) -> i32 {
        crate::exit::FAILURE
    }
}

const HOW: &str = "run sysperf trace as root (or with CAP_SYS_ADMIN and write access to tracefs)";

/// A mounted tracefs.
#[derive(Debug)]
pub struct Tracefs {
    pub root: PathBuf,
    /// True when sysperf mounted it (in its private mount namespace).
    pub mounted: bool,
}

impl Tracefs {
    /// Finds tracefs: a tracefs mount, else `tracing/` under a debugfs mount, else (as root)
    /// mounts it on /sys/kernel/tracing in a private mount namespace.
    pub fn open() -> Result<Tracefs, AccessError> {
        let mounts = fs::read_to_string("/proc/self/mounts").unwrap_or_default();
        if let Some(root) = find_tracefs(&mounts) {
            return Ok(Tracefs {
                root,
                mounted: false,
            });
        }
        let target = PathBuf::from("/sys/kernel/tracing");
        if !sys::is_root() {
            return Err(AccessError::NotPermitted(format!(
                "tracefs is not mounted and mounting it needs root: {HOW}, or have it mounted \
                 (sudo mount -t tracefs nodev {})",
                target.display()
            )));
        }
        if !target.is_dir() {
            return Err(AccessError::Unavailable(format!(
                "this kernel has no tracefs ({} does not exist): it needs CONFIG_FTRACE and \
                 CONFIG_EVENT_TRACING",
                target.display()
            )));
        }
        let denied = |e: io::Error| {
            AccessError::NotPermitted(format!(
                "cannot mount tracefs on {} ({e}): {HOW}, or have it mounted \
                 (sudo mount -t tracefs nodev {})",
                target.display(),
                target.display()
            ))
        };
        sys::private_mount_namespace().map_err(denied)?;
        sys::mount_pseudo(c"tracefs", &target).map_err(denied)?;
        Ok(Tracefs {
            root: target,
            mounted: true,
        })
    }

    /// Every event this kernel can trace, as `system:name`.
    pub fn available_events(&self) -> Result<Vec<String>, AccessError> {
        let p = self.root.join("available_events");
        match fs::read_to_string(&p) {
            Ok(s) => Ok(s
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(String::from)
                .collect()),
            Err(e) => Err(access_error(&p, e)),
        }
    }
}

impl Drop for Tracefs {
    fn drop(&mut self) {
        if self.mounted {
            // The private namespace would drop the mount anyway when sysperf exits.
            let _ = sys::unmount(&self.root);
        }
    }
}

fn access_error(path: &Path, e: io::Error) -> AccessError {
    match e.kind() {
        ErrorKind::PermissionDenied => {
            AccessError::NotPermitted(format!("{}: permission denied: {HOW}", path.display()))
        }
        _ => AccessError::Unavailable(format!("{}: {e}", path.display())),
    }
}

/// The mount point of tracefs, or of `tracing/` inside debugfs, from a mounts table.
pub fn find_tracefs(mounts: &str) -> Option<PathBuf> {
    let entries: Vec<(&str, PathBuf)> = mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let _dev = f.next()?;
            let dir = unescape(f.next()?);
            let ty = f.next()?;
            Some((ty, PathBuf::from(dir)))
        })
        .collect();
    let tracefs: Vec<&PathBuf> = entries
        .iter()
        .filter(|(t, _)| *t == "tracefs")
        .map(|(_, d)| d)
        .collect();
    // Prefer the standard place when mounted in several.
    if let Some(d) = tracefs
        .iter()
        .find(|d| d.as_path() == Path::new("/sys/kernel/tracing"))
        .or(tracefs.first())
    {
        return Some((*d).clone());
    }
    entries
        .iter()
        .filter(|(t, _)| *t == "debugfs")
        .map(|(_, d)| d.join("tracing"))
        .find(|d| d.join("instances").is_dir())
}

/// /proc/mounts escapes space, tab, newline and backslash as octal.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = (i + 3 < b.len() && b[i] == b'\\')
            .then(|| &b[i + 1..i + 4])
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)))
            .map(|d| d.iter().fold(0u32, |v, c| v * 8 + u32::from(c - b'0')))
            .and_then(|v| u8::try_from(v).ok());
        if let Some(v) = octal {
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The name prefix of every instance sysperf makes: `sysperf-<pid>` (and `sysperf-<pid>-...`).
pub const PREFIX: &str = "sysperf-";

/// The pid in a sysperf instance name, if it is one.
pub fn instance_pid(name: &str) -> Option<i32> {
    // Named as everything sysperf leaves to be cleaned up: "sysperf-<pid>[-block]".
    crate::harness::janitor::owner_pid(name)
}

/// Runs `f` on tracefs as this process can see it: where it is mounted, there; else, as root,
/// in a thread of its own that mounts it in a private mount namespace (unshare applies to the
/// calling thread: the mount is invisible to the rest of the process and to the system, and
/// goes with the thread). None when tracefs cannot be seen. So a machine where tracefs is not
/// mounted still has its stale instances removed and its other tracers noticed.
pub fn look<T: Send>(f: impl FnOnce(&Tracefs) -> T + Send) -> Option<T> {
    let mounts = fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    if let Some(root) = find_tracefs(&mounts) {
        return Some(f(&Tracefs {
            root,
            mounted: false,
        }));
    }
    if !sys::is_root() || !Path::new("/sys/kernel/tracing").is_dir() {
        return None;
    }
    std::thread::scope(|s| {
        s.spawn(|| Tracefs::open().ok().map(|fs| f(&fs)))
            .join()
            .ok()
            .flatten()
    })
}

/// Tracing someone else has switched on, which slows every system call sysperf measures
/// (an enabled event costs each hit even with nobody reading): a tracer or events at the top
/// level, and instances other than sysperf's with events enabled. One line each.
pub fn foreign_tracing(fs: &Tracefs) -> Vec<String> {
    let read = |dir: &Path, file: &str| fs::read_to_string(dir.join(file)).unwrap_or_default();
    let describe = |dir: &Path, what: &str| -> Option<String> {
        if read(dir, "tracing_on").trim() != "1" {
            return None;
        }
        let tracer = read(dir, "current_tracer").trim().to_string();
        let set = read(dir, "set_event");
        let events: Vec<&str> = set
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let mut parts = Vec::new();
        if !tracer.is_empty() && tracer != "nop" {
            parts.push(format!("the {tracer} tracer"));
        }
        if !events.is_empty() {
            let shown: Vec<&str> = events.iter().take(3).copied().collect();
            let more = if events.len() > 3 { ", ..." } else { "" };
            parts.push(format!(
                "{} event(s) enabled ({}{more})",
                events.len(),
                shown.join(", ")
            ));
        }
        (!parts.is_empty()).then(|| format!("{what}: {}", parts.join(" and ")))
    };
    let mut out: Vec<String> = describe(&fs.root, "tracefs top level")
        .into_iter()
        .collect();
    if let Ok(dir) = fs::read_dir(fs.root.join("instances")) {
        let mut names: Vec<(String, PathBuf)> = dir
            .flatten()
            .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
            // sysperf's own: a live one is the doctor's "another sysperf"; a dead one, tidy's.
            .filter(|(n, _)| instance_pid(n).is_none())
            .collect();
        names.sort();
        out.extend(
            names
                .iter()
                .filter_map(|(n, p)| describe(p, &format!("tracefs instance {n}"))),
        );
    }
    out
}

/// Removes the instances of sysperf processes that no longer exist (killed with SIGKILL,
/// which no cleanup survives). Returns the names removed.
pub fn remove_stale(fs: &Tracefs) -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(dir) = fs::read_dir(fs.root.join("instances")) else {
        return removed;
    };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = instance_pid(&name) else {
            continue;
        };
        // A live sysperf's instance is its own (another sysperf tracing now); one with our
        // pid stays (Instance::create names its own beside it); a pid reused by another
        // program frees it.
        let made = crate::harness::janitor::made_of(&e.metadata());
        if pid == sys::getpid() || !crate::harness::janitor::owner_gone(pid, made) {
            continue;
        }
        if fs::remove_dir(e.path()).is_ok() {
            removed.push(name);
        }
    }
    removed
}

/// A tracefs instance: created stopped, removed on drop.
#[derive(Debug)]
pub struct Instance {
    pub name: String,
    pub dir: PathBuf,
}

impl Instance {
    /// mkdir `instances/NAME` and stop it at once (a new instance starts recording). A NAME
    /// that is taken is never removed: it may be a live sysperf's with the same pid in another
    /// PID namespace (tracefs is the machine's), or one left by an earlier process with this
    /// pid (the sweep removes it once that owner is gone); NAME-<random> is made instead.
    pub fn create(fs: &Tracefs, name: &str) -> Result<Instance, AccessError> {
        let mut dir = fs.root.join("instances").join(name);
        let mut made = fs::create_dir(&dir);
        for _ in 0..16 {
            if !matches!(&made, Err(e) if e.kind() == ErrorKind::AlreadyExists) {
                break;
            }
            let mut r = [0u8; 6];
            if let Err(e) = sys::random_bytes(&mut r) {
                made = Err(e);
                break;
            }
            let hex: String = r.iter().map(|b| format!("{b:02x}")).collect();
            dir = fs.root.join("instances").join(format!("{name}-{hex}"));
            made = fs::create_dir(&dir);
        }
        if let Err(e) = made {
            return Err(match e.kind() {
                ErrorKind::PermissionDenied => AccessError::NotPermitted(format!(
                    "cannot create the tracefs instance {} (permission denied): {HOW}",
                    dir.display()
                )),
                _ => AccessError::Unavailable(format!(
                    "cannot create the tracefs instance {}: {e}",
                    dir.display()
                )),
            });
        }
        let inst = Instance {
            name: dir
                .file_name()
                .map_or_else(|| name.to_string(), |n| n.to_string_lossy().into_owned()),
            dir,
        };
        inst.write("tracing_on", "0")
            .map_err(|e| AccessError::Unavailable(e.to_string()))?;
        Ok(inst)
    }

    /// Writes `value` to the instance's file `file`, with the path in the error.
    pub fn write(&self, file: &str, value: &str) -> io::Result<()> {
        let p = self.dir.join(file);
        fs::write(&p, value).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("writing '{value}' to {}: {e}", p.display()),
            )
        })
    }

    pub fn read(&self, file: &str) -> io::Result<String> {
        let p = self.dir.join(file);
        fs::read_to_string(&p)
            .map_err(|e| io::Error::new(e.kind(), format!("reading {}: {e}", p.display())))
    }

    pub fn set_buffer_kb(&self, kb: u64) -> io::Result<()> {
        self.write("buffer_size_kb", &kb.to_string())
    }

    /// Enables `system:name`.
    pub fn enable(&self, event: &str) -> io::Result<()> {
        let (system, name) = event.split_once(':').unwrap_or(("", event));
        self.write(&format!("events/{system}/{name}/enable"), "1")
    }

    /// Restricts events to `pid` and, with event-fork, to every process it creates after.
    pub fn follow(&self, pid: sys::Pid) -> io::Result<()> {
        self.write("options/event-fork", "1")?;
        self.write("set_event_pid", &pid.to_string())
    }

    pub fn on(&self, on: bool) -> io::Result<()> {
        self.write("tracing_on", if on { "1" } else { "0" })
    }

    /// Empties the ring buffer.
    pub fn clear(&self) -> io::Result<()> {
        self.write("trace", "")
    }

    /// Events lost so far: overwritten (overrun) or dropped, over all CPUs.
    pub fn lost_events(&self) -> u64 {
        let Ok(dir) = fs::read_dir(self.dir.join("per_cpu")) else {
            return 0;
        };
        dir.flatten()
            .filter_map(|e| fs::read_to_string(e.path().join("stats")).ok())
            .map(|s| parse_lost(&s))
            .sum()
    }

    /// Opens the text trace for reading.
    pub fn trace_reader(&self) -> io::Result<fs::File> {
        let p = self.dir.join("trace");
        fs::File::open(&p)
            .map_err(|e| io::Error::new(e.kind(), format!("reading {}: {e}", p.display())))
    }
}

/// `overrun:` plus `dropped events:` of a per-CPU stats file.
pub fn parse_lost(stats: &str) -> u64 {
    stats
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            matches!(k.trim(), "overrun" | "dropped events")
                .then(|| v.trim().parse::<u64>().ok())
                .flatten()
        })
        .sum()
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.write("tracing_on", "0");
        let _ = self.write("events/enable", "0");
        let _ = self.write("set_event_pid", "");
        // rmdir fails with EBUSY while a file of the instance is open; ours are closed by now,
        // but a reader elsewhere (cat trace_pipe) may hold one for a moment.
        for _ in 0..50 {
            match fs::remove_dir(&self.dir) {
                Ok(()) => return,
                Err(e) if e.kind() == ErrorKind::NotFound => return,
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
            }
        }
        crate::notice::tell(&format!(
            "could not remove the tracefs instance {}; remove it with: rmdir {}",
            self.name,
            self.dir.display()
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tracefs-shaped directory: top level and instances with the files that matter.
    fn fake(top: [&str; 3], instances: &[(&str, [&str; 3])]) -> (tempfile::TempDir, Tracefs) {
        let d = tempfile::tempdir().unwrap();
        let put = |dir: &Path, [on, tracer, events]: [&str; 3]| {
            fs::create_dir_all(dir).unwrap();
            fs::write(dir.join("tracing_on"), format!("{on}\n")).unwrap();
            fs::write(dir.join("current_tracer"), format!("{tracer}\n")).unwrap();
            fs::write(dir.join("set_event"), events).unwrap();
        };
        put(d.path(), top);
        for (name, files) in instances {
            put(&d.path().join("instances").join(name), *files);
        }
        let fs = Tracefs {
            root: d.path().to_path_buf(),
            mounted: false,
        };
        (d, fs)
    }

    /// A name taken (by a sysperf with this pid in another PID namespace, say) is left alone:
    /// the new instance is named beside it, and still names its owner (#36).
    #[test]
    fn a_taken_instance_name_is_not_removed_but_named_beside() {
        let (_d, fs) = fake(
            ["1", "nop", ""],
            &[("sysperf-7", ["1", "nop", "sched:x\n"])],
        );
        let theirs = fs.root.join("instances/sysperf-7");
        let inst = Instance::create(&fs, "sysperf-7").unwrap();
        assert_ne!(inst.dir, theirs);
        assert!(inst.name.starts_with("sysperf-7-"), "{}", inst.name);
        assert_eq!(inst.name.len(), "sysperf-7-".len() + 12, "{}", inst.name);
        assert_eq!(instance_pid(&inst.name), Some(7));
        assert_eq!(inst.read("tracing_on").unwrap().trim(), "0");
        assert_eq!(
            fs::read_to_string(theirs.join("tracing_on")).unwrap(),
            "1\n"
        );
        // A free name is taken as it is.
        let free = Instance::create(&fs, "sysperf-8").unwrap();
        assert_eq!(free.name, "sysperf-8");
    }

    #[test]
    fn other_tracers_are_found_and_sysperfs_own_instances_are_not_theirs() {
        let quiet = ["1", "nop", ""];
        let (_d, fs) = fake(
            quiet,
            &[("sysperf-1", ["1", "nop", "raw_syscalls:sys_enter\n"])],
        );
        assert_eq!(foreign_tracing(&fs), Vec::<String>::new());
        let (_d, fs) = fake(
            ["1", "function", ""],
            &[
                (
                    "perf",
                    ["1", "nop", "sched:sched_switch\nsched:sched_wakeup\n"],
                ),
                ("stopped", ["0", "nop", "sched:sched_switch\n"]),
            ],
        );
        assert_eq!(
            foreign_tracing(&fs),
            [
                "tracefs top level: the function tracer",
                "tracefs instance perf: 2 event(s) enabled (sched:sched_switch, sched:sched_wakeup)"
            ]
        );
    }

    #[test]
    fn finds_tracefs_then_debugfs() {
        let m = "sysfs /sys sysfs rw 0 0\ntracefs /mnt/my\\040trace tracefs rw 0 0\ntracefs /sys/kernel/tracing tracefs rw 0 0\n";
        assert_eq!(find_tracefs(m), Some(PathBuf::from("/sys/kernel/tracing")));
        let m = "tracefs /mnt/my\\040trace tracefs rw 0 0\n";
        assert_eq!(find_tracefs(m), Some(PathBuf::from("/mnt/my trace")));
        assert_eq!(find_tracefs("sysfs /sys sysfs rw 0 0\n"), None);
        // debugfs counts only when its tracing directory is really there.
        assert_eq!(find_tracefs("debugfs /nonexistent debugfs rw 0 0\n"), None);
        assert_eq!(find_tracefs(""), None);
        assert_eq!(find_tracefs("garbage\n\\\n"), None);
        assert_eq!(unescape("a\\040b\\777\\0"), "a b\\777\\0");
    }

    #[test]
    fn recognizes_its_instance_names() {
        assert_eq!(instance_pid("sysperf-1234"), Some(1234));
        assert_eq!(instance_pid("sysperf-1234-block"), Some(1234));
        assert_eq!(instance_pid("sysperf-"), None);
        assert_eq!(instance_pid("sysperf-0"), None);
        assert_eq!(instance_pid("other-1234"), None);
        assert_eq!(instance_pid("sysperf-x1"), None);
    }

    #[test]
    fn counts_overruns_and_drops() {
        let s = "entries: 445\noverrun: 7\ncommit overrun: 0\nbytes: 29580\noldest event ts:  1854.639493\nnow ts:  1854.664558\ndropped events: 3\nread events: 0\n";
        assert_eq!(parse_lost(s), 10);
        assert_eq!(parse_lost("overrun: x\n"), 0);
    }
}
