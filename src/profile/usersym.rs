//! User-space symbols of a profile: the function a user-mode address of a profiled process was
//! in, or why it cannot be named. Three parts:
//! - the address spaces ([`Spaces`]): which file each process had mapped where and when, from
//!   the sampler's mmap, exec and fork records and the worker's `/proc/PID/maps` at attach
//!   (mappings made before sampling began);
//! - a reader of ELF64 symbol tables ([`ElfSymbols`]): `.symtab`, else `.dynsym`, functions
//!   only, and the loaded segments that turn a file offset into a symbol address;
//! - the frame names ([`Symbolizer::frame`]): `libc.so.6:read`, or the reason in words
//!   (`cat (stripped)`, `(anonymous memory: JIT or generated code)`, `(mapping unknown)`).
//!
//! It names the sampled address only (a flat profile of user functions); it does not unwind
//! user call stacks, read DWARF or separate debug files, demangle C++ or Rust v0 names (Rust's
//! default legacy mangling is demangled: [`demangle_rust`]), or follow a process into another
//! mount namespace (a mapping's path is read in sysperf's own).
//! Files are opened read-only and read only when they are regular files of at most
//! [`MAX_FILE_BYTES`]: their paths come from the profiled processes.

use super::records::Mmap;
use std::collections::HashMap;
use std::io::Read;

/// The largest file read for its symbols (a debug build of a large C++ program is ~1 GiB;
/// every binary and library of a normal system is far below this).
pub const MAX_FILE_BYTES: u64 = 512 << 20;

/// The most parent processes followed to find an inherited mapping (a fork chain is short;
/// this only guards against a cycle in corrupt records).
const MAX_FORK_DEPTH: usize = 64;

/// One executable mapping of a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Map {
    pub start: u64,
    pub end: u64,
    /// Offset in the file of `start`.
    pub pgoff: u64,
    /// A path, or a name in brackets or `//anon` (see [`Mmap::file`]).
    pub file: String,
    /// When it was made (CLOCK_MONOTONIC ns); 0 for mappings that existed at attach.
    pub time_ns: u64,
}

/// Which file each process had mapped where, over the profiled trial.
#[derive(Debug, Default)]
pub struct Spaces {
    maps: HashMap<u32, Vec<Map>>,
    /// Exec times by pid: an exec replaces the process's mappings.
    execs: HashMap<u32, Vec<u64>>,
    /// Parent pid and fork time by pid: a child starts with its parent's mappings, which the
    /// kernel does not report again.
    parents: HashMap<u32, (u32, u64)>,
}

impl Spaces {
    /// From mmap records, exec times (pid, ns), forks (pid, parent pid, ns) and the mappings
    /// that existed at attach (pid, map with time 0). Records without a time (no
    /// sample_id_all) count as made at attach.
    pub fn new(
        mmaps: &[Mmap],
        execs: &[(u32, u64)],
        forks: &[(u32, u32, u64)],
        initial: Vec<(u32, Map)>,
    ) -> Spaces {
        let mut s = Spaces::default();
        for (pid, m) in initial {
            s.maps.entry(pid).or_default().push(m);
        }
        for m in mmaps {
            s.maps.entry(m.pid).or_default().push(Map {
                start: m.start,
                end: m.start.saturating_add(m.len),
                pgoff: m.pgoff,
                file: m.file.clone(),
                time_ns: m.time_ns.unwrap_or(0),
            });
        }
        for &(pid, t) in execs {
            s.execs.entry(pid).or_default().push(t);
        }
        for &(pid, ppid, t) in forks {
            if pid != ppid {
                s.parents.insert(pid, (ppid, t));
            }
        }
        s
    }

    /// The mapping holding `addr` in process `pid` at `time_ns`: its own latest one made since
    /// its last exec, else (when it has not exec'd) its parent's as they were at the fork.
    /// An address the image since the exec does not map is looked up in the one before it:
    /// the exec renames the process before the new program is loaded, and until it is, kernel
    /// samples of the execve call still carry the old program's user address (its call of
    /// execve).
    pub fn find(&self, pid: u32, time_ns: u64, addr: u64) -> Option<&Map> {
        let (mut pid, mut t) = (pid, time_ns);
        for _ in 0..MAX_FORK_DEPTH {
            let exec = self
                .execs
                .get(&pid)
                .and_then(|v| v.iter().copied().filter(|&e| e <= t).max());
            let floor = exec.unwrap_or(0);
            let own = self.maps.get(&pid).and_then(|v| {
                v.iter()
                    .filter(|m| floor <= m.time_ns && m.time_ns <= t)
                    .filter(|m| m.start <= addr && addr < m.end)
                    .max_by_key(|m| m.time_ns)
            });
            if own.is_some() {
                return own;
            }
            match exec {
                // Just before the exec (times are whole nanoseconds; one before is earlier).
                Some(e) if e > 0 => t = e - 1,
                Some(_) => return None,
                None => {
                    let &(ppid, forked) = self.parents.get(&pid)?;
                    (pid, t) = (ppid, forked.min(t));
                }
            }
        }
        None
    }
}

