//! The PostgreSQL store of runs: many machines writing to one shared database
//! (`--db postgres://USER@HOST:PORT/DATABASE` or `SYSPERF_DB`).
//!
//! What it is: the same tables, columns and rows as the SQLite store (see `migrations.rs`),
//! typed for PostgreSQL (BIGINT, DOUBLE PRECISION, TEXT; booleans stay 0/1 and JSON stays the
//! exact text sysperf wrote, so every field reads back bit-exact). Rows are made and read by
//! the SQLite store's own code: each operation builds its rows in a private in-memory SQLite
//! database and carries them over in one PostgreSQL transaction (or carries the run's rows
//! down and lets the SQLite code load it), so the two backends cannot encode a run
//! differently. The schema is created on first use under an advisory lock, so many writers
//! starting at once against an empty database do not trip over each other.
//!
//! Faults: an operation whose connection is lost (the server restarted, a network blip) is
//! retried on a new connection for up to [`RETRY_FOR`] (or `SYSPERF_PG_RETRY_S` seconds),
//! saying so on stderr; every write is one transaction, so a retried write is never
//! half-applied. When PostgreSQL stays away longer, the run being written (kept in memory as
//! written so far) goes into a spool file, an SQLite store in [`spool_dir`], and the run goes
//! on there; `sysperf sync SPOOL URL` uploads it later. A run killed midway stays stored,
//! marked incomplete, as in SQLite. A write retried after a commit whose answer was lost is
//! harmless for `begin_run` and `put_result`; an appended series or profile could be stored
//! twice then (the window is one round trip).
//!
//! Connections (`pg/connect.rs`): TLS by libpq's `sslmode` and `sslrootcert`, the password
//! from the URL, `PGPASSWORD` or the password file (`pg/pgpass.rs`), SCRAM-SHA-256 only
//! unless the URL's `require_auth` allows more, and one timeout over the whole handshake. A
//! password is never shown: messages name the URL as [`redact`] writes it (`pg/url.rs`).
//!
//! What it is not: a connection pool.

use super::backend::{Backend, Location, RunSink};
use super::{migrations, GcReport, ObservationInfo, RunInfo, RunQuery, StoreError, MIN_PREFIX};
use crate::model::SystemProfile;
use crate::model::{BenchResult, Run, Series, VarianceEstimate, Warning};
use connect::{Client, Transaction};
use rusqlite::types::Value;
use std::cell::RefCell;
use std::collections::HashMap;
use std::time::{Duration, Instant};
use tokio_postgres::types::{ToSql, Type};

mod connect;
mod error;
mod guard;
mod pgpass;
mod tls;
use super::pgurl as url;
pub use error::ConnectError;
pub(crate) use url::describe;
pub(super) use url::PgUrl;

type Result<T, E = StoreError> = std::result::Result<T, E>;

/// How long an operation keeps trying to reach a PostgreSQL that went away, unless
/// `SYSPERF_PG_RETRY_S` says otherwise (seconds).
pub(crate) const RETRY_FOR: Duration = Duration::from_secs(60);

fn retry_for() -> Duration {
    std::env::var("SYSPERF_PG_RETRY_S")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(RETRY_FOR, Duration::from_secs)
}

/// The advisory lock key taken while the schema is created or migrated: "SYSP" twice.
const MIGRATION_LOCK: i64 = 0x5359_5350_5359_5350;

/// The schema in PostgreSQL's types, one entry per migration (frozen once released; a change
/// is a new entry at the end). Entry 1 is the SQLite store's schema as of its migration 9.
const PG_MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE runs (
    seq              BIGSERIAL PRIMARY KEY,
    id               TEXT NOT NULL UNIQUE,
    label            TEXT,
    started_ns       BIGINT NOT NULL,
    ended_ns         BIGINT,
    complete         BIGINT NOT NULL DEFAULT 0,
    sysperf_version  TEXT NOT NULL,
    source           TEXT NOT NULL DEFAULT 'measured',
    hostname         TEXT,
    kernel_release   TEXT,
    params_json      TEXT NOT NULL,
    fingerprint_json TEXT NOT NULL,
    overhead_json    TEXT,
    citation         TEXT,
    findings_json    TEXT,
    notes_json       TEXT
);
CREATE INDEX runs_by_start ON runs (started_ns, seq);
CREATE INDEX runs_by_label ON runs (label, started_ns);
CREATE TABLE results (
    id                BIGSERIAL PRIMARY KEY,
    run_id            TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    position          BIGINT NOT NULL,
    bench             TEXT NOT NULL,
    bench_group       TEXT NOT NULL,
    ops_per_iteration BIGINT NOT NULL,
    paper_count       BIGINT NOT NULL,
    unit              TEXT NOT NULL,
    placement         TEXT NOT NULL,
    cpus_json         TEXT NOT NULL,
    error             TEXT,
    has_summary       BIGINT NOT NULL,
    wall_median DOUBLE PRECISION, wall_ci_low DOUBLE PRECISION, wall_ci_high DOUBLE PRECISION,
    wall_ci_level DOUBLE PRECISION, wall_min DOUBLE PRECISION, wall_max DOUBLE PRECISION,
    wall_mean DOUBLE PRECISION, wall_cv DOUBLE PRECISION, wall_n BIGINT,
    user_median DOUBLE PRECISION, user_ci_low DOUBLE PRECISION, user_ci_high DOUBLE PRECISION,
    user_ci_level DOUBLE PRECISION, user_min DOUBLE PRECISION, user_max DOUBLE PRECISION,
    user_mean DOUBLE PRECISION, user_cv DOUBLE PRECISION, user_n BIGINT,
    sys_median DOUBLE PRECISION, sys_ci_low DOUBLE PRECISION, sys_ci_high DOUBLE PRECISION,
    sys_ci_level DOUBLE PRECISION, sys_min DOUBLE PRECISION, sys_max DOUBLE PRECISION,
    sys_mean DOUBLE PRECISION, sys_cv DOUBLE PRECISION, sys_n BIGINT,
    minflt_per_op DOUBLE PRECISION, majflt_per_op DOUBLE PRECISION,
    csw_per_op DOUBLE PRECISION, nvcsw_per_op DOUBLE PRECISION, nivcsw_per_op DOUBLE PRECISION,
    migrations_per_op DOUBLE PRECISION,
    summary_rss_bytes BIGINT,
    summary_maps      BIGINT,
    counters_json     TEXT,
    whole_json        TEXT,
    UNIQUE (run_id, position)
);
CREATE TABLE trials (
    result_id        BIGINT NOT NULL REFERENCES results (id) ON DELETE CASCADE,
    position         BIGINT NOT NULL,
    kind             TEXT NOT NULL,
    iterations       BIGINT NOT NULL,
    wall_ns          BIGINT NOT NULL,
    user_ns          BIGINT NOT NULL,
    sys_ns           BIGINT NOT NULL,
    minflt           BIGINT NOT NULL,
    majflt           BIGINT NOT NULL,
    nvcsw            BIGINT NOT NULL,
    nivcsw           BIGINT NOT NULL,
    total_user_ns    BIGINT NOT NULL,
    total_sys_ns     BIGINT NOT NULL,
    total_minflt     BIGINT NOT NULL,
    total_majflt     BIGINT NOT NULL,
    total_nvcsw      BIGINT NOT NULL,
    total_nivcsw     BIGINT NOT NULL,
    worker_rss_bytes BIGINT NOT NULL,
    worker_maps      BIGINT NOT NULL,
    migrations       BIGINT,
    cpu_start        BIGINT,
    cpu_end          BIGINT,
    outlier          TEXT NOT NULL,
    error            TEXT,
    counters_json    TEXT,
    round            BIGINT,
    started_ns       BIGINT,
    children_json    TEXT,
    PRIMARY KEY (result_id, position)
);
CREATE TABLE warnings (
    run_id   TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    position BIGINT NOT NULL,
    bench    TEXT,
    kind     TEXT NOT NULL,
    message  TEXT NOT NULL,
    PRIMARY KEY (run_id, position)
);
CREATE TABLE derived (
    run_id   TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    position BIGINT NOT NULL,
    name     TEXT NOT NULL,
    value    DOUBLE PRECISION NOT NULL,
    unit     TEXT NOT NULL,
    formula  TEXT NOT NULL,
    PRIMARY KEY (run_id, position)
);
CREATE TABLE profiles (
    run_id       TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    position     BIGINT NOT NULL,
    bench        TEXT NOT NULL,
    profile_json TEXT NOT NULL,
    PRIMARY KEY (run_id, position)
);
CREATE TABLE series (
    run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    position    BIGINT NOT NULL,
    series      TEXT NOT NULL,
    series_json TEXT NOT NULL,
    PRIMARY KEY (run_id, position)
);
CREATE TABLE variance (
    hostname       TEXT NOT NULL,
    kernel_release TEXT NOT NULL,
    cpu_model      TEXT NOT NULL,
    test           TEXT NOT NULL,
    within_var     DOUBLE PRECISION NOT NULL,
    between_var    DOUBLE PRECISION NOT NULL,
    runs           BIGINT NOT NULL,
    trials         BIGINT NOT NULL,
    updated_ns     BIGINT NOT NULL,
    PRIMARY KEY (hostname, kernel_release, cpu_model, test)
);
CREATE TABLE kernel_configs (
    hash        TEXT PRIMARY KEY,
    config_json TEXT NOT NULL
);
"#,
    // The SQLite store's migration 10 (#20): observations of the whole machine.
    r#"
