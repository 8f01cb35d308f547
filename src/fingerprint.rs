//! Machine fingerprint: the facts about the host, stored with every run, that decide whether
//! two runs can be compared (kernel, CPU, memory, virtualization, cgroup limits, tunables that
//! move results such as the clocksource, SMT, THP and CPU vulnerability mitigations), and what
//! can explain a difference between two kernels: the build configuration (hashed; the options
//! themselves kept once per distinct configuration by the store), the timer tick (CONFIG_HZ,
//! nohz), the sysctls in [`SYSCTLS`] and the microcode revision.
//!
//! It is a best-effort snapshot taken once at the start of a run, read only from plain files
//! under /proc, /sys and /etc. It is not a hardware inventory, not a live monitor, and not proof
//! of identity: it runs no commands (no `dmidecode`, no `lscpu`), needs no privileges, and every
//! fact it cannot read (missing, unreadable or malformed file) is simply `None`. Inside a
//! container /proc/cpuinfo and /proc/meminfo describe the host, not the container's share of it,
//! which is why the cgroup limits are recorded next to them.
//!
//! All paths are resolved under a root directory ([`collect_from`]) so tests can point the
//! collector at a fixture tree; the parsing itself lives in small pure functions.

// Everything here is file reading; nothing needs `unsafe`, so forbid it outright.
#![forbid(unsafe_code)]

use crate::model::Fingerprint;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Upper bound on how much of one file is read. /proc/cpuinfo on a very large machine is a few
/// MiB; the cap only exists so a strange fixture or mount cannot make us read without end.
const MAX_READ: u64 = 16 << 20;

/// cgroup v1 reports "no limit" as a huge page-aligned number (LONG_MAX rounded down), not as a
/// keyword, so anything at or above 2^62 bytes is treated as unlimited.
const UNLIMITED_MEMORY_FLOOR: u64 = 1 << 62;

/// Reads the live system.
pub fn collect() -> Fingerprint {
    let mut fp = collect_from(Path::new("/"));
    // No readable configuration: children of this process tell how the split is made.
    if fp.cpu_split.is_none() {
        fp.cpu_split = crate::cpusplit::calibrate()
            .map(|share| crate::term::line(&crate::cpusplit::from_calibration(share)).into_owned());
    }
    fp
}

/// Same, reading every path under `root` instead of "/" (so tests can point it at a fixture tree).
pub fn collect_from(root: &Path) -> Fingerprint {
    let tree = Tree { root };
    let cpuinfo = tree.read("proc/cpuinfo");
    let cpuinfo = cpuinfo.as_deref();

    // The online list is the kernel's own count of usable logical CPUs; cpuinfo is the fallback
    // for kernels or sandboxes that hide /sys.
    let threads = tree
        .read("sys/devices/system/cpu/online")
        .and_then(|s| parse_cpu_list(&s))
        .or_else(|| cpuinfo.and_then(parse_cpuinfo_threads));
    let cores = cpuinfo.and_then(parse_cpuinfo_cores).or(threads);

    let proc_cgroup = tree
        .read("proc/self/cgroup")
        .map(|s| parse_proc_cgroup(&s))
        .unwrap_or_default();
    let (cgroup_cpu_limit, cgroup_memory_limit_bytes) = cgroup_limits(&tree, &proc_cgroup);
    let config = read_kernel_config(&tree);
    let nohz = nohz_mode(
        &config,
        tree.read("proc/cmdline").as_deref().unwrap_or(""),
        tree.read_trimmed("sys/devices/system/cpu/nohz_full"),
    );

    stored(Fingerprint {
        // "(none)" is the kernel's placeholder for a hostname never set: no hostname.
        hostname: tree
            .read_trimmed("proc/sys/kernel/hostname")
            .filter(|h| h != "(none)"),
        os: tree
            .read("etc/os-release")
            .or_else(|| tree.read("usr/lib/os-release"))
            .and_then(|s| parse_os_release(&s)),
        kernel_release: tree.read_trimmed("proc/sys/kernel/osrelease"),
        kernel_version: tree.read_trimmed("proc/sys/kernel/version"),
        kernel_cmdline: tree.read_trimmed("proc/cmdline"),
        arch: Some(std::env::consts::ARCH.to_string()),
        cpu_model: cpuinfo.and_then(parse_cpu_model),
        cores,
        threads,
        memory_bytes: tree
            .read("proc/meminfo")
            .and_then(|s| parse_meminfo_total(&s)),
        virtualization: virtualization(&tree, cpuinfo),
        clocksource: tree
            .read_trimmed("sys/devices/system/clocksource/clocksource0/current_clocksource"),
        cpufreq_governor: tree.read_trimmed("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        smt: parse_smt(
            tree.read("sys/devices/system/cpu/smt/control").as_deref(),
            tree.read("sys/devices/system/cpu/smt/active").as_deref(),
        ),
        thp: tree
            .read("sys/kernel/mm/transparent_hugepage/enabled")
            .and_then(|s| parse_thp(&s)),
        vulnerabilities: read_vulnerabilities(&tree),
        cgroup_cpu_limit,
        cgroup_memory_limit_bytes,
        cgroup_version: proc_cgroup.version().map(str::to_string),
        loadavg: tree.read("proc/loadavg").and_then(|s| parse_loadavg(&s)),
        hz: config.get("CONFIG_HZ").and_then(|v| v.parse().ok()),
        cpu_split: crate::cpusplit::from_config(&config, nohz.as_deref()),
        nohz,
        kernel_config_hash: (!config.is_empty()).then(|| config_hash(&config)),
        kernel_config: config,
        sysctls: read_sysctls(&tree),
        microcode: cpuinfo.and_then(|c| cpuinfo_first(c, "microcode").map(str::to_string)),
    })
}

/// The fingerprint as it is stored: every text passed through [`crate::term::line`] (control
/// characters, newline and tab included, and the bidi and zero-width characters written as
/// visible escapes), the host name through [`hostname_text`]. The text is whatever the
/// kernel, the firmware or an administrator put there; escaped here, where it is read, it
/// prints on one line everywhere and every run that holds it exports (the export file allows
/// no control character in these fields: #29 item 8).
fn stored(fp: Fingerprint) -> Fingerprint {
    // Every field named, no `..`: a new field must be decided here.
    let Fingerprint {
        hostname,
        os,
        kernel_release,
        kernel_version,
        kernel_cmdline,
        arch,
        cpu_model,
        cores,
        threads,
        memory_bytes,
        virtualization,
        clocksource,
        cpufreq_governor,
        smt,
        thp,
        vulnerabilities,
        cgroup_cpu_limit,
        cgroup_memory_limit_bytes,
        cgroup_version,
        loadavg,
        hz,
        nohz,
        kernel_config_hash,
        kernel_config,
        sysctls,
        microcode,
        cpu_split,
    } = fp;
    let line = |s: Option<String>| s.map(|s| crate::term::line(&s).into_owned());
    let lines = |m: BTreeMap<String, String>| -> BTreeMap<String, String> {
        m.into_iter()
            .map(|(k, v)| {
                (
                    crate::term::line(&k).into_owned(),
                    crate::term::line(&v).into_owned(),
                )
            })
            .collect()
    };
    Fingerprint {
        hostname: hostname.map(|h| hostname_text(&h)),
        os: line(os),
        kernel_release: line(kernel_release),
        kernel_version: line(kernel_version),
        kernel_cmdline: line(kernel_cmdline),
        arch: line(arch),
        cpu_model: line(cpu_model),
        cores,
        threads,
        memory_bytes,
        virtualization: line(virtualization),
        clocksource: line(clocksource),
        cpufreq_governor: line(cpufreq_governor),
        smt: line(smt),
        thp: line(thp),
        vulnerabilities: lines(vulnerabilities),
        cgroup_cpu_limit,
        cgroup_memory_limit_bytes,
        cgroup_version: line(cgroup_version),
        loadavg,
        hz,
        nohz: line(nohz),
        kernel_config_hash: line(kernel_config_hash),
        kernel_config: lines(kernel_config),
        sysctls: lines(sysctls),
        microcode: line(microcode),
        cpu_split: line(cpu_split),
    }
}

