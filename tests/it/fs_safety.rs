//! Root on a shared machine, the file system's side (#29): what another local user can plant
//! or swap around root's sysperf, and that sysperf refuses it or is not fooled by it. Each
//! test makes the other user's part as a throwaway unprivileged user (`nobody`, uid 65534):
//! files and directories given to it with chown, processes run as it with setpriv. Where a
//! kernel protection would hide the problem (`fs.protected_symlinks`, `fs.protected_regular`,
//! which some distributions leave off), it is turned off for the test and put back after.
//! Without root the tests that need another user say so and pass.

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const NOBODY: u32 = 65534;

fn is_root() -> bool {
    sysperf::sys::euid() == 0
}

/// The kernel's link and FIFO protections off while any test holds one, then as they were.
struct Unprotected;

static PROTECTIONS: std::sync::Mutex<(usize, Vec<(String, String)>)> =
    std::sync::Mutex::new((0, Vec::new()));
const KNOBS: [&str; 2] = [
    "/proc/sys/fs/protected_symlinks",
    "/proc/sys/fs/protected_regular",
];

impl Unprotected {
    fn new() -> Unprotected {
        let mut g = PROTECTIONS.lock().unwrap_or_else(|e| e.into_inner());
        if g.0 == 0 {
            g.1 = KNOBS
                .iter()
                .filter_map(|k| Some((k.to_string(), std::fs::read_to_string(k).ok()?)))
                .collect();
            for k in KNOBS {
                let _ = std::fs::write(k, "0");
            }
        }
        g.0 += 1;
        Unprotected
    }
}

impl Drop for Unprotected {
    fn drop(&mut self) {
        let mut g = PROTECTIONS.lock().unwrap_or_else(|e| e.into_inner());
        g.0 -= 1;
        if g.0 == 0 {
            for (k, v) in g.1.drain(..) {
                let _ = std::fs::write(k, v.trim());
            }
        }
    }
}

/// `sysperf` with nothing of the caller's environment that names a store or a directory.
fn sysperf() -> Command {
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("sysperf"));
    c.env("NO_COLOR", "1")
        .env_remove("SYSPERF_DB")
        .env_remove("SYSPERF_STATE_DIR")
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_STATE_HOME")
        .env_remove("TMPDIR");
    c
}

/// Runs `c`, killed after `secs` (a hang is a failure, not a stuck test run).
fn run_for(c: &mut Command, secs: u64) -> Output {
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(secs);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > end {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "still running after {secs} s (killed): {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A directory for one test, which an unprivileged user may enter (mode 0755, root's).
fn scratch() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    t
}

/// A directory of nobody's (mode 0755) at `p`.
fn nobodys_dir(p: &Path) -> PathBuf {
    std::fs::create_dir_all(p).unwrap();
    std::os::unix::fs::chown(p, Some(NOBODY), Some(NOBODY)).unwrap();
    p.to_path_buf()
}

fn export_file() -> &'static str {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/minimal-export.json"
    )
}

fn skip_unless_root(what: &str) -> bool {
    if !is_root() {
        println!("skipped: needs root ({what})");
    }
    !is_root()
}

/// Item 1: `-o` naming a character device (or a FIFO) writes it in place; it stays what it
/// was. On a shared machine `sysperf export -o /dev/null` turned /dev/null into a file.
#[test]
fn an_output_that_is_a_character_device_stays_one() {
    if skip_unless_root("mknod") {
        return;
    }
    let t = scratch();
    let db = t.path().join("s.db");
    // Each named as its command takes it: plot by its extension (.svg), report only .html (#33).
    for (args, name) in [
        (&["job", "null", "-o"][..], "null"),
        (&["export", "vax750-4.2bsd", "-o"], "null.json"),
        (
            &["report", "vax750-4.2bsd", "vax750-4.3bsd", "-o"],
            "null.html",
        ),
        (
            &["plot", "vax750-4.2bsd", "--test", "syscall", "-o"],
            "null.svg",
        ),
    ] {
        let dev = t.path().join(name);
        let made = Command::new("mknod")
            .args(["-m", "666"])
            .arg(&dev)
            .args(["c", "1", "3"])
            .status()
            .unwrap();
        assert!(made.success());
        let out = run_for(sysperf().args(args).arg(&dev).env("SYSPERF_DB", &db), 60);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        let m = std::fs::symlink_metadata(&dev).unwrap();
        assert!(
            m.file_type().is_char_device() && m.rdev() == libc::makedev(1, 3),
            "{args:?} left {} a {:?}, mode {:o}, no longer the character device 1,3",
            dev.display(),
            m.file_type(),
            m.mode()
        );
        assert_eq!(m.mode() & 0o777, 0o666, "{args:?}: its mode changed");
    }
    // Nothing was left beside them.
    let names: Vec<_> = std::fs::read_dir(t.path()).unwrap().flatten().collect();
    assert_eq!(names.len(), 4, "{names:?}");
}

