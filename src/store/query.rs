//! The store's SQL, written once for both backends: every query and statement that runs on a
//! store itself, built for its [`Dialect`] by a small builder ([`Sql`]) that binds each value
//! where it is written and asks the dialect for what SQLite and PostgreSQL spell differently
//! (parameter marks, an equality that holds between NULLs, a function, a collation), all in
//! [`Dialect`]'s methods. Also the one [`resolve`]: what the user typed (`latest`, an id, an
//! id prefix, a label) as the id of a run or an observation.
//!
//! It is not the code that builds and reads a run's rows (the SQLite code in `mod.rs`, which
//! PostgreSQL uses through a scratch database, so that both encode a run alike), nor a general
//! query builder: it knows sysperf's tables, and opens no connection ([`Db`] is the one a
//! backend hands it).

use super::{
    int_usize, real, to_json, Cond, GroupBy, GroupCount, HistoryPoint, Reader, Result, RunMachine,
    RunQuery, StoreError, TestHistory, MIN_PREFIX,
};
use crate::model::{
    Observation, ObservationInfo, Profile, RunInfo, RunOptions, StoredTrace, SystemProfile,
    VarianceEstimate, SYSTEM_PROFILE_KIND, TRACE_KIND,
};
use rusqlite::types::{ToSqlOutput, Value};
use std::collections::HashMap;

/// The SQL dialects of the two backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// The mark of the `n`th parameter (from 1).
    fn mark(self, n: usize) -> String {
        match self {
            Dialect::Sqlite => format!("?{n}"),
            Dialect::Postgres => format!("${n}"),
        }
    }

    /// Equality that also holds between two NULLs.
    fn same(self) -> &'static str {
        match self {
            Dialect::Sqlite => "IS",
            Dialect::Postgres => "IS NOT DISTINCT FROM",
        }
    }

    /// The function giving where a text occurs in another, from 1 (0: nowhere).
    fn position(self) -> &'static str {
        match self {
            Dialect::Sqlite => "instr",
            Dialect::Postgres => "strpos",
        }
    }

    /// The `id` column compared byte by byte, as an index of ids in byte order answers a
    /// range of them: SQLite compares text so by default; PostgreSQL by the database's
    /// collation unless told (its `runs_by_id_prefix` index is in the "C" collation).
    fn id_bytes(self) -> &'static str {
        match self {
            Dialect::Sqlite => "id",
            Dialect::Postgres => r#"id COLLATE "C""#,
        }
    }
}

/// A value for a parameter, typed: PostgreSQL is told each parameter's type (a NULL's too).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Param {
    Int(Option<i64>),
    Text(Option<String>),
    Real(f64),
}

impl From<i64> for Param {
    fn from(v: i64) -> Self {
        Param::Int(Some(v))
    }
}

impl From<Option<i64>> for Param {
    fn from(v: Option<i64>) -> Self {
        Param::Int(v)
    }
}

impl From<bool> for Param {
    fn from(v: bool) -> Self {
        Param::Int(Some(i64::from(v)))
    }
}

impl From<f64> for Param {
    fn from(v: f64) -> Self {
        Param::Real(v)
    }
}

impl From<&str> for Param {
    fn from(v: &str) -> Self {
        Param::Text(Some(v.to_string()))
    }
}

impl From<String> for Param {
    fn from(v: String) -> Self {
        Param::Text(Some(v))
    }
}

impl From<Option<&str>> for Param {
    fn from(v: Option<&str>) -> Self {
        Param::Text(v.map(str::to_string))
    }
}

impl From<Option<String>> for Param {
    fn from(v: Option<String>) -> Self {
        Param::Text(v)
    }
}

impl rusqlite::ToSql for Param {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Param::Int(v) => ToSqlOutput::Owned(v.map_or(Value::Null, Value::Integer)),
            Param::Text(v) => ToSqlOutput::Owned(v.clone().map_or(Value::Null, Value::Text)),
            // NaN as the SQLite store writes it (see `real`).
            Param::Real(v) => ToSqlOutput::Owned(real(*v)),
        })
    }
}

/// One statement in one dialect, its parameters' values, and the table its rows come from
/// (named in the error a bad row gives). Only the store makes them.
#[derive(Debug)]
pub struct Query {
    pub(super) sql: String,
    pub(super) params: Vec<Param>,
    pub(super) table: &'static str,
}

/// Builds a [`Query`]: each value bound where it is written.
struct Sql {
    dialect: Dialect,
    params: Vec<Param>,
}

impl Sql {
    fn new(dialect: Dialect) -> Sql {
        Sql {
            dialect,
            params: Vec::new(),
        }
    }

    /// Binds `v`; its mark, to write where it goes (written twice, it is used twice).
    fn bind(&mut self, v: impl Into<Param>) -> String {
        self.params.push(v.into());
        self.dialect.mark(self.params.len())
    }

    fn on(self, table: &'static str, sql: String) -> Query {
        Query {
            sql,
            params: self.params,
            table,
        }
    }
}

/// A connection (or transaction) to a store that runs [`Query`]s: SQLite's or PostgreSQL's.
/// Only the store implements it.
pub trait Db {
    fn dialect(&self) -> Dialect;

    /// Runs `q`, handing each row it answers to `each`, in order.
    fn rows(&mut self, q: &Query, each: &mut dyn FnMut(&Reader<'_>) -> Result<()>) -> Result<()>;

    /// Runs `q`; how many rows it changed.
    fn execute(&mut self, q: &Query) -> Result<u64>;

    /// Moves the rows that the SQLite code built in `lite` during this write into the store,
    /// and empties `lite`: nothing to do where `lite` is the store's own transaction
    /// (SQLite) or nothing is written (a read); PostgreSQL uploads them.
    fn flush(&mut self, _lite: &rusqlite::Connection) -> Result<()> {
        Ok(())
    }
}

/// Every row `q` answers, read by `read`.
fn rows<T>(db: &mut dyn Db, q: Query, read: impl Fn(&Reader<'_>) -> Result<T>) -> Result<Vec<T>> {
    let mut out = Vec::new();
    db.rows(&q, &mut |r| {
        out.push(read(r)?);
        Ok(())
    })?;
    Ok(out)
}

/// The `id` column of every row `q` answers.
fn ids(db: &mut dyn Db, q: Query) -> Result<Vec<String>> {
    rows(db, q, |r| r.text("id"))
}

/// The integer in the column `col` of the first row `q` answers.
fn integer(db: &mut dyn Db, q: Query, col: &str) -> Result<i64> {
    rows(db, q, |r| r.i64(col))?
        .pop()
        .ok_or_else(|| StoreError::Corrupt(format!("internal: no row counted {col}")))
}

/// The newest first, rows of equal start in the order they were stored.
const NEWEST: &str = "ORDER BY started_ns DESC, seq DESC";

/// The two kinds of things stored under ids a user names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Run,
    Observation,
}

impl Kind {
    fn table(self) -> &'static str {
        match self {
            Kind::Run => "runs",
            Kind::Observation => "observations",
        }
    }
}

/// What a name stands for among the runs (or observations).
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Found {
    Id(String),
    /// An id prefix of several, newest first, that is no label.
    Ambiguous(Vec<String>),
    Nothing,
}

impl Found {
    /// As a run: its id, or the error that says why there is none.
    pub(super) fn run(self, spec: &str) -> Result<String> {
        match self.observation(spec)? {
            Some(id) => Ok(id),
            None => Err(StoreError::NoSuchRun {
                spec: spec.to_string(),
            }),
        }
    }

