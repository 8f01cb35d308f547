//! The one rule by which sysperf finds every external program it runs: iproute2's `ip` and
//! `tc` (the net suite's long haul, the janitor), `nscd` and `makedb` (the libs suite's name
//! service), `sh` and `cat` (the workload's scripts, inetd's echo service), the interactive
//! shells of the libs suite, the workload's commands, `sleep` in tests. Nothing else in
//! `src/` builds a `std::process::Command` (`tests/it/programs.rs` scans for one).
//!
//! The rule: a program is looked for in the directories of PATH that are absolute and
//! [trusted](crate::safedir) (the entry walked from / by `safedir`'s rule, a symbolic link on
//! the way followed only when root or this user owns it, and the directory itself root's or
//! this user's and writable by no one else, sticky or not), then in the system's standard
//! directories ([`DEFAULT_PATH`], by the same rule: a root shell from `su` often lacks
//! /usr/sbin, where nscd and makedb live), and must be there an executable regular file with
//! the same owner and mode rules. The program's name may be a symbolic link of root's or this
//! user's, judged likewise to the file it ends at (each directory on that chain trusted). It
//! is run by the path found: the entry's resolved directory (no link left in it) and the
//! name. [`find`] resolves a name once per process and keeps the answer, so one run runs one
//! `ip` throughout. Relative and empty entries (an empty one is the current directory) are
//! never searched: as root in a directory another user can write, `PATH=":/usr/sbin:/usr/bin"`
//! ran that user's `./ip` (#29 item 6). A directory someone else can write is the same hole
//! one level up, and a PATH entry that is another user's link the same again: judged through
//! the link and run later by the link's path, `PATH=/tmp/u/bin:...` with `/tmp/u/bin ->
//! /usr/bin` flipped to the user's directory in between ran their `true` (#41 item 3).
//!
//! Why the name's own link is kept in the path run (`/usr/sbin/mkfs.ext4`, not the
//! `/usr/sbin/mke2fs` it points to): programs that are links to one executable tell what to
//! do by the name they were run as (mke2fs makes ext4 as `mkfs.ext4`, ext2 as itself; busybox
//! is every tool). That link is root's or this user's in a directory no one else can write,
//! as is every link and directory it leads through, so no one else can change where it
//! points between the lookup and the run.
//!
//! Why iproute2 and not netlink from Rust (rtnetlink, neli): the long haul needs a named
//! network namespace (`ip netns add`: an nsfs bind mount under /run/netns that the janitor
//! and `ip netns` see), a veth pair with one end moved into it, addresses and MTUs set on
//! both sides, and a tbf qdisc. The netlink crates cover links and addresses, but not named
//! namespaces as `ip` makes them, and none has typed tbf options: tbf would be raw TCA_TBF_*
//! attributes with tc's own burst/latency-to-ticks arithmetic (from /proc/net/psched)
//! rewritten here, a second implementation of what tc already gets right, to get wrong in a
//! tool whose figures depend on the shaping being exactly what the notes say. rtnetlink is
//! also async (a tokio runtime in the worker; tokio is linked only through the postgres
//! driver), neli sync but lower level still. These are setup steps outside the timed region,
//! so neither choice changes a figure; closing the PATH hole needs only this rule, which
//! every other program needs anyway.
//!
//! Not here: sysperf's own executable (the harness runs `current_exe()`, an absolute path,
//! through [`at`]), and what the programs themselves run.

use crate::safedir::{Dir, Need, WalkError};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};
use thiserror::Error;

/// The system's standard directories, searched after PATH's (systemd's default PATH).
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// A program that could not be found by the rule.
#[derive(Debug, Error)]
#[error(
    "{name} is not in any searched directory of PATH ({path}){skipped} nor in the system's \
     ({DEFAULT_PATH}); install it, or put the directory that holds it in PATH"
)]
pub struct NotFound {
    pub name: String,
    pub path: String,
    /// ", not searched: ..." when some entries were skipped, else empty.
    pub skipped: String,
}

impl From<NotFound> for io::Error {
    fn from(e: NotFound) -> io::Error {
        io::Error::new(io::ErrorKind::NotFound, e.to_string())
    }
}

/// The directories programs are looked for in: PATH, or [`DEFAULT_PATH`] when it is unset.
pub fn search_path() -> String {
    std::env::var_os("PATH")
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|| DEFAULT_PATH.into())
}

/// Why a file with this owner and mode may not be trusted, if it may not: someone other
/// than root and this user can write it.
fn writable_by_others(uid: u32, mode: u32) -> Option<String> {
    let me = crate::sys::euid();
    if uid != 0 && uid != me {
        Some(format!("owned by uid {uid}, neither root nor this user"))
    } else if mode & 0o022 != 0 {
        Some("writable by its group or by anyone".into())
    } else {
        None
    }
}