CREATE TABLE observations (
    seq              BIGSERIAL PRIMARY KEY,
    id               TEXT NOT NULL UNIQUE,
    kind             TEXT NOT NULL,
    label            TEXT,
    started_ns       BIGINT NOT NULL,
    wall_ns          BIGINT NOT NULL,
    hostname         TEXT,
    kernel_release   TEXT,
    sysperf_version  TEXT NOT NULL,
    observation_json TEXT NOT NULL
);
CREATE INDEX observations_by_start ON observations (started_ns, seq);
"#,
    // The SQLite store's migration 11 (#21, a store that scales): the CPU model as a column,
    // and the indexes of a machine's history and of a kernel's runs.
    r#"
ALTER TABLE runs ADD COLUMN cpu_model TEXT;
UPDATE runs SET cpu_model = fingerprint_json::json ->> 'cpu_model';
CREATE INDEX runs_by_machine ON runs (hostname, kernel_release, started_ns);
CREATE INDEX runs_by_kernel ON runs (kernel_release, started_ns);
"#,
    // #21 item 7: an id prefix is read from an index in byte order, whatever the database's
    // collation (the UNIQUE index on id follows it, and under most locales cannot answer a
    // range of ids); see PG_PREFIX_SQL.
    r#"
CREATE INDEX runs_by_id_prefix ON runs (id COLLATE "C");
"#,
];

/// The runs whose id starts with `$1` (lowercase hex), newest first: every id from the
/// prefix up to the prefix followed by 'g' (above every hex digit) in byte order, which
/// `runs_by_id_prefix` answers without reading the other runs.
pub(super) const PG_PREFIX_SQL: &str = r#"SELECT id FROM runs
    WHERE id COLLATE "C" >= $1 AND id COLLATE "C" < $1 || 'g'
    ORDER BY started_ns DESC, seq DESC"#;

/// The tables a run's rows are in, parents before children.
const RUN_TABLES: [&str; 8] = [
    "kernel_configs",
    "runs",
    "results",
    "trials",
    "series",
    "derived",
    "warnings",
    "profiles",
];

/// A PostgreSQL store.
pub struct PgStore {
    /// The URL as given (password included), for [`Location`].
    url: String,
    /// The URL understood: what connecting needs.
    parsed: PgUrl,
    client: RefCell<Option<Client>>,
    /// Whether a connection was ever made: then failing to make a new one is a lost
    /// connection (retried), not a wrong URL.
    connected: std::cell::Cell<bool>,
    /// The run being written, as written so far (with its profiles): what goes into the
    /// spool file if PostgreSQL stays away.
    shadow: RefCell<Option<(Run, Vec<crate::model::Profile>)>>,
    /// The local store the run went on into when PostgreSQL stayed away; every operation
    /// goes there from then on.
    spool: RefCell<Option<super::Store>>,
    /// The scratch database of the last transaction, emptied, for the next: making one runs
    /// every SQLite migration, which takes longer than loading a small run (and `show` or
    /// `compare` load dozens).
    scratch: RefCell<Option<rusqlite::Connection>>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PgStore({})", self.location())
    }
}

/// Whether an error means the connection is gone (and a new one may succeed).
fn connection_lost(e: &tokio_postgres::Error) -> bool {
    if e.is_closed() {
        return true;
    }
    match e.as_db_error() {
        Some(db) => {
            let code = db.code().code();
            code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03")
        }
        // Not a server's answer: the socket failed, or the connection could not be made.
        None => std::error::Error::source(e)
            .is_some_and(|s| s.downcast_ref::<std::io::Error>().is_some()),
    }
}

impl PgStore {
    /// Connects to the database `url` names and brings its schema up to date.
    pub fn connect(url: &str) -> Result<PgStore> {
        let store = PgStore {
            url: url.to_string(),
            parsed: PgUrl::parse(url)?,
            client: RefCell::new(None),
            connected: std::cell::Cell::new(false),
            shadow: RefCell::new(None),
            spool: RefCell::new(None),
            scratch: RefCell::new(None),
        };
        store.with_client(|client| migrate(client, &store.location()))?;
        Ok(store)
    }

    fn location(&self) -> Location {
        Location::Postgres(self.url.clone())
    }

    fn new_client(&self) -> Result<Client> {
        connect::connect(&self.parsed).map_err(|why| StoreError::Connect {
            url: self.parsed.shown.clone(),
            why,
        })
    }

