//! The machine's speed through a run, from what the run itself saw (#30): one line about the
//! machine instead of a warning per test that its trials vary.
//!
//! Every counted trial's log time relative to its test's median is a sample of how fast the
//! machine was at that moment, whatever the test: on a shared host all tests slow down
//! together. In time order these residuals form the machine's speed series. Its change
//! points are found by binary segmentation (a piecewise-constant mean with a Gaussian cost:
//! a split is kept when it lowers the sum of squares by more than `2 ln(n)` times the noise
//! variance, the noise estimated from the differences of consecutive trials, which level
//! shifts barely touch); the segments' means are then split into two speeds (the split of
//! the sorted means with the least weighted within-group sum of squares), and consecutive
//! segments of one speed make an episode. A test is flagged only when its trials vary, once
//! the machine's speed is taken out, well beyond the others'.
//!
//! It also says what a paired `ab` would resolve here: the spread of the difference of two
//! back-to-back trials (a robust standard deviation of consecutive residuals' differences)
//! over the rounds that a minute allows at `ab`'s trial length.
//!
//! Pure: no I/O, no clocks.

use crate::model::{Run, TrialKind};

/// What a run saw of the machine's speed.
#[derive(Debug, Clone, PartialEq)]
pub struct MachineNoise {
    /// Counted trials in the series.
    pub trials: usize,
    /// Seconds from the first counted trial's start to the last's.
    pub span_s: f64,
    /// Changes of speed: the boundaries between episodes of one speed (segments of one speed
    /// next to each other are one episode).
    pub changes: usize,
    /// With change points: the two speeds' ratio (slow / fast time), and the fast and slow
    /// episodes' shortest and longest, in seconds.
    pub speeds: Option<Speeds>,
    /// The standard deviation of a trial's log time about its test's median.
    pub spread: f64,
    /// The standard deviation of the difference of two back-to-back trials' log times
    /// (robust): what pairs A and B in `ab`.
    pub pair_sd: f64,
    /// Seconds from one trial's start to the next beyond the trial itself (a worker's start
    /// and end).
    pub gap_s: f64,
    /// Tests whose trials vary, the machine's speed taken out, well beyond the others': id
    /// and that spread (log sd).
    pub flagged: Vec<(String, f64)>,
}

/// Two speeds and their episodes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Speeds {
    pub ratio: f64,
    /// Episodes of one speed, fast and slow together.
    pub episodes: usize,
    pub fast_s: [f64; 2],
    pub slow_s: [f64; 2],
    /// Share of the run's time at the slow speed.
    pub slow_share: f64,
}

/// A test whose spread stands out is flagged above this log sd (5%) ...
pub const FLAG_SD: f64 = 0.05;
/// ... and above this many times the tests' median spread (when there are three or more).
pub const FLAG_TIMES: f64 = 2.0;

