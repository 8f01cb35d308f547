//! The `mem` suite: lmbench's memory-hierarchy staples (issue #45 item 8), measured by the
//! harness like every other point: load latency against working-set size and stride
//! (`lat_mem_rd`), and the bandwidth of reading, writing, copying and zeroing against buffer
//! size (`bw_mem rd|wr|cp|bcopy|bzero`), with the cache levels found in the latency curve
//! named beside the ones the machine reports (sysfs).
//!
//! Latency, as lmbench's `src/lat_mem_rd.c` and `src/lib_mem.c`: a circular chain of
//! pointers through SIZE bytes, each load taking its address from the one before (`p = *p`),
//! so loads cannot overlap and one load's time is the latency of the level that holds SIZE.
//! - `mem.lat-stride{16,64,128,512}`: lmbench's default walk (`stride_initialize`): word i
//!   points to word i + STRIDE, the last back to the first. lmbench's script runs it at
//!   strides 16 to 1024; a forward stride is what hardware prefetchers follow, which lmbench
//!   says itself ("It should be easily and correctly predicted by any decent hardware prefetch
//!   algorithm"): so past a cache the curve rises less than the level's latency, and a stride
//!   below the line size (16, 64 B lines) pays one miss per line for several loads.
//! - `mem.lat-random`: lmbench's `-t` walk (`thrash_initialize`, the script's `lat_mem_rd -t
//!   16`): the pages in a random order, each load on the next page of that order, the word on
//!   the page chosen by lmbench's bit-reversed order, so no prefetcher predicts it. The cache
//!   sizes are read from this curve. Where SIZE is not a multiple of the page, lmbench chains
//!   the words in bit-reversed order, which for a count that is not a power of two repeats
//!   words and closes the chain early; this chains them in a random order instead.
//!   lmbench also takes a size's pages from a permutation of all the pages of the run's
//!   largest size, in one malloc of it (`lib_mem.c` `base_initialize`: `nmpages` from
//!   `maxlen`), so in `lat_mem_rd -t 64 16` a 256 KiB chain is 64 pages scattered over
//!   64 MiB, which transparent huge pages back with 2 MiB pages; here a chain of SIZE is a
//!   mapping of SIZE, 4 KiB pages below 2 MiB, so this curve rises where the machine's TLB
//!   for 4 KiB pages runs out (README, Accuracy: 9.6-10.8 ns against 5.2-5.6 ns for
//!   lmbench's own 256 KiB point with THP disabled for it and not). And lat_mem_rd keeps the
//!   least of its repetitions (`save_minimum()`), the harness the median of its trials, which
//!   at a rise of the curve, where trials spread, reads higher.
//!
//! One operation is one load; an iteration follows the chain for at least [`MIN_LOADS`] loads
//! (a whole lap at least), continuing where the last stopped as lmbench's `state->p` does.
//! The chain is built and walked once in setup, outside the timed region.
//!
//! Bandwidth, as `src/bw_mem.c`: one operation is one pass over a buffer of SIZE bytes,
//! counted as SIZE bytes moved (lmbench's `adjusted_bandwidth(time, nbytes, ...)`, whose MB
//! are 10^6 bytes). `rd` adds every fourth 32-bit word (a 4-byte load every 16 bytes, so every
//! cache line is read), `wr` stores every fourth word, `cp` copies every fourth word to a
//! second buffer, in 512-byte chunks as lmbench's unrolled loops; `bcopy` and `bzero` call the
//! C library's memcpy and memset over the whole buffer. Both buffers are page-aligned and
//! written once in setup (lmbench's `valloc` and `bzero`).
//!
//! What it is not: the TLB (`tlb`), memory-level parallelism (`par_mem`) and STREAM are not
//! here; the machine's caches are read from sysfs, not probed.

use super::{Axis, Point, SeriesSpec, Suite};
use crate::bench::{Benchmark, Ctx, Shape};
use crate::error::BenchError;
use crate::model::{Derived, Series, YKind};
use crate::sys::{self, Mapping};
use std::hint::black_box;