    /// Runs `op` on the connection, made on first use. When the connection is lost, `op` is
    /// run again on a new one, until [`RETRY_FOR`] has passed.
    fn with_client<T>(&self, mut op: impl FnMut(&mut Client) -> Result<T>) -> Result<T> {
        let retry = retry_for();
        let deadline = Instant::now() + retry;
        let mut said = false;
        let mut pause = Duration::from_millis(100);
        loop {
            let attempt = (|| {
                let mut slot = self.client.borrow_mut();
                let client = match slot.as_mut() {
                    Some(c) if !c.is_closed() => c,
                    _ => {
                        let c = slot.insert(self.new_client()?);
                        self.connected.set(true);
                        c
                    }
                };
                op(client)
            })();
            let lost = match &attempt {
                Err(StoreError::Postgres(e)) => connection_lost(e),
                Err(StoreError::Connect { why, .. }) => {
                    self.connected.get() && why.is_unreachable()
                }
                _ => false,
            };
            if !lost || Instant::now() >= deadline {
                if said && attempt.is_ok() {
                    crate::notice::tell(&format!("reconnected to {}", self.location()));
                }
                return match attempt {
                    Err(StoreError::Postgres(e)) if lost => Err(StoreError::Unreachable {
                        url: self.location().to_string(),
                        secs: retry.as_secs(),
                        why: describe(&e),
                    }),
                    Err(StoreError::Connect { why, .. }) if lost => Err(StoreError::Unreachable {
                        url: self.location().to_string(),
                        secs: retry.as_secs(),
                        why: why.to_string(),
                    }),
                    other => other,
                };
            }
            if !said {
                let why = match &attempt {
                    Err(e) => e.to_string(),
                    Ok(_) => String::new(),
                };
                crate::notice::tell(&format!(
                    "lost the connection to {} ({why}); retrying for up to {} s",
                    self.location(),
                    retry.as_secs()
                ));
                said = true;
            }
            *self.client.borrow_mut() = None;
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_secs(2));
        }
    }

    /// Runs `op` in one transaction, with a fresh in-memory SQLite database for the rows it
    /// builds with the SQLite store's code; retried whole on a lost connection.
    fn in_tx<T>(
        &self,
        mut op: impl FnMut(&mut Transaction<'_>, &rusqlite::Connection) -> Result<T>,
    ) -> Result<T> {
        self.with_client(|client| {
            let lite = self.scratch()?;
            let mut tx = client.transaction()?;
            let out = op(&mut tx, &lite)?;
            tx.commit()?;
            self.give_back(lite);
            Ok(out)
        })
    }

    /// A scratch database: the one kept from the last use, else a new one.
    fn scratch(&self) -> Result<rusqlite::Connection> {
        match self.scratch.borrow_mut().take() {
            Some(lite) => Ok(lite),
            None => scratch(),
        }
    }

    /// Keeps `lite` for the next use, emptied (dropped if it cannot be).
    fn give_back(&self, lite: rusqlite::Connection) {
        if empty_scratch(&lite).is_ok() {
            *self.scratch.borrow_mut() = Some(lite);
        }
    }

    /// Loads the runs `ids` with everything stored for them into a scratch database, in one
    /// snapshot and one query per table, however many runs; None when none of them is stored.
    fn fetch_runs(&self, ids: &[&str]) -> Result<Option<rusqlite::Connection>> {
        self.with_client(|client| {
            let lite = self.scratch()?;
            let mut tx = client
                .build_transaction()
                .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()?;
            if download(&mut tx, &lite, "runs", "id = ANY($1)", ids)? == 0 {
                return Ok(None);
            }
            download(
                &mut tx,
                &lite,
                "kernel_configs",
                "hash IN (SELECT fingerprint_json::json->>'kernel_config_hash' FROM runs WHERE id = ANY($1))",
                ids,
            )?;
            download(&mut tx, &lite, "results", "run_id = ANY($1)", ids)?;
            download(
                &mut tx,
                &lite,
                "trials",
                "result_id IN (SELECT id FROM results WHERE run_id = ANY($1))",
                ids,
            )?;
            for table in ["series", "derived", "warnings", "profiles"] {
                download(&mut tx, &lite, table, "run_id = ANY($1)", ids)?;
            }
            tx.commit()?;
            Ok(Some(lite))
        })
    }

    /// `op` on the spool store, if the run went there.
    fn spooled<T>(&self, op: impl FnOnce(&super::Store) -> Result<T>) -> Option<Result<T>> {
        self.spool.borrow().as_ref().map(op)
    }

    /// A write of the run being measured: `change` applied to its shadow, then `pg` run; when
    /// PostgreSQL stays unreachable, the run as written so far (this write included) goes
    /// into a spool file and the run goes on there. Once spooled, `local` writes there.
    fn run_write(
        &self,
        run_id: &str,
        change: impl FnOnce(&mut Run, &mut Vec<crate::model::Profile>),
        pg: impl FnOnce() -> Result<()>,
        local: impl FnOnce(&super::Store) -> Result<()>,
    ) -> Result<()> {
        let shadowed = match self.shadow.borrow_mut().as_mut() {
            Some((run, profiles)) if run.id == run_id => {
                change(run, profiles);
                true
            }
            _ => false,
        };
        if let Some(done) = self.spooled(local) {
            return done;
        }
        match pg() {
            Err(e @ StoreError::Unreachable { .. }) if shadowed => self.start_spool(e),
            other => other,
        }
    }

    /// Writes the shadow run into a new spool file and keeps it as the store from now on.
    fn start_spool(&self, why: StoreError) -> Result<()> {
        let shadow = self.shadow.borrow();
        let Some((run, profiles)) = shadow.as_ref() else {
            return Err(why);
        };
        let Some(dir) = spool_dir() else {
            return Err(why);
        };
        let path = dir.join(format!("{}.db", run.id));
        let local = super::Store::open(&path)?;
        local.begin_run(run)?;
        for p in profiles {
            local.add_profile(&run.id, p)?;
        }
        if run.ended_ns.is_some() {
            local.finish_run(run)?;
        }
        crate::notice::tell(&why.to_string());
        crate::notice::tell(&format!(
            "the run goes on into {}: upload it with 'sysperf sync {} {}' once the server is back",
            path.display(),
            path.display(),
            self.location()
        ));
        *self.spool.borrow_mut() = Some(local);
        Ok(())
    }

    fn query(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<tokio_postgres::Row>> {
        self.with_client(|client| Ok(client.query(sql, params)?))
    }

    fn ids(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<String>> {
        self.query(sql, params)?
            .iter()
            .map(|r| Ok(r.try_get::<_, String>(0)?))
            .collect()
    }
}

/// Where runs go when PostgreSQL stays away: `$XDG_STATE_HOME/sysperf/spool`, else
/// `$HOME/.local/state/sysperf/spool`; never the working directory (None without either).
pub(crate) fn spool_dir() -> Option<std::path::PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    var("XDG_STATE_HOME")
        .map(|d| d.join("sysperf/spool"))
        .or_else(|| var("HOME").map(|h| h.join(".local/state/sysperf/spool")))
}

/// Creates or migrates the schema, under an advisory lock held to the end of the transaction.
fn migrate(client: &mut Client, at: &Location) -> Result<()> {
    let supported = PG_MIGRATIONS.len() as i64;
    // A schema already current needs no lock and no write: one read, outside a transaction.
    // Every command connects, and the locked check with its UPDATE and commit cost a
    // `compare` on a 100,000-run store more than its queries did. Any error here (no table
    // yet) takes the locked path, which reports it properly.
    if let Ok(Some(row)) = client.query_opt("SELECT version FROM sysperf_schema", &[]) {
        if row.try_get::<_, i64>(0).ok() == Some(supported) {
            return Ok(());
        }
    }
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS sysperf_schema (version BIGINT NOT NULL)")?;
    let version: i64 = match tx.query_opt("SELECT version FROM sysperf_schema", &[])? {
        Some(row) => row.try_get(0)?,
        None => {
            let others: i64 = tx
                .query_one(
                    "SELECT count(*) FROM information_schema.tables
                 WHERE table_schema = current_schema() AND table_name = 'runs'",
                    &[],
                )?
                .try_get(0)?;
            if others > 0 {
                return Err(StoreError::BadPath {
                    path: at.to_string().into(),
                    why: "the database has a 'runs' table that sysperf did not make; give \
                          sysperf a database of its own"
                        .into(),
                });
            }
            tx.execute("INSERT INTO sysperf_schema (version) VALUES (0)", &[])?;
            0
        }
    };
    if version > supported {
        return Err(StoreError::TooNew {
            path: at.to_string().into(),
            found: version,
            supported,
        });
    }
    for sql in PG_MIGRATIONS.iter().skip(version as usize) {
        tx.batch_execute(sql)?;
    }
    tx.execute("UPDATE sysperf_schema SET version = $1", &[&supported])?;
    tx.commit()?;
    Ok(())
}

/// An empty in-memory SQLite database with the store's schema (foreign keys off, so rows of
/// a child table can be built without their parents).
fn scratch() -> Result<rusqlite::Connection> {
    let lite = rusqlite::Connection::open_in_memory()?;
    lite.pragma_update(None, "foreign_keys", false)?;
    migrations::migrate(&lite, std::path::Path::new(":memory:"))?;
    Ok(lite)
}

/// Deletes every row of a scratch database, keeping its schema.
fn empty_scratch(lite: &rusqlite::Connection) -> Result<()> {
    let tables: Vec<String> = lite
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
        )?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    for table in tables {
        lite.execute(&format!("DELETE FROM \"{table}\""), [])?;
    }
    Ok(())
}

