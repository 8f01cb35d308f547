//! `sysperf sync SRC DST`: copies runs between any two stores (an SQLite file, a PostgreSQL
//! URL), or from an export file, into a store. Run ids are stable, so syncing is idempotent:
//! a run already in DST is not copied again, and a second sync copies nothing. A run that DST
//! holds incomplete (its writer was cut off and finished into another store) is replaced by
//! SRC's complete one (or one with more results), deleted and stored in one transaction.
//! Two syncs into one store at once copy each run once: a run the other stored first counts
//! as already there, and of two completing one unfinished run the second waits for the
//! first, then finds it complete ("completed by another sync", #44 item 2). Each run goes
//! over with everything stored for it (its profiles too) in one transaction of DST, so an
//! interrupted sync leaves whole runs only; the runs go oldest first, so DST lists them in
//! the order SRC does.
//!
//! Stored observations (traces, system profiles: `trace --store`, `profile --system`) go too,
//! from a store or an export file's `observations`, each once (#34): one DST holds already
//! is left as it is, so a second sync copies none.
//!
//! It is not a merge of derived data: DST's variance estimates are its own.
//!
//! Spool files (#35): a run that went into a local spool file when the shared PostgreSQL
//! store stayed away is uploaded by [`upload_waiting`] and its spool file removed once the
//! store holds the run. Nothing uploads it by itself: every command on the host that opens
//! that store does (`run`, `ab`, `doctor`, `runs`, `show`, ...: the CLI has `catalog` call
//! [`upload_waiting_once`], #44 item 4), `sync` into that store at its end, and on a fleet
//! host the playbook's timer, whose scheduled `run` is such a command. A spool file is
//! matched to its store by what the store is ([`Identity`], #44 item 1), not by the URL's
//! text. The spool directory is checked as a store's directory is, and its files are
//! read and removed relative to it, only regular files of this user's (#41 item 4): under
//! `sudo -E` it is below another user's HOME, where `ID.dest` could be a link to /etc/shadow
//! that root's `doctor` printed whole. A refused spool directory is said, and nothing in it
//! is read.

use crate::catalog::{self, CatalogError};
use crate::exchange::{self, ExchangeError};
use crate::model::Run;
use crate::model::{Observation, Profile};
use crate::safedir::Dir;
use crate::store::{self, Backend, Identity, Location, StoreError};
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("there is no store or export file at '{}'; give an SQLite store's path, an export file or a postgres:// URL as SRC", .0.display())]
    NoSource(PathBuf),
    #[error("DST ({0}) is SRC: name two different stores")]
    Same(String),
    #[error("reading the export file {}", .path.display())]
    Exchange {
        path: PathBuf,
        #[source]
        source: ExchangeError,
    },
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error("copying run {id}")]
    Store {
        id: String,
        #[source]
        source: StoreError,
    },
    #[error("copying observation {id}")]
    Observation {
        id: String,
        #[source]
        source: StoreError,
    },
}

impl SyncError {
    /// Whether the user's input caused it (exit code 2).
    pub fn is_user_error(&self) -> bool {
        match self {
            SyncError::NoSource(_) | SyncError::Same(_) => true,
            SyncError::Exchange { source, .. } => source.is_user_error(),
            SyncError::Catalog(e) => e.is_user_error(),
            SyncError::Store { source, .. } | SyncError::Observation { source, .. } => {
                source.is_user_error()
            }
        }
    }
}

impl crate::error::Exit for SyncError {
    fn exit_code(&self) -> i32 {
        crate::error::usage_if(self.is_user_error())
    }
}

/// What a sync did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Synced {
    /// Runs copied into DST (new there).
    pub copied: usize,
    /// Runs DST held incomplete, replaced by SRC's complete ones.
    pub completed: usize,
    /// Runs DST held incomplete that another sync completed while this one was at it
    /// (#44 item 2): DST holds them whole, so this is no failure.
    pub completed_elsewhere: usize,
    /// Runs DST had already.
    pub present: usize,
    /// Stored observations (traces, system profiles) copied into DST, and those it had.
    pub observations_copied: usize,
    pub observations_present: usize,
}

