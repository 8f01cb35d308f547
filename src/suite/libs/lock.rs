//! The `libs` suite's mailbox locks (§4.2.3): lock and unlock a mailbox by flock(2), by an
//! fcntl record lock, by creating a lock file with O_CREAT|O_EXCL, and by the old scheme of
//! link(2) of a private file to the lock name and unlink(2), in a directory of N other
//! entries, on a disk file system or on tmpfs.

use crate::bench::{Benchmark, Ctx};
use crate::clib;
use crate::error::BenchError;
use crate::suite::feder::Scratch;
use crate::sys;
use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockKind {
    Flock,
    Fcntl,
    Excl,
    Link,
}

/// The lock file's name (the `Excl` and `Link` schemes).
pub const LOCK_NAME: &std::ffi::CStr = c"mbox.lock";
const TMP_NAME: &std::ffi::CStr = c"mbox.tmp";

/// Where the mailbox directory is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Where {
    Disk,
    Tmpfs,
}

/// A tmpfs directory (/dev/shm), or why there is none.
pub fn tmpfs_dir() -> Result<PathBuf, String> {
    let p = PathBuf::from("/dev/shm");
    match sys::fs_type(&p) {
        Ok(m) if m == super::super::TMPFS_MAGIC => Ok(p),
        Ok(m) => Err(format!(
            "/dev/shm is {}, not tmpfs",
            super::super::fs_name(m)
        )),
        Err(e) => Err(format!("/dev/shm: {e}")),
    }
}

/// A mailbox directory with `entries` other files, and the mailbox open.
pub struct Mailbox {
    scratch: Scratch,
    dir: OwnedFd,
    mbox: OwnedFd,
}

impl Mailbox {
    pub fn new(place: Where, entries: usize) -> Result<Mailbox, BenchError> {
        let base = match place {
            Where::Disk => super::super::disk_dir().map_err(BenchError::Protocol)?.0,
            Where::Tmpfs => tmpfs_dir().map_err(BenchError::Protocol)?,
        };
        let scratch = Scratch::named(&base, "libs")?;
        for i in 0..entries {
            std::fs::write(scratch.path().join(format!("user{i}")), b"")
                .map_err(BenchError::sys("create (directory entry)"))?;
        }
        std::fs::write(scratch.path().join("mbox"), b"From nobody\n")
            .map_err(BenchError::sys("create (mailbox)"))?;
        std::fs::write(
            scratch.path().join(TMP_NAME.to_str().unwrap_or("mbox.tmp")),
            b"",
        )
        .map_err(BenchError::sys("create (link source)"))?;
        let path = CString::new(scratch.path().as_os_str().as_bytes())
            .map_err(|_| BenchError::Protocol("NUL in a path".into()))?;
        let dir = sys::open_at(libc::AT_FDCWD, &path, libc::O_RDONLY | libc::O_DIRECTORY)
            .map_err(BenchError::sys("open (directory)"))?;
        let mbox = sys::open_at(dir.as_raw_fd(), c"mbox", libc::O_RDWR)
            .map_err(BenchError::sys("open (mailbox)"))?;
        Ok(Mailbox { scratch, dir, mbox })
    }

    pub fn path(&self) -> &std::path::Path {
        self.scratch.path()
    }

    pub fn mbox_fd(&self) -> RawFd {
        self.mbox.as_raw_fd()
    }

    /// Takes the lock by `kind` (waiting for flock and fcntl; failing at once with EEXIST
    /// for the lock-file schemes when it is held).
    #[inline]
    pub fn lock(&self, kind: LockKind) -> Result<(), BenchError> {
        match kind {
            LockKind::Flock => {
                clib::flock(self.mbox_fd(), libc::LOCK_EX).map_err(BenchError::sys("flock"))
            }
            LockKind::Fcntl => clib::record_lock(self.mbox_fd(), libc::F_WRLCK, true)
                .map_err(BenchError::sys("fcntl(F_SETLKW)")),
            LockKind::Excl => sys::create_at(self.dir.as_raw_fd(), LOCK_NAME)
                .map(drop)
                .map_err(BenchError::sys("open(O_CREAT|O_EXCL)")),
            LockKind::Link => sys::link_at(self.dir.as_raw_fd(), TMP_NAME, LOCK_NAME)
                .map_err(BenchError::sys("link")),
        }
    }