/// The executable mappings of `/proc/PID/maps` text, as made at attach (time 0).
pub fn parse_proc_maps(text: &str) -> Vec<Map> {
    text.lines()
        .filter_map(|line| {
            // start-end perms offset dev inode [path, which may hold spaces]
            let mut rest = line;
            let mut field = || {
                let t = rest.trim_start();
                let end = t.find(char::is_whitespace).unwrap_or(t.len());
                rest = &t[end..];
                &t[..end]
            };
            let (range, perms, offset) = (field(), field(), field());
            let _dev_and_inode = (field(), field());
            let (start, end) = range.split_once('-')?;
            if perms.as_bytes().get(2) != Some(&b'x') {
                return None;
            }
            let path = rest.trim();
            Some(Map {
                start: u64::from_str_radix(start, 16).ok()?,
                end: u64::from_str_radix(end, 16).ok()?,
                pgoff: u64::from_str_radix(offset, 16).ok()?,
                // The kernel's name for anonymous memory in mmap records.
                file: if path.is_empty() {
                    "//anon".into()
                } else {
                    path.into()
                },
                time_ns: 0,
            })
        })
        .collect()
}

/// The executable mappings of process `pid` now (none if they cannot be read).
pub fn proc_maps(pid: u32) -> Vec<Map> {
    std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .map(|t| parse_proc_maps(&t))
        .unwrap_or_default()
}

/// Why an ELF file's symbols cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ElfError {
    #[error("not a 64-bit little-endian ELF file")]
    NotElf64,
    #[error("a truncated or malformed ELF file")]
    Malformed,
}

/// Never the outcome of a command (a file that cannot be read is a frame saying so), but a
/// library error has its exit code: a failure.
impl crate::error::Exit for ElfError {
    fn exit_code(&self) -> i32 {
        crate::exit::FAILURE
    }
}

/// What an address of a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup<'a> {
    Function(&'a str),
    /// The file has no `.symtab` and its `.dynsym` no function there.
    Stripped,
    /// The file has a `.symtab`, and no function symbol covers the address.
    NoSymbol,
    /// The offset is in none of the file's loaded segments.
    NotLoaded,
}

/// The function symbols of an ELF64 file and its loaded segments.
#[derive(Debug, Default)]
pub struct ElfSymbols {
    /// (file offset, virtual address, size in the file) of each PT_LOAD segment.
    loads: Vec<(u64, u64, u64)>,
    /// (start, end, name) by start.
    funcs: Vec<(u64, u64, String)>,
    /// Whether it has a `.symtab` (else it is stripped to its dynamic symbols).
    symtab: bool,
}

/// Binding (global, weak, local), leading underscores, length: the smallest is the name kept
/// among aliases at one address (a global name before a weak or local alias, `__wait4`
/// before `__GI___wait4`).
type Rank = (u8, usize, usize);

const PT_LOAD: u32 = 1;
const SHT_SYMTAB: u32 = 2;
const SHT_DYNSYM: u32 = 11;
const STT_FUNC: u8 = 2;
const STT_GNU_IFUNC: u8 = 10;
const STB_GLOBAL: u8 = 1;
const STB_WEAK: u8 = 2;

fn rd<const N: usize>(b: &[u8], at: u64) -> Option<[u8; N]> {
    let at = usize::try_from(at).ok()?;
    b.get(at..at.checked_add(N)?)?.try_into().ok()
}
fn u16_at(b: &[u8], at: u64) -> Option<u16> {
    rd(b, at).map(u16::from_le_bytes)
}
fn u32_at(b: &[u8], at: u64) -> Option<u32> {
    rd(b, at).map(u32::from_le_bytes)
}
fn u64_at(b: &[u8], at: u64) -> Option<u64> {
    rd(b, at).map(u64::from_le_bytes)
}