    /// As an observation: its id, or None (the name may be a run's).
    pub(super) fn observation(self, spec: &str) -> Result<Option<String>> {
        match self {
            Found::Id(id) => Ok(Some(id)),
            Found::Ambiguous(candidates) => Err(StoreError::AmbiguousRun {
                spec: spec.to_string(),
                candidates,
            }),
            Found::Nothing => Ok(None),
        }
    }
}

/// Turns what the user typed into the id of a run (or observation): `latest` is the newest
/// run; then an exact id (in either case); then a unique id prefix of at least
/// [`MIN_PREFIX`] hex digits, read from the id index; then a label (the newest carrying
/// it). A prefix shared by several is ambiguous unless it is also a label. Ids are 12
/// lowercase hex digits, so only such a prefix can name one (a label such as "scale-7" is
/// never looked up as one).
pub(super) fn resolve(db: &mut dyn Db, kind: Kind, spec: &str) -> Result<Found> {
    let d = db.dialect();
    let table = kind.table();
    let one = |ids: Vec<String>| ids.into_iter().next().map_or(Found::Nothing, Found::Id);
    if kind == Kind::Run && spec == "latest" {
        let q = Sql::new(d).on(table, format!("SELECT id FROM runs {NEWEST} LIMIT 1"));
        return Ok(one(ids(db, q)?));
    }
    let id = spec.to_ascii_lowercase();
    let mut b = Sql::new(d);
    let sql = format!("SELECT id FROM {table} WHERE id = {}", b.bind(id.as_str()));
    if let Found::Id(id) = one(ids(db, b.on(table, sql))?) {
        return Ok(Found::Id(id));
    }
    let mut prefixed =
        if (MIN_PREFIX..=12).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_hexdigit()) {
            ids(db, prefix(d, table, &id))?
        } else {
            Vec::new()
        };
    if prefixed.len() == 1 {
        return Ok(Found::Id(prefixed.remove(0)));
    }
    if let Found::Id(id) = one(ids(db, labelled(d, table, spec, Some(1)))?) {
        return Ok(Found::Id(id));
    }
    Ok(if prefixed.is_empty() {
        Found::Nothing
    } else {
        Found::Ambiguous(prefixed)
    })
}

/// The ids in `table` starting with the lowercase hex digits `prefix`, newest first: every
/// id from the prefix up to the prefix followed by 'g' (above every hex digit), which the id
/// index answers without reading the other rows.
pub(super) fn prefix(d: Dialect, table: &'static str, prefix: &str) -> Query {
    let mut b = Sql::new(d);
    let (p, id) = (b.bind(prefix), d.id_bytes());
    let sql = format!("SELECT id FROM {table} WHERE {id} >= {p} AND {id} < {p} || 'g' {NEWEST}");
    b.on(table, sql)
}

/// The ids in `table` carrying `label`, newest first, at most `limit`.
fn labelled(d: Dialect, table: &'static str, label: &str, limit: Option<i64>) -> Query {
    let mut b = Sql::new(d);
    let mut sql = format!(
        "SELECT id FROM {table} WHERE label = {} {NEWEST}",
        b.bind(label)
    );
    if let Some(n) = limit {
        sql.push_str(&format!(" LIMIT {}", b.bind(n)));
    }
    b.on(table, sql)
}

/// The ids of the runs carrying `label`, newest first.
pub(super) fn runs_labelled(db: &mut dyn Db, label: &str) -> Result<Vec<String>> {
    let q = labelled(db.dialect(), "runs", label, None);
    ids(db, q)
}

/// The complete measured runs of one machine (host name and kernel release, either
/// unknown), newest first, at most `limit`, through the `runs_by_machine` index.
pub(super) fn machine(
    d: Dialect,
    host: Option<&str>,
    kernel: Option<&str>,
    limit: usize,
) -> Result<Query> {
    let mut b = Sql::new(d);
    let (h, k, n) = (
        b.bind(host),
        b.bind(kernel),
        b.bind(int_usize(limit, "a limit")?),
    );
    let is = d.same();
    let sql = format!(
        "SELECT id FROM runs WHERE hostname {is} {h} AND kernel_release {is} {k}
             AND complete = 1 AND source = 'measured'
         {NEWEST} LIMIT {n}"
    );
    Ok(b.on("runs", sql))
}

pub(super) fn machine_runs(
    db: &mut dyn Db,
    host: Option<&str>,
    kernel: Option<&str>,
    limit: usize,
) -> Result<Vec<String>> {
    let q = machine(db.dialect(), host, kernel, limit)?;
    ids(db, q)
}

/// The SQL of one condition of a [`RunQuery`], its values bound.
fn condition(b: &mut Sql, c: &Cond) -> String {
    match c {
        Cond::Host(h) => format!("hostname = {}", b.bind(h.as_str())),
        Cond::Kernel(k) => {
            let k = b.bind(k.as_str());
            format!(
                "(kernel_release = {k} OR substr(kernel_release, 1, length({k}) + 1) \
                 IN ({k} || '.', {k} || '-', {k} || '+'))"
            )
        }
        Cond::Cpu(c) => format!(
            "{}(lower(cpu_model), {}) > 0",
            b.dialect.position(),
            b.bind(c.to_lowercase())
        ),
        Cond::Label(l) => format!("label = {}", b.bind(l.as_str())),
        Cond::Started(from, to) => format!(
            "(started_ns >= {} AND started_ns < {})",
            b.bind(*from),
            b.bind(*to)
        ),
    }
}

/// The WHERE clause of `query` (empty, or starting with " WHERE"), its values bound:
/// conditions of one kind are alternatives, of different kinds all must hold.
fn clause(b: &mut Sql, query: &RunQuery) -> String {
    let mut parts = Vec::new();
    let mut kinds: Vec<u8> = query.conds.iter().map(Cond::kind).collect();
    kinds.sort_unstable();
    kinds.dedup();
    for k in kinds {
        let any: Vec<String> = query
            .conds
            .iter()
            .filter(|c| c.kind() == k)
            .map(|c| condition(b, c))
            .collect();
        parts.push(format!("({})", any.join(" OR ")));
    }
    if let Some(since) = query.since_ns {
        parts.push(format!("started_ns >= {}", b.bind(since)));
    }
    if query.complete_only {
        parts.push("complete = 1".into());
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", parts.join(" AND "))
    }
}

/// The stored runs `query` matches, newest first, with their counts of benchmarks, series
/// and warnings.
pub(super) fn query_runs(db: &mut dyn Db, query: &RunQuery) -> Result<Vec<RunInfo>> {
    let mut b = Sql::new(db.dialect());
    let clause = clause(&mut b, query);
    let limit = match query.limit {
        Some(n) => format!(" LIMIT {}", b.bind(int_usize(n, "a limit")?)),
        None => String::new(),
    };
    // A quick run that was a side of `ab` is told as a side (`left_out_as`, migration 15).
    let sql = format!(
        "SELECT id, label, started_ns, ended_ns, complete, hostname, kernel_release, cpu_model,
                heartbeat_ns, heartbeat_at, writer_json, left_out_as,
                (SELECT count(*) FROM results WHERE results.run_id = runs.id) AS benchmarks,
                (SELECT count(*) FROM series WHERE series.run_id = runs.id) AS series,
                (SELECT count(*) FROM warnings WHERE warnings.run_id = runs.id) AS warnings
         FROM runs{clause} {NEWEST}{limit}"
    );
    let now = super::now_ns();
    rows(db, b.on("runs", sql), |r| {
        Ok(RunInfo {
            id: r.text("id")?,
            label: r.opt_text("label")?,
            started_ns: r.i64("started_ns")?,
            ended_ns: r.opt_i64("ended_ns")?,
            complete: r.bool("complete")?,
            hostname: r.opt_text("hostname")?,
            kernel_release: r.opt_text("kernel_release")?,
            cpu_model: r.opt_text("cpu_model")?,
            benchmarks: r.u64("benchmarks")?,
            series: r.u64("series")?,
            warnings: r.u64("warnings")?,
            quick: r.opt_text("left_out_as")?.as_deref() == Some("quick"),
            stopped: match r.bool("complete")? {
                true => None,
                false => Some(crate::model::Stopped::judged(
                    r.opt_i64("heartbeat_ns")?.unwrap_or(r.i64("started_ns")?),
                    r.opt_text("heartbeat_at")?,
                    r.opt_i64("ended_ns")?.is_some(),
                    writer_alive(r.opt_text("writer_json")?.as_deref()),
                    now,
                )),
            },
        })
    })
}

