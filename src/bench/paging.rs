//! The paging tests of Table 6 (Appendix A: seqpage, randpage, gausspage; run script
//! parameters: 7500 pages, seqpage 10 passes, randpage and gausspage 30,000 touches).
//!
//! One iteration is one whole run of the paper's program: map a fresh zero-fill-on-demand
//! region of 7500 pages (valloc then, an anonymous mapping now), touch pages in the program's
//! order, and unmap it (exit freed it then). Every first touch of a page is a page fault, so
//! the system time per fault is the page-fault service time of Table 8. Pages are the system
//! page size (4 KiB here; the VAX's were 1 KiB), and transparent huge pages are turned off for
//! the region (MADV_NOHUGEPAGE) so that a fault still maps one page. The `-v` variants advise
//! the kernel first, with madvise(MADV_SEQUENTIAL) and madvise(MADV_RANDOM) standing in for
//! vadvise(VA_SEQL) and vadvise(VA_ANOM).
//!
//! `seqpage-thp` (group `variant`, not in a default run) is seqpage with the region left to
//! the machine's transparent-huge-page policy: with `always`, a first touch of each 2 MiB
//! aligned range maps and clears a huge page at once, so its faults and their kernel paths
//! change with the policy, which the paper's tests are kept from seeing. It is the paging test
//! on which `ab --switch thp` and `explain` show what the policy costs or saves.
//!
//! These run without memory pressure: the region fits in memory, so nothing is evicted and no
//! fault reads a disk, where the paper's 7.3 MB array was paged against about 3.5 MB. The `swap`
//! suite runs all twelve walks under pressure as the paper did, anonymous memory paged to swap
//! (`crate::suite::swap`), and the `vm` suite over file-backed memory (`crate::suite::vm`).
//!
//! The random numbers come from the same generators as 1984: randpage uses random() (the
//! additive feedback generator of 4.2BSD and glibc, seeded as glibc's srandom(1)), gausspage
//! uses the appendix's gauss() over rnd() = rand() / 0x7fffffff with 4.2BSD's rand().

use super::{Benchmark, Charge, Chart, Ctx, Group, Shape, Spec};
use crate::error::BenchError;
use crate::sys::{self, Mapping};

/// The run script's page count (`-p 7500`).
pub const NPAGES: usize = 7500;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pattern {
    /// `passes` sequential sweeps over every page.
    Seq { passes: usize },
    /// `touches` uniformly random pages.
    Rand { touches: usize },
    /// `touches` steps of a walk whose step is Gaussian with standard deviation `sd` pages.
    Gauss { touches: usize, sd: f32 },
}

impl Pattern {
    pub fn touches(self, npages: usize) -> u64 {
        match self {
            Pattern::Seq { passes } => (passes * npages) as u64,
            Pattern::Rand { touches } | Pattern::Gauss { touches, .. } => touches as u64,
        }
    }
}

/// The chart this family's tests are drawn on.
pub static CHART: Chart = Chart {
    name: "paging",
    title: "Paging (time per page touch)",
    about: Some("bars and the gausspage figure"),
};

macro_rules! page_spec {
    ($id:literal, $paper:literal, $today:literal, $pat:expr, $advice:expr, $touches:literal) => {
        Spec {
            id: $id,
            label: $id,
            group: Group::Paging,
            chart: &CHART,
            paper: $paper,
            // The paper's runs paged against 3.5 MB; these fit in memory (the vm suite pages).
            today: concat!(
                $today,
                "; without memory pressure: every fault is a zero-fill minor fault \
                 (--suite swap pages it to swap as the paper did; --suite vm pages file-backed \
                 memory)"
            ),
            paper_count: $touches,
            unit: "touch",
            ops_per_iteration: $touches,
            shape: Shape::Single,
            charge: Charge::Own,
            make: || {
                Box::new(Paging {
                    pattern: $pat,
                    advice: $advice,
                    npages: NPAGES,
                    machine_thp: false,
                })
            },
        }
    };
}

const SEQ: Pattern = Pattern::Seq { passes: 10 };
const RAND: Pattern = Pattern::Rand { touches: 30_000 };
const fn gauss_walk(sd: f32) -> Pattern {
    Pattern::Gauss {
        touches: 30_000,
        sd,
    }
}

/// seqpage over a region left to the machine's transparent huge pages (see the module doc).
const SEQPAGE_THP: Spec = Spec {
    id: "seqpage-thp",
    label: "seqpage-thp",
    group: Group::Variant,
    chart: &CHART,
    paper: "sequentially touch pages, 10 iterations",
    today: "10 passes over 7500 fresh anonymous pages left to the machine's transparent huge \
            pages (no MADV_NOHUGEPAGE): with 'always', one fault maps 2 MiB",
    paper_count: 75_000,
    unit: "touch",
    ops_per_iteration: 75_000,
    shape: Shape::Single,
    charge: Charge::Own,
    make: || {
        Box::new(Paging {
            pattern: SEQ,
            advice: None,
            npages: NPAGES,
            machine_thp: true,
        })
    },
};