/// Item 1, without root: a FIFO is written to its reader; a socket is refused.
#[test]
fn an_output_that_is_a_fifo_is_written_to_its_reader_and_a_socket_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let fifo = t.path().join("fifo");
    sysperf::sys::mkfifo(&fifo, 0o600).unwrap();
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    // The reader may not have opened yet: a FIFO without one is refused, not waited on.
    let mut tries = 0;
    let out = loop {
        let out = run_for(sysperf().args(["job", "null", "-o"]).arg(&fifo), 60);
        if out.status.code() == Some(0) || tries > 100 {
            break out;
        }
        assert!(
            stderr(&out).contains("no process has open for reading"),
            "{}",
            stderr(&out)
        );
        tries += 1;
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // (Checked before waiting for the reader, which waits for ever on a replaced FIFO.)
    let m = std::fs::symlink_metadata(&fifo).unwrap();
    assert!(
        m.file_type().is_fifo(),
        "no longer a FIFO: {:?}",
        m.file_type()
    );
    assert!(reader.join().unwrap().starts_with(b"\x7fELF"));
    let sock = t.path().join("sock");
    let _l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let out = run_for(sysperf().args(["job", "null", "-o"]).arg(&sock), 60);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("it is a socket"), "{}", stderr(&out));
    assert!(std::fs::symlink_metadata(&sock)
        .unwrap()
        .file_type()
        .is_socket());
}

/// Item 2: the switch state directory below a directory another user owns is refused, so
/// that user cannot swap it (RENAME_EXCHANGE) for one of planted links; nothing is switched.
#[test]
fn a_state_directory_below_another_users_directory_is_refused() {
    if skip_unless_root("another user's directory and a sysctl") {
        return;
    }
    let _u = Unprotected::new();
    let t = scratch();
    let theirs = nobodys_dir(&t.path().join("mallory"));
    let state = theirs.join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    let before = std::fs::read_to_string("/proc/sys/kernel/msgmax").unwrap();
    let on = format!(
        "kernel.msgmax={}",
        before.trim().parse::<u64>().unwrap() + 1
    );
    let out = run_for(
        sysperf()
            .args(["ab", "--quick", "--sysctl", &on, "syscall"])
            .env("SYSPERF_DB", t.path().join("s.db"))
            .env("SYSPERF_STATE_DIR", &state),
        120,
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "not refused: {err}");
    assert!(err.contains("switch state directory"), "{err}");
    assert!(err.contains("uid 65534"), "{err}");
    assert_eq!(std::fs::read_dir(&state).unwrap().count(), 0);
    assert_eq!(
        std::fs::read_to_string("/proc/sys/kernel/msgmax").unwrap(),
        before
    );
}

