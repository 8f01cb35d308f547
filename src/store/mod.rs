//! The embedded SQLite store of runs.
//!
//! What it is: one SQLite file (default [`default_path`]) that keeps every run exactly as the
//! model holds it. Runs, results, trials, warnings and derived figures are real rows with typed
//! columns, so the file can be queried with any SQLite tool; the run's parameters, machine
//! fingerprint, overhead and doctor findings are JSON text on the run's row. Every field comes
//! back bit-exact, floats included. Runs are written incrementally ([`Backend::begin_run`],
//! [`Backend::add_result`], [`Backend::finish_run`]) so that a run stopped by Ctrl-C keeps the
//! benchmarks it finished, and several processes may write to one file at once (WAL journal,
//! generous busy timeout, every write one immediate transaction).
//!
//! What it is not: it computes no statistics and renders nothing (see `stats` and `report`),
//! it does not make run ids (the caller does), and it never touches a file that is not already
//! a sysperf database or empty: another application's database or a non-SQLite file is
//! refused unchanged. It does not downgrade: a file from a newer schema is refused.
//!
//! # Warnings and derived figures of incremental runs
//!
//! [`Backend::begin_run`] stores the warnings and derived figures already in the run;
//! [`Backend::add_result`] appends the warnings it is given after those stored; and
//! [`Backend::finish_run`] *replaces* all stored warnings and derived figures of the run with
//! `run.warnings` and `run.derived`. The caller therefore keeps every warning it passes to
//! `add_result` in `run.warnings` as well, in the order it wants them kept. A run that never
//! reaches `finish_run` keeps what `begin_run` and `add_result` stored.
//!
//! # The store's files
//!
//! This file is the SQLite backend ([`Store`]) and the code that builds and reads a run's
//! rows, which the PostgreSQL backend (`pg.rs`) uses too, through a scratch in-memory
//! database, so that both encode a run alike. Every operation is written once, for both,
//! in `backend.rs` (the [`Backend`] trait), on the SQL of `query.rs` (both dialects, and the
//! one `resolve` of what the user typed) and the writes of `write.rs`; a backend says only
//! how it reads, writes and loads runs. [`open_at`] is how every command opens a store.

mod backend;
mod migrations;
pub use crate::model::{ObservationInfo, RunInfo};
mod pg;
mod pgservice;
mod pgurl;
pub mod place;
mod query;
#[cfg(test)]
mod scale_tests;
#[cfg(test)]
mod tests;
mod write;

pub use backend::{redact, Backend, Identity, Location};
pub use migrations::SCHEMA_VERSION;
pub(crate) use pg::{not_ours, open_spool_dir, spool_dest};
pub use pg::{ConnectError, PgStore};
pub use query::{Db, Dialect, Histories, Query};
pub use write::{Heartbeat, RunSink, RunWrite, BEAT_EVERY};

use crate::model::{
    BenchResult, Derived, Estimate, Finding, Fingerprint, Outlier, Overhead, Run, RunParams,
    Series, Summary, Trial, TrialKind, Usage, Warning,
};
use rusqlite::types::{Value, ValueRef};
use rusqlite::{params, Connection, OpenFlags, Row, Transaction};
use rusqlite::{params_from_iter, TransactionBehavior};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `PRAGMA application_id` of a sysperf database: "SYSP" in ASCII.
pub const APPLICATION_ID: i32 = 0x5359_5350;

/// How long a writer waits for another process's transaction before giving up. Writes are
/// short (one benchmark at a time), so this is only reached if something is badly stuck.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Test-only: the busy timeout in milliseconds instead of [`BUSY_TIMEOUT`], so that a test of
/// a locked store does not wait 30 s. Not for users (a short timeout makes concurrent runs
/// fail where they would have waited).
pub const BUSY_TIMEOUT_ENV: &str = "SYSPERF_TEST_BUSY_TIMEOUT_MS";

/// [`BUSY_TIMEOUT`], or what [`BUSY_TIMEOUT_ENV`] says.
fn busy_timeout() -> Duration {
    std::env::var(BUSY_TIMEOUT_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(BUSY_TIMEOUT, Duration::from_millis)
}

/// The mode of a store sysperf creates (less the umask), which SQLite gives its `-wal`, `-shm`
/// and `-journal` too: its owner's alone, since anyone who may read a store may hold locks
/// on it that stall its writers (#41 item 8). A store to share is `chmod`-ed by its owner;
/// an existing store keeps its mode.
const NEW_STORE_MODE: u32 = 0o600;

/// The first 16 bytes of every SQLite database file.
const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// Shortest id prefix `resolve` accepts, so that a short label is not mistaken for an id.
const MIN_PREFIX: usize = 4;

/// Errors of the store. [`StoreError::is_user_error`] tells the ones the user can fix.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("'{}' is not a sysperf database (it has other tables); choose another path with --db or SYSPERF_DB", .path.display())]
    NotSysperf { path: PathBuf },
    #[error("'{}' is not an SQLite database (sysperf left it untouched); choose another path with --db or SYSPERF_DB", .path.display())]
    NotSqlite { path: PathBuf },
    #[error("'{}' was written by a newer sysperf (schema {found}; this one reads up to schema {supported}); upgrade sysperf", .path.display())]
    TooNew {
        path: PathBuf,
        found: i64,
        supported: i64,
    },
    #[error("cannot open the database '{}': {source}; check the path and its permissions, or choose another with --db or SYSPERF_DB", .path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    /// The file or its directory could not be read or created (before SQLite is involved).
    #[error("cannot use '{}': {source}; check the path and its permissions, or choose another with --db or SYSPERF_DB", .path.display())]
    Access {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A store path given with --db or SYSPERF_DB that cannot be a store: checked before
    /// anything is created.
    #[error("cannot use '{}' as the store: {why}", .path.display())]
    BadPath { path: PathBuf, why: String },
    /// A store path another user controls (see [`place`]): refused before SQLite opens it.
    #[error(transparent)]
    Unsafe(#[from] crate::safedir::Unsafe),
    #[error("no run matches '{spec}'{}; 'sysperf runs' lists them", short_prefix_hint(.spec))]
    NoSuchRun { spec: String },
    #[error("'{spec}' matches {} runs ({}); give more digits of the id ('sysperf runs' lists them)", .candidates.len(), .candidates.join(", "))]
    AmbiguousRun {
        spec: String,
        candidates: Vec<String>,
    },
    #[error("the sysperf database is damaged: {0}")]
    Corrupt(String),
    /// Another process held the write lock for longer than the busy timeout.
    #[error("the store '{}' stayed locked by another writer for {} s: {holders}; wait for it to finish (or stop it) and try again", .path.display(), .waited.as_secs_f64())]
    Locked {
        path: PathBuf,
        waited: Duration,
        /// Who holds it, in words: the sysperf processes writing to the store and their
        /// work, or that none says it is.
        holders: String,
    },
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("JSON error: {0}")]
    Json(#[from] serde_json::Error),
    /// `--db` or `SYSPERF_DB` is a URL sysperf cannot use (the password is not in `url`).
    #[error("cannot use '{url}' as the store: {why}")]
    BadUrl { url: String, why: String },
    /// The texts of these three are whole, the driver's error described in them rather than
    /// chained after (its text is "db error", its cause the server's words: chained, a
    /// message read "db error: db error: ...").
    #[error("cannot connect to the PostgreSQL store {url}: {why}")]
    Connect { url: String, why: ConnectError },
    #[error("PostgreSQL error: {}", pg::describe(.0))]
    Postgres(tokio_postgres::Error),
    /// The connection was lost and could not be made again in time.
    #[error("lost the connection to the PostgreSQL store {url} and could not reconnect within {secs} s: {why}; check the server, then run the command again")]
    Unreachable { url: String, secs: u64, why: String },
    #[error("cannot store {what}: it is larger than the database's largest integer (2^63 - 1)")]
    ValueTooLarge { what: &'static str },
    /// A float in a JSON column is NaN or infinite, which JSON cannot represent.
    #[error(
        "cannot store {what}: it holds NaN or an infinity, which its JSON column cannot represent"
    )]
    NotFinite { what: &'static str },
    /// What fed [`Backend::import_runs`] could not go on (a file it reads changed or could no
    /// longer be read); the transaction was rolled back.
    #[error("{0}; nothing was stored")]
    Feed(String),
}

impl From<tokio_postgres::Error> for StoreError {
    fn from(e: tokio_postgres::Error) -> Self {
        StoreError::Postgres(e)
    }
}

impl StoreError {
    /// True for errors the user causes and can fix (a bad path, an unknown run); the CLI maps
    /// them to exit code 2. The rest are failures (exit code 1).
    pub fn is_user_error(&self) -> bool {
        if let StoreError::Connect { why, .. } = self {
            return why.is_user_error();
        }
        matches!(
            self,
            StoreError::NotSysperf { .. }
                | StoreError::NotSqlite { .. }
                | StoreError::TooNew { .. }
                | StoreError::Open { .. }
                | StoreError::Access { .. }
                | StoreError::BadPath { .. }
                | StoreError::Unsafe(_)
                | StoreError::BadUrl { .. }
                | StoreError::NoSuchRun { .. }
                | StoreError::AmbiguousRun { .. }
        )
    }

    /// True when the write stored a run another writer stored meanwhile (PostgreSQL's
    /// unique_violation, as two `sync`s at once meet): the run is there, as asked (#35).
    pub fn is_duplicate(&self) -> bool {
        matches!(self, StoreError::Postgres(e)
            if e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION))
    }

    /// True when another connection held a lock SQLite would not wait for.
    fn is_busy(&self) -> bool {
        matches!(self, StoreError::Sqlite(e) if is_lock_error(e))
    }
}

impl crate::error::Exit for StoreError {
    fn exit_code(&self) -> i32 {
        crate::error::usage_if(self.is_user_error())
    }
}

type Result<T, E = StoreError> = std::result::Result<T, E>;

/// An SQLite error that means another connection's lock stood in the way: busy, locked, or
/// the WAL's "locking protocol" (SQLITE_PROTOCOL: a lock on the `-shm` file it could not get
/// in its own time, as when another process holds one there).
fn is_lock_error(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(
            rusqlite::ErrorCode::DatabaseBusy
                | rusqlite::ErrorCode::DatabaseLocked
                | rusqlite::ErrorCode::FileLockingProtocolFailed
        )
    )
}

