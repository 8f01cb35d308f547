//! `sysperf explain --try-switches`: each recorded difference between A and B that this
//! machine can switch at runtime is set to A's value and to B's in the paired rounds of `ab`
//! (`Engine::execute_ab`, which holds the setting through its record and puts it back, also
//! on Ctrl-C), one switch at a time, a bounded budget each; the rest are listed with why not.
//! Which differences flip and the account of each are `sysperf::explain::bisect`'s.

use super::super::args::allowed_cpus;
use super::super::out::engine;
use super::super::progress::Trials;
use super::super::Result;
use super::Args;
use sysperf::catalog;
use sysperf::compare;
use sysperf::engine::ab::{AbError, Design};
use sysperf::engine::switch::{Switch, SwitchError};
use sysperf::engine::{self as run_engine, RunPlan, RunRequest};
use sysperf::error::InputError;
use sysperf::explain::bisect::{self, Bisection, Flip, NotSwitched, Tried};
use sysperf::explain::Explanation;
use sysperf::model::Run;

/// Every switch gets at least this many paired rounds, whatever its budget.
const MIN_ROUNDS: u32 = 10;
/// Rounds stop sooner when every test's paired interval is this narrow (percent).
const PRECISION_PCT: f64 = 1.0;
/// The trials are `ab`'s: many short ones.
const TRIAL_S: f64 = sysperf::engine::ab::DEFAULT_TRIAL_S;

/// The switch that flips `flip` on this machine, or why this process cannot.
fn switch_for(flip: &Flip) -> std::result::Result<Switch, String> {
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
        Err(SwitchError::NotPermitted { path, .. }) if sysperf::sys::is_root() => Err(format!(
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
fn foreign(flip: &Flip, runs: [&Run; 2], here: Option<&str>) -> std::result::Result<(), String> {
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
pub(crate) fn try_switches(
    a: &Args,
    runs: [&Run; 2],
    e: &Explanation,
    noise: f64,
) -> Result<(Bisection, bool)> {
    // Core benchmarks and suite points alike, as `ab` measures them; a test this build's
    // registries no longer have is left out, with why.
    let (benches, gone): (Vec<&str>, Vec<&str>) = e
        .tests
        .iter()
        .map(|t| t.test.as_str())
        .partition(|t| run_engine::Picked::of(t, false).is_ok());
    let mut b = Bisection {
        method: bisect::method(a.try_seconds, MIN_ROUNDS, PRECISION_PCT),
        seconds_per_switch: a.try_seconds,
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
    let not = |d: &sysperf::explain::facts::Difference, why: String| NotSwitched {
        field: d.field.clone(),
        a: d.a.clone(),
        b: d.b.clone(),
        why,
    };
    let here = sysperf::fingerprint::this_hostname();
    let mut todo = Vec::new();
    for d in &e.differences {
        let flip = bisect::flip_of(d, runs).and_then(|f| {
            if !a.allow_foreign_values {
                foreign(&f, runs, here.as_deref())?;
            }
            Ok(f)
        });
        match flip.and_then(|f| switch_for(&f).map(|s| (f, s))) {
            Ok((flip, switch)) if !benches.is_empty() => todo.push((d, flip, switch)),
            Ok(_) => b.not_switchable.push(not(
                d,
                "switchable here, but no test explained is one this sysperf can measure".into(),
            )),
            Err(why) => b.not_switchable.push(not(d, why)),
        }
    }
    if todo.is_empty() {
        say!(
            "sysperf: --try-switches: none of the {} recorded difference(s) between A and B can be switched on this machine (the output says why for each)",
            e.differences.len()
        );
        return Ok((b, false));
    }
    say!(
        "sysperf: --try-switches: {} difference(s) this machine can switch ({}); measuring {} with each set to A's setting and to B's, paired, about {} s each (--try-seconds, at least {MIN_ROUNDS} rounds); each setting is put back after",
        todo.len(),
        todo.iter()
            .map(|(d, _, _)| d.field.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        benches.join(" "),
        a.try_seconds
    );
    let stop = run_engine::stop_flag()?;
    let store = catalog::open_store(a.db.db.as_ref())?;
    store.announce("sysperf explain --try-switches")?;
    let engine = engine(&stop)?;
    let cpus = allowed_cpus()?;
    let total = todo.len();
    for (i, (d, flip, switch)) in todo.into_iter().enumerate() {
        if b.interrupted {
            b.not_switchable.push(not(
                d,
                "switchable here, but not tried: stopped (Ctrl-C) before its turn".into(),
            ));
            continue;
        }
        say!(
            "sysperf: [{}/{total}] {}: {}",
            i + 1,
            d.field,
            flip.describe()
        );
        let tag = &run_engine::new_run_id()?[..6];
        let label = format!("try-{}-{tag}", slug(&flip));
        let tests: Vec<String> = benches.iter().map(|t| t.to_string()).collect();
        let (selection, suites) = run_engine::ab::selection(&tests, false)?;
        let req = RunRequest {
            selection,
            suites,
            trials: Some(MIN_ROUNDS),
            min_time_s: Some(TRIAL_S),
            precision_pct: Some(PRECISION_PCT),
            max_time_s: Some(a.try_seconds),
            label: Some(label.clone()),
            seed: run_engine::fresh_seed()?,
            // The pairing takes the host's speed out round by round: no reference (#42).
            reference: false,
            ..RunRequest::default()
        };
        let plan = RunPlan::resolve(&req, &cpus)?;
        let bar = &mut Trials::new();
        let outcome = engine.execute_ab(&plan, Design::Paired, &switch, store.as_ref(), bar);
        bar.finish();
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
                let why = format!("{:#}", anyhow::Error::new(err));
                say!("sysperf: {}: not measured: {why}", d.field);
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
                for t in e
                    .tests
                    .iter()
                    .filter(|t| benches.contains(&t.test.as_str()))
                {
                    let r = compare::paired_ratio(&[&o.off], &[&o.on], &t.test, noise);
                    let effect = bisect::effect(t, r.as_ref(), invert);
                    say!("sysperf:   {}: {}", t.test, effect.words);
                    tried.effects.push(effect);
                }
                if o.interrupted {
                    b.interrupted = true;
                    tried.error = Some("stopped (Ctrl-C) while measuring".into());
                }
            }
        }
        if let Switch::Setting(s) = &switch {
            let now = sysperf::engine::switch::read_setting(&s.path)
                .unwrap_or_else(|err| format!("unreadable ({err})"));
            say!("sysperf:   {} is {now} again (found at {})", s.name, s.old);
        }
        b.tried.push(tried);
    }
    let stopped = b.interrupted;
    Ok((b, stopped))
}
