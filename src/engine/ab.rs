//! `sysperf ab --switch NAME` (#19): one selection measured with a runtime switch off and on,
//! interleaved trial by trial, as two stored runs (labels `LABEL-off`, `LABEL-on`) that
//! `compare` then sets side by side.
//!
//! Every target is measured twice, once per side, as two targets of one plan: calibrated and
//! warmed up each with its side's switch, then counted in rounds, each round one trial of
//! every (target, side) pair in an order shuffled from the seed ([`super::schedule`]), so
//! both sides sample the same moments of the machine. A machine-wide setting is written
//! before each trial whose side differs from the last one; a task switch travels in the
//! worker's request. The setting is held by a [`switch::Armed`] guard from before its first
//! change to the end, on every path (see [`super::switch`] for the record that survives a
//! SIGKILL). Both sides share one overhead measurement and one doctor's look; each side has
//! its own fingerprint, taken with its switch set, so `compare` names what differs.

use super::session::{Session, Slot};
use super::switch::{self, Switch, SwitchError};
use super::{new_run, EngineError, Event, Origin, RunPlan, Sink};
use crate::harness::{Measurement, Target};
use crate::model::Run;
use crate::observe::doctor;
use crate::store::Backend;

/// Why an A/B could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum AbError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Switch(#[from] SwitchError),
}

/// One pair of runs.
#[derive(Debug)]
pub struct AbOutcome {
    pub off: Run,
    pub on: Run,
    pub interrupted: bool,
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
        let began = std::time::Instant::now();
        let runs = self.ab_runs(plan, switch, armed)?;
        let benches: Vec<&super::Planned> = plan
            .targets
            .iter()
            .filter(|p| matches!(p.origin, Origin::Bench(_)))
            .collect();
        let n = benches.len();
        let mut s = Session::begin(self, store, sink, runs, began, super::started(plan, 2))?;
        let opts = self.options(plan);
        s.overhead(&opts);
        // Measurements 0..n are the off side, n..2n the on side (with the task switch).
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
        let slots: Vec<Slot> = (0..2 * n).map(|i| Some((i / n, i % n))).collect();
        let mut side = |i: usize| armed.set(i >= n).map_err(AbError::from);
        s.calibrate(&mut ms, &mut side)?;
        s.rounds(&mut ms, &slots, plan, true, &mut side)?;
        armed.set(false)?;
        for (k, done) in s.summarise(&ms, &slots)?.into_iter().enumerate() {
            if let Some((result, warnings)) = done {
                let run = &mut s.runs[k / n];
                run.warnings.extend(warnings);
                run.results.push(result);
            }
        }
        let interrupted = s.interrupted;
        let [off, on]: [Run; 2] = s.finish(n, |_| Vec::new())?.try_into().expect("two sides");
        Ok(AbOutcome {
            off,
            on,
            interrupted,
        })
    }

    /// The two runs of a pair, labelled `LABEL-off` and `LABEL-on`, each with its side's
    /// fingerprint (taken with its switch set) and a note of its switch; the doctor looks once.
    fn ab_runs(
        &self,
        plan: &RunPlan,
        switch: &Switch,
        armed: &mut switch::Armed,
    ) -> Result<Vec<Run>, AbError> {
        let fp_on = {
            armed.set(true)?;
            let fp = crate::fingerprint::collect();
            armed.set(false)?;
            fp
        };
        let fp_off = crate::fingerprint::collect();
        let findings = doctor::diagnose(&doctor::gather(fp_off.clone(), doctor::SAMPLE));
        let label = plan.label.clone().unwrap_or_else(|| "ab".into());
        let mut runs = vec![
            new_run(plan, fp_off, findings.clone())?,
            new_run(plan, fp_on, findings)?,
        ];
        for (side, run) in runs.iter_mut().enumerate() {
            let on = side == 1;
            run.label = Some(format!("{label}-{}", if on { "on" } else { "off" }));
            run.notes.push(switch.describe(on));
        }
        Ok(runs)
    }
}
