//! The bidi controls (U+202E, the isolates, the marks) and the zero-width characters
//! (U+200B-U+200D, U+2060, U+FEFF) that a label, a finding or a fingerprint fact can hold are
//! marked visibly (`\u{200b}`) in the HTML report and the SVG figures, as the terminal marks
//! them: raw, the label `adm\u{200b}in` read "admin" there (#29 item 13).

use crate::support as common;

use common::{json_of, sysperf};

/// The characters that change how text reads without showing themselves.
const INVISIBLE: &[char] = &[
    '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{202e}', '\u{2066}', '\u{2067}', '\u{2068}',
    '\u{2069}', '\u{200e}', '\u{200f}', '\u{061c}', '\u{200b}', '\u{200c}', '\u{200d}', '\u{2060}',
    '\u{feff}',
];

fn raw_invisible(text: &str) -> Vec<String> {
    text.chars()
        .filter(|c| INVISIBLE.contains(c))
        .map(|c| format!("U+{:04X}", u32::from(c)))
        .collect()
}

#[test]
fn invisible_characters_are_marked_in_the_report_and_the_figures() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let label = "adm\u{200b}in\u{202e}cod.exe";
    sysperf(&db)
        .args(["run", "syscall", "--quick", "--label", label])
        .assert()
        .success();
    let shown = sysperf(&db)
        .args(["show", "latest", "--json"])
        .output()
        .unwrap();
    let id = json_of(&shown.stdout)["id"].as_str().unwrap().to_string();
    // Text of the other kinds, planted as an older sysperf or an import could have stored it.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute(
        "UPDATE runs SET fingerprint_json = json_set(fingerprint_json, '$.cpu_model', ?1, \
         '$.kernel_release', ?2), findings_json = ?3",
        [
            "EPYC\u{2066}x\u{2069}",
            "6.8\u{feff}",
            &serde_json::json!([{
                "id": "busy",
                "severity": "warn",
                "title": "other work \u{2060}used 99%",
                "detail": "busiest: 7 ro\u{200d}ot",
                "fix": "kill\u{200c} it",
            }])
            .to_string(),
        ],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO warnings (run_id, position, bench, kind, message) \
         SELECT id, 999, NULL, 'noisy', ?1 FROM runs",
        ["noisy\u{202d} trial"],
    )
    .unwrap();
    drop(conn);

    let html = dir.path().join("r.html");
    let svg = dir.path().join("p.svg");
    let heat = dir.path().join("h.svg");
    for args in [
        vec!["report", "vax750-4.2bsd", &id, "-o", html.to_str().unwrap()],
        vec![
            "plot",
            "vax750-4.2bsd",
            &id,
            "--test",
            "syscall",
            "-o",
            svg.to_str().unwrap(),
        ],
        vec![
            "plot",
            "vax750-4.2bsd",
            &id,
            "--heatmap",
            "-o",
            heat.to_str().unwrap(),
        ],
    ] {
        sysperf(&db).args(&args).assert().success();
    }
    for (file, marked) in [
        (
            &html,
            &[
                r"adm\u{200b}in\u{202e}cod.exe",
                r"EPYC\u{2066}x\u{2069}",
                r"6.8\u{feff}",
                r"other work \u{2060}used 99%",
                r"noisy\u{202d} trial",
            ][..],
        ),
        (&svg, &[r"adm\u{200b}in\u{202e}cod.exe"][..]),
        (&heat, &[r"adm\u{200b}in\u{202e}cod.exe"][..]),
    ] {
        let text = std::fs::read_to_string(file).unwrap();
        assert_eq!(
            raw_invisible(&text),
            Vec::<String>::new(),
            "{}",
            file.display()
        );
        for m in marked {
            assert!(text.contains(m), "{} lacks {m}", file.display());
        }
    }
}
