//! Memory-limited cgroups for trials that must page: the harness (the parent) makes one per
//! trial with [`Limited::create`], hands its directory to the worker (`Request.cgroup`, which
//! the worker joins before setup), and removes it when the [`Limited`] is dropped, after the
//! worker's process group is dead: on success, failure, timeout and interruption alike.
//!
//! 4.2BSD's paging tests (Leffler, Karels and McKusick 1984, §3.2.8) ran on a VAX-11/750 whose
//! 4.5 MB of memory was smaller than their 7.3 MB array. Today's machines hold such an array
//! many times over, so a cgroup's memory limit stands in for the small memory: the kernel
//! reclaims the cgroup's pages when its charge reaches the limit, as the 1984 pager stole
//! pages when free memory ran out. It limits one process tree, not the machine.
//!
//! Both interfaces are supported: cgroup v1 (`memory.limit_in_bytes` under the memory
//! controller's mount, children made under this process's own memory cgroup, else the
//! hierarchy's root) and cgroup v2 (`memory.max`, children made under this process's cgroup
//! or the nearest ancestor whose `cgroup.subtree_control` offers the memory controller).
//! Directories are named `sysperf-<pid>-<n>`; ones left by a sysperf that was SIGKILLed
//! (nothing else can leave one) are removed by the next `create` in the same place. Where
//! sysperf itself turned the memory controller on in a v2 parent's `cgroup.subtree_control`,
//! it turns it off again when it exits ([`withdraw_offers`]), and the sweep does so for a
//! sysperf that was killed (marked by an empty cgroup `sysperf-<pid>-offered-memory`), in
//! both cases only when the parent has no other child cgroup that may need it. Two sysperfs
//! may share a parent: each holds an exclusive flock(2) on the parent directory while it turns
//! memory on and makes its child, or checks for children and turns memory off, so that one
//! never turns memory off between the other's check that it is on and its mkdir (the child
//! would have no memory.max: a trial without its limit).

use crate::fingerprint::parse_proc_cgroup;
use crate::sys;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use thiserror::Error;

/// How long removal waits for the cgroup's processes to die and its directory to go.
const REMOVE_PATIENCE: Duration = Duration::from_secs(3);
/// How long a sysperf waits for another's hold on a v2 parent (which lasts a few system
/// calls: a check, a write to cgroup.subtree_control, a mkdir).
const PARENT_PATIENCE: Duration = Duration::from_secs(10);

/// Which cgroup interface a directory belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

impl Version {
    /// The file that holds the memory limit.
    pub fn limit_file(self) -> &'static str {
        match self {
            Version::V1 => "memory.limit_in_bytes",
            Version::V2 => "memory.max",
        }
    }
}

/// Why no memory-limited cgroup could be made; each says what to do about it.
#[derive(Debug, Error)]
pub enum CgroupError {
    #[error("no memory cgroup controller here: neither cgroup v1's memory hierarchy (/sys/fs/cgroup/memory) nor a cgroup v2 hierarchy offering \"memory\" in cgroup.controllers; boot with the memory controller enabled (cgroup_enable=memory) to run memory-limited trials")]
    NoController,
    #[error("needs permission to create a memory cgroup in {}: {source}; run sysperf as root, or delegate a cgroup to your user (cgroup v2: `systemd-run --user --scope -p Delegate=yes sysperf ...`)", dir.display())]
    Create {
        dir: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{} is not a cgroup directory (mkdir made no {file} in it); give the memory cgroup hierarchy's directory", dir.display())]
    NotACgroup { dir: PathBuf, file: &'static str },
    #[error("cannot offer the memory controller to the children of {} ({source}): cgroup v2 lets a cgroup enable controllers in cgroup.subtree_control only while it has no processes of its own (\"no internal processes\"); run sysperf in a cgroup of its own under a delegated parent, e.g. `systemd-run --scope -p Delegate=yes sysperf ...`", dir.display())]
    NoInternalProcesses {
        dir: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("another process has held {} locked (flock) for over {} s, where sysperf turns the memory controller on and makes its cgroups; see who in /proc/locks (its inode is the directory's), or try again when it is done", dir.display(), PARENT_PATIENCE.as_secs())]
    Busy { dir: PathBuf },
    #[error("locking {}: {source}", dir.display())]
    Lock {
        dir: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("setting {} to {limit} bytes: {source}", file.display())]
    Limit {
        file: PathBuf,
        limit: u64,
        #[source]
        source: io::Error,
    },
}

impl crate::error::Exit for CgroupError {
    fn exit_code(&self) -> i32 {
        crate::exit::FAILURE
    }
}

/// A directory in which limited cgroups are made, with its interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    pub dir: PathBuf,
    pub version: Version,
}

impl Root {
    /// An explicit place (tests inject fake ones).
    pub fn at(dir: impl Into<PathBuf>, version: Version) -> Root {
        Root {
            dir: dir.into(),
            version,
        }
    }

