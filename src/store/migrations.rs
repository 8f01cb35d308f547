//! Schema of the store and the ordered migrations that build it.
//!
//! `PRAGMA user_version` holds how many migrations a database has had; migration `n` (1-based)
//! takes it from version `n - 1` to `n`. Migrations are frozen once released: a schema change
//! is a new entry at the end, never an edit of an old one, because databases in the field were
//! built by the old text. This module does not decide whether a file may be touched at all;
//! `Store::open` checks that first and only then calls [`migrate`].

use super::{StoreError, APPLICATION_ID};
use rusqlite::{Connection, Transaction, TransactionBehavior};

/// The schema version this build reads and writes: the number of migrations.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Migration 1 creates everything.
///
/// Float columns are declared without a type on purpose: a column with REAL affinity makes
/// SQLite store a whole-number double as an integer, which turns -0.0 into 0.0. Untyped
/// columns keep the exact IEEE-754 value. NaN cannot be bound as a double (SQLite turns it
/// into NULL), so the store writes NaN as the text 'NaN' in these columns.
/// Integer columns hold the model's u64 values as i64; values above i64::MAX are refused on
/// save. JSON columns hold records that are read whole and never filtered on.
pub(super) const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE runs (
    seq              INTEGER PRIMARY KEY,          -- insertion order, the tie-break for "newest"
    id               TEXT NOT NULL UNIQUE,         -- 12 lowercase hex digits, made by the caller
    label            TEXT,
    started_ns       INTEGER NOT NULL,             -- Unix time in nanoseconds
    ended_ns         INTEGER,
    complete         INTEGER NOT NULL DEFAULT 0,   -- 0 while running or when interrupted
    sysperf_version  TEXT NOT NULL,
    source           TEXT NOT NULL DEFAULT 'measured',
    hostname         TEXT,                         -- copies of fingerprint fields, for listing
    kernel_release   TEXT,                         -- and filtering without parsing JSON
    params_json      TEXT NOT NULL,
    fingerprint_json TEXT NOT NULL,
    overhead_json    TEXT
);
CREATE INDEX runs_by_start ON runs (started_ns, seq);
CREATE INDEX runs_by_label ON runs (label, started_ns);

CREATE TABLE results (
    id                INTEGER PRIMARY KEY,
    run_id            TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    position          INTEGER NOT NULL,            -- order the results were added in
    bench             TEXT NOT NULL,
    bench_group       TEXT NOT NULL,
    ops_per_iteration INTEGER NOT NULL,
    paper_count       INTEGER NOT NULL,
    unit              TEXT NOT NULL,
    placement         TEXT NOT NULL,
    cpus_json         TEXT NOT NULL,
    error             TEXT,
    has_summary       INTEGER NOT NULL,            -- 0: every summary column below is NULL
    -- Summary: per-operation nanoseconds, one group of columns per estimate.
    wall_median, wall_ci_low, wall_ci_high, wall_ci_level,
    wall_min, wall_max, wall_mean, wall_cv, wall_n INTEGER,
    user_median, user_ci_low, user_ci_high, user_ci_level,
    user_min, user_max, user_mean, user_cv, user_n INTEGER,
    sys_median, sys_ci_low, sys_ci_high, sys_ci_level,
    sys_min, sys_max, sys_mean, sys_cv, sys_n INTEGER,
    minflt_per_op, majflt_per_op, csw_per_op, nvcsw_per_op, nivcsw_per_op,
    migrations_per_op,                             -- NULL when the kernel does not expose them
    summary_rss_bytes INTEGER,
    summary_maps      INTEGER,
    UNIQUE (run_id, position)
);

CREATE TABLE trials (
    result_id        INTEGER NOT NULL REFERENCES results (id) ON DELETE CASCADE,
    position         INTEGER NOT NULL,             -- order the trials ran in
    kind             TEXT NOT NULL,                -- calibration | warmup | measured
    iterations       INTEGER NOT NULL,
    wall_ns          INTEGER NOT NULL,
    -- usage: the timed region only
    user_ns          INTEGER NOT NULL,
    sys_ns           INTEGER NOT NULL,
    minflt           INTEGER NOT NULL,
    majflt           INTEGER NOT NULL,
    nvcsw            INTEGER NOT NULL,
    nivcsw           INTEGER NOT NULL,
    -- worker_total: the worker's whole life as wait4 saw it
    total_user_ns    INTEGER NOT NULL,
    total_sys_ns     INTEGER NOT NULL,
    total_minflt     INTEGER NOT NULL,
    total_majflt     INTEGER NOT NULL,
    total_nvcsw      INTEGER NOT NULL,
    total_nivcsw     INTEGER NOT NULL,
    worker_rss_bytes INTEGER NOT NULL,
    worker_maps      INTEGER NOT NULL,
    migrations       INTEGER,
    cpu_start        INTEGER,
    cpu_end          INTEGER,
    outlier          TEXT NOT NULL,                -- none | mild | severe
    error            TEXT,
    PRIMARY KEY (result_id, position)
);

