//! Writing the files a user asks for (`-o`, `--raw`, `export -o`, `report -o`, `plot -o`,
//! `job -o`, `man DIR`) safely when sysperf runs as root on a shared machine. The target's
//! directory is opened once and everything happens relative to it, so a directory swapped
//! under the path meanwhile changes nothing (#29). Then, by what is at the target's name:
//!
//! - nothing, a regular file, or a link of the caller's (or root's) to one: the bytes go to
//!   a new file made exclusively (`O_EXCL | O_NOFOLLOW`) beside the target, which is then
//!   renamed over it, so a link there is replaced, never followed, and nothing is truncated
//!   through it;
//! - a character device or a FIFO (`/dev/null`, a terminal, a named pipe), or a link of the
//!   caller's or root's to one (`/dev/stdout`): it is opened and written, never replaced,
//!   never truncated, its mode untouched; only where no one else could have put it there
//!   (a directory only root or the caller may write, or the caller's or root's node in a
//!   sticky one), and a FIFO with no reader is refused rather than waited on;
//! - a directory, a socket, a block device, a symbolic link owned by another user, or a link
//!   in a sticky directory (such as /tmp) that the caller does not own: refused.
//!
//! It is not for the store (SQLite opens that; see `store::place`).

use crate::safedir::{self, Dir, Need};
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Why an output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The target is not a place sysperf will write to (a user error: exit 2).
    #[error("refusing to write '{}': {why}", .path.display())]
    Refused { path: PathBuf, why: String },
    #[error("writing '{}': {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl crate::error::Exit for OutputError {
    fn exit_code(&self) -> i32 {
        crate::error::usage_if(matches!(self, OutputError::Refused { .. }))
    }
}

/// How a target is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum How {
    /// A new file renamed over the name.
    Replace,
    /// A character device or FIFO opened and written (`follow`: through a link of ours).
    Open { follow: bool },
}

/// The target's directory, pinned, its name there, and how it is written.
struct Plan {
    dir: Dir,
    name: OsString,
    how: How,
}

fn parent(path: &Path) -> PathBuf {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf()
}

/// The two ways of failing to write `path`, for `map_err`.
fn failures(
    path: &Path,
) -> (
    impl Fn(String) -> OutputError + Copy + '_,
    impl Fn(std::io::Error) -> OutputError + Copy + '_,
) {
    (
        move |why| OutputError::Refused {
            path: path.to_path_buf(),
            why,
        },
        move |source| OutputError::Io {
            path: path.to_path_buf(),
            source,
        },
    )
}

fn plan(path: &Path) -> Result<Plan, OutputError> {
    let (refused, io) = failures(path);
    let dir_path = parent(path);
    let dir = Dir::pin(&dir_path).map_err(|e| {
        refused(if e.raw_os_error() == Some(libc::ENOTDIR) {
            format!("'{}' is not a directory", dir_path.display())
        } else if e.kind() == std::io::ErrorKind::NotFound {
            format!(
                "the directory '{}' does not exist; create it or name a file in an existing one",
                dir_path.display()
            )
        } else {
            format!(
                "the directory '{}' cannot be opened ({e}); create it or name a file in an \
                 existing one",
                dir_path.display()
            )
        })
    })?;
    let name = match path.file_name() {
        Some(n) if !path.as_os_str().as_encoded_bytes().ends_with(b"/") => n.to_os_string(),
        _ => return Err(refused("it is a directory; name a file".into())),
    };
    let me = crate::sys::euid();
    let dir_st = crate::sys::fstat(dir.fd()).map_err(io)?;
    let Some(st) = dir.stat(&name).map_err(io)? else {
        return Ok(Plan {
            dir,
            name,
            how: How::Replace,
        });
    };
    // Whether a node here, owned by `uid`, can only have been put here by root or us.
    let placed_by_us = |uid: u32| -> Result<(), OutputError> {
        let private = Dir::open(&dir_path, Need::Private);
        if private.is_ok() {
            return Ok(());
        }
        if uid != 0 && uid != me {
            return Err(refused(format!(
                "it is {} owned by {}; sysperf writes a device or FIFO only where no one else \
                 could have put it; name another file",
                safedir::kind_of(st.st_mode),
                safedir::who(uid)
            )));
        }
        Dir::open(&dir_path, Need::Shared).map(drop).map_err(|e| {
            refused(format!(
                "it is {} in a directory someone else controls ({e}); name another file",
                safedir::kind_of(st.st_mode)
            ))
        })
    };
    let how = match st.st_mode & libc::S_IFMT {
        libc::S_IFDIR => return Err(refused("it is a directory; name a file".into())),
        libc::S_IFREG => How::Replace,
        libc::S_IFCHR | libc::S_IFIFO => {
            placed_by_us(st.st_uid)?;
            How::Open { follow: false }
        }
        libc::S_IFLNK => {
            if st.st_uid != me {
                return Err(refused(format!(
                    "it is a symbolic link owned by user {} (not you); remove it or name another file",
                    st.st_uid
                )));
            }
            if dir_st.st_mode & libc::S_ISVTX != 0 && dir_st.st_uid != me {
                return Err(refused(
                    "it is a symbolic link in a shared sticky directory; name another file".into(),
                ));
            }
            // A link of ours to a device or FIFO (/dev/stdout) is written through; one to
            // anything else is replaced.
            match std::fs::metadata(dir.proc_path(&name)) {
                Ok(m) if is_device_or_fifo(&m) => {
                    placed_by_us(st.st_uid)?;
                    How::Open { follow: true }
                }
                _ => How::Replace,
            }
        }
        _ => {
            return Err(refused(format!(
                "it is {}; name a file, a character device or a FIFO",
                safedir::kind_of(st.st_mode)
            )))
        }
    };
    Ok(Plan { dir, name, how })
}

