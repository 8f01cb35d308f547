//! Nothing that reaches the terminal can drive it: text from the store (a label or a warning
//! written there by another tool or an older sysperf), and another user's process name read
//! by `doctor`, are printed with their control characters escaped (#14, #15 item 3). JSON
//! output stays valid JSON with the same values.

use crate::support as common;

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

/// A child that names itself `name` (prctl PR_SET_NAME takes any bytes, 15 at most: newlines
/// and escapes included, which a shell's printf into /proc/PID/comm splits) and spins; killed
/// when dropped, or when this test process dies.
struct Spinner(sysperf::sys::Pid);

impl Spinner {
    fn start(name: &str) -> Spinner {
        use sysperf::sys;
        // The child only makes system calls and spins: safe after fork in a threaded process.
        match sys::fork().unwrap() {
            sys::Fork::Child => {
                sys::set_parent_death_signal(libc::SIGKILL);
                sys::set_process_name(name);
                loop {
                    std::hint::spin_loop();
                }
            }
            sys::Fork::Parent(pid) => Spinner(pid),
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        let _ = sysperf::sys::kill(self.0, libc::SIGKILL);
        let _ = sysperf::sys::wait4(self.0, false);
    }
}

#[test]
fn a_process_name_with_a_newline_forges_no_line_of_the_doctor() {
    // #29 item 8: root's doctor showed "ok" and, on a line of its own, "  ! FAKE ...".
    let busy = Spinner::start("ok\n  ! FAKE");
    let pid = busy.0.to_string();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let mut seen = false;
    for _ in 0..5 {
        let out = sysperf(&db).arg("doctor").output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let forged: Vec<&str> = text
            .lines()
            .filter(|l| l.trim_start().starts_with("! FAKE"))
            .collect();
        assert_eq!(forged, Vec::<&str>::new(), "{text}");
        if text.contains(&format!("{pid} ok\\x0a  ! FAKE")) {
            seen = true;
            break;
        }
    }
    assert!(
        seen,
        "the busy process never showed in doctor's busiest list"
    );
    drop(busy);
}

/// The ids of the runs in `db`, newest first.
fn run_ids(db: &std::path::Path) -> Vec<String> {
    let out = sysperf(db).args(["runs", "--json"]).output().unwrap();
    json_of(&out.stdout)
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_run_that_saw_a_hostile_process_name_exports_and_imports() {
    // #29 item 8: the doctor's finding at the start of a run recorded the busy process's
    // name raw, and export refused the run ("cannot be exported: ... U+001B"), and with it
    // every export that included it.
    let busy = Spinner::start("x\u{1b}[1m\nFAKE");
    let pid = busy.0.to_string();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let mut seen = None;
    for _ in 0..5 {
        sysperf(&db)
            .args(["run", "syscall", "--quick"])
            .assert()
            .success();
        let out = sysperf(&db)
            .args(["show", "latest", "--json"])
            .output()
            .unwrap();
        let run = json_of(&out.stdout);
        if run["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["detail"].as_str().unwrap_or("").contains(&pid))
        {
            seen = Some(run["findings"].to_string());
            break;
        }
    }
    drop(busy);
    let findings = seen.expect("no run's doctor saw the busy process");
    // Every run, the one that saw it among them, in one export file; read back elsewhere.
    let ids = run_ids(&db);
    let file = dir.path().join("all.json");
    sysperf(&db)
        .arg("export")
        .args(&ids)
        .arg("-o")
        .arg(&file)
        .assert()
        .success();
    let other = dir.path().join("other.db");
    sysperf(&other).arg("import").arg(&file).assert().success();
    assert_eq!(run_ids(&other).len(), ids.len());
    // Stored escaped, on one line (the JSON text doubles the backslashes).
    assert!(findings.contains(r"x\\x1b[1m\\x0aFAKE"), "{findings}");
}
