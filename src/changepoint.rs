//! Change points in a history of runs (#35): where one test's time on one machine moved to a
//! new level and stayed there. Pure statistics over a slice of run medians, oldest first; it
//! does not read a store, decide which runs form a history, nor name causes (the caller pairs
//! each change point with the fingerprints of the runs around it).
//!
//! The method is E-Divisive means (Matteson & James, "A Nonparametric Approach for Multiple
//! Change Point Analysis of Multivariate Data", JASA 2014), as MongoDB's CI runs it over its
//! performance histories (Daly et al., ICPE 2020): binary segmentation, each split placed where
//! the energy distance between the two sides is largest, and kept only if a permutation test
//! says so. Chosen over the alternatives the issue names because run medians on a shared VM are
//! not Gaussian: the host alternates between two speeds 1.2-1.6x apart (#30), so a history
//! holds runs of two levels at random. PELT needs a parametric cost and a penalty tuned to a
//! known variance, and every slow run then costs a segment or inflates the variance; Hunter's
//! (Otava's) t-test on the best split is not corrected for the search over split positions and
//! follows the slow runs' mean. A permutation test of the best split, searched for again in
//! every permutation, has the level it says whatever the noise's shape, as long as runs
//! without a change are exchangeable.
//!
//! Five changes to the published procedure, each for a reason:
//! - a level is tested on the energy statistic of its ranks at the split its log times
//!   choose, one statistic (#42: before, the p-value was that of the ranks' best split and
//!   the split reported that of the log times, two statistics). On ranks a run in the host's
//!   slow mode weighs as one rank, not as its 20-60%: on the simulated two-speed host (10% of
//!   the runs 1.2-1.6x slower) the first split's test found a 10% step in 149 of 200
//!   histories on ranks and in 92 on log times, with 5 and 7 false alarms in 1,000 (on
//!   Gaussian noise the two were equal, 191 and 192 of 200 at 5%). On log times the place is
//!   found: ranks keep the order of the runs and lose the step's size, so a split that moves
//!   a few runs of the new level to the old one can score higher on ranks than the true one
//!   (a -30% step at run 13 of 50 in 5% noise was placed at 18: Q 6.39 there against 6.29 at
//!   13), while on log times the runs of a 30% step are far from every run of the other level
//!   and the true split scores highest; logs make the statistic one of ratios (a history in
//!   other units splits alike). The permutations shuffle a level's runs, their log times and
//!   ranks together, and compute the same statistic, so its p-value is exact for the split
//!   reported;
//! - the permutations are seeded from the history itself, so the same history always gives
//!   the same answer (MongoDB's random permutations made a change point come and go between
//!   reruns, which Hunter's authors cite as their reason to leave the method);
//! - many histories searched at once ([`search`], `sysperf changes`) control the false
//!   discovery rate across them (#42): each history's first split is the test of "no change
//!   in it", Benjamini-Hochberg at q over their p-values picks the histories found (and the
//!   level k q / m they needed), and only those are split further, at that level or at 0.005,
//!   the smaller. The
//!   permutations grow with the histories searched ([`permutations_for`]) so that a clear
//!   step can still reach the level; a history without a change stops after a few;
//! - the step is measured out of sample ([`cross_fitted`]): the runs at even places choose
//!   where it is for the runs at odd places to measure it, and the other way round, so the
//!   choice of the place where the noise made it look largest does not inflate it;
//! - a change is reported only if that step is at least [`Settings::min_step`] (2%): a split
//!   of a long history can be significant and meaningless.
//!
//! Each change's size is the ratio of the two levels' figures measured out of sample, with a
//! 95% percentile-bootstrap interval (the measuring runs resampled within each level, the
//! places held): it covers the run-to-run noise of the runs that measure the step, and the
//! estimate is not inflated by where the split was put; it does not undo the selection of the
//! histories themselves (a step found because its noise made it look large is found more
//! often than one the noise made look small), which matters for steps near what the noise
//! resolves.
//!
//! The false-alarm and detection rates are measured by this module's tests, on simulated
//! noise profiles (`rates_on_simulated_histories`, one history at p <= 0.005, and
//! `false_alarms_per_search`, searches of 49 histories at q = 0.05) and on histories drawn
//! from this VM's real A/A runs (`real_noise::rates_in_real_noise`,
//! tests/data/vm-noise.tsv); they are printed by scripts/changes-sim.sh and quoted in
//! docs/changes.md. In the real noise of a busy machine the bar does not hold; in
//! quiet runs spread over time it holds for five of six tests, and a search of 49 tests drawn
//! from those five alarms in 18 of 1,000 (`real_noise::false_alarms_per_search_in_real_noise`),
//! but not for seqpage, whose level wanders ([`residual_lag1`] labels such histories;
//! docs/changes.md says why).

