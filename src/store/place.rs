//! Where an SQLite store may live, checked before SQLite opens anything (#29), and who holds
//! a store's locks when a writer gives up.
//!
//! SQLite opens files by path, and the store's path is walked again by SQLite at every open
//! (it resolves symbolic links itself, then opens the store, its `-wal` and its `-shm` by
//! name). So the only safe store is one whose directory no one else can change: the store's
//! directory is trusted by [`crate::safedir`]'s rule with no sticky exception (others must not
//! even add names beside the store: a planted `-wal` or `-shm` would be used), every directory
//! above it is trusted, and the store, `-wal`, `-shm` and `-journal` files, where they exist,
//! are regular files of root's or this user's (another user's store file is theirs to edit
//! under us). SQLite is then given the directory's resolved path with SQLITE_OPEN_NOFOLLOW.
//! The default path and the PostgreSQL spool get the same checks as `--db`.
//!
//! It is not the store: it opens no database.

use super::{Result, StoreError};
use crate::safedir::{self, Dir, Need, WalkError};
use crate::sys;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The files SQLite keeps beside a store, which it would open if they are there.
pub const COMPANIONS: [&str; 3] = ["-wal", "-shm", "-journal"];

/// What to do about a store path another user controls.
const FIX: &str = "keep the store in a directory that only you or root can change, below \
                   directories only you or root can change, and name it with --db or \
                   SYSPERF_DB (under sudo -E, HOME is still the calling user's)";

/// A checked store location: its directory, open and trusted, and the file's name there.
#[derive(Debug)]
pub struct Place {
    dir: Dir,
    name: OsString,
}

impl Place {
    /// The path to give SQLite: the directory as resolved (no link left in it) and the name.
    pub fn sqlite_path(&self) -> PathBuf {
        self.dir.path().join(&self.name)
    }

