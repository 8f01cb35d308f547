//! A private PostgreSQL cluster for tests: `initdb` into a temporary directory, a free port on
//! 127.0.0.1, the unix socket in that directory, `pg_ctl start -w`; stopped and removed when
//! dropped, also when the test fails or panics, and by a watchdog process when the test
//! process dies without dropping it (killed, or a cluster kept in a static). It never touches
//! a system cluster nor assumes port 5432.
//!
//! As root, the cluster runs as the `postgres` user (else `nobody`), since `initdb` refuses
//! root. Without PostgreSQL installed, [`PgCluster::start`] says so and returns None, so the
//! tests skip; under CI (`CI=true`) a missing PostgreSQL fails instead.
//!
//! Used by the integration tests (tests/it/support) and by the store's unit tests (by path).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A running private cluster. Superuser `sysperf`, trust authentication (unless its
/// [`Setup`] says otherwise).
pub struct PgCluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    pub port: u16,
    /// The user the server runs as (when the tests run as root).
    user: Option<String>,
    watchdog: Option<Child>,
    /// Server options beyond the defaults (`-c ssl=on`).
    extra: String,
    /// The addresses it listens on (`listen_addresses`).
    listen: String,
}

/// What a cluster starts with beyond the defaults.
#[derive(Default)]
pub struct Setup {
    /// The server's certificate chain and key (PEM files): TLS on.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// pg_hba.conf, replacing initdb's (trust for everyone).
    pub hba: Option<String>,
    /// Addresses to listen on besides 127.0.0.1 (the deployment test's links to its hosts).
    pub listen: Vec<String>,
}

/// The directory holding initdb and pg_ctl: `$SYSPERF_PG_BIN`, else the newest
/// /usr/lib/postgresql/N/bin, else `pg_config --bindir`.
fn bin_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("SYSPERF_PG_BIN") {
        return Some(PathBuf::from(d));
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    found.sort();
    if let Some((_, bin)) = found.pop() {
        return Some(bin);
    }
    let out = Command::new("pg_config").arg("--bindir").output().ok()?;
    let bin = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    bin.join("initdb").exists().then_some(bin)
}