/// The NUL-terminated name at `at` of a string table.
fn name_at(strtab: &[u8], at: u32) -> Option<&str> {
    let s = strtab.get(at as usize..)?;
    let end = s.iter().position(|&c| c == 0)?;
    std::str::from_utf8(&s[..end]).ok()
}

impl ElfSymbols {
    /// Reads the segments and function symbols of an ELF64 little-endian file's bytes.
    pub fn parse(b: &[u8]) -> Result<ElfSymbols, ElfError> {
        if b.get(..6) != Some(&[0x7f, b'E', b'L', b'F', 2, 1]) {
            return Err(ElfError::NotElf64);
        }
        let bad = || ElfError::Malformed;
        let phoff = u64_at(b, 0x20).ok_or_else(bad)?;
        let shoff = u64_at(b, 0x28).ok_or_else(bad)?;
        let phentsize = u64::from(u16_at(b, 0x36).ok_or_else(bad)?);
        let phnum = u64::from(u16_at(b, 0x38).ok_or_else(bad)?);
        let shentsize = u64::from(u16_at(b, 0x3a).ok_or_else(bad)?);
        let shnum = u64::from(u16_at(b, 0x3c).ok_or_else(bad)?);
        let bytes = |off: u64, size: u64| -> Option<&[u8]> {
            let off = usize::try_from(off).ok()?;
            b.get(off..off.checked_add(usize::try_from(size).ok()?)?)
        };
        // The `i`th entry of a table at `off`, its fixed part (`len` bytes) within the file.
        let entry = |off: u64, i: u64, size: u64, len: u64| {
            off.checked_add(i.checked_mul(size)?)
                .and_then(|at| bytes(at, len))
        };
        let mut e = ElfSymbols::default();
        for i in 0..phnum {
            let p = entry(phoff, i, phentsize, 40).ok_or_else(bad)?;
            if u32_at(p, 0) == Some(PT_LOAD) {
                e.loads.push((
                    u64_at(p, 8).ok_or_else(bad)?,
                    u64_at(p, 16).ok_or_else(bad)?,
                    u64_at(p, 32).ok_or_else(bad)?,
                ));
            }
        }
        // (type, offset, size, link, entsize) of each section.
        let section = |i: u64| -> Option<(u32, u64, u64, u32, u64)> {
            let s = entry(shoff, i, shentsize, 64)?;
            Some((
                u32_at(s, 4)?,
                u64_at(s, 24)?,
                u64_at(s, 32)?,
                u32_at(s, 40)?,
                u64_at(s, 56)?,
            ))
        };
        let sections: Vec<_> = (0..shnum).filter_map(section).collect();
        e.symtab = sections.iter().any(|s| s.0 == SHT_SYMTAB);
        // (start, end, rank, name): the rank picks one name among aliases at one address.
        let mut all: Vec<(u64, u64, Rank, String)> = Vec::new();
        for &(kind, off, size, link, entsize) in &sections {
            if kind != SHT_SYMTAB && kind != SHT_DYNSYM || entsize < 24 {
                continue;
            }
            let syms = bytes(off, size).ok_or_else(bad)?;
            let strtab = sections
                .get(link as usize)
                .and_then(|s| bytes(s.1, s.2))
                .ok_or_else(bad)?;
            for sym in syms.chunks_exact(entsize as usize) {
                let info = sym[4];
                let shndx = u16_at(sym, 6).ok_or_else(bad)?;
                let value = u64_at(sym, 8).ok_or_else(bad)?;
                let size = u64_at(sym, 16).ok_or_else(bad)?;
                let kind = info & 0xf;
                if kind != STT_FUNC && kind != STT_GNU_IFUNC || shndx == 0 || size == 0 {
                    continue;
                }
                let Some(name) = name_at(strtab, u32_at(sym, 0).ok_or_else(bad)?) else {
                    continue;
                };
                // Global before weak before local; then fewer leading underscores, shorter.
                let bind = match info >> 4 {
                    STB_GLOBAL => 0,
                    STB_WEAK => 1,
                    _ => 2,
                };
                let underscores = name.len() - name.trim_start_matches('_').len();
                let rank = (bind, underscores, name.len());
                all.push((value, value.saturating_add(size), rank, name.to_string()));
            }
        }
        all.sort_by(|a, b| a.0.cmp(&b.0).then(a.2.cmp(&b.2)).then(a.3.cmp(&b.3)));
        // One name per start (the best-ranked alias; .symtab and .dynsym repeat each other).
        all.dedup_by_key(|s| s.0);
        e.funcs = all.into_iter().map(|(s, end, _, n)| (s, end, n)).collect();
        Ok(e)
    }

