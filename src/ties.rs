//! What ties a kernel build option, a sysctl or another fingerprint fact (the tick rate, the
//! microcode) to the benchmarks whose cost it changes: `data/kernel-ties.tsv`, from LEBench's
//! root causes and the kernel's documentation, each row with its source. `compare` names
//! these benchmarks beside every such fact that differs between runs (issue #19).

use crate::bench::glob_match;

const TABLE: &str = include_str!("../data/kernel-ties.tsv");

/// One row: a fact (an option, a glob of options, a sysctl, `hz`, `nohz`, `microcode`), the
/// benchmark ids or globs it bears on, and where that comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tie {
    pub fact: &'static str,
    pub benchmarks: Vec<&'static str>,
    pub source: &'static str,
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
            let source = cols.next()?;
            Some(Tie {
                fact,
                benchmarks,
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
    fn every_row_is_complete_and_names_registered_benchmarks() {
        let rows = all();
        assert!(rows.len() > 40, "{}", rows.len());
        let ids: Vec<&str> = crate::bench::all().iter().map(|s| s.id).collect();
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
        assert_eq!(lines, rows.len() + 1, "a row without three columns");
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
