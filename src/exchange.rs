//! Export and import of runs: the `sysperf-export` JSON document that moves runs between
//! machines (`sysperf export`, `sysperf import`), documented in docs/export-format.md. Stored
//! observations (traces, system profiles: [`Observation`]) travel in it too, after the runs,
//! read, checked and handed over one at a time as runs are.
//!
//! What it is: two pure functions over bytes, and [`import_file`], the same reading of a file.
//! [`export`] writes runs as one document, each run exactly as the model serializes it, so
//! that (with serde_json's `float_roundtrip`) reading it back gives the same runs bit for bit.
//! [`import`] reads such a document and returns its runs only when all of it is acceptable:
//! the size, the JSON syntax, the format name and version, every type, and every value against
//! the limits below (strings, hostnames, ids, integers the store keeps as `i64`, finite floats,
//! list lengths, doctor findings, trial counters, duplicate runs). It reads in two passes: the
//! first walks the document without building anything, checking its syntax and header and
//! counting list lengths, nesting and the memory the runs would take ([`MAX_DECODED_BYTES`]),
//! so a hostile file is refused in little memory; the second builds the runs one at a time
//! and checks every value ([`stream_file`] hands each run over before reading the next, so
//! memory holds one run however many the file has). The first problem found is returned as
//! one [`ExchangeError`] naming it and, where there is one, its JSON path, e.g.
//! `runs[0].fingerprint.hostname`. [`export`] applies the same checks, so every file sysperf
//! writes is one it reads.
//!
//! The format code never touches the store, and does no I/O but reading the file it is
//! given. `exchange/transfer.rs` is `sysperf export` and `sysperf import` whole: [`export_to`]
//! resolves and loads the runs a few at a time and writes them; [`import_files`] reads every
//! file through first, keeping only each run's id and label, and only then reads them again
//! to save their runs, one at a time in one transaction, so a bad file writes nothing. Nothing
//! here merges, compares or re-derives runs: figures are kept as measured.

mod transfer;
pub use transfer::{export_to, import_files, ExportList, TransferError};

use crate::model::{
    BenchResult, CounterSummary, Counters, Estimate, Fingerprint, Run, RunParams, Series, Summary,
    Trial, Usage,
};
use crate::model::{Observation, Profile};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::PathBuf;

/// The `format` every export carries.
pub const FORMAT: &str = "sysperf-export";
/// The version of the document shape this sysperf writes and the newest it reads. Bumped on any
/// change an older sysperf would misread (see docs/export-format.md).
pub const FORMAT_VERSION: u64 = 1;

/// Largest export document held in memory whole ([`import`] and [`export`] of bytes, which
/// build every run at once). Files are not capped (#35): [`ExportWriter`] and [`stream_file`]
/// hold one run at a time, so a 10,000-run export is written and imported in the memory of
/// its largest run; what a reader would hold at once is capped instead
/// ([`MAX_DECODED_BYTES`]).
pub const MAX_FILE_BYTES: u64 = 256 << 20;
/// Longest string anywhere in a run (kernel command lines and messages are far shorter).
pub const MAX_STRING_BYTES: usize = 64 << 10;
/// Longest label, as `sysperf run --label` allows.
pub const MAX_LABEL_CHARS: usize = 200;
/// Longest hostname (the DNS limit for a full name).
pub const MAX_HOSTNAME_CHARS: usize = 253;
/// Longest benchmark id.
pub const MAX_BENCH_ID_CHARS: usize = 200;
/// Most results in one run (the core suite has 49 benchmarks).
pub const MAX_RESULTS_PER_RUN: usize = 10_000;
/// Most trials of one result (`--trials` allows 1000, plus calibration and warm-up).
pub const MAX_TRIALS_PER_RESULT: usize = 100_000;
/// Most entries of any other list or map (warnings, derived figures, CPUs, selection, ...).
pub const MAX_ENTRIES: usize = 100_000;
/// Most doctor findings in one run (`sysperf doctor` makes a few dozen at most).
pub const MAX_FINDINGS: usize = 1_000;
/// Longest counter name (`interrupts_by_source` keys: an IRQ number or LOC, RES, NMI, ...).
pub const MAX_COUNTER_NAME_BYTES: usize = 64;
/// The most memory what a reader holds at once may take once built, as estimated by the first
/// pass while it reads the file (before anything is built): 32 bytes plus the length per
/// string, 8 per list entry, 16 per object entry: each run (with its profiles) when the file
/// is streamed ([`stream_file`]), all of its runs when they are all built ([`import_file`]).
/// Real exports estimate at about their size; a run of millions of short strings (which would
/// build into gigabytes) is refused.
pub const MAX_DECODED_BYTES: u64 = 1 << 30;

/// The longest list or map the first pass lets through: the largest of the limits above, which
/// the second pass then applies field by field.
const MAX_ANY_LIST: usize = MAX_TRIALS_PER_RESULT;
/// How deep lists and objects may nest under `runs` (a run nests 8 deep at most: a series
/// point's result's trials' usage).
const MAX_DEPTH: usize = 32;

/// How many characters of an offending value an error message shows.
const SHOWN_CHARS: usize = 40;
/// How many characters of a JSON parser's message an error message keeps: the parser quotes
/// the offending value, which may be a 100 MB string.
const DETAIL_CHARS: usize = 200;

/// Why runs could not be exported or imported. Every message is one line that names the
/// problem, and where it lies in the document, and says what to do.
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    /// The CLI could not read an export file (it does the I/O; this names the failure).
    /// The I/O error is in the message rather than the error's source chain, so that the
    /// CLI's one-line report does not print it twice.
    #[error("cannot read '{}': {cause}; check the path and its permissions", .path.display())]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    /// `size` is what the file reported or what was read before giving up (an endless file
    /// such as /dev/zero is not read to its end), hence "at least".
    #[error("the file has at least {size} bytes, more than the {limit} bytes an export may hold; export fewer runs per file")]
    TooLarge { size: u64, limit: u64 },
    /// The file to import is a FIFO, a device or a socket: it cannot be read twice, and it
    /// could hang or never end (#29).
    #[error("it is {kind}, not a file: an import reads its file twice (to check every run, then to store them), which a pipe or device cannot give; save it to a file first (e.g. cat PIPE > runs.json)")]
    NotAFile { kind: &'static str },
    /// Reading failed part way through parsing; [`import_file`] names the file (as `Read`).
    #[error("cannot read the file: {cause}")]
    ReadFailed { cause: std::io::Error },
    #[error("the file is empty, not a sysperf export ('sysperf export RUN -o FILE' writes one)")]
    Empty,
    #[error("the file is truncated ({detail}); copy or export it again")]
    Truncated { detail: String },
    #[error("the file is not valid JSON ({detail}); a sysperf export is one JSON document written by 'sysperf export'")]
    Malformed { detail: String },
    #[error("not a sysperf export: {why}; 'sysperf export RUN -o FILE' writes one")]
    NotAnExport { why: String },
    #[error("not a sysperf export: format is {found}, expected \"sysperf-export\"{hint}")]
    WrongFormat { found: String, hint: &'static str },
    #[error("written by a newer sysperf (format {found}); this one reads format {supported}: upgrade sysperf")]
    TooNew { found: u64, supported: u64 },
    #[error("format_version is {found}, not a format version (1, 2, ...); the file is damaged or was not written by sysperf")]
    BadVersion { found: String },
    /// A type error or missing field, as serde reports it, with its path.
    #[error(
        "{path}: {detail}; the file does not follow the export format (docs/export-format.md)"
    )]
    Shape { path: String, detail: String },
    #[error("the file holds no runs ('runs' is empty) and no observations; export at least one run or observation")]
    NoRuns,
    #[error("runs[{second}] has the id {id} of runs[{first}]; an export holds each run once")]
    DuplicateRun {
        id: String,
        first: usize,
        second: usize,
    },
    #[error("{path} is {value}, larger than 2^63 - 1, the largest integer the store keeps; the file is damaged or was not written by sysperf")]
    IntegerTooLarge { path: String, value: u64 },
    #[error("{path} is {value}, not a finite number; JSON cannot carry NaN or infinities")]
    NotFinite { path: String, value: f64 },
    #[error("{path} is {value:e}: {why}")]
    Implausible {
        path: String,
        value: f64,
        why: &'static str,
    },
    #[error("{path} is {value} again: a run has each benchmark once")]
    DuplicateId { path: String, value: String },
    #[error("{path} is a string of {len} bytes, longer than the {limit} allowed")]
    StringTooLong {
        path: String,
        len: usize,
        limit: usize,
    },
    #[error("{path} has {count} entries, more than the {limit} allowed")]
    TooMany {
        path: String,
        count: usize,
        limit: usize,
    },
    /// Found by the first pass, which stops counting at the limit.
    #[error("{path} has more than {limit} entries, the most allowed; export fewer runs or trials per file")]
    TooManyEntries { path: String, limit: usize },
    #[error("{path} nests lists and objects more than {limit} deep; the file was not written by sysperf")]
    TooDeep { path: String, limit: usize },
    #[error("the runs would take more than {limit} bytes of memory once read (the file is full of short strings or lists, at {path}); export fewer runs per file")]
    TooBigToBuild { path: String, limit: u64 },
    #[error("{path} contains the control character U+{code:04X}; ids, labels, names and messages must be printable")]
    ControlCharacter { path: String, code: u32 },
    #[error("{path} is '{value}': {why}, so the run could not be found by it; import it from a file with another label")]
    AmbiguousLabel {
        path: String,
        value: String,
        why: &'static str,
    },
    #[error("{path} is {chars} characters long; a label has at most {limit}")]
    LabelTooLong {
        path: String,
        chars: usize,
        limit: usize,
    },
    #[error("{path} {value} is not a hostname: {why}")]
    BadHostname {
        path: String,
        value: String,
        why: &'static str,
    },
    #[error("{path} has the name {value}, not a counter name (1 to {MAX_COUNTER_NAME_BYTES} bytes, no spaces)")]
    BadCounterName { path: String, value: String },
    #[error("{path} {value} is not a run id (12 lowercase hex digits)")]
    BadRunId { path: String, value: String },
    #[error("{path} {value} is not a benchmark id (1 to {MAX_BENCH_ID_CHARS} printable ASCII characters, no spaces)")]
    BadBenchId { path: String, value: String },
    #[error("{path} is {value}; a run's source is \"measured\" or \"published\"")]
    UnknownSource { path: String, value: String },
    /// A stored run that cannot be written as an export; the reason names its path in the
    /// document that would have been written.
    #[error("run {id} cannot be exported: {reason}")]
    NotExportable {
        id: String,
        reason: Box<ExchangeError>,
    },
    #[error(
        "{path} is a profile of run {id}, which the file does not hold; profiles go with their run"
    )]
    ProfileOfNoRun { path: String, id: String },
    #[error("{path}: {why}; the file is damaged or was not written by sysperf")]
    BadProfile { path: String, why: String },
    #[error("observations[{second}] has the id {id} of observations[{first}]; an export holds each observation once")]
    DuplicateObservation {
        id: String,
        first: usize,
        second: usize,
    },
    #[error("{path} {value} is not an observation id (12 lowercase hex digits)")]
    BadObservationId { path: String, value: String },
    /// A stored observation that cannot be written as an export.
    #[error("observation {id} cannot be exported: {reason}")]
    ObservationNotExportable {
        id: String,
        reason: Box<ExchangeError>,
    },
    #[error("cannot write the export: {0}")]
    Serialize(#[source] serde_json::Error),
    /// Writing a streamed export ([`ExportWriter`]) failed.
    #[error("cannot write the export: {0}")]
    Write(#[source] std::io::Error),
}

impl ExchangeError {
    /// True for problems with the user's files or runs, which the CLI maps to exit code 2;
    /// false for a failure of sysperf itself.
    pub fn is_user_error(&self) -> bool {
        !matches!(self, ExchangeError::Serialize(_) | ExchangeError::Write(_))
    }
}

impl crate::error::Exit for ExchangeError {
    fn exit_code(&self) -> i32 {
        crate::error::usage_if(self.is_user_error())
    }
}

type Result<T, E = ExchangeError> = std::result::Result<T, E>;

/// The document as written: the runs are borrowed, and serialized exactly as the model does.
#[derive(Serialize)]
struct Document<'a> {
    format: &'static str,
    format_version: u64,
    runs: &'a [Run],
    /// The kernel profiles stored with runs (`run --profile`), by run id; absent when none.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    profiles: BTreeMap<&'a str, &'a [Profile]>,
    /// Stored observations (`trace --store`, `profile --system`); absent when none.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    observations: &'a [Observation],
}

/// The first pass of [`import`]: the format and its version, read before the runs so that a
/// file of another format or a newer version is named as such rather than as a type error.
/// The runs are walked without being built ([`Walk`]), so that a file that would build into
/// far more memory than it takes is refused before anything is built; other fields are
/// skipped, but the whole document's syntax is checked.
struct Header {
    format: Option<serde_json::Value>,
    format_version: Option<serde_json::Value>,
}

/// Reads a [`Header`], walking the runs with the [`Walk`] given.
/// By hand rather than derived: a derived struct also accepts a JSON array of its fields in
/// order, and the top level of an export must be an object.
struct HeaderSeed<'a>(&'a Walk);

impl<'de> serde::de::DeserializeSeed<'de> for HeaderSeed<'_> {
    type Value = Header;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Header, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for HeaderSeed<'_> {
    type Value = Header;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Header, A::Error> {
        let mut h = Header {
            format: None,
            format_version: None,
        };
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "format" => h.format = Some(map.next_value()?),
                "format_version" => h.format_version = Some(map.next_value()?),
                // Everything that will be built is walked and counted first: the runs, the
                // profiles stored with them, and the observations.
                "runs" | "profiles" | "observations" => {
                    self.0.path.replace(key.clone());
                    map.next_value_seed(Node(self.0))?;
                }
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(h)
    }
}

/// The first pass's walk over the runs: where in the document it is, what the runs would
/// take in memory once built (see [`MAX_DECODED_BYTES`]), and the first problem found. A
/// serde error carries only text, so the typed error waits here for [`import`] to take.
#[derive(Default)]
struct Walk {
    /// The estimate starts again at each run (and each run's profiles) and each observation: a
    /// streamed read holds one at a time.
    per_run: bool,
    path: std::cell::RefCell<String>,
    estimate: std::cell::Cell<u64>,
    depth: std::cell::Cell<usize>,
    problem: std::cell::RefCell<Option<ExchangeError>>,
}

impl Walk {
    fn fail<E: serde::de::Error>(&self, problem: ExchangeError) -> E {
        self.problem.replace(Some(problem));
        E::custom("refused by the first pass")
    }

    fn charge<E: serde::de::Error>(&self, bytes: u64) -> Result<(), E> {
        let total = self.estimate.get().saturating_add(bytes);
        self.estimate.set(total);
        if total > MAX_DECODED_BYTES {
            return Err(self.fail(ExchangeError::TooBigToBuild {
                path: self.path.borrow().clone(),
                limit: MAX_DECODED_BYTES,
            }));
        }
        Ok(())
    }

    /// Enters a list or map, which is refused deeper than [`MAX_DEPTH`] (before the parser's
    /// own recursion limit, which names no path).
    fn enter<E: serde::de::Error>(&self) -> Result<(), E> {
        let depth = self.depth.get() + 1;
        self.depth.set(depth);
        if depth > MAX_DEPTH {
            return Err(self.fail(ExchangeError::TooDeep {
                path: self.path.borrow().clone(),
                limit: MAX_DEPTH,
            }));
        }
        Ok(())
    }

    fn leave(&self, base: usize) {
        self.depth.set(self.depth.get() - 1);
        self.path.borrow_mut().truncate(base);
    }