use crate::stats::Rng;

/// How change points are searched for and when one is reported.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// The energy distance's exponent, in (0, 2): 1 is Matteson & James's default; smaller
    /// values weigh far runs (a slow episode) less.
    pub alpha: f64,
    /// Runs a level needs at least on each side of a change: a change in the newest runs is
    /// found once this many have been measured after it.
    pub min_size: usize,
    /// The permutation test's p-value a split needs at most to be kept.
    pub significance: f64,
    /// Permutations per test, at most (fewer when the first ones already show the split is
    /// not significant: Besag & Clifford's sequential stop).
    pub permutations: usize,
    /// The smallest step reported, as a fraction of the level before (0.02: 2%).
    pub min_step: f64,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            alpha: 1.0,
            min_size: 5,
            // With 199 permutations, a split is kept when none of them scores as high: p =
            // 1/200. A history without a change is then called changed 0.5% of the time by
            // the test alone, and less after the step filter.
            significance: 0.005,
            permutations: 199,
            min_step: 0.02,
        }
    }
}

/// The method in words, for the output of `sysperf changes` (`fdr`: the histories were
/// searched together at that false discovery rate, `s` as [`search`] was given it, its
/// permutations the most per test) and of the simulations (None: one history, each split
/// kept at p <= `s.significance`).
pub fn method(s: &Settings, fdr: Option<f64>) -> String {
    let kept = match fdr {
        Some(q) => format!(
            "the histories searched together at false discovery rate {q} (Benjamini-Hochberg \
             over each history's first split), each one found split further at the level it \
             needed or at p <= {}, the smaller",
            s.significance
        ),
        None => format!("a split kept at p <= {}", s.significance),
    };
    format!(
        "E-Divisive means (Matteson & James 2014) by binary segmentation: each level split where \
         its log times split best, at least {} runs from either end, and tested on the energy \
         statistic of its ranks there (alpha {}) against up to {} seeded permutations \
         (sequential, Besag & Clifford 1991); {kept}; steps measured out of sample (the runs \
         at even places measure the step where those at odd places put it, and the other way \
         round); steps under {}% not reported",
        s.min_size,
        s.alpha,
        s.permutations,
        100.0 * s.min_step
    )
}

/// A change found: the runs from `index` on sit at a new level.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ChangePoint {
    /// The first value of the new level (an index into the history).
    pub index: usize,
    /// The level before (from the previous change point, or the start) and after (up to the
    /// next change point, or the end), measured out of sample ([`cross_fitted`]): each the
    /// geometric mean of the medians of the even and the odd runs on its side of the place
    /// the other half chose.
    pub before: f64,
    pub after: f64,
    /// The 95% percentile-bootstrap interval of `after / before` ([`RATIO_CI_COVERS`]).
    pub ratio_ci: [f64; 2],
    /// The permutation test's p-value when the split was made: of the statistic at the split
    /// reported.
    pub p_value: f64,
}

