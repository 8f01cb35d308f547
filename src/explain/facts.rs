//! What differs between the two sides besides their figures, and what ties it to a test's
//! change: the fingerprint differences `compare` finds and the switch of an `ab`, each with
//! its row of the ties table (`data/kernel-ties.tsv`: the benchmarks it bears on, the kernel
//! functions that do its work); and whether a profile made on this machine now can stand for a
//! side that has none. Pure: runs and fingerprints in, lists out.

use crate::compare::FingerprintDiff;
use crate::model::{Fingerprint, Run};
use serde::Serialize;

/// A recorded difference between side A and side B.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    /// As `compare` names it (`kernel`, `sysctl vm.overcommit_memory`, `CONFIG_SECCOMP`), or
    /// `ab switch` for the switch of an `ab`.
    pub field: String,
    pub a: Option<String>,
    pub b: Option<String>,
    /// Its fact in the ties table, when the table has a row for it.
    pub fact: Option<String>,
    /// Where the table's tie comes from.
    pub source: Option<String>,
}

/// A difference tied to one test's change: the test is among the benchmarks its fact bears
/// on, or functions that changed the way the test did do its work.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tied {
    #[serde(flatten)]
    pub difference: Difference,
    /// The ties table names this test (or its suite's series) for the fact.
    pub by_test: bool,
    /// Functions whose time per operation (with what they called) changed significantly the
    /// way the test did and that do the fact's work: (function, change in ns per operation),
    /// largest first.
    pub functions: Vec<(String, f64)>,
}

impl Tied {
    /// The largest change of its functions (they may call one another: not a sum).
    pub fn largest_ns_per_op(&self) -> f64 {
        self.functions.iter().map(|f| f.1.abs()).fold(0.0, f64::max)
    }
}

/// The ties table's fact for a difference `compare` lists, when it has a row.
pub fn fact_of(field: &str) -> Option<String> {
    let fact = match field {
        "timer tick (CONFIG_HZ)" => "hz",
        "tick mode (nohz)" => "nohz",
        "microcode" => "microcode",
        "thp" => "transparent_hugepage",
        "mitigations" => "mitigations",
        f => f
            .strip_prefix("sysctl ")
            .or_else(|| f.starts_with("CONFIG_").then_some(f))?,
    };
    crate::ties::of(fact).map(|_| fact.to_string())
}

/// The fact an `ab` switch's note names: the task switches by what they do, a setting by its
/// name (`ab: switch on NAME: NAME = VALUE`).
fn switch_fact(note: &str) -> Option<String> {
    let rest = note.strip_prefix("ab: switch ")?;
    let fact = if rest.contains("seccomp") {
        "seccomp".to_string()
    } else if rest.contains("speculative store bypass") || rest.starts_with("speculation") {
        "speculation".to_string()
    } else {
        let named = rest
            .strip_prefix("on ")
            .or_else(|| rest.strip_prefix("off "))?;
        named.split(':').next()?.trim().to_string()
    };
    crate::ties::of(&fact).map(|_| fact)
}

/// The notes an `ab` side carries about its switch.
fn switch_notes(run: &Run) -> Vec<&str> {
    run.notes
        .iter()
        .map(String::as_str)
        .filter(|n| n.starts_with("ab: switch "))
        .collect()
}

/// Every difference between the sides: the fingerprint facts `compare` lists (`diffs`, two
/// values each, A's then B's), and an `ab`'s switch, read from the sides' notes (an `ab`
/// fingerprints the machine once, so its sides' fingerprints are the same).
pub fn differences(runs: [&Run; 2], diffs: &[FingerprintDiff]) -> Vec<Difference> {
    let mut out: Vec<Difference> = diffs
        .iter()
        .map(|d| {
            let fact = fact_of(&d.field);
            Difference {
                field: d.field.clone(),
                a: d.values.first().cloned().flatten(),
                b: d.values.get(1).cloned().flatten(),
                source: fact
                    .as_deref()
                    .and_then(crate::ties::of)
                    .map(|t| t.source.to_string()),
                fact,
            }
        })
        .collect();
    let (na, nb) = (switch_notes(runs[0]), switch_notes(runs[1]));
    if na != nb && !(na.is_empty() && nb.is_empty()) {
        let fact = na.iter().chain(&nb).find_map(|n| switch_fact(n));
        if fact.is_none() || !out.iter().any(|d| d.fact == fact) {
            let text = |v: &[&str]| {
                (!v.is_empty()).then(|| {
                    let v: Vec<&str> = v.iter().map(|n| n.trim_start_matches("ab: ")).collect();
                    v.join("; ")
                })
            };
            out.push(Difference {
                field: "ab switch".into(),
                a: text(&na),
                b: text(&nb),
                source: fact
                    .as_deref()
                    .and_then(crate::ties::of)
                    .map(|t| t.source.to_string()),
                fact,
            });
        }
    }
    out
}

