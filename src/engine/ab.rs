//! `sysperf ab` (#19, #30): one selection measured on two sides (a runtime switch off and on,
//! or two commands), paired round by round, as two stored runs (labels `LABEL-off` and
//! `LABEL-on`, or `LABEL-a` and `LABEL-b`) that `compare` then sets side by side with the
//! paired interval (`crate::paired`).
//!
//! Each test is calibrated once, on side A, and both sides run at that count (so a pair of
//! trials does the same work), each side warmed up. Then rounds: each round takes the tests
//! in an order shuffled from the seed, and runs each test's A and B trials back to back, A
//! or B first at random ([`super::schedule::paired_order`]), so that both meet the machine
//! in the same moment; trials are short (`ab`'s default is 15 ms) and many. With `--duet`
//! the two trials of a test run at the same time, one on each of two CPUs, their timed
//! regions started together and the sides swapped between the CPUs every round (Bulej et
//! al., "Duet Benchmarking", ICPE 2020). With `--precision PCT`, full rounds are added until
//! every test's paired interval is that narrow.
//!
//! A machine-wide setting is written before each trial whose side differs from the last one;
//! a task switch travels in the worker's request; two commands are two targets. The setting
//! is held by a [`switch::Armed`] guard from before its first change to the end, on every
//! path (see [`super::switch`] for the record that survives a SIGKILL). Both sides share one
//! overhead measurement and one doctor's look; each side has its own fingerprint, taken with
//! its switch set, so `compare` names what differs. Each run records its side and partner
//! (`RunParams::ab`), which keeps it out of the machine's run-to-run variance.

use super::session::{Order, Session, Slot, Wide};
use super::switch::{self, Switch, SwitchError};
use super::{new_run, EngineError, RunPlan, Sink};
use crate::error::InputError;
use crate::harness::{Measurement, Target};
use crate::model::{AbSide, Run, Warning, WarningKind};
use crate::observe::doctor;
use crate::profile::ProfileError;
use crate::store::Backend;

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

/// One pair of runs: side A (`off`) and side B (`on`).
#[derive(Debug)]
pub struct AbOutcome {
    pub off: Run,
    pub on: Run,
    pub interrupted: bool,
}

/// How the two sides of a round run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Design {
    /// Back to back, in a random order per round.
    Paired,
    /// At the same time on two CPUs, swapped every round (`--duet`).
    Duet,
}

impl Design {
    pub fn as_str(self) -> &'static str {
        match self {
            Design::Paired => "paired",
            Design::Duet => "duet",
        }
    }
}

/// What differs between the two sides of an A/B.
pub trait Sides {
    /// Puts the machine in side B's state (`true`) or side A's.
    fn set(&mut self, b: bool) -> Result<(), SwitchError>;
    /// Side A's target for one of the plan's targets (as planned, unless the sides are
    /// commands).
    fn target_a(&self, planned: &Target) -> Target {
        planned.clone()
    }
    /// Side B's target for one of the plan's targets.
    fn target_b(&self, planned: &Target) -> Target;
    /// What a side is, for its run's notes.
    fn describe(&self, b: bool) -> String;
    /// The side's command as outputs name it, when the sides are commands.
    fn command(&self, _b: bool) -> Option<String> {
        None
    }
    /// The end of a side's label: `off`/`on` for a switch, `a`/`b` for two commands.
    fn tag(&self, b: bool) -> &'static str;
    /// Whether the two sides can run at the same time (a machine-wide setting cannot be
    /// both values at once).
    fn concurrent(&self) -> Result<(), String>;
}

/// A switch's two sides.
pub struct SwitchSides<'s> {
    pub switch: &'s Switch,
    pub armed: switch::Armed,
}

impl Sides for SwitchSides<'_> {
    fn set(&mut self, b: bool) -> Result<(), SwitchError> {
        self.armed.set(b)
    }
    fn target_a(&self, planned: &Target) -> Target {
        Target {
            task: self.switch.off_task(),
            ..planned.clone()
        }
    }
    fn target_b(&self, a: &Target) -> Target {
        Target {
            task: match self.switch {
                Switch::Task(t) => Some(*t),
                Switch::Setting(_) => None,
            },
            ..a.clone()
        }
    }
    fn describe(&self, b: bool) -> String {
        self.switch.describe(b)
    }
    fn tag(&self, b: bool) -> &'static str {
        if b {
            "on"
        } else {
            "off"
        }
    }
    fn concurrent(&self) -> Result<(), String> {
        self.switch.concurrent()
    }
}

