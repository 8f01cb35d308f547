//! The store's writes, written once for both backends. Each takes the store's transaction
//! ([`Db`]: its statements, such as "is this run stored?" and "delete these rows") and an
//! SQLite connection `lite` in which the SQLite code builds the rows it adds: on SQLite the
//! same transaction; on PostgreSQL a scratch database whose rows [`Db::flush`] uploads, so
//! that both backends encode a run alike.
//!
//! [`RunWrite`] is a write to the run being measured, with what it does to the run kept in
//! memory (PostgreSQL keeps one, for the spool file); [`Sink`] stores whole runs as an import
//! or a sync hands them over.
//!
//! [`Heartbeat`] beats a run being measured between its writes (#41), from a thread of its own.
//!
//! It is not where a backend's transaction is begun, retried or committed (`Backend::write`).

use super::query::{self, Db};
use super::{insert_derived, insert_profile, insert_result, insert_run, insert_series};
use super::{insert_warnings, int_usize, Result, StoreError};
use crate::model::{BenchResult, Observation, Profile, Run, Series, Warning};
use rusqlite::Connection;
use std::collections::HashSet;

/// A write to the run being measured: a run is saved as it goes, so that a run killed
/// midway stays stored, marked incomplete. See the documentation of `Store` for how
/// warnings and derived figures of incremental runs are kept.
#[derive(Debug, Clone, Copy)]
pub enum RunWrite<'a> {
    /// The start of a run, marked incomplete whatever `run.complete` says, with what it
    /// already holds.
    Begin(&'a Run),
    /// One finished benchmark and the warnings it raised, after those stored.
    AddResult {
        run_id: &'a str,
        result: &'a BenchResult,
        warnings: &'a [Warning],
    },
    /// A benchmark at `position` among the run's results, replacing an earlier snapshot.
    PutResult {
        run_id: &'a str,
        position: usize,
        result: &'a BenchResult,
    },
    /// The end of a run: `ended_ns`, `complete`, `overhead` and `notes`, and the run's
    /// derived figures and warnings replaced by the run's.
    Finish(&'a Run),
    /// A kernel profile, after the run's others.
    Profile {
        run_id: &'a str,
        profile: &'a Profile,
    },
    /// One measured series of a suite, after the run's others.
    Series { run_id: &'a str, series: &'a Series },
}

impl RunWrite<'_> {
    /// The run written to.
    pub fn run_id(&self) -> &str {
        match *self {
            RunWrite::Begin(run) | RunWrite::Finish(run) => &run.id,
            RunWrite::AddResult { run_id, .. }
            | RunWrite::PutResult { run_id, .. }
            | RunWrite::Profile { run_id, .. }
            | RunWrite::Series { run_id, .. } => run_id,
        }
    }

    /// What the write does to the run (and its profiles) kept in memory: the run as stored
    /// after it.
    pub(super) fn apply(&self, run: &mut Run, profiles: &mut Vec<Profile>) {
        match *self {
            RunWrite::Begin(start) => {
                *run = Run {
                    complete: false,
                    ..start.clone()
                };
                profiles.clear();
            }
            RunWrite::AddResult {
                result, warnings, ..
            } => {
                run.results.push(result.clone());
                run.warnings.extend_from_slice(warnings);
            }
            RunWrite::PutResult {
                position, result, ..
            } => match run.results.get_mut(position) {
                Some(slot) => *slot = result.clone(),
                None => run.results.push(result.clone()),
            },
            RunWrite::Finish(end) => {
                run.ended_ns = end.ended_ns;
                run.complete = end.complete;
                run.overhead = end.overhead;
                run.notes = end.notes.clone();
                run.derived = end.derived.clone();
                run.warnings = end.warnings.clone();
            }
            RunWrite::Profile { profile, .. } => profiles.push(profile.clone()),
            RunWrite::Series { series, .. } => run.series.push(series.clone()),
        }
    }

    /// Stores the write: statements on `db`, rows built in `lite`.
    pub(super) fn store(&self, db: &mut dyn Db, lite: &Connection) -> Result<()> {
        let id = self.run_id();
        if let RunWrite::Begin(run) = *self {
            insert_run(lite, run, false)?;
            return mark_writer(lite, &run.id);
        }
        if let RunWrite::Finish(run) = *self {
            if !query::end_run(db, run)? {
                return Err(no_such_run(id));
            }
            query::delete_rows(db, "derived", id, None)?;
            query::delete_rows(db, "warnings", id, None)?;
            insert_derived(lite, id, &run.derived)?;
            insert_warnings(lite, id, 0, &run.warnings)?;
            return disturbed(db, lite, id);
        }
        if !query::run_exists(db, id)? {
            return Err(no_such_run(id));
        }
        query::beat(db, id, Some(&self.what()))?;
        match *self {
            RunWrite::AddResult {
                result, warnings, ..
            } => {
                let position = query::next_position(db, "results", id)?;
                insert_result(lite, id, position, result)?;
                let first = query::next_position(db, "warnings", id)?;
                insert_warnings(lite, id, first, warnings)?;
                disturbed(db, lite, id)
            }
            RunWrite::PutResult {
                position, result, ..
            } => {
                let position = int_usize(position, "a result's position")?;
                query::delete_rows(db, "results", id, Some(position))?;
                insert_result(lite, id, position, result)?;
                disturbed(db, lite, id)
            }
            RunWrite::Profile { profile, .. } => {
                let position = query::next_position(db, "profiles", id)?;
                insert_profile(lite, id, position, profile)
            }
            RunWrite::Series { series, .. } => {
                let first = query::next_position(db, "series", id)?;
                insert_series(lite, id, first, std::slice::from_ref(series))
            }
            RunWrite::Begin(_) | RunWrite::Finish(_) => Ok(()),
        }
    }
}