/// The differences tied to the change of test `test`: by the ties table's benchmarks, or by
/// `changed`, the functions whose time (with what they called) changed significantly the way
/// the test did, as (name, change in ns per operation). Those tied by functions come first,
/// largest function change first.
pub fn tied(differences: &[Difference], test: &str, changed: &[(&str, f64)]) -> Vec<Tied> {
    // A suite's point (`series@x`) is tied through its series too.
    let series = test.split('@').next().unwrap_or(test);
    let mut out: Vec<Tied> = differences
        .iter()
        .filter_map(|d| {
            let tie = crate::ties::of(d.fact.as_deref()?)?;
            let by_test = tie.ties_test(test) || tie.ties_test(series);
            let mut functions: Vec<(String, f64)> = changed
                .iter()
                .filter(|(f, _)| tie.ties_function(f))
                .map(|(f, c)| (f.to_string(), *c))
                .collect();
            functions.sort_by(|x, y| y.1.abs().total_cmp(&x.1.abs()).then(x.0.cmp(&y.0)));
            (by_test || !functions.is_empty()).then(|| Tied {
                difference: d.clone(),
                by_test,
                functions,
            })
        })
        .collect();
    out.sort_by(|x, y| {
        y.largest_ns_per_op()
            .total_cmp(&x.largest_ns_per_op())
            .then(y.by_test.cmp(&x.by_test))
            .then(x.difference.field.cmp(&y.difference.field))
    });
    out
}

/// Whether a profile made on this machine now stands for `side` (0 for A, 1 for B) of
/// `runs`: the side was measured here (every recorded fact of its machine is this machine's
/// now) and the other side was not made so. Between the two sides of an `ab`, whose
/// fingerprints are the same, the switch's "off" side is the machine as it is; the "on"
/// side is not. The error says why not, in words for the user.
pub fn stands_for(side: usize, runs: [&Run; 2], now: &Fingerprint) -> Result<(), String> {
    let (this, other) = (runs[side], runs[1 - side]);
    let name = if side == 0 { "A" } else { "B" };
    if this.source != "measured" {
        return Err(format!(
            "{name} is a published run: its machine is gone, and nothing made now is it"
        ));
    }
    let here = crate::compare::machine_diffs(vec![&this.fingerprint, now]);
    if let Some(d) = here.first() {
        return Err(format!(
            "this machine is not {name}'s as it was: {} is {} here, {} in {name}{}",
            d.field,
            shown(d.values.get(1)),
            shown(d.values.first()),
            if here.len() > 1 {
                format!(" (and {} more facts differ)", here.len() - 1)
            } else {
                String::new()
            }
        ));
    }
    let there = crate::compare::machine_diffs(vec![&other.fingerprint, now]);
    if !there.is_empty() {
        return Ok(());
    }
    let notes = switch_notes(this);
    if notes.iter().any(|n| n.starts_with("ab: switch on")) {
        return Err(format!(
            "{name} ran with an ab switch on ({}): a profile made now would be of the machine without it; profile that side with the switch on, as it was made ('sysperf run --profile TEST')",
            notes.join("; ")
        ));
    }
    if !notes.is_empty() && !switch_notes(other).is_empty() {
        // The "off" side of an ab: the machine as it is.
        return Ok(());
    }
    Err("A and B were made with the same recorded facts as this machine has now, so a profile made now would stand for both and show no difference; profile each as it is made ('sysperf run --profile')".to_string())
}