impl Switch {
    /// Whether its two sides can run at the same time (`ab --duet`): a task switch can, a
    /// machine-wide setting cannot be both values at once.
    pub fn concurrent(&self) -> Result<(), String> {
        match self {
            Switch::Task(_) => Ok(()),
            Switch::Setting(s) => Err(format!(
                "{} is machine-wide: it cannot be both values while both sides run at once; leave out --duet (the sides then run back to back)",
                s.name
            )),
        }
    }
}

/// `ab`'s counted rounds unless `--trials` says otherwise.
pub const DEFAULT_ROUNDS: u32 = 30;
/// `ab`'s trial length unless `--min-time` says otherwise, in seconds: many short trials
/// pair better than a few long ones on a host whose speed changes within a second (#30).
pub const DEFAULT_TRIAL_S: f64 = 0.015;

/// Two command lines (`sysperf ab CMD CMD`, `ab --a CMD --b CMD`): the `command` benchmark
/// on each side, side A the baseline.
pub struct CommandSides {
    pub a: crate::bench::command::CommandLine,
    pub b: crate::bench::command::CommandLine,
}

impl Sides for CommandSides {
    fn set(&mut self, _b: bool) -> Result<(), SwitchError> {
        Ok(())
    }
    fn target_a(&self, planned: &Target) -> Target {
        Target {
            command: Some(self.a.clone()),
            ..planned.clone()
        }
    }
    fn target_b(&self, planned: &Target) -> Target {
        Target {
            command: Some(self.b.clone()),
            ..planned.clone()
        }
    }
    fn describe(&self, b: bool) -> String {
        let (side, line) = if b { ("b", &self.b) } else { ("a", &self.a) };
        format!(
            "ab: side {side}: {} (run as: {})",
            line.name(),
            line.describe()
        )
    }
    fn command(&self, b: bool) -> Option<String> {
        Some(if b { &self.b } else { &self.a }.name())
    }
    fn tag(&self, b: bool) -> &'static str {
        if b {
            "b"
        } else {
            "a"
        }
    }
    fn concurrent(&self) -> Result<(), String> {
        Ok(())
    }
}

/// Checks that `plan` can run as a duet with `sides` on the CPUs it may use: two CPUs, one a
/// side, and every test on one CPU (`--placement same`, or a one-process test). A test whose
/// processes take two CPUs (`--placement spread`) needs four, two a side; unpinned ones
/// (`free`) cannot be kept apart.
pub fn check_duet(plan: &RunPlan, concurrent: Result<(), String>) -> Result<[u32; 2], InputError> {
    let bad = |value: String, why: String| InputError::InvalidValue {
        what: "--duet",
        value,
        why,
    };
    concurrent.map_err(|why| bad("with this switch".into(), why))?;
    let cpus = &plan.cpus.cpus;
    let wide: Vec<&str> = plan
        .targets
        .iter()
        .filter(|p| {
            p.placement.worker.as_ref().is_none_or(|w| w.len() != 1) || p.placement.child.is_some()
        })
        .map(|p| p.target.id.as_str())
        .collect();
    if !wide.is_empty() {
        return Err(bad(format!("with --placement {}", plan.mode.as_str()), format!(
            "a duet runs each side on a CPU of its own; {} would take two CPUs a side (four in all) under --placement {}: use --placement same (both processes of a test on one CPU) or leave out --duet",
            wide.join(", "),
            plan.mode.as_str()
        )));
    }
    match cpus[..] {
        [a, b, ..] => Ok([a, b]),
        _ => Err(bad(format!("on {} CPU", cpus.len()), format!(
            "a duet needs two CPUs, one a side, and this process may use {} ({}); leave out --duet, or allow two CPUs (--cpu A,B)",
            cpus.len(),
            crate::units::format_list(cpus)
        ))),
    }
}