    /// At an entry of the top level's `runs`, `profiles` or `observations`: a streamed read's estimate
    /// starts again there.
    fn next_run(&self) {
        if self.per_run && self.depth.get() == 1 {
            self.estimate.set(0);
        }
    }

    /// Counts the `n`th entry (from 1) of the list or map at `base` bytes of the path.
    fn entry<E: serde::de::Error>(&self, n: usize, base: usize, cost: u64) -> Result<(), E> {
        if n > MAX_ANY_LIST {
            let mut p = self.path.borrow_mut();
            p.truncate(base);
            let path = p.clone();
            drop(p);
            return Err(self.fail(ExchangeError::TooManyEntries {
                path,
                limit: MAX_ANY_LIST,
            }));
        }
        self.charge(cost)
    }
}

/// Any JSON value, walked and counted, never built.
#[derive(Clone, Copy)]
struct Node<'a>(&'a Walk);

impl<'de> serde::de::DeserializeSeed<'de> for Node<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Node<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<(), E> {
        self.0.charge(32 + s.len() as u64)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        use std::fmt::Write;
        let base = self.0.path.borrow().len();
        self.0.enter()?;
        let mut n = 0;
        loop {
            {
                let mut p = self.0.path.borrow_mut();
                p.truncate(base);
                let _ = write!(p, "[{n}]");
            }
            self.0.next_run();
            if seq.next_element_seed(self)?.is_none() {
                break;
            }
            n += 1;
            self.0.entry(n, base, 8)?;
        }
        self.0.leave(base);
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let base = self.0.path.borrow().len();
        self.0.enter()?;
        let mut n = 0;
        loop {
            self.0.path.borrow_mut().truncate(base);
            self.0.next_run();
            if map.next_key_seed(Key(self.0))?.is_none() {
                break;
            }
            map.next_value_seed(self)?;
            n += 1;
            self.0.entry(n, base, 48)?;
        }
        self.0.leave(base);
        Ok(())
    }
}

/// A map key, appended to the walk's path in the notation of [`JsonPath`].
struct Key<'a>(&'a Walk);

impl<'de> serde::de::DeserializeSeed<'de> for Key<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Key<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: serde::de::Error>(self, k: &str) -> Result<(), E> {
        let mut p = self.0.path.borrow_mut();
        if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            p.push('.');
            p.push_str(k);
        } else {
            p.push('[');
            p.push_str(&shown(k));
            p.push(']');
        }
        drop(p);
        self.0.charge(k.len() as u64)
    }
}

/// The runs of an export and, for each (same order), the kernel profiles stored with it; and
/// the observations, in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    pub runs: Vec<Run>,
    pub profiles: Vec<Vec<Profile>>,
    pub observations: Vec<Observation>,
}

/// Writes `runs` as one export document (pretty JSON, ending in a newline). The runs are
/// checked as [`import`] checks them, so that the file can be read back; the first problem
/// is returned as [`ExchangeError::NotExportable`] naming the run.
pub fn export(runs: &[Run]) -> Result<Vec<u8>> {
    export_with_profiles(runs, &[])
}

/// [`export`], with the kernel profiles stored with each run: `profiles[i]` are those of
/// `runs[i]` (missing entries and empty lists: none). They are checked as [`import`] checks them.
pub fn export_with_profiles(runs: &[Run], profiles: &[Vec<Profile>]) -> Result<Vec<u8>> {
    export_all(runs, profiles, &[])
}

/// [`export_with_profiles`], with stored observations after the runs (in that order, each
/// once). A document may hold observations and no runs; it may not hold nothing.
pub fn export_all(
    runs: &[Run],
    profiles: &[Vec<Profile>],
    observations: &[Observation],
) -> Result<Vec<u8>> {
    // Runs are checked (and none refused) unless the document holds observations alone.
    if !runs.is_empty() || observations.is_empty() {
        check_runs(runs)?;
    }
    check_observations(observations)?;
    let doc = Document {
        format: FORMAT,
        format_version: FORMAT_VERSION,
        runs,
        profiles: checked_profiles(runs, profiles)?,
        observations,
    };
    let mut bytes = serde_json::to_vec_pretty(&doc).map_err(ExchangeError::Serialize)?;
    bytes.push(b'\n');
    let size = bytes.len() as u64;
    if size > MAX_FILE_BYTES {
        return Err(ExchangeError::TooLarge {
            size,
            limit: MAX_FILE_BYTES,
        });
    }
    Ok(bytes)
}

/// The runs of [`export_all`] checked, the first problem named with its run.
fn check_runs(runs: &[Run]) -> Result<()> {
    validate(runs).map_err(|reason| match reason {
        ExchangeError::DuplicateRun { .. } | ExchangeError::NoRuns => reason,
        _ => {
            let id = first_invalid(runs).unwrap_or_default();
            ExchangeError::NotExportable {
                id,
                reason: Box::new(reason),
            }
        }
    })
}

/// The observations of [`export_all`] checked (no id twice), the first problem named with
/// its observation.
fn check_observations(observations: &[Observation]) -> Result<()> {
    let list = JsonPath::Root.field("observations");
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (i, o) in observations.iter().enumerate() {
        if let Some(&first) = seen.get(o.id()) {
            return Err(ExchangeError::DuplicateObservation {
                id: shown(o.id()),
                first,
                second: i,
            });
        }
        check_observation(o, &list.index(i)).map_err(|reason| {
            ExchangeError::ObservationNotExportable {
                id: shown(o.id()),
                reason: Box::new(reason),
            }
        })?;
        seen.insert(o.id(), i);
    }
    Ok(())
}

/// The profiles of [`export_all`] by run id, each run's checked.
fn checked_profiles<'a>(
    runs: &'a [Run],
    profiles: &'a [Vec<Profile>],
) -> Result<BTreeMap<&'a str, &'a [Profile]>> {
    let by_run: BTreeMap<&str, &[Profile]> = runs
        .iter()
        .zip(profiles)
        .filter(|(_, p)| !p.is_empty())
        .map(|(r, p)| (r.id.as_str(), p.as_slice()))
        .collect();
    for (id, list) in &by_run {
        check_profiles(id, list, &JsonPath::Root.field("profiles")).map_err(|reason| {
            ExchangeError::NotExportable {
                id: shown(id),
                reason: Box::new(reason),
            }
        })?;
    }
    Ok(by_run)
}

/// An export document written one run at a time (`sysperf export` of many runs), in memory
/// bounded by the largest run rather than their sum: the same bytes as [`export_with_profiles`]
/// of the same runs and profiles, each run checked as it is written, and no limit on the
/// file's size (#35: 1,000 realistic runs, 336 MB, failed at the 256 MiB that a whole document
/// in memory may take). Write every run with [`ExportWriter::run`], then the
/// profiles with [`ExportWriter::profiles`] in increasing run-id order, then the observations
/// with [`ExportWriter::observation`], then [`ExportWriter::finish`] (the same bytes as
/// [`export_all`]). Every piece reaches `out` in one `write_all` of whole UTF-8 text.
pub struct ExportWriter<W: std::io::Write> {
    out: W,
    written: u64,
    /// None: an export file may be as large as its runs make it (#35); set in tests.
    limit: u64,
    ids: HashMap<String, usize>,
    runs: usize,
    /// Profiles written so far (the map is open once this is above zero).
    profiled: usize,
    last_profiled: Option<String>,
    /// The ids of the observations written so far, by their index (the list is open once
    /// there is one).
    observed: HashMap<String, usize>,
}

/// `text` (serde_json's pretty output of a value two levels deep in the document) with every
/// line but the first indented four more spaces, as the document's own pretty printer would.
/// Raw newlines occur only between tokens: JSON strings escape theirs.
fn nested(text: &str) -> String {
    text.replace('\n', "\n    ")
}

impl<W: std::io::Write> ExportWriter<W> {
    /// Starts the document: its format, version and the opening of `runs`.
    pub fn new(out: W) -> Result<Self> {
        let mut w = ExportWriter {
            out,
            written: 0,
            limit: u64::MAX,
            ids: HashMap::new(),
            runs: 0,
            profiled: 0,
            last_profiled: None,
            observed: HashMap::new(),
        };
        w.put(&format!(
            "{{\n  \"format\": \"{FORMAT}\",\n  \"format_version\": {FORMAT_VERSION},\n  \"runs\": ["
        ))?;
        Ok(w)
    }

    fn put(&mut self, text: &str) -> Result<()> {
        let size = self.written.saturating_add(text.len() as u64);
        if size > self.limit {
            return Err(ExchangeError::TooLarge {
                size,
                limit: self.limit,
            });
        }
        self.out
            .write_all(text.as_bytes())
            .map_err(ExchangeError::Write)?;
        self.written = size;
        Ok(())
    }

    /// Checks and writes the next run.
    pub fn run(&mut self, run: &Run) -> Result<()> {
        let i = self.runs;
        if let Some(&first) = self.ids.get(&run.id) {
            return Err(ExchangeError::DuplicateRun {
                id: shown(&run.id),
                first,
                second: i,
            });
        }
        check_run(run, &JsonPath::Root.field("runs").index(i)).map_err(|reason| {
            ExchangeError::NotExportable {
                id: shown(&run.id),
                reason: Box::new(reason),
            }
        })?;
        let text = serde_json::to_string_pretty(run).map_err(ExchangeError::Serialize)?;
        let sep = if i == 0 { "\n    " } else { ",\n    " };
        self.put(&format!("{sep}{}", nested(&text)))?;
        self.ids.insert(run.id.clone(), i);
        self.runs += 1;
        Ok(())
    }

    /// Checks and writes the profiles of a run already written (none: nothing), after every
    /// run and in increasing id order, as the document keeps them.
    pub fn profiles(&mut self, id: &str, profiles: &[Profile]) -> Result<()> {
        if profiles.is_empty() {
            return Ok(());
        }
        let not = |reason| ExchangeError::NotExportable {
            id: shown(id),
            reason: Box::new(reason),
        };
        let late = !self.observed.is_empty();
        if late
            || !self.ids.contains_key(id)
            || self.last_profiled.as_deref().is_some_and(|l| l >= id)
        {
            return Err(not(ExchangeError::ProfileOfNoRun {
                path: JsonPath::Root.field("profiles").key(id).to_string(),
                id: shown(id),
            }));
        }
        check_profiles(id, profiles, &JsonPath::Root.field("profiles")).map_err(not)?;
        let text = serde_json::to_string_pretty(profiles).map_err(ExchangeError::Serialize)?;
        let key = serde_json::to_string(id).map_err(ExchangeError::Serialize)?;
        let head = if self.profiled == 0 {
            format!("{},\n  \"profiles\": {{\n    ", self.closing())
        } else {
            ",\n    ".to_string()
        };
        self.put(&format!("{head}{key}: {}", nested(&text)))?;
        self.profiled += 1;
        self.last_profiled = Some(id.to_string());
        Ok(())
    }

    /// Checks and writes a stored observation, after every run and profile; each once.
    pub fn observation(&mut self, o: &Observation) -> Result<()> {
        let i = self.observed.len();
        if let Some(&first) = self.observed.get(o.id()) {
            return Err(ExchangeError::DuplicateObservation {
                id: shown(o.id()),
                first,
                second: i,
            });
        }
        check_observation(o, &JsonPath::Root.field("observations").index(i)).map_err(|reason| {
            ExchangeError::ObservationNotExportable {
                id: shown(o.id()),
                reason: Box::new(reason),
            }
        })?;
        let text = serde_json::to_string_pretty(o).map_err(ExchangeError::Serialize)?;
        let head = if i == 0 {
            format!("{},\n  \"observations\": [\n    ", self.closing())
        } else {
            ",\n    ".to_string()
        };
        self.put(&format!("{head}{}", nested(&text)))?;
        self.observed.insert(o.id().to_string(), i);
        Ok(())
    }

    /// What closes the list or map written last, as serde_json's pretty printer closes it
    /// (an empty list on one line).
    fn closing(&self) -> &'static str {
        if !self.observed.is_empty() {
            "\n  ]"
        } else if self.profiled > 0 {
            "\n  }"
        } else if self.runs > 0 {
            "\n  ]"
        } else {
            "]"
        }
    }

    /// Ends the document; returns the writer and the bytes written. A document without runs
    /// or observations is refused.
    pub fn finish(mut self) -> Result<(W, u64)> {
        if self.runs == 0 && self.observed.is_empty() {
            return Err(ExchangeError::NoRuns);
        }
        let tail = format!("{}\n}}\n", self.closing());
        self.put(&tail)?;
        self.out.flush().map_err(ExchangeError::Write)?;
        Ok((self.out, self.written))
    }
}

/// The id of the first run that fails validation, shown quoted and escaped.
fn first_invalid(runs: &[Run]) -> Option<String> {
    let root = JsonPath::Root;
    let list = root.field("runs");
    runs.iter()
        .enumerate()
        .find(|(i, r)| check_run(r, &list.index(*i)).is_err())
        .map(|(_, r)| shown(&r.id))
}

/// Reads an export document and returns its runs, in file order, once everything in it has
/// been checked (see the module documentation). Nothing partial is ever returned.
pub fn import(bytes: &[u8]) -> Result<Vec<Run>> {
    Ok(import_with_profiles(bytes)?.runs)
}

/// [`import`], with the kernel profiles the file holds for each run, all checked: each names
/// a run of the file, and every string, count and number in it is within the limits.
pub fn import_with_profiles(bytes: &[u8]) -> Result<Imported> {
    collect(|each| stream(bytes, each))
}

/// Reads an export file as [`import`] reads its bytes (see [`stream_file`]), and returns its
/// runs with their profiles.
pub fn import_file(path: &std::path::Path) -> Result<Imported> {
    collect(|each| read_file(path, false, each))
}

/// The runs and profiles a streamed read hands over, gathered.
fn collect(
    read: impl FnOnce(&mut dyn FnMut(Streamed) -> Result<()>) -> Result<()>,
) -> Result<Imported> {
    let mut runs = Vec::new();
    let mut by_run: HashMap<String, Vec<Profile>> = HashMap::new();
    let mut observations = Vec::new();
    read(&mut |item| {
        match item {
            Streamed::Run(run) => runs.push(*run),
            Streamed::Profiles { id, profiles } => {
                by_run.insert(id, profiles);
            }
            Streamed::Observation(o) => observations.push(*o),
        }
        Ok(())
    })?;
    let profiles = runs
        .iter()
        .map(|r| by_run.remove(&r.id).unwrap_or_default())
        .collect();
    Ok(Imported {
        runs,
        profiles,
        observations,
    })
}

/// What a streamed read of an export ([`stream`], [`stream_file`]) hands over, in the file's
/// order: each run once it is built and checked, and the kernel profiles of a run (after the
/// run, whatever the order in the file) once they are checked, and each stored observation
/// once it is built and checked.
#[derive(Debug)]
pub enum Streamed {
    Run(Box<Run>),
    Profiles { id: String, profiles: Vec<Profile> },
    Observation(Box<Observation>),
}

/// Reads an export document from memory, handing each run to `each` as soon as it is built
/// and checked (see [`stream_file`]).
pub fn stream<E: From<ExchangeError>>(
    bytes: &[u8],
    each: &mut dyn FnMut(Streamed) -> Result<(), E>,
) -> Result<(), E> {
    let size = bytes.len() as u64;
    if size > MAX_FILE_BYTES {
        return Err(ExchangeError::TooLarge {
            size,
            limit: MAX_FILE_BYTES,
        }
        .into());
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ExchangeError::Empty.into());
    }
    first_pass(&mut serde_json::Deserializer::from_slice(bytes), false)?;
    streaming_pass(&mut serde_json::Deserializer::from_slice(bytes), each)
        .map_err(Stop::into_caller)
}