/// A SQLite value as a parameter of the PostgreSQL column type `ty`.
fn pg_param(v: Value, ty: &Type, table: &str) -> Result<Box<dyn ToSql + Sync>> {
    let bad = |v: &Value| {
        StoreError::Corrupt(format!(
            "internal: {v:?} cannot go into a {ty} column of {table}"
        ))
    };
    Ok(match (v, ty) {
        (Value::Null, &Type::INT8) => Box::new(None::<i64>),
        (Value::Null, &Type::FLOAT8) => Box::new(None::<f64>),
        (Value::Null, &Type::TEXT) => Box::new(None::<String>),
        (Value::Integer(i), &Type::INT8) => Box::new(i),
        (Value::Real(f), &Type::FLOAT8) => Box::new(f),
        // Hand-written rows only; exact for every integer a float can hold.
        (Value::Integer(i), &Type::FLOAT8) => Box::new(i as f64),
        // The SQLite store writes NaN as this text (see `real`).
        (Value::Text(t), &Type::FLOAT8) if t == "NaN" => Box::new(f64::NAN),
        (Value::Text(t), &Type::TEXT) => Box::new(t),
        (v, _) => return Err(bad(&v)),
    })
}

/// A PostgreSQL column as the SQLite value the store's code reads.
fn lite_value(row: &tokio_postgres::Row, i: usize) -> Result<Value> {
    let ty = row.columns()[i].type_();
    Ok(match *ty {
        Type::INT8 => row
            .try_get::<_, Option<i64>>(i)?
            .map_or(Value::Null, Value::Integer),
        // NaN as the SQLite store writes it (SQLite would bind a NaN as NULL).
        Type::FLOAT8 => row
            .try_get::<_, Option<f64>>(i)?
            .map_or(Value::Null, super::real),
        _ => row
            .try_get::<_, Option<String>>(i)?
            .map_or(Value::Null, Value::Text),
    })
}

/// How [`upload`] places a table's rows among those already in PostgreSQL.
#[derive(Default)]
struct Placing {
    /// Added to every row's `position` (rows appended after the run's others).
    offset: i64,
}

/// Copies every row of `table` in `lite` to PostgreSQL. Results get new ids there (recorded
/// in `ids`, which the trials' `result_id` are mapped through); runs get a new `seq`.
fn upload(
    tx: &mut Transaction<'_>,
    lite: &rusqlite::Connection,
    table: &str,
    placing: &Placing,
    ids: &mut HashMap<i64, i64>,
) -> Result<()> {
    let mut stmt = lite.prepare(&format!("SELECT * FROM {table}"))?;
    let names: Vec<String> = stmt.column_names().iter().map(|s| s.to_string()).collect();
    let skip = |c: &str| (table == "runs" && c == "seq") || (table == "results" && c == "id");
    let kept: Vec<usize> = (0..names.len()).filter(|&i| !skip(&names[i])).collect();
    let cols: Vec<&str> = kept.iter().map(|&i| names[i].as_str()).collect();
    let marks: Vec<String> = (1..=cols.len()).map(|i| format!("${i}")).collect();
    let mut sql = format!(
        "INSERT INTO {table} ({}) VALUES ({})",
        cols.join(", "),
        marks.join(", ")
    );
    match table {
        "results" => sql.push_str(" RETURNING id"),
        "kernel_configs" => sql.push_str(" ON CONFLICT (hash) DO NOTHING"),
        _ => {}
    }
    let insert = tx.prepare(&sql)?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let mut params = Vec::with_capacity(kept.len());
        for (k, &i) in kept.iter().enumerate() {
            let mut v: Value = row.get(i)?;
            match (names[i].as_str(), &mut v) {
                ("position", Value::Integer(p)) => *p += placing.offset,
                ("result_id", Value::Integer(id)) => {
                    *id = *ids.get(id).ok_or_else(|| {
                        StoreError::Corrupt(format!("internal: trial of unknown result {id}"))
                    })?
                }
                _ => {}
            }
            params.push(pg_param(v, &insert.params()[k], table)?);
        }
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|b| b.as_ref()).collect();
        if table == "results" {
            let new: i64 = tx.query_one(&insert, &refs)?.try_get(0)?;
            ids.insert(row.get::<_, i64>("id")?, new);
        } else {
            tx.execute(&insert, &refs)?;
        }
    }
    Ok(())
}

/// Copies every table of `lite` to PostgreSQL, parents first.
fn upload_all(
    tx: &mut Transaction<'_>,
    lite: &rusqlite::Connection,
    placing: &Placing,
) -> Result<()> {
    let mut ids = HashMap::new();
    for table in RUN_TABLES {
        upload(tx, lite, table, placing, &mut ids)?;
    }
    Ok(())
}

/// Copies the rows of `table` matching `filter` (with `$1` bound to `key`) into `lite`;
/// returns how many.
fn download(
    tx: &mut Transaction<'_>,
    lite: &rusqlite::Connection,
    table: &str,
    filter: &str,
    keys: &[&str],
) -> Result<usize> {
    // The keys' type given: one round trip, not three (prepare, execute, close); a run is
    // eight of these, and `show` loads a machine's history of runs.
    let rows = tx.query_typed(
        &format!("SELECT * FROM {table} WHERE {filter}"),
        &[(&keys, Type::TEXT_ARRAY)],
    )?;
    let Some(first) = rows.first() else {
        return Ok(0);
    };
    let cols: Vec<&str> = first.columns().iter().map(|c| c.name()).collect();
    let sql = super::insert_sql(
        table,
        &cols.iter().map(|c| c.to_string()).collect::<Vec<_>>(),
    );
    let mut insert = lite.prepare(&sql)?;
    for row in &rows {
        let vals = (0..cols.len())
            .map(|i| lite_value(row, i))
            .collect::<Result<Vec<_>>>()?;
        insert.execute(rusqlite::params_from_iter(vals))?;
    }
    Ok(rows.len())
}