/// Whether the process that began a run (`writer_json`, #41) runs on this machine now; None
/// when that cannot be told here, or no writer was recorded (or one this version cannot read).
fn writer_alive(json: Option<&str>) -> Option<bool> {
    use crate::procfs::{Liveness, ProcessMark};
    let mark: ProcessMark = serde_json::from_str(json?).ok()?;
    match mark.alive_here() {
        Liveness::Alive => Some(true),
        Liveness::Gone => Some(false),
        Liveness::Unknown => None,
    }
}

/// Of the runs `ids`, those stored, with whether each is complete and its results: what
/// `sync` needs of DST, asked for SRC's runs only (#35: it listed every run of DST, 1.5 s and
/// 92 MB to upload one spooled run into a store of 100,000).
pub(super) fn extents(db: &mut dyn Db, ids: &[&str]) -> Result<Vec<(String, bool, u64)>> {
    let mut found = Vec::new();
    for chunk in ids.chunks(500) {
        let mut b = Sql::new(db.dialect());
        let list: Vec<String> = chunk.iter().map(|id| b.bind(*id)).collect();
        let sql = format!(
            "SELECT id, complete,
                    (SELECT count(*) FROM results WHERE results.run_id = runs.id) AS n
             FROM runs WHERE id IN ({})",
            list.join(", ")
        );
        found.extend(rows(db, b.on("runs", sql), |r| {
            Ok((r.text("id")?, r.bool("complete")?, r.u64("n")?))
        })?);
    }
    Ok(found)
}

/// The SQL of a grouping fact (the day: whole days of Unix time, UTC).
fn group_sql(by: GroupBy) -> &'static str {
    match by {
        GroupBy::Host => "hostname",
        GroupBy::Kernel => "kernel_release",
        GroupBy::Cpu => "cpu_model",
        GroupBy::Label => "label",
        GroupBy::Day => "started_ns / 86400000000000",
    }
}

/// The runs `query` matches as a table to group: `runs` itself, or its newest `limit` rows.
fn matching(b: &mut Sql, query: &RunQuery) -> Result<String> {
    let clause = clause(b, query);
    Ok(match query.limit {
        Some(n) => format!(
            "(SELECT * FROM runs{clause} {NEWEST} LIMIT {}) AS runs",
            b.bind(int_usize(n, "a limit")?)
        ),
        None => format!("runs{clause}"),
    })
}

/// The runs `query` matches, counted per value of `by` in the database: one row per group,
/// however many runs (#35; `runs --by` read every run to count them).
pub(super) fn count_groups(
    db: &mut dyn Db,
    query: &RunQuery,
    by: GroupBy,
) -> Result<Vec<GroupCount>> {
    let mut b = Sql::new(db.dialect());
    let from = matching(&mut b, query)?;
    let expr = group_sql(by);
    let value = match by {
        GroupBy::Day => "CAST(NULL AS TEXT)",
        _ => expr,
    };
    let sql = format!(
        "SELECT {value} AS value, count(*) AS runs,
                count(CASE WHEN complete = 1 THEN 1 END) AS complete,
                max(started_ns) AS newest_ns
         FROM {from} GROUP BY {expr}"
    );
    rows(db, b.on("runs", sql), |r| {
        Ok(GroupCount {
            value: r.opt_text("value")?,
            runs: r.u64("runs")?,
            complete: r.u64("complete")?,
            newest_ns: r.i64("newest_ns")?,
        })
    })
}

/// The ids of the newest `per_group` runs `query` matches of each value of `by`, newest
/// first, chosen in the database (a window over the matching runs), not by listing them.
pub(super) fn newest_per_group(
    db: &mut dyn Db,
    query: &RunQuery,
    by: GroupBy,
    per_group: usize,
) -> Result<Vec<String>> {
    if let Some(ids) = newest_per_value(db, query, by, per_group)? {
        return Ok(ids);
    }
    let mut b = Sql::new(db.dialect());
    let from = matching(&mut b, query)?;
    let expr = group_sql(by);
    let per = b.bind(int_usize(per_group, "runs per group")?);
    let sql = format!(
        "SELECT id FROM (
             SELECT id, started_ns, seq,
                    ROW_NUMBER() OVER (PARTITION BY {expr} ORDER BY started_ns DESC, seq DESC) AS nth
             FROM {from}) AS ranked
         WHERE nth <= {per} {NEWEST}"
    );
    ids(db, b.on("runs", sql))
}

/// Groups [`newest_per_value`] walks one by one; with more, one window over the runs is
/// cheaper than their queries.
const WALKED_GROUPS: i64 = 64;

/// [`newest_per_group`] by an index: when `by` is a column an index leads with (host,
/// kernel, label) and `query` has no limit, its values are read from the index (a loose
/// scan: one probe per value) and each value's newest runs along it, so that the database
/// reads a few runs per group rather than sorting every run (#35 item 5: that window took
/// 250 ms at 100,000 runs on PostgreSQL, these queries 5). None when this does not apply:
/// another key, a limit, or more than [`WALKED_GROUPS`] values.
fn newest_per_value(
    db: &mut dyn Db,
    query: &RunQuery,
    by: GroupBy,
    per_group: usize,
) -> Result<Option<Vec<String>>> {
    let col = match by {
        GroupBy::Host => "hostname",
        GroupBy::Kernel => "kernel_release",
        GroupBy::Label => "label",
        GroupBy::Cpu | GroupBy::Day => return Ok(None),
    };
    if query.limit.is_some() {
        return Ok(None);
    }
    let mut b = Sql::new(db.dialect());
    let most = b.bind(WALKED_GROUPS + 1);
    let sql = format!(
        "WITH RECURSIVE v(x, n) AS (
             SELECT (SELECT {col} FROM runs WHERE {col} IS NOT NULL ORDER BY {col} LIMIT 1), 1
             UNION ALL
             SELECT (SELECT {col} FROM runs WHERE {col} > v.x ORDER BY {col} LIMIT 1), v.n + 1
             FROM v WHERE v.x IS NOT NULL AND v.n < {most})
         SELECT x FROM v WHERE x IS NOT NULL"
    );
    let mut values: Vec<Option<String>> = rows(db, b.on("runs", sql), |r| r.opt_text("x"))?;
    if values.len() as i64 > WALKED_GROUPS {
        return Ok(None);
    }
    values.push(None);
    let mut b = Sql::new(db.dialect());
    let per = int_usize(per_group, "runs per group")?;
    let mut parts = Vec::with_capacity(values.len());
    for (i, v) in values.into_iter().enumerate() {
        let clause = clause(&mut b, query);
        let this = match v {
            Some(v) => format!("{col} = {}", b.bind(v)),
            None => format!("{col} IS NULL"),
        };
        let wher = if clause.is_empty() {
            format!(" WHERE {this}")
        } else {
            format!("{clause} AND {this}")
        };
        let limit = b.bind(per);
        parts.push(format!(
            "SELECT id, started_ns, seq FROM (SELECT id, started_ns, seq FROM runs{wher} {NEWEST} LIMIT {limit}) AS g{i}"
        ));
    }
    let sql = format!("{} {NEWEST}", parts.join(" UNION ALL "));
    Ok(Some(ids(db, b.on("runs", sql))?))
}

/// A history's key: host, test, placement, and the options its runs were measured with
/// ([`RunOptions::key`]).
type Key = (Option<String>, String, String, String);

