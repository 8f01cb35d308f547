//! The PostgreSQL store of runs: many machines writing to one shared database
//! (`--db postgres://USER@HOST:PORT/DATABASE` or `SYSPERF_DB`).
//!
//! What it is: the same tables, columns and rows as the SQLite store (see `migrations.rs`),
//! typed for PostgreSQL (BIGINT, DOUBLE PRECISION, TEXT; booleans stay 0/1 and JSON stays the
//! exact text sysperf wrote, so every field reads back bit-exact). Rows are made and read by
//! the SQLite store's own code: each operation builds its rows in a private in-memory SQLite
//! database and carries them over in one PostgreSQL transaction (or carries the run's rows
//! down and lets the SQLite code load it), so the two backends cannot encode a run
//! differently; its queries are the SQLite store's, in PostgreSQL's dialect (`query.rs`), and
//! its operations those of the one `Backend` (this file says where they go). The schema is created on first use under an advisory lock, so many writers
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

use super::backend::{Backend, Location};
use super::query::{self, Db, Dialect, Param, Query};
use super::write::RunWrite;
use super::{migrations, Cells, GcReport, Reader, StoreError};
use crate::model::Run;
use connect::{Client, Transaction};
use rusqlite::types::{Value, ValueRef};
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
pub(super) const PG_MIGRATIONS: &[&str] = &[
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
    // range of ids); see `query::prefix`.
    r#"
CREATE INDEX runs_by_id_prefix ON runs (id COLLATE "C");
"#,
    // The SQLite store's migration 12 (#35): a run's heartbeat and what its last write was.
    r#"
ALTER TABLE runs ADD COLUMN heartbeat_ns BIGINT;
ALTER TABLE runs ADD COLUMN heartbeat_at TEXT;
"#,
    // The SQLite store's migration 13 (#41): the process measuring a run.
    r#"
ALTER TABLE runs ADD COLUMN writer_json TEXT;
"#,
    // #44 item 1: the store's own id, made once, so that a spool file finds its store
    // however the URL that reaches it is spelled (see `PgStore::store_identity`). PostgreSQL
    // only: an SQLite store is its file.
    r#"
CREATE TABLE sysperf_store (id TEXT NOT NULL);
INSERT INTO sysperf_store (id)
    VALUES (md5(random()::text || clock_timestamp()::text || pg_backend_pid()::text));
"#,
    // The SQLite store's migration 14 (#44): whether other work ran beside a result's test,
    // filled in for the results stored before (one hash join of the warnings' distinct
    // pairs, not a lookup per result).
    r#"
ALTER TABLE results ADD COLUMN disturbed BIGINT NOT NULL DEFAULT 0;
UPDATE results SET disturbed = 1
  FROM (SELECT DISTINCT run_id, bench FROM warnings
         WHERE kind IN ('busy_cpu', 'busy_machine', 'steal')) AS d
 WHERE results.run_id = d.run_id AND results.bench = d.bench;
"#,
    // The SQLite store's migration 15 (#44): what `changes` counts of a run kept on it (its
    // options, why it is in no history, its measured results), read out of the parameters
    // and results of the runs stored before, each run's results in one grouped pass; and
    // `runs_by_host`, a host's newest runs along an index.
    r#"
ALTER TABLE runs ADD COLUMN history_options TEXT;
ALTER TABLE runs ADD COLUMN left_out_as TEXT;
ALTER TABLE runs ADD COLUMN points TEXT;
UPDATE runs SET
    left_out_as = CASE WHEN j.p ->> 'ab' IS NOT NULL THEN 'ab'
                       WHEN j.p ->> 'quick' = 'true' THEN 'quick' END,
    history_options = CASE WHEN j.p ->> 'ab' IS NULL AND j.p ->> 'quick' = 'false'
        THEN jsonb_build_array(j.p -> 'selection', j.p -> 'suites', j.p -> 'trials',
                               j.p -> 'min_time_s', j.p -> 'quick', j.p -> 'order',
                               j.p -> 'precision_pct', j.p -> 'placement', j.p -> 'cpus')::text END
  FROM (SELECT id AS run, params_json::jsonb AS p FROM runs) AS j
 WHERE runs.id = j.run;
UPDATE runs SET points = coalesce(m.points, '[]')
  FROM (SELECT runs.id AS run, json_agg(json_build_array(r.bench, r.placement, r.disturbed)
                                        ORDER BY r.position)
                                FILTER (WHERE r.run_id IS NOT NULL)::text AS points
          FROM runs LEFT JOIN results AS r
            ON r.run_id = runs.id AND r.has_summary = 1 AND r.error IS NULL
           AND r.wall_median > 0
         GROUP BY runs.id) AS m
 WHERE runs.id = m.run;
CREATE INDEX runs_by_history
    ON runs (source, complete, hostname, history_options, left_out_as, points);
CREATE INDEX runs_by_host ON runs (hostname, started_ns, seq);
"#,
];

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
    /// goes there from then on. With it, its destination file ([`spool_dest`]), locked while
    /// this process writes the spool, so that no other sysperf uploads it halfway.
    spool: RefCell<Option<super::Store>>,
    spool_lock: RefCell<Option<std::fs::File>>,
    /// Why the server could not be reached when a run was to start ([`PgStore::connect_to_measure`]):
    /// the run's first write goes straight into a spool file.
    away: RefCell<Option<StoreError>>,
    /// Opened to read a database sysperf never wrote to ([`PgStore::connect_to_read`]): no
    /// schema is made until something is written (#35: a plain `runs` created it).
    bare: std::cell::Cell<bool>,
    /// What the server said this store is ([`PgStore::store_identity`]), once asked.
    identity: RefCell<Option<String>>,
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
        let store = PgStore::unconnected(url)?;
        store.with_client(|client| migrate(client, &store.location()))?;
        Ok(store)
    }

    /// [`PgStore::connect`] for a command that only reads: a database without sysperf's
    /// schema is left without it (reads answer as an empty store), and gets it with the first
    /// write, if any.
    pub fn connect_to_read(url: &str) -> Result<PgStore> {
        let store = PgStore::unconnected(url)?;
        let bare = store.with_client(|client| {
            let row = client.query_opt("SELECT to_regclass('sysperf_schema') IS NULL", &[])?;
            Ok(match row {
                Some(r) => r.try_get::<_, bool>(0)?,
                None => false,
            })
        })?;
        if bare {
            store.bare.set(true);
        } else {
            store.with_client(|client| migrate(client, &store.location()))?;
        }
        Ok(store)
    }

    /// The schema made, if this store was opened bare.
    fn ensure_schema(&self) -> Result<()> {
        if self.bare.get() {
            self.with_client(|client| migrate(client, &self.location()))?;
            self.bare.set(false);
        }
        Ok(())
    }

    /// The store of `url`, not yet connected to.
    fn unconnected(url: &str) -> Result<PgStore> {
        Ok(PgStore {
            url: url.to_string(),
            parsed: PgUrl::parse(url)?,
            client: RefCell::new(None),
            connected: std::cell::Cell::new(false),
            shadow: RefCell::new(None),
            spool: RefCell::new(None),
            spool_lock: RefCell::new(None),
            away: RefCell::new(None),
            bare: std::cell::Cell::new(false),
            identity: RefCell::new(None),
            scratch: RefCell::new(None),
        })
    }

    /// [`PgStore::connect`] for a command that measures runs into the store (#35): a server
    /// that cannot be reached is waited for as a lost connection is ([`RETRY_FOR`]), and if it
    /// stays away the store is returned without a connection, its run going into a spool
    /// file from its first write, so that nothing measured waits on the server. A wrong URL,
    /// password or database is still an error, and so is an outage with nowhere to spool.
    pub fn connect_to_measure(url: &str) -> Result<PgStore> {
        let retry = retry_for();
        let deadline = Instant::now() + retry;
        let mut pause = Duration::from_millis(100);
        let mut said = false;
        loop {
            let why = match PgStore::connect(url) {
                Err(StoreError::Connect { url: shown, why }) if why.is_unreachable() => {
                    StoreError::Connect { url: shown, why }
                }
                // Connected, then lost before the schema was checked (the server stopped just
                // then) and not reached again for as long as this waits: the run spools, as for
                // a server away from the start. It exited 1 with nothing measured (#35, found
                // by scripts/fleet-audit.sh: 1 of 69 runs in 12 outages).
                Err(e @ StoreError::Unreachable { .. }) => {
                    let store = PgStore::unconnected(url)?;
                    if !can_spool()? {
                        return Err(e);
                    }
                    *store.away.borrow_mut() = Some(e);
                    return Ok(store);
                }
                done => {
                    if said && done.is_ok() {
                        let at = Location::Postgres(url.to_string());
                        crate::notice::tell(&format!("reached {at}"));
                    }
                    // Asked now, while the server is there: a spool file made later says
                    // which store it is for (#44 item 1).
                    if let Ok(store) = &done {
                        store.store_identity();
                    }
                    return done;
                }
            };
            if Instant::now() >= deadline {
                if !can_spool()? {
                    return Err(why);
                }
                // The run's first write says why and names the spool file.
                let store = PgStore::unconnected(url)?;
                *store.away.borrow_mut() = Some(why);
                return Ok(store);
            }
            if !said {
                crate::notice::tell(&format!("{why}; retrying for up to {} s", retry.as_secs()));
                said = true;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_secs(2));
        }
    }

    fn location(&self) -> Location {
        Location::Postgres(self.url.clone())
    }

    /// What the server says this store is (#44 item 1): the store id kept in the database,
    /// the cluster's system identifier (`?` when this user may not read it), the server's
    /// port and the database's name, as `ID SYSTEM:PORT/DATABASE`; asked once, then kept.
    /// None when it cannot be told: a database without sysperf's schema, a server away.
    fn store_identity(&self) -> Option<String> {
        if let Some(known) = self.identity.borrow().clone() {
            return Some(known);
        }
        if self.bare.get() || self.is_away() {
            return None;
        }
        let found = self
            .with_client(|c| {
                let Some(row) = c.query_opt(
                    "SELECT id, current_setting('port'), current_database() FROM sysperf_store",
                    &[],
                )?
                else {
                    return Ok(None);
                };
                let (id, port, database): (String, String, String) =
                    (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
                let system = c
                    .query_opt(
                        "SELECT system_identifier::text FROM pg_control_system()",
                        &[],
                    )
                    .ok()
                    .flatten()
                    .and_then(|r| r.try_get::<_, String>(0).ok())
                    .unwrap_or_else(|| "?".into());
                Ok(Some(format!("{id} {system}:{port}/{database}")))
            })
            .ok()
            .flatten();
        self.identity.borrow_mut().clone_from(&found);
        found
    }

    /// [`Identity`](super::Identity) as the spool's destination file records it: the URL
    /// as shown (for messages), then what it leads to, then the store if known.
    fn dest_text(&self) -> String {
        let mut text = format!(
            "{}\ntarget {}\n",
            PgStore::location(self),
            self.parsed.target()
        );
        if let Some(store) = self.identity.borrow().as_deref() {
            text.push_str(&format!("store {store}\n"));
        }
        text
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
    /// snapshot and one query per table, however many runs.
    fn fetch_runs(&self, ids: &[&str]) -> Result<rusqlite::Connection> {
        self.with_client(|client| {
            let lite = self.scratch()?;
            let mut tx = client
                .build_transaction()
                .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()?;
            if download(&mut tx, &lite, "runs", "id = ANY($1)", ids)? == 0 {
                return Ok(lite);
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
            Ok(lite)
        })
    }

    /// `op` on the spool store, if the run went there.
    fn spooled<T>(&self, op: impl FnOnce(&super::Store) -> Result<T>) -> Option<Result<T>> {
        self.spool.borrow().as_ref().map(op)
    }

    /// Applies `w` to the run kept in memory, when it is that run's (a `begin` starts
    /// keeping one); whether it was.
    fn shadow(&self, w: &RunWrite<'_>) -> bool {
        let mut shadow = self.shadow.borrow_mut();
        if let RunWrite::Begin(run) = *w {
            *shadow = Some((run.clone(), Vec::new()));
        }
        match shadow.as_mut() {
            Some((run, profiles)) if run.id == w.run_id() => {
                w.apply(run, profiles);
                true
            }
            _ => false,
        }
    }

    /// Writes the shadow run into a new spool file and keeps it as the store from now on.
    fn start_spool(&self, why: StoreError) -> Result<()> {
        let shadow = self.shadow.borrow();
        let Some((run, profiles)) = shadow.as_ref() else {
            return Err(why);
        };
        let Some(dir) = open_spool_dir(true)? else {
            return Err(why);
        };
        let path = dir.path().join(format!("{}.db", run.id));
        let local = super::Store::open(&path)?;
        // Where it goes, said before the run's rows are: a spool found without it is one
        // that never got a run (#35).
        let lock =
            write_dest(&dir, &path, &self.dest_text()).map_err(|source| StoreError::Access {
                path: spool_dest(&path),
                source,
            })?;
        local.begin_run(run)?;
        for p in profiles {
            local.add_profile(&run.id, p)?;
        }
        if run.ended_ns.is_some() {
            local.finish_run(run)?;
        }
        // Not the error's own advice to run the command again: the run carries on (#35).
        let said = match &why {
            StoreError::Unreachable { url, secs, why } => format!(
                "lost the connection to the PostgreSQL store {url} and could not reconnect within {secs} s: {why}"
            ),
            other => other.to_string(),
        };
        crate::notice::tell(&said);
        crate::notice::tell(&format!(
            "the run goes on into {}: nothing uploads it by itself; the next sysperf command on this host that opens {} (run, ab, doctor, runs, show, sync...; on a fleet host, the playbook's timer) uploads it once the server is back ('sysperf sync {} {}' does it by hand)",
            path.display(),
            self.location(),
            path.display(),
            self.location()
        ));
        *self.spool.borrow_mut() = Some(local);
        *self.spool_lock.borrow_mut() = Some(lock);
        Ok(())
    }
}

/// The file beside a spool file that names the store it is for: `ID.dest` beside `ID.db`,
/// holding its [`Location`] as shown (no password), then what an upload matches
/// ([`super::Identity`]: where the URL leads, the store the server said it is).
pub(crate) fn spool_dest(spool: &std::path::Path) -> std::path::PathBuf {
    spool.with_extension("dest")
}

/// Writes `dest` into the destination file of `spool` (in the spool directory `dir`) and
/// returns it locked (`flock`, held until the file is closed, also when the process is
/// killed). Made 0600 relative to the checked directory, never through a link, and only
/// written when it is a regular file of this user's.
fn write_dest(
    dir: &crate::safedir::Dir,
    spool: &std::path::Path,
    dest: &str,
) -> std::io::Result<std::fs::File> {
    use std::io::Write;
    let name = spool_dest(spool);
    let name = name.file_name().unwrap_or_default();
    let mut f = dir.open_or_create_file(name, 0o600)?;
    if let Some(why) = not_ours(&f) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            why,
        ));
    }
    f.lock()?;
    f.set_len(0)?;
    f.write_all(dest.as_bytes())?;
    Ok(f)
}