fn run_exists(tx: &mut Transaction<'_>, id: &str) -> Result<bool> {
    Ok(tx
        .query_opt("SELECT 1 FROM runs WHERE id = $1", &[&id])?
        .is_some())
}

/// The next free position among a run's rows of `table`.
fn next_position(tx: &mut Transaction<'_>, table: &str, run_id: &str) -> Result<i64> {
    Ok(tx
        .query_one(
            &format!("SELECT COALESCE(MAX(position) + 1, 0) FROM {table} WHERE run_id = $1"),
            &[&run_id],
        )?
        .try_get(0)?)
}

fn no_such_run(id: &str) -> StoreError {
    StoreError::NoSuchRun {
        spec: id.to_string(),
    }
}

/// The operations on PostgreSQL itself; [`Backend`] adds the spool around them.
impl PgStore {
    fn pg_begin_run(&self, run: &Run) -> Result<()> {
        self.in_tx(|tx, lite| {
            // A retry after a commit whose answer was lost finds the run begun already.
            let begun = tx.query_opt(
                "SELECT 1 FROM runs WHERE id = $1 AND started_ns = $2 AND complete = 0",
                &[&run.id, &run.started_ns],
            )?;
            if begun.is_some() {
                return Ok(());
            }
            super::insert_run(lite, run, false)?;
            upload_all(tx, lite, &Placing::default())
        })
    }

    fn pg_add_result(
        &self,
        run_id: &str,
        result: &BenchResult,
        warnings: &[Warning],
    ) -> Result<()> {
        self.in_tx(|tx, lite| {
            if !run_exists(tx, run_id)? {
                return Err(no_such_run(run_id));
            }
            let position = next_position(tx, "results", run_id)?;
            super::insert_result(lite, run_id, position, result)?;
            let first = next_position(tx, "warnings", run_id)?;
            super::insert_warnings(lite, run_id, first, warnings)?;
            upload_all(tx, lite, &Placing::default())
        })
    }

    fn pg_put_result(&self, run_id: &str, position: usize, result: &BenchResult) -> Result<()> {
        let position = super::int_usize(position, "a result's position")?;
        self.in_tx(|tx, lite| {
            if !run_exists(tx, run_id)? {
                return Err(no_such_run(run_id));
            }
            tx.execute(
                "DELETE FROM results WHERE run_id = $1 AND position = $2",
                &[&run_id, &position],
            )?;
            super::insert_result(lite, run_id, position, result)?;
            upload_all(tx, lite, &Placing::default())
        })
    }

    fn pg_finish_run(&self, run: &Run) -> Result<()> {
        let overhead = run
            .overhead
            .as_ref()
            .map(|o| super::to_json(o, "the run's overhead"))
            .transpose()?;
        let notes = super::to_json(&run.notes, "the suites' notes")?;
        self.in_tx(|tx, lite| {
            let updated = tx.execute(
                "UPDATE runs SET ended_ns = $1, complete = $2, overhead_json = $3, notes_json = $4
                 WHERE id = $5",
                &[
                    &run.ended_ns,
                    &i64::from(run.complete),
                    &overhead,
                    &notes,
                    &run.id,
                ],
            )?;
            if updated == 0 {
                return Err(no_such_run(&run.id));
            }
            tx.execute("DELETE FROM derived WHERE run_id = $1", &[&run.id])?;
            tx.execute("DELETE FROM warnings WHERE run_id = $1", &[&run.id])?;
            super::insert_derived(lite, &run.id, &run.derived)?;
            super::insert_warnings(lite, &run.id, 0, &run.warnings)?;
            upload_all(tx, lite, &Placing::default())
        })
    }

    fn pg_save_runs_with_profiles(
        &self,
        runs: &[Run],
        profiles: &[Vec<crate::model::Profile>],
    ) -> Result<Vec<bool>> {
        self.in_tx(|tx, lite| {
            let mut saved = Vec::with_capacity(runs.len());
            for (i, run) in runs.iter().enumerate() {
                let new = !run_exists(tx, &run.id)? && !saved_earlier(runs, i, &saved);
                if new {
                    super::insert_run(lite, run, run.complete)?;
                    for p in profiles.get(i).into_iter().flatten() {
                        super::insert_profile(lite, &run.id, p)?;
                    }
                }
                saved.push(new);
            }
            upload_all(tx, lite, &Placing::default())?;
            Ok(saved)
        })
    }

    fn pg_import_runs(&self, feed: &mut dyn FnMut(&mut dyn RunSink) -> Result<()>) -> Result<()> {
        self.in_tx(|tx, lite| {
            let mut sink = PgSink {
                tx,
                lite,
                pending: std::collections::HashSet::new(),
            };
            feed(&mut sink)?;
            sink.flush()
        })
    }

    fn pg_load_run(&self, id: &str) -> Result<Run> {
        Ok(self.pg_load_runs(&[id])?.remove(0))
    }

    fn pg_load_runs(&self, ids: &[&str]) -> Result<Vec<Run>> {
        let Some(lite) = self.fetch_runs(ids)? else {
            return Err(no_such_run(ids.first().copied().unwrap_or_default()));
        };
        let runs = ids
            .iter()
            .map(|id| super::load_run(&lite, id))
            .collect::<Result<Vec<_>>>()?;
        self.give_back(lite);
        Ok(runs)
    }

    fn pg_list_runs(&self) -> Result<Vec<RunInfo>> {
        self.pg_query_runs(&RunQuery::default())
    }