/// The PATH entry `dir` opened for searching: its directory, reached by the trusted-directory
/// walk (so with no link left in its path), or None when it does not exist (nothing to find
/// there); Err with why it is not searched.
fn entry(dir: &str) -> Result<Option<Dir>, String> {
    if dir.is_empty() {
        return Err("empty: the current directory".into());
    }
    if !Path::new(dir).is_absolute() {
        return Err("relative".into());
    }
    match Dir::open(Path::new(dir), Need::Private) {
        Ok(d) => Ok(Some(d)),
        Err(e @ WalkError::Untrusted { .. }) => Err(e.to_string()),
        // A missing directory (or one that cannot be looked at) is simply empty.
        Err(WalkError::Io { .. }) => Ok(None),
    }
}

/// Why the PATH entry `dir` is not searched, or None if it is.
fn skip_reason(dir: &str) -> Option<String> {
    entry(dir).err()
}

/// The entries of the colon-separated `path` that are not searched, each with its reason:
/// relative or empty (the current directory), or a directory another user can write.
pub fn unsearched(path: &str) -> Vec<(&str, String)> {
    path.split(':')
        .filter_map(|d| skip_reason(d).map(|why| (d, why)))
        .collect()
}

/// [`unsearched`] as one phrase: `"" (empty: the current directory), "bin" (relative)`.
pub fn unsearched_text(path: &str) -> String {
    unsearched(path)
        .iter()
        .map(|(d, why)| format!("{d:?} ({why})"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// How many symbolic links a program's name may lead through (as the kernel's limit).
const MAX_LINKS: usize = 40;

/// Whether `name` in the trusted directory `dir` is a trusted executable: a regular file
/// someone may execute, that only root or this user can write; or a symbolic link of root's or
/// this user's to one, every directory it leads to trusted as a PATH entry is. Looked at
/// with lstat, so another user's link is never followed.
fn trusted_program(dir: &Dir, name: &OsStr, links: usize) -> bool {
    let Ok(Some(st)) = dir.stat(name) else {
        return false;
    };
    let owner_ok = st.st_uid == 0 || st.st_uid == crate::sys::euid();
    match st.st_mode & libc::S_IFMT {
        libc::S_IFREG => {
            st.st_mode & 0o111 != 0 && writable_by_others(st.st_uid, st.st_mode).is_none()
        }
        // (A link's own mode means nothing; its owner could point it elsewhere.)
        libc::S_IFLNK if links < MAX_LINKS && owner_ok => {
            let Ok(target) = dir.read_link(name) else {
                return false;
            };
            // An absolute target replaces the directory's path.
            let to = dir.path().join(target);
            let (Some(parent), Some(file)) = (to.parent(), to.file_name()) else {
                return false;
            };
            Dir::open(parent, Need::Private)
                .is_ok_and(|there| trusted_program(&there, file, links + 1))
        }
        _ => false,
    }
}

/// The first trusted executable called `name` in the searched directories of the
/// colon-separated `path` (see the module documentation), as an absolute path: the entry's
/// directory resolved, then `name`. A `name` with a slash is never looked up.
pub fn locate(name: &str, path: &str) -> Option<PathBuf> {
    if name.is_empty() || name.contains('/') {
        return None;
    }
    path.split(':')
        .filter_map(|d| entry(d).ok().flatten())
        .find(|d| trusted_program(d, OsStr::new(name), 0))
        .map(|d| d.path().join(name))
}

/// Where program `name` is, by the rule, for this process: resolved at the first call (with
/// the PATH of that moment) and the same answer ever after.
pub fn find(name: &str) -> Result<PathBuf, NotFound> {
    static PATH: OnceLock<String> = OnceLock::new();
    static FOUND: OnceLock<Mutex<HashMap<String, Option<PathBuf>>>> = OnceLock::new();
    let path = PATH.get_or_init(search_path);
    let mut found = FOUND
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let hit = found
        .entry(name.to_string())
        .or_insert_with(|| locate(name, path).or_else(|| locate(name, DEFAULT_PATH)))
        .clone();
    hit.ok_or_else(|| {
        let skipped = unsearched_text(path);
        NotFound {
            name: name.into(),
            path: path.clone(),
            skipped: if skipped.is_empty() {
                String::new()
            } else {
                format!(", not searched: {skipped}")
            },
        }
    })
}

/// A command for program `name`, found by [`find`] and run by its absolute path.
pub fn command(name: &str) -> io::Result<Command> {
    Ok(Command::new(find(name)?))
}

/// A command for the program at the absolute path `program` (sysperf's own executable, a path
/// [`find`] or [`locate`] gave, one a benchmark compiled); a relative path is refused, since
/// it would be looked up on PATH or in the current directory.
pub fn at(program: &Path) -> io::Result<Command> {
    if !program.is_absolute() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is not an absolute path: sysperf runs programs only by absolute path",
                program.display()
            ),
        ));
    }
    Ok(Command::new(program))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    /// A directory holding an executable `name` (a shell script), with mode `dir_mode`.
    fn dir_with(name: &str, dir_mode: u32) -> (tempfile::TempDir, String) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(name);
        fs::write(&p, "#!/bin/sh\nexit 0\n").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
        fs::set_permissions(d.path(), fs::Permissions::from_mode(dir_mode)).unwrap();
        let s = d.path().display().to_string();
        (d, s)
    }

    #[test]
    fn relative_and_empty_entries_are_never_searched() {
        let (d, abs) = dir_with("sp-prog", 0o755);
        let rel = d.path().file_name().unwrap().to_str().unwrap().to_string();
        // Found through the absolute entry, whatever comes before it.
        let path = format!("{rel}::.:{abs}");
        assert_eq!(
            locate("sp-prog", &path),
            Some(Path::new(&abs).join("sp-prog"))
        );
        assert_eq!(
            unsearched(&path)
                .iter()
                .map(|(d, _)| *d)
                .collect::<Vec<_>>(),
            [rel.as_str(), "", "."]
        );
        assert_eq!(
            unsearched_text(&format!(":{rel}")),
            format!("\"\" (empty: the current directory), \"{rel}\" (relative)")
        );
        // (That a relative entry that does resolve from the current directory is not
        // searched either is tests/it/programs.rs's planted ./ip.)
    }

    #[test]
    fn a_directory_or_program_others_can_write_is_not_trusted() {
        let (_d, abs) = dir_with("sp-prog", 0o777);
        assert_eq!(locate("sp-prog", &abs), None);
        let why = &unsearched(&abs)[0].1;
        assert!(why.contains("is writable by every user"), "{abs}: {why}");
        let (d, abs) = dir_with("sp-prog", 0o755);
        let p = d.path().join("sp-prog");
        fs::set_permissions(&p, fs::Permissions::from_mode(0o757)).unwrap();
        assert_eq!(locate("sp-prog", &abs), None);
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(locate("sp-prog", &abs), Some(p));
        // Not executable, or not a file: not a program.
        fs::write(d.path().join("data"), "x").unwrap();
        fs::create_dir(d.path().join("sub")).unwrap();
        assert_eq!(locate("data", &abs), None);
        assert_eq!(locate("sub", &abs), None);
        // A name with a slash is a path, not a name to look up.
        assert_eq!(locate("./sp-prog", &abs), None);
        assert_eq!(locate("", &abs), None);
    }

    /// #41 item 3: a PATH entry that is a link is judged by the trusted-directory walk and
    /// the program found is the link's target directory's, so a later flip of the link
    /// changes nothing; another user's link, as an entry or as the program, is not followed.
    #[test]
    fn links_are_resolved_and_another_users_are_not_followed() {
        let (d, abs) = dir_with("sp-prog", 0o755);
        let real = fs::canonicalize(&abs).unwrap();
        let links = tempfile::tempdir().unwrap();
        let bin = links.path().join("bin");
        std::os::unix::fs::symlink(&real, &bin).unwrap();
        let entry = bin.to_str().unwrap();
        // This user's (or root's) link: followed, and the path found is the real one.
        assert_eq!(locate("sp-prog", entry), Some(real.join("sp-prog")));
        // The program's name a link of ours: kept as the name run (argv[0]), its target
        // judged too.
        std::os::unix::fs::symlink("sp-prog", d.path().join("sp-alias")).unwrap();
        assert_eq!(locate("sp-alias", entry), Some(real.join("sp-alias")));
        std::os::unix::fs::symlink("/nonexistent/x", d.path().join("sp-dangling")).unwrap();
        assert_eq!(locate("sp-dangling", entry), None);
        if crate::sys::euid() != 0 {
            println!("skipped: needs root to give a link to another user");
            return;
        }
        // Another user's link as the entry: not searched, and said why.
        std::os::unix::fs::lchown(&bin, Some(65534), Some(65534)).unwrap();
        assert_eq!(locate("sp-prog", entry), None);
        let why = unsearched(entry)
            .first()
            .map(|(_, why)| why.clone())
            .unwrap_or_default();
        assert!(why.contains("symbolic link owned by"), "{why}");
        // Another user's link as the program, in a trusted directory: not followed.
        std::os::unix::fs::lchown(d.path().join("sp-alias"), Some(65534), Some(65534)).unwrap();
        assert_eq!(locate("sp-alias", &abs), None);
        // Another user's directory a root's link leads to: not trusted either.
        let theirs = tempfile::tempdir().unwrap();
        fs::copy(d.path().join("sp-prog"), theirs.path().join("sp-prog")).unwrap();
        std::os::unix::fs::chown(theirs.path(), Some(65534), Some(65534)).unwrap();
        std::os::unix::fs::symlink(theirs.path().join("sp-prog"), d.path().join("sp-theirs"))
            .unwrap();
        assert_eq!(locate("sp-theirs", &abs), None);
    }

    #[test]
    fn found_programs_are_absolute_and_run() {
        let sh = find("sh").unwrap();
        assert!(sh.is_absolute(), "{}", sh.display());
        // The same answer twice: resolved once.
        assert_eq!(find("sh").unwrap(), sh);
        let st = command("sh")
            .unwrap()
            .args(["-c", "exit 3"])
            .status()
            .unwrap();
        assert_eq!(st.code(), Some(3));
        let e = find("sysperf-no-such-program").unwrap_err().to_string();
        assert!(
            e.starts_with("sysperf-no-such-program is not in any searched directory of PATH ("),
            "{e}"
        );
        let e = at(Path::new("ip")).unwrap_err().to_string();
        assert!(e.contains("not an absolute path"), "{e}");
    }
}