impl Synced {
    /// The one line `sysperf sync` prints.
    pub fn summary(&self, src: &str, dst: &str) -> String {
        let total = self.copied + self.completed + self.completed_elsewhere + self.present;
        let observations = self.observations_copied + self.observations_present;
        if self.copied + self.completed + self.observations_copied == 0 {
            let and = match observations {
                0 => String::new(),
                n => format!(" and {n} observation{}", plural(n)),
            };
            let elsewhere = match self.completed_elsewhere {
                0 => String::new(),
                n => format!(" ({n} completed by another sync)"),
            };
            return format!(
                "nothing to copy: all {total} run{}{and} of {src} are already in {dst}{elsewhere}\n",
                plural(total)
            );
        }
        let and = match self.observations_copied {
            0 => String::new(),
            n => format!(" and {n} observation{}", plural(n)),
        };
        let mut line = format!(
            "copied {} run{}{and} from {src} to {dst}",
            self.copied,
            plural(self.copied)
        );
        if self.completed > 0 {
            line.push_str(&format!(
                ", completed {} run{} {dst} held unfinished",
                self.completed,
                plural(self.completed)
            ));
        }
        if self.completed_elsewhere > 0 {
            line.push_str(&format!(
                "; {} completed by another sync",
                self.completed_elsewhere
            ));
        }
        if self.present > 0 {
            line.push_str(&format!("; {} already there", self.present));
        }
        if self.observations_present > 0 {
            line.push_str(&format!(
                "; {} observation{} already there",
                self.observations_present,
                plural(self.observations_present)
            ));
        }
        line + "\n"
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Where the runs come from.
enum Source {
    Store(Box<dyn Backend>),
    File(exchange::Imported),
}

/// How far a run got: whether it is complete, and the results stored for it.
type Extent = (bool, u64);

impl Source {
    /// The ids of the runs, oldest first, with how far each got.
    fn runs(&self) -> Result<Vec<(String, Extent)>, StoreError> {
        Ok(match self {
            Source::Store(s) => s
                .list_runs()?
                .into_iter()
                .rev()
                .map(|i| (i.id, (i.complete, i.benchmarks)))
                .collect(),
            Source::File(f) => f
                .runs
                .iter()
                .map(|r| (r.id.clone(), (r.complete, r.results.len() as u64)))
                .collect(),
        })
    }

    /// The ids of the stored observations, oldest first.
    fn observations(&self) -> Result<Vec<String>, StoreError> {
        Ok(match self {
            Source::Store(s) => s
                .list_observations()?
                .into_iter()
                .rev()
                .map(|o| o.id)
                .collect(),
            Source::File(f) => f.observations.iter().map(|o| o.id().to_string()).collect(),
        })
    }

    fn load_observation(&self, id: &str) -> Result<Observation, StoreError> {
        match self {
            Source::Store(s) => s.load_any_observation(id),
            Source::File(f) => f
                .observations
                .iter()
                .find(|o| o.id() == id)
                .cloned()
                .ok_or_else(|| StoreError::NoSuchRun {
                    spec: id.to_string(),
                }),
        }
    }

    fn load(&self, id: &str) -> Result<(Run, Vec<Profile>), StoreError> {
        match self {
            Source::Store(s) => Ok((s.load_run(id)?, s.load_profiles(id)?)),
            Source::File(f) => {
                let i = f.runs.iter().position(|r| r.id == id).ok_or_else(|| {
                    StoreError::NoSuchRun {
                        spec: id.to_string(),
                    }
                })?;
                Ok((
                    f.runs[i].clone(),
                    f.profiles.get(i).cloned().unwrap_or_default(),
                ))
            }
        }
    }
}

/// The store or export file `src` names, read only.
fn open_source(src: &Path) -> Result<Source, SyncError> {
    let location = Location::parse(src).map_err(|source| CatalogError::Open {
        path: Location::Sqlite(src.to_path_buf()),
        source,
    })?;
    if let Location::Postgres(_) = location {
        return Ok(Source::Store(catalog::open_location(&location)?));
    }
    let mut head = [0u8; 16];
    // Without waiting: a FIFO with no writer reads as empty here, and is then refused.
    let n = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(src)
    }
    .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
    .map_err(|_| SyncError::NoSource(src.to_path_buf()))?;
    if n == 0 || head.starts_with(b"SQLite format 3\0") {
        let location = Location::Sqlite(src.to_path_buf());
        return Ok(Source::Store(catalog::open_location(&location)?));
    }
    let imported = exchange::import_file(src).map_err(|source| SyncError::Exchange {
        path: src.to_path_buf(),
        source,
    })?;
    catalog::check_importable(&imported.runs)?;
    Ok(Source::File(imported))
}

/// Copies the runs of `src` that `dst` lacks (or holds incomplete) into `dst`, created if
/// needed.
pub fn sync(src: &Path, dst: &Path) -> Result<Synced, SyncError> {
    let parse = |p: &Path| {
        Location::parse(p).map_err(|source| CatalogError::Open {
            path: Location::Sqlite(p.to_path_buf()),
            source,
        })
    };
    let (from, to) = (parse(src)?, parse(dst)?);
    let same = match (&from, &to) {
        (Location::Sqlite(x), Location::Sqlite(y)) => std::fs::canonicalize(x)
            .ok()
            .is_some_and(|x| std::fs::canonicalize(y).ok() == Some(x)),
        _ => from == to,
    };
    if same {
        return Err(SyncError::Same(to.to_string()));
    }
    // Not on opening SRC or DST (a spool file given as SRC is open here): at the end.
    UPLOADED.store(true, Ordering::Relaxed);
    let source = open_source(src)?;
    let to = catalog::open_store(Some(&dst.to_path_buf()))?;
    let done = copy(&source, to.as_ref())?;
    // A spool file given as SRC (and any other waiting for DST) is removed now that DST
    // holds its runs.
    drop(source);
    upload_waiting(Some(to.as_ref()));
    Ok(done)
}

/// Copies the runs of `source` that `to` lacks, or holds less of, into `to`.
fn copy(source: &Source, to: &dyn Backend) -> Result<Synced, SyncError> {
    let wrap = |id: &str| {
        let id = id.to_string();
        move |source| SyncError::Store { id, source }
    };
    let runs = source.runs().map_err(wrap("list"))?;
    // DST is asked about SRC's runs only, never listed whole.
    let ids: Vec<&str> = runs.iter().map(|(id, _)| id.as_str()).collect();
    let have: HashMap<String, Extent> = to
        .extents(&ids)
        .map_err(wrap("list"))?
        .into_iter()
        .map(|(id, complete, n)| (id, (complete, n)))
        .collect();
    let mut done = Synced {
        copied: 0,
        completed: 0,
        completed_elsewhere: 0,
        present: 0,
        observations_copied: 0,
        observations_present: 0,
    };
    for (id, (complete, results)) in runs {
        // A run DST holds unfinished is replaced by a complete one, or by one with more
        // results (a spooled run killed midway holds more than the shared store).
        let replace = match have.get(&id) {
            None => false,
            Some(&(false, had)) if complete || results > had => true,
            Some(_) => {
                done.present += 1;
                continue;
            }
        };
        let (run, profiles) = source.load(&id).map_err(wrap(&id))?;
        // One transaction each. Another sync into DST at the same time may store the same
        // run first: its copy is the same run, so that is "already there", not an error; or
        // complete it first (the replacement waits for it on the run's row, then finds it
        // whole: #44 item 2).
        let stored = if replace {
            to.replace_run(&run, &profiles)
        } else {
            to.save_runs_with_profiles(std::slice::from_ref(&run), &[profiles])
                .map(|saved| saved.first().copied().unwrap_or(false))
        };
        match stored {
            Ok(true) if replace => done.completed += 1,
            Ok(false) if replace => done.completed_elsewhere += 1,
            Err(e) if replace && e.is_duplicate() => done.completed_elsewhere += 1,
            Ok(true) => done.copied += 1,
            Ok(false) => done.present += 1,
            Err(e) if e.is_duplicate() => done.present += 1,
            Err(e) => return Err(wrap(&id)(e)),
        }
    }
    // The observations after the runs, each in its own transaction as a run is: one DST
    // holds (its id stored, by an earlier sync or import) is not read from SRC again.
    let wrap = |id: &str| {
        let id = id.to_string();
        move |source| SyncError::Observation { id, source }
    };
    for id in source.observations().map_err(wrap("list"))? {
        if to.has_observation(&id).map_err(wrap(&id))? {
            done.observations_present += 1;
            continue;
        }
        let o = source.load_observation(&id).map_err(wrap(&id))?;
        let mut stored = false;
        let saved = to.import_runs(&mut |sink| {
            stored = sink.observation(&o)?;
            Ok(())
        });
        // Another sync may store it first: the same observation, "already there".
        match saved {
            Ok(()) if stored => done.observations_copied += 1,
            Ok(()) => done.observations_present += 1,
            Err(e) if e.is_duplicate() => done.observations_present += 1,
            Err(e) => return Err(wrap(&id)(e)),
        }
    }
    Ok(done)
}

/// A spool file of this host: a run that went into a local SQLite store when the shared
/// PostgreSQL store stayed away (#35), waiting for its upload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spooled {
    pub path: PathBuf,
    /// The store it is for, as its location is shown (no password); None when the file that
    /// says so is missing (a spool being made, or one of an older sysperf).
    pub dest: Option<String>,
    /// What that store is (#44 item 1): what the upload matches, not the URL's text.
    pub identity: Option<Identity>,
}

