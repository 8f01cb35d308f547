//! The `sysperf` command line: parse the arguments (their definitions and each command's
//! code are in `cmd/`, one file per subcommand, cargo's layout), hand the command to its
//! `exec`, print a failure, exit with a documented code. Nothing else lives here.

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

/// A line on stderr, its control characters escaped (it may carry labels, paths, host names
/// and stored messages: nothing that reaches a terminal is trusted, see `sysperf::term`).
macro_rules! say {
    ($($arg:tt)*) => {
        eprintln!("{}", sysperf::term::text(&format!($($arg)*)))
    };
}

mod cmd;

use clap::FromArgMatches;
use cmd::{Cli, Cmd};
use std::io::Write;
use sysperf::{engine, exit, harness};

fn main() {
    // What the library has to tell while it works goes to stderr like every other line.
    sysperf::notice::install(|line| say!("sysperf: {line}"));
    // Any command that opens a shared store uploads the spool files waiting for it (#44).
    sysperf::catalog::on_opening_a_shared_store(|store| {
        sysperf::sync::upload_waiting_once(Some(store));
    });
    let args: Vec<String> = std::env::args().collect();
    // Worker processes are this same binary; they bypass the CLI entirely.
    if args.get(1).map(String::as_str) == Some("__worker") {
        std::process::exit(harness::worker::main(
            args.get(2).map(String::as_str).unwrap_or(""),
            engine::make_benchmark,
        ));
    }
    // A sleeping server of the net suite's memory table (`suite::net::server_memory`).
    if args.get(1).map(String::as_str) == Some("__daemon") {
        std::process::exit(sysperf::suite::net::daemon_main(
            args.get(2).map(String::as_str).unwrap_or(""),
        ));
    }
    // Before anything else: a signal at any moment ends with a message and 128 + its number.
    if let Err(e) = sysperf::sys::exit_on_signals() {
        say!("sysperf: error: installing the signal handlers: {e}");
        std::process::exit(exit::FAILURE);
    }
    // The command tree with its commands listed by task (`cmd::command`).
    let cli = Cli::from_arg_matches(&cmd::command().get_matches()).unwrap_or_else(|e| e.exit());
    let code = match dispatch(cli.command) {
        Ok(code) => code,
        // A reader that stopped reading (`sysperf runs | head`) is not a failure to report;
        // a run interrupted so is already stored.
        Err(f) if f.is_broken_pipe() => exit::OK,
        Err(f) => {
            say!("sysperf: error: {:#}", f.error());
            f.code()
        }
    };
    // The memory controller sysperf turned on in a cgroup v2 parent goes off again.
    harness::cgroup::withdraw_offers();
    let _ = std::io::stdout().flush();
    std::process::exit(code);
}

/// Each command to its `exec`.
fn dispatch(command: Cmd) -> cmd::Result<i32> {
    if command.examines_the_machine() {
        sysperf::engine::tidy(&mut |l| say!("sysperf: {l}"));
    }
    match command {
        Cmd::Run(a) => cmd::run::exec(a),
        Cmd::Noise(a) => cmd::noise::exec(a),
        Cmd::Ab(a) => cmd::ab::exec(*a),
        Cmd::List(a) => cmd::list::exec(a),
        Cmd::Runs(a) => cmd::runs::exec(a),
        Cmd::Gc(a) => cmd::gc::exec(a),
        Cmd::Compare(a) => cmd::compare::exec(a),
        Cmd::Explain(a) => cmd::explain::exec(a),
        Cmd::Changes(a) => cmd::changes::exec(a),
        Cmd::Show(a) => cmd::show::exec(a),
        Cmd::Rm(a) => cmd::rm::exec(a),
        Cmd::Export(a) => cmd::export::exec(a),
        Cmd::Import(a) => cmd::import::exec(a),
        Cmd::Sync(a) => cmd::sync::exec(a),
        Cmd::Report(a) => cmd::report::exec(a),
        Cmd::Plot(a) => cmd::plot::exec(a),
        Cmd::Trace(a) => cmd::trace::exec(a),
        Cmd::Watch(a) => cmd::watch::exec(a),
        Cmd::Jitter(a) => cmd::jitter::exec(a),
        Cmd::Doctor(a) => cmd::doctor::exec(a),
        Cmd::Profile(a) => cmd::profile::exec(a),
        Cmd::Job(a) => cmd::job::exec(a),
        Cmd::Completions(a) => cmd::completions::exec(a),
        Cmd::Man(a) => cmd::man::exec(a),
    }
}
