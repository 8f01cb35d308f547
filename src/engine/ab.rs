//! `sysperf ab --switch NAME` (#19): one selection measured with a runtime switch off and on,
//! interleaved trial by trial, as two stored runs (labels `LABEL-off`, `LABEL-on`) that
//! `compare` then sets side by side.
//!
//! Every target is measured twice, once per side, as two targets of one plan: calibrated and
//! warmed up each with its side's switch, then counted in rounds, each round one trial of
//! every (target, side) pair in an order shuffled from the seed ([`super::trial_order`]), so
//! both sides sample the same moments of the machine. A machine-wide setting is written
//! before each trial whose side differs from the last one; a task switch travels in the
//! worker's request. The setting is held by a [`switch::Armed`] guard from before its first
//! change to the end, on every path (see [`super::switch`] for the record that survives a
//! SIGKILL). Both sides share one overhead measurement and one doctor's look; each side has
//! its own fingerprint, taken with its switch set, so `compare` names what differs.

use super::switch::{self, Switch, SwitchError};
use super::{new_run, now_ns, stored, trial_order, EngineError, Event, Origin, RunPlan, Sink};
use crate::harness::{self, Measurement, Target};
use crate::model::{Run, Warning, WarningKind};
use crate::observe::doctor;
use crate::store::Backend;
use std::cell::RefCell;
use std::sync::atomic::Ordering;

/// Why an A/B could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum AbError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Switch(#[from] SwitchError),
}

impl crate::error::Exit for AbError {
    fn exit_code(&self) -> i32 {
        match self {
            AbError::Engine(e) => e.exit_code(),
            AbError::Switch(e) => e.exit_code(),
        }
    }
}

/// One pair of runs.
#[derive(Debug)]
pub struct AbOutcome {
    pub off: Run,
    pub on: Run,
    pub interrupted: bool,
}

/// The label of an A/B's runs when none is given: `ab-SWITCH-` and 6 random hex digits (the
/// runs are `LABEL-off` and `LABEL-on`).
pub fn default_label(switch: &Switch) -> Result<String, EngineError> {
    let tag = &super::new_run_id()?[..6];
    Ok(format!("ab-{}-{tag}", switch.name()))
}