/// A host name as stored: letters, digits, '.', '-' and '_' as they are (all a host name
/// should hold, and all the export file accepts), any other character written as `_x1b`
/// (below U+0100) or `_u202e`, at most 253 characters. sethostname(2) takes any bytes, so a
/// name with a space, a control or a bidi character is possible; this keeps it readable,
/// distinct from the others and exportable.
pub fn hostname_text(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
            out.push(c);
        } else if u32::from(c) < 0x100 {
            out.push_str(&format!("_x{:02x}", u32::from(c)));
        } else {
            out.push_str(&format!("_u{:x}", u32::from(c)));
        }
    }
    out.chars().take(253).collect()
}

/// This machine's host name as a fingerprint records it ([`hostname_text`]), if it has one.
pub fn this_hostname() -> Option<String> {
    let raw = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let h = raw.trim();
    (!h.is_empty() && h != "(none)").then(|| hostname_text(h))
}

/// The sysctls recorded in the fingerprint: those LEBench or the kernel's documentation tie
/// to the benchmarks' costs (`data/kernel-ties.tsv` says which and why).
pub const SYSCTLS: &[&str] = &[
    "kernel.randomize_va_space",
    "kernel.sched_autogroup_enabled",
    "kernel.numa_balancing",
    "kernel.timer_migration",
    "kernel.nmi_watchdog",
    "kernel.watchdog",
    "kernel.perf_event_paranoid",
    "kernel.kptr_restrict",
    "kernel.unprivileged_bpf_disabled",
    "kernel.pid_max",
    "kernel.threads-max",
    "vm.overcommit_memory",
    "vm.max_map_count",
    "vm.swappiness",
    "vm.dirty_ratio",
    "vm.dirty_background_ratio",
    "vm.dirty_expire_centisecs",
    "vm.zone_reclaim_mode",
    "vm.stat_interval",
    "vm.min_free_kbytes",
    "vm.mmap_min_addr",
    "net.core.rmem_default",
    "net.core.wmem_default",
    "net.core.rmem_max",
    "net.core.wmem_max",
    "net.core.busy_poll",
    "net.core.busy_read",
    "net.core.somaxconn",
    "net.core.netdev_max_backlog",
];

fn read_sysctls(tree: &Tree) -> BTreeMap<String, String> {
    SYSCTLS
        .iter()
        .filter_map(|name| {
            let rel = format!("proc/sys/{}", name.replace('.', "/"));
            let v = tree.read(&rel)?;
            // Multi-value sysctls are tab-separated; one space reads the same everywhere.
            let v = v.split_whitespace().collect::<Vec<_>>().join(" ");
            (!v.is_empty()).then(|| (name.to_string(), v))
        })
        .collect()
}

/// The kernel's build configuration: /proc/config.gz (CONFIG_IKCONFIG_PROC), else
/// /boot/config-RELEASE; empty when neither can be read.
fn read_kernel_config(tree: &Tree) -> BTreeMap<String, String> {
    let gz = read_bytes(&tree.path("proc/config.gz")).and_then(|b| {
        let mut text = String::new();
        flate2::read::GzDecoder::new(&b[..])
            .take(MAX_READ)
            .read_to_string(&mut text)
            .ok()?;
        Some(text)
    });
    let text = gz.or_else(|| {
        let release = tree.read_trimmed("proc/sys/kernel/osrelease")?;
        tree.read(&format!("boot/config-{release}"))
    });
    text.map(|t| parse_kernel_config(&t)).unwrap_or_default()
}

/// The set options of a kernel .config (`CONFIG_X=value` lines; `# CONFIG_X is not set` and
/// other comments are left out), values unquoted as written.
pub fn parse_kernel_config(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.trim().split_once('=')?;
            k.starts_with("CONFIG_")
                .then(|| (k.to_string(), v.trim_matches('"').to_string()))
        })
        .collect()
}

/// FNV-1a 64 over `KEY=value\n` of the options in order, as 16 hex digits: equal sets, equal
/// hashes, whatever order or comments the file had.
pub fn config_hash(config: &BTreeMap<String, String>) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (k, v) in config {
        for b in k.bytes().chain([b'=']).chain(v.bytes()).chain([b'\n']) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

/// The tick's mode from the configuration, the command line and the nohz_full CPU list.
pub fn nohz_mode(
    config: &BTreeMap<String, String>,
    cmdline: &str,
    nohz_full_cpus: Option<String>,
) -> Option<String> {
    let set = |k: &str| config.get(k).is_some_and(|v| v == "y");
    let mode = if cmdline.split_whitespace().any(|w| w == "nohz=off") {
        "off"
    } else if set("CONFIG_NO_HZ_FULL") && nohz_full_cpus.is_some_and(|c| c != "(null)") {
        "full"
    } else if set("CONFIG_NO_HZ_IDLE") || set("CONFIG_NO_HZ_FULL") || set("CONFIG_NO_HZ") {
        "idle"
    } else if set("CONFIG_HZ_PERIODIC") {
        "periodic"
    } else {
        return None;
    };
    Some(mode.to_string())
}

/// Paths relative to the root being fingerprinted.
struct Tree<'a> {
    root: &'a Path,
}

impl Tree<'_> {
    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }
    fn read(&self, rel: &str) -> Option<String> {
        read_text(&self.path(rel))
    }
    fn read_trimmed(&self, rel: &str) -> Option<String> {
        self.read(rel).and_then(|s| parse_trimmed(&s))
    }
    fn exists(&self, rel: &str) -> bool {
        self.path(rel).exists()
    }
}

/// Reads at most [`MAX_READ`] bytes of a regular file. Only regular files are opened so that a
/// FIFO or device in a fixture tree cannot block the run.
fn read_bytes(path: &Path) -> Option<Vec<u8>> {
    if !fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let mut buf = Vec::new();
    fs::File::open(path)
        .ok()?
        .take(MAX_READ)
        .read_to_end(&mut buf)
        .ok()?;
    Some(buf)
}

/// Lossy on purpose: a stray non-UTF-8 byte (cmdline, DMI strings) should not cost the field.
fn read_text(path: &Path) -> Option<String> {
    read_bytes(path).map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// The whole content, trimmed; None when nothing is left.
pub(crate) fn parse_trimmed(s: &str) -> Option<String> {
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// PRETTY_NAME from os-release, unquoted, falling back to NAME.
pub(crate) fn parse_os_release(s: &str) -> Option<String> {
    let mut pretty = None;
    let mut name = None;
    // Later assignments win, as they would when the file is sourced by a shell.
    for line in s.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        match key.trim() {
            "PRETTY_NAME" => pretty = unquote(value),
            "NAME" => name = unquote(value),
            _ => {}
        }
    }
    pretty.or(name)
}

/// Strips the shell quoting os-release values use: matching single or double quotes, and
/// backslash escapes inside double quotes. A lone unmatched quote is dropped rather than kept.
fn unquote(value: &str) -> Option<String> {
    let v = value.trim();
    let quoted_by = |q: char| v.len() >= 2 && v.starts_with(q) && v.ends_with(q);
    let out = if quoted_by('"') {
        let mut out = String::new();
        let mut chars = v[1..v.len() - 1].chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                out.extend(chars.next());
            } else {
                out.push(c);
            }
        }
        out
    } else if quoted_by('\'') {
        v[1..v.len() - 1].to_string()
    } else {
        v.trim_matches(|c| c == '"' || c == '\'').to_string()
    };
    parse_trimmed(&out)
}