/// A result that is a point of its history: measured, with a time.
pub(super) const MEASURED: &str =
    "results.has_summary = 1 AND results.error IS NULL AND results.wall_median > 0";

/// The fields of `runs.history_options` (migration 15), in order: [`RunOptions::new`]'s
/// arguments (selection, suites, trials, trial length, quick, order, precision, placement,
/// CPUs), the options [`RunParams::measures_like`](crate::model::RunParams::measures_like)
/// compares. Written ([`option_fields`]) and read ([`Options::key`]) as this one type, so the
/// store reads what it writes.
pub(super) type OptionFields = (
    Vec<String>,
    Option<Vec<String>>,
    u32,
    f64,
    bool,
    Option<String>,
    Option<f64>,
    String,
    Option<Vec<u32>>,
);

/// A run's [`OptionFields`], as the store writes them in `runs.history_options`.
pub(super) fn option_fields(p: &crate::model::RunParams) -> OptionFields {
    (
        p.selection.clone(),
        Some(p.suites.clone()),
        p.trials,
        p.min_time_s,
        p.quick,
        p.order.clone(),
        p.precision_pct,
        p.placement.clone(),
        p.cpus.clone(),
    )
}

/// Why a run is in no test's history, as the store writes it in `runs.left_out_as`: "ab" for
/// a side of `sysperf ab` (its two sides share rounds, and a switch or a command made the
/// side what it is), "quick" for a quick run (one short trial: a level and a spread of its
/// own); None for a run that is in one (#42).
pub(super) fn left_out_as(p: &crate::model::RunParams) -> Option<&'static str> {
    if p.ab.is_some() {
        Some("ab")
    } else if p.quick {
        Some("quick")
    } else {
        None
    }
}

/// The `runs.history_options` texts read, each made into options once: runs measured alike
/// share a text, whatever their seeds.
#[derive(Default)]
struct Options(HashMap<String, (String, RunOptions)>);

impl Options {
    /// The key ([`RunOptions::key`]) of a `runs.history_options` text.
    fn key(&mut self, text: &str) -> Result<String> {
        if let Some((key, _)) = self.0.get(text) {
            return Ok(key.clone());
        }
        let f: OptionFields = serde_json::from_str(text)
            .map_err(|e| StoreError::Corrupt(format!("a run's options ({text}): {e}")))?;
        let o = RunOptions::new(
            &f.0,
            f.1.as_deref().unwrap_or_default(),
            f.2,
            f.3,
            f.4,
            f.5.as_deref(),
            f.6,
            &f.7,
            f.8,
        );
        let key = o.key();
        self.0.insert(text.to_string(), (key.clone(), o));
        Ok(key)
    }

    /// The options of a key made by [`Options::key`].
    fn of(&self, key: &str) -> Option<RunOptions> {
        self.0
            .values()
            .find(|(k, _)| k == key)
            .map(|(_, o)| o.clone())
    }
}

/// A history's count in step 1 of [`test_histories`]: its measured results and how many of
/// them were disturbed; or, keyed by why, the results of runs left out of every history.
type Counted = HashMap<(Option<String>, Key), (usize, usize)>;

/// How many measured results each history has among the runs of `from` (the derived table
/// `runs` of [`MeasuredRuns::table`], its parameters bound in `b`), and how many of those
/// were disturbed, by why their runs are in no history (`left_out_as`, None for those in
/// one): read from the runs alone (`runs.points`, migration 15), grouped along the index
/// `runs_by_history`, which holds every column read. A host's runs that measured the same
/// tests alike are one group, however many: at 100,000 runs this reads 100,000 index entries
/// where grouping every result (700,000, each joined to its run's parsed parameters) took
/// most of `changes`' 47-92 s on SQLite and 29-32 s on PostgreSQL on a loaded VM.
fn history_counts(db: &mut dyn Db, b: Sql, from: String, options: &mut Options) -> Result<Counted> {
    let sql = format!(
        "SELECT runs.hostname AS hostname, runs.opts AS opts, runs.left_out_as AS left_out_as,
                runs.points AS points, count(*) AS n
         FROM {from}
         GROUP BY runs.hostname, runs.opts, runs.left_out_as, runs.points"
    );
    let mut out: Counted = HashMap::new();
    db.rows(&b.on("runs", sql), &mut |r| {
        let runs = r.u64("n")? as usize;
        let why = r.opt_text("left_out_as")?;
        // A run whose parameters the migration could not read (no JSON) is in no history,
        // as the store read it before; so is a run without points.
        let opts = match (&why, r.opt_text("opts")?) {
            (None, Some(text)) => options.key(&text)?,
            (None, None) => return Ok(()),
            (Some(_), _) => String::new(),
        };
        let Some(text) = r.opt_text("points")? else {
            return Ok(());
        };
        let points: Vec<(String, String, i64)> = serde_json::from_str(&text)
            .map_err(|e| StoreError::Corrupt(format!("a run's points ({text}): {e}")))?;
        let host = r.opt_text("hostname")?;
        for (bench, placement, disturbed) in points {
            // Texts that differ only in the order of a list are one history.
            let key = (host.clone(), bench, placement, opts.clone());
            let e = out.entry((why.clone(), key)).or_default();
            e.0 += runs;
            if disturbed != 0 {
                e.1 += runs;
            }
        }
        Ok(())
    })?;
    Ok(out)
}

/// The histories of `sysperf changes` ([`test_histories`]) and what was left out of them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Histories {
    pub histories: Vec<TestHistory>,
    /// Measured results of runs that were a side of `sysperf ab` (its two sides share
    /// rounds, and a switch or a command changed one of them) or quick runs (one short
    /// trial: another level and spread), left out whatever they measured (#42).
    pub ab_sides: usize,
    pub quick: usize,
}

/// The history of each (host, test, placement, options) among the complete measured runs
/// `query` matches: each run's median wall time per operation, oldest first, the newest
/// `newest` of each history kept. A history's runs were measured alike
/// ([`RunParams::measures_like`](crate::model::RunParams::measures_like): the same options);
/// runs that were a side of `ab` and quick runs are in none (#42: `ab` sides with a switch on
/// made a "change" of their own in a plain history).
///
/// So that the database does not sort every point (#35 item 5: one window over every run's
/// results, partitioned by history and sorted, was all but a few ms of `changes`' 230 ms at
/// 100,000 runs on PostgreSQL), three steps: the histories and their lengths are counted
/// (a hash aggregate, no sort); the newest runs are read along the `runs_by_start` index, one
/// page of them with their results, as many per host as its longest history of each set of
/// options keeps (all that is read when every run of a host measured the same tests); and
/// only where a history is still short and older runs remain (tests that come and go, a host
/// retired long ago) the window runs, over the older runs of those hosts only. Memory holds a
/// page (at most `PAGE_ROWS` rows) and the points kept, not the store.
pub(super) fn test_histories(
    db: &mut dyn Db,
    query: &RunQuery,
    newest: usize,
) -> Result<Histories> {
    let newest = newest.max(1);
    let runs = MeasuredRuns {
        q: RunQuery {
            complete_only: true,
            limit: None,
            ..query.clone()
        },
    };
    let mut options = Options::default();
    // A result whose test ran beside other work (`WarningKind::disturbs`) is no point of its
    // history: its figure stands for that work as much as for the system (#30, #35). The
    // result says so itself (`results.disturbed`, kept on write, #44): joining the distinct
    // (run, test) pairs of the warnings instead took 6 s a scan at 100,000 busy runs, and
    // an EXISTS per result cost `changes` 100 -> 480 ms at 100,000 runs on PostgreSQL.
    // 1. The histories and how many results each has (and the results of `ab` sides and
    // quick runs, left out), and how many of those were left out as disturbed, in one scan:
    // each keeps the rest, up to `newest`.
    let mut b = Sql::new(db.dialect());
    let from = runs.table(&mut b, "hostname, points", false, "", "");
    let counted = history_counts(db, b, from, &mut options)?;
    let mut out = Histories::default();
    let counts = Counts::of(counted, newest, &mut out);
    if counts.wanted.is_empty() {
        return Ok(out);
    }
    // 2. The newest runs, one page of them along the index ([`Counts::page`]).
    let page = counts.page();
    let mut keeper = Keeper {
        wanted: &counts.wanted,
        options: &mut options,
        kept: HashMap::new(),
        last: None,
        page_runs: 0,
    };
    let mut b = Sql::new(db.dialect());
    let limit = b.bind(int_usize(page, "a page of runs")?);
    let newest_runs = runs.table(
        &mut b,
        RUN_KEYS,
        true,
        "",
        &format!("{NEWEST} LIMIT {limit}"),
    );
    // Runs without a point still come back (one row, bench NULL): the page's end is known.
    let sql = format!(
        "SELECT {POINT_COLUMNS}
         FROM {newest_runs}
         LEFT JOIN results ON results.run_id = runs.id AND {MEASURED}
         ORDER BY runs.started_ns DESC, runs.seq DESC"
    );
    db.rows(&b.on("results", sql), &mut |r| keeper.take(r))?;
    // 3. The rest, where histories are still short and older runs remain (tests that come
    // and go, a host retired long ago): the window over the older runs of those hosts only.
    let short = keeper.short_hosts();
    if let (false, Some(at), true) = (short.is_empty(), keeper.last, keeper.page_runs >= page) {
        let (b, sql) = older_points(db.dialect(), &runs, at, &short, newest)?;
        db.rows(&b.on("results", sql), &mut |r| keeper.take(r))?;
    }
    let kept = keeper.kept;
    out.histories = assemble(counts, kept, &options)?;
    Ok(out)
}

