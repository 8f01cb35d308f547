//! The runtime switches of `sysperf ab` (#19): what is turned off and on between the trials
//! of one selection, and the promise that a machine-wide switch is put back as it was.
//!
//! Two kinds. A *task* switch is turned on by each worker for itself and the children it
//! forks (an allow-all seccomp filter; speculative store bypass disabled by prctl): nothing
//! outlives the worker. A *setting* is machine-wide (a sysctl, transparent huge pages,
//! `kernel.perf_event_paranoid`): its "off" value is the one found before anything changed,
//! its "on" value the one asked for, and it is written before each trial of a side.
//!
//! Before a setting is first changed, a record of its old value is written (and synced) to
//! the state directory, `/var/lib/sysperf/switches` (or `$SYSPERF_STATE_DIR`): a root-owned
//! directory of the machine, not the store's, because the setting belongs to the machine, a
//! later sysperf may use another store (`--db`, `$SYSPERF_DB`, another user's HOME) and must
//! still find it, and only root may change these settings anyway. The record is named
//! `sysperf-switch-<pid>` after its owner; `ab` puts the value back and removes the record on
//! every path that runs code (end, error, Ctrl-C, SIGTERM), and the next `run` or `ab`
//! ([`restore_stale`], called by `engine::tidy`) puts back what a killed `ab` left changed,
//! saying so. The state directory is opened once and checked with every directory above it
//! (`crate::safedir`: this user's own, nobody else may write it or swap what is in it), and
//! records are made, read and removed through that descriptor without following a link
//! (#29). A record carries its owner's start time, so a process that later got the pid (any
//! process may name itself sysperf) is not taken for the owner. A record is trusted only
//! there, only when it is a regular file of this user's, and only for paths under /proc/sys
//! or the THP setting.

use crate::error::InputError;
use crate::harness::janitor;
use crate::harness::worker::TaskSwitch;
use crate::managed;
use crate::safedir::{Dir, Need};
use serde::{Deserialize, Serialize};
use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The transparent huge pages setting.
pub const THP: &str = "/sys/kernel/mm/transparent_hugepage/enabled";
const PARANOID: &str = "kernel.perf_event_paranoid";
/// The names `--switch` takes.
pub const NAMES: &str = "seccomp, seccomp-checks=N, none, speculation, thp, perf_event_paranoid (or --sysctl NAME=VALUE)";

/// Why a switch cannot be used (a bad name or value is an [`InputError`] instead).
#[derive(Debug, thiserror::Error)]
pub enum SwitchError {
    #[error("changing {name} needs root (or CAP_SYS_ADMIN): {path} is not writable by this process; run 'sudo sysperf ab ...', or pick a per-task switch (seccomp, speculation)")]
    NotPermitted { name: String, path: String },
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the speculation switch changes nothing here: {why}")]
    Unsupported { why: String },
    /// The state directory is one someone else could change (a user error).
    #[error("cannot keep the switch's record")]
    Unsafe(#[source] crate::safedir::Unsafe),
    /// Found at its "on" value once another `ab` was done with it (a user error).
    #[error("{name} is already {on} (another sysperf ab just switched it and put it back there): the two sides would be the same; give another \"on\" value")]
    Same { name: String, on: String },
}

impl crate::error::Exit for SwitchError {
    fn exit_code(&self) -> i32 {
        match self {
            SwitchError::Unsafe(e) => crate::error::Exit::exit_code(e),
            SwitchError::Same { .. } => crate::exit::USAGE,
            _ => crate::exit::FAILURE,
        }
    }
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> SwitchError {
    let what = what.into();
    move |source| SwitchError::Io { what, source }
}

/// What a record holds: the setting, and its owner's start time (clock ticks since boot;
/// absent in records of older sysperfs, whose file time stands in).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Record {
    #[serde(flatten)]
    setting: Setting,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    owner_start_ticks: Option<u64>,
}

/// A record larger than this is not one of sysperf's.
const MAX_RECORD_BYTES: u64 = 64 << 10;

/// A machine-wide setting with its two values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Setting {
    /// What the user calls it: `vm.overcommit_memory`, `transparent_hugepage`.
    pub name: String,
    pub path: PathBuf,
    /// The value found before anything changed (put back at the end; the "off" side unless
    /// `off` names another).
    pub old: String,
    /// The value of the "on" side.
    pub on: String,
    /// The value of the "off" side when it is not the one found: `explain --try-switches`
    /// sets the two sides to two runs' values, whatever the machine has now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off: Option<String>,
}

impl Setting {
    /// The value of the "off" side.
    pub fn off_value(&self) -> &str {
        self.off.as_deref().unwrap_or(&self.old)
    }
}

/// What `ab` switches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Switch {
    Task(TaskSwitch),
    Setting(Setting),
}

