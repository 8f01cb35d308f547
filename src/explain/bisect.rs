//! Environment bisection (`explain --try-switches`, #34 item 3): which recorded differences
//! between the two sides this machine could flip at runtime (a sysctl, transparent huge
//! pages, an `ab`'s task switch: an allow-all seccomp filter, a filter of N checks,
//! speculative store bypass control), what flipping each takes ([`Flip`]) or why it cannot be
//! flipped here, and, once the command has measured a test with a difference set to A's value
//! and to B's in paired rounds (`ab`'s engine), how much of the test's change from A to B that
//! difference accounts for ([`effect`]).
//!
//! Pure: differences, runs and paired ratios in, the account out. Whether this process may
//! change a setting (root, a read-only /proc/sys, a CPU without speculation control) is
//! found by the command through `engine::switch`; the measuring and the putting back are the
//! engine's.

use super::facts::Difference;
use super::TestExplanation;
use crate::compare::{Ratio, Verdict};
use crate::model::Run;
use serde::Serialize;

/// What flipping a difference takes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Flip {
    /// A machine-wide setting (a sysctl, or `transparent_hugepage`), set to A's value on one
    /// side and B's on the other.
    Setting { name: String, a: String, b: String },
    /// A per-task switch of `ab`, as `--switch` names it (`seccomp`, `seccomp-checks=N`,
    /// `speculation`); `b_on`: whether B is the side that had it on.
    Task { switch: String, b_on: bool },
}

impl Flip {
    /// What is switched, in words: "vm.stat_interval between A's 1 and B's 2".
    pub fn describe(&self) -> String {
        match self {
            Flip::Setting { name, a, b } => format!("{name} between A's {a} and B's {b}"),
            Flip::Task { switch, b_on } => format!(
                "ab --switch {switch}, on in {} as it was",
                if *b_on { "B" } else { "A" }
            ),
        }
    }
}

/// What flipping `d` between `runs` (A, B) takes, or why it cannot be done at runtime on any
/// machine (whether this one may is the command's question).
pub fn flip_of(d: &Difference, runs: [&Run; 2]) -> Result<Flip, String> {
    let values = || -> Result<(String, String), String> {
        match (&d.a, &d.b) {
            (Some(a), Some(b)) => Ok((a.clone(), b.clone())),
            (None, _) => Err("A's value was not recorded, so there is no value to set".into()),
            (_, None) => Err("B's value was not recorded, so there is no value to set".into()),
        }
    };
    if let Some(name) = d.field.strip_prefix("sysctl ") {
        let (a, b) = values()?;
        return managed_flip(name, a, b);
    }
    let other_switches = "a runtime setting, but not one of those sysperf switches and puts back (sysctls, transparent huge pages, seccomp, speculation control)";
    let why = match d.field.as_str() {
        "thp" => {
            let (a, b) = values()?;
            return managed_flip("transparent_hugepage", a, b);
        }
        "ab switch" => {
            return match ab_flip(runs)? {
                Flip::Setting { name, a, b } => managed_flip(&name, a, b),
                task => Ok(task),
            }
        }
        "kernel" | "kernel config" | "timer tick (CONFIG_HZ)" => {
            "the kernel's build: only booting that kernel changes it"
        }
        f if f.starts_with("CONFIG_") || f.contains("more config options") => {
            "a kernel build option: only booting a kernel built with it changes it"
        }
        "kernel command line" | "tick mode (nohz)" => {
            "set at boot (the kernel command line): only a reboot changes it"
        }
        "mitigations" => {
            "the CPU vulnerabilities' mitigations are chosen at boot (mitigations=, spectre_v2=, ...); only a task's speculative store bypass can be switched at runtime ('sysperf ab --switch speculation')"
        }
        "microcode" => "the CPU's firmware, loaded at boot: not switchable while running",
        "hostname" | "cpu" | "cores/threads" | "memory" | "virtualization" | "os" => {
            "the machine itself (its hardware or system): not a switch"
        }
        _ => other_switches,
    };
    Err(why.to_string())
}