impl RunWrite<'_> {
    /// What the write stores, in words: where a run that stops after it stopped.
    fn what(&self) -> String {
        match *self {
            RunWrite::AddResult { result, .. } | RunWrite::PutResult { result, .. } => {
                let n = (result.trials.iter())
                    .filter(|t| t.kind == crate::model::TrialKind::Measured)
                    .count();
                let s = if n == 1 { "" } else { "s" };
                format!("{} after {n} counted trial{s}", result.id)
            }
            RunWrite::Profile { profile, .. } => format!("profiling {}", profile.bench),
            RunWrite::Series { series, .. } => format!("series {}", series.id),
            RunWrite::Begin(_) => "start".into(),
            RunWrite::Finish(_) => "end".into(),
        }
    }
}

/// Sets the `disturbed` flag of run `id`'s results (#44) once the rows this write built in
/// `lite` are in the store: a result and the warning that names it may come in different
/// writes (a warning of the whole run at its end, a result's snapshot after its warning).
fn disturbed(db: &mut dyn Db, lite: &Connection, id: &str) -> Result<()> {
    db.flush(lite)?;
    query::mark_disturbed(db, id)
}

/// Records this process as the writer of the run `id` just begun in `lite` (#41): while it
/// runs on this machine, `gc --abandoned` leaves the run alone, however long it is silent.
/// Only at the run's start: a run copied in by `import` or `sync` keeps no writer.
fn mark_writer(lite: &Connection, id: &str) -> Result<()> {
    let Some(me) = crate::procfs::ProcessMark::this_process() else {
        return Ok(());
    };
    lite.execute(
        "UPDATE runs SET writer_json = ?1 WHERE id = ?2",
        rusqlite::params![super::to_json(&me, "the run's writer")?, id],
    )?;
    Ok(())
}

fn no_such_run(id: &str) -> StoreError {
    StoreError::NoSuchRun {
        spec: id.to_string(),
    }
}

/// How often a run being measured beats (#41): a run silent for a few beats is not being
/// measured, or its host cannot reach the store.
pub const BEAT_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// The heartbeat of the runs being measured (#41): a thread of the measuring process that
/// stores their heartbeat every [`BEAT_EVERY`], on a connection of its own, from their begin
/// until it is dropped. The run's own writes (one per round) leave it silent for as long as
/// a phase lasts: a calibration to `--min-time 10`, a long trial, a profile. It runs in the
/// parent, never in a benchmark's worker, and wakes once per beat for one small write, not
/// synced to disk (SQLite; `Backend::beat`): the harness's own wait for a worker wakes every
/// 100 ms.
pub struct Heartbeat {
    stop: Option<std::sync::mpsc::Sender<()>>,
}

