//! `sysperf man DIR`: the man pages, from the same definitions as `--help`.

use super::failure::Context;
use super::Result;
use clap::Args as ClapArgs;
use std::path::PathBuf;
use sysperf::error::InputError;
use sysperf::{exit, output};

#[derive(ClapArgs)]
pub(crate) struct Args {
    /// The directory to write the pages into (made, with its parents, when it is not there).
    pub(crate) dir: PathBuf,
}

pub(crate) fn exec(a: Args) -> Result<i32> {
    let dir = &a.dir;
    // As `mkdir -p` would (#43: a newcomer's `man DIR` failed on a directory not yet made).
    if !dir.exists() {
        std::fs::create_dir_all(dir).context(format!("making the directory {}", dir.display()))?;
    }
    if !dir.is_dir() {
        return Err(InputError::InvalidValue {
            what: "DIR",
            value: dir.display().to_string(),
            why: "is not a directory; give a directory's path".into(),
        }
        .into());
    }
    let pages = pages().context("rendering the man pages")?;
    for (name, roff) in &pages {
        output::write(&dir.join(name), roff, 0o644)?;
    }
    say!(
        "sysperf: wrote {} man pages to {}",
        pages.len(),
        dir.display()
    );
    Ok(exit::OK)
}

/// The man pages as (file name, roff): `sysperf.1`, then `sysperf-COMMAND.1` for each command
/// (what `clap_mangen::generate_to` writes, kept as bytes so they are written without
/// following symlinks).
fn pages() -> std::io::Result<Vec<(String, Vec<u8>)>> {
    fn walk(cmd: &clap::Command, out: &mut Vec<(String, Vec<u8>)>) -> std::io::Result<()> {
        let man = clap_mangen::Man::new(cmd.clone());
        let mut roff = Vec::new();
        man.render(&mut roff)?;
        out.push((man.get_filename(), roff));
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            walk(sub, out)?;
        }
        Ok(())
    }
    let mut cmd = super::command().disable_help_subcommand(true);
    cmd.build();
    let mut out = Vec::new();
    walk(&cmd, &mut out)?;
    Ok(out)
}