pub static SUITE: Suite = Suite {
    name: "mem",
    title: "Memory hierarchy: load latency against working set and stride, bandwidth against size",
    paper: "lmbench (McVoy and Staelin, \"lmbench: Portable tools for performance analysis\", \
            USENIX 1996): lat_mem_rd [-t] SIZE STRIDE... (src/lat_mem_rd.c, src/lib_mem.c) and \
            bw_mem SIZE rd|wr|cp|bcopy|bzero (src/bw_mem.c), as lmbench's scripts/lmbench runs \
            them; the cache levels found beside sysfs's",
    series,
    preflight,
    derive,
};

/// The fewest loads one iteration of a latency point makes: a lap of a small chain is a few
/// loads, which the harness's per-iteration overhead would swamp (lmbench's loop makes at
/// least 100).
pub const MIN_LOADS: u64 = 1000;

/// How a chain runs through its SIZE bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Walk {
    /// lmbench's default: word i to word i + stride.
    Stride(usize),
    /// lmbench's `-t`: page by page in a random order, the word on each page rotating.
    Thrash(usize),
}

impl Walk {
    fn line(self) -> usize {
        match self {
            Walk::Stride(s) | Walk::Thrash(s) => s,
        }
    }
}

/// Loads one iteration of a latency point makes.
pub fn loads_per_iteration(size: usize, line: usize) -> u64 {
    ((size / line) as u64).max(MIN_LOADS)
}

/// Working-set sizes: every power of two from 1 KiB to 256 MiB and the size half-way between
/// (x 1.5), lmbench's `step()` thinned to two points per doubling. Quick: 16 KiB (L1 on most
/// machines) and 64 MiB (beyond most last-level caches).
pub fn lat_sizes(quick: bool) -> Vec<usize> {
    if quick {
        return vec![16 << 10, 64 << 20];
    }
    let mut v = Vec::new();
    for k in 10..=28 {
        v.push(1usize << k);
        if k < 28 {
            v.push(3usize << (k - 1));
        }
    }
    v
}

fn lat_points(walk: Walk, quick: bool) -> Vec<Point> {
    lat_sizes(quick)
        .into_iter()
        .filter(|&s| s >= 2 * walk.line())
        .map(|s| Point {
            ops_per_iteration: loads_per_iteration(s, walk.line()),
            ..Point::new(s as f64, s as u64)
        })
        .collect()
}

/// Buffer sizes of the bandwidth curves: 4 KiB to 256 MiB by fours. Quick: 16 KiB and 64 MiB.
pub fn bw_sizes(quick: bool) -> Vec<usize> {
    if quick {
        return vec![16 << 10, 64 << 20];
    }
    (0..=8).map(|k| 4096usize << (2 * k)).collect()
}

fn bw_points(quick: bool) -> Vec<Point> {
    bw_sizes(quick)
        .into_iter()
        .map(|s| Point {
            bytes_per_op: s as f64,
            ..Point::new(s as f64, s as u64)
        })
        .collect()
}

const SIZE_AXIS: Axis = Axis {
    name: "working set",
    unit: "bytes",
    log: true,
};

const LAT_FIG: &str = "mem.latency";
const LAT_TITLE: &str = "Load latency against working set (lmbench lat_mem_rd)";
const BW_FIG: &str = "mem.bandwidth";
const BW_TITLE: &str = "Memory bandwidth against buffer size (lmbench bw_mem)";

macro_rules! lat_series {
    ($name:ident, $id:literal, $curve:literal, $paper:literal, $today:literal, $walk:expr) => {
        static $name: SeriesSpec = SeriesSpec {
            printed: None,
            id: $id,
            figure: LAT_FIG,
            figure_title: LAT_TITLE,
            curve: $curve,
            paper: $paper,
            today: $today,
            x: SIZE_AXIS,
            y: YKind::CostNs,
            unit: "load",
            shape: Shape::Single,
            points: |quick| lat_points($walk, quick),
            make: |p| Box::new(Chase::new($walk, p as usize)),
            paper_points: &[],
            paper_system: None,
        };
    };
}