impl Switch {
    /// The switch `--switch NAME` (with `--on VALUE` for settings) or `--sysctl NAME=VALUE`
    /// names, its "off" value read now. Checks only what the input says; [`Switch::check`]
    /// finds out whether this process may use it.
    pub fn parse(
        name: Option<&str>,
        sysctl: Option<&str>,
        on: Option<&str>,
    ) -> Result<Switch, InputError> {
        let bad = |value: &str, why: String| InputError::InvalidValue {
            what: "switch",
            value: value.to_string(),
            why,
        };
        let setting = |name: &str, path: PathBuf, on: &str| -> Result<Switch, InputError> {
            // While another `ab` holds this setting, its value is that one's "on" side: what
            // it will put back is the value this one finds once it has its turn.
            let old = match live_record_old(&path) {
                Some(old) => old,
                None => read_setting(&path)
                    .map_err(|e| bad(name, format!("cannot read {}: {e}", path.display())))?,
            };
            if on.is_empty() || on.contains(['\n', '\0']) {
                return Err(bad(on, "the \"on\" value must be one line".into()));
            }
            if same_value(&old, on) {
                return Err(bad(
                    on,
                    format!("{name} is already {on}: the two sides would be the same; give another \"on\" value"),
                ));
            }
            Ok(Switch::Setting(Setting {
                name: name.to_string(),
                path,
                old,
                on: on.to_string(),
                off: None,
            }))
        };
        match (name, sysctl) {
            (Some(_), Some(_)) | (None, None) => Err(bad(
                name.or(sysctl).unwrap_or(""),
                format!("give one of --switch NAME or --sysctl NAME=VALUE; switches: {NAMES}"),
            )),
            (None, Some(s)) => {
                if on.is_some() {
                    return Err(bad(
                        s,
                        "--sysctl NAME=VALUE carries its own \"on\" value; leave out --on".into(),
                    ));
                }
                let (name, value) = s.split_once('=').ok_or_else(|| {
                    bad(s, "expected NAME=VALUE, e.g. vm.overcommit_memory=1".into())
                })?;
                setting(
                    name,
                    sysctl_path(name).map_err(|why| bad(name, why))?,
                    value,
                )
            }
            (Some(n), None) => {
                let task = |t| match on {
                    Some(v) => Err(bad(
                        v,
                        format!("--on is for machine-wide switches; {n} is on or off"),
                    )),
                    None => Ok(Switch::Task(t)),
                };
                if let Some(count) = n.strip_prefix("seccomp-checks=") {
                    // Both sides run a filter that reads an argument (what entering such a
                    // filter costs is on both); the on side's has N checks more.
                    return match count.parse::<u32>() {
                        Ok(c) if (1..=2046).contains(&c) => task(TaskSwitch::SeccompChecks(c + 1)),
                        _ => Err(bad(
                            count,
                            "give a number of argument checks from 1 to 2046 (seccomp-checks=N)"
                                .into(),
                        )),
                    };
                }
                match n {
                    "seccomp" => task(TaskSwitch::Seccomp),
                    "none" => task(TaskSwitch::Nothing),
                    "speculation" => task(TaskSwitch::Speculation),
                    "thp" | "transparent_hugepage" => {
                        setting("transparent_hugepage", THP.into(), on.unwrap_or("always"))
                    }
                    "perf_event_paranoid" | PARANOID => setting(
                        PARANOID,
                        sysctl_path(PARANOID).map_err(|why| bad(n, why))?,
                        on.unwrap_or("-1"),
                    ),
                    _ => Err(bad(n, format!("unknown switch; switches: {NAMES}"))),
                }
            }
        }
    }

    /// A machine-wide setting switched between two given values whatever it has now: `off`
    /// on side A, `on` on side B (`explain --try-switches`: two runs' recorded values).
    /// `name` is a sysctl, or `transparent_hugepage`. The value found is put back at the end,
    /// as with every setting.
    pub fn between(name: &str, off: &str, on: &str) -> Result<Switch, InputError> {
        let bad = |value: &str, why: String| InputError::InvalidValue {
            what: "switch",
            value: value.to_string(),
            why,
        };
        // The name and both values come from stored runs, which anyone who could write to
        // the store chose (#41): only a setting sysperf manages, with values of its type and
        // range, is ever written.
        for v in [off, on] {
            managed::known(name, v).map_err(|why| bad(v, why))?;
        }
        let path = match name {
            "transparent_hugepage" | "thp" => {
                let p = PathBuf::from(THP);
                if !p.is_file() {
                    return Err(bad(
                        name,
                        format!("this kernel has no transparent huge pages ({THP} does not exist)"),
                    ));
                }
                p
            }
            _ => sysctl_path(name).map_err(|why| bad(name, why))?,
        };
        for v in [off, on] {
            if v.contains(['\n', '\0']) {
                return Err(bad(v, "a value must be one line".into()));
            }
        }
        if same_value(off, on) {
            return Err(bad(on, "the two sides' values are the same".into()));
        }
        let old = match live_record_old(&path) {
            Some(old) => old,
            None => read_setting(&path)
                .map_err(|e| bad(name, format!("cannot read {}: {e}", path.display())))?,
        };
        if let Some(m) = managed::sysctl(name) {
            for v in [off, on] {
                if let Some(why) = m.lowers_protection(&old, v) {
                    return Err(bad(
                        v,
                        format!("not switched from a recorded value: {why}; if you mean it, switch it yourself: sysperf ab --sysctl {name}={v} ..."),
                    ));
                }
            }
        }
        Ok(Switch::Setting(Setting {
            name: if name == "thp" {
                "transparent_hugepage".into()
            } else {
                name.to_string()
            },
            path,
            old,
            on: on.to_string(),
            off: Some(off.to_string()),
        }))
    }

    /// The switch's name in labels and messages.
    pub fn name(&self) -> &str {
        match self {
            Switch::Task(TaskSwitch::Seccomp) => "seccomp",
            Switch::Task(TaskSwitch::SeccompChecks(_)) => "seccomp-checks",
            Switch::Task(TaskSwitch::Speculation) => "speculation",
            Switch::Task(TaskSwitch::Nothing) => "none",
            Switch::Setting(s) => &s.name,
        }
    }

