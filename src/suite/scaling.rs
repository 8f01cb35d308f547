//! The file-system half of "Table searches, then and now" (`sysperf run --suite scaling`):
//! the 1984 papers' linear searches, each measured as a curve of cost against size, so that
//! a linear search would show as a slope and a hashed one as a flat line.
//!
//! - Feder 1984, Fig. 4 and Table III: the i-node table search, measured with `chdir "."`
//!   against the position of "." in the table, which was set by opening files first. Today
//!   the i-node table is the kernel's inode and dentry caches (hash tables), the per-process
//!   descriptor table is an array indexed by descriptor number, and the path walk resolves
//!   "." without any lookup (the working directory is a reference the process holds). So
//!   the curve is chdir(".") against the number of distinct files the process holds open;
//!   nothing it does searches them.
//! - Leffler et al. §4.1.6 and Feder Table III ("search dir 32nd position"): a name looked
//!   up against its position in a directory, and a name created against the directory's
//!   size, also after the directory was emptied (4.2BSD directories did not shrink). Today
//!   ext4 directories are hashed (htree) and every name once looked up is a dentry in the
//!   dentry cache (a hash table): a lookup of an existing name is a dcache hit whatever its
//!   position, so the "absent name" curve, whose every name is new, is the one that searches
//!   the directory itself (ext4's htree probe of the page-cached directory blocks). ext4
//!   directories do not shrink either; the suite's preflight records the size of an emptied
//!   directory.
//! - Leffler et al. §3.2.2: path name translation against the number of components, and
//!   through symbolic links (the /tmp -> /usr/tmp example: each link adds its own lookups
//!   and reading the link).
//! - Leffler et al. §4.1.1: the name cache; a hit, a cached negative entry ("no such name",
//!   which 4.3BSD's cache also kept) and a miss (a name never looked up, which goes to the
//!   file system's directory search).
//! - Leffler et al. §4.1.1: `ls -l` of a 600-file directory (22.3 s of system time on 4.2BSD
//!   before either cache, 3.3 s with the per-process directory offset cache, 3.7 s with the
//!   system-wide name cache added; the paper names no machine): read the directory, lstat every
//!   entry, look up each owner's and group's name through the C library (NSS, as ls does,
//!   each listing with an empty uid/gid cache like ls's own). Formatting and sorting, user
//!   work in ls, are not done.
//!
//! The papers' points are CPU time (Feder's Table III and Fig. 4) or system time (§4.1.1's ls
//! -l), so the curves drawn beside them (chdir, name lookup, path depth, ls -l) are CPU time
//! per operation, user + system, which counts no wait for the CPU or the disk; the others are
//! wall time.
//!
//! Everything happens in a directory made under the temporary directory (not tmpfs here:
//! the preflight records which file system it is) in setup and removed in teardown and by
//! `Drop`; a worker that is killed before either leaves it behind, so the preflight removes
//! such directories of dead processes before the suite runs. Lookups use the `*at` calls on a
//! descriptor of that directory, so that a path has exactly the components a point asks for.

use crate::bench::{Benchmark, Ctx, Shape};
use crate::error::BenchError;
use crate::model::YKind;
use crate::suite::{Axis, Point, SeriesSpec, Suite};
use crate::sys;
use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Prefix of every directory this file makes under the temporary directory; the pid of the
/// process that made it follows, which is how `harness::janitor` knows a leftover.
const DIR_KIND: &str = "scaling";

/// The papers' table-search suite; `series` lists this file's curves (the process-table half
/// is appended from its own file).
pub static SUITE: Suite = Suite {
    name: "scaling",
    title: "Table searches, then and now: cost against table size",
    paper: "Feder 1984 Fig. 4 and Table III (i-node table search by chdir \".\", directory \
            search, path search); Leffler et al. 1984 §3.2.2 (path name translation, symbolic \
            links), §4.1.1 (name cache, ls -l of 600 files), §4.1.6 (directory search and \
            creation, directories that do not shrink), §3.2.5 (the process table), §5.1.4 \
            (select)",
    series,
    preflight,
    derive: super::scaling_proc::derive,
};

/// The file-system curves, then the process-table and descriptor curves of `scaling_proc`.
fn series() -> Vec<&'static SeriesSpec> {
    FS_SERIES
        .iter()
        .chain(super::scaling_proc::SERIES.iter())
        .collect()
}

const ENTRIES: Axis = Axis {
    name: "directory entries",
    unit: "entries",
    log: true,
};

/// Directory sizes of the lookup curves: 10 to 100,000 entries (quick: two small ones).
fn dir_sizes(quick: bool, largest: u64, big_iterations: u64) -> Vec<Point> {
    let sizes: &[u64] = if quick {
        &[10, 100]
    } else {
        &[10, 100, 1_000, 10_000, 100_000]
    };
    sizes
        .iter()
        .filter(|&&n| n <= largest)
        .map(|&n| fixed_when_big(Point::new(n as f64, n), n, big_iterations))
        .collect()
}

