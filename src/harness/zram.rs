//! A swap area of sysperf's own on a zram device, for the trials that page anonymous memory
//! (the `swap` suite: Table 7 under memory pressure, as the 4.2BSD paper ran it, §3.2.8).
//!
//! The paper's paging programs touched 7.3 MB of zero-filled memory on a 4.5 MB machine: pages
//! went out to the swap area and came back with a fault. A memory cgroup (see `cgroup`) makes
//! the small memory today, but anonymous pages can only leave memory for a swap area, and
//! machines (this VM among them) often have none. So the harness makes one per trial, as root:
//! `/sys/class/zram-control/hot_add` gives a fresh zram device (a compressed RAM disk), its
//! `disksize` is set, a swap header is written on it (label `sysperf-zram`, the owner's pid in
//! the UUID) and it is swapped on at the highest priority; after the trial it is swapped off,
//! reset and removed (`hot_remove`), on every path that runs code (Drop: success, failure,
//! timeout, Ctrl-C).
//!
//! A sysperf killed outright (SIGKILL) cannot: each device is recorded in
//! `/run/sysperf-zram/<pid>-<random>` (a root-only directory on a tmpfs, so records live as
//! long as the devices, which a reboot also removes) before it is set up, and the next sysperf
//! that examines the machine (`run`, `trace`, `profile`, `doctor`) and every [`ZramSwap::create`]
//! removes the devices of owners that are gone ([`sweep_stale`]), only those whose swap header
//! still carries sysperf's label and the owner's pid. It measures and prints nothing.

use crate::sys::{self, Pid};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Where the records of the devices live.
pub const RECORDS: &str = "/run/sysperf-zram";
/// The swap header's volume label of every sysperf device.
pub const LABEL: &[u8; 12] = b"sysperf-zram";
const CONTROL: &str = "/sys/class/zram-control";

/// Why no zram swap could be made; each says what to do.
#[derive(Debug, Error)]
pub enum ZramError {
    #[error("paging anonymous memory needs a swap area, which sysperf makes on a zram device as root; run sysperf as root")]
    NotRoot,
    #[error("no zram here ({CONTROL} is missing): the kernel needs CONFIG_ZRAM (the zram module loaded: modprobe zram) for sysperf to make a swap area")]
    NoZram,
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
}

/// No root or no zram is the machine's (and the suite is skipped with the reason); an I/O
/// failure is sysperf's: neither is the user's input.
impl crate::error::Exit for ZramError {
    fn exit_code(&self) -> i32 {
        crate::exit::FAILURE
    }
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> ZramError {
    let what = what.into();
    move |source| ZramError::Io { what, source }
}

/// Whether zram swap can be made here: root and the zram control directory.
pub fn check() -> Result<(), ZramError> {
    if sys::euid() != 0 {
        return Err(ZramError::NotRoot);
    }
    if !Path::new(CONTROL).join("hot_add").exists() {
        return Err(ZramError::NoZram);
    }
    Ok(())
}

/// A swapped-on zram device, removed when dropped.
#[derive(Debug)]
pub struct ZramSwap {
    n: u32,
    record: PathBuf,
    swapped_on: bool,
    removed: bool,
}

fn write_file(path: impl AsRef<Path>, text: &str) -> io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path.as_ref())?
        .write_all(text.as_bytes())
}

/// The swap header of a device of `bytes`: a page whose info block (at byte 1024) says version
/// 1, the last page, no bad pages, the UUID (the owner's pid, then random bytes) and the
/// label, and whose last ten bytes are "SWAPSPACE2" (what mkswap writes).
pub fn swap_header(bytes: u64, owner: Pid, random: &[u8; 12]) -> Vec<u8> {
    let ps = sys::page_size();
    let mut page = vec![0u8; ps];
    let last_page = (bytes / ps as u64).saturating_sub(1) as u32;
    page[1024..1028].copy_from_slice(&1u32.to_ne_bytes());
    page[1028..1032].copy_from_slice(&last_page.to_ne_bytes());
    // nr_badpages = 0 at 1032; the UUID at 1036, the volume name at 1052.
    page[1036..1040].copy_from_slice(&(owner as u32).to_le_bytes());
    page[1040..1052].copy_from_slice(random);
    page[1052..1052 + LABEL.len()].copy_from_slice(LABEL);
    page[ps - 10..].copy_from_slice(b"SWAPSPACE2");
    page
}