fn is_device_or_fifo(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    m.file_type().is_char_device() || m.file_type().is_fifo()
}

/// Checks that `path` may be written by this process (see the module documentation), before
/// the work that makes its bytes.
pub fn check(path: &Path) -> Result<(), OutputError> {
    plan(path).map(drop)
}

/// Writes `bytes` to `path` with permission bits `mode` (see the module documentation).
pub fn write(path: &Path, bytes: &[u8], mode: u32) -> Result<(), OutputError> {
    write_with(path, mode, |f| f.write_all(bytes))
}

/// [`write`], the bytes written by `fill` as they come (an export of many runs is not held
/// in memory); when `fill` fails, nothing is left behind and a file at `path` is untouched.
/// `mode` is a new file's; a device or FIFO keeps its own.
pub fn write_with(
    path: &Path,
    mode: u32,
    fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> Result<(), OutputError> {
    let plan = plan(path)?;
    let (_, io) = failures(path);
    match plan.how {
        How::Open { follow } => {
            let mut f = open_device(path, &plan, follow)?;
            fill(&mut f).map_err(io)
        }
        How::Replace => {
            let mut rnd = [0u8; 6];
            crate::sys::random_bytes(&mut rnd).map_err(io)?;
            let mut tmp = OsString::from(".");
            tmp.push(&plan.name);
            tmp.push(format!(
                ".sysperf-{}-{}",
                std::process::id(),
                rnd.iter().map(|b| format!("{b:02x}")).collect::<String>()
            ));
            let result = (|| {
                let mut f = plan.dir.create(&tmp, mode)?;
                fill(&mut f)?;
                // The umask may have narrowed the mode; an executable job must stay executable.
                f.set_permissions(std::fs::Permissions::from_mode(mode))?;
                f.sync_all()?;
                plan.dir.rename(&tmp, &plan.name)
            })();
            if result.is_err() {
                let _ = plan.dir.unlink(&tmp);
            }
            result.map_err(io)
        }
    }
}

/// Opens the character device or FIFO of `plan` for writing: without waiting for a FIFO's
/// reader (none is an error), without becoming a terminal's controlling process, and checked
/// to be what was judged.
fn open_device(path: &Path, plan: &Plan, follow: bool) -> Result<std::fs::File, OutputError> {
    let (refused, io) = failures(path);
    let flags = libc::O_WRONLY | libc::O_NOCTTY | libc::O_NONBLOCK;
    let opened = if follow {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
            .open(plan.dir.proc_path(&plan.name))
    } else {
        plan.dir.open_file(&plan.name, flags)
    };
    let f = opened.map_err(|e| match e.raw_os_error() {
        Some(libc::ENXIO) => refused(
            "it is a FIFO that no process has open for reading; start the reader first".into(),
        ),
        _ => io(e),
    })?;
    let m = f.metadata().map_err(io)?;
    if !is_device_or_fifo(&m) {
        return Err(refused(
            "it changed while sysperf looked at it; name it again".into(),
        ));
    }
    crate::sys::set_blocking(std::os::fd::AsRawFd::as_raw_fd(&f)).map_err(io)?;
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_replace_a_link_instead_of_following_it() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
        let out = dir.path().join("out");
        std::os::unix::fs::symlink(&victim, &out).unwrap();
        write(&out, b"new", 0o644).unwrap();
        // The link was replaced by the file; what it pointed to is untouched.
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert_eq!(std::fs::read(&out).unwrap(), b"new");
        assert!(!std::fs::symlink_metadata(&out)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(
            std::fs::metadata(&victim).unwrap().permissions().mode() & 0o777,
            0o600
        );
        // Nothing else is left in the directory.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[test]
    fn modes_are_set_whatever_the_umask() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("raw.txt");
        write(&p, b"x", 0o600).unwrap();
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let j = dir.path().join("job");
        write(&j, b"x", 0o755).unwrap();
        assert_eq!(
            std::fs::metadata(&j).unwrap().permissions().mode() & 0o777,
            0o755
        );
    }

    #[test]
    fn directories_and_missing_parents_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            write(dir.path(), b"x", 0o644),
            Err(OutputError::Refused { .. })
        ));
        assert!(matches!(
            write(&dir.path().join("no/such/file"), b"x", 0o644),
            Err(OutputError::Refused { .. })
        ));
    }

    #[test]
    fn another_users_link_is_refused_when_we_can_make_one() {
        // As root, a link owned by another user (lchown) must be refused and its target kept.
        if crate::sys::euid() != 0 {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let out = dir.path().join("out");
        std::os::unix::fs::symlink(&victim, &out).unwrap();
        std::os::unix::fs::lchown(&out, Some(65534), Some(65534)).unwrap();
        let e = write(&out, b"new", 0o644).unwrap_err().to_string();
        assert!(e.contains("owned by user 65534"), "{e}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    }

    #[test]
    fn a_fifo_is_written_in_place_and_one_without_reader_is_refused() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        crate::sys::mkfifo(&fifo, 0o600).unwrap();
        // No reader: refused at once, not waited on.
        let e = write(&fifo, b"x", 0o644).unwrap_err().to_string();
        assert!(e.contains("no process has open for reading"), "{e}");
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        // The reader opens when it is scheduled: try until it has.
        let mut tries = 0;
        loop {
            match write(&fifo, b"through the pipe", 0o644) {
                Ok(()) => break,
                Err(OutputError::Refused { .. }) if tries < 500 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(reader.join().unwrap(), b"through the pipe");
        let m = std::fs::symlink_metadata(&fifo).unwrap();
        assert!(m.file_type().is_fifo());
        assert_eq!(m.permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn sockets_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("sock");
        let _l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let e = write(&sock, b"x", 0o644).unwrap_err().to_string();
        assert!(e.contains("it is a socket"), "{e}");
        assert!(check(&sock).is_err());
    }

    #[test]
    fn a_character_device_stays_one_and_a_link_of_ours_to_it_is_written_through() {
        use std::os::unix::fs::FileTypeExt;
        // /dev/null as it is, through a link of ours (as /dev/stdout is a link).
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("null");
        std::os::unix::fs::symlink("/dev/null", &link).unwrap();
        write(&link, b"gone", 0o600).unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device());
        if crate::sys::euid() != 0 {
            println!("skipped the mknod part: needs root");
            return;
        }
        let dev = dir.path().join("dev");
        let made = crate::programs::command("mknod")
            .unwrap()
            .args(["-m", "666"])
            .arg(&dev)
            .args(["c", "1", "3"])
            .status()
            .unwrap();
        assert!(made.success());
        write(&dev, b"into the null device", 0o644).unwrap();
        let m = std::fs::symlink_metadata(&dev).unwrap();
        assert!(m.file_type().is_char_device(), "{m:?}");
        assert_eq!(m.permissions().mode() & 0o777, 0o666);
        // Another user's device node in a directory others may add to is refused.
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let theirs = open.join("fifo");
        crate::sys::mkfifo(&theirs, 0o666).unwrap();
        std::os::unix::fs::lchown(&theirs, Some(65534), Some(65534)).unwrap();
        let e = write(&theirs, b"x", 0o644).unwrap_err().to_string();
        assert!(
            e.contains("owned by user") || e.contains("uid 65534"),
            "{e}"
        );
    }
}
