//! libpq's connection service file (`pg_service.conf`) as sysperf reads it (#44 item 5): a
//! service named by the URL's `service=` (else `PGSERVICE`) is looked up in the user's file
//! (`PGSERVICEFILE`, else `~/.pg_service.conf`), and only when that file lacks it in the
//! system's (`PGSYSCONFDIR/pg_service.conf`, else Debian's libpq's
//! `/etc/postgresql-common/pg_service.conf`). A file is `[name]` sections of `key=value`
//! lines, `#` starting a comment; a service may not name another (`service=`), as in libpq.
//!
//! Unlike libpq, a service file is used only when it is a regular file of this user's or
//! root's that its group and others may not write (the check `.pgpass` gets, ownership
//! added): under `sudo -E` HOME and `PGSERVICEFILE` are the calling user's, and their file
//! must not choose the server root's runs go to, nor its `sslmode`. A file refused for a
//! service the URL names is an error (exit 2), never passed over for the system's.
//!
//! It is not the URL (see `pgurl.rs`, which applies what this returns) and never shows a
//! value (a service may hold a password).

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The largest service file read.
const SERVICE_MAX: u64 = 1 << 20;

/// Where libpq looks for the system's service file when `PGSYSCONFDIR` is not set (the
/// directory Debian's and Ubuntu's libpq are built with).
const SYSCONFDIR: &str = "/etc/postgresql-common";

fn env_path(key: &str) -> Option<PathBuf> {
    std::env::var_os(key)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The user's service file and the system's, in the order they are searched.
fn files() -> [Option<PathBuf>; 2] {
    let user =
        env_path("PGSERVICEFILE").or_else(|| env_path("HOME").map(|h| h.join(".pg_service.conf")));
    let system = env_path("PGSYSCONFDIR")
        .unwrap_or_else(|| SYSCONFDIR.into())
        .join("pg_service.conf");
    [user, Some(system)]
}

/// The settings of the service `name`, in the order written, from the first file that
/// defines it; why not, in words, when no file does or a file may not be used.
pub(crate) fn settings(name: &str) -> Result<Vec<(String, String)>, String> {
    let mut searched = Vec::new();
    for file in files().into_iter().flatten() {
        let Some(text) = read_trusted(&file)? else {
            searched.push(file.display().to_string());
            continue;
        };
        if let Some(found) = section(&text, name, &file)? {
            return Ok(found);
        }
        searched.push(file.display().to_string());
    }
    Err(format!(
        "the service \"{name}\" is not defined in {}; define it there, or set PGSERVICEFILE to the file that does",
        searched.join(" nor in ")
    ))
}

/// The file's text, when it is there and may be used: a regular file of this user's or
/// root's that its group and others may not write; None when it is not there. The checks
/// are made on the opened file, so what is checked is what is read.
fn read_trusted(path: &Path) -> Result<Option<String>, String> {
    // O_NONBLOCK: a FIFO there must not hang the connection (it is refused below).
    let f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(format!(
                "the service file {} cannot be read: {e}",
                path.display()
            ))
        }
    };
    let st = crate::sys::fstat(f.as_raw_fd())
        .map_err(|e| format!("the service file {} cannot be read: {e}", path.display()))?;
    let problem = if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        Some(format!(
            "is {}, not a regular file",
            crate::safedir::kind_of(st.st_mode)
        ))
    } else if st.st_uid != crate::sys::euid() && st.st_uid != 0 {
        Some(format!(
            "is owned by {}, not by this user or root",
            crate::safedir::who(st.st_uid)
        ))
    } else if st.st_mode & 0o022 != 0 {
        Some("may be written by its group or others (chmod go-w it)".to_string())
    } else {
        None
    };
    if let Some(problem) = problem {
        return Err(format!(
            "the service file {} {problem}, so it may not choose the server; it is not used",
            path.display()
        ));
    }
    let mut text = String::new();
    f.take(SERVICE_MAX)
        .read_to_string(&mut text)
        .map_err(|e| format!("the service file {} is not text: {e}", path.display()))?;
    Ok(Some(text))
}

/// The `key=value` settings of section `[name]` in `text` (None when there is no such
/// section); a line that is neither a section, a setting nor a comment is an error naming
/// its number, never its text (it may hold a password).
fn section(text: &str, name: &str, file: &Path) -> Result<Option<Vec<(String, String)>>, String> {
    let mut found: Option<Vec<(String, String)>> = None;
    let mut inside = false;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(head) = line.strip_prefix('[') {
            if found.is_some() {
                break;
            }
            inside = head.strip_suffix(']') == Some(name);
            if inside {
                found = Some(Vec::new());
            }
            continue;
        }
        if !inside {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(format!(
                "the service file {} has a syntax error on line {}: not key=value",
                file.display(),
                n + 1
            ));
        };
        let key = key.trim();
        if key == "service" {
            return Err(format!(
                "the service \"{name}\" in {} names another service (line {}); nested services are not supported",
                file.display(),
                n + 1
            ));
        }
        if let Some(settings) = found.as_mut() {
            settings.push((key.to_string(), value.trim().to_string()));
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn sections_are_read_as_libpq_reads_them() {
        let text = "\
# fleet stores
[other]
host=elsewhere

[fleet]
host=db.lab
  port = 5433
dbname=runs
# a comment
password=s3=cret
[after]
host=nope
";
        let f = Path::new("svc");
        assert_eq!(
            section(text, "fleet", f).unwrap().unwrap(),
            [
                ("host".to_string(), "db.lab".to_string()),
                ("port".into(), "5433".into()),
                ("dbname".into(), "runs".into()),
                ("password".into(), "s3=cret".into()),
            ]
        );
        assert_eq!(section(text, "missing", f).unwrap(), None);
        let nested = section("[a]\nservice=b\n", "a", f).unwrap_err();
        assert!(nested.contains("nested"), "{nested}");
        let bad = section("[a]\nhost\n[b]\nuser=x=secret\n", "a", f).unwrap_err();
        assert!(bad.contains("line 2"), "{bad}");
        // A line elsewhere is not read for this service; values are never shown.
        assert!(section("[a]\nhost=h\n[b]\nnot a line\n", "a", f).is_ok());
        assert!(!bad.contains("secret"), "{bad}");
    }

    #[test]
    fn a_service_file_others_may_write_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("pg_service.conf");
        std::fs::write(&f, "[s]\nhost=h\n").unwrap();
        for mode in [0o600, 0o644] {
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
            assert!(read_trusted(&f).unwrap().is_some(), "{mode:o}");
        }
        for mode in [0o620, 0o602, 0o666] {
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
            let e = read_trusted(&f).unwrap_err();
            assert!(
                e.contains("written by its group or others"),
                "{mode:o}: {e}"
            );
        }
        assert!(read_trusted(dir.path())
            .unwrap_err()
            .contains("not a regular file"));
        assert_eq!(read_trusted(&dir.path().join("missing")).unwrap(), None);
        if crate::sys::is_root() {
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
            std::os::unix::fs::chown(&f, Some(65534), Some(65534)).unwrap();
            let e = read_trusted(&f).unwrap_err();
            assert!(e.contains("not by this user or root"), "{e}");
        }
    }
}
