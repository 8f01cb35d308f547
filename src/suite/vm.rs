//! The `vm` suite: the paging tests of Table 6 (seqpage, randpage, gausspage and the `-v`
//! variants) as they were meant, with more pages than memory (Leffler, Karels and McKusick
//! 1984, §3.2.8, Tables 6-8, Appendix A).
//!
//! In 1984 a 7.3 MB array was paged on a VAX-11/750 with 4.5 MB of memory, of which 4.2BSD
//! left about 3.5 MB to programs: evicted pages went to the swap area and came back with a
//! major fault. The core suite's `paging` benchmarks run the same walks on memory that fits
//! today, so every fault there is a zero-fill minor fault. Here each trial runs in a cgroup
//! whose memory limit (made by the harness, see `harness::cgroup`) is smaller than the walk's
//! working set, so pages are evicted and re-touches fault again.
//!
//! Differences from 1984, and why:
//! - The pages are file-backed, not anonymous: a MAP_SHARED mapping of an unlinked file on a
//!   disk-backed file system (not tmpfs), written once in setup and dropped from the page
//!   cache (fdatasync, then POSIX_FADV_DONTNEED) so that the walk starts cold. With no swap
//!   anonymous pages cannot be evicted at all: the limit would call the OOM killer instead of
//!   the pager. (`--suite swap` pages anonymous memory as the paper did, to a zram swap area
//!   sysperf makes as root; this suite runs without one, as any user with a memory cgroup.)
//! - A touch is a read, where the paper's programs stored a 1: the pages stay clean, so an
//!   eviction is a free drop where 1984 wrote the page to swap first (and so a fault here
//!   costs one disk read, not a write and a read).
//! - Pages are 4 KiB, not the VAX's 1 KiB clusters; the walks keep the paper's page counts
//!   (7500 pages, 10 sequential passes, 30,000 random or Gaussian touches) and its random
//!   number generators (shared with `bench::paging`), so the 30 MB working set is four times
//!   the paper's 7.3 MB, and a Gaussian step of sd pages spans four times the bytes.
//! - Read-ahead and fault-around: a major fault on a file page reads a window of pages
//!   around it (128 KiB by default) and maps the cached neighbours (64 KiB) without further
//!   faults. madvise(MADV_SEQUENTIAL) and madvise(MADV_RANDOM) (the `-v` variants, for
//!   vadvise(VA_SEQL) and vadvise(VA_ANOM)) widen and switch off that read-ahead.
//!
//! x is the working set over the memory left to it (the cgroup limit less an allowance for the
//! worker's own heap and stack): 0.5 fits, 1 just fits, 2 is the paper's machine (7.3 MB over
//! about 3.5 MB), 4 is tighter. One curve per access pattern, so each of Table 7's rows becomes
//! a curve through the paper's own point. y is the wall time per page touch; the derived
//! figures give the page-fault service time of Table 8 (system time per major fault) and the
//! wall time per major fault for every point.

use super::{Axis, Point, SeriesSpec, Suite};
use crate::bench::paging::{walk, Pattern};
use crate::bench::{Benchmark, Ctx, Shape};
use crate::error::BenchError;
use crate::harness::cgroup;
use crate::model::{Derived, Series, YKind};
use crate::sys::{self, Mapping};
use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;

pub static SUITE: Suite = Suite {
    name: "vm",
    title: "Paging under memory pressure: seqpage, randpage, gausspage with more pages than memory",
    paper: "Leffler, Karels, McKusick, \"Measuring and Improving the Performance of 4.2BSD\" (1984), §3.2.8, Tables 6-8, Appendix A",
    series,
    preflight,
    derive,
};