/// The spool files on this host, by name: none when there is no spool directory, an error
/// ([`StoreError::Unsafe`]) when it is one another user controls, whose files are not read.
pub fn waiting() -> Result<Vec<Spooled>, StoreError> {
    Ok(store::open_spool_dir(false)?
        .map(|dir| waiting_in(&dir))
        .unwrap_or_default())
}

/// The longest destination file read: one line naming a store.
const DEST_MAX: u64 = 4096;

/// The spool files in the checked spool directory `dir`: each `ID.db` that is a regular file
/// of this user's, with what its `ID.dest` says when that too is a regular file of this
/// user's (opened relative to `dir`, without following a link or waiting on a FIFO, and read
/// only up to its first [`DEST_MAX`] bytes).
fn waiting_in(dir: &Dir) -> Vec<Spooled> {
    let ours = |st: &libc::stat| {
        st.st_mode & libc::S_IFMT == libc::S_IFREG && st.st_uid == crate::sys::euid()
    };
    let mut found: Vec<Spooled> = dir
        .names()
        .unwrap_or_default()
        .into_iter()
        .filter(|n| Path::new(n).extension().is_some_and(|x| x == "db"))
        .filter(|n| dir.stat(n).ok().flatten().is_some_and(|st| ours(&st)))
        .map(|name| {
            let path = dir.path().join(&name);
            let dest = store::spool_dest(&path);
            let dest = dest.file_name().unwrap_or_default();
            let text = open_dest(dir, dest, libc::O_RDONLY).and_then(|f| {
                let mut text = String::new();
                f.take(DEST_MAX).read_to_string(&mut text).ok()?;
                Some(text)
            });
            let text = text.as_deref().unwrap_or_default();
            Spooled {
                dest: text
                    .lines()
                    .next()
                    .map(|l| l.trim().to_string())
                    .filter(|d| !d.is_empty()),
                identity: Identity::from_dest(text),
                path,
            }
        })
        .collect();
    found.sort_by(|a, b| a.path.cmp(&b.path));
    found
}

