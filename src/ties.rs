//! What ties a kernel build option, a sysctl or another fingerprint fact (the tick rate, the
//! microcode, the mitigations, transparent huge pages, an `ab` task switch) to the benchmarks
//! whose cost it changes and to the kernel functions that do its work: `data/kernel-ties.tsv`,
//! from LEBench's root causes and the kernel's documentation, each row with its source.
//! `compare` names the benchmarks beside every such fact that differs between runs (issue
//! #19); `explain` names the fact beside the functions a differential profile finds (#34).

use crate::bench::glob_match;

const TABLE: &str = include_str!("../data/kernel-ties.tsv");

/// One row: a fact (an option, a glob of options, a sysctl, `hz`, `nohz`, `microcode`,
/// `mitigations`, `transparent_hugepage`, `seccomp`, `speculation`), the benchmark ids or globs
/// it bears on, the kernel functions (names or globs) that do its work, and where the tie to
/// the benchmarks comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tie {
    pub fact: &'static str,
    pub benchmarks: Vec<&'static str>,
    /// Empty when no function of its own shows the fact in a profile (`-` in the file).
    pub functions: Vec<&'static str>,
    pub source: &'static str,
}

impl Tie {
    /// Whether the row bears on test `id` (a benchmark, or a suite's point `series@x`).
    pub fn ties_test(&self, id: &str) -> bool {
        self.benchmarks.iter().any(|b| glob_match(b, id))
    }

    /// Whether kernel function `name` does the fact's work. A compiler's clone of a function
    /// (`name.isra.0`, `name.cold`) is the function.
    pub fn ties_function(&self, name: &str) -> bool {
        let base = name.split('.').next().unwrap_or(name);
        self.functions
            .iter()
            .any(|f| glob_match(f, name) || glob_match(f, base))
    }
}

/// Every row, in the file's order (comments and the header left out).
pub fn all() -> Vec<Tie> {
    TABLE
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty() && !l.starts_with("fact\t"))
        .filter_map(|l| {
            let mut cols = l.split('\t');
            let fact = cols.next()?;
            let benchmarks = cols.next()?.split(',').map(str::trim).collect();
            let functions = match cols.next()?.trim() {
                "-" => Vec::new(),
                list => list.split(',').map(str::trim).collect(),
            };
            let source = cols.next()?;
            Some(Tie {
                fact,
                benchmarks,
                functions,
                source,
            })
        })
        .collect()
}

/// The row for a fact: its own row if there is one, else the first glob that matches it.
pub fn of(fact: &str) -> Option<Tie> {
    let rows = all();
    let exact = rows.iter().position(|t| t.fact == fact);
    let i = exact.or_else(|| rows.iter().position(|t| glob_match(t.fact, fact)))?;
    Some(rows[i].clone())
}

/// "benchmarks (source)" for a fact, as compare prints it, or None when nothing ties it.
pub fn describe(fact: &str) -> Option<String> {
    of(fact).map(|t| format!("{} ({})", t.benchmarks.join(", "), t.source))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_complete_and_names_registered_benchmarks_or_series() {
        let rows = all();
        assert!(rows.len() > 40, "{}", rows.len());
        // Core benchmarks, and suites' series (a point is tied through its series).
        let mut ids: Vec<&str> = crate::bench::all().iter().map(|s| s.id).collect();
        ids.extend(
            crate::suite::suites()
                .into_iter()
                .flat_map(|s| (s.series)())
                .map(|s| s.id),
        );
        for t in &rows {
            assert!(!t.source.is_empty() && !t.benchmarks.is_empty(), "{t:?}");
            assert!(
                t.source.starts_with("LEBench") || t.source.starts_with("kernel docs"),
                "{t:?}"
            );
            for b in &t.benchmarks {
                assert!(ids.iter().any(|id| glob_match(b, id)), "{}: {b}", t.fact);
            }
        }
        let lines = TABLE
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .count();
        assert_eq!(lines, rows.len() + 1, "a row without four columns");
    }

    #[test]
    fn functions_tie_facts_to_what_a_profile_shows() {
        let seccomp = of("seccomp").unwrap();
        assert!(seccomp.ties_function("__seccomp_filter"));
        assert!(seccomp.ties_function("bpf_prog_6deef7357e7b4530_F"));
        // A compiler's clone is the function it was cloned from.
        assert!(of("vm.overcommit_memory")
            .unwrap()
            .ties_function("__vm_enough_memory.cold"));
        assert!(!seccomp.ties_function("do_syscall_64"));
        assert!(seccomp.ties_test("syscall") && !seccomp.ties_test("forks0"));
        // '-' is no function: nothing a profile could name.
        assert!(of("vm.max_map_count").unwrap().functions.is_empty());
        // Every fact of an ab switch and of the fingerprint's own fields has a row.
        for fact in [
            "seccomp",
            "speculation",
            "transparent_hugepage",
            "mitigations",
        ] {
            assert!(of(fact).is_some_and(|t| !t.functions.is_empty()), "{fact}");
        }
        for t in all() {
            for f in &t.functions {
                assert!(
                    !f.is_empty() && f.bytes().all(|b| b.is_ascii_graphic() && b != b','),
                    "{}: {f:?}",
                    t.fact
                );
            }
        }
    }

    #[test]
    fn every_recorded_sysctl_is_tied() {
        for s in crate::fingerprint::SYSCTLS {
            if *s == "kernel.perf_event_paranoid"
                || *s == "kernel.kptr_restrict"
                || *s == "kernel.unprivileged_bpf_disabled"
                || *s == "net.core.somaxconn"
                || *s == "net.core.netdev_max_backlog"
            {
                // Recorded for sysperf's own profiling and for networks; no benchmark's cost.
                continue;
            }
            assert!(of(s).is_some(), "{s} has no row");
        }
    }

    #[test]
    fn exact_rows_win_over_globs() {
        assert_eq!(of("CONFIG_HZ").unwrap().fact, "CONFIG_HZ");
        assert_eq!(of("CONFIG_HZ_1000").unwrap().fact, "CONFIG_HZ_*");
        assert_eq!(
            of("CONFIG_MITIGATION_SRSO").unwrap().fact,
            "CONFIG_MITIGATION_*"
        );
        assert!(of("CONFIG_NOTHING_TIED").is_none());
        assert!(describe("vm.overcommit_memory")
            .unwrap()
            .contains("sysctl/vm.rst"));
    }
}