/// Memory the cgroup allows beyond the working set's share: what the worker itself gets
/// charged (its heap, stack, page tables, the file's pages being written in setup and a little
/// kernel memory: about 270 KiB measured here as the peak charge of a walk whose pages all
/// fit, less the pages; with a margin, since a worker over its limit is OOM-killed). Its program text
/// is not charged to it: the parent, the same executable, had it cached already.
pub const WORKER_ALLOWANCE: u64 = 512 << 10;
/// Pages of the full sweep: 1 MiB of 4 KiB pages. Not the paper's 7500: a page read from
/// this VM's disk takes about 0.3 ms, every trial starts cold, the default read-around (128
/// KiB a fault) thrashes in a small cgroup (5 ms a touch for randpage at 512 pages, x = 4),
/// and the suite runs about 170 trials in its 3 minutes.
const PAGES: usize = 256;
/// Pages of the quick sweep: 1 MiB, with 512 KiB left for them.
const QUICK_PAGES: usize = 256;
/// The paper's touches per page for randpage and gausspage (30,000 over 7500 pages).
const TOUCHES_PER_PAGE: usize = 4;
/// Bytes written between flushes while the file is made in setup, so that its dirty page
/// cache never nears the cgroup's limit.
const FILL_CHUNK: usize = 256 << 10;

/// The working set over the memory left to it: (limit - allowance) = working set / x.
const RATIOS: &[f64] = &[0.5, 1.0, 2.0, 4.0];
const QUICK_RATIOS: &[f64] = &[2.0];

/// A point's parameter: the page count (low 32 bits) and the touches (high 32 bits).
pub fn param(npages: usize, touches: usize) -> u64 {
    ((touches as u64) << 32) | npages as u64
}

pub(crate) fn unparam(p: u64) -> (usize, usize) {
    ((p & 0xffff_ffff) as usize, (p >> 32) as usize)
}

/// Which of Table 6's walks a series runs.
#[derive(Clone, Copy)]
pub(crate) enum Walk {
    Seq,
    Rand,
    Gauss(f32),
}

impl Walk {
    /// The paper's walk over `npages` pages with `touches` touches.
    pub(crate) fn pattern(self, npages: usize, touches: usize) -> Pattern {
        match self {
            Walk::Seq => Pattern::Seq {
                passes: touches / npages.max(1),
            },
            Walk::Rand => Pattern::Rand { touches },
            Walk::Gauss(sd) => Pattern::Gauss { touches, sd },
        }
    }

    pub(crate) fn touches(self, npages: usize) -> usize {
        match self {
            Walk::Seq => 10 * npages,
            Walk::Rand | Walk::Gauss(_) => TOUCHES_PER_PAGE * npages,
        }
    }
}

fn points_for(walk: Walk, quick: bool) -> Vec<Point> {
    let npages = if quick { QUICK_PAGES } else { PAGES };
    let ws = (npages * sys::page_size()) as u64;
    let touches = walk.touches(npages);
    let ratios = if quick { QUICK_RATIOS } else { RATIOS };
    ratios
        .iter()
        .map(|&x| {
            let limit = (ws as f64 / x) as u64 + WORKER_ALLOWANCE;
            Point {
                label: Some(format!("{}x-limit-{}k", super::fmt_x(x), limit >> 10)),
                ops_per_iteration: touches as u64,
                // One iteration is one whole run of the paper's program from a cold cache;
                // the trials repeat it.
                iterations: Some(1),
                memory_limit_bytes: Some(limit),
                ..Point::new(x, param(npages, touches))
            }
        })
        .collect()
}

fn make(walk: Walk, advice: Option<libc::c_int>, p: u64) -> Box<dyn Benchmark> {
    let (npages, touches) = unparam(p);
    Box::new(FilePaging {
        pattern: walk.pattern(npages, touches),
        advice,
        npages,
        file: None,
    })
}

const X: Axis = Axis {
    name: "working set / memory",
    unit: "ratio",
    log: true,
};

/// The paper's machine on this x: the 7.3 MB array over the about 3.5 MB that 4.2BSD left of
/// the VAX's 4.5 MB ("the system used ... nearly 1 megabyte of physical memory").
const PAPER_X: f64 = 7.3 / 3.5;
const PAPER_SYSTEM: Option<&str> = Some(
    "4.2BSD on a VAX-11/750 with 4.5 MB (Table 7, real seconds over the run's touches; x = 7.3 MB array / about 3.5 MB left by the kernel)",
);

