//! The `libs` suite's name-service lookups (§4.2.1, hashed databases): getpwnam and getpwuid
//! of the last user of a passwd file of N entries, served by glibc's `files` module (a linear
//! scan of the flat file) or by the `db` module of libnss-db (a Berkeley DB hash made by
//! makedb); and gethostbyname of the last host of a hosts file of N entries, from the flat file
//! or from the cache of a name-service cache daemon (unscd, Debian's `unscd`, started privately:
//! libnss-db has no hosts map, so the hashed side of the hosts curve is a cache instead).
//!
//! The machine's own files are never touched: in setup the worker moves into a private mount
//! namespace (needs root), writes the N-entry files, the database and an nsswitch.conf in a
//! scratch directory, and bind-mounts them over /etc/passwd, /etc/hosts, /etc/nsswitch.conf
//! and /var/lib/misc, where only it sees them; the mounts vanish with the worker. For the db
//! curve the flat /etc/passwd it sees holds root alone, so a lookup of the last user can only
//! be answered by the database (`run` fails otherwise).
//!
//! Every lookup source also hides the machine's nscd socket directory (/var/run/nscd) behind
//! a scratch directory of its own, so that no system nscd answers a `files` or `db` lookup.
//! For the nscd curve the worker starts unscd in the foreground (`-d`) inside that namespace,
//! with a configuration of its own, as its child (so in its process group, which the harness
//! kills with it); warms the cache with the last host; then rewrites the hosts file to hold
//! localhost alone (the daemon does not check the file: `check-files hosts no`), so a lookup
//! that succeeds afterwards was answered by the daemon's cache. Teardown (and any error after
//! the start) kills and reaps the daemon.

use crate::bench::{Benchmark, Ctx};
use crate::clib;
use crate::error::BenchError;
use crate::suite::feder::Scratch;
use crate::sys;
use std::ffi::CString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Where libnss-db keeps its databases, and the tool that builds them (found on PATH by
/// `crate::programs`' rule, as every program sysperf runs).
pub const DB_DIR: &str = "/var/lib/misc";
pub const MAKEDB: &str = "makedb";
/// The name-service cache daemon (Debian's `unscd` installs it as /usr/sbin/nscd), and where
/// glibc and the daemon meet (glibc's _PATH_NSCDSOCKET is /var/run/nscd/socket).
pub const NSCD: &str = "nscd";
pub const NSCD_RUN: &str = "/var/run";
/// How long the daemon may take to make its socket.
const NSCD_START: std::time::Duration = std::time::Duration::from_secs(10);
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
    /// hosts: files, behind unscd's cache
    HostNscd,
}

impl Source {
    fn hosts(self) -> bool {
        matches!(self, Source::HostFiles | Source::HostNscd)
    }
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

/// Why the lookup series of `source` cannot run here, if they cannot: they need root (a mount
/// namespace), the db curve libnss-db's makedb and module, the nscd curve unscd.
pub fn unavailable(source: Source) -> Option<String> {
    let db = source == Source::PwDb;
    if !sys::is_root() {
        return Some(
            "needs root (it bind-mounts passwd, hosts and nsswitch.conf in a private mount \
             namespace); run sysperf as root"
                .into(),
        );
    }
    if db
        && !(crate::programs::find(MAKEDB).is_ok()
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
            "libnss-db is not installed ({MAKEDB} on PATH, {DB_DIR} and libnss_db.so.2 are \
             needed); apt-get install libnss-db"
        ));
    }
    if source == Source::HostNscd {
        if let Err(e) = crate::programs::find(NSCD) {
            return Some(format!(
                "no name-service cache daemon ({e}); apt-get install unscd (its service need \
                 not run: the series starts a private one)"
            ));
        }
    }
    None
}

/// unscd's configuration for the nscd curve: root (no server-user, so it can read the
/// scratch files), the hosts cache on, entries kept for an hour and never dropped for a
/// change of the file (the run proves the cache by emptying the file after the warm-up).
pub const NSCD_CONF: &str = "debug-level 0\n\
    enable-cache passwd no\n\
    enable-cache group no\n\
    enable-cache hosts yes\n\
    positive-time-to-live hosts 3600\n\
    negative-time-to-live hosts 20\n\
    suggested-size hosts 1001\n\
    check-files hosts no\n";

/// The directory glibc looks for the nscd socket in, seen from here (/var/run is a link to
/// /run on most systems).
fn nscd_socket_dir() -> PathBuf {
    std::fs::canonicalize(NSCD_RUN)
        .unwrap_or_else(|_| PathBuf::from(NSCD_RUN))
        .join("nscd")
}

/// Hides the machine's nscd socket directory behind `dir` (made here), in the private mount
/// namespace: over /var/run/nscd where it exists, else over /var/run itself (whose other
/// entries this worker does not need), with `nscd` inside. Returns the directory the socket
/// appears in.
fn hide_nscd(dir: &Path) -> Result<PathBuf, BenchError> {
    let target = nscd_socket_dir();
    let mkdir = |p: &Path| std::fs::create_dir_all(p).map_err(BenchError::sys("mkdir (nscd)"));
    if target.is_dir() {
        let ours = dir.join("nscd");
        mkdir(&ours)?;
        sys::bind_mount(&ours, &target).map_err(BenchError::sys("mount --bind (nscd)"))?;
        Ok(ours)
    } else {
        let run = dir.join("run");
        mkdir(&run.join("nscd"))?;
        let parent = target.parent().unwrap_or(Path::new("/run"));
        sys::bind_mount(&run, parent).map_err(BenchError::sys("mount --bind (/var/run)"))?;
        Ok(run.join("nscd"))
    }
}