/// Item 3: a TMPDIR in a directory another user owns is refused before anything runs (that
/// user could swap each scratch directory for one holding their own scripts).
#[test]
fn a_temporary_directory_another_user_controls_is_refused() {
    if skip_unless_root("another user's directory") {
        return;
    }
    let t = scratch();
    let theirs = nobodys_dir(&t.path().join("mallory"));
    let tmp = theirs.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let out = run_for(
        sysperf()
            .args(["run", "--quick", "--suite", "workload"])
            .env("SYSPERF_DB", t.path().join("s.db"))
            .env("TMPDIR", &tmp),
        600,
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "not refused: {err}");
    assert!(
        err.contains("(TMPDIR)") && err.contains("uid 65534"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
}

/// Item 4: the default store path (HOME, XDG_DATA_HOME) gets the checks `--db` gets.
#[test]
fn the_default_store_path_is_checked_as_db_is() {
    if skip_unless_root("another user's HOME") {
        return;
    }
    let _u = Unprotected::new();
    let t = scratch();
    let victim = t.path().join("victim");
    std::fs::write(&victim, b"").unwrap();
    // HOME of another user (sudo -E), its store path a link they planted.
    let home = nobodys_dir(&t.path().join("home"));
    let store_dir = nobodys_dir(&home.join(".local/share/sysperf"));
    let link = store_dir.join("sysperf.db");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    std::os::unix::fs::lchown(&link, Some(NOBODY), Some(NOBODY)).unwrap();
    let out = run_for(
        sysperf().args(["import", export_file()]).env("HOME", &home),
        60,
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "HOME: {err}");
    assert_eq!(
        std::fs::read(&victim).unwrap(),
        b"",
        "the link's target became a store"
    );
    // XDG_DATA_HOME a link of theirs to a directory of theirs: nothing made there.
    let target = nobodys_dir(&t.path().join("theirs"));
    let xdg = t.path().join("xdg");
    std::os::unix::fs::symlink(&target, &xdg).unwrap();
    std::os::unix::fs::lchown(&xdg, Some(NOBODY), Some(NOBODY)).unwrap();
    let out = run_for(
        sysperf()
            .args(["import", export_file()])
            .env("XDG_DATA_HOME", &xdg),
        60,
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "XDG_DATA_HOME: {}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
    // A directory of root's holding an empty file another user made there first.
    let data = t.path().join("data");
    std::fs::create_dir_all(data.join("sysperf")).unwrap();
    let planted = data.join("sysperf/sysperf.db");
    std::fs::write(&planted, b"").unwrap();
    std::os::unix::fs::chown(&planted, Some(NOBODY), Some(NOBODY)).unwrap();
    let out = run_for(
        sysperf()
            .args(["import", export_file()])
            .env("XDG_DATA_HOME", &data),
        60,
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "planted empty file: {err}");
    assert!(err.contains("owned by user nobody"), "{err}");
    assert_eq!(std::fs::metadata(&planted).unwrap().len(), 0);
    // A FIFO there: refused at once, not waited on.
    std::fs::remove_file(&planted).unwrap();
    sysperf::sys::mkfifo(&planted, 0o600).unwrap();
    let out = run_for(sysperf().arg("runs").env("XDG_DATA_HOME", &data), 20);
    assert_eq!(out.status.code(), Some(2), "FIFO: {}", stderr(&out));
    assert!(stderr(&out).contains("a FIFO"), "{}", stderr(&out));
}

/// Item 5: `--db` in a directory a group may write (where a member could swap the store for
/// a link at any moment), a store file another user made first, and `-wal`/`-shm` files
/// another user planted are all refused.
#[test]
fn a_store_others_could_change_is_refused() {
    if skip_unless_root("files of another user") {
        return;
    }
    let _u = Unprotected::new();
    let t = scratch();
    let team = t.path().join("team");
    std::fs::create_dir(&team).unwrap();
    std::os::unix::fs::chown(&team, Some(0), Some(NOBODY)).unwrap();
    std::fs::set_permissions(&team, std::fs::Permissions::from_mode(0o775)).unwrap();
    let out = run_for(
        sysperf()
            .args(["import", export_file(), "--db"])
            .arg(team.join("race.db")),
        60,
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "group-writable: {err}");
    assert!(err.contains("writable by the group"), "{err}");
    assert_eq!(std::fs::read_dir(&team).unwrap().count(), 0);
    // In a sticky directory everyone may write, a store another user made first.
    let shared = t.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let theirs = shared.join("s.db");
    std::fs::write(&theirs, b"").unwrap();
    std::os::unix::fs::chown(&theirs, Some(NOBODY), Some(NOBODY)).unwrap();
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = run_for(
        sysperf()
            .args(["import", export_file(), "--db"])
            .arg(&theirs),
        60,
    );
    assert_eq!(out.status.code(), Some(2), "theirs: {}", stderr(&out));
    assert_eq!(std::fs::metadata(&theirs).unwrap().len(), 0, "written");
    // Root's own store in root's directory, with a -wal and a -shm another user planted.
    let mine = t.path().join("mine");
    std::fs::create_dir(&mine).unwrap();
    let db = mine.join("s.db");
    let out = run_for(
        sysperf().args(["import", export_file(), "--db"]).arg(&db),
        60,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for suffix in ["-wal", "-shm"] {
        let planted = mine.join(format!("s.db{suffix}"));
        std::fs::write(&planted, b"").unwrap();
        std::os::unix::fs::chown(&planted, Some(NOBODY), Some(NOBODY)).unwrap();
        let out = run_for(sysperf().args(["runs", "--db"]).arg(&db), 60);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{suffix}: {err}");
        assert!(
            err.contains(suffix) && err.contains("owned by user nobody"),
            "{err}"
        );
        assert_eq!(
            std::fs::metadata(&planted).unwrap().len(),
            0,
            "{suffix} used"
        );
        std::fs::remove_file(&planted).unwrap();
    }
}

/// Item 9: importing a FIFO is refused at once (it hung waiting for a writer).
#[test]
fn importing_a_fifo_is_refused_at_once() {
    let t = tempfile::tempdir().unwrap();
    let fifo = t.path().join("runs.json");
    sysperf::sys::mkfifo(&fifo, 0o600).unwrap();
    let out = run_for(
        sysperf()
            .arg("import")
            .arg(&fifo)
            .env("SYSPERF_DB", t.path().join("s.db")),
        20,
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("it is a FIFO, not a file"), "{err}");
    assert!(!t.path().join("s.db").exists());
}

/// Item 11: another user who may read the store holds locks on it and its `-shm`: root's
/// writer gives up naming the process, its user, and what to do.
#[test]
fn a_lock_another_user_holds_on_the_store_is_named() {
    if skip_unless_root("a process of another user") {
        return;
    }
    let python = Path::new("/usr/bin/python3");
    if !python.exists() {
        println!("skipped: no /usr/bin/python3 to hold a lock with");
        return;
    }
    let t = scratch();
    let db = t.path().join("s.db");
    let out = run_for(
        sysperf().args(["import", export_file(), "--db"]).arg(&db),
        60,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // A store its owner shared for reading (new ones are 0600 since #41 item 8; an existing
    // store keeps its mode, and SQLite gives the -shm the store's).
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    // A python3 script that says "ready" once set up, then waits for its stdin to close.
    let script = |c: &mut Command, body: String| {
        let mut child = c
            .arg(python)
            .arg("-c")
            .arg(format!(
                "import sys\n{body}\nprint('ready',flush=True)\nsys.stdin.read()"
            ))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
            &mut line,
        )
        .unwrap();
        assert_eq!(line.trim(), "ready");
        child
    };
    // Root's reader keeps the store open, so that its -shm exists (0644, as the store).
    let mut reader = script(
        &mut Command::new("env"),
        format!(
            "import sqlite3\nc=sqlite3.connect({:?})\nc.execute('select count(*) from runs').fetchall()",
            db.to_str().unwrap()
        ),
    );
    let shm = t.path().join("s.db-shm");
    let mut holder = script(
        Command::new("setpriv").args([
            &format!("--reuid={NOBODY}"),
            &format!("--regid={NOBODY}"),
            "--clear-groups",
        ]),
        format!(
            "import fcntl\nfs=[open({:?},'rb'),open({:?},'rb')]\nfor f in fs: fcntl.lockf(f,fcntl.LOCK_SH|fcntl.LOCK_NB,0,0)",
            db.to_str().unwrap(),
            shm.to_str().unwrap()
        ),
    );
    let out = run_for(
        sysperf()
            .args(["rm", "0a1b2c3d4e5f", "--db"])
            .arg(&db)
            .env(sysperf::store::BUSY_TIMEOUT_ENV, "500"),
        60,
    );
    drop(holder.stdin.take());
    drop(reader.stdin.take());
    let _ = holder.wait();
    let _ = reader.wait();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("pid {} (python3) of user nobody", holder.id())),
        "the holder is not named: {err}"
    );
    assert!(err.contains("chmod 600"), "{err}");
}

/// #41 item 4: the PostgreSQL spool directory below a HOME of another user's (as under
/// `sudo -E`) is refused as a store's directory there is, and nothing in it is read: root's
/// `doctor` printed the destination file of a spool file planted there, a link to a root-only
/// file, whole.
#[test]
fn a_spool_directory_another_user_controls_is_refused_and_not_read() {
    if skip_unless_root("another user's HOME") {
        return;
    }
    let _u = Unprotected::new();
    let t = scratch();
    let shadow = t.path().join("shadow");
    std::fs::write(&shadow, "root:$6$SECRET-HASH:19000:0:99999:7:::\n").unwrap();
    std::fs::set_permissions(&shadow, std::fs::Permissions::from_mode(0o600)).unwrap();
    let home = nobodys_dir(&t.path().join("home"));
    let mut spool = home.clone();
    for part in [".local", "state", "sysperf", "spool"] {
        spool = nobodys_dir(&spool.join(part));
    }
    let planted = spool.join("x.db");
    std::fs::write(&planted, b"").unwrap();
    std::os::unix::fs::chown(&planted, Some(NOBODY), Some(NOBODY)).unwrap();
    let link = spool.join("x.dest");
    std::os::unix::fs::symlink(&shadow, &link).unwrap();
    std::os::unix::fs::lchown(&link, Some(NOBODY), Some(NOBODY)).unwrap();
    let out = run_for(
        sysperf()
            .args(["doctor", "--db"])
            .arg(t.path().join("root.db"))
            .env("HOME", &home),
        120,
    );
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(
        !said.contains("SECRET-HASH"),
        "root's doctor printed the file the planted spool's link points to: {}",
        said.lines()
            .find(|l| l.contains("SECRET-HASH"))
            .unwrap_or_default()
    );
    assert!(
        said.contains("refusing the spool directory") && said.contains("uid 65534"),
        "the refusal is not said: {said}"
    );
    assert!(
        link.symlink_metadata().is_ok() && planted.exists(),
        "{said}"
    );
}

/// Item 12: a process that only calls itself sysperf, started after a killed sysperf's
/// leftovers were made and holding its pid, neither keeps a switch from being put back nor
/// keeps its scratch directory.
#[test]
fn a_process_that_only_calls_itself_sysperf_owns_no_leftover() {
    let t = tempfile::tempdir().unwrap();
    let exe = t.path().join("sysperf-impostor");
    std::fs::copy("/bin/sleep", &exe).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Another test thread forking between our write and this exec holds the copy open for
    // writing in its child until that child execs: the kernel then says "text file busy" for a
    // moment. Retry as Go's os/exec does, for at most a few seconds.
    let mut tries = 0;
    let mut impostor = loop {
        match Command::new(&exe).arg("60").spawn() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 300 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
            r => break r.unwrap(),
        }
    };
    let pid = impostor.id();
    let comm = format!("/proc/{pid}/comm");
    let end = Instant::now() + Duration::from_secs(5);
    while !std::fs::read_to_string(&comm).is_ok_and(|c| c.starts_with("sysperf")) {
        assert!(Instant::now() < end, "the impostor never ran");
        std::thread::sleep(Duration::from_millis(10));
    }
    let past = std::time::SystemTime::now() - Duration::from_secs(60);
    // A switch record of a killed `ab` with that pid, written a minute ago.
    let state = t.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    let msgmax = std::fs::read_to_string("/proc/sys/kernel/msgmax").unwrap();
    let record = state.join(format!("sysperf-switch-{pid}"));
    std::fs::write(
        &record,
        serde_json::json!({
            "name": "kernel.msgmax",
            "path": "/proc/sys/kernel/msgmax",
            "old": msgmax.trim(),
            "on": "1",
        })
        .to_string(),
    )
    .unwrap();
    std::fs::File::open(&record)
        .unwrap()
        .set_modified(past)
        .unwrap();
    // And its scratch directory, a minute old.
    let tmp = t.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let left = tmp.join(format!("sysperf-workload-{pid}-0123456789ab"));
    std::fs::create_dir(&left).unwrap();
    std::fs::File::open(&left)
        .unwrap()
        .set_modified(past)
        .unwrap();
    let out = run_for(
        sysperf()
            .arg("doctor")
            .env("SYSPERF_DB", t.path().join("s.db"))
            .env("SYSPERF_STATE_DIR", &state)
            .env("TMPDIR", &tmp),
        60,
    );
    let _ = impostor.kill();
    let _ = impostor.wait();
    let err = stderr(&out);
    assert!(!record.exists(), "the switch record was kept: {err}");
    assert!(err.contains("kernel.msgmax was already back"), "{err}");
    assert!(!left.exists(), "the scratch directory was kept: {err}");
}
