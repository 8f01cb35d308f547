//! The `libs` suite's name-service lookups (§4.2.1, hashed databases): getpwnam and getpwuid
//! of the last user of a passwd file of N entries, served by glibc's `files` module (a linear
//! scan of the flat file) or by the `db` module of libnss-db (a Berkeley DB hash made by
//! makedb); and gethostbyname of the last host of a hosts file of N entries (libnss-db has no
//! hosts map, so the hosts curve is the flat file only).
//!
//! The machine's own files are never touched: in setup the worker moves into a private mount
//! namespace (needs root), writes the N-entry files, the database and an nsswitch.conf in a
//! scratch directory, and bind-mounts them over /etc/passwd, /etc/hosts, /etc/nsswitch.conf
//! and /var/lib/misc, where only it sees them; the mounts vanish with the worker. For the db
//! curve the flat /etc/passwd it sees holds root alone, so a lookup of the last user can only
//! be answered by the database (`run` fails otherwise).

use crate::bench::{Benchmark, Ctx};
use crate::clib;
use crate::error::BenchError;
use crate::suite::feder::Scratch;
use crate::sys;
use std::ffi::CString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Where libnss-db keeps its databases, and the tool that builds them.
pub const DB_DIR: &str = "/var/lib/misc";
pub const MAKEDB: &str = "/usr/bin/makedb";
/// First uid of the generated users.
pub const FIRST_UID: u32 = 20000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// passwd: files
    PwFiles,
    /// passwd: db (libnss-db)
    PwDb,
    /// hosts: files
    HostFiles,
}

/// The name of the `i`th generated user (from 0).
pub fn user(i: usize) -> String {
    format!("user{i}")
}

/// The name of the `i`th generated host (from 0).
pub fn host(i: usize) -> String {
    format!("host{i}.example")
}

/// A passwd file of `n` users after root.
pub fn passwd_text(n: usize) -> String {
    let mut s = String::from("root:x:0:0:root:/root:/bin/sh\n");
    for i in 0..n {
        let _ = writeln!(
            s,
            "{}:x:{}:100:generated user:/nonexistent:/bin/sh",
            user(i),
            FIRST_UID as usize + i
        );
    }
    s
}

/// makedb's input for a passwd file (libnss-db's Makefile): each entry under "0<index>",
/// ".<name>" and "=<uid>".
pub fn makedb_input(passwd: &str) -> String {
    let mut s = String::new();
    for (i, line) in passwd.lines().enumerate() {
        let f: Vec<&str> = line.split(':').collect();
        if f.len() < 3 {
            continue;
        }
        let _ = writeln!(s, "0{i} {line}");
        let _ = writeln!(s, ".{} {line}", f[0]);
        let _ = writeln!(s, "={} {line}", f[2]);
    }
    s
}

/// A hosts file of `n` hosts after localhost.
pub fn hosts_text(n: usize) -> String {
    let mut s = String::from("127.0.0.1 localhost\n");
    for i in 0..n {
        let _ = writeln!(
            s,
            "10.{}.{}.{} {}",
            i >> 16 & 255,
            i >> 8 & 255,
            i & 255,
            host(i)
        );
    }
    s
}

/// Why the lookup series cannot run here, if they cannot: they need root (a mount
/// namespace), and the db curve needs libnss-db's makedb and module.
pub fn unavailable(db: bool) -> Option<String> {
    if !sys::is_root() {
        return Some(
            "needs root (it bind-mounts passwd, hosts and nsswitch.conf in a private mount \
             namespace); run sysperf as root"
                .into(),
        );
    }
    if db
        && !(Path::new(MAKEDB).exists()
            && Path::new(DB_DIR).is_dir()
            && [
                "/lib/x86_64-linux-gnu",
                "/usr/lib/x86_64-linux-gnu",
                "/lib64",
                "/usr/lib",
            ]
            .iter()
            .any(|d| Path::new(d).join("libnss_db.so.2").exists()))
    {
        return Some(format!(
            "libnss-db is not installed ({MAKEDB}, {DB_DIR} and libnss_db.so.2 are needed); \
             apt-get install libnss-db"
        ));
    }
    None
}