    fn pg_query_runs(&self, query: &RunQuery) -> Result<Vec<RunInfo>> {
        let (clause, mut vals) = query.clause();
        let limit = match query.limit {
            Some(n) => {
                vals.push(Value::Integer(super::int_usize(n, "a limit")?));
                format!(" LIMIT ${}", vals.len())
            }
            None => String::new(),
        };
        let clause = pg_dialect(&clause);
        let params = pg_params(vals)?;
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref()).collect();
        let rows = self.query(
            &format!(
                "SELECT id, label, started_ns, ended_ns, complete, hostname, kernel_release,
                    cpu_model,
                    (SELECT count(*) FROM results WHERE results.run_id = runs.id) AS benchmarks,
                    (SELECT count(*) FROM series WHERE series.run_id = runs.id) AS series,
                    (SELECT count(*) FROM warnings WHERE warnings.run_id = runs.id) AS warnings
                 FROM runs{clause} ORDER BY started_ns DESC, seq DESC{limit}"
            ),
            &refs,
        )?;
        let count = |r: &tokio_postgres::Row, col: &str| -> Result<u64> {
            let n: i64 = r.try_get(col)?;
            u64::try_from(n).map_err(|_| StoreError::Corrupt(format!("runs.{col} is {n}")))
        };
        rows.iter()
            .map(|r| {
                Ok(RunInfo {
                    id: r.try_get("id")?,
                    label: r.try_get("label")?,
                    started_ns: r.try_get("started_ns")?,
                    ended_ns: r.try_get("ended_ns")?,
                    complete: r.try_get::<_, i64>("complete")? == 1,
                    hostname: r.try_get("hostname")?,
                    kernel_release: r.try_get("kernel_release")?,
                    cpu_model: r.try_get("cpu_model")?,
                    benchmarks: count(r, "benchmarks")?,
                    series: count(r, "series")?,
                    warnings: count(r, "warnings")?,
                })
            })
            .collect()
    }

    fn pg_resolve(&self, spec: &str) -> Result<String> {
        let newest = "ORDER BY started_ns DESC, seq DESC";
        if spec == "latest" {
            return self
                .ids(&format!("SELECT id FROM runs {newest} LIMIT 1"), &[])?
                .pop()
                .ok_or_else(|| no_such_run(spec));
        }
        let id = spec.to_ascii_lowercase();
        if let Some(found) = self.ids("SELECT id FROM runs WHERE id = $1", &[&id])?.pop() {
            return Ok(found);
        }
        // Ids are 12 lowercase hex digits, so only such a prefix can name one (a label such as
        // "scale-7" is not looked up as one).
        let prefixed =
            if (MIN_PREFIX..=12).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_hexdigit()) {
                self.ids(PG_PREFIX_SQL, &[&id])?
            } else {
                Vec::new()
            };
        let labelled = || {
            Ok(self
                .ids(
                    &format!("SELECT id FROM runs WHERE label = $1 {newest} LIMIT 1"),
                    &[&spec],
                )?
                .pop())
        };
        pick_run(spec, prefixed, labelled)
    }

    fn pg_put_variance(
        &self,
        machine: (&str, &str, &str),
        estimates: &[VarianceEstimate],
    ) -> Result<()> {
        let (host, kernel, cpu) = machine;
        self.in_tx(|tx, _| {
            tx.execute(
                "DELETE FROM variance WHERE hostname = $1 AND kernel_release = $2 AND cpu_model = $3",
                &[&host, &kernel, &cpu],
            )?;
            for e in estimates {
                tx.execute(
                    "INSERT INTO variance (hostname, kernel_release, cpu_model, test, within_var,
                         between_var, runs, trials, updated_ns)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                    &[
                        &host,
                        &kernel,
                        &cpu,
                        &e.test,
                        &e.within_var,
                        &e.between_var,
                        &super::int_usize(e.runs, "variance runs")?,
                        &super::int_usize(e.trials, "variance trials")?,
                        &e.updated_ns,
                    ],
                )?;
            }
            Ok(())
        })
    }

    fn pg_variance(&self, machine: (&str, &str, &str)) -> Result<Vec<VarianceEstimate>> {
        let rows = self.query(
            "SELECT test, within_var, between_var, runs, trials, updated_ns FROM variance
             WHERE hostname = $1 AND kernel_release = $2 AND cpu_model = $3 ORDER BY test",
            &[&machine.0, &machine.1, &machine.2],
        )?;
        let size = |r: &tokio_postgres::Row, col: &str| -> Result<usize> {
            let n: i64 = r.try_get(col)?;
            usize::try_from(n).map_err(|_| StoreError::Corrupt(format!("variance.{col} is {n}")))
        };
        rows.iter()
            .map(|r| {
                Ok(VarianceEstimate {
                    test: r.try_get("test")?,
                    within_var: r.try_get("within_var")?,
                    between_var: r.try_get("between_var")?,
                    runs: size(r, "runs")?,
                    trials: size(r, "trials")?,
                    updated_ns: r.try_get("updated_ns")?,
                })
            })
            .collect()
    }

    fn pg_labelled(&self, label: &str) -> Result<Vec<String>> {
        self.ids(
            "SELECT id FROM runs WHERE label = $1 ORDER BY started_ns DESC, seq DESC",
            &[&label],
        )
    }

    fn pg_add_profile(&self, run_id: &str, profile: &crate::model::Profile) -> Result<()> {
        self.in_tx(|tx, lite| {
            if !run_exists(tx, run_id)? {
                return Err(no_such_run(run_id));
            }
            let offset = next_position(tx, "profiles", run_id)?;
            super::insert_profile(lite, run_id, profile)?;
            upload_all(tx, lite, &Placing { offset })
        })
    }

    fn pg_add_series(&self, run_id: &str, series: &Series) -> Result<()> {
        self.in_tx(|tx, lite| {
            if !run_exists(tx, run_id)? {
                return Err(no_such_run(run_id));
            }
            let offset = next_position(tx, "series", run_id)?;
            super::insert_series(lite, run_id, std::slice::from_ref(series))?;
            upload_all(tx, lite, &Placing { offset })
        })
    }

    fn pg_load_profiles(&self, run_id: &str) -> Result<Vec<crate::model::Profile>> {
        self.query(
            "SELECT profile_json FROM profiles WHERE run_id = $1 ORDER BY position",
            &[&run_id],
        )?
        .iter()
        .map(profile_of)
        .collect()
    }

    fn pg_remove_run(&self, id: &str) -> Result<()> {
        self.in_tx(|tx, _| {
            if tx.execute("DELETE FROM runs WHERE id = $1", &[&id])? == 0 {
                return Err(no_such_run(id));
            }
            Ok(())
        })
    }
}

/// A stored kernel profile from a row whose first column is `profile_json`.
fn profile_of(r: &tokio_postgres::Row) -> Result<crate::model::Profile> {
    let text: String = r.try_get(0)?;
    serde_json::from_str(&text)
        .map_err(|e| StoreError::Corrupt(format!("profiles.profile_json holds bad JSON: {e}")))
}

/// [`super::RunQuery`]'s SQL (SQLite's) as PostgreSQL reads it: `$N` parameters, `strpos`.
fn pg_dialect(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '?' && chars.peek().is_some_and(|d| d.is_ascii_digit()) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out.replace("instr(", "strpos(")
}

/// A query's values (text and integers) as PostgreSQL parameters.
fn pg_params(vals: Vec<Value>) -> Result<Vec<Box<dyn ToSql + Sync>>> {
    vals.into_iter()
        .map(|v| -> Result<Box<dyn ToSql + Sync>> {
            match v {
                Value::Integer(i) => Ok(Box::new(i)),
                Value::Text(t) => Ok(Box::new(t)),
                other => Err(StoreError::Corrupt(format!(
                    "a run query's value {other:?} is neither text nor an integer"
                ))),
            }
        })
        .collect()
}

