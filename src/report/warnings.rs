//! A run's warnings as lines to print: one line per cause, not one per test (#43: one quick run
//! beside a compiler printed 57 near-identical "other work used N% of CPU 1" lines).
//!
//! Only the warnings about other work beside a test (busy CPU, busy machine, steal) are
//! grouped: they have one cause, the same for every test they name. Every other warning is
//! printed as it was written. The warnings themselves are kept whole in the store and in
//! `--json`; this is how the text and Markdown say them.

use crate::model::{Warning, WarningKind};

/// The lines for `warnings`, in the order of their first appearance: each warning of a kind
/// that [`groups`] as one line per kind naming the tests and the range of shares measured,
/// when two or more tests have it; every other warning's own message.
pub fn lines<'a>(warnings: impl IntoIterator<Item = &'a Warning>) -> Vec<String> {
    let warnings: Vec<&Warning> = warnings.into_iter().collect();
    let mut out = Vec::new();
    let mut done: Vec<&WarningKind> = Vec::new();
    for w in &warnings {
        if !groups(&w.kind) {
            out.push(w.message.clone());
            continue;
        }
        if done.contains(&&w.kind) {
            continue;
        }
        done.push(&w.kind);
        let same: Vec<&Warning> = warnings
            .iter()
            .copied()
            .filter(|x| x.kind == w.kind)
            .collect();
        if same.len() < 2 {
            out.push(w.message.clone());
        } else {
            out.push(grouped(&w.kind, &same));
        }
    }
    out
}

/// Whether a kind has one cause for all the tests it names: other work, or the hypervisor.
fn groups(kind: &WarningKind) -> bool {
    matches!(
        kind,
        WarningKind::BusyCpu | WarningKind::BusyMachine | WarningKind::Steal
    )
}

/// One line for several tests' warnings of one kind.
fn grouped(kind: &WarningKind, ws: &[&Warning]) -> String {
    let shares: Vec<f64> = ws.iter().filter_map(|w| share(&w.message)).collect();
    let range = match (
        shares.iter().copied().reduce(f64::min),
        shares.iter().copied().reduce(f64::max),
    ) {
        (Some(lo), Some(hi)) if lo.round() == hi.round() => format!("{lo:.0}%"),
        (Some(lo), Some(hi)) => format!("{lo:.0}-{hi:.0}%"),
        _ => "some".to_string(),
    };
    let names: Vec<&str> = ws.iter().filter_map(|w| w.bench.as_deref()).collect();
    const SHOWN: usize = 6;
    let mut tests = names
        .iter()
        .take(SHOWN)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        tests += &format!(" and {} more", names.len() - SHOWN);
    }
    let n = ws.len();
    match kind {
        WarningKind::BusyCpu => format!(
            "other work used {range} of the tests' CPUs while {n} tests ran ({tests}); their results may be inflated (see what else runs with top)"
        ),
        WarningKind::BusyMachine => format!(
            "other work used {range} of the machine's other CPUs while {n} tests ran ({tests}); CPUs that share caches, memory or, on a VM, host cores slow the tests too (see what else runs with top)"
        ),
        _ => format!(
            "the hypervisor took {range} of the CPU (steal time) while {n} tests ran ({tests})"
        ),
    }
}

/// The share a warning's message gives ("used 37% of CPU 1", "took 3% of the CPU"): the first
/// number written with a `%`.
fn share(message: &str) -> Option<f64> {
    message
        .split_whitespace()
        .find_map(|word| word.strip_suffix('%')?.parse::<f64>().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(bench: &str, kind: WarningKind, message: &str) -> Warning {
        Warning {
            bench: Some(bench.into()),
            kind,
            message: message.into(),
        }
    }

    #[test]
    fn other_work_beside_many_tests_is_one_line_with_the_range_and_the_count() {
        let mut ws: Vec<Warning> = (0..57)
            .map(|i| {
                w(
                    &format!("t{i}"),
                    WarningKind::BusyCpu,
                    &format!(
                        "t{i}: other work used {}% of CPU 1 while it ran; results may be inflated",
                        10 + i
                    ),
                )
            })
            .collect();
        ws.insert(
            3,
            w(
                "csw",
                WarningKind::HighCv,
                "csw: trials vary 12% beyond the others",
            ),
        );
        ws.push(w(
            "t9",
            WarningKind::Steal,
            "t9: the hypervisor took 3% of the CPU (steal time) while it ran",
        ));
        let l = lines(&ws);
        assert_eq!(l.len(), 3, "{l:#?}");
        assert!(l[0].starts_with("other work used 10-66% of the tests' CPUs while 57 tests ran (t0, t1, t2, t3, t4, t5 and 51 more)"), "{}", l[0]);
        assert_eq!(l[1], "csw: trials vary 12% beyond the others");
        // One test with a kind: its own message, as written.
        assert_eq!(l[2], ws[58].message);
    }

    #[test]
    fn a_warning_without_a_share_still_groups_and_whole_run_warnings_stay() {
        let ws = vec![
            w("a", WarningKind::Steal, "a: steal"),
            w(
                "b",
                WarningKind::Steal,
                "b: the hypervisor took 4% of the CPU",
            ),
            Warning {
                bench: None,
                kind: WarningKind::Overhead,
                message: "overhead not measured".into(),
            },
        ];
        let l = lines(&ws);
        assert_eq!(
            l,
            vec![
                "the hypervisor took 4% of the CPU (steal time) while 2 tests ran (a, b)"
                    .to_string(),
                "overhead not measured".to_string()
            ]
        );
    }
}
