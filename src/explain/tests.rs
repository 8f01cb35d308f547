//! `explain` of fixture runs: a planted cause is named, ranked first and accounts for the
//! change; a missing side is said, never made up.

use super::*;
use crate::model::Run;

const ENTRY: &str = "entry_SYSCALL_64_after_hwframe;do_syscall_64";

/// A syscall profile of 1,000,000 operations sampled every 1000 ns: 10,000 samples for 10
/// ns per operation, plus `extra`.
fn profile(extra: &[(&str, u64)]) -> Profile {
    let mut stacks = vec![
        (
            format!("{ENTRY};__x64_sys_getpid;__task_pid_nr_ns"),
            40_000u64,
        ),
        (ENTRY.to_string(), 30_000),
        ("[user] sysperf:syscall".to_string(), 30_000),
    ];
    stacks.extend(extra.iter().map(|(s, n)| (s.to_string(), *n)));
    let refs: Vec<(&str, u64)> = stacks.iter().map(|(s, n)| (s.as_str(), *n)).collect();
    let mut p = crate::profile::tests::profile(&refs);
    p.operations = 1_000_000;
    p.sample_period_ns = 1000;
    p
}

/// The fixture's syscall is 20% slower in B; B ran with the seccomp switch on.
fn runs() -> (Run, Run) {
    let mut a = crate::report::fixture_run();
    let mut b = crate::report::fixture_slower(&a);
    a.notes.push("ab: switch seccomp off".into());
    b.notes
        .push("ab: switch on: an allow-all seccomp filter in every worker".into());
    (a, b)
}

fn seccomp_profile(b_samples: u64) -> Profile {
    let filter = format!("{ENTRY};syscall_trace_enter;__secure_computing;__seccomp_filter");
    profile(&[
        (&filter, b_samples * 6 / 10),
        (&format!("{filter};seccomp_run_filters"), b_samples * 4 / 10),
    ])
}

fn stored(p: Profile, run: &Run) -> SideProfile {
    SideProfile {
        profile: p,
        source: Source::Run {
            run: run.id.clone(),
        },
    }
}

fn explain(a: &Run, b: &Run, pa: &[SideProfile], pb: &[SideProfile]) -> Explanation {
    let runs = [a.clone(), b.clone()];
    let cmp = crate::report::fixture_compare(&runs, 0, 2.0);
    let tests = tests_to_explain(&cmp, 1, &[]).unwrap();
    build(&Input {
        runs: [a, b],
        comparison: &cmp,
        column: 1,
        profiles: [pa, pb],
        traces: [&[], &[]],
        unmeasured: [None, None],
        tests: &tests,
    })
}

/// The fixture's runs (syscall 20% slower in B, which ran with the seccomp switch on) and
/// their profiles of syscall, a seccomp filter planted in B's (for the renderers' tests).
pub(crate) fn fixture_profiled() -> (Run, Run, Profile, Profile) {
    let (a, b) = runs();
    (a, b, profile(&[]), seccomp_profile(19_000))
}

/// [`fixture_profiled`] explained, and the two profiles.
pub(crate) fn fixture() -> (Explanation, Profile, Profile) {
    let (a, b, pa, pb) = fixture_profiled();
    let e = explain(&a, &b, &[stored(pa.clone(), &a)], &[stored(pb.clone(), &b)]);
    (e, pa, pb)
}