impl PgStore {
    fn pg_count_runs(&self, query: &RunQuery) -> Result<u64> {
        let (clause, vals) = query.clause();
        let params = pg_params(vals)?;
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref()).collect();
        let rows = self.query(
            &format!("SELECT count(*) FROM runs{}", pg_dialect(&clause)),
            &refs,
        )?;
        let n: i64 = rows.first().map(|r| r.try_get(0)).transpose()?.unwrap_or(0);
        Ok(u64::try_from(n).unwrap_or(0))
    }

    fn pg_machine_runs(
        &self,
        host: Option<&str>,
        kernel: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>> {
        let limit = super::int_usize(limit, "a limit")?;
        self.ids(
            "SELECT id FROM runs WHERE hostname IS NOT DISTINCT FROM $1
                 AND kernel_release IS NOT DISTINCT FROM $2
                 AND complete = 1 AND source = 'measured'
             ORDER BY started_ns DESC, seq DESC LIMIT $3",
            &[&host, &kernel, &limit],
        )
    }

    /// PostgreSQL's VACUUM (its autovacuum does the same in time), with the database's size
    /// before and after.
    fn pg_gc(&self) -> Result<GcReport> {
        let size = |s: &PgStore| -> Result<u64> {
            let rows = s.query("SELECT pg_database_size(current_database())", &[])?;
            let n: i64 = rows.first().map(|r| r.try_get(0)).transpose()?.unwrap_or(0);
            Ok(u64::try_from(n).unwrap_or(0))
        };
        let before = size(self)?;
        self.with_client(|c| Ok(c.batch_execute("VACUUM")?))?;
        Ok(GcReport {
            bytes_before: before,
            bytes_after: size(self)?,
            converted: false,
        })
    }
}

/// Observations of the whole machine (`profile --system`): written whole, outside any run,
/// so they go straight to the server (no spool).
impl PgStore {
    fn pg_save_observation(&self, p: &SystemProfile) -> Result<()> {
        let json = serde_json::to_string(p)
            .map_err(|e| StoreError::Corrupt(format!("a system profile does not encode: {e}")))?;
        let wall_ns = super::int(p.wall_ns, "an observation's duration")?;
        self.in_tx(|tx, _| {
            tx.execute(
                "INSERT INTO observations (id, kind, label, started_ns, wall_ns, hostname,
                     kernel_release, sysperf_version, observation_json)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                &[
                    &p.id,
                    &super::observations::SYSTEM_PROFILE,
                    &p.label,
                    &p.started_ns,
                    &wall_ns,
                    &p.hostname,
                    &p.kernel_release,
                    &p.sysperf_version,
                    &json,
                ],
            )?;
            Ok(())
        })
    }

    fn pg_list_observations(&self) -> Result<Vec<ObservationInfo>> {
        self.query(
            "SELECT id, kind, label, started_ns, wall_ns, hostname, kernel_release
             FROM observations ORDER BY started_ns DESC, seq DESC",
            &[],
        )?
        .iter()
        .map(|r| {
            let wall: i64 = r.try_get("wall_ns")?;
            Ok(ObservationInfo {
                id: r.try_get("id")?,
                kind: r.try_get("kind")?,
                label: r.try_get("label")?,
                started_ns: r.try_get("started_ns")?,
                wall_ns: u64::try_from(wall)
                    .map_err(|_| StoreError::Corrupt(format!("observations.wall_ns is {wall}")))?,
                hostname: r.try_get("hostname")?,
                kernel_release: r.try_get("kernel_release")?,
            })
        })
        .collect()
    }

    fn pg_resolve_observation(&self, spec: &str) -> Result<Option<String>> {
        let newest = "ORDER BY started_ns DESC, seq DESC";
        let id = spec.to_ascii_lowercase();
        if let Some(found) = self
            .ids("SELECT id FROM observations WHERE id = $1", &[&id])?
            .pop()
        {
            return Ok(Some(found));
        }
        let mut prefixed = if id.chars().count() >= MIN_PREFIX {
            self.ids(
                &format!("SELECT id FROM observations WHERE starts_with(id, $1) {newest}"),
                &[&id],
            )?
        } else {
            Vec::new()
        };
        if prefixed.len() == 1 {
            return Ok(prefixed.pop());
        }
        let labelled = self
            .ids(
                &format!("SELECT id FROM observations WHERE label = $1 {newest} LIMIT 1"),
                &[&spec],
            )?
            .pop();
        if labelled.is_some() {
            return Ok(labelled);
        }
        if prefixed.len() > 1 {
            return Err(StoreError::AmbiguousRun {
                spec: spec.to_string(),
                candidates: prefixed,
            });
        }
        Ok(None)
    }

    fn pg_load_observation(&self, id: &str) -> Result<SystemProfile> {
        let rows = self.query(
            "SELECT observation_json FROM observations WHERE id = $1",
            &[&id],
        )?;
        let row = rows.first().ok_or_else(|| no_such_run(id))?;
        let text: String = row.try_get(0)?;
        serde_json::from_str(&text).map_err(|e| {
            StoreError::Corrupt(format!("observations.observation_json holds bad JSON: {e}"))
        })
    }

    fn pg_remove_observation(&self, id: &str) -> Result<bool> {
        self.in_tx(|tx, _| Ok(tx.execute("DELETE FROM observations WHERE id = $1", &[&id])? > 0))
    }

    fn pg_benchmark_profiles(&self) -> Result<Vec<crate::model::Profile>> {
        self.query(
            "SELECT p.profile_json FROM profiles p JOIN runs r ON r.id = p.run_id
             ORDER BY r.started_ns DESC, r.seq DESC, p.position",
            &[],
        )?
        .iter()
        .map(profile_of)
        .collect()
    }
}

impl Backend for PgStore {
    fn begin_run(&self, run: &Run) -> Result<()> {
        let start = Run {
            complete: false,
            ..run.clone()
        };
        *self.shadow.borrow_mut() = Some((start, Vec::new()));
        self.run_write(
            &run.id,
            |_, _| {},
            || self.pg_begin_run(run),
            |s| s.begin_run(run),
        )
    }

    fn add_result(&self, run_id: &str, result: &BenchResult, warnings: &[Warning]) -> Result<()> {
        self.run_write(
            run_id,
            |r, _| {
                r.results.push(result.clone());
                r.warnings.extend_from_slice(warnings);
            },
            || self.pg_add_result(run_id, result, warnings),
            |s| s.add_result(run_id, result, warnings),
        )
    }

    fn put_result(&self, run_id: &str, position: usize, result: &BenchResult) -> Result<()> {
        self.run_write(
            run_id,
            |r, _| match r.results.get_mut(position) {
                Some(slot) => *slot = result.clone(),
                None => r.results.push(result.clone()),
            },
            || self.pg_put_result(run_id, position, result),
            |s| s.put_result(run_id, position, result),
        )
    }

    fn finish_run(&self, run: &Run) -> Result<()> {
        self.run_write(
            &run.id,
            |r, _| {
                r.ended_ns = run.ended_ns;
                r.complete = run.complete;
                r.overhead = run.overhead;
                r.notes = run.notes.clone();
                r.derived = run.derived.clone();
                r.warnings = run.warnings.clone();
            },
            || self.pg_finish_run(run),
            |s| s.finish_run(run),
        )
    }

    fn add_profile(&self, run_id: &str, profile: &crate::model::Profile) -> Result<()> {
        self.run_write(
            run_id,
            |_, p| p.push(profile.clone()),
            || self.pg_add_profile(run_id, profile),
            |s| s.add_profile(run_id, profile),
        )
    }

    fn add_series(&self, run_id: &str, series: &Series) -> Result<()> {
        self.run_write(
            run_id,
            |r, _| r.series.push(series.clone()),
            || self.pg_add_series(run_id, series),
            |s| s.add_series(run_id, series),
        )
    }

    fn save_runs_with_profiles(
        &self,
        runs: &[Run],
        profiles: &[Vec<crate::model::Profile>],
    ) -> Result<Vec<bool>> {
        self.spooled(|s| s.save_runs_with_profiles(runs, profiles))
            .unwrap_or_else(|| self.pg_save_runs_with_profiles(runs, profiles))
    }