/// Opens an export file for reading: a regular file only, opened without waiting (a FIFO with
/// no writer would block the open) and refused as [`ExchangeError::NotAFile`] when it is a
/// FIFO, a device or a socket.
pub fn open_export(path: &std::path::Path) -> Result<std::fs::File> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let read_err = |cause| ExchangeError::Read {
        path: path.to_path_buf(),
        cause,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(read_err)?;
    let t = file.metadata().map_err(read_err)?.file_type();
    let kind = if t.is_file() {
        return Ok(file);
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        return Err(read_err(std::io::Error::from_raw_os_error(libc::EISDIR)));
    };
    Err(ExchangeError::NotAFile { kind })
}

/// Reads an export file, holding one run of it in memory at a time: it is read twice from
/// disk, first to check its syntax, header and what it would build (the first pass of
/// [`import`]), then to build its runs one by one, each checked and handed to `each` (with
/// the profiles of each run that has them) before the next is read. Only a regular file is
/// read ([`open_export`]): a FIFO, a device or a socket is refused. The checks are those
/// of [`import`], but a problem found part way through comes after the runs before it were
/// handed over: a caller that must store nothing from a bad file reads it once to check it
/// (keeping what it needs of each run), then again to store its runs. An error of `each`
/// stops the read and is returned as it is.
pub fn stream_file<E: From<ExchangeError>>(
    path: &std::path::Path,
    each: &mut dyn FnMut(Streamed) -> Result<(), E>,
) -> Result<(), E> {
    read_file(path, true, each)
}

/// [`stream_file`]; `per_run`: the caller holds one run at a time (else all of them), which
/// is what [`MAX_DECODED_BYTES`] is charged for. No limit on the file's size: a regular file
/// only, read as it goes.
fn read_file<E: From<ExchangeError>>(
    path: &std::path::Path,
    per_run: bool,
    each: &mut dyn FnMut(Streamed) -> Result<(), E>,
) -> Result<(), E> {
    use std::io::{Read, Seek};
    let read_err = |cause| ExchangeError::Read {
        path: path.to_path_buf(),
        cause,
    };
    let mut file = open_export(path)?;
    let reader = std::io::BufReader::new(&file);
    let first = first_pass(&mut serde_json::Deserializer::from_reader(reader), per_run);
    if let Err(ExchangeError::Truncated { .. }) = first {
        // Only white space (not truncated JSON) is an empty file.
        file.rewind().map_err(read_err)?;
        let mut blank = true;
        for b in std::io::BufReader::new(&file).bytes() {
            blank &= b.map_err(read_err)?.is_ascii_whitespace();
        }
        if blank {
            return Err(ExchangeError::Empty.into());
        }
    }
    first.map_err(|e| read_error(e, path))?;
    file.rewind().map_err(read_err)?;
    let reader = std::io::BufReader::new(file);
    streaming_pass(&mut serde_json::Deserializer::from_reader(reader), each).map_err(|stop| {
        match stop {
            Stop::Exchange(e) => read_error(e, path).into(),
            Stop::Caller(e) => e,
        }
    })
}

/// A failure to read the file itself, which the parser reports as an I/O error, as such.
fn read_error(e: ExchangeError, path: &std::path::Path) -> ExchangeError {
    match e {
        ExchangeError::ReadFailed { cause } => ExchangeError::Read {
            path: path.to_path_buf(),
            cause,
        },
        e => e,
    }
}

/// The header, the syntax of the whole document, and the runs' shape walked without being
/// built (list lengths, what they would take in memory).
fn first_pass<'de, R: serde_json::de::Read<'de>>(
    de: &mut serde_json::Deserializer<R>,
    per_run: bool,
) -> Result<()> {
    use serde::de::DeserializeSeed;
    let walk = Walk {
        per_run,
        ..Walk::default()
    };
    let header = HeaderSeed(&walk)
        .deserialize(&mut *de)
        .and_then(|h| de.end().map(|()| h));
    let header = match header {
        Ok(h) => h,
        Err(e) => {
            if let Some(problem) = walk.problem.take() {
                return Err(problem);
            }
            return Err(match e.classify() {
                serde_json::error::Category::Data => ExchangeError::NotAnExport {
                    why: format!("the top level is not an object ({})", detail(&e)),
                },
                _ => syntax_error(&e),
            });
        }
    };
    check_header(&header)
}

/// Why a streamed read stopped: a problem of the file, or the caller's `each` failed.
enum Stop<E> {
    Exchange(ExchangeError),
    Caller(E),
}

impl<E: From<ExchangeError>> Stop<E> {
    fn into_caller(self) -> E {
        match self {
            Stop::Exchange(e) => e.into(),
            Stop::Caller(e) => e,
        }
    }
}

/// The second pass: the runs built one at a time, each checked (and no id twice) and handed
/// over; then the profiles, each checked against the runs. Nothing but the runs' ids is kept.
fn streaming_pass<'de, R: serde_json::de::Read<'de>, E>(
    de: &mut serde_json::Deserializer<R>,
    each: &mut dyn FnMut(Streamed) -> Result<(), E>,
) -> Result<(), Stop<E>> {
    use serde::de::DeserializeSeed;
    let mut st = Streaming {
        each,
        ids: HashMap::new(),
        runs_read: false,
        profiles_read: false,
        profiled: std::collections::HashSet::new(),
        early: Vec::new(),
        observations: HashMap::new(),
        observations_read: false,
        path: String::new(),
        problem: None,
    };
    let out = DocSeed(&mut st)
        .deserialize(&mut *de)
        .and_then(|()| de.end());
    match out {
        Ok(()) => Ok(()),
        Err(e) => {
            if let Some(problem) = st.problem.take() {
                return Err(problem);
            }
            Err(Stop::Exchange(match e.classify() {
                serde_json::error::Category::Data => ExchangeError::Shape {
                    path: if st.path.is_empty() {
                        "the document".into()
                    } else {
                        st.path.clone()
                    },
                    detail: detail(&e),
                },
                // The first pass read the whole document, so this is not expected; kept exact.
                _ => syntax_error(&e),
            }))
        }
    }
}

/// The state of the streaming pass: the ids of the runs read so far (their index in the
/// file), where in the document a serde error would lie, and the first problem found (a
/// serde error carries only text, so the typed one waits here).
struct Streaming<'a, E> {
    each: &'a mut dyn FnMut(Streamed) -> Result<(), E>,
    ids: HashMap<String, usize>,
    runs_read: bool,
    profiles_read: bool,
    profiled: std::collections::HashSet<String>,
    /// Profiles met before the runs (not as sysperf writes them): handed over after them.
    early: Vec<(String, Vec<Profile>)>,
    /// The ids of the observations read so far (their index in the file).
    observations: HashMap<String, usize>,
    observations_read: bool,
    path: String,
    problem: Option<Stop<E>>,
}

impl<E> Streaming<'_, E> {
    fn fail<S: serde::de::Error>(&mut self, problem: Stop<E>) -> S {
        self.problem = Some(problem);
        S::custom("refused by the streaming pass")
    }

    fn check<S: serde::de::Error>(&mut self, checked: Result<()>) -> Result<(), S> {
        checked.map_err(|e| self.fail(Stop::Exchange(e)))
    }

    fn hand<S: serde::de::Error>(&mut self, item: Streamed) -> Result<(), S> {
        (self.each)(item).map_err(|e| self.fail(Stop::Caller(e)))
    }

    /// Checks the profiles of run `id` (read after every run) and hands them over.
    fn profiles<S: serde::de::Error>(
        &mut self,
        id: String,
        profiles: Vec<Profile>,
    ) -> Result<(), S> {
        let list = JsonPath::Root.field("profiles");
        if !self.ids.contains_key(&id) {
            let path = list.key(&id).to_string();
            return Err(self.fail(Stop::Exchange(ExchangeError::ProfileOfNoRun {
                path,
                id: shown(&id),
            })));
        }
        if !self.profiled.insert(id.clone()) {
            let path = list.key(&id).to_string();
            return Err(self.fail(Stop::Exchange(ExchangeError::Shape {
                path,
                detail: "the run's profiles are listed twice".into(),
            })));
        }
        self.check(check_profiles(&id, &profiles, &list))?;
        self.hand(Streamed::Profiles { id, profiles })
    }
}

/// The top level of the document in the streaming pass (the first pass checked its header).
struct DocSeed<'s, 'a, E>(&'s mut Streaming<'a, E>);

impl<'de, E> serde::de::DeserializeSeed<'de> for DocSeed<'_, '_, E> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, E> serde::de::Visitor<'de> for DocSeed<'_, '_, E> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        use serde::de::Error;
        let st = self.0;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "runs" => {
                    if st.runs_read {
                        return Err(A::Error::duplicate_field("runs"));
                    }
                    st.path = "runs".into();
                    map.next_value_seed(RunsSeed(&mut *st))?;
                    st.runs_read = true;
                    st.path.clear();
                    for (id, profiles) in std::mem::take(&mut st.early) {
                        st.profiles::<A::Error>(id, profiles)?;
                    }
                }
                "profiles" => {
                    if st.profiles_read {
                        return Err(A::Error::duplicate_field("profiles"));
                    }
                    st.path = "profiles".into();
                    map.next_value_seed(ProfilesSeed(&mut *st))?;
                    st.profiles_read = true;
                    st.path.clear();
                }
                "observations" => {
                    if st.observations_read {
                        return Err(A::Error::duplicate_field("observations"));
                    }
                    st.path = "observations".into();
                    map.next_value_seed(ObservationsSeed(&mut *st))?;
                    st.observations_read = true;
                    st.path.clear();
                }
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        if !st.runs_read {
            return Err(A::Error::missing_field("runs"));
        }
        // A document of observations alone is one; a document of nothing is not.
        if st.ids.is_empty() && st.observations.is_empty() {
            return Err(st.fail(Stop::Exchange(ExchangeError::NoRuns)));
        }
        Ok(())
    }
}

/// The `runs` list, read one run at a time.
struct RunsSeed<'s, 'a, E>(&'s mut Streaming<'a, E>);

impl<'de, E> serde::de::DeserializeSeed<'de> for RunsSeed<'_, '_, E> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, E> serde::de::Visitor<'de> for RunsSeed<'_, '_, E> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a sequence")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let st = self.0;
        let list = JsonPath::Root.field("runs");
        loop {
            let i = st.ids.len();
            st.path = format!("runs[{i}]");
            let Some(run) = seq.next_element_seed(Built::<Run, E>(&mut *st, Default::default()))?
            else {
                break;
            };
            st.check(check_run(&run, &list.index(i)))?;
            if let Some(&first) = st.ids.get(&run.id) {
                let id = run.id.clone();
                return Err(st.fail(Stop::Exchange(ExchangeError::DuplicateRun {
                    id,
                    first,
                    second: i,
                })));
            }
            st.ids.insert(run.id.clone(), i);
            st.hand(Streamed::Run(Box::new(run)))?;
        }
        Ok(())
    }
}

/// The `observations` list, read one observation at a time: each built, checked (and no id
/// twice) and handed over.
struct ObservationsSeed<'s, 'a, E>(&'s mut Streaming<'a, E>);

impl<'de, E> serde::de::DeserializeSeed<'de> for ObservationsSeed<'_, '_, E> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, E> serde::de::Visitor<'de> for ObservationsSeed<'_, '_, E> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a sequence")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let st = self.0;
        let list = JsonPath::Root.field("observations");
        loop {
            let i = st.observations.len();
            st.path = format!("observations[{i}]");
            let Some(o) =
                seq.next_element_seed(Built::<Observation, E>(&mut *st, Default::default()))?
            else {
                break;
            };
            st.check(check_observation(&o, &list.index(i)))?;
            if let Some(&first) = st.observations.get(o.id()) {
                let id = shown(o.id());
                return Err(st.fail(Stop::Exchange(ExchangeError::DuplicateObservation {
                    id,
                    first,
                    second: i,
                })));
            }
            st.observations.insert(o.id().to_string(), i);
            st.hand(Streamed::Observation(Box::new(o)))?;
        }
        Ok(())
    }
}

/// The `profiles` map (run id to its profiles), read one run's profiles at a time.
struct ProfilesSeed<'s, 'a, E>(&'s mut Streaming<'a, E>);

impl<'de, E> serde::de::DeserializeSeed<'de> for ProfilesSeed<'_, '_, E> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, E> serde::de::Visitor<'de> for ProfilesSeed<'_, '_, E> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let st = self.0;
        let mut n = 0;
        loop {
            st.path = "profiles".into();
            let Some(id) = map.next_key::<String>()? else {
                break;
            };
            push_key(&mut st.path, &id);
            let profiles =
                map.next_value_seed(Built::<Vec<Profile>, E>(&mut *st, Default::default()))?;
            n += 1;
            st.check(count(n, MAX_ENTRIES, &JsonPath::Root.field("profiles")))?;
            if st.runs_read {
                st.profiles::<A::Error>(id, profiles)?;
            } else {
                st.early.push((id, profiles));
            }
        }
        Ok(())
    }
}

/// One value built whole (a run, one run's profiles); on a type error, the path within it is
/// added to the state's path.
struct Built<'s, 'a, T, E>(&'s mut Streaming<'a, E>, std::marker::PhantomData<T>);

impl<'de, T: Deserialize<'de>, E> serde::de::DeserializeSeed<'de> for Built<'_, '_, T, E> {
    type Value = T;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        serde_path_to_error::deserialize(d).map_err(|e| {
            push_path(&mut self.0.path, e.path());
            e.into_inner()
        })
    }
}

fn syntax_error(e: &serde_json::Error) -> ExchangeError {
    match e.classify() {
        serde_json::error::Category::Eof => ExchangeError::Truncated { detail: detail(e) },
        serde_json::error::Category::Io => ExchangeError::ReadFailed {
            cause: std::io::Error::other(detail(e)),
        },
        _ => ExchangeError::Malformed { detail: detail(e) },
    }
}

fn check_header(h: &Header) -> Result<()> {
    use serde_json::Value;
    match &h.format {
        Some(Value::String(s)) if s == FORMAT => {}
        None => {
            return Err(ExchangeError::NotAnExport {
                why: "it has no \"format\" field".into(),
            })
        }
        Some(Value::String(s)) if s == "sysperf-run" => {
            return Err(ExchangeError::WrongFormat {
                found: shown(s),
                hint: " (that is the output of 'sysperf run --json'; store the run and write it with 'sysperf export RUN')",
            })
        }
        Some(other) => {
            return Err(ExchangeError::WrongFormat {
                found: shown_value(other),
                hint: "",
            })
        }
    }
    match &h.format_version {
        None => Err(ExchangeError::NotAnExport {
            why: "it has no \"format_version\" field".into(),
        }),
        Some(v) => match v.as_u64() {
            Some(FORMAT_VERSION) => Ok(()),
            Some(n) if n > FORMAT_VERSION => Err(ExchangeError::TooNew {
                found: n,
                supported: FORMAT_VERSION,
            }),
            _ => Err(ExchangeError::BadVersion {
                found: shown_value(v),
            }),
        },
    }
}