    /// The task switch of the off side, if it has one: `seccomp-checks=N`'s off side runs a
    /// filter of one check, so that only the N checks more differ.
    pub fn off_task(&self) -> Option<TaskSwitch> {
        match self {
            Switch::Task(TaskSwitch::SeccompChecks(_)) => Some(TaskSwitch::SeccompChecks(1)),
            _ => None,
        }
    }

    /// What each side is, for the runs' notes.
    pub fn describe(&self, on: bool) -> String {
        match (self, on) {
            (Switch::Task(TaskSwitch::Seccomp), true) => {
                "ab: switch on: an allow-all seccomp filter in every worker".into()
            }
            (Switch::Task(TaskSwitch::Speculation), true) => {
                "ab: switch on: speculative store bypass disabled (prctl) in every worker".into()
            }
            (Switch::Task(TaskSwitch::SeccompChecks(n)), true) => format!(
                "ab: switch on: a seccomp filter of {n} argument checks ({} BPF instructions) in every worker, {} more than the off side's",
                2 * n + 1,
                n - 1
            ),
            (Switch::Task(TaskSwitch::SeccompChecks(_)), false) => {
                "ab: switch seccomp-checks off: a seccomp filter of 1 argument check (3 BPF instructions) in every worker, so that entering a filter costs both sides alike".into()
            }
            (Switch::Task(TaskSwitch::Nothing), true) => {
                "ab: switch none: nothing differs between the sides (an A/A)".into()
            }
            (Switch::Task(_), false) => format!("ab: switch {} off", self.name()),
            (Switch::Setting(s), on) => format!(
                "ab: switch {} {}: {} = {}",
                if on { "on" } else { "off" },
                s.name,
                s.name,
                shown(if on { &s.on } else { s.off_value() })
            ),
        }
    }

    /// Whether this process may use the switch, before anything is measured or changed.
    pub fn check(&self) -> Result<(), SwitchError> {
        match self {
            Switch::Setting(s) if !crate::sys::may_write(&s.path) => {
                Err(SwitchError::NotPermitted {
                    name: s.name.clone(),
                    path: s.path.display().to_string(),
                })
            }
            Switch::Setting(_)
            | Switch::Task(
                TaskSwitch::Seccomp | TaskSwitch::SeccompChecks(_) | TaskSwitch::Nothing,
            ) => Ok(()),
            Switch::Task(TaskSwitch::Speculation) => {
                let bits =
                    crate::sys::store_bypass_ctrl().map_err(|e| SwitchError::Unsupported {
                        why: format!("prctl(PR_GET_SPECULATION_CTRL) failed: {e}"),
                    })?;
                if bits & libc::PR_SPEC_PRCTL == 0 {
                    return Err(SwitchError::Unsupported {
                        why: format!(
                            "this CPU or kernel does not let a task control speculative store bypass (PR_GET_SPECULATION_CTRL = {bits:#x}; see /sys/devices/system/cpu/vulnerabilities/spec_store_bypass and spec_store_bypass_disable=prctl)"
                        ),
                    });
                }
                Ok(())
            }
        }
    }

    /// Takes hold of a setting: writes the record of its old value (synced) before anything
    /// changes. The returned guard puts the value back and removes the record when dropped.
    pub fn arm(&self) -> Result<Armed, SwitchError> {
        self.arm_in(&state_dir())
    }

    /// [`Switch::arm`] with its record in the state directory `state`.
    fn arm_in(&self, state: &Path) -> Result<Armed, SwitchError> {
        let Switch::Setting(s) = self else {
            return Ok(Armed {
                setting: None,
                record: None,
                now_on: Some(false),
                _lock: None,
            });
        };
        let dir = open_state_dir(state, true)?;
        // One `ab` at a time, machine-wide: a second one switching the same setting would
        // record the first's "on" value as its "off" and put that back at its end, leaving
        // the machine changed.
        let lock = lock_switches(&dir)?;
        // What a killed holder left switched goes back first; the value found then is "off".
        restore_stale_in(state, &mut |l| crate::notice::tell(l));
        let s = &Setting {
            old: read_setting(&s.path).map_err(io(format!("reading {}", s.path.display())))?,
            ..s.clone()
        };
        if same_value(s.off_value(), &s.on) {
            return Err(SwitchError::Same {
                name: s.name.clone(),
                on: s.on.clone(),
            });
        }
        let pid = std::process::id();
        let record = OsString::from(format!("{}switch-{pid}", janitor::PREFIX));
        let text = serde_json::to_string(&Record {
            setting: s.clone(),
            owner_start_ticks: janitor::start_ticks(crate::sys::getpid()),
        })
        .map_err(|e| SwitchError::Io {
            what: "writing the switch record".into(),
            source: std::io::Error::other(e),
        })?;
        let shown = |n: &OsStr| dir.path().join(n).display().to_string();
        // A fresh name, made exclusively: nothing already there is followed or reused.
        let mut rnd = [0u8; 6];
        crate::sys::random_bytes(&mut rnd).map_err(io("choosing a record name"))?;
        let tmp = OsString::from(format!(
            "{}switch-{pid}.{}.tmp",
            janitor::PREFIX,
            rnd.iter().map(|b| format!("{b:02x}")).collect::<String>()
        ));
        let written = dir
            .create(&tmp, 0o600)
            .and_then(|mut f| f.write_all(text.as_bytes()).and_then(|_| f.sync_all()))
            .and_then(|_| dir.rename(&tmp, &record));
        if let Err(e) = written {
            let _ = dir.unlink(&tmp);
            return Err(io(format!("writing {}", shown(&record)))(e));
        }
        Ok(Armed {
            setting: Some(s.clone()),
            record: Some((dir, record)),
            // Found at the "off" value, unless the "off" side has a value of its own.
            now_on: s.off.is_none().then_some(false),
            _lock: Some(lock),
        })
    }
}

