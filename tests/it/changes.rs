//! `sysperf changes` (#35 item 9) from the outside, on stores filled with synthetic runs
//! (copies of the minimal export, each with its own median and fingerprint): a planted step
//! is found at its run, with the sysctl switched between the runs around it named as the
//! nearest fingerprint change, and exit code 6; an A/A store (no step, a fingerprint change
//! that moved nothing) reports nothing and exits 0. On SQLite, and on PostgreSQL where a
//! cluster can be started.

use crate::support::{json_of, pg, sysperf};
use serde_json::Value;
use std::path::Path;

const DAY_NS: i64 = 86_400_000_000_000;
/// 2026-10-01 00:00 UTC.
const START_NS: i64 = 20_727 * DAY_NS;
const SYSCTL: &str = "kernel.sched_migration_cost_ns";

/// A seeded standard normal stream (xorshift64*, Box-Muller): the same histories every run.
struct Noise(u64);

impl Noise {
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        let u = 1.0 - self.uniform();
        let v = self.uniform();
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// One host's history: `n` runs a day apart, syscall's median around 100 ns with log-sd
/// `sigma`, times `step.1` from run `step.0` on; the sysctl is 500000 before run `switch`
/// and 5000000 from it on; THP is "always" from run `thp_from` on.
struct Host {
    name: &'static str,
    n: usize,
    sigma: f64,
    step: Option<(usize, f64)>,
    switch: usize,
    thp_from: usize,
}

/// The id of run `i` of host number `h`.
fn run_id(h: usize, i: usize) -> String {
    format!("c4a9{h:02x}{i:06x}")
}

/// A store of these hosts' runs, imported from one export file; `db` is a path or a URL.
fn store(dir: &Path, db: &str, hosts: &[Host], seed: u64) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc: Value = serde_json::from_slice(
        &std::fs::read(root.join("tests/data/minimal-export.json")).unwrap(),
    )
    .unwrap();
    let mut noise = Noise(seed);
    let mut runs = Vec::new();
    for (h, host) in hosts.iter().enumerate() {
        for i in 0..host.n {
            let mut r = doc["runs"][0].clone();
            let t = START_NS + i as i64 * DAY_NS + h as i64;
            r["id"] = run_id(h, i).into();
            r["label"] = format!("{}-{i}", host.name).into();
            r["started_ns"] = t.into();
            r["ended_ns"] = (t + 1_000_000_000).into();
            let f = &mut r["fingerprint"];
            f["hostname"] = host.name.into();
            let sysctl = if i < host.switch { "500000" } else { "5000000" };
            f["sysctls"] = serde_json::json!({ SYSCTL: sysctl });
            if i >= host.thp_from {
                f["thp"] = "always".into();
            }
            let factor = match host.step {
                Some((at, by)) if i >= at => by,
                _ => 1.0,
            };
            let median = 100.0 * factor * (host.sigma * noise.normal()).exp();
            let wall = &mut r["results"][0]["summary"]["wall_ns_per_op"];
            for k in ["median", "ci_low", "ci_high", "min", "max", "mean"] {
                wall[k] = median.into();
            }
            runs.push(r);
        }
    }
    let mut doc = doc;
    doc["runs"] = runs.into();
    let file = dir.join("history.json");
    std::fs::write(&file, serde_json::to_vec(&doc).unwrap()).unwrap();
    let out = sysperf(Path::new(db))
        .args(["import", file.to_str().unwrap(), "--db", db])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `sysperf changes ARGS` on `db`: exit code, stdout.
fn changes(db: &str, args: &[&str]) -> (i32, String) {
    let out = sysperf(Path::new(db))
        .arg("changes")
        .args(args)
        .args(["--db", db])
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap() + &String::from_utf8_lossy(&out.stderr),
    )
}

/// node-a: 40 runs, 3% noise, 20% slower from run 24 on, where the sysctl was switched;
/// THP switched 3 runs earlier (a difference that is not the nearest). node-b: the same
/// without a step, its sysctl switched at run 24 too (a change that moved nothing).
fn stepped() -> [Host; 2] {
    [
        Host {
            name: "node-a",
            n: 40,
            sigma: 0.03,
            step: Some((24, 1.2)),
            switch: 24,
            thp_from: 21,
        },
        Host {
            name: "node-b",
            n: 40,
            sigma: 0.03,
            step: None,
            switch: 24,
            thp_from: 40,
        },
    ]
}

