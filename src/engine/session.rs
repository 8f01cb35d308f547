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
use crate::store::{Backend, Heartbeat};
use std::cell::RefCell;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Where a measurement's result goes: `(run index, position among its results)`.
pub type Slot = Option<(usize, usize)>;

/// A measurement's summary and warnings once it is done; None when it has nothing to show.
pub type Done = Option<(BenchResult, Vec<Warning>)>;

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
    /// The plan's seed: each round's order is shuffled from it.
    seed: u64,
    /// `--duet`: how long after its workers start a round's timed regions begin.
    duet_wait: Duration,
    /// `--duet`: the share of each round's longer timed region the two sides overlapped.
    pub overlaps: Vec<f64>,
    /// The runs' heartbeat through every phase (#41), stopped by [`Session::finish`].
    heart: Option<Heartbeat>,
}

/// The wait before a duet's first round (later ones from how long the workers took).
const DUET_FIRST_WAIT: Duration = Duration::from_millis(50);

/// How a session's counted trials are ordered ([`schedule`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Every round holds one trial of each measurement, in an order shuffled per round.
    Interleaved,
    /// Each measurement's trials back to back (`--sequential`).
    Sequential,
    /// `ab`: measurements `0..n` are side A, `n..2n` side B; each round takes the tests in a
    /// shuffled order, each test's two sides back to back in a random order.
    Paired { n: usize },
    /// `ab --duet`: as `Paired`, each test's two sides at the same time, side A on the
    /// first CPU in even rounds and on the second in odd ones.
    Duet { n: usize, cpus: [u32; 2] },
}

/// A measurement whose interval is still wider than `--precision` asked (or whose
/// comparison's is, for `ab`): its index (side A's for `ab`), its interval now in words,
/// and whether more rounds can narrow it.
#[derive(Debug, Clone)]
pub struct Wide {
    pub index: usize,
    pub now: String,
    pub reachable: bool,
}

