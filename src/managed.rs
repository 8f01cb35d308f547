//! The machine-wide settings sysperf manages when a value comes from data (#41 item 1): which
//! sysctls `explain --try-switches` may set, each with its value's type and range, and the
//! modes of transparent huge pages. Pure: names and values in, a yes or a reason out.
//!
//! Not the rule for `ab --sysctl NAME=VALUE` or `ab --switch thp --on MODE`: there the person
//! at the keyboard typed the setting and its value. `--try-switches` takes both from two
//! stored runs, which an import, a shared PostgreSQL store or any host's upload may have
//! written: a run that records `kernel.core_pattern = |/tmp/x/evil %p` must not make root
//! write it. So a recorded difference is switched only when sysperf knows the setting (the
//! fingerprint's sysctls, the two the kernel-ties table names beside them, two System V IPC
//! limits that cost nothing elsewhere, THP's `enabled`) and the value parses as that
//! setting's type within its range. Settings that guard the machine (address-space
//! randomisation, pointer hiding, the perf and mmap protections) are never lowered by it, and
//! a one-way setting (unprivileged BPF disabled) is never written; those are the engine's
//! checks against the value found, [`lowers_protection`].

/// What a managed value must look like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// One integer in `min..=max`.
    Int { min: i64, max: i64 },
    /// `count` integers, each in `min..=max`, in non-decreasing order when `sorted`.
    Ints {
        count: usize,
        min: i64,
        max: i64,
        sorted: bool,
    },
    /// A list of ports and port ranges (`1000,2000-2010`), at most `max_ports` ports in all,
    /// or empty: reserving the whole ephemeral range would make every connect() fail.
    Ports { max_ports: u32 },
    /// One of the words.
    Word(&'static [&'static str]),
}

/// How a managed setting stands to the machine's protections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    /// Any value of its range may be set and put back.
    None,
    /// A higher value protects more: a value below the one found is not set from data.
    HigherProtects,
    /// Once set it cannot be put back until a reboot: never set from data.
    OneWay,
}

/// A managed setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Managed {
    pub name: &'static str,
    pub kind: Kind,
    pub guard: Guard,
}

const fn int(name: &'static str, min: i64, max: i64) -> Managed {
    Managed {
        name,
        kind: Kind::Int { min, max },
        guard: Guard::None,
    }
}

const fn protecting(name: &'static str, min: i64, max: i64) -> Managed {
    Managed {
        name,
        kind: Kind::Int { min, max },
        guard: Guard::HigherProtects,
    }
}

const I32_MAX: i64 = i32::MAX as i64;
const GIB: i64 = 1 << 30;

/// The THP modes (`/sys/kernel/mm/transparent_hugepage/enabled`).
pub const THP_MODES: &[&str] = &["always", "madvise", "never"];