/// "key : value" pairs of /proc/cpuinfo, trimmed, in file order.
fn cpuinfo_fields(cpuinfo: &str) -> impl Iterator<Item = (&str, &str)> {
    cpuinfo
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim(), v.trim()))
}

fn cpuinfo_first<'a>(cpuinfo: &'a str, key: &str) -> Option<&'a str> {
    cpuinfo_fields(cpuinfo)
        .find(|(k, v)| *k == key && !v.is_empty())
        .map(|(_, v)| v)
}

/// The CPU's marketing name. x86 has "model name"; other architectures name it differently
/// (old ARM "Processor", MIPS "cpu model", RISC-V "uarch", POWER "cpu"), and arm64 only gives
/// implementer and part numbers, which are still enough to tell two machines apart.
pub(crate) fn parse_cpu_model(cpuinfo: &str) -> Option<String> {
    for key in ["model name", "Processor", "cpu model", "uarch", "cpu"] {
        if let Some(v) = cpuinfo_first(cpuinfo, key) {
            // Some Intel names pad with runs of spaces; collapse them so equal CPUs compare equal.
            return Some(v.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
    let implementer = cpuinfo_first(cpuinfo, "CPU implementer")?;
    let part = cpuinfo_first(cpuinfo, "CPU part")?;
    let vendor = u32::from_str_radix(implementer.trim_start_matches("0x"), 16)
        .ok()
        .and_then(arm_implementer)
        .map_or_else(|| format!("implementer {implementer}"), str::to_string);
    Some(format!("{vendor} part {part}"))
}

/// The most common arm64 implementer codes (MIDR_EL1 bits 31:24).
fn arm_implementer(code: u32) -> Option<&'static str> {
    Some(match code {
        0x41 => "ARM",
        0x42 => "Broadcom",
        0x43 => "Cavium",
        0x46 => "Fujitsu",
        0x48 => "HiSilicon",
        0x4e => "NVIDIA",
        0x51 => "Qualcomm",
        0x61 => "Apple",
        0x6d => "Microsoft",
        0xc0 => "Ampere",
        _ => return None,
    })
}

/// Number of "processor" entries (logical CPUs the kernel lists).
pub(crate) fn parse_cpuinfo_threads(cpuinfo: &str) -> Option<u32> {
    let n = cpuinfo_fields(cpuinfo)
        .filter(|(k, _)| *k == "processor")
        .count();
    u32::try_from(n).ok().filter(|n| *n > 0)
}

/// Distinct (physical id, core id) pairs. None unless every processor entry has both, since a
/// partial count would understate the cores; the caller then falls back to the thread count.
pub(crate) fn parse_cpuinfo_cores(cpuinfo: &str) -> Option<u32> {
    #[derive(Default)]
    struct Entry<'a> {
        processor: bool,
        physical: Option<&'a str>,
        core: Option<&'a str>,
    }
    let mut pairs = BTreeSet::new();
    let mut complete = true;
    let mut flush = |e: &mut Entry<'_>| {
        if e.processor {
            match (e.physical, e.core) {
                (Some(p), Some(c)) => {
                    pairs.insert((p.to_string(), c.to_string()));
                }
                _ => complete = false,
            }
        }
        *e = Entry::default();
    };
    let mut entry = Entry::default();
    for line in cpuinfo.lines() {
        if line.trim().is_empty() {
            flush(&mut entry);
            continue;
        }
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        match k.trim() {
            "processor" => entry.processor = true,
            "physical id" => entry.physical = Some(v.trim()),
            "core id" => entry.core = Some(v.trim()),
            _ => {}
        }
    }
    flush(&mut entry);
    if !complete || pairs.is_empty() {
        return None;
    }
    u32::try_from(pairs.len()).ok()
}

/// Number of CPUs in a kernel CPU list such as "0-3,5".
pub(crate) fn parse_cpu_list(s: &str) -> Option<u32> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    let mut total: u32 = 0;
    for part in s.split(',') {
        let part = part.trim();
        let count = match part.split_once('-') {
            Some((a, b)) => {
                let a: u32 = a.parse().ok()?;
                let b: u32 = b.parse().ok()?;
                b.checked_sub(a)?.checked_add(1)?
            }
            None => {
                part.parse::<u32>().ok()?;
                1
            }
        };
        total = total.checked_add(count)?;
    }
    Some(total)
}

/// MemTotal in bytes (the file says kB, meaning KiB).
pub(crate) fn parse_meminfo_total(meminfo: &str) -> Option<u64> {
    let rest = meminfo.lines().find_map(|l| l.strip_prefix("MemTotal:"))?;
    let mut it = rest.split_whitespace();
    let kib: u64 = it.next()?.parse().ok()?;
    match (it.next(), it.next()) {
        (Some("kB"), None) => kib.checked_mul(1024),
        _ => None,
    }
}

/// Whether the x86 "hypervisor" CPU flag is set; None when there is no "flags" line (other
/// architectures, which have no such flag, so its absence proves nothing there).
pub(crate) fn parse_hypervisor_flag(cpuinfo: &str) -> Option<bool> {
    cpuinfo_fields(cpuinfo)
        .find(|(k, _)| *k == "flags")
        .map(|(_, v)| v.split_whitespace().any(|f| f == "hypervisor"))
}

/// Names the hypervisor from the DMI system vendor and product strings, when they are a
/// known virtual platform. Order matters: "QEMU" vendors often ship a "KVM" product, and the
/// cloud names are more telling than the hypervisor beneath them.
pub(crate) fn hypervisor_from_dmi(
    sys_vendor: Option<&str>,
    product_name: Option<&str>,
) -> Option<&'static str> {
    const KNOWN: &[(&str, &str)] = &[
        ("firecracker", "firecracker"),
        ("amazon ec2", "amazon"),
        ("google compute engine", "google"),
        (
            "microsoft corporation virtual machine",
            "microsoft (hyper-v)",
        ),
        ("vmware", "vmware"),
        ("innotek", "virtualbox"),
        ("virtualbox", "virtualbox"),
        ("parallels", "parallels"),
        ("xen", "xen"),
        ("bhyve", "bhyve"),
        ("openstack", "openstack"),
        ("qemu", "qemu"),
        ("kvm", "kvm"),
        ("bochs", "bochs"),
    ];
    let dmi = format!(
        "{} {}",
        sys_vendor.unwrap_or("").trim(),
        product_name.unwrap_or("").trim()
    )
    .to_lowercase();
    KNOWN
        .iter()
        .find(|(pattern, _)| dmi.contains(pattern))
        .map(|(_, name)| *name)
}

/// Paravirtual clocksources only register under their hypervisor, so they name it when DMI is
/// absent (Firecracker and other minimal VMMs expose no DMI tables).
pub(crate) fn hypervisor_from_clocksources(available: &str) -> Option<&'static str> {
    available.split_whitespace().find_map(|c| match c {
        "kvm-clock" => Some("kvm"),
        "xen" => Some("xen"),
        c if c.starts_with("hyperv_clocksource") => Some("microsoft (hyper-v)"),
        _ => None,
    })
}

