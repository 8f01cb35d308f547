//! The progress bars on stderr, hidden when stderr is not a terminal: trials of a run (the
//! engine's [`Sink`]), and seconds of a whole-machine profile or trace. Nothing else in the
//! program draws one.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::time::Duration;
use sysperf::engine::{Event, Sink};
use sysperf::model::TrialKind;

/// A bar of `len` steps drawn with `template` (indicatif's), `chars` its fill when given.
fn bar(len: u64, template: &str, chars: Option<&str>) -> ProgressBar {
    let bar = ProgressBar::new(len);
    if !std::io::stderr().is_terminal() {
        bar.set_draw_target(ProgressDrawTarget::hidden());
        return bar;
    }
    bar.set_draw_target(ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(match chars {
            Some(c) => style.progress_chars(c),
            None => style,
        });
    }
    bar
}

/// The trials of `sysperf run`, `noise` and `ab`, as the engine reports them.
pub(crate) struct Trials(ProgressBar);

impl Trials {
    pub(crate) fn new() -> Trials {
        let bar = bar(
            0,
            "{elapsed_precise} [{bar:30}] {pos}/{len} trials, ETA {eta}  {msg}",
            Some("=> "),
        );
        if std::io::stderr().is_terminal() {
            bar.enable_steady_tick(Duration::from_millis(200));
        }
        Trials(bar)
    }

    /// Takes the bar off the screen, before the results are printed.
    pub(crate) fn finish(&self) {
        self.0.finish_and_clear();
    }
}

impl Sink for Trials {
    fn event(&mut self, e: Event<'_>) {
        let bar = &self.0;
        match e {
            // Calibration takes a few trials per calibrated target: guessed at 3, corrected
            // as they come.
            Event::RunStarted {
                planned_trials,
                calibrated,
                ..
            } => bar.set_length(1 + planned_trials + 3 * calibrated as u64),
            Event::Phase { what } => bar.set_message(what.to_string()),
            Event::FewerTrials { trials } => {
                bar.set_length(bar.length().unwrap_or(0).saturating_sub(trials))
            }
            Event::TargetStarted { id, index, total } => {
                bar.set_message(format!("{} ({}/{})", id, index + 1, total))
            }
            Event::TrialFinished { kind } => {
                if kind == TrialKind::Calibration && bar.position() + 1 >= bar.length().unwrap_or(0)
                {
                    bar.inc_length(1);
                }
                bar.inc(1)
            }
            Event::Warning { .. } | Event::BenchmarkDone { .. } | Event::RunFinished { .. } => {}
        }
    }
}

/// A [`Trials`] bar for each run a library use case makes (`sysperf::ops`), taken off the
/// screen when the run is over.
#[derive(Default)]
pub(crate) struct Bars(Option<Trials>);

impl sysperf::ops::Progress for Bars {
    fn sink(&mut self) -> &mut dyn Sink {
        self.0.get_or_insert_with(Trials::new)
    }

    fn done(&mut self) {
        if let Some(bar) = self.0.take() {
            bar.finish();
        }
    }
}

/// Seconds of `duration` (`profile --system`), with its ETA.
pub(crate) fn seconds(duration: Duration) -> ProgressBar {
    bar(
        duration.as_secs().max(1),
        "{elapsed_precise} [{bar:30}] {pos}/{len} s, ETA {eta}  {msg}",
        Some("=> "),
    )
}

/// Seconds of `duration` of `trace --system`, with what was traced so far and the time left.
pub(crate) fn tracing(duration: Duration) -> ProgressBar {
    bar(
        duration.as_secs().max(1),
        "sysperf: tracing {bar:30} {pos}/{len} s, {msg}, {eta} left",
        None,
    )
}