/// Every sysctl sysperf may set from a recorded value. The ranges keep the machine usable
/// while a value is set (no pid or thread limit under what a busy machine runs, no socket
/// buffers over 1 GiB, no watermark that starves it), within the kernel's own bounds.
pub const SYSCTLS: &[Managed] = &[
    protecting("kernel.randomize_va_space", 0, 2),
    int("kernel.sched_autogroup_enabled", 0, 1),
    int("kernel.numa_balancing", 0, 3),
    int("kernel.timer_migration", 0, 1),
    int("kernel.nmi_watchdog", 0, 1),
    int("kernel.watchdog", 0, 1),
    protecting("kernel.perf_event_paranoid", -1, 4),
    protecting("kernel.kptr_restrict", 0, 2),
    Managed {
        name: "kernel.unprivileged_bpf_disabled",
        kind: Kind::Int { min: 0, max: 2 },
        guard: Guard::OneWay,
    },
    int("kernel.pid_max", 32768, 4_194_304),
    int("kernel.threads-max", 4096, 0x3fff_ffff),
    int("vm.overcommit_memory", 0, 2),
    int("vm.max_map_count", 65530, I32_MAX),
    int("vm.swappiness", 0, 200),
    int("vm.dirty_ratio", 1, 100),
    int("vm.dirty_background_ratio", 1, 100),
    int("vm.dirty_expire_centisecs", 0, 360_000),
    int("vm.zone_reclaim_mode", 0, 7),
    int("vm.stat_interval", 1, 3600),
    // The kernel's own default is at most 256 MiB (its auto-tuning's cap); 1 GiB leaves a
    // machine of a few GiB more than half its memory.
    int("vm.min_free_kbytes", 128, 1 << 20),
    protecting("vm.mmap_min_addr", 0, 65536),
    int("net.core.rmem_default", 4096, GIB),
    int("net.core.wmem_default", 4096, GIB),
    int("net.core.rmem_max", 4096, GIB),
    int("net.core.wmem_max", 4096, GIB),
    int("net.core.busy_poll", 0, 1_000_000),
    int("net.core.busy_read", 0, 1_000_000),
    int("net.core.somaxconn", 128, 1 << 20),
    int("net.core.netdev_max_backlog", 128, 1 << 24),
    // The two the kernel-ties table names beyond the fingerprint's (#34's sysctl cases).
    Managed {
        name: "net.ipv4.tcp_rmem",
        kind: Kind::Ints {
            count: 3,
            min: 1,
            max: GIB,
            sorted: true,
        },
        guard: Guard::None,
    },
    Managed {
        name: "net.ipv4.ip_local_reserved_ports",
        kind: Kind::Ports { max_ports: 32768 },
        guard: Guard::None,
    },
    // System V IPC limits: they bound what IPC objects may be made and cost nothing else
    // (the tests of --try-switches switch them: no fingerprint records them, so no other
    // test's runs see them change).
    int("kernel.shmmni", 1, 32768),
    Managed {
        name: "kernel.sem",
        kind: Kind::Ints {
            count: 4,
            min: 1,
            max: I32_MAX,
            sorted: false,
        },
        guard: Guard::None,
    },
];

/// The managed sysctl `name`, if sysperf manages it.
pub fn sysctl(name: &str) -> Option<&'static Managed> {
    SYSCTLS.iter().find(|m| m.name == name)
}

/// The words of a recorded value (the fingerprint joins a multi-number sysctl's with one
/// space, the kernel with tabs).
fn words(value: &str) -> Vec<&str> {
    value.split_whitespace().collect()
}

fn int_in(word: &str, min: i64, max: i64) -> Result<i64, String> {
    let n: i64 = word
        .parse()
        .map_err(|_| format!("'{word}' is not a whole number"))?;
    if n < min || n > max {
        return Err(format!("{n} is outside {min}..={max}"));
    }
    Ok(n)
}

impl Managed {
    /// Whether `value` is one of this setting's values; why not, if not.
    pub fn check(&self, value: &str) -> Result<(), String> {
        let w = words(value);
        match self.kind {
            Kind::Int { min, max } => match w.as_slice() {
                [one] => int_in(one, min, max).map(|_| ()),
                _ => Err("expected one whole number".into()),
            },
            Kind::Ints {
                count,
                min,
                max,
                sorted,
            } => {
                if w.len() != count {
                    return Err(format!("expected {count} whole numbers"));
                }
                let ns = w
                    .iter()
                    .map(|x| int_in(x, min, max))
                    .collect::<Result<Vec<_>, _>>()?;
                if sorted && ns.windows(2).any(|p| p[0] > p[1]) {
                    return Err("the numbers must not decrease".into());
                }
                Ok(())
            }
            Kind::Ports { max_ports } => {
                let v = value.trim();
                if v.is_empty() {
                    return Ok(());
                }
                let mut ports: u32 = 0;
                for item in v.split(',') {
                    let (lo, hi) = match item.split_once('-') {
                        Some((a, b)) => (int_in(a, 1, 65535)?, int_in(b, 1, 65535)?),
                        None => {
                            let p = int_in(item, 1, 65535)?;
                            (p, p)
                        }
                    };
                    if lo > hi {
                        return Err(format!("the range {item} runs backwards"));
                    }
                    ports += (hi - lo + 1) as u32;
                }
                if ports > max_ports {
                    return Err(format!(
                        "{ports} ports reserved; at most {max_ports} (more would leave connect() no local port)"
                    ));
                }
                Ok(())
            }
            Kind::Word(ws) => {
                if ws.contains(&value) {
                    Ok(())
                } else {
                    Err(format!("expected one of {}", ws.join(", ")))
                }
            }
        }
    }

