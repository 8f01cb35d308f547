//! One measuring session of the engine, from the runs begun in the store to the runs
//! finished: what `run`, `noise` and `ab` share. A session holds the runs it measures into
//! (one for `run`, one per side for `ab`), the store and the sink, and carries out the steps
//! in order: [`Session::begin`], [`Session::overhead`], [`Session::calibrate`],
//! [`Session::rounds`] (with [`Session::precision`]), [`Session::summarise`],
//! [`Session::finish`].
//!
//! It is not the plan (what to measure: [`super::RunPlan`]) nor the schedule (when:
//! [`super::schedule`]); the measurements themselves belong to the caller, which built their
//! targets, and are handed to each step. Each measurement has a *slot*: the run it belongs
//! to and its place among that run's results (None for a suite's point, stored with its
//! series instead).

use super::schedule;
use super::{stored, Engine, EngineError, Event, RunPlan, Sink};
use crate::harness::{self, Measurement, Options};
use crate::model::{BenchResult, Run, Warning, WarningKind};
use crate::store::Backend;
use std::cell::RefCell;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Where a measurement's result goes: `(run index, position among its results)`.
pub type Slot = Option<(usize, usize)>;

/// A measurement's summary and warnings once it is done; None when it has nothing to show.
pub type Done = Option<(BenchResult, Vec<Warning>)>;

/// What `RunStarted` announces.
#[derive(Debug, Clone, Copy)]
pub struct Started {
    pub targets: usize,
    pub planned_trials: u64,
    pub calibrated: usize,
}

/// A hook run before each calibration or trial of a measurement (by index): `ab` sets its
/// switch there.
pub type Before<'h, E> = &'h mut dyn FnMut(usize) -> Result<(), E>;

/// Runs being measured: see the module's documentation.
pub struct Session<'s> {
    engine: &'s Engine<'s>,
    store: &'s dyn Backend,
    sink: RefCell<&'s mut dyn Sink>,
    pub runs: Vec<Run>,
    /// Set once the stop flag was seen or a trial was interrupted: later steps do nothing.
    pub interrupted: bool,
    began: Instant,
}

