//! Kernel symbols from /proc/kallsyms: a table sorted by address, searched by binary search
//! for the function containing a sampled address.
//!
//! Only text symbols (types t, T, w, W) are kept, since samples and return addresses point
//! into code. Module symbols keep their name without the `[module]` suffix. This is not a
//! symbolizer for user space (user frames are named after the process, see `profile`).

use std::fmt;

/// Why the kernel's symbols cannot be used, and how to allow them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KallsymsError {
    /// /proc/kallsyms could not be read at all.
    Unreadable(String),
    /// Every address reads as zero: kptr_restrict hides them from this user.
    Hidden { kptr_restrict: Option<u32> },
    /// The file held no text symbols.
    Empty,
}

impl fmt::Display for KallsymsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KallsymsError::Unreadable(e) => write!(
                f,
                "cannot read /proc/kallsyms ({e}), so kernel samples cannot be named; the kernel needs CONFIG_KALLSYMS and /proc mounted"
            ),
            KallsymsError::Hidden { kptr_restrict } => {
                let fix = match kptr_restrict {
                    Some(2) => "sysctl -w kernel.kptr_restrict=1 (then run as root) or kernel.kptr_restrict=0",
                    _ => "run as root (or with CAP_SYSLOG), or: sysctl -w kernel.kptr_restrict=0",
                };
                write!(
                    f,
                    "/proc/kallsyms shows every address as zero to this user (kernel.kptr_restrict is {}), so kernel samples cannot be named; to allow it: {fix}",
                    kptr_restrict.map(|v| v.to_string()).unwrap_or_else(|| "unknown".into())
                )
            }
            KallsymsError::Empty => write!(f, "/proc/kallsyms lists no kernel functions"),
        }
    }
}

impl std::error::Error for KallsymsError {}

impl crate::error::Exit for KallsymsError {
    fn exit_code(&self) -> i32 {
        crate::exit::FAILURE
    }
}

/// Larger than any kernel function: on 6.18 the largest gap between consecutive text
/// symbols inside the text is 20 KiB (hidinput_connect); the gaps over 1 MiB are the ends of
/// the text sections (_etext, _einittext, __entry_text_end) and alignment padding.
pub const MAX_FUNCTION_BYTES: u64 = 256 * 1024;

/// Text symbols sorted by address.
#[derive(Debug, Clone, Default)]
pub struct Kallsyms {
    addrs: Vec<u64>,
    names: Vec<String>,
}

impl Kallsyms {
    /// Parses the text of /proc/kallsyms ("ADDRESS TYPE NAME [MODULE]" per line).
    pub fn parse(text: &str) -> Result<Kallsyms, KallsymsError> {
        let mut syms: Vec<(u64, &str)> = Vec::new();
        let mut any_nonzero = false;
        let mut any = false;
        for line in text.lines() {
            let mut f = line.split_ascii_whitespace();
            let (Some(addr), Some(kind), Some(name)) = (f.next(), f.next(), f.next()) else {
                continue;
            };
            if !matches!(kind, "t" | "T" | "w" | "W") {
                continue;
            }
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            any = true;
            if addr != 0 {
                any_nonzero = true;
                syms.push((addr, name));
            }
        }
        if any && !any_nonzero {
            return Err(KallsymsError::Hidden {
                kptr_restrict: None,
            });
        }
        if syms.is_empty() {
            return Err(KallsymsError::Empty);
        }
        // Stable: of several names at one address (aliases) the first listed wins.
        syms.sort_by_key(|&(a, _)| a);
        syms.dedup_by_key(|&mut (a, _)| a);
        Ok(Kallsyms {
            addrs: syms.iter().map(|&(a, _)| a).collect(),
            names: syms.into_iter().map(|(_, n)| n.to_string()).collect(),
        })
    }

    /// Reads and parses /proc/kallsyms, explaining hidden addresses with kptr_restrict.
    pub fn load() -> Result<Kallsyms, KallsymsError> {
        let text = std::fs::read_to_string("/proc/kallsyms")
            .map_err(|e| KallsymsError::Unreadable(e.to_string()))?;
        Kallsyms::parse(&text).map_err(|e| match e {
            KallsymsError::Hidden { .. } => KallsymsError::Hidden {
                kptr_restrict: std::fs::read_to_string("/proc/sys/kernel/kptr_restrict")
                    .ok()
                    .and_then(|s| s.trim().parse().ok()),
            },
            other => other,
        })
    }

    /// The function containing `addr`: the symbol with the largest address not above it,
    /// unless that is more than [`MAX_FUNCTION_BYTES`] below it. None below the first symbol
    /// and in such gaps: kallsyms gives no symbol an end, and code it does not list when the
    /// profile is read (a JIT-compiled BPF program unloaded by then, past the last module
    /// symbol, `ftrace_trampoline` here) would otherwise take the name of whatever precedes it.
    pub fn lookup(&self, addr: u64) -> Option<&str> {
        let i = self.addrs.partition_point(|&a| a <= addr);
        (i > 0 && addr - self.addrs[i - 1] < MAX_FUNCTION_BYTES).then(|| self.names[i - 1].as_str())
    }

    pub fn len(&self) -> usize {
        self.addrs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.addrs.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
ffffffff81000000 T _stext
ffffffff81000000 T _text
ffffffff81001000 T do_syscall_64
ffffffff81001400 t x64_sys_call
ffffffff81002000 D some_data
ffffffff81003000 T __x64_sys_getpid
ffffffffc0000000 t helper\t[virtio_net]
garbage line
";

    #[test]
    fn lookup_finds_the_containing_function() {
        let k = Kallsyms::parse(TEXT).unwrap();
        assert_eq!(k.len(), 5);
        assert_eq!(k.lookup(0xffffffff81001000), Some("do_syscall_64"));
        assert_eq!(k.lookup(0xffffffff810013ff), Some("do_syscall_64"));
        assert_eq!(k.lookup(0xffffffff81001400), Some("x64_sys_call"));
        // Data symbols are not functions: the address stays in the function before them.
        assert_eq!(k.lookup(0xffffffff81002500), Some("x64_sys_call"));
        assert_eq!(k.lookup(0xffffffff81003010), Some("__x64_sys_getpid"));
        assert_eq!(k.lookup(0xffffffffc0000010), Some("helper"));
        assert_eq!(k.lookup(0x1000), None);
        // Far past the last symbol (or any): not that function, whatever code is there.
        assert_eq!(k.lookup(0xffffffffc0000000 + MAX_FUNCTION_BYTES), None);
        assert_eq!(
            k.lookup(0xffffffffc0000000 + MAX_FUNCTION_BYTES - 1),
            Some("helper")
        );
        // Aliases: the first name listed at an address wins.
        assert_eq!(k.lookup(0xffffffff81000010), Some("_stext"));
    }

    #[test]
    fn zero_addresses_mean_hidden() {
        let hidden = "0000000000000000 T _stext\n0000000000000000 t do_syscall_64\n";
        assert!(matches!(
            Kallsyms::parse(hidden),
            Err(KallsymsError::Hidden { .. })
        ));
        assert_eq!(Kallsyms::parse("").err(), Some(KallsymsError::Empty));
        let msg = KallsymsError::Hidden {
            kptr_restrict: Some(1),
        }
        .to_string();
        assert!(
            msg.contains("kernel.kptr_restrict is 1")
                && msg.contains("sysctl -w kernel.kptr_restrict=0")
        );
    }
}
