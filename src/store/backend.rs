//! One store interface, two backends: [`Backend`] is every operation the commands use on a
//! store, each written once, on the connection and the transaction that the embedded SQLite
//! [`super::Store`] (the default) and the shared PostgreSQL store ([`super::pg::PgStore`], for
//! a fleet of machines writing to one place) provide; a backend writes only what it does
//! differently (how it reads a run, where a write goes when its server is away).
//!
//! [`Location`] tells the two apart from what the user typed in `--db` or `SYSPERF_DB`: a
//! `postgres://` (or `postgresql://`) URL is PostgreSQL and is never taken for a file name;
//! any other `scheme://` is refused; everything else is an SQLite file path. A URL's password
//! never leaves this module in a message: [`Location`]'s `Display` hides it.
//!
//! It is not the CLI's choice of store (see `catalog`) and holds no SQL of its own (see
//! `query.rs` and `write.rs`).

use super::query::{self, Db, Kind};
use super::write::{self, RunSink, RunWrite, Sink};
use super::{
    GcReport, GroupBy, GroupCount, Histories, ObservationInfo, RunInfo, RunMachine, RunQuery,
    StoreError,
};
use crate::model::{
    BenchResult, Observation, Profile, Run, Series, StoredTrace, SystemProfile, VarianceEstimate,
    Warning,
};
use std::path::{Path, PathBuf};

type Result<T, E = StoreError> = std::result::Result<T, E>;

/// The operations of a store of runs, each written once here on what a backend provides:
/// a connection to read through ([`Backend::read`]) and a transaction to write in
/// ([`Backend::write`]). Every write is one transaction; a run is saved as it goes
/// ([`Backend::begin_run`], [`Backend::put_result`] per round, [`Backend::finish_run`]), so
/// that a run killed midway stays stored, marked incomplete. See the documentation of
/// [`super::Store`] for how warnings and derived figures of incremental runs are kept.
pub trait Backend {
    /// Runs `op` on a connection to the store, to read it (PostgreSQL: run again on a new
    /// connection when the connection is lost).
    fn read(&self, op: &mut dyn FnMut(&mut dyn Db) -> Result<()>) -> Result<()>;

    /// Runs `op` in one write transaction, then commits: its statements on the transaction,
    /// the rows it builds in the SQLite connection, which is the transaction itself on
    /// SQLite and a scratch database on PostgreSQL, uploaded by [`Db::flush`] and at the end.
    /// `op` may be run again from its start (PostgreSQL retries a transaction whose
    /// connection was lost).
    fn write(
        &self,
        op: &mut dyn FnMut(&mut dyn Db, &rusqlite::Connection) -> Result<()>,
    ) -> Result<()>;

    /// Runs by their exact ids, in that order ([`StoreError::NoSuchRun`] if one is not
    /// stored), each read whole in one snapshot (PostgreSQL reads them together, one query
    /// per table rather than per run).
    fn load_runs(&self, ids: &[&str]) -> Result<Vec<Run>>;

    /// Where the store is, for messages (a URL without its password).
    fn location(&self) -> Location;

    /// Gives the space of removed runs back to the file system.
    fn gc(&self) -> Result<GcReport>;

    /// Whether this process may only read the store.
    /// Whether this is a shared store that could not be reached, standing in by a spool file
    /// for the run being measured (#35): nothing can be uploaded to it now.
    fn is_away(&self) -> bool {
        false
    }

    fn is_read_only(&self) -> bool {
        false
    }

    /// What this shared store is, for a spool file to find it whatever URL reached it
    /// (#44 item 1); None for a store that is a file.
    fn identity(&self) -> Option<Identity> {
        None
    }

    /// Says what this process is writing, so that a writer kept waiting can name it (a store
    /// with one writer at a time; PostgreSQL has no such wait).
    fn announce(&self, _work: &str) -> Result<()> {
        Ok(())
    }

    /// One write to the run being measured, in one transaction.
    fn write_run(&self, w: RunWrite<'_>) -> Result<()> {
        self.write(&mut |db, lite| w.store(db, lite))
    }