pub static SPECS: &[Spec] = &[
    page_spec!(
        "seqpage",
        "sequentially touch pages, 10 iterations",
        "10 passes over 7500 fresh anonymous pages",
        SEQ,
        None,
        75_000
    ),
    page_spec!(
        "seqpage-v",
        "as above, but first make vadvise(2) call",
        "as seqpage after madvise(MADV_SEQUENTIAL) (for vadvise(VA_SEQL))",
        SEQ,
        Some(libc::MADV_SEQUENTIAL),
        75_000
    ),
    page_spec!(
        "randpage",
        "touch random page 30,000 times",
        "30,000 touches of random() % 7500 pages",
        RAND,
        None,
        30_000
    ),
    page_spec!(
        "randpage-v",
        "as above, but first make vadvise call",
        "as randpage after madvise(MADV_RANDOM) (for vadvise(VA_ANOM))",
        RAND,
        Some(libc::MADV_RANDOM),
        30_000
    ),
    page_spec!(
        "gausspage.1",
        "30,000 Gaussian accesses, standard deviation of 1",
        "Gaussian walk over 7500 pages, sd 1 page (the appendix's gauss())",
        gauss_walk(1.0),
        None,
        30_000
    ),
    page_spec!(
        "gausspage.10",
        "as above, standard deviation of 10",
        "Gaussian walk, sd 10 pages",
        gauss_walk(10.0),
        None,
        30_000
    ),
    page_spec!(
        "gausspage.30",
        "as above, standard deviation of 30",
        "Gaussian walk, sd 30 pages",
        gauss_walk(30.0),
        None,
        30_000
    ),
    page_spec!(
        "gausspage.40",
        "as above, standard deviation of 40",
        "Gaussian walk, sd 40 pages",
        gauss_walk(40.0),
        None,
        30_000
    ),
    page_spec!(
        "gausspage.50",
        "as above, standard deviation of 50",
        "Gaussian walk, sd 50 pages",
        gauss_walk(50.0),
        None,
        30_000
    ),
    page_spec!(
        "gausspage.60",
        "as above, standard deviation of 60",
        "Gaussian walk, sd 60 pages",
        gauss_walk(60.0),
        None,
        30_000
    ),
    page_spec!(
        "gausspage.80",
        "as above, standard deviation of 80",
        "Gaussian walk, sd 80 pages",
        gauss_walk(80.0),
        None,
        30_000
    ),
    page_spec!(
        "gausspage.inf",
        "as above, standard deviation of 10,000",
        "Gaussian walk, sd 10,000 pages (the run script's 'inf')",
        gauss_walk(10_000.0),
        None,
        30_000
    ),
];

/// Registered after LEBench's operations (group `variant`, chosen by id).
pub static VARIANTS: &[Spec] = &[SEQPAGE_THP];

/// 4.2BSD's rand(): a 31-bit linear congruential generator, seed 1.
pub struct BsdRand {
    x: u32,
}

impl BsdRand {
    pub fn new() -> BsdRand {
        BsdRand { x: 1 }
    }
    #[inline]
    pub fn rand(&mut self) -> u32 {
        self.x = self.x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        self.x & 0x7fff_ffff
    }
}

impl Default for BsdRand {
    fn default() -> Self {
        Self::new()
    }
}

/// random(): the additive feedback generator x[i] = x[i-3] + x[i-31] of 4.2BSD and glibc,
/// with glibc's srandom() seeding, so `random() % n` matches a C program on Linux.
pub struct BsdRandom {
    state: [u32; 31],
    f: usize,
    r: usize,
}

impl BsdRandom {
    pub fn new(seed: u32) -> BsdRandom {
        let mut state = [0u32; 31];
        state[0] = if seed == 0 { 1 } else { seed };
        for i in 1..31 {
            // Park-Miller 16807 step by Schrage's method, as glibc's srandom_r does.
            let prev = state[i - 1] as i32 as i64;
            let hi = prev / 127_773;
            let lo = prev % 127_773;
            let mut word = 16_807 * lo - 2_836 * hi;
            if word < 0 {
                word += 2_147_483_647;
            }
            state[i] = word as u32;
        }
        let mut g = BsdRandom { state, f: 3, r: 0 };
        for _ in 0..310 {
            g.random();
        }
        g
    }

    #[inline]
    pub fn random(&mut self) -> u32 {
        self.state[self.f] = self.state[self.f].wrapping_add(self.state[self.r]);
        let out = self.state[self.f] >> 1;
        self.f = if self.f + 1 == 31 { 0 } else { self.f + 1 };
        self.r = if self.r + 1 == 31 { 0 } else { self.r + 1 };
        out
    }
}

/// The appendix's gauss(sd, mean): Box-Muller over rnd(), in single precision as declared.
/// It uses the appendix's 3.14159, not PI, so the walk is the one 1984 took.
#[inline]
#[allow(clippy::approx_constant)]
pub fn gauss(rng: &mut BsdRand, sd: f32, mean: f32) -> f32 {
    let rnd = |g: &mut BsdRand| g.rand() as f32 / 0x7fff_ffff as f32;
    let qa = ((rnd(rng) as f64).ln() * -2.0).sqrt() as f32;
    let qb = (3.14159f64 * rnd(rng) as f64) as f32;
    (qa as f64 * (qb as f64).cos() * sd as f64 + mean as f64) as f32
}