fn shown(v: Option<&Option<String>>) -> String {
    match v.cloned().flatten() {
        Some(s) => format!("'{s}'"),
        None => "unknown".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: &str) -> Run {
        let mut r = crate::report::fixture_run();
        r.id = id.into();
        r
    }

    #[test]
    fn compare_fields_map_to_tie_facts() {
        assert_eq!(
            fact_of("sysctl vm.overcommit_memory").as_deref(),
            Some("vm.overcommit_memory")
        );
        assert_eq!(fact_of("thp").as_deref(), Some("transparent_hugepage"));
        assert_eq!(fact_of("timer tick (CONFIG_HZ)").as_deref(), Some("hz"));
        assert_eq!(fact_of("CONFIG_SECCOMP").as_deref(), Some("CONFIG_SECCOMP"));
        assert_eq!(fact_of("kernel"), None);
        assert_eq!(fact_of("sysctl net.core.somaxconn"), None, "no row");
    }

    #[test]
    fn an_ab_switch_is_a_difference_tied_by_its_functions() {
        let (mut a, mut b) = (run("aaaaaaaaaaaa"), run("bbbbbbbbbbbb"));
        a.notes.push("ab: switch seccomp off".into());
        b.notes
            .push("ab: switch on: an allow-all seccomp filter in every worker".into());
        let d = differences([&a, &b], &[]);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].field, "ab switch");
        assert_eq!(d[0].fact.as_deref(), Some("seccomp"));
        assert!(d[0].b.as_deref().unwrap().contains("allow-all"));
        let t = tied(
            &d,
            "syscall",
            &[("__seccomp_filter", 30.0), ("do_syscall_64", 33.0)],
        );
        assert_eq!(t.len(), 1);
        assert!(t[0].by_test);
        assert_eq!(t[0].functions, vec![("__seccomp_filter".to_string(), 30.0)]);
        // A test the table does not name, tied by a function alone.
        let t = tied(&d, "pipeback4", &[("seccomp_run_filters", 5.0)]);
        assert!(!t[0].by_test && t[0].functions.len() == 1);
        assert!(tied(&d, "pipeback4", &[("pipe_read", 5.0)]).is_empty());
        // A setting's switch names its fact.
        let (mut a, mut b) = (run("aaaaaaaaaaaa"), run("bbbbbbbbbbbb"));
        a.notes.push(
            "ab: switch off kernel.sched_autogroup_enabled: kernel.sched_autogroup_enabled = 1"
                .into(),
        );
        b.notes.push(
            "ab: switch on kernel.sched_autogroup_enabled: kernel.sched_autogroup_enabled = 0"
                .into(),
        );
        let d = differences([&a, &b], &[]);
        assert_eq!(d[0].fact.as_deref(), Some("kernel.sched_autogroup_enabled"));
        assert!(tied(&d, "pipeback4", &[])
            .first()
            .is_some_and(|t| t.by_test));
    }

    #[test]
    fn a_profile_made_now_stands_only_for_the_side_made_here() {
        let now = crate::report::fixture_run().fingerprint;
        let (a, mut b) = (run("aaaaaaaaaaaa"), run("bbbbbbbbbbbb"));
        b.fingerprint
            .sysctls
            .insert("kernel.sched_autogroup_enabled".into(), "0".into());
        assert_eq!(stands_for(0, [&a, &b], &now), Ok(()));
        let why = stands_for(1, [&a, &b], &now).unwrap_err();
        assert!(why.contains("kernel.sched_autogroup_enabled"), "{why}");
        // The same facts on both sides: a profile now would be both; unless one is an ab's off side.
        let b = run("bbbbbbbbbbbb");
        assert!(stands_for(0, [&a, &b], &now)
            .unwrap_err()
            .contains("same recorded facts"));
        let (mut a, mut b) = (a, b);
        a.notes.push("ab: switch seccomp off".into());
        b.notes
            .push("ab: switch on: an allow-all seccomp filter in every worker".into());
        assert_eq!(stands_for(0, [&a, &b], &now), Ok(()));
        assert!(stands_for(1, [&a, &b], &now)
            .unwrap_err()
            .contains("with the switch on"));
        // A published run is no machine.
        let mut p = run("cccccccccccc");
        p.source = "published".into();
        assert!(stands_for(0, [&p, &b], &now).is_err());
    }
}