/// Checks a whole list of runs: not empty, no id twice, and each run (see [`check_run`]).
pub fn validate(runs: &[Run]) -> Result<()> {
    if runs.is_empty() {
        return Err(ExchangeError::NoRuns);
    }
    let root = JsonPath::Root;
    let list = root.field("runs");
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (i, run) in runs.iter().enumerate() {
        check_run(run, &list.index(i))?;
        if let Some(&first) = seen.get(run.id.as_str()) {
            return Err(ExchangeError::DuplicateRun {
                id: run.id.clone(),
                first,
                second: i,
            });
        }
        seen.insert(&run.id, i);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Paths and shown values

/// A JSON path built on the stack as validation descends, and rendered only for an error.
#[derive(Clone, Copy)]
enum JsonPath<'a> {
    Root,
    Field(&'a JsonPath<'a>, &'static str),
    Index(&'a JsonPath<'a>, usize),
    Key(&'a JsonPath<'a>, &'a str),
    /// A member of an object read as any JSON: `.name` when it is a plain name, as
    /// [`push_key`] writes it, else `["name"]`.
    Member(&'a JsonPath<'a>, &'a str),
}

impl<'a> JsonPath<'a> {
    fn field(&'a self, name: &'static str) -> JsonPath<'a> {
        JsonPath::Field(self, name)
    }
    fn index(&'a self, i: usize) -> JsonPath<'a> {
        JsonPath::Index(self, i)
    }
    fn key(&'a self, k: &'a str) -> JsonPath<'a> {
        JsonPath::Key(self, k)
    }
}

impl fmt::Display for JsonPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonPath::Root => Ok(()),
            JsonPath::Field(JsonPath::Root, name) => f.write_str(name),
            JsonPath::Field(parent, name) => write!(f, "{parent}.{name}"),
            JsonPath::Index(parent, i) => write!(f, "{parent}[{i}]"),
            JsonPath::Key(parent, k) => write!(f, "{parent}[{}]", shown(k)),
            JsonPath::Member(parent, k) => {
                let mut out = parent.to_string();
                push_key(&mut out, k);
                f.write_str(&out)
            }
        }
    }
}

/// The path serde_path_to_error recorded, in the same notation as [`JsonPath`], appended to
/// `out` (the path of the value it was recorded under); map keys come from the file, so they
/// are escaped and shortened like any shown value.
fn push_path(out: &mut String, p: &serde_path_to_error::Path) {
    use serde_path_to_error::Segment;
    for seg in p {
        match seg {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => push_key(out, key),
            Segment::Unknown => out.push_str(".?"),
        }
    }
}

/// A map key appended to a path: `.key`, or `["key"]` when it is not a plain name.
fn push_key(out: &mut String, key: &str) {
    if key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !key.is_empty() {
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(key);
    } else {
        out.push_str(&format!("[{}]", shown(key)));
    }
}

/// A value from the file, quoted, with quotes and control characters escaped and at most
/// [`SHOWN_CHARS`] characters, so that an error message stays one short line.
fn shown(s: &str) -> String {
    format!("\"{}\"", clip(s, SHOWN_CHARS, true))
}

fn shown_value(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => shown(s),
        other => clip(&other.to_string(), SHOWN_CHARS, false),
    }
}