    /// Whether the file had a `.symtab` (not stripped).
    pub fn has_symtab(&self) -> bool {
        self.symtab
    }

    /// The symbol address of a file offset: through the loaded segment holding it.
    pub fn address_of(&self, offset: u64) -> Option<u64> {
        self.loads
            .iter()
            .find(|&&(off, _, size)| off <= offset && offset - off < size)
            .map(|&(off, vaddr, _)| vaddr.wrapping_add(offset - off))
    }

    /// The function at symbol address `addr`.
    pub fn function_at(&self, addr: u64) -> Option<&str> {
        let i = self.funcs.partition_point(|f| f.0 <= addr);
        // The nearest start at or below; an earlier symbol may be larger and cover it too.
        self.funcs[..i]
            .iter()
            .rev()
            .take(8)
            .find(|f| addr < f.1)
            .map(|f| f.2.as_str())
    }

    /// What file offset `offset` is.
    pub fn lookup(&self, offset: u64) -> Lookup<'_> {
        let Some(addr) = self.address_of(offset) else {
            return Lookup::NotLoaded;
        };
        match self.function_at(addr) {
            Some(f) => Lookup::Function(f),
            None if self.symtab => Lookup::NoSymbol,
            None => Lookup::Stripped,
        }
    }

    /// Every function's (start address, name), for tests here and elsewhere.
    pub fn functions(&self) -> impl Iterator<Item = (u64, &str)> {
        self.funcs.iter().map(|f| (f.0, f.2.as_str()))
    }
}

/// Reads a file named by a profiled process for its symbols: read-only, without blocking on
/// a FIFO or taking a terminal, and only a regular file of at most [`MAX_FILE_BYTES`].
pub fn read_file(path: &str) -> Result<Vec<u8>, String> {
    use std::os::unix::fs::OpenOptionsExt;
    // Checked before opening too: opening some devices acts (a tape rewinds), so a path that
    // is not a regular file is never opened; the check after opening covers a swap between.
    if !std::fs::metadata(path)
        .map_err(|e| e.to_string())?
        .is_file()
    {
        return Err("not a regular file".into());
    }
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| e.to_string())?;
    let meta = f.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!(
            "{} MiB, more than the {} MiB read for symbols",
            meta.len() >> 20,
            MAX_FILE_BYTES >> 20
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    f.take(MAX_FILE_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    Ok(bytes)
}

/// Names user-mode addresses of the profiled processes, reading each file once.
pub struct Symbolizer {
    spaces: Spaces,
    files: HashMap<String, Result<ElfSymbols, String>>,
}

impl Symbolizer {
    pub fn new(spaces: Spaces) -> Symbolizer {
        Symbolizer {
            spaces,
            files: HashMap::new(),
        }
    }

    /// The frame of user address `ip` of process `pid` at `time_ns`: `FILE:FUNCTION`, or
    /// what it is and why it has no name. A `;` (in a file name, or a demangled name) is
    /// written `,`: it joins the frames of a folded stack.
    pub fn frame(&mut self, pid: u32, time_ns: u64, ip: u64) -> String {
        self.name(pid, time_ns, ip).replace(';', ",")
    }

    fn name(&mut self, pid: u32, time_ns: u64, ip: u64) -> String {
        let Some(m) = self.spaces.find(pid, time_ns, ip) else {
            return "(mapping unknown)".into();
        };
        let file = m.file.as_str();
        if file == "//anon" || file == "[heap]" || file.starts_with("[stack") {
            return "(anonymous memory: JIT or generated code)".into();
        }
        if let Some(name) = file.strip_prefix("/memfd:") {
            let name = name.trim_end_matches(" (deleted)");
            return format!("(memfd {name}: JIT or generated code)");
        }
        if !file.starts_with('/') {
            // [vdso], [vsyscall], [uprobes]: the kernel's own code, with no file to read.
            return file.to_string();
        }
        let base = file.rsplit('/').next().unwrap_or(file);
        if let Some(base) = base.strip_suffix(" (deleted)") {
            return format!("{base} (deleted file: its symbols are gone)");
        }
        let offset = ip.wrapping_sub(m.start).wrapping_add(m.pgoff);
        let syms = self.files.entry(file.to_string()).or_insert_with(|| {
            read_file(file).and_then(|b| ElfSymbols::parse(&b).map_err(|e| e.to_string()))
        });
        match syms {
            Err(why) => format!("{base} (unreadable: {why})"),
            Ok(s) => match s.lookup(offset) {
                Lookup::Function(f) => match demangle_rust(f) {
                    Some(d) => format!("{base}:{d}"),
                    None => format!("{base}:{f}"),
                },
                Lookup::Stripped => format!("{base} (stripped)"),
                Lookup::NoSymbol => format!("{base} (no symbol at this address)"),
                Lookup::NotLoaded => format!("{base} (address outside its loaded segments)"),
            },
        }
    }
}

/// A Rust symbol of the legacy mangling (`_ZN` length-prefixed parts, the last a hash
/// `h` and 16 hex digits, then `E`) as Rust prints it, without the hash:
/// `<sysperf::bench::syscall::Syscall as sysperf::bench::Benchmark>::run`. None for any
/// other name (C, or C++, whose nested names have no such hash).
pub fn demangle_rust(sym: &str) -> Option<String> {
    let mut rest = sym.strip_prefix("_ZN")?.strip_suffix('E')?;
    let mut parts = Vec::new();
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit())?;
        let len: usize = rest[..digits].parse().ok()?;
        let part = rest.get(digits..digits.checked_add(len)?)?;
        parts.push(part);
        rest = &rest[digits + len..];
    }
    let hash = parts.pop()?;
    let is_hash = hash.len() == 17
        && hash.starts_with('h')
        && hash[1..].bytes().all(|b| b.is_ascii_hexdigit());
    if !is_hash || parts.is_empty() {
        return None;
    }
    let parts: Option<Vec<String>> = parts.iter().map(|p| unescape_rust(p)).collect();
    Some(parts?.join("::"))
}