/// Creation points have a fixed count: on ext4 a create+unlink next to files created just
/// before costs about a millisecond of system time (and more as the run goes on), so
/// calibrating to --min-time would take minutes.
fn create_sizes(quick: bool) -> Vec<Point> {
    let mut ps = dir_sizes(quick, 10_000, 500);
    ps.iter_mut().for_each(|p| p.iterations = Some(500));
    ps
}

/// Points whose setup makes 10,000 or more files get a fixed iteration count: calibration
/// would repeat that setup in every one of its trials.
fn fixed_when_big(mut p: Point, size: u64, iterations: u64) -> Point {
    if size >= 10_000 {
        p.iterations = Some(iterations);
    }
    p
}

/// What the curves of one figure share.
struct Fig {
    figure: &'static str,
    title: &'static str,
    x: Axis,
    unit: &'static str,
    /// CPU time (user + system) where the papers' points beside it are CPU time, wall time
    /// elsewhere (#45). Feder's Table III and Fig. 4 are CPU time; §4.1.1's ls -l is system
    /// time, which the listing's CPU time nearly is (it does no formatting or sorting, ls's
    /// user work) and which this kernel samples by the tick, while the total is exact.
    y: YKind,
}

const CHDIR: Fig = Fig {
    figure: "scaling.chdir",
    title: "chdir(\".\") against files held open (Feder Fig. 4)",
    x: Axis {
        name: "files held open",
        unit: "files",
        log: true,
    },
    unit: "chdir",
    y: YKind::CpuNs,
};

const DIR_LOOKUP: Fig = Fig {
    figure: "scaling.dir-lookup",
    title: "Name lookup against directory size (Feder Table III, Leffler §4.1.6)",
    x: ENTRIES,
    unit: "stat",
    y: YKind::CpuNs,
};

const DIR_CREATE: Fig = Fig {
    figure: "scaling.dir-create",
    title: "Creating a name against directory size (Leffler §4.1.6)",
    x: ENTRIES,
    unit: "create+unlink",
    y: YKind::CostNs,
};

const PATH: Fig = Fig {
    figure: "scaling.path",
    title: "Path name translation against depth (Leffler §3.2.2, Feder Table III)",
    x: Axis {
        name: "path components",
        unit: "components",
        log: true,
    },
    unit: "stat",
    y: YKind::CpuNs,
};

const NAME_CACHE: Fig = Fig {
    figure: "scaling.name-cache",
    title: "The name cache: hit, negative hit, miss (Leffler §4.1.1)",
    x: Axis {
        name: "case",
        unit: "",
        log: false,
    },
    unit: "stat",
    y: YKind::CostNs,
};

const LS: Fig = Fig {
    figure: "scaling.ls",
    title: "ls -l against directory size (Leffler §4.1.1)",
    x: ENTRIES,
    unit: "listing",
    y: YKind::CpuNs,
};

