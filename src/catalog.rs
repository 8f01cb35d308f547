//! Finds runs by what the user typed: a built-in reference run's name (or id) first, since
//! those are never stored; then the store, opened on first need, so that comparing reference
//! runs alone touches no database. Also resolves the baseline of `compare`, `report` and `plot`.
//!
//! It is not the store (which it opens) nor a cache: every command makes its own.

use crate::compare::{self, Comparison, Known};
use crate::error::InputError;
use crate::model::{Fingerprint, Run, VarianceEstimate};
use crate::reference;
use crate::store::{self, Access, Backend, Location, StoreError};
use std::path::{Path, PathBuf};

mod lookups;
pub use lookups::{Compared, OBSERVATION_THRESHOLD_POINTS};

/// Why a run could not be found or loaded.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("opening the store {path}")]
    Open {
        path: Location,
        #[source]
        source: StoreError,
    },
    /// A read-only command named a store that does not exist: it is not created.
    #[error("{}there is no store at {} ({}); nothing was created", .spec.as_ref().map(|s| format!("no run matches '{s}': ")).unwrap_or_default(), .path.display(), if *.named { "a mistyped --db or $SYSPERF_DB? 'sysperf run' creates a store where it is told" } else { "nothing has been stored yet; 'sysperf run' makes a run" })]
    NoStore {
        spec: Option<String>,
        path: PathBuf,
        named: bool,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Input(#[from] InputError),
    #[error(transparent)]
    Reference(#[from] reference::ReferenceError),
}

impl CatalogError {
    /// Whether the user's input caused it (exit code 2): a run that does not exist, a bad
    /// name, a store path that is not a usable store.
    pub fn is_user_error(&self) -> bool {
        match self {
            CatalogError::Open { source, .. } | CatalogError::Store(source) => {
                source.is_user_error()
            }
            CatalogError::Input(_) | CatalogError::NoStore { .. } => true,
            CatalogError::Reference(_) => false,
        }
    }

    /// A missing store, said of the run `spec` that was looked for in it ("no run matches").
    pub fn looking_for(self, spec: &str) -> Self {
        match self {
            CatalogError::NoStore { path, named, .. } => CatalogError::NoStore {
                spec: Some(spec.to_string()),
                path,
                named,
            },
            e => e,
        }
    }
}

impl crate::error::Exit for CatalogError {
    fn exit_code(&self) -> i32 {
        crate::error::usage_if(self.is_user_error())
    }
}

/// Refuses imported runs that would shadow or be shadowed by a built-in reference run: an id
/// or label that is a reference run's name or id (an exported reference run among them; the
/// reference runs are part of sysperf, never stored). Names resolve to the built-in run first,
/// so such a run could not be found, and `rm` would disagree with `show` about it.
pub fn check_importable(runs: &[Run]) -> Result<(), CatalogError> {
    runs.iter()
        .enumerate()
        .try_for_each(|(i, r)| check_importable_run(i, r))
}

/// [`check_importable`] of one run, the `i`th (from 0) of an import.
pub fn check_importable_run(i: usize, r: &Run) -> Result<(), CatalogError> {
    let clash = std::iter::once(r.id.as_str())
        .chain(r.label.as_deref())
        .find(|n| reference::is_name(n));
    if let Some(name) = clash {
        return Err(InputError::InvalidValue {
            what: "import",
            value: format!("run {} ({})", i + 1, r.id),
            why: format!(
                "'{name}' is a built-in reference run's name or id; reference runs are part \
                 of sysperf and are not imported (show and compare them by name)"
            ),
        }
        .into());
    }
    Ok(())
}

/// Refuses an imported observation that would be shadowed by a built-in reference run: an id
/// or label that is a reference run's name or id (names resolve to the built-in run first, so
/// it could not be found by it).
pub fn check_importable_observation(o: &crate::model::Observation) -> Result<(), CatalogError> {
    let clash = std::iter::once(o.id())
        .chain(o.label())
        .find(|n| reference::is_name(n));
    if let Some(name) = clash {
        return Err(InputError::InvalidValue {
            what: "import",
            value: format!("{} {}", o.kind_words(), o.id()),
            why: format!(
                "'{name}' is a built-in reference run's name or id; it could not be found by \
                 it (import it from a file with another label)"
            ),
        }
        .into());
    }
    Ok(())
}

/// Stored runs of the baseline's machine that its run-to-run variance is estimated from.
pub const HISTORY_RUNS: usize = 30;

/// Runs of one label a column holds at most: the newest, as many as `run --repeat` makes.
pub const LABEL_GROUP_RUNS: usize = 100;

/// Runs in one `--by` column at most (the newest of its group).
pub const GROUP_RUNS: usize = 30;
/// Runs read from the store in one go where many are loaded (`--by` groups): one query per
/// table for each batch.
const LOAD_BATCH: usize = 64;

/// Columns `--where` without `--by` may give at most (one per run).
pub const MAX_COLUMNS: usize = 30;

/// The store path `--db`, else `$SYSPERF_DB`, else the default names, and whether the user
/// named it.
fn store_path(db: Option<&PathBuf>) -> (PathBuf, bool) {
    let from_env = std::env::var_os("SYSPERF_DB").filter(|v| !v.is_empty());
    let named = db.is_some() || from_env.is_some();
    (db.cloned().unwrap_or_else(store::default_path), named)
}

/// Where the store is ([`store_path`] read as a PostgreSQL URL or a file path), and whether
/// the user named it. A URL of a scheme sysperf does not support, or a PostgreSQL URL it
/// cannot read, is refused here, its error naming it without its password (not wrapped as
/// a file path, which would show the URL whole).
fn store_location(db: Option<&PathBuf>) -> Result<(Location, bool), CatalogError> {
    let (path, named) = store_path(db);
    let location = Location::parse(&path).map_err(CatalogError::Store)?;
    Ok((location, named))
}

/// A path the user named must be a usable file path ([`store::check_named_path`]) before
/// anything is created or opened there.
fn check_named(path: &Path, named: bool) -> Result<(), CatalogError> {
    if named {
        store::check_named_path(path).map_err(|source| CatalogError::Open {
            path: Location::Sqlite(path.to_path_buf()),
            source,
        })?;
    }
    Ok(())
}

/// The sslmode of the store `--db`, `$SYSPERF_DB` or the default path names, when it is a
/// PostgreSQL store reached over TCP ([`Location::tcp_sslmode`]), for `doctor`.
pub fn store_sslmode_over_tcp(db: Option<&PathBuf>) -> Option<&'static str> {
    store_location(db).ok()?.0.tcp_sslmode()
}

/// The store `--db`, `$SYSPERF_DB` or the default path names when it is a shared PostgreSQL
/// store (connected, for `doctor` to upload the spool files waiting for it), else None.
pub fn shared_store(db: Option<&PathBuf>) -> Result<Option<Box<dyn Backend>>, CatalogError> {
    match store_location(db)? {
        (location @ Location::Postgres(_), _) => Ok(Some(open(location, Access::Read)?)),
        _ => Ok(None),
    }
}

/// The store at `location`, opened as `access` says ([`store::open_at`]).
/// A PostgreSQL store, once open, is handed to the hook [`on_opening_a_shared_store`] set
/// (the CLI's: the spool files of this host that wait for it go up, #44 item 4, since
/// nothing else uploads them).
fn open(location: Location, access: Access) -> Result<Box<dyn Backend>, CatalogError> {
    let store = store::open_at(&location, access).map_err(|source| CatalogError::Open {
        path: location,
        source,
    })?;
    if let (Location::Postgres(_), Some(hook)) = (store.location(), ON_OPENING_SHARED.get()) {
        hook(store.as_ref());
    }
    Ok(store)
}

/// What to do with a shared PostgreSQL store as soon as it is open: set once, by the CLI.
static ON_OPENING_SHARED: std::sync::OnceLock<fn(&dyn Backend)> = std::sync::OnceLock::new();

/// Sets what every opening of a shared PostgreSQL store is followed by (the CLI passes
/// `sync::upload_waiting_once`: uploading is a layer above the catalog, so it is given here,
/// not called by name). Only the first call counts.
pub fn on_opening_a_shared_store(hook: fn(&dyn Backend)) {
    let _ = ON_OPENING_SHARED.set(hook);
}

/// [`open_store`] for `run` and `ab`: a shared PostgreSQL store that cannot be reached is
/// waited for, then the runs go into a spool file from their start ([`Access::Measure`]).
pub fn open_store_to_measure(db: Option<&PathBuf>) -> Result<Box<dyn Backend>, CatalogError> {
    let (location, named) = store_location(db)?;
    if let Location::Sqlite(path) = &location {
        check_named(path, named)?;
    }
    open(location, Access::Measure)
}

/// The store named by `--db`, else `$SYSPERF_DB`, else the default path, created if needed;
/// only the default one gets its directories created.
pub fn open_store(db: Option<&PathBuf>) -> Result<Box<dyn Backend>, CatalogError> {
    let (location, named) = store_location(db)?;
    if let Location::Sqlite(path) = &location {
        check_named(path, named)?;
    }
    open(location, Access::Write)
}

/// The store that `--db`, `$SYSPERF_DB` or the default path names, for a command that only
/// reads: checked as [`open_store`] checks it, but never created. A store that does not exist
/// is a [`CatalogError::NoStore`] (a mistyped `--db` must not leave a file or directory behind).
/// A PostgreSQL database is always there (its schema is made on first use).
pub fn open_existing_store(db: Option<&PathBuf>) -> Result<Box<dyn Backend>, CatalogError> {
    let (location, named) = store_location(db)?;
    if let Location::Sqlite(path) = &location {
        check_named(path, named)?;
        if !path.exists() {
            return Err(CatalogError::NoStore {
                spec: None,
                path: path.clone(),
                named,
            });
        }
    }
    open(location, Access::Read)
}

/// An existing store at `location`, for reading ([`Access::Read`]).
pub fn open_location(location: &Location) -> Result<Box<dyn Backend>, CatalogError> {
    open(location.clone(), Access::Read)
}

/// The variance estimates stored for a machine in the store `db` names (or the default one),
/// None when there is no store there (whatever the path): `doctor` looks, but never creates
/// a store, and a store it cannot find is not its error.
pub fn stored_variance(
    db: Option<&PathBuf>,
    fp: &Fingerprint,
) -> Result<Option<Vec<VarianceEstimate>>, CatalogError> {
    let path = match store_location(db)? {
        (Location::Postgres(_), _) => {
            return Ok(Some(open_existing_store(db)?.variance(machine(fp))?));
        }
        (Location::Sqlite(path), _) => path,
    };
    if !path.exists() {
        return Ok(None);
    }
    check_named(&path, true)?;
    let store = open_location(&Location::Sqlite(path))?;
    Ok(Some(store.variance(machine(fp))?))
}

/// The variance components of each test on the machine that made `run`, from its runs in
/// `store` made with the same options, stored there for the machine (replacing what was
/// there, unless there are none yet), for `doctor`: `run` and `noise` call it after their
/// runs; a side of `ab` is never one of them.
pub fn record_variance(
    store: &dyn Backend,
    run: &Run,
) -> Result<Vec<VarianceEstimate>, CatalogError> {
    // A side of `ab` is not a run of the machine as `run` makes it (#30).
    if run.params.ab.is_some() {
        return Ok(Vec::new());
    }
    let history = history_in(store, run, HISTORY_RUNS, &[])?;
    let estimates = compare::machine_variance(&history, crate::harness::unix_ns());
    // The stored estimates are those of the options last run with three runs or more: a
    // run made otherwise, with none of its own yet, leaves them as they are.
    if !estimates.is_empty() {
        store.put_variance(machine(&run.fingerprint), &estimates)?;
    }
    Ok(estimates)
}

/// This machine's run-to-run CV of each test (the component beyond a run's trials), from
/// its runs in `store` made with `params`: what `run --precision` adds to the interval it
/// waits for (#30). Empty when fewer than three such runs are stored.
pub fn run_cv(
    store: &dyn Backend,
    params: &crate::model::RunParams,
) -> Result<std::collections::BTreeMap<String, f64>, CatalogError> {
    let probe = Run {
        id: String::new(),
        label: None,
        started_ns: 0,
        ended_ns: None,
        complete: false,
        sysperf_version: String::new(),
        source: "measured".into(),
        citation: None,
        params: params.clone(),
        fingerprint: crate::fingerprint::collect(),
        overhead: None,
        results: Vec::new(),
        derived: Vec::new(),
        warnings: Vec::new(),
        findings: Vec::new(),
        series: Vec::new(),
        notes: Vec::new(),
    };
    let history = history_in(store, &probe, HISTORY_RUNS, &[])?;
    Ok(compare::run_to_run_cv(&history))
}

/// [`Catalog::history`] in an opened store.
fn history_in(
    store: &dyn Backend,
    run: &Run,
    limit: usize,
    exclude: &[&str],
) -> Result<Vec<Run>, CatalogError> {
    if run.source != "measured" {
        return Ok(Vec::new());
    }
    let fp = &run.fingerprint;
    let mut out = Vec::new();
    // Through the machine's index: the store's other machines are never read. Runs of
    // another CPU model under the same host name and kernel, and runs made with other
    // options or as a side of `ab`, are passed over, so look further than `limit`.
    let ids = store.machine_runs(
        fp.hostname.as_deref(),
        fp.kernel_release.as_deref(),
        limit.saturating_mul(4).saturating_add(exclude.len()),
    )?;
    let ids: Vec<&str> = ids
        .iter()
        .map(String::as_str)
        .filter(|id| !exclude.contains(id))
        .collect();
    // As many runs at a time as are still wanted (PostgreSQL reads them together).
    let mut rest = &ids[..];
    while out.len() < limit && !rest.is_empty() {
        let (now, later) = rest.split_at((limit - out.len()).min(rest.len()));
        rest = later;
        for r in store.load_runs(now)? {
            if r.complete
                && r.source == "measured"
                && r.fingerprint.cpu_model == fp.cpu_model
                && r.params.measures_like(&run.params)
            {
                out.push(r);
            }
        }
    }
    Ok(out)
}

/// The key of a machine's variance: host name, kernel release and CPU model (empty if unknown).
fn machine(fp: &Fingerprint) -> (&str, &str, &str) {
    fn s(v: &Option<String>) -> &str {
        v.as_deref().unwrap_or("")
    }
    (s(&fp.hostname), s(&fp.kernel_release), s(&fp.cpu_model))
}

/// Runs by name, from the reference runs and one store, which is only read: a store that does
/// not exist is not created.
pub struct Catalog {
    db: Option<PathBuf>,
    store: Option<Box<dyn Backend>>,
}

impl Catalog {
    pub fn new(db: Option<PathBuf>) -> Self {
        Catalog { db, store: None }
    }

    /// The store, opened on first use.
    pub fn store(&mut self) -> Result<&dyn Backend, CatalogError> {
        let store = match self.store.take() {
            Some(s) => s,
            None => open_existing_store(self.db.as_ref())?,
        };
        Ok(&**self.store.insert(store))
    }

    /// A run by id, unique id prefix, label, `latest`, or reference name.
    pub fn load(&mut self, spec: &str) -> Result<Run, CatalogError> {
        if let Some(r) = reference::find(spec)? {
            return Ok(r.clone());
        }
        let store = self.store().map_err(|e| e.looking_for(spec))?;
        let id = store.resolve(spec)?;
        Ok(store.load_run(&id)?)
    }

    /// The runs to compare, in the order given, with the baseline (when one is named) first:
    /// named again among the runs, it is the same column, not a second one.
    pub fn load_with_baseline(
        &mut self,
        specs: &[String],
        baseline: Option<&str>,
    ) -> Result<Vec<Run>, CatalogError> {
        let mut specs = specs.to_vec();
        if let Some(b) = baseline {
            specs.insert(0, b.to_string());
        }
        if specs.is_empty() {
            return Err(InputError::NoRuns.into());
        }
        let mut runs = specs
            .iter()
            .map(|s| self.load(s))
            .collect::<Result<Vec<_>, _>>()?;
        if baseline.is_some() {
            let base = runs[0].id.clone();
            let mut seen = false;
            runs.retain(|r| r.id != base || !std::mem::replace(&mut seen, true));
        }
        Ok(runs)
    }

    /// The columns of a comparison: like [`Self::load_with_baseline`], but a label that names
    /// several complete runs (`run --repeat`) is one column holding them, newest first (at
    /// most [`LABEL_GROUP_RUNS`]); an id or `latest` is the one run it names.
    pub fn load_columns(
        &mut self,
        specs: &[String],
        baseline: Option<&str>,
    ) -> Result<Vec<Vec<Run>>, CatalogError> {
        let firsts = self.load_with_baseline(specs, baseline)?;
        // A column is a group only when it was named by its label (`named_runs`, the one rule
        // for names): an id or 'latest' names that one run, even of a labelled group.
        let mut labels = Vec::new();
        for spec in specs.iter().chain(baseline.map(str::to_string).as_ref()) {
            if !reference::is_name(spec) && self.named_runs(spec)?.len() >= 2 {
                labels.push(spec.clone());
            }
        }
        let mut columns = Vec::with_capacity(firsts.len());
        for run in firsts {
            let mut group = Vec::new();
            if let (Some(label), "measured") = (run.label.clone(), run.source.as_str()) {
                if !labels.contains(&label) {
                    columns.push(vec![run]);
                    continue;
                }
                let ids = self.store()?.labelled(&label)?;
                if ids.len() >= 2 {
                    for id in ids {
                        if group.len() >= LABEL_GROUP_RUNS {
                            break;
                        }
                        let r = self.store()?.load_run(&id)?;
                        if r.complete {
                            group.push(r);
                        }
                    }
                }
            }
            if group.len() < 2 {
                group = vec![run];
            }
            columns.push(group);
        }
        Ok(columns)
    }

    /// The columns of a fleet query (`--where`, `--by`): the runs named (a label of several
    /// runs is all of them), or with no RUN every stored complete run, kept when they match
    /// every `--where`; then with `--by` one column per value of the key, its runs newest
    /// first (at most [`GROUP_RUNS`]) and its first run labelled `KEY=VALUE` for the headers;
    /// without it one column per run (at most [`MAX_COLUMNS`]). Without either: as
    /// [`Self::load_columns`].
    pub fn select_columns(
        &mut self,
        specs: &[String],
        baseline: Option<&str>,
        sel: &crate::fleet::Selection,
    ) -> Result<Vec<Vec<Run>>, CatalogError> {
        use crate::fleet::{self, Facts};
        if sel.is_empty() {
            return self.load_columns(specs, baseline);
        }
        let shown = &sel.wheres;
        let none = || {
            CatalogError::from(InputError::InvalidValue {
                what: if shown.is_empty() { "--by" } else { "--where" },
                value: if shown.is_empty() {
                    sel.by.map_or("", |k| k.name()).to_string()
                } else {
                    shown.join(" ")
                },
                why: "no complete stored run matches; 'sysperf runs' lists the runs (with --where KEY=VALUE, those that match)"
                    .into(),
            })
        };
        let runs: Vec<Run> = if specs.is_empty() && baseline.is_none() {
            let mut q = sel.query.clone();
            q.complete_only = true;
            // --by: the newest GROUP_RUNS of each group, chosen by the database rather than
            // by listing every run (#35).
            let store = self.store()?;
            let ids: Vec<String> = match sel.by {
                Some(key) => store.newest_per_group(&q, key.grouped_by(), GROUP_RUNS)?,
                None => store.query_runs(&q)?.into_iter().map(|i| i.id).collect(),
            };
            if ids.len() > MAX_COLUMNS && sel.by.is_none() {
                return Err(InputError::InvalidValue {
                    what: "--where",
                    value: shown.join(" "),
                    why: format!(
                        "{} runs match, one column each is too many (at most {MAX_COLUMNS}); group them with --by KEY or narrow --where",
                        ids.len()
                    ),
                }
                .into());
            }
            // Read together, a few dozen at a time: one query per table rather than per run
            // (120 runs one by one took 960 queries, 250 ms of round trips at 100,000 runs).
            let store = self.store()?;
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            let mut runs = Vec::with_capacity(ids.len());
            for chunk in ids.chunks(LOAD_BATCH) {
                runs.extend(store.load_runs(chunk)?);
            }
            runs
        } else {
            let mut seen = std::collections::HashSet::new();
            self.load_columns(specs, baseline)?
                .into_iter()
                .flatten()
                .filter(|r| seen.insert(r.id.clone()) && sel.matches(Facts::from(r)))
                .collect()
        };
        if runs.is_empty() {
            return Err(none());
        }
        Ok(match sel.by {
            Some(key) => fleet::group(runs, key, |r| key.value_of(Facts::from(r)), GROUP_RUNS)
                .into_iter()
                .map(|(value, mut group)| {
                    group[0].label = Some(format!("{}={value}", key.name()));
                    group
                })
                .collect(),
            None => runs.into_iter().map(|r| vec![r]).collect(),
        })
    }

    /// Earlier runs of the machine that made `run` (same host name, kernel and CPU model),
    /// complete and measured with the same options ([`crate::model::RunParams::measures_like`]:
    /// never a side of `ab`), newest first, at most `limit`: the history from which the
    /// machine's run-to-run variance is estimated. The runs in `exclude` (those judged against
    /// the baseline) are left out, so that a change under judgement is not taken for noise.
    pub fn history(
        &mut self,
        run: &Run,
        limit: usize,
        exclude: &[&str],
    ) -> Result<Vec<Run>, CatalogError> {
        // A published run has no machine to look up: the store is not even opened.
        if run.source != "measured" {
            return Ok(Vec::new());
        }
        let store = self.store()?;
        history_in(store, run, limit, exclude)
    }

    /// The variance components of each test on the machine that made `run`, from its stored
    /// runs (up to [`HISTORY_RUNS`], `run` included), as `show` prints them.
    pub fn machine_variance(&mut self, run: &Run) -> Result<Vec<VarianceEstimate>, CatalogError> {
        if run.source != "measured" {
            return Ok(Vec::new());
        }
        let history = self.history(run, HISTORY_RUNS, &[])?;
        Ok(compare::machine_variance(
            &history,
            crate::harness::unix_ns(),
        ))
    }

    /// The columns named (a label of several runs is a group) and their comparison, with the
    /// run-to-run variance of the baseline's machine from its stored runs. Returns each
    /// column's first run too, for the renderings that draw one run per column.
    pub fn comparison(
        &mut self,
        specs: &[String],
        baseline: Option<&str>,
        noise_pct: f64,
    ) -> Result<(Vec<Run>, Comparison), CatalogError> {
        self.fleet_comparison(specs, baseline, &Default::default(), noise_pct)
    }

    /// [`Self::comparison`] of the columns [`Self::select_columns`] chooses.
    pub fn fleet_comparison(
        &mut self,
        specs: &[String],
        baseline: Option<&str>,
        sel: &crate::fleet::Selection,
        noise_pct: f64,
    ) -> Result<(Vec<Run>, Comparison), CatalogError> {
        let columns = self.select_columns(specs, baseline, sel)?;
        // The history leaves out the runs under judgement, but not the baseline's: each
        // comparison is of a column with the baseline, and the baseline's level is one more
        // draw of the noise the history estimates. Kept in, it is a sitting more (four
        // sittings of groups leave three to estimate from, not two) and the interval only
        // errs wide: a baseline far from its history widens the estimate as it widens the
        // difference (simulated: 3.6% false verdicts at a 5% level with three sittings,
        // against 5.0% leaving it out; the same median width). A column's own runs in the
        // estimate would take its change for noise, so they stay out (#42).
        let compared: Vec<&str> = columns
            .iter()
            .skip(1)
            .flatten()
            .map(|r| r.id.as_str())
            .collect();
        let known = match columns.first().and_then(|c| c.first()) {
            Some(base) => Known::from_history(&self.history(base, HISTORY_RUNS, &compared)?),
            None => Known::default(),
        };
        let refs: Vec<Vec<&Run>> = columns.iter().map(|c| c.iter().collect()).collect();
        let c = compare::build_grouped(&refs, 0, noise_pct, &known);
        let firsts = columns
            .into_iter()
            .filter_map(|c| c.into_iter().next())
            .collect();
        Ok((firsts, c))
    }

    /// The profiles stored with each run (`run --profile`); reference runs have none, and
    /// runs that are all references open no store.
    pub fn profiles(
        &mut self,
        runs: &[Run],
    ) -> Result<Vec<Vec<crate::profile::Profile>>, CatalogError> {
        if runs.iter().all(|r| r.source == "published") {
            return Ok(vec![Vec::new(); runs.len()]);
        }
        let store = self.store()?;
        runs.iter()
            .map(|r| match r.source.as_str() {
                "published" => Ok(Vec::new()),
                _ => store.load_profiles(&r.id).map_err(CatalogError::from),
            })
            .collect()
    }
}