/// What [`ChangePoint::ratio_ci`] covers, for the command's output.
pub const RATIO_CI_COVERS: &str = "95% bootstrap interval of the step measured out of sample (the runs at even places measure it where the runs at odd places put it, and the other way round; the ratio is the geometric mean of the two; the measuring runs resampled within each level, the places held fixed)";

/// Bootstrap resamples of each change's ratio interval.
const RATIO_RESAMPLES: usize = 2000;

impl ChangePoint {
    /// The new level over the old: 1.10 for 10% slower (for times).
    pub fn ratio(&self) -> f64 {
        self.after / self.before
    }
}

/// How much a history's level moves besides its change points: the lag-1 autocorrelation of
/// its log times about the median log time of the level each run belongs to (the levels split
/// at `changes`, the history's change points in order). Near 0 (within about 1/sqrt(n)) when
/// the change points account for the history and its runs are otherwise independent; high
/// when the level also wanders between them: on this VM seqpage's runs, 105 s apart, kept a
/// lag-1 autocorrelation of 0.51, and a change in such a history may be that wander (#35).
/// None for fewer than 10 values, a value that is not a positive number, or no spread.
pub fn residual_lag1(values: &[f64], changes: &[ChangePoint]) -> Option<f64> {
    if values.len() < 10 || values.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return None;
    }
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let mut bounds: Vec<usize> = changes
        .iter()
        .map(|c| c.index)
        .filter(|&i| i > 0 && i < logs.len())
        .collect();
    bounds.sort_unstable();
    bounds.dedup();
    bounds.insert(0, 0);
    bounds.push(logs.len());
    let mut res = Vec::with_capacity(logs.len());
    for w in bounds.windows(2) {
        let level = crate::stats::median(&logs[w[0]..w[1]]).ok()?;
        res.extend(logs[w[0]..w[1]].iter().map(|z| z - level));
    }
    let n = res.len() as f64;
    let mean = res.iter().sum::<f64>() / n;
    let var: f64 = res.iter().map(|r| (r - mean).powi(2)).sum();
    if var <= 0.0 {
        return None;
    }
    let cov: f64 = res.windows(2).map(|w| (w[0] - mean) * (w[1] - mean)).sum();
    Some(cov / var)
}

/// Above this lag-1 autocorrelation ([`residual_lag1`]) a history of `n` runs is said to
/// wander: 2/sqrt(n), about two standard errors of the autocorrelation of independent runs,
/// which about 1 history in 40 of them passes.
pub fn wander_bound(n: usize) -> f64 {
    2.0 / (n.max(1) as f64).sqrt()
}

/// Whether a history of `n` runs with lag-1 autocorrelation `lag1` about its levels
/// ([`residual_lag1`]) wanders: over [`wander_bound`].
pub fn wanders(lag1: Option<f64>, n: usize) -> bool {
    lag1.is_some_and(|r| r > wander_bound(n))
}

/// Why a history could not be searched.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ChangeError {
    #[error("value {index} of the history is not a positive finite number ({value})")]
    NotPositive { index: usize, value: f64 },
    #[error("change-point settings: {0}")]
    Settings(&'static str),
}

impl crate::error::Exit for ChangeError {
    fn exit_code(&self) -> i32 {
        crate::exit::FAILURE
    }
}

fn check(values: &[f64], s: &Settings) -> Result<(), ChangeError> {
    if !(s.alpha > 0.0 && s.alpha < 2.0) {
        return Err(ChangeError::Settings("alpha must be in (0, 2)"));
    }
    if s.min_size < 2 {
        return Err(ChangeError::Settings("min_size must be at least 2"));
    }
    if !(s.significance > 0.0 && s.significance < 1.0) {
        return Err(ChangeError::Settings("significance must be in (0, 1)"));
    }
    if s.permutations == 0 {
        return Err(ChangeError::Settings("permutations must be at least 1"));
    }
    if !(s.min_step >= 0.0 && s.min_step.is_finite()) {
        return Err(ChangeError::Settings(
            "min_step must be a finite fraction >= 0",
        ));
    }
    match values.iter().position(|v| !(v.is_finite() && *v > 0.0)) {
        Some(index) => Err(ChangeError::NotPositive {
            index,
            value: values[index],
        }),
        None => Ok(()),
    }
}