/// A trial of the series: start (s from the first), test index, log time about its test's
/// median, its own length (s).
struct Point {
    at_s: f64,
    test: usize,
    resid: f64,
    wall_s: f64,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return 0.0;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// 1.4826 times the median absolute deviation from the median: the standard deviation of
/// normal data, barely moved by a few large values.
fn robust_sd(v: &[f64]) -> f64 {
    let mut c = v.to_vec();
    let m = median(&mut c);
    let mut dev: Vec<f64> = v.iter().map(|x| (x - m).abs()).collect();
    1.4826 * median(&mut dev)
}

fn sd(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let m = v.iter().sum::<f64>() / v.len() as f64;
    (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt()
}

/// The counted trials of `run` in time order, each as its log time about its test's median.
fn series(run: &Run) -> (Vec<Point>, Vec<String>) {
    let mut tests = Vec::new();
    let mut raw: Vec<(i64, usize, f64, f64)> = Vec::new();
    for r in &run.results {
        let t: Vec<(i64, f64, f64)> = r
            .trials
            .iter()
            .filter(|t| t.kind == TrialKind::Measured && t.error.is_none() && t.iterations > 0)
            .filter_map(|t| {
                let per_op = t.wall_ns as f64 / t.iterations as f64;
                (per_op > 0.0).then_some((t.started_ns?, per_op, t.wall_ns as f64 / 1e9))
            })
            .collect();
        if t.len() < 2 {
            continue;
        }
        let mut v: Vec<f64> = t.iter().map(|x| x.1).collect();
        let m = median(&mut v);
        let k = tests.len();
        tests.push(r.id.clone());
        raw.extend(t.into_iter().map(|(at, x, w)| (at, k, (x / m).ln(), w)));
    }
    raw.sort_by_key(|p| p.0);
    let t0 = raw.first().map_or(0, |p| p.0);
    let points = raw
        .into_iter()
        .map(|(at, test, resid, wall_s)| Point {
            at_s: (at - t0) as f64 / 1e9,
            test,
            resid,
            wall_s,
        })
        .collect();
    (points, tests)
}

/// Change points of `x` (indices where a new segment starts) by binary segmentation with a
/// penalty of `penalty` per split; segments of at least `min` values.
fn segment(x: &[f64], penalty: f64, min: usize) -> Vec<usize> {
    let mut prefix = vec![0.0; x.len() + 1];
    let mut prefix2 = vec![0.0; x.len() + 1];
    for (i, v) in x.iter().enumerate() {
        prefix[i + 1] = prefix[i] + v;
        prefix2[i + 1] = prefix2[i] + v * v;
    }
    let cost = |a: usize, b: usize| {
        let n = (b - a) as f64;
        let s = prefix[b] - prefix[a];
        prefix2[b] - prefix2[a] - s * s / n
    };
    let mut cuts = Vec::new();
    let mut todo = vec![(0, x.len())];
    while let Some((a, b)) = todo.pop() {
        if b - a < 2 * min || cuts.len() >= 500 {
            continue;
        }
        let whole = cost(a, b);
        let best = (a + min..=b - min)
            .map(|c| (c, whole - cost(a, c) - cost(c, b)))
            .max_by(|p, q| p.1.total_cmp(&q.1));
        if let Some((c, gain)) = best {
            if gain > penalty {
                cuts.push(c);
                todo.push((a, c));
                todo.push((c, b));
            }
        }
    }
    cuts.sort_unstable();
    cuts
}

/// The machine's speed through `run`; None with fewer than 12 counted trials in all.
pub fn machine_noise(run: &Run) -> Option<MachineNoise> {
    let (all, tests) = series(run);
    if all.len() < 12 {
        return None;
    }
    // A test whose own trials are loud (its consecutive trials differ by far more than the
    // others') says little about the machine: it is left out of the speed series.
    let own: Vec<f64> = (0..tests.len())
        .map(|k| {
            let v: Vec<f64> = all
                .iter()
                .filter(|p| p.test == k)
                .map(|p| p.resid)
                .collect();
            robust_sd(&v.windows(2).map(|w| w[1] - w[0]).collect::<Vec<f64>>())
        })
        .collect();
    let usual = median(&mut own.clone());
    let loud = |k: usize| tests.len() >= 3 && own[k] > 3.0 * usual.max(1e-6);
    let points: Vec<&Point> = all.iter().filter(|p| !loud(p.test)).collect();
    let n = points.len();
    let x: Vec<f64> = points.iter().map(|p| p.resid).collect();
    let diffs: Vec<f64> = x.windows(2).map(|w| w[1] - w[0]).collect();
    let pair_sd = robust_sd(&diffs);
    let noise = (pair_sd / std::f64::consts::SQRT_2).max(1e-6);
    let cuts = segment(&x, 2.0 * noise * noise * (n as f64).ln(), 2);
    // Segment means and, per trial, its segment's level.
    let bounds: Vec<(usize, usize)> = std::iter::once(0)
        .chain(cuts.iter().copied())
        .zip(cuts.iter().copied().chain(std::iter::once(n)))
        .collect();
    let means: Vec<f64> = bounds
        .iter()
        .map(|&(a, b)| x[a..b].iter().sum::<f64>() / (b - a) as f64)
        .collect();
    let speeds = two_speeds(&points, &bounds, &means);
    let mut level = vec![0.0; n];
    for (&(a, b), m) in bounds.iter().zip(&means) {
        level[a..b].iter_mut().for_each(|l| *l = *m);
    }
    // Each trial's machine level: its segment's, or for a left-out test's trial the level
    // of the last trial before it in the series.
    let level_at = |at_s: f64| {
        let i = points.partition_point(|p| p.at_s <= at_s);
        level[i.saturating_sub(1)]
    };
    let per_test: Vec<f64> = (0..tests.len())
        .map(|k| {
            let v: Vec<f64> = all
                .iter()
                .filter(|p| p.test == k)
                .map(|p| p.resid - level_at(p.at_s))
                .collect();
            sd(&v)
        })
        .collect();
    let typical = median(&mut per_test.clone());
    let flagged = tests
        .iter()
        .zip(&per_test)
        .filter(|(_, &s)| s > FLAG_SD && (tests.len() < 3 || s > FLAG_TIMES * typical))
        .map(|(id, &s)| (id.clone(), s))
        .collect();
    let mut gaps: Vec<f64> = points
        .windows(2)
        .map(|w| (w[1].at_s - w[0].at_s - w[0].wall_s).max(0.0))
        .collect();
    Some(MachineNoise {
        trials: all.len(),
        span_s: points[n - 1].at_s,
        changes: speeds.map_or(0, |s| s.episodes - 1),
        speeds,
        spread: sd(&x),
        pair_sd,
        gap_s: median(&mut gaps),
        flagged,
    })
}

/// The segments split into two speeds (the split of the sorted means with the least
/// length-weighted within-group sum of squares), and their episodes; None without a change.
fn two_speeds(points: &[&Point], bounds: &[(usize, usize)], means: &[f64]) -> Option<Speeds> {
    if bounds.len() < 2 {
        return None;
    }
    let weight = |k: usize| (bounds[k].1 - bounds[k].0) as f64;
    let mut order: Vec<usize> = (0..means.len()).collect();
    order.sort_by(|&a, &b| means[a].total_cmp(&means[b]));
    let ss = |group: &[usize]| {
        let w: f64 = group.iter().map(|&k| weight(k)).sum();
        let m = group.iter().map(|&k| weight(k) * means[k]).sum::<f64>() / w;
        let ss = group
            .iter()
            .map(|&k| weight(k) * (means[k] - m).powi(2))
            .sum::<f64>();
        (ss, m)
    };
    let split = (1..order.len())
        .min_by(|&a, &b| {
            let cost = |s: usize| ss(&order[..s]).0 + ss(&order[s..]).0;
            cost(a).total_cmp(&cost(b))
        })
        .expect("two segments or more");
    let (fast, slow) = (ss(&order[..split]).1, ss(&order[split..]).1);
    let is_slow: Vec<bool> = (0..means.len())
        .map(|k| order[split..].contains(&k))
        .collect();
    // Episodes: runs of segments of one speed, from their first trial's start to the next
    // episode's (the last to the end of its last trial).
    let end = points.last().map_or(0.0, |p| p.at_s + p.wall_s);
    let mut episodes: Vec<(bool, f64)> = Vec::new();
    let mut k = 0;
    while k < bounds.len() {
        let s = is_slow[k];
        let start = points[bounds[k].0].at_s;
        while k < bounds.len() && is_slow[k] == s {
            k += 1;
        }
        let until = bounds.get(k).map_or(end, |b| points[b.0].at_s);
        episodes.push((s, until - start));
    }
    let range = |slow: bool| {
        let v: Vec<f64> = episodes
            .iter()
            .filter(|e| e.0 == slow)
            .map(|e| e.1)
            .collect();
        [
            v.iter().copied().fold(f64::INFINITY, f64::min),
            v.iter().copied().fold(0.0, f64::max),
        ]
    };
    let slow_time: f64 = episodes.iter().filter(|e| e.0).map(|e| e.1).sum();
    Some(Speeds {
        ratio: (slow - fast).exp(),
        episodes: episodes.len(),
        fast_s: range(false),
        slow_s: range(true),
        slow_share: slow_time / end.max(1e-9),
    })
}

impl MachineNoise {
    /// The smallest change (percent) a paired `ab` of one test resolves in `seconds` at 95%
    /// with 80% power, with trials of `trial_s`: Hodges-Lehmann's efficiency taken as 95%.
    pub fn ab_resolves_pct(&self, seconds: f64, trial_s: f64) -> f64 {
        let rounds = (seconds / (2.0 * (trial_s + self.gap_s))).max(1.0);
        let z = crate::variance::normal_quantile(0.975) + crate::variance::normal_quantile(0.8);
        100.0 * ((z * self.pair_sd / (0.955 * rounds).sqrt()).exp() - 1.0)
    }

    /// The line a run prints about the machine; `ab_trial_s`: `ab`'s trial length. It opens
    /// with [`LINE_PREFIX`].
    pub fn line(&self, ab_trial_s: f64) -> String {
        let what = match &self.speeds {
            Some(s) if s.ratio >= 1.05 => format!(
                "this host ran at two speeds {:.2}x apart, all tests together ({} changes in {:.0} s; fast episodes {}, slow {}, {:.0}% of the time slow)",
                s.ratio,
                self.changes,
                self.span_s,
                seconds(s.fast_s),
                seconds(s.slow_s),
                100.0 * s.slow_share
            ),
            Some(_) => format!(
                "this host's speed drifted by less than 5% ({} changes in {:.0} s)",
                self.changes, self.span_s
            ),
            None => format!(
                "this host kept one speed through the run ({} trials, {:.0} s)",
                self.trials, self.span_s
            ),
        };
        format!(
            "{LINE_PREFIX} {what}; a trial varies {:.0}% about its test's median; a paired 'sysperf ab' of one test resolves about {:.1}% in 60 s here; change points by binary segmentation (BIC) of the trials' log times about each test's median",
            100.0 * self.spread,
            self.ab_resolves_pct(60.0, ab_trial_s),
        )
    }
}

/// How the machine noise line opens, by which a run's note of it is found (the table prints it
/// on its own line, not among the other notes).
pub const LINE_PREFIX: &str = "machine noise:";

/// Whether a run's note is the machine noise line.
pub fn is_line(note: &str) -> bool {
    note.starts_with(LINE_PREFIX)
}

fn seconds([lo, hi]: [f64; 2]) -> String {
    let f = |s: f64| {
        if s < 10.0 {
            format!("{s:.1}")
        } else {
            format!("{s:.0}")
        }
    };
    if (hi - lo).abs() < 0.05 {
        format!("{} s", f(lo))
    } else {
        format!("{}-{} s", f(lo), f(hi))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{BenchResult, Trial};
    use crate::stats::Rng;

    fn gauss(rng: &mut Rng) -> f64 {
        let u = |rng: &mut Rng| (rng.below(1 << 30) as f64 + 1.0) / (1u64 << 30) as f64;
        let (a, b) = (u(rng), u(rng));
        (-2.0 * a.ln()).sqrt() * (2.0 * std::f64::consts::PI * b).cos()
    }

    /// A run of `tests` tests in interleaved rounds, a trial every 0.15 s, on a host that is
    /// 1.4x slower in [`slow`] windows (seconds), with `noise` of a trial's own; test `loud`
    /// (if any) has 30% more.
    fn run_on(
        tests: usize,
        rounds: usize,
        slow: &[(f64, f64)],
        noise: f64,
        loud: Option<usize>,
    ) -> Run {
        let mut rng = Rng::new(7);
        let mut run = crate::report::fixture_run();
        run.results.truncate(1);
        let template = run.results[0].clone();
        run.results = (0..tests)
            .map(|k| BenchResult {
                id: format!("t{k}"),
                trials: Vec::new(),
                ..template.clone()
            })
            .collect();
        let proto: Trial = template.trials[0].clone();
        let mut at = 0.0;
        for r in 0..rounds {
            for k in 0..tests {
                let in_slow = slow.iter().any(|&(a, b)| at >= a && at < b);
                let own = if loud == Some(k) { 0.3 } else { noise };
                let speed = if in_slow { 1.4 } else { 1.0 } * (own * gauss(&mut rng)).exp();
                let base = 1000.0 * (k + 1) as f64;
                run.results[k].trials.push(Trial {
                    kind: TrialKind::Measured,
                    iterations: 100_000,
                    wall_ns: (base * speed * 100_000.0) as u64 / 1000,
                    round: Some(r as u32),
                    started_ns: Some((at * 1e9) as i64),
                    error: None,
                    ..proto.clone()
                });
                at += 0.15;
            }
        }
        run
    }

    #[test]
    fn two_speeds_and_their_episodes_are_found() {
        // 6 tests, 40 rounds: 36 s, slow from 5 to 5.6 s, 12 to 22 s and 30 to 30.5 s.
        let run = run_on(6, 40, &[(5.0, 5.6), (12.0, 22.0), (30.0, 30.5)], 0.02, None);
        let m = machine_noise(&run).unwrap();
        let s = m.speeds.expect("two speeds");
        assert!((s.ratio - 1.4).abs() < 0.05, "{m:?}");
        assert_eq!(m.changes, 6, "{m:?}");
        assert!(s.slow_s[0] < 1.0 && s.slow_s[1] > 9.0, "{s:?}");
        assert!(m.flagged.is_empty(), "{m:?}");
        let line = m.line(0.015);
        assert!(line.contains("two speeds 1.4"), "{line}");
        // Pairing takes the speed out: back-to-back trials differ by about their own noise.
        assert!(m.pair_sd < 0.06, "{m:?}");
        assert!(
            m.ab_resolves_pct(60.0, 0.015) < 2.0,
            "{}",
            m.ab_resolves_pct(60.0, 0.015)
        );
    }

    #[test]
    fn a_steady_host_has_no_change_and_a_loud_test_is_flagged_alone() {
        let run = run_on(6, 20, &[], 0.02, Some(3));
        let m = machine_noise(&run).unwrap();
        assert_eq!(m.changes, 0, "{m:?}");
        assert!(m.speeds.is_none());
        assert_eq!(
            m.flagged.iter().map(|f| f.0.as_str()).collect::<Vec<_>>(),
            ["t3"],
            "{m:?}"
        );
        assert!(
            m.line(0.015).contains("kept one speed"),
            "{}",
            m.line(0.015)
        );
        // Too few trials: nothing said.
        assert!(machine_noise(&run_on(2, 5, &[], 0.02, None)).is_none());
    }
}