/// Who holds the store `path` locked, in words, for [`StoreError::Locked`]: the sysperf
/// processes that say they write to it (`writers`), else the processes that hold a lock on
/// the store or its `-wal` or `-shm` (any user who may read a file may lock it), with what to
/// do about them.
fn holders_text(path: &Path, writers: Vec<String>) -> String {
    if !writers.is_empty() {
        return writers.join(", ");
    }
    let held = place::lock_holders(path);
    if held.is_empty() {
        return "no sysperf command says it is writing to it, so another program holds it \
                (an sqlite3 shell with a transaction open?)"
            .to_string();
    }
    format!(
        "{}; stop {}, and if another user's, make the store readable by you only (chmod 600 \
         on it and its -wal and -shm files): anyone who may read a file may lock it",
        held.join("; "),
        if held.len() == 1 {
            "that process"
        } else {
            "those processes"
        }
    )
}

/// How a command opens a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// To write: created if needed, and migrated.
    Write,
    /// To store the runs being measured: as `Write`, and a PostgreSQL server that cannot be
    /// reached is waited for, then the run goes into a spool file from its start (#35).
    Measure,
    /// An existing store, to read: for reading only when this process may only read it
    /// (root's store listed by another user) rather than refused; else opened as for
    /// writing. A PostgreSQL database is always there (its schema is made on first use).
    Read,
}

/// Opens the store at `location`, the one way every command opens a store: connected to (and
/// its schema brought up to date) when it is PostgreSQL, else the SQLite file as `access`
/// says. Paths are checked by [`Store::open`] (see `place`); whether a path the user named may
/// be created is the caller's to check first ([`check_named_path`]).
pub fn open_at(location: &Location, access: Access) -> Result<Box<dyn Backend>> {
    Ok(match location {
        Location::Postgres(url) if access == Access::Measure => {
            Box::new(PgStore::connect_to_measure(url)?)
        }
        Location::Postgres(url) if access == Access::Read => {
            Box::new(PgStore::connect_to_read(url)?)
        }
        Location::Postgres(url) => Box::new(PgStore::connect(url)?),
        Location::Sqlite(path) if access == Access::Read && !crate::sys::may_write(path) => {
            Box::new(Store::open_read_only(path)?)
        }
        Location::Sqlite(path) => Box::new(Store::open(path)?),
    })
}

/// Where the database lives unless `--db` says otherwise: `$SYSPERF_DB` if set and non-empty,
/// else `$XDG_DATA_HOME/sysperf/sysperf.db`, else `$HOME/.local/share/sysperf/sysperf.db`,
/// else `./sysperf.db`.
pub fn default_path() -> PathBuf {
    path_from_env(
        std::env::var_os("SYSPERF_DB"),
        std::env::var_os("XDG_DATA_HOME"),
        std::env::var_os("HOME"),
    )
}

/// [`default_path`] without the environment, so it can be tested without touching it.
fn path_from_env(db: Option<OsString>, xdg: Option<OsString>, home: Option<OsString>) -> PathBuf {
    let set = |v: Option<OsString>| v.filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(db) = set(db) {
        return db;
    }
    // The XDG base directory spec says a relative $XDG_DATA_HOME is invalid and is ignored.
    if let Some(xdg) = set(xdg).filter(|p| p.is_absolute()) {
        return xdg.join("sysperf").join("sysperf.db");
    }
    if let Some(home) = set(home) {
        return home.join(".local/share/sysperf/sysperf.db");
    }
    PathBuf::from("./sysperf.db")
}

/// Checks a store path the user named (`--db`, `SYSPERF_DB`) before anything is created: a
/// mistyped directory is not made, a URL is not taken for a file name, and what
/// [`place::resolve`] refuses (a directory, a device, another user's symbolic link or file,
/// a directory another user controls) is refused. The default path gets the same checks when
/// it is opened, its missing directories made.
pub fn check_named_path(path: &Path) -> Result<()> {
    let bad = |why: String| StoreError::BadPath {
        path: path.to_path_buf(),
        why,
    };
    let text = path.to_string_lossy();
    if let Some((scheme, _)) = text.split_once("://") {
        return Err(bad(format!(
            "'{scheme}://' URLs are not supported; sysperf stores runs in an SQLite file: give a file path"
        )));
    }
    if text.ends_with('/') {
        return Err(bad(
            "it names a directory; name a file, e.g. DIR/sysperf.db".into(),
        ));
    }
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if std::fs::symlink_metadata(path).is_err() && !parent.is_dir() {
        return Err(bad(format!(
            "the directory '{}' does not exist; create it first (mkdir -p) or choose another path",
            parent.display()
        )));
    }
    place::resolve(path, false).map(drop)
}

/// For a spec that looks like a too-short id prefix: why it matched nothing.
fn short_prefix_hint(spec: &str) -> &'static str {
    if !spec.is_empty() && spec.len() < MIN_PREFIX && spec.bytes().all(|b| b.is_ascii_hexdigit()) {
        " (an id prefix needs at least 4 digits)"
    } else {
        ""
    }
}

/// An open sysperf database.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// Opened by [`Store::open_read_only`]: this process may read the file but not write it.
    read_only: bool,
    /// This process has a row in `writers` ([`Backend::announce`]), removed on drop.
    announced: std::cell::Cell<bool>,
}

/// Which runs [`Backend::query_runs`] lists: conditions of different kinds must all hold, and
/// of one kind any may (`--where kernel=6.12 --where kernel=6.13` is either kernel).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunQuery {
    pub conds: Vec<Cond>,
    /// Runs started at or after this Unix time (ns).
    pub since_ns: Option<i64>,
    /// At most this many, newest first.
    pub limit: Option<usize>,
    /// Only complete runs (compare's groups).
    pub complete_only: bool,
}

