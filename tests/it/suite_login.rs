//! The `login` suite (§3.1.2's remote-login load, #45) from the outside: the quick run stores
//! the local, remote and 4.2BSD-rlogin curves at the quick session counts, every keystroke is
//! a round of context switches through the session's processes (the workers' rusage, the
//! sessions' processes reaped into it), the derived figures give CPU per character and the
//! remote/local ratios beside the paper's "roughly triple", `list --suites` quotes the paper,
//! and no process of a session is left after the run.

use crate::support as common;

use common::*;
use sysperf::suite::find_suite;

#[test]
fn quick_login_suite_echoes_through_every_process_and_leaves_nothing() {
    let v = quick_suite_run("login", "suite-login");
    let suite = find_suite("login").unwrap();
    for spec in (suite.series)() {
        let s = series_of(&v, spec.id);
        let want: Vec<f64> = (spec.points)(true).iter().map(|p| p.x).collect();
        assert_eq!(xs_of(s), want, "{}", spec.id);
        assert_eq!(s["y_kind"], "cost_ns", "{}", spec.id);
        // Processes a keystroke wakes, each blocking again for the next: the user and the
        // editor locally, two more remote (rlogind), four more through 4.2BSD's rlogin.
        let least = match spec.id {
            "login.local" => 1.0,
            "login.remote" => 2.0,
            _ => 3.0,
        };
        for p in s["points"].as_array().unwrap() {
            assert!(p["result"]["error"].is_null(), "{}: {p}", spec.id);
            assert!(p["y"]["median"].as_f64().unwrap() > 0.0, "{}: {p}", spec.id);
            let csw = p["result"]["summary"]["csw_per_op"].as_f64().unwrap();
            assert!(
                csw > least,
                "{} x={}: {csw} switches per character",
                spec.id,
                p["x"]
            );
        }
    }
    let names = derived_names(&v);
    for n in ["1 session", "4 sessions"] {
        for want in [
            format!("login CPU per character, local ({n})"),
            format!("login CPU per character, remote ({n})"),
            format!("login remote/local CPU per character ({n})"),
            format!("login remote/local wall per character ({n})"),
            format!("login rlogin/local CPU per character ({n})"),
        ] {
            assert!(names.contains(&want.as_str()), "no {want}: {names:?}");
        }
    }
    let formula = v["derived"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "login remote/local CPU per character (1 session)")
        .unwrap()["formula"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(formula.contains("roughly triple"), "{formula}");
}

#[test]
fn list_suites_quotes_section_3_1_2() {
    let tmp = tempfile::tempdir().unwrap();
    let out = sysperf(&tmp.path().join("s.db"))
        .args(["list", "--suites"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    for words in [
        "sysperf run --suite login",
        "a remote login uses three processes and a pseudo-terminal handler in addition to the \
         local hardware terminal handler",
        "sending and echoing a single character involves four processes on two machines",
        "can roughly triple the load presented by one local terminal user",
    ] {
        assert!(flat.contains(words), "{words} not in list --suites");
    }
}