/// A setting's flip between two recorded values, when sysperf manages the setting and both
/// values are of its type and range (`crate::managed`): the name and the values come from
/// stored runs, which whoever could write the store chose (#41).
fn managed_flip(name: &str, a: String, b: String) -> Result<Flip, String> {
    for v in [&a, &b] {
        crate::managed::known(name, v)?;
    }
    Ok(Flip::Setting {
        name: name.to_string(),
        a,
        b,
    })
}

/// The notes an `ab` side carries about its switch, without their `ab: ` prefix.
fn switch_notes(run: &Run) -> Vec<&str> {
    run.notes
        .iter()
        .filter_map(|n| n.strip_prefix("ab: switch "))
        .collect()
}

/// An `ab` side's switch note read back (`engine::switch::Switch::describe` wrote it): the
/// switch as `--switch` names it and whether it was on, or a setting's name and value.
enum Noted {
    Task { switch: String, on: bool },
    Setting { name: String, value: String },
    Nothing,
}

fn noted(note: &str) -> Option<Noted> {
    if note.starts_with("none") {
        return Some(Noted::Nothing);
    }
    if let Some(rest) = note.strip_prefix("on: ") {
        let switch = if let Some(n) = rest
            .strip_prefix("a seccomp filter of ")
            .and_then(|r| r.split_once(" argument checks"))
            .and_then(|(n, _)| n.parse::<u32>().ok())
        {
            // The filter has N checks, the off side's one: `seccomp-checks=N-1`.
            format!("seccomp-checks={}", n.checked_sub(1)?)
        } else if rest.contains("allow-all seccomp filter") {
            "seccomp".into()
        } else if rest.contains("speculative store bypass") {
            "speculation".into()
        } else {
            return None;
        };
        return Some(Noted::Task { switch, on: true });
    }
    // "on NAME: NAME = VALUE" / "off NAME: NAME = VALUE": a setting's side.
    let setting = note
        .strip_prefix("on ")
        .or_else(|| note.strip_prefix("off "))
        .and_then(|r| r.split_once(": "))
        .and_then(|(name, rest)| {
            let value = rest.strip_prefix(name)?.strip_prefix(" = ")?;
            Some(Noted::Setting {
                name: name.to_string(),
                value: value.to_string(),
            })
        });
    if setting.is_some() {
        return setting;
    }
    // "seccomp off", "seccomp-checks off: ...", "speculation off".
    let (switch, _) = note.split_once(" off")?;
    Some(Noted::Task {
        switch: switch.to_string(),
        on: false,
    })
}

/// The flip of an `ab`'s switch, from its sides' notes.
fn ab_flip(runs: [&Run; 2]) -> Result<Flip, String> {
    let unread = || "the sides' ab notes do not say what was switched".to_string();
    let [a, b] = runs.map(|r| switch_notes(r).first().and_then(|n| noted(n)));
    match (a, b) {
        (Some(Noted::Nothing), _) | (_, Some(Noted::Nothing)) => {
            Err("an A/A ('ab --switch none'): nothing differs between the sides".into())
        }
        (
            Some(Noted::Setting { name, value: va }),
            Some(Noted::Setting {
                name: nb,
                value: vb,
            }),
        ) if name == nb && va != vb => Ok(Flip::Setting { name, a: va, b: vb }),
        (Some(Noted::Task { switch: sa, on: oa }), Some(Noted::Task { switch: sb, on: ob }))
            if oa != ob =>
        {
            // The "on" side's name carries the count of seccomp-checks.
            let switch = if ob { sb } else { sa };
            Ok(Flip::Task { switch, b_on: ob })
        }
        (Some(Noted::Task { switch, on }), None) => Ok(Flip::Task { switch, b_on: !on }),
        (None, Some(Noted::Task { switch, on })) => Ok(Flip::Task { switch, b_on: on }),
        _ => Err(unread()),
    }
}

/// How a tried difference stands to the test's change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Account {
    /// The flip's effect is significant and the test moved from A to B: a share.
    Accounts,
    /// The flip's interval holds no change (or there is none): it may account for nothing.
    CannotTell,
    /// The test did not move significantly from A to B: there is no change to share.
    NothingToShare,
    /// The test was not measured with the flip (no trial succeeded, or it was stopped).
    NotMeasured,
}