macro_rules! vm_series {
    ($name:ident, $id:literal, $curve:literal, $paper:literal, $today:literal, $walk:expr, $advice:expr, $real_s:expr, $touches:expr) => {
        static $name: SeriesSpec = SeriesSpec {
            id: $id,
            figure: "vm.paging",
            figure_title: "Paging under memory pressure (Tables 6-8): time per page touch",
            curve: $curve,
            paper: $paper,
            today: $today,
            x: X,
            y: YKind::CostNs,
            unit: "touch",
            shape: Shape::Single,
            points: |quick| points_for($walk, quick),
            make: |p| make($walk, $advice, p),
            paper_points: &[[PAPER_X, $real_s * 1e9 / $touches]],
            paper_system: PAPER_SYSTEM,
            printed: None,
        };
    };
}

vm_series!(
    SEQ,
    "vm.seqpage",
    "seqpage",
    "Table 6 seqpage: sequentially touch pages, 10 iterations (Table 7, 4.2BSD: 1126 s real, 12.8 user, 213.0 system, 17113 faults)",
    "10 passes over 256 pages (the paper had 7500: a cold disk read here takes 0.3 ms) of an unlinked file mapped MAP_SHARED, read-touched, in a cgroup limited below the working set",
    Walk::Seq,
    None,
    1126.0,
    75_000.0
);
vm_series!(
    SEQ_V,
    "vm.seqpage-v",
    "seqpage-v",
    "Table 6 seqpage-v: as seqpage, but first make vadvise(2) call (Table 7, 4.2BSD: 812 s real, 5.3 user, 237.7 system, 8351 faults)",
    "as vm.seqpage after madvise(MADV_SEQUENTIAL) (for vadvise(VA_SEQL)): aggressive read-ahead, pages behind dropped early",
    Walk::Seq,
    Some(libc::MADV_SEQUENTIAL),
    812.0,
    75_000.0
);
vm_series!(
    RAND,
    "vm.randpage",
    "randpage",
    "Table 6 randpage: touch random page 30,000 times (Table 7, 4.2BSD: 569 s real, 7.6 user, 77.2 system, 9776 faults; Table 8 PFST printed 789)",
    "4 touches per page (the paper's 30,000 over 7500) at random() % 256 file-backed pages in a cgroup limited below the working set",
    Walk::Rand,
    None,
    569.0,
    30_000.0
);
vm_series!(
    RAND_V,
    "vm.randpage-v",
    "randpage-v",
    "Table 6 randpage-v: as randpage, but first make vadvise call (Table 7, 4.2BSD: 562 s real, 7.3 user, 77.5 system, 9852 faults; Table 8 PFST printed 786)",
    "as vm.randpage after madvise(MADV_RANDOM) (for vadvise(VA_ANOM)): no read-around, one page read per fault",
    Walk::Rand,
    Some(libc::MADV_RANDOM),
    562.0,
    30_000.0
);
vm_series!(
    GAUSS1,
    "vm.gausspage.1",
    "gausspage.1",
    "Table 6 gausspage.1: 30,000 Gaussian accesses, standard deviation of 1 (Table 7, 4.2BSD: 24 s real, 23.8 user, 0.8 system, 8 faults)",
    "the appendix's Gaussian walk, sd 1 page, 4 touches per page over 256 file-backed pages in a limited cgroup",
    Walk::Gauss(1.0),
    None,
    24.0,
    30_000.0
);
vm_series!(
    GAUSS10,
    "vm.gausspage.10",
    "gausspage.10",
    "Table 6 gausspage.10: 30,000 Gaussian accesses, standard deviation of 10 (Table 7, 4.2BSD: 26 s real, 23.0 user, 3.6 system, 2 faults)",
    "the appendix's Gaussian walk, sd 10 pages, 4 touches per page over 256 file-backed pages in a limited cgroup",
    Walk::Gauss(10.0),
    None,
    26.0,
    30_000.0
);
vm_series!(
    GAUSS30,
    "vm.gausspage.30",
    "gausspage.30",
    "Table 6 gausspage.30: as above, standard deviation of 30 (Table 7, 4.2BSD: 33 s real, 24.8 user, 8.9 system, 2 faults)",
    "the appendix's Gaussian walk, sd 30 pages, 4 touches per page over 256 file-backed pages in a limited cgroup",
    Walk::Gauss(30.0),
    None,
    33.0,
    30_000.0
);
vm_series!(
    GAUSS40,
    "vm.gausspage.40",
    "gausspage.40",
    "Table 6 gausspage.40: as above, standard deviation of 40 (Table 7, 4.2BSD: 81 s real, 25.0 user, 13.6 system, 260 faults)",
    "the appendix's Gaussian walk, sd 40 pages, 4 touches per page over 256 file-backed pages in a limited cgroup",
    Walk::Gauss(40.0),
    None,
    81.0,
    30_000.0
);
vm_series!(
    GAUSS50,
    "vm.gausspage.50",
    "gausspage.50",
    "Table 6 gausspage.50: as above, standard deviation of 50 (Table 7, 4.2BSD: 175 s real, 26.2 user, 26.3 system, 1851 faults)",
    "the appendix's Gaussian walk, sd 50 pages, 4 touches per page over 256 file-backed pages in a limited cgroup",
    Walk::Gauss(50.0),
    None,
    175.0,
    30_000.0
);

