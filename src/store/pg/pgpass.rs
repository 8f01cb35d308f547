//! The password for a PostgreSQL connection whose URL has none, found as libpq finds it:
//! `PGPASSWORD`, else the password file (`passfile` in the URL, else `PGPASSFILE`, else
//! `~/.pgpass`), whose lines are `hostname:port:database:username:password`, `*` matching
//! anything in the first four fields, `\:` and `\\` escaping, `#` starting a comment, the
//! first matching line winning. A file that is not a regular file, or that its group or
//! others may read or write, is ignored with a warning, as libpq does. A socket directory
//! matches `localhost` when it is the default one, else its path.
//!
//! It is not the URL parser (see `url.rs`) and never prints a password.

use std::io::Read;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// What a password is looked up for.
pub(crate) struct Key<'a> {
    /// The host as the URL names it (a socket directory as its path).
    pub host: &'a str,
    pub port: u16,
    pub database: &'a str,
    pub user: &'a str,
}

/// Socket directories libpq builds may take as the default (Debian's, upstream's): a
/// connection through one of them is to `localhost` for the password file.
const DEFAULT_SOCKET_DIRS: [&str; 3] = ["/var/run/postgresql", "/run/postgresql", "/tmp"];

/// The password for `key`: `PGPASSWORD`, else the password file's (`passfile`, else
/// `PGPASSFILE`, else `~/.pgpass`). None when there is none (or it is empty, as in libpq).
pub(crate) fn password(key: &Key<'_>, passfile: Option<&Path>) -> Option<String> {
    if let Some(p) = std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty()) {
        return Some(p);
    }
    let file = passfile.map(Path::to_path_buf).or_else(default_file)?;
    let text = read_private(&file)?;
    lookup(&text, key).filter(|p| !p.is_empty())
}

fn default_file() -> Option<PathBuf> {
    std::env::var_os("PGPASSFILE")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".pgpass"))
        })
}

/// The file's text if it is a regular file only its owner may read; a warning on stderr
/// when it is there but not so (once per process); None when it is not there.
fn read_private(path: &Path) -> Option<String> {
    // O_NONBLOCK: a FIFO planted there must not hang the connection (it is then refused as
    // not a plain file). Checked on the opened file, so what is checked is what is read.
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let meta = f.metadata().ok()?;
    let problem = if !meta.is_file() {
        Some("is not a plain file")
    } else if meta.permissions().mode() & 0o077 != 0 {
        Some("has group or world access; permissions should be u=rw (0600) or less")
    } else {
        None
    };
    if let Some(problem) = problem {
        static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
            eprintln!(
                "sysperf: warning: password file \"{}\" {problem}; it is ignored",
                path.display()
            );
        }
        return None;
    }
    let mut text = String::new();
    f.read_to_string(&mut text).ok()?;
    Some(text)
}

/// The fields of a password file line: split at each `:` that no `\` escapes, each as
/// written (to tell `*` from `\*`) and unescaped.
fn fields(line: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let (mut raw, mut value) = (String::new(), String::new());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(n) => {
                    raw.push(c);
                    raw.push(n);
                    value.push(n);
                }
                None => {
                    raw.push(c);
                    value.push(c);
                }
            },
            ':' => out.push((std::mem::take(&mut raw), std::mem::take(&mut value))),
            c => {
                raw.push(c);
                value.push(c);
            }
        }
    }
    out.push((raw, value));
    out
}

/// The password of the first line of `text` that matches `key`.
pub(crate) fn lookup(text: &str, key: &Key<'_>) -> Option<String> {
    let host = if DEFAULT_SOCKET_DIRS.contains(&key.host.trim_end_matches('/')) {
        "localhost"
    } else {
        key.host
    };
    let port = key.port.to_string();
    let wanted = [host, port.as_str(), key.database, key.user];
    text.lines()
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(fields)
        .filter(|f| f.len() >= 5)
        .find(|f| {
            f.iter()
                .zip(wanted)
                .all(|((raw, value), want)| raw == "*" || value == want)
        })
        .map(|mut f| f.swap_remove(4).1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key<'a>(host: &'a str, port: u16, database: &'a str, user: &'a str) -> Key<'a> {
        Key {
            host,
            port,
            database,
            user,
        }
    }

    #[test]
    fn lines_match_as_in_libpq() {
        let text = "\
# a comment:*:*:*:nope
db.lab:5432:sysperf:bench:first
*:5432:sysperf:bench:second
db.lab:*:*:bench:third
db\\:x:5432:*:*:esc\\:aped\\\\pw
localhost:5433:*:*:local
/srv/pg:5433:*:*:socket
\\*:1:*:*:literal-star
db.lab:5432:sysperf:nofive
";
        let l = |host, port, db, user| lookup(text, &key(host, port, db, user));
        assert_eq!(
            l("db.lab", 5432, "sysperf", "bench").as_deref(),
            Some("first")
        );
        assert_eq!(
            l("other", 5432, "sysperf", "bench").as_deref(),
            Some("second")
        );
        assert_eq!(l("db.lab", 6000, "x", "bench").as_deref(), Some("third"));
        assert_eq!(l("db:x", 5432, "d", "u").as_deref(), Some("esc:aped\\pw"));
        assert_eq!(
            l("/var/run/postgresql", 5433, "d", "u").as_deref(),
            Some("local")
        );
        assert_eq!(l("/srv/pg", 5433, "d", "u").as_deref(), Some("socket"));
        assert_eq!(l("/srv/pg/other", 5433, "d", "u"), None);
        assert_eq!(l("x", 1, "d", "u"), None);
        assert_eq!(l("*", 1, "d", "u").as_deref(), Some("literal-star"));
        assert_eq!(l("db.lab", 5432, "sysperf", "nofive"), None);
        assert_eq!(l("nowhere", 1, "d", "u"), None);
        // The password ends at an unescaped ':', and CRLF lines are read.
        assert_eq!(
            lookup("h:1:d:u:pw:trailing\r\n", &key("h", 1, "d", "u")).as_deref(),
            Some("pw")
        );
    }

    #[test]
    fn a_file_others_may_read_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("pgpass");
        std::fs::write(&f, "*:*:*:*:pw\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_private(&f).as_deref(), Some("*:*:*:*:pw\n"));
        for mode in [0o640, 0o604, 0o660] {
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
            assert_eq!(read_private(&f), None, "{mode:o}");
        }
        assert_eq!(read_private(dir.path()), None);
        assert_eq!(read_private(&dir.path().join("missing")), None);
    }
}