#[test]
fn a_planted_seccomp_filter_is_named_first_and_accounts_for_the_change() {
    let (a, b) = runs();
    // The profiles' B side spends 90% of the measured change in the filter.
    let samples = samples_of(&a, &b, 0.9);
    let e = explain(
        &a,
        &b,
        &[stored(profile(&[]), &a)],
        &[stored(seccomp_profile(samples), &b)],
    );
    assert_eq!(e.tests.len(), 1, "only syscall is slower");
    let t = &e.tests[0];
    assert_eq!((t.test.as_str(), t.listed), ("syscall", Listed::Slower));
    let d = t.profile.as_ref().unwrap();
    assert_eq!(d.paths[0].function(), "__seccomp_filter");
    assert!(d.functions[0].function.contains("seccomp"));
    let share = d.paths[0].share_pct.unwrap();
    assert!((share - 90.0).abs() < 0.5, "{share}");
    let acc = t.accounting.as_ref().unwrap();
    assert!((acc.paths_pct - 90.0).abs() < 0.5);
    // The switch is the difference, tied to the filter's functions and to the test.
    assert_eq!(t.tied[0].difference.fact.as_deref(), Some("seccomp"));
    assert!(t.tied[0].by_test);
    assert_eq!(t.tied[0].functions[0].0, "__seccomp_filter");
    for needle in [
        "syscall 1.20x slower",
        "in __seccomp_filter and what it calls (90% of the +",
        "called from __secure_computing",
        "B ran with an allow-all seccomp filter in every worker (the ab switch on)",
        "which does its work in __seccomp_filter",
    ] {
        assert!(t.sentence.contains(needle), "{needle}: {}", t.sentence);
    }
    // Counts from the trials, both sides.
    let faults = t.counts.iter().find(|c| c.what == "page faults").unwrap();
    assert!(faults.a.is_some() && faults.b.is_some());
    assert_eq!(t.profiles[1], Source::Run { run: b.id.clone() });
}

#[test]
fn a_side_without_a_profile_is_said_and_never_invented() {
    let (a, b) = runs();
    let e = explain(&a, &b, &[stored(profile(&[]), &a)], &[]);
    let t = &e.tests[0];
    assert!(t.profile.is_none());
    let one = t.one_side.as_ref().unwrap();
    assert_eq!(one.side, "A");
    assert!((one.cpu_ns_per_op - 100.0).abs() < 1e-9);
    let Source::Missing { why } = &t.profiles[1] else {
        panic!("{:?}", t.profiles[1]);
    };
    assert!(why.contains("has no profile of syscall"), "{why}");
    assert!(
        t.sentence.contains("no differential profile (side B:"),
        "{}",
        t.sentence
    );
    // The seccomp switch still ties to the test by the table.
    assert!(
        t.sentence.contains("tied to syscall: B ran with"),
        "{}",
        t.sentence
    );
}

#[test]
fn tests_are_those_slower_or_faster_or_the_ones_named() {
    let (a, b) = runs();
    let runs = [a, b];
    let cmp = crate::report::fixture_compare(&runs, 0, 2.0);
    let t = tests_to_explain(&cmp, 1, &[]).unwrap();
    assert_eq!(t, vec![("syscall".to_string(), Listed::Slower)]);
    let t = tests_to_explain(&cmp, 1, &["pipe*".into(), "csw".into(), "csw".into()]).unwrap();
    assert!(t.iter().all(|(_, l)| *l == Listed::Named));
    assert!(t.iter().any(|(id, _)| id == "csw"));
    assert_eq!(t.iter().filter(|(id, _)| id == "csw").count(), 1);
    assert!(tests_to_explain(&cmp, 1, &["nosuch".into()]).is_err());
}

#[test]
fn no_significant_path_says_where_the_time_may_have_gone() {
    let (a, b) = runs();
    let e = explain(
        &a,
        &b,
        &[stored(profile(&[]), &a)],
        &[stored(profile(&[]), &b)],
    );
    let t = &e.tests[0];
    assert!(t.profile.as_ref().unwrap().paths.is_empty());
    assert!(
        t.sentence
            .contains("no significant change in any call path"),
        "{}",
        t.sentence
    );
    let acc = t.accounting.as_ref().unwrap();
    assert_eq!(acc.paths_pct, 0.0);
}