lat_series!(
    LAT16,
    "mem.lat-stride16",
    "stride 16 B",
    "lmbench lat_mem_rd SIZE 16 (scripts/lmbench: strides 16 to 1024)",
    "a pointer chain through SIZE bytes, each word pointing 16 bytes on (4 loads per 64-byte line)",
    Walk::Stride(16)
);
lat_series!(
    LAT64,
    "mem.lat-stride64",
    "stride 64 B",
    "lmbench lat_mem_rd SIZE 64 (its default stride on a 64-bit machine: 512 / sizeof(char *))",
    "a pointer chain through SIZE bytes, each word pointing 64 bytes (one line) on",
    Walk::Stride(64)
);
lat_series!(
    LAT128,
    "mem.lat-stride128",
    "stride 128 B",
    "lmbench lat_mem_rd SIZE 128 (scripts/lmbench's FASTMEM stride)",
    "a pointer chain through SIZE bytes, each word pointing 128 bytes on",
    Walk::Stride(128)
);
lat_series!(
    LAT512,
    "mem.lat-stride512",
    "stride 512 B",
    "lmbench lat_mem_rd SIZE 512 (scripts/lmbench: strides 16 to 1024)",
    "a pointer chain through SIZE bytes, each word pointing 512 bytes on",
    Walk::Stride(512)
);
lat_series!(LATRAND, "mem.lat-random", "random pages (-t)", "lmbench lat_mem_rd -t SIZE 16 (scripts/lmbench's \"Random load latency\")", "a pointer chain through SIZE bytes visiting the pages in a random order, the next page at every load, the word on it in lmbench's bit-reversed order; the cache sizes are read from this curve", Walk::Thrash(16));

macro_rules! bw_series {
    ($name:ident, $id:literal, $curve:literal, $paper:literal, $today:literal, $op:expr) => {
        static $name: SeriesSpec = SeriesSpec {
            printed: None,
            id: $id,
            figure: BW_FIG,
            figure_title: BW_TITLE,
            curve: $curve,
            paper: $paper,
            today: $today,
            x: SIZE_AXIS,
            y: YKind::BytesPerSec,
            unit: "pass",
            shape: Shape::Single,
            points: bw_points,
            make: |p| Box::new(Bandwidth::new($op, p as usize)),
            paper_points: &[],
            paper_system: None,
        };
    };
}

bw_series!(
    BW_RD,
    "mem.bw-rd",
    "rd",
    "lmbench bw_mem SIZE rd: 4-byte reads, one every 16 bytes, 512-byte chunks",
    "adds every fourth 32-bit word of the buffer, 512 bytes a chunk; SIZE bytes a pass",
    Op::Rd
);
bw_series!(
    BW_WR,
    "mem.bw-wr",
    "wr",
    "lmbench bw_mem SIZE wr: 4-byte writes, one every 16 bytes, 512-byte chunks",
    "stores 1 into every fourth 32-bit word of the buffer; SIZE bytes a pass",
    Op::Wr
);
bw_series!(BW_CP, "mem.bw-cp", "cp", "lmbench bw_mem SIZE cp: 4-byte copies, one every 16 bytes, to a second buffer", "copies every fourth 32-bit word to a second buffer; SIZE bytes a pass, as lmbench counts it (not 2 x SIZE)", Op::Cp);
bw_series!(
    BW_BCOPY,
    "mem.bw-bcopy",
    "bcopy",
    "lmbench bw_mem SIZE bcopy: the C library's copy of the whole buffer",
    "the C library's memcpy of SIZE bytes to a second buffer (mbw's MEMCPY test does the same)",
    Op::Bcopy
);
bw_series!(
    BW_BZERO,
    "mem.bw-bzero",
    "bzero",
    "lmbench bw_mem SIZE bzero: the C library's bzero of the whole buffer",
    "the C library's memset of SIZE bytes to 0",
    Op::Bzero
);

fn series() -> Vec<&'static SeriesSpec> {
    vec![
        &LAT16, &LAT64, &LAT128, &LAT512, &LATRAND, &BW_RD, &BW_WR, &BW_CP, &BW_BCOPY, &BW_BZERO,
    ]
}

/// A small deterministic generator (xorshift64*) for the chain's page order: each point's
/// chain is the same from run to run, so that runs compare (lmbench seeds with its pid).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// A random permutation of 0..n (Fisher-Yates).
    fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut v: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
        v
    }
}

/// lmbench's `words_initialize(max, scale)`: i with its bits reversed (over the bits of
/// max / 2), times scale. A permutation when max is a power of two.
fn bit_reversed(max: usize, scale: usize) -> Vec<usize> {
    let nbits = (usize::BITS - (max >> 1).leading_zeros()) as usize;
    (0..max)
        .map(|i| {
            let mut r = 0;
            for j in 0..nbits {
                if i & (1 << j) != 0 {
                    r |= 1 << (nbits - j - 1);
                }
            }
            r * scale
        })
        .collect()
}