/// Whether PID 1's environment (NUL-separated) sets `container=`, as systemd-nspawn, podman
/// and LXC do.
pub(crate) fn environ_has_container(environ: &[u8]) -> bool {
    environ
        .split(|b| *b == 0)
        .any(|var| var.starts_with(b"container="))
}

/// The short virtualization string. On x86 the CPU flag is authoritative (a cloud vendor in
/// DMI with no flag is a bare-metal instance); elsewhere a known hypervisor name is trusted.
pub(crate) fn describe_virtualization(
    hypervisor_flag: Option<bool>,
    hypervisor: Option<&str>,
    container: bool,
) -> String {
    let base = match (hypervisor_flag, hypervisor) {
        (Some(false), _) => "none",
        (_, Some(name)) => name,
        (Some(true), None) => "vm (unknown hypervisor)",
        (None, None) => "none",
    };
    if container {
        format!("{base}+container")
    } else {
        base.to_string()
    }
}

fn virtualization(tree: &Tree, cpuinfo: Option<&str>) -> Option<String> {
    let flag = cpuinfo.and_then(parse_hypervisor_flag);
    let sys_vendor = tree.read("sys/class/dmi/id/sys_vendor");
    let product = tree.read("sys/class/dmi/id/product_name");
    let clocksources =
        tree.read("sys/devices/system/clocksource/clocksource0/available_clocksource");
    let hypervisor = hypervisor_from_dmi(sys_vendor.as_deref(), product.as_deref())
        .or_else(|| {
            // Xen guests without DMI still expose the hypervisor type here.
            tree.read_trimmed("sys/hypervisor/type")
                .filter(|t| t == "xen")
                .map(|_| "xen")
        })
        .or_else(|| {
            clocksources
                .as_deref()
                .and_then(hypervisor_from_clocksources)
        });
    // /proc/1/environ is root-only on most systems; unreadable just means "no evidence".
    let container = tree.exists(".dockerenv")
        || tree.exists("run/.containerenv")
        || read_bytes(&tree.path("proc/1/environ")).is_some_and(|e| environ_has_container(&e));
    // With no source at all, "none" would be a claim made on no evidence.
    let any_evidence = cpuinfo.is_some()
        || sys_vendor.is_some()
        || product.is_some()
        || clocksources.is_some()
        || container;
    any_evidence.then(|| describe_virtualization(flag, hypervisor, container))
}

/// SMT state from /sys/devices/system/cpu/smt/{control,active}, e.g. "on (active)".
pub(crate) fn parse_smt(control: Option<&str>, active: Option<&str>) -> Option<String> {
    let control = control?.trim();
    if control.is_empty() || control.contains(char::is_whitespace) {
        return None;
    }
    // "active" is always 0 when SMT is off or absent, so it adds nothing there.
    if matches!(
        control,
        "off" | "forceoff" | "notsupported" | "notimplemented"
    ) {
        return Some(control.to_string());
    }
    Some(match active.map(str::trim) {
        Some("1") => format!("{control} (active)"),
        Some("0") => format!("{control} (inactive)"),
        _ => control.to_string(),
    })
}

/// The selected (bracketed) value of a sysfs choice file: "always [madvise] never" -> "madvise".
pub(crate) fn parse_thp(s: &str) -> Option<String> {
    let rest = &s[s.find('[')? + 1..];
    parse_trimmed(&rest[..rest.find(']')?])
}

fn read_vulnerabilities(tree: &Tree) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Ok(entries) = fs::read_dir(tree.path("sys/devices/system/cpu/vulnerabilities")) else {
        return out;
    };
    for entry in entries.flatten() {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if let Some(status) = read_text(&entry.path()).and_then(|s| parse_trimmed(&s)) {
            out.insert(name, status);
        }
    }
    out
}

/// This process's cgroup membership as /proc/self/cgroup lists it.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct ProcCgroup {
    /// Path in the unified (v2) hierarchy, from the "0::/path" line.
    unified: Option<String>,
    /// v1 hierarchies: their controllers (or "name=..." for named ones) and path.
    v1: Vec<(Vec<String>, String)>,
}

impl ProcCgroup {
    /// This process's path in the unified (v2) hierarchy.
    pub(crate) fn unified(&self) -> Option<&str> {
        self.unified.as_deref()
    }

    /// "v2", "v1", or "hybrid" (v1 controllers alongside a unified line). Named v1 hierarchies
    /// (e.g. "name=systemd") carry no controllers, so they do not make a v2 system hybrid.
    fn version(&self) -> Option<&'static str> {
        let has_v1 = self
            .v1
            .iter()
            .any(|(ctrls, _)| ctrls.iter().any(|c| !c.starts_with("name=")));
        match (has_v1, self.unified.is_some()) {
            (true, true) => Some("hybrid"),
            (true, false) => Some("v1"),
            (false, true) => Some("v2"),
            (false, false) => None,
        }
    }

    /// The v1 hierarchy holding `controller`: its controller list and this process's path.
    pub(crate) fn v1_controller(&self, controller: &str) -> Option<(&[String], &str)> {
        self.v1
            .iter()
            .find(|(ctrls, _)| ctrls.iter().any(|c| c == controller))
            .map(|(ctrls, path)| (ctrls.as_slice(), path.as_str()))
    }
}

/// Parses /proc/self/cgroup ("hierarchy-id:controllers:path" lines); malformed lines are skipped.
pub(crate) fn parse_proc_cgroup(s: &str) -> ProcCgroup {
    let mut out = ProcCgroup::default();
    for line in s.lines() {
        // The path is last and may itself contain ':'.
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(ctrls), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let Ok(id) = id.parse::<u32>() else {
            continue;
        };
        if !path.starts_with('/') {
            continue;
        }
        if id == 0 && ctrls.is_empty() {
            out.unified = Some(path.to_string());
        } else if !ctrls.is_empty() {
            let ctrls = ctrls.split(',').map(str::to_string).collect();
            out.v1.push((ctrls, path.to_string()));
        }
    }
    out
}

/// CPUs allowed by a v2 cpu.max ("$QUOTA $PERIOD"); None for "max" (unlimited) or malformed.
pub(crate) fn parse_cpu_max(s: &str) -> Option<f64> {
    let mut it = s.split_whitespace();
    let quota = it.next()?;
    if quota == "max" {
        return None;
    }
    let period = it.next()?;
    if it.next().is_some() {
        return None;
    }
    quota_cpus(quota.parse().ok()?, period.parse().ok()?)
}

/// CPUs allowed by v1 cpu.cfs_quota_us / cpu.cfs_period_us; quota -1 means unlimited.
pub(crate) fn parse_cfs_quota(quota: &str, period: &str) -> Option<f64> {
    let quota: i64 = quota.trim().parse().ok()?;
    let quota = u64::try_from(quota).ok()?;
    quota_cpus(quota, period.trim().parse().ok()?)
}

fn quota_cpus(quota: u64, period: u64) -> Option<f64> {
    (quota > 0 && period > 0).then(|| quota as f64 / period as f64)
}

/// A memory limit in bytes from v2 memory.max or v1 memory.limit_in_bytes; None if unlimited.
pub(crate) fn parse_memory_limit(s: &str) -> Option<u64> {
    let s = s.trim();
    if s == "max" {
        return None;
    }
    s.parse::<u64>()
        .ok()
        .filter(|v| *v < UNLIMITED_MEMORY_FLOOR)
}

