//! Tests of change-point detection: exact cases, properties, and the rates on simulated
//! histories fitted to this VM's run-to-run noise (quoted in docs/changes.md).

use super::*;
use crate::stats::Rng;
use proptest::prelude::*;

mod real_noise;

fn uniform(rng: &mut Rng) -> f64 {
    rng.below(1 << 53) as f64 / (1u64 << 53) as f64
}

/// A standard normal variate (Box-Muller).
fn normal(rng: &mut Rng) -> f64 {
    let u = 1.0 - uniform(rng); // (0, 1]
    let v = uniform(rng);
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

/// Run-to-run noise of one test's run medians on one host.
#[derive(Clone, Copy, Debug)]
pub(super) struct Noise {
    pub(super) name: &'static str,
    /// Log-sd of a run's median around its level.
    pub(super) sigma: f64,
    /// The share of runs that land in the host's slow mode (1.2-1.6x, #30's two speeds).
    pub(super) slow_share: f64,
    /// The share of histories with an episode: 3-5 consecutive runs all in the slow mode.
    pub(super) episode_share: f64,
}

/// The noise profiles of this VM (#30, #35): quiet tests near 5% run-to-run, busy ones
/// 10-15%, and the two-speed host (1.2-1.6x apart, #30), whose run medians are bimodal: with
/// 10% of the runs in the slow mode the overall log-sd is about 11%, with 25% about 15% (what
/// #30 measured for pipeback4's stored runs). Its episodes last 0.4-10 s, far shorter than the
/// time between two scheduled runs, so slow runs come independently; the last profile is a
/// stress test beyond that: a slow stretch of 3-5 consecutive runs in 30% of the histories
/// (a noisy neighbour for a day).
pub(super) const PROFILES: [Noise; 6] = [
    Noise {
        name: "gaussian 5%",
        sigma: 0.05,
        slow_share: 0.0,
        episode_share: 0.0,
    },
    Noise {
        name: "gaussian 10%",
        sigma: 0.10,
        slow_share: 0.0,
        episode_share: 0.0,
    },
    Noise {
        name: "gaussian 15%",
        sigma: 0.15,
        slow_share: 0.0,
        episode_share: 0.0,
    },
    Noise {
        name: "two-speed 10%",
        sigma: 0.05,
        slow_share: 0.10,
        episode_share: 0.0,
    },
    Noise {
        name: "two-speed 25%",
        sigma: 0.05,
        slow_share: 0.25,
        episode_share: 0.0,
    },
    Noise {
        name: "+ slow stretch",
        sigma: 0.05,
        slow_share: 0.10,
        episode_share: 0.30,
    },
];

/// A history of `n` run medians around 1000 with `noise`, and from run `step.0` on slower
/// by the fraction `step.1`.
pub(super) fn history(
    rng: &mut Rng,
    n: usize,
    noise: Noise,
    step: Option<(usize, f64)>,
) -> Vec<f64> {
    let slow_factor = 1.2 + 0.4 * uniform(rng);
    let mut slow: Vec<bool> = (0..n).map(|_| uniform(rng) < noise.slow_share).collect();
    if uniform(rng) < noise.episode_share {
        let len = 3 + rng.below(3);
        let start = rng.below(n - len + 1);
        slow[start..start + len].iter_mut().for_each(|s| *s = true);
    }
    (0..n)
        .map(|i| {
            let mut v = 1000.0 * (noise.sigma * normal(rng)).exp();
            if slow[i] {
                v *= slow_factor;
            }
            if let Some((at, frac)) = step {
                if i >= at {
                    v *= 1.0 + frac;
                }
            }
            v
        })
        .collect()
}

/// Of `histories` A/A histories of `n` runs: how many had a change reported.
fn false_alarms(noise: Noise, n: usize, histories: usize, seed: u64) -> usize {
    let make = |rng: &mut Rng, step| history(rng, n, noise, step);
    false_alarms_of(make, &Settings::default(), histories, seed)
}

/// Of `histories` histories of `n` runs with a step of `frac` planted at a run drawn from
/// [n/5, 4n/5]: how many had a change of the right sign reported within 5 runs of it (a 10%
/// step in 5% noise is placed within 3 runs only 90% of the time).
fn detections(noise: Noise, n: usize, frac: f64, histories: usize, seed: u64) -> usize {
    let make = |rng: &mut Rng, step| history(rng, n, noise, step);
    detections_of(make, &Settings::default(), n, frac, histories, seed)
}

/// Of `histories` A/A histories `make` draws: how many had a change reported under `s`.
pub(super) fn false_alarms_of(
    make: impl FnMut(&mut Rng, Option<(usize, f64)>) -> Vec<f64>,
    s: &Settings,
    histories: usize,
    seed: u64,
) -> usize {
    false_alarms_and(make, s, histories, seed, |_, _| false).0
}

/// [`false_alarms_of`], and of those histories how many `also` holds for (given the history
/// and the changes reported).
pub(super) fn false_alarms_and(
    mut make: impl FnMut(&mut Rng, Option<(usize, f64)>) -> Vec<f64>,
    s: &Settings,
    histories: usize,
    seed: u64,
    also: impl Fn(&[f64], &[ChangePoint]) -> bool,
) -> (usize, usize) {
    let mut rng = Rng::new(seed);
    let (mut found, mut and) = (0, 0);
    for _ in 0..histories {
        let h = make(&mut rng, None);
        let c = detect(&h, s).unwrap();
        if !c.is_empty() {
            found += 1;
            and += also(&h, &c) as usize;
        }
    }
    (found, and)
}

/// Of `histories` histories of `n` runs `make` draws with a step of `frac` planted at a run
/// drawn from [n/5, 4n/5]: how many had a change of the right sign reported within 5 runs of
/// it under `s`.
pub(super) fn detections_of(
    make: impl FnMut(&mut Rng, Option<(usize, f64)>) -> Vec<f64>,
    s: &Settings,
    n: usize,
    frac: f64,
    histories: usize,
    seed: u64,
) -> usize {
    detections_and(make, s, n, frac, histories, seed, |_, _| false).0
}

/// [`detections_of`], and of those histories how many `also` holds for (given the history
/// and the changes reported).
pub(super) fn detections_and(
    mut make: impl FnMut(&mut Rng, Option<(usize, f64)>) -> Vec<f64>,
    s: &Settings,
    n: usize,
    frac: f64,
    histories: usize,
    seed: u64,
    also: impl Fn(&[f64], &[ChangePoint]) -> bool,
) -> (usize, usize) {
    let mut rng = Rng::new(seed);
    let (mut found, mut and) = (0, 0);
    for _ in 0..histories {
        let at = n / 5 + rng.below(3 * n / 5 + 1);
        let h = make(&mut rng, Some((at, frac)));
        let c = detect(&h, s).unwrap();
        if c.iter()
            .any(|c| c.index.abs_diff(at) <= 5 && (c.ratio() > 1.0) == (frac > 0.0))
        {
            found += 1;
            and += also(&h, &c) as usize;
        }
    }
    (found, and)
}

/// The permutation test as published: every permutation drawn, p over all of them; and how
/// many the earlier stop (after 10 scoring as high) drew.
fn full_permutation_p(level: [&[f64]; 2], q: f64, s: &Settings, rng: &mut Rng) -> (f64, usize) {
    let [mut l, mut r] = level.map(<[f64]>::to_vec);
    let (mut as_high, mut tenth) = (0, s.permutations);
    for done in 1..=s.permutations {
        for i in (1..l.len()).rev() {
            let j = rng.below(i + 1);
            l.swap(i, j);
            r.swap(i, j);
        }
        if statistic(&l, &r, s.alpha, s.min_size).is_some_and(|(_, qp)| qp >= q - 1e-9 * q.abs()) {
            as_high += 1;
            if as_high == 10 {
                tenth = tenth.min(done);
            }
        }
    }
    ((as_high + 1) as f64 / (s.permutations + 1) as f64, tenth)
}

/// #35 item 5: the sequential test stops once its verdict is decided, and decides as the
/// full test does: the same verdict on every history, the same p-value where the split is
/// kept, and the random stream left where the full test leaves it then (so the levels split
/// after it draw the same shuffles). On histories without a change, most of a store's, it
/// draws a fraction of the shuffles the earlier stop (after 10 scoring as high) drew.
#[test]
fn the_sequential_permutation_test_decides_as_the_full_one_in_fewer_shuffles() {
    let s = Settings::default();
    let mut rng = Rng::new(35);
    let (mut kept, mut refused) = (0, 0);
    let (mut now, mut before) = (0, 0);
    for i in 0..600 {
        let noise = PROFILES[i % PROFILES.len()];
        let step = (i % 3 == 0).then_some((25, [0.03, 0.1, 0.3][(i / 3) % 3]));
        let h = history(&mut rng, 50, noise, step);
        let logs: Vec<f64> = h.iter().map(|v| v.ln()).collect();
        let r = ranks(&h);
        let (_, q) = statistic(&logs, &r, s.alpha, s.min_size).unwrap();
        let seed = seed_of(&h);
        let (mut a, mut b) = (Rng::new(seed), Rng::new(seed));
        let (p, done) = permutation_test([&logs, &r], q, &s, &mut a);
        let (full, tenth) = full_permutation_p([&logs, &r], q, &s, &mut b);
        assert_eq!(
            p <= s.significance,
            full <= s.significance,
            "history {i}: {p} vs {full}"
        );
        if full <= s.significance {
            kept += 1;
            assert_eq!(p, full, "history {i}");
            assert_eq!(done, s.permutations);
            assert_eq!(
                a.below(1 << 40),
                b.below(1 << 40),
                "history {i}: the stream moved"
            );
        } else {
            refused += 1;
        }
        if step.is_none() {
            now += done;
            before += tenth;
        }
    }
    assert!(kept > 50 && refused > 300, "{kept} kept, {refused} refused");
    assert!(
        now * 3 < before,
        "{now} shuffles on the A/A histories, {before} with the earlier stop"
    );
}

/// The overall log-sd of a profile's A/A histories (the figure the issue quotes, 5-15%).
fn overall_log_sd(noise: Noise) -> f64 {
    let mut rng = Rng::new(7);
    let mut sd = 0.0;
    for _ in 0..200 {
        let z: Vec<f64> = history(&mut rng, 50, noise, None)
            .iter()
            .map(|v| v.ln())
            .collect();
        let mean = z.iter().sum::<f64>() / z.len() as f64;
        sd += (z.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (z.len() - 1) as f64).sqrt();
    }
    sd / 200.0
}

#[test]
fn a_clear_step_is_found_where_it_is() {
    let mut v = vec![100.0; 20];
    v.extend(vec![130.0; 20]);
    // Some jitter, so that the values are not all tied.
    for (i, x) in v.iter_mut().enumerate() {
        *x *= 1.0 + 0.001 * (i % 7) as f64;
    }
    let c = detect(&v, &Settings::default()).unwrap();
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].index, 20);
    assert!((c[0].ratio() - 1.3).abs() < 0.01, "{c:?}");
    assert!(c[0].p_value <= 0.005);
    // The interval holds the ratio and says the change is real.
    let [lo, hi] = c[0].ratio_ci;
    assert!(
        lo <= c[0].ratio() && c[0].ratio() <= hi && lo > 1.25 && hi < 1.35,
        "{c:?}"
    );
}