/// The links of a chain through `size` bytes: (from, to) byte offsets, and where to start.
/// Every link's `from` is a distinct word and the links form one cycle through all of them.
pub fn chain(walk: Walk, size: usize, page: usize) -> (Vec<(usize, usize)>, usize) {
    let line = walk.line();
    let n = size / line;
    match walk {
        Walk::Stride(_) => {
            let links = (0..n).map(|i| (i * line, ((i + 1) % n) * line)).collect();
            (links, 0)
        }
        Walk::Thrash(_) if size.is_multiple_of(page) => {
            // lib_mem.c's thrash_initialize: page i's word words[(i + j) % nw] points to page
            // i+1's word words[(i + j + 1) % nw]; the last page wraps to the first.
            let npages = size / page;
            let nw = page / line;
            let words = bit_reversed(nw, line);
            let pages: Vec<usize> = Rng(0x9e37_79b9_7f4a_7c15 ^ size as u64)
                .permutation(npages)
                .into_iter()
                .map(|p| p * page)
                .collect();
            let mut links = Vec::with_capacity(n);
            for i in 0..npages {
                let (cur, next) = (pages[i], pages[(i + 1) % npages]);
                for j in 0..nw {
                    let to_word = if i + 1 < npages { i + j + 1 } else { j + 1 };
                    links.push((cur + words[(i + j) % nw], next + words[to_word % nw]));
                }
            }
            (links, pages[0])
        }
        Walk::Thrash(_) => {
            // Less than a page, or not a multiple of it: the words in a random order (see the
            // file's comment for why not lmbench's bit-reversed one here).
            let order = Rng(0x9e37_79b9_7f4a_7c15 ^ size as u64).permutation(n);
            let links = (0..n)
                .map(|i| (order[i] * line, order[(i + 1) % n] * line))
                .collect();
            (links, order[0] * line)
        }
    }
}

/// One latency point: a chain through `size` bytes, walked `loads` loads an iteration.
pub struct Chase {
    walk: Walk,
    size: usize,
    map: Option<Mapping>,
    at: usize,
}

impl Chase {
    pub fn new(walk: Walk, size: usize) -> Chase {
        Chase {
            walk,
            size,
            map: None,
            at: 0,
        }
    }
}

impl Benchmark for Chase {
    fn setup(&mut self, _: &Ctx, _: u64) -> Result<(), BenchError> {
        if self.size < 2 * self.walk.line() {
            return Err(BenchError::Protocol(format!(
                "a chain of {} bytes at {} bytes a word is too short",
                self.size,
                self.walk.line()
            )));
        }
        let map = Mapping::anonymous(self.size).map_err(BenchError::sys("mmap"))?;
        let (links, start) = chain(self.walk, self.size, sys::page_size());
        for &(from, to) in &links {
            map.link(from, to);
        }
        // One lap untimed, as lib_mem.c's initialisers do: the pages are faulted in and the
        // caches hold what they can of the chain before the clock starts.
        self.at = map.chase(start, links.len() as u64);
        self.map = Some(map);
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let map = self
            .map
            .as_ref()
            .ok_or_else(|| BenchError::Protocol("no chain".into()))?;
        let loads = loads_per_iteration(self.size, self.walk.line());
        self.at = black_box(map.chase(self.at, loads.saturating_mul(iterations)));
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.map = None;
        Ok(())
    }
}

/// What a bandwidth point does to its buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Rd,
    Wr,
    Cp,
    Bcopy,
    Bzero,
}

/// 32-bit words in one of bw_mem's 512-byte chunks.
const CHUNK_WORDS: usize = 128;

/// One bandwidth point: `op` over `size` bytes, one pass an iteration.
pub struct Bandwidth {
    op: Op,
    size: usize,
    src: Option<Mapping>,
    dst: Option<Mapping>,
    sum: u32,
}

impl Bandwidth {
    pub fn new(op: Op, size: usize) -> Bandwidth {
        Bandwidth {
            op,
            size,
            src: None,
            dst: None,
            sum: 0,
        }
    }

    /// The sum of the words `rd` read in its last pass (a test checks it saw every chunk).
    pub fn sum(&self) -> u32 {
        self.sum
    }
}