/// Why the open file `f` is not a spool's file (a regular file of this user's), if it is not.
pub(crate) fn not_ours(f: &std::fs::File) -> Option<String> {
    use std::os::fd::AsRawFd;
    match crate::sys::fstat(f.as_raw_fd()) {
        Err(e) => Some(e.to_string()),
        Ok(st) if st.st_mode & libc::S_IFMT != libc::S_IFREG => Some(format!(
            "it is {}, not a regular file",
            crate::safedir::kind_of(st.st_mode)
        )),
        Ok(st) if st.st_uid != crate::sys::euid() => Some(format!(
            "it is owned by {}, not by this user",
            crate::safedir::who(st.st_uid)
        )),
        Ok(_) => None,
    }
}

/// Whether a run could go into a spool file: false with nowhere to spool, the refusal when
/// the spool directory is one another user controls (said before anything is measured).
fn can_spool() -> Result<bool> {
    if spool_dir().is_none() {
        return Ok(false);
    }
    open_spool_dir(false).map(|_| true)
}

/// What to do about a spool directory someone else controls.
const SPOOL_FIX: &str = "nothing in it was read; set XDG_STATE_HOME (or HOME) to a directory \
                         that only you or root can change, below directories only you or root \
                         can change (under sudo -E, HOME is still the calling user's)";