/// The columns of a run that [`test_histories`] pages through and windows over.
const RUN_KEYS: &str =
    "runs.id AS id, runs.seq AS seq, runs.started_ns AS started_ns, runs.hostname AS hostname";

/// The columns of a row that may be a point of a history ([`Keeper::take`] reads them).
const POINT_COLUMNS: &str = "runs.id AS run_id, runs.started_ns AS started_ns, runs.seq AS seq,
         runs.hostname AS hostname, runs.opts AS opts, results.bench AS bench,
         results.placement AS placement, results.wall_median AS wall_median,
         results.disturbed AS disturbed";

/// The measured runs a query matches, as the derived table `runs` of [`test_histories`]'
/// three steps, with their options (`opts`, `runs.history_options`) and why they are in no
/// history (`left_out_as`): columns kept on write (migration 15), no parameters parsed.
struct MeasuredRuns {
    q: RunQuery,
}

impl MeasuredRuns {
    /// The derived table with `columns`, `plain` runs only (no side of `ab`, no quick run)
    /// or all, `more` added to the condition and `tail` after it; parameters bound in `b`.
    fn table(&self, b: &mut Sql, columns: &str, plain: bool, more: &str, tail: &str) -> String {
        let clause = clause(b, &self.q);
        let mut wher = if clause.is_empty() {
            " WHERE source = 'measured'".to_string()
        } else {
            format!("{clause} AND source = 'measured'")
        };
        if plain {
            wher.push_str(" AND history_options IS NOT NULL");
        }
        wher.push_str(more);
        format!(
            "(SELECT {columns}, history_options AS opts, left_out_as FROM runs{wher} {tail}) AS runs"
        )
    }
}

/// Step 1 of [`test_histories`], per history: its measured results (`all`), those left out
/// as disturbed (`left_out`), and how many points it keeps (`wanted`).
struct Counts {
    all: HashMap<Key, usize>,
    left_out: HashMap<Key, usize>,
    wanted: HashMap<Key, usize>,
}

impl Counts {
    /// The counts of [`history_counts`]' rows; those of `ab` sides and quick runs are only
    /// added up in `out`.
    fn of(counted: Counted, newest: usize, out: &mut Histories) -> Self {
        let mut all: HashMap<Key, usize> = HashMap::new();
        let mut left_out: HashMap<Key, usize> = HashMap::new();
        for ((why, key), (n, disturbed)) in counted {
            match why.as_deref() {
                Some("ab") => out.ab_sides += n,
                // 'quick', the only other reason written.
                Some(_) => out.quick += n,
                None => {
                    if disturbed > 0 {
                        *left_out.entry(key.clone()).or_default() += disturbed;
                    }
                    *all.entry(key).or_default() += n;
                }
            }
        }
        let wanted: HashMap<Key, usize> = all
            .iter()
            .map(|(k, n)| {
                let out = left_out.get(k).copied().unwrap_or(0);
                (k.clone(), n.saturating_sub(out).min(newest))
            })
            .collect();
        Counts {
            all,
            left_out,
            wanted,
        }
    }

    /// How many of the newest runs step 2 reads: per host, for each set of options its runs
    /// were made with (runs with other options are other runs), as many as its longest
    /// history keeps: all that is needed when every run measured every test. Where some of a
    /// history's results were left out as disturbed, as many more as they are of its results
    /// (#44: with half of them disturbed, a page of the newest runs held half the points, and
    /// step 3's window sorted every older run of the host).
    fn page(&self) -> usize {
        let mut per_options: HashMap<(&Option<String>, &String), usize> = HashMap::new();
        let mut tests: HashMap<&Option<String>, usize> = HashMap::new();
        for (key @ (host, _, _, opts), want) in &self.wanted {
            let n = self.all.get(key).copied().unwrap_or(0);
            let clean = n.saturating_sub(self.left_out.get(key).copied().unwrap_or(0));
            let runs = if clean == 0 {
                0
            } else {
                (want.saturating_mul(n)).div_ceil(clean).min(n)
            };
            let e = per_options.entry((host, opts)).or_default();
            *e = (*e).max(runs);
            *tests.entry(host).or_default() += 1;
        }
        let tests = tests.values().copied().max().unwrap_or(1);
        // A page's rows (runs times their tests) stay under this many, whatever the store.
        const PAGE_ROWS: usize = 50_000;
        (per_options.values().sum::<usize>()).clamp(1, (PAGE_ROWS / tests).max(64))
    }
}

/// Keeps each history's newest points from rows ([`POINT_COLUMNS`]) read newest first, and
/// where the page of newest runs ended (steps 2 and 3 of [`test_histories`]).
struct Keeper<'a> {
    wanted: &'a HashMap<Key, usize>,
    options: &'a mut Options,
    /// Per history: how many of its newest results were taken, and its points among them.
    kept: HashMap<Key, (usize, Vec<HistoryPoint>)>,
    /// The oldest run read (start, seq).
    last: Option<(i64, i64)>,
    /// How many runs were read.
    page_runs: usize,
}

impl<'a> Keeper<'a> {
    /// One row: a point of its history while that has fewer than it keeps.
    fn take(&mut self, r: &Reader<'_>) -> Result<()> {
        let at = (r.i64("started_ns")?, r.i64("seq")?);
        if self.last != Some(at) {
            self.last = Some(at);
            self.page_runs += 1;
        }
        let Some(bench) = r.opt_text("bench")? else {
            return Ok(());
        };
        if r.opt_i64("disturbed")?.unwrap_or(0) != 0 {
            // Left out (counted above), and not among the newest it keeps either.
            return Ok(());
        }
        let key = (
            r.opt_text("hostname")?,
            bench,
            r.text("placement")?,
            self.options.key(&r.text("opts")?)?,
        );
        let Some(&want) = self.wanted.get(&key) else {
            // Stored since the histories were counted: not one of them.
            return Ok(());
        };
        let (taken, points) = self.kept.entry(key).or_default();
        if *taken >= want {
            return Ok(());
        }
        *taken += 1;
        // A value the store holds but that is no time (NaN) takes its place among the
        // newest, as it did in the count above, and is not a point.
        if let Some(v) = r
            .opt_f64("wall_median")?
            .filter(|v| v.is_finite() && *v > 0.0)
        {
            points.push(HistoryPoint {
                run_id: r.text("run_id")?,
                started_ns: at.0,
                wall_median_ns: v,
            });
        }
        Ok(())
    }