/// A fact runs are grouped by in the database (`--by`, #35): a column copied from the
/// fingerprint, the label, or the UTC day of the start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupBy {
    Host,
    Kernel,
    Cpu,
    Label,
    Day,
}

/// One group of runs as the database counts it (`runs --by`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupCount {
    /// The group's value: None when the runs do not know it, and for [`GroupBy::Day`],
    /// whose group is the day of `newest_ns`.
    pub value: Option<String>,
    pub runs: u64,
    pub complete: u64,
    /// The start of the group's newest run (Unix ns).
    pub newest_ns: i64,
}

/// One test's history on one host (`sysperf changes`, #35): the median time per operation
/// of each complete measured run that has it and was measured with the same options, oldest
/// first.
#[derive(Debug, Clone, PartialEq)]
pub struct TestHistory {
    /// The host name of the runs (None: runs that do not know it).
    pub host: Option<String>,
    pub test: String,
    /// "same", "spread", "free" or "single": a test measured with two placements has two
    /// histories.
    pub placement: String,
    /// What the runs were measured with (#42): runs with other options (another trial
    /// length, order, selection, ...) are another history, as they have another level.
    pub options: crate::model::RunOptions,
    pub points: Vec<HistoryPoint>,
    /// Results of the test left out of the history (all of it, not only the newest): their
    /// test ran beside other work (a `busy_cpu`, `busy_machine` or `steal` warning).
    pub disturbed: usize,
}

impl TestHistory {
    /// What histories are listed by: host, test, placement, options ([`RunOptions::key`](
    /// crate::model::RunOptions::key)).
    pub fn order_key(&self) -> (&Option<String>, &str, &str, String) {
        (&self.host, &self.test, &self.placement, self.options.key())
    }
}

/// One run in a [`TestHistory`].
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryPoint {
    pub run_id: String,
    pub started_ns: i64,
    /// The run's median wall time per operation, ns.
    pub wall_median_ns: f64,
}

/// What a run was measured on and by, read without its results (`sysperf changes` names
/// the differences between the runs around a change).
#[derive(Debug, Clone, PartialEq)]
pub struct RunMachine {
    pub id: String,
    pub label: Option<String>,
    pub started_ns: i64,
    pub sysperf_version: String,
    pub fingerprint: Fingerprint,
}

/// One condition on a run's stored facts.
#[derive(Debug, Clone, PartialEq)]
pub enum Cond {
    /// The host name, exactly.
    Host(String),
    /// The kernel release, exactly or as a prefix ending at a '.', '-' or '+' ("6.12"
    /// matches "6.12.0-1-amd64" and "6.12", not "6.120").
    Kernel(String),
    /// The CPU model contains this text (case-insensitive).
    Cpu(String),
    /// The label, exactly.
    Label(String),
    /// Started in `[from, to)` (Unix ns).
    Started(i64, i64),
}

impl Cond {
    /// Conditions of one kind are alternatives (any may hold).
    pub fn kind(&self) -> u8 {
        match self {
            Cond::Host(_) => 0,
            Cond::Kernel(_) => 1,
            Cond::Cpu(_) => 2,
            Cond::Label(_) => 3,
            Cond::Started(..) => 4,
        }
    }
}

/// This machine's host name, for the `writers` table (empty when unknown).
fn this_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// What `sysperf gc` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcReport {
    pub bytes_before: u64,
    pub bytes_after: u64,
    /// The store was converted to incremental auto-vacuum (a store made before it existed).
    pub converted: bool,
}

impl Drop for Store {
    fn drop(&mut self) {
        if self.announced.get() {
            // Best effort and brief: a store that is locked keeps a row that readers ignore
            // once this process is gone.
            let _ = self.conn.busy_timeout(Duration::from_millis(500));
            let _ = self.conn.execute(
                "DELETE FROM writers WHERE host = ?1 AND pid = ?2",
                params![this_host(), i64::from(std::process::id())],
            );
        }
    }
}

/// Checks that the file is ours (or new), then brings it to WAL mode and the current schema.
fn set_up(conn: &Connection, path: &Path) -> Result<()> {
    // Look before writing anything: these reads do not change the file. They share one read
    // transaction, so a store being created by another process at this moment is seen
    // either before (empty) or after (tables and application id), never half of each.
    let snapshot = Transaction::new_unchecked(conn, TransactionBehavior::Deferred)?;
    let state = migrations::DbState::read(&snapshot)?;
    snapshot.commit()?;
    state.check(path)?;
    if state.application_id == 0 && state.tables == 0 {
        // A new store frees the pages of removed runs as it goes (`Store`'s `remove_run`);
        // this must be said before its first table exists.
        conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
    }
    // The file is ours (or new) from here on. WAL lets readers and one writer proceed at
    // once and is a property of the file, so it is set once and persists.
    // Some file systems cannot do WAL; SQLite then keeps the rollback journal, which is
    // slower but still safe with the busy timeout, so the mode it reports is not checked.
    conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0))?;
    if state.user_version < SCHEMA_VERSION {
        migrations::migrate(conn, path)?;
    }
    Ok(())
}