#[test]
fn a_faster_test_is_explained_the_other_way() {
    let (a, b) = runs();
    // Swapped: B is A's run, faster.
    let e = explain(
        &b,
        &a,
        &[stored(seccomp_profile(2000), &b)],
        &[stored(profile(&[]), &a)],
    );
    let t = &e.tests[0];
    assert_eq!(t.listed, Listed::Faster);
    assert!(
        t.sentence.starts_with("syscall 1.20x faster"),
        "{}",
        t.sentence
    );
    let p = &t.profile.as_ref().unwrap().paths[0];
    assert_eq!(p.function(), "__seccomp_filter");
    assert!(p.total.change_ns_per_op < 0.0 && p.share_pct.unwrap() > 0.0);
}

#[test]
fn a_stored_trace_stands_for_the_side_whose_machine_it_was_made_on() {
    let (a, b) = runs();
    let report = crate::report::trace::tests::fixture();
    let here = report
        .stored("7ace00000001".into(), None, 1, a.fingerprint.clone())
        .unwrap();
    let mut elsewhere = here.clone();
    elsewhere.id = "7ace00000002".into();
    elsewhere.fingerprint.hostname = Some("another".into());
    let traces = [elsewhere, here];
    // A ran with the ab switch off: the machine as it is, which the trace was made on; B ran
    // with the seccomp filter on, which no trace of the machine as it is stands for.
    let sides = [0, 1].map(|s| side_traces(s, [&a, &b], &traces));
    assert_eq!(sides[0].len(), 1);
    assert_eq!(
        sides[0][0].id, "7ace00000001",
        "the other machine's is passed over"
    );
    assert!(sides[1].is_empty());
    let runs = [a.clone(), b.clone()];
    let cmp = crate::report::fixture_compare(&runs, 0, 2.0);
    let tests = vec![(report.bench.clone(), Listed::Named)];
    let e = build(&Input {
        runs: [&a, &b],
        comparison: &cmp,
        column: 1,
        profiles: [&[], &[]],
        traces: [&sides[0], &sides[1]],
        unmeasured: [None, None],
        tests: &tests,
    });
    let t = &e.tests[0];
    assert_eq!(t.traces, [Some("7ace00000001".to_string()), None]);
    let row = t
        .counts
        .iter()
        .find(|c| c.what == "system calls (trace)")
        .expect("the trace's rows");
    assert!(row.a.is_some() && row.b.is_none(), "{row:?}");
    assert!(row.source.contains("trace --store"));
}

/// The fixture's syscall change (its measured B - A) in samples of [`profile`], times `share`.
fn samples_of(a: &Run, b: &Run, share: f64) -> u64 {
    let m = |r: &Run| {
        find_result(r, "syscall")
            .unwrap()
            .summary
            .as_ref()
            .unwrap()
            .wall_ns_per_op
            .median
    };
    (share * (m(b) - m(a)) * 1_000_000.0 / 1000.0).round() as u64
}

const TRUNK: &str = "__x64_sys_recvfrom;tcp_recvmsg;__tcp_transmit_skb";

/// B's profile, `samples` the measured change: 90% of it goes down one chain (recvfrom,
/// tcp_recvmsg, the window update's __tcp_transmit_skb), which keeps 10% itself and spreads
/// the rest over three callees (40%, 30% and 10%).
fn spreading(samples: u64) -> Profile {
    let end = format!("{ENTRY};{TRUNK}");
    profile(&[
        (&end, samples / 10),
        (&format!("{end};ip_output"), samples * 4 / 10),
        (&format!("{end};tcp_v4_rcv"), samples * 3 / 10),
        (&format!("{end};tcp_write_xmit"), samples / 10),
    ])
}