/// The owner a device's swap header names, if it is sysperf's.
pub fn header_owner(page: &[u8]) -> Option<Pid> {
    let ps = page.len();
    (ps >= 4096 && &page[ps - 10..] == b"SWAPSPACE2" && &page[1052..1052 + LABEL.len()] == LABEL)
        .then(|| u32::from_le_bytes([page[1036], page[1037], page[1038], page[1039]]) as Pid)
}

fn device(n: u32) -> PathBuf {
    PathBuf::from(format!("/dev/zram{n}"))
}

/// Whether /proc/swaps lists `dev`.
fn swapped_on(dev: &Path) -> bool {
    std::fs::read_to_string("/proc/swaps").is_ok_and(|s| {
        s.lines()
            .skip(1)
            .any(|l| l.split_whitespace().next() == Some(&*dev.to_string_lossy()))
    })
}

impl ZramSwap {
    /// A fresh zram device of `bytes` (what it may hold uncompressed), swapped on at the
    /// highest priority, so that pages evicted meanwhile go to it first.
    pub fn create(bytes: u64) -> Result<ZramSwap, ZramError> {
        ZramSwap::create_for(sys::getpid(), bytes)
    }

    /// [`ZramSwap::create`] recorded as `owner`'s (tests make one for an owner that is gone).
    fn create_for(owner: Pid, bytes: u64) -> Result<ZramSwap, ZramError> {
        check()?;
        let _ = sweep_stale();
        records_dir()?;
        let mut random = [0u8; 12];
        sys::random_bytes(&mut random).map_err(io_err("getrandom"))?;
        let hex: String = random[..6].iter().map(|b| format!("{b:02x}")).collect();
        let record = Path::new(RECORDS).join(format!("{owner}-{hex}"));
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&record)
            .map_err(io_err(format!("creating {}", record.display())))?;
        let mut text = String::new();
        let added = std::fs::File::open(Path::new(CONTROL).join("hot_add"))
            .and_then(|mut h| h.read_to_string(&mut text));
        let n = match added.map(|_| text.trim().parse::<u32>()) {
            Ok(Ok(n)) => n,
            other => {
                let _ = std::fs::remove_file(&record);
                return Err(ZramError::Io {
                    what: format!("adding a zram device ({CONTROL}/hot_add)"),
                    source: match other {
                        Err(e) => e,
                        Ok(_) => io::Error::other(format!("it answered {text:?}")),
                    },
                });
            }
        };
        // Recorded at once: from here on a kill leaves something the sweep can find.
        let _ = f.write_all(n.to_string().as_bytes());
        drop(f);
        let mut z = ZramSwap {
            n,
            record,
            swapped_on: false,
            removed: false,
        };
        let dev = device(n);
        write_file(format!("/sys/block/zram{n}/disksize"), &bytes.to_string())
            .map_err(io_err(format!("setting the size of zram{n}")))?;
        let header = swap_header(bytes, owner, &random);
        std::fs::OpenOptions::new()
            .write(true)
            .open(&dev)
            .and_then(|mut d| {
                d.write_all(&header)?;
                d.sync_all()
            })
            .map_err(io_err(format!(
                "writing the swap header of {}",
                dev.display()
            )))?;
        sys::swapon(&dev, 0x7fff).map_err(io_err(format!("swapon {}", dev.display())))?;
        z.swapped_on = true;
        Ok(z)
    }

    /// The device (/dev/zramN).
    pub fn device(&self) -> PathBuf {
        device(self.n)
    }

    /// Swaps it off, resets and removes it, and its record. Idempotent; called by Drop.
    pub fn remove(&mut self) -> io::Result<()> {
        if self.removed {
            return Ok(());
        }
        if self.swapped_on {
            sys::swapoff(&self.device())?;
            self.swapped_on = false;
        }
        tear_down(self.n)?;
        let _ = std::fs::remove_file(&self.record);
        self.removed = true;
        Ok(())
    }
}