/// Calls `touch(page)` for every page access of one program run, in the program's order.
/// The hot loop and the tests share it, so the tests know exactly which pages are touched.
#[inline]
pub fn walk(pattern: Pattern, npages: usize, mut touch: impl FnMut(usize)) {
    match pattern {
        Pattern::Seq { passes } => {
            for _ in 0..passes {
                for pn in 0..npages {
                    touch(pn);
                }
            }
        }
        Pattern::Rand { touches } => {
            let mut g = BsdRandom::new(1);
            for _ in 0..touches {
                touch(g.random() as usize % npages);
            }
        }
        Pattern::Gauss { touches, sd } => {
            let mut g = BsdRand::new();
            let n = npages as i64;
            let mut pn: i64 = 0;
            for _ in 0..touches {
                // `as` saturates: an infinite step (rnd() == 0) is out of range and redrawn.
                let mut delta = gauss(&mut g, sd, 0.0) as i64;
                // The appendix tests `pn + delta > npages`, which lets pn reach npages, one page
                // past the array; sysperf keeps the walk inside it.
                while pn + delta < 0 || pn + delta >= n {
                    delta = gauss(&mut g, sd, 0.0) as i64;
                }
                pn += delta;
                touch(pn as usize);
            }
        }
    }
}

struct Paging {
    pattern: Pattern,
    advice: Option<libc::c_int>,
    npages: usize,
    /// The region is left to the machine's transparent-huge-page policy (`seqpage-thp`);
    /// otherwise huge pages are turned off for it, so that a fault maps one page.
    machine_thp: bool,
}

/// One run of a Table 6 program per iteration over `npages` fresh anonymous pages, as the
/// core tests do; the `swap` suite runs it in a memory-limited cgroup with a swap area.
pub(crate) fn anonymous_walk(
    pattern: Pattern,
    advice: Option<libc::c_int>,
    npages: usize,
) -> Box<dyn Benchmark> {
    Box::new(Paging {
        pattern,
        advice,
        npages,
        machine_thp: false,
    })
}

impl Benchmark for Paging {
    fn setup(&mut self, _ctx: &Ctx, _iterations: u64) -> Result<(), BenchError> {
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let ps = sys::page_size();
        for _ in 0..iterations {
            let map = Mapping::anonymous(self.npages * ps).map_err(BenchError::sys("mmap"))?;
            if !self.machine_thp {
                map.advise(libc::MADV_NOHUGEPAGE)
                    .map_err(BenchError::sys("madvise(MADV_NOHUGEPAGE)"))?;
            }
            if let Some(advice) = self.advice {
                map.advise(advice).map_err(BenchError::sys("madvise"))?;
            }
            walk(self.pattern, self.npages, |pn| map.touch(pn * ps, 1));
            drop(map);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn distinct(p: Pattern) -> usize {
        let mut s = HashSet::new();
        walk(p, NPAGES, |pn| {
            assert!(pn < NPAGES);
            s.insert(pn);
        });
        s.len()
    }

    #[test]
    fn random_matches_glibc_srandom_1() {
        // The first values of glibc's random() after srandom(1) (and of rand(), which glibc
        // implements with random()).
        let mut g = BsdRandom::new(1);
        let got: Vec<u32> = (0..4).map(|_| g.random()).collect();
        assert_eq!(
            got,
            [1_804_289_383, 846_930_886, 1_681_692_777, 1_714_636_915]
        );
    }

    #[test]
    fn bsd_rand_is_the_4_2_lcg() {
        let mut g = BsdRand::new();
        assert_eq!(g.rand(), 1_103_527_590);
        assert_eq!(g.rand(), 377_401_575);
    }

    #[test]
    fn walks_touch_what_the_paper_says() {
        assert_eq!(distinct(SEQ), NPAGES);
        // 30,000 uniform draws over 7500 pages reach about 7500 * (1 - e^-4) = 7363 pages.
        let r = distinct(RAND);
        assert!((7200..=7500).contains(&r), "{r}");
        // A narrow walk stays within a few pages (the paper saw 8 faults for sd 1, 1 KiB pages)
        // while sd 10,000 is effectively uniform.
        assert!(
            distinct(gauss_walk(1.0)) < 200,
            "{}",
            distinct(gauss_walk(1.0))
        );
        let inf = distinct(gauss_walk(10_000.0));
        assert!(inf > 7000, "{inf}");
        // Wider steps reach more pages.
        assert!(distinct(gauss_walk(10.0)) < distinct(gauss_walk(80.0)));
    }

    #[test]
    fn touch_counts_match_the_declared_operations() {
        for s in SPECS {
            let b = (s.make)();
            drop(b);
        }
        let mut n = 0u64;
        walk(SEQ, NPAGES, |_| n += 1);
        assert_eq!(n, SEQ.touches(NPAGES));
        assert_eq!(SPECS[0].ops_per_iteration, n);
    }
}