CREATE TABLE warnings (
    run_id   TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    bench    TEXT,                                 -- NULL: the warning concerns the whole run
    kind     TEXT NOT NULL,
    message  TEXT NOT NULL,
    PRIMARY KEY (run_id, position)
);

CREATE TABLE derived (
    run_id   TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    name     TEXT NOT NULL,
    value    NOT NULL,
    unit     TEXT NOT NULL,
    formula  TEXT NOT NULL,
    PRIMARY KEY (run_id, position)
);
"#,
    // Migration 2: where a run's figures come from (runs.source: 'measured' or 'published') and,
    // for published figures, the paper and table they are copied from.
    r#"
ALTER TABLE runs ADD COLUMN citation TEXT;
"#,
    // Migration (doctor): what `sysperf doctor` found at the start of the run, as a JSON array
    // of findings. NULL in runs stored before it existed, read back as no findings.
    r#"
ALTER TABLE runs ADD COLUMN findings_json TEXT;
"#,
    // Migration (#4, counters and profiles): what `run --observe` counted over each trial
    // (model::Counters) and its per-operation medians (model::CounterSummary), as JSON; NULL
    // when the run was not observed. And the kernel profiles of `run --profile`, one row per
    // profiled benchmark (profile::Profile as JSON: folded stacks and their sample counts).
    r#"
ALTER TABLE trials ADD COLUMN counters_json TEXT;
ALTER TABLE results ADD COLUMN counters_json TEXT;
CREATE TABLE profiles (
    run_id       TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    position     INTEGER NOT NULL,
    bench        TEXT NOT NULL,
    profile_json TEXT NOT NULL,
    PRIMARY KEY (run_id, position)
);
"#,
    // Migration (#5, suites): the sweeps of `run --suite`, one row per series (model::Series
    // as JSON, every point's benchmark result with its raw trials inside), and the suites'
    // notes on the run (a JSON array of strings; NULL in older runs, read back as none).
    r#"
CREATE TABLE series (
    run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    position    INTEGER NOT NULL,
    series      TEXT NOT NULL,
    series_json TEXT NOT NULL,
    PRIMARY KEY (run_id, position)
);
ALTER TABLE runs ADD COLUMN notes_json TEXT;
"#,
    // Migration 6 (#12, interleaved rounds): the round each counted trial ran in and when its
    // worker started; NULL in older runs, which read back as None.
    r#"
ALTER TABLE trials ADD COLUMN round INTEGER;
ALTER TABLE trials ADD COLUMN started_ns INTEGER;
"#,
    // Migration 7 (#12, variance at every level): each test's within-run and run-to-run
    // variance (log scale) on one machine, estimated from its stored runs after every run and
    // read by `doctor`; a derived table, rebuilt from the runs whenever one is stored.
    r#"
CREATE TABLE variance (
    hostname       TEXT NOT NULL,
    kernel_release TEXT NOT NULL,
    cpu_model      TEXT NOT NULL,
    test           TEXT NOT NULL,
    within_var     REAL NOT NULL,
    between_var    REAL NOT NULL,
    runs           INTEGER NOT NULL,
    trials         INTEGER NOT NULL,
    updated_ns     INTEGER NOT NULL,
    PRIMARY KEY (hostname, kernel_release, cpu_model, test)
);
"#,
    // Migration 8 (#13, the paper's CPU columns): each trial's reaped children's usage over
    // the timed region (model::Usage as JSON), and each result's CPU time of the parent and its
    // children together (model::WholeCpu as JSON), since the summary's user and system columns
    // are now the parent's own, as time(1) charged them. NULL in older runs, whose user and
    // system columns include the children.
    r#"
