//! What a sysperf killed outright (SIGKILL, a crash, a reboot of the machine it left
//! half-done) leaves behind, and its removal by the next sysperf.
//!
//! Everything sysperf creates outside its store is named after the process that owns it:
//! scratch directories `sysperf-<what>-<pid>-<random>` under the temporary directory, /var/tmp
//! or /dev/shm ([`scratch_bases`]: the suites' file trees, the exec tests' program directory,
//! the BBN FIFOs, the libs suite's mailboxes and logs; made private and exclusively by
//! [`scratch_dir`]), memory cgroups
//! `sysperf-<pid>-<n>` (see [`super::cgroup`]) and tracefs instances `sysperf-<pid>[-block]`
//! (see `trace::tracefs`). Their owners remove them on every path that runs code (drop,
//! Ctrl-C); a process killed with SIGKILL cannot. So the harness removes a killed worker's
//! directories as soon as it has reaped the worker ([`remove_owned_by`]), and `run`, `trace`,
//! `profile` and `doctor` sweep what older processes left ([`sweep_temp`]), saying so.
//!
//! An owner is alive only while its pid belongs to a sysperf process (named `sysperf` or
//! `sysperf:<benchmark>`, not a zombie) that started before the leftover was made
//! ([`owner_alive`]): any process may call itself sysperf, but one that got the pid after the
//! owner died started after everything the owner made. The start time (/proc/PID/stat field
//! 22, clock ticks since boot) is compared with the owner's own start time where the leftover
//! records it (the switch records of `engine::switch`), else with the leftover's modification
//! time, which its owner set while alive. So a reused pid neither keeps a leftover forever nor
//! lets a live sysperf's directory be taken. This module removes only directories named as
//! above and owned by the current user, in a temporary directory no one else controls
//! (another user's, or one whose owner lives in another PID namespace, is never touched, nor
//! is a link); it measures and prints nothing.

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

/// What a leftover tells of the process that made it, to tell that process from a later one
/// that got its pid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Made {
    /// The owner's start time, recorded with the leftover (clock ticks since boot, as
    /// /proc/PID/stat field 22 gives it): only the process that started then is the owner.
    ByStart(u64),
    /// When the leftover was made or last changed by its owner (its modification time): the
    /// owner started before it.
    At(std::time::SystemTime),
    /// Nothing (a leftover with no time of its own): any live sysperf with the pid counts.
    Unknown,
}

/// How far a start time may lie after a leftover's time and still be its owner's: file times
/// are taken from a coarse clock (a few ms behind) and a process's start time is converted
/// from the boot clock to the wall clock (exact unless the wall clock is stepped).
const CLOCK_SLACK_NS: i128 = 1_000_000_000;

/// A process's start time (clock ticks since boot), from /proc/PID/stat.
pub fn start_ticks(pid: Pid) -> Option<u64> {
    procfs::start_ticks(u32::try_from(pid).ok()?)
}

/// Whether `pid` is the live sysperf that made a leftover described by `made` (see the
/// module documentation): the one definition of a leftover's owner being alive.
pub fn owner_alive(pid: Pid, made: Made) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    if !is_live_sysperf(&stat) {
        return false;
    }
    let start = procfs::parse_pid_stat(&stat).and_then(|s| s.start_ticks);
    match (made, start) {
        (Made::ByStart(t), Some(s)) => s == t,
        (Made::At(when), Some(s)) => {
            let hz = i128::from(sys::clock_ticks());
            let (boot_ns, wall_ns) = sys::boot_and_wall_ns();
            // The start on the wall clock: now, less the time since the start.
            let started = wall_ns - (i128::from(boot_ns) - i128::from(s) * 1_000_000_000 / hz);
            let made_ns = match when.duration_since(std::time::UNIX_EPOCH) {
                Ok(d) => d.as_nanos() as i128,
                Err(e) => -(e.duration().as_nanos() as i128),
            };
            started <= made_ns + CLOCK_SLACK_NS
        }
        // Unreadable start time: the name decides, as when nothing is recorded.
        (_, None) | (Made::Unknown, _) => true,
    }
}

/// Whether the owner `pid` of a leftover described by `made` no longer runs
/// (`!`[`owner_alive`]).
pub fn owner_gone(pid: Pid, made: Made) -> bool {
    !owner_alive(pid, made)
}

/// The modification time of a leftover, as a [`Made`] (Unknown when it cannot be read).
pub fn made_of(meta: &std::io::Result<std::fs::Metadata>) -> Made {
    meta.as_ref()
        .ok()
        .and_then(|m| m.modified().ok())
        .map_or(Made::Unknown, Made::At)
}

/// Private scratch directories, named for this module (see [`crate::safedir::scratch_dir`]).
pub use crate::safedir::scratch_dir;

