//! `sysperf completions SHELL`: the shell's completion script, from the same definitions as
//! `--help`.

use super::out::print_raw;
use super::Result;
use clap::Args as ClapArgs;

#[derive(ClapArgs)]
pub(crate) struct Args {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    pub(crate) shell: clap_complete::Shell,
}

pub(crate) fn exec(a: Args) -> Result<i32> {
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut super::command(), "sysperf", &mut out);
    print_raw(&String::from_utf8_lossy(&out))
}