impl Store {
    /// Opens the database at `path`, creating it (and its parent directories) if needed and
    /// bringing its schema up to date.
    ///
    /// A file that is neither empty nor SQLite is refused before SQLite sees it, and an SQLite
    /// file that belongs to another application or to a newer sysperf is refused before
    /// anything is written to it; in both cases the file is left byte-for-byte unchanged.
    pub fn open(path: &Path) -> Result<Store> {
        let place = place::resolve(path, true)?;
        check_header(path, &place)?;
        // A new store is its owner's alone (0600), and so are the files SQLite makes beside
        // it, which take its mode; an existing one keeps the mode it has.
        place
            .create_missing(NEW_STORE_MODE)
            .map_err(|source| StoreError::Access {
                path: path.to_path_buf(),
                source,
            })?;
        let open_err = |source: rusqlite::Error| match source.sqlite_error_code() {
            Some(rusqlite::ErrorCode::NotADatabase) => StoreError::NotSqlite {
                path: path.to_path_buf(),
            },
            _ => StoreError::Open {
                path: path.to_path_buf(),
                source,
            },
        };
        // No SQLITE_OPEN_URI: a path is a path, even one that starts with "file:". The
        // directory is the checked one, resolved (see `place`); NOFOLLOW refuses a link at
        // the store's name that appeared since.
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let conn = Connection::open_with_flags(place.sqlite_path(), flags).map_err(open_err)?;
        conn.busy_timeout(busy_timeout()).map_err(open_err)?;
        conn.pragma_update(None, "foreign_keys", true)
            .map_err(open_err)?;

        // SQLite does not apply the busy timeout to every lock it takes while a new database
        // is set up (switching it to WAL, for one), so two processes creating the same store
        // at once can see SQLITE_BUSY here. Setting up is idempotent: retry it until the same
        // deadline the busy timeout would have given.
        let deadline = std::time::Instant::now() + busy_timeout();
        loop {
            match set_up(&conn, path) {
                Err(e) if e.is_busy() && std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) if e.is_busy() => {
                    return Err(StoreError::Locked {
                        path: path.to_path_buf(),
                        waited: busy_timeout(),
                        holders: holders_text(path, Vec::new()),
                    })
                }
                Err(StoreError::Sqlite(source)) => return Err(open_err(source)),
                other => break other?,
            }
        }
        Ok(Store {
            conn,
            path: path.to_path_buf(),
            read_only: false,
            announced: std::cell::Cell::new(false),
        })
    }

    /// Opens an existing store for reading only, as a user who may read it but not write it
    /// does (root's store listed by another user): nothing is created or changed, not even
    /// the WAL's shared-memory file when it is missing (then the file is read as immutable, a
    /// snapshot that a concurrent writer's newest rows may be missing from). A store whose
    /// schema is older than this sysperf's needs its owner to open it once.
    pub fn open_read_only(path: &Path) -> Result<Store> {
        let place = place::resolve(path, false)?;
        check_header(path, &place)?;
        let open_err = |source: rusqlite::Error| StoreError::Open {
            path: path.to_path_buf(),
            source,
        };
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let open = |target: PathBuf, flags: OpenFlags| {
            let conn = Connection::open_with_flags(target, flags)?;
            conn.busy_timeout(busy_timeout())?;
            let state = migrations::DbState::read(&conn)?;
            Ok::<_, rusqlite::Error>((conn, state))
        };
        let target = place.sqlite_path();
        let (conn, state) = open(target.clone(), flags)
            // WAL needs its -shm file, which a reader without write access cannot create.
            .or_else(|_| {
                let uri = format!("file:{}?immutable=1", uri_path(&target));
                open(PathBuf::from(uri), flags | OpenFlags::SQLITE_OPEN_URI)
            })
            .map_err(open_err)?;
        state.check(path)?;
        if state.user_version < SCHEMA_VERSION {
            return Err(StoreError::BadPath {
                path: path.to_path_buf(),
                why: format!(
                    "it has schema {} and this sysperf needs {SCHEMA_VERSION}, which only a user \
                     who may write it can bring about: run any sysperf command on it as its owner",
                    state.user_version
                ),
            });
        }
        Ok(Store {
            conn,
            path: path.to_path_buf(),
            read_only: true,
            announced: std::cell::Cell::new(false),
        })
    }

    /// The path this store was opened with.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A write transaction that takes the write lock at once. A deferred transaction that
    /// reads and then writes can fail with SQLITE_BUSY without waiting when another process
    /// wrote in between; taking the lock up front makes the busy timeout apply instead.
    fn write_tx(&self) -> Result<Transaction<'_>> {
        Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(|e| self.locked_or(e.into()))
    }

    /// `e`, or when it is SQLite giving up on the lock, [`StoreError::Locked`] naming the
    /// sysperf processes that say they are writing.
    fn locked_or(&self, e: StoreError) -> StoreError {
        if !e.is_busy() {
            return e;
        }
        let holders = holders_text(&self.path, self.writers().unwrap_or_default());
        StoreError::Locked {
            path: self.path.clone(),
            waited: busy_timeout(),
            holders,
        }
    }

    /// The other sysperf processes that say they are writing to the store, in words:
    /// "sysperf import (pid 41 on host h, writing for 12 s)". Those on this host
    /// that are gone are left out.
    pub fn writers(&self) -> Result<Vec<String>> {
        let host = this_host();
        let me = i64::from(std::process::id());
        let mut stmt = self
            .conn
            .prepare("SELECT host, pid, work, started_ns FROM writers ORDER BY started_ns")?;
        let names = column_names(&stmt);
        let mut rows = stmt.query([])?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            let row = Named { row, names: &names };
            let r = Reader::new(&row, "writers");
            let (h, pid, work, since) = (
                r.text("host")?,
                r.i64("pid")?,
                r.text("work")?,
                r.i64("started_ns")?,
            );
            let alive = h != host || Path::new(&format!("/proc/{pid}")).exists();
            if alive && !(h == host && pid == me) {
                let secs = (now_ns() - since).max(0) / 1_000_000_000;
                out.push(format!(
                    "{work} (pid {pid} on host {h}, writing for {secs} s)"
                ));
            }
        }
        Ok(out)
    }

    /// Frees every free page back to the file system (incremental auto-vacuum). SQLite frees
    /// one page per step of the pragma, so it is stepped to its end.
    fn incremental_vacuum(&self) -> Result<()> {
        let run = || -> rusqlite::Result<()> {
            let mut stmt = self.conn.prepare("PRAGMA incremental_vacuum")?;
            let mut rows = stmt.query([])?;
            while rows.next()?.is_some() {}
            Ok(())
        };
        run().map_err(|e| self.locked_or(e.into()))
    }
}

/// The SQLite store's connection (or write transaction) as the queries use it.
struct Lite<'c>(&'c Connection);

impl Db for Lite<'_> {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn rows(&mut self, q: &Query, each: &mut dyn FnMut(&Reader<'_>) -> Result<()>) -> Result<()> {
        let mut stmt = self.0.prepare_cached(&q.sql)?;
        let names = column_names(&stmt);
        let mut rows = stmt.query(params_from_iter(&q.params))?;
        while let Some(row) = rows.next()? {
            each(&Reader::new(&Named { row, names: &names }, q.table))?;
        }
        Ok(())
    }

    fn execute(&mut self, q: &Query) -> Result<u64> {
        let mut stmt = self.0.prepare_cached(&q.sql)?;
        Ok(stmt.execute(params_from_iter(&q.params))? as u64)
    }
}

impl Backend for Store {
    fn read(&self, op: &mut dyn FnMut(&mut dyn Db) -> Result<()>) -> Result<()> {
        op(&mut Lite(&self.conn))
    }

    /// An immediate transaction (see [`Store::write_tx`]), its rows built in place.
    fn write(&self, op: &mut dyn FnMut(&mut dyn Db, &Connection) -> Result<()>) -> Result<()> {
        let tx = self.write_tx()?;
        op(&mut Lite(&tx), &tx)?;
        tx.commit()?;
        Ok(())
    }

    fn load_runs(&self, ids: &[&str]) -> Result<Vec<Run>> {
        // One read transaction, so a concurrent add_result cannot show up halfway.
        let tx = self.conn.unchecked_transaction()?;
        let runs = ids
            .iter()
            .map(|id| load_run(&tx, id))
            .collect::<Result<Vec<_>>>()?;
        tx.commit()?;
        Ok(runs)
    }

    fn location(&self) -> Location {
        Location::Sqlite(self.path.clone())
    }

    /// The beat on a connection of the heartbeat's own (#41): it need not outlive a power
    /// cut and may come while a trial is timing, so it is not synced to disk (`synchronous`
    /// NORMAL, in WAL mode) and never the commit that checkpoints the WAL.
    fn beat(&self, run_id: &str) -> Result<()> {
        self.conn.pragma_update(None, "synchronous", "NORMAL")?;
        self.conn.pragma_update(None, "wal_autocheckpoint", 0)?;
        self.write(&mut |db, _| query::beat(db, run_id, None))
    }

