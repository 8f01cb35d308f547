//! The one integration-test binary (#31): every CLI and suite test as a module of one crate, so
//! the library is linked once for all of them, not once per file (33 binaries filled CI's disk
//! once). `cargo test --test it suite_libs::` runs one file's tests.
//!
//! Not here: tests/engine.rs runs the engine in this process, which makes the process a child
//! subreaper and reaps every dead child after each trial; beside other tests it would reap the
//! children they are waiting for, so it stays a binary of its own.

mod support;

mod ab;
mod ab_commands;
mod changes;
mod cli;
mod compare;
mod concurrent;
mod counters_profile;
mod deploy;
mod docs_behaviour;
mod docs_examples;
mod exchange;
mod explain;
mod fleet;
mod fleet_queries;
mod fleet_security;
mod fleet_spool;
mod fs_safety;
mod install;
mod invisible_text;
mod layers;
mod newcomer;
mod observe;
mod privileges;
mod programs;
mod report;
mod signals;
mod suite_bbn;
mod suite_clock;
mod suite_commands;
mod suite_cspeed;
mod suite_ctx;
mod suite_feder;
mod suite_fs;
mod suite_libs;
mod suite_login;
mod suite_mem;
mod suite_net;
mod suite_perfbench;
mod suite_scaling;
mod suite_scaling_proc;
mod suite_swap;
mod suite_tty;
mod suite_vm;
mod suite_workload;
mod system_profile;
mod terminal;
mod trace;
mod trace_system;
mod tracefs_leftovers;
mod watch_vs_peers;
mod work;
