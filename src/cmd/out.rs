//! What commands write to standard output, always made inert for a terminal first
//! (`sysperf::term`), and the engine every measuring command starts workers with.

use super::failure::{Context, Result};
use std::io::Write;
use std::sync::atomic::AtomicBool;
use sysperf::engine::Engine;
use sysperf::exit;

/// Writes `text` to standard output, its control characters escaped (`sysperf::term`).
pub(crate) fn print(text: &str) -> Result<i32> {
    print_raw(&sysperf::term::text(text))
}

/// Writes `value` as pretty JSON to standard output; characters that JSON allows raw but a
/// terminal would interpret are written as `\u` escapes (the same document to a parser).
pub(crate) fn print_json<T: serde::Serialize + ?Sized>(value: &T) -> Result<i32> {
    print_json_text(&format!("{}\n", serde_json::to_string_pretty(value)?))
}

/// JSON a renderer already wrote, made inert on a terminal as [`print_json`] makes it.
pub(crate) fn print_json_text(text: &str) -> Result<i32> {
    print_raw(&sysperf::term::json(text))
}

/// The one write to standard output; every caller has made its text terminal-safe (or, as
/// with completion scripts, generated it from sysperf's own definitions).
pub(crate) fn print_raw(text: &str) -> Result<i32> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(exit::OK)
}

/// A writer that passes JSON text on with its terminal-hostile characters escaped, as
/// [`print_json_text`] does; each write is whole UTF-8 text (`exchange::ExportWriter`'s are).
pub(crate) struct TermJson<W: Write>(pub(crate) W);

impl<W: Write> Write for TermJson<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.0.write_all(sysperf::term::json(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// The files of `--export-csv`, `--export-markdown` and `--export-json`: the run named `spec`
/// (a label of several runs: their group, as `compare` takes it) as `compare --csv` and
/// `--markdown` render it, and `json` (the document `--json` prints). Each written is said on
/// stderr.
pub(crate) fn write_exports(
    exports: &super::args::ExportArgs,
    spec: &str,
    json: &str,
    db: Option<std::path::PathBuf>,
) -> Result<()> {
    use sysperf::{catalog::Catalog, compare, report};
    if exports.files().is_empty() {
        return Ok(());
    }
    let (_, c) =
        Catalog::new(db).comparison(&[spec.to_string()], None, compare::DEFAULT_NOISE_PCT)?;
    for (what, path) in exports.files() {
        let text = match what {
            "--export-csv" => report::compare::csv(&c),
            "--export-markdown" => report::compare::markdown(&c),
            _ => json.to_string(),
        };
        sysperf::output::write(path, text.as_bytes(), 0o644).context(what)?;
        say!("sysperf: wrote {} ({what})", path.display());
    }
    Ok(())
}

/// The engine of this process: workers are started from this same executable, and `stop`
/// (Ctrl-C, termination) ends them.
pub(crate) fn engine(stop: &AtomicBool) -> Result<Engine<'_>> {
    Ok(Engine {
        worker_exe: worker_exe()?,
        stop,
    })
}

/// This executable, which workers are started from.
pub(crate) fn worker_exe() -> Result<std::path::PathBuf> {
    std::env::current_exe().context("finding the sysperf executable to start workers from")
}