/// Removes the sysperf directories in `dir` whose owner `remove` picks (given its pid and
/// what the directory tells of it), returning their paths. Only directories of this user's
/// own (by lstat), in a `dir` no one else controls ([`crate::safedir`]; the removal goes
/// through its open descriptor): never a link, never another user's directory however it is
/// named (its owner may live in another PID namespace).
fn remove_where(dir: &Path, remove: impl Fn(Pid, Made) -> bool) -> Vec<PathBuf> {
    use crate::safedir::{Dir, Need};
    let Ok(base) = Dir::open(dir, Need::Shared) else {
        return Vec::new();
    };
    let Ok(names) = base.names() else {
        return Vec::new();
    };
    let me = sys::euid();
    let mut removed = Vec::new();
    for name in names {
        let Some(pid) = owner_pid(&name.to_string_lossy()) else {
            continue;
        };
        let Ok(Some(st)) = base.stat(&name) else {
            continue;
        };
        if st.st_mode & libc::S_IFMT != libc::S_IFDIR || st.st_uid != me {
            continue;
        }
        let made = Made::At(
            std::time::UNIX_EPOCH
                + std::time::Duration::new(st.st_mtime.max(0) as u64, st.st_mtime_nsec as u32),
        );
        if remove(pid, made) && base.remove_tree(&name).is_ok() {
            removed.push(dir.join(&name));
        }
    }
    removed
}

/// Removes the sysperf directories in `dir` whose owner is gone.
pub fn sweep_temp(dir: &Path) -> Vec<PathBuf> {
    let me = sys::getpid();
    remove_where(dir, |pid, made| pid != me && owner_gone(pid, made))
}

/// The directories sysperf makes scratch directories in: the temporary directory, /var/tmp
/// (the suites' disk directory when the temporary one is tmpfs) and /dev/shm (the libs
/// suite's tmpfs locks), each once.
pub fn scratch_bases() -> Vec<PathBuf> {
    let mut bases: Vec<PathBuf> = Vec::new();
    for b in [
        std::env::temp_dir(),
        PathBuf::from("/var/tmp"),
        PathBuf::from("/dev/shm"),
    ] {
        let same = |a: &PathBuf| {
            a == &b || std::fs::canonicalize(a).ok() == std::fs::canonicalize(&b).ok()
        };
        if b.is_dir() && !bases.iter().any(same) {
            bases.push(b);
        }
    }
    bases
}

/// Removes the sysperf directories whose owner is gone from every scratch base.
pub fn sweep_scratch() -> Vec<PathBuf> {
    scratch_bases().iter().flat_map(|b| sweep_temp(b)).collect()
}

/// Removes the scratch directories of `pid`, a worker just killed and reaped, from every
/// scratch base.
pub fn remove_owned_by(pid: Pid) -> Vec<PathBuf> {
    scratch_bases()
        .iter()
        .flat_map(|b| remove_owned_by_in(b, pid))
        .collect()
}

fn remove_owned_by_in(dir: &Path, pid: Pid) -> Vec<PathBuf> {
    remove_where(dir, |owner, _| owner == pid)
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

/// The prefix of the network namespaces the net suite's long haul makes
/// (`sysperf-PID-TAG`).
pub const NETNS_PREFIX: &str = "sysperf-";

/// This process's part of its long-haul names: 16 random bits as 4 hex digits, drawn once
/// (so that a process finds its own links again), so that the names are this run's even
/// where a pid is not (a sysperf in another PID namespace sharing the network namespace).
pub fn link_tag() -> &'static str {
    static TAG: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TAG.get_or_init(|| {
        let mut r = [0u8; 2];
        // Without randomness the tag is fixed: names are then per pid, as they were.
        let _ = sys::random_bytes(&mut r);
        format!("{:02x}{:02x}", r[0], r[1])
    })
}

/// The network namespace and the two veth ends of process `pid` with tag `tag` (interface
/// names are at most 15 characters: `sp` + 7 digits + `.` + 4 hex digits + 1).
pub fn link_names(pid: u32, tag: &str) -> (String, String, String) {
    (
        format!("{NETNS_PREFIX}{pid}-{tag}"),
        format!("sp{pid}.{tag}a"),
        format!("sp{pid}.{tag}b"),
    )
}