/// One part of a legacy-mangled Rust path: `$LT$` `<`, `$u20$` ` `, `..` `::`, and the rest.
fn unescape_rust(part: &str) -> Option<String> {
    let mut p = part;
    // A part that would start with `$` is written with a leading `_`.
    if p.starts_with("_$") {
        p = &p[1..];
    }
    let mut out = String::new();
    while !p.is_empty() {
        if let Some(r) = p.strip_prefix("..") {
            out.push_str("::");
            p = r;
        } else if let Some(r) = p.strip_prefix('$') {
            let end = r.find('$')?;
            let code = &r[..end];
            let c = match code {
                "SP" => '@',
                "BP" => '*',
                "RF" => '&',
                "LT" => '<',
                "GT" => '>',
                "LP" => '(',
                "RP" => ')',
                "C" => ',',
                _ => char::from_u32(u32::from_str_radix(code.strip_prefix('u')?, 16).ok()?)?,
            };
            out.push(c);
            p = &r[end + 1..];
        } else {
            let c = p.chars().next()?;
            out.push(c);
            p = &p[c.len_utf8()..];
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(start: u64, end: u64, file: &str, t: u64) -> Map {
        Map {
            start,
            end,
            pgoff: 0,
            file: file.into(),
            time_ns: t,
        }
    }

    fn mmap(pid: u32, start: u64, len: u64, file: &str, t: u64) -> Mmap {
        Mmap {
            pid,
            start,
            len,
            pgoff: 0,
            file: file.into(),
            time_ns: Some(t),
        }
    }

    #[test]
    fn a_child_sees_its_parents_mappings_until_it_execs() {
        // 10 (the worker, mapped at attach) forks 11 at 100; 11 execs cat at 200.
        let initial = vec![(10, map(0x1000, 0x2000, "/sysperf", 0))];
        let mmaps = [
            mmap(11, 0x1000, 0x1000, "/usr/bin/cat", 210),
            mmap(11, 0x7000, 0x1000, "/lib/libc.so.6", 220),
            // Made by the parent after the fork: not the child's.
            mmap(10, 0x9000, 0x1000, "/later.so", 150),
        ];
        let s = Spaces::new(&mmaps, &[(11, 200)], &[(11, 10, 100)], initial);
        let file = |pid, t, a| s.find(pid, t, a).map(|m| m.file.as_str());
        assert_eq!(file(10, 50, 0x1800), Some("/sysperf"));
        assert_eq!(file(11, 150, 0x1800), Some("/sysperf"), "before its exec");
        assert_eq!(file(11, 300, 0x1800), Some("/usr/bin/cat"), "after it");
        assert_eq!(file(11, 300, 0x7010), Some("/lib/libc.so.6"));
        assert_eq!(file(11, 150, 0x9010), None, "the parent's later mapping");
        assert_eq!(file(10, 160, 0x9010), Some("/later.so"));
        assert_eq!(file(10, 140, 0x9010), None, "not made yet");
        // After the exec the parent's later mappings are still not the child's; an unknown
        // process has none.
        assert_eq!(file(11, 300, 0x9010), None);
        assert_eq!(file(99, 300, 0x1800), None);
        // The execve call itself: renamed at 200, the new image not yet mapped at 205, its
        // user address is the old program's, inherited from the parent.
        assert_eq!(file(11, 205, 0x1800), Some("/sysperf"));
        // Once mapped, the new image wins at that address.
        assert_eq!(file(11, 215, 0x1800), Some("/usr/bin/cat"));
    }

    #[test]
    fn proc_maps_keeps_executable_mappings() {
        let text = "\
55d0c5a00000-55d0c5a28000 r--p 00000000 08:01 1234                       /usr/bin/my prog
55d0c5a28000-55d0c5a9c000 r-xp 00028000 08:01 1234                       /usr/bin/my prog
7ffd1c1f0000-7ffd1c1f2000 r-xp 00000000 00:00 0                          [vdso]
7f0000000000-7f0000001000 rwxp 00000000 00:00 0 
garbage
";
        let m = parse_proc_maps(text);
        assert_eq!(m.len(), 3);
        assert_eq!(
            m[0],
            Map {
                start: 0x55d0c5a28000,
                end: 0x55d0c5a9c000,
                pgoff: 0x28000,
                file: "/usr/bin/my prog".into(),
                time_ns: 0
            }
        );
        assert_eq!(
            (m[1].file.as_str(), m[2].file.as_str()),
            ("[vdso]", "//anon")
        );
    }

    /// A test's own executable: a debug build of it keeps its .symtab.
    fn own_exe() -> (String, ElfSymbols) {
        let path = std::fs::read_link("/proc/self/exe").unwrap();
        let path = path.to_str().unwrap().to_string();
        let syms = ElfSymbols::parse(&read_file(&path).unwrap()).unwrap();
        (path, syms)
    }

    #[inline(never)]
    fn a_function_to_find() -> u64 {
        std::hint::black_box(42)
    }

    #[test]
    fn reads_the_symbols_of_an_elf_file() {
        let (_, syms) = own_exe();
        assert!(syms.has_symtab());
        // A function of the symbol table is found at its start and inside it, by address.
        let (start, name) = syms
            .functions()
            .find(|(_, n)| n.contains("a_function_to_find"))
            .map(|(s, n)| (s, n.to_string()))
            .expect("the test's own function in its symbol table");
        assert_eq!(syms.function_at(start), Some(name.as_str()));
        assert_eq!(syms.function_at(start + 1), Some(name.as_str()));
        assert_eq!(a_function_to_find(), 42);
        // Not ELF, cut short, or garbage: an error, never a panic.
        assert_eq!(
            ElfSymbols::parse(b"#!/bin/sh\n").unwrap_err(),
            ElfError::NotElf64
        );
        let bytes = read_file("/proc/self/exe").unwrap();
        for cut in [64, 4096, bytes.len() / 2] {
            let _ = ElfSymbols::parse(&bytes[..cut]);
        }
    }

    /// A tiny ELF file: one loaded segment (file offset 0x1000, 0x1000 bytes, at 0x401000)
    /// and a symbol table of type `kind` with functions `f` (0x401100, 0x20 bytes, also
    /// named `f_local` as a local alias) and `g` (0x401200, 0x10 bytes) and an object at
    /// 0x401300.
    fn tiny_elf(kind: u32) -> Vec<u8> {
        let mut b = vec![0u8; 0x2000];
        let put = |b: &mut Vec<u8>, at: usize, v: &[u8]| b[at..at + v.len()].copy_from_slice(v);
        put(&mut b, 0, &[0x7f, b'E', b'L', b'F', 2, 1, 1]);
        put(&mut b, 0x20, &64u64.to_le_bytes()); // e_phoff
        put(&mut b, 0x36, &56u16.to_le_bytes());
        put(&mut b, 0x38, &1u16.to_le_bytes());
        let shoff = 0x800usize;
        put(&mut b, 0x28, &(shoff as u64).to_le_bytes());
        put(&mut b, 0x3a, &64u16.to_le_bytes());
        put(&mut b, 0x3c, &3u16.to_le_bytes());
        // PT_LOAD: type, flags, offset, vaddr, paddr, filesz.
        put(&mut b, 64, &PT_LOAD.to_le_bytes());
        put(&mut b, 64 + 8, &0x1000u64.to_le_bytes());
        put(&mut b, 64 + 16, &0x401000u64.to_le_bytes());
        put(&mut b, 64 + 32, &0x1000u64.to_le_bytes());
        let (strtab, symtab) = (0x200usize, 0x300usize);
        let names = b"\0f_local\0f\0g\0obj\0";
        put(&mut b, strtab, names);
        // name, info (bind << 4 | type), value, size.
        let syms: [(u32, u8, u64, u64); 5] = [
            (0, 0, 0, 0),
            (1, STT_FUNC, 0x401100, 0x20),
            (9, STB_GLOBAL << 4 | STT_FUNC, 0x401100, 0x20),
            (11, STB_GLOBAL << 4 | STT_FUNC, 0x401200, 0x10),
            (13, STB_GLOBAL << 4 | 1, 0x401300, 0x10),
        ];
        for (i, &(name, info, value, size)) in syms.iter().enumerate() {
            let at = symtab + 24 * i;
            put(&mut b, at, &name.to_le_bytes());
            b[at + 4] = info;
            put(&mut b, at + 6, &1u16.to_le_bytes()); // a defined section
            put(&mut b, at + 8, &value.to_le_bytes());
            put(&mut b, at + 16, &size.to_le_bytes());
        }
        // Sections: null, the symbols (linked to 2), their strings.
        let sh =
            |b: &mut Vec<u8>, i: usize, kind: u32, off: usize, size: usize, link: u32, ent: u64| {
                let at = shoff + 64 * i;
                put(b, at + 4, &kind.to_le_bytes());
                put(b, at + 24, &(off as u64).to_le_bytes());
                put(b, at + 32, &(size as u64).to_le_bytes());
                put(b, at + 40, &link.to_le_bytes());
                put(b, at + 56, &ent.to_le_bytes());
            };
        sh(&mut b, 1, kind, symtab, 24 * syms.len(), 2, 24);
        sh(&mut b, 2, 3, strtab, names.len(), 0, 0);
        b
    }

    #[test]
    fn looks_up_file_offsets_and_says_stripped() {
        let full = ElfSymbols::parse(&tiny_elf(SHT_SYMTAB)).unwrap();
        // The global name of two aliases; inside and at the last byte.
        assert_eq!(full.lookup(0x1100), Lookup::Function("f"));
        assert_eq!(full.lookup(0x111f), Lookup::Function("f"));
        assert_eq!(full.lookup(0x1208), Lookup::Function("g"));
        // Between functions, and in a data object: no function, though not stripped.
        assert_eq!(full.lookup(0x1120), Lookup::NoSymbol);
        assert_eq!(full.lookup(0x1304), Lookup::NoSymbol);
        assert_eq!(full.lookup(0x800), Lookup::NotLoaded);
        let dynamic = ElfSymbols::parse(&tiny_elf(SHT_DYNSYM)).unwrap();
        assert!(!dynamic.has_symtab());
        assert_eq!(dynamic.lookup(0x1208), Lookup::Function("g"));
        assert_eq!(dynamic.lookup(0x1120), Lookup::Stripped);
        // A symbol table pointing past the file's end is malformed, not a panic.
        let mut bad = tiny_elf(SHT_SYMTAB);
        bad[0x800 + 64 + 32..0x800 + 64 + 40].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(ElfSymbols::parse(&bad).unwrap_err(), ElfError::Malformed);
        // Tables placed at the top of the address space, or entries of any size: no overflow.
        for (at, v) in [(0x20, u64::MAX - 3), (0x28, u64::MAX - 10), (0x20, 0x1ff8)] {
            let mut bad = tiny_elf(SHT_SYMTAB);
            bad[at..at + 8].copy_from_slice(&v.to_le_bytes());
            let _ = ElfSymbols::parse(&bad);
        }
        for at in [0x36, 0x3a] {
            let mut bad = tiny_elf(SHT_DYNSYM);
            bad[at..at + 2].copy_from_slice(&u16::MAX.to_le_bytes());
            let _ = ElfSymbols::parse(&bad);
        }
    }

    #[test]
    fn names_a_running_function_through_the_mapping() {
        // This process's own code, mapped as the kernel reports it: the address of a function
        // of this test binary, through /proc/self/maps, back to its name.
        let pid = std::process::id();
        let ip = a_function_to_find as *const () as usize as u64 + 1;
        let spaces = Spaces::new(
            &[],
            &[],
            &[],
            proc_maps(pid).into_iter().map(|m| (pid, m)).collect(),
        );
        let mut s = Symbolizer::new(spaces);
        let frame = s.frame(pid, 1, ip);
        let (path, _) = own_exe();
        let base = path.rsplit('/').next().unwrap();
        assert!(
            frame.starts_with(&format!("{base}:")) && frame.contains("a_function_to_find"),
            "{frame}"
        );
        assert_eq!(s.frame(pid + 1, 1, ip), "(mapping unknown)");
    }

    #[test]
    fn rust_legacy_names_are_demangled_and_others_left_alone() {
        let d = |s: &str| demangle_rust(s);
        assert_eq!(
            d("_ZN7sysperf3sys14getpid_syscall17h5b032b57c787b993E").as_deref(),
            Some("sysperf::sys::getpid_syscall")
        );
        assert_eq!(
            d("_ZN78_$LT$sysperf..bench..syscall..Syscall$u20$as$u20$sysperf..bench..Benchmark$GT$3run17h7aadd22ec4088192E").as_deref(),
            Some("<sysperf::bench::syscall::Syscall as sysperf::bench::Benchmark>::run")
        );
        assert_eq!(
            d("_ZN4core3ptr85drop_in_place$LT$std..rt..lang_start$LT$$LP$$RP$$GT$..$u7b$$u7b$closure$u7d$$u7d$$GT$17h1234567890abcdefE").as_deref(),
            Some("core::ptr::drop_in_place<std::rt::lang_start<()>::{{closure}}>")
        );
        // C, C++ (no hash, or parameters after the E) and broken names stay as they are.
        for other in [
            "main",
            "_ZN3foo3barEv",
            "_ZN3foo3barE",
            "_ZN99xE",
            "_ZN3foo17hzzzzzzzzzzzzzzzzE",
        ] {
            assert_eq!(d(other), None, "{other}");
        }
    }

    #[test]
    fn says_why_an_address_has_no_name() {
        let initial = vec![
            (1, map(0x1000, 0x2000, "//anon", 0)),
            (1, map(0x3000, 0x4000, "[vdso]", 0)),
            (1, map(0x5000, 0x6000, "/memfd:jit (deleted)", 0)),
            (1, map(0x7000, 0x8000, "/usr/lib/gone.so (deleted)", 0)),
            (1, map(0x9000, 0xa000, "/proc/self/status", 0)),
            (1, map(0xb000, 0xc000, "/dev/null", 0)),
        ];
        let mut s = Symbolizer::new(Spaces::new(&[], &[], &[], initial));
        assert_eq!(
            s.frame(1, 5, 0x1010),
            "(anonymous memory: JIT or generated code)"
        );
        assert_eq!(s.frame(1, 5, 0x3010), "[vdso]");
        assert_eq!(s.frame(1, 5, 0x5010), "(memfd jit: JIT or generated code)");
        assert_eq!(
            s.frame(1, 5, 0x7010),
            "gone.so (deleted file: its symbols are gone)"
        );
        assert_eq!(
            s.frame(1, 5, 0x9010),
            format!("status (unreadable: {})", ElfError::NotElf64)
        );
        assert_eq!(
            s.frame(1, 5, 0xb010),
            "null (unreadable: not a regular file)"
        );
        assert_eq!(s.frame(1, 5, 0xd010), "(mapping unknown)");
        // A `;` in a name would split a folded stack's frame in two.
        let semi = vec![(1, map(0x1000, 0x2000, "/tmp/a;b (deleted)", 0))];
        let mut s = Symbolizer::new(Spaces::new(&[], &[], &[], semi));
        assert_eq!(
            s.frame(1, 5, 0x1010),
            "a,b (deleted file: its symbols are gone)"
        );
    }
}