ALTER TABLE trials ADD COLUMN children_json TEXT;
ALTER TABLE results ADD COLUMN whole_json TEXT;
"#,
    // Migration 9 (#19, what changed between two kernels): the kernel build configurations
    // the runs' fingerprints name by hash (fingerprint.kernel_config_hash), one row per
    // distinct configuration however many runs share it: the options as a JSON object
    // (CONFIG_X -> value). Rows are never deleted with a run (others may share them).
    r#"
CREATE TABLE kernel_configs (
    hash        TEXT PRIMARY KEY,
    config_json TEXT NOT NULL
);
"#,
    // Migration 10 (#20, observing the live system): observations of the whole machine, not
    // of a benchmark (`sysperf profile --system`): the record read whole as JSON, with copies
    // of its identity for listing and finding by id, prefix or label. Ids share the runs'
    // shape (12 hex digits) but not their table.
    r#"
CREATE TABLE observations (
    seq              INTEGER PRIMARY KEY,
    id               TEXT NOT NULL UNIQUE,
    kind             TEXT NOT NULL,                -- 'system-profile'
    label            TEXT,
    started_ns       INTEGER NOT NULL,
    wall_ns          INTEGER NOT NULL,
    hostname         TEXT,
    kernel_release   TEXT,
    sysperf_version  TEXT NOT NULL,
    observation_json TEXT NOT NULL
);
CREATE INDEX observations_by_start ON observations (started_ns, seq);
"#,
    // Migration 11 (#21, a store that scales): the CPU model as a column, copied from the
    // fingerprint (as hostname and kernel_release are), so that runs are filtered and grouped
    // by it without parsing JSON; an index for a machine's history (host, kernel, newest
    // first) and one for a kernel's runs; and the sysperf processes that are writing to the
    // store (one row per process, made when it starts writing and removed when it ends) so
    // that a writer that waited too long for the lock can say who holds it.
    r#"
ALTER TABLE runs ADD COLUMN cpu_model TEXT;
UPDATE runs SET cpu_model = json_extract(fingerprint_json, '$.cpu_model')
 WHERE json_valid(fingerprint_json);
CREATE INDEX runs_by_machine ON runs (hostname, kernel_release, started_ns);
CREATE INDEX runs_by_kernel ON runs (kernel_release, started_ns);
CREATE TABLE writers (
    host       TEXT NOT NULL,                      -- the writer's host name
    pid        INTEGER NOT NULL,
    work       TEXT NOT NULL,                      -- what it is doing, e.g. 'sysperf import'
    started_ns INTEGER NOT NULL,
    PRIMARY KEY (host, pid)
);
"#,
    // Migration 12 (#35, runs killed midway): a run's heartbeat, the time of its last write
    // while it was measured (each round stores its results, so a running run's heartbeat is
    // at most a round old) and what that write was, so that an incomplete run whose
    // heartbeat stopped long ago is told from one still measuring: abandoned, with when and
    // where it stopped.
    r#"
ALTER TABLE runs ADD COLUMN heartbeat_ns INTEGER;
ALTER TABLE runs ADD COLUMN heartbeat_at TEXT;
"#,
    // Migration 13 (#41, gc took a run still calibrating for abandoned): the process that
    // measures a run (`procfs::ProcessMark`: boot, PID namespace, pid, start time), recorded
    // when the run begins, so that a run whose writer still runs on this machine is never
    // abandoned, however long it has been silent.
    r#"
ALTER TABLE runs ADD COLUMN writer_json TEXT;
"#,
    // Migration 14 (#44, fleet views at 100,000 runs): whether other work ran beside a
    // result's test while it ran (a warning of a kind that `WarningKind::disturbs`, for its
    // run and test: `Run::disturbed`), kept on the result as it is written (`DISTURBED_SQL`)
    // and filled in here for the results stored before. `changes` and the reports leave
    // such results out of a test's history: they found them by joining every distinct
    // (run, test) of those warnings, 6 s a call on a store of 100,000 busy runs; the flag is
    // read with the result row those views read anyway, whatever the share of disturbed
    // results. Not indexed: no query looks for the disturbed results alone (an index on a
    // 0/1 column would not pick few rows when half are disturbed, and costs every write).
    // The kinds are those of this version, frozen with the migration: a kind that comes to
    // disturb later needs a migration of its own (the test `backfill_kinds_are_the_disturbing`
    // fails until then).
    r#"
