//! Pure statistics over raw benchmark samples: order statistics, medians with
//! distribution-free confidence intervals, summary estimates, Tukey outlier labels and a
//! deterministic bootstrap for comparing two runs.
//!
//! This module is not a measurement layer: it does no I/O, reads no clocks, prints nothing
//! and holds no state. It does not decide what a sample is (per-op wall time, CPU time, ...)
//! nor drop outliers; callers pass plain `f64` slices and get numbers back. Every function
//! is total: bad input (empty, NaN, infinite) yields a [`StatsError`] or, for the two
//! functions documented to take already-sorted data, NaN, never a panic.
//!
//! Medians and order-statistic intervals are used rather than mean ± t·sd because
//! benchmark timings are skewed and heavy-tailed (interrupts, migrations, page faults), so
//! normal-theory intervals would claim a coverage they do not have.

use crate::model::{Estimate, Outlier};

/// Why a statistic could not be computed.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum StatsError {
    #[error("no samples")]
    Empty,
    #[error("sample {index} is not a finite number ({value})")]
    NotFinite { index: usize, value: f64 },
}

impl crate::error::Exit for StatsError {
    fn exit_code(&self) -> i32 {
        crate::exit::FAILURE
    }
}

/// Confidence level of the interval stored in an [`Estimate`].
const ESTIMATE_LEVEL: f64 = 0.95;

/// Rejects empty input and reports the first non-finite sample, so that every later step
/// can rely on a total order and on arithmetic staying finite.
fn validate(samples: &[f64]) -> Result<(), StatsError> {
    if samples.is_empty() {
        return Err(StatsError::Empty);
    }
    match samples.iter().position(|x| !x.is_finite()) {
        Some(index) => Err(StatsError::NotFinite {
            index,
            value: samples[index],
        }),
        None => Ok(()),
    }
}

/// Sorts a copy after validating (finite, non-empty).
///
/// Ordering is by `f64::total_cmp`, so `-0.0` sorts before `0.0` and the result does not
/// depend on the input order.
pub fn sorted(samples: &[f64]) -> Result<Vec<f64>, StatsError> {
    validate(samples)?;
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    Ok(v)
}

/// The sample median; for an even count, the midpoint of the two middle order statistics.
pub fn median(samples: &[f64]) -> Result<f64, StatsError> {
    let s = sorted(samples)?;
    Ok(quantile(&s, 0.5))
}

/// Quantile with linear interpolation between order statistics (type 7, as R's default),
/// q in [0,1] (clamped).
///
/// Precondition: `sorted` is sorted ascending and non-empty (as returned by [`sorted`]).
/// This is not checked, because callers hold sorted data already and re-validating on each
/// call would be quadratic in loops; instead an empty slice or a NaN `q` returns NaN.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    if n == 0 || q.is_nan() {
        return f64::NAN;
    }
    let h = (n - 1) as f64 * q.clamp(0.0, 1.0);
    // h is in [0, n-1], so both indices are in bounds; `min` guards against rounding anyway.
    let lo = (h.floor() as usize).min(n - 1);
    let hi = (h.ceil() as usize).min(n - 1);
    let frac = h - lo as f64;
    let (a, b) = (sorted[lo], sorted[hi]);
    if lo == hi || frac == 0.0 {
        return a;
    }
    let d = b - a;
    let v = if d.is_finite() {
        a + frac * d
    } else {
        // The difference of two finite values can overflow (e.g. -MAX..MAX); this form cannot.
        (1.0 - frac) * a + frac * b
    };
    // Rounding may step one ulp past a neighbour; keep the result between the two order
    // statistics so that e.g. the median always lies within [min, max]. Written with
    // max/min (not clamp) because clamp panics when a > b, i.e. on unsorted input.
    v.max(a).min(b.max(a))
}

/// Exact multiplication by 2^e without intermediate overflow or underflow, so that a
/// mantissa carried separately from its (possibly very negative) binary exponent can be
/// turned back into an `f64`.
fn ldexp(mut x: f64, mut e: i64) -> f64 {
    // 2^±1000 are exact normal numbers; stepping by them keeps each product exact until the
    // final one, which rounds (or underflows to 0 for terms negligible next to the sum).
    let up = f64::from_bits(((1023 + 1000) as u64) << 52);
    let down = f64::from_bits(((1023 - 1000) as u64) << 52);
    while e > 1000 {
        x *= up;
        e -= 1000;
        if x.is_infinite() {
            return x;
        }
    }
    while e < -1000 {
        x *= down;
        e += 1000;
        if x == 0.0 {
            return x;
        }
    }
    x * f64::from_bits(((1023 + e) as u64) << 52)
}