    /// The store file, opened for reading without following a link or waiting on a FIFO;
    /// None when it does not exist yet.
    pub fn open_existing(&self) -> std::io::Result<Option<std::fs::File>> {
        match self
            .dir
            .open_file(&self.name, libc::O_RDONLY | libc::O_NONBLOCK)
        {
            Ok(f) => Ok(Some(f)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Makes the store file, empty, with `mode` (less the umask) when it does not exist yet;
    /// an existing one keeps its mode. SQLite would make a new store 0644 less the umask,
    /// and gives its `-wal`, `-shm` and `-journal` the store file's mode: in a directory
    /// others may enter, another user could then open the `-shm` and hold a read lock on it
    /// that stalls every writer (#41 item 8). Made by one exclusive create relative to the
    /// checked directory (O_EXCL | O_NOFOLLOW): a file made at the same moment by another
    /// sysperf of this user is left as it is.
    pub fn create_missing(&self, mode: u32) -> std::io::Result<()> {
        match self.dir.create(&self.name, mode) {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn companion(&self, suffix: &str) -> OsString {
        let mut n = self.name.clone();
        n.push(suffix);
        n
    }
}

fn parent(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

fn trusted_owner(uid: u32) -> bool {
    uid == 0 || uid == sys::euid()
}

/// Checks the store location `path` and opens its directory; with `create`, the
/// directories that do not exist are made (mode 0755 less the umask), each trusted as made.
pub fn resolve(path: &Path, create: bool) -> Result<Place> {
    resolve_at(path, path, create, 0)
}

fn resolve_at(shown: &Path, path: &Path, create: bool, links: usize) -> Result<Place> {
    let bad = |why: String| StoreError::BadPath {
        path: shown.to_path_buf(),
        why,
    };
    let Some(name) = path.file_name().map(OsStr::to_os_string) else {
        return Err(bad(
            "it names a directory; name a file, e.g. DIR/sysperf.db".into(),
        ));
    };
    let dir_path = parent(path);
    let walk_err = |e: WalkError| match e
        .refuse(format!("the store '{}'", shown.display()), FIX.to_string())
    {
        Ok(u) => StoreError::Unsafe(u),
        Err(WalkError::Io { at, source }) => StoreError::Access { path: at, source },
        Err(e) => StoreError::Access {
            path: shown.to_path_buf(),
            source: e.into_io(),
        },
    };
    // Every directory on the way first (the last one's own rule comes after the file's
    // type, so that a directory named as the store is said to be one).
    let dir = if create {
        Dir::open_or_create(dir_path, Need::Shared, 0o755)
    } else {
        Dir::open(dir_path, Need::Shared)
    }
    .map_err(walk_err)?;
    let stat = |dir: &Dir, n: &OsStr| {
        dir.stat(n).map_err(|source| StoreError::Access {
            path: dir.path().join(n),
            source,
        })
    };
    if let Some(st) = stat(&dir, &name)? {
        match st.st_mode & libc::S_IFMT {
            libc::S_IFLNK => {
                if !trusted_owner(st.st_uid) {
                    return Err(bad(format!(
                        "it is a symbolic link owned by another user ({}), which sysperf does \
                         not follow; name the file itself",
                        safedir::who(st.st_uid)
                    )));
                }
                if links >= 8 {
                    return Err(bad("it is a chain of too many symbolic links".into()));
                }
                let target = sys::readlink_at(
                    dir.fd(),
                    &std::ffi::CString::new(name.as_bytes())
                        .map_err(|_| bad("its name holds a NUL byte".into()))?,
                )
                .map_err(|source| StoreError::Access {
                    path: shown.to_path_buf(),
                    source,
                })?;
                return resolve_at(shown, &dir.path().join(target), false, links + 1);
            }
            libc::S_IFDIR => {
                return Err(bad(
                    "it is a directory; name a file in it, e.g. DIR/sysperf.db".into(),
                ))
            }
            libc::S_IFREG => {}
            _ => {
                return Err(bad(format!(
                    "it is not a regular file ({}); name a file",
                    safedir::kind_of(st.st_mode)
                )))
            }
        }
    }
    dir.check(Need::Private).map_err(walk_err)?;
    let place = Place { dir, name };
    for suffix in std::iter::once("").chain(COMPANIONS) {
        let n = place.companion(suffix);
        let Some(st) = stat(&place.dir, &n)? else {
            continue;
        };
        let file = place.dir.path().join(&n);
        let what = if suffix.is_empty() {
            format!("the store file '{}'", file.display())
        } else {
            format!("the store's {suffix} file '{}'", file.display())
        };
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(bad(format!(
                "{what} is {}, which SQLite would open; remove it",
                safedir::kind_of(st.st_mode)
            )));
        }
        if !trusted_owner(st.st_uid) {
            return Err(StoreError::Unsafe(safedir::Unsafe {
                what: format!("the store '{}'", shown.display()),
                problem: format!(
                    "{what} is owned by {}, who could change the runs in it at will",
                    safedir::who(st.st_uid)
                ),
                fix: "remove it if it was planted, or copy the store (cp) and name the copy".into(),
            }));
        }
    }
    Ok(place)
}

/// The processes holding a lock on the store `path` or its `-wal` and `-shm` files, other
/// than this one, one in words each ("pid 41 (python3) of user mallory (uid 1001): a read
/// lock on s.db-shm, a read lock on s.db"), from /proc/locks; a holder the kernel does not
/// name (an open file description lock) is found among the processes that have the file
/// open. Empty when none is found.
pub fn lock_holders(path: &Path) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let files: Vec<(String, u64, u64)> = std::iter::once("")
        .chain(COMPANIONS.iter().take(2).copied())
        .filter_map(|suffix| {
            let mut p = path.as_os_str().to_os_string();
            p.push(suffix);
            let m = std::fs::metadata(&p).ok()?;
            let shown = Path::new(&p).file_name()?.to_string_lossy().into_owned();
            Some((shown, m.dev(), m.ino()))
        })
        .collect();
    let me = std::process::id();
    let mut held: Vec<(u32, Vec<String>)> = Vec::new();
    for lock in crate::procfs::file_locks() {
        let Some((shown, _, _)) = files
            .iter()
            .find(|(_, dev, ino)| lock.dev_t() == *dev && lock.ino == *ino)
        else {
            continue;
        };
        let pids = match lock.pid {
            Some(p) => vec![p],
            None => crate::procfs::openers(lock.dev_t(), lock.ino),
        };
        let what = format!("a {} lock on {shown}", lock.kind);
        for pid in pids.into_iter().filter(|p| *p != me) {
            match held.iter_mut().find(|(p, _)| *p == pid) {
                Some((_, locks)) if !locks.contains(&what) => locks.push(what.clone()),
                Some(_) => {}
                None => held.push((pid, vec![what.clone()])),
            }
        }
    }
    held.into_iter()
        .map(|(pid, locks)| {
            format!(
                "{}: {}",
                crate::procfs::describe_process(pid),
                locks.join(", ")
            )
        })
        .collect()
}