/// The machine-wide switches' lock: flock(2) on the state directory itself, held from before
/// a record is written to after its value is put back, so that one `ab` at a time changes a
/// machine-wide setting (two at once disturb each other's figures anyway). Waits for another
/// `ab` holding it, and says which.
fn lock_switches(dir: &Dir) -> Result<std::fs::File, SwitchError> {
    let shown = dir.path().display().to_string();
    let f = dir
        .open_file(OsStr::new("."), libc::O_RDONLY | libc::O_DIRECTORY)
        .map_err(io(format!("opening {shown}")))?;
    match f.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let holders: Vec<String> = dir
                .names()
                .unwrap_or_default()
                .iter()
                .filter_map(|n| {
                    let pid = n
                        .to_str()?
                        .strip_prefix(janitor::PREFIX)?
                        .strip_prefix("switch-")?
                        .parse::<u32>()
                        .ok()?;
                    let (record, _) = read_record(dir, n)?;
                    Some(format!("pid {pid}, {}", record.setting.name))
                })
                .collect();
            crate::notice::tell(&format!(
                "waiting for another sysperf ab that is switching a machine-wide setting ({}): one at a time, so that each puts back the value it found",
                if holders.is_empty() {
                    "it is starting".to_string()
                } else {
                    holders.join("; ")
                }
            ));
            f.lock().map_err(io(format!("locking {shown}")))?;
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(io(format!("locking {shown}"))(e)),
    }
    Ok(f)
}

/// A switch held by `ab`: sides are set through it, and dropping it puts the old value back
/// and removes the record.
#[derive(Debug)]
pub struct Armed {
    setting: Option<Setting>,
    /// The state directory, open, and the record's name there.
    record: Option<(Dir, OsString)>,
    /// Which side's value the setting has now; None: the one found, which is neither.
    now_on: Option<bool>,
    /// The switches' lock (see [`lock_switches`]), released after the value is put back.
    _lock: Option<std::fs::File>,
}

impl Armed {
    /// Sets the machine-wide side (`on` or off); nothing for task switches, which the workers
    /// turn on themselves.
    pub fn set(&mut self, on: bool) -> Result<(), SwitchError> {
        let Some(s) = &self.setting else {
            return Ok(());
        };
        if Some(on) == self.now_on {
            return Ok(());
        }
        let v = if on { &s.on } else { s.off_value() };
        write_setting(&s.path, v).map_err(io(format!("setting {} to {v}", s.name)))?;
        self.now_on = Some(on);
        Ok(())
    }

    /// Puts the old value back and removes the record; says what went wrong, if anything.
    pub fn release(mut self) -> Result<(), SwitchError> {
        self.restore()
    }

    fn restore(&mut self) -> Result<(), SwitchError> {
        let Some(s) = self.setting.take() else {
            return Ok(());
        };
        write_setting(&s.path, &s.old).map_err(io(format!(
            "putting {} back to {} (do it by hand: echo {} > {})",
            s.name,
            s.old,
            s.old,
            s.path.display()
        )))?;
        if let Some((dir, name)) = self.record.take() {
            let _ = dir.unlink(&name);
        }
        Ok(())
    }
}

impl Drop for Armed {
    fn drop(&mut self) {
        if let Err(e) = self.restore() {
            crate::notice::tell(&e.to_string());
        }
    }
}

/// Where records of settings are kept: `$SYSPERF_STATE_DIR`, else `/var/lib/sysperf/switches`.
pub fn state_dir() -> PathBuf {
    match std::env::var_os("SYSPERF_STATE_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => PathBuf::from("/var/lib/sysperf/switches"),
    }
}

/// The state directory, opened and checked with every directory above it (see the module
/// documentation); `create` makes what is missing (mode 0700).
fn open_state_dir(dir: &Path, create: bool) -> Result<Dir, SwitchError> {
    let opened = if create {
        Dir::open_or_create(dir, Need::Own, 0o700)
    } else {
        Dir::open(dir, Need::Own)
    };
    opened.map_err(|e| {
        match e.refuse(
            format!("the switch state directory '{}'", dir.display()),
            "fix its owner and mode (a directory of this user's that only it may write, below \
             directories only root or this user may change), or set SYSPERF_STATE_DIR",
        ) {
            Ok(u) => SwitchError::Unsafe(u),
            Err(e) => SwitchError::Io {
                what: format!("opening the state directory {}", dir.display()),
                source: e.into_io(),
            },
        }
    })
}

/// A record in the state directory: a regular file of this user's, read through the
/// directory's descriptor without following a link or waiting on a FIFO.
fn read_record(dir: &Dir, name: &OsStr) -> Option<(Record, std::time::SystemTime)> {
    let f = dir
        .open_file(name, libc::O_RDONLY | libc::O_NONBLOCK)
        .ok()?;
    let m = f.metadata().ok()?;
    use std::os::unix::fs::MetadataExt;
    if !m.is_file() || m.uid() != crate::sys::euid() || m.len() > MAX_RECORD_BYTES {
        return None;
    }
    let mut text = String::new();
    f.take(MAX_RECORD_BYTES).read_to_string(&mut text).ok()?;
    Some((serde_json::from_str(&text).ok()?, m.modified().ok()?))
}

