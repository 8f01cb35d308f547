//! The fleet's third pass (#44): a spool file finds its store however the URL that reaches it
//! is spelled (item 1), syncs that complete one unfinished run at once all succeed (item 2),
//! and any command that opens the store uploads what waits for it (item 4). Against private
//! PostgreSQL clusters (tests/it/support/pg.rs); skipped without PostgreSQL, except under CI.

use crate::support as common;

use common::json_of;
use common::pg::{self, PgCluster};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `sysperf ARGS` on `db`, its spool directory under `state`, in `cwd`.
fn on_host(cwd: &Path, state: &Path, db: &str, args: &[&str]) -> Output {
    Command::new(assert_cmd::cargo::cargo_bin("sysperf"))
        .env("SYSPERF_DB", db)
        .env("SYSPERF_PG_RETRY_S", "1")
        .env("XDG_STATE_HOME", state)
        .env("NO_COLOR", "1")
        .current_dir(cwd)
        .args(args)
        .output()
        .unwrap()
}

/// The spool files (`.db`) waiting under `state`.
fn spooled(state: &Path) -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(state.join("sysperf/spool"))
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".db"))
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A run long enough to be caught midway (results stored per round).
const LONG_RUN: &[&str] = &[
    "run",
    "syscall",
    "signocsw",
    "pipeself4",
    "--trials",
    "10",
    "--min-time",
    "0.1",
    "--label",
    "cut",
];

#[test]
fn a_spool_file_finds_its_store_however_the_url_is_spelled() {
    // #44 item 1: a run spooled with --db $U/sp5 was not uploaded by "$U/sp5?connect_timeout=5",
    // by postgresql:// for postgres://, nor with a password in the URL: "waits for ...".
    let Some(cluster) = PgCluster::start() else {
        return;
    };
    let url = cluster.create_db("sp5");
    let other = cluster.create_db("other");
    let cwd = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();

    // A run that reached the store, then lost it midway: its spool knows the store.
    let child = Command::new(assert_cmd::cargo::cargo_bin("sysperf"))
        .env("SYSPERF_DB", &url)
        .env("SYSPERF_PG_RETRY_S", "1")
        .env("XDG_STATE_HOME", state.path())
        .current_dir(cwd.path())
        .args(LONG_RUN)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while cluster
        .try_query("sp5", "SELECT count(*) FROM results")
        .map_or(true, |n| n[0] == "0")
    {
        assert!(Instant::now() < deadline, "the run stored no result");
        std::thread::sleep(Duration::from_millis(50));
    }
    cluster.stop();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(sysperf::exit::SPOOLED),
        "{}",
        stderr(&out)
    );
    // A run that never reached it: its spool knows where the URL leads only.
    let out = on_host(
        cwd.path(),
        state.path(),
        &url,
        &["run", "syscall", "--quick", "--label", "away"],
    );
    assert_eq!(
        out.status.code(),
        Some(sysperf::exit::SPOOLED),
        "{}",
        stderr(&out)
    );
    assert_eq!(spooled(state.path()).len(), 2);
    cluster.start_again();

    // `doctor` on `db`: how many spool files it uploaded, how many it said wait, and how
    // many are left.
    let doctor = |db: &str| {
        let out = on_host(cwd.path(), state.path(), db, &["doctor"]);
        let said = stderr(&out);
        assert!(out.status.success(), "{said}");
        assert!(!said.contains("unused"), "{said}");
        let count = |what: &str| said.matches(what).count();
        let uploaded = count("uploaded the spool file");
        (
            (uploaded, count("waits for"), spooled(state.path()).len()),
            said,
        )
    };
    // Another database of the same server is another store: nothing goes there.
    let (n, said) = doctor(&other);
    assert_eq!(n, (0, 2, 2), "{said}");

    // The store through its unix socket: the spool that knows the store goes up; the other
    // (whose URL led to 127.0.0.1) waits.
    let socket = format!(
        "postgres://sysperf@/sp5?host={}&port={}",
        cluster.socket_dir().display(),
        cluster.port
    );
    let (n, said) = doctor(&socket);
    assert_eq!(n, (1, 1, 1), "{said}");

    // Another scheme, a parameter and a password in the URL: the same place, so the run that
    // never reached the store goes up too.
    let spelled = format!(
        "postgresql://sysperf:unused@127.0.0.1:{}/sp5?connect_timeout=5",
        cluster.port
    );
    let (n, said) = doctor(&spelled);
    assert_eq!(n, (1, 0, 0), "{said}");
    assert_eq!(
        cluster.query(
            "sp5",
            "SELECT label || ' ' || complete FROM runs ORDER BY label"
        ),
        ["away 1", "cut 1"]
    );
    assert_eq!(
        cluster.try_query("other", "SELECT count(*) FROM runs").ok(),
        None,
        "nothing was written to the other database"
    );
}