/// `ab`'s selection as a [`super::RunRequest`] takes it: the patterns naming core benchmarks
/// (its `selection`) and those naming suite points (its `suites`: `net.stream-tcp@65536`,
/// `bbn.pipe@*`), each as [`super::Picked`] reads it; a pattern that names neither is an
/// error. Both kinds are measured alike, paired, each point stored among its side's results.
pub fn selection(
    patterns: &[String],
    quick: bool,
) -> Result<(Vec<String>, Vec<String>), InputError> {
    let (mut benches, mut points) = (Vec::new(), Vec::new());
    for p in patterns {
        match super::Picked::of(p, quick)? {
            super::Picked::Benches(_) => benches.push(p.clone()),
            super::Picked::Points(_) => points.push(p.clone()),
        }
    }
    Ok((benches, points))
}

/// The label of an A/B's runs when none is given: `ab-NAME-` and 6 random hex digits, NAME
/// the switch's or `cmd` for two commands (the runs are `LABEL-off` and `LABEL-on`, or
/// `LABEL-a` and `LABEL-b`).
pub fn default_label(name: &str) -> Result<String, EngineError> {
    let tag = &super::new_run_id()?[..6];
    Ok(format!("ab-{name}-{tag}"))
}

impl super::Engine<'_> {
    /// Measures `plan`'s core benchmarks and suite points with `switch` off and on in `design`, `plan.repeat`
    /// pairs of runs, each side stored as a run labelled `LABEL-off` / `LABEL-on`. The switch
    /// is put back before returning, whatever happened.
    pub fn execute_ab(
        &self,
        plan: &RunPlan,
        design: Design,
        switch: &Switch,
        store: &dyn Backend,
        sink: &mut dyn Sink,
    ) -> Result<Vec<AbOutcome>, AbError> {
        switch.check()?;
        crate::safedir::check_temp_dir().map_err(EngineError::Unsafe)?;
        let mut sides = SwitchSides {
            switch,
            armed: switch.arm()?,
        };
        let out = self.execute_sides(plan, design, &mut sides, store, sink)?;
        sides.armed.release()?;
        Ok(out)
    }

    /// Measures `plan`'s core benchmarks and suite points on both `sides` in `design`, `plan.repeat` pairs of
    /// runs (each side's runs one group when there are several pairs); side A's state is
    /// put back before returning. Stops after an interrupted pair.
    pub fn execute_sides(
        &self,
        plan: &RunPlan,
        design: Design,
        sides: &mut dyn Sides,
        store: &dyn Backend,
        sink: &mut dyn Sink,
    ) -> Result<Vec<AbOutcome>, AbError> {
        // Benchmarks make scratch files there: refused before anything is measured.
        crate::safedir::check_temp_dir().map_err(EngineError::Unsafe)?;
        let groups = (plan.repeat > 1)
            .then(|| Ok::<_, EngineError>([super::new_run_id()?, super::new_run_id()?]))
            .transpose()?;
        super::repeated(
            plan,
            "pair",
            sink,
            |p, sink| {
                self.ab_pair(&p, design, sides, groups.as_ref(), store, sink)
                    .inspect_err(|_| {
                        let _ = sides.set(false);
                    })
            },
            |o| o.interrupted,
        )
    }

    fn ab_pair(
        &self,
        plan: &RunPlan,
        design: Design,
        sides: &mut dyn Sides,
        groups: Option<&[String; 2]>,
        store: &dyn Backend,
        sink: &mut dyn Sink,
    ) -> Result<AbOutcome, AbError> {
        let began = std::time::Instant::now();
        let runs = self.ab_runs(plan, design, sides, groups)?;
        let mut s = Session::begin(self, plan, store, sink, runs, began)?;
        // Core benchmarks and suite points alike (a point is stored among its side's results,
        // by its id); a suite that cannot run here is left out, said in both runs.
        let benches = {
            let (a, b) = s.runs.split_at_mut(1);
            let (w, notes) = (a[0].warnings.len(), a[0].notes.len());
            let chosen = super::preflight(plan, &mut a[0]);
            for run in b {
                run.warnings.extend_from_slice(&a[0].warnings[w..]);
                run.notes.extend_from_slice(&a[0].notes[notes..]);
            }
            chosen
        };
        let n = benches.len();
        let opts = self.options(plan);
        s.overhead(&opts);
        // Measurements 0..n are side A, n..2n side B, at A's counts.
        let targets: Vec<Target> = (0..2 * n)
            .map(|i| match i < n {
                true => sides.target_a(&benches[i].target),
                false => sides.target_b(&benches[i - n].target),
            })
            .collect();
        let mut ms: Vec<Measurement> = (0..2 * n)
            .map(|i| Measurement::new(&targets[i], &benches[i % n].placement, &opts))
            .collect();
        let slots: Vec<Slot> = (0..2 * n).map(|i| Some((i / n, i % n))).collect();
        let order = match design {
            Design::Paired => Order::Paired { n },
            Design::Duet => Order::Duet {
                n,
                cpus: check_duet(plan, sides.concurrent())
                    .map_err(|e| EngineError::Input(Box::new(e)))?,
            },
        };
        {
            let mut side = |i: usize| sides.set(i >= n).map_err(AbError::from);
            s.calibrate_sides(&mut ms, n, &mut side)?;
            s.rounds(&mut ms, &slots, plan, order, &mut side)?;
            let swapped = design == Design::Duet;
            let wide = |ms: &[Measurement], pct| paired_wide(ms, n, swapped, pct);
            s.precision(&mut ms, &slots, plan, order, &wide, &mut side)?;
        }
        sides.set(false)?;
        if let Some(note) = duet_note(&s.overlaps) {
            s.runs.iter_mut().for_each(|r| r.notes.push(note.clone()));
        }
        let done = s.summarise(&ms, &slots)?;
        s.place(done, &slots);
        // `--profile`: each side profiled in its own state after the rounds, at the iteration
        // count its measured trials ran at, stored with its run (`sysperf explain` of the two).
        if plan.profile_seconds.is_some() && !s.interrupted {
            self.profile_sides(&mut s, plan, &benches, &targets, sides)?;
        }
        let interrupted = s.interrupted;
        let [off, on]: [Run; 2] = s.finish(n, |_| Vec::new())?.try_into().expect("two sides");
        Ok(AbOutcome {
            off,
            on,
            interrupted,
        })
    }

    /// One profiled trial of every benchmark on each side (`ab --profile`), with the machine in
    /// that side's state, stored with the side's run; what cannot be profiled is a warning in
    /// the run, as with `run --profile`. The machine is put back in side A's state after.
    fn profile_sides(
        &self,
        s: &mut Session,
        plan: &RunPlan,
        benches: &[&super::Planned],
        targets: &[Target],
        sides: &mut dyn Sides,
    ) -> Result<(), AbError> {
        let Some(seconds) = plan.profile_seconds else {
            return Ok(());
        };
        let (access, warnings) = super::profile_access(plan);
        let Some(access) = access else {
            s.runs
                .iter_mut()
                .for_each(|r| r.warnings.extend(warnings.clone()));
            return Ok(());
        };
        let n = benches.len();
        'sides: for side in 0..2 {
            sides.set(side == 1)?;
            for (j, p) in benches.iter().enumerate() {
                let id = &p.target.id;
                let warning = |message: String| Warning {
                    bench: Some(id.clone()),
                    kind: WarningKind::Profile,
                    message,
                };
                let Some(result) = s.runs[side].results.iter().find(|r| r.id == *id).cloned()
                else {
                    continue;
                };
                s.phase(&format!("profiling {id}, side {}", sides.tag(side == 1)));
                let made = self.profile_one(
                    &targets[side * n + j],
                    &p.placement,
                    &result,
                    seconds,
                    plan,
                    &access,
                );
                match made {
                    Ok(Some(prof)) => {
                        let run = s.runs[side].id.clone();
                        super::stored(s.store().add_profile(&run, &prof), || {
                            format!("storing the profile of {id}")
                        })?;
                    }
                    Ok(None) => s.runs[side].warnings.push(warning(format!(
                        "{id}: not profiled: no trial succeeded, so there is no iteration count to profile at"
                    ))),
                    Err(ProfileError::Interrupted) => {
                        s.interrupted = true;
                        break 'sides;
                    }
                    Err(e) => s.runs[side].warnings.push(warning(e.to_string())),
                }
            }
        }
        sides.set(false)?;
        Ok(())
    }

    /// The two runs of a pair, labelled `LABEL-off`/`LABEL-on` (or `-a`/`-b`), each with its
    /// side's fingerprint (taken with the machine in that side's state), a note of what it
    /// is, and its side and partner; the doctor looks once.
    fn ab_runs(
        &self,
        plan: &RunPlan,
        design: Design,
        sides: &mut dyn Sides,
        groups: Option<&[String; 2]>,
    ) -> Result<Vec<Run>, AbError> {
        let fp_b = {
            sides.set(true)?;
            let fp = crate::fingerprint::collect();
            sides.set(false)?;
            fp
        };
        let fp_a = crate::fingerprint::collect();
        let findings = doctor::diagnose(&doctor::gather(fp_a.clone(), doctor::SAMPLE));
        let label = plan.label.clone().unwrap_or_else(|| "ab".into());
        let mut runs = vec![
            new_run(plan, fp_a, findings.clone())?,
            new_run(plan, fp_b, findings)?,
        ];
        let ids = [runs[0].id.clone(), runs[1].id.clone()];
        for (side, run) in runs.iter_mut().enumerate() {
            let b = side == 1;
            run.label = Some(format!("{label}-{}", sides.tag(b)));
            run.notes.push(sides.describe(b));
            run.params.group = groups.map(|g| g[side].clone());
            run.params.ab = Some(AbSide {
                side: if b { "b" } else { "a" }.into(),
                partner: ids[1 - side].clone(),
                design: design.as_str().into(),
                command: sides.command(b),
            });
        }
        Ok(runs)
    }
}

