//! Directories sysperf can trust, and files made in them by descriptor rather than by a path
//! someone else could redirect (#29).
//!
//! A path is only as safe as every directory on it: whoever may rename entries in a directory
//! above can swap what lies below (a directory for a link, or for one full of planted names)
//! however carefully the last one is checked. So a directory is trusted by the rule OpenSSH
//! applies to the files it reads as root (StrictModes): it and every directory above it is
//! owned by root or by this process's user, and no one else may write it, except that a
//! sticky directory such as /tmp, where others may add names but not rename or remove ours,
//! may be on the way. A group only the owner is in (a user private group: the group named
//! after the user, listing no one else) is not someone else.
//!
//! The path is walked from / one component at a time, each opened with
//! openat(O_PATH | O_DIRECTORY | O_NOFOLLOW) in the one before and judged by fstat of what
//! was opened, not by a second lookup of its name; a symbolic link on the way is followed
//! only when root or this user owns it. The [`Dir`] at the end holds the last directory open:
//! files are made, renamed and removed relative to it (openat with O_EXCL | O_NOFOLLOW,
//! renameat, unlinkat), so no later change to the path's text redirects them; a library
//! call that wants a path is given `/proc/self/fd/N/NAME`, which the kernel resolves through
//! the open descriptor.
//!
//! What to do about a directory that is not trusted is the caller's choice: the switch state
//! directory, the store's directory and the temporary directories are refused ([`Unsafe`],
//! a user error), an output's directory is only pinned ([`Dir::pin`]). No `unsafe` here: the
//! system calls are `sys`'s.

use crate::sys;
use std::collections::VecDeque;
use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// How much a directory must be this process's alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Root's or this user's; others may add names only if it is sticky (a temporary
    /// directory, and every directory above the one trusted).
    Shared,
    /// Root's or this user's, and no one else may write it, sticky or not (the store's
    /// directory: names planted beside the store, its `-wal` and `-shm`, would be used).
    Private,
    /// This user's own, and no one else may write it (the switch state directory).
    Own,
}

/// Why a walk did not end in a trusted directory.
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    /// `at` (the directory asked for, one above it, or a link on the way) breaks the rule.
    #[error("'{}' {why}", .at.display())]
    Untrusted { at: PathBuf, why: String },
    /// `at` could not be looked at (it does not exist, is not a directory, ...).
    #[error("'{}': {source}", .at.display())]
    Io {
        at: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// A walk's error reaches the user as an [`Unsafe`] (exit 2) or as the I/O error it is.
impl crate::error::Exit for WalkError {
    fn exit_code(&self) -> i32 {
        match self {
            WalkError::Untrusted { .. } => crate::exit::USAGE,
            WalkError::Io { .. } => crate::exit::FAILURE,
        }
    }
}

impl WalkError {
    /// The refusal of `what` (e.g. "the state directory '/x'") for this reason, with what
    /// to do: an [`Unsafe`] for a broken rule, an I/O error as it is.
    pub fn refuse(self, what: impl Into<String>, fix: impl Into<String>) -> Result<Unsafe, Self> {
        match self {
            WalkError::Untrusted { .. } => Ok(Unsafe {
                what: what.into(),
                problem: self.to_string(),
                fix: fix.into(),
            }),
            e => Err(e),
        }
    }

    /// As an `io::Error` (for callers whose errors are I/O errors): the message kept.
    pub fn into_io(self) -> io::Error {
        match self {
            WalkError::Io { source, at } => {
                io::Error::new(source.kind(), format!("'{}': {source}", at.display()))
            }
            e => io::Error::new(io::ErrorKind::PermissionDenied, e.to_string()),
        }
    }
}

/// A place sysperf refuses to use because someone else could change it (exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("refusing {what}: {problem}; {fix}")]
pub struct Unsafe {
    pub what: String,
    pub problem: String,
    pub fix: String,
}

impl crate::error::Exit for Unsafe {
    fn exit_code(&self) -> i32 {
        crate::exit::USAGE
    }
}

/// An open directory (O_PATH), with the path it was reached by.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

const MAX_LINKS: usize = 40;

fn cstr(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
}

/// What a file type is, in words.
pub fn kind_of(mode: libc::mode_t) -> &'static str {
    match mode & libc::S_IFMT {
        libc::S_IFREG => "a regular file",
        libc::S_IFDIR => "a directory",
        libc::S_IFLNK => "a symbolic link",
        libc::S_IFIFO => "a FIFO",
        libc::S_IFCHR => "a character device",
        libc::S_IFBLK => "a block device",
        libc::S_IFSOCK => "a socket",
        _ => "of an unknown type",
    }
}