/// A cost curve of figure `fig` (one process, no printed figures unless set after).
const fn spec(
    fig: Fig,
    id: &'static str,
    curve: &'static str,
    [paper, today]: [&'static str; 2],
    points: fn(bool) -> Vec<Point>,
    make: fn(u64) -> Box<dyn Benchmark>,
) -> SeriesSpec {
    SeriesSpec {
        id,
        figure: fig.figure,
        figure_title: fig.title,
        curve,
        paper,
        today,
        x: fig.x,
        y: fig.y,
        unit: fig.unit,
        shape: Shape::Single,
        points,
        make,
        paper_points: &[],
        paper_system: None,
        printed: None,
    }
}

pub static FS_SERIES: &[SeriesSpec] = &[
    SeriesSpec {
        paper_points: &[[60.0, 1.2e6]],
        paper_system: Some(
            "VAX-11/780, UNIX System V (Feder Table III: 120 i-node entries, \".\" at the \
             halfway point)",
        ),
        ..spec(
            CHDIR,
            "scaling.chdir-open-files",
            "chdir(\".\") with K distinct files open",
            [
                "Feder 1984 Fig. 4: CPU time of chdir \".\" against the position of \".\" in the \
                 i-node table (linear search: a straight line rising with position; hashed: \
                 flat); the position set by opening files first. Table III: 1.2 ms on the \
                 VAX-11/780 with 120 i-node entries, target at the halfway point",
                "setup creates and opens K distinct files (soft RLIMIT_NOFILE raised to the \
                 hard limit); each operation is chdir(\".\"). The i-node table is now the inode \
                 and dentry hash tables, descriptors index an array, and \".\" needs no lookup: \
                 nothing is searched",
            ],
            |quick| {
                let ks: &[u64] = if quick {
                    &[1, 100]
                } else {
                    &[1, 10, 100, 1_000]
                };
                ks.iter().map(|&k| Point::new(k as f64, k)).collect()
            },
            |k| Box::new(FsBench::new(Op::ChdirDot { open_files: k })),
        )
    },
    SeriesSpec {
        paper_points: &[[32.0, 3.0e6]],
        paper_system: Some(
            "VAX-11/780, UNIX System V (Feder Table III, directory search to the 32nd position)",
        ),
        ..spec(
            DIR_LOOKUP,
            "scaling.lookup-last",
            "stat of the last-created name (a dentry-cache hit)",
            [
                "Feder 1984 Table III: search to the 32nd position of a large directory, 3.0 ms \
                 on the VAX-11/780 (System V); directories were searched linearly, so the cost \
                 grew with the name's position",
                "setup makes N names in a fresh directory (one file and N-1 hard links to it, \
                 so that 100,000 entries take seconds, not minutes); each operation is fstatat \
                 of the last one made (position N). The name is in the dentry cache (created names \
                 are), so this is a hash lookup, not a directory search",
            ],
            |quick| dir_sizes(quick, u64::MAX, 50_000),
            |n| Box::new(FsBench::new(Op::LookupLast { entries: n })),
        )
    },
    spec(
        DIR_LOOKUP,
        "scaling.lookup-absent",
        "stat of a never-seen absent name (the directory search)",
        [
            "Leffler et al. 1984 §4.1.6: a name not in a directory is found absent only after \
             the whole directory is scanned (the cost of every creation)",
            "setup makes N names (one file, N-1 hard links); each operation is fstatat of a new \
             name that does not exist \
             and was never looked up, so the dentry cache misses and ext4 searches the \
             directory (htree hash probe of page-cached blocks), leaving a negative dentry",
        ],
        |quick| dir_sizes(quick, u64::MAX, 20_000),
        |n| Box::new(FsBench::new(Op::LookupAbsent { entries: n })),
    ),
    spec(
        DIR_CREATE,
        "scaling.create",
        "create+unlink in a directory of N entries",
        [
            "Leffler et al. 1984 §4.1.6: creating a name scans the entire directory to be sure \
             the name does not exist, which is slow for large directories",
            "setup makes N names (one file, N-1 hard links); each operation creates a new file (openat O_CREAT|O_EXCL), \
             closes and unlinks it. ext4 hashes the name to one htree leaf block",
        ],
        create_sizes,
        |n| {
            Box::new(FsBench::new(Op::Create {
                entries: n,
                emptied: false,
            }))
        },
    ),
    spec(
        DIR_CREATE,
        "scaling.create-emptied",
        "create+unlink in an emptied directory that once held N entries",
        [
            "Leffler et al. 1984 §4.1.6: directories did not shrink, so a once over-filled \
             directory kept the cost of creation after it was emptied (\"a congested uucp \
             connection can leave a legacy\"); 4.3BSD truncates empty blocks at its end",
            "setup makes N names (one file, N-1 hard links) and unlinks them all (ext4 keeps the directory's blocks: the \
             preflight note gives the size); each operation is create+close+unlink in that \
             empty directory",
        ],
        create_sizes,
        |n| {
            Box::new(FsBench::new(Op::Create {
                entries: n,
                emptied: true,
            }))
        },
    ),
    SeriesSpec {
        paper_points: &[[3.0, 5.9e6]],
        paper_system: Some("VAX-11/780, UNIX System V (Feder Table III, search path 3rd level)"),
        ..spec(
            PATH,
            "scaling.path-depth",
            "stat of d/d/.../f (directories)",
            [
                "Feder 1984 Table III: search (access) to a third-level directory, 5.9 ms on the \
                 VAX-11/780 (System V); Leffler et al. §3.2.2: namei's outer loop runs once per \
                 component, the kernel's single most expensive function",
                "fstatat relative to the test directory of a path of x components: x-1 \
                 directories then a file",
            ],
            depths,
            |d| {
                Box::new(FsBench::new(Op::Path {
                    depth: d,
                    symlinks: false,
                }))
            },
        )
    },
    spec(
        PATH,
        "scaling.path-symlinks",
        "stat of s/s/.../g (every component a symbolic link)",
        [
            "Leffler et al. 1984 §3.2.2: symbolic links raise the number of components to \
             translate; /tmp made a link to /usr/tmp turns /tmp/tmp1234 from two component \
             translations into four plus reading the link",
            "the same path with every component a symbolic link (\"s\" -> \"d\" at each level, \
             \"g\" -> \"f\" at the end), so the walk reads x links and looks up 2x names",
        ],
        depths,
        |d| {
            Box::new(FsBench::new(Op::Path {
                depth: d,
                symlinks: true,
            }))
        },
    ),
    spec(
        NAME_CACHE,
        "scaling.name-cache",
        "stat of one name in a 100-entry directory",
        [
            "Leffler et al. 1984 §4.1.1: a cache of recent name translations removes namei's \
             inner loop (the linear directory search) on a hit; 4.3BSD's cache also keeps names \
             found absent",
            "hit: the same existing name every time (dentry cache hit); negative hit: the same \
             absent name every time (cached negative dentry); miss: a new absent name every \
             time, never looked up before (ext4 searches the directory and a negative dentry \
             is made)",
        ],
        |_| {
            CacheCase::ALL
                .iter()
                .enumerate()
                .map(|(i, c)| Point {
                    label: Some(c.label().to_string()),
                    ..Point::new((i + 1) as f64, i as u64)
                })
                .collect()
        },
        |i| Box::new(FsBench::new(Op::Cache(CacheCase::from_param(i)))),
    ),
    SeriesSpec {
        paper_points: &[[600.0, 22.3e9]],
        paper_system: Some(
            "4.2BSD, before either cache (system time of ls -l on 600 files; the paper names no \
             machine for it)",
        ),
        ..spec(
            LS,
            "scaling.ls-l",
            "an ls -l's system calls, in process (not the ls program): readdir, lstat of each \
             entry, owner and group names",
            [
                "Leffler et al. 1984 §4.1.1: ls -l of a directory of 600 files used 22.3 s of \
                 system time on 4.2BSD (quadratic: each lstat searched the directory linearly); \
                 3.3 s with the per-process directory offset cache, 3.7 s with the system-wide \
                 name cache added to it",
                "one operation is a whole listing: opendir/readdir, lstat (statx relative to \
                 the directory) of every entry, getpwuid_r/getgrgid_r once per distinct owner \
                 and group (ls's uid cache, emptied for each listing). No sorting or formatting",
            ],
            |quick| {
                let ns: &[u64] = if quick { &[60] } else { &[60, 600, 2_000] };
                ns.iter().map(|&n| Point::new(n as f64, n)).collect()
            },
            |n| Box::new(FsBench::new(Op::List { entries: n })),
        )
    },
];

fn depths(quick: bool) -> Vec<Point> {
    let ds: &[u64] = if quick {
        &[1, 8]
    } else {
        &[1, 2, 4, 8, 16, 32]
    };
    ds.iter().map(|&d| Point::new(d as f64, d)).collect()
}

/// The name-cache figure's cases, in the order drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheCase {
    Hit,
    NegativeHit,
    Miss,
}