/// bw_mem's `rd`: the sum of every fourth word, chunk by chunk. lmbench adds a chunk's 32
/// words in one expression (`sum += p[0]+p[4]+...+p[124]`), which its compiler adds as
/// independent partial sums; eight accumulators do the same here. One running sum is a chain
/// of dependent adds, bound by their latency where the words come from the cache: 39-50 GB/s
/// against 66-104 GB/s with eight at 16 KiB on this VM (lmbench 77 GB/s).
fn read_pass(w: &[u32]) -> u32 {
    let mut acc = [0u32; 8];
    for c in w.chunks_exact(CHUNK_WORDS) {
        for part in c.chunks_exact(32) {
            for (i, a) in acc.iter_mut().enumerate() {
                *a = a.wrapping_add(part[i * 4]);
            }
        }
    }
    acc.iter().fold(0, |s, a| s.wrapping_add(*a))
}

impl Benchmark for Bandwidth {
    fn setup(&mut self, _: &Ctx, _: u64) -> Result<(), BenchError> {
        if self.size < CHUNK_WORDS * 4 || !self.size.is_multiple_of(CHUNK_WORDS * 4) {
            return Err(BenchError::Protocol(format!(
                "a buffer of {} bytes is not a whole number of 512-byte chunks",
                self.size
            )));
        }
        let mut src = Mapping::anonymous(self.size).map_err(BenchError::sys("mmap"))?;
        // Written once so every page is there before the clock starts (lmbench bzero's it);
        // ones rather than zeros, so that rd's sum shows what it read.
        src.words_mut().fill(1);
        if matches!(self.op, Op::Cp | Op::Bcopy) {
            let mut dst = Mapping::anonymous(self.size).map_err(BenchError::sys("mmap"))?;
            dst.words_mut().fill(0);
            self.dst = Some(dst);
        }
        self.src = Some(src);
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let src = self
            .src
            .as_mut()
            .ok_or_else(|| BenchError::Protocol("no buffer".into()))?
            .words_mut();
        match self.op {
            Op::Rd => {
                for _ in 0..iterations {
                    self.sum = black_box(read_pass(black_box(&*src)));
                }
            }
            Op::Wr => {
                for _ in 0..iterations {
                    for c in black_box(&mut *src).chunks_exact_mut(CHUNK_WORDS) {
                        for k in (0..CHUNK_WORDS).step_by(4) {
                            c[k] = 1;
                        }
                    }
                }
            }
            Op::Bzero => {
                for _ in 0..iterations {
                    black_box(&mut *src).fill(0);
                }
            }
            Op::Cp | Op::Bcopy => {
                let dst = self
                    .dst
                    .as_mut()
                    .ok_or_else(|| BenchError::Protocol("no second buffer".into()))?
                    .words_mut();
                for _ in 0..iterations {
                    let d = black_box(&mut *dst);
                    if self.op == Op::Bcopy {
                        d.copy_from_slice(src);
                        continue;
                    }
                    for (dc, sc) in d
                        .chunks_exact_mut(CHUNK_WORDS)
                        .zip(src.chunks_exact(CHUNK_WORDS))
                    {
                        for k in (0..CHUNK_WORDS).step_by(4) {
                            dc[k] = sc[k];
                        }
                    }
                }
            }
        }
        black_box(&*src);
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.src = None;
        self.dst = None;
        Ok(())
    }
}

/// One cache level the machine reports: level, type and size as sysfs spells them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysCache {
    pub level: u32,
    pub kind: String,
    pub size: String,
}

/// cpu0's caches from /sys/devices/system/cpu/cpu0/cache/index*/{level,type,size}, by level
/// (empty where sysfs does not say).
pub fn sysfs_caches() -> Vec<SysCache> {
    let mut out = Vec::new();
    for i in 0..8 {
        let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
        let read = |f: &str| std::fs::read_to_string(format!("{dir}/{f}")).ok();
        let (Some(level), Some(kind), Some(size)) = (read("level"), read("type"), read("size"))
        else {
            continue;
        };
        let Ok(level) = level.trim().parse() else {
            continue;
        };
        out.push(SysCache {
            level,
            kind: kind.trim().to_string(),
            size: size.trim().to_string(),
        });
    }
    out.sort_by_key(|c| c.level);
    out
}