impl<'s> Session<'s> {
    /// Begins `runs` (one per side of `plan`) in the store, marked incomplete, and announces
    /// the first. `began`: when the command began (`--max-time` counts from it).
    pub fn begin(
        engine: &'s Engine<'s>,
        plan: &RunPlan,
        store: &'s dyn Backend,
        sink: &'s mut dyn Sink,
        runs: Vec<Run>,
        began: Instant,
    ) -> Result<Session<'s>, EngineError> {
        for run in &runs {
            stored(store.begin_run(run), || {
                "recording the run in the store".into()
            })?;
        }
        // Between the runs' own writes, one a round, calibration and long trials were silent
        // for as long as they took, and `gc --abandoned` took a run calibrating for a run
        // abandoned (#41).
        let ids = runs.iter().map(|r| r.id.clone()).collect();
        // Only where the writer's liveness cannot be judged from here: a PostgreSQL store,
        // which other hosts' `gc` reads. On SQLite the store is this machine's, `gc` asks
        // whether the writer runs (pid and start time), and a second connection beating in a
        // thread of this process kept the run's per-round results from other processes until
        // the run ended (`cli::ctrl_c_keeps_finished_benchmarks_and_leaves_nothing_behind`,
        // with the output a pipe), a cause not yet found.
        let heart = matches!(store.location(), crate::store::Location::Postgres(_))
            .then(|| Heartbeat::start(store.location(), ids));
        let sides = runs.len();
        sink.event(Event::RunStarted {
            run_id: &runs[0].id,
            targets: sides * plan.targets.len(),
            planned_trials: sides as u64 * plan.planned_trials(),
            calibrated: sides * plan.calibrated_targets(),
        });
        Ok(Session {
            engine,
            store,
            sink: RefCell::new(sink),
            runs,
            interrupted: false,
            began,
            seed: plan.seed,
            duet_wait: DUET_FIRST_WAIT,
            overlaps: Vec::new(),
            heart,
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

    /// Calibration and warm-up, measurement by measurement, `before` each; the measurements
    /// are numbered from `first` of `total` (`ab` calibrates side A first, then warms side B
    /// up at A's counts).
    pub fn calibrate<E: From<EngineError>>(
        &mut self,
        ms: &mut [Measurement],
        (first, total): (usize, usize),
        before: Before<'_, E>,
    ) -> Result<(), E> {
        if self.interrupted {
            return Ok(());
        }
        if first == 0 {
            self.phase("calibration");
        }
        for (k, m) in ms.iter_mut().enumerate() {
            let index = first + k;
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

    /// `ab`: side A's measurements (`0..n`) calibrated, then side B's (`n..2n`, the same
    /// tests) warmed up at A's counts, so that a pair of trials does the same work.
    pub fn calibrate_sides<E: From<EngineError>>(
        &mut self,
        ms: &mut [Measurement],
        n: usize,
        before: Before<'_, E>,
    ) -> Result<(), E> {
        self.calibrate(&mut ms[..n], (0, 2 * n), before)?;
        for i in 0..n {
            if let Some(count) = ms[i].iterations() {
                ms[n + i].fix_iterations(count);
            }
        }
        self.calibrate(&mut ms[n..], (n, 2 * n), before)
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

    /// `plan`'s rounds of counted trials in `order` (its `budget.trials`, or fewer where its
    /// `rounds_until` allows), the results so far stored between rounds (in sequential
    /// order, after each measurement's trials).
    pub fn rounds<E: From<EngineError>>(
        &mut self,
        ms: &mut [Measurement],
        slots: &[Slot],
        plan: &RunPlan,
        order: Order,
        before: Before<'_, E>,
    ) -> Result<(), E> {
        if self.interrupted {
            return Ok(());
        }
        let (count, until) = (plan.budget.trials, plan.rounds_until);
        if order == Order::Sequential {
            let mut prev = None;
            for (r, i) in schedule::trial_order(ms.len(), count, self.seed, false) {
                let step = schedule::before(prev, (r, i), ms.len(), false);
                self.checkpoint(ms, slots, step.checkpoint)?;
                prev = Some((r, i));
                if !self.trial(ms, i, r, before)? {
                    break;
                }
            }
            return Ok(());
        }
        let start = Instant::now();
        let mut planned = count;
        for r in 0..count {
            if r > 0 {
                self.checkpoint(ms, slots, 0..ms.len())?;
                // From the command's start: calibration and warm-up count, as the whole of
                // a hyperfine command's time does.
                if until.is_some_and(|u| u.reached(r, self.elapsed())) {
                    break;
                }
            }
            self.phase(&format!("round {} of {planned}", r + 1));
            if !self.round(ms, r, order, before)? {
                break;
            }
            // Once a round's length is known, the bar is told how many rounds to expect.
            if let (0, Some(u)) = (r, until) {
                planned = u.expected(count, self.elapsed() - start.elapsed(), start.elapsed());
                self.event(Event::FewerTrials {
                    trials: u64::from(count - planned) * ms.len() as u64,
                });
            }
        }
        Ok(())
    }

    /// One round `r` of every measurement in `order`; false once stopped.
    fn round<E: From<EngineError>>(
        &mut self,
        ms: &mut [Measurement],
        r: u32,
        order: Order,
        before: Before<'_, E>,
    ) -> Result<bool, E> {
        let trials: Vec<usize> = match order {
            Order::Interleaved => schedule::round_order(ms.len(), r, self.seed),
            Order::Sequential => (0..ms.len()).collect(),
            Order::Paired { n } => schedule::paired_order(n, r..r + 1, self.seed)
                .into_iter()
                .map(|(_, i)| i)
                .collect(),
            Order::Duet { n, cpus } => {
                for j in schedule::round_order(n, r, self.seed) {
                    if !self.duet(ms, n, j, r, cpus)? {
                        return Ok(false);
                    }
                }
                return Ok(true);
            }
        };
        for i in trials {
            if !self.trial(ms, i, r, before)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Test `j`'s two sides at once, side A on `cpus[0]` in even rounds, on `cpus[1]` in odd
    /// ones; false once stopped.
    fn duet(
        &mut self,
        ms: &mut [Measurement],
        n: usize,
        j: usize,
        r: u32,
        cpus: [u32; 2],
    ) -> Result<bool, EngineError> {
        let cpus = if r.is_multiple_of(2) {
            cpus
        } else {
            [cpus[1], cpus[0]]
        };
        let (a, b) = ms.split_at_mut(n);
        let stop = self.engine.stop;
        let ran = harness::duet(&mut a[j], &mut b[j], r, cpus, self.duet_wait, stop, &|e| {
            self.progress(e)
        });
        match ran {
            Ok(round) => {
                // The next round waits as long as this one's later worker took to be ready,
                // and half as long again (at least 5 ms, at most a second).
                self.duet_wait = (round.ready * 3 / 2 + Duration::from_millis(2))
                    .clamp(Duration::from_millis(5), Duration::from_secs(1));
                self.overlaps.extend(round.overlap);
            }
            Err(_) => self.interrupted = true,
        }
        if self.stopped() {
            self.interrupted = true;
        }
        Ok(!self.interrupted)
    }

    /// `--precision PCT`: more full rounds in `order`, of every measurement (never of some:
    /// rounds of a few tests back to back would meet the machine in one moment, #30), while
    /// `wide` names one that more rounds can still narrow and `--max-time` has not passed
    /// since the command began; then a warning for each `wide` still names.
    pub fn precision<E: From<EngineError>>(
        &mut self,
        ms: &mut [Measurement],
        slots: &[Slot],
        plan: &RunPlan,
        order: Order,
        wide: &dyn Fn(&[Measurement], f64) -> Vec<Wide>,
        before: Before<'_, E>,
    ) -> Result<(), E> {
        let (false, Some(pct)) = (self.interrupted, plan.precision_pct) else {
            return Ok(());
        };
        self.checkpoint(ms, slots, 0..ms.len())?;
        let mut r = plan.budget.trials;
        loop {
            let now = wide(ms, pct);
            let open = now.iter().filter(|w| w.reachable).count();
            if open == 0 || self.elapsed() >= plan.max_time {
                break;
            }
            self.phase(&format!("round {} ({open} wider than +-{pct}%)", r + 1));
            let more = self.round(ms, r, order, before)?;
            self.checkpoint(ms, slots, 0..ms.len())?;
            if !more {
                break;
            }
            r += 1;
        }
        let interrupted = self.interrupted;
        for w in wide(ms, pct) {
            let m = &ms[w.index];
            let run = slots[w.index].map(|(run, _)| run).unwrap_or(0);
            let why = if !w.reachable {
                ""
            } else if interrupted {
                " (interrupted)"
            } else {
                " before --max-time ran out"
            };
            self.runs[run].warnings.push(Warning {
                bench: Some(m.id().to_string()),
                kind: WarningKind::Imprecise,
                message: format!(
                    "{}: {} after {} trials, not the +-{pct}% asked for{why}",
                    m.id(),
                    w.now,
                    m.measured_trials(),
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

    /// Puts each summary into its slot's run, with its warnings (a slot's position is where
    /// it was stored; results are pushed in measurement order).
    pub fn place(&mut self, done: Vec<Done>, slots: &[Slot]) {
        for (done, slot) in done.into_iter().zip(slots) {
            if let (Some((result, warnings)), Some((run, _))) = (done, slot) {
                let run = &mut self.runs[*run];
                run.warnings.extend(warnings);
                run.results.push(result);
            }
        }
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
            heart,
            ..
        } = self;
        drop(heart);
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
