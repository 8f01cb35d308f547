//! Before `run`, `trace`, `profile` and `doctor` measure or look at anything: remove what
//! sysperf processes killed outright left behind (scratch directories, memory cgroups, zram
//! swap devices, tracefs
//! instances with their events still enabled, which slow every later system call; the net
//! suite's network namespaces and veth links; machine-wide
//! settings a killed `sysperf ab` left switched, from its record). Each kind
//! removed is one line for stderr; nothing is removed that a live sysperf owns (see
//! `harness::janitor`). Another sysperf running now is the doctor's finding (`others`).

use crate::harness::{cgroup, janitor};
use crate::trace::tracefs;
use std::path::PathBuf;

/// Sweeps and reports through `note`, one line per kind of leftover removed.
pub fn tidy(note: &mut dyn FnMut(&str)) {
    // The temporary directory, /var/tmp and /dev/shm.
    let dirs: Vec<PathBuf> = janitor::sweep_scratch();
    let say = |what: &str, paths: Vec<String>, note: &mut dyn FnMut(&str)| {
        if !paths.is_empty() {
            note(&format!(
                "removed {} {what} left by sysperf processes that were killed: {}",
                paths.len(),
                paths.join(", ")
            ));
        }
    };
    let shown = |v: Vec<PathBuf>| v.iter().map(|p| p.display().to_string()).collect();
    say("scratch director(ies)", shown(dirs), note);
    say("memory cgroup(s)", shown(cgroup::sweep_stale()), note);
    say(
        "zram swap device(s)",
        crate::harness::zram::sweep_stale(),
        note,
    );
    // Where tracefs is mounted, there; where it is not, root looks through a private mount
    // (a killed `trace` left its instance in the kernel whether anyone mounts tracefs or not).
    if let Some(removed) = tracefs::look(tracefs::remove_stale) {
        say("tracefs instance(s)", removed, note);
    }
    // The long-haul links (network namespaces and veth pairs) of killed net workers.
    say(
        "network namespace(s) or link(s)",
        crate::suite::net::longhaul::sweep_stale(),
        note,
    );
    // Settings a killed `sysperf ab` left switched (see `engine::switch`).
    super::switch::restore_stale(note);
}