impl CacheCase {
    pub const ALL: [CacheCase; 3] = [CacheCase::Hit, CacheCase::NegativeHit, CacheCase::Miss];

    pub fn label(self) -> &'static str {
        match self {
            CacheCase::Hit => "hit",
            CacheCase::NegativeHit => "negative-hit",
            CacheCase::Miss => "miss",
        }
    }

    fn from_param(i: u64) -> CacheCase {
        Self::ALL[(i as usize).min(Self::ALL.len() - 1)]
    }
}

/// Entries of the name-cache figure's directory.
const CACHE_DIR_ENTRIES: u64 = 100;

/// What one point measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    ChdirDot { open_files: u64 },
    LookupLast { entries: u64 },
    LookupAbsent { entries: u64 },
    Create { entries: u64, emptied: bool },
    Path { depth: u64, symlinks: bool },
    Cache(CacheCase),
    List { entries: u64 },
}

/// A directory under the temporary directory, removed (with its contents) by [`Scratch::remove`]
/// or, failing that, on drop.
#[derive(Debug)]
pub struct Scratch {
    path: PathBuf,
    fd: File,
}

impl Scratch {
    fn new() -> io::Result<Scratch> {
        let path = crate::harness::janitor::scratch_dir(&std::env::temp_dir(), DIR_KIND)?;
        match File::open(&path) {
            Ok(fd) => Ok(Scratch { path, fd }),
            Err(e) => {
                let _ = std::fs::remove_dir(&path);
                Err(e)
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    fn remove(self) -> io::Result<()> {
        std::fs::remove_dir_all(&self.path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // After remove() this finds nothing; otherwise it is the only cleanup left.
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The name of the i-th entry a point creates: same length for every i, in creation order.
pub fn entry_name(i: u64) -> CString {
    // Digits and a letter only: no interior NUL is possible.
    CString::new(format!("e{i:07}")).unwrap_or_default()
}

/// Writes `prefix` and `n` in decimal into `buf` as a C string, without allocating (the hot
/// loop of the absent-name lookups makes one per operation).
fn numbered(buf: &mut [u8; 24], prefix: u8, n: u64) -> &CStr {
    let mut digits = [0u8; 20];
    let mut len = 0;
    let mut v = n;
    loop {
        digits[len] = b'0' + (v % 10) as u8;
        len += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    buf[0] = prefix;
    for i in 0..len {
        buf[1 + i] = digits[len - 1 - i];
    }
    buf[1 + len] = 0;
    CStr::from_bytes_until_nul(&buf[..]).unwrap_or_default()
}

/// `Ok` when `r` failed with ENOENT, the expected answer of an absent name.
fn expect_absent(r: io::Result<libc::stat>) -> Result<(), BenchError> {
    match r {
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(()),
        Err(e) => Err(BenchError::Sys {
            op: "fstatat",
            source: e,
        }),
        Ok(_) => Err(BenchError::Protocol(
            "a name that should be absent exists".into(),
        )),
    }
}

/// One point of the file-system curves.
#[derive(Debug)]
pub struct FsBench {
    pub op: Op,
    dir: Option<Scratch>,
    /// The descriptors the chdir point holds open.
    held: Vec<OwnedFd>,
    /// The name or path looked up, or created and unlinked, by each operation.
    target: CString,
    /// Next number of a fresh absent name.
    fresh: u64,
    buf: [u8; 24],
    /// Bytes of the owner and group names the listings found (kept so the work is used).
    names_seen: usize,
}

impl FsBench {
    pub fn new(op: Op) -> FsBench {
        FsBench {
            op,
            dir: None,
            held: Vec::new(),
            target: CString::default(),
            fresh: 0,
            buf: [0; 24],
            names_seen: 0,
        }
    }

    /// The point's directory, once set up.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_ref().map(Scratch::path)
    }

    /// The name or path each operation uses (relative to [`FsBench::dir`]).
    pub fn target(&self) -> &CStr {
        &self.target
    }

    /// Descriptors held open by the chdir point.
    pub fn held(&self) -> &[OwnedFd] {
        &self.held
    }

    fn dir_fd(&self) -> Result<RawFd, BenchError> {
        self.dir
            .as_ref()
            .map(Scratch::fd)
            .ok_or_else(|| BenchError::Protocol("run before setup".into()))
    }

    /// Creates entries 0..n in the directory as n files (creat and close each, as a program
    /// would): what `ls -l` must stat one by one.
    fn populate(&self, n: u64) -> Result<(), BenchError> {
        let dir = self.dir_fd()?;
        for i in 0..n {
            drop(sys::create_at(dir, &entry_name(i)).map_err(BenchError::sys("openat"))?);
        }
        Ok(())
    }

    /// Creates entries 0..n in the directory as n names of one file (entry 0, then hard
    /// links to it). A directory search sees n entries either way, and a link costs a
    /// directory entry only: on this kind of VM's ext4 a new inode took 0.5-1 ms and a link
    /// 20 us, which is the difference between 100,000 entries in 2 s and in a minute and
    /// more, per trial.
    fn populate_names(&self, n: u64) -> Result<(), BenchError> {
        let dir = self.dir_fd()?;
        // ext4 allows 65,000 links to a file: a new file starts every LINKS_PER_FILE names.
        const LINKS_PER_FILE: u64 = 60_000;
        let mut source = entry_name(0);
        for i in 0..n {
            let name = entry_name(i);
            if i % LINKS_PER_FILE == 0 {
                drop(sys::create_at(dir, &name).map_err(BenchError::sys("openat"))?);
                source = name;
            } else {
                sys::link_at(dir, &source, &name).map_err(BenchError::sys("linkat"))?;
            }
        }
        Ok(())
    }

    fn build_path(&mut self, depth: u64, symlinks: bool) -> Result<(), BenchError> {
        let mut level = self
            .dir()
            .map(Path::to_path_buf)
            .ok_or_else(|| BenchError::Protocol("no directory".into()))?;
        let mk = BenchError::sys("mkdir/symlink");
        let mut path = String::new();
        let (sub, file) = if symlinks { ("s", "g") } else { ("d", "f") };
        for _ in 1..depth {
            std::fs::create_dir(level.join("d")).map_err(&mk)?;
            std::os::unix::fs::symlink("d", level.join("s")).map_err(&mk)?;
            level.push("d");
            path.push_str(sub);
            path.push('/');
        }
        File::create(level.join("f")).map_err(&mk)?;
        std::os::unix::fs::symlink("f", level.join("g")).map_err(&mk)?;
        path.push_str(file);
        self.target = CString::new(path).map_err(|e| BenchError::Protocol(e.to_string()))?;
        Ok(())
    }

    fn list(&mut self) -> Result<(), BenchError> {
        let path = self
            .dir()
            .ok_or_else(|| BenchError::Protocol("run before setup".into()))?;
        // ls's idcache: one NSS lookup per distinct id in a listing.
        let mut users: HashMap<u32, Option<String>> = HashMap::new();
        let mut groups: HashMap<u32, Option<String>> = HashMap::new();
        let mut seen = 0;
        for entry in std::fs::read_dir(path).map_err(BenchError::sys("opendir"))? {
            let entry = entry.map_err(BenchError::sys("readdir"))?;
            // DirEntry::metadata is lstat relative to the directory's descriptor.
            let md = entry.metadata().map_err(BenchError::sys("lstat"))?;
            if let std::collections::hash_map::Entry::Vacant(v) = users.entry(md.uid()) {
                v.insert(sys::user_name(md.uid()).map_err(BenchError::sys("getpwuid_r"))?);
            }
            if let std::collections::hash_map::Entry::Vacant(v) = groups.entry(md.gid()) {
                v.insert(sys::group_name(md.gid()).map_err(BenchError::sys("getgrgid_r"))?);
            }
            seen += users[&md.uid()].as_ref().map_or(0, String::len);
            seen += groups[&md.gid()].as_ref().map_or(0, String::len);
        }
        self.names_seen = self.names_seen.wrapping_add(seen);
        Ok(())
    }
}

impl Benchmark for FsBench {
    fn setup(&mut self, _ctx: &Ctx, _iterations: u64) -> Result<(), BenchError> {
        self.dir = Some(Scratch::new().map_err(BenchError::sys("mkdir"))?);
        match self.op {
            Op::ChdirDot { open_files } => {
                let limit = sys::raise_nofile_limit().map_err(BenchError::sys("setrlimit"))?;
                if open_files + 16 > limit {
                    return Err(BenchError::Protocol(format!(
                        "{open_files} open files need a higher RLIMIT_NOFILE hard limit than {limit}"
                    )));
                }
                let dir = self.dir_fd()?;
                for i in 0..open_files {
                    self.held.push(
                        sys::create_at(dir, &entry_name(i)).map_err(BenchError::sys("openat"))?,
                    );
                }
                self.target = c".".into();
            }
            Op::LookupLast { entries } => {
                self.populate_names(entries)?;
                self.target = entry_name(entries.saturating_sub(1));
            }
            Op::LookupAbsent { entries } => self.populate_names(entries)?,
            Op::Create { entries, emptied } => {
                self.populate_names(entries)?;
                if emptied {
                    let dir = self.dir_fd()?;
                    for i in 0..entries {
                        sys::unlink_at(dir, &entry_name(i)).map_err(BenchError::sys("unlinkat"))?;
                    }
                }
                self.target = c"new".into();
            }
            Op::Path { depth, symlinks } => self.build_path(depth.max(1), symlinks)?,
            Op::Cache(case) => {
                self.populate_names(CACHE_DIR_ENTRIES)?;
                self.target = match case {
                    CacheCase::Hit => entry_name(CACHE_DIR_ENTRIES / 2),
                    CacheCase::NegativeHit | CacheCase::Miss => c"absent".into(),
                };
            }
            Op::List { entries } => self.populate(entries)?,
        }
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let dir = self.dir_fd()?;
        match self.op {
            Op::ChdirDot { .. } => {
                for _ in 0..iterations {
                    std::env::set_current_dir(".").map_err(BenchError::sys("chdir"))?;
                }
            }
            Op::LookupLast { .. } | Op::Path { .. } | Op::Cache(CacheCase::Hit) => {
                for _ in 0..iterations {
                    sys::stat_at(dir, &self.target, true).map_err(BenchError::sys("fstatat"))?;
                }
            }
            Op::Cache(CacheCase::NegativeHit) => {
                for _ in 0..iterations {
                    expect_absent(sys::stat_at(dir, &self.target, true))?;
                }
            }
            Op::LookupAbsent { .. } | Op::Cache(CacheCase::Miss) => {
                for _ in 0..iterations {
                    let n = self.fresh;
                    self.fresh += 1;
                    expect_absent(sys::stat_at(dir, numbered(&mut self.buf, b'm', n), true))?;
                }
            }
            Op::Create { .. } => {
                for _ in 0..iterations {
                    drop(sys::create_at(dir, &self.target).map_err(BenchError::sys("openat"))?);
                    sys::unlink_at(dir, &self.target).map_err(BenchError::sys("unlinkat"))?;
                }
            }
            Op::List { .. } => {
                for _ in 0..iterations {
                    self.list()?;
                }
            }
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.held.clear();
        match self.dir.take() {
            Some(d) => d.remove().map_err(BenchError::sys("remove_dir_all")),
            None => Ok(()),
        }
    }
}

/// Records the file system the points run on and how large an emptied directory stays.
/// (Directories left by killed workers are removed by `harness::janitor`.)
fn preflight() -> Result<Vec<String>, String> {
    let tmp = std::env::temp_dir();
    let magic = sys::fs_type(&tmp).map_err(|e| format!("statfs {}: {e}", tmp.display()))?;
    let mut notes = vec![format!(
        "directories made under {} on {} (statfs f_type {magic:#x})",
        tmp.display(),
        crate::suite::fs_name(magic)
    )];
    match emptied_size(1_000) {
        Ok((fresh, full, emptied)) => notes.push(format!(
            "a directory of {} there is {fresh} bytes empty, {full} bytes with 1000 \
             entries, {emptied} bytes after all were unlinked ({})",
            crate::suite::fs_name(magic),
            if emptied > fresh {
                "directories do not shrink"
            } else {
                "it shrank"
            }
        )),
        Err(e) => return Err(format!("cannot make a test directory: {e}")),
    }
    notes.extend(super::scaling_proc::notes());
    Ok(notes)
}

/// Sizes (st_size) of a fresh directory, of it holding `n` entries, and of it after they were
/// all unlinked.
pub fn emptied_size(n: u64) -> Result<(u64, u64, u64), BenchError> {
    let mut b = FsBench::new(Op::LookupAbsent { entries: n });
    b.dir = Some(Scratch::new().map_err(BenchError::sys("mkdir"))?);
    let size = |b: &FsBench| -> Result<u64, BenchError> {
        let d = b.dir.as_ref().map(Scratch::path).unwrap_or(Path::new("/"));
        Ok(std::fs::metadata(d).map_err(BenchError::sys("stat"))?.len())
    };
    let fresh = size(&b)?;
    b.populate(n)?;
    let full = size(&b)?;
    let dir = b.dir_fd()?;
    for i in 0..n {
        sys::unlink_at(dir, &entry_name(i)).map_err(BenchError::sys("unlinkat"))?;
    }
    let emptied = size(&b)?;
    b.teardown()?;
    Ok((fresh, full, emptied))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curves_beside_the_papers_cpu_time_are_cpu_time() {
        // Feder's Fig. 4 and Table III and §4.1.1's ls -l are CPU time: wall time would add
        // every wait for the CPU or the disk to today's side (#45). Every curve of such a
        // figure has the same y, so they can be drawn on one chart.
        for s in series() {
            let beside = series()
                .iter()
                .any(|o| o.figure == s.figure && !o.paper_points.is_empty());
            // The runnable scheduler curve is the worker's CPU time by design: its wall time
            // would be the spinning processes' share of the CPU.
            let want = if beside || s.id == "scaling.sched-runnable" {
                YKind::CpuNs
            } else {
                YKind::CostNs
            };
            assert_eq!(s.y, want, "{}", s.id);
        }
        let ls = series()
            .into_iter()
            .find(|s| s.id == "scaling.ls-l")
            .unwrap();
        assert_eq!(ls.y, YKind::CpuNs);
    }

    #[test]
    fn the_ls_l_curve_draws_the_published_before_figure() {
        let ls = series()
            .into_iter()
            .find(|s| s.id == "scaling.ls-l")
            .unwrap();
        let published = crate::published::for_series("scaling.ls-l").unwrap();
        let before = &published[0].figures[0];
        assert_eq!(ls.paper_points, [[before.x, before.y]]);
        assert_eq!(published[1].figures[0].sys_s, Some(3.3));
        // §4.1.1's third step, with both caches, is printed beside today's too.
        assert_eq!(published[2].figures[0].sys_s, Some(3.7));
        // The paper names no machine for the ls -l figures.
        assert!(
            !ls.paper_system.unwrap().contains("VAX"),
            "{:?}",
            ls.paper_system
        );
    }

    fn names_in(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }

    /// Sets up `op`, hands the benchmark to `check`, runs it, tears it down and checks that
    /// its directory is gone.
    fn with_setup(op: Op, check: impl FnOnce(&FsBench)) {
        let mut b = FsBench::new(op);
        b.setup(&Ctx::default(), 10).unwrap();
        let dir = b.dir().unwrap().to_path_buf();
        assert!(dir.starts_with(std::env::temp_dir()), "{}", dir.display());
        check(&b);
        b.run(10).unwrap();
        b.teardown().unwrap();
        assert!(!dir.exists(), "{} left behind", dir.display());
    }

    #[test]
    fn the_directory_of_a_lookup_point_really_has_n_entries_and_the_last_is_looked_up() {
        with_setup(Op::LookupLast { entries: 1000 }, |b| {
            let names = names_in(b.dir().unwrap());
            assert_eq!(names.len(), 1000);
            assert_eq!(b.target().to_str().unwrap(), "e0000999");
            assert!(names.iter().any(|n| n == "e0000999"));
        });
    }

    #[test]
    fn absent_names_are_fresh_and_absent_and_each_lookup_uses_a_new_one() {
        let mut b = FsBench::new(Op::LookupAbsent { entries: 50 });
        b.setup(&Ctx::default(), 5).unwrap();
        assert_eq!(names_in(b.dir().unwrap()).len(), 50);
        b.run(5).unwrap();
        assert_eq!(b.fresh, 5);
        // The directory gained nothing: a lookup creates no entry.
        assert_eq!(names_in(b.dir().unwrap()).len(), 50);
        b.teardown().unwrap();
    }

    #[test]
    fn numbered_names_are_c_strings_of_prefix_and_decimal() {
        let mut buf = [0u8; 24];
        assert_eq!(numbered(&mut buf, b'm', 0).to_str().unwrap(), "m0");
        assert_eq!(
            numbered(&mut buf, b'm', u64::MAX).to_str().unwrap(),
            format!("m{}", u64::MAX)
        );
        assert_eq!(numbered(&mut buf, b'x', 1207).to_str().unwrap(), "x1207");
    }

    #[test]
    fn create_points_leave_the_directory_as_set_up_full_or_emptied() {
        with_setup(
            Op::Create {
                entries: 300,
                emptied: false,
            },
            |b| assert_eq!(names_in(b.dir().unwrap()).len(), 300),
        );
        with_setup(
            Op::Create {
                entries: 300,
                emptied: true,
            },
            |b| assert!(names_in(b.dir().unwrap()).is_empty()),
        );
    }

    #[test]
    fn an_emptied_ext4_directory_keeps_its_size() {
        let (fresh, full, emptied) = emptied_size(1000).unwrap();
        assert!(full > fresh, "{fresh} {full}");
        if crate::suite::fs_name(sys::fs_type(&std::env::temp_dir()).unwrap()) == "ext2/3/4" {
            assert_eq!(emptied, full, "ext4 directories do not shrink");
        }
    }

    /// Components of `target` under `dir`: (count, each one's file type as lstat sees it).
    fn components(dir: &Path, target: &CStr) -> Vec<std::fs::FileType> {
        let mut p = dir.to_path_buf();
        target
            .to_str()
            .unwrap()
            .split('/')
            .map(|c| {
                p.push(c);
                std::fs::symlink_metadata(&p).unwrap().file_type()
            })
            .collect()
    }

    #[test]
    fn depth_paths_have_depth_d_of_directories_then_a_file() {
        for d in [1, 4, 32] {
            with_setup(
                Op::Path {
                    depth: d,
                    symlinks: false,
                },
                |b| {
                    let types = components(b.dir().unwrap(), b.target());
                    assert_eq!(types.len() as u64, d);
                    assert!(types[..types.len() - 1].iter().all(|t| t.is_dir()));
                    assert!(types.last().unwrap().is_file());
                },
            );
        }
    }

    #[test]
    fn symlink_paths_are_symlinks_at_every_component() {
        for d in [1, 8, 32] {
            with_setup(
                Op::Path {
                    depth: d,
                    symlinks: true,
                },
                |b| {
                    let types = components(b.dir().unwrap(), b.target());
                    assert_eq!(types.len() as u64, d);
                    assert!(types.iter().all(|t| t.is_symlink()));
                    // And the walk through them reaches the file.
                    let full = b.dir().unwrap().join(b.target().to_str().unwrap());
                    assert!(std::fs::metadata(full).unwrap().is_file());
                },
            );
        }
    }

    #[test]
    fn the_chdir_point_holds_k_distinct_files_open() {
        with_setup(Op::ChdirDot { open_files: 500 }, |b| {
            assert_eq!(b.held().len(), 500);
            let dir = b.dir().unwrap();
            let mut targets = std::collections::HashSet::new();
            for fd in b.held() {
                let link = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap();
                assert!(link.starts_with(dir), "{}", link.display());
                targets.insert(link);
            }
            assert_eq!(targets.len(), 500, "the files are distinct");
        });
    }

    #[test]
    fn cache_cases_look_up_what_they_say() {
        with_setup(Op::Cache(CacheCase::Hit), |b| {
            assert!(b.dir().unwrap().join(b.target().to_str().unwrap()).exists());
        });
        for case in [CacheCase::NegativeHit, CacheCase::Miss] {
            with_setup(Op::Cache(case), |b| {
                assert!(!b.dir().unwrap().join(b.target().to_str().unwrap()).exists());
                assert_eq!(names_in(b.dir().unwrap()).len() as u64, CACHE_DIR_ENTRIES);
            });
        }
    }

    #[test]
    fn a_listing_reads_every_entry_and_names_the_owner() {
        let mut b = FsBench::new(Op::List { entries: 60 });
        b.setup(&Ctx::default(), 1).unwrap();
        b.run(2).unwrap();
        let me = std::fs::metadata(b.dir().unwrap()).unwrap();
        let expected = 2
            * 60
            * (sys::user_name(me.uid()).unwrap().map_or(0, |s| s.len())
                + sys::group_name(me.gid()).unwrap().map_or(0, |s| s.len()));
        assert_eq!(b.names_seen, expected);
        b.teardown().unwrap();
    }

    #[test]
    fn drop_removes_the_directory_when_teardown_never_ran() {
        let mut b = FsBench::new(Op::LookupLast { entries: 10 });
        b.setup(&Ctx::default(), 1).unwrap();
        let dir = b.dir().unwrap().to_path_buf();
        assert!(dir.exists());
        drop(b);
        assert!(!dir.exists());
    }
}