/// The change points of `values` (a test's times, oldest first), in order, each split kept
/// when its p-value is at most [`Settings::significance`]: a history searched alone.
pub fn detect(values: &[f64], s: &Settings) -> Result<Vec<ChangePoint>, ChangeError> {
    detect_at(values, s, s.significance, s.significance)
}

/// The p-value of the history's first split: the permutation test of "its runs are
/// exchangeable" (no change anywhere in it) against the best split. 1 for a history too
/// short to split. It is the first split's `p_value` in [`detect_at`], to the last bit.
pub fn history_p(values: &[f64], s: &Settings) -> Result<f64, ChangeError> {
    check(values, s)?;
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let r = ranks(values);
    let mut rng = Rng::new(seed_of(values));
    Ok(match statistic(&logs, &r, s.alpha, s.min_size) {
        Some((_, q)) => permutation_p(&logs, &r, q, s, &mut rng),
        None => 1.0,
    })
}

/// [`detect`] with the history's first split kept when its p-value is at most `first`, and
/// each split after it when at most `further` (both in (0, [`Settings::significance`]], which
/// stays the sequential test's ceiling, so that the first split's p-value is [`history_p`]'s
/// whatever the levels): a history found among others, at the level the search across them
/// gave it ([`search`]).
pub fn detect_at(
    values: &[f64],
    s: &Settings,
    first: f64,
    further: f64,
) -> Result<Vec<ChangePoint>, ChangeError> {
    check(values, s)?;
    let valid = |l: f64| l > 0.0 && l <= s.significance;
    if !(valid(first) && valid(further)) {
        return Err(ChangeError::Settings(
            "the level a split needs must be in (0, significance]",
        ));
    }
    let seed = seed_of(values);
    let mut rng = Rng::new(seed);
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    // Boundaries of the levels found so far, with each cut's p-value.
    let mut cuts: Vec<(usize, f64)> = vec![(0, 0.0), (values.len(), 0.0)];
    loop {
        // The level most likely to hold a change (Matteson & James: the largest statistic),
        // each level ranked on its own.
        let best = cuts
            .windows(2)
            .filter_map(|w| {
                let (from, to) = (w[0].0, w[1].0);
                let r = ranks(&values[from..to]);
                statistic(&logs[from..to], &r, s.alpha, s.min_size)
                    .map(|(at, q)| (from, to, at, q, r))
            })
            .max_by(|a, b| a.3.total_cmp(&b.3));
        let Some((from, to, at, q, r)) = best else {
            break;
        };
        let p = permutation_p(&logs[from..to], &r, q, s, &mut rng);
        if p > if cuts.len() == 2 { first } else { further } {
            break;
        }
        let i = cuts.partition_point(|c| c.0 < from + at);
        cuts.insert(i, (from + at, p));
    }
    let mut out = Vec::new();
    for w in cuts.windows(3) {
        let (from, at, to) = (w[0].0, w[1].0, w[2].0);
        // The step measured out of sample (see `cross_fitted`); the values were checked
        // finite and positive, and a level has at least `min_size` runs.
        let Some(step) = cross_fitted(&values[from..to], at - from, s, seed ^ at as u64) else {
            continue;
        };
        let c = ChangePoint {
            index: at,
            before: step.before,
            after: step.after,
            ratio_ci: step.ci,
            p_value: w[1].1,
        };
        if (c.ratio() - 1.0).abs() < s.min_step {
            continue;
        }
        out.push(c);
    }
    Ok(out)
}

