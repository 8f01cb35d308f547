//! The `libs` suite's name-service lookups (§4.2.1, hashed databases): getpwnam and getpwuid
//! of the last user of a passwd file of N entries, served by glibc's `files` module (a linear
//! scan of the flat file) or by the `db` module of libnss-db (a Berkeley DB hash made by
//! makedb); and gethostbyname of the last host of a hosts file of N entries, from the flat file
//! or from the cache of a name-service cache daemon (unscd, Debian's `unscd`, started privately:
//! libnss-db has no hosts map, so the hashed side of the hosts curve is a cache instead).
//!
//! The machine's own files are never touched: in setup the worker moves into a private mount
//! namespace (needs root), writes the N-entry files, the database and an nsswitch.conf in a
//! scratch directory, and shows them as /etc/passwd, /etc/hosts and /etc/nsswitch.conf (a
//! read-only overlay of its files over /etc) and /var/lib/misc (a bind mount), where only it
//! sees them; the mounts vanish with the worker. The overlay is on the directory, not on the
//! files, because the kernel detaches a mount on a file that another process replaces (a
//! useradd or passwd on the machine renames a new /etc/passwd over the old one): the
//! lookups would then read the machine's file (without overlayfs each file is bind-mounted,
//! and such a replacement makes the series fail). For the db curve the flat /etc/passwd it
//! sees holds root alone, so a lookup of the last user can only be answered by the database
//! (`run` fails otherwise).
//!
//! Every lookup source also hides the machine's /var/run (where glibc looks for the nscd
//! socket, /var/run/nscd/socket) behind a scratch directory of its own, so that no system
//! nscd answers a `files` or `db` lookup, and so that the daemon of the nscd curve makes its
//! sockets (/var/run/nscd/socket and /var/run/.nscd_socket) where only this worker sees them:
//! two sysperf runs at once each have their own daemon, socket, configuration and files.
//! For the nscd curve the worker starts unscd in the foreground (`-d`) inside that namespace,
//! with a configuration of its own, as its child (so in its process group, which the harness
//! kills with it). The warm-up then proves, over the daemon's socket in its own protocol,
//! that the daemon answered: it asks for the last host until the daemon (listening at last:
//! unscd binds its socket before it listens, and a glibc lookup in between is refused and
//! quietly answered from the file) returns the host's address from the N-host file; rewrites
//! the hosts file to hold localhost alone (the daemon does not check the file: `check-files
//! hosts no`); asks again (only the cache knows the name now); and requires glibc's own
//! lookup to succeed, which only the daemon's cache can now make it do. So every timed
//! lookup was answered by the cache. Teardown (and any error after the start) kills and
//! reaps the daemon.

use crate::bench::{Benchmark, Ctx};
use crate::clib;
use crate::error::BenchError;
use crate::suite::feder::Scratch;
use crate::sys;
use std::ffi::{CStr, CString};
use std::fmt::Write as _;
use std::io::{Read as _, Write as _};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

/// Where libnss-db keeps its databases, and the tool that builds them (found on PATH by
/// `crate::programs`' rule, as every program sysperf runs).
pub const DB_DIR: &str = "/var/lib/misc";
pub const MAKEDB: &str = "makedb";
/// The name-service cache daemon (Debian's `unscd` installs it as /usr/sbin/nscd), and where
/// glibc and the daemon meet (glibc's _PATH_NSCDSOCKET is /var/run/nscd/socket).
pub const NSCD: &str = "nscd";
pub const NSCD_RUN: &str = "/var/run";
pub const NSCD_SOCKET: &str = "/var/run/nscd/socket";
/// How long the daemon may take to listen and answer the warm-up (it reads the N-host file
/// in a worker process of its own, on a machine that may be busy).
const NSCD_START: std::time::Duration = std::time::Duration::from_secs(30);
/// The nscd protocol as glibc speaks it (nscd/nscd-client.h): its version and the request
/// gethostbyname(3) sends.
const NSCD_VERSION: i32 = 2;
const NSCD_GETHOSTBYNAME: i32 = 4;
/// Where in the scratch directory the files shown in /etc are written, and which they are.
const ETC: &str = "etc";
const ETC_FILES: [&str; 3] = ["nsswitch.conf", "passwd", "hosts"];
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