/// The spool directory ([`spool_dir`]), opened and judged as a store's directory is: walked
/// from / by the trusted-directory rule ([`crate::safedir`]), the directory itself root's or
/// this user's and writable by no one else, so that what is listed, read, uploaded and removed
/// there (relative to the open directory) is this user's own. None when there is no spool
/// directory (no HOME for a user other than root) or, unless `create`, it does not exist yet;
/// with `create` the missing directories are made (0755 less the umask, as a store's). A spool
/// directory another user controls (a HOME of theirs, as under `sudo -E`, whose spool could
/// hold a link to /etc/shadow as a destination file: #41 item 4) is refused
/// ([`StoreError::Unsafe`], exit 2) and nothing in it is read.
pub(crate) fn open_spool_dir(create: bool) -> Result<Option<crate::safedir::Dir>> {
    use crate::safedir::{Dir, Need, WalkError};
    let Some(path) = spool_dir() else {
        return Ok(None);
    };
    let opened = if create {
        Dir::open_or_create(&path, Need::Private, 0o755)
    } else {
        Dir::open(&path, Need::Private)
    };
    match opened {
        Ok(d) => Ok(Some(d)),
        Err(WalkError::Io { source, .. })
            if !create && source.kind() == std::io::ErrorKind::NotFound =>
        {
            Ok(None)
        }
        Err(e) => Err(
            match e.refuse(
                format!("the spool directory '{}'", path.display()),
                SPOOL_FIX,
            ) {
                Ok(u) => StoreError::Unsafe(u),
                Err(WalkError::Io { at, source }) => StoreError::Access { path: at, source },
                Err(e) => StoreError::Access {
                    path,
                    source: e.into_io(),
                },
            },
        ),
    }
}