/// A search of many histories at once (`sysperf changes`): what was searched and found.
#[derive(Debug, Clone, PartialEq)]
pub struct Search {
    /// The false discovery rate asked for (q).
    pub fdr: f64,
    /// Histories long enough to hold a change ([`Settings::min_size`] runs a side), each
    /// tested; the others are not (their `p_values` are None).
    pub searched: usize,
    /// Permutations per test, at most ([`permutations_for`]).
    pub permutations: usize,
    /// Per history, its first split's p-value ([`history_p`]).
    pub p_values: Vec<Option<f64>>,
    /// Benjamini-Hochberg's level: the p-value a history needed at most to be found, k q / m
    /// for the k found among the m searched; None when none was.
    pub level: Option<f64>,
    /// Per history, whether it was found (its p-value at most `level`).
    pub found: Vec<bool>,
    /// Per history found, its change points ([`detect_at`]: the first split at `level`, the
    /// ones after it at `level` or the search's significance, the smaller); empty for the
    /// others, and for one found whose every step is under [`Settings::min_step`].
    pub changes: Vec<Vec<ChangePoint>>,
}

impl Search {
    /// How many histories were found.
    pub fn discoveries(&self) -> usize {
        self.found.iter().filter(|f| **f).count()
    }

    /// The most false alarms to expect among the histories found: the false discovery rate
    /// times how many were found (Benjamini & Hochberg bound the expected share of false
    /// ones among them by q, times the share of searched histories without a change).
    pub fn expected_false_alarms(&self) -> f64 {
        self.fdr * self.discoveries() as f64
    }
}

/// The permutations per test for a search of `searched` histories at false discovery rate
/// `q`, at least `least`: so many that a history no permutation beats has p = 1/(B + 1) at
/// most q / (2 m), half the level the first history found needs (q / m). With fewer, a
/// search of many histories could find none, however clear their steps: 199 permutations
/// (p >= 0.005) cannot reach the 0.05 / 49 = 0.001 of one change among 49 tests.
pub fn permutations_for(searched: usize, q: f64, least: usize) -> usize {
    let need = (2.0 * searched.max(1) as f64 / q).ceil();
    if need.is_finite() && need < 1e9 {
        (need as usize).saturating_sub(1).max(least)
    } else {
        least
    }
}

/// Benjamini & Hochberg's step-up procedure (1995) at false discovery rate `q`: the largest
/// k with the k-th smallest of the m p-values at most k q / m; the level k q / m (each
/// p-value at most it is a discovery), None when there is no such k. The expected share of
/// false discoveries among the discoveries is then at most q (m0 / m) when the p-values of
/// the true nulls are independent, or positively dependent (Benjamini & Yekutieli 2001).
pub fn benjamini_hochberg(p: &[f64], q: f64) -> Option<f64> {
    let m = p.len();
    let mut sorted: Vec<f64> = p.to_vec();
    sorted.sort_by(f64::total_cmp);
    (1..=m)
        .rev()
        .map(|k| q * (k as f64 / m as f64))
        .enumerate()
        .find(|(i, level)| sorted[m - 1 - i] <= *level)
        .map(|(_, level)| level)
}