/// #34: a change that enters one way and spreads into three callees is reported with that
/// way, its trunk, at the chain's end with the share it holds; the paths are as they were.
#[test]
fn a_change_through_one_chain_that_spreads_has_its_trunk() {
    let (a, b) = runs();
    let samples = samples_of(&a, &b, 1.0);
    let e = explain(
        &a,
        &b,
        &[stored(profile(&[]), &a)],
        &[stored(spreading(samples), &b)],
    );
    let t = &e.tests[0];
    let d = t.profile.as_ref().unwrap();
    let trunk = d.trunk.as_ref().expect("a trunk");
    let end: Vec<String> = format!("{ENTRY};{TRUNK}")
        .split(';')
        .map(String::from)
        .collect();
    assert_eq!(trunk.path, end);
    let share = trunk.share_pct.unwrap();
    assert!((share - 90.0).abs() < 0.5, "{share}");
    assert!(trunk.total.significant());
    assert_eq!(trunk.callees[0].function, "ip_output");
    assert_eq!(trunk.callees.len(), 3);
    // The paths are the three callees, largest first; the trunk holds them.
    let last: Vec<&str> = d.paths.iter().map(|p| p.function()).collect();
    assert_eq!(last, ["ip_output", "tcp_v4_rcv", "tcp_write_xmit"]);
    let first = d.paths[0].share_pct.unwrap();
    assert!((first - 40.0).abs() < 0.5, "{first}");
    assert!(d
        .paths
        .iter()
        .all(|p| p.path.starts_with(&trunk.path) && p.path.len() == trunk.path.len() + 1));
    for needle in [
        "per call under __x64_sys_recvfrom > tcp_recvmsg > __tcp_transmit_skb (90% of the +",
        ", most in ip_output (+",
        ", 40%), called from __tcp_transmit_skb;",
    ] {
        assert!(t.sentence.contains(needle), "{needle}: {}", t.sentence);
    }
}

/// #34: a change in one leaf path (the chain ends in it) has no separate trunk: that path is
/// all there is to say, and the sentence is as it was.
#[test]
fn a_change_in_one_leaf_path_has_no_separate_trunk() {
    let (a, b) = runs();
    let samples = samples_of(&a, &b, 0.9);
    let leaf = format!("{ENTRY};{TRUNK};copy_user_enhanced_fast_string");
    let e = explain(
        &a,
        &b,
        &[stored(profile(&[]), &a)],
        &[stored(profile(&[(&leaf, samples)]), &b)],
    );
    let t = &e.tests[0];
    let d = t.profile.as_ref().unwrap();
    assert!(d.trunk.is_none(), "{:?}", d.trunk);
    assert_eq!(d.paths.len(), 1);
    assert_eq!(d.paths[0].function(), "copy_user_enhanced_fast_string");
    assert!(!t.sentence.contains(" under "), "{}", t.sentence);
    // Nor has the seccomp filter, whose path keeps 60% itself.
    let (e, _, _) = fixture();
    assert!(e.tests[0].profile.as_ref().unwrap().trunk.is_none());
}

/// #34: a change in two unrelated subtrees, split from the root (which is no frame), has no
/// trunk.
#[test]
fn a_change_in_two_subtrees_from_the_root_has_no_trunk() {
    let (a, b) = runs();
    let samples = samples_of(&a, &b, 0.9);
    let fault = "asm_exc_page_fault;exc_page_fault;handle_mm_fault";
    let e = explain(
        &a,
        &b,
        &[stored(profile(&[]), &a)],
        &[stored(
            profile(&[
                (&format!("{ENTRY};{TRUNK}"), samples / 2),
                (fault, samples / 2),
            ]),
            &b,
        )],
    );
    let d = e.tests[0].profile.as_ref().unwrap();
    assert!(d.trunk.is_none(), "{:?}", d.trunk);
    assert_eq!(d.paths.len(), 2, "{:?}", d.paths);
}

/// [`fixture`] with B's change spreading from a trunk (for the renderers' tests).
pub(crate) fn fixture_spreading() -> Explanation {
    let (a, b) = runs();
    let samples = samples_of(&a, &b, 1.0);
    explain(
        &a,
        &b,
        &[stored(profile(&[]), &a)],
        &[stored(spreading(samples), &b)],
    )
}