/// Whether this is CI (`CI=true`), where a missing tool fails a test instead of skipping it.
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// The uid and gid of `user`, from `id`.
fn ids_of(user: &str) -> Option<(u32, u32)> {
    let id = |flag: &str| -> Option<u32> {
        let out = Command::new("id").args([flag, user]).output().ok()?;
        out.status.success().then_some(())?;
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    };
    Some((id("-u")?, id("-g")?))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl PgCluster {
    /// Starts a new cluster, or None (after saying why) when PostgreSQL is not installed and
    /// this is not CI.
    pub fn start() -> Option<PgCluster> {
        PgCluster::start_with(Setup::default())
    }

    /// [`PgCluster::start`] with TLS or another pg_hba.conf.
    pub fn start_with(setup: Setup) -> Option<PgCluster> {
        let Some(bin) = bin_dir() else {
            assert!(
                !under_ci(),
                "PostgreSQL is not installed (no initdb): under CI the PostgreSQL tests must run; install the postgresql package"
            );
            eprintln!("skipped: PostgreSQL is not installed (no initdb found)");
            return None;
        };
        let root = unsafe_free_euid() == 0;
        let user = root.then(|| {
            ["postgres", "nobody"]
                .into_iter()
                .find(|u| ids_of(u).is_some())
                .expect("running as root, but there is neither a postgres nor a nobody user to run PostgreSQL as")
                .to_string()
        });
        let dir = test_dir("pg", user.as_deref().and_then(ids_of).map(|(uid, _)| uid));
        if let Some(u) = &user {
            let (uid, gid) = ids_of(u).unwrap();
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).unwrap();
        }
        let mut cluster = PgCluster {
            dir,
            bin,
            port: 0,
            user,
            watchdog: None,
            extra: String::new(),
            listen: std::iter::once("127.0.0.1".to_string())
                .chain(setup.listen.iter().cloned())
                .collect::<Vec<_>>()
                .join(","),
        };
        let data = cluster.data();
        let out = cluster
            .as_server_user(&cluster.bin.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                "sysperf",
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "-N",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if let Some((cert, key)) = &setup.tls {
            cluster.install(cert, &data.join("server.crt"));
            cluster.install(key, &data.join("server.key"));
            cluster.extra = " -c ssl=on".into();
        }
        if let Some(hba) = &setup.hba {
            let path = data.join("pg_hba.conf");
            std::fs::write(&path, hba).unwrap();
            cluster.give_to_server(&path);
        }
        cluster.watchdog = Some(cluster.spawn_watchdog());
        let mut last = String::new();
        for _ in 0..5 {
            cluster.port = free_port();
            match cluster.try_start() {
                Ok(()) => return Some(cluster),
                Err(e) => last = e,
            }
        }
        panic!("the private PostgreSQL cluster did not start: {last}");
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Copies `from` to `to`, mode 0600, owned by the server's user (as PostgreSQL wants its
    /// key).
    fn install(&self, from: &Path, to: &Path) {
        std::fs::copy(from, to).unwrap();
        std::fs::set_permissions(to, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        self.give_to_server(to);
    }

    fn give_to_server(&self, path: &Path) {
        if let Some(u) = &self.user {
            let (uid, gid) = ids_of(u).unwrap();
            std::os::unix::fs::chown(path, Some(uid), Some(gid)).unwrap();
        }
    }

    /// A command run as the server's user.
    fn as_server_user(&self, program: &Path) -> Command {
        match &self.user {
            Some(u) => {
                let mut c = Command::new("runuser");
                c.args(["-u", u, "--"]).arg(program);
                c
            }
            None => Command::new(program),
        }
    }

    fn try_start(&self) -> Result<(), String> {
        let opts = format!(
            "-p {} -k {} -c listen_addresses={} -c fsync=off -c max_connections=200{}",
            self.port,
            self.dir.path().display(),
            self.listen,
            self.extra
        );
        let out = self
            .as_server_user(&self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.dir.path().join("log"))
            .args(["-w", "-t", "60", "-o", &opts, "start"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        if out.status.success() {
            Ok(())
        } else {
            let log = std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default();
            Err(format!("{}\n{log}", String::from_utf8_lossy(&out.stderr)))
        }
    }

    /// Starts the server again after [`PgCluster::stop`], on the same port.
    pub fn start_again(&self) {
        self.try_start().unwrap();
    }

    /// Stops the server (fast shutdown: connections are cut, data kept).
    pub fn stop(&self) {
        let _ = self
            .as_server_user(&self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(self.data())
            .args(["-m", "fast", "-w", "stop"])
            .stdin(Stdio::null())
            .output();
    }

    /// A process that stops the cluster and removes its directory once this process is gone.
    fn spawn_watchdog(&self) -> Child {
        let stop = format!(
            "{} -D '{}' -m immediate stop",
            self.bin.join("pg_ctl").display(),
            self.data().display()
        );
        let stop = match &self.user {
            Some(u) => format!("runuser -u {u} -- {stop}"),
            None => stop,
        };
        let script = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 1; done; {stop}; rm -rf '{dir}'",
            pid = std::process::id(),
            dir = self.dir.path().display()
        );
        Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }

    /// The directory of the server's unix socket (`.s.PGSQL.PORT`): reachable from any network
    /// namespace, as namespaces share the file system.
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    /// The URL of database `db` (trust authentication: no password).
    pub fn url(&self, db: &str) -> String {
        format!("postgres://sysperf@127.0.0.1:{}/{db}", self.port)
    }

    /// Creates an empty database named `name` (letters, digits, underscores) and returns its URL.
    pub fn create_db(&self, name: &str) -> String {
        assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        let mut c = postgres::Client::connect(&self.url("postgres"), postgres::NoTls).unwrap();
        c.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
        self.url(name)
    }

    /// Runs `sql` in database `db` and returns the first column of every row as text.
    pub fn query(&self, db: &str, sql: &str) -> Vec<String> {
        self.try_query(db, sql).unwrap()
    }

    /// [`PgCluster::query`], the error returned (a table not made yet, say).
    pub fn try_query(&self, db: &str, sql: &str) -> Result<Vec<String>, postgres::Error> {
        let mut c = postgres::Client::connect(&self.url(db), postgres::NoTls)?;
        Ok(c.simple_query(sql)?
            .into_iter()
            .filter_map(|m| match m {
                postgres::SimpleQueryMessage::Row(r) => Some(r.get(0).unwrap_or("").to_string()),
                _ => None,
            })
            .collect())
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        let _ = self
            .as_server_user(&self.bin.join("pg_ctl"))
            .arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "-w", "stop"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if let Some(mut w) = self.watchdog.take() {
            let _ = w.kill();
            let _ = w.wait();
        }
        // The TempDir removes the directory when it is dropped, after this.
    }
}

/// The effective user id, from /proc (the tests have no `unsafe`).
pub fn unsafe_free_euid() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(u32::MAX)
}

/// One cluster shared by the tests of a process (each makes its own database in it); the
/// watchdog removes it when the process exits.
pub fn shared() -> Option<&'static PgCluster> {
    static CLUSTER: std::sync::OnceLock<Option<PgCluster>> = std::sync::OnceLock::new();
    CLUSTER.get_or_init(PgCluster::start).as_ref()
}

/// A new database in the shared cluster, named after `test` and unique in this process.
pub fn fresh_db(test: &str) -> Option<String> {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name: String = test
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(40)
        .collect();
    Some(shared()?.create_db(&format!("t{n}_{name}")))
}

/// A temporary directory `sysperf-<kind>.<pid>.<random>` for a test (here, where the store's
/// unit tests also find it) (a PostgreSQL cluster, a
/// fleet of ssh hosts), after removing those of `kind` a test process that is gone left (one
/// killed, or on a machine that restarted mid-run, cannot remove its own). Only directories
/// (never a link) owned by this user or by `server_uid` (a cluster's data belongs to its
/// server's user) are removed. The dots keep the name out of the janitor's pattern
/// (`sysperf-<what>-<pid>-...`): a sysperf run beside the tests takes a live test's
/// directory for a gone sysperf's.
pub fn test_dir(kind: &str, server_uid: Option<u32>) -> tempfile::TempDir {
    use std::os::unix::fs::MetadataExt;
    let tmp = std::env::temp_dir();
    let prefix = format!("sysperf-{kind}.");
    let me = unsafe_free_euid();
    for e in std::fs::read_dir(&tmp).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(&prefix)
            .and_then(|rest| rest.split('.').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(meta) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        let ours = meta.uid() == me || Some(meta.uid()) == server_uid;
        if meta.is_dir() && ours && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
    tempfile::Builder::new()
        .prefix(&format!("{prefix}{}.", std::process::id()))
        .tempdir_in(&tmp)
        .unwrap()
}
