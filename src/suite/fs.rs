//! The `fs` suite: what the file system's cache and block size buy, as the papers asked it
//! (Feder 1984, §3.6 "Disk interaction" and Fig. 6; the 4.2BSD paper, §4.1.6 "File System").
//!
//! - Buffer cache size (Feder §3.6: "the use of a larger buffer cache ... reduces disk
//!   interaction by increasing the likelihood that desired data will be retained in memory";
//!   Fig. 6 counts the buffers systems configured). Today's buffer cache is the page cache,
//!   and its size for one process tree is set with a memory cgroup (`harness::cgroup`): random
//!   4 KiB reads (pread) of a 64 MiB file on a disk-backed file system, in a cgroup that leaves
//!   x MiB for the file's pages, after one sequential pass has filled it. Throughput against x.
//! - File system block size (Feder §3.6: a larger block size "has the effect of cutting almost
//!   in half the number of accesses for sequential reads and writes of large files"): a fresh
//!   ext4 of 1, 2 or 4 KiB blocks (mkfs.ext4 -b) on a loop device, and a 16 MiB file on it read
//!   sequentially from a cold cache (its pages dropped before each pass, and the loop device
//!   reading its backing file with direct I/O, so every pass goes to the disk). Throughput
//!   against the block size.
//! - Fragments (the 4.2BSD paper §4.1.6: "Programs that slowly grow files using write of 1024
//!   bytes or less can force the file system to copy the data to successively larger and larger
//!   fragments until it finally grows to a full sized block"): files grown to 8 KiB by writes
//!   of 1 KiB, and of 4 KiB, on ext4 with 1 KiB and with 4 KiB blocks, each iteration's files
//!   written back (syncfs) inside the timed region so that their blocks are allocated in it.
//!   ext4 has no fragments and allocates at write-back (delayed allocation), so where 4.2BSD
//!   copied growing fragments this shows what small writes and small blocks cost today.
//!
//! Root only for the loop-mounted file systems (and a memory cgroup for the cache sizes): the
//! worker moves into a mount namespace of its own first, attaches the loop device with
//! LO_FLAGS_AUTOCLEAR over an unlinked file on a disk-backed file system, makes the file
//! system and mounts it on a private scratch directory. The mount lives only in that
//! namespace, so it goes with the worker however it ends; the loop device then has no opener
//! and the kernel detaches it, and the unlinked backing file goes with it: a SIGKILL leaves
//! nothing (the scratch directory, empty outside the namespace, goes with the janitor).

use super::{Axis, Point, SeriesSpec, Suite};
use crate::bench::{Benchmark, Ctx, Shape};
use crate::error::BenchError;
use crate::harness::cgroup;
use crate::model::YKind;
use crate::sys;
use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

pub static SUITE: Suite = Suite {
    name: "fs",
    title: "File system: cache size, block size and small writes",
    paper: "Feder, The Evolution of UNIX System Performance (1984), §3.6 and Fig. 6; Leffler, \
            Karels, McKusick (1984), §4.1.6",
    series: || vec![&CACHE, &BLOCK_READ, &GROW_1K, &GROW_4K],
    preflight,
    derive: super::no_derived,
};

/// The file the cache-size series reads at random.
const CACHE_FILE: u64 = 64 << 20;
/// The file the block-size series reads from a cold cache.
const READ_FILE: u64 = 16 << 20;
/// Size of each loop-mounted file system.
const FS_BYTES: u64 = 128 << 20;
/// What the grown files end at.
const GROWN: usize = 8192;
/// Bytes a read moves.
const READ: usize = 4096;

// ---------------------------------------------------------------------------------------------
// A loop-mounted file system of the worker's own

/// mkfs.ext4, found by sysperf's one rule for external programs (`crate::programs`).
fn mkfs() -> Option<PathBuf> {
    crate::programs::find("mkfs.ext4").ok()
}

/// A fresh ext4 of `block` bytes per block, mounted on a scratch directory in this worker's
/// own mount namespace; unmounted and removed by Drop (and by the namespace's end).
pub struct LoopFs {
    mount: PathBuf,
    device: PathBuf,
    mounted: bool,
}