/// "user NAME (uid N)", or "uid N" when the user database has no name for it.
pub fn who(uid: u32) -> String {
    match sys::user_name(uid) {
        Ok(Some(n)) => format!("user {n} (uid {uid})"),
        _ => format!("uid {uid}"),
    }
}

/// Whether `gid` is `owner`'s user private group: named as the user, listing no one else.
fn private_group(gid: u32, owner: u32) -> bool {
    let (Ok(Some(user)), Ok(Some(group))) = (sys::user_name(owner), sys::group_name(gid)) else {
        return false;
    };
    user == group
        && sys::user_gid(owner).ok().flatten() == Some(gid)
        && sys::group_members(gid)
            .ok()
            .flatten()
            .is_some_and(|m| m.iter().all(|n| *n == user))
}

/// The rule for one directory, from its fstat: Ok, or why not (the text after its path).
fn judge(st: &libc::stat, need: Need) -> Result<(), String> {
    let me = sys::euid();
    let owner_ok = match need {
        Need::Own => st.st_uid == me,
        Need::Shared | Need::Private => st.st_uid == 0 || st.st_uid == me,
    };
    if !owner_ok {
        return Err(format!(
            "is owned by {}, who could swap what is in it",
            who(st.st_uid)
        ));
    }
    let mode = st.st_mode & 0o7777;
    let sticky = mode & libc::S_ISVTX != 0;
    let others = mode & 0o002 != 0;
    let group = mode & 0o020 != 0 && !private_group(st.st_gid, st.st_uid);
    if !(others || group) || (sticky && need == Need::Shared) {
        return Ok(());
    }
    let by = if others {
        "every user".to_string()
    } else {
        match sys::group_name(st.st_gid) {
            Ok(Some(g)) => format!("the group {g}"),
            _ => format!("the group {}", st.st_gid),
        }
    };
    Err(if sticky {
        format!(
            "is writable by {by} (mode {mode:o}; sticky, so others cannot rename sysperf's \
             files, but they can plant the names sysperf is about to use)"
        )
    } else {
        format!("is writable by {by} (mode {mode:o}), who could swap what is in it")
    })
}

impl Dir {
    /// Opens the directory `path` (relative to the working directory unless absolute) if it
    /// and every directory above it are trusted, `need` saying how much the last one must be
    /// this process's alone.
    pub fn open(path: &Path, need: Need) -> Result<Dir, WalkError> {
        walk(path, need, None)
    }

    /// [`Dir::open`], making the directories that do not exist yet (with `mode`, less the
    /// umask), each trusted once made.
    pub fn open_or_create(path: &Path, need: Need, mode: u32) -> Result<Dir, WalkError> {
        walk(path, need, Some(mode))
    }