/// Searches `histories` together (`sysperf changes`), controlling the false discovery rate
/// across them at `q` (Benjamini-Hochberg over the histories' first-split p-values, each
/// history a hypothesis: "no change in it"): each history long enough is tested with
/// [`permutations_for`] permutations ([`history_p`]), the procedure picks the histories
/// found and their level, and each one found is split ([`detect_at`]): its first split is
/// the one found, and each split after it is kept at that level or at `s.significance`, the
/// smaller. The splits after the first are claims of their own that the procedure did not
/// count: searched alone at q = 0.05, a history whose level wanders was cut into pieces at p
/// <= 0.05, each too short to show the wander. `s` also gives the statistic, the runs a level
/// needs, the fewest permutations and the smallest step reported.
pub fn search(histories: &[&[f64]], s: &Settings, q: f64) -> Result<Search, ChangeError> {
    if !(q > 0.0 && q < 1.0) {
        return Err(ChangeError::Settings(
            "the false discovery rate must be in (0, 1)",
        ));
    }
    let further = s.significance;
    if !(further > 0.0 && further < 1.0) {
        return Err(ChangeError::Settings("significance must be in (0, 1)"));
    }
    let long = |h: &[f64]| h.len() >= 2 * s.min_size;
    let searched = histories.iter().filter(|h| long(h)).count();
    let s = Settings {
        significance: q,
        permutations: permutations_for(searched, q, s.permutations),
        ..*s
    };
    let p_values = histories
        .iter()
        .map(|h| long(h).then(|| history_p(h, &s)).transpose())
        .collect::<Result<Vec<_>, _>>()?;
    let tested: Vec<f64> = p_values.iter().flatten().copied().collect();
    let level = benjamini_hochberg(&tested, q);
    let found: Vec<bool> = p_values
        .iter()
        .map(|p| matches!((p, level), (Some(p), Some(l)) if *p <= l))
        .collect();
    let changes = histories
        .iter()
        .zip(&found)
        .map(|(h, f)| match (f, level) {
            (true, Some(l)) => detect_at(h, &s, l, l.min(further)),
            _ => Ok(Vec::new()),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Search {
        fdr: q,
        searched,
        permutations: s.permutations,
        p_values,
        level,
        found,
        changes,
    })
}

/// A step measured out of sample.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Step {
    before: f64,
    after: f64,
    ci: [f64; 2],
}

/// The step at `at` in `x` (two levels, the new one from `at` on) measured out of sample,
/// by cross-fitting: the runs at even places and those at odd places each choose where the
/// step is (the best split of their log times, as the test places it), and the other half's
/// runs measure it there (the medians of its runs either side). Each level's figure is the
/// geometric mean of the two halves' medians, so the ratio is that of the two ratios. The
/// runs that chose a place do not measure the step there: the search's pick of the place
/// where the noise made the step look largest does not inflate it (#42: a 5% step came out
/// +6.8% measured on the runs that placed it). The interval is the 95% percentile bootstrap
/// of that figure, the measuring runs resampled within their levels, the places held.
///
/// A half too short to be split (levels under 4 runs) measures at `at`. None when a side
/// holds no run (not for levels of at least 2 runs each).
fn cross_fitted(x: &[f64], at: usize, s: &Settings, seed: u64) -> Option<Step> {
    let m = (s.min_size / 2).max(2);
    let halves: [Vec<usize>; 2] = [
        (0..x.len()).step_by(2).collect(),
        (1..x.len()).step_by(2).collect(),
    ];
    // Where each half places the step (a place in `x`: the first run of the new level).
    let place = |h: &[usize]| {
        let logs: Vec<f64> = h.iter().map(|&i| x[i].ln()).collect();
        best_split(&logs, s.alpha, m).map_or(at, |(t, _)| h[t])
    };
    let places = [place(&halves[0]), place(&halves[1])];
    // Half `g` measures at the place the other half chose: its runs before it and after.
    let sides: Vec<[Vec<f64>; 2]> = (0..2)
        .map(|g| {
            let split = places[1 - g];
            let (b, a): (Vec<usize>, Vec<usize>) = halves[g].iter().partition(|&&i| i < split);
            [
                b.iter().map(|&i| x[i]).collect(),
                a.iter().map(|&i| x[i]).collect(),
            ]
        })
        .collect();
    if sides.iter().flatten().any(Vec::is_empty) {
        return None;
    }
    // A level's figure: the geometric mean of the two halves' medians of it.
    let level = |k: usize| {
        let m = |g: usize| crate::stats::median(&sides[g][k]).ok();
        Some((m(0)? * m(1)?).sqrt())
    };
    let (before, after) = (level(0)?, level(1)?);
    let mut rng = Rng::new(seed);
    let mut buf = Vec::new();
    let mut resampled = |v: &[f64]| {
        buf.clear();
        buf.extend((0..v.len()).map(|_| v[rng.below(v.len())]));
        crate::stats::median(&buf).unwrap_or(f64::NAN)
    };
    let mut ratios: Vec<f64> = (0..RATIO_RESAMPLES)
        .map(|_| {
            let r: Vec<f64> = sides
                .iter()
                .map(|[b, a]| resampled(a) / resampled(b))
                .collect();
            (r[0] * r[1]).sqrt()
        })
        .collect();
    let ci = if ratios.iter().all(|r| r.is_finite()) {
        ratios.sort_by(f64::total_cmp);
        [
            crate::stats::quantile(&ratios, 0.025),
            crate::stats::quantile(&ratios, 0.975),
        ]
    } else {
        [f64::NAN; 2]
    };
    Some(Step { before, after, ci })
}

