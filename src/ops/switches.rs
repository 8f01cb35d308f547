//! `explain --try-switches`: each recorded difference between A and B that this machine can
//! switch at runtime is set to A's value and to B's in the paired rounds of `ab`
//! (`Engine::execute_ab`, which holds the setting through its record and puts it back, also
//! on Ctrl-C), one switch at a time, a bounded budget each; the rest are listed with why not.
//! Which differences flip and the account of each are `explain::bisect`'s; printing the
//! account is `report::explain`'s.

use super::{allowed_cpus, OpsError, Progress};
use crate::catalog;
use crate::compare;
use crate::engine::ab::{AbError, Design};
use crate::engine::switch::{Switch, SwitchError};
use crate::engine::{self as run_engine, Engine, RunPlan, RunRequest};
use crate::error::InputError;
use crate::explain::bisect::{self, Bisection, Flip, NotSwitched, Tried};
use crate::explain::facts::Difference;
use crate::explain::{Explanation, TestExplanation};
use crate::model::Run;
use crate::notice::tell;
use std::path::{Path, PathBuf};

/// How `--try-switches` goes.
#[derive(Debug, Clone, Copy)]
pub struct TrySwitches {
    /// About how many seconds of paired rounds each switch gets.
    pub seconds: f64,
    /// Also set values recorded on another host.
    pub allow_foreign_values: bool,
}

/// What measuring needs of explain's request: the store, the workers' executable and the
/// noise band of the paired verdicts.
pub(super) struct Where<'r> {
    pub(super) db: Option<&'r PathBuf>,
    pub(super) worker_exe: &'r Path,
    pub(super) noise_pct: f64,
}

/// Every switch gets at least this many paired rounds, whatever its budget.
const MIN_ROUNDS: u32 = 10;
/// Rounds stop sooner when every test's paired interval is this narrow (percent).
const PRECISION_PCT: f64 = 1.0;
/// The trials are `ab`'s: many short ones.
const TRIAL_S: f64 = crate::engine::ab::DEFAULT_TRIAL_S;

