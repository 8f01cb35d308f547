//! One store interface, two backends: [`Backend`] is every operation the commands use on a
//! store, implemented by the embedded SQLite [`Store`] (the default) and by the shared
//! PostgreSQL store ([`super::pg::PgStore`], for a fleet of machines writing to one place).
//!
//! [`Location`] tells the two apart from what the user typed in `--db` or `SYSPERF_DB`: a
//! `postgres://` (or `postgresql://`) URL is PostgreSQL and is never taken for a file name;
//! any other `scheme://` is refused; everything else is an SQLite file path. A URL's password
//! never leaves this module in a message: [`Location`]'s `Display` hides it.
//!
//! It is not the CLI's choice of store (see `catalog`) and holds no SQL of its own.

use super::{GcReport, ObservationInfo, RunInfo, RunQuery, Store, StoreError};
use crate::model::SystemProfile;
use crate::model::{BenchResult, Run, Series, VarianceEstimate, Warning};
use std::path::{Path, PathBuf};

type Result<T, E = StoreError> = std::result::Result<T, E>;

/// The operations of a store of runs. Every write is one transaction; a run is saved as it
/// goes ([`Backend::begin_run`], [`Backend::put_result`] per round, [`Backend::finish_run`]),
/// so that a run killed midway stays stored, marked incomplete. See the documentation of
/// [`Store`] for how warnings and derived figures of incremental runs are kept.
pub trait Backend {
    /// Stores the start of a run, marked incomplete, with what it already holds.
    fn begin_run(&self, run: &Run) -> Result<()>;
    /// Appends one finished benchmark and the warnings it raised to a stored run.
    fn add_result(&self, run_id: &str, result: &BenchResult, warnings: &[Warning]) -> Result<()>;
    /// Writes `result` at `position` among the run's results, replacing an earlier snapshot.
    fn put_result(&self, run_id: &str, position: usize, result: &BenchResult) -> Result<()>;
    /// Records the end of a run (see [`Store::finish_run`]).
    fn finish_run(&self, run: &Run) -> Result<()>;
    /// Stores whole runs, each new one with its profiles, in one transaction; for each run,
    /// whether it was stored (false: its id was already there).
    fn save_runs_with_profiles(
        &self,
        runs: &[Run],
        profiles: &[Vec<crate::model::Profile>],
    ) -> Result<Vec<bool>>;
    /// Stores the runs `feed` hands to its [`RunSink`], one at a time as `feed` reads them
    /// (an import of thousands of runs is never held in memory), all in one transaction: when
    /// `feed` fails, nothing is stored. `feed` may be called again from its start (PostgreSQL
    /// retries a transaction whose connection was lost), so it must hand over everything
    /// each time and forget what an earlier call handed.
    fn import_runs(&self, feed: &mut dyn FnMut(&mut dyn RunSink) -> Result<()>) -> Result<()>;
    /// A run by its exact id.
    fn load_run(&self, id: &str) -> Result<Run>;
    /// Runs by their exact ids, in that order ([`StoreError::NoSuchRun`] if one is not
    /// stored): PostgreSQL reads them together, one query per table rather than per run.
    fn load_runs(&self, ids: &[&str]) -> Result<Vec<Run>> {
        ids.iter().map(|id| self.load_run(id)).collect()
    }
    /// Every stored run, newest first.
    fn list_runs(&self) -> Result<Vec<RunInfo>>;
    /// What the user typed (`latest`, an id, an id prefix, a label) as a run id.
    fn resolve(&self, spec: &str) -> Result<String>;
    /// Replaces the variance estimates of one machine (host name, kernel, CPU model).
    fn put_variance(
        &self,
        machine: (&str, &str, &str),
        estimates: &[VarianceEstimate],
    ) -> Result<()>;
    /// The variance estimates stored for one machine, by test id.
    fn variance(&self, machine: (&str, &str, &str)) -> Result<Vec<VarianceEstimate>>;
    /// The ids of the runs carrying `label`, newest first.
    fn labelled(&self, label: &str) -> Result<Vec<String>>;
    /// Appends a kernel profile to a stored run.
    fn add_profile(&self, run_id: &str, profile: &crate::model::Profile) -> Result<()>;
    /// Appends one measured series of a suite to a stored run.
    fn add_series(&self, run_id: &str, series: &Series) -> Result<()>;
    /// The kernel profiles stored with a run, in the order they were added.
    fn load_profiles(&self, run_id: &str) -> Result<Vec<crate::model::Profile>>;
    /// Deletes a run and everything stored for it.
    fn remove_run(&self, id: &str) -> Result<()>;
    /// Whether this process may only read the store.
    fn is_read_only(&self) -> bool;
    /// Where the store is, for messages (a URL without its password).
    fn location(&self) -> Location;
    /// Stores an observation of the whole machine (`profile --system`) under `p.id`.
    fn save_observation(&self, p: &SystemProfile) -> Result<()>;
    /// Every stored observation, newest first.
    fn list_observations(&self) -> Result<Vec<ObservationInfo>>;
    /// The observation `spec` names (id, unique id prefix, label), or None (it may name a run).
    fn resolve_observation(&self, spec: &str) -> Result<Option<String>>;
    /// The stored observation `id`.
    fn load_observation(&self, id: &str) -> Result<SystemProfile>;
    /// Deletes an observation; false when there was none with that id.
    fn remove_observation(&self, id: &str) -> Result<bool>;
    /// Every stored benchmark profile (`run --profile`), newest run first.
    fn benchmark_profiles(&self) -> Result<Vec<crate::model::Profile>>;
    /// The stored runs `query` matches, newest first.
    fn query_runs(&self, query: &RunQuery) -> Result<Vec<RunInfo>>;
    /// How many stored runs `query` matches, its limit aside.
    fn count_runs(&self, query: &RunQuery) -> Result<u64>;
    /// The complete measured runs of one machine (host, kernel), newest first, at most `limit`.
    fn machine_runs(
        &self,
        host: Option<&str>,
        kernel: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>>;
    /// Says what this process is writing, so that a writer kept waiting can name it (a store
    /// with one writer at a time; PostgreSQL has no such wait).
    fn announce(&self, work: &str) -> Result<()>;
    /// Gives the space of removed runs back to the file system.
    fn gc(&self) -> Result<GcReport>;

    /// [`Backend::save_runs_with_profiles`] without profiles.
    fn save_runs(&self, runs: &[Run]) -> Result<Vec<bool>> {
        self.save_runs_with_profiles(runs, &[])
    }

    /// Stores one whole run; false, writing nothing, when its id is already stored.
    fn save_run(&self, run: &Run) -> Result<bool> {
        Ok(self
            .save_runs_with_profiles(std::slice::from_ref(run), &[])?
            .first()
            .copied()
            .unwrap_or(false))
    }
}

/// Where [`Backend::import_runs`] stores runs, inside its transaction.
pub trait RunSink {
    /// Stores `run`, unless its id is already stored (also by this transaction); whether it
    /// was stored.
    fn run(&mut self, run: &Run) -> Result<bool>;
    /// Stores kernel profiles of a run this sink stored, after those it has.
    fn profiles(&mut self, run_id: &str, profiles: &[crate::model::Profile]) -> Result<()>;
}

impl Backend for Store {
    fn begin_run(&self, run: &Run) -> Result<()> {
        Store::begin_run(self, run)
    }
    fn add_result(&self, run_id: &str, result: &BenchResult, warnings: &[Warning]) -> Result<()> {
        Store::add_result(self, run_id, result, warnings)
    }
    fn put_result(&self, run_id: &str, position: usize, result: &BenchResult) -> Result<()> {
        Store::put_result(self, run_id, position, result)
    }
    fn finish_run(&self, run: &Run) -> Result<()> {
        Store::finish_run(self, run)
    }
    fn save_runs_with_profiles(
        &self,
        runs: &[Run],
        profiles: &[Vec<crate::model::Profile>],
    ) -> Result<Vec<bool>> {
        Store::save_runs_with_profiles(self, runs, profiles)
    }
    fn import_runs(&self, feed: &mut dyn FnMut(&mut dyn RunSink) -> Result<()>) -> Result<()> {
        Store::import_runs(self, feed)
    }
    fn load_run(&self, id: &str) -> Result<Run> {
        Store::load_run(self, id)
    }
    fn list_runs(&self) -> Result<Vec<RunInfo>> {
        Store::list_runs(self)
    }
    fn resolve(&self, spec: &str) -> Result<String> {
        Store::resolve(self, spec)
    }
    fn put_variance(
        &self,
        machine: (&str, &str, &str),
        estimates: &[VarianceEstimate],
    ) -> Result<()> {
        Store::put_variance(self, machine, estimates)
    }
    fn variance(&self, machine: (&str, &str, &str)) -> Result<Vec<VarianceEstimate>> {
        Store::variance(self, machine)
    }
    fn labelled(&self, label: &str) -> Result<Vec<String>> {
        Store::labelled(self, label)
    }
    fn add_profile(&self, run_id: &str, profile: &crate::model::Profile) -> Result<()> {
        Store::add_profile(self, run_id, profile)
    }
    fn add_series(&self, run_id: &str, series: &Series) -> Result<()> {
        Store::add_series(self, run_id, series)
    }
    fn load_profiles(&self, run_id: &str) -> Result<Vec<crate::model::Profile>> {
        Store::load_profiles(self, run_id)
    }
    fn remove_run(&self, id: &str) -> Result<()> {
        Store::remove_run(self, id)
    }
    fn is_read_only(&self) -> bool {
        Store::is_read_only(self)
    }
    fn location(&self) -> Location {
        Location::Sqlite(self.path().to_path_buf())
    }
    fn save_observation(&self, p: &SystemProfile) -> Result<()> {
        Store::save_observation(self, p)
    }
    fn list_observations(&self) -> Result<Vec<ObservationInfo>> {
        Store::list_observations(self)
    }
    fn resolve_observation(&self, spec: &str) -> Result<Option<String>> {
        Store::resolve_observation(self, spec)
    }
    fn load_observation(&self, id: &str) -> Result<SystemProfile> {
        Store::load_observation(self, id)
    }
    fn remove_observation(&self, id: &str) -> Result<bool> {
        Store::remove_observation(self, id)
    }
    fn benchmark_profiles(&self) -> Result<Vec<crate::model::Profile>> {
        Store::benchmark_profiles(self)
    }
    fn query_runs(&self, query: &RunQuery) -> Result<Vec<RunInfo>> {
        Store::query_runs(self, query)
    }
    fn count_runs(&self, query: &RunQuery) -> Result<u64> {
        Store::count_runs(self, query)
    }
    fn machine_runs(
        &self,
        host: Option<&str>,
        kernel: Option<&str>,
        limit: usize,
    ) -> Result<Vec<String>> {
        Store::machine_runs(self, host, kernel, limit)
    }
    fn announce(&self, work: &str) -> Result<()> {
        Store::announce(self, work)
    }
    fn gc(&self) -> Result<GcReport> {
        Store::gc(self)
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