/// A private unscd, killed and reaped when dropped.
pub struct Daemon {
    child: std::process::Child,
    log: PathBuf,
}

impl Daemon {
    /// Starts `nscd -d -f CONF` (in the foreground, logging to `dir`/nscd.log) and waits for
    /// its socket in `socket_dir`.
    fn start(dir: &Path, socket_dir: &Path) -> Result<Daemon, BenchError> {
        let conf = dir.join("nscd.conf");
        std::fs::write(&conf, NSCD_CONF).map_err(BenchError::sys("write (nscd.conf)"))?;
        let log = dir.join("nscd.log");
        let out = std::fs::File::create(&log).map_err(BenchError::sys("create (nscd.log)"))?;
        let err = out.try_clone().map_err(BenchError::sys("dup (nscd.log)"))?;
        let mut cmd = crate::programs::command(NSCD).map_err(BenchError::sys("find nscd"))?;
        cmd.arg("-d")
            .arg("-f")
            .arg(&conf)
            .stdin(std::process::Stdio::null())
            .stdout(out)
            .stderr(err);
        // Killed with the worker however the worker ends (the harness also kills the
        // worker's process group, which the daemon stays in: -d does not daemonize).
        clib::dies_with_parent(&mut cmd);
        let child = cmd.spawn().map_err(BenchError::sys("exec nscd"))?;
        let mut d = Daemon { child, log };
        let socket = socket_dir.join("socket");
        let start = std::time::Instant::now();
        while !socket.exists() {
            if let Ok(Some(st)) = d.child.try_wait() {
                return Err(BenchError::Protocol(format!(
                    "nscd exited ({st}) before making its socket: {}",
                    d.log_text()
                )));
            }
            if start.elapsed() > NSCD_START {
                return Err(BenchError::Protocol(format!(
                    "nscd made no socket in {} s: {}",
                    NSCD_START.as_secs(),
                    d.log_text()
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        Ok(d)
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log)
            .map(|t| t.trim().to_string())
            .unwrap_or_default()
    }

    /// The daemon's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes the files of `source` for `n` entries into `dir` and bind-mounts them over the
/// system's, in this process's private mount namespace (entered here), the machine's nscd
/// socket hidden; for the nscd curve, starts the private daemon there and returns it.
pub fn install(source: Source, n: usize, dir: &Path) -> Result<Option<Daemon>, BenchError> {
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
            Source::HostFiles | Source::HostNscd => "passwd: files\nhosts: files\n",
        },
    )?;
    let passwd = match source {
        Source::PwFiles => write("passwd", &passwd_text(n))?,
        // root alone: the generated users exist only in the database.
        _ => write("passwd", &passwd_text(0))?,
    };
    let hosts = write("hosts", &hosts_text(if source.hosts() { n } else { 0 }))?;
    let misc = dir.join("misc");
    std::fs::create_dir(&misc).map_err(BenchError::sys("mkdir (db directory)"))?;
    if source == Source::PwDb {
        let input = write("passwd.in", &makedb_input(&passwd_text(n)))?;
        let out = crate::programs::command(MAKEDB)
            .map_err(BenchError::sys("find makedb"))?
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
    let socket_dir = hide_nscd(dir)?;
    if source == Source::HostNscd {
        return Daemon::start(dir, &socket_dir).map(Some);
    }
    Ok(None)
}

pub struct Lookup {
    source: Source,
    entries: usize,
    /// Before the scratch directory, so that the daemon dies before its files go.
    daemon: Option<Daemon>,
    scratch: Option<Scratch>,
    name: CString,
    uid: u32,
}

impl Lookup {
    pub fn new(source: Source, entries: usize) -> Lookup {
        Lookup {
            source,
            entries: entries.max(1),
            daemon: None,
            scratch: None,
            name: CString::default(),
            uid: 0,
        }
    }
}

impl Benchmark for Lookup {
    fn setup(&mut self, _: &Ctx, _: u64) -> Result<(), BenchError> {
        if let Some(why) = unavailable(self.source) {
            return Err(BenchError::Protocol(why));
        }
        let s = Scratch::named(&std::env::temp_dir(), "libs")?;
        let daemon = install(self.source, self.entries, s.path())?;
        let last = self.entries - 1;
        let name = if self.source.hosts() {
            host(last)
        } else {
            user(last)
        };
        self.name = CString::new(name).map_err(|_| BenchError::Protocol("NUL in a name".into()))?;
        self.uid = FIRST_UID + last as u32;
        if daemon.is_some() {
            // Warm the cache (the daemon reads the N-host file now), then leave localhost
            // alone in the file: from here on only the daemon's cache knows the name.
            if !clib::gethostbyname_found(&self.name) {
                return Err(BenchError::Protocol(format!(
                    "nscd did not resolve {} from the {}-host file",
                    self.name.to_string_lossy(),
                    self.entries
                )));
            }
            std::fs::write(s.path().join("hosts"), hosts_text(0))
                .map_err(BenchError::sys("write (hosts)"))?;
        }
        self.daemon = daemon;
        self.scratch = Some(s);
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        for _ in 0..iterations {
            let found = match self.source {
                Source::HostFiles | Source::HostNscd => clib::gethostbyname_found(&self.name),
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
        self.daemon = None;
        self.scratch = None;
        Ok(())
    }
}
