//! The fleet (#21): sysperf against a PostgreSQL store (`--db postgres://...`), started as a
//! private cluster shared by the integration tests (tests/it/support/pg.rs): every command on it, many writers at
//! once, a writer killed midway, the server restarted during a run, and `sysperf sync`
//! between SQLite, PostgreSQL and export files. Skipped without PostgreSQL, except under CI.

use crate::support as common;

use common::pg::{self, PgCluster};
use common::{json_of, leftover_workers, unique_tag};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `sysperf ARGS` with `db` as SYSPERF_DB, run in `cwd`.
fn sysperf_in(cwd: &Path, db: &str, args: &[&str]) -> Output {
    Command::new(assert_cmd::cargo::cargo_bin("sysperf"))
        .env("SYSPERF_DB", db)
        .env("NO_COLOR", "1")
        .current_dir(cwd)
        .args(args)
        .output()
        .unwrap()
}

fn ok(cwd: &Path, db: &str, args: &[&str]) -> String {
    let out = sysperf_in(cwd, db, args);
    assert!(
        out.status.success(),
        "{args:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The files in `dir` (a working directory that must stay empty).
fn files_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

fn db_name(url: &str) -> &str {
    url.rsplit('/').next().unwrap()
}

#[test]
fn every_command_works_on_postgres_and_nothing_lands_in_the_working_directory() {
    let Some(url) = pg::fresh_db("every_command") else {
        return;
    };
    let cwd = tempfile::tempdir().unwrap();
    let d = cwd.path();
    ok(d, &url, &["run", "syscall", "--quick", "--label", "before"]);
    // --db names it too, over SYSPERF_DB (whose file is not made).
    ok(
        d,
        "not-this.db",
        &[
            "run", "syscall", "--quick", "--label", "after", "--db", &url,
        ],
    );
    let runs = json_of(ok(d, &url, &["runs", "--json"]).as_bytes());
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["label"], "after");
    assert_eq!(runs[0]["complete"], true);
    let shown = json_of(ok(d, &url, &["show", "before", "--json"]).as_bytes());
    assert_eq!(shown["results"][0]["id"], "syscall");
    assert!(!shown["results"][0]["trials"].as_array().unwrap().is_empty());
    let table = ok(d, &url, &["compare", "before", "after"]);
    assert!(table.contains("syscall"), "{table}");
    let export = ok(d, &url, &["export", "before"]);
    assert!(export.contains("\"syscall\""));
    ok(d, &url, &["rm", "before"]);
    assert_eq!(
        json_of(ok(d, &url, &["runs", "--json"]).as_bytes())
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(files_in(d), Vec::<String>::new(), "files made in the cwd");
}

#[test]
fn a_password_in_the_url_is_never_printed() {
    let Some(cluster) = pg::shared() else {
        return;
    };
    let cwd = tempfile::tempdir().unwrap();
    // A database that does not exist: connecting fails, and the message names the URL.
    let url = format!(
        "postgres://sysperf:hunter2secret@127.0.0.1:{}/no_such_db",
        cluster.port
    );
    for args in [
        &["runs"][..],
        &["run", "syscall", "--quick"],
        &["show", "latest"],
    ] {
        let out = sysperf_in(cwd.path(), &url, args);
        let err = String::from_utf8_lossy(&out.stderr);
        // A database that does not exist is the user's to fix: exit code 2 (#35).
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("sysperf:***@127.0.0.1"), "{args:?}: {err}");
        assert!(!err.contains("hunter2"), "{args:?}: {err}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("hunter2"));
    }
    assert_eq!(files_in(cwd.path()), Vec::<String>::new());
}

#[test]
fn twenty_concurrent_writers_store_twenty_runs() {
    let Some(url) = pg::fresh_db("twenty_writers") else {
        return;
    };
    let cwd = tempfile::tempdir().unwrap();
    let n = 20;
    let children: Vec<_> = (0..n)
        .map(|i| {
            Command::new(assert_cmd::cargo::cargo_bin("sysperf"))
                .env("NO_COLOR", "1")
                .current_dir(cwd.path())
                .args(["run", "syscall", "--quick", "--label"])
                .arg(format!("w{i}"))
                .arg("--db")
                .arg(&url)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let cluster = pg::shared().unwrap();
    let db = db_name(&url);
    assert_eq!(
        cluster.query(db, "SELECT count(*) FROM runs WHERE complete = 1"),
        [n.to_string()]
    );
    assert_eq!(
        cluster.query(db, "SELECT count(DISTINCT label) FROM runs"),
        [n.to_string()]
    );
    // Every run has its result and its trials.
    assert_eq!(
        cluster.query(
            db,
            "SELECT count(*) FROM runs WHERE NOT EXISTS (SELECT 1 FROM results r JOIN trials t
             ON t.result_id = r.id WHERE r.run_id = runs.id)"
        ),
        ["0"]
    );
    assert_eq!(files_in(cwd.path()), Vec::<String>::new());
}

/// Waits until `sql` (a count) in database `db` answers at least `at_least`.
fn wait_for(cluster: &PgCluster, db: &str, sql: &str, at_least: i64) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        // Before the writer made the schema, the tables are not there yet.
        let n: i64 = cluster
            .try_query(db, sql)
            .map_or(0, |rows| rows[0].parse().unwrap());
        if n >= at_least {
            return;
        }
        assert!(Instant::now() < deadline, "{sql} stayed below {at_least}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A run long enough to be caught midway: several benchmarks, results stored per round, and
/// rounds enough (10 of 0.1 s trials each) that the run is still going when the test stops
/// the server after the first (with --quick the last round could end first: a race).
const LONG_RUN: &[&str] = &[
    "run",
    "syscall",
    "signocsw",
    "pipeself4",
    "pipeself512",
    "--trials",
    "10",
    "--min-time",
    "0.1",
];

#[test]
fn a_writer_killed_midway_leaves_one_incomplete_run_and_nothing_else() {
    let Some(url) = pg::fresh_db("killed_writer") else {
        return;
    };
    let cluster = pg::shared().unwrap();
    let db = db_name(&url);
    let cwd = tempfile::tempdir().unwrap();
    let tag = unique_tag("fleet-kill");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("sysperf"))
        .env("SYSPERF_DB", &url)
        .env("SYSPERF_TEST_TAG", &tag)
        .current_dir(cwd.path())
        .args(LONG_RUN)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(cluster, db, "SELECT count(*) FROM results", 1);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        cluster.query(db, "SELECT complete FROM runs"),
        ["0"],
        "one run, marked incomplete"
    );
    // Its stored results are whole (each with its trials), and no transaction is left open.
    assert_eq!(
        cluster.query(
            db,
            "SELECT count(*) FROM results r WHERE NOT EXISTS (SELECT 1 FROM trials t WHERE t.result_id = r.id)"
        ),
        ["0"]
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while cluster.query(
        db,
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'sysperf'",
    ) != ["0"]
    {
        assert!(
            Instant::now() < deadline,
            "the killed writer's session stayed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(leftover_workers(&tag), Vec::<String>::new());
    assert_eq!(files_in(cwd.path()), Vec::<String>::new());

    // #35 item 3: its heartbeat says where it stopped; it reads as still measuring until it
    // has been silent for an hour, then as abandoned, and gc --abandoned removes it.
    let listed = ok(cwd.path(), &url, &["runs"]);
    assert!(
        listed.contains("(incomplete: measuring, last heard") && listed.contains("counted trial"),
        "{listed}"
    );
    cluster.query(
        db,
        "UPDATE runs SET heartbeat_ns = heartbeat_ns - 7200000000000",
    );
    let json = json_of(ok(cwd.path(), &url, &["runs", "--json"]).as_bytes());
    assert_eq!(json[0]["stopped"]["abandoned"], true, "{json}");
    let host = json[0]["hostname"].as_str().unwrap();
    let listed = ok(cwd.path(), &url, &["runs"]);
    assert!(
        listed.contains("(ABANDONED: last heard") && listed.contains(&format!("on {host}, at ")),
        "{listed}"
    );
    let gc = sysperf_in(cwd.path(), &url, &["gc", "--abandoned"]);
    let said = String::from_utf8_lossy(&gc.stderr);
    assert!(gc.status.success(), "{said}");
    assert!(said.contains("removed abandoned run"), "{said}");
    assert_eq!(
        cluster.query(db, "SELECT count(*) FROM runs"),
        ["0"],
        "{said}"
    );
}

/// Starts [`LONG_RUN`] on `url` in `cwd` (with `env`), and stops the cluster's server once the
/// run has stored a result.
fn long_run_then_stop(
    cluster: &PgCluster,
    url: &str,
    cwd: &Path,
    env: &[(&str, &std::ffi::OsStr)],
) -> std::process::Child {
    let child = Command::new(assert_cmd::cargo::cargo_bin("sysperf"))
        .env("SYSPERF_DB", url)
        .envs(env.iter().copied())
        .current_dir(cwd)
        .args(LONG_RUN)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(cluster, db_name(url), "SELECT count(*) FROM results", 1);
    cluster.stop();
    child
}

#[test]
fn a_postgres_restarted_during_a_run_loses_no_finished_trial() {
    // A cluster of its own: the others' tests must not see it go away.
    let Some(cluster) = PgCluster::start() else {
        return;
    };
    let url = cluster.create_db("restart");
    let cwd = tempfile::tempdir().unwrap();
    let child = long_run_then_stop(&cluster, &url, cwd.path(), &[]);
    std::thread::sleep(Duration::from_secs(2));
    cluster.start_again();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("lost the connection to postgres://sysperf@127.0.0.1"),
        "{err}"
    );
    assert!(err.contains("reconnected"), "{err}");
    let shown = json_of(ok(cwd.path(), &url, &["show", "latest", "--json"]).as_bytes());
    assert_eq!(shown["complete"], true);
    let results = shown["results"].as_array().unwrap();
    // Four tests and the host-speed reference (#42).
    assert_eq!(results.len(), 5, "every benchmark's result");
    for r in results {
        let trials = r["trials"].as_array().unwrap();
        let measured = trials.iter().filter(|t| t["kind"] == "measured").count();
        assert!(measured >= 1, "{}: no measured trial", r["id"]);
        assert_eq!(
            r["summary"]["wall_ns_per_op"]["n"].as_u64(),
            Some(measured as u64),
            "{}: the summary counts the stored trials",
            r["id"]
        );
    }
}

#[test]
fn sync_round_trips_every_field_through_postgres_and_is_idempotent() {
    let Some(url) = pg::fresh_db("sync_round_trip") else {
        return;
    };
    let cwd = tempfile::tempdir().unwrap();
    let d = cwd.path();
    let a = d.join("a.db");
    let a = a.to_str().unwrap();
    ok(d, a, &["run", "syscall", "--quick", "--label", "one"]);
    ok(
        d,
        a,
        &["run", "syscall", "signocsw", "--quick", "--label", "two"],
    );
    let ids: Vec<String> = json_of(ok(d, a, &["runs", "--json"]).as_bytes())
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    let mut export = vec!["export", "-o"];
    export.push("a.json");
    export.extend(ids.iter().map(String::as_str));
    ok(d, a, &export);

    let first = ok(d, a, &["sync", a, &url]);
    assert!(first.starts_with("copied 2 runs from"), "{first}");
    let again = ok(d, a, &["sync", a, &url]);
    assert!(again.starts_with("nothing to copy: all 2 runs"), "{again}");
    let b = d.join("b.db");
    let b = b.to_str().unwrap();
    assert!(ok(d, a, &["sync", &url, b]).starts_with("copied 2 runs"));
    export[2] = "b.json";
    ok(d, b, &export);
    let (ea, eb) = (
        std::fs::read(d.join("a.json")).unwrap(),
        std::fs::read(d.join("b.json")).unwrap(),
    );
    assert!(
        ea == eb,
        "the exports differ after SQLite -> PostgreSQL -> SQLite"
    );
    // Listed in the same order, newest first, in every store.
    assert_eq!(
        ok(d, b, &["runs", "--json"]),
        ok(d, &url, &["runs", "--json"])
    );

    // An export file is a source too; its runs are there already.
    let c = d.join("c.db");
    let c = c.to_str().unwrap();
    assert!(ok(d, a, &["sync", "a.json", c]).starts_with("copied 2 runs"));
    assert!(ok(d, a, &["sync", "a.json", &url]).starts_with("nothing to copy"));
}

#[test]
fn sync_refuses_what_it_cannot_use() {
    let cwd = tempfile::tempdir().unwrap();
    let d = cwd.path();
    for (src, dst, why) in [
        ("missing.db", "x.db", "no store or export file"),
        ("mysql://u@h/db", "x.db", "URLs are not supported"),
        ("x.db", "http://h/x", "URLs are not supported"),
    ] {
        let out = sysperf_in(d, "unused.db", &["sync", src, dst]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{src} {dst}: {err}");
        assert!(err.contains(why), "{src} {dst}: {err}");
    }
    assert_eq!(files_in(d), Vec::<String>::new());
}

#[test]
fn a_postgres_that_stays_away_gets_the_run_through_a_spool_file_and_sync() {
    let Some(cluster) = PgCluster::start() else {
        return;
    };
    let url = cluster.create_db("spool");
    let cwd = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let child = long_run_then_stop(
        &cluster,
        &url,
        cwd.path(),
        &[
            ("SYSPERF_PG_RETRY_S", "1".as_ref()),
            ("XDG_STATE_HOME", state.path().as_os_str()),
        ],
    );
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    // A spooled run is not a success: the shared database does not hold it (#35 item 1).
    assert_eq!(
        out.status.code(),
        Some(sysperf::exit::SPOOLED),
        "a spooled run exits with its own code: {err}"
    );
    assert!(!err.contains("stored as run"), "{err}");
    assert!(err.contains("is NOT in the shared store"), "{err}");
    // The run carries on: no advice to run the command again (#35 item 10).
    assert!(!err.contains("run the command again"), "{err}");
    let spool_dir = state.path().join("sysperf/spool");
    let spooled: Vec<_> = std::fs::read_dir(&spool_dir)
        .unwrap_or_else(|e| panic!("{}: {e}; stderr: {err}", spool_dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "db"))
        .collect();
    assert_eq!(spooled.len(), 1, "{err}");
    let spool = spooled[0].to_str().unwrap();
    assert!(
        err.contains(&format!("sysperf sync {spool} {url}")),
        "{err}"
    );
    assert_eq!(files_in(cwd.path()), Vec::<String>::new());

    // The whole run is in the spool file, complete.
    let local = json_of(ok(cwd.path(), spool, &["show", "latest", "--json"]).as_bytes());
    assert_eq!(local["complete"], true);
    // Four tests and the host-speed reference (#42).
    assert_eq!(local["results"].as_array().unwrap().len(), 5);

    // It says which store it is for: the URL as shown, where it leads, and the store the
    // server said it is (#44 item 1).
    let dest = std::fs::read_to_string(spooled[0].with_extension("dest")).unwrap();
    let lines: Vec<&str> = dest.lines().collect();
    assert_eq!(lines.len(), 3, "{dest}");
    assert_eq!(lines[0], url, "{err}");
    assert!(lines[1].starts_with("target 127.0.0.1:"), "{dest}");
    assert!(lines[2].starts_with("store "), "{dest}");
    // Both are the run's owner's alone (#41 item 8).
    for p in [spooled[0].clone(), spooled[0].with_extension("dest")] {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(format!("{mode:o}"), "600", "{}", p.display());
    }
    let saved = tempfile::tempdir().unwrap();
    let keep = |from: &Path, to: &Path| {
        for name in files_in(from) {
            std::fs::copy(from.join(&name), to.join(&name)).unwrap();
        }
    };
    keep(&spool_dir, saved.path());

    // Back on PostgreSQL the run is there unfinished; the next doctor on the host says so,
    // uploads the spool file (completing the run) and removes it (#35 item 1).
    cluster.start_again();
    assert_eq!(cluster.query("spool", "SELECT complete FROM runs"), ["0"]);
    let on_host = |args: &[&str]| {
        Command::new(assert_cmd::cargo::cargo_bin("sysperf"))
            .env("SYSPERF_DB", &url)
            .env("XDG_STATE_HOME", state.path())
            .env("NO_COLOR", "1")
            .current_dir(cwd.path())
            .args(args)
            .output()
            .unwrap()
    };
    let doctor = on_host(&["doctor"]);
    let said = String::from_utf8_lossy(&doctor.stderr);
    assert!(doctor.status.success(), "{said}");
    assert!(
        said.contains(&format!("uploaded the spool file {spool} to {url}")),
        "{said}"
    );
    assert_eq!(files_in(&spool_dir), Vec::<String>::new(), "{said}");
    let remote = json_of(ok(cwd.path(), &url, &["show", "latest", "--json"]).as_bytes());
    assert_eq!(remote, local);

    // So does the next run, and sync SPOOL URL; each removes the spool file.
    for next in [
        &["run", "syscall", "--quick", "--label", "next"][..],
        &["sync", spool, &url],
    ] {
        ok(cwd.path(), &url, &["rm", local["id"].as_str().unwrap()]);
        keep(saved.path(), &spool_dir);
        let out = on_host(next);
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{next:?}: {said}");
        assert_eq!(
            files_in(&spool_dir),
            Vec::<String>::new(),
            "{next:?}: {said}"
        );
        let remote = json_of(
            ok(
                cwd.path(),
                &url,
                &["show", local["id"].as_str().unwrap(), "--json"],
            )
            .as_bytes(),
        );
        assert_eq!(remote, local, "{next:?}");
    }
    let again = on_host(&["sync", spool, &url]);
    assert_eq!(again.status.code(), Some(2), "the spool file is gone");
}

#[test]
fn a_postgres_away_at_the_start_gets_the_run_through_a_spool_file() {
    // A cluster of its own, stopped before the run starts (#35 item 2).
    let Some(cluster) = PgCluster::start() else {
        return;
    };
    let url = cluster.create_db("away");
    cluster.stop();
    let cwd = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let on_host = |args: &[&str]| {
        Command::new(assert_cmd::cargo::cargo_bin("sysperf"))
            .env("SYSPERF_DB", &url)
            .env("SYSPERF_PG_RETRY_S", "1")
            .env("XDG_STATE_HOME", state.path())
            .env("NO_COLOR", "1")
            .current_dir(cwd.path())
            .args(args)
            .output()
            .unwrap()
    };
    let out = on_host(&["run", "syscall", "--quick", "--label", "away"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(sysperf::exit::SPOOLED),
        "a run started while the server is away is measured into a spool file: {err}"
    );
    assert!(err.contains("is NOT in the shared store"), "{err}");
    let spool_dir = state.path().join("sysperf/spool");
    let spooled = files_in(&spool_dir);
    assert!(
        spooled.iter().any(|f| f.ends_with(".db")),
        "{spooled:?}: {err}"
    );
    assert_eq!(files_in(cwd.path()), Vec::<String>::new());

    // Once the server is back, the next doctor uploads the run, complete.
    cluster.start_again();
    let doctor = on_host(&["doctor"]);
    let said = String::from_utf8_lossy(&doctor.stderr);
    assert!(doctor.status.success(), "{said}");
    assert!(said.contains("uploaded the spool file"), "{said}");
    assert_eq!(files_in(&spool_dir), Vec::<String>::new(), "{said}");
    let shown = json_of(ok(cwd.path(), &url, &["show", "away", "--json"]).as_bytes());
    assert_eq!(shown["complete"], true);
    assert_eq!(shown["results"].as_array().unwrap().len(), 1);
}

/// A TCP proxy to the PostgreSQL server on `port` that lets one connection through its
/// handshake and cuts it at its first query (Parse or Query), then refuses every connection:
/// a server stopped just after a client connected, every time.
fn cut_after_handshake(port: u16) -> u16 {
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpListener, TcpStream};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let at = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let (mut client, _) = listener.accept().unwrap();
        drop(listener);
        let mut server = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (mut from, mut to) = (server.try_clone().unwrap(), client.try_clone().unwrap());
        let cut = client.try_clone().unwrap();
        std::thread::spawn(move || std::io::copy(&mut from, &mut to));
        let mut read = |n: usize| -> Option<Vec<u8>> {
            let mut b = vec![0; n];
            client.read_exact(&mut b).ok().map(|_| b)
        };
        let len = |b: &[u8]| u32::from_be_bytes(b.try_into().unwrap()) as usize;
        // Untyped messages first: SSL or GSS encryption requests, then the startup message.
        loop {
            let Some(head) = read(4) else { return };
            let Some(body) = read(len(&head) - 4) else {
                return;
            };
            server.write_all(&head).unwrap();
            server.write_all(&body).unwrap();
            if !matches!(len(&body[..4]), 80877103 | 80877104) {
                break;
            }
        }
        loop {
            let Some(head) = read(5) else { return };
            if matches!(head[0], b'P' | b'Q') {
                let _ = server.shutdown(Shutdown::Both);
                break;
            }
            let Some(body) = read(len(&head[1..]) - 4) else {
                return;
            };
            server.write_all(&head).unwrap();
            server.write_all(&body).unwrap();
        }
        let _ = cut.shutdown(Shutdown::Both);
    });
    at
}

#[test]
fn a_postgres_lost_right_after_the_connection_gets_the_run_through_a_spool_file() {
    // #35, found by scripts/fleet-audit.sh: a server stopped between a run's connection and
    // its first query (the schema check) and not back within SYSPERF_PG_RETRY_S made the run
    // exit 1 ("opening the store ...: lost the connection") with nothing measured.
    let Some(url) = pg::fresh_db("lost_after_connect") else {
        return;
    };
    let cluster = pg::shared().unwrap();
    let proxy = cut_after_handshake(cluster.port);
    let via = url.replace(&format!(":{}/", cluster.port), &format!(":{proxy}/"));
    let cwd = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let out = Command::new(assert_cmd::cargo::cargo_bin("sysperf"))
        .env("SYSPERF_DB", &via)
        .env("SYSPERF_PG_RETRY_S", "1")
        .env("XDG_STATE_HOME", state.path())
        .env("NO_COLOR", "1")
        .current_dir(cwd.path())
        .args(["run", "syscall", "--quick", "--label", "cut"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(sysperf::exit::SPOOLED),
        "a run whose server went away just after it connected is measured into a spool file: {err}"
    );
    assert!(err.contains("is NOT in the shared store"), "{err}");
    assert!(!err.contains("run the command again"), "{err}");
    let spool_dir = state.path().join("sysperf/spool");
    let spool = files_in(&spool_dir)
        .into_iter()
        .find(|f| f.ends_with(".db"))
        .unwrap_or_else(|| panic!("no spool file: {err}"));
    let spool = spool_dir.join(spool);
    let local = json_of(
        ok(
            cwd.path(),
            spool.to_str().unwrap(),
            &["show", "cut", "--json"],
        )
        .as_bytes(),
    );
    assert_eq!(local["complete"], true);
    assert_eq!(local["results"].as_array().unwrap().len(), 1);
    // The server was there all along: `sync SPOOL URL` puts the run in it.
    ok(cwd.path(), &url, &["sync", spool.to_str().unwrap(), &url]);
    assert_eq!(
        cluster.query(db_name(&url), "SELECT label || ' ' || complete FROM runs"),
        ["cut 1"]
    );
    assert_eq!(files_in(cwd.path()), Vec::<String>::new());
}

#[test]
fn syncs_into_one_store_at_once_copy_each_run_once() {
    // #35 item 4: two syncs at once both tried to insert the runs DST lacked, and the
    // second to commit failed: 'duplicate key value violates unique constraint
    // "runs_id_key"', exit 1. Here 3 syncs of 60 runs race.
    let Some(url) = pg::fresh_db("racing_syncs") else {
        return;
    };
    let cluster = pg::shared().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let seed: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/minimal-export.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let mut export = seed.clone();
    let runs: Vec<serde_json::Value> = (0..60)
        .map(|i| {
            let mut r = seed["runs"][0].clone();
            r["id"] = format!("{i:012x}").into();
            r["started_ns"] = (r["started_ns"].as_i64().unwrap() + i).into();
            r
        })
        .collect();
    export["runs"] = runs.into();
    let file = cwd.path().join("runs.json");
    std::fs::write(&file, serde_json::to_string(&export).unwrap()).unwrap();
    let racers: Vec<_> = (0..3)
        .map(|_| {
            Command::new(assert_cmd::cargo::cargo_bin("sysperf"))
                .env("NO_COLOR", "1")
                .current_dir(cwd.path())
                .args(["sync", "runs.json", &url])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut copied = 0;
    for racer in racers {
        let out = racer.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "a sync failed: {err}");
        let said = String::from_utf8_lossy(&out.stdout);
        if let Some(n) = said.strip_prefix("copied ") {
            copied += n.split(' ').next().unwrap().parse::<usize>().unwrap();
        }
    }
    assert_eq!(copied, 60, "each run copied once");
    assert_eq!(
        cluster.query(db_name(&url), "SELECT count(*) FROM runs"),
        ["60"]
    );
}

#[test]
fn reading_an_empty_database_leaves_it_empty() {
    // #35 item 10: a plain 'runs' created sysperf's schema in the database it was pointed at.
    let Some(url) = pg::fresh_db("read_only_empty") else {
        return;
    };
    let cluster = pg::shared().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let d = cwd.path();
    assert!(ok(d, &url, &["runs"]).starts_with("no runs stored yet"));
    assert_eq!(ok(d, &url, &["runs", "--json"]).trim(), "[]");
    assert_eq!(
        ok(d, &url, &["runs", "--by", "host", "--json"]).trim(),
        "[]"
    );
    let shown = sysperf_in(d, &url, &["show", "latest"]);
    assert_eq!(shown.status.code(), Some(2));
    let tables = || {
        cluster.query(
            db_name(&url),
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()",
        )
    };
    assert_eq!(tables(), ["0"], "a read made tables");
    // The first write makes the schema.
    ok(d, &url, &["run", "syscall", "--quick"]);
    assert_ne!(tables(), ["0"]);
    assert_eq!(
        json_of(ok(d, &url, &["runs", "--json"]).as_bytes())
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn a_gone_test_process_directory_is_removed_and_a_live_ones_kept() {
    // A test killed outright (or a machine restarted mid-run) leaves its cluster's directory;
    // the next cluster made removes it, and never a live test's. Above any pid_max: gone.
    let tmp = std::env::temp_dir();
    let gone = tmp.join("sysperf-pgsweep.4294967295.planted");
    let live = tmp.join(format!("sysperf-pgsweep.{}.planted", std::process::id()));
    let other_kind = tmp.join("sysperf-pgsweepx.4294967295.planted");
    for d in [&gone, &live, &other_kind] {
        std::fs::create_dir_all(d.join("data")).unwrap();
    }
    let made = pg::test_dir("pgsweep", None);
    let (g, l, o) = (gone.exists(), live.exists(), other_kind.exists());
    for d in [&live, &other_kind] {
        let _ = std::fs::remove_dir_all(d);
    }
    assert!(!g, "{} was left", gone.display());
    assert!(l, "{} was removed", live.display());
    assert!(o, "{} (another kind) was removed", other_kind.display());
    let name = made
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(
        name.starts_with(&format!("sysperf-pgsweep.{}.", std::process::id())),
        "{name}"
    );
}