/// Distribution-free confidence interval for the median from order statistics (binomial):
/// the narrowest symmetric pair (x_(k), x_(n+1-k)) whose coverage 1 - 2*P(Binom(n,1/2) < k)
/// is >= level.
///
/// If even (min, max) does not reach `level` (small n, e.g. n=5 gives 0.9375), returns
/// (min, max) and its exact coverage. n = 1 -> (x, x, 0.0). Returns
/// (low, high, achieved_level).
///
/// Precondition: `sorted` is sorted ascending (as returned by [`sorted`]); an empty slice
/// returns (NaN, NaN, NaN). A NaN `level` is treated as 1.0, i.e. the widest interval, as
/// the conservative reading of an unusable request.
pub fn median_ci(sorted: &[f64], level: f64) -> (f64, f64, f64) {
    let n = sorted.len();
    if n == 0 {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    let level = if level.is_nan() { 1.0 } else { level };
    let nf = n as f64;
    // pmf(i) = C(n,i) / 2^n is carried as mantissa `m` times 2^`e`: the recurrence
    // pmf(i) = pmf(i-1) * (n-i+1) / i costs two roundings per step (exact integers as
    // factors), and keeping the exponent apart avoids the underflow of 2^-n for large n
    // and the overflow of C(n,i). The terms grow with i below n/2, so summing them in this
    // order also adds small to large, which is the accurate order.
    let mut m = 1.0_f64;
    let mut e = -(n as i64);
    let rescale = f64::from_bits(((1023 - 600) as u64) << 52);
    // cdf = P(X < k) for the current k, starting at k = 1.
    let mut cdf = ldexp(m, e);
    let coverage = |cdf: f64| (1.0 - 2.0 * cdf).max(0.0);
    let mut k = 1usize;
    let mut achieved = coverage(cdf);
    // Coverage falls as k grows, so walk inward while the next pair still reaches `level`.
    // k may go up to (n+1)/2, where the pair meets at (or straddles) the median.
    while k < n.div_ceil(2) {
        let i = k as f64;
        m *= nf - i + 1.0;
        m /= i;
        if m > 1e180 {
            m *= rescale;
            e += 600;
        }
        let next_cdf = cdf + ldexp(m, e);
        let next = coverage(next_cdf);
        if next < level {
            break;
        }
        k += 1;
        cdf = next_cdf;
        achieved = next;
    }
    (sorted[k - 1], sorted[n - k], achieved)
}

/// Mean and sample variance of `sorted` divided by `scale`, summed in sorted order so the
/// result is independent of the caller's input order, bit for bit.
fn moments(sorted: &[f64], scale: f64) -> (f64, f64) {
    let nf = sorted.len() as f64;
    let mean = sorted.iter().map(|x| x / scale).sum::<f64>() / nf;
    if sorted.len() < 2 {
        return (mean, 0.0);
    }
    // Two-pass variance with the compensating term, which removes most of the error left
    // in the mean.
    let (ss, sd) = sorted.iter().fold((0.0_f64, 0.0_f64), |(ss, sd), x| {
        let d = x / scale - mean;
        (ss + d * d, sd + d)
    });
    (mean, ((ss - sd * sd / nf) / (nf - 1.0)).max(0.0))
}

/// Mean and coefficient of variation of validated, sorted, non-empty samples.
fn mean_cv(sorted: &[f64]) -> (f64, f64) {
    let (mut mean, mut var) = moments(sorted, 1.0);
    let mut mean_scaled = mean;
    if !mean.is_finite() || !var.is_finite() {
        // The sum or the squared deviations overflowed (values near f64::MAX). Dividing by
        // the largest magnitude bounds both; the cv is scale-free, so only the mean is
        // scaled back. Not done always, because the extra division would cost exactness
        // on ordinary data (the mean of small integers would no longer be exact).
        let s = sorted.iter().fold(0.0_f64, |acc, x| acc.max(x.abs()));
        (mean_scaled, var) = moments(sorted, s);
        mean = mean_scaled * s;
    }
    if sorted.len() < 2 || mean_scaled == 0.0 {
        return (mean, 0.0);
    }
    (mean, var.sqrt() / mean_scaled.abs())
}

/// Full estimate: median, median_ci at 0.95, min, max, mean, cv (sample sd / |mean|; 0 when
/// n == 1 or mean == 0), n.
pub fn estimate(samples: &[f64]) -> Result<Estimate, StatsError> {
    let s = sorted(samples)?;
    let n = s.len();
    let (ci_low, ci_high, ci_level) = median_ci(&s, ESTIMATE_LEVEL);
    let (mean, cv) = mean_cv(&s);
    Ok(Estimate {
        median: quantile(&s, 0.5),
        ci_low,
        ci_high,
        ci_level,
        min: s[0],
        max: s[n - 1],
        mean,
        cv,
        n,
    })
}

/// Tukey fences over the samples (quartiles by [`quantile`]): outside
/// [Q1-1.5IQR, Q3+1.5IQR] -> Mild, outside [Q1-3IQR, Q3+3IQR] -> Severe, else None.
/// Same order as input. Fewer than 4 samples -> all None (quartiles are meaningless).
/// Non-finite input -> error.
///
/// Labels only: nothing is removed, because dropping slow trials would bias a benchmark
/// towards its best case.
pub fn tukey_labels(samples: &[f64]) -> Result<Vec<Outlier>, StatsError> {
    let s = sorted(samples)?;
    if s.len() < 4 {
        return Ok(vec![Outlier::None; samples.len()]);
    }
    let q1 = quantile(&s, 0.25);
    let q3 = quantile(&s, 0.75);
    let iqr = q3 - q1;
    let (mild_lo, mild_hi) = (q1 - 1.5 * iqr, q3 + 1.5 * iqr);
    let (severe_lo, severe_hi) = (q1 - 3.0 * iqr, q3 + 3.0 * iqr);
    Ok(samples
        .iter()
        .map(|&x| {
            if x < severe_lo || x > severe_hi {
                Outlier::Severe
            } else if x < mild_lo || x > mild_hi {
                Outlier::Mild
            } else {
                Outlier::None
            }
        })
        .collect())
}

/// Coefficient of variation (sample sd / |mean|), 0 for n<2 or mean==0.
///
/// May be +inf when the mean is negligible next to the spread (e.g. samples straddling 0);
/// a cv is only meaningful for positive quantities such as times.
pub fn cv(samples: &[f64]) -> Result<f64, StatsError> {
    let s = sorted(samples)?;
    Ok(mean_cv(&s).1)
}

/// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, and good enough to drive resampling;
/// defined here so the bootstrap is reproducible across platforms and dependency versions.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// An index in [0, n) for n > 0, by multiply-shift (Lemire). Its bias is below n/2^64,
    /// far under the bootstrap's own Monte Carlo error, so no rejection loop is needed.
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// A seeded random stream for resampling and shuffling elsewhere (variance, engine): the same
/// SplitMix64 as the bootstrap, so results are reproducible across platforms.
pub struct Rng(SplitMix64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(SplitMix64(seed))
    }

    /// An index in [0, n), for n > 0.
    pub fn below(&mut self, n: usize) -> usize {
        self.0.below(n)
    }
}

