//! Writing the files a user asks for (`-o`, `--raw`, `export -o`, `report -o`, `plot -o`,
//! `job -o`) safely when sysperf runs as root on a shared machine: the bytes go to a new file
//! made exclusively (`O_EXCL`) beside the target, which is then renamed over it, so a
//! symbolic link planted at the target is replaced, never followed, and nothing is truncated
//! through it. A target that is a symbolic link owned by another user, or a link in a sticky
//! directory (such as /tmp) that the caller does not own, is refused outright.
//!
//! It is not for the store (SQLite opens that; see `store::check_named_path`).

use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
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

/// Checks that `path` may be written by this process: not a directory, in an existing
/// directory, and not a symbolic link that someone else controls.
pub fn check(path: &Path) -> Result<(), OutputError> {
    let refused = |why: String| OutputError::Refused {
        path: path.to_path_buf(),
        why,
    };
    let dir = parent(path);
    let dir_meta = std::fs::metadata(&dir).map_err(|_| {
        refused(format!(
            "the directory '{}' does not exist; create it or name a file in an existing one",
            dir.display()
        ))
    })?;
    if !dir_meta.is_dir() {
        return Err(refused(format!("'{}' is not a directory", dir.display())));
    }
    let me = crate::sys::euid();
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if meta.is_dir() {
            return Err(refused("it is a directory; name a file".into()));
        }
        if meta.file_type().is_symlink() {
            if meta.uid() != me {
                return Err(refused(format!(
                    "it is a symbolic link owned by user {} (not you); remove it or name another file",
                    meta.uid()
                )));
            }
            let sticky = dir_meta.permissions().mode() & 0o1000 != 0;
            if sticky && dir_meta.uid() != me {
                return Err(refused(
                    "it is a symbolic link in a shared sticky directory; name another file".into(),
                ));
            }
        }
    }
    Ok(())
}

fn parent(path: &Path) -> PathBuf {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf()
}

/// Writes `bytes` to `path` with permission bits `mode`: into a new file beside it, then
/// renamed over it (see the module documentation).
pub fn write(path: &Path, bytes: &[u8], mode: u32) -> Result<(), OutputError> {
    write_with(path, mode, |f| f.write_all(bytes))
}

/// [`write`], the bytes written by `fill` as they come (an export of many runs is not held
/// in memory); when `fill` fails, nothing is left behind and `path` is untouched.
pub fn write_with(
    path: &Path,
    mode: u32,
    fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> Result<(), OutputError> {
    check(path)?;
    let io = |source| OutputError::Io {
        path: path.to_path_buf(),
        source,
    };
    let dir = parent(path);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "output".into());
    let mut rnd = [0u8; 6];
    crate::sys::random_bytes(&mut rnd).map_err(io)?;
    let tmp = dir.join(format!(
        ".{name}.sysperf-{}-{}",
        std::process::id(),
        rnd.iter().map(|b| format!("{b:02x}")).collect::<String>()
    ));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        fill(&mut f)?;
        // The umask may have narrowed the mode; an executable job must stay executable.
        f.set_permissions(std::fs::Permissions::from_mode(mode))?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io)
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
}