impl LoopFs {
    pub fn new(block: u64) -> Result<LoopFs, BenchError> {
        let mkfs =
            mkfs().ok_or_else(|| BenchError::Protocol("mkfs.ext4 is not installed".into()))?;
        // A namespace of our own first: the mount is seen by this worker only and goes with it.
        sys::private_mount_namespace().map_err(BenchError::sys("unshare(CLONE_NEWNS)"))?;
        let (base, _) = super::disk_dir().map_err(BenchError::Protocol)?;
        let backing =
            sys::unlinked_file(&base).map_err(BenchError::sys("creating the backing file"))?;
        backing
            .set_len(FS_BYTES)
            .map_err(BenchError::sys("sizing the backing file"))?;
        // Direct I/O from the loop device to its file where the file system allows it, so the
        // backing file's own page cache does not serve the reads.
        let (dev, dev_path) = sys::loop_attach(&backing, true)
            .or_else(|_| sys::loop_attach(&backing, false))
            .map_err(BenchError::sys("attaching a loop device"))?;
        drop(backing);
        let out = crate::programs::at(&mkfs)
            .map_err(BenchError::sys("running mkfs.ext4"))?
            .args(["-q", "-F", "-b", &block.to_string(), "-E", "nodiscard"])
            .arg(&dev_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .map_err(BenchError::sys("running mkfs.ext4"))?;
        if !out.status.success() {
            return Err(BenchError::Protocol(format!(
                "mkfs.ext4 -b {block} {}: {}",
                dev_path.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        let mount = crate::harness::janitor::scratch_dir(&base, "fs")
            .map_err(BenchError::sys("mkdir (scratch directory)"))?;
        let mut fs = LoopFs {
            mount,
            device: dev_path.clone(),
            mounted: false,
        };
        sys::mount_device(&dev_path, &fs.mount, c"ext4", libc::MS_NOATIME, "")
            .map_err(BenchError::sys("mounting the file system"))?;
        fs.mounted = true;
        // The mount holds the device now; with this last descriptor closed, its end detaches it.
        drop(dev);
        Ok(fs)
    }

    pub fn path(&self) -> &Path {
        &self.mount
    }

    /// The loop device (/dev/loopN).
    pub fn device(&self) -> &Path {
        &self.device
    }
}

impl Drop for LoopFs {
    fn drop(&mut self) {
        if self.mounted {
            let _ = sys::unmount(&self.mount);
        }
        let _ = std::fs::remove_dir(&self.mount);
    }
}

// ---------------------------------------------------------------------------------------------
// The benchmarks

/// A generator of read offsets (xorshift64*), the same sequence in every trial.
struct Offsets(u64);

impl Offsets {
    fn next(&mut self, blocks: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) % blocks
    }
}

/// Writes `len` bytes into `f`, written back and dropped from the cache as it goes (a memory
/// cgroup's limit would otherwise fill with dirty pages).
fn fill(f: &mut File, len: u64) -> Result<(), BenchError> {
    let chunk: Vec<u8> = (0..256 << 10).map(|i| (i / 4096) as u8 | 1).collect();
    let mut done = 0u64;
    while done < len {
        let n = (chunk.len() as u64).min(len - done) as usize;
        f.write_all(&chunk[..n]).map_err(BenchError::sys("write"))?;
        done += n as u64;
        f.sync_data().map_err(BenchError::sys("fdatasync"))?;
        sys::fadvise_dontneed(f.as_raw_fd(), 0, 0).map_err(BenchError::sys("posix_fadvise"))?;
    }
    Ok(())
}

/// Reads all of `f` sequentially in 64 KiB reads.
fn read_through(f: &File, len: u64) -> Result<(), BenchError> {
    let mut buf = vec![0u8; 64 << 10];
    let mut off = 0u64;
    while off < len {
        let n = f.read_at(&mut buf, off).map_err(BenchError::sys("pread"))?;
        if n == 0 {
            return Err(BenchError::Protocol("the file ended early".into()));
        }
        off += n as u64;
    }
    Ok(())
}

/// Random 4 KiB reads of a file larger than the cache the cgroup leaves it.
struct CacheReads {
    file: Option<File>,
    offsets: Offsets,
    buf: Vec<u8>,
}

impl Benchmark for CacheReads {
    fn setup(&mut self, _ctx: &Ctx, _iterations: u64) -> Result<(), BenchError> {
        let (dir, _) = super::disk_dir().map_err(BenchError::Protocol)?;
        let mut f = sys::unlinked_file(&dir).map_err(BenchError::sys("creating the file"))?;
        fill(&mut f, CACHE_FILE)?;
        // One pass fills the cache to what the cgroup allows, the last pages read kept.
        read_through(&f, CACHE_FILE)?;
        self.file = Some(f);
        self.buf = vec![0; READ];
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let f = self
            .file
            .as_ref()
            .ok_or_else(|| BenchError::Protocol("run before setup".into()))?;
        let blocks = CACHE_FILE / READ as u64;
        for _ in 0..iterations {
            let at = self.offsets.next(blocks) * READ as u64;
            let n = f
                .read_at(&mut self.buf, at)
                .map_err(BenchError::sys("pread"))?;
            if n != READ {
                return Err(BenchError::Protocol(format!("short read: {n} bytes")));
            }
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.file = None;
        Ok(())
    }
}

/// Cold sequential reads of a file on a file system of a given block size.
struct BlockReads {
    block: u64,
    fs: Option<LoopFs>,
    file: Option<File>,
}

impl Benchmark for BlockReads {
    fn setup(&mut self, _ctx: &Ctx, _iterations: u64) -> Result<(), BenchError> {
        let fs = LoopFs::new(self.block)?;
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(fs.path().join("file"))
            .map_err(BenchError::sys("creating the file"))?;
        fill(&mut f, READ_FILE)?;
        self.file = Some(f);
        self.fs = Some(fs);
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let f = self
            .file
            .as_ref()
            .ok_or_else(|| BenchError::Protocol("run before setup".into()))?;
        for _ in 0..iterations {
            // Cold: the file's pages go first, so the pass reads the disk.
            sys::fadvise_dontneed(f.as_raw_fd(), 0, 0).map_err(BenchError::sys("posix_fadvise"))?;
            read_through(f, READ_FILE)?;
        }
        Ok(())
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.file = None;
        self.fs = None;
        Ok(())
    }
}

/// Files grown to 8 KiB by writes of `write` bytes, on a file system of a given block size.
struct Grow {
    block: u64,
    write: usize,
    fs: Option<LoopFs>,
    next: u64,
}

impl Benchmark for Grow {
    fn setup(&mut self, _ctx: &Ctx, _iterations: u64) -> Result<(), BenchError> {
        self.fs = Some(LoopFs::new(self.block)?);
        Ok(())
    }

    fn run(&mut self, iterations: u64) -> Result<(), BenchError> {
        let fs = self
            .fs
            .as_ref()
            .ok_or_else(|| BenchError::Protocol("run before setup".into()))?;
        let data = vec![0x61u8; self.write];
        for _ in 0..iterations {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(fs.path().join(format!("f{}", self.next)))
                .map_err(BenchError::sys("creating a file"))?;
            self.next += 1;
            for _ in 0..GROWN / self.write {
                let n = f.write(&data).map_err(BenchError::sys("write"))?;
                if n != data.len() {
                    return Err(BenchError::Protocol(format!("short write: {n} bytes")));
                }
            }
        }
        // Delayed allocation: the blocks are allocated as the files are written back, here.
        let root = File::open(fs.path()).map_err(BenchError::sys("open"))?;
        sys::syncfs(root.as_raw_fd()).map_err(BenchError::sys("syncfs"))
    }

    fn teardown(&mut self) -> Result<(), BenchError> {
        self.fs = None;
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// The series

/// Memory the cgroup allows beyond the cache's share, as the vm suite's.
const ALLOWANCE: u64 = super::vm::WORKER_ALLOWANCE;

fn cache_points(quick: bool) -> Vec<Point> {
    let sizes: &[u64] = if quick {
        &[16, 96]
    } else {
        &[8, 16, 32, 48, 64, 96]
    };
    sizes
        .iter()
        .map(|&mib| Point {
            bytes_per_op: READ as f64,
            iterations: Some(if quick { 1024 } else { 4096 }),
            memory_limit_bytes: Some((mib << 20) + ALLOWANCE),
            ..Point::new(mib as f64, mib)
        })
        .collect()
}

fn block_points(bytes_per_op: f64, iterations: u64) -> Vec<Point> {
    [1024u64, 2048, 4096]
        .iter()
        .map(|&b| Point {
            bytes_per_op,
            iterations: Some(iterations),
            ..Point::new(b as f64, b)
        })
        .collect()
}

const BLOCK_AXIS: Axis = Axis {
    name: "file system block size",
    unit: "bytes",
    log: true,
};

pub static CACHE: SeriesSpec = SeriesSpec {
    printed: None,
    id: "fs.cache-size",
    figure: "fs.cache-size",
    figure_title: "Random reads against the page cache a cgroup leaves (Feder §3.6, Fig. 6)",
    curve: "4 KiB preads of a 64 MiB file",
    paper: "Feder §3.6: a larger buffer cache \"reduces disk interaction by increasing the \
            likelihood that desired data will be retained in memory\"; Fig. 6: buffers configured \
            over the years (twenty to thirty-five of 512 bytes, then 100, 150-200, over 2000 of \
            1024)",
    today: "random 4 KiB preads of a 64 MiB file on a disk file system, in a memory cgroup \
            leaving x MiB for its pages, after one sequential pass filled them",
    x: Axis {
        name: "page cache",
        unit: "MiB",
        log: false,
    },
    y: YKind::BytesPerSec,
    unit: "read",
    shape: Shape::Single,
    points: cache_points,
    make: |_| {
        Box::new(CacheReads {
            file: None,
            offsets: Offsets(0x9e37_79b9_7f4a_7c15),
            buf: Vec::new(),
        })
    },
    paper_points: &[],
    paper_system: None,
};

pub static BLOCK_READ: SeriesSpec = SeriesSpec {
    printed: None,
    id: "fs.block-read",
    figure: "fs.block-size",
    figure_title: "Cold sequential read of a 16 MiB file against ext4's block size (Feder §3.6)",
    curve: "sequential read from the disk",
    paper: "Feder §3.6: increasing the file system block size \"has the effect of cutting almost \
            in half the number of accesses for sequential reads and writes of large files\"",
    today: "a 16 MiB file on a fresh ext4 (mkfs.ext4 -b x) on a loop device over an unlinked \
            file (direct I/O to it), its pages dropped before each 64 KiB-read pass",
    x: BLOCK_AXIS,
    y: YKind::BytesPerSec,
    unit: "pass",
    shape: Shape::Single,
    points: |quick| {
        let mut p = block_points(READ_FILE as f64, 4);
        if quick {
            p.retain(|p| p.param != 2048);
        }
        p
    },
    make: |b| {
        Box::new(BlockReads {
            block: b,
            fs: None,
            file: None,
        })
    },
    paper_points: &[],
    paper_system: None,
};

macro_rules! grow_series {
    ($name:ident, $id:literal, $curve:literal, $write:expr) => {
        pub static $name: SeriesSpec = SeriesSpec {
            printed: None,
            id: $id,
            figure: "fs.grow",
            figure_title: "Files grown to 8 KiB by small writes, written back (4.2BSD paper §4.1.6)",
            curve: $curve,
            paper: "§4.1.6: \"Programs that slowly grow files using write of 1024 bytes or less \
                    can force the file system to copy the data to successively larger and \
                    larger fragments until it finally grows to a full sized block\"",
            today: "create a file on a fresh loop-mounted ext4 of x-byte blocks, grow it to \
                    8 KiB by writes of the curve's size, close; each iteration's files written \
                    back with syncfs inside the timed region (ext4 allocates at write-back)",
            x: BLOCK_AXIS,
            y: YKind::CostNs,
            unit: "file",
            shape: Shape::Single,
            points: |quick| {
                let mut p = block_points(GROWN as f64, 512);
                // The paper's fragments were 1 KiB of 4 or 8 KiB blocks: 1 and 4 KiB are its ends.
                p.retain(|p| p.param != 2048);
                if quick {
                    p.iter_mut().for_each(|p| p.iterations = Some(128));
                }
                p
            },
            make: |b| {
                Box::new(Grow {
                    block: b,
                    write: $write,
                    fs: None,
                    next: 0,
                })
            },
            paper_points: &[],
            paper_system: None,
        };
    };
}

grow_series!(GROW_1K, "fs.grow-1k", "writes of 1 KiB", 1024);
grow_series!(GROW_4K, "fs.grow-4k", "writes of 4 KiB", 4096);

fn preflight() -> Result<Vec<String>, String> {
    if !sys::is_root() {
        return Err(
            "the loop-mounted file systems and the memory cgroups need root; run sysperf as root"
                .into(),
        );
    }
    if !Path::new("/dev/loop-control").exists() {
        return Err(
            "no /dev/loop-control: the kernel needs loop devices (CONFIG_BLK_DEV_LOOP)".into(),
        );
    }
    let mkfs = mkfs().ok_or("mkfs.ext4 is not installed (e2fsprogs)")?;
    let at = cgroup::probe(64 << 20).map_err(|e| e.to_string())?;
    let (dir, fs) = super::disk_dir()?;
    Ok(vec![
        at,
        format!(
            "loop devices over unlinked files in {} ({fs}), made with {} and mounted in the worker's own mount namespace",
            dir.display(),
            mkfs.display()
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_are_the_papers_questions() {
        let xs = |s: &SeriesSpec, q| (s.points)(q).iter().map(|p| p.x).collect::<Vec<_>>();
        assert_eq!(xs(&CACHE, false), [8.0, 16.0, 32.0, 48.0, 64.0, 96.0]);
        for p in (CACHE.points)(false) {
            assert_eq!(p.memory_limit_bytes, Some(((p.x as u64) << 20) + ALLOWANCE));
        }
        assert_eq!(xs(&BLOCK_READ, false), [1024.0, 2048.0, 4096.0]);
        // §4.1.6's ends: 1 KiB and 4 KiB blocks.
        assert_eq!(xs(&GROW_1K, false), [1024.0, 4096.0]);
        assert_eq!(xs(&GROW_4K, true), [1024.0, 4096.0]);
    }

    #[test]
    fn offsets_cover_the_file() {
        let mut o = Offsets(0x9e37_79b9_7f4a_7c15);
        let blocks = CACHE_FILE / READ as u64;
        let seen: std::collections::HashSet<u64> = (0..100_000).map(|_| o.next(blocks)).collect();
        assert!(seen.len() > 14_000, "{}", seen.len());
        assert!(seen.iter().all(|&b| b < blocks));
    }
}