impl Drop for ZramSwap {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// Resets zram device `n` (frees its memory) and removes it.
fn tear_down(n: u32) -> io::Result<()> {
    let _ = write_file(format!("/sys/block/zram{n}/reset"), "1");
    write_file(Path::new(CONTROL).join("hot_remove"), &n.to_string())
}

/// The records' directory, made root-only if missing; refused if it is not a directory of
/// root's (a link, another user's).
fn records_dir() -> Result<(), ZramError> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    match std::fs::DirBuilder::new().mode(0o700).create(RECORDS) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let m = std::fs::symlink_metadata(RECORDS).map_err(io_err(RECORDS))?;
            if m.is_dir() && m.uid() == 0 && m.mode() & 0o022 == 0 {
                Ok(())
            } else {
                Err(ZramError::Io {
                    what: RECORDS.into(),
                    source: io::Error::other("not a directory of root's that only root may write"),
                })
            }
        }
        Err(e) => Err(io_err(RECORDS)(e)),
    }
}

/// The owner in a record's name `<pid>-<hex>`.
fn record_owner(name: &str) -> Option<Pid> {
    name.split('-')
        .next()?
        .parse()
        .ok()
        .filter(|p: &Pid| *p > 0)
}

/// Removes the zram swap devices of sysperf processes that are gone (killed before their
/// Drop ran): swapped off, reset and removed when the device's swap header still names that
/// owner; the record goes either way. Returns the devices removed. Root only (otherwise the
/// records cannot be read, and there is nothing to do).
pub fn sweep_stale() -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(RECORDS) else {
        return removed;
    };
    let me = sys::getpid();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(owner) = record_owner(&name) else {
            continue;
        };
        let made = super::janitor::made_of(&e.metadata());
        if owner == me || !super::janitor::owner_gone(owner, made) {
            continue;
        }
        let n = std::fs::read_to_string(e.path())
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok());
        if let Some(n) = n {
            let dev = device(n);
            let mut page = vec![0u8; sys::page_size()];
            let ours = std::fs::File::open(&dev)
                .and_then(|mut d| d.read_exact(&mut page))
                .ok()
                .and_then(|()| header_owner(&page))
                == Some(owner);
            // A device set up no further than its size has no header yet: it is the record's
            // all the same if nothing swaps on it.
            let unformatted = !ours
                && !swapped_on(&dev)
                && std::fs::read_to_string(format!("/sys/block/zram{n}/disksize"))
                    .is_ok_and(|s| page.iter().all(|&b| b == 0) || s.trim() == "0");
            if ours || unformatted {
                let off = !swapped_on(&dev) || sys::swapoff(&dev).is_ok();
                if off && tear_down(n).is_ok() {
                    removed.push(dev.display().to_string());
                }
            }
        }
        let _ = std::fs::remove_file(e.path());
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_names_its_owner_and_nothing_else_does() {
        let h = swap_header(64 << 20, 4_194_303, &[7; 12]);
        assert_eq!(&h[h.len() - 10..], b"SWAPSPACE2");
        assert_eq!(header_owner(&h), Some(4_194_303));
        let mut other = h.clone();
        other[1052] = b'x';
        assert_eq!(header_owner(&other), None);
        assert_eq!(header_owner(&vec![0; 4096]), None);
        assert_eq!(record_owner("1234-abcdef"), Some(1234));
        assert_eq!(record_owner("x-1"), None);
    }

    /// Root and zram: a device is made, swapped on and removed; one whose owner is gone
    /// (as after SIGKILL) is swept.
    #[test]
    fn a_swap_is_made_and_removed_and_a_killed_owners_is_swept() {
        if check().is_err() {
            println!("skipped: needs root and zram");
            return;
        }
        let mut z = ZramSwap::create(16 << 20).unwrap();
        let dev = z.device();
        assert!(swapped_on(&dev), "{} not in /proc/swaps", dev.display());
        z.remove().unwrap();
        assert!(!swapped_on(&dev));
        assert!(!Path::new(&format!(
            "/sys/block/{}",
            dev.file_name().unwrap().to_string_lossy()
        ))
        .exists());
        // An owner beyond pid_max is gone: its device stays until the sweep takes it.
        let gone = 999_999_996;
        let z = ZramSwap::create_for(gone, 16 << 20).unwrap();
        let dev = z.device();
        std::mem::forget(z);
        assert!(swapped_on(&dev));
        let swept = sweep_stale();
        assert!(swept.contains(&dev.display().to_string()), "{swept:?}");
        assert!(!swapped_on(&dev));
        let left: Vec<_> = std::fs::read_dir(RECORDS)
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("{gone}-"))
            })
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