vm_series!(
    GAUSS60,
    "vm.gausspage.60",
    "gausspage.60",
    "Table 6 gausspage.60: as above, standard deviation of 60 (Table 7, 4.2BSD: 234 s real, 26.7 user, 36.0 system, 3177 faults)",
    "the appendix's Gaussian walk, sd 60 pages, 4 touches per page over 256 file-backed pages in a limited cgroup",
    Walk::Gauss(60.0),
    None,
    234.0,
    30_000.0
);
vm_series!(
    GAUSS80,
    "vm.gausspage.80",
    "gausspage.80",
    "Table 6 gausspage.80: as above, standard deviation of 80 (Table 7, 4.2BSD: 329 s real, 27.9 user, 52.0 system, 5105 faults)",
    "the appendix's Gaussian walk, sd 80 pages, 4 touches per page over 256 file-backed pages in a limited cgroup",
    Walk::Gauss(80.0),
    None,
    329.0,
    30_000.0
);
vm_series!(
    GAUSSINF,
    "vm.gausspage.inf",
    "gausspage.inf",
    "Table 6 gausspage.inf: as above, standard deviation of 10,000 (the run script's inf) (Table 7, 4.2BSD: 621 s real, 85.6 user, 81.5 system, 9650 faults)",
    "the appendix's Gaussian walk, sd 10,000 pages (the run script's inf: about uniform over these 256), 4 touches per page over 256 file-backed pages in a limited cgroup",
    Walk::Gauss(10_000.0),
    None,
    621.0,
    30_000.0
);

/// All twelve rows of Table 7, in its order.
fn series() -> Vec<&'static SeriesSpec> {
    vec![
        &SEQ, &SEQ_V, &RAND, &RAND_V, &GAUSS1, &GAUSS10, &GAUSS30, &GAUSS40, &GAUSS50, &GAUSS60,
        &GAUSS80, &GAUSSINF,
    ]
}

/// Whether /proc/swaps lists any swap area (its first line is a header).
fn has_swap() -> bool {
    std::fs::read_to_string("/proc/swaps")
        .is_ok_and(|s| s.lines().skip(1).any(|l| !l.trim().is_empty()))
}

fn preflight() -> Result<Vec<String>, String> {
    let at = cgroup::probe(64 << 20).map_err(|e| e.to_string())?;
    let (dir, fs) = super::disk_dir()?;
    let mut notes = vec![
        at,
        format!(
            "file-backed pages in an unlinked file in {} ({fs})",
            dir.display()
        ),
    ];
    if !has_swap() {
        notes.push("no swap: file-backed pages (anonymous ones could not be paged out)".into());
    }
    Ok(notes)
}

/// One run of a Table 6 program over file-backed pages.
struct FilePaging {
    pattern: Pattern,
    advice: Option<libc::c_int>,
    npages: usize,
    file: Option<File>,
}