impl super::Engine<'_> {
    /// Measures `plan`'s core benchmarks with `switch` off and on, `plan.repeat` pairs of
    /// runs, each side stored as a run labelled `LABEL-off` / `LABEL-on` (replicates of one
    /// group each when there are several pairs). The switch is put back before returning,
    /// whatever happened. Stops after an interrupted pair.
    pub fn execute_ab(
        &self,
        plan: &RunPlan,
        switch: &Switch,
        store: &dyn Backend,
        sink: &mut dyn Sink,
    ) -> Result<Vec<AbOutcome>, AbError> {
        switch.check()?;
        crate::safedir::check_temp_dir().map_err(EngineError::Unsafe)?;
        let mut armed = switch.arm()?;
        let group = (plan.repeat > 1).then(super::new_run_id).transpose()?;
        let mut out = Vec::new();
        for k in 0..plan.repeat {
            let mut p = plan.clone();
            p.seed = plan.seed.wrapping_add(u64::from(k));
            p.params.seed = Some(p.seed);
            if let Some(g) = &group {
                p.params.group = Some(g.clone());
                p.params.replicate = Some(k);
                let what = format!("pair {} of {}", k + 1, plan.repeat);
                sink.event(Event::Phase { what: &what });
            }
            let o = self.ab_pair(&p, switch, &mut armed, store, sink)?;
            let stop = o.interrupted;
            out.push(o);
            if stop {
                break;
            }
        }
        armed.release()?;
        Ok(out)
    }

    fn ab_pair(
        &self,
        plan: &RunPlan,
        switch: &Switch,
        armed: &mut switch::Armed,
        store: &dyn Backend,
        sink: &mut dyn Sink,
    ) -> Result<AbOutcome, AbError> {
        // Each side's fingerprint with its switch set; the doctor looks once.
        let fp_on = {
            armed.set(true)?;
            let fp = crate::fingerprint::collect();
            armed.set(false)?;
            fp
        };
        let fp_off = crate::fingerprint::collect();
        let findings = doctor::diagnose(&doctor::gather(fp_off.clone(), doctor::SAMPLE));
        let label = plan.label.clone().unwrap_or_else(|| "ab".into());
        let mut runs = [
            new_run(plan, fp_off, findings.clone())?,
            new_run(plan, fp_on, findings)?,
        ];
        for (side, run) in runs.iter_mut().enumerate() {
            let on = side == 1;
            run.label = Some(format!("{label}-{}", if on { "on" } else { "off" }));
            run.notes.push(switch.describe(on));
            stored(store.begin_run(run), || {
                "recording the run in the store".into()
            })?;
        }
        let benches: Vec<&super::Planned> = plan
            .targets
            .iter()
            .filter(|p| matches!(p.origin, Origin::Bench(_)))
            .collect();
        let n = benches.len();
        sink.event(Event::RunStarted {
            run_id: &runs[0].id,
            targets: 2 * n,
            planned_trials: 2 * plan.planned_trials(),
            calibrated: 2 * plan.calibrated_targets(),
        });
        let opts = plan.budget.options(
            self.worker_exe.clone(),
            plan.mode,
            plan.cpus.clone(),
            plan.observe,
        );
        sink.event(Event::Phase { what: "overhead" });
        let overhead = harness::measure_overhead(&opts, self.stop);
        for run in &mut runs {
            match &overhead {
                Ok(o) => run.overhead = Some(*o),
                Err(e) => run.warnings.push(Warning {
                    bench: None,
                    kind: WarningKind::Overhead,
                    message: format!("overhead not measured ({e}); nothing subtracted"),
                }),
            }
        }
        // Targets 0..n are the off side, n..2n the on side.
        let task = match switch {
            Switch::Task(t) => Some(*t),
            Switch::Setting(_) => None,
        };
        let targets: Vec<Target> = (0..2 * n)
            .map(|i| Target {
                task: if i >= n { task } else { None },
                ..benches[i % n].target.clone()
            })
            .collect();
        let mut ms: Vec<Measurement> = (0..2 * n)
            .map(|i| Measurement::new(&targets[i], &benches[i % n].placement, &opts))
            .collect();
        let sink = RefCell::new(sink);
        let progress = |e: harness::Event| {
            if let harness::Event::Trial { kind } = e {
                sink.borrow_mut().event(Event::TrialFinished { kind });
            }
        };
        let mut interrupted = false;
        sink.borrow_mut().event(Event::Phase {
            what: "calibration",
        });
        for (i, m) in ms.iter_mut().enumerate() {
            armed.set(i >= n)?;
            sink.borrow_mut().event(Event::TargetStarted {
                id: m.id(),
                index: i,
                total: 2 * n,
            });
            if m.prepare(self.stop, &progress).is_err() || self.stop.load(Ordering::Relaxed) {
                interrupted = true;
                break;
            }
        }
        let keep = |ms: &[Measurement], runs: &[Run; 2]| {
            for (i, m) in ms.iter().enumerate().filter(|(_, m)| m.settled()) {
                let (result, _) = m.finish(runs[i / n].overhead.as_ref());
                stored(store.put_result(&runs[i / n].id, i % n, &result), || {
                    format!("storing {}", result.id)
                })?;
            }
            Ok::<(), EngineError>(())
        };
        if !interrupted {
            let mut round = None;
            for (r, i) in trial_order(2 * n, plan.budget.trials, plan.seed, true) {
                if round != Some(r) {
                    if round.is_some() {
                        keep(&ms, &runs)?;
                    }
                    round = Some(r);
                    let what = format!("round {} of {}", r + 1, plan.budget.trials);
                    sink.borrow_mut().event(Event::Phase { what: &what });
                }
                armed.set(i >= n)?;
                if ms[i].trial(r, self.stop, &progress).is_err()
                    || self.stop.load(Ordering::Relaxed)
                {
                    interrupted = true;
                    break;
                }
            }
        }
        armed.set(false)?;
        let sink = sink.into_inner();
        for (i, m) in ms.iter().enumerate() {
            if interrupted && !m.settled() {
                continue;
            }
            let run = &mut runs[i / n];
            let (result, warnings) = m.finish(run.overhead.as_ref());
            for w in &warnings {
                sink.event(Event::Warning { warning: w });
            }
            sink.event(Event::BenchmarkDone { result: &result });
            stored(store.put_result(&run.id, i % n, &result), || {
                format!("storing {}", result.id)
            })?;
            run.warnings.extend(warnings);
            run.results.push(result);
        }
        for run in &mut runs {
            run.derived = crate::derived::compute(&run.results);
            run.ended_ns = Some(now_ns());
            run.complete = !interrupted;
            if interrupted {
                run.warnings.push(Warning {
                    bench: None,
                    kind: WarningKind::Interrupted,
                    message: format!(
                        "interrupted after {} of {n} benchmarks; the finished ones are stored",
                        run.results.len()
                    ),
                });
            }
            stored(store.finish_run(run), || {
                "finishing the run in the store".into()
            })?;
        }
        let [off, on] = runs;
        sink.event(Event::RunFinished {
            run_id: &on.id,
            interrupted,
        });
        Ok(AbOutcome {
            off,
            on,
            interrupted,
        })
    }
}