/// The case that kept the 30% property ignored while the split was placed on ranks: a -30%
/// step at run 13 of 50 in 5% noise was placed at 18.
#[test]
fn a_30pct_step_is_placed_where_it_is_not_where_ranks_put_it() {
    let mut rng = Rng::new(1153166989897196533);
    let h = history(&mut rng, 50, PROFILES[0], Some((13, -0.3)));
    let c = detect(&h, &Settings::default()).unwrap();
    assert!(
        c.iter()
            .any(|c| c.index.abs_diff(13) <= 2 && c.ratio() < 0.8),
        "{c:?}"
    );
    // On ranks alone the best split is elsewhere: the reason the split is placed on logs.
    let (on_ranks, _) = best_split(&ranks(&h), 1.0, 5).unwrap();
    let logs: Vec<f64> = h.iter().map(|v| v.ln()).collect();
    let (on_logs, _) = best_split(&logs, 1.0, 5).unwrap();
    assert!(on_logs.abs_diff(13) <= 2, "{on_logs}");
    assert!(on_ranks.abs_diff(13) > 2, "{on_ranks}");
}

#[test]
fn two_steps_are_both_found_in_order() {
    let v: Vec<f64> = (0..60)
        .map(|i| {
            let level = if i < 20 {
                100.0
            } else if i < 40 {
                120.0
            } else {
                90.0
            };
            level * (1.0 + 0.002 * ((i * 7) % 5) as f64)
        })
        .collect();
    let c = detect(&v, &Settings::default()).unwrap();
    let at: Vec<usize> = c.iter().map(|c| c.index).collect();
    assert_eq!(at, [20, 40], "{c:?}");
    assert!(c[0].ratio() > 1.15 && c[1].ratio() < 0.8, "{c:?}");
}

