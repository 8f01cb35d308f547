//! `sysperf job`: the exec tests' null job or big job written to a file.

use super::Result;
use clap::Args as ClapArgs;
use std::path::PathBuf;
use sysperf::{bench, exit, output};

#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Which job: null (1 KiB of initialized data, then exit) or big (250 KiB), the
    /// programs of the paper's exec tests.
    #[arg(value_parser = ["null", "big"])]
    pub(crate) which: String,
    /// Where to write the executable.
    #[arg(short, long)]
    pub(crate) output: PathBuf,
}

pub(crate) fn exec(a: Args) -> Result<i32> {
    let bytes = match a.which.as_str() {
        "big" => bench::exec::BIG_JOB,
        _ => bench::exec::NULL_JOB,
    };
    output::write(&a.output, bytes, 0o755)?;
    Ok(exit::OK)
}