/// The destination file `name` in the spool directory `dir`, opened with `flags` (without
/// following a link or waiting on a FIFO), when it is a regular file of this user's.
fn open_dest(dir: &Dir, name: &std::ffi::OsStr, flags: i32) -> Option<std::fs::File> {
    let f = dir
        .open_file(name, flags | libc::O_NONBLOCK | libc::O_NOCTTY)
        .ok()?;
    store::not_ours(&f).is_none().then_some(f)
}

/// Whether this process has looked at its spool files yet ([`upload_waiting_once`]).
static UPLOADED: AtomicBool = AtomicBool::new(false);

/// [`upload_waiting`], unless this process did it already: what opening a PostgreSQL store
/// does (the hook the CLI gives `catalog::on_opening_a_shared_store`), whatever the command (`runs`, `show`, `report`, `gc` as well as `run`, `ab` and
/// `doctor`: #44 item 4), since nothing uploads a spool file by itself; said once a process.
pub fn upload_waiting_once(to: Option<&dyn Backend>) {
    if !UPLOADED.swap(true, Ordering::Relaxed) {
        upload_waiting(to);
    }
}

/// Uploads the spool files waiting for `to` (when it is a PostgreSQL store) and removes each
/// once `to` holds its runs; says on the notice sink what it did and which spool files wait
/// for another store (all of them when `to` is None). A spool that another sysperf is still
/// writing (its destination file locked) is left; one that fails to upload stays, its error
/// said. Never an error itself: the command that called it goes on.
pub fn upload_waiting(to: Option<&dyn Backend>) -> Vec<(Spooled, Result<Synced, String>)> {
    UPLOADED.store(true, Ordering::Relaxed);
    let to = to.filter(|t| !t.is_away());
    // What `to` is, asked of its server when a spool file waits (#44 item 1).
    let mut here: Option<Option<Identity>> = None;
    let mut uploads = Vec::new();
    let dir = match store::open_spool_dir(false) {
        Ok(Some(dir)) => dir,
        Ok(None) => return uploads,
        Err(e) => {
            crate::notice::tell(&crate::error::one_line(&e));
            return uploads;
        }
    };
    for s in waiting_in(&dir) {
        let shown = s.path.display().to_string();
        let here = here.get_or_insert_with(|| to.and_then(|t| t.identity()));
        let ours = match (&s.identity, &*here) {
            (Some(spooled), Some(here)) => spooled.belongs_in(here),
            _ => false,
        };
        let (Some(to), Some(dest), true) = (to, s.dest.as_deref(), ours) else {
            let dest = s.dest.as_deref().unwrap_or("its PostgreSQL store");
            crate::notice::tell(&format!(
                "the spool file {shown} waits for {dest}: 'sysperf sync {shown} URL' uploads it (so does the next sysperf command on this host that opens that store; nothing else does)"
            ));
            continue;
        };
        let done = upload(&dir, &s.path, to).map_err(|e| crate::error::one_line(&e));
        match &done {
            Ok(Some(n)) => crate::notice::tell(&format!(
                "uploaded the spool file {shown} to {dest} ({} run{} copied, {} completed) and removed it",
                n.copied,
                plural(n.copied),
                n.completed
            )),
            Ok(None) => crate::notice::tell(&format!(
                "the spool file {shown} waits for {dest}: a sysperf on this host is still writing it"
            )),
            Err(e) => crate::notice::tell(&format!(
                "could not upload the spool file {shown} to {dest}: {e}; it stays ('sysperf sync {shown} {dest}' uploads it)"
            )),
        }
        match done {
            Ok(Some(n)) => uploads.push((s, Ok(n))),
            Ok(None) => {}
            Err(e) => uploads.push((s, Err(e))),
        }
    }
    uploads
}