ALTER TABLE results ADD COLUMN disturbed INTEGER NOT NULL DEFAULT 0;
UPDATE results SET disturbed = 1
 WHERE EXISTS (SELECT 1 FROM warnings
                WHERE warnings.run_id = results.run_id AND warnings.bench = results.bench
                  AND warnings.kind IN ('busy_cpu', 'busy_machine', 'steal'));
"#,
    // Migration 15 (#44, fleet views at 100,000 runs): what `changes` counts of a run, kept
    // on the run as it is written, so that counting the histories reads the runs (along an
    // index that holds all it needs) and not every result with every run's parameters parsed
    // (that was most of `changes`' 47-92 s at 100,000 busy runs on SQLite):
    // - `history_options`: for a run that belongs in a test's history, the fields of its
    //   parameters that `RunParams::measures_like` compares, as one JSON array
    //   (`query::OptionFields`); NULL for a side of `sysperf ab` or a quick run;
    // - `left_out_as`: why such a run is in no history ('ab' or 'quick'), else NULL;
    // - `points`: the run's measured results (`query::MEASURED`) as a JSON array of
    //   [test, placement, disturbed], in their order (`POINTS_SQL`), kept wherever a result
    //   or its `disturbed` flag is written.
    // A column on the run rather than a table of counts per history: `changes --where ...`
    // counts the runs a condition on the runs picks, which a table of totals cannot answer,
    // and a run's own row is written in the same statements as its results, so the columns
    // cannot drift from them (no trigger, no second place to keep right on rm, gc and sync).
    // The runs of a host measured alike share one `points` text: the index's few groups.
    // `runs_by_host`: a host's newest runs (`--by host`: the newest 30 of each host) along
    // an index; `runs_by_machine` puts the kernel between host and start, so SQLite read
    // and sorted every run of the host (10 hosts of 100,000 runs: 0.8 s of
    // `compare --by host`'s 1.3 s).
    // Filled in here for the runs stored before (the options read out of the parameters as
    // the store read them until now; a run whose parameters are no JSON is in no history).
    r#"
ALTER TABLE runs ADD COLUMN history_options TEXT;
ALTER TABLE runs ADD COLUMN left_out_as TEXT;
ALTER TABLE runs ADD COLUMN points TEXT;
UPDATE runs SET
    left_out_as = CASE WHEN json_extract(params_json, '$.ab') IS NOT NULL THEN 'ab'
                       WHEN json_extract(params_json, '$.quick') THEN 'quick' END,
    history_options = CASE WHEN json_extract(params_json, '$.ab') IS NULL
                            AND NOT json_extract(params_json, '$.quick')
        THEN json_extract(params_json, '$.selection', '$.suites', '$.trials', '$.min_time_s',
                          '$.quick', '$.order', '$.precision_pct', '$.placement', '$.cpus') END
 WHERE json_valid(params_json);
UPDATE runs SET points = (
    SELECT json_group_array(json_array(bench, placement, disturbed)) FROM (
        SELECT bench, placement, disturbed FROM results
         WHERE results.run_id = runs.id AND results.has_summary = 1
           AND results.error IS NULL AND results.wall_median > 0
         ORDER BY position));
CREATE INDEX runs_by_history
    ON runs (source, complete, hostname, history_options, left_out_as, points);
CREATE INDEX runs_by_host ON runs (hostname, started_ns, seq);
"#,
];

/// The kinds migration 14 fills `results.disturbed` in for (the `IN` list above).
#[cfg(test)]
pub(super) const BACKFILLED_KINDS: [&str; 3] = ["busy_cpu", "busy_machine", "steal"];

/// What the header of an opened database says about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct DbState {
    pub application_id: i32,
    pub user_version: i64,
    /// Tables other than SQLite's own.
    pub tables: i64,
}

impl DbState {
    pub(super) fn read(conn: &Connection) -> rusqlite::Result<DbState> {
        Ok(DbState {
            application_id: conn.pragma_query_value(None, "application_id", |r| r.get(0))?,
            user_version: conn.pragma_query_value(None, "user_version", |r| r.get(0))?,
            tables: conn.query_row(
                "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
                [],
                |r| r.get(0),
            )?,
        })
    }