impl Benchmark for FilePaging {
    fn setup(&mut self, _ctx: &Ctx, _iterations: u64) -> Result<(), BenchError> {
        let (dir, _) = super::disk_dir().map_err(BenchError::Protocol)?;
        let mut f = sys::unlinked_file(&dir).map_err(BenchError::sys("creating the paged file"))?;
        let len = self.npages * sys::page_size();
        // Written, not truncated to size, so that every block exists on the disk and a fault
        // reads it back (a hole would be a zero-fill); flushed and dropped from the cache as it
        // goes, so the walk starts cold and the dirty pages never fill the cgroup.
        let chunk: Vec<u8> = (0..FILL_CHUNK).map(|i| (i / 4096) as u8 | 1).collect();
        let mut done = 0;
        while done < len {
            let n = FILL_CHUNK.min(len - done);
            f.write_all(&chunk[..n])
                .map_err(BenchError::sys("writing the paged file"))?;
            done += n;
            // Dirty pages cannot be reclaimed until written: a larger backlog under a small
            // limit calls the OOM killer.
            f.sync_data().map_err(BenchError::sys("fdatasync"))?;
            sys::fadvise_dontneed(f.as_raw_fd(), 0, 0).map_err(BenchError::sys("posix_fadvise"))?;
        }
        self.file = Some(f);
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let ps = sys::page_size();
        let fd = match &self.file {
            Some(f) => f.as_raw_fd(),
            None => return Err(BenchError::Protocol("run before setup".into())),
        };
        for i in 0..iterations {
            if i > 0 {
                // Every run of the program starts with nothing cached, as the first does.
                sys::fadvise_dontneed(fd, 0, 0).map_err(BenchError::sys("posix_fadvise"))?;
            }
            let map =
                Mapping::shared_file(fd, self.npages * ps).map_err(BenchError::sys("mmap"))?;
            if let Some(advice) = self.advice {
                map.advise(advice).map_err(BenchError::sys("madvise"))?;
            }
            let mut sum = 0u8;
            walk(self.pattern, self.npages, |pn| {
                sum = sum.wrapping_add(map.peek(pn * ps))
            });
            std::hint::black_box(sum);
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.file = None;
        Ok(())
    }
}

/// Per point: the page-fault service time as Table 8 defined it (system time per fault), with
/// Table 8's printed figures beside it (about a tenth of Table 7's system seconds over faults:
/// 77.2 s / 9776 = 7.9 ms for randpage on 4.2BSD, printed as 789 us), and the wall time per
/// major fault, which today also holds the disk wait the system time no longer includes.
fn derive(series: &[Series]) -> Vec<Derived> {
    let mut out = Vec::new();
    for s in series {
        for p in &s.points {
            let Some(sum) = &p.result.summary else {
                continue;
            };
            let majflt = sum.majflt_per_op;
            if majflt <= 0.0 {
                continue;
            }
            let id = &p.result.id;
            let sys_ns = sum.sys_ns_per_op.median;
            let wall_ns = sum.wall_ns_per_op.median;
            out.push(Derived {
                na: None,
                name: format!("page-fault service time ({id})"),
                value: sys_ns / majflt / 1000.0,
                unit: "us/fault".into(),
                formula: format!(
                    "system time / major faults = {sys_ns:.1} ns / {majflt:.4} major faults per touch (Table 8's definition; {:.4} minor faults per touch besides){}",
                    sum.minflt_per_op,
                    crate::derived::table8_beside(s.id.trim_start_matches("vm."))
                ),
            });
            out.push(Derived {
                na: None,
                name: format!("wall time per major fault ({id})"),
                value: wall_ns / majflt / 1000.0,
                unit: "us/fault".into(),
                formula: format!(
                    "wall time / major faults = {wall_ns:.1} ns / {majflt:.4} major faults per touch (includes the disk wait and the touches that hit)"
                ),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_twelve_rows_of_table_7_with_their_published_points() {
        let reference = crate::reference::find("vax750-4.2bsd").unwrap().unwrap();
        let paging: Vec<_> = reference
            .results
            .iter()
            .filter(|r| {
                crate::bench::find(&r.id).is_some_and(|s| s.group == crate::bench::Group::Paging)
            })
            .collect();
        assert_eq!(paging.len(), 12);
        let ours = series();
        assert_eq!(ours.len(), 12);
        for (s, r) in ours.iter().zip(&paging) {
            assert_eq!(s.id, format!("vm.{}", r.id), "Table 7's order");
            let per_touch = r.summary.as_ref().unwrap().wall_ns_per_op.median;
            let [[x, y]] = s.paper_points else {
                panic!("{}: one published point", s.id)
            };
            assert_eq!(*x, PAPER_X);
            assert!(
                (*y / per_touch - 1.0).abs() < 1e-9,
                "{}: {y} vs {per_touch}",
                s.id
            );
        }
    }

    #[test]
    fn params_round_trip_and_points_limit_below_the_working_set() {
        assert_eq!(unparam(param(7500, 30_000)), (7500, 30_000));
        let ps = sys::page_size() as u64;
        for s in series() {
            for quick in [true, false] {
                for p in (s.points)(quick) {
                    let (npages, touches) = unparam(p.param);
                    assert_eq!(p.ops_per_iteration, touches as u64, "{}", s.id);
                    let ws = npages as u64 * ps;
                    let limit = p.memory_limit_bytes.unwrap();
                    let left = (limit - WORKER_ALLOWANCE) as f64;
                    assert!((ws as f64 / left - p.x).abs() < 1e-6, "{} {}", s.id, p.x);
                    if p.x > 1.0 {
                        assert!(limit - WORKER_ALLOWANCE < ws, "{}", s.id);
                    }
                }
            }
        }
    }

    #[test]
    fn the_paged_file_lives_on_a_disk_and_has_no_name() {
        let (dir, fs) = crate::suite::disk_dir().unwrap();
        let m = sys::fs_type(&dir).unwrap();
        assert!(
            m != crate::suite::TMPFS_MAGIC && m != crate::suite::RAMFS_MAGIC,
            "{fs}"
        );
        let f = sys::unlinked_file(&dir).unwrap();
        let link = std::fs::read_link(format!("/proc/self/fd/{}", f.as_raw_fd())).unwrap();
        assert!(
            link.to_string_lossy().contains("(deleted)") || !link.exists(),
            "{link:?}"
        );
    }

    #[test]
    fn a_run_touches_every_page_of_the_walk_from_the_file() {
        // Unlimited: sequential reads of a cold file fault each page in (fault-around maps
        // cached neighbours, so count faults of either kind, at least one per 16 pages).
        let mut b = make(Walk::Seq, None, param(256, 256));
        let ctx = Ctx::default();
        b.setup(&ctx, 1).unwrap();
        let u0 = sys::usage_self_and_children();
        b.run(1).unwrap();
        let u1 = sys::usage_self_and_children();
        b.teardown().unwrap();
        let faults = (u1.minflt + u1.majflt) - (u0.minflt + u0.majflt);
        assert!(faults >= 256 / 16, "{faults} faults for 256 cold pages");
    }

    #[test]
    fn derive_gives_table_8s_service_time_per_point() {
        use crate::model::{BenchResult, Estimate, SeriesPoint, Summary};
        let est = |v: f64| Estimate::single(v, 1.0, 1);
        let summary = Summary {
            minflt_per_op: 0.1,
            majflt_per_op: 0.5,
            csw_per_op: 0.5,
            nvcsw_per_op: 0.5,
            ..Summary::of_times(est(50_000.0), est(100.0), est(2_000.0))
        };
        let result = BenchResult {
            id: "vm.randpage@2x".into(),
            group: "vm".into(),
            ops_per_iteration: 1,
            paper_count: 1,
            unit: "touch".into(),
            placement: "same".into(),
            cpus: Vec::new(),
            trials: Vec::new(),
            summary: Some(summary),
            error: None,
        };
        let mut s = super::super::series_from(&RAND, Vec::new(), None);
        s.points.push(SeriesPoint {
            x: 2.0,
            label: None,
            bytes_per_op: 0.0,
            y: None,
            result,
        });
        let d = derive(&[s]);
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].name, "page-fault service time (vm.randpage@2x)");
        assert!((d[0].value - 4.0).abs() < 1e-9, "{}", d[0].value);
        // Table 8's printed figures beside it.
        assert!(
            d[0].formula.contains("4.1BSD 791, 4.2BSD 789 us"),
            "{}",
            d[0].formula
        );
        assert!((d[1].value - 100.0).abs() < 1e-9, "{}", d[1].value);
    }
}