    /// The heartbeat of the run `run_id` being measured, nothing else written (#41): what
    /// [`super::Heartbeat`] stores every few seconds between the run's own writes.
    fn beat(&self, run_id: &str) -> Result<()> {
        self.write(&mut |db, _| query::beat(db, run_id, None))
    }

    /// Stores the start of a run, marked incomplete, with what it already holds.
    fn begin_run(&self, run: &Run) -> Result<()> {
        self.write_run(RunWrite::Begin(run))
    }

    /// Appends one finished benchmark and the warnings it raised to a stored run. Keep
    /// `warnings` in `run.warnings` too: [`Backend::finish_run`] replaces the stored warnings
    /// with those.
    fn add_result(&self, run_id: &str, result: &BenchResult, warnings: &[Warning]) -> Result<()> {
        self.write_run(RunWrite::AddResult {
            run_id,
            result,
            warnings,
        })
    }

    /// Writes `result` at `position` among the run's results, replacing what an earlier
    /// snapshot of it wrote there: the engine stores every benchmark after each round of
    /// trials. Warnings are left to [`Backend::finish_run`].
    fn put_result(&self, run_id: &str, position: usize, result: &BenchResult) -> Result<()> {
        self.write_run(RunWrite::PutResult {
            run_id,
            position,
            result,
        })
    }

    /// Records the end of a run: `ended_ns`, `complete`, `overhead` and `notes` from `run`,
    /// and the run's derived figures and warnings replaced by `run.derived` and
    /// `run.warnings`. Results are not touched. An interrupted run may be finished too, with
    /// `complete` false, to keep its end time.
    fn finish_run(&self, run: &Run) -> Result<()> {
        self.write_run(RunWrite::Finish(run))
    }

    /// Appends a kernel profile to a stored run (`sysperf run --profile`).
    fn add_profile(&self, run_id: &str, profile: &Profile) -> Result<()> {
        self.write_run(RunWrite::Profile { run_id, profile })
    }

    /// Appends one measured series of a suite to a stored run (`sysperf run --suite`), so
    /// that an interrupted suite keeps the curves it finished.
    fn add_series(&self, run_id: &str, series: &Series) -> Result<()> {
        self.write_run(RunWrite::Series { run_id, series })
    }

    /// Stores whole runs, each new one with its profiles (`profiles[i]` are those of
    /// `runs[i]`), in one transaction: all the new ones, or (on any error) none; for each
    /// run, whether it was stored (false: its id was already there, also earlier in `runs`).
    fn save_runs_with_profiles(
        &self,
        runs: &[Run],
        profiles: &[Vec<Profile>],
    ) -> Result<Vec<bool>> {
        writing(self, |db, lite| write::save_runs(db, lite, runs, profiles))
    }

    /// Of the runs `ids`, those stored: id, whether complete, and how many results.
    fn extents(&self, ids: &[&str]) -> Result<Vec<(String, bool, u64)>> {
        reading(self, |db| query::extents(db, ids))
    }

    /// The runs `query` matches, counted per value of `by` by the database (#35).
    fn count_groups(&self, query: &RunQuery, by: GroupBy) -> Result<Vec<GroupCount>> {
        reading(self, |db| query::count_groups(db, query, by))
    }

    /// The ids of the newest `per_group` runs `query` matches of each value of `by`, newest
    /// first, chosen by the database (#35).
    fn newest_per_group(
        &self,
        query: &RunQuery,
        by: GroupBy,
        per_group: usize,
    ) -> Result<Vec<String>> {
        reading(self, |db| query::newest_per_group(db, query, by, per_group))
    }

    /// The history of each (host, test, placement, options) among the complete measured runs
    /// `query` matches, oldest first, the newest `newest` runs of each, and the results of
    /// `ab` sides and quick runs left out (`sysperf changes`, #35, #42).
    fn test_histories(&self, query: &RunQuery, newest: usize) -> Result<Histories> {
        reading(self, |db| query::test_histories(db, query, newest))
    }

    /// What the stored runs among `ids` were measured on and by, without their results.
    fn run_machines(&self, ids: &[&str]) -> Result<Vec<RunMachine>> {
        reading(self, |db| query::run_machines(db, ids))
    }