/// Effective (most restrictive) CPU and memory limits of this process's cgroup.
fn cgroup_limits(tree: &Tree, cg: &ProcCgroup) -> (Option<f64>, Option<u64>) {
    // In hybrid mode the unified hierarchy is mounted at .../unified; in pure v2 at the top.
    // cgroup.controllers exists only at a v2 mount, which tells them apart.
    let unified_mount = ["sys/fs/cgroup", "sys/fs/cgroup/unified"]
        .into_iter()
        .map(|m| tree.path(m))
        .find(|m| m.join("cgroup.controllers").is_file());
    let unified = cg.unified.as_deref().zip(unified_mount.as_deref());

    let cpu = if let Some((ctrls, path)) = cg.v1_controller("cpu") {
        v1_mount(tree, "cpu", ctrls).and_then(|mount| {
            walk_min(&mount, path, |dir| {
                let quota = read_text(&dir.join("cpu.cfs_quota_us"))?;
                let period = read_text(&dir.join("cpu.cfs_period_us"))?;
                parse_cfs_quota(&quota, &period)
            })
        })
    } else {
        unified.and_then(|(path, mount)| {
            walk_min(mount, path, |dir| {
                parse_cpu_max(&read_text(&dir.join("cpu.max"))?)
            })
        })
    };

    let memory = if let Some((ctrls, path)) = cg.v1_controller("memory") {
        v1_mount(tree, "memory", ctrls).and_then(|mount| {
            walk_min(&mount, path, |dir| {
                parse_memory_limit(&read_text(&dir.join("memory.limit_in_bytes"))?)
            })
        })
    } else {
        unified.and_then(|(path, mount)| {
            walk_min(mount, path, |dir| {
                parse_memory_limit(&read_text(&dir.join("memory.max"))?)
            })
        })
    };
    (cpu, memory)
}

/// Where a v1 controller is mounted: conventionally /sys/fs/cgroup/<controller>, or under the
/// joined name of co-mounted controllers ("cpu,cpuacct") when the symlink is missing.
fn v1_mount(tree: &Tree, controller: &str, ctrls: &[String]) -> Option<PathBuf> {
    [controller.to_string(), ctrls.join(",")]
        .into_iter()
        .filter(|name| !name.contains('/') && name != ".." && name != ".")
        .map(|name| tree.path("sys/fs/cgroup").join(name))
        .find(|p| p.is_dir())
}

/// Applies `read` to the cgroup directory and every ancestor up to the mount, keeping the
/// smallest limit, since a parent's limit binds its children. If the directory is absent
/// (common in containers, where the mount is the container's own cgroup while
/// /proc/self/cgroup still shows the host path) the mount root alone is used.
fn walk_min<T: PartialOrd>(
    mount: &Path,
    cgroup_path: &str,
    read: impl Fn(&Path) -> Option<T>,
) -> Option<T> {
    let comps: Vec<&str> = cgroup_path
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    let mut dirs = vec![mount.to_path_buf()];
    // ".." could only come from a corrupt file; never let it lead outside the mount.
    if !comps.contains(&"..") {
        let mut dir = mount.to_path_buf();
        for c in &comps {
            dir.push(c);
            dirs.push(dir.clone());
        }
        if !dir.is_dir() {
            dirs.truncate(1);
        }
    }
    dirs.iter()
        .map(|d| read(d))
        .fold(None, |best, limit| match (best, limit) {
            (Some(b), Some(l)) => Some(if l < b { l } else { b }),
            (b, None) => b,
            (None, l) => l,
        })
}

/// The 1, 5 and 15 minute load averages.
pub(crate) fn parse_loadavg(s: &str) -> Option<[f64; 3]> {
    let mut it = s
        .split_whitespace()
        .map(|t| t.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0));
    Some([it.next()??, it.next()??, it.next()??])
}

#[cfg(test)]
mod tests {
    use super::*;

    const CPUINFO_X86: &str = "processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC   7B13
physical id\t: 0
core id\t\t: 0
flags\t\t: fpu vme hypervisor lahf_lm

processor\t: 1
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC   7B13
physical id\t: 0
core id\t\t: 0
flags\t\t: fpu vme hypervisor lahf_lm

";

    const CPUINFO_ARM64: &str = "processor\t: 0
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm
CPU implementer\t: 0x41
CPU architecture: 8
CPU variant\t: 0x3
CPU part\t: 0xd0c

processor\t: 1
CPU implementer\t: 0x41
CPU part\t: 0xd0c
";

    #[test]
    fn trimmed() {
        assert_eq!(parse_trimmed("vm\n").as_deref(), Some("vm"));
        assert_eq!(parse_trimmed("  \n"), None);
        assert_eq!(parse_trimmed(""), None);
    }

    #[test]
    fn os_release() {
        let debian = "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nID=debian\n";
        assert_eq!(
            parse_os_release(debian).as_deref(),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
        assert_eq!(
            parse_os_release("PRETTY_NAME='Arch Linux'\n").as_deref(),
            Some("Arch Linux")
        );
        assert_eq!(
            parse_os_release("PRETTY_NAME=Alpine\n").as_deref(),
            Some("Alpine")
        );
        assert_eq!(
            parse_os_release("PRETTY_NAME=\"Say \\\"hi\\\"\"").as_deref(),
            Some("Say \"hi\"")
        );
        assert_eq!(
            parse_os_release("PRETTY_NAME=\"Unclosed\n").as_deref(),
            Some("Unclosed")
        );
        assert_eq!(
            parse_os_release("NAME=\"Fedora Linux\"\nPRETTY_NAME=\"\"\n").as_deref(),
            Some("Fedora Linux")
        );
        assert_eq!(parse_os_release("garbage\n\0\n"), None);
        assert_eq!(parse_os_release(""), None);
    }

    #[test]
    fn cpu_model() {
        assert_eq!(
            parse_cpu_model(CPUINFO_X86).as_deref(),
            Some("AMD EPYC 7B13")
        );
        assert_eq!(
            parse_cpu_model(CPUINFO_ARM64).as_deref(),
            Some("ARM part 0xd0c")
        );
        assert_eq!(
            parse_cpu_model("CPU implementer\t: 0x99\nCPU part\t: 0x001\n").as_deref(),
            Some("implementer 0x99 part 0x001")
        );
        assert_eq!(
            parse_cpu_model("Processor\t: ARMv7 Processor rev 10 (v7l)\n").as_deref(),
            Some("ARMv7 Processor rev 10 (v7l)")
        );
        assert_eq!(
            parse_cpu_model("cpu\t\t: POWER9 (raw), altivec supported\n").as_deref(),
            Some("POWER9 (raw), altivec supported")
        );
        assert_eq!(parse_cpu_model("model name\t:\n"), None);
        assert_eq!(parse_cpu_model("nonsense without colons"), None);
        assert_eq!(parse_cpu_model(""), None);
    }

    #[test]
    fn cpuinfo_threads() {
        assert_eq!(parse_cpuinfo_threads(CPUINFO_X86), Some(2));
        assert_eq!(parse_cpuinfo_threads(CPUINFO_ARM64), Some(2));
        assert_eq!(parse_cpuinfo_threads("vendor_id : x\n"), None);
        assert_eq!(parse_cpuinfo_threads(""), None);
    }

    #[test]
    fn cpuinfo_cores() {
        // Two hyperthreads of one core.
        assert_eq!(parse_cpuinfo_cores(CPUINFO_X86), Some(1));
        let two_sockets = "processor : 0\nphysical id : 0\ncore id : 0\n\n\
                           processor : 1\nphysical id : 0\ncore id : 1\n\n\
                           processor : 2\nphysical id : 1\ncore id : 0\n\n\
                           processor : 3\nphysical id : 1\ncore id : 0\n";
        assert_eq!(parse_cpuinfo_cores(two_sockets), Some(3));
        // No topology ids (arm64), or only some entries with them: no count.
        assert_eq!(parse_cpuinfo_cores(CPUINFO_ARM64), None);
        let partial = "processor : 0\nphysical id : 0\ncore id : 0\n\nprocessor : 1\n";
        assert_eq!(parse_cpuinfo_cores(partial), None);
        assert_eq!(parse_cpuinfo_cores(""), None);
    }

    #[test]
    fn cpu_list() {
        assert_eq!(parse_cpu_list("0-3,5\n"), Some(5));
        assert_eq!(parse_cpu_list("0-1\n"), Some(2));
        assert_eq!(parse_cpu_list("0"), Some(1));
        assert_eq!(parse_cpu_list("0-1,4-7,9"), Some(7));
        assert_eq!(parse_cpu_list(""), None);
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("0-"), None);
        assert_eq!(parse_cpu_list("a-b"), None);
        assert_eq!(parse_cpu_list("0,,1"), None);
        assert_eq!(parse_cpu_list("0-4294967295"), None);
    }