impl Heartbeat {
    /// Beats the runs `ids` of the store at `at` until dropped. A beat that fails (the store
    /// busy, the server away) is tried again at the next: the run's own writes say what is
    /// wrong with the store.
    pub fn start(at: super::Location, ids: Vec<String>) -> Heartbeat {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let beats = move || {
            let mut store = None;
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                stopped.recv_timeout(BEAT_EVERY)
            {
                if store.is_none() {
                    store = super::open_at(&at, super::Access::Write).ok();
                }
                if let Some(s) = &store {
                    for id in &ids {
                        let _ = s.beat(id);
                    }
                }
            }
        };
        // Without a thread the run beats with its writes only, as before #41.
        let started = std::thread::Builder::new()
            .name("sysperf-heartbeat".into())
            .spawn(beats);
        Heartbeat {
            stop: started.is_ok().then_some(stop),
        }
    }
}

impl Drop for Heartbeat {
    /// Stops the beats. Not joined: a beat under way (PostgreSQL retries a lost connection
    /// for a minute) must not hold up the run's end; a beat after it changes nothing, a run
    /// with an end not being beaten (`query::beat`).
    fn drop(&mut self) {
        self.stop.take();
    }
}

/// Where `Backend::import_runs` stores runs, inside its transaction.
pub trait RunSink {
    /// Stores `run`, unless its id is already stored (also by this transaction); whether it
    /// was stored.
    fn run(&mut self, run: &Run) -> Result<bool>;
    /// Stores kernel profiles of a run this sink stored, after those it has.
    fn profiles(&mut self, run_id: &str, profiles: &[Profile]) -> Result<()>;
    /// Stores an observation (a trace, a system profile) under its id, unless an observation
    /// of that id is already stored (also by this transaction); whether it was stored.
    fn observation(&mut self, o: &Observation) -> Result<bool>;
}

/// Runs a [`Sink`] builds before it moves them into the store: a few at a time in
/// PostgreSQL's scratch database, never a whole import.
const BATCH: usize = 64;

/// Where whole runs go, in one write transaction: `sysperf import` and `sync`.
pub(super) struct Sink<'t> {
    db: &'t mut dyn Db,
    lite: &'t Connection,
    /// The runs built in `lite` and not yet moved into the store.
    pending: HashSet<String>,
}

impl<'t> Sink<'t> {
    pub(super) fn new(db: &'t mut dyn Db, lite: &'t Connection) -> Self {
        Sink {
            db,
            lite,
            pending: HashSet::new(),
        }
    }

    /// Moves the runs built so far into the store.
    pub(super) fn flush(&mut self) -> Result<()> {
        self.db.flush(self.lite)?;
        self.pending.clear();
        Ok(())
    }
}

impl RunSink for Sink<'_> {
    fn run(&mut self, run: &Run) -> Result<bool> {
        if self.pending.contains(&run.id) || query::run_exists(self.db, &run.id)? {
            return Ok(false);
        }
        insert_run(self.lite, run, run.complete)?;
        self.pending.insert(run.id.clone());
        if self.pending.len() >= BATCH {
            self.flush()?;
        }
        Ok(true)
    }

    fn profiles(&mut self, run_id: &str, profiles: &[Profile]) -> Result<()> {
        if profiles.is_empty() {
            return Ok(());
        }
        // The run first (it may be among those built), then its profiles after those it has.
        self.flush()?;
        let first = query::next_position(self.db, "profiles", run_id)?;
        for (i, p) in profiles.iter().enumerate() {
            let position = first + int_usize(i, "a profile's position")?;
            insert_profile(self.lite, run_id, position, p)?;
        }
        Ok(())
    }

    fn observation(&mut self, o: &Observation) -> Result<bool> {
        // Observations are rows of their own, written straight to the transaction: they
        // refer to no run, so the runs built in `lite` need not be moved first.
        if query::observation_exists(self.db, o.id())? {
            return Ok(false);
        }
        query::save_any_observation(self.db, o)?;
        Ok(true)
    }
}

/// Stores the new ones among `runs`, each with its profiles (`profiles[i]` are those of
/// `runs[i]`; missing entries: none); for each run, whether it was stored (false when its id
/// was there already, also earlier in `runs`).
pub(super) fn save_runs(
    db: &mut dyn Db,
    lite: &Connection,
    runs: &[Run],
    profiles: &[Vec<Profile>],
) -> Result<Vec<bool>> {
    let mut sink = Sink::new(db, lite);
    let mut saved = Vec::with_capacity(runs.len());
    for (i, run) in runs.iter().enumerate() {
        let new = sink.run(run)?;
        if new {
            sink.profiles(&run.id, profiles.get(i).map_or(&[], Vec::as_slice))?;
        }
        saved.push(new);
    }
    Ok(saved)
}