/// The tests whose paired interval (side A's measurement `j`, side B's `n + j`, joined by
/// round; a duet's rounds two by two) is still wider than `pct`, or has no interval yet.
fn paired_wide(ms: &[Measurement], n: usize, swapped: bool, pct: f64) -> Vec<Wide> {
    (0..n)
        .filter(|&j| ms[j].ready() && ms[n + j].ready())
        .filter_map(|j| {
            let b: std::collections::BTreeMap<u32, f64> =
                ms[n + j].by_round().into_iter().collect();
            let pairs: Vec<(u32, f64, f64)> = ms[j]
                .by_round()
                .into_iter()
                .filter_map(|(r, a)| b.get(&r).map(|&b| (r, a, b)))
                .collect();
            let p = crate::paired::round_log_ratios(&pairs, swapped)
                .and_then(|d| crate::paired::paired(&d, crate::compare::LEVEL));
            let h = p.map(|p| p.half_width_pct());
            (!h.is_some_and(|h| h <= pct)).then(|| Wide {
                index: j,
                now: match h {
                    Some(h) => format!("paired +-{h:.1}% over {} rounds", pairs.len()),
                    None => format!("no paired interval yet ({} rounds)", pairs.len()),
                },
                reachable: true,
            })
        })
        .collect()
}