/// The owner of a long-haul name: a namespace `sysperf-PID[-TAG]`, or a veth end or TUN
/// device `spPID[.TAG]` + a, b, c or d (without a tag: the names before #36).
pub fn link_owner(name: &str) -> Option<u32> {
    let digits = |d: &str| {
        (!d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            .then(|| d.parse().ok())
            .flatten()
    };
    let tag = |t: &str| t.len() == 4 && t.bytes().all(|b| b.is_ascii_hexdigit());
    if let Some(rest) = name.strip_prefix(NETNS_PREFIX) {
        return match rest.split_once('-') {
            Some((pid, t)) if tag(t) => digits(pid),
            Some(_) => None,
            None => digits(rest),
        };
    }
    let rest = name
        .strip_prefix("sp")?
        .strip_suffix(['a', 'b', 'c', 'd'])?;
    match rest.split_once('.') {
        Some((pid, t)) if tag(t) => digits(pid),
        Some(_) => None,
        None => digits(rest),
    }
}

/// The two TUN devices of the long haul's delay line of process `pid` with tag `tag`:
/// `spPID.TAGc` in the worker's namespace, `spPID.TAGd` in its namespace (at most 15
/// characters, as the veth ends).
pub fn tun_names(pid: u32, tag: &str) -> (String, String) {
    (format!("sp{pid}.{tag}c"), format!("sp{pid}.{tag}d"))
}

/// Removes the veth links, the delay line's TUN devices and the network namespaces of the
/// worker `pid` (the net suite's long haul), which was killed and could not remove them
/// itself; returns what it removed. They live in the kernel, not in a scratch directory, and
/// are found by name (the tag is the worker's). (A TUN device goes by itself when its
/// owner's descriptors close; one still held, by a process of the owner's that outlived it,
/// is deleted here. The far veth end and TUN device go with the namespace.)
pub fn remove_links_owned_by(pid: u32) -> Vec<String> {
    let ip = |args: &[&str]| {
        crate::programs::command("ip").is_ok_and(|mut c| {
            c.args(args)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
    };
    let owned = |dir: &str| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| link_owner(n) == Some(pid))
            .collect();
        v.sort();
        v
    };
    let mut removed = Vec::new();
    for dev in owned("/sys/class/net") {
        let here = dev.ends_with('a') || dev.ends_with('c');
        if here && ip(&["link", "del", &dev]) {
            removed.push(dev);
        }
    }
    for ns in owned("/run/netns") {
        if ip(&["netns", "del", &ns]) {
            removed.push(ns);
        }
    }
    removed
}

/// A process that only calls itself sysperf, for tests of [`owner_alive`].
#[cfg(test)]
pub(crate) mod testing {
    use std::os::unix::fs::PermissionsExt;

    /// A copy of sleep(1) named `sysperf-impostor` (so its command name starts with
    /// "sysperf"), running until dropped.
    pub struct Impostor {
        child: std::process::Child,
        _dir: tempfile::TempDir,
    }

    impl Impostor {
        pub fn start() -> Impostor {
            let dir = tempfile::tempdir().unwrap();
            let exe = dir.path().join("sysperf-impostor");
            std::fs::copy("/bin/sleep", &exe).unwrap();
            std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
            let child = crate::programs::at(&exe)
                .unwrap()
                .arg("60")
                .spawn()
                .unwrap();
            // Named so once exec is done.
            let stat = format!("/proc/{}/stat", child.id());
            for _ in 0..500 {
                if std::fs::read_to_string(&stat).is_ok_and(|s| super::is_live_sysperf(&s)) {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Impostor { child, _dir: dir }
        }

        pub fn pid(&self) -> super::Pid {
            self.child.id() as super::Pid
        }
    }

    impl Drop for Impostor {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_haul_names_give_their_owner() {
        let tag = link_tag();
        assert_eq!(tag.len(), 4);
        let (ns, a, b) = link_names(4_194_303, tag);
        let (c, d) = tun_names(4_194_303, tag);
        for n in [ns, a, b, c, d] {
            assert!(n.len() <= 15 || n.starts_with(NETNS_PREFIX), "{n}");
            assert_eq!(link_owner(&n), Some(4_194_303), "{n}");
        }
        // Names made before the tag (left by an older sysperf) are still recognised.
        for n in ["sysperf-12", "sp12a", "sp12d"] {
            assert_eq!(link_owner(n), Some(12), "{n}");
        }
        for n in [
            "sp12e",
            "sp+12a",
            "spa",
            "sp.00a",
            "sp12.xyz0a",
            "sp12.00a",
            "sysperf-x",
            "eth0",
            "sysperf-12-calls",
            "sysperf-12-ab12cd",
        ] {
            assert_eq!(link_owner(n), None, "{n}");
        }
    }

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

    #[test]
    fn a_killed_workers_scratch_in_dev_shm_and_var_tmp_is_removed() {
        // Scratch directories of a pid that cannot be live (beyond pid_max) in /dev/shm and
        // /var/tmp, as the libs suite's locks and log leave them when SIGKILLed.
        let mut planted = Vec::new();
        for base in ["/dev/shm", "/var/tmp"] {
            if !Path::new(base).is_dir() {
                continue;
            }
            let d = Path::new(base).join(format!("sysperf-libs-999999997-{}", sys::getpid()));
            std::fs::create_dir(&d).unwrap();
            std::fs::write(d.join("mbox"), "x").unwrap();
            planted.push(d);
        }
        let removed = remove_owned_by(999_999_997);
        for d in &planted {
            assert!(
                removed.contains(d),
                "{} not removed: {removed:?}",
                d.display()
            );
            assert!(!d.exists());
        }
        // And the sweep of gone owners looks there too.
        for d in &planted {
            std::fs::create_dir(d).unwrap();
        }
        let swept = sweep_scratch();
        for d in &planted {
            assert!(swept.contains(d) && !d.exists(), "{swept:?}");
        }
        assert!(scratch_bases().contains(&std::env::temp_dir()));
    }

    #[test]
    fn another_users_directory_named_like_a_stale_one_is_never_removed() {
        if sys::euid() != 0 {
            println!("skipped: needs root to make a directory owned by another user");
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        let theirs = tmp.path().join("sysperf-workload-999999999-abc");
        std::fs::create_dir(&theirs).unwrap();
        std::fs::write(theirs.join("data"), "keep").unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        let ours = tmp.path().join("sysperf-workload-999999998-abc");
        std::fs::create_dir(&ours).unwrap();
        assert_eq!(sweep_temp(tmp.path()), vec![ours]);
        assert!(theirs.join("data").exists());
        assert!(remove_owned_by_in(tmp.path(), 999_999_999).is_empty());
        assert!(theirs.join("data").exists());
    }

    #[test]
    fn scratch_directories_are_private_and_never_reuse_a_planted_name() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let tmp = tempfile::tempdir().unwrap();
        let a = scratch_dir(tmp.path(), "feder").unwrap();
        let b = scratch_dir(tmp.path(), "feder").unwrap();
        assert_ne!(a, b);
        let meta = std::fs::symlink_metadata(&a).unwrap();
        assert!(meta.is_dir());
        assert_eq!(meta.permissions().mode() & 0o777, 0o700);
        assert_eq!(meta.uid(), sys::euid());
        let name = a.file_name().unwrap().to_str().unwrap();
        assert!(
            name.starts_with(&format!("sysperf-feder-{}-", sys::getpid())),
            "{name}"
        );
        assert_eq!(owner_pid(name), Some(sys::getpid()));
        assert_eq!(
            name.len(),
            format!("sysperf-feder-{}-", sys::getpid()).len() + 12
        );
        // A base where every name exists (a file in place of the directory) is an error, not
        // a loop or a removal.
        let not_dir = tmp.path().join("file");
        std::fs::write(&not_dir, "x").unwrap();
        assert!(scratch_dir(&not_dir, "feder").is_err());
        assert_eq!(std::fs::read(&not_dir).unwrap(), b"x");
    }

    /// A TUN device of a dead owner's delay line, still held open by some other process, is
    /// deleted with its owner's links (root only).
    #[test]
    fn a_held_tun_device_of_a_gone_owner_is_removed() {
        if sys::euid() != 0 || !Path::new("/dev/net/tun").exists() {
            println!("skipped: needs root and /dev/net/tun");
            return;
        }
        // Above any pid_max (2^22), so gone; and short enough for an interface name.
        let gone = 4_194_305;
        let (c, _) = tun_names(gone, link_tag());
        let held = sys::open_tun(&c).unwrap();
        let dev = format!("/sys/class/net/{c}");
        assert!(Path::new(&dev).exists());
        assert_eq!(remove_links_owned_by(gone), vec![c.clone()]);
        assert!(!Path::new(&dev).exists());
        drop(held);
    }

    /// A process that calls itself sysperf and got the pid of a leftover's owner after the
    /// leftover was made is not its owner (#29): the leftover goes.
    #[test]
    fn a_process_named_sysperf_that_started_after_the_leftover_is_not_its_owner() {
        let tmp = tempfile::tempdir().unwrap();
        let impostor = testing::Impostor::start();
        let pid = impostor.pid();
        assert!(is_live_sysperf(
            &std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap()
        ));
        // Made (and last changed) by its owner a minute before the impostor started.
        let left = tmp
            .path()
            .join(format!("sysperf-workload-{pid}-0123456789ab"));
        std::fs::create_dir(&left).unwrap();
        let past = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        std::fs::File::open(&left)
            .unwrap()
            .set_modified(past)
            .unwrap();
        // One made after it started may be its own.
        let fresh = tmp.path().join(format!("sysperf-feder-{pid}-0123456789ab"));
        std::fs::create_dir(&fresh).unwrap();
        let removed = sweep_temp(tmp.path());
        assert_eq!(removed, vec![left.clone()], "the impostor kept it");
        assert!(!left.exists() && fresh.exists());
    }
}