    #[test]
    fn meminfo_total() {
        let meminfo = "MemTotal:       24684084 kB\nMemFree:        23774324 kB\n";
        assert_eq!(parse_meminfo_total(meminfo), Some(24684084 * 1024));
        assert_eq!(parse_meminfo_total("MemTotal: 1024\n"), None);
        assert_eq!(parse_meminfo_total("MemTotal: lots kB\n"), None);
        assert_eq!(
            parse_meminfo_total("MemTotal: 99999999999999999 kB\n"),
            None
        );
        assert_eq!(parse_meminfo_total("MemFree: 1 kB\n"), None);
        assert_eq!(parse_meminfo_total(""), None);
    }

    #[test]
    fn hypervisor_flag() {
        assert_eq!(parse_hypervisor_flag(CPUINFO_X86), Some(true));
        assert_eq!(
            parse_hypervisor_flag("flags\t: fpu vme hypervisorx\n"),
            Some(false)
        );
        assert_eq!(parse_hypervisor_flag(CPUINFO_ARM64), None);
        assert_eq!(parse_hypervisor_flag(""), None);
    }

    #[test]
    fn dmi() {
        let cases = [
            (
                Some("QEMU\n"),
                Some("Standard PC (Q35 + ICH9, 2009)\n"),
                Some("qemu"),
            ),
            (Some("Red Hat"), Some("KVM"), Some("kvm")),
            (
                Some("Microsoft Corporation"),
                Some("Virtual Machine"),
                Some("microsoft (hyper-v)"),
            ),
            (
                Some("Microsoft Corporation"),
                Some("Surface Laptop 5"),
                None,
            ),
            (
                Some("VMware, Inc."),
                Some("VMware Virtual Platform"),
                Some("vmware"),
            ),
            (Some("Xen"), Some("HVM domU"), Some("xen")),
            (Some("Amazon EC2"), Some("m5.large"), Some("amazon")),
            (Some("innotek GmbH"), Some("VirtualBox"), Some("virtualbox")),
            (Some("Dell Inc."), Some("PowerEdge R640"), None),
            (None, None, None),
        ];
        for (vendor, product, want) in cases {
            assert_eq!(
                hypervisor_from_dmi(vendor, product),
                want,
                "{vendor:?} {product:?}"
            );
        }
    }

    #[test]
    fn clocksources() {
        assert_eq!(
            hypervisor_from_clocksources("tsc kvm-clock \n"),
            Some("kvm")
        );
        assert_eq!(
            hypervisor_from_clocksources("hyperv_clocksource_tsc_page acpi_pm"),
            Some("microsoft (hyper-v)")
        );
        assert_eq!(hypervisor_from_clocksources("xen tsc"), Some("xen"));
        assert_eq!(hypervisor_from_clocksources("tsc hpet acpi_pm\n"), None);
        assert_eq!(hypervisor_from_clocksources(""), None);
    }

    #[test]
    fn container_environ() {
        assert!(environ_has_container(b"PATH=/bin\0container=podman\0"));
        assert!(environ_has_container(b"container=lxc"));
        assert!(!environ_has_container(b"HOME=/\0TERM=xterm\0"));
        assert!(!environ_has_container(b"notcontainer=1\0"));
        assert!(!environ_has_container(b"\xff\xfe\0"));
        assert!(!environ_has_container(b""));
    }

    #[test]
    fn virtualization_string() {
        assert_eq!(
            describe_virtualization(Some(true), Some("kvm"), false),
            "kvm"
        );
        assert_eq!(
            describe_virtualization(Some(true), None, false),
            "vm (unknown hypervisor)"
        );
        assert_eq!(
            describe_virtualization(Some(false), Some("amazon"), false),
            "none"
        );
        assert_eq!(
            describe_virtualization(Some(false), None, true),
            "none+container"
        );
        assert_eq!(describe_virtualization(None, Some("qemu"), false), "qemu");
        assert_eq!(describe_virtualization(None, None, false), "none");
        assert_eq!(
            describe_virtualization(Some(true), Some("kvm"), true),
            "kvm+container"
        );
    }

    #[test]
    fn smt() {
        assert_eq!(
            parse_smt(Some("on\n"), Some("1\n")).as_deref(),
            Some("on (active)")
        );
        assert_eq!(
            parse_smt(Some("on"), Some("0")).as_deref(),
            Some("on (inactive)")
        );
        assert_eq!(parse_smt(Some("on"), None).as_deref(), Some("on"));
        assert_eq!(parse_smt(Some("off"), Some("0")).as_deref(), Some("off"));
        assert_eq!(
            parse_smt(Some("notsupported\n"), Some("0\n")).as_deref(),
            Some("notsupported")
        );
        assert_eq!(
            parse_smt(Some("on"), Some("garbage")).as_deref(),
            Some("on")
        );
        assert_eq!(parse_smt(Some(""), Some("1")), None);
        assert_eq!(parse_smt(Some("two words"), Some("1")), None);
        assert_eq!(parse_smt(None, Some("1")), None);
    }

    #[test]
    fn thp() {
        assert_eq!(
            parse_thp("always [madvise] never\n").as_deref(),
            Some("madvise")
        );
        assert_eq!(
            parse_thp("[always] madvise never").as_deref(),
            Some("always")
        );
        assert_eq!(parse_thp("always madvise never"), None);
        assert_eq!(parse_thp("always [madvise never"), None);
        assert_eq!(parse_thp("] ["), None);
        assert_eq!(parse_thp("[]"), None);
        assert_eq!(parse_thp(""), None);
    }

    #[test]
    fn proc_cgroup() {
        let v2 = parse_proc_cgroup("0::/user.slice/session-1.scope\n");
        assert_eq!(v2.version(), Some("v2"));
        assert_eq!(v2.unified.as_deref(), Some("/user.slice/session-1.scope"));
        assert_eq!(v2.v1_controller("cpu"), None);

        // This is what the development machine reports.
        let hybrid = parse_proc_cgroup(
            "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/580ae65e\n2:cpuacct:/\n1:cpu:/\n0::/\n",
        );
        assert_eq!(hybrid.version(), Some("hybrid"));
        let (ctrls, path) = hybrid.v1_controller("memory").unwrap();
        assert_eq!(
            (ctrls, path),
            (&["memory".to_string()][..], "/process_api/580ae65e")
        );

        let v1 = parse_proc_cgroup("4:cpu,cpuacct:/x:y\n3:memory:/y\n");
        assert_eq!(v1.version(), Some("v1"));
        let (ctrls, path) = v1.v1_controller("cpu").unwrap();
        assert_eq!(ctrls.join(","), "cpu,cpuacct");
        assert_eq!(path, "/x:y");

        // A named hierarchy beside the unified one is still v2.
        assert_eq!(
            parse_proc_cgroup("1:name=systemd:/\n0::/\n").version(),
            Some("v2")
        );
        let junk = parse_proc_cgroup("hello\n::\nx:cpu:/\n1:cpu:relative\n\0\n");
        assert_eq!(junk, ProcCgroup::default());
        assert_eq!(junk.version(), None);
    }