    fn import_runs(&self, feed: &mut dyn FnMut(&mut dyn RunSink) -> Result<()>) -> Result<()> {
        self.spooled(|s| s.import_runs(&mut *feed))
            .unwrap_or_else(|| self.pg_import_runs(feed))
    }

    fn load_run(&self, id: &str) -> Result<Run> {
        self.spooled(|s| s.load_run(id))
            .unwrap_or_else(|| self.pg_load_run(id))
    }

    fn load_runs(&self, ids: &[&str]) -> Result<Vec<Run>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        self.spooled(|s| ids.iter().map(|id| s.load_run(id)).collect())
            .unwrap_or_else(|| self.pg_load_runs(ids))
    }

    fn list_runs(&self) -> Result<Vec<RunInfo>> {
        self.spooled(|s| s.list_runs())
            .unwrap_or_else(|| self.pg_list_runs())
    }

    fn resolve(&self, spec: &str) -> Result<String> {
        self.spooled(|s| s.resolve(spec))
            .unwrap_or_else(|| self.pg_resolve(spec))
    }

    fn put_variance(
        &self,
        machine: (&str, &str, &str),
        estimates: &[VarianceEstimate],
    ) -> Result<()> {
        self.spooled(|s| s.put_variance(machine, estimates))
            .unwrap_or_else(|| self.pg_put_variance(machine, estimates))
    }

    fn variance(&self, machine: (&str, &str, &str)) -> Result<Vec<VarianceEstimate>> {
        self.spooled(|s| s.variance(machine))
            .unwrap_or_else(|| self.pg_variance(machine))
    }

    fn labelled(&self, label: &str) -> Result<Vec<String>> {
        self.spooled(|s| s.labelled(label))
            .unwrap_or_else(|| self.pg_labelled(label))
    }

    fn load_profiles(&self, run_id: &str) -> Result<Vec<crate::model::Profile>> {
        self.spooled(|s| s.load_profiles(run_id))
            .unwrap_or_else(|| self.pg_load_profiles(run_id))
    }

    fn remove_run(&self, id: &str) -> Result<()> {
        self.spooled(|s| s.remove_run(id))
            .unwrap_or_else(|| self.pg_remove_run(id))
    }

    fn is_read_only(&self) -> bool {
        false
    }

    fn save_observation(&self, p: &SystemProfile) -> Result<()> {
        self.pg_save_observation(p)
    }

    fn list_observations(&self) -> Result<Vec<ObservationInfo>> {
        self.pg_list_observations()
    }

    fn resolve_observation(&self, spec: &str) -> Result<Option<String>> {
        self.pg_resolve_observation(spec)
    }

    fn load_observation(&self, id: &str) -> Result<SystemProfile> {
        self.pg_load_observation(id)
    }

    fn remove_observation(&self, id: &str) -> Result<bool> {
        self.pg_remove_observation(id)
    }

    fn benchmark_profiles(&self) -> Result<Vec<crate::model::Profile>> {
        self.pg_benchmark_profiles()
    }

    fn query_runs(&self, query: &RunQuery) -> Result<Vec<RunInfo>> {
        self.spooled(|s| s.query_runs(query))
            .unwrap_or_else(|| self.pg_query_runs(query))
    }

    fn count_runs(&self, query: &RunQuery) -> Result<u64> {
        self.spooled(|s| s.count_runs(query))
            .unwrap_or_else(|| self.pg_count_runs(query))
    }

    fn machine_runs(
        &self,
        host: Option<&str>,
        kernel: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>> {
        self.spooled(|s| s.machine_runs(host, kernel, limit))
            .unwrap_or_else(|| self.pg_machine_runs(host, kernel, limit))
    }

    /// Writers of a PostgreSQL store do not wait on one another's lock: nothing to say.
    fn announce(&self, _work: &str) -> Result<()> {
        Ok(())
    }

    fn gc(&self) -> Result<GcReport> {
        self.pg_gc()
    }

    /// The spool file once the run went there, else the PostgreSQL URL.
    fn location(&self) -> Location {
        self.spooled(|s| Ok(Location::Sqlite(s.path().to_path_buf())))
            .and_then(|r| r.ok())
            .unwrap_or_else(|| PgStore::location(self))
    }
}

/// Whether the run at `i` has an id that an earlier run in `runs` was saved under.
/// Runs an import stores at a time: built in the scratch SQLite database, then uploaded and
/// cleared, so that the scratch database holds a few runs, never the whole import.
const IMPORT_BATCH: usize = 64;

/// [`PgStore::pg_import_runs`]'s sink: runs are built in the scratch database and uploaded
/// in batches of [`IMPORT_BATCH`].
struct PgSink<'t, 'c> {
    tx: &'t mut Transaction<'c>,
    lite: &'t rusqlite::Connection,
    /// The runs in the scratch database, not yet uploaded.
    pending: std::collections::HashSet<String>,
}

impl PgSink<'_, '_> {
    /// Uploads what the scratch database holds, and empties it.
    fn flush(&mut self) -> Result<()> {
        self.upload(&Placing::default())?;
        self.pending.clear();
        Ok(())
    }

    fn upload(&mut self, placing: &Placing) -> Result<()> {
        upload_all(self.tx, self.lite, placing)?;
        for table in RUN_TABLES.iter().rev() {
            self.lite.execute(&format!("DELETE FROM {table}"), [])?;
        }
        Ok(())
    }
}

impl RunSink for PgSink<'_, '_> {
    fn run(&mut self, run: &Run) -> Result<bool> {
        if self.pending.contains(&run.id) || run_exists(self.tx, &run.id)? {
            return Ok(false);
        }
        super::insert_run(self.lite, run, run.complete)?;
        self.pending.insert(run.id.clone());
        if self.pending.len() >= IMPORT_BATCH {
            self.flush()?;
        }
        Ok(true)
    }

    fn profiles(&mut self, run_id: &str, profiles: &[crate::model::Profile]) -> Result<()> {
        if profiles.is_empty() {
            return Ok(());
        }
        // The run first (it may be in the batch), then its profiles after those it has.
        self.flush()?;
        let offset = next_position(self.tx, "profiles", run_id)?;
        for p in profiles {
            super::insert_profile(self.lite, run_id, p)?;
        }
        self.upload(&Placing { offset })
    }
}

fn saved_earlier(runs: &[Run], i: usize, saved: &[bool]) -> bool {
    runs[..i]
        .iter()
        .zip(saved)
        .any(|(r, &s)| s && r.id == runs[i].id)
}

/// [`super::Store::resolve`]'s choice among what the id prefix and the label found: a
/// unique prefix, else the newest run with the label, else ambiguous or nothing.
fn pick_run(
    spec: &str,
    mut prefixed: Vec<String>,
    labelled: impl FnOnce() -> Result<Option<String>>,
) -> Result<String> {
    if prefixed.len() == 1 {
        return Ok(prefixed.remove(0));
    }
    if let Some(id) = labelled()? {
        return Ok(id);
    }
    if prefixed.len() > 1 {
        return Err(StoreError::AmbiguousRun {
            spec: spec.to_string(),
            candidates: prefixed,
        });
    }
    Err(no_such_run(spec))
}