#[test]
fn short_or_flat_histories_have_no_change() {
    assert!(detect(&[], &Settings::default()).unwrap().is_empty());
    assert!(detect(&[5.0; 9], &Settings::default()).unwrap().is_empty());
    assert!(detect(&[5.0; 200], &Settings::default())
        .unwrap()
        .is_empty());
}

#[test]
fn a_step_under_min_step_is_not_reported() {
    // A 1% step with no noise is significant, and below the 2% a change must reach.
    let v: Vec<f64> = (0..40)
        .map(|i| if i < 20 { 100.0 } else { 101.0 } + 0.0001 * (i % 3) as f64)
        .collect();
    assert!(detect(&v, &Settings::default()).unwrap().is_empty());
    let s = Settings {
        min_step: 0.005,
        ..Settings::default()
    };
    assert_eq!(detect(&v, &s).unwrap().len(), 1);
}

#[test]
fn bad_values_and_settings_are_errors_not_panics() {
    assert_eq!(
        detect(&[1.0, 0.0, 2.0], &Settings::default()),
        Err(ChangeError::NotPositive {
            index: 1,
            value: 0.0
        })
    );
    assert!(matches!(
        detect(&[1.0, f64::NAN], &Settings::default()),
        Err(ChangeError::NotPositive { index: 1, .. })
    ));
    for s in [
        Settings {
            alpha: 2.0,
            ..Settings::default()
        },
        Settings {
            min_size: 1,
            ..Settings::default()
        },
        Settings {
            significance: 0.0,
            ..Settings::default()
        },
        Settings {
            permutations: 0,
            ..Settings::default()
        },
        Settings {
            min_step: f64::NAN,
            ..Settings::default()
        },
    ] {
        assert!(
            matches!(detect(&[1.0; 30], &s), Err(ChangeError::Settings(_))),
            "{s:?}"
        );
    }
}