    /// Whether the store was opened for reading only (another user's, see
    /// [`Store::open_read_only`]): changing it would fail.
    fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Records, until this store is dropped, that this process writes to the store and why
    /// (`work`, e.g. "sysperf import"), so that a writer that gives up on the lock can name
    /// it. Rows of processes that are gone are removed on the way. Nothing for a read-only
    /// store.
    fn announce(&self, work: &str) -> Result<()> {
        if self.read_only {
            return Ok(());
        }
        let host = this_host();
        let tx = self.write_tx()?;
        let pids: Vec<i64> = {
            let mut stmt = tx.prepare("SELECT pid FROM writers WHERE host = ?1")?;
            let rows = stmt.query_map([&host], |r| r.get(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        for pid in pids {
            if !Path::new(&format!("/proc/{pid}")).exists() {
                tx.execute(
                    "DELETE FROM writers WHERE host = ?1 AND pid = ?2",
                    params![host, pid],
                )?;
            }
        }
        tx.execute(
            "INSERT OR REPLACE INTO writers (host, pid, work, started_ns) VALUES (?1, ?2, ?3, ?4)",
            params![host, i64::from(std::process::id()), work, now_ns()],
        )?;
        tx.commit()?;
        self.announced.set(true);
        Ok(())
    }

    /// Gives the space of removed runs back to the file system: a store made before
    /// incremental auto-vacuum existed is converted once (a full VACUUM, which rewrites the
    /// file and needs as much free space again); later ones free their pages as runs are
    /// removed, and this only finishes what is left.
    fn gc(&self) -> Result<GcReport> {
        let size = || std::fs::metadata(&self.path).map_or(0, |m| m.len());
        let bytes_before = size();
        self.announce("sysperf gc")?;
        let mode: i64 = self
            .conn
            .pragma_query_value(None, "auto_vacuum", |r| r.get(0))?;
        let converted = mode != 2;
        let run = |sql: &str| {
            self.conn
                .execute_batch(sql)
                .map_err(|e| self.locked_or(e.into()))
        };
        if converted {
            run("PRAGMA auto_vacuum = INCREMENTAL; VACUUM;")?;
        } else {
            self.incremental_vacuum()?;
        }
        // The freed pages leave the main file when the log is written back into it.
        self.conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(|e| self.locked_or(e.into()))?;
        Ok(GcReport {
            bytes_before,
            bytes_after: size(),
            converted,
        })
    }

    /// Deletes a run and everything stored for it (the foreign keys cascade). In a store with
    /// incremental auto-vacuum (made by this sysperf, or converted by `gc`) the run's pages
    /// are given back to the file system at once.
    fn remove_run(&self, id: &str) -> Result<()> {
        self.write(&mut |db, _| backend::remove(db, id))?;
        let mode: i64 = self
            .conn
            .pragma_query_value(None, "auto_vacuum", |r| r.get(0))?;
        if mode == 2 {
            self.incremental_vacuum()?;
        }
        Ok(())
    }
}

/// Refuses a non-empty file that does not start with the SQLite header, before SQLite opens
/// it: SQLite would otherwise report the problem only after it may have written to the file.
/// A missing or empty file is fine: it becomes a new database.
/// `path` for an SQLite `file:` URI: absolute, with '%', '?' and '#' (and anything not
/// printable ASCII) percent-encoded, so no part of a file name is read as URI syntax.
fn uri_path(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = String::new();
    for &b in abs.as_os_str().as_bytes() {
        if b.is_ascii_graphic() && !matches!(b, b'%' | b'?' | b'#') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Refuses a store file that is neither empty nor SQLite before SQLite sees it, reading it
/// through the checked directory (`place`) without following a link or waiting on a FIFO.
fn check_header(path: &Path, place: &place::Place) -> Result<()> {
    let access = |source| StoreError::Access {
        path: path.to_path_buf(),
        source,
    };
    let Some(file) = place.open_existing().map_err(access)? else {
        return Ok(());
    };
    let mut head = Vec::with_capacity(SQLITE_HEADER.len());
    file.take(SQLITE_HEADER.len() as u64)
        .read_to_end(&mut head)
        .map_err(access)?;
    if head.is_empty() || head == SQLITE_HEADER {
        Ok(())
    } else {
        Err(StoreError::NotSqlite {
            path: path.to_path_buf(),
        })
    }
}

// ---------------------------------------------------------------------------------------
// Writing

/// The model's u64 as an SQLite integer, refused rather than wrapped when it does not fit.
fn int(v: u64, what: &'static str) -> Result<i64> {
    i64::try_from(v).map_err(|_| StoreError::ValueTooLarge { what })
}

fn int_usize(v: usize, what: &'static str) -> Result<i64> {
    i64::try_from(v).map_err(|_| StoreError::ValueTooLarge { what })
}

/// A float for an untyped column. SQLite turns a bound NaN into NULL, so NaN is written as
/// the text 'NaN' and read back as NaN (its payload bits are not kept).
fn real(v: f64) -> Value {
    if v.is_nan() {
        Value::Text("NaN".to_string())
    } else {
        Value::Real(v)
    }
}

/// JSON text for a JSON column, checked to read back equal. serde_json writes NaN and the
/// infinities as `null`, which would come back as something else or not at all; such a value
/// is refused instead of being stored wrong.
fn to_json<T>(v: &T, what: &'static str) -> Result<String>
where
    T: Serialize + DeserializeOwned + PartialEq,
{
    let text = serde_json::to_string(v)?;
    match serde_json::from_str::<T>(&text) {
        Ok(back) if back == *v => Ok(text),
        _ => Err(StoreError::NotFinite { what }),
    }
}

/// Stores a kernel profile of a run at `position` among its profiles.
fn insert_profile(
    conn: &Connection,
    run_id: &str,
    position: i64,
    profile: &crate::model::Profile,
) -> Result<()> {
    let json = to_json(profile, "a kernel profile")?;
    conn.prepare_cached(
        "INSERT INTO profiles (run_id, position, bench, profile_json) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![run_id, position, profile.bench, json])?;
    Ok(())
}

/// Inserts the run's row and everything it holds, marked `complete` or not.
fn insert_run(conn: &Connection, run: &Run, complete: bool) -> Result<()> {
    let params_json = to_json(&run.params, "the run's parameters")?;
    // The options are not part of the fingerprint's JSON (the hash is): written apart below.
    let fingerprint_json = to_json(
        &Fingerprint {
            kernel_config: Default::default(),
            ..run.fingerprint.clone()
        },
        "the machine fingerprint",
    )?;
    if let (Some(hash), false) = (
        &run.fingerprint.kernel_config_hash,
        run.fingerprint.kernel_config.is_empty(),
    ) {
        // Once per distinct configuration: the runs' fingerprints carry only its hash.
        let config_json = to_json(&run.fingerprint.kernel_config, "the kernel configuration")?;
        conn.execute(
            "INSERT OR IGNORE INTO kernel_configs (hash, config_json) VALUES (?1, ?2)",
            params![hash, config_json],
        )?;
    }
    let overhead_json = run
        .overhead
        .as_ref()
        .map(|o| to_json(o, "the run's overhead"))
        .transpose()?;
    let findings_json = to_json(&run.findings, "the doctor's findings")?;
    let notes_json = to_json(&run.notes, "the suites' notes")?;
    // Which test histories the run belongs in, or why in none (`changes`, migration 15),
    // apart from the parameters so that counting the histories parses none of them.
    let (history_options, left_out_as) = match query::left_out_as(&run.params) {
        Some(why) => (None, Some(why)),
        None => (
            Some(to_json(
                &query::option_fields(&run.params),
                "the run's options",
            )?),
            None,
        ),
    };
    conn.execute(
        "INSERT INTO runs (id, label, started_ns, ended_ns, complete, sysperf_version,
                           hostname, kernel_release, params_json, fingerprint_json, overhead_json,
                           source, citation, findings_json, notes_json, cpu_model,
                           history_options, left_out_as)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
                 ?18)",
        params![
            run.id,
            run.label,
            run.started_ns,
            run.ended_ns,
            complete,
            run.sysperf_version,
            run.fingerprint.hostname,
            run.fingerprint.kernel_release,
            params_json,
            fingerprint_json,
            overhead_json,
            run.source,
            run.citation,
            findings_json,
            notes_json,
            run.fingerprint.cpu_model,
            history_options,
            left_out_as,
        ],
    )?;
    for (i, result) in run.results.iter().enumerate() {
        insert_result(conn, &run.id, int_usize(i, "a result position")?, result)?;
    }
    insert_series(conn, &run.id, 0, &run.series)?;
    insert_derived(conn, &run.id, &run.derived)?;
    insert_warnings(conn, &run.id, 0, &run.warnings)?;
    conn.execute(&disturbed_sql("?1"), params![run.id])?;
    conn.execute(&points_sql(Dialect::Sqlite, "?1"), params![run.id])?;
    Ok(())
}

/// The statement that sets `results.disturbed` (migration 14) on every result of one run
/// from the run's stored warnings, its run id the parameter `run`: run wherever a run's
/// results or warnings are written, on both backends, so that the flag always says what
/// `Run::disturbed` says of the stored run.
pub(super) fn disturbed_sql(run: &str) -> String {
    let kinds: Vec<String> = crate::model::WarningKind::disturbing()
        .map(|k| format!("'{k}'"))
        .collect();
    format!(
        "UPDATE results SET disturbed = CASE WHEN EXISTS (
             SELECT 1 FROM warnings
              WHERE warnings.run_id = results.run_id AND warnings.bench = results.bench
                AND warnings.kind IN ({})) THEN 1 ELSE 0 END
          WHERE run_id = {run}",
        kinds.join(", ")
    )
}

/// The statement that sets `runs.points` (migration 15) of one run from its stored results,
/// its run id the parameter `run`: run after [`disturbed_sql`] wherever that runs, so that
/// the column always lists the run's measured results (`query::MEASURED`) with their flags,
/// in their order, as the migration made it for the runs stored before.
pub(super) fn points_sql(dialect: Dialect, run: &str) -> String {
    let measured = format!("results.run_id = runs.id AND {}", query::MEASURED);
    let points = match dialect {
        Dialect::Sqlite => format!(
            "SELECT json_group_array(json_array(bench, placement, disturbed)) FROM (
                 SELECT bench, placement, disturbed FROM results WHERE {measured}
                  ORDER BY position)"
        ),
        Dialect::Postgres => format!(
            "SELECT coalesce(json_agg(json_build_array(bench, placement, disturbed)
                                      ORDER BY position)::text, '[]')
               FROM results WHERE {measured}"
        ),
    };
    format!("UPDATE runs SET points = ({points}) WHERE id = {run}")
}

/// Stores series of a run in their order, the first at position `first`.
fn insert_series(conn: &Connection, run_id: &str, first: i64, series: &[Series]) -> Result<()> {
    let mut stmt = conn.prepare_cached(
        "INSERT INTO series (run_id, position, series, series_json) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (i, s) in series.iter().enumerate() {
        let json = to_json(s, "a suite's series")?;
        let position = first + int_usize(i, "a series position")?;
        stmt.execute(params![run_id, position, s.id, json])?;
    }
    Ok(())
}

fn load_series(conn: &Connection, run_id: &str) -> Result<Vec<Series>> {
    let mut stmt =
        conn.prepare_cached("SELECT series_json FROM series WHERE run_id = ?1 ORDER BY position")?;
    let names = column_names(&stmt);
    let mut rows = stmt.query([run_id])?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(Reader::new(&Named { row, names: &names }, "series").json("series_json")?);
    }
    Ok(out)
}