/// `/proc/sys/<name with dots as slashes>`, for a sysctl name that exists.
pub fn sysctl_path(name: &str) -> Result<PathBuf, String> {
    let ok = !name.is_empty()
        && name.split('.').all(|p| {
            !p.is_empty()
                && p != ".."
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        });
    if !ok {
        return Err("not a sysctl name (words joined by dots, e.g. vm.overcommit_memory)".into());
    }
    let path = PathBuf::from("/proc/sys").join(name.replace('.', "/"));
    if !path.is_file() {
        return Err(format!(
            "no such sysctl ({} does not exist; 'sysctl -a' lists them)",
            path.display()
        ));
    }
    Ok(path)
}

/// A path a record may name: a file under /proc/sys, or the THP setting.
fn allowed(path: &Path) -> bool {
    use std::path::Component;
    (path.starts_with("/proc/sys/") || path == Path::new(THP))
        && path
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
}

/// A setting's value as it is written back: for the THP file the bracketed choice of its
/// list (`always [madvise] never` is set by writing `madvise`), for a sysctl the bytes read.
/// What is saved and put back is exactly that (#41 item 5): a `core_pattern` of
/// `core.%p %u %g` must not come back with tabs, nor a pattern holding brackets as the word
/// between them.
pub fn read_setting(path: &Path) -> std::io::Result<String> {
    let text = std::fs::read_to_string(path)?;
    Ok(if path == Path::new(THP) {
        parse_choice(&text)
    } else {
        sysctl_value(&text).to_string()
    })
}

/// The bracketed choice of a THP-style list (`always [madvise] never`), else the text trimmed.
pub fn parse_choice(text: &str) -> String {
    let t = text.trim();
    match (t.find('['), t.find(']')) {
        (Some(a), Some(b)) if a < b => t[a + 1..b].to_string(),
        _ => t.to_string(),
    }
}

/// A sysctl's value from the text read: all of it but the one newline the kernel ends it with
/// (and stops at when the value is written back), so that the write puts back every byte.
pub fn sysctl_value(text: &str) -> &str {
    text.strip_suffix('\n').unwrap_or(text)
}

/// Whether two values of a setting are the same: the same text, or the same numbers however
/// they are spaced (the kernel separates a multi-number sysctl's with tabs, people and the
/// fingerprint with spaces).
pub fn same_value(a: &str, b: &str) -> bool {
    let numbers =
        |v: &str| -> Option<Vec<i64>> { v.split_whitespace().map(|w| w.parse().ok()).collect() };
    a == b || matches!((numbers(a), numbers(b)), (Some(x), Some(y)) if !x.is_empty() && x == y)
}