/// The data caches of `caches` as one line: "L1 Data 32K, L2 Unified 512K, L3 Unified 32768K".
fn describe(caches: &[SysCache]) -> String {
    let d: Vec<String> = caches
        .iter()
        .filter(|c| c.kind != "Instruction")
        .map(|c| format!("L{} {} {}", c.level, c.kind, c.size))
        .collect();
    if d.is_empty() {
        "sysfs names no caches".into()
    } else {
        d.join(", ")
    }
}

fn preflight() -> Result<Vec<String>, String> {
    let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    Ok(vec![
        format!("cpu0's caches (sysfs): {}", describe(&sysfs_caches())),
        format!(
            "transparent huge pages: {thp} (the chains' and buffers' mappings may get 2 MiB \
             pages, as lmbench's malloc'd ones do)"
        ),
    ])
}

/// One level the latency curve shows: the largest working set that stays at its latency
/// (None for memory, the last), its median latency, and the first size past it.
#[derive(Debug, Clone, PartialEq)]
pub struct Level {
    pub size: Option<f64>,
    pub latency_ns: f64,
    pub next: Option<(f64, f64)>,
}

/// A rise between two neighbouring sizes counts as leaving a level when the latency grows by
/// this factor (the curve's half-steps are 1.33 to 1.5 times apart in size).
pub const RISE: f64 = 1.25;