/// Where runs go when PostgreSQL stays away: `$XDG_STATE_HOME/sysperf/spool`, else
/// `$HOME/.local/state/sysperf/spool`, else, for root (cron, a systemd service: no HOME),
/// `/var/lib/sysperf/spool` (#35); never the working directory (None for another user
/// without either).
pub(crate) fn spool_dir() -> Option<std::path::PathBuf> {
    spool_dir_of(
        std::env::var_os("XDG_STATE_HOME"),
        std::env::var_os("HOME"),
        crate::sys::is_root(),
    )
}

fn spool_dir_of(
    xdg_state: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
    root: bool,
) -> Option<std::path::PathBuf> {
    let usable = |v: Option<std::ffi::OsString>| {
        v.filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    usable(xdg_state)
        .map(|d| d.join("sysperf/spool"))
        .or_else(|| usable(home).map(|h| h.join(".local/state/sysperf/spool")))
        .or_else(|| root.then(|| "/var/lib/sysperf/spool".into()))
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
    if version > 0 && version < supported {
        let runs: i64 = tx.query_one("SELECT count(*) FROM runs", &[])?.try_get(0)?;
        migrations::announce(&at.to_string(), runs);
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

/// Rows of one INSERT of [`upload`]: a run's rows a statement, not one round trip a row
/// (#44: importing 1,000 runs took 25 s into PostgreSQL against 7 s into SQLite, most of it
/// a round trip per trial). PostgreSQL takes at most 65,535 parameters a statement.
const UPLOAD_ROWS: usize = 1_000;
const MAX_PARAMS: usize = 65_535;

/// Copies every row of `table` in `lite` to PostgreSQL (a table without rows costs no round
/// trip), many rows an INSERT. Results get new ids there, taken from their sequence in one
/// round trip (recorded in `ids`, which the trials' `result_id` are mapped through); runs
/// get a new `seq`.
fn upload(
    tx: &mut Transaction<'_>,
    lite: &rusqlite::Connection,
    table: &str,
    ids: &mut HashMap<i64, i64>,
) -> Result<()> {
    let mut stmt = lite.prepare(&format!("SELECT * FROM {table}"))?;
    let names: Vec<String> = stmt.column_names().iter().map(|s| s.to_string()).collect();
    let kept: Vec<usize> = (0..names.len())
        .filter(|&i| !(table == "runs" && names[i] == "seq"))
        .collect();
    // The rows of at most one batch of runs (`write::Sink`) or one write: held whole.
    let mut rows: Vec<Vec<Value>> = Vec::new();
    let mut q = stmt.query([])?;
    while let Some(row) = q.next()? {
        rows.push(
            kept.iter()
                .map(|&i| row.get(i))
                .collect::<rusqlite::Result<_>>()?,
        );
    }
    if rows.is_empty() {
        return Ok(());
    }
    let at = |name: &str| kept.iter().position(|&i| names[i] == name);
    if let (true, Some(id_at)) = (table == "results", at("id")) {
        let n = i64::try_from(rows.len())
            .map_err(|_| StoreError::Corrupt("internal: too many results".into()))?;
        let fresh: Vec<i64> = tx
            .query_typed(
                "SELECT nextval(pg_get_serial_sequence('results', 'id'))
                   FROM generate_series(1, $1)",
                &[(&n, Type::INT8)],
            )?
            .iter()
            .map(|r| r.try_get(0))
            .collect::<Result<_, _>>()?;
        for (row, new) in rows.iter_mut().zip(fresh) {
            let Value::Integer(old) = row[id_at] else {
                return Err(StoreError::Corrupt("internal: a result without id".into()));
            };
            ids.insert(old, new);
            row[id_at] = Value::Integer(new);
        }
    }
    if let Some(r_at) = at("result_id") {
        for row in &mut rows {
            if let Value::Integer(id) = &mut row[r_at] {
                *id = *ids.get(id).ok_or_else(|| {
                    StoreError::Corrupt(format!("internal: trial of unknown result {id}"))
                })?;
            }
        }
    }
    let cols: Vec<&str> = kept.iter().map(|&i| names[i].as_str()).collect();
    let per = UPLOAD_ROWS.min(MAX_PARAMS / cols.len()).max(1);
    let mut prepared: HashMap<usize, tokio_postgres::Statement> = HashMap::new();
    for chunk in rows.chunks(per) {
        let insert = match prepared.entry(chunk.len()) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(tx.prepare(&upload_sql(table, &cols, chunk.len()))?)
            }
        };
        let types = insert.params();
        let mut params = Vec::with_capacity(chunk.len() * cols.len());
        for (r, row) in chunk.iter().enumerate() {
            for (k, v) in row.iter().enumerate() {
                params.push(pg_param(v.clone(), &types[r * cols.len() + k], table)?);
            }
        }
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|b| b.as_ref()).collect();
        tx.execute(insert, &refs)?;
    }
    Ok(())
}