    /// The hosts of the histories still short of what they keep, sorted, each once.
    fn short_hosts(&self) -> Vec<&'a Option<String>> {
        let wanted: &'a HashMap<Key, usize> = self.wanted;
        let mut hosts: Vec<&'a Option<String>> = wanted
            .iter()
            .filter(|(k, want)| self.kept.get(*k).map_or(0, |(taken, _)| *taken) < **want)
            .map(|((host, ..), _)| host)
            .collect();
        hosts.sort();
        hosts.dedup();
        hosts
    }
}

/// Step 3 of [`test_histories`]: the newest `newest` points of each history among the runs
/// of the `short` hosts older than `at` (start, seq), by a window, newest first.
fn older_points(
    dialect: Dialect,
    runs: &MeasuredRuns,
    (started, seq): (i64, i64),
    short: &[&Option<String>],
    newest: usize,
) -> Result<(Sql, String)> {
    let mut b = Sql::new(dialect);
    let mut older = format!(
        " AND (runs.started_ns < {s} OR (runs.started_ns = {s} AND runs.seq < {q}))",
        s = b.bind(started),
        q = b.bind(seq)
    );
    // Hosts by name (a few, or every one when there are too many to list).
    if short.len() <= 500 {
        let mut any: Vec<String> = Vec::new();
        let named: Vec<String> = short
            .iter()
            .filter_map(|h| h.as_deref())
            .map(|h| b.bind(h))
            .collect();
        if !named.is_empty() {
            any.push(format!("runs.hostname IN ({})", named.join(", ")));
        }
        if short.iter().any(|h| h.is_none()) {
            any.push("runs.hostname IS NULL".into());
        }
        older.push_str(&format!(" AND ({})", any.join(" OR ")));
    }
    let older_runs = runs.table(&mut b, RUN_KEYS, true, &older, "");
    let keep = b.bind(int_usize(newest, "runs per history")?);
    // The partitions are by the options' text: texts that are one history (lists in
    // another order) each keep their newest, and `take` keeps the history's newest of
    // those.
    let sql = format!(
        "SELECT run_id, started_ns, seq, hostname, opts, bench, placement, wall_median, disturbed FROM (
             SELECT {POINT_COLUMNS},
                    ROW_NUMBER() OVER (PARTITION BY runs.hostname, runs.opts, results.bench,
                                                    results.placement
                                       ORDER BY runs.started_ns DESC, runs.seq DESC) AS nth
             FROM {older_runs}
             JOIN results ON results.run_id = runs.id
             WHERE {MEASURED} AND results.disturbed = 0) AS ranked
         WHERE nth <= {keep}
         {NEWEST}"
    );
    Ok((b, sql))
}

/// Every history counted, also one whose results were all left out (no points), in order.
fn assemble(
    counts: Counts,
    mut kept: HashMap<Key, (usize, Vec<HistoryPoint>)>,
    options: &Options,
) -> Result<Vec<TestHistory>> {
    let mut histories = Vec::with_capacity(counts.all.len());
    for key in counts.all.into_keys() {
        let disturbed = counts.left_out.get(&key).copied().unwrap_or(0);
        let mut points = kept.remove(&key).map(|(_, p)| p).unwrap_or_default();
        if points.is_empty() && disturbed == 0 {
            continue;
        }
        points.reverse();
        let (host, test, placement, opts) = key;
        let options = options.of(&opts).ok_or_else(|| {
            StoreError::Corrupt(format!("internal: no options for the history key {opts}"))
        })?;
        histories.push(TestHistory {
            host,
            test,
            placement,
            options,
            points,
            disturbed,
        });
    }
    histories.sort_by(|a, b| a.order_key().cmp(&b.order_key()));
    Ok(histories)
}

/// The fingerprints (kernel configuration included, where the store has it) and sysperf
/// versions of the runs `ids` that are stored, without their results.
pub(super) fn run_machines(db: &mut dyn Db, ids: &[&str]) -> Result<Vec<RunMachine>> {
    let mut out = Vec::new();
    for chunk in ids.chunks(500) {
        let mut b = Sql::new(db.dialect());
        let list: Vec<String> = chunk.iter().map(|id| b.bind(*id)).collect();
        let sql = format!(
            "SELECT id, label, started_ns, sysperf_version, fingerprint_json FROM runs
             WHERE id IN ({})",
            list.join(", ")
        );
        out.extend(rows(db, b.on("runs", sql), |r| {
            Ok(RunMachine {
                id: r.text("id")?,
                label: r.opt_text("label")?,
                started_ns: r.i64("started_ns")?,
                sysperf_version: r.text("sysperf_version")?,
                fingerprint: r.json("fingerprint_json")?,
            })
        })?);
    }
    let mut hashes: Vec<String> = out
        .iter()
        .filter_map(|m| m.fingerprint.kernel_config_hash.clone())
        .collect();
    hashes.sort();
    hashes.dedup();
    for chunk in hashes.chunks(500) {
        let mut b = Sql::new(db.dialect());
        let list: Vec<String> = chunk.iter().map(|h| b.bind(h.as_str())).collect();
        let sql = format!(
            "SELECT hash, config_json FROM kernel_configs WHERE hash IN ({})",
            list.join(", ")
        );
        let configs = rows(db, b.on("kernel_configs", sql), |r| {
            Ok((
                r.text("hash")?,
                r.json::<std::collections::BTreeMap<String, String>>("config_json")?,
            ))
        })?;
        for (hash, config) in configs {
            for m in out
                .iter_mut()
                .filter(|m| m.fingerprint.kernel_config_hash.as_ref() == Some(&hash))
            {
                m.fingerprint.kernel_config = config.clone();
            }
        }
    }
    Ok(out)
}