/// The address of the `i`th generated host (from 0).
pub fn host_addr(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(
        10,
        (i >> 16 & 255) as u8,
        (i >> 8 & 255) as u8,
        (i & 255) as u8,
    )
}

/// A hosts file of `n` hosts after localhost.
pub fn hosts_text(n: usize) -> String {
    let mut s = String::from("127.0.0.1 localhost\n");
    for i in 0..n {
        let _ = writeln!(s, "{} {}", host_addr(i), host(i));
    }
    s
}

/// Why the lookup series of `source` cannot run here, if they cannot: they need root (a mount
/// namespace), the db curve libnss-db's makedb and module, the nscd curve unscd.
pub fn unavailable(source: Source) -> Option<String> {
    let db = source == Source::PwDb;
    if !sys::is_root() {
        return Some(
            "needs root (it shows its own passwd, hosts and nsswitch.conf in /etc in a private \
             mount namespace); run sysperf as root"
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

/// Hides the machine's /var/run (/run on most systems, where it is a link) behind `dir`/run
/// (made here, with `nscd` inside), in the private mount namespace: glibc then finds no
/// system nscd socket, and the nscd curve's daemon makes both of its sockets
/// (/var/run/nscd/socket and /var/run/.nscd_socket) in this worker's scratch directory, never
/// in the machine's /run, where another run's daemon would replace them (and a daemon
/// killed outright would leave them). The worker needs nothing else from /run.
fn hide_run(dir: &Path) -> Result<(), BenchError> {
    let run = dir.join("run");
    std::fs::create_dir_all(run.join("nscd")).map_err(BenchError::sys("mkdir (run/nscd)"))?;
    let target = std::fs::canonicalize(NSCD_RUN).unwrap_or_else(|_| PathBuf::from(NSCD_RUN));
    sys::bind_mount(&run, &target).map_err(BenchError::sys("mount --bind (/var/run)"))
}

/// Why a question to the daemon got no answer: worth asking again (the socket is not there
/// or not listening yet), or not.
#[derive(Debug)]
enum Unanswered {
    NotListening(std::io::Error),
    Failed(String),
}

/// Asks the nscd listening on `socket` for host `name` as glibc's gethostbyname(3) does (the
/// same request, so the same cache entry), and returns the IPv4 addresses of its answer:
/// empty when the daemon says the host is not found.
fn ask_nscd(
    socket: &Path,
    name: &CStr,
    timeout: std::time::Duration,
) -> Result<Vec<Ipv4Addr>, Unanswered> {
    use std::io::ErrorKind;
    let mut s = match std::os::unix::net::UnixStream::connect(socket) {
        Ok(s) => s,
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::ConnectionRefused) => {
            return Err(Unanswered::NotListening(e))
        }
        Err(e) => {
            return Err(Unanswered::Failed(format!(
                "connect {}: {e}",
                socket.display()
            )))
        }
    };
    let failed = |what: &str, e: std::io::Error| Unanswered::Failed(format!("{what}: {e}"));
    s.set_read_timeout(Some(timeout))
        .and_then(|()| s.set_write_timeout(Some(timeout)))
        .map_err(|e| failed("socket timeout", e))?;
    let key = name.to_bytes_with_nul();
    let mut req = Vec::with_capacity(12 + key.len());
    for v in [NSCD_VERSION, NSCD_GETHOSTBYNAME, key.len() as i32] {
        req.extend_from_slice(&v.to_ne_bytes());
    }
    req.extend_from_slice(key);
    s.write_all(&req).map_err(|e| failed("send to nscd", e))?;
    let mut answer = Vec::new();
    s.read_to_end(&mut answer)
        .map_err(|e| failed("read from nscd", e))?;
    parse_host_answer(&answer, name.to_bytes()).map_err(Unanswered::Failed)
}

/// The IPv4 addresses in an nscd answer to a host lookup of `name` (glibc's
/// hst_response_header: version, found, name length, alias count, address type, address
/// length, address count, error; then the name, the aliases' lengths, the addresses and the
/// aliases); empty when not found.
fn parse_host_answer(b: &[u8], name: &[u8]) -> Result<Vec<Ipv4Addr>, String> {
    let int = |i: usize| -> Option<i32> {
        b.get(i * 4..i * 4 + 4)
            .map(|w| i32::from_ne_bytes([w[0], w[1], w[2], w[3]]))
    };
    let bad = |why: &str| {
        format!(
            "nscd answered {} bytes that are not a host entry: {why}",
            b.len()
        )
    };
    let h: Vec<i32> = (0..8).map_while(int).collect();
    if h.len() < 2 {
        return Err(bad("no header"));
    }
    if h[0] != NSCD_VERSION {
        return Err(bad(&format!("version {}", h[0])));
    }
    if h[1] != 1 {
        return Ok(Vec::new());
    }
    let [_, _, name_len, aliases, family, len, count, _] = h[..] else {
        return Err(bad("short header"));
    };
    let size = |v: i32| usize::try_from(v).map_err(|_| bad("negative length"));
    let (name_len, aliases, len, count) =
        (size(name_len)?, size(aliases)?, size(len)?, size(count)?);
    if family != libc::AF_INET || len != 4 {
        return Err(bad(&format!("address family {family}, length {len}")));
    }
    let at = 32;
    let got = b.get(at..at + name_len).ok_or_else(|| bad("short name"))?;
    if got.split(|&c| c == 0).next() != Some(name) {
        return Err(bad(&format!(
            "the name is {:?}",
            String::from_utf8_lossy(got)
        )));
    }
    let addrs = at + name_len + 4 * aliases;
    let list = b
        .get(addrs..addrs + 4 * count)
        .ok_or_else(|| bad("short address list"))?;
    Ok(list
        .chunks_exact(4)
        .map(|a| Ipv4Addr::new(a[0], a[1], a[2], a[3]))
        .collect())
}

/// A private unscd, killed and reaped when dropped.
pub struct Daemon {
    child: std::process::Child,
    log: PathBuf,
}

impl Daemon {
    /// Starts `nscd -d -f CONF` (in the foreground, logging to `dir`/nscd.log); it is ready
    /// when it answers (see [`Daemon::ask`]).
    fn start(dir: &Path) -> Result<Daemon, BenchError> {
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
        Ok(Daemon { child, log })
    }

    /// The daemon's answer to a lookup of host `name` over its socket (its IPv4 addresses;
    /// empty: not found), waiting while the socket is not there or not listening yet (unscd
    /// binds the socket, so that it exists, before it listens) for as long as the daemon runs,
    /// up to NSCD_START.
    pub fn ask(&mut self, name: &CStr) -> Result<Vec<Ipv4Addr>, BenchError> {
        let start = std::time::Instant::now();
        loop {
            let left = NSCD_START.saturating_sub(start.elapsed());
            let why = match ask_nscd(
                Path::new(NSCD_SOCKET),
                name,
                left.max(std::time::Duration::from_millis(1)),
            ) {
                Ok(addrs) => return Ok(addrs),
                Err(Unanswered::Failed(why)) => {
                    return Err(BenchError::Protocol(format!("{why}: {}", self.log_text())))
                }
                Err(Unanswered::NotListening(e)) => e,
            };
            if let Ok(Some(st)) = self.child.try_wait() {
                return Err(BenchError::Protocol(format!(
                    "nscd exited ({st}) before it listened on {NSCD_SOCKET}: {}",
                    self.log_text()
                )));
            }
            if left.is_zero() {
                return Err(BenchError::Protocol(format!(
                    "nscd did not listen on {NSCD_SOCKET} in {} s ({why}): {}",
                    NSCD_START.as_secs(),
                    self.log_text()
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
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
    let etc = dir.join(ETC);
    std::fs::create_dir(&etc).map_err(BenchError::sys("mkdir (etc)"))?;
    let write = |name: &str, text: &str| -> Result<PathBuf, BenchError> {
        let p = dir.join(name);
        std::fs::write(&p, text).map_err(BenchError::sys("write (nss file)"))?;
        Ok(p)
    };
    write(
        "etc/nsswitch.conf",
        match source {
            Source::PwFiles => "passwd: files\nhosts: files\n",
            Source::PwDb => "passwd: db\nhosts: files\n",
            Source::HostFiles | Source::HostNscd => "passwd: files\nhosts: files\n",
        },
    )?;
    match source {
        Source::PwFiles => write("etc/passwd", &passwd_text(n))?,
        // root alone: the generated users exist only in the database.
        _ => write("etc/passwd", &passwd_text(0))?,
    };
    write("etc/hosts", &hosts_text(if source.hosts() { n } else { 0 }))?;
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
    // Over the directory: a bind mount on /etc/passwd itself is detached when anything on
    // the machine replaces the file (useradd, passwd, an editor's rename), and the lookups
    // then read the machine's file. Where there is no overlayfs, over each file.
    if sys::overlay_mount(&etc, Path::new("/etc")).is_err() {
        for name in ETC_FILES {
            sys::bind_mount(&etc.join(name), &Path::new("/etc").join(name))
                .map_err(BenchError::sys("mount --bind"))?;
        }
    }
    if Path::new(DB_DIR).is_dir() {
        sys::bind_mount(&misc, Path::new(DB_DIR)).map_err(BenchError::sys("mount --bind"))?;
    }
    hide_run(dir)?;
    if source == Source::HostNscd {
        return Daemon::start(dir).map(Some);
    }
    Ok(None)
}

/// Proves that lookups of `name` (at `addr`, in the `entries`-host file `hosts`) are
/// answered by the daemon's cache, and leaves it so: the daemon answers from the full file
/// (so it listens, and has cached the name), the file then holds localhost alone, the daemon
/// still answers (from its cache), and so does glibc here (which only the daemon can now make
/// succeed). Without the first step a glibc lookup may reach the socket after unscd's bind
/// and before its listen: refused, glibc answers from the file and stops asking the daemon
/// for its next 100 lookups, and the file is emptied under a cold cache.
fn warm_up(
    d: &mut Daemon,
    name: &CStr,
    addr: Ipv4Addr,
    hosts: &Path,
    entries: usize,
) -> Result<(), BenchError> {
    let host = name.to_string_lossy();
    let expect = |got: Vec<Ipv4Addr>, when: &str| -> Result<(), BenchError> {
        if got.first() == Some(&addr) {
            return Ok(());
        }
        Err(BenchError::Protocol(format!(
            "nscd answered {host} with {got:?} {when}, not {addr}"
        )))
    };
    expect(d.ask(name)?, &format!("from the {entries}-host file"))?;
    std::fs::write(hosts, hosts_text(0)).map_err(BenchError::sys("write (hosts)"))?;
    expect(
        d.ask(name)?,
        "from its cache (the file holds localhost alone)",
    )?;
    if !clib::gethostbyname_found(name) {
        return Err(BenchError::Protocol(format!(
            "gethostbyname({host}) failed although nscd's cache has it: glibc here did not \
             ask the daemon ({NSCD_SOCKET})"
        )));
    }
    Ok(())
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

impl Lookup {
    /// For an error: what this worker sees of the file the lookup reads (how many lines,
    /// and whether the name is on one), and what is mounted over it.
    fn what_is_seen(&self) -> String {
        let file = if self.source.hosts() {
            "/etc/hosts"
        } else {
            "/etc/passwd"
        };
        let name = self.name.to_string_lossy();
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) => return format!("{file}: {e}"),
        };
        let has = text
            .lines()
            .any(|l| l.split([':', ' ', '\t']).any(|w| w == name));
        let mounts: Vec<String> = std::fs::read_to_string("/proc/self/mountinfo")
            .unwrap_or_default()
            .lines()
            .filter(|l| l.split(' ').nth(4) == Some(file))
            .map(|l| l.split(' ').take(5).collect::<Vec<_>>().join(" "))
            .collect();
        format!(
            "{file} here: {} lines, {name} {}; mounted: {mounts:?}",
            text.lines().count(),
            if has { "on one" } else { "on none" }
        )
    }
}

impl Benchmark for Lookup {
    fn setup(&mut self, _: &Ctx, _: u64) -> Result<(), BenchError> {
        if let Some(why) = unavailable(self.source) {
            return Err(BenchError::Protocol(why));
        }
        let s = Scratch::named(&std::env::temp_dir(), "libs")?;
        let mut daemon = install(self.source, self.entries, s.path())?;
        let last = self.entries - 1;
        let name = if self.source.hosts() {
            host(last)
        } else {
            user(last)
        };
        self.name = CString::new(name).map_err(|_| BenchError::Protocol("NUL in a name".into()))?;
        self.uid = FIRST_UID + last as u32;
        if let Some(d) = daemon.as_mut() {
            let hosts = s.path().join(ETC).join("hosts");
            warm_up(d, &self.name, host_addr(last), &hosts, self.entries)?;
        }
        self.daemon = daemon;
        self.scratch = Some(s);
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        for i in 0..iterations {
            let found = match self.source {
                Source::HostFiles | Source::HostNscd => clib::gethostbyname_found(&self.name),
                _ => {
                    clib::getpwnam_uid(&self.name) == Some(self.uid)
                        && clib::getpwuid_found(self.uid)
                }
            };
            if !found {
                let errno = std::io::Error::last_os_error();
                return Err(BenchError::Protocol(format!(
                    "{:?}: {} not found at lookup {} of {iterations} (the lookup was not served \
                     by the module under test; errno: {errno}; {})",
                    self.source,
                    self.name.to_string_lossy(),
                    i + 1,
                    self.what_is_seen()
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    /// Why the files are shown through an overlay on /etc (#36): a bind mount on a file is
    /// detached when another mount namespace replaces the file (as useradd replaces
    /// /etc/passwd), an overlay on its directory is not. Scratch directories stand in for
    /// /etc here; root only (mounts).
    #[test]
    fn the_files_shown_stay_when_the_machine_replaces_its_own() {
        if !sys::is_root() {
            assert!(std::env::var("CI").is_err(), "CI runs as root");
            eprintln!("skipped: needs root (mount namespaces)");
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        let (ours, by_dir, by_file) = (
            tmp.path().join("ours"),
            tmp.path().join("by-dir"),
            tmp.path().join("by-file"),
        );
        for d in [&ours, &by_dir, &by_file] {
            std::fs::create_dir(d).unwrap();
        }
        std::fs::write(ours.join("passwd"), "ours\n").unwrap();
        std::fs::write(by_dir.join("passwd"), "machine\n").unwrap();
        std::fs::write(by_file.join("passwd"), "machine\n").unwrap();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (replaced_tx, replaced_rx) = std::sync::mpsc::channel::<()>();
        let (o, d, f) = (ours.clone(), by_dir.clone(), by_file.clone());
        // A thread of its own: unshare(CLONE_NEWNS) moves only the calling thread.
        let seen = std::thread::spawn(move || {
            sys::private_mount_namespace().unwrap();
            sys::overlay_mount(&o, &d).unwrap();
            sys::bind_mount(&o.join("passwd"), &f.join("passwd")).unwrap();
            ready_tx.send(()).unwrap();
            replaced_rx.recv().unwrap();
            let read = |p: &Path| std::fs::read_to_string(p.join("passwd")).unwrap();
            (read(&d), read(&f))
        });
        ready_rx.recv().unwrap();
        // The machine's side, as useradd does it: a new file renamed over the old.
        for dir in [&by_dir, &by_file] {
            std::fs::write(dir.join("passwd+"), "machine, replaced\n").unwrap();
            std::fs::rename(dir.join("passwd+"), dir.join("passwd")).unwrap();
        }
        replaced_tx.send(()).unwrap();
        let (through_dir, through_file) = seen.join().unwrap();
        assert_eq!(through_dir, "ours\n");
        assert_eq!(through_file, "machine, replaced\n");
    }

    /// An answer as unscd writes it for a found host: the header, the name padded to four
    /// bytes, no aliases, the addresses.
    fn found_answer(name: &str, addrs: &[Ipv4Addr]) -> Vec<u8> {
        let mut padded = name.as_bytes().to_vec();
        padded.push(0);
        padded.resize(padded.len().div_ceil(4) * 4, 0);
        let mut b = Vec::new();
        let size = 32 + padded.len() + 4 * addrs.len();
        for v in [
            NSCD_VERSION,
            1,
            padded.len() as i32,
            0,
            libc::AF_INET,
            4,
            addrs.len() as i32,
            0,
        ] {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        b.extend_from_slice(&padded);
        for a in addrs {
            b.extend_from_slice(&a.octets());
        }
        assert_eq!(b.len(), size);
        b
    }

    fn not_found_answer() -> Vec<u8> {
        let mut b = Vec::new();
        // netdb.h's HOST_NOT_FOUND in the error field.
        for v in [NSCD_VERSION, 0, 0, 0, 0, 0, 0, 1] {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        b
    }

    #[test]
    fn host_answers_are_read_as_glibc_reads_them() {
        let a = host_addr(999);
        assert_eq!(a, Ipv4Addr::new(10, 0, 3, 231));
        assert!(hosts_text(1000).contains("10.0.3.231 host999.example\n"));
        let name = b"host999.example";
        assert_eq!(
            parse_host_answer(&found_answer("host999.example", &[a]), name),
            Ok(vec![a])
        );
        assert_eq!(parse_host_answer(&not_found_answer(), name), Ok(Vec::new()));
        for (bad, why) in [
            (Vec::new(), "no header"),
            (found_answer("host998.example", &[a]), "the name is"),
            (
                found_answer("host999.example", &[a])[..40].to_vec(),
                "short",
            ),
        ] {
            let e = parse_host_answer(&bad, name).unwrap_err();
            assert!(e.contains(why), "{e}");
        }
        let mut v3 = found_answer("host999.example", &[a]);
        v3[..4].copy_from_slice(&3i32.to_ne_bytes());
        assert!(parse_host_answer(&v3, name)
            .unwrap_err()
            .contains("version 3"));
    }

    /// What the warm-up took for a ready daemon before #36: a socket path that exists. A path
    /// that exists but does not listen (unscd between its bind and its listen) is not an
    /// answer, and is worth asking again; a listening daemon's answer is read whole.
    #[test]
    fn only_a_listening_daemon_answers() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("socket");
        let name = CString::new("host999.example").unwrap();
        let t = std::time::Duration::from_secs(30);
        assert!(matches!(
            ask_nscd(&socket, &name, t),
            Err(Unanswered::NotListening(_))
        ));
        std::fs::write(&socket, "").unwrap();
        assert!(matches!(
            ask_nscd(&socket, &name, t),
            Err(Unanswered::NotListening(_))
        ));
        std::fs::remove_file(&socket).unwrap();
        let listener = UnixListener::bind(&socket).unwrap();
        let addr = host_addr(999);
        let server = std::thread::spawn(move || {
            let mut asked = Vec::new();
            for answer in [found_answer("host999.example", &[addr]), not_found_answer()] {
                let (mut s, _) = listener.accept().unwrap();
                let mut req = vec![0u8; 12 + 16];
                s.read_exact(&mut req).unwrap();
                asked.push(req);
                s.write_all(&answer).unwrap();
            }
            asked
        });
        assert_eq!(ask_nscd(&socket, &name, t).unwrap(), vec![addr]);
        assert_eq!(ask_nscd(&socket, &name, t).unwrap(), Vec::<Ipv4Addr>::new());
        // glibc's request for gethostbyname: version 2, GETHOSTBYNAME, the name with its NUL.
        let mut want = Vec::new();
        for v in [2i32, 4, 16] {
            want.extend_from_slice(&v.to_ne_bytes());
        }
        want.extend_from_slice(b"host999.example\0");
        assert_eq!(server.join().unwrap(), vec![want.clone(), want]);
    }
}