/// The switch that flips `flip` on this machine, or why this process cannot.
fn switch_for(flip: &Flip) -> Result<Switch, String> {
    let why = |e: InputError| match e {
        InputError::InvalidValue { why, .. } => why,
        e => e.to_string(),
    };
    let switch = match flip {
        Flip::Setting { name, a, b } => Switch::between(name, a, b).map_err(why)?,
        Flip::Task { switch, .. } => Switch::parse(Some(switch), None, None).map_err(why)?,
    };
    match switch.check() {
        Ok(()) => Ok(switch),
        Err(SwitchError::NotPermitted { path, .. }) if crate::sys::is_root() => Err(format!(
            "{path} cannot be written here, even by root (read-only, or a file only the kernel changes)"
        )),
        Err(SwitchError::NotPermitted { path, .. }) => Err(format!(
            "changing it needs root ({path} is not writable by this process): 'sudo sysperf explain ... --try-switches'"
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// Why a setting's flip would set a value recorded on another host than this one (`here`),
/// if it would: such a value is another machine's, or whoever wrote it into a shared store
/// or an export file chose it (#41 item 1). Task switches change no machine-wide setting.
fn foreign(flip: &Flip, runs: [&Run; 2], here: Option<&str>) -> Result<(), String> {
    if !matches!(flip, Flip::Setting { .. }) {
        return Ok(());
    }
    for (side, run) in ["A", "B"].iter().zip(runs) {
        let host = run.fingerprint.hostname.as_deref();
        if host.is_none() || host != here {
            return Err(format!(
                "not switched: {side}'s value was recorded on {}, not this host ({}); --allow-foreign-values sets values recorded elsewhere, within the setting's type and range",
                host.map_or("a host it does not name".to_string(), |h| format!("host '{h}'")),
                here.unwrap_or("unnamed")
            ));
        }
    }
    Ok(())
}

/// A label's word for a flip: the setting's or the switch's name.
fn slug(flip: &Flip) -> String {
    let name = match flip {
        Flip::Setting { name, .. } => name.as_str(),
        Flip::Task { switch, .. } => switch.split('=').next().unwrap_or(switch),
    };
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Flips each difference of `e` this machine can switch and measures the tests explained
/// with it, paired; returns the account and whether Ctrl-C stopped it.
pub(super) fn try_switches(
    how: &TrySwitches,
    req: Where<'_>,
    runs: [&Run; 2],
    e: &Explanation,
    progress: &mut dyn Progress,
) -> Result<(Bisection, bool), OpsError> {
    // Core benchmarks and suite points alike, as `ab` measures them; a test this build's
    // registries no longer have is left out, with why.
    let (benches, gone): (Vec<&str>, Vec<&str>) = e
        .tests
        .iter()
        .map(|t| t.test.as_str())
        .partition(|t| run_engine::Picked::of(t, false).is_ok());
    let mut b = Bisection {
        method: bisect::method(how.seconds, MIN_ROUNDS, PRECISION_PCT),
        seconds_per_switch: how.seconds,
        tests: benches.iter().map(|t| t.to_string()).collect(),
        not_measured: gone
            .iter()
            .map(|p| {
                (
                    p.to_string(),
                    "not a benchmark or suite point of this sysperf, which cannot measure it"
                        .to_string(),
                )
            })
            .collect(),
        tried: Vec::new(),
        not_switchable: Vec::new(),
        interrupted: false,
    };
    let todo = switchable(how, runs, e, !benches.is_empty(), &mut b.not_switchable);
    if todo.is_empty() {
        tell(&format!(
            "--try-switches: none of the {} recorded difference(s) between A and B can be switched on this machine (the output says why for each)",
            e.differences.len()
        ));
        return Ok((b, false));
    }
    tell(&format!(
        "--try-switches: {} difference(s) this machine can switch ({}); measuring {} with each set to A's setting and to B's, paired, about {} s each (--try-seconds, at least {MIN_ROUNDS} rounds); each setting is put back after",
        todo.len(),
        todo.iter()
            .map(|(d, _, _)| d.field.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        benches.join(" "),
        how.seconds
    ));
    let stop = run_engine::stop_flag()?;
    let store = catalog::open_store(req.db)?;
    store.announce("sysperf explain --try-switches")?;
    let engine = Engine {
        worker_exe: req.worker_exe.to_path_buf(),
        stop: &stop,
    };
    let cpus = allowed_cpus()?;
    let tests: Vec<String> = benches.iter().map(|t| t.to_string()).collect();
    let measured: Vec<&TestExplanation> = e
        .tests
        .iter()
        .filter(|t| benches.contains(&t.test.as_str()))
        .collect();
    let total = todo.len();
    for (i, (d, flip, switch)) in todo.into_iter().enumerate() {
        if b.interrupted {
            b.not_switchable.push(not_switched(
                d,
                "switchable here, but not tried: stopped (Ctrl-C) before its turn".into(),
            ));
            continue;
        }
        tell(&format!(
            "[{}/{total}] {}: {}",
            i + 1,
            d.field,
            flip.describe()
        ));
        let label = format!("try-{}-{}", slug(&flip), &run_engine::new_run_id()?[..6]);
        let plan = plan(how, &tests, label, &cpus)?;
        let outcome = engine.execute_ab(
            &plan,
            Design::Paired,
            &switch,
            store.as_ref(),
            progress.sink(),
        );
        progress.done();
        let tried = account(
            d,
            &flip,
            outcome,
            &measured,
            req.noise_pct,
            &mut b.interrupted,
        )?;
        if let Switch::Setting(s) = &switch {
            let now = run_engine::switch::read_setting(&s.path)
                .unwrap_or_else(|err| format!("unreadable ({err})"));
            tell(&format!("  {} is {now} again (found at {})", s.name, s.old));
        }
        b.tried.push(tried);
    }
    let stopped = b.interrupted;
    Ok((b, stopped))
}

/// The paired rounds of one switch: `tests` in `ab`'s short trials, at least [`MIN_ROUNDS`],
/// until [`PRECISION_PCT`] or the switch's seconds.
fn plan(
    how: &TrySwitches,
    tests: &[String],
    label: String,
    cpus: &[u32],
) -> Result<RunPlan, OpsError> {
    let (selection, suites) = run_engine::ab::selection(tests, false)?;
    let req = RunRequest {
        selection,
        suites,
        trials: Some(MIN_ROUNDS),
        min_time_s: Some(TRIAL_S),
        precision_pct: Some(PRECISION_PCT),
        max_time_s: Some(how.seconds),
        label: Some(label),
        seed: run_engine::fresh_seed()?,
        // The pairing takes the host's speed out round by round: no reference (#42).
        reference: false,
        ..RunRequest::default()
    };
    Ok(RunPlan::resolve(&req, cpus)?)
}

/// A difference not switched, and why.
fn not_switched(d: &Difference, why: String) -> NotSwitched {
    NotSwitched {
        field: d.field.clone(),
        a: d.a.clone(),
        b: d.b.clone(),
        why,
    }
}

/// The differences of `e` this process can switch, each with its flip and switch; the others
/// go to `not`, with why (`measurable`: some test explained is one this sysperf measures).
fn switchable<'e>(
    how: &TrySwitches,
    runs: [&Run; 2],
    e: &'e Explanation,
    measurable: bool,
    not: &mut Vec<NotSwitched>,
) -> Vec<(&'e Difference, Flip, Switch)> {
    let here = crate::fingerprint::this_hostname();
    let mut todo = Vec::new();
    for d in &e.differences {
        let flip = bisect::flip_of(d, runs).and_then(|f| {
            if !how.allow_foreign_values {
                foreign(&f, runs, here.as_deref())?;
            }
            Ok(f)
        });
        match flip.and_then(|f| switch_for(&f).map(|s| (f, s))) {
            Ok((flip, switch)) if measurable => todo.push((d, flip, switch)),
            Ok(_) => not.push(not_switched(
                d,
                "switchable here, but no test explained is one this sysperf can measure".into(),
            )),
            Err(why) => not.push(not_switched(d, why)),
        }
    }
    todo
}

/// What measuring `tests` with `flip` gave (`outcome`, `ab`'s): each test's share of the
/// change, or why there is none; `interrupted` raised when Ctrl-C stopped it.
fn account(
    d: &Difference,
    flip: &Flip,
    outcome: Result<Vec<run_engine::ab::AbOutcome>, AbError>,
    tests: &[&TestExplanation],
    noise: f64,
    interrupted: &mut bool,
) -> Result<Tried, OpsError> {
    let mut tried = Tried {
        field: d.field.clone(),
        a: d.a.clone(),
        b: d.b.clone(),
        flip: flip.clone(),
        runs: None,
        labels: None,
        effects: Vec::new(),
        error: None,
    };
    match outcome.map(|mut o| o.pop()) {
        // A value this kernel refuses (a setting from another machine): said, and the
        // next switch is tried; the setting was put back when the switch was dropped.
        Err(AbError::Switch(err)) => {
            let why = crate::error::one_line(&err);
            tell(&format!("{}: not measured: {why}", d.field));
            tried.error = Some(why);
        }
        Err(err) => return Err(err.into()),
        Ok(None) => tried.error = Some("no run was made".into()),
        Ok(Some(o)) => {
            let invert = matches!(flip, Flip::Task { b_on: false, .. });
            // A's setting first: the "on" side when A had a task switch on.
            let mut sides = [&o.off, &o.on];
            if invert {
                sides.reverse();
            }
            tried.runs = Some(sides.map(|r| r.id.clone()));
            tried.labels = Some(sides.map(|r| r.label.clone().unwrap_or_default()));
            for t in tests {
                let r = compare::paired_ratio(&[&o.off], &[&o.on], &t.test, noise);
                let effect = bisect::effect(t, r.as_ref(), invert);
                tell(&format!("  {}: {}", t.test, effect.words));
                tried.effects.push(effect);
            }
            if o.interrupted {
                *interrupted = true;
                tried.error = Some("stopped (Ctrl-C) while measuring".into());
            }
        }
    }
    Ok(tried)
}