/// How many stored runs `query` matches, its limit aside.
pub(super) fn count_runs(db: &mut dyn Db, query: &RunQuery) -> Result<u64> {
    let mut b = Sql::new(db.dialect());
    let sql = format!("SELECT count(*) AS n FROM runs{}", clause(&mut b, query));
    let n = integer(db, b.on("runs", sql), "n")?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Whether a run with this id is stored.
pub(super) fn run_exists(db: &mut dyn Db, id: &str) -> Result<bool> {
    let mut b = Sql::new(db.dialect());
    let sql = format!("SELECT id FROM runs WHERE id = {}", b.bind(id));
    Ok(!ids(db, b.on("runs", sql))?.is_empty())
}

/// Whether the run was begun already: stored, incomplete, with this start (a `begin_run`
/// retried after a commit whose answer was lost).
pub(super) fn begun(db: &mut dyn Db, id: &str, started_ns: i64) -> Result<bool> {
    let mut b = Sql::new(db.dialect());
    let sql = format!(
        "SELECT id FROM runs WHERE id = {} AND started_ns = {} AND complete = 0",
        b.bind(id),
        b.bind(started_ns)
    );
    Ok(!ids(db, b.on("runs", sql))?.is_empty())
}

/// Whether a run stored unfinished holds less than a copy that is `complete` with `results`
/// results: what `sync` replaces (#35). False when the run is not stored, is complete, or
/// holds as many results.
pub(super) fn holds_less(db: &mut dyn Db, id: &str, complete: bool, results: u64) -> Result<bool> {
    let mut b = Sql::new(db.dialect());
    // PostgreSQL: the run's row locked to the end of the transaction (#44 item 2), so that
    // of two syncs completing it at once the second waits, then finds the first's complete
    // copy (the row it waited for is gone: no answer) instead of deleting what is no longer
    // there. SQLite's write transactions take the whole store already.
    let lock = match db.dialect() {
        Dialect::Postgres => " FOR UPDATE",
        Dialect::Sqlite => "",
    };
    let sql = format!(
        "SELECT (SELECT count(*) FROM results WHERE results.run_id = runs.id) AS n
         FROM runs WHERE id = {} AND complete = 0{lock}",
        b.bind(id)
    );
    Ok(match rows(db, b.on("runs", sql), |r| r.u64("n"))?.pop() {
        None => false,
        Some(n) => complete || results > n,
    })
}

/// The next free position among a run's rows of `table`.
pub(super) fn next_position(db: &mut dyn Db, table: &'static str, run_id: &str) -> Result<i64> {
    let mut b = Sql::new(db.dialect());
    let sql = format!(
        "SELECT COALESCE(MAX(position) + 1, 0) AS next FROM {table} WHERE run_id = {}",
        b.bind(run_id)
    );
    integer(db, b.on(table, sql), "next")
}

/// The run's heartbeat (#35): the time of this write, and what it stored (`at`), so that a
/// run whose writes stopped is told from one still measuring, with where it stopped. Without
/// `at`, the beat alone (#41: `Heartbeat`, between the run's writes), `heartbeat_at` still
/// saying what the last write stored, and only while the run has no end.
pub(super) fn beat(db: &mut dyn Db, id: &str, at: Option<&str>) -> Result<()> {
    let mut b = Sql::new(db.dialect());
    let now = b.bind(super::now_ns());
    let sql = match at {
        Some(at) => format!(
            "UPDATE runs SET heartbeat_ns = {now}, heartbeat_at = {} WHERE id = {}",
            b.bind(at),
            b.bind(id)
        ),
        None => format!(
            "UPDATE runs SET heartbeat_ns = {now} WHERE id = {} AND ended_ns IS NULL",
            b.bind(id)
        ),
    };
    db.execute(&b.on("runs", sql))?;
    Ok(())
}

/// Sets the `disturbed` flag of the results of run `id` from its stored warnings
/// ([`super::disturbed_sql`]), and the run's `points` ([`super::points_sql`]), after a
/// write that changed either.
pub(super) fn mark_disturbed(db: &mut dyn Db, id: &str) -> Result<()> {
    let mut b = Sql::new(db.dialect());
    let sql = super::disturbed_sql(&b.bind(id));
    db.execute(&b.on("results", sql))?;
    // And the run's `points`, which list the flags (migration 15).
    let mut b = Sql::new(db.dialect());
    let sql = super::points_sql(db.dialect(), &b.bind(id));
    db.execute(&b.on("runs", sql))?;
    Ok(())
}

/// Records the end of a run (see `Backend::finish_run`); false when it is not stored.
pub(super) fn end_run(db: &mut dyn Db, run: &crate::model::Run) -> Result<bool> {
    let overhead = run
        .overhead
        .as_ref()
        .map(|o| to_json(o, "the run's overhead"))
        .transpose()?;
    let notes = to_json(&run.notes, "the suites' notes")?;
    let mut b = Sql::new(db.dialect());
    let sql = format!(
        "UPDATE runs SET ended_ns = {}, complete = {}, overhead_json = {}, notes_json = {}
         WHERE id = {}",
        b.bind(run.ended_ns),
        b.bind(run.complete),
        b.bind(overhead),
        b.bind(notes),
        b.bind(run.id.as_str())
    );
    Ok(db.execute(&b.on("runs", sql))? > 0)
}

/// Deletes a run's rows of `table` (at `position` only, when given); how many.
pub(super) fn delete_rows(
    db: &mut dyn Db,
    table: &'static str,
    run_id: &str,
    position: Option<i64>,
) -> Result<u64> {
    let mut b = Sql::new(db.dialect());
    let mut sql = format!("DELETE FROM {table} WHERE run_id = {}", b.bind(run_id));
    if let Some(p) = position {
        sql.push_str(&format!(" AND position = {}", b.bind(p)));
    }
    db.execute(&b.on(table, sql))
}

/// Deletes a run and everything stored for it (the foreign keys cascade); false when there
/// was none.
pub(super) fn delete_run(db: &mut dyn Db, id: &str) -> Result<bool> {
    let mut b = Sql::new(db.dialect());
    let sql = format!("DELETE FROM runs WHERE id = {}", b.bind(id));
    Ok(db.execute(&b.on("runs", sql))? > 0)
}

/// Replaces the variance estimates of one machine (host name, kernel, CPU model).
pub(super) fn put_variance(
    db: &mut dyn Db,
    (host, kernel, cpu): (&str, &str, &str),
    estimates: &[VarianceEstimate],
) -> Result<()> {
    let mut b = Sql::new(db.dialect());
    let sql = format!(
        "DELETE FROM variance WHERE hostname = {} AND kernel_release = {} AND cpu_model = {}",
        b.bind(host),
        b.bind(kernel),
        b.bind(cpu)
    );
    db.execute(&b.on("variance", sql))?;
    for e in estimates {
        let mut b = Sql::new(db.dialect());
        let sql = format!(
            "INSERT INTO variance (hostname, kernel_release, cpu_model, test, within_var,
                 between_var, runs, trials, updated_ns)
             VALUES ({}, {}, {}, {}, {}, {}, {}, {}, {})",
            b.bind(host),
            b.bind(kernel),
            b.bind(cpu),
            b.bind(e.test.as_str()),
            b.bind(e.within_var),
            b.bind(e.between_var),
            b.bind(int_usize(e.runs, "variance runs")?),
            b.bind(int_usize(e.trials, "variance trials")?),
            b.bind(e.updated_ns)
        );
        db.execute(&b.on("variance", sql))?;
    }
    Ok(())
}

/// The variance estimates stored for one machine, by test id.
pub(super) fn variance(
    db: &mut dyn Db,
    (host, kernel, cpu): (&str, &str, &str),
) -> Result<Vec<VarianceEstimate>> {
    let mut b = Sql::new(db.dialect());
    let sql = format!(
        "SELECT test, within_var, between_var, runs, trials, updated_ns FROM variance
         WHERE hostname = {} AND kernel_release = {} AND cpu_model = {} ORDER BY test",
        b.bind(host),
        b.bind(kernel),
        b.bind(cpu)
    );
    rows(db, b.on("variance", sql), |r| {
        Ok(VarianceEstimate {
            test: r.text("test")?,
            within_var: r.f64("within_var")?,
            between_var: r.f64("between_var")?,
            runs: r.usize("runs")?,
            trials: r.usize("trials")?,
            updated_ns: r.i64("updated_ns")?,
            ..Default::default()
        })
    })
}

/// The kernel profiles stored with a run, in the order they were added.
pub(super) fn profiles(db: &mut dyn Db, run_id: &str) -> Result<Vec<Profile>> {
    let mut b = Sql::new(db.dialect());
    let sql = format!(
        "SELECT profile_json FROM profiles WHERE run_id = {} ORDER BY position",
        b.bind(run_id)
    );
    rows(db, b.on("profiles", sql), |r| r.json("profile_json"))
}

/// Every stored benchmark profile (`sysperf run --profile`), newest run first.
pub(super) fn benchmark_profiles(db: &mut dyn Db) -> Result<Vec<Profile>> {
    let sql = "SELECT p.profile_json FROM profiles p JOIN runs r ON r.id = p.run_id
               ORDER BY r.started_ns DESC, r.seq DESC, p.position";
    let q = Sql::new(db.dialect()).on("profiles", sql.into());
    rows(db, q, |r| r.json("profile_json"))
}