    /// Stores `run` with its profiles in place of the stored copy of it that is unfinished
    /// and holds less (fewer results, or `run` is complete), deleted and stored in one
    /// transaction (#35; `sync`, completing a run from a spool file); whether it did: false
    /// when the stored copy is complete or whole by now (another writer completed it), or
    /// gone.
    fn replace_run(&self, run: &Run, profiles: &[Profile]) -> Result<bool> {
        let results = run.results.len() as u64;
        writing(self, |db, lite| {
            if !query::holds_less(db, &run.id, run.complete, results)? {
                return Ok(false);
            }
            remove(db, &run.id)?;
            let saved =
                write::save_runs(db, lite, std::slice::from_ref(run), &[profiles.to_vec()])?;
            Ok(saved.first().copied().unwrap_or(false))
        })
    }

    /// Stores the runs `feed` hands to its [`RunSink`], one at a time as `feed` reads them
    /// (an import of thousands of runs is never held in memory), all in one transaction: when
    /// `feed` fails, nothing is stored. `feed` may be called again from its start (PostgreSQL
    /// retries a transaction whose connection was lost), so it must hand over everything
    /// each time and forget what an earlier call handed.
    fn import_runs(&self, feed: &mut dyn FnMut(&mut dyn RunSink) -> Result<()>) -> Result<()> {
        self.write(&mut |db, lite| {
            let mut sink = Sink::new(db, lite);
            feed(&mut sink)?;
            sink.flush()
        })
    }

    /// [`Backend::save_runs_with_profiles`] without profiles.
    fn save_runs(&self, runs: &[Run]) -> Result<Vec<bool>> {
        self.save_runs_with_profiles(runs, &[])
    }

    /// Stores one whole run; false, writing nothing, when its id is already stored.
    fn save_run(&self, run: &Run) -> Result<bool> {
        Ok(self
            .save_runs(std::slice::from_ref(run))?
            .first()
            .copied()
            .unwrap_or(false))
    }

    /// A run by its exact id: results in the order they were added, trials in the order
    /// they ran.
    fn load_run(&self, id: &str) -> Result<Run> {
        self.load_runs(&[id])?
            .pop()
            .ok_or_else(|| StoreError::NoSuchRun { spec: id.into() })
    }

    /// Every stored run, newest first.
    fn list_runs(&self) -> Result<Vec<RunInfo>> {
        self.query_runs(&RunQuery::default())
    }

    /// The stored runs `query` matches, newest first.
    fn query_runs(&self, query: &RunQuery) -> Result<Vec<RunInfo>> {
        reading(self, |db| query::query_runs(db, query))
    }

    /// How many stored runs `query` matches, its limit aside.
    fn count_runs(&self, query: &RunQuery) -> Result<u64> {
        reading(self, |db| query::count_runs(db, query))
    }

    /// What the user typed (`latest`, an id, an id prefix, a label) as a run id (see
    /// [`query::resolve`]).
    fn resolve(&self, spec: &str) -> Result<String> {
        reading(self, |db| query::resolve(db, Kind::Run, spec))?.run(spec)
    }

    /// The observation `spec` names (id, unique id prefix, label), or None (it may name a run).
    fn resolve_observation(&self, spec: &str) -> Result<Option<String>> {
        reading(self, |db| query::resolve(db, Kind::Observation, spec))?.observation(spec)
    }

    /// The ids of the runs carrying `label`, newest first.
    fn labelled(&self, label: &str) -> Result<Vec<String>> {
        reading(self, |db| query::runs_labelled(db, label))
    }