    /// Opens the directory `path` as it is now, following links and judging nothing: only
    /// pinned, so that what is done in it happens in this directory whatever its path comes
    /// to name later.
    pub fn pin(path: &Path) -> io::Result<Dir> {
        let c = cstr(path.as_os_str())?;
        let fd = sys::open_at(libc::AT_FDCWD, &c, libc::O_PATH | libc::O_DIRECTORY)?;
        Ok(Dir {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// Judges this directory again by a stricter `need` (its ancestors were judged when it
    /// was opened).
    pub fn check(&self, need: Need) -> Result<(), WalkError> {
        let st = sys::fstat(self.fd()).map_err(|source| WalkError::Io {
            at: self.path.clone(),
            source,
        })?;
        judge(&st, need).map_err(|why| WalkError::Untrusted {
            at: self.path.clone(),
            why,
        })
    }

    /// The path the directory was reached by (with links resolved, for [`Dir::open`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// A path to `name` in this directory through its descriptor, `/proc/self/fd/N/NAME`,
    /// for calls that take a path (valid while this `Dir` is open).
    pub fn proc_path(&self, name: &OsStr) -> PathBuf {
        Path::new(&format!("/proc/self/fd/{}", self.fd())).join(name)
    }

    /// lstat of `name` here: None when there is no such name.
    pub fn stat(&self, name: &OsStr) -> io::Result<Option<libc::stat>> {
        match sys::stat_at(self.fd(), &cstr(name)?, false) {
            Ok(st) => Ok(Some(st)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The target of the symbolic link `name` here.
    pub fn read_link(&self, name: &OsStr) -> io::Result<OsString> {
        sys::readlink_at(self.fd(), &cstr(name)?)
    }

    /// A new file `name` here, for writing: O_CREAT | O_EXCL | O_NOFOLLOW, so any entry
    /// already there (a planted link among them) is an error, never followed.
    pub fn create(&self, name: &OsStr, mode: u32) -> io::Result<std::fs::File> {
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
        let fd = sys::open_at_mode(self.fd(), &cstr(name)?, flags, mode as libc::mode_t)?;
        Ok(std::fs::File::from(fd))
    }

    /// Opens the file `name` here for writing, made with `mode` (less the umask) when it is
    /// missing: O_CREAT | O_NOFOLLOW, so a link there is an error, never followed; what an
    /// existing name is (whether a regular file, and whose) is for the caller to judge by fstat.
    pub fn open_or_create_file(&self, name: &OsStr, mode: u32) -> io::Result<std::fs::File> {
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_NOFOLLOW | libc::O_NONBLOCK;
        let fd = sys::open_at_mode(self.fd(), &cstr(name)?, flags, mode as libc::mode_t)?;
        Ok(std::fs::File::from(fd))
    }

    /// Opens `name` here with `flags` and O_NOFOLLOW (a link there is an error).
    pub fn open_file(&self, name: &OsStr, flags: i32) -> io::Result<std::fs::File> {
        let fd = sys::open_at(self.fd(), &cstr(name)?, flags | libc::O_NOFOLLOW)?;
        Ok(std::fs::File::from(fd))
    }

    /// A new directory `name` here.
    pub fn mkdir(&self, name: &OsStr, mode: u32) -> io::Result<()> {
        sys::mkdir_at(self.fd(), &cstr(name)?, mode as libc::mode_t)
    }

    /// Renames `from` to `to`, both here (replacing `to`).
    pub fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        sys::rename_at(self.fd(), &cstr(from)?, &cstr(to)?)
    }

    /// Removes the file (or link) `name` here.
    pub fn unlink(&self, name: &OsStr) -> io::Result<()> {
        sys::unlink_at(self.fd(), &cstr(name)?)
    }

    /// Removes the directory `name` here and everything in it, following no link (std's
    /// remove_dir_all works by descriptor below the directory it is given).
    pub fn remove_tree(&self, name: &OsStr) -> io::Result<()> {
        std::fs::remove_dir_all(self.proc_path(name))
    }

    /// The names in this directory.
    pub fn names(&self) -> io::Result<Vec<OsString>> {
        Ok(std::fs::read_dir(self.proc_path(OsStr::new("")))?
            .flatten()
            .map(|e| e.file_name())
            .collect())
    }
}

fn open_root() -> Result<Dir, WalkError> {
    let fd =
        sys::open_at(libc::AT_FDCWD, c"/", libc::O_PATH | libc::O_DIRECTORY).map_err(|source| {
            WalkError::Io {
                at: "/".into(),
                source,
            }
        })?;
    Ok(Dir {
        fd,
        path: PathBuf::from("/"),
    })
}

/// The names of `path` to walk, in order ("." left out, ".." kept).
fn names_of(path: &Path) -> Vec<OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect()
}

fn walk(path: &Path, need: Need, create: Option<u32>) -> Result<Dir, WalkError> {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|source| WalkError::Io {
                at: path.to_path_buf(),
                source,
            })?
            .join(path)
    };
    let io_at = |at: &Path| {
        let at = at.to_path_buf();
        move |source| WalkError::Io { at, source }
    };
    let mut todo: VecDeque<OsString> = names_of(&abs).into();
    let mut cur = open_root()?;
    let mut links = 0;
    let check = |d: &Dir, need: Need| -> Result<(), WalkError> {
        let st = sys::fstat(d.fd()).map_err(io_at(&d.path))?;
        judge(&st, need).map_err(|why| WalkError::Untrusted {
            at: d.path.clone(),
            why,
        })
    };
    check(&cur, Need::Shared)?;
    while let Some(name) = todo.pop_front() {
        let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW;
        if name == ".." {
            let fd = sys::open_at(cur.fd(), c"..", flags).map_err(io_at(&cur.path))?;
            let mut p = cur.path.clone();
            p.pop();
            cur = Dir { fd, path: p };
            check(&cur, Need::Shared)?;
            continue;
        }
        let here = cur.path.join(&name);
        let c = cstr(&name).map_err(io_at(&here))?;
        let st = match sys::stat_at(cur.fd(), &c, false) {
            Err(e) if e.kind() == io::ErrorKind::NotFound && create.is_some() => {
                match sys::mkdir_at(cur.fd(), &c, create.unwrap_or(0o700) as libc::mode_t) {
                    Err(e) if e.kind() != io::ErrorKind::AlreadyExists => {
                        return Err(WalkError::Io {
                            at: here,
                            source: e,
                        })
                    }
                    _ => {}
                }
                sys::stat_at(cur.fd(), &c, false).map_err(io_at(&here))?
            }
            r => r.map_err(io_at(&here))?,
        };
        match st.st_mode & libc::S_IFMT {
            libc::S_IFLNK => {
                if st.st_uid != 0 && st.st_uid != sys::euid() {
                    return Err(WalkError::Untrusted {
                        at: here,
                        why: format!(
                            "is a symbolic link owned by {}, which sysperf does not follow",
                            who(st.st_uid)
                        ),
                    });
                }
                links += 1;
                if links > MAX_LINKS {
                    return Err(WalkError::Io {
                        at: here,
                        source: io::Error::from_raw_os_error(libc::ELOOP),
                    });
                }
                let target = sys::readlink_at(cur.fd(), &c).map_err(io_at(&here))?;
                let target = Path::new(&target);
                if target.is_absolute() {
                    cur = open_root()?;
                }
                for n in names_of(target).into_iter().rev() {
                    todo.push_front(n);
                }
            }
            libc::S_IFDIR => {
                let fd = sys::open_at(cur.fd(), &c, flags).map_err(io_at(&here))?;
                cur = Dir { fd, path: here };
                check(&cur, Need::Shared)?;
            }
            _ => {
                return Err(WalkError::Io {
                    at: here,
                    source: io::Error::from_raw_os_error(libc::ENOTDIR),
                })
            }
        }
    }
    if need != Need::Shared {
        check(&cur, need)?;
    }
    Ok(cur)
}

/// Makes a private scratch directory `sysperf-<kind>-<pid>-<random>` in `base` and returns
/// its path: mode 0700, made by one mkdir that fails on any existing entry (so a name planted
/// by another user, a directory or a link, is never used, followed or removed: another random
/// name is tried), named after this process so that `harness::janitor` can remove it if this
/// process is killed, and only in a trusted `base` (see the module documentation): there no
/// one else can rename it or anything above it, so its path names it until it is removed.
/// A `base` someone else controls is an error that says so and what to do.
pub fn scratch_dir(base: &Path, kind: &str) -> io::Result<PathBuf> {
    let dir = Dir::open(base, Need::Shared).map_err(|e| {
        match e.refuse(temp_what(base), temp_fix(base)) {
            Ok(u) => io::Error::new(io::ErrorKind::PermissionDenied, u.to_string()),
            Err(e) => e.into_io(),
        }
    })?;
    let mut last = None;
    for _ in 0..16 {
        let mut r = [0u8; 6];
        sys::random_bytes(&mut r)?;
        let hex: String = r.iter().map(|b| format!("{b:02x}")).collect();
        let name = OsString::from(format!("sysperf-{kind}-{}-{hex}", sys::getpid()));
        match dir.mkdir(&name, 0o700) {
            Ok(()) => return Ok(dir.path().join(name)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free scratch name")))
}

fn temp_what(base: &Path) -> String {
    let from_env = std::env::var_os("TMPDIR")
        .filter(|t| !t.is_empty())
        .is_some_and(|t| Path::new(&t) == base);
    format!(
        "the temporary directory '{}'{}",
        base.display(),
        if from_env { " (TMPDIR)" } else { "" }
    )
}

fn temp_fix(base: &Path) -> String {
    let from_env = std::env::var_os("TMPDIR")
        .filter(|t| !t.is_empty())
        .is_some_and(|t| Path::new(&t) == base);
    if from_env {
        "set TMPDIR to a directory that only root or you can change (and every directory \
         above it), or unset it to use /tmp"
            .into()
    } else {
        "make it owned by root and not writable by others unless sticky (chmod 1777 for a \
         shared temporary directory)"
            .into()
    }
}

/// Refuses a temporary directory (`TMPDIR`, else /tmp) that another user controls, before a
/// command makes anything in it: scratch directories made and used there by path could be
/// swapped by that user for their own (programs root would run, files root would write). A
/// temporary directory that cannot be opened at all is left to the code that uses it.
pub fn check_temp_dir() -> Result<(), Unsafe> {
    let base = std::env::temp_dir();
    match Dir::open(&base, Need::Shared) {
        Ok(_) => Ok(()),
        Err(e) => match e.refuse(temp_what(&base), temp_fix(&base)) {
            Ok(u) => Err(u),
            Err(_) => Ok(()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_private_directory_and_its_ancestors_are_trusted() {
        let tmp = tempfile::tempdir().unwrap();
        let d = Dir::open(tmp.path(), Need::Private).unwrap();
        assert_eq!(d.path(), tmp.path());
        // Made on the way, with the mode asked for (less the umask).
        let deep = tmp.path().join("a/b/c");
        let d = Dir::open_or_create(&deep, Need::Own, 0o700).unwrap();
        assert_eq!(d.path(), deep);
        assert!(deep.is_dir());
        // /tmp itself is sticky: fine on the way, not for a store.
        assert!(Dir::open(Path::new("/tmp"), Need::Shared).is_ok());
        let e = Dir::open(Path::new("/tmp"), Need::Private).unwrap_err();
        assert!(e.to_string().contains("sticky"), "{e}");
    }

    #[test]
    fn a_directory_others_may_write_is_not_trusted_nor_anything_below_it() {
        let tmp = tempfile::tempdir().unwrap();
        let open = tmp.path().join("open");
        std::fs::create_dir_all(open.join("mine")).unwrap();
        chmod(&open, 0o777);
        let e = Dir::open(&open.join("mine"), Need::Shared).unwrap_err();
        assert!(
            matches!(&e, WalkError::Untrusted { at, .. } if *at == open),
            "{e}"
        );
        assert!(e.to_string().contains("writable by every user"), "{e}");
        chmod(&open, 0o1777);
        assert!(Dir::open(&open.join("mine"), Need::Private).is_ok());
    }

    #[test]
    fn links_are_followed_when_ours_and_the_path_is_resolved() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink("real/../real", &link).unwrap();
        let d = Dir::open(&link.join("."), Need::Private).unwrap();
        assert_eq!(d.path(), real);
        // A file on the way is not a directory.
        std::fs::write(tmp.path().join("f"), "x").unwrap();
        assert!(matches!(
            Dir::open(&tmp.path().join("f/x"), Need::Shared),
            Err(WalkError::Io { .. })
        ));
    }

    #[test]
    fn files_are_made_by_descriptor_and_never_through_a_link() {
        let tmp = tempfile::tempdir().unwrap();
        let d = Dir::open(tmp.path(), Need::Private).unwrap();
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        std::os::unix::fs::symlink(&victim, tmp.path().join("name")).unwrap();
        let e = d.create(OsStr::new("name"), 0o600).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert!(d.open_file(OsStr::new("name"), libc::O_WRONLY).is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        use std::io::Write;
        d.create(OsStr::new("new"), 0o600)
            .unwrap()
            .write_all(b"x")
            .unwrap();
        d.rename(OsStr::new("new"), OsStr::new("name")).unwrap();
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("name")).unwrap(),
            "x"
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        d.mkdir(OsStr::new("sub"), 0o700).unwrap();
        std::fs::write(tmp.path().join("sub/f"), "x").unwrap();
        d.remove_tree(OsStr::new("sub")).unwrap();
        d.unlink(OsStr::new("name")).unwrap();
        let mut names = d.names().unwrap();
        names.sort();
        assert_eq!(names, [OsString::from("victim")]);
    }

    /// As root, with a throwaway owner (nobody): another user's directory, or another user's
    /// link on the way, is named in the refusal.
    #[test]
    fn another_users_directory_or_link_is_named() {
        if sys::euid() != 0 {
            println!("skipped: needs root to give a directory to another user");
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        let theirs = tmp.path().join("theirs");
        std::fs::create_dir_all(theirs.join("below")).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        let e = Dir::open(&theirs.join("below"), Need::Shared).unwrap_err();
        assert!(e.to_string().contains("uid 65534"), "{e}");
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(tmp.path(), &link).unwrap();
        std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
        let e = Dir::open(&link, Need::Shared).unwrap_err();
        assert!(e.to_string().contains("symbolic link owned by"), "{e}");
        // The state directory must be this user's own: root's is, another's is not.
        assert!(Dir::open(&theirs, Need::Own).is_err());
    }

    #[test]
    fn scratch_directories_need_a_trusted_base() {
        let tmp = tempfile::tempdir().unwrap();
        let open = tmp.path().join("open");
        std::fs::create_dir(&open).unwrap();
        chmod(&open, 0o777);
        let e = scratch_dir(&open, "feder").unwrap_err().to_string();
        assert!(e.contains("writable by every user"), "{e}");
        assert_eq!(std::fs::read_dir(&open).unwrap().count(), 0);
        let made = scratch_dir(tmp.path(), "feder").unwrap();
        assert_eq!(made.parent(), Some(tmp.path()));
    }
}