    /// Where this process may make memory cgroups, best first: its own memory cgroup, then
    /// (v1) the hierarchy's root or (v2) each ancestor up to the root.
    pub fn candidates() -> Result<Vec<Root>, CgroupError> {
        let cg = std::fs::read_to_string("/proc/self/cgroup")
            .map(|s| parse_proc_cgroup(&s))
            .unwrap_or_default();
        let base = Path::new("/sys/fs/cgroup");
        if let Some((ctrls, path)) = cg.v1_controller("memory") {
            let mount = [base.join("memory"), base.join(ctrls.join(","))]
                .into_iter()
                .find(|m| m.join("memory.limit_in_bytes").is_file())
                .ok_or(CgroupError::NoController)?;
            let own = join_cgroup_path(&mount, path);
            let mut v = Vec::new();
            if own != mount && own.is_dir() {
                v.push(Root::at(own, Version::V1));
            }
            v.push(Root::at(mount, Version::V1));
            return Ok(v);
        }
        let mount = [base.to_path_buf(), base.join("unified")]
            .into_iter()
            .find(|m| {
                std::fs::read_to_string(m.join("cgroup.controllers"))
                    .is_ok_and(|c| c.split_whitespace().any(|x| x == "memory"))
            })
            .ok_or(CgroupError::NoController)?;
        let mut dir = join_cgroup_path(&mount, cg.unified().unwrap_or("/"));
        let mut v = Vec::new();
        while dir.starts_with(&mount) {
            if dir.is_dir() {
                v.push(Root::at(dir.clone(), Version::V2));
            }
            if dir == mount || !dir.pop() {
                break;
            }
        }
        Ok(v)
    }

    /// A v2 parent must offer the memory controller to its children; enabling it fails with
    /// EBUSY while the parent has processes of its own (the root cgroup excepted).
    fn offer_memory(&self) -> Result<(), CgroupError> {
        if self.version == Version::V1 {
            return Ok(());
        }
        let ctl = self.dir.join("cgroup.subtree_control");
        let on = std::fs::read_to_string(&ctl)
            .is_ok_and(|c| c.split_whitespace().any(|x| x == "memory"));
        if on {
            return Ok(());
        }
        let r = std::fs::OpenOptions::new()
            .write(true)
            .open(&ctl)
            .and_then(|mut f| f.write_all(b"+memory"));
        match r {
            Ok(()) => {
                // Recorded twice: in this process, to turn it off at exit (see
                // [`withdraw_offers`]), and as an empty cgroup named after it, for the sweep
                // of a sysperf that was killed before it could.
                let _ = std::fs::create_dir(self.dir.join(offer_mark(sys::getpid())));
                if let Ok(mut v) = OFFERED.lock() {
                    v.push(self.dir.clone());
                }
                Ok(())
            }
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                Err(CgroupError::NoInternalProcesses {
                    dir: self.dir.clone(),
                    source: e,
                })
            }
            Err(e) => Err(CgroupError::Create {
                dir: self.dir.clone(),
                source: e,
            }),
        }
    }
}