    /// The complete measured runs of one machine (host, kernel), newest first, at most
    /// `limit`: through the machine's index, however many runs other machines have.
    fn machine_runs(
        &self,
        host: Option<&str>,
        kernel: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>> {
        reading(self, |db| query::machine_runs(db, host, kernel, limit))
    }

    /// Replaces the variance estimates of one machine (host name, kernel, CPU model).
    fn put_variance(
        &self,
        machine: (&str, &str, &str),
        estimates: &[VarianceEstimate],
    ) -> Result<()> {
        self.write(&mut |db, _| query::put_variance(db, machine, estimates))
    }

    /// The variance estimates stored for one machine, by test id.
    fn variance(&self, machine: (&str, &str, &str)) -> Result<Vec<VarianceEstimate>> {
        reading(self, |db| query::variance(db, machine))
    }

    /// The kernel profiles stored with a run, in the order they were added.
    fn load_profiles(&self, run_id: &str) -> Result<Vec<Profile>> {
        reading(self, |db| query::profiles(db, run_id))
    }

    /// Every stored benchmark profile (`run --profile`), newest run first.
    fn benchmark_profiles(&self) -> Result<Vec<Profile>> {
        reading(self, query::benchmark_profiles)
    }

    /// Deletes a run and everything stored for it.
    fn remove_run(&self, id: &str) -> Result<()> {
        self.write(&mut |db, _| remove(db, id))
    }

    /// Stores an observation of the whole machine (`profile --system`) under `p.id`.
    fn save_observation(&self, p: &SystemProfile) -> Result<()> {
        self.write(&mut |db, _| query::save_observation(db, p))
    }

    /// Stores a trace of one benchmark (`trace --store`) under `t.id`, among the observations.
    fn save_trace(&self, t: &StoredTrace) -> Result<()> {
        self.write(&mut |db, _| query::save_trace(db, t))
    }

    /// The stored traces, newest first: of `bench` when given, else all.
    fn traces(&self, bench: Option<&str>) -> Result<Vec<StoredTrace>> {
        reading(self, |db| query::traces(db, bench))
    }

    /// Every stored observation, newest first.
    fn list_observations(&self) -> Result<Vec<ObservationInfo>> {
        reading(self, query::list_observations)
    }

    /// The stored observation `id`.
    fn load_observation(&self, id: &str) -> Result<SystemProfile> {
        reading(self, |db| query::load_observation(db, id))
    }

    /// The stored observation `id` of either kind (a trace or a system profile), as stored.
    fn load_any_observation(&self, id: &str) -> Result<Observation> {
        reading(self, |db| query::load_any_observation(db, id))
    }

    /// Whether an observation of exactly this id is stored.
    fn has_observation(&self, id: &str) -> Result<bool> {
        reading(self, |db| query::observation_exists(db, id))
    }

    /// Deletes an observation; false when there was none with that id.
    fn remove_observation(&self, id: &str) -> Result<bool> {
        writing(self, |db, _| query::remove_observation(db, id))
    }
}

/// Deletes the run `id`, or says there is none.
pub(super) fn remove(db: &mut dyn Db, id: &str) -> Result<()> {
    if query::delete_run(db, id)? {
        Ok(())
    } else {
        Err(StoreError::NoSuchRun { spec: id.into() })
    }
}

/// What `op` answers, read through [`Backend::read`].
fn reading<B, T>(store: &B, mut op: impl FnMut(&mut dyn Db) -> Result<T>) -> Result<T>
where
    B: Backend + ?Sized,
{
    let mut out = None;
    store.read(&mut |db| {
        out = Some(op(db)?);
        Ok(())
    })?;
    out.ok_or_else(answered_nothing)
}

/// What `op` answers, written through [`Backend::write`].
fn writing<B, T>(
    store: &B,
    mut op: impl FnMut(&mut dyn Db, &rusqlite::Connection) -> Result<T>,
) -> Result<T>
where
    B: Backend + ?Sized,
{
    let mut out = None;
    store.write(&mut |db, lite| {
        out = Some(op(db, lite)?);
        Ok(())
    })?;
    out.ok_or_else(answered_nothing)
}

/// A backend that returned success without running the operation: a programming error,
/// reported rather than panicking.
fn answered_nothing() -> StoreError {
    StoreError::Corrupt("internal: the store did not run the operation".into())
}

/// What a PostgreSQL store is (#44 item 1), as a spool file records it (`ID.dest`) and an
/// upload matches it: by the store the server says it is when that is known, else by where
/// the URL leads, never by the URL's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// Where the URL leads ([`super::pgurl::PgUrl::target`]): addresses, ports, database.
    pub target: String,
    /// What the server says: the store id kept in the database, the cluster's system
    /// identifier, its port and the database's name (`ID SYSTEM:PORT/DATABASE`); None when
    /// the store was never reached (or holds no schema yet).
    pub store: Option<String>,
}