/// One test measured with a difference flipped.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Effect {
    pub test: String,
    /// B's setting against A's on this machine: the paired ratio of the two sides (B's value
    /// over A's), its 95% interval over the rounds (None: too few rounds), and the rounds.
    pub ratio: Option<f64>,
    pub ratio_ci: Option<[f64; 2]>,
    pub rounds: Option<usize>,
    /// The share of the test's change from A to B that the flip accounts for, in percent:
    /// ln(the flip's ratio) / ln(A->B's ratio); its bounds from the two intervals' ends.
    pub share_pct: Option<f64>,
    pub share_bounds_pct: Option<[f64; 2]>,
    pub account: Account,
    /// The account in words.
    pub words: String,
}

impl Effect {
    /// The ratio with its interval as the tables print it ("1.343 [1.230, 1.476]"), or "-".
    pub fn ratio_text(&self) -> String {
        match (self.ratio, self.ratio_ci) {
            (Some(r), Some([lo, hi])) => format!("{r:.3} [{lo:.3}, {hi:.3}]"),
            (Some(r), None) => format!("{r:.3}"),
            _ => "-".into(),
        }
    }

    /// The share with its bounds as the tables print it ("103% [53%, 212%]"), or "-".
    pub fn share_text(&self) -> String {
        match (self.share_pct, self.share_bounds_pct) {
            (Some(p), Some([lo, hi])) => format!("{p:.0}% [{lo:.0}%, {hi:.0}%]"),
            (Some(p), None) => format!("{p:.0}%"),
            _ => "-".into(),
        }
    }
}

/// A difference flipped on this machine.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tried {
    /// The difference, as the recorded differences name it, with A's and B's values.
    pub field: String,
    pub a: Option<String>,
    pub b: Option<String>,
    pub flip: Flip,
    /// The runs its two sides were stored as, and their labels: A's setting's, then B's
    /// (`LABEL-off` is the machine's "off" side: A's setting, unless A had a task switch on).
    pub runs: Option<[String; 2]>,
    pub labels: Option<[String; 2]>,
    pub effects: Vec<Effect>,
    /// Why the measuring did not finish, when it did not (the setting is put back anyway).
    pub error: Option<String>,
}

/// A difference this machine cannot flip, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NotSwitched {
    pub field: String,
    pub a: Option<String>,
    pub b: Option<String>,
    pub why: String,
}

/// `explain --try-switches`'s account.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bisection {
    pub method: String,
    /// The budget of each flip's paired rounds, in seconds (`--try-seconds`).
    pub seconds_per_switch: f64,
    /// The tests measured (core benchmarks of the tests explained).
    pub tests: Vec<String>,
    /// Tests explained that a flip cannot measure, and why.
    pub not_measured: Vec<(String, String)>,
    pub tried: Vec<Tried>,
    pub not_switchable: Vec<NotSwitched>,
    /// Stopped (Ctrl-C) before every flip was tried: the rest are listed as not tried.
    pub interrupted: bool,
}

/// The method, as every rendering states it.
pub fn method(seconds: f64, min_rounds: u32, precision_pct: f64) -> String {
    format!(
        "each recorded difference this machine can switch at runtime is set to A's setting on one side and B's on the other, \
         and the tests are measured on both sides in paired rounds as 'sysperf ab' does (each round runs a test's two sides back to back, \
         in a random order; at least {min_rounds} rounds, more until every test's paired interval is within +-{precision_pct}% or {seconds} s \
         have passed), with the rest of this machine as it is now; the ratio is B's setting over A's with its paired 95% interval. \
         The share of A->B's change is ln(that ratio) / ln(A->B's ratio); its bounds take the ends of both intervals (so they cover \
         at least about 90%). A flip whose interval holds 1 cannot be told from no effect. Shares are of effects measured one at a time \
         on this machine: they need not add up to 100% (effects interact, differences not switched here may hold the rest, and this \
         machine need not respond as A's and B's did). Every setting is put back to the value found, as 'ab' does, also on Ctrl-C"
    )
}