    /// Why setting `value` where `found` is set now would open or lock a protection of the
    /// machine, if it would.
    pub fn lowers_protection(&self, found: &str, value: &str) -> Option<String> {
        match self.guard {
            Guard::None => None,
            Guard::OneWay => Some(format!(
                "{} cannot be put back once set (only a reboot clears it)",
                self.name
            )),
            Guard::HigherProtects => {
                let num = |v: &str| words(v).first().and_then(|w| w.parse::<i64>().ok());
                match (num(found), num(value)) {
                    (Some(f), Some(v)) if v >= f => None,
                    (Some(f), Some(v)) => Some(format!(
                        "{} = {v} is below this machine's {f}: it would lower a protection for every user while set",
                        self.name
                    )),
                    _ => Some(format!(
                        "{}'s value here ('{found}') cannot be read as a number to compare",
                        self.name
                    )),
                }
            }
        }
    }
}

/// The managed setting a recorded difference names (`sysctl NAME`'s NAME, or
/// `transparent_hugepage`), with its value checked; why not, if not.
pub fn known(name: &str, value: &str) -> Result<Managed, String> {
    let m = if name == "transparent_hugepage" || name == "thp" {
        Managed {
            name: "transparent_hugepage",
            kind: Kind::Word(THP_MODES),
            guard: Guard::None,
        }
    } else {
        *sysctl(name).ok_or_else(|| NOT_MANAGED.to_string())?
    };
    m.check(value)
        .map_err(|why| format!("the value '{value}' is not one of {name}'s: {why}"))?;
    Ok(m)
}

/// What is said of a setting sysperf does not manage.
pub const NOT_MANAGED: &str =
    "not switched: not a setting sysperf manages (its sysctls are the fingerprint's; 'sysperf ab --sysctl NAME=VALUE' switches any other one you name)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fingerprint_sysctl_is_managed_and_its_value_here_passes() {
        for name in crate::fingerprint::SYSCTLS {
            let m = sysctl(name).unwrap_or_else(|| panic!("{name} is not managed"));
            let path = format!("/proc/sys/{}", name.replace('.', "/"));
            // The machine's own value is one of the setting's (where it can be read).
            if let Ok(text) = std::fs::read_to_string(&path) {
                let v = words(&text).join(" ");
                if m.guard != Guard::OneWay || !v.is_empty() {
                    assert!(m.check(&v).is_ok(), "{name} = {v}: {:?}", m.check(&v));
                }
            }
        }
    }

    #[test]
    fn unknown_settings_and_hostile_values_are_refused() {
        let e = known("kernel.core_pattern", "|/tmp/x/evil %p").unwrap_err();
        assert!(e.contains("not a setting sysperf manages"), "{e}");
        assert!(known("kernel.modprobe", "/tmp/x").is_err());
        assert!(known("vm.stat_interval", "1; rm").is_err());
        assert!(known("vm.stat_interval", "0").is_err());
        assert!(known("vm.stat_interval", "2").is_ok());
        assert!(known("kernel.pid_max", "300").is_err());
        assert!(known("transparent_hugepage", "madvise").is_ok());
        assert!(known("transparent_hugepage", "always [madvise]").is_err());
        assert!(known("net.ipv4.tcp_rmem", "4096 131072 6291456").is_ok());
        assert!(known("net.ipv4.tcp_rmem", "4096\t131072\t6291456").is_ok());
        assert!(known("net.ipv4.tcp_rmem", "6291456 131072 4096").is_err());
        assert!(known("net.ipv4.ip_local_reserved_ports", "").is_ok());
        assert!(known("net.ipv4.ip_local_reserved_ports", "1000,2000-2010").is_ok());
        assert!(known("net.ipv4.ip_local_reserved_ports", "1-65535").is_err());
        assert!(known("net.ipv4.ip_local_reserved_ports", "20-10").is_err());
    }

    #[test]
    fn protections_are_not_lowered_and_one_way_settings_never_set() {
        let aslr = sysctl("kernel.randomize_va_space").unwrap();
        assert!(aslr.lowers_protection("2", "0").is_some());
        assert!(aslr.lowers_protection("1", "2").is_none());
        assert!(aslr.lowers_protection("2", "2").is_none());
        let bpf = sysctl("kernel.unprivileged_bpf_disabled").unwrap();
        assert!(bpf.lowers_protection("0", "1").is_some());
        assert!(sysctl("vm.swappiness")
            .unwrap()
            .lowers_protection("60", "0")
            .is_none());
    }
}