const ESTIMATES: [&str; 3] = ["wall", "user", "sys"];
const ESTIMATE_FIELDS: [&str; 9] = [
    "median", "ci_low", "ci_high", "ci_level", "min", "max", "mean", "cv", "n",
];

/// Columns of `results` in the order [`insert_result`] supplies their values.
fn result_columns() -> Vec<String> {
    let head = [
        "run_id",
        "position",
        "bench",
        "bench_group",
        "ops_per_iteration",
        "paper_count",
        "unit",
        "placement",
        "cpus_json",
        "error",
        "has_summary",
    ];
    let tail = [
        "minflt_per_op",
        "majflt_per_op",
        "csw_per_op",
        "nvcsw_per_op",
        "nivcsw_per_op",
        "migrations_per_op",
        "summary_rss_bytes",
        "summary_maps",
        "counters_json",
        "whole_json",
    ];
    let mut cols: Vec<String> = head.iter().map(|c| c.to_string()).collect();
    for e in ESTIMATES {
        cols.extend(ESTIMATE_FIELDS.iter().map(|f| format!("{e}_{f}")));
    }
    cols.extend(tail.iter().map(|c| c.to_string()));
    cols
}

fn insert_sql(table: &str, cols: &[String]) -> String {
    let marks = vec!["?"; cols.len()].join(", ");
    format!("INSERT INTO {table} ({}) VALUES ({marks})", cols.join(", "))
}

fn push_estimate(vals: &mut Vec<Value>, e: &Estimate) -> Result<()> {
    vals.extend([
        real(e.median),
        real(e.ci_low),
        real(e.ci_high),
        real(e.ci_level),
        real(e.min),
        real(e.max),
        real(e.mean),
        real(e.cv),
        Value::Integer(int_usize(e.n, "an estimate's trial count")?),
    ]);
    Ok(())
}

fn insert_result(conn: &Connection, run_id: &str, position: i64, r: &BenchResult) -> Result<()> {
    let cols = result_columns();
    let mut vals: Vec<Value> = vec![
        Value::from(run_id.to_string()),
        Value::Integer(position),
        Value::from(r.id.clone()),
        Value::from(r.group.clone()),
        Value::Integer(int(r.ops_per_iteration, "ops_per_iteration")?),
        Value::Integer(int(r.paper_count, "paper_count")?),
        Value::from(r.unit.clone()),
        Value::from(r.placement.clone()),
        Value::from(serde_json::to_string(&r.cpus)?),
        Value::from(r.error.clone()),
        Value::Integer(i64::from(r.summary.is_some())),
    ];
    match &r.summary {
        Some(s) => {
            push_estimate(&mut vals, &s.wall_ns_per_op)?;
            push_estimate(&mut vals, &s.user_ns_per_op)?;
            push_estimate(&mut vals, &s.sys_ns_per_op)?;
            vals.extend([
                real(s.minflt_per_op),
                real(s.majflt_per_op),
                real(s.csw_per_op),
                real(s.nvcsw_per_op),
                real(s.nivcsw_per_op),
                s.migrations_per_op.map_or(Value::Null, real),
                Value::Integer(int(s.worker_rss_bytes, "summary worker_rss_bytes")?),
                Value::Integer(int(s.worker_maps, "summary worker_maps")?),
                Value::from(
                    s.counters
                        .as_ref()
                        .map(|c| to_json(c, "a summary's counters"))
                        .transpose()?,
                ),
                Value::from(
                    s.whole
                        .as_ref()
                        .map(|w| to_json(w, "a summary's whole CPU time"))
                        .transpose()?,
                ),
            ]);
        }
        None => vals.resize(cols.len(), Value::Null),
    }
    if vals.len() != cols.len() {
        // A programming error in this file, reported rather than panicking.
        return Err(StoreError::Corrupt(format!(
            "internal: {} values for {} result columns",
            vals.len(),
            cols.len()
        )));
    }
    conn.prepare_cached(&insert_sql("results", &cols))?
        .execute(params_from_iter(vals))?;
    let result_id = conn.last_insert_rowid();
    for (i, t) in r.trials.iter().enumerate() {
        insert_trial(conn, result_id, int_usize(i, "a trial position")?, t)?;
    }
    Ok(())
}

fn insert_trial(conn: &Connection, result_id: i64, position: i64, t: &Trial) -> Result<()> {
    let u = &t.usage;
    let w = &t.worker_total;
    let counters = t
        .counters
        .as_ref()
        .map(|c| to_json(c, "a trial's counters"))
        .transpose()?;
    let vals: [Value; 28] = [
        Value::Integer(result_id),
        Value::Integer(position),
        Value::from(t.kind.as_str().to_string()),
        Value::Integer(int(t.iterations, "trial iterations")?),
        Value::Integer(int(t.wall_ns, "trial wall_ns")?),
        Value::Integer(int(u.user_ns, "trial user_ns")?),
        Value::Integer(int(u.sys_ns, "trial sys_ns")?),
        Value::Integer(int(u.minflt, "trial minflt")?),
        Value::Integer(int(u.majflt, "trial majflt")?),
        Value::Integer(int(u.nvcsw, "trial nvcsw")?),
        Value::Integer(int(u.nivcsw, "trial nivcsw")?),
        Value::Integer(int(w.user_ns, "worker total user_ns")?),
        Value::Integer(int(w.sys_ns, "worker total sys_ns")?),
        Value::Integer(int(w.minflt, "worker total minflt")?),
        Value::Integer(int(w.majflt, "worker total majflt")?),
        Value::Integer(int(w.nvcsw, "worker total nvcsw")?),
        Value::Integer(int(w.nivcsw, "worker total nivcsw")?),
        Value::Integer(int(t.worker_rss_bytes, "trial worker_rss_bytes")?),
        Value::Integer(int(t.worker_maps, "trial worker_maps")?),
        match t.migrations {
            Some(m) => Value::Integer(int(m, "trial migrations")?),
            None => Value::Null,
        },
        Value::from(t.cpu_start.map(i64::from)),
        Value::from(t.cpu_end.map(i64::from)),
        Value::from(t.outlier.as_str().to_string()),
        Value::from(t.error.clone()),
        Value::from(counters),
        Value::from(t.round.map(i64::from)),
        Value::from(t.started_ns),
        Value::from(
            t.children
                .as_ref()
                .map(|c| to_json(c, "a trial's children usage"))
                .transpose()?,
        ),
    ];
    conn.prepare_cached(
        "INSERT INTO trials (result_id, position, kind, iterations, wall_ns,
                             user_ns, sys_ns, minflt, majflt, nvcsw, nivcsw,
                             total_user_ns, total_sys_ns, total_minflt, total_majflt,
                             total_nvcsw, total_nivcsw, worker_rss_bytes, worker_maps,
                             migrations, cpu_start, cpu_end, outlier, error, counters_json,
                             round, started_ns, children_json)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )?
    .execute(params_from_iter(vals))?;
    Ok(())
}