/// Copies the spool file `path` (in the checked spool directory `dir`) into `to` and removes
/// it; None when another process holds its destination file locked (still writing it). The
/// destination file is opened and the files removed relative to `dir`, never through a link.
fn upload(dir: &Dir, path: &Path, to: &dyn Backend) -> Result<Option<Synced>, SyncError> {
    let lock_path = store::spool_dest(path);
    let lock_name = lock_path.file_name().unwrap_or_default().to_os_string();
    let Some(lock) = open_dest(dir, &lock_name, libc::O_RDONLY) else {
        return Err(SyncError::NoSource(lock_path));
    };
    match lock.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
        Err(std::fs::TryLockError::Error(_)) => return Ok(None),
    }
    let source = Source::Store(catalog::open_location(&Location::Sqlite(
        path.to_path_buf(),
    ))?);
    let done = copy(&source, to)?;
    drop(source);
    // The run first, its destination file last: a spool file found without one is left.
    let name = path.file_name().unwrap_or_default();
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut n = name.to_os_string();
        n.push(suffix);
        let _ = dir.unlink(&n);
    }
    let _ = dir.unlink(&lock_name);
    Ok(Some(done))
}

/// A location as `sync` names it in its summary (a URL without its password).
pub fn shown(text: &Path) -> String {
    match Location::parse(text) {
        Ok(l) => l.to_string(),
        Err(_) => store::redact(&text.to_string_lossy()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::safedir::Need;

    /// #41 item 4: in the spool directory, only regular files of this user's are listed and
    /// read, each opened relative to the directory without following a link.
    #[test]
    fn the_spool_reads_only_regular_files_of_this_users() {
        let tmp = tempfile::tempdir().unwrap();
        let secret = tmp.path().join("secret");
        std::fs::write(&secret, "root:$6$hash:19000::::::\n").unwrap();
        let spool = tmp.path().join("spool");
        std::fs::create_dir(&spool).unwrap();
        let put = |name: &str, text: &str| std::fs::write(spool.join(name), text).unwrap();
        put("a.db", "");
        put("a.dest", "postgres://db/fleet\n");
        // A destination file that is a link (even one of ours): not followed.
        put("b.db", "");
        std::os::unix::fs::symlink(&secret, spool.join("b.dest")).unwrap();
        // A spool file that is a link: not listed.
        std::os::unix::fs::symlink(&secret, spool.join("c.db")).unwrap();
        let dir = Dir::open(&spool, Need::Private).unwrap();
        let shown = || -> Vec<(std::ffi::OsString, Option<String>)> {
            waiting_in(&dir)
                .into_iter()
                .map(|s| (s.path.file_name().unwrap().to_owned(), s.dest))
                .collect()
        };
        assert_eq!(
            shown(),
            [
                ("a.db".into(), Some("postgres://db/fleet".to_string())),
                ("b.db".into(), None)
            ]
        );
        if !crate::sys::is_root() {
            println!("skipped: needs root to give files to another user");
            return;
        }
        // Another user's files: neither listed nor read.
        put("d.db", "");
        put("e.db", "");
        put("e.dest", "postgres://theirs/x\n");
        for n in ["d.db", "e.dest"] {
            std::os::unix::fs::chown(spool.join(n), Some(65534), Some(65534)).unwrap();
        }
        assert_eq!(
            shown(),
            [
                ("a.db".into(), Some("postgres://db/fleet".to_string())),
                ("b.db".into(), None),
                ("e.db".into(), None)
            ]
        );
    }
}