/// Shuffles `items` in place (Fisher-Yates) with a SplitMix64 stream seeded by `seed`: the
/// same seed gives the same order on every platform, so a run's trial order can be replayed
/// from the seed it stores.
pub fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut rng = SplitMix64(seed);
    for i in (1..items.len()).rev() {
        items.swap(i, rng.below(i + 1));
    }
}

/// Median of a resample of `from` drawn with replacement into `buf`.
fn resampled_median(rng: &mut SplitMix64, from: &[f64], buf: &mut Vec<f64>) -> f64 {
    buf.clear();
    buf.extend((0..from.len()).map(|_| from[rng.below(from.len())]));
    buf.sort_by(f64::total_cmp);
    quantile(buf, 0.5)
}

/// Percentile bootstrap confidence interval of the ratio median(b)/median(a),
/// deterministic: uses a small internal SplitMix64 PRNG seeded by `seed`, `resamples`
/// resamples, returns (low, high) at `level` (clamped to [0,1]).
///
/// Errors if either side is empty or has a non-finite sample. If any resample's ratio is not
/// finite (a resampled median of `a` is 0), or `resamples` is 0, or `level` is NaN, returns
/// (NaN, NaN): no interval. Dropping such resamples would keep only those with a larger
/// baseline, biasing the interval towards "faster".
///
/// `a` and `b` are resampled independently because two runs are independent experiments;
/// the ratio, not the difference, is reported because it is what "x% slower" means.
pub fn bootstrap_ratio_ci(
    a: &[f64],
    b: &[f64],
    level: f64,
    resamples: usize,
    seed: u64,
) -> Result<(f64, f64), StatsError> {
    validate(a)?;
    validate(b)?;
    if level.is_nan() {
        return Ok((f64::NAN, f64::NAN));
    }
    let mut rng = SplitMix64(seed);
    let mut buf = Vec::with_capacity(a.len().max(b.len()));
    // Capacity is capped: `resamples` is caller-controlled and an absurd value must not
    // abort on allocation before any work is done.
    let mut ratios = Vec::with_capacity(resamples.min(1 << 16));
    for _ in 0..resamples {
        let ma = resampled_median(&mut rng, a, &mut buf);
        let mb = resampled_median(&mut rng, b, &mut buf);
        let r = mb / ma;
        if !r.is_finite() {
            return Ok((f64::NAN, f64::NAN));
        }
        ratios.push(r);
    }
    if ratios.is_empty() {
        return Ok((f64::NAN, f64::NAN));
    }
    ratios.sort_by(f64::total_cmp);
    let tail = (1.0 - level.clamp(0.0, 1.0)) / 2.0;
    Ok((quantile(&ratios, tail), quantile(&ratios, 1.0 - tail)))
}