/// Stores a system profile under `p.id` (the caller makes the id, as for runs).
pub(super) fn save_observation(db: &mut dyn Db, p: &SystemProfile) -> Result<()> {
    let mut b = Sql::new(db.dialect());
    let sql = format!(
        "INSERT INTO observations (id, kind, label, started_ns, wall_ns, hostname,
             kernel_release, sysperf_version, observation_json)
         VALUES ({}, {}, {}, {}, {}, {}, {}, {}, {})",
        b.bind(p.id.as_str()),
        b.bind(SYSTEM_PROFILE_KIND),
        b.bind(p.label.as_deref()),
        b.bind(p.started_ns),
        b.bind(super::int(p.wall_ns, "an observation's duration")?),
        b.bind(p.hostname.as_deref()),
        b.bind(p.kernel_release.as_deref()),
        b.bind(p.sysperf_version.as_str()),
        b.bind(to_json(p, "a system profile")?)
    );
    db.execute(&b.on("observations", sql))?;
    Ok(())
}

/// Stores a trace of one benchmark under `t.id`, among the observations (kind `trace`).
pub(super) fn save_trace(db: &mut dyn Db, t: &StoredTrace) -> Result<()> {
    let mut b = Sql::new(db.dialect());
    let sql = format!(
        "INSERT INTO observations (id, kind, label, started_ns, wall_ns, hostname,
             kernel_release, sysperf_version, observation_json)
         VALUES ({}, {}, {}, {}, {}, {}, {}, {}, {})",
        b.bind(t.id.as_str()),
        b.bind(TRACE_KIND),
        b.bind(t.label.as_deref()),
        b.bind(t.started_ns),
        b.bind(super::int(t.wall_ns, "a trace's duration")?),
        b.bind(t.fingerprint.hostname.as_deref()),
        b.bind(t.fingerprint.kernel_release.as_deref()),
        b.bind(t.sysperf_version.as_str()),
        b.bind(to_json(t, "a trace")?)
    );
    db.execute(&b.on("observations", sql))?;
    Ok(())
}

/// The stored traces, newest first: of `bench` when given, else all.
pub(super) fn traces(db: &mut dyn Db, bench: Option<&str>) -> Result<Vec<StoredTrace>> {
    let mut b = Sql::new(db.dialect());
    let sql = format!(
        "SELECT observation_json FROM observations WHERE kind = {} {NEWEST}",
        b.bind(TRACE_KIND)
    );
    let all: Vec<StoredTrace> = rows(db, b.on("observations", sql), |r| {
        r.json("observation_json")
    })?;
    Ok(all
        .into_iter()
        .filter(|t| bench.is_none_or(|b| t.bench == b))
        .collect())
}

/// Every stored observation, newest first.
pub(super) fn list_observations(db: &mut dyn Db) -> Result<Vec<ObservationInfo>> {
    let sql = format!(
        "SELECT id, kind, label, started_ns, wall_ns, hostname, kernel_release
         FROM observations {NEWEST}"
    );
    let q = Sql::new(db.dialect()).on("observations", sql);
    rows(db, q, |r| {
        Ok(ObservationInfo {
            id: r.text("id")?,
            kind: r.text("kind")?,
            label: r.opt_text("label")?,
            started_ns: r.i64("started_ns")?,
            wall_ns: r.u64("wall_ns")?,
            hostname: r.opt_text("hostname")?,
            kernel_release: r.opt_text("kernel_release")?,
        })
    })
}

/// The stored observation `id`.
pub(super) fn load_observation(db: &mut dyn Db, id: &str) -> Result<SystemProfile> {
    let mut b = Sql::new(db.dialect());
    let sql = format!(
        "SELECT observation_json FROM observations WHERE id = {} AND kind = {}",
        b.bind(id),
        b.bind(SYSTEM_PROFILE_KIND)
    );
    rows(db, b.on("observations", sql), |r| {
        r.json("observation_json")
    })?
    .pop()
    .ok_or_else(|| StoreError::NoSuchRun {
        spec: id.to_string(),
    })
}

/// The stored observation `id` of either kind, as the store keeps it.
pub(super) fn load_any_observation(db: &mut dyn Db, id: &str) -> Result<Observation> {
    let mut b = Sql::new(db.dialect());
    let sql = format!(
        "SELECT kind, observation_json FROM observations WHERE id = {}",
        b.bind(id)
    );
    rows(db, b.on("observations", sql), |r| {
        let kind = r.text("kind")?;
        Ok(match kind.as_str() {
            TRACE_KIND => Observation::Trace(Box::new(r.json("observation_json")?)),
            SYSTEM_PROFILE_KIND => {
                Observation::SystemProfile(Box::new(r.json("observation_json")?))
            }
            other => {
                return Err(StoreError::Corrupt(format!(
                    "observation {id} is of an unknown kind '{other}'"
                )))
            }
        })
    })?
    .pop()
    .ok_or_else(|| StoreError::NoSuchRun {
        spec: id.to_string(),
    })
}

/// Whether an observation `id` (of either kind) is stored.
pub(super) fn observation_exists(db: &mut dyn Db, id: &str) -> Result<bool> {
    let mut b = Sql::new(db.dialect());
    let sql = format!("SELECT id FROM observations WHERE id = {}", b.bind(id));
    Ok(!ids(db, b.on("observations", sql))?.is_empty())
}

/// Stores `o` under its id, as `trace --store` or `profile --system` would have.
pub(super) fn save_any_observation(db: &mut dyn Db, o: &Observation) -> Result<()> {
    match o {
        Observation::Trace(t) => save_trace(db, t),
        Observation::SystemProfile(p) => save_observation(db, p),
    }
}

/// Deletes an observation; false when there was none with that id.
pub(super) fn remove_observation(db: &mut dyn Db, id: &str) -> Result<bool> {
    let mut b = Sql::new(db.dialect());
    let sql = format!("DELETE FROM observations WHERE id = {}", b.bind(id));
    Ok(db.execute(&b.on("observations", sql))? > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What differs between the dialects is said by the dialect, in the same SQL.
    #[test]
    fn one_query_reads_in_either_dialect() {
        let q = |d| machine(d, Some("h"), None, 30).unwrap();
        let (lite, pg) = (q(Dialect::Sqlite), q(Dialect::Postgres));
        assert!(lite.sql.contains("hostname IS ?1 AND kernel_release IS ?2"));
        assert!(lite.sql.contains("LIMIT ?3"), "{}", lite.sql);
        assert!(pg.sql.contains(
            "hostname IS NOT DISTINCT FROM $1 AND kernel_release IS NOT DISTINCT FROM $2"
        ));
        assert!(pg.sql.contains("LIMIT $3"), "{}", pg.sql);
        assert_eq!(lite.params, pg.params);
        assert_eq!(
            lite.params,
            [
                Param::Text(Some("h".into())),
                Param::Text(None),
                Param::Int(Some(30))
            ]
        );
        let p = prefix(Dialect::Postgres, "runs", "abcd");
        assert!(
            p.sql
                .contains(r#"id COLLATE "C" >= $1 AND id COLLATE "C" < $1 || 'g'"#),
            "{}",
            p.sql
        );
        let query = RunQuery {
            conds: vec![Cond::Cpu("EPYC".into()), Cond::Kernel("6.1".into())],
            since_ns: Some(5),
            limit: None,
            complete_only: true,
        };
        let mut b = Sql::new(Dialect::Postgres);
        let where_ = clause(&mut b, &query);
        assert!(
            where_.contains("strpos(lower(cpu_model), $2) > 0"),
            "{where_}"
        );
        assert!(where_.contains("length($1) + 1"), "{where_}");
        assert!(where_.contains("started_ns >= $3"), "{where_}");
        assert!(!where_.contains('?'), "{where_}");
        let mut b = Sql::new(Dialect::Sqlite);
        let where_ = clause(&mut b, &query);
        assert!(
            where_.contains("instr(lower(cpu_model), ?2) > 0"),
            "{where_}"
        );
        assert!(!where_.contains('$'), "{where_}");
    }
}
