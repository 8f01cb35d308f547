//! `sysperf export` and `sysperf import` as whole operations: the runs (and stored
//! observations) named by the user written as one export, streamed (a few runs in memory at
//! a time, however many there are); export files read into the store, all checked before anything is stored, then stored in
//! one transaction. The format, its checks and the streaming reader and writer are the rest of
//! `exchange`; where the bytes go (a file written without following links, or standard output
//! made inert for a terminal) is the caller's.

use super::{stream_file, ExchangeError, ExportWriter, Head, Streamed};
use crate::catalog::{self, Catalog, CatalogError};
use crate::model::Run;
use crate::reference;
use crate::store::StoreError;
use std::collections::HashSet;
use std::io::Write;
use std::path::PathBuf;

/// Runs [`export_to`] loads from the store at a time: memory holds this many, not every run.
const EXPORT_BATCH: usize = 32;

/// Why an export or an import stopped.
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Exchange(#[from] ExchangeError),
    /// A file of an import that is not a good export (a read error names the file already).
    #[error("importing {}", .path.display())]
    Importing {
        path: PathBuf,
        #[source]
        source: ExchangeError,
    },
    /// Storing the checked runs failed; the transaction stored none of them.
    #[error("saving the imported runs (nothing was stored)")]
    Saving(#[source] StoreError),
    #[error("internal: run {0} was not loaded")]
    NotLoaded(String),
}

impl crate::error::Exit for TransferError {
    fn exit_code(&self) -> i32 {
        match self {
            TransferError::Catalog(e) => e.exit_code(),
            TransferError::Store(e) | TransferError::Saving(e) => e.exit_code(),
            TransferError::Exchange(e) | TransferError::Importing { source: e, .. } => {
                e.exit_code()
            }
            TransferError::NotLoaded(_) => crate::exit::FAILURE,
        }
    }
}

/// One run of an export as it was named: a built-in reference run, or a stored run's id.
#[derive(Debug)]
enum Named {
    Reference(Box<Run>),
    Stored(String),
}

/// The runs and observations an export holds, every name resolved before anything is loaded
/// or written (a typo costs nothing), each once however often it was named ('latest' and its
/// own id).
#[derive(Debug)]
pub struct ExportList {
    named: Vec<Named>,
    /// Stored observations (traces, system profiles), by id, in the order named.
    observations: Vec<String>,
}

impl ExportList {
    /// Resolves `specs` (ids, id prefixes, labels of one run or of a group, `latest`, reference
    /// runs' names; a name that is no run's but a stored observation's, as `show` and `rm`
    /// take it, names the observation).
    pub fn resolve(catalog: &mut Catalog, specs: &[String]) -> Result<ExportList, CatalogError> {
        let mut named = Vec::with_capacity(specs.len());
        let mut observations = Vec::new();
        let mut seen = HashSet::new();
        for spec in specs {
            if let Some(id) = catalog.find_observation(spec)? {
                if !observations.contains(&id) {
                    observations.push(id);
                }
                continue;
            }
            // A label names every run that carries it (`Catalog::named_runs`).
            let found = match reference::find(spec)? {
                Some(r) => vec![(r.id.clone(), Named::Reference(Box::new(r.clone())))],
                None => catalog
                    .named_runs(spec)?
                    .into_iter()
                    .map(|id| (id.clone(), Named::Stored(id)))
                    .collect(),
            };
            for (id, one) in found {
                if seen.insert(id) {
                    named.push(one);
                }
            }
        }
        Ok(ExportList {
            named,
            observations,
        })
    }

    /// How many runs the export holds.
    pub fn len(&self) -> usize {
        self.named.len()
    }

    /// How many stored observations the export holds.
    pub fn observations(&self) -> usize {
        self.observations.len()
    }

    /// Whether it holds neither runs nor observations.
    pub fn is_empty(&self) -> bool {
        self.named.is_empty() && self.observations.is_empty()
    }
}

/// Writes the runs of `list` to `out` as one export, loading them a few at a time from the
/// catalog's store (which resolved them) and checking each as it is written; then the kernel
/// profiles stored with each measured run (`run --profile`): everything a run has goes with it;
/// then the stored observations named, one at a time, as stored.
pub fn export_to(
    list: &ExportList,
    catalog: &mut Catalog,
    out: &mut dyn Write,
) -> Result<(), TransferError> {
    let mut w = ExportWriter::new(out)?;
    let mut ids = Vec::with_capacity(list.len());
    // A few runs loaded at a time (PostgreSQL reads them together), written one by one.
    for chunk in list.named.chunks(EXPORT_BATCH) {
        let stored: Vec<&str> = chunk
            .iter()
            .filter_map(|n| match n {
                Named::Stored(id) => Some(id.as_str()),
                Named::Reference(_) => None,
            })
            .collect();
        let mut loaded = if stored.is_empty() {
            Vec::new()
        } else {
            catalog.store()?.load_runs(&stored)?
        }
        .into_iter();
        for n in chunk {
            let run = match n {
                Named::Reference(r) => (**r).clone(),
                Named::Stored(id) => loaded
                    .next()
                    .ok_or_else(|| TransferError::NotLoaded(id.clone()))?,
            };
            w.run(&run)?;
            ids.push((run.id.clone(), run.source == "published"));
        }
    }
    ids.sort();
    for (id, published) in &ids {
        if !published {
            let profiles = catalog.store()?.load_profiles(id)?;
            w.profiles(id, &profiles)?;
        }
    }
    for id in &list.observations {
        let o = catalog.store()?.load_any_observation(id)?;
        w.observation(&o)?;
    }
    w.finish()?;
    Ok(())
}

/// Reads export `files` into the store `db` names (created if needed) and says, one line per
/// run or observation, what became of it (`imported ID (LABEL) from FILE`, `imported trace ID
/// (LABEL) from FILE`, `already present: ID`, `already present: trace ID`).
///
/// Every file is read and checked before the store is opened, so a bad file leaves the store
/// as it was (not even created), keeping only each run's id and label; then the files are read
/// again, run by run, and the runs saved in one transaction. One run is held in memory at a
/// time, however many the files hold. A run already stored is skipped, and so are the
/// profiles that came with it; so is an observation whose id is stored. The observations are
/// stored in the same transaction as the runs.
pub fn import_files(files: &[PathBuf], db: Option<&PathBuf>) -> Result<String, TransferError> {
    let mut heads: Vec<Head> = Vec::new();
    let mut batches = Vec::with_capacity(files.len());
    for path in files {
        let before = heads.len();
        stream_file(path, &mut |item| -> Result<(), TransferError> {
            match item {
                Streamed::Run(run) => {
                    catalog::check_importable_run(heads.len(), &run)?;
                    heads.push(Head::of_run(&run));
                }
                Streamed::Observation(o) => {
                    catalog::check_importable_observation(&o)?;
                    heads.push(Head::of_observation(&o));
                }
                Streamed::Profiles { .. } => {}
            }
            Ok(())
        })
        .map_err(|e| match e {
            // A read error names the file already; other problems get it as context.
            TransferError::Exchange(e @ ExchangeError::Read { .. }) => TransferError::Exchange(e),
            TransferError::Exchange(source) => TransferError::Importing {
                path: path.clone(),
                source,
            },
            e => e,
        })?;
        batches.push((path, heads.len() - before));
    }
    let store = catalog::open_store(db)?;
    // One long transaction: a writer that waits for it can say who holds the store.
    store.announce("sysperf import")?;
    let mut saved: Vec<bool> = Vec::with_capacity(heads.len());
    store
        .import_runs(&mut |sink| {
            // Called again from the start if PostgreSQL's connection is lost midway.
            saved.clear();
            let mut new = HashSet::new();
            for path in files {
                stream_file(path, &mut |item| -> Result<(), Fed> {
                    match item {
                        Streamed::Run(run) => {
                            let stored = sink.run(&run)?;
                            if stored {
                                new.insert(run.id);
                            }
                            saved.push(stored);
                        }
                        Streamed::Profiles { id, profiles } => {
                            if new.contains(&id) {
                                sink.profiles(&id, &profiles)?;
                            }
                        }
                        Streamed::Observation(o) => saved.push(sink.observation(&o)?),
                    }
                    Ok(())
                })
                .map_err(|e| match e {
                    Fed::Store(e) => e,
                    Fed::File(e) => {
                        StoreError::Feed(format!("importing {} again: {e}", path.display()))
                    }
                })?;
            }
            Ok(())
        })
        .map_err(TransferError::Saving)?;
    Ok(super::import_lines(&batches, heads.iter(), &saved))
}

/// Why [`import_files`]' second reading of a file stopped: the store, or the file itself
/// (changed since it was checked).
enum Fed {
    Store(StoreError),
    File(ExchangeError),
}

impl From<ExchangeError> for Fed {
    fn from(e: ExchangeError) -> Fed {
        Fed::File(e)
    }
}

impl From<StoreError> for Fed {
    fn from(e: StoreError) -> Fed {
        Fed::Store(e)
    }
}