/// The account of one test measured with a flip: `measured` is the paired ratio of the
/// flip's two sides (the "on" side over the "off"), `invert` when the "on" side is A's (a task
/// switch that A had on), so that the ratio is B's value over A's.
pub fn effect(t: &TestExplanation, measured: Option<&Ratio>, invert: bool) -> Effect {
    let turn = |x: f64| if invert { 1.0 / x } else { x };
    let ratio = measured.map(|r| turn(r.ratio));
    let ratio_ci = measured.and_then(|r| r.ci).map(|[lo, hi]| {
        let (x, y) = (turn(lo), turn(hi));
        [x.min(y), x.max(y)]
    });
    let mut e = Effect {
        test: t.test.clone(),
        ratio,
        ratio_ci,
        rounds: measured.and_then(|r| r.rounds),
        share_pct: None,
        share_bounds_pct: None,
        account: Account::NotMeasured,
        words: String::new(),
    };
    let Some(r) = ratio.filter(|r| r.is_finite() && *r > 0.0) else {
        e.words = format!(
            "not measured: no paired trial of {} succeeded with it",
            t.test
        );
        return e;
    };
    let shown = match ratio_ci {
        Some([lo, hi]) => format!("{r:.3} [{lo:.3}, {hi:.3}]"),
        None => format!("{r:.3}, no interval"),
    };
    // The share, wherever both ratios are there to give one.
    let moved = matches!(t.verdict, Some(Verdict::Slower | Verdict::Faster));
    let whole = t.ratio.filter(|x| x.is_finite() && *x > 0.0 && *x != 1.0);
    if let Some(big) = whole {
        let l = big.ln();
        e.share_pct = Some(100.0 * r.ln() / l);
        e.share_bounds_pct = ratio_ci.map(|[lo, hi]| {
            let ends: Vec<f64> = match t
                .ratio_ci
                .filter(|[a, b]| *a > 0.0 && (a - 1.0) * (b - 1.0) > 0.0)
            {
                // Both intervals' ends: the A->B interval leaves out 1, so no end divides by 0.
                Some([ba, bb]) => [lo, hi]
                    .iter()
                    .flat_map(|x| [ba, bb].map(|y| 100.0 * x.ln() / y.ln()))
                    .collect(),
                None => [lo, hi].iter().map(|x| 100.0 * x.ln() / l).collect(),
            };
            [
                ends.iter().copied().fold(f64::INFINITY, f64::min),
                ends.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            ]
        });
    }
    let holds_one = ratio_ci.is_none_or(|[lo, hi]| lo <= 1.0 && hi >= 1.0);
    let (account, words) = if !moved || whole.is_none() {
        (
            Account::NothingToShare,
            format!(
                "B's setting against A's: {shown}; {} did not move significantly from A to B ({}), so there is no change to share",
                t.test,
                t.verdict.map_or("no verdict", |v| v.as_str())
            ),
        )
    } else if holds_one {
        (
            Account::CannotTell,
            match ratio_ci {
                Some(_) => format!("cannot tell: B's setting against A's is {shown}, which holds no change"),
                None => format!("cannot tell: B's setting against A's is {shown} (too few paired rounds for an interval)"),
            },
        )
    } else {
        let share = e.share_pct.unwrap_or(f64::NAN);
        let bounds = e
            .share_bounds_pct
            .map(|[lo, hi]| format!(" [{lo:.0}%, {hi:.0}%]"))
            .unwrap_or_default();
        let way = if share < 0.0 {
            " (it goes the other way)"
        } else {
            ""
        };
        (
            Account::Accounts,
            format!(
                "accounts for {share:.0}%{bounds} of A->B's {:.3}x{way}: B's setting against A's is {shown}",
                whole.unwrap_or(f64::NAN)
            ),
        )
    };
    e.account = account;
    e.words = words;
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::Covers;

    fn diff(field: &str, a: Option<&str>, b: Option<&str>) -> Difference {
        Difference {
            field: field.into(),
            a: a.map(Into::into),
            b: b.map(Into::into),
            fact: None,
            source: None,
        }
    }

    fn runs(na: &str, nb: &str) -> (Run, Run) {
        let (mut a, mut b) = (crate::report::fixture_run(), crate::report::fixture_run());
        if !na.is_empty() {
            a.notes.push(format!("ab: {na}"));
        }
        if !nb.is_empty() {
            b.notes.push(format!("ab: {nb}"));
        }
        (a, b)
    }

    #[test]
    fn settings_and_ab_switches_flip_and_the_rest_say_why_not() {
        let (a, b) = runs("", "");
        let f = flip_of(
            &diff("sysctl vm.stat_interval", Some("1"), Some("2")),
            [&a, &b],
        );
        assert_eq!(
            f,
            Ok(Flip::Setting {
                name: "vm.stat_interval".into(),
                a: "1".into(),
                b: "2".into()
            })
        );
        let f = flip_of(&diff("thp", Some("madvise"), Some("always")), [&a, &b]).unwrap();
        assert!(matches!(f, Flip::Setting { ref name, .. } if name == "transparent_hugepage"));
        let why = flip_of(&diff("sysctl vm.swappiness", None, Some("60")), [&a, &b]).unwrap_err();
        assert!(why.contains("A's value was not recorded"), "{why}");
        for (field, needle) in [
            ("kernel", "booting that kernel"),
            ("CONFIG_SECCOMP", "kernel build option"),
            ("... and 3 more config options", "kernel build option"),
            ("kernel command line", "reboot"),
            ("mitigations", "--switch speculation"),
            ("microcode", "firmware"),
            ("cpu", "the machine itself"),
            ("smt", "not one of those sysperf switches"),
        ] {
            let why = flip_of(&diff(field, Some("x"), Some("y")), [&a, &b]).unwrap_err();
            assert!(why.contains(needle), "{field}: {why}");
        }
        // An ab's switches, read back from the notes its sides carry.
        let ab = |na: &str, nb: &str| {
            let (a, b) = runs(na, nb);
            flip_of(&diff("ab switch", None, None), [&a, &b])
        };
        assert_eq!(
            ab(
                "switch seccomp off",
                "switch on: an allow-all seccomp filter in every worker"
            ),
            Ok(Flip::Task {
                switch: "seccomp".into(),
                b_on: true
            })
        );
        assert_eq!(
            ab(
                "switch on: speculative store bypass disabled (prctl) in every worker",
                "switch speculation off"
            ),
            Ok(Flip::Task {
                switch: "speculation".into(),
                b_on: false
            })
        );
        assert_eq!(
            ab(
                "switch seccomp-checks off: a seccomp filter of 1 argument check (3 BPF instructions) in every worker, so that entering a filter costs both sides alike",
                "switch on: a seccomp filter of 65 argument checks (131 BPF instructions) in every worker, 64 more than the off side's"
            ),
            Ok(Flip::Task {
                switch: "seccomp-checks=64".into(),
                b_on: true
            })
        );
        assert_eq!(
            ab(
                "switch off kernel.shmmni: kernel.shmmni = 4096",
                "switch on kernel.shmmni: kernel.shmmni = 4097"
            ),
            Ok(Flip::Setting {
                name: "kernel.shmmni".into(),
                a: "4096".into(),
                b: "4097".into()
            })
        );
        // #41 item 1: what the runs name is data. A setting sysperf does not manage, or a
        // value outside a managed one's type and range, is not a flip, by either path.
        let hostile = "|/tmp/x/evil %p";
        let why = ab(
            "switch off kernel.core_pattern: kernel.core_pattern = core",
            &format!("switch on kernel.core_pattern: kernel.core_pattern = {hostile}"),
        )
        .unwrap_err();
        assert!(why.contains("not a setting sysperf manages"), "{why}");
        let why = flip_of(
            &diff("sysctl kernel.core_pattern", Some("core"), Some(hostile)),
            [&a, &b],
        )
        .unwrap_err();
        assert!(why.contains("not a setting sysperf manages"), "{why}");
        let why = flip_of(
            &diff("sysctl vm.stat_interval", Some("1"), Some("1 > /etc/x")),
            [&a, &b],
        )
        .unwrap_err();
        assert!(why.contains("not one of vm.stat_interval's"), "{why}");
        let why =
            flip_of(&diff("thp", Some("madvise"), Some("/etc/passwd")), [&a, &b]).unwrap_err();
        assert!(
            why.contains("expected one of always, madvise, never"),
            "{why}"
        );
        assert!(ab(
            "switch none off",
            "switch none: nothing differs between the sides (an A/A)"
        )
        .unwrap_err()
        .contains("A/A"));
        assert!(ab("switch warp on", "").is_err());
    }

    fn test(ratio: f64, ci: [f64; 2], verdict: Verdict) -> TestExplanation {
        let mut e = super::super::tests::fixture().0.tests[0].clone();
        e.ratio = Some(ratio);
        e.ratio_ci = Some(ci);
        e.verdict = Some(verdict);
        e
    }

    fn paired(ratio: f64, ci: Option<[f64; 2]>) -> Ratio {
        Ratio {
            ratio,
            ci,
            verdict: Verdict::Slower,
            covers: Covers::Paired,
            significant: None,
            rounds: Some(30),
            effective_rounds: None,
        }
    }

    #[test]
    fn a_flip_accounts_for_its_log_share_or_cannot_tell() {
        // A->B 1.21x slower; the flip 1.10x: ln 1.1 / ln 1.21 = 50%.
        let t = test(1.21, [1.19, 1.23], Verdict::Slower);
        let e = effect(&t, Some(&paired(1.10, Some([1.08, 1.12]))), false);
        assert_eq!(e.account, Account::Accounts);
        assert!((e.share_pct.unwrap() - 50.0).abs() < 1e-9, "{e:?}");
        let [lo, hi] = e.share_bounds_pct.unwrap();
        // The ends of both intervals: ln 1.08 / ln 1.23 and ln 1.12 / ln 1.19.
        assert!((lo - 100.0 * 1.08f64.ln() / 1.23f64.ln()).abs() < 1e-9);
        assert!((hi - 100.0 * 1.12f64.ln() / 1.19f64.ln()).abs() < 1e-9);
        assert!(e.words.starts_with("accounts for 50% ["), "{}", e.words);
        // Measured with the "on" side A's: inverted to B's value over A's.
        let e = effect(
            &t,
            Some(&paired(1.0 / 1.10, Some([1.0 / 1.12, 1.0 / 1.08]))),
            true,
        );
        assert!((e.share_pct.unwrap() - 50.0).abs() < 1e-9, "{e:?}");
        let [lo, hi] = e.ratio_ci.unwrap();
        assert!((lo - 1.08).abs() < 1e-9 && (hi - 1.12).abs() < 1e-9);
        // An interval that holds 1: cannot tell, whatever its point says.
        let e = effect(&t, Some(&paired(1.02, Some([0.99, 1.05]))), false);
        assert_eq!(e.account, Account::CannotTell);
        assert!(e.words.starts_with("cannot tell"), "{}", e.words);
        assert!(e.share_bounds_pct.unwrap()[0] < 0.0);
        let e = effect(&t, Some(&paired(1.10, None)), false);
        assert_eq!(e.account, Account::CannotTell);
        assert!(e.words.contains("too few paired rounds"));
        // The other way: a negative share.
        let e = effect(&t, Some(&paired(0.95, Some([0.94, 0.96]))), false);
        assert!(e.share_pct.unwrap() < 0.0 && e.words.contains("the other way"));
        // A test that did not move has no change to share.
        let t = test(1.01, [0.99, 1.03], Verdict::NoChange);
        let e = effect(&t, Some(&paired(1.10, Some([1.08, 1.12]))), false);
        assert_eq!(e.account, Account::NothingToShare);
        assert!(e.words.contains("no change to share"), "{}", e.words);
        // Not measured.
        let e = effect(&t, None, false);
        assert_eq!(e.account, Account::NotMeasured);
    }
}