    #[test]
    fn cpu_max() {
        assert_eq!(parse_cpu_max("max 100000\n"), None);
        assert_eq!(parse_cpu_max("200000 100000\n"), Some(2.0));
        assert_eq!(parse_cpu_max("50000 100000"), Some(0.5));
        assert_eq!(parse_cpu_max("200000"), None);
        assert_eq!(parse_cpu_max("abc 100000"), None);
        assert_eq!(parse_cpu_max("100000 0"), None);
        assert_eq!(parse_cpu_max("1 2 3"), None);
        assert_eq!(parse_cpu_max(""), None);
    }

    #[test]
    fn cfs_quota() {
        assert_eq!(parse_cfs_quota("-1\n", "100000\n"), None);
        assert_eq!(parse_cfs_quota("150000\n", "100000\n"), Some(1.5));
        assert_eq!(parse_cfs_quota("x", "100000"), None);
        assert_eq!(parse_cfs_quota("100000", ""), None);
        assert_eq!(parse_cfs_quota("100000", "0"), None);
    }

    #[test]
    fn memory_limit() {
        assert_eq!(parse_memory_limit("max\n"), None);
        assert_eq!(parse_memory_limit("1073741824\n"), Some(1 << 30));
        assert_eq!(parse_memory_limit("9223372036854771712\n"), None);
        assert_eq!(parse_memory_limit("-1"), None);
        assert_eq!(parse_memory_limit("12 MB"), None);
        assert_eq!(parse_memory_limit(""), None);
    }

    #[test]
    fn loadavg() {
        assert_eq!(
            parse_loadavg("0.09 0.04 0.01 3/103 3322\n"),
            Some([0.09, 0.04, 0.01])
        );
        assert_eq!(parse_loadavg("1.5 2.5 3.5"), Some([1.5, 2.5, 3.5]));
        assert_eq!(parse_loadavg("1.0 2.0"), None);
        assert_eq!(parse_loadavg("a b c"), None);
        assert_eq!(parse_loadavg("nan 1 2"), None);
        assert_eq!(parse_loadavg("-1 1 2"), None);
        assert_eq!(parse_loadavg(""), None);
    }