/// The Wilson score interval of a binomial proportion: `k` successes in `n` trials, at the
/// normal quantile `z` (1.96 for 95%). Unlike `k/n +- z*se` it stays inside [0, 1] and has
/// a width at `k = 0` and `k = n`, where the plain interval collapses to a point; its coverage
/// stays near the nominal level down to a handful of successes (Brown, Cai and DasGupta 2001).
/// With no trials it is the whole of [0, 1]: nothing is known.
pub fn wilson_ci(k: u64, n: u64, z: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let (k, n) = (k.min(n) as f64, n as f64);
    let z2 = z * z;
    let center = (k + z2 / 2.0) / (n + z2);
    let half = z / (n + z2) * (k * (n - k) / n + z2 / 4.0).sqrt();
    ((center - half).max(0.0), (center + half).min(1.0))
}

/// The interval of `b - a` from the intervals of two independent estimates, each given as
/// (point, low, high): Zou and Donner's MOVER (method of variance estimates recovery, 2008),
/// which recovers each side's variance from the distance of its own bound to its point, one
/// side's lower bound with the other's upper. With Wilson intervals of two proportions it is
/// Newcombe's interval of their difference (1998), asymmetric where a side is near 0.
pub fn mover_difference(b: (f64, f64, f64), a: (f64, f64, f64)) -> (f64, f64) {
    let d = b.0 - a.0;
    let low = d - ((b.0 - b.1).powi(2) + (a.2 - a.0).powi(2)).sqrt();
    let high = d + ((b.2 - b.0).powi(2) + (a.0 - a.1).powi(2)).sqrt();
    (low, high)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shuffle_is_a_seeded_permutation() {
        let mut a: Vec<u32> = (0..50).collect();
        let mut b = a.clone();
        shuffle(&mut a, 7);
        shuffle(&mut b, 7);
        assert_eq!(a, b, "same seed, same order");
        let mut c: Vec<u32> = (0..50).collect();
        shuffle(&mut c, 8);
        assert_ne!(a, c, "another seed, another order");
        let mut sorted = a.clone();
        sorted.sort();
        assert_eq!(sorted, (0..50).collect::<Vec<_>>(), "a permutation");
        let mut one = [1];
        shuffle(&mut one, 1);
        shuffle(&mut [] as &mut [u8], 1);
    }

    #[test]
    fn wilson_stays_in_the_unit_interval_and_has_width_at_the_edges() {
        // Newcombe (1998), Table I: 0/10 -> [0, 0.2775]; 1/29 -> [0.0061, 0.1718].
        let (lo, hi) = wilson_ci(0, 10, 1.959964);
        assert!(lo == 0.0 && (hi - 0.2775).abs() < 1e-4, "{lo} {hi}");
        let (lo, hi) = wilson_ci(1, 29, 1.959964);
        assert!(
            (lo - 0.0061).abs() < 1e-4 && (hi - 0.1718).abs() < 1e-4,
            "{lo} {hi}"
        );
        let (lo, hi) = wilson_ci(10, 10, 1.959964);
        assert!(hi == 1.0 && lo < 1.0);
        assert_eq!(wilson_ci(3, 0, 1.96), (0.0, 1.0));
    }

    #[test]
    fn mover_is_newcombes_difference_of_proportions() {
        // Newcombe (1998), Table II, example (d): 56/70 - 48/80 -> [0.0524, 0.3339]
        // (method 10, the Wilson score intervals combined).
        let z = 1.959964;
        let side = |k: u64, n: u64| {
            let (l, h) = wilson_ci(k, n, z);
            (k as f64 / n as f64, l, h)
        };
        let (lo, hi) = mover_difference(side(56, 70), side(48, 80));
        assert!(
            (lo - 0.0524).abs() < 1e-4 && (hi - 0.3339).abs() < 1e-4,
            "{lo} {hi}"
        );
        // Equal sides: an interval around 0.
        let (lo, hi) = mover_difference(side(5, 50), side(5, 50));
        assert!(lo < 0.0 && hi > 0.0 && (lo + hi).abs() < 1e-12);
    }
    use proptest::prelude::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        a == b || (a - b).abs() <= rel * a.abs().max(b.abs())
    }

    /// Independent reference: 1 - 2 * sum_{i<k} C(n,i) / 2^n with C(n,i) exact in u128
    /// (valid for n <= 100).
    fn exact_coverage(n: u32, k: u32) -> f64 {
        let mut c: u128 = 1;
        let mut sum: u128 = 0;
        for i in 0..k {
            sum += c;
            c = c * u128::from(n - i) / u128::from(i + 1);
        }
        1.0 - 2.0 * (sum as f64) / 2f64.powi(n as i32)
    }

    #[test]
    fn sorted_validates_and_sorts() {
        assert_eq!(sorted(&[3.0, 1.0, 2.0]), Ok(vec![1.0, 2.0, 3.0]));
        assert_eq!(sorted(&[]), Err(StatsError::Empty));
        assert!(matches!(
            sorted(&[1.0, f64::NAN]),
            Err(StatsError::NotFinite { index: 1, value }) if value.is_nan()
        ));
        assert_eq!(
            sorted(&[1.0, 2.0, f64::INFINITY, f64::NAN]),
            Err(StatsError::NotFinite {
                index: 2,
                value: f64::INFINITY
            })
        );
    }

    #[test]
    fn error_messages() {
        assert_eq!(StatsError::Empty.to_string(), "no samples");
        assert_eq!(
            StatsError::NotFinite {
                index: 3,
                value: f64::NEG_INFINITY
            }
            .to_string(),
            "sample 3 is not a finite number (-inf)"
        );
    }

    #[test]
    fn median_odd_even_single() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Ok(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Ok(2.5));
        assert_eq!(median(&[7.0]), Ok(7.0));
        assert_eq!(median(&[-1.0, 5.0]), Ok(2.0));
        // The midpoint of two huge values must not overflow.
        assert_eq!(median(&[f64::MAX, f64::MAX]), Ok(f64::MAX));
        assert_eq!(median(&[-f64::MAX, f64::MAX]), Ok(0.0));
    }

    #[test]
    fn quantile_type7() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(quantile(&x, 0.0), 1.0);
        assert_eq!(quantile(&x, 1.0), 5.0);
        assert_eq!(quantile(&x, 0.25), 2.0);
        assert_eq!(quantile(&x, 0.1), 1.4);
        // R: quantile(c(1,2,3,4), 0.25) == 1.75; quantile(c(10,20,30,40), 0.9) == 37
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.25), 1.75);
        assert!(close(quantile(&[10.0, 20.0, 30.0, 40.0], 0.9), 37.0, 1e-15));
        // Clamped q, degenerate inputs.
        assert_eq!(quantile(&x, -3.0), 1.0);
        assert_eq!(quantile(&x, 7.0), 5.0);
        assert!(quantile(&x, f64::NAN).is_nan());
        assert!(quantile(&[], 0.5).is_nan());
        assert_eq!(quantile(&[42.0], 0.3), 42.0);
    }

    #[test]
    fn median_ci_small_n() {
        let x5 = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(median_ci(&x5, 0.95), (1.0, 5.0, 0.9375));
        assert_eq!(median_ci(&[9.0], 0.95), (9.0, 9.0, 0.0));
        assert_eq!(median_ci(&[1.0, 2.0], 0.95), (1.0, 2.0, 0.5));
        let x6 = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        assert_eq!(median_ci(&x6, 0.95), (1.0, 6.0, 0.96875));
        let e = median_ci(&[], 0.95);
        assert!(e.0.is_nan() && e.1.is_nan() && e.2.is_nan());
    }

    #[test]
    fn median_ci_n10_and_tables() {
        let x: Vec<f64> = (1..=10).map(f64::from).collect();
        // P(X<2) = 11/1024 -> 1 - 22/1024; k=3 would give 0.890625 < 0.95.
        assert_eq!(median_ci(&x, 0.95), (2.0, 9.0, 0.978515625));
        assert_eq!(median_ci(&x, 0.89), (3.0, 8.0, 0.890625));
        // Standard tables: n=20 -> ranks 6 and 15; n=100 -> ranks 40 and 61 (95%).
        // n=20: sum_{i<6} C(20,i) = 21700, so coverage = 1 - 2 * 21700 / 2^20.
        let x: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(median_ci(&x, 0.95), (6.0, 15.0, 1.0 - 43400.0 / 1048576.0));
        let x: Vec<f64> = (1..=100).map(f64::from).collect();
        let (lo, hi, lvl) = median_ci(&x, 0.95);
        assert_eq!((lo, hi), (40.0, 61.0));
        assert!(close(lvl, 0.964_799_799_782_295_1, 1e-13));
        // n=50 at 90%: ranks 19 and 32.
        let x: Vec<f64> = (1..=50).map(f64::from).collect();
        let (lo, hi, lvl) = median_ci(&x, 0.9);
        assert_eq!((lo, hi), (19.0, 32.0));
        assert!(close(lvl, 0.935_091_352_927_727_8, 1e-13));
    }

    #[test]
    fn median_ci_matches_exact_rational_values() {
        for n in 1..=100u32 {
            let x: Vec<f64> = (1..=n).map(f64::from).collect();
            for &level in &[0.5, 0.8, 0.9, 0.95, 0.99] {
                let (lo, _, got) = median_ci(&x, level);
                let k = lo as u32;
                assert!(close(got, exact_coverage(n, k), 1e-12), "n={n} k={k}");
                if k > 1 {
                    assert!(got >= level);
                }
                if k < n.div_ceil(2) {
                    assert!(exact_coverage(n, k + 1) < level, "n={n} not narrowest");
                }
            }
        }
    }

    #[test]
    fn median_ci_large_n_is_stable() {
        // Reference values from exact rational arithmetic (Python fractions).
        let x: Vec<f64> = (1..=1000).map(f64::from).collect();
        let (lo, hi, lvl) = median_ci(&x, 0.95);
        assert_eq!((lo, hi), (469.0, 532.0));
        assert!(close(lvl, 0.953_708_802_639_501_9, 1e-11));
        let (lo, hi, lvl) = median_ci(&x, 0.99);
        assert_eq!((lo, hi), (459.0, 542.0));
        assert!(close(lvl, 0.991_360_050_997_739_5, 1e-11));
        // Far beyond 2^-1074 underflow of 2^-n: still sensible.
        for n in [2000usize, 5000, 20001] {
            let x: Vec<f64> = (0..n).map(|i| i as f64).collect();
            let (lo, hi, lvl) = median_ci(&x, 0.95);
            assert!((0.95..0.96).contains(&lvl), "n={n} level={lvl}");
            assert!(lo < hi);
            // Width ~ 2 * 1.96 * sqrt(n)/2 ranks.
            let width = hi - lo;
            let expect = 1.96 * (n as f64).sqrt();
            assert!((width - expect).abs() < 4.0, "n={n} width={width}");
        }
    }

    #[test]
    fn median_ci_odd_levels() {
        let x: Vec<f64> = (1..=9).map(f64::from).collect();
        // Level 0 (or below) -> innermost pair, which for odd n is the median itself.
        assert_eq!(median_ci(&x, 0.0), (5.0, 5.0, 0.0));
        assert_eq!(median_ci(&x, -1.0), (5.0, 5.0, 0.0));
        // Unreachable level -> (min, max).
        assert_eq!(median_ci(&x, 2.0).0, 1.0);
        assert_eq!(median_ci(&x, f64::NAN).0, 1.0);
    }

    #[test]
    fn estimate_hand_computed() {
        let e = estimate(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(e.n, 8);
        assert_eq!(e.median, 4.5);
        assert_eq!((e.min, e.max), (2.0, 9.0));
        assert_eq!(e.mean, 5.0);
        // Sample variance 32/7.
        assert!(close(e.cv, (32.0f64 / 7.0).sqrt() / 5.0, 1e-14));
        // n=8: k=1 gives 1 - 2/256 = 0.9921875, k=2 gives 1 - 18/256 = 0.9296875.
        assert_eq!((e.ci_low, e.ci_high, e.ci_level), (2.0, 9.0, 0.9921875));

        let e = estimate(&[3.5]).unwrap();
        assert_eq!(
            (e.median, e.ci_low, e.ci_high, e.ci_level),
            (3.5, 3.5, 3.5, 0.0)
        );
        assert_eq!((e.mean, e.cv, e.n), (3.5, 0.0, 1));

        let e = estimate(&[-1.0, 1.0]).unwrap();
        assert_eq!((e.mean, e.cv), (0.0, 0.0));
        let e = estimate(&[0.0, 0.0, 0.0]).unwrap();
        assert_eq!((e.mean, e.cv), (0.0, 0.0));
        // No overflow in the mean of huge values.
        let e = estimate(&[f64::MAX, f64::MAX]).unwrap();
        assert_eq!(e.mean, f64::MAX);
        assert_eq!(e.cv, 0.0);
    }

    #[test]
    fn cv_hand_computed() {
        assert_eq!(cv(&[5.0]), Ok(0.0));
        assert_eq!(cv(&[5.0, 5.0, 5.0]), Ok(0.0));
        // sd of [1,3] = sqrt(2), mean 2.
        assert!(close(cv(&[1.0, 3.0]).unwrap(), 2f64.sqrt() / 2.0, 1e-15));
        // |mean| is used: negative samples give the same cv.
        assert!(close(cv(&[-1.0, -3.0]).unwrap(), 2f64.sqrt() / 2.0, 1e-15));
        assert_eq!(cv(&[]), Err(StatsError::Empty));
    }

    #[test]
    fn tukey_hand_computed() {
        // Quartiles are over all values, outliers included. Type 7 with n = 12:
        // Q1 = x[2] + 0.75 (x[3] - x[2]) = 3.75, Q3 = x[8] + 0.25 (x[9] - x[8]) = 9.25,
        // IQR = 5.5; mild fence 17.5, severe fence 25.75.
        let x = [
            1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 30.0, 50.0,
        ];
        let l = tukey_labels(&x).unwrap();
        assert_eq!(l[..10], [Outlier::None; 10]);
        assert_eq!(l[10], Outlier::Severe);
        assert_eq!(l[11], Outlier::Severe);
        let x = [
            1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 21.0,
        ];
        // Same quartiles as above (3.75, 9.25): 21 is past 17.5 but not 25.75.
        let l = tukey_labels(&x).unwrap();
        assert_eq!(l[11], Outlier::Mild);
        // Low side, and input order is preserved.
        let x = [10.0, -40.0, 11.0, 12.0, 13.0, 14.0];
        let l = tukey_labels(&x).unwrap();
        assert_eq!(l[1], Outlier::Severe);
        assert_eq!(l[0], Outlier::None);
        // Fewer than four samples: never labelled.
        assert_eq!(
            tukey_labels(&[1.0, 1.0, 1e9]).unwrap(),
            vec![Outlier::None; 3]
        );
        assert_eq!(tukey_labels(&[]), Err(StatsError::Empty));
    }

    #[test]
    fn bootstrap_basics() {
        let a = [10.0, 11.0, 9.5, 10.2, 10.1, 9.9, 10.4, 10.0];
        let b: Vec<f64> = a.iter().map(|x| x * 1.5).collect();
        let r1 = bootstrap_ratio_ci(&a, &b, 0.95, 2000, 7).unwrap();
        let r2 = bootstrap_ratio_ci(&a, &b, 0.95, 2000, 7).unwrap();
        assert_eq!(r1, r2, "same seed must give the same interval");
        assert!(r1.0 <= 1.5 && 1.5 <= r1.1, "{r1:?}");
        assert!(r1.0 > 1.3 && r1.1 < 1.7, "{r1:?}");
        // Constant samples: every ratio is exactly 1.
        assert_eq!(
            bootstrap_ratio_ci(&[3.0; 5], &[3.0; 7], 0.95, 100, 1),
            Ok((1.0, 1.0))
        );
        // Median of a always 0, or only sometimes: no interval either way, never a biased one.
        let r = bootstrap_ratio_ci(&[0.0; 4], &[1.0; 4], 0.95, 100, 1).unwrap();
        assert!(r.0.is_nan() && r.1.is_nan());
        let r = bootstrap_ratio_ci(&[0.0, 0.0, 5.0, 5.0, 5.0], &[5.0; 5], 0.95, 500, 1).unwrap();
        assert!(r.0.is_nan() && r.1.is_nan(), "{r:?}");
        let r = bootstrap_ratio_ci(&[1.0], &[1.0], 0.95, 0, 1).unwrap();
        assert!(r.0.is_nan() && r.1.is_nan());
        let r = bootstrap_ratio_ci(&[1.0], &[1.0], f64::NAN, 10, 1).unwrap();
        assert!(r.0.is_nan() && r.1.is_nan());
        assert_eq!(
            bootstrap_ratio_ci(&[], &[1.0], 0.95, 10, 1),
            Err(StatsError::Empty)
        );
        assert!(matches!(
            bootstrap_ratio_ci(&[1.0], &[1.0, f64::NAN], 0.95, 10, 1),
            Err(StatsError::NotFinite { index: 1, .. })
        ));
    }

    #[test]
    fn splitmix_reference_values() {
        // First outputs for seed 0 from the reference implementation.
        let mut r = SplitMix64(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        let mut r = SplitMix64(u64::MAX);
        for n in [1usize, 2, 3, 1000, usize::MAX] {
            assert!(r.below(n) < n);
        }
    }

    #[test]
    fn all_functions_reject_empty_and_nan() {
        let bad: [&[f64]; 4] = [&[], &[f64::NAN], &[1.0, f64::NAN, 2.0], &[f64::INFINITY]];
        for x in bad {
            assert!(sorted(x).is_err());
            assert!(median(x).is_err());
            assert!(estimate(x).is_err());
            assert!(tukey_labels(x).is_err());
            assert!(cv(x).is_err());
            assert!(bootstrap_ratio_ci(x, &[1.0], 0.95, 10, 0).is_err());
            assert!(bootstrap_ratio_ci(&[1.0], x, 0.95, 10, 0).is_err());
            // The sorted-input functions document NaN results instead of errors; they must
            // not panic even when handed unsorted or NaN data.
            let _ = quantile(x, 0.5);
            let _ = median_ci(x, 0.95);
        }
    }

    fn samples(max_len: usize) -> impl Strategy<Value = Vec<f64>> {
        prop::collection::vec(-1e6f64..1e6, 1..max_len)
    }

    fn positive(max_len: usize) -> impl Strategy<Value = Vec<f64>> {
        prop::collection::vec(1e-3f64..1e6, 1..max_len)
    }

    proptest! {
        #[test]
        fn median_within_min_max(x in samples(200)) {
            let m = median(&x).unwrap();
            let s = sorted(&x).unwrap();
            prop_assert!(s[0] <= m && m <= s[s.len() - 1]);
        }

        #[test]
        fn ci_brackets_median(x in samples(300), level in 0.0f64..1.0) {
            let s = sorted(&x).unwrap();
            let m = quantile(&s, 0.5);
            let (lo, hi, lvl) = median_ci(&s, level);
            prop_assert!(lo <= m && m <= hi);
            prop_assert!((0.0..=1.0).contains(&lvl));
            let e = estimate(&x).unwrap();
            prop_assert!(e.ci_low <= e.median && e.median <= e.ci_high);
        }

        #[test]
        fn achieved_level_reaches_request_from_n6(
            x in prop::collection::vec(-1e3f64..1e3, 6..400),
            level in 0.0f64..=0.95,
        ) {
            let s = sorted(&x).unwrap();
            let (_, _, lvl) = median_ci(&s, level);
            prop_assert!(lvl >= level, "n={} level={} got={}", s.len(), level, lvl);
        }

        #[test]
        fn estimate_invariant_to_order(
            x in samples(100).prop_flat_map(|v| (Just(v.clone()), Just(v).prop_shuffle())),
        ) {
            prop_assert_eq!(estimate(&x.0).unwrap(), estimate(&x.1).unwrap());
            prop_assert_eq!(cv(&x.0).unwrap(), cv(&x.1).unwrap());
        }

        #[test]
        fn scaling_scales_location_not_cv(x in positive(100), c in 1e-3f64..1e3) {
            let y: Vec<f64> = x.iter().map(|v| v * c).collect();
            let (ex, ey) = (estimate(&x).unwrap(), estimate(&y).unwrap());
            prop_assert!(close(ey.median, c * ex.median, 1e-9));
            prop_assert!(close(ey.ci_low, c * ex.ci_low, 1e-9));
            prop_assert!(close(ey.ci_high, c * ex.ci_high, 1e-9));
            prop_assert!(close(ey.mean, c * ex.mean, 1e-9));
            prop_assert_eq!(ey.ci_level, ex.ci_level);
            prop_assert!(close(ey.cv, ex.cv, 1e-9), "{} vs {}", ey.cv, ex.cv);
        }

        #[test]
        fn identical_samples_are_not_outliers(v in -1e9f64..1e9, n in 0usize..60) {
            let x = vec![v; n + 1];
            let l = tukey_labels(&x).unwrap();
            prop_assert_eq!(l, vec![Outlier::None; n + 1]);
        }

        #[test]
        fn huge_value_is_severe(
            x in prop::collection::vec(100.0f64..101.0, 19),
            huge in 1e4f64..1e12,
            at in 0usize..20,
        ) {
            let mut x = x;
            x.insert(at, huge);
            let l = tukey_labels(&x).unwrap();
            prop_assert_eq!(l[at], Outlier::Severe);
        }

        #[test]
        fn bootstrap_identical_contains_one(x in positive(40), seed in any::<u64>()) {
            let (lo, hi) = bootstrap_ratio_ci(&x, &x, 0.95, 500, seed).unwrap();
            prop_assert!(lo <= 1.0 && 1.0 <= hi, "({}, {})", lo, hi);
        }

        #[test]
        fn bootstrap_doubled_contains_two_not_one(
            a in prop::collection::vec(100.0f64..101.0, 5..40),
            seed in any::<u64>(),
        ) {
            let b: Vec<f64> = a.iter().map(|v| 2.0 * v).collect();
            let (lo, hi) = bootstrap_ratio_ci(&a, &b, 0.95, 500, seed).unwrap();
            prop_assert!(lo <= 2.0 && 2.0 <= hi, "({}, {})", lo, hi);
            prop_assert!(lo > 1.0);
        }

        #[test]
        fn never_panics_and_errors_on_bad_input(
            x in prop::collection::vec(
                prop_oneof![
                    4 => any::<f64>(),
                    1 => Just(f64::NAN),
                    1 => Just(f64::INFINITY),
                    1 => Just(f64::NEG_INFINITY),
                ],
                0..30,
            ),
            q in any::<f64>(),
            seed in any::<u64>(),
        ) {
            let ok = !x.is_empty() && x.iter().all(|v| v.is_finite());
            prop_assert_eq!(sorted(&x).is_ok(), ok);
            prop_assert_eq!(median(&x).is_ok(), ok);
            prop_assert_eq!(estimate(&x).is_ok(), ok);
            prop_assert_eq!(tukey_labels(&x).is_ok(), ok);
            prop_assert_eq!(cv(&x).is_ok(), ok);
            prop_assert_eq!(bootstrap_ratio_ci(&x, &x, q, 20, seed).is_ok(), ok);
            // Unsorted, non-finite data and arbitrary q/level: no panic.
            let _ = quantile(&x, q);
            let _ = median_ci(&x, q);
            if ok {
                let s = sorted(&x).unwrap();
                let m = quantile(&s, q);
                prop_assert!(q.is_nan() || (s[0] <= m && m <= s[s.len() - 1]));
                let (lo, hi, _) = median_ci(&s, q);
                prop_assert!(lo <= hi);
                prop_assert_eq!(tukey_labels(&x).unwrap().len(), x.len());
            }
        }
    }
}