/// The INSERT of [`upload`]: `rows` rows of the columns `cols`, in PostgreSQL's words.
fn upload_sql(table: &str, cols: &[&str], rows: usize) -> String {
    let values: Vec<String> = (0..rows)
        .map(|r| {
            let marks: Vec<String> = (1..=cols.len())
                .map(|k| format!("${}", r * cols.len() + k))
                .collect();
            format!("({})", marks.join(", "))
        })
        .collect();
    let mut sql = format!(
        "INSERT INTO {table} ({}) VALUES {}",
        cols.join(", "),
        values.join(", ")
    );
    if table == "kernel_configs" {
        sql.push_str(" ON CONFLICT (hash) DO NOTHING");
    }
    sql
}

/// Copies every table of `lite` to PostgreSQL, parents first, and empties them.
fn upload_all(tx: &mut Transaction<'_>, lite: &rusqlite::Connection) -> Result<()> {
    let mut ids = HashMap::new();
    for table in RUN_TABLES {
        upload(tx, lite, table, &mut ids)?;
    }
    for table in RUN_TABLES.iter().rev() {
        lite.execute(&format!("DELETE FROM {table}"), [])?;
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

/// A row of PostgreSQL's as the SQLite values the store's code reads.
struct PgRow<'r> {
    row: &'r tokio_postgres::Row,
    values: Vec<Value>,
}

impl Cells for PgRow<'_> {
    fn cell(&self, col: &str) -> std::result::Result<ValueRef<'_>, String> {
        let i = self
            .row
            .columns()
            .iter()
            .position(|c| c.name() == col)
            .ok_or_else(|| "is not a column of the answer".to_string())?;
        Ok(ValueRef::from(&self.values[i]))
    }
}