impl Identity {
    /// What a spool's destination file (`ID.dest`) says: its first line the store's URL as
    /// shown, then a `target ...` line and, when the store was reached, a `store ...` line;
    /// the file of an older sysperf (the URL alone) by where that URL leads. None when it
    /// names no PostgreSQL URL sysperf can read.
    pub fn from_dest(text: &str) -> Option<Identity> {
        let mut lines = text.lines().map(str::trim);
        let shown = lines.next()?;
        let (mut target, mut store) = (None, None);
        for line in lines {
            match line.split_once(' ') {
                Some(("target", t)) => target = Some(t.to_string()),
                Some(("store", s)) => store = Some(s.to_string()),
                _ => {}
            }
        }
        let target = match target {
            Some(t) => t,
            None => super::pgurl::PgUrl::parse(shown).ok()?.target(),
        };
        Some(Identity { target, store })
    }

    /// Whether a spool file made for `self` belongs in the store `here`: the same store when
    /// both know what the server said (a spool that knows its store is never uploaded to a
    /// store that cannot say it is that one), else the same target.
    pub fn belongs_in(&self, here: &Identity) -> bool {
        match (&self.store, &here.store) {
            (Some(a), Some(b)) => a == b,
            (Some(_), None) => false,
            (None, _) => self.target == here.target,
        }
    }
}

/// Where a store is: an SQLite file or a PostgreSQL database.
#[derive(Clone, PartialEq, Eq)]
pub enum Location {
    Sqlite(PathBuf),
    /// A `postgres://` URL, kept whole (password included) to connect; shown without it.
    Postgres(String),
}

impl std::fmt::Debug for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self}")
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // What a URL sysperf cannot read was taken for (a message about it): without
            // its password.
            Location::Sqlite(p) if p.to_string_lossy().contains("://") => {
                f.write_str(&redact(&p.to_string_lossy()))
            }
            Location::Sqlite(p) => write!(f, "{}", p.display()),
            Location::Postgres(url) => f.write_str(&redact(url)),
        }
    }
}

/// The URL schemes that name a PostgreSQL store.
const PG_SCHEMES: [&str; 2] = ["postgres://", "postgresql://"];

impl Location {
    /// What `--db` or `SYSPERF_DB` says: a PostgreSQL URL, else an SQLite file path. A URL of
    /// any other scheme is a [`StoreError::BadUrl`] (a user error), not a file name.
    pub fn parse(text: &Path) -> Result<Location> {
        let s = text.to_string_lossy();
        let lower = s.to_ascii_lowercase();
        if let Some(scheme) = PG_SCHEMES.iter().find(|p| lower.starts_with(*p)) {
            // The scheme in lower case, as the driver wants it.
            let s = format!("{scheme}{}", &s[scheme.len()..]);
            super::pgurl::PgUrl::parse(&s)?;
            return Ok(Location::Postgres(s));
        }
        if let Some((scheme, _)) = s.split_once("://") {
            if !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            {
                return Err(StoreError::BadUrl {
                    url: redact(&s),
                    why: format!(
                        "'{scheme}://' URLs are not supported; give an SQLite file path or a \
                         postgres://USER@HOST:PORT/DATABASE URL"
                    ),
                });
            }
        }
        Ok(Location::Sqlite(text.to_path_buf()))
    }

    /// The sslmode of a PostgreSQL store reached over TCP (the URL's, else `PGSSLMODE`'s,
    /// else `prefer`), for `doctor` to say when the server's certificate is not checked to
    /// name its host; None for an SQLite file, or a store reached by a unix socket only (which
    /// never uses TLS), or a URL sysperf cannot read.
    pub fn tcp_sslmode(&self) -> Option<&'static str> {
        let Location::Postgres(url) = self else {
            return None;
        };
        let url = super::pgurl::PgUrl::parse(url).ok()?;
        let tcp = !url.config.get_hostaddrs().is_empty()
            || url
                .config
                .get_hosts()
                .iter()
                .any(|h| matches!(h, tokio_postgres::config::Host::Tcp(_)));
        tcp.then(|| url.sslmode.name())
    }

    /// The SQLite file, if this is one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Location::Sqlite(p) => Some(p),
            Location::Postgres(_) => None,
        }
    }
}