/// The ranks of `x` as fractions, (rank + 1/2) / n with ties sharing their mean rank: the
/// values the energy statistic is computed on, so that a slow run counts as one rank however
/// slow it was, and the statistics of levels of different lengths are in one unit.
fn ranks(x: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..x.len()).collect();
    order.sort_by(|a, b| x[*a].total_cmp(&x[*b]));
    let mut r = vec![0.0; x.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && x[order[j + 1]] == x[order[i]] {
            j += 1;
        }
        for k in &order[i..=j] {
            r[*k] = ((i + j) as f64 / 2.0 + 0.5) / x.len() as f64;
        }
        i = j + 1;
    }
    r
}

/// The permutations' seed: FNV-1a over the order of the values (the index of each value in
/// sorted order), so that a history always gets the same permutations, and so does the same
/// history in other units (the order, unlike the values' bits, does not change with scale).
fn seed_of(values: &[f64]) -> u64 {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|a, b| values[*a].total_cmp(&values[*b]).then(a.cmp(b)));
    order.iter().fold(0xcbf2_9ce4_8422_2325, |h, i| {
        (i.to_le_bytes().iter()).fold(h, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
    })
}

/// The split of `x` (at least `m` values each side) with the largest energy statistic
/// `Q = nX nY / (nX + nY) * E`, where E is the energy distance between the two sides:
/// `2/(nX nY) sum|x-y|^a - sum_pairs|x-x'|^a / C(nX,2) - sum_pairs|y-y'|^a / C(nY,2)`.
/// None when `x` is too short to split. O(n^2): each pair's distance is computed once.
fn best_split(x: &[f64], alpha: f64, m: usize) -> Option<(usize, f64)> {
    let mut best: Option<(usize, f64)> = None;
    each_split(x, alpha, m, |t, q| {
        if best.is_none_or(|(_, b)| q > b) {
            best = Some((t, q));
        }
    });
    best
}

/// The energy statistic of `x` split at `at` (as [`best_split`] computes it; NaN where a side
/// has fewer than 2 values).
fn energy_at(x: &[f64], alpha: f64, at: usize) -> f64 {
    let mut out = f64::NAN;
    each_split(x, alpha, 2, |t, q| {
        if t == at {
            out = q;
        }
    });
    out
}