/// A value for a line of text (a run's note, a message): its words joined by one space, so a
/// tab or newline of the value's own never splits or hides a line.
pub fn shown(value: &str) -> String {
    value.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn write_setting(path: &Path, value: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new().write(true).open(path)?;
    // An empty value (an empty list such as net.ipv4.ip_local_reserved_ports) is written as a
    // newline: write_all of no bytes makes no write(2) at all, and the kernel's list handlers
    // ignore an empty write, so the "off" side and the restore would keep the "on" value.
    let bytes = if value.is_empty() {
        b"\n"
    } else {
        value.as_bytes()
    };
    f.write_all(bytes)
}

/// Puts back every setting a `sysperf ab` that is gone left changed, from its record, and
/// removes the record; one line per record for `note`. Records of a live sysperf are left.
pub fn restore_stale(note: &mut dyn FnMut(&str)) {
    restore_stale_in(&state_dir(), note);
}

/// The value a live `ab` recorded for the setting at `path` (what it will put back), if one
/// holds it now.
fn live_record_old(path: &Path) -> Option<String> {
    let dir = open_state_dir(&state_dir(), false).ok()?;
    dir.names().ok()?.into_iter().find_map(|name| {
        let pid = name
            .to_str()?
            .strip_prefix(janitor::PREFIX)?
            .strip_prefix("switch-")?
            .parse::<crate::sys::Pid>()
            .ok()?;
        let (record, written) = read_record(&dir, &name)?;
        let made = match record.owner_start_ticks {
            Some(t) => janitor::Made::ByStart(t),
            None => janitor::Made::At(written),
        };
        (record.setting.path == path && janitor::owner_alive(pid, made))
            .then_some(record.setting.old)
    })
}

fn restore_stale_in(dir_path: &Path, note: &mut dyn FnMut(&str)) {
    let Ok(dir) = open_state_dir(dir_path, false) else {
        return;
    };
    let Ok(names) = dir.names() else {
        return;
    };
    for name in names {
        let text = name.to_string_lossy();
        let Some(pid) = text
            .strip_prefix(janitor::PREFIX)
            .and_then(|n| n.strip_prefix("switch-"))
            .and_then(|n| n.parse::<crate::sys::Pid>().ok())
        else {
            continue;
        };
        let shown = dir.path().join(&name);
        let Some((record, written)) = read_record(&dir, &name) else {
            continue;
        };
        let made = match record.owner_start_ticks {
            Some(t) => janitor::Made::ByStart(t),
            None => janitor::Made::At(written),
        };
        if janitor::owner_alive(pid, made) {
            continue;
        }
        let s = record.setting;
        if !allowed(&s.path) {
            note(&format!("ignored the switch record {} (it names {}, which is not a setting sysperf changes)", shown.display(), s.path.display()));
            continue;
        }
        let now = read_setting(&s.path).ok();
        let line = if now.as_deref() == Some(s.old.as_str()) {
            format!("{} was already back at {} (a sysperf ab, pid {pid}, was killed while switching it)", s.name, s.old)
        } else {
            match write_setting(&s.path, &s.old) {
                Ok(()) => format!(
                    "restored {} to {} (a sysperf ab, pid {pid}, was killed and left it at {})",
                    s.name,
                    s.old,
                    now.as_deref().unwrap_or("?")
                ),
                Err(err) => {
                    note(&format!("could not restore {} to {} left by a killed sysperf ab (pid {pid}): {err}; do it by hand: echo {} > {}", s.name, s.old, s.old, s.path.display()));
                    continue;
                }
            }
        };
        let _ = dir.unlink(&name);
        note(&line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_read_the_bracketed_choice_or_the_bytes() {
        assert_eq!(parse_choice("always [madvise] never\n"), "madvise");
        assert_eq!(sysctl_value("2\n"), "2");
        assert_eq!(sysctl_value("4096\t16384 4194304\n"), "4096\t16384 4194304");
        assert_eq!(sysctl_value("core.%p %u %g\n"), "core.%p %u %g");
        assert_eq!(sysctl_value("|/bin/x [%p]\n"), "|/bin/x [%p]");
        assert!(same_value("4096\t16384\t4194304", "4096 16384 4194304"));
        assert!(!same_value("core.%p %u", "core.%p\t%u"));
        assert_eq!(shown("4096\t16384\t4194304"), "4096 16384 4194304");
    }

    /// Puts a sysctl's bytes back when dropped, so a failing test leaves the machine as found.
    struct Keep(PathBuf, Vec<u8>);
    impl Drop for Keep {
        fn drop(&mut self) {
            let _ = std::fs::write(&self.0, &self.1);
        }
    }

    /// #41 item 5: what `ab` saves and puts back is the bytes read, after `ab --sysctl`, after
    /// `explain --try-switches` (a value "off" of its own) and after a killed `ab`'s record:
    /// spaces, tabs, a pipe pattern and brackets come back as they were, newline included.
    #[test]
    fn a_setting_is_put_back_byte_for_byte() {
        if !crate::sys::is_root() {
            eprintln!("skipped: changing kernel.core_pattern needs root");
            return;
        }
        let cp = PathBuf::from("/proc/sys/kernel/core_pattern");
        let _keep = Keep(cp.clone(), std::fs::read(&cp).unwrap());
        let tmp = tempfile::tempdir().unwrap();
        let state = tmp.path().join("state");
        for (i, old) in [
            "core.%p %u %g",
            "core.%p\t%u\t%g",
            "|/nonexistent/sysperf-test %p [%s]  two spaces",
        ]
        .into_iter()
        .enumerate()
        {
            std::fs::write(&cp, old).unwrap();
            let back = || std::fs::read_to_string(&cp).unwrap();
            assert_eq!(back(), format!("{old}\n"));
            // ab --sysctl: the value found is "off" and comes back.
            let on = format!("kernel.core_pattern=core.sysperf-{i}");
            let mut armed = Switch::parse(None, Some(&on), None)
                .unwrap()
                .arm_in(&state)
                .unwrap();
            armed.set(true).unwrap();
            assert_eq!(back(), format!("core.sysperf-{i}\n"));
            armed.release().unwrap();
            assert_eq!(back(), format!("{old}\n"), "after ab --sysctl");
            // --try-switches' two values of its own (a Setting as between makes it).
            let s = Setting {
                name: "kernel.core_pattern".into(),
                path: cp.clone(),
                old: read_setting(&cp).unwrap(),
                on: "core.b".into(),
                off: Some("core.a".into()),
            };
            let mut armed = Switch::Setting(s).arm_in(&state).unwrap();
            armed.set(false).unwrap();
            armed.set(true).unwrap();
            drop(armed);
            assert_eq!(
                back(),
                format!("{old}\n"),
                "after a switch between two values"
            );
            // A killed ab's record, put back by the next sysperf.
            // A pid no process has now: a thread's, once it has ended.
            let gone = std::thread::spawn(crate::sys::gettid).join().unwrap();
            let r = Record {
                setting: Setting {
                    name: "kernel.core_pattern".into(),
                    path: cp.clone(),
                    old: read_setting(&cp).unwrap(),
                    on: "core.killed".into(),
                    off: None,
                },
                owner_start_ticks: Some(1),
            };
            std::fs::write(
                state.join(format!("sysperf-switch-{gone}")),
                serde_json::to_string(&r).unwrap(),
            )
            .unwrap();
            std::fs::write(&cp, "core.killed").unwrap();
            let mut notes = Vec::new();
            restore_stale_in(&state, &mut |l| notes.push(l.to_string()));
            assert_eq!(back(), format!("{old}\n"), "after a killed ab: {notes:?}");
        }
    }

    #[test]
    fn task_switches_take_effect_in_the_task_that_turns_them_on() {
        let status = || std::fs::read_to_string("/proc/thread-self/status").unwrap();
        let field = |s: &str, name: &str| {
            s.lines()
                .find(|l| l.starts_with(name))
                .map(|l| l[name.len()..].trim().to_string())
        };
        // Each on a thread of its own: both are per-thread, and the filter allows everything.
        std::thread::spawn(move || {
            assert_eq!(field(&status(), "Seccomp:").as_deref(), Some("0"));
            TaskSwitch::Seccomp.apply().unwrap();
            assert_eq!(
                field(&status(), "Seccomp:").as_deref(),
                Some("2"),
                "filter mode"
            );
            assert_eq!(field(&status(), "NoNewPrivs:").as_deref(), Some("1"));
        })
        .join()
        .unwrap();
        if Switch::Task(TaskSwitch::Speculation).check().is_ok() {
            std::thread::spawn(move || {
                TaskSwitch::Speculation.apply().unwrap();
                let ssb = field(&status(), "Speculation_Store_Bypass:").unwrap();
                assert!(ssb.contains("thread mitigated"), "{ssb}");
            })
            .join()
            .unwrap();
        }
    }

    #[test]
    fn an_empty_setting_is_written_as_a_newline_not_as_nothing() {
        // An empty list (ip_local_reserved_ports as it ships) must reach the kernel as a write:
        // no bytes is no write(2), and the "on" value would stay on the "off" side.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("setting");
        // A plain file, not a sysctl: it is not truncated, so each check starts from empty.
        std::fs::write(&path, "").unwrap();
        write_setting(&path, "").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "\n", "one write");
        std::fs::write(&path, "").unwrap();
        write_setting(&path, "2").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "2");
    }

    #[test]
    fn records_may_name_only_sysctls_and_thp() {
        assert!(allowed(Path::new("/proc/sys/vm/overcommit_memory")));
        assert!(allowed(Path::new(THP)));
        assert!(!allowed(Path::new("/proc/sys/../../etc/passwd")));
        assert!(!allowed(Path::new("/etc/passwd")));
        assert!(!allowed(Path::new(
            "/sys/kernel/mm/transparent_hugepage/defrag"
        )));
    }

    #[test]
    fn bad_names_and_values_are_input_errors() {
        for (n, s, on) in [
            (Some("warp"), None, None),
            (None, Some("vm.overcommit_memory"), None),
            (None, Some("../etc=1"), None),
            (None, Some("vm.no_such_thing=1"), None),
            (Some("seccomp"), None, Some("1")),
            (Some("seccomp"), Some("vm.overcommit_memory=1"), None),
            (None, None, None),
        ] {
            assert!(Switch::parse(n, s, on).is_err(), "{n:?} {s:?} {on:?}");
        }
        let cur = read_setting(Path::new("/proc/sys/kernel/msgmax")).unwrap();
        let same = format!("kernel.msgmax={cur}");
        let e = Switch::parse(None, Some(&same), None).unwrap_err();
        assert!(e.to_string().contains("already"), "{e}");
        assert_eq!(
            Switch::parse(Some("seccomp"), None, None).unwrap(),
            Switch::Task(TaskSwitch::Seccomp)
        );
    }

    #[test]
    fn a_planted_filter_and_a_switch_of_nothing_are_task_switches() {
        // #30 item 8: a seccomp filter of N argument checks, and `none` for an A/A.
        let checks = Switch::parse(Some("seccomp-checks=64"), None, None).unwrap();
        assert_eq!(checks, Switch::Task(TaskSwitch::SeccompChecks(65)));
        assert_eq!(checks.off_task(), Some(TaskSwitch::SeccompChecks(1)));
        assert!(checks.describe(true).contains("131 BPF instructions"));
        assert!(checks
            .describe(true)
            .contains("64 more than the off side's"));
        assert!(checks.describe(false).contains("1 argument check"));
        assert_eq!(checks.name(), "seccomp-checks");
        assert_eq!(
            Switch::parse(Some("none"), None, None).unwrap(),
            Switch::Task(TaskSwitch::Nothing)
        );
        for bad in [
            "seccomp-checks=0",
            "seccomp-checks=2047",
            "seccomp-checks=x",
        ] {
            let e = Switch::parse(Some(bad), None, None)
                .unwrap_err()
                .to_string();
            assert!(e.contains("from 1 to 2046"), "{bad}: {e}");
        }
        let status = || std::fs::read_to_string("/proc/thread-self/status").unwrap();
        std::thread::spawn(move || {
            TaskSwitch::Nothing.apply().unwrap();
            assert!(status().contains("Seccomp:\t0"), "{}", status());
            TaskSwitch::SeccompChecks(300).apply().unwrap();
            assert!(status().contains("Seccomp:\t2"), "{}", status());
            // Every system call still allowed.
            assert!(crate::sys::getpid_syscall() > 0);
        })
        .join()
        .unwrap();
    }

    fn setting_in(dir: &Path) -> Setting {
        let path = dir.join("setting");
        // Values of one length: a setting is written without truncation, as /proc/sys is.
        std::fs::write(&path, "old").unwrap();
        Setting {
            name: "test.setting".into(),
            path,
            old: "old".into(),
            on: "new".into(),
            off: None,
        }
    }

    #[test]
    fn records_are_made_by_descriptor_and_planted_links_are_not_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let state = tmp.path().join("state");
        std::fs::create_dir(&state).unwrap();
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let pid = std::process::id();
        for name in [
            format!("sysperf-switch-{pid}.tmp"),
            format!("sysperf-switch-{pid}"),
        ] {
            std::os::unix::fs::symlink(&victim, state.join(name)).unwrap();
        }
        let s = setting_in(tmp.path());
        let mut armed = Switch::Setting(s.clone()).arm_in(&state).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        let record = state.join(format!("sysperf-switch-{pid}"));
        let meta = std::fs::symlink_metadata(&record).unwrap();
        assert!(meta.is_file());
        let r: Record = serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
        assert_eq!(r.setting, s);
        assert_eq!(
            r.owner_start_ticks,
            janitor::start_ticks(crate::sys::getpid())
        );
        armed.set(true).unwrap();
        assert_eq!(std::fs::read_to_string(&s.path).unwrap(), "new");
        armed.release().unwrap();
        assert_eq!(std::fs::read_to_string(&s.path).unwrap(), "old");
        assert!(!record.exists());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    }

    #[test]
    fn a_setting_between_two_values_sets_both_and_puts_the_one_found_back() {
        // explain --try-switches: A's value off, B's on, neither the value the machine has.
        let tmp = tempfile::tempdir().unwrap();
        let state = tmp.path().join("state");
        std::fs::create_dir(&state).unwrap();
        let s = Setting {
            off: Some("aaa".into()),
            on: "bbb".into(),
            ..setting_in(tmp.path())
        };
        let read = || std::fs::read_to_string(&s.path).unwrap();
        let switch = Switch::Setting(s.clone());
        assert!(switch.describe(false).ends_with("test.setting = aaa"));
        let mut armed = switch.arm_in(&state).unwrap();
        armed.set(false).unwrap();
        assert_eq!(
            read(),
            "aaa",
            "the off side is A's value, not the one found"
        );
        armed.set(true).unwrap();
        assert_eq!(read(), "bbb");
        armed.set(false).unwrap();
        assert_eq!(read(), "aaa");
        drop(armed);
        assert_eq!(read(), "old", "the value found is put back");
        assert!(files(&state).is_empty(), "the record is removed");
        // Off and on the same, or a setting that is not there: refused before anything.
        let e = Switch::between("kernel.shmmni", "1", "1").unwrap_err();
        assert!(e.to_string().contains("the same"), "{e}");
        assert!(Switch::between("vm.no_such_thing", "1", "2").is_err());
        // #41 item 1: only a setting sysperf manages, with values of its type and range, and
        // never a protection lowered.
        let e = Switch::between("kernel.core_pattern", "core", "|/tmp/x/evil %p").unwrap_err();
        assert!(
            e.to_string().contains("not a setting sysperf manages"),
            "{e}"
        );
        let e = Switch::between("kernel.shmmni", "1", "1; x").unwrap_err();
        assert!(e.to_string().contains("not one of kernel.shmmni's"), "{e}");
        let aslr = read_setting(Path::new("/proc/sys/kernel/randomize_va_space")).unwrap();
        if aslr != "0" {
            let e = Switch::between("kernel.randomize_va_space", &aslr, "0").unwrap_err();
            assert!(e.to_string().contains("lower a protection"), "{e}");
        }
        let cur = read_setting(Path::new("/proc/sys/kernel/shmmni")).unwrap();
        let Switch::Setting(b) = Switch::between("kernel.shmmni", &cur, "1").unwrap() else {
            panic!("a setting");
        };
        assert_eq!(
            (b.old.as_str(), b.off_value(), b.on.as_str()),
            (cur.as_str(), cur.as_str(), "1")
        );
    }

    fn files(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn a_state_directory_someone_else_controls_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let open = tmp.path().join("open");
        std::fs::create_dir(&open).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let s = setting_in(tmp.path());
        let e = Switch::Setting(s).arm_in(&open.join("state")).unwrap_err();
        let SwitchError::Unsafe(why) = e else {
            panic!("{e:?}");
        };
        assert!(why.to_string().contains("writable by every user"), "{why}");
        assert!(!open.join("state").exists());
    }

    #[test]
    fn a_record_is_put_back_unless_its_owner_itself_runs() {
        let tmp = tempfile::tempdir().unwrap();
        let state = tmp.path().join("state");
        std::fs::create_dir(&state).unwrap();
        let impostor = janitor::testing::Impostor::start();
        let pid = impostor.pid();
        let msgmax = Path::new("/proc/sys/kernel/msgmax");
        let now = read_setting(msgmax).unwrap();
        let write = |start: Option<u64>| {
            let r = Record {
                setting: Setting {
                    name: "kernel.msgmax".into(),
                    path: msgmax.into(),
                    old: now.clone(),
                    on: "1".into(),
                    off: None,
                },
                owner_start_ticks: start,
            };
            let p = state.join(format!("sysperf-switch-{pid}"));
            std::fs::write(&p, serde_json::to_string(&r).unwrap()).unwrap();
            p
        };
        // The process with the pid started when the record says: the owner, alive.
        let record = write(janitor::start_ticks(pid));
        let mut notes = Vec::new();
        restore_stale_in(&state, &mut |l| notes.push(l.to_string()));
        assert!(notes.is_empty() && record.exists(), "{notes:?}");
        // Another start time: only calls itself sysperf; the setting is seen to.
        let record = write(janitor::start_ticks(pid).map(|t| t.saturating_sub(1)));
        restore_stale_in(&state, &mut |l| notes.push(l.to_string()));
        assert!(!record.exists(), "{notes:?}");
        assert!(notes[0].contains("was already back"), "{notes:?}");
    }
}