#[test]
fn the_energy_statistic_matches_its_definition() {
    // best_split's O(n^2) sums against the formula written out, at every split.
    let x = [0.3, -1.2, 0.8, 2.5, 2.1, 1.9, -0.4, 3.3, 2.8];
    for alpha in [0.5, 1.0, 1.5] {
        let d = |a: f64, b: f64| (a - b).abs().powf(alpha);
        let q_at = |t: usize| {
            let (l, r) = x.split_at(t);
            let (nx, ny) = (l.len() as f64, r.len() as f64);
            let cross: f64 = l
                .iter()
                .flat_map(|a| r.iter().map(move |b| d(*a, *b)))
                .sum();
            let pairs = |s: &[f64]| -> f64 {
                (0..s.len())
                    .flat_map(|i| (i + 1..s.len()).map(move |k| (i, k)))
                    .map(|(i, k)| d(s[i], s[k]))
                    .sum()
            };
            let e = 2.0 * cross / (nx * ny)
                - pairs(l) / (nx * (nx - 1.0) / 2.0)
                - pairs(r) / (ny * (ny - 1.0) / 2.0);
            nx * ny / (nx + ny) * e
        };
        let (at, q) = best_split(&x, alpha, 2).unwrap();
        let want = (2..=x.len() - 2)
            .map(|t| (t, q_at(t)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap();
        assert_eq!(at, want.0, "alpha {alpha}");
        assert!(
            (q - want.1).abs() < 1e-9,
            "alpha {alpha}: {q} vs {}",
            want.1
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Change points are in order, at least min_size apart and from the ends, each reported
    /// step at least min_step, and the same history always gives the same answer.
    #[test]
    fn change_points_are_well_formed_and_reproducible(
        v in prop::collection::vec(1.0f64..1e6, 0..60),
    ) {
        let s = Settings::default();
        let c = detect(&v, &s).unwrap();
        prop_assert_eq!(&c, &detect(&v, &s).unwrap());
        for w in c.windows(2) {
            prop_assert!(w[1].index >= w[0].index + s.min_size);
        }
        for p in &c {
            prop_assert!(p.index >= s.min_size && p.index + s.min_size <= v.len());
            prop_assert!((p.ratio() - 1.0).abs() >= s.min_step);
            prop_assert!(p.p_value > 0.0 && p.p_value <= s.significance);
        }
    }

    /// Times are ratios: scaling a history changes no change point's place or step, and
    /// each point's levels scale with it.
    #[test]
    fn scaling_a_history_moves_no_change_point(
        seed in any::<u64>(),
        scale in prop::sample::select(vec![0.001, 2.0, 1e6]),
        frac in prop::sample::select(vec![0.0, 0.1, 0.3, -0.25]),
    ) {
        let mut rng = Rng::new(seed);
        let h = history(&mut rng, 40, PROFILES[0], Some((20, frac)));
        let scaled: Vec<f64> = h.iter().map(|x| x * scale).collect();
        let a = detect(&h, &Settings::default()).unwrap();
        let b = detect(&scaled, &Settings::default()).unwrap();
        prop_assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            prop_assert_eq!(x.index, y.index);
            prop_assert!((x.ratio() - y.ratio()).abs() < 1e-6);
        }
    }

    /// A step of 30% in quiet noise is always found, within 2 runs of where it is, with an
    /// interval of its ratio that holds the estimate and not 1. It failed while the split was
    /// placed on ranks (seed 1153166989897196533: a -30% step at run 13 of 50 in 5% noise
    /// placed at 18, Q 6.39 there against 6.29 at 13 on ranks).
    #[test]
    fn a_30pct_step_in_quiet_noise_is_found(seed in any::<u64>(), at in 8usize..42, up in any::<bool>()) {
        let mut rng = Rng::new(seed);
        let frac = if up { 0.3 } else { -0.3 };
        let h = history(&mut rng, 50, PROFILES[0], Some((at, frac)));
        let c = detect(&h, &Settings::default()).unwrap();
        prop_assert!(
            c.iter().any(|c| c.index.abs_diff(at) <= 2
                && (c.ratio() > 1.0) == up
                && c.ratio_ci[0] <= c.ratio()
                && c.ratio() <= c.ratio_ci[1]
                && !(c.ratio_ci[0]..=c.ratio_ci[1]).contains(&1.0)),
            "step at {} not found: {:?}", at, c
        );
    }
}

/// The issue's bar: a 10% step found in >= 9 of 10 histories of 50 runs, with <= 1 false
/// alarm per 100 A/A histories. The false alarms hold on every profile whose runs are
/// exchangeable (the permutation test's level does not depend on the noise's shape; the slow
/// stretches break exchangeability, and are quoted, not held); the detection rate reaches the bar on the
/// quiet profile (5%), and on the others is what the noise allows, measured and quoted by
/// `rates_on_simulated_histories` (a 10% step in Gaussian 15% noise is 0.7 sd).
#[test]
fn the_issue_bar_holds_where_the_noise_allows() {
    for noise in &PROFILES[..5] {
        let fa = false_alarms(*noise, 50, 1000, 11);
        assert!(
            fa <= 10,
            "{}: {fa} false alarms in 1000 A/A histories",
            noise.name
        );
    }
    let found = detections(PROFILES[0], 50, 0.10, 100, 12);
    assert!(
        found >= 90,
        "a 10% step in 5% noise found in {found} of 100 histories"
    );
    // Ranks keep the slow runs of the two-speed host from hiding a step that log times lose.
    let found = detections(PROFILES[3], 50, 0.10, 100, 12);
    assert!(
        found >= 55,
        "a 10% step on the two-speed host found in {found} of 100 histories"
    );
}

/// Prints the rates quoted in docs/changes.md (scripts/changes-sim.sh runs it, in release):
/// per profile, false alarms in 1,000 A/A histories of 50 runs and detections of planted
/// 3%, 10% and 30% steps in 200 histories each.
#[test]
#[ignore]
fn rates_on_simulated_histories() {
    println!("profile         log-sd  A/A false alarms  3% found  10% found  30% found");
    for noise in PROFILES {
        let fa = false_alarms(noise, 50, 1000, 101);
        let d: Vec<usize> = [0.03, 0.10, 0.30]
            .iter()
            .enumerate()
            .map(|(i, f)| detections(noise, 50, *f, 200, 200 + i as u64))
            .collect();
        println!(
            "{:<15} {:>5.1}%  {:>4} / 1000       {:>3} / 200 {:>3} / 200  {:>3} / 200",
            noise.name,
            100.0 * overall_log_sd(noise),
            fa,
            d[0],
            d[1],
            d[2]
        );
    }
}

/// Why ranks: the first split's test (p <= 1/200, found within 5 runs of the step) on the
/// log times against on the ranks, for a 10% step and for none, per profile. Printed by
/// scripts/changes-sim.sh; docs/changes.md quotes it.
#[test]
#[ignore]
fn ranks_against_log_times() {
    for (name, on_ranks) in [("log times", false), ("ranks", true)] {
        let mut line = format!("{name:<10}");
        for noise in PROFILES {
            let mut cell = String::new();
            for (frac, reps) in [(0.0, 1000), (0.10, 200)] {
                let mut rng = Rng::new(12);
                let hits = (0..reps)
                    .filter(|_| {
                        let at = 10 + rng.below(31);
                        let h = history(&mut rng, 50, noise, Some((at, frac)));
                        let z: Vec<f64> = if on_ranks {
                            ranks(&h)
                        } else {
                            h.iter().map(|v| v.ln()).collect()
                        };
                        let (t, q) = best_split(&z, 1.0, 5).unwrap();
                        let mut shuffled = z.clone();
                        let mut prng = Rng::new(99);
                        let beaten = (0..199).any(|_| {
                            for i in (1..shuffled.len()).rev() {
                                shuffled.swap(i, prng.below(i + 1));
                            }
                            best_split(&shuffled, 1.0, 5).unwrap().1 >= q
                        });
                        !beaten && (frac == 0.0 || t.abs_diff(at) <= 5)
                    })
                    .count();
                cell += &format!(" {hits}/{reps}");
            }
            line += &format!(" | {}:{cell}", noise.name);
        }
        println!("{line}");
    }
}

/// Of 200 histories of `a` runs then `b` runs 3x slower (1% noise: the levels never overlap,
/// a perfect step), in how many the step is found at its run.
fn clean_steps_found(a: usize, b: usize, s: &Settings) -> usize {
    let mut rng = Rng::new(5);
    (0..200)
        .filter(|_| {
            let h: Vec<f64> = (0..a + b)
                .map(|i| if i < a { 1.0 } else { 3.0 } * (0.01 * normal(&mut rng)).exp())
                .collect();
            detect(&h, s).unwrap().iter().any(|c| c.index == a)
        })
        .count()
}

/// How short a history can be: a perfect step between `k` runs and `k` runs, found in how
/// many of 200 histories. The permutation test bounds it, not the step: among the shuffles of
/// 2k runs, about 1 in C(2k, k)/2 splits as cleanly (1 in 126 for k = 5, p > 0.005).
#[test]
#[ignore]
fn how_short_a_history_can_be() {
    let s = Settings::default();
    let cells: Vec<String> = (5..=10)
        .map(|k| format!("{k}+{k}: {}/200", clean_steps_found(k, k, &s)))
        .collect();
    println!("a perfect step found | {}", cells.join(" | "));
}

/// A shuffle that splits as cleanly as the history counts as scoring as high, whatever the
/// rounding of its sums: a perfect step between 5 runs and 5 is split as cleanly by 2 of the
/// 252 ways to choose its first 5 (p = 0.0079 > 0.005), so with 199 shuffles it is kept only
/// when none of them is one of those: in about (1 - 2/252)^199 = 21% of histories. While the
/// comparison was exact, a tie came out an ulp lower about half the time and the step was
/// kept in 98 of 200.
#[test]
fn a_tie_with_the_history_counts_as_scoring_as_high() {
    let s = Settings::default();
    let short = clean_steps_found(5, 5, &s);
    assert!(short <= 60, "a perfect 5+5 step kept in {short} of 200");
    let long = clean_steps_found(10, 10, &s);
    assert!(long >= 195, "a perfect 10+10 step kept in {long} of 200");
}

/// Independent runs about their levels stay under the wander bound (about 1 history in 40
/// passes it); runs whose level wanders (an AR(1) with 0.8 of each run's deviation kept by
/// the next) pass it; too short a history has no figure.
#[test]
fn a_wandering_level_is_told_from_independent_runs_about_their_levels() {
    let mut rng = Rng::new(7);
    let (mut white, mut wander) = (0, 0);
    for _ in 0..200 {
        // 2% noise with a 10% step at run 25, split where it is.
        let h: Vec<f64> = (0..50)
            .map(|i| 100.0 * (0.02 * normal(&mut rng)).exp() * if i >= 25 { 1.1 } else { 1.0 })
            .collect();
        let at = ChangePoint {
            index: 25,
            before: 100.0,
            after: 110.0,
            ratio_ci: [1.1, 1.1],
            p_value: 0.005,
        };
        if wanders(residual_lag1(&h, &[at]), 50) {
            white += 1;
        }
        let mut z = 0.0;
        let w: Vec<f64> = (0..50)
            .map(|_| {
                z = 0.8 * z + 0.02 * normal(&mut rng);
                100.0 * f64::exp(z)
            })
            .collect();
        if wanders(residual_lag1(&w, &[]), 50) {
            wander += 1;
        }
    }
    assert!(
        white <= 15,
        "{white} of 200 independent histories said to wander"
    );
    assert!(
        wander >= 150,
        "only {wander} of 200 wandering histories said to wander"
    );
    assert_eq!(residual_lag1(&[1.0; 9], &[]), None);
    assert_eq!(residual_lag1(&[1.0; 20], &[]), None, "no spread");
    assert_eq!(
        residual_lag1(&[1.0, -1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], &[]),
        None
    );
}

#[test]
fn benjamini_hochberg_finds_the_step_up_level() {
    // The textbook case: m = 8, q = 0.05, levels k x 0.00625: the 2nd smallest (0.008) is
    // under 0.0125, the 3rd (0.039) over 0.01875, and none above is under its own.
    let p = [0.205, 0.001, 0.041, 0.008, 0.039, 0.06, 0.042, 0.074];
    assert_eq!(benjamini_hochberg(&p, 0.05), Some(2.0 * 0.05 / 8.0));
    // Step-up: a larger p-value under its level takes every smaller one with it.
    assert_eq!(
        benjamini_hochberg(&[0.04, 0.045, 0.01], 0.05),
        Some(0.05),
        "all three: 0.045 <= 3 x 0.05 / 3"
    );
    assert_eq!(benjamini_hochberg(&[0.03, 0.5], 0.05), None);
    assert_eq!(benjamini_hochberg(&[], 0.05), None);
    assert_eq!(benjamini_hochberg(&[0.05], 0.05), Some(0.05));
}

#[test]
fn a_search_has_the_permutations_its_level_needs() {
    assert_eq!(permutations_for(49, 0.05, 199), 1959);
    assert_eq!(permutations_for(1, 0.05, 199), 199);
    assert_eq!(permutations_for(0, 0.05, 199), 199);
    // A clear step no shuffle beats reaches the level of one change among 49.
    assert!(1.0 / (permutations_for(49, 0.05, 199) + 1) as f64 <= 0.05 / 49.0);
    assert!(matches!(
        search(&[], &Settings::default(), 0.0),
        Err(ChangeError::Settings(_))
    ));
    assert!(matches!(
        search(&[], &Settings::default(), 1.0),
        Err(ChangeError::Settings(_))
    ));
}

/// A history's p-value is its first split's in `detect_at` whatever the level, so a history
/// found by the search is split there, and one not found has no change at that level.
#[test]
fn the_history_p_value_is_the_first_splits() {
    let s = Settings {
        significance: 0.05,
        permutations: 999,
        ..Settings::default()
    };
    let mut rng = Rng::new(42);
    let (mut same, mut kept) = (0, 0);
    for i in 0..40 {
        let step = (i % 2 == 0).then_some((20, [0.05, 0.1][i % 4 / 2]));
        let h = history(&mut rng, 40, PROFILES[i % 4], step);
        let p = history_p(&h, &s).unwrap();
        for level in [0.001, 0.01, 0.05] {
            let c = detect_at(&h, &s, level, level).unwrap();
            if p > level {
                assert!(c.is_empty(), "history {i}: p {p}, level {level}: {c:?}");
            }
            assert!(c.iter().all(|c| c.p_value <= level), "history {i}: {c:?}");
            // The first split is one of them, unless its step is under the smallest.
            same += usize::from(c.iter().any(|c| c.p_value == p));
            kept += usize::from(p <= level);
        }
    }
    assert!(
        same == kept && kept >= 10,
        "the history's p-value among its changes' {same} times of {kept}"
    );
    assert_eq!(history_p(&[1.0; 9], &s).unwrap(), 1.0);
    assert!(matches!(
        detect_at(&[1.0; 30], &s, 0.06, 0.01),
        Err(ChangeError::Settings(_))
    ));
}

/// Searches of `tests` histories of 50 runs each, a step of `frac` planted in the first one
/// when `frac` is not 0: of `searches`, how many reported a change in a history without one
/// (a false alarm of the search), and how many found the planted step (the right sign,
/// within 5 runs); and, when `alone`, of the same searches how many alarmed with each
/// history tested on its own at p <= 0.005 (`detect`, as `changes` did before #42).
/// `shared`: the runs of a search are one machine's, and its two speeds slow every test of a
/// run together (#30), as the tests of a host's runs are.
pub(super) fn searches(
    (noise, shared): (Noise, bool),
    tests: usize,
    frac: f64,
    searches: usize,
    seed: u64,
    alone: bool,
) -> ((usize, usize), usize) {
    let s = Settings::default();
    let mut rng = Rng::new(seed);
    let (mut alarms, mut found, mut alone_alarms) = (0, 0, 0);
    for _ in 0..searches {
        let at = 10 + rng.below(31);
        let slow: Vec<bool> = (0..50)
            .map(|_| uniform(&mut rng) < noise.slow_share)
            .collect();
        let own = Noise {
            slow_share: if shared { 0.0 } else { noise.slow_share },
            ..noise
        };
        let factor = 1.2 + 0.4 * uniform(&mut rng);
        let hs: Vec<Vec<f64>> = (0..tests)
            .map(|t| {
                let step = (t == 0 && frac != 0.0).then_some((at, frac));
                let mut h = history(&mut rng, 50, own, step);
                if shared {
                    for (v, slow) in h.iter_mut().zip(&slow) {
                        if *slow {
                            *v *= factor;
                        }
                    }
                }
                h
            })
            .collect();
        let slices: Vec<&[f64]> = hs.iter().map(Vec::as_slice).collect();
        let r = search(&slices, &s, 0.05).unwrap();
        let first = if frac != 0.0 { 1 } else { 0 };
        if alone
            && hs[first..]
                .iter()
                .any(|h| !detect(h, &s).unwrap().is_empty())
        {
            alone_alarms += 1;
        }
        if r.changes[first..].iter().any(|c| !c.is_empty()) {
            alarms += 1;
        }
        if frac != 0.0
            && r.changes[0]
                .iter()
                .any(|c| c.index.abs_diff(at) <= 5 && (c.ratio() > 1.0) == (frac > 0.0))
        {
            found += 1;
        }
    }
    ((alarms, found), alone_alarms)
}

/// #42: exit 6 fired on any change in any history, with no correction for the number
/// searched (49 tests at 0.5% each: about 1 search in 5 alarmed with no change anywhere).
/// Searched together at a false discovery rate of 5%, a search of 49 A/A histories reports a
/// change at most 5% of the time, the machine's slow runs shared by the tests or not; and a
/// 10% step in one of them is still found. 60 searches a profile here (a CI's minute);
/// `false_alarms_per_search` prints 1,000.
#[test]
fn a_search_of_49_tests_alarms_at_most_its_false_discovery_rate() {
    for (noise, shared) in [(PROFILES[0], false), (PROFILES[3], true)] {
        let ((alarms, _), _) = searches((noise, shared), 49, 0.0, 60, 42, false);
        assert!(
            alarms <= 6,
            "{} (shared {shared}): {alarms} of 60 searches of 49 A/A histories alarmed",
            noise.name
        );
    }
    let ((alarms, found), _) = searches((PROFILES[0], false), 49, 0.10, 20, 43, false);
    assert!(
        found >= 16,
        "a 10% step among 49 tests found in {found} of 20"
    );
    assert!(alarms <= 3, "{alarms} of 20 searches alarmed elsewhere");
}

/// Prints the false alarms per search quoted in docs/changes.md (scripts/changes-sim.sh runs
/// it, in release): per noise profile, of 1,000 searches of 49 A/A histories of 50 runs at
/// q = 0.05, how many reported a change; with the two-speed host's slow runs shared by the
/// 49 tests of a run or drawn per test; and of 200 searches with a 10% step planted in one
/// test, how many found it.
#[test]
#[ignore]
fn false_alarms_per_search() {
    println!("49 tests, slow runs    A/A searches that alarmed        10% step in one test found");
    println!("                       q = 0.05     each at p <= 0.005");
    for (noise, shared) in [
        (PROFILES[0], false),
        (PROFILES[1], false),
        (PROFILES[3], false),
        (PROFILES[3], true),
        (PROFILES[4], true),
    ] {
        let ((alarms, _), alone) = searches((noise, shared), 49, 0.0, 1000, 4201, true);
        let ((_, found), _) = searches((noise, shared), 49, 0.10, 200, 4202, false);
        println!(
            "{:<15} {:<6} {:>4} / 1000  {:>4} / 1000          {:>3} / 200",
            noise.name,
            if shared { "shared" } else { "own" },
            alarms,
            alone,
            found
        );
    }
}

/// Prints how far the step reported is from the step planted (#42: a 5% step was reported
/// +6.8% measured on the runs that placed it): of the changes found within 5 runs of a
/// planted step (one history at p <= 0.005, 50 runs, Gaussian 5% noise), the mean step
/// measured in sample (the medians either side of the split reported) and out of sample (as
/// reported), and how often the 95% interval held the planted step.
#[test]
#[ignore]
fn the_step_is_measured_out_of_sample() {
    println!("planted  found   in sample  out of sample  interval holds it");
    for frac in [0.03, 0.05, 0.10, 0.30] {
        let mut rng = Rng::new(77);
        let (mut n, mut inside, mut outside, mut held) = (0, 0.0, 0.0, 0);
        for _ in 0..400 {
            let at = 10 + rng.below(31);
            let h = history(&mut rng, 50, PROFILES[0], Some((at, frac)));
            let c = detect(&h, &Settings::default()).unwrap();
            let Some(c) = c.iter().find(|c| c.index.abs_diff(at) <= 5) else {
                continue;
            };
            let median = |v: &[f64]| crate::stats::median(v).unwrap();
            let cuts: Vec<usize> = detect(&h, &Settings::default())
                .unwrap()
                .iter()
                .map(|c| c.index)
                .collect();
            let from = cuts
                .iter()
                .copied()
                .filter(|i| *i < c.index)
                .max()
                .unwrap_or(0);
            let to = cuts
                .iter()
                .copied()
                .filter(|i| *i > c.index)
                .min()
                .unwrap_or(50);
            n += 1;
            inside += median(&h[c.index..to]) / median(&h[from..c.index]) - 1.0;
            outside += c.ratio() - 1.0;
            held += usize::from(c.ratio_ci[0] <= 1.0 + frac && 1.0 + frac <= c.ratio_ci[1]);
        }
        let n_f = f64::from(n.max(1) as u32);
        println!(
            "{:>5.0}%  {n:>3}/400  {:>+8.2}%   {:>+8.2}%      {held:>3} / {n}",
            100.0 * frac,
            100.0 * inside / n_f,
            100.0 * outside / n_f
        );
    }
}