/// Writes the files of `source` for `n` entries into `dir` and bind-mounts them over the
/// system's, in this process's private mount namespace (entered here).
pub fn install(source: Source, n: usize, dir: &Path) -> Result<(), BenchError> {
    let write = |name: &str, text: &str| -> Result<PathBuf, BenchError> {
        let p = dir.join(name);
        std::fs::write(&p, text).map_err(BenchError::sys("write (nss file)"))?;
        Ok(p)
    };
    let conf = write(
        "nsswitch.conf",
        match source {
            Source::PwFiles => "passwd: files\nhosts: files\n",
            Source::PwDb => "passwd: db\nhosts: files\n",
            Source::HostFiles => "passwd: files\nhosts: files\n",
        },
    )?;
    let passwd = match source {
        Source::PwFiles => write("passwd", &passwd_text(n))?,
        // root alone: the generated users exist only in the database.
        _ => write("passwd", &passwd_text(0))?,
    };
    let hosts = write(
        "hosts",
        &hosts_text(if source == Source::HostFiles { n } else { 0 }),
    )?;
    let misc = dir.join("misc");
    std::fs::create_dir(&misc).map_err(BenchError::sys("mkdir (db directory)"))?;
    if source == Source::PwDb {
        let input = write("passwd.in", &makedb_input(&passwd_text(n)))?;
        let out = std::process::Command::new(MAKEDB)
            .arg("-o")
            .arg(misc.join("passwd.db"))
            .arg(&input)
            .output()
            .map_err(BenchError::sys("exec makedb"))?;
        if !out.status.success() {
            return Err(BenchError::Protocol(format!(
                "makedb failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
    }
    sys::private_mount_namespace().map_err(BenchError::sys("unshare(CLONE_NEWNS)"))?;
    for (from, to) in [
        (&conf, "/etc/nsswitch.conf"),
        (&passwd, "/etc/passwd"),
        (&hosts, "/etc/hosts"),
        (&misc, DB_DIR),
    ] {
        if from == &misc && !Path::new(DB_DIR).is_dir() {
            continue;
        }
        sys::bind_mount(from, Path::new(to)).map_err(BenchError::sys("mount --bind"))?;
    }
    Ok(())
}

pub struct Lookup {
    source: Source,
    entries: usize,
    scratch: Option<Scratch>,
    name: CString,
    uid: u32,
}

impl Lookup {
    pub fn new(source: Source, entries: usize) -> Lookup {
        Lookup {
            source,
            entries: entries.max(1),
            scratch: None,
            name: CString::default(),
            uid: 0,
        }
    }
}

impl Benchmark for Lookup {
    fn setup(&mut self, _: &Ctx, _: u64) -> Result<(), BenchError> {
        if let Some(why) = unavailable(self.source == Source::PwDb) {
            return Err(BenchError::Protocol(why));
        }
        let s = Scratch::named(&std::env::temp_dir(), "libs")?;
        install(self.source, self.entries, s.path())?;
        let last = self.entries - 1;
        let name = match self.source {
            Source::HostFiles => host(last),
            _ => user(last),
        };
        self.name = CString::new(name).map_err(|_| BenchError::Protocol("NUL in a name".into()))?;
        self.uid = FIRST_UID + last as u32;
        self.scratch = Some(s);
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        for _ in 0..iterations {
            let found = match self.source {
                Source::HostFiles => clib::gethostbyname_found(&self.name),
                _ => {
                    clib::getpwnam_uid(&self.name) == Some(self.uid)
                        && clib::getpwuid_found(self.uid)
                }
            };
            if !found {
                return Err(BenchError::Protocol(format!(
                    "{:?}: {} not found (the lookup was not served by the module under test)",
                    self.source,
                    self.name.to_string_lossy()
                )));
            }
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.scratch = None;
        Ok(())
    }
}
