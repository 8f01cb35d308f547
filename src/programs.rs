//! The one rule by which sysperf finds every external program it runs: iproute2's `ip` and
//! `tc` (the net suite's long haul, the janitor), `nscd` and `makedb` (the libs suite's name
//! service), `sh` and `cat` (the workload's scripts, inetd's echo service), the interactive
//! shells of the libs suite, the workload's commands, `sleep` in tests. Nothing else in
//! `src/` builds a `std::process::Command` (`tests/it/programs.rs` scans for one).
//!
//! The rule: a program is looked for in the directories of PATH that are absolute, exist, and
//! that only root or this user can write (owner root or this user, no group or other write
//! bit), then in the system's standard directories ([`DEFAULT_PATH`], by the same rule: a root
//! shell from `su` often lacks /usr/sbin, where nscd and makedb live), and must be there an
//! executable regular file with the same owner and mode rules. It is run by the absolute path found. [`find`] resolves a
//! name once per process and keeps the answer, so one run runs one `ip` throughout. Relative
//! and empty entries (an empty one is the current directory) are never searched: as root in a
//! directory another user can write, `PATH=":/usr/sbin:/usr/bin"` ran that user's `./ip`
//! (#29 item 6). A directory someone else can write is the same hole one level up.
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

use std::collections::HashMap;
use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
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

/// Why a file or directory with this owner and mode may not be trusted, if it may not:
/// someone other than root and this user can write it.
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

/// Why the PATH entry `dir` is not searched, or None if it is.
fn skip_reason(dir: &str) -> Option<String> {
    if dir.is_empty() {
        return Some("empty: the current directory".into());
    }
    if !Path::new(dir).is_absolute() {
        return Some("relative".into());
    }
    // A missing directory is simply empty; one that exists must be trusted.
    let m = fs::metadata(dir).ok()?;
    writable_by_others(m.uid(), m.mode())
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

/// Whether `p` is a trusted executable: a regular file someone may execute, that only root
/// or this user can write.
fn trusted_program(p: &Path) -> bool {
    fs::metadata(p).is_ok_and(|m| {
        m.is_file()
            && m.permissions().mode() & 0o111 != 0
            && writable_by_others(m.uid(), m.mode()).is_none()
    })
}

/// The first trusted executable called `name` in the searched directories of the
/// colon-separated `path` (see the module documentation), as an absolute path. A `name`
/// with a slash is never looked up.
pub fn locate(name: &str, path: &str) -> Option<PathBuf> {
    if name.is_empty() || name.contains('/') {
        return None;
    }
    path.split(':')
        .filter(|d| skip_reason(d).is_none())
        .map(|d| Path::new(d).join(name))
        .find(|p| trusted_program(p))
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
        assert_eq!(
            unsearched(&abs)[0].1,
            "writable by its group or by anyone",
            "{abs}"
        );
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