impl<'s> Session<'s> {
    /// Begins `runs` in the store (marked incomplete) and announces the first.
    pub fn begin(
        engine: &'s Engine<'s>,
        store: &'s dyn Backend,
        sink: &'s mut dyn Sink,
        runs: Vec<Run>,
        began: Instant,
        started: Started,
    ) -> Result<Session<'s>, EngineError> {
        for run in &runs {
            stored(store.begin_run(run), || {
                "recording the run in the store".into()
            })?;
        }
        sink.event(Event::RunStarted {
            run_id: &runs[0].id,
            targets: started.targets,
            planned_trials: started.planned_trials,
            calibrated: started.calibrated,
        });
        Ok(Session {
            engine,
            store,
            sink: RefCell::new(sink),
            runs,
            interrupted: false,
            began,
        })
    }

    /// Sends an event to the sink.
    pub fn event(&self, e: Event<'_>) {
        self.sink.borrow_mut().event(e);
    }

    /// Announces a stage of the session.
    pub fn phase(&self, what: &str) {
        self.event(Event::Phase { what });
    }

    /// The store the runs go to.
    pub fn store(&self) -> &dyn Backend {
        self.store
    }

    /// Time since the session's command began.
    pub fn elapsed(&self) -> std::time::Duration {
        self.began.elapsed()
    }

    fn stopped(&self) -> bool {
        self.engine.stop.load(Ordering::Relaxed)
    }

    /// Measures the timer and loop overhead once, for every run (or says in each that
    /// nothing is subtracted).
    pub fn overhead(&mut self, opts: &Options) {
        self.phase("overhead");
        let measured = harness::measure_overhead(opts, self.engine.stop);
        for run in &mut self.runs {
            match &measured {
                Ok(o) => run.overhead = Some(*o),
                Err(e) => run.warnings.push(Warning {
                    bench: None,
                    kind: WarningKind::Overhead,
                    message: format!("overhead not measured ({e}); nothing subtracted"),
                }),
            }
        }
    }

    /// Calibration and warm-up, measurement by measurement, `before` each.
    pub fn calibrate<E: From<EngineError>>(
        &mut self,
        ms: &mut [Measurement],
        before: Before<'_, E>,
    ) -> Result<(), E> {
        self.phase("calibration");
        let total = ms.len();
        for (index, m) in ms.iter_mut().enumerate() {
            before(index)?;
            self.event(Event::TargetStarted {
                id: m.id(),
                index,
                total,
            });
            if m.prepare(self.engine.stop, &|e| self.progress(e)).is_err() || self.stopped() {
                self.interrupted = true;
                break;
            }
        }
        Ok(())
    }

    fn progress(&self, e: harness::Event) {
        if let harness::Event::Trial { kind } = e {
            self.event(Event::TrialFinished { kind });
        }
    }

    /// One counted trial of measurement `i` in `round`, `before` it; false once stopped.
    fn trial<E: From<EngineError>>(
        &mut self,
        ms: &mut [Measurement],
        i: usize,
        round: u32,
        before: Before<'_, E>,
    ) -> Result<bool, E> {
        before(i)?;
        if ms[i]
            .trial(round, self.engine.stop, &|e| self.progress(e))
            .is_err()
            || self.stopped()
        {
            self.interrupted = true;
        }
        Ok(!self.interrupted)
    }

    /// Stores the results so far of the measurements `which` that have a slot and something
    /// to store.
    pub fn checkpoint(
        &self,
        ms: &[Measurement],
        slots: &[Slot],
        which: impl IntoIterator<Item = usize>,
    ) -> Result<(), EngineError> {
        for i in which {
            if let (Some((run, pos)), true) = (slots[i], ms[i].settled()) {
                let run = &self.runs[run];
                let (result, _) = ms[i].finish(run.overhead.as_ref());
                stored(self.store.put_result(&run.id, pos, &result), || {
                    format!("storing {}", result.id)
                })?;
            }
        }
        Ok(())
    }

    /// The counted trials of `plan`'s budget, in rounds ([`schedule::trial_order`]), with a
    /// checkpoint between rounds (or after each measurement's trials, in sequential order).
    pub fn rounds<E: From<EngineError>>(
        &mut self,
        ms: &mut [Measurement],
        slots: &[Slot],
        plan: &RunPlan,
        interleave: bool,
        before: Before<'_, E>,
    ) -> Result<(), E> {
        if self.interrupted {
            return Ok(());
        }
        let order = schedule::trial_order(ms.len(), plan.budget.trials, plan.seed, interleave);
        let mut prev = None;
        for (r, i) in order {
            let step = schedule::before(prev, (r, i), ms.len(), interleave);
            self.checkpoint(ms, slots, step.checkpoint)?;
            if let Some(r) = step.round {
                self.phase(&format!("round {} of {}", r + 1, plan.budget.trials));
            }
            prev = Some((r, i));
            if !self.trial(ms, i, r, before)? {
                break;
            }
        }
        Ok(())
    }

    /// `--precision PCT`: more rounds, of the measurements whose interval is still wider than
    /// asked, until none is or `--max-time` has passed since the command began; then a
    /// warning for each that did not get there.
    pub fn precision<E: From<EngineError>>(
        &mut self,
        ms: &mut [Measurement],
        slots: &[Slot],
        plan: &RunPlan,
        before: Before<'_, E>,
    ) -> Result<(), E> {
        let (false, Some(pct)) = (self.interrupted, plan.precision_pct) else {
            return Ok(());
        };
        self.checkpoint(ms, slots, 0..ms.len())?;
        let mut r = plan.budget.trials;
        loop {
            let mut active: Vec<usize> = (0..ms.len())
                .filter(|&i| ms[i].ready() && !precise(&ms[i], pct))
                .collect();
            if active.is_empty() || self.elapsed() >= plan.max_time {
                break;
            }
            if plan.interleave {
                crate::stats::shuffle(&mut active, schedule::round_seed(plan.seed, r));
            }
            self.phase(&format!(
                "round {} ({} above +-{pct}%)",
                r + 1,
                active.len()
            ));
            for &i in &active {
                if !self.trial(ms, i, r, before)? {
                    break;
                }
            }
            self.checkpoint(ms, slots, active.iter().copied())?;
            if self.interrupted {
                break;
            }
            r += 1;
        }
        let interrupted = self.interrupted;
        for (i, m) in ms.iter().enumerate() {
            if !m.ready() || precise(m, pct) {
                continue;
            }
            let hw = super::half_width_pct(m)
                .map(|h| format!("+-{h:.1}%"))
                .unwrap_or_else(|| "no 95% interval yet".into());
            let run = slots[i].map(|(run, _)| run).unwrap_or(0);
            self.runs[run].warnings.push(Warning {
                bench: Some(m.id().to_string()),
                kind: WarningKind::Imprecise,
                message: format!(
                    "{}: {hw} after {} trials, not the +-{pct}% asked for{}",
                    m.id(),
                    m.measured_trials(),
                    if interrupted {
                        " (interrupted)"
                    } else {
                        " before --max-time ran out"
                    }
                ),
            });
        }
        Ok(())
    }

    /// Each measurement's summary and warnings, in order, reported to the sink and stored at
    /// its slot; None for one the stop came before (in its calibration, or before its first
    /// counted trial), which has nothing to show. A failed one is stored.
    pub fn summarise(
        &mut self,
        ms: &[Measurement],
        slots: &[Slot],
    ) -> Result<Vec<Done>, EngineError> {
        let mut out = Vec::with_capacity(ms.len());
        for (m, slot) in ms.iter().zip(slots) {
            if self.interrupted && !m.settled() {
                out.push(None);
                continue;
            }
            let run = slot.map(|(run, _)| run).unwrap_or(0);
            let (result, warnings) = m.finish(self.runs[run].overhead.as_ref());
            for w in &warnings {
                self.event(Event::Warning { warning: w });
            }
            self.event(Event::BenchmarkDone { result: &result });
            if let Some((run, pos)) = slot {
                let id = &self.runs[*run].id;
                stored(self.store.put_result(id, *pos, &result), || {
                    format!("storing {}", result.id)
                })?;
            }
            out.push(Some((result, warnings)));
        }
        Ok(out)
    }

    /// Finishes every run: its derived figures (the core ones from its results, then
    /// `extra`'s), end time, completeness and, when stopped, a warning saying how many of
    /// `planned` benchmarks it holds; stored, then `RunFinished` for the last run.
    pub fn finish(
        self,
        planned: usize,
        mut extra: impl FnMut(usize) -> Vec<crate::model::Derived>,
    ) -> Result<Vec<Run>, EngineError> {
        let Session {
            store,
            sink,
            mut runs,
            interrupted,
            ..
        } = self;
        for (k, run) in runs.iter_mut().enumerate() {
            if let Some(e) = run
                .results
                .iter()
                .flat_map(|r| &r.trials)
                .find_map(|t| t.counters.as_ref().and_then(|c| c.perf_error.clone()))
            {
                run.warnings.push(Warning {
                    bench: None,
                    kind: WarningKind::Observe,
                    message: format!(
                        "--observe: no perf counters, only system-wide /proc deltas: {e}"
                    ),
                });
            }
            run.derived = crate::derived::compute(&run.results);
            run.derived.extend(extra(k));
            run.ended_ns = Some(super::now_ns());
            run.complete = !interrupted;
            if interrupted {
                run.warnings.push(Warning {
                    bench: None,
                    kind: WarningKind::Interrupted,
                    message: format!(
                        "interrupted after {} of {planned} benchmarks; the finished ones are stored",
                        run.results.len()
                    ),
                });
            }
            stored(store.finish_run(run), || {
                "finishing the run in the store".into()
            })?;
        }
        let sink = sink.into_inner();
        if let Some(last) = runs.last() {
            sink.event(Event::RunFinished {
                run_id: &last.id,
                interrupted,
            });
        }
        Ok(runs)
    }
}

fn precise(m: &Measurement, pct: f64) -> bool {
    super::half_width_pct(m).is_some_and(|h| h <= pct)
}