/// What a duet's rounds were like, for the runs' notes: how much the two sides' timed
/// regions overlapped.
fn duet_note(overlaps: &[f64]) -> Option<String> {
    let sorted = crate::stats::sorted(overlaps).ok()?;
    Some(format!(
        "ab --duet: the two sides' timed regions overlapped {:.0}% on median over {} rounds (lowest {:.0}%)",
        100.0 * crate::stats::quantile(&sorted, 0.5),
        sorted.len(),
        100.0 * sorted[0],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_selection_splits_into_core_benchmarks_and_suite_points() {
        let (benches, points) = selection(
            &strings(&["syscall", "net.stream-tcp@65536", "pipe*", "bbn.pipe@*"]),
            false,
        )
        .unwrap();
        assert_eq!(benches, strings(&["syscall", "pipe*"]));
        assert_eq!(points, strings(&["net.stream-tcp@65536", "bbn.pipe@*"]));
        // The plan measures both: the points after the core benchmarks.
        let req = super::super::RunRequest {
            selection: benches,
            suites: points,
            ..Default::default()
        };
        let plan = RunPlan::resolve(&req, &[0, 1]).unwrap();
        assert!(plan
            .targets
            .iter()
            .any(|p| p.target.id == "net.stream-tcp@65536"));
        assert_eq!(plan.targets[0].target.id, "syscall");
        // Neither a benchmark nor a point: the registry's error, which suggests neighbours.
        let err = selection(&strings(&["net.stream-tcp@x"]), false).unwrap_err();
        assert!(err.to_string().contains("unknown benchmark"), "{err}");
    }
}