fn insert_warnings(
    conn: &Connection,
    run_id: &str,
    first: i64,
    warnings: &[Warning],
) -> Result<()> {
    let mut stmt = conn.prepare_cached(
        "INSERT INTO warnings (run_id, position, bench, kind, message) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for (i, w) in warnings.iter().enumerate() {
        let position = first + int_usize(i, "a warning position")?;
        stmt.execute(params![
            run_id,
            position,
            w.bench,
            w.kind.as_str(),
            w.message
        ])?;
    }
    Ok(())
}

fn insert_derived(conn: &Connection, run_id: &str, derived: &[Derived]) -> Result<()> {
    let mut stmt = conn.prepare_cached(
        "INSERT INTO derived (run_id, position, name, value, unit, formula)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for (i, d) in derived.iter().enumerate() {
        let position = int_usize(i, "a derived figure's position")?;
        stmt.execute(params![
            run_id,
            position,
            d.name,
            real(d.value),
            d.unit,
            d.formula
        ])?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Reading

/// A row's cells by column name, from either backend.
trait Cells {
    fn cell(&self, col: &str) -> std::result::Result<ValueRef<'_>, String>;
}

/// A row of SQLite's with its statement's column names, read once per statement
/// ([`column_names`]): rusqlite's `get_ref` by name asks SQLite for the name of every column
/// before the one it finds, for every cell read (a fifth of `report --by host`'s time at
/// 100,000 runs, its 300 runs' trials read 30 cells a row, #44).
struct Named<'r, 's> {
    row: &'r Row<'s>,
    names: &'r [String],
}

/// The names of the columns of `stmt`'s answer, for [`Named`].
fn column_names(stmt: &rusqlite::Statement<'_>) -> Vec<String> {
    stmt.column_names().into_iter().map(str::to_owned).collect()
}

impl Cells for Named<'_, '_> {
    fn cell(&self, col: &str) -> std::result::Result<ValueRef<'_>, String> {
        // Matched as rusqlite matches a name: without regard to ASCII case.
        let i = self
            .names
            .iter()
            .position(|n| n.eq_ignore_ascii_case(col))
            .ok_or_else(|| rusqlite::Error::InvalidColumnName(col.to_string()).to_string())?;
        self.row.get_ref(i).map_err(|e| e.to_string())
    }
}

/// Typed access to one row of the store (SQLite's or PostgreSQL's); anything unexpected in
/// it is a [`StoreError::Corrupt`] naming the table and column, never a panic.
pub struct Reader<'a> {
    row: &'a dyn Cells,
    table: &'static str,
}

impl<'a> Reader<'a> {
    fn new(row: &'a dyn Cells, table: &'static str) -> Self {
        Reader { row, table }
    }

    fn corrupt(&self, col: &str, problem: impl std::fmt::Display) -> StoreError {
        StoreError::Corrupt(format!("{}.{col} {problem}", self.table))
    }

    fn get(&self, col: &str) -> Result<ValueRef<'a>> {
        self.row
            .cell(col)
            .map_err(|e| self.corrupt(col, format_args!("cannot be read: {e}")))
    }

    fn unexpected(&self, col: &str, expected: &str, found: ValueRef<'_>) -> StoreError {
        let found = match found {
            ValueRef::Null => "NULL".to_string(),
            ValueRef::Integer(i) => format!("the integer {i}"),
            ValueRef::Real(f) => format!("the real {f}"),
            ValueRef::Text(_) => "text".to_string(),
            ValueRef::Blob(_) => "a blob".to_string(),
        };
        self.corrupt(col, format_args!("holds {found}, expected {expected}"))
    }

    fn opt_i64(&self, col: &str) -> Result<Option<i64>> {
        match self.get(col)? {
            ValueRef::Null => Ok(None),
            ValueRef::Integer(v) => Ok(Some(v)),
            other => Err(self.unexpected(col, "an integer", other)),
        }
    }

    fn i64(&self, col: &str) -> Result<i64> {
        match self.get(col)? {
            ValueRef::Integer(v) => Ok(v),
            other => Err(self.unexpected(col, "an integer", other)),
        }
    }

    fn convert<T: TryFrom<i64>>(&self, col: &str, v: i64, expected: &str) -> Result<T> {
        T::try_from(v).map_err(|_| self.unexpected(col, expected, ValueRef::Integer(v)))
    }

    fn u64(&self, col: &str) -> Result<u64> {
        let v = self.i64(col)?;
        self.convert(col, v, "a non-negative integer")
    }

    fn opt_u64(&self, col: &str) -> Result<Option<u64>> {
        match self.opt_i64(col)? {
            Some(v) => self.convert(col, v, "a non-negative integer").map(Some),
            None => Ok(None),
        }
    }

    fn opt_u32(&self, col: &str) -> Result<Option<u32>> {
        match self.opt_i64(col)? {
            Some(v) => self.convert(col, v, "a 32-bit unsigned integer").map(Some),
            None => Ok(None),
        }
    }

    fn usize(&self, col: &str) -> Result<usize> {
        let v = self.i64(col)?;
        self.convert(col, v, "a non-negative integer")
    }

    fn bool(&self, col: &str) -> Result<bool> {
        match self.get(col)? {
            ValueRef::Integer(0) => Ok(false),
            ValueRef::Integer(1) => Ok(true),
            other => Err(self.unexpected(col, "0 or 1", other)),
        }
    }

    fn opt_f64(&self, col: &str) -> Result<Option<f64>> {
        match self.get(col)? {
            ValueRef::Null => Ok(None),
            ValueRef::Real(f) => Ok(Some(f)),
            // Only written by hand; exact for every integer a float can hold.
            ValueRef::Integer(i) => Ok(Some(i as f64)),
            ValueRef::Text(b"NaN") => Ok(Some(f64::NAN)),
            other => Err(self.unexpected(col, "a number", other)),
        }
    }

    fn f64(&self, col: &str) -> Result<f64> {
        self.opt_f64(col)?
            .ok_or_else(|| self.unexpected(col, "a number", ValueRef::Null))
    }

    fn opt_text(&self, col: &str) -> Result<Option<String>> {
        match self.get(col)? {
            ValueRef::Null => Ok(None),
            ValueRef::Text(b) => String::from_utf8(b.to_vec())
                .map(Some)
                .map_err(|_| self.corrupt(col, "holds text that is not UTF-8")),
            other => Err(self.unexpected(col, "text", other)),
        }
    }

    fn text(&self, col: &str) -> Result<String> {
        self.opt_text(col)?
            .ok_or_else(|| self.unexpected(col, "text", ValueRef::Null))
    }

    /// A JSON column, read with the exact parser.
    fn json<T: DeserializeOwned>(&self, col: &str) -> Result<T> {
        let text = self.text(col)?;
        serde_json::from_str(&text)
            .map_err(|e| self.corrupt(col, format_args!("holds bad JSON: {e}")))
    }

    fn opt_json<T: DeserializeOwned>(&self, col: &str) -> Result<Option<T>> {
        match self.opt_text(col)? {
            Some(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| self.corrupt(col, format_args!("holds bad JSON: {e}"))),
            None => Ok(None),
        }
    }

    fn estimate(&self, prefix: &str) -> Result<Estimate> {
        let f = |field: &str| self.f64(&format!("{prefix}_{field}"));
        Ok(Estimate {
            median: f("median")?,
            ci_low: f("ci_low")?,
            ci_high: f("ci_high")?,
            ci_level: f("ci_level")?,
            min: f("min")?,
            max: f("max")?,
            mean: f("mean")?,
            cv: f("cv")?,
            n: self.usize(&format!("{prefix}_n"))?,
        })
    }

    fn usage(&self, prefix: &str) -> Result<Usage> {
        let u = |field: &str| self.u64(&format!("{prefix}{field}"));
        Ok(Usage {
            user_ns: u("user_ns")?,
            sys_ns: u("sys_ns")?,
            minflt: u("minflt")?,
            majflt: u("majflt")?,
            nvcsw: u("nvcsw")?,
            nivcsw: u("nivcsw")?,
        })
    }
}