/// An exclusive flock(2) on a v2 parent directory, held while this process turns memory on
/// and makes a child there, or looks for children and turns memory off (see the module
/// documentation); released when dropped. Not reentrant: never taken twice at once.
struct ParentLock(#[allow(dead_code)] std::fs::File);

fn lock_parent(dir: &Path, patience: Duration) -> Result<ParentLock, CgroupError> {
    let lock_err = |source| CgroupError::Lock {
        dir: dir.to_path_buf(),
        source,
    };
    let f = std::fs::File::open(dir).map_err(lock_err)?;
    let deadline = Instant::now() + patience;
    loop {
        match f.try_lock() {
            Ok(()) => return Ok(ParentLock(f)),
            Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(CgroupError::Busy {
                    dir: dir.to_path_buf(),
                })
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(lock_err(e)),
        }
    }
}

/// The v2 parents whose `cgroup.subtree_control` this process turned memory on in.
static OFFERED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// The name of the empty cgroup that says `pid` turned memory on in its parent.
fn offer_mark(pid: sys::Pid) -> String {
    format!("sysperf-{pid}-offered-memory")
}

/// Turns the memory controller off again in the parents where this process turned it on,
/// if they have no other children (which may need it: then it stays on); called when
/// sysperf exits normally. Returns the parents where it was turned off.
pub fn withdraw_offers() -> Vec<PathBuf> {
    let dirs = OFFERED
        .lock()
        .map(|mut v| std::mem::take(&mut *v))
        .unwrap_or_default();
    dirs.into_iter()
        .filter(|d| withdraw(d, sys::getpid()))
        .collect()
}

/// Removes `owner`'s mark in `dir` and writes "-memory" to its `cgroup.subtree_control`
/// when no child cgroup is left there; true if it did.
fn withdraw(dir: &Path, owner: sys::Pid) -> bool {
    let Ok(_held) = lock_parent(dir, PARENT_PATIENCE) else {
        // Whoever holds it is using the parent: memory stays on.
        return false;
    };
    let _ = std::fs::remove_dir(dir.join(offer_mark(owner)));
    let children = std::fs::read_dir(dir)
        .map(|es| {
            es.flatten()
                .any(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        })
        .unwrap_or(true);
    !children
        && std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.subtree_control"))
            .and_then(|mut f| f.write_all(b"-memory"))
            .is_ok()
}

/// `mount` joined with a cgroup path as /proc/self/cgroup prints it ("/a/b").
fn join_cgroup_path(mount: &Path, path: &str) -> PathBuf {
    let mut p = mount.to_path_buf();
    for c in path
        .split('/')
        .filter(|c| !c.is_empty() && *c != "." && *c != "..")
    {
        p.push(c);
    }
    p
}

/// Numbers the cgroups this process makes.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// A cgroup with a memory limit, removed (with anything still in it) when dropped.
#[derive(Debug)]
pub struct Limited {
    path: PathBuf,
    version: Version,
    limit: u64,
    removed: bool,
}

impl Limited {
    /// A fresh cgroup limited to `limit_bytes`, in the first place this process may make one
    /// (see [`Root::candidates`]); the first place's error when none works.
    pub fn create(limit_bytes: u64) -> Result<Limited, CgroupError> {
        let mut first = None;
        for root in Root::candidates()? {
            match Limited::create_in(&root, limit_bytes) {
                Ok(l) => return Ok(l),
                Err(e) => {
                    first.get_or_insert(e);
                }
            }
        }
        Err(first.unwrap_or(CgroupError::NoController))
    }

    /// A fresh cgroup limited to `limit_bytes` under `root`.
    pub fn create_in(root: &Root, limit_bytes: u64) -> Result<Limited, CgroupError> {
        let _ = remove_stale(&root.dir);
        let _held = match root.version {
            Version::V2 => Some(lock_parent(&root.dir, PARENT_PATIENCE)?),
            Version::V1 => None,
        };
        root.offer_memory()?;
        let name = format!(
            "sysperf-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let path = root.dir.join(name);
        std::fs::create_dir(&path).map_err(|source| CgroupError::Create {
            dir: root.dir.clone(),
            source,
        })?;
        let mut made = Limited {
            path,
            version: root.version,
            limit: limit_bytes,
            removed: false,
        };
        // No O_CREAT: in a cgroup the kernel made the file with the directory; anywhere else
        // its absence shows the directory is not a cgroup (the Drop of `made` removes it).
        let file = made.path.join(root.version.limit_file());
        let w = std::fs::OpenOptions::new()
            .write(true)
            .open(&file)
            .and_then(|mut f| f.write_all(limit_bytes.to_string().as_bytes()));
        match w {
            Ok(()) => Ok(made),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                made.removed = std::fs::remove_dir(&made.path).is_ok();
                Err(CgroupError::NotACgroup {
                    dir: root.dir.clone(),
                    file: root.version.limit_file(),
                })
            }
            Err(source) => Err(CgroupError::Limit {
                file,
                limit: limit_bytes,
                source,
            }),
        }
    }

    /// The cgroup's directory (what the worker joins).
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn version(&self) -> Version {
        self.version
    }

    pub fn limit_bytes(&self) -> u64 {
        self.limit
    }

    /// The pids in the cgroup now.
    pub fn pids(&self) -> Vec<sys::Pid> {
        pids_in(&self.path)
    }

    /// Kills whatever is still in the cgroup, waits for it to empty and removes it. Called by
    /// Drop; idempotent.
    pub fn remove(&mut self) -> io::Result<()> {
        if self.removed {
            return Ok(());
        }
        let deadline = Instant::now() + REMOVE_PATIENCE;
        loop {
            let pids = self.pids();
            if pids.is_empty() || Instant::now() >= deadline {
                break;
            }
            for pid in pids {
                let _ = sys::kill(pid, libc::SIGKILL);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if self.version == Version::V1 {
            // Reclaims the page cache still charged to the cgroup, so that no offline memory
            // cgroup lingers holding it; best effort (rmdir reparents the charge anyway).
            let _ = std::fs::write(self.path.join("memory.force_empty"), b"0");
        }
        loop {
            match std::fs::remove_dir(&self.path) {
                Ok(()) => {
                    self.removed = true;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    self.removed = true;
                    return Ok(());
                }
                Err(e) if Instant::now() >= deadline => return Err(e),
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    }
}

impl Drop for Limited {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

fn pids_in(dir: &Path) -> Vec<sys::Pid> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Removes empty `sysperf-<pid>-<n>` cgroups under `dir` whose sysperf is gone (it was
/// SIGKILLed, the one way it leaves one behind), and turns memory off in `dir` again where
/// such a sysperf turned it on (see [`withdraw`]).
fn remove_stale(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    let mut marks = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(pid) = offer_owner(&name) {
            let made = super::janitor::made_of(&e.metadata());
            if pid != sys::getpid() && super::janitor::owner_gone(pid, made) {
                marks.push((pid, e.path()));
            }
            continue;
        }
        let Some(pid) = stale_owner(&name) else {
            continue;
        };
        // An empty cgroup whose owner is gone (a reused pid is not a sysperf).
        if pid != sys::getpid()
            && super::janitor::owner_gone(pid, super::janitor::made_of(&e.metadata()))
            && pids_in(&e.path()).is_empty()
            && std::fs::remove_dir(e.path()).is_ok()
        {
            removed.push(e.path());
        }
    }
    // After the gone owners' cgroups, so that they do not count as children needing memory.
    for (pid, mark) in marks {
        withdraw(dir, pid);
        removed.push(mark);
    }
    removed
}

/// Removes the memory cgroups left by sysperf processes that are gone, in every place this
/// process could make one; returns their paths. Nothing when cgroups are not available.
pub fn sweep_stale() -> Vec<PathBuf> {
    Root::candidates()
        .map(|roots| roots.iter().flat_map(|r| remove_stale(&r.dir)).collect())
        .unwrap_or_default()
}

/// The owner's pid of a directory named `sysperf-<pid>-<n>`.
fn stale_owner(name: &str) -> Option<sys::Pid> {
    let mut it = name.strip_prefix("sysperf-")?.splitn(2, '-');
    let pid = it.next()?.parse().ok()?;
    it.next()?.parse::<u64>().ok()?;
    Some(pid)
}

/// The pid in a mark named by [`offer_mark`].
fn offer_owner(name: &str) -> Option<sys::Pid> {
    name.strip_prefix("sysperf-")?
        .strip_suffix("-offered-memory")?
        .parse()
        .ok()
}

/// Whether a memory cgroup can be made here: makes and removes one; says where and how.
pub fn probe(limit_bytes: u64) -> Result<String, CgroupError> {
    let mut l = Limited::create(limit_bytes)?;
    let parent = l.path().parent().map(Path::to_path_buf).unwrap_or_default();
    let what = match l.version() {
        Version::V1 => "cgroup v1 memory.limit_in_bytes",
        Version::V2 => "cgroup v2 memory.max",
    };
    l.remove().map_err(|source| CgroupError::Create {
        dir: parent.clone(),
        source,
    })?;
    Ok(format!("{what} at {}", parent.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn here() -> Option<Limited> {
        match Limited::create(64 << 20) {
            Ok(l) => Some(l),
            Err(e) => {
                assert!(!sys::is_root() || std::env::var("CI").is_err(), "{e}");
                eprintln!("no memory cgroup here, skipping: {e}");
                None
            }
        }
    }

    /// A stand-in for a cgroup v2 parent: `cgroup.subtree_control` as a plain file, which
    /// keeps the last word written at its start.
    fn fake_v2_parent() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let ctl = tmp.path().join("cgroup.subtree_control");
        std::fs::write(&ctl, "").unwrap();
        (tmp, ctl)
    }

    #[test]
    fn memory_turned_on_in_a_parent_is_turned_off_at_exit_unless_others_use_it() {
        let (tmp, ctl) = fake_v2_parent();
        let root = Root::at(tmp.path(), Version::V2);
        root.offer_memory().unwrap();
        assert_eq!(std::fs::read_to_string(&ctl).unwrap(), "+memory");
        let mark = tmp.path().join(offer_mark(sys::getpid()));
        assert!(mark.is_dir());
        let withdrawn = withdraw_offers();
        assert!(
            withdrawn.contains(&tmp.path().to_path_buf()),
            "{withdrawn:?}"
        );
        assert_eq!(std::fs::read_to_string(&ctl).unwrap(), "-memory");
        assert!(!mark.exists());

        // Another child cgroup may need it: then it stays on.
        let (tmp, ctl) = fake_v2_parent();
        std::fs::create_dir(tmp.path().join("system.slice")).unwrap();
        Root::at(tmp.path(), Version::V2).offer_memory().unwrap();
        let withdrawn = withdraw_offers();
        assert!(!withdrawn.contains(&tmp.path().to_path_buf()));
        assert_eq!(std::fs::read_to_string(&ctl).unwrap(), "+memory");
        assert!(!tmp.path().join(offer_mark(sys::getpid())).exists());

        // Already on before: nothing recorded, nothing turned off.
        let (tmp, ctl) = fake_v2_parent();
        std::fs::write(&ctl, "cpu memory").unwrap();
        Root::at(tmp.path(), Version::V2).offer_memory().unwrap();
        assert!(!withdraw_offers().contains(&tmp.path().to_path_buf()));
        assert_eq!(std::fs::read_to_string(&ctl).unwrap(), "cpu memory");
    }

    #[test]
    fn the_sweep_turns_memory_off_where_a_killed_sysperf_turned_it_on() {
        let (tmp, ctl) = fake_v2_parent();
        std::fs::write(&ctl, "+memory").unwrap();
        // A pid beyond pid_max: its owner is gone; with its trial cgroup left too.
        let mark = tmp.path().join(offer_mark(999_999_999));
        std::fs::create_dir(&mark).unwrap();
        let trial = tmp.path().join("sysperf-999999999-3");
        std::fs::create_dir(&trial).unwrap();
        let removed = remove_stale(tmp.path());
        assert!(
            removed.contains(&mark) && removed.contains(&trial),
            "{removed:?}"
        );
        assert_eq!(std::fs::read_to_string(&ctl).unwrap(), "-memory");
        // A live owner's mark stays.
        let mine = tmp.path().join(offer_mark(sys::getpid()));
        std::fs::create_dir(&mine).unwrap();
        std::fs::write(&ctl, "+memory").unwrap();
        assert!(remove_stale(tmp.path()).is_empty());
        assert!(mine.exists());
        assert_eq!(std::fs::read_to_string(&ctl).unwrap(), "+memory");
        assert_eq!(offer_owner("sysperf-12-offered-memory"), Some(12));
        assert_eq!(stale_owner("sysperf-12-offered-memory"), None);
    }

    /// Another sysperf in the middle of making its child (it holds the parent: memory is on,
    /// its mkdir comes next) is waited for: the withdrawal then sees the child and leaves
    /// memory on. Without the lock, the withdrawal saw no child and turned memory off under
    /// the other's new cgroup (#36).
    #[test]
    fn a_withdrawal_waits_for_another_sysperf_making_its_cgroup() {
        let (tmp, ctl) = fake_v2_parent();
        std::fs::write(&ctl, "+memory").unwrap();
        let dir = tmp.path().to_path_buf();
        // A killed sysperf's mark: the sweep withdraws its offer.
        std::fs::create_dir(dir.join(offer_mark(999_999_999))).unwrap();
        let held = lock_parent(&dir, PARENT_PATIENCE).unwrap();
        let sweeper = {
            let dir = dir.clone();
            std::thread::spawn(move || withdraw(&dir, 999_999_999))
        };
        std::thread::sleep(Duration::from_millis(100));
        std::fs::create_dir(dir.join(format!("sysperf-{}-0", sys::getpid()))).unwrap();
        drop(held);
        assert!(
            !sweeper.join().unwrap(),
            "memory turned off under a new cgroup"
        );
        assert_eq!(std::fs::read_to_string(&ctl).unwrap(), "+memory");
        assert!(!dir.join(offer_mark(999_999_999)).exists());
        // Held for longer than a waiter's patience: it says who to look for.
        let _held = lock_parent(&dir, PARENT_PATIENCE).unwrap();
        let e =
            std::thread::spawn(move || lock_parent(&dir, Duration::from_millis(20)).err().unwrap())
                .join()
                .unwrap();
        assert!(matches!(e, CgroupError::Busy { .. }), "{e:?}");
        assert!(e.to_string().contains("/proc/locks"), "{e}");
    }

    #[test]
    fn a_real_v2_parent_gets_its_subtree_control_back() {
        if !sys::is_root() {
            println!("skipped: needs root to make cgroups");
            return;
        }
        let mount = [
            Path::new("/sys/fs/cgroup"),
            Path::new("/sys/fs/cgroup/unified"),
        ]
        .into_iter()
        .find(|m| {
            std::fs::read_to_string(m.join("cgroup.subtree_control"))
                .is_ok_and(|c| c.split_whitespace().any(|x| x == "memory"))
        });
        let Some(mount) = mount else {
            println!("skipped: no cgroup v2 hierarchy offers the memory controller here");
            return;
        };
        let parent = mount.join(format!("sysperf-test-{}", sys::getpid()));
        if let Err(e) = std::fs::create_dir(&parent) {
            println!("skipped: cannot make a cgroup in {}: {e}", mount.display());
            return;
        }
        let read = || std::fs::read_to_string(parent.join("cgroup.subtree_control")).unwrap();
        let before = read();
        let made = Limited::create_in(&Root::at(&parent, Version::V2), 64 << 20);
        let after = read();
        drop(made);
        let withdrawn = withdraw_offers();
        let end = read();
        let _ = std::fs::remove_dir(&parent);
        assert!(!before.contains("memory"), "{before}");
        assert!(after.contains("memory"), "{after}");
        assert!(withdrawn.contains(&parent), "{withdrawn:?}");
        assert!(!end.contains("memory"), "{end}");
    }

    #[test]
    fn a_limited_cgroup_has_its_limit_and_vanishes_when_dropped() {
        let Some(l) = here() else { return };
        let dir = l.path().to_path_buf();
        assert!(dir
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(&format!("sysperf-{}-", std::process::id())));
        let limit = std::fs::read_to_string(dir.join(l.version().limit_file())).unwrap();
        assert_eq!(limit.trim().parse::<u64>().unwrap(), 64 << 20);
        drop(l);
        assert!(!dir.exists(), "{} left behind", dir.display());
    }

    #[test]
    fn drop_kills_what_is_still_inside() {
        let Some(l) = here() else { return };
        let dir = l.path().to_path_buf();
        let mut child = crate::programs::command("sleep")
            .unwrap()
            .arg("60")
            .spawn()
            .unwrap();
        std::fs::write(dir.join("cgroup.procs"), child.id().to_string()).unwrap();
        assert_eq!(l.pids(), vec![child.id() as sys::Pid]);
        // Reap the sleeper while Drop waits for the cgroup to empty, as the harness does.
        let reaper = std::thread::spawn(move || child.wait().unwrap());
        drop(l);
        let status = reaper.join().unwrap();
        assert!(!status.success(), "the sleeper was not killed: {status}");
        assert!(!dir.exists(), "{} left behind", dir.display());
    }

    #[test]
    fn a_place_without_permission_says_what_to_do() {
        // Even root may not mkdir in /sys itself.
        let e = Limited::create_in(&Root::at("/sys", Version::V1), 1 << 20).unwrap_err();
        assert!(matches!(e, CgroupError::Create { .. }), "{e:?}");
        let m = e.to_string();
        assert!(
            m.contains("run sysperf as root") && m.contains("delegate"),
            "{m}"
        );
        // A directory that is not a cgroup: refused for lack of permission when not root,
        // and as not a cgroup (its limit file does not appear) when root; nothing is left.
        let fake = tempfile::tempdir().unwrap();
        let ro = fake.path().join("ro");
        std::fs::create_dir(&ro).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
        let e = Limited::create_in(&Root::at(&ro, Version::V1), 1 << 20).unwrap_err();
        if sys::is_root() {
            assert!(matches!(e, CgroupError::NotACgroup { .. }), "{e:?}");
        } else {
            assert!(matches!(e, CgroupError::Create { .. }), "{e:?}");
        }
        assert_eq!(
            std::fs::read_dir(&ro).unwrap().count(),
            0,
            "left a directory behind"
        );
    }

    #[test]
    fn stale_names_are_recognised_exactly() {
        assert_eq!(stale_owner("sysperf-123-4"), Some(123));
        assert_eq!(stale_owner("sysperf-123"), None);
        assert_eq!(stale_owner("sysperf-x-4"), None);
        assert_eq!(stale_owner("other-123-4"), None);
        assert_eq!(
            join_cgroup_path(Path::new("/m"), "/a/../b/"),
            PathBuf::from("/m/a/b")
        );
    }
}