/// At most `max` characters of `s`, control characters (and, with `quotes`, quotes and
/// backslashes) escaped, "..." when cut.
fn clip(s: &str, max: usize, quotes: bool) -> String {
    let mut out = String::new();
    for c in s.chars().take(max) {
        if c.is_control() || (quotes && (c == '"' || c == '\\')) {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    if s.chars().nth(max).is_some() {
        out.push_str("...");
    }
    out
}

/// The JSON parser's message, shortened, with its line and column.
fn detail(e: &serde_json::Error) -> String {
    let full = e.to_string();
    let at = format!(" at line {} column {}", e.line(), e.column());
    let msg = full.strip_suffix(&at).unwrap_or(&full);
    let msg = clip(msg, DETAIL_CHARS, false);
    if e.line() == 0 {
        msg
    } else {
        format!("{msg}{at}")
    }
}

// ---------------------------------------------------------------------------------------
// Checks

/// What characters a string may hold besides its length limit.
#[derive(Clone, Copy)]
enum Text {
    /// Ids, names, labels, fingerprint facts: printed in tables, one line, no control characters.
    Line,
    /// Messages, errors, citations: may also hold newlines and tabs, nothing else that a
    /// terminal would interpret.
    Free,
}

fn text(s: &str, kind: Text, p: &JsonPath) -> Result<()> {
    if s.len() > MAX_STRING_BYTES {
        return Err(ExchangeError::StringTooLong {
            path: p.to_string(),
            len: s.len(),
            limit: MAX_STRING_BYTES,
        });
    }
    let allowed = |c: char| matches!(kind, Text::Free) && (c == '\n' || c == '\t');
    if let Some(c) = s.chars().find(|&c| c.is_control() && !allowed(c)) {
        return Err(ExchangeError::ControlCharacter {
            path: p.to_string(),
            code: u32::from(c),
        });
    }
    Ok(())
}

fn opt_text(s: &Option<String>, kind: Text, p: &JsonPath) -> Result<()> {
    s.as_deref().map_or(Ok(()), |s| text(s, kind, p))
}

/// The store keeps integers as SQLite's i64; a larger u64 is refused, never wrapped.
fn int(v: u64, p: &JsonPath) -> Result<()> {
    if i64::try_from(v).is_err() {
        return Err(ExchangeError::IntegerTooLarge {
            path: p.to_string(),
            value: v,
        });
    }
    Ok(())
}

fn opt_int(v: Option<u64>, p: &JsonPath) -> Result<()> {
    v.map_or(Ok(()), |v| int(v, p))
}

fn usize_int(v: usize, p: &JsonPath) -> Result<()> {
    int(u64::try_from(v).unwrap_or(u64::MAX), p)
}

fn float(v: f64, p: &JsonPath) -> Result<()> {
    if !v.is_finite() {
        return Err(ExchangeError::NotFinite {
            path: p.to_string(),
            value: v,
        });
    }
    Ok(())
}

fn opt_float(v: Option<f64>, p: &JsonPath) -> Result<()> {
    v.map_or(Ok(()), |v| float(v, p))
}

fn count(n: usize, limit: usize, p: &JsonPath) -> Result<()> {
    if n > limit {
        return Err(ExchangeError::TooMany {
            path: p.to_string(),
            count: n,
            limit,
        });
    }
    Ok(())
}

fn run_id(s: &str, p: &JsonPath) -> Result<()> {
    text(s, Text::Line, p)?;
    let ok = s.len() == 12 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if !ok {
        return Err(ExchangeError::BadRunId {
            path: p.to_string(),
            value: shown(s),
        });
    }
    Ok(())
}

fn bench_id(s: &str, p: &JsonPath) -> Result<()> {
    text(s, Text::Line, p)?;
    let ok =
        !s.is_empty() && s.len() <= MAX_BENCH_ID_CHARS && s.bytes().all(|b| b.is_ascii_graphic());
    if !ok {
        return Err(ExchangeError::BadBenchId {
            path: p.to_string(),
            value: shown(s),
        });
    }
    Ok(())
}

fn label(s: &str, p: &JsonPath) -> Result<()> {
    text(s, Text::Line, p)?;
    if let Some(why) = crate::model::ambiguous_label(s) {
        return Err(ExchangeError::AmbiguousLabel {
            path: p.to_string(),
            value: s.to_string(),
            why,
        });
    }
    let chars = s.chars().count();
    if chars > MAX_LABEL_CHARS {
        return Err(ExchangeError::LabelTooLong {
            path: p.to_string(),
            chars,
            limit: MAX_LABEL_CHARS,
        });
    }
    Ok(())
}

/// Letters, digits, '.', '-' and '_' only: a hostname is printed in tables and used to tell
/// machines apart, so markup, spaces and control characters have no place in it.
fn hostname(s: &str, p: &JsonPath) -> Result<()> {
    text(s, Text::Line, p)?;
    let why = if s.is_empty() {
        Some("it is empty")
    } else if s.chars().count() > MAX_HOSTNAME_CHARS {
        Some("it is longer than 253 characters")
    } else if !s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
    {
        Some("only letters, digits, '.', '-' and '_' are allowed")
    } else {
        None
    };
    match why {
        Some(why) => Err(ExchangeError::BadHostname {
            path: p.to_string(),
            value: shown(s),
            why,
        }),
        None => Ok(()),
    }
}

/// Everything in one run, field by field, in the order the model declares them.
fn check_run(run: &Run, p: &JsonPath) -> Result<()> {
    run_id(&run.id, &p.field("id"))?;
    if let Some(l) = &run.label {
        label(l, &p.field("label"))?;
    }
    // started_ns and ended_ns are i64 already, which the store keeps as they are.
    text(
        &run.sysperf_version,
        Text::Line,
        &p.field("sysperf_version"),
    )?;
    let source = p.field("source");
    text(&run.source, Text::Line, &source)?;
    if run.source != "measured" && run.source != "published" {
        return Err(ExchangeError::UnknownSource {
            path: source.to_string(),
            value: shown(&run.source),
        });
    }
    opt_text(&run.citation, Text::Free, &p.field("citation"))?;
    check_params(&run.params, &p.field("params"))?;
    check_fingerprint(&run.fingerprint, &p.field("fingerprint"))?;
    if let Some(o) = &run.overhead {
        let op = p.field("overhead");
        float(o.timer_ns, &op.field("timer_ns"))?;
        float(o.loop_ns_per_iteration, &op.field("loop_ns_per_iteration"))?;
    }
    let results = p.field("results");
    count(run.results.len(), MAX_RESULTS_PER_RUN, &results)?;
    let mut seen = std::collections::HashSet::new();
    for (i, r) in run.results.iter().enumerate() {
        check_result(r, &results.index(i))?;
        if !seen.insert(r.id.as_str()) {
            return Err(ExchangeError::DuplicateId {
                path: results.index(i).field("id").to_string(),
                value: shown(&r.id),
            });
        }
    }
    let derived = p.field("derived");
    count(run.derived.len(), MAX_ENTRIES, &derived)?;
    for (i, d) in run.derived.iter().enumerate() {
        let dp = derived.index(i);
        text(&d.name, Text::Line, &dp.field("name"))?;
        float(d.value, &dp.field("value"))?;
        text(&d.unit, Text::Line, &dp.field("unit"))?;
        text(&d.formula, Text::Line, &dp.field("formula"))?;
    }
    let warnings = p.field("warnings");
    count(run.warnings.len(), MAX_ENTRIES, &warnings)?;
    for (i, w) in run.warnings.iter().enumerate() {
        let wp = warnings.index(i);
        if let Some(b) = &w.bench {
            bench_id(b, &wp.field("bench"))?;
        }
        text(w.kind.as_str(), Text::Line, &wp.field("kind"))?;
        text(&w.message, Text::Free, &wp.field("message"))?;
    }
    let findings = p.field("findings");
    count(run.findings.len(), MAX_FINDINGS, &findings)?;
    for (i, f) in run.findings.iter().enumerate() {
        let fp = findings.index(i);
        // The severity was checked by its enum.
        text(&f.id, Text::Line, &fp.field("id"))?;
        text(&f.title, Text::Line, &fp.field("title"))?;
        text(&f.detail, Text::Free, &fp.field("detail"))?;
        text(&f.fix, Text::Free, &fp.field("fix"))?;
    }
    let series = p.field("series");
    count(run.series.len(), MAX_ENTRIES, &series)?;
    for (i, s) in run.series.iter().enumerate() {
        check_series(s, &series.index(i))?;
    }
    let notes = p.field("notes");
    count(run.notes.len(), MAX_ENTRIES, &notes)?;
    for (i, n) in run.notes.iter().enumerate() {
        text(n, Text::Free, &notes.index(i))?;
    }
    Ok(())
}

/// The profiles of run `id`, at `list[id]`: as many as a run has results at most, each checked.
fn check_profiles(id: &str, profiles: &[Profile], list: &JsonPath) -> Result<()> {
    let at = list.key(id);
    count(profiles.len(), MAX_RESULTS_PER_RUN, &at)?;
    for (i, p) in profiles.iter().enumerate() {
        check_profile(p, &at.index(i))?;
    }
    Ok(())
}

/// One stored observation, at `p` (its entry in `observations`): its id as a run's (12
/// lowercase hex digits), its label as `run --label` allows, the figures the store keeps as
/// `i64` within them, every string (and map key) printable and within the limits; a trace's
/// benchmark id and fingerprint as a run's, and its report one `sysperf trace` wrote (what
/// `show` and `compare` read); a system profile's hostname as a run's.
fn check_observation(o: &Observation, p: &JsonPath) -> Result<()> {
    let p = p.field("observation");
    let id = p.field("id");
    let ok = o.id().len() == 12
        && o.id()
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if !ok {
        return Err(ExchangeError::BadObservationId {
            path: id.to_string(),
            value: shown(o.id()),
        });
    }
    if let Some(l) = o.label() {
        label(l, &p.field("label"))?;
    }
    match o {
        Observation::Trace(t) => {
            bench_id(&t.bench, &p.field("bench"))?;
            int(t.wall_ns, &p.field("wall_ns"))?;
            text(&t.sysperf_version, Text::Line, &p.field("sysperf_version"))?;
            check_fingerprint(&t.fingerprint, &p.field("fingerprint"))?;
            let report = p.field("report");
            check_value(&t.report, &report)?;
            crate::trace::TraceReport::of(t).map_err(|e| ExchangeError::Shape {
                path: report.to_string(),
                detail: format!("not a report of 'sysperf trace': {}", detail(&e)),
            })?;
        }
        Observation::SystemProfile(sp) => {
            int(sp.wall_ns, &p.field("wall_ns"))?;
            int(sp.requested_ns, &p.field("requested_ns"))?;
            text(&sp.sysperf_version, Text::Line, &p.field("sysperf_version"))?;
            if let Some(h) = &sp.hostname {
                hostname(h, &p.field("hostname"))?;
            }
            opt_text(&sp.kernel_release, Text::Line, &p.field("kernel_release"))?;
            let whole = serde_json::to_value(sp).map_err(ExchangeError::Serialize)?;
            check_value(&whole, &p)?;
        }
    }
    Ok(())
}

/// Every string in `v` within [`MAX_STRING_BYTES`] and printable (newlines and tabs allowed
/// in values, not in keys), every list and map within [`MAX_ENTRIES`].
fn check_value(v: &serde_json::Value, p: &JsonPath) -> Result<()> {
    use serde_json::Value;
    match v {
        Value::String(s) => text(s, Text::Free, p),
        Value::Array(items) => {
            count(items.len(), MAX_ENTRIES, p)?;
            items
                .iter()
                .enumerate()
                .try_for_each(|(i, x)| check_value(x, &p.index(i)))
        }
        Value::Object(map) => {
            count(map.len(), MAX_ENTRIES, p)?;
            map.iter().try_for_each(|(k, x)| {
                text(k, Text::Line, p)?;
                check_value(x, &JsonPath::Member(p, k))
            })
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => Ok(()),
    }
}

/// One kernel profile: its names printable, its counts integers the store keeps, its stacks
/// within the limits and adding up to its samples, and at least one operation to divide by.
fn check_profile(pr: &Profile, p: &JsonPath) -> Result<()> {
    bench_id(&pr.bench, &p.field("bench"))?;
    for (v, name) in [
        (&pr.unit, "unit"),
        (&pr.placement, "placement"),
        (&pr.scope, "scope"),
    ] {
        text(v, Text::Line, &p.field(name))?;
    }
    count(pr.cpus.len(), MAX_ENTRIES, &p.field("cpus"))?;
    for (v, name) in [
        (pr.iterations, "iterations"),
        (pr.operations, "operations"),
        (pr.wall_ns, "wall_ns"),
        (pr.sample_period_ns, "sample_period_ns"),
        (pr.samples, "samples"),
        (pr.samples_outside_region, "samples_outside_region"),
        (pr.samples_other, "samples_other"),
        (pr.lost_samples, "lost_samples"),
        (pr.throttled, "throttled"),
    ] {
        int(v, &p.field(name))?;
    }
    if pr.operations == 0 {
        return Err(ExchangeError::BadProfile {
            path: p.field("operations").to_string(),
            why: "it is 0, and a profile's figures are per operation".into(),
        });
    }
    let stacks = p.field("stacks");
    count(pr.stacks.len(), MAX_ENTRIES, &stacks)?;
    let mut sum: u64 = 0;
    for (k, &v) in &pr.stacks {
        let at = stacks.key(k);
        text(k, Text::Line, &at)?;
        if k.is_empty() {
            return Err(ExchangeError::BadProfile {
                path: at.to_string(),
                why: "a stack has at least one frame".into(),
            });
        }
        int(v, &at)?;
        sum = sum.saturating_add(v);
    }
    if sum != pr.samples {
        return Err(ExchangeError::BadProfile {
            path: p.field("samples").to_string(),
            why: format!(
                "it is {}, but the stacks hold {sum} samples; they must agree",
                pr.samples
            ),
        });
    }
    Ok(())
}

fn check_series(s: &Series, p: &JsonPath) -> Result<()> {
    bench_id(&s.id, &p.field("id"))?;
    for (v, name) in [
        (&s.suite, "suite"),
        (&s.figure, "figure"),
        (&s.figure_title, "figure_title"),
        (&s.curve, "curve"),
        (&s.x_name, "x_name"),
        (&s.x_unit, "x_unit"),
        (&s.unit, "unit"),
    ] {
        text(v, Text::Line, &p.field(name))?;
    }
    text(&s.paper, Text::Free, &p.field("paper"))?;
    opt_text(&s.paper_system, Text::Line, &p.field("paper_system"))?;
    let points = p.field("points");
    count(s.points.len(), MAX_RESULTS_PER_RUN, &points)?;
    for (i, pt) in s.points.iter().enumerate() {
        let pp = points.index(i);
        float(pt.x, &pp.field("x"))?;
        opt_text(&pt.label, Text::Line, &pp.field("label"))?;
        float(pt.bytes_per_op, &pp.field("bytes_per_op"))?;
        if let Some(y) = &pt.y {
            check_estimate(y, &pp.field("y"))?;
        }
        check_result(&pt.result, &pp.field("result"))?;
    }
    let printed = p.field("paper_points");
    count(s.paper_points.len(), MAX_ENTRIES, &printed)?;
    for (i, [x, y]) in s.paper_points.iter().enumerate() {
        float(*x, &printed.index(i).index(0))?;
        float(*y, &printed.index(i).index(1))?;
    }
    Ok(())
}

fn check_params(params: &RunParams, p: &JsonPath) -> Result<()> {
    let sel = p.field("selection");
    count(params.selection.len(), MAX_ENTRIES, &sel)?;
    for (i, s) in params.selection.iter().enumerate() {
        text(s, Text::Line, &sel.index(i))?;
    }
    let suites = p.field("suites");
    count(params.suites.len(), MAX_ENTRIES, &suites)?;
    for (i, s) in params.suites.iter().enumerate() {
        text(s, Text::Line, &suites.index(i))?;
    }
    // trials is a u32, which the store keeps exactly.
    float(params.min_time_s, &p.field("min_time_s"))?;
    text(&params.placement, Text::Line, &p.field("placement"))?;
    if let Some(cpus) = &params.cpus {
        count(cpus.len(), MAX_ENTRIES, &p.field("cpus"))?;
    }
    if let Some(ab) = &params.ab {
        let p = p.field("ab");
        for (name, v) in [
            ("side", &ab.side),
            ("partner", &ab.partner),
            ("design", &ab.design),
        ] {
            text(v, Text::Line, &p.field(name))?;
        }
        // A command line may hold newlines (a shell script), nothing a terminal interprets.
        if let Some(command) = &ab.command {
            text(command, Text::Free, &p.field("command"))?;
        }
    }
    float(params.timeout_s, &p.field("timeout_s"))
}

fn check_fingerprint(fp: &Fingerprint, p: &JsonPath) -> Result<()> {
    if let Some(h) = &fp.hostname {
        hostname(h, &p.field("hostname"))?;
    }
    let lines = [
        (&fp.os, "os"),
        (&fp.kernel_release, "kernel_release"),
        (&fp.kernel_version, "kernel_version"),
        (&fp.kernel_cmdline, "kernel_cmdline"),
        (&fp.arch, "arch"),
        (&fp.cpu_model, "cpu_model"),
        (&fp.virtualization, "virtualization"),
        (&fp.clocksource, "clocksource"),
        (&fp.cpufreq_governor, "cpufreq_governor"),
        (&fp.smt, "smt"),
        (&fp.thp, "thp"),
        (&fp.cgroup_version, "cgroup_version"),
        (&fp.nohz, "nohz"),
        (&fp.kernel_config_hash, "kernel_config_hash"),
        (&fp.microcode, "microcode"),
        (&fp.cpu_split, "cpu_split"),
    ];
    for (value, name) in lines {
        opt_text(value, Text::Line, &p.field(name))?;
    }
    let sysctls = p.field("sysctls");
    count(fp.sysctls.len(), MAX_ENTRIES, &sysctls)?;
    for (name, value) in &fp.sysctls {
        text(name, Text::Line, &sysctls)?;
        text(value, Text::Line, &sysctls.key(name))?;
    }
    // cores and threads are u32, which the store keeps exactly.
    opt_int(fp.memory_bytes, &p.field("memory_bytes"))?;
    let vulns = p.field("vulnerabilities");
    count(fp.vulnerabilities.len(), MAX_ENTRIES, &vulns)?;
    for (name, status) in &fp.vulnerabilities {
        // The key is checked at the map's path, its status at the key's.
        text(name, Text::Line, &vulns)?;
        text(status, Text::Line, &vulns.key(name))?;
    }
    opt_float(fp.cgroup_cpu_limit, &p.field("cgroup_cpu_limit"))?;
    opt_int(
        fp.cgroup_memory_limit_bytes,
        &p.field("cgroup_memory_limit_bytes"),
    )?;
    if let Some(load) = &fp.loadavg {
        let lp = p.field("loadavg");
        for (i, v) in load.iter().enumerate() {
            float(*v, &lp.index(i))?;
        }
    }
    Ok(())
}

fn check_result(r: &BenchResult, p: &JsonPath) -> Result<()> {
    bench_id(&r.id, &p.field("id"))?;
    text(&r.group, Text::Line, &p.field("group"))?;
    int(r.ops_per_iteration, &p.field("ops_per_iteration"))?;
    int(r.paper_count, &p.field("paper_count"))?;
    text(&r.unit, Text::Line, &p.field("unit"))?;
    text(&r.placement, Text::Line, &p.field("placement"))?;
    count(r.cpus.len(), MAX_ENTRIES, &p.field("cpus"))?;
    let trials = p.field("trials");
    count(r.trials.len(), MAX_TRIALS_PER_RESULT, &trials)?;
    for (i, t) in r.trials.iter().enumerate() {
        check_trial(t, &trials.index(i))?;
    }
    if let Some(s) = &r.summary {
        check_summary(s, &p.field("summary"))?;
    }
    opt_text(&r.error, Text::Free, &p.field("error"))
}

fn check_trial(t: &Trial, p: &JsonPath) -> Result<()> {
    int(t.iterations, &p.field("iterations"))?;
    int(t.wall_ns, &p.field("wall_ns"))?;
    check_usage(&t.usage, &p.field("usage"))?;
    check_usage(&t.worker_total, &p.field("worker_total"))?;
    if let Some(c) = &t.children {
        check_usage(c, &p.field("children"))?;
    }
    int(t.worker_rss_bytes, &p.field("worker_rss_bytes"))?;
    int(t.worker_maps, &p.field("worker_maps"))?;
    opt_int(t.migrations, &p.field("migrations"))?;
    // cpu_start and cpu_end are u32; kind and outlier were checked by their enums.
    if let Some(c) = &t.counters {
        check_counters(c, &p.field("counters"))?;
    }
    opt_text(&t.error, Text::Free, &p.field("error"))
}

fn check_counters(c: &Counters, p: &JsonPath) -> Result<()> {
    for (v, name) in [
        (c.task_clock_ns, "task_clock_ns"),
        (c.context_switches, "context_switches"),
        (c.cpu_migrations, "cpu_migrations"),
        (c.page_faults, "page_faults"),
        (c.cycles, "cycles"),
        (c.instructions, "instructions"),
        (c.interrupts_on_trial_cpus, "interrupts_on_trial_cpus"),
        (c.net_rx_softirqs, "net_rx_softirqs"),
        (c.net_tx_softirqs, "net_tx_softirqs"),
        (c.softirq_time_ns, "softirq_time_ns"),
    ] {
        opt_int(v, &p.field(name))?;
    }
    opt_text(&c.perf_error, Text::Free, &p.field("perf_error"))?;
    for (v, name) in [
        (c.interrupts, "interrupts"),
        (c.softirqs, "softirqs"),
        (c.system_context_switches, "system_context_switches"),
        (c.processes_created, "processes_created"),
        (c.pgfault, "pgfault"),
        (c.pgmajfault, "pgmajfault"),
        (c.pgpgin_kib, "pgpgin_kib"),
        (c.pgpgout_kib, "pgpgout_kib"),
        (c.pswpin_pages, "pswpin_pages"),
        (c.pswpout_pages, "pswpout_pages"),
        (c.disk_reads, "disk_reads"),
        (c.disk_writes, "disk_writes"),
        (c.disk_read_bytes, "disk_read_bytes"),
        (c.disk_write_bytes, "disk_write_bytes"),
    ] {
        int(v, &p.field(name))?;
    }
    let sources = p.field("interrupts_by_source");
    count(c.interrupts_by_source.len(), MAX_ENTRIES, &sources)?;
    for (name, &n) in &c.interrupts_by_source {
        // The name is checked at the map's path, its count at the name's.
        text(name, Text::Line, &sources)?;
        if name.is_empty() || name.len() > MAX_COUNTER_NAME_BYTES || name.contains(' ') {
            return Err(ExchangeError::BadCounterName {
                path: sources.to_string(),
                value: shown(name),
            });
        }
        int(n, &sources.key(name))?;
    }
    Ok(())
}

fn check_counter_summary(c: &CounterSummary, p: &JsonPath) -> Result<()> {
    usize_int(c.trials, &p.field("trials"))?;
    usize_int(c.perf_trials, &p.field("perf_trials"))?;
    for (v, name) in [
        (c.task_clock_ns_per_op, "task_clock_ns_per_op"),
        (c.context_switches_per_op, "context_switches_per_op"),
        (c.cpu_migrations_per_op, "cpu_migrations_per_op"),
        (c.page_faults_per_op, "page_faults_per_op"),
        (c.cycles_per_op, "cycles_per_op"),
        (c.instructions_per_op, "instructions_per_op"),
        (
            c.interrupts_on_trial_cpus_per_trial,
            "interrupts_on_trial_cpus_per_trial",
        ),
    ] {
        opt_float(v, &p.field(name))?;
    }
    for (v, name) in [
        (c.interrupts_per_trial, "interrupts_per_trial"),
        (c.interrupts_per_op, "interrupts_per_op"),
        (c.softirqs_per_trial, "softirqs_per_trial"),
        (c.disk_ios_per_trial, "disk_ios_per_trial"),
    ] {
        float(v, &p.field(name))?;
    }
    Ok(())
}

fn check_usage(u: &Usage, p: &JsonPath) -> Result<()> {
    int(u.user_ns, &p.field("user_ns"))?;
    int(u.sys_ns, &p.field("sys_ns"))?;
    int(u.minflt, &p.field("minflt"))?;
    int(u.majflt, &p.field("majflt"))?;
    int(u.nvcsw, &p.field("nvcsw"))?;
    int(u.nivcsw, &p.field("nivcsw"))
}

fn check_summary(s: &Summary, p: &JsonPath) -> Result<()> {
    check_estimate(&s.wall_ns_per_op, &p.field("wall_ns_per_op"))?;
    check_estimate(&s.user_ns_per_op, &p.field("user_ns_per_op"))?;
    check_estimate(&s.sys_ns_per_op, &p.field("sys_ns_per_op"))?;
    if let Some(w) = &s.whole {
        let p = p.field("whole");
        check_estimate(&w.user_ns_per_op, &p.field("user_ns_per_op"))?;
        check_estimate(&w.sys_ns_per_op, &p.field("sys_ns_per_op"))?;
    }
    float(s.minflt_per_op, &p.field("minflt_per_op"))?;
    float(s.majflt_per_op, &p.field("majflt_per_op"))?;
    float(s.csw_per_op, &p.field("csw_per_op"))?;
    float(s.nvcsw_per_op, &p.field("nvcsw_per_op"))?;
    float(s.nivcsw_per_op, &p.field("nivcsw_per_op"))?;
    opt_float(s.migrations_per_op, &p.field("migrations_per_op"))?;
    int(s.worker_rss_bytes, &p.field("worker_rss_bytes"))?;
    int(s.worker_maps, &p.field("worker_maps"))?;
    if let Some(c) = &s.counters {
        check_counter_summary(c, &p.field("counters"))?;
    }
    Ok(())
}

/// The largest time per operation an estimate may hold: 10,000 s (a whole time-sharing
/// script is seconds; the VAX's slowest published operation is 15 ms).
pub const MAX_NS_PER_OP: f64 = 1e13;

fn check_estimate(e: &Estimate, p: &JsonPath) -> Result<()> {
    let implausible = |field: &'static str, value: f64, why| {
        Err(ExchangeError::Implausible {
            path: p.field(field).to_string(),
            value,
            why,
        })
    };
    for (field, v) in [
        ("median", e.median),
        ("ci_low", e.ci_low),
        ("ci_high", e.ci_high),
        ("min", e.min),
        ("max", e.max),
        ("mean", e.mean),
    ] {
        float(v, &p.field(field))?;
        if v.abs() > MAX_NS_PER_OP {
            return implausible(
                field,
                v,
                "more than 10,000 s per operation; the file was not written by sysperf as measured",
            );
        }
    }
    float(e.ci_level, &p.field("ci_level"))?;
    if !(0.0..=1.0).contains(&e.ci_level) {
        return implausible("ci_level", e.ci_level, "a level is a probability, 0 to 1");
    }
    // Order statistics: the interval and the range hold the median (a rounding's slack).
    let slack = 1e-9 * e.median.abs().max(1.0);
    if e.ci_low > e.median + slack || e.median > e.ci_high + slack {
        return implausible(
            "median",
            e.median,
            "it lies outside its own interval [ci_low, ci_high]",
        );
    }
    if e.min > e.median + slack || e.median > e.max + slack {
        return implausible("median", e.median, "it lies outside [min, max]");
    }
    float(e.mean, &p.field("mean"))?;
    float(e.cv, &p.field("cv"))?;
    usize_int(e.n, &p.field("n"))
}

/// What `import` prints: one line per run in file order, "imported ID (LABEL) from FILE" or
/// "already present: ID", where `batches` says how many of `runs` (in order) each file held
/// and `saved` which runs `Backend::save_runs` stored.
pub fn import_summary(batches: &[(&PathBuf, usize)], runs: &[Run], saved: &[bool]) -> String {
    let heads: Vec<Head> = runs.iter().map(Head::of_run).collect();
    import_lines(batches, heads.iter(), saved)
}

/// What an import keeps of each run or observation it reads, to say what became of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Head {
    /// None for a run; an observation's kind in words ("trace", "system profile").
    pub kind: Option<&'static str>,
    pub id: String,
    pub label: Option<String>,
}

impl Head {
    pub fn of_run(run: &Run) -> Head {
        Head {
            kind: None,
            id: run.id.clone(),
            label: run.label.clone(),
        }
    }

    pub fn of_observation(o: &Observation) -> Head {
        Head {
            kind: Some(o.kind_words()),
            id: o.id().to_string(),
            label: o.label().map(str::to_string),
        }
    }
}

/// [`import_summary`] from what was kept of each run and observation ([`Head`]: an import
/// that streams them keeps no more), in the order they were read: "imported ID (LABEL) from
/// FILE", "imported trace ID (LABEL) from FILE", "already present: ID", "already present:
/// trace ID".
pub fn import_lines<'a>(
    batches: &[(&PathBuf, usize)],
    mut heads: impl Iterator<Item = &'a Head>,
    saved: &[bool],
) -> String {
    let mut saved = saved.iter();
    let mut text = String::new();
    for (path, n) in batches {
        for head in heads.by_ref().take(*n) {
            let what = match head.kind {
                Some(kind) => format!("{kind} {}", head.id),
                None => head.id.clone(),
            };
            text.push_str(
                &match (saved.next().copied().unwrap_or(false), &head.label) {
                    (true, Some(label)) => {
                        format!("imported {what} ({label}) from {}\n", path.display())
                    }
                    (true, None) => format!("imported {what} from {}\n", path.display()),
                    (false, _) => format!("already present: {what}\n"),
                },
            );
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_streamed_export_is_the_same_bytes_and_stops_at_the_limit() {
        let runs = two_runs();
        let profile = profile("syscall");
        for profiles in [vec![], vec![vec![], vec![profile.clone(), profile]]] {
            let whole = export_with_profiles(&runs, &profiles).unwrap();
            let mut w = ExportWriter::new(Vec::new()).unwrap();
            for r in &runs {
                w.run(r).unwrap();
            }
            let none: Vec<Profile> = Vec::new();
            let mut order: Vec<(&str, &[Profile])> = runs
                .iter()
                .zip(profiles.iter().chain(std::iter::repeat(&none)))
                .map(|(r, p)| (r.id.as_str(), p.as_slice()))
                .collect();
            order.sort_by_key(|(id, _)| *id);
            for (id, p) in order {
                w.profiles(id, p).unwrap();
            }
            let (bytes, n) = w.finish().unwrap();
            assert_eq!(
                String::from_utf8(bytes.clone()).unwrap(),
                String::from_utf8(whole).unwrap()
            );
            assert_eq!(n, bytes.len() as u64);
        }
        // The same run twice, and no run at all, are refused as the whole export refuses them.
        let mut w = ExportWriter::new(Vec::new()).unwrap();
        w.run(&runs[0]).unwrap();
        assert!(matches!(
            w.run(&runs[0]),
            Err(ExchangeError::DuplicateRun { .. })
        ));
        assert!(matches!(
            ExportWriter::new(Vec::new()).unwrap().finish(),
            Err(ExchangeError::NoRuns)
        ));
        // Past the limit it stops, having written no more than the limit.
        let mut big = runs[0].clone();
        let mut w = ExportWriter::new(Vec::new()).unwrap();
        w.limit = 100_000;
        let mut stopped = None;
        for i in 0..1000 {
            big.id = format!("{i:012x}");
            if let Err(e) = w.run(&big) {
                stopped = Some(e);
                break;
            }
        }
        assert!(
            matches!(stopped, Some(ExchangeError::TooLarge { .. })),
            "{stopped:?}"
        );
        assert!(w.written <= 100_000 && w.out.len() as u64 == w.written);
    }
    use crate::model::Fingerprint;
    use crate::report::fixture_run;
    use proptest::prelude::*;
    use serde_json::{json, Value};

    /// The fixture (fully populated) and a sparse second run.
    fn two_runs() -> Vec<Run> {
        let a = fixture_run();
        let mut b = fixture_run();
        b.id = "0123456789ab".into();
        b.label = None;
        b.ended_ns = None;
        b.complete = false;
        b.overhead = None;
        b.fingerprint = Fingerprint::default();
        b.results.truncate(2);
        b.results[1].summary = None;
        b.derived.clear();
        b.warnings.clear();
        vec![a, b]
    }

    fn doc() -> Value {
        serde_json::from_slice(&export(&two_runs()).unwrap()).unwrap()
    }

    fn profile(bench: &str) -> Profile {
        Profile {
            bench: bench.into(),
            unit: "call".into(),
            placement: "single".into(),
            cpus: vec![1],
            iterations: 1000,
            operations: 1000,
            wall_ns: 1_000_000,
            sample_period_ns: 200_000,
            scope: "per-task".into(),
            samples: 7,
            samples_outside_region: 1,
            samples_other: 0,
            lost_samples: 0,
            throttled: 0,
            stacks: [("a;b".to_string(), 5), ("[user] sysperf:x".to_string(), 2)].into(),
        }
    }

    /// Two runs, the first with two profiles (`run --profile`), as an export document.
    fn doc_with_profiles() -> Value {
        let profiles = vec![vec![profile("syscall"), profile("csw")], vec![]];
        let bytes = export_with_profiles(&two_runs(), &profiles).unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[test]
    fn profiles_travel_with_their_run_and_come_back_the_same() {
        let runs = two_runs();
        let profiles = vec![vec![profile("syscall"), profile("csw")], vec![]];
        let bytes = export_with_profiles(&runs, &profiles).unwrap();
        let back = import_with_profiles(&bytes).unwrap();
        assert_eq!(back.runs, runs);
        assert_eq!(back.profiles, profiles);
        // Exported again, the same bytes; without profiles, no "profiles" field at all.
        assert_eq!(
            export_with_profiles(&back.runs, &back.profiles).unwrap(),
            bytes
        );
        assert!(
            serde_json::from_slice::<Value>(&export(&runs).unwrap()).unwrap()["profiles"].is_null()
        );
        // A file written before profiles were exported imports with none.
        let old = import_with_profiles(&export(&runs).unwrap()).unwrap();
        assert_eq!(old.profiles, vec![Vec::<Profile>::new(), Vec::new()]);
    }

    /// A stored trace (`trace --store`) of a real report, and a system profile.
    fn observations() -> Vec<Observation> {
        let fp = Fingerprint {
            hostname: Some("tracer".into()),
            ..Fingerprint::default()
        };
        let trace = crate::report::trace::tests::fixture()
            .stored("cccc00000001".into(), Some("t".into()), 10, fp)
            .unwrap();
        let mut sys = crate::profile::system::Aggregator::new(10).finish();
        sys.id = "aaaa00000002".into();
        sys.started_ns = 20;
        sys.wall_ns = 3_000_000_000;
        sys.stacks.insert("a;b".into(), 7);
        sys.samples = 7;
        sys.sample_period_ns = 1_000_003;
        vec![
            Observation::Trace(Box::new(trace)),
            Observation::SystemProfile(Box::new(sys)),
        ]
    }

    /// Runs, profiles and observations as an export document.
    fn doc_with_observations() -> Value {
        let profiles = vec![vec![profile("syscall")], vec![]];
        let bytes = export_all(&two_runs(), &profiles, &observations()).unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    /// The same bytes from the streaming writer as from the whole document.
    fn written(runs: &[Run], profiles: &[Vec<Profile>], obs: &[Observation]) -> Vec<u8> {
        let mut w = ExportWriter::new(Vec::new()).unwrap();
        for r in runs {
            w.run(r).unwrap();
        }
        let mut order: Vec<(&str, &[Profile])> = runs
            .iter()
            .zip(profiles)
            .map(|(r, p)| (r.id.as_str(), p.as_slice()))
            .collect();
        order.sort_by_key(|(id, _)| *id);
        for (id, p) in order {
            w.profiles(id, p).unwrap();
        }
        for o in obs {
            w.observation(o).unwrap();
        }
        w.finish().unwrap().0
    }

    /// Observations travel after the runs, each as `{"kind", "observation"}` with the stored
    /// serde form, and an export, imported and exported again, is the same bytes; with or
    /// without runs and profiles, and from the streaming writer as from the whole document.
    #[test]
    fn observations_travel_and_come_back_byte_identical() {
        let runs = two_runs();
        let obs = observations();
        let with = vec![vec![profile("syscall")], vec![]];
        let none: Vec<Vec<Profile>> = vec![vec![], vec![]];
        for (runs, profiles) in [(&runs[..], &with), (&runs[..], &none), (&[][..], &none)] {
            let profiles = &profiles[..runs.len()];
            let bytes = export_all(runs, profiles, &obs).unwrap();
            assert_eq!(
                String::from_utf8(written(runs, profiles, &obs)).unwrap(),
                String::from_utf8(bytes.clone()).unwrap()
            );
            let back = import_with_profiles(&bytes).unwrap();
            assert_eq!(back.runs, runs);
            assert_eq!(back.observations, obs);
            assert_eq!(
                export_all(&back.runs, &back.profiles, &back.observations).unwrap(),
                bytes
            );
        }
        let text = String::from_utf8(export_all(&runs, &with, &obs).unwrap()).unwrap();
        let at = |key: &str| text.find(&format!("\n  \"{key}\": ")).expect(key);
        assert!(at("runs") < at("profiles") && at("profiles") < at("observations"));
        let v = doc_with_observations();
        assert_eq!(v["format_version"], 1);
        assert_eq!(v["observations"][0]["kind"], crate::model::TRACE_KIND);
        assert_eq!(
            v["observations"][1]["kind"],
            crate::model::SYSTEM_PROFILE_KIND
        );
        let Observation::Trace(t) = &obs[0] else {
            unreachable!()
        };
        assert_eq!(
            v["observations"][0]["observation"],
            serde_json::to_value(t).unwrap()
        );
        // Without observations, no "observations" field.
        assert!(
            serde_json::from_slice::<Value>(&export(&runs).unwrap()).unwrap()["observations"]
                .is_null()
        );
        // Files read whole by path (sync) carry them too.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.json");
        std::fs::write(&path, export_all(&runs, &[], &obs).unwrap()).unwrap();
        assert_eq!(import_file(&path).unwrap().observations, obs);
    }

    /// A document of observations alone is read and written; one of nothing at all is refused,
    /// as a document of no runs was.
    #[test]
    fn an_export_of_observations_alone_is_one_and_of_nothing_is_not() {
        let obs = observations();
        let bytes = export_all(&[], &[], &obs[..1]).unwrap();
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["runs"], json!([]));
        let back = import_with_profiles(&bytes).unwrap();
        assert!(back.runs.is_empty() && back.profiles.is_empty());
        assert_eq!(back.observations, obs[..1]);
        assert!(matches!(
            export_all(&[], &[], &[]),
            Err(ExchangeError::NoRuns)
        ));
        assert!(matches!(
            ExportWriter::new(Vec::new()).unwrap().finish(),
            Err(ExchangeError::NoRuns)
        ));
        for empty in [json!([]), Value::Null] {
            let mut v = v.clone();
            if empty.is_null() {
                v.as_object_mut().unwrap().remove("observations");
            } else {
                v["observations"] = empty;
            }
            let e = import_value(&v).unwrap_err();
            assert!(matches!(e, ExchangeError::NoRuns), "{e}");
            assert!(e.to_string().contains("no runs"), "{e}");
        }
    }

    /// Every observation is checked on reading, and the first problem named with its path:
    /// its id, kind, type, figures the store keeps as i64, strings, a trace's report; an id
    /// twice is refused as a run's is. The writer refuses what the reader would.
    #[test]
    fn a_bad_observation_is_refused_with_its_path() {
        let cases: Vec<(&str, Value, &str)> = vec![
            (
                "/observations/0/observation/id",
                json!("CCCC00000001"),
                "observations[0].observation.id \"CCCC00000001\" is not an observation id",
            ),
            (
                "/observations/1/kind",
                json!("flame"),
                "unknown variant `flame`",
            ),
            (
                "/observations/0/observation/wall_ns",
                json!(u64::MAX),
                "observations[0].observation.wall_ns is 18446744073709551615, larger than 2^63 - 1",
            ),
            (
                "/observations/0/observation/wall_ns",
                json!("soon"),
                "observations[0].observation.wall_ns: invalid type: string",
            ),
            (
                "/observations/0/observation/report/runs",
                json!("none"),
                "observations[0].observation.report: not a report of 'sysperf trace'",
            ),
            (
                "/observations/0/observation/label",
                json!("a\u{1b}[31m"),
                "observations[0].observation.label contains the control character U+001B",
            ),
            (
                "/observations/1/observation/stacks",
                json!({"a\u{7}": 7}),
                "observations[1].observation.stacks contains the control character U+0007",
            ),
            (
                "/observations/1/observation/hostname",
                json!("a b"),
                "observations[1].observation.hostname \"a b\" is not a hostname",
            ),
            (
                "/observations/0/observation/bench",
                json!(""),
                "observations[0].observation.bench \"\" is not a benchmark id",
            ),
        ];
        for (at, value, expected) in cases {
            let mut v = doc_with_observations();
            *v.pointer_mut(at).unwrap() = value;
            let e = import_value(&v).unwrap_err();
            assert_one_line(&e);
            assert!(e.to_string().contains(expected), "{at}: {e}");
        }
        // No kind, no observation.
        for key in ["kind", "observation"] {
            let mut v = doc_with_observations();
            v["observations"][0].as_object_mut().unwrap().remove(key);
            let e = import_value(&v).unwrap_err().to_string();
            assert!(
                e.contains("observations[0]") && e.contains(&format!("missing field `{key}`")),
                "{e}"
            );
        }
        // The same observation twice.
        let mut v = doc_with_observations();
        v["observations"][1] = v["observations"][0].clone();
        let e = import_value(&v).unwrap_err();
        assert!(
            matches!(
                e,
                ExchangeError::DuplicateObservation {
                    first: 0,
                    second: 1,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e
            .to_string()
            .contains("an export holds each observation once"));
        let obs = observations();
        let twice = [obs[0].clone(), obs[0].clone()];
        assert!(matches!(
            export_all(&[], &[], &twice),
            Err(ExchangeError::DuplicateObservation { .. })
        ));
        let mut w = ExportWriter::new(Vec::new()).unwrap();
        w.observation(&obs[0]).unwrap();
        assert!(w.observation(&obs[0]).is_err());
        // What the reader refuses, the writers refuse, naming the observation.
        let mut bad = obs[1].clone();
        if let Observation::SystemProfile(p) = &mut bad {
            p.id = "xyz".into();
        }
        let e = export_all(&[], &[], &[bad.clone()])
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("observation \"xyz\" cannot be exported: observations[0].observation.id"),
            "{e}"
        );
        let e = ExportWriter::new(Vec::new())
            .unwrap()
            .observation(&bad)
            .unwrap_err();
        assert!(
            matches!(e, ExchangeError::ObservationNotExportable { .. }),
            "{e}"
        );
        // A profile after the observations would be out of the document's order.
        let mut w = ExportWriter::new(Vec::new()).unwrap();
        w.run(&two_runs()[0]).unwrap();
        w.observation(&obs[0]).unwrap();
        assert!(w
            .profiles(&two_runs()[0].id, &[profile("syscall")])
            .is_err());
    }

    /// The first pass walks and counts the observations as it does the runs, before anything
    /// is built: a list too long or too deep in one is refused with its path.
    #[test]
    fn the_first_pass_counts_observations() {
        let mut v = doc_with_observations();
        v["observations"][0]["observation"]["report"]["warnings"] =
            json!(vec![""; MAX_ANY_LIST + 1]);
        let e = import_value(&v).unwrap_err();
        assert!(matches!(e, ExchangeError::TooManyEntries { .. }), "{e}");
        assert!(
            e.to_string().contains(
                "observations[0].observation.report.warnings has more than 100000 entries"
            ),
            "{e}"
        );
        let mut v = doc_with_observations();
        v["observations"][1]["observation"]["note"] =
            serde_json::from_str(&format!("{}1{}", "[".repeat(40), "]".repeat(40))).unwrap();
        let e = import_value(&v).unwrap_err().to_string();
        assert!(
            e.contains("observations[1].observation.note[0]")
                && e.contains("nests lists and objects more than 32 deep"),
            "{e}"
        );
    }

    /// The streaming pass of an export of many runs: each run is handed over before the next is
    /// read (a bad run late in the file comes after the good ones before it were handed over,
    /// which a pass that builds every run first cannot do), profiles come after their run
    /// wherever they are in the file, and an error of the caller stops the read as it is.
    #[test]
    fn import_streams_one_run_at_a_time() {
        let base = two_runs()[0].clone();
        let runs: Vec<Run> = (0..300)
            .map(|i| Run {
                id: format!("{i:012x}"),
                ..base.clone()
            })
            .collect();
        let mut profiles = vec![Vec::new(); runs.len()];
        profiles[7] = vec![profile("syscall")];
        let bytes = export_with_profiles(&runs, &profiles).unwrap();
        let mut seen = Vec::new();
        stream::<ExchangeError>(&bytes, &mut |item| {
            seen.push(match item {
                Streamed::Run(r) => r.id,
                Streamed::Profiles { id, .. } => format!("profiles of {id}"),
                Streamed::Observation(o) => format!("observation {}", o.id()),
            });
            Ok(())
        })
        .unwrap();
        let mut expected: Vec<String> = runs.iter().map(|r| r.id.clone()).collect();
        expected.push(format!("profiles of {}", runs[7].id));
        assert_eq!(seen, expected);
        assert_eq!(
            import_with_profiles(&bytes).unwrap(),
            Imported {
                runs: runs.clone(),
                profiles: profiles.clone(),
                observations: Vec::new(),
            }
        );

        // A bad value in run 250: the 250 runs before it were handed over, one by one.
        let mut doc: Value = serde_json::from_slice(&bytes).unwrap();
        doc["runs"][250]["fingerprint"]["hostname"] = json!("bad host");
        let spoiled = serde_json::to_vec(&doc).unwrap();
        let mut handed = 0;
        let e = stream::<ExchangeError>(&spoiled, &mut |_| {
            handed += 1;
            Ok(())
        })
        .unwrap_err();
        assert_eq!(handed, 250);
        assert!(
            e.to_string().starts_with("runs[250].fingerprint.hostname"),
            "{e}"
        );
        // A type error deep in a run names its whole path, as before.
        let mut doc: Value = serde_json::from_slice(&bytes).unwrap();
        doc["runs"][3]["results"][0]["trials"] = json!("many");
        let e = import(&serde_json::to_vec(&doc).unwrap()).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("runs[3].results[0].trials: invalid type"),
            "{e}"
        );

        // Profiles written before the runs are handed over after them, and checked alike.
        let mut doc: serde_json::Map<String, Value> = serde_json::from_slice(&bytes).unwrap();
        let p = doc.remove("profiles").unwrap();
        let r = doc.remove("runs").unwrap();
        let mut early = serde_json::Map::new();
        early.insert("format".into(), json!(FORMAT));
        early.insert("format_version".into(), json!(FORMAT_VERSION));
        early.insert("profiles".into(), p);
        early.insert("runs".into(), r);
        let early = serde_json::to_vec(&Value::Object(early)).unwrap();
        let mut last = None;
        stream::<ExchangeError>(&early, &mut |item| {
            last = Some(item);
            Ok(())
        })
        .unwrap();
        assert!(matches!(last, Some(Streamed::Profiles { id, .. }) if id == runs[7].id));

        // The caller's own error stops the read, after the run it refused.
        #[derive(Debug)]
        struct Full(usize);
        impl From<ExchangeError> for Full {
            fn from(_: ExchangeError) -> Full {
                Full(usize::MAX)
            }
        }
        let mut n = 0;
        let e = stream::<Full>(&bytes, &mut |_| {
            n += 1;
            if n == 10 {
                Err(Full(n))
            } else {
                Ok(())
            }
        })
        .unwrap_err();
        assert_eq!((e.0, n), (10, 10));

        // Read from a file, the same runs in the same order.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("many.json");
        std::fs::write(&path, &bytes).unwrap();
        let mut from_file = Vec::new();
        stream_file::<ExchangeError>(&path, &mut |item| {
            if let Streamed::Run(r) = item {
                from_file.push(*r);
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(from_file, runs);
    }

    #[test]
    fn imported_profiles_are_checked_like_every_other_field() {
        let id = two_runs()[0].id.clone();
        type Spoil<'a> = Box<dyn Fn(&mut Value) + 'a>;
        let cases: Vec<(Spoil, &str)> = vec![
            (
                Box::new(|v| {
                    let p = v["profiles"].as_object_mut().unwrap().remove(&id).unwrap();
                    v["profiles"]["ffffffffffff"] = p;
                }),
                "profiles[\"ffffffffffff\"] is a profile of run \"ffffffffffff\", which the file does not hold",
            ),
            (
                Box::new(|v| v["profiles"][&id][0]["bench"] = json!("sys call")),
                "is not a benchmark id",
            ),
            (
                Box::new(|v| v["profiles"][&id][1]["unit"] = json!("call\u{1b}[31m")),
                "unit contains the control character U+001B",
            ),
            (
                Box::new(|v| v["profiles"][&id][0]["stacks"]["a;b\u{7}"] = json!(0)),
                "contains the control character U+0007",
            ),
            (
                Box::new(|v| v["profiles"][&id][0]["samples"] = json!(8)),
                "samples: it is 8, but the stacks hold 7 samples",
            ),
            (
                Box::new(|v| v["profiles"][&id][0]["operations"] = json!(0)),
                "operations: it is 0",
            ),
            (
                Box::new(|v| v["profiles"][&id][0]["wall_ns"] = json!(u64::MAX)),
                "wall_ns is 18446744073709551615, larger than 2^63 - 1",
            ),
            (
                Box::new(|v| v["profiles"][&id][0]["wall_ns"] = json!(1.5)),
                "wall_ns",
            ),
            (
                Box::new(|v| v["profiles"][&id][0]["stacks"]["x"] = json!(-1)),
                "stacks",
            ),
            (
                Box::new(|v| v["profiles"][&id][0]["cpus"] = json!(vec![0; MAX_ENTRIES + 1])),
                // Counted by the first pass, before anything is built.
                "[0].cpus has more than 100000 entries",
            ),
        ];
        for (spoil, needle) in cases {
            let mut v = doc_with_profiles();
            spoil(&mut v);
            let e = import_with_profiles(&serde_json::to_vec(&v).unwrap()).unwrap_err();
            assert_one_line(&e);
            assert!(e.is_user_error());
            assert!(e.to_string().contains(needle), "{needle}: {e}");
        }
        // export refuses what import would.
        let mut bad = profile("syscall");
        bad.samples = 99;
        let e = export_with_profiles(&two_runs(), &[vec![bad]]).unwrap_err();
        assert!(e.to_string().contains("cannot be exported"), "{e}");
    }

    fn import_value(v: &Value) -> Result<Vec<Run>> {
        import(&serde_json::to_vec(v).unwrap())
    }

    /// Every error is one line that names something, and is short even for a hostile file.
    fn assert_one_line(e: &ExchangeError) {
        let m = e.to_string();
        assert!(
            !m.is_empty() && !m.contains('\n') && !m.contains('\r'),
            "{m:?}"
        );
        assert!(m.len() < 1000, "{} bytes: {}", m.len(), &m[..200]);
    }

    #[test]
    fn export_then_import_is_lossless_and_byte_stable() {
        let mut runs = two_runs();
        // Floats that a naive writer or reader would round.
        let s = runs[0].results[0].summary.as_mut().unwrap();
        s.wall_ns_per_op.median = 0.1 + 0.2;
        (s.wall_ns_per_op.ci_low, s.wall_ns_per_op.ci_high) = (0.1, 0.1 + 0.7);
        s.wall_ns_per_op.min = 5e-324;
        s.wall_ns_per_op.max = 9_999_999_999_999.123; // near the 10,000 s limit
        s.wall_ns_per_op.cv = -0.0;
        s.minflt_per_op = 1.0 / 3.0;
        runs[0].fingerprint.loadavg = Some([f64::MIN_POSITIVE, 2.5e-308, 123456.789]);
        runs[0].fingerprint.memory_bytes = Some(i64::MAX as u64);
        runs[0].results[0].trials[0].wall_ns = i64::MAX as u64;
        runs[0].started_ns = i64::MIN;
        let bytes = export(&runs).unwrap();
        let back = import(&bytes).unwrap();
        assert_eq!(back, runs);
        let bits = |r: &Run| {
            let s = r.results[0].summary.as_ref().unwrap();
            [
                s.wall_ns_per_op.median.to_bits(),
                s.wall_ns_per_op.min.to_bits(),
                s.wall_ns_per_op.max.to_bits(),
                s.wall_ns_per_op.cv.to_bits(),
                s.minflt_per_op.to_bits(),
            ]
        };
        assert_eq!(bits(&back[0]), bits(&runs[0]));
        assert_eq!(export(&back).unwrap(), bytes);
        assert!(bytes.ends_with(b"}\n"));
    }

    #[test]
    fn series_travel_losslessly_and_are_validated() {
        let runs = vec![crate::report::fixture_suites_run()];
        let bytes = export(&runs).unwrap();
        assert_eq!(import(&bytes).unwrap(), runs);
        let mut v: Value = serde_json::from_slice(&bytes).unwrap();
        v["runs"][0]["series"][0]["curve"] = json!("pipe\u{1b}[31m");
        let e = import_value(&v).unwrap_err().to_string();
        assert!(e.contains("runs[0].series[0].curve"), "{e}");
        let mut v: Value = serde_json::from_slice(&bytes).unwrap();
        v["runs"][0]["series"][1]["points"][0]["result"]["trials"][0]["wall_ns"] = json!(u64::MAX);
        let e = import_value(&v).unwrap_err().to_string();
        assert!(
            e.contains("runs[0].series[1].points[0].result.trials[0].wall_ns"),
            "{e}"
        );
        // Runs from before the suites existed have none.
        let mut v: Value = serde_json::from_slice(&bytes).unwrap();
        let r = v["runs"][0].as_object_mut().unwrap();
        r.remove("series");
        r.remove("notes");
        let back = import_value(&v).unwrap();
        assert!(back[0].series.is_empty() && back[0].notes.is_empty());
    }

    #[test]
    fn document_is_versioned_and_holds_each_run_as_the_model_serializes_it() {
        let runs = two_runs();
        let v = doc();
        assert_eq!(v["format"], "sysperf-export");
        assert_eq!(v["format_version"], 1);
        let listed = v["runs"].as_array().unwrap();
        assert_eq!(listed.len(), 2);
        for (entry, run) in listed.iter().zip(&runs) {
            assert_eq!(*entry, serde_json::to_value(run).unwrap());
            // Raw trials are there, not only summaries.
            assert!(!entry["results"][0]["trials"].as_array().unwrap().is_empty());
        }
    }

    #[test]
    fn boundaries_that_are_allowed() {
        let mut v = doc();
        let r = &mut v["runs"][0];
        r["label"] = json!("x".repeat(MAX_LABEL_CHARS));
        r["fingerprint"]["hostname"] = json!(format!("{}.example_1-a", "h".repeat(237)));
        r["results"][0]["trials"][0]["wall_ns"] = json!(i64::MAX);
        r["warnings"][0]["message"] = json!("two\nlines\tand a tab");
        r["warnings"][0]["bench"] = json!("gausspage.inf");
        let back = import_value(&v).unwrap();
        assert_eq!(back[0].results[0].trials[0].wall_ns, i64::MAX as u64);
        // A missing source is an older run: measured.
        let mut v = doc();
        v["runs"][0].as_object_mut().unwrap().remove("source");
        assert_eq!(import_value(&v).unwrap()[0].source, "measured");
    }

    #[test]
    fn hostile_values_are_refused_with_their_path() {
        type Mutate = fn(&mut Value);
        let cases: Vec<(&str, Mutate, &str)> = vec![
            (
                "html hostname",
                |v| v["runs"][0]["fingerprint"]["hostname"] = json!("<script>alert(1)</script>"),
                "runs[0].fingerprint.hostname \"<script>alert(1)</script>\" is not a hostname",
            ),
            (
                "control character in hostname",
                |v| v["runs"][0]["fingerprint"]["hostname"] = json!("vm\u{7}"),
                "runs[0].fingerprint.hostname contains the control character U+0007",
            ),
            (
                "long hostname",
                |v| v["runs"][0]["fingerprint"]["hostname"] = json!("h".repeat(254)),
                "longer than 253",
            ),
            (
                "empty hostname",
                |v| v["runs"][0]["fingerprint"]["hostname"] = json!(""),
                "it is empty",
            ),
            (
                "newline in label",
                |v| v["runs"][1]["label"] = json!("a\nb"),
                "runs[1].label contains the control character U+000A",
            ),
            (
                "long label",
                |v| v["runs"][0]["label"] = json!("x".repeat(201)),
                "runs[0].label is 201 characters long",
            ),
            (
                "escape sequence in a message",
                |v| v["runs"][0]["warnings"][0]["message"] = json!("\u{1b}[2J"),
                "runs[0].warnings[0].message contains the control character U+001B",
            ),
            (
                "run id not hex",
                |v| v["runs"][0]["id"] = json!("zzzzzzzzzzzz"),
                "runs[0].id \"zzzzzzzzzzzz\" is not a run id",
            ),
            (
                "run id in upper case",
                |v| v["runs"][0]["id"] = json!("5F2C9A1B3D7E"),
                "is not a run id",
            ),
            (
                "run id too short",
                |v| v["runs"][0]["id"] = json!("5f2c"),
                "is not a run id",
            ),
            (
                "benchmark id with a space",
                |v| v["runs"][0]["results"][1]["id"] = json!("sys call"),
                "runs[0].results[1].id \"sys call\" is not a benchmark id",
            ),
            (
                "empty benchmark id in a warning",
                |v| v["runs"][0]["warnings"][0]["bench"] = json!(""),
                "runs[0].warnings[0].bench \"\" is not a benchmark id",
            ),
            (
                "u64 of 2^64 - 1",
                |v| v["runs"][0]["results"][0]["trials"][1]["wall_ns"] = json!(u64::MAX),
                "runs[0].results[0].trials[1].wall_ns is 18446744073709551615, larger than 2^63 - 1",
            ),
            (
                "u64 of 2^63",
                |v| v["runs"][0]["fingerprint"]["memory_bytes"] = json!(1u64 << 63),
                "runs[0].fingerprint.memory_bytes is 9223372036854775808",
            ),
            (
                "usage counter too large",
                |v| {
                    v["runs"][0]["results"][2]["trials"][0]["worker_total"]["nivcsw"] =
                        json!(u64::MAX)
                },
                "runs[0].results[2].trials[0].worker_total.nivcsw is 18446744073709551615",
            ),
            (
                "estimate count too large",
                |v| {
                    v["runs"][0]["results"][0]["summary"]["sys_ns_per_op"]["n"] = json!(u64::MAX)
                },
                "runs[0].results[0].summary.sys_ns_per_op.n is 18446744073709551615",
            ),
            (
                "negative u64",
                |v| v["runs"][0]["results"][0]["trials"][0]["iterations"] = json!(-1),
                "runs[0].results[0].trials[0].iterations: invalid value: integer `-1`, expected u64",
            ),
            (
                "number as a string",
                |v| v["runs"][0]["results"][0]["paper_count"] = json!("100000"),
                "runs[0].results[0].paper_count: invalid type: string \"100000\", expected u64",
            ),
            (
                "u64 beyond 2^64",
                |v| v["runs"][0]["results"][0]["paper_count"] = json!(1e20),
                "runs[0].results[0].paper_count: invalid type: floating point",
            ),
            (
                "u32 too large",
                |v| v["runs"][0]["fingerprint"]["cores"] = json!(1u64 << 40),
                "runs[0].fingerprint.cores: invalid value",
            ),
            (
                "missing field",
                |v| {
                    v["runs"][0].as_object_mut().unwrap().remove("complete");
                },
                "runs[0]: missing field `complete`",
            ),
            (
                "unknown trial kind",
                |v| v["runs"][0]["results"][0]["trials"][0]["kind"] = json!("imagined"),
                "runs[0].results[0].trials[0].kind: unknown variant `imagined`",
            ),
            (
                "sysctl value with a control character",
                |v| v["runs"][0]["fingerprint"]["sysctls"] = json!({"vm.swappiness": "60\u{1b}[2J"}),
                "runs[0].fingerprint.sysctls[\"vm.swappiness\"] contains the control character U+001B",
            ),
            (
                "vulnerability status with a control character",
                |v| v["runs"][0]["fingerprint"]["vulnerabilities"] = json!({"meltdown": "ok\u{0}"}),
                "runs[0].fingerprint.vulnerabilities[\"meltdown\"] contains the control character U+0000",
            ),
            (
                "unknown source",
                |v| v["runs"][0]["source"] = json!("stolen"),
                "runs[0].source is \"stolen\"",
            ),
            (
                "string over the cap",
                |v| v["runs"][0]["results"][4]["error"] = json!("e".repeat(MAX_STRING_BYTES + 1)),
                "runs[0].results[4].error is a string of 65537 bytes, longer than the 65536 allowed",
            ),
            (
                "duplicate run ids",
                |v| v["runs"][1]["id"] = v["runs"][0]["id"].clone(),
                "runs[1] has the id 5f2c9a1b3d7e of runs[0]",
            ),
            ("empty runs", |v| v["runs"] = json!([]), "the file holds no runs"),
            (
                "runs not an array",
                |v| v["runs"] = json!({}),
                "runs: invalid type: map, expected a sequence",
            ),
            (
                "runs missing",
                |v| {
                    v.as_object_mut().unwrap().remove("runs");
                },
                "the document: missing field `runs`",
            ),
            (
                "other format",
                |v| v["format"] = json!("tarball"),
                "not a sysperf export: format is \"tarball\"",
            ),
            (
                "run document",
                |v| v["format"] = json!("sysperf-run"),
                "that is the output of 'sysperf run --json'",
            ),
            (
                "no format",
                |v| {
                    v.as_object_mut().unwrap().remove("format");
                },
                "it has no \"format\" field",
            ),
            (
                "newer format",
                |v| v["format_version"] = json!(2),
                "written by a newer sysperf (format 2); this one reads format 1: upgrade sysperf",
            ),
            (
                "version 0",
                |v| v["format_version"] = json!(0),
                "format_version is 0, not a format version",
            ),
            (
                "version as a string",
                |v| v["format_version"] = json!("1"),
                "format_version is \"1\", not a format version",
            ),
            (
                "version as a float",
                |v| v["format_version"] = json!(1.5),
                "format_version is 1.5",
            ),
            (
                "no version",
                |v| {
                    v.as_object_mut().unwrap().remove("format_version");
                },
                "it has no \"format_version\" field",
            ),
        ];
        for (name, mutate, needle) in cases {
            let mut v = doc();
            mutate(&mut v);
            let e = import_value(&v).expect_err(name);
            assert_one_line(&e);
            assert!(e.to_string().contains(needle), "{name}: {e}");
        }
    }

    #[test]
    fn bad_bytes_are_named() {
        let cases: [(&[u8], &str); 9] = [
            (b"", "the file is empty"),
            (b" \n\t", "the file is empty"),
            (b"{", "the file is truncated (EOF while parsing an object"),
            (b"{\"format\": \"sysperf-exp", "the file is truncated"),
            (
                b"{]",
                "not valid JSON (key must be a string at line 1 column 2)",
            ),
            (b"not json", "not valid JSON"),
            (
                b"{\"format\": 1e999}",
                "not valid JSON (number out of range",
            ),
            (b"{} x", "not valid JSON (trailing characters"),
            (
                b"[1, 2]",
                "not a sysperf export: the top level is not an object",
            ),
        ];
        for (bytes, needle) in cases {
            let e = import(bytes).unwrap_err();
            assert_one_line(&e);
            assert!(e.to_string().contains(needle), "{bytes:?}: {e}");
        }
        // Invalid UTF-8 inside a string.
        let mut bytes = serde_json::to_vec(&doc()).unwrap();
        let at = bytes.windows(4).position(|w| w == b"\"vm\"").unwrap();
        bytes[at + 1] = 0xff;
        let e = import(&bytes).unwrap_err();
        assert!(matches!(e, ExchangeError::Malformed { .. }), "{e}");
        // Deep nesting, skipped or read, does not overflow the stack.
        for at in ["x", "runs"] {
            let deep = format!(
                "{{\"format\":\"sysperf-export\",\"format_version\":1,\"{at}\":{}{}}}",
                "[".repeat(100_000),
                "]".repeat(100_000)
            );
            let e = import(deep.as_bytes()).unwrap_err();
            assert_one_line(&e);
        }
    }

    #[test]
    fn a_huge_string_in_a_type_error_is_not_echoed() {
        let mut v = doc();
        v["runs"][0]["results"][0]["paper_count"] = json!("9".repeat(1 << 20));
        let e = import_value(&v).unwrap_err();
        assert_one_line(&e);
        assert!(e.to_string().contains("invalid type: string"), "{e}");
    }

    #[test]
    fn counts_are_capped() {
        let mut runs = two_runs();
        let trial = runs[0].results[0].trials[0].clone();
        runs[0].results[0].trials = vec![trial; MAX_TRIALS_PER_RESULT + 1];
        let e = validate(&runs).unwrap_err();
        assert!(
            e.to_string()
                .contains("runs[0].results[0].trials has 100001 entries, more than the 100000"),
            "{e}"
        );
        let mut runs = two_runs();
        let result = runs[1].results[0].clone();
        runs[1].results = vec![result; MAX_RESULTS_PER_RUN + 1];
        let e = validate(&runs).unwrap_err();
        assert!(
            e.to_string().contains("runs[1].results has 10001 entries"),
            "{e}"
        );
    }

    #[test]
    fn findings_and_counters_are_checked_like_every_other_field() {
        use crate::model::{CounterSummary, Counters, Finding, Severity};
        let finding = Finding {
            id: "governor".into(),
            severity: Severity::Warn,
            title: "\u{1b}]0;owned\u{7}\u{1b}[2J".into(),
            detail: String::new(),
            fix: String::new(),
        };
        let mut runs = two_runs();
        runs[1].findings = vec![finding.clone()];
        let e = validate(&runs).unwrap_err().to_string();
        assert!(
            e.contains("runs[1].findings[0].title contains the control character U+001B"),
            "{e}"
        );
        let mut runs = two_runs();
        let mut long = finding.clone();
        long.title = "x".repeat(MAX_STRING_BYTES + 1);
        runs[0].findings = vec![long];
        let e = validate(&runs).unwrap_err().to_string();
        assert!(
            e.contains("runs[0].findings[0].title is a string of 65537 bytes"),
            "{e}"
        );
        let mut runs = two_runs();
        let mut fine = finding;
        fine.title = "fine".into();
        runs[0].findings = vec![fine; MAX_FINDINGS + 1];
        let e = validate(&runs).unwrap_err().to_string();
        assert!(e.contains("runs[0].findings has 1001 entries"), "{e}");

        let counted = |c: Counters| {
            let mut runs = two_runs();
            runs[0].results[0].trials[0].counters = Some(c);
            validate(&runs).map_err(|e| e.to_string())
        };
        assert!(counted(Counters::default()).is_ok());
        let e = counted(Counters {
            cycles: Some(u64::MAX),
            ..Counters::default()
        })
        .unwrap_err();
        assert!(
            e.contains("runs[0].results[0].trials[0].counters.cycles is 18446744073709551615"),
            "{e}"
        );
        let mut c = Counters::default();
        c.interrupts_by_source.insert("has space".into(), 1);
        let e = counted(c).unwrap_err();
        assert!(
            e.contains(
                "counters.interrupts_by_source has the name \"has space\", not a counter name"
            ),
            "{e}"
        );
        let mut c = Counters::default();
        c.interrupts_by_source.insert("LOC".into(), u64::MAX);
        let e = counted(c).unwrap_err();
        assert!(
            e.contains("interrupts_by_source[\"LOC\"] is 18446744073709551615"),
            "{e}"
        );
        let e = counted(Counters {
            perf_error: Some("\u{1b}[2J".into()),
            ..Counters::default()
        })
        .unwrap_err();
        assert!(
            e.contains("counters.perf_error contains the control character"),
            "{e}"
        );

        let mut runs = two_runs();
        let summary = runs[0].results[0].summary.as_mut().unwrap();
        summary.counters = Some(CounterSummary {
            trials: 1,
            perf_trials: 1,
            task_clock_ns_per_op: Some(f64::INFINITY),
            context_switches_per_op: None,
            cpu_migrations_per_op: None,
            page_faults_per_op: None,
            cycles_per_op: None,
            instructions_per_op: None,
            interrupts_per_trial: 0.0,
            interrupts_per_op: 0.0,
            softirqs_per_trial: 0.0,
            interrupts_on_trial_cpus_per_trial: None,
            disk_ios_per_trial: 0.0,
        });
        let e = validate(&runs).unwrap_err().to_string();
        assert!(
            e.contains("summary.counters.task_clock_ns_per_op is inf, not a finite number"),
            "{e}"
        );
    }

    #[test]
    fn the_first_pass_counts_lists_and_depth_before_building_anything() {
        let mut v = doc();
        v["runs"][0]["notes"] = json!(vec![""; MAX_ANY_LIST + 1]);
        let e = import_value(&v).unwrap_err();
        assert!(matches!(e, ExchangeError::TooManyEntries { .. }), "{e}");
        assert!(
            e.to_string()
                .contains("runs[0].notes has more than 100000 entries"),
            "{e}"
        );
        let mut v = doc();
        v["runs"][1]["fingerprint"]["vulnerabilities"] = serde_json::from_str(&format!(
            "{{\"a b\": {}1{}}}",
            "[".repeat(40),
            "]".repeat(40)
        ))
        .unwrap();
        let e = import_value(&v).unwrap_err().to_string();
        assert!(
            e.contains("runs[1].fingerprint.vulnerabilities[\"a b\"][0][0]")
                && e.contains("nests lists and objects more than 32 deep"),
            "{e}"
        );
        // The memory estimate stops a walk with its path.
        let walk = Walk::default();
        walk.path.replace("runs[3].notes[7]".into());
        let e: serde_json::Error = walk.charge(MAX_DECODED_BYTES + 1).unwrap_err();
        assert!(e.to_string().contains("refused by the first pass"));
        let problem = walk.problem.take().unwrap().to_string();
        assert!(problem.contains("at runs[3].notes[7]"), "{problem}");
    }

    #[test]
    fn export_refuses_what_import_would() {
        assert!(matches!(export(&[]), Err(ExchangeError::NoRuns)));
        let mut runs = two_runs();
        runs[1].id = runs[0].id.clone();
        assert!(matches!(
            export(&runs),
            Err(ExchangeError::DuplicateRun { .. })
        ));
        // The store keeps NaN; JSON cannot, so such a run is refused by name and path.
        let mut runs = two_runs();
        runs[1].results[0]
            .summary
            .as_mut()
            .unwrap()
            .wall_ns_per_op
            .cv = f64::NAN;
        let e = export(&runs).unwrap_err();
        assert_one_line(&e);
        assert_eq!(
            e.to_string(),
            "run \"0123456789ab\" cannot be exported: runs[1].results[0].summary.wall_ns_per_op.cv \
             is NaN, not a finite number; JSON cannot carry NaN or infinities"
        );
        assert!(e.is_user_error());
        let mut runs = two_runs();
        runs[0].params.timeout_s = f64::INFINITY;
        assert!(export(&runs)
            .unwrap_err()
            .to_string()
            .contains("runs[0].params.timeout_s is inf"));
    }

    #[test]
    fn shown_values_are_escaped_and_short() {
        assert_eq!(shown("a\"b\\c\u{1b}"), "\"a\\\"b\\\\c\\u{1b}\"");
        let long = shown(&"é".repeat(1000));
        assert_eq!(long.chars().count(), SHOWN_CHARS + 2 + 3);
        assert!(long.ends_with("...\""));
    }

    /// The property every input must satisfy: import never panics, and either returns runs
    /// that validate and survive another export and import unchanged, or one short line.
    fn never_panics(bytes: &[u8]) {
        match import(bytes) {
            Ok(runs) => {
                validate(&runs).unwrap();
                let again = export(&runs).unwrap();
                assert_eq!(import(&again).unwrap(), runs);
            }
            Err(e) => assert_one_line(&e),
        }
    }

    /// A small valid export, so that every truncation of it can be tried.
    fn small_export() -> Vec<u8> {
        let mut run = fixture_run();
        run.results.truncate(2);
        run.results[1].trials.truncate(1);
        export(&[run]).unwrap()
    }

    #[test]
    fn truncation_at_every_position_is_an_error() {
        let bytes = small_export();
        for n in 0..bytes.len() {
            let cut = &bytes[..n];
            never_panics(cut);
            // Only the final newline may go; anything more loses the closing brace.
            if n + 1 < bytes.len() {
                assert!(import(cut).is_err(), "accepted a prefix of {n} bytes");
            }
        }
    }

    /// Hostile JSON values to put in place of any leaf of a valid document.
    fn hostile_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<i64>().prop_map(|n| json!(n)),
            any::<u64>().prop_map(|n| json!(n)),
            prop::num::f64::NORMAL.prop_map(|f| json!(f)),
            "\\PC{0,20}".prop_map(|s| json!(s)),
            "[\\x00-\\x1f<>&\"'\\\\a-z]{0,20}".prop_map(|s| json!(s)),
            any::<bool>().prop_map(|b| json!(b)),
            Just(Value::Null),
            Just(json!([])),
            Just(json!({})),
            Just(json!(u64::MAX)),
            Just(json!(i64::MAX as u64 + 1)),
        ]
    }

    /// JSON pointers of every leaf (and empty container) of `v`.
    fn leaves(v: &Value, at: String, out: &mut Vec<String>) {
        match v {
            Value::Object(m) if !m.is_empty() => {
                for (k, x) in m {
                    leaves(x, format!("{at}/{k}"), out);
                }
            }
            Value::Array(a) if !a.is_empty() => {
                for (i, x) in a.iter().enumerate() {
                    leaves(x, format!("{at}/{i}"), out);
                }
            }
            _ => out.push(at),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..4096)) {
            never_panics(&bytes);
        }

        #[test]
        fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
            never_panics(text.as_bytes());
        }

        #[test]
        fn byte_flips_of_a_valid_export_never_panic(
            flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)
        ) {
            let mut bytes = small_export();
            for (i, b) in flips {
                let at = i.index(bytes.len());
                bytes[at] = b;
            }
            never_panics(&bytes);
        }

        #[test]
        fn spliced_exports_never_panic(
            a in any::<prop::sample::Index>(),
            b in any::<prop::sample::Index>(),
            insert in prop::collection::vec(any::<u8>(), 0..16),
        ) {
            let bytes = small_export();
            let (a, b) = (a.index(bytes.len()), b.index(bytes.len()));
            let (lo, hi) = (a.min(b), a.max(b));
            let mut out = bytes[..lo].to_vec();
            out.extend(&insert);
            out.extend(&bytes[hi..]);
            never_panics(&out);
        }

        #[test]
        fn a_hostile_leaf_is_accepted_only_if_valid(
            which in any::<prop::sample::Index>(),
            value in hostile_value(),
        ) {
            let mut v: Value = serde_json::from_slice(&small_export()).unwrap();
            let mut all = Vec::new();
            leaves(&v, String::new(), &mut all);
            let at = &all[which.index(all.len())];
            *v.pointer_mut(at).unwrap() = value;
            never_panics(&serde_json::to_vec(&v).unwrap());
        }
    }
}