/// The options of the kernel configuration with this hash; empty when the store does not
/// have it (a run imported from another store carries the hash only).
fn load_kernel_config(
    conn: &Connection,
    hash: &str,
) -> Result<std::collections::BTreeMap<String, String>> {
    let mut stmt = conn.prepare_cached("SELECT config_json FROM kernel_configs WHERE hash = ?1")?;
    let names = column_names(&stmt);
    let mut rows = stmt.query([hash])?;
    match rows.next()? {
        Some(row) => {
            Ok(Reader::new(&Named { row, names: &names }, "kernel_configs").json("config_json")?)
        }
        None => Ok(Default::default()),
    }
}

fn load_run(conn: &Connection, id: &str) -> Result<Run> {
    let mut stmt = conn.prepare_cached("SELECT * FROM runs WHERE id = ?1")?;
    let names = column_names(&stmt);
    let mut rows = stmt.query([id])?;
    let Some(row) = rows.next()? else {
        return Err(StoreError::NoSuchRun {
            spec: id.to_string(),
        });
    };
    let row = Named { row, names: &names };
    let r = Reader::new(&row, "runs");
    let params: RunParams = r.json("params_json")?;
    let mut fingerprint: Fingerprint = r.json("fingerprint_json")?;
    if let Some(hash) = &fingerprint.kernel_config_hash {
        fingerprint.kernel_config = load_kernel_config(conn, hash)?;
    }
    let overhead: Option<Overhead> = r.opt_json("overhead_json")?;
    let findings: Vec<Finding> = r.opt_json("findings_json")?.unwrap_or_default();
    let notes: Vec<String> = r.opt_json("notes_json")?.unwrap_or_default();
    let mut run = Run {
        id: r.text("id")?,
        label: r.opt_text("label")?,
        started_ns: r.i64("started_ns")?,
        ended_ns: r.opt_i64("ended_ns")?,
        complete: r.bool("complete")?,
        sysperf_version: r.text("sysperf_version")?,
        source: r.text("source")?,
        citation: r.opt_text("citation")?,
        params,
        fingerprint,
        overhead,
        results: Vec::new(),
        derived: Vec::new(),
        warnings: Vec::new(),
        findings,
        series: Vec::new(),
        notes,
    };
    run.results = load_results(conn, id)?;
    run.series = load_series(conn, id)?;
    run.derived = load_derived(conn, id)?;
    run.warnings = load_warnings(conn, id)?;
    Ok(run)
}

fn load_results(conn: &Connection, run_id: &str) -> Result<Vec<BenchResult>> {
    let mut stmt =
        conn.prepare_cached("SELECT * FROM results WHERE run_id = ?1 ORDER BY position")?;
    let names = column_names(&stmt);
    let mut rows = stmt.query([run_id])?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let row = Named { row, names: &names };
        let r = Reader::new(&row, "results");
        let summary = if r.bool("has_summary")? {
            Some(Summary {
                wall_ns_per_op: r.estimate("wall")?,
                user_ns_per_op: r.estimate("user")?,
                sys_ns_per_op: r.estimate("sys")?,
                whole: r.opt_json("whole_json")?,
                minflt_per_op: r.f64("minflt_per_op")?,
                majflt_per_op: r.f64("majflt_per_op")?,
                csw_per_op: r.f64("csw_per_op")?,
                nvcsw_per_op: r.f64("nvcsw_per_op")?,
                nivcsw_per_op: r.f64("nivcsw_per_op")?,
                migrations_per_op: r.opt_f64("migrations_per_op")?,
                worker_rss_bytes: r.u64("summary_rss_bytes")?,
                worker_maps: r.u64("summary_maps")?,
                counters: r.opt_json("counters_json")?,
            })
        } else {
            None
        };
        let result_id = r.i64("id")?;
        out.push(BenchResult {
            id: r.text("bench")?,
            group: r.text("bench_group")?,
            ops_per_iteration: r.u64("ops_per_iteration")?,
            paper_count: r.u64("paper_count")?,
            unit: r.text("unit")?,
            placement: r.text("placement")?,
            cpus: r.json("cpus_json")?,
            trials: load_trials(conn, result_id)?,
            summary,
            error: r.opt_text("error")?,
        });
    }
    Ok(out)
}

fn load_trials(conn: &Connection, result_id: i64) -> Result<Vec<Trial>> {
    let mut stmt =
        conn.prepare_cached("SELECT * FROM trials WHERE result_id = ?1 ORDER BY position")?;
    let names = column_names(&stmt);
    let mut rows = stmt.query([result_id])?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let row = Named { row, names: &names };
        let r = Reader::new(&row, "trials");
        let kind = r.text("kind")?;
        let outlier = r.text("outlier")?;
        out.push(Trial {
            kind: TrialKind::parse(&kind)
                .ok_or_else(|| r.corrupt("kind", format_args!("holds unknown kind '{kind}'")))?,
            iterations: r.u64("iterations")?,
            wall_ns: r.u64("wall_ns")?,
            usage: r.usage("")?,
            worker_total: r.usage("total_")?,
            worker_rss_bytes: r.u64("worker_rss_bytes")?,
            worker_maps: r.u64("worker_maps")?,
            migrations: r.opt_u64("migrations")?,
            cpu_start: r.opt_u32("cpu_start")?,
            cpu_end: r.opt_u32("cpu_end")?,
            outlier: Outlier::parse(&outlier).ok_or_else(|| {
                r.corrupt("outlier", format_args!("holds unknown label '{outlier}'"))
            })?,
            error: r.opt_text("error")?,
            counters: r.opt_json("counters_json")?,
            round: r.opt_u32("round")?,
            started_ns: r.opt_i64("started_ns")?,
            children: r.opt_json("children_json")?,
        });
    }
    Ok(out)
}

fn load_derived(conn: &Connection, run_id: &str) -> Result<Vec<Derived>> {
    let mut stmt =
        conn.prepare_cached("SELECT * FROM derived WHERE run_id = ?1 ORDER BY position")?;
    let names = column_names(&stmt);
    let mut rows = stmt.query([run_id])?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let row = Named { row, names: &names };
        let r = Reader::new(&row, "derived");
        out.push(Derived {
            na: None,
            name: r.text("name")?,
            value: r.f64("value")?,
            unit: r.text("unit")?,
            formula: r.text("formula")?,
        });
    }
    Ok(out)
}

fn load_warnings(conn: &Connection, run_id: &str) -> Result<Vec<Warning>> {
    let mut stmt =
        conn.prepare_cached("SELECT * FROM warnings WHERE run_id = ?1 ORDER BY position")?;
    let names = column_names(&stmt);
    let mut rows = stmt.query([run_id])?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let row = Named { row, names: &names };
        let r = Reader::new(&row, "warnings");
        out.push(Warning {
            bench: r.opt_text("bench")?,
            kind: r.text("kind")?.into(),
            message: r.text("message")?,
        });
    }
    Ok(out)
}