/// The levels of a latency curve (points sorted by size): a level ends at the last size
/// before latency rises by [`RISE`] or more from one point to the next, and the rises that
/// follow one another are one transition. The last level is the memory.
pub fn levels(points: &[(f64, f64)]) -> Vec<Level> {
    let mut out = Vec::new();
    let mut plateau: Vec<f64> = Vec::new();
    let mut i = 0;
    while i < points.len() {
        plateau.push(points[i].1);
        let rises = i + 1 < points.len() && points[i + 1].1 >= points[i].1 * RISE;
        if rises {
            out.push(Level {
                size: Some(points[i].0),
                latency_ns: median(&plateau),
                next: Some(points[i + 1]),
            });
            plateau.clear();
            // Skip the transition's further rises: its points belong to no level.
            i += 1;
            while i + 1 < points.len() && points[i + 1].1 >= points[i].1 * RISE {
                i += 1;
            }
            continue;
        }
        i += 1;
    }
    if !plateau.is_empty() {
        out.push(Level {
            size: None,
            latency_ns: median(&plateau),
            next: None,
        });
    } else if let Some(&(_, y)) = points.last() {
        out.push(Level {
            size: None,
            latency_ns: y,
            next: None,
        });
    }
    out
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// A size in bytes as KiB or MiB.
fn human(bytes: f64) -> String {
    if bytes >= (1 << 20) as f64 {
        format!("{} MiB", bytes / (1 << 20) as f64)
    } else {
        format!("{} KiB", bytes / 1024.0)
    }
}

/// The fewest points a latency curve needs before its levels are read (the quick sweep's two
/// cannot show a level).
const LEVEL_POINTS: usize = 8;

/// The cache levels found in the random-walk curve (or, without it, the 64-byte stride), each
/// named L1, L2, ... in order and the last "memory", with sysfs's sizes in the formula.
pub fn derive(series: &[Series]) -> Vec<Derived> {
    let pick = |id: &str| series.iter().find(|s| s.id == id);
    let Some(s) = pick(LATRAND.id).or_else(|| pick(LAT64.id)) else {
        return Vec::new();
    };
    let mut pts: Vec<(f64, f64)> = s
        .points
        .iter()
        .filter_map(|p| Some((p.x, p.y.as_ref()?.median)))
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    if pts.len() < LEVEL_POINTS {
        return Vec::new();
    }
    derive_levels(&s.id, &pts, &sysfs_caches())
}

/// [`derive`] from a curve's points and the machine's caches.
pub fn derive_levels(id: &str, pts: &[(f64, f64)], caches: &[SysCache]) -> Vec<Derived> {
    let mut out = Vec::new();
    let found = levels(pts);
    let data: Vec<&SysCache> = caches.iter().filter(|c| c.kind != "Instruction").collect();
    for (n, l) in found.iter().enumerate() {
        let name = if l.size.is_some() {
            format!("L{}", n + 1)
        } else {
            "memory".to_string()
        };
        let reported = data
            .iter()
            .find(|c| c.level as usize == n + 1 && l.size.is_some())
            .map(|c| format!("; sysfs: L{} {} {}", c.level, c.kind, c.size))
            .unwrap_or_default();
        if let (Some(size), Some((nx, ny))) = (l.size, l.next) {
            out.push(Derived {
                na: None,
                name: format!("{id}: {name} size"),
                value: size / 1024.0,
                unit: "KiB".into(),
                formula: format!(
                    "largest working set before the latency rises {RISE}x or more: {:.2} ns at {}, {ny:.2} ns at {}{reported}",
                    l.latency_ns,
                    human(size),
                    human(nx)
                ),
            });
        }
        out.push(Derived {
            na: None,
            name: format!("{id}: {name} latency"),
            value: l.latency_ns,
            unit: "ns".into(),
            formula: format!("median of the curve's points at the {name} level"),
        });
    }
    if found.len() != data.len() + 1 && !data.is_empty() {
        // Say when the curve and the machine disagree on how many levels there are.
        if let Some(d) = out.first_mut() {
            d.formula.push_str(&format!(
                " (the curve shows {} cache levels, sysfs {}: {})",
                found.len() - 1,
                data.len(),
                describe(caches)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_chain_is_one_cycle_through_every_word() {
        let page = 4096;
        for walk in [
            Walk::Stride(16),
            Walk::Stride(512),
            Walk::Thrash(16),
            Walk::Thrash(64),
        ] {
            for size in [1024, 1536, 6144, 12288, 64 << 10] {
                let (links, start) = chain(walk, size, page);
                assert_eq!(links.len(), size / walk.line(), "{walk:?} {size}");
                let next: std::collections::HashMap<usize, usize> = links.iter().copied().collect();
                assert_eq!(
                    next.len(),
                    links.len(),
                    "{walk:?} {size}: a word linked twice"
                );
                let mut seen = HashSet::new();
                let mut at = start;
                for _ in 0..links.len() {
                    assert!(seen.insert(at), "{walk:?} {size}: {at} visited twice");
                    assert!(at + 8 <= size);
                    at = next[&at];
                }
                assert_eq!(at, start, "{walk:?} {size}: not a cycle");
            }
        }
    }

    #[test]
    fn the_thrash_walk_moves_to_another_page_at_every_load() {
        let (links, _) = chain(Walk::Thrash(16), 64 << 10, 4096);
        assert!(links.iter().all(|&(a, b)| a / 4096 != b / 4096));
        // And lmbench's bit-reversed word order within a page.
        assert_eq!(bit_reversed(8, 1), [0, 4, 2, 6, 1, 5, 3, 7]);
    }

    #[test]
    fn the_chase_really_visits_every_word_of_the_mapping() {
        // The benchmark's own chain, walked through the mapping one load at a time.
        for walk in [Walk::Stride(64), Walk::Thrash(16)] {
            let size = 256 << 10;
            let mut b = Chase::new(walk, size);
            b.setup(&Ctx::default(), 1).unwrap();
            let map = b.map.as_ref().unwrap();
            let n = size / walk.line();
            let mut seen = HashSet::new();
            let mut at = b.at;
            for _ in 0..n {
                seen.insert(at);
                at = map.chase(at, 1);
            }
            assert_eq!(seen.len(), n, "{walk:?}");
            assert_eq!(at, b.at, "{walk:?}: a lap ends where it began");
            // run() makes its loads: a whole number of laps comes back to the start.
            let loads = loads_per_iteration(size, walk.line());
            assert_eq!(loads as usize, n);
            let before = b.at;
            b.run(3).unwrap();
            assert_eq!(b.at, before, "{walk:?}");
            b.run(1).unwrap();
            b.teardown().unwrap();
        }
    }

    #[test]
    fn bandwidth_passes_touch_the_whole_buffer() {
        let size = 64 << 10;
        let mut rd = Bandwidth::new(Op::Rd, size);
        rd.setup(&Ctx::default(), 1).unwrap();
        rd.run(2).unwrap();
        // Every fourth word of a buffer of ones: a quarter of its words, all chunks read.
        assert_eq!(rd.sum() as usize, size / 16);
        for op in [Op::Wr, Op::Cp, Op::Bcopy, Op::Bzero] {
            let mut b = Bandwidth::new(op, size);
            b.setup(&Ctx::default(), 1).unwrap();
            b.run(1).unwrap();
            let src = b.src.as_mut().unwrap().words_mut().to_vec();
            match op {
                // wr stores 1 where setup had 1s already: write zeros first to see it.
                Op::Wr => {
                    b.src.as_mut().unwrap().words_mut().fill(0);
                    b.run(1).unwrap();
                    let w = b.src.as_mut().unwrap().words_mut();
                    assert_eq!(w.iter().filter(|&&x| x == 1).count(), size / 16);
                    assert!(w.chunks(4).all(|c| c[0] == 1));
                }
                Op::Cp => {
                    let d = b.dst.as_mut().unwrap().words_mut();
                    assert_eq!(d.iter().filter(|&&x| x == 1).count(), size / 16);
                    assert!(d.chunks(4).all(|c| c[0] == 1));
                }
                Op::Bcopy => assert!(b.dst.as_mut().unwrap().words_mut().iter().all(|&x| x == 1)),
                Op::Bzero => assert!(src.iter().all(|&x| x == 0)),
                Op::Rd => unreachable!(),
            }
            b.teardown().unwrap();
        }
        assert!(Bandwidth::new(Op::Rd, 1000)
            .setup(&Ctx::default(), 1)
            .is_err());
    }

    #[test]
    fn levels_are_read_at_the_rises_and_named_beside_sysfs() {
        // A curve with L1 to 32 KiB, L2 to 512 KiB, L3 to 32 MiB, then memory; half-steps
        // between, and a two-step transition into memory.
        let mut pts = Vec::new();
        for &s in &lat_sizes(false) {
            let y = match s {
                s if s <= 32 << 10 => 1.0,
                s if s <= 512 << 10 => 3.0,
                s if s <= 32 << 20 => 10.0,
                s if s <= 48 << 20 => 40.0,
                _ => 90.0,
            };
            pts.push((s as f64, y));
        }
        let l = levels(&pts);
        let sizes: Vec<Option<f64>> = l.iter().map(|l| l.size).collect();
        assert_eq!(
            sizes,
            [Some(32768.0), Some(524288.0), Some(33554432.0), None]
        );
        assert_eq!(l[3].latency_ns, 90.0);
        let caches = vec![
            SysCache {
                level: 1,
                kind: "Data".into(),
                size: "32K".into(),
            },
            SysCache {
                level: 1,
                kind: "Instruction".into(),
                size: "32K".into(),
            },
            SysCache {
                level: 2,
                kind: "Unified".into(),
                size: "512K".into(),
            },
            SysCache {
                level: 3,
                kind: "Unified".into(),
                size: "32768K".into(),
            },
        ];
        let d = derive_levels("mem.lat-random", &pts, &caches);
        let l1 = d
            .iter()
            .find(|d| d.name == "mem.lat-random: L1 size")
            .unwrap();
        assert_eq!(l1.value, 32.0);
        assert!(l1.formula.contains("sysfs: L1 Data 32K"), "{}", l1.formula);
        let l3 = d
            .iter()
            .find(|d| d.name == "mem.lat-random: L3 size")
            .unwrap();
        assert_eq!(l3.value, 32768.0);
        assert!(d
            .iter()
            .any(|d| d.name == "mem.lat-random: memory latency" && d.value == 90.0));
        // Noise below the threshold makes no level; a flat curve is all memory.
        let flat: Vec<(f64, f64)> = (0..10)
            .map(|i| ((1024 << i) as f64, 5.0 + (i % 2) as f64))
            .collect();
        assert_eq!(levels(&flat).len(), 1);
    }

    #[test]
    fn sweeps_are_lmbench_sizes_thinned() {
        let s = lat_sizes(false);
        assert_eq!(s.first(), Some(&1024));
        assert_eq!(s.last(), Some(&(256 << 20)));
        assert!(s.windows(2).all(|w| w[1] > w[0]));
        assert!(s.contains(&(48 << 10)));
        assert_eq!(bw_sizes(false).last(), Some(&(256 << 20)));
        // Every latency point's loads cover a lap at least.
        for s in lat_points(Walk::Stride(512), false) {
            assert!(s.ops_per_iteration >= s.param / 512);
        }
    }
}