    fn put(root: &Path, rel: &str, content: &str) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }

    const CONFIG: &str = "#\n# Linux/x86 6.8.0 Kernel Configuration\n#\nCONFIG_HZ_250=y\nCONFIG_HZ=250\n\
                          CONFIG_NO_HZ_IDLE=y\n# CONFIG_NO_HZ_FULL is not set\nCONFIG_LOCALVERSION=\"-x\"\n";

    #[test]
    fn kernel_config_from_boot_or_proc_gz_hz_nohz_sysctls_microcode() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        put(root, "proc/sys/kernel/osrelease", "6.8.0-x\n");
        put(root, "boot/config-6.8.0-x", CONFIG);
        put(root, "proc/sys/vm/overcommit_memory", "1\n");
        put(root, "proc/sys/kernel/randomize_va_space", "2\n");
        put(root, "proc/sys/net/core/rmem_default", "212992\n");
        put(
            root,
            "proc/cpuinfo",
            "processor\t: 0\nmicrocode\t: 0xa0011d1\n",
        );
        let fp = collect_from(root);
        assert_eq!(fp.hz, Some(250));
        assert_eq!(fp.nohz.as_deref(), Some("idle"));
        assert_eq!(fp.kernel_config.len(), 4);
        assert_eq!(fp.kernel_config["CONFIG_LOCALVERSION"], "-x");
        assert!(!fp.kernel_config.contains_key("CONFIG_NO_HZ_FULL"));
        assert_eq!(fp.kernel_config_hash.as_deref().map(str::len), Some(16));
        assert_eq!(fp.sysctls["vm.overcommit_memory"], "1");
        assert_eq!(fp.sysctls["net.core.rmem_default"], "212992");
        assert_eq!(fp.sysctls.len(), 3);
        assert_eq!(fp.microcode.as_deref(), Some("0xa0011d1"));
        // /proc/config.gz wins over /boot, and the same options give the same hash.
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, format!("{CONFIG}CONFIG_EXTRA=y\n").as_bytes()).unwrap();
        fs::write(root.join("proc/config.gz"), gz.finish().unwrap()).unwrap();
        let with_gz = collect_from(root);
        assert_eq!(with_gz.kernel_config["CONFIG_EXTRA"], "y");
        assert_ne!(with_gz.kernel_config_hash, fp.kernel_config_hash);
        let reordered = parse_kernel_config("CONFIG_HZ=250\nCONFIG_HZ_250=y\n");
        let same = parse_kernel_config("# c\nCONFIG_HZ_250=y\nCONFIG_HZ=250\n");
        assert_eq!(config_hash(&reordered), config_hash(&same));
        // No configuration: no hash, no tick facts.
        let empty = collect_from(tempfile::tempdir().unwrap().path());
        assert_eq!((empty.hz, empty.kernel_config_hash), (None, None));
    }

    #[test]
    fn nohz_modes() {
        let cfg = |s: &str| parse_kernel_config(s);
        let full = cfg("CONFIG_NO_HZ_FULL=y\n");
        assert_eq!(
            nohz_mode(&full, "", Some("2-3".into())).as_deref(),
            Some("full")
        );
        assert_eq!(nohz_mode(&full, "", None).as_deref(), Some("idle"));
        assert_eq!(
            nohz_mode(&full, "ro nohz=off", None).as_deref(),
            Some("off")
        );
        let periodic = cfg("CONFIG_HZ_PERIODIC=y\n");
        assert_eq!(nohz_mode(&periodic, "", None).as_deref(), Some("periodic"));
        assert_eq!(nohz_mode(&BTreeMap::new(), "", None), None);
    }

    /// Every string in `v` (keys included).
    fn strings(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::String(s) => out.push(s.clone()),
            serde_json::Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
            serde_json::Value::Object(o) => o.iter().for_each(|(k, x)| {
                out.push(k.clone());
                strings(x, out)
            }),
            _ => {}
        }
    }

    #[test]
    fn text_read_from_the_machine_is_stored_on_one_line_escaped() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        // sethostname(2) takes any bytes; the others are the kernel's, firmware's or an
        // administrator's text.
        put(root, "proc/sys/kernel/hostname", "ok\n  ! FAKE\u{1b}[2J\n");
        put(root, "proc/sys/kernel/osrelease", "6.8\u{1b}]0;x\u{7}\n");
        put(root, "proc/sys/kernel/version", "#1 SMP\tPREEMPT\u{202e}\n");
        put(root, "proc/cmdline", "root=/dev/vda\u{9b}31m quiet\n");
        put(
            root,
            "proc/cpuinfo",
            "model name\t: Evil\u{1b}[1m CPU\u{200b}\n",
        );
        put(root, "etc/os-release", "PRETTY_NAME=\"Deb\\\u{7}ian\"\n");
        put(
            root,
            "sys/devices/system/cpu/vulnerabilities/meltdown",
            "Not\u{0}affected\n",
        );
        let fp = collect_from(root);
        assert_eq!(
            fp.hostname.as_deref(),
            Some("ok_x0a_x20_x20_x21_x20FAKE_x1b_x5b2J")
        );
        assert_eq!(fp.kernel_release.as_deref(), Some("6.8\\x1b]0;x\\x07"));
        assert_eq!(
            fp.kernel_version.as_deref(),
            Some("#1 SMP\\x09PREEMPT\\u{202e}")
        );
        assert_eq!(
            fp.kernel_cmdline.as_deref(),
            Some("root=/dev/vda\\x9b31m quiet")
        );
        assert_eq!(fp.cpu_model.as_deref(), Some("Evil\\x1b[1m CPU\\u{200b}"));
        assert_eq!(fp.os.as_deref(), Some("Deb\\x07ian"));
        assert_eq!(fp.vulnerabilities["meltdown"], "Not\\x00affected");
        let mut all = Vec::new();
        strings(&serde_json::to_value(&fp).unwrap(), &mut all);
        for s in &all {
            assert!(
                !s.chars()
                    .any(|c| c.is_control() || crate::term::deceptive(c)),
                "{s:?}"
            );
        }
        // A host name as long as the kernel allows (64 bytes), all escaped, still fits.
        assert_eq!(hostname_text(&"\u{1b}".repeat(64)).chars().count(), 253);
        assert_eq!(hostname_text("bench-01.example_x"), "bench-01.example_x");
    }

    #[test]
    fn collect_from_v2_fixture() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        put(root, "proc/sys/kernel/hostname", "bench-01\n");
        put(root, "proc/sys/kernel/osrelease", "6.8.0-45-generic\n");
        put(root, "proc/cpuinfo", CPUINFO_X86);
        put(root, "proc/meminfo", "MemTotal:       2048 kB\n");
        put(root, "proc/loadavg", "0.50 0.25 0.10 1/200 42\n");
        put(root, "etc/os-release", "PRETTY_NAME=\"Ubuntu 24.04 LTS\"\n");
        put(root, "sys/devices/system/cpu/online", "0-1\n");
        put(
            root,
            "sys/devices/system/cpu/vulnerabilities/meltdown",
            "Not affected\n",
        );
        put(
            root,
            "sys/devices/system/cpu/vulnerabilities/mds",
            "Mitigation: Clear CPU buffers\n",
        );
        put(
            root,
            "sys/kernel/mm/transparent_hugepage/enabled",
            "[always] madvise never\n",
        );
        put(root, "sys/class/dmi/id/sys_vendor", "QEMU\n");
        put(
            root,
            "sys/class/dmi/id/product_name",
            "Standard PC (i440FX + PIIX, 1996)\n",
        );
        put(root, ".dockerenv", "");
        // v2: the parent holds the memory limit, the leaf the (tighter) CPU limit.
        put(root, "proc/self/cgroup", "0::/a/b\n");
        put(root, "sys/fs/cgroup/cgroup.controllers", "cpu memory\n");
        put(root, "sys/fs/cgroup/a/cpu.max", "400000 100000\n");
        put(root, "sys/fs/cgroup/a/memory.max", "1073741824\n");
        put(root, "sys/fs/cgroup/a/b/cpu.max", "150000 100000\n");
        put(root, "sys/fs/cgroup/a/b/memory.max", "max\n");
        // Unreadable as a file: must be None, not an error.
        fs::create_dir_all(root.join("proc/sys/kernel/version")).unwrap();

        let fp = collect_from(root);
        assert_eq!(fp.hostname.as_deref(), Some("bench-01"));
        assert_eq!(fp.kernel_release.as_deref(), Some("6.8.0-45-generic"));
        assert_eq!(fp.os.as_deref(), Some("Ubuntu 24.04 LTS"));
        assert_eq!(fp.arch.as_deref(), Some(std::env::consts::ARCH));
        assert_eq!(fp.cpu_model.as_deref(), Some("AMD EPYC 7B13"));
        assert_eq!((fp.threads, fp.cores), (Some(2), Some(1)));
        assert_eq!(fp.memory_bytes, Some(2048 * 1024));
        assert_eq!(fp.virtualization.as_deref(), Some("qemu+container"));
        assert_eq!(fp.thp.as_deref(), Some("always"));
        assert_eq!(fp.vulnerabilities.len(), 2);
        assert_eq!(fp.vulnerabilities["meltdown"], "Not affected");
        assert_eq!(fp.cgroup_version.as_deref(), Some("v2"));
        assert_eq!(fp.cgroup_cpu_limit, Some(1.5));
        assert_eq!(fp.cgroup_memory_limit_bytes, Some(1 << 30));
        assert_eq!(fp.loadavg, Some([0.5, 0.25, 0.1]));
        // Missing or unreadable files.
        assert_eq!(fp.kernel_version, None);
        assert_eq!(fp.kernel_cmdline, None);
        assert_eq!(fp.clocksource, None);
        assert_eq!(fp.cpufreq_governor, None);
        assert_eq!(fp.smt, None);
    }

    #[test]
    fn collect_from_v1_hybrid_fixture() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        // Like the development machine, plus a CPU quota; the memory path is absent under the
        // mount, so the mount root's limit applies.
        put(
            root,
            "proc/self/cgroup",
            "4:memory:/gone/abc\n1:cpu,cpuacct:/job\n0::/\n",
        );
        put(root, "sys/fs/cgroup/unified/cgroup.controllers", "");
        put(root, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
        put(
            root,
            "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us",
            "100000\n",
        );
        put(
            root,
            "sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_quota_us",
            "50000\n",
        );
        put(
            root,
            "sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_period_us",
            "100000\n",
        );
        put(
            root,
            "sys/fs/cgroup/memory/memory.limit_in_bytes",
            "536870912\n",
        );
        put(
            root,
            "proc/cpuinfo",
            "processor : 0\nflags : fpu hypervisor\n",
        );
        put(
            root,
            "sys/devices/system/clocksource/clocksource0/available_clocksource",
            "tsc kvm-clock \n",
        );
        put(
            root,
            "sys/devices/system/clocksource/clocksource0/current_clocksource",
            "tsc\n",
        );
        put(root, "sys/devices/system/cpu/smt/control", "notsupported\n");
        put(root, "sys/devices/system/cpu/smt/active", "0\n");
        put(root, "proc/1/environ", "container=podman\0");

        let fp = collect_from(root);
        assert_eq!(fp.cgroup_version.as_deref(), Some("hybrid"));
        assert_eq!(fp.cgroup_cpu_limit, Some(0.5));
        assert_eq!(fp.cgroup_memory_limit_bytes, Some(512 << 20));
        assert_eq!(fp.virtualization.as_deref(), Some("kvm+container"));
        assert_eq!(fp.clocksource.as_deref(), Some("tsc"));
        assert_eq!(fp.smt.as_deref(), Some("notsupported"));
        // No online list or topology ids: both counts come from cpuinfo's one entry.
        assert_eq!((fp.threads, fp.cores), (Some(1), Some(1)));
        assert_eq!(fp.cpu_model, None);
    }

    #[test]
    fn collect_from_empty_root_is_all_none() {
        let dir = tempfile::tempdir().unwrap();
        let fp = collect_from(dir.path());
        let expected = Fingerprint {
            arch: Some(std::env::consts::ARCH.to_string()),
            ..Fingerprint::default()
        };
        assert_eq!(fp, expected);
    }

    #[test]
    fn collect_live_does_not_panic() {
        let fp = collect();
        assert_eq!(fp.arch.as_deref(), Some(std::env::consts::ARCH));
    }

    /// Manual check: `cargo test -- --ignored --nocapture print_live`.
    #[test]
    #[ignore]
    fn print_live() {
        println!("{}", serde_json::to_string_pretty(&collect()).unwrap());
    }
}