    #[inline]
    pub fn unlock(&self, kind: LockKind) -> Result<(), BenchError> {
        match kind {
            LockKind::Flock => {
                clib::flock(self.mbox_fd(), libc::LOCK_UN).map_err(BenchError::sys("flock"))
            }
            LockKind::Fcntl => clib::record_lock(self.mbox_fd(), libc::F_UNLCK, true)
                .map_err(BenchError::sys("fcntl(F_SETLKW)")),
            LockKind::Excl | LockKind::Link => {
                sys::unlink_at(self.dir.as_raw_fd(), LOCK_NAME).map_err(BenchError::sys("unlink"))
            }
        }
    }
}

pub struct Lock {
    kind: LockKind,
    place: Where,
    entries: usize,
    mailbox: Option<Mailbox>,
}

impl Lock {
    pub fn new(kind: LockKind, place: Where, entries: usize) -> Lock {
        Lock {
            kind,
            place,
            entries,
            mailbox: None,
        }
    }
}

impl Benchmark for Lock {
    fn setup(&mut self, _: &Ctx, _: u64) -> Result<(), BenchError> {
        self.mailbox = Some(Mailbox::new(self.place, self.entries)?);
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let Some(m) = &self.mailbox else {
            return Err(BenchError::Protocol("lock: not set up".into()));
        };
        for _ in 0..iterations {
            m.lock(self.kind)?;
            m.unlock(self.kind)?;
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.mailbox = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::Fork;

    /// Whether another process (a forked child, with a descriptor of its own on the mailbox)
    /// can take the lock now without waiting.
    fn other_can_lock(m: &Mailbox, kind: LockKind) -> bool {
        // Opened before the fork (a description of its own), so that the child allocates
        // nothing in a multithreaded test process.
        let other = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(m.path().join("mbox"))
            .unwrap();
        let fd = other.as_raw_fd();
        match sys::fork().unwrap() {
            Fork::Child => {
                let got = match kind {
                    LockKind::Flock => clib::flock(fd, libc::LOCK_EX | libc::LOCK_NB).is_ok(),
                    LockKind::Fcntl => clib::record_lock(fd, libc::F_WRLCK, false).is_ok(),
                    // The lock-file schemes fail with EEXIST while the lock file exists.
                    _ => m.lock(kind).is_ok(),
                };
                sys::exit_now(i32::from(got));
            }
            Fork::Parent(pid) => sys::wait_child(pid).unwrap() == 1,
        }
    }

    #[test]
    fn every_scheme_excludes_another_process_until_unlocked() {
        for place in [Where::Disk, Where::Tmpfs] {
            let m = match Mailbox::new(place, 4) {
                Ok(m) => m,
                Err(e) => {
                    eprintln!("{place:?} skipped: {e}");
                    continue;
                }
            };
            for kind in [
                LockKind::Flock,
                LockKind::Fcntl,
                LockKind::Excl,
                LockKind::Link,
            ] {
                assert!(
                    other_can_lock(&m, kind),
                    "{kind:?} {place:?}: free at first"
                );
                // A child that took a lock-file lock leaves the file: remove it.
                if matches!(kind, LockKind::Excl | LockKind::Link) {
                    m.unlock(kind).unwrap();
                }
                m.lock(kind).unwrap();
                assert!(
                    !other_can_lock(&m, kind),
                    "{kind:?} {place:?}: not exclusive"
                );
                m.unlock(kind).unwrap();
                assert!(other_can_lock(&m, kind), "{kind:?} {place:?}: not released");
                if matches!(kind, LockKind::Excl | LockKind::Link) {
                    m.unlock(kind).unwrap();
                }
            }
        }
    }
}