#[test]
fn a_long_switch_value_is_shortened_in_the_sentence_and_kept_whole_in_the_difference() {
    let ports: Vec<String> = (59976..61000).step_by(2).map(|p| p.to_string()).collect();
    let value = format!("32768-59975,{}", ports.join(","));
    let name = "net.ipv4.ip_local_reserved_ports";
    let d = super::facts::Difference {
        field: "ab switch".into(),
        a: Some(format!("switch off {name}: {name} = ")),
        b: Some(format!("switch on {name}: {name} = {value}")),
        fact: Some(name.into()),
        source: None,
    };
    let words = super::difference_words(&d);
    assert!(words.len() < 200, "{words}");
    assert!(
        words.starts_with(&format!("B ran with {name} = 32768-59975,59976,")),
        "{words}"
    );
    let n = name.len() + 3 + value.len();
    assert!(words.contains(&format!("... ({n} characters)")), "{words}");
    assert!(d.b.as_deref().unwrap().ends_with(",60998"));
    // A short one is left as it is.
    let short = super::facts::Difference {
        b: Some(format!("switch on {name}: {name} = 61000")),
        ..d
    };
    assert_eq!(
        super::difference_words(&short),
        format!("B ran with {name} = 61000 (the ab switch on)")
    );
}

/// Profiles that hold half the measured change, in runs where B ran beside other work: the
/// text says why the rest is missing (#34); with no such warning, or profiles that hold most
/// of the change, it says nothing of the kind. (The comparison is the quiet runs': a paired
/// `ab` keeps its verdict under load, as single runs do not, and `ab` is where this is met.)
#[test]
fn profiles_short_of_a_change_made_beside_other_work_say_why() {
    let (a, b) = runs();
    let half = samples_of(&a, &b, 0.5);
    let cmp = crate::report::fixture_compare(&[a.clone(), b.clone()], 0, 2.0);
    let tests = tests_to_explain(&cmp, 1, &[]).unwrap();
    let mut busy = b.clone();
    busy.warnings.push(crate::model::Warning {
        bench: Some("syscall".into()),
        kind: crate::model::WarningKind::BusyMachine,
        message: "syscall: other work used 95% of CPU 0 (not the test's) while it ran".into(),
    });
    let with = |b: &Run, samples: u64| {
        build(&Input {
            runs: [&a, b],
            comparison: &cmp,
            column: 1,
            profiles: [
                &[stored(profile(&[]), &a)],
                &[stored(seccomp_profile(samples), b)],
            ],
            traces: [&[], &[]],
            unmeasured: [None, None],
            tests: &tests,
        })
    };
    let quiet = with(&b, half);
    let acc = quiet.tests[0].accounting.as_ref().unwrap();
    assert!(acc.disturbed_sides.is_empty());
    assert!(crate::report::explain::disturbed_line(acc).is_none());
    let e = with(&busy, half);
    let acc = e.tests[0].accounting.as_ref().unwrap();
    assert_eq!(acc.disturbed_sides, vec!["B".to_string()]);
    assert!((acc.profile_pct - 50.0).abs() < 1.0, "{}", acc.profile_pct);
    let text = crate::report::explain::text(&e, 10);
    assert!(
        text.contains("Other work ran beside the test in B (busy_cpu, busy_machine or steal warnings): its time is in the measured change but not in the CPU profiles, which hold 50% of it"),
        "{text}"
    );
    // Profiles that hold 90% of the change need no such line.
    let most = with(&busy, samples_of(&a, &b, 0.9));
    let acc = most.tests[0].accounting.as_ref().unwrap();
    assert_eq!(acc.disturbed_sides, vec!["B".to_string()]);
    assert!(crate::report::explain::disturbed_line(acc).is_none());
}