/// A URL with its password replaced by `***` (`postgres://u:***@h/db`), also one given as a
/// `password=` query parameter or written where the driver does not expect it.
pub fn redact(url: &str) -> String {
    super::pgurl::redact(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_paths_are_told_apart() {
        let p = |s: &str| Location::parse(Path::new(s));
        assert!(matches!(
            p("postgres://u@h:5433/db"),
            Ok(Location::Postgres(_))
        ));
        assert!(matches!(
            p("POSTGRESQL://u@h/db"),
            Ok(Location::Postgres(_))
        ));
        for other in ["mysql://u@h/db", "http://h/x", "sqlite://x.db"] {
            let e = p(other).unwrap_err();
            assert!(e.is_user_error(), "{other}");
            assert!(e.to_string().contains("are not supported"), "{e}");
        }
        for path in ["x.db", "./postgres/x.db", "/tmp/a b.db", "postgres:x.db"] {
            assert_eq!(p(path).unwrap(), Location::Sqlite(PathBuf::from(path)));
        }
    }

    /// #44 item 1: a spool is matched by the store the server said it is, else by where its
    /// URL leads; a destination file of an older sysperf (the URL alone) by the latter.
    #[test]
    fn a_spool_belongs_in_its_store_however_the_url_is_spelled() {
        let made = Identity::from_dest(
            "postgres://bob@db.lab/sp5\ntarget db.lab:5432/sp5\nstore abc 7713:5432/sp5\n",
        )
        .unwrap();
        let here = |target: &str, store: Option<&str>| Identity {
            target: target.into(),
            store: store.map(String::from),
        };
        // The same store reached through its socket: another target, the same store.
        assert!(made.belongs_in(&here("/run/postgresql:5432/sp5", Some("abc 7713:5432/sp5"))));
        // A database made again under the same name is another store.
        assert!(!made.belongs_in(&here("db.lab:5432/sp5", Some("def 7713:5432/sp5"))));
        assert!(!made.belongs_in(&here("db.lab:5432/sp5", None)));
        let old = Identity::from_dest("postgres://bob:***@DB.lab:5432/sp5\n").unwrap();
        assert_eq!(old.target, "db.lab:5432/sp5");
        assert_eq!(old.store, None);
        assert!(old.belongs_in(&here("db.lab:5432/sp5", Some("abc 7713:5432/sp5"))));
        assert!(!old.belongs_in(&here("db.lab:5432/other", Some("abc 7713:5432/other"))));
        assert_eq!(Identity::from_dest(""), None);
        assert_eq!(Identity::from_dest("/not/a/url\n"), None);
    }

    #[test]
    fn passwords_are_never_shown() {
        let url = "postgres://bob:s3cret@db.example:5433/runs?password=s3cret&sslmode=disable";
        let shown = Location::Postgres(url.into()).to_string();
        assert!(!shown.contains("s3cret"), "{shown}");
        assert_eq!(
            shown,
            "postgres://bob:***@db.example:5433/runs?password=***&sslmode=disable"
        );
        assert_eq!(format!("{:?}", Location::Postgres(url.into())), shown);
        assert_eq!(redact("postgres://bob@h/db"), "postgres://bob@h/db");
        let e = Location::parse(Path::new("mysql://bob:s3cret@h/db")).unwrap_err();
        assert!(!e.to_string().contains("s3cret"), "{e}");
        // What a URL sysperf refused is shown as (a message wrapping the refusal) hides it too.
        for text in [
            "mysql://bob:s3cret@h/db",
            "postgres://bob:s3/cret@h:notaport/db",
        ] {
            let shown = Location::Sqlite(PathBuf::from(text)).to_string();
            assert!(!shown.contains("cret"), "{shown}");
            assert!(shown.contains("bob:***@"), "{shown}");
        }
    }
}
