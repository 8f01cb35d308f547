//! Nothing that reaches the terminal can drive it: text from the store (a label or a warning
//! written there by another tool or an older sysperf), and another user's process name read
//! by `doctor`, are printed with their control characters escaped (#14, #15 item 3). JSON
//! output stays valid JSON with the same values.

mod common;

use common::{json_of, sysperf};
use std::process::{Command, Stdio};

/// What a terminal would act on: ESC, BEL, CSI (8-bit), or a bidi override.
fn raw_controls(out: &[u8]) -> Vec<char> {
    String::from_utf8_lossy(out)
        .chars()
        .filter(|&c| {
            (c.is_control() && c != '\n' && c != '\t') || matches!(c, '\u{202a}'..='\u{202e}')
        })
        .collect()
}

const HOSTILE: &str = "x\u{1b}]0;owned\u{7}\u{1b}[2J\u{9b}31m\u{202e}y";

#[test]
fn stored_text_with_escape_sequences_is_printed_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    sysperf(&db)
        .args(["run", "syscall", "--quick", "--label", "plain"])
        .assert()
        .success();
    // Planted behind sysperf's back, as another program or an old version could have.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute("UPDATE runs SET label = ?1", [HOSTILE])
        .unwrap();
    conn.execute(
        "INSERT INTO warnings (run_id, position, bench, kind, message) SELECT id, 999, NULL, 'noisy', ?1 FROM runs",
        [HOSTILE],
    )
    .unwrap();
    drop(conn);

    for args in [
        vec!["runs"],
        vec!["show", "latest"],
        vec!["compare", "latest", "latest"],
        vec!["compare", "latest", "latest", "--markdown"],
        vec!["compare", "latest", "latest", "--csv"],
    ] {
        let out = sysperf(&db).args(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        assert_eq!(raw_controls(&out.stdout), Vec::<char>::new(), "{args:?}");
        assert_eq!(raw_controls(&out.stderr), Vec::<char>::new(), "{args:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        if args.len() == 1 || args[0] == "show" {
            assert!(text.contains("\\x1b]0;owned\\x07"), "{args:?}: {text}");
        }
    }
    // JSON keeps the value (a parser sees the same string) but writes it inert.
    for args in [vec!["show", "latest", "--json"], vec!["runs", "--json"]] {
        let out = sysperf(&db).args(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}");
        assert_eq!(raw_controls(&out.stdout), Vec::<char>::new(), "{args:?}");
        let doc = json_of(&out.stdout);
        let label = if args[0] == "show" {
            doc["label"].clone()
        } else {
            doc[0]["label"].clone()
        };
        assert_eq!(label, HOSTILE, "{args:?}");
    }
    // An error message that quotes a stored label is escaped too.
    let out = sysperf(&db)
        .args(["compare", HOSTILE, "nosuchrun"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(raw_controls(&out.stderr), Vec::<char>::new());
}

/// A process that burns CPU under a name made of escape sequences (any user can name their
/// process so), killed when dropped.
struct Busy(std::process::Child);

impl Drop for Busy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn doctor_prints_a_hostile_process_name_escaped() {
    // /proc/self/comm takes 15 bytes: enough for an OSC title and a screen clear.
    let busy = Busy(
        Command::new("bash")
            .args([
                "-c",
                r#"printf '\033]0;pwn\007\033[2J' > /proc/$$/comm; while :; do :; done"#,
            ])
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let comm_path = format!("/proc/{}/comm", busy.0.id());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !std::fs::read_to_string(&comm_path)
        .unwrap_or_default()
        .starts_with('\u{1b}')
    {
        assert!(std::time::Instant::now() < deadline, "comm not set");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    // The busy process must be among the busiest; on a machine busy with other tests it may
    // not be in one 0.2 s look, so look a few times.
    let mut seen = false;
    for _ in 0..5 {
        let out = sysperf(&db).arg("doctor").output().unwrap();
        assert_eq!(raw_controls(&out.stdout), Vec::<char>::new());
        assert_eq!(raw_controls(&out.stderr), Vec::<char>::new());
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if text.contains("\\x1b]0;pwn\\x07") {
            seen = true;
            break;
        }
    }
    assert!(
        seen,
        "the busy process never showed in doctor's busiest list"
    );
    let out = sysperf(&db).args(["doctor", "--json"]).output().unwrap();
    assert_eq!(raw_controls(&out.stdout), Vec::<char>::new());
    json_of(&out.stdout);
    drop(busy);
}
