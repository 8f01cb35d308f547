//! When each counted trial runs and when what has been measured is stored: the order of the
//! trials in rounds (shuffled from the run's seed), the rounds `--precision` adds, and the
//! checkpoints between rounds at which the results so far are written, so that a run killed
//! midway keeps what it finished.
//!
//! Pure: no worker, clock or store is touched here; [`super::session::Session`] carries a
//! schedule out.

/// The seed of round `round`: each round shuffles with its own stream of the run's seed.
pub fn round_seed(seed: u64, round: u32) -> u64 {
    seed ^ u64::from(round).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// The counted trials' order: `(round, target index)` pairs. Interleaved, every round holds
/// one trial of each target in an order shuffled from the seed; sequential, each target's
/// trials come back to back (round = trial number).
pub fn trial_order(targets: usize, rounds: u32, seed: u64, interleave: bool) -> Vec<(u32, usize)> {
    let mut order = Vec::with_capacity(targets * rounds as usize);
    if interleave {
        for r in 0..rounds {
            order.extend(round_order(targets, r, seed).into_iter().map(|i| (r, i)));
        }
    } else {
        for i in 0..targets {
            order.extend((0..rounds).map(|r| (r, i)));
        }
    }
    order
}

/// The targets of one interleaved round, in the order shuffled for it.
pub fn round_order(targets: usize, round: u32, seed: u64) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..targets).collect();
    crate::stats::shuffle(&mut idx, round_seed(seed, round));
    idx
}

/// The counted trials of a paired A/B (`sysperf ab`, #30): targets `0..n` are side A,
/// `n..2n` side B (the same tests). Each round takes the tests in an order shuffled for it,
/// and each test's A and B trials back to back, A or B first at random, so that what the
/// second of two trials gains or loses for running second falls on both sides alike.
pub fn paired_order(n: usize, rounds: std::ops::Range<u32>, seed: u64) -> Vec<(u32, usize)> {
    let mut order = Vec::with_capacity(2 * n * rounds.len());
    for r in rounds {
        let mut coin = crate::stats::Rng::new(round_seed(seed, r) ^ 0xAB);
        for j in round_order(n, r, seed) {
            let b_first = coin.below(2) == 1;
            let (first, second) = if b_first { (n + j, j) } else { (j, n + j) };
            order.extend([(r, first), (r, second)]);
        }
    }
    order
}

/// What to do before the trial `(round, target)` of an order: store the results of some
/// targets so far, and announce a new round.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Before {
    /// Targets whose results so far are stored first.
    pub checkpoint: Vec<usize>,
    /// A new interleaved round starts (numbered from 0).
    pub round: Option<u32>,
}

/// The checkpoints of an order, as the trial after `prev` sees them: interleaved, every
/// target is stored when a new round begins; sequential, a target is stored once its trials
/// are done.
pub fn before(
    prev: Option<(u32, usize)>,
    next: (u32, usize),
    targets: usize,
    interleave: bool,
) -> Before {
    let (r, i) = next;
    let new_round = prev.map(|p| p.0) != Some(r);
    let checkpoint = match prev {
        Some(_) if interleave && new_round => (0..targets).collect(),
        Some((_, before)) if !interleave && before != i => vec![before],
        _ => Vec::new(),
    };
    Before {
        checkpoint,
        round: (interleave && new_round).then_some(r),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaved_rounds_hold_every_target_once_in_a_seeded_order() {
        let order = trial_order(4, 3, 9, true);
        assert_eq!(order.len(), 12);
        for r in 0..3 {
            let mut round: Vec<usize> = order
                .iter()
                .filter(|(x, _)| *x == r)
                .map(|(_, i)| *i)
                .collect();
            round.sort();
            assert_eq!(round, vec![0, 1, 2, 3], "round {r}");
        }
        assert_eq!(
            order,
            trial_order(4, 3, 9, true),
            "replayable from the seed"
        );
        let rounds: Vec<Vec<usize>> = (0..3)
            .map(|r| {
                order
                    .iter()
                    .filter(|(x, _)| *x == r)
                    .map(|(_, i)| *i)
                    .collect()
            })
            .collect();
        assert!(
            rounds.windows(2).any(|w| w[0] != w[1]),
            "rounds are shuffled independently"
        );
        let seq = trial_order(2, 2, 9, false);
        assert_eq!(seq, vec![(0, 0), (1, 0), (0, 1), (1, 1)]);
    }

    #[test]
    fn paired_rounds_run_each_tests_sides_back_to_back_in_a_random_order() {
        let order = paired_order(3, 0..40, 5);
        assert_eq!(order.len(), 3 * 2 * 40);
        let mut b_first = 0;
        for pair in order.chunks(2) {
            let ((r0, x), (r1, y)) = (pair[0], pair[1]);
            assert_eq!(r0, r1);
            assert_eq!(x % 3, y % 3, "one test's two sides: {pair:?}");
            assert_ne!(x, y);
            b_first += usize::from(x >= 3);
        }
        // About half the pairs start with B (binomial 120, 0.5: 99.9% within 40-80).
        assert!((40..=80).contains(&b_first), "{b_first}");
        assert_eq!(order, paired_order(3, 0..40, 5), "replayable from the seed");
        assert_eq!(&paired_order(3, 0..41, 5)[..240], &order[..]);
        assert_eq!(paired_order(3, 40..41, 5), paired_order(3, 0..41, 5)[240..]);
    }

    #[test]
    fn checkpoints_come_between_rounds_or_after_a_targets_trials() {
        // Interleaved: nothing before the first trial, every target at each new round.
        assert_eq!(
            before(None, (0, 1), 3, true),
            Before {
                checkpoint: vec![],
                round: Some(0)
            }
        );
        assert_eq!(before(Some((0, 1)), (0, 2), 3, true), Before::default());
        assert_eq!(
            before(Some((0, 2)), (1, 0), 3, true),
            Before {
                checkpoint: vec![0, 1, 2],
                round: Some(1)
            }
        );
        // Sequential: a target once its trials are done; rounds are not announced.
        assert_eq!(before(Some((1, 0)), (0, 1), 2, false).checkpoint, vec![0]);
        assert_eq!(before(Some((0, 0)), (1, 0), 2, false), Before::default());
    }
}