#[test]
fn concurrent_syncs_completing_one_run_all_succeed_and_complete_it_once() {
    // #44 item 2: 5 'sync SPOOL URL' at once, twice: 4 of 5 exited 2 with "copying run
    // e75436bd570f: no run matches" (the check and the delete of replace_run raced).
    let Some(url) = pg::fresh_db("racing_completions") else {
        return;
    };
    let cluster = pg::shared().unwrap();
    let db = url.rsplit('/').next().unwrap().to_string();
    let cwd = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let export = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/minimal-export.json");
    let local = cwd.path().join("spool.db");
    let local = local.to_str().unwrap();
    for args in [
        &["sync", export.to_str().unwrap(), local][..],
        &["sync", local, &url][..],
    ] {
        let out = on_host(cwd.path(), state.path(), &url, args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    }
    let shown = |db: &str| {
        let out = on_host(cwd.path(), state.path(), db, &["show", "minimal", "--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        json_of(&out.stdout)
    };
    let whole = shown(local);
    for round in 0..2 {
        // The shared store holds the run unfinished, as a writer cut off leaves it.
        cluster.query(&db, "UPDATE runs SET complete = 0 RETURNING id");
        let racers: Vec<_> = (0..5)
            .map(|_| {
                Command::new(assert_cmd::cargo::cargo_bin("sysperf"))
                    .env("XDG_STATE_HOME", state.path())
                    .env("NO_COLOR", "1")
                    .current_dir(cwd.path())
                    .args(["sync", local, &url])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        // One completes it; one that met it unfinished and lost the race says so; one that
        // came after finds it complete, already there.
        let mut said_by = std::collections::BTreeMap::new();
        for racer in racers {
            let out = racer.wait_with_output().unwrap();
            let said = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(
                out.status.success(),
                "round {round}: a sync failed: {}",
                stderr(&out)
            );
            let what = ["completed 1 run", "completed by another sync", "already in"]
                .into_iter()
                .find(|w| said.contains(w))
                .unwrap_or_else(|| panic!("round {round}: {said}"));
            *said_by.entry(what).or_insert(0) += 1;
        }
        assert_eq!(
            said_by.get("completed 1 run"),
            Some(&1),
            "round {round}: {said_by:?}"
        );
        assert_eq!(
            cluster.query(&db, "SELECT count(*) || ' ' || min(complete) FROM runs"),
            ["1 1"]
        );
        assert_eq!(shown(&url), whole, "round {round}");
    }
}

#[test]
fn any_command_that_opens_the_store_uploads_what_waits_for_it() {
    // #44 item 4: nothing uploads a spool file by itself; only run, ab, doctor and sync did.
    let Some(cluster) = PgCluster::start() else {
        return;
    };
    let url = cluster.create_db("later");
    cluster.stop();
    let cwd = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let out = on_host(
        cwd.path(),
        state.path(),
        &url,
        &["run", "syscall", "--quick", "--label", "away"],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(sysperf::exit::SPOOLED), "{err}");
    assert_eq!(spooled(state.path()).len(), 1, "{err}");
    cluster.start_again();
    // A listing of the store uploads it first, and lists it.
    let out = on_host(cwd.path(), state.path(), &url, &["runs", "--json"]);
    let said = stderr(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("uploaded the spool file"), "{said}");
    assert_eq!(spooled(state.path()), Vec::<String>::new(), "{said}");
    let runs = json_of(&out.stdout);
    assert_eq!(runs[0]["label"], "away", "{runs}");
    // Where the run spooled, it says that nothing uploads it by itself, and what does.
    assert!(err.contains("nothing uploads it by itself"), "{err}");
    assert!(
        err.contains("the next sysperf command on this host that opens"),
        "{err}"
    );
}