/// Hands `f` each split t of `x` with at least `m` values each side (m >= 2), in order, with
/// its energy statistic ([`best_split`]).
fn each_split(x: &[f64], alpha: f64, m: usize, mut f: impl FnMut(usize, f64)) {
    let n = x.len();
    if n < 2 * m {
        return;
    }
    let dist = |a: f64, b: f64| {
        let d = (a - b).abs();
        if alpha == 1.0 {
            d
        } else {
            d.powf(alpha)
        }
    };
    // to_earlier[k]: the distances of value k to every value before it; to_later[i]: after.
    let mut to_earlier = vec![0.0; n];
    let mut to_later = vec![0.0; n];
    for i in 0..n {
        for k in i + 1..n {
            let d = dist(x[i], x[k]);
            to_later[i] += d;
            to_earlier[k] += d;
        }
    }
    let total: f64 = to_earlier.iter().sum();
    // within[t]: the pairs' sum over x[..t]; after[t]: over x[t..].
    let mut within = 0.0;
    let mut after: f64 = total;
    for t in 1..n {
        within += to_earlier[t - 1];
        after -= to_later[t - 1];
        if t < m || n - t < m {
            continue;
        }
        let (nx, ny) = (t as f64, (n - t) as f64);
        let cross = total - within - after;
        let e = 2.0 * cross / (nx * ny)
            - within / (nx * (nx - 1.0) / 2.0)
            - after / (ny * (ny - 1.0) / 2.0);
        f(t, nx * ny / (nx + ny) * e);
    }
}

/// The statistic a level is tested on, and where it splits (#42: one statistic for both):
/// the split its log times choose ([`best_split`]: on log times a large step's runs are all
/// far from the other level's, and the true split scores highest), and the energy statistic
/// of its ranks at that split ([`energy_at`]: a run in the host's slow mode weighs as one
/// rank, not as its 20-60%). The permutation test is of this statistic, so the p-value is
/// the split's that is reported. None when the level is too short to split.
fn statistic(logs: &[f64], ranks: &[f64], alpha: f64, m: usize) -> Option<(usize, f64)> {
    let (at, _) = best_split(logs, alpha, m)?;
    Some((at, energy_at(ranks, alpha, at)))
}

/// The permutation p-value of a level scoring `q` ([`statistic`]) with log times `logs` and
/// ranks `ranks`: the share of shuffles of its runs (their log times and ranks together)
/// whose own statistic scores as high, the observed order counted as one of them.
///
/// Sequential (Besag & Clifford 1991): it stops after 10 shuffles scoring as high, with p =
/// 11 / (shuffles + 1), or once so many scored as high that p over all
/// [`Settings::permutations`] could no longer be at most [`Settings::significance`] (with
/// `detect`'s defaults, at the first: p >= 2/200 > 0.005); both are valid p-values, above
/// the significance or the true p-value's estimate, and a level no shuffle beats ran every
/// permutation (#35 item 5: a history without a change, most of them, costs few shuffles).
fn permutation_p(logs: &[f64], ranks: &[f64], q: f64, s: &Settings, rng: &mut Rng) -> f64 {
    permutation_test([logs, ranks], q, s, rng).0
}

/// [`permutation_p`] and the shuffles it made, for a level's log times and ranks.
fn permutation_test(
    [logs, ranks]: [&[f64]; 2],
    q: f64,
    s: &Settings,
    rng: &mut Rng,
) -> (f64, usize) {
    const ENOUGH: usize = 10;
    // Whether p over all the permutations, (as_high + 1) / (permutations + 1), could still
    // be at most the significance: computed as `detect` compares it, so the verdict is the
    // same to the last bit.
    let open =
        |as_high: usize| (as_high + 1) as f64 / (s.permutations + 1) as f64 <= s.significance;
    let (mut l, mut r) = (logs.to_vec(), ranks.to_vec());
    let mut as_high = 0;
    let mut done = 0;
    while done < s.permutations && as_high < ENOUGH && open(as_high) {
        for i in (1..l.len()).rev() {
            let j = rng.below(i + 1);
            l.swap(i, j);
            r.swap(i, j);
        }
        done += 1;
        // As high within rounding: a shuffle that splits exactly as the history does (a
        // clean step in a short history) sums its distances in another order, and its Q may
        // come out an ulp lower; counting it as lower made such steps look twice as rare.
        if statistic(&l, &r, s.alpha, s.min_size).is_some_and(|(_, qp)| qp >= q - 1e-9 * q.abs()) {
            as_high += 1;
        }
    }
    ((as_high + 1) as f64 / (done + 1) as f64, done)
}

#[cfg(test)]
mod tests;