fn a_planted_step_is_found_with_the_sysctl_switched_at_it(db: &str) {
    let (code, json) = changes(db, &["--json"]);
    assert_eq!(code, 6, "{json}");
    let doc = json_of(json.as_bytes());
    assert_eq!(doc["histories"], 2, "{doc:#}");
    let found = doc["changes"].as_array().unwrap();
    assert_eq!(found.len(), 1, "{doc:#}");
    let c = &found[0];
    assert_eq!(c["host"], "node-a");
    assert_eq!(c["test"], "syscall");
    assert_eq!(c["before"]["id"], run_id(0, 23), "{c:#}");
    assert_eq!(c["after"]["id"], run_id(0, 24), "{c:#}");
    assert_eq!(c["runs_before"], 24);
    assert_eq!(c["runs_after"], 16);
    let ratio = c["ratio"].as_f64().unwrap();
    let ci: Vec<f64> = c["ratio_ci"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert!(
        ci[0] <= ratio && ratio <= ci[1] && ci[0] > 1.1 && ci[1] < 1.3,
        "{c:#}"
    );
    let near = &c["nearest_difference"];
    assert_eq!(near["runs_from_change"], 0, "{c:#}");
    assert_eq!(near["before"], run_id(0, 23));
    assert_eq!(near["after"], run_id(0, 24));
    let diffs = near["differences"].as_array().unwrap();
    assert_eq!(diffs.len(), 1, "{c:#}");
    assert_eq!(diffs[0]["field"], format!("sysctl {SYSCTL}"));
    assert_eq!(diffs[0]["values"], serde_json::json!(["500000", "5000000"]));
    assert!(doc["ratio_ci_covers"].as_str().unwrap().contains("95%"));

    let (code, text) = changes(db, &[]);
    assert_eq!(code, 6, "{text}");
    assert!(text.contains("syscall on node-a: slower"), "{text}");
    assert!(
        text.contains(&format!("between run {} (2026-10-24", run_id(0, 23))),
        "{text}"
    );
    assert!(
        text.contains(&format!("sysctl {SYSCTL}: 500000 -> 5000000")),
        "{text}"
    );
    assert!(!text.contains("thp"), "{text}");
    // The other host alone: nothing changed there.
    let (code, text) = changes(db, &["--where", "host=node-b"]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("no change found in 1 (host, test) history"),
        "{text}"
    );
    // The runs after the step only (from run 28 on): one level, nothing changed.
    let (code, text) = changes(db, &["--since", "2026-10-29"]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("no change found in 2 (host, test) histories"),
        "{text}"
    );
    // The newest 12 runs of each history only (28 to 39): the same.
    let (code, json) = changes(db, &["--last", "12", "--json"]);
    assert_eq!(code, 0, "{json}");
    let doc = json_of(json.as_bytes());
    assert_eq!(
        (doc["newest"].as_u64(), doc["too_short"].as_u64()),
        (Some(12), Some(0))
    );
    // The newest 16 (24 to 39) start at the step: nothing before it to change from.
    let (code, _) = changes(db, &["--last", "16"]);
    assert_eq!(code, 0);
    // The newest 30 (10 to 39): found, at the same run.
    let (code, json) = changes(db, &["--last", "30", "--json"]);
    assert_eq!(code, 6, "{json}");
    let doc = json_of(json.as_bytes());
    assert_eq!(doc["changes"][0]["after"]["id"], run_id(0, 24), "{doc:#}");
    assert_eq!(doc["changes"][0]["runs_before"], 14, "{doc:#}");
}

#[test]
fn a_planted_step_is_found_and_the_sysctl_switched_at_it_named() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let db = db.to_str().unwrap();
    store(dir.path(), db, &stepped(), 35);
    a_planted_step_is_found_with_the_sysctl_switched_at_it(db);
}

#[test]
fn a_report_by_host_has_the_changes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let db = db.to_str().unwrap();
    store(dir.path(), db, &stepped(), 35);
    let page = dir.path().join("r.html");
    let out = sysperf(Path::new(db))
        .args(["report", "--by", "host", "--db", db, "-o"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    let at = html
        .find("<section id=\"changes\">")
        .expect("a Changes section");
    let section = &html[at..at + html[at..].find("</section>").unwrap()];
    assert!(
        section.contains("<td>syscall</td><td>node-a</td>"),
        "{section}"
    );
    assert!(section.contains(&run_id(0, 24)), "{section}");
    assert!(
        section.contains(&format!("sysctl {SYSCTL}: 500000 \u{2192} 5000000")),
        "{section}"
    );
    assert!(html.contains("<a href=\"#changes\">Changes</a>"));
    // The heat map marks the cell where it began: syscall in node-a's column, the first.
    let at = html
        .find("<section id=\"evolution\">")
        .expect("an Evolution section");
    let evolution = &html[at..at + html[at..].find("</section>").unwrap()];
    assert_eq!(
        evolution
            .matches("fill=\"none\" stroke=\"#101828\"")
            .count(),
        1,
        "{evolution}"
    );
    assert!(
        evolution.contains("<title>syscall in host=node-a: baseline; a change point began"),
        "{evolution}"
    );
}

#[test]
fn a_planted_step_is_found_on_postgres() {
    let Some(url) = pg::fresh_db("changes_step") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    store(dir.path(), &url, &stepped(), 35);
    a_planted_step_is_found_with_the_sysctl_switched_at_it(&url);
}

#[test]
fn an_aa_store_reports_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("aa.db");
    let db = db.to_str().unwrap();
    // Three hosts, 50 runs each in 5% noise, fingerprints changed midway on two of them.
    let hosts: Vec<Host> = ["aa-1", "aa-2", "aa-3"]
        .iter()
        .enumerate()
        .map(|(k, name)| Host {
            name,
            n: 50,
            sigma: 0.05,
            step: None,
            switch: if k < 2 { 25 } else { 50 },
            thp_from: 30,
        })
        .collect();
    store(dir.path(), db, &hosts, 7);
    let (code, text) = changes(db, &[]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("no change found in 3 (host, test) histories"),
        "{text}"
    );
    let (code, json) = changes(db, &["--json"]);
    assert_eq!(code, 0, "{json}");
    let doc = json_of(json.as_bytes());
    assert_eq!(doc["changes"], serde_json::json!([]));
    assert_eq!(doc["histories"], 3);
}

#[test]
fn bad_input_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("none.db");
    let db = db.to_str().unwrap();
    for args in [
        &["--since", "yesterday"][..],
        &["--where", "colour=red"],
        &["--last", "3"],
    ] {
        let (code, text) = changes(db, args);
        assert_eq!(code, 2, "{args:?}: {text}");
    }
}