/// Hands each of `rows` to `each`, read as the rows of `table`.
fn each_row(
    rows: &[tokio_postgres::Row],
    table: &'static str,
    each: &mut dyn FnMut(&Reader<'_>) -> Result<()>,
) -> Result<()> {
    for row in rows {
        let values = (0..row.len())
            .map(|i| lite_value(row, i))
            .collect::<Result<Vec<_>>>()?;
        each(&Reader::new(&PgRow { row, values }, table))?;
    }
    Ok(())
}

/// A query's parameters with their types: one round trip, not two (prepare, then execute).
fn typed(q: &Query) -> Vec<(&(dyn ToSql + Sync), Type)> {
    q.params
        .iter()
        .map(|p| -> (&(dyn ToSql + Sync), Type) {
            match p {
                Param::Int(v) => (v, Type::INT8),
                Param::Text(v) => (v, Type::TEXT),
                Param::Real(v) => (v, Type::FLOAT8),
            }
        })
        .collect()
}

/// PostgreSQL as the queries use it: a connection to read, or a transaction to write (the
/// rows the SQLite code built for it uploaded by `flush`).
enum Pg<'a, 'c> {
    Read(&'a mut Client),
    Write(&'a mut Transaction<'c>),
}

impl Db for Pg<'_, '_> {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn rows(&mut self, q: &Query, each: &mut dyn FnMut(&Reader<'_>) -> Result<()>) -> Result<()> {
        let rows = match self {
            Pg::Read(client) => client.query_typed(&q.sql, &typed(q))?,
            Pg::Write(tx) => tx.query_typed(&q.sql, &typed(q))?,
        };
        each_row(&rows, q.table, each)
    }

    fn execute(&mut self, q: &Query) -> Result<u64> {
        Ok(match self {
            Pg::Read(client) => client.execute_typed(&q.sql, &typed(q))?,
            Pg::Write(tx) => tx.execute_typed(&q.sql, &typed(q))?,
        })
    }

    fn flush(&mut self, lite: &rusqlite::Connection) -> Result<()> {
        match self {
            Pg::Read(_) => Ok(()),
            Pg::Write(tx) => upload_all(tx, lite),
        }
    }
}

/// Each operation is written once in [`Backend`]; here is where it goes: PostgreSQL (a
/// connection lost is made again), else the spool file once the run went there.
impl Backend for PgStore {
    fn read(&self, op: &mut dyn FnMut(&mut dyn Db) -> Result<()>) -> Result<()> {
        if let Some(done) = self.spooled(|s| s.read(&mut *op)) {
            return done;
        }
        if self.bare.get() {
            // The schema in a transaction that is rolled back: an empty store answers, and
            // nothing is left in the database.
            return self.with_client(|client| {
                let mut tx = client.transaction()?;
                for sql in PG_MIGRATIONS {
                    tx.batch_execute(sql)?;
                }
                let out = op(&mut Pg::Write(&mut tx));
                // Dropped uncommitted: rolled back.
                drop(tx);
                out
            });
        }
        self.with_client(|client| op(&mut Pg::Read(client)))
    }

    /// One transaction, with the scratch database for the rows the SQLite code builds,
    /// uploaded at the end; retried whole on a lost connection.
    fn write(
        &self,
        op: &mut dyn FnMut(&mut dyn Db, &rusqlite::Connection) -> Result<()>,
    ) -> Result<()> {
        if let Some(done) = self.spooled(|s| s.write(&mut *op)) {
            return done;
        }
        self.ensure_schema()?;
        self.in_tx(|tx, lite| {
            let mut db = Pg::Write(tx);
            op(&mut db, lite)?;
            db.flush(lite)
        })
    }

    /// The run being measured is kept in memory as written so far: when PostgreSQL stays
    /// unreachable, it goes into a spool file with this write, and the run goes on there.
    fn write_run(&self, w: RunWrite<'_>) -> Result<()> {
        let shadowed = self.shadow(&w);
        if shadowed && self.spool.borrow().is_none() {
            if let Some(why) = self.away.borrow_mut().take() {
                return self.start_spool(why);
            }
        }
        let stored = self.write(&mut |db, lite| {
            // A retry after a commit whose answer was lost finds the run begun already.
            if let RunWrite::Begin(run) = w {
                if query::begun(db, &run.id, run.started_ns)? {
                    return Ok(());
                }
            }
            w.store(db, lite)
        });
        match stored {
            Err(e @ StoreError::Unreachable { .. }) if shadowed => self.start_spool(e),
            other => other,
        }
    }

    fn load_runs(&self, ids: &[&str]) -> Result<Vec<Run>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        if let Some(done) = self.spooled(|s| s.load_runs(ids)) {
            return done;
        }
        if self.bare.get() {
            return Err(StoreError::NoSuchRun {
                spec: ids[0].to_string(),
            });
        }
        let lite = self.fetch_runs(ids)?;
        let runs = ids
            .iter()
            .map(|id| super::load_run(&lite, id))
            .collect::<Result<Vec<_>>>()?;
        self.give_back(lite);
        Ok(runs)
    }

    /// PostgreSQL's VACUUM (its autovacuum does the same in time), with the database's size
    /// before and after.
    fn gc(&self) -> Result<GcReport> {
        let size = || -> Result<u64> {
            let n: i64 = self.with_client(|c| {
                let row = c.query_opt("SELECT pg_database_size(current_database())", &[])?;
                Ok(row.map(|r| r.try_get(0)).transpose()?.unwrap_or(0))
            })?;
            Ok(u64::try_from(n).unwrap_or(0))
        };
        let before = size()?;
        self.with_client(|c| Ok(c.batch_execute("VACUUM")?))?;
        Ok(GcReport {
            bytes_before: before,
            bytes_after: size()?,
            converted: false,
        })
    }

    fn is_away(&self) -> bool {
        self.away.borrow().is_some() || self.spool.borrow().is_some()
    }

    fn identity(&self) -> Option<super::Identity> {
        Some(super::Identity {
            target: self.parsed.target(),
            store: self.store_identity(),
        })
    }

    /// The spool file once the run went there, else the PostgreSQL URL.
    fn location(&self) -> Location {
        self.spooled(|s| Ok(s.location()))
            .and_then(|r| r.ok())
            .unwrap_or_else(|| PgStore::location(self))
    }
}

#[cfg(test)]
mod tests {
    use super::spool_dir_of;
    use std::path::PathBuf;

    #[test]
    fn the_spool_needs_no_home_for_root() {
        let os = |s: &str| Some(std::ffi::OsString::from(s));
        let p = |s: &str| Some(PathBuf::from(s));
        assert_eq!(
            spool_dir_of(os("/s"), os("/h"), false),
            p("/s/sysperf/spool")
        );
        assert_eq!(
            spool_dir_of(None, os("/h"), true),
            p("/h/.local/state/sysperf/spool")
        );
        // cron and systemd give no HOME: root spools under /var/lib (#35 item 2).
        assert_eq!(spool_dir_of(None, None, true), p("/var/lib/sysperf/spool"));
        assert_eq!(
            spool_dir_of(os(""), os("rel"), true),
            p("/var/lib/sysperf/spool")
        );
        // Another user without either has nowhere safe: never the working directory.
        assert_eq!(spool_dir_of(None, os("relative"), false), None);
    }
}