    /// Whether the store may use (and change) this database; errors say why not.
    /// A database is usable when it carries the sysperf application id, or when it is brand
    /// new (no id and no tables). Anything else belongs to someone else and is left alone.
    pub(super) fn check(&self, path: &std::path::Path) -> Result<(), StoreError> {
        let ours = self.application_id == APPLICATION_ID;
        let fresh = self.application_id == 0 && self.tables == 0 && self.user_version == 0;
        if !ours && !fresh {
            return Err(StoreError::NotSysperf {
                path: path.to_path_buf(),
            });
        }
        if self.user_version > SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                path: path.to_path_buf(),
                found: self.user_version,
                supported: SCHEMA_VERSION,
            });
        }
        Ok(())
    }
}

/// Brings the schema up to [`SCHEMA_VERSION`] in one transaction.
///
/// The state is read again under the write lock because another process may have created or
/// migrated the same file between our first look and now; then there is nothing left to do.
pub(super) fn migrate(conn: &Connection, path: &std::path::Path) -> Result<(), StoreError> {
    let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
    let state = DbState::read(&tx)?;
    state.check(path)?;
    let from = usize::try_from(state.user_version).map_err(|_| {
        StoreError::Corrupt(format!("negative schema version {}", state.user_version))
    })?;
    if from >= MIGRATIONS.len() {
        return Ok(());
    }
    if from > 0 {
        let runs: i64 = tx.query_row("SELECT count(*) FROM runs", [], |r| r.get(0))?;
        announce(&path.display().to_string(), runs);
    }
    for sql in MIGRATIONS.iter().skip(from) {
        tx.execute_batch(sql)?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    tx.pragma_update(None, "application_id", APPLICATION_ID)?;
    tx.commit()?;
    Ok(())
}

/// Stores with at least this many runs say that their migration is running: filling in a
/// column for every run and result takes minutes at 100,000 runs (migration 15 on SQLite,
/// PostgreSQL's 9), and a command silent that long looks hung, and gets killed.
pub(super) const ANNOUNCED_FROM_RUNS: i64 = 10_000;

/// Says (a notice) that the store at `store`, holding `runs` runs, is being brought up to
/// this version's schema, when it is large enough for that to take a while.
pub(super) fn announce(store: &str, runs: i64) {
    if runs >= ANNOUNCED_FROM_RUNS {
        crate::notice::tell(&format!(
            "updating the store {store} ({runs} runs) to this version's schema: once, and \
             it can take minutes on a store this large; let it finish (an interrupted \
             update changes nothing and starts again next time)"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_database_migrates_to_current_version_once() {
        let conn = Connection::open_in_memory().unwrap();
        let path = std::path::Path::new(":memory:");
        migrate(&conn, path).unwrap();
        let state = DbState::read(&conn).unwrap();
        assert_eq!(state.user_version, SCHEMA_VERSION);
        assert_eq!(state.application_id, APPLICATION_ID);
        assert_eq!(state.tables, 11);
        // A second call finds nothing to do rather than failing on existing tables.
        migrate(&conn, path).unwrap();
        assert_eq!(DbState::read(&conn).unwrap(), state);
    }

    /// The kinds migration 14 fills `results.disturbed` in for are those that disturb now
    /// (#44): a kind that comes to disturb later leaves old results unflagged until a
    /// migration of its own flags them.
    #[test]
    fn backfill_kinds_are_the_disturbing() {
        let now: Vec<&str> = crate::model::WarningKind::disturbing().collect();
        assert_eq!(now, BACKFILLED_KINDS);
        for kind in BACKFILLED_KINDS {
            assert!(MIGRATIONS[13].contains(&format!("'{kind}'")), "{kind}");
        }
    }

    #[test]
    fn check_classifies_states() {
        let p = std::path::Path::new("x.db");
        let st = |application_id, user_version, tables| DbState {
            application_id,
            user_version,
            tables,
        };
        assert!(st(0, 0, 0).check(p).is_ok());
        assert!(st(APPLICATION_ID, 1, 5).check(p).is_ok());
        assert!(matches!(
            st(0, 0, 1).check(p),
            Err(StoreError::NotSysperf { .. })
        ));
        assert!(matches!(
            st(0x1234, 0, 0).check(p),
            Err(StoreError::NotSysperf { .. })
        ));
        assert!(matches!(
            st(0, 3, 0).check(p),
            Err(StoreError::NotSysperf { .. })
        ));
        assert!(matches!(
            st(APPLICATION_ID, SCHEMA_VERSION + 1, 5).check(p),
            Err(StoreError::TooNew { found, .. }) if found == SCHEMA_VERSION + 1
        ));
    }
}
